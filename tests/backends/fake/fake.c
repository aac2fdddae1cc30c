/* fake.c — see fake.h. Lowered form: tensors (one per IR value a partition touches: boundary
 * inputs, outputs, intermediates and Conv2d weights held as the partition's own static bytes)
 * and ops in node order. Record in a .egp (backends/serial.h):
 *   str name; u32 n_tensors; n_tensors x { str name; u8 kind (0 in, 1 out, 2 native,
 *   3 static); u8 rank (<= 4); rank x i64 dim; static: its bytes }; u32 n_ops; n_ops x { str
 *   name; u8 kind (0 conv, 1 add, 2 mul, 3 relu); 4 x i32 tensor (x, w, b, y; -1 none);
 *   7 x i32 (stride h w, padding h w, dilation h w, groups) }; u32 n_in; n_in x { i32 value;
 *   i32 tensor }; u32 n_out; n_out x { i32 value; i32 tensor }. */
#include "fake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/readers.h"
#include "util/clock.h"

enum { T_IN, T_OUT, T_NATIVE, T_STATIC, T_KINDS };
enum { OP_CONV, OP_ADD, OP_MUL, OP_RELU, OP_KINDS };
static const char *const tensor_kinds[] = {"APP_WRITE", "APP_READ", "NATIVE", "STATIC"};
static const char *const op_types[] = {"Conv2d", "ElementWiseAdd", "ElementWiseMultiply", "Relu"};

typedef struct ftensor {
  const char *name;
  int kind;
  int rank;
  int64_t dims[4];
  const void *data; /* static */
} ftensor;

typedef struct fop {
  const char *name;
  int kind;
  int32_t t[4]; /* x, w (or y of add/mul's second input), b, out */
  int32_t p[7];
} fop;

typedef struct fgraph {
  const char *name;
  int32_t n_tensors, n_ops, cap_tensors, cap_ops;
  ftensor *t;
  fop *ops;
  char own_name[32];
} fgraph;

static long ops_run;
long eg_fake_ops_run(void) { return ops_run; }

static int64_t numel(const ftensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++) n *= t->dims[d];
  return n;
}

static void graph_free(void *graph) {
  fgraph *fg = graph;
  if (!fg) return;
  free(fg->t);
  free(fg->ops);
  free(fg);
}

/* ---- compile half ---- */

static bool is_f32(const eg_value *v) {
  return v->kind == EG_VALUE_TENSOR && v->dtype == EG_DTYPE_FLOAT32 && !v->quant && v->rank <= 4;
}

static bool fake_gate(const eg_backend *b, const eg_graph *g, const eg_node *n, const eg_target *t,
                      char *reason, size_t size) {
  (void)b, (void)g, (void)t;
  if (n->op == EG_OP_convolution || n->op == EG_OP_add_Tensor || n->op == EG_OP_mul_Tensor ||
      n->op == EG_OP_relu)
    return true;
  snprintf(reason, size, "fake NPU: no lowering for %s (it runs Conv2d and elementwise "
           "add, mul, relu only)", eg_op_target(n->op));
  return false;
}

static bool fake_supports(const eg_backend *b, const eg_graph *g, const eg_node *n,
                          const eg_target *t, char *reason, size_t size) {
  (void)b, (void)t;
  const eg_value *y = n->output >= 0 ? &g->values[n->output] : NULL, *x = NULL, *w = NULL;
  bool ok = y && is_f32(y) && eg_arg_tensor(g, n, 0, "input", &x) == EG_OK && is_f32(x);
  if (ok && n->op == EG_OP_convolution) {
    const eg_value *bias = NULL;
    bool transposed = true;
    ok = eg_arg_tensor(g, n, 1, "weight", &w) == EG_OK && is_f32(w) && w->rank == 4 &&
         x->rank == 4 && eg_arg_opt_tensor(g, n, 2, "bias", &bias) == EG_OK &&
         (!bias || is_f32(bias)) && eg_arg_bool(n, 6, "transposed", &transposed) == EG_OK &&
         !transposed;
  } else if (ok && (n->op == EG_OP_add_Tensor || n->op == EG_OP_mul_Tensor)) {
    double alpha = 1;
    ok = eg_arg_tensor(g, n, 1, "other", &w) == EG_OK && is_f32(w) && w->rank == y->rank &&
         x->rank == y->rank && eg_arg_opt_scalar(n, 2, "alpha", &alpha) == EG_OK && alpha == 1;
    for (int d = 0; ok && d < y->rank; d++)
      ok = x->shape[d] == y->shape[d] && w->shape[d] == y->shape[d];
  }
  if (!ok) snprintf(reason, size, "fake NPU: %s: float32 tensors of rank <= 4 only, "
                    "add / mul without broadcasting, convolution not transposed", n->name);
  return ok;
}

