/* test_pass_quant.c — pass annotate_quant (src/compiler/passes/annotate_quant.c) and the
 * quantization guard of the conv builders (src/backends/htp/compile/builders/conv.c quantized()),
 * on QDQ graphs traced by PyTorch (tests/data/quant_*.json, made by make_quant_fixtures.py).
 *
 *   - quant_net: every quantize_per_tensor's input and output and its dequantize's output carry
 *     its per-tensor attributes (uint8, the traced scale and zero point); every frozen weight
 *     read by quantize_per_channel carries the per-channel ones (int8, axis 0, n = Cout, the
 *     static scales); convolution outputs carry none;
 *   - quant_tuple: the attributes of a quantized getitem land on that tuple element (element 1)
 *     and its getitem, never on element 0; a value quantized twice with different parameters
 *     keeps none, while each dequantize keeps its own;
 *   - `--dump-after annotate_quant` prints the attributes in the text IR;
 *   - the guard reads metadata: compiled for SM8650, quant_step's convolution_backward (its
 *     weight a dequantized per-channel weight) and quant_net's convolutions stay on the CPU
 *     with "quantized grad_output/weight" / "quantized input/weight"; on npu_conv_step_nogw
 *     (float) the backward is on the NPU, and the same graph with a quantization attribute set
 *     by hand on its frozen weight only (no q/dq node anywhere) is declined with the reason;
 *     quant_net's convolutions (weights folded) are on the NPU;
 *   - pass fold_qdq on quant_net: for SM8650 both per-channel weight pairs are removed, the
 *     convolutions read the frozen weights (which keep their per-channel attributes) and the
 *     graph verifies; the activation pairs stay (x is a graph input / read by detach nodes);
 *     for SM8350 (nothing on the NPU) nothing folds; with --skip-node on a convolution (its
 *     dequantize then feeds a CPU node) that conv's pair stays; with the pair's dequantize
 *     skip-listed the pair stays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_graph.h"
#include "ir/clone.h"
#include "compiler/partition/partition.h"
#include "compiler/passes/pipeline.h"
#include "ops/verify.h"
#include "runtime/model.h"
#include "target/targets.h"

/* The model's graph cloned and run through decompose + annotate_quant. */
static eg_graph *annotated(const char *path, eg_model **model) {
  eg_graph *c = NULL;
  *model = NULL;
  EG_CHECK_MSG(eg_model_load(path, model) == EG_OK, "%s: %s", path, eg_last_error());
  if (!*model) return NULL;
  EG_CHECK(eg_graph_clone((*model)->graph, &c) == EG_OK);
  if (!c) return NULL;
  EG_CHECK(eg_pass_decompose(c, eg_test_sm8650()) == EG_OK);
  EG_CHECK_MSG(eg_pass_annotate_quant(c, eg_test_sm8650()) == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_graph_verify(c) == EG_OK);
  return c;
}

static int32_t arg_value(const eg_node *n, int i) { return eg_node_arg(n, i, NULL)->value; }

static bool is_per_tensor(const eg_quant *q, eg_dtype dtype, double scale, int64_t zp) {
  return q && q->dtype == dtype && q->axis == -1 && q->n == 1 && q->scale[0] == scale &&
         q->zero_point[0] == zp;
}

