/* batch_norm_nchw_f32 — portable CPU kernels for aten.native_batch_norm and
 * aten.native_batch_norm_backward, channels-first (NC*), fp32.
 *
 * The input is viewed as x[n, c, hw]: `n` is dim 0, `c` dim 1 and `hw` the product of every
 * later dim (1 for a rank-2 [N, C] input). Statistics are per channel, over the n*hw values of
 * that channel (m = n*hw below). Semantics are ATen's (PyTorch 1.13):
 *   training:  mean = sum(x)/m, var = sum((x - mean)^2)/m (biased), invstd = 1/sqrt(var + eps),
 *              y = (x - mean) * invstd * weight + bias;
 *              running statistics, where wanted, become
 *              (1 - momentum) * running + momentum * batch_stat, with the UNBIASED variance
 *              sum((x - mean)^2)/(m - 1) for running_var (NaN when m == 1, as in ATen).
 *   eval:      y = (x - running_mean) / sqrt(running_var + eps) * weight + bias.
 * A NULL weight means 1, a NULL bias 0. Sums are accumulated in double (two passes: mean, then
 * centred squares), so results do not depend on the magnitude of the mean.
 *
 * Kernels know nothing about graphs, never allocate, and never write their inputs; they may use
 * OpenMP (parallel over channels). */
#ifndef EG_KERNELS_BATCH_NORM_NCHW_F32_H
#define EG_KERNELS_BATCH_NORM_NCHW_F32_H

#include <stdbool.h>
#include <stdint.h>

typedef struct eg_batch_norm_params {
  int64_t n, c, hw;   /* x viewed as [n, c, hw] */
  bool training;      /* batch statistics (true) or running statistics (false) */
  double momentum;    /* running-statistics update factor (training only) */
  double eps;         /* added to the variance */
} eg_batch_norm_params;

/* The tensors of one forward call. Inputs marked "or NULL" are optional; outputs left NULL are
 * not computed. */
typedef struct eg_batch_norm_io {
  const float *x;                            /* [n, c, hw] */
  const float *weight, *bias;                /* [c] or NULL */
  const float *running_mean, *running_var;   /* [c]; required in eval, read in training only
                                                to compute new_running_* */
  float *y;                                  /* [n, c, hw] */
  float *save_mean, *save_invstd;            /* [c], training only, or NULL */
  float *new_running_mean, *new_running_var; /* [c], training only, or NULL; each needs the
                                                matching running_* input */
  const float *add;                          /* [n, c, hw] or NULL: added to y (in float, as
                                                add.Tensor adds) before any clamp — a residual
                                                connection fused into the write pass */
  bool clamp;                                /* y is then clamped as hardtanh clamps
                                                (activation_f32.h): v = y < lo ? lo : y,
                                                y = hi < v ? hi : v — a ReLU (0, +inf) or ReLU6
                                                (0, 6) applied in the write pass, bit for bit
                                                the activation run on y */
  float clamp_lo, clamp_hi;
} eg_batch_norm_io;

void eg_batch_norm_nchw_f32(const eg_batch_norm_params *p, const eg_batch_norm_io *io);

/* The tensors of one backward call (ATen's native_batch_norm_backward). `momentum` is unused. */
typedef struct eg_batch_norm_backward_io {
  const float *gy, *x;                     /* [n, c, hw] */
  const float *weight;                     /* [c] or NULL (1) */
  const float *running_mean, *running_var; /* [c]: the statistics used in eval */
  const float *save_mean, *save_invstd;    /* [c]: the statistics used in training */
  float *gx;                               /* [n, c, hw] or NULL (not wanted) */
  float *gw, *gb;                          /* [c] or NULL (not wanted) */
  const float *mask_x;                     /* [n, c, hw] or NULL: each gy element is read as
                                              (mask_x <= mask_lo || mask_x >= mask_hi) ? 0 : gy,
                                              the gradient threshold_backward (mask_hi NaN: no
                                              upper bound) or hardtanh_backward would have
                                              written, in every pass, bit for bit */
  float mask_lo, mask_hi;
} eg_batch_norm_backward_io;

/* Per channel, with (mean, invstd) = (save_mean, save_invstd) in training and
 * (running_mean, 1/sqrt(running_var + eps)) in eval, w = weight or 1:
 *   gb = sum(gy);  gw = sum(gy * (x - mean)) * invstd;
 *   gx = (gy - (x - mean) * invstd^2 * sum(gy*(x - mean))/m - sum(gy)/m) * invstd * w  (training)
 *   gx = gy * invstd * w                                                              (eval)
 * Outputs asked for are fully overwritten. */
void eg_batch_norm_backward_nchw_f32(const eg_batch_norm_params *p,
                                     const eg_batch_norm_backward_io *io);

#endif
