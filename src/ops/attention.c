/* attention.c — scaled-dot-product attention as PyTorch 2's make_fx traces
 * F.scaled_dot_product_attention on the CPU, fp32 (kernels/attention_f32.h). ops.def calls the
 * fused pair sdpa_flash and sdpa_flash_backward:
 *
 *   _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p=0.,
 *       is_causal=False, *, attn_mask=None, scale=None)         -> (output, logsumexp)
 *   _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out,
 *       logsumexp, dropout_p, is_causal, *, attn_mask=None, scale=None)
 *                                                               -> (grad_query, grad_key,
 *                                                                   grad_value)
 *   _safe_softmax(self, dim, dtype=None)                        -> self's shape
 *
 * Rules (ATen 2.13's, made strict where its kernel reads whatever memory the shapes point at):
 * query [B, H, L, E], key and value [B, H, S, E]: the same B and H, the same S for key and
 * value, and one head dim E for all three (ATen's fused kernel takes no other; the traced graph
 * of a value with another head dim has the unfused form, bmm and _safe_softmax, instead).
 * S >= 1 and E >= 1 (ATen's kernel divides by zero on S == 0). output is [B, H, L, E] and
 * logsumexp [B, H, L] (ATen keeps logsumexp's memory in [B, L, H] order behind that shape;
 * edgegrad's values are dense, so the graph holds it as [B, H, L]). grad_out and out are
 * [B, H, L, E], logsumexp [B, H, L]; the gradients are shaped like query, key and value.
 *   attn_mask: float32, like the query (F.scaled_dot_product_attention turns a bool mask into
 *     this float form, 0 where True and -inf where False, before the op); [L, S] or
 *     [B, H, L, S], each dim 1 or the full size (broadcast); added to scale * q . k.
 *   is_causal: key j > query i is masked (top-left aligned, also when L != S), on top of
 *     attn_mask.
 *   scale: None is 1/sqrt(E); a given scale may be any finite number (ATen computes 0 and
 *     negative scales too; an infinite or NaN one only gives NaNs).
 *   dropout_p: 0 only. edgegrad draws dropout masks as explicit graph inputs, never inside an
 *     op (and ATen's CPU kernel refuses dropout as well).
 * A fully masked query row gives output 0 and logsumexp 0, as ATen's kernel does, and zero
 * gradients. The backward uses the out and logsumexp it is given, as ATen's does.
 * _safe_softmax is the softmax of the unfused attention: a line whose inputs are all -inf gives
 * zeros, not NaN. dtype must be None or float32 (the input's). */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "kernels/attention_f32.h"
#include "ops/op.h"
#include "util/checked.h"

typedef struct eg_sdpa_attrs {
  eg_attention_params p;
} eg_sdpa_attrs;
EG_ATTRS_FIT(eg_sdpa_attrs);

/* A float32 tensor argument of rank `rank` (0: any rank). */
static eg_status arg_f32(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                         int rank, const eg_value **out) {
  EG_TRY(eg_arg_tensor(g, n, pos, kw, out));
  const eg_value *v = *out;
  if (v->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument %s (#%d) dtype %s: %s supports "
                         "float32 only", kw, pos, eg_dtype_name(v->dtype), eg_op_target(n->op));
  if (rank && v->rank != rank) {
    char s[160];
    return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) %s has rank %d: expected %d "
                         "dims", kw, pos, eg_fmt_ints(s, sizeof s, v->shape, v->rank), v->rank,
                         rank);
  }
  return EG_OK;
}

/* `v` (argument `what`) must have exactly `shape`. */
static eg_status need_shape(const eg_node *n, const char *what, const eg_value *v, int rank,
                            const int64_t *shape, const char *rule) {
  if (v->rank == rank && memcmp(v->shape, shape, sizeof(int64_t) * (size_t)rank) == 0)
    return EG_OK;
  char a[160], b[160];
  return eg_node_error(n, EG_ERR_INVALID, "%s %s: expected %s (%s)", what,
                       eg_fmt_ints(a, sizeof a, v->shape, v->rank),
                       eg_fmt_ints(b, sizeof b, shape, rank), rule);
}

