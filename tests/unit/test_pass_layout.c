/* test_pass_layout.c — pass layout_nhwc (src/compiler/passes/layout_nhwc.c), structurally.
 *
 * Small graphs are written as exported JSON to a temporary directory, loaded (verified), and the
 * pass is called directly with the placement options of a target; the tests check the axis order
 * it gives each value, the conversion nodes it inserts (op, memory_format, position right after
 * the value's definition — after the getitem for a tuple element — sharing, source, name,
 * quantization attributes), tuples element by element (batch norm: rank 4 + two rank 1; group
 * norm: rank 4 + two [N, G]; max pool with indices: two rank 4; convolution_backward with None
 * elements), the malformed tuple users it rejects with their exact messages, the unread forward
 * input of convolution_backward, and a CPU-only target (nothing inserted). The fixture
 * npu_conv_step (tests/data) checks the conversions of a real training step, and a lowering
 * without the pass must fail cleanly. Numerics are the NPU op tests' and conformance_npu's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/htp/compile/lower.h"
#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_graph.h"
#include "compiler/frontend/frontend.h"
#include "compiler/partition/partition.h"
#include "compiler/passes/pipeline.h"
#include "ops/verify.h"
#include "compiler/compile.h"
#include "compiler/egp_write.h"
#include "program/program.h"
#include "target/targets.h"
#include "util/error.h"

static char tmpdir[64];

/* ---- graphs ---- */

/* Writes NAME.safetensors with F32 tensors "w4" [4,3,3,3] and "c4a".."c4d" [4] (bn / gn
 * parameters; all 0.5 + i), and NAME.json from its parts; loads it (the loader verifies). */
static eg_graph *load(const char *name, const char *values, const char *inputs,
                      const char *statics, const char *nodes, const char *outputs) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s.safetensors", tmpdir, name);
  char header[512] = "{\"w4\":{\"dtype\":\"F32\",\"shape\":[4,3,3,3],\"data_offsets\":[0,432]},"
                     "\"c4a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[432,448]},"
                     "\"c4b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[448,464]},"
                     "\"c4c\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[464,480]},"
                     "\"c4d\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[480,496]}}";
  size_t hl = strlen(header);
  while (hl % 8) header[hl++] = ' ';
  header[hl] = '\0';
  FILE *f = fopen(path, "wb");
  EG_CHECK(f != NULL);
  if (!f) return NULL;
  uint64_t n = hl;
  fwrite(&n, 8, 1, f);
  fwrite(header, 1, hl, f);
  for (int i = 0; i < 124; i++) {
    float v = 0.5f + (float)i;
    fwrite(&v, 4, 1, f);
  }
  fclose(f);
  snprintf(path, sizeof path, "%s.safetensors", name);
  return eg_test_graph_json(tmpdir, name, path, values, inputs, statics, nodes, outputs);
}

static eg_status run_pass(eg_graph *g, const char *soc) {
  eg_partition_options opt = {.target = eg_target_find(soc)};
  eg_status s = eg_place_graph(g, &opt); /* pass place, which layout_nhwc reads */
  return s == EG_OK ? eg_pass_layout_nhwc(g, &opt) : s;
}

/* ---- inspecting ---- */

static bool is_nhwc(const eg_graph *g, int32_t v) { return g->values[v].axes == EG_AXES_NHWC; }

/* Node i is a conversion clone of value `from` to order `to`, serving node `source`. */
static bool is_conversion(const eg_graph *g, int32_t i, int32_t from, eg_axis_order to,
                          const char *source) {
  if (i < 0 || i >= g->n_nodes) return false;
  const eg_node *n = &g->nodes[i];
  const eg_arg *mf = eg_node_arg(n, -1, "memory_format");
  return n->op == EG_OP_clone && n->n_args == 1 && n->args[0].kind == EG_ARG_VALUE &&
         n->args[0].value == from && mf && mf->kind == EG_ARG_MEMORY_FORMAT &&
         strcmp(mf->str, to == EG_AXES_NHWC ? "channels_last" : "contiguous_format") == 0 &&
         n->output >= 0 && g->values[n->output].axes == to && n->source &&
         strcmp(n->source, source) == 0;
}

