/* matmul_nhwc_f32.c — FullyConnected and batched MatMul through sgemm (contract in the header).
 * The bias is written into y first and sgemm accumulates onto it (beta = 1). */
#include "kernels/matmul_nhwc_f32.h"

#include <string.h>

#include "kernels/parallel_nhwc_f32.h"

static void fill_rows(float *y, int64_t rows, int64_t cols, const float *bias) {
  for (int64_t r = 0; r < rows; r++)
    if (bias)
      memcpy(y + r * cols, bias, sizeof(float) * (size_t)cols);
    else
      memset(y + r * cols, 0, sizeof(float) * (size_t)cols);
}

void eg_fully_connected_nhwc_f32(int64_t m, int64_t k, int64_t units, const float *x,
                                 const float *w, const float *bias, float *y) {
  fill_rows(y, m, units, bias);
  if (m == 0 || k == 0 || units == 0) return;
  eg_nhwc_sgemm(false, true, m, units, k, x, k, w, k, 1.0f, y, units);
}

/* Element offset of batch index `b` (over batch_out) in an operand with batch dims `dims`. */
static int64_t batch_offset(const eg_matmul_nhwc_params *p, const int64_t *dims, int64_t b,
                            int64_t mat) {
  int64_t off = 0, stride = mat;
  for (int i = p->batch_rank - 1; i >= 0; i--) {
    const int64_t idx = b % p->batch_out[i];
    b /= p->batch_out[i];
    if (dims[i] != 1) off += idx * stride;
    stride *= dims[i];
  }
  return off;
}

void eg_matmul_nhwc_f32(const eg_matmul_nhwc_params *p, const float *a, const float *b,
                        const float *bias, float *y) {
  int64_t batches = 1;
  for (int i = 0; i < p->batch_rank; i++) batches *= p->batch_out[i];
  fill_rows(y, batches * p->m, p->p, bias);
  if (p->m == 0 || p->k == 0 || p->p == 0) return;
  const int64_t lda = p->trans_a ? p->m : p->k, ldb = p->trans_b ? p->k : p->p;
  for (int64_t t = 0; t < batches; t++)
    eg_nhwc_sgemm(p->trans_a, p->trans_b, p->m, p->p, p->k,
                  a + batch_offset(p, p->batch_a, t, p->m * p->k), lda,
                  b + batch_offset(p, p->batch_b, t, p->k * p->p), ldb, 1.0f, y + t * p->m * p->p,
                  p->p);
}
