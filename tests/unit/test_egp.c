/* test_egp.c — the compiled program file (program/egp_format.h):
 *   - round trip: a program compiled from the tiny_step fixture for SM8650 and SM8350 (and
 *     pass_mse_step, whose compiled graph has nodes decompose made), written and read back,
 *     equals the original field by field (the compiled graph with its value annotations and
 *     node sources, placement, QNN graphs with STATIC bytes, boundaries, steps, order, target)
 *     and writes back to the same bytes; annotations set by hand (NHWC, npu_int32, per-channel
 *     quantization, a source) survive too; the loaded program runs to the same outputs, bit for
 *     bit, as the one compiled in memory;
 *   - STATIC bytes exactly once: identical static byte ranges (two IR statics, and the NPU
 *     STATIC tensors holding them in IR layout) share one 64-byte aligned range; an IR static
 *     is stored only where a CPU node reads it; a re-laid-out weight (HWIO) is never the bytes
 *     of an IR static;
 *   - corruption: every truncation (with the header's file_size left or patched to match) is
 *     rejected; every header/section-table byte flip is rejected; every flip of any other
 *     metadata byte is rejected or accepted but never crashes (run under ASan); counts at the
 *     start of each section and ids, offsets and orders corrupted in the program before writing
 *     are each rejected with a message naming the file and the section. */
#include <stdint.h>
#include <sys/stat.h>

#include "eg_test.h"
#include "compiler/frontend/frontend.h"
#include "backends/htp/exec_plan.h"
#include "backends/htp/qnn_graph.h"
#include "compiler/compile.h"
#include "compiler/egp_write.h"
#include "program/egp_format.h"
#include "runtime/model.h"
#include "target/targets.h"
#include "util/error.h"
#include "util/file.h"

#define TINY EG_TEST_DATA "/tiny_step.json"

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }
static unsigned char *find_bytes(unsigned char *hay, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(hay + i, needle, k) == 0) return hay + i;
  return NULL;
}
static void set32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void set64(unsigned char *p, uint64_t v) {
  set32(p, (uint32_t)v);
  set32(p + 4, (uint32_t)(v >> 32));
}

/* Offset and size of section `kind` in a well-formed file image. */
static void find_section(const unsigned char *f, uint32_t kind, uint64_t *off, uint64_t *size) {
  for (unsigned i = 0; i < EG_EGP_N_SECTIONS; i++) {
    const unsigned char *e = f + EG_EGP_HEADER_SIZE + i * EG_EGP_SECTION_ENTRY_SIZE;
    if (get32(e) == kind) {
      *off = get64(e + 8);
      *size = get64(e + 16);
      return;
    }
  }
  *off = *size = 0;
}

/* A program for `soc` compiled from the fixture; *g must be freed by the caller. */
/* With `skip_op`, that op kept on the CPU (NULL: none). */
static bool build_skipping(const char *json, const char *soc, const char *skip_op, eg_graph **g,
                           eg_program *p) {
  *g = NULL;
  if (eg_graph_load_json(json, g) != EG_OK) {
    fprintf(stderr, "load: %s\n", eg_last_error());
    return false;
  }
  const char *skip[1] = {skip_op};
  eg_partition_options opt = {.target = eg_target_find(soc), .skip_ops = skip,
                              .n_skip_ops = skip_op ? 1 : 0};
  if (eg_program_build(*g, &opt, p) != EG_OK) {
    fprintf(stderr, "build: %s\n", eg_last_error());
    eg_graph_destroy(*g);
    *g = NULL;
    return false;
  }
  return true;
}

static bool build(const char *json, const char *soc, eg_graph **g, eg_program *p) {
  return build_skipping(json, soc, NULL, g, p);
}

/* ---- structural equality ---- */

static bool same_arg(const eg_arg *a, const eg_arg *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case EG_ARG_NONE: return true;
  case EG_ARG_INT: return a->i == b->i;
  case EG_ARG_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
  case EG_ARG_BOOL: return a->b == b->b;
  case EG_ARG_VALUE: return a->value == b->value;
  case EG_ARG_DTYPE: return a->dtype == b->dtype;
  case EG_ARG_LIST:
    if (a->list.n != b->list.n) return false;
    for (int32_t i = 0; i < a->list.n; i++)
      if (!same_arg(&a->list.items[i], &b->list.items[i])) return false;
    return true;
  default: return strcmp(a->str, b->str) == 0;
  }
}

static void check_same_graph(const eg_graph *a, const eg_graph *b) {
  EG_CHECK(a->n_values == b->n_values && a->n_nodes == b->n_nodes && a->n_inputs == b->n_inputs &&
           a->n_outputs == b->n_outputs && a->n_statics == b->n_statics);
  if (a->n_values != b->n_values || a->n_nodes != b->n_nodes) return;
  for (int32_t i = 0; i < a->n_values; i++) {
    const eg_value *x = &a->values[i], *y = &b->values[i];
    bool same = x->kind == y->kind && x->role == y->role && x->def == y->def;
    if (same && x->kind == EG_VALUE_TENSOR)
      same = x->dtype == y->dtype && x->rank == y->rank &&
             memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->rank) == 0 &&
             x->axes == y->axes && x->npu_int32 == y->npu_int32 &&
             eg_quant_equal(x->quant, y->quant);
    if (same && x->kind == EG_VALUE_TUPLE)
      same = x->n_elems == y->n_elems &&
             memcmp(x->elems, y->elems, sizeof(int32_t) * (size_t)x->n_elems) == 0;
    EG_CHECK_MSG(same, "value %d differs", i);
  }
  for (int32_t i = 0; i < a->n_nodes; i++) {
    const eg_node *x = &a->nodes[i], *y = &b->nodes[i];
    bool same = strcmp(x->name, y->name) == 0 && x->op == y->op && x->output == y->output &&
                (x->source ? y->source && strcmp(x->source, y->source) == 0 : !y->source) &&
                x->n_args == y->n_args && x->n_kwargs == y->n_kwargs &&
                x->scratch_bytes == y->scratch_bytes &&
                memcmp(x->attrs, y->attrs, EG_ATTRS_SIZE) == 0;
    for (int32_t k = 0; same && k < x->n_args; k++) same = same_arg(&x->args[k], &y->args[k]);
    for (int32_t k = 0; same && k < x->n_kwargs; k++)
      same = strcmp(x->kwarg_names[k], y->kwarg_names[k]) == 0 &&
             same_arg(&x->kwargs[k], &y->kwargs[k]);
    EG_CHECK_MSG(same, "node %s differs", x->name);
  }
  for (int32_t i = 0; i < a->n_inputs && a->n_inputs == b->n_inputs; i++) {
    const eg_named *x = &a->inputs[i], *y = &b->inputs[i];
    EG_CHECK(strcmp(x->name, y->name) == 0 && x->value == y->value);
    EG_CHECK_MSG(x->role == y->role && x->pair == y->pair, "input %s: role %d pair %d, read back "
                 "role %d pair %d", x->name, (int)x->role, (int)x->pair, (int)y->role,
                 (int)y->pair);
    EG_CHECK(x->state_dict ? y->state_dict && strcmp(x->state_dict, y->state_dict) == 0
                           : !y->state_dict);
    EG_CHECK(x->random == y->random);
    if (x->random) /* NAN (unknown) must come back NAN, bit for bit otherwise */
      EG_CHECK(memcmp(&x->random_p, &y->random_p, sizeof x->random_p) == 0);
  }
  for (int32_t i = 0; i < a->n_outputs && a->n_outputs == b->n_outputs; i++)
    EG_CHECK(strcmp(a->outputs[i].name, b->outputs[i].name) == 0 &&
             a->outputs[i].value == b->outputs[i].value &&
             a->outputs[i].role == b->outputs[i].role && a->outputs[i].pair == b->outputs[i].pair);
  for (int32_t i = 0; i < a->n_statics && a->n_statics == b->n_statics; i++) {
    const eg_static *x = &a->statics[i], *y = &b->statics[i];
    EG_CHECK(strcmp(x->name, y->name) == 0 && x->value == y->value && x->nbytes == y->nbytes);
    /* a static no CPU node reads is not stored (its NPU copies are): b, read back, has no
     * bytes for it (check_same_program checks which) */
    if (!x->data || !y->data) continue;
    EG_CHECK(memcmp(x->data, y->data, x->nbytes) == 0);
    EG_CHECK((uintptr_t)y->data % 64 == 0);
  }
}

