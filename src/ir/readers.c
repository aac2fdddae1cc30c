/* readers.c — see readers.h. */
#include "ir/readers.h"

#include <stdlib.h>

#include "util/error.h"

/* The readers of two sets together. */
static int32_t merge_readers(int32_t a, int32_t b) {
  if (a == EG_READ_NONE) return b;
  if (b == EG_READ_NONE || a == b) return a;
  return EG_READ_OUTSIDE;
}

static void note_reader(const eg_arg *arg, int32_t where, int32_t *of) {
  if (arg->kind == EG_ARG_LIST) {
    for (int32_t e = 0; e < arg->list.n; e++) note_reader(&arg->list.items[e], where, of);
  } else if (arg->kind == EG_ARG_VALUE) {
    of[arg->value] = merge_readers(of[arg->value], where);
  }
}

eg_status eg_readers_compute(const eg_graph *g, const eg_partitioning *parts, eg_readers *out) {
  out->n_values = g->n_values;
  out->of = malloc(((size_t)g->n_values + 1) * sizeof(int32_t));
  if (!out->of) return eg_error(EG_ERR_NOMEM, "compile: out of memory");
  for (int32_t v = 0; v < g->n_values; v++) out->of[v] = EG_READ_NONE;
  for (int32_t o = 0; o < g->n_outputs; o++) out->of[g->outputs[o].value] = EG_READ_OUTSIDE;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    int32_t where = parts->nodes[i].npu ? parts->nodes[i].partition : EG_READ_OUTSIDE;
    for (int32_t a = 0; a < n->n_args; a++) note_reader(&n->args[a], where, out->of);
    for (int32_t a = 0; a < n->n_kwargs; a++) note_reader(&n->kwargs[a], where, out->of);
  }
  /* an element is read wherever its getitem's output is (last getitem first: a getitem's
   * output read only through a later getitem is complete by then) */
  for (int32_t i = g->n_nodes - 1; i >= 0; i--) {
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_getitem || n->output < 0) continue;
    const eg_value *t = &g->values[eg_node_arg(n, 0, NULL)->value];
    int32_t elem = t->elems[eg_node_arg(n, 1, NULL)->i];
    out->of[elem] = merge_readers(out->of[elem], out->of[n->output]);
  }
  return EG_OK;
}

void eg_readers_free(eg_readers *r) {
  free(r->of);
  r->of = NULL;
}

bool eg_readers_outside(const eg_readers *r, int32_t value, int32_t p) {
  int32_t w = r->of[value];
  return w == EG_READ_OUTSIDE || (w >= 0 && w != p);
}

/* Marks every value `arg` names (list items too) as read by a CPU node. */
static void note_cpu_reader(const eg_arg *arg, bool *cpu) {
  if (arg->kind == EG_ARG_LIST) {
    for (int32_t e = 0; e < arg->list.n; e++) note_cpu_reader(&arg->list.items[e], cpu);
  } else if (arg->kind == EG_ARG_VALUE) {
    cpu[arg->value] = true;
  }
}

eg_status eg_nhwc_between_partitions(const eg_graph *g, const eg_partitioning *parts, bool **out) {
  *out = NULL;
  bool *cpu = calloc((size_t)g->n_values + 1, sizeof(bool));
  bool *held = calloc((size_t)g->n_values + 1, sizeof(bool));
  if (!cpu || !held) {
    free(cpu);
    free(held);
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  }
  for (int32_t o = 0; o < g->n_outputs; o++) cpu[g->outputs[o].value] = true;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (parts->nodes[i].npu) continue;
    for (int32_t a = 0; a < n->n_args; a++) note_cpu_reader(&n->args[a], cpu);
    for (int32_t a = 0; a < n->n_kwargs; a++) note_cpu_reader(&n->kwargs[a], cpu);
  }
  for (int32_t i = g->n_nodes - 1; i >= 0; i--) { /* as eg_readers_compute: last first */
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_getitem || n->output < 0 || !cpu[n->output]) continue;
    const eg_value *t = &g->values[eg_node_arg(n, 0, NULL)->value];
    cpu[t->elems[eg_node_arg(n, 1, NULL)->i]] = true;
  }
  for (int32_t v = 0; v < g->n_values; v++) {
    const eg_value *x = &g->values[v];
    held[v] = x->role == EG_ROLE_NODE && parts->nodes[x->def].npu && !cpu[v] &&
              x->rank == 4 && x->axes == EG_AXES_NHWC && x->dtype == EG_DTYPE_FLOAT32 && !x->quant;
  }
  free(cpu);
  *out = held;
  return EG_OK;
}
