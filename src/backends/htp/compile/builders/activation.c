/* activation.c — NPU builders for activations.
 *
 *   aten.relu(x)                      -> Relu
 *   aten.hardtanh(x, min, max)        -> ReluMinMax(min_value, max_value)
 *   aten.clamp(x, min, max)           -> ReluMinMax(min_value, max_value)   [both bounds given]
 *   aten.sigmoid(x)                   -> Sigmoid(ReluMinMax(x, -65504, 65504))
 *   aten.tanh(x)                      -> Tanh(ReluMinMax(x, -65504, 65504))
 *     (the clamp is exact, and makes QNN HTP compute them as accurately after a Conv2d,
 *     MatMul or ElementWiseAdd as after anything else: eg_htp_transcendental_input)
 *   aten.hardswish(x)                 -> ElementWiseNeuron(operation HARD_SWISH)
 *   aten.hardsigmoid(x)               -> ElementWiseNeuron(operation HARD_SIGMOID, alpha 1/6,
 *                                        beta 0.5)
 *     (the form QNN's ONNX Runtime provider itself builds for ONNX HardSwish / HardSigmoid)
 * Constraints: float32 tensors (the float gate in the partitioner already requires an
 * fp16-capable HTP V69+). ReluMinMax needs min_value <= max_value: a node whose bounds (as
 * floats) are not so ordered (min > max, where ATen gives max everywhere, or a NaN bound) is
 * declined and stays on the CPU. Layout: the result is held in x's axis order (pass
 * layout_nhwc). */
#include <stdio.h>

#include "backends/htp/compile/builders/builders.h"

static bool float_unary_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                 char *reason, size_t size) {
  (void)t;
  const eg_value *x = eg_htp_arg_value(g, n, 0, "self");
  if (!x || x->dtype != EG_DTYPE_FLOAT32) {
    snprintf(reason, size, "input is not a float32 tensor");
    return false;
  }
  if (eg_value_numel(x) == 0) {
    snprintf(reason, size, "empty tensor: QNN tensors need every dimension >= 1");
    return false;
  }
  return true;
}

static eg_status lower_unary(eg_htp_lower *L, const eg_node *n, eg_htp_qnn_op op,
                             const eg_htp_qnn_param *params, int32_t n_params) {
  const int32_t x = eg_htp_arg(n, 0, "self");
  int32_t in, out;
  EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(&eg_htp_ir(L)->values[x]), "result"));
  EG_TRY(eg_htp_input(L, x, &in));
  EG_TRY(eg_htp_define(L, n->output, &out));
  return eg_htp_op(L, op, &in, 1, &out, 1, params, n_params);
}

static eg_status relu_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  return lower_unary(L, n, EG_HTP_QNN_OP_RELU, NULL, 0);
}

/* Sigmoid and Tanh read their input clamped to fp16's range (eg_htp_transcendental_input: the
 * form QNN HTP computes as accurately after any producer). */
static eg_status lower_transcendental(eg_htp_lower *L, const eg_node *n, eg_htp_qnn_op op) {
  const int32_t x = eg_htp_arg(n, 0, "self");
  int32_t in, clamped, out;
  EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(&eg_htp_ir(L)->values[x]), "result"));
  EG_TRY(eg_htp_input(L, x, &in));
  EG_TRY(eg_htp_transcendental_input(L, in, "in_clamped", &clamped));
  EG_TRY(eg_htp_define(L, n->output, &out));
  return eg_htp_op(L, op, &clamped, 1, &out, 1, NULL, 0);
}

static eg_status sigmoid_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  return lower_transcendental(L, n, EG_HTP_QNN_OP_SIGMOID);
}

static eg_status tanh_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  return lower_transcendental(L, n, EG_HTP_QNN_OP_TANH);
}

/* hardswish and hardsigmoid are one ElementWiseNeuron each: QNN's HTP computes them within an
 * fp16 rounding of the result after any producer (no clamp of the input as for Sigmoid), and
 * HARD_SIGMOID's alpha * x + beta with alpha = 1/6, beta = 0.5 is ATen's (x + 3) / 6 (to a
 * float32 rounding; exactly 0 and 1 from the kinks -3 and 3 outward). */
