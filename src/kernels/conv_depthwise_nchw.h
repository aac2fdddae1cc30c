/* conv_depthwise_nchw — the depthwise maps of conv_im2col.h's geometry (one big channel per
 * group), NCHW, fp32, by direct loops that compute each output row in registers.
 *
 *   down: small[n, c, i, j] = bias[c] + sum over in-bounds taps (a, b), a-major, of
 *         w[c, 0, a, b] * big[n, c / csg, i*sh - ph + a*dh, j*sw - pw + b*dw]
 *   up:   big[n, q, I, J] = bias[q] + sum over c of q's group, then in-bounds taps (a, b),
 *         a-major, of w[c, 0, a, b] * small[n, c, (I + ph - a*dh)/sh, (J + pw - b*dw)/sw]
 *         where both divide — the transposed map written as a gather, for the input gradient
 *         of a depthwise conv.
 *
 * Every output is its bias plus its taps' products added one at a time in that order, as the
 * tap-by-tap loops of convolution_nchw_f32.c (a pass over the plane per tap, the up map as a
 * scatter) add them, so the results are the same bit for bit; the loops differ: a row's
 * output stays in registers across a kernel row's taps (all kh*kw of them for 3x3 kernels
 * away from the border), the columns every tap reaches are vectorised along W, and the few
 * border columns are added up one by one; planes narrower than 16 columns at stride 1 go
 * through a zero-padded copy, each kernel row's taps one pass over the whole plane (a product
 * with a padding zero leaves every sum as it was unless the bias is -0.0 or a weight is not
 * finite, which keep the row loops). Planes of at most 256 input pixels and 16 output columns
 * (the 16x16 and smaller planes of EfficientNet/MobileNet-style nets at 64x64 inputs) go 16
 * channels at a time instead: the block copied pixel-major, each output row one pass per tap
 * over its in-bounds pixels, vectorised along the 16 channels. So does up, at any stride, with
 * one small channel per group, small planes of at most 256 pixels and big rows of at most 32
 * (EfficientNet's depthwise input gradients at 64x64 inputs, 32x32 outputs of stride 2
 * included): each big row a pass per tap whose small row lands on it, the tap's small pixels
 * scattered to their big columns, so that each big pixel still gets its taps a-major. Kernels
 * up to EG_CONV_DW_KMAX wide and high.
 *
 *   wgrad: gw[c, 0, a, b] = sum over n, i, j of small[n, c, i, j] *
 *         big[n, c / csg, i*sh - ph + a*dh, j*sw - pw + b*dw], per image: the big plane copied
 *         into a zero-padded plane, the small plane laid out at its row pitch (0 between the
 *         rows), and each tap's dot product of the two taken as one contiguous (or stride-sw)
 *         run, in float (vectorised; a 3x3 kernel's nine in one pass) per image and in double
 *         across images — a different order from the tap-by-tap dot products of
 *         convolution_backward_nchw_f32.c (float per row, double across rows).
 *
 * Loops use OpenMP when eg_conv_omp_worth says so. No scratch. */
#ifndef EG_KERNELS_CONV_DEPTHWISE_NCHW_H
#define EG_KERNELS_CONV_DEPTHWISE_NCHW_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/conv_im2col.h"

/* Largest kernel side. */
enum { EG_CONV_DW_KMAX = 16 };

/* Whether these loops run the depthwise map of g (a geometry eg_conv_geom_depthwise accepts):
 * kernels up to EG_CONV_DW_KMAX; for up, stride 1 or the channel blocks' small planes. */
bool eg_conv_dw_applies(const eg_conv_geom *g, bool up);

/* small = down(big) + bias (bias may be NULL). */
void eg_conv_dw_down(const eg_conv_geom *g, const float *big, const float *w, const float *bias,
                     float *small);

/* big = up(small) + bias (bias may be NULL); eg_conv_dw_applies(g, true). */
void eg_conv_dw_up(const eg_conv_geom *g, const float *small, const float *w, const float *bias,
                   float *big);

/* Whether eg_conv_dw_wgrad runs the weight gradient of g: eg_conv_dw_applies(g, false), equal
 * strides, and a padded big plane of at most 2048 floats (on the stack; every MobileNet-style
 * plane at 64x64 inputs, 32x32 included). */
bool eg_conv_dw_wgrad_applies(const eg_conv_geom *g);

/* gw [cs, 1, kh, kw] = the weight gradient of down over every image; overwrites gw. */
void eg_conv_dw_wgrad(const eg_conv_geom *g, const float *big, const float *small, float *gw);

#endif
