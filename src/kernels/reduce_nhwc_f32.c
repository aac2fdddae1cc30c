/* reduce_nhwc_f32.c — sum/mean/max over a dim mask (contract in the header). */
#include "kernels/reduce_nhwc_f32.h"

#include <math.h>
#include <string.h>

#include "util/simd.h"

/* Merged runs: dims[i] with reduced[i]; adjacent runs alternate. */
typedef struct runs {
  int n;
  int64_t dims[EG_REDUCE_MAX_RANK];
  bool reduced[EG_REDUCE_MAX_RANK];
} runs;

static runs runs_of(const eg_reduce_nhwc_params *p) {
  runs r = {0};
  for (int i = 0; i < p->rank; i++) {
    const bool red = (p->mask >> i) & 1u;
    if (p->dims[i] == 1) continue;
    if (r.n > 0 && r.reduced[r.n - 1] == red) {
      r.dims[r.n - 1] *= p->dims[i];
      continue;
    }
    r.dims[r.n] = p->dims[i];
    r.reduced[r.n++] = red;
  }
  return r;
}

static int64_t out_numel(const runs *r) {
  int64_t n = 1;
  for (int i = 0; i < r->n; i++)
    if (!r->reduced[i]) n *= r->dims[i];
  return n;
}

size_t eg_reduce_nhwc_f32_scratch(const eg_reduce_nhwc_params *p) {
  const runs r = runs_of(p);
  return sizeof(double) * (size_t)out_numel(&r);
}

/* Adds the innermost run of x (len elements at x) into acc: a kept run adds element-wise, a
 * reduced run adds its sum into acc[0]. */
static inline void add_run(bool reduced, int64_t len, const float *x, double *acc) {
  if (reduced) {
    double s = 0.0;
    for (int64_t e = 0; e < len; e++) s += (double)x[e];
    acc[0] += s;
    return;
  }
#pragma omp simd
  for (int64_t e = 0; e < len; e++) acc[e] += (double)x[e];
}

/* As add_run, keeping the largest element instead of the sum; a NaN wins (NaN > m is false,
 * so it is taken by its own test). */
static inline void max_run(bool reduced, int64_t len, const float *x, double *acc) {
  for (int64_t e = 0; e < len; e++) {
    double *a = reduced ? &acc[0] : &acc[e];
    const double v = (double)x[e];
    if (v > *a || v != v) *a = v;
  }
}

EG_SIMD_CLONES
void eg_reduce_nhwc_f32(const eg_reduce_nhwc_params *p, const float *x, float *y, void *scratch) {
  const runs r = runs_of(p);
  const int64_t n_out = out_numel(&r);
  double *acc = scratch;
  memset(acc, 0, sizeof(double) * (size_t)n_out);
  if (p->max)
    for (int64_t i = 0; i < n_out; i++) acc[i] = -INFINITY;
  int64_t n_in = 1;
  for (int i = 0; i < r.n; i++) n_in *= r.dims[i];
  if (r.n == 0) { /* every dim is 1 */
    y[0] = x[0];
    return;
  }
  const int last = r.n - 1;
  const int64_t len = r.dims[last], rows = n_in / len;
  int64_t idx[EG_REDUCE_MAX_RANK] = {0}, out_off = 0;
  int64_t out_stride[EG_REDUCE_MAX_RANK];
  int64_t s = 1;
  for (int i = last; i >= 0; i--) { /* strides of kept runs in y */
    out_stride[i] = r.reduced[i] ? 0 : s;
    if (!r.reduced[i]) s *= r.dims[i];
  }
  for (int64_t row = 0; row < rows; row++) {
    if (p->max) max_run(r.reduced[last], len, x + row * len, acc + out_off);
    else add_run(r.reduced[last], len, x + row * len, acc + out_off);
    for (int i = last - 1; i >= 0; i--) { /* odometer over the outer runs */
      out_off += out_stride[i];
      if (++idx[i] < r.dims[i]) break;
      out_off -= out_stride[i] * r.dims[i];
      idx[i] = 0;
    }
  }
  const double scale = p->mean && !p->max ? (double)n_out / (double)n_in : 1.0;
  for (int64_t i = 0; i < n_out; i++) y[i] = (float)(acc[i] * scale);
}
