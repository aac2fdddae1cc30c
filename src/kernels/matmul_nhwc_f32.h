/* matmul_nhwc_f32 — QNN FullyConnected and MatMul, fp32, via CBLAS sgemm.
 *
 * FullyConnected: x [m, k] (rows of the flattened input), w [units, k] (QNN's [out, in]),
 *   bias [units] or NULL: y [m, units] = x w^T + bias.
 * MatMul: a [..., m, k] (or [..., k, m] with trans_a), b [..., k, p] (or [..., p, k] with
 *   trans_b), bias [p] or NULL: y [..., m, p] = op(a) op(b) + bias, batch dims broadcast (each
 *   operand's batch dims right-aligned to batch_rank, 1 = broadcast).
 * Never allocates. */
#ifndef EG_KERNELS_MATMUL_NHWC_F32_H
#define EG_KERNELS_MATMUL_NHWC_F32_H

#include <stdbool.h>
#include <stdint.h>

#define EG_MATMUL_MAX_BATCH_RANK 6

void eg_fully_connected_nhwc_f32(int64_t m, int64_t k, int64_t units, const float *x,
                                 const float *w, const float *bias, float *y);

typedef struct eg_matmul_nhwc_params {
  int batch_rank;
  int64_t batch_a[EG_MATMUL_MAX_BATCH_RANK], batch_b[EG_MATMUL_MAX_BATCH_RANK];
  int64_t batch_out[EG_MATMUL_MAX_BATCH_RANK];
  int64_t m, k, p;
  bool trans_a, trans_b;
} eg_matmul_nhwc_params;

void eg_matmul_nhwc_f32(const eg_matmul_nhwc_params *p, const float *a, const float *b,
                        const float *bias, float *y);

#endif