/* ---- tuples element by element ---- */

/* x -> native_batch_norm (eval) -> getitem 0 -> two views (NCHW-only): one conversion, right
 * after the getitem, read by both views; element 0 / its getitem NHWC, ranks 1 traced. */
#define BN_VALUES                                                                               \
  T(0, "[2, 4, 5, 5]") "," T(1, "[4]") "," T(2, "[4]") "," T(3, "[4]") "," T(4, "[4]") ","     \
  TUPLE(5, "[6, 7, 8]") "," T(6, "[2, 4, 5, 5]") "," T(7, "[0]") "," T(8, "[0]") ","             \
  T(9, "[2, 4, 5, 5]") "," T(10, "[2, 100]") "," T(11, "[8, 25]")
#define BN_STATICS IN("c4a", 1) "," IN("c4b", 2) "," IN("c4c", 3) "," IN("c4d", 4)
#define BN_NODES                                                                                \
  NODE("native_batch_norm", "aten.native_batch_norm.default",                                   \
       "[{\"value\": 0}, {\"value\": 1}, {\"value\": 2}, {\"value\": 3}, {\"value\": 4}, "      \
       "false, {\"float\": 0.1}, {\"float\": 1e-05}]", 5) ","                              \
  NODE("getitem", "getitem", "[{\"value\": 5}, 0]", 9) ","                                      \
  NODE("view", "aten.view.default", "[{\"value\": 9}, [2, 100]]", 10) ","                       \
  NODE("view_1", "aten.view.default", "[{\"value\": 9}, [8, 25]]", 11)

static eg_graph *bn_graph(const char *name) {
  return load(name, BN_VALUES, IN("x", 0), BN_STATICS, BN_NODES, IN("a", 10) "," IN("b", 11));
}

static void test_batch_norm_shared_conversion(void) {
  eg_graph *g = bn_graph("bn");
  if (!g) return;
  const int32_t n0 = g->n_nodes;
  eg_status s = run_pass(g, "SM8650");
  EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
  EG_CHECK(g->n_nodes == n0 + 1 && eg_test_count_op(g, EG_OP_clone) == 1);
  EG_CHECK(is_nhwc(g, 0) && is_nhwc(g, 6) && is_nhwc(g, 9));
  EG_CHECK(!is_nhwc(g, 7) && !is_nhwc(g, 8));   /* rank-1 statistics */
  const int32_t gi = eg_test_node_named(g, "getitem");
  EG_CHECK(is_conversion(g, gi + 1, 9, EG_AXES_TRACED, "view"));
  const int32_t c = gi + 1 < g->n_nodes ? g->nodes[gi + 1].output : -1;
  EG_CHECK(c >= 0 && strcmp(g->nodes[gi + 1].name, "getitem_nchw") == 0);
  const int32_t v = eg_test_node_named(g, "view"), v1 = eg_test_node_named(g, "view_1");
  EG_CHECK(v >= 0 && g->nodes[v].args[0].value == c);
  EG_CHECK(v1 >= 0 && g->nodes[v1].args[0].value == c);
  EG_CHECK(!is_nhwc(g, 10) && !is_nhwc(g, 11));
  EG_CHECK(eg_graph_verify(g) == EG_OK);
  eg_graph_destroy(g);
}

/* The conversion's quantization attributes are the converted element's: from the getitem's
 * result, or (when it has none) from the element it names — not from element 0's. */
