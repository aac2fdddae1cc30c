/* shape.c — shape ops, copies and creation: t, view, _unsafe_view, _reshape_alias, reshape,
 * permute, transpose.int, expand, detach, alias, clone, _to_copy, ones_like, zeros_like, full,
 * scalar_tensor.
 *
 * ATen's views alias their input; edgegrad's values are dense C-ordered buffers, one per node,
 * so every op here writes a dense copy of what the view would show:
 *   - view, _unsafe_view, reshape, _reshape_alias, detach, alias, clone: the same bytes
 *     (memcpy); _reshape_alias is accepted only with the contiguous stride of its size (a plain
 *     reshape, as traced graphs have it) and rejected otherwise, never computed wrongly. An
 *     empty result's strides are arbitrary (ATen computes them from self's), so they are not
 *     checked.
 *   - t, permute, transpose.int, expand: a strided gather (kernels/copy_dense.h), 0 strides
 *     for expand.
 *   - _to_copy: a dtype conversion; ones_like, zeros_like, full, scalar_tensor: fills.
 * Tensor options are checked, not ignored: layout must be strided, device cpu; memory_format
 * only changes strides, which dense values do not have, so it is accepted (with ATen's rank
 * rule for channels_last). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/copy_dense.h"
#include "ops/op.h"
#include "util/checked.h"

static void contiguous_strides(const int64_t *shape, int rank, int64_t *stride) {
  int64_t step = 1;
  for (int d = rank - 1; d >= 0; d--) {
    stride[d] = step;
    step *= shape[d];
  }
}

/* Copies the argument tensor's bytes to the output (same size, checked). */
/* The same bytes; nothing to do when the runtime planned the result onto self
 * (eg_copy_source). */
static eg_status run_copy(const eg_exec *ex, const eg_node *n) {
  const size_t bytes = eg_value_nbytes(eg_exec_outv(ex, n));
  void *out = eg_exec_out(ex, n);
  const void *in = eg_exec_arg(ex, n, 0, "self");
  if (bytes && out != in) memcpy(out, in, bytes);
  return EG_OK;
}

int32_t eg_copy_source(const eg_graph *g, const eg_node *n) {
  if (n->output < 0) return -1;
  switch (n->op) {
  case EG_OP_getitem: return eg_getitem_element(g, n);
  case EG_OP_view:
  case EG_OP__unsafe_view:
  case EG_OP_reshape:
  case EG_OP__reshape_alias:
  case EG_OP_detach:
  case EG_OP_alias:
  case EG_OP_clone: {
    const eg_arg *a = eg_node_arg(n, 0, "self");
    if (!a || a->kind != EG_ARG_VALUE || a->value < 0) return -1;
    return eg_value_nbytes(&g->values[a->value]) == eg_value_nbytes(&g->values[n->output])
               ? a->value
               : -1;
  }
  default: return -1;
  }
}

/* out[k] = in[strided offset of k]: the shared run of t, permute and expand. */
static void run_gather(const eg_exec *ex, const eg_node *n, const int64_t *in_stride) {
  const eg_value *out = eg_exec_outv(ex, n);
  eg_iter it;
  eg_iter_init(&it, out->shape, out->rank, 1, &in_stride);
  eg_copy_strided_dense(&it, eg_dtype_size(out->dtype), eg_exec_arg(ex, n, 0, "self"),
                        eg_exec_out(ex, n));
}

/* ---- tensor options ---- */

/* Checks the tensor-option keywords present among layout, device, pin_memory, non_blocking and
 * memory_format (for a result of rank `rank`). */
