/* transpose_conv2d_nhwc_f32.c — QNN TransposeConv2d, NHWC, fp32 (contract in the header).
 *
 * FLIP and PHASE are phrased as eg_conv2d_nhwc_f32 calls with `flip` set:
 *   stride 1: y[o] = sum_a x[o + pad - a] f[a] = sum_m x[o - (k-1-pad) + m] f[k-1-m], i.e. a
 *     conv with pad k-1-pad over the rotated filter. For groups > 1 the filter's channel blocks
 *     are regrouped into the conv's HWIO [k, k, cig, c_out] first (scratch).
 *   stride s: output rows o = r + s*u (phase r) only meet taps a = a0 + s*m with
 *     a0 = (r + pad) mod s, and read x row u + c - m with c = (r + pad - a0) / s; that is a
 *     stride-1 flipped conv over x with the sub-filter f[a0 + s*m] (packed into scratch), pad
 *     M-1-c (M taps), writing a [n, ceil((h_out-r)/s), ...] phase image that is then copied to
 *     rows r, r+s, ... of y. Phases no tap reaches get the bias.
 * COL2IM: Fp[q][ci'][t][co'] = f[t][q*cig+ci'][co']; per chunk of input pixels and group,
 *   col = x_chunk [rows, cig] (lda c_in) x Fp_q [cig, taps*cog]; then y[pixel(r, t)] += col[r, t].
 * WINOGRAD: winograd_nhwc_f32.h with the filter read rotated and pads 2 - pad.
 * DIRECT (c_out == groups > 1, whatever the algorithm asked): a gather loop per output pixel.
 * Pieces (parts > 1): each piece is a TransposeConv2d of its own (piece_at) run by one of the
 *   above on one thread, with its own slice of scratch.
 *
 * Scratch layout, in floats (each region rounded to 16): FLIP: [regrouped filter if groups>1]
 * [conv scratch]; PHASE: [sub-filter (max over phases)][phase image (max)][conv scratch (max)];
 * COL2IM: [Fp][col chunk]; WINOGRAD: winograd_nhwc_f32.c's; pieces: parts x [the largest piece's]. */
#include "kernels/transpose_conv2d_nhwc_f32.h"

#include <omp.h>
#include <string.h>

#include "kernels/conv2d_nhwc_f32.h"
#include "kernels/parallel_nhwc_f32.h"
#include "kernels/vec8_nhwc_f32.h"
#include "kernels/winograd_nhwc_f32.h"
#include "util/error.h"
#include "util/parallel.h"
#include "util/simd.h"

/* Target size of COL2IM's column chunk when params.chunk_bytes is 0. */
#define EG_TRANSPOSE_CONV2D_COL_BYTES ((int64_t)2 << 20)
enum { EG_TRANSPOSE_CONV2D_MIN_ROWS = 256 };
/* PHASE needs c_out wide enough for sgemm's N; narrower outputs go through COL2IM. */
enum { EG_TRANSPOSE_CONV2D_PHASE_MIN_COUT = 16 };
/* WINOGRAD's sgemms have K = c_in and N = c_out; AUTO wants both at least this wide. */
enum { EG_TRANSPOSE_CONV2D_WINO_MIN_C = 32 };
/* WINOGRAD's packed filter is 16/9 of the weight and is held beside it (the forward conv reads
 * the weight): AUTO packs it only where at least this many 2x2 output tiles share it. Below,
 * the memory buys little: ResNet-18's layer3/layer4 at 64x64 input (32 and 8 tiles at batch
 * 8) would hold 63 MB of packed filters for 2.8 ms of a 68 ms step. */
enum { EG_TRANSPOSE_CONV2D_WINO_MIN_PACK_TILES = 64 };
/* A filter that is not constant (a trainable weight's input gradient) is transformed on every
 * call: WINOGRAD then where both channel counts are >= 32, there are at least this many tiles
 * and the output planes are smaller than FLIP's row bands take (conv2d_nhwc_f32.c: 512
 * pixels; on larger planes FLIP's bands run at r18-l1's 111-119 GFLOP/s). Batch 8, one
 * thread, CPU time, WINOGRAD vs FLIP: 16x16 planes (512 tiles) 64 -> 32 channels 762 vs
 * 1210 us, 32 -> 32 462 vs 643; 8x8 (128 tiles) 128 -> 64 1038 vs 1015, 64 -> 64 524 vs 493. */
enum { EG_TRANSPOSE_CONV2D_WINO_MIN_TILES = 256, EG_TRANSPOSE_CONV2D_WINO_MAX_PLANE = 511 };

typedef eg_transpose_conv2d_nhwc_params tparams;

static int64_t taps(const tparams *p) { return p->k_h * p->k_w; }

static bool is_empty(const tparams *p) {
  return p->n * p->h_out * p->w_out * p->c_out == 0;
}

