/* executor.h — runs an htp backend graph (qnn_graph.h) on the CPU with NHWC kernels, the way
 * QNN's x86 simulator runs an HTP graph: same ops, same tensors, same layouts.
 *
 * Lifecycle: eg_htp_qnn_executor_create plans everything once — a kernel and its parameters per op
 * (which layout Transposes are folded or skipped is the executor plan's, exec_plan.h),
 * memory for NATIVE tensors (one arena; tensors whose lifetimes, from producing op to last
 * consuming op, do not overlap share bytes; 64-byte aligned), and one scratch buffer sized for
 * the hungriest kernel — then eg_htp_qnn_executor_execute runs the ops in graph order and never
 * allocates. STATIC tensors are read in place from the graph, which must outlive the executor
 * and not change after create.
 *
 * Inputs and outputs are bound per execute, like QNN's graphExecute: every APP_WRITE tensor gets
 * a caller buffer it is read from, and every APP_READ tensor a caller buffer it is written to,
 * by tensor id, with the exact byte size. Kernels read and write those buffers directly (no
 * copies). The executor runs FLOAT_32 graphs (BOOL_8 masks for the comparisons and Select, and
 * Cast between float32/int32/uint32/int8/uint8/bool8); other dtypes are refused at create with
 * EG_ERR_UNSUPPORTED.
 *
 * Kernels thread with OpenMP and OpenBLAS (OMP_NUM_THREADS / OPENBLAS_NUM_THREADS). Chunk sizes
 * and the TransposeConv2d algorithm are chosen at create for the number of threads sgemm has
 * then (they stay correct, if less tuned, when it changes later). An executor is not
 * thread-safe; use one per thread. */
#ifndef EG_BACKENDS_HTP_EXECUTOR_H
#define EG_BACKENDS_HTP_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/executor.h"
#include "backends/htp/exec_plan.h"
#include "backends/htp/qnn_graph.h"
#include "backends/lowered.h"
#include "kernels/quant_f32.h"

typedef struct eg_htp_qnn_executor eg_htp_qnn_executor;

/* A caller buffer for one APP_WRITE or APP_READ tensor. nbytes must equal the tensor's. */
typedef eg_backend_binding eg_htp_qnn_binding;

/* With no plan: every op runs on every execute, as it is. */
eg_status eg_htp_qnn_executor_create(const eg_htp_qnn_graph *g, eg_htp_qnn_executor **out);
/* With executor plan `xp` (exec_plan.h: the layout pass's for g, read at create only; NULL or
 * empty: none): folded ops run once at create, skipped ones never, their readers and producers
 * reading and writing the tensors the plan names. The plan is checked (eg_htp_exec_plan_check)
 * and so is that each kernel takes the forms it is given (EG_ERR_INVALID naming the op
 * otherwise): the executor decides none of it. `shared`: the working memory is the caller's
 * (eg_htp_qnn_executor_create_shared). Precision (edgegrad.h eg_precision; DEFAULT is FP32). FP16
 * runs the graph as QNN's HTP computes float graphs (docs/fp16.md): every FLOAT_32 tensor holds
 * the values fp16 can store (util/fp16.h eg_fp16_store_f32: round to nearest even, saturating
 * at +-65504) — STATIC ones rounded once at create into copies of the executor's own (the
 * graph's bytes are never written: CPU nodes may read the same weights), APP_WRITE ones rounded
 * into copies of the executor's own as each execute binds them (inputs stay read-only), and
 * every op's FLOAT_32 output rounded after the op, in its tensor (so APP_READ buffers get fp16
 * values) — while each op computes in fp32 between, as the HTP accumulates wider than fp16.
 * Those copies are the executor's, like folded constants, not part of the working memory.
 * Fixed-point, integer and bool tensors are unaffected. EG_ERR_ARGUMENT for another precision
 * value. */
eg_status eg_htp_qnn_executor_create_plan(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *xp,
                                      eg_precision precision, bool shared,
                                      eg_htp_qnn_executor **out);
/* Profiling: with `times` (2 per op; NULL: off), each execute writes op k's start (monotonic
 * clock, ns) and duration at times[2k], times[2k + 1]; folded ops stay 0, 0. */
