/* tensor.c — joining, splitting, slicing and creating tensors.
 *
 *   cat(tensors[], dim=0)     stack(tensors[], dim=0)
 *   split.Tensor(self, split_size, dim=0) -> tuple
 *   split_with_sizes(self, split_sizes, dim=0) -> tuple
 *   slice.Tensor(self, dim=0, start=None, end=None, step=1)
 *   slice_backward(grad_output, input_sizes, dim, start, end, step)
 *   select.int(self, dim, index)              select_backward(grad_output, input_sizes, dim, index)
 *   squeeze.dim(self, dim)   squeeze(self)    unsqueeze(self, dim)    repeat(self, repeats)
 *   empty.memory_format(size, *, dtype, layout, device, pin_memory, memory_format)
 *   empty_like(self, *, ...)   new_zeros(self, size, *, ...)   fill.Scalar(self, value)
 *   constant_pad_nd(self, pad, value=0)
 *
 * Rules are ATen 1.13's (messages quote its conditions): negative dims wrap; slice clamps
 * start/end into [0, size] (so end = INT64_MAX means "to the end") and needs step > 0; cat
 * skips 1-D empty tensors ([0]) for every shape rule (the legacy rule) and its result dtype is
 * the promotion of all inputs (stack's too: tensors of one shape joined along a new dim);
 * constant_pad_nd pads (negative: crops) the last len(pad)/2 dims; the backwards are
 * zeros(input_sizes) with grad_output copied (broadcast, as copy_ does) into the
 * sliced/selected part; repeat may add leading dims.
 *
 * Every output is a dense copy. The ATen views (slice, select, split, squeeze, unsqueeze) are
 * views of the input here too, but read through strides into a new buffer: each op is one or
 * a few calls of eg_strided_copy (src/kernels/strided_copy.h), so any dtype moves; only fill
 * converts a value and supports float32/64, int64/32/8, uint8 and bool. empty and empty_like
 * zero-fill, so results are deterministic; layout must be strided; device, pin_memory and
 * memory_format are accepted and ignored (values are dense, logically ordered buffers in
 * edgegrad's own memory). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/strided_copy.h"
#include "ops/op.h"
#include "ops/slice.h"

/* ---- shared helpers ---- */

typedef struct eg_dim_attrs {
  int32_t dim;
} eg_dim_attrs;
EG_ATTRS_FIT(eg_dim_attrs);

/* slice, slice_backward (index = start, len = result extent) and select, select_backward
 * (index, step 1, len 1): eg_slice_attrs, ops/slice.h. */

typedef struct eg_fill_attrs {
  _Alignas(8) unsigned char elem[8]; /* the value in the output's dtype */
} eg_fill_attrs;
EG_ATTRS_FIT(eg_fill_attrs);

static int64_t prod(const int64_t *s, int lo, int hi) {
  int64_t p = 1;
  for (int d = lo; d < hi; d++) p *= s[d];
  return p;
}

/* Wraps `dim` against `rank` (0-d tensors take -1 and 0, as ATen's maybe_wrap_dim). */
static eg_status wrap_dim(const eg_node *n, int64_t dim, int rank, int *out) {
  *out = eg_wrap_dim(dim, rank);
  if (*out < 0) {
    int r = rank > 0 ? rank : 1;
    return eg_node_error(n, EG_ERR_INVALID, "argument dim is %lld: out of range [%d, %d] for "
                         "rank %d", (long long)dim, -r, r - 1, rank);
  }
  return EG_OK;
}

/* An int list of shape sizes (0..EG_MAX_RANK of them, each >= 0). */
static eg_status size_list(const eg_node *n, int pos, const char *kw, int64_t *sizes, int *r) {
  char buf[160];
  EG_TRY(eg_arg_int_list(n, pos, kw, sizes, 0, EG_MAX_RANK, r));
  for (int d = 0; d < *r; d++)
    if (sizes[d] < 0)
      return eg_node_error(n, EG_ERR_INVALID, "argument %s is %s: negative dimension %lld", kw,
                           eg_fmt_ints(buf, sizeof buf, sizes, *r), (long long)sizes[d]);
  return EG_OK;
}

/* Copies `src` (dense, shape `src_shape`, rank `src_rank`) broadcast into the box `shape`
 * (rank `rank`) of `dst` addressed by `dst_stride` (copy_'s broadcasting: trailing alignment,
 * extent-1 or missing dims repeat). */
static void copy_broadcast(void *dst, const int64_t *dst_stride, const int64_t *shape, int rank,
                           const void *src, const int64_t *src_shape, int src_rank,
                           size_t elsize) {
  eg_strided_copy_params p = {.rank = rank, .elsize = elsize};
  int64_t own[EG_MAX_RANK];
  eg_dense_strides(src_shape, src_rank, own);
  const int lead = rank - src_rank;
  for (int d = 0; d < rank; d++) {
    p.shape[d] = shape[d];
    p.dst_stride[d] = dst_stride[d];
    p.src_stride[d] = d < lead || src_shape[d - lead] == 1 ? 0 : own[d - lead];
  }
  eg_strided_copy(dst, src, &p);
}

/* Whether `src` broadcasts to `shape` as copy_ requires (no new dims beyond rank). */
static bool broadcasts_to(const eg_value *src, const int64_t *shape, int rank) {
  if (src->rank > rank) return false;
  const int lead = rank - src->rank;
  for (int d = 0; d < src->rank; d++)
    if (src->shape[d] != 1 && src->shape[d] != shape[d + lead]) return false;
  return true;
}

static eg_status check_grad_fits(const eg_node *n, const eg_value *grad, const int64_t *shape,
                                 int rank, const char *what) {
  char a[160], b[160];
  if (!broadcasts_to(grad, shape, rank))
    return eg_node_error(n, EG_ERR_INVALID, "grad_output shape %s does not broadcast to the "
                         "%s shape %s", eg_fmt_ints(a, sizeof a, grad->shape, grad->rank), what,
                         eg_fmt_ints(b, sizeof b, shape, rank));
  return EG_OK;
}

static void run_zero(const eg_exec *ex, const eg_node *n) {
  size_t bytes = eg_value_nbytes(eg_exec_outv(ex, n));
  if (bytes) memset(eg_exec_out(ex, n), 0, bytes);
}

/* The output has the input's bytes in the same order (squeeze, unsqueeze). */
static void run_same_bytes(const eg_exec *ex, const eg_node *n) {
  size_t bytes = eg_value_nbytes(eg_exec_outv(ex, n));
  if (bytes) memmove(eg_exec_out(ex, n), eg_exec_arg(ex, n, 0, "self"), bytes);
}

