/* reduce.c — NPU builders for reductions and log-softmax.
 *
 *   aten.sum.dim_IntList(x, dim, keepdim) / aten.sum.default(x)
 *                                     -> ReduceSum(axes, keep_dims) [+ Transpose]
 *   aten.mean.dim(x, dim, keepdim) / aten.mean.default(x)
 *                                     -> ReduceMean(axes, keep_dims) [+ Transpose]
 *       axes = eg_htp_axis of each reduced dim; dim None or [] reduces every dim; a rank-0 x
 *       is its own sum and mean (no op).
 *   aten._log_softmax(x, dim, half_to_float=False)
 *                                     -> LogSoftmax(axis, beta 1.0), only when dim is the last
 *                                        QNN axis: the class dim of [N, C] (the last dim of
 *                                        ranks other than 4), C of a rank-4 x (pass
 *                                        layout_nhwc holds a rank-4 x NHWC for this op)
 * Constraints: float32 in and out (dtype= None or float32), no empty tensors.
 *
 * Layout (eg_value.axes, pass layout_nhwc): axes and dims follow each value's own order.
 * Without keepdim, ReduceSum drops the reduced axes of the QNN input and keeps the others in the
 * input's QNN order. For an NHWC input that is not ATen's order when C survives together with H
 * or W (e.g. dim [0] gives [H,W,C], ATen wants [C,H,W]); and a result held in an order other
 * than the one the input leaves (e.g. a rank-5 input reduced to an NHWC rank 4) needs a
 * permute too. The builder then reduces into a temporary and permutes it into the result's QNN
 * order (a Reshape when that moves no byte). With keepdim the result has the input's order.
 *
 * LogSoftmax: the HTP runs it along the last axis only (ExecuTorch's QNN builder declines
 * every other axis too), so other dims stay on the CPU rather than growing a Transpose pair. */
#include <stdio.h>

#include "backends/htp/compile/builders/builders.h"

/* ---- sum, mean ---- */

/* The reduced ATen dims of node n's input (rank `rank`) as a bit mask. The op's check has
 * validated `dim` already. */
static uint32_t reduced_mask(const eg_node *n, int rank) {
  const bool has_dim = n->op == EG_OP_sum_dim_IntList || n->op == EG_OP_mean_dim;
  int64_t dims[EG_MAX_RANK];
  int nd = -1;
  if (has_dim && eg_arg_opt_int_list(n, 1, "dim", dims, 0, EG_MAX_RANK, &nd) != EG_OK) nd = -1;
  if (nd <= 0) return rank >= 32 ? ~0u : (1u << rank) - 1u;
  uint32_t mask = 0;
  for (int i = 0; i < nd; i++) mask |= 1u << eg_wrap_dim(dims[i], rank);
  return mask;
}

static bool reduce_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                            char *reason, size_t size) {
  (void)t;
  return eg_htp_self_and_result_ok(g, n, reason, size);
}

static eg_status reduce_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n,
                              eg_htp_qnn_op op) {
  const int32_t x_id = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[x_id], *y = &g->values[n->output];
  const int rank = x->rank;
  int32_t in, out;
  EG_TRY(eg_htp_input(L, x_id, &in));
  if (rank == 0) { /* the sum and the mean of one element are that element */
    if (!eg_htp_is_needed_outside(L, n->output)) return eg_htp_alias(L, n->output, in);
    EG_TRY(eg_htp_define(L, n->output, &out));
    return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &in, 1, &out, 1, NULL, 0);
  }
  bool keepdim = false;
  if (n->op == EG_OP_sum_dim_IntList || n->op == EG_OP_mean_dim)
    EG_TRY(eg_arg_opt_bool(n, 2, "keepdim", &keepdim));
  /* with keepdim the QNN result keeps x's axes, so y must be held in x's order */
  if (keepdim) EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(x), "result"));
  const uint32_t mask = reduced_mask(n, rank);
  /* axes, ascending; raw[] lists the ATen output dim at each axis ReduceSum's output keeps */
  uint32_t axes[EG_MAX_RANK], raw_dims[EG_MAX_RANK];
  int n_axes = 0, n_raw = 0, raw_out_dim[EG_MAX_RANK];
  for (int a = 0; a < rank; a++) {
    const int d = eg_htp_aten_dim(x, a);
    if (mask >> d & 1u) {
      axes[n_axes++] = (uint32_t)a;
      continue;
    }
    int out_dim = d; /* without keepdim: d minus the reduced dims before it */
    for (int e = 0; e < d && !keepdim; e++) out_dim -= (int)(mask >> e & 1u);
    raw_out_dim[n_raw] = out_dim;
    raw_dims[n_raw++] = eg_htp_qnn_dim(x->shape[d]);
  }
  const uint32_t ad[1] = {(uint32_t)n_axes};
  const eg_htp_qnn_param p[2] = {eg_htp_qnn_param_u32_tensor("axes", 1, ad, axes),
                             eg_htp_qnn_param_bool("keep_dims", keepdim)};
  /* the permutation from the raw order to the result's QNN order, if any */
  uint32_t perm[EG_MAX_RANK];
  bool identity = true;
  for (int b = 0; !keepdim && b < y->rank; b++) {
    const int want = eg_htp_aten_dim(y, b);
    int k = 0;
    while (raw_out_dim[k] != want) k++;
    perm[b] = (uint32_t)k;
    identity = identity && k == b;
  }
  EG_TRY(eg_htp_define(L, n->output, &out));
  if (identity) return eg_htp_op(L, op, &in, 1, &out, 1, p, 2);
  int32_t tmp;
  EG_TRY(eg_htp_temp(L, "reduced", EG_HTP_QNN_DTYPE_FLOAT_32, n_raw, raw_dims, &tmp));
  EG_TRY(eg_htp_op(L, op, &in, 1, &tmp, 1, p, 2));
  int last = -1;
  bool moves = false;
  for (int b = 0; b < n_raw; b++) {
    if (raw_dims[perm[b]] == 1) continue;
    moves = moves || (int)perm[b] < last;
    last = (int)perm[b];
  }
  if (!moves) return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &tmp, 1, &out, 1, NULL, 0);
  const uint32_t pd[1] = {(uint32_t)n_raw};
  const eg_htp_qnn_param tp = eg_htp_qnn_param_u32_tensor("perm", 1, pd, perm);
  return eg_htp_op(L, EG_HTP_QNN_OP_TRANSPOSE, &tmp, 1, &out, 1, &tp, 1);
}

