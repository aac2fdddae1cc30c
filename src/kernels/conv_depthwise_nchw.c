/* conv_depthwise_nchw.c — direct depthwise loops, NCHW, fp32 (contracts in the header). Build
 * with -fopenmp. */
#include "kernels/conv_depthwise_nchw.h"

#include <math.h>

#include "util/parallel.h"
#include "util/simd.h"

#define EG_DW_INLINE static inline __attribute__((always_inline))

/* One plane-to-plane correlation: out[i][j] = init + sum over in-bounds taps (a, b), a-major,
 * of w[a*kw + b] * in[i*sh + oh[a]][j*sw + ow[b]], where tap a is in bounds for the rows
 * [i0[a], i1[a]) and tap b for the columns [j0[b], j1[b]). init is the bias (first) or what
 * out holds. */
typedef struct dw_map {
  int64_t hi, wi, ho, wo, sh, sw, kh, kw;
  int64_t oh[EG_CONV_DW_KMAX], ow[EG_CONV_DW_KMAX];
  int64_t i0[EG_CONV_DW_KMAX], i1[EG_CONV_DW_KMAX], j0[EG_CONV_DW_KMAX], j1[EG_CONV_DW_KMAX];
  int64_t lo, hi_j; /* [lo, hi_j): the columns every b reaches; the rest are the border */
  /* the flat paths: in copied into a zero-padded plane of hp x wp whose element (r, s) is
   * in[r + oh_min][s + ow_min]; at strides sh == sw, tap (a, b) of output (i, j) is then its
   * element sw*(i*wp + j) + off_h[a]*wp + off_w[b]. flat: the forward's (stride 1, narrow
   * planes). */
  bool flat;
  int64_t hp, wp, oh_min, ow_min, off_h[EG_CONV_DW_KMAX], off_w[EG_CONV_DW_KMAX];
} dw_map;

/* Planes narrower than this, at stride 1, take the flat path when their padded copy fits
 * EG_DW_FLAT_MAX floats: their rows are too short for the row loops' vectors. */
enum { EG_DW_FLAT_WO = 16, EG_DW_FLAT_MAX = 2048 };

/* The map of down (up: false) or of the stride-1 up (up: true). */
static dw_map map_of(const eg_conv_geom *g, bool up) {
  dw_map m = {.hi = up ? g->hs : g->hb, .wi = up ? g->ws : g->wb, .ho = up ? g->hb : g->hs,
              .wo = up ? g->wb : g->ws, .sh = up ? 1 : g->sh, .sw = up ? 1 : g->sw,
              .kh = g->kh, .kw = g->kw};
  for (int64_t a = 0; a < m.kh; a++) {
    m.oh[a] = up ? g->ph - a * g->dh : a * g->dh - g->ph;
    eg_conv_valid_range(m.oh[a], m.sh, m.hi, m.ho, &m.i0[a], &m.i1[a]);
  }
  int64_t lo = 0, hi = m.wo;
  for (int64_t b = 0; b < m.kw; b++) {
    m.ow[b] = up ? g->pw - b * g->dw : b * g->dw - g->pw;
    eg_conv_valid_range(m.ow[b], m.sw, m.wi, m.wo, &m.j0[b], &m.j1[b]);
    if (m.j0[b] > lo) lo = m.j0[b];
    if (m.j1[b] < hi) hi = m.j1[b];
  }
  m.lo = lo;
  m.hi_j = hi > lo ? hi : lo;
  int64_t oh_max = m.oh[0], ow_max = m.ow[0];
  m.oh_min = m.oh[0];
  m.ow_min = m.ow[0];
  for (int64_t a = 1; a < m.kh; a++) {
    if (m.oh[a] < m.oh_min) m.oh_min = m.oh[a];
    if (m.oh[a] > oh_max) oh_max = m.oh[a];
  }
  for (int64_t b = 1; b < m.kw; b++) {
    if (m.ow[b] < m.ow_min) m.ow_min = m.ow[b];
    if (m.ow[b] > ow_max) ow_max = m.ow[b];
  }
  for (int64_t a = 0; a < m.kh; a++) m.off_h[a] = m.oh[a] - m.oh_min;
  for (int64_t b = 0; b < m.kw; b++) m.off_w[b] = m.ow[b] - m.ow_min;
  m.hp = (m.ho - 1) * m.sh + oh_max - m.oh_min + 1;
  m.wp = (m.wo - 1) * m.sw + ow_max - m.ow_min + 1;
  m.flat = m.sh == 1 && m.sw == 1 && m.wo < EG_DW_FLAT_WO && m.hp * m.wp <= EG_DW_FLAT_MAX;
  return m;
}

