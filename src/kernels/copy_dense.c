/* copy_dense.c — strided gathers, dtype conversion and fills (see the header).
 *
 * The gather works on element sizes, not dtypes: a permute of int64 and of float64 is the same
 * 8-byte move. Conversions are generated for every (source, target) pair from two X-macro
 * lists, so adding a dtype is one line in each. */
#include "kernels/copy_dense.h"

#include <assert.h>
#include <string.h>

#include "util/simd.h"

/* Loops with fewer elements than this stay on one thread. */
enum { EG_COPY_OMP_MIN = 1 << 16 };
/* Transposed copies move TILE x TILE blocks, which stay in L1 for both sides. 16 measured
 * best for a 2048x1024 fp32 transpose (0.65 ms on two cores, 1.1 ms at 32: power-of-two input
 * strides put a tile's input lines into few L1 sets). */
enum { TILE = 16 };

/* ---- strided gather ---- */

typedef void (*gather_fn)(int64_t rows, int64_t n, const void *in, int64_t rs, int64_t s,
                          void *out);
typedef void (*tile_fn)(const void *in, int64_t s0, int64_t s1, void *out, int64_t ld,
                        int64_t rows, int64_t cols);

/* gather: out[r*n + i] = in[r*rs + i*s] over rows x n (rows of a block, broadcast.h); tile:
 * out[i*ld + j] = in[i*s0 + j*s1] over rows x cols. Short dense rows are copied by a loop,
 * not a memcpy call each: rows of a small plane are a few elements. */
#define GATHER_FNS(T, sfx)                                                            \
  EG_KEEP_LOOPS static void gather_##sfx(int64_t rows, int64_t n, const void *iv,     \
                                         int64_t rs, int64_t s, void *ov) {           \
    const T *restrict in = iv;                                                        \
    T *restrict out = ov;                                                             \
    for (int64_t r = 0; r < rows; r++) {                                              \
      const T *restrict ir = in + r * rs;                                             \
      T *restrict orow = out + r * n;                                                 \
      if (s == 1 && n >= 64) {                                                        \
        memcpy(orow, ir, (size_t)n * sizeof(T));                                      \
      } else if (s == 1) {                                                            \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) orow[i] = ir[i];          \
      } else if (s == 0) {                                                            \
        const T v = ir[0];                                                            \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) orow[i] = v;              \
      } else {                                                                        \
        for (int64_t i = 0; i < n; i++) orow[i] = ir[i * s];                          \
      }                                                                               \
    }                                                                                 \
  }                                                                                   \
  static void tile_##sfx(const void *iv, int64_t s0, int64_t s1, void *ov, int64_t ld, \
                         int64_t rows, int64_t cols) {                                \
    const T *restrict in = iv;                                                        \
    T *restrict out = ov;                                                             \
    for (int64_t i = 0; i < rows; i++)                                                \
      for (int64_t j = 0; j < cols; j++) out[i * ld + j] = in[i * s0 + j * s1];       \
  }

GATHER_FNS(uint8_t, 1)
GATHER_FNS(uint16_t, 2)
GATHER_FNS(uint32_t, 4)
GATHER_FNS(uint64_t, 8)

static int size_slot(size_t esize) {
  switch (esize) {
  case 1: return 0;
  case 2: return 1;
  case 4: return 2;
  case 8: return 3;
  default: return -1;
  }
}

static const gather_fn gathers[4] = {gather_1, gather_2, gather_4, gather_8};
static const tile_fn tiles[4] = {tile_1, tile_2, tile_4, tile_8};

/* Output elements [begin, end), a block of rows per call (broadcast.h). */
static void gather_range(const eg_iter *it, gather_fn f, size_t esize, const char *in,
                         char *out, int64_t begin, int64_t end) {
  const int64_t s = it->stride[0][it->rank - 1], rs = eg_iter_row_stride(it, 0);
  eg_iter_blocks blk;
  eg_iter_blocks_init(&blk, it, begin, end);
  int64_t pos, rows, len, off[EG_ITER_MAX_IN];
  while (eg_iter_blocks_next(&blk, &pos, &rows, &len, off))
    f(rows, len, in + (size_t)off[0] * esize, rs, s, out + (size_t)pos * esize);
}

static void copy_gather(const eg_iter *it, size_t esize, const char *in, char *out) {
  const gather_fn f = gathers[size_slot(esize)];
  const int64_t total = it->numel;
#pragma omp parallel if (total >= EG_COPY_OMP_MIN)
  {
    int64_t begin, end;
    eg_iter_thread_span(total, &begin, &end);
    gather_range(it, f, esize, in, out, begin, end);
  }
}

/* The last two dims [R, C] in TILE x TILE blocks; one work item is TILE rows of one outer
 * index. */
static void copy_tiled(const eg_iter *it, size_t esize, const char *in, char *out) {
  const tile_fn f = tiles[size_slot(esize)];
  const int r = it->rank;
  const int64_t rows = it->shape[r - 2], cols = it->shape[r - 1];
  const int64_t s0 = it->stride[0][r - 2], s1 = it->stride[0][r - 1];
  const int64_t blocks = (rows + TILE - 1) / TILE, outer = it->numel / (rows * cols);
#pragma omp parallel for schedule(static) if (it->numel >= EG_COPY_OMP_MIN)
  for (int64_t w = 0; w < outer * blocks; w++) {
    const int64_t row = w / blocks * rows + w % blocks * TILE; /* first row of the item */
    const int64_t nrows = rows - w % blocks * TILE < TILE ? rows - w % blocks * TILE : TILE;
    int64_t idx[EG_MAX_RANK], off[EG_ITER_MAX_IN];
    eg_iter_row(it, row, idx, off);
    for (int64_t j = 0; j < cols; j += TILE)
      f(in + (size_t)(off[0] + j * s1) * esize, s0, s1, out + (size_t)(row * cols + j) * esize,
        cols, nrows, cols - j < TILE ? cols - j : TILE);
  }
}

