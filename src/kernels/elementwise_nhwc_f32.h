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
#include <stddef.h>
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
  EG_UNARY_SIGMOID, /* 1 / (1 + e^-x) by eg_sigmoid1_f32 (kernels/sigmoid_f32.h), vectorised */
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

/* A chain of elementwise ops run as one kernel (the htp executor's fused elementwise ops):
 * steps in order, each one of the ops above on operands that are earlier steps' results or
 * leaves (tensors), every step over the same n elements, the last one's result written to y.
 * Each element gets exactly the arithmetic of the ops run one by one (the same float
 * operation per element, in the same operand order; no contraction: C11 code), so the result
 * is bit for bit theirs, without the intermediate tensors: the elements go through the chain
 * in blocks that stay in cache. A leaf is read FULL (n elements, dense, as the output), CHAN
 * (c elements: the output's last dim, repeated over the others) or SCALAR (one element);
 * comparisons' results and bool leaves are uint8 masks (Select's condition). */
#define EG_EW_CHAIN_MAX_STEPS 8
#define EG_EW_CHAIN_MAX_LEAVES 16

typedef enum eg_ew_chain_op {
  EG_EW_CHAIN_ADD,
  EG_EW_CHAIN_SUB,
  EG_EW_CHAIN_MUL,
  EG_EW_CHAIN_DIV,
  EG_EW_CHAIN_GREATER,       /* mask a > b */
  EG_EW_CHAIN_GREATER_EQUAL, /* mask a >= b */
  EG_EW_CHAIN_LESS_EQUAL,    /* mask a <= b */
  EG_EW_CHAIN_SELECT,        /* mask ? a : b */
  EG_EW_CHAIN_NEG,
  EG_EW_CHAIN_RELU,
  EG_EW_CHAIN_RELU_MIN_MAX   /* as EG_UNARY_RELU_MIN_MAX, bounds lo, hi */
} eg_ew_chain_op;

typedef enum eg_ew_leaf_form { EG_EW_LEAF_FULL, EG_EW_LEAF_CHAN, EG_EW_LEAF_SCALAR } eg_ew_leaf_form;

typedef struct eg_ew_chain_step {
  uint8_t op;     /* eg_ew_chain_op */
  int8_t arg[3];  /* per operand: >= 0 an earlier step, -1 - i leaf i */
  float lo, hi;   /* RELU_MIN_MAX */
} eg_ew_chain_step;

typedef struct eg_ew_chain {
  int n_steps, n_leaves;
  int64_t n, c; /* elements; the output's last dim (CHAN leaves' length), >= 1 */
  eg_ew_chain_step step[EG_EW_CHAIN_MAX_STEPS];
  uint8_t leaf_form[EG_EW_CHAIN_MAX_LEAVES]; /* eg_ew_leaf_form */
} eg_ew_chain;

/* Whether op yields a uint8 mask, and its operand count. */
bool eg_ew_chain_op_masks(eg_ew_chain_op op);
int eg_ew_chain_op_arity(eg_ew_chain_op op);
/* y = the chain's last step over leaves[] (float, or uint8 where a mask is read). `round`
 * (NULL: none) is applied to each float result of a step but the last, block by block, as
 * the executor's fp16 mode rounds each op's output (an element-wise rule). */
void eg_ew_chain_nhwc_f32(const eg_ew_chain *ch, const void *const *leaves, float *y,
                          void (*round)(float *x, size_t n));
/* y[e] (ch->c floats) = the sum over the chain's rows (n / c of them, the last dim's values
 * per row) of its last step's value at column e, or with `mean` that sum times c / n:
 * ReduceSum / ReduceMean of the chain's output over every dim but the last, without that
 * output. Accumulated in double in element order, as eg_reduce_nhwc_f32 adds a tensor's rows,
 * so the result is bit for bit that reduction's of the chain's output. `round` is applied to
 * every step's float results, the last's too (the executor's fp16 mode rounds the chain's
 * output before a reduction reads it). acc: c doubles of scratch. Not threaded (the order of
 * the sums is fixed). */
void eg_ew_chain_reduce_nhwc_f32(const eg_ew_chain *ch, const void *const *leaves, bool mean,
                                 float *y, double *acc, void (*round)(float *x, size_t n));

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
