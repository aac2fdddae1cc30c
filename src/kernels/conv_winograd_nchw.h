/* conv_winograd_nchw — the "down" map of conv_im2col.h's geometry (a convolution, or the
 * stride-1 input gradient phrased as one) by Winograd F(2x2, 3x3), NCHW, fp32.
 *
 *   small[n, co, i, j] = bias[co] + sum over ci, a, b < 3 of
 *                        w[co, ci, a, b] * big[n, ci, i - ph + a, j - pw + b]
 * (groups 1, 3x3, stride 1, dilation 1, big read as 0 outside its bounds, any pads). Every 2x2
 * output tile comes from a 4x4 patch of big: with U = G g G^T per (co, ci) and V = B^T d B per
 * (ci, tile), the products of the 16 transformed positions xi are 16 sgemms
 *   M_xi [cs, tiles] = U_xi [cs, cb] x V_xi [cb, tiles],
 * and each tile's output is A^T M A — 2.25x fewer multiplies than im2col + GEMM (16 per tile
 * against 36), rounding a few ulps of the sums apart from it. NCHW keeps each transform a loop
 * over contiguous tiles of one plane. Tiles are taken in chunks of whole tile rows (across
 * images, so small planes still give the GEMMs enough columns) sized so V and M stay near
 * cache. The filter is transformed on every call unless the caller hands in the transform it
 * made once (eg_conv_wino_filter: a weight whose bytes do not change between calls), which is
 * why eg_conv_wino_applies asks for enough tiles to share it.
 *
 * Scratch (floats, eg_conv_wino_scratch_floats): [U: 16*cs*cb][V: 16*cb*T][M: 16*cs*T] for a
 * chunk of T tiles. Loops use OpenMP when eg_conv_omp_worth says so; a call with enough work
 * runs in one region, each thread computing whole sgemms of the 16 (conv_im2col.h,
 * Threading). */
#ifndef EG_KERNELS_CONV_WINOGRAD_NCHW_H
#define EG_KERNELS_CONV_WINOGRAD_NCHW_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/conv_im2col.h"

/* Whether the "down" map of g runs by Winograd: groups 1, 3x3, stride 1, dilation 1, both
 * channel counts at least EG_CONV_WINO_MIN_C and enough output tiles per filter transform. */
bool eg_conv_wino_applies(const eg_conv_geom *g);

int64_t eg_conv_wino_scratch_floats(const eg_conv_geom *g);

/* Floats of the filter transform U [16][cs][cb], and U of weight w [cs, cb, 3, 3] into u. */
int64_t eg_conv_wino_filter_floats(const eg_conv_geom *g);
void eg_conv_wino_filter(const eg_conv_geom *g, const float *w, float *u);

/* small = down(big) with weight w [cs, cb, 3, 3] (+ bias, may be NULL); small is fully
 * overwritten. u: w's filter transform (eg_conv_wino_filter; w is then not read), or NULL to
 * transform w into scratch. Only where eg_conv_wino_applies(g). */
void eg_conv_wino_down(const eg_conv_geom *g, const float *big, const float *w, const float *u,
                       const float *bias, float *small, float *scratch);

#endif
