/* gelu.c — NPU builders for aten.gelu and aten.gelu_backward, both forms of `approximate`.
 *
 *   aten.gelu(x, approximate='none')   -> Gelu(x)
 *       QNN's Gelu is the erf form. Measured on QNN 2.51's HTP emulator (SM8650, fp16):
 *       max |err| / max |gelu| 1.05e-3 against the erf form, and equally against the tanh form
 *       (the two forms differ by 5e-5 of the range, below fp16's resolution), whether the EP
 *       builds it from ONNX Gelu (opset 20), com.microsoft Gelu or opset 17's Div / Erf / Add /
 *       Mul / Mul decomposition (edgegrad's export).
 *   aten.gelu(x, approximate='tanh')   -> y = (0.5 * x) * (1 + Tanh(beta * (x + kappa * x^3)))
 *       ATen's float kernel op by op (beta = sqrt(2 / pi), kappa = 0.044715 as floats):
 *       Multiply, Add and Tanh (its input clamped, eg_htp_transcendental_input). Gelu itself
 *       would be the erf form: 5e-5 of the range from the tanh form, outside the fp32 rule.
 *       QNN HTP computes the composite to 3.0e-4 of the range.
 *   aten.gelu_backward(g, x, approximate='none')
 *       -> gx = g * (cdf + x * pdf), pdf = Exp((x * x) * -0.5) * (1 / sqrt(2 pi)),
 *          cdf = Select(Greater(x * x, 1e-14), Gelu(x) / x, 0.5)
 *       QNN has no erf (its EP refuses ONNX Erf), so the normal cdf is read off QNN's Gelu,
 *       x * cdf(x), divided by x; where |x| <= 1e-7 (x = 0 included: 0 / 0) cdf is 0.5 to
 *       within 4e-8. Infinities give NaN (inf * 0 in x * pdf), as ATen's kernel does.
 *   aten.gelu_backward(g, x, approximate='tanh')
 *       -> t = Tanh(beta * (x + kappa * x^3)),
 *          gx = g * (0.5 * (1 + t) + (0.5 * x) * (1 - t * t) * (beta * (1 + 3 kappa * x^2)))
 *       ATen's float kernel op by op (Multiply, Add, Subtract, Tanh).
 * Constraints: x, g and the result float32 and non-empty, one shape (gelu_backward's
 * broadcasting forms are declined). Layout: elementwise, every tensor held in the result's
 * axis order (pass layout_nhwc: FOLLOW). */
#include <stdio.h>
#include <string.h>

#include "backends/htp/compile/builders/builders.h"

/* ATen's gelu constants as its float kernels hold them. */
#define GELU_BETA 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_KAPPA 0.044715f
#define GELU_PDF 0.39894228040143268f /* 1 / sqrt(2 pi) */
/* |x| <= 1e-7 takes cdf = 0.5: x * x <= 1e-14 */
#define GELU_CDF_SMALL 1e-14f

static bool gelu_tanh_form(const eg_node *n) {
  const eg_arg *a = eg_node_arg(n, -1, "approximate");
  return a && a->kind == EG_ARG_STR && strcmp(a->str, "tanh") == 0;
}

/* Argument pos/kw is a float32 tensor shaped like the result. */
static bool same_shape_ok(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                          char *reason, size_t size) {
  const int32_t v = eg_htp_arg(n, pos, kw);
  if (v < 0 || g->values[v].kind != EG_VALUE_TENSOR) {
    snprintf(reason, size, "%s is not a tensor", kw);
    return false;
  }
  if (!eg_htp_float_tensor_ok(g, v, reason, size)) return false;
  const eg_value *a = &g->values[v], *y = &g->values[n->output];
  if (a->rank != y->rank || memcmp(a->shape, y->shape, sizeof(int64_t) * (size_t)a->rank)) {
    char s[96], t[96];
    snprintf(reason, size, "%s %s broadcasts to the result %s: the NPU lowering takes one "
             "shape", kw, eg_fmt_ints(s, sizeof s, a->shape, a->rank),
             eg_fmt_ints(t, sizeof t, y->shape, y->rank));
    return false;
  }
  return true;
}

static bool gelu_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                          size_t size) {
  (void)t;
  return eg_htp_float_tensor_ok(g, n->output, reason, size) &&
         same_shape_ok(g, n, 0, "self", reason, size);
}

static bool gelu_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                   char *reason, size_t size) {
  (void)t;
  return eg_htp_float_tensor_ok(g, n->output, reason, size) &&
         same_shape_ok(g, n, 0, "grad_output", reason, size) &&
         same_shape_ok(g, n, 1, "self", reason, size);
}

