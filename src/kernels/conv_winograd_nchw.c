/* conv_winograd_nchw.c — Winograd F(2x2, 3x3) for the NCHW convolution kernels (contract in
 * the header). Transforms, with d a 4x4 input patch, g a 3x3 filter and m the 16 products:
 *   B^T rows: d0 - d2, d1 + d2, d2 - d1, d1 - d3
 *   G rows:   g0, (g0 + g1 + g2)/2, (g0 - g1 + g2)/2, g2
 *   A^T rows: m0 + m1 + m2, m1 - m2 - m3
 * applied along rows, then along columns. Build with -fopenmp. */
#include "kernels/conv_winograd_nchw.h"

#include <cblas.h>
#include <string.h>

#include "util/parallel.h"
#include "util/simd.h"

/* Both channel counts at least this: below it the 16 GEMMs are too thin to beat one im2col
 * GEMM (the transforms' cost is per channel, the saving per channel pair). */
enum { EG_CONV_WINO_MIN_C = 32 };
/* Output tiles (over all images) per call at least this: the filter transform (16 floats per
 * channel pair, every call) must be shared by enough tiles, and the 16 GEMMs need enough
 * columns. ResNet-18 at batch 8 and 64x64, one core (AVX-512 EPYC, OpenBLAS Haswell kernels):
 * layer 1 (16x16 planes, 512 tiles) 1.0 ms against 1.5 by im2col + GEMM, layer 2 (8x8, 128
 * tiles) 1.0 against 1.45; layer 3 (4x4, 32 tiles) stays with im2col. */
enum { EG_CONV_WINO_MIN_TILES = 96 };
/* Target bytes of one chunk's V and M. */
#define EG_CONV_WINO_CHUNK_BYTES ((int64_t)3 << 20)
/* Tiles of one row handled per pass of the transforms (bounds their row buffers). */
enum { EG_CONV_WINO_BLOCK = 64, EG_CONV_WINO_ROW = 2 * EG_CONV_WINO_BLOCK + 2 };

static int64_t tiles_h(const eg_conv_geom *g) { return (g->hs + 1) / 2; }
static int64_t tiles_w(const eg_conv_geom *g) { return (g->ws + 1) / 2; }

bool eg_conv_wino_applies(const eg_conv_geom *g) {
  return g->groups == 1 && g->kh == 3 && g->kw == 3 && g->sh == 1 && g->sw == 1 && g->dh == 1 &&
         g->dw == 1 && g->cb >= EG_CONV_WINO_MIN_C && g->cs >= EG_CONV_WINO_MIN_C &&
         g->n * tiles_h(g) * tiles_w(g) >= EG_CONV_WINO_MIN_TILES;
}

/* Tile rows (over all images: row r is image r / tiles_h, tile row r % tiles_h) per chunk,
 * evened out so the last chunk is not a runt. */
static int64_t chunk_rows(const eg_conv_geom *g) {
  const int64_t all = g->n * tiles_h(g), row_bytes = 16 * (g->cb + g->cs) * tiles_w(g) * 4;
  int64_t rows = EG_CONV_WINO_CHUNK_BYTES / row_bytes;
  if (rows < 1) rows = 1;
  if (rows >= all) return all;
  const int64_t chunks = (all + rows - 1) / rows;
  return (all + chunks - 1) / chunks;
}

int64_t eg_conv_wino_filter_floats(const eg_conv_geom *g) {
  return eg_conv_round_up_floats(16 * g->cs * g->cb);
}

int64_t eg_conv_wino_scratch_floats(const eg_conv_geom *g) {
  const int64_t t = chunk_rows(g) * tiles_w(g);
  return eg_conv_wino_filter_floats(g) + eg_conv_round_up_floats(16 * g->cb * t) +
         eg_conv_round_up_floats(16 * g->cs * t);
}

/* Helpers of the cloned workers below: inlined into each clone, so they are vectorised for
 * the clone's instruction set (a clone's callees are otherwise built for the baseline). */
#define EG_WINO_INLINE static inline __attribute__((always_inline)) EG_KEEP_LOOPS

