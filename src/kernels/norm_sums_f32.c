/* norm_sums_f32.c — the reductions of the normalisation kernels (contracts in
 * norm_sums_f32.h). */
#include "kernels/norm_sums_f32.h"
#include "util/simd.h"

EG_SIMD_CLONES
double eg_norm_sum_f32(const float *x, int64_t len) {
  const int64_t q = len / 4;
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (int64_t i = 0; i < q; i++) {
    s0 += x[i];
    s1 += x[q + i];
    s2 += x[2 * q + i];
    s3 += x[3 * q + i];
  }
  for (int64_t i = 4 * q; i < len; i++) s0 += x[i];
  return (s0 + s1) + (s2 + s3);
}

EG_SIMD_CLONES
double eg_norm_sumsq_centred_f32(const float *x, int64_t len, double mean) {
  const int64_t q = len / 4;
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (int64_t i = 0; i < q; i++) {
    double d0 = (double)x[i] - mean, d1 = (double)x[q + i] - mean;
    double d2 = (double)x[2 * q + i] - mean, d3 = (double)x[3 * q + i] - mean;
    s0 += d0 * d0;
    s1 += d1 * d1;
    s2 += d2 * d2;
    s3 += d3 * d3;
  }
  for (int64_t i = 4 * q; i < len; i++) s0 += ((double)x[i] - mean) * ((double)x[i] - mean);
  return (s0 + s1) + (s2 + s3);
}