/* query, key, value at positions pos..pos+2: the problem's sizes into p. */
static eg_status check_qkv(const eg_graph *g, const eg_node *n, int pos, eg_attention_params *p,
                           const eg_value **q_out, const eg_value **k_out,
                           const eg_value **v_out) {
  const eg_value *q, *k, *v;
  EG_TRY(arg_f32(g, n, pos, "query", 4, &q));
  EG_TRY(arg_f32(g, n, pos + 1, "key", 4, &k));
  EG_TRY(arg_f32(g, n, pos + 2, "value", 4, &v));
  const int64_t kv[4] = {q->shape[0], q->shape[1], k->shape[2], q->shape[3]};
  EG_TRY(need_shape(n, "key", k, 4, kv, "query [B, H, L, E] needs key [B, H, S, E]"));
  EG_TRY(need_shape(n, "value", v, 4, kv, "key [B, H, S, E] needs value [B, H, S, E]: one "
                    "head dim for query, key and value"));
  char sq[160], sk[160];
  if (k->shape[2] == 0 || q->shape[3] == 0)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "key %s: a key length or head dim of 0 leaves "
                         "nothing to attend to (ATen's kernel divides by zero)",
                         eg_fmt_ints(sk, sizeof sk, k->shape, 4));
  if (q->shape[2] > INT_MAX || k->shape[2] > INT_MAX || q->shape[3] > INT_MAX)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "query %s, key %s: lengths and head dim must "
                         "fit an int (CBLAS)", eg_fmt_ints(sq, sizeof sq, q->shape, 4),
                         eg_fmt_ints(sk, sizeof sk, k->shape, 4));
  int64_t scores;
  if (!eg_mul_overflow_i64(q->shape[2], k->shape[2], &scores) || scores > EG_MAX_NUMEL / 4)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "query length %lld x key length %lld: the "
                         "score matrix is too large", (long long)q->shape[2],
                         (long long)k->shape[2]);
  p->problems = q->shape[0] * q->shape[1];
  p->heads = q->shape[1];
  p->l = q->shape[2];
  p->s = k->shape[2];
  p->e = q->shape[3];
  *q_out = q;
  *k_out = k;
  *v_out = v;
  return EG_OK;
}

/* attn_mask: none, or float32 [L, S] / [B, H, L, S] broadcast to the scores; its strides. */
static eg_status check_mask(const eg_graph *g, const eg_node *n, const eg_value *q,
                            eg_attention_params *p) {
  const eg_value *m;
  EG_TRY(eg_arg_opt_tensor(g, n, -1, "attn_mask", &m));
  p->mask_sb = p->mask_sh = p->mask_si = p->mask_sj = 0;
  if (!m) return EG_OK;
  char a[160], b[160];
  if (m->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "attn_mask dtype %s: the mask must be float32 "
                         "like the query (F.scaled_dot_product_attention passes a bool mask "
                         "as 0 and -inf)", eg_dtype_name(m->dtype));
  if (m->rank != 2 && m->rank != 4)
    return eg_node_error(n, EG_ERR_INVALID, "attn_mask %s has rank %d: expected [L, S] or "
                         "[B, H, L, S]", eg_fmt_ints(a, sizeof a, m->shape, m->rank), m->rank);
  const int64_t full[4] = {q->shape[0], q->shape[1], p->l, p->s};
  int64_t *stride[4] = {&p->mask_sb, &p->mask_sh, &p->mask_si, &p->mask_sj};
  int64_t next = 1;
  for (int d = 3, md = m->rank - 1; md >= 0; d--, md--) {
    if (m->shape[md] != full[d] && m->shape[md] != 1)
      return eg_node_error(n, EG_ERR_INVALID, "attn_mask %s does not broadcast to the scores "
                           "[B, H, L, S] = %s: each dim must be 1 or the full size",
                           eg_fmt_ints(a, sizeof a, m->shape, m->rank),
                           eg_fmt_ints(b, sizeof b, full, 4));
    *stride[d] = m->shape[md] == 1 ? 0 : next;
    next *= m->shape[md];
  }
  return EG_OK;
}

