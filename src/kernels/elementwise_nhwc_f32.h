/* elementwise_nhwc_f32 — the htp executor's elementwise kernels (any layout; fp32 data, uint8
 * masks): QNN ElementWiseAdd/Subtract/Multiply/Divide/Greater/GreaterEqual/LessEqual/Select with
 * NumPy broadcasting,
 * the unary ops ElementWiseNeg, ElementWiseExp, Relu, ReluMinMax, Sigmoid, Tanh,
 * ElementWiseNeuron's HARD_SWISH and HARD_SIGMOID, and Cast.
 *
 * Broadcasting: eg_ew_shape_init right-aligns every input's dims to the output rank (leading
 * 1s) and broadcasts; a dim of 1 is read with stride 0. Dims are then merged where every
 * operand stays contiguous, and the innermost run is a specialised loop per op (both operands
 * streaming, one a scalar, ...). NaN behaves as in PyTorch: relu/clamp keep it, max-like
 * comparisons are false. The comparisons are IEEE's (false when either side is NaN, -0 == +0)
 * and write 1/0 bytes; Select reads nonzero bytes as true. Never
 * allocates. */
#ifndef EG_KERNELS_ELEMENTWISE_NHWC_F32_H
#define EG_KERNELS_ELEMENTWISE_NHWC_F32_H

#include <stdbool.h>
#include <stdint.h>

#define EG_EW_MAX_RANK 8

typedef enum eg_ew_op {
  EG_EW_ADD,
  EG_EW_SUB,
  EG_EW_MUL,
  EG_EW_DIV,
  EG_EW_GREATER,       /* in: a, b (float); out uint8 a > b */
  EG_EW_GREATER_EQUAL, /* in: a, b (float); out uint8 a >= b */
  EG_EW_LESS_EQUAL,    /* in: a, b (float); out uint8 a <= b */
  EG_EW_SELECT   /* in: cond (uint8), a, b (float); out cond ? a : b */
} eg_ew_op;

typedef struct eg_ew_shape {
  int rank, n_in;
  int64_t out[EG_EW_MAX_RANK];
  int64_t in[3][EG_EW_MAX_RANK];    /* right-aligned to `rank` */
} eg_ew_shape;

/* Broadcasts n_in (1..3) inputs of the given ranks/dims into *s. False if incompatible or a
 * rank exceeds EG_EW_MAX_RANK. */
bool eg_ew_shape_init(eg_ew_shape *s, int n_in, const int *ranks, const int64_t *const *dims);

/* out = op(in[0], in[1][, in[2]]) over s->out. */
void eg_elementwise_nhwc_f32(eg_ew_op op, const eg_ew_shape *s, const void *const *in, void *out);

typedef enum eg_unary_op {
  EG_UNARY_NEG,
  EG_UNARY_RELU,
  EG_UNARY_RELU_MIN_MAX, /* clamp to [lo, hi] */
  EG_UNARY_SIGMOID,
  EG_UNARY_TANH,
  EG_UNARY_RSQRT, /* 1 / sqrt(x), evaluated in double and rounded once */
  EG_UNARY_EXP,   /* expf(x), as ATen's CPU exp of float32 */
  EG_UNARY_LOG,   /* logf(x): -inf at 0, NaN below */
  EG_UNARY_GELU,  /* x * 0.5 * (1 + erff(x / sqrt 2)), ATen's erf-form gelu of float32 */
  /* ElementWiseNeuron: HARD_SWISH x * min(max(x + 3, 0), 6) / 6 (ATen's order of operations);
   * HARD_SIGMOID min(max(lo * x + hi, 0), 1), lo = alpha, hi = beta. Both keep NaN. */
  EG_UNARY_HARD_SWISH,
  EG_UNARY_HARD_SIGMOID
} eg_unary_op;

/* y[i] = op(x[i]) for n elements; x and y may alias. lo/hi only for RELU_MIN_MAX (its bounds)
 * and HARD_SIGMOID (alpha, beta). */
void eg_unary_nhwc_f32(eg_unary_op op, int64_t n, const float *x, float *y, float lo, float hi);

typedef enum eg_cast_type {
  EG_CAST_F32,
  EG_CAST_I32,
  EG_CAST_U32,
  EG_CAST_I8,
  EG_CAST_U8,
  EG_CAST_BOOL /* one byte, 0 or 1 */
} eg_cast_type;

/* Converts n elements. Float to integer truncates toward zero and saturates (NaN -> 0); to
 * bool is `!= 0`. */
void eg_cast_nhwc(int64_t n, eg_cast_type from, const void *x, eg_cast_type to, void *y);

#endif
