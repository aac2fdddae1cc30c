/* mse_loss_f32 — aten.mse_loss and aten.mse_loss_backward, fp32, with NumPy broadcasting.
 *
 * The element-wise index space is the broadcast shape of the operands; each operand is read
 * through its own element strides (0 along broadcast dims). eg_mse_geom_init builds that from
 * the shapes and merges dims that are contiguous for every operand, so equal shapes become one
 * flat loop.
 *   eg_mse_loss_none_f32:     y[i]  = (x[i] - t[i])^2                    (y dense, broadcast shape)
 *   eg_mse_loss_sum_f32:      returns sum_i (x[i] - t[i])^2, accumulated in double
 *   eg_mse_loss_backward_f32: gx[i] = norm * (x[i] - t[i]) * gy[i]      (gx dense)
 * where ATen's norm is 2 / numel(x) for reduction mean and 2 otherwise. Outputs must not overlap
 * inputs. */
#ifndef EG_KERNELS_MSE_LOSS_F32_H
#define EG_KERNELS_MSE_LOSS_F32_H

#include <stdint.h>

#include "edgegrad.h"

enum { EG_MSE_OPERANDS = 3 };

typedef struct eg_mse_geom {
  int rank;                                     /* after merging; 0 for one element */
  int64_t shape[EG_MAX_RANK];
  int64_t stride[EG_MSE_OPERANDS][EG_MAX_RANK]; /* per operand, in elements */
  int64_t numel;
} eg_mse_geom;

/* `count` operands (2 or 3) with ranks[k] and shapes[k], all broadcastable to out_shape
 * (out_rank dims; the caller has checked this). Operand order: x, t[, gy]. */
void eg_mse_geom_init(eg_mse_geom *g, int out_rank, const int64_t *out_shape, int count,
                      const int *ranks, const int64_t *const *shapes);

void eg_mse_loss_none_f32(const eg_mse_geom *g, const float *x, const float *t, float *y);
double eg_mse_loss_sum_f32(const eg_mse_geom *g, const float *x, const float *t);
void eg_mse_loss_backward_f32(const eg_mse_geom *g, float norm, const float *x, const float *t,
                              const float *gy, float *gx);

#endif
