/* egp_write.c — the htp backend's record of a lowered partition in a .egp (format:
 * program/egp_format.h, NPU section, backend "htp"; read back by egp_read.c): its QNN graph,
 * tensor by tensor and op by op, and its boundary, through backends/serial.h (str: a string;
 * static: u64 offset, u64 nbytes, a range of the STATIC section):
 *     Record := str graph_name;
 *                  u32 n_tensors; n_tensors x Tensor; u32 n_ops; n_ops x Op;
 *                  u32 n_inputs;  n_inputs  x Boundary;  u32 n_outputs; n_outputs x Boundary;
 *                  ExecPlan
 *     Tensor := str name; u8 type (0 APP_WRITE, 1 APP_READ, 2 NATIVE, 3 STATIC);
 *               u8 dtype (eg_htp_qnn_dtype code, < EG_HTP_QNN_DTYPE_COUNT); u8 rank (<= 8);
 *               u8 quant (0 NONE, 1 SCALE_OFFSET, 2 AXIS_SCALE_OFFSET); rank x u32 dim
 *               (>= 1, product <= 2^40; an IR value with a dim above UINT32_MAX never
 *               reaches an NPU graph: the partitioner keeps its nodes on the CPU);
 *               i64 key (-1 or >= 0; unique per graph);
 *               quant 1: f32 scale; i32 offset
 *               quant 2: i32 axis; u32 n_axis; n_axis x f32 scale; n_axis x i32 offset
 *               (every scale a positive normal float32)
 *               type STATIC: u64 offset; u64 nbytes (a range of the STATIC section as above)
 *               Tensor i gets id i (ops refer to tensors by id).
 *     Op     := str name; str type (QNN op name, "Conv2d"); u32 n_inputs (<= 64);
 *               n_inputs x i32 tensor id (-1: an omitted optional input); u32 n_outputs (<= 8);
 *               n_outputs x i32 tensor id; u32 n_params (<= 16); n_params x Param
 *     Param  := str name; u8 kind (0 scalar, 1 tensor); u8 dtype (eg_htp_qnn_dtype code)
 *               scalar: u32 bits (UINT_32 / INT_32 the value, FLOAT_32 its IEEE bits,
 *                       BOOL_8 0 or 1)
 *               tensor: u8 rank (1 or 2); rank x u32 dim; u32 n_values (== product of dims,
 *                       <= 16); n_values x u32
 *     Boundary := i32 value (IR value id); i32 tensor (id in this graph); u8 nhwc (0/1)
 *               inputs: APP_WRITE tensors of values defined outside the partition (a static
 *               among them, the backward's seed, is fed from its stored bytes: ir/seed.h), each
 *               APP_WRITE tensor exactly once; outputs: APP_READ tensors of values defined in
 *               it, every APP_READ tensor (each written by an op) at least once, and every value
 *               the rest of the program needs among them. Dtype and dims follow the value's
 *               axes: nhwc == (rank 4 and axes NHWC), dims == eg_htp_dims(value), dtype ==
 *               eg_htp_value_dtype(value): the value's dtype,
 *               except INT_32 for an int64 value with npu_int32 (the runtime narrows it to
 *               int32 when staging it in and widens it back to int64 when reading it out).
 *     ExecPlan := u32 n (<= n_ops); n x { u32 op (strictly ascending, < n_ops); u8 how (0 RUN,
 *               1 FOLD, 2 SKIP, 3 ALIAS); u8 filter_read (0 as is, 1 OI, 2 OIHW); i32 filter_src
 *               (tensor id or -1); i32 y_dst (tensor id or -1) } — how the executor runs the
 *               listed ops (exec_plan.h: the layout pass's decisions, made at compile time; an
 *               op not listed runs as it is, and a listed entry is not that). The plan obeys
 *               every rule of eg_htp_exec_plan_check against the graph: only a Transpose is
 *               folded or skipped, a folded one reads a constant, every reader of a skipped
 *               one's output reads its input as a filter (or its Conv2d writes its output),
 *               kinds, perms and tensor types as exec_plan.h says. */
#include <string.h>

#include "backends/htp/compile/compiler.h"
#include "backends/htp/exec_plan.h"
#include "backends/htp/values.h"

/* File codes are the enums' values: pin them so a reordered enum cannot change the format. */
_Static_assert(EG_HTP_QNN_TENSOR_APP_WRITE == 0 && EG_HTP_QNN_TENSOR_STATIC == 3, "tensor type codes");
_Static_assert(EG_HTP_QNN_DTYPE_FLOAT_32 == 0 && EG_HTP_QNN_DTYPE_BOOL_8 == 6 &&
               EG_HTP_QNN_DTYPE_SFIXED_POINT_32 == 11 && EG_HTP_QNN_DTYPE_COUNT == 12, "QNN dtype codes");
_Static_assert(EG_HTP_QNN_QUANT_NONE == 0 && EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET == 2, "quant codes");
_Static_assert(EG_HTP_QNN_PARAM_SCALAR == 0 && EG_HTP_QNN_PARAM_TENSOR == 1, "param kind codes");

