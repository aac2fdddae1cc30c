/* test_passes.c — the pass pipeline (compiler/passes/pipeline.h) on exported graphs.
 *
 *   - every aten.convolution_backward.default survives the whole pipeline (the skip table, by
 *     the node count before and after, not by table membership), on tiny_step, npu_conv_step,
 *     examples/digits_step and pass_mse_step;
 *   - each decompose rule fires on a traced graph holding its op (tests/data/pass_*.json, made by
 *     make_pass_fixtures.py): the op is gone afterwards, and the rewritten graph verifies and
 *     gives bit-identical outputs on the CPU runtime for the same inputs;
 *   - a compiled runtime (which runs the passes on its own copy) still matches the CPU path and
 *     leaves the model's graph as loaded;
 *   - a skip list (--skip-node / --skip-op) keeps the node it selects as traced: compiled with
 *     one, pass_mse_step's mse_loss_backward is one CPU node of the report (no warning), not
 *     decomposed, and the compiled runtime still matches the CPU path;
 *   - --dump-after: the text IR after a named pass or "all"; an unknown name fails before any
 *     pass with the valid names;
 *   - eg_graph_clone gives a graph that prints exactly like the original. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_graph.h"
#include "ir/clone.h"
#include "ir/print.h"
#include "compiler/passes/pipeline.h"
#include "ops/verify.h"
#include "runtime/model.h"
#include "target/targets.h"

#define DIGITS EG_TEST_DATA "/../../examples/digits_step.json"

static char *print_to_string(const eg_graph *g) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) return NULL;
  eg_graph_print(g, f);
  fclose(f);
  return text;
}

static eg_graph *load_clone(const char *path, eg_model **model) {
  eg_graph *c = NULL;
  *model = NULL;
  EG_CHECK_MSG(eg_model_load(path, model) == EG_OK, "%s: %s", path, eg_last_error());
  if (*model) EG_CHECK(eg_graph_clone((*model)->graph, &c) == EG_OK);
  return c;
}

/* Compile options for SM8650 with no skip lists. */
static void test_clone_prints_the_same(void) {
  eg_model *m;
  eg_graph *c = load_clone(EG_TEST_DATA "/tiny_step.json", &m);
  if (c) {
    char *a = print_to_string(m->graph), *b = print_to_string(c);
    EG_CHECK(a && b && strcmp(a, b) == 0);
    EG_CHECK(eg_graph_verify(c) == EG_OK);
    for (int32_t i = 0; i < c->n_statics; i++)
      EG_CHECK(c->statics[i].data != m->graph->statics[i].data &&
               memcmp(c->statics[i].data, m->graph->statics[i].data, c->statics[i].nbytes) == 0 &&
               (uintptr_t)c->statics[i].data % 64 == 0);
    free(a);
    free(b);
  }
  eg_graph_destroy(c);
  eg_model_destroy(m);
}

static void test_convolution_backward_survives(void) {
  static const char *const paths[] = {EG_TEST_DATA "/tiny_step.json",
                                      EG_TEST_DATA "/npu_conv_step.json", DIGITS,
                                      EG_TEST_DATA "/pass_mse_step.json"};
  for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++) {
    eg_model *m;
    eg_graph *c = load_clone(paths[k], &m);
    if (!c) continue;
    int before = eg_test_count_op(c, EG_OP_convolution_backward);
    EG_CHECK_MSG(before > 0, "%s has no convolution_backward", paths[k]);
    EG_CHECK_MSG(eg_passes_run(c, eg_test_sm8650(), NULL, NULL) == EG_OK, "%s: %s", paths[k],
                 eg_last_error());
    EG_CHECK_MSG(eg_test_count_op(c, EG_OP_convolution_backward) == before, "%s: %d -> %d", paths[k],
                 before, eg_test_count_op(c, EG_OP_convolution_backward));
    eg_graph_destroy(c);
    eg_model_destroy(m);
  }
}

/* Deterministic inputs: floats in [-1, 1), ints in [0, 3) (class indices of 3+ classes). */
static eg_status set_inputs(eg_runtime *rt, const eg_graph *g) {
  uint32_t seed = 12345;
  for (int32_t i = 0; i < g->n_inputs; i++) {
    const eg_value *v = &g->values[g->inputs[i].value];
    eg_tensor t = {.dtype = v->dtype, .rank = v->rank};
    memcpy(t.shape, v->shape, sizeof v->shape);
    int64_t n = eg_value_numel(v);
    t.data = calloc((size_t)n + 1, eg_dtype_size(v->dtype) + 8);
    for (int64_t e = 0; t.data && e < n; e++) {
      seed = seed * 1664525u + 1013904223u;
      if (v->dtype == EG_DTYPE_FLOAT32) ((float *)t.data)[e] = (float)(seed >> 8) / 8388608.0f - 1.0f;
      else if (v->dtype == EG_DTYPE_INT64) ((int64_t *)t.data)[e] = (int64_t)(seed >> 8) % 3;
    }
    eg_status s = t.data ? eg_runtime_set_input(rt, g->inputs[i].name, &t) : EG_ERR_NOMEM;
    free(t.data);
    if (s != EG_OK) return s;
  }
  return EG_OK;
}

