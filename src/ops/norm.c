/* norm.c — batch, group and layer normalisation, fp32, on the portable CPU kernels
 * (src/kernels/batch_norm_nchw_f32.h, group_norm_nchw_f32.h, layer_norm_f32.h).
 *
 *   native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum,
 *                     eps) -> (out, save_mean, save_invstd)
 *   native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?,
 *                     save_mean?, save_invstd?, train, eps, output_mask[3])
 *                     -> (grad_input | None, grad_weight | None, grad_bias | None)
 *   _native_batch_norm_legit_functional(input, weight?, bias?, running_mean, running_var,
 *                     training, momentum, eps)
 *                     -> (out, save_mean, save_invstd, new_running_mean, new_running_var)
 *   _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var,
 *                     momentum, eps) -> (out, save_mean, save_invstd)
 *   _native_batch_norm_legit(input, weight?, bias?, running_mean, running_var, training,
 *                     momentum, eps) -> (out, save_mean, save_invstd)
 *   _native_batch_norm_legit.no_stats(input, weight?, bias?, training, momentum, eps)
 *                     -> (out, save_mean, save_invstd)
 *   native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd)
 *   native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW, group,
 *                     output_mask[3]) -> (grad_input | None, grad_weight | None, grad_bias | None)
 *   native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
 *   native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?,
 *                     output_mask[3]) -> (grad_input | None, grad_weight | None, grad_bias | None)
 *
 * Rules (ATen 1.13's, made strict where ATen reads out of bounds or crashes instead of checking):
 * batch norm input [N, C, *] of rank >= 2; weight, bias, running_mean, running_var [C] when given;
 * save_mean/save_invstd are [C] in training and [0] in eval. Eval needs both running statistics
 * (ATen 1.13 segfaults without them); training needs at least one value per channel (ATen
 * divides by zero). The backward normalises with (save_mean, save_invstd) when train and with
 * the running statistics otherwise, so those are required accordingly; grad_out has the input's
 * shape. Group norm sees its input as [N, C, HxW]: only the element count must agree; weight and
 * bias are [C]; C divisible by group; mean/rstd [N, group] (the backward accepts any shape of
 * N*group elements, as ATen does). grad_weight/grad_bias of group norm need weight (ATen takes
 * their shape from it and fails without it). Layer norm: normalized_shape (k >= 1 dims) is the
 * input's last k dims; weight and bias are shaped like it; mean/rstd are the input's shape with
 * those k dims set to 1 (the backward accepts any shape with one element per normalised row);
 * grad_weight needs weight and grad_bias needs bias (ATen allocates each like its parameter).
 *
 * torch 2's _native_batch_norm_legit* forms are native_batch_norm with other argument lists
 * and the same rules and results (checked against ATen 2.x): running statistics are required
 * where the schema has them; no_training is eval; no_stats has none, so it is training only
 * (ATen 2.x segfaults in eval). _legit_functional also returns the updated running statistics:
 * (1 - momentum) * running + momentum * batch statistic, with the unbiased variance, in
 * training; unchanged copies in eval.
 *
 * These ops are pure: native_batch_norm in training does NOT update running_mean/running_var
 * (ATen 1.13 does, in place, and its schema declares no write, so make_fx and functionalize do
 * not see it). A graph that carries the running statistics computes the new values with
 * explicit nodes after the batch norm (the exporter inserts them). Nor does
 * _native_batch_norm_legit, whose schema does declare the write: functionalize turns it into
 * _legit_functional, so a traced graph never relies on it. */
#include <stdint.h>
#include <string.h>

#include "kernels/batch_norm_nchw_f32.h"
#include "kernels/group_norm_nchw_f32.h"
#include "kernels/layer_norm_f32.h"
#include "ops/op.h"

typedef struct eg_bn_attrs {
  eg_batch_norm_params p;
  int8_t running;  /* position of running_mean (running_var follows), -1: none */
  bool functional; /* results 3, 4: the new running statistics */
} eg_bn_attrs;
EG_ATTRS_FIT(eg_bn_attrs);

typedef struct eg_gn_attrs {
  eg_group_norm_params p;
} eg_gn_attrs;
EG_ATTRS_FIT(eg_gn_attrs);

static eg_status need_f32(const eg_node *n, const char *what, const eg_value *v) {
  if (v->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "%s dtype %s: normalisation runs in float32",
                         what, eg_dtype_name(v->dtype));
  return EG_OK;
}

