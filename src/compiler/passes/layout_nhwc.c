/* layout_nhwc.c — pass `layout_nhwc`: decides the axis order (eg_value.axes) every rank-4 tensor
 * has inside NPU graphs, and inserts the conversions where two orders meet.
 *
 * CPU kernels always see the traced (NCHW) order; QNN's Conv2d, pools and norms want NHWC
 * ("channels last"). The pass reads the placement on the nodes (pass place) and, walking
 * the nodes in order, classifies each NPU node by the table rules[] (ops not in it are NCHW-only,
 * the safe default):
 *
 *   NHWC       layout-sensitive (convolution incl. transposed / depthwise,
 *              convolution_backward, pools, adaptive pools and the average pools' backward
 *              (grad_output), max pool's backward (grad_output and indices), batch /
 *              group norm, batch norm backward (its grad_out and input, `act2`), log-softmax:
 *              its NPU form takes a rank-4 value's channels, QNN's last axis, only;
 *              nll_loss2d forward and backward (the scores' classes last); bilinear
 *              and nearest upsampling and their backwards): its
 *              activation argument is read NHWC, its rank-4 results are NHWC — for a tuple,
 *              element by element (`elems`): only the rank-4 elements the table names; other
 *              ranks and None elements are skipped.
 *              Its other arguments are not touched: filters are permuted by the lowering
 *              (its filter layouts, or a Transpose for a trainable weight) and convolution_backward's
 *              forward `input` (argument 1), read only by its grad_weight, is transposed there
 *              from whichever order it has, so it gets no order and no conversion from it.
 *   FOLLOW     layout-agnostic (elementwise, activations, copies, reductions, cat, constant_pad_nd
 *              (its lowering maps the pads to the held axes), log-softmax's
 *              backward, which reduces along its dim in either order): its rank-4
 *              arguments share one order and its rank-4 result takes it. The rule for mixed
 *              arguments: NHWC if any rank-4 argument already is NHWC; else traced if any
 *              already is traced; else (every one still free, see below) NHWC, QNN's
 *              activation layout. An argument in the other order is converted.
 *   FOLLOW4    expand: FOLLOW when its input and result are both rank 4 (the lowering tiles
 *              the held dims, a per-channel [N, C, 1, 1] broadcast over a plane staying NHWC
 *              between a mean and its consumers: the SE blocks' backward), TRACED otherwise.
 *   ANY_IN     reads either order (permute, t: the lowering composes one Transpose with the
 *              argument's order); its result is traced.
 *   TRACED     NCHW-only (view / reshape of rank-4 values, expand from a lower rank, and every
 *              op without a row): rank-4 arguments in traced order, rank-4 results traced.
 *
 * A value's order is decided once, and holds in every NPU partition: a value an NPU node defines
 * gets it from that node; a value defined elsewhere (graph input, static, CPU node) is free
 * until the first NPU node reading it asks for an order (boundaries and static permutes follow
 * the field). A getitem's result has the order of the element it names.
 *
 * Conversions. Where a node needs the other order of a value, the pass inserts ONE node right
 * after the value's definition (after the getitem for a tuple element; before every node for a
 * graph input or static), shared by every consumer that needs it; the conversion's result is
 * already in the wanted order, so it is never converted again:
 *   to traced:  aten.clone.default(x, memory_format=torch.contiguous_format)
 *   to NHWC:    aten.clone.default(x, memory_format=torch.channels_last)
 * (PyTorch's own op for changing memory order without changing values: on the CPU it is a copy.)
 * Its result copies the value's dtype, shape, npu_int32 and quantization attributes (the ones of
 * the value it converts: a tuple element's own, via its getitem), has `source` = the first node
 * it serves and a fresh name "<value>_nhwc" / "<value>_nchw". Its builder (the NPU backend's
 * Transpose) must accept it — the pass asks the partitioner's question for it
 * (eg_place_node) and fails otherwise — so the inserted nodes are placed on the NPU (the pass
 * sets their eg_node.place) and the placement the pass saw is the one that is lowered.
 *
 * Tuples: before anything else the pass rejects a node other than getitem reading a tuple, and
 * a getitem index out of range, with one-line errors naming the node (the verifier rejects both
 * too; the pass does not rely on it running first). Nodes a skip list selects are CPU nodes and
 * are never touched. On a target whose NPU runs nothing (SM8350) the pass changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/edit.h"
#include "compiler/passes/pipeline.h"
#include "ops/verify.h"
#include "util/error.h"

typedef enum lclass { LC_TRACED = 0, LC_NHWC, LC_FOLLOW, LC_FOLLOW4, LC_ANY_IN } lclass;

typedef struct lrule {
  eg_op op;
  lclass cls;
  int act_pos;         /* LC_NHWC: the activation argument, by position and keyword */
  const char *act_kw;
  unsigned elems;      /* LC_NHWC tuple producers: the elements held NHWC (bit i: element i) */
  int act2_pos;        /* LC_NHWC: a second activation argument read NHWC (act2_kw NULL: none) */
  const char *act2_kw;
} lrule;

