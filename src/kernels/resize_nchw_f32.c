/* resize_nchw_f32.c — bilinear and nearest upsampling and their gradients. Contracts in
 * resize_nchw_f32.h; the coordinate rules follow ATen's area_pixel_compute_scale,
 * area_pixel_compute_source_index, guard_index_and_lambda and nearest_idx
 * (aten/src/ATen/native/UpSample.h), the loops its cpu_upsample_linear(_backward) and
 * cpu_upsample_nearest(_backward) (aten/src/ATen/native/cpu/UpSampleKernel.cpp). */
#include "kernels/resize_nchw_f32.h"

#include <math.h>
#include <string.h>

/* One output row (or column) of a bilinear resize: its two source rows and their weights. */
typedef struct lerp_tap {
  int64_t i0, i1;
  float l0, l1;
} lerp_tap;

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

size_t eg_resize_scratch_bytes(const eg_resize_params *p, bool bilinear) {
  const size_t each = bilinear ? sizeof(lerp_tap) : sizeof(int64_t);
  return round64((size_t)p->h_out * each) + round64((size_t)p->w_out * each);
}

/* ATen's ratio (area_pixel_compute_scale) in float: align_corners (in-1)/(out-1) (0 for
 * out == 1), else 1/scale when a scale was given, else in/out. */
static float resize_ratio(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
  return scale > 0.0 ? (float)(1.0 / scale) : (float)in / (float)out;
}

/* min(floor(src), in - 1) for src >= 0 (or NaN), without converting an out-of-range float. */
static int64_t floor_clamped(float src, int64_t in) {
  if (!(src < (float)(in - 1))) return in - 1;
  return (int64_t)floorf(src);
}

/* The tap of output position d of one dim (ATen's compute_source_index_and_lambda with
 * PyTorch 2's guard); ratio from resize_ratio. */
static lerp_tap lerp_tap_at(int64_t in, int64_t out, bool align_corners, float ratio,
                            int64_t d) {
  lerp_tap t = {d, d, 1.0f, 0.0f};
  if (out == in) return t; /* a copy, whatever the ratio */
  float src = align_corners ? ratio * (float)d : ratio * ((float)d + 0.5f) - 0.5f;
  if (!align_corners && src < 0.0f) src = 0.0f;
  t.i0 = floor_clamped(src, in);
  t.i1 = t.i0 < in - 1 ? t.i0 + 1 : t.i0;
  float l1 = src - (float)t.i0;
  l1 = l1 < 0.0f ? 0.0f : l1 > 1.0f ? 1.0f : l1;
  t.l1 = l1;
  t.l0 = 1.0f - l1;
  return t;
}

/* The taps of one dim. */
static void lerp_taps(int64_t in, int64_t out, bool align_corners, double scale,
                      lerp_tap *taps) {
  const float ratio = resize_ratio(in, out, align_corners, scale);
  for (int64_t d = 0; d < out; d++) taps[d] = lerp_tap_at(in, out, align_corners, ratio, d);
}

/* The source index of output position d of one dim (ATen's nearest_idx). */
static int64_t nearest_at(int64_t in, int64_t out, float ratio, int64_t d) {
  return out == in ? d : out == 2 * in ? d >> 1 : floor_clamped((float)d * ratio, in);
}

/* The source index of every output position of one dim. */
static void nearest_taps(int64_t in, int64_t out, double scale, int64_t *src) {
  const float ratio = resize_ratio(in, out, false, scale);
  for (int64_t d = 0; d < out; d++) src[d] = nearest_at(in, out, ratio, d);
}

void eg_resize_dim_matrix_f32(int64_t in, int64_t out, bool bilinear, bool align_corners,
                              double scale, bool transposed, float *m) {
  const float ratio = resize_ratio(in, out, bilinear && align_corners, scale);
  memset(m, 0, (size_t)(in * out) * sizeof *m);
  for (int64_t d = 0; d < out; d++) {
    /* element (d, i) of the [out, in] map, at [i, d] of its transpose */
    const int64_t row = transposed ? 1 : in, col = transposed ? out : 1;
    if (!bilinear) {
      m[d * row + nearest_at(in, out, ratio, d) * col] = 1.0f;
      continue;
    }
    const lerp_tap t = lerp_tap_at(in, out, align_corners, ratio, d);
    m[d * row + t.i0 * col] += t.l0;
    m[d * row + t.i1 * col] += t.l1;
  }
}

