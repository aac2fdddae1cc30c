/* test_htp_kernels.c — the htp executor's NHWC kernels against references.
 *
 * Convolutions are checked twice: against the portable NCHW kernels (the src/kernels NCHW files)
 * after converting layouts (NHWC <-> NCHW, HWIO / [kH,kW,Cin,Cout/g] <-> ATen's weight layouts),
 * and against naive loops written here straight from QNN's definitions (which also cover what
 * ATen cannot express: asymmetric pads). Every TransposeConv2d case runs each algorithm
 * (FLIP / PHASE / COL2IM where applicable) and every output_padding value for strides 2 and 3.
 * The other kernels are compared with naive references (or the NCHW kernels where one exists).
 * Outputs and scratch start as NaN so unwritten or read-before-written memory shows, and
 * scratch is allocated at exactly the size asked for, so ASan sees overruns. */
#include <stdint.h>
#include <string.h>

#include "eg_test.h"
#include "kernels/avg_pool2d_nchw_f32.h"
#include "kernels/concat_nhwc_f32.h"
#include "kernels/conv2d_nhwc_f32.h"
#include "kernels/convolution_nchw_f32.h"
#include "kernels/depthwise_conv2d_nhwc_f32.h"
#include "kernels/elementwise_nhwc_f32.h"
#include "kernels/group_norm_nchw_f32.h"
#include "kernels/log_softmax_f32.h"
#include "kernels/matmul_nhwc_f32.h"
#include "kernels/max_pool2d_nchw_f32.h"
#include "kernels/norm_nhwc_f32.h"
#include "kernels/pool2d_nhwc_f32.h"
#include "kernels/reduce_nhwc_f32.h"
#include "kernels/softmax_nhwc_f32.h"
#include "kernels/transpose_conv2d_nhwc_f32.h"
#include "kernels/transpose_f32.h"

#define RTOL 1e-4
#define ATOL 1e-5

/* ---- buffers ---- */

/* Exactly `bytes` (at least 1), NaN-filled. */
static void *scratch_buf(size_t bytes) {
  unsigned char *p = malloc(bytes ? bytes : 1);
  for (size_t i = 0; i + sizeof(float) <= bytes; i += sizeof(float)) {
    const float v = NAN;
    memcpy(p + i, &v, sizeof v);
  }
  return p;
}

static int check_close(const char *what, const float *got, const float *want, long n) {
  const long bad = eg_test_allclose(got, want, n, RTOL, ATOL);
  EG_CHECK_MSG(bad < 0, "%s: element %ld of %ld: got %g, want %g", what, bad, n,
               bad >= 0 ? (double)got[bad] : 0.0, bad >= 0 ? (double)want[bad] : 0.0);
  return bad < 0;
}

/* ---- layout conversion ---- */

/* [n, h, w, c] -> [n, c, h, w] and back. */
static void nhwc_to_nchw(const float *x, long n, long h, long w, long c, float *y) {
  for (long b = 0; b < n; b++)
    for (long i = 0; i < h * w; i++)
      for (long e = 0; e < c; e++) y[(b * c + e) * h * w + i] = x[(b * h * w + i) * c + e];
}

static void nchw_to_nhwc(const float *x, long n, long c, long h, long w, float *y) {
  for (long b = 0; b < n; b++)
    for (long i = 0; i < h * w; i++)
      for (long e = 0; e < c; e++) y[(b * h * w + i) * c + e] = x[(b * c + e) * h * w + i];
}

/* [kh, kw, a, b] -> [b, a, kh, kw] (HWIO -> OIHW; also [kh,kw,Cin,Cout/g] -> [Cin,Cout/g,kh,kw]
 * with swap = false). */
static void hw_last2_to_first2(const float *f, long kh, long kw, long a, long b, bool swap,
                               float *out) {
  for (long t = 0; t < kh * kw; t++)
    for (long i = 0; i < a; i++)
      for (long j = 0; j < b; j++) {
        const long dst = swap ? (j * a + i) * kh * kw + t : (i * b + j) * kh * kw + t;
        out[dst] = f[(t * a + i) * b + j];
      }
}

/* ---- Conv2d ---- */

typedef struct conv_case {
  long n, cin, h, w, cout, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw, groups;
} conv_case;

static long conv_out(long in, long k, long s, long d, long before, long after) {
  return (in + before + after - d * (k - 1) - 1) / s + 1;
}

/* Naive QNN Conv2d (double accumulation); flip reads the filter rotated by 180 degrees. */
static void ref_conv2d(const conv_case *c, bool flip, long ho, long wo, const float *x,
                       const float *f, const float *bias, float *y) {
  const long cig = c->cin / c->groups, cog = c->cout / c->groups;
  for (long b = 0; b < c->n; b++)
    for (long i = 0; i < ho; i++)
      for (long j = 0; j < wo; j++)
        for (long co = 0; co < c->cout; co++) {
          double s = bias ? bias[co] : 0.0;
          const long q = co / cog;
          for (long a = 0; a < c->kh; a++)
            for (long bb = 0; bb < c->kw; bb++) {
              const long yy = i * c->sh - c->pt + a * c->dh, xx = j * c->sw - c->pl + bb * c->dw;
              if (yy < 0 || yy >= c->h || xx < 0 || xx >= c->w) continue;
              const long ta = flip ? c->kh - 1 - a : a, tb = flip ? c->kw - 1 - bb : bb;
              for (long ci = 0; ci < cig; ci++)
                s += (double)x[((b * c->h + yy) * c->w + xx) * c->cin + q * cig + ci] *
                     f[((ta * c->kw + tb) * cig + ci) * c->cout + co];
            }
          y[((b * ho + i) * wo + j) * c->cout + co] = (float)s;
        }
}

static void run_conv_case(const conv_case *c, bool flip, unsigned seed) {
  const long ho = conv_out(c->h, c->kh, c->sh, c->dh, c->pt, c->pb);
  const long wo = conv_out(c->w, c->kw, c->sw, c->dw, c->pl, c->pr);
  const long nx = c->n * c->h * c->w * c->cin, nf = c->kh * c->kw * (c->cin / c->groups) * c->cout;
  const long ny = c->n * ho * wo * c->cout;
  float *x = eg_test_rand_buf(nx, seed), *f = eg_test_rand_buf(nf, seed + 1), *bias = eg_test_rand_buf(c->cout, seed + 2);
  float *y = eg_test_nan_buf(ny), *ref = eg_test_nan_buf(ny);
  /* chunk_bytes 0 (the default) and 64 KiB, which splits the larger cases into many chunks or
   * bands, or turns bands off */
  for (int small = 0; small < 2; small++)
    for (int with_bias = 0; with_bias < 2; with_bias++) {
      const eg_conv2d_nhwc_params p = {
          .n = c->n, .h_in = c->h, .w_in = c->w, .c_in = c->cin, .h_out = ho, .w_out = wo,
          .c_out = c->cout, .k_h = c->kh, .k_w = c->kw, .stride = {c->sh, c->sw},
          .dilation = {c->dh, c->dw}, .pad = {c->pt, c->pl}, .groups = c->groups, .flip = flip,
          .chunk_bytes = small ? 65536 : 0};
      void *scratch = scratch_buf(eg_conv2d_nhwc_f32_scratch(&p));
      for (long i = 0; i < ny; i++) y[i] = NAN;
      eg_conv2d_nhwc_f32(&p, x, f, with_bias ? bias : NULL, y, scratch);
      ref_conv2d(c, flip, ho, wo, x, f, with_bias ? bias : NULL, ref);
      char what[192];
      snprintf(what, sizeof what, "conv2d n%ld c%ld %ldx%ld ->%ld k%ldx%ld s%ld,%ld "
               "p%ld,%ld,%ld,%ld d%ld,%ld g%ld flip%d bias%d chunk%s", c->n, c->cin, c->h, c->w,
               c->cout, c->kh, c->kw, c->sh, c->sw, c->pt, c->pb, c->pl, c->pr, c->dh, c->dw,
               c->groups, flip, with_bias, small ? "64K" : "default");
      check_close(what, y, ref, ny);
      free(scratch);
      if (eg_conv2d_nhwc_f32_takes_winograd(&p)) { /* whatever the thresholds say */
        eg_conv2d_nhwc_params q = p;
        q.winograd = true;
        void *s2 = scratch_buf(eg_conv2d_nhwc_f32_scratch(&q));
        for (long i = 0; i < ny; i++) y[i] = NAN;
        eg_conv2d_nhwc_f32(&q, x, f, with_bias ? bias : NULL, y, s2);
        char w2[240];
        snprintf(w2, sizeof w2, "%s winograd", what);
        check_close(w2, y, ref, ny);
        free(s2);
      }
      if (!eg_conv2d_nhwc_f32_takes_oihw(&p)) continue;
      /* the same conv reading the filter as OIHW, writing y as [c_out, pixels], and both */
      const long kk = c->kh * c->kw, m = ny / c->cout;
      float *f_oihw = eg_test_nan_buf(nf), *ref_cn = eg_test_nan_buf(ny);
      for (long t = 0; t < kk; t++)
        for (long ci = 0; ci < c->cin; ci++)
          for (long co = 0; co < c->cout; co++)
            f_oihw[(co * c->cin + ci) * kk + t] = f[(t * c->cin + ci) * c->cout + co];
      for (long r = 0; r < m; r++)
        for (long co = 0; co < c->cout; co++) ref_cn[co * m + r] = ref[r * c->cout + co];
      for (int mode = 1; mode < 4; mode++) {
        eg_conv2d_nhwc_params q = p;
        q.filter_oihw = mode & 1;
        q.y_cnhw = mode & 2;
        void *s2 = scratch_buf(eg_conv2d_nhwc_f32_scratch(&q));
        for (long i = 0; i < ny; i++) y[i] = NAN;
        eg_conv2d_nhwc_f32(&q, x, q.filter_oihw ? f_oihw : f, with_bias ? bias : NULL, y, s2);
        char w2[240];
        snprintf(w2, sizeof w2, "%s%s%s", what, q.filter_oihw ? " oihw" : "",
                 q.y_cnhw ? " y_cnhw" : "");
        check_close(w2, y, q.y_cnhw ? ref_cn : ref, ny);
        free(s2);
      }
      free(f_oihw), free(ref_cn);
    }
  free(x), free(f), free(bias), free(y), free(ref);
}

