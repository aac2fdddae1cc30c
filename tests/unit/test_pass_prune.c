/* test_pass_prune.c — pass prune (src/compiler/passes/prune.c) and the graph edits it and
 * fold_qdq share (src/ir/edit.c), structurally.
 *
 * Small graphs are written as exported JSON (statics in one safetensors file) to a temporary
 * directory and loaded (the loader verifies); the pass is called directly and the result must
 * verify again (eg_graph_verify re-checks every id, so a value left unrenumbered fails it). Cases:
 *   - a dead detach chain goes whole, a live one reading the same value stays; the remaining
 *     values are renumbered (node outputs, arguments, outputs);
 *   - a live chain that is a graph output stays; an unread graph input stays;
 *   - tuples: a tuple with one read getitem stays (its dead getitem goes); a tuple whose only
 *     getitem feeds a dead node goes with it; a later node's list argument (cat) renumbered;
 *   - statics: read ones stay, unread ones and ones only a dead node read are dropped;
 *   - skip lists: a dead node a --skip-node / --skip-op selects stays, and the partitioner then
 *     has no "no node has this name / op" warning for it;
 *   - the exported quant_net (tests/data): make_fx's detach nodes are gone after the pipeline on
 *     SM8650, and with them the activation pair's blocker: its quantize/dequantize pair is
 *     folded (relu's output read by the second convolution directly, quantized);
 *   - eg_graph_fresh_name: a node, input or static name is taken, except the node being
 *     replaced; the caller's extra names are taken too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_graph.h"
#include "compiler/frontend/frontend.h"
#include "ir/edit.h"
#include "compiler/partition/partition.h"
#include "compiler/passes/pipeline.h"
#include "ops/verify.h"
#include "target/targets.h"
#include "util/error.h"

static char tmpdir[64];

/* ---- graphs ---- */

/* Writes NAME.json from its parts (weights: prune.safetensors, float32 [3] tensors "w", "v", "u")
 * and loads it (the loader verifies). */
static eg_graph *load(const char *name, const char *values, const char *inputs,
                      const char *statics, const char *nodes, const char *outputs) {
  return eg_test_graph_json(tmpdir, name, "prune.safetensors", values, inputs, statics, nodes,
                            outputs);
}

static eg_status prune(eg_graph *g, const eg_partition_options *opt) {
  eg_status s = eg_pass_prune(g, opt);
  if (s == EG_OK) s = eg_graph_verify(g);
  EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
  return s;
}

#define UNARY(name, target, in, out) NODE(name, target, "[" V(in) "]", out)
#define DETACH(name, in, out) UNARY(name, "aten.detach.default", in, out)

/* ---- inspecting ---- */

/* The node names of g in order, joined by spaces. */
static const char *names(const eg_graph *g) {
  static char buf[512];
  size_t used = 0;
  buf[0] = '\0';
  for (int32_t i = 0; g && i < g->n_nodes; i++)
    used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", i ? " " : "",
                             g->nodes[i].name);
  return buf;
}

static int32_t out_of(const eg_graph *g, const char *node) {
  const int32_t i = eg_test_find_node(g, node);
  return i < 0 ? -2 : g->nodes[i].output;
}

/* ---- chains ---- */

/* x -> relu -> detach -> detach_1 (dead chain); relu -> neg -> output y. */
static eg_graph *chain_graph(void) {
  return load("chain", T(0, "[2, 3]") "," T(1, "[2, 3]") "," T(2, "[2, 3]") "," T(3, "[2, 3]")
                       "," T(4, "[2, 3]"),
              IN("x", 0), "",
              UNARY("relu", "aten.relu.default", 0, 1) "," DETACH("detach", 1, 2) ","
              DETACH("detach_1", 2, 3) "," UNARY("neg", "aten.neg.default", 1, 4),
              IN("y", 4));
}

static void test_dead_chain_removed(void) {
  eg_graph *g = chain_graph();
  if (!g) return;
  eg_partition_options none = {0};
  if (prune(g, &none) == EG_OK) {
    EG_CHECK_MSG(strcmp(names(g), "relu neg") == 0, "%s", names(g));
    EG_CHECK(g->n_values == 3);
    /* neg's output renumbered 4 -> 2, and the graph output follows it */
    EG_CHECK(out_of(g, "neg") == 2 && g->outputs[0].value == 2);
    EG_CHECK(g->nodes[eg_test_find_node(g, "neg")].args[0].value == out_of(g, "relu"));
  }
  eg_graph_destroy(g);
}