static bool same_param(const eg_htp_qnn_param *x, const eg_htp_qnn_param *y) {
  if (strcmp(x->name, y->name) != 0 || x->kind != y->kind || x->dtype != y->dtype) return false;
  if (x->kind == EG_HTP_QNN_PARAM_SCALAR) {
    if (x->dtype == EG_HTP_QNN_DTYPE_BOOL_8) return x->scalar.b == y->scalar.b;
    return x->scalar.u32 == y->scalar.u32;
  }
  return x->rank == y->rank && x->n_values == y->n_values &&
         memcmp(x->dims, y->dims, sizeof(uint32_t) * (size_t)x->rank) == 0 &&
         memcmp(x->values.u32, y->values.u32, sizeof(uint32_t) * (size_t)x->n_values) == 0;
}

static void check_same_qnn(const eg_htp_qnn_graph *a, const eg_htp_qnn_graph *b) {
  EG_CHECK(strcmp(eg_htp_qnn_graph_name(a), eg_htp_qnn_graph_name(b)) == 0);
  EG_CHECK(eg_htp_qnn_graph_num_tensors(a) == eg_htp_qnn_graph_num_tensors(b));
  EG_CHECK(eg_htp_qnn_graph_num_ops(a) == eg_htp_qnn_graph_num_ops(b));
  for (int32_t i = 0; i < eg_htp_qnn_graph_num_tensors(a) && i < eg_htp_qnn_graph_num_tensors(b); i++) {
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(a, i), *y = eg_htp_qnn_graph_tensor(b, i);
    bool same = strcmp(x->name, y->name) == 0 && x->type == y->type && x->dtype == y->dtype &&
                x->rank == y->rank && x->key == y->key && x->nbytes == y->nbytes &&
                x->producer == y->producer && x->quant.encoding == y->quant.encoding &&
                memcmp(x->dims, y->dims, sizeof(uint32_t) * (size_t)x->rank) == 0;
    if (same && x->type == EG_HTP_QNN_TENSOR_STATIC)
      same = memcmp(x->data, y->data, x->nbytes) == 0 && (uintptr_t)y->data % 64 == 0;
    EG_CHECK_MSG(same, "tensor %s differs", x->name);
  }
  for (int32_t i = 0; i < eg_htp_qnn_graph_num_ops(a) && i < eg_htp_qnn_graph_num_ops(b); i++) {
    const eg_htp_qnn_op_node *x = eg_htp_qnn_graph_op(a, i), *y = eg_htp_qnn_graph_op(b, i);
    bool same = strcmp(x->name, y->name) == 0 && x->type == y->type &&
                x->n_inputs == y->n_inputs && x->n_outputs == y->n_outputs &&
                x->n_params == y->n_params &&
                memcmp(x->inputs, y->inputs, sizeof(int32_t) * (size_t)x->n_inputs) == 0 &&
                memcmp(x->outputs, y->outputs, sizeof(int32_t) * (size_t)x->n_outputs) == 0 &&
                memcmp(&x->attrs, &y->attrs, sizeof x->attrs) == 0;
    for (int32_t k = 0; same && k < x->n_params; k++)
      same = same_param(&x->params[k], &y->params[k]);
    EG_CHECK_MSG(same, "op %s differs", x->name);
  }
}

static void check_same_program(const eg_program *a, const eg_program *b) {
  check_same_graph(a->graph, b->graph);
  /* b's statics have bytes exactly where the CPU side reads them or a partition takes them
   * as an input, the backward's seed (egp_format.h, GRAPH) */
  for (int32_t i = 0; i < b->graph->n_statics && a->graph->n_statics == b->graph->n_statics;
       i++) {
    const eg_static *x = &a->graph->statics[i], *y = &b->graph->statics[i];
    const bool stored = eg_program_cpu_reads(a, x->value) || eg_program_npu_input(a, -1, x->value);
    EG_CHECK_MSG(stored == (y->data != NULL) && (!x->data || !y->data || stored),
                 "static %s: %s", y->name, y->data ? "stored" : "not stored");
  }
  EG_CHECK(a->target == b->target);
  EG_CHECK(a->parts.n_nodes == b->parts.n_nodes && a->parts.n_partitions == b->parts.n_partitions);
  for (int32_t i = 0; i < a->parts.n_nodes && a->parts.n_nodes == b->parts.n_nodes; i++) {
    const eg_node_placement *x = &a->parts.nodes[i], *y = &b->parts.nodes[i];
    EG_CHECK(x->npu == y->npu && x->partition == y->partition &&
             (x->reason ? y->reason && strcmp(x->reason, y->reason) == 0 : !y->reason));
  }
  for (int32_t k = 0; k < a->parts.n_partitions && a->parts.n_partitions == b->parts.n_partitions;
       k++) {
    const eg_partition *x = &a->parts.partitions[k], *y = &b->parts.partitions[k];
    EG_CHECK(x->n_nodes == y->n_nodes &&
             memcmp(x->nodes, y->nodes, sizeof(int32_t) * (size_t)x->n_nodes) == 0);
    const eg_lowered *hx = &a->lowered[k], *hy = &b->lowered[k];
    check_same_qnn(hx->graph, hy->graph);
    EG_CHECK(hx->n_inputs == hy->n_inputs && hx->n_outputs == hy->n_outputs);
    for (int32_t i = 0; i < hx->n_inputs && hx->n_inputs == hy->n_inputs; i++)
      EG_CHECK(memcmp(&hx->inputs[i], &hy->inputs[i], sizeof hx->inputs[i]) == 0);
    for (int32_t i = 0; i < hx->n_outputs && hx->n_outputs == hy->n_outputs; i++)
      EG_CHECK(memcmp(&hx->outputs[i], &hy->outputs[i], sizeof hx->outputs[i]) == 0);
    /* the executor plan, entry by entry (the layout pass's, not made again on reading) */
    const eg_htp_exec_plan *px = eg_htp_qnn_graph_plan(hx->graph),
                           *py = eg_htp_qnn_graph_plan(hy->graph);
    EG_CHECK(px->n_ops == py->n_ops);
    for (int32_t i = 0; i < px->n_ops && px->n_ops == py->n_ops; i++) {
      const eg_htp_exec_op *ex = &px->ops[i], *ey = &py->ops[i];
      EG_CHECK_MSG(ex->how == ey->how && ex->filter_read == ey->filter_read &&
                   ex->filter_src == ey->filter_src && ex->y_dst == ey->y_dst,
                   "partition %d: executor plan op %d differs", (int)k, (int)i);
    }
  }
  EG_CHECK(a->n_steps == b->n_steps);
  for (int32_t k = 0; k < a->n_steps && a->n_steps == b->n_steps; k++)
    EG_CHECK(a->steps[k].node == b->steps[k].node &&
             a->steps[k].partition == b->steps[k].partition);
  EG_CHECK(memcmp(a->order, b->order, sizeof(int32_t) * (size_t)a->graph->n_nodes) == 0);
}