static bool up_blocks_apply(const eg_conv_geom *g);

bool eg_conv_dw_applies(const eg_conv_geom *g, bool up) {
  return g->kh <= EG_CONV_DW_KMAX && g->kw <= EG_CONV_DW_KMAX &&
         (!up || (g->sh == 1 && g->sw == 1) || up_blocks_apply(g));
}

/* dst[j] = (first ? bias : dst[j]) + w[0]*src[j*sw + ow[0]] + ... + w[kw-1]*src[...], added
 * left to right, for j in [j0, j1) (every tap in bounds). kw and sw are constants where the
 * caller inlines it for one. */
EG_DW_INLINE void row_taps(const float *src, const float *w, const int64_t *ow, int64_t kw,
                           int64_t sw, int64_t j0, int64_t j1, bool first, float bias,
                           float *restrict dst) {
  const float *p[EG_CONV_DW_KMAX];
  float wv[EG_CONV_DW_KMAX];
  for (int64_t b = 0; b < kw; b++) {
    p[b] = src + ow[b];
    wv[b] = w[b];
  }
  if (first) {
#pragma omp simd
    for (int64_t j = j0; j < j1; j++) {
      float acc = bias;
#pragma GCC unroll 16
      for (int64_t b = 0; b < kw; b++) acc += wv[b] * p[b][j * sw];
      dst[j] = acc;
    }
  } else {
#pragma omp simd
    for (int64_t j = j0; j < j1; j++) {
      float acc = dst[j];
#pragma GCC unroll 16
      for (int64_t b = 0; b < kw; b++) acc += wv[b] * p[b][j * sw];
      dst[j] = acc;
    }
  }
}

/* dst[j] = bias + the nine taps of a 3x3 kernel over rows r0, r1, r2, in order, for j in
 * [j0, j1). */
EG_DW_INLINE void row_3x3(const float *r0, const float *r1, const float *r2, const float *w,
                          const int64_t *ow, int64_t sw, int64_t j0, int64_t j1, float bias,
                          float *restrict dst) {
  const float *a0 = r0 + ow[0], *a1 = r0 + ow[1], *a2 = r0 + ow[2];
  const float *b0 = r1 + ow[0], *b1 = r1 + ow[1], *b2 = r1 + ow[2];
  const float *c0 = r2 + ow[0], *c1 = r2 + ow[1], *c2 = r2 + ow[2];
  const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6],
              w7 = w[7], w8 = w[8];
#pragma omp simd
  for (int64_t j = j0; j < j1; j++) {
    const int64_t s = j * sw;
    dst[j] = bias + w0 * a0[s] + w1 * a1[s] + w2 * a2[s] + w3 * b0[s] + w4 * b1[s] + w5 * b2[s] +
             w6 * c0[s] + w7 * c1[s] + w8 * c2[s];
  }
}

