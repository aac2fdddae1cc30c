/* winograd_nhwc_f32 — a 3x3, stride-1, dilation-1, one-group convolution of NHWC activations
 * by Winograd F(2x2, 3x3), fp32: QNN Conv2d's (filter HWIO as it is) and the stride-1
 * TransposeConv2d's (the filter rotated by 180 degrees: transpose_conv2d_nhwc_f32.h, WINOGRAD).
 *
 *   x [n, h_in, w_in, c_in], filter [3, 3, c_in, c_out], y [n, h_out, w_out, c_out]:
 *   y[n, i, j, co] = bias[co] + sum_{a, b, ci} x[n, i - pad_t + a, j - pad_l + b, ci] * g[a, b, ci, co]
 *   with g = filter, or filter[2 - a, 2 - b] when `rotated`, x read as 0 outside its bounds.
 *
 * Lavin's F(2x2, 3x3): output tile (ti, tj) covers y rows 2ti.., cols 2tj.. and reads the 4x4
 * patch d at x rows 2ti - pad_t.., cols 2tj - pad_l... With
 *   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
 *   A^T = [1 1 1 0; 0 1 -1 -1]:  Y = A^T [ (G g G^T) .* (B^T d B) ] A,
 * and the elementwise product summed over input channels is, for each of the 16 positions xi,
 * one sgemm M_xi [tiles, c_out] = V_xi [tiles, c_in] x U_xi [c_in, c_out]: 2.25x fewer
 * multiplies than im2col + GEMM, rounding a few ulps of the sums apart from it. NHWC keeps every
 * transform a loop over contiguous channels. Tiles are taken in chunks (all images' tiles in
 * one sequence) so V and M stay near cache. Packed filter U: [16][c_in][c_out]; when the filter
 * is constant the caller packs it once (_pack, params.prepacked), else every call transforms it
 * into scratch.
 *
 * Kernels know nothing about graphs and never allocate: ask for the scratch size once (same
 * params) and pass a 64-byte aligned buffer at least that large. */
#ifndef EG_KERNELS_WINOGRAD_NHWC_F32_H
#define EG_KERNELS_WINOGRAD_NHWC_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eg_winograd_nhwc_params {
  int64_t n, h_in, w_in, c_in;      /* x */
  int64_t h_out, w_out, c_out;      /* y */
  int64_t pad[2];                   /* zeros before the input [top, left]; any sign */
  bool rotated;                     /* read the filter rotated by 180 degrees */
  bool filter_oi;                   /* the filter's taps are [c_out, c_in] blocks (HWOI), not
                                       [c_in, c_out] (HWIO): the same values are transformed */
  bool prepacked;                   /* the filter passed is _pack's output for these params */
  int64_t chunk_bytes;              /* target bytes of one chunk's transformed tiles and
                                       products; 0: 4 MiB. Same value for _scratch and call */
} eg_winograd_nhwc_params;

/* Floats of the packed filter (16*c_in*c_out). */
size_t eg_winograd_nhwc_f32_packed_floats(const eg_winograd_nhwc_params *p);
/* packed <- the filter transformed (_packed_floats floats, 64-byte aligned). */
void eg_winograd_nhwc_f32_pack(const eg_winograd_nhwc_params *p, const float *filter,
                               float *packed);
/* Floats of scratch (the packed filter too unless prepacked). */
size_t eg_winograd_nhwc_f32_scratch_floats(const eg_winograd_nhwc_params *p);
/* y = conv(x, filter) + bias (bias may be NULL); y is fully overwritten. */
void eg_winograd_nhwc_f32(const eg_winograd_nhwc_params *p, const float *x, const float *filter,
                          const float *bias, float *y, float *scratch);

#endif