static void test_conversion_quant_from_element(void) {
  static const double s_elem[1] = {0.25}, s_other[1] = {0.5}, s_item[1] = {0.125};
  static const int64_t zp[1] = {3};
  const eg_quant q_elem = {EG_DTYPE_INT8, -1, 1, s_elem, zp, -128, 127};
  const eg_quant q_other = {EG_DTYPE_INT8, -1, 1, s_other, zp, -128, 127};
  const eg_quant q_item = {EG_DTYPE_UINT8, -1, 1, s_item, zp, 0, 255};
  for (int with_item = 0; with_item < 2; with_item++) {
    eg_graph *g = bn_graph(with_item ? "bn_q_item" : "bn_q_elem");
    if (!g) return;
    g->values[6].quant = &q_elem;   /* element 0, converted through its getitem */
    g->values[7].quant = &q_other;  /* another element */
    if (with_item) g->values[9].quant = &q_item;
    EG_CHECK_MSG(run_pass(g, "SM8650") == EG_OK, "%s", eg_last_error());
    const int32_t gi = eg_test_node_named(g, "getitem");
    const int32_t c = gi >= 0 && gi + 1 < g->n_nodes ? g->nodes[gi + 1].output : -1;
    EG_CHECK(c >= 0 && g->nodes[gi + 1].op == EG_OP_clone);
    if (c >= 0)
      EG_CHECK(eg_quant_equal(g->values[c].quant, with_item ? &q_item : &q_elem) &&
               !eg_quant_equal(g->values[c].quant, &q_other));
    eg_graph_destroy(g);
  }
}

/* native_group_norm: element 0 NHWC, mean / rstd ([N, G], rank 2) traced; max_pool2d with
 * indices: both rank-4 elements NHWC; the pooled getitem feeds a relu (no conversion). */
static void test_group_norm_and_max_pool_elements(void) {
  eg_graph *g = load(
      "gn_pool",
      T(0, "[2, 4, 6, 6]") "," T(1, "[4]") "," T(2, "[4]") "," TUPLE(3, "[4, 5, 6]") ","
      T(4, "[2, 4, 6, 6]") "," T(5, "[2, 2]") "," T(6, "[2, 2]") "," T(7, "[2, 4, 6, 6]") ","
      TUPLE(8, "[9, 10]") "," T(9, "[2, 4, 3, 3]") "," TI(10, "[2, 4, 3, 3]") ","
      T(11, "[2, 4, 3, 3]") "," T(12, "[2, 4, 3, 3]") "," T(13, "[2, 2]"),
      IN("x", 0), IN("c4a", 1) "," IN("c4b", 2),
      NODE("native_group_norm", "aten.native_group_norm.default",
           "[{\"value\": 0}, {\"value\": 1}, {\"value\": 2}, 2, 4, 36, 2, "
           "{\"float\": 1e-05}]", 3) ","
      NODE("getitem", "getitem", "[{\"value\": 3}, 0]", 7) ","
      NODE("getitem_1", "getitem", "[{\"value\": 3}, 1]", 13) ","
      NODE("max_pool2d_with_indices", "aten.max_pool2d_with_indices.default",
           "[{\"value\": 7}, [2, 2], [2, 2]]", 8) ","
      NODE("getitem_2", "getitem", "[{\"value\": 8}, 0]", 11) ","
      NODE("relu", "aten.relu.default", "[{\"value\": 11}]", 12),
      IN("y", 12) "," IN("m", 13));
  if (!g) return;
  const int32_t n0 = g->n_nodes;
  EG_CHECK_MSG(run_pass(g, "SM8650") == EG_OK, "%s", eg_last_error());
  /* getitem_1 (mean) is a graph output: group norm's builder declines, so it is a CPU node;
   * the max pool reads its element 0 on the NPU */
  const int32_t gn = eg_test_node_named(g, "native_group_norm");
  eg_partition_options opt = {.target = eg_target_find("SM8650")};
  eg_partitioning parts;
  EG_CHECK(eg_partition_graph(g, &opt, &parts) == EG_OK);
  EG_CHECK(gn >= 0 && !parts.nodes[gn].npu);
  eg_partitioning_free(&parts);
  EG_CHECK(is_nhwc(g, 7));                        /* a CPU getitem read by an NPU pool */
  EG_CHECK(!is_nhwc(g, 4) && !is_nhwc(g, 5) && !is_nhwc(g, 6) && !is_nhwc(g, 13));
  EG_CHECK(is_nhwc(g, 9) && is_nhwc(g, 10) && is_nhwc(g, 11) && is_nhwc(g, 12));
  EG_CHECK(g->n_nodes == n0);                    /* nothing to convert */
  eg_graph_destroy(g);

  /* the same group norm alone on the NPU (mean unread): element 0 NHWC, [N, G] ones traced */
  g = load("gn", T(0, "[2, 4, 6, 6]") "," T(1, "[4]") "," T(2, "[4]") "," TUPLE(3, "[4, 5, 6]") ","
           T(4, "[2, 4, 6, 6]") "," T(5, "[2, 2]") "," T(6, "[2, 2]") "," T(7, "[2, 4, 6, 6]"),
           IN("x", 0), IN("c4a", 1) "," IN("c4b", 2),
           NODE("native_group_norm", "aten.native_group_norm.default",
                "[{\"value\": 0}, {\"value\": 1}, {\"value\": 2}, 2, 4, 36, 2, "
           "{\"float\": 1e-05}]", 3) ","
           NODE("getitem", "getitem", "[{\"value\": 3}, 0]", 7),
           IN("y", 7));
  if (!g) return;
  EG_CHECK_MSG(run_pass(g, "SM8650") == EG_OK, "%s", eg_last_error());
  EG_CHECK(is_nhwc(g, 0) && is_nhwc(g, 4) && is_nhwc(g, 7));
  EG_CHECK(!is_nhwc(g, 5) && !is_nhwc(g, 6));
  eg_graph_destroy(g);
}