/* Runs `a` and `b` (same inputs and outputs) on the same inputs; every output must match within
 * tol (0: bit for bit). */
static void check_same_outputs(const char *what, eg_runtime *a, eg_runtime *b, const eg_graph *g,
                               double tol) {
  EG_CHECK(set_inputs(a, g) == EG_OK && set_inputs(b, g) == EG_OK);
  EG_CHECK_MSG(eg_runtime_run(a) == EG_OK, "%s: %s", what, eg_last_error());
  EG_CHECK_MSG(eg_runtime_run(b) == EG_OK, "%s: %s", what, eg_last_error());
  for (int32_t o = 0; o < g->n_outputs; o++) {
    eg_tensor ta, tb;
    if (eg_runtime_output(a, o, &ta) != EG_OK || eg_runtime_output(b, o, &tb) != EG_OK) {
      EG_CHECK_MSG(0, "%s: output %d unreadable", what, o);
      continue;
    }
    const int64_t n = eg_tensor_numel(&ta);
    EG_CHECK(ta.dtype == tb.dtype && n == eg_tensor_numel(&tb));
    if (tol == 0 || ta.dtype != EG_DTYPE_FLOAT32)
      EG_CHECK_MSG(memcmp(ta.data, tb.data, (size_t)n * eg_dtype_size(ta.dtype)) == 0,
                   "%s: output %s differs", what, g->outputs[o].name);
    else
      EG_CHECK_MSG(eg_test_allclose(tb.data, ta.data, n, tol, tol) < 0, "%s: output %s differs",
                   what, g->outputs[o].name);
  }
}

static const eg_op decomposed_ops[] = {
    EG_OP_ones_like, EG_OP_zeros_like, EG_OP_full, EG_OP_zeros, EG_OP_new_zeros,
    EG_OP_fill_Scalar, EG_OP_squeeze_dim, EG_OP_squeeze_default, EG_OP_unsqueeze,
    EG_OP_mse_loss_backward};
enum { N_DECOMPOSED = sizeof decomposed_ops / sizeof decomposed_ops[0] };

/* The pipeline on `path`: ops in decomposed_ops vanish, the graph verifies and runs bit for bit
 * like the original; fired[] counts, per op, the graphs it was rewritten in. */
static void check_decompose(const char *path, int *fired) {
  eg_model *m;
  eg_graph *c = load_clone(path, &m);
  if (!c) return;
  int before[N_DECOMPOSED];
  for (int k = 0; k < N_DECOMPOSED; k++) before[k] = eg_test_count_op(c, decomposed_ops[k]);
  EG_CHECK_MSG(eg_passes_run(c, eg_test_sm8650(), NULL, NULL) == EG_OK, "%s: %s", path, eg_last_error());
  EG_CHECK(eg_graph_verify(c) == EG_OK);
  for (int k = 0; k < N_DECOMPOSED; k++) {
    EG_CHECK_MSG(eg_test_count_op(c, decomposed_ops[k]) == 0, "%s: %s still there", path,
                 eg_op_target(decomposed_ops[k]));
    fired[k] += before[k] > 0;
  }
  EG_CHECK(c->n_inputs == m->graph->n_inputs && c->n_outputs == m->graph->n_outputs);
  eg_model decomposed = {.graph = c, .compiled = NULL};
  eg_runtime *ra = NULL, *rb = NULL;
  EG_CHECK(eg_runtime_create(m, &ra) == EG_OK);
  EG_CHECK_MSG(eg_runtime_create(&decomposed, &rb) == EG_OK, "%s: %s", path, eg_last_error());
  if (ra && rb) check_same_outputs(path, ra, rb, m->graph, 0);
  eg_runtime_destroy(ra);
  eg_runtime_destroy(rb);
  eg_graph_destroy(c);
  eg_model_destroy(m);
}

