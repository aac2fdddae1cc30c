/* lower.c — partition -> htp backend graph (see lower.h for the layout rule and the tensor
 * kinds). Walks the partition's nodes in order; getitem is handled here (its output is the
 * element's tensor), every other node by its builder's lower(). */
#include "backends/htp/lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

struct eg_htp_lower {
  const eg_graph *g;
  const eg_partitioning *parts;
  int32_t p;
  const bool *needed_outside;
  eg_qnn_graph *qg;
  int32_t *value_tensor; /* IR value -> tensor id, -1 until known */
  const eg_node *node;   /* the node being lowered */
  int32_t n_ops;         /* ops emitted for it so far */
  eg_htp_partition *out;
};

const eg_graph *eg_htp_ir(const eg_htp_lower *L) { return L->g; }

int eg_htp_axis(int32_t rank, int dim) {
  static const int nchw_to_nhwc[4] = {0, 3, 1, 2};
  return rank == 4 && dim >= 0 && dim < 4 ? nchw_to_nhwc[dim] : dim;
}

void eg_htp_dims(const eg_value *v, uint32_t *dims) {
  for (int d = 0; d < v->rank; d++) dims[eg_htp_axis(v->rank, d)] = (uint32_t)v->shape[d];
}

eg_qnn_dtype eg_htp_dtype(eg_dtype dtype) {
  switch (dtype) {
  case EG_DTYPE_FLOAT32: return EG_QNN_DTYPE_FLOAT_32;
  case EG_DTYPE_INT32: return EG_QNN_DTYPE_INT_32;
  case EG_DTYPE_BOOL: return EG_QNN_DTYPE_BOOL_8;
  case EG_DTYPE_INT8: return EG_QNN_DTYPE_INT_8;
  case EG_DTYPE_UINT8: return EG_QNN_DTYPE_UINT_8;
  default: return EG_QNN_DTYPE_COUNT;
  }
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

static eg_status value_dtype(const eg_htp_lower *L, int32_t value, eg_qnn_dtype *dt) {
  const eg_value *v = &L->g->values[value];
  *dt = eg_htp_dtype(v->dtype);
  if (*dt == EG_QNN_DTYPE_COUNT)
    return eg_node_error(L->node, EG_ERR_UNSUPPORTED, "value %s has dtype %s: the NPU graph has "
                         "no such type", eg_value_label(L->g, value), eg_dtype_name(v->dtype));
  return EG_OK;
}

/* A STATIC tensor holding static value `value` with its axes permuted by perm (NULL: as is). */
static eg_status add_static(eg_htp_lower *L, int32_t value, const int perm[4], int64_t key,
                            const char *suffix, int32_t *tensor) {
  const eg_value *v = &L->g->values[value];
  const eg_static *st = &L->g->statics[v->def];
  eg_qnn_dtype dt;
  EG_TRY(value_dtype(L, value, &dt));
  uint32_t dims[EG_MAX_RANK];
  unsigned char *tmp = NULL;
  const void *data = st->data;
  if (perm) {
    tmp = malloc(st->nbytes ? st->nbytes : 1);
    if (!tmp) return eg_error(EG_ERR_NOMEM, "lowering: out of memory");
    permute4(st->data, v->shape, perm, eg_dtype_size(v->dtype), tmp);
    for (int k = 0; k < 4; k++) dims[k] = (uint32_t)v->shape[perm[k]];
    data = tmp;
  } else {
    for (int d = 0; d < v->rank; d++) dims[d] = (uint32_t)v->shape[d];
  }
  char name[256];
  snprintf(name, sizeof name, "%s%s", st->name, suffix);
  eg_qnn_tensor_desc d = {.name = name, .type = EG_QNN_TENSOR_STATIC, .dtype = dt,
                          .rank = v->rank, .dims = dims, .data = data, .nbytes = st->nbytes,
                          .copy_data = true, .key = key};
  eg_status s = eg_qnn_graph_add_tensor(L->qg, &d, tensor);
  free(tmp);
  return s;
}

static eg_status add_boundary(eg_htp_boundary *list, int32_t *n, int32_t value, int32_t tensor,
                              bool nhwc) {
  list[(*n)++] = (eg_htp_boundary){value, tensor, nhwc};
  return EG_OK;
}

eg_status eg_htp_input(eg_htp_lower *L, int32_t value, int32_t *tensor) {
  if (L->value_tensor[value] >= 0) {
    *tensor = L->value_tensor[value];
    return EG_OK;
  }
  const eg_value *v = &L->g->values[value];
  if (v->role == EG_ROLE_STATIC) {
    static const int nchw_to_nhwc[4] = {0, 2, 3, 1};
    EG_TRY(add_static(L, value, v->rank == 4 ? nchw_to_nhwc : NULL, eg_qnn_key(value, 0), "",
                      tensor));
  } else if (inside(L, value)) {
    return eg_node_error(L->node, EG_ERR_INVALID, "value %s is used before its node is lowered",
                         eg_value_label(L->g, value));
  } else {
    eg_qnn_dtype dt;
    EG_TRY(value_dtype(L, value, &dt));
    uint32_t dims[EG_MAX_RANK];
    eg_htp_dims(v, dims);
    eg_qnn_tensor_desc d = {.name = eg_value_label(L->g, value), .type = EG_QNN_TENSOR_APP_WRITE,
                            .dtype = dt, .rank = v->rank, .dims = dims, .key = EG_QNN_KEY_NONE};
    EG_TRY(eg_qnn_graph_add_tensor(L->qg, &d, tensor));
    add_boundary(L->out->inputs, &L->out->n_inputs, value, *tensor, v->rank == 4);
  }
  L->value_tensor[value] = *tensor;
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
  return add_static(L, value, perms[layout], eg_qnn_key(value, 1 + (int32_t)layout),
                    suffix[layout], tensor);
}

eg_status eg_htp_define(eg_htp_lower *L, int32_t value, int32_t *tensor) {
  const eg_value *v = &L->g->values[value];
  eg_qnn_dtype dt;
  EG_TRY(value_dtype(L, value, &dt));
  uint32_t dims[EG_MAX_RANK];
  eg_htp_dims(v, dims);
  char name[256];
  if (value == L->node->output) snprintf(name, sizeof name, "%s", L->node->name);
  else snprintf(name, sizeof name, "%s_out%d", L->node->name, value);
  bool app_read = L->needed_outside[value];
  eg_qnn_tensor_desc d = {.name = name,
                          .type = app_read ? EG_QNN_TENSOR_APP_READ : EG_QNN_TENSOR_NATIVE,
                          .dtype = dt, .rank = v->rank, .dims = dims, .key = EG_QNN_KEY_NONE};
  EG_TRY(eg_qnn_graph_add_tensor(L->qg, &d, tensor));
  if (app_read) add_boundary(L->out->outputs, &L->out->n_outputs, value, *tensor, v->rank == 4);
  L->value_tensor[value] = *tensor;
  return EG_OK;
}

eg_status eg_htp_temp(eg_htp_lower *L, const char *what, eg_qnn_dtype dtype, int32_t rank,
                      const uint32_t *dims, int32_t *tensor) {
  char name[256];
  snprintf(name, sizeof name, "%s_%s", L->node->name, what);
  eg_qnn_tensor_desc d = {.name = name, .type = EG_QNN_TENSOR_NATIVE, .dtype = dtype,
                          .rank = rank, .dims = dims, .key = EG_QNN_KEY_NONE};
  return eg_qnn_graph_add_tensor(L->qg, &d, tensor);
}

eg_status eg_htp_const_f32(eg_htp_lower *L, const char *what, int32_t rank, const uint32_t *dims,
                           const float *data, int32_t *tensor) {
  char name[256];
  snprintf(name, sizeof name, "%s_%s", L->node->name, what);
  size_t n = 1;
  for (int32_t d = 0; d < rank; d++) n *= dims[d];
  eg_qnn_tensor_desc d = {.name = name, .type = EG_QNN_TENSOR_STATIC,
                          .dtype = EG_QNN_DTYPE_FLOAT_32, .rank = rank, .dims = dims,
                          .data = data, .nbytes = n * sizeof(float), .copy_data = true,
                          .key = EG_QNN_KEY_NONE};
  return eg_qnn_graph_add_tensor(L->qg, &d, tensor);
}

bool eg_htp_is_needed_outside(const eg_htp_lower *L, int32_t value) {
  return L->needed_outside[value];
}

static bool arg_reads(const eg_arg *a, int32_t value) {
  if (a->kind == EG_ARG_VALUE) return a->value == value;
  if (a->kind != EG_ARG_LIST) return false;
  for (int32_t e = 0; e < a->list.n; e++)
    if (arg_reads(&a->list.items[e], value)) return true;
  return false;
}

/* Value `value` is a graph output or an argument of some node. */
static bool value_read(const eg_graph *g, int32_t value) {
  for (int32_t o = 0; o < g->n_outputs; o++)
    if (g->outputs[o].value == value) return true;
  for (int32_t k = 0; k < g->n_nodes; k++) {
    const eg_node *m = &g->nodes[k];
    for (int32_t a = 0; a < m->n_args + m->n_kwargs; a++)
      if (arg_reads(a < m->n_args ? &m->args[a] : &m->kwargs[a - m->n_args], value)) return true;
  }
  return false;
}

bool eg_htp_elem_used(const eg_graph *g, const eg_node *n, int i) {
  const eg_value *tuple = &g->values[n->output];
  const int32_t elem = tuple->elems[i];
  if (elem < 0) return false;
  for (int32_t o = 0; o < g->n_outputs; o++)
    if (g->outputs[o].value == elem) return true;
  for (int32_t k = 0; k < g->n_nodes; k++) {
    const eg_node *m = &g->nodes[k];
    if (m->op == EG_OP_getitem) {
      const eg_arg *t = eg_node_arg(m, 0, NULL), *idx = eg_node_arg(m, 1, NULL);
      if (t && t->kind == EG_ARG_VALUE && t->value == n->output && idx && idx->i == i &&
          m->output >= 0 && value_read(g, m->output))
        return true;
      continue;
    }
    for (int32_t a = 0; a < m->n_args + m->n_kwargs; a++)
      if (arg_reads(a < m->n_args ? &m->args[a] : &m->kwargs[a - m->n_args], elem)) return true;
  }
  return false;
}

eg_status eg_htp_alias(eg_htp_lower *L, int32_t value, int32_t tensor) {
  const eg_value *v = &L->g->values[value];
  const eg_qnn_tensor *t = eg_qnn_graph_tensor(L->qg, tensor);
  eg_qnn_dtype dt;
  EG_TRY(value_dtype(L, value, &dt));
  uint32_t dims[EG_MAX_RANK];
  eg_htp_dims(v, dims);
  bool same = t && t->dtype == dt && t->rank == v->rank;
  for (int d = 0; same && d < v->rank; d++) same = t->dims[d] == dims[d];
  if (!same || L->needed_outside[value] || L->value_tensor[value] >= 0)
    return eg_node_error(L->node, EG_ERR_INVALID, "value %s cannot alias tensor %s: an alias "
                         "needs the value's dtype and dims, a value defined once, and no use "
                         "outside the partition", eg_value_label(L->g, value),
                         t ? t->name : "(none)");
  L->value_tensor[value] = tensor;
  return EG_OK;
}

eg_status eg_htp_op(eg_htp_lower *L, eg_qnn_op type, const int32_t *inputs, int32_t n_inputs,
                    const int32_t *outputs, int32_t n_outputs, const eg_qnn_param *params,
                    int32_t n_params) {
  char name[256];
  /* "<node>_op<k>", not "<node>_<k>": node view's second op would take node view_1's name */
  if (L->n_ops == 0) snprintf(name, sizeof name, "%s", L->node->name);
  else snprintf(name, sizeof name, "%s_op%d", L->node->name, L->n_ops);
  eg_qnn_op_desc d = {.name = name, .type = type, .n_inputs = n_inputs, .inputs = inputs,
                      .n_outputs = n_outputs, .outputs = outputs, .n_params = n_params,
                      .params = params};
  EG_TRY(eg_qnn_graph_add_op(L->qg, &d, NULL));
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
  if (t < 0 && !L->needed_outside[n->output]) return EG_OK;
  if (t < 0)
    return eg_node_error(n, EG_ERR_INVALID, "element %d of %s has no NPU tensor", elem,
                         eg_value_label(L->g, tuple));
  L->value_tensor[n->output] = t;
  if (L->needed_outside[n->output])
    add_boundary(L->out->outputs, &L->out->n_outputs, n->output, t,
                 L->g->values[n->output].rank == 4);
  return EG_OK;
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
    const eg_npu_builder *b = eg_npu_builders[n->op];
    if (!b || !b->lower)
      return eg_node_error(n, EG_ERR_INVALID, "placed on the NPU but %s has no lowering",
                           eg_op_target(n->op));
    eg_status s = b->lower(L, L->g, n);
    if (s != EG_OK) return eg_error_prefix(s, "lowering partition %d", L->p);
  }
  return EG_OK;
}

