/* norm.c — NPU builders for normalisation (forward, inference form).
 *
 *   aten.native_batch_norm(x, w, b, mean, var, training=False, momentum, eps)
 *       -> Batchnorm(x, scale, bias) with STATIC scale = w / sqrt(var + eps) and
 *          bias = b - mean * scale, folded at lowering in float as ATen's eval kernel does
 *          (invstd = 1 / sqrt(var + (float)eps); scale = invstd * w; bias = b - mean * scale;
 *          absent w / b are 1 / 0)
 *       training=True (batch statistics) is declined; so are runtime (non-static) statistics,
 *       weight or bias — the folded constants need their values — and a read save_mean /
 *       save_invstd (elements 1, 2; [0]-shaped in eval, nothing a QNN tensor can hold).
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

#include "backends/htp/builders/builders.h"

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

static bool batch_norm_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                char *reason, size_t size) {
  (void)t;
  if (!norm_input_ok(eg_htp_arg_value(g, n, 0, "input"), reason, size)) return false;
  const eg_arg *training = eg_node_arg(n, 5, "training");
  if (n->op != EG_OP__native_batch_norm_legit_no_training &&
      (!training || training->kind != EG_ARG_BOOL || training->b)) {
    snprintf(reason, size, "training=True: Batchnorm is the inference form (batch statistics "
             "stay on the CPU)");
    return false;
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

static eg_status batch_norm_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
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
  return eg_htp_op(L, EG_QNN_OP_BATCHNORM, in, 3, &out, 1, NULL, 0);
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
  const eg_qnn_param p[2] = {eg_qnn_param_f32("epsilon", (float)eps),
                             eg_qnn_param_u32("group", (uint32_t)group)};
  return eg_htp_op(L, EG_QNN_OP_GROUP_NORM, in, 3, &out, 1, p, 2);
}

/* ---- the builders ---- */

const eg_htp_builder eg_htp_builder_native_batch_norm = {
    "aten.native_batch_norm (eval, static statistics) -> Batchnorm", 0, batch_norm_supports,
    batch_norm_lower};
const eg_htp_builder eg_htp_builder__native_batch_norm_legit_no_training = {
    "aten._native_batch_norm_legit_no_training (static statistics) -> Batchnorm", 0,
    batch_norm_supports, batch_norm_lower};
const eg_htp_builder eg_htp_builder__native_batch_norm_legit = {
    "aten._native_batch_norm_legit (eval, static statistics) -> Batchnorm", 0,
    batch_norm_supports, batch_norm_lower};
const eg_htp_builder eg_htp_builder_native_group_norm = {
    "aten.native_group_norm (mean/rstd unread) -> GroupNorm", 0, group_norm_supports,
    group_norm_lower};
