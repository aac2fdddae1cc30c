/* conv2d_nhwc_f32.c — QNN Conv2d, NHWC/HWIO, fp32: chunked im2col + CBLAS sgemm (see the
 * header for the contract).
 *
 * GEMM view: M = n*h_out*w_out output pixels, N = c_out/groups, K = k_h*k_w*cig. Row r of the
 * column matrix holds, for each tap t in filter order, the cig input channels that tap reads for
 * pixel r (zeros outside the image). HWIO rows are (tap, ci') with c_out columns, so group q's
 * B is the filter itself offset by q*cog with ldb = c_out, and C is y offset by q*cog with
 * ldc = c_out: no filter copy, no output copy. Chunks of pixels bound the column matrix
 * (params.chunk_bytes) so it stays in cache between im2col and sgemm.
 *
 * Row bands (stride_h 1, groups 1, large images): the column matrix is built for one kernel ROW
 * only — per input row p of a band and output column x, the k_w*c_in values of that row's taps —
 * and each kernel row a is one sgemm over the band shifted down by a*dilation_h rows, accumulated
 * (beta 1). That writes k_h times fewer column bytes (im2col is serial while sgemm runs on every
 * thread; measured on r18-l1/l2 shapes, one thread: +5%, more with two) at the price of k_h sgemm
 * calls with K = k_w*c_in and (k_h-1)*dilation_h halo rows per band. Chunk and band sizes
 * follow params.chunk_bytes. */
#include "kernels/conv2d_nhwc_f32.h"

#include <string.h>

#include "kernels/depthwise_conv2d_nhwc_f32.h"
#include "kernels/parallel_nhwc_f32.h"
#include "kernels/transpose_f32.h"
#include "kernels/winograd_nhwc_f32.h"
#include "util/error.h"
#include "util/parallel.h"
#include "util/simd.h"

/* Target size of one chunk's column matrix when the caller passes 0 (see eg_nhwc_chunk_bytes
 * for the measurements behind the per-thread default). */
#define EG_CONV2D_NHWC_COL_BYTES ((int64_t)2 << 20)
/* Fewest pixels per chunk: below this sgemm's packing of B dominates. */
enum { EG_CONV2D_NHWC_MIN_ROWS = 256 };
/* Row bands need at least this many output pixels per image (sgemm's M) and this many output
 * rows per band for every halo row. */
enum { EG_CONV2D_NHWC_BAND_MIN_PIXELS = 512, EG_CONV2D_NHWC_BAND_MIN_ROWS_PER_HALO = 4 };

static int64_t taps(const eg_conv2d_nhwc_params *p) { return p->k_h * p->k_w; }
static int64_t col_bytes(const eg_conv2d_nhwc_params *p) {
  return p->chunk_bytes > 0 ? p->chunk_bytes : EG_CONV2D_NHWC_COL_BYTES;
}
static int64_t pixels(const eg_conv2d_nhwc_params *p) { return p->n * p->h_out * p->w_out; }

/* 1x1, stride 1, no padding, same size: x is its own column matrix. */
static bool is_pointwise(const eg_conv2d_nhwc_params *p) {
  return p->k_h == 1 && p->k_w == 1 && p->stride[0] == 1 && p->stride[1] == 1 &&
         p->pad[0] == 0 && p->pad[1] == 0 && p->h_out == p->h_in && p->w_out == p->w_in;
}

bool eg_conv2d_nhwc_f32_takes_filter_oi(const eg_conv2d_nhwc_params *p) { return p->groups == 1; }

bool eg_conv2d_nhwc_f32_takes_oihw(const eg_conv2d_nhwc_params *p) {
  return p->groups == 1 && !p->flip && !p->filter_oi && !p->winograd;
}

/* Winograd wants both channel counts at least this wide (its 16 sgemms have K = c_in and
 * N = c_out) and at least this many 2x2 output tiles to share the filter transform, made on
 * every call. ResNet-18 at batch 8 and 64x64, one core (AVX-512 EPYC, OpenBLAS Haswell
 * kernels), im2col vs Winograd: layer 1 (512 tiles) 1.36 vs 1.13 ms, layer 2 (128 tiles) 1.20
 * vs 1.37, layer 3 (32 tiles) 1.19 vs 3.6. */
enum { EG_CONV2D_NHWC_WINO_MIN_C = 32, EG_CONV2D_NHWC_WINO_MIN_TILES = 256 };