static const conv_case conv_cases[] = {
    {2, 8, 9, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {1, 3, 17, 17, 8, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1},
    {2, 12, 10, 11, 18, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 3},
    {1, 6, 12, 12, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 2},
    {3, 16, 5, 5, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},   /* pointwise */
    {2, 16, 5, 5, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 4},   /* pointwise, grouped */
    {2, 64, 48, 48, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}, /* pointwise, larger */
    {2, 64, 48, 48, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 4}, /* pointwise, larger, grouped */
    {1, 4, 8, 9, 5, 2, 3, 3, 2, 0, 2, 1, 0, 1, 1, 1},     /* asymmetric pads */
    {1, 5, 6, 6, 4, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1},     /* no padding */
    {1, 2, 30, 30, 3, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1},   /* several chunks' worth of pixels */
    {2, 32, 40, 40, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  /* row bands */
    {1, 64, 64, 64, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  /* several row bands */
    {1, 16, 40, 40, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1},  /* row bands, dilated */
    {1, 8, 40, 40, 8, 3, 3, 1, 2, 1, 0, 1, 1, 1, 1, 1},   /* row bands, stride_w 2 */
    {2, 48, 30, 30, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},  /* chunked im2col, several chunks */
    {2, 6, 9, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6},     /* direct: c_out == groups, cig 1 */
    {1, 24, 10, 9, 3, 4, 3, 2, 1, 1, 0, 2, 1, 2, 1, 3},   /* direct: cig 8 (a dw grad_weight) */
    {2, 40, 40, 40, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 40}, /* direct, threaded */
    {2, 160, 7, 6, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 40},  /* direct, cig 4: 16-channel blocks */
    {1, 128, 9, 9, 16, 4, 4, 1, 1, 1, 1, 1, 1, 2, 2, 16},  /* direct, cig 8, dilated */
    /* wide kernels (a weight gradient as a Conv2d: x [c_in, h, w, n], the gradient as a
       [h, w, n, c_out] kernel): one sgemm per output row over column-shifted bands */
    {16, 8, 32, 32, 16, 32, 32, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {6, 4, 24, 10, 5, 12, 5, 1, 2, 1, 2, 1, 2, 2, 2, 1},  /* dilated: two phases */
    {4, 3, 16, 16, 5, 8, 8, 1, 1, 1, 0, 1, 0, 2, 2, 1},   /* a stride-2 conv's gradient */
    {3, 5, 9, 9, 4, 9, 4, 1, 1, 0, 3, 2, 0, 1, 1, 1},     /* asymmetric pads */
};

static void test_conv2d_naive(void) {
  for (unsigned i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
    for (int flip = 0; flip < 2; flip++) run_conv_case(&conv_cases[i], flip, 10 + i);
}

/* Symmetric cases against eg_convolution_nchw_f32 through layout conversion. */
static void test_conv2d_vs_nchw(void) {
  for (unsigned k = 0; k < sizeof conv_cases / sizeof conv_cases[0]; k++) {
    const conv_case *c = &conv_cases[k];
    if (c->pt != c->pb || c->pl != c->pr) continue;
    const long ho = conv_out(c->h, c->kh, c->sh, c->dh, c->pt, c->pb);
    const long wo = conv_out(c->w, c->kw, c->sw, c->dw, c->pl, c->pr);
    const long cig = c->cin / c->groups, nx = c->n * c->h * c->w * c->cin;
    const long nf = c->kh * c->kw * cig * c->cout, ny = c->n * ho * wo * c->cout;
    float *x = eg_test_rand_buf(nx, 50 + k), *f = eg_test_rand_buf(nf, 60 + k), *bias = eg_test_rand_buf(c->cout, 70 + k);
    float *xc = eg_test_nan_buf(nx), *fc = eg_test_nan_buf(nf), *yc = eg_test_nan_buf(ny), *ref = eg_test_nan_buf(ny);
    float *y = eg_test_nan_buf(ny);
    nhwc_to_nchw(x, c->n, c->h, c->w, c->cin, xc);
    hw_last2_to_first2(f, c->kh, c->kw, cig, c->cout, true, fc); /* HWIO -> OIHW */
    const eg_conv2d_params q = {.n = c->n, .c_in = c->cin, .h_in = c->h, .w_in = c->w,
                                .c_out = c->cout, .h_out = ho, .w_out = wo, .k_h = c->kh,
                                .k_w = c->kw, .stride = {c->sh, c->sw}, .padding = {c->pt, c->pl},
                                .dilation = {c->dh, c->dw}, .groups = c->groups};
    void *s1 = scratch_buf(eg_convolution_nchw_f32_scratch(&q));
    eg_convolution_nchw_f32(&q, xc, fc, bias, yc, s1);
    nchw_to_nhwc(yc, c->n, c->cout, ho, wo, ref);
    const eg_conv2d_nhwc_params p = {
        .n = c->n, .h_in = c->h, .w_in = c->w, .c_in = c->cin, .h_out = ho, .w_out = wo,
        .c_out = c->cout, .k_h = c->kh, .k_w = c->kw, .stride = {c->sh, c->sw},
        .dilation = {c->dh, c->dw}, .pad = {c->pt, c->pl}, .groups = c->groups};
    void *s2 = scratch_buf(eg_conv2d_nhwc_f32_scratch(&p));
    eg_conv2d_nhwc_f32(&p, x, f, bias, y, s2);
    check_close("conv2d vs nchw", y, ref, ny);
    free(x), free(f), free(bias), free(xc), free(fc), free(yc), free(ref), free(y), free(s1),
        free(s2);
  }
}

/* ---- DepthWiseConv2d ---- */

static void test_depthwise_conv2d(void) {
  static const long cases[][9] = {/* n, c, h, w, mult, k, stride, pad, dil */
                                  {2, 8, 9, 9, 1, 3, 1, 1, 1}, {1, 5, 10, 7, 3, 3, 2, 1, 1},
                                  {2, 4, 12, 12, 2, 5, 1, 2, 2}, {1, 16, 7, 7, 1, 3, 2, 0, 1},
                                  /* 16-channel blocks of 4 pixels, a channel tail, edges */
                                  {2, 40, 13, 14, 1, 3, 1, 1, 1}, {1, 32, 16, 17, 1, 3, 2, 1, 1},
                                  {1, 48, 11, 12, 1, 5, 1, 2, 2}, {1, 16, 6, 3, 1, 3, 1, 1, 1}};
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const long *v = cases[k];
    const long n = v[0], c = v[1], h = v[2], w = v[3], m = v[4], ks = v[5], s = v[6], pd = v[7];
    const long d = v[8], co = c * m, ho = conv_out(h, ks, s, d, pd, pd);
    const long wo = conv_out(w, ks, s, d, pd, pd), ny = n * ho * wo * co;
    float *x = eg_test_rand_buf(n * h * w * c, 80 + k), *f = eg_test_rand_buf(ks * ks * co, 90 + k);
    float *bias = eg_test_rand_buf(co, 100 + k), *y = eg_test_nan_buf(ny), *ref = eg_test_nan_buf(ny);
    const eg_dwconv2d_nhwc_params p = {.n = n, .h_in = h, .w_in = w, .c_in = c, .h_out = ho,
                                       .w_out = wo, .mult = m, .k_h = ks, .k_w = ks,
                                       .stride = {s, s}, .dilation = {d, d}, .pad = {pd, pd}};
    eg_depthwise_conv2d_nhwc_f32(&p, x, f, bias, y);
    /* The same thing as a grouped Conv2d (groups = c, filter [k,k,1,co]) via the naive ref. */
    const conv_case cc = {n, c, h, w, co, ks, ks, s, s, pd, pd, pd, pd, d, d, c};
    ref_conv2d(&cc, false, ho, wo, x, f, bias, ref);
    check_close("depthwise vs naive grouped conv", y, ref, ny);
    /* And against the NCHW kernel with groups = c (weight [co, 1, k, k]). */
    float *xc = eg_test_nan_buf(n * h * w * c), *fc = eg_test_nan_buf(ks * ks * co), *yc = eg_test_nan_buf(ny);
    nhwc_to_nchw(x, n, h, w, c, xc);
    hw_last2_to_first2(f, ks, ks, 1, co, true, fc);
    const eg_conv2d_params q = {.n = n, .c_in = c, .h_in = h, .w_in = w, .c_out = co,
                                .h_out = ho, .w_out = wo, .k_h = ks, .k_w = ks,
                                .stride = {s, s}, .padding = {pd, pd}, .dilation = {d, d},
                                .groups = c};
    void *sc = scratch_buf(eg_convolution_nchw_f32_scratch(&q));
    eg_convolution_nchw_f32(&q, xc, fc, bias, yc, sc);
    nchw_to_nhwc(yc, n, co, ho, wo, ref);
    check_close("depthwise vs nchw", y, ref, ny);
    free(x), free(f), free(bias), free(y), free(ref), free(xc), free(fc), free(yc), free(sc);
  }
}

/* ---- TransposeConv2d ---- */

typedef struct tconv_case {
  long n, cin, h, w, cout, kh, kw, sh, sw, pt, pb, pl, pr, oph, opw, groups;
} tconv_case;

static long tconv_out(long in, long k, long s, long before, long after, long op) {
  return s * (in - 1) + k - before - after + op;
}

/* Naive QNN TransposeConv2d: scatter every product (double accumulation). */
static void ref_tconv2d(const tconv_case *c, long ho, long wo, const float *x, const float *f,
                        const float *bias, float *y) {
  const long cig = c->cin / c->groups, cog = c->cout / c->groups, ny = c->n * ho * wo * c->cout;
  double *acc = calloc((size_t)ny, sizeof(double));
  for (long b = 0; b < c->n; b++)
    for (long i = 0; i < c->h; i++)
      for (long j = 0; j < c->w; j++)
        for (long ci = 0; ci < c->cin; ci++) {
          const double xv = x[((b * c->h + i) * c->w + j) * c->cin + ci];
          const long q = ci / cig;
          for (long a = 0; a < c->kh; a++)
            for (long bb = 0; bb < c->kw; bb++) {
              const long yy = i * c->sh - c->pt + a, xx = j * c->sw - c->pl + bb;
              if (yy < 0 || yy >= ho || xx < 0 || xx >= wo) continue;
              for (long co = 0; co < cog; co++)
                acc[((b * ho + yy) * wo + xx) * c->cout + q * cog + co] +=
                    xv * f[((a * c->kw + bb) * c->cin + ci) * cog + co];
            }
        }
  for (long r = 0; r < ny; r++) y[r] = (float)(acc[r] + (bias ? bias[r % c->cout] : 0.0));
  free(acc);
}

static const char *const algo_names[] = {"auto", "flip", "phase", "col2im"};

/* Runs every algorithm on one case against the naive reference; returns the NHWC output of the
 * last one in *out (caller frees) for cross-checks. */
static void run_tconv_case(const tconv_case *c, unsigned seed, float **out) {
  const long ho = tconv_out(c->h, c->kh, c->sh, c->pt, c->pb, c->oph);
  const long wo = tconv_out(c->w, c->kw, c->sw, c->pl, c->pr, c->opw);
  const long nx = c->n * c->h * c->w * c->cin, nf = c->kh * c->kw * c->cin * (c->cout / c->groups);
  const long ny = c->n * ho * wo * c->cout;
  EG_CHECK_MSG(ho >= 1 && wo >= 1, "test case with an empty output (%ld x %ld)", ho, wo);
  float *x = eg_test_rand_buf(nx, seed), *f = eg_test_rand_buf(nf, seed + 1), *bias = eg_test_rand_buf(c->cout, seed + 2);
  float *ref = eg_test_nan_buf(ny), *y = NULL;
  for (int algo = EG_TRANSPOSE_CONV2D_AUTO; algo <= EG_TRANSPOSE_CONV2D_COL2IM; algo++)
    for (int variant = 0; variant < 3; variant++) { /* no bias; bias; bias with 64 KiB chunks */
      const int with_bias = variant > 0;
      const eg_transpose_conv2d_nhwc_params p = {
          .n = c->n, .h_in = c->h, .w_in = c->w, .c_in = c->cin, .h_out = ho, .w_out = wo,
          .c_out = c->cout, .k_h = c->kh, .k_w = c->kw, .stride = {c->sh, c->sw},
          .pad = {c->pt, c->pl}, .groups = c->groups, .algo = (eg_transpose_conv2d_algo)algo,
          .chunk_bytes = variant == 2 ? 65536 : 0};
      void *scratch = scratch_buf(eg_transpose_conv2d_nhwc_f32_scratch(&p));
      free(y);
      y = eg_test_nan_buf(ny);
      eg_transpose_conv2d_nhwc_f32(&p, x, f, with_bias ? bias : NULL, y, scratch);
      ref_tconv2d(c, ho, wo, x, f, with_bias ? bias : NULL, ref);
      char what[200];
      snprintf(what, sizeof what, "tconv2d n%ld c%ld %ldx%ld ->%ld k%ldx%ld s%ld,%ld "
               "p%ld,%ld,%ld,%ld op%ld,%ld g%ld algo %s (ran %s) bias%d chunk %lld", c->n, c->cin,
               c->h, c->w, c->cout, c->kh, c->kw, c->sh, c->sw, c->pt, c->pb, c->pl, c->pr,
               c->oph, c->opw, c->groups, algo_names[algo],
               algo_names[eg_transpose_conv2d_nhwc_f32_algo(&p)], with_bias,
               (long long)p.chunk_bytes);
      check_close(what, y, ref, ny);
      if (eg_transpose_conv2d_nhwc_f32_takes_filter_oi(&p)) {
        /* the forward weight as it is (each tap's block [c_out, c_in]), no Transpose */
        eg_transpose_conv2d_nhwc_params po = p;
        po.filter_oi = true;
        float *fo = eg_test_nan_buf(nf), *yo = eg_test_nan_buf(ny);
        for (long t = 0; t < c->kh * c->kw; t++)
          for (long ci = 0; ci < c->cin; ci++)
            for (long co = 0; co < c->cout; co++)
              fo[(t * c->cout + co) * c->cin + ci] = f[(t * c->cin + ci) * c->cout + co];
        EG_CHECK(eg_transpose_conv2d_nhwc_f32_algo(&po) == eg_transpose_conv2d_nhwc_f32_algo(&p));
        eg_transpose_conv2d_nhwc_f32(&po, x, fo, with_bias ? bias : NULL, yo, scratch);
        strncat(what, " filter_oi", sizeof what - strlen(what) - 1);
        check_close(what, yo, ref, ny);
        /* COL2IM gathers the same filter matrix from either layout: the same bits */
        if (eg_transpose_conv2d_nhwc_f32_algo(&p) == EG_TRANSPOSE_CONV2D_COL2IM)
          EG_CHECK_MSG(!memcmp(yo, y, sizeof(float) * (size_t)ny), "%s: not bit-identical to "
                       "the transposed filter's COL2IM", what);
        free(fo), free(yo);
      }
      if (algo == EG_TRANSPOSE_CONV2D_AUTO && eg_transpose_conv2d_nhwc_f32_takes_oihw(&p)) {
        /* the forward weight as PyTorch holds it: [c_in, c_out, kh, kw] (OIHW of the conv) */
        eg_transpose_conv2d_nhwc_params po = p;
        po.filter_oihw = true;
        void *s2 = scratch_buf(eg_transpose_conv2d_nhwc_f32_scratch(&po));
        float *fo = eg_test_nan_buf(nf), *yo = eg_test_nan_buf(ny);
        const long kk = c->kh * c->kw;
        for (long t = 0; t < kk; t++)
          for (long ci = 0; ci < c->cin; ci++)
            for (long co = 0; co < c->cout; co++)
              fo[(ci * c->cout + co) * kk + t] = f[(t * c->cin + ci) * c->cout + co];
        EG_CHECK(eg_transpose_conv2d_nhwc_f32_algo(&po) == EG_TRANSPOSE_CONV2D_COL2IM);
        eg_transpose_conv2d_nhwc_f32(&po, x, fo, with_bias ? bias : NULL, yo, s2);
        strncat(what, " filter_oihw", sizeof what - strlen(what) - 1);
        check_close(what, yo, ref, ny);
        free(fo), free(yo), free(s2);
      }
      free(scratch);
    }
  /* the last run had the bias (and small chunks) */
  *out = y;
  free(x), free(f), free(bias), free(ref);
}

static void test_tconv2d_naive(void) {
  static const tconv_case cases[] = {
      {2, 16, 6, 5, 8, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1},
      {1, 8, 7, 7, 4, 3, 3, 1, 1, 0, 2, 2, 0, 0, 0, 1},   /* asymmetric */
      {1, 6, 10, 9, 6, 3, 3, 1, 1, 4, 4, 3, 3, 0, 0, 1},  /* pads >= kernel: a crop */
      {2, 12, 5, 5, 18, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 3}, /* groups, stride 1 */
      {2, 12, 5, 4, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 2},  /* groups, stride 2 */
      {1, 64, 7, 7, 3, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1},  /* stem-like: cout 3 */
      {1, 5, 4, 4, 20, 1, 1, 2, 3, 0, 0, 0, 0, 1, 2, 1},  /* kernel < stride: empty phases */
      {1, 4, 3, 5, 17, 4, 2, 3, 2, 2, 0, 0, 1, 2, 1, 1},
      {2, 24, 20, 20, 16, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1},
      {1, 32, 48, 48, 8, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1},  /* FLIP: several chunks */
      {1, 8, 48, 48, 64, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 1},  /* COL2IM: several chunks */
      {1, 16, 40, 40, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}, /* PHASE on the ds shape */
      {2, 24, 9, 7, 40, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1},   /* pointwise FLIP */
      {2, 6, 7, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 6},     /* direct: depthwise, stride 1 */
      {2, 12, 5, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, 6},    /* direct: cig 2, stride 2 */
      {1, 5, 4, 4, 5, 5, 3, 3, 2, 2, 0, 1, 1, 2, 1, 5},     /* direct: stride 3, crop */
      {2, 48, 24, 24, 48, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 48}, /* direct, threaded */
      {2, 40, 6, 5, 40, 3, 3, 2, 2, 1, 0, 1, 0, 0, 0, 40},  /* direct: 16-channel blocks, tail */
      {1, 16, 4, 5, 16, 5, 4, 3, 2, 2, 1, 0, 1, 1, 0, 16},  /* direct: blocks, stride 3, crop */
      /* direct, stride 1: 4 pixels a block where every column tap is inside, edges one by one */
      {2, 40, 7, 13, 40, 5, 5, 1, 1, 2, 2, 2, 2, 0, 0, 40},
      {1, 32, 5, 11, 32, 3, 3, 1, 1, 1, 1, 0, 2, 0, 0, 32},  /* asymmetric */
      {1, 16, 3, 12, 16, 3, 5, 1, 1, 1, 1, 6, 5, 0, 0, 16},  /* pads past the kernel: a crop */
  };
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float *y;
    run_tconv_case(&cases[i], 200 + i, &y);
    free(y);
  }
}

/* ATen's transposed convolution through layout conversion, for every output_padding a stride
 * of 2 or 3 allows (the values conv backward derives), with symmetric padding. */
static void test_tconv2d_vs_nchw(void) {
  static const long shapes[][7] = {/* n, cin, h, cout, k, pad, groups */
                                   {2, 16, 5, 12, 3, 1, 1}, {1, 8, 6, 24, 4, 1, 1},
                                   {2, 6, 4, 9, 3, 0, 3},   {1, 32, 3, 16, 5, 2, 1}};
  for (unsigned k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
    for (long s = 1; s <= 3; s++)
      for (long oph = 0; oph < s; oph++)
        for (long opw = 0; opw < s; opw++) {
          const long *v = shapes[k];
          const tconv_case c = {v[0], v[1], v[2], v[2] + 1, v[3], v[4], v[4], s, s, v[5], v[5],
                                v[5], v[5], oph, opw, v[6]};
          const long ho = tconv_out(c.h, c.kh, s, c.pt, c.pb, oph);
          const long wo = tconv_out(c.w, c.kw, s, c.pl, c.pr, opw);
          if (ho < 1 || wo < 1) continue;
          float *y;
          run_tconv_case(&c, 300 + (unsigned)(k * 100 + s * 10 + oph * 3 + opw), &y);
          /* Regenerate the inputs exactly as run_tconv_case did. */
          const unsigned seed = 300 + (unsigned)(k * 100 + s * 10 + oph * 3 + opw);
          const long cog = c.cout / c.groups, nx = c.n * c.h * c.w * c.cin;
          const long nf = c.kh * c.kw * c.cin * cog, ny = c.n * ho * wo * c.cout;
          float *x = eg_test_rand_buf(nx, seed), *f = eg_test_rand_buf(nf, seed + 1);
          float *bias = eg_test_rand_buf(c.cout, seed + 2), *xc = eg_test_nan_buf(nx), *fc = eg_test_nan_buf(nf);
          float *yc = eg_test_nan_buf(ny), *ref = eg_test_nan_buf(ny);
          nhwc_to_nchw(x, c.n, c.h, c.w, c.cin, xc);
          hw_last2_to_first2(f, c.kh, c.kw, c.cin, cog, false, fc); /* -> [Cin, Cout/g, k, k] */
          const eg_conv2d_params q = {.n = c.n, .c_in = c.cin, .h_in = c.h, .w_in = c.w,
                                      .c_out = c.cout, .h_out = ho, .w_out = wo, .k_h = c.kh,
                                      .k_w = c.kw, .stride = {s, s}, .padding = {c.pt, c.pl},
                                      .dilation = {1, 1}, .output_padding = {oph, opw},
                                      .groups = c.groups, .transposed = true};
          void *sc = scratch_buf(eg_convolution_nchw_f32_scratch(&q));
          eg_convolution_nchw_f32(&q, xc, fc, bias, yc, sc);
          nchw_to_nhwc(yc, c.n, c.cout, ho, wo, ref);
          char what[96];
          snprintf(what, sizeof what, "tconv2d vs nchw shape %u stride %ld op %ld,%ld", k, s,
                   oph, opw);
          check_close(what, y, ref, ny);
          free(y), free(x), free(f), free(bias), free(xc), free(fc), free(yc), free(ref),
              free(sc);
        }
}

/* Asymmetric pad_amount [p, p - op] with output_padding 0 (how the NPU lowering describes a
 * grouped TransposeConv2d with output_padding op) against ATen's transposed convolution with
 * symmetric padding p and output_padding op: every algorithm (run_tconv_case) equals the NCHW
 * reference (no pieces here: they start threads of their own, which qemu-user cannot run; the
 * pieces are unit/test_htp_tconv_pieces'). Depthwise (groups == channels, with a multiplier), grouped
 * and ungrouped, strides 2 and 3, op in H and W separately. */
static void test_tconv2d_asymmetric_vs_nchw(void) {
  static const long cases[][11] = {/* n, cin, h, w, cout, k, s, p, oph, opw, groups */
                                   {2, 4, 4, 4, 4, 3, 2, 1, 1, 1, 4},
                                   {1, 6, 5, 3, 12, 3, 2, 1, 1, 0, 6},
                                   {2, 6, 3, 4, 9, 5, 3, 2, 2, 1, 3},
                                   {1, 8, 4, 5, 8, 3, 2, 1, 0, 1, 2},
                                   {2, 4, 3, 3, 6, 3, 2, 1, 1, 1, 1}};
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const long *v = cases[k], s = v[6], p = v[7];
    const tconv_case c = {v[0], v[1], v[2], v[3], v[4], v[5], v[5], s, s, p, p - v[8], p,
                          p - v[9], 0, 0, v[10]};
    const long ho = tconv_out(c.h, c.kh, s, c.pt, c.pb, 0);
    const long wo = tconv_out(c.w, c.kw, s, c.pl, c.pr, 0);
    EG_CHECK(ho == tconv_out(c.h, c.kh, s, p, p, v[8]) &&
             wo == tconv_out(c.w, c.kw, s, p, p, v[9])); /* ATen's output size */
    float *y;
    const unsigned seed = 900 + 10 * k;
    run_tconv_case(&c, seed, &y); /* every algorithm against the naive scatter */
    const long cog = c.cout / c.groups, nx = c.n * c.h * c.w * c.cin;
    const long nf = c.kh * c.kw * c.cin * cog, ny = c.n * ho * wo * c.cout;
    float *x = eg_test_rand_buf(nx, seed), *f = eg_test_rand_buf(nf, seed + 1);
    float *bias = eg_test_rand_buf(c.cout, seed + 2), *xc = eg_test_nan_buf(nx);
    float *fc = eg_test_nan_buf(nf), *yc = eg_test_nan_buf(ny), *ref = eg_test_nan_buf(ny);
    nhwc_to_nchw(x, c.n, c.h, c.w, c.cin, xc);
    hw_last2_to_first2(f, c.kh, c.kw, c.cin, cog, false, fc); /* -> [Cin, Cout/g, k, k] */
    const eg_conv2d_params q = {.n = c.n, .c_in = c.cin, .h_in = c.h, .w_in = c.w,
                                .c_out = c.cout, .h_out = ho, .w_out = wo, .k_h = c.kh,
                                .k_w = c.kw, .stride = {s, s}, .padding = {p, p},
                                .dilation = {1, 1}, .output_padding = {v[8], v[9]},
                                .groups = c.groups, .transposed = true};
    void *sc = scratch_buf(eg_convolution_nchw_f32_scratch(&q));
    eg_convolution_nchw_f32(&q, xc, fc, bias, yc, sc);
    nchw_to_nhwc(yc, c.n, c.cout, ho, wo, ref);
    char what[96];
    snprintf(what, sizeof what, "tconv2d asymmetric vs nchw case %u", k);
    check_close(what, y, ref, ny);
    free(y), free(x), free(f), free(bias), free(xc), free(fc), free(yc), free(ref), free(sc);
  }
}

/* AUTO's choices (the benchmark-driven rules in transpose_conv2d_nhwc_f32.c). */
static void test_tconv2d_pick(void) {
  eg_transpose_conv2d_nhwc_params p = {.n = 8, .h_in = 56, .w_in = 56, .c_in = 64, .h_out = 56,
                              .w_out = 56, .c_out = 64, .k_h = 3, .k_w = 3, .stride = {1, 1},
                              .pad = {1, 1}, .groups = 1};
  EG_CHECK(eg_transpose_conv2d_nhwc_f32_pick(&p, 1) == EG_TRANSPOSE_CONV2D_FLIP);
  EG_CHECK(eg_transpose_conv2d_nhwc_f32_pick(&p, 2) == EG_TRANSPOSE_CONV2D_COL2IM);
  p.h_in = p.w_in = p.h_out = p.w_out = 16; /* a trainable filter on small planes: WINOGRAD */
  EG_CHECK(eg_transpose_conv2d_nhwc_f32_pick(&p, 1) == EG_TRANSPOSE_CONV2D_WINOGRAD);
  p.h_in = p.w_in = p.h_out = p.w_out = 8; /* too few tiles */
  EG_CHECK(eg_transpose_conv2d_nhwc_f32_pick(&p, 1) == EG_TRANSPOSE_CONV2D_FLIP);
  p.h_in = p.w_in = p.h_out = p.w_out = 56;
  p.stride[0] = p.stride[1] = 2;
  EG_CHECK(eg_transpose_conv2d_nhwc_f32_algo(&p) == EG_TRANSPOSE_CONV2D_PHASE);
  p.c_out = 3; /* too narrow for PHASE's sgemm */
  EG_CHECK(eg_transpose_conv2d_nhwc_f32_algo(&p) == EG_TRANSPOSE_CONV2D_COL2IM);
  p.algo = EG_TRANSPOSE_CONV2D_FLIP; /* not applicable with stride 2: falls back to AUTO's choice */
  EG_CHECK(eg_transpose_conv2d_nhwc_f32_algo(&p) == EG_TRANSPOSE_CONV2D_COL2IM);
  p = (eg_transpose_conv2d_nhwc_params){.n = 8, .h_in = 112, .w_in = 112, .c_in = 64, .h_out = 112,
                               .w_out = 112, .c_out = 32, .k_h = 1, .k_w = 1, .stride = {1, 1},
                               .groups = 1};
  EG_CHECK(eg_transpose_conv2d_nhwc_f32_pick(&p, 2) == EG_TRANSPOSE_CONV2D_FLIP); /* 1x1: one GEMM */
  p.groups = 2;
  p.stride[0] = 2;
  p.algo = EG_TRANSPOSE_CONV2D_PHASE; /* groups > 1: no PHASE */
  EG_CHECK(eg_transpose_conv2d_nhwc_f32_algo(&p) == EG_TRANSPOSE_CONV2D_COL2IM);
}

/* ---- Transpose ---- */

static void ref_transpose(int rank, const int64_t *dims, const uint32_t *perm, const float *x,
                          float *y) {
  int64_t n = 1, od[8], idx[8] = {0};
  for (int i = 0; i < rank; i++) n *= dims[i];
  for (int i = 0; i < rank; i++) od[i] = dims[perm[i]];
  for (int64_t o = 0; o < n; o++) { /* idx: output multi-index of o */
    int64_t in_idx[8], off = 0;
    for (int i = 0; i < rank; i++) in_idx[perm[i]] = idx[i];
    for (int i = 0; i < rank; i++) off = off * dims[i] + in_idx[i];
    y[o] = x[off];
    for (int i = rank - 1; i >= 0; i--) {
      if (++idx[i] < od[i]) break;
      idx[i] = 0;
    }
  }
}

static void test_transpose(void) {
  static const struct {
    int rank;
    int64_t dims[6];
    uint32_t perm[6];
  } cases[] = {
      {4, {3, 3, 64, 48}, {0, 1, 3, 2}},  /* HWIO -> HWOI */
      {4, {2, 5, 7, 3}, {0, 3, 1, 2}},    /* NHWC -> NCHW */
      {4, {2, 3, 5, 7}, {0, 2, 3, 1}},    /* NCHW -> NHWC */
      {2, {37, 45}, {1, 0}},
      {3, {4, 1, 6}, {2, 1, 0}},
      {5, {2, 3, 1, 4, 5}, {4, 0, 2, 3, 1}},
      {3, {5, 6, 7}, {0, 1, 2}},          /* identity */
      {3, {5, 6, 7}, {1, 0, 2}},          /* innermost kept */
      {4, {3, 4, 5, 6}, {1, 2, 0, 3}},    /* innermost kept: the weight gradient's NHWC -> HWNC */
      {5, {2, 3, 4, 5, 3}, {3, 0, 2, 1, 4}}, /* innermost kept, runs inside batch dims */
      {1, {9}, {0}},
      {6, {2, 3, 2, 3, 2, 3}, {5, 3, 1, 4, 2, 0}},
  };
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int64_t n = 1;
    for (int i = 0; i < cases[k].rank; i++) n *= cases[k].dims[i];
    float *x = eg_test_rand_buf(n, 400 + k), *y = eg_test_nan_buf(n), *ref = eg_test_nan_buf(n);
    eg_transpose_f32(cases[k].rank, cases[k].dims, cases[k].perm, x, y);
    ref_transpose(cases[k].rank, cases[k].dims, cases[k].perm, x, ref);
    EG_CHECK_MSG(memcmp(y, ref, sizeof(float) * (size_t)n) == 0, "transpose case %u", k);
    free(x), free(y), free(ref);
  }
}

/* ---- pools ---- */

static void ref_pool(const eg_pool2d_nhwc_params *p, bool is_max, const float *x, float *y) {
  for (long b = 0; b < p->n; b++)
    for (long i = 0; i < p->h_out; i++)
      for (long j = 0; j < p->w_out; j++)
        for (long c = 0; c < p->c; c++) {
          double acc = is_max ? -INFINITY : 0.0;
          long cnt = 0, cnt_pad = 0;
          for (long a = 0; a < p->k[0]; a++)
            for (long bb = 0; bb < p->k[1]; bb++) {
              const long yy = i * p->stride[0] - p->pad[0][0] + a;
              const long xx = j * p->stride[1] - p->pad[1][0] + bb;
              if (yy >= -p->pad[0][0] && yy < p->h_in + p->pad[0][1] && xx >= -p->pad[1][0] &&
                  xx < p->w_in + p->pad[1][1])
                cnt_pad++;
              if (yy < 0 || yy >= p->h_in || xx < 0 || xx >= p->w_in) continue;
              const double v = x[((b * p->h_in + yy) * p->w_in + xx) * p->c + c];
              cnt++;
              if (is_max) acc = v > acc ? v : acc;
              else acc += v;
            }
          y[((b * p->h_out + i) * p->w_out + j) * p->c + c] =
              (float)(is_max ? acc : acc / (double)(p->count_pad ? cnt_pad : cnt));
        }
}

static void test_pools(void) {
  static const long cases[][10] = {/* n, h, w, c, k, s, pt, pb, ceil, count_pad */
                                   {2, 8, 8, 5, 2, 2, 0, 0, 0, 0}, {1, 9, 7, 3, 3, 2, 1, 1, 0, 1},
                                   {2, 9, 9, 4, 3, 2, 1, 1, 1, 0}, {1, 10, 10, 2, 3, 3, 1, 1, 1, 1}, {1, 12, 12, 2, 3, 3, 1, 2, 1, 1},
                                   {1, 7, 6, 16, 3, 1, 1, 1, 0, 0}, {1, 5, 5, 3, 5, 1, 2, 0, 0, 1}};
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const long *v = cases[k];
    eg_pool2d_nhwc_params p = {.n = v[0], .h_in = v[1], .w_in = v[2], .c = v[3],
                               .k = {v[4], v[4]}, .stride = {v[5], v[5]},
                               .pad = {{v[6], v[7]}, {v[6], v[7]}}, .count_pad = v[9]};
    for (int d = 0; d < 2; d++) {
      const long span = (d ? p.w_in : p.h_in) + v[6] + v[7] - v[4];
      const long o = (v[8] ? span + v[5] - 1 : span) / v[5] + 1;
      if (d) p.w_out = o; else p.h_out = o;
    }
    const long nx = p.n * p.h_in * p.w_in * p.c, ny = p.n * p.h_out * p.w_out * p.c;
    float *x = eg_test_rand_buf(nx, 500 + k), *y = eg_test_nan_buf(ny), *ref = eg_test_nan_buf(ny);
    eg_max_pool2d_nhwc_f32(&p, x, y);
    ref_pool(&p, true, x, ref);
    check_close("max pool", y, ref, ny);
    eg_avg_pool2d_nhwc_f32(&p, x, y);
    ref_pool(&p, false, x, ref);
    check_close("avg pool", y, ref, ny);
    if (v[6] == v[7]) { /* symmetric: ATen's NCHW kernels agree */
      float *xc = eg_test_nan_buf(nx), *yc = eg_test_nan_buf(ny);
      int64_t *idx = malloc(sizeof(int64_t) * (size_t)ny);
      nhwc_to_nchw(x, p.n, p.h_in, p.w_in, p.c, xc);
      const eg_max_pool2d_params mp = {.planes = p.n * p.c, .h_in = p.h_in, .w_in = p.w_in,
                                       .h_out = p.h_out, .w_out = p.w_out, .kernel = {v[4], v[4]},
                                       .stride = {v[5], v[5]}, .padding = {v[6], v[6]},
                                       .dilation = {1, 1}};
      eg_max_pool2d_nchw_f32(&mp, xc, yc, idx);
      nchw_to_nhwc(yc, p.n, p.c, p.h_out, p.w_out, ref);
      eg_max_pool2d_nhwc_f32(&p, x, y);
      check_close("max pool vs nchw", y, ref, ny);
      const eg_avg_pool2d_params ap = {.planes = p.n * p.c, .h_in = p.h_in, .w_in = p.w_in,
                                       .h_out = p.h_out, .w_out = p.w_out, .kernel = {v[4], v[4]},
                                       .stride = {v[5], v[5]}, .padding = {v[6], v[6]},
                                       .count_include_pad = v[9]};
      eg_avg_pool2d_nchw_f32(&ap, xc, yc);
      nchw_to_nhwc(yc, p.n, p.c, p.h_out, p.w_out, ref);
      eg_avg_pool2d_nhwc_f32(&p, x, y);
      check_close("avg pool vs nchw", y, ref, ny);
      /* NaNs win a max window, as in PyTorch: every 13th input a NaN, every 7th -inf */
      for (long e = 0; e < nx; e++) x[e] = e % 13 == 5 ? NAN : e % 7 == 3 ? -INFINITY : x[e];
      nhwc_to_nchw(x, p.n, p.h_in, p.w_in, p.c, xc);
      eg_max_pool2d_nchw_f32(&mp, xc, yc, idx);
      nchw_to_nhwc(yc, p.n, p.c, p.h_out, p.w_out, ref);
      eg_max_pool2d_nhwc_f32(&p, x, y);
      check_close("max pool with NaN vs nchw", y, ref, ny);
      free(xc), free(yc), free(idx);
    }
    free(x), free(y), free(ref);
  }
}

/* ---- reductions ---- */

static void test_reduce(void) {
  static const struct {
    int rank;
    int64_t dims[4];
    uint32_t mask;
  } cases[] = {{4, {4, 5, 6, 7}, 0x7}, {4, {4, 5, 6, 7}, 0x8}, {4, {4, 5, 6, 7}, 0xF},
               {4, {4, 5, 6, 7}, 0x5}, {4, {4, 5, 6, 7}, 0xA}, {3, {3, 1, 8}, 0x2},
               {2, {9, 11}, 0x1},      {1, {13}, 0x1},         {3, {2, 3, 4}, 0x0}};
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (int mean = 0; mean < 2; mean++) {
      eg_reduce_nhwc_params p = {.rank = cases[k].rank, .mask = cases[k].mask, .mean = mean};
      int64_t n = 1, n_out = 1, od[4];
      for (int i = 0; i < p.rank; i++) {
        p.dims[i] = cases[k].dims[i];
        n *= p.dims[i];
        od[i] = (p.mask >> i & 1u) ? 1 : p.dims[i];
        n_out *= od[i];
      }
      float *x = eg_test_rand_buf(n, 600 + k), *y = eg_test_nan_buf(n_out), *ref = eg_test_nan_buf(n_out);
      double *acc = calloc((size_t)(n_out > 0 ? n_out : 1), sizeof(double));
      for (int64_t e = 0; e < n; e++) { /* map input index to the kept-dims output index */
        int64_t r = e, o = 0, mul = 1;
        for (int i = p.rank - 1; i >= 0; i--) {
          const int64_t idx = r % p.dims[i];
          r /= p.dims[i];
          if (!(p.mask >> i & 1u)) {
            o += idx * mul;
            mul *= p.dims[i];
          }
        }
        acc[o] += x[e];
      }
      for (int64_t o = 0; o < n_out; o++) ref[o] = (float)(acc[o] * (mean ? (double)n_out / n : 1.0));
      void *scratch = scratch_buf(eg_reduce_nhwc_f32_scratch(&p));
      eg_reduce_nhwc_f32(&p, x, y, scratch);
      check_close(mean ? "reduce mean" : "reduce sum", y, ref, n_out);
      free(x), free(y), free(ref), free(acc), free(scratch);
    }
}

/* ---- elementwise ---- */

/* Index of output element o in an input right-aligned with dims `in` (1 = broadcast). */
static int64_t bcast_index(const eg_ew_shape *s, int k, int64_t o) {
  int64_t off = 0, mul = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    const int64_t idx = o % s->out[i];
    o /= s->out[i];
    if (s->in[k][i] != 1) off += idx * mul;
    mul *= s->in[k][i];
  }
  return off;
}

