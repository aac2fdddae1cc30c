/* test_htp_hardact.c — the NPU lowerings of hardswish, hardsigmoid and their backward ops
 * (builders/activation.c, builders/elementwise.c) and QNN's ElementWiseNeuron as edgegrad models
 * it (qnn_graph.c's rule, the executor's kernel).
 *
 * Each lowering is checked by the structure of the QNN graph it emits (op sequence, params, the
 * comparison constants: the kinks -3 and 3 themselves, exact in fp16, and which side of the
 * comparison x is on) and by running it on the executor against edgegrad's CPU kernels
 * (kernels/activation_f32.h, written from ATen's formulas independently of the lowering) on the
 * values where the pieces meet: +-3, a float32 step either side, +-inf, NaN, signed zeros.
 * NaN inputs cannot come through the exporter, hence here. Numbers against PyTorch are in
 * tests/ops/test_npu_activation.py. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_lower.h"
#include "kernels/activation_f32.h"
#include "util/fp16.h"

#define N_X 20

/* The values where hardswish's and hardsigmoid's pieces meet, and IEEE's specials. */
static void kink_values(float *x) {
  const float v[N_X] = {-3.0f, 3.0f, nextafterf(-3.0f, -4.0f), nextafterf(-3.0f, 0.0f),
                        nextafterf(3.0f, 0.0f), nextafterf(3.0f, 4.0f), -INFINITY, INFINITY,
                        NAN, 0.0f, -0.0f, 1e-45f, -2.5f, 2.5f, -100.0f, 100.0f, 0.5f, -1.5f,
                        65504.0f, -65504.0f};
  memcpy(x, v, sizeof v);
}

/* Tensor `t` is a STATIC scalar holding exactly v, a value fp16 holds exactly. */
static bool kink_const(const eg_htp_qnn_tensor *t, float v) {
  return scalar_const_is(t, v) && eg_fp16_to_f32(eg_fp16_from_f32(v)) == v;
}

/* ---- forward: ElementWiseNeuron ---- */

/* hardsigmoid(hardswish(x)): one ElementWiseNeuron each, HARD_SWISH without params,
 * HARD_SIGMOID with alpha 1/6 and beta 0.5; each alone on the executor against the CPU kernel. */
static void test_forward(void) {
  compiled c = compile("fwd", T(0, "[20]") "," T(1, "[20]") "," T(2, "[20]"), IN("x", 0), "",
                       NODE("hardswish", "aten.hardswish.default", "[{\"value\": 0}]", 1) ","
                       NODE("hardsigmoid", "aten.hardsigmoid.default", "[{\"value\": 1}]", 2),
                       IN("s", 2), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(on_npu(&c, "hardswish") && on_npu(&c, "hardsigmoid"));
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_ELEMENT_WISE_NEURON, EG_HTP_QNN_OP_ELEMENT_WISE_NEURON)));
  if (!g || eg_htp_qnn_graph_num_ops(g) != 2) {
    release(&c);
    return;
  }
  const eg_htp_qnn_op_node *hsw = eg_htp_qnn_graph_op(g, 0), *hsig = eg_htp_qnn_graph_op(g, 1);
  EG_CHECK(in_of(g, 1, 0) == out_of(g, 0));
  EG_CHECK(hsw->n_params == 1 && param(g, 0, "operation")->scalar.u32 == 3);
  EG_CHECK(hsig->n_params == 3 && param(g, 1, "operation")->scalar.u32 == 2);
  EG_CHECK(param(g, 1, "alpha")->scalar.f32 == 1.0f / 6.0f &&
           param(g, 1, "beta")->scalar.f32 == 0.5f);
  release(&c);

  /* each alone, run on the executor */
  float x[N_X], got[N_X], want[N_X];
  kink_values(x);
  float *in[1] = {x};
  c = compile("hsw", T(0, "[20]") "," T(1, "[20]"), IN("x", 0), "",
              NODE("hardswish", "aten.hardswish.default", "[{\"value\": 0}]", 1), IN("y", 1), 0,
              NULL);
  eg_hardswish_f32(N_X, x, want);
  if (execute(&c, 0, 1, (const int32_t[]){0}, in, 1, got)) EG_CHECK(same_values(got, want, N_X));
  release(&c);
  c = compile("hsig", T(0, "[20]") "," T(1, "[20]"), IN("x", 0), "",
              NODE("hardsigmoid", "aten.hardsigmoid.default", "[{\"value\": 0}]", 1), IN("y", 1),
              0, NULL);
  eg_hardsigmoid_f32(N_X, x, want);
  /* alpha * x + beta against ATen's (x + 3) / 6: one float32 rounding apart at most */
  if (execute(&c, 0, 1, (const int32_t[]){0}, in, 1, got))
    for (int i = 0; i < N_X; i++)
      EG_CHECK_MSG(isnan(got[i]) ? isnan(want[i]) : fabsf(got[i] - want[i]) <= 0x1p-24f,
                   "hardsigmoid(%g): %g, want %g", (double)x[i], (double)got[i],
                   (double)want[i]);
  release(&c);
}

