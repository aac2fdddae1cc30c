/* test_htp_ew_pool_norm.c — the NPU builders of elementwise.c, pool.c and norm.c, by the
 * structure of the QNN graphs they emit, plus the executor on the lowered comparison graphs
 * where NaN and exact boundaries matter (numerics against PyTorch are in
 * tests/ops/test_npu_elementwise.py and test_npu_pool_norm.py; the exporter cannot trace NaN
 * inputs).
 *
 * Each test writes a small graph (JSON + safetensors) to a temporary directory, loads it,
 * compiles it for SM8650 (partition + lower) and checks the lowered partition: op sequences,
 * params, the layout of broadcast operands (Reshape / Transpose / permuted constants), folded
 * constants, unique op names, undefined-but-unread tuple elements, and declines. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_lower.h"

/* ---- add / sub / mul / div ---- */

/* add with alpha 2: Multiply(y, STATIC 2) then Add; the second op is named "add_op1". */
static void test_add_alpha(void) {
  compiled c = compile("add_alpha", T(0, "[2, 3, 4, 5]") "," T(1, "[2, 3, 4, 5]") ","
                       T(2, "[2, 3, 4, 5]"), IN("x", 0) "," IN("y", 1), "",
                       NODEK("add", "aten.add.Tensor", "[{\"value\": 0}, {\"value\": 1}]",
                             "{\"alpha\": 2}", 2),
                       IN("z", 2), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, EG_HTP_QNN_OP_ELEMENT_WISE_ADD)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 2) {
    EG_CHECK(scalar_const_is(in_of(g, 0, 1), 2.0f));
    EG_CHECK(dims_are(in_of(g, 0, 1), VALS(1)));
    EG_CHECK(in_of(g, 1, 1) == out_of(g, 0));
    EG_CHECK(dims_are(out_of(g, 1), VALS(2, 4, 5, 3)));
    EG_CHECK(out_of(g, 1)->type == EG_HTP_QNN_TENSOR_APP_READ);
    EG_CHECK(op_named(g, 0, "add") && op_named(g, 1, "add_op1"));
  }
  release(&c);
}

/* rsub(x, 3, alpha 0.5) = 3 - 0.5 x; sub.Scalar(x, 1.5, alpha 2) folds alpha: x - 3. */
static void test_scalar_overloads(void) {
  compiled c = compile("scalars", T(0, "[3, 4]") "," T(1, "[3, 4]") "," T(2, "[3, 4]"),
                       IN("x", 0), "",
                       NODE("rsub", "aten.rsub.Scalar", "[{\"value\": 0}, 3, {\"float\": 0.5}]",
                            1) ","
                       NODE("sub", "aten.sub.Scalar",
                            "[{\"value\": 1}, {\"float\": 1.5}, 2]", 2),
                       IN("z", 2), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT,
                          EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 3) {
    EG_CHECK(scalar_const_is(in_of(g, 0, 1), 0.5f));
    EG_CHECK(scalar_const_is(in_of(g, 1, 0), 3.0f)); /* the number is the minuend */
    EG_CHECK(in_of(g, 1, 1) == out_of(g, 0));
    EG_CHECK(scalar_const_is(in_of(g, 2, 1), 3.0f)); /* alpha * 1.5 */
    EG_CHECK(dims_are(out_of(g, 2), VALS(3, 4)));
  }
  release(&c);
}

/* Lower-rank operands of a rank-4 result move to their NHWC position: [3,1,1] and [5] by
 * Reshape, a runtime [3,4,5] by Transpose [1,2,0], a static [3,4,5] as a permuted constant. */
static void test_broadcast_layouts(void) {
  float s[60];
  for (int i = 0; i < 60; i++) s[i] = 0.5f + (float)i;
  const stat_tensor st[1] = {{"s", "[3, 4, 5]", 60, s}};
  compiled c = compile("bcast", T(0, "[2, 3, 4, 5]") "," T(1, "[3, 1, 1]") "," T(2, "[3, 4, 5]") ","
                       T(3, "[5]") "," T(4, "[3, 4, 5]") "," T(5, "[2, 3, 4, 5]") ","
                       T(6, "[2, 3, 4, 5]") "," T(7, "[2, 3, 4, 5]") "," T(8, "[2, 3, 4, 5]"),
                       IN("x", 0) "," IN("c", 1) "," IN("chw", 2) "," IN("w", 3), IN("s", 4),
                       NODE("add", "aten.add.Tensor", "[{\"value\": 0}, {\"value\": 1}]", 5) ","
                       NODE("mul", "aten.mul.Tensor", "[{\"value\": 5}, {\"value\": 2}]", 6) ","
                       NODE("sub", "aten.sub.Tensor", "[{\"value\": 3}, {\"value\": 6}]", 7) ","
                       NODE("div", "aten.div.Tensor", "[{\"value\": 7}, {\"value\": 4}]", 8),
                       IN("z", 8), 1, st);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_RESHAPE, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, EG_HTP_QNN_OP_TRANSPOSE,
                          EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, EG_HTP_QNN_OP_RESHAPE,
                          EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 7) {
    EG_CHECK(dims_are(in_of(g, 0, 0), VALS(3, 1, 1)));  /* the boundary input keeps ATen dims */
    EG_CHECK(dims_are(out_of(g, 0), VALS(1, 1, 1, 3)));
    EG_CHECK(param_is(g, 2, "perm", VALS(1, 2, 0)));
    EG_CHECK(dims_are(out_of(g, 2), VALS(4, 5, 3)));
    EG_CHECK(dims_are(out_of(g, 4), VALS(1, 1, 5, 1)));
    EG_CHECK(in_of(g, 5, 0) == out_of(g, 4));         /* [5] - x: operand order kept */
    const eg_htp_qnn_tensor *k = in_of(g, 6, 1);
    EG_CHECK(k->type == EG_HTP_QNN_TENSOR_STATIC && dims_are(k, VALS(1, 4, 5, 3)));
    if (k->type == EG_HTP_QNN_TENSOR_STATIC) {
      const float *d = k->data;
      bool ok = true;
      for (int h = 0; h < 4; h++)
        for (int w = 0; w < 5; w++)
          for (int ch = 0; ch < 3; ch++)
            ok = ok && d[(h * 5 + w) * 3 + ch] == s[ch * 20 + h * 5 + w];
      EG_CHECK(ok);
    }
    EG_CHECK(dims_are(out_of(g, 6), VALS(2, 4, 5, 3)));
  }
  release(&c);
}

