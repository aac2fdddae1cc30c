/* annotate_quant.c — pass `annotate_quant`: attaches quantization attributes (eg_value.quant:
 * storage dtype, axis, scales, zero points, range) to the values of a QDQ model, from its
 * quantize nodes. Placement-independent; it rewrites no node.
 *
 * For every quantize_per_tensor / quantize_per_channel node Q(x) (parameters: ops/quant.h):
 *   - Q's output (the integers) gets Q's attributes;
 *   - x, the float value being quantized, gets them too: "held quantized, x is stored with these
 *     parameters" — what fold_qdq relies on when it removes the Q/DQ pair. A static x (a frozen
 *     weight read by quantize_per_channel) gets the per-channel attributes (axis, one scale and
 *     zero point per index of shape[axis]). Where x is a getitem's output, the tuple element the
 *     getitem selects gets them as well — that element only: element 0 of a tuple never takes
 *     element 1's attributes;
 *   - every dequantize of Q's output gets them on its (float) output: its values lie exactly on
 *     Q's grid.
 * Conflicts: a value quantized by two quantize nodes with different parameters keeps none (no
 * single encoding describes it; it stays float everywhere), however many agree later. Equal
 * parameters from several quantize nodes are one attribute.
 * The pass first clears every value's attributes, so it defines them all. */
#include <stdlib.h>

#include "ops/quant.h"
#include "compiler/passes/pipeline.h"
#include "util/error.h"

typedef struct annotator {
  eg_graph *g;
  bool *conflict; /* per value: two different quantizations met, keep none */
} annotator;

static void attach(annotator *an, int32_t id, const eg_quant *q) {
  eg_value *v = &an->g->values[id];
  if (an->conflict[id]) return;
  if (!v->quant) {
    v->quant = q;
  } else if (!eg_quant_equal(v->quant, q)) {
    v->quant = NULL;
    an->conflict[id] = true;
  }
}

/* The tuple element a getitem output `id` stands for, or -1 when `id` is no getitem's output. */
static int32_t tuple_element(const eg_graph *g, int32_t id) {
  const eg_value *v = &g->values[id];
  if (v->role != EG_ROLE_NODE) return -1;
  const eg_node *n = &g->nodes[v->def];
  if (n->op != EG_OP_getitem || n->output != id) return -1;
  const eg_arg *tuple = eg_node_arg(n, 0, NULL), *index = eg_node_arg(n, 1, NULL);
  const eg_value *t = &g->values[tuple->value];
  return index->i >= 0 && index->i < t->n_elems ? t->elems[index->i] : -1;
}

static eg_status annotate_quantize(annotator *an, const eg_node *n) {
  eg_graph *g = an->g;
  eg_quant view;
  eg_quant_of_node(g, n, &view);
  const eg_quant *q = eg_quant_copy(g->arena, &view);
  if (!q) return eg_node_error(n, EG_ERR_NOMEM, "annotate_quant: out of memory");
  const int32_t x = eg_node_arg(n, 0, "self")->value;
  attach(an, n->output, q);
  attach(an, x, q);
  const int32_t elem = tuple_element(g, x);
  if (elem >= 0) attach(an, elem, q);
  return EG_OK;
}

eg_status eg_pass_annotate_quant(eg_graph *g, const eg_partition_options *opt) {
  (void)opt; /* placement-independent */
  annotator an = {.g = g, .conflict = calloc((size_t)g->n_values + 1, sizeof(bool))};
  if (!an.conflict) return eg_error(EG_ERR_NOMEM, "annotate_quant: out of memory");
  for (int32_t i = 0; i < g->n_values; i++) g->values[i].quant = NULL;
  eg_status s = EG_OK;
  for (int32_t i = 0; i < g->n_nodes && s == EG_OK; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->op == EG_OP_quantize_per_tensor || n->op == EG_OP_quantize_per_channel)
      s = annotate_quantize(&an, n);
    else if (n->op == EG_OP_dequantize_self)
      /* the quantize came earlier (topological order): its output holds its attributes */
      g->values[n->output].quant = g->values[eg_node_arg(n, 0, "self")->value].quant;
  }
  free(an.conflict);
  return s;
}