#define FOLLOW(id) {EG_OP_##id, LC_FOLLOW, -1, NULL, 0, -1, NULL}

static const lrule rules[] = {
    /* layout-sensitive: QNN takes these activations NHWC */
    {EG_OP_convolution, LC_NHWC, 0, "input", 0, -1, NULL},
    /* convolution_backward: grad_input only */
    {EG_OP_convolution_backward, LC_NHWC, 0, "grad_output", 1u << 0, -1, NULL},
    {EG_OP_max_pool2d_with_indices, LC_NHWC, 0, "self", 1u << 0 | 1u << 1, -1, NULL},
    {EG_OP_max_pool2d_with_indices_backward, LC_NHWC, 0, "grad_output", 0, 7, "indices"},
    {EG_OP_avg_pool2d, LC_NHWC, 0, "self", 0, -1, NULL},
    {EG_OP__adaptive_avg_pool2d, LC_NHWC, 0, "self", 0, -1, NULL},
    {EG_OP__adaptive_avg_pool2d_backward, LC_NHWC, 0, "grad_output", 0, -1, NULL},
    {EG_OP_avg_pool2d_backward, LC_NHWC, 0, "grad_output", 0, -1, NULL},
    {EG_OP_native_batch_norm, LC_NHWC, 0, "input", 1u << 0, -1, NULL},
    {EG_OP_native_batch_norm_backward, LC_NHWC, 0, "grad_out", 1u << 0, 1, "input"},
    {EG_OP__native_batch_norm_legit_no_training, LC_NHWC, 0, "input", 1u << 0, -1, NULL},
    {EG_OP__native_batch_norm_legit, LC_NHWC, 0, "input", 1u << 0, -1, NULL},
    {EG_OP_native_group_norm, LC_NHWC, 0, "input", 1u << 0, -1, NULL},
    {EG_OP__log_softmax, LC_NHWC, 0, "self", 0, -1, NULL},
    /* nll_loss2d: the class axis last, so the scores are [N*H*W, C] rows (builders/loss.c) */
    {EG_OP_nll_loss2d_forward, LC_NHWC, 0, "self", 0, -1, NULL},
    {EG_OP_nll_loss2d_backward, LC_NHWC, 1, "self", 0, -1, NULL},
    /* upsampling: its MatMuls read the [W, C] slices of an NHWC value (builders/resize.c) */
    {EG_OP_upsample_bilinear2d, LC_NHWC, 0, "self", 0, -1, NULL},
    {EG_OP_upsample_bilinear2d_vec, LC_NHWC, 0, "input", 0, -1, NULL},
    {EG_OP_upsample_bilinear2d_backward, LC_NHWC, 0, "grad_output", 0, -1, NULL},
    {EG_OP_upsample_bilinear2d_backward_vec, LC_NHWC, 0, "grad_output", 0, -1, NULL},
    {EG_OP_upsample_nearest2d, LC_NHWC, 0, "self", 0, -1, NULL},
    {EG_OP_upsample_nearest2d_vec, LC_NHWC, 0, "input", 0, -1, NULL},
    {EG_OP_upsample_nearest2d_backward, LC_NHWC, 0, "grad_output", 0, -1, NULL},
    {EG_OP_upsample_nearest2d_backward_vec, LC_NHWC, 0, "grad_output", 0, -1, NULL},
    /* layout-agnostic */
    FOLLOW(relu), FOLLOW(hardtanh), FOLLOW(sigmoid), FOLLOW(tanh), FOLLOW(silu),
    FOLLOW(silu_backward), FOLLOW(hardswish), FOLLOW(hardswish_backward), FOLLOW(hardsigmoid),
    FOLLOW(hardsigmoid_backward), FOLLOW(neg),
    FOLLOW(gelu), FOLLOW(gelu_backward),
    FOLLOW(add_Tensor), FOLLOW(add_Scalar), FOLLOW(sub_Tensor), FOLLOW(sub_Scalar),
    FOLLOW(rsub_Scalar), FOLLOW(mul_Tensor), FOLLOW(mul_Scalar), FOLLOW(div_Tensor),
    FOLLOW(div_Tensor_mode), FOLLOW(div_Scalar), FOLLOW(threshold_backward),
    FOLLOW(hardtanh_backward), FOLLOW(sigmoid_backward), FOLLOW(tanh_backward), FOLLOW(detach),
    FOLLOW(clone), FOLLOW(lift_fresh_copy), FOLLOW(_to_copy), FOLLOW(sum_default),
    FOLLOW(sum_dim_IntList), FOLLOW(mean_default), FOLLOW(mean_dim), FOLLOW(cat),
    FOLLOW(slice_Tensor), FOLLOW(slice_backward), FOLLOW(split_Tensor), FOLLOW(split_with_sizes),
    FOLLOW(_log_softmax_backward_data), FOLLOW(constant_pad_nd),
    {EG_OP_expand, LC_FOLLOW4, -1, NULL, 0, -1, NULL},
    /* either order in, traced out */
    {EG_OP_permute, LC_ANY_IN, -1, NULL, 0, -1, NULL},
    {EG_OP_t, LC_ANY_IN, -1, NULL, 0, -1, NULL},
};
#undef FOLLOW

