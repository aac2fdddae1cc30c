/* sigmoid_f32.h — e^-|x| and the logistic sigmoid of one float, branch-free so that the loops
 * calling them vectorise (`omp simd`; libm's expf is a scalar call that stops the vectoriser):
 * shared by the CPU path's activations (activation_f32.c) and the htp executor's Sigmoid
 * (elementwise_nhwc_f32.c), so both compute the same sigmoid, bit for bit. Internal header.
 *
 * e^-|x| is Cephes expf's reduction and degree-6 polynomial at -|x| (a few ulp from the
 * correctly rounded result), and sigmoid(x) = 1 / (1 + e^-x) is computed as 1 / (1 + t) for
 * x >= 0 and t / (1 + t) below, t = e^-|x|: exp never overflows (0 far left, 1 far right) and
 * NaN stays NaN. Selects are mask arithmetic (eg_pick_i32), which GCC if-converts into vector
 * blends where a float comparison feeding a select (under the default -ftrapping-math) would
 * leave a branch. */
#ifndef EG_KERNELS_SIGMOID_F32_H
#define EG_KERNELS_SIGMOID_F32_H

#include <stdint.h>
#include <string.h>

static inline uint32_t eg_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float eg_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* cond ? a : b, as masks (two's complement, as on every target GCC and Clang support). */
static inline int32_t eg_pick_i32(int cond, int32_t a, int32_t b) {
  const int32_t m = -(int32_t)(cond != 0);
  return (m & a) | (~m & b);
}

/* e^-|x| (in (0, 1]) for |x| <= ln(FLT_MAX), 0 above it and for NaN. 2^-n (n in [0, 128]) is
 * applied as 2^(2-n) (normal) then 1/4. */
static inline float eg_exp_neg_abs_f32(float x) {
  const uint32_t top = 0x42b17218u; /* 88.72283935546875f, ln(FLT_MAX) rounded down */
  const uint32_t ab = eg_f32_bits(x) & 0x7fffffffu;
  const float a = eg_bits_f32(ab < top ? ab : top);
  const int32_t n = (int32_t)(a * 1.44269504088896341f + 0.5f); /* a >= 0: truncation floors */
  const float fn = (float)n;
  float r = fn * 0.693359375f - a;
  r = r + fn * -2.12194440e-4f;
  const float p = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                     4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f) *
                      (r * r) + r + 1.0f;
  const float t = p * eg_bits_f32((uint32_t)(2 - n + 127) << 23) * 0.25f;
  return eg_bits_f32((uint32_t)eg_pick_i32(ab > top, 0, (int32_t)eg_f32_bits(t)));
}

/* 1 / (1 + e^-x): 1 / (1 + t) for x >= 0 and t / (1 + t) below, t = e^-|x|; NaN: NaN. */
static inline float eg_sigmoid1_f32(float x) {
  const float t = eg_exp_neg_abs_f32(x);
  const uint32_t xb = eg_f32_bits(x);
  const float s = eg_bits_f32((uint32_t)eg_pick_i32((int32_t)xb < 0, (int32_t)eg_f32_bits(t),
                                                     (int32_t)eg_f32_bits(1.0f))) /
                  (1.0f + t);
  return eg_bits_f32((uint32_t)eg_pick_i32((xb & 0x7fffffffu) > 0x7f800000u, (int32_t)xb,
                                           (int32_t)eg_f32_bits(s)));
}

#endif
