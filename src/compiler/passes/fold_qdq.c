/* fold_qdq.c — pass `fold_qdq`: removes the quantize -> dequantize pairs of a QDQ model where
 * the NPU holds the quantized value itself, so NPU partitions read quantized tensors (QNN
 * fixed-point tensors with encodings) instead of running a float round trip through the CPU.
 *
 * The rule. A pair is `x -> Q -> D -> users` with Q an aten.quantize_per_tensor /
 * quantize_per_channel node and D an aten.dequantize.self of Q's output. It is folded — Q and D
 * are removed, with their output values, and every user of D's output reads x instead — when
 * ALL of these hold:
 *   1. neither Q nor D is selected by a skip list (skipped nodes stay as traced);
 *   2. x is a static (a frozen weight) or a node's output (a getitem's included); not a graph
 *      input;
 *   3. Q is x's only user, D is the only user of Q's output, and neither x, Q's output nor D's
 *      output is a graph output (a CPU consumer of x would see x, not dq(q(x)): see below);
 *      pass prune runs first, so dead readers (make_fx's detach nodes) no longer count;
 *   4. x carries quantization attributes (pass annotate_quant put Q's on it) equal to those of
 *      D's output, and x has D's output's dtype and shape;
 *   5. in the placement of the folded graph (every pair folded that still qualifies), x's
 *      producer is an NPU node (a static has none) and every node reading x (the former users
 *      of D) is an NPU node.
 * Condition 5 is decided by a fixpoint over the placement the nodes carry (pass place): fold
 * every pair meeting 1-4 and place again the nodes whose arguments changed (eg_place_again: D's
 * users and x's producer), unfold (restore D's users) every pair that fails 5 and place its
 * nodes again, until nothing changes. Folding a pair can only
 * make its users NPU-capable (a conv's weight becomes the static the conv builder needs), and
 * unfolding only withdraws that, so the set shrinks monotonically and the placement the pass
 * last saw is the one of the graph it leaves. A pair whose D feeds any CPU node stays whole.
 *
 * Meaning. After folding, x "is stored quantized" inside NPU partitions (eg_value.quant, see
 * graph.h): the lowering makes it a fixed-point QNN tensor (a quantized static is stored as its
 * quantized integers), the executor quantizes it when written and dequantizes it when read, and
 * a partition boundary quantizes it into and dequantizes it out of NPU graphs
 * (runtime/npu_step.h). Every NPU reader therefore sees exactly dq(q(x)) (up to the float32
 * rounding of a per-channel scale), as in the traced model. The CPU holds x's float value; since
 * condition 3 leaves no CPU reader of x, the only CPU copy of x is what crosses a boundary.
 *
 * The pass removes the folded nodes with ir/edit.h's eg_graph_remove (which renumbers the
 * remaining values everywhere they are held), and re-verifies the graph. On a target whose NPU
 * runs nothing (SM8350) no pair folds. */
#include <stdlib.h>
#include <string.h>

#include "ir/edit.h"
#include "compiler/passes/pipeline.h"
#include "ops/verify.h"
#include "util/error.h"

typedef struct qdq_pair {
  int32_t q, d;       /* node indices */
  int32_t x, qv, dv;  /* values: quantized float, Q's output, D's output */
  bool on;            /* folded */
} qdq_pair;

static eg_status nomem(void) { return eg_error(EG_ERR_NOMEM, "fold_qdq: out of memory"); }

