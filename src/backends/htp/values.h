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
#include "ir/graph.h"
#include "ir/placement.h"

/* A boundary crossing: IR value `value` is QNN tensor `tensor`; `nhwc` when the value is held
 * NHWC (eg_htp_is_nhwc: the runtime permutes NCHW <-> NHWC as it copies). */
typedef struct eg_htp_boundary {
  int32_t value;
  int32_t tensor;
  bool nhwc;
} eg_htp_boundary;

/* A lowered partition: its backend graph and its boundary, inputs and outputs in first-use
 * order. Owns the graph. */
typedef struct eg_htp_partition {
  eg_qnn_graph *graph;
  int32_t n_inputs, n_outputs;
  eg_htp_boundary *inputs, *outputs;
} eg_htp_partition;
void eg_htp_partition_free(eg_htp_partition *hp);

/* Who reads each value, for every partition of a placement at once (one pass over the graph,
 * so asking for every partition costs O(nodes + values), not partitions x nodes): per value id,
 * EG_HTP_READ_NONE when no node reads it, the partition of its readers when they all lie in
 * one NPU partition, or EG_HTP_READ_OUTSIDE when a CPU node, two partitions or the graph's
 * outputs read it. A getitem's readers count as readers of the element it names. */
enum { EG_HTP_READ_NONE = -1, EG_HTP_READ_OUTSIDE = -2 };
typedef struct eg_htp_readers {
  int32_t n_values;
  int32_t *of; /* per value id */
} eg_htp_readers;
eg_status eg_htp_readers_compute(const eg_graph *g, const eg_partitioning *parts,
                                 eg_htp_readers *out);
void eg_htp_readers_free(eg_htp_readers *r);
/* Value `value` is read outside partition p: by a CPU node, another partition, or as a graph
 * output. */
bool eg_htp_needed_outside(const eg_htp_readers *r, int32_t value, int32_t p);
/* The values the runtime holds NHWC in its own buffers, so the NPU steps that write and read
 * them bind them in place and nothing converts them: held NHWC (eg_htp_is_nhwc), float32 and
 * not quantized, defined by an NPU node, and read only by NPU nodes (no CPU node, no graph
 * output, a getitem's readers counting as the element's) — every step that touches one agrees
 * on its order. *out: per value id (malloc'ed, the caller frees). */
eg_status eg_htp_nhwc_between_partitions(const eg_graph *g, const eg_partitioning *parts,
                                         bool **out);

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
 * eg_htp_dims_fit (backends/htp/compiler.h) first, so the dim fits; a dim that does not is an
 * assertion failure, never a silent truncation. */
uint32_t eg_htp_qnn_dim(int64_t dim);
/* QNN dims of an IR tensor value in its axis order (each through eg_htp_qnn_dim). */
void eg_htp_dims(const eg_value *v, uint32_t *dims);
/* The QNN dtype of an IR dtype; EG_QNN_DTYPE_COUNT if the NPU has none (e.g. int64). */
eg_qnn_dtype eg_htp_dtype(eg_dtype dtype);
/* The QNN dtype IR tensor value `v` is held as inside NPU graphs: eg_htp_dtype(v->dtype), except
 * that an int64 value marked npu_int32 (pass i64_to_i32) is INT_32 — its statics are stored
 * narrowed, and the runtime narrows / widens it at partition boundaries (runtime/npu_step.h).
 * EG_QNN_DTYPE_COUNT if none (an unmarked int64 value). */
eg_qnn_dtype eg_htp_value_dtype(const eg_value *v);
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
 * EG_QNN_DTYPE_COUNT otherwise. */
eg_qnn_dtype eg_htp_quant_dtype(eg_dtype storage);
/* The QNN dtype value `value` of `g` is held as: eg_htp_quant_dtype of its storage when
 * eg_htp_held_quantized, else eg_htp_value_dtype. */
eg_qnn_dtype eg_htp_held_dtype(const eg_graph *g, int32_t value);

/* Whether the lowering of a node of op `op` may make its result an alias of an argument's
 * tensor (eg_htp_alias: no op emitted, the argument's bytes read where the result is read):
 * the views, copies and transposes of builders/shape.c, the rank-0 reductions of
 * builders/reduce.c, and getitem. The runtime's memory plan keeps an argument of such a node
 * alive as long as the result is read (runtime/plan.h); eg_htp_alias refuses any other op. */
bool eg_htp_may_alias(eg_op op);

/* The name under which boundary tensor `name` (QNN tensor `tensor` of its graph) appears outside
 * edgegrad: as a graph input or output of the partition's ONNX model (edgegrad export-onnx) and
 * as the file <name>.npy of a partition dump (edgegrad run --dump-partitions). A QNN name made of
 * [A-Za-z0-9_.-] only, not starting with '.', at most 200 bytes, is kept as it is; any other gets
 * each other byte replaced by '_', is cut to 200 bytes and gets "~<tensor>" appended, so the
 * names stay unique within the graph and each is a safe file name. Writes at most `size` bytes,
 * always NUL-terminated (EG_HTP_EXPORT_NAME_MAX is always enough). */
#define EG_HTP_EXPORT_NAME_MAX 224
void eg_htp_export_name(const char *name, int32_t tensor, char *out, size_t size);

#endif
