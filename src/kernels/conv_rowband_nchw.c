/* conv_rowband_nchw.c — the row-band "down" map (contract in conv_rowband_nchw.h). Build with
 * -fopenmp. */
#include "kernels/conv_rowband_nchw.h"

#include <cblas.h>

#include "kernels/conv_winograd_nchw.h"

#include "util/parallel.h"
#include "util/simd.h"

/* Output pixels per image below which im2col + GEMM is kept, and output rows per halo row. */
enum { EG_CONV_ROWBAND_MIN_PIXELS = 512, EG_CONV_ROWBAND_MIN_ROWS_PER_HALO = 4 };

bool eg_conv_rowband_applies(const eg_conv_geom *g) {
  return g->sh == 1 && g->kh > 1 && g->hs * g->ws >= EG_CONV_ROWBAND_MIN_PIXELS &&
         g->hs >= EG_CONV_ROWBAND_MIN_ROWS_PER_HALO * (g->kh - 1) * g->dh;
}

/* A Winograd geometry with fewer channels than this on either side, on planes of at least
 * this many output pixels, runs by row bands instead: 32 channels of 16x16, 8 images (the
 * 32x32 ResNet and CNN), whole training steps 0.97x and 0.95x with them by row bands. */
enum { EG_CONV_ROWBAND_OVER_WINO_C = 48, EG_CONV_ROWBAND_OVER_WINO_PIXELS = 256 };

bool eg_conv_rowband_down_applies(const eg_conv_geom *g) {
  if (!eg_conv_wino_applies(g)) return eg_conv_rowband_applies(g);
  return (g->cb < EG_CONV_ROWBAND_OVER_WINO_C || g->cs < EG_CONV_ROWBAND_OVER_WINO_C) &&
         g->hs * g->ws >= EG_CONV_ROWBAND_OVER_WINO_PIXELS &&
         g->hs >= EG_CONV_ROWBAND_MIN_ROWS_PER_HALO * (g->kh - 1) * g->dh;
}

/* Rows read per image, with the padding rows. */
static int64_t rows_read(const eg_conv_geom *g) { return g->hs + (g->kh - 1) * g->dh; }

int64_t eg_conv_rowband_scratch_floats(const eg_conv_geom *g) {
  const int64_t nb = eg_conv_plan_images(g), l1 = rows_read(g) * g->ws;
  return eg_conv_round_up_floats(g->cs * (g->cb / g->groups) * g->kh * g->kw) +
         eg_conv_round_up_floats(g->cb * g->kw * nb * l1) +
         (nb > 1 ? eg_conv_round_up_floats(g->cs * nb * l1) : 0);
}

/* R's kw rows of big channel plane `plane` (image k of the batch): row b at dst + b*ld. */
EG_SIMD_CLONES EG_KEEP_LOOPS
static void band_plane(const eg_conv_geom *g, const float *plane, int64_t ld, float *dst) {
  const int64_t ws = g->ws, hr = rows_read(g);
  for (int64_t b = 0; b < g->kw; b++, dst += ld) {
    const eg_conv_tap t = eg_conv_tap_at(g, 0, b); /* its column range and offset */
    for (int64_t r = 0; r < hr; r++) {
      float *restrict d = dst + r * ws;
      const int64_t y = r - g->ph;
      if (y < 0 || y >= g->hb) {
        for (int64_t j = 0; j < ws; j++) d[j] = 0.0f;
        continue;
      }
      eg_conv_row_gather(g, plane + y * g->wb + t.off_w, t, d);
    }
  }
}

/* wr[a][co][ci*kw + b] = w[co][ci][a][b]. */
static void split_rows(const eg_conv_geom *g, const float *w, float *wr) {
  const int64_t cbg = g->cb / g->groups, kw = g->kw, kh = g->kh;
  for (int64_t a = 0; a < kh; a++)
    for (int64_t co = 0; co < g->cs; co++)
      for (int64_t ci = 0; ci < cbg; ci++)
        for (int64_t b = 0; b < kw; b++)
          wr[(a * g->cs + co) * cbg * kw + ci * kw + b] = w[((co * cbg + ci) * kh + a) * kw + b];
}