/* ---- cat ---- */

/* ATen's legacy rule: a 1-D tensor with no elements takes no part in cat's shape rules. */
static bool cat_skipped(const eg_value *v) { return v->rank == 1 && v->shape[0] == 0; }

static int dtype_class(eg_dtype t) {
  switch (t) {
  case EG_DTYPE_BOOL: return 0;
  case EG_DTYPE_UINT8: case EG_DTYPE_INT8: case EG_DTYPE_INT32: case EG_DTYPE_INT64: return 1;
  default: return 2;
  }
}

/* torch.promote_types for the dtypes edgegrad knows; false where the result (e.g. int16 for
 * uint8 + int8) is not one of them. */
static bool promote(eg_dtype a, eg_dtype b, eg_dtype *out) {
  static const int width[EG_DTYPE_COUNT] = {
      [EG_DTYPE_BOOL] = 0, [EG_DTYPE_UINT8] = 1, [EG_DTYPE_INT8] = 1, [EG_DTYPE_INT32] = 4,
      [EG_DTYPE_INT64] = 8, [EG_DTYPE_FLOAT16] = 2, [EG_DTYPE_FLOAT32] = 4,
      [EG_DTYPE_FLOAT64] = 8};
  if (a == b) {
    *out = a;
    return true;
  }
  int ca = dtype_class(a), cb = dtype_class(b);
  if (ca != cb) {
    *out = ca > cb ? a : b;
    return true;
  }
  if (width[a] == width[b]) return false; /* uint8 + int8 -> int16 */
  *out = width[a] > width[b] ? a : b;
  return true;
}

static const char *const cat_kw[] = {"tensors", "dim", NULL};

/* The arguments (tensors, dim=0) of cat and stack (`what` in messages): a non-empty list of
 * tensors, their promoted dtype into *dtype — every non-empty one must already have it (no
 * conversion) — and the unwrapped dim. */
static eg_status joined_args(const eg_graph *g, const eg_node *n, const char *what,
                             const eg_arg **list, eg_dtype *dtype, int64_t *dim) {
  EG_TRY(eg_node_check_arity(n, 1, 2, cat_kw));
  *dim = 0;
  EG_TRY(eg_arg_opt_int(n, 1, "dim", dim));
  *dtype = EG_DTYPE_COUNT;
  *list = eg_node_arg(n, 0, "tensors");
  const eg_arg *l = *list;
  if (!l || l->kind != EG_ARG_LIST)
    return eg_node_error(n, EG_ERR_INVALID, "argument tensors (#0) is %s: expected a list of "
                         "tensors", l ? "not a list" : "missing");
  if (l->list.n == 0)
    return eg_node_error(n, EG_ERR_INVALID, "argument tensors (#0) is empty: %s expects a "
                         "non-empty list of tensors", what);
  for (int i = 0; i < l->list.n; i++) {
    const eg_arg *a = &l->list.items[i];
    if (a->kind != EG_ARG_VALUE || g->values[a->value].kind != EG_VALUE_TENSOR)
      return eg_node_error(n, EG_ERR_INVALID, "argument tensors (#0) element %d is not a "
                           "tensor", i);
    const eg_value *v = &g->values[a->value];
    if (i == 0) *dtype = v->dtype;
    else if (!promote(*dtype, v->dtype, dtype))
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "tensors element %d dtype %s with %s: the "
                           "promoted dtype is not one edgegrad knows", i,
                           eg_dtype_name(v->dtype), eg_dtype_name(*dtype));
  }
  for (int i = 0; i < l->list.n; i++) {
    const eg_value *v = &g->values[l->list.items[i].value];
    if (v->dtype != *dtype && eg_value_numel(v) > 0)
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "tensors element %d dtype %s differs from the "
                           "result dtype %s: %s with dtype conversion is not supported", i,
                           eg_dtype_name(v->dtype), eg_dtype_name(*dtype), what);
  }
  return EG_OK;
}

eg_status eg_check_cat(eg_graph *g, eg_node *n) {
  const eg_arg *list;
  eg_dtype dtype;
  int64_t dim;
  EG_TRY(joined_args(g, n, "cat", &list, &dtype, &dim));
  const eg_value *valid = NULL;
  for (int i = 0; i < list->list.n; i++) {
    const eg_value *v = &g->values[list->list.items[i].value];
    if (v->rank == 0)
      return eg_node_error(n, EG_ERR_INVALID, "tensors element %d is zero-dimensional: it "
                           "cannot be concatenated", i);
    if (!valid && !cat_skipped(v)) valid = v;
  }
  if (!valid) { /* every tensor is [0]: the result is [0] whatever dim says */
    int64_t zero[1] = {0};
    EG_ATTRS(n, eg_dim_attrs)->dim = 0;
    return eg_out_tensor(g, n, dtype, 1, zero);
  }
  int d, r = valid->rank;
  EG_TRY(wrap_dim(n, dim, r, &d));
  int64_t shape[EG_MAX_RANK];
  memcpy(shape, valid->shape, sizeof(int64_t) * (size_t)r);
  shape[d] = 0;
  for (int i = 0; i < list->list.n; i++) {
    const eg_value *v = &g->values[list->list.items[i].value];
    if (cat_skipped(v)) continue;
    if (v->rank != r)
      return eg_node_error(n, EG_ERR_INVALID, "tensors element %d has rank %d, element 0 of "
                           "the rule rank %d: tensors must have the same number of dimensions",
                           i, v->rank, r);
    for (int k = 0; k < r; k++)
      if (k != d && v->shape[k] != valid->shape[k])
        return eg_node_error(n, EG_ERR_INVALID, "tensors element %d has size %lld at dimension "
                             "%d, expected %lld: sizes must match except in dimension %d", i,
                             (long long)v->shape[k], k, (long long)valid->shape[k], d);
    shape[d] += v->shape[d];
  }
  EG_ATTRS(n, eg_dim_attrs)->dim = d;
  return eg_out_tensor(g, n, dtype, r, shape);
}

/* cat and stack: the result is `outer` rows (the product of its dims before dim); row j is
 * every input's row j in list order, input i's row being its numel / outer elements. */