/* An optional per-channel vector: absent, or float32 [c]. */
static eg_status opt_channel_vec(const eg_node *n, const char *what, const eg_value *v,
                                 int64_t c) {
  if (!v) return EG_OK;
  EG_TRY(need_f32(n, what, v));
  if (v->rank != 1 || v->shape[0] != c) {
    char s[96];
    return eg_node_error(n, EG_ERR_INVALID, "%s shape %s: expected [%lld] (one per channel)",
                         what, eg_fmt_ints(s, sizeof s, v->shape, v->rank), (long long)c);
  }
  return EG_OK;
}

/* The 3-tuple every norm op returns: element 0 shaped like x (out or grad_input), elements 1
 * and 2 float32 of shape `stat` (rank stat_rank); element i is None where mask[i] is false. */
static eg_status out_norm_tuple(eg_graph *g, eg_node *n, const eg_value *x, const bool mask[3],
                                int stat_rank, const int64_t *stat) {
  EG_TRY(eg_out_tuple(g, n, 3));
  EG_TRY(eg_out_elem(g, n, 0, mask[0], EG_DTYPE_FLOAT32, x->rank, x->shape));
  EG_TRY(eg_out_elem(g, n, 1, mask[1], EG_DTYPE_FLOAT32, stat_rank, stat));
  return eg_out_elem(g, n, 2, mask[2], EG_DTYPE_FLOAT32, stat_rank, stat);
}

/* A forward's mask: all three outputs present. */
static const bool all_outputs[3] = {true, true, true};

/* grad_out of a backward: float32, shaped exactly like the input. */
static eg_status grad_like_input(const eg_node *n, const eg_value *gy, const eg_value *x) {
  EG_TRY(need_f32(n, "grad_out", gy));
  if (gy->rank == x->rank && memcmp(gy->shape, x->shape, sizeof(int64_t) * x->rank) == 0)
    return EG_OK;
  char a[96], b[96];
  return eg_node_error(n, EG_ERR_INVALID, "grad_out shape %s differs from input shape %s: they "
                       "must be equal", eg_fmt_ints(a, sizeof a, gy->shape, gy->rank),
                       eg_fmt_ints(b, sizeof b, x->shape, x->rank));
}

/* Fills p->n, c, hw from a batch-norm input [N, C, *]. */
static eg_status bn_geometry(const eg_node *n, const eg_value *x, eg_batch_norm_params *p) {
  EG_TRY(need_f32(n, "input", x));
  if (x->rank < 2)
    return eg_node_error(n, EG_ERR_INVALID, "input has rank %d: batch norm needs [N, C, *] "
                         "(rank >= 2)", x->rank);
  p->n = x->shape[0];
  p->c = x->shape[1];
  p->hw = 1;
  for (int i = 2; i < x->rank; i++)
    if (__builtin_mul_overflow(p->hw, x->shape[i], &p->hw))
      return eg_node_error(n, EG_ERR_INVALID, "input's spatial size overflows int64");
  return EG_OK;
}

/* ---- native_batch_norm and torch 2's _native_batch_norm_legit* forms ---- */

/* Where a batch-norm forward keeps its arguments: input, weight, bias are always 0, 1, 2;
 * momentum and eps are always the last two. */
typedef struct bn_form {
  const char *const *kw; /* keywords, NULL-terminated; their count is the arity */
  int arity;
  int running;       /* position of running_mean (running_var follows), -1: the op has none */
  int training;      /* position of training, -1: the op is always eval (no_training) */
  bool need_running; /* the schema's running statistics are not optional */
  bool functional;   /* 5 results: also the new running_mean and running_var */
} bn_form;

static const char *const bn_kw[] = {"input", "weight", "bias", "running_mean", "running_var",
                                    "training", "momentum", "eps", NULL};
static const char *const bn_no_training_kw[] = {"input", "weight", "bias", "running_mean",
                                                "running_var", "momentum", "eps", NULL};
static const char *const bn_no_stats_kw[] = {"input", "weight", "bias", "training", "momentum",
                                             "eps", NULL};

static const bn_form bn_native = {bn_kw, 8, 3, 5, false, false};
static const bn_form bn_legit = {bn_kw, 8, 3, 5, true, false};
static const bn_form bn_legit_functional = {bn_kw, 8, 3, 5, true, true};
static const bn_form bn_legit_no_training = {bn_no_training_kw, 7, 3, -1, true, false};
static const bn_form bn_legit_no_stats = {bn_no_stats_kw, 6, -1, 3, false, false};

