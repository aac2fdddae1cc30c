/* program_info.c — eg_model_is_compiled, eg_model_program_info and eg_model_npu_* of the public
 * API: what a model loaded from a compiled program (.egp, program/egp_format.h) holds. */
#include <stdio.h>
#include <string.h>

#include "program/egp_format.h"
#include "runtime/model.h"
#include "util/error.h"

int eg_model_is_compiled(const eg_model *model) { return model && model->compiled ? 1 : 0; }

static eg_status compiled(const eg_model *model, const char *fn, const eg_program **p) {
  if (!model || !model->compiled)
    return eg_error(EG_ERR_ARGUMENT, "%s: the model is %s: only a model loaded from a compiled "
                    "program (.egp) has one", fn, model ? "a graph" : "NULL");
  *p = &model->compiled->program;
  return EG_OK;
}

eg_status eg_model_program_info(const eg_model *model, eg_program_info *out) {
  const eg_program *p = NULL;
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_program_info: out is NULL");
  EG_TRY(compiled(model, "eg_model_program_info", &p));
  memset(out, 0, sizeof *out);
  out->soc = p->target->soc;
  out->precision = eg_precision_name(p->precision == EG_PRECISION_FP16 ? EG_PRECISION_FP16
                                                                       : EG_PRECISION_FP32);
  out->num_partitions = p->parts.n_partitions;
  for (int32_t i = 0; i < p->parts.n_nodes; i++) {
    if (p->parts.nodes[i].npu) out->num_npu_nodes++;
    else out->num_cpu_nodes++;
  }
  out->num_steps = p->n_steps;
  out->static_bytes = model->compiled->static_bytes;
  out->file_bytes = model->compiled->file_bytes;
  return EG_OK;
}

static eg_status partition_at(const eg_model *model, const char *fn, int k,
                              const eg_program **p) {
  EG_TRY(compiled(model, fn, p));
  if (k < 0 || k >= (*p)->parts.n_partitions)
    return eg_error(EG_ERR_ARGUMENT, "%s: partition %d out of range [0, %d)", fn, k,
                    (*p)->parts.n_partitions);
  return EG_OK;
}

eg_status eg_model_npu_partition(const eg_model *model, int partition,
                                 eg_npu_partition_info *out) {
  const eg_program *p = NULL;
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_partition: out is NULL");
  EG_TRY(partition_at(model, "eg_model_npu_partition", partition, &p));
  const eg_partition *part = &p->parts.partitions[partition];
  const eg_htp_partition *hp = &p->lowered[partition];
  *out = (eg_npu_partition_info){
      .name = eg_qnn_graph_name(hp->graph), .num_nodes = part->n_nodes, .nodes = part->nodes,
      .first_node = p->graph->nodes[part->nodes[0]].name,
      .last_node = p->graph->nodes[part->nodes[part->n_nodes - 1]].name,
      .num_tensors = eg_qnn_graph_num_tensors(hp->graph),
      .num_ops = eg_qnn_graph_num_ops(hp->graph), .num_inputs = hp->n_inputs,
      .num_outputs = hp->n_outputs};
  return EG_OK;
}

eg_status eg_model_npu_tensor(const eg_model *model, int partition, int tensor,
                              eg_npu_tensor_info *out) {
  static const char *const types[] = {"APP_WRITE", "APP_READ", "NATIVE", "STATIC"};
  const eg_program *p = NULL;
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_tensor: out is NULL");
  EG_TRY(partition_at(model, "eg_model_npu_tensor", partition, &p));
  const eg_qnn_tensor *t = eg_qnn_graph_tensor(p->lowered[partition].graph, tensor);
  if (!t)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_tensor: tensor %d out of range [0, %d)",
                    tensor, eg_qnn_graph_num_tensors(p->lowered[partition].graph));
  memset(out, 0, sizeof *out);
  out->name = t->name;
  out->type = types[t->type];
  out->dtype = eg_qnn_dtype_name(t->dtype);
  out->rank = t->rank;
  for (int d = 0; d < t->rank; d++) out->dims[d] = t->dims[d];
  out->nbytes = (size_t)eg_qnn_tensor_numel(t) * eg_qnn_dtype_size(t->dtype);
  out->quant_axis = -1;
  if (t->dtype == EG_QNN_DTYPE_FLOAT_32)
    out->precision = eg_precision_name(p->precision == EG_PRECISION_FP16 ? EG_PRECISION_FP16
                                                                         : EG_PRECISION_FP32);
  if (t->quant.encoding == EG_QNN_QUANT_SCALE_OFFSET) {
    out->encoding = "SCALE_OFFSET";
    out->num_scales = 1;
    out->scales = &t->quant.scale;
    out->offsets = &t->quant.offset;
  } else if (t->quant.encoding == EG_QNN_QUANT_AXIS_SCALE_OFFSET) {
    out->encoding = "AXIS_SCALE_OFFSET";
    out->quant_axis = t->quant.axis;
    out->num_scales = t->quant.n_axis;
    out->scales = t->quant.scales;
    out->offsets = t->quant.offsets;
  }
  return EG_OK;
}

