/* loss_seed.c — the seed of a training step's backward, for loss scaling (eg_optimizer_options
 * .loss_scale): the value autograd starts the backward from, d loss / d loss = 1. An exported
 * step traces it as aten.ones_like(loss); pass decompose folds that node into a constant of
 * ones (a compiled program's graph keeps only the constant). Loss scaling makes this value the
 * scale S, so every gradient of the run comes out multiplied by S.
 *
 * Found by these rules, in this order (the loss is the float32 output named "loss", the
 * training contract of docs/export.md):
 *   1. a node ones_like(loss) read by some node;
 *   2. else a float32 constant (static) of the loss's shape, every element 1.0, read by some
 *      node: decompose's fold of rule 1.
 * More than one match of the rule that applies is refused (which one seeds the backward cannot
 * be told), as is a seed read inside an NPU partition: its executor holds its own copy of a
 * constant from creation on, so a scale written later would not reach it (the seed is read by
 * the loss's backward, which runs on the CPU: no loss backward has an NPU lowering). */
#include <string.h>

#include "api/runtime.h"
#include "ir/edit.h"
#include "util/error.h"

/* The float32 output "loss" of g, or -1. */
static int32_t loss_value(const eg_graph *g) {
  for (int32_t o = 0; o < g->n_outputs; o++)
    if (strcmp(g->outputs[o].name, "loss") == 0)
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
  if (x->role != EG_ROLE_STATIC || x->dtype != EG_DTYPE_FLOAT32 || x->rank != l->rank)
    return false;
  for (int d = 0; d < x->rank; d++)
    if (x->shape[d] != l->shape[d]) return false;
  const float *data = g->statics[x->def].data;
  const int64_t n = eg_value_numel(x);
  for (int64_t k = 0; data && k < n; k++)
    if (data[k] != 1.0f) return false;
  return data != NULL;
}

/* The NPU node of program p reading value v, or -1. */
static int32_t npu_reader(const eg_graph *g, const eg_program *p, int32_t v) {
  for (int32_t i = 0; p && i < g->n_nodes; i++)
    if (p->parts.nodes[i].npu && eg_node_reads(&g->nodes[i], v)) return i;
  return -1;
}

eg_status eg_graph_loss_seed(const eg_graph *g, const eg_program *p, int32_t *value) {
  *value = -1;
  const int32_t loss = loss_value(g);
  if (loss < 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_create: loss scaling: no float32 output "
                    "\"loss\" (%d outputs): the scale multiplies the loss a training step "
                    "outputs as \"loss\" (docs/export.md)", (int)g->n_outputs);
  int found = 0;
  for (int rule = 1; rule <= 2 && found == 0; rule++)
    for (int32_t v = 0; v < g->n_values; v++) {
      const bool match = rule == 1 ? ones_like_of(g, v, loss) : ones_constant(g, v, loss);
      if (!match || !read_by_a_node(g, v)) continue;
      if (found++) {
        const char *a = rule == 1 ? g->nodes[g->values[*value].def].name
                                  : g->statics[g->values[*value].def].name;
        const char *b = rule == 1 ? g->nodes[g->values[v].def].name
                                  : g->statics[g->values[v].def].name;
        return eg_error(EG_ERR_UNSUPPORTED, "eg_optimizer_create: loss scaling: backward seed "
                        "(%s and %s): two %s, the backward's seed cannot be told", a, b,
                        rule == 1 ? "nodes ones_like(loss)" : "constants of ones shaped like "
                        "the loss");
      }
      *value = v;
    }
  if (found == 0)
    return eg_error(EG_ERR_UNSUPPORTED, "eg_optimizer_create: loss scaling: backward seed (no "
                    "node ones_like(loss), no constant of ones shaped like the loss): the model "
                    "is not a training step whose backward starts from d loss = 1, as "
                    "torch.autograd.grad's exported steps do");
  const int32_t on_npu = npu_reader(g, p, *value);
  if (on_npu >= 0) {
    const eg_node *n = &g->nodes[on_npu];
    *value = -1;
    return eg_error(EG_ERR_UNSUPPORTED, "eg_optimizer_create: loss scaling: node %s reads the "
                    "backward's seed on the NPU (partition %d): the seed must be read on the "
                    "CPU; compile with that node kept on the CPU", n->name,
                    (int)p->parts.nodes[on_npu].partition);
  }
  return EG_OK;
}