static void test_annotate_net(void) {
  eg_model *m;
  eg_graph *g = annotated(EG_TEST_DATA "/quant_net.json", &m);
  int per_tensor = 0, per_channel = 0, dq = 0, conv = 0;
  for (int32_t i = 0; g && i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    const eg_value *out = &g->values[n->output];
    if (n->op == EG_OP_quantize_per_tensor) {
      const eg_value *x = &g->values[arg_value(n, 0)];
      const double scale = eg_node_arg(n, 1, NULL)->f;
      const int64_t zp = eg_node_arg(n, 2, NULL)->i;
      EG_CHECK_MSG(is_per_tensor(x->quant, EG_DTYPE_UINT8, scale, zp), "input of %s", n->name);
      EG_CHECK(eg_quant_equal(out->quant, x->quant) && x->quant->qmin == 0 &&
               x->quant->qmax == 255);
      per_tensor++;
    } else if (n->op == EG_OP_quantize_per_channel) {
      const eg_value *w = &g->values[arg_value(n, 0)];
      const eg_value *s = &g->values[arg_value(n, 1)];
      const eg_quant *q = w->quant;
      EG_CHECK(w->role == EG_ROLE_STATIC);
      EG_CHECK_MSG(q && q->dtype == EG_DTYPE_INT8 && q->axis == 0 && q->n == w->shape[0] &&
                   q->qmin == -128 && q->qmax == 127, "weight of %s", n->name);
      const double *scales = g->statics[s->def].data;
      for (int32_t c = 0; q && c < q->n; c++)
        EG_CHECK(q->scale[c] == scales[c] && q->zero_point[c] == 0);
      EG_CHECK(eg_quant_equal(out->quant, q));
      per_channel++;
    } else if (n->op == EG_OP_dequantize_self) {
      EG_CHECK_MSG(out->quant && eg_quant_equal(out->quant, g->values[arg_value(n, 0)].quant),
                   "%s", n->name);
      EG_CHECK(out->dtype == EG_DTYPE_FLOAT32);
      dq++;
    } else if (n->op == EG_OP_convolution) {
      EG_CHECK(out->quant == NULL);
      conv++;
    }
  }
  EG_CHECK(per_tensor == 2 && per_channel == 2 && dq == 4 && conv == 2);
  eg_graph_destroy(g);
  eg_model_destroy(m);
}

static void test_annotate_tuple_element_and_conflict(void) {
  eg_model *m;
  eg_graph *g = annotated(EG_TEST_DATA "/quant_tuple.json", &m);
  int getitems = 0, dq = 0, conflicts = 0;
  for (int32_t i = 0; g && i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->op == EG_OP_getitem) {
      const eg_value *t = &g->values[arg_value(n, 0)];
      const int64_t k = eg_node_arg(n, 1, NULL)->i;
      const eg_quant *got = g->values[n->output].quant, *elem = g->values[t->elems[k]].quant;
      if (k == 1) {
        EG_CHECK(is_per_tensor(got, EG_DTYPE_UINT8, 0.05, 3));
        EG_CHECK(is_per_tensor(elem, EG_DTYPE_UINT8, 0.05, 3));
      } else {
        EG_CHECK_MSG(got == NULL && elem == NULL, "element %lld", (long long)k);
      }
      getitems++;
    } else if (n->op == EG_OP_mul_Tensor && g->values[arg_value(n, 0)].role == EG_ROLE_INPUT) {
      /* y = x * 3, quantized by two nodes with different parameters */
      EG_CHECK_MSG(g->values[n->output].quant == NULL, "conflicting quantizations kept");
      conflicts++;
    } else if (n->op == EG_OP_dequantize_self) {
      const eg_node *q = &g->nodes[g->values[arg_value(n, 0)].def];
      EG_CHECK(is_per_tensor(g->values[n->output].quant,
                             eg_node_arg(q, 3, NULL)->dtype, eg_node_arg(q, 1, NULL)->f,
                             eg_node_arg(q, 2, NULL)->i));
      dq++;
    }
  }
  EG_CHECK(getitems == 2 && dq == 3 && conflicts == 1);
  eg_graph_destroy(g);
  eg_model_destroy(m);
}

static void test_dump_after_annotate_quant(void) {
  eg_model *m = NULL;
  eg_graph *c = NULL;
  EG_CHECK(eg_model_load(EG_TEST_DATA "/quant_net.json", &m) == EG_OK);
  if (m) EG_CHECK(eg_graph_clone(m->graph, &c) == EG_OK);
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (c && f) EG_CHECK_MSG(eg_passes_run(c, eg_test_sm8650(), "annotate_quant", f) == EG_OK, "%s",
                           eg_last_error());
  if (f) fclose(f);
  EG_CHECK(text && strstr(text, "# after annotate_quant\n"));
  EG_CHECK(text && strstr(text, "q uint8 [0, 255] scale/zp "));
  EG_CHECK(text && strstr(text, "q int8 [-128, 127] axis 0 scale/zp "));
  free(text);
  eg_graph_destroy(c);
  eg_model_destroy(m);
}

