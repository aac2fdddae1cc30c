/* convolution_backward_nchw_f32.c — aten.convolution_backward, 2-D, NCHW, fp32.
 *
 * Phrased on the geometry of conv_im2col.h (eg_conv_geom): a `big` side (the conv's input, the
 * transposed conv's output) and a `small` side, weight [cs, cbg = cb/groups, kh, kw], and
 *   small[n, co, i, j] = sum over ci, a, b of
 *                        w[co, ci % cbg, a, b] * big[n, ci, i*sh - ph + a*dh, j*sw - pw + b*dw].
 *
 *   gx: the input gradient of a conv is the transposed conv of gy with the same weight, and that
 *       of a transposed conv is the plain conv of gy: same geometry, opposite direction. So gx
 *       is eg_convolution_nchw_f32 called with in/out swapped and `transposed` negated.
 *   gw: per group, gw_g = sum_n small_g,n [csg, hs*ws] x im2col(big_g,n)^T [hs*ws, cbg*kh*kw]
 *       — big is x and small is gy for a conv, the other way round for a transposed conv.
 *       Images with few pixels are batched along the GEMM's K dimension (eg_conv_plan_images).
 *       Depthwise (one big channel per group, few small ones): a direct dot product per tap
 *       (conv_depthwise_nchw.h's over zero-padded planes, else one row at a time here).
 *   gb: sum of gy over batch and pixels, per channel.
 *
 * Geometry, batching, im2col and packing are conv_im2col.c's, shared with the forward kernel.
 * Build with -fopenmp. */
#include "kernels/conv_depthwise_nchw.h"
#include "kernels/conv_im2col.h"
#include "kernels/conv_rowband_nchw.h"
#include "kernels/transpose_f32.h"

#include <cblas.h>
#include <string.h>
#include "util/parallel.h"
#include "util/simd.h"

/* Largest channel multiplier for which the direct depthwise weight gradient beats GEMM. */
enum { EG_CONV_DW_WGRAD_MAX = 4 };

/* Most small-side channels per group for which weight_grad computes the transposed GEMM. */
enum { EG_CONV_WGRAD_T_MAX_CS = 64 };

/* sum over in-bounds (i, j) of small_plane[i][j] * big_plane[i*sh - ph + a*dh][j*sw - pw + b*dw]:
 * the gradient of one tap of a single-channel convolution, over one image. */
EG_SIMD_CLONES
static double tap_dot(const eg_conv_geom *g, const float *big_plane, const float *small_plane,
                      eg_conv_tap t) {
  double sum = 0.0;
  for (int64_t i = t.i0; i < t.i1; i++) {
    const float *bp = big_plane + (i * g->sh + t.off_h) * g->wb, *sp = small_plane + i * g->ws;
    float row = 0.0f;
    if (g->sw == 1) { /* the common case, kept separate so that it vectorizes */
#pragma omp simd reduction(+ : row)
      for (int64_t j = t.j0; j < t.j1; j++) row += sp[j] * bp[j + t.off_w];
    } else {
      for (int64_t j = t.j0; j < t.j1; j++) row += sp[j] * bp[j * g->sw + t.off_w];
    }
    sum += (double)row;
  }
  return sum;
}

/* gw for eg_conv_geom_depthwise: one dot product per (small channel, tap), over all images. */
static void wgrad_depthwise(const eg_conv_geom *g, const float *big, const float *small,
                            float *gw) {
  const int64_t kk = g->kh * g->kw, csg = g->cs / g->groups, p = g->hs * g->ws;
#pragma omp parallel for schedule(static) if (eg_conv_omp_worth(g->n * g->cs * p * kk))
  for (int64_t t = 0; t < g->cs * kk; t++) {
    const int64_t c = t / kk;
    const eg_conv_tap tap = eg_conv_tap_at(g, t % kk / g->kw, t % g->kw);
    double sum = 0.0;
    for (int64_t n = 0; n < g->n; n++)
      sum += tap_dot(g, big + (n * g->cb + c / csg) * g->hb * g->wb, small + (n * g->cs + c) * p,
                     tap);
    gw[t] = (float)sum;
  }
}

/* Floats of scratch for weight_grad: column matrix (unless pointwise), packed small side and
 * the transposed gradient. */
static int64_t wgrad_scratch_floats(const eg_conv_geom *g) {
  if (eg_conv_geom_depthwise(g, EG_CONV_DW_WGRAD_MAX)) return 0;
  if (eg_conv_rowband_applies(g)) return eg_conv_rowband_wgrad_scratch_floats(g);
  return eg_conv_gemm_scratch_floats(g) +
         eg_conv_round_up_floats(g->cs * (g->cb / g->groups) * g->kh * g->kw);
}

/* Small channels per piece of untranspose_wgrad: a strip of whole transpose tiles. */
enum { EG_CONV_WGRAD_STRIP = 32 };

