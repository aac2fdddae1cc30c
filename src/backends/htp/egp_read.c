/* egp_read.c — reading the htp backend's record of a lowered partition from a .egp (what
 * egp_write.c puts; format: program/egp_format.h, NPU section, backend "htp"). Each QNN graph
 * is rebuilt through eg_htp_qnn_graph_add_tensor / eg_htp_qnn_graph_add_op, so every rule those
 * enforce is re-checked, then its boundary against the graph and the placement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/htp/exec_plan.h"
#include "backends/htp/runtime.h"
#include "backends/htp/values.h"
#include "util/checked.h"

/* Limits of an op record (QNN ops have at most 5 inputs, 2 outputs and 9 params today). */
enum { MAX_OP_INPUTS = 64, MAX_OP_OUTPUTS = 8, MAX_OP_PARAMS = 16 };


static eg_status qnn_error(eg_egp_source *c, int32_t k, eg_status s) {
  return eg_source_prefix(c, s, "partition %d", k);
}

static eg_status read_quant(eg_egp_source *c, const char *w, uint8_t enc, eg_htp_qnn_quant *q, float **scales,
                            int32_t **offsets) {
  q->encoding = (eg_htp_qnn_quant_encoding)enc;
  if (enc == EG_HTP_QNN_QUANT_SCALE_OFFSET) {
    EG_TRY(eg_source_f32(c, w, &q->scale));
    return eg_source_i32(c, w, &q->offset);
  }
  if (enc != EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET) return EG_OK;
  EG_TRY(eg_source_i32(c, w, &q->axis));
  EG_TRY(eg_source_count(c, w, 8, INT32_MAX - 1, &q->n_axis));
  *scales = malloc(((size_t)q->n_axis + 1) * sizeof(float));
  *offsets = malloc(((size_t)q->n_axis + 1) * sizeof(int32_t));
  if (!*scales || !*offsets) return eg_source_error(c, EG_ERR_NOMEM, "%s: out of memory", w);
  for (int32_t i = 0; i < q->n_axis; i++) EG_TRY(eg_source_f32(c, w, &(*scales)[i]));
  for (int32_t i = 0; i < q->n_axis; i++) EG_TRY(eg_source_i32(c, w, &(*offsets)[i]));
  q->scales = *scales;
  q->offsets = *offsets;
  return EG_OK;
}

static eg_status read_tensor(eg_egp_source *c, int32_t k, int32_t i, eg_htp_qnn_graph *qg) {
  char w[96];
  snprintf(w, sizeof w, "partition %d: tensors[%d]", k, i);
  uint8_t type, dtype, rank, enc;
  uint32_t dims[EG_HTP_QNN_MAX_RANK] = {0};
  eg_htp_qnn_tensor_desc d = {.copy_data = false};
  EG_TRY(eg_source_str(c, w, false, &d.name));
  EG_TRY(eg_source_u8(c, w, &type));
  EG_TRY(eg_source_u8(c, w, &dtype));
  EG_TRY(eg_source_u8(c, w, &rank));
  EG_TRY(eg_source_u8(c, w, &enc));
  if (type > EG_HTP_QNN_TENSOR_STATIC || dtype >= EG_HTP_QNN_DTYPE_COUNT || rank > EG_HTP_QNN_MAX_RANK ||
      enc > EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET)
    return eg_source_error(c, EG_ERR_FORMAT, "%s (%s): type %u, dtype %u, rank %u, quant %u: must be < 4, "
               "< %d, <= %d, < 3", w, d.name, type, dtype, rank, enc, EG_HTP_QNN_DTYPE_COUNT,
               EG_HTP_QNN_MAX_RANK);
  for (int j = 0; j < rank; j++) EG_TRY(eg_source_u32(c, w, &dims[j]));
  EG_TRY(eg_source_i64(c, w, &d.key));
  d.type = (eg_htp_qnn_tensor_type)type;
  d.dtype = (eg_htp_qnn_dtype)dtype;
  d.rank = rank;
  d.dims = dims;
  float *scales = NULL;
  int32_t *offsets = NULL;
  eg_status s = read_quant(c, w, enc, &d.quant, &scales, &offsets);
  if (s == EG_OK && d.type == EG_HTP_QNN_TENSOR_STATIC) {
    int64_t shape[EG_HTP_QNN_MAX_RANK];
    for (int j = 0; j < rank; j++) shape[j] = dims[j];
    const int64_t numel = eg_shape_numel(shape, rank, EG_MAX_NUMEL);
    if (numel < 0 || !eg_count_bytes(numel, eg_htp_qnn_dtype_size(d.dtype), &d.nbytes)) {
      char buf[200];
      s = eg_source_error(c, EG_ERR_FORMAT, "%s (%s): STATIC dims %s: the product of the non-zero dims must "
              "be at most 2^40", w, d.name, eg_fmt_ints(buf, sizeof buf, shape, rank));
    }
    if (s == EG_OK) s = eg_source_static(c, w, d.nbytes, &d.data);
  }
  int32_t id = -1;
  if (s == EG_OK && (s = eg_htp_qnn_graph_add_tensor(qg, &d, &id)) != EG_OK) s = qnn_error(c, k, s);
  if (s == EG_OK && id != i)
    s = eg_source_error(c, EG_ERR_FORMAT, "%s (%s): key %lld already names tensor %d: keys are unique", w,
            d.name, (long long)d.key, id);
  free(scales);
  free(offsets);
  return s;
}

