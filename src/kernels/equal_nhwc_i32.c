/* equal_nhwc_i32.c — QNN ElementWiseEqual on INT_32 (contract in equal_nhwc_i32.h). */
#include "kernels/equal_nhwc_i32.h"

void eg_equal_nhwc_i32(const eg_ew_shape *s, const int32_t *a, const int32_t *b, uint8_t *out) {
  const int r = s->rank;
  int64_t sa[EG_EW_MAX_RANK], sb[EG_EW_MAX_RANK], idx[EG_EW_MAX_RANK] = {0}, n = 1;
  int64_t ka = 1, kb = 1; /* strides of a and b; 0 along a broadcast dim */
  for (int d = r - 1; d >= 0; d--) {
    sa[d] = s->in[0][d] == 1 ? 0 : ka;
    sb[d] = s->in[1][d] == 1 ? 0 : kb;
    ka *= s->in[0][d];
    kb *= s->in[1][d];
    n *= s->out[d];
  }
  int64_t ia = 0, ib = 0;
  for (int64_t e = 0; e < n; e++) {
    out[e] = a[ia] == b[ib];
    for (int d = r - 1; d >= 0; d--) { /* odometer step over the output index */
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < s->out[d]) break;
      ia -= sa[d] * idx[d];
      ib -= sb[d] * idx[d];
      idx[d] = 0;
    }
  }
}
