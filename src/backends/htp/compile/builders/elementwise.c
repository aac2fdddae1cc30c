/* elementwise.c — NPU builders for pointwise arithmetic and the simple backward ops.
 *
 *   aten.add.Tensor(a, b, alpha)        -> ElementWiseAdd(a, b)        [b: alpha * b, below]
 *   aten.sub.Tensor(a, b, alpha)        -> ElementWiseSubtract(a, b)   [b: alpha * b]
 *   aten.add.Scalar / sub.Scalar(a, s, alpha)
 *                                       -> ElementWiseAdd / ElementWiseSubtract(a, alpha * s)
 *   aten.rsub.Scalar(a, s, alpha)       -> ElementWiseSubtract(s, a)   [a: alpha * a]
 *   aten.mul.Tensor / mul.Scalar        -> ElementWiseMultiply
 *   aten.div.Tensor / div.Scalar / div.Tensor_mode (rounding_mode None)
 *                                       -> ElementWiseDivide
 *   aten.neg(x)                         -> ElementWiseNeg
 *   aten.threshold_backward(g, x, t)    -> ElementWiseLessEqual(x, t) + ElementWiseSelect(., 0, g)
 *   aten.hardtanh_backward(g, x, lo, hi)-> ElementWiseGreaterEqual(x, hi),
 *                                          ElementWiseLessEqual(x, lo) + two ElementWiseSelect
 *   aten.hardswish_backward(g, x)       -> LessEqual(x, -3), GreaterEqual(x, 3), two Select
 *                                          around g * (x / 3 + 0.5): Divide, Add, Multiply
 *   aten.hardsigmoid_backward(g, x)     -> Greater(x, -3), Greater(3, x), two Select around
 *                                          g * (1/6): Multiply
 *   aten.sigmoid_backward(g, y)         -> g * (1 - y) * y: ElementWiseSubtract + 2 Multiply
 *   aten.tanh_backward(g, y)            -> g * (1 - y * y): Multiply, Subtract, Multiply
 *   aten.silu(x)                        -> x * sigmoid(x): Sigmoid + ElementWiseMultiply
 *   aten.silu_backward(g, x)            -> g * s * (1 + x * (1 - s)), s = Sigmoid(x)
 *
 * Constraints: the result and every tensor operand are float32, non-empty; an operand may also
 * be a Python number (the overloads that take one), which becomes a STATIC float32 constant of
 * shape [1] ([] for a 0-d result), converted to float as ATen converts a wrapped number for a
 * float32 op. An alpha other than 1 is a STATIC constant multiplying the tensor it scales (one
 * more ElementWiseMultiply), or is folded into the number it scales (alpha * s in float, as
 * ATen computes it).
 *
 * Comparisons use QNN's own LessEqual / GreaterEqual against the bound itself: threshold_backward
 * (x <= t ? 0 : g) and hardtanh_backward ((x <= lo || x >= hi) ? 0 : g) select 0 where
 * LessEqual(x, t) / LessEqual(x, lo) / GreaterEqual(x, hi) holds (false for a NaN x or bound,
 * as ATen's; any bound, infinities included). The STATIC constant a comparison reads is always
 * the float32 bound ATen compares with, never a neighbour of it (a nextafter(t, +/-inf) form of
 * Greater breaks on a target that computes in fp16: nextafter(0, +inf) rounds to 0 there, and
 * every exact 0 — half a ReLU's outputs — would pass its gradient). So where the bound is exact
 * in fp16 (ReLU's 0, ReLU6's 0 and 6, hardtanh's -1 and 1) the fp16 comparison is exact at the
 * bound; a bound fp16 cannot hold is rounded to nearest as the target rounds x, which keeps the
 * comparison monotone. The executor compares in float32, exactly as ATen does. hardswish's and
 * hardsigmoid's backward compare with their kinks -3 and 3 (exact in fp16) the same way, each
 * with the strictness ATen uses there (Greater(3, x) for x < 3).
 *
 * Broadcasting. QNN's binary ops broadcast NumPy-style over QNN dims, and a rank-4 value may be
 * held NHWC (eg_value.axes, pass layout_nhwc) while other ranks keep ATen's order. A rank-4
 * operand of a rank-4 result is held in the result's order (the pass converts it; lowering fails
 * otherwise), and operands of one order broadcast alike in both orders. A lower-rank operand of
 * a traced-order result broadcasts as ATen's. One of an NHWC result is right-aligned by ATen
 * against [N, C, H, W] (a [C, 1, 1] bias, a [W] row), so it is brought to the NHWC position of
 * those dims: its padded shape [n, c, h, w] becomes [n, h, w, c] — a STATIC
 * operand as a permuted constant; a runtime one by a Reshape when that keeps the memory order
 * (c == 1 or h == w == 1), else (rank 3, [c, h, w]) by Transpose(perm [1, 2, 0]). A rank-4
 * operand of a higher-rank result would have to be NCHW again: declined. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/htp/compile/builders/builders.h"

/* ---- operands ---- */

