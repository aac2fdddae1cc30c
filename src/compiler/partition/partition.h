/* partition.h — deciding, node by node, what the NPU runs on a target and why not.
 *
 * eg_partition_graph takes a verified graph, a target SoC and the user's skip lists, and gives
 * every node a placement: NPU (with the id of the partition it belongs to) or CPU (with one
 * sentence saying why). Partitions are maximal connected groups of NPU nodes such that the graph
 * of partitions and CPU nodes stays acyclic, so each partition can run as one NPU graph
 * (algorithm in partition.c).
 *
 * The per-op decisions come from a builder table (npu_ops.h). Tests inject their own table to
 * pretend ops are NPU-capable and check grouping, acyclicity and reasons without real builders.
 *
 * Invariants of a result: every node has a placement; a CPU node has partition -1 and a non-empty
 * reason; an NPU node has a partition in [0, n_partitions) and a NULL reason; each partition's
 * node list is non-empty and ascending (a topological order); partitions are numbered in order of
 * their first node; a getitem has its producer's placement and partition. */
#ifndef EG_PARTITION_PARTITION_H
#define EG_PARTITION_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/graph.h"
#include "ir/placement.h"
#include "compiler/backend.h"
#include "target/targets.h"
#include "util/arena.h"

typedef struct eg_partition_options {
  /* The SoC to place for (eg_target_find); required. */
  const eg_target *target;
  /* Ops to keep on the CPU: each a traced target ("aten.add.Tensor"), a target without its
   * ".default" overload ("aten.relu"), or an overload packet matching all overloads
   * ("aten.add" matches aten.add.Tensor and aten.add.Scalar). A name matching no node gives a
   * warning. */
  const char *const *skip_ops;
  int n_skip_ops;
  /* Nodes to keep on the CPU, by node name. A name matching no node gives a warning. */
  const char *const *skip_nodes;
  int n_skip_nodes;
  /* The backend to ask (compiler/backend.h); NULL means eg_backend_for_target(target). Tests
   * inject theirs. */
  const eg_backend *backend;
} eg_partition_options;


/* The placement of a compile is made once: pass `place` (compiler/passes/pipeline.h) calls
 * eg_place_graph, which decides every node (steps 1-3 below) and writes the answer on the node
 * (eg_node.place, eg_node.place_reason); the passes after it read those fields and keep them up
 * to date for the nodes they add or change (eg_place_node / eg_place_again); then the compiler
 * groups the final graph's nodes into partitions with eg_partition_placed, which asks no gate
 * again. eg_partition_graph does both in one go on a graph it does not modify (for tests and
 * tools). */
eg_status eg_place_graph(eg_graph *g, const eg_partition_options *opt);
/* Decides again the non-getitem nodes i with which[i] (a pass changed their arguments), then
 * refreshes every getitem from its producer. Not counted as a placement. */
eg_status eg_place_again(eg_graph *g, const eg_partition_options *opt, const bool *which);
/* Partitions `g` from the placement its nodes carry (every non-getitem node decided); as
 * eg_partition_graph otherwise (warnings about the skip lists included). */
eg_status eg_partition_placed(const eg_graph *g, const eg_partition_options *opt,
                              eg_partitioning *out);
/* Whole-graph placements made by this process (eg_place_graph and eg_partition_graph calls):
 * what a test counts to see that a compile places once. */
long eg_placement_count(void);

/* Places every node of `g` (verified: values' roles and defining nodes set, nodes in topological
 * order). On success *out holds the result (free with eg_partitioning_free); on failure
 * (EG_ERR_ARGUMENT for a NULL argument or target, EG_ERR_NOMEM) *out is zeroed. */
eg_status eg_partition_graph(const eg_graph *g, const eg_partition_options *opt,
                             eg_partitioning *out);

/* Steps a-f for one node of `g` (not a getitem): the backend's gate, the skip lists, the
 * backend's supports(). True for the NPU; otherwise writes the reason into reason[size]. The
 * partitioner runs it on every node; passes that add a node or change a node's arguments
 * (layout_nhwc's conversions, fold_qdq's readers) ask it for those nodes alone. */
bool eg_place_node(const eg_partition_options *opt, const eg_graph *g, const eg_node *n,
                   char *reason, size_t size);

/* Does one of the user's skip lists select node `n` (by op, as step 1 matches --skip-op, or by
 * name)? The passes use it to leave such nodes exactly as traced. */
bool eg_partition_skips(const eg_partition_options *opt, const eg_node *n);



#endif