/* x * g / h with per-sample gates g, h [2, 8, 1, 1] of x [2, 8, 2, 3] (a squeeze-excitation
 * gate): QNN HTP's fast preparation gives every sample sample 0's gate when the gate is the
 * second operand (lower.c, per_sample_gate), so the Multiply takes the gate first and the
 * Divide runs on rank-3 views [2, 6, 8] / [2, 1, 8] between Reshapes; a [1, 8, 1, 1] gate
 * keeps the plain form (H * W != C, so a view with the two swapped would show). Exact on the executor. */
static void test_per_sample_gate(void) {
  compiled c = compile("gate", T(0, "[2, 8, 2, 3]") "," T(1, "[2, 8, 1, 1]") ","
                       T(2, "[2, 8, 1, 1]") "," T(3, "[1, 8, 1, 1]") "," T(4, "[2, 8, 2, 3]") ","
                       T(5, "[2, 8, 2, 3]") "," T(6, "[2, 8, 2, 3]"),
                       IN("x", 0) "," IN("g", 1) "," IN("h", 2) "," IN("k", 3), "",
                       NODE("mul", "aten.mul.Tensor", "[{\"value\": 0}, {\"value\": 1}]", 4) ","
                       NODE("div", "aten.div.Tensor", "[{\"value\": 4}, {\"value\": 2}]", 5) ","
                       NODE("mul_1", "aten.mul.Tensor", "[{\"value\": 5}, {\"value\": 3}]", 6),
                       IN("z", 6), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  int n_mul = 0, n_div = 0;
  for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++) {
    const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
    if (op->type == EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY && n_mul++ == 0) {
      EG_CHECK(dims_are(in_of(g, k, 0), VALS(2, 1, 1, 8)));  /* the gate first */
      EG_CHECK(dims_are(in_of(g, k, 1), VALS(2, 2, 3, 8)));
    } else if (op->type == EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY) {
      EG_CHECK(dims_are(in_of(g, k, 0), VALS(2, 2, 3, 8)));  /* [1, 1, 1, 8]: as written */
      EG_CHECK(dims_are(in_of(g, k, 1), VALS(1, 1, 1, 8)));
    } else if (op->type == EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE) {
      n_div++;
      EG_CHECK(dims_are(in_of(g, k, 0), VALS(2, 6, 8)));
      EG_CHECK(dims_are(in_of(g, k, 1), VALS(2, 1, 8)));
      EG_CHECK(k + 1 < eg_htp_qnn_graph_num_ops(g) &&
               eg_htp_qnn_graph_op(g, k + 1)->type == EG_HTP_QNN_OP_RESHAPE &&
               in_of(g, k + 1, 0) == out_of(g, k) && dims_are(out_of(g, k + 1), VALS(2, 2, 3, 8)));
    }
  }
  EG_CHECK(n_mul == 2 && n_div == 1);
  float x[96], gv[16], hv[16], kv[8], want[96], got[96];
  for (int i = 0; i < 96; i++) x[i] = (float)(i % 37) * 0.25f - 4.0f;
  for (int i = 0; i < 16; i++) gv[i] = 0.1f + (float)i * 0.03f, hv[i] = 1.5f - (float)i * 0.02f;
  for (int i = 0; i < 8; i++) kv[i] = 0.5f + (float)i * 0.125f;
  for (int i = 0; i < 96; i++) { /* x and z channel-last, as the partition holds them */
    const int n = i / 48, ch = i % 8;
    want[i] = x[i] * gv[n * 8 + ch] / hv[n * 8 + ch] * kv[ch];
  }
  float *in[4] = {x, gv, hv, kv};
  if (execute(&c, 0, 4, (const int32_t[]){0, 1, 2, 3}, in, 6, got))
    EG_CHECK(same_values(got, want, 96));
  release(&c);
}

