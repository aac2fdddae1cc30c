/* resize.c — 2-D upsampling (bilinear and nearest) and its gradients, ATen's CPU semantics,
 * fp32. Both overload families PyTorch traces are taken:
 *
 *   upsample_bilinear2d(self, output_size[2], align_corners, scales_h=None, scales_w=None)
 *   upsample_nearest2d(self, output_size[2], scales_h=None, scales_w=None)
 *   upsample_bilinear2d_backward(grad_output, output_size[2], input_size[4], align_corners,
 *                                scales_h=None, scales_w=None)
 *   upsample_nearest2d_backward(grad_output, output_size[2], input_size[4], scales_h=None,
 *                               scales_w=None)
 *       (PyTorch 2's make_fx; results [N, C, output_size] / input_size)
 *   upsample_bilinear2d.vec(input, output_size?, align_corners, scale_factors?)
 *   upsample_nearest2d.vec(input, output_size?, scale_factors?)
 *   upsample_bilinear2d_backward.vec(grad_output, output_size?, input_size, align_corners,
 *                                    scale_factors?)
 *   upsample_nearest2d_backward.vec(grad_output, output_size?, input_size, scale_factors?)
 *       (PyTorch 1.13's make_fx; every argument present, `?` ones may be None)
 *
 * Rules (ATen's): the input is 4-D [N, C, H, W] float32 (other dtypes are EG_ERR_UNSUPPORTED)
 * with C, H, W >= 1 and N >= 0; a backward's input_size is 4 ints, N, C >= 0 and H, W >= 1.
 * output_size is exactly 2 ints >= 1. A .vec node gives exactly one of output_size and
 * scale_factors (2 numbers); the output size is then floor(in * scale), which must be >= 1.
 * Scales are finite and > 0 with 1/scale a finite float32 (ATen computes coordinates in float;
 * it silently ignores a scale <= 0, which no trace holds, so edgegrad refuses one). A scale
 * need not reproduce the output size: where one is given (and align_corners is false) the
 * coordinates use 1/scale, as ATen's do. A backward's grad_output has exactly the forward
 * output's shape [N, C, output_size]. The arithmetic is in kernels/resize_nchw_f32 (PyTorch 2's
 * where the versions differ: clamped coordinates past the input, nearest's exact cases). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/resize_nchw_f32.h"
#include "ops/op.h"
#include "util/checked.h"

EG_ATTRS_FIT(eg_resize_params);

/* Where a resize op's arguments sit; the rest follow from these three facts. */
typedef struct resize_schema {
  bool vec;      /* .vec: output_size? and scale_factors?; else output_size[2], scales_h/w */
  bool backward; /* grad_output and input_size[4] instead of self */
  bool bilinear; /* align_corners after the sizes */
} resize_schema;

/* The parsed geometry: input [N, C, H, W], output H, W, and the kernel's params. */
typedef struct resize_geom {
  int64_t in[4];
  int64_t out_h, out_w;
  eg_resize_params p;
} resize_geom;

/* ---- argument rules ---- */

/* The float32 tensor argument 0. */
static eg_status arg0_f32(const eg_graph *g, const eg_node *n, const char *kw,
                          const eg_value **out) {
  EG_TRY(eg_arg_tensor(g, n, 0, kw, out));
  if ((*out)->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument %s (#0) dtype %s: %s supports "
                         "float32 only", kw, eg_dtype_name((*out)->dtype),
                         eg_op_target(n->op));
  return EG_OK;
}

/* A scale factor: finite, > 0, and its reciprocal (ATen's ratio, a float) finite in float32. */
static eg_status check_scale(const eg_node *n, int pos, const char *kw, double s) {
  if (isfinite(s) && s > 0.0 && 1.0 / s <= (double)FLT_MAX) return EG_OK;
  return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) %g: scale factors must be finite "
                       "and > 0, with 1/scale a finite float32", kw, pos, s);
}

/* An optional scale (scales_h / scales_w): None or missing gives 0 ("none"). */
static eg_status opt_scale(const eg_node *n, int pos, const char *kw, double *out) {
  *out = 0.0;
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a || a->kind == EG_ARG_NONE) return EG_OK;
  EG_TRY(eg_arg_scalar(n, pos, kw, out));
  return check_scale(n, pos, kw, *out);
}

/* A .vec argument that has no default: it must be present (None is the caller's business). */
static eg_status present(const eg_node *n, int pos, const char *kw, const char *want,
                         const eg_arg **out) {
  *out = eg_node_arg(n, pos, kw);
  if (*out) return EG_OK;
  return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) missing: expected %s", kw, pos,
                       want);
}