static eg_status read_param(eg_egp_source *c, const char *w, eg_htp_qnn_param *p) {
  uint8_t kind, dtype, rank;
  memset(p, 0, sizeof *p);
  EG_TRY(eg_source_str(c, w, false, &p->name));
  EG_TRY(eg_source_u8(c, w, &kind));
  EG_TRY(eg_source_u8(c, w, &dtype));
  if (kind > EG_HTP_QNN_PARAM_TENSOR || dtype >= EG_HTP_QNN_DTYPE_COUNT)
    return eg_source_error(c, EG_ERR_FORMAT, "%s: param %s: kind %u, dtype %u: must be 0/1 and < %d", w,
               p->name, kind, dtype, EG_HTP_QNN_DTYPE_COUNT);
  p->kind = (eg_htp_qnn_param_kind)kind;
  p->dtype = (eg_htp_qnn_dtype)dtype;
  if (p->kind == EG_HTP_QNN_PARAM_SCALAR) {
    uint32_t bits;
    EG_TRY(eg_source_u32(c, w, &bits));
    if (p->dtype == EG_HTP_QNN_DTYPE_BOOL_8) {
      if (bits > 1)
        return eg_source_error(c, EG_ERR_FORMAT, "%s: param %s (bool %u): must be 0 or 1", w, p->name, bits);
      p->scalar.b = bits == 1;
    } else if (p->dtype == EG_HTP_QNN_DTYPE_FLOAT_32) {
      memcpy(&p->scalar.f32, &bits, 4);
    } else {
      p->scalar.u32 = bits;
    }
    return EG_OK;
  }
  EG_TRY(eg_source_u8(c, w, &rank));
  if (rank < 1 || rank > EG_HTP_QNN_PARAM_MAX_RANK)
    return eg_source_error(c, EG_ERR_FORMAT, "%s: param %s: rank (%u): must be 1 or 2", w, p->name, rank);
  p->rank = rank;
  int64_t shape[EG_HTP_QNN_PARAM_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    EG_TRY(eg_source_u32(c, w, &p->dims[i]));
    shape[i] = p->dims[i];
  }
  const int64_t n = eg_shape_numel(shape, rank, EG_HTP_QNN_PARAM_MAX_VALUES); /* -1: over the cap */
  uint32_t n_values;
  EG_TRY(eg_source_u32(c, w, &n_values));
  if (n < 0 || n_values != n) {
    char dims[64];
    return eg_source_error(c, EG_ERR_FORMAT, "%s: param %s: n_values (%u) for dims %s: must equal the "
               "product of its dims, at most %d", w, p->name, n_values,
               eg_fmt_ints(dims, sizeof dims, shape, rank), EG_HTP_QNN_PARAM_MAX_VALUES);
  }
  p->n_values = (int32_t)n_values;
  for (uint32_t i = 0; i < n_values; i++) EG_TRY(eg_source_u32(c, w, &p->values.u32[i]));
  return EG_OK;
}