static void test_each_decomposition_fires_and_is_exact(void) {
  int fired[N_DECOMPOSED] = {0};
  check_decompose(EG_TEST_DATA "/pass_fills.json", fired);
  check_decompose(EG_TEST_DATA "/pass_mse_step.json", fired);
  check_decompose(EG_TEST_DATA "/tiny_step.json", fired);
  for (int k = 0; k < N_DECOMPOSED; k++)
    EG_CHECK_MSG(fired[k] > 0, "no fixture exercises %s", eg_op_target(decomposed_ops[k]));
}

/* The folded fills are statics with the fill's bytes: pass_fills' full([3], 2.5). */
static void test_fills_become_statics(void) {
  eg_model *m;
  eg_graph *c = load_clone(EG_TEST_DATA "/pass_fills.json", &m);
  if (!c) return;
  int32_t n_nodes = c->n_nodes, n_statics = c->n_statics;
  EG_CHECK(eg_passes_run(c, eg_test_sm8650(), NULL, NULL) == EG_OK);
  EG_CHECK(c->n_statics == n_statics + 6);   /* ones_like zeros_like full new_zeros fill zeros */
  EG_CHECK(c->n_nodes == n_nodes - 6);
  bool found = false;
  for (int32_t i = 0; i < c->n_statics; i++) {
    if (strcmp(c->statics[i].name, "full") != 0) continue;
    const float *f = c->statics[i].data;
    found = c->statics[i].nbytes == 12 && f[0] == 2.5f && f[1] == 2.5f && f[2] == 2.5f;
  }
  EG_CHECK(found);
  eg_graph_destroy(c);
  eg_model_destroy(m);
}

/* Compiling runs the passes on a copy: the model's graph is left as loaded, and the compiled
 * runtime agrees with the CPU path (NPU partitions run in their own precision: a tolerance). */
static void test_compiled_runtime(void) {
  static const char *const paths[] = {EG_TEST_DATA "/pass_mse_step.json",
                                      EG_TEST_DATA "/pass_fills.json",
                                      EG_TEST_DATA "/tiny_step.json"};
  for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++) {
    eg_model *m = NULL;
    EG_CHECK(eg_model_load(paths[k], &m) == EG_OK);
    if (!m) continue;
    char *before = print_to_string(m->graph);
    eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650");
    eg_runtime *cpu = NULL, *npu = NULL;
    EG_CHECK(eg_runtime_create(m, &cpu) == EG_OK);
    EG_CHECK_MSG(eg_runtime_create_compiled(m, &opt, &npu) == EG_OK, "%s: %s", paths[k],
                 eg_last_error());
    eg_compile_report *rep = NULL;
    EG_CHECK(eg_compile_report_create(m, &opt, &rep) == EG_OK);
    char *after = print_to_string(m->graph);
    EG_CHECK_MSG(before && after && strcmp(before, after) == 0, "%s: model graph changed",
                 paths[k]);
    if (cpu && npu) check_same_outputs(paths[k], cpu, npu, m->graph, 1e-2);
    eg_compile_report_destroy(rep);
    eg_runtime_destroy(cpu);
    eg_runtime_destroy(npu);
    free(before);
    free(after);
    eg_model_destroy(m);
  }
}

/* The report of pass_mse_step compiled for SM8650 with `opt`'s skip lists: how many nodes are
 * aten.mse_loss_backward.default (each checked: on the CPU with `reason`, made by no pass) and
 * how many were made from the node mse_loss_backward by a pass. Also checks the warnings are
 * none and, with the skip list, that the compiled runtime agrees with the CPU path. */
static void check_mse_skip(eg_model *m, const eg_compile_options *opt, const char *reason,
                           int *traced, int *made) {
  *traced = *made = 0;
  eg_compile_report *r = NULL;
  EG_CHECK_MSG(eg_compile_report_create(m, opt, &r) == EG_OK, "%s", eg_last_error());
  if (!r) return;
  EG_CHECK_MSG(eg_compile_report_num_warnings(r) == 0, "%s", eg_compile_report_warning(r, 0));
  for (int i = 0; i < eg_compile_report_num_nodes(r); i++) {
    eg_placement_info pi;
    EG_CHECK(eg_compile_report_node(r, i, &pi) == EG_OK);
    *made += pi.source && strcmp(pi.source, "mse_loss_backward") == 0;
    if (strcmp(pi.target, "aten.mse_loss_backward.default") != 0) continue;
    (*traced)++;
    EG_CHECK(strcmp(pi.name, "mse_loss_backward") == 0 && !pi.source);
    EG_CHECK_MSG(pi.placement == EG_PLACEMENT_CPU && pi.reason && strcmp(pi.reason, reason) == 0,
                 "mse_loss_backward: %s", pi.reason ? pi.reason : "on the NPU");
  }
  eg_compile_report_destroy(r);
  eg_runtime *cpu = NULL, *npu = NULL;
  EG_CHECK(eg_runtime_create(m, &cpu) == EG_OK);
  EG_CHECK_MSG(eg_runtime_create_compiled(m, opt, &npu) == EG_OK, "%s", eg_last_error());
  if (cpu && npu) check_same_outputs("pass_mse_step with a skip list", cpu, npu, m->graph, 1e-2);
  eg_runtime_destroy(cpu);
  eg_runtime_destroy(npu);
}