static eg_status check_bn_forward(eg_graph *g, eg_node *n, const bn_form *f) {
  const eg_value *x, *w, *b, *rm = NULL, *rv = NULL;
  eg_bn_attrs *at = EG_ATTRS(n, eg_bn_attrs);
  eg_batch_norm_params *p = &at->p;
  memset(at, 0, sizeof *at);
  at->running = (int8_t)f->running;
  at->functional = f->functional;
  EG_TRY(eg_node_check_arity(n, f->arity, f->arity, f->kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "input", &x));
  EG_TRY(eg_arg_opt_tensor(g, n, 1, "weight", &w));
  EG_TRY(eg_arg_opt_tensor(g, n, 2, "bias", &b));
  if (f->running >= 0 && f->need_running) {
    EG_TRY(eg_arg_tensor(g, n, f->running, "running_mean", &rm));
    EG_TRY(eg_arg_tensor(g, n, f->running + 1, "running_var", &rv));
  } else if (f->running >= 0) {
    EG_TRY(eg_arg_opt_tensor(g, n, f->running, "running_mean", &rm));
    EG_TRY(eg_arg_opt_tensor(g, n, f->running + 1, "running_var", &rv));
  }
  if (f->training >= 0) EG_TRY(eg_arg_bool(n, f->training, "training", &p->training));
  EG_TRY(eg_arg_scalar(n, f->arity - 2, "momentum", &p->momentum));
  EG_TRY(eg_arg_scalar(n, f->arity - 1, "eps", &p->eps));
  EG_TRY(bn_geometry(n, x, p));
  EG_TRY(opt_channel_vec(n, "weight", w, p->c));
  EG_TRY(opt_channel_vec(n, "bias", b, p->c));
  EG_TRY(opt_channel_vec(n, "running_mean", rm, p->c));
  EG_TRY(opt_channel_vec(n, "running_var", rv, p->c));
  if (!p->training && (!rm || !rv))
    return eg_node_error(n, EG_ERR_INVALID, "training=False without %s: eval mode normalises "
                         "with running_mean and running_var", !rm ? "running_mean" :
                         "running_var");
  if (p->training && p->c > 0 && p->n * p->hw == 0) {
    char s[96];
    return eg_node_error(n, EG_ERR_INVALID, "input %s has no values per channel: training "
                         "needs at least one to compute batch statistics",
                         eg_fmt_ints(s, sizeof s, x->shape, x->rank));
  }
  /* ATen returns the saved statistics only in training; in eval they are empty tensors. */
  int64_t stat[1] = {p->training ? p->c : 0}, c[1] = {p->c};
  if (!f->functional) return out_norm_tuple(g, n, x, all_outputs, 1, stat);
  EG_TRY(eg_out_tuple(g, n, 5));
  EG_TRY(eg_out_elem(g, n, 0, true, EG_DTYPE_FLOAT32, x->rank, x->shape));
  for (int i = 1; i < 5; i++)
    EG_TRY(eg_out_elem(g, n, i, true, EG_DTYPE_FLOAT32, 1, i < 3 ? stat : c));
  return EG_OK;
}

/* The forward, its output plus `add` (NULL: none) and clamped to [clamp->lo, clamp->hi] when
 * clamp is not NULL. */
static eg_status run_bn_forward_clamped(const eg_exec *ex, const eg_node *n, const float *add,
                                       const eg_clamp *clamp) {
  const eg_bn_attrs *at = EG_ATTRS(n, const eg_bn_attrs);
  const eg_batch_norm_params *p = &at->p;
  eg_batch_norm_io io = {
      .x = eg_exec_arg(ex, n, 0, "input"),
      .weight = eg_exec_arg(ex, n, 1, "weight"),
      .bias = eg_exec_arg(ex, n, 2, "bias"),
      .y = eg_exec_elem(ex, n, 0),
      .add = add,
      .clamp = clamp != NULL,
      .clamp_lo = clamp ? clamp->lo : 0.0f,
      .clamp_hi = clamp ? clamp->hi : 0.0f,
  };
  if (at->running >= 0) {
    io.running_mean = eg_exec_arg(ex, n, at->running, "running_mean");
    io.running_var = eg_exec_arg(ex, n, at->running + 1, "running_var");
  }
  if (p->training) {
    io.save_mean = eg_exec_elem(ex, n, 1);
    io.save_invstd = eg_exec_elem(ex, n, 2);
  }
  if (at->functional && p->training) {
    io.new_running_mean = eg_exec_elem(ex, n, 3);
    io.new_running_var = eg_exec_elem(ex, n, 4);
  }
  eg_batch_norm_nchw_f32(p, &io);
  if (at->functional && !p->training && p->c > 0) { /* eval keeps the running statistics */
    memcpy(eg_exec_elem(ex, n, 3), io.running_mean, sizeof(float) * (size_t)p->c);
    memcpy(eg_exec_elem(ex, n, 4), io.running_var, sizeof(float) * (size_t)p->c);
  }
  return EG_OK;
}

static eg_status run_bn_forward(const eg_exec *ex, const eg_node *n) {
  return run_bn_forward_clamped(ex, n, NULL, NULL);
}

