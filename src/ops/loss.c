/* loss.c — softmax, log-softmax and the losses, ATen's (PyTorch 1.13) CPU semantics, fp32.
 *
 *   _log_softmax(self, dim, half_to_float)                    -> self's shape
 *   _log_softmax_backward_data(grad_output, output, dim, input_dtype) -> grad_output's shape
 *   _softmax(self, dim, half_to_float)                        -> self's shape
 *   _softmax_backward_data(grad_output, output, dim, input_dtype) -> grad_output's shape
 *   nll_loss_forward(self, target, weight?, reduction, ignore_index) -> (output, total_weight)
 *       self [N, C] or [C]; target int64 [N] or [] ([C]-shaped input with a 0-d target is
 *       the unbatched form); weight [C] or None; output [N] for reduction none on a 2-D input,
 *       else []; total_weight [].
 *   nll_loss_backward(grad_output, self, target, weight?, reduction, ignore_index,
 *                     total_weight)                            -> self's shape
 *   mse_loss(self, target, reduction=mean)                     -> broadcast shape (none) or []
 *   mse_loss_backward(grad_output, self, target, reduction)    -> broadcast shape of all three
 *   nll_loss2d_forward(self, target, weight?, reduction, ignore_index) -> (output, total_weight)
 *       self [N, C, H, W]; target int64 [N, H, W]; output [N, H, W] for reduction none, else [].
 *   nll_loss2d_backward(grad_output, self, target, weight?, reduction, ignore_index,
 *                       total_weight)                          -> self's shape
 * reduction is ATen's enum: 0 none, 1 mean, 2 sum. A target outside [0, C) that is not
 * ignore_index is found while running: EG_ERR_RUNTIME naming the sample (flat over the
 * target), the class and C.
 * The arithmetic is in kernels/log_softmax_f32, nll_loss_f32 and mse_loss_f32. */
#include <stdio.h>

#include "kernels/log_softmax_f32.h"
#include "kernels/mse_loss_f32.h"
#include "kernels/nll_loss_f32.h"
#include "ops/op.h"

/* ---- shared argument rules ---- */

/* A float32 tensor argument (the only dtype these ops support). */
static eg_status arg_f32(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                         bool optional, const eg_value **out) {
  EG_TRY(optional ? eg_arg_opt_tensor(g, n, pos, kw, out) : eg_arg_tensor(g, n, pos, kw, out));
  if (*out && (*out)->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument %s (#%d) dtype %s: %s supports "
                         "float32 only", kw, pos, eg_dtype_name((*out)->dtype),
                         eg_op_target(n->op));
  return EG_OK;
}

static eg_status arg_reduction(const eg_node *n, int pos, bool optional,
                               eg_loss_reduction *out) {
  int64_t r = EG_REDUCTION_MEAN;
  EG_TRY(optional ? eg_arg_opt_int(n, pos, "reduction", &r)
                  : eg_arg_int(n, pos, "reduction", &r));
  if (r < EG_REDUCTION_NONE || r > EG_REDUCTION_SUM)
    return eg_node_error(n, EG_ERR_INVALID, "argument reduction (#%d) is %lld: expected 0 "
                         "(none), 1 (mean) or 2 (sum)", pos, (long long)r);
  *out = (eg_loss_reduction)r;
  return EG_OK;
}

static eg_status same_shape(const eg_node *n, const char *what_a, const eg_value *a,
                            const char *what_b, const eg_value *b) {
  bool same = a->rank == b->rank;
  for (int d = 0; same && d < a->rank; d++) same = a->shape[d] == b->shape[d];
  if (same) return EG_OK;
  char sa[160], sb[160];
  return eg_node_error(n, EG_ERR_INVALID, "%s %s and %s %s: the shapes must be equal", what_a,
                       eg_fmt_ints(sa, sizeof sa, a->shape, a->rank), what_b,
                       eg_fmt_ints(sb, sizeof sb, b->shape, b->rank));
}

/* ---- log-softmax ---- */

typedef struct eg_log_softmax_attrs {
  int64_t outer, dim, inner;
} eg_log_softmax_attrs;
EG_ATTRS_FIT(eg_log_softmax_attrs);

/* Splits `v` around the wrapped softmax dim (schema position `pos`) into the node's attrs. */
static eg_status softmax_split(eg_node *n, const eg_value *v, int pos) {
  int64_t dim;
  EG_TRY(eg_arg_int(n, pos, "dim", &dim));
  int d = eg_wrap_dim(dim, v->rank);
  if (d < 0)
    return eg_node_error(n, EG_ERR_INVALID, "argument dim (#%d) is %lld: out of range for "
                         "rank %d", pos, (long long)dim, v->rank);
  eg_log_softmax_attrs *at = EG_ATTRS(n, eg_log_softmax_attrs);
  at->outer = at->inner = 1;
  at->dim = v->rank ? v->shape[d] : 1;
  for (int i = 0; i < d; i++) at->outer *= v->shape[i];
  for (int i = d + 1; i < v->rank; i++) at->inner *= v->shape[i];
  return EG_OK;
}

/* _log_softmax and _softmax: (self, dim, half_to_float). */
static eg_status check_softmax(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "dim", "half_to_float", NULL};
  EG_TRY(eg_node_check_arity(n, 3, 3, known));
  const eg_value *self;
  EG_TRY(arg_f32(g, n, 0, "self", false, &self));
  EG_TRY(softmax_split(n, self, 1));
  bool half_to_float;
  EG_TRY(eg_arg_bool(n, 2, "half_to_float", &half_to_float));
  if (half_to_float)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument half_to_float (#2) is true: only a "
                         "float16 input can be widened, and ATen's CPU kernel cannot either");
  return eg_out_tensor(g, n, self->dtype, self->rank, self->shape);
}

