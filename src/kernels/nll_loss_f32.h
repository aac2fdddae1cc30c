/* nll_loss_f32 — aten.nll_loss_forward / nll_loss_backward and aten.nll_loss2d_forward /
 * nll_loss2d_backward, fp32 scores, int64 targets, ATen's CPU semantics exactly.
 *
 * Scores x are [batch, classes, inner] with target [batch, inner]: [batch, classes] (a 2-D
 * input, inner 1), [classes] (a 1-D input: one row, target[0]) or nll_loss2d's [N, C, H, W]
 * (inner H*W, target [N, H, W]). Each of the batch*inner samples b (flat over [batch, inner])
 * picks its class t = target[b] from the classes dim; with w_t = weight[t] (1 without weights)
 * and x[b, t] that score, for every b with t != ignore_index:
 *   per-sample (reduction none, batched input):  out[b] = -w_t * x[b, t]; ignored rows give 0;
 *                                                total_weight = 0
 *   otherwise:  out = sum_b -w_t * x[b, t]  (divided by total_weight for reduction mean)
 *               total_weight = sum_b w_t    (the count of rows not ignored without weights)
 *   an empty batch gives out = NaN (mean) or 0, total_weight = 0.
 * Backward (gx has x's shape, zero except at each non-ignored (b, t)):
 *   per-sample:  gx[b, t] = -w_t * gy[b]
 *   otherwise:   gx[b, t] = w_t * -(gy / total_weight)  (mean)  or  w_t * -gy  (sum, none)
 * A target outside [0, classes) that is not ignore_index makes the kernels stop and return its
 * sample b (outputs are then unspecified); they return -1 on success. Sums accumulate in
 * double. */
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
  int64_t classes;         /* the classes dim: 1 of a 2-D or 4-D input, 0 of a 1-D one */
  int64_t inner;           /* values per (row, class): H*W of a 4-D input, else 1 */
  int64_t ignore_index;
  eg_loss_reduction reduction;
  bool batched;            /* the input is 2-D or 4-D (reduction none then gives one loss per
                              sample) */
} eg_nll_params;

/* out has batch*inner elements when per-sample, else 1; total_weight has 1. weight may be
 * NULL. */
int64_t eg_nll_loss_f32(const eg_nll_params *p, const float *x, const int64_t *target,
                        const float *weight, float *out, float *total_weight);

/* gy has batch*inner elements when per-sample, else 1; total_weight is read only for mean. */
int64_t eg_nll_loss_backward_f32(const eg_nll_params *p, const float *gy, const int64_t *target,
                                 const float *weight, const float *total_weight, float *gx);

#endif
