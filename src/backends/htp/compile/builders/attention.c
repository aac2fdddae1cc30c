/* attention.c — NPU builders for softmax and scaled-dot-product attention, forward and backward.
 *
 *   aten._softmax(x, dim, half_to_float=False)
 *       dim the last QNN axis  -> Softmax(axis = last)
 *       any other dim          -> Transpose(dim <-> last) + Softmax(axis = last) + Transpose
 *     QNN's HTP runs Softmax along the last axis: for ONNX Softmax on another axis QNN's own
 *     EP builds exactly this Transpose + Softmax + Transpose (measured on QNN 2.51's HTP
 *     emulator, SM8650 fp16 and SM8350 fp32, ranks 2 and 4, every axis: within 2e-3 relative
 *     in fp16, 2e-7 in fp32). A line of only -inf gives NaN, as ATen's softmax does.
 *   aten._softmax_backward_data(gy, y, dim, input_dtype)
 *       gx = y * (gy - sum(gy * y, dim, keepdim)), ATen's order: ElementWiseMultiply +
 *       ReduceSum(axes [dim], keep_dims) + ElementWiseSubtract + ElementWiseMultiply; any dim.
 *   aten._safe_softmax(x, dim, dtype=None)
 *       the _softmax form, then Select(ReduceMax(x, dim, keep_dims) > -inf, softmax, 0): a line
 *       of only -inf gives zeros, not NaN.
 *
 *   aten._scaled_dot_product_flash_attention_for_cpu(q [B,H,L,E], k [B,H,S,E], v [B,H,S,E],
 *       dropout_p = 0, is_causal, attn_mask?, scale?)   -> (out [B,H,L,E], logsumexp [B,H,L])
 *       s   = MatMul(q, k, transpose_in1) * scale [+ M]           [B,H,L,S]
 *       out = MatMul(Softmax(s, axis 3), v)
 *       logsumexp = Reshape(m + Log(ReduceSum(Exp(s - m), axis 3, keep_dims)))  with
 *                   m = ReduceMax(s, axis 3, keep_dims): the max keeps Exp in range
 *   aten._scaled_dot_product_flash_attention_for_cpu_backward(gO, q, k, v, out, logsumexp,
 *       dropout_p, is_causal, attn_mask?, scale?)   -> (dq, dk, dv)
 *       P  = Exp(s - Reshape(logsumexp to [B,H,L,1]))   (s as above: the forward's P)
 *       dv = MatMul(P, gO, transpose_in0)
 *       dP = MatMul(gO, v, transpose_in1)
 *       D  = ReduceSum(gO * out, axis 3, keep_dims)
 *       dS = P * (dP - D) * scale
 *       dq = MatMul(dS, k),  dk = MatMul(dS, q, transpose_in0)
 *     An unread gradient is not computed.
 *   M is one STATIC additive mask: attn_mask ([L, S] or [B|1, H|1, L, S]) plus, for is_causal,
 *   -inf where key j > query i (top-left aligned, as edgegrad's CPU kernel and ATen's).
 *
 * Contract of the CPU op (ops/attention.c): a query row whose scores are all -inf gives output
 * 0 and logsumexp 0 and zero gradients; the composite above would give NaN there (Softmax and
 * Exp(s - m) of an all -inf row). So the lowering takes only masks whose rows can be checked at
 * compile time: none, is_causal alone (top-left alignment always keeps key 0 for every query,
 * for any L and S) and a constant attn_mask whose every row, with the causal part, keeps at
 * least one entry above -inf. A mask computed at run time stays on the CPU.
 * Constraints: float32, dropout_p 0, one head dim E for q, k and v (the CPU op's rule), the
 * score tensor [B, H, L, S] (which the composite materializes) at most 2^31-1 elements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/htp/compile/builders/builders.h"

/* The score tensor's element limit: what the executor holds in one tensor. */
#define MAX_SCORES INT32_MAX

/* ---- _softmax, _safe_softmax, _softmax_backward_data ---- */

