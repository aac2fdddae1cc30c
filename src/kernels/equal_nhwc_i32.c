/* equal_nhwc_i32.c — QNN ElementWiseEqual on INT_32 (contract in equal_nhwc_i32.h). */
#include "kernels/equal_nhwc_i32.h"

/* Dims merged where both operands stay contiguous (or both broadcast) across them, size-1 dims
 * dropped; then one specialised loop per innermost row (both streaming, or one a scalar: the
 * max-pool backward's indices [N, oh, ow, C] against a position map [1, oh, ow, 1]). */
void eg_equal_nhwc_i32(const eg_ew_shape *s, const int32_t *a, const int32_t *b, uint8_t *out) {
  int64_t dims[EG_EW_MAX_RANK], sa[EG_EW_MAX_RANK], sb[EG_EW_MAX_RANK], idx[EG_EW_MAX_RANK];
  int64_t ka = 1, kb = 1, ca[EG_EW_MAX_RANK], cb[EG_EW_MAX_RANK];
  for (int d = s->rank - 1; d >= 0; d--) { /* strides of a and b; 0 along a broadcast dim */
    ca[d] = s->in[0][d] == 1 ? 0 : ka;
    cb[d] = s->in[1][d] == 1 ? 0 : kb;
    ka *= s->in[0][d];
    kb *= s->in[1][d];
  }
  int r = 0;
  for (int d = 0; d < s->rank; d++) {
    if (s->out[d] == 1) continue;
    if (r > 0 && sa[r - 1] == ca[d] * s->out[d] && sb[r - 1] == cb[d] * s->out[d]) {
      dims[r - 1] *= s->out[d];
      sa[r - 1] = ca[d];
      sb[r - 1] = cb[d];
      continue;
    }
    dims[r] = s->out[d];
    sa[r] = ca[d];
    sb[r] = cb[d];
    r++;
  }
  if (r == 0) {
    out[0] = a[0] == b[0];
    return;
  }
  const int64_t n = dims[r - 1], ia_in = sa[r - 1], ib_in = sb[r - 1];
  int64_t rows = 1, ia = 0, ib = 0;
  for (int d = 0; d < r - 1; d++) {
    rows *= dims[d];
    idx[d] = 0;
  }
  for (int64_t row = 0; row < rows; row++) {
    const int32_t *x = a + ia, *y = b + ib;
    uint8_t *o = out + row * n;
    if (ia_in && ib_in) {
#pragma omp simd
      for (int64_t e = 0; e < n; e++) o[e] = x[e] == y[e];
    } else if (ia_in) {
      const int32_t v = y[0];
#pragma omp simd
      for (int64_t e = 0; e < n; e++) o[e] = x[e] == v;
    } else if (ib_in) {
      const int32_t v = x[0];
#pragma omp simd
      for (int64_t e = 0; e < n; e++) o[e] = y[e] == v;
    } else {
      const uint8_t v = x[0] == y[0];
      for (int64_t e = 0; e < n; e++) o[e] = v;
    }
    for (int d = r - 2; d >= 0; d--) { /* odometer step over the rows */
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < dims[d]) break;
      ia -= sa[d] * dims[d];
      ib -= sb[d] * dims[d];
      idx[d] = 0;
    }
  }
}
