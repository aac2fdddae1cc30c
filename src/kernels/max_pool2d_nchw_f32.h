/* max_pool2d_nchw_f32 — portable CPU kernels for aten.max_pool2d_with_indices, and the index
 * scatter every max-pool backward shares (aten.max_pool2d_with_indices_backward,
 * aten.adaptive_max_pool2d_backward). NCHW fp32, int64 indices.
 *
 * Layout: x is `planes` (N*C, or C unbatched) dense planes of h_in x w_in; y and idx are planes
 * of h_out x w_out. Window (oh, ow) reads rows oh*stride_h - pad_h + i*dil_h for i in [0, k_h)
 * and columns likewise, keeping only those inside the input: padding never wins.
 *
 * Semantics are ATen's (aten/src/ATen/native/cpu/MaxPoolKernel.cpp):
 *   - y is the window's maximum; idx is its flat offset h*w_in + w within the plane.
 *   - ties go to the first element in row-major order (a later element must be strictly
 *     greater); a NaN always wins, so with several NaNs the last one is taken.
 *   - a window with no element inside the input (possible only with dilation) gives -inf and
 *     ATen's index of its first row/column stepped past the padding, which lies outside the
 *     plane; the backward scatter reports such an index rather than writing out of bounds.
 * Output sizes are the caller's (ATen's rule with ceil_mode lives in the op check); the kernel
 * trusts them. Cost: planes * h_out * w_out * k_h * k_w; planes run in parallel (OpenMP).
 * Kernels know nothing about graphs and never allocate. */
#ifndef EG_KERNELS_MAX_POOL2D_NCHW_F32_H
#define EG_KERNELS_MAX_POOL2D_NCHW_F32_H

#include <stdbool.h>
#include <stdint.h>

typedef struct eg_max_pool2d_params {
  int64_t planes;                 /* N*C (or C for an unbatched input) */
  int64_t h_in, w_in;             /* x plane */
  int64_t h_out, w_out;           /* y / idx plane */
  int64_t kernel[2], stride[2], padding[2], dilation[2]; /* [h, w]; all >= 1 but padding >= 0 */
} eg_max_pool2d_params;

/* y[p, oh, ow] = max over the window; idx[p, oh, ow] = its flat offset in plane p of x. */
void eg_max_pool2d_nchw_f32(const eg_max_pool2d_params *p, const float *x, float *y,
                            int64_t *idx);

/* The gradient of any max pool with indices:
 *   gx = 0;  gx[p, idx[p, o]] += gy[p, o]   for every plane p and output position o,
 * so inputs that were nobody's maximum get exactly 0 and overlapping windows accumulate.
 * gx has `planes` planes of in_plane elements, gy and idx `planes` planes of out_plane. An
 * index of -1 is skipped (as ATen does). Any other index outside [0, in_plane) is skipped too and
 * makes the call return false with that index in *bad (indices are data: they may come from the
 * caller); true when all were in range. */
bool eg_max_pool2d_backward_nchw_f32(int64_t planes, int64_t in_plane, int64_t out_plane,
                                     const float *gy, const int64_t *idx, float *gx,
                                     int64_t *bad);

#endif