/* ---- emitting: every tensor has the result's dims; constants are [1] ([] for a 0-d one) ---- */

typedef struct gelu_ctx {
  eg_htp_lower *L;
  const eg_node *n;
  int32_t rank;
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
} gelu_ctx;

static eg_status gc_const(gelu_ctx *c, const char *what, float v, int32_t *out) {
  const uint32_t one[1] = {1};
  return eg_htp_const_f32(c->L, what, c->rank > 0 ? 1 : 0, one, &v, out);
}

/* *out = op(in[0..n_in)) into a new temp `what` (BOOL_8 for a comparison), or into the node's
 * result when what is NULL. */
static eg_status gc_op(gelu_ctx *c, eg_htp_qnn_op op, const int32_t *in, int n_in, const char *what,
                       int32_t *out) {
  if (what) {
    const eg_htp_qnn_dtype dt =
        eg_htp_qnn_op_is_comparison(op) ? EG_HTP_QNN_DTYPE_BOOL_8 : EG_HTP_QNN_DTYPE_FLOAT_32;
    EG_TRY(eg_htp_temp(c->L, what, dt, c->rank, c->dims, out));
  } else {
    EG_TRY(eg_htp_define(c->L, c->n->output, out));
  }
  return eg_htp_op(c->L, op, in, n_in, out, 1, NULL, 0);
}

static eg_status gc_bin(gelu_ctx *c, eg_htp_qnn_op op, int32_t a, int32_t b, const char *what,
                        int32_t *out) {
  const int32_t in[2] = {a, b};
  return gc_op(c, op, in, 2, what, out);
}

/* Opens the context, with *x the tensor of argument x_pos/x_kw in the result's order. */
static eg_status gc_open(gelu_ctx *c, eg_htp_lower *L, const eg_graph *g, const eg_node *n,
                         int x_pos, const char *x_kw, int32_t *x) {
  const eg_value *y = &g->values[n->output];
  const int32_t xv = eg_htp_arg(n, x_pos, x_kw);
  *c = (gelu_ctx){.L = L, .n = n, .rank = y->rank};
  eg_htp_dims(y, c->dims);
  EG_TRY(eg_htp_want_axes(L, xv, eg_htp_axes(y), x_kw));
  return eg_htp_input(L, xv, x);
}

/* t = Tanh(beta * (x + kappa * x^3)), with x^2 in *sq (ATen's v * v, then * v). */
static eg_status gc_tanh_inner(gelu_ctx *c, int32_t x, int32_t *sq, int32_t *t) {
  const eg_htp_qnn_op MUL = EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY;
  int32_t kappa, beta, cube, kc, sum, inner, clamped;
  EG_TRY(gc_const(c, "kappa", GELU_KAPPA, &kappa));
  EG_TRY(gc_const(c, "beta", GELU_BETA, &beta));
  EG_TRY(gc_bin(c, MUL, x, x, "x_sq", sq));
  EG_TRY(gc_bin(c, MUL, *sq, x, "x_cube", &cube));
  EG_TRY(gc_bin(c, MUL, kappa, cube, "kappa_cube", &kc));
  EG_TRY(gc_bin(c, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, x, kc, "x_kappa_cube", &sum));
  EG_TRY(gc_bin(c, MUL, beta, sum, "inner", &inner));
  EG_TRY(eg_htp_transcendental_input(c->L, inner, "inner_clamped", &clamped));
  const int32_t in[1] = {clamped};
  return gc_op(c, EG_HTP_QNN_OP_TANH, in, 1, "tanh", t);
}

static eg_status gelu_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  gelu_ctx c;
  int32_t x, y;
  EG_TRY(gc_open(&c, L, g, n, 0, "self", &x));
  if (!gelu_tanh_form(n)) return gc_op(&c, EG_HTP_QNN_OP_GELU, &x, 1, NULL, &y);
  int32_t sq, t, one, half, right, left;
  EG_TRY(gc_tanh_inner(&c, x, &sq, &t));
  EG_TRY(gc_const(&c, "one", 1.0f, &one));
  EG_TRY(gc_const(&c, "half", 0.5f, &half));
  EG_TRY(gc_bin(&c, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, half, x, "half_x", &left));
  EG_TRY(gc_bin(&c, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, one, t, "one_tanh", &right));
  return gc_bin(&c, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, left, right, NULL, &y);
}