static void put_tensor(eg_egp_sink *b, const eg_htp_qnn_tensor *t) {
  eg_sink_str(b, t->name);
  eg_sink_u8(b, (uint32_t)t->type);
  eg_sink_u8(b, (uint32_t)t->dtype);
  eg_sink_u8(b, (uint32_t)t->rank);
  eg_sink_u8(b, (uint32_t)t->quant.encoding);
  for (int d = 0; d < t->rank; d++) eg_sink_u32(b, t->dims[d]);
  eg_sink_i64(b, t->key);
  if (t->quant.encoding == EG_HTP_QNN_QUANT_SCALE_OFFSET) {
    eg_sink_f32(b, t->quant.scale);
    eg_sink_i32(b, t->quant.offset);
  } else if (t->quant.encoding == EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET) {
    eg_sink_i32(b, t->quant.axis);
    eg_sink_u32(b, (uint32_t)t->quant.n_axis);
    for (int32_t i = 0; i < t->quant.n_axis; i++) eg_sink_f32(b, t->quant.scales[i]);
    for (int32_t i = 0; i < t->quant.n_axis; i++) eg_sink_i32(b, t->quant.offsets[i]);
  }
  if (t->type == EG_HTP_QNN_TENSOR_STATIC) {
    eg_sink_static(b, t->data, t->nbytes);
  }
}

static void put_param(eg_egp_sink *b, const eg_htp_qnn_param *p) {
  eg_sink_str(b, p->name);
  eg_sink_u8(b, (uint32_t)p->kind);
  eg_sink_u8(b, (uint32_t)p->dtype);
  if (p->kind == EG_HTP_QNN_PARAM_SCALAR) {
    uint32_t bits = p->scalar.u32;
    if (p->dtype == EG_HTP_QNN_DTYPE_BOOL_8) bits = p->scalar.b ? 1 : 0;
    else if (p->dtype == EG_HTP_QNN_DTYPE_FLOAT_32) memcpy(&bits, &p->scalar.f32, 4);
    eg_sink_u32(b, bits);
    return;
  }
  eg_sink_u8(b, (uint32_t)p->rank);
  for (int i = 0; i < p->rank; i++) eg_sink_u32(b, p->dims[i]);
  eg_sink_u32(b, (uint32_t)p->n_values);
  for (int i = 0; i < p->n_values; i++) eg_sink_u32(b, p->values.u32[i]);
}

static void put_boundaries(eg_egp_sink *b, const eg_boundary *list, int32_t n) {
  eg_sink_u32(b, (uint32_t)n);
  for (int32_t i = 0; i < n; i++) {
    eg_sink_i32(b, list[i].value);
    eg_sink_i32(b, list[i].tensor);
    eg_sink_u8(b, list[i].nhwc ? 1 : 0);
  }
}

/* The executor plan (exec_plan.h): its entries other than plain RUN, by op index. */
static void put_exec_plan(eg_egp_sink *b, const eg_htp_exec_plan *xp) {
  uint32_t n = 0;
  for (int32_t k = 0; k < xp->n_ops; k++) n += eg_htp_exec_op_planned(&xp->ops[k]);
  eg_sink_u32(b, n);
  for (int32_t k = 0; k < xp->n_ops; k++) {
    const eg_htp_exec_op *e = &xp->ops[k];
    if (!eg_htp_exec_op_planned(e)) continue;
    eg_sink_u32(b, (uint32_t)k);
    eg_sink_u8(b, e->how);
    eg_sink_u8(b, e->filter_read);
    eg_sink_i32(b, e->filter_src);
    eg_sink_i32(b, e->y_dst);
  }
}

void eg_htp_egp_write(const eg_lowered *lp, eg_egp_sink *b) {
  const eg_htp_qnn_graph *qg = lp->graph;
  eg_sink_str(b, eg_htp_qnn_graph_name(qg));
  eg_sink_u32(b, (uint32_t)eg_htp_qnn_graph_num_tensors(qg));
  for (int32_t i = 0; i < eg_htp_qnn_graph_num_tensors(qg); i++)
    put_tensor(b, eg_htp_qnn_graph_tensor(qg, i));
  eg_sink_u32(b, (uint32_t)eg_htp_qnn_graph_num_ops(qg));
  for (int32_t i = 0; i < eg_htp_qnn_graph_num_ops(qg); i++) {
    const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(qg, i);
    eg_sink_str(b, op->name);
    eg_sink_str(b, eg_htp_qnn_op_name(op->type));
    eg_sink_u32(b, (uint32_t)op->n_inputs);
    for (int32_t j = 0; j < op->n_inputs; j++) eg_sink_i32(b, op->inputs[j]);
    eg_sink_u32(b, (uint32_t)op->n_outputs);
    for (int32_t j = 0; j < op->n_outputs; j++) eg_sink_i32(b, op->outputs[j]);
    eg_sink_u32(b, (uint32_t)op->n_params);
    for (int32_t j = 0; j < op->n_params; j++) put_param(b, &op->params[j]);
  }
  put_boundaries(b, lp->inputs, lp->n_inputs);
  put_boundaries(b, lp->outputs, lp->n_outputs);
  put_exec_plan(b, eg_htp_qnn_graph_plan(qg));
}