/* decompose leaves a node a skip list selects as traced (pipeline.h), so the partitioner finds
 * it and keeps it on the CPU. Without a skip list the same node is decomposed (the control that
 * makes the check meaningful). The CPU reason is the partitioner's first failing gate: the op
 * itself has no NPU lowering (partition.c step 2a comes before the skip lists, 2d). */
static void test_skip_lists_prevent_decomposition(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(EG_TEST_DATA "/pass_mse_step.json", &m) == EG_OK);
  if (!m) return;
  static const char *const node[] = {"mse_loss_backward"}, *const op[] = {"aten.mse_loss_backward"};
  static const char reason[] = "no NPU lowering for aten.mse_loss_backward";
  int traced, made;
  eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650");
  check_mse_skip(m, &opt, reason, &traced, &made);
  EG_CHECK_MSG(traced == 0 && made > 0, "no skip list: %d traced, %d made by a pass", traced,
               made);
  opt = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "SM8650", .skip_nodes = node,
                                               .num_skip_nodes = 1);
  check_mse_skip(m, &opt, reason, &traced, &made);
  EG_CHECK_MSG(traced == 1 && made == 0, "--skip-node: %d traced, %d made by a pass", traced,
               made);
  opt = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "SM8650", .skip_ops = op,
                                               .num_skip_ops = 1);
  check_mse_skip(m, &opt, reason, &traced, &made);
  EG_CHECK_MSG(traced == 1 && made == 0, "--skip-op: %d traced, %d made by a pass", traced, made);
  eg_model_destroy(m);
}

static void test_dump_after(void) {
  eg_model *m;
  eg_graph *c = load_clone(EG_TEST_DATA "/pass_fills.json", &m);
  if (!c) return;
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  EG_CHECK(eg_passes_run(c, eg_test_sm8650(), "decompose", f) == EG_OK);
  fclose(f);
  EG_CHECK(text && strncmp(text, "# after decompose\ngraph: ", 25) == 0);
  EG_CHECK(text && strstr(text, "\nstatic full: ") && !strstr(text, "aten.full.default"));
  free(text);
  eg_graph_destroy(c);

  /* "all": one dump per pass */
  c = NULL;
  EG_CHECK(eg_graph_clone(m->graph, &c) == EG_OK);
  text = NULL;
  f = open_memstream(&text, &size);
  EG_CHECK(eg_passes_run(c, eg_test_sm8650(), "all", f) == EG_OK);
  fclose(f);
  int dumps = 0;
  for (const char *p = text; p && (p = strstr(p, "# after ")); p++) dumps++;
  EG_CHECK(dumps == eg_passes_count());
  free(text);
  eg_graph_destroy(c);

  /* unknown: fails before any pass, naming the valid ones */
  EG_CHECK(eg_graph_clone(m->graph, &c) == EG_OK);
  int32_t n_nodes = c->n_nodes;
  EG_CHECK(eg_passes_run(c, eg_test_sm8650(), "decompse", stdout) == EG_ERR_ARGUMENT);
  EG_CHECK(strstr(eg_last_error(), "decompse") && strstr(eg_last_error(), "decompose") &&
           strstr(eg_last_error(), "all"));
  EG_CHECK(c->n_nodes == n_nodes);
  EG_CHECK(eg_passes_check_dump(NULL) == EG_OK && eg_passes_check_dump("all") == EG_OK &&
           eg_passes_check_dump("decompose") == EG_OK && eg_passes_check_dump("") != EG_OK);
  eg_graph_destroy(c);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_clone_prints_the_same);
  EG_RUN(test_convolution_backward_survives);
  EG_RUN(test_each_decomposition_fires_and_is_exact);
  EG_RUN(test_fills_become_statics);
  EG_RUN(test_compiled_runtime);
  EG_RUN(test_skip_lists_prevent_decomposition);
  EG_RUN(test_dump_after);
  return eg_test_summary();
}
