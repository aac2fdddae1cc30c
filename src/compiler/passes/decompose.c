/* decompose.c — pass `decompose`: rewrites nodes whose op the NPU cannot lower into ops it can,
 * driven by a table and the backend:
 *   rules[]  op -> rewrite. Each rewrite is exact: the rewritten graph computes bit for bit what
 *            the node's CPU kernel computed (same float operations in the same order), so the CPU
 *            path gives identical outputs before and after the pass.
 *              ones_like, zeros_like, full, scalar_tensor, zeros, new_zeros, fill.Scalar,
 *              empty_like, empty.memory_format
 *                                     -> a static constant (the op's own CPU kernel fills it,
 *                                        so the bytes are exactly what the node would give;
 *                                        empty* is zero-filled by edgegrad's contract). Only up
 *                                        to EG_FOLD_MAX_BYTES: larger fills stay nodes.
 *              squeeze.dim, squeeze, unsqueeze -> view(self, <output shape>) (same bytes)
 *              mse_loss_backward(gy, x, t, r) -> mul.Tensor(mul.Scalar(sub.Tensor(x, t), norm),
 *                                        gy), norm = 2/numel(x) for mean, else 2: the kernel's
 *                                        norm * (x - t) * gy.
 *   and the target's backend says which ops it lowers whole (eg_backend.kept_whole: for htp,
 *            the ops its builder table maps to QNN ops directly). It is asked before rules[]:
 *            a rule for one of these never fires, so the node reaches the partitioner as
 *            traced — aten.convolution_backward.default must stay one node for its Transpose +
 *            TransposeConv2d / Conv2d lowering.
 *
 * The graph is rewritten in one sweep in node order: each node is copied or replaced by its
 * rewrite's nodes (which define the node's original output value, so its users and the graph's
 * outputs are untouched; new intermediate values are appended). Replacements come at the
 * node's own position, so the order stays topological. Arrays grow by fresh arena copies (the
 * graph's arena owns everything). Roles, defs and attrs are refreshed by the verifier run after
 * the pass (compiler/passes/pipeline.h). */
#include <stdlib.h>
#include <string.h>

#include "ir/edit.h"
#include "ops/op.h"
#include "compiler/passes/pipeline.h"
#include "util/error.h"

/* Largest fill folded into a static; larger ones stay nodes (a constant is stored in the
 * compiled program). */
#define EG_FOLD_MAX_BYTES ((size_t)1 << 20)

typedef struct rewriter {
  eg_graph *g;
  eg_node *nodes;   /* the new node list */
  int32_t n_nodes;
  int32_t cap_values, cap_statics;
} rewriter;

typedef struct rule {
  eg_op op;
  int new_values;   /* most values one rewrite appends */
  int new_nodes;    /* most nodes one rewrite emits */
  /* Emits the node's replacement into w (or declines with *done = false: the node is kept). */
  eg_status (*rewrite)(rewriter *w, const eg_node *n, bool *done);
} rule;

/* ---- graph editing ---- */

/* A name taken by the new node list (the graph's own nodes, statics and inputs are checked by
 * eg_graph_fresh_name). */
static bool new_node_named(const void *ctx, const char *name) {
  const rewriter *w = ctx;
  for (int32_t i = 0; i < w->n_nodes; i++)
    if (strcmp(w->nodes[i].name, name) == 0) return true;
  return false;
}

/* n's name + suffix, made unique (ir/edit.h); n itself, being replaced, does not count. */
static const char *fresh_name(rewriter *w, const eg_node *n, const char *suffix) {
  return eg_graph_fresh_name(w->g, n->name, suffix, n, new_node_named, w);
}

static eg_status nomem(const eg_node *n) {
  return eg_node_error(n, EG_ERR_NOMEM, "decompose: out of memory");
}

/* Appends a tensor value; -1 when out of memory. */
static int32_t new_value(rewriter *w, eg_dtype dtype, int rank, const int64_t *shape) {
  eg_graph *g = w->g;
  EG_ASSERT(g->n_values < w->cap_values);
  eg_value *v = &g->values[g->n_values];
  memset(v, 0, sizeof *v);
  v->kind = EG_VALUE_TENSOR;
  v->dtype = dtype;
  v->rank = rank;
  memcpy(v->shape, shape, (size_t)rank * sizeof *shape);
  return g->n_values++;
}

/* Emits a node `op(args...)` defining `output`, made from traced node `from`; NULL when out of
 * memory. */
