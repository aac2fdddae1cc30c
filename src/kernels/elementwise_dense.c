/* elementwise_dense.c — binary (broadcast) and unary pointwise kernels (see the header).
 *
 * Each (op, dtype) pair gets one inner-loop function, generated from the op's element
 * expression by BINARY_INNER / UNARY_LOOP and found through a table indexed by op and dtype.
 * Inner loops carry `omp simd` so that they vectorise at -O2. The binary driver splits the
 * flat output range evenly across threads; each thread walks its range in blocks of whole rows
 * (a thread boundary may fall inside a row: that part row is a block of its own). */
#include "kernels/elementwise_dense.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include "util/parallel.h"
#include "util/simd.h"

/* Loops with fewer elements than this stay on one thread. */
enum { EG_ELEMENTWISE_OMP_MIN = 1 << 16 };

/* The dtypes computed in, in table order. */
enum { SLOT_F32, SLOT_F64, SLOT_I64, SLOT_I32, SLOT_COUNT };

static int dtype_slot(eg_dtype dtype) {
  switch (dtype) {
  case EG_DTYPE_FLOAT32: return SLOT_F32;
  case EG_DTYPE_FLOAT64: return SLOT_F64;
  case EG_DTYPE_INT64: return SLOT_I64;
  case EG_DTYPE_INT32: return SLOT_I32;
  default: return -1;
  }
}

bool eg_elementwise_dtype_ok(eg_dtype dtype) { return dtype_slot(dtype) >= 0; }

/* ---- element expressions ----
 * x from input a, y from input b, al the op's scalar, T the dtype, U its unsigned twin:
 * integer arithmetic runs in U so that overflow wraps instead of being undefined. */
#define F_ADD(T, U, x, y, al) ((x) + (y))
#define F_ADD_ALPHA(T, U, x, y, al) ((x) + (al) * (y))
#define F_MUL(T, U, x, y, al) ((x) * (y))
#define F_DIV(T, U, x, y, al) ((x) / (y))
#define X_THRESHOLD_BACKWARD(T, U, x, y, al) ((y) <= (al) ? (T)0 : (x))
#define I_ADD(T, U, x, y, al) ((T)((U)(x) + (U)(y)))
#define I_ADD_ALPHA(T, U, x, y, al) ((T)((U)(x) + (U)(al) * (U)(y)))
#define I_MUL(T, U, x, y, al) ((T)((U)(x) * (U)(y)))
#define F_DIV_TRUNC(T, U, x, y, al) (_Generic((T)0, float: truncf, double: trunc)((x) / (y)))
#define F_DIV_FLOOR(T, U, x, y, al) \
  (_Generic((T)0, float: floor_div_f32, double: floor_div_f64)(x, y))
/* Integer divisions: b == 0 gives 0 (the caller refuses it first) and b == -1 negates with
 * wrap-around, so neither traps. */
#define I_DIV_TRUNC(T, U, x, y, al) \
  ((y) == 0 ? (T)0 : (y) == -1 ? (T)(0 - (U)(x)) : (T)((x) / (y)))
#define I_DIV_FLOOR(T, U, x, y, al)                                 \
  ((y) == 0    ? (T)0                                               \
   : (y) == -1 ? (T)(0 - (U)(x))                                    \
               : (T)((x) / (y) - ((x) % (y) != 0 && ((x) < 0) != ((y) < 0))))

/* c10::div_floor_floating: floor(a / b) from the exact remainder, so that a / b rounding up to
 * an integer does not floor one too high. */
#define DIV_FLOOR_FLOAT(name, T, FMOD, FLOOR, COPYSIGN)                   \
  static inline T name(T a, T b) {                                        \
    if (b == 0) return a / b;                                             \
    const T mod = FMOD(a, b);                                             \
    T div = (a - mod) / b;                                                \
    if (mod != 0 && (b < 0) != (mod < 0)) div -= (T)1;                    \
    if (div == 0) return COPYSIGN((T)0, a / b);                           \
    T fl = FLOOR(div);                                                    \
    if (div - fl > (T)0.5) fl += (T)1;                                    \
    return fl;                                                            \
  }