/* m images [c, hs*ws] <- packed [c, m*l1] (image k at column k*l1) + bias[c]. */
EG_SIMD_CLONES
static void unpack_bands(const float *packed, int64_t m, int64_t c, int64_t l1, int64_t p,
                         const float *bias, float *dst) {
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(m * c * p), for (int64_t t = 0; t < m * c; t++) {
    const float *src = packed + (t % c) * m * l1 + (t / c) * l1;
    const float v = bias ? bias[t % c] : 0.0f;
    float *restrict d = dst + t * p;
    for (int64_t e = 0; e < p; e++) d[e] = src[e] + v;
  });
}

/* R's rows for m images from `big` (ld = m*l1: image k's rows at column k*l1 of each of
 * channel c's kw band rows). */
static void band_images(const eg_conv_geom *g, const float *big, int64_t m, float *band) {
  const int64_t l1 = rows_read(g) * g->ws, ld = m * l1;
  const bool worth = eg_conv_omp_worth(m * g->cb * g->kw * l1);
  EG_OMP_FOR_TEAM(worth, for (int64_t t = 0; t < m * g->cb; t++) {
    const int64_t c = t / m, k = t % m; /* channel-major, as eg_conv_im2col */
    band_plane(g, big + (k * g->cb + c) * g->hb * g->wb, ld, band + c * g->kw * ld + k * l1);
  });
}

void eg_conv_rowband_down(const eg_conv_geom *g, const float *big, const float *w,
                          const float *bias, float *small, float *scratch) {
  const int64_t nb = eg_conv_plan_images(g), p = g->hs * g->ws, l1 = rows_read(g) * g->ws;
  const int64_t cbg = g->cb / g->groups, csg = g->cs / g->groups, kb = cbg * g->kw;
  float *wr = scratch;
  float *band = wr + eg_conv_round_up_floats(g->cs * cbg * g->kh * g->kw);
  float *out = nb > 1 ? band + eg_conv_round_up_floats(g->cb * g->kw * nb * l1) : NULL;
  split_rows(g, w, wr);
  /* one region: bands, the GEMMs' shares (each thread accumulates the kh products into its own
   * share of C, in order), unpacking, batch after batch */
  EG_OMP_PARALLEL_IF(eg_conv_team_worth(g->n * p * g->cs * cbg * g->kh * g->kw), {
    for (int64_t n0 = 0; n0 < g->n; n0 += nb) {
      const int64_t m = g->n - n0 < nb ? g->n - n0 : nb, ld = m * l1;
      const float *src = big + n0 * g->cb * g->hb * g->wb;
      band_images(g, src, m, band);
      /* One image writes straight into small (ldc = ws: its rows are contiguous), pre-filled
       * with the bias; a batch goes through `out` (ldc = ld) and is unpacked. */
      float *dst = m == 1 && nb == 1 ? small + n0 * g->cs * p : out;
      const int64_t ldc = dst == out ? ld : p, cols = (m - 1) * l1 + p;
      if (dst != out && bias)
        EG_OMP_FOR_TEAM(false, for (int64_t c = 0; c < g->cs; c++)
          for (int64_t e = 0; e < p; e++) dst[c * p + e] = bias[c];);
      for (int64_t a = 0; a < g->kh; a++) {
        const float beta = a > 0 || (dst != out && bias) ? 1.0f : 0.0f;
        for (int64_t q = 0; q < g->groups; q++)
          eg_conv_sgemm_team(false, false, csg, cols, kb, wr + (a * g->cs + q * csg) * kb, kb,
                             band + q * kb * ld + a * g->dh * g->ws, ld, beta,
                             dst + q * csg * ldc, ldc);
      }
      eg_omp_barrier(); /* every share written, the band read */
      if (dst == out) unpack_bands(out, m, g->cs, l1, p, bias, small + n0 * g->cs * p);
    }
  });
}