/* The row and column tap tables of `p` in scratch (layout of eg_resize_scratch_bytes). */
static void *col_table(const eg_resize_params *p, void *scratch, size_t each) {
  return (unsigned char *)scratch + round64((size_t)p->h_out * each);
}

void eg_upsample_bilinear2d_nchw_f32(const eg_resize_params *p, const float *x, float *y,
                                     void *scratch) {
  lerp_tap *rows = scratch, *cols = col_table(p, scratch, sizeof *rows);
  lerp_taps(p->h_in, p->h_out, p->align_corners, p->scale_h, rows);
  lerp_taps(p->w_in, p->w_out, p->align_corners, p->scale_w, cols);
  const int64_t wi = p->w_in, ho = p->h_out, wo = p->w_out;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    const float *xp = x + c * p->h_in * wi;
    float *yp = y + c * ho * wo;
    for (int64_t oh = 0; oh < ho; oh++) {
      const lerp_tap *r = &rows[oh];
      const float *x0 = xp + r->i0 * wi, *x1 = xp + r->i1 * wi;
      for (int64_t ow = 0; ow < wo; ow++) {
        const lerp_tap *k = &cols[ow];
        /* ATen's order: each source row blended across columns, then the rows */
        const float t0 = x0[k->i0] * k->l0 + x0[k->i1] * k->l1;
        const float t1 = x1[k->i0] * k->l0 + x1[k->i1] * k->l1;
        yp[oh * wo + ow] = t0 * r->l0 + t1 * r->l1;
      }
    }
  }
}

void eg_upsample_bilinear2d_backward_nchw_f32(const eg_resize_params *p, const float *gy,
                                              float *gx, void *scratch) {
  lerp_tap *rows = scratch, *cols = col_table(p, scratch, sizeof *rows);
  lerp_taps(p->h_in, p->h_out, p->align_corners, p->scale_h, rows);
  lerp_taps(p->w_in, p->w_out, p->align_corners, p->scale_w, cols);
  const int64_t wi = p->w_in, ho = p->h_out, wo = p->w_out;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    float *gp = gx + c * p->h_in * wi;
    const float *gyp = gy + c * ho * wo;
    memset(gp, 0, (size_t)(p->h_in * wi) * sizeof *gp);
    for (int64_t oh = 0; oh < ho; oh++) {
      const lerp_tap *r = &rows[oh];
      float *g0 = gp + r->i0 * wi, *g1 = gp + r->i1 * wi;
      for (int64_t ow = 0; ow < wo; ow++) {
        const lerp_tap *k = &cols[ow];
        const float g = gyp[oh * wo + ow];
        g0[k->i0] += r->l0 * k->l0 * g;
        g0[k->i1] += r->l0 * k->l1 * g;
        g1[k->i0] += r->l1 * k->l0 * g;
        g1[k->i1] += r->l1 * k->l1 * g;
      }
    }
  }
}

void eg_upsample_nearest2d_nchw_f32(const eg_resize_params *p, const float *x, float *y,
                                    void *scratch) {
  int64_t *rows = scratch, *cols = col_table(p, scratch, sizeof *rows);
  nearest_taps(p->h_in, p->h_out, p->scale_h, rows);
  nearest_taps(p->w_in, p->w_out, p->scale_w, cols);
  const int64_t wi = p->w_in, ho = p->h_out, wo = p->w_out;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    const float *xp = x + c * p->h_in * wi;
    float *yp = y + c * ho * wo;
    for (int64_t oh = 0; oh < ho; oh++) {
      const float *xr = xp + rows[oh] * wi;
      for (int64_t ow = 0; ow < wo; ow++) yp[oh * wo + ow] = xr[cols[ow]];
    }
  }
}

void eg_upsample_nearest2d_backward_nchw_f32(const eg_resize_params *p, const float *gy,
                                             float *gx, void *scratch) {
  int64_t *rows = scratch, *cols = col_table(p, scratch, sizeof *rows);
  nearest_taps(p->h_in, p->h_out, p->scale_h, rows);
  nearest_taps(p->w_in, p->w_out, p->scale_w, cols);
  const int64_t wi = p->w_in, ho = p->h_out, wo = p->w_out;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < p->planes; c++) {
    float *gp = gx + c * p->h_in * wi;
    const float *gyp = gy + c * ho * wo;
    memset(gp, 0, (size_t)(p->h_in * wi) * sizeof *gp);
    for (int64_t oh = 0; oh < ho; oh++) {
      float *gr = gp + rows[oh] * wi;
      for (int64_t ow = 0; ow < wo; ow++) gr[cols[ow]] += gyp[oh * wo + ow];
    }
  }
}