static const lrule nchw_only = {EG_OP_COUNT, LC_TRACED, -1, NULL, 0, -1, NULL};

/* The rule of node n's op (NCHW-only without a row). */
static const lrule *rule_of(const eg_node *n) {
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (rules[i].op == n->op) return &rules[i];
  return &nchw_only;
}

/* ---- state ---- */

typedef struct extra {
  eg_node node;
  int32_t after;       /* the node it follows (-1: before every node) */
} extra;

typedef struct layout {
  eg_graph *g;
  const eg_partition_options *opt;
  int32_t n_orig;      /* values of the graph before the pass */
  int32_t cap_values;
  bool *decided;       /* per value: its order is fixed */
  int32_t *conv;       /* per original value: its conversion's value, -1 none */
  extra *extras;       /* the conversions, in the order they were made */
  int32_t n_extras;
} layout;

static eg_status nomem(void) { return eg_error(EG_ERR_NOMEM, "layout_nhwc: out of memory"); }

static bool is_rank4(const eg_graph *g, int32_t id) {
  return id >= 0 && g->values[id].kind == EG_VALUE_TENSOR && g->values[id].rank == 4;
}

/* ---- tuples ---- */

static eg_status check_tuple_use(const eg_graph *g, const eg_node *n, const eg_arg *a) {
  if (a->kind == EG_ARG_LIST) {
    for (int32_t i = 0; i < a->list.n; i++) EG_TRY(check_tuple_use(g, n, &a->list.items[i]));
    return EG_OK;
  }
  if (a->kind != EG_ARG_VALUE || a->value < 0 || a->value >= g->n_values ||
      g->values[a->value].kind != EG_VALUE_TUPLE || n->op == EG_OP_getitem)
    return EG_OK;
  return eg_node_error(n, EG_ERR_INVALID, "reads tuple %s but is %s: only getitem takes a tuple "
                       "(layout_nhwc lays tuples out element by element)",
                       eg_value_label(g, a->value), eg_op_target(n->op));
}

/* Only getitem reads tuples, and each getitem names an element that exists. */
static eg_status check_tuples(const eg_graph *g) {
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    for (int32_t a = 0; a < n->n_args + n->n_kwargs; a++)
      EG_TRY(check_tuple_use(g, n, a < n->n_args ? &n->args[a] : &n->kwargs[a - n->n_args]));
    if (n->op != EG_OP_getitem) continue;
    const eg_arg *t = eg_node_arg(n, 0, NULL), *idx = eg_node_arg(n, 1, NULL);
    if (!t || t->kind != EG_ARG_VALUE || t->value < 0 || t->value >= g->n_values ||
        g->values[t->value].kind != EG_VALUE_TUPLE)
      return eg_node_error(n, EG_ERR_INVALID, "argument #0 is not a tuple: getitem picks an "
                           "element of a tuple");
    const eg_value *tv = &g->values[t->value];
    if (!idx || idx->kind != EG_ARG_INT || idx->i < 0 || idx->i >= tv->n_elems)
      return eg_node_error(n, EG_ERR_INVALID, "index %lld out of range [0, %d) of tuple %s",
                           idx && idx->kind == EG_ARG_INT ? (long long)idx->i : -1LL,
                           (int)tv->n_elems, eg_value_label(g, t->value));
  }
  return EG_OK;
}

