/* test_htp_matmul_shape_reduce.c — the NPU builders of matmul.c, shape.c and reduce.c, by the
 * structure of the QNN graphs they emit (numerics are tested against PyTorch in
 * tests/ops/test_npu_matmul_shape.py and test_npu_reduce.py).
 *
 * Each test writes a small exported graph (JSON + safetensors) to a temporary directory, loads
 * it, compiles it for SM8650 (passes + partition + lower) and checks the lowered partition: the op
 * sequence, Transpose perms, reduce axes, the layout of boundary tensors, aliases that emit no
 * op, and the partitioner's reasons for declined nodes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_lower.h"

/* ---- building and compiling a graph (eg_test_lower.h) ---- */

/* compile() with no static tensor, or one F32 tensor "w" of `w_shape` (JSON list) with w_numel
 * elements 0.5, 1.5, ... */
static compiled compile_w(const char *name, const char *values, const char *inputs,
                          const char *statics, const char *nodes, const char *outputs,
                          const char *w_shape, int w_numel) {
  float *w = calloc((size_t)w_numel + 1, sizeof(float));
  for (int i = 0; w && i < w_numel; i++) w[i] = 0.5f + (float)i;
  const stat_tensor st = {"w", w_shape, w_numel, w};
  compiled c = compile(name, values, inputs, statics, nodes, outputs, w_shape ? 1 : 0, &st);
  free(w);
  return c;
}

/* The compiled graph's layout conversions (layout_nhwc's aten.clone nodes, made by the pass:
 * a source), counted; *name gets the last one's name. */
static int conversions(const compiled *c, const char **name) {
  int k = 0;
  for (int32_t i = 0; c->ok && i < c->prog.graph->n_nodes; i++) {
    const eg_node *n = &c->prog.graph->nodes[i];
    if (n->op != EG_OP_clone || !n->source) continue;
    k++;
    if (name) *name = n->name;
  }
  return k;
}

/* The axis order the compiled graph gives the value node `node` defines. */
static eg_axis_order axes_of(const compiled *c, const char *node) {
  for (int32_t i = 0; c->ok && i < c->prog.graph->n_nodes; i++)
    if (strcmp(c->prog.graph->nodes[i].name, node) == 0)
      return c->prog.graph->values[c->prog.graph->nodes[i].output].axes;
  EG_CHECK_MSG(false, "no node %s", node);
  return EG_AXES_TRACED;
}

/* ---- views ---- */

/* relu -> flatten of a [2,4,3,5] value: relu takes its free input NHWC (layout_nhwc: an
 * activation follows, QNN's activation layout by default), the view needs the traced order, so
 * the pass inserts one conversion (aten.clone, lowered to an NHWC -> NCHW Transpose), then the
 * Reshape. Each QNN op is named after the compiled node it lowers. */
static void test_flatten_of_rank4(void) {
  compiled c = compile_w("flatten", T(0, "[2, 4, 3, 5]") "," T(1, "[2, 4, 3, 5]") ","
                       T(2, "[2, 60]"), IN("x", 0), "",
                       NODE("relu", "aten.relu.default", "[{\"value\": 0}]", 1) ","
                       NODE("view", "aten.view.default", "[{\"value\": 1}, [2, 60]]", 2),
                       IN("y", 2), NULL, 0);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(c.ok && c.prog.parts.n_partitions == 1);
  const char *conv = "";
  EG_CHECK(conversions(&c, &conv) == 1 && axes_of(&c, "relu") == EG_AXES_NHWC);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_RELU, EG_HTP_QNN_OP_TRANSPOSE, EG_HTP_QNN_OP_RESHAPE)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 3) {
    EG_CHECK(param_is(g, 1, "perm", VALS(0, 3, 1, 2)));
    EG_CHECK(dims_are(in_of(g, 0, 0), VALS(2, 3, 5, 4)));  /* the boundary input is NHWC */
    EG_CHECK(dims_are(out_of(g, 1), VALS(2, 4, 3, 5)));   /* NCHW order */
    EG_CHECK(dims_are(out_of(g, 2), VALS(2, 60)));
    EG_CHECK(out_of(g, 2)->type == EG_HTP_QNN_TENSOR_APP_READ);
    EG_CHECK_MSG(strcmp(eg_htp_qnn_graph_op(g, 1)->name, conv) == 0, "%s, conversion %s",
                 eg_htp_qnn_graph_op(g, 1)->name, conv);
    EG_CHECK(strcmp(eg_htp_qnn_graph_op(g, 2)->name, "view") == 0);
  }
  release(&c);
}

