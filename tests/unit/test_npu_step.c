/* test_npu_step.c — the NPU steps' memory in the runtime's plan (runtime/npu_step.h), on the
 * tiny_step fixture compiled for SM8650:
 *   - every lowered partition's ops are told to their nodes by name, so each step hands its
 *     executor's tensors and staging buffers to the plan as spans: each over nodes of its own
 *     partition, first not after last, ticks within the step's (0, ops + 1), 64-byte sizes;
 *   - an op whose name is not lowering's ("<node>", "<node>_op<k>") makes its step keep one
 *     working block instead (-1), and so does a name two nodes could own;
 *   - the runtime keeps whichever plan is smaller, spans or blocks, and a program run with
 *     spans gives the same outputs, bit for bit, as with every step's block (the ops renamed);
 *   - an output that is a copy of another output of its partition (a ReLU's result a CPU conv
 *     reads, and its detach the backward reads) repeats it: one buffer, the same results as
 *     the program without the CPU conv;
 *   - each staged input's span reaches the last op reading its bytes (through the executor's
 *     aliases and fused chains), on four fixtures;
 *   - an input read late by a fused chain whose node does not read it (its bytes planned for
 *     another value by then) is copied into staging: the run gives the exact sums. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/runtime.h"
#include "backends/htp/qnn_graph.h"
#include "compiler/compile.h"
#include "eg_test.h"
#include "eg_test_graph.h"
#include "eg_test_json.h"
#include "compiler/frontend/frontend.h"
#include "ir/edit.h"
#include "runtime/npu_step.h"
#include "target/targets.h"

#define TINY EG_TEST_DATA "/tiny_step.json"

/* Fixture `json` compiled for SM8650 (malloc'ed program; *src the graph it was built from),
 * node `skip` (or none: NULL) kept on the CPU. */
static eg_program *build_skipping(const char *json, const char *skip, eg_graph **src) {
  *src = NULL;
  eg_program *p = calloc(1, sizeof *p);
  EG_CHECK_MSG(p && eg_graph_load_json(json, src) == EG_OK, "%s", eg_last_error());
  const eg_partition_options opt = {.target = eg_target_find("SM8650"), .skip_nodes = &skip,
                                    .n_skip_nodes = skip ? 1 : 0};
  if (p && *src && eg_program_build(*src, &opt, p) == EG_OK) return p;
  EG_CHECK_MSG(0, "build: %s", eg_last_error());
  free(p);
  return NULL;
}

static eg_program *build(const char *json, eg_graph **src) {
  return build_skipping(json, NULL, src);
}

/* Position of each node in the program's order. */
static void positions(const eg_program *p, int32_t *pos) {
  for (int32_t i = 0; i < p->graph->n_nodes; i++) pos[p->order[i]] = i;
}

/* Renames op j of partition k (the graph's arena owns names; a literal outlives it). */
static void rename_op(eg_program *p, int32_t k, int32_t j, const char *name) {
  ((eg_htp_qnn_op_node *)eg_htp_qnn_graph_op(p->lowered[k].graph, j))->name = name;
}

/* Spans of partition k's step, or -1; the step is destroyed. */
static int32_t spans_of(const eg_program *p, int32_t k, const int32_t *pos) {
  eg_npu_step *s = NULL;
  const eg_partition *part = &p->parts.partitions[k];
  EG_CHECK_MSG(eg_npu_step_create(p->graph, &p->lowered[k], part, 0, NULL, EG_PRECISION_FP32,
                                  &s) == EG_OK, "%s", eg_last_error());
  if (!s) return -2;
  const eg_plan_block *b = NULL;
  const int32_t n = eg_npu_step_spans(s, &b);
  const int32_t ops = eg_htp_qnn_graph_num_ops(p->lowered[k].graph);
  const int32_t lo = pos[part->nodes[0]], hi = pos[part->nodes[part->n_nodes - 1]];
  for (int32_t i = 0; i < n; i++) {
    const int32_t f = pos[b[i].first_node], l = pos[b[i].last_node];
    EG_CHECK_MSG(lo <= f && f <= l && l <= hi, "partition %d span %d: nodes at %d..%d, "
                 "partition %d..%d", k, i, f, l, lo, hi);
    EG_CHECK_MSG(0 <= b[i].first_tick && b[i].first_tick <= b[i].last_tick &&
                 b[i].last_tick <= ops + 1, "partition %d span %d: ticks %d..%d of %d ops", k,
                 i, b[i].first_tick, b[i].last_tick, ops);
    EG_CHECK(b[i].bytes > 0 && b[i].bytes % 64 == 0);
  }
  eg_npu_step_destroy(s);
  return n;
}