/* The element getitem node n names (-1: None). */
static int32_t getitem_elem(const eg_graph *g, const eg_node *n) {
  const eg_value *t = &g->values[eg_node_arg(n, 0, NULL)->value];
  return t->elems[eg_node_arg(n, 1, NULL)->i];
}

/* ---- conversions ---- */

/* A name taken by a conversion made so far (not yet in g->nodes). */
static bool extra_named(const void *ctx, const char *name) {
  const layout *s = ctx;
  for (int32_t i = 0; i < s->n_extras; i++)
    if (strcmp(s->extras[i].node.name, name) == 0) return true;
  return false;
}

static const char *fresh_name(layout *s, const char *base, const char *suffix) {
  return eg_graph_fresh_name(s->g, base, suffix, NULL, extra_named, s);
}

/* The quantization attributes a conversion of `id` carries: the value's own, or for a getitem's
 * result without any, those of the element it names (never element 0's). */
static const eg_quant *quant_of(const eg_graph *g, int32_t id) {
  const eg_value *v = &g->values[id];
  if (v->quant || v->role != EG_ROLE_NODE || g->nodes[v->def].op != EG_OP_getitem) return v->quant;
  const int32_t elem = getitem_elem(g, &g->nodes[v->def]);
  return elem >= 0 ? g->values[elem].quant : NULL;
}

/* The conversion node the NPU must accept: asks the question the partitioner asks. */
static eg_status check_lowerable(const layout *s, const eg_node *c, const eg_node *user) {
  char reason[256];
  if (eg_place_node(s->opt, s->g, c, reason, sizeof reason)) return EG_OK;
  return eg_node_error(user, EG_ERR_UNSUPPORTED, "needs %s in the other axis order, and the "
                       "NPU cannot convert it: %s", eg_value_label(s->g, c->args[0].value),
                       reason);
}

/* The value holding `id` in the other order, made on first use by node `user`. */
static eg_status conversion(layout *s, const eg_node *user, int32_t id, int32_t *out) {
  eg_graph *g = s->g;
  if (s->conv[id] >= 0) {
    *out = s->conv[id];
    return EG_OK;
  }
  EG_ASSERT(g->n_values < s->cap_values);
  const eg_value *v = &g->values[id];
  const bool to_nhwc = v->axes != EG_AXES_NHWC;
  const int32_t c = g->n_values++;
  eg_value *cv = &g->values[c];
  *cv = (eg_value){.kind = EG_VALUE_TENSOR, .dtype = v->dtype, .rank = v->rank,
                   .axes = to_nhwc ? EG_AXES_NHWC : EG_AXES_TRACED, .npu_int32 = v->npu_int32,
                   .quant = quant_of(g, id), .role = EG_ROLE_NODE};
  memcpy(cv->shape, v->shape, sizeof cv->shape);
  s->decided[c] = true;
  extra *e = &s->extras[s->n_extras];
  memset(e, 0, sizeof *e);
  e->after = v->role == EG_ROLE_NODE ? v->def : -1;
  eg_node *n = &e->node;
  n->name = fresh_name(s, eg_value_label(g, id), to_nhwc ? "_nhwc" : "_nchw");
  n->source = user->source ? user->source : user->name;
  n->op = EG_OP_clone;
  n->output = c;
  n->n_args = 1;
  n->n_kwargs = 1;
  n->args = eg_arena_array(g->arena, 1, sizeof(eg_arg));
  n->kwargs = eg_arena_array(g->arena, 1, sizeof(eg_arg));
  n->kwarg_names = eg_arena_array(g->arena, 1, sizeof(char *));
  if (!n->name || !n->args || !n->kwargs || !n->kwarg_names) return nomem();
  n->args[0] = (eg_arg){.kind = EG_ARG_VALUE, .value = id};
  n->kwarg_names[0] = "memory_format";
  n->kwargs[0] = (eg_arg){.kind = EG_ARG_MEMORY_FORMAT,
                          .str = to_nhwc ? "channels_last" : "contiguous_format"};
  EG_TRY(check_lowerable(s, n, user));
  n->place = EG_PLACE_NPU;
  s->n_extras++;
  s->conv[id] = c;
  *out = c;
  return EG_OK;
}

