/* avg_pool2d_nchw_f32 — portable CPU kernels for aten.avg_pool2d and aten.avg_pool2d_backward,
 * NCHW fp32.
 *
 * Layout: x / gx are `planes` (N*C, or C unbatched) dense planes of h_in x w_in; y / gy planes
 * of h_out x w_out. Window (oh, ow) covers rows [oh*stride_h - pad_h, + k_h) and columns
 * likewise. Its divisor is ATen's (aten/src/ATen/native/cpu/AvgPoolKernel.cpp):
 *   - divisor_override when non-zero;
 *   - else with count_include_pad: the window clipped to the PADDED input
 *     [-pad, h_in + pad) — so a ceil_mode window hanging past the right/bottom padding counts
 *     only up to the padding's edge;
 *   - else: the number of window elements inside the input.
 * Sums run over the elements inside the input only. Output sizes are the caller's (ATen's rule
 * with ceil_mode lives in the op check); every window must hold at least one input element,
 * which ATen's rules (padding <= kernel/2, last window starting inside input or left padding)
 * guarantee. Cost: planes * h_out * w_out * k_h * k_w; planes run in parallel (OpenMP).
 * Kernels know nothing about graphs and never allocate. */
#ifndef EG_KERNELS_AVG_POOL2D_NCHW_F32_H
#define EG_KERNELS_AVG_POOL2D_NCHW_F32_H

#include <stdbool.h>
#include <stdint.h>

typedef struct eg_avg_pool2d_params {
  int64_t planes;                 /* N*C (or C for an unbatched input) */
  int64_t h_in, w_in;             /* x plane */
  int64_t h_out, w_out;           /* y plane */
  int64_t kernel[2], stride[2], padding[2]; /* [h, w] */
  bool count_include_pad;
  int64_t divisor_override;       /* 0: none */
} eg_avg_pool2d_params;

/* y[p, oh, ow] = sum of the window's input elements / divisor. */
void eg_avg_pool2d_nchw_f32(const eg_avg_pool2d_params *p, const float *x, float *y);

/* gx = 0; every input element of window (oh, ow) gets += gy[p, oh, ow] / divisor. gx is fully
 * overwritten. */
void eg_avg_pool2d_backward_nchw_f32(const eg_avg_pool2d_params *p, const float *gy, float *gx);

#endif
