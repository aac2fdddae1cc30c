/* log_softmax_f32 — aten._log_softmax, aten._softmax and their _backward_data ops, fp32, any
 * dense C-ordered tensor.
 *
 * The softmax dim splits the tensor into [outer, dim, inner] (outer: the product of the sizes
 * before it, inner: after it):
 *   y[o, d, i]  = x[o, d, i] - max_d' x[o, d', i] - log(sum_d' exp(x[o, d', i] - max))
 *   gx[o, d, i] = gy[o, d, i] - exp(y[o, d, i]) * sum_d' gy[o, d', i]
 * and for softmax
 *   y[o, d, i]  = exp(x[o, d, i] - max_d' x[o, d', i]) / sum_d' exp(x[o, d', i] - max)
 *   gx[o, d, i] = y[o, d, i] * (gy[o, d, i] - sum_d' gy[o, d', i] * y[o, d', i])
 * Sums accumulate in double (exponentials in float over stretches of 512 first); exp is a
 * vectorisable polynomial within 1.5 ulp that flushes results below ~2e-38 to 0. Non-finite
 * inputs give ATen's results (-inf stays -inf, or 0 for softmax; NaN or +inf in a row makes it
 * NaN). Rows are independent, so the kernels split `outer` across threads; with inner > 1 they
 * walk tiles of adjacent columns so every access is to contiguous memory. x and y (gy, y and gx)
 * must not overlap. */
#ifndef EG_KERNELS_LOG_SOFTMAX_F32_H
#define EG_KERNELS_LOG_SOFTMAX_F32_H

#include <stdint.h>

void eg_log_softmax_f32(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner);

void eg_log_softmax_backward_f32(const float *gy, const float *y, float *gx, int64_t outer,
                                 int64_t dim, int64_t inner);

void eg_softmax_f32(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner);

void eg_softmax_backward_f32(const float *gy, const float *y, float *gx, int64_t outer,
                             int64_t dim, int64_t inner);

#endif
