/* values.c — value queries shared by the lowering and the runtime side (see values.h). */
#include "backends/htp/values.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

bool eg_htp_is_nhwc(const eg_value *v) {
  return v->kind == EG_VALUE_TENSOR && v->rank == 4 && v->axes == EG_AXES_NHWC;
}

eg_axis_order eg_htp_axes(const eg_value *v) {
  return eg_htp_is_nhwc(v) ? EG_AXES_NHWC : EG_AXES_TRACED;
}

int eg_htp_axis(const eg_value *v, int dim) {
  static const int nchw_to_nhwc[4] = {0, 3, 1, 2};
  return eg_htp_is_nhwc(v) && dim >= 0 && dim < 4 ? nchw_to_nhwc[dim] : dim;
}

int eg_htp_aten_dim(const eg_value *v, int axis) {
  static const int nhwc_to_nchw[4] = {0, 2, 3, 1};
  return eg_htp_is_nhwc(v) && axis >= 0 && axis < 4 ? nhwc_to_nchw[axis] : axis;
}

uint32_t eg_htp_qnn_dim(int64_t dim) {
  EG_ASSERT(dim >= 0 && dim <= (int64_t)UINT32_MAX); /* lower_nodes checked eg_htp_dims_fit */
  return (uint32_t)dim;
}

void eg_htp_dims(const eg_value *v, uint32_t *dims) {
  for (int d = 0; d < v->rank; d++) dims[eg_htp_axis(v, d)] = eg_htp_qnn_dim(v->shape[d]);
}

eg_qnn_dtype eg_htp_dtype(eg_dtype dtype) {
  switch (dtype) {
  case EG_DTYPE_FLOAT32: return EG_QNN_DTYPE_FLOAT_32;
  case EG_DTYPE_INT32: return EG_QNN_DTYPE_INT_32;
  case EG_DTYPE_BOOL: return EG_QNN_DTYPE_BOOL_8;
  case EG_DTYPE_INT8: return EG_QNN_DTYPE_INT_8;
  case EG_DTYPE_UINT8: return EG_QNN_DTYPE_UINT_8;
  default: return EG_QNN_DTYPE_COUNT;
  }
}

eg_qnn_dtype eg_htp_value_dtype(const eg_value *v) {
  if (v->dtype == EG_DTYPE_INT64 && v->npu_int32) return EG_QNN_DTYPE_INT_32;
  return eg_htp_dtype(v->dtype);
}

bool eg_htp_held_quantized(const eg_graph *g, int32_t value) {
  const eg_value *v = &g->values[value];
  if (v->kind != EG_VALUE_TENSOR || !v->quant || v->dtype != EG_DTYPE_FLOAT32) return false;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_quantize_per_tensor && n->op != EG_OP_quantize_per_channel) continue;
    const eg_arg *x = eg_node_arg(n, 0, "self");
    if (x && x->kind == EG_ARG_VALUE && x->value == value) return false;
  }
  return true;
}

eg_qnn_dtype eg_htp_quant_dtype(eg_dtype storage) {
  switch (storage) {
  case EG_DTYPE_UINT8: return EG_QNN_DTYPE_UFIXED_POINT_8;
  case EG_DTYPE_INT8: return EG_QNN_DTYPE_SFIXED_POINT_8;
  case EG_DTYPE_INT32: return EG_QNN_DTYPE_SFIXED_POINT_32;
  default: return EG_QNN_DTYPE_COUNT;
  }
}

eg_qnn_dtype eg_htp_held_dtype(const eg_graph *g, int32_t value) {
  const eg_value *v = &g->values[value];
  return eg_htp_held_quantized(g, value) ? eg_htp_quant_dtype(v->quant->dtype)
                                         : eg_htp_value_dtype(v);
}

/* The readers of two sets together. */
static int32_t merge_readers(int32_t a, int32_t b) {
  if (a == EG_HTP_READ_NONE) return b;
  if (b == EG_HTP_READ_NONE || a == b) return a;
  return EG_HTP_READ_OUTSIDE;
}

static void note_reader(const eg_arg *arg, int32_t where, int32_t *of) {
  if (arg->kind == EG_ARG_LIST) {
    for (int32_t e = 0; e < arg->list.n; e++) note_reader(&arg->list.items[e], where, of);
  } else if (arg->kind == EG_ARG_VALUE) {
    of[arg->value] = merge_readers(of[arg->value], where);
  }
}