bool eg_conv2d_nhwc_f32_takes_winograd(const eg_conv2d_nhwc_params *p) {
  return p->k_h == 3 && p->k_w == 3 && p->stride[0] == 1 && p->stride[1] == 1 &&
         p->dilation[0] == 1 && p->dilation[1] == 1 && p->groups == 1 && !p->flip &&
         !p->filter_oi && !p->filter_oihw && !p->y_cnhw;
}

bool eg_conv2d_nhwc_f32_winograd_pays(const eg_conv2d_nhwc_params *p) {
  const int64_t tiles = p->n * ((p->h_out + 1) / 2) * ((p->w_out + 1) / 2);
  return eg_conv2d_nhwc_f32_takes_winograd(p) && p->c_in >= EG_CONV2D_NHWC_WINO_MIN_C &&
         p->c_out >= EG_CONV2D_NHWC_WINO_MIN_C && tiles >= EG_CONV2D_NHWC_WINO_MIN_TILES;
}

static eg_winograd_nhwc_params wino_params(const eg_conv2d_nhwc_params *p) {
  return (eg_winograd_nhwc_params){
      .n = p->n, .h_in = p->h_in, .w_in = p->w_in, .c_in = p->c_in, .h_out = p->h_out,
      .w_out = p->w_out, .c_out = p->c_out, .pad = {p->pad[0], p->pad[1]}};
}

/* One output channel per group (c_out == groups > 1: depthwise-like, e.g. the weight gradient of
 * a depthwise conv, or the input gradient of one as a flipped conv): per group the GEMM would be
 * a matrix-vector product, one sgemm call per group and chunk, so the conv runs as a direct loop
 * instead, vectorised across the channels (contiguous in NHWC). */
static bool is_direct(const eg_conv2d_nhwc_params *p) {
  return p->groups > 1 && p->c_out == p->groups;
}

/* Output rows [r0, r1) (r = n*h_out + i) of the direct conv; with `xt`, x holds each pixel's
 * [c_out, cig] channels transposed to [cig, c_out] (several input channels per group: a
 * depthwise conv's weight gradient, cig the batch), each (tap, ci) then a contiguous run over
 * the output channels as the filter's. Each output: bias (or 0) plus the products in
 * (a, b, ci) order either way. */
EG_SIMD_CLONES
static void direct_rows(const eg_conv2d_nhwc_params *p, const float *x, const float *filter,
                        const float *bias, float *y, int64_t r0, int64_t r1, bool xt) {
  const int64_t c = p->c_out, cig = p->c_in / p->groups;
  for (int64_t r = r0; r < r1; r++) {
    const int64_t n = r / p->h_out, i = r % p->h_out;
    for (int64_t j = 0; j < p->w_out; j++) {
      float *restrict yr = y + (r * p->w_out + j) * c;
      for (int64_t q = 0; q < c; q++) yr[q] = bias ? bias[q] : 0.0f;
      for (int64_t a = 0; a < p->k_h; a++) {
        const int64_t yy = i * p->stride[0] - p->pad[0] + a * p->dilation[0];
        if (yy < 0 || yy >= p->h_in) continue;
        for (int64_t b = 0; b < p->k_w; b++) {
          const int64_t xx = j * p->stride[1] - p->pad[1] + b * p->dilation[1];
          if (xx < 0 || xx >= p->w_in) continue;
          const int64_t t = p->flip ? (p->k_h - 1 - a) * p->k_w + (p->k_w - 1 - b)
                                    : a * p->k_w + b;
          const float *restrict xr = x + ((n * p->h_in + yy) * p->w_in + xx) * p->c_in;
          const float *restrict fr = filter + t * cig * c; /* [cig, c_out] block of tap t */
          for (int64_t ci = 0; ci < cig; ci++) {
            if (xt) {
#pragma omp simd
              for (int64_t q = 0; q < c; q++) yr[q] += xr[ci * c + q] * fr[ci * c + q];
              continue;
            }
#pragma omp simd
            for (int64_t q = 0; q < c; q++) yr[q] += xr[q * cig + ci] * fr[ci * c + q];
          }
        }
      }
    }
  }
}

