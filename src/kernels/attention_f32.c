/* attention_f32.c — see attention_f32.h. Each problem materialises its [L, S] score matrix in
 * scratch: the products are two (forward) or five (backward) sgemm calls, which OpenBLAS
 * threads itself, and the row softmax between them is a plain loop. Problems run one after
 * the other, so the scratch holds one problem's matrices. */
#include "kernels/attention_f32.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels/log_softmax_f32.h"

size_t eg_attention_scratch_bytes(const eg_attention_params *p) {
  return (size_t)(p->l * p->s) * sizeof(float);
}

size_t eg_attention_backward_scratch_bytes(const eg_attention_params *p) {
  return (size_t)(2 * p->l * p->s + p->l) * sizeof(float);
}

/* y[m, n] = alpha * op(a) @ op(b), row-major; y is cleared first because sgemm with beta 0
 * may still read it, and scratch can hold NaN bits. */
static void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float *y) {
  if (m == 0 || n == 0) return;
  memset(y, 0, (size_t)(m * n) * sizeof(float));
  if (k == 0) return;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, 0.0f, y, (int)n);
}

/* s[L, S] = scale * q @ k^T + mask, with j > i at -inf when causal. */
static void scores(const eg_attention_params *p, int64_t problem, const float *q,
                   const float *k, const float *mask, float *s) {
  const int64_t L = p->l, S = p->s;
  gemm(false, true, L, S, p->e, p->scale, q, p->e, k, p->e, s);
  if (mask) {
    const float *mp = mask + (problem / p->heads) * p->mask_sb + (problem % p->heads) * p->mask_sh;
    for (int64_t i = 0; i < L; i++)
      for (int64_t j = 0; j < S; j++) s[i * S + j] += mp[i * p->mask_si + j * p->mask_sj];
  }
  if (p->causal)
    for (int64_t i = 0; i < L && i + 1 < S; i++)
      for (int64_t j = i + 1; j < S; j++) s[i * S + j] = -INFINITY;
}

/* Row i of s becomes its softmax; lse[i] its log-sum-exp. A row without a score above -inf
 * (NaN compares false, so an all-NaN row too) becomes zeros with lse 0, as in ATen. */
static void softmax_rows(int64_t L, int64_t S, float *s, float *lse) {
  for (int64_t i = 0; i < L; i++) {
    float *r = s + i * S;
    float m = -INFINITY;
    for (int64_t j = 0; j < S; j++)
      if (r[j] > m) m = r[j];
    if (m == -INFINITY) {
      memset(r, 0, (size_t)S * sizeof(float));
      lse[i] = 0.0f;
      continue;
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < S; j++) {
      r[j] = expf(r[j] - m);
      sum += r[j];
    }
    lse[i] = m + logf(sum);
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < S; j++) r[j] *= inv;
  }
}

void eg_attention_f32(const eg_attention_params *p, const eg_attention_io *io, void *scratch) {
  const int64_t L = p->l, S = p->s, E = p->e;
  float *s = scratch;
  for (int64_t b = 0; b < p->problems; b++) {
    scores(p, b, io->q + b * L * E, io->k + b * S * E, io->mask, s);
    softmax_rows(L, S, s, io->lse + b * L);
    gemm(false, false, L, E, S, 1.0f, s, S, io->v + b * S * E, E, io->out + b * L * E);
  }
}

void eg_attention_backward_f32(const eg_attention_params *p, const eg_attention_backward_io *io,
                               void *scratch) {
  const int64_t L = p->l, S = p->s, E = p->e;
  float *pr = scratch, *ds = pr + L * S, *d = ds + L * S;
  for (int64_t b = 0; b < p->problems; b++) {
    const float *q = io->q + b * L * E, *k = io->k + b * S * E, *v = io->v + b * S * E;
    const float *gout = io->gout + b * L * E, *out = io->out + b * L * E, *lse = io->lse + b * L;
    float *gq = io->gq + b * L * E, *gk = io->gk + b * S * E, *gv = io->gv + b * S * E;
    scores(p, b, q, k, io->mask, pr);
    for (int64_t i = 0; i < L; i++) {
      float dot = 0.0f;
      for (int64_t e = 0; e < E; e++) dot += gout[i * E + e] * out[i * E + e];
      d[i] = dot;
      for (int64_t j = 0; j < S; j++) pr[i * S + j] = expf(pr[i * S + j] - lse[i]);
    }
    gemm(true, false, S, E, L, 1.0f, pr, S, gout, E, gv);
    gemm(false, true, L, S, E, 1.0f, gout, E, v, E, ds);
    for (int64_t i = 0; i < L; i++)
      for (int64_t j = 0; j < S; j++) ds[i * S + j] = pr[i * S + j] * (ds[i * S + j] - d[i]);
    gemm(false, false, L, E, S, p->scale, ds, S, k, E, gq);
    gemm(true, false, S, E, L, p->scale, ds, S, q, E, gk);
  }
}

void eg_safe_softmax_f32(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner) {
  eg_softmax_f32(x, y, outer, dim, inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      const int64_t base = o * dim * inner + i;
      int64_t d = 0;
      while (d < dim && x[base + d * inner] == -INFINITY) d++;
      if (d < dim) continue;
      for (d = 0; d < dim; d++) y[base + d * inner] = 0.0f;
    }
}