bool eg_op_is_batch_norm(eg_op op) {
  return op == EG_OP_native_batch_norm || op == EG_OP__native_batch_norm_legit_functional ||
         op == EG_OP__native_batch_norm_legit_no_training || op == EG_OP__native_batch_norm_legit ||
         op == EG_OP__native_batch_norm_legit_no_stats;
}

eg_status eg_run_batch_norm_clamped(const eg_exec *ex, const eg_node *n, int32_t add,
                                    eg_clamp clamp) {
  return run_bn_forward_clamped(ex, n, add >= 0 ? ex->data[add] : NULL, &clamp);
}

/* The check and run of each forward form. */
#define EG_BN_FORWARD_OP(id, form)                                                    \
  eg_status eg_check_##id(eg_graph *g, eg_node *n) { return check_bn_forward(g, n, &form); } \
  eg_status eg_run_##id(const eg_exec *ex, const eg_node *n) { return run_bn_forward(ex, n); }
EG_BN_FORWARD_OP(native_batch_norm, bn_native)
EG_BN_FORWARD_OP(_native_batch_norm_legit_functional, bn_legit_functional)
EG_BN_FORWARD_OP(_native_batch_norm_legit_no_training, bn_legit_no_training)
EG_BN_FORWARD_OP(_native_batch_norm_legit, bn_legit)
EG_BN_FORWARD_OP(_native_batch_norm_legit_no_stats, bn_legit_no_stats)
#undef EG_BN_FORWARD_OP

/* ---- native_batch_norm_backward ---- */

static const char *const bn_bwd_kw[] = {"grad_out", "input", "weight", "running_mean",
                                        "running_var", "save_mean", "save_invstd", "train",
                                        "eps", "output_mask", NULL};

typedef struct eg_bn_bwd_attrs {
  eg_batch_norm_params p;
  bool mask[3];
} eg_bn_bwd_attrs;
EG_ATTRS_FIT(eg_bn_bwd_attrs);

eg_status eg_check_native_batch_norm_backward(eg_graph *g, eg_node *n) {
  const eg_value *gy, *x, *w, *rm, *rv, *sm, *si;
  eg_bn_bwd_attrs *at = EG_ATTRS(n, eg_bn_bwd_attrs);
  eg_batch_norm_params *p = &at->p;
  memset(at, 0, sizeof *at);
  EG_TRY(eg_node_check_arity(n, 10, 10, bn_bwd_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "grad_out", &gy));
  EG_TRY(eg_arg_tensor(g, n, 1, "input", &x));
  EG_TRY(eg_arg_opt_tensor(g, n, 2, "weight", &w));
  EG_TRY(eg_arg_opt_tensor(g, n, 3, "running_mean", &rm));
  EG_TRY(eg_arg_opt_tensor(g, n, 4, "running_var", &rv));
  EG_TRY(eg_arg_opt_tensor(g, n, 5, "save_mean", &sm));
  EG_TRY(eg_arg_opt_tensor(g, n, 6, "save_invstd", &si));
  EG_TRY(eg_arg_bool(n, 7, "train", &p->training));
  EG_TRY(eg_arg_scalar(n, 8, "eps", &p->eps));
  EG_TRY(eg_arg_bool_list(n, 9, "output_mask", at->mask, 3));
  EG_TRY(bn_geometry(n, x, p));
  EG_TRY(grad_like_input(n, gy, x));
  EG_TRY(opt_channel_vec(n, "weight", w, p->c));
  EG_TRY(opt_channel_vec(n, "running_mean", rm, p->c));
  EG_TRY(opt_channel_vec(n, "running_var", rv, p->c));
  if (p->training) {
    /* save_mean/save_invstd are what training normalised with; eval ignores them (they are the
     * [0] tensors an eval-mode forward returns) */
    if (!sm || !si)
      return eg_node_error(n, EG_ERR_INVALID, "train=True without %s: the training backward "
                           "uses the forward's saved statistics", !sm ? "save_mean" :
                           "save_invstd");
    EG_TRY(opt_channel_vec(n, "save_mean", sm, p->c));
    EG_TRY(opt_channel_vec(n, "save_invstd", si, p->c));
  } else if (!rm || !rv) {
    return eg_node_error(n, EG_ERR_INVALID, "train=False without %s: the eval backward uses "
                         "the running statistics", !rm ? "running_mean" : "running_var");
  }
  int64_t c[1] = {p->c};
  return out_norm_tuple(g, n, x, at->mask, 1, c);
}

