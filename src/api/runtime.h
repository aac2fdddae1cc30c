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

/* Reads the caller's optimizer options `in` (the struct size rules of edgegrad.h, `where`
 * naming the function in messages) into *out, a field past the caller's size taking the
 * default of the caller's kind (eg_optimizer_defaults). */
eg_status eg_api_optimizer_options(const eg_optimizer_options *in, const char *where,
                                   eg_optimizer_options *out);

/* The graph `rt` runs (the model's, or the compiled program's). */
const eg_graph *eg_runtime_graph(const eg_runtime *rt);

/* The role of input (is_input) or output `index` of `g` in a training step, and *pair its
 * partner's index (-1 none), as the graph records them (ir/io_role.h): eg_tensor_desc's role
 * and pair. */
eg_io_role eg_graph_io_role(const eg_graph *g, bool is_input, int32_t index, int32_t *pair);
/* Input (is_input) or output `index` (in range) of `g` as eg_model_input/_output give it. */
void eg_graph_describe(const eg_graph *g, bool is_input, int index, eg_tensor_desc *out);
/* eg_model_input_classes of input `index` (in range) of `g`. */
void eg_graph_input_classes(const eg_graph *g, int index, int64_t *classes,
                            int64_t *ignore_index);

/* eg_safetensors_load, a malformed file said as "<path>: not a safetensors file edgegrad can
 * read (<why>)" (api/weights.c). */
eg_status eg_safetensors_load_for(const char *path, eg_safetensors **out);

/* Makes the backward's seed (eg_graph_loss_seed) of `rt` hold eg_runtime_loss_seed_value(rt,
 * *scale) in every element at each run from now on, read as the run starts: the caller may
 * change *scale between runs. NULL undoes it (the seed is 1 again). One binding per runtime:
 * EG_ERR_STATE while bound. */
eg_status eg_runtime_bind_loss_seed(eg_runtime *rt, const double *scale);
/* The value a bound seed holds for scale `scale`, which the gradients come out multiplied by:
 * (float)scale, or, when NPU partitions that store floats as fp16 take the seed as an input,
 * the fp16 value it rounds to, saturated at 65504 as the HTP's inputs are (docs/fp16.md):
 * GradScaler's 65536 is 65504 there. */
float eg_runtime_loss_seed_value(const eg_runtime *rt, double scale);

/* Does `rt` run NPU partitions whose float tensors are stored as fp16 (eg_precision FP16)? */
bool eg_runtime_npu_fp16(const eg_runtime *rt);

#endif