static eg_status hardswish_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32("operation", EG_HTP_QNN_NEURON_HARD_SWISH);
  return lower_unary(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_NEURON, &p, 1);
}

static eg_status hardsigmoid_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  const eg_htp_qnn_param p[3] = {eg_htp_qnn_param_u32("operation", EG_HTP_QNN_NEURON_HARD_SIGMOID),
                             eg_htp_qnn_param_f32("alpha", 1.0f / 6.0f),
                             eg_htp_qnn_param_f32("beta", 0.5f)};
  return lower_unary(L, n, EG_HTP_QNN_OP_ELEMENT_WISE_NEURON, p, 3);
}

/* The float bounds of a hardtanh (min_val, max_val; defaults -1, 1) or clamp (min, max; no
 * defaults: *given is false unless both are there) node. */
static void min_max_bounds(const eg_node *n, float *lo, float *hi, bool *given) {
  const bool clamp = n->op == EG_OP_clamp;
  const char *kw_lo = clamp ? "min" : "min_val", *kw_hi = clamp ? "max" : "max_val";
  const eg_arg *a = eg_node_arg(n, 1, kw_lo), *b = eg_node_arg(n, 2, kw_hi);
  double dlo = -1.0, dhi = 1.0;
  eg_arg_opt_scalar(n, 1, kw_lo, &dlo);
  eg_arg_opt_scalar(n, 2, kw_hi, &dhi);
  *lo = (float)dlo;
  *hi = (float)dhi;
  *given = !clamp || (a && a->kind != EG_ARG_NONE && b && b->kind != EG_ARG_NONE);
}

static bool min_max_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                             char *reason, size_t size) {
  if (!float_unary_supports(g, n, t, reason, size)) return false;
  float lo, hi;
  bool given;
  min_max_bounds(n, &lo, &hi, &given);
  if (!given) {
    snprintf(reason, size, "a bound is None: the ReluMinMax lowering needs both min and max");
    return false;
  }
  if (!(lo <= hi)) {
    const bool clamp = n->op == EG_OP_clamp;
    snprintf(reason, size, "%s %g > %s %g: ReluMinMax needs min_value <= max_value",
             clamp ? "min" : "min_val", (double)lo, clamp ? "max" : "max_val", (double)hi);
    return false;
  }
  return true;
}

static eg_status min_max_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  float lo, hi;
  bool given;
  min_max_bounds(n, &lo, &hi, &given);
  eg_htp_qnn_param p[2] = {eg_htp_qnn_param_f32("min_value", lo), eg_htp_qnn_param_f32("max_value", hi)};
  return lower_unary(L, n, EG_HTP_QNN_OP_RELU_MIN_MAX, p, 2);
}

const eg_htp_builder eg_htp_builder_relu = {"aten.relu -> Relu", 0, float_unary_supports,
                                            relu_lower};
const eg_htp_builder eg_htp_builder_sigmoid = {"aten.sigmoid -> Sigmoid", 0,
                                               float_unary_supports, sigmoid_lower};
const eg_htp_builder eg_htp_builder_tanh = {"aten.tanh -> Tanh", 0, float_unary_supports,
                                            tanh_lower};
const eg_htp_builder eg_htp_builder_hardtanh = {"aten.hardtanh -> ReluMinMax", 0,
                                                min_max_supports, min_max_lower};
const eg_htp_builder eg_htp_builder_clamp = {"aten.clamp -> ReluMinMax", 0, min_max_supports,
                                             min_max_lower};
const eg_htp_builder eg_htp_builder_hardswish = {
    "aten.hardswish -> ElementWiseNeuron(HARD_SWISH)", 0, float_unary_supports, hardswish_lower};
const eg_htp_builder eg_htp_builder_hardsigmoid = {
    "aten.hardsigmoid -> ElementWiseNeuron(HARD_SIGMOID, alpha 1/6, beta 0.5)", 0,
    float_unary_supports, hardsigmoid_lower};