/* The backward, its grad_out read through `mask` (NULL: as given). */
static eg_status run_bn_backward_masked(const eg_exec *ex, const eg_node *n,
                                       const eg_grad_mask *mask) {
  const eg_bn_bwd_attrs *at = EG_ATTRS(n, const eg_bn_bwd_attrs);
  eg_batch_norm_backward_io io = {
      .gy = mask ? ex->data[mask->gy] : eg_exec_arg(ex, n, 0, "grad_out"),
      .mask_x = mask ? ex->data[mask->x] : NULL,
      .mask_lo = mask ? mask->lo : 0.0f,
      .mask_hi = mask ? mask->hi : 0.0f,
      .x = eg_exec_arg(ex, n, 1, "input"),
      .weight = eg_exec_arg(ex, n, 2, "weight"),
      .running_mean = eg_exec_arg(ex, n, 3, "running_mean"),
      .running_var = eg_exec_arg(ex, n, 4, "running_var"),
      .save_mean = eg_exec_arg(ex, n, 5, "save_mean"),
      .save_invstd = eg_exec_arg(ex, n, 6, "save_invstd"),
      .gx = at->mask[0] ? eg_exec_elem(ex, n, 0) : NULL,
      .gw = at->mask[1] ? eg_exec_elem(ex, n, 1) : NULL,
      .gb = at->mask[2] ? eg_exec_elem(ex, n, 2) : NULL,
  };
  eg_batch_norm_backward_nchw_f32(&at->p, &io);
  return EG_OK;
}

eg_status eg_run_native_batch_norm_backward(const eg_exec *ex, const eg_node *n) {
  return run_bn_backward_masked(ex, n, NULL);
}

eg_status eg_run_batch_norm_backward_masked(const eg_exec *ex, const eg_node *n,
                                            eg_grad_mask mask) {
  return run_bn_backward_masked(ex, n, &mask);
}

/* ---- group norm: shared argument rules ---- */

/* Reads N, C, HxW, group at positions pos..pos+3 and checks them against the input. */
static eg_status gn_geometry(const eg_node *n, const eg_value *x, int pos,
                             eg_group_norm_params *p) {
  EG_TRY(need_f32(n, "input", x));
  EG_TRY(eg_arg_int(n, pos, "N", &p->n));
  EG_TRY(eg_arg_int(n, pos + 1, "C", &p->c));
  EG_TRY(eg_arg_int(n, pos + 2, "HxW", &p->hw));
  EG_TRY(eg_arg_int(n, pos + 3, "group", &p->groups));
  if (p->n < 0 || p->c < 0 || p->hw < 0)
    return eg_node_error(n, EG_ERR_INVALID, "N, C, HxW (%lld, %lld, %lld): must be >= 0",
                         (long long)p->n, (long long)p->c, (long long)p->hw);
  if (p->groups < 1 || p->c % p->groups != 0)
    return eg_node_error(n, EG_ERR_INVALID, "group %lld with C %lld: group must be >= 1 and "
                         "divide the channels", (long long)p->groups, (long long)p->c);
  int64_t nc, total, ng;
  if (__builtin_mul_overflow(p->n, p->groups, &ng))
    return eg_node_error(n, EG_ERR_INVALID, "N*group (%lld*%lld) overflows int64",
                         (long long)p->n, (long long)p->groups);
  if (__builtin_mul_overflow(p->n, p->c, &nc) || __builtin_mul_overflow(nc, p->hw, &total) ||
      total != eg_value_numel(x)) {
    char s[96];
    return eg_node_error(n, EG_ERR_INVALID, "input %s has %lld elements, N*C*HxW is %lld*%lld*"
                         "%lld: they must agree", eg_fmt_ints(s, sizeof s, x->shape, x->rank),
                         (long long)eg_value_numel(x), (long long)p->n, (long long)p->c,
                         (long long)p->hw);
  }
  return EG_OK;
}

/* ---- native_group_norm ---- */

static const char *const gn_kw[] = {"input", "weight", "bias", "N", "C", "HxW", "group", "eps",
                                    NULL};

eg_status eg_check_native_group_norm(eg_graph *g, eg_node *n) {
  const eg_value *x, *w, *b;
  eg_group_norm_params *p = &EG_ATTRS(n, eg_gn_attrs)->p;
  memset(p, 0, sizeof *p);
  EG_TRY(eg_node_check_arity(n, 8, 8, gn_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "input", &x));
  EG_TRY(eg_arg_opt_tensor(g, n, 1, "weight", &w));
  EG_TRY(eg_arg_opt_tensor(g, n, 2, "bias", &b));
  EG_TRY(gn_geometry(n, x, 3, p));
  EG_TRY(eg_arg_scalar(n, 7, "eps", &p->eps));
  EG_TRY(opt_channel_vec(n, "weight", w, p->c));
  EG_TRY(opt_channel_vec(n, "bias", b, p->c));
  int64_t stat[2] = {p->n, p->groups};
  return out_norm_tuple(g, n, x, all_outputs, 2, stat);
}

