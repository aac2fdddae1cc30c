/* conv_im2col.c — geometry, image batching, im2col and packing shared by the NCHW convolution
 * kernels (contracts in conv_im2col.h). Build with -fopenmp. */
#include "kernels/conv_im2col.h"

#include <cblas.h>
#include <string.h>
#include "util/parallel.h"
#include "util/simd.h"

/* GEMMs narrower than this many columns run well below sgemm's peak (measured with OpenBLAS
 * 0.3.21: N=196 -> 190 GFLOP/s, N>=1568 -> 238 on two cores); batch images up to it ... */
enum { EG_CONV_GEMM_COLS = 1536 };
/* ... unless the column matrix for the batch would exceed this many bytes. */
#define EG_CONV_COL_BYTES ((int64_t)16 << 20)
/* Loops with fewer elements than this stay on one thread. */
enum { EG_CONV_OMP_MIN = 1 << 15 };
/* Scratch regions are rounded to 64 bytes so each one starts cache-line aligned. */
enum { EG_CONV_ALIGN_FLOATS = 16 };

/* sgemm runs between our loops on the same cores: an OpenMP build of OpenBLAS shares libgomp's
 * pool with us, but a pthreads build keeps its own workers, and libgomp's idle threads then spin
 * on the cores sgemm is using. Measured on 2 cores, r18-l1 input gradient, best of several runs:
 * pthreads OpenBLAS with our loops threaded 42 GFLOP/s (10-20 when other processes share the
 * cores), with them serial 117; OpenMP OpenBLAS with them threaded 147. So with a pthreads
 * OpenBLAS our loops stay serial. */
bool eg_conv_omp_worth(int64_t work) {
#ifdef OPENBLAS_THREAD
  if (openblas_get_parallel() == OPENBLAS_THREAD) return false;
#endif
  return work >= EG_CONV_OMP_MIN;
}

/* A call with fewer multiply-adds than this keeps OpenBLAS's own threading of its GEMMs (a region
 * costs a few microseconds; 1 << 20 multiply-adds take some 20 us on a core). */
#define EG_CONV_TEAM_MIN_MACS ((int64_t)1 << 20)

bool eg_conv_team_worth(int64_t macs) {
  return eg_conv_omp_worth(EG_CONV_OMP_MIN) && macs >= EG_CONV_TEAM_MIN_MACS &&
         eg_omp_forks(true);
}

/* Shares of a team's GEMM are whole multiples of this many rows or columns: whole micro-tiles
 * of OpenBLAS's sgemm kernels (or whole halves of 16), fine enough to even out 48 rows. */
enum { EG_CONV_GEMM_GRAIN = 8 };