/* Their _backward_data ops: (grad_output, output, dim, input_dtype). */
static eg_status check_softmax_backward(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "output", "dim", "input_dtype", NULL};
  EG_TRY(eg_node_check_arity(n, 4, 4, known));
  const eg_value *gy, *y;
  EG_TRY(arg_f32(g, n, 0, "grad_output", false, &gy));
  EG_TRY(arg_f32(g, n, 1, "output", false, &y));
  EG_TRY(same_shape(n, "grad_output", gy, "output", y));
  EG_TRY(softmax_split(n, y, 2));
  const eg_arg *a = eg_node_arg(n, 3, "input_dtype");
  if (!a || a->kind != EG_ARG_DTYPE)
    return eg_node_error(n, EG_ERR_INVALID, "argument input_dtype (#3) %s: expected a dtype",
                         a ? "is not a dtype" : "missing");
  if (a->dtype != gy->dtype)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument input_dtype (#3) is %s for %s "
                         "gradients: only the same dtype is supported (no half-to-float)",
                         eg_dtype_name(a->dtype), eg_dtype_name(gy->dtype));
  return eg_out_tensor(g, n, a->dtype, gy->rank, gy->shape);
}

typedef void (*softmax_fn)(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner);
typedef void (*softmax_backward_fn)(const float *gy, const float *y, float *gx, int64_t outer,
                                    int64_t dim, int64_t inner);

static void run_softmax(const eg_exec *ex, const eg_node *n, softmax_fn kernel) {
  const eg_log_softmax_attrs *at = EG_ATTRS(n, eg_log_softmax_attrs);
  kernel(eg_exec_arg(ex, n, 0, "self"), eg_exec_out(ex, n), at->outer, at->dim, at->inner);
}

static void run_softmax_backward(const eg_exec *ex, const eg_node *n,
                                 softmax_backward_fn kernel) {
  const eg_log_softmax_attrs *at = EG_ATTRS(n, eg_log_softmax_attrs);
  kernel(eg_exec_arg(ex, n, 0, "grad_output"), eg_exec_arg(ex, n, 1, "output"),
         eg_exec_out(ex, n), at->outer, at->dim, at->inner);
}