eg_status eg_run_cat(const eg_exec *ex, const eg_node *n) {
  const eg_value *out = eg_exec_outv(ex, n);
  if (eg_value_numel(out) == 0) return EG_OK;
  const int d = EG_ATTRS(n, const eg_dim_attrs)->dim;
  const eg_arg *list = eg_node_arg(n, 0, "tensors");
  const size_t es = eg_dtype_size(out->dtype);
  const int64_t outer = prod(out->shape, 0, d), row = eg_value_numel(out) / outer;
  char *dst = eg_exec_out(ex, n);
  for (int i = 0; i < list->list.n; i++) {
    const int32_t id = list->list.items[i].value;
    const eg_value *v = &ex->g->values[id];
    if (eg_value_numel(v) == 0) continue; /* skipped [0], or an empty block */
    const int64_t run = eg_value_numel(v) / outer;
    eg_strided_copy_params p = {.rank = 2, .elsize = es, .shape = {outer, run},
                                .dst_stride = {row, 1}, .src_stride = {run, 1}};
    eg_strided_copy(dst, ex->data[id], &p);
    dst += (size_t)run * es;
  }
  return EG_OK;
}

/* ---- stack ---- */

/* stack(tensors, dim=0): tensors of one shape joined along a new dim (in [-(r+1), r]). */
eg_status eg_check_stack(eg_graph *g, eg_node *n) {
  const eg_arg *list;
  eg_dtype dtype;
  int64_t dim;
  EG_TRY(joined_args(g, n, "stack", &list, &dtype, &dim));
  const eg_value *v0 = &g->values[list->list.items[0].value];
  char a[160], b[160];
  for (int i = 1; i < list->list.n; i++) {
    const eg_value *v = &g->values[list->list.items[i].value];
    bool same = v->rank == v0->rank;
    for (int k = 0; same && k < v->rank; k++) same = v->shape[k] == v0->shape[k];
    if (!same)
      return eg_node_error(n, EG_ERR_INVALID, "stack expects each tensor to be equal size, but "
                           "got %s at entry 0 and %s at entry %d",
                           eg_fmt_ints(a, sizeof a, v0->shape, v0->rank),
                           eg_fmt_ints(b, sizeof b, v->shape, v->rank), i);
  }
  if (v0->rank >= EG_MAX_RANK)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "tensors have rank %d: the result would exceed "
                         "edgegrad's maximum rank %d", v0->rank, EG_MAX_RANK);
  int d;
  EG_TRY(wrap_dim(n, dim, v0->rank + 1, &d));
  int64_t shape[EG_MAX_RANK];
  for (int k = 0, j = 0; k <= v0->rank; k++) shape[k] = k == d ? list->list.n : v0->shape[j++];
  EG_ATTRS(n, eg_dim_attrs)->dim = d;
  return eg_out_tensor(g, n, dtype, v0->rank + 1, shape);
}

eg_status eg_run_stack(const eg_exec *ex, const eg_node *n) { return eg_run_cat(ex, n); }

/* ---- split ---- */

/* Output element i: self's shape with `len` at dim. */
static eg_status check_piece(const eg_graph *g, const eg_node *n, const eg_value *x, int d,
                             int i, int64_t len) {
  int64_t shape[EG_MAX_RANK];
  memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->rank);
  shape[d] = len;
  return eg_out_elem(g, n, i, true, x->dtype, x->rank, shape);
}

/* Common start of both splits: self (rank >= 1) and the wrapped dim at position 2. */
static eg_status split_self(const eg_graph *g, eg_node *n, const eg_value **x, int *d) {
  int64_t dim = 0;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", x));
  if ((*x)->rank == 0)
    return eg_node_error(n, EG_ERR_INVALID, "self is zero-dimensional: split expects at least "
                         "a 1-dimensional tensor");
  EG_TRY(eg_arg_opt_int(n, 2, "dim", &dim));
  EG_TRY(wrap_dim(n, dim, (*x)->rank, d));
  EG_ATTRS(n, eg_dim_attrs)->dim = *d;
  return EG_OK;
}

static eg_status check_tuple_count(const eg_graph *g, const eg_node *n, int64_t count) {
  if (count > INT32_MAX)
    return eg_node_error(n, EG_ERR_INVALID, "split gives %lld pieces: more than a tuple holds",
                         (long long)count);
  return eg_out_tuple(g, n, (int)count);
}

static const char *const split_kw[] = {"self", "split_size", "dim", NULL};

eg_status eg_check_split_Tensor(eg_graph *g, eg_node *n) {
  const eg_value *x;
  int d;
  int64_t size;
  EG_TRY(eg_node_check_arity(n, 2, 3, split_kw));
  EG_TRY(split_self(g, n, &x, &d));
  EG_TRY(eg_arg_int(n, 1, "split_size", &size));
  const int64_t extent = x->shape[d];
  if (size < 0)
    return eg_node_error(n, EG_ERR_INVALID, "split_size %lld: must be non-negative",
                         (long long)size);
  if (size == 0 && extent != 0)
    return eg_node_error(n, EG_ERR_INVALID, "split_size 0 with dimension size %lld: "
                         "split_size can only be 0 if the dimension size is 0",
                         (long long)extent);
  const int64_t count = extent == 0 ? 1 : (extent - 1) / size + 1;
  EG_TRY(check_tuple_count(g, n, count));
  for (int64_t i = 0; i < count; i++) {
    int64_t left = extent - i * size;
    EG_TRY(check_piece(g, n, x, d, (int)i, left < size ? left : size));
  }
  return EG_OK;
}

static const char *const split_sizes_kw[] = {"self", "split_sizes", "dim", NULL};

eg_status eg_check_split_with_sizes(eg_graph *g, eg_node *n) {
  const eg_value *x;
  int d;
  EG_TRY(eg_node_check_arity(n, 2, 3, split_sizes_kw));
  EG_TRY(split_self(g, n, &x, &d));
  const eg_arg *a = eg_node_arg(n, 1, "split_sizes");
  if (!a || a->kind != EG_ARG_LIST)
    return eg_node_error(n, EG_ERR_INVALID, "argument split_sizes (#1) is %s: expected a list "
                         "of ints", a ? "not a list" : "missing");
  const int64_t extent = x->shape[d];
  int64_t sum = 0;
  bool over = false;
  for (int i = 0; i < a->list.n; i++) {
    const eg_arg *s = &a->list.items[i];
    if (s->kind != EG_ARG_INT)
      return eg_node_error(n, EG_ERR_INVALID, "argument split_sizes (#1) element %d is not an "
                           "int", i);
    if (s->i < 0)
      return eg_node_error(n, EG_ERR_INVALID, "split_sizes element %d is %lld: split_sizes "
                           "must be non-negative", i, (long long)s->i);
    over = over || s->i > extent - sum;
    if (!over) sum += s->i;
  }
  if (over || sum != extent)
    return eg_node_error(n, EG_ERR_INVALID, "split_sizes (%d entries) do not sum to %lld, the "
                         "size of self at dimension %d: they must sum exactly to it",
                         a->list.n, (long long)extent, d);
  EG_TRY(eg_out_tuple(g, n, a->list.n));
  for (int i = 0; i < a->list.n; i++) EG_TRY(check_piece(g, n, x, d, i, a->list.items[i].i));
  return EG_OK;
}