/* gy, x -> convolution_backward [T, F, F] -> (grad_input, None, None) -> view. */
static eg_graph *conv_bwd_graph(void) {
  return load(
      "conv_bwd",
      T(0, "[2, 4, 6, 6]") "," T(1, "[2, 3, 6, 6]") "," T(2, "[4, 3, 3, 3]") ","
      TUPLE(3, "[4, null, null]") "," T(4, "[2, 3, 6, 6]") "," T(5, "[2, 3, 6, 6]") ","
      T(6, "[2, 3, 6, 6]"),
      IN("gy", 0) "," IN("x", 1), IN("w4", 2),
      NODE("convolution_backward", "aten.convolution_backward.default",
           "[{\"value\": 0}, {\"value\": 1}, {\"value\": 2}, [4], [1, 1], [1, 1], [1, 1], false, "
           "[0, 0], 1, [true, false, false]]", 3) ","
      NODE("getitem", "getitem", "[{\"value\": 3}, 0]", 5) ","
      NODE("getitem_1", "getitem", "[{\"value\": 3}, 1]", null) ","
      NODE("getitem_2", "getitem", "[{\"value\": 3}, 2]", null) ","
      NODE("view", "aten.view.default", "[{\"value\": 5}, [2, 3, 6, 6]]", 6),
      IN("gx", 6));
}

/* convolution_backward's forward input x (argument 1) is read by nothing else: no order, no
 * conversion; grad_output and grad_input NHWC; the None elements' getitems are skipped. */
static void test_conv_backward_none_and_unread_input(void) {
  eg_graph *g = conv_bwd_graph();
  if (!g) return;
  const int32_t n0 = g->n_nodes;
  EG_CHECK_MSG(run_pass(g, "SM8450") == EG_OK, "%s", eg_last_error());
  EG_CHECK(is_nhwc(g, 0) && is_nhwc(g, 4) && is_nhwc(g, 5));
  EG_CHECK(!is_nhwc(g, 1));                      /* the unread forward input */
  EG_CHECK(g->n_nodes == n0 + 1 && eg_test_count_op(g, EG_OP_clone) == 1);
  const int32_t gi = eg_test_node_named(g, "getitem");   /* after getitem, before getitem_1 */
  EG_CHECK(is_conversion(g, gi + 1, 5, EG_AXES_TRACED, "view"));
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == EG_OP_clone) EG_CHECK(g->nodes[i].args[0].value != 1);
  /* the whole compile lowers it: grad_output crosses as NHWC, x never enters the partition */
  eg_program p;
  eg_partition_options opt = {.target = eg_target_find("SM8450")};
  eg_graph *g2 = conv_bwd_graph();
  if (g2 && eg_program_build(g2, &opt, &p) == EG_OK) {
    EG_CHECK(p.parts.n_partitions == 1);
    const eg_lowered *hp = &p.lowered[0];
    EG_CHECK(hp->n_inputs == 1 && hp->inputs[0].value == 0 && hp->inputs[0].nhwc);
    eg_program_free(&p);
  } else {
    EG_CHECK_MSG(false, "%s", eg_last_error());
  }
  eg_graph_destroy(g2);
  eg_graph_destroy(g);
}

