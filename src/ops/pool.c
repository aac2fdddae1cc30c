/* pool.c — 2-D pooling and its gradients, ATen's (PyTorch 1.13) CPU semantics, fp32.
 *
 *   max_pool2d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1,
 *                           ceil_mode=False)                        -> (out, indices int64)
 *   max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
 *                           ceil_mode, indices)                     -> self's shape
 *   avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False,
 *              count_include_pad=True, divisor_override=None)       -> out
 *   avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
 *              count_include_pad, divisor_override)                 -> self's shape
 *   _adaptive_avg_pool2d(self, output_size[2])                      -> out
 *   _adaptive_avg_pool2d_backward(grad_output, self)                -> self's shape
 *   adaptive_max_pool2d(self, output_size[2])                       -> (out, indices int64)
 *   adaptive_max_pool2d_backward(grad_output, self, indices)        -> self's shape
 *
 * Rules (ATen's): self is [N, C, H, W] or unbatched [C, H, W], float32 (other dtypes are
 * EG_ERR_UNSUPPORTED); outputs keep the leading dims and replace H, W. Window pools: C, H, W
 * non-zero (N may be 0); kernel_size, padding, dilation lists of 1 or 2 (one value applies to
 * both dims), stride of 0 (= kernel_size), 1 or 2; kernel, stride, dilation >= 1; 0 <= padding
 * <= kernel/2; output size per dim
 *     o = floor((in + 2*pad - dil*(k-1) - 1 + (ceil_mode ? stride-1 : 0)) / stride) + 1,
 *     minus one under ceil_mode if the last window would start at or past in + pad (it must
 *     start inside the input or the left padding), and o >= 1. divisor_override != 0.
 * Adaptive pools: H, W non-zero (adaptive max: C too, when batched), output_size exactly two
 * values >= 0. Gradients: grad_output (and indices, int64) must have exactly the forward output's
 * shape. Sizes must fit ATen's int (< 2^31). An index in `indices` outside the input plane (other
 * than ATen's -1) is found while running: EG_ERR_RUNTIME naming the index.
 * The arithmetic is in kernels/max_pool2d_nchw_f32, avg_pool2d_nchw_f32 and
 * adaptive_pool2d_nchw_f32; every backward kernel zeroes its whole output before accumulating. */
#include <string.h>

#include "kernels/adaptive_pool2d_nchw_f32.h"
#include "kernels/avg_pool2d_nchw_f32.h"
#include "kernels/max_pool2d_nchw_f32.h"
#include "ops/op.h"

EG_ATTRS_FIT(eg_max_pool2d_params);
EG_ATTRS_FIT(eg_avg_pool2d_params);
EG_ATTRS_FIT(eg_adaptive_pool2d_params);

#define EG_POOL_INT_MAX 2147483647LL /* ATen downcasts pooling sizes to int */

/* ---- shared argument rules ---- */

/* A float32 tensor argument. */
static eg_status arg_f32(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                         const eg_value **out) {
  EG_TRY(eg_arg_tensor(g, n, pos, kw, out));
  if ((*out)->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument %s (#%d) dtype %s: %s supports "
                         "float32 only", kw, pos, eg_dtype_name((*out)->dtype),
                         eg_op_target(n->op));
  return EG_OK;
}

/* An int64 indices tensor argument of exactly `shape` (the forward output's). */
static eg_status arg_indices(const eg_graph *g, const eg_node *n, int pos, const eg_value **out) {
  EG_TRY(eg_arg_tensor(g, n, pos, "indices", out));
  if ((*out)->dtype != EG_DTYPE_INT64)
    return eg_node_error(n, EG_ERR_INVALID, "argument indices (#%d) dtype %s: expected int64",
                         pos, eg_dtype_name((*out)->dtype));
  return EG_OK;
}

/* The pooled input: rank 3 ([C, H, W]) or 4 ([N, C, H, W]) with dims from `first_nonzero`
 * counted from the end (3: C, H, W; 2: H, W) non-zero. */
static eg_status pool_input(const eg_node *n, int pos, const char *kw, const eg_value *x,
                            int first_nonzero) {
  char s[160];
  if (x->rank != 3 && x->rank != 4)
    return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) shape %s: expected 3-D [C, H, W] "
                         "or 4-D [N, C, H, W]", kw, pos,
                         eg_fmt_ints(s, sizeof s, x->shape, x->rank));
  for (int d = x->rank - first_nonzero; d < x->rank; d++)
    if (x->shape[d] == 0)
      return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) shape %s: dim %d is empty; "
                           "only the batch dim may be 0", kw, pos,
                           eg_fmt_ints(s, sizeof s, x->shape, x->rank), d);
  return EG_OK;
}

