/* convolution_nchw_f32.c — aten.convolution, 2-D, NCHW, fp32: im2col/col2im + CBLAS sgemm.
 *
 * Every case is phrased on the geometry of conv_im2col.h (eg_conv_geom): a `big` side and a
 * `small` side related by
 *   small[n, co, i, j] = sum over ci in co's group, taps (a, b) of
 *                        w[co, ci % cbg, a, b] * big[n, ci, i*sh - ph + a*dh, j*sw - pw + b*dw]
 * (big read as 0 outside its bounds; cbg = cb/groups, csg = cs/groups), w laid out
 * [cs, cbg, kh, kw]. A convolution maps big -> small ("down"); a transposed convolution maps
 * small -> big by the adjoint ("up"). The input gradients are the same two maps with the
 * direction flipped (convolution_backward_nchw_f32.c calls this kernel for them).
 *
 *   down: per group, small_g = W_g [csg, cbg*kh*kw] x im2col(big_g) [cbg*kh*kw, hs*ws]; a
 *         1x1/stride-1/unpadded conv skips im2col (the big image is its own column matrix).
 *   up:   stride 1 (unless the weights outweigh the activations): a "down" on the swapped
 *         geometry with flipped, channel-swapped weights (the full correlation), keeping
 *         GEMM's long K = csg*kh*kw and the cheap im2col; otherwise col = W_g^T x small_g
 *         by GEMM, then col2im scatters col into big.
 *   depthwise (one big channel per group, few small ones): direct loops over the taps, since
 *         K = kh*kw is far too short for a GEMM: conv_depthwise_nchw.h's, which keep a row's
 *         sums in registers (down, and the stride-1 up as a gather), else the tap-by-tap passes
 *         below (same results bit for bit).
 *   Winograd: a 3x3 stride-1 "down" with enough channels and output tiles (the forward conv
 *         and, through the flip, the stride-1 input gradient) runs by F(2x2, 3x3)
 *         (conv_winograd_nchw.h).
 *
 * Small GEMMs are slow, so images with few output pixels are packed side by side into one GEMM
 * (eg_conv_plan_images). Scratch holds the column matrix, the packed images and the flipped
 * weights; the _scratch function and the kernel derive their layout from the same plan. Our own
 * loops use OpenMP (see eg_conv_omp_worth); a call with enough work runs its stages in one
 * parallel region, each thread its share of each GEMM (conv_im2col.h, Threading), the shares
 * computing every element as the whole GEMM does. Dimensions passed to sgemm must fit in an
 * int. Build with -fopenmp. */
#include "kernels/conv_depthwise_nchw.h"
#include "kernels/conv_im2col.h"
#include "kernels/conv_rowband_nchw.h"
#include "kernels/conv_winograd_nchw.h"

#include <cblas.h>
#include <string.h>
#include "util/parallel.h"
#include "util/simd.h"

/* ---- planning: which path, and how much scratch ---- */

/* Largest channel multiplier for which direct depthwise loops beat GEMM (see
 * eg_conv_geom_depthwise). */
enum { EG_CONV_DW_DOWN_MAX = 2, EG_CONV_DW_UP_MAX = INT32_MAX };

/* Floats of scratch for "down": the column matrix (unless pointwise) and, when images are
 * batched, the GEMM's output before it is unpacked to NCHW. */
static int64_t down_scratch_floats(const eg_conv_geom *g) {
  if (eg_conv_geom_depthwise(g, EG_CONV_DW_DOWN_MAX)) return 0;
  if (eg_conv_rowband_down_applies(g)) return eg_conv_rowband_scratch_floats(g);
  return eg_conv_wino_applies(g) ? eg_conv_wino_scratch_floats(g) : eg_conv_gemm_scratch_floats(g);
}

/* The swapped geometry of the stride-1 "up": the old small side is read (padded by
 * dil*(k-1) - pad, possibly negative) to produce the old big side. */