/* Every node with op `target` is placed as expected: on the CPU with `reason`, or (reason
 * NULL) on the NPU; returns how many there are. */
static int check_placement(const eg_model *m, const char *target, const char *reason) {
  eg_compile_report *rep = NULL;
  int k = 0;
  const eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650");
  EG_CHECK_MSG(eg_compile_report_create(m, &opt, &rep) == EG_OK, "%s", eg_last_error());
  for (int i = 0; rep && i < eg_compile_report_num_nodes(rep); i++) {
    eg_placement_info p;
    EG_CHECK(eg_compile_report_node(rep, i, &p) == EG_OK);
    if (strcmp(p.target, target) != 0) continue;
    k++;
    if (reason)
      EG_CHECK_MSG(p.placement == EG_PLACEMENT_CPU && p.reason && strcmp(p.reason, reason) == 0,
                   "%s: %s", p.name, p.reason ? p.reason : "on the NPU");
    else
      EG_CHECK_MSG(p.placement == EG_PLACEMENT_NPU, "%s: %s", p.name, p.reason);
  }
  eg_compile_report_destroy(rep);
  return k;
}

static void test_guard_on_qdq_models(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(EG_TEST_DATA "/quant_step.json", &m) == EG_OK);
  if (m) EG_CHECK(check_placement(m, "aten.convolution_backward.default",
                                  "quantized grad_output/weight") == 1);
  eg_model_destroy(m);
  m = NULL;
  EG_CHECK(eg_model_load(EG_TEST_DATA "/quant_net.json", &m) == EG_OK);
  /* the forward takes quantized operands (its weight pairs folded by fold_qdq) */
  if (m) EG_CHECK(check_placement(m, "aten.convolution.default", NULL) == 2);
  eg_model_destroy(m);
}

/* The same float graph placed with and without a quantization attribute on the backward's
 * frozen weight: only the metadata changes, so only it can decline the node. */
static void test_guard_reads_metadata(void) {
  eg_model *m = NULL;
  eg_graph *c = NULL;
  EG_CHECK(eg_model_load(EG_TEST_DATA "/npu_conv_step_nogw.json", &m) == EG_OK);
  if (m) EG_CHECK(check_placement(m, "aten.convolution_backward.default", NULL) >= 1);
  if (m) EG_CHECK(eg_graph_clone(m->graph, &c) == EG_OK);
  static const double scale[1] = {0.5};
  static const int64_t zp[1] = {0};
  const eg_quant q = {.dtype = EG_DTYPE_INT8, .axis = -1, .n = 1, .scale = scale,
                      .zero_point = zp, .qmin = -128, .qmax = 127};
  int backward = 0;
  for (int32_t i = 0; c && i < c->n_nodes; i++) {
    const eg_node *n = &c->nodes[i];
    if (n->op != EG_OP_convolution_backward) continue;
    eg_value *w = &c->values[arg_value(n, 2)];
    EG_CHECK(w->role == EG_ROLE_STATIC);
    w->quant = &q;
    backward++;
  }
  eg_partitioning parts = {0};
  if (c) EG_CHECK(eg_partition_graph(c, eg_test_sm8650(), &parts) == EG_OK);
  for (int32_t i = 0; c && i < c->n_nodes; i++) {
    if (c->nodes[i].op != EG_OP_convolution_backward) continue;
    const eg_node_placement *p = &parts.nodes[i];
    EG_CHECK_MSG(!p->npu && p->reason && strcmp(p->reason, "quantized grad_output/weight") == 0,
                 "%s: %s", c->nodes[i].name, p->reason ? p->reason : "on the NPU");
  }
  EG_CHECK(backward >= 1);
  eg_partitioning_free(&parts);
  eg_graph_destroy(c);
  eg_model_destroy(m);
}

/* quant_net after decompose + annotate_quant + place + fold_qdq with `opt`; NULL on failure. */
static eg_graph *folded(eg_model **m, const eg_partition_options *opt) {
  eg_graph *g = annotated(EG_TEST_DATA "/quant_net.json", m);
  if (g) EG_CHECK_MSG(eg_place_graph(g, opt) == EG_OK, "%s", eg_last_error()); /* pass place */
  if (g) EG_CHECK_MSG(eg_pass_fold_qdq(g, opt) == EG_OK, "%s", eg_last_error());
  if (g) EG_CHECK_MSG(eg_graph_verify(g) == EG_OK, "%s", eg_last_error());
  return g;
}

