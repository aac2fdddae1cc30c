/* elementwise_nhwc_f32.c — broadcasting binary/select ops, unary activations, casts (contract in
 * the header). */
#include "kernels/elementwise_nhwc_f32.h"

#include <math.h>
#include <string.h>

#include "kernels/parallel_nhwc_f32.h"
#include "kernels/sigmoid_f32.h"
#include "kernels/vec8_nhwc_f32.h"
#include "util/parallel.h"
#include "util/simd.h"

bool eg_ew_shape_init(eg_ew_shape *s, int n_in, const int *ranks, const int64_t *const *dims) {
  memset(s, 0, sizeof *s);
  s->n_in = n_in;
  for (int k = 0; k < n_in; k++) {
    if (ranks[k] < 0 || ranks[k] > EG_EW_MAX_RANK) return false;
    if (ranks[k] > s->rank) s->rank = ranks[k];
  }
  for (int i = 0; i < s->rank; i++) {
    s->out[i] = 1;
    for (int k = 0; k < n_in; k++) {
      const int off = s->rank - ranks[k];
      const int64_t d = i < off ? 1 : dims[k][i - off];
      s->in[k][i] = d;
      if (d != 1 && s->out[i] != 1 && d != s->out[i]) return false;
      if (d != 1) s->out[i] = d;
    }
  }
  return true;
}

/* Merged iteration space: dims and per-operand strides (0 where broadcast). */
typedef struct ew_iter {
  int rank;
  int64_t dims[EG_EW_MAX_RANK];
  int64_t stride[3][EG_EW_MAX_RANK];
} ew_iter;

static ew_iter iter_of(const eg_ew_shape *s) {
  ew_iter it = {0};
  int64_t st[3][EG_EW_MAX_RANK];
  for (int k = 0; k < s->n_in; k++) {
    int64_t acc = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
      st[k][i] = s->in[k][i] == 1 ? 0 : acc;
      acc *= s->in[k][i];
    }
  }
  for (int i = 0; i < s->rank; i++) {
    if (s->out[i] == 1) continue; /* contributes nothing */
    bool merge = it.rank > 0;
    for (int k = 0; merge && k < s->n_in; k++)
      merge = it.stride[k][it.rank - 1] == st[k][i] * s->out[i];
    if (merge) {
      it.dims[it.rank - 1] *= s->out[i];
      for (int k = 0; k < s->n_in; k++) it.stride[k][it.rank - 1] = st[k][i];
      continue;
    }
    it.dims[it.rank] = s->out[i];
    for (int k = 0; k < s->n_in; k++) it.stride[k][it.rank] = st[k][i];
    it.rank++;
  }
  if (it.rank == 0) { /* a single element */
    it.rank = 1;
    it.dims[0] = 1;
  }
  return it;
}

/* Specialised inner loops: `av`/`bv` are the operands, EXPR the result. */
#define EW_ROW(EXPR)                                                              \
  do {                                                                            \
    if (sa && sb) {                                                               \
      _Pragma("omp simd") for (int64_t e = 0; e < n; e++) {                       \
        const float av = a[e], bv = b[e];                                         \
        y[e] = (EXPR);                                                            \
      }                                                                           \
    } else if (sa) {                                                              \
      const float bv = b[0];                                                      \
      _Pragma("omp simd") for (int64_t e = 0; e < n; e++) {                       \
        const float av = a[e];                                                    \
        y[e] = (EXPR);                                                            \
      }                                                                           \
    } else if (sb) {                                                              \
      const float av = a[0];                                                      \
      _Pragma("omp simd") for (int64_t e = 0; e < n; e++) {                       \
        const float bv = b[e];                                                    \
        y[e] = (EXPR);                                                            \
      }                                                                           \
    } else {                                                                      \
      const float av = a[0], bv = b[0];                                           \
      for (int64_t e = 0; e < n; e++) y[e] = (EXPR);                              \
    }                                                                             \
  } while (0)