/* gw[q][co][r] = gwt[q][r][co]: per group, [cbg*kk, csg] to [csg, cbg*kk], by cache-sized tiles
 * (transpose_f32.h) in strips of small channels shared out over the team (column by column,
 * one core: 384 -> 64 channels 1x1 of 4x4, 8 images, the whole weight gradient 0.094 ms, now
 * 0.078; a 512x4608 gradient, strided reads 2 KiB apart, 9.5 ms, by tiles about 3). */
static void untranspose_wgrad(const eg_conv_geom *g, const float *gwt, float *gw) {
  const int64_t rows = g->cb / g->groups * g->kh * g->kw, csg = g->cs / g->groups;
  const int64_t strips = (csg + EG_CONV_WGRAD_STRIP - 1) / EG_CONV_WGRAD_STRIP;
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(g->cs * rows),
                  for (int64_t t = 0; t < g->groups * strips; t++) {
                    const int64_t q = t / strips, co = t % strips * EG_CONV_WGRAD_STRIP;
                    const int64_t nc = csg - co < EG_CONV_WGRAD_STRIP ? csg - co
                                                                      : EG_CONV_WGRAD_STRIP;
                    eg_transpose_2d_f32(gwt + q * rows * csg + co, csg,
                                        gw + (q * csg + co) * rows, rows, nc, rows);
                  });
}

/* gw = sum over images of small x im2col(big)^T, per group; overwrites gw. With few small
 * channels sgemm runs far faster with its M the longer side of gw, so when csg <=
 * EG_CONV_WGRAD_T_MAX_CS and cbg*kh*kw >= csg the GEMM makes the transpose, im2col(big) x
 * small^T [cbg*kk, csg], into scratch, then untranspose_wgrad (OpenBLAS 0.3, one core, 8 images,
 * 3x3: 16 channels of 32x32 1.07 -> 0.53 ms, 32 of 16x16 0.72 -> 0.45, 64 of 16x16 2.55 -> 2.04;
 * a 1x1 conv from 24 to 144 channels of 16x16 took 0.12 ms more transposed). With more small
 * channels the orientations' GEMMs run alike and the transpose pass, through a gradient that
 * outgrows the caches, is pure cost (ResNet-18's 3x3 convs of 8 images, direct vs transposed:
 * 512 channels of 2x2 1.9 vs 4.5 ms, 256 of 4x4 1.66 vs 1.9, 128 of 8x8 1.78 vs 1.79; 1x1 convs
 * to 112..192 channels of 2x2..4x4 0.13-0.21 vs 0.17-0.24). */
static void weight_grad(const eg_conv_geom *g, const float *big, const float *small, float *gw,
                        float *scratch) {
  const int64_t nb = eg_conv_plan_images(g), p = g->hs * g->ws, kk = g->kh * g->kw;
  const int64_t cbg = g->cb / g->groups, csg = g->cs / g->groups;
  const bool direct = nb == 1 && eg_conv_geom_pointwise(g);
  float *col = scratch; /* unused when direct */
  float *packed = nb > 1 ? scratch + eg_conv_round_up_floats(g->cb * kk * nb * p) : NULL;
  float *gwt = scratch + eg_conv_gemm_scratch_floats(g);
  const bool transposed = csg <= EG_CONV_WGRAD_T_MAX_CS && cbg * kk >= csg;
  /* one region: each thread keeps the same share of gw (of gwt) over all batches, so every
   * element is summed batch after batch as by one thread */
  EG_OMP_PARALLEL_IF(eg_conv_team_worth(g->n * p * g->cs * cbg * kk), {
    for (int64_t n0 = 0; n0 < g->n; n0 += nb) {
      const int64_t m = g->n - n0 < nb ? g->n - n0 : nb, ld = m * p;
      const float *bsrc = big + n0 * g->cb * g->hb * g->wb, *ssrc = small + n0 * g->cs * p;
      if (!direct) eg_conv_im2col(g, bsrc, m, col);
      if (nb > 1) eg_conv_pack_images(ssrc, m, g->cs, p, packed);
      const float *b = direct ? bsrc : col, *a = nb > 1 ? packed : ssrc;
      const float beta = n0 == 0 ? 0.0f : 1.0f; /* the first batch overwrites gw */
      for (int64_t q = 0; q < g->groups; q++) {
        const float *aq = a + q * csg * ld, *bq = b + q * cbg * kk * ld;
        if (transposed)
          eg_conv_sgemm_team(false, true, cbg * kk, csg, ld, bq, ld, aq, ld, beta,
                             gwt + q * csg * cbg * kk, csg);
        else
          eg_conv_sgemm_team(false, true, csg, cbg * kk, ld, aq, ld, bq, ld, beta,
                             gw + q * csg * cbg * kk, cbg * kk);
      }
      eg_omp_barrier(); /* col and packed read by every share */
    }
    if (transposed) untranspose_wgrad(g, gwt, gw);
  });
}