eg_status eg_run_native_group_norm(const eg_exec *ex, const eg_node *n) {
  eg_group_norm_io io = {
      .x = eg_exec_arg(ex, n, 0, "input"),
      .weight = eg_exec_arg(ex, n, 1, "weight"),
      .bias = eg_exec_arg(ex, n, 2, "bias"),
      .y = eg_exec_elem(ex, n, 0),
      .mean = eg_exec_elem(ex, n, 1),
      .rstd = eg_exec_elem(ex, n, 2),
  };
  eg_group_norm_nchw_f32(&EG_ATTRS(n, const eg_gn_attrs)->p, &io);
  return EG_OK;
}

/* ---- native_group_norm_backward ---- */

static const char *const gn_bwd_kw[] = {"grad_out", "input", "mean", "rstd", "weight", "N",
                                        "C", "HxW", "group", "output_mask", NULL};

typedef struct eg_gn_bwd_attrs {
  eg_group_norm_params p;
  bool mask[3];
} eg_gn_bwd_attrs;
EG_ATTRS_FIT(eg_gn_bwd_attrs);

/* mean or rstd of the forward: float32 with N*group elements. */
static eg_status gn_stat(const eg_node *n, const char *what, const eg_value *v,
                         const eg_group_norm_params *p) {
  EG_TRY(need_f32(n, what, v));
  if (eg_value_numel(v) != p->n * p->groups) {
    char s[96];
    return eg_node_error(n, EG_ERR_INVALID, "%s %s has %lld elements: expected N*group = %lld",
                         what, eg_fmt_ints(s, sizeof s, v->shape, v->rank),
                         (long long)eg_value_numel(v), (long long)(p->n * p->groups));
  }
  return EG_OK;
}

eg_status eg_check_native_group_norm_backward(eg_graph *g, eg_node *n) {
  const eg_value *gy, *x, *mean, *rstd, *w;
  eg_gn_bwd_attrs *at = EG_ATTRS(n, eg_gn_bwd_attrs);
  eg_group_norm_params *p = &at->p;
  memset(at, 0, sizeof *at);
  EG_TRY(eg_node_check_arity(n, 10, 10, gn_bwd_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "grad_out", &gy));
  EG_TRY(eg_arg_tensor(g, n, 1, "input", &x));
  EG_TRY(eg_arg_tensor(g, n, 2, "mean", &mean));
  EG_TRY(eg_arg_tensor(g, n, 3, "rstd", &rstd));
  EG_TRY(eg_arg_opt_tensor(g, n, 4, "weight", &w));
  EG_TRY(gn_geometry(n, x, 5, p));
  EG_TRY(eg_arg_bool_list(n, 9, "output_mask", at->mask, 3));
  EG_TRY(need_f32(n, "grad_out", gy));
  if (eg_value_numel(gy) != eg_value_numel(x))
    return eg_node_error(n, EG_ERR_INVALID, "grad_out has %lld elements, input %lld: they must "
                         "agree", (long long)eg_value_numel(gy), (long long)eg_value_numel(x));
  EG_TRY(gn_stat(n, "mean", mean, p));
  EG_TRY(gn_stat(n, "rstd", rstd, p));
  EG_TRY(opt_channel_vec(n, "weight", w, p->c));
  if (!w && (at->mask[1] || at->mask[2]))
    return eg_node_error(n, EG_ERR_INVALID, "output_mask [%d, %d, %d] asks for grad_%s without "
                         "weight: ATen shapes grad_weight and grad_bias like weight",
                         at->mask[0], at->mask[1], at->mask[2], at->mask[1] ? "weight" : "bias");
  if (at->mask[0] || at->mask[1] || at->mask[2]) {
    /* two doubles per (sample, channel): N*C can be huge when HxW is 0 */
    if (p->n > 0 && p->c > (int64_t)(SIZE_MAX / 16) / p->n)
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "N*C (%lld*%lld): the backward's scratch of "
                           "16 bytes per (sample, channel) does not fit in memory",
                           (long long)p->n, (long long)p->c);
    n->scratch_bytes = eg_group_norm_backward_nchw_f32_scratch(p);
  }
  int64_t c[1] = {p->c};
  return out_norm_tuple(g, n, x, at->mask, 1, c);
}

