/* elementwise_dense — portable CPU kernels for ATen's pointwise arithmetic on dense C-ordered
 * buffers: binary ops with NumPy broadcasting (add, sub via a negated alpha, mul, div and its
 * trunc and floor roundings, threshold_backward), unary ops (relu, neg) and where's select.
 *
 * Every operand and the output have one dtype, the op's computation dtype (the caller converts
 * inputs of another dtype first, as ATen's TensorIterator does). Computation dtypes are float32,
 * float64, int64 and int32 (eg_elementwise_dtype_ok); integer arithmetic wraps around (two's
 * complement), as ATen's does in practice. DIV is for floating dtypes only.
 *
 * DIV_TRUNC and DIV_FLOOR are ATen's CPU kernels. Floats: trunc(a / b); floor division as
 * c10::div_floor_floating (div = (a - fmod(a, b)) / b, less 1 where the remainder's sign is not
 * b's, then floored and rounded to the nearest integer; a zero result takes the sign of a / b;
 * b == 0 gives a / b: +-inf or NaN). Integers: C's truncating division, and for floor one less
 * where the signs differ and the remainder is not 0. An integer b of 0 is a run-time error in
 * ATen (ZeroDivisionError): the caller finds it first (eg_binary_first_zero); the kernels give 0
 * there rather than trap, and the minimum integer divided by -1 wraps to itself (two's
 * complement) where the hardware would trap.
 *
 * Broadcasting is described by an eg_iter (broadcast.h) with two inputs; the inner loop is
 * specialised for the inner strides (1,1), (1,0) and (0,1), which after eg_iter_init covers
 * same-shape operands, a scalar operand and per-channel operands; anything else takes a
 * strided loop. Consecutive rows (runs of the last dim) go to the inner loop in blocks, so that
 * short rows (a per-channel operand on a 2x2 plane) cost a loop, not a call, each. Kernels
 * never allocate; big loops use OpenMP. */
#ifndef EG_KERNELS_ELEMENTWISE_DENSE_H
#define EG_KERNELS_ELEMENTWISE_DENSE_H

#include <stdbool.h>
#include <stdint.h>

#include "edgegrad.h"
#include "kernels/broadcast.h"

/* A number held in a computation dtype (the member named after the dtype is the live one). */
typedef union eg_scalar {
  float f32;
  double f64;
  int64_t i64;
  int32_t i32;
} eg_scalar;

typedef enum eg_binary_op {
  EG_BINARY_ADD,                /* a + b */
  EG_BINARY_ADD_ALPHA,          /* a + alpha * b (sub is a + (-alpha) * b) */
  EG_BINARY_MUL,                /* a * b */
  EG_BINARY_DIV,                /* a / b, floating dtypes only */
  EG_BINARY_DIV_TRUNC,          /* a / b rounded toward zero (ATen's rounding_mode='trunc') */
  EG_BINARY_DIV_FLOOR,          /* a / b rounded down (ATen's rounding_mode='floor') */
  EG_BINARY_THRESHOLD_BACKWARD, /* b <= alpha ? 0 : a  (a = grad_output, b = self) */
  EG_BINARY_COUNT
} eg_binary_op;

typedef enum eg_unary_op {
  EG_UNARY_RELU, /* x < 0 ? 0 : x  (NaN and -0.0 pass through, as ATen's clamp_min) */
  EG_UNARY_NEG,  /* -x */
  EG_UNARY_COUNT
} eg_unary_op;

/* True for the dtypes these kernels compute in. */
bool eg_elementwise_dtype_ok(eg_dtype dtype);

/* out[k] = op(a[off_0(k)], b[off_1(k)]) for every output element k, `it` having two inputs.
 * `alpha` is used by ADD_ALPHA and THRESHOLD_BACKWARD. `out` must not overlap a or b. */
void eg_binary_dense(eg_binary_op op, eg_dtype dtype, const eg_iter *it, const void *a,
                     const void *b, eg_scalar alpha, void *out);

/* The index of the first 0 among the n elements of x (dtype int64 or int32), or -1: a divisor
 * of an integer division that ATen refuses. */
int64_t eg_binary_first_zero(eg_dtype dtype, const void *x, int64_t n);

/* out[k] = cond[off_0(k)] ? a[off_1(k)] : b[off_2(k)] (aten.where.self), `it` having three
 * inputs; cond holds one byte per bool (nonzero is true). `out` must not overlap the inputs. */
void eg_where_dense_f32(const eg_iter *it, const uint8_t *cond, const float *a, const float *b,
                        float *out);

/* out[k] = op(x[k]) for k in [0, n). */
void eg_unary_dense(eg_unary_op op, eg_dtype dtype, const void *x, void *out, int64_t n);

#endif
