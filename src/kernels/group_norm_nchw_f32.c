/* group_norm_nchw_f32.c — aten.native_group_norm(_backward), channels-first, fp32.
 *
 * A (sample, group) is one contiguous run of d*hw floats, so the forward is a loop over the
 * n*groups runs (OpenMP-parallel when big enough) with three linear passes each (sum, centred
 * squares, write). The backward makes per-(sample, channel) sums into scratch, then the input
 * gradient per (sample, group) and the weight/bias gradients per channel. Reductions
 * accumulate in double; the forward's are norm_sums_f32.h's, shared with batch norm. */
#include "kernels/group_norm_nchw_f32.h"

#include <math.h>
#include <stdbool.h>

#include "kernels/norm_sums_f32.h"
#include "util/simd.h"

EG_SIMD_CLONES
void eg_group_norm_nchw_f32(const eg_group_norm_params *p, const eg_group_norm_io *io) {
  const int64_t d = p->c / p->groups, m = d * p->hw, runs = p->n * p->groups;
#pragma omp parallel for schedule(static) if (runs * m >= EG_NORM_OMP_MIN)
  for (int64_t r = 0; r < runs; r++) {
    const float *x = io->x + r * m;
    double mean = m > 0 ? eg_norm_sum_f32(x, m) / (double)m : 0.0;
    double var = m > 0 ? eg_norm_sumsq_centred_f32(x, m, mean) / (double)m : NAN;
    double rstd = 1.0 / sqrt(var + p->eps);
    io->mean[r] = (float)mean;
    io->rstd[r] = (float)rstd;
    int64_t ch0 = (r % p->groups) * d;
    /* the write runs in float with the mean rounded to float and the rounding folded into the
     * shift (in double): x - mean_f is exact near the mean, so a large mean costs nothing */
    const float mf = (float)mean;
    for (int64_t k = 0; k < d; k++) {
      double scale = rstd * (io->weight ? io->weight[ch0 + k] : 1.0);
      double shift = (io->bias ? io->bias[ch0 + k] : 0.0) - (mean - (double)mf) * scale;
      const float sf = (float)scale, bf = (float)shift, *xs = x + k * p->hw;
      float *ys = io->y + r * m + k * p->hw;
#pragma omp simd
      for (int64_t i = 0; i < p->hw; i++) ys[i] = (xs[i] - mf) * sf + bf;
    }
  }
}

size_t eg_group_norm_backward_nchw_f32_scratch(const eg_group_norm_params *p) {
  return 2 * (size_t)p->n * (size_t)p->c * sizeof(double);
}

EG_SIMD_CLONES
void eg_group_norm_backward_nchw_f32(const eg_group_norm_params *p,
                                     const eg_group_norm_backward_io *io, void *scratch) {
  const int64_t d = p->c / p->groups, m = d * p->hw, nc = p->n * p->c;
  const int64_t runs = p->n * p->groups;
  const double inv_m = m > 0 ? 1.0 / (double)m : 0.0;
  const bool big = nc * p->hw >= EG_NORM_OMP_MIN;
  double *sg = scratch, *sgx = sg + nc; /* [n, c] each */

  /* 1. per (sample, channel): sum(gy) and sum(gy * (x - mean)). Run r = (sample, group) holds
   *    the d (sample, channel) pairs r*d .. r*d+d, flat. */
#pragma omp parallel for schedule(static) if (big)
  for (int64_t r = 0; r < runs; r++) {
    const double mean = io->mean[r];
    if (p->hw == 1) { /* a channel is one value: the "sums" are elementwise */
      const float *gy = io->gy + r * d, *x = io->x + r * d;
#pragma omp simd
      for (int64_t k = 0; k < d; k++) {
        sg[r * d + k] = gy[k];
        sgx[r * d + k] = (double)gy[k] * ((double)x[k] - mean);
      }
      continue;
    }
    for (int64_t bc = r * d; bc < (r + 1) * d; bc++) {
      const float *gy = io->gy + bc * p->hw, *x = io->x + bc * p->hw;
      double a = 0.0, b = 0.0;
#pragma omp simd reduction(+ : a, b)
      for (int64_t i = 0; i < p->hw; i++) {
        a += gy[i];
        b += (double)gy[i] * ((double)x[i] - mean);
      }
      sg[bc] = a;
      sgx[bc] = b;
    }
  }

  /* 2. input gradient per (sample, group) */
  if (io->gx) {
#pragma omp parallel for schedule(static) if (big)
    for (int64_t r = 0; r < runs; r++) {
      int64_t ch0 = (r % p->groups) * d, bc0 = r * d; /* (sample, ch0) */
      double mean = io->mean[r], rstd = io->rstd[r], a = 0.0, b = 0.0;
      for (int64_t k = 0; k < d; k++) {
        double w = io->weight ? io->weight[ch0 + k] : 1.0;
        a += w * sg[bc0 + k];
        b += w * sgx[bc0 + k];
      }
      double kx = -rstd * rstd * rstd * b * inv_m, k0 = -rstd * a * inv_m;
      /* float arithmetic, the mean's rounding folded into k0 (see the forward) */
      const float mf = (float)mean, kxf = (float)kx;
      const float k0f = (float)(k0 - (mean - (double)mf) * kx);
      if (p->hw == 1) { /* one value per channel: a flat loop over the group */
        const float *gy = io->gy + bc0, *x = io->x + bc0, *w = io->weight ? io->weight + ch0 : NULL;
        const float rf = (float)rstd;
        float *gx = io->gx + bc0;
#pragma omp simd
        for (int64_t k = 0; k < d; k++)
          gx[k] = gy[k] * (w ? w[k] * rf : rf) + (x[k] - mf) * kxf + k0f;
        continue;
      }
      for (int64_t k = 0; k < d; k++) {
        const float kg = (float)(rstd * (io->weight ? io->weight[ch0 + k] : 1.0));
        int64_t off = (bc0 + k) * p->hw;
        const float *gy = io->gy + off, *x = io->x + off;
        float *gx = io->gx + off;
#pragma omp simd
        for (int64_t i = 0; i < p->hw; i++) gx[i] = gy[i] * kg + (x[i] - mf) * kxf + k0f;
      }
    }
  }

  /* 3. weight and bias gradients per channel: sums over the batch, row by row into row 0 of
   *    the scratch (the per-sample sums are not needed any more) */
  if (!io->gw && !io->gb) return;
  for (int64_t r = 0; r < runs; r++) { /* channels ch0 .. ch0+d of sample r / groups */
    const int64_t ch0 = (r % p->groups) * d, bc0 = r * d;
    const double rstd = io->rstd[r];
    const bool first = r < p->groups;
    for (int64_t k = 0; k < d; k++) {
      double w = sgx[bc0 + k] * rstd;
      sg[ch0 + k] = first ? sg[bc0 + k] : sg[ch0 + k] + sg[bc0 + k];
      sgx[ch0 + k] = first ? w : sgx[ch0 + k] + w;
    }
  }
  for (int64_t ch = 0; ch < p->c; ch++) {
    if (io->gw) io->gw[ch] = p->n > 0 ? (float)sgx[ch] : 0.0f;
    if (io->gb) io->gb[ch] = p->n > 0 ? (float)sg[ch] : 0.0f;
  }
}
