/* test_kernels_matmul.c — eg_addmm_f32 (and so mm) against a naive triple loop in double.
 *
 * Covers square and skinny products, empty sizes (n, m or k of 0), every bias expansion
 * ([n, m], [m], [1, m], [n, 1], 0-d), beta/alpha values, beta == 0 with a NaN bias (ATen ignores
 * self then), and the output pre-filled with NaN so sgemm's beta handling cannot leak it. */
#include "kernels/addmm_f32.h"

#include "eg_test.h"

#define RTOL 1e-4
#define ATOL 1e-5

typedef struct mm_case {
  int64_t n, k, m;
  int bias;        /* 0 none, 1 [n, m], 2 [m], 3 [n, 1], 4 0-d */
  float beta, alpha;
} mm_case;

static void bias_strides(const mm_case *c, int64_t *rs, int64_t *cs, long *count) {
  switch (c->bias) {
  case 1: *rs = c->m, *cs = 1, *count = (long)(c->n * c->m); break;
  case 2: *rs = 0, *cs = 1, *count = (long)c->m; break;
  case 3: *rs = 1, *cs = 0, *count = (long)c->n; break;
  default: *rs = 0, *cs = 0, *count = 1; break;
  }
}

static void test_addmm(void) {
  static const mm_case cases[] = {
      {4, 5, 3, 0, 0, 1},      {1, 1, 1, 0, 0, 1},      {64, 128, 32, 1, 1, 1},
      {7, 9, 11, 2, 1, 1},     {7, 9, 11, 3, 0.5f, 2},  {7, 9, 11, 4, -1, 0.25f},
      {3, 0, 4, 1, 2, 1},      {3, 0, 4, 0, 0, 1},      {0, 5, 4, 2, 1, 1},
      {3, 5, 0, 2, 1, 1},      {128, 1, 256, 2, 1, 1},  {1, 512, 10, 2, 1, 1},
      {33, 17, 65, 1, 0, 1},   {5, 6, 7, 2, 1, 0},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const mm_case *c = &cases[ci];
    int64_t rs, cs;
    long nb;
    bias_strides(c, &rs, &cs, &nb);
    long na = (long)(c->n * c->k), nbm = (long)(c->k * c->m), ny = (long)(c->n * c->m);
    float *a = malloc((size_t)(na + 1) * sizeof(float));
    float *b = malloc((size_t)(nbm + 1) * sizeof(float));
    float *bias = malloc((size_t)(nb + 1) * sizeof(float));
    float *y = malloc((size_t)(ny + 1) * sizeof(float));
    float *ref = malloc((size_t)(ny + 1) * sizeof(float));
    eg_test_fill(a, na, (unsigned)ci * 3 + 1);
    eg_test_fill(b, nbm, (unsigned)ci * 3 + 2);
    eg_test_fill(bias, nb, (unsigned)ci * 3 + 3);
    if (c->bias && c->beta == 0) bias[0] = NAN; /* must be ignored */
    for (long i = 0; i < ny; i++) y[i] = NAN;
    for (int64_t i = 0; i < c->n; i++)
      for (int64_t j = 0; j < c->m; j++) {
        double s = 0;
        for (int64_t q = 0; q < c->k; q++) s += (double)a[i * c->k + q] * b[q * c->m + j];
        double bv = c->bias && c->beta != 0 ? c->beta * (double)bias[i * rs + j * cs] : 0;
        ref[i * c->m + j] = (float)(bv + c->alpha * s);
      }
    eg_addmm_params p = {.n = c->n, .k = c->k, .m = c->m, .alpha = c->alpha, .beta = c->beta,
                         .bias_rs = rs, .bias_cs = cs};
    eg_addmm_f32(&p, c->bias ? bias : NULL, a, b, y);
    long bad = eg_test_allclose(y, ref, ny, RTOL, ATOL);
    EG_CHECK_MSG(bad < 0, "case %zu (%lldx%lldx%lld bias %d): y[%ld] = %g, want %g", ci,
                 (long long)c->n, (long long)c->k, (long long)c->m, c->bias, bad,
                 bad >= 0 ? y[bad] : 0.0f, bad >= 0 ? ref[bad] : 0.0f);
    free(a), free(b), free(bias), free(y), free(ref);
  }
}

int main(void) {
  EG_RUN(test_addmm);
  return eg_test_summary();
}
