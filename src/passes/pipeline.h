/* pipeline.h — the compiler's passes: a flat list run in order on a graph before partitioning.
 *
 * Each pass is one file src/passes/<name>.c exporting one function
 *   eg_status eg_pass_<name>(eg_graph *g, const eg_target *t);
 * which rewrites `g` in place for target `t` and leaves it verifiable (eg_graph_verify). The list
 * (pipeline.c, `passes[]`) is the only place that orders them. Passes keep the graph's inputs and
 * outputs (names, order, types): a runtime binds a compiled graph exactly like the model's.
 *
 * Builds that define EG_VERIFY_PASSES (Debug builds; the sanitizer build the tests run under)
 * re-run eg_graph_verify after every pass and name the pass when it fails. Every build verifies
 * once after the last pass, which also refreshes what passes leave stale (value roles and defs,
 * node attrs and scratch sizes). */
#ifndef EG_PASSES_PIPELINE_H
#define EG_PASSES_PIPELINE_H

#include <stdio.h>

#include "ir/graph.h"
#include "target/targets.h"

/* Rewrites ops the target's NPU has no lowering for into ops it has (decompose.c). */
eg_status eg_pass_decompose(eg_graph *g, const eg_target *t);

/* EG_OK if `dump_after` is NULL, "all" or a pass name; else EG_ERR_ARGUMENT with a message
 * listing the valid names. */
eg_status eg_passes_check_dump(const char *dump_after);

/* Runs every pass on `g` in order. With `dump_after` a pass name, writes the text IR
 * (ir/print.h) to `dump` after that pass; with "all", after every pass; each dump opens with a
 * line "# after PASS". NULL dumps nothing. An unknown name fails before any pass runs
 * (EG_ERR_ARGUMENT, see eg_passes_check_dump). A failing pass or verification returns its
 * status with the message prefixed "pass NAME: "; `g` is then unusable. */
eg_status eg_passes_run(eg_graph *g, const eg_target *t, const char *dump_after, FILE *dump);

/* Names of the passes in order, for messages and --help: count, then each by index. */
int eg_passes_count(void);
const char *eg_passes_name(int index);

#endif