/* x * relu(x) and x / (relu(x) + 1) of a pooled x [2, 16, 1, 1] (a squeeze-excitation block's
 * activations have that shape): QNN HTP's fast preparation gives every sample but the first
 * wrong values when one [N, 1, 1, C] operand comes from the other through a Relu
 * (lower.c, pooled_pair), so the Multiply and Divide run on rank-2 views [2, 16] between
 * Reshapes; x [1, 16, 1, 1] keeps the plain form. Exact on the executor. */
#define POOLED_NODES                                                                          \
  NODE("relu", "aten.relu.default", "[{\"value\": 0}]", 2) ","                                  \
  NODE("mul", "aten.mul.Tensor", "[{\"value\": 0}, {\"value\": 2}]", 3) ","                   \
  NODE("add", "aten.add.Scalar", "[{\"value\": 2}, 1]", 4) ","                                 \
  NODE("div", "aten.div.Tensor", "[{\"value\": 3}, {\"value\": 4}]", 5) ","                   \
  NODE("relu_1", "aten.relu.default", "[{\"value\": 1}]", 6) ","                                \
  NODE("mul_1", "aten.mul.Tensor", "[{\"value\": 1}, {\"value\": 6}]", 7) ","                 \
  NODE("mul_2", "aten.mul.Tensor", "[{\"value\": 5}, {\"value\": 7}]", 8)
static void test_pooled_pair(void) {
  compiled c = compile("pooled", T(0, "[2, 16, 1, 1]") "," T(1, "[1, 16, 1, 1]") ","
                       T(2, "[2, 16, 1, 1]") "," T(3, "[2, 16, 1, 1]") "," T(4, "[2, 16, 1, 1]") ","
                       T(5, "[2, 16, 1, 1]") "," T(6, "[1, 16, 1, 1]") "," T(7, "[1, 16, 1, 1]") ","
                       T(8, "[2, 16, 1, 1]"),
                       IN("x", 0) "," IN("k", 1), "", POOLED_NODES, IN("z", 8), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  int n_views = 0, n_plain = 0;
  for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++) {
    const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
    if (op->type != EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY && op->type != EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE)
      continue;
    if (dims_are(in_of(g, k, 0), VALS(2, 16))) {
      n_views++;
      EG_CHECK(dims_are(in_of(g, k, 1), VALS(2, 16)) && dims_are(out_of(g, k), VALS(2, 16)));
      EG_CHECK(k + 1 < eg_htp_qnn_graph_num_ops(g) &&
               eg_htp_qnn_graph_op(g, k + 1)->type == EG_HTP_QNN_OP_RESHAPE &&
               in_of(g, k + 1, 0) == out_of(g, k));
    } else {
      n_plain++; /* mul_1: N = 1; mul_2: [2, 16, 1, 1] by [1, 16, 1, 1] */
      EG_CHECK(in_of(g, k, 0)->rank == 4);
    }
  }
  EG_CHECK(n_views == 2 && n_plain == 2);
  release(&c);
  /* held in traced order, [2, 16, 1, 1] (a view of a [2, 16] input): the same views */
  c = compile("pooled_traced", T(0, "[2, 16]") "," T(1, "[2, 16, 1, 1]") "," T(2, "[2, 16, 1, 1]") ","
              T(3, "[2, 16, 1, 1]"), IN("x", 0), "",
              NODE("view", "aten.view.default", "[{\"value\": 0}, [2, 16, 1, 1]]", 1) ","
              NODE("relu", "aten.relu.default", "[{\"value\": 1}]", 2) ","
              NODE("mul", "aten.mul.Tensor", "[{\"value\": 1}, {\"value\": 2}]", 3),
              IN("z", 3), 0, NULL);
  g = qg(&c, 0);
  bool traced = false, viewed = false;
  for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++)
    if (eg_htp_qnn_graph_op(g, k)->type == EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY) {
      viewed = dims_are(in_of(g, k, 0), VALS(2, 16)) && dims_are(in_of(g, k, 1), VALS(2, 16));
      traced = k > 0 && dims_are(in_of(g, k - 1, 0), VALS(2, 16, 1, 1));
    }
  EG_CHECK(viewed);
  EG_CHECK_MSG(traced, "the Multiply's operands were not held [2, 16, 1, 1]: the case tests "
               "the other layout only");
  release(&c);
  c = compile("pooled", T(0, "[2, 16, 1, 1]") "," T(1, "[1, 16, 1, 1]") ","
              T(2, "[2, 16, 1, 1]") "," T(3, "[2, 16, 1, 1]") "," T(4, "[2, 16, 1, 1]") ","
              T(5, "[2, 16, 1, 1]") "," T(6, "[1, 16, 1, 1]") "," T(7, "[1, 16, 1, 1]") ","
              T(8, "[2, 16, 1, 1]"),
              IN("x", 0) "," IN("k", 1), "", POOLED_NODES, IN("z", 8), 0, NULL);
  float x[32], k16[16], want[32], got[32];
  for (int i = 0; i < 32; i++) x[i] = (float)(i % 7) * 0.5f - 1.5f;
  for (int i = 0; i < 16; i++) k16[i] = (float)(i % 5) - 2.0f;
  for (int i = 0; i < 32; i++) {
    const float r = x[i] > 0 ? x[i] : 0.0f, kr = k16[i % 16] > 0 ? k16[i % 16] : 0.0f;
    want[i] = x[i] * r / (r + 1.0f) * (k16[i % 16] * kr);
  }
  float *in[2] = {x, k16};
  if (execute(&c, 0, 2, (const int32_t[]){0, 1}, in, 8, got)) EG_CHECK(same_values(got, want, 32));
  release(&c);
}