eg_status eg_run_native_group_norm_backward(const eg_exec *ex, const eg_node *n) {
  const eg_gn_bwd_attrs *at = EG_ATTRS(n, const eg_gn_bwd_attrs);
  if (!at->mask[0] && !at->mask[1] && !at->mask[2]) return EG_OK;
  eg_group_norm_backward_io io = {
      .gy = eg_exec_arg(ex, n, 0, "grad_out"),
      .x = eg_exec_arg(ex, n, 1, "input"),
      .mean = eg_exec_arg(ex, n, 2, "mean"),
      .rstd = eg_exec_arg(ex, n, 3, "rstd"),
      .weight = eg_exec_arg(ex, n, 4, "weight"),
      .gx = at->mask[0] ? eg_exec_elem(ex, n, 0) : NULL,
      .gw = at->mask[1] ? eg_exec_elem(ex, n, 1) : NULL,
      .gb = at->mask[2] ? eg_exec_elem(ex, n, 2) : NULL,
  };
  eg_group_norm_backward_nchw_f32(&at->p, &io, ex->scratch);
  return EG_OK;
}

/* ---- layer norm: shared argument rules ---- */

typedef struct eg_ln_attrs {
  eg_layer_norm_params p;
  bool mask[3]; /* backward only */
  int axis;     /* the first normalised dim */
} eg_ln_attrs;
EG_ATTRS_FIT(eg_ln_attrs);

/* Reads normalized_shape (position pos) and checks it against the input's last dims; fills
 * at->axis and the [rows, cols] view. */
static eg_status ln_geometry(const eg_node *n, const eg_value *x, int pos, eg_ln_attrs *at) {
  int64_t ns[EG_MAX_RANK];
  int k;
  EG_TRY(need_f32(n, "input", x));
  EG_TRY(eg_arg_int_list(n, pos, "normalized_shape", ns, 1, EG_MAX_RANK, &k));
  char a[96], b[96];
  at->axis = x->rank - k;
  if (at->axis < 0 || memcmp(ns, x->shape + at->axis, sizeof(int64_t) * (size_t)k) != 0)
    return eg_node_error(n, EG_ERR_INVALID, "normalized_shape %s with input %s: it must be the "
                         "input's last dims", eg_fmt_ints(a, sizeof a, ns, k),
                         eg_fmt_ints(b, sizeof b, x->shape, x->rank));
  at->p.rows = at->p.cols = 1;
  for (int i = 0; i < x->rank; i++) {
    if (i < at->axis) at->p.rows *= x->shape[i];
    else at->p.cols *= x->shape[i];
  }
  return EG_OK;
}

/* weight or bias of a layer norm: absent, or float32 shaped like normalized_shape. */
static eg_status ln_param(const eg_node *n, const char *what, const eg_value *v,
                          const eg_value *x, int axis) {
  if (!v) return EG_OK;
  EG_TRY(need_f32(n, what, v));
  const int k = x->rank - axis;
  if (v->rank != k || memcmp(v->shape, x->shape + axis, sizeof(int64_t) * (size_t)k) != 0) {
    char a[96], b[96];
    return eg_node_error(n, EG_ERR_INVALID, "%s shape %s: expected normalized_shape %s", what,
                         eg_fmt_ints(a, sizeof a, v->shape, v->rank),
                         eg_fmt_ints(b, sizeof b, x->shape + axis, k));
  }
  return EG_OK;
}

/* ATen's shape of mean and rstd: the input's leading dims, then a 1 per normalised dim. */
static void ln_stat_shape(const eg_value *x, int axis, int64_t *stat) {
  for (int i = 0; i < x->rank; i++) stat[i] = i < axis ? x->shape[i] : 1;
}

/* ---- native_layer_norm ---- */

static const char *const ln_kw[] = {"input", "normalized_shape", "weight", "bias", "eps", NULL};

eg_status eg_check_native_layer_norm(eg_graph *g, eg_node *n) {
  const eg_value *x, *w, *b;
  eg_ln_attrs *at = EG_ATTRS(n, eg_ln_attrs);
  memset(at, 0, sizeof *at);
  EG_TRY(eg_node_check_arity(n, 5, 5, ln_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "input", &x));
  EG_TRY(eg_arg_opt_tensor(g, n, 2, "weight", &w));
  EG_TRY(eg_arg_opt_tensor(g, n, 3, "bias", &b));
  EG_TRY(eg_arg_scalar(n, 4, "eps", &at->p.eps));
  EG_TRY(ln_geometry(n, x, 1, at));
  EG_TRY(ln_param(n, "weight", w, x, at->axis));
  EG_TRY(ln_param(n, "bias", b, x, at->axis));
  int64_t stat[EG_MAX_RANK];
  ln_stat_shape(x, at->axis, stat);
  return out_norm_tuple(g, n, x, all_outputs, x->rank, stat);
}