/* Where a row of the merged space starts in each operand: an odometer over every dim but the
 * innermost, so the next row costs additions, not a division per dim. */
typedef struct row_cursor {
  int64_t idx[EG_EW_MAX_RANK];
  int64_t off[3];
} row_cursor;

static void cursor_at(const ew_iter *it, int n_in, int64_t r, row_cursor *c) {
  for (int k = 0; k < 3; k++) c->off[k] = 0;
  for (int i = it->rank - 2; i >= 0; i--) {
    c->idx[i] = r % it->dims[i];
    r /= it->dims[i];
    for (int k = 0; k < n_in; k++) c->off[k] += c->idx[i] * it->stride[k][i];
  }
}

static inline void cursor_next(const ew_iter *it, int n_in, row_cursor *c) {
  for (int i = it->rank - 2; i >= 0; i--) {
    for (int k = 0; k < n_in; k++) c->off[k] += it->stride[k][i];
    if (++c->idx[i] < it->dims[i]) return;
    for (int k = 0; k < n_in; k++) c->off[k] -= it->stride[k][i] * it->dims[i];
    c->idx[i] = 0;
  }
}

/* Rows [r0, r1) of an arithmetic op: the op is chosen once, each row is one EW_ROW. */
#define EW_ROWS(EXPR)                                                             \
  for (int64_t r = r0; r < r1; r++, cursor_next(it, 2, &c)) {                     \
    const float *restrict a = A + c.off[0], *restrict b = B + c.off[1];           \
    float *restrict y = Y + r * n;                                                \
    EW_ROW(EXPR);                                                                 \
  }

EG_SIMD_CLONES
static void rows_arith(eg_ew_op op, const ew_iter *it, int64_t r0, int64_t r1, const float *A,
                       const float *B, float *Y) {
  const int last = it->rank - 1;
  const int64_t n = it->dims[last], sa = it->stride[0][last], sb = it->stride[1][last];
  row_cursor c;
  cursor_at(it, 2, r0, &c);
  switch (op) {
  case EG_EW_ADD: EW_ROWS(av + bv); break;
  case EG_EW_SUB: EW_ROWS(av - bv); break;
  case EG_EW_MUL: EW_ROWS(av * bv); break;
  default: EW_ROWS(av / bv); break;
  }
}

/* One comparison's rows; CMP is the C operator (>, >=, <=), so each op gets its own loops. */
#define ROWS_COMPARE(name, CMP)                                                                 \
  EG_SIMD_CLONES                                                                                \
  static void name(const ew_iter *it, int64_t r0, int64_t r1, const float *A, const float *B,  \
                   uint8_t *Y) {                                                                \
    const int last = it->rank - 1;                                                              \
    const int64_t n = it->dims[last], sa = it->stride[0][last], sb = it->stride[1][last];      \
    row_cursor c;                                                                               \
    cursor_at(it, 2, r0, &c);                                                                   \
    for (int64_t r = r0; r < r1; r++, cursor_next(it, 2, &c)) {                                \
      const float *a = A + c.off[0], *b = B + c.off[1];                                         \
      uint8_t *restrict y = Y + r * n;                                                          \
      if (sa == 1 && sb == 0) {                                                                 \
        const float bv = b[0];                                                                  \
        _Pragma("omp simd") for (int64_t e = 0; e < n; e++) y[e] = a[e] CMP bv;                 \
      } else if (sa == 0 && sb == 1) {                                                          \
        const float av = a[0];                                                                  \
        _Pragma("omp simd") for (int64_t e = 0; e < n; e++) y[e] = av CMP b[e];                 \
      } else if (sa == 1 && sb == 1) {                                                          \
        _Pragma("omp simd") for (int64_t e = 0; e < n; e++) y[e] = a[e] CMP b[e];               \
      } else {                                                                                  \
        for (int64_t e = 0; e < n; e++) y[e] = a[e * sa] CMP b[e * sb];                         \
      }                                                                                         \
    }                                                                                           \
  }