/* A rank-4 operand of a rank-5 result, and an int64 operand, are declined with reasons. */
static void test_declines(void) {
  compiled c = compile("ew_declines", T(0, "[2, 3, 4, 5]") "," T(1, "[2, 1, 3, 4, 5]") ","
                       T(2, "[2, 2, 3, 4, 5]") "," TI(3, "[4]") "," TI(4, "[4]"),
                       IN("x", 0) "," IN("y", 1) "," IN("i", 3), "",
                       NODE("add", "aten.add.Tensor", "[{\"value\": 1}, {\"value\": 0}]", 2) ","
                       NODE("mul", "aten.mul.Tensor", "[{\"value\": 3}, 2]", 4),
                       IN("z", 2) "," IN("k", 4), 0, NULL);
  EG_CHECK(strstr(reason_of(&c, "add"), "rank-4 operand of a rank-5 result") != NULL);
  EG_CHECK(strstr(reason_of(&c, "mul"), "self is int64") != NULL);
  EG_CHECK(c.ok && c.prog.parts.n_partitions == 0);
  release(&c);
}

/* ---- comparisons ---- */

/* Whether v is a binary16 value (NaN, the infinities and +-0 included): a target that computes
 * in fp16 then reads the constant unchanged. */
static bool fp16_exact(float v) {
  if (isnan(v) || isinf(v) || v == 0.0f) return true;
  const float a = fabsf(v);
  if (a > 65504.0f || a < 0x1p-24f) return false;
  int e;
  frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  const float scaled = ldexpf(a, a >= 0x1p-14f ? 11 - e : 24); /* 11 significant bits, or
                                                                   subnormal steps of 2^-24 */
  return scaled == truncf(scaled);
}

/* Every STATIC float constant a comparison of g reads holds fp16-exact values; *n counts the
 * constants checked, so a test can see the check was not vacuous. */
static bool comparison_constants_fp16_exact(const eg_htp_qnn_graph *g, int *n) {
  *n = 0;
  for (int k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++) {
    const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
    if (!eg_htp_qnn_op_is_comparison(op->type)) continue;
    for (int i = 0; i < op->n_inputs; i++) {
      const eg_htp_qnn_tensor *t = in_of(g, k, i);
      if (t->type != EG_HTP_QNN_TENSOR_STATIC || t->dtype != EG_HTP_QNN_DTYPE_FLOAT_32) continue;
      ++*n;
      const float *d = t->data;
      for (int64_t e = 0; e < eg_htp_qnn_tensor_numel(t); e++)
        if (!fp16_exact(d[e])) return false;
    }
  }
  return true;
}

/* The check itself: the fp16 neighbour rule on values either side of representability. */
static void test_fp16_exact(void) {
  EG_CHECK(fp16_exact(0.0f) && fp16_exact(-0.0f) && fp16_exact(6.0f) && fp16_exact(-1.0f));
  EG_CHECK(fp16_exact(0.5f) && fp16_exact(65504.0f) && fp16_exact(0x1p-24f) &&
           fp16_exact(3.0f * 0x1p-24f) && fp16_exact(2047.0f) && fp16_exact(-INFINITY));
  EG_CHECK(!fp16_exact(nextafterf(0.0f, INFINITY)) && !fp16_exact(nextafterf(6.0f, -INFINITY)));
  EG_CHECK(!fp16_exact(nextafterf(1.0f, -INFINITY)) && !fp16_exact(0.1f) &&
           !fp16_exact(2049.0f) && !fp16_exact(65505.0f) && !fp16_exact(0x1p-25f));
}

/* Two threshold_backward nodes: LessEqual(x, t) + Select(mask, 0, g) each, t the threshold
 * itself (0, 0.5: exact in fp16), with unique op names; run on the executor, NaN / inf / exact
 * thresholds give ATen's results. */
