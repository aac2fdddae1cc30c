/* max_pool2d_nchw_f32.c — max pooling with indices and the shared max-pool index scatter.
 * Contracts in max_pool2d_nchw_f32.h. The loops mirror ATen's cpu_max_pool so that results,
 * indices, tie-breaking and NaN propagation match bit for bit. */
#include "kernels/max_pool2d_nchw_f32.h"

#include <math.h>
#include <string.h>

#include "kernels/pool_window_f32.h"
#include "util/simd.h"

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Output columns [*lo, *hi) whose windows lie inside the plane's width: w0 = ow*sw - pw >= 0
 * and w0 + (kw-1)*dw < wi. */
static void inner_columns(int64_t wo, int64_t wi, int64_t kw, int64_t sw, int64_t pw,
                          int64_t dw, int64_t *lo, int64_t *hi) {
  *lo = (pw + sw - 1) / sw;
  const int64_t last = wi - 1 - (kw - 1) * dw + pw; /* largest ow*sw allowed */
  *hi = last < 0 ? 0 : min64(wo, last / sw + 1);
  if (*hi < *lo) *hi = *lo = 0;
}

EG_SIMD_CLONES
void eg_max_pool2d_nchw_f32(const eg_max_pool2d_params *p, const float *x, float *y,
                            int64_t *idx) {
  const int64_t hi = p->h_in, wi = p->w_in, ho = p->h_out, wo = p->w_out;
  const int64_t kh = p->kernel[0], kw = p->kernel[1], sh = p->stride[0], sw = p->stride[1];
  const int64_t ph = p->padding[0], pw = p->padding[1], dh = p->dilation[0], dw = p->dilation[1];
  int64_t lo, up;
  inner_columns(wo, wi, kw, sw, pw, dw, &lo, &up);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    const float *xp = x + c * hi * wi;
    float *yp = y + c * ho * wo;
    int64_t *ip = idx + c * ho * wo;
    for (int64_t oh = 0; oh < ho; oh++) {
      int64_t h0 = oh * sh - ph;
      const int64_t h1 = min64(h0 + (kh - 1) * dh + 1, hi);
      while (h0 < 0) h0 += dh;
      float *restrict yr = yp + oh * wo;
      int64_t *restrict ir = ip + oh * wo;
      for (int64_t ow = 0; ow < wo; ow++) {
        if (ow == lo && up > lo) { /* the columns whose windows need no clipping: yr and ir
                                      hold their running maxima, updated one window element at
                                      a time (the window's order and selects) across them all,
                                      which vectorises */
          for (int64_t o = lo; o < up; o++) {
            yr[o] = -INFINITY;
            ir[o] = h0 * wi + o * sw - pw;
          }
          for (int64_t h = h0; h < h1; h += dh)
            for (int64_t k = 0; k < kw; k++) {
              const int64_t base = h * wi - pw + k * dw;
#pragma omp simd
              for (int64_t o = lo; o < up; o++) {
                const int64_t at = base + o * sw;
                const float v = xp[at], m = yr[o];
                const bool take = (v > m) | isnan(v);
                yr[o] = eg_pool_select_f32(take, v, m);
                ir[o] = eg_pool_select_i64(take, at, ir[o]);
              }
            }
          ow = up - 1;
          continue;
        }
        int64_t w0 = ow * sw - pw;
        const int64_t w1 = min64(w0 + (kw - 1) * dw + 1, wi);
        while (w0 < 0) w0 += dw;
        yr[ow] = eg_pool_window_max(xp, wi, h0, h1, dh, w0, w1, dw, &ir[ow]);
      }
    }
  }
}

EG_SIMD_CLONES
bool eg_max_pool2d_backward_nchw_f32(int64_t planes, int64_t in_plane, int64_t out_plane,
                                     const float *gy, const int64_t *idx, float *gx,
                                     int64_t *bad) {
  bool ok = true;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < planes; c++) {
    float *gp = gx + c * in_plane;
    const float *gyp = gy + c * out_plane;
    const int64_t *ip = idx + c * out_plane;
    /* Every element is written: positions no maximum landed on must read 0, not stale data. */
    memset(gp, 0, (size_t)in_plane * sizeof *gp);
    for (int64_t o = 0; o < out_plane; o++) {
      const int64_t i = ip[o];
      if (i >= 0 && i < in_plane) {
        gp[i] += gyp[o];
      } else if (i != -1) {
#pragma omp critical(eg_max_pool2d_bad_index)
        {
          if (ok) *bad = i;
          ok = false;
        }
      }
    }
  }
  return ok;
}