/* U[xi][co][ci] = (G g G^T)[xi], g = w[co][ci]: per block of EG_CONV_WINO_BLOCK input
 * channels, the taps are first gathered tap-major, so both passes run over contiguous ci. */
EG_SIMD_CLONES
void eg_conv_wino_filter(const eg_conv_geom *g, const float *w, float *u) {
  const int64_t cb = g->cb, cs = g->cs, blk = cs * cb;
#pragma omp parallel for schedule(static) if (eg_conv_omp_worth(16 * blk))
  for (int64_t co = 0; co < cs; co++) {
    float f[9][EG_CONV_WINO_BLOCK], t[4][3][EG_CONV_WINO_BLOCK];
    for (int64_t c0 = 0; c0 < cb; c0 += EG_CONV_WINO_BLOCK) {
      const int64_t nc = cb - c0 < EG_CONV_WINO_BLOCK ? cb - c0 : EG_CONV_WINO_BLOCK;
      const float *wc = w + (co * cb + c0) * 9;
      for (int64_t c = 0; c < nc; c++)
        for (int e = 0; e < 9; e++) f[e][c] = wc[c * 9 + e];
      for (int n = 0; n < 3; n++)
        for (int64_t c = 0; c < nc; c++) {
          const float g0 = f[n][c], g1 = f[3 + n][c], g2 = f[6 + n][c];
          t[0][n][c] = g0;
          t[1][n][c] = 0.5f * (g0 + g1 + g2);
          t[2][n][c] = 0.5f * (g0 - g1 + g2);
          t[3][n][c] = g2;
        }
      for (int i = 0; i < 4; i++) {
        float *o0 = u + i * 4 * blk + co * cb + c0, *o1 = o0 + blk, *o2 = o1 + blk;
        float *o3 = o2 + blk;
        for (int64_t c = 0; c < nc; c++) {
          const float a0 = t[i][0][c], a1 = t[i][1][c], a2 = t[i][2][c];
          o0[c] = a0;
          o1[c] = 0.5f * (a0 + a1 + a2);
          o2[c] = 0.5f * (a0 - a1 + a2);
          o3[c] = a2;
        }
      }
    }
  }
}

/* V[xi][ci][t0 + k] for the tiles tj0 + k < tj1 of tile row ti of one plane: the four patch
 * rows (zeros outside the plane) are combined by B^T over whole rows, then by B per tile. */
EG_WINO_INLINE void input_block(const eg_conv_geom *g, const float *plane, int64_t ti, int64_t tj0,
                        int64_t tj1, float *v, int64_t xi_stride) {
  float d[4][EG_CONV_WINO_ROW], te[4][EG_CONV_WINO_BLOCK + 1], to[4][EG_CONV_WINO_BLOCK + 1];
  const int64_t x0 = 2 * tj0 - g->pw, width = 2 * (tj1 - tj0) + 2;
  int64_t lo = -x0, hi = g->wb - x0;
  if (lo < 0) lo = 0;
  if (lo > width) lo = width;
  if (hi > width) hi = width;
  if (hi < lo) hi = lo;
  for (int r = 0; r < 4; r++) {
    const int64_t y = 2 * ti - g->ph + r;
    float *dr = d[r];
    if (y < 0 || y >= g->hb) {
      for (int64_t c = 0; c < width; c++) dr[c] = 0.0f;
      continue;
    }
    const float *src = plane + y * g->wb;
    for (int64_t c = 0; c < lo; c++) dr[c] = 0.0f;
    for (int64_t c = lo; c < hi; c++) dr[c] = src[x0 + c];
    for (int64_t c = hi; c < width; c++) dr[c] = 0.0f;
  }
  /* B^T over the rows, split into even and odd columns: te[i][j] = column 2j of row i of
   * B^T d, to[i][j] = column 2j + 1 (then every tile reads contiguous runs). */
  const int64_t m = tj1 - tj0;
  const float *restrict d0 = d[0], *restrict d1 = d[1], *restrict d2 = d[2], *restrict d3 = d[3];
  for (int64_t j = 0; j <= m; j++) {
    const float e0 = d0[2 * j], e1 = d1[2 * j], e2 = d2[2 * j], e3 = d3[2 * j];
    const float q0 = d0[2 * j + 1], q1 = d1[2 * j + 1], q2 = d2[2 * j + 1], q3 = d3[2 * j + 1];
    te[0][j] = e0 - e2;
    te[1][j] = e1 + e2;
    te[2][j] = e2 - e1;
    te[3][j] = e1 - e3;
    to[0][j] = q0 - q2;
    to[1][j] = q1 + q2;
    to[2][j] = q2 - q1;
    to[3][j] = q1 - q3;
  }
  for (int i = 0; i < 4; i++) { /* B over the columns: tile k reads columns 2k .. 2k + 3 */
    const float *restrict ev = te[i], *restrict od = to[i];
    float *restrict o0 = v + (4 * i) * xi_stride, *restrict o1 = o0 + xi_stride;
    float *restrict o2 = o1 + xi_stride, *restrict o3 = o2 + xi_stride;
    for (int64_t k = 0; k < m; k++) {
      o0[k] = ev[k] - ev[k + 1];
      o1[k] = od[k] + ev[k + 1];
      o2[k] = ev[k + 1] - od[k];
      o3[k] = od[k] - od[k + 1];
    }
  }
}

