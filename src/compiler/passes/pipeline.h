/* pipeline.h — the compiler's passes: a flat list run in order on a graph, between loading and
 * partitioning (compiler/compile.h: clone -> passes -> partition -> lower).
 *
 * Each pass is one file src/compiler/passes/<name>.c exporting one function
 *   eg_status eg_pass_<name>(eg_graph *g, const eg_partition_options *opt);
 * which rewrites `g` in place for the compile options `opt` (the target SoC and the user's skip
 * lists) and leaves it verifiable (eg_graph_verify). The list (pipeline.c, `passes[]`) is the
 * only place that orders them. Passes keep the graph's inputs and outputs (names, order, types):
 * a runtime binds a compiled graph exactly like the model's. A node a skip list selects is left
 * as traced (same op and name), so the partitioner still finds and skips it.
 *
 * Pass `place` decides once where every node runs and writes it on the node (eg_node.place,
 * partition.h); the passes after it that depend on the placement (which values live inside NPU
 * partitions: q/dq folding, NPU layout, NPU dtypes) read those fields, and each keeps them true
 * for the nodes it adds (an NPU conversion: asked with eg_place_node) or whose arguments it
 * changes (eg_place_again). The compiler then groups the final graph from the fields
 * (eg_partition_placed): the placement the passes saw is the placement that is lowered, and no
 * gate is asked twice.
 *
 * eg_graph_verify runs after every pass, in every build (a failure names the pass): it checks
 * what the pass left and refreshes what a rewrite leaves stale (value roles and defining nodes,
 * node attrs and scratch sizes), so each pass starts from a verified graph — the partitioner
 * and the next pass read those fields. (It costs one op check per node per pass.) */
#ifndef EG_PASSES_PIPELINE_H
#define EG_PASSES_PIPELINE_H

#include <stdio.h>

#include "ir/graph.h"
#include "compiler/partition/partition.h"

/* Removes nodes none of whose results is read (outputs kept), and statics nothing reads; nodes
 * a skip list selects stay (prune.c, which states the rule). */
eg_status eg_pass_prune(eg_graph *g, const eg_partition_options *opt);
/* Rewrites ops the target's NPU has no lowering for into ops it has (decompose.c). */
eg_status eg_pass_decompose(eg_graph *g, const eg_partition_options *opt);

/* Attaches quantization attributes (eg_value.quant) to the quantized, quantizing and
 * dequantized values of a QDQ model (annotate_quant.c). */
eg_status eg_pass_annotate_quant(eg_graph *g, const eg_partition_options *opt);
/* Places every node (place.c, partition.h's eg_place_graph). */
eg_status eg_pass_place(eg_graph *g, const eg_partition_options *opt);
/* Removes the quantize -> dequantize pairs whose quantized value stays inside NPU partitions;
 * their users read the (quantization-annotated) value itself (fold_qdq.c, which states the rule). */
eg_status eg_pass_fold_qdq(eg_graph *g, const eg_partition_options *opt);
/* Sets eg_value.axes (NHWC or traced) on the rank-4 values NPU nodes hold, and inserts
 * aten.clone(memory_format=...) conversions where two orders meet (layout_nhwc.c). */
eg_status eg_pass_layout_nhwc(eg_graph *g, const eg_partition_options *opt);
/* Marks npu_int32 on the int64 values NPU partitions hold (defined or read by an NPU node,
 * tuple elements included); the IR dtype stays int64 (i64_to_i32.c). */
eg_status eg_pass_i64_to_i32(eg_graph *g, const eg_partition_options *opt);

/* EG_OK if `dump_after` is NULL, "all" or a pass name; else EG_ERR_ARGUMENT with a message
 * listing the valid names. */
eg_status eg_passes_check_dump(const char *dump_after);

/* Runs every pass on `g` in order. With `dump_after` a pass name, writes the text IR
 * (ir/print.h) to `dump` after that pass; with "all", after every pass; each dump opens with a
 * line "# after PASS". NULL dumps nothing. An unknown name fails before any pass runs
 * (EG_ERR_ARGUMENT, see eg_passes_check_dump). A failing pass or verification returns its
 * status with the message prefixed "pass NAME: "; `g` is then unusable. */
eg_status eg_passes_run(eg_graph *g, const eg_partition_options *opt, const char *dump_after,
                        FILE *dump);

/* Names of the passes in order, for messages and --help: count, then each by index. */
int eg_passes_count(void);
const char *eg_passes_name(int index);

#endif