static bool softmax_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                             char *reason, size_t size) {
  (void)t;
  if (!eg_htp_self_and_result_ok(g, n, reason, size)) return false;
  int64_t dim = 0;
  if (eg_arg_int(n, 1, "dim", &dim) != EG_OK) {
    snprintf(reason, size, "argument dim is not an int");
    return false;
  }
  if (g->values[eg_htp_arg(n, 0, "self")].rank == 0) {
    snprintf(reason, size, "rank-0 input: Softmax needs rank >= 1");
    return false;
  }
  bool half_to_float = false;
  if (n->op == EG_OP__softmax &&
      (eg_arg_opt_bool(n, 2, "half_to_float", &half_to_float) != EG_OK || half_to_float)) {
    snprintf(reason, size, "half_to_float: the NPU lowering takes float32 in and out");
    return false;
  }
  return true;
}

/* Softmax of `in` (QNN dims `dims`, `rank`) along QNN axis `axis` into tensor `out`: along the
 * last axis directly, else between two Transposes that swap `axis` and the last. */
static eg_status softmax_along(eg_htp_lower *L, int32_t in, int rank, const uint32_t *dims,
                               int axis, int32_t out) {
  const eg_htp_qnn_param beta = eg_htp_qnn_param_f32("beta", 1.0f);
  eg_htp_qnn_param p[2] = {eg_htp_qnn_param_u32("axis", (uint32_t)rank - 1), beta};
  if (axis == rank - 1) return eg_htp_op(L, EG_HTP_QNN_OP_SOFTMAX, &in, 1, &out, 1, p, 2);
  uint32_t perm[EG_MAX_RANK], tdims[EG_MAX_RANK];
  for (int d = 0; d < rank; d++) perm[d] = (uint32_t)d;
  perm[axis] = (uint32_t)rank - 1;
  perm[rank - 1] = (uint32_t)axis;
  for (int d = 0; d < rank; d++) tdims[d] = dims[perm[d]];
  const uint32_t pd[1] = {(uint32_t)rank};
  const eg_htp_qnn_param tp = eg_htp_qnn_param_u32_tensor("perm", 1, pd, perm);
  int32_t moved, sm;
  EG_TRY(eg_htp_temp(L, "moved", EG_HTP_QNN_DTYPE_FLOAT_32, rank, tdims, &moved));
  EG_TRY(eg_htp_temp(L, "softmax", EG_HTP_QNN_DTYPE_FLOAT_32, rank, tdims, &sm));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_TRANSPOSE, &in, 1, &moved, 1, &tp, 1));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_SOFTMAX, &moved, 1, &sm, 1, p, 2));
  return eg_htp_op(L, EG_HTP_QNN_OP_TRANSPOSE, &sm, 1, &out, 1, &tp, 1);
}

static eg_status softmax_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t x_id = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[x_id];
  int64_t dim = 0;
  EG_TRY(eg_arg_int(n, 1, "dim", &dim));
  EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(x), "result"));
  const int axis = eg_htp_axis(x, eg_wrap_dim(dim, x->rank));
  uint32_t dims[EG_MAX_RANK];
  eg_htp_dims(x, dims);
  int32_t in, out;
  EG_TRY(eg_htp_input(L, x_id, &in));
  EG_TRY(eg_htp_define(L, n->output, &out));
  return softmax_along(L, in, x->rank, dims, axis, out);
}

/* _safe_softmax: the softmax into a temporary, then zeros where the line's max is -inf. */
static eg_status safe_softmax_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t x_id = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[x_id];
  int64_t dim = 0;
  EG_TRY(eg_arg_int(n, 1, "dim", &dim));
  EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(x), "result"));
  const uint32_t axis = (uint32_t)eg_htp_axis(x, eg_wrap_dim(dim, x->rank));
  uint32_t dims[EG_MAX_RANK], line[EG_MAX_RANK];
  eg_htp_dims(x, dims);
  for (int d = 0; d < x->rank; d++) line[d] = d == (int)axis ? 1 : dims[d];
  int32_t in, sm, m, any, zero, ninf, out;
  EG_TRY(eg_htp_input(L, x_id, &in));
  EG_TRY(eg_htp_temp(L, "softmax_all", EG_HTP_QNN_DTYPE_FLOAT_32, x->rank, dims, &sm));
  EG_TRY(softmax_along(L, in, x->rank, dims, (int)axis, sm));
  const uint32_t ad[1] = {1};
  const eg_htp_qnn_param p[2] = {eg_htp_qnn_param_u32_tensor("axes", 1, ad, &axis),
                             eg_htp_qnn_param_bool("keep_dims", true)};
  EG_TRY(eg_htp_temp(L, "max", EG_HTP_QNN_DTYPE_FLOAT_32, x->rank, line, &m));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_REDUCE_MAX, &in, 1, &m, 1, p, 2));
  const float zv = 0.0f, nv = -INFINITY;
  EG_TRY(eg_htp_const_f32(L, "zero", 0, NULL, &zv, &zero));
  EG_TRY(eg_htp_const_f32(L, "minus_inf", 0, NULL, &nv, &ninf));
  EG_TRY(eg_htp_temp(L, "any_finite", EG_HTP_QNN_DTYPE_BOOL_8, x->rank, line, &any));
  const int32_t gt[2] = {m, ninf};
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER, gt, 2, &any, 1, NULL, 0));
  EG_TRY(eg_htp_define(L, n->output, &out));
  const int32_t sel[3] = {any, sm, zero};
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, sel, 3, &out, 1, NULL, 0);
}

