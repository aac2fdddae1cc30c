/* winograd_nhwc_f32.c — Winograd F(2x2, 3x3) on NHWC activations (contract and method in the
 * header). Scratch: [U unless prepacked][zeros: c_in][V: 16 x chunk x c_in][M: 16 x chunk x
 * c_out]. */
#include "kernels/winograd_nhwc_f32.h"

#include <string.h>

#include "kernels/parallel_nhwc_f32.h"
#include "util/parallel.h"
#include "util/simd.h"

/* One chunk's transformed patches and products (16 x tiles x (c_in + c_out) floats) take
 * params.chunk_bytes, or this when it is 0, but at least this many tiles: sgemm's M, and each
 * chunk's 16 sgemms pack their U_xi again (r18-l4, c 512: 128 tiles per chunk ran 2x faster
 * than 32). */
#define EG_WINOGRAD_CHUNK_BYTES ((int64_t)4 << 20)
enum { EG_WINOGRAD_MIN_TILES = 256 };

typedef eg_winograd_nhwc_params wparams;

static int64_t wino_tiles_h(const wparams *p) { return (p->h_out + 1) / 2; }
static int64_t wino_tiles_w(const wparams *p) { return (p->w_out + 1) / 2; }

static int64_t wino_chunk(const wparams *p) {
  const int64_t all = p->n * wino_tiles_h(p) * wino_tiles_w(p);
  const int64_t bytes = p->chunk_bytes > 0 ? p->chunk_bytes : EG_WINOGRAD_CHUNK_BYTES;
  int64_t t = bytes / (16 * (int64_t)sizeof(float) * (p->c_in + p->c_out));
  if (t < EG_WINOGRAD_MIN_TILES) t = EG_WINOGRAD_MIN_TILES;
  if (t >= all) return all > 0 ? all : 1;
  const int64_t chunks = (all + t - 1) / t;
  return (all + chunks - 1) / chunks;
}

static int64_t wino_packed(const wparams *p) { return 16 * p->c_in * p->c_out; }

static int64_t wino_scratch(const wparams *p) {
  const int64_t t = wino_chunk(p);
  return (p->prepacked ? 0 : eg_nhwc_round16(wino_packed(p))) + eg_nhwc_round16(p->c_in) +
         eg_nhwc_round16(16 * t * p->c_in) + eg_nhwc_round16(16 * t * p->c_out);
}

/* U[xi][ci][co] = (G g G^T)[xi] with g[m][n] = f[m][n][ci][co] (f[m][n][co][ci] with
 * filter_oi), or f[2 - m][2 - n][..] when rotated. */
EG_SIMD_CLONES
static void wino_pack(const wparams *p, const float *f, float *u) {
  const int64_t ci_n = p->c_in, co_n = p->c_out, blk = ci_n * co_n;
  const int64_t co_step = p->filter_oi ? ci_n : 1; /* from one co to the next in a tap */
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(16 * blk), for (int64_t ci = 0; ci < ci_n; ci++) {
    const float *g[3][3];
    for (int m = 0; m < 3; m++)
      for (int n = 0; n < 3; n++) {
        const int fm = p->rotated ? 2 - m : m, fn = p->rotated ? 2 - n : n;
        g[m][n] = f + (fm * 3 + fn) * blk + (p->filter_oi ? ci : ci * co_n);
      }
    float *out = u + ci * co_n;
    _Pragma("omp simd")
    for (int64_t co = 0; co < co_n; co++) {
      float t[4][3], v[4][4];
      for (int n = 0; n < 3; n++) {
        const float g0 = g[0][n][co * co_step], g1 = g[1][n][co * co_step],
                    g2 = g[2][n][co * co_step];
        t[0][n] = g0;
        t[1][n] = 0.5f * (g0 + g1 + g2);
        t[2][n] = 0.5f * (g0 - g1 + g2);
        t[3][n] = g2;
      }
      for (int i = 0; i < 4; i++) {
        v[i][0] = t[i][0];
        v[i][1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        v[i][2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        v[i][3] = t[i][2];
      }
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) out[(i * 4 + j) * blk + co] = v[i][j];
    }
  });
}

