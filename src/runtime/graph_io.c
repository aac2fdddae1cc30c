/* graph_io.c — a graph's inputs and outputs as the public API describes them (graph_io.h). */
#include "runtime/graph_io.h"

#include <string.h>

#include "ir/graph.h"

eg_io_role eg_graph_io_role(const eg_graph *g, bool is_input, int32_t index, int32_t *pair) {
  const eg_named *e = is_input ? &g->inputs[index] : &g->outputs[index];
  *pair = e->pair;
  return e->role;
}

void eg_graph_describe(const eg_graph *g, bool is_input, int index, eg_tensor_desc *out) {
  const eg_named *list = is_input ? g->inputs : g->outputs;
  const eg_value *v = &g->values[list[index].value];
  memset(out, 0, sizeof *out);
  out->name = list[index].name;
  out->state_dict = list[index].state_dict;
  out->random = list[index].random;
  out->random_p = list[index].random ? list[index].random_p : 0;
  int32_t pair = -1;
  out->role = eg_graph_io_role(g, is_input, index, &pair);
  out->pair = pair;
  out->tensor.dtype = v->dtype;
  out->tensor.rank = v->rank;
  memcpy(out->tensor.shape, v->shape, sizeof v->shape);
}

void eg_graph_input_classes(const eg_graph *g, int index, int64_t *classes,
                            int64_t *ignore_index) {
  *classes = 0;
  *ignore_index = -100; /* ATen's default */
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_nll_loss_forward && n->op != EG_OP_nll_loss2d_forward) continue;
    const eg_arg *self = eg_node_arg(n, 0, "self"), *target = eg_node_arg(n, 1, "target");
    const eg_arg *ignore = eg_node_arg(n, 4, "ignore_index");
    if (!self || !target || self->kind != EG_ARG_VALUE || target->kind != EG_ARG_VALUE ||
        target->value != g->inputs[index].value)
      continue;
    const eg_value *s = &g->values[self->value];
    const int64_t c = s->shape[s->rank == 1 ? 0 : 1];
    if (*classes == 0 || c < *classes) {
      *classes = c;
      *ignore_index = ignore && ignore->kind == EG_ARG_INT ? ignore->i : -100;
    }
  }
}