static eg_status softmax_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  eg_htp_softmax_bwd s;
  EG_TRY(eg_htp_softmax_bwd_begin(L, g, n, &s));
  int32_t prod, sum, diff, out;
  EG_TRY(eg_htp_temp(L, "grad_y", EG_HTP_QNN_DTYPE_FLOAT_32, s.rank, s.dims, &prod));
  const int32_t mul[2] = {s.gy, s.y};
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, &prod, 1, NULL, 0));
  EG_TRY(eg_htp_softmax_bwd_line_sum(L, &s, prod, &sum));
  EG_TRY(eg_htp_temp(L, "diff", EG_HTP_QNN_DTYPE_FLOAT_32, s.rank, s.dims, &diff));
  const int32_t sub[2] = {s.gy, sum};
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, sub, 2, &diff, 1, NULL, 0));
  EG_TRY(eg_htp_define(L, n->output, &out));
  const int32_t mul2[2] = {s.y, diff};
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul2, 2, &out, 1, NULL, 0);
}

/* ---- scaled-dot-product attention ---- */

/* What both attention ops read; `at` is query's position (0 forward, 1 backward). */
typedef struct sdpa_args {
  int32_t q, k, v, mask;  /* value ids; mask -1 for None */
  bool causal;
  float scale;
  uint32_t b, h, l, s, e; /* QNN dims */
} sdpa_args;

/* Whether value `id` is a float32 rank-4 tensor held in traced order. */
static bool qkv_ok(const eg_graph *g, int32_t id, const char *what, char *reason, size_t size) {
  if (id < 0) {
    snprintf(reason, size, "%s is not a tensor", what);
    return false;
  }
  if (!eg_htp_float_tensor_ok(g, id, reason, size)) return false;
  if (g->values[id].rank != 4) {
    snprintf(reason, size, "%s has rank %d: expected [B, H, *, E]", what, g->values[id].rank);
    return false;
  }
  return true;
}

/* Whether a mask this node reads is the [L, S]-full kind the causal merge needs (with
 * is_causal, the triangle needs both dims). */
static bool causal_mask_ok(const eg_graph *g, const sdpa_args *a, char *reason, size_t size) {
  if (!a->causal || a->mask < 0) return true;
  const eg_value *m = &g->values[a->mask];
  if (m->shape[m->rank - 2] == a->l && m->shape[m->rank - 1] == a->s) return true;
  char s[96];
  snprintf(reason, size, "attn_mask %s with is_causal: the NPU lowering merges the two into "
           "one constant and needs the mask's last two dims full ([L, S] = [%u, %u])",
           eg_fmt_ints(s, sizeof s, m->shape, m->rank), a->l, a->s);
  return false;
}

/* The constant mask (with its causal part) keeps an entry above -inf in every query row
 * (file comment); false with the first fully masked row in reason. */
