/* executor.h — the executor interface: how the runtime runs a lowered partition without naming
 * its backend. It is one part of a backend's runtime half (backends/lowered.h eg_backend_rt:
 * the compiled program records, per partition, the backend whose runtime half owns it). The
 * runtime's NPU steps (runtime/npu_step.h) create one executor per partition when a runtime is
 * created, give each its working memory (spans of the activation arena, and the runtime's
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

/* One span of an executor's working memory: `bytes` (a multiple of 64) that its ops first_op
 * to last_op (indices in the lowered graph, first_op <= last_op) write or read, and nothing
 * else uses from the start of first_op to the end of last_op; `tensor` is the backend's own tag
 * (its tensor's index, say), except that -1 marks the scratch of op first_op (== last_op),
 * which may be given no buffer: the op then works in the shared scratch. A backend that works
 * in one block describes it as one span over all its ops. */
typedef struct eg_backend_span {
  int32_t tensor;
  size_t bytes;
  int32_t first_op, last_op;
} eg_backend_span;

typedef struct eg_backend_executor {
  /* Plans everything for lowered graph `graph` (eg_lowered.graph, the backend's own form)
   * once (kernels, memory); *out is the backend's executor. It computes floats at `precision`
   * (edgegrad.h eg_precision; DEFAULT is FP32). */
  eg_status (*create)(const void *graph, eg_precision precision, void **out);
  /* The working memory run() needs, which the runtime plans among its own values and hands
   * over once, before the first run (nothing in it outlives a run): its spans (*out, the
   * executor's, valid until destroy; the count, >= 0), and `scratch_bytes` of scratch used
   * inside one op. set_spans gives span i the 64-byte aligned buffers[i] (NULL only for an op's
   * scratch: that op then uses `scratch`), and the scratch every op without a buffer of its own
   * uses (64-byte aligned, scratch_bytes long; the runtime's kernel scratch, NULL when every
   * op with scratch has its buffer). */
  int32_t (*spans)(const void *ex, const eg_backend_span **out);
  size_t (*scratch_bytes)(const void *ex);
  void (*set_spans)(void *ex, void *const *buffers, void *scratch);
  /* Runs it once; allocates nothing. */
  eg_status (*run)(void *ex, const eg_backend_binding *inputs, int n_inputs,
                   const eg_backend_binding *outputs, int n_outputs);
  void (*destroy)(void *ex);
  /* Profiling: with `times` (2 per op of the graph; NULL: off), each later run writes op k's
   * start (the monotonic clock, ns) and duration at times[2k], times[2k + 1]; an op done once
   * at create (a folded constant) gets 0, 0. */
  void (*set_op_times)(void *ex, int64_t *times);
  /* Optional (NULL: an input is read by the ops reading its tensor, no later): the last op that
   * reads input tensor `tensor`'s bound buffer (through ops whose outputs are its bytes, a
   * Reshape that moves nothing), -1 if none; the runtime keeps the buffer until then. */
  int32_t (*input_last_op)(const void *ex, int32_t tensor);
} eg_backend_executor;

#endif