static eg_conv_geom geom_flipped(const eg_conv_geom *g) {
  eg_conv_geom f = *g;
  f.cb = g->cs;
  f.hb = g->hs;
  f.wb = g->ws;
  f.cs = g->cb;
  f.hs = g->hb;
  f.ws = g->wb;
  f.ph = g->dh * (g->kh - 1) - g->ph;
  f.pw = g->dw * (g->kw - 1) - g->pw;
  return f;
}

/* The stride-1 "up" as a flipped "down" (a permuted copy of the weights, then im2col + GEMM with
 * K = csg*kh*kw) beats GEMM + col2im (K = csg, and a scatter pass) unless the weights outweigh
 * the activations (measured, one core: r18-l1 108 vs 96 GFLOP/s; r18-l3 108 vs 113; r18-l4 101
 * vs 114), or when the flipped "down" runs by Winograd (r18-l2, 8 images: 1.0 vs 1.4 ms). */
static bool up_by_flip(const eg_conv_geom *g) {
  if (g->sh != 1 || g->sw != 1) return false;
  const eg_conv_geom f = geom_flipped(g);
  return 8 * (g->cb / g->groups) <= g->n * g->hb * g->wb || eg_conv_wino_applies(&f);
}

/* Floats of scratch for "up": flipped weights + the flipped "down", or the column matrix and
 * packed small side of GEMM + col2im. */
static int64_t up_scratch_floats(const eg_conv_geom *g) {
  if (eg_conv_geom_depthwise(g, EG_CONV_DW_UP_MAX)) return 0;
  if (up_by_flip(g)) {
    const int64_t w_floats = g->cs * (g->cb / g->groups) * g->kh * g->kw;
    const eg_conv_geom f = geom_flipped(g);
    return eg_conv_round_up_floats(w_floats) + down_scratch_floats(&f);
  }
  const int64_t nb = eg_conv_plan_images(g), p = g->hs * g->ws;
  return eg_conv_round_up_floats(g->cb * g->kh * g->kw * nb * p) +
         (nb > 1 ? eg_conv_round_up_floats(g->cs * nb * p) : 0);
}

/* ---- loops of our own: taps, col2im, unpacking, bias ---- */

/* big_plane[i*sh - ph + a*dh][j*sw - pw + b*dw] += wv * small_plane[i][j] for every in-bounds
 * (i, j): tap (a, b) scattered back, the adjoint of im2col (times wv). Inlined into its cloned
 * callers (vectorised for their instruction set): small planes (ResNet's 4x4 and 2x2) made a
 * call per tap cost more than its adds. */
static inline __attribute__((always_inline)) EG_KEEP_LOOPS void tap_scatter(const eg_conv_geom *g, const float *small_plane, eg_conv_tap t,
                        float wv, float *big_plane) {
  for (int64_t i = t.i0; i < t.i1; i++) {
    float *restrict dst = big_plane + (i * g->sh + t.off_h) * g->wb;
    const float *restrict src = small_plane + i * g->ws;
    if (g->sw == 1) { /* the common case, kept separate so that it vectorizes */
      for (int64_t j = t.j0; j < t.j1; j++) dst[j + t.off_w] += wv * src[j];
    } else {
      for (int64_t j = t.j0; j < t.j1; j++) dst[j * g->sw + t.off_w] += wv * src[j];
    }
  }
}

/* small_plane[i][j] += wv * big_plane[i*sh - ph + a*dh][j*sw - pw + b*dw] for every in-bounds
 * (i, j): one tap of a single-channel convolution. */