/* A flatten of an NHWC [2,8,1,1] value (as after a global pool): NHWC and NCHW orders hold
 * the same bytes, so the conversion layout_nhwc inserts is a Reshape, not a Transpose. */
static void test_flatten_of_unit_spatial(void) {
  compiled c = compile_w("flatten11", T(0, "[2, 8, 1, 1]") "," T(1, "[2, 8, 1, 1]") ","
                       T(2, "[2, 8]"), IN("x", 0), "",
                       NODE("relu", "aten.relu.default", "[{\"value\": 0}]", 1) ","
                       NODE("_reshape_alias", "aten._reshape_alias.default",
                            "[{\"value\": 1}, [2, 8], [8, 1]]", 2),
                       IN("y", 2), NULL, 0);
  EG_CHECK(conversions(&c, NULL) == 1);
  EG_CHECK(ops_are(qg(&c, 0), OPS(EG_HTP_QNN_OP_RELU, EG_HTP_QNN_OP_RESHAPE, EG_HTP_QNN_OP_RESHAPE)));
  release(&c);
}

/* view [2,60] -> [2,4,3,5] (the flatten's backward), relu, then view back to [2,60]: the
 * view's result is in traced order and relu follows it, so no conversion is needed: Reshape,
 * Relu, Reshape, each op named after its node. */
static void test_unflatten_and_back(void) {
  compiled c = compile_w("unflatten", T(0, "[2, 60]") "," T(1, "[2, 4, 3, 5]") ","
                       T(2, "[2, 4, 3, 5]") "," T(3, "[2, 60]"), IN("x", 0), "",
                       NODE("view", "aten.view.default", "[{\"value\": 0}, [2, 4, 3, 5]]", 1) ","
                       NODE("relu", "aten.relu.default", "[{\"value\": 1}]", 2) ","
                       NODE("view_1", "aten.view.default", "[{\"value\": 2}, [2, 60]]", 3),
                       IN("y", 3), NULL, 0);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(conversions(&c, NULL) == 0 && axes_of(&c, "relu") == EG_AXES_TRACED);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_RESHAPE, EG_HTP_QNN_OP_RELU, EG_HTP_QNN_OP_RESHAPE)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 3) {
    EG_CHECK(dims_are(out_of(g, 0), VALS(2, 4, 3, 5)));
    EG_CHECK(dims_are(out_of(g, 1), VALS(2, 4, 3, 5)));
    EG_CHECK(dims_are(out_of(g, 2), VALS(2, 60)));
    EG_CHECK(strcmp(eg_htp_qnn_graph_op(g, 0)->name, "view") == 0);
    EG_CHECK(strcmp(eg_htp_qnn_graph_op(g, 2)->name, "view_1") == 0);
  }
  release(&c);
}

/* permute(0,2,3,1) of a rank-4 value: the lowering composes ATen's perm with both layouts.
 * relu holds its result NHWC (layout_nhwc), the permutes' results are traced, so
 * permute(0,2,3,1) of an NHWC value is the identity on the bytes and, like permute(0,1,2,3),
 * emits no op: the second Relu reads the first one's output tensor. */
static void test_permute(void) {
  compiled c = compile_w("permute", T(0, "[2, 4, 3, 5]") "," T(1, "[2, 4, 3, 5]") ","
                       T(2, "[2, 3, 5, 4]") "," T(3, "[2, 3, 5, 4]") "," T(4, "[2, 3, 5, 4]"),
                       IN("x", 0), "",
                       NODE("relu", "aten.relu.default", "[{\"value\": 0}]", 1) ","
                       NODE("permute", "aten.permute.default", "[{\"value\": 1}, [0, 2, 3, 1]]",
                            2) ","
                       NODE("permute_1", "aten.permute.default",
                            "[{\"value\": 2}, [0, 1, 2, 3]]", 3) ","
                       NODE("relu_1", "aten.relu.default", "[{\"value\": 3}]", 4),
                       IN("y", 4), NULL, 0);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(conversions(&c, NULL) == 0);
  EG_CHECK(axes_of(&c, "relu") == EG_AXES_NHWC && axes_of(&c, "permute") == EG_AXES_TRACED);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_RELU, EG_HTP_QNN_OP_RELU)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 2) {
    EG_CHECK(dims_are(out_of(g, 0), VALS(2, 3, 5, 4)));  /* NHWC of [2,4,3,5] */
    EG_CHECK(in_of(g, 1, 0) == out_of(g, 0));            /* both permutes alias */
    EG_CHECK(dims_are(out_of(g, 1), VALS(2, 3, 5, 4)));  /* traced [2,3,5,4] */
  }
  release(&c);
}