static eg_node *emit(rewriter *w, const eg_node *from, const char *name, eg_op op,
                     int32_t output, int n_args) {
  eg_node *n = &w->nodes[w->n_nodes];
  memset(n, 0, sizeof *n);
  n->name = name;
  n->source = from->source ? from->source : from->name;
  n->op = op;
  n->output = output;
  n->n_args = n_args;
  n->args = eg_arena_array(w->g->arena, (size_t)n_args + 1, sizeof(eg_arg));
  n->kwarg_names = eg_arena_array(w->g->arena, 1, sizeof(char *));
  n->kwargs = eg_arena_array(w->g->arena, 1, sizeof(eg_arg));
  if (!name || !n->args || !n->kwarg_names || !n->kwargs) return NULL;
  w->n_nodes++;
  return n;
}

static eg_arg value_arg(int32_t id) { return (eg_arg){.kind = EG_ARG_VALUE, .value = id}; }

/* ---- rewrites ---- */

/* A fill: run the node's own CPU kernel into fresh static bytes; the output becomes a static. */
static eg_status fold_fill(rewriter *w, const eg_node *n, bool *done) {
  eg_graph *g = w->g;
  const eg_value *out = &g->values[n->output];
  const size_t nbytes = eg_value_nbytes(out);
  *done = false;
  if (out->kind != EG_VALUE_TENSOR || nbytes > EG_FOLD_MAX_BYTES || n->scratch_bytes) return EG_OK;
  void *data = eg_arena_alloc(g->arena, nbytes + 64);
  void **values = calloc((size_t)g->n_values + 1, sizeof(void *));
  const char *name = fresh_name(w, n, "");
  if (!data || !values || !name) {
    free(values);
    return nomem(n);
  }
  data = (void *)(((uintptr_t)data + 63) & ~(uintptr_t)63); /* statics are 64-byte aligned */
  values[n->output] = data; /* fills read no argument data: everything else stays NULL */
  const eg_exec ex = {.g = g, .data = values, .scratch = NULL};
  eg_status s = eg_op_run[n->op](&ex, n);
  free(values);
  EG_TRY(s);
  EG_ASSERT(g->n_statics < w->cap_statics);
  g->statics[g->n_statics++] = (eg_static){.name = name, .value = n->output, .data = data,
                                           .nbytes = nbytes};
  *done = true;
  return EG_OK;
}

/* squeeze/unsqueeze: view(self, output shape). */
static eg_status to_view(rewriter *w, const eg_node *n, bool *done) {
  const eg_value *out = &w->g->values[n->output];
  const eg_arg *self = eg_node_arg(n, 0, "self");
  eg_node *v = emit(w, n, n->name, EG_OP_view, n->output, 2);
  eg_arg *dims = eg_arena_array(w->g->arena, (size_t)out->rank + 1, sizeof(eg_arg));
  if (!v || !dims) return nomem(n);
  for (int d = 0; d < out->rank; d++) dims[d] = (eg_arg){.kind = EG_ARG_INT, .i = out->shape[d]};
  v->args[0] = *self;
  v->args[1] = (eg_arg){.kind = EG_ARG_LIST, .list = {out->rank, dims}};
  *done = true;
  return EG_OK;
}

/* mse_loss_backward(gy, x, t, reduction) -> (x - t) * norm * gy, as the kernel computes it. */
static eg_status mse_backward(rewriter *w, const eg_node *n, bool *done) {
  eg_graph *g = w->g;
  const eg_arg *gy = eg_node_arg(n, 0, "grad_output"), *x = eg_node_arg(n, 1, "self"),
               *t = eg_node_arg(n, 2, "target");
  int64_t reduction;
  EG_TRY(eg_arg_int(n, 3, "reduction", &reduction));
  const eg_value *vx = &g->values[x->value], *vt = &g->values[t->value];
  const float norm = reduction == 1 ? (float)(2.0 / (double)eg_value_numel(vx)) : 2.0f;
  int64_t shape[EG_MAX_RANK];
  int rank;
  if (!eg_broadcast_shapes(vx->shape, vx->rank, vt->shape, vt->rank, shape, &rank))
    return eg_node_error(n, EG_ERR_INVALID, "self and target do not broadcast");
  const int32_t diff = new_value(w, EG_DTYPE_FLOAT32, rank, shape);
  const int32_t scaled = new_value(w, EG_DTYPE_FLOAT32, rank, shape);
  eg_node *sub = emit(w, n, fresh_name(w, n, "_sub"), EG_OP_sub_Tensor, diff, 2);
  if (!sub) return nomem(n);
  sub->args[0] = *x;
  sub->args[1] = *t;
  eg_node *mul_s = emit(w, n, fresh_name(w, n, "_norm"), EG_OP_mul_Scalar, scaled, 2);
  if (!mul_s) return nomem(n);
  mul_s->args[0] = value_arg(diff);
  mul_s->args[1] = (eg_arg){.kind = EG_ARG_FLOAT, .f = norm};
  eg_node *mul = emit(w, n, n->name, EG_OP_mul_Tensor, n->output, 2);
  if (!mul) return nomem(n);
  mul->args[0] = value_arg(scaled);
  mul->args[1] = *gy;
  *done = true;
  return EG_OK;
}