static eg_status sum_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  return reduce_lower(L, g, n, EG_HTP_QNN_OP_REDUCE_SUM);
}

static eg_status mean_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  return reduce_lower(L, g, n, EG_HTP_QNN_OP_REDUCE_MEAN);
}

/* ---- _log_softmax ---- */

static bool log_softmax_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                 char *reason, size_t size) {
  (void)t;
  if (!eg_htp_self_and_result_ok(g, n, reason, size)) return false;
  const eg_value *x = &g->values[eg_htp_arg(n, 0, "self")];
  bool half_to_float = false;
  int64_t dim = 0;
  if (eg_arg_opt_bool(n, 2, "half_to_float", &half_to_float) != EG_OK || half_to_float) {
    snprintf(reason, size, "half_to_float: the NPU lowering takes float32 in and out");
    return false;
  }
  if (x->rank == 0) {
    snprintf(reason, size, "rank-0 input: LogSoftmax needs rank >= 1");
    return false;
  }
  if (eg_arg_int(n, 1, "dim", &dim) != EG_OK) {
    snprintf(reason, size, "argument dim is not an int");
    return false;
  }
  /* the QNN axis of dim d with a rank-4 x held NHWC, as pass layout_nhwc holds it for this
   * node — not read from the value, so the placement does not depend on the pass having run */
  static const int nhwc_axis[4] = {0, 3, 1, 2};
  const int d = eg_wrap_dim(dim, x->rank), axis = x->rank == 4 ? nhwc_axis[d] : d;
  if (axis != x->rank - 1) {
    snprintf(reason, size, "dim %d of a rank-%d input is QNN axis %d: LogSoftmax on the HTP "
             "runs along the last axis (%d) only", d, x->rank, axis, x->rank - 1);
    return false;
  }
  return true;
}

static eg_status log_softmax_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t x_id = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[x_id];
  int64_t dim = 0;
  EG_TRY(eg_arg_int(n, 1, "dim", &dim));
  const int axis = eg_htp_axis(x, eg_wrap_dim(dim, x->rank));
  if (axis != x->rank - 1)
    return eg_node_error(n, EG_ERR_INVALID, "dim %lld of %s is QNN axis %d in its %s axis order: "
                         "LogSoftmax runs along the last axis (%d) only (pass layout_nhwc holds "
                         "a rank-4 input NHWC)", (long long)dim,
                         eg_value_label(g, x_id), axis, eg_htp_is_nhwc(x) ? "NHWC" : "traced",
                         x->rank - 1);
  EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(x), "result"));
  int32_t in, out;
  EG_TRY(eg_htp_input(L, x_id, &in));
  EG_TRY(eg_htp_define(L, n->output, &out));
  const eg_htp_qnn_param p[2] = {eg_htp_qnn_param_u32("axis", (uint32_t)g->values[x_id].rank - 1),
                             eg_htp_qnn_param_f32("beta", 1.0f)};
  return eg_htp_op(L, EG_HTP_QNN_OP_LOG_SOFTMAX, &in, 1, &out, 1, p, 2);
}

const eg_htp_builder eg_htp_builder_sum_default = {"aten.sum.default -> ReduceSum", 0,
                                                   reduce_supports, sum_lower};
const eg_htp_builder eg_htp_builder_sum_dim_IntList = {
    "aten.sum.dim_IntList -> ReduceSum [+ Transpose]", 0, reduce_supports, sum_lower};
const eg_htp_builder eg_htp_builder_mean_default = {"aten.mean.default -> ReduceMean", 0,
                                                    reduce_supports, mean_lower};
const eg_htp_builder eg_htp_builder_mean_dim = {"aten.mean.dim -> ReduceMean [+ Transpose]", 0,
                                                reduce_supports, mean_lower};
const eg_htp_builder eg_htp_builder__log_softmax = {"aten._log_softmax -> LogSoftmax", 0,
                                                    log_softmax_supports, log_softmax_lower};
