/* compile.h — compiling a verified model graph for a target into a program (program/program.h):
 * clone, the pass pipeline (compiler/passes/pipeline.h, which places the nodes once), grouping into
 * partitions (compiler/partition/partition.h), lowering every partition through the target's
 * backend, ordering the steps. */
#ifndef EG_COMPILER_COMPILE_H
#define EG_COMPILER_COMPILE_H

#include <stdio.h>

#include "compiler/partition/partition.h"
#include "program/program.h"

/* The front half of compilation: *compiled gets a clone of `g` after the pass pipeline (with
 * `dump_after` / `dump` as eg_passes_run; NULL dumps nothing) and *parts its placement. On
 * failure both are cleared. Free with eg_graph_destroy and eg_partitioning_free. */
eg_status eg_program_place(const eg_graph *g, const eg_partition_options *opt,
                           const char *dump_after, FILE *dump, eg_graph **compiled,
                           eg_partitioning *parts);
/* Compiles `g` (not modified) for opt->target: eg_program_place, lowering and ordering. */
eg_status eg_program_build(const eg_graph *g, const eg_partition_options *opt, eg_program *out);

#endif
