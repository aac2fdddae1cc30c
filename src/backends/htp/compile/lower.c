/* lower.c — partition -> htp backend graph (see lower.h for the layout field and the tensor
 * kinds). Walks the partition's nodes in order; getitem is handled here (its output is the
 * element's tensor), every other node by its builder's lower(). */
#include "backends/htp/compile/lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/htp/compile/compiler.h"
#include "backends/htp/compile/layout_pass.h"
#include "ir/edit.h"
#include "ir/readers.h"
#include "ir/seed.h"
#include "ops/quant.h"
#include "util/checked.h"
#include "util/error.h"

struct eg_htp_lower {
  const eg_graph *g;
  const eg_partitioning *parts;
  int32_t p;
  const eg_readers *readers;         /* who reads each value (ir/readers.h) */
  const eg_htp_builder *const *builders; /* op -> builder (npu_ops.h) */
  int32_t seed;          /* the backward's seed when a constant (ir/seed.h), else -1: a
                            boundary input, which loss scaling rewrites at run time */
  eg_htp_qnn_graph *qg;
  int32_t *value_tensor; /* IR value -> tensor id in this partition, -1 until known; shared by
                            the partitions, reset through `bound` after each */
  int32_t *bound;        /* the values given a tensor in this partition */
  int32_t n_bound;
  int32_t cap_inputs, cap_outputs; /* of out->inputs / out->outputs */
  const eg_node *node;   /* the node being lowered */
  int32_t n_ops;         /* ops emitted for it so far */
  eg_lowered *out;
};

const eg_graph *eg_htp_ir(const eg_htp_lower *L) { return L->g; }





static const char *axes_name(const eg_value *v) {
  return eg_htp_is_nhwc(v) ? "NHWC" : "traced (NCHW)";
}

eg_status eg_htp_want_axes(eg_htp_lower *L, int32_t value, eg_axis_order axes, const char *what) {
  const eg_value *v = &L->g->values[value];
  if (v->kind != EG_VALUE_TENSOR || v->rank != 4 || eg_htp_is_nhwc(v) == (axes == EG_AXES_NHWC))
    return EG_OK;
  return eg_node_error(L->node, EG_ERR_INVALID, "%s %s is held in %s axis order: this lowering "
                       "needs it %s (pass layout_nhwc sets the order and inserts the conversion)",
                       what, eg_value_label(L->g, value), axes_name(v),
                       axes == EG_AXES_NHWC ? "NHWC" : "in traced (NCHW) order");
}



/* The bytes of `v`'s elements at `es` bytes each (util/checked.h), or an error. */
static eg_status value_bytes(const eg_htp_lower *L, const eg_value *v, size_t es, size_t *out) {
  if (eg_count_bytes(eg_value_numel(v), es, out)) return EG_OK;
  return eg_node_error(L->node, EG_ERR_UNSUPPORTED, "%lld elements of %zu bytes: more bytes "
                       "than this machine can address", (long long)eg_value_numel(v), es);
}



static bool inside(const eg_htp_lower *L, int32_t value) {
  const eg_value *v = &L->g->values[value];
  return v->role == EG_ROLE_NODE && L->parts->nodes[v->def].partition == L->p &&
         L->parts->nodes[v->def].npu;
}

/* Copies an element-size `es` tensor of 4-d shape `in` into `dst` with axes permuted:
 * dst axis k is src axis perm[k]. */
static void permute4(const unsigned char *src, const int64_t in[4], const int perm[4], size_t es,
                     unsigned char *dst) {
  int64_t stride[4] = {in[1] * in[2] * in[3], in[2] * in[3], in[3], 1};
  int64_t out[4] = {in[perm[0]], in[perm[1]], in[perm[2]], in[perm[3]]};
  size_t k = 0;
  for (int64_t a = 0; a < out[0]; a++)
    for (int64_t b = 0; b < out[1]; b++)
      for (int64_t c = 0; c < out[2]; c++)
        for (int64_t d = 0; d < out[3]; d++, k++) {
          int64_t idx[4];
          idx[perm[0]] = a;
          idx[perm[1]] = b;
          idx[perm[2]] = c;
          idx[perm[3]] = d;
          int64_t s = idx[0] * stride[0] + idx[1] * stride[1] + idx[2] * stride[2] + idx[3];
          memcpy(dst + k * es, src + (size_t)s * es, es);
        }
}




/* The QNN encoding of held-quantized `value` with its quantized axis at `axis` of the QNN
 * tensor (NONE for other values). Per-axis arrays are malloc'd into *owned (the caller frees
 * after adding the tensor, which copies them). */