void eg_htp_qnn_executor_set_op_times(eg_htp_qnn_executor *ex, int64_t *times);
void eg_htp_qnn_executor_destroy(eg_htp_qnn_executor *ex);

/* Like eg_htp_qnn_executor_create, but the working memory (the NATIVE tensors and the scratch)
 * is the caller's, handed over by eg_htp_qnn_executor_set_tensor_memory before the first
 * execute (EG_ERR_STATE without it). Executors that never run at the same time may share
 * buffers, since nothing in them outlives an execute: folded constants and packed filters are
 * the executor's own. */
eg_status eg_htp_qnn_executor_create_shared(const eg_htp_qnn_graph *g, eg_htp_qnn_executor **out);
/* The working memory tensor by tensor (backends/executor.h eg_backend_span), for a caller that
 * plans the NATIVE tensors among its own buffers (the runtime, with the values around the
 * partition, or in one block of its own): each one with bytes, in order of production,
 * its bytes (a multiple of 64) and the first and last op (graph indices) that write or read it
 * — its bytes must not be anything else's from the start of first_op to the end of last_op —
 * then each op's scratch (tensor -1, first_op == last_op its op). set_tensor_memory gives
 * entry i the 64-byte aligned buffers[i]; `scratch` (eg_htp_qnn_executor_get_stats' scratch_bytes,
 * may be NULL when every op with scratch has its own) is what ops without an entry use. */
typedef eg_backend_span eg_htp_qnn_work_tensor; /* tensor -1: the scratch of op first_op */
int32_t eg_htp_qnn_executor_work_tensors(const eg_htp_qnn_executor *ex, const eg_htp_qnn_work_tensor **out);
void eg_htp_qnn_executor_set_tensor_memory(eg_htp_qnn_executor *ex, void *const *buffers, void *scratch);

/* The last op (graph index) that reads input `tensor`'s bound buffer on an execute: its last
 * reader, or the last reader of an ALIAS Reshape's output that is its bytes (exec_plan.h),
 * through chains; -1 when no op reads it (or no such tensor). The caller keeps the buffer's
 * bytes until that op is done. */
int32_t eg_htp_qnn_executor_input_last_op(const eg_htp_qnn_executor *ex, int32_t tensor);

/* Runs the graph once. Inputs are read-only to the executor (const in spirit; QNN's API takes
 * them non-const). EG_ERR_ARGUMENT names a missing, duplicate, mistyped or mis-sized binding. */
eg_status eg_htp_qnn_executor_execute(eg_htp_qnn_executor *ex, const eg_htp_qnn_binding *inputs,
                                  int n_inputs, const eg_htp_qnn_binding *outputs, int n_outputs);

/* Planned sizes (for inspect and tests). */
typedef struct eg_htp_qnn_executor_stats {
  size_t native_bytes;       /* the NATIVE arena */
  size_t native_sum_bytes;   /* what NATIVE tensors would take without sharing */
  size_t scratch_bytes;
} eg_htp_qnn_executor_stats;
void eg_htp_qnn_executor_get_stats(const eg_htp_qnn_executor *ex, eg_htp_qnn_executor_stats *out);

/* Quantized tensors. The executor runs fixed-point tensors (UFIXED_POINT_8, SFIXED_POINT_8,
 * SFIXED_POINT_32; the 16-bit ones are EG_ERR_UNSUPPORTED) the way a simulator of QNN's
 * quantized ops does, in one place for every op: each such tensor's bytes are its integers
 * (STATIC data, APP bindings, NATIVE arena), and it has a float view equal to their dequantized
 * values; an op reads the float views of its inputs and writes its output's float view, which
 * is then quantized into the integers and dequantized back (real = scale * (q + offset), the
 * arithmetic of kernels/quant_f32.h with zero_point = -offset and the storage's full range). */

/* The kernel view (kernels/quant_f32.h) of fixed-point tensor `t`, its scales and zero points
 * owned by the struct. */
typedef eg_boundary_qview eg_htp_qnn_qview;
/* EG_ERR_UNSUPPORTED (naming the tensor) for a dtype the kernels do not store; EG_ERR_NOMEM.
 * Freed with eg_boundary_qview_free. */
eg_status eg_htp_qnn_qview_make(const eg_htp_qnn_tensor *t, eg_htp_qnn_qview *out);

#endif
