/* prune.c — pass `prune`: removes dead nodes, the ones none of whose results anything reads,
 * and the statics nothing reads. Runs first, so the later passes (and fold_qdq's "Q is x's only
 * user" rule) never see a traced node whose result is thrown away — make_fx leaves e.g.
 * aten.detach.default chains on activations that autograd saved and nobody reads.
 *
 * Contract: every op of the IR is pure. The exporter functionalizes the traced graph, and no op
 * in ir/ops.def writes into an argument or has another effect (none is an in-place `op_` or an
 * `.out` overload; aten.fill.Scalar and aten.empty* create new tensors), so a node whose results
 * are unread computes nothing anyone can observe and removing it is exact. The pass still
 * checks the naming rule (mutates()): an op ATen marks as in-place or out= is never pruned, so
 * adding one to ops.def cannot silently lose its effect.
 *
 * The rule. A node is live when
 *   - it is selected by a skip list (--skip-op / --skip-node): kept as traced, like every pass
 *     keeps such nodes (pipeline.h), so the partitioner still finds the name the user gave and
 *     never warns "no node has this name" about a node that exists in the model; or
 *   - one of its results is a graph output or is read by a live node. Its results are its output
 *     and, for a tuple, the tuple's elements: a tuple-producing node is live while a getitem of
 *     it (or a node reading an element directly) is live, so a tuple whose every getitem is dead
 *     dies with them.
 * Nodes are in topological order, so one sweep from the last node to the first, counting the
 * reads of live nodes only, decides liveness exactly: a whole dead chain (detach -> detach) goes
 * in one pass.
 *
 * What stays: graph inputs, even unread (a runtime binds inputs by name and the compiled graph
 * keeps the model's inputs, pipeline.h); graph outputs and everything they need. Statics no live
 * node reads and that are no graph output are dropped (a frozen weight only a dead node read
 * takes no record in the compiled program). Removed nodes take their values with them; the rest
 * are renumbered (ir/edit.h eg_graph_remove). */
#include <stdlib.h>
#include <string.h>

#include "ir/edit.h"
#include "compiler/passes/pipeline.h"
#include "util/error.h"

/* ATen's naming of ops with effects on their arguments: in-place `name_.overload` or
 * `name.out`. */
static bool mutates(eg_op op) {
  const char *target = eg_op_target(op);
  const char *dot = strrchr(target, '.');
  if (!dot || dot == target) return false;
  return dot[-1] == '_' || strcmp(dot + 1, "out") == 0;
}

/* Some result of node n (its output, a tuple's elements) has reads counted. */
static bool any_result_read(const eg_graph *g, const eg_node *n, const int32_t *reads) {
  if (n->output < 0) return false;
  if (reads[n->output]) return true;
  const eg_value *v = &g->values[n->output];
  for (int32_t e = 0; v->kind == EG_VALUE_TUPLE && e < v->n_elems; e++)
    if (v->elems[e] >= 0 && reads[v->elems[e]]) return true;
  return false;
}

eg_status eg_pass_prune(eg_graph *g, const eg_partition_options *opt) {
  int32_t *reads = calloc((size_t)g->n_values + 1, sizeof(int32_t));
  bool *dead = calloc((size_t)g->n_nodes + 1, sizeof(bool));
  bool *unread_static = calloc((size_t)g->n_statics + 1, sizeof(bool));
  eg_status s = EG_OK;
  if (!reads || !dead || !unread_static) {
    s = eg_error(EG_ERR_NOMEM, "prune: out of memory (%d nodes)", g->n_nodes);
    goto done;
  }
  for (int32_t i = 0; i < g->n_outputs; i++)
    if (g->outputs[i].value >= 0) reads[g->outputs[i].value]++;
  bool any = false;
  for (int32_t i = g->n_nodes - 1; i >= 0; i--) {
    const eg_node *n = &g->nodes[i];
    if (eg_partition_skips(opt, n) || mutates(n->op) || any_result_read(g, n, reads))
      eg_node_count_uses(n, reads);
    else
      any = dead[i] = true;
  }
  for (int32_t k = 0; k < g->n_statics; k++)
    if (!reads[g->statics[k].value]) any = unread_static[k] = true;
  if (any) s = eg_graph_remove(g, dead, unread_static);
done:
  free(reads);
  free(dead);
  free(unread_static);
  return s;
}