/* Whether the direct conv runs on x transposed per pixel (direct_rows' xt): several input
 * channels per group, and each input pixel read by at least 4 output pixels on average, so
 * the transpose pays (MobileNetV2's depthwise weight gradients at batch 8 and 32x32, one
 * thread: 16x16 x [144, 8] with a 16x16 kernel, each pixel read 9 times, 580 -> 359 us;
 * 32x32 x [96, 8] with a 16x16 kernel at dilation 2, read 2.25 times, slower with it). */
static bool direct_transposes(const eg_conv2d_nhwc_params *p) {
  return is_direct(p) && p->c_in / p->groups > 1 &&
         p->h_out * p->w_out * p->k_h * p->k_w >= 4 * p->h_in * p->w_in;
}

/* The direct conv; unflipped with one input channel per group it is DepthWiseConv2d exactly. */
static void conv_direct(const eg_conv2d_nhwc_params *p, const float *x, const float *filter,
                        const float *bias, float *y, float *scratch) {
  if (p->c_in == p->groups && !p->flip) {
    const eg_dwconv2d_nhwc_params dw = {
        .n = p->n, .h_in = p->h_in, .w_in = p->w_in, .c_in = p->c_in, .h_out = p->h_out,
        .w_out = p->w_out, .mult = 1, .k_h = p->k_h, .k_w = p->k_w,
        .stride = {p->stride[0], p->stride[1]}, .dilation = {p->dilation[0], p->dilation[1]},
        .pad = {p->pad[0], p->pad[1]}};
    eg_depthwise_conv2d_nhwc_f32(&dw, x, filter, bias, y);
    return;
  }
  const int64_t rows = p->n * p->h_out;
  const bool tr = direct_transposes(p);
  if (tr) /* [pixel][q][ci] -> [pixel][ci][q] */
    eg_transpose_f32(3, (const int64_t[]){p->n * p->h_in * p->w_in, p->c_out, p->c_in / p->groups},
                     (const uint32_t[]){0, 2, 1}, x, scratch);
  if (eg_nhwc_omp_worth(pixels(p) * p->c_in * taps(p)) && rows > 1) {
#pragma omp parallel
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      direct_rows(p, tr ? scratch : x, filter, bias, y, rows * t / nt, rows * (t + 1) / nt, tr);
    }
  } else {
    direct_rows(p, tr ? scratch : x, filter, bias, y, 0, rows, tr);
  }
}

/* y [m, c_out] (+)= a [m, c_in] x filter tap block [c_out, c_in] transposed (filter_oi): one
 * tap's share of the GEMM; `acc` adds to y. */
static void gemm_tap_oi(const eg_conv2d_nhwc_params *p, const float *a, int64_t lda, int64_t m,
                        const float *tap, bool acc, float *y) {
  eg_nhwc_sgemm(false, true, m, p->c_out, p->c_in, a, lda, tap, p->c_in, acc ? 1.0f : 0.0f, y,
                p->c_out);
}

static bool is_empty(const eg_conv2d_nhwc_params *p) {
  return pixels(p) == 0 || p->c_out == 0 || p->c_in == 0 || taps(p) == 0;
}

/* Pixels per chunk (>= 1), evened out so the last chunk is not a runt. */
static int64_t chunk_rows(const eg_conv2d_nhwc_params *p) {
  const int64_t k = taps(p) * (p->c_in / p->groups), m = pixels(p);
  int64_t rows = col_bytes(p) / ((int64_t)sizeof(float) * (k > 0 ? k : 1));
  if (rows < EG_CONV2D_NHWC_MIN_ROWS) rows = EG_CONV2D_NHWC_MIN_ROWS;
  if (rows >= m) return m > 0 ? m : 1;
  const int64_t chunks = (m + rows - 1) / rows;
  return (m + chunks - 1) / chunks;
}

static void add_bias(float *y, const float *bias, int64_t m, int64_t c);

/* ---- row bands ---- */

static int64_t halo(const eg_conv2d_nhwc_params *p) { return (p->k_h - 1) * p->dilation[0]; }