/* AUTO, as measured on the dgrad benchmark shapes (GFLOP/s, nominal FLOPs). One thread: stride 1
 * -> FLIP (r18-l1..l4: 111-119 vs COL2IM 104-115), or WINOGRAD for 3x3 with a constant
 * (prepacked) filter and c_in, c_out >= 32 (AVX-512 EPYC, OpenBLAS Haswell kernels, CPU time:
 * l1 98-106 vs FLIP 78-93, l2 101-117 vs 80-96, l3 118-126 vs 70-88, l4 104-110 vs 75-89) and
 * enough tiles to share the packed filter (EG_TRANSPOSE_CONV2D_WINO_MIN_PACK_TILES), or one
 * transformed per call on planes of many tiles (EG_TRANSPOSE_CONV2D_WINO_MIN_TILES);
 * stride > 1 -> PHASE when c_out is wide enough (r18-l2-ds: 110 vs COL2IM 106), else COL2IM
 * (7x7 stem, c_out 3: 93 vs PHASE 19). When the work is cut into pieces (_plan) each piece runs
 * on one thread and gets the one-thread choice. Two or more threads on ONE piece (an OpenBLAS
 * that cannot run sgemm side by side), kernels larger than 1x1 -> COL2IM: its one sgemm has
 * N = k_h*k_w*c_out, and wide GEMMs keep scaling where FLIP/PHASE's N = c_out ones stall (two
 * vCPUs on a shared host, alternating 0.1 s bursts for 2 minutes per shape, COL2IM/FLIP mean:
 * l1 1.10, l2-ds 1.29, l2 1.06, l3 1.14, l4 1.16; in the quietest bursts FLIP led by at most
 * 5%). */
bool eg_transpose_conv2d_nhwc_f32_takes_filter_oi(const tparams *p) {
  return p->groups == 1 && !p->filter_oihw;
}

bool eg_transpose_conv2d_nhwc_f32_takes_oihw(const tparams *p) {
  return p->groups == 1 && !p->filter_oi;
}

eg_transpose_conv2d_algo eg_transpose_conv2d_nhwc_f32_pick(const tparams *p, int threads) {
  const bool stride1 = p->stride[0] == 1 && p->stride[1] == 1;
  if (p->filter_oihw) return EG_TRANSPOSE_CONV2D_COL2IM;
  const bool phase_ok = !stride1 && p->groups == 1;
  const bool wino_ok = stride1 && p->k_h == 3 && p->k_w == 3 && p->groups == 1;
  if (p->algo == EG_TRANSPOSE_CONV2D_COL2IM) return EG_TRANSPOSE_CONV2D_COL2IM;
  if (p->algo == EG_TRANSPOSE_CONV2D_WINOGRAD && wino_ok) return EG_TRANSPOSE_CONV2D_WINOGRAD;
  if (p->algo == EG_TRANSPOSE_CONV2D_FLIP && stride1) return EG_TRANSPOSE_CONV2D_FLIP;
  if (p->algo == EG_TRANSPOSE_CONV2D_PHASE && phase_ok) return EG_TRANSPOSE_CONV2D_PHASE;
  if (threads > 1 && taps(p) > 1) return EG_TRANSPOSE_CONV2D_COL2IM;
  const int64_t tiles = p->n * ((p->h_out + 1) / 2) * ((p->w_out + 1) / 2);
  if (wino_ok && p->c_in >= EG_TRANSPOSE_CONV2D_WINO_MIN_C &&
      p->c_out >= EG_TRANSPOSE_CONV2D_WINO_MIN_C &&
      (p->prepacked ? tiles >= EG_TRANSPOSE_CONV2D_WINO_MIN_PACK_TILES
                    : tiles >= EG_TRANSPOSE_CONV2D_WINO_MIN_TILES &&
                          p->h_out * p->w_out <= EG_TRANSPOSE_CONV2D_WINO_MAX_PLANE))
    return EG_TRANSPOSE_CONV2D_WINOGRAD;
  if (stride1) return EG_TRANSPOSE_CONV2D_FLIP;
  if (phase_ok && p->c_out >= EG_TRANSPOSE_CONV2D_PHASE_MIN_COUT) return EG_TRANSPOSE_CONV2D_PHASE;
  return EG_TRANSPOSE_CONV2D_COL2IM;
}

eg_transpose_conv2d_algo eg_transpose_conv2d_nhwc_f32_algo(const tparams *p) {
  return eg_transpose_conv2d_nhwc_f32_pick(p, 1);
}

/* ---- FLIP ---- */

static eg_conv2d_nhwc_params flip_params(const tparams *p) {
  return (eg_conv2d_nhwc_params){
      .n = p->n, .h_in = p->h_in, .w_in = p->w_in, .c_in = p->c_in, .h_out = p->h_out,
      .w_out = p->w_out, .c_out = p->c_out, .k_h = p->k_h, .k_w = p->k_w, .stride = {1, 1},
      .dilation = {1, 1}, .pad = {p->k_h - 1 - p->pad[0], p->k_w - 1 - p->pad[1]},
      .groups = p->groups, .flip = true, .filter_oi = p->filter_oi};
}

static int64_t regroup_floats(const tparams *p) {
  return p->groups > 1 ? eg_nhwc_round16(taps(p) * p->c_in * (p->c_out / p->groups)) : 0;
}

/* conv HWIO [t][ci'][q*cog + co'] <- transposed-conv filter [t][q*cig + ci'][co']. */
static void regroup_filter(const tparams *p, const float *f, float *out) {
  const int64_t cig = p->c_in / p->groups, cog = p->c_out / p->groups;
  for (int64_t t = 0; t < taps(p); t++)
    for (int64_t q = 0; q < p->groups; q++)
      for (int64_t ci = 0; ci < cig; ci++)
        memcpy(out + (t * cig + ci) * p->c_out + q * cog, f + (t * p->c_in + q * cig + ci) * cog,
               sizeof(float) * (size_t)cog);
}

static void run_flip(const tparams *p, const float *x, const float *f, const float *bias,
                     float *y, float *scratch) {
  const eg_conv2d_nhwc_params c = flip_params(p);
  const float *filter = f;
  if (p->groups > 1) {
    regroup_filter(p, f, scratch);
    filter = scratch;
  }
  eg_conv2d_nhwc_f32(&c, x, filter, bias, y, scratch + regroup_floats(p));
}