static void test_elementwise_broadcast(void) {
  static const struct {
    int ra, rb;
    int64_t a[4], b[4];
  } cases[] = {{4, 4, {2, 3, 4, 5}, {2, 3, 4, 5}}, {4, 1, {2, 3, 4, 5}, {5}},
               {4, 4, {2, 3, 4, 5}, {2, 1, 1, 5}}, {4, 4, {2, 1, 4, 1}, {1, 3, 1, 5}},
               {2, 3, {4, 1}, {2, 1, 6}},          {1, 1, {7}, {1}},
               {0, 3, {0}, {2, 3, 4}},             {3, 3, {3, 1, 5}, {3, 4, 5}}};
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const int ranks[3] = {cases[k].ra, cases[k].rb, cases[k].rb};
    const int64_t *dims[3] = {cases[k].a, cases[k].b, cases[k].b};
    eg_ew_shape s;
    EG_CHECK(eg_ew_shape_init(&s, 2, ranks, dims));
    int64_t na = 1, nb = 1, n = 1;
    for (int i = 0; i < cases[k].ra; i++) na *= cases[k].a[i];
    for (int i = 0; i < cases[k].rb; i++) nb *= cases[k].b[i];
    for (int i = 0; i < s.rank; i++) n *= s.out[i];
    float *a = eg_test_rand_buf(na, 700 + k), *b = eg_test_rand_buf(nb, 710 + k), *y = eg_test_nan_buf(n), *ref = eg_test_nan_buf(n);
    for (int64_t e = 0; e < nb; e++) b[e] += b[e] >= 0 ? 0.5f : -0.5f; /* keep divisors away from 0 */
    for (int op = EG_EW_ADD; op <= EG_EW_DIV; op++) {
      const void *in[2] = {a, b};
      eg_elementwise_nhwc_f32((eg_ew_op)op, &s, in, y);
      for (int64_t o = 0; o < n; o++) {
        const float av = a[bcast_index(&s, 0, o)], bv = b[bcast_index(&s, 1, o)];
        ref[o] = op == EG_EW_ADD ? av + bv : op == EG_EW_SUB ? av - bv : op == EG_EW_MUL ? av * bv : av / bv;
      }
      check_close("broadcast arith", y, ref, n);
    }
    uint8_t *mask = malloc((size_t)(n > 0 ? n : 1));
    const void *gin[2] = {a, b};
    for (int op = EG_EW_GREATER; op <= EG_EW_LESS_EQUAL; op++) {
      eg_elementwise_nhwc_f32((eg_ew_op)op, &s, gin, mask);
      bool ok = true;
      for (int64_t o = 0; o < n; o++) {
        const float av = a[bcast_index(&s, 0, o)], bv = b[bcast_index(&s, 1, o)];
        ok &= mask[o] == (op == EG_EW_GREATER ? av > bv : op == EG_EW_GREATER_EQUAL ? av >= bv
                                                                                     : av <= bv);
      }
      EG_CHECK_MSG(ok, "comparison %d case %u", op, k);
    }
    /* Select with the condition broadcast like `a`, true values `a`, false values `b`. */
    eg_ew_shape s3;
    const int r3[3] = {cases[k].ra, cases[k].ra, cases[k].rb};
    const int64_t *d3[3] = {cases[k].a, cases[k].a, cases[k].b};
    EG_CHECK(eg_ew_shape_init(&s3, 3, r3, d3));
    uint8_t *cond = malloc((size_t)(na > 0 ? na : 1));
    for (int64_t e = 0; e < na; e++) cond[e] = a[e] > 0.0f;
    const void *sin[3] = {cond, a, b};
    eg_elementwise_nhwc_f32(EG_EW_SELECT, &s3, sin, y);
    for (int64_t o = 0; o < n; o++)
      ref[o] = cond[bcast_index(&s3, 0, o)] ? a[bcast_index(&s3, 1, o)] : b[bcast_index(&s3, 2, o)];
    check_close("select", y, ref, n);
    free(a), free(b), free(y), free(ref), free(mask), free(cond);
  }
  eg_ew_shape s;
  const int ranks[2] = {2, 2};
  const int64_t d0[2] = {3, 4}, d1[2] = {2, 4}, *dims[2] = {d0, d1};
  EG_CHECK(!eg_ew_shape_init(&s, 2, ranks, dims));
}