/* The check and run of a softmax op and of its backward. */
#define EG_SOFTMAX_OPS(id, kernel)                                                          \
  eg_status eg_check_##id(eg_graph *g, eg_node *n) { return check_softmax(g, n); }          \
  eg_status eg_run_##id(const eg_exec *ex, const eg_node *n) {                              \
    run_softmax(ex, n, kernel##_f32);                                                       \
    return EG_OK;                                                                           \
  }                                                                                         \
  eg_status eg_check_##id##_backward_data(eg_graph *g, eg_node *n) {                        \
    return check_softmax_backward(g, n);                                                    \
  }                                                                                         \
  eg_status eg_run_##id##_backward_data(const eg_exec *ex, const eg_node *n) {              \
    run_softmax_backward(ex, n, kernel##_backward_f32);                                     \
    return EG_OK;                                                                           \
  }
EG_SOFTMAX_OPS(_log_softmax, eg_log_softmax)
EG_SOFTMAX_OPS(_softmax, eg_softmax)
#undef EG_SOFTMAX_OPS

/* ---- nll_loss ---- */

typedef struct eg_nll_attrs {
  eg_nll_params p;
} eg_nll_attrs;
EG_ATTRS_FIT(eg_nll_attrs);

/* The rules the nll ops share for self (#pos_self), target, weight, reduction and
 * ignore_index, as in ATen's meta functions; fills the kernel parameters. nll_loss2d (`two_d`)
 * takes [N, C, H, W] scores and an [N, H, W] target, nll_loss [N, C] and [N] or [C] and 0-d. */
static eg_status check_nll_args(const eg_graph *g, eg_node *n, int pos_self, bool two_d,
                                const eg_value **self_out, const eg_value **target_out) {
  const eg_value *self, *target, *weight;
  EG_TRY(arg_f32(g, n, pos_self, "self", false, &self));
  EG_TRY(eg_arg_tensor(g, n, pos_self + 1, "target", &target));
  EG_TRY(arg_f32(g, n, pos_self + 2, "weight", true, &weight));
  char s1[160], s2[160];
  if (two_d ? self->rank != 4 : self->rank < 1 || self->rank > 2)
    return eg_node_error(n, EG_ERR_INVALID, "argument self (#%d) has shape %s: %s", pos_self,
                         eg_fmt_ints(s1, sizeof s1, self->shape, self->rank),
                         two_d ? "nll_loss2d takes [N, C, H, W] scores"
                               : "nll_loss takes [N, C] or [C] scores");
  if (target->dtype != EG_DTYPE_INT64)
    return eg_node_error(n, target->dtype == EG_DTYPE_UINT8 ? EG_ERR_UNSUPPORTED
                                                            : EG_ERR_INVALID,
                         "argument target (#%d) dtype %s: class indices must be int64",
                         pos_self + 1, eg_dtype_name(target->dtype));
  if (two_d && (target->rank != 3 || target->shape[0] != self->shape[0] ||
                target->shape[1] != self->shape[2] || target->shape[2] != self->shape[3]))
    return eg_node_error(n, EG_ERR_INVALID, "self %s and target %s: the target must be "
                         "[N, H, W] for [N, C, H, W] scores",
                         eg_fmt_ints(s1, sizeof s1, self->shape, self->rank),
                         eg_fmt_ints(s2, sizeof s2, target->shape, target->rank));
  bool no_batch = self->rank == 1 && target->rank == 0;
  if (!two_d && !no_batch && (target->rank != 1 || target->shape[0] != self->shape[0]))
    return eg_node_error(n, EG_ERR_INVALID, "self %s and target %s: the target must be [N] for "
                         "[N, C] scores (or 0-d for [C])",
                         eg_fmt_ints(s1, sizeof s1, self->shape, self->rank),
                         eg_fmt_ints(s2, sizeof s2, target->shape, target->rank));
  const int64_t classes = self->shape[self->rank == 1 ? 0 : 1];
  if (weight && (weight->rank != 1 || weight->shape[0] != classes))
    return eg_node_error(n, EG_ERR_INVALID, "weight %s for %lld classes: the weight must be "
                         "[C]", eg_fmt_ints(s1, sizeof s1, weight->shape, weight->rank),
                         (long long)classes);
  eg_nll_params *p = &EG_ATTRS(n, eg_nll_attrs)->p;
  EG_TRY(arg_reduction(n, pos_self + 3, false, &p->reduction));
  EG_TRY(eg_arg_int(n, pos_self + 4, "ignore_index", &p->ignore_index));
  p->batched = self->rank >= 2;
  p->batch = p->batched ? self->shape[0] : 1;
  p->classes = classes;
  p->inner = two_d ? self->shape[2] * self->shape[3] : 1;
  *self_out = self;
  *target_out = target;
  return EG_OK;
}