static eg_status quant_encoding(const eg_htp_lower *L, int32_t value, int axis, eg_htp_qnn_quant *out,
                                void **owned) {
  *out = (eg_htp_qnn_quant){0};
  *owned = NULL;
  if (!eg_htp_held_quantized(L->g, value)) return EG_OK;
  const eg_quant *q = L->g->values[value].quant;
  for (int32_t k = 0; k < q->n; k++) /* QNN's offset is -zero_point, an int32 */
    if (-q->zero_point[k] > INT32_MAX)
      return eg_node_error(L->node, EG_ERR_UNSUPPORTED, "value %s: zero point %lld: QNN's "
                           "offset (-zero point) must fit int32", eg_value_label(L->g, value),
                           (long long)q->zero_point[k]);
  if (q->axis < 0) {
    *out = (eg_htp_qnn_quant){.encoding = EG_HTP_QNN_QUANT_SCALE_OFFSET, .scale = (float)q->scale[0],
                          .offset = (int32_t)-q->zero_point[0]};
    return EG_OK;
  }
  float *scales = malloc((size_t)q->n * (sizeof(float) + sizeof(int32_t)) + 1);
  if (!scales) return eg_error(EG_ERR_NOMEM, "lowering: out of memory");
  int32_t *offsets = (int32_t *)(void *)(scales + q->n);
  for (int32_t k = 0; k < q->n; k++) {
    scales[k] = (float)q->scale[k];
    offsets[k] = (int32_t)-q->zero_point[k];
  }
  *out = (eg_htp_qnn_quant){.encoding = EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET, .axis = axis, .n_axis = q->n,
                        .scales = scales, .offsets = offsets};
  *owned = scales;
  return EG_OK;
}

/* Held-quantized static `value` quantized into a new malloc'd buffer (*out) with the CPU
 * quantize kernel, in the traced layout. */
static eg_status quantize_static(const eg_htp_lower *L, int32_t value, const void *data,
                                 void **out) {
  const eg_value *v = &L->g->values[value];
  const eg_quant *q = v->quant;
  const eg_quant_view view = eg_quant_view_of(q, v->shape, v->rank, q->axis);
  size_t nbytes;
  EG_TRY(value_bytes(L, v, eg_dtype_size(q->dtype), &nbytes));
  *out = malloc(nbytes + 1);
  if (!*out) return eg_error(EG_ERR_NOMEM, "lowering: out of memory");
  eg_quantize_f32(&view, data, *out);
  return EG_OK;
}

static eg_status value_dtype(const eg_htp_lower *L, int32_t value, eg_htp_qnn_dtype *dt) {
  const eg_value *v = &L->g->values[value];
  *dt = eg_htp_held_dtype(L->g, value);
  if (*dt == EG_HTP_QNN_DTYPE_COUNT && v->dtype == EG_DTYPE_INT64)
    return eg_node_error(L->node, EG_ERR_UNSUPPORTED, "value %s has dtype int64 and is not "
                         "marked npu_int32: the NPU has no int64 (pass i64_to_i32 narrows the "
                         "int64 values of NPU partitions to int32)", eg_value_label(L->g, value));
  if (*dt == EG_HTP_QNN_DTYPE_COUNT)
    return eg_node_error(L->node, EG_ERR_UNSUPPORTED, "value %s has dtype %s: the NPU graph has "
                         "no such type", eg_value_label(L->g, value), eg_dtype_name(v->dtype));
  return EG_OK;
}

/* The int64 static `value` (marked npu_int32) as int32 in a new malloc'd buffer (*out; the
 * caller frees), each element checked to fit: a constant the NPU cannot hold is an error at
 * compile time, never a silent truncation. */
static eg_status narrow_static(const eg_htp_lower *L, int32_t value, void **out) {
  const eg_value *v = &L->g->values[value];
  const eg_static *st = &L->g->statics[v->def];
  const int64_t n = eg_value_numel(v);
  size_t nbytes;
  EG_TRY(value_bytes(L, v, sizeof(int32_t), &nbytes));
  int32_t *dst = malloc(nbytes + 1);
  if (!dst) return eg_error(EG_ERR_NOMEM, "lowering: out of memory");
  for (int64_t i = 0; i < n; i++) {
    int64_t x;
    memcpy(&x, (const unsigned char *)st->data + (size_t)i * sizeof x, sizeof x);
    if (x < INT32_MIN || x > INT32_MAX) {
      free(dst);
      return eg_node_error(L->node, EG_ERR_UNSUPPORTED, "static %s: element %lld = %lld is "
                           "outside int32 range: int64 values are held as int32 inside NPU "
                           "graphs", st->name, (long long)i, (long long)x);
    }
    dst[i] = (int32_t)x;
  }
  *out = dst;
  return EG_OK;
}