static bool grow(void **p, int32_t *cap, int32_t n, size_t each) {
  if (n < *cap) return true;
  int32_t c = *cap ? 2 * *cap : 16;
  void *q = realloc(*p, (size_t)c * each);
  if (!q) return false;
  *p = q;
  *cap = c;
  return true;
}

static int32_t add_tensor(fgraph *fg, const eg_graph *g, int32_t value, int kind) {
  if (!grow((void **)&fg->t, &fg->cap_tensors, fg->n_tensors, sizeof(ftensor))) return -1;
  const eg_value *v = &g->values[value];
  ftensor *t = &fg->t[fg->n_tensors];
  *t = (ftensor){.name = eg_value_label(g, value), .kind = kind, .rank = v->rank};
  memcpy(t->dims, v->shape, sizeof t->dims);
  if (kind == T_STATIC) t->data = g->statics[v->def].data;
  return fg->n_tensors++;
}

static eg_status add_boundary(eg_lowered *lp, bool out, int32_t value, int32_t tensor) {
  eg_boundary **list = out ? &lp->outputs : &lp->inputs;
  int32_t *n = out ? &lp->n_outputs : &lp->n_inputs;
  eg_boundary *more = realloc(*list, ((size_t)*n + 1) * sizeof **list);
  if (!more) return eg_error(EG_ERR_NOMEM, "fake lowering: out of memory");
  *list = more;
  more[(*n)++] = (eg_boundary){.value = value, .tensor = tensor};
  return EG_OK;
}

/* The tensor of argument value `value` of a node of partition k (a boundary input, or a conv
 * weight held as the partition's static, the first time). */
static int32_t arg_tensor(fgraph *fg, eg_lowered *lp, int32_t *of, const eg_graph *g,
                          int32_t value, bool weight) {
  if (value < 0) return -1;
  if (of[value] >= 0) return of[value];
  const bool st = weight && g->values[value].role == EG_ROLE_STATIC;
  of[value] = add_tensor(fg, g, value, st ? T_STATIC : T_IN);
  if (of[value] >= 0 && !st && add_boundary(lp, false, value, of[value]) != EG_OK) return -1;
  return of[value];
}

static eg_status lower_one(const eg_graph *g, const eg_partitioning *parts,
                           const eg_readers *readers, int32_t k, int32_t *of, eg_lowered *lp) {
  fgraph *fg = calloc(1, sizeof *fg);
  if (!fg) return eg_error(EG_ERR_NOMEM, "fake lowering: out of memory");
  snprintf(fg->own_name, sizeof fg->own_name, "fake_%d", (int)k);
  fg->name = fg->own_name;
  lp->backend = &eg_fake_rt;
  lp->graph = fg;
  const eg_partition *part = &parts->partitions[k];
  for (int32_t j = 0; j < part->n_nodes; j++) {
    const eg_node *n = &g->nodes[part->nodes[j]];
    if (!grow((void **)&fg->ops, &fg->cap_ops, fg->n_ops, sizeof(fop)))
      return eg_error(EG_ERR_NOMEM, "fake lowering: out of memory");
    fop *op = &fg->ops[fg->n_ops++];
    *op = (fop){.name = n->name, .t = {-1, -1, -1, -1}};
    op->kind = n->op == EG_OP_convolution ? OP_CONV : n->op == EG_OP_add_Tensor ? OP_ADD
             : n->op == EG_OP_mul_Tensor  ? OP_MUL : OP_RELU;
    const int n_in = op->kind == OP_CONV ? 3 : op->kind == OP_RELU ? 1 : 2;
    for (int a = 0; a < n_in; a++) {
      const eg_arg *arg = eg_node_arg(n, a, NULL);
      const int32_t v = arg && arg->kind == EG_ARG_VALUE ? arg->value : -1;
      op->t[a] = arg_tensor(fg, lp, of, g, v, op->kind == OP_CONV && a == 1);
    }
    if (op->kind == OP_CONV) {
      int64_t s[2], p[2], d[2], groups = 1;
      int ns, np, nd;
      EG_TRY(eg_arg_int_list(n, 3, "stride", s, 1, 2, &ns));
      EG_TRY(eg_arg_int_list(n, 4, "padding", p, 1, 2, &np));
      EG_TRY(eg_arg_int_list(n, 5, "dilation", d, 1, 2, &nd));
      EG_TRY(eg_arg_int(n, 8, "groups", &groups));
      const int64_t q[7] = {s[0], s[ns - 1], p[0], p[np - 1], d[0], d[nd - 1], groups};
      for (int i = 0; i < 7; i++) op->p[i] = (int32_t)q[i];
    }
    of[n->output] = op->t[3] = add_tensor(fg, g, n->output, T_NATIVE);
    if (op->t[3] < 0) return eg_error(EG_ERR_NOMEM, "fake lowering: out of memory");
  }
  for (int32_t j = 0; j < part->n_nodes; j++) {
    const int32_t v = g->nodes[part->nodes[j]].output;
    if (!eg_readers_outside(readers, v, k)) continue;
    fg->t[of[v]].kind = T_OUT;
    EG_TRY(add_boundary(lp, true, v, of[v]));
  }
  return EG_OK;
}