/* Output rows per band for the row-band method, or 0 when it does not apply. */
static int64_t band_rows(const eg_conv2d_nhwc_params *p) {
  if (p->stride[0] != 1 || p->groups != 1 || p->k_h < 2 || p->filter_oihw || p->y_cnhw ||
      p->h_out * p->w_out < EG_CONV2D_NHWC_BAND_MIN_PIXELS)
    return 0;
  const int64_t row_bytes = (int64_t)sizeof(float) * p->w_out * p->k_w * p->c_in;
  int64_t r = col_bytes(p) / row_bytes - halo(p);
  if (r < EG_CONV2D_NHWC_BAND_MIN_ROWS_PER_HALO * halo(p) && r < p->h_out) return 0;
  if (r >= p->h_out) return p->h_out;
  const int64_t bands = (p->h_out + r - 1) / r;
  return (p->h_out + bands - 1) / bands;
}

/* Band matrix for output rows [y0, y0 + rows) of image n: row (q, x) for q in [0, rows + halo)
 * holds, for j in [0, k_w), the c_in channels of input row y0 - pad_t + q at column
 * x*sw - pad_l + b*dw, b = j (or k_w-1-j with flip), zeros outside the image. */
EG_SIMD_CLONES
static void band_im2col(const eg_conv2d_nhwc_params *p, const float *x, int64_t n, int64_t y0,
                        int64_t rows, float *col) {
  const int64_t kw = p->k_w, ci = p->c_in, width = kw * ci;
  for (int64_t q = 0; q < rows + halo(p); q++) {
    const int64_t yy = y0 - p->pad[0] + q;
    float *dst = col + q * p->w_out * width;
    if (yy < 0 || yy >= p->h_in) {
      memset(dst, 0, sizeof(float) * (size_t)(p->w_out * width));
      continue;
    }
    const float *src = x + (n * p->h_in + yy) * p->w_in * ci;
    for (int64_t j = 0; j < p->w_out; j++, dst += width)
      for (int64_t b = 0; b < kw; b++) {
        const int64_t xx = j * p->stride[1] - p->pad[1] + b * p->dilation[1];
        float *d = dst + (p->flip ? kw - 1 - b : b) * ci;
        if (xx < 0 || xx >= p->w_in)
          memset(d, 0, sizeof(float) * (size_t)ci);
        else
          memcpy(d, src + xx * ci, sizeof(float) * (size_t)ci);
      }
  }
}

/* y rows of one band += sum over kernel rows a of band[a*dh rows on] x filter row tap(a). */
static void band_gemms(const eg_conv2d_nhwc_params *p, const float *col, int64_t rows,
                       const float *filter, float *y) {
  const int64_t width = p->k_w * p->c_in;
  for (int64_t a = 0; a < p->k_h; a++) {
    const int64_t fa = p->flip ? p->k_h - 1 - a : a;
    const float *band = col + a * p->dilation[0] * p->w_out * width;
    if (p->filter_oi) { /* one GEMM per tap of the row: the blocks are [c_out, c_in] */
      for (int64_t b = 0; b < p->k_w; b++)
        gemm_tap_oi(p, band + b * p->c_in, width, rows * p->w_out,
                    filter + (fa * p->k_w + b) * p->c_out * p->c_in, a || b, y);
      continue;
    }
    eg_nhwc_sgemm(false, false, rows * p->w_out, p->c_out, width, band, width,
                  filter + fa * width * p->c_out, p->c_out, a ? 1.0f : 0.0f, y, p->c_out);
  }
}

/* Floats of one band matrix (rounded) for bands of r output rows. */
static int64_t band_floats(const eg_conv2d_nhwc_params *p, int64_t r) {
  return eg_nhwc_round16((r + halo(p)) * p->w_out * p->k_w * p->c_in);
}

/* Band matrices the row-band method holds (p->threads or 1, see the header): side by side
 * where there are two bands or more and a band's sgemm stays below eg_nhwc_sgemm's split (a
 * 32x32 ResNet's 16-channel layers, one 1024 x 16 x 48 product per kernel row and image, ran
 * on one of two threads). */
static int64_t band_teams(const eg_conv2d_nhwc_params *p, int64_t r) {
  const int64_t bands = p->n * ((p->h_out + r - 1) / r);
  const int64_t macs = r * p->w_out * p->c_out * p->k_w * p->c_in;
  if (p->threads < 2 || bands < 2 || !eg_nhwc_blas_nests() ||
      macs >= p->threads * EG_NHWC_SGEMM_SPLIT_MACS)
    return 1;
  return p->threads;
}