static void test_fold_weights_sm8650(void) {
  eg_model *m;
  eg_graph *g = folded(&m, eg_test_sm8650());
  int convs = 0;
  for (int32_t i = 0; g && i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_convolution) continue;
    const eg_value *w = &g->values[arg_value(n, 1)];
    EG_CHECK_MSG(w->role == EG_ROLE_STATIC && w->quant && w->quant->axis == 0 &&
                 w->quant->dtype == EG_DTYPE_INT8 && w->quant->n == w->shape[0],
                 "%s reads %s", n->name, eg_value_label(g, arg_value(n, 1)));
    /* its input is still the activation pair's dequantize */
    EG_CHECK(g->nodes[g->values[arg_value(n, 0)].def].op == EG_OP_dequantize_self);
    convs++;
  }
  EG_CHECK(convs == 2);
  if (g) EG_CHECK(eg_test_count_op(g, EG_OP_quantize_per_channel) == 0);
  if (g) EG_CHECK(eg_test_count_op(g, EG_OP_quantize_per_tensor) == 2);
  if (g) EG_CHECK(eg_test_count_op(g, EG_OP_dequantize_self) == 2);
  eg_graph_destroy(g);
  eg_model_destroy(m);
}

static void test_fold_nothing_on_sm8350(void) {
  eg_partition_options opt = {.target = eg_target_find("SM8350")};
  eg_model *m;
  eg_graph *g = folded(&m, &opt);
  if (g) EG_CHECK(eg_test_count_op(g, EG_OP_quantize_per_channel) == 2);
  if (g) EG_CHECK(eg_test_count_op(g, EG_OP_dequantize_self) == 4);
  eg_graph_destroy(g);
  eg_model_destroy(m);
}

/* `skip` selects one node: the pair in front of convolution_1's weight stays whole. */
static void check_fold_skipping(const char *skip, int want_qpc, int want_dq) {
  const char *const names[1] = {skip};
  eg_partition_options opt = {.target = eg_target_find("SM8650"), .skip_nodes = names,
                              .n_skip_nodes = 1};
  eg_model *m;
  eg_graph *g = folded(&m, &opt);
  if (g) EG_CHECK_MSG(eg_test_count_op(g, EG_OP_quantize_per_channel) == want_qpc, "skip %s", skip);
  if (g) EG_CHECK_MSG(eg_test_count_op(g, EG_OP_dequantize_self) == want_dq, "skip %s", skip);
  for (int32_t i = 0; g && i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_convolution || strcmp(n->name, "convolution_1") != 0) continue;
    EG_CHECK_MSG(g->values[arg_value(n, 1)].role == EG_ROLE_NODE, "skip %s: weight folded", skip);
  }
  eg_graph_destroy(g);
  eg_model_destroy(m);
}

static void test_fold_keeps_cpu_and_skipped_pairs(void) {
  eg_model *m = NULL;
  eg_graph *g = annotated(EG_TEST_DATA "/quant_net.json", &m);
  const char *dq_name = NULL; /* the dequantize convolution_1's weight reads */
  for (int32_t i = 0; g && i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].name, "convolution_1") == 0)
      dq_name = g->nodes[g->values[arg_value(&g->nodes[i], 1)].def].name;
  EG_CHECK(dq_name != NULL);
  check_fold_skipping("convolution_1", 1, 3); /* its dequantize feeds a CPU node */
  if (dq_name) check_fold_skipping(dq_name, 1, 3);
  eg_graph_destroy(g);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_annotate_net);
  EG_RUN(test_annotate_tuple_element_and_conflict);
  EG_RUN(test_dump_after_annotate_quant);
  EG_RUN(test_guard_on_qdq_models);
  EG_RUN(test_guard_reads_metadata);
  EG_RUN(test_fold_weights_sm8650);
  EG_RUN(test_fold_nothing_on_sm8350);
  EG_RUN(test_fold_keeps_cpu_and_skipped_pairs);
  return eg_test_summary();
}