/* Output row i of the map; kw and sw are m's, passed as constants by the specialised callers. */
EG_DW_INLINE void out_row(const dw_map *m, const float *in, const float *w, int64_t i,
                          bool first, float bias, float *restrict dst, int64_t kw, int64_t sw) {
  const float *rows[EG_CONV_DW_KMAX];
  const float *wr[EG_CONV_DW_KMAX];
  int64_t na = 0;
  for (int64_t a = 0; a < m->kh; a++)
    if (m->i0[a] <= i && i < m->i1[a]) {
      rows[na] = in + (i * m->sh + m->oh[a]) * m->wi;
      wr[na++] = w + a * kw;
    }
  const int64_t lo = m->lo, hi = m->hi_j;
  if (lo < hi) {
    if (kw == 3 && m->kh == 3 && na == 3 && first) {
      row_3x3(rows[0], rows[1], rows[2], w, m->ow, sw, lo, hi, bias, dst);
    } else if (na == 0) {
      if (first)
        for (int64_t j = lo; j < hi; j++) dst[j] = bias;
    } else {
      for (int64_t k = 0; k < na; k++)
        row_taps(rows[k], wr[k], m->ow, kw, sw, lo, hi, first && k == 0, bias, dst);
    }
  }
  /* the border columns, one at a time: [0, lo) and [hi, wo) */
  for (int64_t j = 0; j < m->wo; j++) {
    if (j == lo) j = hi;
    if (j >= m->wo) break;
    float acc = first ? bias : dst[j];
    for (int64_t k = 0; k < na; k++)
      for (int64_t b = 0; b < kw; b++)
        if (m->j0[b] <= j && j < m->j1[b]) acc += wr[k][b] * rows[k][j * sw + m->ow[b]];
    dst[j] = acc;
  }
}

/* Whether the flat path gives the row loops' results bit for bit: it adds w*0 for every tap
 * outside the plane where they add nothing, and acc + (+-0) == acc unless acc is -0 or w is
 * not finite; acc, started from a bias that is not -0, is never -0 (a sum of floats is -0 only
 * when both are). */
static bool flat_exact(const dw_map *m, const float *w, float bias) {
  if (bias == 0.0f && signbit(bias)) return false;
  for (int64_t e = 0; e < m->kh * m->kw; e++)
    if (!isfinite(w[e])) return false;
  return true;
}

/* pad [hp, wp] = the zero-padded copy of the plane in (dw_map's flat paths). */
EG_DW_INLINE void pad_plane(const dw_map *m, const float *in, float *restrict pad) {
  const int64_t wp = m->wp;
  int64_t s0, s1;
  eg_conv_valid_range(m->ow_min, 1, m->wi, wp, &s0, &s1);
  for (int64_t r = 0; r < m->hp; r++) {
    float *restrict dst = pad + r * wp;
    const int64_t y = r + m->oh_min;
    if (y < 0 || y >= m->hi) {
      for (int64_t s = 0; s < wp; s++) dst[s] = 0.0f;
      continue;
    }
    const float *src = in + y * m->wi + m->ow_min;
    for (int64_t s = 0; s < s0; s++) dst[s] = 0.0f;
#pragma omp simd
    for (int64_t s = s0; s < s1; s++) dst[s] = src[s];
    for (int64_t s = s1; s < wp; s++) dst[s] = 0.0f;
  }
}

/* out = bias + the map of in, through the zero-padded copy: each kernel row's taps one pass
 * over all the plane's outputs at once, rows wp apart (the wp - wo columns between are
 * computed and dropped). */
EG_DW_INLINE void flat_plane(const dw_map *m, const float *in, const float *w, float bias,
                             float *out, int64_t kw) {
  float pad[EG_DW_FLAT_MAX], o[EG_DW_FLAT_MAX];
  const int64_t wp = m->wp, len = (m->ho - 1) * wp + m->wo;
  pad_plane(m, in, pad);
  if (kw == 3 && m->kh == 3) {
    row_3x3(pad + m->off_h[0] * wp, pad + m->off_h[1] * wp, pad + m->off_h[2] * wp, w, m->off_w,
            1, 0, len, bias, o);
  } else {
    for (int64_t a = 0; a < m->kh; a++)
      row_taps(pad + m->off_h[a] * wp, w + a * kw, m->off_w, kw, 1, 0, len, a == 0, bias, o);
  }
  for (int64_t i = 0; i < m->ho; i++)
    for (int64_t j = 0; j < m->wo; j++) out[i * m->wo + j] = o[i * wp + j];
}