static eg_status check_options(const eg_node *n, int rank) {
  const eg_arg *a = eg_node_arg(n, -1, "layout");
  if (a && a->kind != EG_ARG_NONE) {
    if (a->kind != EG_ARG_LAYOUT)
      return eg_node_error(n, EG_ERR_INVALID, "argument layout is not a layout");
    if (strcmp(a->str, "strided") != 0)
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "layout '%s': edgegrad's tensors are "
                           "strided (dense)", a->str);
  }
  a = eg_node_arg(n, -1, "device");
  if (a && a->kind != EG_ARG_NONE) {
    if (a->kind != EG_ARG_DEVICE)
      return eg_node_error(n, EG_ERR_INVALID, "argument device is not a device");
    if (strcmp(a->str, "cpu") != 0)
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "device '%s': graphs are traced and run on "
                           "the cpu", a->str);
  }
  static const char *const flags[] = {"pin_memory", "non_blocking"};
  for (int i = 0; i < 2; i++) {
    a = eg_node_arg(n, -1, flags[i]);
    if (a && a->kind != EG_ARG_NONE && a->kind != EG_ARG_BOOL)
      return eg_node_error(n, EG_ERR_INVALID, "argument %s is not a bool", flags[i]);
  }
  a = eg_node_arg(n, -1, "memory_format");
  if (a && a->kind != EG_ARG_NONE) {
    if (a->kind != EG_ARG_MEMORY_FORMAT)
      return eg_node_error(n, EG_ERR_INVALID, "argument memory_format is not a memory format");
    static const struct {
      const char *name;
      int rank; /* required rank, 0: any */
    } formats[] = {{"preserve_format", 0}, {"contiguous_format", 0}, {"channels_last", 4},
                   {"channels_last_3d", 5}};
    int f = 0, count = (int)(sizeof formats / sizeof formats[0]);
    while (f < count && strcmp(formats[f].name, a->str) != 0) f++;
    if (f == count)
      return eg_node_error(n, EG_ERR_INVALID, "memory_format '%s' unknown", a->str);
    if (formats[f].rank && formats[f].rank != rank)
      return eg_node_error(n, EG_ERR_INVALID, "memory_format %s on a rank-%d tensor: it needs "
                           "rank %d", a->str, rank, formats[f].rank);
  }
  return EG_OK;
}

/* ---- t, permute, expand ---- */

static const char *const kw_self[] = {"self", NULL};

eg_status eg_check_t(eg_graph *g, eg_node *n) {
  EG_TRY(eg_node_check_arity(n, 1, 1, kw_self));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  if (x->rank > 2)
    return eg_node_error(n, EG_ERR_INVALID, "self rank %d: t expects a tensor of rank <= 2",
                         x->rank);
  int64_t shape[2];
  for (int d = 0; d < x->rank; d++) shape[d] = x->shape[x->rank - 1 - d];
  return eg_out_tensor(g, n, x->dtype, x->rank, shape);
}

eg_status eg_run_t(const eg_exec *ex, const eg_node *n) {
  const eg_value *x = eg_exec_argv(ex, n, 0, "self");
  if (x->rank < 2) return run_copy(ex, n);
  const int64_t stride[2] = {1, x->shape[1]};
  run_gather(ex, n, stride);
  return EG_OK;
}

typedef struct eg_permute_attrs {
  int8_t perm[EG_MAX_RANK]; /* output dim d is input dim perm[d] */
} eg_permute_attrs;
EG_ATTRS_FIT(eg_permute_attrs);

eg_status eg_check_permute(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "dims", NULL};
  EG_TRY(eg_node_check_arity(n, 2, 2, known));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  int64_t dims[EG_MAX_RANK];
  int k;
  EG_TRY(eg_arg_int_list(n, 1, "dims", dims, 0, EG_MAX_RANK, &k));
  char buf[160];
  if (k != x->rank)
    return eg_node_error(n, EG_ERR_INVALID, "dims %s has %d entries for self of rank %d: "
                         "permute needs one per dim", eg_fmt_ints(buf, sizeof buf, dims, k), k,
                         x->rank);
  eg_permute_attrs *at = EG_ATTRS(n, eg_permute_attrs);
  bool seen[EG_MAX_RANK] = {false};
  int64_t shape[EG_MAX_RANK];
  for (int d = 0; d < k; d++) {
    const int w = eg_wrap_dim(dims[d], x->rank);
    if (w < 0)
      return eg_node_error(n, EG_ERR_INVALID, "dims[%d] is %lld: out of range for rank %d", d,
                           (long long)dims[d], x->rank);
    if (seen[w])
      return eg_node_error(n, EG_ERR_INVALID, "dims %s: dim %d repeats; permute needs each dim "
                           "once", eg_fmt_ints(buf, sizeof buf, dims, k), w);
    seen[w] = true;
    at->perm[d] = (int8_t)w;
    shape[d] = x->shape[w];
  }
  return eg_out_tensor(g, n, x->dtype, x->rank, shape);
}

