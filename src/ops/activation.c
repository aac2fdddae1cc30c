/* activation.c — pointwise activations and their backwards, fp32, on the kernels of
 * src/kernels/activation_f32.h.
 *
 *   hardtanh(self, min_val=-1, max_val=1)                  (ReLU6 is hardtanh(x, 0, 6))
 *   hardtanh_backward(grad_output, self, min_val, max_val)
 *   clamp(self, min=None, max=None)    clamp_min(self, min)    clamp_max(self, max)
 *   sigmoid(self)        sigmoid_backward(grad_output, output)
 *   tanh(self)           tanh_backward(grad_output, output)
 *   silu(self)           silu_backward(grad_output, self)
 *   hardswish(self)      hardswish_backward(grad_output, self)
 *   hardsigmoid(self)    hardsigmoid_backward(grad_output, self)
 *   gelu(self, *, approximate='none')    gelu_backward(grad_output, self, *, approximate='none')
 *
 * Rules (ATen's): the forwards keep self's shape; the backwards are binary TensorIterator ops,
 * so their two tensors broadcast (NumPy rules) and the result has the broadcast shape. Only
 * float32 is supported (an integer or other float dtype is EG_ERR_UNSUPPORTED at check time);
 * min_val/max_val and clamp's bounds are rounded to float as ATen's Scalar-to-float conversion
 * does; clamp needs at least one bound, and a missing one is -inf / +inf (the same result:
 * NaN stays NaN, min > max gives max everywhere). gelu and its backward take approximate
 * 'none' (the erf form, the default) or 'tanh' (the tanh form); another value or a None is
 * refused. A backward
 * operand that is smaller than the result is first expanded into scratch (eg_strided_copy with
 * stride 0), so the kernels only ever see dense, equal-length arrays. */
#include <math.h>
#include <string.h>

#include "kernels/activation_f32.h"
#include "kernels/strided_copy.h"
#include "ops/op.h"

/* hardtanh's and clamp's bounds. */
typedef struct eg_hardtanh_attrs {
  float lo, hi;
} eg_hardtanh_attrs;
EG_ATTRS_FIT(eg_hardtanh_attrs);

typedef void (*eg_unary_f32)(int64_t n, const float *x, float *y);
typedef void (*eg_binary_f32)(int64_t n, const float *a, const float *b, float *y);

/* Scratch of one expanded operand, rounded up so the next one stays 64-byte aligned. */
static size_t expanded_bytes(const eg_value *out) {
  return ((size_t)eg_value_numel(out) * sizeof(float) + 63) & ~(size_t)63;
}

static eg_status need_f32(const eg_node *n, const char *what, const eg_value *v) {
  if (v->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "%s dtype %s: %s runs in float32 only", what,
                         eg_dtype_name(v->dtype), eg_op_target(n->op));
  return EG_OK;
}

/* self (float32) -> output of the same shape. */
static eg_status check_unary(eg_graph *g, eg_node *n, int max_pos, const char *const *kw) {
  const eg_value *x;
  EG_TRY(eg_node_check_arity(n, 1, max_pos, kw));
  EG_TRY(eg_arg_tensor(g, n, 0, kw[0], &x));
  EG_TRY(need_f32(n, kw[0], x));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, x->rank, x->shape);
}

/* (grad_output, other) float32, broadcast together; scratch for each operand to expand. */
static eg_status check_binary(eg_graph *g, eg_node *n, int max_pos, const char *const *kw) {
  const eg_value *a, *b;
  EG_TRY(eg_node_check_arity(n, 2, max_pos, kw));
  EG_TRY(eg_arg_tensor(g, n, 0, kw[0], &a));
  EG_TRY(eg_arg_tensor(g, n, 1, kw[1], &b));
  EG_TRY(need_f32(n, kw[0], a));
  EG_TRY(need_f32(n, kw[1], b));
  int64_t s[EG_MAX_RANK];
  int r;
  char sa[160], sb[160];
  if (!eg_broadcast_shapes(a->shape, a->rank, b->shape, b->rank, s, &r))
    return eg_node_error(n, EG_ERR_INVALID, "%s shape %s and %s shape %s: not broadcastable",
                         kw[0], eg_fmt_ints(sa, sizeof sa, a->shape, a->rank), kw[1],
                         eg_fmt_ints(sb, sizeof sb, b->shape, b->rank));
  EG_TRY(eg_out_tensor(g, n, EG_DTYPE_FLOAT32, r, s));
  const eg_value *out = &g->values[n->output];
  n->scratch_bytes = (eg_value_numel(a) != eg_value_numel(out) ? expanded_bytes(out) : 0) +
                     (eg_value_numel(b) != eg_value_numel(out) ? expanded_bytes(out) : 0);
  return EG_OK;
}

