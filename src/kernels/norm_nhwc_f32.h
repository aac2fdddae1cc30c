/* norm_nhwc_f32 — QNN Batchnorm, InstanceNorm and GroupNorm on channel-last data, fp32.
 *
 * Batchnorm (inference, statistics folded in): x [rows, c]: y = x * weights[c] + bias[c]
 *   (bias may be NULL).
 * Normalization: x viewed [batch, spatial, c] (spatial = product of the middle dims). Statistics
 *   (biased variance, accumulated in double, two passes) are taken per (b, group of c/groups
 *   consecutive channels) over all spatial positions — GroupNorm; InstanceNorm ACROSS_SPATIAL
 *   is groups = c, ACROSS_ALL groups = 1 — or, with across_channel, per (b, position) over the
 *   c channels (InstanceNorm ACROSS_CHANNEL). Then
 *     MU_SIGMA: y = (x - mean) / sqrt(var + eps) * gamma + beta  ((x - mean) * gamma + beta
 *               without normalize_variance)
 *     RMS:      y = x / sqrt(mean(x^2) + eps) * gamma + beta       (x * gamma + beta without)
 *   gamma/beta NULL mean 1/0. Scratch: eg_norm_nhwc_f32_scratch bytes. */
#ifndef EG_KERNELS_NORM_NHWC_F32_H
#define EG_KERNELS_NORM_NHWC_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void eg_batch_norm_nhwc_f32(int64_t rows, int64_t c, const float *x, const float *weights,
                           const float *bias, float *y);

typedef struct eg_norm_nhwc_params {
  int64_t batch, spatial, c;
  int64_t groups;            /* divides c; ignored with across_channel */
  bool across_channel;
  bool rms;
  bool normalize_variance;
  float epsilon;
} eg_norm_nhwc_params;

size_t eg_norm_nhwc_f32_scratch(const eg_norm_nhwc_params *p);
void eg_norm_nhwc_f32(const eg_norm_nhwc_params *p, const float *x, const float *gamma,
                      const float *beta, float *y, void *scratch);

#endif
