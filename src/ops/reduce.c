/* reduce.c — aten.sum and aten.mean, whole-tensor and over a list of dims.
 *
 *   sum.default(self, *, dtype=None)                           -> []
 *   sum.dim_IntList(self, dim, keepdim=False, *, dtype=None)   -> kept dims (1 where reduced
 *                                                                 if keepdim)
 *   mean.default / mean.dim: the same arguments, the sum divided by the number of elements
 *   reduced (an empty reduction gives NaN, as ATen's 0/0).
 * `dim` None or [] reduces every dim; dims may be negative (a 0-d tensor accepts 0 and -1);
 * a dim named twice is an error, as in ATen.
 *
 * Dtypes, by ATen's rules: sum of an integer or bool tensor is int64, otherwise the input's
 * dtype; `dtype=` overrides. mean needs a floating result (input dtype or `dtype=`). Inputs:
 * float32/64, int64/32, int8, uint8, bool; results: float32, float64, int64. Converting a
 * floating input to an integer sum (ATen truncates each element) is not supported.
 *
 * The sum itself is the linear-pass kernel of kernels/sum_dense.h, accumulating in double
 * (floating inputs) or int64 (integer inputs) into the output when it already has that type,
 * otherwise into scratch, followed by one conversion pass (and the division, for mean). */
#include <string.h>

#include "kernels/sum_dense.h"
#include "ops/op.h"

typedef struct eg_reduce_attrs {
  eg_sum_geom geom;
  double divisor;      /* 1 for sum; the number of elements reduced for mean */
  bool in_acc_output;  /* the output has the accumulator's type: accumulate into it */
  size_t acc_bytes;    /* scratch bytes before the kernel's own scratch (64-byte multiple) */
} eg_reduce_attrs;
EG_ATTRS_FIT(eg_reduce_attrs);

static bool is_floating(eg_dtype d) {
  return d == EG_DTYPE_FLOAT32 || d == EG_DTYPE_FLOAT64 || d == EG_DTYPE_FLOAT16;
}

static bool input_supported(eg_dtype d) {
  return d == EG_DTYPE_FLOAT32 || d == EG_DTYPE_FLOAT64 || d == EG_DTYPE_INT64 ||
         d == EG_DTYPE_INT32 || d == EG_DTYPE_INT8 || d == EG_DTYPE_UINT8 || d == EG_DTYPE_BOOL;
}

/* The result dtype by ATen's rules, or an error. `dtype_pos` is dtype's schema position. */
static eg_status result_dtype(const eg_node *n, const eg_value *self, bool mean, int dtype_pos,
                              eg_dtype *out) {
  const eg_arg *a = eg_node_arg(n, dtype_pos, "dtype");
  bool given = a && a->kind != EG_ARG_NONE;
  *out = is_floating(self->dtype) || mean ? self->dtype : EG_DTYPE_INT64;
  EG_TRY(eg_arg_opt_dtype(n, dtype_pos, "dtype", out));
  if (mean && !is_floating(*out))
    return eg_node_error(n, EG_ERR_INVALID, "%s %s (%s): mean needs a floating result dtype "
                         "(ATen cannot infer one)", given ? "dtype" : "input dtype",
                         eg_dtype_name(*out), eg_op_target(n->op));
  if (!input_supported(self->dtype))
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "input dtype %s: %s supports float32, float64, "
                         "int64, int32, int8, uint8 and bool inputs", eg_dtype_name(self->dtype),
                         eg_op_target(n->op));
  if (*out != EG_DTYPE_FLOAT32 && *out != EG_DTYPE_FLOAT64 && *out != EG_DTYPE_INT64)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "result dtype %s: %s gives float32, float64 or "
                         "int64 results", eg_dtype_name(*out), eg_op_target(n->op));
  if (is_floating(self->dtype) && !is_floating(*out))
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "dtype %s for a %s input: truncating floating "
                         "elements to an integer sum is not supported", eg_dtype_name(*out),
                         eg_dtype_name(self->dtype));
  return EG_OK;
}