static eg_status read_op(eg_egp_source *c, int32_t k, int32_t i, eg_htp_qnn_graph *qg) {
  char w[96];
  snprintf(w, sizeof w, "partition %d: ops[%d]", k, i);
  int32_t inputs[MAX_OP_INPUTS], outputs[MAX_OP_OUTPUTS];
  eg_htp_qnn_param params[MAX_OP_PARAMS];
  const char *type;
  eg_htp_qnn_op_desc d = {.inputs = inputs, .outputs = outputs, .params = params};
  EG_TRY(eg_source_str(c, w, false, &d.name));
  EG_TRY(eg_source_str(c, w, false, &type));
  d.type = eg_htp_qnn_op_from_name(type);
  if (d.type == EG_HTP_QNN_OP_COUNT)
    return eg_source_error(c, EG_ERR_UNSUPPORTED, "%s (%s): QNN op type %s unknown to this edgegrad", w,
               d.name, type);
  EG_TRY(eg_source_count(c, w, 4, MAX_OP_INPUTS, &d.n_inputs));
  for (int32_t j = 0; j < d.n_inputs; j++) EG_TRY(eg_source_i32(c, w, &inputs[j]));
  EG_TRY(eg_source_count(c, w, 4, MAX_OP_OUTPUTS, &d.n_outputs));
  for (int32_t j = 0; j < d.n_outputs; j++) EG_TRY(eg_source_i32(c, w, &outputs[j]));
  EG_TRY(eg_source_count(c, w, 10, MAX_OP_PARAMS, &d.n_params));
  for (int32_t j = 0; j < d.n_params; j++) EG_TRY(read_param(c, w, &params[j]));
  eg_status s = eg_htp_qnn_graph_add_op(qg, &d, NULL);
  return s == EG_OK ? EG_OK : qnn_error(c, k, s);
}

static eg_status read_boundaries(eg_egp_source *c, const char *w, int32_t n_values, int32_t n_tensors,
                                 eg_boundary **list, int32_t *n) {
  EG_TRY(eg_source_count(c, w, 9, INT32_MAX - 1, n));
  *list = calloc((size_t)*n + 1, sizeof(eg_boundary));
  if (!*list) return eg_source_error(c, EG_ERR_NOMEM, "%s: out of memory", w);
  for (int32_t i = 0; i < *n; i++) {
    EG_TRY(eg_source_id(c, w, 0, n_values, &(*list)[i].value));
    EG_TRY(eg_source_id(c, w, 0, n_tensors, &(*list)[i].tensor));
    EG_TRY(eg_source_bool(c, w, &(*list)[i].nhwc));
  }
  return EG_OK;
}

/* Partition k's executor plan (exec_plan.h) into the graph's: its planned entries by
 * ascending op index, then the whole plan against the graph (eg_htp_exec_plan_check). */