/* ---- malformed tuple users ---- */

static void test_getitem_index_out_of_range(void) {
  eg_graph *g = bn_graph("bn_bad_index");
  if (!g) return;
  const int32_t gi = eg_test_node_named(g, "getitem");
  if (gi >= 0) g->nodes[gi].args[1].i = 3; /* after verification: the pass checks by itself */
  EG_CHECK(run_pass(g, "SM8650") == EG_ERR_INVALID);
  EG_CHECK_MSG(strcmp(eg_last_error(), "node getitem: index 3 out of range [0, 3) of tuple "
                      "native_batch_norm") == 0, "%s", eg_last_error());
  EG_CHECK(eg_test_count_op(g, EG_OP_clone) == 0);
  eg_graph_destroy(g);
}

static void test_tuple_read_by_non_getitem(void) {
  eg_graph *g = bn_graph("bn_bad_user");
  if (!g) return;
  const int32_t v = eg_test_node_named(g, "view");
  if (v >= 0) g->nodes[v].args[0].value = 5; /* the tuple itself */
  EG_CHECK(run_pass(g, "SM8650") == EG_ERR_INVALID);
  EG_CHECK_MSG(strcmp(eg_last_error(), "node view: reads tuple native_batch_norm but is "
                      "aten.view.default: only getitem takes a tuple (layout_nhwc lays tuples "
                      "out element by element)") == 0, "%s", eg_last_error());
  eg_graph_destroy(g);
}

/* ---- orders meeting ---- */

/* Values 0-2 and the node of x [2, 3, 4, 4] convolved with w4 (pad 1) into [2, 4, 4, 4]. */
#define CONV_VALUES T(0, "[2, 3, 4, 4]") "," T(1, "[4, 3, 3, 3]") "," T(2, "[2, 4, 4, 4]")
#define CONV_NODE                                                                             \
  NODE("convolution", "aten.convolution.default",                                              \
       "[{\"value\": 0}, {\"value\": 1}, null, [1, 1], [1, 1], [1, 1], false, [0, 0], 1]", 2)

/* conv -> relu (FOLLOW: NHWC); view [2,4,4,4]->[2,64]->[2,4,4,4] (traced); add(relu, view_1):
 * NHWC wins, the view's result is converted to channels_last right after it. */
static void test_mixed_follow(void) {
  eg_graph *g = load(
      "mixed",
      CONV_VALUES ","
      T(3, "[2, 4, 4, 4]") "," T(4, "[2, 64]") "," T(5, "[2, 4, 4, 4]") "," T(6, "[2, 4, 4, 4]"),
      IN("x", 0), IN("w4", 1),
      CONV_NODE ","
      NODE("relu", "aten.relu.default", "[{\"value\": 2}]", 3) ","
      NODE("view", "aten.view.default", "[{\"value\": 3}, [2, 64]]", 4) ","
      NODE("view_1", "aten.view.default", "[{\"value\": 4}, [2, 4, 4, 4]]", 5) ","
      NODE("add", "aten.add.Tensor", "[{\"value\": 3}, {\"value\": 5}]", 6),
      IN("y", 6));
  if (!g) return;
  EG_CHECK_MSG(run_pass(g, "SM8650") == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_test_count_op(g, EG_OP_clone) == 2);
  EG_CHECK(is_nhwc(g, 2) && is_nhwc(g, 3) && !is_nhwc(g, 5) && is_nhwc(g, 6));
  EG_CHECK(is_conversion(g, eg_test_node_named(g, "relu") + 1, 3, EG_AXES_TRACED, "view"));
  EG_CHECK(is_conversion(g, eg_test_node_named(g, "view_1") + 1, 5, EG_AXES_NHWC, "add"));
  const int32_t add = eg_test_node_named(g, "add");
  EG_CHECK(add >= 0 && g->nodes[add].args[0].value == 3 &&
           g->nodes[add].args[1].value == g->nodes[eg_test_node_named(g, "view_1") + 1].output);
  EG_CHECK(strcmp(g->nodes[eg_test_node_named(g, "view_1") + 1].name, "view_1_nhwc") == 0);
  eg_graph_destroy(g);
}

