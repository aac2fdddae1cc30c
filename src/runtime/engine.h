/* engine.h — the runtime engine: what an eg_runtime of the public API is and does. It runs a
 * verified graph on the portable CPU kernels, or a compiled program (program/program.h): its
 * steps in order, CPU nodes through eg_op_run and NPU partitions through their steps
 * (runtime/npu_step.h), in memory planned once at creation (runtime/memory.h). The public
 * eg_runtime_* functions (api/runtime.c) check their arguments and call these; nothing here
 * checks what the facade has. */
#ifndef EG_RUNTIME_ENGINE_H
#define EG_RUNTIME_ENGINE_H

#include "edgegrad.h"
#include "program/program.h"
#include "runtime/profile.h"

/* A runtime of graph `g` (verified), running `program` when not NULL (a compiled program of g;
 * owned by the runtime from here on when owns_program, also on failure). `opt` is complete
 * (its sizes read, num_threads >= 0, precision in range); the engine checks the rest (the dump
 * folder, max_memory_bytes against the plan) before it allocates. */
eg_status eg_engine_create(const eg_graph *g, eg_program *program, bool owns_program,
                           const eg_runtime_options *opt, eg_runtime **out);
/* eg_engine_create with the fused chains of CPU nodes (runtime/fuse.h) on (what
 * eg_engine_create does) or off (each node its own kernel: the reference a test compares the
 * fused kernels with, bit for bit). */
eg_status eg_engine_create_fused(const eg_graph *g, eg_program *program, bool owns_program,
                                 const eg_runtime_options *opt, bool fuse, eg_runtime **out);
void eg_engine_destroy(eg_runtime *rt);

/* The graph `rt` runs (the model's, or the compiled program's). */
const eg_graph *eg_runtime_graph(const eg_runtime *rt);
/* The buffer of value id v (fixed for the runtime's life; NULL for a value with no bytes of
 * the runtime's: a tuple, one that lives only inside an NPU partition). */
void *eg_engine_value(const eg_runtime *rt, int32_t v);
/* Whether input i has been set; eg_engine_input_given marks it set (its bytes written into
 * eg_engine_value of its value). */
bool eg_engine_input_is_set(const eg_runtime *rt, int32_t i);
void eg_engine_input_given(eg_runtime *rt, int32_t i);
/* Runs every step once (every input set), at the options' thread count. */
eg_status eg_engine_run(eg_runtime *rt);
/* Whether the last run succeeded. */
bool eg_engine_ran(const eg_runtime *rt);
/* The profile (options.profile), NULL when off. */
const eg_run_profile *eg_engine_profile(const eg_runtime *rt);
/* Bytes CPU nodes derived once from statics at creation (eg_op_prepare); 0 when none. */
size_t eg_engine_prepared_bytes(const eg_runtime *rt);
/* How many fused chains `rt` runs (runtime/fuse.h); 0 when created with fusion off. */
int32_t eg_engine_fused_chains(const eg_runtime *rt);

/* Makes the backward's seed (runtime/loss_seed.h) of `rt` hold
 * eg_runtime_loss_seed_value(rt, *scale) in every element at each run from now on, read as
 * the run starts: the caller may change *scale between runs. NULL undoes it (the seed is 1
 * again). One binding per runtime: EG_ERR_STATE while bound. */
eg_status eg_runtime_bind_loss_seed(eg_runtime *rt, const double *scale);
/* The value a bound seed holds for scale `scale`, which the gradients come out multiplied by:
 * (float)scale, or, when NPU partitions that store floats as fp16 take the seed as an input,
 * the fp16 value it rounds to, saturated at 65504 as the HTP's inputs are (docs/fp16.md):
 * GradScaler's 65536 is 65504 there. */
float eg_runtime_loss_seed_value(const eg_runtime *rt, double scale);

/* Does `rt` run NPU partitions whose float tensors are stored as fp16 (eg_precision FP16)? */
bool eg_runtime_npu_fp16(const eg_runtime *rt);

#endif
