/* bmm_f32 — aten.bmm, fp32, row-major: one CBLAS sgemm per batch (kernels/addmm_f32.h).
 *
 *   y[b, n, m] = a[b, n, k] @ b[b, k, m]        for b in [0, batch)
 * p describes one product (alpha 1, beta 0, no bias). Any size may be 0 (k == 0 gives zeros).
 * y must not overlap the inputs. */
#ifndef EG_KERNELS_BMM_F32_H
#define EG_KERNELS_BMM_F32_H

#include "kernels/addmm_f32.h"

void eg_bmm_f32(const eg_addmm_params *p, int64_t batch, const float *a, const float *b,
                float *y);

#endif
