/* matmul.c — NPU builders for matrix products.
 *
 *   aten.mm(a [n,k], b [k,m])          -> MatMul(a, b)
 *   aten.bmm(a [b,n,k], b [b,k,m])     -> MatMul(a, b) (QNN MatMul's batch dims)
 *   aten.addmm(self, a, b, beta, alpha)
 *       beta 1, alpha 1, self [m]      -> MatMul(a, b, bias = self)
 *       otherwise                      -> MatMul(a, b)
 *                                         [+ ElementWiseMultiply by STATIC rank-0 alpha]
 *                                         [+ ElementWiseMultiply(self, STATIC rank-0 beta)]
 *                                         + ElementWiseAdd(product, scaled self) (broadcast);
 *                                         beta 0: no Add, self is not read, as in ATen
 * Constraints: float32, no empty matrices (QNN dims are >= 1). Operands are rank 2 (bmm: 3), so
 * the layout rule keeps ATen's order and no Transpose is needed.
 *
 * Why not FullyConnected: it computes x W^T + b with W [out, in], which is what nn.Linear's
 * addmm(b, x, t(W)) means — but make_fx traces the t as a node of its own (lowered to a
 * Transpose by shape.c), so the addmm sees a plain matrix and MatMul + bias is the honest
 * mapping of this node alone. */
#include <stdio.h>

#include "backends/htp/compile/builders/builders.h"

/* Value `id` is a non-empty float32 tensor. */
static bool matrix_ok(const eg_graph *g, int32_t id, const char *what, char *reason,
                      size_t size) {
  const eg_value *v = id >= 0 ? &g->values[id] : NULL;
  char s[160];
  if (!v || v->kind != EG_VALUE_TENSOR) {
    snprintf(reason, size, "argument %s is not a tensor", what);
    return false;
  }
  if (v->dtype != EG_DTYPE_FLOAT32) {
    snprintf(reason, size, "%s %s is %s: the NPU lowering handles float32 only", what,
             eg_value_label(g, id), eg_dtype_name(v->dtype));
    return false;
  }
  if (eg_value_numel(v) == 0) {
    snprintf(reason, size, "empty %s %s %s: QNN tensors need every dimension >= 1", what,
             eg_value_label(g, id), eg_fmt_ints(s, sizeof s, v->shape, v->rank));
    return false;
  }
  return true;
}

static bool mm_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                        size_t size) {
  (void)t;
  return matrix_ok(g, eg_htp_arg(n, 0, "self"), "self", reason, size) &&
         matrix_ok(g, eg_htp_arg(n, 1, "mat2"), "mat2", reason, size) &&
         matrix_ok(g, n->output, "result", reason, size);
}

static eg_status mm_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  int32_t in[2], out;
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 0, "self"), &in[0]));
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 1, "mat2"), &in[1]));
  EG_TRY(eg_htp_define(L, n->output, &out));
  return eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, in, 2, &out, 1, NULL, 0);
}

static bool addmm_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                           char *reason, size_t size) {
  (void)t;
  double beta = 1;
  if (eg_arg_opt_scalar(n, 3, "beta", &beta) != EG_OK) {
    snprintf(reason, size, "argument beta is not a number");
    return false;
  }
  return (beta == 0 || matrix_ok(g, eg_htp_arg(n, 0, "self"), "self", reason, size)) &&
         matrix_ok(g, eg_htp_arg(n, 1, "mat1"), "mat1", reason, size) &&
         matrix_ok(g, eg_htp_arg(n, 2, "mat2"), "mat2", reason, size) &&
         matrix_ok(g, n->output, "result", reason, size);
}

static eg_status addmm_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  double beta = 1, alpha = 1;
  EG_TRY(eg_arg_opt_scalar(n, 3, "beta", &beta));
  EG_TRY(eg_arg_opt_scalar(n, 4, "alpha", &alpha));
  const int32_t self = eg_htp_arg(n, 0, "self");
  const eg_value *y = &g->values[n->output];
  int32_t in[3], out;
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 1, "mat1"), &in[0]));
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 2, "mat2"), &in[1]));
  /* the common case, nn.Linear: one MatMul with its bias input */
  if (beta == 1 && alpha == 1 && g->values[self].rank == 1 &&
      g->values[self].shape[0] == y->shape[1]) {
    EG_TRY(eg_htp_input(L, self, &in[2]));
    EG_TRY(eg_htp_define(L, n->output, &out));
    return eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, in, 3, &out, 1, NULL, 0);
  }
  const uint32_t dims[2] = {eg_htp_qnn_dim(y->shape[0]), eg_htp_qnn_dim(y->shape[1])};
  int32_t prod;
  if (beta == 0 && alpha == 1) { /* ATen ignores self entirely */
    EG_TRY(eg_htp_define(L, n->output, &out));
    return eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, in, 2, &out, 1, NULL, 0);
  }
  EG_TRY(eg_htp_temp(L, "mm", EG_HTP_QNN_DTYPE_FLOAT_32, 2, dims, &prod));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, in, 2, &prod, 1, NULL, 0));
  if (alpha != 1) { /* alpha * (mat1 @ mat2) */
    const float a = (float)alpha;
    int32_t mul[2], scaled;
    mul[0] = prod;
    EG_TRY(eg_htp_const_f32(L, "alpha", 0, NULL, &a, &mul[1]));
    if (beta == 0) {
      EG_TRY(eg_htp_define(L, n->output, &out));
      return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, &out, 1, NULL, 0);
    }
    EG_TRY(eg_htp_temp(L, "alpha_mm", EG_HTP_QNN_DTYPE_FLOAT_32, 2, dims, &scaled));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, &scaled, 1, NULL, 0));
    prod = scaled;
  }
  int32_t bias;
  EG_TRY(eg_htp_input(L, self, &bias));
  if (beta != 1) { /* beta * self */
    const eg_value *s = &g->values[self];
    const float b = (float)beta;
    uint32_t sdims[EG_MAX_RANK];
    int32_t mul[2], scaled;
    eg_htp_dims(s, sdims);
    mul[0] = bias;
    EG_TRY(eg_htp_const_f32(L, "beta", 0, NULL, &b, &mul[1]));
    EG_TRY(eg_htp_temp(L, "beta_self", EG_HTP_QNN_DTYPE_FLOAT_32, s->rank, sdims, &scaled));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, &scaled, 1, NULL, 0));
    bias = scaled;
  }
  const int32_t add[2] = {prod, bias};
  EG_TRY(eg_htp_define(L, n->output, &out));
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, add, 2, &out, 1, NULL, 0);
}

const eg_htp_builder eg_htp_builder_mm = {"aten.mm -> MatMul", 0, mm_supports, mm_lower};
const eg_htp_builder eg_htp_builder_bmm = {"aten.bmm -> MatMul", 0, mm_supports, mm_lower};
const eg_htp_builder eg_htp_builder_addmm = {
    "aten.addmm -> MatMul (+ bias) [+ ElementWiseMultiply] [+ ElementWiseAdd]", 0,
    addmm_supports, addmm_lower};