static int64_t planes_of(const eg_value *x) {
  return x->rank == 4 ? x->shape[0] * x->shape[1] : x->shape[0];
}

/* Sets the fields every pool kernel's params open with: x's planes and plane size, and the
 * output plane h x w (a macro: the three params types are distinct structs). */
#define SET_PLANES(p, x, h, w)                                                             \
  ((p)->planes = planes_of(x), (p)->h_in = (x)->shape[(x)->rank - 2],                      \
   (p)->w_in = (x)->shape[(x)->rank - 1], (p)->h_out = (h), (p)->w_out = (w))

/* x's shape with the last two dims replaced by h, w. */
static void pooled_shape(const eg_value *x, int64_t h, int64_t w, int64_t s[EG_MAX_RANK]) {
  memcpy(s, x->shape, (size_t)x->rank * sizeof *s);
  s[x->rank - 2] = h;
  s[x->rank - 1] = w;
}

/* `v` must have exactly `shape` (rank x->rank): a gradient or indices of the forward output. */
static eg_status same_as_output(const eg_node *n, const char *what, const eg_value *v,
                                int rank, const int64_t *shape) {
  bool same = v->rank == rank;
  for (int d = 0; same && d < rank; d++) same = v->shape[d] == shape[d];
  if (same) return EG_OK;
  char got[160], want[160];
  return eg_node_error(n, EG_ERR_INVALID, "%s shape %s contradicts the pooling's output %s",
                       what, eg_fmt_ints(got, sizeof got, v->shape, v->rank),
                       eg_fmt_ints(want, sizeof want, shape, rank));
}

/* An int list of 1 or 2 values (one applies to both dims) into v[2], each in [lo, int max].
 * `allow_empty`: [] (and a missing/None argument) gives `dflt` for both — stride's "= kernel".
 * `required`: a missing argument is an error, else it gives `dflt`. */
static eg_status int_pair(const eg_node *n, int pos, const char *kw, bool required,
                          bool allow_empty, const int64_t dflt[2], int64_t lo, int64_t v[2]) {
  int count;
  if (required)
    EG_TRY(eg_arg_int_list(n, pos, kw, v, allow_empty ? 0 : 1, 2, &count));
  else
    EG_TRY(eg_arg_opt_int_list(n, pos, kw, v, allow_empty ? 0 : 1, 2, &count));
  if (count <= 0) {
    v[0] = dflt[0];
    v[1] = dflt[1];
    return EG_OK;
  }
  if (count == 1) v[1] = v[0];
  for (int i = 0; i < 2; i++)
    if (v[i] < lo || v[i] > EG_POOL_INT_MAX)
      return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) [%lld, %lld]: must be in "
                           "[%lld, %lld]", kw, pos, (long long)v[0], (long long)v[1],
                           (long long)lo, EG_POOL_INT_MAX);
  return EG_OK;
}

/* Where a window pool's arguments sit in its schema. */
typedef struct pool_schema {
  int self, kernel;                /* positions; the rest follow kernel_size in schema order */
  bool has_dilation;               /* max pools */
  bool required;                   /* the backward schemas have no defaults */
} pool_schema;

/* The window geometry of max_pool2d / avg_pool2d (avg: dilation 1). */
typedef struct pool_window {
  int64_t kernel[2], stride[2], padding[2], dilation[2];
  bool ceil_mode;
  int64_t out[2];                  /* output H, W */
} pool_window;

/* floor(a / b) for b > 0 (ATen's div_rtn). */
static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* ATen's pooling_output_shape_pad_lr with equal left/right padding. */
static int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                             bool ceil_mode) {
  int64_t o = floor_div(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0),
                        stride) + 1;
  /* the last window must start inside the input or the left padding */
  if (ceil_mode && (o - 1) * stride >= in + pad) o--;
  return o;
}