/* Tile index r (over n, ti, tj) -> image and the top-left y pixel. */
static void wino_tile(const wparams *p, int64_t r, int64_t *n, int64_t *y0, int64_t *x0) {
  const int64_t th = wino_tiles_h(p), tw = wino_tiles_w(p);
  *n = r / (th * tw);
  *y0 = 2 * (r % (th * tw) / tw);
  *x0 = 2 * (r % tw);
}

/* Row i of B^T d B for one tile: out[j*plane + e] for j < 4, channels e < c. Row i of B^T
 * combines two patch rows, (ra, rb) with signs: 0: d0 - d2, 1: d1 + d2, 2: d2 - d1, 3: d1 - d3. */
static void wino_input_row(int i, const float *const d[4][4], int64_t c, float *out,
                           int64_t plane) {
  static const int ra[4] = {0, 1, 2, 1}, rb[4] = {2, 2, 1, 3};
  const float sb = i == 1 ? 1.0f : -1.0f;
  const float *restrict a0 = d[ra[i]][0], *restrict a1 = d[ra[i]][1];
  const float *restrict a2 = d[ra[i]][2], *restrict a3 = d[ra[i]][3];
  const float *restrict b0 = d[rb[i]][0], *restrict b1 = d[rb[i]][1];
  const float *restrict b2 = d[rb[i]][2], *restrict b3 = d[rb[i]][3];
  float *restrict o0 = out, *restrict o1 = out + plane, *restrict o2 = out + 2 * plane;
  float *restrict o3 = out + 3 * plane;
#pragma omp simd
  for (int64_t e = 0; e < c; e++) {
    const float t0 = a0[e] + sb * b0[e], t1 = a1[e] + sb * b1[e];
    const float t2 = a2[e] + sb * b2[e], t3 = a3[e] + sb * b3[e];
    o0[e] = t0 - t2;
    o1[e] = t1 + t2;
    o2[e] = t2 - t1;
    o3[e] = t1 - t3;
  }
}

/* V[xi][r - r0][ci] = (B^T d B)[xi] for tiles [r0, r0 + m). */
EG_SIMD_CLONES
static void wino_input(const wparams *p, const float *x, const float *zeros, int64_t r0,
                       int64_t m, float *v) {
  const int64_t c = p->c_in, ph = p->pad[0], pw = p->pad[1], plane = m * c;
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(16 * m * c), for (int64_t r = r0; r < r0 + m; r++) {
    int64_t n, y0, x0;
    wino_tile(p, r, &n, &y0, &x0);
    const float *d[4][4];
    for (int a = 0; a < 4; a++) {
      const int64_t yy = y0 - ph + a;
      for (int b = 0; b < 4; b++) {
        const int64_t xx = x0 - pw + b;
        const bool in = yy >= 0 && yy < p->h_in && xx >= 0 && xx < p->w_in;
        d[a][b] = in ? x + ((n * p->h_in + yy) * p->w_in + xx) * c : zeros;
      }
    }
    float *out = v + (r - r0) * c;
    for (int i = 0; i < 4; i++) /* one row of B^T d B per pass: straight-line, vectorised */
      wino_input_row(i, d, c, out + i * 4 * plane, plane);
  });
}

/* One whole output tile: dst[a][b][e] = (A^T M A)[a][b] + bias[e], M[xi] at src + xi*plane.
 * Rows of A^T: 0: m0 + m1 + m2, 1: m1 - m2 - m3. Straight-line, vectorised over channels. */
static void wino_output_tile(const float *src, int64_t plane, const float *bias, int64_t c,
                             float *const dst[2][2]) {
  const float *restrict m[16];
  for (int k = 0; k < 16; k++) m[k] = src + k * plane;
  float *restrict y00 = dst[0][0], *restrict y01 = dst[0][1];
  float *restrict y10 = dst[1][0], *restrict y11 = dst[1][1];
#pragma omp simd
  for (int64_t e = 0; e < c; e++) {
    const float b = bias ? bias[e] : 0.0f;
    const float u00 = m[0][e] + m[4][e] + m[8][e], u10 = m[4][e] - m[8][e] - m[12][e];
    const float u01 = m[1][e] + m[5][e] + m[9][e], u11 = m[5][e] - m[9][e] - m[13][e];
    const float u02 = m[2][e] + m[6][e] + m[10][e], u12 = m[6][e] - m[10][e] - m[14][e];
    const float u03 = m[3][e] + m[7][e] + m[11][e], u13 = m[7][e] - m[11][e] - m[15][e];
    y00[e] = u00 + u01 + u02 + b;
    y01[e] = u01 - u02 - u03 + b;
    y10[e] = u10 + u11 + u12 + b;
    y11[e] = u11 - u12 - u13 + b;
  }
}