/* ---- PHASE ---- */

/* One sub-pixel phase along one dimension: output rows r, r+s, ... (count `out`), the taps
 * a0, a0+s, ... (count `k`), and the stride-1 conv pad that reads the right x rows. */
typedef struct phase1d {
  int64_t out, k, a0, pad;
} phase1d;

static phase1d phase_of(int64_t r, int64_t s, int64_t pad, int64_t ksize, int64_t size_out) {
  phase1d ph = {.out = r < size_out ? (size_out - r + s - 1) / s : 0};
  ph.a0 = (r + pad) % s;
  ph.k = ph.a0 < ksize ? (ksize - ph.a0 + s - 1) / s : 0;
  ph.pad = ph.k - 1 - (r + pad - ph.a0) / s;
  return ph;
}

static eg_conv2d_nhwc_params phase_conv(const tparams *p, const phase1d *ph, const phase1d *pw) {
  return (eg_conv2d_nhwc_params){
      .n = p->n, .h_in = p->h_in, .w_in = p->w_in, .c_in = p->c_in, .h_out = ph->out,
      .w_out = pw->out, .c_out = p->c_out, .k_h = ph->k, .k_w = pw->k, .stride = {1, 1},
      .dilation = {1, 1}, .pad = {ph->pad, pw->pad}, .groups = 1, .flip = true,
      .filter_oi = p->filter_oi, .chunk_bytes = p->chunk_bytes};
}

/* Scratch floats of the three PHASE regions, maxima over phases. */
static void phase_sizes(const tparams *p, int64_t *sub, int64_t *img, int64_t *conv) {
  *sub = *img = *conv = 0;
  for (int64_t ry = 0; ry < p->stride[0]; ry++)
    for (int64_t rx = 0; rx < p->stride[1]; rx++) {
      const phase1d ph = phase_of(ry, p->stride[0], p->pad[0], p->k_h, p->h_out);
      const phase1d pw = phase_of(rx, p->stride[1], p->pad[1], p->k_w, p->w_out);
      const eg_conv2d_nhwc_params c = phase_conv(p, &ph, &pw);
      const int64_t s = eg_nhwc_round16(ph.k * pw.k * p->c_in * p->c_out);
      const int64_t i = eg_nhwc_round16(p->n * ph.out * pw.out * p->c_out);
      const int64_t v = (int64_t)(eg_conv2d_nhwc_f32_scratch(&c) / sizeof(float));
      if (s > *sub) *sub = s;
      if (i > *img) *img = i;
      if (v > *conv) *conv = v;
    }
}

/* sub[mh][mw] = f[a0 + s*mh][b0 + s*mw], each a [c_in, c_out] block ([c_out, c_in] with
 * filter_oi: copied as they are). */
static void pack_subfilter(const tparams *p, const phase1d *ph, const phase1d *pw, const float *f,
                           float *sub) {
  const int64_t blk = p->c_in * p->c_out;
  for (int64_t mh = 0; mh < ph->k; mh++)
    for (int64_t mw = 0; mw < pw->k; mw++) {
      const int64_t a = ph->a0 + p->stride[0] * mh, b = pw->a0 + p->stride[1] * mw;
      memcpy(sub + (mh * pw->k + mw) * blk, f + (a * p->k_w + b) * blk,
             sizeof(float) * (size_t)blk);
    }
}

/* y rows ry + s*u, cols rx + s*v <- img[n, u, v] (or the bias when img is NULL). */
EG_SIMD_CLONES
static void scatter_phase(const tparams *p, int64_t ry, int64_t rx, const phase1d *ph,
                          const phase1d *pw, const float *img, const float *bias, float *y) {
  const int64_t c = p->c_out;
  const bool worth = eg_nhwc_omp_worth(p->n * ph->out * pw->out * c);
  EG_OMP_FOR_IF(worth, for (int64_t t = 0; t < p->n * ph->out; t++) {
    const int64_t n = t / ph->out, u = t % ph->out;
    float *dst = y + ((n * p->h_out + ry + p->stride[0] * u) * p->w_out + rx) * c;
    for (int64_t v = 0; v < pw->out; v++, dst += p->stride[1] * c) {
      if (img)
        memcpy(dst, img + (t * pw->out + v) * c, sizeof(float) * (size_t)c);
      else
        for (int64_t e = 0; e < c; e++) dst[e] = bias ? bias[e] : 0.0f;
    }
  });
}

static void run_phase(const tparams *p, const float *x, const float *f, const float *bias,
                      float *y, float *scratch) {
  int64_t sub_n, img_n, conv_n;
  phase_sizes(p, &sub_n, &img_n, &conv_n);
  float *sub = scratch, *img = scratch + sub_n, *conv_scratch = img + img_n;
  for (int64_t ry = 0; ry < p->stride[0]; ry++)
    for (int64_t rx = 0; rx < p->stride[1]; rx++) {
      const phase1d ph = phase_of(ry, p->stride[0], p->pad[0], p->k_h, p->h_out);
      const phase1d pw = phase_of(rx, p->stride[1], p->pad[1], p->k_w, p->w_out);
      if (ph.out == 0 || pw.out == 0) continue;
      if (ph.k == 0 || pw.k == 0) {
        scatter_phase(p, ry, rx, &ph, &pw, NULL, bias, y);
        continue;
      }
      const eg_conv2d_nhwc_params c = phase_conv(p, &ph, &pw);
      pack_subfilter(p, &ph, &pw, f, sub);
      eg_conv2d_nhwc_f32(&c, x, sub, bias, img, conv_scratch);
      scatter_phase(p, ry, rx, &ph, &pw, img, bias, y);
    }
}