EG_SIMD_CLONES
static void tap_gather(const eg_conv_geom *g, const float *big_plane, eg_conv_tap t, float wv,
                       float *small_plane) {
  for (int64_t i = t.i0; i < t.i1; i++) {
    const float *restrict src = big_plane + (i * g->sh + t.off_h) * g->wb;
    float *restrict dst = small_plane + i * g->ws;
    if (g->sw == 1) { /* the common case, kept separate so that it vectorizes */
#pragma omp simd
      for (int64_t j = t.j0; j < t.j1; j++) dst[j] += wv * src[j + t.off_w];
    } else {
      for (int64_t j = t.j0; j < t.j1; j++) dst[j] += wv * src[j * g->sw + t.off_w];
    }
  }
}

static void fill(float *dst, int64_t count, float v) {
#pragma omp simd
  for (int64_t e = 0; e < count; e++) dst[e] = v;
}

/* m big images = (bias or 0) + col2im(col), col laid out as im2col writes it. */
EG_SIMD_CLONES EG_KEEP_LOOPS
static void col2im(const eg_conv_geom *g, const float *col, int64_t m, const float *bias,
                   float *big) {
  const int64_t kk = g->kh * g->kw, p = g->hs * g->ws, plane = g->hb * g->wb;
  eg_conv_tap cache[EG_CONV_TAP_CACHE];
  const eg_conv_tap *taps = eg_conv_taps(g, cache);
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(m * g->cb * kk * p), for (int64_t t = 0; t < m * g->cb; t++) {
    const int64_t k = t / g->cb, c = t % g->cb;
    float *dst = big + t * plane;
    fill(dst, plane, bias ? bias[c] : 0.0f);
    for (int64_t r = c * kk; r < (c + 1) * kk; r++)
      tap_scatter(g, col + r * m * p + k * p, eg_conv_tap_of(g, taps, r % kk), 1.0f, dst);
  });
}

/* dst[e] = src[e] + v for e < count. */
static inline __attribute__((always_inline)) void add_to(float *restrict dst,
                                                         const float *restrict src,
                                                         int64_t count, float v) {
#pragma omp simd
  for (int64_t e = 0; e < count; e++) dst[e] = src[e] + v;
}

/* m images [c, p] <- packed [c, m*p] + bias[c] (bias may be NULL). */
EG_SIMD_CLONES static void unpack_images(const float *packed, int64_t m, int64_t c, int64_t p,
                          const float *bias, float *dst) {
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(m * c * p), for (int64_t t = 0; t < m * c; t++)
    add_to(dst + t * p, packed + (t % c) * m * p + (t / c) * p, p, bias ? bias[t % c] : 0.0f););
}

/* Every plane [n, c] of y set to bias[c], or 0 when bias is NULL. */
static void fill_planes(float *y, const float *bias, int64_t n, int64_t c, int64_t p) {
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(n * c * p), for (int64_t t = 0; t < n * c; t++)
    fill(y + t * p, p, bias ? bias[t % c] : 0.0f););
}

/* ---- the two directions ---- */

/* small = down(big) + bias for eg_conv_geom_depthwise: each small plane is the bias plus kh*kw
 * shifted, scaled copies of its group's one big plane. */
static void down_depthwise(const eg_conv_geom *g, const float *big, const float *w,
                           const float *bias, float *small) {
  const int64_t kk = g->kh * g->kw, csg = g->cs / g->groups, p = g->hs * g->ws;
  eg_conv_tap cache[EG_CONV_TAP_CACHE];
  const eg_conv_tap *taps = eg_conv_taps(g, cache);
  const bool worth = eg_conv_omp_worth(g->n * g->cs * p * kk);
  EG_OMP_FOR_IF(worth, for (int64_t t = 0; t < g->n * g->cs; t++) {
    const int64_t n = t / g->cs, c = t % g->cs;
    const float *src = big + (n * g->cb + c / csg) * g->hb * g->wb;
    float *dst = small + t * p;
    fill(dst, p, bias ? bias[c] : 0.0f);
    for (int64_t e = 0; e < kk; e++) tap_gather(g, src, eg_conv_tap_of(g, taps, e), w[c * kk + e], dst);
  });
}

