/* addmm_f32 — aten.addmm and aten.mm, fp32, row-major, by CBLAS sgemm.
 *
 *   y[n, m] = beta * bias[i, j] + alpha * (a[n, k] @ b[k, m])
 * `bias` is read at bias[i * bias_rs + j * bias_cs]: strides of 0 express ATen's expansion of a
 * [m], [1, m], [n, 1] or 0-d self to [n, m]. With bias == NULL or beta == 0 the bias is not read
 * at all (ATen ignores self when beta is 0, so NaNs in it do not propagate), which is also mm.
 * Sizes may be 0 (k == 0 gives beta * bias, or zeros). n, k and m must fit in an int (sgemm's
 * dimension type); callers check. y must not overlap the inputs. */
#ifndef EG_KERNELS_ADDMM_F32_H
#define EG_KERNELS_ADDMM_F32_H

#include <stdint.h>

typedef struct eg_addmm_params {
  int64_t n, k, m;
  float alpha, beta;
  int64_t bias_rs, bias_cs; /* element strides of bias along y's rows and columns */
} eg_addmm_params;

void eg_addmm_f32(const eg_addmm_params *p, const float *bias, const float *a, const float *b,
                  float *y);

#endif