/* out = the map of in by the kernel w (kh*kw floats), started from bias (first) or from out. */
EG_SIMD_CLONES EG_KEEP_LOOPS
static void map_plane(const dw_map *m, const float *in, const float *w, bool first, float bias,
                      float *out) {
  const int64_t wo = m->wo;
  if (m->flat && first && flat_exact(m, w, bias)) {
    if (m->kw == 3)
      flat_plane(m, in, w, bias, out, 3);
    else if (m->kw == 5)
      flat_plane(m, in, w, bias, out, 5);
    else
      flat_plane(m, in, w, bias, out, m->kw);
    return;
  }
  if (m->kw == 3 && m->sw == 1) {
    for (int64_t i = 0; i < m->ho; i++) out_row(m, in, w, i, first, bias, out + i * wo, 3, 1);
  } else if (m->kw == 3 && m->sw == 2) {
    for (int64_t i = 0; i < m->ho; i++) out_row(m, in, w, i, first, bias, out + i * wo, 3, 2);
  } else if (m->kw == 5 && m->sw == 1) {
    for (int64_t i = 0; i < m->ho; i++) out_row(m, in, w, i, first, bias, out + i * wo, 5, 1);
  } else if (m->kw == 5 && m->sw == 2) {
    for (int64_t i = 0; i < m->ho; i++) out_row(m, in, w, i, first, bias, out + i * wo, 5, 2);
  } else {
    for (int64_t i = 0; i < m->ho; i++)
      out_row(m, in, w, i, first, bias, out + i * wo, m->kw, m->sw);
  }
}

/* ---- small planes: EG_DW_CB channels at a time ----
 * Planes of at most EG_DW_CB_PLANE input pixels are too small for loops along a row: a block of
 * EG_DW_CB channels is copied pixel-major (pixel, then channel), and each output pixel of the
 * block is one vector of EG_DW_CB sums, its in-bounds taps added a-major, the same order as the
 * row loops. Output rows up to EG_DW_CB_WO pixels (down) or EG_DW_CB_WB (up). */
enum { EG_DW_CB = 16, EG_DW_CB_PLANE = 256, EG_DW_CB_WO = 16, EG_DW_CB_WB = 32 };

/* Fewest channel blocks for which each work item takes every image. */
enum { EG_DW_CB_SHARE = 8 };

static bool channel_blocks_apply(const dw_map *m) {
  return m->hi * m->wi <= EG_DW_CB_PLANE && m->wo <= EG_DW_CB_WO;
}

/* The up map by channel blocks: one small channel per group (each big plane is one small
 * plane's map), small planes of at most EG_DW_CB_PLANE pixels, big rows of at most
 * EG_DW_CB_WB. Any stride. */
static bool up_blocks_apply(const eg_conv_geom *g) {
  return g->cs == g->groups && g->hs * g->ws <= EG_DW_CB_PLANE && g->wb <= EG_DW_CB_WB;
}

/* For channels [c0, c0 + nc), the lanes past nc repeating channel c0: wt [kk, EG_DW_CB] and
 * bv [EG_DW_CB] = their kernels (w[c*kk + e]) and biases (or 0). */
EG_DW_INLINE void block_weights(const float *w, int64_t kk, const float *bias, int64_t c0,
                                int64_t nc, float *restrict wt, float *restrict bv) {
  for (int64_t cc = 0; cc < EG_DW_CB; cc++) {
    const int64_t c = c0 + (cc < nc ? cc : 0);
    for (int64_t e = 0; e < kk; e++) wt[e * EG_DW_CB + cc] = w[c * kk + e];
    bv[cc] = bias ? bias[c] : 0.0f;
  }
}

/* x [pin, EG_DW_CB] = the input planes of channels [c0, c0 + nc) (channel c's: planes + (c /
 * csg)*pin, pin pixels), pixel-major, the lanes past nc repeating channel c0. */
EG_DW_INLINE void block_plane(const float *planes, int64_t pin, int64_t csg, int64_t c0,
                              int64_t nc, float *restrict x) {
  for (int64_t cc = 0; cc < EG_DW_CB; cc++) {
    const float *src = planes + (c0 + (cc < nc ? cc : 0)) / csg * pin;
    for (int64_t q = 0; q < pin; q++) x[q * EG_DW_CB + cc] = src[q];
  }
}

/* The channel-block loops' work item t of nb blocks of n images: channels [*c0, *c0 + *nc)
 * of images [*n0, *n1). Blocks take all the images (the weights copied once) when there are
 * enough of them to share out over the threads, else one image each. */
static int64_t block_items(int64_t n, int64_t nb) { return nb >= EG_DW_CB_SHARE ? nb : n * nb; }

