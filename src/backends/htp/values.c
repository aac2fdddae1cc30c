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

eg_htp_qnn_dtype eg_htp_dtype(eg_dtype dtype) {
  switch (dtype) {
  case EG_DTYPE_FLOAT32: return EG_HTP_QNN_DTYPE_FLOAT_32;
  case EG_DTYPE_INT32: return EG_HTP_QNN_DTYPE_INT_32;
  case EG_DTYPE_BOOL: return EG_HTP_QNN_DTYPE_BOOL_8;
  case EG_DTYPE_INT8: return EG_HTP_QNN_DTYPE_INT_8;
  case EG_DTYPE_UINT8: return EG_HTP_QNN_DTYPE_UINT_8;
  default: return EG_HTP_QNN_DTYPE_COUNT;
  }
}

eg_htp_qnn_dtype eg_htp_value_dtype(const eg_value *v) {
  if (v->dtype == EG_DTYPE_INT64 && v->npu_int32) return EG_HTP_QNN_DTYPE_INT_32;
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

eg_htp_qnn_dtype eg_htp_quant_dtype(eg_dtype storage) {
  switch (storage) {
  case EG_DTYPE_UINT8: return EG_HTP_QNN_DTYPE_UFIXED_POINT_8;
  case EG_DTYPE_INT8: return EG_HTP_QNN_DTYPE_SFIXED_POINT_8;
  case EG_DTYPE_INT32: return EG_HTP_QNN_DTYPE_SFIXED_POINT_32;
  default: return EG_HTP_QNN_DTYPE_COUNT;
  }
}

eg_htp_qnn_dtype eg_htp_held_dtype(const eg_graph *g, int32_t value) {
  const eg_value *v = &g->values[value];
  return eg_htp_held_quantized(g, value) ? eg_htp_quant_dtype(v->quant->dtype)
                                         : eg_htp_value_dtype(v);
}

void eg_htp_boundary_flags(const eg_graph *g, const eg_htp_qnn_graph *qg, eg_boundary *b) {
  const eg_value *v = &g->values[b->value];
  const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(qg, b->tensor);
  b->nhwc = eg_htp_is_nhwc(v);
  b->narrow = v->dtype == EG_DTYPE_INT64 && v->npu_int32;
  b->quant = t && eg_htp_qnn_dtype_is_fixed_point(t->dtype);
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

