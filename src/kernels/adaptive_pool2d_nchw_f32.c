/* adaptive_pool2d_nchw_f32.c — adaptive average / max pooling. Contracts in
 * adaptive_pool2d_nchw_f32.h; loops mirror ATen's cpu_adaptive_avg_pool / cpu_adaptive_max_pool
 * (aten/src/ATen/native/cpu/Adaptive{Avg,Max}PoolKernel.cpp). */
#include "kernels/adaptive_pool2d_nchw_f32.h"

#include <string.h>

#include "kernels/pool_window_f32.h"
#include "util/simd.h"

/* floor(a * in / out) and ceil((a + 1) * in / out), as ATen's start_index / end_index. */
static inline int64_t start_index(int64_t a, int64_t out, int64_t in) {
  return (a / out) * in + ((a % out) * in) / out;
}
static inline int64_t end_index(int64_t a, int64_t out, int64_t in) {
  return 1 + ((a + 1) * in - 1) / out;
}

EG_SIMD_CLONES
void eg_adaptive_avg_pool2d_nchw_f32(const eg_adaptive_pool2d_params *p, const float *x,
                                     float *y) {
  const int64_t hi = p->h_in, wi = p->w_in, ho = p->h_out, wo = p->w_out;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    const float *xp = x + c * hi * wi;
    float *yp = y + c * ho * wo;
    for (int64_t oh = 0; oh < ho; oh++) {
      const int64_t h0 = start_index(oh, ho, hi), h1 = end_index(oh, ho, hi);
      for (int64_t ow = 0; ow < wo; ow++) {
        const int64_t w0 = start_index(ow, wo, wi), w1 = end_index(ow, wo, wi);
        const float sum = eg_pool_window_sum(xp, wi, h0, h1, w0, w1);
        yp[oh * wo + ow] = sum / (float)(h1 - h0) / (float)(w1 - w0);
      }
    }
  }
}

EG_SIMD_CLONES
void eg_adaptive_avg_pool2d_backward_nchw_f32(const eg_adaptive_pool2d_params *p,
                                              const float *gy, float *gx) {
  const int64_t hi = p->h_in, wi = p->w_in, ho = p->h_out, wo = p->w_out;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    float *gp = gx + c * hi * wi;
    const float *gyp = gy + c * ho * wo;
    memset(gp, 0, (size_t)(hi * wi) * sizeof *gp);
    for (int64_t oh = 0; oh < ho; oh++) {
      const int64_t h0 = start_index(oh, ho, hi), h1 = end_index(oh, ho, hi);
      for (int64_t ow = 0; ow < wo; ow++) {
        const int64_t w0 = start_index(ow, wo, wi), w1 = end_index(ow, wo, wi);
        const float g = gyp[oh * wo + ow] / (float)(h1 - h0) / (float)(w1 - w0);
        eg_pool_window_add(gp, wi, h0, h1, w0, w1, g);
      }
    }
  }
}

EG_SIMD_CLONES
void eg_adaptive_max_pool2d_nchw_f32(const eg_adaptive_pool2d_params *p, const float *x,
                                     float *y, int64_t *idx) {
  const int64_t hi = p->h_in, wi = p->w_in, ho = p->h_out, wo = p->w_out;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    const float *xp = x + c * hi * wi;
    float *yp = y + c * ho * wo;
    int64_t *ip = idx + c * ho * wo;
    for (int64_t oh = 0; oh < ho; oh++) {
      const int64_t h0 = start_index(oh, ho, hi), h1 = end_index(oh, ho, hi);
      for (int64_t ow = 0; ow < wo; ow++) {
        const int64_t w0 = start_index(ow, wo, wi), w1 = end_index(ow, wo, wi);
        yp[oh * wo + ow] = eg_pool_window_max(xp, wi, h0, h1, 1, w0, w1, 1, &ip[oh * wo + ow]);
      }
    }
  }
}
