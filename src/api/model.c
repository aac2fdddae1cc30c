/* model.c — eg_model_* of the public API in the runtime library: loading a compiled program,
 * describing inputs/outputs, statistics. (Loading a graph JSON file is the compiler's:
 * compiler/api/compile.c.) */
#include <stdlib.h>
#include <string.h>

#include "api/runtime.h"
#include "api/struct_size.h"
#include "program/egp_format.h"
#include "runtime/model.h"
#include "util/error.h"

eg_status eg_model_load_compiled(const char *path, eg_model **out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_load_compiled: out is NULL");
  *out = NULL;
  if (!path) return eg_error(EG_ERR_ARGUMENT, "eg_model_load_compiled: path is NULL");
  eg_model *m = calloc(1, sizeof *m);
  if (!m) return eg_error(EG_ERR_NOMEM, "eg_model_load_compiled: out of memory");
  eg_status s = eg_egp_read(path, &m->compiled);
  if (s != EG_OK) {
    free(m);
    return s;
  }
  m->graph = m->compiled->graph;
  *out = m;
  return EG_OK;
}

void eg_model_destroy(eg_model *model) {
  if (!model) return;
  if (model->compiled) eg_egp_free(model->compiled);
  else eg_graph_destroy(model->graph);
  free(model);
}

int eg_model_num_inputs(const eg_model *m) { return m ? m->graph->n_inputs : 0; }
int eg_model_num_outputs(const eg_model *m) { return m ? m->graph->n_outputs : 0; }

static eg_status describe(const eg_graph *g, bool is_input, int index, eg_tensor_desc *out,
                          size_t out_size) {
  const char *where = is_input ? "eg_model_input" : "eg_model_output";
  const int n = is_input ? g->n_inputs : g->n_outputs;
  if (!out) return eg_error(EG_ERR_ARGUMENT, "%s: out is NULL", where);
  if (index < 0 || index >= n)
    return eg_error(EG_ERR_ARGUMENT, "%s: index %d out of range [0, %d)", where, index, n);
  eg_tensor_desc d;
  eg_graph_describe(g, is_input, index, &d);
  return EG_STRUCT_WRITE(eg_tensor_desc, out, out_size, &d, where);
}

eg_status(eg_model_input)(const eg_model *m, int index, eg_tensor_desc *out, size_t out_size) {
  if (!m) return eg_error(EG_ERR_ARGUMENT, "eg_model_input: model is NULL");
  return describe(m->graph, true, index, out, out_size);
}

eg_status(eg_model_output)(const eg_model *m, int index, eg_tensor_desc *out, size_t out_size) {
  if (!m) return eg_error(EG_ERR_ARGUMENT, "eg_model_output: model is NULL");
  return describe(m->graph, false, index, out, out_size);
}

/* nll_loss(2d)_forward reads its scores as argument 0 (self) and its labels as argument 1
 * (target), with ignore_index argument 4; the verifier checked their kinds and shapes. */
eg_status eg_model_input_classes(const eg_model *m, int index, int64_t *classes,
                                 int64_t *ignore_index) {
  if (!m || !classes || !ignore_index)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_input_classes: %s is NULL",
                    !m ? "model" : !classes ? "classes" : "ignore_index");
  const eg_graph *g = m->graph;
  if (index < 0 || index >= g->n_inputs)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_input_classes: index %d out of range [0, %d)",
                    index, g->n_inputs);
  eg_graph_input_classes(g, index, classes, ignore_index);
  return EG_OK;
}

void(eg_model_get_stats)(const eg_model *m, eg_model_stats *out, size_t out_size) {
  if (!out) return; /* nothing to fill: the call has no status to report it with */
  eg_model_stats st = {0};
  if (m) {
    const eg_graph *g = m->graph;
    st.num_nodes = g->n_nodes;
    st.num_values = g->n_values;
    st.num_statics = g->n_statics;
    for (int32_t i = 0; i < g->n_statics; i++) st.static_bytes += g->statics[i].nbytes;
  }
  (void)EG_STRUCT_WRITE(eg_model_stats, out, out_size, &st, "eg_model_get_stats");
}

/* Op kinds in first-use order: kind k is the k-th distinct op met walking the nodes. */
static int op_kinds(const eg_graph *g, eg_op *ops, int *counts) {
  int k = 0;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    int j = 0;
    while (j < k && ops[j] != g->nodes[i].op) j++;
    if (j == k) {
      ops[k] = g->nodes[i].op;
      counts[k++] = 0;
    }
    counts[j]++;
  }
  return k;
}

int eg_model_num_op_kinds(const eg_model *m) {
  if (!m) return 0;
  eg_op ops[EG_OP_COUNT];
  int counts[EG_OP_COUNT];
  return op_kinds(m->graph, ops, counts);
}

eg_status eg_model_op_kind(const eg_model *m, int index, const char **target, int *count) {
  if (!m) return eg_error(EG_ERR_ARGUMENT, "eg_model_op_kind: model is NULL");
  eg_op ops[EG_OP_COUNT];
  int counts[EG_OP_COUNT];
  int k = op_kinds(m->graph, ops, counts);
  if (index < 0 || index >= k)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_op_kind: index %d out of range [0, %d)", index, k);
  if (target) *target = eg_op_target(ops[index]);
  if (count) *count = counts[index];
  return EG_OK;
}