static void test_threshold_backward(void) {
  compiled c = compile("thr", T(0, "[2, 6]") "," T(1, "[2, 6]") "," T(2, "[2, 6]") ","
                       T(3, "[2, 6]"), IN("g", 0) "," IN("x", 1), "",
                       NODE("threshold_backward", "aten.threshold_backward.default",
                            "[{\"value\": 0}, {\"value\": 1}, 0]", 2) ","
                       NODE("threshold_backward_1", "aten.threshold_backward.default",
                            "[{\"value\": 2}, {\"value\": 1}, {\"float\": 0.5}]", 3),
                       IN("z", 3), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT,
                          EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT)));
  if (!g || eg_htp_qnn_graph_num_ops(g) != 4) {
    release(&c);
    return;
  }
  int n_const;
  EG_CHECK(comparison_constants_fp16_exact(g, &n_const) && n_const == 2);
  EG_CHECK(in_of(g, 0, 0) == in_of(g, 2, 0)); /* x, compared as in[0] */
  EG_CHECK(scalar_const_is(in_of(g, 0, 1), 0.0f));
  EG_CHECK(scalar_const_is(in_of(g, 2, 1), 0.5f));
  EG_CHECK(out_of(g, 0)->dtype == EG_HTP_QNN_DTYPE_BOOL_8 &&
           out_of(g, 0)->type == EG_HTP_QNN_TENSOR_NATIVE);
  EG_CHECK(scalar_const_is(in_of(g, 1, 1), 0.0f));
  EG_CHECK(op_named(g, 0, "threshold_backward") && op_named(g, 1, "threshold_backward_op1") &&
           op_named(g, 2, "threshold_backward_1") && op_named(g, 3, "threshold_backward_1_op1"));
  const float inf = INFINITY, nan = NAN;
  float gy[12], x[12] = {nan, -inf, inf, 0.0f, -0.0f, 1e-45f, -1e-45f, 0.5f, 0.49999997f,
                         0.50000006f, 3.0f, -2.0f};
  float want[12], got[12];
  for (int i = 0; i < 12; i++) {
    gy[i] = 1.0f + (float)i;
    const float t1 = x[i] <= 0.0f ? 0.0f : gy[i];
    want[i] = x[i] <= 0.5f ? 0.0f : t1;
  }
  float *in[2] = {gy, x};
  if (execute(&c, 0, 2, (const int32_t[]){0, 1}, in, 3, got)) EG_CHECK(same_values(got, want, 12));
  release(&c);
}

/* hardtanh_backward(g, x, lo, hi) compiled as c: GreaterEqual(x, hi) + Select, then
 * LessEqual(x, lo) + Select, against the bounds themselves; exact at the bounds and for NaN. */
static void check_hardtanh_backward(compiled *c, float lo, float hi) {
  const eg_htp_qnn_graph *g = qg(c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT,
                          EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT)));
  if (!g || eg_htp_qnn_graph_num_ops(g) != 4) {
    release(c);
    return;
  }
  int n_const;
  EG_CHECK(comparison_constants_fp16_exact(g, &n_const) && n_const == 2);
  EG_CHECK(in_of(g, 0, 0) == in_of(g, 2, 0)); /* x, compared as in[0] */
  EG_CHECK(scalar_const_is(in_of(g, 0, 1), hi));
  EG_CHECK(scalar_const_is(in_of(g, 2, 1), lo));
  const float inf = INFINITY, nan = NAN;
  float gy[16], x[16] = {nan, -inf, inf, -1.0f, 1.0f, -0.99999994f, 0.99999994f, -1.0000001f,
                         1.0000001f, 0.0f, -0.0f, 1e-45f, 6.0f, 5.9999995f, 6.0000005f, 0.25f};
  float want[16], got[16];
  for (int i = 0; i < 16; i++) {
    gy[i] = -2.0f - (float)i;
    want[i] = (x[i] <= lo || x[i] >= hi) ? 0.0f : gy[i];
  }
  float *in[2] = {gy, x};
  if (execute(c, 0, 2, (const int32_t[]){0, 1}, in, 2, got)) EG_CHECK(same_values(got, want, 16));
  release(c);
}

/* hardtanh's (-1, 1), ReLU6's (0, 6) (fp16-exact constants), and an infinite bound (-1, -inf):
 * x >= -inf holds for every non-NaN x. */
static void test_hardtanh_backward(void) {
#define HTB(args)                                                                                \
  compile("htb", T(0, "[16]") "," T(1, "[16]") "," T(2, "[16]"), IN("g", 0) "," IN("x", 1), "",  \
          NODE("hardtanh_backward", "aten.hardtanh_backward.default",                            \
               "[{\"value\": 0}, {\"value\": 1}, " args "]", 2),                                 \
          IN("z", 2), 0, NULL)
  compiled c = HTB("-1, {\"float\": 1.0}");
  check_hardtanh_backward(&c, -1.0f, 1.0f);
  c = HTB("0, 6");
  check_hardtanh_backward(&c, 0.0f, 6.0f);
  c = HTB("-1, {\"float\": -1e39}");
  check_hardtanh_backward(&c, -1.0f, -INFINITY);
#undef HTB
}

/* threshold +inf (1e39 as float): LessEqual(x, +inf), every non-NaN x gets 0. */
static void test_threshold_inf(void) {
  compiled c = compile("thr_inf", T(0, "[4]") "," T(1, "[4]") "," T(2, "[4]"),
                       IN("g", 0) "," IN("x", 1), "",
                       NODE("threshold_backward", "aten.threshold_backward.default",
                            "[{\"value\": 0}, {\"value\": 1}, {\"float\": 1e39}]", 2),
                       IN("z", 2), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 2) {
    EG_CHECK(scalar_const_is(in_of(g, 0, 1), INFINITY));
    float gy[4] = {1.0f, 2.0f, 3.0f, 4.0f}, x[4] = {INFINITY, -INFINITY, NAN, 3.0f}, got[4];
    const float want[4] = {0.0f, 0.0f, 3.0f, 0.0f};
    float *in[2] = {gy, x};
    if (execute(&c, 0, 2, (const int32_t[]){0, 1}, in, 2, got))
      EG_CHECK(same_values(got, want, 4));
  }
  release(&c);
}

/* silu = Sigmoid + Multiply(x, sigmoid); sigmoid_backward = Subtract(1, y), Multiply,
 * Multiply; tanh_backward = Multiply(y, y), Subtract, Multiply. */
