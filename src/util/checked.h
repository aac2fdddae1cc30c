/* checked.h — element and byte counts that cannot wrap.
 *
 * Every reader (graph JSON, .npy, safetensors, .egp) and every lowering that turns a shape
 * into a count goes through these, so one rule holds everywhere: a shape is acceptable when
 * each dimension is in [0, EG_MAX_NUMEL] and the product of its non-zero dimensions is at most
 * EG_MAX_NUMEL. Ignoring zeros matters: [2^62, 4, 0] has no elements, but the strides a kernel
 * derives from it (2^62 * 4) would still overflow. */
#ifndef EG_UTIL_CHECKED_H
#define EG_UTIL_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest element count (and any partial product of dimensions) edgegrad accepts. */
#define EG_MAX_NUMEL ((int64_t)1 << 40)

/* *out = a * b for a, b >= 0; false (and *out untouched) when the product exceeds INT64_MAX. */
bool eg_mul_overflow_i64(int64_t a, int64_t b, int64_t *out);

/* The element count of `shape` (rank dims), or -1 when a dimension is negative or the product
 * of the non-zero dimensions exceeds `cap`. A shape with a zero dimension returns 0 only when
 * the rest passes the same rule. */
int64_t eg_shape_numel(const int64_t *shape, int rank, int64_t cap);

/* *out = numel * itemsize as a size_t; false when it does not fit. */
bool eg_count_bytes(int64_t numel, size_t itemsize, size_t *out);

#endif