/* A STATIC tensor holding static value `value` with its axes permuted by perm (NULL: as is). */
static eg_status add_static(eg_htp_lower *L, int32_t value, const int perm[4], int64_t key,
                            const char *suffix, int32_t *tensor) {
  const eg_value *v = &L->g->values[value];
  const eg_static *st = &L->g->statics[v->def];
  if (!st->data && st->nbytes) /* a compiled program keeps NPU-only statics in its NPU graphs */
    return eg_node_error(L->node, EG_ERR_UNSUPPORTED, "static %s: its bytes are not in this "
                         "compiled program (only its NPU copies are): compile the model's graph "
                         "file, not a .egp", st->name);
  eg_htp_qnn_dtype dt;
  EG_TRY(value_dtype(L, value, &dt));
  uint32_t dims[EG_MAX_RANK];
  unsigned char *tmp = NULL;
  void *narrow = NULL; /* an npu_int32 static's int32 bytes */
  const void *data = st->data;
  size_t es = eg_dtype_size(v->dtype), nbytes = st->nbytes;
  if (dt == EG_HTP_QNN_DTYPE_INT_32 && v->dtype == EG_DTYPE_INT64) {
    EG_TRY(narrow_static(L, value, &narrow));
    data = narrow;
    es = sizeof(int32_t);
    if (value_bytes(L, v, es, &nbytes) != EG_OK) { /* narrow_static counted the same */
      free(narrow);
      return EG_ERR_UNSUPPORTED;
    }
  }
  if (eg_htp_qnn_dtype_is_fixed_point(dt)) { /* held quantized: its integers (lower.h) */
    EG_TRY(quantize_static(L, value, data, &narrow));
    data = narrow;
    es = eg_dtype_size(v->quant->dtype);
    if (value_bytes(L, v, es, &nbytes) != EG_OK) { /* quantize_static counted the same */
      free(narrow);
      return EG_ERR_UNSUPPORTED;
    }
  }
  if (perm) {
    tmp = malloc(nbytes ? nbytes : 1);
    if (!tmp) {
      free(narrow);
      return eg_error(EG_ERR_NOMEM, "lowering: out of memory");
    }
    permute4(data, v->shape, perm, es, tmp);
    for (int k = 0; k < 4; k++) dims[k] = eg_htp_qnn_dim(v->shape[perm[k]]);
    data = tmp;
  } else {
    for (int d = 0; d < v->rank; d++) dims[d] = eg_htp_qnn_dim(v->shape[d]);
  }
  char name[256];
  snprintf(name, sizeof name, "%s%s", st->name, suffix);
  eg_htp_qnn_tensor_desc d = {.name = name, .type = EG_HTP_QNN_TENSOR_STATIC, .dtype = dt,
                          .rank = v->rank, .dims = dims, .data = data, .nbytes = nbytes,
                          .copy_data = true, .key = key};
  int qaxis = v->quant ? v->quant->axis : -1; /* where perm put the quantized axis */
  for (int k = 0; perm && qaxis >= 0 && k < 4; k++)
    if (perm[k] == v->quant->axis) qaxis = k;
  void *owned = NULL;
  eg_status s = quant_encoding(L, value, qaxis, &d.quant, &owned);
  if (s == EG_OK) s = eg_htp_qnn_graph_add_tensor(L->qg, &d, tensor);
  free(owned);
  free(tmp);
  free(narrow);
  return s;
}

/* Adds runtime tensor `d` of `value` (dims from eg_htp_dims) with its encoding when it is held
 * quantized: the quantized axis goes where eg_htp_dims puts it. */
static eg_status add_held(eg_htp_lower *L, int32_t value, eg_htp_qnn_tensor_desc *d, int32_t *tensor) {
  const eg_value *v = &L->g->values[value];
  void *owned = NULL;
  eg_status s = quant_encoding(L, value, v->quant ? eg_htp_axis(v, v->quant->axis) : -1,
                               &d->quant, &owned);
  if (s == EG_OK) s = eg_htp_qnn_graph_add_tensor(L->qg, d, tensor);
  free(owned);
  return s;
}

static bool needed_outside(const eg_htp_lower *L, int32_t value) {
  return eg_readers_outside(L->readers, value, L->p);
}

/* Value `value` is tensor `tensor` in this partition. */
static void bind_value(eg_htp_lower *L, int32_t value, int32_t tensor) {
  if (L->value_tensor[value] < 0) L->bound[L->n_bound++] = value;
  L->value_tensor[value] = tensor;
}