/* A kernel operand: a tensor value or a Python number (already float). */
typedef struct operand {
  int32_t value; /* -1 for a number */
  float number;
} operand;

/* Where an operand comes from in the schema. */
typedef struct operand_spec {
  int pos;
  const char *kw;
  bool tensor_ok, number_ok;
} operand_spec;

/* A Python number argument as ATen converts it for a float32 computation. */
static bool number_f32(const eg_arg *a, float *out) {
  if (!a) return false;
  switch (a->kind) {
  case EG_ARG_INT: *out = (float)a->i; return true;
  case EG_ARG_FLOAT: *out = (float)a->f; return true;
  case EG_ARG_BOOL: *out = a->b ? 1.0f : 0.0f; return true;
  default: return false;
  }
}

/* An optional number argument (alpha): absent or None keeps *out. */
static void opt_number_f32(const eg_node *n, int pos, const char *kw, float *out) {
  number_f32(eg_node_arg(n, pos, kw), out);
}

/* Reads operand `s` of `n`; false with a reason when it is neither an allowed float32 tensor
 * nor an allowed number. */
static bool read_operand(const eg_graph *g, const eg_node *n, const operand_spec *s, operand *o,
                         char *reason, size_t size) {
  const eg_arg *a = eg_node_arg(n, s->pos, s->kw);
  if (a && a->kind == EG_ARG_VALUE && s->tensor_ok) {
    const eg_value *v = &g->values[a->value];
    if (v->kind != EG_VALUE_TENSOR || v->dtype != EG_DTYPE_FLOAT32) {
      snprintf(reason, size, "%s is %s: the NPU lowering takes float32 tensors", s->kw,
               v->kind == EG_VALUE_TENSOR ? eg_dtype_name(v->dtype) : "a tuple");
      return false;
    }
    *o = (operand){.value = a->value};
    return true;
  }
  if (s->number_ok && number_f32(a, &o->number)) {
    o->value = -1;
    return true;
  }
  snprintf(reason, size, "%s is not a %s", s->kw,
           s->number_ok ? (s->tensor_ok ? "float32 tensor or a number" : "number")
                        : "float32 tensor");
  return false;
}

/* The node's result is a non-empty float32 tensor and every tensor operand can be laid out for
 * it (see the file comment). */
static bool result_ok(const eg_graph *g, const eg_node *n, const operand *ops, int n_ops,
                      char *reason, size_t size) {
  const eg_value *y = &g->values[n->output];
  char s[96];
  if (y->kind != EG_VALUE_TENSOR || y->dtype != EG_DTYPE_FLOAT32) {
    snprintf(reason, size, "the result is not a float32 tensor");
    return false;
  }
  if (eg_value_numel(y) == 0) {
    snprintf(reason, size, "empty result %s: QNN tensors need every dim >= 1",
             eg_fmt_ints(s, sizeof s, y->shape, y->rank));
    return false;
  }
  for (int i = 0; i < n_ops; i++) {
    if (ops[i].value < 0) continue;
    const eg_value *v = &g->values[ops[i].value];
    if (v->rank == 4 && y->rank != 4) {
      snprintf(reason, size, "a rank-4 operand of a rank-%d result: the operand is NHWC on the "
               "NPU and would broadcast in ATen's NCHW order", (int)y->rank);
      return false;
    }
  }
  return true;
}

