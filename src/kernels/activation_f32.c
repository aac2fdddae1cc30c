/* activation_f32.c — elementwise activations and backwards, fp32 (see activation_f32.h).
 *
 * Each is one flat loop, vectorised (`omp simd`) and split across OpenMP threads when big.
 * libm's expf/tanhf are scalar calls that stop the vectoriser (and glibc's vector versions need
 * -ffast-math), so exp and tanh are computed here by the Cephes single-precision algorithms,
 * written branch-free so they vectorise: a few ulp from the correctly rounded result, with
 * IEEE behaviour at the edges (overflow to inf, gradual underflow to 0, NaN propagated).
 * gelu's erf is libm's erff (correctly rounded to about an ulp; a scalar call, so gelu and its
 * backward do not vectorise). */
#include "kernels/activation_f32.h"

#include <math.h>
#include "kernels/sigmoid_f32.h"
#include "util/simd.h"

/* Arrays at or above this many elements run in parallel. */
#define EG_ACT_PARALLEL ((int64_t)1 << 16)

/* Bit-level helpers (kernels/sigmoid_f32.h's, under short names). Selects are written as mask
 * arithmetic (`pick`) and clamps as integer min/max on order-preserving keys: GCC if-converts
 * those into vector blends, while a float comparison feeding a select (under the default
 * -ftrapping-math) or floorf leave a branch or a call that stops vectorisation. (Signed/unsigned
 * conversions are two's complement, as on every target GCC and Clang support.) */
static inline uint32_t f2u(float f) { return eg_f32_bits(f); }
static inline float u2f(uint32_t u) { return eg_bits_f32(u); }
static inline int32_t pick(int cond, int32_t a, int32_t b) { return eg_pick_i32(cond, a, b); }

/* An int32 ordered like the float value (for non-NaN floats): negatives' magnitude bits are
 * flipped. Its own inverse. */
static inline int32_t fkey(uint32_t u) {
  const uint32_t neg = (uint32_t)-(int32_t)(u >> 31);
  return (int32_t)(u ^ (neg & 0x7fffffffu));
}

/* 2^n for n in [-126, 127], from the exponent bits. */
static inline float pow2i(int32_t n) { return u2f((uint32_t)(n + 127) << 23); }

/* e^x (Cephes expf): x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for an exact product),
 * e^r by a degree-6 polynomial, times 2^n applied as two halves so that n in [-150, 128] needs
 * no special case (denormal results, the top of the range). Above ln(FLT_MAX): inf; below the
 * log of the smallest denormal: 0; NaN: NaN. */
static inline float exp_f32(float x) {
  const float hi = 88.72283935546875f, lo = -103.972084045410f;
  const int32_t k = fkey(f2u(x)), khi = fkey(f2u(hi)), klo = fkey(f2u(lo));
  int32_t kc = k < khi ? k : khi; /* NaN keys clamp to an end; the last pick restores NaN */
  kc = kc > klo ? kc : klo;
  const float c = u2f((uint32_t)fkey((uint32_t)kc));
  /* n = round(c / ln2): c * log2(e) + 0.5 is in [-149.5, 128.5], shifted positive so the
   * truncating conversion floors */
  const int32_t n = (int32_t)(c * 1.44269504088896341f + 151.5f) - 151;
  const float fn = (float)n;
  float r = c - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  const float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                     4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) *
                      (r * r) + r + 1.0f;
  const int32_t half = n / 2;
  int32_t y = (int32_t)f2u(p * pow2i(half) * pow2i(n - half));
  y = pick(k > khi, 0x7f800000, y);
  y = pick(k < klo, 0, y);
  y = pick((f2u(x) & 0x7fffffffu) > 0x7f800000u, (int32_t)f2u(x), y);
  return u2f((uint32_t)y);
}

/* tanh (Cephes tanhf): an odd polynomial below |x| = 0.625, else 1 - 2 / (e^{2|x|} + 1); the
 * sign is x's (so -0 stays -0; NaN stays NaN through the second form). */
static inline float tanh_f32(float x) {
  const uint32_t abits = f2u(x) & 0x7fffffffu;
  const float a = u2f(abits), s = a * a;
  const float small = ((((-5.70498872745e-3f * s + 2.06390887954e-2f) * s - 5.37397155531e-2f) *
                           s + 1.33314422036e-1f) * s - 3.33332819422e-1f) * s * a + a;
  const float big = 1.0f - 2.0f / (exp_f32(2.0f * a) + 1.0f);
  const int32_t t = pick(abits < f2u(0.625f), (int32_t)f2u(small), (int32_t)f2u(big));
  return u2f((uint32_t)t | (f2u(x) & 0x80000000u));
}

/* The numerator over 1 + e^-|x| of x * sigmoid(x): x for x >= 0, x * e^-|x| below (sign bit
 * set), with t = e^-|x|; NaN stays NaN either way. */
static inline float silu_num(float x, float t) {
  return u2f((uint32_t)pick((int32_t)f2u(x) < 0, (int32_t)f2u(x * t), (int32_t)f2u(x)));
}

EG_SIMD_CLONES
void eg_hardtanh_f32(int64_t n, const float *x, float lo, float hi, float *y) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) {
    float v = x[i] < lo ? lo : x[i];
    y[i] = hi < v ? hi : v;
  }
}