/* Parses `dim` (schema position 1) into reduced[]; None or [] marks every dim. */
static eg_status reduced_dims(const eg_node *n, const eg_value *self, bool *reduced) {
  int64_t dims[EG_MAX_RANK];
  int nd;
  EG_TRY(eg_arg_opt_int_list(n, 1, "dim", dims, 0, EG_MAX_RANK, &nd));
  for (int d = 0; d < EG_MAX_RANK; d++) reduced[d] = nd <= 0;
  for (int i = 0; i < nd; i++) {
    int d = eg_wrap_dim(dims[i], self->rank);
    if (d < 0)
      return eg_node_error(n, EG_ERR_INVALID, "argument dim (#1) element %d is %lld: out of "
                           "range for rank %d", i, (long long)dims[i], self->rank);
    if (reduced[d])
      return eg_node_error(n, EG_ERR_INVALID, "argument dim (#1) names dim %d twice: each dim "
                           "may be reduced once", d);
    reduced[d] = true;
  }
  return EG_OK;
}

static eg_status check_reduce(eg_graph *g, eg_node *n, bool has_dim, bool mean) {
  static const char *const plain[] = {"self", "dtype", NULL};
  static const char *const with_dim[] = {"self", "dim", "keepdim", "dtype", NULL};
  EG_TRY(eg_node_check_arity(n, has_dim ? 2 : 1, has_dim ? 3 : 1, has_dim ? with_dim : plain));
  const eg_value *self;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &self));
  eg_dtype dtype;
  EG_TRY(result_dtype(n, self, mean, has_dim ? 3 : 1, &dtype));
  bool reduced[EG_MAX_RANK], keepdim = false;
  if (has_dim) {
    EG_TRY(reduced_dims(n, self, reduced));
    EG_TRY(eg_arg_opt_bool(n, 2, "keepdim", &keepdim));
  } else {
    for (int d = 0; d < EG_MAX_RANK; d++) reduced[d] = true;
  }

  eg_reduce_attrs *at = EG_ATTRS(n, eg_reduce_attrs);
  int64_t shape[EG_MAX_RANK];
  int rank = 0;
  at->divisor = 1;
  for (int d = 0; d < self->rank; d++) {
    if (!reduced[d]) shape[rank++] = self->shape[d];
    else if (keepdim) shape[rank++] = 1;
    if (reduced[d] && mean) at->divisor *= (double)self->shape[d];
  }
  eg_sum_geom_init(&at->geom, self->rank, self->shape, reduced);
  eg_dtype acc = is_floating(self->dtype) ? EG_DTYPE_FLOAT64 : EG_DTYPE_INT64;
  at->in_acc_output = dtype == acc;
  at->acc_bytes = at->in_acc_output ? 0 : ((size_t)at->geom.out_numel * 8 + 63) & ~(size_t)63;
  n->scratch_bytes = at->acc_bytes + eg_sum_dense_scratch(&at->geom);
  return eg_out_tensor(g, n, dtype, rank, shape);
}

eg_status eg_check_sum_default(eg_graph *g, eg_node *n) {
  return check_reduce(g, n, false, false);
}
eg_status eg_check_sum_dim_IntList(eg_graph *g, eg_node *n) {
  return check_reduce(g, n, true, false);
}
eg_status eg_check_mean_default(eg_graph *g, eg_node *n) {
  return check_reduce(g, n, false, true);
}
eg_status eg_check_mean_dim(eg_graph *g, eg_node *n) { return check_reduce(g, n, true, true); }

/* acc (double or int64, by the input) -> the output dtype, divided by `divisor`. */
static void finish(const eg_reduce_attrs *at, bool int_acc, const void *acc, const eg_value *ov,
                   void *out) {
  const int64_t n = at->geom.out_numel;
  const double div = at->divisor;
  if (int_acc) {
    const int64_t *a = acc;
    if (ov->dtype == EG_DTYPE_FLOAT32)
      for (int64_t i = 0; i < n; i++) ((float *)out)[i] = (float)((double)a[i] / div);
    else if (ov->dtype == EG_DTYPE_FLOAT64)
      for (int64_t i = 0; i < n; i++) ((double *)out)[i] = (double)a[i] / div;
    /* int64 results were accumulated in place (never a mean) */
    return;
  }
  const double *a = acc;
  if (ov->dtype == EG_DTYPE_FLOAT32)
    for (int64_t i = 0; i < n; i++) ((float *)out)[i] = (float)(a[i] / div);
  else if (div != 1)
    for (int64_t i = 0; i < n; i++) ((double *)out)[i] = a[i] / div;
}