/* Node `user` reads argument `a` in order `want`: a free value takes it; a value in the other
 * order is replaced by its conversion. Ranks other than 4 have no order. */
static eg_status require(layout *s, const eg_node *user, eg_arg *a, eg_axis_order want) {
  if (a->kind != EG_ARG_VALUE || !is_rank4(s->g, a->value)) return EG_OK;
  eg_value *v = &s->g->values[a->value];
  if (!s->decided[a->value]) {
    v->axes = want;
    s->decided[a->value] = true;
    return EG_OK;
  }
  return v->axes == want ? EG_OK : conversion(s, user, a->value, &a->value);
}

/* ---- argument walks ---- */

typedef eg_status (*arg_fn)(layout *s, const eg_node *n, eg_arg *a, eg_axis_order want);

/* Applies f to every value argument of n (list items included). */
static eg_status each_arg(layout *s, eg_node *n, arg_fn f, eg_axis_order want) {
  for (int32_t k = 0; k < n->n_args + n->n_kwargs; k++) {
    eg_arg *a = k < n->n_args ? &n->args[k] : &n->kwargs[k - n->n_args];
    if (a->kind != EG_ARG_LIST) {
      EG_TRY(f(s, n, a, want));
      continue;
    }
    for (int32_t i = 0; i < a->list.n; i++) EG_TRY(f(s, n, &a->list.items[i], want));
  }
  return EG_OK;
}

/* The argument at position pos or keyword kw, or NULL. */
static eg_arg *arg_at(eg_node *n, int pos, const char *kw) {
  if (pos >= 0 && pos < n->n_args) return &n->args[pos];
  for (int32_t k = 0; kw && k < n->n_kwargs; k++)
    if (strcmp(n->kwarg_names[k], kw) == 0) return &n->kwargs[k];
  return NULL;
}

/* FOLLOW's vote: bit 0 a decided NHWC argument, bit 1 a decided traced one, bit 2 a free one. */
static int vote_of(const layout *s, int32_t id) {
  if (!is_rank4(s->g, id)) return 0;
  if (!s->decided[id]) return 4;
  return s->g->values[id].axes == EG_AXES_NHWC ? 1 : 2;
}

static eg_axis_order follow_order(const layout *s, const eg_node *n) {
  int votes = 0;
  for (int32_t k = 0; k < n->n_args + n->n_kwargs; k++) {
    const eg_arg *a = k < n->n_args ? &n->args[k] : &n->kwargs[k - n->n_args];
    if (a->kind == EG_ARG_VALUE) votes |= vote_of(s, a->value);
    for (int32_t i = 0; a->kind == EG_ARG_LIST && i < a->list.n; i++)
      if (a->list.items[i].kind == EG_ARG_VALUE) votes |= vote_of(s, a->list.items[i].value);
  }
  if (votes & 1) return EG_AXES_NHWC;
  if (votes & 2) return EG_AXES_TRACED;
  return votes ? EG_AXES_NHWC : EG_AXES_TRACED;
}

/* Fixes the order of a value node n defines. */
static void define_value(layout *s, int32_t id, eg_axis_order axes) {
  if (id < 0) return;
  s->g->values[id].axes = is_rank4(s->g, id) ? axes : EG_AXES_TRACED;
  s->decided[id] = true;
}

/* ANY_IN: a free argument takes the traced order; a decided one is read as it is. */
static eg_status settle_free(layout *s, const eg_node *n, eg_arg *a, eg_axis_order want) {
  (void)n;
  if (a->kind == EG_ARG_VALUE && is_rank4(s->g, a->value) && !s->decided[a->value]) {
    s->g->values[a->value].axes = want;
    s->decided[a->value] = true;
  }
  return EG_OK;
}

