/* convolution_backward_nchw_f32.c — aten.convolution_backward, 2-D, NCHW, fp32.
 *
 * Phrased on the geometry of convolution_nchw_f32.c: a `big` side (the conv's input, the
 * transposed conv's output) and a `small` side, weight [cs, cbg = cb/groups, kh, kw], and
 *   small[n, co, i, j] = sum over ci, a, b of
 *                        w[co, ci % cbg, a, b] * big[n, ci, i*sh - ph + a*dh, j*sw - pw + b*dw].
 *
 *   gx: the input gradient of a conv is the transposed conv of gy with the same weight, and that
 *       of a transposed conv is the plain conv of gy: same geometry, opposite direction. So gx
 *       is eg_convolution_nchw_f32 called with in/out swapped and `transposed` negated.
 *   gw: per group, gw_g = sum_n small_g,n [csg, hs*ws] x im2col(big_g,n)^T [hs*ws, cbg*kh*kw]
 *       — big is x and small is gy for a conv, the other way round for a transposed conv.
 *       Images with few pixels are batched along the GEMM's K dimension (see plan_images).
 *       Depthwise (one big channel per group, few small ones): a direct dot product per tap.
 *   gb: sum of gy over batch and pixels, per channel.
 *
 * The block marked "twin" repeats convolution_nchw_f32.c's geometry, batching and im2col
 * helpers word for word: the two files share only the interface header, which exposes no
 * internals. Build with -fopenmp. */
#include "kernels/convolution_nchw_f32.h"

#include <cblas.h>
#include <string.h>

/* ---- twin: this block is identical in convolution_nchw_f32.c and
 * convolution_backward_nchw_f32.c (they share no internal header); change both. ---- */

typedef struct conv_geom {
  int64_t n, groups;
  int64_t cb, hb, wb;             /* big side:   [n, cb, hb, wb] */
  int64_t cs, hs, ws;             /* small side: [n, cs, hs, ws] */
  int64_t kh, kw;                 /* kernel */
  int64_t sh, sw, ph, pw, dh, dw; /* stride, padding (may be negative when derived), dilation */
} conv_geom;

/* GEMMs narrower than this many columns run well below sgemm's peak (measured with OpenBLAS
 * 0.3.21: N=196 -> 190 GFLOP/s, N>=1568 -> 238 on two cores); batch images up to it ... */
enum { EG_CONV_GEMM_COLS = 1536 };
/* ... unless the column matrix for the batch would exceed this many bytes. */
#define EG_CONV_COL_BYTES ((int64_t)16 << 20)
/* Loops with fewer elements than this stay on one thread. */
enum { EG_CONV_OMP_MIN = 1 << 15 };
/* Scratch regions are rounded to 64 bytes so each one starts cache-line aligned. */
enum { EG_CONV_ALIGN_FLOATS = 16 };

/* Whether our loops may fork OpenMP threads (given enough work). sgemm runs between them on the
 * same cores: an OpenMP build of OpenBLAS shares libgomp's pool with us, but a pthreads build
 * keeps its own workers, and libgomp's idle threads then spin on the cores sgemm is using.
 * Measured on 2 cores, r18-l1 input gradient, best of several runs: pthreads OpenBLAS with our
 * loops threaded 42 GFLOP/s (10-20 when other processes share the cores), with them serial 117;
 * OpenMP OpenBLAS with them threaded 147. So with a pthreads OpenBLAS our loops stay serial. */
static bool omp_worth(int64_t work) {
#ifdef OPENBLAS_THREAD
  if (openblas_get_parallel() == OPENBLAS_THREAD) return false;
#endif
  return work >= EG_CONV_OMP_MIN;
}