/* ---- round trip ---- */

typedef void (*annotate_fn)(eg_graph *g);

static void round_trip_of(const char *json, const char *soc, int min_partitions,
                          annotate_fn annotate) {
  eg_graph *g;
  eg_program p;
  if (!build(json, soc, &g, &p)) {
    EG_CHECK(0);
    return;
  }
  if (annotate) annotate(p.graph);
  EG_CHECK_MSG(p.parts.n_partitions >= min_partitions, "%s: %d partitions", soc,
               p.parts.n_partitions);
  void *bytes = NULL, *again = NULL, *from_file = NULL;
  size_t size = 0, size2 = 0, size3 = 0;
  EG_CHECK(eg_egp_write_memory(&p, &bytes, &size) == EG_OK);
  eg_egp *e = NULL;
  EG_CHECK_MSG(eg_egp_read_memory("mem.egp", bytes, size, &e) == EG_OK, "%s", eg_last_error());
  if (e) {
    check_same_program(&p, &e->program);
    EG_CHECK(e->file_bytes == size);
    /* the loaded program writes back to the same bytes */
    EG_CHECK(eg_egp_write_memory(&e->program, &again, &size2) == EG_OK);
    EG_CHECK(size2 == size && memcmp(again, bytes, size) == 0);
  }
  /* the file API writes the same bytes, atomically, and reads them back */
  const char *path = "test_egp_round_trip.egp";
  EG_CHECK(eg_egp_write(&p, path) == EG_OK);
  EG_CHECK(eg_file_read(path, (size_t)1 << 30, &from_file, &size3) == EG_OK);
  EG_CHECK(size3 == size && from_file && memcmp(from_file, bytes, size) == 0);
  eg_egp *f = NULL;
  EG_CHECK_MSG(eg_egp_read(path, &f) == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_egp_file_has_magic(path) && !eg_egp_file_has_magic(TINY));
  eg_egp_free(f);
  remove(path);
  free(from_file);
  free(again);
  free(bytes);
  eg_egp_free(e);
  eg_program_free(&p);
  eg_graph_destroy(g);
}

static void round_trip(const char *soc, int min_partitions) {
  round_trip_of(TINY, soc, min_partitions, NULL);
}

static void test_round_trip_sm8650(void) { round_trip("SM8650", 1); }
static void test_round_trip_sm8350(void) { round_trip("SM8350", 0); }

/* pass_mse_step: mse_loss_backward is decomposed into nodes whose source names it. */
static void test_round_trip_sources(void) {
  eg_graph *g;
  eg_program p;
  if (!build(EG_TEST_DATA "/pass_mse_step.json", "SM8650", &g, &p)) {
    EG_CHECK(0);
    return;
  }
  int made = 0;
  for (int32_t i = 0; i < p.graph->n_nodes; i++) made += p.graph->nodes[i].source != NULL;
  EG_CHECK_MSG(made > 0, "no node of the compiled graph was made by a pass");
  eg_program_free(&p);
  eg_graph_destroy(g);
  round_trip_of(EG_TEST_DATA "/pass_mse_step.json", "SM8650", 1, NULL);
}

/* Every annotation the format carries, set on the all-CPU SM8350 program (no boundary
 * constrains them): NHWC on a rank-4 value, npu_int32 on the int64 target, a per-channel
 * int8 quantization, a per-tensor uint8 one, and a source on a node. */
static void annotate_all(eg_graph *g) {
  static const double scale[2] = {0.5, 0.25};
  static const int64_t zp[2] = {-3, 7};
  static eg_quant per_channel = {EG_DTYPE_INT8, 1, 2, scale, zp, -128, 127};
  static eg_quant per_tensor = {EG_DTYPE_UINT8, -1, 1, scale, zp + 1, 0, 255};
  bool nhwc = false, i32 = false, q = false;
  for (int32_t i = 0; i < g->n_values; i++) {
    eg_value *v = &g->values[i];
    if (v->kind != EG_VALUE_TENSOR) continue;
    if (v->dtype == EG_DTYPE_INT64 && !i32) i32 = v->npu_int32 = true;
    if (v->rank == 4 && !nhwc) {
      nhwc = true;
      v->axes = EG_AXES_NHWC;
    } else if (v->dtype == EG_DTYPE_FLOAT32 && v->rank >= 2 && v->shape[1] == 2 && !q) {
      q = true;
      v->quant = &per_channel;
    } else if (v->dtype == EG_DTYPE_FLOAT32 && !v->quant) {
      v->quant = &per_tensor;
    }
  }
  EG_CHECK(nhwc && i32 && q);
  g->nodes[g->n_nodes - 1].source = g->nodes[0].name;
}

static void test_round_trip_annotations(void) {
  round_trip_of(TINY, "SM8350", 0, annotate_all);
}

/* Inputs' state_dict names and random kinds (a Dropout mask with its p, one whose p is
 * unknown) come back as they were, and so do every input's and output's role and pair
 * (check_same_program compares the entries whole). The step's first two float inputs are data
 * (input and an MSE target), made random draws: a random input is never a parameter, which
 * the readers refuse. */
static void annotate_inputs(eg_graph *g) {
  int floats = 0;
  for (int32_t i = 0; i < g->n_inputs; i++) {
    const eg_value *v = &g->values[g->inputs[i].value];
    g->inputs[i].state_dict = i % 2 ? g->inputs[i].name : NULL;
    if (v->dtype != EG_DTYPE_FLOAT32 || floats == 2) continue;
    g->inputs[i].random = EG_RANDOM_BERNOULLI;
    g->inputs[i].role = EG_ROLE_RANDOM;
    g->inputs[i].random_p = floats++ ? NAN : 0.7;
  }
  EG_CHECK(floats == 2);
}

static void test_round_trip_inputs(void) {
  round_trip_of(EG_TEST_DATA "/pass_mse_step.json", "SM8650", 1, annotate_inputs);
}

/* ---- running: the loaded program gives the in-memory program's outputs, bit for bit ---- */


