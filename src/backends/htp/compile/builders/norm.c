/* norm.c — NPU builders for normalisation: batch norm forward (inference and training) and
 * backward, group norm forward.
 *
 *   aten.native_batch_norm(x, w, b, mean, var, training=False, momentum, eps)
 *       -> Batchnorm(x, scale, bias) with STATIC scale = w / sqrt(var + eps) and
 *          bias = b - mean * scale, folded at lowering in float as ATen's eval kernel does
 *          (invstd = 1 / sqrt(var + (float)eps); scale = invstd * w; bias = b - mean * scale;
 *          absent w / b are 1 / 0)
 *       runtime (non-static) statistics, weight or bias are declined — the folded constants
 *       need their values — and so is a read save_mean / save_invstd (elements 1, 2;
 *       [0]-shaped in eval, nothing a QNN tensor can hold).
 *   aten.native_batch_norm(x, w?, b?, mean, var, training=True, momentum, eps)
 *       (batch statistics; the running statistics' update is separate nodes of the exported
 *       graph, so mean / var are not read) -> over the axes A = all but the channels (last):
 *          save_mean = ReduceMean(x, A)          x1 = x - save_mean
 *          xc = x1 - ReduceMean(x1, A)   (the float mean's rounding error taken out)
 *          save_invstd = Rsqrt(ReduceMean(xc * xc, A) + eps)
 *          y = xc * (save_invstd [* w]) [+ b]    ([C] operands broadcast over the last axis)
 *       w / b may be runtime inputs (trainable) or static.
 *   aten.native_batch_norm_backward(g, x, w?, rmean, rvar, save_mean, save_invstd,
 *       train=True, eps, output_mask) -> with xc = x - save_mean, M = the elements per
 *       channel, k = w * save_invstd (save_invstd without w):
 *          grad_bias   = ReduceSum(g, A)      grad_weight = save_invstd * ReduceSum(g * xc, A)
 *          grad_input  = g * k - k * grad_bias / M - xc * (k * save_invstd^2 * ReduceSum(g * xc,
 *                        A) / M)
 *       (the per-channel factors are applied to [C] vectors, so the full tensors are rounded
 *       as few times as the formula allows)
 *       (each element only where it is present; the sums are computed for grad_input even
 *       when their elements are not). train=False (the running statistics' gradient) and
 *       absent saved statistics are declined.
 *   aten._native_batch_norm_legit_no_training(x, w, b, mean, var, momentum, eps) and
 *   aten._native_batch_norm_legit(x, w, b, mean, var, training=False, momentum, eps)
 *       (torch 2's forms; the same eval semantics and outputs) -> the same Batchnorm, same gate.
 *       _native_batch_norm_legit_functional and .no_stats have no lowering: the first returns
 *       the running statistics as well, the second is training-only.
 *   aten.native_group_norm(x, w, b, N, C, HxW, group, eps)
 *       -> GroupNorm(x, gamma = w, beta = b; group, epsilon = (float)eps)
 *       w / b may be runtime inputs; the mean / rstd elements (1, 2) must be unread — a
 *       training step's native_group_norm_backward reads them, so a training group norm stays
 *       on the CPU.
 * Constraints: x float32, non-empty, rank 4 (held NHWC: channels last, as QNN's ops want;
 * eg_value.axes, pass layout_nhwc — lowering fails on a traced-order value) or rank 2 ([N, C],
 * channels last already); other ranks keep ATen's [N, C, ...] order on the
 * NPU, with channels not last: declined.
 * InstanceNorm (in qnn_ops.def) has no ATen op to lower: PyTorch 1.13 traces instance norm as a
 * training-mode native_batch_norm over [1, N*C, H, W]. The backward ops have no QNN op. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/htp/compile/builders/builders.h"

/* x is a non-empty float32 tensor of rank 2 or 4. */
static bool norm_input_ok(const eg_value *x, char *reason, size_t size) {
  char s[96];
  if (!x || x->dtype != EG_DTYPE_FLOAT32) {
    snprintf(reason, size, "input is not a float32 tensor");
    return false;
  }
  if (x->rank != 2 && x->rank != 4) {
    snprintf(reason, size, "rank-%d input %s: on the NPU only rank 4 (NHWC) and rank 2 have "
             "channels last", (int)x->rank, eg_fmt_ints(s, sizeof s, x->shape, x->rank));
    return false;
  }
  if (eg_value_numel(x) == 0) {
    snprintf(reason, size, "empty input %s: QNN tensors need every dim >= 1",
             eg_fmt_ints(s, sizeof s, x->shape, x->rank));
    return false;
  }
  return true;
}