static bool mask_rows_ok(const eg_graph *g, const sdpa_args *a, char *reason, size_t size) {
  const eg_value *m = &g->values[a->mask];
  const float *data = (const float *)g->statics[m->def].data;
  /* the mask's own rows: its last dim is S or 1 (broadcast), the one before L or 1 */
  const int64_t row_len = m->shape[m->rank - 1], mrows = m->shape[m->rank - 2];
  const int64_t rows = eg_value_numel(m) / row_len;
  for (int64_t r = 0; r < rows; r++) {
    const int64_t i = r % mrows; /* the query row (with is_causal, mrows is L: causal_ok) */
    bool kept = false;
    for (int64_t j = 0; j < row_len && !kept; j++)
      kept = !(a->causal && j > i) && data[r * row_len + j] != -INFINITY;
    if (!kept) {
      snprintf(reason, size, "attn_mask %s masks every key of query row %lld%s: ATen's kernel "
               "gives such a row output 0 and logsumexp 0, where the NPU's Softmax gives NaN",
               eg_value_label(g, a->mask), (long long)i, a->causal ? " (with is_causal)" : "");
      return false;
    }
  }
  return true;
}

static bool sdpa_read(const eg_graph *g, const eg_node *n, int at, sdpa_args *a, char *reason,
                      size_t size) {
  a->q = eg_htp_arg(n, at, "query");
  a->k = eg_htp_arg(n, at + 1, "key");
  a->v = eg_htp_arg(n, at + 2, "value");
  a->mask = eg_htp_arg(n, -1, "attn_mask");
  if (!qkv_ok(g, a->q, "query", reason, size) || !qkv_ok(g, a->k, "key", reason, size) ||
      !qkv_ok(g, a->v, "value", reason, size))
    return false;
  double dropout = 0.0, scale = 0.0;
  a->causal = false;
  const int dp = at == 0 ? 3 : 6;
  if (eg_arg_opt_scalar(n, dp, "dropout_p", &dropout) != EG_OK || dropout != 0.0) {
    snprintf(reason, size, "dropout_p %g: the NPU lowering runs attention without dropout",
             dropout);
    return false;
  }
  if (eg_arg_opt_bool(n, dp + 1, "is_causal", &a->causal) != EG_OK) {
    snprintf(reason, size, "argument is_causal is not a bool");
    return false;
  }
  const eg_value *q = &g->values[a->q], *k = &g->values[a->k];
  const eg_arg *sa = eg_node_arg(n, -1, "scale");
  if (sa && sa->kind != EG_ARG_NONE) {
    if (eg_arg_scalar(n, -1, "scale", &scale) != EG_OK) {
      snprintf(reason, size, "argument scale is not a number");
      return false;
    }
  } else {
    scale = 1.0 / sqrt((double)q->shape[3]);
  }
  a->scale = (float)scale;
  int64_t scores = q->shape[0] * q->shape[1]; /* each dim fits a uint32 (generic gate 4) */
  if (q->shape[2] > MAX_SCORES / scores || k->shape[2] > MAX_SCORES / (scores * q->shape[2])) {
    snprintf(reason, size, "query length %lld x key length %lld over %lld heads: the NPU "
             "composite holds the scores [B, H, L, S] in one tensor of at most %d elements",
             (long long)q->shape[2], (long long)k->shape[2],
             (long long)(q->shape[0] * q->shape[1]), MAX_SCORES);
    return false;
  }
  a->b = eg_htp_qnn_dim(q->shape[0]);
  a->h = eg_htp_qnn_dim(q->shape[1]);
  a->l = eg_htp_qnn_dim(q->shape[2]);
  a->s = eg_htp_qnn_dim(k->shape[2]);
  a->e = eg_htp_qnn_dim(q->shape[3]);
  if (a->mask < 0) return true;
  const eg_value *m = &g->values[a->mask];
  if (m->role != EG_ROLE_STATIC) {
    snprintf(reason, size, "attn_mask %s is computed at run time: a query row it masks "
             "entirely gets output 0 and logsumexp 0 from ATen's kernel, NaN from the NPU's "
             "Softmax, and only a constant mask can be checked row by row",
             eg_value_label(g, a->mask));
    return false;
  }
  return eg_htp_float_tensor_ok(g, a->mask, reason, size) && causal_mask_ok(g, a, reason, size) &&
         mask_rows_ok(g, a, reason, size);
}

/* The STATIC additive mask M (file comment) into *out, or -1 when there is none. Its shape is
 * attn_mask's as [Bm, Hm, L, S] (rank 2 [L, S] without a mask or for an [L, S] one). */
