/* avg_pool2d_nchw_f32.c — average pooling and its gradient. Contracts in avg_pool2d_nchw_f32.h.
 * Forward and backward share one window rule (avg_window) so their divisors cannot drift apart;
 * the arithmetic (float sum, then one division by the integer divisor as float) is ATen's. */
#include "kernels/avg_pool2d_nchw_f32.h"

#include <string.h>

#include "kernels/pool_window_f32.h"
#include "util/simd.h"

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

typedef struct avg_window {
  int64_t h0, h1, w0, w1; /* the input elements: rows [h0, h1), columns [w0, w1) */
  float divisor;
} avg_window;

static avg_window window_at(const eg_avg_pool2d_params *p, int64_t oh, int64_t ow) {
  avg_window r;
  int64_t h0 = oh * p->stride[0] - p->padding[0], w0 = ow * p->stride[1] - p->padding[1];
  /* clipped to the padded input first: that is the count_include_pad divisor */
  int64_t h1 = min64(h0 + p->kernel[0], p->h_in + p->padding[0]);
  int64_t w1 = min64(w0 + p->kernel[1], p->w_in + p->padding[1]);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  r.h0 = max64(h0, 0);
  r.w0 = max64(w0, 0);
  r.h1 = min64(h1, p->h_in);
  r.w1 = min64(w1, p->w_in);
  int64_t d;
  if (p->divisor_override != 0)
    d = p->divisor_override;
  else if (p->count_include_pad)
    d = padded;
  else
    d = (r.h1 - r.h0) * (r.w1 - r.w0);
  r.divisor = (float)d;
  return r;
}

EG_SIMD_CLONES
void eg_avg_pool2d_nchw_f32(const eg_avg_pool2d_params *p, const float *x, float *y) {
  const int64_t hi = p->h_in, wi = p->w_in, ho = p->h_out, wo = p->w_out;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    const float *xp = x + c * hi * wi;
    float *yp = y + c * ho * wo;
    for (int64_t oh = 0; oh < ho; oh++)
      for (int64_t ow = 0; ow < wo; ow++) {
        const avg_window r = window_at(p, oh, ow);
        if (r.h0 >= r.h1 || r.w0 >= r.w1) { /* unreachable under ATen's size rules */
          yp[oh * wo + ow] = 0.0f;
          continue;
        }
        yp[oh * wo + ow] = eg_pool_window_sum(xp, wi, r.h0, r.h1, r.w0, r.w1) / r.divisor;
      }
  }
}

EG_SIMD_CLONES
void eg_avg_pool2d_backward_nchw_f32(const eg_avg_pool2d_params *p, const float *gy, float *gx) {
  const int64_t hi = p->h_in, wi = p->w_in, ho = p->h_out, wo = p->w_out;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    float *gp = gx + c * hi * wi;
    const float *gyp = gy + c * ho * wo;
    memset(gp, 0, (size_t)(hi * wi) * sizeof *gp);
    for (int64_t oh = 0; oh < ho; oh++)
      for (int64_t ow = 0; ow < wo; ow++) {
        const avg_window r = window_at(p, oh, ow);
        eg_pool_window_add(gp, wi, r.h0, r.h1, r.w0, r.w1, gyp[oh * wo + ow] / r.divisor);
      }
  }
}