static void test_spans_of_lowered_partitions(void) {
  eg_graph *src = NULL;
  eg_program *p = build(TINY, &src);
  if (!p) goto out;
  static int32_t pos[65536];
  EG_CHECK(p->graph->n_nodes < 65536);
  positions(p, pos);
  int32_t total = 0, k = 0;
  EG_CHECK(p->parts.n_partitions > 0);
  for (int32_t q = 0; q < p->parts.n_partitions; q++) {
    const int32_t n = spans_of(p, q, pos);
    EG_CHECK_MSG(n >= 0, "partition %d: no spans", q);
    total += n;
    if (eg_htp_qnn_graph_num_ops(p->lowered[q].graph) > eg_htp_qnn_graph_num_ops(p->lowered[k].graph))
      k = q;
  }
  EG_CHECK_MSG(total > 10, "%d spans", total);
  const eg_htp_qnn_graph *qg = p->lowered[k].graph;
  const int32_t ops = eg_htp_qnn_graph_num_ops(qg);
  /* op j: the first op of a node B after the first node A, op j - 1 one of A's */
  int32_t j = 1;
  while (j < ops && strstr(eg_htp_qnn_graph_op(qg, j)->name, "_op")) j++;
  EG_CHECK_MSG(j < ops && ops > 4, "partition %d: %d ops", k, ops);
  if (j >= ops) goto out;
  const char *a = eg_htp_qnn_graph_op(qg, 0)->name, *b = eg_htp_qnn_graph_op(qg, j)->name;
  eg_node *node_b = NULL;
  for (int32_t i = 0; i < p->graph->n_nodes; i++)
    if (strcmp(p->graph->nodes[i].name, b) == 0) node_b = &p->graph->nodes[i];
  EG_CHECK(node_b != NULL);
  if (!node_b) goto out;
  /* a name lowering never gives */
  rename_op(p, k, j, "not_a_node_of_this_partition");
  EG_CHECK(spans_of(p, k, pos) == -1);
  /* ops out of their nodes' order: A's and B's first ops swapped */
  rename_op(p, k, 0, b);
  rename_op(p, k, j, a);
  EG_CHECK(spans_of(p, k, pos) == -1);
  rename_op(p, k, 0, a);
  /* B renamed with its op: still told apart */
  node_b->name = "renamed_node";
  rename_op(p, k, j, "renamed_node");
  EG_CHECK(spans_of(p, k, pos) >= 0);
  /* B named like a later op of A ("<A>_op9"): op j could be either node's, refused */
  char as_later[512];
  snprintf(as_later, sizeof as_later, "%s_op9", a);
  node_b->name = as_later;
  rename_op(p, k, j, as_later);
  EG_CHECK(spans_of(p, k, pos) == -1);
  node_b->name = b;
  rename_op(p, k, j, b);
  EG_CHECK(spans_of(p, k, pos) >= 0);
out:
  if (p) eg_program_free(p);
  free(p);
  eg_graph_destroy(src);
}

/* Sets every input of rt's graph: floats in [-1, 1) from a fixed sequence, int64 class
 * targets 0. */