/* ---- copies ---- */

/* detach between two relus emits no op; a detach that leaves the partition is a same-dims
 * Reshape into an APP_READ tensor. */
static void test_detach_alias(void) {
  compiled c = compile_w("detach", T(0, "[3, 4]") "," T(1, "[3, 4]") "," T(2, "[3, 4]") ","
                       T(3, "[3, 4]") "," T(4, "[3, 4]"), IN("x", 0), "",
                       NODE("relu", "aten.relu.default", "[{\"value\": 0}]", 1) ","
                       NODE("detach", "aten.detach.default", "[{\"value\": 1}]", 2) ","
                       NODE("relu_1", "aten.relu.default", "[{\"value\": 2}]", 3) ","
                       NODE("detach_1", "aten.detach.default", "[{\"value\": 3}]", 4),
                       IN("y", 4), NULL, 0);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_RELU, EG_HTP_QNN_OP_RELU, EG_HTP_QNN_OP_RESHAPE)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 3) {
    EG_CHECK(in_of(g, 1, 0) == out_of(g, 0));
    EG_CHECK(out_of(g, 1)->type == EG_HTP_QNN_TENSOR_NATIVE);
    EG_CHECK(out_of(g, 2)->type == EG_HTP_QNN_TENSOR_APP_READ);
  }
  release(&c);
}

/* cat of NCHW tensors along channels: one Concat on the NHWC axis 3. */
static void test_cat_channels(void) {
  compiled c = compile_w("cat", T(0, "[2, 3, 4, 5]") "," T(1, "[2, 2, 4, 5]") ","
                       T(2, "[2, 5, 4, 5]"), IN("a", 0) "," IN("b", 1), "",
                       NODE("cat", "aten.cat.default", "[[{\"value\": 0}, {\"value\": 1}], 1]", 2),
                       IN("y", 2), NULL, 0);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_CONCAT)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 1) {
    const eg_htp_qnn_param *p = eg_htp_qnn_op_param(eg_htp_qnn_graph_op(g, 0), "axis");
    EG_CHECK(p && p->scalar.u32 == 3);
    EG_CHECK(dims_are(out_of(g, 0), VALS(2, 4, 5, 5)));
  }
  release(&c);
}

/* expand that broadcasts is a Tile by the result's dims over the input's; one that adds no
 * element is a Reshape. */
static void test_expand(void) {
  compiled c = compile_w("expand", T(0, "[3, 1]") "," T(1, "[3, 4]") "," T(2, "[1, 3, 1]"),
                       IN("x", 0), "",
                       NODE("expand", "aten.expand.default", "[{\"value\": 0}, [3, 4]]", 1) ","
                       NODE("expand_1", "aten.expand.default", "[{\"value\": 0}, [1, 3, 1]]", 2),
                       IN("y", 1) "," IN("z", 2), NULL, 0);
  const eg_htp_qnn_graph *g = qg(&c, 0); /* the two expands share no value: two partitions */
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_TILE)));
  EG_CHECK(ops_are(qg(&c, 1), OPS(EG_HTP_QNN_OP_RESHAPE)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 1) {
    const eg_htp_qnn_param *p = eg_htp_qnn_op_param(eg_htp_qnn_graph_op(g, 0), "multiples");
    EG_CHECK(p && p->n_values == 2 && p->values.u32[0] == 1 && p->values.u32[1] == 4);
    EG_CHECK(dims_are(out_of(g, 0), VALS(3, 4)));
  }
  release(&c);
}

/* ---- matrix products ---- */

/* nn.Linear with a frozen weight: t(W) is a Transpose of the STATIC weight, addmm with a [3]
 * bias is one MatMul with its bias input. */