ROWS_COMPARE(rows_greater, >)
ROWS_COMPARE(rows_greater_equal, >=)
ROWS_COMPARE(rows_less_equal, <=)
#undef ROWS_COMPARE

EG_SIMD_CLONES
static void rows_select(const ew_iter *it, int64_t r0, int64_t r1, const uint8_t *C,
                        const float *A, const float *B, float *Y) {
  const int last = it->rank - 1;
  const int64_t n = it->dims[last], sc = it->stride[0][last], sa = it->stride[1][last],
                sb = it->stride[2][last];
  row_cursor c;
  cursor_at(it, 3, r0, &c);
  for (int64_t r = r0; r < r1; r++, cursor_next(it, 3, &c)) {
    const uint8_t *k = C + c.off[0];
    const float *a = A + c.off[1], *b = B + c.off[2];
    float *restrict y = Y + r * n;
    if (sc == 1 && sa == 1 && sb == 1) {
      _Pragma("omp simd") for (int64_t e = 0; e < n; e++) y[e] = k[e] ? a[e] : b[e];
    } else if (sc == 1 && sa == 1 && sb == 0) { /* ReLU backward: mask, gradient, zero */
      const float bv = b[0];
      _Pragma("omp simd") for (int64_t e = 0; e < n; e++) y[e] = k[e] ? a[e] : bv;
    } else if (sc == 1 && sa == 0 && sb == 1) { /* ReLU6 backward: mask, zero, gradient */
      const float av = a[0];
      _Pragma("omp simd") for (int64_t e = 0; e < n; e++) y[e] = k[e] ? av : b[e];
    } else {
      for (int64_t e = 0; e < n; e++) y[e] = k[e * sc] ? a[e * sa] : b[e * sb];
    }
  }
}

EG_SIMD_CLONES
void eg_elementwise_nhwc_f32(eg_ew_op op, const eg_ew_shape *s, const void *const *in,
                             void *out) {
  const ew_iter it = iter_of(s);
  const int last = it.rank - 1;
  int64_t rows = 1;
  for (int i = 0; i < last; i++) rows *= it.dims[i];
  /* one contiguous band of rows per thread */
  EG_OMP_PARALLEL_IF(eg_nhwc_omp_worth(rows * it.dims[last]), {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t r0 = rows * t / nt, r1 = rows * (t + 1) / nt;
    if (op == EG_EW_SELECT)
      rows_select(&it, r0, r1, in[0], in[1], in[2], out);
    else if (op == EG_EW_GREATER)
      rows_greater(&it, r0, r1, in[0], in[1], out);
    else if (op == EG_EW_GREATER_EQUAL)
      rows_greater_equal(&it, r0, r1, in[0], in[1], out);
    else if (op == EG_EW_LESS_EQUAL)
      rows_less_equal(&it, r0, r1, in[0], in[1], out);
    else
      rows_arith(op, &it, r0, r1, in[0], in[1], out);
  });
}

