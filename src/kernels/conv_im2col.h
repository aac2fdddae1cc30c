/* conv_im2col — internal to the NCHW convolution kernels (convolution_nchw_f32.c and
 * convolution_backward_nchw_f32.c): the geometry they are both phrased on, how images are
 * batched into one GEMM, im2col and packing. Not a public kernel interface.
 *
 * Geometry (eg_conv_geom): a `big` side and a `small` side related by
 *   small[n, co, i, j] = sum over ci in co's group, taps (a, b) of
 *                        w[co, ci % cbg, a, b] * big[n, ci, i*sh - ph + a*dh, j*sw - pw + b*dw]
 * (big read as 0 outside its bounds; cbg = cb/groups, csg = cs/groups), w laid out
 * [cs, cbg, kh, kw]. A convolution's input is its big side, a transposed convolution's output.
 *
 * Batching: small GEMMs are slow, so images with few small-side pixels are placed side by side
 * (eg_conv_plan_images images per GEMM). The column matrix of m images is
 * [cb*kh*kw, m*hs*ws], image k in columns [k*hs*ws, (k+1)*hs*ws); "packed" small-side images
 * are [cs, m*hs*ws] in the same column order.
 *
 * Threading: the loops here use OpenMP only when eg_conv_omp_worth says so. A kernel call with
 * enough work (eg_conv_team_worth) runs all its stages in one parallel region
 * (util/parallel.h's EG_OMP_PARALLEL_IF): there the loops here are shared out over its team
 * (EG_OMP_FOR_TEAM) and each thread runs its share of every GEMM single-threaded
 * (eg_conv_sgemm_team: OpenMP OpenBLAS runs sgemm on its caller's thread inside a region); any
 * other call runs them outside regions, and sgemm threads itself. None of this may be called
 * by the threads of a caller's region one by one. */
#ifndef EG_KERNELS_CONV_IM2COL_H
#define EG_KERNELS_CONV_IM2COL_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/convolution_nchw_f32.h"
#include "util/simd.h"

typedef struct eg_conv_geom {
  int64_t n, groups;
  int64_t cb, hb, wb;             /* big side:   [n, cb, hb, wb] */
  int64_t cs, hs, ws;             /* small side: [n, cs, hs, ws] */
  int64_t kh, kw;                 /* kernel */
  int64_t sh, sw, ph, pw, dh, dw; /* stride, padding (may be negative when derived), dilation */
} eg_conv_geom;

/* Whether a loop over `work` elements may fork OpenMP threads: enough work, and an OpenBLAS
 * whose threads do not compete with OpenMP's (see the .c file for the measurements). */
bool eg_conv_omp_worth(int64_t work);

/* Whether a kernel call of `macs` multiply-adds runs in one region of its own (see Threading):
 * enough work, eg_conv_omp_worth's OpenBLAS, and more than one thread to run it. */
bool eg_conv_team_worth(int64_t macs);

/* C = op(A) op(B) + beta*C (row-major, as cblas_sgemm with alpha 1), or inside a team of more
 * than one thread the calling thread's share of it: whole multiples of 8 of C's longer side
 * (rows when m > n, else columns), K never split, so each element of C is summed as by the
 * whole call and no two threads write the same element. */
void eg_conv_sgemm_team(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                        int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc);

/* The geometry of a convolution (big = x) or transposed convolution (big = y). */
eg_conv_geom eg_conv_geom_of(const eg_conv2d_params *p);

/* True when some GEMM dimension would be 0 (empty tensors). */
bool eg_conv_geom_empty(const eg_conv_geom *g);

/* 1x1, stride 1, no padding, same size: im2col would be the identity. */
bool eg_conv_geom_pointwise(const eg_conv_geom *g);

/* One big-side channel per group and at most `max_mult` small-side channels per group: the
 * case where direct loops over the taps beat im2col + GEMM. */