static eg_status run_reduce(const eg_exec *ex, const eg_node *n) {
  const eg_reduce_attrs *at = EG_ATTRS(n, eg_reduce_attrs);
  const eg_value *xv = eg_exec_argv(ex, n, 0, "self");
  const void *x = eg_exec_arg(ex, n, 0, "self");
  void *out = eg_exec_out(ex, n);
  void *acc = at->in_acc_output ? out : ex->scratch;
  void *ks = (unsigned char *)ex->scratch + at->acc_bytes;
  const eg_sum_geom *geo = &at->geom;
  switch (xv->dtype) {
  case EG_DTYPE_FLOAT32: eg_sum_dense_f32(geo, x, acc, ks); break;
  case EG_DTYPE_FLOAT64: eg_sum_dense_f64(geo, x, acc, ks); break;
  case EG_DTYPE_INT64: eg_sum_dense_i64(geo, x, acc, ks); break;
  case EG_DTYPE_INT32: eg_sum_dense_i32(geo, x, acc, ks); break;
  case EG_DTYPE_INT8: eg_sum_dense_i8(geo, x, acc, ks); break;
  case EG_DTYPE_UINT8:
  case EG_DTYPE_BOOL: eg_sum_dense_u8(geo, x, acc, ks); break;
  default: EG_ASSERT(!"dtype rejected by the check"); return EG_ERR_UNSUPPORTED;
  }
  bool int_acc = xv->dtype != EG_DTYPE_FLOAT32 && xv->dtype != EG_DTYPE_FLOAT64;
  finish(at, int_acc, acc, eg_exec_outv(ex, n), out);
  return EG_OK;
}

bool eg_op_sum_channels_f32(const eg_graph *g, const eg_node *n) {
  const int32_t x = eg_exec_arg_id(n, 0, "self");
  if (n->op != EG_OP_sum_dim_IntList || x < 0 || n->output < 0) return false;
  const eg_value *xv = &g->values[x], *ov = &g->values[n->output];
  bool reduced[EG_MAX_RANK];
  if (xv->kind != EG_VALUE_TENSOR || xv->dtype != EG_DTYPE_FLOAT32 || xv->rank != 4 ||
      ov->dtype != EG_DTYPE_FLOAT32 || reduced_dims(n, xv, reduced) != EG_OK ||
      !reduced[0] || reduced[1] || !reduced[2] || !reduced[3])
    return false;
  return xv->shape[2] * xv->shape[3] > 1;
}

eg_status eg_run_sum_sq_dev(const eg_exec *ex, const eg_node *n, int32_t x, int32_t m,
                            float alpha) {
  const eg_reduce_attrs *at = EG_ATTRS(n, eg_reduce_attrs);
  double *acc = ex->scratch; /* a float32 output: never the accumulator */
  eg_sum_sq_dev_f32(&at->geom, ex->data[x], ex->data[m], alpha,
                    eg_value_numel(&ex->g->values[m]) > 1, acc,
                    (unsigned char *)ex->scratch + at->acc_bytes);
  finish(at, false, acc, eg_exec_outv(ex, n), eg_exec_out(ex, n));
  return EG_OK;
}

eg_status eg_run_sum_default(const eg_exec *ex, const eg_node *n) { return run_reduce(ex, n); }
eg_status eg_run_sum_dim_IntList(const eg_exec *ex, const eg_node *n) {
  return run_reduce(ex, n);
}
eg_status eg_run_mean_default(const eg_exec *ex, const eg_node *n) { return run_reduce(ex, n); }
eg_status eg_run_mean_dim(const eg_exec *ex, const eg_node *n) { return run_reduce(ex, n); }