void eg_conv_sgemm_team(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                        int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc) {
  int64_t lo = 0, hi = m > n ? m : n;
  if (omp_get_num_threads() > 1) eg_omp_share(hi, EG_CONV_GEMM_GRAIN, &lo, &hi);
  if (lo == hi) return;
  if (m > n) { /* rows [lo, hi) of C: of op(A) */
    a += ta ? lo : lo * lda;
    c += lo * ldc;
    m = hi - lo;
  } else { /* columns [lo, hi) of C: of op(B) */
    b += tb ? lo * ldb : lo;
    c += lo;
    n = hi - lo;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

eg_conv_geom eg_conv_geom_of(const eg_conv2d_params *p) {
  eg_conv_geom g = {.n = p->n, .groups = p->groups, .kh = p->k_h, .kw = p->k_w,
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

bool eg_conv_geom_empty(const eg_conv_geom *g) {
  return g->n == 0 || g->cb == 0 || g->hb == 0 || g->wb == 0 || g->cs == 0 || g->hs == 0 ||
         g->ws == 0 || g->kh == 0 || g->kw == 0;
}

bool eg_conv_geom_pointwise(const eg_conv_geom *g) {
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 &&
         g->hs == g->hb && g->ws == g->wb;
}

/* K = kh*kw is too short for a GEMM, and direct loops over the taps beat im2col, which writes
 * kh*kw copies of the input. Measured on one core, 8x(C*m)x56x56 3x3, GFLOP/s direct vs GEMM:
 * down m=1,2,4,64: 15.5,15.7,15.7,15.7 vs 8.7,16.1,20.6,84; up: 17-19 vs 4-9 for every m;
 * weight gradient m=4,8: 18.6,14.8 vs 10.6,22. */
bool eg_conv_geom_depthwise(const eg_conv_geom *g, int64_t max_mult) {
  return g->cb == g->groups && g->cs / g->groups <= max_mult;
}

int64_t eg_conv_round_up_floats(int64_t n) {
  return (n + EG_CONV_ALIGN_FLOATS - 1) / EG_CONV_ALIGN_FLOATS * EG_CONV_ALIGN_FLOATS;
}

/* Enough images to reach EG_CONV_GEMM_COLS columns, within EG_CONV_COL_BYTES, then evened out
 * so the last batch is not a runt. */
int64_t eg_conv_plan_images(const eg_conv_geom *g) {
  const int64_t p = g->hs * g->ws, rows = g->cb * g->kh * g->kw;
  int64_t nb = p > 0 ? (EG_CONV_GEMM_COLS + p - 1) / p : 1;
  if (nb > g->n) nb = g->n;
  while (nb > 1 && rows * nb * p * (int64_t)sizeof(float) > EG_CONV_COL_BYTES) nb--;
  if (nb < 1) return 1;
  const int64_t batches = (g->n + nb - 1) / nb;
  return (g->n + batches - 1) / batches;
}

int64_t eg_conv_gemm_scratch_floats(const eg_conv_geom *g) {
  const int64_t nb = eg_conv_plan_images(g), p = g->hs * g->ws;
  const bool direct = nb == 1 && eg_conv_geom_pointwise(g);
  return (direct ? 0 : eg_conv_round_up_floats(g->cb * g->kh * g->kw * nb * p)) +
         (nb > 1 ? eg_conv_round_up_floats(g->cs * nb * p) : 0);
}

void eg_conv_valid_range(int64_t off, int64_t stride, int64_t size, int64_t n_out, int64_t *lo,
                         int64_t *hi) {
  int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
  int64_t h = off >= size ? 0 : (size - 1 - off) / stride + 1;
  if (h > n_out) h = n_out;
  *lo = l < h ? l : h;
  *hi = h;
}

eg_conv_tap eg_conv_tap_at(const eg_conv_geom *g, int64_t a, int64_t b) {
  eg_conv_tap t = {.off_h = a * g->dh - g->ph, .off_w = b * g->dw - g->pw};
  eg_conv_valid_range(t.off_h, g->sh, g->hb, g->hs, &t.i0, &t.i1);
  eg_conv_valid_range(t.off_w, g->sw, g->wb, g->ws, &t.j0, &t.j1);
  return t;
}

const eg_conv_tap *eg_conv_taps(const eg_conv_geom *g, eg_conv_tap taps[EG_CONV_TAP_CACHE]) {
  if (g->kh * g->kw > EG_CONV_TAP_CACHE) return NULL;
  for (int64_t e = 0; e < g->kh * g->kw; e++) taps[e] = eg_conv_tap_at(g, e / g->kw, e % g->kw);
  return taps;
}

/* The kh*kw rows of the column matrix of one big-side plane, row e (tap e) at dst + e*ld:
 * dst[e*ld + i*ws + j] = plane[i*sh + off_h][j*sw + off_w], 0 outside the plane. The rows no
 * pixel of a tap reaches are two contiguous blocks; the others are written by inline loops.
 * Small planes (ResNet's 16x16 down to 2x2) made per-row memset/memcpy calls, three per output
 * row, cost as much as the copying (r18 layer 4, 8 images: 0.29 ms of im2col, now 0.14): the
 * loops stay loops (EG_KEEP_LOOPS) inlined into the cloned caller (vectorised for its
 * instruction set). */
static inline __attribute__((always_inline)) EG_KEEP_LOOPS void
im2col_plane(const eg_conv_geom *g, const float *plane, const eg_conv_tap *taps, int64_t ld,
             float *restrict dst) {
  const int64_t ws = g->ws, kk = g->kh * g->kw;
  for (int64_t e = 0; e < kk; e++, dst += ld) {
    const eg_conv_tap t = eg_conv_tap_of(g, taps, e);
    for (int64_t q = 0; q < t.i0 * ws; q++) dst[q] = 0.0f;
    for (int64_t i = t.i0; i < t.i1; i++)
      eg_conv_row_gather(g, plane + (i * g->sh + t.off_h) * g->wb + t.off_w, t, dst + i * ws);
    for (int64_t q = t.i1 * ws; q < g->hs * ws; q++) dst[q] = 0.0f;
  }
}

EG_SIMD_CLONES EG_KEEP_LOOPS
void eg_conv_im2col(const eg_conv_geom *g, const float *big, int64_t m, float *col) {
  const int64_t kk = g->kh * g->kw, p = g->hs * g->ws;
  if (eg_conv_geom_pointwise(g)) { /* the column matrix is the images side by side */
    eg_conv_pack_images(big, m, g->cb, p, col);
    return;
  }
  eg_conv_tap cache[EG_CONV_TAP_CACHE];
  const eg_conv_tap *taps = eg_conv_taps(g, cache);
  /* channel-major: a thread writes whole [kk, m*p] blocks of col, not parts of the same rows
   * (small planes made that cache lines shared between threads: 8 images of 2x2, 6x slower) */
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(m * g->cb * kk * p), for (int64_t t = 0; t < m * g->cb; t++) {
    const int64_t c = t / m, k = t % m;
    im2col_plane(g, big + (k * g->cb + c) * g->hb * g->wb, taps, m * p,
                 col + c * kk * m * p + k * p);
  });
}

EG_SIMD_CLONES
void eg_conv_pack_images(const float *src, int64_t m, int64_t c, int64_t p, float *packed) {
  EG_OMP_FOR_TEAM(eg_conv_omp_worth(m * c * p), for (int64_t t = 0; t < m * c; t++) /* by rows */
    memcpy(packed + t * p, src + ((t % m) * c + t / m) * p, sizeof(float) * (size_t)p););
}