/* ---- COL2IM ---- */

static int64_t col_rows(const tparams *p) {
  const int64_t width = taps(p) * (p->c_out / p->groups), m = p->n * p->h_in * p->w_in;
  const int64_t bytes = p->chunk_bytes > 0 ? p->chunk_bytes : EG_TRANSPOSE_CONV2D_COL_BYTES;
  int64_t rows = bytes / ((int64_t)sizeof(float) * (width > 0 ? width : 1));
  if (rows < EG_TRANSPOSE_CONV2D_MIN_ROWS) rows = EG_TRANSPOSE_CONV2D_MIN_ROWS;
  if (rows >= m) return m > 0 ? m : 1;
  const int64_t chunks = (m + rows - 1) / rows;
  return (m + chunks - 1) / chunks;
}

/* Fp[q][ci'][t][co'] = f[t][q*cig + ci'][co'] (with filter_oi, groups 1: f[t][co][ci]). */
static void pack_fp(const tparams *p, const float *f, float *fp) {
  const int64_t cog = p->c_out / p->groups, kk = taps(p);
  if (p->filter_oi) {
    for (int64_t ci = 0; ci < p->c_in; ci++)
      for (int64_t t = 0; t < kk; t++)
        for (int64_t co = 0; co < cog; co++)
          fp[(ci * kk + t) * cog + co] = f[(t * cog + co) * p->c_in + ci];
    return;
  }
  for (int64_t ci = 0; ci < p->c_in; ci++) /* ci = q*cig + ci': groups are consecutive blocks */
    for (int64_t t = 0; t < kk; t++)
      memcpy(fp + (ci * kk + t) * cog, f + (t * p->c_in + ci) * cog, sizeof(float) * (size_t)cog);
}

EG_SIMD_CLONES
static void fill_bias(float *y, const float *bias, int64_t pixels, int64_t c) {
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(pixels * c), for (int64_t r = 0; r < pixels; r++) {
    for (int64_t e = 0; e < c; e++) y[r * c + e] = bias ? bias[e] : 0.0f;
  });
}

/* y[pixel(r, t)] += col[r - r0, t] for input pixels [r0, r0 + m) and group q. Serial: two input
 * pixels can hit one output pixel. Along a kernel row the taps land on consecutive output
 * pixels, so with one group (cog = c_out) the in-bounds taps of a row are one contiguous run of
 * (b1-b0)*c_out floats in both col and y: one vector add instead of k_w short ones (the 7x7 stem
 * adds 21 floats at a time instead of 3). */
EG_SIMD_CLONES
static void col2im_add(const tparams *p, const float *col, int64_t r0, int64_t m, int64_t q,
                       float *y) {
  const int64_t cog = p->c_out / p->groups, kk = taps(p), hw = p->h_in * p->w_in;
  const bool runs = p->groups == 1;
  for (int64_t r = r0; r < r0 + m; r++) {
    const int64_t n = r / hw, i = r % hw / p->w_in, j = r % p->w_in;
    const int64_t x0 = j * p->stride[1] - p->pad[1]; /* output column of tap b = 0 */
    const int64_t b0 = x0 < 0 ? -x0 : 0, b1 = p->w_out - x0 < p->k_w ? p->w_out - x0 : p->k_w;
    const float *src = col + (r - r0) * kk * cog;
    for (int64_t a = 0; a < p->k_h && b0 < b1; a++) {
      const int64_t yy = i * p->stride[0] - p->pad[0] + a;
      if (yy < 0 || yy >= p->h_out) continue;
      /* output pixel of tap b0 (in bounds), and tap b0's column block */
      float *row = y + ((n * p->h_out + yy) * p->w_out + x0 + b0) * p->c_out + q * cog;
      const float *s_row = src + (a * p->k_w + b0) * cog;
      if (runs) {
        float *restrict d = row;
        const float *restrict s = s_row;
#pragma omp simd
        for (int64_t e = 0; e < (b1 - b0) * cog; e++) d[e] += s[e];
        continue;
      }
      for (int64_t b = 0; b < b1 - b0; b++) {
        float *restrict d = row + b * p->c_out;
        const float *restrict s = s_row + b * cog;
#pragma omp simd
        for (int64_t e = 0; e < cog; e++) d[e] += s[e];
      }
    }
  }
}

/* col2im_add for filter_oihw (groups 1): the columns of input pixel r are in (co, tap) order,
 * so each tap's c_out values are read k_h*k_w floats apart. */
EG_SIMD_CLONES
static void col2im_add_oihw(const tparams *p, const float *col, int64_t r0, int64_t m, float *y) {
  const int64_t kk = taps(p), hw = p->h_in * p->w_in, c = p->c_out;
  for (int64_t r = r0; r < r0 + m; r++) {
    const int64_t n = r / hw, i = r % hw / p->w_in, j = r % p->w_in;
    const float *src = col + (r - r0) * kk * c;
    for (int64_t a = 0; a < p->k_h; a++) {
      const int64_t yy = i * p->stride[0] - p->pad[0] + a;
      if (yy < 0 || yy >= p->h_out) continue;
      for (int64_t b = 0; b < p->k_w; b++) {
        const int64_t xx = j * p->stride[1] - p->pad[1] + b;
        if (xx < 0 || xx >= p->w_out) continue;
        float *restrict d = y + ((n * p->h_out + yy) * p->w_out + xx) * c;
        const float *restrict s = src + a * p->k_w + b;
#pragma omp simd
        for (int64_t e = 0; e < c; e++) d[e] += s[e * kk];
      }
    }
  }
}