static eg_status fake_lower(const eg_backend *b, const eg_graph *g, const eg_partitioning *parts,
                            eg_lowered *out) {
  (void)b;
  eg_readers readers = {0};
  int32_t *of = malloc(((size_t)g->n_values + 1) * sizeof(int32_t));
  eg_status s = of ? eg_readers_compute(g, parts, &readers)
                   : eg_error(EG_ERR_NOMEM, "fake lowering: out of memory");
  for (int32_t k = 0; s == EG_OK && k < parts->n_partitions; k++) {
    for (int32_t v = 0; v < g->n_values; v++) of[v] = -1;
    s = lower_one(g, parts, &readers, k, of, &out[k]);
  }
  for (int32_t k = 0; s != EG_OK && k < parts->n_partitions; k++) eg_lowered_free(&out[k]);
  eg_readers_free(&readers);
  free(of);
  return s;
}

static void put_boundaries(eg_egp_sink *s, const eg_boundary *b, int32_t n) {
  eg_sink_u32(s, (uint32_t)n);
  for (int32_t i = 0; i < n; i++) {
    eg_sink_i32(s, b[i].value);
    eg_sink_i32(s, b[i].tensor);
  }
}

static void fake_write(const eg_lowered *lp, eg_egp_sink *s) {
  const fgraph *fg = lp->graph;
  eg_sink_str(s, fg->name);
  eg_sink_u32(s, (uint32_t)fg->n_tensors);
  for (int32_t i = 0; i < fg->n_tensors; i++) {
    const ftensor *t = &fg->t[i];
    eg_sink_str(s, t->name);
    eg_sink_u8(s, (uint32_t)t->kind);
    eg_sink_u8(s, (uint32_t)t->rank);
    for (int d = 0; d < t->rank; d++) eg_sink_i64(s, t->dims[d]);
    if (t->kind == T_STATIC) eg_sink_static(s, t->data, (size_t)numel(t) * sizeof(float));
  }
  eg_sink_u32(s, (uint32_t)fg->n_ops);
  for (int32_t i = 0; i < fg->n_ops; i++) {
    const fop *op = &fg->ops[i];
    eg_sink_str(s, op->name);
    eg_sink_u8(s, (uint32_t)op->kind);
    for (int j = 0; j < 4; j++) eg_sink_i32(s, op->t[j]);
    for (int j = 0; j < 7; j++) eg_sink_i32(s, op->p[j]);
  }
  put_boundaries(s, lp->inputs, lp->n_inputs);
  put_boundaries(s, lp->outputs, lp->n_outputs);
}

/* ---- runtime half: reading ---- */

static eg_status read_boundaries(eg_egp_source *s, const eg_graph *g, const fgraph *fg,
                                 int want, eg_boundary **list, int32_t *n) {
  EG_TRY(eg_source_count(s, "fake boundaries", 8, 1u << 20, n));
  *list = calloc((size_t)*n + 1, sizeof **list);
  if (!*list) return eg_source_error(s, EG_ERR_NOMEM, "fake: out of memory");
  for (int32_t i = 0; i < *n; i++) {
    eg_boundary *b = &(*list)[i];
    EG_TRY(eg_source_id(s, "fake boundary value", 0, g->n_values, &b->value));
    EG_TRY(eg_source_id(s, "fake boundary tensor", 0, fg->n_tensors, &b->tensor));
    const eg_value *v = &g->values[b->value];
    const ftensor *t = &fg->t[b->tensor];
    bool same = t->kind == want && is_f32(v) && v->rank == t->rank;
    for (int d = 0; same && d < t->rank; d++) same = v->shape[d] == t->dims[d];
    if (!same)
      return eg_source_error(s, EG_ERR_FORMAT, "fake boundary %d: value %s and tensor %s "
                             "disagree: a boundary tensor is its float32 value, an input "
                             "APP_WRITE, an output APP_READ", (int)i, eg_value_label(g, b->value),
                             t->name);
  }
  return EG_OK;
}