/* Elements 1 and 2 (statistics) of the node's tuple are read by nobody. */
static bool stats_unread(const eg_graph *g, const eg_node *n, const char *what, char *reason,
                         size_t size) {
  if (!eg_htp_elem_used(g, n, 1) && !eg_htp_elem_used(g, n, 2)) return true;
  snprintf(reason, size, "%s (tuple elements 1, 2) are read: the NPU op computes only the "
           "normalised output", what);
  return false;
}

/* ---- native_batch_norm (eval) ---- */

static const char *const bn_args[4] = {"weight", "bias", "running_mean", "running_var"};

/* Position of eps: _native_batch_norm_legit_no_training has no training argument before it. */
static int bn_eps_pos(const eg_node *n) {
  return n->op == EG_OP__native_batch_norm_legit_no_training ? 6 : 7;
}

/* Argument pos (`name`) is a float32 [c] tensor, or absent where it may be. */
static bool channel_vector_ok(const eg_graph *g, const eg_node *n, int pos, const char *name,
                              bool required, int64_t c, char *reason, size_t size) {
  const int32_t v = eg_htp_arg(n, pos, name);
  const eg_value *a = v >= 0 ? &g->values[v] : NULL;
  if (!a && !required) return true;
  if (a && a->kind == EG_VALUE_TENSOR && a->dtype == EG_DTYPE_FLOAT32 && a->rank == 1 &&
      a->shape[0] == c)
    return true;
  snprintf(reason, size, "%s is not a float32 [%lld] tensor", name, (long long)c);
  return false;
}

/* Whether node n normalises with batch statistics (training=True). */
static bool bn_training(const eg_node *n) {
  if (n->op == EG_OP__native_batch_norm_legit_no_training) return false;
  const eg_arg *training = eg_node_arg(n, 5, "training");
  return !training || training->kind != EG_ARG_BOOL || training->b;
}

static bool batch_norm_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                char *reason, size_t size) {
  (void)t;
  if (!norm_input_ok(eg_htp_arg_value(g, n, 0, "input"), reason, size)) return false;
  if (bn_training(n)) {
    if (n->op != EG_OP_native_batch_norm || eg_node_arg(n, 5, "training")->kind != EG_ARG_BOOL) {
      snprintf(reason, size, "training=True: the batch-statistics lowering takes "
               "aten.native_batch_norm (this form also updates the running statistics)");
      return false;
    }
    const int64_t c = g->values[eg_htp_arg(n, 0, "input")].shape[1];
    return channel_vector_ok(g, n, 1, "weight", false, c, reason, size) &&
           channel_vector_ok(g, n, 2, "bias", false, c, reason, size);
  }
  for (int i = 0; i < 4; i++) {
    const int32_t v = eg_htp_arg(n, 1 + i, bn_args[i]);
    if (v >= 0 && g->values[v].role != EG_ROLE_STATIC) {
      snprintf(reason, size, "%s is a runtime input: Batchnorm's folded scale and bias need "
               "static statistics and affine parameters", bn_args[i]);
      return false;
    }
  }
  return stats_unread(g, n, "save_mean / save_invstd", reason, size);
}

/* The static float32 [C] data of argument i of bn_args, or NULL when absent. */
static const float *bn_static(const eg_graph *g, const eg_node *n, int i) {
  const int32_t v = eg_htp_arg(n, 1 + i, bn_args[i]);
  return v >= 0 ? g->statics[g->values[v].def].data : NULL;
}

static eg_status bn_train_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n);

static eg_status batch_norm_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  if (bn_training(n)) return bn_train_lower(L, g, n);
  const int32_t xv = eg_htp_arg(n, 0, "input");
  const eg_value *x = &g->values[xv];
  const int64_t c = x->shape[1];
  double eps = 1e-5;
  eg_arg_opt_scalar(n, bn_eps_pos(n), "eps", &eps);
  const float *w = bn_static(g, n, 0), *b = bn_static(g, n, 1);
  const float *mean = bn_static(g, n, 2), *var = bn_static(g, n, 3);
  float *scale = malloc(2 * (size_t)c * sizeof(float));
  if (!scale) return eg_error(EG_ERR_NOMEM, "lowering %s: out of memory", n->name);
  float *bias = scale + c;
  for (int64_t k = 0; k < c; k++) {
    const float invstd = 1.0f / sqrtf(var[k] + (float)eps);
    scale[k] = invstd * (w ? w[k] : 1.0f);
    bias[k] = (b ? b[k] : 0.0f) - mean[k] * scale[k];
  }
  const uint32_t dims[1] = {(uint32_t)c};
  int32_t in[3], out;
  eg_status s = eg_htp_want_axes(L, xv, EG_AXES_NHWC, "input");
  const int32_t y = g->values[n->output].elems[0];
  if (s == EG_OK) s = eg_htp_want_axes(L, y, EG_AXES_NHWC, "result");
  if (s == EG_OK) s = eg_htp_input(L, xv, &in[0]);
  if (s == EG_OK) s = eg_htp_const_f32(L, "scale", 1, dims, scale, &in[1]);
  if (s == EG_OK) s = eg_htp_const_f32(L, "bias", 1, dims, bias, &in[2]);
  free(scale);
  EG_TRY(s);
  EG_TRY(eg_htp_define(L, y, &out));
  return eg_htp_op(L, EG_HTP_QNN_OP_BATCHNORM, in, 3, &out, 1, NULL, 0);
}