eg_status eg_run_permute(const eg_exec *ex, const eg_node *n) {
  const eg_value *x = eg_exec_argv(ex, n, 0, "self");
  const eg_permute_attrs *at = EG_ATTRS(n, eg_permute_attrs);
  int64_t contiguous[EG_MAX_RANK], stride[EG_MAX_RANK];
  contiguous_strides(x->shape, x->rank, contiguous);
  for (int d = 0; d < x->rank; d++) stride[d] = contiguous[at->perm[d]];
  run_gather(ex, n, stride);
  return EG_OK;
}

/* transpose.int(self, dim0, dim1): the permute swapping two dims (a 0-d self takes -1 and 0
 * and is copied, as ATen's maybe_wrap_dim allows). */
eg_status eg_check_transpose_int(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "dim0", "dim1", NULL};
  EG_TRY(eg_node_check_arity(n, 3, 3, known));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  static const char *const names[2] = {"dim0", "dim1"};
  int w[2];
  for (int i = 0; i < 2; i++) {
    int64_t dim;
    EG_TRY(eg_arg_int(n, 1 + i, names[i], &dim));
    w[i] = eg_wrap_dim(dim, x->rank);
    if (w[i] < 0) {
      const int r = x->rank > 0 ? x->rank : 1;
      return eg_node_error(n, EG_ERR_INVALID, "%s is %lld: out of range [%d, %d] for rank %d",
                           names[i], (long long)dim, -r, r - 1, x->rank);
    }
  }
  eg_permute_attrs *at = EG_ATTRS(n, eg_permute_attrs);
  int64_t shape[EG_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    at->perm[d] = (int8_t)(d == w[0] ? w[1] : d == w[1] ? w[0] : d);
    shape[d] = x->shape[at->perm[d]];
  }
  return eg_out_tensor(g, n, x->dtype, x->rank, shape);
}

eg_status eg_run_transpose_int(const eg_exec *ex, const eg_node *n) {
  return eg_run_permute(ex, n);
}

eg_status eg_check_expand(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "size", "implicit", NULL};
  EG_TRY(eg_node_check_arity(n, 2, 2, known));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  bool implicit = false;
  EG_TRY(eg_arg_opt_bool(n, -1, "implicit", &implicit));
  int64_t size[EG_MAX_RANK];
  int k;
  EG_TRY(eg_arg_int_list(n, 1, "size", size, 0, EG_MAX_RANK, &k));
  char sbuf[160], xbuf[160];
  eg_fmt_ints(sbuf, sizeof sbuf, size, k);
  eg_fmt_ints(xbuf, sizeof xbuf, x->shape, x->rank);
  if (k < x->rank)
    return eg_node_error(n, EG_ERR_INVALID, "size %s has %d entries for self %s: expand cannot "
                         "drop dims", sbuf, k, xbuf);
  int64_t shape[EG_MAX_RANK];
  const int lead = k - x->rank;
  for (int d = 0; d < k; d++) {
    if (d < lead) {
      if (size[d] < 0)
        return eg_node_error(n, EG_ERR_INVALID, "size %s: entry %d is %lld, but a new leading "
                             "dim needs a size >= 0", sbuf, d, (long long)size[d]);
      shape[d] = size[d];
      continue;
    }
    const int64_t have = x->shape[d - lead];
    if (size[d] == -1) shape[d] = have;
    else if (size[d] < -1)
      return eg_node_error(n, EG_ERR_INVALID, "size %s: entry %d is %lld: sizes are >= 0 or -1 "
                           "(keep)", sbuf, d, (long long)size[d]);
    else if (have != 1 && size[d] != have)
      return eg_node_error(n, EG_ERR_INVALID, "size %s vs self %s: dim %d of size %lld can only "
                           "be expanded from 1", sbuf, xbuf, d, (long long)have);
    else shape[d] = size[d];
  }
  if (eg_shape_numel(shape, k, EG_MAX_NUMEL) < 0)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "size %s: more than 2^40 elements", sbuf);
  return eg_out_tensor(g, n, x->dtype, k, shape);
}

eg_status eg_run_expand(const eg_exec *ex, const eg_node *n) {
  const eg_value *x = eg_exec_argv(ex, n, 0, "self");
  const eg_value *out = eg_exec_outv(ex, n);
  int64_t stride[EG_MAX_RANK];
  eg_broadcast_strides(x->shape, x->rank, out->shape, out->rank, stride);
  run_gather(ex, n, stride);
  return EG_OK;
}

/* ---- view, _unsafe_view, reshape, _reshape_alias ---- */