/* scale_factors of a .vec node: exactly two numbers, each a valid scale. */
static eg_status scale_list(const eg_node *n, int pos, const eg_arg *a, double s[2]) {
  if (a->kind != EG_ARG_LIST || a->list.n != 2)
    return eg_node_error(n, EG_ERR_INVALID, "argument scale_factors (#%d) is not a list of 2 "
                         "numbers: expected one scale per spatial dim (H, W)", pos);
  for (int i = 0; i < 2; i++) {
    const eg_arg *e = &a->list.items[i];
    if (e->kind != EG_ARG_FLOAT && e->kind != EG_ARG_INT)
      return eg_node_error(n, EG_ERR_INVALID, "argument scale_factors (#%d) element %d is not "
                           "a number: expected a float", pos, i);
    s[i] = e->kind == EG_ARG_FLOAT ? e->f : (double)e->i;
    EG_TRY(check_scale(n, pos, "scale_factors", s[i]));
  }
  return EG_OK;
}

/* output_size: exactly 2 ints, each >= 1. */
static eg_status size_pair(const eg_node *n, int pos, int64_t o[2]) {
  int count;
  EG_TRY(eg_arg_int_list(n, pos, "output_size", o, 2, 2, &count));
  if (o[0] < 1 || o[1] < 1)
    return eg_node_error(n, EG_ERR_INVALID, "argument output_size (#%d) [%lld, %lld]: output "
                         "sizes must be >= 1", pos, (long long)o[0], (long long)o[1]);
  return EG_OK;
}

/* The sizes a .vec node's scales give: floor(in * scale), each in [1, 2^40]. */
static eg_status scaled_sizes(const eg_node *n, int pos, const int64_t in[4], const double s[2],
                              int64_t o[2]) {
  for (int i = 0; i < 2; i++) {
    const double v = floor((double)in[2 + i] * s[i]);
    if (v < 1.0 || v > (double)EG_MAX_NUMEL)
      return eg_node_error(n, EG_ERR_INVALID, "argument scale_factors (#%d) [%g, %g] with "
                           "input %lldx%lld: output size %s %g is not in [1, 2^40]", pos, s[0],
                           s[1], (long long)in[2], (long long)in[3], i ? "W" : "H", v);
    o[i] = (int64_t)v;
  }
  return EG_OK;
}

/* The input's [N, C, H, W]: a forward's tensor (C, H, W >= 1), a backward's input_size list
 * (N, C >= 0, H, W >= 1). */
static eg_status input_dims(const eg_node *n, const resize_schema *sc, const eg_value *x,
                            const char *kw, int64_t in[4]) {
  char s[160];
  if (!sc->backward) {
    if (x->rank != 4)
      return eg_node_error(n, EG_ERR_INVALID, "argument %s (#0) shape %s: expected 4-D "
                           "[N, C, H, W]", kw, eg_fmt_ints(s, sizeof s, x->shape, x->rank));
    memcpy(in, x->shape, 4 * sizeof *in);
    if (in[1] < 1 || in[2] < 1 || in[3] < 1)
      return eg_node_error(n, EG_ERR_INVALID, "argument %s (#0) shape %s: C, H and W must be "
                           ">= 1; only the batch dim may be 0", kw,
                           eg_fmt_ints(s, sizeof s, x->shape, 4));
    return EG_OK;
  }
  int count;
  EG_TRY(eg_arg_int_list(n, 2, "input_size", in, 4, 4, &count));
  if (in[0] < 0 || in[1] < 0 || in[2] < 1 || in[3] < 1)
    return eg_node_error(n, EG_ERR_INVALID, "argument input_size (#2) %s: N and C must be "
                         ">= 0, H and W >= 1", eg_fmt_ints(s, sizeof s, in, 4));
  return EG_OK;
}

/* The output size and scales of a .default node: output_size[2], scales_h, scales_w. */
static eg_status default_sizes(const eg_node *n, int scales_pos, resize_geom *rg) {
  int64_t o[2];
  EG_TRY(size_pair(n, 1, o));
  EG_TRY(opt_scale(n, scales_pos, "scales_h", &rg->p.scale_h));
  EG_TRY(opt_scale(n, scales_pos + 1, "scales_w", &rg->p.scale_w));
  rg->out_h = o[0];
  rg->out_w = o[1];
  return EG_OK;
}

