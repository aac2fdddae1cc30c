/* activation.c — NPU builders for activations.
 *
 *   aten.relu(x)                      -> Relu
 *   aten.hardtanh(x, min, max)        -> ReluMinMax(min_value, max_value)
 *   aten.sigmoid(x)                   -> Sigmoid
 *   aten.tanh(x)                      -> Tanh
 * Constraints: float32 tensors (the float gate in the partitioner already requires an
 * fp16-capable HTP V69+). Layout: the result is held in x's axis order (pass layout_nhwc). */
#include <stdio.h>

#include "backends/htp/builders/builders.h"

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

static eg_status lower_unary(eg_htp_lower *L, const eg_node *n, eg_qnn_op op,
                             const eg_qnn_param *params, int32_t n_params) {
  const int32_t x = eg_htp_arg(n, 0, "self");
  int32_t in, out;
  EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(&eg_htp_ir(L)->values[x]), "result"));
  EG_TRY(eg_htp_input(L, x, &in));
  EG_TRY(eg_htp_define(L, n->output, &out));
  return eg_htp_op(L, op, &in, 1, &out, 1, params, n_params);
}

static eg_status relu_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  return lower_unary(L, n, EG_QNN_OP_RELU, NULL, 0);
}

static eg_status sigmoid_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  return lower_unary(L, n, EG_QNN_OP_SIGMOID, NULL, 0);
}

static eg_status tanh_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  return lower_unary(L, n, EG_QNN_OP_TANH, NULL, 0);
}

static eg_status hardtanh_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  double lo = -1.0, hi = 1.0;
  EG_TRY(eg_arg_opt_scalar(n, 1, "min_val", &lo));
  EG_TRY(eg_arg_opt_scalar(n, 2, "max_val", &hi));
  eg_qnn_param p[2] = {eg_qnn_param_f32("min_value", (float)lo),
                       eg_qnn_param_f32("max_value", (float)hi)};
  return lower_unary(L, n, EG_QNN_OP_RELU_MIN_MAX, p, 2);
}

const eg_npu_builder eg_npu_builder_relu = {"aten.relu -> Relu", 0, float_unary_supports,
                                            relu_lower};
const eg_npu_builder eg_npu_builder_sigmoid = {"aten.sigmoid -> Sigmoid", 0,
                                               float_unary_supports, sigmoid_lower};
const eg_npu_builder eg_npu_builder_tanh = {"aten.tanh -> Tanh", 0, float_unary_supports,
                                            tanh_lower};
const eg_npu_builder eg_npu_builder_hardtanh = {"aten.hardtanh -> ReluMinMax", 0,
                                                float_unary_supports, hardtanh_lower};
