/* depthwise_conv2d_nhwc_f32 — QNN DepthWiseConv2d on NHWC activations, fp32.
 *
 *   x [n, h_in, w_in, c_in], filter [k_h, k_w, 1, c_in*mult], bias [c_in*mult] or NULL,
 *   y [n, h_out, w_out, c_in*mult]:
 *   y[n,i,j,co] = bias[co] + sum_{a,b} x[n, i*sh - pad_t + a*dh, j*sw - pad_l + b*dw, co / mult]
 *                                      * f[a, b, 0, co]           (x is 0 outside its bounds)
 * Direct loops (K = k_h*k_w is far too short for a GEMM), vectorised across channels, one
 * output row per parallel task; with mult 1, blocks of 16 channels by 4 output pixels whose
 * sums stay in registers over the taps (each output still bias plus the taps in (a, b)
 * order). Never allocates. */
#ifndef EG_KERNELS_DEPTHWISE_CONV2D_NHWC_F32_H
#define EG_KERNELS_DEPTHWISE_CONV2D_NHWC_F32_H

#include <stdint.h>

typedef struct eg_dwconv2d_nhwc_params {
  int64_t n, h_in, w_in, c_in;
  int64_t h_out, w_out, mult;       /* c_out = c_in * mult */
  int64_t k_h, k_w;
  int64_t stride[2], dilation[2];
  int64_t pad[2];                   /* [top, left] */
} eg_dwconv2d_nhwc_params;

void eg_depthwise_conv2d_nhwc_f32(const eg_dwconv2d_nhwc_params *p, const float *x,
                                  const float *filter, const float *bias, float *y);

#endif