/* The output size and scales of a .vec node: exactly one of output_size and scale_factors. */
static eg_status vec_sizes(const eg_node *n, int scales_pos, resize_geom *rg) {
  const eg_arg *os, *sf;
  EG_TRY(present(n, 1, "output_size", "a list of 2 ints or None", &os));
  EG_TRY(present(n, scales_pos, "scale_factors", "a list of 2 floats or None", &sf));
  const bool has_size = os->kind != EG_ARG_NONE, has_scales = sf->kind != EG_ARG_NONE;
  if (has_size == has_scales)
    return eg_node_error(n, EG_ERR_INVALID, "arguments output_size (#1) and scale_factors "
                         "(#%d) are %s: must specify exactly one of output_size and "
                         "scale_factors", scales_pos, has_size ? "both given" : "both None");
  int64_t o[2];
  if (has_size) {
    EG_TRY(size_pair(n, 1, o));
  } else {
    double s[2];
    EG_TRY(scale_list(n, scales_pos, sf, s));
    EG_TRY(scaled_sizes(n, scales_pos, rg->in, s, o));
    rg->p.scale_h = s[0];
    rg->p.scale_w = s[1];
  }
  rg->out_h = o[0];
  rg->out_w = o[1];
  return EG_OK;
}

/* grad_output of a backward: exactly [N, C, out_h, out_w]. */
static eg_status check_grad(const eg_node *n, const eg_value *gy, const resize_geom *rg) {
  const int64_t want[4] = {rg->in[0], rg->in[1], rg->out_h, rg->out_w};
  bool same = gy->rank == 4;
  for (int d = 0; same && d < 4; d++) same = gy->shape[d] == want[d];
  if (same) return EG_OK;
  char got[160], w[160];
  return eg_node_error(n, EG_ERR_INVALID, "grad_output shape %s contradicts the upsampling's "
                       "output %s", eg_fmt_ints(got, sizeof got, gy->shape, gy->rank),
                       eg_fmt_ints(w, sizeof w, want, 4));
}

/* Parses every argument of a resize node and checks its recorded output; fills the attrs and
 * the scratch the kernel needs. */
static eg_status check_resize(eg_graph *g, eg_node *n, const resize_schema *sc) {
  const char *kw = sc->backward ? "grad_output" : sc->vec ? "input" : "self";
  const eg_value *x;
  resize_geom rg;
  memset(&rg, 0, sizeof rg);
  EG_TRY(arg0_f32(g, n, kw, &x));
  EG_TRY(input_dims(n, sc, x, kw, rg.in));
  int pos = sc->backward ? 3 : 2;
  if (sc->bilinear) EG_TRY(eg_arg_bool(n, pos++, "align_corners", &rg.p.align_corners));
  EG_TRY(sc->vec ? vec_sizes(n, pos, &rg) : default_sizes(n, pos, &rg));
  if (sc->backward) {
    EG_TRY(check_grad(n, x, &rg));
    EG_TRY(eg_out_tensor(g, n, EG_DTYPE_FLOAT32, 4, rg.in));
  } else {
    const int64_t s[4] = {rg.in[0], rg.in[1], rg.out_h, rg.out_w};
    EG_TRY(eg_out_tensor(g, n, EG_DTYPE_FLOAT32, 4, s));
  }
  /* the recorded shapes bound every size now (the format's 2^40) */
  rg.p.planes = rg.in[0] * rg.in[1];
  rg.p.h_in = rg.in[2];
  rg.p.w_in = rg.in[3];
  rg.p.h_out = rg.out_h;
  rg.p.w_out = rg.out_w;
  *EG_ATTRS(n, eg_resize_params) = rg.p;
  n->scratch_bytes = eg_resize_scratch_bytes(&rg.p, sc->bilinear);
  return EG_OK;
}

/* ---- the eight targets ---- */

eg_status eg_check_upsample_bilinear2d(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "output_size", "align_corners", "scales_h",
                                      "scales_w", NULL};
  static const resize_schema sc = {.bilinear = true};
  EG_TRY(eg_node_check_arity(n, 3, 5, known));
  return check_resize(g, n, &sc);
}

eg_status eg_check_upsample_bilinear2d_vec(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"input", "output_size", "align_corners", "scale_factors",
                                      NULL};
  static const resize_schema sc = {.vec = true, .bilinear = true};
  EG_TRY(eg_node_check_arity(n, 4, 4, known));
  return check_resize(g, n, &sc);
}