/* The shape `size` (k entries, at most one -1 to infer) gives to self's elements; `what` names
 * the argument in messages. */
static eg_status infer_size(const eg_node *n, const eg_value *x, const char *what,
                            const int64_t *size, int k, int64_t *shape) {
  char sbuf[160], xbuf[160];
  eg_fmt_ints(sbuf, sizeof sbuf, size, k);
  eg_fmt_ints(xbuf, sizeof xbuf, x->shape, x->rank);
  const int64_t have = eg_value_numel(x);
  int infer = -1;
  for (int d = 0; d < k; d++) {
    shape[d] = size[d];
    if (size[d] >= 0) continue;
    if (size[d] != -1)
      return eg_node_error(n, EG_ERR_INVALID, "%s %s: entry %d is %lld: sizes are >= 0, or -1 "
                           "once to infer", what, sbuf, d, (long long)size[d]);
    if (infer >= 0)
      return eg_node_error(n, EG_ERR_INVALID, "%s %s: more than one -1: only one dim can be "
                           "inferred", what, sbuf);
    infer = d;
  }
  if (infer >= 0) shape[infer] = 1;
  /* product of the sizes besides the -1 (checked.h: a zero hides no huge product) */
  const int64_t known = eg_shape_numel(shape, k, EG_MAX_NUMEL);
  if (known < 0)
    return eg_node_error(n, EG_ERR_INVALID, "%s %s (over 2^40 elements) does not match self %s "
                         "(%lld elements): the element count must be kept", what, sbuf, xbuf,
                         (long long)have);
  if (infer >= 0 && known == 0 && have == 0)
    return eg_node_error(n, EG_ERR_INVALID, "%s %s for self %s: the -1 is ambiguous when the "
                         "other sizes multiply to 0", what, sbuf, xbuf);
  if (infer < 0 && known == have) return EG_OK;
  if (infer >= 0 && known > 0 && have % known == 0) {
    shape[infer] = have / known;
    return EG_OK;
  }
  return eg_node_error(n, EG_ERR_INVALID, "%s %s (%lld elements%s) does not match self %s "
                       "(%lld elements): the element count must be kept", what, sbuf,
                       (long long)known, infer >= 0 ? " besides the -1" : "", xbuf,
                       (long long)have);
}

/* view/_unsafe_view/reshape(self, size): a dense copy under a new shape. */
static eg_status check_view(eg_graph *g, eg_node *n, const char *size_kw) {
  const char *const known[] = {"self", size_kw, NULL};
  EG_TRY(eg_node_check_arity(n, 2, 2, known));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  int64_t size[EG_MAX_RANK], shape[EG_MAX_RANK];
  int k;
  EG_TRY(eg_arg_int_list(n, 1, size_kw, size, 0, EG_MAX_RANK, &k));
  EG_TRY(infer_size(n, x, size_kw, size, k, shape));
  return eg_out_tensor(g, n, x->dtype, k, shape);
}

eg_status eg_check_view(eg_graph *g, eg_node *n) { return check_view(g, n, "size"); }
eg_status eg_run_view(const eg_exec *ex, const eg_node *n) { return run_copy(ex, n); }

eg_status eg_check__unsafe_view(eg_graph *g, eg_node *n) { return check_view(g, n, "size"); }
eg_status eg_run__unsafe_view(const eg_exec *ex, const eg_node *n) { return run_copy(ex, n); }

eg_status eg_check_reshape(eg_graph *g, eg_node *n) { return check_view(g, n, "shape"); }
eg_status eg_run_reshape(const eg_exec *ex, const eg_node *n) { return run_copy(ex, n); }

/* _reshape_alias(self, size, stride): make_fx records reshape this way, with the contiguous
 * stride of `size`. Strides of size-1 dims never matter, nor any stride of an empty result
 * (ATen derives them from self's, e.g. [1, 1] for size [3, 0]). Other strides describe a view no dense
 * copy of self's bytes can give: refused. */
