/* lowered.h — a lowered partition as the rest of edgegrad sees it, and the runtime half of a
 * backend (its compile half is compiler/backend.h).
 *
 * A compiled program (program/program.h) holds per NPU partition an eg_lowered: the backend
 * that owns it (its runtime half), the backend's own lowered form (opaque: a QNN-modelled graph
 * for htp, something else for another backend) and its boundary, described generically — per
 * boundary value, the backend's tensor index the runtime binds it to and how the runtime
 * converts it on the way (runtime/npu_step.h). Nothing outside a backend's folder looks into
 * `graph`: the runtime runs it through the backend's executor, the .egp reader loads it
 * through the backend's read() (its writer through eg_backend.write), the public API describes
 * it through the describe hooks, and `edgegrad export-onnx` exports it through export_onnx.
 *
 * The runtime halves are found by name (backends_rt.c: eg_backend_rt_named, what the .egp
 * reader asks for the backend name a file records); the compile halves by target or name
 * (backends.c). A new backend is one folder under src/backends/ filling both structs and a
 * row in each of the two registry files; a test may register its own (backends.h). */
#ifndef EG_BACKENDS_LOWERED_H
#define EG_BACKENDS_LOWERED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/executor.h"
#include "backends/serial.h"
#include "ir/graph.h"
#include "ir/placement.h"
#include "kernels/quant_f32.h"
#include "target/targets.h"

/* A boundary crossing: IR value `value` is the backend's tensor `tensor`, converted by the
 * runtime as it is copied in or out:
 *   nhwc   — the value is held NHWC (a rank-4 value whose axes are EG_AXES_NHWC, pass
 *            layout_nhwc): permuted NCHW <-> NHWC;
 *   narrow — an int64 value marked npu_int32 (pass i64_to_i32): narrowed to int32 going in,
 *            widened coming out;
 *   quant  — a value held quantized (pass fold_qdq): quantized going in, dequantized coming
 *            out, on the grid the backend's quant_view() gives.
 * held: the runtime's own buffer of the value holds it NHWC too (only with nhwc), so the steps
 * that write and read it bind it in place and nothing converts it: decided once at compile time
 * for the whole program (compiler/compile.c, from ir/readers.h eg_nhwc_between_partitions), the
 * same on every boundary of the value; the runtime reads it. */
typedef struct eg_boundary {
  int32_t value;
  int32_t tensor;
  bool nhwc, narrow, quant, held;
} eg_boundary;

typedef struct eg_backend_rt eg_backend_rt;

/* A lowered partition: its backend, the backend's graph and its boundary, inputs and outputs
 * in first-use order. Owns the graph and the lists. */
typedef struct eg_lowered {
  const eg_backend_rt *backend;
  void *graph;
  int32_t n_inputs, n_outputs;
  eg_boundary *inputs, *outputs;
} eg_lowered;
/* Frees the graph (through its backend) and the lists; *lp is cleared. */
void eg_lowered_free(eg_lowered *lp);

/* A quantized boundary tensor's grid as the CPU quantize kernels take it (kernels/quant_f32.h),
 * its scales and zero points owned by the struct. */
typedef struct eg_boundary_qview {
  eg_quant_view v;
  double *scale;
  int64_t *zero_point;
} eg_boundary_qview;
void eg_boundary_qview_free(eg_boundary_qview *q);

struct eg_backend_rt {
  const char *name; /* "htp": what a .egp records for its partitions; unique */
  /* Frees a graph this backend made or read. */
  void (*free)(void *graph);
  /* Reads partition k's record from a .egp (what eg_backend.write put) into out->graph and
   * out's boundary, and checks it against graph `g` and placement `parts`: every rule its
   * own builders enforce, and that each boundary tensor holds its value (dtype, dims, layout)
   * and each input / output tensor is bound once. Sets out->backend. On failure the message
   * comes from the source (eg_source_error); out is left for eg_lowered_free. */
  eg_status (*read)(eg_egp_source *src, const eg_graph *g, const eg_partitioning *parts,
                    int32_t k, eg_lowered *out);
  /* The executor of its graphs (backends/executor.h). */
  const eg_backend_executor *executor;
  /* The grid of quantized boundary tensor `tensor` (an eg_boundary with quant). */
  eg_status (*quant_view)(const void *graph, int32_t tensor, eg_boundary_qview *out);
  /* Whether lowering a node of op `op` may make its result an alias of an argument's tensor
   * (no op emitted): the runtime's memory plan then keeps the argument alive as long as the
   * result is read (runtime/plan.h). */
  bool (*may_alias)(eg_op op);
  /* The public API's description (edgegrad.h eg_model_npu_*): the graph's name, tensor and
   * op counts; tensor `tensor` and op `op` (in range: the caller checks against the counts);
   * param `index` of op `op` (in [0, num_params)) as JSON text into value[size]. Pointers
   * stay valid as long as the graph. */
  void (*describe)(const void *graph, eg_npu_partition_info *out);
  void (*describe_tensor)(const void *graph, int32_t tensor, eg_precision precision,
                          eg_npu_tensor_info *out);
  void (*describe_op)(const void *graph, int32_t op, eg_npu_op_info *out);
  void (*describe_param)(const void *graph, int32_t op, int32_t index, const char **name,
                         char *value, size_t size);
  /* Optional (NULL: refused with EG_ERR_UNSUPPORTED): writes partition `lp` of graph `g`
   * compiled for `t` as an ONNX model at `path` (edgegrad.h eg_model_export_onnx). */
  eg_status (*export_onnx)(const eg_graph *g, const eg_target *t, const eg_lowered *lp,
                           const char *path);
};

/* A registry's table (backends_rt.c, backends.c): pointers to backend structs whose first
 * member is their name (eg_backend_rt, eg_backend), the built-in ones then up to 8 extra. */
typedef struct eg_backend_table {
  const void *const *builtin;
  size_t n_builtin;
  const void *extra[8];
} eg_backend_table;
/* The entry called `name`; NULL if none. */
const void *eg_backend_table_find(const eg_backend_table *t, const char *name);
/* Adds entry `b` (registering one twice is no error); EG_ERR_INVALID naming it when another
 * has its name or the table is full. */
eg_status eg_backend_table_add(eg_backend_table *t, const void *b);

/* The runtime half called `name` (a built-in one, or one a test registered); NULL if none. */
const eg_backend_rt *eg_backend_rt_named(const char *name);
/* Registers another runtime half (a test's backend), as eg_backend_table_add. */
eg_status eg_backend_rt_register(const eg_backend_rt *b);

#endif