static void set_inputs(eg_runtime *rt) {
  const eg_graph *g = eg_runtime_graph(rt);
  uint32_t seed = 7;
  for (int32_t i = 0; i < g->n_inputs; i++) {
    const eg_value *v = &g->values[g->inputs[i].value];
    eg_tensor t = {.dtype = (eg_dtype)v->dtype, .rank = v->rank};
    for (int d = 0; d < v->rank; d++) t.shape[d] = v->shape[d];
    const int64_t n = eg_value_numel(v);
    t.data = calloc((size_t)n + 1, eg_dtype_size((eg_dtype)v->dtype));
    for (int64_t e = 0; t.data && v->dtype == EG_DTYPE_FLOAT32 && e < n; e++) {
      seed = seed * 1103515245u + 12345u;
      ((float *)t.data)[e] = (float)(seed >> 8) / (float)(1u << 23) - 1.0f;
    }
    EG_CHECK_MSG(eg_runtime_set_input(rt, g->inputs[i].name, &t) == EG_OK, "%s", eg_last_error());
    free(t.data);
  }
}

/* A runtime over fixture `json`'s program for SM8650, inputs set (set_inputs); with `blocks`,
 * every op renamed so each step keeps its working block. *needed: the bytes the runtime
 * reserves (a limit of 1 is refused with them). */
static eg_runtime *runtime(const char *json, bool blocks, eg_graph **src, size_t *needed) {
  eg_program *p[2] = {build(json, &src[0]), build(json, &src[1])};
  for (int c = 0; c < 2; c++)
    for (int32_t k = 0; p[c] && blocks && k < p[c]->parts.n_partitions; k++)
      for (int32_t j = 0; j < eg_htp_qnn_graph_num_ops(p[c]->lowered[k].graph); j++)
        rename_op(p[c], k, j, "renamed");
  eg_runtime *rt = NULL;
  const eg_runtime_options tight = EG_RUNTIME_OPTIONS(.max_memory_bytes = 1);
  *needed = 0;
  if (p[1]) {
    EG_CHECK(eg_runtime_create_program(p[1]->graph, p[1], &tight, &rt) == EG_ERR_LIMIT);
    const char *at = strstr(eg_last_error(), "memory needed (");
    *needed = at ? (size_t)strtoull(at + strlen("memory needed ("), NULL, 10) : 0;
  }
  if (!p[0]) return NULL;
  const eg_graph *g = p[0]->graph;
  EG_CHECK_MSG(eg_runtime_create_program(g, p[0], NULL, &rt) == EG_OK, "%s", eg_last_error());
  if (rt) set_inputs(rt);
  return rt;
}

/* Runs `json` both ways: same outputs bit for bit; the spans' runtime never reserves more
 * (the blocks' plan is one it weighs), and with spans_win less. */
static void run_alike(const char *json, bool spans_win) {
  eg_graph *src_a[2] = {NULL, NULL}, *src_b[2] = {NULL, NULL};
  size_t need_a = 0, need_b = 0;
  eg_runtime *a = runtime(json, false, src_a, &need_a), *b = runtime(json, true, src_b, &need_b);
  EG_CHECK_MSG(need_a > 0 && need_b > 0 && (spans_win ? need_a < need_b : need_a <= need_b),
               "%s: spans %zu bytes, blocks %zu", json, need_a, need_b);
  if (a && b) {
    EG_CHECK_MSG(eg_runtime_run(a) == EG_OK && eg_runtime_run(b) == EG_OK, "%s", eg_last_error());
    const eg_graph *g = eg_runtime_graph(a);
    EG_CHECK(g->n_outputs > 3);
    for (int32_t o = 0; o < g->n_outputs; o++) {
      eg_tensor x, y;
      EG_CHECK(eg_runtime_output(a, o, &x) == EG_OK && eg_runtime_output(b, o, &y) == EG_OK);
      const size_t n = (size_t)eg_tensor_numel(&x) * eg_dtype_size(x.dtype);
      EG_CHECK_MSG(n > 0 && memcmp(x.data, y.data, n) == 0, "%s: output %d differs", json, o);
    }
  }
  eg_runtime_destroy(a);
  eg_runtime_destroy(b);
  for (int c = 0; c < 2; c++) eg_graph_destroy(src_a[c]), eg_graph_destroy(src_b[c]);
}

/* npu_conv_train: the spans' plan the smaller; tiny_step: bytes within a few hundred either
 * way. */