static void conv_bands(const eg_conv2d_nhwc_params *p, const float *x, const float *filter,
                       const float *bias, float *y, float *col) {
  const int64_t r = band_rows(p), img = p->h_out * p->w_out * p->c_out;
  const int64_t per_image = (p->h_out + r - 1) / r, floats = band_floats(p, r);
  const int64_t teams = band_teams(p, r);
  const bool side_by_side = teams > 1 && omp_get_max_threads() <= teams;
  EG_OMP_FOR_IF(side_by_side, for (int64_t b = 0; b < p->n * per_image; b++) {
    const int64_t n = b / per_image, y0 = b % per_image * r;
    const int64_t rows = p->h_out - y0 < r ? p->h_out - y0 : r;
    float *yb = y + n * img + y0 * p->w_out * p->c_out;
    /* the calling thread's own band matrix (one for all, also when that is a thread of
     * someone else's team: TransposeConv2d's pieces) */
    float *own = col + (side_by_side ? omp_get_thread_num() : 0) * floats;
    band_im2col(p, x, n, y0, rows, own);
    band_gemms(p, own, rows, filter, yb);
    if (bias) add_bias(yb, bias, rows * p->w_out, p->c_out);
  });
}

/* ---- wide kernels ---- */

/* Phases of the wide method: output rows oi with one oi % dilation_h read rows of one phase. */
static int64_t wide_phases(const eg_conv2d_nhwc_params *p) {
  return p->dilation[0] < p->h_out ? p->dilation[0] : p->h_out;
}

/* Rows of one (phase, image, output column) block of the wide method's bands. */
static int64_t wide_rows(const eg_conv2d_nhwc_params *p) {
  return (p->h_out - 1) / p->dilation[0] + p->k_h;
}

/* Whether the wide method runs p: kernels at least as tall as the output, whose im2col
 * would copy every input row about h_out times (the weight gradient as a Conv2d: a 32x32
 * kernel, 3x3 output), and the bands copy at most 3/4 of that (a stride-2 conv's gradient,
 * dilation 2: a 16x16 kernel, 3x3 output, two phases of 17 rows against 48); and as many
 * output channels as pixels per row at most, as sgemm packs the filter once per output row
 * (not a forward conv's 3x3 kernel on a 2x2 output of 512 channels). */
static bool wide_applies(const eg_conv2d_nhwc_params *p) {
  return p->stride[0] == 1 && p->groups == 1 && !p->flip && !p->filter_oi &&
         !p->filter_oihw && !p->winograd && p->h_out >= 2 && p->k_h >= p->h_out &&
         p->c_out <= p->n * p->w_out &&
         3 * p->h_out * p->k_h >= 4 * wide_phases(p) * wide_rows(p);
}

/* Band floats (rounded) of the wide method. */
static int64_t wide_band_floats(const eg_conv2d_nhwc_params *p) {
  return eg_nhwc_round16(wide_phases(p) * p->n * p->w_out * wide_rows(p) * p->k_w * p->c_in);
}

/* bands[ph][n][j][q][b][ci] = x[n, ph + q*dh - pad_t, j*sw - pad_l + b*dw, ci] (0 outside):
 * for output row oi (phase oi % dh) the rows from q = oi / dh on hold, per (n, j), the
 * column-matrix row of pixel (n, oi, j) in HWIO order, one contiguous run of k_h*k_w*c_in. */
EG_SIMD_CLONES EG_KEEP_LOOPS
static void wide_bands(const eg_conv2d_nhwc_params *p, const float *x, float *bands) {
  const int64_t rows = wide_rows(p), width = p->k_w * p->c_in, blocks = wide_phases(p) * p->n * p->w_out;
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(blocks * rows * width), for (int64_t t = 0; t < blocks; t++) {
    const int64_t ph = t / (p->n * p->w_out), n = t / p->w_out % p->n, j = t % p->w_out;
    for (int64_t q = 0; q < rows; q++) {
      float *restrict d = bands + (t * rows + q) * width;
      const int64_t yy = ph + q * p->dilation[0] - p->pad[0];
      if (yy < 0 || yy >= p->h_in) {
        for (int64_t e = 0; e < width; e++) d[e] = 0.0f;
        continue;
      }
      const float *src = x + (n * p->h_in + yy) * p->w_in * p->c_in;
      for (int64_t b = 0; b < p->k_w; b++) {
        const int64_t xx = j * p->stride[1] - p->pad[1] + b * p->dilation[1];
        float *restrict db = d + b * p->c_in;
        const float *restrict s = src + xx * p->c_in;
        if (xx < 0 || xx >= p->w_in)
          for (int64_t c = 0; c < p->c_in; c++) db[c] = 0.0f;
        else
          for (int64_t c = 0; c < p->c_in; c++) db[c] = s[c];
      }
    }
  });
}