static conv_geom geom_of(const eg_conv2d_params *p) {
  conv_geom g = {.n = p->n, .groups = p->groups, .kh = p->k_h, .kw = p->k_w,
                 .sh = p->stride[0], .sw = p->stride[1], .ph = p->padding[0],
                 .pw = p->padding[1], .dh = p->dilation[0], .dw = p->dilation[1]};
  const int64_t in[3] = {p->c_in, p->h_in, p->w_in}, out[3] = {p->c_out, p->h_out, p->w_out};
  const int64_t *big = p->transposed ? out : in, *small = p->transposed ? in : out;
  g.cb = big[0];
  g.hb = big[1];
  g.wb = big[2];
  g.cs = small[0];
  g.hs = small[1];
  g.ws = small[2];
  return g;
}

/* True when some GEMM dimension would be 0 (empty tensors): the output is just the bias. */
static bool geom_empty(const conv_geom *g) {
  return g->n == 0 || g->cb == 0 || g->hb == 0 || g->wb == 0 || g->cs == 0 || g->hs == 0 ||
         g->ws == 0 || g->kh == 0 || g->kw == 0;
}

/* 1x1, stride 1, no padding, same size: im2col would be the identity. */
static bool geom_pointwise(const conv_geom *g) {
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 &&
         g->hs == g->hb && g->ws == g->wb;
}

/* One big-side channel per group (depthwise conv, or a single-channel input) and at most
 * `max_mult` small-side channels per group: K = kh*kw is too short for a GEMM, and direct loops
 * over the taps beat im2col, which writes kh*kw copies of the input. Measured on one core,
 * 8x(C*m)x56x56 3x3, GFLOP/s direct vs GEMM: down m=1,2,4,64: 15.5,15.7,15.7,15.7 vs
 * 8.7,16.1,20.6,84; up: 17-19 vs 4-9 for every m; weight gradient m=4,8: 18.6,14.8 vs 10.6,22. */
static bool geom_depthwise(const conv_geom *g, int64_t max_mult) {
  return g->cb == g->groups && g->cs / g->groups <= max_mult;
}

static int64_t round_up_floats(int64_t n) {
  return (n + EG_CONV_ALIGN_FLOATS - 1) / EG_CONV_ALIGN_FLOATS * EG_CONV_ALIGN_FLOATS;
}

/* Images per GEMM (>= 1): enough to reach EG_CONV_GEMM_COLS columns, within EG_CONV_COL_BYTES,
 * then evened out so the last batch is not a runt. */
static int64_t plan_images(const conv_geom *g) {
  const int64_t p = g->hs * g->ws, rows = g->cb * g->kh * g->kw;
  int64_t nb = p > 0 ? (EG_CONV_GEMM_COLS + p - 1) / p : 1;
  if (nb > g->n) nb = g->n;
  while (nb > 1 && rows * nb * p * (int64_t)sizeof(float) > EG_CONV_COL_BYTES) nb--;
  if (nb < 1) return 1;
  const int64_t batches = (g->n + nb - 1) / nb;
  return (g->n + batches - 1) / batches;
}

/* [*lo, *hi): the o in [0, n_out) with 0 <= o*stride + off < size. */
static void valid_range(int64_t off, int64_t stride, int64_t size, int64_t n_out, int64_t *lo,
                        int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
  int64_t h = off >= size ? 0 : (size - 1 - off) / stride + 1;
  if (h > n_out) h = n_out;
  *lo = l < h ? l : h;
  *hi = h;
}

/* One row of the column matrix, for kernel tap (a, b) of one big-side plane:
 * dst[i*ws + j] = plane[i*sh - ph + a*dh][j*sw - pw + b*dw], 0 outside the plane. */
