/* program_info.c — eg_model_is_compiled, eg_model_program_info, eg_model_npu_* and
 * eg_model_export_onnx of the public API: what a model loaded from a compiled program (.egp,
 * program/egp_format.h) holds. A partition is described, and exported, by the backend that
 * owns it (backends/lowered.h eg_backend_rt). */
#include <stdio.h>
#include <string.h>

#include "api/struct_size.h"
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

eg_status(eg_model_program_info)(const eg_model *model, eg_program_info *out, size_t out_size) {
  const eg_program *p = NULL;
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_program_info: out is NULL");
  EG_TRY(compiled(model, "eg_model_program_info", &p));
  eg_program_info info = {0};
  info.soc = p->target->soc;
  info.precision = eg_precision_name(p->precision == EG_PRECISION_FP16 ? EG_PRECISION_FP16
                                                                       : EG_PRECISION_FP32);
  info.num_partitions = p->parts.n_partitions;
  for (int32_t i = 0; i < p->parts.n_nodes; i++) {
    if (p->parts.nodes[i].npu) info.num_npu_nodes++;
    else info.num_cpu_nodes++;
  }
  info.num_steps = p->n_steps;
  info.static_bytes = model->compiled->static_bytes;
  info.file_bytes = model->compiled->file_bytes;
  return EG_STRUCT_WRITE(eg_program_info, out, out_size, &info, "eg_model_program_info");
}

static eg_status partition_at(const eg_model *model, const char *fn, int k,
                              const eg_program **p) {
  EG_TRY(compiled(model, fn, p));
  if (k < 0 || k >= (*p)->parts.n_partitions)
    return eg_error(EG_ERR_ARGUMENT, "%s: partition %d out of range [0, %d)", fn, k,
                    (*p)->parts.n_partitions);
  return EG_OK;
}

eg_status(eg_model_npu_partition)(const eg_model *model, int partition,
                                   eg_npu_partition_info *out, size_t out_size) {
  const eg_program *p = NULL;
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_partition: out is NULL");
  EG_TRY(partition_at(model, "eg_model_npu_partition", partition, &p));
  const eg_partition *part = &p->parts.partitions[partition];
  const eg_lowered *lp = &p->lowered[partition];
  eg_npu_partition_info info = {0};
  lp->backend->describe(lp->graph, &info);
  info.num_nodes = part->n_nodes;
  info.nodes = part->nodes;
  info.first_node = p->graph->nodes[part->nodes[0]].name;
  info.last_node = p->graph->nodes[part->nodes[part->n_nodes - 1]].name;
  info.num_inputs = lp->n_inputs;
  info.num_outputs = lp->n_outputs;
  return EG_STRUCT_WRITE(eg_npu_partition_info, out, out_size, &info, "eg_model_npu_partition");
}

eg_status(eg_model_npu_tensor)(const eg_model *model, int partition, int tensor,
                                eg_npu_tensor_info *out, size_t out_size) {
  const eg_program *p = NULL;
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_tensor: out is NULL");
  EG_TRY(partition_at(model, "eg_model_npu_tensor", partition, &p));
  const eg_lowered *lp = &p->lowered[partition];
  eg_npu_partition_info info = {0};
  lp->backend->describe(lp->graph, &info);
  if (tensor < 0 || tensor >= info.num_tensors)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_tensor: tensor %d out of range [0, %d)",
                    tensor, info.num_tensors);
  eg_npu_tensor_info t = {0};
  lp->backend->describe_tensor(lp->graph, tensor, p->precision, &t);
  return EG_STRUCT_WRITE(eg_npu_tensor_info, out, out_size, &t, "eg_model_npu_tensor");
}

static eg_status op_at(const eg_model *model, const char *fn, int k, int op,
                       eg_npu_op_info *out, const eg_lowered **lp) {
  const eg_program *p = NULL;
  EG_TRY(partition_at(model, fn, k, &p));
  *lp = &p->lowered[k];
  eg_npu_partition_info info = {0};
  (*lp)->backend->describe((*lp)->graph, &info);
  if (op < 0 || op >= info.num_ops)
    return eg_error(EG_ERR_ARGUMENT, "%s: op %d out of range [0, %d)", fn, op, info.num_ops);
  *out = (eg_npu_op_info){0};
  (*lp)->backend->describe_op((*lp)->graph, op, out);
  return EG_OK;
}

eg_status(eg_model_npu_op)(const eg_model *model, int partition, int op, eg_npu_op_info *out,
                           size_t out_size) {
  const eg_lowered *lp = NULL;
  eg_npu_op_info info;
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_op: out is NULL");
  EG_TRY(op_at(model, "eg_model_npu_op", partition, op, &info, &lp));
  return EG_STRUCT_WRITE(eg_npu_op_info, out, out_size, &info, "eg_model_npu_op");
}

eg_status eg_model_npu_op_param(const eg_model *model, int partition, int op, int index,
                                const char **name, char *value, size_t size) {
  eg_npu_op_info o;
  const eg_lowered *lp = NULL;
  if (!name || !value || size == 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_op_param: NULL name or empty value buffer");
  EG_TRY(op_at(model, "eg_model_npu_op_param", partition, op, &o, &lp));
  if (index < 0 || index >= o.num_params)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_npu_op_param: param %d out of range [0, %d)",
                    index, o.num_params);
  value[0] = 0;
  lp->backend->describe_param(lp->graph, op, index, name, value, size);
  return EG_OK;
}

eg_status eg_model_export_onnx(const eg_model *model, int partition, const char *path) {
  if (!model || !path)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_export_onnx: %s is NULL", model ? "path" : "model");
  if (!model->compiled)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_export_onnx: the model is a graph: only a model "
                    "loaded from a compiled program (.egp) has NPU partitions");
  const eg_program *p = &model->compiled->program;
  if (partition < 0 || partition >= p->parts.n_partitions)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_export_onnx: partition %d out of range [0, %d)",
                    partition, p->parts.n_partitions);
  const eg_lowered *lp = &p->lowered[partition];
  if (!lp->backend->export_onnx)
    return eg_error(EG_ERR_UNSUPPORTED, "eg_model_export_onnx: partition %d: its backend %s "
                    "exports no ONNX: only a backend with an ONNX export has one", partition,
                    lp->backend->name);
  return lp->backend->export_onnx(p->graph, p->target, lp, path);
}