/* COL2IM with filter_oi gathers Fp from the forward weight: a constant one is gathered once
 * (_pack, prepacked), not on every call. */
static bool col2im_packs(const tparams *p) { return p->filter_oi; }

/* Floats of COL2IM's Fp in scratch: none when the filter is read as it is (filter_oihw) or
 * passed packed. */
static int64_t col2im_fp_floats(const tparams *p) {
  if (p->filter_oihw || (p->prepacked && col2im_packs(p))) return 0;
  return eg_nhwc_round16(taps(p) * p->c_in * (p->c_out / p->groups));
}

static void run_col2im(const tparams *p, const float *x, const float *f, const float *bias,
                       float *y, float *scratch) {
  const int64_t cig = p->c_in / p->groups, cog = p->c_out / p->groups, kk = taps(p);
  const int64_t m = p->n * p->h_in * p->w_in, rows = col_rows(p);
  float *fp = scratch, *col = scratch + col2im_fp_floats(p);
  if (p->filter_oihw || (p->prepacked && col2im_packs(p))) /* OIHW: [c_in, c_out*kk] as it */
    fp = (float *)f;                                        /* is, (co, tap) columns; or Fp */
  else
    pack_fp(p, f, fp);
  fill_bias(y, bias, p->n * p->h_out * p->w_out, p->c_out);
  for (int64_t r0 = 0; r0 < m; r0 += rows) {
    const int64_t mc = m - r0 < rows ? m - r0 : rows;
    for (int64_t q = 0; q < p->groups; q++) {
      eg_nhwc_sgemm(false, false, mc, kk * cog, cig, x + r0 * p->c_in + q * cig, p->c_in,
                    fp + q * cig * kk * cog, kk * cog, 0.0f, col, kk * cog);
      if (p->filter_oihw)
        col2im_add_oihw(p, col, r0, mc, y);
      else
        col2im_add(p, col, r0, mc, q, y);
    }
  }
}

/* ---- WINOGRAD F(2x2, 3x3) ---- */

/* The FLIP conv y[o] = sum_m x[o - P + m] f[2 - m] (P = 2 - pad per dimension) by
 * winograd_nhwc_f32.h: the filter read rotated. */
static eg_winograd_nhwc_params wino_params(const tparams *p) {
  return (eg_winograd_nhwc_params){
      .n = p->n, .h_in = p->h_in, .w_in = p->w_in, .c_in = p->c_in, .h_out = p->h_out,
      .w_out = p->w_out, .c_out = p->c_out, .pad = {2 - p->pad[0], 2 - p->pad[1]},
      .rotated = true, .filter_oi = p->filter_oi, .prepacked = p->prepacked,
      .chunk_bytes = p->chunk_bytes};
}

/* ---- one piece ---- */

/* Floats of scratch for p run as one piece. */
static int64_t piece_scratch(const tparams *p) {
  if (is_empty(p) || p->n * p->h_in * p->w_in * p->c_in * taps(p) == 0) return 0;
  switch (eg_transpose_conv2d_nhwc_f32_algo(p)) {
  case EG_TRANSPOSE_CONV2D_FLIP: {
    const eg_conv2d_nhwc_params c = flip_params(p);
    return regroup_floats(p) + (int64_t)(eg_conv2d_nhwc_f32_scratch(&c) / sizeof(float));
  }
  case EG_TRANSPOSE_CONV2D_PHASE: {
    int64_t sub, img, conv;
    phase_sizes(p, &sub, &img, &conv);
    return sub + img + conv;
  }
  case EG_TRANSPOSE_CONV2D_WINOGRAD: {
    const eg_winograd_nhwc_params w = wino_params(p);
    return (int64_t)eg_winograd_nhwc_f32_scratch_floats(&w);
  }
  default:
    return col2im_fp_floats(p) + eg_nhwc_round16(col_rows(p) * taps(p) * (p->c_out / p->groups));
  }
}

static void run_piece(const tparams *p, const float *x, const float *filter, const float *bias,
                      float *y, float *scratch) {
  if (is_empty(p)) return;
  if (p->n * p->h_in * p->w_in * p->c_in * taps(p) == 0) {
    fill_bias(y, bias, p->n * p->h_out * p->w_out, p->c_out);
    return;
  }
  switch (eg_transpose_conv2d_nhwc_f32_algo(p)) {
  case EG_TRANSPOSE_CONV2D_FLIP: run_flip(p, x, filter, bias, y, scratch); break;
  case EG_TRANSPOSE_CONV2D_PHASE: run_phase(p, x, filter, bias, y, scratch); break;
  case EG_TRANSPOSE_CONV2D_WINOGRAD: {
    const eg_winograd_nhwc_params w = wino_params(p);
    eg_winograd_nhwc_f32(&w, x, filter, bias, y, scratch);
    break;
  }
  default: run_col2im(p, x, filter, bias, y, scratch); break;
  }
}

/* ---- pieces ---- */