/* ---- QNN tensors with their dims (builders cannot read the QNN graph back) ---- */

typedef struct ew_tensor {
  int32_t id;
  int32_t rank;
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
} ew_tensor;

/* NumPy broadcast of a's and b's dims into out (may be a or b); the shapes broadcast (the
 * graph was verified). */
static void broadcast_dims(const ew_tensor *a, const ew_tensor *b, ew_tensor *out) {
  const int r = a->rank > b->rank ? a->rank : b->rank;
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  for (int i = 0; i < r; i++) {
    const uint32_t da = i < r - a->rank ? 1 : a->dims[i - (r - a->rank)];
    const uint32_t db = i < r - b->rank ? 1 : b->dims[i - (r - b->rank)];
    dims[i] = da == 1 ? db : da;
  }
  memcpy(out->dims, dims, sizeof dims);
  out->rank = r;
}

/* A STATIC float32 scalar broadcast against a result of rank `out_rank`: [1], or [] for a 0-d
 * result (a [1] operand would make the result [1]). */
static eg_status scalar_tensor(eg_htp_lower *L, const char *what, int32_t out_rank, float v,
                               ew_tensor *t) {
  t->rank = out_rank > 0 ? 1 : 0;
  t->dims[0] = 1;
  return eg_htp_const_f32(L, what, t->rank, t->dims, &v, &t->id);
}

/* Copies a float32 [n, c, h, w] array into [n, h, w, c] order. */
static void nchw_to_nhwc(const float *src, const int64_t s[4], float *dst) {
  for (int64_t a = 0; a < s[0]; a++)
    for (int64_t y = 0; y < s[2]; y++)
      for (int64_t x = 0; x < s[3]; x++)
        for (int64_t c = 0; c < s[1]; c++)
          *dst++ = src[((a * s[1] + c) * s[2] + y) * s[3] + x];
}

/* The tensor of IR value `value` laid out to broadcast against the node's result `res` (file
 * comment). `what` names the constant or temporary this may need. */
static eg_status value_tensor(eg_htp_lower *L, const eg_graph *g, int32_t value,
                              const eg_value *res, const char *what, ew_tensor *t) {
  const eg_value *v = &g->values[value];
  bool all_ones = true;
  for (int d = 0; d < v->rank; d++) all_ones = all_ones && v->shape[d] == 1;
  if (v->rank == 4 && res->rank == 4) EG_TRY(eg_htp_want_axes(L, value, eg_htp_axes(res), what));
  if (!eg_htp_is_nhwc(res) || v->rank == 4 || v->rank == 0 || all_ones) {
    t->rank = v->rank;
    eg_htp_dims(v, t->dims);
    return eg_htp_input(L, value, &t->id);
  }
  int64_t s[4] = {1, 1, 1, 1}; /* ATen's right-aligned [n, c, h, w] */
  for (int d = 0; d < v->rank; d++) s[4 - v->rank + d] = v->shape[d];
  t->rank = 4;
  const int64_t nhwc[4] = {s[0], s[2], s[3], s[1]};
  for (int d = 0; d < 4; d++) t->dims[d] = eg_htp_qnn_dim(nhwc[d]);
  if (v->role == EG_ROLE_STATIC) {
    float *buf = malloc((size_t)eg_value_numel(v) * sizeof(float));
    if (!buf) return eg_error(EG_ERR_NOMEM, "lowering %s: out of memory", eg_value_label(g, value));
    nchw_to_nhwc(g->statics[v->def].data, s, buf);
    eg_status st = eg_htp_const_f32(L, what, 4, t->dims, buf, &t->id);
    free(buf);
    return st;
  }
  int32_t in;
  EG_TRY(eg_htp_input(L, value, &in));
  if (s[1] == 1 || (s[2] == 1 && s[3] == 1)) { /* same memory order: only the dims change */
    EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, t->dims, &t->id));
    return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &in, 1, &t->id, 1, NULL, 0);
  }
  /* rank 3 [c, h, w] with c > 1 and h * w > 1 (lower ranks have c == 1): to [h, w, c] */
  static const uint32_t perm[3] = {1, 2, 0}, perm_dims[1] = {3};
  t->rank = 3;
  for (int d = 0; d < 3; d++) t->dims[d] = eg_htp_qnn_dim(nhwc[d + 1]);
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor("perm", 1, perm_dims, perm);
  EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 3, t->dims, &t->id));
  return eg_htp_op(L, EG_HTP_QNN_OP_TRANSPOSE, &in, 1, &t->id, 1, &p, 1);
}