/* The operand as a dense array of the output's shape: its own buffer when it has as many
 * elements (the shapes then differ only in extent-1 dims, so the layout is the same), else
 * expanded into *scratch, which advances. */
static const float *operand(const eg_value *v, const float *data, const eg_value *out,
                            char **scratch) {
  if (eg_value_numel(v) == eg_value_numel(out)) return data;
  eg_strided_copy_params p = {.rank = out->rank, .elsize = sizeof(float)};
  memcpy(p.shape, out->shape, sizeof(int64_t) * (size_t)out->rank);
  eg_dense_strides(out->shape, out->rank, p.dst_stride);
  int64_t own[EG_MAX_RANK];
  eg_dense_strides(v->shape, v->rank, own);
  const int lead = out->rank - v->rank;
  for (int d = 0; d < out->rank; d++)
    p.src_stride[d] = d < lead || v->shape[d - lead] == 1 ? 0 : own[d - lead];
  float *dense = (float *)(void *)*scratch;
  eg_strided_copy(dense, data, &p);
  *scratch += expanded_bytes(out);
  return dense;
}

static void run_unary(const eg_exec *ex, const eg_node *n, eg_unary_f32 fn) {
  fn(eg_value_numel(eg_exec_outv(ex, n)), eg_exec_arg(ex, n, 0, "self"), eg_exec_out(ex, n));
}

/* Dense views of the two backward operands, expanded to the output's shape when needed. */
static void binary_operands(const eg_exec *ex, const eg_node *n, const char *const *kw,
                            const float **a, const float **b) {
  const eg_value *out = eg_exec_outv(ex, n);
  char *scratch = ex->scratch;
  *a = operand(eg_exec_argv(ex, n, 0, kw[0]), eg_exec_arg(ex, n, 0, kw[0]), out, &scratch);
  *b = operand(eg_exec_argv(ex, n, 1, kw[1]), eg_exec_arg(ex, n, 1, kw[1]), out, &scratch);
}

static void run_binary(const eg_exec *ex, const eg_node *n, const char *const *kw,
                       eg_binary_f32 fn) {
  const float *a, *b;
  binary_operands(ex, n, kw, &a, &b);
  fn(eg_value_numel(eg_exec_outv(ex, n)), a, b, eg_exec_out(ex, n));
}

/* Reads min_val/max_val (positions lo_pos, lo_pos + 1) into float attrs. */
static eg_status hardtanh_bounds(eg_node *n, int lo_pos, bool required) {
  double lo = -1.0, hi = 1.0;
  if (required) {
    EG_TRY(eg_arg_scalar(n, lo_pos, "min_val", &lo));
    EG_TRY(eg_arg_scalar(n, lo_pos + 1, "max_val", &hi));
  } else {
    EG_TRY(eg_arg_opt_scalar(n, lo_pos, "min_val", &lo));
    EG_TRY(eg_arg_opt_scalar(n, lo_pos + 1, "max_val", &hi));
  }
  eg_hardtanh_attrs *at = EG_ATTRS(n, eg_hardtanh_attrs);
  at->lo = (float)lo;
  at->hi = (float)hi;
  return EG_OK;
}

/* ---- hardtanh ---- */

static const char *const hardtanh_kw[] = {"self", "min_val", "max_val", NULL};

eg_status eg_check_hardtanh(eg_graph *g, eg_node *n) {
  EG_TRY(check_unary(g, n, 3, hardtanh_kw));
  return hardtanh_bounds(n, 1, false);
}

eg_status eg_run_hardtanh(const eg_exec *ex, const eg_node *n) {
  const eg_hardtanh_attrs *at = EG_ATTRS(n, const eg_hardtanh_attrs);
  eg_hardtanh_f32(eg_value_numel(eg_exec_outv(ex, n)), eg_exec_arg(ex, n, 0, "self"), at->lo,
                  at->hi, eg_exec_out(ex, n));
  return EG_OK;
}

static const char *const hardtanh_bwd_kw[] = {"grad_output", "self", "min_val", "max_val",
                                              NULL};

eg_status eg_check_hardtanh_backward(eg_graph *g, eg_node *n) {
  EG_TRY(check_binary(g, n, 4, hardtanh_bwd_kw));
  return hardtanh_bounds(n, 2, true);
}

eg_status eg_run_hardtanh_backward(const eg_exec *ex, const eg_node *n) {
  const eg_hardtanh_attrs *at = EG_ATTRS(n, const eg_hardtanh_attrs);
  const float *gy, *x;
  binary_operands(ex, n, hardtanh_bwd_kw, &gy, &x);
  eg_hardtanh_backward_f32(eg_value_numel(eg_exec_outv(ex, n)), gy, x, at->lo, at->hi,
                           eg_exec_out(ex, n));
  return EG_OK;
}