/* ---- native_batch_norm (training) and native_batch_norm_backward: composites ---- */

/* What both composites share: the normalised tensor's dims, its reduction axes (all but the
 * last, channels) and the [C] dims of the per-channel vectors. */
typedef struct bn_shape {
  int32_t rank;
  uint32_t full[4], vec[1];
  uint32_t n_axes, axes[3];
  int64_t per_channel; /* M: elements per channel */
} bn_shape;

static bn_shape bn_shape_of(const eg_value *x) {
  bn_shape b = {.rank = x->rank};
  eg_htp_dims(x, b.full);
  b.vec[0] = b.full[x->rank - 1];
  b.n_axes = (uint32_t)x->rank - 1;
  b.per_channel = 1;
  for (uint32_t k = 0; k < b.n_axes; k++) {
    b.axes[k] = k;
    b.per_channel *= b.full[k];
  }
  return b;
}

/* out = op(a, b) into tensor `out`, or into a new [full] / [C] temp `what` when *out < 0. */
static eg_status bn_binary(eg_htp_lower *L, const bn_shape *s, eg_htp_qnn_op op, int32_t a,
                           int32_t b, bool vec, const char *what, int32_t *out) {
  if (*out < 0)
    EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, vec ? 1 : s->rank,
                       vec ? s->vec : s->full, out));
  const int32_t in[2] = {a, b};
  return eg_htp_op(L, op, in, 2, out, 1, NULL, 0);
}

/* out = ReduceSum / ReduceMean of x over the axes, [C]. */
static eg_status bn_reduce(eg_htp_lower *L, const bn_shape *s, eg_htp_qnn_op op, int32_t x,
                           const char *what, int32_t *out) {
  if (*out < 0) EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 1, s->vec, out));
  const uint32_t dims[1] = {s->n_axes};
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor("axes", 1, dims, s->axes);
  return eg_htp_op(L, op, &x, 1, out, 1, &p, 1);
}

/* The tensor of tuple element i of n when something reads it (defined now), else -1. */
static eg_status bn_element(eg_htp_lower *L, const eg_graph *g, const eg_node *n, int i,
                            int32_t *out) {
  const int32_t v = g->values[n->output].elems[i];
  *out = -1;
  if (v < 0 || (i > 0 && !eg_htp_elem_used(g, n, i))) return EG_OK;
  if (i == 0) EG_TRY(eg_htp_want_axes(L, v, EG_AXES_NHWC, "result"));
  return eg_htp_define(L, v, out);
}