/* Greater / GreaterEqual / LessEqual on every pair of special values (NaN, +-inf, +-0, the
 * smallest subnormal, equal finite values), in each of the kernel's row forms: both operands
 * streaming, b a scalar, a a scalar, and strided (both broadcast along the row). */
static void test_comparisons(void) {
  enum { V = 10 };
  const float v[V] = {NAN, -INFINITY, -1.0f, -0.0f, 0.0f, 1e-45f, -1e-45f, 6.0f, 5.9999995f,
                      INFINITY};
  float a[V * V], b[V * V];
  for (int i = 0; i < V; i++)
    for (int j = 0; j < V; j++) a[i * V + j] = v[i], b[i * V + j] = v[j];
  /* {rank a, rank b, dims a, dims b, element of a / b for output (i, j)} */
  static const struct {
    int ra, rb;
    int64_t da[3], db[3];
    bool a_full, b_full; /* the operand holds all V*V pairs (else just the V values) */
  } forms[] = {{2, 2, {V, V}, {V, V}, true, true},   /* both streaming */
               {2, 2, {V, 1}, {1, V}, false, false}, /* a a scalar per row, b streaming */
               {2, 2, {1, V}, {V, 1}, false, false}, /* a streaming, b a scalar per row */
               {3, 3, {V, 1, 1}, {1, V, 1}, false, false}}; /* rows of one: strided */
  for (unsigned f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    const int ranks[2] = {forms[f].ra, forms[f].rb};
    const int64_t *dims[2] = {forms[f].da, forms[f].db};
    eg_ew_shape s;
    EG_CHECK(eg_ew_shape_init(&s, 2, ranks, dims));
    /* operand buffers: all pairs, or the V values along the operand's non-1 dim */
    const float *pa = forms[f].a_full ? a : v, *pb = forms[f].b_full ? b : v;
    const void *in[2] = {pa, pb};
    const bool swap = f == 2; /* form 2 puts v along b's rows: output (i, j) is (v[j], v[i]) */
    for (int op = EG_EW_GREATER; op <= EG_EW_LESS_EQUAL; op++) {
      uint8_t y[V * V];
      memset(y, 0xAA, sizeof y);
      eg_elementwise_nhwc_f32((eg_ew_op)op, &s, in, y);
      bool ok = true;
      for (int i = 0; i < V; i++)
        for (int j = 0; j < V; j++) {
          const float x = swap ? v[j] : v[i], t = swap ? v[i] : v[j];
          const bool want = op == EG_EW_GREATER ? x > t : op == EG_EW_GREATER_EQUAL ? x >= t
                                                                                     : x <= t;
          ok &= y[i * V + j] == (uint8_t)want;
        }
      EG_CHECK_MSG(ok, "comparison %d form %u", op, f);
      if (op == EG_EW_LESS_EQUAL && f == 1) {
        /* spot values written out: -0 <= 0 and 0 <= -0, NaN never, -inf <= -inf */
        EG_CHECK(y[3 * V + 4] == 1 && y[4 * V + 3] == 1 && y[0 * V + 0] == 0 &&
                 y[4 * V + 0] == 0 && y[1 * V + 1] == 1 && y[5 * V + 4] == 0 &&
                 y[6 * V + 4] == 1 && y[8 * V + 7] == 1 && y[7 * V + 8] == 0);
      }
      if (op == EG_EW_GREATER_EQUAL && f == 1)
        EG_CHECK(y[7 * V + 7] == 1 && y[9 * V + 9] == 1 && y[0 * V + 9] == 0 &&
                 y[9 * V + 0] == 0 && y[3 * V + 4] == 1 && y[8 * V + 7] == 0);
      if (op == EG_EW_GREATER && f == 1)
        EG_CHECK(y[4 * V + 3] == 0 && y[5 * V + 4] == 1 && y[7 * V + 7] == 0);
    }
  }
}