/* The (out, indices int64) tuple of a max pool, both of `shape`. */
static eg_status out_with_indices(eg_graph *g, eg_node *n, int rank, const int64_t *shape) {
  EG_TRY(eg_out_tuple(g, n, 2));
  EG_TRY(eg_out_elem(g, n, 0, true, EG_DTYPE_FLOAT32, rank, shape));
  return eg_out_elem(g, n, 1, true, EG_DTYPE_INT64, rank, shape);
}

/* Parses kernel_size, stride, padding, [dilation,] ceil_mode and derives the output size. */
static eg_status parse_window(const eg_node *n, const eg_value *x, const pool_schema *sc,
                              pool_window *w) {
  static const int64_t zero[2] = {0, 0}, one[2] = {1, 1};
  int pos = sc->kernel;
  EG_TRY(int_pair(n, pos, "kernel_size", true, false, one, 1, w->kernel));
  EG_TRY(int_pair(n, pos + 1, "stride", sc->required, true, w->kernel, 1, w->stride));
  EG_TRY(int_pair(n, pos + 2, "padding", sc->required, false, zero, 0, w->padding));
  pos += 3;
  if (sc->has_dilation)
    EG_TRY(int_pair(n, pos++, "dilation", sc->required, false, one, 1, w->dilation));
  else
    w->dilation[0] = w->dilation[1] = 1;
  w->ceil_mode = false;
  if (sc->required)
    EG_TRY(eg_arg_bool(n, pos, "ceil_mode", &w->ceil_mode));
  else
    EG_TRY(eg_arg_opt_bool(n, pos, "ceil_mode", &w->ceil_mode));
  for (int i = 0; i < 2; i++)
    if (w->padding[i] > w->kernel[i] / 2)
      return eg_node_error(n, EG_ERR_INVALID, "argument padding (#%d) [%lld, %lld] with "
                           "kernel_size [%lld, %lld]: pad should be at most half of kernel size",
                           sc->kernel + 2, (long long)w->padding[0], (long long)w->padding[1],
                           (long long)w->kernel[0], (long long)w->kernel[1]);
  const int64_t *in = &x->shape[x->rank - 2];
  for (int i = 0; i < 2; i++)
    w->out[i] = pool_out_size(in[i], w->kernel[i], w->padding[i], w->stride[i], w->dilation[i],
                              w->ceil_mode);
  if (w->out[0] < 1 || w->out[1] < 1)
    return eg_node_error(n, EG_ERR_INVALID, "input %lldx%lld with kernel_size [%lld, %lld], "
                         "stride [%lld, %lld], padding [%lld, %lld], dilation [%lld, %lld]: "
                         "output size %lldx%lld is too small", (long long)in[0],
                         (long long)in[1], (long long)w->kernel[0], (long long)w->kernel[1],
                         (long long)w->stride[0], (long long)w->stride[1],
                         (long long)w->padding[0], (long long)w->padding[1],
                         (long long)w->dilation[0], (long long)w->dilation[1],
                         (long long)w->out[0], (long long)w->out[1]);
  return EG_OK;
}

/* self of a window pool (float32, [N,] C, H, W non-empty) and its window. */
static eg_status parse_window_pool(const eg_graph *g, const eg_node *n, const pool_schema *sc,
                                   const eg_value **x, pool_window *w) {
  EG_TRY(arg_f32(g, n, sc->self, "self", x));
  EG_TRY(pool_input(n, sc->self, "self", *x, 3));
  return parse_window(n, *x, sc, w);
}

/* ---- max_pool2d_with_indices ---- */

static eg_status parse_max_pool(eg_graph *g, eg_node *n, const pool_schema *sc,
                                const eg_value **x, int64_t out_shape[EG_MAX_RANK]) {
  pool_window w;
  EG_TRY(parse_window_pool(g, n, sc, x, &w));
  eg_max_pool2d_params *p = EG_ATTRS(n, eg_max_pool2d_params);
  memset(p, 0, sizeof *p);
  SET_PLANES(p, *x, w.out[0], w.out[1]);
  memcpy(p->kernel, w.kernel, sizeof p->kernel);
  memcpy(p->stride, w.stride, sizeof p->stride);
  memcpy(p->padding, w.padding, sizeof p->padding);
  memcpy(p->dilation, w.dilation, sizeof p->dilation);
  pooled_shape(*x, w.out[0], w.out[1], out_shape);
  n->scratch_bytes = 0;
  return EG_OK;
}