static void test_linear(void) {
  compiled c = compile_w("linear", T(0, "[4, 6]") "," T(1, "[3, 6]") "," T(2, "[3]") ","
                       T(3, "[6, 3]") "," T(4, "[4, 3]"), IN("x", 0) "," IN("b", 2),
                       IN("w", 1),
                       NODE("t", "aten.t.default", "[{\"value\": 1}]", 3) ","
                       NODE("addmm", "aten.addmm.default",
                            "[{\"value\": 2}, {\"value\": 0}, {\"value\": 3}]", 4),
                       IN("y", 4), "[3, 6]", 18);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_TRANSPOSE, EG_HTP_QNN_OP_MAT_MUL)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 2) {
    EG_CHECK(in_of(g, 0, 0)->type == EG_HTP_QNN_TENSOR_STATIC);
    EG_CHECK(param_is(g, 0, "perm", VALS(1, 0)));
    EG_CHECK(eg_htp_qnn_graph_op(g, 1)->n_inputs == 3);
    EG_CHECK(dims_are(in_of(g, 1, 2), VALS(3)));
  }
  release(&c);
}

/* addmm(self [4,3], beta 0.5, alpha 2): MatMul, Multiply by STATIC alpha, Multiply self by
 * STATIC beta, Add. */
static void test_addmm_scaled(void) {
  compiled c = compile_w("addmm2", T(0, "[4, 6]") "," T(1, "[6, 3]") "," T(2, "[4, 3]") ","
                       T(3, "[4, 3]"), IN("x", 0) "," IN("w", 1) "," IN("b", 2), "",
                       "{\"name\": \"addmm\", \"target\": \"aten.addmm.default\", \"args\": "
                       "[{\"value\": 2}, {\"value\": 0}, {\"value\": 1}], \"kwargs\": "
                       "{\"beta\": {\"float\": 0.5}, \"alpha\": {\"float\": 2.0}}, \"output\": 3}",
                       IN("y", 3), NULL, 0);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_MAT_MUL, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY,
                          EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, EG_HTP_QNN_OP_ELEMENT_WISE_ADD)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 4) {
    const eg_htp_qnn_tensor *a = in_of(g, 1, 1), *b = in_of(g, 2, 1);
    EG_CHECK(a->type == EG_HTP_QNN_TENSOR_STATIC && a->rank == 0 && *(const float *)a->data == 2.0f);
    EG_CHECK(b->type == EG_HTP_QNN_TENSOR_STATIC && b->rank == 0 && *(const float *)b->data == 0.5f);
  }
  release(&c);
}

/* ---- reductions ---- */

/* sum over [0] of a rank-4 value without keepdim: ReduceSum on NHWC axis 0 leaves [H,W,C];
 * a Transpose [2,0,1] gives ATen's [C,H,W]. Over [2,3] with keepdim: axes [1,2], keep_dims,
 * an NHWC [N,1,1,C] result, no Transpose. */
static void test_reduce_layout(void) {
  compiled c = compile_w("reduce", T(0, "[2, 3, 4, 5]") "," T(1, "[2, 3, 4, 5]") ","
                       T(2, "[3, 4, 5]") "," T(3, "[2, 3, 1, 1]") "," T(4, "[3]"), IN("x", 0), "",
                       NODE("relu", "aten.relu.default", "[{\"value\": 0}]", 1) ","
                       NODE("sum", "aten.sum.dim_IntList", "[{\"value\": 1}, [0]]", 2) ","
                       NODE("mean", "aten.mean.dim", "[{\"value\": 1}, [2, 3], true]", 3) ","
                       NODE("sum_1", "aten.sum.dim_IntList", "[{\"value\": 1}, [0, 2, 3]]", 4),
                       IN("y", 2) "," IN("z", 3) "," IN("w", 4), NULL, 0);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(c.ok && c.prog.parts.n_partitions == 1);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_RELU, EG_HTP_QNN_OP_REDUCE_SUM, EG_HTP_QNN_OP_TRANSPOSE,
                          EG_HTP_QNN_OP_REDUCE_MEAN, EG_HTP_QNN_OP_REDUCE_SUM)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 5) {
    EG_CHECK(param_is(g, 1, "axes", VALS(0)));
    EG_CHECK(dims_are(out_of(g, 1), VALS(4, 5, 3)));
    EG_CHECK(param_is(g, 2, "perm", VALS(2, 0, 1)));
    EG_CHECK(dims_are(out_of(g, 2), VALS(3, 4, 5)));
    EG_CHECK(param_is(g, 3, "axes", VALS(1, 2)));
    EG_CHECK(eg_htp_qnn_op_param(eg_htp_qnn_graph_op(g, 3), "keep_dims")->scalar.b);
    EG_CHECK(dims_are(out_of(g, 3), VALS(2, 1, 1, 3)));
    EG_CHECK(param_is(g, 4, "axes", VALS(0, 1, 2)));
    EG_CHECK(dims_are(out_of(g, 4), VALS(3)));
  }
  release(&c);
}