static eg_status read_tensor(eg_egp_source *s, ftensor *t) {
  uint8_t kind, rank;
  EG_TRY(eg_source_str(s, "fake tensor", false, &t->name));
  EG_TRY(eg_source_u8(s, "fake tensor", &kind));
  EG_TRY(eg_source_u8(s, "fake tensor", &rank));
  if (kind >= T_KINDS || rank > 4)
    return eg_source_error(s, EG_ERR_FORMAT, "fake tensor %s: kind %u, rank %u: must be < %d "
                           "and <= 4", t->name, kind, rank, T_KINDS);
  t->kind = kind;
  t->rank = rank;
  for (int d = 0; d < rank; d++) {
    EG_TRY(eg_source_i64(s, "fake tensor dim", &t->dims[d]));
    if (t->dims[d] < 0 || t->dims[d] > (1 << 24))
      return eg_source_error(s, EG_ERR_FORMAT, "fake tensor %s: dim %lld: must be in [0, 2^24]",
                             t->name, (long long)t->dims[d]);
  }
  if (kind == T_STATIC)
    EG_TRY(eg_source_static(s, "fake static", (size_t)numel(t) * sizeof(float), &t->data));
  return EG_OK;
}

static eg_status read_op(eg_egp_source *s, const fgraph *fg, fop *op) {
  uint8_t kind;
  EG_TRY(eg_source_str(s, "fake op", false, &op->name));
  EG_TRY(eg_source_u8(s, "fake op", &kind));
  if (kind >= OP_KINDS)
    return eg_source_error(s, EG_ERR_FORMAT, "fake op %s: kind %u: must be < %d", op->name, kind,
                           OP_KINDS);
  op->kind = kind;
  for (int j = 0; j < 4; j++) EG_TRY(eg_source_id(s, "fake op tensor", -1, fg->n_tensors, &op->t[j]));
  for (int j = 0; j < 7; j++) EG_TRY(eg_source_i32(s, "fake op param", &op->p[j]));
  const int n_in = kind == OP_CONV ? 2 : kind == OP_RELU ? 1 : 2;
  bool ok = op->t[3] >= 0;
  for (int j = 0; ok && j < n_in; j++) ok = op->t[j] >= 0;
  for (int j = 0; ok && kind == OP_CONV && j < 7; j++) ok = op->p[j] >= (j >= 2 && j < 4 ? 0 : 1);
  if (!ok)
    return eg_source_error(s, EG_ERR_FORMAT, "fake op %s: a missing tensor or a parameter out of "
                           "range", op->name);
  return EG_OK;
}

static eg_status fake_read(eg_egp_source *s, const eg_graph *g, const eg_partitioning *parts,
                           int32_t k, eg_lowered *out) {
  (void)parts, (void)k;
  fgraph *fg = calloc(1, sizeof *fg);
  if (!fg) return eg_source_error(s, EG_ERR_NOMEM, "fake: out of memory");
  out->backend = &eg_fake_rt;
  out->graph = fg;
  EG_TRY(eg_source_str(s, "fake name", false, &fg->name));
  EG_TRY(eg_source_count(s, "fake tensors", 3, 1u << 20, &fg->n_tensors));
  fg->t = calloc((size_t)fg->n_tensors + 1, sizeof *fg->t);
  if (!fg->t) return eg_source_error(s, EG_ERR_NOMEM, "fake: out of memory");
  for (int32_t i = 0; i < fg->n_tensors; i++) EG_TRY(read_tensor(s, &fg->t[i]));
  EG_TRY(eg_source_count(s, "fake ops", 49, 1u << 20, &fg->n_ops));
  fg->ops = calloc((size_t)fg->n_ops + 1, sizeof *fg->ops);
  if (!fg->ops) return eg_source_error(s, EG_ERR_NOMEM, "fake: out of memory");
  for (int32_t i = 0; i < fg->n_ops; i++) EG_TRY(read_op(s, fg, &fg->ops[i]));
  EG_TRY(read_boundaries(s, g, fg, T_IN, &out->inputs, &out->n_inputs));
  return read_boundaries(s, g, fg, T_OUT, &out->outputs, &out->n_outputs);
}

