/* runtime.h — what the rest of the library needs of the runtime beyond the public API: a
 * runtime over a program compiled in memory (compiler/api/compile.c, eg_runtime_create_compiled),
 * the graph and training pairs the optimizer (runtime/optimizer.c) updates, and the engine's own
 * functions (runtime/engine.h: the graph a runtime runs, loss scaling). */
#ifndef EG_API_RUNTIME_H
#define EG_API_RUNTIME_H

#include "edgegrad.h"
#include "program/program.h"
#include "runtime/engine.h"
#include "runtime/graph_io.h"

/* A runtime running `program` (malloc'ed, built; owned by the runtime from here on, also on
 * failure) over graph `g` (the program's compiled graph). Plans, checks `options` (may be
 * NULL) and allocates as eg_runtime_create. */
eg_status eg_runtime_create_program(const eg_graph *g, eg_program *program,
                                    const eg_runtime_options *options, eg_runtime **out);

/* Reads the caller's optimizer options `in` (the struct size rules of edgegrad.h, `where`
 * naming the function in messages) into *out, a field past the caller's size taking the
 * default of the caller's kind (eg_optimizer_defaults). */
eg_status eg_api_optimizer_options(const eg_optimizer_options *in, const char *where,
                                   eg_optimizer_options *out);

/* eg_safetensors_load, a malformed file said as "<path>: not a safetensors file edgegrad can
 * read (<why>)" (api/weights.c). */
eg_status eg_safetensors_load_for(const char *path, eg_safetensors **out);

#endif