/* gb[c] = sum of gy[:, c, :, :], accumulated in double. */
static void bias_grad(const eg_conv2d_params *p, const float *gy, float *gb) {
  const int64_t plane = p->h_out * p->w_out;
#pragma omp parallel for schedule(static) if (eg_conv_omp_worth(p->n * p->c_out * plane))
  for (int64_t c = 0; c < p->c_out; c++) {
    double s = 0.0;
    for (int64_t n = 0; n < p->n; n++) {
      const float *src = gy + (n * p->c_out + c) * plane;
#pragma omp simd reduction(+ : s)
      for (int64_t e = 0; e < plane; e++) s += (double)src[e];
    }
    gb[c] = (float)s;
  }
}

/* Parameters of the forward call that computes gx: gy in, gx out, direction flipped. The
 * output_padding of a derived transposed conv is whatever makes its output exactly x's size
 * (the rows/columns of x that no tap reached); the kernel itself takes sizes from the struct. */
static eg_conv2d_params gx_params(const eg_conv2d_params *p) {
  eg_conv2d_params q = *p;
  q.c_in = p->c_out;
  q.h_in = p->h_out;
  q.w_in = p->w_out;
  q.c_out = p->c_in;
  q.h_out = p->h_in;
  q.w_out = p->w_in;
  q.transposed = !p->transposed;
  const int64_t k[2] = {p->k_h, p->k_w}, in[2] = {q.h_in, q.w_in}, out[2] = {q.h_out, q.w_out};
  for (int d = 0; d < 2; d++)
    q.output_padding[d] = q.transposed ? out[d] - ((in[d] - 1) * p->stride[d] - 2 * p->padding[d] +
                                                   p->dilation[d] * (k[d] - 1) + 1)
                                       : 0;
  return q;
}

size_t eg_convolution_backward_nchw_f32_scratch(const eg_conv2d_params *p, const bool mask[3]) {
  size_t bytes = 0;
  if (mask[0]) {
    const eg_conv2d_params q = gx_params(p);
    bytes = eg_convolution_nchw_f32_scratch(&q);
  }
  const eg_conv_geom g = eg_conv_geom_of(p);
  if (mask[1] && !eg_conv_geom_empty(&g)) {
    const size_t w_bytes = sizeof(float) * (size_t)wgrad_scratch_floats(&g);
    if (w_bytes > bytes) bytes = w_bytes;
  }
  return bytes;
}

size_t eg_convolution_backward_nchw_f32_prepared_bytes(const eg_conv2d_params *p,
                                                       const bool mask[3]) {
  if (!mask[0]) return 0;
  const eg_conv2d_params q = gx_params(p);
  return eg_convolution_nchw_f32_prepared_bytes(&q);
}

void eg_convolution_backward_nchw_f32_prepare(const eg_conv2d_params *p, const bool mask[3],
                                              const float *w, void *prepared) {
  if (!mask[0]) return;
  const eg_conv2d_params q = gx_params(p);
  eg_convolution_nchw_f32_prepare(&q, w, prepared);
}

void eg_convolution_backward_nchw_f32(const eg_conv2d_params *p, const bool mask[3],
                                      const float *gy, const float *x, const float *w,
                                      float *gx, float *gw, float *gb, void *scratch) {
  eg_convolution_backward_nchw_f32_prepared(p, mask, gy, x, w, NULL, gx, gw, gb, scratch);
}

EG_SIMD_CLONES
void eg_convolution_backward_nchw_f32_prepared(const eg_conv2d_params *p, const bool mask[3],
                                               const float *gy, const float *x, const float *w,
                                               const void *prepared, float *gx, float *gw,
                                               float *gb, void *scratch) {
  if (mask[2]) bias_grad(p, gy, gb);
  if (mask[0]) {
    const eg_conv2d_params q = gx_params(p);
    eg_convolution_nchw_f32_prepared(&q, gy, w, prepared, NULL, gx, scratch);
  }
  if (mask[1]) {
    const eg_conv_geom g = eg_conv_geom_of(p);
    const int64_t w_floats = g.cs * (g.cb / g.groups) * g.kh * g.kw;
    if (eg_conv_geom_empty(&g))
      memset(gw, 0, sizeof(float) * (size_t)w_floats);
    else if (eg_conv_geom_depthwise(&g, EG_CONV_DW_WGRAD_MAX) && eg_conv_dw_wgrad_applies(&g))
      eg_conv_dw_wgrad(&g, p->transposed ? gy : x, p->transposed ? x : gy, gw);
    else if (eg_conv_geom_depthwise(&g, EG_CONV_DW_WGRAD_MAX))
      wgrad_depthwise(&g, p->transposed ? gy : x, p->transposed ? x : gy, gw);
    else if (eg_conv_rowband_applies(&g))
      eg_conv_rowband_wgrad(&g, p->transposed ? gy : x, p->transposed ? x : gy, gw, scratch);
    else
      weight_grad(&g, p->transposed ? gy : x, p->transposed ? x : gy, gw, scratch);
  }
}