static eg_status read_exec_plan(eg_egp_source *c, int32_t k, eg_htp_qnn_graph *qg) {
  char w[64];
  snprintf(w, sizeof w, "partition %d: executor plan", k);
  eg_htp_exec_plan *xp = eg_htp_qnn_graph_plan_mut(qg);
  const int32_t no = eg_htp_qnn_graph_num_ops(qg);
  int32_t n, last = -1;
  EG_TRY(eg_source_count(c, w, 14, (uint32_t)no, &n));
  if (eg_htp_exec_plan_init(xp, no) != EG_OK)
    return eg_source_error(c, EG_ERR_NOMEM, "%s: out of memory", w);
  for (int32_t i = 0; i < n; i++) {
    int32_t op;
    EG_TRY(eg_source_id(c, w, last + 1, no, &op));
    eg_htp_exec_op *e = &xp->ops[op];
    EG_TRY(eg_source_u8(c, w, &e->how));
    EG_TRY(eg_source_u8(c, w, &e->filter_read));
    EG_TRY(eg_source_i32(c, w, &e->filter_src));
    EG_TRY(eg_source_i32(c, w, &e->y_dst));
    if (!eg_htp_exec_op_planned(e))
      return eg_source_error(c, EG_ERR_FORMAT, "%s: op %d (RUN, no filter source or y_dst): "
                             "an entry plans something (ops run as they are are not listed)",
                             w, (int)op);
    last = op;
  }
  char why[512];
  if (!eg_htp_exec_plan_check(qg, xp, why, sizeof why))
    return eg_source_error(c, EG_ERR_FORMAT, "%s: %s", w, why);
  return EG_OK;
}

static eg_status read_partition(eg_egp_source *c, const eg_graph *g, int32_t k, eg_lowered *hp) {
  char w[64];
  const char *name;
  int32_t n_tensors, n_ops;
  snprintf(w, sizeof w, "partition %d", k);
  EG_TRY(eg_source_str(c, w, false, &name));
  eg_htp_qnn_graph *qg = NULL;
  EG_TRY(eg_htp_qnn_graph_create(name, &qg));
  hp->graph = qg;
  EG_TRY(eg_source_count(c, w, 16, INT32_MAX - 1, &n_tensors));
  for (int32_t i = 0; i < n_tensors; i++) EG_TRY(read_tensor(c, k, i, hp->graph));
  EG_TRY(eg_source_count(c, w, 20, INT32_MAX - 1, &n_ops));
  for (int32_t i = 0; i < n_ops; i++) EG_TRY(read_op(c, k, i, hp->graph));
  snprintf(w, sizeof w, "partition %d: inputs", k);
  EG_TRY(read_boundaries(c, w, g->n_values, n_tensors, &hp->inputs, &hp->n_inputs));
  snprintf(w, sizeof w, "partition %d: outputs", k);
  EG_TRY(read_boundaries(c, w, g->n_values, n_tensors, &hp->outputs, &hp->n_outputs));
  return read_exec_plan(c, k, qg);
}

/* A boundary's tensor holds its value in the value's axis order (eg_value.axes, lower.h). */
static eg_status check_layout(eg_egp_source *c, const char *w, const eg_graph *g, const eg_boundary *b,
                              const eg_htp_qnn_tensor *t) {
  const eg_value *v = &g->values[b->value];
  if (v->kind != EG_VALUE_TENSOR)
    return eg_source_error(c, EG_ERR_FORMAT, "%s: value %d is a tuple: boundaries carry tensors", w, b->value);
  /* dims compared as int64 (eg_htp_dims would truncate a huge dim to uint32) */
  /* dtype: eg_htp_held_dtype — an int64 value marked npu_int32 crosses as INT_32, a value held
   * quantized (fold_qdq) as its fixed-point dtype */
  bool same = t->rank == v->rank && b->nhwc == eg_htp_is_nhwc(v) &&
              t->dtype == eg_htp_held_dtype(g, b->value);
  for (int d = 0; same && d < v->rank; d++)
    same = (int64_t)t->dims[eg_htp_axis(v, d)] == v->shape[d];
  if (same) return EG_OK;
  return eg_source_error(c, EG_ERR_FORMAT, "%s: value %s (%s, rank %d) and tensor %s (%s, rank %d, nhwc %d) "
             "disagree: a boundary tensor has its value's dtype and dims, NHWC when its axes are", w,
             eg_value_label(g, b->value), eg_dtype_name(v->dtype), v->rank, t->name,
             eg_htp_qnn_dtype_name(t->dtype), t->rank, b->nhwc);
}

