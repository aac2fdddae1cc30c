/* loss_seed.c — the seed of a training step's backward, for loss scaling (eg_optimizer_options
 * .loss_scale): the value autograd starts the backward from, d loss / d loss = 1, found by the
 * rules of ir/seed.h (a node ones_like(loss), or the constant of ones pass decompose folds it
 * into). Loss scaling makes this value the scale S, so every gradient of the run comes out
 * multiplied by S.
 *
 * The runtime writes S into the seed's buffer as each run starts (runtime/engine.c), so every
 * reader must take the seed from that buffer: a CPU node does; an NPU partition does when it
 * takes the seed as a boundary input (APP_WRITE), which is how the compiler lowers a constant
 * seed (the backend's lowering). A partition holding the seed any other way — computed inside
 * it, or baked as its own constant by a builder that reads the bytes — would not see S: such
 * a reader is refused, as are a graph without a seed and one with two. */
#include "runtime/loss_seed.h"

#include "ir/edit.h"
#include "ir/seed.h"
#include "util/error.h"

/* The label of seed candidate v (a node's or a constant's name). */
static const char *seed_name(const eg_graph *g, int32_t v) {
  const eg_value *x = &g->values[v];
  return x->role == EG_ROLE_NODE ? g->nodes[x->def].name : g->statics[x->def].name;
}

/* The NPU node of program p reading value v in a partition that does not take v as a boundary
 * input, or -1. */
static int32_t npu_reader_inside(const eg_graph *g, const eg_program *p, int32_t v) {
  for (int32_t i = 0; p && i < g->n_nodes; i++) {
    const eg_node_placement *pl = &p->parts.nodes[i];
    if (pl->npu && eg_node_reads(&g->nodes[i], v) && !eg_program_npu_input(p, pl->partition, v))
      return i;
  }
  return -1;
}

eg_status eg_graph_loss_seed(const eg_graph *g, const eg_program *p, int32_t *value) {
  *value = -1;
  if (eg_graph_loss(g) < 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_create: loss scaling: no float32 output of "
                    "role \"loss\" (%d outputs): the scale multiplies the loss a training step "
                    "records as its loss output (docs/export.md)", (int)g->n_outputs);
  int32_t seeds[2];
  int rule;
  const int found = eg_graph_seed_matches(g, seeds, &rule);
  if (found > 1)
    return eg_error(EG_ERR_UNSUPPORTED, "eg_optimizer_create: loss scaling: backward seed "
                    "(%s and %s): two %s, the backward's seed cannot be told",
                    seed_name(g, seeds[0]), seed_name(g, seeds[1]),
                    rule == 1 ? "nodes ones_like(loss)" : "constants of ones shaped like "
                    "the loss");
  if (found == 0)
    return eg_error(EG_ERR_UNSUPPORTED, "eg_optimizer_create: loss scaling: backward seed (no "
                    "node ones_like(loss), no constant of ones shaped like the loss): the model "
                    "is not a training step whose backward starts from d loss = 1, as "
                    "torch.autograd.grad's exported steps do");
  const int32_t inside = npu_reader_inside(g, p, seeds[0]);
  if (inside >= 0) {
    const eg_node *n = &g->nodes[inside];
    return eg_error(EG_ERR_UNSUPPORTED, "eg_optimizer_create: loss scaling: node %s reads the "
                    "backward's seed %s inside NPU partition %d, which does not take it as an "
                    "input: a scale written at run time would not reach it; compile with that "
                    "node kept on the CPU", n->name, seed_name(g, seeds[0]),
                    (int)p->parts.nodes[inside].partition);
  }
  *value = seeds[0];
  return EG_OK;
}
