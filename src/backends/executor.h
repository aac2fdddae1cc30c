/* executor.h — the runtime half of a backend's interface (the compile half is backend.h): how
 * the runtime runs a lowered partition, without naming the backend's functions. The runtime's
 * NPU steps (runtime/npu_step.h) create one executor per partition when a runtime is created,
 * give each its working memory (a block of the activation arena, and the runtime's kernel
 * scratch), run each once per step and destroy them with the runtime; bindings are the
 * partition's boundary tensors (APP_WRITE inputs, APP_READ outputs).
 *
 * The htp backend implements it over its QNN-modelled graph (backends/htp/executor.c,
 * eg_htp_executor); eg_backend_executor_for names the executor of a program's partitions.
 * A backend running on other hardware (a real QNN SDK context, a GPU) would fill the same
 * struct in its own folder. */
#ifndef EG_BACKENDS_EXECUTOR_H
#define EG_BACKENDS_EXECUTOR_H

#include "backends/htp/executor.h"

typedef struct eg_backend_executor {
  const char *name; /* "htp" */
  /* Plans everything for graph `g` once (kernels, memory); *out is the backend's executor. It
   * computes floats at `precision` (edgegrad.h eg_precision; DEFAULT is FP32). */
  eg_status (*create)(const eg_qnn_graph *g, eg_precision precision, void **out);
  /* The working memory run() needs: `work_bytes` for its intermediate tensors, `scratch_bytes`
   * for scratch used inside one op. set_work hands over both (64-byte aligned) once, before the
   * first run; nothing in them outlives a run, so the runtime plans the tensors' block in its
   * arena for the partition's step and gives every partition its kernel scratch. */
  size_t (*work_bytes)(const void *ex);
  size_t (*scratch_bytes)(const void *ex);
  void (*set_work)(void *ex, void *work, void *scratch);
  /* Runs it once; allocates nothing. */
  eg_status (*run)(void *ex, const eg_qnn_binding *inputs, int n_inputs,
                   const eg_qnn_binding *outputs, int n_outputs);
  void (*destroy)(void *ex);
  /* Profiling: with `times` (2 per op of the graph; NULL: off), each later run writes op k's
   * start (the monotonic clock, ns) and duration at times[2k], times[2k + 1]; an op done once
   * at create (a folded constant) gets 0, 0. */
  void (*set_op_times)(void *ex, int64_t *times);
  /* The intermediate tensors one by one instead of work_bytes' block, for a runtime that plans
   * them among its own values (eg_qnn_executor_work_tensors: each one's bytes and the ops that
   * write it first and read it last); set_work_tensors instead of set_work. */
  int32_t (*work_tensors)(const void *ex, const eg_qnn_work_tensor **out);
  void (*set_work_tensors)(void *ex, void *const *buffers, void *scratch);
} eg_backend_executor;

/* The htp backend's executor (backends/htp/executor.c). */
extern const eg_backend_executor eg_htp_executor;

/* The executor of a compiled program's NPU partitions (programs hold QNN-modelled graphs,
 * which the htp backend's executor runs). */
const eg_backend_executor *eg_backend_executor_for_program(void);

#endif