/* ---- backward: comparisons with the kinks and ElementWiseSelect ---- */

#define BWD(name, target)                                                                      \
  compile(name, T(0, "[20]") "," T(1, "[20]") "," T(2, "[20]"), IN("g", 0) "," IN("x", 1), "", \
          NODE(name, target, "[{\"value\": 0}, {\"value\": 1}]", 2), IN("z", 2), 0, NULL)

/* x <= -3 ? 0 : x >= 3 ? g : g * (x / 3 + 0.5): Divide, Add, Multiply; GreaterEqual(x, 3),
 * Select(., g, mid); LessEqual(x, -3), Select(., 0, .). */
static void test_hardswish_backward(void) {
  compiled c = BWD("hardswish_backward", "aten.hardswish_backward.default");
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE, EG_HTP_QNN_OP_ELEMENT_WISE_ADD,
                          EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL,
                          EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL,
                          EG_HTP_QNN_OP_ELEMENT_WISE_SELECT)));
  if (!g || eg_htp_qnn_graph_num_ops(g) != 7) {
    release(&c);
    return;
  }
  const eg_htp_qnn_tensor *x = in_of(g, 0, 0);
  EG_CHECK(kink_const(in_of(g, 0, 1), 3.0f) && scalar_const_is(in_of(g, 1, 1), 0.5f));
  EG_CHECK(in_of(g, 3, 0) == x && kink_const(in_of(g, 3, 1), 3.0f));
  EG_CHECK(in_of(g, 5, 0) == x && kink_const(in_of(g, 5, 1), -3.0f));
  EG_CHECK(in_of(g, 4, 2) == out_of(g, 2) && in_of(g, 6, 2) == out_of(g, 4));
  EG_CHECK(scalar_const_is(in_of(g, 6, 1), 0.0f));
  float xv[N_X], gy[N_X], got[N_X], want[N_X];
  kink_values(xv);
  for (int i = 0; i < N_X; i++) gy[i] = 1.25f + 0.5f * (float)i;
  eg_hardswish_backward_f32(N_X, gy, xv, want);
  float *in[2] = {gy, xv};
  if (execute(&c, 0, 2, (const int32_t[]){0, 1}, in, 2, got))
    EG_CHECK(same_values(got, want, N_X));
  release(&c);
}

/* (x > -3 && x < 3) ? g * (1/6) : 0: Multiply(g, 1/6); Greater(3, x), Select(., g/6, 0);
 * Greater(x, -3), Select(., ., 0). Strict at +-3, and a NaN x gets 0. */
static void test_hardsigmoid_backward(void) {
  compiled c = BWD("hardsigmoid_backward", "aten.hardsigmoid_backward.default");
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER,
                          EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER,
                          EG_HTP_QNN_OP_ELEMENT_WISE_SELECT)));
  if (!g || eg_htp_qnn_graph_num_ops(g) != 5) {
    release(&c);
    return;
  }
  EG_CHECK(scalar_const_is(in_of(g, 0, 1), 1.0f / 6.0f));
  EG_CHECK(kink_const(in_of(g, 1, 0), 3.0f)); /* 3 > x */
  EG_CHECK(kink_const(in_of(g, 3, 1), -3.0f) && in_of(g, 3, 0) == in_of(g, 1, 1)); /* x > -3 */
  EG_CHECK(in_of(g, 2, 1) == out_of(g, 0) && in_of(g, 4, 1) == out_of(g, 2));
  EG_CHECK(scalar_const_is(in_of(g, 2, 2), 0.0f) && scalar_const_is(in_of(g, 4, 2), 0.0f));
  float xv[N_X], gy[N_X], got[N_X], want[N_X];
  kink_values(xv);
  for (int i = 0; i < N_X; i++) gy[i] = -3.0f + 0.75f * (float)i;
  eg_hardsigmoid_backward_f32(N_X, gy, xv, want);
  float *in[2] = {gy, xv};
  if (execute(&c, 0, 2, (const int32_t[]){0, 1}, in, 2, got))
    EG_CHECK(same_values(got, want, N_X));
  release(&c);
}

/* ---- ElementWiseNeuron's rule ---- */

