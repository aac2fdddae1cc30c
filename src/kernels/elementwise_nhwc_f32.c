/* elementwise_nhwc_f32.c — broadcasting binary/select ops, unary activations, casts (contract in
 * the header). */
#include "kernels/elementwise_nhwc_f32.h"

#include <math.h>
#include <string.h>

#include "kernels/parallel_nhwc_f32.h"
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

static void row_arith(eg_ew_op op, int64_t n, const float *restrict a, int64_t sa,
                      const float *restrict b, int64_t sb, float *restrict y) {
  switch (op) {
  case EG_EW_ADD: EW_ROW(av + bv); break;
  case EG_EW_SUB: EW_ROW(av - bv); break;
  case EG_EW_MUL: EW_ROW(av * bv); break;
  default: EW_ROW(av / bv); break;
  }
}

static void row_greater(int64_t n, const float *a, int64_t sa, const float *b, int64_t sb,
                        uint8_t *y) {
  for (int64_t e = 0; e < n; e++) y[e] = a[e * sa] > b[e * sb];
}

static void row_select(int64_t n, const uint8_t *c, int64_t sc, const float *a, int64_t sa,
                       const float *b, int64_t sb, float *y) {
  for (int64_t e = 0; e < n; e++) y[e] = c[e * sc] ? a[e * sa] : b[e * sb];
}

/* Row `r` (all dims but the innermost) -> element offsets of each operand. */
static void row_offsets(const ew_iter *it, int n_in, int64_t r, int64_t *off) {
  for (int k = 0; k < n_in; k++) off[k] = 0;
  for (int i = it->rank - 2; i >= 0; i--) {
    const int64_t idx = r % it->dims[i];
    r /= it->dims[i];
    for (int k = 0; k < n_in; k++) off[k] += idx * it->stride[k][i];
  }
}

EG_SIMD_CLONES
void eg_elementwise_nhwc_f32(eg_ew_op op, const eg_ew_shape *s, const void *const *in,
                             void *out) {
  const ew_iter it = iter_of(s);
  const int last = it.rank - 1, n_in = s->n_in;
  const int64_t len = it.dims[last];
  int64_t rows = 1;
  for (int i = 0; i < last; i++) rows *= it.dims[i];
#pragma omp parallel for schedule(static) if (eg_nhwc_omp_worth(rows * len))
  for (int64_t r = 0; r < rows; r++) {
    int64_t off[3];
    row_offsets(&it, n_in, r, off);
    const int64_t o = r * len, *st0 = it.stride[0], *st1 = it.stride[1], *st2 = it.stride[2];
    if (op == EG_EW_SELECT)
      row_select(len, (const uint8_t *)in[0] + off[0], st0[last], (const float *)in[1] + off[1],
                 st1[last], (const float *)in[2] + off[2], st2[last], (float *)out + o);
    else if (op == EG_EW_GREATER)
      row_greater(len, (const float *)in[0] + off[0], st0[last], (const float *)in[1] + off[1],
                  st1[last], (uint8_t *)out + o);
    else
      row_arith(op, len, (const float *)in[0] + off[0], st0[last], (const float *)in[1] + off[1],
                st1[last], (float *)out + o);
  }
}

EG_SIMD_CLONES
void eg_unary_nhwc_f32(eg_unary_op op, int64_t n, const float *x, float *y, float lo, float hi) {
  const bool par = eg_nhwc_omp_worth(n);
  switch (op) {
  case EG_UNARY_NEG:
#pragma omp parallel for simd schedule(static) if (par)
    for (int64_t e = 0; e < n; e++) y[e] = -x[e];
    break;
  case EG_UNARY_RELU: /* x < 0 ? 0 : x keeps NaN, as torch.relu does */
#pragma omp parallel for simd schedule(static) if (par)
    for (int64_t e = 0; e < n; e++) y[e] = x[e] < 0.0f ? 0.0f : x[e];
    break;
  case EG_UNARY_RELU_MIN_MAX:
#pragma omp parallel for simd schedule(static) if (par)
    for (int64_t e = 0; e < n; e++) y[e] = x[e] < lo ? lo : x[e] > hi ? hi : x[e];
    break;
  case EG_UNARY_SIGMOID:
#pragma omp parallel for schedule(static) if (par)
    for (int64_t e = 0; e < n; e++) y[e] = 1.0f / (1.0f + expf(-x[e]));
    break;
  default:
#pragma omp parallel for schedule(static) if (par)
    for (int64_t e = 0; e < n; e++) y[e] = tanhf(x[e]);
    break;
  }
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
