/* pool2d_nhwc_f32 — QNN PoolMax2d and PoolAvg2d on NHWC activations, fp32.
 *
 *   x [n, h_in, w_in, c], y [n, h_out, w_out, c]; window (i, j) covers input rows
 *   [i*sh - pad_top, i*sh - pad_top + k_h) and likewise columns (clipped to the input).
 *   Max: the largest in-bounds element (NaN wins, like PyTorch); padding never wins.
 *   Avg: the in-bounds sum divided by the in-bounds count, or — with count_pad — by the count of
 *   window positions inside the padded extent [-pad_top, h_in + pad_bottom) x (same for w).
 * The caller guarantees every window holds at least one input element (qnn_graph.c checks it).
 * Vectorised across channels; never allocates. */
#ifndef EG_KERNELS_POOL2D_NHWC_F32_H
#define EG_KERNELS_POOL2D_NHWC_F32_H

#include <stdbool.h>
#include <stdint.h>

typedef struct eg_pool2d_nhwc_params {
  int64_t n, h_in, w_in, c;
  int64_t h_out, w_out;
  int64_t k[2], stride[2];
  int64_t pad[2][2];              /* [[top, bottom], [left, right]] */
  bool count_pad;                 /* avg only: QNN count_pad_for_edges */
} eg_pool2d_nhwc_params;

void eg_max_pool2d_nhwc_f32(const eg_pool2d_nhwc_params *p, const float *x, float *y);
void eg_avg_pool2d_nhwc_f32(const eg_pool2d_nhwc_params *p, const float *x, float *y);

#endif