static eg_status operand_tensor(eg_htp_lower *L, const eg_graph *g, const operand *o,
                                const eg_value *res, const char *what, ew_tensor *t) {
  if (o->value < 0) return scalar_tensor(L, what, res->rank, o->number, t);
  return value_tensor(L, g, o->value, res, what, t);
}

/* Appends `op` over 1..3 inputs. Its output is the node's result when `what` is NULL, else a
 * NATIVE temporary "<node>_<what>" (BOOL_8 for a comparison). `out` may be an input. */
static eg_status emit(eg_htp_lower *L, const eg_node *n, eg_htp_qnn_op op, const ew_tensor *const *in,
                      int n_in, const char *what, ew_tensor *out) {
  int32_t ids[3];
  ew_tensor shape = *in[0];
  for (int i = 0; i < n_in; i++) ids[i] = in[i]->id;
  for (int i = 1; i < n_in; i++) broadcast_dims(&shape, in[i], &shape);
  *out = shape;
  if (what) {
    const eg_htp_qnn_dtype dt =
        eg_htp_qnn_op_is_comparison(op) ? EG_HTP_QNN_DTYPE_BOOL_8 : EG_HTP_QNN_DTYPE_FLOAT_32;
    EG_TRY(eg_htp_temp(L, what, dt, out->rank, out->dims, &out->id));
  } else {
    EG_TRY(eg_htp_define(L, n->output, &out->id));
  }
  return eg_htp_op(L, op, ids, n_in, &out->id, 1, NULL, 0);
}

static eg_status emit2(eg_htp_lower *L, const eg_node *n, eg_htp_qnn_op op, const ew_tensor *a,
                       const ew_tensor *b, const char *what, ew_tensor *out) {
  const ew_tensor *in[2] = {a, b};
  return emit(L, n, op, in, 2, what, out);
}

static eg_status emit3(eg_htp_lower *L, const eg_node *n, eg_htp_qnn_op op, const ew_tensor *a,
                       const ew_tensor *b, const ew_tensor *c, const char *what, ew_tensor *out) {
  const ew_tensor *in[3] = {a, b, c};
  return emit(L, n, op, in, 3, what, out);
}

/* ---- add, sub, rsub, mul, div ---- */

/* out = op(a, alpha * b); alpha_kw NULL: no alpha. */
typedef struct arith_spec {
  eg_htp_qnn_op op;
  operand_spec a, b;
  int alpha_pos;
  const char *alpha_kw;
} arith_spec;

#define SELF_T {0, "self", true, false}
#define OTHER_TN {1, "other", true, true}
#define OTHER_N {1, "other", false, true}

static const arith_spec spec_add_Tensor = {EG_HTP_QNN_OP_ELEMENT_WISE_ADD, SELF_T, OTHER_TN, -1,
                                           "alpha"};
static const arith_spec spec_sub_Tensor = {EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, SELF_T, OTHER_TN, -1,
                                           "alpha"};
static const arith_spec spec_add_Scalar = {EG_HTP_QNN_OP_ELEMENT_WISE_ADD, SELF_T, OTHER_N, 2,
                                           "alpha"};
static const arith_spec spec_sub_Scalar = {EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, SELF_T, OTHER_N, 2,
                                           "alpha"};
/* rsub(self, other, alpha) = other - alpha * self */
static const arith_spec spec_rsub_Scalar = {EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, OTHER_N, SELF_T, 2,
                                            "alpha"};
static const arith_spec spec_mul_Tensor = {EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, SELF_T, OTHER_TN, -1,
                                           NULL};