static void test_blocks_and_spans_run_alike(void) {
  run_alike(EG_TEST_DATA "/npu_conv_train.json", true);
  run_alike(TINY, false);
}

/* npu_conv_train with its second conv on the CPU: the first ReLU's result goes out of its
 * partition for that conv (IR order), and its detach for the backward's threshold: the
 * detach repeats it (one buffer, not held NHWC), and the run matches the all-NPU program's. */
static void test_repeated_outputs(void) {
  const char *json = EG_TEST_DATA "/npu_conv_train.json";
  eg_graph *src[2] = {NULL, NULL};
  eg_program *skip = build_skipping(json, "convolution_1", &src[0]);
  eg_program *all = build(json, &src[1]);
  int32_t repeats = 0;
  for (int32_t k = 0; skip && k < skip->parts.n_partitions; k++) {
    eg_npu_step *s = NULL;
    EG_CHECK(eg_npu_step_create(skip->graph, &skip->lowered[k], &skip->parts.partitions[k], 0,
                                NULL, EG_PRECISION_FP32, &s) == EG_OK);
    for (int32_t j = 0; s && j < skip->lowered[k].n_outputs; j++) {
      const int32_t r = eg_npu_step_output_repeats(s, j);
      if (r < 0) continue;
      repeats++;
      const int32_t v = skip->lowered[k].outputs[j].value;
      EG_CHECK(eg_npu_copy_root(skip->graph, v) == eg_npu_copy_root(skip->graph, r) && r != v);
    }
    eg_npu_step_destroy(s);
  }
  EG_CHECK_MSG(repeats > 0, "no output repeats another");
  eg_runtime *a = NULL, *b = NULL;
  EG_CHECK_MSG(skip && eg_runtime_create_program(skip->graph, skip, NULL, &a) == EG_OK, "%s",
               eg_last_error());
  EG_CHECK_MSG(all && eg_runtime_create_program(all->graph, all, NULL, &b) == EG_OK, "%s",
               eg_last_error());
  if (a && b) {
    set_inputs(a);
    set_inputs(b);
    EG_CHECK_MSG(eg_runtime_run(a) == EG_OK && eg_runtime_run(b) == EG_OK, "%s", eg_last_error());
    EG_CHECK(eg_runtime_graph(a)->n_outputs == eg_runtime_graph(b)->n_outputs);
    for (int32_t o = 0; o < eg_runtime_graph(a)->n_outputs; o++) {
      eg_tensor x, y;
      EG_CHECK(eg_runtime_output(a, o, &x) == EG_OK && eg_runtime_output(b, o, &y) == EG_OK);
      if (x.dtype != EG_DTYPE_FLOAT32) continue;
      const long bad = eg_test_allclose(x.data, y.data, (long)eg_tensor_numel(&x),
                                        EG_COMPARE_RTOL, EG_COMPARE_ATOL);
      EG_CHECK_MSG(bad < 0, "output %d: element %ld differs", o, bad);
    }
  }
  eg_runtime_destroy(a);
  eg_runtime_destroy(b);
  eg_graph_destroy(src[0]);
  eg_graph_destroy(src[1]);
}

/* Each input of each step of fixture `json`: a staged one's span lives from the step's start
 * to the last op reading its bytes, through the executor's aliases of it (a Reshape that
 * moves nothing), not only to its last direct reader; one bound in place and read through an
 * alias past its direct readers is the runtime's value, which a node of the partition from
 * that op's node on reads, else it is staged (copied). *stretched counts the inputs read past
 * their direct readers. */