/* ---- clamp, clamp_min, clamp_max: hardtanh's kernel with -inf / +inf for a missing bound ---- */

static const char *const clamp_kw[] = {"self", "min", "max", NULL};
static const char *const clamp_min_kw[] = {"self", "min", NULL};
static const char *const clamp_max_kw[] = {"self", "max", NULL};

/* Bound `kw` (position pos) into *out: required, or optional (None/missing keeps *out).
 * *given says whether a bound was there. */
static eg_status clamp_bound(eg_node *n, int pos, const char *kw, bool required, float *out,
                             bool *given) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  double v = *out;
  *given = a && a->kind != EG_ARG_NONE;
  EG_TRY(required ? eg_arg_scalar(n, pos, kw, &v) : eg_arg_opt_scalar(n, pos, kw, &v));
  *out = (float)v;
  return EG_OK;
}

/* self, then min at position lo_pos and max at hi_pos (-1: the op has no such bound), both
 * required or both optional (clamp: at least one given). */
static eg_status check_clamp_op(eg_graph *g, eg_node *n, const char *const *kw, int lo_pos,
                                int hi_pos, bool required) {
  EG_TRY(check_unary(g, n, (lo_pos > hi_pos ? lo_pos : hi_pos) + 1, kw));
  eg_hardtanh_attrs *at = EG_ATTRS(n, eg_hardtanh_attrs);
  at->lo = -INFINITY;
  at->hi = INFINITY;
  bool has_lo = false, has_hi = false;
  if (lo_pos >= 0) EG_TRY(clamp_bound(n, lo_pos, "min", required, &at->lo, &has_lo));
  if (hi_pos >= 0) EG_TRY(clamp_bound(n, hi_pos, "max", required, &at->hi, &has_hi));
  if (!has_lo && !has_hi)
    return eg_node_error(n, EG_ERR_INVALID, "min and max are both None: at least one of 'min' "
                         "or 'max' must not be None");
  return EG_OK;
}

eg_status eg_check_clamp(eg_graph *g, eg_node *n) {
  return check_clamp_op(g, n, clamp_kw, 1, 2, false);
}

eg_status eg_check_clamp_min(eg_graph *g, eg_node *n) {
  return check_clamp_op(g, n, clamp_min_kw, 1, -1, true);
}

eg_status eg_check_clamp_max(eg_graph *g, eg_node *n) {
  return check_clamp_op(g, n, clamp_max_kw, -1, 1, true);
}

eg_status eg_run_clamp(const eg_exec *ex, const eg_node *n) { return eg_run_hardtanh(ex, n); }

/* ---- the clamps and gradient masks a batch norm takes into its passes (op.h) ---- */

/* relu(x) = x < 0 ? 0 : x is hardtanh's clamp with bounds 0 and +inf, bit for bit (NaN and -0
 * pass both unchanged); hardtanh and the clamps keep their bounds in eg_hardtanh_attrs. */
bool eg_op_clamp_of(const eg_graph *g, const eg_node *n, eg_clamp *c) {
  if (n->output < 0 || g->values[n->output].dtype != EG_DTYPE_FLOAT32) return false;
  if (n->op == EG_OP_relu) {
    *c = (eg_clamp){0.0f, INFINITY};
    return true;
  }
  if (n->op != EG_OP_hardtanh && n->op != EG_OP_clamp && n->op != EG_OP_clamp_min &&
      n->op != EG_OP_clamp_max)
    return false;
  const eg_hardtanh_attrs *at = EG_ATTRS(n, const eg_hardtanh_attrs);
  *c = (eg_clamp){at->lo, at->hi};
  return true;
}

/* threshold_backward(gy, x, t) = x <= t ? 0 : gy is the mask with bounds t and NaN (x >= NaN is
 * never true); hardtanh_backward's are its own. Operands must be float32 (threshold_backward
 * computes in float32 then, eg_threshold_backward_f32) and as large as the result. */