static eg_status bad_target(const eg_exec *ex, const eg_node *n, int target_pos, int64_t row) {
  const eg_nll_params *p = &EG_ATTRS(n, eg_nll_attrs)->p;
  const int64_t *target = eg_exec_arg(ex, n, target_pos, "target");
  return eg_node_error(n, EG_ERR_RUNTIME, "target[%lld] is class %lld: out of range [0, C=%lld) "
                       "and not ignore_index %lld", (long long)row, (long long)target[row],
                       (long long)p->classes, (long long)p->ignore_index);
}

/* nll_loss(2d)_forward: (output, total_weight), output shaped like target when per-sample. */
static eg_status check_nll_forward(eg_graph *g, eg_node *n, bool two_d) {
  static const char *const known[] = {"self", "target", "weight", "reduction", "ignore_index",
                                      NULL};
  EG_TRY(eg_node_check_arity(n, 5, 5, known));
  const eg_value *self, *target;
  EG_TRY(check_nll_args(g, n, 0, two_d, &self, &target));
  const eg_nll_params *p = &EG_ATTRS(n, eg_nll_attrs)->p;
  const bool each = p->reduction == EG_REDUCTION_NONE && p->batched;
  EG_TRY(eg_out_tuple(g, n, 2));
  EG_TRY(eg_out_elem(g, n, 0, true, self->dtype, each ? target->rank : 0, target->shape));
  return eg_out_elem(g, n, 1, true, self->dtype, 0, NULL);
}

static eg_status run_nll_forward(const eg_exec *ex, const eg_node *n) {
  const eg_nll_params *p = &EG_ATTRS(n, eg_nll_attrs)->p;
  int64_t bad = eg_nll_loss_f32(p, eg_exec_arg(ex, n, 0, "self"), eg_exec_arg(ex, n, 1, "target"),
                                eg_exec_arg(ex, n, 2, "weight"), eg_exec_elem(ex, n, 0),
                                eg_exec_elem(ex, n, 1));
  return bad < 0 ? EG_OK : bad_target(ex, n, 1, bad);
}

/* nll_loss(2d)_backward: grad_output shaped like target when per-sample, else one element. */
static eg_status check_nll_backward(eg_graph *g, eg_node *n, bool two_d) {
  static const char *const known[] = {"grad_output", "self", "target", "weight", "reduction",
                                      "ignore_index", "total_weight", NULL};
  EG_TRY(eg_node_check_arity(n, 7, 7, known));
  const eg_value *self, *target, *gy, *tw;
  EG_TRY(check_nll_args(g, n, 1, two_d, &self, &target));
  EG_TRY(arg_f32(g, n, 0, "grad_output", false, &gy));
  EG_TRY(arg_f32(g, n, 6, "total_weight", false, &tw));
  const eg_nll_params *p = &EG_ATTRS(n, eg_nll_attrs)->p;
  char s[160], s2[160];
  if (eg_value_numel(tw) != 1)
    return eg_node_error(n, EG_ERR_INVALID, "total_weight %s: expected one element",
                         eg_fmt_ints(s, sizeof s, tw->shape, tw->rank));
  if (p->reduction == EG_REDUCTION_NONE && p->batched) {
    bool same = gy->rank == target->rank;
    for (int d = 0; same && d < gy->rank; d++) same = gy->shape[d] == target->shape[d];
    if (!same)
      return eg_node_error(n, EG_ERR_INVALID, "grad_output %s: reduction none on %lld rows "
                           "needs %s", eg_fmt_ints(s, sizeof s, gy->shape, gy->rank),
                           (long long)p->batch,
                           eg_fmt_ints(s2, sizeof s2, target->shape, target->rank));
  } else if (gy->rank > 1 || eg_value_numel(gy) != 1) {
    return eg_node_error(n, EG_ERR_INVALID, "grad_output %s: a reduced loss needs a single "
                         "element", eg_fmt_ints(s, sizeof s, gy->shape, gy->rank));
  }
  return eg_out_tensor(g, n, self->dtype, self->rank, self->shape);
}

