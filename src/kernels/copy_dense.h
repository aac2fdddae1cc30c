/* copy_dense — portable CPU kernels that move or convert whole tensors into a dense C-ordered
 * output: strided gathers (permute, t, expand), dtype conversion (_to_copy) and fills
 * (full, ones_like, zeros_like).
 *
 * Kernels know nothing about graphs and never allocate; big loops use OpenMP. */
#ifndef EG_KERNELS_COPY_DENSE_H
#define EG_KERNELS_COPY_DENSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgegrad.h"
#include "kernels/broadcast.h"

/* out[k] = in[off_0(k)] for every output element k of `it` (one input, any strides, 0 for a
 * broadcast dim). Elements are `esize` bytes: 1, 2, 4 or 8. When the input's innermost stride
 * is neither 0 nor 1 (a transpose), the last two dims are copied in cache-sized tiles. */
void eg_copy_strided_dense(const eg_iter *it, size_t esize, const void *in, void *out);

/* True when eg_cast_dense converts `from` to `to`: any pair among float32, float64, int64,
 * int32, int8, uint8 and bool, and any dtype to itself. */
bool eg_cast_supported(eg_dtype from, eg_dtype to);

/* out[i] = (to)in[i] for i in [0, n), by C's conversions, with these rules where C leaves it
 * undefined or ATen differs: to bool is `x != 0` (NaN is true); a bool source reads any
 * non-zero byte as 1; integer to a narrower integer wraps (two's complement); a float out of
 * the target integer's range (or NaN) gives the int32/int64 minimum, as x86's conversion
 * does (ATen leaves this undefined), and int8/uint8 take the low byte of the int32 result. */
void eg_cast_dense(const void *in, eg_dtype from, void *out, eg_dtype to, int64_t n);

/* Fills n elements of `esize` bytes (1, 2, 4 or 8) with the element at `value`. */
void eg_fill_dense(void *out, size_t esize, const void *value, int64_t n);

#endif
