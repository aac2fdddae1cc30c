/* checked.c — see checked.h. */
#include "util/checked.h"

bool eg_mul_overflow_i64(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) return false;
  if (a != 0 && b > INT64_MAX / a) return false;
  *out = a * b;
  return true;
}

int64_t eg_shape_numel(const int64_t *shape, int rank, int64_t cap) {
  int64_t nonzero = 1;
  bool empty = false;
  for (int d = 0; d < rank; d++) {
    if (shape[d] < 0) return -1;
    if (shape[d] == 0) {
      empty = true;
      continue;
    }
    if (!eg_mul_overflow_i64(nonzero, shape[d], &nonzero) || nonzero > cap) return -1;
  }
  return empty ? 0 : nonzero;
}

bool eg_count_bytes(int64_t numel, size_t itemsize, size_t *out) {
  if (numel < 0) return false;
  if (itemsize != 0 && (uint64_t)numel > SIZE_MAX / itemsize) return false;
  *out = (size_t)numel * itemsize;
  return true;
}