static const arith_spec spec_mul_Scalar = {EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, SELF_T, OTHER_N, -1,
                                           NULL};
static const arith_spec spec_div_Tensor = {EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE, SELF_T, OTHER_TN, -1,
                                           NULL};
static const arith_spec spec_div_Scalar = {EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE, SELF_T, OTHER_N, -1,
                                           NULL};

static const arith_spec *arith_spec_of(eg_op op) {
  switch (op) {
  case EG_OP_add_Tensor: return &spec_add_Tensor;
  case EG_OP_sub_Tensor: return &spec_sub_Tensor;
  case EG_OP_add_Scalar: return &spec_add_Scalar;
  case EG_OP_sub_Scalar: return &spec_sub_Scalar;
  case EG_OP_rsub_Scalar: return &spec_rsub_Scalar;
  case EG_OP_mul_Tensor: return &spec_mul_Tensor;
  case EG_OP_mul_Scalar: return &spec_mul_Scalar;
  case EG_OP_div_Scalar: return &spec_div_Scalar;
  default: return &spec_div_Tensor; /* div.Tensor, div.Tensor_mode */
  }
}

static bool arith_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                           char *reason, size_t size) {
  (void)t;
  const arith_spec *s = arith_spec_of(n->op);
  operand ops[2];
  if (n->op == EG_OP_div_Tensor_mode) {
    const eg_arg *m = eg_node_arg(n, 2, "rounding_mode");
    if (m && m->kind != EG_ARG_NONE) {
      snprintf(reason, size, "rounding_mode '%s': ElementWiseDivide is true division (no "
               "trunc or floor rounding lowered)", m->kind == EG_ARG_STR ? m->str : "?");
      return false;
    }
  }
  return read_operand(g, n, &s->a, &ops[0], reason, size) &&
         read_operand(g, n, &s->b, &ops[1], reason, size) &&
         result_ok(g, n, ops, 2, reason, size);
}

static eg_status arith_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const arith_spec *s = arith_spec_of(n->op);
  const eg_value *res = &g->values[n->output];
  const int32_t r = res->rank;
  operand a, b;
  char why[8];
  read_operand(g, n, &s->a, &a, why, sizeof why);
  read_operand(g, n, &s->b, &b, why, sizeof why);
  float alpha = 1.0f;
  if (s->alpha_kw) opt_number_f32(n, s->alpha_pos, s->alpha_kw, &alpha);
  if (alpha != 1.0f && b.value < 0) b.number = alpha * b.number; /* ATen: alpha * b in float */
  ew_tensor ta, tb, y;
  EG_TRY(operand_tensor(L, g, &a, res, "a", &ta));
  EG_TRY(operand_tensor(L, g, &b, res, "b", &tb));
  if (alpha != 1.0f && b.value >= 0) {
    ew_tensor c;
    EG_TRY(scalar_tensor(L, "alpha", r, alpha, &c));
    EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &tb, &c, "alpha_b", &tb));
  }
  return emit2(L, n, s->op, &ta, &tb, NULL, &y);
}

/* ---- unary: neg, silu ---- */

static const operand_spec self_t = SELF_T;

static bool unary_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                           size_t size) {
  (void)t;
  operand x;
  return read_operand(g, n, &self_t, &x, reason, size) && result_ok(g, n, &x, 1, reason, size);
}

static eg_status neg_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  ew_tensor x, y;
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 0, "self"), &g->values[n->output], "x", &x));
  const ew_tensor *in[1] = {&x};
  return emit(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_NEG, in, 1, NULL, &y);
}

static eg_status silu_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  ew_tensor x, c, s, y;
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 0, "self"), &g->values[n->output], "x", &x));
  c = x; /* Sigmoid reads x clamped to fp16's range (eg_htp_transcendental_input) */
  EG_TRY(eg_htp_transcendental_input(L, x.id, "x_clamped", &c.id));
  const ew_tensor *in[1] = {&c};
  EG_TRY(emit(L, n, EG_HTP_QNN_OP_SIGMOID, in, 1, "sigmoid", &s));
  return emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &x, &s, NULL, &y);
}

/* ---- backward ops: two tensors (grad_output first) and numbers ---- */

