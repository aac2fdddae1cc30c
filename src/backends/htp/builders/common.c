/* common.c — checks several builder files share (see builders.h).
 *
 * int64: the NPU has no int64. Builders whose QNN ops only move 4-byte elements (Reshape,
 * Transpose, Concat, aliases: the executor runs them on INT_32 as on FLOAT_32) take int64
 * values through eg_htp_move_tensor_ok; pass i64_to_i32 then marks every int64 value of an NPU
 * partition npu_int32 and the lowering holds it as INT_32. Every other builder declines int64
 * (eg_htp_float_tensor_ok): its kernels compute in float32. */
#include <stdio.h>
#include <string.h>

#include "backends/htp/builders/builders.h"

bool eg_htp_float_tensor_ok(const eg_graph *g, int32_t id, char *reason, size_t size) {
  const eg_value *v = &g->values[id];
  char s[160];
  if (v->dtype == EG_DTYPE_INT64) {
    snprintf(reason, size, "int64 tensor %s: the NPU has no int64, and this op has no int32 "
             "form the NPU lowering runs (only element moves: views, permutes, cat, copies)",
             eg_value_label(g, id));
    return false;
  }
  if (v->dtype != EG_DTYPE_FLOAT32) {
    snprintf(reason, size, "%s tensor %s: the NPU lowering handles float32 only",
             eg_dtype_name(v->dtype), eg_value_label(g, id));
    return false;
  }
  if (eg_value_numel(v) == 0) {
    snprintf(reason, size, "empty tensor %s %s: QNN tensors need every dimension >= 1",
             eg_value_label(g, id), eg_fmt_ints(s, sizeof s, v->shape, v->rank));
    return false;
  }
  return true;
}

bool eg_htp_self_and_result_ok(const eg_graph *g, const eg_node *n, char *reason, size_t size) {
  const int32_t x = eg_htp_arg(n, 0, "self");
  if (x < 0 || g->values[x].kind != EG_VALUE_TENSOR) {
    snprintf(reason, size, "argument self is not a tensor");
    return false;
  }
  return eg_htp_float_tensor_ok(g, x, reason, size) &&
         eg_htp_float_tensor_ok(g, n->output, reason, size);
}

/* An int64 static whose elements all fit int32 (the lowering stores it narrowed). */
static bool static_fits_int32(const eg_graph *g, int32_t id, char *reason, size_t size) {
  const eg_value *v = &g->values[id];
  if (v->role != EG_ROLE_STATIC) return true;
  const eg_static *st = &g->statics[v->def];
  for (int64_t i = 0; i < eg_value_numel(v); i++) {
    int64_t x;
    memcpy(&x, (const unsigned char *)st->data + (size_t)i * sizeof x, sizeof x);
    if (x < INT32_MIN || x > INT32_MAX) {
      snprintf(reason, size, "int64 static %s: element %lld = %lld is outside int32: the NPU "
               "holds int64 values as int32", st->name, (long long)i, (long long)x);
      return false;
    }
  }
  return true;
}

bool eg_htp_move_tensor_ok(const eg_graph *g, int32_t id, char *reason, size_t size) {
  const eg_value *v = &g->values[id];
  if (v->dtype != EG_DTYPE_INT64) return eg_htp_float_tensor_ok(g, id, reason, size);
  char s[160];
  if (eg_value_numel(v) == 0) {
    snprintf(reason, size, "empty tensor %s %s: QNN tensors need every dimension >= 1",
             eg_value_label(g, id), eg_fmt_ints(s, sizeof s, v->shape, v->rank));
    return false;
  }
  return static_fits_int32(g, id, reason, size);
}

bool eg_htp_self_and_result_move_ok(const eg_graph *g, const eg_node *n, char *reason,
                                    size_t size) {
  const int32_t x = eg_htp_arg(n, 0, "self");
  if (x < 0 || g->values[x].kind != EG_VALUE_TENSOR) {
    snprintf(reason, size, "argument self is not a tensor");
    return false;
  }
  if (!eg_htp_move_tensor_ok(g, x, reason, size) ||
      !eg_htp_move_tensor_ok(g, n->output, reason, size))
    return false;
  if (g->values[x].dtype != g->values[n->output].dtype) {
    snprintf(reason, size, "dtype conversion %s -> %s: the NPU lowering moves elements of one "
             "dtype", eg_dtype_name(g->values[x].dtype),
             eg_dtype_name(g->values[n->output].dtype));
    return false;
  }
  return true;
}

bool eg_htp_u32_params_ok(const char *what, const int64_t *v, int n, char *reason, size_t size) {
  for (int i = 0; i < n; i++)
    if (v[i] < 0 || v[i] > (int64_t)UINT32_MAX) {
      snprintf(reason, size, "%s %lld exceeds QNN's 32-bit params (at most %u)", what,
               (long long)v[i], UINT32_MAX);
      return false;
    }
  return true;
}

eg_status eg_htp_softmax_bwd_begin(eg_htp_lower *L, const eg_graph *g, const eg_node *n,
                                   eg_htp_softmax_bwd *s) {
  const int32_t gy_id = eg_htp_arg(n, 0, "grad_output"), y_id = eg_htp_arg(n, 1, "output");
  const eg_value *gy = &g->values[gy_id];
  int64_t dim = 0;
  EG_TRY(eg_arg_int(n, 2, "dim", &dim));
  EG_TRY(eg_htp_want_axes(L, y_id, eg_htp_axes(gy), "output"));
  EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(gy), "result"));
  s->axis = (uint32_t)eg_htp_axis(gy, eg_wrap_dim(dim, gy->rank));
  s->rank = gy->rank;
  eg_htp_dims(gy, s->dims);
  for (int d = 0; d < gy->rank; d++) s->line_dims[d] = d == (int)s->axis ? 1 : s->dims[d];
  EG_TRY(eg_htp_input(L, gy_id, &s->gy));
  return eg_htp_input(L, y_id, &s->y);
}

eg_status eg_htp_softmax_bwd_line_sum(eg_htp_lower *L, const eg_htp_softmax_bwd *s, int32_t in,
                                      int32_t *out) {
  EG_TRY(eg_htp_temp(L, "sum", EG_QNN_DTYPE_FLOAT_32, s->rank, s->line_dims, out));
  const uint32_t ad[1] = {1};
  const eg_qnn_param p[2] = {eg_qnn_param_u32_tensor("axes", 1, ad, &s->axis),
                             eg_qnn_param_bool("keep_dims", true)};
  return eg_htp_op(L, EG_QNN_OP_REDUCE_SUM, &in, 1, out, 1, p, 2);
}