bool eg_op_grad_mask_of(const eg_graph *g, const eg_node *n, eg_grad_mask *m) {
  float lo, hi = NAN;
  if (n->op == EG_OP_hardtanh_backward) {
    const eg_hardtanh_attrs *at = EG_ATTRS(n, const eg_hardtanh_attrs);
    lo = at->lo;
    hi = at->hi;
  } else if (n->op != EG_OP_threshold_backward || !eg_threshold_backward_f32(n, &lo)) {
    return false;
  }
  const int32_t gy = eg_exec_arg_id(n, 0, "grad_output"), x = eg_exec_arg_id(n, 1, "self");
  if (gy < 0 || x < 0 || n->output < 0) return false;
  const eg_value *out = &g->values[n->output];
  const eg_value *v[3] = {&g->values[gy], &g->values[x], out};
  for (int i = 0; i < 3; i++)
    if (v[i]->dtype != EG_DTYPE_FLOAT32 || v[i]->kind != EG_VALUE_TENSOR ||
        eg_value_numel(v[i]) != eg_value_numel(out))
      return false;
  *m = (eg_grad_mask){gy, x, lo, hi};
  return true;
}
eg_status eg_run_clamp_min(const eg_exec *ex, const eg_node *n) { return eg_run_hardtanh(ex, n); }
eg_status eg_run_clamp_max(const eg_exec *ex, const eg_node *n) { return eg_run_hardtanh(ex, n); }

/* ---- sigmoid, tanh, silu, hardswish, hardsigmoid ---- */

static const char *const self_kw[] = {"self", NULL};
static const char *const grad_output_kw[] = {"grad_output", "output", NULL};
static const char *const grad_self_kw[] = {"grad_output", "self", NULL};

/* X(name, keywords of name_backward): an activation without arguments besides its tensors, a
 * unary forward on eg_<name>_f32 and a binary backward on eg_<name>_backward_f32, whose second
 * operand is the forward's output or its input. Defines eg_check_<name>, eg_run_<name>,
 * eg_check_<name>_backward and eg_run_<name>_backward. */
#define EG_PLAIN_ACTIVATIONS(X)                                                \
  X(sigmoid, grad_output_kw) X(tanh, grad_output_kw) X(silu, grad_self_kw)     \
  X(hardswish, grad_self_kw) X(hardsigmoid, grad_self_kw)

#define EG_DEFINE_PLAIN_ACTIVATION(name, bwd_kw)                           \
  eg_status eg_check_##name(eg_graph *g, eg_node *n) {                      \
    return check_unary(g, n, 1, self_kw);                                   \
  }                                                                         \
  eg_status eg_run_##name(const eg_exec *ex, const eg_node *n) {            \
    run_unary(ex, n, eg_##name##_f32);                                      \
    return EG_OK;                                                           \
  }                                                                         \
  eg_status eg_check_##name##_backward(eg_graph *g, eg_node *n) {           \
    return check_binary(g, n, 2, bwd_kw);                                   \
  }                                                                         \
  eg_status eg_run_##name##_backward(const eg_exec *ex, const eg_node *n) { \
    run_binary(ex, n, bwd_kw, eg_##name##_backward_f32);                    \
    return EG_OK;                                                           \
  }

EG_PLAIN_ACTIVATIONS(EG_DEFINE_PLAIN_ACTIVATION)

/* ---- gelu ---- */

static const char *const gelu_kw[] = {"self", "approximate", NULL};
static const char *const gelu_bwd_kw[] = {"grad_output", "self", "approximate", NULL};

/* approximate (keyword only; ATen's str, never None), as an index of gelu_forms. */
typedef struct eg_gelu_attrs {
  int form;
} eg_gelu_attrs;
EG_ATTRS_FIT(eg_gelu_attrs);

enum { EG_GELU_ERF, EG_GELU_TANH };
static const char *const gelu_forms[] = {"none", "tanh", NULL};

static eg_status gelu_approximate(eg_node *n) {
  eg_gelu_attrs *at = EG_ATTRS(n, eg_gelu_attrs);
  at->form = EG_GELU_ERF;
  return eg_arg_choice(n, -1, "approximate", gelu_forms, false, &at->form);
}

eg_status eg_check_gelu(eg_graph *g, eg_node *n) {
  EG_TRY(check_unary(g, n, 1, gelu_kw));
  return gelu_approximate(n);
}

eg_status eg_run_gelu(const eg_exec *ex, const eg_node *n) {
  const bool tanh_form = EG_ATTRS(n, const eg_gelu_attrs)->form == EG_GELU_TANH;
  run_unary(ex, n, tanh_form ? eg_gelu_tanh_f32 : eg_gelu_f32);
  return EG_OK;
}

eg_status eg_check_gelu_backward(eg_graph *g, eg_node *n) {
  EG_TRY(check_binary(g, n, 2, gelu_bwd_kw));
  return gelu_approximate(n);
}

eg_status eg_run_gelu_backward(const eg_exec *ex, const eg_node *n) {
  const bool tanh_form = EG_ATTRS(n, const eg_gelu_attrs)->form == EG_GELU_TANH;
  run_binary(ex, n, gelu_bwd_kw, tanh_form ? eg_gelu_tanh_backward_f32 : eg_gelu_backward_f32);
  return EG_OK;
}
