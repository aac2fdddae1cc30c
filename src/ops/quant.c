/* quant.c — QDQ quantization ops, on the kernels of src/kernels/quant_f32.h (PyTorch 1.13's
 * CPU arithmetic, bit for bit).
 *
 *   quantize_per_tensor(self f32, float scale, int zero_point, ScalarType dtype)
 *   quantize_per_channel(self f32, Tensor scales, Tensor zero_points, int axis, ScalarType dtype)
 *   dequantize.self(self)                                                  -> float32
 *
 * Representation (docs/graph-format.md): a quantized tensor has its storage dtype — dtype
 * uint8 / int8 / int32 stands for quint8 / qint8 / qint32, both as the `dtype` argument and as
 * the output value's dtype — and its parameters are the quantize node's arguments. So
 * dequantize reads them from the node that produced its argument, which must be a quantize
 * node (a graph input or other producer of integers carries no parameters: rejected).
 *
 * Rules: self float32; scale and zero points as ir/quant_rule.h says (scale finite, in
 * [1e-30, 1e30]; zero points in the storage range); per channel: axis a dim of self, scales
 * float64 and zero_points int64, both rank 1 with self.shape[axis] entries and STATIC (traced constants or frozen buffers: the
 * parameters are needed when compiling, and dequantize reads them later through the quantize
 * node, which keeps them alive). Output: the storage dtype, self's shape. */
#include "ops/quant.h"

#include <stdio.h>
#include <string.h>

#include "ir/quant_rule.h"
#include "ops/op.h"

typedef struct eg_quant_attrs {
  double scale;          /* per tensor */
  int64_t zero_point;    /* per tensor */
  int32_t axis;          /* -1 per tensor */
  eg_dtype storage;
  int64_t qmin, qmax;
} eg_quant_attrs;
EG_ATTRS_FIT(eg_quant_attrs);

/* self (float32) and the dtype argument at `pos`; fills storage and range in *a. */
static eg_status check_common(eg_graph *g, eg_node *n, int dtype_pos, const eg_value **x,
                              eg_quant_attrs *a) {
  EG_TRY(eg_arg_tensor(g, n, 0, "self", x));
  if ((*x)->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "self dtype %s: %s quantizes float32 only",
                         eg_dtype_name((*x)->dtype), eg_op_target(n->op));
  eg_dtype d = EG_DTYPE_COUNT;
  EG_TRY(eg_arg_opt_dtype(n, dtype_pos, "dtype", &d));
  if (!eg_quant_storage_range(d, &a->qmin, &a->qmax))
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "dtype %s: must be uint8, int8 or int32 (the "
                         "storage of quint8, qint8, qint32)",
                         d == EG_DTYPE_COUNT ? "missing" : eg_dtype_name(d));
  a->storage = d;
  return EG_OK;
}

static eg_status check_scale(const eg_node *n, const char *what, double scale) {
  if (!eg_quant_scale_ok(scale))
    return eg_node_error(n, EG_ERR_INVALID, "%s (%g): " EG_QUANT_SCALE_RULE, what, scale);
  return EG_OK;
}

static eg_status check_zero_point(const eg_node *n, const char *what, int64_t zp,
                                  const eg_quant_attrs *a) {
  if (zp < a->qmin || zp > a->qmax)
    return eg_node_error(n, EG_ERR_INVALID, "%s (%lld): must lie in [%lld, %lld] for %s", what,
                         (long long)zp, (long long)a->qmin, (long long)a->qmax,
                         eg_dtype_name(a->storage));
  return EG_OK;
}

eg_status eg_check_quantize_per_tensor(eg_graph *g, eg_node *n) {
  static const char *const kw[] = {"self", "scale", "zero_point", "dtype", NULL};
  eg_quant_attrs *a = EG_ATTRS(n, eg_quant_attrs);
  const eg_value *x;
  memset(a, 0, sizeof *a);
  a->axis = -1;
  EG_TRY(eg_node_check_arity(n, 4, 4, kw));
  EG_TRY(check_common(g, n, 3, &x, a));
  EG_TRY(eg_arg_scalar(n, 1, "scale", &a->scale));
  EG_TRY(eg_arg_int(n, 2, "zero_point", &a->zero_point));
  EG_TRY(check_scale(n, "scale", a->scale));
  EG_TRY(check_zero_point(n, "zero_point", a->zero_point, a));
  return eg_out_tensor(g, n, a->storage, x->rank, x->shape);
}

/* A per-channel parameter tensor: STATIC, rank 1, `count` entries of `dtype`. */
static eg_status check_param(eg_graph *g, eg_node *n, int pos, const char *kw, eg_dtype dtype,
                             int64_t count, const eg_static **out) {
  const eg_value *v;
  EG_TRY(eg_arg_tensor(g, n, pos, kw, &v));
  if (v->dtype != dtype || v->rank != 1 || v->shape[0] != count)
    return eg_node_error(n, EG_ERR_INVALID, "%s (%s, rank %d, %lld entries): must be %s of "
                         "shape [%lld] (one per index of self's axis)", kw,
                         eg_dtype_name(v->dtype), (int)v->rank,
                         (long long)(v->rank ? v->shape[0] : 1), eg_dtype_name(dtype),
                         (long long)count);
  if (v->role != EG_ROLE_STATIC)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "%s is %s, computed at run time: per-channel "
                         "parameters must be statics (traced constants or frozen buffers)", kw,
                         eg_value_label(g, eg_node_arg(n, pos, kw)->value));
  *out = &g->statics[v->def];
  return EG_OK;
}

