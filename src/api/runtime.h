/* runtime.h — what the compiler library needs of the runtime beyond the public API: a runtime
 * over a program it compiled in memory (api/compile.c, eg_runtime_create_compiled). */
#ifndef EG_API_RUNTIME_H
#define EG_API_RUNTIME_H

#include "edgegrad.h"
#include "program/program.h"

/* A runtime running `program` (malloc'ed, built; owned by the runtime from here on, also on
 * failure) over graph `g` (the program's compiled graph). Plans, checks `options` (may be
 * NULL) and allocates as eg_runtime_create. */
eg_status eg_runtime_create_program(const eg_graph *g, eg_program *program,
                                    const eg_runtime_options *options, eg_runtime **out);

#endif
