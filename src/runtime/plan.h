/* plan.h — activation memory planning.
 *
 * Every tensor a node defines gets an offset in one arena, chosen once: a value is live from
 * the node that defines it to its last use (graph outputs: to the end), and values whose lives
 * do not overlap share bytes (first fit, 64-byte aligned). A node's outputs never overlap its
 * inputs, since inputs are freed only after the node. Graph inputs and statics are not planned
 * here (the runtime and the graph own them). */
#ifndef EG_RUNTIME_PLAN_H
#define EG_RUNTIME_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "ir/graph.h"

#define EG_PLAN_NONE ((size_t)-1)

typedef struct eg_plan {
  size_t arena_bytes;   /* total activation bytes */
  size_t scratch_bytes; /* largest kernel scratch of any node */
  size_t *offset;       /* per value id; EG_PLAN_NONE for inputs, statics and tuples */
  size_t *work_offset;  /* per step (spec.step_work): its working block; EG_PLAN_NONE if none */
  size_t *block_offset; /* per spec.blocks entry */
} eg_plan;

/* Bytes live inside a step (an NPU step's executor tensor), from node first_node to node
 * last_node (graph node ids, of the step), and at a finer grain by ticks, the order of the
 * step's work (its ops): the block is live from first_tick to last_tick (>= 0; the first not
 * after the last). At a node, its blocks start and end in tick order (one starting at tick t
 * before one ending at t is freed), after the node's outputs are placed and before the values
 * it reads last are freed. */
typedef struct eg_plan_block {
  size_t bytes;
  int32_t first_node, last_node;
  int32_t first_tick, last_tick;
} eg_plan_block;

/* Value `value` is read by node `node` too, besides the node's own arguments (a fused node
 * reading what the node it took in read). */
typedef struct eg_plan_read {
  int32_t value, node;
} eg_plan_read;

/* What to plan (every field may be NULL):
 * - order: g->n_nodes node indices, a topological order (NULL: index order);
 * - step_of: each node's step, non-decreasing along `order` (NULL: each node its own step). A
 *   step's nodes run as one (an NPU partition) whose executor runs their ops in the nodes'
 *   order, so lifetimes stay node by node inside a step too: a value is live from the node
 *   that defines it to the last node reading it, and a later node's output of the same step
 *   may take the bytes of a value an earlier node read last (values the step converts are
 *   read at its start and written at its end, within those lives);
 * - unplanned: values that get no bytes (a compiled program's values that live only inside an
 *   NPU partition, which its executor holds; a fused node's result that is never written);
 * - alias_of: per value, the value whose bytes it shares (-1: none; the target an earlier
 *   node's output, never itself an alias): a getitem's result is its tuple element, a
 *   detach's or view's is its self, read in place, and the target then lives as long as
 *   either is read;
 * - aliasing: per node, whether its result may share an argument's bytes inside its step (an
 *   NPU lowering that emits no op: eg_backend_rt.may_alias): a value such a node of a step reads
 *   then stays live as long as the step reads the node's internal (`unplanned`) result;
 * - step_work: per step (as step_of numbers them; with step_of only), bytes the step works in
 *   while it runs (an NPU step's staging and executor memory): a block live from the step's
 *   first node to its end, placed before the step's outputs, so it overlaps none of the values
 *   live then. plan.work_offset gets each block's offset;
 * - blocks (n_blocks of them): more bytes to place, each live over its nodes and ticks;
 *   plan.block_offset gets each one's offset;
 * - reads (n_reads of them): more reads, each keeping its value live until its node;
 * - folded: per node, whether it runs inside another node's kernel (runtime/fuse.h): its
 *   arguments are not read at its place (the kernel's reads are, in `reads`). */
typedef struct eg_plan_spec {
  const int32_t *order;
  const int32_t *step_of;
  const bool *unplanned;
  const int32_t *alias_of;
  const bool *aliasing;
  const size_t *step_work;
  const eg_plan_block *blocks;
  int32_t n_blocks;
  const eg_plan_read *reads;
  int32_t n_reads;
  const bool *folded;
} eg_plan_spec;

eg_status eg_plan_memory(const eg_graph *g, const eg_plan_spec *spec, eg_plan *plan);
void eg_plan_free(eg_plan *plan);

#endif