eg_status eg_check_quantize_per_channel(eg_graph *g, eg_node *n) {
  static const char *const kw[] = {"self", "scales", "zero_points", "axis", "dtype", NULL};
  eg_quant_attrs *a = EG_ATTRS(n, eg_quant_attrs);
  const eg_value *x;
  const eg_static *scales, *zps;
  int64_t axis;
  memset(a, 0, sizeof *a);
  EG_TRY(eg_node_check_arity(n, 5, 5, kw));
  EG_TRY(check_common(g, n, 4, &x, a));
  EG_TRY(eg_arg_int(n, 3, "axis", &axis));
  if (axis < 0 || axis >= x->rank)
    return eg_node_error(n, EG_ERR_INVALID, "axis %lld: must be a dim of self (rank %d)",
                         (long long)axis, (int)x->rank);
  a->axis = (int32_t)axis;
  EG_TRY(check_param(g, n, 1, "scales", EG_DTYPE_FLOAT64, x->shape[axis], &scales));
  EG_TRY(check_param(g, n, 2, "zero_points", EG_DTYPE_INT64, x->shape[axis], &zps));
  char what[48];
  for (int64_t c = 0; c < x->shape[axis]; c++) {
    snprintf(what, sizeof what, "scales[%lld]", (long long)c);
    EG_TRY(check_scale(n, what, ((const double *)scales->data)[c]));
    snprintf(what, sizeof what, "zero_points[%lld]", (long long)c);
    EG_TRY(check_zero_point(n, what, ((const int64_t *)zps->data)[c], a));
  }
  return eg_out_tensor(g, n, a->storage, x->rank, x->shape);
}

const eg_node *eg_quant_producer(const eg_graph *g, int32_t id) {
  const eg_value *v = &g->values[id];
  if (v->role != EG_ROLE_NODE || v->def < 0 || v->def >= g->n_nodes) return NULL;
  const eg_node *p = &g->nodes[v->def];
  if (p->output != id) return NULL;
  return p->op == EG_OP_quantize_per_tensor || p->op == EG_OP_quantize_per_channel ? p : NULL;
}

void eg_quant_of_node(const eg_graph *g, const eg_node *n, eg_quant *out) {
  const eg_quant_attrs *a = EG_ATTRS(n, const eg_quant_attrs);
  memset(out, 0, sizeof *out);
  out->dtype = a->storage;
  out->axis = a->axis;
  out->qmin = a->qmin;
  out->qmax = a->qmax;
  if (a->axis < 0) {
    out->n = 1;
    out->scale = &a->scale;
    out->zero_point = &a->zero_point;
    return;
  }
  const eg_value *s = &g->values[eg_node_arg(n, 1, "scales")->value];
  const eg_value *z = &g->values[eg_node_arg(n, 2, "zero_points")->value];
  out->n = (int32_t)s->shape[0];
  out->scale = g->statics[s->def].data;
  out->zero_point = g->statics[z->def].data;
}

eg_quant_view eg_quant_view_of(const eg_quant *q, const int64_t *shape, int rank, int axis) {
  eg_quant_view v = {.storage = q->dtype, .outer = 1, .channels = 1, .inner = 1,
                     .scale = q->scale, .zero_point = q->zero_point, .qmin = q->qmin,
                     .qmax = q->qmax, .per_channel = q->axis >= 0};
  for (int d = 0; d < rank; d++) {
    if (q->axis < 0 || d < axis) v.outer *= shape[d];
    else if (d == axis) v.channels = shape[d];
    else v.inner *= shape[d];
  }
  return v;
}

eg_status eg_check_dequantize_self(eg_graph *g, eg_node *n) {
  static const char *const kw[] = {"self", NULL};
  const eg_value *x;
  EG_TRY(eg_node_check_arity(n, 1, 1, kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  if (!eg_quant_producer(g, eg_node_arg(n, 0, "self")->value))
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "self (%s, %s) is not the output of a quantize "
                         "node: a quantized tensor's scale and zero point are the arguments of "
                         "the quantize node that made it",
                         eg_value_label(g, eg_node_arg(n, 0, "self")->value),
                         eg_dtype_name(x->dtype));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, x->rank, x->shape);
}

/* quantize.per_tensor and per_channel run the same way: the node's quantization over self. */
static eg_status run_quantize(const eg_exec *ex, const eg_node *n) {
  eg_quant q;
  eg_quant_of_node(ex->g, n, &q);
  const eg_value *x = eg_exec_argv(ex, n, 0, "self");
  const eg_quant_view v = eg_quant_view_of(&q, x->shape, x->rank, q.axis);
  eg_quantize_f32(&v, eg_exec_arg(ex, n, 0, "self"), eg_exec_out(ex, n));
  return EG_OK;
}

eg_status eg_run_quantize_per_tensor(const eg_exec *ex, const eg_node *n) {
  return run_quantize(ex, n);
}

eg_status eg_run_quantize_per_channel(const eg_exec *ex, const eg_node *n) {
  return run_quantize(ex, n);
}

eg_status eg_run_dequantize_self(const eg_exec *ex, const eg_node *n) {
  eg_quant q;
  eg_quant_of_node(ex->g, eg_quant_producer(ex->g, eg_exec_arg_id(n, 0, "self")), &q);
  const eg_value *x = eg_exec_argv(ex, n, 0, "self");
  const eg_quant_view v = eg_quant_view_of(&q, x->shape, x->rank, q.axis);
  eg_dequantize_f32(&v, eg_exec_arg(ex, n, 0, "self"), eg_exec_out(ex, n));
  return EG_OK;
}
