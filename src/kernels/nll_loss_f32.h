/* nll_loss_f32 — aten.nll_loss_forward and aten.nll_loss_backward, fp32 scores, int64 targets,
 * ATen's CPU semantics exactly.
 *
 * Scores x are [batch, classes] (a 2-D input) or [classes] (a 1-D input: one row, target[0]).
 * For each row b with t = target[b] != ignore_index, w_t = weight[t] (1 without weights):
 *   per-sample (reduction none on a 2-D input):  out[b] = -w_t * x[b, t]; ignored rows give 0;
 *                                                total_weight = 0
 *   otherwise:  out = sum_b -w_t * x[b, t]  (divided by total_weight for reduction mean)
 *               total_weight = sum_b w_t    (the count of rows not ignored without weights)
 *   an empty batch gives out = NaN (mean) or 0, total_weight = 0.
 * Backward (gx has x's shape, zero except at each non-ignored (b, t)):
 *   per-sample:  gx[b, t] = -w_t * gy[b]
 *   otherwise:   gx[b, t] = w_t * -(gy / total_weight)  (mean)  or  w_t * -gy  (sum, none)
 * A target outside [0, classes) that is not ignore_index makes the kernels stop and return its
 * row (outputs are then unspecified); they return -1 on success. Sums accumulate in double. */
#ifndef EG_KERNELS_NLL_LOSS_F32_H
#define EG_KERNELS_NLL_LOSS_F32_H

#include <stdbool.h>
#include <stdint.h>

/* ATen's Reduction enum (the `reduction` int argument of its loss ops). */
typedef enum eg_loss_reduction {
  EG_REDUCTION_NONE = 0,
  EG_REDUCTION_MEAN = 1,
  EG_REDUCTION_SUM = 2
} eg_loss_reduction;

typedef struct eg_nll_params {
  int64_t batch;           /* rows: the input's first dim, or 1 for a 1-D input */
  int64_t classes;         /* the input's last dim */
  int64_t ignore_index;
  eg_loss_reduction reduction;
  bool batched;            /* the input is 2-D (reduction none then gives one loss per row) */
} eg_nll_params;

/* out has `batch` elements when per-sample, else 1; total_weight has 1. weight may be NULL. */
int64_t eg_nll_loss_f32(const eg_nll_params *p, const float *x, const int64_t *target,
                        const float *weight, float *out, float *total_weight);

/* gy has `batch` elements when per-sample, else 1; total_weight is read only for mean. */
int64_t eg_nll_loss_backward_f32(const eg_nll_params *p, const float *gy, const int64_t *target,
                                 const float *weight, const float *total_weight, float *gx);

#endif