eg_status eg_check__reshape_alias(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "size", "stride", NULL};
  EG_TRY(eg_node_check_arity(n, 3, 3, known));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  int64_t size[EG_MAX_RANK], stride[EG_MAX_RANK], shape[EG_MAX_RANK], want[EG_MAX_RANK];
  int k, ks;
  EG_TRY(eg_arg_int_list(n, 1, "size", size, 0, EG_MAX_RANK, &k));
  EG_TRY(eg_arg_int_list(n, 2, "stride", stride, 0, EG_MAX_RANK, &ks));
  char sbuf[160], tbuf[160], wbuf[160];
  eg_fmt_ints(sbuf, sizeof sbuf, size, k);
  eg_fmt_ints(tbuf, sizeof tbuf, stride, ks);
  if (ks != k)
    return eg_node_error(n, EG_ERR_INVALID, "stride %s has %d entries for size %s: one per dim",
                         tbuf, ks, sbuf);
  for (int d = 0; d < k; d++)
    if (size[d] < 0)
      return eg_node_error(n, EG_ERR_INVALID, "size %s: entry %d is %lld: _reshape_alias takes "
                           "explicit sizes >= 0", sbuf, d, (long long)size[d]);
  EG_TRY(infer_size(n, x, "size", size, k, shape));
  contiguous_strides(shape, k, want);
  /* no element: any stride addresses them */
  const bool empty = eg_shape_numel(shape, k, EG_MAX_NUMEL) == 0;
  for (int d = 0; d < k && !empty; d++)
    if (shape[d] > 1 && stride[d] != want[d])
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "stride %s for size %s is not the contiguous "
                           "stride %s: values are dense, so _reshape_alias must be a plain "
                           "reshape", tbuf, sbuf, eg_fmt_ints(wbuf, sizeof wbuf, want, k));
  return eg_out_tensor(g, n, x->dtype, k, shape);
}

eg_status eg_run__reshape_alias(const eg_exec *ex, const eg_node *n) { return run_copy(ex, n); }

/* ---- detach, clone, _to_copy ---- */

eg_status eg_check_detach(eg_graph *g, eg_node *n) {
  EG_TRY(eg_node_check_arity(n, 1, 1, kw_self));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  return eg_out_tensor(g, n, x->dtype, x->rank, x->shape);
}

eg_status eg_run_detach(const eg_exec *ex, const eg_node *n) { return run_copy(ex, n); }

/* alias: a view of all of self, the same bytes here. */
eg_status eg_check_alias(eg_graph *g, eg_node *n) { return eg_check_detach(g, n); }
eg_status eg_run_alias(const eg_exec *ex, const eg_node *n) { return run_copy(ex, n); }

/* lift_fresh_copy: how a traced torch.tensor(...) constant enters the graph — a copy. */
eg_status eg_check_lift_fresh_copy(eg_graph *g, eg_node *n) { return eg_check_detach(g, n); }
eg_status eg_run_lift_fresh_copy(const eg_exec *ex, const eg_node *n) { return run_copy(ex, n); }

eg_status eg_check_clone(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "memory_format", NULL};
  EG_TRY(eg_node_check_arity(n, 1, 1, known));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  EG_TRY(check_options(n, x->rank));
  return eg_out_tensor(g, n, x->dtype, x->rank, x->shape);
}

eg_status eg_run_clone(const eg_exec *ex, const eg_node *n) { return run_copy(ex, n); }

eg_status eg_check__to_copy(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self",       "dtype",        "layout",        "device",
                                      "pin_memory", "non_blocking", "memory_format", NULL};
  EG_TRY(eg_node_check_arity(n, 1, 1, known));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  eg_dtype dtype = x->dtype;
  EG_TRY(eg_arg_opt_dtype(n, -1, "dtype", &dtype));
  EG_TRY(check_options(n, x->rank));
  if (!eg_cast_supported(x->dtype, dtype))
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "dtype %s to %s: no conversion (float16 is "
                         "copied only to itself)", eg_dtype_name(x->dtype),
                         eg_dtype_name(dtype));
  return eg_out_tensor(g, n, dtype, x->rank, x->shape);
}

eg_status eg_run__to_copy(const eg_exec *ex, const eg_node *n) {
  const eg_value *x = eg_exec_argv(ex, n, 0, "self");
  eg_cast_dense(eg_exec_arg(ex, n, 0, "self"), x->dtype, eg_exec_out(ex, n),
                eg_exec_outv(ex, n)->dtype, eg_value_numel(x));
  return EG_OK;
}

/* ---- ones_like, zeros_like, full ---- */

typedef struct eg_fill_attrs {
  _Alignas(8) unsigned char value[8]; /* one element of the output dtype */
} eg_fill_attrs;
EG_ATTRS_FIT(eg_fill_attrs);