/* x -> detach -> detach_1 = output y; input "unused" read by nothing. */
static void test_live_chain_output_and_unused_input_kept(void) {
  eg_graph *g = load("live", T(0, "[2, 3]") "," T(1, "[4]") "," T(2, "[2, 3]") "," T(3, "[2, 3]"),
                     IN("x", 0) "," IN("unused", 1), "",
                     DETACH("detach", 0, 2) "," DETACH("detach_1", 2, 3), IN("y", 3));
  if (!g) return;
  eg_partition_options none = {0};
  if (prune(g, &none) == EG_OK) {
    EG_CHECK_MSG(strcmp(names(g), "detach detach_1") == 0, "%s", names(g));
    EG_CHECK(g->n_inputs == 2 && strcmp(g->inputs[1].name, "unused") == 0 &&
             g->inputs[1].value == 1 && g->n_values == 4);
    EG_CHECK(g->outputs[0].value == out_of(g, "detach_1"));
  }
  eg_graph_destroy(g);
}

/* ---- tuples ---- */

/* x [2, 5]. split (live tuple, 2 elements): getitem read by neg, getitem_1 dead; split_1 (dead
 * tuple): its getitem_2 read only by the dead detach; cat([x, neg], 1) = output y, a list
 * argument whose neg id moves down when the dead nodes' values go. */
static void test_tuples(void) {
  eg_graph *g = load(
      "tuples",
      T(0, "[2, 5]") "," TUPLE(1, "[2, 3]") "," T(2, "[2, 2]") "," T(3, "[2, 3]") ","
      T(4, "[2, 2]") "," T(5, "[2, 3]") "," TUPLE(6, "[7, 8]") "," T(7, "[2, 1]") ","
      T(8, "[2, 4]") "," T(9, "[2, 1]") "," T(10, "[2, 1]") "," T(11, "[2, 2]") ","
      T(12, "[2, 7]"),
      IN("x", 0), "",
      NODE("split", "aten.split_with_sizes.default", "[" V(0) ", [2, 3], 1]", 1) ","
      NODE("getitem", "getitem", "[" V(1) ", 0]", 4) ","
      NODE("getitem_1", "getitem", "[" V(1) ", 1]", 5) ","
      NODE("split_1", "aten.split_with_sizes.default", "[" V(0) ", [1, 4], 1]", 6) ","
      NODE("getitem_2", "getitem", "[" V(6) ", 0]", 9) ","
      DETACH("detach", 9, 10) ","
      UNARY("neg", "aten.neg.default", 4, 11) ","
      NODE("cat", "aten.cat.default", "[[" V(0) ", " V(11) "], 1]", 12),
      IN("y", 12));
  if (!g) return;
  eg_partition_options none = {0};
  if (prune(g, &none) == EG_OK) {
    EG_CHECK_MSG(strcmp(names(g), "split getitem neg cat") == 0, "%s", names(g));
    /* the live tuple keeps both elements (its node stays); the dead one's three values went */
    const eg_value *tup = &g->values[out_of(g, "split")];
    EG_CHECK(tup->kind == EG_VALUE_TUPLE && tup->n_elems == 2);
    EG_CHECK(g->n_values == 13 - 1 /* getitem_1 */ - 3 /* split_1 */ - 1 - 1);
    const eg_node *cat = &g->nodes[eg_test_find_node(g, "cat")];
    EG_CHECK(cat->args[0].kind == EG_ARG_LIST && cat->args[0].list.items[1].value ==
                                                     out_of(g, "neg"));
    EG_CHECK(g->outputs[0].value == out_of(g, "cat"));
  }
  eg_graph_destroy(g);
}

/* ---- statics ---- */

/* x [3]; statics w (read by add = output), v (read by the dead mul), u (read by nothing). */
static void test_statics(void) {
  eg_graph *g = load("statics",
                     T(0, "[3]") "," T(1, "[3]") "," T(2, "[3]") "," T(3, "[3]") "," T(4, "[3]")
                     "," T(5, "[3]"),
                     IN("x", 0), IN("u", 1) "," IN("v", 2) "," IN("w", 3),
                     NODE("mul", "aten.mul.Tensor", "[" V(0) ", " V(2) "]", 4) ","
                     NODE("add", "aten.add.Tensor", "[" V(0) ", " V(3) "]", 5),
                     IN("y", 5));
  if (!g) return;
  eg_partition_options none = {0};
  if (prune(g, &none) == EG_OK) {
    EG_CHECK_MSG(strcmp(names(g), "add") == 0, "%s", names(g));
    EG_CHECK(g->n_statics == 1 && strcmp(g->statics[0].name, "w") == 0);
    EG_CHECK(g->n_values == 3 && g->statics[0].value == 1 &&
             g->nodes[0].args[1].value == 1 && g->outputs[0].value == 2);
    EG_CHECK(((const float *)g->statics[0].data)[2] == 8.5f);
  }
  eg_graph_destroy(g);
}

/* ---- skip lists ---- */

/* chain_graph pruned with skip list `opt`: the dead chain stays as traced (detach_1, and
 * detach, which it reads), and partitioning it gives no warning about the skip list. */