static const operand_spec grad_t = {0, "grad_output", true, false};
static const operand_spec self_t1 = {1, "self", true, false};
static const operand_spec output_t1 = {1, "output", true, false};

/* grad_output and self/output (second) are float32 tensors the result can broadcast. */
static bool backward_operands(const eg_graph *g, const eg_node *n, const operand_spec *second,
                              operand ops[2], char *reason, size_t size) {
  return read_operand(g, n, &grad_t, &ops[0], reason, size) &&
         read_operand(g, n, second, &ops[1], reason, size) &&
         result_ok(g, n, ops, 2, reason, size);
}

/* A number argument converted to float (validated graphs always have it). */
static float number_arg(const eg_node *n, int pos, const char *kw, float dflt) {
  float v = dflt;
  number_f32(eg_node_arg(n, pos, kw), &v);
  return v;
}

static bool bound_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                    char *reason, size_t size) {
  (void)t;
  operand ops[2];
  return backward_operands(g, n, &self_t1, ops, reason, size);
}

/* threshold_backward(g, x, t) = x <= t ? 0 : g  =  Select(LessEqual(x, t), 0, g), t the bound
 * itself (see the comparisons above). */
static eg_status threshold_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_value *res = &g->values[n->output];
  const int32_t r = res->rank;
  const float thr = number_arg(n, 2, "threshold", 0.0f);
  ew_tensor gy, x, t, zero, mask, y;
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 0, "grad_output"), res, "grad", &gy));
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 1, "self"), res, "x", &x));
  EG_TRY(scalar_tensor(L, "threshold", r, thr, &t));
  EG_TRY(scalar_tensor(L, "zero", r, 0.0f, &zero));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, &x, &t, "le_mask", &mask));
  return emit3(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, &mask, &zero, &gy, NULL, &y);
}

/* hardtanh_backward(g, x, lo, hi) = (x <= lo || x >= hi) ? 0 : g
 *   = Select(LessEqual(x, lo), 0, Select(GreaterEqual(x, hi), 0, g)), lo and hi the bounds
 * themselves. */
static eg_status hardtanh_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_value *res = &g->values[n->output];
  const int32_t r = res->rank;
  const float lo = number_arg(n, 2, "min_val", -1.0f), hi = number_arg(n, 3, "max_val", 1.0f);
  ew_tensor gy, x, tlo, thi, zero, m_lo, m_hi, inner, y;
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 0, "grad_output"), res, "grad", &gy));
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 1, "self"), res, "x", &x));
  EG_TRY(scalar_tensor(L, "min_val", r, lo, &tlo));
  EG_TRY(scalar_tensor(L, "max_val", r, hi, &thi));
  EG_TRY(scalar_tensor(L, "zero", r, 0.0f, &zero));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, &x, &thi, "ge_max", &m_hi));
  EG_TRY(emit3(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, &m_hi, &zero, &gy, "below_max", &inner));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, &x, &tlo, "le_min", &m_lo));
  return emit3(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, &m_lo, &zero, &inner, NULL, &y);
}

/* hardswish_backward(g, x) = x <= -3 ? 0 : x >= 3 ? g : g * (x / 3 + 0.5)   (ATen 2.x's ends)
 *   = Select(LessEqual(x, -3), 0, Select(GreaterEqual(x, 3), g, g * (x / 3 + 0.5))),
 * the middle piece in ATen's order (ElementWiseDivide, Add, Multiply), +-3 the kinks themselves
 * (exact in fp16). A NaN x fails both comparisons and gives g * NaN, as the CPU kernel. */