/* ---- runtime half: the executor (plain loops, traced order) ---- */

typedef struct fexec {
  const fgraph *g;
  float **ptr;   /* per tensor */
  size_t *off;   /* NATIVE tensors' offsets in the work block */
  size_t work;
  eg_backend_span block; /* the work block as one span over every op */
  int64_t *times;
} fexec;

static eg_status ex_create(const void *graph, eg_precision precision, void **out) {
  (void)precision; /* the fake NPU computes float32 */
  const fgraph *fg = graph;
  fexec *ex = calloc(1, sizeof *ex);
  if (ex) ex->ptr = calloc((size_t)fg->n_tensors + 1, sizeof *ex->ptr);
  if (ex) ex->off = calloc((size_t)fg->n_tensors + 1, sizeof *ex->off);
  if (!ex || !ex->ptr || !ex->off) {
    if (ex) free(ex->ptr), free(ex->off);
    free(ex);
    return eg_error(EG_ERR_NOMEM, "fake executor: out of memory");
  }
  ex->g = fg;
  for (int32_t i = 0; i < fg->n_tensors; i++) {
    if (fg->t[i].kind == T_STATIC) ex->ptr[i] = (float *)fg->t[i].data;
    if (fg->t[i].kind != T_NATIVE) continue;
    ex->off[i] = ex->work;
    ex->work += ((size_t)numel(&fg->t[i]) * sizeof(float) + 63) & ~(size_t)63;
  }
  ex->block = (eg_backend_span){.tensor = 0, .bytes = ex->work, .first_op = 0,
                                .last_op = fg->n_ops - 1};
  *out = ex;
  return EG_OK;
}

/* One block: one span, when there are bytes to hold. */
static int32_t ex_spans(const void *p, const eg_backend_span **out) {
  const fexec *ex = p;
  *out = &ex->block;
  return ex->work && ex->g->n_ops > 0;
}

static size_t ex_scratch_bytes(const void *ex) { (void)ex; return 0; }

static void ex_set_spans(void *p, void *const *buffers, void *scratch) {
  (void)scratch;
  fexec *ex = p;
  for (int32_t i = 0; ex->work && i < ex->g->n_tensors; i++)
    if (ex->g->t[i].kind == T_NATIVE) ex->ptr[i] = (float *)((char *)buffers[0] + ex->off[i]);
}

static void conv(const fexec *ex, const fop *op) {
  const ftensor *xt = &ex->g->t[op->t[0]], *wt = &ex->g->t[op->t[1]], *yt = &ex->g->t[op->t[3]];
  const float *x = ex->ptr[op->t[0]], *w = ex->ptr[op->t[1]];
  const float *b = op->t[2] >= 0 ? ex->ptr[op->t[2]] : NULL;
  float *y = ex->ptr[op->t[3]];
  const int64_t N = xt->dims[0], C = xt->dims[1], H = xt->dims[2], W = xt->dims[3];
  const int64_t O = wt->dims[0], CG = wt->dims[1], KH = wt->dims[2], KW = wt->dims[3];
  const int64_t OH = yt->dims[2], OW = yt->dims[3], OG = O / op->p[6];
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          double acc = b ? b[o] : 0.0; /* in double: near the exact sum */
          for (int64_t c = 0; c < CG; c++)
            for (int64_t kh = 0; kh < KH; kh++)
              for (int64_t kw = 0; kw < KW; kw++) {
                const int64_t ih = oh * op->p[0] - op->p[2] + kh * op->p[4];
                const int64_t iw = ow * op->p[1] - op->p[3] + kw * op->p[5];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t ic = (o / OG) * CG + c;
                acc += (double)x[((n * C + ic) * H + ih) * W + iw] *
                       w[((o * CG + c) * KH + kh) * KW + kw];
              }
          y[((n * O + o) * OH + oh) * OW + ow] = (float)acc;
        }
}