#define FILL_STORE(attrs, type, v)          \
  do {                                      \
    const type fill_v_ = (type)(v);         \
    memcpy((attrs)->value, &fill_v_, sizeof fill_v_); \
  } while (0)

/* The element `x` (int if !is_float, else f) gives in dtype d, with ATen's overflow rule
 * (fill_ and full refuse values the dtype cannot hold; inf and NaN fit the float dtypes; a
 * negative value down to -max wraps into uint8). */
static eg_status fill_value(const eg_node *n, bool x_is_float, int64_t i, double f, eg_dtype d,
                            eg_fill_attrs *at) {
  const double v = x_is_float ? f : (double)i;
  char buf[48];
  if (x_is_float) snprintf(buf, sizeof buf, "%g", f);
  else snprintf(buf, sizeof buf, "%lld", (long long)i);
  memset(at->value, 0, sizeof at->value);
  double lo = 0, hi = 0;
  switch (d) {
  case EG_DTYPE_FLOAT32:
    if (isfinite(v) && fabs(v) > FLT_MAX) goto overflow;
    FILL_STORE(at, float, v);
    return EG_OK;
  case EG_DTYPE_FLOAT64: FILL_STORE(at, double, v); return EG_OK;
  case EG_DTYPE_BOOL: FILL_STORE(at, uint8_t, x_is_float ? f != 0 : i != 0); return EG_OK;
  case EG_DTYPE_INT64:
    if (!x_is_float) {
      FILL_STORE(at, int64_t, i);
      return EG_OK;
    }
    if (!(f >= -0x1p63 && f < 0x1p63)) goto overflow;
    FILL_STORE(at, int64_t, f);
    return EG_OK;
  case EG_DTYPE_INT32: lo = INT32_MIN, hi = INT32_MAX; break;
  case EG_DTYPE_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
  case EG_DTYPE_UINT8: lo = -(double)UINT8_MAX, hi = UINT8_MAX; break;
  default:
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "dtype %s: fills of this dtype are not "
                         "supported", eg_dtype_name(d));
  }
  if (!(v >= lo && v <= hi)) goto overflow; /* NaN too */
  const int32_t t = x_is_float ? (int32_t)f : (int32_t)i;
  if (d == EG_DTYPE_INT32) FILL_STORE(at, int32_t, t);
  else if (d == EG_DTYPE_INT8) FILL_STORE(at, int8_t, t);
  else FILL_STORE(at, uint8_t, (uint32_t)t);
  return EG_OK;
overflow:
  return eg_node_error(n, EG_ERR_INVALID, "fill value %s: cannot be converted to %s without "
                       "overflow", buf, eg_dtype_name(d));
}

static eg_status run_fill(const eg_exec *ex, const eg_node *n) {
  const eg_value *out = eg_exec_outv(ex, n);
  eg_fill_dense(eg_exec_out(ex, n), eg_dtype_size(out->dtype), EG_ATTRS(n, eg_fill_attrs)->value,
                eg_value_numel(out));
  return EG_OK;
}

/* ones_like / zeros_like(self, *, dtype, layout, device, pin_memory, memory_format). */
static eg_status check_like(eg_graph *g, eg_node *n, int one) {
  static const char *const known[] = {"self",       "dtype",         "layout", "device",
                                      "pin_memory", "memory_format", NULL};
  EG_TRY(eg_node_check_arity(n, 1, 1, known));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  eg_dtype dtype = x->dtype;
  EG_TRY(eg_arg_opt_dtype(n, -1, "dtype", &dtype));
  EG_TRY(check_options(n, x->rank));
  eg_fill_attrs *at = EG_ATTRS(n, eg_fill_attrs);
  if (dtype == EG_DTYPE_FLOAT16) {
    const uint16_t half = one ? 0x3C00 : 0; /* 1.0 and 0.0 in IEEE binary16 */
    memset(at->value, 0, sizeof at->value);
    memcpy(at->value, &half, sizeof half);
  } else {
    EG_TRY(fill_value(n, false, one, 0.0, dtype, at));
  }
  return eg_out_tensor(g, n, dtype, x->rank, x->shape);
}

