/* values.h — how IR values are held inside the htp backend's graphs, and a lowered partition:
 * what both the lowering (lower.h, compiler) and the runtime side (the .egp reader, the
 * runtime's NPU steps) need to agree on, so neither includes the other.
 *
 * Layout: a rank-4 value whose eg_value.axes is EG_AXES_NHWC (set by pass layout_nhwc) is held
 * NHWC; every other value keeps the IR's traced order. Dtype: int64 values marked npu_int32
 * (pass i64_to_i32) are held as INT_32; quantization-annotated values no quantize node reads are
 * held as fixed-point tensors (pass fold_qdq). */
#ifndef EG_BACKENDS_HTP_VALUES_H
#define EG_BACKENDS_HTP_VALUES_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/htp/qnn_graph.h"
#include "backends/lowered.h"
#include "ir/graph.h"
#include "ir/placement.h"


/* The conversions of boundary `b` (its value of `g` and tensor of `qg` set) the runtime applies
 * (backends/lowered.h): nhwc when eg_htp_is_nhwc, narrow for an int64 value marked npu_int32,
 * quant when the tensor is fixed point. */
void eg_htp_boundary_flags(const eg_graph *g, const eg_htp_qnn_graph *qg, eg_boundary *b);

/* Whether IR value `v` is held NHWC inside NPU graphs: a rank-4 tensor whose axes are
 * EG_AXES_NHWC. */
bool eg_htp_is_nhwc(const eg_value *v);
/* The order `v` is held in: EG_AXES_NHWC when eg_htp_is_nhwc, else EG_AXES_TRACED. */
eg_axis_order eg_htp_axes(const eg_value *v);
/* The QNN axis of ATen dim `dim` (already wrapped, >= 0) of value `v`: NCHW dim 0,1,2,3 ->
 * NHWC axis 0,3,1,2 when v is held NHWC, unchanged otherwise. */
int eg_htp_axis(const eg_value *v, int dim);
/* The ATen dim stored at QNN axis `axis` of value `v` (the inverse of eg_htp_axis). */
int eg_htp_aten_dim(const eg_value *v, int axis);
/* A dim of a value of a node being lowered as a QNN dim: lowering checks every such node with
 * eg_htp_dims_fit (backends/htp/compile/compiler.h) first, so the dim fits; a dim that does not is
 * an assertion failure, never a silent truncation. */
uint32_t eg_htp_qnn_dim(int64_t dim);
/* QNN dims of an IR tensor value in its axis order (each through eg_htp_qnn_dim). */
void eg_htp_dims(const eg_value *v, uint32_t *dims);
/* The QNN dtype of an IR dtype; EG_HTP_QNN_DTYPE_COUNT if the NPU has none (e.g. int64). */
eg_htp_qnn_dtype eg_htp_dtype(eg_dtype dtype);
/* The QNN dtype IR tensor value `v` is held as inside NPU graphs: eg_htp_dtype(v->dtype), except
 * that an int64 value marked npu_int32 (pass i64_to_i32) is INT_32 — its statics are stored
 * narrowed, and the runtime narrows / widens it at partition boundaries (runtime/npu_step.h).
 * EG_HTP_QNN_DTYPE_COUNT if none (an unmarked int64 value). */
eg_htp_qnn_dtype eg_htp_value_dtype(const eg_value *v);
/* Quantized values (pass fold_qdq). Value `value` of `g` is held quantized inside NPU graphs
 * when it is a float32 tensor with quantization attributes (eg_value.quant) and no quantize node
 * reads it: a folded pair's x, or a dequantize's output (whose values lie on its grid). A value
 * a quantize node still reads is the float being quantized on the CPU and stays FLOAT_32 (its
 * attributes then only tell the builders' guards that it is quantized elsewhere). Such a value
 * is a fixed-point QNN tensor (eg_htp_quant_dtype of its storage dtype) with encoding
 * SCALE_OFFSET (per tensor) or AXIS_SCALE_OFFSET (per channel, the axis where the lowering put
 * the traced axis), offset = -zero_point; a quantized static is stored as its quantized
 * integers (the CPU quantize kernel, kernels/quant_f32.h). */
bool eg_htp_held_quantized(const eg_graph *g, int32_t value);
/* UFIXED_POINT_8 / SFIXED_POINT_8 / SFIXED_POINT_32 for storage uint8 / int8 / int32;
 * EG_HTP_QNN_DTYPE_COUNT otherwise. */
eg_htp_qnn_dtype eg_htp_quant_dtype(eg_dtype storage);
/* The QNN dtype value `value` of `g` is held as: eg_htp_quant_dtype of its storage when
 * eg_htp_held_quantized, else eg_htp_value_dtype. */
eg_htp_qnn_dtype eg_htp_held_dtype(const eg_graph *g, int32_t value);

/* Whether the lowering of a node of op `op` may make its result an alias of an argument's
 * tensor (eg_htp_alias: no op emitted, the argument's bytes read where the result is read):
 * the views, copies and transposes of builders/shape.c, the rank-0 reductions of
 * builders/reduce.c, and getitem. The runtime's memory plan keeps an argument of such a node
 * alive as long as the result is read (runtime/plan.h); eg_htp_alias refuses any other op. */
bool eg_htp_may_alias(eg_op op);

#endif
