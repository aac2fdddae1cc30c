/* test_pass_i64.c — pass i64_to_i32 (src/compiler/passes/i64_to_i32.c) and the int64 -> int32
 * narrowing it enables in the NPU lowering (backends/htp/compile/lower.c).
 *
 *   - structural, with an injected builder table: a tuple with a None element and an int64
 *     element made by an NPU node (the element and its getitem are marked, the None skipped), an
 *     int64 value only CPU nodes touch (not marked), an int64 input an NPU node reads (marked), a
 *     node the user's --skip-node keeps on the CPU (its int64 values not marked); dtypes never
 *     change (graph outputs stay int64); flags a stale run left are cleared;
 *   - the exported tiny_step (float, int64 labels read only by the CPU loss) on SM8350 (no float
 *     NPU) and on SM8650: no value is marked;
 *   - real builders on SM8650, graph built in C: an int64 input through view and permute is placed
 *     on the NPU, marked by the whole pipeline, and lowered to INT_32 tensors; an int64 static
 *     outside int32 is declined by the builder with a reason naming it, and forcing it through
 *     the lowering gives the compile-time error naming the static; an unmarked int64 value gives
 *     the lowering's "not marked npu_int32" error.
 * The numeric side (PyTorch, the .egp round trip, the run-time range error) is
 * tests/ops/test_npu_int64.py. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backends/htp/compile/lower.h"
#include "eg_test.h"
#include "eg_test_backend.h"
#include "eg_test_graph.h"
#include "compiler/frontend/frontend.h"
#include "compiler/partition/partition.h"
#include "compiler/passes/pipeline.h"
#include "ops/verify.h"
#include "util/error.h"

/* ---- hand-built graphs ---- */

#define MAX_VALUES 64
#define MAX_NODES 32

static eg_graph *tg_create(void) {
  eg_graph *g = eg_graph_create();
  if (!g) return NULL;
  g->values = eg_arena_array(g->arena, MAX_VALUES, sizeof(eg_value));
  g->nodes = eg_arena_array(g->arena, MAX_NODES, sizeof(eg_node));
  g->inputs = eg_arena_array(g->arena, 4, sizeof(eg_named));
  g->outputs = eg_arena_array(g->arena, 8, sizeof(eg_named));
  g->statics = eg_arena_array(g->arena, 4, sizeof(eg_static));
  return g;
}

static int32_t tg_value(eg_graph *g, eg_dtype dt, int rank, const int64_t *shape, eg_value_role r,
                        int32_t def) {
  int32_t id = g->n_values++;
  eg_value *v = &g->values[id];
  *v = (eg_value){.kind = EG_VALUE_TENSOR, .dtype = dt, .rank = rank, .role = r, .def = def};
  for (int d = 0; d < rank; d++) v->shape[d] = shape[d];
  return id;
}

static int32_t tg_input(eg_graph *g, const char *name, eg_dtype dt, int rank,
                        const int64_t *shape) {
  int32_t id = tg_value(g, dt, rank, shape, EG_ROLE_INPUT, g->n_inputs);
  g->inputs[g->n_inputs++] = (eg_named){.name = eg_arena_strdup(g->arena, name), .value = id};
  return id;
}

static void tg_output(eg_graph *g, const char *name, int32_t id) {
  g->outputs[g->n_outputs++] = (eg_named){.name = eg_arena_strdup(g->arena, name), .value = id};
}

/* A node of `op` on `n_in` tensor values, with one output of dtype dt, shape [4]. */
static int32_t tg_op(eg_graph *g, const char *name, eg_op o, eg_dtype dt, int n_in, ...) {
  va_list ap;
  va_start(ap, n_in);
  eg_node *n = eg_test_graph_vnode(g, name, o, n_in, ap);
  va_end(ap);
  static const int64_t four[1] = {4};
  n->output = tg_value(g, dt, 1, four, EG_ROLE_NODE, g->n_nodes - 1);
  return n->output;
}