/* small = down(big) + bias by im2col + GEMM, all n images; scratch: down_scratch_floats(g). */
static void down_gemm(const eg_conv_geom *g, const float *big, const float *w, const float *bias,
                      float *small, float *scratch) {
  const int64_t nb = eg_conv_plan_images(g), p = g->hs * g->ws, kk = g->kh * g->kw;
  const int64_t cbg = g->cb / g->groups, csg = g->cs / g->groups;
  const bool direct = nb == 1 && eg_conv_geom_pointwise(g);
  float *col = scratch; /* unused when direct */
  float *out = nb > 1 ? scratch + eg_conv_round_up_floats(g->cb * kk * nb * p) : NULL;
  /* one region: im2col, the GEMMs' shares, unpacking, batch after batch */
  EG_OMP_PARALLEL_IF(eg_conv_team_worth(g->n * p * g->cs * cbg * kk), {
    for (int64_t n0 = 0; n0 < g->n; n0 += nb) {
      const int64_t m = g->n - n0 < nb ? g->n - n0 : nb, ld = m * p;
      const float *src = big + n0 * g->cb * g->hb * g->wb;
      if (!direct) eg_conv_im2col(g, src, m, col);
      const float *cols = direct ? src : col;
      /* One image writes straight into y, pre-filled with the bias (OpenBLAS clears C for
       * beta = 0 anyway, so this costs no extra pass); batches go through `out`. */
      float *dst = nb == 1 ? small + n0 * g->cs * p : out;
      if (nb == 1 && bias) fill_planes(dst, bias, 1, g->cs, p);
      const float beta = nb == 1 && bias ? 1.0f : 0.0f;
      for (int64_t q = 0; q < g->groups; q++)
        eg_conv_sgemm_team(false, false, csg, ld, cbg * kk, w + q * csg * cbg * kk, cbg * kk,
                           cols + q * cbg * kk * ld, ld, beta, dst + q * csg * ld, ld);
      eg_omp_barrier(); /* every share of the GEMMs written, col read */
      if (nb > 1) unpack_images(out, m, g->cs, p, bias, small + n0 * g->cs * p);
    }
  });
}

/* Floats "down" derives from its weight alone: Winograd's filter transform, else none. */
static int64_t down_prepared_floats(const eg_conv_geom *g) {
  if (eg_conv_geom_depthwise(g, EG_CONV_DW_DOWN_MAX) || !eg_conv_wino_applies(g) ||
      eg_conv_rowband_down_applies(g))
    return 0;
  return eg_conv_wino_filter_floats(g);
}

/* small = down(big) + bias; scratch: down_scratch_floats(g). prep: what down_prepare derived
 * from w, or NULL. */
static void conv_down(const eg_conv_geom *g, const float *big, const float *w, const float *prep,
                      const float *bias, float *small, float *scratch) {
  if (eg_conv_geom_depthwise(g, EG_CONV_DW_DOWN_MAX)) {
    if (eg_conv_dw_applies(g, false))
      eg_conv_dw_down(g, big, w, bias, small);
    else
      down_depthwise(g, big, w, bias, small);
  } else if (eg_conv_rowband_down_applies(g))
    eg_conv_rowband_down(g, big, w, bias, small, scratch);
  else if (eg_conv_wino_applies(g))
    eg_conv_wino_down(g, big, w, prep, bias, small, scratch);
  else
    down_gemm(g, big, w, bias, small, scratch);
}

static void down_prepare(const eg_conv_geom *g, const float *w, float *prep) {
  if (down_prepared_floats(g)) eg_conv_wino_filter(g, w, prep);
}

/* wf [cb, cs/groups, kh, kw] for geom_flipped(g): wf[q*cbg + u][v][a][b] =
 * w[q*csg + v][u][kh-1-a][kw-1-b]. */
