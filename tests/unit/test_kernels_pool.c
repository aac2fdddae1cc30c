/* test_kernels_pool.c — the pooling kernels (max_pool2d_nchw_f32, avg_pool2d_nchw_f32,
 * adaptive_pool2d_nchw_f32) against naive references written here straight from the header
 * definitions (windows enumerated element by element, divisors counted, adaptive bounds from
 * floor/ceil in double), and every backward checked as the adjoint of its forward
 * (<fwd(x), g> == <x, bwd(g)>, with the max pools' indices held fixed). Outputs are pre-filled
 * with NaN so anything not written shows up; the max-pool scatter must leave exact zeros where no
 * maximum landed. Also the op checks of src/ops/pool.c on hand-built nodes: ATen's output-size
 * rule (a table taken from PyTorch 1.13), and the rules PyTorch will not let a test trace
 * (padding > kernel/2, zero stride, divisor 0), plus the run-time report of a stray index. */
#include <stdint.h>

#include "eg_test.h"
#include "kernels/adaptive_pool2d_nchw_f32.h"
#include "kernels/avg_pool2d_nchw_f32.h"
#include "kernels/max_pool2d_nchw_f32.h"
#include "ops/op.h"

#define RTOL 1e-5
#define ATOL 1e-6

static float *nan_buf(long n) {
  float *p = malloc((size_t)(n ? n : 1) * sizeof(float));
  for (long i = 0; i < n; i++) p[i] = NAN;
  return p;
}

static int64_t *idx_buf(long n) {
  int64_t *p = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
  for (long i = 0; i < n; i++) p[i] = -7;
  return p;
}