/* Pieces: one multi-threaded sgemm with N = c_out (32-512 columns) scales erratically on two
 * threads; two single-threaded ones side by side scale almost linearly. Measured, 2 threads,
 * same window, GFLOP/s, FLIP/PHASE/COL2IM: pieces l1 166, l2-ds 151, l2 181, l3 175, l4 174,
 * pw-1x1 119, stem 118 (sgemm 1024^3: 182) where one piece gave 0.55x PyTorch's geomean. Below
 * this many multiply-adds per piece the fork/join is not worth it. */
#define EG_TRANSPOSE_CONV2D_PIECE_MIN_MACS ((int64_t)1 << 22)

/* One piece: a TransposeConv2d of its own (params.parts 1) on x + x_off writing y + y_off. */
typedef struct piece {
  tparams p;
  int64_t x_off, y_off;
} piece;

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Output row bands per image: 1 when the images alone can be shared out (n >= parts). */
static int64_t bands_per_image(const tparams *p) {
  return p->n >= p->parts ? 1 : p->parts / gcd64(p->n, p->parts);
}

static int64_t piece_count(const tparams *p) {
  return p->n >= p->parts ? p->parts : p->n * bands_per_image(p);
}

/* Piece u of piece_count(p). Images: piece u gets images [u*n/T, (u+1)*n/T). Bands: image
 * u / B, output rows [y0, y1) = band u % B of B near-equal bands; its x rows are [i0, i1), the
 * rows whose taps reach the band (x row i meets output rows i*sh - pad + a, a < k_h), and the
 * band is the TransposeConv2d of those rows with pad' = pad + y0 - i0*sh (>= 0: i0 is lowered
 * when the kernel is shorter than the stride) whose products outside [y0, y1) are dropped. */
static piece piece_at(const tparams *p, int64_t u) {
  piece pc = {.p = *p};
  pc.p.parts = 1;
  const int64_t x_img = p->h_in * p->w_in * p->c_in, y_img = p->h_out * p->w_out * p->c_out;
  const int64_t bands = bands_per_image(p);
  if (bands == 1) {
    const int64_t n0 = u * p->n / p->parts, n1 = (u + 1) * p->n / p->parts;
    pc.p.n = n1 - n0;
    pc.x_off = n0 * x_img;
    pc.y_off = n0 * y_img;
    return pc;
  }
  const int64_t img = u / bands, b = u % bands, s = p->stride[0];
  const int64_t y0 = b * p->h_out / bands, y1 = (b + 1) * p->h_out / bands;
  const int64_t first = y0 + p->pad[0] - (p->k_h - 1); /* lowest i*s that reaches y0 */
  int64_t i0 = first <= 0 ? 0 : (first + s - 1) / s;
  if (i0 * s > y0 + p->pad[0]) i0 = (y0 + p->pad[0]) / s;
  int64_t i1 = y1 > y0 ? (y1 - 1 + p->pad[0]) / s + 1 : i0; /* past the last that reaches y1-1 */
  if (i1 > p->h_in) i1 = p->h_in;
  if (i1 < i0) i1 = i0;
  pc.p.n = 1;
  pc.p.h_in = i1 - i0;
  pc.p.h_out = y1 - y0;
  pc.p.pad[0] = p->pad[0] + y0 - i0 * s;
  pc.x_off = img * x_img + i0 * p->w_in * p->c_in;
  pc.y_off = img * y_img + y0 * p->w_out * p->c_out;
  return pc;
}

/* Floats of one thread's scratch: the largest piece's, line-rounded. */
static int64_t per_thread_scratch(const tparams *p) {
  int64_t most = 0;
  for (int64_t u = 0; u < piece_count(p); u++) {
    const piece pc = piece_at(p, u);
    const int64_t f = eg_nhwc_round16(piece_scratch(&pc.p));
    if (f > most) most = f;
  }
  return most;
}

static void run_pieces(const tparams *p, const float *x, const float *filter, const float *bias,
                       float *y, float *scratch) {
  const int64_t count = piece_count(p), per = per_thread_scratch(p);
#pragma omp parallel num_threads((int)p->parts)
  {
    float *mine = scratch + (int64_t)omp_get_thread_num() * per;
#pragma omp for schedule(static)
    for (int64_t u = 0; u < count; u++) {
      const piece pc = piece_at(p, u);
      run_piece(&pc.p, x + pc.x_off, filter, bias, y + pc.y_off, mine);
    }
  }
}

/* ---- entry points ---- */

void eg_transpose_conv2d_nhwc_f32_plan(tparams *p, int threads) {
  const int64_t macs = p->n * p->h_in * p->w_in * p->c_in * taps(p) * (p->c_out / p->groups);
  p->parts = 1;
  if (threads > 1 && eg_nhwc_blas_nests() && macs / threads >= EG_TRANSPOSE_CONV2D_PIECE_MIN_MACS)
    p->parts = threads;
  p->algo = eg_transpose_conv2d_nhwc_f32_pick(p, p->parts > 1 ? 1 : threads);
}

size_t eg_transpose_conv2d_nhwc_f32_packed_floats(const tparams *p) {
  const eg_winograd_nhwc_params w = wino_params(p);
  const eg_transpose_conv2d_algo algo = eg_transpose_conv2d_nhwc_f32_algo(p);
  if (algo == EG_TRANSPOSE_CONV2D_WINOGRAD) return eg_winograd_nhwc_f32_packed_floats(&w);
  if (algo == EG_TRANSPOSE_CONV2D_COL2IM && col2im_packs(p))
    return (size_t)(taps(p) * p->c_in * (p->c_out / p->groups));
  return 0;
}

