/* log_softmax_f32.c — see log_softmax_f32.h. Softmax and log-softmax share every pass but the
 * last (the forward's write, the backward's sum and write), chosen by a flag.
 *
 * inner == 1 (softmax over the last dim, the classifier case): each row is contiguous and
 * handled by row_forward / row_backward. inner > 1: the [dim, inner] block of one outer index is
 * processed EG_LSM_TILE columns at a time, each pass over d reading EG_LSM_TILE adjacent floats,
 * with the tile's maxima and sums on the stack; threads take (outer, tile) pairs. */
#include "kernels/log_softmax_f32.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { EG_LSM_TILE = 16 };
/* Row sums of exponentials are float over stretches this long, then double. */
enum { EG_LSM_STRETCH = 512 };
/* Tensors smaller than this stay on one thread. */
enum { EG_LSM_OMP_MIN = 1 << 15 };

/* exp(x) in float, written so `omp simd` loops vectorise it (libm's expf is a scalar call):
 * exp(x) = 2^n * e^r with n = round(x / ln 2), |r| <= ln2 / 2, e^r by Cephes' degree-6
 * polynomial (within 1.5 ulp). NaN stays NaN, -inf and results below about 2e-38 give 0,
 * results past FLT_MAX give inf. The range logic is integer bit-masking, not float compares:
 * GCC will not if-convert float compares under -ftrapping-math, and the loop would stay scalar;
 * n comes from the rounding constant's mantissa, so no float-to-int conversion is needed. */
static inline float exp_f32(float x) {
  enum { LO_ABS = 0x42AEAC4F, HI = 0x42B17217, INF = 0x7F800000 }; /* 87.33654, 88.72283 */
  uint32_t xb;
  memcpy(&xb, &x, 4);
  const uint32_t ax = xb & 0x7FFFFFFFu, neg = xb >> 31;
  const uint32_t under = 0u - (neg & (ax > LO_ABS));                         /* x < -87.34 */
  const uint32_t over = 0u - ((neg ^ 1u) & (ax > HI) & (ax <= INF));        /* x > 88.72 */
  xb = (xb & ~under) | ((0x80000000u | LO_ABS) & under);
  xb = (xb & ~over) | (HI & over);
  float xc;
  memcpy(&xc, &xb, 4);
  const float t = xc * 1.44269504088896341f + 12582912.0f; /* + 1.5 * 2^23 rounds to n */
  const float fn = t - 12582912.0f;
  const float r = (xc - fn * 0.693359375f) - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  uint32_t tb;
  memcpy(&tb, &t, 4);
  const uint32_t sb = (tb - 0x4B400000u + 126u) << 23; /* 2^(n-1), a normal float up to n=128 */
  float scale;
  memcpy(&scale, &sb, 4);
  float y = p * scale * 2.0f;
  uint32_t yb;
  memcpy(&yb, &y, 4);
  yb = (yb & ~under & ~over) | (INF & over);
  memcpy(&y, &yb, 4);
  return y;
}

static void row_forward(const float *x, float *y, int64_t n, bool soft) {
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int64_t d = 0; d < n; d++) mx = x[d] > mx ? x[d] : mx;
  double s = 0; /* float partial sums over short stretches, added in double */
  for (int64_t d0 = 0; d0 < n; d0 += EG_LSM_STRETCH) {
    const int64_t d1 = n - d0 < EG_LSM_STRETCH ? n : d0 + EG_LSM_STRETCH;
    float part = 0;
#pragma omp simd reduction(+ : part)
    for (int64_t d = d0; d < d1; d++) part += exp_f32(x[d] - mx);
    s += part;
  }
  if (soft) {
    const float inv = (float)(1.0 / s);
#pragma omp simd
    for (int64_t d = 0; d < n; d++) y[d] = exp_f32(x[d] - mx) * inv;
    return;
  }
  const float lse = (float)log(s);
#pragma omp simd
  for (int64_t d = 0; d < n; d++) y[d] = (x[d] - mx) - lse;
}

/* log-softmax: gx = gy - exp(y) * sum(gy); softmax: gx = y * (gy - sum(gy * y)). */
static void row_backward(const float *gy, const float *y, float *gx, int64_t n, bool soft) {
  double s = 0;
  if (soft) {
#pragma omp simd reduction(+ : s)
    for (int64_t d = 0; d < n; d++) s += (double)gy[d] * y[d];
    const float sf = (float)s;
#pragma omp simd
    for (int64_t d = 0; d < n; d++) gx[d] = y[d] * (gy[d] - sf);
    return;
  }
#pragma omp simd reduction(+ : s)
  for (int64_t d = 0; d < n; d++) s += gy[d];
  const float sf = (float)s;
#pragma omp simd
  for (int64_t d = 0; d < n; d++) gx[d] = gy[d] - exp_f32(y[d]) * sf;
}

