/* group_norm_nchw_f32 — portable CPU kernels for aten.native_group_norm and
 * aten.native_group_norm_backward, channels-first, fp32.
 *
 * The input is viewed as x[n, c, hw] (ATen passes N, C and HxW explicitly; only the element
 * count has to agree with the tensor). Channels are split into `groups` groups of d = c/groups
 * consecutive channels; statistics are per (sample, group), over the m = d*hw values of the
 * group. Semantics are ATen's (PyTorch 1.13):
 *   mean = sum(x)/m, var = sum((x - mean)^2)/m (biased), rstd = 1/sqrt(var + eps),
 *   y[b, ch, :] = (x - mean[b, g]) * rstd[b, g] * weight[ch] + bias[ch]      (g = ch / d)
 * with mean and rstd returned as [n, groups]. A NULL weight means 1, a NULL bias 0. Sums are
 * accumulated in double (two passes).
 *
 * Kernels know nothing about graphs, never allocate, and never write their inputs; they may use
 * OpenMP. */
#ifndef EG_KERNELS_GROUP_NORM_NCHW_F32_H
#define EG_KERNELS_GROUP_NORM_NCHW_F32_H

#include <stddef.h>
#include <stdint.h>

typedef struct eg_group_norm_params {
  int64_t n, c, hw;   /* x viewed as [n, c, hw] */
  int64_t groups;     /* >= 1, divides c */
  double eps;         /* added to the variance */
} eg_group_norm_params;

typedef struct eg_group_norm_io {
  const float *x;             /* [n, c, hw] */
  const float *weight, *bias; /* [c] or NULL */
  float *y;                   /* [n, c, hw] */
  float *mean, *rstd;         /* [n, groups] */
} eg_group_norm_io;

void eg_group_norm_nchw_f32(const eg_group_norm_params *p, const eg_group_norm_io *io);

/* The tensors of one backward call (ATen's native_group_norm_backward). */
typedef struct eg_group_norm_backward_io {
  const float *gy, *x;        /* [n, c, hw] */
  const float *mean, *rstd;   /* [n, groups], as the forward returned them */
  const float *weight;        /* [c] or NULL (1) */
  float *gx;                  /* [n, c, hw] or NULL (not wanted) */
  float *gw, *gb;             /* [c] or NULL (not wanted) */
} eg_group_norm_backward_io;

/* Bytes of scratch the backward kernel needs (two doubles per (sample, channel)). */
size_t eg_group_norm_backward_nchw_f32_scratch(const eg_group_norm_params *p);

/* With r = rstd[b, g], w = weight or 1, and per (b, ch) sg = sum(gy), sgx = sum(gy*(x - mean)):
 *   gb[ch] = sum_b sg;   gw[ch] = sum_b sgx * r;
 *   gx = r*w[ch]*gy - r/m * A - (x - mean) * r^3/m * B,
 *        A = sum_{ch in g} w[ch]*sg,  B = sum_{ch in g} w[ch]*sgx.
 * Outputs asked for are fully overwritten. `scratch` has at least the bytes above, aligned for
 * double. */
void eg_group_norm_backward_nchw_f32(const eg_group_norm_params *p,
                                     const eg_group_norm_backward_io *io, void *scratch);

#endif