/* Both splits: element i is the next block of its length along dim. */
static void run_split(const eg_exec *ex, const eg_node *n) {
  const int d = EG_ATTRS(n, const eg_dim_attrs)->dim;
  const eg_value *x = eg_exec_argv(ex, n, 0, "self");
  const eg_value *t = eg_exec_outv(ex, n);
  const size_t es = eg_dtype_size(x->dtype);
  if (eg_value_numel(x) == 0) return; /* every piece is empty too */
  const int64_t outer = prod(x->shape, 0, d), inner = prod(x->shape, d + 1, x->rank);
  const char *src = eg_exec_arg(ex, n, 0, "self");
  for (int i = 0; i < t->n_elems; i++) {
    const int64_t run = ex->g->values[t->elems[i]].shape[d] * inner;
    eg_strided_copy_params p = {.rank = 2, .elsize = es, .shape = {outer, run},
                                .dst_stride = {run, 1}, .src_stride = {x->shape[d] * inner, 1}};
    eg_strided_copy(eg_exec_elem(ex, n, i), src, &p);
    src += (size_t)run * es;
  }
}

eg_status eg_run_split_Tensor(const eg_exec *ex, const eg_node *n) {
  run_split(ex, n);
  return EG_OK;
}

eg_status eg_run_split_with_sizes(const eg_exec *ex, const eg_node *n) {
  run_split(ex, n);
  return EG_OK;
}

/* ---- slice, select and their backwards ---- */

/* ATen's slice clamping of [start, end) with step > 0 into extent `size`; fills index/len. */
static eg_status slice_range(const eg_node *n, int64_t size, int64_t start, int64_t end,
                             int64_t step, eg_slice_attrs *at) {
  if (step <= 0)
    return eg_node_error(n, EG_ERR_INVALID, "slice step %lld: must be positive",
                         (long long)step);
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (start < 0) start = 0;
  else if (start > size) start = size;
  if (end < start) end = start;
  else if (end > size) end = size;
  at->index = start;
  at->step = step;
  at->len = end == start ? 0 : (end - start - 1) / step + 1;
  return EG_OK;
}

static eg_status select_index(const eg_node *n, int64_t size, int d, int64_t index,
                              eg_slice_attrs *at) {
  if (index < -size || index >= size)
    return eg_node_error(n, EG_ERR_INVALID, "index %lld out of range [%lld, %lld) of size "
                         "%lld at dimension %d", (long long)index, (long long)-size,
                         (long long)size, (long long)size, d);
  at->index = index < 0 ? index + size : index;
  at->step = 1;
  at->len = 1;
  return EG_OK;
}

/* The extents of the viewed box of `shape` into `view`; returns its rank. select (drop)
 * removes dim; slice keeps it as len. */
static int view_extents(const int64_t *shape, int rank, const eg_slice_attrs *at, bool drop,
                        int64_t *view) {
  int r = 0;
  for (int d = 0; d < rank; d++)
    if (d != at->dim || !drop) view[r++] = d == at->dim ? at->len : shape[d];
  return r;
}

/* The viewed box of a dense `shape`: extents `view` (rank `*vrank`), strides `stride` and the
 * element offset of its first element. */
static int64_t view_of(const int64_t *shape, int rank, const eg_slice_attrs *at, bool drop,
                       int64_t *view, int64_t *stride, int *vrank) {
  int64_t dense[EG_MAX_RANK];
  eg_dense_strides(shape, rank, dense);
  *vrank = view_extents(shape, rank, at, drop, view);
  for (int d = 0, r = 0; d < rank; d++)
    if (d != at->dim || !drop) stride[r++] = d == at->dim ? dense[d] * at->step : dense[d];
  return at->index * dense[at->dim];
}

/* The dim all four view ops take, wrapped against the viewed tensor's rank into at->dim; a
 * 0-dim tensor has nothing to view. `what` names the tensor in that message. */
static eg_status view_dim(const eg_node *n, int64_t dim, int rank, const char *what,
                          const char *op, eg_slice_attrs *at) {
  if (rank == 0)
    return eg_node_error(n, EG_ERR_INVALID, "%s: %s() cannot be applied to a 0-dim tensor", what,
                         op);
  int d;
  EG_TRY(wrap_dim(n, dim, rank, &d));
  at->dim = d;
  return EG_OK;
}

/* The output of a view forward: the viewed box of self, dense. */
static eg_status out_view(eg_graph *g, eg_node *n, const eg_value *x, bool drop) {
  int64_t shape[EG_MAX_RANK];
  const int r = view_extents(x->shape, x->rank, EG_ATTRS(n, const eg_slice_attrs), drop, shape);
  return eg_out_tensor(g, n, x->dtype, r, shape);
}

/* The output of a view backward (input_sizes, grad_output's dtype), into whose viewed box
 * grad_output must broadcast; `what` names the box in that message. */
static eg_status out_view_backward(eg_graph *g, eg_node *n, const eg_value *gv,
                                   const int64_t *sizes, int r, bool drop, const char *what) {
  EG_TRY(eg_out_tensor(g, n, gv->dtype, r, sizes));
  int64_t view[EG_MAX_RANK];
  const int vr = view_extents(sizes, r, EG_ATTRS(n, const eg_slice_attrs), drop, view);
  return check_grad_fits(n, gv, view, vr, what);
}

/* slice/select forward: the output is the dense copy of the view. */
static void run_view(const eg_exec *ex, const eg_node *n, bool drop) {
  const eg_slice_attrs *at = EG_ATTRS(n, const eg_slice_attrs);
  const eg_value *x = eg_exec_argv(ex, n, 0, "self");
  const size_t es = eg_dtype_size(x->dtype);
  if (eg_value_numel(eg_exec_outv(ex, n)) == 0) return; /* (and no offset into a 0-size input) */
  eg_strided_copy_params p = {.elsize = es};
  const int64_t off = view_of(x->shape, x->rank, at, drop, p.shape, p.src_stride, &p.rank);
  eg_dense_strides(p.shape, p.rank, p.dst_stride);
  eg_strided_copy(eg_exec_out(ex, n), (const char *)eg_exec_arg(ex, n, 0, "self") + off * es,
                  &p);
}

