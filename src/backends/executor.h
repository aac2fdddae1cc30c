/* executor.h — the executor interface: how the runtime runs a lowered partition without naming
 * its backend. It is one part of a backend's runtime half (backends/lowered.h eg_backend_rt:
 * the compiled program records, per partition, the backend whose runtime half owns it). The
 * runtime's NPU steps (runtime/npu_step.h) create one executor per partition when a runtime is
 * created, give each its working memory (a block of the activation arena, and the runtime's
 * kernel scratch), run each once per step and destroy them with the runtime; bindings are the
 * partition's boundary tensors (by the backend's tensor index: eg_boundary.tensor). */
#ifndef EG_BACKENDS_EXECUTOR_H
#define EG_BACKENDS_EXECUTOR_H

#include <stddef.h>
#include <stdint.h>

#include "edgegrad.h"

/* A caller buffer for one boundary tensor of a partition. nbytes must equal the tensor's. */
typedef struct eg_backend_binding {
  int32_t tensor;
  void *data;
  size_t nbytes;
} eg_backend_binding;

/* One of an executor's intermediate tensors for a runtime that plans them among its own
 * values: its bytes (a multiple of 64) and the first and last op (indices in the lowered graph)
 * that write or read it; tensor -1 is the scratch of op first_op (== last_op). */
typedef struct eg_backend_work_tensor {
  int32_t tensor;
  size_t bytes;
  int32_t first_op, last_op;
} eg_backend_work_tensor;

typedef struct eg_backend_executor {
  /* Plans everything for lowered graph `graph` (eg_lowered.graph, the backend's own form)
   * once (kernels, memory); *out is the backend's executor. It computes floats at `precision`
   * (edgegrad.h eg_precision; DEFAULT is FP32). */
  eg_status (*create)(const void *graph, eg_precision precision, void **out);
  /* The working memory run() needs: `work_bytes` for its intermediate tensors, `scratch_bytes`
   * for scratch used inside one op. set_work hands over both (64-byte aligned) once, before the
   * first run; nothing in them outlives a run, so the runtime plans the tensors' block in its
   * arena for the partition's step and gives every partition its kernel scratch. */
  size_t (*work_bytes)(const void *ex);
  size_t (*scratch_bytes)(const void *ex);
  void (*set_work)(void *ex, void *work, void *scratch);
  /* Runs it once; allocates nothing. */
  eg_status (*run)(void *ex, const eg_backend_binding *inputs, int n_inputs,
                   const eg_backend_binding *outputs, int n_outputs);
  void (*destroy)(void *ex);
  /* Profiling: with `times` (2 per op of the graph; NULL: off), each later run writes op k's
   * start (the monotonic clock, ns) and duration at times[2k], times[2k + 1]; an op done once
   * at create (a folded constant) gets 0, 0. */
  void (*set_op_times)(void *ex, int64_t *times);
  /* Optional (NULL: the executor keeps its tensors to itself). The intermediate tensors one by
   * one instead of work_bytes' block, for a runtime that plans them among its own values;
   * set_work_tensors instead of set_work. */
  int32_t (*work_tensors)(const void *ex, const eg_backend_work_tensor **out);
  void (*set_work_tensors)(void *ex, void *const *buffers, void *scratch);
} eg_backend_executor;

#endif
