/* transpose_f32 — QNN Transpose: y = x with its dimensions permuted, fp32 (any layout).
 *
 *   x has `rank` dims `dims` (C order); y has dims[perm[0]], ..., dims[perm[rank-1]] and
 *   y[i_0, ..., i_{r-1}] = x[j] with j[perm[k]] = i_k.
 *
 * Size-1 dimensions are dropped and runs of dimensions that stay adjacent are merged first, so
 * e.g. the dgrad weight transpose HWIO -> HWOI (perm [0,1,3,2]) becomes kH*kW independent
 * [Cin, Cout] -> [Cout, Cin] matrix transposes, done in cache-sized tiles. A permutation that
 * keeps the innermost dimension copies contiguous rows. Never allocates; no scratch. */
#ifndef EG_KERNELS_TRANSPOSE_F32_H
#define EG_KERNELS_TRANSPOSE_F32_H

#include <stdint.h>

#define EG_TRANSPOSE_MAX_RANK 8

/* rank in [0, EG_TRANSPOSE_MAX_RANK]; perm a permutation of 0..rank-1 (checked by the caller). */
void eg_transpose_f32(int rank, const int64_t *dims, const uint32_t *perm, const float *x,
                      float *y);

/* One 2-D transpose between strided matrices: y[u*ys + v] = x[u + v*xs] for u < nu, v < nv, in
 * the same cache-sized tiles, on the calling thread (for callers that share the work out over
 * threads themselves). */
void eg_transpose_2d_f32(const float *x, int64_t xs, float *y, int64_t ys, int64_t nu,
                         int64_t nv);

#endif