EG_SIMD_CLONES static void flip_weights(const eg_conv_geom *g, const float *w, float *wf) {
  const int64_t cbg = g->cb / g->groups, csg = g->cs / g->groups, kk = g->kh * g->kw;
#pragma omp parallel for schedule(static) if (eg_conv_omp_worth(g->cs * cbg * kk))
  for (int64_t t = 0; t < g->cb * csg; t++) {
    const int64_t q = t / (cbg * csg), u = t / csg % cbg, v = t % csg;
    const float *src = w + ((q * csg + v) * cbg + u) * kk;
    for (int64_t e = 0; e < kk; e++) wf[t * kk + e] = src[kk - 1 - e];
  }
}

/* big = up(small) + bias for eg_conv_geom_depthwise: each big plane is the bias plus its group's
 * small planes scattered back tap by tap. */
EG_SIMD_CLONES EG_KEEP_LOOPS
static void up_depthwise(const eg_conv_geom *g, const float *small, const float *w,
                         const float *bias, float *big) {
  const int64_t kk = g->kh * g->kw, csg = g->cs / g->groups, p = g->hs * g->ws;
  const int64_t plane = g->hb * g->wb;
  eg_conv_tap cache[EG_CONV_TAP_CACHE];
  const eg_conv_tap *taps = eg_conv_taps(g, cache);
#pragma omp parallel for schedule(static) if (eg_conv_omp_worth(g->n * g->cs * p * kk))
  for (int64_t t = 0; t < g->n * g->cb; t++) {
    const int64_t n = t / g->cb, q = t % g->cb;
    float *dst = big + t * plane;
    fill(dst, plane, bias ? bias[q] : 0.0f);
    for (int64_t c = q * csg; c < (q + 1) * csg; c++)
      for (int64_t e = 0; e < kk; e++)
        tap_scatter(g, small + (n * g->cs + c) * p, eg_conv_tap_of(g, taps, e), w[c * kk + e],
                    dst);
  }
}

/* big = up(small) + bias by GEMM (col = W^T small, per batch) and col2im. */
static void up_col2im(const eg_conv_geom *g, const float *small, const float *w,
                      const float *bias, float *big, float *scratch) {
  const int64_t nb = eg_conv_plan_images(g), p = g->hs * g->ws, kk = g->kh * g->kw;
  const int64_t cbg = g->cb / g->groups, csg = g->cs / g->groups;
  float *col = scratch;
  float *packed = nb > 1 ? scratch + eg_conv_round_up_floats(g->cb * kk * nb * p) : NULL;
  EG_OMP_PARALLEL_IF(eg_conv_team_worth(g->n * p * g->cs * cbg * kk), {
    for (int64_t n0 = 0; n0 < g->n; n0 += nb) {
      const int64_t m = g->n - n0 < nb ? g->n - n0 : nb, ld = m * p;
      const float *src = small + n0 * g->cs * p;
      if (nb > 1) eg_conv_pack_images(src, m, g->cs, p, packed);
      const float *a = nb > 1 ? packed : src;
      for (int64_t q = 0; q < g->groups; q++)
        eg_conv_sgemm_team(true, false, cbg * kk, ld, csg, w + q * csg * cbg * kk, cbg * kk,
                           a + q * csg * ld, ld, 0.0f, col + q * cbg * kk * ld, ld);
      eg_omp_barrier(); /* col complete */
      /* pointwise: col2im would add each column to its pixel's bias, plane by plane (a fill
       * and a pass per plane, on 2x2 planes mostly overhead); unpacking adds the same */
      if (eg_conv_geom_pointwise(g))
        unpack_images(col, m, g->cb, p, bias, big + n0 * g->cb * g->hb * g->wb);
      else
        col2im(g, col, m, bias, big + n0 * g->cb * g->hb * g->wb);
    }
  });
}

/* Floats of the flipped weights of the stride-1 "up" (0 when it does not flip them). */
static int64_t flipped_floats(const eg_conv_geom *g) {
  if (eg_conv_geom_depthwise(g, EG_CONV_DW_UP_MAX) || !up_by_flip(g)) return 0;
  return eg_conv_round_up_floats(g->cs * (g->cb / g->groups) * g->kh * g->kw);
}