static int32_t tg_getitem(eg_graph *g, const char *name, int32_t tuple, int index) {
  eg_node *n = eg_test_graph_node(g, name, EG_OP_getitem, 2);
  n->args[0] = (eg_arg){.kind = EG_ARG_VALUE, .value = tuple};
  n->args[1] = (eg_arg){.kind = EG_ARG_INT, .i = index};
  const int32_t e = g->values[tuple].elems[index];
  n->output = e < 0 ? -1 : tg_value(g, g->values[e].dtype, 1, g->values[e].shape, EG_ROLE_NODE,
                                    g->n_nodes - 1);
  return n->output;
}

/* ---- injected builders: native_batch_norm (our tuple maker) and relu are NPU-capable ---- */

static bool fake_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                          size_t size) {
  (void)g;
  (void)n;
  (void)t;
  (void)reason;
  (void)size;
  return true;
}

static const eg_htp_builder fake = {"fake", 0, fake_supports, NULL};

static const eg_htp_builder *const *fake_table(void) {
  static const eg_htp_builder *table[EG_OP_COUNT];
  table[EG_OP_native_batch_norm] = &fake;
  table[EG_OP_relu] = &fake;
  return table;
}

/* x (float), idx (int64), labels (int64). NPU: tup = native_batch_norm(x) -> (float, None,
 * int64); its getitems; relu(idx) (an NPU node reading an int64 input). CPU: neg(labels),
 * neg(getitem 2) (reads an NPU-made int64 value), and the skipped relu "keep" on labels. */
static void test_tuple_none_cpu_only_and_skip(void) {
  eg_graph *g = tg_create();
  static const int64_t four[1] = {4};
  const int32_t x = tg_input(g, "x", EG_DTYPE_FLOAT32, 1, four);
  const int32_t idx = tg_input(g, "idx", EG_DTYPE_INT64, 1, four);
  const int32_t labels = tg_input(g, "labels", EG_DTYPE_INT64, 1, four);
  eg_node *bn = eg_test_graph_node(g, "tup", EG_OP_native_batch_norm, 1);
  bn->args[0] = (eg_arg){.kind = EG_ARG_VALUE, .value = x};
  const int32_t tup = g->n_values++;
  g->values[tup] = (eg_value){.kind = EG_VALUE_TUPLE, .n_elems = 3, .role = EG_ROLE_NODE,
                              .def = g->n_nodes - 1};
  g->values[tup].elems = eg_arena_array(g->arena, 3, sizeof(int32_t));
  g->values[tup].elems[0] = tg_value(g, EG_DTYPE_FLOAT32, 1, four, EG_ROLE_NODE, g->n_nodes - 1);
  g->values[tup].elems[1] = -1; /* None */
  g->values[tup].elems[2] = tg_value(g, EG_DTYPE_INT64, 1, four, EG_ROLE_NODE, g->n_nodes - 1);
  bn->output = tup;
  const int32_t e0 = tg_getitem(g, "e0", tup, 0);
  const int32_t e1 = tg_getitem(g, "e1", tup, 1);
  const int32_t e2 = tg_getitem(g, "e2", tup, 2);
  const int32_t r = tg_op(g, "relu_idx", EG_OP_relu, EG_DTYPE_INT64, 1, idx);
  const int32_t cpu_only = tg_op(g, "neg_labels", EG_OP_neg, EG_DTYPE_INT64, 1, labels);
  const int32_t after = tg_op(g, "neg_e2", EG_OP_neg, EG_DTYPE_INT64, 1, e2);
  const int32_t kept = tg_op(g, "keep", EG_OP_relu, EG_DTYPE_INT64, 1, labels);
  tg_output(g, "e0", e0);
  tg_output(g, "e2", e2);
  tg_output(g, "r", r);
  tg_output(g, "cpu_only", cpu_only);
  tg_output(g, "after", after);
  tg_output(g, "kept", kept);
  EG_CHECK(e1 == -1);
  g->values[cpu_only].npu_int32 = true; /* stale: the pass recomputes every flag */

  static const char *const skip[] = {"keep"};
  eg_partition_options opt = {.target = eg_target_find("SM8650"), .backend = eg_test_backend(fake_table()),
                              .skip_nodes = skip, .n_skip_nodes = 1};
  EG_CHECK_MSG(eg_place_graph(g, &opt) == EG_OK, "%s", eg_last_error()); /* pass place */
  EG_CHECK_MSG(eg_pass_i64_to_i32(g, &opt) == EG_OK, "%s", eg_last_error());
  const eg_value *v = g->values;
  EG_CHECK(v[g->values[tup].elems[2]].npu_int32); /* the tuple's int64 element */
  EG_CHECK(v[e2].npu_int32);                       /* its getitem (an NPU node) */
  EG_CHECK(v[idx].npu_int32);                      /* a partition input */
  EG_CHECK(v[r].npu_int32);
  EG_CHECK(!v[g->values[tup].elems[0]].npu_int32 && !v[e0].npu_int32); /* float */
  EG_CHECK(!v[labels].npu_int32);                  /* read by CPU nodes only */
  EG_CHECK(!v[cpu_only].npu_int32);                /* stale flag cleared */
  EG_CHECK(!v[after].npu_int32);                   /* defined on the CPU */
  EG_CHECK(!v[kept].npu_int32);                    /* --skip-node keeps it on the CPU */
  for (int32_t o = 0; o < g->n_outputs; o++)       /* dtypes as built */
    EG_CHECK(v[g->outputs[o].value].dtype == (o == 0 ? EG_DTYPE_FLOAT32 : EG_DTYPE_INT64));
  /* the same options again: the same marks */
  bool before[MAX_VALUES];
  for (int32_t i = 0; i < g->n_values; i++) before[i] = v[i].npu_int32;
  EG_CHECK(eg_pass_i64_to_i32(g, &opt) == EG_OK);
  for (int32_t i = 0; i < g->n_values; i++) EG_CHECK(before[i] == v[i].npu_int32);
  eg_graph_destroy(g);
}