eg_status eg_check_upsample_bilinear2d_backward(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "output_size", "input_size",
                                      "align_corners", "scales_h", "scales_w", NULL};
  static const resize_schema sc = {.backward = true, .bilinear = true};
  EG_TRY(eg_node_check_arity(n, 4, 6, known));
  return check_resize(g, n, &sc);
}

eg_status eg_check_upsample_bilinear2d_backward_vec(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "output_size", "input_size",
                                      "align_corners", "scale_factors", NULL};
  static const resize_schema sc = {.vec = true, .backward = true, .bilinear = true};
  EG_TRY(eg_node_check_arity(n, 5, 5, known));
  return check_resize(g, n, &sc);
}

eg_status eg_check_upsample_nearest2d(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "output_size", "scales_h", "scales_w", NULL};
  static const resize_schema sc = {0};
  EG_TRY(eg_node_check_arity(n, 2, 4, known));
  return check_resize(g, n, &sc);
}

eg_status eg_check_upsample_nearest2d_vec(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"input", "output_size", "scale_factors", NULL};
  static const resize_schema sc = {.vec = true};
  EG_TRY(eg_node_check_arity(n, 3, 3, known));
  return check_resize(g, n, &sc);
}

eg_status eg_check_upsample_nearest2d_backward(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "output_size", "input_size", "scales_h",
                                      "scales_w", NULL};
  static const resize_schema sc = {.backward = true};
  EG_TRY(eg_node_check_arity(n, 3, 5, known));
  return check_resize(g, n, &sc);
}

eg_status eg_check_upsample_nearest2d_backward_vec(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"grad_output", "output_size", "input_size",
                                      "scale_factors", NULL};
  static const resize_schema sc = {.vec = true, .backward = true};
  EG_TRY(eg_node_check_arity(n, 4, 4, known));
  return check_resize(g, n, &sc);
}

/* Every overload of a direction runs the same kernel on the parsed params; `kw` names the
 * tensor argument 0 (self, input or grad_output). */
static eg_status run_bilinear(const eg_exec *ex, const eg_node *n, const char *kw) {
  eg_upsample_bilinear2d_nchw_f32(EG_ATTRS(n, const eg_resize_params), eg_exec_arg(ex, n, 0, kw),
                                  eg_exec_out(ex, n), ex->scratch);
  return EG_OK;
}

static eg_status run_bilinear_backward(const eg_exec *ex, const eg_node *n) {
  eg_upsample_bilinear2d_backward_nchw_f32(EG_ATTRS(n, const eg_resize_params),
                                           eg_exec_arg(ex, n, 0, "grad_output"),
                                           eg_exec_out(ex, n), ex->scratch);
  return EG_OK;
}

static eg_status run_nearest(const eg_exec *ex, const eg_node *n, const char *kw) {
  eg_upsample_nearest2d_nchw_f32(EG_ATTRS(n, const eg_resize_params), eg_exec_arg(ex, n, 0, kw),
                                 eg_exec_out(ex, n), ex->scratch);
  return EG_OK;
}

static eg_status run_nearest_backward(const eg_exec *ex, const eg_node *n) {
  eg_upsample_nearest2d_backward_nchw_f32(EG_ATTRS(n, const eg_resize_params),
                                          eg_exec_arg(ex, n, 0, "grad_output"),
                                          eg_exec_out(ex, n), ex->scratch);
  return EG_OK;
}

eg_status eg_run_upsample_bilinear2d(const eg_exec *ex, const eg_node *n) {
  return run_bilinear(ex, n, "self");
}

eg_status eg_run_upsample_bilinear2d_vec(const eg_exec *ex, const eg_node *n) {
  return run_bilinear(ex, n, "input");
}

eg_status eg_run_upsample_bilinear2d_backward(const eg_exec *ex, const eg_node *n) {
  return run_bilinear_backward(ex, n);
}

eg_status eg_run_upsample_bilinear2d_backward_vec(const eg_exec *ex, const eg_node *n) {
  return run_bilinear_backward(ex, n);
}

eg_status eg_run_upsample_nearest2d(const eg_exec *ex, const eg_node *n) {
  return run_nearest(ex, n, "self");
}

eg_status eg_run_upsample_nearest2d_vec(const eg_exec *ex, const eg_node *n) {
  return run_nearest(ex, n, "input");
}

eg_status eg_run_upsample_nearest2d_backward(const eg_exec *ex, const eg_node *n) {
  return run_nearest_backward(ex, n);
}

eg_status eg_run_upsample_nearest2d_backward_vec(const eg_exec *ex, const eg_node *n) {
  return run_nearest_backward(ex, n);
}
