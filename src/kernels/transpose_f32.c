/* transpose_f32.c — N-d permutation of a dense fp32 tensor (contract in the header).
 *
 * After simplification (size-1 dims dropped, adjacent-in-both dims merged) there are three
 * cases: nothing moves (one memcpy); the innermost dim stays innermost (memcpy rows); or the
 * innermost dims differ, done as a batch of 2-D transposes between input dim p (which becomes
 * the output's innermost) and the input's innermost dim, in EG_TRANSPOSE_TILE square tiles so
 * both the strided reads and the contiguous writes stay in L1. (After merging, a kept innermost
 * dim implies another dim moved, so the row case always has rank >= 2.) */
#include "kernels/transpose_f32.h"

#include <string.h>

#include "kernels/parallel_nhwc_f32.h"
#include "util/parallel.h"
#include "util/simd.h"

#if EG_SIMD_X86
#include <immintrin.h>
#endif

enum { EG_TRANSPOSE_TILE = 32 };

typedef struct tshape {
  int rank;
  int64_t dims[EG_TRANSPOSE_MAX_RANK]; /* input dims */
  int perm[EG_TRANSPOSE_MAX_RANK];
} tshape;

/* Drops size-1 dims and merges input dims that stay adjacent and in order in the output. */
static tshape simplify(int rank, const int64_t *dims, const uint32_t *perm) {
  int keep[EG_TRANSPOSE_MAX_RANK], renum[EG_TRANSPOSE_MAX_RANK], nk = 0;
  for (int i = 0; i < rank; i++) {
    renum[i] = dims[i] == 1 ? -1 : nk;
    if (dims[i] != 1) keep[nk++] = i;
  }
  int p1[EG_TRANSPOSE_MAX_RANK], np = 0; /* perm over kept dims, renumbered */
  for (int k = 0; k < rank; k++)
    if (renum[perm[k]] >= 0) p1[np++] = renum[perm[k]];
  /* Merge: output runs p1[k], p1[k]+1, ... become one input dim. */
  int group_of[EG_TRANSPOSE_MAX_RANK], ng = 0;
  for (int k = 0; k < np; k++) {
    if (k == 0 || p1[k] != p1[k - 1] + 1) ng++;
    group_of[p1[k]] = ng - 1;
  }
  /* Groups numbered in output order; order them by input position for the new input dims. */
  tshape s = {.rank = ng};
  int in_order[EG_TRANSPOSE_MAX_RANK], n_in = 0;
  for (int i = 0; i < np; i++)
    if (i == 0 || group_of[i] != group_of[i - 1]) in_order[n_in++] = group_of[i];
  int new_index[EG_TRANSPOSE_MAX_RANK];
  for (int i = 0; i < ng; i++) {
    new_index[in_order[i]] = i;
    s.dims[i] = 1;
  }
  for (int i = 0; i < np; i++) s.dims[new_index[group_of[i]]] *= dims[keep[i]];
  for (int k = 0; k < ng; k++) s.perm[k] = new_index[k];
  return s;
}