static void test_run_matches_in_memory(void) {
  const char *path = "test_egp_run.egp";
  eg_model *src = NULL, *prog = NULL;
  eg_runtime *a = NULL, *b = NULL;
  eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650");
  EG_CHECK(eg_model_load(TINY, &src) == EG_OK);
  EG_CHECK(src && !eg_model_is_compiled(src));
  EG_CHECK_MSG(src && eg_model_save_compiled(src, &opt, path) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(eg_model_load(path, &prog) == EG_OK, "%s", eg_last_error());
  if (!src || !prog) goto out;
  EG_CHECK(eg_model_is_compiled(prog));
  eg_program_info pi;
  EG_CHECK(eg_model_program_info(prog, &pi) == EG_OK && strcmp(pi.soc, "SM8650") == 0);
  /* the program's nodes are the compiled graph's (after the passes), not the model's */
  eg_graph *g;
  eg_program cp;
  if (build(TINY, "SM8650", &g, &cp)) {
    EG_CHECK_MSG(pi.num_npu_nodes + pi.num_cpu_nodes == cp.graph->n_nodes &&
                 pi.num_npu_nodes > 0, "%d + %d nodes, compiled graph %d", pi.num_npu_nodes,
                 pi.num_cpu_nodes, cp.graph->n_nodes);
    eg_program_free(&cp);
    eg_graph_destroy(g);
  } else {
    EG_CHECK(0);
  }
  EG_CHECK(eg_model_program_info(src, &pi) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_runtime_create_compiled(src, &opt, &a) == EG_OK);
  EG_CHECK_MSG(eg_runtime_create(prog, &b) == EG_OK, "%s", eg_last_error());
  if (!a || !b) goto out;
  EG_CHECK(eg_test_set_tiny_inputs(src, a) == EG_OK && eg_test_set_tiny_inputs(prog, b) == EG_OK);
  EG_CHECK(eg_runtime_run(a) == EG_OK);
  EG_CHECK_MSG(eg_runtime_run(b) == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_model_num_outputs(src) == eg_model_num_outputs(prog));
  for (int o = 0; o < eg_model_num_outputs(src); o++) {
    eg_tensor x, y;
    EG_CHECK(eg_runtime_output(a, o, &x) == EG_OK && eg_runtime_output(b, o, &y) == EG_OK);
    size_t n = (size_t)eg_tensor_numel(&x) * eg_dtype_size(x.dtype);
    EG_CHECK_MSG(x.rank == y.rank && memcmp(x.data, y.data, n) == 0, "output %d differs", o);
  }
out:
  eg_runtime_destroy(a);
  eg_runtime_destroy(b);
  eg_model_destroy(src);
  eg_model_destroy(prog);
  remove(path);
}

/* ---- STATIC bytes exactly once ---- */

/* out = (x + a) * b + c with statics a == b (same bytes) and c different; all [2, 3]. */
static const char *write_dedupe_fixture(void) {
  static const char *json_path = "test_egp_dedupe.json";
  static const char json[] =
      "{\"format\": \"edgegrad.graph\", \"version\": 1,\n"
      " \"weights\": \"test_egp_dedupe.safetensors\",\n"
      " \"values\": [\n"
      "  {\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},\n"
      "  {\"id\": 1, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},\n"
      "  {\"id\": 2, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},\n"
      "  {\"id\": 3, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},\n"
      "  {\"id\": 4, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},\n"
      "  {\"id\": 5, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},\n"
      "  {\"id\": 6, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]}],\n"
      " \"inputs\": [{\"name\": \"x\", \"value\": 0, \"role\": \"data\"}],\n"
      " \"statics\": [{\"name\": \"a\", \"value\": 1}, {\"name\": \"b\", \"value\": 2},\n"
      "               {\"name\": \"c\", \"value\": 3}],\n"
      " \"outputs\": [{\"name\": \"out\", \"value\": 6, \"role\": \"output\"}],\n"
      " \"nodes\": [\n"
      "  {\"name\": \"add\", \"target\": \"aten.add.Tensor\",\n"
      "   \"args\": [{\"value\": 0}, {\"value\": 1}], \"output\": 4},\n"
      "  {\"name\": \"mul\", \"target\": \"aten.mul.Tensor\",\n"
      "   \"args\": [{\"value\": 4}, {\"value\": 2}], \"output\": 5},\n"
      "  {\"name\": \"add_1\", \"target\": \"aten.add.Tensor\",\n"
      "   \"args\": [{\"value\": 5}, {\"value\": 3}], \"output\": 6}]}\n";
  float a[6] = {1, 2, 3, 4, 5, 6}, c[6] = {-1, -2, -3, -4, -5, -6};
  eg_safetensors_entry t[3] = {
      {"a", {.dtype = EG_DTYPE_FLOAT32, .rank = 2, .shape = {2, 3}, .data = a}},
      {"b", {.dtype = EG_DTYPE_FLOAT32, .rank = 2, .shape = {2, 3}, .data = a}},
      {"c", {.dtype = EG_DTYPE_FLOAT32, .rank = 2, .shape = {2, 3}, .data = c}}};
  eg_file_part part = {json, sizeof json - 1};
  if (eg_file_write_atomic(json_path, &part, 1) != EG_OK ||
      eg_safetensors_save("test_egp_dedupe.safetensors", t, 3, NULL, 0) != EG_OK)
    return NULL;
  return json_path;
}

static void test_static_bytes_once(void) {
  const char *json = write_dedupe_fixture();
  EG_CHECK(json != NULL);
  if (!json) return;
  static const char *const socs[] = {"SM8650", "SM8350"};
  for (int s = 0; s < 2; s++) {
    eg_graph *g;
    eg_program p;
    if (!build(json, socs[s], &g, &p)) {
      EG_CHECK(0);
      continue;
    }
    void *bytes = NULL;
    size_t size = 0;
    eg_egp *e = NULL;
    EG_CHECK(eg_egp_write_memory(&p, &bytes, &size) == EG_OK);
    EG_CHECK_MSG(eg_egp_read_memory("dedupe.egp", bytes, size, &e) == EG_OK, "%s", eg_last_error());
    if (e) {
      /* a == b: one 24-byte range at 0; c: one at 64. Each static's bytes are where the IR
       * static points when a CPU node reads it (SM8350), else where the NPU's STATIC tensor
       * of it points (SM8650: the IR static is not stored) — every copy of a and b at the
       * first range, of c at the second. */
      EG_CHECK_MSG(e->static_bytes == 64 + 24, "%s: %zu static bytes", socs[s], e->static_bytes);
      const eg_graph *lg = e->graph;
      const unsigned char *base = e->file + (e->file_bytes - e->static_bytes);
      const unsigned char *want[3] = {base, base, base + 64};
      int copies[3] = {0, 0, 0}, n_static = 0;
      for (int32_t i = 0; i < 3; i++) {
        if (!lg->statics[i].data) continue;
        copies[i]++;
        EG_CHECK_MSG(lg->statics[i].data == want[i], "%s: IR static %d", socs[s], (int)i);
      }
      for (int32_t k = 0; k < e->program.parts.n_partitions; k++) {
        const eg_htp_qnn_graph *qg = e->program.lowered[k].graph;
        for (int32_t i = 0; i < eg_htp_qnn_graph_num_tensors(qg); i++) {
          const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(qg, i);
          if (t->type != EG_HTP_QNN_TENSOR_STATIC) continue;
          n_static++;
          for (int32_t v = 0; v < 3; v++) /* the key names the IR value (value << 16 | use) */
            if (t->key >= 0 && (t->key >> 16) == lg->statics[v].value) {
              copies[v]++;
              EG_CHECK_MSG(t->data == want[v], "%s: STATIC tensor %s", socs[s], t->name);
            }
        }
      }
      for (int32_t v = 0; v < 3; v++)
        EG_CHECK_MSG(copies[v] >= 1, "%s: static %d stored nowhere", socs[s], (int)v);
      if (s == 0) EG_CHECK_MSG(n_static == 3, "SM8650: %d STATIC tensors", n_static);
      else EG_CHECK(e->program.parts.n_partitions == 0);
    }
    eg_egp_free(e);
    free(bytes);
    eg_program_free(&p);
    eg_graph_destroy(g);
  }
  remove("test_egp_dedupe.json");
  remove("test_egp_dedupe.safetensors");
}

/* The fixture's frozen conv weight (rank 4) is stored in IR layout and, for the NPU, in HWIO. */
static void test_relaid_weight_stored_beside_ir(void) {
  eg_graph *g;
  eg_program p;
  if (!build(TINY, "SM8650", &g, &p)) {
    EG_CHECK(0);
    return;
  }
  void *bytes = NULL;
  size_t size = 0;
  eg_egp *e = NULL;
  EG_CHECK(eg_egp_write_memory(&p, &bytes, &size) == EG_OK);
  EG_CHECK(eg_egp_read_memory("tiny.egp", bytes, size, &e) == EG_OK);
  if (e) {
    const unsigned char *base = e->file + (e->file_bytes - e->static_bytes);
    size_t total = 0, hwio = 0;
    for (int32_t i = 0; i < e->graph->n_statics; i++) {
      const unsigned char *d = e->graph->statics[i].data;
      if (!d) continue; /* read by no CPU node: only its NPU copies are stored */
      EG_CHECK(d >= base && (size_t)(d - base) % 64 == 0);
      total += e->graph->statics[i].nbytes;
    }
    for (int32_t k = 0; k < e->program.parts.n_partitions; k++) {
      const eg_htp_qnn_graph *qg = e->program.lowered[k].graph;
      for (int32_t i = 0; i < eg_htp_qnn_graph_num_tensors(qg); i++) {
        const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(qg, i);
        if (t->type != EG_HTP_QNN_TENSOR_STATIC) continue;
        const unsigned char *d = t->data;
        EG_CHECK(d >= base && (size_t)(d - base) % 64 == 0 && (size_t)(d - base) < e->static_bytes);
        if (strstr(t->name, "_hwio")) hwio++;
        for (int32_t j = 0; j < e->graph->n_statics; j++)
          if (strstr(t->name, "_hwio") && e->graph->statics[j].nbytes == t->nbytes)
            EG_CHECK(e->graph->statics[j].data != t->data);
      }
    }
    EG_CHECK(total > 0 && hwio >= 1);
  }
  eg_egp_free(e);
  free(bytes);
  eg_program_free(&p);
  eg_graph_destroy(g);
}

/* ---- corruption ---- */

typedef struct image {
  unsigned char *bytes;
  size_t size;
} image;

static bool tiny_image(const char *soc, image *im) {
  eg_graph *g;
  eg_program p;
  im->bytes = NULL;
  if (!build(TINY, soc, &g, &p)) return false;
  void *b = NULL;
  bool ok = eg_egp_write_memory(&p, &b, &im->size) == EG_OK;
  im->bytes = b;
  eg_program_free(&p);
  eg_graph_destroy(g);
  return ok;
}

/* Loads a corrupted image; it must fail with one line naming the file. Returns whether it
 * was rejected. */
static bool rejected(const unsigned char *bytes, size_t size) {
  eg_egp *e = NULL;
  eg_status s = eg_egp_read_memory("bad.egp", bytes, size, &e);
  if (s == EG_OK) {
    eg_egp_free(e);
    return false;
  }
  const char *msg = eg_last_error();
  if (getenv("EG_TEST_VERBOSE")) printf("  rejected: %s\n", msg);
  EG_CHECK_MSG(strncmp(msg, "bad.egp: ", 9) == 0 && !strchr(msg, '\n'), "message '%s'", msg);
  EG_CHECK(e == NULL);
  return true;
}

static void test_every_truncation_rejected(void) {
  image im;
  EG_CHECK(tiny_image("SM8650", &im));
  if (!im.bytes) return;
  unsigned char *copy = malloc(im.size);
  int not_rejected = 0;
  for (size_t len = 0; len < im.size; len++) {
    memcpy(copy, im.bytes, im.size);
    if (!rejected(copy, len)) not_rejected++;
    /* the same with file_size patched to the truncated length: the sections must catch it */
    if (len >= EG_EGP_HEADER_SIZE) {
      set64(copy + 8, len);
      if (!rejected(copy, len)) not_rejected++;
    }
  }
  EG_CHECK_MSG(not_rejected == 0, "%d truncations accepted", not_rejected);
  /* and one byte too many */
  unsigned char *longer = calloc(im.size + 1, 1);
  memcpy(longer, im.bytes, im.size);
  EG_CHECK(rejected(longer, im.size + 1));
  free(longer);
  free(copy);
  free(im.bytes);
}

static void test_every_metadata_flip_is_safe(void) {
  image im;
  EG_CHECK(tiny_image("SM8650", &im));
  if (!im.bytes) return;
  uint64_t static_off, static_size;
  find_section(im.bytes, EG_EGP_SECTION_STATIC, &static_off, &static_size);
  const size_t table_end = EG_EGP_HEADER_SIZE + EG_EGP_N_SECTIONS * EG_EGP_SECTION_ENTRY_SIZE;
  static const unsigned char masks[] = {0x01, 0x80, 0xFF};
  unsigned char *copy = malloc(im.size);
  int n = 0, n_rejected = 0, header_accepted = 0;
  for (size_t at = 0; at < static_off; at++)
    for (size_t m = 0; m < sizeof masks; m++) {
      memcpy(copy, im.bytes, im.size);
      copy[at] ^= masks[m];
      if (getenv("EG_TEST_TRACE")) fprintf(stderr, "flip %zu ^ 0x%02x\n", at, masks[m]);
      bool r = rejected(copy, im.size);
      n++;
      n_rejected += r;
      if (!r && getenv("EG_TEST_VERBOSE")) {
        uint32_t kind = 0;
        for (uint32_t k = 1; k <= EG_EGP_N_SECTIONS; k++) {
          uint64_t o, z;
          find_section(im.bytes, k, &o, &z);
          if (at >= o && at < o + z) kind = k;
        }
        printf("  accepted: byte %zu (section %u, +%zu) ^ 0x%02x\n", at, kind, at, masks[m]);
      }
      if (at < table_end && !r) {
        header_accepted++;
        fprintf(stderr, "header/table byte %zu ^ 0x%02x accepted\n", at, masks[m]);
      }
    }
  EG_CHECK(header_accepted == 0);
  /* names and float values can change and stay valid; ids, counts and codes cannot */
  EG_CHECK_MSG(n_rejected > n / 2, "%d of %d flips rejected", n_rejected, n);
  printf("metadata flips: %d of %d rejected\n", n_rejected, n);
  free(copy);
  free(im.bytes);
}

/* The first count of every section, and the STATIC reference of the first static, corrupted. */
static void test_counts_rejected(void) {
  image im;
  EG_CHECK(tiny_image("SM8650", &im));
  if (!im.bytes) return;
  static const uint32_t kinds[] = {EG_EGP_SECTION_STRINGS, EG_EGP_SECTION_GRAPH,
                                   EG_EGP_SECTION_PLACEMENT, EG_EGP_SECTION_NPU};
  static const char *const names[] = {"STRINGS", "GRAPH", "PLACEMENT", "NPU"};
  unsigned char *copy = malloc(im.size);
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    uint64_t off, size;
    find_section(im.bytes, kinds[k], &off, &size);
    uint32_t count = get32(im.bytes + off);
    const uint32_t bad[] = {count + 1, count - 1, 0xFFFFFFFFu, 0x7FFFFFFFu, count * 2 + 1};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
      if (bad[b] == count) continue;
      memcpy(copy, im.bytes, im.size);
      set32(copy + off, bad[b]);
      EG_CHECK_MSG(rejected(copy, im.size), "%s count %u -> %u accepted", names[k], count, bad[b]);
      char want[32];
      snprintf(want, sizeof want, "bad.egp: %s", names[k]);
      if (k < 2) /* a count change shows in its own section (later ones may show elsewhere) */
        EG_CHECK_MSG(strstr(eg_last_error(), want) != NULL, "'%s' lacks '%s'", eg_last_error(),
                     want);
    }
  }
  /* section table: each entry's offset and size moved by 8 and by 64 */
  for (unsigned i = 0; i < EG_EGP_N_SECTIONS; i++)
    for (int field = 8; field <= 16; field += 8)
      for (int delta = -64; delta <= 64; delta += 8) {
        unsigned char *e = copy + EG_EGP_HEADER_SIZE + i * EG_EGP_SECTION_ENTRY_SIZE + field;
        if (delta == 0) continue;
        memcpy(copy, im.bytes, im.size);
        set64(e, get64(e) + (uint64_t)(int64_t)delta);
        EG_CHECK_MSG(rejected(copy, im.size), "entry %u field %d delta %d accepted", i, field,
                     delta);
      }
  free(copy);
  free(im.bytes);
}