/* Appends a boundary crossing to an input (`out` false) or output list, grown as needed. */
static eg_status add_boundary(eg_htp_lower *L, bool out, int32_t value, int32_t tensor) {
  eg_boundary **list = out ? &L->out->outputs : &L->out->inputs;
  int32_t *n = out ? &L->out->n_outputs : &L->out->n_inputs;
  int32_t *cap = out ? &L->cap_outputs : &L->cap_inputs;
  if (*n == *cap) {
    int32_t grown = *cap ? 2 * *cap : 8;
    eg_boundary *more = realloc(*list, (size_t)grown * sizeof **list);
    if (!more) return eg_error(EG_ERR_NOMEM, "lowering: out of memory");
    *list = more;
    *cap = grown;
  }
  eg_boundary *b = &(*list)[(*n)++];
  memset(b, 0, sizeof *b); /* padding too: lowered partitions compare bytewise */
  b->value = value;
  b->tensor = tensor;
  eg_htp_boundary_flags(L->g, L->qg, b);
  return EG_OK;
}

eg_status eg_htp_input(eg_htp_lower *L, int32_t value, int32_t *tensor) {
  if (L->value_tensor[value] >= 0) {
    *tensor = L->value_tensor[value];
    return EG_OK;
  }
  const eg_value *v = &L->g->values[value];
  if (v->role == EG_ROLE_STATIC && value != L->seed) {
    static const int nchw_to_nhwc[4] = {0, 2, 3, 1};
    EG_TRY(add_static(L, value, eg_htp_is_nhwc(v) ? nchw_to_nhwc : NULL, eg_htp_qnn_key(value, 0),
                      "", tensor));
  } else if (inside(L, value)) {
    return eg_node_error(L->node, EG_ERR_INVALID, "value %s is used before its node is lowered",
                         eg_value_label(L->g, value));
  } else {
    eg_htp_qnn_dtype dt;
    EG_TRY(value_dtype(L, value, &dt));
    uint32_t dims[EG_MAX_RANK];
    eg_htp_dims(v, dims);
    eg_htp_qnn_tensor_desc d = {.name = eg_value_label(L->g, value), .type = EG_HTP_QNN_TENSOR_APP_WRITE,
                            .dtype = dt, .rank = v->rank, .dims = dims, .key = EG_HTP_QNN_KEY_NONE};
    EG_TRY(add_held(L, value, &d, tensor));
    EG_TRY(add_boundary(L, false, value, *tensor));
  }
  bind_value(L, value, *tensor);
  return EG_OK;
}

eg_status eg_htp_filter(eg_htp_lower *L, int32_t value, eg_htp_filter_layout layout,
                        int32_t *tensor) {
  static const int perms[3][4] = {{2, 3, 1, 0}, {2, 3, 0, 1}, {2, 3, 1, 0}};
  static const char *const suffix[3] = {"_hwio", "_tconv", "_dw"};
  const eg_value *v = &L->g->values[value];
  if (v->role != EG_ROLE_STATIC || v->rank != 4)
    return eg_node_error(L->node, EG_ERR_INVALID, "filter %s is not a static rank-4 weight",
                         eg_value_label(L->g, value));
  return add_static(L, value, perms[layout], eg_htp_qnn_key(value, 1 + (int32_t)layout),
                    suffix[layout], tensor);
}

eg_status eg_htp_define(eg_htp_lower *L, int32_t value, int32_t *tensor) {
  const eg_value *v = &L->g->values[value];
  eg_htp_qnn_dtype dt;
  EG_TRY(value_dtype(L, value, &dt));
  uint32_t dims[EG_MAX_RANK];
  eg_htp_dims(v, dims);
  char name[256];
  if (value == L->node->output) snprintf(name, sizeof name, "%s", L->node->name);
  else snprintf(name, sizeof name, "%s_out%d", L->node->name, value);
  bool app_read = needed_outside(L, value);
  eg_htp_qnn_tensor_desc d = {.name = name,
                          .type = app_read ? EG_HTP_QNN_TENSOR_APP_READ : EG_HTP_QNN_TENSOR_NATIVE,
                          .dtype = dt, .rank = v->rank, .dims = dims, .key = EG_HTP_QNN_KEY_NONE};
  EG_TRY(add_held(L, value, &d, tensor));
  if (app_read) EG_TRY(add_boundary(L, true, value, *tensor));
  bind_value(L, value, *tensor);
  return EG_OK;
}

eg_status eg_htp_temp(eg_htp_lower *L, const char *what, eg_htp_qnn_dtype dtype, int32_t rank,
                      const uint32_t *dims, int32_t *tensor) {
  char name[256];
  snprintf(name, sizeof name, "%s_%s", L->node->name, what);
  eg_htp_qnn_tensor_desc d = {.name = name, .type = EG_HTP_QNN_TENSOR_NATIVE, .dtype = dtype,
                          .rank = rank, .dims = dims, .key = EG_HTP_QNN_KEY_NONE};
  return eg_htp_qnn_graph_add_tensor(L->qg, &d, tensor);
}