static void test_composites(void) {
  compiled c = compile("composites", T(0, "[3, 4]") "," T(1, "[3, 4]") "," T(2, "[3, 4]") ","
                       T(3, "[3, 4]") "," T(4, "[3, 4]"), IN("x", 0) "," IN("g", 1), "",
                       NODE("silu", "aten.silu.default", "[{\"value\": 0}]", 2) ","
                       NODE("sigmoid_backward", "aten.sigmoid_backward.default",
                            "[{\"value\": 1}, {\"value\": 2}]", 3) ","
                       NODE("tanh_backward", "aten.tanh_backward.default",
                            "[{\"value\": 3}, {\"value\": 2}]", 4),
                       IN("z", 4), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  /* silu: Sigmoid reads x through the exact clamp to fp16's range (ReluMinMax +-65504) */
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_RELU_MIN_MAX, EG_HTP_QNN_OP_SIGMOID,
                          EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT,
                          EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY,
                          EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT,
                          EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 9) {
    EG_CHECK(param(g, 0, "min_value")->scalar.f32 == -65504.0f &&
             param(g, 0, "max_value")->scalar.f32 == 65504.0f);
    EG_CHECK(in_of(g, 1, 0) == out_of(g, 0));
    EG_CHECK(in_of(g, 2, 1) == out_of(g, 1) && in_of(g, 2, 0) == in_of(g, 0, 0));
    EG_CHECK(scalar_const_is(in_of(g, 3, 0), 1.0f));
    EG_CHECK(in_of(g, 6, 0) == out_of(g, 2) && in_of(g, 6, 1) == out_of(g, 2)); /* y * y */
  }
  release(&c);
}

/* ---- pooling ---- */

/* max pool whose indices getitem has no user: PoolMax2d, the getitem of element 1 lowers to
 * nothing. Ceil mode where ATen drops the last window: FLOOR rounding. */
static void test_max_pool_indices_unread(void) {
  compiled c = compile("maxpool", T(0, "[1, 2, 5, 5]") "," TUPLE(1, "[2, 3]") ","
                       T(2, "[1, 2, 3, 3]") "," TI(3, "[1, 2, 3, 3]") "," T(4, "[1, 2, 3, 3]") ","
                       TI(5, "[1, 2, 3, 3]") "," T(6, "[1, 2, 3, 3]"), IN("x", 0), "",
                       NODE("max_pool2d_with_indices", "aten.max_pool2d_with_indices.default",
                            "[{\"value\": 0}, [2, 2], [2, 2], [1, 1], [1, 1], true]", 1) ","
                       GETITEM("getitem", 1, 0, 4) "," GETITEM("getitem_1", 1, 1, 5) ","
                       NODE("relu", "aten.relu.default", "[{\"value\": 4}]", 6),
                       IN("y", 6), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(c.ok && c.prog.parts.n_partitions == 1);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_POOL_MAX_2D, EG_HTP_QNN_OP_RELU)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 2) {
    EG_CHECK(param_is(g, 0, "filter_size", VALS(2, 2)));
    EG_CHECK(param_is(g, 0, "stride", VALS(2, 2)));
    EG_CHECK(param_is(g, 0, "pad_amount", VALS(1, 1, 1, 1)));
    EG_CHECK(param(g, 0, "rounding_mode") && param(g, 0, "rounding_mode")->scalar.u32 == 0);
    EG_CHECK(dims_are(out_of(g, 0), VALS(1, 3, 3, 2)));
    EG_CHECK(out_of(g, 0)->type == EG_HTP_QNN_TENSOR_NATIVE);
  }
  release(&c);
}

/* The same pool with its indices as a graph output: PoolMax2d, then per tap but the last (the
 * innermost fallback) a StridedSlice of the input, its comparison with the maxima and an INT_32
 * Select, the first tap's writing the indices (held NHWC as INT_32). No padding: no Pad. */
static void test_max_pool_indices_read(void) {
  compiled c = compile("maxpool_idx", T(0, "[1, 2, 4, 4]") "," TUPLE(1, "[2, 3]") ","
                       T(2, "[1, 2, 2, 2]") "," TI(3, "[1, 2, 2, 2]") "," T(4, "[1, 2, 2, 2]") ","
                       TI(5, "[1, 2, 2, 2]"), IN("x", 0), "",
                       NODE("max_pool2d_with_indices", "aten.max_pool2d_with_indices.default",
                            "[{\"value\": 0}, [2, 2]]", 1) ","
                       GETITEM("getitem", 1, 0, 4) "," GETITEM("getitem_1", 1, 1, 5),
                       IN("y", 4) "," IN("i", 5), 0, NULL);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(c.ok && c.prog.parts.n_partitions == 1);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_POOL_MAX_2D, EG_HTP_QNN_OP_STRIDED_SLICE,
                          EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT,
                          EG_HTP_QNN_OP_STRIDED_SLICE, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL,
                          EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, EG_HTP_QNN_OP_STRIDED_SLICE,
                          EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 10) {
    EG_CHECK(param_is(g, 1, "ranges", VALS(0, 1, 1, 1, 4, 2, 0, 3, 2, 0, 2, 1))); /* tap (1, 0) */
    EG_CHECK(param_is(g, 7, "ranges", VALS(0, 1, 1, 0, 3, 2, 0, 3, 2, 0, 2, 1))); /* tap (0, 0) */
    EG_CHECK(out_of(g, 9)->dtype == EG_HTP_QNN_DTYPE_INT_32);
    EG_CHECK(dims_are(out_of(g, 9), VALS(1, 2, 2, 2)));
    EG_CHECK(out_of(g, 9)->type == EG_HTP_QNN_TENSOR_APP_READ);
  }
  release(&c);
}