static void test_unary_and_cast(void) {
  enum { N = 1000 };
  float *x = eg_test_rand_buf(N, 800), *y = eg_test_nan_buf(N);
  for (int i = 0; i < N; i++) x[i] *= 6.0f;
  x[0] = NAN;
  for (int op = EG_UNARY_NEG; op <= EG_UNARY_TANH; op++) {
    eg_unary_nhwc_f32((eg_unary_op)op, N, x, y, -1.5f, 2.0f);
    bool ok = true;
    for (int i = 1; i < N; i++) {
      const double v = x[i];
      const double want = op == EG_UNARY_NEG ? -v : op == EG_UNARY_RELU ? (v < 0 ? 0 : v)
                          : op == EG_UNARY_RELU_MIN_MAX ? (v < -1.5 ? -1.5 : v > 2.0 ? 2.0 : v)
                          : op == EG_UNARY_SIGMOID ? 1.0 / (1.0 + exp(-v)) : tanh(v);
      ok &= fabs(y[i] - want) <= 1e-6 + 1e-6 * fabs(want);
    }
    EG_CHECK_MSG(ok, "unary op %d", op);
    EG_CHECK_MSG(isnan(y[0]), "unary op %d keeps NaN", op);
  }
  for (int i = 0; i < N; i++) x[i] = fabsf(x[i]) + 1e-3f; /* Rsqrt: positive inputs */
  eg_unary_nhwc_f32(EG_UNARY_RSQRT, N, x, y, 0.0f, 0.0f);
  bool rs_ok = true;
  for (int i = 1; i < N; i++) rs_ok &= y[i] == (float)(1.0 / sqrt((double)x[i]));
  rs_ok &= isnan(y[0]); /* x[0] is NaN */
  EG_CHECK_MSG(rs_ok, "rsqrt: rounded once from double");
  const float f[6] = {-2.7f, -0.5f, 0.0f, 3.9f, 1e10f, NAN};
  int32_t i32[6];
  uint8_t u8[6], b8[6];
  float back[6];
  eg_cast_nhwc(6, EG_CAST_F32, f, EG_CAST_I32, i32);
  EG_CHECK(i32[0] == -2 && i32[1] == 0 && i32[3] == 3 && i32[4] == INT32_MAX && i32[5] == 0);
  eg_cast_nhwc(6, EG_CAST_F32, f, EG_CAST_U8, u8);
  EG_CHECK(u8[0] == 0 && u8[3] == 3 && u8[4] == 255);
  eg_cast_nhwc(6, EG_CAST_F32, f, EG_CAST_BOOL, b8);
  EG_CHECK(b8[0] == 1 && b8[2] == 0 && b8[5] == 1);
  eg_cast_nhwc(6, EG_CAST_I32, i32, EG_CAST_F32, back);
  EG_CHECK(back[0] == -2.0f && back[3] == 3.0f);
  free(x), free(y);
}