/* slice/select backward: zeros, then grad_output broadcast into the view. */
static void run_view_backward(const eg_exec *ex, const eg_node *n, bool drop) {
  const eg_slice_attrs *at = EG_ATTRS(n, const eg_slice_attrs);
  const eg_value *out = eg_exec_outv(ex, n), *gv = eg_exec_argv(ex, n, 0, "grad_output");
  const size_t es = eg_dtype_size(out->dtype);
  run_zero(ex, n);
  if (eg_value_numel(out) == 0) return;
  int64_t view[EG_MAX_RANK], stride[EG_MAX_RANK];
  int vr;
  const int64_t off = view_of(out->shape, out->rank, at, drop, view, stride, &vr);
  copy_broadcast((char *)eg_exec_out(ex, n) + off * es, stride, view, vr,
                 eg_exec_arg(ex, n, 0, "grad_output"), gv->shape, gv->rank, es);
}

static const char *const slice_kw[] = {"self", "dim", "start", "end", "step", NULL};

eg_status eg_check_slice_Tensor(eg_graph *g, eg_node *n) {
  const eg_value *x;
  int64_t dim = 0, start = 0, end = INT64_MAX, step = 1;
  eg_slice_attrs *at = EG_ATTRS(n, eg_slice_attrs);
  EG_TRY(eg_node_check_arity(n, 1, 5, slice_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  EG_TRY(eg_arg_opt_int(n, 1, "dim", &dim));
  EG_TRY(eg_arg_opt_int(n, 2, "start", &start));
  EG_TRY(eg_arg_opt_int(n, 3, "end", &end));
  EG_TRY(eg_arg_opt_int(n, 4, "step", &step));
  EG_TRY(view_dim(n, dim, x->rank, "self is zero-dimensional", "slice", at));
  EG_TRY(slice_range(n, x->shape[at->dim], start, end, step, at));
  return out_view(g, n, x, false);
}

eg_status eg_run_slice_Tensor(const eg_exec *ex, const eg_node *n) {
  run_view(ex, n, false);
  return EG_OK;
}

static const char *const slice_bwd_kw[] = {"grad_output", "input_sizes", "dim", "start", "end",
                                           "step", NULL};

eg_status eg_check_slice_backward(eg_graph *g, eg_node *n) {
  const eg_value *gv;
  int64_t sizes[EG_MAX_RANK], dim, start, end, step;
  int r;
  eg_slice_attrs *at = EG_ATTRS(n, eg_slice_attrs);
  EG_TRY(eg_node_check_arity(n, 6, 6, slice_bwd_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "grad_output", &gv));
  EG_TRY(size_list(n, 1, "input_sizes", sizes, &r));
  EG_TRY(eg_arg_int(n, 2, "dim", &dim));
  EG_TRY(eg_arg_int(n, 3, "start", &start));
  EG_TRY(eg_arg_int(n, 4, "end", &end));
  EG_TRY(eg_arg_int(n, 5, "step", &step));
  EG_TRY(view_dim(n, dim, r, "input_sizes is []", "slice", at));
  EG_TRY(slice_range(n, sizes[at->dim], start, end, step, at));
  return out_view_backward(g, n, gv, sizes, r, false, "slice's");
}

eg_status eg_run_slice_backward(const eg_exec *ex, const eg_node *n) {
  run_view_backward(ex, n, false);
  return EG_OK;
}

static const char *const select_kw[] = {"self", "dim", "index", NULL};

eg_status eg_check_select_int(eg_graph *g, eg_node *n) {
  const eg_value *x;
  int64_t dim, index;
  eg_slice_attrs *at = EG_ATTRS(n, eg_slice_attrs);
  EG_TRY(eg_node_check_arity(n, 3, 3, select_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  EG_TRY(eg_arg_int(n, 1, "dim", &dim));
  EG_TRY(eg_arg_int(n, 2, "index", &index));
  EG_TRY(view_dim(n, dim, x->rank, "self is zero-dimensional", "select", at));
  EG_TRY(select_index(n, x->shape[at->dim], at->dim, index, at));
  return out_view(g, n, x, true);
}

eg_status eg_run_select_int(const eg_exec *ex, const eg_node *n) {
  run_view(ex, n, true);
  return EG_OK;
}

static const char *const select_bwd_kw[] = {"grad_output", "input_sizes", "dim", "index", NULL};

eg_status eg_check_select_backward(eg_graph *g, eg_node *n) {
  const eg_value *gv;
  int64_t sizes[EG_MAX_RANK], dim, index;
  int r;
  eg_slice_attrs *at = EG_ATTRS(n, eg_slice_attrs);
  EG_TRY(eg_node_check_arity(n, 4, 4, select_bwd_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "grad_output", &gv));
  EG_TRY(size_list(n, 1, "input_sizes", sizes, &r));
  EG_TRY(eg_arg_int(n, 2, "dim", &dim));
  EG_TRY(eg_arg_int(n, 3, "index", &index));
  EG_TRY(view_dim(n, dim, r, "input_sizes is []", "select", at));
  EG_TRY(select_index(n, sizes[at->dim], at->dim, index, at));
  return out_view_backward(g, n, gv, sizes, r, true, "selected");
}

eg_status eg_run_select_backward(const eg_exec *ex, const eg_node *n) {
  run_view_backward(ex, n, true);
  return EG_OK;
}

/* ---- squeeze, unsqueeze ---- */

static const char *const squeeze_dim_kw[] = {"self", "dim", NULL};

eg_status eg_check_squeeze_dim(eg_graph *g, eg_node *n) {
  const eg_value *x;
  int64_t dim;
  int d;
  EG_TRY(eg_node_check_arity(n, 2, 2, squeeze_dim_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  EG_TRY(eg_arg_int(n, 1, "dim", &dim));
  EG_TRY(wrap_dim(n, dim, x->rank, &d));
  int64_t shape[EG_MAX_RANK];
  int r = 0;
  for (int k = 0; k < x->rank; k++)
    if (k != d || x->shape[k] != 1) shape[r++] = x->shape[k];
  return eg_out_tensor(g, n, x->dtype, r, shape);
}

eg_status eg_run_squeeze_dim(const eg_exec *ex, const eg_node *n) {
  run_same_bytes(ex, n);
  return EG_OK;
}

static const char *const self_kw[] = {"self", NULL};

eg_status eg_check_squeeze_default(eg_graph *g, eg_node *n) {
  const eg_value *x;
  EG_TRY(eg_node_check_arity(n, 1, 1, self_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  int64_t shape[EG_MAX_RANK];
  int r = 0;
  for (int k = 0; k < x->rank; k++)
    if (x->shape[k] != 1) shape[r++] = x->shape[k];
  return eg_out_tensor(g, n, x->dtype, r, shape);
}

eg_status eg_run_squeeze_default(const eg_exec *ex, const eg_node *n) {
  run_same_bytes(ex, n);
  return EG_OK;
}

eg_status eg_check_unsqueeze(eg_graph *g, eg_node *n) {
  const eg_value *x;
  int64_t dim;
  int d;
  EG_TRY(eg_node_check_arity(n, 2, 2, squeeze_dim_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  EG_TRY(eg_arg_int(n, 1, "dim", &dim));
  d = eg_wrap_dim(dim, x->rank + 1);
  if (d < 0)
    return eg_node_error(n, EG_ERR_INVALID, "argument dim is %lld: out of range [%d, %d] for "
                         "unsqueeze of rank %d", (long long)dim, -x->rank - 1, x->rank, x->rank);
  if (x->rank >= EG_MAX_RANK)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "self has rank %d: the result would exceed "
                         "edgegrad's maximum rank %d", x->rank, EG_MAX_RANK);
  int64_t shape[EG_MAX_RANK];
  for (int k = 0, j = 0; k <= x->rank; k++) shape[k] = k == d ? 1 : x->shape[j++];
  return eg_out_tensor(g, n, x->dtype, x->rank + 1, shape);
}

eg_status eg_run_unsqueeze(const eg_exec *ex, const eg_node *n) {
  run_same_bytes(ex, n);
  return EG_OK;
}

/* ---- repeat ---- */

static const char *const repeat_kw[] = {"self", "repeats", NULL};

eg_status eg_check_repeat(eg_graph *g, eg_node *n) {
  const eg_value *x;
  int64_t reps[EG_MAX_RANK], shape[EG_MAX_RANK];
  int r;
  char buf[160];
  EG_TRY(eg_node_check_arity(n, 2, 2, repeat_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  EG_TRY(eg_arg_int_list(n, 1, "repeats", reps, 0, EG_MAX_RANK, &r));
  if (r < x->rank)
    return eg_node_error(n, EG_ERR_INVALID, "repeats %s has %d entries for self of rank %d: "
                         "the number of repeat dims can not be smaller than the tensor's",
                         eg_fmt_ints(buf, sizeof buf, reps, r), r, x->rank);
  const int lead = r - x->rank;
  for (int d = 0; d < r; d++) {
    const int64_t s = d < lead ? 1 : x->shape[d - lead];
    if (reps[d] < 0)
      return eg_node_error(n, EG_ERR_INVALID, "repeats %s has negative entry %lld",
                           eg_fmt_ints(buf, sizeof buf, reps, r), (long long)reps[d]);
    if (s > 0 && reps[d] > INT64_MAX / s)
      return eg_node_error(n, EG_ERR_INVALID, "repeats %s: size %lld at dimension %d "
                           "overflows", eg_fmt_ints(buf, sizeof buf, reps, r),
                           (long long)reps[d], d);
    shape[d] = s * reps[d];
  }
  return eg_out_tensor(g, n, x->dtype, r, shape);
}

/* The output viewed as [r0, s0, r1, s1, ...]: out index k*s + i reads self's index i. */
eg_status eg_run_repeat(const eg_exec *ex, const eg_node *n) {
  const eg_value *x = eg_exec_argv(ex, n, 0, "self"), *out = eg_exec_outv(ex, n);
  const int r = out->rank, lead = r - x->rank;
  int64_t s[EG_MAX_RANK], own[EG_MAX_RANK], dense[EG_MAX_RANK];
  for (int d = 0; d < r; d++) s[d] = d < lead ? 1 : x->shape[d - lead];
  eg_dense_strides(s, r, own);
  eg_dense_strides(out->shape, r, dense);
  eg_strided_copy_params p = {.rank = 2 * r, .elsize = eg_dtype_size(x->dtype)};
  for (int d = 0; d < r; d++) {
    p.shape[2 * d] = s[d] ? out->shape[d] / s[d] : 0;
    p.dst_stride[2 * d] = s[d] * dense[d];
    p.src_stride[2 * d] = 0;
    p.shape[2 * d + 1] = s[d];
    p.dst_stride[2 * d + 1] = dense[d];
    p.src_stride[2 * d + 1] = own[d];
  }
  eg_strided_copy(eg_exec_out(ex, n), eg_exec_arg(ex, n, 0, "self"), &p);
  return EG_OK;
}

/* ---- creation ---- */

/* The keyword-only tensor options, at schema positions first.. in the order dtype, layout,
 * device, pin_memory, memory_format: dtype (into *dtype when given), layout (strided only);
 * device, pin_memory and memory_format are checked for kind and ignored. Keyword-only
 * arguments never arrive by position (arity allows fewer positionals), so the positions only
 * name them in messages. */
static eg_status tensor_options(const eg_node *n, int first, eg_dtype *dtype) {
  bool pin = false;
  EG_TRY(eg_arg_opt_dtype(n, first, "dtype", dtype));
  EG_TRY(eg_arg_opt_bool(n, first + 3, "pin_memory", &pin));
  static const struct {
    const char *kw;
    int pos;
    eg_arg_kind kind;
  } tagged[] = {{"layout", 1, EG_ARG_LAYOUT},
                {"device", 2, EG_ARG_DEVICE},
                {"memory_format", 4, EG_ARG_MEMORY_FORMAT}};
  for (size_t i = 0; i < sizeof tagged / sizeof tagged[0]; i++) {
    const eg_arg *a = eg_node_arg(n, first + tagged[i].pos, tagged[i].kw);
    if (!a || a->kind == EG_ARG_NONE) continue;
    if (a->kind != tagged[i].kind)
      return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) is not a %s", tagged[i].kw,
                           first + tagged[i].pos, tagged[i].kw);
    if (a->kind == EG_ARG_LAYOUT && strcmp(a->str, "strided") != 0)
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "layout %s: edgegrad tensors are dense "
                           "(strided)", a->str);
  }
  return EG_OK;
}

/* (size, *, tensor options): a tensor of that size, float32 unless dtype says otherwise. */
static eg_status check_sized(eg_graph *g, eg_node *n, const char *const *kw) {
  int64_t sizes[EG_MAX_RANK];
  int r;
  eg_dtype dtype = EG_DTYPE_FLOAT32; /* torch's default dtype */
  EG_TRY(eg_node_check_arity(n, 1, 1, kw));
  EG_TRY(size_list(n, 0, "size", sizes, &r));
  EG_TRY(tensor_options(n, 1, &dtype));
  return eg_out_tensor(g, n, dtype, r, sizes);
}

static const char *const empty_kw[] = {"size", "dtype", "layout", "device", "pin_memory",
                                       "memory_format", NULL};

eg_status eg_check_empty_memory_format(eg_graph *g, eg_node *n) {
  return check_sized(g, n, empty_kw);
}

eg_status eg_run_empty_memory_format(const eg_exec *ex, const eg_node *n) {
  run_zero(ex, n);
  return EG_OK;
}

/* zeros(size, *, dtype, layout, device, pin_memory): what empty gives here, by contract. */
eg_status eg_check_zeros(eg_graph *g, eg_node *n) {
  static const char *const zeros_kw[] = {"size", "dtype", "layout", "device", "pin_memory",
                                         NULL};
  return check_sized(g, n, zeros_kw);
}

eg_status eg_run_zeros(const eg_exec *ex, const eg_node *n) {
  run_zero(ex, n);
  return EG_OK;
}

static const char *const empty_like_kw[] = {"self", "dtype", "layout", "device", "pin_memory",
                                            "memory_format", NULL};

eg_status eg_check_empty_like(eg_graph *g, eg_node *n) {
  const eg_value *x;
  EG_TRY(eg_node_check_arity(n, 1, 1, empty_like_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  eg_dtype dtype = x->dtype;
  EG_TRY(tensor_options(n, 1, &dtype));
  return eg_out_tensor(g, n, dtype, x->rank, x->shape);
}

eg_status eg_run_empty_like(const eg_exec *ex, const eg_node *n) {
  run_zero(ex, n);
  return EG_OK;
}

static const char *const new_zeros_kw[] = {"self", "size", "dtype", "layout", "device",
                                           "pin_memory", NULL};

eg_status eg_check_new_zeros(eg_graph *g, eg_node *n) {
  const eg_value *x;
  int64_t sizes[EG_MAX_RANK];
  int r;
  EG_TRY(eg_node_check_arity(n, 2, 2, new_zeros_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  EG_TRY(size_list(n, 1, "size", sizes, &r));
  eg_dtype dtype = x->dtype;
  EG_TRY(tensor_options(n, 2, &dtype));
  return eg_out_tensor(g, n, dtype, r, sizes);
}

eg_status eg_run_new_zeros(const eg_exec *ex, const eg_node *n) {
  run_zero(ex, n);
  return EG_OK;
}

/* ---- fill ---- */

static eg_status fill_overflow(const eg_node *n, const eg_arg *v, eg_dtype t) {
  char val[48];
  if (v->kind == EG_ARG_INT) snprintf(val, sizeof val, "%lld", (long long)v->i);
  else snprintf(val, sizeof val, "%g", v->f);
  return eg_node_error(n, EG_ERR_INVALID, "value %s cannot be converted to %s without overflow",
                       val, eg_dtype_name(t));
}

/* An integer of dtype `t` from an int: in [lo, hi], or for unsigned types also in [-hi, 0)
 * (ATen lets negatives wrap around in two's complement). */
static eg_status fill_int(const eg_node *n, const eg_arg *v, eg_dtype t, int64_t *out) {
  int64_t lo, hi;
  switch (t) {
  case EG_DTYPE_INT64: lo = INT64_MIN; hi = INT64_MAX; break;
  case EG_DTYPE_INT32: lo = INT32_MIN; hi = INT32_MAX; break;
  case EG_DTYPE_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
  default: lo = -UINT8_MAX; hi = UINT8_MAX; break; /* uint8 */
  }
  if (v->kind == EG_ARG_BOOL) {
    *out = v->b;
  } else if (v->kind == EG_ARG_INT) {
    if (v->i < lo || v->i > hi) return fill_overflow(n, v, t);
    *out = v->i;
  } else { /* float: in [lowest, max] (never NaN or inf), then truncated toward zero */
    const double f = v->f, flo = t == EG_DTYPE_UINT8 ? 0.0 : (double)lo;
    const bool in = t == EG_DTYPE_INT64 ? f >= flo && f < 9223372036854775808.0
                                        : f >= flo && f <= (double)hi;
    if (!in) return fill_overflow(n, v, t);
    *out = (int64_t)f;
  }
  return EG_OK;
}

/* The value in the output's dtype, as ATen's Scalar conversion does it. */
static eg_status fill_value(const eg_node *n, const eg_arg *v, eg_dtype t, unsigned char *elem) {
  double f = v->kind == EG_ARG_INT ? (double)v->i : v->kind == EG_ARG_BOOL ? v->b : v->f;
  int64_t i;
  switch (t) {
  case EG_DTYPE_FLOAT32: {
    if (v->kind == EG_ARG_FLOAT && isfinite(f) && (f < -FLT_MAX || f > FLT_MAX))
      return fill_overflow(n, v, t);
    float x = v->kind == EG_ARG_INT ? (float)v->i : (float)f;
    memcpy(elem, &x, sizeof x);
    return EG_OK;
  }
  case EG_DTYPE_FLOAT64: memcpy(elem, &f, sizeof f); return EG_OK;
  case EG_DTYPE_BOOL:
    elem[0] = v->kind == EG_ARG_INT ? v->i != 0 : v->kind == EG_ARG_BOOL ? v->b : f != 0.0;
    return EG_OK;
  case EG_DTYPE_INT64: {
    EG_TRY(fill_int(n, v, t, &i));
    memcpy(elem, &i, sizeof i);
    return EG_OK;
  }
  case EG_DTYPE_INT32: {
    EG_TRY(fill_int(n, v, t, &i));
    int32_t x = (int32_t)i;
    memcpy(elem, &x, sizeof x);
    return EG_OK;
  }
  case EG_DTYPE_INT8: {
    EG_TRY(fill_int(n, v, t, &i));
    int8_t x = (int8_t)i;
    memcpy(elem, &x, sizeof x);
    return EG_OK;
  }
  case EG_DTYPE_UINT8:
    EG_TRY(fill_int(n, v, t, &i));
    elem[0] = (unsigned char)(uint8_t)i;
    return EG_OK;
  default:
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "self dtype %s: fill supports float32, "
                         "float64, int64, int32, int8, uint8 and bool", eg_dtype_name(t));
  }
}

static const char *const fill_kw[] = {"self", "value", NULL};

eg_status eg_check_fill_Scalar(eg_graph *g, eg_node *n) {
  const eg_value *x;
  double unused;
  EG_TRY(eg_node_check_arity(n, 2, 2, fill_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  EG_TRY(eg_arg_scalar(n, 1, "value", &unused)); /* a number: int, float or bool */
  EG_TRY(fill_value(n, eg_node_arg(n, 1, "value"), x->dtype, EG_ATTRS(n, eg_fill_attrs)->elem));
  return eg_out_tensor(g, n, x->dtype, x->rank, x->shape);
}

/* Fills the node's output with `elem`: writes one element, then doubles the filled prefix with
 * memcpy: O(n), any element size. */
static void run_fill(const eg_exec *ex, const eg_node *n, const unsigned char *elem) {
  const eg_value *out = eg_exec_outv(ex, n);
  const size_t es = eg_dtype_size(out->dtype), total = eg_value_nbytes(out);
  char *dst = eg_exec_out(ex, n);
  if (total == 0) return;
  memcpy(dst, elem, es);
  for (size_t done = es; done < total; done *= 2)
    memcpy(dst + done, dst, done < total - done ? done : total - done);
}

eg_status eg_run_fill_Scalar(const eg_exec *ex, const eg_node *n) {
  run_fill(ex, n, EG_ATTRS(n, const eg_fill_attrs)->elem);
  return EG_OK;
}

/* ---- constant_pad_nd ---- */

/* Pads per dim (before, after; negative crops) and the fill element. */
typedef struct eg_pad_attrs {
  _Alignas(8) unsigned char elem[8]; /* value in the output's dtype */
  int64_t before[EG_MAX_RANK], after[EG_MAX_RANK];
  bool fills;                        /* some pad is positive: the output has fill elements */
} eg_pad_attrs;
EG_ATTRS_FIT(eg_pad_attrs);

/* Pads beyond this are refused before any sum can overflow (sizes are below 2^40). */
#define EG_PAD_MAX ((int64_t)1 << 40)

static const char *const pad_kw[] = {"self", "pad", "value", NULL};

/* constant_pad_nd(self, pad, value=0): pad[2i], pad[2i+1] pad the i-th dim from the last, before
 * and after; a negative pad crops (at most the dim's size, as ATen's narrow). */
eg_status eg_check_constant_pad_nd(eg_graph *g, eg_node *n) {
  const eg_value *x;
  int64_t pad[2 * EG_MAX_RANK], shape[EG_MAX_RANK];
  int k;
  char buf[320];
  EG_TRY(eg_node_check_arity(n, 2, 3, pad_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  EG_TRY(eg_arg_int_list(n, 1, "pad", pad, 0, 2 * EG_MAX_RANK, &k));
  eg_fmt_ints(buf, sizeof buf, pad, k);
  if (k % 2)
    return eg_node_error(n, EG_ERR_INVALID, "pad %s has %d entries: its length must be even",
                         buf, k);
  if (k > 2 * x->rank)
    return eg_node_error(n, EG_ERR_INVALID, "pad %s has %d entries for self of rank %d: at most "
                         "two per dimension", buf, k, x->rank);
  eg_pad_attrs *at = EG_ATTRS(n, eg_pad_attrs);
  memset(at, 0, sizeof *at);
  double numel = 1;
  for (int d = 0; d < x->rank; d++) {
    const int i = 2 * (x->rank - 1 - d); /* pad index of dim d's "before" */
    const int64_t lo = i < k ? pad[i] : 0, hi = i < k ? pad[i + 1] : 0;
    if (lo < -EG_PAD_MAX || lo > EG_PAD_MAX || hi < -EG_PAD_MAX || hi > EG_PAD_MAX)
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "pad %s: entries beyond 2^40", buf);
    const int64_t size = x->shape[d];
    if (size + (lo < 0 ? lo : 0) < 0 || size + (hi < 0 ? hi : 0) < 0 ||
        size + (lo < 0 ? lo : 0) + (hi < 0 ? hi : 0) < 0)
      return eg_node_error(n, EG_ERR_INVALID, "pad %s crops dimension %d of size %lld by %lld "
                           "and %lld: at most its size can be cropped", buf, d, (long long)size,
                           (long long)lo, (long long)hi);
    at->before[d] = lo;
    at->after[d] = hi;
    at->fills = at->fills || lo > 0 || hi > 0;
    shape[d] = size + lo + hi;
    numel *= (double)shape[d];
  }
  if (numel > (double)((int64_t)1 << 40))
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "pad %s: the result has more than 2^40 "
                         "elements", buf);
  const eg_arg *v = eg_node_arg(n, 2, "value");
  if (v && v->kind != EG_ARG_NONE) {
    double unused;
    EG_TRY(eg_arg_scalar(n, 2, "value", &unused)); /* a number: int, float or bool */
    EG_TRY(fill_value(n, v, x->dtype, at->elem));
  } else {
    const eg_arg zero = {.kind = EG_ARG_INT, .i = 0};
    EG_TRY(fill_value(n, &zero, x->dtype, at->elem));
  }
  return eg_out_tensor(g, n, x->dtype, x->rank, shape);
}

/* The fill value everywhere (when some pad is positive), then the kept box of self copied into
 * place: per dim, self from max(0, -before) and the output from max(0, before). */
eg_status eg_run_constant_pad_nd(const eg_exec *ex, const eg_node *n) {
  const eg_pad_attrs *at = EG_ATTRS(n, const eg_pad_attrs);
  const eg_value *x = eg_exec_argv(ex, n, 0, "self"), *out = eg_exec_outv(ex, n);
  if (at->fills) run_fill(ex, n, at->elem);
  const size_t es = eg_dtype_size(x->dtype);
  eg_strided_copy_params p = {.rank = x->rank, .elsize = es};
  int64_t src_dense[EG_MAX_RANK], dst_dense[EG_MAX_RANK], src_off = 0, dst_off = 0;
  eg_dense_strides(x->shape, x->rank, src_dense);
  eg_dense_strides(out->shape, out->rank, dst_dense);
  for (int d = 0; d < x->rank; d++) {
    const int64_t lo = at->before[d], hi = at->after[d];
    p.shape[d] = x->shape[d] + (lo < 0 ? lo : 0) + (hi < 0 ? hi : 0);
    if (p.shape[d] == 0) return EG_OK; /* nothing of self is kept */
    p.src_stride[d] = src_dense[d];
    p.dst_stride[d] = dst_dense[d];
    src_off += (lo < 0 ? -lo : 0) * src_dense[d];
    dst_off += (lo > 0 ? lo : 0) * dst_dense[d];
  }
  eg_strided_copy((char *)eg_exec_out(ex, n) + (size_t)dst_off * es,
                  (const char *)eg_exec_arg(ex, n, 0, "self") + (size_t)src_off * es, &p);
  return EG_OK;
}