/* avg_pool2d(3, 2, 1, ceil_mode, count_include_pad=False) on 6x8: CEIL in H (ATen keeps a
 * 4th window), W too; count_pad_for_edges false. Adaptive pools: 1x1 -> ReduceMean over H, W;
 * 8x9 -> 2x3 -> PoolAvg2d(4x3). */
static void test_avg_pools(void) {
  compiled c = compile("avgpool", T(0, "[1, 2, 6, 8]") "," T(1, "[1, 2, 4, 5]") ","
                       T(2, "[1, 2, 8, 9]") "," T(3, "[1, 2, 1, 1]") "," T(4, "[1, 2, 2, 3]"),
                       IN("x", 0) "," IN("u", 2), "",
                       NODE("avg_pool2d", "aten.avg_pool2d.default",
                            "[{\"value\": 0}, [3, 3], [2, 2], [1, 1], true, false]", 1) ","
                       NODE("_adaptive_avg_pool2d", "aten._adaptive_avg_pool2d.default",
                            "[{\"value\": 2}, [1, 1]]", 3) ","
                       NODE("_adaptive_avg_pool2d_1", "aten._adaptive_avg_pool2d.default",
                            "[{\"value\": 2}, [2, 3]]", 4),
                       IN("y", 1) "," IN("m", 3) "," IN("a", 4), 0, NULL);
  EG_CHECK(c.ok && c.prog.parts.n_partitions == 3); /* no edges between the three pools */
  const eg_htp_qnn_graph *g0 = qg(&c, 0), *g1 = qg(&c, 1), *g2 = qg(&c, 2);
  EG_CHECK(ops_are(g0, OPS(EG_HTP_QNN_OP_POOL_AVG_2D)));
  EG_CHECK(ops_are(g1, OPS(EG_HTP_QNN_OP_REDUCE_MEAN)));
  EG_CHECK(ops_are(g2, OPS(EG_HTP_QNN_OP_POOL_AVG_2D)));
  if (g0 && eg_htp_qnn_graph_num_ops(g0) == 1) {
    /* CEIL as FLOOR over uncounted end padding (QNN HTP computes CEIL windows past the edge
     * wrong): rows 1 + 6 + 2 and cols 1 + 8 + 2 give the 3x3 stride-2 windows' 4x5 output */
    EG_CHECK(param(g0, 0, "rounding_mode")->scalar.u32 == 0);
    EG_CHECK(param_is(g0, 0, "pad_amount", VALS(1, 2, 1, 2)));
    EG_CHECK(param(g0, 0, "count_pad_for_edges")->scalar.b == false);
    EG_CHECK(dims_are(out_of(g0, 0), VALS(1, 4, 5, 2)));
  }
  if (g1 && g2 && eg_htp_qnn_graph_num_ops(g1) == 1 && eg_htp_qnn_graph_num_ops(g2) == 1) {
    EG_CHECK(param_is(g1, 0, "axes", VALS(1, 2)));
    EG_CHECK(param(g1, 0, "keep_dims")->scalar.b);
    EG_CHECK(dims_are(out_of(g1, 0), VALS(1, 1, 1, 2)));
    EG_CHECK(param_is(g2, 0, "filter_size", VALS(4, 3)) && param_is(g2, 0, "stride", VALS(4, 3)));
    EG_CHECK(dims_are(out_of(g2, 0), VALS(1, 2, 3, 2)));
  }
  release(&c);
}

/* ---- normalisation ---- */

/* Eval batch norm with static statistics: one Batchnorm whose STATIC scale and bias are the
 * folded constants; its [0]-shaped statistics getitems lower to nothing. */