eg_status eg_check_ones_like(eg_graph *g, eg_node *n) { return check_like(g, n, 1); }
eg_status eg_run_ones_like(const eg_exec *ex, const eg_node *n) { return run_fill(ex, n); }
eg_status eg_check_zeros_like(eg_graph *g, eg_node *n) { return check_like(g, n, 0); }
eg_status eg_run_zeros_like(const eg_exec *ex, const eg_node *n) { return run_fill(ex, n); }

/* full(size, fill_value, *, dtype, layout, device, pin_memory). Without dtype, the op infers it
 * from the fill value: float -> float32 (the default dtype), int -> int64, and bool -> int64
 * too: torch 1.13 hands a Python bool to aten.full as an int Scalar (only the Python-level
 * torch.full infers bool, and then it passes dtype explicitly). */
eg_status eg_check_full(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"size",   "fill_value", "dtype",
                                      "layout", "device",     "pin_memory", NULL};
  EG_TRY(eg_node_check_arity(n, 2, 2, known));
  int64_t size[EG_MAX_RANK];
  int k;
  EG_TRY(eg_arg_int_list(n, 0, "size", size, 0, EG_MAX_RANK, &k));
  char sbuf[160];
  for (int d = 0; d < k; d++)
    if (size[d] < 0)
      return eg_node_error(n, EG_ERR_INVALID, "size %s: entry %d is %lld: sizes are >= 0",
                           eg_fmt_ints(sbuf, sizeof sbuf, size, k), d, (long long)size[d]);
  if (eg_shape_numel(size, k, EG_MAX_NUMEL) < 0)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "size %s: more than 2^40 elements",
                         eg_fmt_ints(sbuf, sizeof sbuf, size, k));
  const eg_arg *fv = eg_node_arg(n, 1, "fill_value");
  if (!fv || (fv->kind != EG_ARG_INT && fv->kind != EG_ARG_FLOAT && fv->kind != EG_ARG_BOOL))
    return eg_node_error(n, EG_ERR_INVALID, "argument fill_value (#1) is %s: expected a number",
                         fv ? "not a number" : "missing");
  eg_dtype dtype = fv->kind == EG_ARG_FLOAT ? EG_DTYPE_FLOAT32 : EG_DTYPE_INT64;
  EG_TRY(eg_arg_opt_dtype(n, -1, "dtype", &dtype));
  EG_TRY(check_options(n, k));
  const bool is_float = fv->kind == EG_ARG_FLOAT;
  const int64_t i = fv->kind == EG_ARG_INT ? fv->i : fv->kind == EG_ARG_BOOL ? fv->b : 0;
  EG_TRY(fill_value(n, is_float, i, is_float ? fv->f : 0.0, dtype, EG_ATTRS(n, eg_fill_attrs)));
  return eg_out_tensor(g, n, dtype, k, size);
}

eg_status eg_run_full(const eg_exec *ex, const eg_node *n) { return run_fill(ex, n); }

/* scalar_tensor(s, *, dtype, layout, device, pin_memory): a 0-d fill. Without dtype it is the
 * default dtype, float32, whatever the kind of s (torch 2's F.scaled_dot_product_attention
 * makes the 0 and -inf of a bool mask's float form with it). */
eg_status eg_check_scalar_tensor(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"s", "dtype", "layout", "device", "pin_memory", NULL};
  EG_TRY(eg_node_check_arity(n, 1, 1, known));
  const eg_arg *s = eg_node_arg(n, 0, "s");
  if (!s || (s->kind != EG_ARG_INT && s->kind != EG_ARG_FLOAT && s->kind != EG_ARG_BOOL))
    return eg_node_error(n, EG_ERR_INVALID, "argument s (#0) is %s: expected a number",
                         s ? "not a number" : "missing");
  eg_dtype dtype = EG_DTYPE_FLOAT32;
  EG_TRY(eg_arg_opt_dtype(n, -1, "dtype", &dtype));
  EG_TRY(check_options(n, 0));
  const bool is_float = s->kind == EG_ARG_FLOAT;
  const int64_t i = s->kind == EG_ARG_INT ? s->i : s->kind == EG_ARG_BOOL ? s->b : 0;
  EG_TRY(fill_value(n, is_float, i, is_float ? s->f : 0.0, dtype, EG_ATTRS(n, eg_fill_attrs)));
  const int64_t no_dims[1] = {0};
  return eg_out_tensor(g, n, dtype, 0, no_dims);
}

eg_status eg_run_scalar_tensor(const eg_exec *ex, const eg_node *n) { return run_fill(ex, n); }