static void check_skip_keeps_chain(const eg_partition_options *opt) {
  eg_graph *g = chain_graph();
  if (g && prune(g, opt) == EG_OK) {
    EG_CHECK_MSG(strcmp(names(g), "relu detach detach_1 neg") == 0, "%s", names(g));
    eg_partitioning parts;
    EG_CHECK_MSG(eg_partition_graph(g, opt, &parts) == EG_OK, "%s", eg_last_error());
    EG_CHECK(parts.n_warnings == 0);
    for (int32_t k = 0; k < parts.n_warnings; k++) fprintf(stderr, "  %s\n", parts.warnings[k]);
    eg_partitioning_free(&parts);
  }
  eg_graph_destroy(g);
}

static void test_skip_lists_keep_dead_nodes(void) {
  const char *node[] = {"detach_1"}, *op[] = {"aten.detach"};
  eg_partition_options by_name = *eg_test_sm8650(), by_op = *eg_test_sm8650();
  by_name.skip_nodes = node;
  by_name.n_skip_nodes = 1;
  check_skip_keeps_chain(&by_name);
  by_op.skip_ops = op;
  by_op.n_skip_ops = 1;
  check_skip_keeps_chain(&by_op);
}

/* ---- the exported QDQ model ---- */

static void test_quant_net(void) {
  eg_graph *g = NULL;
  EG_CHECK_MSG(eg_graph_load_json(EG_TEST_DATA "/quant_net.json", &g) == EG_OK, "%s",
               eg_last_error());
  if (!g) return;
  EG_CHECK(eg_test_count_op(g, EG_OP_detach) == 6 && eg_test_count_op(g, EG_OP_quantize_per_tensor) == 2);
  EG_CHECK_MSG(eg_passes_run(g, eg_test_sm8650(), NULL, NULL) == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_test_count_op(g, EG_OP_detach) == 0);
  /* the input's pair stays (x is a graph input: rule 2); relu's pair is folded */
  EG_CHECK(eg_test_count_op(g, EG_OP_quantize_per_tensor) == 1 && eg_test_count_op(g, EG_OP_dequantize_self) == 1);
  const int32_t relu = eg_test_find_node(g, "relu"), conv1 = eg_test_find_node(g, "convolution_1");
  EG_CHECK(relu >= 0 && conv1 >= 0);
  if (relu >= 0 && conv1 >= 0) {
    const eg_value *x = &g->values[g->nodes[relu].output];
    EG_CHECK(g->nodes[conv1].args[0].value == g->nodes[relu].output);
    EG_CHECK(x->quant && x->quant->dtype == EG_DTYPE_UINT8 && x->quant->axis == -1);
  }
  eg_graph_destroy(g);
}

/* ---- fresh names ---- */

static bool taken_extra(const void *ctx, const char *name) {
  return strcmp(name, (const char *)ctx) == 0;
}

static void test_fresh_name(void) {
  eg_graph *g = chain_graph();
  if (!g) return;
  const char *n1 = eg_graph_fresh_name(g, "relu", "", NULL, NULL, NULL);
  const char *n2 = eg_graph_fresh_name(g, "relu", "", &g->nodes[0], NULL, NULL);
  const char *n3 = eg_graph_fresh_name(g, "x", "", NULL, NULL, NULL);
  const char *n4 = eg_graph_fresh_name(g, "neg", "_nhwc", NULL, taken_extra, "neg_nhwc");
  const char *n5 = eg_graph_fresh_name(g, "detach", "", NULL, NULL, NULL);
  EG_CHECK(n1 && strcmp(n1, "relu_2") == 0);
  EG_CHECK(n2 && strcmp(n2, "relu") == 0);
  EG_CHECK(n3 && strcmp(n3, "x_2") == 0);
  EG_CHECK(n4 && strcmp(n4, "neg_nhwc_2") == 0);
  /* detach_1 exists as a node name, not as "detach" + "_2" */
  EG_CHECK(n5 && strcmp(n5, "detach_2") == 0);
  eg_graph_destroy(g);
}

static bool write_weights(void) {
  float data[3][3];
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < 3; i++) data[t][i] = 0.5f + (float)(t * 3 + i);
  const char *tnames[] = {"u", "v", "w"};
  eg_safetensors_entry ts[3];
  for (int t = 0; t < 3; t++)
    ts[t] = (eg_safetensors_entry){
        tnames[t], {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {3}, .data = data[t]}};
  char path[128];
  snprintf(path, sizeof path, "%s/prune.safetensors", tmpdir);
  return eg_safetensors_save(path, ts, 3, NULL, 0) == EG_OK;
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_test_prune_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  if (!write_weights()) {
    fprintf(stderr, "could not write %s/prune.safetensors: %s\n", tmpdir, eg_last_error());
    return 1;
  }
  EG_RUN(test_dead_chain_removed);
  EG_RUN(test_live_chain_output_and_unused_input_kept);
  EG_RUN(test_tuples);
  EG_RUN(test_statics);
  EG_RUN(test_skip_lists_keep_dead_nodes);
  EG_RUN(test_quant_net);
  EG_RUN(test_fresh_name);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