/* conv -> OP(grad, conv's result), an activation's backward: NHWC with no conversion, the free
 * grad taking NHWC too. */
#define ACT_BACKWARD_GRAPH(op)                                                                 \
  load(op, CONV_VALUES "," T(3, "[2, 4, 4, 4]") "," T(4, "[2, 4, 4, 4]"),                      \
       IN("x", 0) "," IN("g", 3), IN("w4", 1),                                                 \
       CONV_NODE "," NODE(op, "aten." op ".default", "[{\"value\": 3}, {\"value\": 2}]", 4), \
       IN("y", 4))

/* silu_backward, hardswish_backward, hardsigmoid_backward and the hard activations after a conv
 * FOLLOW, as silu does (EfficientNet's backward of every SiLU after a batch norm, MobileNetV3's
 * hardswish and SE hardsigmoid): no conversion. */
static void test_activations_follow(void) {
  eg_graph *gs[3] = {ACT_BACKWARD_GRAPH("silu_backward"), ACT_BACKWARD_GRAPH("hardswish_backward"),
                     ACT_BACKWARD_GRAPH("hardsigmoid_backward")};
  for (int k = 0; k < 3; k++) {
    if (!gs[k]) continue;
    EG_CHECK_MSG(run_pass(gs[k], "SM8650") == EG_OK, "%s", eg_last_error());
    EG_CHECK_MSG(eg_test_count_op(gs[k], EG_OP_clone) == 0 && is_nhwc(gs[k], 2) &&
                     is_nhwc(gs[k], 3) && is_nhwc(gs[k], 4), "backward %d", k);
    eg_graph_destroy(gs[k]);
  }
  eg_graph *g = load("hard", CONV_VALUES "," T(3, "[2, 4, 4, 4]") "," T(4, "[2, 4, 4, 4]"),
                     IN("x", 0), IN("w4", 1),
                     CONV_NODE "," NODE("hardswish", "aten.hardswish.default",
                                        "[{\"value\": 2}]", 3) ","
                     NODE("hardsigmoid", "aten.hardsigmoid.default", "[{\"value\": 3}]", 4),
                     IN("y", 4));
  if (!g) return;
  EG_CHECK_MSG(run_pass(g, "SM8650") == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_test_count_op(g, EG_OP_clone) == 0 && is_nhwc(g, 3) && is_nhwc(g, 4));
  eg_graph_destroy(g);
}

/* conv -> mean over the plane (keepdim) -> expand back over it -> mul with the conv: the
 * rank-4 expand FOLLOWs (NHWC, no conversion); an expand from rank 3 stays traced. */
static void test_expand_follows(void) {
  eg_graph *g = load(
      "expand4",
      CONV_VALUES ","
      T(3, "[2, 4, 1, 1]") "," T(4, "[2, 4, 4, 4]") "," T(5, "[2, 4, 4, 4]") ","
      T(6, "[4, 1, 1]") "," T(7, "[2, 4, 4, 4]"),
      IN("x", 0) "," IN("b", 6), IN("w4", 1),
      CONV_NODE ","
      NODE("mean", "aten.mean.dim", "[{\"value\": 2}, [2, 3], true]", 3) ","
      NODE("expand", "aten.expand.default", "[{\"value\": 3}, [2, 4, 4, 4]]", 4) ","
      NODE("mul", "aten.mul.Tensor", "[{\"value\": 2}, {\"value\": 4}]", 5) ","
      NODE("expand_1", "aten.expand.default", "[{\"value\": 6}, [2, 4, 4, 4]]", 7),
      IN("y", 5) "," IN("z", 7));
  if (!g) return;
  EG_CHECK_MSG(run_pass(g, "SM8650") == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_test_count_op(g, EG_OP_clone) == 0);
  EG_CHECK(is_nhwc(g, 3) && is_nhwc(g, 4) && is_nhwc(g, 5) && !is_nhwc(g, 7));
  eg_graph_destroy(g);
}