/* The wide method: per output row oi one sgemm, M = n*w_out pixels (rows S floats apart in
 * the bands), K = k_h*k_w*c_in, the HWIO filter as it is; into out [h_out][n][w_out][c_out],
 * then y (NHWC or y_cnhw) with the bias. */
static void conv_wide(const eg_conv2d_nhwc_params *p, const float *x, const float *filter,
                      const float *bias, float *y, float *scratch) {
  const int64_t rows = wide_rows(p), width = p->k_w * p->c_in, m = p->n * p->w_out;
  const int64_t s = rows * width, k = p->k_h * width, px = pixels(p);
  float *bands = scratch, *out = scratch + wide_band_floats(p);
  wide_bands(p, x, bands);
  for (int64_t oi = 0; oi < p->h_out; oi++) {
    const float *a = bands + (oi % p->dilation[0]) * m * s + oi / p->dilation[0] * width;
    eg_nhwc_sgemm(false, false, m, p->c_out, k, a, s, filter, p->c_out, 0.0f,
                  out + oi * m * p->c_out, p->c_out);
  }
  for (int64_t n = 0; n < p->n; n++)
    for (int64_t oi = 0; oi < p->h_out; oi++)
      for (int64_t j = 0; j < p->w_out; j++) {
        const float *o = out + ((oi * p->n + n) * p->w_out + j) * p->c_out;
        const int64_t r = (n * p->h_out + oi) * p->w_out + j;
        for (int64_t c = 0; c < p->c_out; c++)
          y[p->y_cnhw ? c * px + r : r * p->c_out + c] = o[c] + (bias ? bias[c] : 0.0f);
      }
}

size_t eg_conv2d_nhwc_f32_scratch(const eg_conv2d_nhwc_params *p) {
  if (!is_empty(p) && direct_transposes(p))
    return sizeof(float) * (size_t)eg_nhwc_round16(p->n * p->h_in * p->w_in * p->c_in);
  if (is_empty(p) || is_pointwise(p) || is_direct(p)) return 0;
  if (p->winograd) {
    const eg_winograd_nhwc_params w = wino_params(p);
    return sizeof(float) * eg_winograd_nhwc_f32_scratch_floats(&w);
  }
  const int64_t r = band_rows(p);
  if (r > 0) return sizeof(float) * (size_t)(band_teams(p, r) * band_floats(p, r));
  if (wide_applies(p))
    return sizeof(float) * (size_t)(wide_band_floats(p) + eg_nhwc_round16(pixels(p) * p->c_out));
  return sizeof(float) * (size_t)eg_nhwc_round16(chunk_rows(p) * taps(p) * (p->c_in / p->groups));
}

/* The column-matrix row of output pixel (n, i, j) for group q: dst[t*cig + ci'] = the channels
 * tap t reads (0 outside the image). With `flip`, tap t = (a, b) stores position
 * (k_h-1-a, k_w-1-b); for a fixed kernel row both orders fill one contiguous run of k_w taps.
 * Without flip or groups at column dilation 1 a kernel row reads one contiguous run of the
 * image row (k_w pixels of every channel), copied in one loop; the copies are loops, not
 * memcpy/memset calls, which cost more than the copying when a tap is a few channels (the
 * 3-channel stem: 49 calls of 12 bytes per output pixel). */