/* ---- matrix products ---- */

static void test_fully_connected_and_matmul(void) {
  const long m = 7, k = 13, units = 5;
  float *x = eg_test_rand_buf(m * k, 900), *w = eg_test_rand_buf(units * k, 901), *bias = eg_test_rand_buf(units, 902);
  float *y = eg_test_nan_buf(m * units), *ref = eg_test_nan_buf(m * units);
  eg_fully_connected_nhwc_f32(m, k, units, x, w, bias, y);
  for (long i = 0; i < m; i++)
    for (long u = 0; u < units; u++) {
      double s = bias[u];
      for (long e = 0; e < k; e++) s += (double)x[i * k + e] * w[u * k + e];
      ref[i * units + u] = (float)s;
    }
  check_close("fully connected", y, ref, m * units);
  free(x), free(w), free(bias), free(y), free(ref);
  /* MatMul: a [2, 1, m, kk] (maybe transposed), b [3, kk, p] -> [2, 3, m, p]. */
  const long mm = 4, kk = 6, p = 5;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) {
      float *a = eg_test_rand_buf(2 * mm * kk, 910), *b = eg_test_rand_buf(3 * kk * p, 911);
      float *bi = eg_test_rand_buf(p, 912), *o = eg_test_nan_buf(6 * mm * p), *r = eg_test_nan_buf(6 * mm * p);
      const eg_matmul_nhwc_params q = {.batch_rank = 2, .batch_a = {2, 1}, .batch_b = {1, 3},
                                       .batch_out = {2, 3}, .m = mm, .k = kk, .p = p,
                                       .trans_a = ta, .trans_b = tb};
      eg_matmul_nhwc_f32(&q, a, b, bi, o);
      for (long b0 = 0; b0 < 2; b0++)
        for (long b1 = 0; b1 < 3; b1++)
          for (long i = 0; i < mm; i++)
            for (long j = 0; j < p; j++) {
              double s = bi[j];
              for (long e = 0; e < kk; e++) {
                const float av = ta ? a[b0 * mm * kk + e * mm + i] : a[b0 * mm * kk + i * kk + e];
                const float bv = tb ? b[b1 * kk * p + j * kk + e] : b[b1 * kk * p + e * p + j];
                s += (double)av * bv;
              }
              r[((b0 * 3 + b1) * mm + i) * p + j] = (float)s;
            }
      check_close("matmul", o, r, 6 * mm * p);
      free(a), free(b), free(bi), free(o), free(r);
    }
}