bool *eg_htp_needed_outside(const eg_graph *g, const eg_partitioning *parts, int32_t p) {
  bool *need = calloc((size_t)g->n_values + 1, sizeof(bool));
  if (!need) return NULL;
  for (int32_t o = 0; o < g->n_outputs; o++) need[g->outputs[o].value] = true;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    if (parts->nodes[i].npu && parts->nodes[i].partition == p) continue;
    const eg_node *n = &g->nodes[i];
    for (int32_t a = 0; a < n->n_args + n->n_kwargs; a++) {
      const eg_arg *arg = a < n->n_args ? &n->args[a] : &n->kwargs[a - n->n_args];
      for (int32_t e = 0; e < (arg->kind == EG_ARG_LIST ? arg->list.n : 1); e++) {
        const eg_arg *x = arg->kind == EG_ARG_LIST ? &arg->list.items[e] : arg;
        if (x->kind == EG_ARG_VALUE) need[x->value] = true;
      }
    }
  }
  /* an element whose getitem is needed outside must be readable too */
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_getitem || n->output < 0 || !need[n->output]) continue;
    const eg_value *t = &g->values[eg_node_arg(n, 0, NULL)->value];
    need[t->elems[eg_node_arg(n, 1, NULL)->i]] = true;
  }
  return need;
}