/* A STATIC constant "<node>_<what>" of `dtype` (4-byte elements), its bytes copied. */
static eg_status add_const(eg_htp_lower *L, const char *what, eg_htp_qnn_dtype dtype, int32_t rank,
                           const uint32_t *dims, const void *data, int32_t *tensor) {
  char name[256];
  snprintf(name, sizeof name, "%s_%s", L->node->name, what);
  int64_t shape[EG_HTP_QNN_MAX_RANK];
  for (int32_t k = 0; k < rank && k < EG_HTP_QNN_MAX_RANK; k++) shape[k] = dims[k];
  size_t nbytes;
  if (rank < 0 || rank > EG_HTP_QNN_MAX_RANK ||
      !eg_count_bytes(eg_shape_numel(shape, rank, EG_MAX_NUMEL), 4, &nbytes))
    return eg_node_error(L->node, EG_ERR_UNSUPPORTED, "constant %s (rank %d): more than 2^40 "
                         "elements, or a rank above %d", name, (int)rank, EG_HTP_QNN_MAX_RANK);
  eg_htp_qnn_tensor_desc d = {.name = name, .type = EG_HTP_QNN_TENSOR_STATIC, .dtype = dtype,
                          .rank = rank, .dims = dims, .data = data, .nbytes = nbytes,
                          .copy_data = true, .key = EG_HTP_QNN_KEY_NONE};
  return eg_htp_qnn_graph_add_tensor(L->qg, &d, tensor);
}

eg_status eg_htp_const_f32(eg_htp_lower *L, const char *what, int32_t rank, const uint32_t *dims,
                           const float *data, int32_t *tensor) {
  return add_const(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, rank, dims, data, tensor);
}

eg_status eg_htp_const_i32(eg_htp_lower *L, const char *what, int32_t rank, const uint32_t *dims,
                           const int32_t *data, int32_t *tensor) {
  return add_const(L, what, EG_HTP_QNN_DTYPE_INT_32, rank, dims, data, tensor);
}

eg_status eg_htp_transcendental_input(eg_htp_lower *L, int32_t in, const char *what,
                                      int32_t *out) {
  const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(L->qg, in);
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  for (int32_t d = 0; d < t->rank; d++) dims[d] = t->dims[d];
  EG_TRY(eg_htp_temp(L, what, t->dtype, t->rank, dims, out));
  const eg_htp_qnn_param p[2] = {eg_htp_qnn_param_f32("min_value", -65504.0f),
                             eg_htp_qnn_param_f32("max_value", 65504.0f)};
  return eg_htp_op(L, EG_HTP_QNN_OP_RELU_MIN_MAX, &in, 1, out, 1, p, 2);
}

bool eg_htp_is_needed_outside(const eg_htp_lower *L, int32_t value) {
  return needed_outside(L, value);
}

/* Value `value` is a graph output or an argument of a node after `from` (its readers come
 * after its definition: the graph is in topological order). */
static bool value_read(const eg_graph *g, int32_t value, int32_t from) {
  for (int32_t o = 0; o < g->n_outputs; o++)
    if (g->outputs[o].value == value) return true;
  for (int32_t k = from + 1; k < g->n_nodes; k++)
    if (eg_node_reads(&g->nodes[k], value)) return true;
  return false;
}

bool eg_htp_elem_used(const eg_graph *g, const eg_node *n, int i) {
  const eg_value *tuple = &g->values[n->output];
  const int32_t elem = tuple->elems[i], at = (int32_t)(n - g->nodes);
  if (elem < 0) return false;
  for (int32_t o = 0; o < g->n_outputs; o++)
    if (g->outputs[o].value == elem) return true;
  for (int32_t k = at + 1; k < g->n_nodes; k++) {
    const eg_node *m = &g->nodes[k];
    if (m->op == EG_OP_getitem) {
      const eg_arg *t = eg_node_arg(m, 0, NULL), *idx = eg_node_arg(m, 1, NULL);
      if (t && t->kind == EG_ARG_VALUE && t->value == n->output && idx && idx->i == i &&
          m->output >= 0 && value_read(g, m->output, k))
        return true;
      continue;
    }
    if (eg_node_reads(m, elem)) return true;
  }
  return false;
}

eg_status eg_htp_alias(eg_htp_lower *L, int32_t value, int32_t tensor) {
  const eg_value *v = &L->g->values[value];
  const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(L->qg, tensor);
  eg_htp_qnn_dtype dt;
  EG_TRY(value_dtype(L, value, &dt));
  uint32_t dims[EG_MAX_RANK];
  eg_htp_dims(v, dims);
  if (!eg_htp_may_alias(L->node->op))
    return eg_node_error(L->node, EG_ERR_INVALID, "value %s: aliasing an argument's tensor is "
                         "declared for views, copies and transposes only (eg_htp_may_alias), "
                         "which the runtime's memory plan relies on", eg_value_label(L->g, value));
  bool same = t && t->dtype == dt && t->rank == v->rank;
  for (int d = 0; same && d < v->rank; d++) same = t->dims[d] == dims[d];
  if (!same || needed_outside(L, value) || L->value_tensor[value] >= 0)
    return eg_node_error(L->node, EG_ERR_INVALID, "value %s cannot alias tensor %s: an alias "
                         "needs the value's dtype and dims, a value defined once, and no use "
                         "outside the partition", eg_value_label(L->g, value),
                         t ? t->name : "(none)");
  bind_value(L, value, tensor);
  return EG_OK;
}

