/* concat_nhwc_f32 — QNN Concat along one axis, fp32 (any layout).
 *
 *   Input k viewed as [outer, sizes[k], inner]; y [outer, sum(sizes), inner] holds them side by
 *   side along the middle dim, in order. Never allocates. */
#ifndef EG_KERNELS_CONCAT_NHWC_F32_H
#define EG_KERNELS_CONCAT_NHWC_F32_H

#include <stdint.h>

void eg_concat_nhwc_f32(int n_inputs, const float *const *xs, const int64_t *sizes,
                        int64_t outer, int64_t inner, float *y);

#endif