/* Corruptions made in the program before writing: each must be rejected on reading, with the
 * message naming the section at fault. */
typedef void (*corrupt_fn)(eg_graph *g, eg_program *p);

static int32_t first_npu_node(const eg_program *p) {
  for (int32_t i = 0; i < p->parts.n_nodes; i++)
    if (p->parts.nodes[i].npu) return i;
  return 0;
}
static int32_t first_cpu_node(const eg_program *p) {
  for (int32_t i = 0; i < p->parts.n_nodes; i++)
    if (!p->parts.nodes[i].npu) return i;
  return 0;
}
static void c_order_swap(eg_graph *g, eg_program *p) {
  (void)g;
  int32_t t = p->order[0];
  p->order[0] = p->order[1];
  p->order[1] = t;
}
static void c_steps_reversed(eg_graph *g, eg_program *p) {
  (void)g;
  for (int32_t a = 0, b = p->n_steps - 1; a < b; a++, b--) {
    eg_program_step t = p->steps[a];
    p->steps[a] = p->steps[b];
    p->steps[b] = t;
  }
  /* the order follows the steps, so only the dependency check can catch it */
  int32_t at = 0;
  for (int32_t k = 0; k < p->n_steps; k++) {
    const eg_program_step *st = &p->steps[k];
    if (st->partition < 0) p->order[at++] = st->node;
    else
      for (int32_t j = 0; j < p->parts.partitions[st->partition].n_nodes; j++)
        p->order[at++] = p->parts.partitions[st->partition].nodes[j];
  }
}
static void c_step_npu_node(eg_graph *g, eg_program *p) {
  (void)g;
  for (int32_t k = 0; k < p->n_steps; k++)
    if (p->steps[k].node >= 0) {
      p->steps[k].node = first_npu_node(p);
      return;
    }
}
static void c_partition_id(eg_graph *g, eg_program *p) {
  (void)g;
  p->parts.nodes[first_npu_node(p)].partition = p->parts.n_partitions;
}
static void c_cpu_reason(eg_graph *g, eg_program *p) {
  (void)g;
  p->parts.nodes[first_cpu_node(p)].reason = NULL;
}
static void c_partition_list(eg_graph *g, eg_program *p) {
  (void)g;
  p->parts.partitions[0].nodes[0] = first_cpu_node(p);
}
static void c_boundary_tensor(eg_graph *g, eg_program *p) {
  (void)g;
  p->lowered[0].inputs[0].tensor = p->lowered[0].outputs[0].tensor;
}
static void c_boundary_tensor_range(eg_graph *g, eg_program *p) {
  (void)g;
  p->lowered[0].outputs[0].tensor = eg_htp_qnn_graph_num_tensors(p->lowered[0].graph);
}
static void c_boundary_value(eg_graph *g, eg_program *p) {
  (void)g;
  p->lowered[0].outputs[0].value = p->lowered[0].inputs[0].value;
}
static void c_boundary_nhwc(eg_graph *g, eg_program *p) {
  (void)g;
  p->lowered[0].inputs[0].nhwc = !p->lowered[0].inputs[0].nhwc;
}
/* The entry of the first op (of the first partition that has one) whose entry `want` says,
 * in the executor plans (exec_plan.h). */