/* Whether two QNN tensors are both float (32 or 16) of one dtype and unquantized. */
static bool float_pair(const eg_htp_qnn_tensor *a, const eg_htp_qnn_tensor *b) {
  return a && b && b->dtype == a->dtype &&
         (a->dtype == EG_HTP_QNN_DTYPE_FLOAT_32 || a->dtype == EG_HTP_QNN_DTYPE_FLOAT_16) &&
         a->quant.encoding == EG_HTP_QNN_QUANT_NONE && b->quant.encoding == EG_HTP_QNN_QUANT_NONE;
}

/* Whether a binary op's second operand is a per-sample, per-channel gate of its first: rank 4,
 * inputs [N, H, W, C] and [N, 1, 1, C] with N > 1, C > 1 and H * W > 1 (a squeeze-excitation
 * gate, a per-sample scale). QNN HTP's fast graph preparation (QNN 2.51,
 * htp_graph_finalization_optimization_mode 1; its default effort is right) computes
 * ElementWiseMultiply and ElementWiseDivide of that pair with sample 0's gate for every sample:
 * measured on its emulator at N = 2 and 3, C = 16 to 960, H x W = 1 x 4 to 64 x 64, relative
 * error 0.34 to 0.98; the same ops with the gate first, on rank-3 views, or with a [1, 1, 1, C]
 * or [N, 1, 1, 1] operand are right in both preparations, and so are ElementWiseAdd, Subtract,
 * Maximum, Minimum and Power with the gate second. eg_htp_op emits those forms instead for
 * float operands (tests/htp/test_qnn_ref.py keeps the measurement). */
static bool per_sample_gate(const eg_htp_qnn_graph *qg, const int32_t *inputs) {
  const eg_htp_qnn_tensor *a = eg_htp_qnn_graph_tensor(qg, inputs[0]);
  const eg_htp_qnn_tensor *b = eg_htp_qnn_graph_tensor(qg, inputs[1]);
  return float_pair(a, b) && a->rank == 4 && b->rank == 4 && a->dims[0] > 1 &&
         b->dims[0] == a->dims[0] && b->dims[1] == 1 && b->dims[2] == 1 && a->dims[3] > 1 && b->dims[3] == a->dims[3] &&
         (uint64_t)a->dims[1] * a->dims[2] > 1;
}

static eg_status add_op(eg_htp_lower *L, eg_htp_qnn_op type, const int32_t *inputs,
                        int32_t n_inputs, const int32_t *outputs, int32_t n_outputs,
                        const eg_htp_qnn_param *params, int32_t n_params);

/* Binary op `type` of inputs[0] and inputs[1] on views of rank `rank` (dims d0, d1; result
 * dims dy) between Reshapes, written into `out` (its own dims). */
static eg_status binary_on_views(eg_htp_lower *L, eg_htp_qnn_op type, const int32_t *inputs,
                                 int32_t out, int32_t rank, const uint32_t *d0,
                                 const uint32_t *d1, const uint32_t *dy) {
  const eg_htp_qnn_dtype dt = eg_htp_qnn_graph_tensor(L->qg, inputs[0])->dtype;
  const uint32_t *dims[2] = {d0, d1};
  char what[64];
  int32_t v[2], q;
  for (int i = 0; i < 2; i++) {
    snprintf(what, sizeof what, "op%d_view", L->n_ops);
    EG_TRY(eg_htp_temp(L, what, dt, rank, dims[i], &v[i]));
    EG_TRY(add_op(L, EG_HTP_QNN_OP_RESHAPE, &inputs[i], 1, &v[i], 1, NULL, 0));
  }
  snprintf(what, sizeof what, "op%d_result", L->n_ops);
  EG_TRY(eg_htp_temp(L, what, dt, rank, dy, &q));
  EG_TRY(add_op(L, type, v, 2, &q, 1, NULL, 0));
  return add_op(L, EG_HTP_QNN_OP_RESHAPE, &q, 1, &out, 1, NULL, 0);
}

