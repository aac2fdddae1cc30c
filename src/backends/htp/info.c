/* info.c — the htp backend's description of its lowered partitions to the public API
 * (edgegrad.h eg_model_npu_*: the QNN graph's tensors, ops and params). */
#include <stdio.h>
#include <string.h>

#include "backends/htp/runtime.h"
#include "backends/htp/qnn_graph.h"

void eg_htp_describe(const void *graph, eg_npu_partition_info *out) {
  out->name = eg_htp_qnn_graph_name(graph);
  out->num_tensors = eg_htp_qnn_graph_num_tensors(graph);
  out->num_ops = eg_htp_qnn_graph_num_ops(graph);
}

void eg_htp_describe_tensor(const void *graph, int32_t tensor, eg_precision precision,
                            eg_npu_tensor_info *out) {
  static const char *const types[] = {"APP_WRITE", "APP_READ", "NATIVE", "STATIC"};
  const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(graph, tensor);
  out->name = t->name;
  out->type = types[t->type];
  out->dtype = eg_htp_qnn_dtype_name(t->dtype);
  out->rank = t->rank;
  for (int d = 0; d < t->rank; d++) out->dims[d] = t->dims[d];
  out->nbytes = (size_t)eg_htp_qnn_tensor_numel(t) * eg_htp_qnn_dtype_size(t->dtype);
  out->quant_axis = -1;
  if (t->dtype == EG_HTP_QNN_DTYPE_FLOAT_32)
    out->precision = eg_precision_name(precision == EG_PRECISION_FP16 ? EG_PRECISION_FP16
                                                                       : EG_PRECISION_FP32);
  if (t->quant.encoding == EG_HTP_QNN_QUANT_SCALE_OFFSET) {
    out->encoding = "SCALE_OFFSET";
    out->num_scales = 1;
    out->scales = &t->quant.scale;
    out->offsets = &t->quant.offset;
  } else if (t->quant.encoding == EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET) {
    out->encoding = "AXIS_SCALE_OFFSET";
    out->quant_axis = t->quant.axis;
    out->num_scales = t->quant.n_axis;
    out->scales = t->quant.scales;
    out->offsets = t->quant.offsets;
  }
}

void eg_htp_describe_op(const void *graph, int32_t op, eg_npu_op_info *out) {
  const eg_htp_qnn_op_node *o = eg_htp_qnn_graph_op(graph, op);
  *out = (eg_npu_op_info){.name = o->name, .type = eg_htp_qnn_op_name(o->type),
                          .num_inputs = o->n_inputs, .inputs = o->inputs,
                          .num_outputs = o->n_outputs, .outputs = o->outputs,
                          .num_params = o->n_params};
}

/* A scalar param as JSON, reading only the union member its dtype names (a bool member read
 * from a UINT_32 value such as group 4 is not a valid bool). */
static size_t param_scalar_json(char *buf, size_t size, const eg_htp_qnn_param *pr) {
  switch (pr->dtype) {
  case EG_HTP_QNN_DTYPE_FLOAT_32: {
    const float f = pr->scalar.f32;
    if (f != f) return (size_t)snprintf(buf, size, "\"nan\"");
    if (f > 3.4e38f || f < -3.4e38f)
      return (size_t)snprintf(buf, size, f > 0 ? "\"inf\"" : "\"-inf\"");
    return (size_t)snprintf(buf, size, "%.9g", (double)f);
  }
  case EG_HTP_QNN_DTYPE_BOOL_8:
    return (size_t)snprintf(buf, size, "%s", pr->scalar.b ? "true" : "false");
  case EG_HTP_QNN_DTYPE_INT_32: return (size_t)snprintf(buf, size, "%d", (int)pr->scalar.i32);
  default: return (size_t)snprintf(buf, size, "%u", pr->scalar.u32);
  }
}

void eg_htp_describe_param(const void *graph, int32_t op, int32_t index, const char **name,
                           char *value, size_t size) {
  const eg_htp_qnn_param *pr = &eg_htp_qnn_graph_op(graph, op)->params[index];
  *name = pr->name;
  value[0] = 0;
  if (pr->kind == EG_HTP_QNN_PARAM_SCALAR) {
    param_scalar_json(value, size, pr);
    return;
  }
  int inner = pr->rank == 2 ? (int)pr->dims[1] : pr->n_values;
  size_t used = 0;
#define APPEND(...)                                                               \
  do {                                                                            \
    if (used < size) used += (size_t)snprintf(value + used, size - used, __VA_ARGS__); \
  } while (0)
  APPEND("[");
  for (int i = 0; i < pr->n_values; i++) {
    if (pr->rank == 2 && i % inner == 0) APPEND("%s[", i ? ", " : "");
    else if (i) APPEND(", ");
    if (pr->dtype == EG_HTP_QNN_DTYPE_INT_32) APPEND("%d", (int)pr->values.i32[i]);
    else APPEND("%u", pr->values.u32[i]);
    if (pr->rank == 2 && i % inner == inner - 1) APPEND("]");
  }
  APPEND("]");
#undef APPEND
}
