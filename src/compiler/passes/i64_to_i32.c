/* i64_to_i32.c — pass `i64_to_i32`: the NPU has no int64, so the int64 tensors NPU partitions
 * hold are held there as int32.
 *
 * The pass reads the placement on the nodes (pass place, eg_node.place) and marks
 * `npu_int32` on every int64 tensor value an NPU node defines or reads: its outputs (each present
 * element of a tuple output; a None element, id -1, is skipped) and its arguments (partition
 * inputs, statics included, and values in argument lists). Every other value's flag is cleared,
 * so a value only CPU nodes touch is never marked, and running the pass twice marks the same.
 *
 * The IR dtype stays int64: CPU kernels, graph inputs and graph outputs keep int64. The flag
 * means "held as INT_32 inside NPU graphs" (the backend's boundary flag narrow, backends/lowered.h): the
 * lowering stores marked statics narrowed (an element outside int32 is a compile error), the
 * runtime narrows marked values at partition inputs (an element outside int32 is a run-time
 * error) and widens them at partition outputs (runtime/npu_step.h), and the .egp boundary rule
 * follows (program/egp_format.h). Which nodes may hold int64 on the NPU is the builders' call:
 * only ops that move 4-byte elements accept it (the backend's supports()).
 *
 * The pass changes no node and no dtype, so the placement stays as it found it. */
#include "compiler/passes/pipeline.h"

#include "util/error.h"

static void mark(eg_graph *g, int32_t id) {
  if (id < 0 || id >= g->n_values) return;
  eg_value *v = &g->values[id];
  if (v->kind == EG_VALUE_TENSOR) {
    if (v->dtype == EG_DTYPE_INT64) v->npu_int32 = true;
    return;
  }
  for (int32_t e = 0; v->elems && e < v->n_elems; e++) mark(g, v->elems[e]); /* -1: None */
}

static void mark_arg(eg_graph *g, const eg_arg *a) {
  if (a->kind == EG_ARG_VALUE) mark(g, a->value);
  if (a->kind != EG_ARG_LIST) return;
  for (int32_t i = 0; i < a->list.n; i++) mark_arg(g, &a->list.items[i]);
}

eg_status eg_pass_i64_to_i32(eg_graph *g, const eg_partition_options *opt) {
  (void)opt; /* the placement is on the nodes (pass place) */
  for (int32_t v = 0; v < g->n_values; v++) g->values[v].npu_int32 = false;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    if (g->nodes[i].place != EG_PLACE_NPU) continue;
    const eg_node *n = &g->nodes[i];
    mark(g, n->output);
    for (int32_t a = 0; a < n->n_args; a++) mark_arg(g, &n->args[a]);
    for (int32_t a = 0; a < n->n_kwargs; a++) mark_arg(g, &n->kwargs[a]);
  }
  return EG_OK;
}