/* Whether a binary op's operands are both [N, 1, 1, C] or both [N, C, 1, 1] (N > 1, C > 1; a
 * pooled activation and a function of it, as a squeeze-excitation block's SiLU x * sigmoid(x)
 * and its backward are, in either layout): QNN HTP's fast preparation (QNN 2.51) computes
 * ElementWiseMultiply and ElementWiseDivide of such a pair with every sample but the first
 * wrong when one operand comes from the other through a ReluMinMax or Relu
 * (eg_htp_transcendental_input's clamp before a Sigmoid is one): measured on its emulator at
 * N = 2 and 4, C = 12 to 96 (relative error 0.5 to 1.4; right at C = 8 and 1000, and at its
 * default effort); so was EfficientNet-B0's silu_backward on [2, 48, 1, 1] after a Reshape
 * (1.4), while the same ops on rank-2 views [N, C] are right in both preparations. eg_htp_op
 * emits those views for float operands. */
static bool pooled_pair(const eg_htp_qnn_graph *qg, const int32_t *inputs) {
  const eg_htp_qnn_tensor *a = eg_htp_qnn_graph_tensor(qg, inputs[0]);
  const eg_htp_qnn_tensor *b = eg_htp_qnn_graph_tensor(qg, inputs[1]);
  if (!float_pair(a, b) || a->rank != 4 || b->rank != 4) return false;
  int wide = 0; /* dims 1..3 above 1: one, as [N, 1, 1, C] or, held traced, [N, C, 1, 1] */
  for (int d = 0; d < 4; d++) {
    if (a->dims[d] != b->dims[d]) return false;
    wide += d > 0 && a->dims[d] > 1;
  }
  return a->dims[0] > 1 && wide == 1;
}

eg_status eg_htp_op(eg_htp_lower *L, eg_htp_qnn_op type, const int32_t *inputs, int32_t n_inputs,
                    const int32_t *outputs, int32_t n_outputs, const eg_htp_qnn_param *params,
                    int32_t n_params) {
  const bool mul = type == EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY && n_params == 0,
             div = type == EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE && n_params == 0;
  if ((mul || div) && n_inputs == 2 && n_outputs == 1) {
    const eg_htp_qnn_tensor *a = eg_htp_qnn_graph_tensor(L->qg, inputs[0]);
    if (per_sample_gate(L->qg, inputs)) {
      if (mul) { /* x * gate == gate * x, bit for bit */
        const int32_t swapped[2] = {inputs[1], inputs[0]};
        return add_op(L, type, swapped, 2, outputs, 1, NULL, 0);
      }
      const uint32_t n = a->dims[0], c = a->dims[3], rows[3] = {n, a->dims[1] * a->dims[2], c},
                     gate[3] = {n, 1, c};
      return binary_on_views(L, type, inputs, outputs[0], 3, rows, gate, rows);
    }
    if (pooled_pair(L->qg, inputs)) {
      const uint32_t rows[2] = {a->dims[0], a->dims[1] * a->dims[2] * a->dims[3]};
      return binary_on_views(L, type, inputs, outputs[0], 2, rows, rows, rows);
    }
  }
  return add_op(L, type, inputs, n_inputs, outputs, n_outputs, params, n_params);
}

static eg_status add_op(eg_htp_lower *L, eg_htp_qnn_op type, const int32_t *inputs,
                        int32_t n_inputs, const int32_t *outputs, int32_t n_outputs,
                        const eg_htp_qnn_param *params, int32_t n_params) {
  char name[256];
  /* "<node>_op<k>", not "<node>_<k>": node view's second op would take node view_1's name */
  if (L->n_ops == 0) snprintf(name, sizeof name, "%s", L->node->name);
  else snprintf(name, sizeof name, "%s_op%d", L->node->name, L->n_ops);
  eg_htp_qnn_op_desc d = {.name = name, .type = type, .n_inputs = n_inputs, .inputs = inputs,
                      .n_outputs = n_outputs, .outputs = outputs, .n_params = n_params,
                      .params = params};
  EG_TRY(eg_htp_qnn_graph_add_op(L->qg, &d, NULL));
  L->n_ops++;
  return EG_OK;
}

/* getitem: its output is the element's tensor; if it is needed outside while the element
 * tensor is NATIVE, the producer's builder made it APP_READ already (needed_outside marks
 * elements whose getitem is needed outside). */