/* ---- log softmax, concat ---- */

static void test_log_softmax(void) {
  static const long cases[][3] = {{6, 10, 1}, {3, 7, 5}, {1, 1000, 1}, {4, 1, 3}};
  for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const long outer = cases[k][0], axis = cases[k][1], inner = cases[k][2], n = outer * axis * inner;
    float *x = eg_test_rand_buf(n, 1000 + k), *y = eg_test_nan_buf(n), *ref = eg_test_nan_buf(n), *xs = eg_test_nan_buf(n);
    for (long i = 0; i < n; i++) x[i] *= 20.0f;
    eg_log_softmax_nhwc_f32(outer, axis, inner, 1.0f, x, y);
    eg_log_softmax_f32(x, ref, outer, axis, inner);
    check_close("log_softmax vs cpu kernel", y, ref, n);
    for (long i = 0; i < n; i++) xs[i] = 0.5f * x[i]; /* beta scales the logits */
    eg_log_softmax_nhwc_f32(outer, axis, inner, 0.5f, x, y);
    eg_log_softmax_f32(xs, ref, outer, axis, inner);
    check_close("log_softmax beta", y, ref, n);
    free(x), free(y), free(ref), free(xs);
  }
}

static void test_concat(void) {
  /* [2, a_k, 3] for a = 1, 4, 2 along axis 1. */
  const int64_t sizes[3] = {1, 4, 2};
  float *a = eg_test_rand_buf(2 * 1 * 3, 1100), *b = eg_test_rand_buf(2 * 4 * 3, 1101), *c = eg_test_rand_buf(2 * 2 * 3, 1102);
  const float *xs[3] = {a, b, c};
  float y[2 * 7 * 3], ref[2 * 7 * 3];
  eg_concat_nhwc_f32(3, xs, sizes, 2, 3, y);
  for (int o = 0; o < 2; o++)
    for (int j = 0; j < 7; j++)
      for (int i = 0; i < 3; i++) {
        const int k = j < 1 ? 0 : j < 5 ? 1 : 2, jj = j < 1 ? j : j < 5 ? j - 1 : j - 5;
        ref[(o * 7 + j) * 3 + i] = xs[k][(o * sizes[k] + jj) * 3 + i];
      }
  EG_CHECK(memcmp(y, ref, sizeof y) == 0);
  free(a), free(b), free(c);
}