/* d/dx of the erf form: cdf + x * pdf (file comment). */
static eg_status gelu_erf_slope(gelu_ctx *c, int32_t x, int32_t *slope) {
  const eg_htp_qnn_op MUL = EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY;
  int32_t sq, m_half, e_arg, e, k, pdf, xpdf, ge, ratio, small, half, big, cdf;
  EG_TRY(gc_const(c, "minus_half", -0.5f, &m_half));
  EG_TRY(gc_const(c, "pdf_scale", GELU_PDF, &k));
  EG_TRY(gc_const(c, "cdf_small", GELU_CDF_SMALL, &small));
  EG_TRY(gc_const(c, "half", 0.5f, &half));
  EG_TRY(gc_bin(c, MUL, x, x, "x_sq", &sq));
  EG_TRY(gc_bin(c, MUL, sq, m_half, "exp_arg", &e_arg));
  EG_TRY(gc_op(c, EG_HTP_QNN_OP_ELEMENT_WISE_EXP, &e_arg, 1, "exp", &e));
  EG_TRY(gc_bin(c, MUL, k, e, "pdf", &pdf));
  EG_TRY(gc_bin(c, MUL, x, pdf, "x_pdf", &xpdf));
  EG_TRY(gc_op(c, EG_HTP_QNN_OP_GELU, &x, 1, "gelu", &ge));
  EG_TRY(gc_bin(c, EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE, ge, x, "gelu_over_x", &ratio));
  EG_TRY(gc_bin(c, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER, sq, small, "not_small", &big));
  const int32_t sel[3] = {big, ratio, half};
  EG_TRY(gc_op(c, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, sel, 3, "cdf", &cdf));
  return gc_bin(c, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, cdf, xpdf, "slope", slope);
}

/* d/dx of the tanh form, ATen's order: 0.5 * (1 + t) + (0.5 * x) * (1 - t * t) * inner_d,
 * inner_d = beta * (1 + (3 * kappa) * x^2). */
static eg_status gelu_tanh_slope(gelu_ctx *c, int32_t x, int32_t *slope) {
  const eg_htp_qnn_op MUL = EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, ADD = EG_HTP_QNN_OP_ELEMENT_WISE_ADD;
  int32_t sq, t, one, half, beta, k3, right, left, hr, tt, dt, ksq, ksq1, inner_d, ldt, rd;
  EG_TRY(gc_tanh_inner(c, x, &sq, &t));
  EG_TRY(gc_const(c, "one", 1.0f, &one));
  EG_TRY(gc_const(c, "half", 0.5f, &half));
  EG_TRY(gc_const(c, "beta_d", GELU_BETA, &beta));
  EG_TRY(gc_const(c, "three_kappa", 3.0f * GELU_KAPPA, &k3));
  EG_TRY(gc_bin(c, ADD, one, t, "right", &right));
  EG_TRY(gc_bin(c, MUL, half, x, "left", &left));
  EG_TRY(gc_bin(c, MUL, half, right, "left_d", &hr));
  EG_TRY(gc_bin(c, MUL, t, t, "tanh_sq", &tt));
  EG_TRY(gc_bin(c, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, one, tt, "tanh_d", &dt));
  EG_TRY(gc_bin(c, MUL, k3, sq, "kappa_sq", &ksq));
  EG_TRY(gc_bin(c, ADD, one, ksq, "kappa_sq_1", &ksq1));
  EG_TRY(gc_bin(c, MUL, beta, ksq1, "inner_d", &inner_d));
  EG_TRY(gc_bin(c, MUL, left, dt, "left_tanh_d", &ldt));
  EG_TRY(gc_bin(c, MUL, ldt, inner_d, "right_d", &rd));
  return gc_bin(c, ADD, hr, rd, "slope", slope);
}

static eg_status gelu_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  gelu_ctx c;
  int32_t x, gy, slope, out;
  EG_TRY(gc_open(&c, L, g, n, 1, "self", &x));
  EG_TRY(eg_htp_want_axes(L, eg_htp_arg(n, 0, "grad_output"), eg_htp_axes(&g->values[n->output]),
                          "grad_output"));
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 0, "grad_output"), &gy));
  EG_TRY(gelu_tanh_form(n) ? gelu_tanh_slope(&c, x, &slope) : gelu_erf_slope(&c, x, &slope));
  return gc_bin(&c, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, gy, slope, NULL, &out);
}

const eg_htp_builder eg_htp_builder_gelu = {
    "aten.gelu -> Gelu (approximate 'none'); Tanh + ElementWiseMultiply / Add ('tanh')", 0,
    gelu_supports, gelu_lower};
const eg_htp_builder eg_htp_builder_gelu_backward = {
    "aten.gelu_backward -> Gelu, ElementWiseDivide / Exp / Greater / Select / Multiply / Add "
    "('none'); Tanh, ElementWiseMultiply / Add / Subtract ('tanh')", 0,
    gelu_backward_supports, gelu_backward_lower};