static eg_status bn_train_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t xv = eg_htp_arg(n, 0, "input"), wv = eg_htp_arg(n, 1, "weight"),
                bv = eg_htp_arg(n, 2, "bias");
  const bn_shape s = bn_shape_of(&g->values[xv]);
  double eps = 1e-5;
  eg_arg_opt_scalar(n, 7, "eps", &eps);
  const float eps_f = (float)eps;
  const uint32_t one[1] = {1};
  int32_t x, y, mean, invstd, eps_t, xc = -1, sq = -1, var = -1, ve = -1, w = -1, b = -1;
  EG_TRY(eg_htp_want_axes(L, xv, EG_AXES_NHWC, "input"));
  EG_TRY(eg_htp_input(L, xv, &x));
  if (wv >= 0) EG_TRY(eg_htp_input(L, wv, &w));
  if (bv >= 0) EG_TRY(eg_htp_input(L, bv, &b));
  EG_TRY(bn_element(L, g, n, 0, &y));
  EG_TRY(bn_element(L, g, n, 1, &mean));
  EG_TRY(bn_element(L, g, n, 2, &invstd));
  EG_TRY(bn_reduce(L, &s, EG_HTP_QNN_OP_REDUCE_MEAN, x, "stat_mean", &mean));
  /* xc = (x - mean) - ReduceMean(x - mean): the second pass takes out the rounding error of
   * the float mean, which (x - mean) carries into every element of a channel whose mean is
   * large beside its spread (the CPU kernel works in double and has none) */
  int32_t x1 = -1, resid = -1;
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, x, mean, false, "stat_x1", &x1));
  EG_TRY(bn_reduce(L, &s, EG_HTP_QNN_OP_REDUCE_MEAN, x1, "stat_resid", &resid));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, x1, resid, false, "stat_xc", &xc));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, xc, xc, false, "stat_xc_sq", &sq));
  EG_TRY(bn_reduce(L, &s, EG_HTP_QNN_OP_REDUCE_MEAN, sq, "stat_var", &var));
  EG_TRY(eg_htp_const_f32(L, "stat_eps", 1, one, &eps_f, &eps_t));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, var, eps_t, true, "stat_var_eps", &ve));
  if (invstd < 0) EG_TRY(eg_htp_temp(L, "stat_invstd", EG_HTP_QNN_DTYPE_FLOAT_32, 1, s.vec, &invstd));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_RSQRT, &ve, 1, &invstd, 1, NULL, 0));
  if (y < 0) return EG_OK; /* only the statistics are read */
  /* y = xc * (invstd [* w]) [+ b]: the per-channel scale first, so the full tensor is rounded
   * twice (three times with b); the last op writes y's tensor */
  int32_t scale = invstd, scaled = b < 0 ? y : -1;
  if (w >= 0) {
    scale = -1;
    EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, invstd, w, true, "norm_scale",
                     &scale));
  }
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, xc, scale, false, "norm_scaled",
                   &scaled));
  if (b >= 0) EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, scaled, b, false, "norm_y", &y));
  return EG_OK;
}

static bool bn_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                 char *reason, size_t size) {
  (void)t;
  const eg_value *gy = eg_htp_arg_value(g, n, 0, "grad_out");
  if (!norm_input_ok(gy, reason, size) ||
      !norm_input_ok(eg_htp_arg_value(g, n, 1, "input"), reason, size))
    return false;
  const eg_arg *train = eg_node_arg(n, 7, "train");
  if (!train || train->kind != EG_ARG_BOOL || !train->b) {
    snprintf(reason, size, "train=False: only the batch-statistics backward is lowered");
    return false;
  }
  const int64_t c = gy->shape[1];
  return channel_vector_ok(g, n, 5, "save_mean", true, c, reason, size) &&
         channel_vector_ok(g, n, 6, "save_invstd", true, c, reason, size) &&
         channel_vector_ok(g, n, 2, "weight", false, c, reason, size);
}

