/* compile_options.h — the public compile options as the partitioner's
 * (compiler/api/compile.c). */
#ifndef EG_API_COMPILE_OPTIONS_H
#define EG_API_COMPILE_OPTIONS_H

#include "edgegrad.h"
#include "compiler/partition/partition.h"

/* Reads the caller's options `in` into *o (the library's layout: the struct size rules of
 * edgegrad.h, `fn` naming the function in messages) and gives the partitioner's options for
 * them in *out, the SoC looked up by name: EG_ERR_ARGUMENT (the message lists the valid names)
 * when there is no such SoC. */
eg_status eg_api_partition_options(const eg_compile_options *in, const char *fn,
                                   eg_compile_options *o, eg_partition_options *out);

/* The precision a program compiled with `o` for `target` computes in: o->precision when set,
 * else the target's float path (fp16 on every SoC that has one, as QNN's HTP computes float
 * graphs), else fp32 (a SoC without a float path places no float partition). */
eg_precision eg_api_precision(const eg_compile_options *o, const eg_target *target);

/* Compiling starts from a graph: EG_ERR_ARGUMENT, naming `fn`, for a model loaded from a
 * compiled program (its graph is already partitioned and lowered, and runs as it is). */
eg_status eg_api_require_graph(const eg_model *model, const char *fn);

#endif