/* Partition k's boundary against the graph and the placement: an input is a value from
 * outside bound once to an APP_WRITE tensor, an output a value from inside read from an
 * APP_READ tensor, each with its value's dtype, dims and layout; every APP tensor is bound and
 * every APP_READ one written by an op. */
static eg_status check_boundary(eg_egp_source *c, const eg_graph *g, const eg_partitioning *pt,
                                int32_t k, const eg_lowered *hp) {
  const eg_htp_qnn_graph *qg = hp->graph;
  int32_t nt = eg_htp_qnn_graph_num_tensors(qg);
  char *bound = calloc((size_t)nt + 1, 1);
  eg_status s = bound ? EG_OK : eg_source_error(c, EG_ERR_NOMEM, "out of memory");
  char w[96];
  for (int32_t i = 0; s == EG_OK && i < hp->n_inputs + hp->n_outputs; i++) {
    bool in = i < hp->n_inputs;
    const eg_boundary *b = in ? &hp->inputs[i] : &hp->outputs[i - hp->n_inputs];
    const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(qg, b->tensor);
    const eg_value *v = &g->values[b->value];
    bool inside = v->role == EG_ROLE_NODE && pt->nodes[v->def].npu &&
                  pt->nodes[v->def].partition == k;
    snprintf(w, sizeof w, "partition %d: %s[%d]", k, in ? "inputs" : "outputs",
             in ? i : i - hp->n_inputs);
    eg_htp_qnn_tensor_type want = in ? EG_HTP_QNN_TENSOR_APP_WRITE : EG_HTP_QNN_TENSOR_APP_READ;
    if (t->type != want || inside == in || (in && bound[b->tensor]))
      s = eg_source_error(c, EG_ERR_FORMAT, "%s: value %s (%s this partition) -> tensor %s "
                          "(%s%s): an input is a value from outside bound once to an APP_WRITE "
                          "tensor, an output a value from inside read from an APP_READ tensor",
                          w, eg_value_label(g, b->value), inside ? "inside" : "outside", t->name,
                          t->type == EG_HTP_QNN_TENSOR_APP_WRITE  ? "APP_WRITE"
                          : t->type == EG_HTP_QNN_TENSOR_APP_READ ? "APP_READ"
                                                              : "not an APP tensor",
                          in && bound[b->tensor] ? ", bound twice" : "");
    if (s == EG_OK) s = check_layout(c, w, g, b, t);
    if (s == EG_OK) bound[b->tensor] = 1;
  }
  for (int32_t i = 0; s == EG_OK && i < nt; i++) {
    const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(qg, i);
    if ((t->type == EG_HTP_QNN_TENSOR_APP_WRITE || t->type == EG_HTP_QNN_TENSOR_APP_READ) && !bound[i])
      s = eg_source_error(c, EG_ERR_FORMAT, "partition %d: tensor %s (%s): in no boundary: every "
                          "APP tensor is bound", k, t->name,
                          t->type == EG_HTP_QNN_TENSOR_APP_WRITE ? "APP_WRITE" : "APP_READ");
    else if (t->type == EG_HTP_QNN_TENSOR_APP_READ && t->producer < 0)
      s = eg_source_error(c, EG_ERR_FORMAT, "partition %d: tensor %s (APP_READ, no producer): "
                          "every output is written by an op", k, t->name);
  }
  free(bound);
  return s;
}

eg_status eg_htp_egp_read(eg_egp_source *src, const eg_graph *g, const eg_partitioning *parts,
                          int32_t k, eg_lowered *out) {
  out->backend = &eg_htp_rt;
  EG_TRY(read_partition(src, g, k, out));
  EG_TRY(check_boundary(src, g, parts, k, out));
  for (int32_t i = 0; i < out->n_inputs; i++) eg_htp_boundary_flags(g, out->graph, &out->inputs[i]);
  for (int32_t i = 0; i < out->n_outputs; i++)
    eg_htp_boundary_flags(g, out->graph, &out->outputs[i]);
  return EG_OK;
}