/* log_softmax on the class dim of [N, C] is LogSoftmax on the last axis; on dim 0 it is
 * declined with the reason. */
static void test_log_softmax(void) {
  compiled c = compile_w("lsm", T(0, "[4, 10]") "," T(1, "[4, 10]") "," T(2, "[4, 10]"),
                       IN("x", 0), "",
                       NODE("_log_softmax", "aten._log_softmax.default",
                            "[{\"value\": 0}, 1, false]", 1) ","
                       NODE("_log_softmax_1", "aten._log_softmax.default",
                            "[{\"value\": 0}, 0, false]", 2),
                       IN("y", 1) "," IN("z", 2), NULL, 0);
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(ops_are(g, OPS(EG_HTP_QNN_OP_LOG_SOFTMAX)));
  if (g && eg_htp_qnn_graph_num_ops(g) == 1) {
    const eg_htp_qnn_param *p = eg_htp_qnn_op_param(eg_htp_qnn_graph_op(g, 0), "axis");
    EG_CHECK(p && p->scalar.u32 == 1);
  }
  EG_CHECK(strstr(reason_of(&c, "_log_softmax_1"), "last axis (1) only") != NULL);
  release(&c);
}

static bool flatten_linear_lsm_op(eg_op op) {
  return op == EG_OP_mm || op == EG_OP_addmm || op == EG_OP_t || op == EG_OP__reshape_alias ||
         op == EG_OP__log_softmax || op == EG_OP_sum_dim_IntList || op == EG_OP_view;
}

/* The committed training step: the flatten, linear layer, log_softmax and their backward run
 * on the NPU in partitions that lower. Placement indexes the compiled graph (prog.graph, after
 * the passes), so each of the model's 13 such nodes is looked up there by name; every such
 * node of the compiled graph, traced or made by a pass, is on the NPU. */
static void test_tiny_step(void) {
  eg_graph *g = NULL;
  EG_CHECK_MSG(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &g) == EG_OK, "%s",
               eg_last_error());
  if (!g) return;
  eg_partition_options opt = {.target = eg_target_find("SM8650")};
  eg_program prog;
  const eg_status s = eg_program_build(g, &opt, &prog);
  EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
  if (s == EG_OK) {
    const eg_graph *cg = prog.graph;
    int traced = 0, found = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
      if (!flatten_linear_lsm_op(g->nodes[i].op)) continue;
      traced++;
      for (int32_t k = 0; k < cg->n_nodes; k++)
        if (strcmp(cg->nodes[k].name, g->nodes[i].name) == 0) {
          found++;
          EG_CHECK_MSG(cg->nodes[k].op == g->nodes[i].op, "%s changed op", g->nodes[i].name);
        }
    }
    EG_CHECK_MSG(traced == 13 && found == traced, "%d traced, %d compiled", traced, found);
    for (int32_t k = 0; k < cg->n_nodes; k++)
      if (flatten_linear_lsm_op(cg->nodes[k].op))
        EG_CHECK_MSG(prog.parts.nodes[k].npu, "%s: %s", cg->nodes[k].name,
                     prog.parts.nodes[k].reason);
    eg_program_free(&prog);
  }
  eg_graph_destroy(g);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_test_htp_msr_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  EG_RUN(test_flatten_of_rank4);
  EG_RUN(test_flatten_of_unit_spatial);
  EG_RUN(test_unflatten_and_back);
  EG_RUN(test_permute);
  EG_RUN(test_detach_alias);
  EG_RUN(test_cat_channels);
  EG_RUN(test_expand);
  EG_RUN(test_linear);
  EG_RUN(test_addmm_scaled);
  EG_RUN(test_reduce_layout);
  EG_RUN(test_log_softmax);
  EG_RUN(test_tiny_step);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