static void check_input_lives(const char *json, int32_t *stretched) {
  eg_graph *src = NULL;
  eg_program *p = build(json, &src);
  for (int32_t k = 0; p && k < p->parts.n_partitions; k++) {
    const eg_lowered *lp = &p->lowered[k];
    const eg_partition *part = &p->parts.partitions[k];
    const eg_htp_qnn_graph *qg = lp->graph;
    eg_npu_step *s = NULL;
    void *ex = NULL;
    EG_CHECK_MSG(eg_npu_step_create(p->graph, lp, part, 0, NULL, EG_PRECISION_FP32, &s) == EG_OK &&
                 lp->backend->executor->create(qg, EG_PRECISION_FP32, &ex) == EG_OK, "%s",
                 eg_last_error());
    const eg_plan_block *spans = NULL;
    const int32_t ns = s ? eg_npu_step_spans(s, &spans) : -1;
    EG_CHECK_MSG(ns >= 0 && ex && lp->backend->executor->input_last_op, "partition %d", k);
    for (int32_t i = 0; ns >= 0 && ex && i < lp->n_inputs; i++) {
      const int32_t t = lp->inputs[i].tensor, span = eg_npu_step_input_span(s, i);
      const int32_t last = lp->backend->executor->input_last_op(ex, t);
      int32_t direct = -1;
      for (int32_t j = 0; j < eg_htp_qnn_graph_num_ops(qg); j++)
        for (int32_t a = 0; a < eg_htp_qnn_graph_op(qg, j)->n_inputs; a++)
          if (eg_htp_qnn_graph_op(qg, j)->inputs[a] == t) direct = j;
      EG_CHECK_MSG(last >= direct, "partition %d input %d: read until op %d, read by op %d", k,
                   i, (int)last, (int)direct);
      if (last > direct) ++*stretched;
      if (span >= 0) {
        EG_CHECK_MSG(span < ns && spans[span].first_tick == 0 &&
                     spans[span].last_tick == last + 1, "partition %d input %d: staged for "
                     "ticks %d..%d, read until op %d", k, i, span < ns ? spans[span].first_tick
                     : -1, span < ns ? spans[span].last_tick : -1, (int)last);
        continue;
      }
      if (last <= direct) continue;
      /* in place: the op's node or a later one of the partition reads the value */
      char name[512];
      snprintf(name, sizeof name, "%s", eg_htp_qnn_graph_op(qg, last)->name);
      bool read = false, from = false;
      for (int32_t j = 0; j < part->n_nodes; j++) {
        const eg_node *n = &p->graph->nodes[part->nodes[j]];
        const size_t len = strlen(n->name);
        from = from || (strncmp(name, n->name, len) == 0 &&
                        (name[len] == '\0' || strncmp(name + len, "_op", 3) == 0));
        read = read || (from && eg_node_reads(n, lp->inputs[i].value));
      }
      EG_CHECK_MSG(read, "partition %d input %d: bound in place, read through an alias by op "
                   "%s, whose node on no node of the partition reads it", k, i, name);
    }
    if (ex) lp->backend->executor->destroy(ex);
    eg_npu_step_destroy(s);
  }
  if (p) eg_program_free(p);
  free(p);
  eg_graph_destroy(src);
}

static void test_inputs_live_through_aliases(void) {
  static const char *const fixtures[] = {TINY, EG_TEST_DATA "/npu_conv_train.json",
                                         EG_TEST_DATA "/npu_conv_step.json",
                                         EG_TEST_DATA "/pass_mse_step.json"};
  int32_t stretched = 0;
  for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++)
    check_input_lives(fixtures[f], &stretched);
  printf("stretched %d\n", (int)stretched);
  EG_CHECK_MSG(stretched > 0, "no input read through an alias past its direct readers");
}

/* x = neg(x0) on the CPU, then a partition: r = relu(x), y = t(x1), out = r + y, y and out
 * graph outputs. The executor fuses the Relu into the add (how FUSED), so x's bytes are read
 * by the add's op, whose node does not read x: the plan frees x after relu and gives its bytes
 * to y, written by the Transpose before the add runs. The step must copy x into a staging
 * buffer live until the add (npu_step.c mark_copies; eg_npu_step_input_span), else the add
 * reads y's elements as x's: out must be relu(x) + x1^T exactly. (A partition input read later
 * through an ALIAS Reshape needs no copy for this: a Reshape is ALIAS only for a view-like node,
 * eg_htp_may_alias, whose readers the plan already keeps the input live for.) */