static void block_item(int64_t t, int64_t n, int64_t cs, int64_t nb, int64_t *c0, int64_t *nc,
                       int64_t *n0, int64_t *n1) {
  const bool whole = nb >= EG_DW_CB_SHARE;
  *c0 = (whole ? t : t % nb) * EG_DW_CB;
  *nc = cs - *c0 < EG_DW_CB ? cs - *c0 : EG_DW_CB;
  *n0 = whole ? 0 : t / nb;
  *n1 = whole ? n : *n0 + 1;
}

/* Row i of nc output planes (dst + cc*pout, wo pixels) = acc [wo, EG_DW_CB]. */
EG_DW_INLINE void block_out(const float *restrict acc, int64_t wo, int64_t nc, int64_t pout,
                            float *restrict dst) {
  for (int64_t cc = 0; cc < nc; cc++)
    for (int64_t j = 0; j < wo; j++) dst[cc * pout + j] = acc[j * EG_DW_CB + cc];
}

/* acc [len, EG_DW_CB] = bv in every pixel. */
EG_DW_INLINE void block_fill(float *restrict acc, int64_t len, const float *bv) {
  for (int64_t j = 0; j < len; j++)
#pragma omp simd
    for (int64_t cc = 0; cc < EG_DW_CB; cc++) acc[j * EG_DW_CB + cc] = bv[cc];
}

/* Work item t (block_item): small = down(big) + bias. */
EG_SIMD_CLONES EG_KEEP_LOOPS
static void down_channel_block(const eg_conv_geom *g, const dw_map *m, const float *big,
                               const float *w, const float *bias, int64_t t, float *small) {
  enum { V = EG_DW_CB };
  float x[EG_DW_CB_PLANE * V], wt[EG_CONV_DW_KMAX * EG_CONV_DW_KMAX * V], b0[V];
  const int64_t pin = m->hi * m->wi, pout = m->ho * m->wo;
  int64_t c0, nc, n0, n1;
  block_item(t, g->n, g->cs, (g->cs + V - 1) / V, &c0, &nc, &n0, &n1);
  block_weights(w, m->kh * m->kw, bias, c0, nc, wt, b0);
  for (int64_t n = n0; n < n1; n++) {
    block_plane(big + n * g->cb * pin, pin, g->cs / g->groups, c0, nc, x);
    for (int64_t i = 0; i < m->ho; i++) {
      float acc[EG_DW_CB_WO * V]; /* the output row, pixel-major */
      block_fill(acc, m->wo, b0);
      for (int64_t a = 0; a < m->kh; a++) {
        if (i < m->i0[a] || i >= m->i1[a]) continue;
        const float *xr = x + (i * m->sh + m->oh[a]) * m->wi * V;
        for (int64_t b = 0; b < m->kw; b++) {
          const float *wp = wt + (a * m->kw + b) * V;
          for (int64_t j = m->j0[b]; j < m->j1[b]; j++) {
            const float *xp = xr + (j * m->sw + m->ow[b]) * V;
#pragma omp simd
            for (int64_t cc = 0; cc < V; cc++) acc[j * V + cc] += wp[cc] * xp[cc];
          }
        }
      }
      block_out(acc, m->wo, nc, pout, small + (n * g->cs + c0) * pout + i * m->wo);
    }
  }
}

/* Work item t (block_item): big = up(small) + bias (up_blocks_apply). Big row r
 * gathers, taps a-major, from small row i of each tap (a, b) with i*sh + off_h = r, the
 * small columns of the tap scattered to their big columns j*sw + off_w: every big pixel gets
 * its in-bounds taps' products in the gather's order. */