void eg_copy_strided_dense(const eg_iter *it, size_t esize, const void *in, void *out) {
  assert(size_slot(esize) >= 0 && it->n_in == 1);
  if (it->numel == 0) return;
  const int64_t s = it->stride[0][it->rank - 1];
  if (it->rank >= 2 && s != 0 && s != 1) copy_tiled(it, esize, in, out);
  else copy_gather(it, esize, in, out);
}

/* ---- dtype conversion ---- */

static inline int64_t float_to_i64(double x) {
  return x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN;
}
static inline int32_t float_to_i32(double x) {
  return x > -0x1p31 - 1.0 && x < 0x1p31 ? (int32_t)x : INT32_MIN;
}
static inline int64_t int_to_i64(int64_t x) { return x; }
static inline int32_t int_to_i32(int64_t x) { return (int32_t)x; } /* wraps (GCC, Clang) */

#define TO_FLOAT32(x) ((float)(x))
#define TO_FLOAT64(x) ((double)(x))
#define TO_INT64(x) _Generic((x), float: float_to_i64, double: float_to_i64, default: int_to_i64)(x)
#define TO_INT32(x) _Generic((x), float: float_to_i32, double: float_to_i32, default: int_to_i32)(x)
#define TO_INT8(x) ((int8_t)TO_INT32(x))
#define TO_UINT8(x) ((uint8_t)TO_INT32(x))
#define TO_BOOL(x) ((uint8_t)((x) != 0))

/* Source loads: a bool byte is 0 or 1 whatever was stored. */
#define LD_FLOAT32(x) (x)
#define LD_FLOAT64(x) (x)
#define LD_INT64(x) (x)
#define LD_INT32(x) (x)
#define LD_INT8(x) (x)
#define LD_UINT8(x) (x)
#define LD_BOOL(x) ((uint8_t)((x) != 0))

#define CAST_SOURCES(X)                                                                 \
  X(FLOAT32, float) X(FLOAT64, double) X(INT64, int64_t) X(INT32, int32_t) X(INT8, int8_t) \
  X(UINT8, uint8_t) X(BOOL, uint8_t)
#define CAST_TARGETS(X, S, ST)                                                         \
  X(S, ST, FLOAT32, float) X(S, ST, FLOAT64, double) X(S, ST, INT64, int64_t)          \
  X(S, ST, INT32, int32_t) X(S, ST, INT8, int8_t) X(S, ST, UINT8, uint8_t)             \
  X(S, ST, BOOL, uint8_t)

typedef void (*cast_fn)(const void *in, void *out, int64_t n);

#define CAST_FN(S, ST, D, DT)                                                           \
  static void cast_##S##_##D(const void *iv, void *ov, int64_t n) {                     \
    const ST *restrict x = iv;                                                          \
    DT *restrict o = ov;                                                                \
    _Pragma("omp parallel for simd schedule(static) if (parallel: n >= EG_COPY_OMP_MIN)")         \
    for (int64_t i = 0; i < n; i++) o[i] = TO_##D(LD_##S(x[i]));                        \
  }
#define CAST_FNS(S, ST) CAST_TARGETS(CAST_FN, S, ST)
CAST_SOURCES(CAST_FNS)

#define CAST_ENTRY(S, ST, D, DT) [EG_DTYPE_##S][EG_DTYPE_##D] = cast_##S##_##D,
#define CAST_ROW(S, ST) CAST_TARGETS(CAST_ENTRY, S, ST)
static const cast_fn casts[EG_DTYPE_COUNT][EG_DTYPE_COUNT] = {CAST_SOURCES(CAST_ROW)};

bool eg_cast_supported(eg_dtype from, eg_dtype to) {
  if ((unsigned)from >= EG_DTYPE_COUNT || (unsigned)to >= EG_DTYPE_COUNT) return false;
  return from == to || casts[from][to] != NULL;
}

void eg_cast_dense(const void *in, eg_dtype from, void *out, eg_dtype to, int64_t n) {
  assert(eg_cast_supported(from, to));
  if (from == to) {
    if (n > 0) memcpy(out, in, (size_t)n * eg_dtype_size(from));
    return;
  }
  casts[from][to](in, out, n);
}

/* ---- fill ---- */

#define FILL_FN(T, sfx)                                                             \
  static void fill_##sfx(void *ov, const void *value, int64_t n) {                  \
    T v;                                                                            \
    memcpy(&v, value, sizeof v);                                                    \
    T *restrict o = ov;                                                             \
    _Pragma("omp parallel for simd schedule(static) if (parallel: n >= EG_COPY_OMP_MIN)")     \
    for (int64_t i = 0; i < n; i++) o[i] = v;                                       \
  }
FILL_FN(uint8_t, 1)
FILL_FN(uint16_t, 2)
FILL_FN(uint32_t, 4)
FILL_FN(uint64_t, 8)

void eg_fill_dense(void *out, size_t esize, const void *value, int64_t n) {
  static void (*const fills[4])(void *, const void *, int64_t) = {fill_1, fill_2, fill_4,
                                                                  fill_8};
  assert(size_slot(esize) >= 0);
  fills[size_slot(esize)](out, value, n);
}