static eg_status hardswish_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_value *res = &g->values[n->output];
  const int32_t r = res->rank;
  ew_tensor gy, x, m3, p3, half, zero, q, lin, mid, m_hi, m_lo, upper, y;
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 0, "grad_output"), res, "grad", &gy));
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 1, "self"), res, "x", &x));
  EG_TRY(scalar_tensor(L, "minus_three", r, -3.0f, &m3));
  EG_TRY(scalar_tensor(L, "three", r, 3.0f, &p3));
  EG_TRY(scalar_tensor(L, "half", r, 0.5f, &half));
  EG_TRY(scalar_tensor(L, "zero", r, 0.0f, &zero));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE, &x, &p3, "x_third", &q));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, &q, &half, "slope", &lin));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &gy, &lin, "grad_slope", &mid));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, &x, &p3, "ge_three", &m_hi));
  EG_TRY(emit3(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, &m_hi, &gy, &mid, "upper", &upper));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, &x, &m3, "le_minus_three", &m_lo));
  return emit3(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, &m_lo, &zero, &upper, NULL, &y);
}

/* hardsigmoid_backward(g, x) = (x > -3 && x < 3) ? g * (1/6) : 0
 *   = Select(Greater(x, -3), Select(Greater(3, x), g * (1/6), 0), 0),
 * 1/6 rounded to float as ATen's one_sixth; strict comparisons against the kinks themselves
 * (exact in fp16), so +-3 and a NaN x get 0 as in ATen. */
static eg_status hardsigmoid_backward_lower(eg_htp_lower *L, const eg_graph *g,
                                            const eg_node *n) {
  const eg_value *res = &g->values[n->output];
  const int32_t r = res->rank;
  ew_tensor gy, x, m3, p3, sixth, zero, scaled, m_lo, m_hi, inner, y;
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 0, "grad_output"), res, "grad", &gy));
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 1, "self"), res, "x", &x));
  EG_TRY(scalar_tensor(L, "minus_three", r, -3.0f, &m3));
  EG_TRY(scalar_tensor(L, "three", r, 3.0f, &p3));
  EG_TRY(scalar_tensor(L, "one_sixth", r, 1.0f / 6.0f, &sixth));
  EG_TRY(scalar_tensor(L, "zero", r, 0.0f, &zero));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &gy, &sixth, "grad_sixth", &scaled));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER, &p3, &x, "lt_three", &m_hi));
  EG_TRY(emit3(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, &m_hi, &scaled, &zero, "below_max",
               &inner));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER, &x, &m3, "gt_minus_three", &m_lo));
  return emit3(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, &m_lo, &inner, &zero, NULL, &y);
}

/* silu_backward(g, x) = g * s * (1 + x * (1 - s)), s = sigmoid(x), in ATen's order: Sigmoid
 * (of x clamped to fp16's range, as aten.silu's lowering reads it), then ElementWiseSubtract,
 * Multiply, Add, Multiply, Multiply. */
static eg_status silu_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_value *res = &g->values[n->output];
  const int32_t r = res->rank;
  ew_tensor gy, x, c, s, one, t1, t2, t3, t4, y;
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 0, "grad_output"), res, "grad", &gy));
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 1, "self"), res, "x", &x));
  c = x;
  EG_TRY(eg_htp_transcendental_input(L, x.id, "x_clamped", &c.id));
  const ew_tensor *in[1] = {&c};
  EG_TRY(emit(L, n, EG_HTP_QNN_OP_SIGMOID, in, 1, "sigmoid", &s));
  EG_TRY(scalar_tensor(L, "one", r, 1.0f, &one));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, &one, &s, "one_minus_s", &t1));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &x, &t1, "x_one_minus_s", &t2));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, &one, &t2, "slope", &t3));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &gy, &s, "grad_s", &t4));
  return emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &t4, &t3, NULL, &y);
}

static bool output_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                     char *reason, size_t size) {
  (void)t;
  operand ops[2];
  return backward_operands(g, n, &output_t1, ops, reason, size);
}

/* sigmoid_backward(g, y) = g * (1 - y) * y, in ATen's order. */
static eg_status sigmoid_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_value *res = &g->values[n->output];
  const int32_t r = res->rank;
  ew_tensor gy, yv, one, t1, t2, out;
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 0, "grad_output"), res, "grad", &gy));
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 1, "output"), res, "y", &yv));
  EG_TRY(scalar_tensor(L, "one", r, 1.0f, &one));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, &one, &yv, "one_minus_y", &t1));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &gy, &t1, "grad_one_minus_y", &t2));
  return emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &t2, &yv, NULL, &out);
}