static eg_status bind(fexec *ex, const eg_backend_binding *b, int n, int kind) {
  for (int i = 0; i < n; i++) {
    if (b[i].tensor < 0 || b[i].tensor >= ex->g->n_tensors || ex->g->t[b[i].tensor].kind != kind ||
        b[i].nbytes != (size_t)numel(&ex->g->t[b[i].tensor]) * sizeof(float))
      return eg_error(EG_ERR_ARGUMENT, "fake executor: binding %d (tensor %d, %zu bytes): not a "
                      "boundary tensor of its size", i, (int)b[i].tensor, b[i].nbytes);
    ex->ptr[b[i].tensor] = b[i].data;
  }
  return EG_OK;
}

static eg_status ex_run(void *p, const eg_backend_binding *in, int n_in,
                        const eg_backend_binding *out, int n_out) {
  fexec *ex = p;
  EG_TRY(bind(ex, in, n_in, T_IN));
  EG_TRY(bind(ex, out, n_out, T_OUT));
  for (int32_t k = 0; k < ex->g->n_ops; k++) {
    const fop *op = &ex->g->ops[k];
    const int64_t t0 = ex->times ? eg_now_ns() : 0;
    if (op->kind == OP_CONV) {
      conv(ex, op);
    } else {
      const float *a = ex->ptr[op->t[0]], *b = op->kind == OP_RELU ? NULL : ex->ptr[op->t[1]];
      float *y = ex->ptr[op->t[3]];
      const int64_t n = numel(&ex->g->t[op->t[3]]);
      for (int64_t i = 0; i < n; i++)
        y[i] = op->kind == OP_ADD ? a[i] + b[i] : op->kind == OP_MUL ? a[i] * b[i]
                                                : (a[i] > 0.0f ? a[i] : 0.0f);
    }
    if (ex->times) ex->times[2 * k] = t0, ex->times[2 * k + 1] = eg_now_ns() - t0;
    ops_run++;
  }
  return EG_OK;
}

static void ex_destroy(void *p) {
  fexec *ex = p;
  free(ex->ptr);
  free(ex->off);
  free(ex);
}

static void ex_set_op_times(void *p, int64_t *times) { ((fexec *)p)->times = times; }

static const eg_backend_executor fake_executor = {
    .create = ex_create, .spans = ex_spans, .scratch_bytes = ex_scratch_bytes,
    .set_spans = ex_set_spans, .run = ex_run, .destroy = ex_destroy,
    .set_op_times = ex_set_op_times};

/* ---- runtime half: description ---- */

static bool no_alias(eg_op op) { (void)op; return false; }

static void describe(const void *graph, eg_npu_partition_info *out) {
  const fgraph *fg = graph;
  out->name = fg->name;
  out->num_tensors = fg->n_tensors;
  out->num_ops = fg->n_ops;
}

static void describe_tensor(const void *graph, int32_t tensor, eg_precision precision,
                            eg_npu_tensor_info *out) {
  (void)precision;
  const ftensor *t = &((const fgraph *)graph)->t[tensor];
  out->name = t->name;
  out->type = tensor_kinds[t->kind];
  out->dtype = "float32";
  out->rank = t->rank;
  for (int d = 0; d < t->rank; d++) out->dims[d] = (uint32_t)t->dims[d];
  out->nbytes = (size_t)numel(t) * sizeof(float);
  out->quant_axis = -1;
  out->precision = "fp32";
}

static void describe_op(const void *graph, int32_t op, eg_npu_op_info *out) {
  const fop *o = &((const fgraph *)graph)->ops[op];
  const int n_in = o->kind == OP_CONV ? 3 : o->kind == OP_RELU ? 1 : 2;
  *out = (eg_npu_op_info){.name = o->name, .type = op_types[o->kind], .num_inputs = n_in,
                          .inputs = o->t, .num_outputs = 1, .outputs = &o->t[3]};
}

static void describe_param(const void *graph, int32_t op, int32_t index, const char **name,
                           char *value, size_t size) {
  (void)graph, (void)op, (void)index;
  *name = "";
  snprintf(value, size, "null"); /* no op has params (describe_op says 0) */
}

const eg_backend_rt eg_fake_rt = {.name = "fake", .free = graph_free, .read = fake_read,
                                  .executor = &fake_executor, .may_alias = no_alias,
                                  .describe = describe, .describe_tensor = describe_tensor,
                                  .describe_op = describe_op, .describe_param = describe_param};

const eg_backend eg_fake_backend = {.name = "fake", .gate = fake_gate,
                                    .supports = fake_supports, .lower = fake_lower,
                                    .write = fake_write, .rt = &eg_fake_rt};