EG_SIMD_CLONES EG_KEEP_LOOPS static void
im2col_pixel(const eg_conv2d_nhwc_params *p, const float *x, int64_t n, int64_t i, int64_t j,
             int64_t q, float *restrict dst) {
  const int64_t cig = p->c_in / p->groups, kk = taps(p), kw = p->k_w;
  const bool runs = !p->flip && p->dilation[1] == 1 && cig == p->c_in;
  const int64_t x0 = j * p->stride[1] - p->pad[1]; /* the first tap's column */
  int64_t b0 = x0 < 0 ? -x0 : 0, b1 = p->w_in - x0 < kw ? p->w_in - x0 : kw;
  if (b0 > kw) b0 = kw;
  if (b1 < b0) b1 = b0;
  for (int64_t a = 0; a < p->k_h; a++) {
    const int64_t yy = i * p->stride[0] - p->pad[0] + a * p->dilation[0];
    const int64_t run = p->flip ? kk - (a + 1) * kw : a * kw; /* first tap of this kernel row */
    float *restrict row = dst + run * cig;
    if (yy < 0 || yy >= p->h_in) {
      for (int64_t e = 0; e < kw * cig; e++) row[e] = 0.0f;
      continue;
    }
    const float *restrict src = x + ((n * p->h_in + yy) * p->w_in) * p->c_in + q * cig;
    if (runs) {
      const float *restrict s = src + (x0 + b0) * p->c_in; /* tap b0's first channel */
      float *restrict r = row + b0 * cig;
      for (int64_t e = 0; e < b0 * cig; e++) row[e] = 0.0f;
      for (int64_t e = 0; e < (b1 - b0) * cig; e++) r[e] = s[e];
      for (int64_t e = b1 * cig; e < kw * cig; e++) row[e] = 0.0f;
      continue;
    }
    for (int64_t b = 0; b < kw; b++) {
      const int64_t xx = x0 + b * p->dilation[1];
      float *restrict d = row + (p->flip ? kw - 1 - b : b) * cig;
      if (xx < 0 || xx >= p->w_in) {
        for (int64_t c = 0; c < cig; c++) d[c] = 0.0f;
      } else {
        const float *restrict s = src + xx * p->c_in;
        for (int64_t c = 0; c < cig; c++) d[c] = s[c];
      }
    }
  }
}

/* The column-matrix row of output pixel (n, i, j) in (ci, tap) order, for filter_oihw:
 * dst[ci*k_h*k_w + t] = the channel ci tap t reads (0 outside the image). Each tap's channel
 * run is scattered k_h*k_w floats apart. */
EG_SIMD_CLONES static void im2col_pixel_oihw(const eg_conv2d_nhwc_params *p, const float *x, int64_t n,
                              int64_t i, int64_t j, float *restrict dst) {
  const int64_t kk = taps(p), ci = p->c_in;
  for (int64_t a = 0; a < p->k_h; a++) {
    const int64_t yy = i * p->stride[0] - p->pad[0] + a * p->dilation[0];
    for (int64_t b = 0; b < p->k_w; b++) {
      const int64_t xx = j * p->stride[1] - p->pad[1] + b * p->dilation[1], t = a * p->k_w + b;
      if (yy < 0 || yy >= p->h_in || xx < 0 || xx >= p->w_in) {
        for (int64_t c = 0; c < ci; c++) dst[c * kk + t] = 0.0f;
        continue;
      }
      const float *restrict src = x + ((n * p->h_in + yy) * p->w_in + xx) * ci;
      for (int64_t c = 0; c < ci; c++) dst[c * kk + t] = src[c];
    }
  }
}

/* col [m, K] for output pixels [r0, r0 + m), group q. */
EG_SIMD_CLONES
static void im2col(const eg_conv2d_nhwc_params *p, const float *x, int64_t r0, int64_t m,
                   int64_t q, float *col) {
  const int64_t k = taps(p) * (p->c_in / p->groups), hw = p->h_out * p->w_out;
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(m * k), for (int64_t r = r0; r < r0 + m; r++) {
    const int64_t n = r / hw, i = r % hw / p->w_out, j = r % p->w_out;
    if (p->filter_oihw)
      im2col_pixel_oihw(p, x, n, i, j, col + (r - r0) * k);
    else
      im2col_pixel(p, x, n, i, j, q, col + (r - r0) * k);
  });
}

/* y_cnhw: columns [r0, r0 + m) of every row of y [c, ld] += bias[row]. */
EG_SIMD_CLONES
static void add_bias_cn(float *y, const float *bias, int64_t ld, int64_t r0, int64_t m,
                        int64_t c) {
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(m * c), for (int64_t e = 0; e < c; e++) {
    float *row = y + e * ld + r0;
    _Pragma("omp simd")
    for (int64_t r = 0; r < m; r++) row[r] += bias[e];
  });
}

/* y[r, :] += bias for m rows of c floats. */
EG_SIMD_CLONES
static void add_bias(float *y, const float *bias, int64_t m, int64_t c) {
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(m * c), for (int64_t r = 0; r < m; r++) {
    float *row = y + r * c;
    _Pragma("omp simd")
    for (int64_t e = 0; e < c; e++) row[e] += bias[e];
  });
}

