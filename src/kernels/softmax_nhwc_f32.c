/* softmax_nhwc_f32.c — log-softmax and softmax along an axis (contract in the header). One (outer, inner)
 * lane per task; lanes stride by `inner` through the axis. */
#include "kernels/softmax_nhwc_f32.h"

#include <math.h>

#include "kernels/parallel_nhwc_f32.h"
#include "util/parallel.h"

static void lane(int64_t axis, int64_t stride, float beta, const float *x, float *y) {
  float m = -INFINITY;
  for (int64_t a = 0; a < axis; a++) {
    const float v = beta * x[a * stride];
    if (v > m || v != v) m = v;
  }
  double s = 0.0;
  for (int64_t a = 0; a < axis; a++) s += exp((double)(beta * x[a * stride] - m));
  const float lse = m + (float)log(s);
  for (int64_t a = 0; a < axis; a++) y[a * stride] = beta * x[a * stride] - lse;
}

void eg_log_softmax_nhwc_f32(int64_t outer, int64_t axis, int64_t inner, float beta,
                             const float *x, float *y) {
  const int64_t lanes = outer * inner;
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(lanes * axis), for (int64_t t = 0; t < lanes; t++) {
    const int64_t o = t / inner, i = t % inner, base = o * axis * inner + i;
    lane(axis, inner, beta, x + base, y + base);
  });
}

static void softmax_lane(int64_t axis, int64_t stride, float beta, const float *x, float *y) {
  float m = -INFINITY;
  for (int64_t a = 0; a < axis; a++) {
    const float v = beta * x[a * stride];
    if (v > m || v != v) m = v;
  }
  double s = 0.0;
  for (int64_t a = 0; a < axis; a++) s += exp((double)(beta * x[a * stride] - m));
  for (int64_t a = 0; a < axis; a++)
    y[a * stride] = (float)(exp((double)(beta * x[a * stride] - m)) / s);
}

void eg_softmax_nhwc_f32(int64_t outer, int64_t axis, int64_t inner, float beta, const float *x,
                         float *y) {
  const int64_t lanes = outer * inner;
  EG_OMP_FOR_IF(eg_nhwc_omp_worth(lanes * axis), for (int64_t t = 0; t < lanes; t++) {
    const int64_t o = t / inner, i = t % inner, base = o * axis * inner + i;
    softmax_lane(axis, inner, beta, x + base, y + base);
  });
}