static eg_htp_exec_op *plan_op(eg_program *p,
                               bool (*want)(const eg_htp_qnn_op_node *, const eg_htp_exec_op *)) {
  for (int32_t q = 0; q < p->parts.n_partitions; q++) {
    eg_htp_exec_plan *xp = eg_htp_qnn_graph_plan_mut(p->lowered[q].graph);
    for (int32_t k = 0; k < xp->n_ops; k++)
      if (want(eg_htp_qnn_graph_op(p->lowered[q].graph, k), &xp->ops[k])) return &xp->ops[k];
  }
  EG_CHECK_MSG(false, "the fixture has no such op");
  return &eg_htp_qnn_graph_plan_mut(p->lowered[0].graph)->ops[0];
}
static bool not_transpose(const eg_htp_qnn_op_node *op, const eg_htp_exec_op *e) {
  (void)e;
  return op->type != EG_HTP_QNN_OP_TRANSPOSE;
}
static bool run_transpose(const eg_htp_qnn_op_node *op, const eg_htp_exec_op *e) {
  return op->type == EG_HTP_QNN_OP_TRANSPOSE && e->how == EG_HTP_EXEC_RUN;
}
static bool writes_transposed(const eg_htp_qnn_op_node *op, const eg_htp_exec_op *e) {
  (void)op;
  return e->y_dst >= 0;
}
static void c_plan_fold_conv(eg_graph *g, eg_program *p) {
  (void)g;
  plan_op(p, not_transpose)->how = EG_HTP_EXEC_FOLD;
}
static void c_plan_how_code(eg_graph *g, eg_program *p) {
  (void)g;
  eg_htp_qnn_graph_plan_mut(p->lowered[0].graph)->ops[0].how = EG_HTP_EXEC_HOW_COUNT;
}
static void c_plan_skip_read(eg_graph *g, eg_program *p) {
  (void)g;
  plan_op(p, run_transpose)->how = EG_HTP_EXEC_SKIP;
}
static void c_plan_y_dst_dropped(eg_graph *g, eg_program *p) {
  (void)g;
  plan_op(p, writes_transposed)->y_dst = -1;
}
static void c_plan_filter_src_range(eg_graph *g, eg_program *p) {
  (void)g;
  plan_op(p, writes_transposed)->filter_src = 1 << 20;
}
/* `held` on the boundary of a graph output: the CPU side reads it in IR order. */
static void c_held_graph_output(eg_graph *g, eg_program *p) {
  eg_lowered *lp = &p->lowered[0];
  for (int32_t i = 0; i < lp->n_outputs; i++)
    for (int32_t o = 0; o < g->n_outputs; o++)
      if (lp->outputs[i].value == g->outputs[o].value) {
        lp->outputs[i].held = true;
        return;
      }
  EG_CHECK_MSG(false, "the fixture's partition 0 puts out no graph output");
}
/* `held` dropped from one boundary of a value held between partitions, kept on another. */
static void c_held_on_one_side(eg_graph *g, eg_program *p) {
  (void)g;
  for (int32_t q = 0; q < p->parts.n_partitions; q++)
    for (int32_t i = 0; i < p->lowered[q].n_inputs; i++)
      if (p->lowered[q].inputs[i].held) {
        p->lowered[q].inputs[i].held = false;
        return;
      }
  EG_CHECK_MSG(false, "the fixture holds no value NHWC between partitions");
}
static void c_boundary_dropped(eg_graph *g, eg_program *p) {
  (void)g;
  p->lowered[0].n_outputs--;
}
static void c_node_output(eg_graph *g, eg_program *p) {
  (void)p;
  g->nodes[0].output = g->n_values;
}
static void c_arg_value(eg_graph *g, eg_program *p) {
  (void)p;
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].n_args > 0 && g->nodes[i].args[0].kind == EG_ARG_VALUE) {
      g->nodes[i].args[0].value = g->n_values + 5;
      return;
    }
}
static void c_arg_later(eg_graph *g, eg_program *p) {
  (void)p;
  g->nodes[0].args[0].value = g->nodes[g->n_nodes - 1].output; /* a use before its definition */
}
static void c_input_value(eg_graph *g, eg_program *p) {
  (void)p;
  g->inputs[0].value = -1;
}
static void c_random_kind(eg_graph *g, eg_program *p) {
  (void)p;
  g->inputs[0].random = (eg_random_kind)2;
}
/* Marks the first input of dtype dt a Bernoulli(p) random input; false if there is none. */
static bool make_random(eg_graph *g, eg_dtype dt, double p) {
  for (int32_t i = 0; i < g->n_inputs; i++)
    if (g->values[g->inputs[i].value].dtype == dt) {
      g->inputs[i].random = EG_RANDOM_BERNOULLI;
      g->inputs[i].role = EG_ROLE_RANDOM;
      g->inputs[i].random_p = p;
      return true;
    }
  return false;
}
static void c_random_p(eg_graph *g, eg_program *p) {
  (void)p;
  make_random(g, EG_DTYPE_FLOAT32, 1.5);
}
static void c_random_dtype(eg_graph *g, eg_program *p) {
  (void)p;
  EG_CHECK_MSG(make_random(g, EG_DTYPE_INT64, 0.5), "the fixture has no int64 input");
}
/* The roles (ir/io_role.h): the tiny step's inputs are input (data), target (label), then its
 * parameters, each with its gradient output (outputs 1...). */