static eg_status additive_mask(eg_htp_lower *L, const eg_graph *g, const sdpa_args *a,
                               int32_t *out) {
  *out = -1;
  if (a->mask < 0 && !a->causal) return EG_OK;
  const eg_value *m = a->mask >= 0 ? &g->values[a->mask] : NULL;
  uint32_t dims[4] = {a->l, a->s, 1, 1};
  int rank = 2;
  if (m) {
    rank = m->rank;
    eg_htp_dims(m, dims);
  }
  const int64_t n = m ? eg_value_numel(m) : (int64_t)a->l * a->s;
  float *buf = malloc((size_t)n * sizeof *buf);
  if (!buf) return eg_error(EG_ERR_NOMEM, "lowering attention: out of memory (a mask of %lld "
                            "elements)", (long long)n);
  const int64_t row_len = dims[rank - 1], mrows = dims[rank - 2];
  for (int64_t e = 0; e < n; e++) {
    const int64_t i = e / row_len % mrows, j = e % row_len;
    float v = m ? ((const float *)g->statics[m->def].data)[e] : 0.0f;
    if (a->causal && j > i) v = -INFINITY;
    buf[e] = v;
  }
  eg_status st = eg_htp_const_f32(L, "mask", rank, dims, buf, out);
  free(buf);
  return st;
}

/* s = MatMul(q, k, transpose_in1) * scale [+ M] into a new temporary [B, H, L, S]. */
static eg_status scores(eg_htp_lower *L, const eg_graph *g, const sdpa_args *a, int32_t q,
                        int32_t k, int32_t *s) {
  const uint32_t sd[4] = {a->b, a->h, a->l, a->s};
  const eg_htp_qnn_param t1 = eg_htp_qnn_param_bool("transpose_in1", true);
  int32_t qk, sc, scale, mask;
  EG_TRY(eg_htp_temp(L, "qk", EG_HTP_QNN_DTYPE_FLOAT_32, 4, sd, &qk));
  const int32_t mm[2] = {q, k};
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, mm, 2, &qk, 1, &t1, 1));
  EG_TRY(eg_htp_const_f32(L, "scale", 0, NULL, &a->scale, &scale));
  EG_TRY(eg_htp_temp(L, "scores", EG_HTP_QNN_DTYPE_FLOAT_32, 4, sd, &sc));
  const int32_t mul[2] = {qk, scale};
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, &sc, 1, NULL, 0));
  EG_TRY(additive_mask(L, g, a, &mask));
  if (mask < 0) {
    *s = sc;
    return EG_OK;
  }
  EG_TRY(eg_htp_temp(L, "masked_scores", EG_HTP_QNN_DTYPE_FLOAT_32, 4, sd, s));
  const int32_t add[2] = {sc, mask};
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, add, 2, s, 1, NULL, 0);
}

/* An op of `n_in` inputs into a new float temporary [B, H, x, y] (dims `d`). */
static eg_status op4(eg_htp_lower *L, eg_htp_qnn_op op, const int32_t *in, int n_in,
                     const char *what, const uint32_t *d, const eg_htp_qnn_param *p, int n_p,
                     int32_t *out) {
  EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, d, out));
  return eg_htp_op(L, op, in, n_in, out, 1, p, n_p);
}

static bool sdpa_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                          size_t size) {
  (void)t;
  sdpa_args a;
  if (!sdpa_read(g, n, 0, &a, reason, size)) return false;
  const eg_value *y = &g->values[n->output];
  if (y->kind != EG_VALUE_TUPLE || y->n_elems != 2 || y->elems[0] < 0 || y->elems[1] < 0) {
    snprintf(reason, size, "the result is not an (output, logsumexp) pair");
    return false;
  }
  return eg_htp_float_tensor_ok(g, y->elems[0], reason, size) &&
         eg_htp_float_tensor_ok(g, y->elems[1], reason, size);
}