/* tiny_step (float conv step, int64 labels into nll_loss) through the whole pipeline: no value
 * marked on SM8350 (no NPU node at all); on SM8650 nll_loss_forward is on the NPU (it compares
 * the labels as int32), so exactly the labels are marked; the labels stay int64 either way. */
static void test_float_step_unmarked(void) {
  static const char *const socs[] = {"SM8350", "SM8650"};
  for (int k = 0; k < 2; k++) {
    eg_graph *g = NULL;
    EG_CHECK_MSG(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &g) == EG_OK, "%s",
                 eg_last_error());
    if (!g) return;
    eg_partition_options opt = {.target = eg_target_find(socs[k])};
    EG_CHECK_MSG(eg_passes_run(g, &opt, NULL, NULL) == EG_OK, "%s", eg_last_error());
    int int64s = 0;
    for (int32_t i = 0; i < g->n_values; i++) {
      const bool i64 = g->values[i].kind == EG_VALUE_TENSOR && g->values[i].dtype == EG_DTYPE_INT64;
      EG_CHECK_MSG(g->values[i].npu_int32 == (k == 1 && i64), "%s: value %d %smarked", socs[k],
                   (int)i, g->values[i].npu_int32 ? "" : "not ");
      int64s += i64;
    }
    EG_CHECK(int64s > 0); /* the labels are there, and still int64 */
    eg_graph_destroy(g);
  }
}

/* ---- real builders: labels [2,3] int64 -> permute [3,2] -> view [6], both outputs ---- */

static eg_node *view_node(eg_graph *g, const char *name, int32_t x, int64_t n) {
  eg_node *v = eg_test_graph_node(g, name, EG_OP_view, 2);
  v->args[0] = (eg_arg){.kind = EG_ARG_VALUE, .value = x};
  eg_arg *items = eg_arena_array(g->arena, 1, sizeof(eg_arg));
  items[0] = (eg_arg){.kind = EG_ARG_INT, .i = n};
  v->args[1] = (eg_arg){.kind = EG_ARG_LIST, .list = {1, items}};
  const int64_t shape[1] = {n};
  v->output = tg_value(g, EG_DTYPE_INT64, 1, shape, EG_ROLE_NODE, g->n_nodes - 1);
  return v;
}