bool eg_conv_geom_depthwise(const eg_conv_geom *g, int64_t max_mult);

/* n rounded up to whole 64-byte lines of floats: the size of every scratch region, so that each
 * region starts cache-line aligned. */
int64_t eg_conv_round_up_floats(int64_t n);

/* Images per GEMM (>= 1, at most max(n, 1)). */
int64_t eg_conv_plan_images(const eg_conv_geom *g);

/* Floats of scratch for im2col + GEMM over batched images: the column matrix (none when one
 * image at a time is pointwise, the big image being its own column matrix), then, only when
 * images are batched, a [cs, nb*hs*ws] region for the small side (the packed input or the
 * GEMM's output). Each region is rounded by eg_conv_round_up_floats. */
int64_t eg_conv_gemm_scratch_floats(const eg_conv_geom *g);

/* Where kernel tap (a, b) reaches: small-side pixel (i, j) meets big-side pixel
 * (i*sh + off_h, j*sw + off_w). Rows [i0, i1) of [0, hs) and columns [j0, j1) of [0, ws) are
 * exactly those for which that pixel lies inside the big plane (an empty range has lo == hi). */
typedef struct eg_conv_tap {
  int64_t off_h, off_w;
  int64_t i0, i1, j0, j1;
} eg_conv_tap;

/* [*lo, *hi): the o in [0, n_out) with 0 <= o*stride + off < size (stride >= 1; *lo <= *hi). */
void eg_conv_valid_range(int64_t off, int64_t stride, int64_t size, int64_t n_out, int64_t *lo,
                         int64_t *hi);

eg_conv_tap eg_conv_tap_at(const eg_conv_geom *g, int64_t a, int64_t b);

/* The taps of a kernel, worked out once per call of a kernel that visits each of them for
 * every plane (the depthwise loops: eg_conv_tap_at divides, and small planes made it a hot
 * spot): eg_conv_taps fills taps[kh*kw] (tap e = (e / kw, e % kw)) and returns it when
 * kh*kw <= EG_CONV_TAP_CACHE, else returns NULL; eg_conv_tap_of reads tap e either way. */
enum { EG_CONV_TAP_CACHE = 64 };
const eg_conv_tap *eg_conv_taps(const eg_conv_geom *g, eg_conv_tap taps[EG_CONV_TAP_CACHE]);

static inline eg_conv_tap eg_conv_tap_of(const eg_conv_geom *g, const eg_conv_tap *taps,
                                         int64_t e) {
  return taps ? taps[e] : eg_conv_tap_at(g, e / g->kw, e % g->kw);
}

/* One small-side row of tap t's column values: d[j] = src[j*sw] for j in [t.j0, t.j1), 0 for
 * the other j < ws (src: the big row at t.off_w). Inlined into callers that keep their loops
 * (EG_KEEP_LOOPS, util/simd.h), so it must carry the same attribute. */
static inline __attribute__((always_inline)) EG_KEEP_LOOPS void
eg_conv_row_gather(const eg_conv_geom *g, const float *restrict src, eg_conv_tap t,
                   float *restrict d) {
  for (int64_t j = 0; j < t.j0; j++) d[j] = 0.0f;
  if (g->sw == 1) {
    for (int64_t j = t.j0; j < t.j1; j++) d[j] = src[j];
  } else {
    for (int64_t j = t.j0; j < t.j1; j++) d[j] = src[j * g->sw];
  }
  for (int64_t j = t.j1; j < g->ws; j++) d[j] = 0.0f;
}

/* col [cb*kh*kw, m*hs*ws] from the m consecutive big images at `big`; overwrites col. */
void eg_conv_im2col(const eg_conv_geom *g, const float *big, int64_t m, float *col);

/* packed [c, m*p] <- m images [c, p] (transpose of the two outer dimensions). */
void eg_conv_pack_images(const float *src, int64_t m, int64_t c, int64_t p, float *packed);

#endif
