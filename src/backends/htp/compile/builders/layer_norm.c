/* layer_norm.c — NPU builders for aten.native_layer_norm and aten.native_layer_norm_backward:
 * composites of reductions and elementwise ops, like batch norm's (norm.c), over the last k
 * dims (normalized_shape; N = the axes [r - k, r), L = the leading axes [0, r - k), cols = the
 * elements of one normalised row).
 *
 *   aten.native_layer_norm(x, normalized_shape, w?, b?, eps) -> (y, mean, rstd)
 *          mean = ReduceMean(x, N, keep_dims)              (ATen's [lead..., 1 x k] shape)
 *          x1 = x - mean   xc = x1 - ReduceMean(x1, N)     (the float mean's rounding error
 *                                                           taken out, as in batch norm)
 *          rstd = Rsqrt(ReduceMean(xc * xc, N) + eps)
 *          y = xc * rstd [* w] [+ b]                       (w, b [normalized_shape]: they
 *                                                           broadcast against x's last dims)
 *       A training step reads mean and rstd in the backward, so all three are computed. QNN's
 *       LayerNorm op computes y only; measured on QNN 2.51's HTP emulator (SM8650, fp16,
 *       [2, 16, 64] over the last dim) it is more accurate (4.8e-4 of the range against this
 *       composite's 1.2e-3) and would save two full-tensor ops, but its EP takes only the last
 *       dim (k = 2 is refused) and the statistics would still need this composite: it is not
 *       modelled yet.
 *   aten.native_layer_norm_backward(gy, x, normalized_shape, mean, rstd, w?, b?, output_mask)
 *       -> with xhat = (x - mean) * rstd and wg = gy [* w] (ATen's kernel's formula):
 *          grad_input  = rstd * ((wg - ReduceSum(wg, N) / cols) - xhat * (ReduceSum(wg * xhat,
 *                        N) / cols))
 *          grad_weight = ReduceSum(gy * xhat, L)      grad_bias = ReduceSum(gy, L)
 *       each element only where output_mask asks for it; every mask lowers.
 * Constraints: float32, non-empty tensors; mean / rstd of the backward shaped as the forward
 * returns them; grad_weight / grad_bias need leading dims (a normalized_shape covering the whole
 * input leaves L empty: declined). Layout: layer norm normalises ATen's last dims, so every
 * tensor is held in traced order (pass layout_nhwc: no rule, TRACED; lowering checks it). */
#include <stdio.h>
#include <string.h>

#include "backends/htp/compile/builders/builders.h"

/* The geometry both composites share. */
typedef struct ln_geo {
  eg_htp_lower *L;
  int32_t rank, axis;              /* axis: the first normalised dim, rank - k */
  uint32_t full[EG_HTP_QNN_MAX_RANK];  /* x's dims */
  uint32_t stat[EG_HTP_QNN_MAX_RANK];  /* mean / rstd: x's dims with the normalised ones 1 */
  int64_t cols;                    /* elements per normalised row */
} ln_geo;

/* k from normalized_shape at position pos; 0 when it cannot be read. */
static int ln_k(const eg_node *n, int pos) {
  int64_t ns[EG_MAX_RANK];
  int k = 0;
  if (eg_arg_int_list(n, pos, "normalized_shape", ns, 1, EG_MAX_RANK, &k) != EG_OK) return 0;
  return k;
}

static ln_geo ln_geo_of(eg_htp_lower *L, const eg_value *x, int k) {
  ln_geo s = {.L = L, .rank = x->rank, .axis = x->rank - k, .cols = 1};
  eg_htp_dims(x, s.full);
  for (int d = 0; d < x->rank; d++) {
    s.stat[d] = d < s.axis ? s.full[d] : 1;
    if (d >= s.axis) s.cols *= x->shape[d];
  }
  return s;
}

/* Shape classes of the temporaries. */
enum { LN_FULL, LN_STAT };

/* *out = op(a, b) into a new temp `what` of class `cls`, or into *out when it is >= 0. */
static eg_status ln_bin(const ln_geo *s, eg_htp_qnn_op op, int32_t a, int32_t b, int cls,
                        const char *what, int32_t *out) {
  if (*out < 0)
    EG_TRY(eg_htp_temp(s->L, what, EG_HTP_QNN_DTYPE_FLOAT_32, s->rank,
                       cls == LN_FULL ? s->full : s->stat, out));
  const int32_t in[2] = {a, b};
  return eg_htp_op(s->L, op, in, 2, out, 1, NULL, 0);
}