static double dot(const float *a, const float *b, long n) {
  double s = 0;
  for (long i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

static double sum_abs(const float *a, long n) {
  double s = 0;
  for (long i = 0; i < n; i++) s += fabs(a[i]);
  return s;
}

/* ATen's output size, restated independently for the kernel tests' geometry. */
static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode) {
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1; /* span >= 0 here */
  if (ceil_mode && (o - 1) * s >= in + p) o--;
  return o;
}

/* ---- max pool ---- */

/* Window by window: every (i, j) of the kernel, inside the input; NaN wins (later NaN too),
 * otherwise a strictly greater value. */
static void ref_max_pool(const eg_max_pool2d_params *p, const float *x, float *y, int64_t *idx) {
  for (int64_t c = 0; c < p->planes; c++)
    for (int64_t oh = 0; oh < p->h_out; oh++)
      for (int64_t ow = 0; ow < p->w_out; ow++) {
        float m = -INFINITY;
        int64_t at = -1;
        for (int64_t i = 0; i < p->kernel[0]; i++)
          for (int64_t j = 0; j < p->kernel[1]; j++) {
            int64_t h = oh * p->stride[0] - p->padding[0] + i * p->dilation[0];
            int64_t w = ow * p->stride[1] - p->padding[1] + j * p->dilation[1];
            if (h < 0 || h >= p->h_in || w < 0 || w >= p->w_in) continue;
            float v = x[(c * p->h_in + h) * p->w_in + w];
            if (at < 0 || isnan(v) || (!isnan(m) && v > m)) {
              m = v;
              at = h * p->w_in + w;
            }
          }
        y[(c * p->h_out + oh) * p->w_out + ow] = m;
        idx[(c * p->h_out + oh) * p->w_out + ow] = at;
      }
}

/* {h, w, kh, kw, sh, sw, ph, pw, dh, dw, ceil, planes} */
static const int64_t max_cases[][12] = {
    {8, 8, 2, 2, 2, 2, 0, 0, 1, 1, 0, 6},    {9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 0, 6},
    {7, 6, 3, 3, 1, 1, 0, 0, 1, 1, 0, 4},    {6, 7, 3, 3, 1, 1, 1, 1, 1, 1, 0, 3},
    {9, 8, 3, 2, 2, 1, 1, 0, 1, 1, 0, 2},    {5, 11, 2, 5, 1, 3, 1, 2, 1, 1, 1, 2},
    {9, 9, 3, 3, 1, 1, 1, 1, 2, 2, 0, 2},    {11, 10, 3, 2, 2, 1, 1, 1, 2, 3, 1, 3},
    {7, 8, 2, 2, 2, 2, 0, 0, 1, 1, 1, 2},    {10, 10, 3, 3, 2, 2, 0, 0, 1, 1, 1, 3},
    {5, 5, 2, 2, 2, 2, 1, 1, 1, 1, 1, 2},    {1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 3},
    {5, 6, 5, 6, 1, 1, 0, 0, 1, 1, 0, 2},    {56, 56, 3, 3, 2, 2, 1, 1, 1, 1, 0, 64},
    {13, 12, 4, 4, 3, 3, 2, 2, 1, 1, 1, 5},  {4, 4, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1},
};

static eg_max_pool2d_params max_params(const int64_t *c) {
  eg_max_pool2d_params p = {.planes = c[11], .h_in = c[0], .w_in = c[1],
                            .kernel = {c[2], c[3]}, .stride = {c[4], c[5]},
                            .padding = {c[6], c[7]}, .dilation = {c[8], c[9]}};
  p.h_out = out_size(c[0], c[2], c[4], c[6], c[8], (int)c[10]);
  p.w_out = out_size(c[1], c[3], c[5], c[7], c[9], (int)c[10]);
  return p;
}

static void check_max_forward(const eg_max_pool2d_params *p, const float *x, unsigned tag) {
  long no = (long)(p->planes * p->h_out * p->w_out);
  float *y = nan_buf(no), *ry = nan_buf(no);
  int64_t *idx = idx_buf(no), *ridx = idx_buf(no);
  eg_max_pool2d_nchw_f32(p, x, y, idx);
  ref_max_pool(p, x, ry, ridx);
  for (long i = 0; i < no; i++) {
    bool same = (isnan(y[i]) && isnan(ry[i])) || y[i] == ry[i];
    EG_CHECK_MSG(same && idx[i] == ridx[i], "case %u out %ld: %g@%lld vs %g@%lld", tag, i,
                 y[i], (long long)idx[i], ry[i], (long long)ridx[i]);
    if (!same || idx[i] != ridx[i]) break;
  }
  free(y);
  free(ry);
  free(idx);
  free(ridx);
}

static void test_max_pool_forward(void) {
  for (size_t c = 0; c < sizeof max_cases / sizeof max_cases[0]; c++) {
    eg_max_pool2d_params p = max_params(max_cases[c]);
    long ni = (long)(p.planes * p.h_in * p.w_in);
    float *x = nan_buf(ni);
    eg_test_fill(x, ni, (unsigned)c + 1);
    check_max_forward(&p, x, (unsigned)c);
    /* ties: three levels only */
    for (long i = 0; i < ni; i++) x[i] = floorf((x[i] + 1.0f) * 1.5f);
    check_max_forward(&p, x, 100 + (unsigned)c);
    /* NaNs sprinkled in, and a plane of -inf */
    for (long i = 0; i < ni; i += 7) x[i] = NAN;
    for (long i = 0; i < p.h_in * p.w_in; i++) x[i] = -INFINITY;
    check_max_forward(&p, x, 200 + (unsigned)c);
    free(x);
  }
}

/* ATen's degenerate dilated window that holds no input element: -inf, and the index of the
 * window's first position stepped past the padding — here row 2 of a 2-row plane, so 6. */
static void test_max_pool_empty_window(void) {
  eg_max_pool2d_params p = {.planes = 1, .h_in = 2, .w_in = 2, .h_out = 1, .w_out = 1,
                            .kernel = {2, 2}, .stride = {1, 1}, .padding = {1, 1},
                            .dilation = {3, 3}};
  float x[4] = {1, 2, 3, 4}, y = 0, gx[4], gy = 1.0f;
  int64_t idx = 0, bad = 0;
  eg_max_pool2d_nchw_f32(&p, x, &y, &idx);
  EG_CHECK(isinf(y) && y < 0);
  EG_CHECK(idx == 6);
  EG_CHECK(!eg_max_pool2d_backward_nchw_f32(1, 4, 1, &gy, &idx, gx, &bad));
  EG_CHECK(bad == 6);
  for (int i = 0; i < 4; i++) EG_CHECK(gx[i] == 0.0f);
}

/* The scatter is the adjoint of gathering x at the indices; untouched inputs are exactly 0. */
static void test_max_pool_backward(void) {
  for (size_t c = 0; c < sizeof max_cases / sizeof max_cases[0]; c++) {
    eg_max_pool2d_params p = max_params(max_cases[c]);
    long in_plane = (long)(p.h_in * p.w_in), out_plane = (long)(p.h_out * p.w_out);
    long ni = (long)p.planes * in_plane, no = (long)p.planes * out_plane;
    float *x = nan_buf(ni), *y = nan_buf(no), *gy = nan_buf(no), *gx = nan_buf(ni);
    float *gathered = nan_buf(no);
    int64_t *idx = idx_buf(no), bad = 0;
    eg_test_fill(x, ni, (unsigned)c + 30);
    for (long i = 0; i < ni; i++) x[i] = floorf((x[i] + 1.0f) * 2.0f); /* ties */
    eg_test_fill(gy, no, (unsigned)c + 60);
    eg_max_pool2d_nchw_f32(&p, x, y, idx);
    EG_CHECK(eg_max_pool2d_backward_nchw_f32(p.planes, in_plane, out_plane, gy, idx, gx, &bad));
    /* <gather(x), gy> == <x, scatter(gy)> for a random x (indices fixed) */
    eg_test_fill(x, ni, (unsigned)c + 90);
    for (long o = 0; o < no; o++) gathered[o] = x[(o / out_plane) * in_plane + idx[o]];
    double a = dot(gathered, gy, no), b = dot(x, gx, ni);
    EG_CHECK_MSG(fabs(a - b) <= 1e-4 * (1 + sum_abs(gy, no)), "case %zu: %g vs %g", c, a, b);
    /* exact zeros where no maximum landed; exact per-element sums where several did */
    for (long i = 0; i < ni; i++) {
      double s = 0;
      long plane = i / in_plane;
      for (long o = plane * out_plane; o < (plane + 1) * out_plane; o++)
        if (idx[o] == i % in_plane) s += gy[o];
      EG_CHECK_MSG(fabs(gx[i] - s) <= 1e-5 * (1 + fabs(s)), "case %zu gx[%ld] %g vs %g", c, i,
                   gx[i], s);
      if (s == 0) EG_CHECK(gx[i] == 0.0f);
    }
    free(x);
    free(y);
    free(gy);
    free(gx);
    free(gathered);
    free(idx);
  }
}

/* -1 is skipped like ATen; any other stray index is skipped and reported. */
static void test_max_pool_backward_indices(void) {
  float gy[4] = {1, 2, 3, 4}, gx[2 * 6];
  int64_t idx[4] = {5, -1, 0, 5}, bad = 0;
  for (int i = 0; i < 12; i++) gx[i] = NAN;
  EG_CHECK(eg_max_pool2d_backward_nchw_f32(2, 6, 2, gy, idx, gx, &bad));
  EG_CHECK(gx[5] == 1.0f && gx[6] == 3.0f && gx[11] == 4.0f);
  EG_CHECK(gx[0] == 0.0f && gx[1] == 0.0f && gx[7] == 0.0f);
  idx[1] = 6;
  EG_CHECK(!eg_max_pool2d_backward_nchw_f32(2, 6, 2, gy, idx, gx, &bad));
  EG_CHECK(bad == 6);
  EG_CHECK(gx[5] == 1.0f && gx[6] == 3.0f);
  idx[1] = -2;
  EG_CHECK(!eg_max_pool2d_backward_nchw_f32(2, 6, 2, gy, idx, gx, &bad));
  EG_CHECK(bad == -2);
}

/* ---- avg pool ---- */

/* Enumerates the k_h x k_w positions: sums those inside the input, counts those inside the
 * padded input and those inside the input. */
static void ref_avg_pool(const eg_avg_pool2d_params *p, const float *x, float *y) {
  for (int64_t c = 0; c < p->planes; c++)
    for (int64_t oh = 0; oh < p->h_out; oh++)
      for (int64_t ow = 0; ow < p->w_out; ow++) {
        double s = 0;
        long in = 0, padded = 0;
        for (int64_t i = 0; i < p->kernel[0]; i++)
          for (int64_t j = 0; j < p->kernel[1]; j++) {
            int64_t h = oh * p->stride[0] - p->padding[0] + i;
            int64_t w = ow * p->stride[1] - p->padding[1] + j;
            if (h < p->h_in + p->padding[0] && w < p->w_in + p->padding[1]) padded++;
            if (h < 0 || h >= p->h_in || w < 0 || w >= p->w_in) continue;
            in++;
            s += x[(c * p->h_in + h) * p->w_in + w];
          }
        double d = p->divisor_override ? (double)p->divisor_override
                   : p->count_include_pad ? (double)padded : (double)in;
        y[(c * p->h_out + oh) * p->w_out + ow] = (float)(s / d);
      }
}

/* {h, w, kh, kw, sh, sw, ph, pw, ceil, count_include_pad, divisor, planes} */
static const int64_t avg_cases[][12] = {
    {8, 8, 2, 2, 2, 2, 0, 0, 0, 1, 0, 6},   {9, 9, 3, 3, 2, 2, 1, 1, 0, 1, 0, 6},
    {9, 9, 3, 3, 2, 2, 1, 1, 0, 0, 0, 6},   {7, 6, 3, 3, 1, 1, 1, 1, 0, 1, 0, 3},
    {7, 6, 3, 3, 1, 1, 1, 1, 0, 0, 0, 3},   {9, 8, 3, 2, 2, 1, 1, 0, 0, 1, 0, 2},
    {7, 11, 2, 5, 1, 3, 1, 2, 0, 0, 0, 2},  {7, 8, 2, 2, 2, 2, 0, 0, 1, 1, 0, 2},
    {8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 0, 2},   {8, 8, 3, 3, 2, 2, 1, 1, 1, 0, 0, 2},
    {6, 6, 4, 4, 3, 3, 1, 1, 1, 1, 0, 2},   {6, 6, 4, 4, 3, 3, 1, 1, 1, 0, 0, 2},
    {5, 5, 2, 2, 2, 2, 1, 1, 1, 1, 0, 2},   {7, 7, 3, 3, 2, 2, 1, 1, 0, 1, 3, 2},
    {8, 7, 3, 2, 2, 2, 1, 1, 1, 1, -2, 2},  {6, 6, 3, 3, 2, 2, 1, 1, 0, 0, 5, 2},
    {56, 56, 3, 3, 2, 2, 1, 1, 0, 0, 0, 64}, {11, 13, 5, 4, 4, 3, 2, 2, 1, 1, 0, 3},
};

static eg_avg_pool2d_params avg_params(const int64_t *c) {
  eg_avg_pool2d_params p = {.planes = c[11], .h_in = c[0], .w_in = c[1],
                            .kernel = {c[2], c[3]}, .stride = {c[4], c[5]},
                            .padding = {c[6], c[7]}, .count_include_pad = c[9] != 0,
                            .divisor_override = c[10]};
  p.h_out = out_size(c[0], c[2], c[4], c[6], 1, (int)c[8]);
  p.w_out = out_size(c[1], c[3], c[5], c[7], 1, (int)c[8]);
  return p;
}

static void test_avg_pool(void) {
  for (size_t c = 0; c < sizeof avg_cases / sizeof avg_cases[0]; c++) {
    eg_avg_pool2d_params p = avg_params(avg_cases[c]);
    long ni = (long)(p.planes * p.h_in * p.w_in), no = (long)(p.planes * p.h_out * p.w_out);
    float *x = nan_buf(ni), *y = nan_buf(no), *ry = nan_buf(no), *gy = nan_buf(no);
    float *gx = nan_buf(ni);
    eg_test_fill(x, ni, (unsigned)c + 1);
    eg_test_fill(gy, no, (unsigned)c + 50);
    eg_avg_pool2d_nchw_f32(&p, x, y);
    ref_avg_pool(&p, x, ry);
    long bad = eg_test_allclose(y, ry, no, RTOL, ATOL);
    EG_CHECK_MSG(bad < 0, "case %zu y[%ld] %g vs %g", c, bad, bad < 0 ? 0 : y[bad],
                 bad < 0 ? 0 : ry[bad]);
    eg_avg_pool2d_backward_nchw_f32(&p, gy, gx);
    double a = dot(y, gy, no), b = dot(x, gx, ni);
    EG_CHECK_MSG(fabs(a - b) <= 1e-4 * (1 + sum_abs(gy, no)), "case %zu: %g vs %g", c, a, b);
    for (long i = 0; i < ni; i++) EG_CHECK(!isnan(gx[i]));
    free(x);
    free(y);
    free(ry);
    free(gy);
    free(gx);
  }
}

/* ---- adaptive pools ---- */

static void bounds(int64_t i, int64_t out, int64_t in, int64_t *lo, int64_t *hi) {
  *lo = (int64_t)floor((double)(i * in) / (double)out);
  *hi = (int64_t)ceil((double)((i + 1) * in) / (double)out);
}

static void ref_adaptive(const eg_adaptive_pool2d_params *p, const float *x, float *avg,
                         float *mx, int64_t *idx) {
  for (int64_t c = 0; c < p->planes; c++)
    for (int64_t oh = 0; oh < p->h_out; oh++)
      for (int64_t ow = 0; ow < p->w_out; ow++) {
        int64_t h0, h1, w0, w1, at = -1;
        bounds(oh, p->h_out, p->h_in, &h0, &h1);
        bounds(ow, p->w_out, p->w_in, &w0, &w1);
        double s = 0;
        float m = -INFINITY;
        for (int64_t h = h0; h < h1; h++)
          for (int64_t w = w0; w < w1; w++) {
            float v = x[(c * p->h_in + h) * p->w_in + w];
            s += v;
            if (at < 0 || isnan(v) || (!isnan(m) && v > m)) {
              m = v;
              at = h * p->w_in + w;
            }
          }
        int64_t o = (c * p->h_out + oh) * p->w_out + ow;
        avg[o] = (float)(s / (double)((h1 - h0) * (w1 - w0)));
        mx[o] = m;
        idx[o] = at;
      }
}

/* {planes, h_in, w_in, h_out, w_out} */
static const int64_t adaptive_cases[][5] = {
    {6, 8, 6, 4, 3},  {6, 7, 10, 3, 4}, {2, 13, 11, 5, 7}, {2, 3, 4, 5, 7},  {8, 7, 5, 1, 1},
    {2, 5, 6, 5, 6},  {3, 9, 7, 4, 2},  {256, 28, 28, 7, 7}, {3, 1, 1, 3, 2}, {2, 4, 4, 0, 2},
};

static void test_adaptive(void) {
  for (size_t c = 0; c < sizeof adaptive_cases / sizeof adaptive_cases[0]; c++) {
    const int64_t *k = adaptive_cases[c];
    eg_adaptive_pool2d_params p = {k[0], k[1], k[2], k[3], k[4]};
    long ni = (long)(p.planes * p.h_in * p.w_in), no = (long)(p.planes * p.h_out * p.w_out);
    float *x = nan_buf(ni), *y = nan_buf(no), *ry = nan_buf(no), *my = nan_buf(no);
    float *rmy = nan_buf(no), *gy = nan_buf(no), *gx = nan_buf(ni), *gathered = nan_buf(no);
    int64_t *idx = idx_buf(no), *ridx = idx_buf(no), bad = 0;
    eg_test_fill(x, ni, (unsigned)c + 3);
    for (long i = 0; i < ni; i += 5) x[i] = floorf(x[i] * 2.0f); /* some ties */
    if (ni > 10) x[10] = NAN;
    eg_test_fill(gy, no, (unsigned)c + 70);
    eg_adaptive_avg_pool2d_nchw_f32(&p, x, y);
    eg_adaptive_max_pool2d_nchw_f32(&p, x, my, idx);
    ref_adaptive(&p, x, ry, rmy, ridx);
    for (long i = 0; i < no; i++) {
      bool nan_ok = isnan(ry[i]) ? isnan(y[i]) : fabs(y[i] - ry[i]) <= 1e-5 * (1 + fabs(ry[i]));
      bool max_ok = (isnan(rmy[i]) ? isnan(my[i]) : my[i] == rmy[i]) && idx[i] == ridx[i];
      EG_CHECK_MSG(nan_ok && max_ok, "case %zu out %ld: avg %g vs %g, max %g@%lld vs %g@%lld",
                   c, i, y[i], ry[i], my[i], (long long)idx[i], rmy[i], (long long)ridx[i]);
      if (!nan_ok || !max_ok) break;
    }
    /* backward adjoints, on a NaN-free x */
    eg_test_fill(x, ni, (unsigned)c + 9);
    eg_adaptive_avg_pool2d_nchw_f32(&p, x, y);
    eg_adaptive_avg_pool2d_backward_nchw_f32(&p, gy, gx);
    double a = dot(y, gy, no), b = dot(x, gx, ni);
    EG_CHECK_MSG(fabs(a - b) <= 1e-4 * (1 + sum_abs(gy, no)), "avg case %zu: %g vs %g", c, a, b);
    long in_plane = (long)(p.h_in * p.w_in), out_plane = (long)(p.h_out * p.w_out);
    eg_adaptive_max_pool2d_nchw_f32(&p, x, my, idx);
    EG_CHECK(eg_max_pool2d_backward_nchw_f32(p.planes, in_plane, out_plane, gy, idx, gx, &bad));
    for (long o = 0; o < no; o++) gathered[o] = x[(o / out_plane) * in_plane + idx[o]];
    a = dot(gathered, gy, no);
    b = dot(x, gx, ni);
    EG_CHECK_MSG(fabs(a - b) <= 1e-4 * (1 + sum_abs(gy, no)), "max case %zu: %g vs %g", c, a, b);
    free(x);
    free(y);
    free(ry);
    free(my);
    free(rmy);
    free(gy);
    free(gx);
    free(gathered);
    free(idx);
    free(ridx);
  }
}

/* ---- op checks on hand-built nodes ---- */

/* One node over value 0 (the input x); its output is value 1, a tensor or a tuple of values 2
 * and 3. Arguments are ints / int lists / bools / None built in place. */
typedef struct fixture {
  eg_graph g;
  eg_value values[4];
  int32_t elems[2];
  eg_node node;
  eg_arg args[8];
  eg_arg items[8][3];
} fixture;

static void fixture_init(fixture *f, eg_op op, int rank, const int64_t *shape, bool tuple) {
  memset(f, 0, sizeof *f);
  f->g.values = f->values;
  f->g.n_values = 4;
  f->values[0].kind = EG_VALUE_TENSOR;
  f->values[0].dtype = EG_DTYPE_FLOAT32;
  f->values[0].rank = rank;
  memcpy(f->values[0].shape, shape, (size_t)rank * sizeof *shape);
  f->values[1].kind = tuple ? EG_VALUE_TUPLE : EG_VALUE_TENSOR;
  f->elems[0] = 2;
  f->elems[1] = 3;
  if (tuple) {
    f->values[1].n_elems = 2;
    f->values[1].elems = f->elems;
  }
  f->values[2].dtype = EG_DTYPE_FLOAT32;
  f->values[3].dtype = EG_DTYPE_INT64;
  f->node.name = "pool";
  f->node.op = op;
  f->node.args = f->args;
  f->node.output = 1;
  f->args[0].kind = EG_ARG_VALUE;
  f->args[0].value = 0;
  f->node.n_args = 1;
}

static void arg_list(fixture *f, int pos, int64_t a, int64_t b, int count) {
  f->args[pos].kind = EG_ARG_LIST;
  f->args[pos].list.n = count;
  f->args[pos].list.items = f->items[pos];
  f->items[pos][0].kind = f->items[pos][1].kind = EG_ARG_INT;
  f->items[pos][0].i = a;
  f->items[pos][1].i = b;
  if (f->node.n_args <= pos) f->node.n_args = pos + 1;
}

static void arg_bool(fixture *f, int pos, bool v) {
  f->args[pos].kind = EG_ARG_BOOL;
  f->args[pos].b = v;
  if (f->node.n_args <= pos) f->node.n_args = pos + 1;
}

/* Records output shape [1, 1, o, o] (for the tuple's elements too). */
static void record_out(fixture *f, int64_t o) {
  for (int v = 1; v < 4; v++) {
    if (v == 1 && f->values[1].kind == EG_VALUE_TUPLE) continue;
    f->values[v].kind = EG_VALUE_TENSOR;
    f->values[v].rank = 4;
    f->values[v].shape[0] = f->values[v].shape[1] = 1;
    f->values[v].shape[2] = f->values[v].shape[3] = o;
  }
}

/* Output sizes of max_pool2d_with_indices on [1, 1, h, h], from PyTorch 1.13:
 * {h, k, s, p, d, ceil, out}. */
static const int64_t torch_sizes[][7] = {
    {5, 2, 2, 1, 1, 1, 3},  {5, 2, 2, 1, 1, 0, 3},  {7, 2, 2, 0, 1, 1, 4},
    {7, 2, 2, 0, 1, 0, 3},  {10, 3, 2, 0, 1, 1, 5}, {10, 3, 2, 0, 1, 0, 4},
    {6, 4, 3, 1, 1, 1, 3},  {9, 3, 2, 1, 2, 1, 4},  {9, 3, 2, 1, 2, 0, 4},
    {2, 2, 1, 1, 3, 0, 1},  {1, 1, 1, 0, 1, 1, 1},  {8, 3, 3, 1, 1, 1, 3},
    {8, 3, 3, 1, 1, 0, 3},  {11, 5, 4, 2, 1, 1, 4}, {4, 3, 5, 1, 1, 1, 1},
    {4, 3, 5, 1, 1, 0, 1},
};

static void test_check_output_sizes(void) {
  fixture f;
  for (size_t c = 0; c < sizeof torch_sizes / sizeof torch_sizes[0]; c++) {
    const int64_t *t = torch_sizes[c], shape[4] = {1, 1, t[0], t[0]};
    fixture_init(&f, EG_OP_max_pool2d_with_indices, 4, shape, true);
    arg_list(&f, 1, t[1], t[1], 1);
    arg_list(&f, 2, t[2], t[2], 2);
    arg_list(&f, 3, t[3], t[3], 2);
    arg_list(&f, 4, t[4], t[4], 1);
    arg_bool(&f, 5, t[5] != 0);
    record_out(&f, t[6]);
    eg_status s = eg_check_max_pool2d_with_indices(&f.g, &f.node);
    EG_CHECK_MSG(s == EG_OK, "case %zu: %s", c, eg_last_error());
    record_out(&f, t[6] + 1);
    EG_CHECK(eg_check_max_pool2d_with_indices(&f.g, &f.node) == EG_ERR_INVALID);
    /* avg_pool2d (no dilation) agrees where dilation is 1 */
    if (t[4] != 1) continue;
    fixture_init(&f, EG_OP_avg_pool2d, 4, shape, false);
    arg_list(&f, 1, t[1], t[1], 2);
    arg_list(&f, 2, t[2], t[2], 1);
    arg_list(&f, 3, t[3], t[3], 1);
    arg_bool(&f, 4, t[5] != 0);
    record_out(&f, t[6]);
    s = eg_check_avg_pool2d(&f.g, &f.node);
    EG_CHECK_MSG(s == EG_OK, "avg case %zu: %s", c, eg_last_error());
  }
}

static bool error_has(eg_status s, eg_status want, const char *text) {
  return s == want && strstr(eg_last_error(), text) != NULL;
}

static void test_check_errors(void) {
  fixture f;
  const int64_t shape[4] = {1, 1, 7, 7};
  /* padding > kernel/2, per dim */
  fixture_init(&f, EG_OP_max_pool2d_with_indices, 4, shape, true);
  arg_list(&f, 1, 3, 4, 2);
  arg_list(&f, 2, 1, 1, 2);
  arg_list(&f, 3, 1, 3, 2);
  record_out(&f, 7);
  EG_CHECK_MSG(error_has(eg_check_max_pool2d_with_indices(&f.g, &f.node), EG_ERR_INVALID,
                         "pad should be at most half of kernel size"), "%s", eg_last_error());
  arg_list(&f, 3, 1, 2, 2); /* 2 <= 4/2: fine */
  f.values[2].shape[3] = f.values[3].shape[3] = 8;
  EG_CHECK_MSG(eg_check_max_pool2d_with_indices(&f.g, &f.node) == EG_OK, "%s", eg_last_error());
  /* zero stride */
  fixture_init(&f, EG_OP_avg_pool2d, 4, shape, false);
  arg_list(&f, 1, 3, 3, 2);
  arg_list(&f, 2, 0, 0, 1);
  record_out(&f, 7);
  EG_CHECK(error_has(eg_check_avg_pool2d(&f.g, &f.node), EG_ERR_INVALID, "argument stride"));
  /* divisor_override 0 */
  arg_list(&f, 2, 2, 2, 1);
  arg_list(&f, 3, 1, 1, 1);
  arg_bool(&f, 4, false);
  arg_bool(&f, 5, true);
  f.args[6].kind = EG_ARG_INT;
  f.args[6].i = 0;
  f.node.n_args = 7;
  record_out(&f, 4);
  EG_CHECK(error_has(eg_check_avg_pool2d(&f.g, &f.node), EG_ERR_INVALID, "divisor must be"));
  f.args[6].i = 2;
  EG_CHECK_MSG(eg_check_avg_pool2d(&f.g, &f.node) == EG_OK, "%s", eg_last_error());
  /* unsupported dtype, and a kernel size beyond ATen's int */
  f.values[0].dtype = EG_DTYPE_FLOAT64;
  EG_CHECK(eg_check_avg_pool2d(&f.g, &f.node) == EG_ERR_UNSUPPORTED);
  f.values[0].dtype = EG_DTYPE_FLOAT32;
  arg_list(&f, 1, 3, (int64_t)1 << 40, 2);
  EG_CHECK(error_has(eg_check_avg_pool2d(&f.g, &f.node), EG_ERR_INVALID, "kernel_size"));
}

/* A stray index reaching max_pool2d_with_indices_backward is a run-time error, not a write. */
static void test_run_bad_index(void) {
  fixture f;
  const int64_t shape[4] = {1, 1, 4, 4};
  fixture_init(&f, EG_OP_max_pool2d_with_indices_backward, 4, shape, false);
  f.values[2].kind = EG_VALUE_TENSOR; /* grad_output [1, 1, 2, 2] */
  f.values[2].rank = 4;
  f.values[2].shape[0] = f.values[2].shape[1] = 1;
  f.values[2].shape[2] = f.values[2].shape[3] = 2;
  f.values[3] = f.values[2];
  f.values[3].dtype = EG_DTYPE_INT64;
  f.values[1].rank = 4;
  memcpy(f.values[1].shape, shape, sizeof shape);
  f.args[0].value = 2;
  f.args[1].kind = EG_ARG_VALUE;
  f.args[1].value = 0;
  arg_list(&f, 2, 2, 2, 1);
  arg_list(&f, 3, 2, 2, 1);
  arg_list(&f, 4, 0, 0, 1);
  arg_list(&f, 5, 1, 1, 1);
  arg_bool(&f, 6, false);
  f.args[7].kind = EG_ARG_VALUE;
  f.args[7].value = 3;
  f.node.n_args = 8;
  EG_CHECK_MSG(eg_check_max_pool2d_with_indices_backward(&f.g, &f.node) == EG_OK, "%s",
               eg_last_error());
  float x[16] = {0}, gx[16], gy[4] = {1, 2, 3, 4};
  int64_t idx[4] = {0, 2, 8, 10};
  void *data[4] = {x, gx, gy, idx};
  eg_exec ex = {.g = &f.g, .data = data, .scratch = NULL};
  for (int i = 0; i < 16; i++) gx[i] = NAN;
  EG_CHECK(eg_run_max_pool2d_with_indices_backward(&ex, &f.node) == EG_OK);
  EG_CHECK(gx[0] == 1 && gx[2] == 2 && gx[8] == 3 && gx[10] == 4 && gx[1] == 0 && gx[15] == 0);
  idx[3] = 16;
  EG_CHECK(error_has(eg_run_max_pool2d_with_indices_backward(&ex, &f.node), EG_ERR_RUNTIME,
                     "indices holds 16: out of range [0, 16)"));
}

int main(void) {
  EG_RUN(test_max_pool_forward);
  EG_RUN(test_max_pool_empty_window);
  EG_RUN(test_max_pool_backward);
  EG_RUN(test_max_pool_backward_indices);
  EG_RUN(test_avg_pool);
  EG_RUN(test_adaptive);
  EG_RUN(test_check_output_sizes);
  EG_RUN(test_check_errors);
  EG_RUN(test_run_bad_index);
  return eg_test_summary();
}
