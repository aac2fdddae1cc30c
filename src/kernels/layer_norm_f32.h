/* layer_norm_f32 — portable CPU kernels for aten.native_layer_norm and
 * aten.native_layer_norm_backward, fp32, any dense C-ordered tensor.
 *
 * The input is viewed as x[rows, cols]: `cols` is the product of the normalized_shape (the last
 * k dims), `rows` the product of the dims before them. Statistics are per row. Semantics are
 * ATen's:
 *   mean = sum(x)/cols, var = sum((x - mean)^2)/cols (biased), rstd = 1/sqrt(var + eps),
 *   y[r, j] = (x[r, j] - mean[r]) * rstd[r] * weight[j] + bias[j]
 * with mean and rstd one value per row (a row of no values gives mean 0 and rstd NaN, as
 * ATen's). A NULL weight means 1, a NULL bias 0. Sums are accumulated in double (two passes:
 * mean, then centred squares; norm_sums_f32.h's), so results do not depend on the magnitude of
 * the mean.
 *
 * Kernels know nothing about graphs, never allocate, and never write their inputs; they may use
 * OpenMP (parallel over rows, or over blocks of columns for the weight and bias gradients). */
#ifndef EG_KERNELS_LAYER_NORM_F32_H
#define EG_KERNELS_LAYER_NORM_F32_H

#include <stdint.h>

typedef struct eg_layer_norm_params {
  int64_t rows, cols; /* x viewed as [rows, cols] */
  double eps;         /* added to the variance */
} eg_layer_norm_params;

typedef struct eg_layer_norm_io {
  const float *x;             /* [rows, cols] */
  const float *weight, *bias; /* [cols] or NULL */
  float *y;                   /* [rows, cols] */
  float *mean, *rstd;         /* [rows] */
} eg_layer_norm_io;

void eg_layer_norm_f32(const eg_layer_norm_params *p, const eg_layer_norm_io *io);

/* The tensors of one backward call (ATen's native_layer_norm_backward). */
typedef struct eg_layer_norm_backward_io {
  const float *gy, *x;      /* [rows, cols] */
  const float *mean, *rstd; /* [rows], as the forward returned them */
  const float *weight;      /* [cols] or NULL (1) */
  float *gx;                /* [rows, cols] or NULL (not wanted) */
  float *gw, *gb;           /* [cols] or NULL (not wanted) */
} eg_layer_norm_backward_io;

/* With xhat = (x - mean[r]) * rstd[r], w = weight or 1, per row r:
 *   gx[r, j] = rstd[r] * (w[j]*gy[r, j] - A/cols - xhat[r, j] * B/cols),
 *              A = sum_j w[j]*gy[r, j],  B = sum_j w[j]*gy[r, j]*xhat[r, j];
 *   gw[j] = sum_r gy[r, j] * xhat[r, j];   gb[j] = sum_r gy[r, j].
 * Outputs asked for are fully overwritten (0 for gw/gb when rows is 0). With one column and the
 * forward's mean (then x - mean is 0), gx and gw are exactly 0 for finite inputs, as in exact
 * arithmetic, not the rounding of two terms of size rstd*|w*gy| that cancel. */
void eg_layer_norm_backward_f32(const eg_layer_norm_params *p,
                                const eg_layer_norm_backward_io *io);

#endif