static eg_status bn_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t gv = eg_htp_arg(n, 0, "grad_out"), xv = eg_htp_arg(n, 1, "input"),
                wv = eg_htp_arg(n, 2, "weight");
  const bn_shape s = bn_shape_of(&g->values[gv]);
  int32_t gy, x, sm, si, w = -1, gx, gw, gb, xc = -1;
  EG_TRY(eg_htp_want_axes(L, gv, EG_AXES_NHWC, "grad_out"));
  EG_TRY(eg_htp_want_axes(L, xv, EG_AXES_NHWC, "input"));
  EG_TRY(eg_htp_input(L, gv, &gy));
  EG_TRY(eg_htp_input(L, xv, &x));
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 5, "save_mean"), &sm));
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 6, "save_invstd"), &si));
  if (wv >= 0) EG_TRY(eg_htp_input(L, wv, &w));
  const int32_t *el = g->values[n->output].elems;
  gx = gw = gb = -1;
  if (el[0] >= 0) EG_TRY(bn_element(L, g, n, 0, &gx));
  if (el[1] >= 0) EG_TRY(eg_htp_define(L, el[1], &gw));
  if (el[2] >= 0) EG_TRY(eg_htp_define(L, el[2], &gb));
  /* xc = x - save_mean; the sums are taken over g and g * xc, and the per-channel factors
   * applied to the [C] results, so no full tensor is rounded through xhat */
  int32_t sum_gxc = -1;
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, x, sm, false, "stat_xc", &xc));
  if (gb >= 0 || gx >= 0) EG_TRY(bn_reduce(L, &s, EG_HTP_QNN_OP_REDUCE_SUM, gy, "grad_sum_g", &gb));
  if (gw >= 0 || gx >= 0) {
    int32_t gxc = -1;
    EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, gy, xc, false, "grad_g_xc", &gxc));
    EG_TRY(bn_reduce(L, &s, EG_HTP_QNN_OP_REDUCE_SUM, gxc, "grad_sum_g_xc", &sum_gxc));
  }
  if (gw >= 0) /* grad_weight = sum(g * xhat) = save_invstd * sum(g * xc) */
    EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, sum_gxc, si, true, "grad_w", &gw));
  if (gx < 0) return EG_OK;
  /* grad_input = g * k - k * sum_g / M - xc * (k * invstd^2 * sum_g_xc / M) */
  const float inv_m = (float)(1.0 / (double)s.per_channel);
  const uint32_t one[1] = {1};
  int32_t inv_m_t, k = -1, km = -1, kmi = -1, kmi2 = -1, c1 = -1, c2 = -1, gk = -1, t = -1,
          u = -1;
  EG_TRY(eg_htp_const_f32(L, "grad_inv_m", 1, one, &inv_m, &inv_m_t));
  if (w >= 0)
    EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, w, si, true, "grad_k", &k));
  else
    k = si;
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, k, inv_m_t, true, "grad_k_m", &km));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, km, gb, true, "grad_c_mean", &c1));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, km, si, true, "grad_k_m_i", &kmi));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, kmi, si, true, "grad_k_m_i2",
                   &kmi2));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, kmi2, sum_gxc, true, "grad_c_xc",
                   &c2));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, gy, k, false, "grad_g_k", &gk));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, xc, c2, false, "grad_xc_c", &t));
  EG_TRY(bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, gk, c1, false, "grad_g_k_c", &u));
  return bn_binary(L, &s, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, u, t, false, "grad_gx", &gx);
}

/* ---- native_group_norm ---- */

static bool group_norm_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                char *reason, size_t size) {
  (void)t;
  if (!norm_input_ok(eg_htp_arg_value(g, n, 0, "input"), reason, size)) return false;
  return stats_unread(g, n, "mean / rstd", reason, size);
}

static eg_status group_norm_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  int64_t group = 1;
  double eps = 1e-5;
  eg_arg_opt_int(n, 6, "group", &group);
  eg_arg_opt_scalar(n, 7, "eps", &eps);
  const int32_t w = eg_htp_arg(n, 1, "weight"), b = eg_htp_arg(n, 2, "bias");
  int32_t in[3] = {-1, -1, -1}, out;
  EG_TRY(eg_htp_want_axes(L, eg_htp_arg(n, 0, "input"), EG_AXES_NHWC, "input"));
  EG_TRY(eg_htp_want_axes(L, g->values[n->output].elems[0], EG_AXES_NHWC, "result"));
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 0, "input"), &in[0]));
  if (w >= 0) EG_TRY(eg_htp_input(L, w, &in[1]));
  if (b >= 0) EG_TRY(eg_htp_input(L, b, &in[2]));
  EG_TRY(eg_htp_define(L, g->values[n->output].elems[0], &out));
  const eg_htp_qnn_param p[2] = {eg_htp_qnn_param_f32("epsilon", (float)eps),
                             eg_htp_qnn_param_u32("group", (uint32_t)group)};
  return eg_htp_op(L, EG_HTP_QNN_OP_GROUP_NORM, in, 3, &out, 1, p, 2);
}

/* ---- the builders ---- */

const eg_htp_builder eg_htp_builder_native_batch_norm = {
    "aten.native_batch_norm (eval, static statistics) -> Batchnorm; (training) -> ReduceMean, "
    "elementwise ops, Rsqrt", 0, batch_norm_supports, batch_norm_lower};
const eg_htp_builder eg_htp_builder_native_batch_norm_backward = {
    "aten.native_batch_norm_backward (train) -> ReduceSum and elementwise ops", 0,
    bn_backward_supports, bn_backward_lower};
const eg_htp_builder eg_htp_builder__native_batch_norm_legit_no_training = {
    "aten._native_batch_norm_legit_no_training (static statistics) -> Batchnorm", 0,
    batch_norm_supports, batch_norm_lower};
const eg_htp_builder eg_htp_builder__native_batch_norm_legit = {
    "aten._native_batch_norm_legit (eval, static statistics) -> Batchnorm", 0,
    batch_norm_supports, batch_norm_lower};
const eg_htp_builder eg_htp_builder_native_group_norm = {
    "aten.native_group_norm (mean/rstd unread) -> GroupNorm", 0, group_norm_supports,
    group_norm_lower};