eg_status eg_check_max_pool2d_with_indices(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "kernel_size", "stride", "padding", "dilation",
                                      "ceil_mode", NULL};
  static const pool_schema sc = {.self = 0, .kernel = 1, .has_dilation = true};
  EG_TRY(eg_node_check_arity(n, 2, 6, known));
  const eg_value *x;
  int64_t s[EG_MAX_RANK];
  EG_TRY(parse_max_pool(g, n, &sc, &x, s));
  return out_with_indices(g, n, x->rank, s);
}

eg_status eg_run_max_pool2d_with_indices(const eg_exec *ex, const eg_node *n) {
  eg_max_pool2d_nchw_f32(EG_ATTRS(n, const eg_max_pool2d_params), eg_exec_arg(ex, n, 0, "self"),
                         eg_exec_elem(ex, n, 0), eg_exec_elem(ex, n, 1));
  return EG_OK;
}

/* Runs the index scatter shared by both max-pool gradients; reports a stray index. */
static eg_status scatter_max_grad(const eg_exec *ex, const eg_node *n, int64_t planes,
                                  int64_t h_in, int64_t w_in, int64_t out_plane,
                                  int indices_pos) {
  int64_t bad = 0;
  if (eg_max_pool2d_backward_nchw_f32(planes, h_in * w_in, out_plane,
                                      eg_exec_arg(ex, n, 0, "grad_output"),
                                      eg_exec_arg(ex, n, indices_pos, "indices"),
                                      eg_exec_out(ex, n), &bad))
    return EG_OK;
  return eg_node_error(n, EG_ERR_RUNTIME, "indices holds %lld: out of range [0, %lld) for an "
                       "input plane of %lldx%lld", (long long)bad, (long long)(h_in * w_in),
                       (long long)h_in, (long long)w_in);
}

eg_status eg_check_max_pool2d_with_indices_backward(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "self", "kernel_size", "stride",
                                      "padding", "dilation", "ceil_mode", "indices", NULL};
  static const pool_schema sc = {.self = 1, .kernel = 2, .has_dilation = true,
                                 .required = true};
  EG_TRY(eg_node_check_arity(n, 8, 8, known));
  const eg_value *x, *gy, *idx;
  int64_t s[EG_MAX_RANK];
  EG_TRY(arg_f32(g, n, 0, "grad_output", &gy));
  EG_TRY(parse_max_pool(g, n, &sc, &x, s));
  EG_TRY(arg_indices(g, n, 7, &idx));
  EG_TRY(same_as_output(n, "grad_output", gy, x->rank, s));
  EG_TRY(same_as_output(n, "indices", idx, x->rank, s));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, x->rank, x->shape);
}

eg_status eg_run_max_pool2d_with_indices_backward(const eg_exec *ex, const eg_node *n) {
  const eg_max_pool2d_params *p = EG_ATTRS(n, const eg_max_pool2d_params);
  return scatter_max_grad(ex, n, p->planes, p->h_in, p->w_in, p->h_out * p->w_out, 7);
}

/* ---- avg_pool2d ---- */

static eg_status parse_avg_pool(eg_graph *g, eg_node *n, const pool_schema *sc,
                                const eg_value **x, int64_t out_shape[EG_MAX_RANK]) {
  pool_window w;
  EG_TRY(parse_window_pool(g, n, sc, x, &w));
  const int cip_pos = sc->kernel + 4, div_pos = sc->kernel + 5;
  bool cip = true;
  int64_t divisor = 0;
  const eg_arg *d = eg_node_arg(n, div_pos, "divisor_override");
  if (sc->required) {
    EG_TRY(eg_arg_bool(n, cip_pos, "count_include_pad", &cip));
    if (!d)
      return eg_node_error(n, EG_ERR_INVALID, "argument divisor_override (#%d) is missing: "
                           "expected an int or None", div_pos);
  } else {
    EG_TRY(eg_arg_opt_bool(n, cip_pos, "count_include_pad", &cip));
  }
  if (d && d->kind != EG_ARG_NONE) {
    EG_TRY(eg_arg_int(n, div_pos, "divisor_override", &divisor));
    if (divisor == 0)
      return eg_node_error(n, EG_ERR_INVALID, "argument divisor_override (#%d) is 0: divisor "
                           "must be not zero", div_pos);
  }
  eg_avg_pool2d_params *p = EG_ATTRS(n, eg_avg_pool2d_params);
  memset(p, 0, sizeof *p);
  SET_PLANES(p, *x, w.out[0], w.out[1]);
  memcpy(p->kernel, w.kernel, sizeof p->kernel);
  memcpy(p->stride, w.stride, sizeof p->stride);
  memcpy(p->padding, w.padding, sizeof p->padding);
  p->count_include_pad = cip;
  p->divisor_override = divisor;
  pooled_shape(*x, w.out[0], w.out[1], out_shape);
  n->scratch_bytes = 0;
  return EG_OK;
}