int64_t eg_conv_rowband_wgrad_scratch_floats(const eg_conv_geom *g) {
  const int64_t nb = eg_conv_plan_images(g), l1 = rows_read(g) * g->ws;
  return eg_conv_round_up_floats(g->cb * g->kw * nb * l1) +
         eg_conv_round_up_floats(g->cs * nb * l1) +
         eg_conv_round_up_floats(g->cs * (g->cb / g->groups) * g->kh * g->kw);
}

/* m small images [c, p] -> packed [c, m*l1], image k at column k*l1, the l1 - p columns between
 * images 0 (the GEMM's K runs over them). */
EG_SIMD_CLONES
static void pack_bands(const float *src, int64_t m, int64_t c, int64_t l1, int64_t p,
                       float *packed) {
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(m * c * p), for (int64_t t = 0; t < m * c; t++) {
    float *restrict d = packed + t * l1; /* by rows of packed, as eg_conv_im2col */
    const float *restrict s = src + ((t % m) * c + t / m) * p;
    for (int64_t e = 0; e < p; e++) d[e] = s[e];
    if (t % m < m - 1)
      for (int64_t e = p; e < l1; e++) d[e] = 0.0f;
  });
}

void eg_conv_rowband_wgrad(const eg_conv_geom *g, const float *big, const float *small,
                           float *gw, float *scratch) {
  const int64_t nb = eg_conv_plan_images(g), p = g->hs * g->ws, l1 = rows_read(g) * g->ws;
  const int64_t cbg = g->cb / g->groups, csg = g->cs / g->groups, kb = cbg * g->kw;
  float *band = scratch;
  float *packed = band + eg_conv_round_up_floats(g->cb * g->kw * nb * l1);
  float *gwt = packed + eg_conv_round_up_floats(g->cs * nb * l1);
  /* one region: each thread keeps the same share of gwt over all batches, so every element is
   * summed batch after batch as by one thread */
  EG_OMP_PARALLEL_IF(eg_conv_team_worth(g->n * p * g->cs * cbg * g->kh * g->kw), {
    for (int64_t n0 = 0; n0 < g->n; n0 += nb) {
      const int64_t m = g->n - n0 < nb ? g->n - n0 : nb, ld = m * l1, cols = (m - 1) * l1 + p;
      band_images(g, big + n0 * g->cb * g->hb * g->wb, m, band);
      pack_bands(small + n0 * g->cs * p, m, g->cs, l1, p, packed);
      const float beta = n0 == 0 ? 0.0f : 1.0f; /* the first batch overwrites gwt */
      for (int64_t q = 0; q < g->groups; q++)
        for (int64_t a = 0; a < g->kh; a++)
          eg_conv_sgemm_team(false, true, kb, csg, cols, band + q * kb * ld + a * g->dh * g->ws,
                             ld, packed + q * csg * ld, ld, beta,
                             gwt + (q * g->kh + a) * kb * csg, csg);
      eg_omp_barrier(); /* every share written, band and packed read */
    }
    /* gw[q*csg + co][ci][a][b] = gwt[q][a][ci*kw + b][co] */
    EG_OMP_FOR_TEAM(false, for (int64_t t = 0; t < g->cs; t++) {
      const int64_t q = t / csg, co = t % csg;
      for (int64_t ci = 0; ci < cbg; ci++)
        for (int64_t a = 0; a < g->kh; a++)
          for (int64_t b = 0; b < g->kw; b++)
            gw[((t * cbg + ci) * g->kh + a) * g->kw + b] =
                gwt[((q * g->kh + a) * kb + ci * g->kw + b) * csg + co];
    });
  });
}