/* y [m, c_out] (+)= a [m, K] x filter-of-group-q [K, cog]; a has leading dimension lda. */
static void gemm_group(const eg_conv2d_nhwc_params *p, const float *a, int64_t lda, int64_t m,
                       const float *filter, int64_t q, float *y) {
  const int64_t cig = p->c_in / p->groups, cog = p->c_out / p->groups, k = taps(p) * cig;
  if (p->y_cnhw) { /* groups 1: y^T [c_out, m] (ld: every pixel) = filter^T x a^T */
    eg_nhwc_sgemm(!p->filter_oihw, true, p->c_out, m, k, filter, p->filter_oihw ? k : p->c_out,
                  a, lda, 0.0f, y, pixels(p));
    return;
  }
  if (p->filter_oihw) { /* groups 1: the filter is [c_out, K] */
    eg_nhwc_sgemm(false, true, m, p->c_out, k, a, lda, filter, k, 0.0f, y, p->c_out);
    return;
  }
  if (p->filter_oi) { /* groups 1 (eg_conv2d_nhwc_f32_takes_filter_oi): a GEMM per tap */
    for (int64_t t = 0; t < taps(p); t++)
      gemm_tap_oi(p, a + t * cig, lda, m, filter + t * p->c_out * cig, t > 0, y);
    return;
  }
  eg_nhwc_sgemm(false, false, m, cog, k, a, lda, filter + q * cog, p->c_out, 0.0f, y + q * cog,
                p->c_out);
}

EG_SIMD_CLONES
void eg_conv2d_nhwc_f32(const eg_conv2d_nhwc_params *p, const float *x, const float *filter,
                        const float *bias, float *y, void *scratch) {
  const int64_t m = pixels(p), cig = p->c_in / p->groups, k = taps(p) * cig;
  if (is_empty(p)) {
    for (int64_t r = 0; r < m; r++)
      for (int64_t c = 0; c < p->c_out; c++)
        y[p->y_cnhw ? c * m + r : r * p->c_out + c] = bias ? bias[c] : 0.0f;
    return;
  }
  EG_ASSERT(!p->filter_oi || eg_conv2d_nhwc_f32_takes_filter_oi(p));
  EG_ASSERT(!(p->filter_oihw || p->y_cnhw) || eg_conv2d_nhwc_f32_takes_oihw(p));
  EG_ASSERT(!p->winograd || eg_conv2d_nhwc_f32_takes_winograd(p));
  if (p->winograd) {
    const eg_winograd_nhwc_params w = wino_params(p);
    eg_winograd_nhwc_f32(&w, x, filter, bias, y, scratch);
    return;
  }
  if (is_direct(p)) {
    conv_direct(p, x, filter, bias, y, scratch);
    return;
  }
  if (is_pointwise(p)) { /* one sgemm: chunking it measured 3% faster on one thread but 40% slower
                           on two (pw-1x1 shape: OpenBLAS threads one long call best) */
    for (int64_t q = 0; q < p->groups; q++) gemm_group(p, x + q * cig, p->c_in, m, filter, q, y);
    if (bias && p->y_cnhw) add_bias_cn(y, bias, m, 0, m, p->c_out);
    else if (bias) add_bias(y, bias, m, p->c_out);
    return;
  }
  if (band_rows(p) > 0) {
    conv_bands(p, x, filter, bias, y, scratch);
    return;
  }
  if (wide_applies(p)) {
    conv_wide(p, x, filter, bias, y, scratch);
    return;
  }
  const int64_t rows = chunk_rows(p);
  float *col = scratch;
  for (int64_t r0 = 0; r0 < m; r0 += rows) {
    const int64_t mc = m - r0 < rows ? m - r0 : rows;
    float *yc = p->y_cnhw ? y + r0 : y + r0 * p->c_out;
    for (int64_t q = 0; q < p->groups; q++) {
      im2col(p, x, r0, mc, q, col);
      gemm_group(p, col, k, mc, filter, q, yc);
    }
    if (bias && p->y_cnhw) add_bias_cn(y, bias, m, r0, mc, p->c_out);
    else if (bias) add_bias(yc, bias, mc, p->c_out);
  }
}