EG_SIMD_CLONES
void eg_hardtanh_backward_f32(int64_t n, const float *gy, const float *x, float lo, float hi,
                              float *gx) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) gx[i] = (x[i] <= lo || x[i] >= hi) ? 0.0f : gy[i];
}

EG_SIMD_CLONES
void eg_sigmoid_f32(int64_t n, const float *x, float *y) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) y[i] = eg_sigmoid1_f32(x[i]);
}

EG_SIMD_CLONES
void eg_sigmoid_backward_f32(int64_t n, const float *gy, const float *y, float *gx) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * (1.0f - y[i]) * y[i];
}

EG_SIMD_CLONES
void eg_tanh_f32(int64_t n, const float *x, float *y) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) y[i] = tanh_f32(x[i]);
}

EG_SIMD_CLONES
void eg_tanh_backward_f32(int64_t n, const float *gy, const float *y, float *gx) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * (1.0f - y[i] * y[i]);
}

EG_SIMD_CLONES
void eg_silu_f32(int64_t n, const float *x, float *y) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) {
    const float t = eg_exp_neg_abs_f32(x[i]);
    y[i] = silu_num(x[i], t) / (1.0f + t);
  }
}

EG_SIMD_CLONES
void eg_silu_backward_f32(int64_t n, const float *gy, const float *x, float *gx) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) {
    const float s = eg_sigmoid1_f32(x[i]);
    gx[i] = gy[i] * s * (1.0f + x[i] * (1.0f - s));
  }
}

/* min(max(x + 3, 0), 6), NaN propagated (both comparisons are false for NaN). */
static inline float relu6_shift3(float x) {
  float c = x + 3.0f;
  c = c < 0.0f ? 0.0f : c;
  return c > 6.0f ? 6.0f : c;
}

EG_SIMD_CLONES
void eg_hardswish_f32(int64_t n, const float *x, float *y) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) y[i] = x[i] * relu6_shift3(x[i]) / 6.0f;
}

/* PyTorch 2.x's vector loop: NaN x gives gy * NaN. */
EG_SIMD_CLONES
void eg_hardswish_backward_f32(int64_t n, const float *gy, const float *x, float *gx) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) {
    const float inner = gy[i] * (x[i] / 3.0f + 0.5f);
    gx[i] = x[i] <= -3.0f ? 0.0f : x[i] >= 3.0f ? gy[i] : inner;
  }
}

EG_SIMD_CLONES
void eg_hardsigmoid_f32(int64_t n, const float *x, float *y) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) y[i] = relu6_shift3(x[i]) / 6.0f;
}

EG_SIMD_CLONES
void eg_hardsigmoid_backward_f32(int64_t n, const float *gy, const float *x, float *gx) {
  const float sixth = 1.0f / 6.0f; /* ATen multiplies by one_sixth, rounded to float */
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) gx[i] = x[i] > -3.0f && x[i] < 3.0f ? gy[i] * sixth : 0.0f;
}

/* 0.5 * (1 + erf(x / sqrt 2)), the standard normal CDF. */
static inline float normal_cdf(float x) {
  return 0.5f * (1.0f + erff(x * 0.70710678118654752f));
}

EG_SIMD_CLONES
void eg_gelu_f32(int64_t n, const float *x, float *y) {
#pragma omp parallel for schedule(static) if (n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++)
    y[i] = x[i] * 0.5f * (1.0f + erff(x[i] * 0.70710678118654752f));
}

EG_SIMD_CLONES
void eg_gelu_backward_f32(int64_t n, const float *gy, const float *x, float *gx) {
  const float beta = 0.39894228040143268f; /* 1 / sqrt(2 pi) */
#pragma omp parallel for schedule(static) if (n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) {
    const float pdf = beta * exp_f32(x[i] * x[i] * -0.5f);
    gx[i] = gy[i] * (normal_cdf(x[i]) + x[i] * pdf);
  }
}

/* gelu's tanh form: ATen's constants, rounded to float as its float kernel holds them. */
#define EG_GELU_BETA 0.7978845608028654f /* sqrt(2) * (2 / sqrt(pi)) * 0.5 = sqrt(2 / pi) */
#define EG_GELU_KAPPA 0.044715f

EG_SIMD_CLONES
void eg_gelu_tanh_f32(int64_t n, const float *x, float *y) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) {
    const float v = x[i], cube = v * v * v;
    const float t = tanh_f32(EG_GELU_BETA * (v + EG_GELU_KAPPA * cube));
    y[i] = 0.5f * v * (1.0f + t);
  }
}

EG_SIMD_CLONES
void eg_gelu_tanh_backward_f32(int64_t n, const float *gy, const float *x, float *gx) {
#pragma omp parallel for simd schedule(static) if (parallel: n >= EG_ACT_PARALLEL)
  for (int64_t i = 0; i < n; i++) {
    const float v = x[i], sq = v * v, cube = sq * v;
    const float t = tanh_f32(EG_GELU_BETA * (v + EG_GELU_KAPPA * cube));
    const float left = 0.5f * v, right = 1.0f + t;
    const float inner_d = EG_GELU_BETA * (1.0f + 3.0f * EG_GELU_KAPPA * sq);
    gx[i] = gy[i] * (0.5f * right + left * (1.0f - t * t) * inner_d);
  }
}