eg_status eg_run_native_layer_norm(const eg_exec *ex, const eg_node *n) {
  eg_layer_norm_io io = {
      .x = eg_exec_arg(ex, n, 0, "input"),
      .weight = eg_exec_arg(ex, n, 2, "weight"),
      .bias = eg_exec_arg(ex, n, 3, "bias"),
      .y = eg_exec_elem(ex, n, 0),
      .mean = eg_exec_elem(ex, n, 1),
      .rstd = eg_exec_elem(ex, n, 2),
  };
  eg_layer_norm_f32(&EG_ATTRS(n, const eg_ln_attrs)->p, &io);
  return EG_OK;
}

/* ---- native_layer_norm_backward ---- */

static const char *const ln_bwd_kw[] = {"grad_out", "input", "normalized_shape", "mean", "rstd",
                                        "weight", "bias", "output_mask", NULL};

/* mean or rstd of the forward: float32 with one element per row. */
static eg_status ln_stat(const eg_node *n, const char *what, const eg_value *v, int64_t rows) {
  EG_TRY(need_f32(n, what, v));
  if (eg_value_numel(v) != rows) {
    char s[96];
    return eg_node_error(n, EG_ERR_INVALID, "%s %s has %lld elements: expected one per "
                         "normalised row (%lld)", what, eg_fmt_ints(s, sizeof s, v->shape,
                         v->rank), (long long)eg_value_numel(v), (long long)rows);
  }
  return EG_OK;
}

eg_status eg_check_native_layer_norm_backward(eg_graph *g, eg_node *n) {
  const eg_value *gy, *x, *mean, *rstd, *w, *b;
  eg_ln_attrs *at = EG_ATTRS(n, eg_ln_attrs);
  memset(at, 0, sizeof *at);
  EG_TRY(eg_node_check_arity(n, 8, 8, ln_bwd_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "grad_out", &gy));
  EG_TRY(eg_arg_tensor(g, n, 1, "input", &x));
  EG_TRY(eg_arg_tensor(g, n, 3, "mean", &mean));
  EG_TRY(eg_arg_tensor(g, n, 4, "rstd", &rstd));
  EG_TRY(eg_arg_opt_tensor(g, n, 5, "weight", &w));
  EG_TRY(eg_arg_opt_tensor(g, n, 6, "bias", &b));
  EG_TRY(eg_arg_bool_list(n, 7, "output_mask", at->mask, 3));
  EG_TRY(ln_geometry(n, x, 2, at));
  EG_TRY(grad_like_input(n, gy, x));
  EG_TRY(ln_stat(n, "mean", mean, at->p.rows));
  EG_TRY(ln_stat(n, "rstd", rstd, at->p.rows));
  EG_TRY(ln_param(n, "weight", w, x, at->axis));
  EG_TRY(ln_param(n, "bias", b, x, at->axis));
  /* ATen allocates grad_weight like weight and grad_bias like bias */
  if ((at->mask[1] && !w) || (at->mask[2] && !b))
    return eg_node_error(n, EG_ERR_INVALID, "output_mask [%d, %d, %d] asks for grad_%s without "
                         "%s: ATen shapes grad_weight like weight and grad_bias like bias",
                         at->mask[0], at->mask[1], at->mask[2],
                         at->mask[1] && !w ? "weight" : "bias",
                         at->mask[1] && !w ? "weight" : "bias");
  const int k = x->rank - at->axis;
  EG_TRY(eg_out_tuple(g, n, 3));
  EG_TRY(eg_out_elem(g, n, 0, at->mask[0], EG_DTYPE_FLOAT32, x->rank, x->shape));
  EG_TRY(eg_out_elem(g, n, 1, at->mask[1], EG_DTYPE_FLOAT32, k, x->shape + at->axis));
  return eg_out_elem(g, n, 2, at->mask[2], EG_DTYPE_FLOAT32, k, x->shape + at->axis);
}

eg_status eg_run_native_layer_norm_backward(const eg_exec *ex, const eg_node *n) {
  const eg_ln_attrs *at = EG_ATTRS(n, const eg_ln_attrs);
  eg_layer_norm_backward_io io = {
      .gy = eg_exec_arg(ex, n, 0, "grad_out"),
      .x = eg_exec_arg(ex, n, 1, "input"),
      .mean = eg_exec_arg(ex, n, 3, "mean"),
      .rstd = eg_exec_arg(ex, n, 4, "rstd"),
      .weight = eg_exec_arg(ex, n, 5, "weight"),
      .gx = at->mask[0] ? eg_exec_elem(ex, n, 0) : NULL,
      .gw = at->mask[1] ? eg_exec_elem(ex, n, 1) : NULL,
      .gb = at->mask[2] ? eg_exec_elem(ex, n, 2) : NULL,
  };
  eg_layer_norm_backward_f32(&at->p, &io);
  return EG_OK;
}