static eg_graph *labels_graph(void) {
  eg_graph *g = tg_create();
  static const int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
  const int32_t labels = tg_input(g, "labels", EG_DTYPE_INT64, 2, s23);
  eg_node *p = eg_test_graph_node(g, "permute", EG_OP_permute, 2);
  p->args[0] = (eg_arg){.kind = EG_ARG_VALUE, .value = labels};
  eg_arg *items = eg_arena_array(g->arena, 2, sizeof(eg_arg));
  items[0] = (eg_arg){.kind = EG_ARG_INT, .i = 1};
  items[1] = (eg_arg){.kind = EG_ARG_INT, .i = 0};
  p->args[1] = (eg_arg){.kind = EG_ARG_LIST, .list = {2, items}};
  p->output = tg_value(g, EG_DTYPE_INT64, 2, s32, EG_ROLE_NODE, g->n_nodes - 1);
  tg_output(g, "perm", p->output);
  tg_output(g, "flat", view_node(g, "view", p->output, 6)->output);
  return g;
}

static const eg_htp_qnn_tensor *find_tensor(const eg_htp_qnn_graph *q, eg_htp_qnn_tensor_type type) {
  for (int32_t t = 0; t < eg_htp_qnn_graph_num_tensors(q); t++)
    if (eg_htp_qnn_graph_tensor(q, t)->type == type) return eg_htp_qnn_graph_tensor(q, t);
  return NULL;
}

static void test_real_builders_mark_and_lower_int32(void) {
  eg_graph *g = labels_graph();
  EG_CHECK_MSG(eg_graph_verify(g) == EG_OK, "%s", eg_last_error());
  eg_partition_options opt = {.target = eg_target_find("SM8650")};
  EG_CHECK_MSG(eg_passes_run(g, &opt, NULL, NULL) == EG_OK, "%s", eg_last_error());
  for (int32_t i = 0; i < g->n_values; i++) {
    EG_CHECK_MSG(g->values[i].npu_int32, "value %d not marked", (int)i);
    EG_CHECK(g->values[i].dtype == EG_DTYPE_INT64);
  }
  eg_partitioning parts;
  EG_CHECK(eg_partition_graph(g, &opt, &parts) == EG_OK);
  EG_CHECK(parts.n_partitions == 1 && parts.nodes[0].npu && parts.nodes[1].npu);
  if (parts.n_partitions == 1) {
    eg_lowered hp;
    EG_CHECK_MSG(eg_htp_lower_partition(g, &parts, 0, eg_htp_builders, &hp) == EG_OK, "%s",
                 eg_last_error());
    if (hp.graph) {
      for (int32_t t = 0; t < eg_htp_qnn_graph_num_tensors(hp.graph); t++)
        EG_CHECK(eg_htp_qnn_graph_tensor(hp.graph, t)->dtype == EG_HTP_QNN_DTYPE_INT_32);
      const eg_htp_qnn_tensor *in = find_tensor(hp.graph, EG_HTP_QNN_TENSOR_APP_WRITE);
      EG_CHECK(in && in->nbytes == 6 * sizeof(int32_t));
      EG_CHECK(hp.n_inputs == 1 && hp.n_outputs == 2);
    }
    eg_lowered_free(&hp);
  }
  eg_partitioning_free(&parts);
  eg_graph_destroy(g);
}

/* Without the pass's mark, an int64 value reaching the lowering is an error (never silently
 * narrowed). */
static void test_unmarked_int64_lowering_error(void) {
  eg_graph *g = labels_graph();
  EG_CHECK(eg_graph_verify(g) == EG_OK);
  eg_partition_options opt = {.target = eg_target_find("SM8650")};
  eg_partitioning parts;
  EG_CHECK(eg_partition_graph(g, &opt, &parts) == EG_OK);
  EG_CHECK(parts.n_partitions == 1);
  if (parts.n_partitions == 1) {
    eg_lowered hp;
    EG_CHECK(eg_htp_lower_partition(g, &parts, 0, eg_htp_builders, &hp) == EG_ERR_UNSUPPORTED);
    EG_CHECK_MSG(strstr(eg_last_error(), "value labels has dtype int64 and is not marked "
                        "npu_int32: the NPU has no int64") != NULL, "%s", eg_last_error());
  }
  eg_partitioning_free(&parts);
  eg_graph_destroy(g);
}