/* V for the tile rows [r0, r0 + rows): V[xi][ci][(r - r0)*tw + tj]. */
EG_SIMD_CLONES EG_KEEP_LOOPS
static void input_transform(const eg_conv_geom *g, const float *big, int64_t r0, int64_t rows,
                            float *v) {
  const int64_t th = tiles_h(g), tw = tiles_w(g), tc = rows * tw, xi_stride = g->cb * tc;
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(16 * g->cb * tc), for (int64_t u = 0; u < g->cb * rows; u++) {
    const int64_t ci = u / rows, r = r0 + u % rows, n = r / th, ti = r % th;
    const float *plane = big + (n * g->cb + ci) * g->hb * g->wb;
    float *dst = v + ci * tc + (r - r0) * tw;
    for (int64_t tj0 = 0; tj0 < tw; tj0 += EG_CONV_WINO_BLOCK) {
      const int64_t tj1 = tj0 + EG_CONV_WINO_BLOCK < tw ? tj0 + EG_CONV_WINO_BLOCK : tw;
      input_block(g, plane, ti, tj0, tj1, dst + tj0, xi_stride);
    }
  });
}

/* The outputs of the chunk's tiles [t0, t0 + cnt) (t = (r - r0)*tw + tj, any rows) of output
 * channel co: A^T M A + bias over the block first (one vectorised loop, M[xi] at
 * m + xi*xi_stride + t), then each tile's 2x2 pixels interleaved into small, row by row. */
