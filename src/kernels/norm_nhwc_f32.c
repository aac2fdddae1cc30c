/* norm_nhwc_f32.c — Batchnorm, and group/instance normalization on [batch, spatial, c]
 * (contract in the header). Per batch image: pass 1 sums each channel over the spatial
 * positions (rows of c, vectorised), giving per-group means; pass 2 sums squared deviations;
 * pass 3 writes y with one scale/shift per channel. Scratch: 2*c doubles (sums) + 2*c floats
 * (per-channel scale and shift). */
#include "kernels/norm_nhwc_f32.h"

#include <math.h>
#include <string.h>

#include "kernels/parallel_nhwc_f32.h"
#include "util/parallel.h"
#include "util/simd.h"

EG_SIMD_CLONES
void eg_batch_norm_nhwc_f32(int64_t rows, int64_t c, const float *x, const float *weights,
                           const float *bias, float *y) {
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(rows * c), for (int64_t r = 0; r < rows; r++) {
    for (int64_t e = 0; e < c; e++)
      y[r * c + e] = x[r * c + e] * weights[e] + (bias ? bias[e] : 0.0f);
  });
}

size_t eg_norm_nhwc_f32_scratch(const eg_norm_nhwc_params *p) {
  return (size_t)p->c * (2 * sizeof(double) + 2 * sizeof(float));
}

/* acc[e] = sum over rows of f(x[r, e]) where f is x, (x - center[e])^2 or x^2. */
typedef enum sum_kind { SUM_X, SUM_DEV2, SUM_X2 } sum_kind;

static void channel_sums(const float *x, int64_t rows, int64_t c, sum_kind k,
                         const double *center, double *acc) {
  memset(acc, 0, sizeof(double) * (size_t)c);
  for (int64_t r = 0; r < rows; r++) {
    const float *row = x + r * c;
    for (int64_t e = 0; e < c; e++) {
      const double v = row[e], d = k == SUM_DEV2 ? v - center[e] : v;
      acc[e] += k == SUM_X ? v : d * d;
    }
  }
}

/* Replaces each channel's sum by its group's mean (sum over the group / count). */
static void group_means(double *acc, int64_t c, int64_t groups, double count) {
  const int64_t cg = c / groups;
  for (int64_t g = 0; g < groups; g++) {
    double s = 0.0;
    for (int64_t e = g * cg; e < (g + 1) * cg; e++) s += acc[e];
    for (int64_t e = g * cg; e < (g + 1) * cg; e++) acc[e] = s / (count * (double)cg);
  }
}

/* y = x * scale[e] + shift[e], rows of c. */
static void apply(const float *x, int64_t rows, int64_t c, const float *scale,
                  const float *shift, float *y) {
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(rows * c), for (int64_t r = 0; r < rows; r++) {
    for (int64_t e = 0; e < c; e++) y[r * c + e] = x[r * c + e] * scale[e] + shift[e];
  });
}

/* Per-channel scale/shift from per-channel mean and second moment (of deviations, or of x). */
static void scale_shift(const eg_norm_nhwc_params *p, const double *mean, const double *m2,
                        const float *gamma, const float *beta, float *scale, float *shift) {
  for (int64_t e = 0; e < p->c; e++) {
    const double inv = p->normalize_variance ? 1.0 / sqrt(m2[e] + (double)p->epsilon) : 1.0;
    const double g = gamma ? gamma[e] : 1.0, b = beta ? beta[e] : 0.0;
    const double center = p->rms ? 0.0 : mean[e];
    scale[e] = (float)(inv * g);
    shift[e] = (float)(b - center * inv * g);
  }
}

static void norm_image(const eg_norm_nhwc_params *p, const float *x, const float *gamma,
                       const float *beta, float *y, void *scratch) {
  double *mean = scratch, *m2 = mean + p->c;
  float *scale = (float *)(m2 + p->c), *shift = scale + p->c;
  const int64_t s = p->spatial, c = p->c;
  if (p->rms) {
    channel_sums(x, s, c, SUM_X2, NULL, m2);
    group_means(m2, c, p->groups, (double)s);
  } else {
    channel_sums(x, s, c, SUM_X, NULL, mean);
    group_means(mean, c, p->groups, (double)s);
    channel_sums(x, s, c, SUM_DEV2, mean, m2);
    group_means(m2, c, p->groups, (double)s);
  }
  scale_shift(p, mean, m2, gamma, beta, scale, shift);
  apply(x, s, c, scale, shift, y);
}

/* ACROSS_CHANNEL: statistics of each row of c. */
static void norm_rows(const eg_norm_nhwc_params *p, const float *x, const float *gamma,
                      const float *beta, float *y) {
  const int64_t rows = p->batch * p->spatial, c = p->c;
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(rows * c), for (int64_t r = 0; r < rows; r++) {
    const float *row = x + r * c;
    double mean = 0.0, m2 = 0.0;
    if (!p->rms) {
      for (int64_t e = 0; e < c; e++) mean += row[e];
      mean /= (double)c;
    }
    for (int64_t e = 0; e < c; e++) m2 += (row[e] - mean) * (row[e] - mean);
    m2 /= (double)c;
    const double inv = p->normalize_variance ? 1.0 / sqrt(m2 + (double)p->epsilon) : 1.0;
    for (int64_t e = 0; e < c; e++)
      y[r * c + e] = (float)((row[e] - mean) * inv * (gamma ? gamma[e] : 1.0f) +
                             (beta ? beta[e] : 0.0f));
  });
}

EG_SIMD_CLONES
void eg_norm_nhwc_f32(const eg_norm_nhwc_params *p, const float *x, const float *gamma,
                      const float *beta, float *y, void *scratch) {
  if (p->across_channel) {
    norm_rows(p, x, gamma, beta, y);
    return;
  }
  const int64_t image = p->spatial * p->c;
  for (int64_t b = 0; b < p->batch; b++)
    norm_image(p, x + b * image, gamma, beta, y + b * image, scratch);
}