void eg_transpose_conv2d_nhwc_f32_pack(const tparams *p, const float *filter, float *packed) {
  const eg_winograd_nhwc_params w = wino_params(p);
  const eg_transpose_conv2d_algo algo = eg_transpose_conv2d_nhwc_f32_algo(p);
  if (algo == EG_TRANSPOSE_CONV2D_WINOGRAD) eg_winograd_nhwc_f32_pack(&w, filter, packed);
  else if (algo == EG_TRANSPOSE_CONV2D_COL2IM && col2im_packs(p)) pack_fp(p, filter, packed);
}

/* ---- DIRECT: one output channel per group ---- */

/* c_out == groups > 1 (the input gradient of a depthwise conv): a GEMM per group would be a
 * matrix-vector product, so each output pixel gathers its taps directly,
 *   y[n, o_h, o_w, q] = bias[q] + sum_{a, b, ci'} x[n, (o_h + pad_t - a) / s_h,
 *                                  (o_w + pad_l - b) / s_w, q*cig + ci'] * f[a, b, q*cig + ci', 0]
 * over the taps where both divisions are exact and in range, vectorised across the channels. */
static bool is_direct(const tparams *p) { return p->groups > 1 && p->c_out == p->groups; }

EG_SIMD_CLONES
static void direct_rows(const tparams *p, const float *x, const float *filter, const float *bias,
                        float *y, int64_t r0, int64_t r1) {
  const int64_t c = p->c_out, cig = p->c_in / p->groups;
  for (int64_t r = r0; r < r1; r++) {
    const int64_t n = r / p->h_out, oh = r % p->h_out;
    for (int64_t ow = 0; ow < p->w_out; ow++) {
      float *restrict yr = y + (r * p->w_out + ow) * c;
      for (int64_t q = 0; q < c; q++) yr[q] = bias ? bias[q] : 0.0f;
      for (int64_t a = 0; a < p->k_h; a++) {
        const int64_t th = oh + p->pad[0] - a;
        if (th < 0 || th % p->stride[0] || th / p->stride[0] >= p->h_in) continue;
        for (int64_t b = 0; b < p->k_w; b++) {
          const int64_t tw = ow + p->pad[1] - b;
          if (tw < 0 || tw % p->stride[1] || tw / p->stride[1] >= p->w_in) continue;
          const float *restrict xr =
              x + ((n * p->h_in + th / p->stride[0]) * p->w_in + tw / p->stride[1]) * p->c_in;
          const float *restrict fr = filter + (a * p->k_w + b) * p->c_in; /* tap's [c_in, 1] */
          if (cig == 1) {
#pragma omp simd
            for (int64_t q = 0; q < c; q++) yr[q] += xr[q] * fr[q];
          } else {
            for (int64_t q = 0; q < c; q++) {
              float acc = 0.0f;
              for (int64_t ci = 0; ci < cig; ci++) acc += xr[q * cig + ci] * fr[q * cig + ci];
              yr[q] += acc;
            }
          }
        }
      }
    }
  }
}

/* Taps of one output coordinate o of a cig-1 DIRECT along one dim (kernel k, stride s, pad
 * before, input size in): tap[i] the kernel index and at[i] the input index of each tap that
 * lands on o, ascending; returns their count (at most EG_TCONV_DW_TAPS). */
enum { EG_TCONV_DW_TAPS = 16, EG_TCONV_DW_BLOCK = 16 };
static int dw_taps(int64_t o, int64_t k, int64_t s, int64_t pad, int64_t in, int64_t *tap,
                   int64_t *at) {
  int nt = 0;
  for (int64_t a = ((o + pad) % s + s) % s; a < k && o + pad - a >= 0; a += s) {
    const int64_t i = (o + pad - a) / s;
    if (i < in) tap[nt] = a, at[nt++] = i;
  }
  return nt;
}

/* The channels [full, c) of one output pixel (yr) of a cig-1 DIRECT, its taps given. */
static inline void direct_tail(const tparams *p, const float *x, const float *filter,
                               const float *bias, int64_t n, const int64_t *ta,
                               const int64_t *ia, int na, const int64_t *tb, const int64_t *ib,
                               int nb, int64_t full, float *yr) {
  const int64_t c = p->c_out;
  for (int64_t q = full; q < c; q++) {
    float v = bias ? bias[q] : 0.0f;
    for (int i = 0; i < na; i++)
      for (int j = 0; j < nb; j++)
        v += x[((n * p->h_in + ia[i]) * p->w_in + ib[j]) * c + q] *
             filter[(ta[i] * p->k_w + tb[j]) * c + q];
    yr[q] = v;
  }
}

/* Output pixels ow..ow+np-1 (np 1 to 4) of output row r (its row taps ta/ia, na of them) of a
 * cig-1 DIRECT, channels [c0, c0 + 16), into yr (pixel q at yr + q*c): bias (or 0), then the
 * taps in (a, b) order, the sums in registers. np > 1 only at stride 1 where every pixel has
 * all k_w column taps (tap b reads input column ow + q + pad - b), each filter vector then
 * serving the np pixels; np 1 takes the pixel's own column taps tb/ib (nb of them). Inlined
 * with constant np into its caller's clone. */