/* ---- the tables ---- */

static const rule rules[] = {
    {EG_OP_ones_like, 0, 0, fold_fill},
    {EG_OP_zeros_like, 0, 0, fold_fill},
    {EG_OP_full, 0, 0, fold_fill},
    {EG_OP_scalar_tensor, 0, 0, fold_fill},
    {EG_OP_zeros, 0, 0, fold_fill},
    {EG_OP_new_zeros, 0, 0, fold_fill},
    {EG_OP_fill_Scalar, 0, 0, fold_fill},
    {EG_OP_empty_like, 0, 0, fold_fill},
    {EG_OP_empty_memory_format, 0, 0, fold_fill},
    {EG_OP_squeeze_dim, 0, 1, to_view},
    {EG_OP_squeeze_default, 0, 1, to_view},
    {EG_OP_unsqueeze, 0, 1, to_view},
    {EG_OP_mse_loss_backward, 2, 3, mse_backward},
};

static const rule *rule_for(eg_op op) {
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (rules[i].op == op) return &rules[i];
  return NULL;
}

/* Fresh arena copies of the value and static arrays with room for the rewrites' additions. */
static eg_status grow(rewriter *w, int32_t more_values, int32_t more_statics) {
  eg_graph *g = w->g;
  w->cap_values = g->n_values + more_values;
  w->cap_statics = g->n_statics + more_statics;
  eg_value *values = eg_arena_array(g->arena, (size_t)w->cap_values + 1, sizeof(eg_value));
  eg_static *statics = eg_arena_array(g->arena, (size_t)w->cap_statics + 1, sizeof(eg_static));
  if (!values || !statics) return eg_error(EG_ERR_NOMEM, "decompose: out of memory");
  memcpy(values, g->values, (size_t)g->n_values * sizeof *values);
  memcpy(statics, g->statics, (size_t)g->n_statics * sizeof *statics);
  g->values = values;
  g->statics = statics;
  return EG_OK;
}

/* The rule rewriting node n, or NULL: none, the backend lowers the op whole, or the user keeps
 * the node on the CPU by a skip list (its traced op and name stay, so the skip still selects it
 * after the pass). */
static const rule *rule_for_node(const eg_node *n, const eg_backend *b,
                                 const eg_partition_options *opt) {
  const rule *r = rule_for(n->op);
  if (r && b->kept_whole && b->kept_whole(b, n->op)) return NULL;
  return r && !eg_partition_skips(opt, n) ? r : NULL;
}

eg_status eg_pass_decompose(eg_graph *g, const eg_partition_options *opt) {
  /* the rules hold for every target today; a per-target rule would test opt->target here */
  const eg_backend *b = opt->backend ? opt->backend : eg_backend_for_target(opt->target);
  int32_t more_values = 0, more_nodes = 0, more_statics = 0;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const rule *r = rule_for_node(&g->nodes[i], b, opt);
    if (!r || g->nodes[i].output < 0) continue;
    more_values += r->new_values;
    more_nodes += r->new_nodes;
    more_statics += r->rewrite == fold_fill;
  }
  if (more_values + more_nodes + more_statics == 0) return EG_OK;
  rewriter w = {.g = g};
  EG_TRY(grow(&w, more_values, more_statics));
  w.nodes = eg_arena_array(g->arena, (size_t)g->n_nodes + (size_t)more_nodes + 1, sizeof(eg_node));
  if (!w.nodes) return eg_error(EG_ERR_NOMEM, "decompose: out of memory");
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    const rule *r = rule_for_node(n, b, opt);
    bool done = false;
    if (r && n->output >= 0) EG_TRY(r->rewrite(&w, n, &done));
    if (!done) w.nodes[w.n_nodes++] = *n;
  }
  g->nodes = w.nodes;
  g->n_nodes = w.n_nodes;
  return EG_OK;
}
