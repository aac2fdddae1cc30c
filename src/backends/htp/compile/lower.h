/* lower.h — lowering one NPU partition of an IR graph into an htp backend graph (qnn_graph.h),
 * and the context every ATen-op builder emits QNN ops through.
 *
 * Layout: a value's axis order inside NPU graphs is a field of the value, eg_value.axes, set by
 * pass layout_nhwc (compiler/passes/layout_nhwc.c): a rank-4 tensor is NHWC (channels last, as
 * QNN's Conv2d, pools and norms want their activations) when its axes are EG_AXES_NHWC, else it
 * keeps the IR's (ATen's) traced order, as every other rank does. The lowering obeys the field and
 * decides nothing: eg_htp_dims / eg_htp_axis translate ATen dims by it; a STATIC tensor is
 * permuted NCHW -> NHWC when its value's axes say so; a boundary is `nhwc` exactly when its
 * value is (the runtime permutes NCHW <-> NHWC as it copies). The pass inserts the conversions
 * (aten.clone with a memory_format: a Transpose, builders/shape.c) where two orders meet, so
 * builders never add their own: a builder that needs one order checks it with eg_htp_want_axes
 * and fails lowering with a clear error when the value is in the other (the pass did not run),
 * never computing in the wrong order.
 *
 * Tensors for IR values:
 *   - eg_htp_input(value): the tensor holding an argument. A value defined outside the partition
 *     becomes an APP_WRITE tensor (a boundary input) — except statics (frozen weights and
 *     constants), which become STATIC tensors with their bytes, keyed by value id, so two ops
 *     reading the same static share one tensor. The one static that is a boundary input too is
 *     the backward's seed (ir/seed.h): loss scaling rewrites it at run time, which a STATIC
 *     tensor, held by the executor from its creation on, would not see. A builder that reads
 *     a static's bytes itself (class weights, scalar operands) bakes them: given the seed, it
 *     makes loss scaling refuse the program (runtime/loss_seed.c), never scale it wrongly.
 *   - eg_htp_filter(value, layout): a static weight in a filter layout (HWIO, TransposeConv2d's
 *     [kH,kW,Cin,Cout/g], DepthWiseConv2d's [kH,kW,1,C]), permuted once at lowering and keyed by
 *     (value, layout): the forward Conv2d and a backward Transpose asking for the HWIO form get the
 *     same STATIC tensor, stored once.
 *   - eg_htp_define(value): the tensor an op writes for an IR value the node defines: APP_READ
 *     when the value is needed outside the partition (by a CPU node, another partition or as a
 *     graph output), else NATIVE.
 *   - eg_htp_temp: a NATIVE intermediate with no IR value (e.g. the transposed filter).
 * Names are "<node name>" for defined values, "<node name>_<what>" for temporaries, and the
 * input's IR label for boundary inputs, so a dump reads like the IR. */
#ifndef EG_BACKENDS_HTP_LOWER_H
#define EG_BACKENDS_HTP_LOWER_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/htp/qnn_graph.h"
#include "backends/htp/values.h"
#include "ir/graph.h"
#include "backends/htp/compile/npu_ops.h"
#include "ir/placement.h"

typedef struct eg_htp_lower eg_htp_lower;

typedef enum eg_htp_filter_layout {
  EG_HTP_FILTER_HWIO,     /* Conv2d: [kH, kW, Cin/g, Cout] from ATen [Cout, Cin/g, kH, kW] */
  EG_HTP_FILTER_TCONV,    /* TransposeConv2d: [kH, kW, Cin, Cout/g] from ATen transposed
                             weight [Cin, Cout/g, kH, kW] */
  EG_HTP_FILTER_DEPTHWISE /* DepthWiseConv2d: [kH, kW, 1, Cout] from ATen [Cout, 1, kH, kW] */
} eg_htp_filter_layout;


/* Lowers every partition of `parts` (a partitioning of verified graph `g`) into out[0 ..
 * parts->n_partitions), calling each node's builder (from `builders`, indexed by op: npu_ops.h)
 * in its partition's order. Who reads each value is worked out once for all partitions
 * (eg_readers), and the per-value scratch is shared, so the work is linear in the graph
 * plus the partitions' sizes. On failure the message names the node whose builder failed and
 * every out[k] is cleared. */