static EG_V8_INLINE void dw_block(const tparams *p, const float *x, const float *filter,
                                  const float *bias, int64_t n, const int64_t *ta,
                                  const int64_t *ia, int na, const int64_t *tb, const int64_t *ib,
                                  int nb, int64_t ow, int64_t c0, float *yr, const int np) {
  const int64_t c = p->c_out;
  eg_v8 acc[4][2];
  eg_v8_block_init(acc, np, bias ? bias + c0 : NULL);
  const int cols = np > 1 ? (int)p->k_w : nb;
  for (int i = 0; i < na; i++) {
    const float *xrow = x + (n * p->h_in + ia[i]) * p->w_in * c + c0;
    for (int j = 0; j < cols; j++) {
      const int64_t b = np > 1 ? j : tb[j], col = np > 1 ? ow + p->pad[1] - j : ib[j];
      eg_v8_block_tap(acc, np, filter + (ta[i] * p->k_w + b) * c + c0, xrow + col * c, c);
    }
  }
  eg_v8_block_store(yr, c, acc, np);
}

/* Rows [r0, r1) of a cig-1 DIRECT (the input gradient of a depthwise conv, kernels of at most
 * EG_TCONV_DW_TAPS taps a side): per output pixel its taps found once, then per block of 16
 * channels the sums in registers over them: bias (or 0), then the taps in (a, b) order, as
 * direct_rows adds them; at stride 1, 4 pixels at a time where each has all k_w column taps
 * (dw_block); the channels past the last block as direct_rows does. */
EG_SIMD_CLONES
static void direct_rows_dw(const tparams *p, const float *x, const float *filter,
                           const float *bias, float *y, int64_t r0, int64_t r1) {
  const int64_t c = p->c_out, full = c / EG_TCONV_DW_BLOCK * EG_TCONV_DW_BLOCK;
  int64_t ta[EG_TCONV_DW_TAPS], ia[EG_TCONV_DW_TAPS], tb[EG_TCONV_DW_TAPS], ib[EG_TCONV_DW_TAPS];
  /* stride 1: output columns [j0, j1) have every column tap (0 <= ow + pad - b < w_in) */
  int64_t j0 = p->k_w - 1 - p->pad[1], j1 = p->w_in - p->pad[1];
  if (j0 < 0) j0 = 0;
  if (j1 > p->w_out) j1 = p->w_out;
  if (p->stride[1] != 1 || j0 > j1) j0 = j1 = 0;
  for (int64_t r = r0; r < r1; r++) {
    const int64_t n = r / p->h_out, oh = r % p->h_out;
    const int na = dw_taps(oh, p->k_h, p->stride[0], p->pad[0], p->h_in, ta, ia);
    float *yrow = y + r * p->w_out * c;
    int64_t ow = 0;
    while (ow < p->w_out) {
      if (ow >= j0 && ow + 4 <= j1) {
        for (int64_t c0 = 0; c0 < full; c0 += EG_TCONV_DW_BLOCK)
          dw_block(p, x, filter, bias, n, ta, ia, na, NULL, NULL, 0, ow, c0, yrow + ow * c + c0,
                   4);
        for (int64_t q = 0; q < 4; q++) {
          const int nb = dw_taps(ow + q, p->k_w, 1, p->pad[1], p->w_in, tb, ib);
          direct_tail(p, x, filter, bias, n, ta, ia, na, tb, ib, nb, full, yrow + (ow + q) * c);
        }
        ow += 4;
        continue;
      }
      const int nb = dw_taps(ow, p->k_w, p->stride[1], p->pad[1], p->w_in, tb, ib);
      for (int64_t c0 = 0; c0 < full; c0 += EG_TCONV_DW_BLOCK)
        dw_block(p, x, filter, bias, n, ta, ia, na, tb, ib, nb, ow, c0, yrow + ow * c + c0, 1);
      direct_tail(p, x, filter, bias, n, ta, ia, na, tb, ib, nb, full, yrow + ow * c);
      ow++;
    }
  }
}

static void run_direct(const tparams *p, const float *x, const float *filter, const float *bias,
                       float *y) {
  const int64_t rows = p->n * p->h_out;
  if (p->c_in == p->groups && p->k_h <= EG_TCONV_DW_TAPS && p->k_w <= EG_TCONV_DW_TAPS) {
#pragma omp parallel if (eg_nhwc_omp_worth(rows * p->w_out * p->c_in * taps(p)) && rows > 1)
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      direct_rows_dw(p, x, filter, bias, y, rows * t / nt, rows * (t + 1) / nt);
    }
    return;
  }
  if (eg_nhwc_omp_worth(rows * p->w_out * p->c_in * taps(p)) && rows > 1) {
#pragma omp parallel
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      direct_rows(p, x, filter, bias, y, rows * t / nt, rows * (t + 1) / nt);
    }
  } else {
    direct_rows(p, x, filter, bias, y, 0, rows);
  }
}

size_t eg_transpose_conv2d_nhwc_f32_scratch(const tparams *p) {
  if (is_direct(p)) return 0;
  if (p->parts > 1 && !is_empty(p))
    return sizeof(float) * (size_t)(p->parts * per_thread_scratch(p));
  return sizeof(float) * (size_t)piece_scratch(p);
}

void eg_transpose_conv2d_nhwc_f32(const tparams *p, const float *x, const float *filter,
                                  const float *bias, float *y, void *scratch) {
  EG_ASSERT(!p->filter_oi || eg_transpose_conv2d_nhwc_f32_takes_filter_oi(p));
  EG_ASSERT(!p->filter_oihw || eg_transpose_conv2d_nhwc_f32_takes_oihw(p));
  if (is_direct(p))
    run_direct(p, x, filter, bias, y);
  else if (p->parts > 1 && !is_empty(p))
    run_pieces(p, x, filter, bias, y, scratch);
  else
    run_piece(p, x, filter, bias, y, scratch);
}