/* view(static) with an element outside int32: the builder declines naming the static; forced
 * through the lowering (an injected table places it, the flag set by hand), the lowering's
 * compile-time check names it. An in-range static is stored narrowed. */
static eg_graph *static_graph(int64_t big) {
  eg_graph *g = tg_create();
  static const int64_t s2[1] = {2};
  const int32_t c = tg_value(g, EG_DTYPE_INT64, 1, s2, EG_ROLE_STATIC, 0);
  int64_t *data = eg_arena_alloc(g->arena, 2 * sizeof(int64_t));
  data[0] = -7;
  data[1] = big;
  g->statics[g->n_statics++] = (eg_static){"table", c, data, 2 * sizeof(int64_t)};
  tg_output(g, "out", view_node(g, "view", c, 2)->output);
  return g;
}

static bool view_only(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                      size_t size) {
  (void)g, (void)n, (void)t, (void)reason, (void)size;
  return true;
}

static void test_static_range(void) {
  static const eg_htp_builder force = {"force", 0, view_only, NULL};
  static const eg_htp_builder *table[EG_OP_COUNT];
  table[EG_OP_view] = &force;
  for (int fits = 0; fits < 2; fits++) {
    const int64_t big = fits ? INT32_MIN : (int64_t)1 << 40;
    eg_graph *g = static_graph(big);
    EG_CHECK_MSG(eg_graph_verify(g) == EG_OK, "%s", eg_last_error());
    eg_partition_options real = {.target = eg_target_find("SM8650")};
    eg_partitioning parts;
    EG_CHECK(eg_partition_graph(g, &real, &parts) == EG_OK);
    if (!fits)
      EG_CHECK_MSG(!parts.nodes[0].npu && parts.nodes[0].reason &&
                       strstr(parts.nodes[0].reason, "int64 static table: element 1 = "
                                                     "1099511627776 is outside int32"),
                   "%s", parts.nodes[0].reason ? parts.nodes[0].reason : "(npu)");
    else
      EG_CHECK(parts.nodes[0].npu);
    eg_partitioning_free(&parts);

    eg_partition_options forced = {.target = eg_target_find("SM8650"), .backend = eg_test_backend(table)};
    EG_CHECK(eg_place_graph(g, &forced) == EG_OK && eg_pass_i64_to_i32(g, &forced) == EG_OK);
    EG_CHECK(g->values[0].npu_int32);
    EG_CHECK(eg_partition_graph(g, &forced, &parts) == EG_OK && parts.n_partitions == 1);
    eg_lowered hp;
    const eg_status s = eg_htp_lower_partition(g, &parts, 0, eg_htp_builders, &hp);
    if (fits) {
      EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
      const eg_htp_qnn_tensor *t = hp.graph ? find_tensor(hp.graph, EG_HTP_QNN_TENSOR_STATIC) : NULL;
      EG_CHECK(t && t->dtype == EG_HTP_QNN_DTYPE_INT_32 && t->nbytes == 2 * sizeof(int32_t));
      if (t && t->data) {
        const int32_t *d = t->data;
        EG_CHECK(d[0] == -7 && d[1] == INT32_MIN);
      }
      eg_lowered_free(&hp);
    } else {
      EG_CHECK(s == EG_ERR_UNSUPPORTED);
      EG_CHECK_MSG(strstr(eg_last_error(), "static table: element 1 = 1099511627776 is outside "
                          "int32 range") != NULL, "%s", eg_last_error());
    }
    eg_partitioning_free(&parts);
    eg_graph_destroy(g);
  }
}

int main(void) {
  EG_RUN(test_tuple_none_cpu_only_and_skip);
  EG_RUN(test_float_step_unmarked);
  EG_RUN(test_real_builders_mark_and_lower_int32);
  EG_RUN(test_unmarked_int64_lowering_error);
  EG_RUN(test_static_range);
  return eg_test_summary();
}