static void test_batch_norm_folded(void) {
  const float w[3] = {1.0f, 2.0f, -0.5f}, b[3] = {0.0f, 0.25f, 1.0f};
  const float m[3] = {0.5f, -1.0f, 2.0f}, v[3] = {1.0f, 0.25f, 4.0f};
  const stat_tensor st[4] = {{"w", "[3]", 3, w}, {"b", "[3]", 3, b}, {"m", "[3]", 3, m},
                             {"v", "[3]", 3, v}};
  compiled c = compile("bn", T(0, "[2, 3, 2, 2]") "," T(1, "[3]") "," T(2, "[3]") ","
                       T(3, "[3]") "," T(4, "[3]") "," TUPLE(5, "[6, 7, 8]") ","
                       T(6, "[2, 3, 2, 2]") "," T(7, "[0]") "," T(8, "[0]") ","
                       T(9, "[2, 3, 2, 2]") "," T(10, "[0]") "," T(11, "[0]"),
                       IN("x", 0), IN("w", 1) "," IN("b", 2) "," IN("m", 3) "," IN("v", 4),
                       NODE("native_batch_norm", "aten.native_batch_norm.default",
                            "[{\"value\": 0}, {\"value\": 1}, {\"value\": 2}, {\"value\": 3}, "
                            "{\"value\": 4}, false, {\"float\": 0.1}, {\"float\": 0.001}]", 5) ","
                       GETITEM("getitem", 5, 0, 9) "," GETITEM("getitem_1", 5, 1, 10) ","
                       GETITEM("getitem_2", 5, 2, 11),
                       IN("y", 9), 4, st);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_BATCHNORM)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 1) {
    const eg_htp_qnn_tensor *sc = in_of(g, 0, 1), *bi = in_of(g, 0, 2);
    EG_CHECK(sc->type == EG_HTP_QNN_TENSOR_STATIC && dims_are(sc, VALS(3)));
    EG_CHECK(bi->type == EG_HTP_QNN_TENSOR_STATIC && dims_are(bi, VALS(3)));
    for (int k = 0; k < 3; k++) {
      const float invstd = 1.0f / sqrtf(v[k] + 0.001f), s = invstd * w[k];
      EG_CHECK(((const float *)sc->data)[k] == s);
      EG_CHECK(((const float *)bi->data)[k] == b[k] - m[k] * s);
    }
    EG_CHECK(out_of(g, 0)->type == EG_HTP_QNN_TENSOR_APP_READ);
  }
  release(&c);
}

/* Runtime statistics and a rank-3 input are declined; group norm with runtime gamma/beta and a
 * rank-2 input is one GroupNorm. */
static void test_norm_declines_and_group_norm(void) {
  compiled c = compile("norms", T(0, "[2, 4, 3]") "," T(1, "[4]") "," T(2, "[4]") ","
                       TUPLE(3, "[4, 5, 6]") "," T(4, "[2, 4, 3]") "," T(5, "[0]") ","
                       T(6, "[0]") "," T(7, "[2, 4, 3]") "," T(8, "[5, 4]") ","
                       TUPLE(9, "[10, 11, 12]") "," T(10, "[5, 4]") "," T(11, "[5, 2]") ","
                       T(12, "[5, 2]") "," T(13, "[5, 4]"),
                       IN("x", 0) "," IN("m", 1) "," IN("v", 2) "," IN("x2", 8), "",
                       NODE("native_batch_norm", "aten.native_batch_norm.default",
                            "[{\"value\": 0}, null, null, {\"value\": 1}, {\"value\": 2}, false, "
                            "{\"float\": 0.1}, {\"float\": 0.001}]", 3) ","
                       GETITEM("getitem", 3, 0, 7) ","
                       NODE("native_group_norm", "aten.native_group_norm.default",
                            "[{\"value\": 8}, {\"value\": 1}, {\"value\": 2}, 5, 4, 1, 2, "
                            "{\"float\": 0.01}]", 9) ","
                       GETITEM("getitem_1", 9, 0, 13),
                       IN("y", 7) "," IN("z", 13), 0, NULL);
  EG_CHECK(strstr(reason_of(&c, "native_batch_norm"), "rank-3 input") != NULL);
  EG_CHECK(on_npu(&c, "native_group_norm"));
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_GROUP_NORM)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 1) {
    EG_CHECK(in_of(g, 0, 1)->type == EG_HTP_QNN_TENSOR_APP_WRITE);
    EG_CHECK(param(g, 0, "group")->scalar.u32 == 2);
    EG_CHECK(param(g, 0, "epsilon")->scalar.f32 == 0.01f);
    EG_CHECK(dims_are(out_of(g, 0), VALS(5, 4)));
  }
  release(&c);
  c = compile("bn_runtime", T(0, "[2, 4, 3, 3]") "," T(1, "[4]") "," T(2, "[4]") ","
              TUPLE(3, "[4, 5, 6]") "," T(4, "[2, 4, 3, 3]") "," T(5, "[0]") "," T(6, "[0]") ","
              T(7, "[2, 4, 3, 3]"),
              IN("x", 0) "," IN("m", 1) "," IN("v", 2), "",
              NODE("native_batch_norm", "aten.native_batch_norm.default",
                   "[{\"value\": 0}, null, null, {\"value\": 1}, {\"value\": 2}, false, "
                   "{\"float\": 0.1}, {\"float\": 0.001}]", 3) ","
              GETITEM("getitem", 3, 0, 7),
              IN("y", 7), 0, NULL);
  EG_CHECK(strstr(reason_of(&c, "native_batch_norm"), "running_mean is a runtime input") != NULL);
  release(&c);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_test_htp_epn_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  EG_RUN(test_add_alpha);
  EG_RUN(test_scalar_overloads);
  EG_RUN(test_broadcast_layouts);
  EG_RUN(test_per_sample_gate);
  EG_RUN(test_pooled_pair);
  EG_RUN(test_declines);
  EG_RUN(test_fp16_exact);
  EG_RUN(test_threshold_backward);
  EG_RUN(test_hardtanh_backward);
  EG_RUN(test_threshold_inf);
  EG_RUN(test_composites);
  EG_RUN(test_max_pool_indices_unread);
  EG_RUN(test_max_pool_indices_read);
  EG_RUN(test_avg_pools);
  EG_RUN(test_batch_norm_folded);
  EG_RUN(test_norm_declines_and_group_norm);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