static eg_status lower_getitem(eg_htp_lower *L, const eg_node *n) {
  if (n->output < 0) return EG_OK;
  int32_t tuple = eg_node_arg(n, 0, NULL)->value;
  int32_t elem = L->g->values[tuple].elems[eg_node_arg(n, 1, NULL)->i];
  int32_t t = L->value_tensor[elem];
  /* an element its builder left undefined because nothing reads it (eg_htp_elem_used): the
   * getitem names nothing; a node of this partition reading it fails in eg_htp_input */
  if (t < 0 && !needed_outside(L, n->output)) return EG_OK;
  if (t < 0)
    return eg_node_error(n, EG_ERR_INVALID, "element %d of %s has no NPU tensor", elem,
                         eg_value_label(L->g, tuple));
  if (eg_htp_is_nhwc(&L->g->values[elem]) != eg_htp_is_nhwc(&L->g->values[n->output]))
    return eg_node_error(n, EG_ERR_INVALID, "names element %d of %s, held in %s axis order, but "
                         "is held in %s: a getitem has its element's order (pass layout_nhwc)",
                         elem, eg_value_label(L->g, tuple), axes_name(&L->g->values[elem]),
                         axes_name(&L->g->values[n->output]));
  bind_value(L, n->output, t);
  return needed_outside(L, n->output) ? add_boundary(L, true, n->output, t) : EG_OK;
}

static eg_status lower_nodes(eg_htp_lower *L) {
  const eg_partition *part = &L->parts->partitions[L->p];
  for (int32_t k = 0; k < part->n_nodes; k++) {
    const eg_node *n = &L->g->nodes[part->nodes[k]];
    L->node = n;
    L->n_ops = 0;
    if (n->op == EG_OP_getitem) {
      EG_TRY(lower_getitem(L, n));
      continue;
    }
    const eg_htp_builder *b = L->builders[n->op];
    if (!b || !b->lower)
      return eg_node_error(n, EG_ERR_INVALID, "placed on the NPU but %s has no lowering",
                           eg_op_target(n->op));
    char reason[256]; /* the partitioner's gate d, again: a dim is never truncated */
    if (!eg_htp_dims_fit(L->g, n, reason, sizeof reason))
      return eg_error_prefix(eg_node_error(n, EG_ERR_UNSUPPORTED, "placed on the NPU but %s: "
                                           "such nodes run on the CPU", reason),
                             "lowering partition %d", L->p);
    eg_status s = b->lower(L, L->g, n);
    if (s != EG_OK) return eg_error_prefix(s, "lowering partition %d", L->p);
  }
  return EG_OK;
}


/* Partition L->p into *out, with L's shared scratch; the scratch is reset for the next. */
static eg_status lower_one(eg_htp_lower *L, eg_lowered *out) {
  memset(out, 0, sizeof *out);
  char name[64];
  snprintf(name, sizeof name, "partition_%d", L->p);
  L->out = out;
  out->backend = &eg_htp_rt;
  L->cap_inputs = L->cap_outputs = 0;
  eg_status s = eg_htp_qnn_graph_create(name, &L->qg);
  out->graph = L->qg;
  if (s == EG_OK) s = lower_nodes(L);
  if (s == EG_OK) /* how the executor runs it: the graph carries it */
    s = eg_htp_layout_pass(L->qg, eg_htp_qnn_graph_plan_mut(L->qg));
  for (int32_t k = 0; k < L->n_bound; k++) L->value_tensor[L->bound[k]] = -1;
  L->n_bound = 0;
  if (s != EG_OK) eg_lowered_free(out);
  return s;
}

/* Lowers partitions [first, last) into out[first ..]. */
static eg_status lower_range(const eg_graph *g, const eg_partitioning *parts, int32_t first,
                             int32_t last, const eg_htp_builder *const *builders,
                             eg_lowered *out) {
  eg_readers readers = {0};
  eg_htp_lower L = {.g = g, .parts = parts, .readers = &readers, .builders = builders,
                    .seed = eg_graph_seed_constant(g)};
  size_t nv = (size_t)g->n_values + 1;
  L.value_tensor = malloc(nv * sizeof(int32_t));
  L.bound = malloc(nv * sizeof(int32_t));
  eg_status s = L.value_tensor && L.bound ? eg_readers_compute(g, parts, &readers)
                                          : eg_error(EG_ERR_NOMEM, "lowering: out of memory");
  for (size_t v = 0; L.value_tensor && v < nv; v++) L.value_tensor[v] = -1;
  int32_t done = first;
  for (; s == EG_OK && done < last; done++) {
    L.p = done;
    s = lower_one(&L, &out[done - first]);
  }
  for (int32_t k = first; s != EG_OK && k < done; k++) eg_lowered_free(&out[k - first]);
  free(L.value_tensor);
  free(L.bound);
  eg_readers_free(&readers);
  return s;
}

eg_status eg_htp_lower_partitions(const eg_graph *g, const eg_partitioning *parts,
                                  const eg_htp_builder *const *builders, eg_lowered *out) {
  return lower_range(g, parts, 0, parts->n_partitions, builders, out);
}

eg_status eg_htp_lower_partition(const eg_graph *g, const eg_partitioning *parts, int32_t p,
                                 const eg_htp_builder *const *builders, eg_lowered *out) {
  memset(out, 0, sizeof *out);
  return lower_range(g, parts, p, p + 1, builders, out);
}