/* ---- normalization ---- */

static void test_batchnorm(void) {
  const long rows = 30, c = 7;
  float *x = eg_test_rand_buf(rows * c, 1200), *w = eg_test_rand_buf(c, 1201), *b = eg_test_rand_buf(c, 1202);
  float *y = eg_test_nan_buf(rows * c), *ref = eg_test_nan_buf(rows * c);
  eg_batch_norm_nhwc_f32(rows, c, x, w, b, y);
  for (long i = 0; i < rows * c; i++) ref[i] = x[i] * w[i % c] + b[i % c];
  check_close("batchnorm", y, ref, rows * c);
  free(x), free(w), free(b), free(y), free(ref);
}

/* GroupNorm and InstanceNorm ACROSS_SPATIAL / ACROSS_ALL against the NCHW group-norm kernel. */
static void test_group_and_instance_norm(void) {
  const long n = 3, h = 5, w = 4, c = 12, hw = h * w, total = n * hw * c;
  float *x = eg_test_rand_buf(total, 1300), *g = eg_test_rand_buf(c, 1301), *b = eg_test_rand_buf(c, 1302);
  for (long i = 0; i < total; i++) x[i] = 3.0f * x[i] + 1.0f;
  float *xc = eg_test_nan_buf(total), *yc = eg_test_nan_buf(total), *ref = eg_test_nan_buf(total), *y = eg_test_nan_buf(total);
  float mean[3 * 12], rstd[3 * 12];
  nhwc_to_nchw(x, n, h, w, c, xc);
  static const long groups[] = {1, 3, 12};
  for (unsigned k = 0; k < 3; k++) {
    const eg_group_norm_params q = {.n = n, .c = c, .hw = hw, .groups = groups[k], .eps = 1e-5};
    const eg_group_norm_io io = {.x = xc, .weight = g, .bias = b, .y = yc, .mean = mean, .rstd = rstd};
    eg_group_norm_nchw_f32(&q, &io);
    nchw_to_nhwc(yc, n, c, h, w, ref);
    const eg_norm_nhwc_params p = {.batch = n, .spatial = hw, .c = c, .groups = groups[k],
                                   .normalize_variance = true, .epsilon = 1e-5f};
    void *scratch = scratch_buf(eg_norm_nhwc_f32_scratch(&p));
    eg_norm_nhwc_f32(&p, x, g, b, y, scratch);
    check_close("group norm vs nchw", y, ref, total);
    free(scratch);
  }
  /* ACROSS_CHANNEL, RMS and normalize_variance = false against direct formulas. */
  for (int variant = 0; variant < 4; variant++) {
    const bool across = variant & 1, rms = variant & 2;
    const eg_norm_nhwc_params p = {.batch = n, .spatial = hw, .c = c, .groups = c,
                                   .across_channel = across, .rms = rms,
                                   .normalize_variance = true, .epsilon = 1e-3f};
    void *scratch = scratch_buf(eg_norm_nhwc_f32_scratch(&p));
    eg_norm_nhwc_f32(&p, x, g, b, y, scratch);
    for (long bi = 0; bi < n; bi++)
      for (long s = 0; s < (across ? hw : c); s++) {
        /* the statistics group: row s (across channel) or channel s (across spatial) */
        const long cnt = across ? c : hw;
        double m = 0, v = 0;
        for (long t = 0; t < cnt; t++) {
          const long idx = across ? (bi * hw + s) * c + t : (bi * hw + t) * c + s;
          m += x[idx];
        }
        m = rms ? 0.0 : m / cnt;
        for (long t = 0; t < cnt; t++) {
          const long idx = across ? (bi * hw + s) * c + t : (bi * hw + t) * c + s;
          v += (x[idx] - m) * (x[idx] - m);
        }
        v /= cnt;
        for (long t = 0; t < cnt; t++) {
          const long idx = across ? (bi * hw + s) * c + t : (bi * hw + t) * c + s;
          const long ch = idx % c;
          ref[idx] = (float)((x[idx] - m) / sqrt(v + 1e-3) * g[ch] + b[ch]);
        }
      }
    check_close("instance norm variant", y, ref, total);
    free(scratch);
  }
  const eg_norm_nhwc_params p = {.batch = n, .spatial = hw, .c = c, .groups = c,
                                 .normalize_variance = false, .epsilon = 1e-3f};
  void *scratch = scratch_buf(eg_norm_nhwc_f32_scratch(&p));
  eg_norm_nhwc_f32(&p, x, NULL, NULL, y, scratch);
  for (long bi = 0; bi < n; bi++)
    for (long ch = 0; ch < c; ch++) {
      double m = 0;
      for (long t = 0; t < hw; t++) m += x[(bi * hw + t) * c + ch];
      m /= hw;
      for (long t = 0; t < hw; t++) ref[(bi * hw + t) * c + ch] = (float)(x[(bi * hw + t) * c + ch] - m);
    }
  check_close("instance norm without variance", y, ref, total);
  free(scratch), free(x), free(g), free(b), free(xc), free(yc), free(ref), free(y);
}

int main(void) {
  EG_RUN(test_conv2d_naive);
  EG_RUN(test_conv2d_vs_nchw);
  EG_RUN(test_depthwise_conv2d);
  EG_RUN(test_tconv2d_naive);
  EG_RUN(test_tconv2d_vs_nchw);
  EG_RUN(test_tconv2d_asymmetric_vs_nchw);
  EG_RUN(test_tconv2d_pick);
  EG_RUN(test_transpose);
  EG_RUN(test_pools);
  EG_RUN(test_reduce);
  EG_RUN(test_elementwise_broadcast);
  EG_RUN(test_comparisons);
  EG_RUN(test_unary_and_cast);
  EG_RUN(test_fully_connected_and_matmul);
  EG_RUN(test_log_softmax);
  EG_RUN(test_concat);
  EG_RUN(test_batchnorm);
  EG_RUN(test_group_and_instance_norm);
  return eg_test_summary();
}
