/* seed.c — finding a training step's backward seed (see seed.h for the rules). */
#include "ir/seed.h"

#include "ir/edit.h"

int32_t eg_graph_loss(const eg_graph *g) {
  for (int32_t o = 0; o < g->n_outputs; o++)
    if (g->outputs[o].role == EG_ROLE_LOSS)
      return g->values[g->outputs[o].value].dtype == EG_DTYPE_FLOAT32 ? g->outputs[o].value : -1;
  return -1;
}

static bool read_by_a_node(const eg_graph *g, int32_t value) {
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (eg_node_reads(&g->nodes[i], value)) return true;
  return false;
}

/* Rule 1: value v is the output of ones_like(loss). */
static bool ones_like_of(const eg_graph *g, int32_t v, int32_t loss) {
  const eg_value *x = &g->values[v];
  if (x->role != EG_ROLE_NODE || x->dtype != EG_DTYPE_FLOAT32) return false;
  const eg_node *n = &g->nodes[x->def];
  const eg_arg *self = n->op == EG_OP_ones_like ? eg_node_arg(n, 0, "self") : NULL;
  return self && self->kind == EG_ARG_VALUE && self->value == loss;
}

/* Rule 2: value v is a float32 constant of the loss's shape holding ones. */
static bool ones_constant(const eg_graph *g, int32_t v, int32_t loss) {
  const eg_value *x = &g->values[v], *l = &g->values[loss];
  if (x->kind != EG_VALUE_TENSOR || x->role != EG_ROLE_STATIC ||
      x->dtype != EG_DTYPE_FLOAT32 || x->rank != l->rank)
    return false;
  for (int d = 0; d < x->rank; d++)
    if (x->shape[d] != l->shape[d]) return false;
  const float *data = g->statics[x->def].data;
  const int64_t n = eg_value_numel(x);
  for (int64_t k = 0; data && k < n; k++)
    if (data[k] != 1.0f) return false;
  return data != NULL;
}

int eg_graph_seed_matches(const eg_graph *g, int32_t seeds[2], int *rule) {
  seeds[0] = seeds[1] = -1;
  *rule = 0;
  const int32_t loss = eg_graph_loss(g);
  int found = 0;
  for (int r = 1; loss >= 0 && r <= 2 && found == 0; r++)
    for (int32_t v = 0; v < g->n_values; v++) {
      const bool match = r == 1 ? ones_like_of(g, v, loss) : ones_constant(g, v, loss);
      if (!match || !read_by_a_node(g, v)) continue;
      if (found < 2) seeds[found] = v;
      found++;
      *rule = r;
    }
  return found;
}

int32_t eg_graph_seed_constant(const eg_graph *g) {
  int32_t seeds[2];
  int rule;
  return eg_graph_seed_matches(g, seeds, &rule) == 1 && rule == 2 ? seeds[0] : -1;
}