DIV_FLOOR_FLOAT(floor_div_f32, float, fmodf, floorf, copysignf)
DIV_FLOOR_FLOAT(floor_div_f64, double, fmod, floor, copysign)

typedef void (*binary_inner)(int64_t rows, int64_t n, const void *a, int64_t ra, int64_t sa,
                             const void *b, int64_t rb, int64_t sb, const eg_scalar *alpha,
                             void *out);

/* One loop of BINARY_INNER: rows r of n, o[r*n + i] = EXPR(x, y) with x, y declared by XDECL
 * and YDECL (from the row's start ar, br and i). */
#define BINARY_ROWS(T, U, EXPR, XDECL, YDECL, SIMD)                                          \
  for (int64_t r = 0; r < rows; r++) {                                                       \
    const T *restrict ar = a + r * ra;                                                       \
    const T *restrict br = b + r * rb;                                                       \
    T *restrict orow = o + r * n;                                                            \
    (void)ar;                                                                                \
    (void)br;                                                                                \
    SIMD for (int64_t i = 0; i < n; i++) {                                                   \
      XDECL;                                                                                 \
      YDECL;                                                                                 \
      orow[i] = EXPR(T, U, x_, y_, al);                                                      \
    }                                                                                        \
  }

/* out[r*n + i] = EXPR(a[r*ra + i*sa], b[r*rb + i*sb]) for r in [0, rows), i in [0, n): `rows`
 * runs of the walk's last dim that follow one another along the dim before it (row strides ra,
 * rb), written one after another; inner strides (1,1), (1,0), (0,1) vectorised. One call takes
 * a whole block of rows, so that short runs (a per-channel scale on a 2x2 plane: 4 elements)
 * cost an inner loop each, not an indirect call each. Operands are loaded before EXPR sees
 * them, so that a select such as threshold_backward's reads both unconditionally and
 * vectorises (with a[i] inside `?:` GCC kept a scalar branch: 2.3 GB/s where relu ran at 45). */
#define BINARY_INNER(name, T, U, MEMBER, EXPR)                                               \
  EG_SIMD_CLONES static void name(int64_t rows, int64_t n, const void *av, int64_t ra,        \
                                  int64_t sa, const void *bv, int64_t rb, int64_t sb,        \
                                  const eg_scalar *alpha, void *ov) {                        \
    const T *restrict a = av;                                                                \
    const T *restrict b = bv;                                                                \
    T *restrict o = ov;                                                                      \
    const T al = alpha->MEMBER;                                                              \
    (void)al;                                                                                \
    if (sa == 1 && sb == 1)                                                                  \
      BINARY_ROWS(T, U, EXPR, const T x_ = ar[i], const T y_ = br[i], _Pragma("omp simd"))   \
    else if (sa == 1 && sb == 0)                                                             \
      BINARY_ROWS(T, U, EXPR, const T x_ = ar[i], const T y_ = br[0], _Pragma("omp simd"))   \
    else if (sa == 0 && sb == 1)                                                             \
      BINARY_ROWS(T, U, EXPR, const T x_ = ar[0], const T y_ = br[i], _Pragma("omp simd"))   \
    else                                                                                     \
      BINARY_ROWS(T, U, EXPR, const T x_ = ar[i * sa], const T y_ = br[i * sb], )            \
  }