static eg_status run_nll_backward(const eg_exec *ex, const eg_node *n) {
  const eg_nll_params *p = &EG_ATTRS(n, eg_nll_attrs)->p;
  int64_t bad = eg_nll_loss_backward_f32(
      p, eg_exec_arg(ex, n, 0, "grad_output"), eg_exec_arg(ex, n, 2, "target"),
      eg_exec_arg(ex, n, 3, "weight"), eg_exec_arg(ex, n, 6, "total_weight"),
      eg_exec_out(ex, n));
  return bad < 0 ? EG_OK : bad_target(ex, n, 2, bad);
}

/* The checks and runs of nll_loss (two_d false) and nll_loss2d. */
#define EG_NLL_OPS(id, two_d)                                                               \
  eg_status eg_check_##id##_forward(eg_graph *g, eg_node *n) {                              \
    return check_nll_forward(g, n, two_d);                                                  \
  }                                                                                         \
  eg_status eg_run_##id##_forward(const eg_exec *ex, const eg_node *n) {                    \
    return run_nll_forward(ex, n);                                                          \
  }                                                                                         \
  eg_status eg_check_##id##_backward(eg_graph *g, eg_node *n) {                             \
    return check_nll_backward(g, n, two_d);                                                 \
  }                                                                                         \
  eg_status eg_run_##id##_backward(const eg_exec *ex, const eg_node *n) {                   \
    return run_nll_backward(ex, n);                                                         \
  }
EG_NLL_OPS(nll_loss, false)
EG_NLL_OPS(nll_loss2d, true)
#undef EG_NLL_OPS

/* ---- mse_loss ---- */

typedef struct eg_mse_attrs {
  eg_loss_reduction reduction;
  float norm;                   /* backward: 2 / numel(self) for mean, else 2 */
  int rank;                     /* the broadcast shape of the operands */
  int64_t shape[EG_MAX_RANK];
} eg_mse_attrs;
EG_ATTRS_FIT(eg_mse_attrs);

/* Broadcasts the `count` tensors vs[] (named names[]) into the attrs' shape, or an error naming
 * every shape. */
static eg_status broadcast_all(eg_node *n, int count, const eg_value *const *vs,
                               const char *const *names) {
  eg_mse_attrs *at = EG_ATTRS(n, eg_mse_attrs);
  at->rank = 0;
  for (int k = 0; k < count; k++) {
    int64_t next[EG_MAX_RANK];
    int r;
    if (!eg_broadcast_shapes(at->shape, at->rank, vs[k]->shape, vs[k]->rank, next, &r)) {
      char msg[512];
      size_t used = 0;
      for (int i = 0; i < count && used < sizeof msg; i++) {
        char s[160];
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s %s", i ? ", " : "",
                                 names[i], eg_fmt_ints(s, sizeof s, vs[i]->shape, vs[i]->rank));
      }
      return eg_node_error(n, EG_ERR_INVALID, "%s: the shapes do not broadcast", msg);
    }
    for (int d = 0; d < r; d++) at->shape[d] = next[d];
    at->rank = r;
  }
  return EG_OK;
}

/* The kernel geometry over the attrs' broadcast shape; operands in the kernel's order
 * (self, target[, grad_output]) at schema positions pos[] named kw[]. */