static eg_status op_at(const eg_model *model, const char *fn, int k, int op,
                       const eg_qnn_op_node **out) {
  const eg_program *p = NULL;
  EG_TRY(partition_at(model, fn, k, &p));
  *out = eg_qnn_graph_op(p->lowered[k].graph, op);
  if (!*out)
    return eg_error(EG_ERR_ARGUMENT, "%s: op %d out of range [0, %d)", fn, op,
                    eg_qnn_graph_num_ops(p->lowered[k].graph));
  return EG_OK;
}

eg_status eg_model_npu_op(const eg_model *model, int partition, int op, eg_npu_op_info *out) {
  const eg_qnn_op_node *o = NULL;
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_op: out is NULL");
  EG_TRY(op_at(model, "eg_model_npu_op", partition, op, &o));
  *out = (eg_npu_op_info){.name = o->name, .type = eg_qnn_op_name(o->type),
                          .num_inputs = o->n_inputs, .inputs = o->inputs,
                          .num_outputs = o->n_outputs, .outputs = o->outputs,
                          .num_params = o->n_params};
  return EG_OK;
}

/* One scalar of a param as JSON text. */
/* A scalar param as JSON, reading only the union member its dtype names (a bool member read
 * from a UINT_32 value such as group 4 is not a valid bool). */
static size_t param_scalar_json(char *buf, size_t size, const eg_qnn_param *pr) {
  switch (pr->dtype) {
  case EG_QNN_DTYPE_FLOAT_32: {
    const float f = pr->scalar.f32;
    if (f != f) return (size_t)snprintf(buf, size, "\"nan\"");
    if (f > 3.4e38f || f < -3.4e38f)
      return (size_t)snprintf(buf, size, f > 0 ? "\"inf\"" : "\"-inf\"");
    return (size_t)snprintf(buf, size, "%.9g", (double)f);
  }
  case EG_QNN_DTYPE_BOOL_8:
    return (size_t)snprintf(buf, size, "%s", pr->scalar.b ? "true" : "false");
  case EG_QNN_DTYPE_INT_32: return (size_t)snprintf(buf, size, "%d", (int)pr->scalar.i32);
  default: return (size_t)snprintf(buf, size, "%u", pr->scalar.u32);
  }
}

eg_status eg_model_npu_op_param(const eg_model *model, int partition, int op, int index,
                                const char **name, char *value, size_t size) {
  const eg_qnn_op_node *o = NULL;
  if (!name || !value || size == 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_op_param: NULL name or empty value buffer");
  EG_TRY(op_at(model, "eg_model_npu_op_param", partition, op, &o));
  if (index < 0 || index >= o->n_params)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_op_param: param %d out of range [0, %d)",
                    index, o->n_params);
  const eg_qnn_param *pr = &o->params[index];
  *name = pr->name;
  value[0] = 0;
  if (pr->kind == EG_QNN_PARAM_SCALAR) {
    param_scalar_json(value, size, pr);
    return EG_OK;
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
    if (pr->dtype == EG_QNN_DTYPE_INT_32) APPEND("%d", (int)pr->values.i32[i]);
    else APPEND("%u", pr->values.u32[i]);
    if (pr->rank == 2 && i % inner == inner - 1) APPEND("]");
  }
  APPEND("]");
#undef APPEND
  return EG_OK;
}