static int32_t first_gradient(const eg_graph *g) {
  for (int32_t o = 0; o < g->n_outputs; o++)
    if (g->outputs[o].role == EG_ROLE_GRADIENT) return o;
  return -1;
}
static void c_role_code(eg_graph *g, eg_program *p) {
  (void)p;
  g->inputs[0].role = (eg_io_role)9;
}
static void c_role_of_output(eg_graph *g, eg_program *p) {
  (void)p;
  g->inputs[0].role = EG_ROLE_LOSS;
}
static void c_gradient_of_data(eg_graph *g, eg_program *p) {
  (void)p;
  g->outputs[first_gradient(g)].pair = 0;
}
static void c_gradient_pair_range(eg_graph *g, eg_program *p) {
  (void)p;
  g->outputs[first_gradient(g)].pair = g->n_inputs;
}
static void c_gradient_without_of(eg_graph *g, eg_program *p) {
  (void)p;
  g->outputs[first_gradient(g)].pair = -1;
}
static void c_output_with_of(eg_graph *g, eg_program *p) {
  (void)p;
  const int32_t o = first_gradient(g);
  g->outputs[o].role = EG_ROLE_OUTPUT; /* pair kept: its parameter */
}
static void c_parameter_without_gradient(eg_graph *g, eg_program *p) {
  (void)p;
  const int32_t o = first_gradient(g);
  g->outputs[o].role = EG_ROLE_OUTPUT;
  g->outputs[o].pair = -1;
}
static void c_two_gradients(eg_graph *g, eg_program *p) {
  (void)p; /* grad_2_bias [4] named a gradient of 0_bias [4] too */
  const int32_t o = first_gradient(g);
  g->outputs[o + 2].pair = g->outputs[o].pair;
}
static void c_gradient_shape(eg_graph *g, eg_program *p) {
  (void)p; /* grad_0_bias [4] of 2_weight [4, 4, 3, 3] */
  const int32_t o = first_gradient(g);
  g->outputs[o].pair = g->outputs[o + 1].pair;
  g->outputs[o + 1].pair = g->inputs[g->outputs[o].pair].pair;
}
static void c_two_losses(eg_graph *g, eg_program *p) {
  (void)p;
  g->outputs[first_gradient(g)].role = EG_ROLE_LOSS;
  g->outputs[first_gradient(g)].pair = -1;
}
static void c_input_pair(eg_graph *g, eg_program *p) {
  (void)p;
  g->inputs[2].pair = -1; /* the file records no gradient for a parameter that has one */
}
static void c_random_role(eg_graph *g, eg_program *p) {
  (void)p;
  g->inputs[0].role = EG_ROLE_RANDOM; /* no random kind */
}
static void c_static_size(eg_graph *g, eg_program *p) {
  (void)p;
  g->statics[0].nbytes -= 4;
}
static void c_value_dtype(eg_graph *g, eg_program *p) {
  (void)p;
  g->values[0].dtype = EG_DTYPE_COUNT;
}
static void c_tuple_elem(eg_graph *g, eg_program *p) {
  (void)p;
  for (int32_t i = 0; i < g->n_values; i++)
    if (g->values[i].kind == EG_VALUE_TUPLE) {
      g->values[i].elems[0] = g->n_values;
      return;
    }
}
static void c_dup_node_name(eg_graph *g, eg_program *p) {
  (void)p;
  g->nodes[1].name = g->nodes[0].name;
}
static void c_npu_int32_float(eg_graph *g, eg_program *p) {
  (void)p;
  g->values[g->nodes[0].output].npu_int32 = true;
}
static void c_quant_scale(eg_graph *g, eg_program *p) {
  (void)p;
  static const double scale[1] = {0};
  static const int64_t zp[1] = {0};
  static const eg_quant q = {EG_DTYPE_INT8, -1, 1, scale, zp, -128, 127};
  g->values[g->nodes[0].output].quant = &q;
}

