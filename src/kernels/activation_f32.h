/* activation_f32 — elementwise activation kernels and their backwards, fp32, on dense arrays
 * of n elements (the op layer expands broadcast operands first).
 *
 * Formulas are ATen's CPU ones (PyTorch 1.13 unless noted), so results agree to rounding,
 * including the special values:
 *   hardtanh(x)             = hi < v ? hi : v, v = x < lo ? lo : x  (NaN stays NaN; lo > hi: hi)
 *                             (also clamp, clamp_min and clamp_max: a missing bound is -inf/+inf)
 *   hardtanh_backward       = (x <= lo || x >= hi) ? 0 : gy  (strict interior; NaN x passes gy)
 *   sigmoid(x)              = 1 / (1 + exp(-x))              (exp overflow gives 0, never NaN)
 *                             computed as 1 / (1 + t) for x >= 0, t / (1 + t) below, with
 *                             t = exp(-|x|) (0 past ln(FLT_MAX)), so exp never overflows
 *   sigmoid_backward(gy, y) = gy * (1 - y) * y               (y is sigmoid's output)
 *   tanh(x)                 = tanhf(x)
 *   tanh_backward(gy, y)    = gy * (1 - y * y)               (y is tanh's output)
 *   silu(x)                 = x / (1 + exp(-x))              (x << 0: -0; x = -inf: NaN, as ATen)
 *                             computed as x / (1 + t) for x >= 0, (x * t) / (1 + t) below
 *   silu_backward(gy, x)    = gy * s * (1 + x * (1 - s)), s = sigmoid(x)
 *   hardswish(x)            = x * c / 6, c = min(max(x + 3, 0), 6)   (NaN stays NaN)
 *   hardswish_backward      = x <= -3 ? 0 : x >= 3 ? gy : gy * (x / 3 + 0.5)
 *                             (PyTorch 2.x; 1.13 gives -0.5 gy at x = -3, and at x = 3 gy or
 *                             1.5 gy depending on the element's position in its vector loop)
 *   hardsigmoid(x)          = min(max(x + 3, 0), 6) / 6
 *   hardsigmoid_backward    = -3 < x < 3 ? gy * (1/6) : 0
 *   gelu(x)                 = x * 0.5 * (1 + erf(x / sqrt 2))        (approximate='none')
 *   gelu_backward(gy, x)    = gy * (cdf + x * pdf), cdf = 0.5 * (1 + erf(x / sqrt 2)),
 *                             pdf = exp(-x^2 / 2) / sqrt(2 pi)
 *   gelu_tanh(x)            = 0.5 * x * (1 + t), t = tanh(b * (x + k * x^3)),
 *                             b = sqrt(2 / pi), k = 0.044715          (approximate='tanh')
 *   gelu_tanh_backward      = gy * (0.5 * (1 + t) + 0.5 * x * (1 - t^2) * b * (1 + 3 k x^2))
 *                             (in float, in ATen's order: x^3 or x^2 overflowing gives NaN for
 *                             |x| beyond about 1.8e19 in the backward, as ATen's)
 * Inputs and outputs may alias (same pointer) but must not partially overlap. */
#ifndef EG_KERNELS_ACTIVATION_F32_H
#define EG_KERNELS_ACTIVATION_F32_H

#include <stdint.h>

void eg_hardtanh_f32(int64_t n, const float *x, float lo, float hi, float *y);
void eg_hardtanh_backward_f32(int64_t n, const float *gy, const float *x, float lo, float hi,
                              float *gx);
void eg_sigmoid_f32(int64_t n, const float *x, float *y);
void eg_sigmoid_backward_f32(int64_t n, const float *gy, const float *y, float *gx);
void eg_tanh_f32(int64_t n, const float *x, float *y);
void eg_tanh_backward_f32(int64_t n, const float *gy, const float *y, float *gx);
void eg_silu_f32(int64_t n, const float *x, float *y);
void eg_silu_backward_f32(int64_t n, const float *gy, const float *x, float *gx);
void eg_hardswish_f32(int64_t n, const float *x, float *y);
void eg_hardswish_backward_f32(int64_t n, const float *gy, const float *x, float *gx);
void eg_hardsigmoid_f32(int64_t n, const float *x, float *y);
void eg_hardsigmoid_backward_f32(int64_t n, const float *gy, const float *x, float *gx);
void eg_gelu_f32(int64_t n, const float *x, float *y);
void eg_gelu_backward_f32(int64_t n, const float *gy, const float *x, float *gx);
void eg_gelu_tanh_f32(int64_t n, const float *x, float *y);
void eg_gelu_tanh_backward_f32(int64_t n, const float *gy, const float *x, float *gx);

#endif
