/* place.c — pass `place`: decides once, for every node, where it runs (partition.h,
 * eg_place_graph: the backend's gates, the user's skip lists, the backend's supports()) and
 * writes the answer on the node (eg_node.place / place_reason).
 *
 * It runs after the passes that shape the graph independently of the target's NPU (prune,
 * decompose, annotate_quant) and before those that depend on where nodes run (fold_qdq,
 * layout_nhwc, i64_to_i32), which read the fields and keep them up to date for the nodes they
 * add or whose arguments they change. The compiler groups the final graph into partitions from
 * the same fields, so this is the only whole-graph placement of a compile. */
#include "compiler/partition/partition.h"
#include "compiler/passes/pipeline.h"

eg_status eg_pass_place(eg_graph *g, const eg_partition_options *opt) {
  return eg_place_graph(g, opt);
}