static void test_corrupted_programs_rejected(void) {
  static const struct {
    const char *what, *section;
    corrupt_fn fn;
    const char *needle; /* in the message, where given */
  } cases[] = {
      {"order swapped", "PROGRAM", c_order_swap, NULL},
      {"steps reversed (order too)", "PROGRAM", c_steps_reversed, NULL},
      {"CPU step names an NPU node", "PROGRAM", c_step_npu_node, NULL},
      {"partition id out of range", "PLACEMENT", c_partition_id, NULL},
      {"CPU node without reason", "PLACEMENT", c_cpu_reason, NULL},
      {"partition lists a CPU node", "PLACEMENT", c_partition_list, NULL},
      {"input bound to an APP_READ tensor", "NPU", c_boundary_tensor, NULL},
      {"boundary tensor id out of range", "NPU", c_boundary_tensor_range, NULL},
      {"output value from outside", "NPU", c_boundary_value, NULL},
      {"nhwc flag flipped", "NPU", c_boundary_nhwc, NULL},
      {"an output dropped", "NPU", c_boundary_dropped, NULL},
      {"executor plan folds a Conv2d", "NPU", c_plan_fold_conv,
       "executor plan: op 0 (convolution, Conv2d): FOLD: only a Transpose is folded or skipped"},
      {"executor plan how code 5", "NPU", c_plan_how_code, "how 5"},
      {"executor plan skips a Transpose others read", "NPU", c_plan_skip_read,
       "must read it as a filter redirected to its input"},
      {"executor plan: a skipped Transpose nobody writes", "NPU", c_plan_y_dst_dropped,
       "or written by the Conv2d before it"},
      {"executor plan: filter source out of range", "NPU", c_plan_filter_src_range,
       "tensor ids -1 or below"},
      {"a value held NHWC on one side only", "NPU", c_held_on_one_side,
       "held NHWC on one boundary and not on another"},
      {"a graph output held NHWC", "NPU", c_held_graph_output,
       "held NHWC between partitions: only a float32 NHWC value defined on the NPU that no CPU "
       "node or graph output reads is"},
      {"node output id out of range", "GRAPH", c_node_output, NULL},
      {"argument value id out of range", "GRAPH", c_arg_value, NULL},
      {"argument used before its definition", "GRAPH", c_arg_later, NULL},
      {"input value id -1", "GRAPH", c_input_value, NULL},
      {"input random kind 2", "GRAPH", c_random_kind, NULL},
      {"Bernoulli p 1.5", "GRAPH", c_random_p, NULL},
      {"Bernoulli mask of int64", "GRAPH", c_random_dtype, NULL},
      {"static size", "GRAPH", c_static_size, NULL},
      {"dtype code 8", "GRAPH", c_value_dtype, NULL},
      {"tuple element out of range", "GRAPH", c_tuple_elem, NULL},
      {"duplicate node name", "GRAPH", c_dup_node_name, NULL},
      {"npu_int32 on a float value", "GRAPH", c_npu_int32_float, NULL},
      {"quantization scale 0", "GRAPH", c_quant_scale, NULL},
      {"role code 9", "GRAPH", c_role_code, "inputs[0]: role code (9): unknown"},
      {"an output's role on an input", "GRAPH", c_role_of_output,
       "inputs[0] \"input\": role \"loss\": not a role of an input"},
      {"gradient of a data input", "GRAPH", c_gradient_of_data,
       "role \"gradient\" of \"input\": input input is not a parameter (its role: \"data\")"},
      {"gradient of an input out of range", "GRAPH", c_gradient_pair_range,
       "role \"gradient\" of input #7: out of range [0, 7)"},
      {"gradient without its parameter", "GRAPH", c_gradient_without_of,
       "role \"gradient\" without \"of\": a gradient names the parameter input"},
      {"plain output naming an input", "GRAPH", c_output_with_of,
       "role \"output\" of \"0_bias\": only a gradient or a buffer_update names an input"},
      {"parameter without gradient", "GRAPH", c_parameter_without_gradient,
       "inputs[2] \"0_bias\": role \"parameter\": no output is its gradient: in a training "
       "step (a graph with gradient outputs) each parameter has exactly one"},
      {"two gradients of one parameter", "GRAPH", c_two_gradients,
       "of \"0_bias\": outputs[1] \"grad_0_bias\" is its gradient already"},
      {"gradient of another shape", "GRAPH", c_gradient_shape,
       "role \"gradient\" of \"2_weight\" (float32[4], input 2_weight float32[4, 4, 3, 3]): "
       "a gradient has its parameter's dtype and shape"},
      {"a second loss", "GRAPH", c_two_losses,
       "outputs[1] \"grad_0_bias\": role \"loss\" (float32[4]): the loss is a float32 scalar"},
      {"an input's pair unlike its output's", "GRAPH", c_input_pair,
       "inputs[2] \"0_bias\": role \"parameter\" with pair -1: must be 1"},
      {"random role without a random draw", "GRAPH", c_random_role,
       "inputs[0] \"input\": role \"random\" (no random draw)"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    eg_graph *g;
    eg_program p;
    /* the tiny step runs whole on SM8650's NPU: its loss's backward is kept on the CPU, so
     * the program has CPU steps to corrupt too */
    if (!build_skipping(TINY, "SM8650", "aten.nll_loss_backward", &g, &p)) {
      EG_CHECK(0);
      return;
    }
    cases[c].fn(p.graph, &p); /* the program's compiled graph is what is written */
    void *bytes = NULL;
    size_t size = 0;
    EG_CHECK(eg_egp_write_memory(&p, &bytes, &size) == EG_OK);
    char want[64];
    snprintf(want, sizeof want, "bad.egp: %s", cases[c].section);
    EG_CHECK_MSG(bytes && rejected(bytes, size), "%s: accepted", cases[c].what);
    EG_CHECK_MSG(strncmp(eg_last_error(), want, strlen(want)) == 0, "%s: '%s' does not start with "
                 "'%s'", cases[c].what, eg_last_error(), want);
    EG_CHECK_MSG(!cases[c].needle || strstr(eg_last_error(), cases[c].needle), "%s: '%s' lacks "
                 "'%s'", cases[c].what, eg_last_error(), cases[c].needle);
    free(bytes);
    /* undo what the program frees itself: the dropped output is still allocated */
    eg_program_free(&p);
    eg_graph_destroy(g);
  }
}

/* Header fields and unknown codes. */
static void test_header_rejected(void) {
  image im;
  EG_CHECK(tiny_image("SM8650", &im));
  if (!im.bytes) return;
  unsigned char *copy = malloc(im.size);
  struct {
    size_t at;
    uint32_t value;
    const char *needle;
  } cases[] = {{0, 0x31504745u ^ 1, "not an edgegrad compiled program"},
               {4, 1, "version (1)"}, /* version 1 (no value annotations) is refused */
               {4, 2, "version (2)"}, /* version 2 (no state_dict names) is refused */
               {4, 3, "version (3)"}, /* version 3 (no random inputs) is refused */
               {4, 8, "version (8): written by an older edgegrad"}, /* 8: no executor plans */
               {4, 9, "version (9): written by an older edgegrad"}, /* 9: no Reshape aliases */
               {4, 10, "version (10): written by an older edgegrad"}, /* 10: no input aliases */
               {4, 11, "version (11): written by an older edgegrad"}, /* 11: no fusions */
               {4, 12, "version (12): written by an older edgegrad"}, /* 12: no reduce tails */
               {4, 14, "version (14): written by a newer edgegrad"},
               {16, 5, "n_sections 5"},
               {20, 1, "flags 1"},
               {24, 7, "reserved 7"}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    memcpy(copy, im.bytes, im.size);
    set32(copy + cases[c].at, cases[c].value);
    EG_CHECK(rejected(copy, im.size));
    EG_CHECK_MSG(strstr(eg_last_error(), cases[c].needle), "'%s' lacks '%s'", eg_last_error(),
                 cases[c].needle);
  }
  /* an unknown SoC name in PROGRAM (its string replaced in place, same length) */
  memcpy(copy, im.bytes, im.size);
  unsigned char *soc = find_bytes(copy, im.size, "SM8650");
  EG_CHECK(soc != NULL);
  if (soc) {
    memcpy(soc, "XX9999", 6);
    EG_CHECK(rejected(copy, im.size));
    EG_CHECK_MSG(strstr(eg_last_error(), "PROGRAM: soc (XX9999)"), "%s", eg_last_error());
  }
  /* an unknown QNN op type ("Relu" is not in the fixture's graph; "Conv2d" is) */
  memcpy(copy, im.bytes, im.size);
  unsigned char *op = find_bytes(copy, im.size, "Conv2d");
  EG_CHECK(op != NULL);
  if (op) {
    memcpy(op, "Conv9d", 6);
    EG_CHECK(rejected(copy, im.size));
    EG_CHECK_MSG(strstr(eg_last_error(), "QNN op type Conv9d unknown"), "%s", eg_last_error());
  }
  free(copy);
  free(im.bytes);
}

static void test_not_a_file(void) {
  eg_egp *e = NULL;
  EG_CHECK(eg_egp_read("no_such_file.egp", &e) == EG_ERR_IO && e == NULL);
  eg_model *m = NULL;
  EG_CHECK(eg_model_load("no_such_file.egp", &m) != EG_OK && m == NULL);
  EG_CHECK(rejected((const unsigned char *)"", 0));
  EG_CHECK(rejected((const unsigned char *)"EGP1", 4));
}

int main(void) {
  EG_RUN(test_round_trip_sm8650);
  EG_RUN(test_round_trip_sm8350);
  EG_RUN(test_round_trip_sources);
  EG_RUN(test_round_trip_annotations);
  EG_RUN(test_round_trip_inputs);
  EG_RUN(test_run_matches_in_memory);
  EG_RUN(test_static_bytes_once);
  EG_RUN(test_relaid_weight_stored_beside_ir);
  EG_RUN(test_every_truncation_rejected);
  EG_RUN(test_every_metadata_flip_is_safe);
  EG_RUN(test_counts_rejected);
  EG_RUN(test_corrupted_programs_rejected);
  EG_RUN(test_header_rejected);
  EG_RUN(test_not_a_file);
  return eg_test_summary();
}
