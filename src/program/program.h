/* program.h — a graph compiled for a target: placement, lowered NPU partitions, and the order
 * in which CPU nodes and NPU partitions run.
 *
 * Built by eg_program_build from a verified graph: partition (partition.h), lower every
 * partition to an htp backend graph (backends/htp/lower.h), then order the units — each CPU node
 * and each partition — topologically (Kahn, smallest first node first; the partitioner keeps the
 * unit graph acyclic). `order` lists node indices in execution order with each partition's nodes
 * contiguous, a valid topological order of the IR that the memory planner uses.
 * The program refers to the graph (not owned), which must outlive it. */
#ifndef EG_PROGRAM_PROGRAM_H
#define EG_PROGRAM_PROGRAM_H

#include <stdint.h>

#include "backends/htp/lower.h"
#include "partition/partition.h"

typedef struct eg_program_step {
  int32_t node;       /* CPU step: node index; NPU step: -1 */
  int32_t partition;  /* NPU step: partition id; CPU step: -1 */
} eg_program_step;

typedef struct eg_program {
  const eg_graph *graph;
  const eg_target *target;
  eg_partitioning parts;
  eg_htp_partition *lowered;  /* per partition */
  int32_t n_steps;
  eg_program_step *steps;
  int32_t *order;             /* graph->n_nodes node indices */
} eg_program;

eg_status eg_program_build(const eg_graph *g, const eg_partition_options *opt, eg_program *out);
void eg_program_free(eg_program *p);

#endif