static eg_status neuron_op(eg_htp_qnn_graph *g, const char *name, int n_params,
                           const eg_htp_qnn_param *params) {
  static const uint32_t dims[2] = {2, 3};
  char out_name[64];
  snprintf(out_name, sizeof out_name, "%s_out", name);
  const eg_htp_qnn_tensor_desc din = {.name = "x", .type = EG_HTP_QNN_TENSOR_APP_WRITE,
                                  .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 2, .dims = dims,
                                  .key = EG_HTP_QNN_KEY_NONE};
  const eg_htp_qnn_tensor_desc dout = {.name = out_name, .type = EG_HTP_QNN_TENSOR_APP_READ,
                                   .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 2, .dims = dims,
                                   .key = EG_HTP_QNN_KEY_NONE};
  int32_t in = -1, out = -1;
  const eg_htp_qnn_tensor *x = NULL;
  for (int32_t i = 0; i < eg_htp_qnn_graph_num_tensors(g); i++)
    if (strcmp(eg_htp_qnn_graph_tensor(g, i)->name, "x") == 0) x = eg_htp_qnn_graph_tensor(g, i);
  if (x)
    in = x->id;
  else
    EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &din, &in) == EG_OK);
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &dout, &out) == EG_OK);
  const eg_htp_qnn_op_desc d = {.name = name, .type = EG_HTP_QNN_OP_ELEMENT_WISE_NEURON, .n_inputs = 1,
                            .inputs = &in, .n_outputs = 1, .outputs = &out,
                            .n_params = n_params, .params = params};
  return eg_htp_qnn_graph_add_op(g, &d, NULL);
}

/* A rejected op: EG_ERR_INVALID, one line "op NAME (ElementWiseNeuron): ..." holding `frag`. */
static void expect_refused(eg_status st, const char *name, const char *frag) {
  const char *msg = eg_last_error();
  char prefix[96];
  snprintf(prefix, sizeof prefix, "op %s (ElementWiseNeuron): ", name);
  EG_CHECK_MSG(st == EG_ERR_INVALID, "%s: status %d (%s)", name, (int)st, msg);
  EG_CHECK_MSG(strncmp(msg, prefix, strlen(prefix)) == 0 && strstr(msg, frag) &&
               !strchr(msg, '\n'), "%s: message '%s', want '%s...%s'", name, msg, prefix, frag);
}

static void test_neuron_rule(void) {
  eg_htp_qnn_graph *g = NULL;
  EG_CHECK(eg_htp_qnn_graph_create("neuron", &g) == EG_OK);
  if (!g) return;
  const eg_htp_qnn_param swish = eg_htp_qnn_param_u32("operation", EG_HTP_QNN_NEURON_HARD_SWISH);
  const eg_htp_qnn_param sig[3] = {eg_htp_qnn_param_u32("operation", EG_HTP_QNN_NEURON_HARD_SIGMOID),
                               eg_htp_qnn_param_f32("alpha", 0.2f), eg_htp_qnn_param_f32("beta", 0.5f)};
  EG_CHECK_MSG(neuron_op(g, "swish", 1, &swish) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(neuron_op(g, "sigmoid", 3, sig) == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_htp_qnn_graph_num_ops(g) == 2);
  if (eg_htp_qnn_graph_num_ops(g) == 2) {
    const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, 1);
    EG_CHECK(op->attrs.neuron.operation == 2 && op->attrs.neuron.alpha == 0.2f &&
             op->attrs.neuron.beta == 0.5f);
  }
  /* ReLU_MIN_MAX (5) is QNN's but not modelled */
  const eg_htp_qnn_param relu = eg_htp_qnn_param_u32("operation", 5);
  expect_refused(neuron_op(g, "relu", 1, &relu), "relu", "operation (5): must be 2 (HARD_SIGMOID)");
  expect_refused(neuron_op(g, "no_op", 0, NULL), "no_op", "param operation: missing");
  const eg_htp_qnn_param swish_alpha[2] = {swish, eg_htp_qnn_param_f32("alpha", 1.0f)};
  expect_refused(neuron_op(g, "swish_alpha", 2, swish_alpha), "swish_alpha",
                 "HARD_SWISH takes no alpha or beta");
  expect_refused(neuron_op(g, "sig_no_beta", 2, sig), "sig_no_beta", "(one missing)");
  const eg_htp_qnn_param sig_nan[3] = {sig[0], sig[1], eg_htp_qnn_param_f32("beta", NAN)};
  expect_refused(neuron_op(g, "sig_nan", 3, sig_nan), "sig_nan", "HARD_SIGMOID needs both, finite");
  const eg_htp_qnn_param sig_int[3] = {sig[0], eg_htp_qnn_param_u32("alpha", 1), sig[2]};
  expect_refused(neuron_op(g, "sig_int", 3, sig_int), "sig_int", "param alpha (scalar uint32)");
  EG_CHECK(eg_htp_qnn_graph_num_ops(g) == 2); /* refused ops leave no trace */
  eg_htp_qnn_graph_destroy(g);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_test_htp_hardact_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  EG_RUN(test_forward);
  EG_RUN(test_hardswish_backward);
  EG_RUN(test_hardsigmoid_backward);
  EG_RUN(test_neuron_rule);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
