/* memory.h — a runtime's memory plan: where every value of its graph and every NPU step's
 * working memory live in one activation arena, and how much kernel scratch the steps share.
 * Planned once when a runtime is created (runtime/engine.c), in the program's node order when
 * compiled, by plan.h's lifetimes. A CPU copy (a getitem, view, detach ...) shares its source's
 * bytes; a value that lives only inside an NPU partition gets none (its executor holds it); an
 * NPU step's staging and executor memory is planned as one block live while its step runs, or
 * as spans over the ops that use each of its tensors, among the values — whichever layout needs
 * less (eg_memory_plan). Each step keeps where its memory went (eg_npu_step_place_*). */
#ifndef EG_RUNTIME_MEMORY_H
#define EG_RUNTIME_MEMORY_H

#include "program/program.h"
#include "runtime/fuse.h"
#include "runtime/npu_step.h"
#include "runtime/plan.h"

typedef struct eg_memory {
  eg_plan plan;         /* the values' offsets in the arena (plan.offset), its bytes */
  size_t scratch_bytes; /* the kernel scratch: the CPU nodes' and the NPU steps' executors' */
} eg_memory;

/* Plans graph g run as program p (NULL: every node on the CPU, in index order) with p's NPU
 * steps `steps` (per partition; created, not bound): the smallest of three layouts of the
 * steps' memory — each step's block; its spans among the values, its ops' scratch in the
 * shared scratch; those with the ops' scratch as spans too — each step told where its memory
 * went. The fused chains `fz` (per node, runtime/fuse.h; NULL: none) share and drop buffers
 * as fuse.h says. */
eg_status eg_memory_plan(const eg_graph *g, const eg_program *p, eg_npu_step *const *steps,
                         const eg_fusion *fz, eg_memory *out);
void eg_memory_free(eg_memory *m);

#endif
