/* softmax_nhwc_f32 — QNN LogSoftmax and Softmax along one axis, fp32 (any layout).
 *
 *   x viewed as [outer, axis, inner]: y[o, a, i] = beta*x[o, a, i] - m - log(sum_a' exp(beta*x[o,
 *   a', i] - m)), m the max over the axis (sum in double); Softmax: y = exp(beta*x[o, a, i] - m)
 *   / sum_a' exp(beta*x[o, a', i] - m) (a lane of only -inf gives NaN, as ATen's softmax).
 *   Never allocates. */
#ifndef EG_KERNELS_SOFTMAX_NHWC_F32_H
#define EG_KERNELS_SOFTMAX_NHWC_F32_H

#include <stdint.h>

void eg_log_softmax_nhwc_f32(int64_t outer, int64_t axis, int64_t inner, float beta,
                             const float *x, float *y);
void eg_softmax_nhwc_f32(int64_t outer, int64_t axis, int64_t inner, float beta, const float *x,
                         float *y);

#endif
