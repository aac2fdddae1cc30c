/* reduce_nhwc_f32 — QNN ReduceSum / ReduceMean / ReduceMax over any set of dims, fp32 (any
 * layout).
 *
 *   x has `rank` dims; y has the dims not in `mask` (keep_dims only changes y's shape, not its
 *   bytes, so the caller handles it). y = sum (or mean) of x over the masked dims, accumulated
 *   in double (scratch: one double per output element); with `max`, the largest element
 *   instead (NaN when one is NaN, -inf when all are -inf).
 * Dims are merged into alternating kept/reduced runs; a kept innermost run is accumulated as
 * whole rows (e.g. the bias gradient, ReduceSum over N,H,W of NHWC, adds rows of C). */
#ifndef EG_KERNELS_REDUCE_NHWC_F32_H
#define EG_KERNELS_REDUCE_NHWC_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EG_REDUCE_MAX_RANK 8

typedef struct eg_reduce_nhwc_params {
  int rank;
  int64_t dims[EG_REDUCE_MAX_RANK];
  uint32_t mask;                   /* bit d: dim d is reduced */
  bool mean;
  bool max;                        /* ReduceMax (mean is then ignored) */
} eg_reduce_nhwc_params;

size_t eg_reduce_nhwc_f32_scratch(const eg_reduce_nhwc_params *p);
void eg_reduce_nhwc_f32(const eg_reduce_nhwc_params *p, const float *x, float *y, void *scratch);

#endif