/* y[e] = op(x[e]) for e in [e0, e1); inlined into eg_unary_nhwc_f32's clones. */
static EG_V8_INLINE void unary_range(eg_unary_op op, int64_t e0, int64_t e1, const float *x,
                                     float *y, float lo, float hi) {
  switch (op) {
  case EG_UNARY_NEG:
#pragma omp simd
    for (int64_t e = e0; e < e1; e++) y[e] = -x[e];
    break;
  case EG_UNARY_RELU: /* x < 0 ? 0 : x keeps NaN, as torch.relu does */
#pragma omp simd
    for (int64_t e = e0; e < e1; e++) y[e] = x[e] < 0.0f ? 0.0f : x[e];
    break;
  case EG_UNARY_RELU_MIN_MAX:
#pragma omp simd
    for (int64_t e = e0; e < e1; e++) y[e] = x[e] < lo ? lo : x[e] > hi ? hi : x[e];
    break;
  case EG_UNARY_SIGMOID:
#pragma omp simd
    for (int64_t e = e0; e < e1; e++) y[e] = eg_sigmoid1_f32(x[e]);
    break;
  case EG_UNARY_RSQRT:
    for (int64_t e = e0; e < e1; e++) y[e] = (float)(1.0 / sqrt((double)x[e]));
    break;
  case EG_UNARY_EXP:
    for (int64_t e = e0; e < e1; e++) y[e] = expf(x[e]);
    break;
  case EG_UNARY_LOG:
    for (int64_t e = e0; e < e1; e++) y[e] = logf(x[e]);
    break;
  case EG_UNARY_GELU:
    for (int64_t e = e0; e < e1; e++)
      y[e] = x[e] * 0.5f * (1.0f + erff(x[e] * 0.70710678118654752f));
    break;
  case EG_UNARY_HARD_SWISH: /* a NaN x fails both compares and stays NaN */
#pragma omp simd
    for (int64_t e = e0; e < e1; e++) {
      float c = x[e] + 3.0f;
      c = c < 0.0f ? 0.0f : c > 6.0f ? 6.0f : c;
      y[e] = x[e] * c / 6.0f;
    }
    break;
  case EG_UNARY_HARD_SIGMOID:
#pragma omp simd
    for (int64_t e = e0; e < e1; e++) {
      const float v = lo * x[e] + hi;
      y[e] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
    break;
  default:
    for (int64_t e = e0; e < e1; e++) y[e] = tanhf(x[e]);
    break;
  }
}

/* One contiguous share per thread, in a region only where a second thread joins (the small
 * tensors of a step call this dozens of times: an `omp parallel if` region costs ~1.5 us even
 * when its condition is false, util/parallel.h). */
EG_SIMD_CLONES
void eg_unary_nhwc_f32(eg_unary_op op, int64_t n, const float *x, float *y, float lo, float hi) {
  EG_OMP_PARALLEL_IF(eg_nhwc_omp_worth(n), {
    int64_t e0, e1;
    eg_omp_share(n, 16, &e0, &e1);
    unary_range(op, e0, e1, x, y, lo, hi);
  });
}

/* ---- chains (eg_ew_chain_nhwc_f32) ---- */

#define CHAIN_BLOCK 1024 /* elements a block: every step's result of a block stays in L1 */

bool eg_ew_chain_op_masks(eg_ew_chain_op op) {
  return op == EG_EW_CHAIN_GREATER || op == EG_EW_CHAIN_GREATER_EQUAL ||
         op == EG_EW_CHAIN_LESS_EQUAL;
}

int eg_ew_chain_op_arity(eg_ew_chain_op op) {
  return op == EG_EW_CHAIN_SELECT ? 3 : op >= EG_EW_CHAIN_NEG ? 1 : 2;
}

/* One operand over a block: its elements (stride 1) or one value (stride 0). */
typedef struct chain_arg {
  const void *p;
  int64_t stride;
} chain_arg;

/* A comparison's mask over n elements of a and b (strides sa, sb: 1 or 0). */
EG_SIMD_CLONES
static void chain_mask(eg_ew_chain_op op, const float *restrict a, int64_t sa,
                              const float *restrict b, int64_t sb, int64_t n,
                              uint8_t *restrict y) {
  if (op == EG_EW_CHAIN_GREATER) EW_ROW(av > bv);
  else if (op == EG_EW_CHAIN_GREATER_EQUAL) EW_ROW(av >= bv);
  else EW_ROW(av <= bv);
}

/* Step st over n elements of its operands x: a float result into y, a mask into m; each the
 * same per-element expression as the op's own kernel above (its own clones: the Selects'
 * loops vectorize with AVX2's masked loads only). */
EG_SIMD_CLONES
static void chain_step(const eg_ew_chain_step *st, const chain_arg *x, int64_t n,
                              float *restrict y, uint8_t *restrict m) {
  const float *restrict a = x[0].p, *restrict b = x[1].p;
  const int64_t sa = x[0].stride, sb = x[1].stride;
  switch ((eg_ew_chain_op)st->op) {
  case EG_EW_CHAIN_ADD: EW_ROW(av + bv); break;
  case EG_EW_CHAIN_SUB: EW_ROW(av - bv); break;
  case EG_EW_CHAIN_MUL: EW_ROW(av * bv); break;
  case EG_EW_CHAIN_DIV: EW_ROW(av / bv); break;
  case EG_EW_CHAIN_GREATER:
  case EG_EW_CHAIN_GREATER_EQUAL:
  case EG_EW_CHAIN_LESS_EQUAL: chain_mask((eg_ew_chain_op)st->op, a, sa, b, sb, n, m); break;
  case EG_EW_CHAIN_SELECT: {
    const uint8_t *k = x[0].p;
    const float *p = x[1].p, *q = x[2].p;
    const int64_t sk = x[0].stride, sp = x[1].stride, sq = x[2].stride;
    if (sk && sp && sq) {
      _Pragma("omp simd") for (int64_t e = 0; e < n; e++) y[e] = k[e] ? p[e] : q[e];
    } else if (sk && sp) {
      const float qv = q[0];
      _Pragma("omp simd") for (int64_t e = 0; e < n; e++) y[e] = k[e] ? p[e] : qv;
    } else if (sk && sq) {
      const float pv = p[0];
      _Pragma("omp simd") for (int64_t e = 0; e < n; e++) y[e] = k[e] ? pv : q[e];
    } else {
      for (int64_t e = 0; e < n; e++) y[e] = k[e * sk] ? p[e * sp] : q[e * sq];
    }
    break;
  }
  case EG_EW_CHAIN_NEG:
    for (int64_t e = 0; e < n; e++) y[e] = -a[e * sa];
    break;
  case EG_EW_CHAIN_RELU:
    _Pragma("omp simd") for (int64_t e = 0; e < n; e++) {
      const float v = a[e * sa];
      y[e] = v < 0.0f ? 0.0f : v;
    }
    break;
  default: {
    const float lo = st->lo, hi = st->hi;
    _Pragma("omp simd") for (int64_t e = 0; e < n; e++) {
      const float v = a[e * sa];
      y[e] = v < lo ? lo : v > hi ? hi : v;
    }
  }
  }
}

/* Operand i of step st for the block of n elements at element i0, CHAN leaves at coff of
 * their vector (or read from their tiled copy). */
static chain_arg chain_operand(const eg_ew_chain *ch, const eg_ew_chain_step *st, int i,
                               const void *const *leaves, const float *const *tiled,
                               int64_t i0, int64_t coff, float (*reg)[CHAIN_BLOCK],
                               uint8_t (*mreg)[CHAIN_BLOCK]) {
  const int a = st->arg[i];
  const bool mask = st->op == EG_EW_CHAIN_SELECT && i == 0;
  if (a >= 0) return (chain_arg){mask ? (const void *)mreg[a] : (const void *)reg[a], 1};
  const int l = -1 - a;
  switch ((eg_ew_leaf_form)ch->leaf_form[l]) {
  case EG_EW_LEAF_FULL:
    return (chain_arg){mask ? (const void *)((const uint8_t *)leaves[l] + i0)
                            : (const void *)((const float *)leaves[l] + i0), 1};
  case EG_EW_LEAF_CHAN:
    return (chain_arg){tiled[l] ? (const void *)tiled[l]
                                : (const void *)((const float *)leaves[l] + coff), 1};
  default: return (chain_arg){leaves[l], 0};
  }
}

/* A chain's blocks: whole rows of c (CHAN leaves then read a copy tiled to the block), or
 * pieces of one row. */
typedef struct chain_blocks {
  bool rows;
  int64_t per, pieces, count;
} chain_blocks;

static chain_blocks blocks_of(const eg_ew_chain *ch) {
  chain_blocks bl = {.rows = ch->c <= CHAIN_BLOCK};
  bl.per = bl.rows ? CHAIN_BLOCK / ch->c * ch->c : CHAIN_BLOCK;
  bl.pieces = bl.rows ? 1 : (ch->c + bl.per - 1) / bl.per;
  bl.count = bl.rows ? (ch->n + bl.per - 1) / bl.per : ch->n / ch->c * bl.pieces;
  return bl;
}

/* CHAN leaves tiled to a block of rows (tiled[l] NULL for the others or in pieces). */
static void tile_leaves(const eg_ew_chain *ch, const void *const *leaves, const chain_blocks *bl,
                        float (*tiles)[CHAIN_BLOCK], const float **tiled) {
  for (int l = 0; l < EG_EW_CHAIN_MAX_LEAVES; l++) tiled[l] = NULL;
  for (int l = 0; bl->rows && l < ch->n_leaves; l++) {
    if (ch->leaf_form[l] != EG_EW_LEAF_CHAN) continue;
    for (int64_t e = 0; e < bl->per; e++) tiles[l][e] = ((const float *)leaves[l])[e % ch->c];
    tiled[l] = tiles[l];
  }
}

/* Block b of the chain: its first element (*i0), first column (*coff) and length (returned);
 * the last step's results into out[0 .. len). `round` as for eg_ew_chain_nhwc_f32, and on the
 * last step's results too with round_last. */
EG_SIMD_CLONES static int64_t chain_block(const eg_ew_chain *ch, const void *const *leaves,
                           const float *const *tiled, const chain_blocks *bl, int64_t b,
                           float *(*out)(void *ctx, int64_t i0), void *ctx,
                           void (*round)(float *x, size_t n), bool round_last, int64_t *i0_out,
                           int64_t *coff_out) {
  float reg[EG_EW_CHAIN_MAX_STEPS][CHAIN_BLOCK];
  uint8_t mreg[EG_EW_CHAIN_MAX_STEPS][CHAIN_BLOCK];
  const int64_t n = ch->n, c = ch->c, per = bl->per;
  const int64_t coff = bl->rows ? 0 : b % bl->pieces * per;
  const int64_t i0 = bl->rows ? b * per : b / bl->pieces * c + coff;
  const int64_t len = bl->rows ? (n - i0 < per ? n - i0 : per) : (c - coff < per ? c - coff : per);
  for (int s = 0; s < ch->n_steps; s++) {
    const eg_ew_chain_step *st = &ch->step[s];
    chain_arg x[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
    for (int i = 0; i < eg_ew_chain_op_arity((eg_ew_chain_op)st->op); i++)
      x[i] = chain_operand(ch, st, i, leaves, tiled, i0, coff, reg, mreg);
    const bool last = s == ch->n_steps - 1;
    float *dst = last ? out(ctx, i0) : reg[s];
    chain_step(st, x, len, dst, mreg[s]);
    if (round && (!last || round_last) && !eg_ew_chain_op_masks((eg_ew_chain_op)st->op))
      round(dst, (size_t)len);
  }
  *i0_out = i0;
  *coff_out = coff;
  return len;
}

/* chain_block's destination: y at the block's first element, or one block buffer. */
static float *at_element(void *y, int64_t i0) { return (float *)y + i0; }
static float *at_start(void *buf, int64_t i0) {
  (void)i0;
  return buf;
}

EG_SIMD_CLONES
void eg_ew_chain_nhwc_f32(const eg_ew_chain *ch, const void *const *leaves, float *y,
                          void (*round)(float *x, size_t n)) {
  const chain_blocks bl = blocks_of(ch);
  float tiles[EG_EW_CHAIN_MAX_LEAVES][CHAIN_BLOCK];
  const float *tiled[EG_EW_CHAIN_MAX_LEAVES];
  tile_leaves(ch, leaves, &bl, tiles, tiled);
#pragma omp parallel for schedule(static) if (eg_nhwc_omp_worth(ch->n))
  for (int64_t b = 0; b < bl.count; b++) {
    int64_t i0, coff;
    chain_block(ch, leaves, tiled, &bl, b, at_element, y, round, false, &i0, &coff);
  }
}

EG_SIMD_CLONES
void eg_ew_chain_reduce_nhwc_f32(const eg_ew_chain *ch, const void *const *leaves, bool mean,
                                 float *y, double *acc, void (*round)(float *x, size_t n)) {
  const chain_blocks bl = blocks_of(ch);
  const int64_t c = ch->c;
  float tiles[EG_EW_CHAIN_MAX_LEAVES][CHAIN_BLOCK], buf[CHAIN_BLOCK];
  const float *tiled[EG_EW_CHAIN_MAX_LEAVES];
  tile_leaves(ch, leaves, &bl, tiles, tiled);
  for (int64_t e = 0; e < c; e++) acc[e] = 0.0;
  for (int64_t b = 0; b < bl.count; b++) { /* in element order: each channel's sum in row order */
    int64_t i0, coff;
    const int64_t len = chain_block(ch, leaves, tiled, &bl, b, at_start, buf, round, true, &i0,
                                    &coff);
    for (int64_t r = 0; r < (bl.rows ? len / c : 1); r++) {
      const float *row = buf + r * c;
      double *a = acc + coff;
#pragma omp simd
      for (int64_t e = 0; e < (bl.rows ? c : len); e++) a[e] += (double)row[e];
    }
  }
  const double scale = mean ? (double)c / (double)ch->n : 1.0;
  for (int64_t e = 0; e < c; e++) y[e] = (float)(acc[e] * scale);
}

/* ---- casts ---- */

static double cast_read(eg_cast_type t, const void *x, int64_t i) {
  switch (t) {
  case EG_CAST_F32: return ((const float *)x)[i];
  case EG_CAST_I32: return ((const int32_t *)x)[i];
  case EG_CAST_U32: return ((const uint32_t *)x)[i];
  case EG_CAST_I8: return ((const int8_t *)x)[i];
  case EG_CAST_U8: return ((const uint8_t *)x)[i];
  default: return ((const uint8_t *)x)[i] != 0;
  }
}

/* Truncates toward zero and saturates to [lo, hi]; NaN -> 0. */
static double to_int(double v, double lo, double hi) {
  if (v != v) return 0.0;
  v = trunc(v);
  return v < lo ? lo : v > hi ? hi : v;
}

static void cast_write(eg_cast_type t, void *y, int64_t i, double v) {
  switch (t) {
  case EG_CAST_F32: ((float *)y)[i] = (float)v; break;
  case EG_CAST_I32: ((int32_t *)y)[i] = (int32_t)to_int(v, INT32_MIN, INT32_MAX); break;
  case EG_CAST_U32: ((uint32_t *)y)[i] = (uint32_t)to_int(v, 0, UINT32_MAX); break;
  case EG_CAST_I8: ((int8_t *)y)[i] = (int8_t)to_int(v, INT8_MIN, INT8_MAX); break;
  case EG_CAST_U8: ((uint8_t *)y)[i] = (uint8_t)to_int(v, 0, UINT8_MAX); break;
  default: ((uint8_t *)y)[i] = v != 0.0; break;
  }
}

EG_SIMD_CLONES
void eg_cast_nhwc(int64_t n, eg_cast_type from, const void *x, eg_cast_type to, void *y) {
#pragma omp parallel for schedule(static) if (eg_nhwc_omp_worth(n))
  for (int64_t i = 0; i < n; i++) cast_write(to, y, i, cast_read(from, x, i));
}