/* Floats "up" derives from its weight alone: the flipped weights, then what their "down"
 * derives from them. */
static int64_t up_prepared_floats(const eg_conv_geom *g) {
  if (!flipped_floats(g)) return 0;
  const eg_conv_geom f = geom_flipped(g);
  return flipped_floats(g) + down_prepared_floats(&f);
}

static void up_prepare(const eg_conv_geom *g, const float *w, float *prep) {
  if (!flipped_floats(g)) return;
  const eg_conv_geom f = geom_flipped(g);
  flip_weights(g, w, prep);
  down_prepare(&f, prep, prep + flipped_floats(g));
}

/* big = up(small) + bias; scratch: up_scratch_floats(g). prep: what up_prepare derived from w,
 * or NULL. */
static void conv_up(const eg_conv_geom *g, const float *small, const float *w, const float *prep,
                    const float *bias, float *big, float *scratch) {
  if (eg_conv_geom_depthwise(g, EG_CONV_DW_UP_MAX)) {
    if (eg_conv_dw_applies(g, true))
      eg_conv_dw_up(g, small, w, bias, big);
    else
      up_depthwise(g, small, w, bias, big);
    return;
  }
  if (!up_by_flip(g)) {
    up_col2im(g, small, w, bias, big, scratch);
    return;
  }
  const eg_conv_geom f = geom_flipped(g);
  const int64_t wf_floats = flipped_floats(g);
  if (prep) {
    conv_down(&f, small, prep, prep + wf_floats, bias, big, scratch + wf_floats);
    return;
  }
  flip_weights(g, w, scratch);
  conv_down(&f, small, scratch, NULL, bias, big, scratch + wf_floats);
}

/* ---- public entry points ---- */

size_t eg_convolution_nchw_f32_scratch(const eg_conv2d_params *p) {
  const eg_conv_geom g = eg_conv_geom_of(p);
  if (eg_conv_geom_empty(&g)) return 0;
  const int64_t floats = p->transposed ? up_scratch_floats(&g) : down_scratch_floats(&g);
  return sizeof(float) * (size_t)floats;
}

size_t eg_convolution_nchw_f32_prepared_bytes(const eg_conv2d_params *p) {
  const eg_conv_geom g = eg_conv_geom_of(p);
  if (eg_conv_geom_empty(&g)) return 0;
  const int64_t floats = p->transposed ? up_prepared_floats(&g) : down_prepared_floats(&g);
  return sizeof(float) * (size_t)floats;
}

void eg_convolution_nchw_f32_prepare(const eg_conv2d_params *p, const float *w, void *prepared) {
  const eg_conv_geom g = eg_conv_geom_of(p);
  if (eg_conv_geom_empty(&g)) return;
  if (p->transposed)
    up_prepare(&g, w, prepared);
  else
    down_prepare(&g, w, prepared);
}

EG_SIMD_CLONES
void eg_convolution_nchw_f32_prepared(const eg_conv2d_params *p, const float *x, const float *w,
                                      const void *prepared, const float *bias, float *y,
                                      void *scratch) {
  const eg_conv_geom g = eg_conv_geom_of(p);
  if (eg_conv_geom_empty(&g)) {
    fill_planes(y, bias, p->n, p->c_out, p->h_out * p->w_out);
    return;
  }
  if (p->transposed)
    conv_up(&g, x, w, prepared, bias, y, scratch);
  else
    conv_down(&g, x, w, prepared, bias, y, scratch);
}

void eg_convolution_nchw_f32(const eg_conv2d_params *p, const float *x, const float *w,
                             const float *bias, float *y, void *scratch) {
  eg_convolution_nchw_f32_prepared(p, x, w, NULL, bias, y, scratch);
}