#define BINARY_FLOAT(op, EXPR)                                 \
  BINARY_INNER(op##_f32, float, float, f32, EXPR)              \
  BINARY_INNER(op##_f64, double, double, f64, EXPR)
#define BINARY_INT(op, EXPR)                                   \
  BINARY_INNER(op##_i64, int64_t, uint64_t, i64, EXPR)         \
  BINARY_INNER(op##_i32, int32_t, uint32_t, i32, EXPR)

BINARY_FLOAT(add, F_ADD)
BINARY_INT(add, I_ADD)
BINARY_FLOAT(add_alpha, F_ADD_ALPHA)
BINARY_INT(add_alpha, I_ADD_ALPHA)
BINARY_FLOAT(mul, F_MUL)
BINARY_INT(mul, I_MUL)
BINARY_FLOAT(div, F_DIV)
BINARY_FLOAT(div_trunc, F_DIV_TRUNC)
BINARY_INT(div_trunc, I_DIV_TRUNC)
BINARY_FLOAT(div_floor, F_DIV_FLOOR)
BINARY_INT(div_floor, I_DIV_FLOOR)
BINARY_FLOAT(threshold_backward, X_THRESHOLD_BACKWARD)
BINARY_INT(threshold_backward, X_THRESHOLD_BACKWARD)

#define ALL_SLOTS(op) {[SLOT_F32] = op##_f32, [SLOT_F64] = op##_f64, [SLOT_I64] = op##_i64, \
                       [SLOT_I32] = op##_i32}

static const binary_inner binary_table[EG_BINARY_COUNT][SLOT_COUNT] = {
    [EG_BINARY_ADD] = ALL_SLOTS(add),
    [EG_BINARY_ADD_ALPHA] = ALL_SLOTS(add_alpha),
    [EG_BINARY_MUL] = ALL_SLOTS(mul),
    [EG_BINARY_DIV] = {[SLOT_F32] = div_f32, [SLOT_F64] = div_f64},
    [EG_BINARY_DIV_TRUNC] = ALL_SLOTS(div_trunc),
    [EG_BINARY_DIV_FLOOR] = ALL_SLOTS(div_floor),
    [EG_BINARY_THRESHOLD_BACKWARD] = ALL_SLOTS(threshold_backward),
};

/* Output elements [begin, end) of the walk, a block of rows per call (broadcast.h). */
static void binary_range(const eg_iter *it, binary_inner f, size_t esize, const char *a,
                         const char *b, const eg_scalar *alpha, char *out, int64_t begin,
                         int64_t end) {
  const int last = it->rank - 1;
  const int64_t sa = it->stride[0][last], sb = it->stride[1][last];
  const int64_t ra = eg_iter_row_stride(it, 0), rb = eg_iter_row_stride(it, 1);
  eg_iter_blocks blk;
  eg_iter_blocks_init(&blk, it, begin, end);
  int64_t pos, rows, len, off[EG_ITER_MAX_IN];
  while (eg_iter_blocks_next(&blk, &pos, &rows, &len, off))
    f(rows, len, a + (size_t)off[0] * esize, ra, sa, b + (size_t)off[1] * esize, rb, sb, alpha,
      out + (size_t)pos * esize);
}

EG_SIMD_CLONES
void eg_binary_dense(eg_binary_op op, eg_dtype dtype, const eg_iter *it, const void *a,
                     const void *b, eg_scalar alpha, void *out) {
  const int slot = dtype_slot(dtype);
  assert(slot >= 0 && (unsigned)op < EG_BINARY_COUNT && binary_table[op][slot]);
  const binary_inner f = binary_table[op][slot];
  const size_t esize = eg_dtype_size(dtype);
  const int64_t total = it->numel;
  if (total == 0) return;
  EG_OMP_PARALLEL_IF(total >= EG_ELEMENTWISE_OMP_MIN, {
    int64_t begin, end;
    eg_iter_thread_span(total, &begin, &end);
    binary_range(it, f, esize, a, b, &alpha, out, begin, end);
  });
}

int64_t eg_binary_first_zero(eg_dtype dtype, const void *x, int64_t n) {
  const int64_t *v64 = x;
  const int32_t *v32 = x;
  for (int64_t i = 0; i < n; i++)
    if (dtype == EG_DTYPE_INT64 ? v64[i] == 0 : v32[i] == 0) return i;
  return -1;
}

/* ---- where ---- */

/* Output elements [begin, end) of where's walk, row by row; dense rows vectorised. */
static void where_range(const eg_iter *it, const uint8_t *c, const float *a, const float *b,
                        float *out, int64_t begin, int64_t end) {
  if (begin >= end) return;
  const int last = it->rank - 1;
  const int64_t inner = it->shape[last], sc = it->stride[0][last], sa = it->stride[1][last],
                sb = it->stride[2][last];
  int64_t idx[EG_MAX_RANK], off[EG_ITER_MAX_IN];
  int64_t col = begin % inner;
  eg_iter_row(it, begin / inner, idx, off);
  for (int64_t pos = begin; pos < end;) {
    const int64_t len = inner - col < end - pos ? inner - col : end - pos;
    const uint8_t *restrict cr = c + off[0] + col * sc;
    const float *restrict ar = a + off[1] + col * sa;
    const float *restrict br = b + off[2] + col * sb;
    float *restrict o = out + pos;
    if (sc == 1 && sa == 1 && sb == 1) {
#pragma omp simd
      for (int64_t i = 0; i < len; i++) o[i] = cr[i] ? ar[i] : br[i];
    } else {
      for (int64_t i = 0; i < len; i++) o[i] = cr[i * sc] ? ar[i * sa] : br[i * sb];
    }
    pos += len;
    col = 0;
    if (pos < end) eg_iter_next_row(it, idx, off);
  }
}

EG_SIMD_CLONES
void eg_where_dense_f32(const eg_iter *it, const uint8_t *cond, const float *a, const float *b,
                        float *out) {
  const int64_t total = it->numel;
  if (total == 0) return;
  EG_OMP_PARALLEL_IF(total >= EG_ELEMENTWISE_OMP_MIN, {
    int64_t begin, end;
    eg_iter_thread_span(total, &begin, &end);
    where_range(it, cond, a, b, out, begin, end);
  });
}

/* ---- unary ---- */

#define F_RELU(T, U, x) ((x) < 0 ? (T)0 : (x))
#define F_NEG(T, U, x) (-(x))
#define I_NEG(T, U, x) ((T)(-(U)(x)))

typedef void (*unary_loop)(const void *x, void *out, int64_t n);

#define UNARY_LOOP(name, T, U, EXPR)                                                      \
  static void name(const void *xv, void *ov, int64_t n) {                                 \
    const T *restrict x = xv;                                                             \
    T *restrict o = ov;                                                                   \
    if (eg_omp_forks(n >= EG_ELEMENTWISE_OMP_MIN)) {                                      \
      _Pragma("omp parallel for simd schedule(static)")                                   \
      for (int64_t i = 0; i < n; i++) o[i] = EXPR(T, U, x[i]);                            \
    } else {                                                                              \
      _Pragma("omp simd")                                                                 \
      for (int64_t i = 0; i < n; i++) o[i] = EXPR(T, U, x[i]);                            \
    }                                                                                     \
  }

UNARY_LOOP(relu_f32, float, float, F_RELU)
UNARY_LOOP(relu_f64, double, double, F_RELU)
UNARY_LOOP(relu_i64, int64_t, uint64_t, F_RELU)
UNARY_LOOP(relu_i32, int32_t, uint32_t, F_RELU)
UNARY_LOOP(neg_f32, float, float, F_NEG)
UNARY_LOOP(neg_f64, double, double, F_NEG)
UNARY_LOOP(neg_i64, int64_t, uint64_t, I_NEG)
UNARY_LOOP(neg_i32, int32_t, uint32_t, I_NEG)

static const unary_loop unary_table[EG_UNARY_COUNT][SLOT_COUNT] = {
    [EG_UNARY_RELU] = ALL_SLOTS(relu),
    [EG_UNARY_NEG] = ALL_SLOTS(neg),
};

EG_SIMD_CLONES
void eg_unary_dense(eg_unary_op op, eg_dtype dtype, const void *x, void *out, int64_t n) {
  const int slot = dtype_slot(dtype);
  assert(slot >= 0 && (unsigned)op < EG_UNARY_COUNT);
  unary_table[op][slot](x, out, n);
}