eg_status eg_check_avg_pool2d(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "kernel_size", "stride", "padding", "ceil_mode",
                                      "count_include_pad", "divisor_override", NULL};
  static const pool_schema sc = {.self = 0, .kernel = 1};
  EG_TRY(eg_node_check_arity(n, 2, 7, known));
  const eg_value *x;
  int64_t s[EG_MAX_RANK];
  EG_TRY(parse_avg_pool(g, n, &sc, &x, s));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, x->rank, s);
}

eg_status eg_run_avg_pool2d(const eg_exec *ex, const eg_node *n) {
  eg_avg_pool2d_nchw_f32(EG_ATTRS(n, const eg_avg_pool2d_params), eg_exec_arg(ex, n, 0, "self"),
                         eg_exec_out(ex, n));
  return EG_OK;
}

eg_status eg_check_avg_pool2d_backward(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "self", "kernel_size", "stride",
                                      "padding", "ceil_mode", "count_include_pad",
                                      "divisor_override", NULL};
  static const pool_schema sc = {.self = 1, .kernel = 2, .required = true};
  EG_TRY(eg_node_check_arity(n, 8, 8, known));
  const eg_value *x, *gy;
  int64_t s[EG_MAX_RANK];
  EG_TRY(arg_f32(g, n, 0, "grad_output", &gy));
  EG_TRY(parse_avg_pool(g, n, &sc, &x, s));
  EG_TRY(same_as_output(n, "grad_output", gy, x->rank, s));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, x->rank, x->shape);
}

eg_status eg_run_avg_pool2d_backward(const eg_exec *ex, const eg_node *n) {
  eg_avg_pool2d_backward_nchw_f32(EG_ATTRS(n, const eg_avg_pool2d_params),
                                  eg_exec_arg(ex, n, 0, "grad_output"), eg_exec_out(ex, n));
  return EG_OK;
}

/* ---- adaptive pools ---- */

/* Fills the adaptive attrs from x and the output H, W. */
static void set_adaptive(eg_node *n, const eg_value *x, int64_t h_out, int64_t w_out) {
  eg_adaptive_pool2d_params *p = EG_ATTRS(n, eg_adaptive_pool2d_params);
  memset(p, 0, sizeof *p);
  SET_PLANES(p, x, h_out, w_out);
  n->scratch_bytes = 0;
}

/* self and output_size of an adaptive forward; `first_nonzero` as pool_input's. */
static eg_status parse_adaptive(eg_graph *g, eg_node *n, int first_nonzero, const eg_value **x,
                                int64_t out_shape[EG_MAX_RANK]) {
  int64_t o[2];
  int count;
  EG_TRY(arg_f32(g, n, 0, "self", x));
  EG_TRY(pool_input(n, 0, "self", *x, first_nonzero));
  EG_TRY(eg_arg_int_list(n, 1, "output_size", o, 2, 2, &count));
  if (o[0] < 0 || o[1] < 0)
    return eg_node_error(n, EG_ERR_INVALID, "argument output_size (#1) [%lld, %lld]: sizes "
                         "must be >= 0", (long long)o[0], (long long)o[1]);
  set_adaptive(n, *x, o[0], o[1]);
  pooled_shape(*x, o[0], o[1], out_shape);
  return EG_OK;
}

/* grad_output of an adaptive backward: self's leading dims, non-empty spatial dims (ATen's
 * adaptive_pool_empty_output_check); its H, W are the forward's output size. */
