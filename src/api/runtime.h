/* runtime.h — what the rest of the library needs of the runtime beyond the public API: a
 * runtime over a program compiled in memory (api/compile.c, eg_runtime_create_compiled), and
 * the graph and training pairs the optimizer (api/optimizer.c) updates. */
#ifndef EG_API_RUNTIME_H
#define EG_API_RUNTIME_H

#include "edgegrad.h"
#include "program/program.h"

/* A runtime running `program` (malloc'ed, built; owned by the runtime from here on, also on
 * failure) over graph `g` (the program's compiled graph). Plans, checks `options` (may be
 * NULL) and allocates as eg_runtime_create. */
eg_status eg_runtime_create_program(const eg_graph *g, eg_program *program,
                                    const eg_runtime_options *options, eg_runtime **out);

/* The graph `rt` runs (the model's, or the compiled program's). */
const eg_graph *eg_runtime_graph(const eg_runtime *rt);

/* The index of the output named prefix + input `input`'s name with the input's dtype and shape
 * (the training contract: "grad_", "new_"), or -1. */
int32_t eg_graph_paired_output(const eg_graph *g, int32_t input, const char *prefix);

#endif
