/* layer_norm_f32.c — aten.native_layer_norm(_backward), fp32 (contracts in layer_norm_f32.h).
 *
 * A row is `cols` contiguous floats. The forward makes three linear passes per row (sum,
 * centred squares, write), rows in parallel. The backward's input gradient is two passes per
 * row (the sums A and B, then the write), rows in parallel; the weight and bias gradients are
 * column sums, made by blocks of EG_LN_BLOCK adjacent columns swept row by row (parallel over
 * blocks), so every read is contiguous and no thread shares an accumulator. Reductions
 * accumulate in double; the write passes run in float with the mean rounded to float and its
 * rounding folded into the shift (computed in double), as the batch and group norm kernels do,
 * so x - mean_f is exact near the mean and a large mean costs no precision. */
#include "kernels/layer_norm_f32.h"

#include <math.h>
#include <stdbool.h>

#include "kernels/norm_sums_f32.h"
#include "util/simd.h"

/* Columns per block of the weight/bias gradient sweep. */
enum { EG_LN_BLOCK = 64 };

EG_SIMD_CLONES
void eg_layer_norm_f32(const eg_layer_norm_params *p, const eg_layer_norm_io *io) {
  const int64_t m = p->cols;
#pragma omp parallel for schedule(static) if (p->rows * m >= EG_NORM_OMP_MIN)
  for (int64_t r = 0; r < p->rows; r++) {
    const float *x = io->x + r * m;
    float *y = io->y + r * m;
    double mean = m > 0 ? eg_norm_sum_f32(x, m) / (double)m : 0.0;
    double var = m > 0 ? eg_norm_sumsq_centred_f32(x, m, mean) / (double)m : NAN;
    double rstd = 1.0 / sqrt(var + p->eps);
    io->mean[r] = (float)mean;
    io->rstd[r] = (float)rstd;
    const float mf = (float)mean, rf = (float)rstd;
    /* (x - mean_f) * rstd + (mean_f - mean) * rstd, then the affine map per column */
    const float fold = (float)(((double)mf - mean) * rstd);
    const float *w = io->weight, *b = io->bias;
    if (w && b) {
#pragma omp simd
      for (int64_t j = 0; j < m; j++) y[j] = ((x[j] - mf) * rf + fold) * w[j] + b[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < m; j++)
        y[j] = ((x[j] - mf) * rf + fold) * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f);
    }
  }
}

/* gx of row r (see the header): A and B in double, then the write in float.
 *
 * Both passes use the same float products wg[j] = gy[j] * w[j]: A sums exactly the values the
 * write scales, so rstd*wg[j] and k0 = -rstd*A/cols cancel as far as they cancel exactly. With
 * one column (x - mean is 0, the exact gradient 0) the write is rf*wg - rf*wg, bit for bit 0:
 * rstd*A is a product of two floats, exact in double, and rounds to float as wg*rf does. A sum
 * of exact double products gy*w instead left the rounding of wg*rf behind, amplified by rstd
 * (1/sqrt(eps) ~ 316 for one column). */
static void input_grad_row(const eg_layer_norm_params *p, const eg_layer_norm_backward_io *io,
                           int64_t r) {
  const int64_t m = p->cols;
  const float *gy = io->gy + r * m, *x = io->x + r * m, *w = io->weight;
  float *gx = io->gx + r * m;
  const double mean = io->mean[r], rstd = io->rstd[r];
  double a = 0.0, b = 0.0;
#pragma omp simd reduction(+ : a, b)
  for (int64_t j = 0; j < m; j++) {
    const double wg = w ? gy[j] * w[j] : gy[j];
    a += wg;
    b += wg * ((double)x[j] - mean);
  }
  /* gx = rstd*w*gy + (x - mean) * kx + k0, kx = -rstd^3 * b/m, k0 = -rstd * a/m (b is the sum
   * of w*gy*(x - mean), so B = b * rstd) */
  const double inv_m = m > 0 ? 1.0 / (double)m : 0.0;
  const double kx = -rstd * rstd * rstd * b * inv_m, k0 = -rstd * a * inv_m;
  const float mf = (float)mean, rf = (float)rstd, kxf = (float)kx;
  const float k0f = (float)(k0 - (mean - (double)mf) * kx);
#pragma omp simd
  for (int64_t j = 0; j < m; j++) {
    const float wg = w ? gy[j] * w[j] : gy[j];
    gx[j] = wg * rf + (x[j] - mf) * kxf + k0f;
  }
}

/* gw and gb of columns [c0, c0 + nb): sums over every row in double. */
static void param_grad_block(const eg_layer_norm_params *p, const eg_layer_norm_backward_io *io,
                             int64_t c0, int64_t nb) {
  double sw[EG_LN_BLOCK] = {0}, sb[EG_LN_BLOCK] = {0};
  for (int64_t r = 0; r < p->rows; r++) {
    const float *gy = io->gy + r * p->cols + c0, *x = io->x + r * p->cols + c0;
    const double mean = io->mean[r], rstd = io->rstd[r];
#pragma omp simd
    for (int64_t k = 0; k < nb; k++) {
      sb[k] += gy[k];
      sw[k] += (double)gy[k] * (((double)x[k] - mean) * rstd);
    }
  }
  for (int64_t k = 0; k < nb; k++) {
    if (io->gw) io->gw[c0 + k] = (float)sw[k];
    if (io->gb) io->gb[c0 + k] = (float)sb[k];
  }
}

EG_SIMD_CLONES
void eg_layer_norm_backward_f32(const eg_layer_norm_params *p,
                                const eg_layer_norm_backward_io *io) {
  const bool big = p->rows * p->cols >= EG_NORM_OMP_MIN;
  if (io->gx) {
#pragma omp parallel for schedule(static) if (big)
    for (int64_t r = 0; r < p->rows; r++) input_grad_row(p, io, r);
  }
  if (!io->gw && !io->gb) return;
  const int64_t blocks = (p->cols + EG_LN_BLOCK - 1) / EG_LN_BLOCK;
#pragma omp parallel for schedule(static) if (big)
  for (int64_t i = 0; i < blocks; i++) {
    const int64_t c0 = i * EG_LN_BLOCK;
    param_grad_block(p, io, c0, p->cols - c0 < EG_LN_BLOCK ? p->cols - c0 : EG_LN_BLOCK);
  }
}