/* dropout_p (which must be 0), is_causal, scale and attn_mask into p. */
static eg_status check_options(const eg_graph *g, const eg_node *n, int pos, bool required,
                               const eg_value *q, eg_attention_params *p) {
  double dropout = 0.0, scale = 0.0;
  bool causal = false;
  EG_TRY(required ? eg_arg_scalar(n, pos, "dropout_p", &dropout)
                  : eg_arg_opt_scalar(n, pos, "dropout_p", &dropout));
  if (dropout != 0.0)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument dropout_p (#%d) is %g: edgegrad runs "
                         "attention without dropout (dropout masks are explicit graph inputs; "
                         "export with dropout_p=0)", pos, dropout);
  EG_TRY(required ? eg_arg_bool(n, pos + 1, "is_causal", &causal)
                  : eg_arg_opt_bool(n, pos + 1, "is_causal", &causal));
  const eg_arg *a = eg_node_arg(n, -1, "scale");
  if (a && a->kind != EG_ARG_NONE) {
    EG_TRY(eg_arg_scalar(n, -1, "scale", &scale));
    if (!isfinite(scale) || fabs(scale) > 3.4028234663852886e38)
      return eg_node_error(n, EG_ERR_INVALID, "argument scale is %g: expected a finite float32",
                           scale);
  } else {
    scale = 1.0 / sqrt((double)p->e);
  }
  p->scale = (float)scale;
  p->causal = causal;
  return check_mask(g, n, q, p);
}

/* ---- _scaled_dot_product_flash_attention_for_cpu ---- */

eg_status eg_check_sdpa_flash(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"query",     "key",       "value", "dropout_p",
                                      "is_causal", "attn_mask", "scale", NULL};
  eg_attention_params *p = &EG_ATTRS(n, eg_sdpa_attrs)->p;
  memset(p, 0, sizeof *p);
  EG_TRY(eg_node_check_arity(n, 3, 5, known));
  const eg_value *q, *k, *v;
  EG_TRY(check_qkv(g, n, 0, p, &q, &k, &v));
  EG_TRY(check_options(g, n, 3, false, q, p));
  n->scratch_bytes = eg_attention_scratch_bytes(p);
  EG_TRY(eg_out_tuple(g, n, 2));
  EG_TRY(eg_out_elem(g, n, 0, true, EG_DTYPE_FLOAT32, 4, q->shape));
  return eg_out_elem(g, n, 1, true, EG_DTYPE_FLOAT32, 3, q->shape);
}

eg_status eg_run_sdpa_flash(const eg_exec *ex, const eg_node *n) {
  const eg_attention_io io = {
      .q = eg_exec_arg(ex, n, 0, "query"),
      .k = eg_exec_arg(ex, n, 1, "key"),
      .v = eg_exec_arg(ex, n, 2, "value"),
      .mask = eg_exec_arg(ex, n, -1, "attn_mask"),
      .out = eg_exec_elem(ex, n, 0),
      .lse = eg_exec_elem(ex, n, 1),
  };
  eg_attention_f32(&EG_ATTRS(n, const eg_sdpa_attrs)->p, &io, ex->scratch);
  return EG_OK;
}

/* ---- _scaled_dot_product_flash_attention_for_cpu_backward ---- */