/* *out = ReduceMean / ReduceSum of x over the normalised axes, keep_dims ([stat]). */
static eg_status ln_reduce_rows(const ln_geo *s, eg_htp_qnn_op op, int32_t x, const char *what,
                                int32_t *out) {
  if (*out < 0) EG_TRY(eg_htp_temp(s->L, what, EG_HTP_QNN_DTYPE_FLOAT_32, s->rank, s->stat, out));
  uint32_t axes[EG_HTP_QNN_MAX_RANK];
  for (int d = s->axis; d < s->rank; d++) axes[d - s->axis] = (uint32_t)d;
  const uint32_t n_axes[1] = {(uint32_t)(s->rank - s->axis)};
  const eg_htp_qnn_param p[2] = {eg_htp_qnn_param_u32_tensor("axes", 1, n_axes, axes),
                             eg_htp_qnn_param_bool("keep_dims", true)};
  return eg_htp_op(s->L, op, &x, 1, out, 1, p, 2);
}

/* *out (a [normalized_shape] element, already defined) = ReduceSum of x over the leading axes. */
static eg_status ln_reduce_lead(const ln_geo *s, int32_t x, int32_t out) {
  uint32_t axes[EG_HTP_QNN_MAX_RANK];
  for (int d = 0; d < s->axis; d++) axes[d] = (uint32_t)d;
  const uint32_t n_axes[1] = {(uint32_t)s->axis};
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor("axes", 1, n_axes, axes);
  return eg_htp_op(s->L, EG_HTP_QNN_OP_REDUCE_SUM, &x, 1, &out, 1, &p, 1);
}

/* A float32 constant of one element, broadcast against anything of the node's rank. */
static eg_status ln_scalar(const ln_geo *s, const char *what, float v, int32_t *out) {
  const uint32_t one[1] = {1};
  return eg_htp_const_f32(s->L, what, 1, one, &v, out);
}

/* The tensor of IR value v (argument `what`), which lowering needs in traced order. */
static eg_status ln_traced_input(eg_htp_lower *L, int32_t v, const char *what, int32_t *t) {
  EG_TRY(eg_htp_want_axes(L, v, EG_AXES_TRACED, what));
  return eg_htp_input(L, v, t);
}

/* The tensor of tuple element i of n when it is there and read (defined now), else -1. */
static eg_status ln_element(eg_htp_lower *L, const eg_graph *g, const eg_node *n, int i,
                            int32_t *out) {
  const int32_t v = g->values[n->output].elems[i];
  *out = -1;
  if (v < 0 || !eg_htp_elem_used(g, n, i)) return EG_OK;
  EG_TRY(eg_htp_want_axes(L, v, EG_AXES_TRACED, "result"));
  return eg_htp_define(L, v, out);
}

/* Optional float32 tensor argument: absent, or passes eg_htp_float_tensor_ok. */
static bool opt_float_ok(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                         char *reason, size_t size) {
  const int32_t v = eg_htp_arg(n, pos, kw);
  return v < 0 || eg_htp_float_tensor_ok(g, v, reason, size);
}

/* ---- native_layer_norm ---- */

static bool ln_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                        size_t size) {
  (void)t;
  const int32_t x = eg_htp_arg(n, 0, "input");
  if (x < 0 || ln_k(n, 1) < 1) {
    snprintf(reason, size, "input or normalized_shape is missing");
    return false;
  }
  return eg_htp_float_tensor_ok(g, x, reason, size) &&
         opt_float_ok(g, n, 2, "weight", reason, size) &&
         opt_float_ok(g, n, 3, "bias", reason, size);
}