/* logsumexp [B, H, L] of the scores s into IR value lse_v (file comment). */
static eg_status logsumexp(eg_htp_lower *L, const sdpa_args *a, int32_t s, int32_t lse_v) {
  static const uint32_t axis3[1] = {3};
  const uint32_t sd[4] = {a->b, a->h, a->l, a->s}, rd[4] = {a->b, a->h, a->l, 1}, ad[1] = {1};
  const eg_htp_qnn_param p[2] = {eg_htp_qnn_param_u32_tensor("axes", 1, ad, axis3),
                             eg_htp_qnn_param_bool("keep_dims", true)};
  int32_t m, d, e, sum, lg, lse4, out;
  EG_TRY(op4(L, EG_HTP_QNN_OP_REDUCE_MAX, &s, 1, "row_max", rd, p, 2, &m));
  const int32_t sub[2] = {s, m};
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, sub, 2, "shifted", sd, NULL, 0, &d));
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_EXP, &d, 1, "shifted_exp", sd, NULL, 0, &e));
  EG_TRY(op4(L, EG_HTP_QNN_OP_REDUCE_SUM, &e, 1, "row_sum", rd, p, 2, &sum));
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_LOG, &sum, 1, "row_log", rd, NULL, 0, &lg));
  const int32_t add[2] = {m, lg};
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, add, 2, "lse4", rd, NULL, 0, &lse4));
  EG_TRY(eg_htp_define(L, lse_v, &out));
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &lse4, 1, &out, 1, NULL, 0);
}

static eg_status sdpa_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  sdpa_args a;
  char why[8];
  sdpa_read(g, n, 0, &a, why, sizeof why);
  const int32_t out_v = g->values[n->output].elems[0], lse_v = g->values[n->output].elems[1];
  const uint32_t sd[4] = {a.b, a.h, a.l, a.s};
  int32_t q, k, v, s, p, out;
  EG_TRY(eg_htp_input(L, a.q, &q));
  EG_TRY(eg_htp_input(L, a.k, &k));
  EG_TRY(eg_htp_input(L, a.v, &v));
  EG_TRY(scores(L, g, &a, q, k, &s));
  const eg_htp_qnn_param sp[2] = {eg_htp_qnn_param_u32("axis", 3), eg_htp_qnn_param_f32("beta", 1.0f)};
  EG_TRY(op4(L, EG_HTP_QNN_OP_SOFTMAX, &s, 1, "probs", sd, sp, 2, &p));
  EG_TRY(eg_htp_define(L, out_v, &out));
  const int32_t mm[2] = {p, v};
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, mm, 2, &out, 1, NULL, 0));
  return eg_htp_elem_used(g, n, 1) ? logsumexp(L, &a, s, lse_v) : EG_OK;
}

static bool sdpa_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                   char *reason, size_t size) {
  (void)t;
  sdpa_args a;
  if (!sdpa_read(g, n, 1, &a, reason, size) ||
      !qkv_ok(g, eg_htp_arg(n, 0, "grad_out"), "grad_out", reason, size) ||
      !qkv_ok(g, eg_htp_arg(n, 4, "out"), "out", reason, size))
    return false;
  const int32_t lse = eg_htp_arg(n, 5, "logsumexp");
  if (lse < 0 || !eg_htp_float_tensor_ok(g, lse, reason, size)) {
    if (lse < 0) snprintf(reason, size, "logsumexp is not a tensor");
    return false;
  }
  const eg_value *y = &g->values[n->output];
  if (y->kind != EG_VALUE_TUPLE || y->n_elems != 3) {
    snprintf(reason, size, "the result is not a (grad_query, grad_key, grad_value) triple");
    return false;
  }
  for (int i = 0; i < 3; i++)
    if (y->elems[i] >= 0 && !eg_htp_float_tensor_ok(g, y->elems[i], reason, size)) return false;
  return true;
}

/* Defines tuple element `i` of node n as op(in) when it is read; `p` its params. */
static eg_status grad_elem(eg_htp_lower *L, const eg_graph *g, const eg_node *n, int i,
                           const int32_t *in, const eg_htp_qnn_param *p, int n_p) {
  if (!eg_htp_elem_used(g, n, i)) return EG_OK;
  int32_t out;
  EG_TRY(eg_htp_define(L, g->values[n->output].elems[i], &out));
  return eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, in, 2, &out, 1, p, n_p);
}

