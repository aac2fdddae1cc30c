/* conv_rowband_nchw — the "down" map of conv_im2col.h's geometry with stride 1 along rows, by
 * one column matrix per kernel ROW instead of per tap, NCHW, fp32.
 *
 * For rows r of big read with their padding (r = i + a*dh over output row i and kernel row a,
 * big row r - ph), the matrix R [(ci, b), m*hr*ws] holds big[k, ci, r - ph, j*sw - pw + b*dw]
 * at column k*hr*ws + r*ws + j (0 outside big), hr = hs + (kh-1)*dh rows per image. Kernel row
 * a's column matrix is R shifted a*dh*ws columns to the right, so
 *   small_k[co, i*ws + j] = sum over a of W_a [co, (ci, b)] x R [(ci, b), k*hr*ws + (a*dh + i)*ws + j]
 * is kh sgemms with K = cbg*kw accumulated into one output (beta 1): im2col writes kh times
 * fewer bytes (3x3 convolutions of 16 channels of 32x32, 8 images: the column matrices cost as
 * much as their GEMMs). The columns between images' output rows are computed and dropped. The
 * sums run kernel row by kernel row, so results round a few ulps apart from im2col + GEMM.
 *
 * Scratch (floats, eg_conv_rowband_scratch_floats): [W_a: kh*cs*cbg*kw][R][output of a batch
 * of several images]. Threads as conv_im2col.h says (Threading): one region per call with
 * enough work, each thread its share of every sgemm. */
#ifndef EG_KERNELS_CONV_ROWBAND_NCHW_H
#define EG_KERNELS_CONV_ROWBAND_NCHW_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/conv_im2col.h"

/* Whether the "down" map of g runs by row bands: stride 1 along rows, kernel taller than one
 * row, output planes of at least EG_CONV_ROWBAND_MIN_PIXELS pixels and rows enough that the
 * (kh-1)*dh halo rows per image stay a small share of the GEMMs' columns. */
bool eg_conv_rowband_applies(const eg_conv_geom *g);

/* Whether the "down" map (forward, or an input gradient through the flip) takes row bands:
 * where Winograd does not apply, eg_conv_rowband_applies; where it does, only thin channel
 * counts on planes large enough (conv_rowband_nchw.c's measurements). */
bool eg_conv_rowband_down_applies(const eg_conv_geom *g);

int64_t eg_conv_rowband_scratch_floats(const eg_conv_geom *g);

/* small = down(big) + bias (bias may be NULL) for every image; w [cs, cb/groups, kh, kw]. */
void eg_conv_rowband_down(const eg_conv_geom *g, const float *big, const float *w,
                          const float *bias, float *small, float *scratch);

/* The same rows for the weight gradient: per kernel row a and group, gw_a^T [(ci, b), co] =
 * R shifted a*dh*ws columns x small^T, small packed like R's columns with zeros between images;
 * overwrites gw [cs, cb/groups, kh, kw]. Each gw element sums the same products as im2col + GEMM,
 * plus exact zeros, but sgemm may block them otherwise. */
int64_t eg_conv_rowband_wgrad_scratch_floats(const eg_conv_geom *g);
void eg_conv_rowband_wgrad(const eg_conv_geom *g, const float *big, const float *small,
                           float *gw, float *scratch);

#endif
