/* adaptive_pool2d_nchw_f32 — portable CPU kernels for aten._adaptive_avg_pool2d,
 * aten._adaptive_avg_pool2d_backward and aten.adaptive_max_pool2d, NCHW fp32. (The backward of
 * adaptive_max_pool2d is the index scatter eg_max_pool2d_backward_nchw_f32.)
 *
 * Layout: x / gx are `planes` (N*C, or C unbatched) dense planes of h_in x w_in; y / gy / idx
 * planes of h_out x w_out. Output row i pools input rows [floor(i*h_in/h_out),
 * ceil((i+1)*h_in/h_out)), columns likewise (ATen's start_index/end_index, computed in integers
 * without overflow): windows tile the input when h_out divides h_in and overlap otherwise.
 * h_in, w_in >= 1; h_out, w_out >= 0. Average: float sum / rows / columns, as ATen divides.
 * Max: ties to the first element in row-major order, a NaN always wins (the last NaN), idx is
 * the flat offset h*w_in + w in the plane. Cost linear in planes * (h_in + h_out) * (w_in +
 * w_out); planes run in parallel (OpenMP). Kernels know nothing about graphs and never
 * allocate. */
#ifndef EG_KERNELS_ADAPTIVE_POOL2D_NCHW_F32_H
#define EG_KERNELS_ADAPTIVE_POOL2D_NCHW_F32_H

#include <stdint.h>

typedef struct eg_adaptive_pool2d_params {
  int64_t planes;                 /* N*C (or C for an unbatched input) */
  int64_t h_in, w_in;             /* x plane, each >= 1 */
  int64_t h_out, w_out;           /* y plane, each >= 0 */
} eg_adaptive_pool2d_params;

/* y[p, i, j] = mean of window (i, j). */
void eg_adaptive_avg_pool2d_nchw_f32(const eg_adaptive_pool2d_params *p, const float *x,
                                     float *y);

/* gx = 0; every element of window (i, j) gets += gy[p, i, j] / rows / columns. gx is fully
 * overwritten. */
void eg_adaptive_avg_pool2d_backward_nchw_f32(const eg_adaptive_pool2d_params *p,
                                              const float *gy, float *gx);

/* y[p, i, j] = max of window (i, j); idx[p, i, j] its flat offset in plane p of x. */
void eg_adaptive_max_pool2d_nchw_f32(const eg_adaptive_pool2d_params *p, const float *x,
                                     float *y, int64_t *idx);

#endif