/* y tile pixels (inside y) <- A^T M A + bias, for tiles [r0, r0 + m). */
EG_SIMD_CLONES
static void wino_output(const wparams *p, const float *mm, const float *bias, int64_t r0,
                        int64_t m, float *y) {
  const int64_t c = p->c_out, plane = m * c;
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(16 * m * c), for (int64_t r = r0; r < r0 + m; r++) {
    int64_t n, y0, x0;
    wino_tile(p, r, &n, &y0, &x0);
    const float *src = mm + (r - r0) * c;
    float *dst[2][2];
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++) {
        const bool in = y0 + a < p->h_out && x0 + b < p->w_out;
        dst[a][b] = in ? y + ((n * p->h_out + y0 + a) * p->w_out + x0 + b) * c : NULL;
      }
    if (dst[0][1] && dst[1][0]) { /* whole tile */
      wino_output_tile(src, plane, bias, c, dst);
      continue;
    }
    for (int64_t e = 0; e < c; e++) { /* a tile on the bottom or right edge */
      float u[2][4];
      for (int j = 0; j < 4; j++) {
        const float m0 = src[j * plane + e], m1 = src[(4 + j) * plane + e];
        const float m2 = src[(8 + j) * plane + e], m3 = src[(12 + j) * plane + e];
        u[0][j] = m0 + m1 + m2;
        u[1][j] = m1 - m2 - m3;
      }
      const float b0 = bias ? bias[e] : 0.0f;
      for (int a = 0; a < 2; a++) {
        if (dst[a][0]) dst[a][0][e] = u[a][0] + u[a][1] + u[a][2] + b0;
        if (dst[a][1]) dst[a][1][e] = u[a][1] - u[a][2] - u[a][3] + b0;
      }
    }
  });
}

void eg_winograd_nhwc_f32(const wparams *p, const float *x, const float *f, const float *bias,
                         float *y, float *scratch) {
  const int64_t all = p->n * wino_tiles_h(p) * wino_tiles_w(p), chunk = wino_chunk(p);
  const float *u = f;
  if (!p->prepacked) {
    wino_pack(p, f, scratch);
    u = scratch;
    scratch += eg_nhwc_round16(wino_packed(p));
  }
  float *zeros = scratch, *v = zeros + eg_nhwc_round16(p->c_in);
  float *mm = v + eg_nhwc_round16(16 * chunk * p->c_in);
  memset(zeros, 0, sizeof(float) * (size_t)p->c_in);
  for (int64_t r0 = 0; r0 < all; r0 += chunk) {
    const int64_t m = all - r0 < chunk ? all - r0 : chunk, macs = m * p->c_out * p->c_in;
    wino_input(p, x, zeros, r0, m, v);
    /* products too small for eg_nhwc_sgemm to split over the threads run side by side, each
     * whole on one thread (the same sums as one after another): a 32x32 ResNet's 16-channel
     * layers (2048 tiles x 16 x 16) ran on one of two threads */
    const bool side_by_side = eg_nhwc_blas_nests() && 16 * macs >= EG_NHWC_SGEMM_SPLIT_MACS &&
                              macs < omp_get_max_threads() * EG_NHWC_SGEMM_SPLIT_MACS;
    EG_OMP_FOR_IF(side_by_side, for (int xi = 0; xi < 16; xi++) {
      eg_nhwc_sgemm(false, false, m, p->c_out, p->c_in, v + xi * m * p->c_in, p->c_in,
                    u + xi * p->c_in * p->c_out, p->c_out, 0.0f, mm + xi * m * p->c_out,
                    p->c_out);
    });
    wino_output(p, mm, bias, r0, m, y);
  }
}


size_t eg_winograd_nhwc_f32_packed_floats(const wparams *p) { return (size_t)wino_packed(p); }

void eg_winograd_nhwc_f32_pack(const wparams *p, const float *filter, float *packed) {
  wino_pack(p, filter, packed);
}

size_t eg_winograd_nhwc_f32_scratch_floats(const wparams *p) { return (size_t)wino_scratch(p); }