static eg_status ln_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_htp_qnn_op SUB = EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, MUL = EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY;
  const int32_t xv = eg_htp_arg(n, 0, "input"), wv = eg_htp_arg(n, 2, "weight"),
                bv = eg_htp_arg(n, 3, "bias");
  const ln_geo s = ln_geo_of(L, &g->values[xv], ln_k(n, 1));
  double eps = 1e-5;
  EG_TRY(eg_arg_scalar(n, 4, "eps", &eps));
  int32_t x, y, mean, rstd, w = -1, b = -1, eps_t, x1 = -1, resid = -1, xc = -1, sq = -1,
          var = -1, ve = -1;
  EG_TRY(ln_traced_input(L, xv, "input", &x));
  if (wv >= 0) EG_TRY(eg_htp_input(L, wv, &w));
  if (bv >= 0) EG_TRY(eg_htp_input(L, bv, &b));
  EG_TRY(ln_element(L, g, n, 0, &y));
  EG_TRY(ln_element(L, g, n, 1, &mean));
  EG_TRY(ln_element(L, g, n, 2, &rstd));
  EG_TRY(ln_reduce_rows(&s, EG_HTP_QNN_OP_REDUCE_MEAN, x, "stat_mean", &mean));
  EG_TRY(ln_bin(&s, SUB, x, mean, LN_FULL, "stat_x1", &x1));
  EG_TRY(ln_reduce_rows(&s, EG_HTP_QNN_OP_REDUCE_MEAN, x1, "stat_resid", &resid));
  EG_TRY(ln_bin(&s, SUB, x1, resid, LN_FULL, "stat_xc", &xc));
  EG_TRY(ln_bin(&s, MUL, xc, xc, LN_FULL, "stat_xc_sq", &sq));
  EG_TRY(ln_reduce_rows(&s, EG_HTP_QNN_OP_REDUCE_MEAN, sq, "stat_var", &var));
  EG_TRY(ln_scalar(&s, "stat_eps", (float)eps, &eps_t));
  EG_TRY(ln_bin(&s, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, var, eps_t, LN_STAT, "stat_var_eps", &ve));
  if (rstd < 0)
    EG_TRY(eg_htp_temp(L, "stat_rstd", EG_HTP_QNN_DTYPE_FLOAT_32, s.rank, s.stat, &rstd));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_RSQRT, &ve, 1, &rstd, 1, NULL, 0));
  if (y < 0) return EG_OK; /* only the statistics are read */
  /* y = xc * rstd [* w] [+ b], in ATen's order; the last op writes y's tensor */
  int32_t xhat = w < 0 && b < 0 ? y : -1, scaled = w >= 0 && b < 0 ? y : -1;
  EG_TRY(ln_bin(&s, MUL, xc, rstd, LN_FULL, "norm_xhat", &xhat));
  if (w >= 0) EG_TRY(ln_bin(&s, MUL, xhat, w, LN_FULL, "norm_scaled", &scaled));
  else scaled = xhat;
  if (b >= 0) EG_TRY(ln_bin(&s, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, scaled, b, LN_FULL, "norm_y", &y));
  return EG_OK;
}

/* ---- native_layer_norm_backward ---- */

/* Argument pos/kw (mean or rstd) is float32 with the forward's [lead..., 1 x k] shape. */
static bool ln_stat_ok(const eg_graph *g, const eg_node *n, int pos, const char *kw, int k,
                       char *reason, size_t size) {
  const int32_t v = eg_htp_arg(n, pos, kw);
  const eg_value *x = eg_htp_arg_value(g, n, 1, "input");
  if (v < 0 || !eg_htp_float_tensor_ok(g, v, reason, size)) {
    if (v < 0) snprintf(reason, size, "%s is not a tensor", kw);
    return false;
  }
  const eg_value *a = &g->values[v];
  bool ok = a->rank == x->rank;
  for (int d = 0; ok && d < x->rank; d++)
    ok = a->shape[d] == (d < x->rank - k ? x->shape[d] : 1);
  if (!ok) {
    char s[96], t[96];
    snprintf(reason, size, "%s %s with input %s: the NPU lowering takes the forward's shape "
             "(the input's leading dims, then 1s)", kw, eg_fmt_ints(s, sizeof s, a->shape,
             a->rank), eg_fmt_ints(t, sizeof t, x->shape, x->rank));
  }
  return ok;
}

static bool ln_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                 char *reason, size_t size) {
  (void)t;
  const int32_t gy = eg_htp_arg(n, 0, "grad_out"), x = eg_htp_arg(n, 1, "input");
  const int k = ln_k(n, 2);
  if (gy < 0 || x < 0 || k < 1) {
    snprintf(reason, size, "grad_out, input or normalized_shape is missing");
    return false;
  }
  if (!eg_htp_float_tensor_ok(g, gy, reason, size) ||
      !eg_htp_float_tensor_ok(g, x, reason, size) ||
      !ln_stat_ok(g, n, 3, "mean", k, reason, size) ||
      !ln_stat_ok(g, n, 4, "rstd", k, reason, size) ||
      !opt_float_ok(g, n, 5, "weight", reason, size))
    return false;
  const int32_t *el = g->values[n->output].elems;
  if (g->values[x].rank == k && (el[1] >= 0 || el[2] >= 0)) {
    snprintf(reason, size, "normalized_shape covers all %d dims of the input: grad_weight / "
             "grad_bias would be a sum over no dims (ReduceSum needs an axis)", k);
    return false;
  }
  return true;
}