static void im2col_row(const conv_geom *g, const float *plane, int64_t a, int64_t b,
                       float *dst) {
  const int64_t off = b * g->dw - g->pw;
  int64_t j0, j1;
  valid_range(off, g->sw, g->wb, g->ws, &j0, &j1);
  for (int64_t i = 0; i < g->hs; i++, dst += g->ws) {
    const int64_t r = i * g->sh - g->ph + a * g->dh;
    if (r < 0 || r >= g->hb) {
      memset(dst, 0, sizeof(float) * (size_t)g->ws);
      continue;
    }
    const float *src = plane + r * g->wb;
    memset(dst, 0, sizeof(float) * (size_t)j0);
    if (g->sw == 1) {
      memcpy(dst + j0, src + j0 + off, sizeof(float) * (size_t)(j1 - j0));
    } else {
      for (int64_t j = j0; j < j1; j++) dst[j] = src[j * g->sw + off];
    }
    memset(dst + j1, 0, sizeof(float) * (size_t)(g->ws - j1));
  }
}

/* col [cb*kh*kw, m*hs*ws] from m big images; image k occupies columns [k*hs*ws, (k+1)*hs*ws). */
static void im2col(const conv_geom *g, const float *big, int64_t m, float *col) {
  const int64_t kk = g->kh * g->kw, rows = g->cb * kk, p = g->hs * g->ws;
#pragma omp parallel for schedule(static) if (omp_worth(m * rows * p))
  for (int64_t t = 0; t < m * rows; t++) {
    const int64_t k = t / rows, r = t % rows, c = r / kk, a = r % kk / g->kw, b = r % g->kw;
    im2col_row(g, big + (k * g->cb + c) * g->hb * g->wb, a, b, col + r * m * p + k * p);
  }
}

/* packed [c, m*p] <- m images [c, p] (transpose of the two outer dimensions). */
static void pack_images(const float *src, int64_t m, int64_t c, int64_t p, float *packed) {
#pragma omp parallel for schedule(static) if (omp_worth(m * c * p))
  for (int64_t t = 0; t < m * c; t++)
    memcpy(packed + (t % c) * m * p + (t / c) * p, src + t * p, sizeof(float) * (size_t)p);
}

/* ---- end of twin ---- */

/* Largest channel multiplier for which the direct depthwise weight gradient beats GEMM. */
enum { EG_CONV_DW_WGRAD_MAX = 4 };

/* sum over in-bounds (i, j) of small_plane[i][j] * big_plane[i*sh - ph + a*dh][j*sw - pw + b*dw]:
 * the gradient of one tap of a single-channel convolution, over one image. */
static double tap_dot(const conv_geom *g, const float *big_plane, const float *small_plane,
                      int64_t a, int64_t b) {
  const int64_t off_h = a * g->dh - g->ph, off_w = b * g->dw - g->pw;
  int64_t i0, i1, j0, j1;
  valid_range(off_h, g->sh, g->hb, g->hs, &i0, &i1);
  valid_range(off_w, g->sw, g->wb, g->ws, &j0, &j1);
  double sum = 0.0;
  for (int64_t i = i0; i < i1; i++) {
    const float *bp = big_plane + (i * g->sh + off_h) * g->wb, *sp = small_plane + i * g->ws;
    float row = 0.0f;
    if (g->sw == 1) { /* the common case, kept separate so that it vectorizes */
#pragma omp simd reduction(+ : row)
      for (int64_t j = j0; j < j1; j++) row += sp[j] * bp[j + off_w];
    } else {
      for (int64_t j = j0; j < j1; j++) row += sp[j] * bp[j * g->sw + off_w];
    }
    sum += (double)row;
  }
  return sum;
}

/* gw for geom_depthwise: one dot product per (small channel, tap), over all images. */
static void wgrad_depthwise(const conv_geom *g, const float *big, const float *small,
                            float *gw) {
  const int64_t kk = g->kh * g->kw, csg = g->cs / g->groups, p = g->hs * g->ws;
#pragma omp parallel for schedule(static) if (omp_worth(g->n * g->cs * p * kk))
  for (int64_t t = 0; t < g->cs * kk; t++) {
    const int64_t c = t / kk, e = t % kk;
    double sum = 0.0;
    for (int64_t n = 0; n < g->n; n++)
      sum += tap_dot(g, big + (n * g->cb + c / csg) * g->hb * g->wb, small + (n * g->cs + c) * p,
                     e / g->kw, e % g->kw);
    gw[t] = (float)sum;
  }
}

