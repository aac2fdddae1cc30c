/* placement.h — where each node of a graph runs: the partitioner's result
 * (compiler/partition/partition.h computes it), which a compiled program carries
 * (program/program.h, read back from a .egp by the runtime library). Plain data in one arena, so
 * the runtime can hold it without the partitioner.
 *
 * Invariants of a placement: every node has one; a CPU node has partition -1 and a non-empty
 * reason (NULL in a placement read from a .egp, which stores no reasons); an NPU node has a
 * partition in [0, n_partitions) and a NULL reason; each partition's node list is non-empty
 * and ascending (a topological order); partitions are numbered in order of their first node. */
#ifndef EG_IR_PLACEMENT_H
#define EG_IR_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "util/arena.h"

typedef struct eg_node_placement {
  bool npu;
  int32_t partition;   /* NPU: partition id; CPU: -1 */
  const char *reason;  /* CPU: why, one sentence; NPU: NULL */
} eg_node_placement;

typedef struct eg_partition {
  int32_t n_nodes;
  int32_t *nodes;      /* node indices, ascending */
} eg_partition;

typedef struct eg_partitioning {
  eg_arena *arena;             /* owns everything below */
  int32_t n_nodes;             /* == the graph's */
  eg_node_placement *nodes;    /* per node index */
  int32_t n_partitions;
  eg_partition *partitions;
  int32_t n_warnings;
  const char **warnings;       /* e.g. "--skip-node relu_9: no node has this name" */
  int32_t n_notes;
  const char **notes;          /* facts about the placement, e.g. a weight held by several
                                  partitions */
} eg_partitioning;

void eg_partitioning_free(eg_partitioning *p);

#endif
