/* common.c — checks several builder files share (see builders.h).
 *
 * int64: the NPU has no int64. Builders whose QNN ops only move 4-byte elements (Reshape,
 * Transpose, Concat, aliases: the executor runs them on INT_32 as on FLOAT_32) take int64
 * values through eg_htp_move_tensor_ok; pass i64_to_i32 then marks every int64 value of an NPU
 * partition npu_int32 and the lowering holds it as INT_32. Every other builder declines int64
 * (eg_htp_float_tensor_ok): its kernels compute in float32. */
#include <stdio.h>
#include <string.h>

#include "backends/htp/compile/builders/builders.h"

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

/* The (log-)softmax backward's operands: grad_output and output tensors, float32, the
 * gradient of rank >= 1 (ReduceSum needs an axis). */
bool eg_htp_softmax_bwd_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                 char *reason, size_t size) {
  (void)t;
  const int32_t gy = eg_htp_arg(n, 0, "grad_output"), y = eg_htp_arg(n, 1, "output");
  if (gy < 0 || y < 0) {
    snprintf(reason, size, "grad_output or output is not a tensor");
    return false;
  }
  if (g->values[gy].rank == 0) {
    snprintf(reason, size, "rank-0 gradient: ReduceSum needs rank >= 1");
    return false;
  }
  return eg_htp_float_tensor_ok(g, gy, reason, size) &&
         eg_htp_float_tensor_ok(g, y, reason, size) &&
         eg_htp_float_tensor_ok(g, n->output, reason, size);
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
  EG_TRY(eg_htp_temp(L, "sum", EG_HTP_QNN_DTYPE_FLOAT_32, s->rank, s->line_dims, out));
  const uint32_t ad[1] = {1};
  const eg_htp_qnn_param p[2] = {eg_htp_qnn_param_u32_tensor("axes", 1, ad, &s->axis),
                             eg_htp_qnn_param_bool("keep_dims", true)};
  return eg_htp_op(L, EG_HTP_QNN_OP_REDUCE_SUM, &in, 1, out, 1, p, 2);
}

bool eg_htp_separable_rows_fit(const eg_value *y, char *reason, size_t size) {
  if (y->shape[3] <= (int64_t)UINT32_MAX / y->shape[1]) return true;
  snprintf(reason, size, "W * C = %lld * %lld exceeds QNN's 32-bit dims (at most %u): the "
           "rows' MatMul holds them as one dim", (long long)y->shape[3],
           (long long)y->shape[1], UINT32_MAX);
  return false;
}

/* The result tensor of a separable map: graph value `value` defined here, or (value -1) the
 * QNN tensor `tensor` the caller made. */
static eg_status map_result(eg_htp_lower *L, int32_t value, int32_t tensor, int32_t *out) {
  if (value >= 0) return eg_htp_define(L, value, out);
  *out = tensor;
  return EG_OK;
}

static eg_status separable_map(eg_htp_lower *L, int32_t in, const uint32_t from[4],
                               uint32_t h_to, uint32_t w_to, int32_t cols, int32_t rows,
                               int32_t out_value, int32_t out_tensor) {
  const uint32_t nb = from[0], h0 = from[1], c = from[3];
  int32_t cur = in, out;
  if (cols >= 0) {
    const int32_t mm[2] = {cols, in};
    if (rows >= 0) {
      const uint32_t d[4] = {nb, h0, w_to, c};
      EG_TRY(eg_htp_temp(L, "cols_out", EG_HTP_QNN_DTYPE_FLOAT_32, 4, d, &cur));
    } else {
      EG_TRY(map_result(L, out_value, out_tensor, &cur));
    }
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, mm, 2, &cur, 1, NULL, 0));
    if (rows < 0) return EG_OK;
  }
  const uint32_t flat_in[3] = {nb, h0, w_to * c}, flat_out[3] = {nb, h_to, w_to * c};
  int32_t mm[2] = {rows, -1}, prod;
  EG_TRY(eg_htp_temp(L, "rows_in", EG_HTP_QNN_DTYPE_FLOAT_32, 3, flat_in, &mm[1]));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &cur, 1, &mm[1], 1, NULL, 0));
  EG_TRY(eg_htp_temp(L, "rows_out", EG_HTP_QNN_DTYPE_FLOAT_32, 3, flat_out, &prod));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, mm, 2, &prod, 1, NULL, 0));
  EG_TRY(map_result(L, out_value, out_tensor, &out));
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &prod, 1, &out, 1, NULL, 0);
}

eg_status eg_htp_separable_map(eg_htp_lower *L, int32_t in, const uint32_t from[4],
                               uint32_t h_to, uint32_t w_to, int32_t cols, int32_t rows,
                               int32_t out_value) {
  return separable_map(L, in, from, h_to, w_to, cols, rows, out_value, -1);
}

eg_status eg_htp_separable_map_into(eg_htp_lower *L, int32_t in, const uint32_t from[4],
                                    uint32_t h_to, uint32_t w_to, int32_t cols, int32_t rows,
                                    int32_t out) {
  return separable_map(L, in, from, h_to, w_to, cols, rows, -1, out);
}