static void test_input_read_late_by_fused_chain(void) {
  char dir[64] = "/tmp/eg_npu_step_XXXXXX";
  if (!mkdtemp(dir)) {
    EG_CHECK_MSG(0, "mkdtemp: %s", dir);
    return;
  }
  eg_graph *g = eg_test_graph_json(
      dir, "fused_input", "none.safetensors",
      T(0, "[64, 64]") ", " T(1, "[64, 64]") ", " T(2, "[64, 64]") ", " T(3, "[64, 64]") ", "
      T(4, "[64, 64]") ", " T(5, "[64, 64]"),
      IN("x0", 0) ", " IN("x1", 3), "",
      NODE("neg", "aten.neg.default", "[" V(0) "]", 1) ", "
      NODE("relu", "aten.relu.default", "[" V(1) "]", 2) ", "
      NODE("t", "aten.t.default", "[" V(3) "]", 4) ", "
      NODE("add", "aten.add.Tensor", "[" V(2) ", " V(4) "]", 5),
      IN("out", 5) ", " IN("y", 4));
  const char *skip = "neg";
  const eg_partition_options opt = {.target = eg_target_find("SM8650"), .skip_nodes = &skip,
                                    .n_skip_nodes = 1};
  eg_program *p = calloc(1, sizeof *p);
  const bool built = g && p && eg_program_build(g, &opt, p) == EG_OK;
  EG_CHECK_MSG(built, "build: %s", eg_last_error());
  int32_t staged = 0;
  for (int32_t k = 0; built && k < p->parts.n_partitions; k++) {
    eg_npu_step *s = NULL;
    EG_CHECK_MSG(eg_npu_step_create(p->graph, &p->lowered[k], &p->parts.partitions[k], 0, NULL,
                                    EG_PRECISION_FP32, &s) == EG_OK, "%s", eg_last_error());
    for (int32_t i = 0; s && i < p->lowered[k].n_inputs; i++)
      staged += eg_npu_step_input_span(s, i) >= 0;
    eg_npu_step_destroy(s);
  }
  EG_CHECK_MSG(built && p->parts.n_partitions == 1 && staged == 1,
               "%d partitions, %d inputs staged: want 1 and 1 (x)",
               built ? p->parts.n_partitions : -1, (int)staged);
  eg_runtime *rt = NULL;
  if (built) { /* the runtime owns the program from here on */
    EG_CHECK_MSG(eg_runtime_create_program(p->graph, p, NULL, &rt) == EG_OK, "%s",
                 eg_last_error());
    p = NULL;
  }
  if (rt) {
    set_inputs(rt);
    eg_tensor x0, x1, out;
    EG_CHECK_MSG(eg_runtime_run(rt) == EG_OK, "%s", eg_last_error());
    EG_CHECK(eg_runtime_input(rt, 0, &x0) == EG_OK && eg_runtime_input(rt, 1, &x1) == EG_OK &&
             eg_runtime_output(rt, 0, &out) == EG_OK);
    const float *a = x0.data, *b = x1.data, *got = out.data;
    long bad = -1;
    for (long e = 0; bad < 0 && e < 64 * 64; e++)
      if (got[e] != (-a[e] > 0 ? -a[e] : 0.0f) + b[e % 64 * 64 + e / 64]) bad = e;
    EG_CHECK_MSG(bad < 0, "out[%ld] = %g, want relu(x) + x1^T = %g", bad,
                 bad < 0 ? 0.0 : (double)got[bad],
                 bad < 0 ? 0.0 : (double)((-a[bad] > 0 ? -a[bad] : 0.0f) +
                                          b[bad % 64 * 64 + bad / 64]));
  }
  eg_runtime_destroy(rt);
  free(p); /* not built (a built one went to the runtime) */
  eg_graph_destroy(g);
  char path[128];
  snprintf(path, sizeof path, "%s/fused_input.json", dir);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  EG_RUN(test_input_read_late_by_fused_chain);
  EG_RUN(test_inputs_live_through_aliases);
  EG_RUN(test_spans_of_lowered_partitions);
  EG_RUN(test_blocks_and_spans_run_alike);
  EG_RUN(test_repeated_outputs);
  return eg_test_summary();
}