/* Floats of scratch for weight_grad: column matrix (unless pointwise) and packed small side. */
static int64_t wgrad_scratch_floats(const conv_geom *g) {
  if (geom_depthwise(g, EG_CONV_DW_WGRAD_MAX)) return 0;
  const int64_t nb = plan_images(g), p = g->hs * g->ws;
  const bool direct = nb == 1 && geom_pointwise(g);
  return (direct ? 0 : round_up_floats(g->cb * g->kh * g->kw * nb * p)) +
         (nb > 1 ? round_up_floats(g->cs * nb * p) : 0);
}

/* gw = sum over images of small x im2col(big)^T, per group; overwrites gw. */
static void weight_grad(const conv_geom *g, const float *big, const float *small, float *gw,
                        float *scratch) {
  const int64_t nb = plan_images(g), p = g->hs * g->ws, kk = g->kh * g->kw;
  const int64_t cbg = g->cb / g->groups, csg = g->cs / g->groups;
  const bool direct = nb == 1 && geom_pointwise(g);
  float *col = scratch; /* unused when direct */
  float *packed = nb > 1 ? scratch + round_up_floats(g->cb * kk * nb * p) : NULL;
  for (int64_t n0 = 0; n0 < g->n; n0 += nb) {
    const int64_t m = g->n - n0 < nb ? g->n - n0 : nb, ld = m * p;
    const float *bsrc = big + n0 * g->cb * g->hb * g->wb, *ssrc = small + n0 * g->cs * p;
    if (!direct) im2col(g, bsrc, m, col);
    if (nb > 1) pack_images(ssrc, m, g->cs, p, packed);
    const float *b = direct ? bsrc : col, *a = nb > 1 ? packed : ssrc;
    const float beta = n0 == 0 ? 0.0f : 1.0f; /* the first batch overwrites gw */
    for (int64_t q = 0; q < g->groups; q++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)csg, (int)(cbg * kk), (int)ld,
                  1.0f, a + q * csg * ld, (int)ld, b + q * cbg * kk * ld, (int)ld, beta,
                  gw + q * csg * cbg * kk, (int)(cbg * kk));
  }
}

/* gb[c] = sum of gy[:, c, :, :], accumulated in double. */
static void bias_grad(const eg_conv2d_params *p, const float *gy, float *gb) {
  const int64_t plane = p->h_out * p->w_out;
#pragma omp parallel for schedule(static) if (omp_worth(p->n * p->c_out * plane))
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
  const conv_geom g = geom_of(p);
  if (mask[1] && !geom_empty(&g)) {
    const size_t w_bytes = sizeof(float) * (size_t)wgrad_scratch_floats(&g);
    if (w_bytes > bytes) bytes = w_bytes;
  }
  return bytes;
}

void eg_convolution_backward_nchw_f32(const eg_conv2d_params *p, const bool mask[3],
                                      const float *gy, const float *x, const float *w,
                                      float *gx, float *gw, float *gb, void *scratch) {
  if (mask[2]) bias_grad(p, gy, gb);
  if (mask[0]) {
    const eg_conv2d_params q = gx_params(p);
    eg_convolution_nchw_f32(&q, gy, w, NULL, gx, scratch);
  }
  if (mask[1]) {
    const conv_geom g = geom_of(p);
    const int64_t w_floats = g.cs * (g.cb / g.groups) * g.kh * g.kw;
    if (geom_empty(&g))
      memset(gw, 0, sizeof(float) * (size_t)w_floats);
    else if (geom_depthwise(&g, EG_CONV_DW_WGRAD_MAX))
      wgrad_depthwise(&g, p->transposed ? gy : x, p->transposed ? x : gy, gw);
    else
      weight_grad(&g, p->transposed ? gy : x, p->transposed ? x : gy, gw, scratch);
  }
}