EG_SIMD_CLONES EG_KEEP_LOOPS
static void up_channel_block(const eg_conv_geom *g, const eg_conv_tap *taps, const float *small,
                             const float *w, const float *bias, int64_t t, float *big) {
  enum { V = EG_DW_CB };
  float x[EG_DW_CB_PLANE * V], wt[EG_CONV_DW_KMAX * EG_CONV_DW_KMAX * V], b0[V];
  const int64_t pin = g->hs * g->ws, pout = g->hb * g->wb, kk = g->kh * g->kw;
  int64_t c0, nc, n0, n1;
  block_item(t, g->n, g->cs, (g->cs + V - 1) / V, &c0, &nc, &n0, &n1);
  block_weights(w, kk, bias, c0, nc, wt, b0);
  for (int64_t n = n0; n < n1; n++) {
    block_plane(small + n * g->cs * pin, pin, 1, c0, nc, x);
    for (int64_t r = 0; r < g->hb; r++) {
      float acc[EG_DW_CB_WB * V]; /* the output row, pixel-major */
      block_fill(acc, g->wb, b0);
      for (int64_t e = 0; e < kk; e++) {
        const eg_conv_tap tp = taps[e];
        const int64_t u = r - tp.off_h;
        if (u < 0 || u % g->sh || u / g->sh < tp.i0 || u / g->sh >= tp.i1) continue;
        const float *xr = x + u / g->sh * g->ws * V, *wp = wt + e * V;
        for (int64_t j = tp.j0; j < tp.j1; j++) {
          const float *xp = xr + j * V;
          float *ap = acc + (j * g->sw + tp.off_w) * V;
#pragma omp simd
          for (int64_t cc = 0; cc < V; cc++) ap[cc] += wp[cc] * xp[cc];
        }
      }
      block_out(acc, g->wb, nc, pout, big + (n * g->cb + c0) * pout + r * g->wb);
    }
  }
}

void eg_conv_dw_down(const eg_conv_geom *g, const float *big, const float *w, const float *bias,
                     float *small) {
  const dw_map m = map_of(g, false);
  const int64_t kk = g->kh * g->kw, csg = g->cs / g->groups, p = g->hs * g->ws;
  if (channel_blocks_apply(&m)) {
    const int64_t nb = (g->cs + EG_DW_CB - 1) / EG_DW_CB;
    EG_OMP_FOR_IF(eg_conv_omp_worth(g->n * g->cs * p * kk),
                  for (int64_t t = 0; t < block_items(g->n, nb); t++)
                    down_channel_block(g, &m, big, w, bias, t, small););
    return;
  }
  EG_OMP_FOR_IF(eg_conv_omp_worth(g->n * g->cs * p * kk), for (int64_t t = 0; t < g->n * g->cs; t++) {
    const int64_t n = t / g->cs, c = t % g->cs;
    map_plane(&m, big + (n * g->cb + c / csg) * g->hb * g->wb, w + c * kk, true,
              bias ? bias[c] : 0.0f, small + t * p);
  });
}

void eg_conv_dw_up(const eg_conv_geom *g, const float *small, const float *w, const float *bias,
                   float *big) {
  const int64_t kk = g->kh * g->kw, csg = g->cs / g->groups, p = g->hs * g->ws;
  const int64_t plane = g->hb * g->wb;
  if (up_blocks_apply(g)) {
    eg_conv_tap taps[EG_CONV_DW_KMAX * EG_CONV_DW_KMAX];
    for (int64_t e = 0; e < kk; e++) taps[e] = eg_conv_tap_at(g, e / g->kw, e % g->kw);
    const int64_t nb = (g->cs + EG_DW_CB - 1) / EG_DW_CB;
    EG_OMP_FOR_IF(eg_conv_omp_worth(g->n * g->cs * p * kk),
                  for (int64_t t = 0; t < block_items(g->n, nb); t++)
                    up_channel_block(g, taps, small, w, bias, t, big););
    return;
  }
  const dw_map m = map_of(g, true);
  EG_OMP_FOR_IF(eg_conv_omp_worth(g->n * g->cs * p * kk), for (int64_t t = 0; t < g->n * g->cb; t++) {
    const int64_t n = t / g->cb, q = t % g->cb;
    for (int64_t c = q * csg; c < (q + 1) * csg; c++)
      map_plane(&m, small + (n * g->cs + c) * p, w + c * kk, c == q * csg,
                bias ? bias[q] : 0.0f, big + t * plane);
  });
}

/* ---- weight gradient ---- */

bool eg_conv_dw_wgrad_applies(const eg_conv_geom *g) {
  if (!eg_conv_dw_applies(g, false) || g->sh != g->sw) return false;
  const dw_map m = map_of(g, false);
  return m.hp * m.wp <= EG_DW_FLAT_MAX;
}