static eg_status sdpa_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  sdpa_args a;
  char why[8];
  sdpa_read(g, n, 1, &a, why, sizeof why);
  const uint32_t sd[4] = {a.b, a.h, a.l, a.s}, rd[4] = {a.b, a.h, a.l, 1},
                 od[4] = {a.b, a.h, a.l, a.e}, ad[1] = {1};
  static const uint32_t axis3[1] = {3};
  int32_t go, q, k, v, o, lse, s, lse4, d, p, dp, prod, rowdot, diff, ds, dss, scale;
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 0, "grad_out"), &go));
  EG_TRY(eg_htp_input(L, a.q, &q));
  EG_TRY(eg_htp_input(L, a.k, &k));
  EG_TRY(eg_htp_input(L, a.v, &v));
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 4, "out"), &o));
  EG_TRY(eg_htp_input(L, eg_htp_arg(n, 5, "logsumexp"), &lse));
  EG_TRY(scores(L, g, &a, q, k, &s));
  EG_TRY(op4(L, EG_HTP_QNN_OP_RESHAPE, &lse, 1, "lse4", rd, NULL, 0, &lse4));
  const int32_t sub[2] = {s, lse4};
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, sub, 2, "log_probs", sd, NULL, 0, &d));
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_EXP, &d, 1, "probs", sd, NULL, 0, &p));
  const eg_htp_qnn_param t0 = eg_htp_qnn_param_bool("transpose_in0", true),
                     t1 = eg_htp_qnn_param_bool("transpose_in1", true);
  const int32_t dv_in[2] = {p, go};
  EG_TRY(grad_elem(L, g, n, 2, dv_in, &t0, 1));
  if (!eg_htp_elem_used(g, n, 0) && !eg_htp_elem_used(g, n, 1)) return EG_OK;
  const int32_t dp_in[2] = {go, v};
  EG_TRY(op4(L, EG_HTP_QNN_OP_MAT_MUL, dp_in, 2, "grad_probs", sd, &t1, 1, &dp));
  const int32_t mul[2] = {go, o};
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, "grad_out_out", od, NULL, 0, &prod));
  const eg_htp_qnn_param rp[2] = {eg_htp_qnn_param_u32_tensor("axes", 1, ad, axis3),
                              eg_htp_qnn_param_bool("keep_dims", true)};
  EG_TRY(op4(L, EG_HTP_QNN_OP_REDUCE_SUM, &prod, 1, "row_dot", rd, rp, 2, &rowdot));
  const int32_t sub2[2] = {dp, rowdot};
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, sub2, 2, "grad_probs_centred", sd, NULL, 0,
             &diff));
  const int32_t mul2[2] = {p, diff};
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul2, 2, "grad_scores", sd, NULL, 0, &ds));
  EG_TRY(eg_htp_const_f32(L, "grad_scale", 0, NULL, &a.scale, &scale));
  const int32_t mul3[2] = {ds, scale};
  EG_TRY(op4(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul3, 2, "grad_qk", sd, NULL, 0, &dss));
  const int32_t dq_in[2] = {dss, k}, dk_in[2] = {dss, q};
  EG_TRY(grad_elem(L, g, n, 0, dq_in, NULL, 0));
  return grad_elem(L, g, n, 1, dk_in, &t0, 1);
}

const eg_htp_builder eg_htp_builder__softmax = {
    "aten._softmax -> [Transpose +] Softmax [+ Transpose]", 0, softmax_supports,
    softmax_lower};
const eg_htp_builder eg_htp_builder__safe_softmax = {
    "aten._safe_softmax -> [Transpose +] Softmax [+ Transpose] + ReduceMax + "
    "ElementWiseGreater + ElementWiseSelect", 0, softmax_supports, safe_softmax_lower};
const eg_htp_builder eg_htp_builder__softmax_backward_data = {
    "aten._softmax_backward_data -> ElementWiseMultiply + ReduceSum + ElementWiseSubtract + "
    "ElementWiseMultiply", 0, eg_htp_softmax_bwd_supports, softmax_backward_lower};
const eg_htp_builder eg_htp_builder_sdpa_flash = {
    "aten._scaled_dot_product_flash_attention_for_cpu -> MatMul + ElementWiseMultiply "
    "[+ ElementWiseAdd] + Softmax + MatMul [+ ReduceMax + ElementWiseSubtract + ElementWiseExp "
    "+ ReduceSum + ElementWiseLog + ElementWiseAdd + Reshape]", 0, sdpa_supports, sdpa_lower};
const eg_htp_builder eg_htp_builder_sdpa_flash_backward = {
    "aten._scaled_dot_product_flash_attention_for_cpu_backward -> MatMul + ElementWiseMultiply "
    "[+ ElementWiseAdd] + Reshape + ElementWiseSubtract + ElementWiseExp + MatMul x 4 + "
    "ReduceSum + ElementWiseMultiply", 0, sdpa_backward_supports, sdpa_backward_lower};
