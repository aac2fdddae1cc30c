/* strided_copy — the one data-movement kernel behind cat, split, slice, select, their
 * backwards, repeat and the broadcasting of activation backward operands: it copies an N-d box
 * of elements between two buffers, each addressed through its own element strides.
 *
 *   for every index i with 0 <= i[d] < shape[d]:
 *     dst[sum_d i[d] * dst_stride[d]] = src[sum_d i[d] * src_stride[d]]
 *
 * A view is just a choice of strides: slice(step) multiplies one stride by the step, select
 * drops a dim, a broadcast read uses stride 0, repeat views its output as [r0, s0, r1, s1, ...]
 * (hence twice EG_MAX_RANK dims), and cat/split address one block of a larger dense buffer.
 *
 * Contract: strides are >= 0 and in elements; the destination positions are distinct (a 0
 * dst stride only on extent-1 dims) and do not overlap the source. The walk is simplified
 * first (extent-1 dims dropped, dims that both sides step through as one run merged), so a
 * plain dense copy is a single memcpy. The kernel never allocates and knows nothing about
 * graphs; big copies are split across OpenMP threads by rows. */
#ifndef EG_KERNELS_STRIDED_COPY_H
#define EG_KERNELS_STRIDED_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "edgegrad.h"

#define EG_COPY_MAX_RANK (2 * EG_MAX_RANK)

typedef struct eg_strided_copy_params {
  int rank;                              /* 0 .. EG_COPY_MAX_RANK (0: one element) */
  size_t elsize;                         /* bytes per element, > 0 */
  int64_t shape[EG_COPY_MAX_RANK];       /* extents, >= 0 */
  int64_t dst_stride[EG_COPY_MAX_RANK];  /* in elements */
  int64_t src_stride[EG_COPY_MAX_RANK];  /* in elements, 0 to repeat (broadcast) */
} eg_strided_copy_params;

/* C-order element strides of a dense tensor of `shape` (rank `rank`). */
void eg_dense_strides(const int64_t *shape, int rank, int64_t *stride);

/* Copies the box described by `p` from `src` to `dst` (see the contract above). */
void eg_strided_copy(void *dst, const void *src, const eg_strided_copy_params *p);

#endif