eg_status eg_htp_lower_partitions(const eg_graph *g, const eg_partitioning *parts,
                                  const eg_htp_builder *const *builders, eg_lowered *out);
/* Partition `p` alone (tests). */
eg_status eg_htp_lower_partition(const eg_graph *g, const eg_partitioning *parts, int32_t p,
                                 const eg_htp_builder *const *builders, eg_lowered *out);

/* ---- for builders ---- */
const eg_graph *eg_htp_ir(const eg_htp_lower *L);
eg_status eg_htp_input(eg_htp_lower *L, int32_t value, int32_t *tensor);
eg_status eg_htp_filter(eg_htp_lower *L, int32_t value, eg_htp_filter_layout layout,
                        int32_t *tensor);
eg_status eg_htp_define(eg_htp_lower *L, int32_t value, int32_t *tensor);
eg_status eg_htp_temp(eg_htp_lower *L, const char *what, eg_htp_qnn_dtype dtype, int32_t rank,
                      const uint32_t *dims, int32_t *tensor);
/* A STATIC float32 constant of the given shape (e.g. a scalar operand), copied. */
eg_status eg_htp_const_f32(eg_htp_lower *L, const char *what, int32_t rank, const uint32_t *dims,
                           const float *data, int32_t *tensor);
/* A STATIC INT_32 constant of the given shape (e.g. the class indices 0..C-1), copied. */
eg_status eg_htp_const_i32(eg_htp_lower *L, const char *what, int32_t rank, const uint32_t *dims,
                           const int32_t *data, int32_t *tensor);
/* Whether IR value `value` is needed outside the partition (a CPU node, another partition or a
 * graph output reads it): its tensor is then an APP_READ written by an op of this partition. */
bool eg_htp_is_needed_outside(const eg_htp_lower *L, int32_t value);
/* Whether element `i` of the tuple that node `n` defines is read anywhere in `g`: by a node
 * (directly, or through a getitem whose output is read) or as a graph output. For supports():
 * a builder may leave an unread element undefined (max pool's int64 indices, eval batch norm's
 * empty statistics); lowering then skips the getitems that name it. */
bool eg_htp_elem_used(const eg_graph *g, const eg_node *n, int i);
/* Makes IR value `value`, defined by the node being lowered, name the existing tensor `tensor`
 * without any op — for copies and views that leave the NPU graph's bytes as they are (detach,
 * clone, a reshape that keeps the QNN dims), the way getitem names a tuple element. The tensor
 * must have the value's QNN dtype and dims, and the value must not be needed outside the
 * partition (a boundary output is an APP_READ tensor an op writes: emit a same-dims Reshape
 * then). */
eg_status eg_htp_alias(eg_htp_lower *L, int32_t value, int32_t tensor);
/* Appends op `type` named "<node>" (first op of a node) or "<node>_op<k>". */
eg_status eg_htp_op(eg_htp_lower *L, eg_htp_qnn_op type, const int32_t *inputs, int32_t n_inputs,
                    const int32_t *outputs, int32_t n_outputs, const eg_htp_qnn_param *params,
                    int32_t n_params);

/* The input Sigmoid and Tanh read: float tensor `in` through ReluMinMax(-65504, 65504) into a
 * new NATIVE tensor "<node>_<what>" (*out). QNN's HTP computes Sigmoid and Tanh whose input a
 * Conv2d, MatMul or ElementWiseAdd wrote with a coarser approximation (measured on QNN 2.51's
 * HTP emulator at fp16: relative error 3.9e-3 to 7.5e-3, against 8e-4 and 1.3e-3 for the same
 * ops after this clamp); the clamp is exact — the identity on every finite fp16 value and on
 * NaN, and Sigmoid and Tanh of +-65504 are those of +-inf in fp32 and fp16. */
eg_status eg_htp_transcendental_input(eg_htp_lower *L, int32_t in, const char *what,
                                      int32_t *out);

/* EG_OK when IR value `value` (called `what` in the message) is in axis order `axes`, or is not
 * a rank-4 tensor (other ranks have one order); else a node error naming the value, its order
 * and the order the node's lowering needs: the builder cannot lower it correctly (pass
 * layout_nhwc sets the orders and inserts the conversions). */
eg_status eg_htp_want_axes(eg_htp_lower *L, int32_t value, eg_axis_order axes, const char *what);

#endif