/* sum[e] += the dot product of s (the small plane, rows wp apart, 0 between) with tap e's
 * elements of the padded plane, over q < len, at stride st (a constant where inlined). */
EG_DW_INLINE void tap_dots(const dw_map *m, const float *restrict pad, const float *restrict s,
                           int64_t len, int64_t st, double *sum) {
  const int64_t wp = m->wp;
  if (m->kh == 3 && m->kw == 3) {
    const float *p0 = pad + m->off_h[0] * wp, *p1 = pad + m->off_h[1] * wp,
                *p2 = pad + m->off_h[2] * wp;
    const int64_t o0 = m->off_w[0], o1 = m->off_w[1], o2 = m->off_w[2];
    float v0 = 0.0f, v1 = 0.0f, v2 = 0.0f, v3 = 0.0f, v4 = 0.0f, v5 = 0.0f, v6 = 0.0f,
          v7 = 0.0f, v8 = 0.0f;
#pragma omp simd reduction(+ : v0, v1, v2, v3, v4, v5, v6, v7, v8)
    for (int64_t q = 0; q < len; q++) {
      const float x = s[q];
      const int64_t k = q * st;
      v0 += x * p0[k + o0];
      v1 += x * p0[k + o1];
      v2 += x * p0[k + o2];
      v3 += x * p1[k + o0];
      v4 += x * p1[k + o1];
      v5 += x * p1[k + o2];
      v6 += x * p2[k + o0];
      v7 += x * p2[k + o1];
      v8 += x * p2[k + o2];
    }
    const float v[9] = {v0, v1, v2, v3, v4, v5, v6, v7, v8};
    for (int e = 0; e < 9; e++) sum[e] += (double)v[e];
    return;
  }
  for (int64_t a = 0; a < m->kh; a++)
    for (int64_t b = 0; b < m->kw; b++) {
      const float *pe = pad + m->off_h[a] * wp + m->off_w[b];
      float v = 0.0f;
#pragma omp simd reduction(+ : v)
      for (int64_t q = 0; q < len; q++) v += s[q] * pe[q * st];
      sum[a * m->kw + b] += (double)v;
    }
}

/* sum[e] += tap e's weight gradient of small channel c over every image: per image, the
 * zero-padded big plane and the small plane at its row pitch, then tap_dots. */
EG_SIMD_CLONES EG_KEEP_LOOPS
static void wgrad_channel(const eg_conv_geom *g, const dw_map *m, const float *big,
                          const float *small, int64_t c, double *sum) {
  const int64_t csg = g->cs / g->groups, wp = m->wp, len = (m->ho - 1) * wp + m->wo;
  float pad[EG_DW_FLAT_MAX], s[EG_DW_FLAT_MAX];
  for (int64_t q = 0; q < len; q++) s[q] = 0.0f;
  for (int64_t n = 0; n < g->n; n++) {
    pad_plane(m, big + (n * g->cb + c / csg) * m->hi * m->wi, pad);
    const float *sp = small + (n * g->cs + c) * m->ho * m->wo;
    for (int64_t i = 0; i < m->ho; i++)
      for (int64_t j = 0; j < m->wo; j++) s[i * wp + j] = sp[i * m->wo + j];
    if (m->sw == 1)
      tap_dots(m, pad, s, len, 1, sum);
    else if (m->sw == 2)
      tap_dots(m, pad, s, len, 2, sum);
    else
      tap_dots(m, pad, s, len, m->sw, sum);
  }
}

void eg_conv_dw_wgrad(const eg_conv_geom *g, const float *big, const float *small, float *gw) {
  const dw_map m = map_of(g, false);
  const int64_t kk = g->kh * g->kw, p = g->hs * g->ws;
  EG_OMP_FOR_IF(eg_conv_omp_worth(g->n * g->cs * p * kk), for (int64_t c = 0; c < g->cs; c++) {
    double sum[EG_CONV_DW_KMAX * EG_CONV_DW_KMAX] = {0};
    wgrad_channel(g, &m, big, small, c, sum);
    for (int64_t e = 0; e < kk; e++) gw[c * kk + e] = (float)sum[e];
  });
}