static void mse_geom(const eg_exec *ex, const eg_node *n, int count, const int *pos,
                     const char *const *kw, eg_mse_geom *geo) {
  const eg_mse_attrs *at = EG_ATTRS(n, eg_mse_attrs);
  int ranks[EG_MSE_OPERANDS];
  const int64_t *shapes[EG_MSE_OPERANDS];
  for (int k = 0; k < count; k++) {
    const eg_value *v = eg_exec_argv(ex, n, pos[k], kw[k]);
    ranks[k] = v->rank;
    shapes[k] = v->shape;
  }
  eg_mse_geom_init(geo, at->rank, at->shape, count, ranks, shapes);
}

eg_status eg_check_mse_loss(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "target", "reduction", NULL};
  static const char *const names[] = {"self", "target"};
  EG_TRY(eg_node_check_arity(n, 2, 3, known));
  const eg_value *vs[2];
  EG_TRY(arg_f32(g, n, 0, "self", false, &vs[0]));
  EG_TRY(arg_f32(g, n, 1, "target", false, &vs[1]));
  eg_mse_attrs *at = EG_ATTRS(n, eg_mse_attrs);
  EG_TRY(arg_reduction(n, 2, true, &at->reduction));
  EG_TRY(broadcast_all(n, 2, vs, names));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32,
                       at->reduction == EG_REDUCTION_NONE ? at->rank : 0, at->shape);
}

eg_status eg_run_mse_loss(const eg_exec *ex, const eg_node *n) {
  const eg_mse_attrs *at = EG_ATTRS(n, eg_mse_attrs);
  static const int pos[] = {0, 1};
  static const char *const kw[] = {"self", "target"};
  eg_mse_geom geo;
  mse_geom(ex, n, 2, pos, kw, &geo);
  const float *x = eg_exec_arg(ex, n, 0, "self"), *t = eg_exec_arg(ex, n, 1, "target");
  float *y = eg_exec_out(ex, n);
  if (at->reduction == EG_REDUCTION_NONE) {
    eg_mse_loss_none_f32(&geo, x, t, y);
  } else {
    double s = eg_mse_loss_sum_f32(&geo, x, t);
    /* mean of nothing is NaN, as ATen's */
    *y = (float)(at->reduction == EG_REDUCTION_MEAN ? s / (double)geo.numel : s);
  }
  return EG_OK;
}

eg_status eg_check_mse_loss_backward(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "self", "target", "reduction", NULL};
  static const char *const names[] = {"grad_output", "self", "target"};
  EG_TRY(eg_node_check_arity(n, 4, 4, known));
  const eg_value *vs[3];
  EG_TRY(arg_f32(g, n, 0, "grad_output", false, &vs[0]));
  EG_TRY(arg_f32(g, n, 1, "self", false, &vs[1]));
  EG_TRY(arg_f32(g, n, 2, "target", false, &vs[2]));
  eg_mse_attrs *at = EG_ATTRS(n, eg_mse_attrs);
  EG_TRY(arg_reduction(n, 3, false, &at->reduction));
  /* ATen: norm uses self's own numel, even when broadcasting makes the result larger */
  at->norm = at->reduction == EG_REDUCTION_MEAN ? (float)(2.0 / (double)eg_value_numel(vs[1]))
                                                : 2.0f;
  EG_TRY(broadcast_all(n, 3, vs, names));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, at->rank, at->shape);
}

eg_status eg_run_mse_loss_backward(const eg_exec *ex, const eg_node *n) {
  static const int pos[] = {1, 2, 0};
  static const char *const kw[] = {"self", "target", "grad_output"};
  eg_mse_geom geo;
  mse_geom(ex, n, 3, pos, kw, &geo);
  eg_mse_loss_backward_f32(&geo, EG_ATTRS(n, eg_mse_attrs)->norm,
                           eg_exec_arg(ex, n, 1, "self"), eg_exec_arg(ex, n, 2, "target"),
                           eg_exec_arg(ex, n, 0, "grad_output"), eg_exec_out(ex, n));
  return EG_OK;
}
