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
} eg_plan;

/* Plans for the nodes run in `order` (g->n_nodes node indices, a topological order), or in index
 * order when `order` is NULL. `step_of` (NULL: each node is its own step) gives each node the
 * step that runs it, non-decreasing along `order`: a step's nodes run as one (an NPU partition),
 * so a value a step reads stays live until the step ends and none of the step's outputs takes
 * its bytes. Values with `unplanned[id]` set (NULL: none) get no bytes: a
 * compiled program's values that live only inside an NPU partition, which its executor holds. */
eg_status eg_plan_memory(const eg_graph *g, const int32_t *order, const int32_t *step_of,
                         const bool *unplanned, eg_plan *plan);
void eg_plan_free(eg_plan *plan);

#endif
