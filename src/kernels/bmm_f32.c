/* bmm_f32.c — see bmm_f32.h. Batches are independent products; each is eg_addmm_f32 without a
 * bias, so OpenBLAS threads every sgemm itself and no batch reads another's output. */
#include "kernels/bmm_f32.h"

#include <stddef.h>

void eg_bmm_f32(const eg_addmm_params *p, int64_t batch, const float *a, const float *b,
                float *y) {
  const int64_t sa = p->n * p->k, sb = p->k * p->m, sy = p->n * p->m;
  for (int64_t i = 0; i < batch; i++) eg_addmm_f32(p, NULL, a + i * sa, b + i * sb, y + i * sy);
}
