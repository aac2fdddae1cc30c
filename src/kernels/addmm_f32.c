/* addmm_f32.c — see addmm_f32.h. The expanded bias is written into y first and sgemm adds
 * alpha * a @ b on top with its own beta, so the product is one BLAS call with no temporary.
 * sgemm runs outside any OpenMP region so OpenBLAS threads it itself. */
#include "kernels/addmm_f32.h"

#include <cblas.h>
#include <string.h>

void eg_addmm_f32(const eg_addmm_params *p, const float *bias, const float *a, const float *b,
                  float *y) {
  const int64_t n = p->n, k = p->k, m = p->m;
  if (n == 0 || m == 0) return;
  const int use_bias = bias && p->beta != 0;
  if (use_bias) {
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < m; j++) y[i * m + j] = bias[i * p->bias_rs + j * p->bias_cs];
  } else {
    /* sgemm with beta 0 should not read y, but y may hold NaN bits: do not depend on it */
    memset(y, 0, (size_t)(n * m) * sizeof(float));
  }
  if (k == 0) { /* no product: y = beta * bias, which sgemm would not be asked for */
    if (use_bias && p->beta != 1)
      for (int64_t i = 0; i < n * m; i++) y[i] *= p->beta;
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)m, (int)k, p->alpha, a,
              (int)k, b, (int)m, use_bias ? p->beta : 0.0f, y, (int)m);
}