/* The training-step fixture on SM8450: the flatten of relu_2 reads a traced copy made right
 * after relu_2; the unflatten _reshape_alias_1 meets NHWC in threshold_backward and is
 * converted right after it; every inserted node is placed on the NPU. */
static void test_conv_step_fixture(void) {
  eg_graph *g = eg_test_fixture("npu_conv_step");
  if (!g) return;
  EG_CHECK_MSG(run_pass(g, "SM8450") == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_test_count_op(g, EG_OP_clone) == 2);
  EG_CHECK(is_conversion(g, eg_test_node_named(g, "relu_2") + 1, 18, EG_AXES_TRACED, "_reshape_alias"));
  EG_CHECK(is_conversion(g, eg_test_node_named(g, "_reshape_alias_1") + 1, 45, EG_AXES_NHWC,
                         "threshold_backward"));
  EG_CHECK(is_nhwc(g, 50) && !is_nhwc(g, 51) && !is_nhwc(g, 52) && is_nhwc(g, 53));
  EG_CHECK(is_nhwc(g, 60) && is_nhwc(g, 61));
  eg_partition_options opt = {.target = eg_target_find("SM8450")};
  eg_partitioning parts;
  EG_CHECK(eg_partition_graph(g, &opt, &parts) == EG_OK);
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == EG_OP_clone)
      EG_CHECK_MSG(parts.nodes[i].npu, "%s: %s", g->nodes[i].name, parts.nodes[i].reason);
  eg_partitioning_free(&parts);
  eg_graph_destroy(g);
}

/* SM8350 (V68, no float path): every node is a CPU node; nothing is laid out or inserted. */
static void test_cpu_only_target(void) {
  eg_graph *g = eg_test_fixture("npu_conv_step");
  if (!g) return;
  const int32_t n0 = g->n_nodes, v0 = g->n_values;
  EG_CHECK_MSG(run_pass(g, "SM8350") == EG_OK, "%s", eg_last_error());
  EG_CHECK(g->n_nodes == n0 && g->n_values == v0 && eg_test_count_op(g, EG_OP_clone) == 0);
  for (int32_t v = 0; v < g->n_values; v++) EG_CHECK(!is_nhwc(g, v));
  eg_graph_destroy(g);
}

/* Lowering without the pass: Conv2d refuses a traced-order input with a clear error. */
static void test_lowering_needs_the_pass(void) {
  eg_graph *g = load(
      "nopass", CONV_VALUES, IN("x", 0), IN("w4", 1), CONV_NODE, IN("y", 2));
  if (!g) return;
  eg_partition_options opt = {.target = eg_target_find("SM8650")};
  eg_partitioning parts;
  EG_CHECK(eg_partition_graph(g, &opt, &parts) == EG_OK);
  EG_CHECK(parts.n_partitions == 1);
  eg_lowered hp;
  EG_CHECK(eg_htp_lower_partition(g, &parts, 0, eg_htp_builders, &hp) == EG_ERR_INVALID);
  EG_CHECK_MSG(strstr(eg_last_error(), "node convolution: input x is held in traced (NCHW) axis "
                      "order: this lowering needs it NHWC") != NULL, "%s", eg_last_error());
  eg_partitioning_free(&parts);
  eg_graph_destroy(g);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_test_layout_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  EG_RUN(test_batch_norm_shared_conversion);
  EG_RUN(test_conversion_quant_from_element);
  EG_RUN(test_group_norm_and_max_pool_elements);
  EG_RUN(test_conv_backward_none_and_unread_input);
  EG_RUN(test_getitem_index_out_of_range);
  EG_RUN(test_tuple_read_by_non_getitem);
  EG_RUN(test_mixed_follow);
  EG_RUN(test_activations_follow);
  EG_RUN(test_expand_follows);
  EG_RUN(test_conv_step_fixture);
  EG_RUN(test_cpu_only_target);
  EG_RUN(test_lowering_needs_the_pass);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