/* Columns [c0, c0 + w) of the block [dim, inner] starting at x / y. */
static void tile_forward(const float *x, float *y, int64_t dim, int64_t inner, int64_t c0,
                         int w, bool soft) {
  float mx[EG_LSM_TILE];
  double s[EG_LSM_TILE];
  float lse[EG_LSM_TILE];
  for (int c = 0; c < w; c++) mx[c] = -INFINITY, s[c] = 0;
  for (int64_t d = 0; d < dim; d++) {
    const float *r = x + d * inner + c0;
#pragma omp simd
    for (int c = 0; c < w; c++) mx[c] = r[c] > mx[c] ? r[c] : mx[c];
  }
  for (int64_t d = 0; d < dim; d++) {
    const float *r = x + d * inner + c0;
#pragma omp simd
    for (int c = 0; c < w; c++) s[c] += exp_f32(r[c] - mx[c]);
  }
  if (soft) {
    for (int c = 0; c < w; c++) lse[c] = (float)(1.0 / s[c]); /* the reciprocal, here */
    for (int64_t d = 0; d < dim; d++) {
      const float *r = x + d * inner + c0;
      float *o = y + d * inner + c0;
#pragma omp simd
      for (int c = 0; c < w; c++) o[c] = exp_f32(r[c] - mx[c]) * lse[c];
    }
    return;
  }
  for (int c = 0; c < w; c++) lse[c] = (float)log(s[c]);
  for (int64_t d = 0; d < dim; d++) {
    const float *r = x + d * inner + c0;
    float *o = y + d * inner + c0;
#pragma omp simd
    for (int c = 0; c < w; c++) o[c] = (r[c] - mx[c]) - lse[c];
  }
}

static void tile_backward(const float *gy, const float *y, float *gx, int64_t dim,
                          int64_t inner, int64_t c0, int w, bool soft) {
  double s[EG_LSM_TILE];
  float sf[EG_LSM_TILE];
  for (int c = 0; c < w; c++) s[c] = 0;
  for (int64_t d = 0; d < dim; d++) {
    const float *r = gy + d * inner + c0, *q = y + d * inner + c0;
    if (soft) {
#pragma omp simd
      for (int c = 0; c < w; c++) s[c] += (double)r[c] * q[c];
    } else {
#pragma omp simd
      for (int c = 0; c < w; c++) s[c] += r[c];
    }
  }
  for (int c = 0; c < w; c++) sf[c] = (float)s[c];
  if (soft) {
    for (int64_t d = 0; d < dim; d++) {
      int64_t at = d * inner + c0;
#pragma omp simd
      for (int c = 0; c < w; c++) gx[at + c] = y[at + c] * (gy[at + c] - sf[c]);
    }
    return;
  }
  for (int64_t d = 0; d < dim; d++) {
    int64_t at = d * inner + c0;
#pragma omp simd
    for (int c = 0; c < w; c++) gx[at + c] = gy[at + c] - exp_f32(y[at + c]) * sf[c];
  }
}

/* The tensors of one call: the forward reads `in` (x) and writes `out` (y); the backward reads
 * `in` (gy) and `y` and writes `out` (gx). */
typedef struct lsm_call {
  const float *in, *y;
  float *out;
  bool backward;
  bool softmax; /* softmax rather than log-softmax */
} lsm_call;

/* Rows (inner == 1) or (outer, tile) pairs of [outer, dim, inner], in parallel when big. */
static void lsm_run(const lsm_call *k, int64_t outer, int64_t dim, int64_t inner) {
  const int64_t block = dim * inner, total = outer * block;
  if (total == 0) return;
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (total >= EG_LSM_OMP_MIN)
    for (int64_t o = 0; o < outer; o++) {
      if (k->backward)
        row_backward(k->in + o * dim, k->y + o * dim, k->out + o * dim, dim, k->softmax);
      else
        row_forward(k->in + o * dim, k->out + o * dim, dim, k->softmax);
    }
    return;
  }
  const int64_t tiles = (inner + EG_LSM_TILE - 1) / EG_LSM_TILE;
#pragma omp parallel for schedule(static) if (total >= EG_LSM_OMP_MIN)
  for (int64_t t = 0; t < outer * tiles; t++) {
    int64_t o = t / tiles, c0 = (t % tiles) * EG_LSM_TILE;
    int w = inner - c0 < EG_LSM_TILE ? (int)(inner - c0) : EG_LSM_TILE;
    const float *in = k->in + o * block;
    if (k->backward)
      tile_backward(in, k->y + o * block, k->out + o * block, dim, inner, c0, w, k->softmax);
    else
      tile_forward(in, k->out + o * block, dim, inner, c0, w, k->softmax);
  }
}

void eg_log_softmax_f32(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner) {
  const lsm_call k = {.in = x, .out = y, .backward = false};
  lsm_run(&k, outer, dim, inner);
}

void eg_log_softmax_backward_f32(const float *gy, const float *y, float *gx, int64_t outer,
                                 int64_t dim, int64_t inner) {
  const lsm_call k = {.in = gy, .y = y, .out = gx, .backward = true};
  lsm_run(&k, outer, dim, inner);
}

void eg_softmax_f32(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner) {
  const lsm_call k = {.in = x, .out = y, .backward = false, .softmax = true};
  lsm_run(&k, outer, dim, inner);
}

void eg_softmax_backward_f32(const float *gy, const float *y, float *gx, int64_t outer,
                             int64_t dim, int64_t inner) {
  const lsm_call k = {.in = gy, .y = y, .out = gx, .backward = true, .softmax = true};
  lsm_run(&k, outer, dim, inner);
}