/* Lays out NPU node n: its arguments (converting where needed) and its results. */
static eg_status lay_out(layout *s, eg_node *n) {
  eg_graph *g = s->g;
  if (n->op == EG_OP_getitem) {
    if (n->output < 0) return EG_OK;
    const int32_t elem = getitem_elem(g, n);
    define_value(s, n->output, g->values[elem].axes);
    return EG_OK;
  }
  const lrule *r = rule_of(n);
  eg_axis_order out = EG_AXES_TRACED;
  switch (r->cls) {
  case LC_NHWC: {
    eg_arg *a = arg_at(n, r->act_pos, r->act_kw);
    if (a) EG_TRY(require(s, n, a, EG_AXES_NHWC));
    eg_arg *a2 = r->act2_kw ? arg_at(n, r->act2_pos, r->act2_kw) : NULL;
    if (a2) EG_TRY(require(s, n, a2, EG_AXES_NHWC));
    out = EG_AXES_NHWC;
    break;
  }
  case LC_FOLLOW4:
    if (n->n_args > 0 && n->args[0].kind == EG_ARG_VALUE && is_rank4(g, n->args[0].value) &&
        n->output >= 0 && is_rank4(g, n->output)) {
      out = follow_order(s, n);
      EG_TRY(each_arg(s, n, require, out));
    } else {
      EG_TRY(each_arg(s, n, require, EG_AXES_TRACED));
    }
    break;
  case LC_FOLLOW:
    out = follow_order(s, n);
    EG_TRY(each_arg(s, n, require, out));
    break;
  case LC_ANY_IN: EG_TRY(each_arg(s, n, settle_free, EG_AXES_TRACED)); break;
  case LC_TRACED: EG_TRY(each_arg(s, n, require, EG_AXES_TRACED)); break;
  }
  if (n->output < 0) return EG_OK;
  const eg_value *o = &g->values[n->output];
  if (o->kind == EG_VALUE_TENSOR) {
    define_value(s, n->output, out);
    return EG_OK;
  }
  for (int32_t e = 0; e < o->n_elems; e++) { /* element by element; None elements skipped */
    eg_axis_order ax = r->cls == LC_NHWC && (r->elems >> e & 1u) ? EG_AXES_NHWC : EG_AXES_TRACED;
    if (r->cls == LC_FOLLOW) ax = out; /* a split's pieces: each in its input's order */
    define_value(s, o->elems[e], ax);
  }
  return EG_OK;
}

/* ---- the pass ---- */

/* The node list with each conversion right after its value's definition. */
static eg_status insert_extras(layout *s) {
  eg_graph *g = s->g;
  eg_node *nodes = eg_arena_array(g->arena, (size_t)(g->n_nodes + s->n_extras) + 1,
                                  sizeof(eg_node));
  if (!nodes) return nomem();
  int32_t k = 0;
  for (int32_t i = -1; i < g->n_nodes; i++) {
    if (i >= 0) nodes[k++] = g->nodes[i];
    for (int32_t e = 0; e < s->n_extras; e++)
      if (s->extras[e].after == i) nodes[k++] = s->extras[e].node;
  }
  g->nodes = nodes;
  g->n_nodes = k;
  /* the graph is whole again: refresh roles, defs and attrs for the passes after this one */
  return eg_graph_verify(g);
}

static eg_status run(layout *s) {
  eg_graph *g = s->g;
  s->n_orig = g->n_values;
  s->cap_values = 2 * g->n_values;
  eg_value *values = eg_arena_array(g->arena, (size_t)s->cap_values + 1, sizeof(eg_value));
  s->decided = calloc((size_t)s->cap_values + 1, sizeof(bool));
  s->conv = malloc(((size_t)s->n_orig + 1) * sizeof(int32_t));
  s->extras = calloc((size_t)s->n_orig + 1, sizeof(extra));
  if (!values || !s->decided || !s->conv || !s->extras) return nomem();
  memcpy(values, g->values, (size_t)g->n_values * sizeof *values);
  g->values = values;
  for (int32_t v = 0; v < s->n_orig; v++) {
    s->conv[v] = -1;
    g->values[v].axes = EG_AXES_TRACED; /* this pass alone sets the field */
  }
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].place == EG_PLACE_NPU) EG_TRY(lay_out(s, &g->nodes[i]));
  return s->n_extras ? insert_extras(s) : EG_OK;
}

eg_status eg_pass_layout_nhwc(eg_graph *g, const eg_partition_options *opt) {
  EG_TRY(check_tuples(g));
  /* the placement needs fresh roles and defs (a pass before may have left them stale) */
  EG_TRY(eg_graph_verify(g));
  layout s = {.g = g, .opt = opt};
  eg_status st = run(&s);
  free(s.decided);
  free(s.conv);
  free(s.extras);
  return st;
}