static eg_status ln_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_htp_qnn_op SUB = EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, MUL = EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY;
  const int32_t gv = eg_htp_arg(n, 0, "grad_out"), xv = eg_htp_arg(n, 1, "input"),
                wv = eg_htp_arg(n, 5, "weight");
  const ln_geo s = ln_geo_of(L, &g->values[xv], ln_k(n, 2));
  const int32_t *el = g->values[n->output].elems;
  int32_t gy, x, mean, rstd, w = -1, gx = -1, gw = -1, gb = -1, xc = -1, xhat = -1;
  EG_TRY(ln_traced_input(L, gv, "grad_out", &gy));
  EG_TRY(ln_traced_input(L, xv, "input", &x));
  EG_TRY(ln_traced_input(L, eg_htp_arg(n, 3, "mean"), "mean", &mean));
  EG_TRY(ln_traced_input(L, eg_htp_arg(n, 4, "rstd"), "rstd", &rstd));
  if (wv >= 0) EG_TRY(eg_htp_input(L, wv, &w));
  if (el[0] >= 0) {
    EG_TRY(eg_htp_want_axes(L, el[0], EG_AXES_TRACED, "grad_input"));
    EG_TRY(eg_htp_define(L, el[0], &gx));
  }
  if (el[1] >= 0) EG_TRY(eg_htp_define(L, el[1], &gw));
  if (el[2] >= 0) EG_TRY(eg_htp_define(L, el[2], &gb));
  EG_TRY(ln_bin(&s, SUB, x, mean, LN_FULL, "xc", &xc));
  EG_TRY(ln_bin(&s, MUL, xc, rstd, LN_FULL, "xhat", &xhat));
  if (gb >= 0) EG_TRY(ln_reduce_lead(&s, gy, gb));
  if (gw >= 0) {
    int32_t gxh = -1;
    EG_TRY(ln_bin(&s, MUL, gy, xhat, LN_FULL, "g_xhat", &gxh));
    EG_TRY(ln_reduce_lead(&s, gxh, gw));
  }
  if (gx < 0) return EG_OK;
  /* grad_input = rstd * ((wg - A / cols) - xhat * (B / cols)), A and B the row sums of wg and
   * wg * xhat */
  const float inv_cols = (float)(1.0 / (double)s.cols);
  int32_t wg = gy, wgx = -1, a = -1, bsum = -1, inv, am = -1, bm = -1, c = -1, xb = -1, d = -1;
  if (w >= 0) {
    wg = -1;
    EG_TRY(ln_bin(&s, MUL, gy, w, LN_FULL, "wg", &wg));
  }
  EG_TRY(ln_reduce_rows(&s, EG_HTP_QNN_OP_REDUCE_SUM, wg, "sum_wg", &a));
  EG_TRY(ln_bin(&s, MUL, wg, xhat, LN_FULL, "wg_xhat", &wgx));
  EG_TRY(ln_reduce_rows(&s, EG_HTP_QNN_OP_REDUCE_SUM, wgx, "sum_wg_xhat", &bsum));
  EG_TRY(ln_scalar(&s, "inv_cols", inv_cols, &inv));
  EG_TRY(ln_bin(&s, MUL, a, inv, LN_STAT, "mean_wg", &am));
  EG_TRY(ln_bin(&s, MUL, bsum, inv, LN_STAT, "mean_wg_xhat", &bm));
  EG_TRY(ln_bin(&s, SUB, wg, am, LN_FULL, "wg_centred", &c));
  EG_TRY(ln_bin(&s, MUL, xhat, bm, LN_FULL, "xhat_b", &xb));
  EG_TRY(ln_bin(&s, SUB, c, xb, LN_FULL, "grad_unscaled", &d));
  return ln_bin(&s, MUL, rstd, d, LN_FULL, "grad_input", &gx);
}

const eg_htp_builder eg_htp_builder_native_layer_norm = {
    "aten.native_layer_norm -> ReduceMean, elementwise ops, Rsqrt (y, mean and rstd)", 0,
    ln_supports, ln_lower};
const eg_htp_builder eg_htp_builder_native_layer_norm_backward = {
    "aten.native_layer_norm_backward -> ReduceSum and elementwise ops (every output_mask)", 0,
    ln_backward_supports, ln_backward_lower};