static eg_status parse_adaptive_grad(eg_graph *g, eg_node *n, int first_nonzero,
                                     const eg_value **x, const eg_value **gy) {
  EG_TRY(arg_f32(g, n, 0, "grad_output", gy));
  EG_TRY(arg_f32(g, n, 1, "self", x));
  EG_TRY(pool_input(n, 1, "self", *x, first_nonzero));
  EG_TRY(pool_input(n, 0, "grad_output", *gy, first_nonzero));
  int64_t s[EG_MAX_RANK];
  pooled_shape(*x, (*gy)->shape[(*gy)->rank - 2], (*gy)->shape[(*gy)->rank - 1], s);
  EG_TRY(same_as_output(n, "grad_output", *gy, (*x)->rank, s));
  set_adaptive(n, *x, s[(*x)->rank - 2], s[(*x)->rank - 1]);
  return EG_OK;
}

eg_status eg_check__adaptive_avg_pool2d(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "output_size", NULL};
  EG_TRY(eg_node_check_arity(n, 2, 2, known));
  const eg_value *x;
  int64_t s[EG_MAX_RANK];
  EG_TRY(parse_adaptive(g, n, 2, &x, s));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, x->rank, s);
}

eg_status eg_run__adaptive_avg_pool2d(const eg_exec *ex, const eg_node *n) {
  eg_adaptive_avg_pool2d_nchw_f32(EG_ATTRS(n, const eg_adaptive_pool2d_params),
                                  eg_exec_arg(ex, n, 0, "self"), eg_exec_out(ex, n));
  return EG_OK;
}

eg_status eg_check__adaptive_avg_pool2d_backward(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "self", NULL};
  EG_TRY(eg_node_check_arity(n, 2, 2, known));
  const eg_value *x, *gy;
  /* ATen checks grad_output's non-batch dims (C too, when batched) */
  EG_TRY(arg_f32(g, n, 1, "self", &x));
  EG_TRY(parse_adaptive_grad(g, n, x->rank == 4 ? 3 : 2, &x, &gy));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, x->rank, x->shape);
}

eg_status eg_run__adaptive_avg_pool2d_backward(const eg_exec *ex, const eg_node *n) {
  eg_adaptive_avg_pool2d_backward_nchw_f32(EG_ATTRS(n, const eg_adaptive_pool2d_params),
                                           eg_exec_arg(ex, n, 0, "grad_output"),
                                           eg_exec_out(ex, n));
  return EG_OK;
}

eg_status eg_check_adaptive_max_pool2d(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "output_size", NULL};
  EG_TRY(eg_node_check_arity(n, 2, 2, known));
  const eg_value *x;
  int64_t s[EG_MAX_RANK];
  /* ATen: every non-batch dim non-empty (C, H, W batched; H, W unbatched) */
  EG_TRY(arg_f32(g, n, 0, "self", &x));
  EG_TRY(parse_adaptive(g, n, x->rank == 4 ? 3 : 2, &x, s));
  return out_with_indices(g, n, x->rank, s);
}

eg_status eg_run_adaptive_max_pool2d(const eg_exec *ex, const eg_node *n) {
  eg_adaptive_max_pool2d_nchw_f32(EG_ATTRS(n, const eg_adaptive_pool2d_params),
                                  eg_exec_arg(ex, n, 0, "self"), eg_exec_elem(ex, n, 0),
                                  eg_exec_elem(ex, n, 1));
  return EG_OK;
}

eg_status eg_check_adaptive_max_pool2d_backward(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "self", "indices", NULL};
  EG_TRY(eg_node_check_arity(n, 3, 3, known));
  const eg_value *x, *gy, *idx;
  EG_TRY(arg_f32(g, n, 1, "self", &x));
  EG_TRY(parse_adaptive_grad(g, n, x->rank == 4 ? 3 : 2, &x, &gy));
  EG_TRY(arg_indices(g, n, 2, &idx));
  EG_TRY(same_as_output(n, "indices", idx, gy->rank, gy->shape));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, x->rank, x->shape);
}

eg_status eg_run_adaptive_max_pool2d_backward(const eg_exec *ex, const eg_node *n) {
  const eg_adaptive_pool2d_params *p = EG_ATTRS(n, const eg_adaptive_pool2d_params);
  return scatter_max_grad(ex, n, p->planes, p->h_in, p->w_in, p->h_out * p->w_out, 2);
}
