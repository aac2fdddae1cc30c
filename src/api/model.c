/* model.c — eg_model_* of the public API in the runtime library: loading a compiled program,
 * describing inputs/outputs, statistics. (Loading a graph JSON file is the compiler's:
 * api/compile.c.) */
#include <stdlib.h>
#include <string.h>

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

static eg_status describe(const eg_graph *g, const eg_named *list, int n, int index,
                          const char *what, eg_tensor_desc *out) {
  if (!out || index < 0 || index >= n)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_%s: index %d out of range [0, %d)", what, index, n);
  const eg_value *v = &g->values[list[index].value];
  memset(out, 0, sizeof *out);
  out->name = list[index].name;
  out->state_dict = list[index].state_dict;
  out->random = list[index].random;
  out->random_p = list[index].random ? list[index].random_p : 0;
  out->tensor.dtype = v->dtype;
  out->tensor.rank = v->rank;
  memcpy(out->tensor.shape, v->shape, sizeof v->shape);
  return EG_OK;
}

eg_status eg_model_input(const eg_model *m, int index, eg_tensor_desc *out) {
  if (!m) return eg_error(EG_ERR_ARGUMENT, "eg_model_input: model is NULL");
  return describe(m->graph, m->graph->inputs, m->graph->n_inputs, index, "input", out);
}

eg_status eg_model_output(const eg_model *m, int index, eg_tensor_desc *out) {
  if (!m) return eg_error(EG_ERR_ARGUMENT, "eg_model_output: model is NULL");
  return describe(m->graph, m->graph->outputs, m->graph->n_outputs, index, "output", out);
}

void eg_model_get_stats(const eg_model *m, eg_model_stats *out) {
  memset(out, 0, sizeof *out);
  if (!m) return;
  const eg_graph *g = m->graph;
  out->num_nodes = g->n_nodes;
  out->num_values = g->n_values;
  out->num_statics = g->n_statics;
  for (int32_t i = 0; i < g->n_statics; i++) out->static_bytes += g->statics[i].nbytes;
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