/* tanh_backward(g, y) = g * (1 - y * y), in ATen's order. */
static eg_status tanh_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_value *res = &g->values[n->output];
  const int32_t r = res->rank;
  ew_tensor gy, yv, one, t1, t2, out;
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 0, "grad_output"), res, "grad", &gy));
  EG_TRY(value_tensor(L, g, eg_htp_arg(n, 1, "output"), res, "y", &yv));
  EG_TRY(scalar_tensor(L, "one", r, 1.0f, &one));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &yv, &yv, "y_squared", &t1));
  EG_TRY(emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, &one, &t1, "one_minus_y2", &t2));
  return emit2(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, &gy, &t2, NULL, &out);
}

/* ---- the builders ---- */

#define ARITH(id, mapping) \
  const eg_htp_builder eg_htp_builder_##id = {mapping, 0, arith_supports, arith_lower};
ARITH(add_Tensor, "aten.add.Tensor -> ElementWiseAdd (+ ElementWiseMultiply for alpha)")
ARITH(sub_Tensor, "aten.sub.Tensor -> ElementWiseSubtract (+ ElementWiseMultiply for alpha)")
ARITH(add_Scalar, "aten.add.Scalar -> ElementWiseAdd")
ARITH(sub_Scalar, "aten.sub.Scalar -> ElementWiseSubtract")
ARITH(rsub_Scalar, "aten.rsub.Scalar -> ElementWiseSubtract (+ ElementWiseMultiply for alpha)")
ARITH(mul_Tensor, "aten.mul.Tensor -> ElementWiseMultiply")
ARITH(mul_Scalar, "aten.mul.Scalar -> ElementWiseMultiply")
ARITH(div_Tensor, "aten.div.Tensor -> ElementWiseDivide")
ARITH(div_Tensor_mode, "aten.div.Tensor_mode (rounding_mode None) -> ElementWiseDivide")
ARITH(div_Scalar, "aten.div.Scalar -> ElementWiseDivide")
#undef ARITH

const eg_htp_builder eg_htp_builder_neg = {"aten.neg -> ElementWiseNeg", 0, unary_supports,
                                           neg_lower};
const eg_htp_builder eg_htp_builder_silu = {"aten.silu -> Sigmoid + ElementWiseMultiply", 0,
                                            unary_supports, silu_lower};
const eg_htp_builder eg_htp_builder_threshold_backward = {
    "aten.threshold_backward -> ElementWiseLessEqual + ElementWiseSelect", 0,
    bound_backward_supports, threshold_backward_lower};
const eg_htp_builder eg_htp_builder_hardtanh_backward = {
    "aten.hardtanh_backward -> ElementWiseGreaterEqual + ElementWiseLessEqual + 2 "
    "ElementWiseSelect", 0, bound_backward_supports, hardtanh_backward_lower};
const eg_htp_builder eg_htp_builder_hardswish_backward = {
    "aten.hardswish_backward -> ElementWiseDivide + Add + Multiply, ElementWiseGreaterEqual + "
    "ElementWiseLessEqual + 2 ElementWiseSelect", 0, bound_backward_supports,
    hardswish_backward_lower};
const eg_htp_builder eg_htp_builder_hardsigmoid_backward = {
    "aten.hardsigmoid_backward -> ElementWiseMultiply + 2 ElementWiseGreater + 2 "
    "ElementWiseSelect", 0, bound_backward_supports, hardsigmoid_backward_lower};
const eg_htp_builder eg_htp_builder_silu_backward = {
    "aten.silu_backward -> Sigmoid + ElementWiseSubtract + Add + 3 ElementWiseMultiply", 0,
    bound_backward_supports, silu_backward_lower};
const eg_htp_builder eg_htp_builder_sigmoid_backward = {
    "aten.sigmoid_backward -> ElementWiseSubtract + 2 ElementWiseMultiply", 0,
    output_backward_supports, sigmoid_backward_lower};
const eg_htp_builder eg_htp_builder_tanh_backward = {
    "aten.tanh_backward -> 2 ElementWiseMultiply + ElementWiseSubtract", 0,
    output_backward_supports, tanh_backward_lower};