static bool same_type(const eg_value *a, const eg_value *b) {
  if (a->kind != EG_VALUE_TENSOR || b->kind != EG_VALUE_TENSOR || a->dtype != b->dtype ||
      a->rank != b->rank)
    return false;
  for (int d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

/* Conditions 1-4 for dequantize node `di`; fills *p when they hold. */
static bool candidate(const eg_graph *g, const eg_partition_options *opt, const int32_t *uses,
                      const bool *is_output, int32_t di, qdq_pair *p) {
  const eg_node *d = &g->nodes[di];
  if (d->op != EG_OP_dequantize_self || d->output < 0 || eg_partition_skips(opt, d)) return false;
  const eg_arg *qa = eg_node_arg(d, 0, "self");
  if (!qa || qa->kind != EG_ARG_VALUE) return false;
  const eg_value *qv = &g->values[qa->value];
  if (qv->role != EG_ROLE_NODE) return false;
  const eg_node *q = &g->nodes[qv->def];
  if ((q->op != EG_OP_quantize_per_tensor && q->op != EG_OP_quantize_per_channel) ||
      q->output != qa->value || eg_partition_skips(opt, q))
    return false;
  const eg_arg *xa = eg_node_arg(q, 0, "self");
  if (!xa || xa->kind != EG_ARG_VALUE) return false;
  const int32_t x = xa->value;
  const eg_value *xv = &g->values[x], *dv = &g->values[d->output];
  if (xv->role != EG_ROLE_STATIC && xv->role != EG_ROLE_NODE) return false;
  if (uses[x] != 1 || uses[qa->value] != 1 || is_output[x] || is_output[qa->value] ||
      is_output[d->output])
    return false;
  if (!xv->quant || !eg_quant_equal(xv->quant, dv->quant) || !same_type(xv, dv)) return false;
  *p = (qdq_pair){.q = qv->def, .d = di, .x = x, .qv = qa->value, .dv = d->output, .on = true};
  return true;
}

/* Condition 5 on the placement the nodes carry. */
static bool placed_ok(const eg_graph *g, const qdq_pair *p) {
  const eg_value *xv = &g->values[p->x];
  if (xv->role == EG_ROLE_NODE && g->nodes[xv->def].place != EG_PLACE_NPU) return false;
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (i != p->q && eg_node_reads(&g->nodes[i], p->x) && g->nodes[i].place != EG_PLACE_NPU)
      return false;
  return true;
}

/* Marks the nodes whose placement pair p's folding or unfolding can change: every node but Q
 * reading x (D's users, now reading x) and x's producer. */
static void mark_affected(const eg_graph *g, const qdq_pair *p, bool *which) {
  const eg_value *xv = &g->values[p->x];
  if (xv->role == EG_ROLE_NODE) which[xv->def] = true;
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (i != p->q && eg_node_reads(&g->nodes[i], p->x)) which[i] = true;
}

/* Places the folded readers again, then unfolds pairs failing condition 5 (placing their
 * readers again) until none does. */
static eg_status settle(eg_graph *g, const eg_partition_options *opt, qdq_pair *pairs,
                        int32_t n) {
  bool *which = calloc((size_t)g->n_nodes + 1, sizeof(bool));
  if (!which) return nomem();
  for (int32_t k = 0; k < n; k++)
    if (pairs[k].on) mark_affected(g, &pairs[k], which);
  eg_status s = eg_place_again(g, opt, which);
  for (bool changed = s == EG_OK; changed && s == EG_OK;) {
    changed = false;
    memset(which, 0, ((size_t)g->n_nodes + 1) * sizeof(bool));
    for (int32_t k = 0; k < n; k++) {
      qdq_pair *p = &pairs[k];
      if (!p->on || placed_ok(g, p)) continue;
      mark_affected(g, p, which);
      for (int32_t i = 0; i < g->n_nodes; i++)
        if (i != p->q) eg_node_replace_value(&g->nodes[i], p->x, p->dv);
      p->on = false;
      changed = true;
    }
    if (changed) s = eg_place_again(g, opt, which);
  }
  free(which);
  return s;
}

/* Drops the folded pairs' nodes and, with them, their two values (ir/edit.h renumbers). */
static eg_status remove_pairs(eg_graph *g, const qdq_pair *pairs, int32_t n) {
  bool *drop = calloc((size_t)g->n_nodes + 1, sizeof(bool));
  if (!drop) return nomem();
  for (int32_t k = 0; k < n; k++)
    if (pairs[k].on) drop[pairs[k].q] = drop[pairs[k].d] = true;
  eg_status s = eg_graph_remove(g, drop, NULL);
  free(drop);
  return s;
}

eg_status eg_pass_fold_qdq(eg_graph *g, const eg_partition_options *opt) {
  int32_t *uses = calloc((size_t)g->n_values + 1, sizeof(int32_t));
  bool *is_output = calloc((size_t)g->n_values + 1, sizeof(bool));
  qdq_pair *pairs = calloc((size_t)g->n_nodes + 1, sizeof(qdq_pair));
  eg_status s = uses && is_output && pairs ? EG_OK : nomem();
  int32_t n = 0;
  if (s == EG_OK) {
    for (int32_t i = 0; i < g->n_nodes; i++) eg_node_count_uses(&g->nodes[i], uses);
    for (int32_t i = 0; i < g->n_outputs; i++)
      if (g->outputs[i].value >= 0) is_output[g->outputs[i].value] = true;
    for (int32_t i = 0; i < g->n_nodes; i++)
      if (candidate(g, opt, uses, is_output, i, &pairs[n])) n++;
    /* fold every candidate, then withdraw the ones the placement does not carry */
    for (int32_t k = 0; k < n; k++)
      for (int32_t i = 0; i < g->n_nodes; i++)
        if (i != pairs[k].q) eg_node_replace_value(&g->nodes[i], pairs[k].dv, pairs[k].x);
    if (n > 0) s = settle(g, opt, pairs, n);
  }
  bool any = false;
  for (int32_t k = 0; k < n; k++) any = any || pairs[k].on;
  if (s == EG_OK && any) s = remove_pairs(g, pairs, n);
  if (s == EG_OK && any) s = eg_graph_verify(g);
  free(uses);
  free(is_output);
  free(pairs);
  return s;
}