#if EG_SIMD_X86
/* 8x8 block: y[u*ys + v] = x[u + v*xs] for u, v < 8, in registers. */
EG_TARGET_AVX2 static inline void block8(const float *x, int64_t xs, float *y, int64_t ys) {
  __m256 r[8], t[8];
  for (int v = 0; v < 8; v++) r[v] = _mm256_loadu_ps(x + v * xs);
  for (int v = 0; v < 8; v += 2) {
    t[v] = _mm256_unpacklo_ps(r[v], r[v + 1]);
    t[v + 1] = _mm256_unpackhi_ps(r[v], r[v + 1]);
  }
  for (int v = 0; v < 8; v += 4) {
    r[v] = _mm256_shuffle_ps(t[v], t[v + 2], 0x44);
    r[v + 1] = _mm256_shuffle_ps(t[v], t[v + 2], 0xEE);
    r[v + 2] = _mm256_shuffle_ps(t[v + 1], t[v + 3], 0x44);
    r[v + 3] = _mm256_shuffle_ps(t[v + 1], t[v + 3], 0xEE);
  }
  /* r[0..3]: columns 0,1,2,3 of the low 4 rows (per 128-bit lane); r[4..7] of the high 4 */
  for (int i = 0; i < 4; i++) {
    _mm256_storeu_ps(y + i * ys, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(y + (i + 4) * ys, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

#if EG_SIMD_X86
/* The rows u < *done of the tile below, in 8x8 blocks and the columns right of them. */
EG_TARGET_AVX2 static void tile_avx2(const float *x, int64_t xs, float *y, int64_t ys, int64_t nu,
                                     int64_t nv, int64_t *done) {
  int64_t u0 = 0, v0 = 0;
  for (; u0 + 8 <= nu; u0 += 8)
    for (v0 = 0; v0 + 8 <= nv; v0 += 8) block8(x + u0 + v0 * xs, xs, y + u0 * ys + v0, ys);
  for (int64_t u = 0; u < u0; u++) /* the columns right of the 8x8 blocks */
    for (int64_t v = v0; v < nv; v++) y[u * ys + v] = x[u + v * xs];
  *done = u0;
}
#endif

/* y <- x tile: y[u*ys + v] = x[u + v*xs] for u < nu, v < nv. */
static void tile(const float *x, int64_t xs, float *y, int64_t ys, int64_t nu, int64_t nv) {
  int64_t u0 = 0;
#if EG_SIMD_X86
  if (eg_simd_avx2()) tile_avx2(x, xs, y, ys, nu, nv, &u0);
#endif
  for (int64_t u = u0; u < nu; u++) /* the rows below them (everything without AVX2) */
    for (int64_t v = 0; v < nv; v++) y[u * ys + v] = x[u + v * xs];
}

void eg_transpose_2d_f32(const float *x, int64_t xs, float *y, int64_t ys, int64_t nu,
                         int64_t nv) {
  for (int64_t u0 = 0; u0 < nu; u0 += EG_TRANSPOSE_TILE)
    for (int64_t v0 = 0; v0 < nv; v0 += EG_TRANSPOSE_TILE)
      tile(x + u0 + v0 * xs, xs, y + u0 * ys + v0, ys,
           nu - u0 < EG_TRANSPOSE_TILE ? nu - u0 : EG_TRANSPOSE_TILE,
           nv - v0 < EG_TRANSPOSE_TILE ? nv - v0 : EG_TRANSPOSE_TILE);
}

/* Offsets of batch element b: batch dims are the output positions other than `skip1`/`skip2`,
 * taken in output order. */
static void batch_offsets(const tshape *s, const int64_t *in_stride, const int64_t *out_dims,
                          const int64_t *out_stride, int skip1, int skip2, int64_t b,
                          int64_t *xo, int64_t *yo) {
  *xo = *yo = 0;
  for (int k = s->rank - 1; k >= 0; k--) {
    if (k == skip1 || k == skip2) continue;
    const int64_t idx = b % out_dims[k];
    b /= out_dims[k];
    *xo += idx * in_stride[s->perm[k]];
    *yo += idx * out_stride[k];
  }
}

void eg_transpose_f32(int rank, const int64_t *dims, const uint32_t *perm, const float *x,
                      float *y) {
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= dims[i];
  const tshape s = simplify(rank, dims, perm);
  if (s.rank <= 1 || numel == 0) {
    memcpy(y, x, sizeof(float) * (size_t)numel);
    return;
  }
  int64_t in_stride[EG_TRANSPOSE_MAX_RANK], out_dims[EG_TRANSPOSE_MAX_RANK],
      out_stride[EG_TRANSPOSE_MAX_RANK];
  for (int k = 0; k < s.rank; k++) out_dims[k] = s.dims[s.perm[k]];
  in_stride[s.rank - 1] = out_stride[s.rank - 1] = 1;
  for (int k = s.rank - 2; k >= 0; k--) {
    in_stride[k] = in_stride[k + 1] * s.dims[k + 1];
    out_stride[k] = out_stride[k + 1] * out_dims[k + 1];
  }
  const int last = s.rank - 1;
  if (s.perm[last] == last) { /* rows of dims[last] stay contiguous */
    /* per batch element of the dims before the output's next-to-last, its out_dims[last-1]
     * rows (input stride xs2): one offset computation per run of rows, not per row (rows of
     * 16 floats, the weight gradient's [n,h,w,c] -> [h,w,n,c], cost more in offsets than in
     * bytes) */
    const int64_t row = s.dims[last], nr = out_dims[last - 1], xs2 = in_stride[s.perm[last - 1]];
    const int64_t runs = numel / (row * nr);
    EG_OMP_FOR_IF(eg_nhwc_omp_worth(numel), for (int64_t b = 0; b < runs; b++) {
      int64_t xo, yo;
      batch_offsets(&s, in_stride, out_dims, out_stride, last - 1, last, b, &xo, &yo);
      for (int64_t r = 0; r < nr; r++)
        memcpy(y + yo + r * row, x + xo + r * xs2, sizeof(float) * (size_t)row);
    });
    return;
  }
  int q = 0; /* output position of the input's innermost dim */
  while (s.perm[q] != last) q++;
  const int64_t nu = s.dims[last], nv = out_dims[last], xs = in_stride[s.perm[last]];
  const int64_t ys = out_stride[q], batches = numel / (nu * nv);
  const int64_t tu = (nu + EG_TRANSPOSE_TILE - 1) / EG_TRANSPOSE_TILE;
  const int64_t tv = (nv + EG_TRANSPOSE_TILE - 1) / EG_TRANSPOSE_TILE;
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(numel), for (int64_t t = 0; t < batches * tu * tv; t++) {
    const int64_t b = t / (tu * tv), u0 = t / tv % tu * EG_TRANSPOSE_TILE;
    const int64_t v0 = t % tv * EG_TRANSPOSE_TILE;
    int64_t xo, yo;
    batch_offsets(&s, in_stride, out_dims, out_stride, q, last, b, &xo, &yo);
    const int64_t mu = nu - u0 < EG_TRANSPOSE_TILE ? nu - u0 : EG_TRANSPOSE_TILE;
    const int64_t mv = nv - v0 < EG_TRANSPOSE_TILE ? nv - v0 : EG_TRANSPOSE_TILE;
    tile(x + xo + u0 + v0 * xs, xs, y + yo + u0 * ys + v0, ys, mu, mv);
  });
}
