/* tile_nhwc_f32 — QNN Tile: y = x repeated `multiples[d]` times along each dim d (any layout;
 * 4-byte elements, so float32 and int32 alike: the kernel only copies them).
 *
 *   x has `rank` dims `dims` (C order); y has dims[d] * multiples[d] and
 *   y[i_0, ..., i_{r-1}] = x[i_0 % dims[0], ..., i_{r-1} % dims[r-1]].
 *
 * Runs outermost-first over the dims merged where the copies allow (a dim of multiple 1 with the
 * one before it, a dim of 1 after a dim of 1): each x row of the innermost dim is copied, then
 * each finished block of y is repeated in place to its `multiples[d]` copies by doubling (a
 * memcpy of everything written so far, log2 of the multiple of them), so no scratch is needed.
 * Never allocates. */
#ifndef EG_KERNELS_TILE_NHWC_F32_H
#define EG_KERNELS_TILE_NHWC_F32_H

#include <stdint.h>

#define EG_TILE_MAX_RANK 8

/* rank in [1, EG_TILE_MAX_RANK]; every dims[d] and multiples[d] >= 1 (checked by the caller).
 * x and y do not overlap. */
void eg_tile_nhwc_f32(int rank, const int64_t *dims, const int64_t *multiples, const void *x,
                      void *y);

#endif