eg_status eg_htp_readers_compute(const eg_graph *g, const eg_partitioning *parts,
                                 eg_htp_readers *out) {
  out->n_values = g->n_values;
  out->of = malloc(((size_t)g->n_values + 1) * sizeof(int32_t));
  if (!out->of) return eg_error(EG_ERR_NOMEM, "compile: out of memory");
  for (int32_t v = 0; v < g->n_values; v++) out->of[v] = EG_HTP_READ_NONE;
  for (int32_t o = 0; o < g->n_outputs; o++) out->of[g->outputs[o].value] = EG_HTP_READ_OUTSIDE;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    int32_t where = parts->nodes[i].npu ? parts->nodes[i].partition : EG_HTP_READ_OUTSIDE;
    for (int32_t a = 0; a < n->n_args; a++) note_reader(&n->args[a], where, out->of);
    for (int32_t a = 0; a < n->n_kwargs; a++) note_reader(&n->kwargs[a], where, out->of);
  }
  /* an element is read wherever its getitem's output is (last getitem first: a getitem's
   * output read only through a later getitem is complete by then) */
  for (int32_t i = g->n_nodes - 1; i >= 0; i--) {
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_getitem || n->output < 0) continue;
    const eg_value *t = &g->values[eg_node_arg(n, 0, NULL)->value];
    int32_t elem = t->elems[eg_node_arg(n, 1, NULL)->i];
    out->of[elem] = merge_readers(out->of[elem], out->of[n->output]);
  }
  return EG_OK;
}

void eg_htp_readers_free(eg_htp_readers *r) {
  free(r->of);
  r->of = NULL;
}

bool eg_htp_needed_outside(const eg_htp_readers *r, int32_t value, int32_t p) {
  int32_t w = r->of[value];
  return w == EG_HTP_READ_OUTSIDE || (w >= 0 && w != p);
}

/* Marks every value `arg` names (list items too) as read by a CPU node. */
static void note_cpu_reader(const eg_arg *arg, bool *cpu) {
  if (arg->kind == EG_ARG_LIST) {
    for (int32_t e = 0; e < arg->list.n; e++) note_cpu_reader(&arg->list.items[e], cpu);
  } else if (arg->kind == EG_ARG_VALUE) {
    cpu[arg->value] = true;
  }
}

eg_status eg_htp_nhwc_between_partitions(const eg_graph *g, const eg_partitioning *parts,
                                         bool **out) {
  *out = NULL;
  bool *cpu = calloc((size_t)g->n_values + 1, sizeof(bool));
  bool *held = calloc((size_t)g->n_values + 1, sizeof(bool));
  if (!cpu || !held) {
    free(cpu);
    free(held);
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  }
  for (int32_t o = 0; o < g->n_outputs; o++) cpu[g->outputs[o].value] = true;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (parts->nodes[i].npu) continue;
    for (int32_t a = 0; a < n->n_args; a++) note_cpu_reader(&n->args[a], cpu);
    for (int32_t a = 0; a < n->n_kwargs; a++) note_cpu_reader(&n->kwargs[a], cpu);
  }
  for (int32_t i = g->n_nodes - 1; i >= 0; i--) { /* as eg_htp_readers_compute: last first */
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_getitem || n->output < 0 || !cpu[n->output]) continue;
    const eg_value *t = &g->values[eg_node_arg(n, 0, NULL)->value];
    cpu[t->elems[eg_node_arg(n, 1, NULL)->i]] = true;
  }
  for (int32_t v = 0; v < g->n_values; v++) {
    const eg_value *x = &g->values[v];
    held[v] = x->role == EG_ROLE_NODE && parts->nodes[x->def].npu && !cpu[v] &&
              eg_htp_is_nhwc(x) && x->dtype == EG_DTYPE_FLOAT32 && !x->quant;
  }
  free(cpu);
  *out = held;
  return EG_OK;
}

void eg_htp_partition_free(eg_htp_partition *hp) {
  eg_qnn_graph_destroy(hp->graph);
  free(hp->inputs);
  free(hp->outputs);
  memset(hp, 0, sizeof *hp);
}

bool eg_htp_may_alias(eg_op op) {
  switch (op) {
  case EG_OP_getitem:
  case EG_OP_view:
  case EG_OP__unsafe_view:
  case EG_OP_reshape:
  case EG_OP__reshape_alias:
  case EG_OP_expand:
  case EG_OP_detach:
  case EG_OP_alias:
  case EG_OP_clone:
  case EG_OP_lift_fresh_copy:
  case EG_OP__to_copy:
  case EG_OP_t:
  case EG_OP_permute:
  case EG_OP_transpose_int:
  case EG_OP_sum_default:
  case EG_OP_sum_dim_IntList:
  case EG_OP_mean_default:
  case EG_OP_mean_dim: return true;
  default: return false;
  }
}

static bool export_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

void eg_htp_export_name(const char *name, int32_t tensor, char *out, size_t size) {
  if (size == 0) return;
  size_t n = strlen(name);
  bool keep = n > 0 && n <= 200 && name[0] != '.';
  for (size_t i = 0; keep && i < n; i++) keep = export_name_byte(name[i]);
  if (keep) {
    snprintf(out, size, "%s", name);
    return;
  }
  char safe[201];
  size_t m = n < 200 ? n : 200;
  for (size_t i = 0; i < m; i++) safe[i] = export_name_byte(name[i]) ? name[i] : '_';
  if (m > 0 && safe[0] == '.') safe[0] = '_';
  safe[m] = '\0';
  snprintf(out, size, "%s~%d", safe, (int)tensor);
}