EG_WINO_INLINE void output_block(const eg_conv_geom *g, const float *m, int64_t xi_stride,
                                 float bias, int64_t r0, int64_t t0, int64_t cnt, int64_t co,
                                 float *small) {
  float e[4][EG_CONV_WINO_BLOCK];
  const float *restrict m0 = m + t0, *restrict m1 = m0 + xi_stride, *restrict m2 = m1 + xi_stride;
  const float *restrict m3 = m2 + xi_stride, *restrict m4 = m3 + xi_stride;
  const float *restrict m5 = m4 + xi_stride, *restrict m6 = m5 + xi_stride;
  const float *restrict m7 = m6 + xi_stride, *restrict m8 = m7 + xi_stride;
  const float *restrict m9 = m8 + xi_stride, *restrict m10 = m9 + xi_stride;
  const float *restrict m11 = m10 + xi_stride, *restrict m12 = m11 + xi_stride;
  const float *restrict m13 = m12 + xi_stride, *restrict m14 = m13 + xi_stride;
  const float *restrict m15 = m14 + xi_stride;
  for (int64_t k = 0; k < cnt; k++) { /* rows of A^T, then its columns */
    const float u00 = m0[k] + m4[k] + m8[k], u10 = m4[k] - m8[k] - m12[k];
    const float u01 = m1[k] + m5[k] + m9[k], u11 = m5[k] - m9[k] - m13[k];
    const float u02 = m2[k] + m6[k] + m10[k], u12 = m6[k] - m10[k] - m14[k];
    const float u03 = m3[k] + m7[k] + m11[k], u13 = m7[k] - m11[k] - m15[k];
    e[0][k] = u00 + u01 + u02 + bias;
    e[1][k] = u01 - u02 - u03 + bias;
    e[2][k] = u10 + u11 + u12 + bias;
    e[3][k] = u11 - u12 - u13 + bias;
  }
  const int64_t th = tiles_h(g), tw = tiles_w(g);
  for (int64_t k0 = 0; k0 < cnt;) { /* one run of tiles within a tile row */
    const int64_t t = t0 + k0, r = r0 + t / tw, tj0 = t % tw;
    const int64_t len = tw - tj0 < cnt - k0 ? tw - tj0 : cnt - k0;
    const int64_t n = r / th, ti = r % th;
    const int64_t full = 2 * (tj0 + len) <= g->ws ? len : len - 1; /* tiles inside */
    float *plane = small + (n * g->cs + co) * g->hs * g->ws;
    for (int a = 0; a < 2 && 2 * ti + a < g->hs; a++) {
      float *restrict dst = plane + (2 * ti + a) * g->ws + 2 * tj0;
      const float *restrict left = e[2 * a] + k0, *restrict right = e[2 * a + 1] + k0;
      for (int64_t k = 0; k < full; k++) {
        dst[2 * k] = left[k];
        dst[2 * k + 1] = right[k];
      }
      if (full < len) dst[2 * full] = left[full]; /* odd width: the last tile's left column */
    }
    k0 += len;
  }
}

/* small's rows of the tile rows [r0, r0 + rows) from M[xi][co][(r - r0)*tw + tj]. */
EG_SIMD_CLONES
static void output_transform(const eg_conv_geom *g, const float *m, const float *bias, int64_t r0,
                             int64_t rows, float *small) {
  const int64_t tc = rows * tiles_w(g), xi_stride = g->cs * tc;
  const int64_t blocks = (tc + EG_CONV_WINO_BLOCK - 1) / EG_CONV_WINO_BLOCK;
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(16 * g->cs * tc), for (int64_t u = 0; u < g->cs * blocks; u++) {
    const int64_t co = u / blocks, t0 = u % blocks * EG_CONV_WINO_BLOCK;
    const int64_t cnt = tc - t0 < EG_CONV_WINO_BLOCK ? tc - t0 : EG_CONV_WINO_BLOCK;
    output_block(g, m + co * tc, xi_stride, bias ? bias[co] : 0.0f, r0, t0, cnt, co, small);
  });
}

void eg_conv_wino_down(const eg_conv_geom *g, const float *big, const float *w, const float *u,
                       const float *bias, float *small, float *scratch) {
  const int64_t tw = tiles_w(g), all = g->n * tiles_h(g), rows_max = chunk_rows(g);
  float *v = scratch + eg_conv_wino_filter_floats(g);
  float *m = v + eg_conv_round_up_floats(16 * g->cb * rows_max * tw);
  if (!u) {
    eg_conv_wino_filter(g, w, scratch);
    u = scratch;
  }
  /* one region: transforms shared out, the 16 GEMMs of a chunk divided whole between the
   * threads (single-threaded each), chunk after chunk */
  EG_OMP_PARALLEL_IF(eg_conv_team_worth(16 * all * tw * g->cs * g->cb), {
    for (int64_t r0 = 0; r0 < all; r0 += rows_max) {
      const int64_t rows = all - r0 < rows_max ? all - r0 : rows_max, tc = rows * tw;
      input_transform(g, big, r0, rows, v);
      int64_t x0, x1;
      eg_omp_share(16, 1, &x0, &x1);
      for (int64_t xi = x0; xi < x1; xi++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->cs, (int)tc, (int)g->cb,
                    1.0f, u + xi * g->cs * g->cb, (int)g->cb, v + xi * g->cb * tc, (int)tc, 0.0f,
                    m + xi * g->cs * tc, (int)tc);
      eg_omp_barrier(); /* M complete, V read */
      output_transform(g, m, bias, r0, rows, small);
    }
  });
}
