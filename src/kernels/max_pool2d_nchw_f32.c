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

/* Small planes, dilation 1: the plane is copied into a buffer padded with -inf (a padded
 * element never wins: -inf > m is false and it is no NaN), its columns split by their phase
 * modulo the column stride, so every window is whole and each tap of an output row reads one
 * contiguous run: kh*kw vectorised passes over the row's columns. The winner is kept as a
 * 32-bit tap number and turned into the flat offset once (carrying int64 offsets through every
 * select, strided loads and the clipped edge windows one by one made ResNet-18's 3x3/2 stem
 * pool over 8x64x32x32 take 0.8 ms). A window whose in-bounds elements are all -inf reports its
 * first in-bounds element, as the general path does. The passes run over the row's columns
 * rounded up to EG_POOL_LANES (their extra lanes read the -inf tail of the buffer or the next
 * padded row and are dropped), so narrow rows (SqueezeNet's 15, 7 and 3 columns at 64x64) run
 * as whole vectors instead of mostly as the scalar remainder. */
enum { EG_POOL_PADDED_MAX = 4096, EG_POOL_COLS_MAX = 256, EG_POOL_TAPS_MAX = 64,
       EG_POOL_LANES = 8 };

/* Padded rows and columns the windows reach, and the columns per phase. */
static void padded_dims(const eg_max_pool2d_params *p, int64_t *hp, int64_t *wp, int64_t *wq) {
  *hp = (p->h_out - 1) * p->stride[0] + p->kernel[0];
  *wp = (p->w_out - 1) * p->stride[1] + p->kernel[1];
  *wq = (*wp + p->stride[1] - 1) / p->stride[1];
}

static bool padded_fits(const eg_max_pool2d_params *p) {
  int64_t hp, wp, wq;
  padded_dims(p, &hp, &wp, &wq);
  return p->dilation[0] == 1 && p->dilation[1] == 1 && hp * wq * p->stride[1] <= EG_POOL_PADDED_MAX &&
         p->w_out <= EG_POOL_COLS_MAX && p->kernel[0] * p->kernel[1] <= EG_POOL_TAPS_MAX;
}

static inline __attribute__((always_inline)) void
plane_padded(const eg_max_pool2d_params *p, const float *xp, float *yp, int64_t *ip) {
  const int64_t hi = p->h_in, wi = p->w_in, ho = p->h_out, wo = p->w_out;
  const int64_t kh = p->kernel[0], kw = p->kernel[1], sh = p->stride[0], sw = p->stride[1];
  const int64_t ph = p->padding[0], pw = p->padding[1];
  int64_t hp, wp, wq;
  padded_dims(p, &hp, &wp, &wq);
  /* pad[(q*hp + r)*wq + j]: padded row r (input row r - ph), padded column j*sw + q (input
   * column j*sw + q - pw) */
  const int64_t wr = (wo + EG_POOL_LANES - 1) / EG_POOL_LANES * EG_POOL_LANES;
  float pad[EG_POOL_PADDED_MAX + EG_POOL_LANES], best[EG_POOL_COLS_MAX];
  int32_t won[EG_POOL_COLS_MAX];
  int64_t off[EG_POOL_TAPS_MAX]; /* tap t's flat offset from its window's first element */
  for (int64_t t = 0; t < kh * kw; t++) off[t] = t / kw * wi + t % kw;
#pragma omp simd
  for (int64_t e = 0; e < sw * hp * wq + EG_POOL_LANES; e++) pad[e] = -INFINITY;
  for (int64_t r = 0; r < hp; r++) {
    const int64_t yy = r - ph;
    if (yy < 0 || yy >= hi) continue;
    const float *src = xp + yy * wi;
    for (int64_t q = 0; q < sw; q++) { /* columns j*sw + q with 0 <= j*sw + q - pw < wi */
      float *restrict dst = pad + (q * hp + r) * wq;
      const int64_t lo = pw - q > 0 ? (pw - q + sw - 1) / sw : 0;
      int64_t up = (wi + pw - q + sw - 1) / sw;
      if (up > wq) up = wq;
#pragma omp simd
      for (int64_t j = lo; j < up; j++) dst[j] = src[j * sw + q - pw];
    }
  }
  for (int64_t oh = 0; oh < ho; oh++) {
    for (int64_t o = 0; o < wr; o++) {
      best[o] = -INFINITY;
      won[o] = -1;
    }
    int32_t t = 0;
    for (int64_t a = 0; a < kh; a++)
      for (int64_t b = 0; b < kw; b++, t++) { /* column o*sw + b: phase b % sw, o + b / sw */
        const float *restrict src = pad + (b % sw * hp + oh * sh + a) * wq + b / sw;
#pragma omp simd
        for (int64_t o = 0; o < wr; o++) {
          const float v = src[o], m = best[o];
          const bool take = (v > m) | isnan(v);
          best[o] = eg_pool_select_f32(take, v, m);
          won[o] = take ? t : won[o];
        }
      }
    const int64_t h0 = oh * sh - ph, hc = h0 > 0 ? h0 : 0;
    for (int64_t o = 0; o < wo; o++) {
      const int64_t w0 = o * sw - pw, wc = w0 > 0 ? w0 : 0, k = won[o];
      yp[oh * wo + o] = best[o];
      ip[oh * wo + o] = k < 0 ? hc * wi + wc : h0 * wi + w0 + off[k];
    }
  }
}

EG_SIMD_CLONES
void eg_max_pool2d_nchw_f32(const eg_max_pool2d_params *p, const float *x, float *y,
                            int64_t *idx) {
  if (padded_fits(p)) {
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < p->planes; c++)
      plane_padded(p, x + c * p->h_in * p->w_in, y + c * p->h_out * p->w_out,
                   idx + c * p->h_out * p->w_out);
    return;
  }
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