eg_status eg_check_sdpa_flash_backward(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_out",  "query",     "key",       "value",
                                      "out",       "logsumexp", "dropout_p", "is_causal",
                                      "attn_mask", "scale",     NULL};
  eg_attention_params *p = &EG_ATTRS(n, eg_sdpa_attrs)->p;
  memset(p, 0, sizeof *p);
  EG_TRY(eg_node_check_arity(n, 8, 8, known));
  const eg_value *gy, *q, *k, *v, *out, *lse;
  EG_TRY(check_qkv(g, n, 1, p, &q, &k, &v));
  EG_TRY(arg_f32(g, n, 0, "grad_out", 0, &gy));
  EG_TRY(arg_f32(g, n, 4, "out", 0, &out));
  EG_TRY(arg_f32(g, n, 5, "logsumexp", 0, &lse));
  EG_TRY(need_shape(n, "grad_out", gy, 4, q->shape, "the forward's output shape"));
  EG_TRY(need_shape(n, "out", out, 4, q->shape, "the forward's output shape"));
  EG_TRY(need_shape(n, "logsumexp", lse, 3, q->shape, "[B, H, L] of query [B, H, L, E]"));
  EG_TRY(check_options(g, n, 6, true, q, p));
  n->scratch_bytes = eg_attention_backward_scratch_bytes(p);
  EG_TRY(eg_out_tuple(g, n, 3));
  EG_TRY(eg_out_elem(g, n, 0, true, EG_DTYPE_FLOAT32, 4, q->shape));
  EG_TRY(eg_out_elem(g, n, 1, true, EG_DTYPE_FLOAT32, 4, k->shape));
  return eg_out_elem(g, n, 2, true, EG_DTYPE_FLOAT32, 4, v->shape);
}

eg_status eg_run_sdpa_flash_backward(const eg_exec *ex, const eg_node *n) {
  const eg_attention_backward_io io = {
      .gout = eg_exec_arg(ex, n, 0, "grad_out"),
      .q = eg_exec_arg(ex, n, 1, "query"),
      .k = eg_exec_arg(ex, n, 2, "key"),
      .v = eg_exec_arg(ex, n, 3, "value"),
      .out = eg_exec_arg(ex, n, 4, "out"),
      .lse = eg_exec_arg(ex, n, 5, "logsumexp"),
      .mask = eg_exec_arg(ex, n, -1, "attn_mask"),
      .gq = eg_exec_elem(ex, n, 0),
      .gk = eg_exec_elem(ex, n, 1),
      .gv = eg_exec_elem(ex, n, 2),
  };
  eg_attention_backward_f32(&EG_ATTRS(n, const eg_sdpa_attrs)->p, &io, ex->scratch);
  return EG_OK;
}

/* ---- _safe_softmax ---- */

typedef struct eg_safe_softmax_attrs {
  int64_t outer, dim, inner;
} eg_safe_softmax_attrs;
EG_ATTRS_FIT(eg_safe_softmax_attrs);

eg_status eg_check__safe_softmax(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "dim", "dtype", NULL};
  EG_TRY(eg_node_check_arity(n, 2, 3, known));
  const eg_value *x;
  EG_TRY(arg_f32(g, n, 0, "self", 0, &x));
  int64_t dim;
  EG_TRY(eg_arg_int(n, 1, "dim", &dim));
  const int d = eg_wrap_dim(dim, x->rank);
  if (d < 0)
    return eg_node_error(n, EG_ERR_INVALID, "argument dim (#1) is %lld: out of range for rank "
                         "%d", (long long)dim, x->rank);
  eg_dtype dtype = x->dtype;
  EG_TRY(eg_arg_opt_dtype(n, 2, "dtype", &dtype));
  if (dtype != x->dtype)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument dtype (#2) is %s for a %s input: "
                         "only the input's dtype is supported", eg_dtype_name(dtype),
                         eg_dtype_name(x->dtype));
  eg_safe_softmax_attrs *at = EG_ATTRS(n, eg_safe_softmax_attrs);
  at->outer = at->inner = 1;
  at->dim = x->rank ? x->shape[d] : 1;
  for (int i = 0; i < d; i++) at->outer *= x->shape[i];
  for (int i = d + 1; i < x->rank; i++) at->inner *= x->shape[i];
  return eg_out_tensor(g, n, x->dtype, x->rank, x->shape);
}

eg_status eg_run__safe_softmax(const eg_exec *ex, const eg_node *n) {
  const eg_safe_softmax_attrs *at = EG_ATTRS(n, const eg_safe_softmax_attrs);
  eg_safe_softmax_f32(eg_exec_arg(ex, n, 0, "self"), eg_exec_out(ex, n), at->outer, at->dim,
                      at->inner);
  return EG_OK;
}