eg_status eg_htp_lower_partition(const eg_graph *g, const eg_partitioning *parts, int32_t p,
                                 const bool *needed_outside, eg_htp_partition *out) {
  memset(out, 0, sizeof *out);
  char name[64];
  snprintf(name, sizeof name, "partition_%d", p);
  eg_htp_lower L = {.g = g, .parts = parts, .p = p, .needed_outside = needed_outside, .out = out};
  size_t nv = (size_t)g->n_values + 1;
  L.value_tensor = malloc(nv * sizeof(int32_t));
  out->inputs = calloc(nv, sizeof(eg_htp_boundary));
  out->outputs = calloc(2 * nv, sizeof(eg_htp_boundary));
  eg_status s = L.value_tensor && out->inputs && out->outputs
                    ? eg_qnn_graph_create(name, &out->graph)
                    : eg_error(EG_ERR_NOMEM, "lowering: out of memory");
  for (size_t v = 0; L.value_tensor && v < nv; v++) L.value_tensor[v] = -1;
  L.qg = out->graph;
  if (s == EG_OK) s = lower_nodes(&L);
  free(L.value_tensor);
  if (s != EG_OK) eg_htp_partition_free(out);
  return s;
}

void eg_htp_partition_free(eg_htp_partition *hp) {
  eg_qnn_graph_destroy(hp->graph);
  free(hp->inputs);
  free(hp->outputs);
  memset(hp, 0, sizeof *hp);
}
