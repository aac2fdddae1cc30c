/* test_htp_conv.c — structure of the convolution builders' NPU graphs (builders/conv.c).
 *
 * Fixtures (tests/data/make_npu_fixtures.py): npu_conv_fwd (a conv), npu_conv_pair (the conv
 * and a convolution_backward [T,F,T] of the same weight reading its output: one partition),
 * npu_conv_bwd (a convolution_backward [T,F,F] alone), npu_conv_step (a frozen-backbone
 * training step; its [*,F,T] backwards carry the grad_weight element PyTorch 1.13 traces) and
 * npu_conv_step_nogw (the same step without those elements). Each is compiled with
 * eg_program_build (passes + partition + lower) and its QNN graphs are inspected: op types and
 * params,
 * the one STATIC filter shared by Conv2d and the backward's Transpose, the unused forward
 * input never becoming a partition input, the tuple elements' tensors, and the decline
 * reasons. Numerics are tests/ops/test_npu_conv.py's. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backends/htp/compile/lower.h"
#include "eg_test.h"
#include "eg_test_graph.h"
#include "compiler/frontend/frontend.h"
#include "backends/htp/compile/npu_ops.h"
#include "compiler/compile.h"
#include "compiler/egp_write.h"
#include "program/program.h"
#include "util/error.h"

/* ---- helpers ---- */

static int count_ops(const eg_htp_qnn_graph *qg, eg_htp_qnn_op type) {
  int k = 0;
  for (int32_t i = 0; i < eg_htp_qnn_graph_num_ops(qg); i++) k += eg_htp_qnn_graph_op(qg, i)->type == type;
  return k;
}

/* The first op of this type, or NULL. */
static const eg_htp_qnn_op_node *find_op(const eg_htp_qnn_graph *qg, eg_htp_qnn_op type) {
  for (int32_t i = 0; i < eg_htp_qnn_graph_num_ops(qg); i++)
    if (eg_htp_qnn_graph_op(qg, i)->type == type) return eg_htp_qnn_graph_op(qg, i);
  return NULL;
}

/* The op writing tensor `t`, or NULL. */
static const eg_htp_qnn_op_node *producer(const eg_htp_qnn_graph *qg, int32_t t) {
  const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(qg, t);
  return x && x->producer >= 0 ? eg_htp_qnn_graph_op(qg, x->producer) : NULL;
}

static bool dims_are(const eg_htp_qnn_tensor *t, int rank, const uint32_t *dims) {
  if (!t || t->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (t->dims[i] != dims[i]) return false;
  return true;
}

static bool param_is(const eg_htp_qnn_op_node *op, const char *name, int n, const uint32_t *vals) {
  const eg_htp_qnn_param *p = eg_htp_qnn_op_param(op, name);
  if (!p || p->n_values != n) return false;
  for (int i = 0; i < n; i++)
    if (p->values.u32[i] != vals[i]) return false;
  return true;
}

static int count_static(const eg_htp_qnn_graph *qg, size_t *bytes) {
  int k = 0;
  for (int32_t i = 0; i < eg_htp_qnn_graph_num_tensors(qg); i++) {
    const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(qg, i);
    if (t->type != EG_HTP_QNN_TENSOR_STATIC) continue;
    k++;
    if (bytes) *bytes += t->nbytes;
  }
  return k;
}

/* STATIC bytes of every lowered partition of the program. */
static size_t program_static_bytes(const eg_program *p) {
  size_t bytes = 0;
  for (int32_t k = 0; k < p->parts.n_partitions; k++) count_static(p->lowered[k].graph, &bytes);
  return bytes;
}

static bool is_boundary_input(const eg_lowered *hp, int32_t value) {
  for (int32_t k = 0; k < hp->n_inputs; k++)
    if (hp->inputs[k].value == value) return true;
  return false;
}

/* The boundary output of IR value `value`, or NULL. */
static const eg_boundary *boundary_output(const eg_lowered *hp, int32_t value) {
  for (int32_t k = 0; k < hp->n_outputs; k++)
    if (hp->outputs[k].value == value) return &hp->outputs[k];
  return NULL;
}

/* Does any node of partition p other than `skip` take `value` as an argument? */
static bool read_by_other(const eg_graph *g, const eg_partitioning *parts, int32_t p,
                          int32_t skip, int32_t value) {
  for (int32_t k = 0; k < parts->partitions[p].n_nodes; k++) {
    const int32_t i = parts->partitions[p].nodes[k];
    if (i == skip) continue;
    for (int32_t a = 0; a < g->nodes[i].n_args; a++) {
      const eg_arg *arg = &g->nodes[i].args[a];
      if (arg->kind == EG_ARG_VALUE && arg->value == value) return true;
      for (int32_t e = 0; arg->kind == EG_ARG_LIST && e < arg->list.n; e++)
        if (arg->list.items[e].kind == EG_ARG_VALUE && arg->list.items[e].value == value)
          return true;
    }
  }
  return false;
}

/* The value a getitem of node `name`'s element `index` defines (-1 if none). */
static int32_t getitem_value(const eg_graph *g, const char *name, int64_t index) {
  const int32_t tuple = g->nodes[eg_test_node_named(g, name)].output;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->op == EG_OP_getitem && eg_node_arg(n, 0, NULL)->value == tuple &&
        eg_node_arg(n, 1, NULL)->i == index)
      return n->output;
  }
  return -1;
}

/* Checks the composite's Transpose -> TransposeConv2d chain writing grad_input tensor `gx`:
 * Transpose(perm [0,1,3,2]) of a STATIC HWIO filter into a NATIVE HWOI tensor, read by the
 * TransposeConv2d. Returns the STATIC filter's id (-1 on failure). */
static int32_t check_composite(const eg_htp_qnn_graph *qg, int32_t gx, const uint32_t out_pad[2]) {
  const eg_htp_qnn_op_node *tc = producer(qg, gx);
  EG_CHECK(tc && tc->type == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D);
  if (!tc || tc->type != EG_HTP_QNN_OP_TRANSPOSE_CONV_2D) return -1;
  EG_CHECK(tc->n_inputs == 2); /* no bias */
  const eg_htp_qnn_op_node *tr = producer(qg, tc->inputs[1]);
  EG_CHECK(tr && tr->type == EG_HTP_QNN_OP_TRANSPOSE);
  if (!tr || tr->type != EG_HTP_QNN_OP_TRANSPOSE) return -1;
  static const uint32_t perm[4] = {0, 1, 3, 2};
  EG_CHECK(param_is(tr, "perm", 4, perm));
  const eg_htp_qnn_tensor *hwio = eg_htp_qnn_graph_tensor(qg, tr->inputs[0]);
  const eg_htp_qnn_tensor *hwoi = eg_htp_qnn_graph_tensor(qg, tc->inputs[1]);
  EG_CHECK(hwio->type == EG_HTP_QNN_TENSOR_STATIC && hwoi->type == EG_HTP_QNN_TENSOR_NATIVE);
  const uint32_t want[4] = {hwio->dims[0], hwio->dims[1], hwio->dims[3], hwio->dims[2]};
  EG_CHECK(dims_are(hwoi, 4, want));
  EG_CHECK(strstr(hwio->name, "_hwio") != NULL);
  EG_CHECK(tc->attrs.conv.group == 1);
  EG_CHECK(param_is(tc, "output_padding", 2, out_pad));
  EG_CHECK(tc->attrs.conv.output_padding[0] == out_pad[0] &&
           tc->attrs.conv.output_padding[1] == out_pad[1]);
  return tr->inputs[0];
}

/* ---- one partition: forward Conv2d + backward composite share the filter ---- */

static void test_pair_shares_the_filter(void) {
  eg_graph *g = eg_test_fixture("npu_conv_pair");
  eg_program p;
  if (!g || !eg_test_build(g, "SM8650", &p)) goto done;
  const eg_graph *cg = p.graph; /* placement and lowering index the compiled graph */
  EG_CHECK(p.parts.n_partitions == 1);
  for (int32_t i = 0; i < cg->n_nodes; i++)
    EG_CHECK_MSG(p.parts.nodes[i].npu, "%s: %s", cg->nodes[i].name, p.parts.nodes[i].reason);
  const eg_lowered *hp = &p.lowered[0];
  const eg_htp_qnn_graph *qg = hp->graph;
  EG_CHECK(eg_htp_qnn_graph_num_ops(qg) == 4);
  EG_CHECK(count_ops(qg, EG_HTP_QNN_OP_CONV_2D) == 1 && count_ops(qg, EG_HTP_QNN_OP_TRANSPOSE) == 1 &&
           count_ops(qg, EG_HTP_QNN_OP_TRANSPOSE_CONV_2D) == 1 &&
           count_ops(qg, EG_HTP_QNN_OP_REDUCE_SUM) == 1);
  const eg_htp_qnn_op_node *conv = find_op(qg, EG_HTP_QNN_OP_CONV_2D);
  const eg_htp_qnn_op_node *tr = find_op(qg, EG_HTP_QNN_OP_TRANSPOSE);
  const eg_htp_qnn_op_node *tc = find_op(qg, EG_HTP_QNN_OP_TRANSPOSE_CONV_2D);
  const eg_htp_qnn_op_node *rs = find_op(qg, EG_HTP_QNN_OP_REDUCE_SUM);
  if (!conv || !tr || !tc || !rs) goto free_prog;

  /* forward: Conv2d(x, W_hwio [3,3,3,5], b) stride 2, pad [[1,1],[1,1]], group 1 */
  static const uint32_t hwio[4] = {3, 3, 3, 5}, s2[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
  const eg_htp_qnn_tensor *f = eg_htp_qnn_graph_tensor(qg, conv->inputs[1]);
  EG_CHECK(f->type == EG_HTP_QNN_TENSOR_STATIC && dims_are(f, 4, hwio));
  EG_CHECK(conv->n_inputs == 3 && param_is(conv, "stride", 2, s2) &&
           param_is(conv, "pad_amount", 4, pads) && conv->attrs.conv.group == 1);

  /* backward: the very same STATIC tensor feeds the Transpose; one STATIC per weight */
  EG_CHECK(tr->inputs[0] == conv->inputs[1]);
  static const uint32_t op01[2] = {0, 1}; /* H: 9-((5-1)*2-2+3) = 0; W: 8-((4-1)*2-2+3) = 1 */
  EG_CHECK(check_composite(qg, tc->outputs[0], op01) == conv->inputs[1]);
  EG_CHECK(count_static(qg, NULL) == 2); /* W_hwio and b: no second copy of W */
  EG_CHECK(tc->inputs[0] == conv->outputs[0]); /* grad_output is the forward's y */
  EG_CHECK(param_is(tc, "stride", 2, s2) && param_is(tc, "pad_amount", 4, pads));
  static const uint32_t x_nhwc[4] = {2, 9, 8, 3}, cout[1] = {5}, axes[3] = {0, 1, 2};
  EG_CHECK(dims_are(eg_htp_qnn_graph_tensor(qg, tc->outputs[0]), 4, x_nhwc));

  /* grad_bias: ReduceSum(grad_output NHWC, axes N,H,W) -> [Cout] */
  EG_CHECK(rs->inputs[0] == conv->outputs[0]);
  EG_CHECK(param_is(rs, "axes", 3, axes));
  EG_CHECK(dims_are(eg_htp_qnn_graph_tensor(qg, rs->outputs[0]), 1, cout));

  /* the tuple's getitems resolve to the right tensors: grad_input NHWC, grad_bias rank 1 */
  const eg_boundary *gx = boundary_output(hp, getitem_value(cg, "convolution_backward", 0));
  const eg_boundary *gb = boundary_output(hp, getitem_value(cg, "convolution_backward", 2));
  EG_CHECK(gx && gx->tensor == tc->outputs[0] && gx->nhwc);
  EG_CHECK(gb && gb->tensor == rs->outputs[0] && !gb->nhwc);
  EG_CHECK(eg_htp_qnn_graph_tensor(qg, tc->outputs[0])->type == EG_HTP_QNN_TENSOR_APP_READ);
  EG_CHECK(hp->n_inputs == 1); /* x, once: read by Conv2d, not by the backward */
free_prog:
  eg_program_free(&p);
done:
  eg_graph_destroy(g);
}

/* "One weight, one copy": the backward adds no STATIC byte to the forward's. */
static void test_backward_adds_no_static_bytes(void) {
  eg_graph *fwd = eg_test_fixture("npu_conv_fwd"), *pair = eg_test_fixture("npu_conv_pair");
  eg_program pf, pp;
  if (fwd && pair && eg_test_build(fwd, "SM8650", &pf)) {
    if (eg_test_build(pair, "SM8650", &pp)) {
      const size_t a = program_static_bytes(&pf), b = program_static_bytes(&pp);
      EG_CHECK_MSG(a == b, "forward only %zu STATIC bytes, with the backward %zu", a, b);
      EG_CHECK(a == (5 * 3 * 3 * 3 + 5) * sizeof(float));
      eg_program_free(&pp);
    }
    eg_program_free(&pf);
  }
  eg_graph_destroy(fwd);
  eg_graph_destroy(pair);
}

/* The forward input (argument 1) is not read: no tensor, not a boundary input. */
static void test_backward_does_not_read_input(void) {
  eg_graph *g = eg_test_fixture("npu_conv_bwd");
  eg_program p;
  if (!g || !eg_test_build(g, "SM8650", &p)) goto done;
  EG_CHECK(p.parts.n_partitions == 1);
  const eg_graph *cg = p.graph; /* boundary value ids are the compiled graph's */
  const eg_lowered *hp = &p.lowered[0];
  const eg_node *n = &cg->nodes[eg_test_node_named(cg, "convolution_backward")];
  const int32_t gy = eg_node_arg(n, 0, NULL)->value, x = eg_node_arg(n, 1, NULL)->value;
  EG_CHECK(hp->n_inputs == 1 && hp->inputs[0].value == gy && hp->inputs[0].nhwc);
  EG_CHECK(!is_boundary_input(hp, x));
  EG_CHECK(eg_htp_qnn_graph_find_tensor(hp->graph, "x") < 0);
  EG_CHECK(eg_htp_qnn_graph_num_ops(hp->graph) == 2 && count_static(hp->graph, NULL) == 1);
  static const uint32_t op[2] = {0, 1};
  const eg_boundary *gx = boundary_output(hp, getitem_value(cg, "convolution_backward", 0));
  EG_CHECK(gx && gx->nhwc);
  if (gx) {
    const int32_t w = check_composite(hp->graph, gx->tensor, op);
    EG_CHECK(w >= 0 && w == eg_htp_qnn_graph_find_key(hp->graph, eg_htp_qnn_key(
                               eg_node_arg(n, 2, NULL)->value, 1 + EG_HTP_FILTER_HWIO)));
  }
  eg_program_free(&p);
done:
  eg_graph_destroy(g);
}

/* ---- a frozen-backbone training step ---- */

/* Per conv backward of the step: the composite is where placement says, its filter is the
 * weight's one STATIC tensor of that partition (the forward Conv2d's when they share it), and
 * its forward input is a boundary input only if another node of the partition reads it. */
static void check_step_backward(const eg_graph *g, const eg_program *p, const char *name) {
  const int32_t i = eg_test_node_named(g, name);
  const eg_node *n = &g->nodes[i];
  const int32_t part = p->parts.nodes[i].partition;
  const eg_lowered *hp = &p->lowered[part];
  const int32_t x = eg_node_arg(n, 1, NULL)->value, w = eg_node_arg(n, 2, NULL)->value;
  const int32_t *el = g->values[n->output].elems;
  EG_CHECK_MSG(!is_boundary_input(hp, x) || read_by_other(g, &p->parts, part, i, x),
               "%s: its forward input is a partition input because of it", name);
  const int32_t filter = eg_htp_qnn_graph_find_key(hp->graph, eg_htp_qnn_key(w, 1 + EG_HTP_FILTER_HWIO));
  const eg_htp_qnn_graph *qg = hp->graph;
  if (el[0] >= 0) {
    /* eg_htp_define names an element's tensor "<node>_out<value id>" */
    char gx_name[160];
    snprintf(gx_name, sizeof gx_name, "%s_out%d", name, (int)el[0]);
    const int32_t gx = eg_htp_qnn_graph_find_tensor(qg, gx_name);
    const eg_htp_qnn_op_node *tc = gx >= 0 ? producer(qg, gx) : NULL;
    EG_CHECK_MSG(tc && tc->type == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, "%s: no TransposeConv2d", name);
    if (tc && tc->type == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D) {
      const uint32_t *op = tc->attrs.conv.output_padding;
      const uint32_t want[2] = {op[0], op[1]};
      EG_CHECK(check_composite(qg, gx, want) == filter && filter >= 0);
    }
  }
  /* a forward Conv2d of this weight in the same graph reads the very same tensor */
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(qg); k++) {
    const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(qg, k);
    if (op->type == EG_HTP_QNN_OP_CONV_2D &&
        (eg_htp_qnn_graph_tensor(qg, op->inputs[1])->key >> 16) == w)
      EG_CHECK(op->inputs[1] == filter);
  }
  /* one STATIC tensor per (weight, layout) key in each graph: no two with the weight's bytes */
  int with_w = 0;
  for (int32_t t = 0; t < eg_htp_qnn_graph_num_tensors(qg); t++) {
    const eg_htp_qnn_tensor *tt = eg_htp_qnn_graph_tensor(qg, t);
    with_w += tt->type == EG_HTP_QNN_TENSOR_STATIC && tt->key >= 0 && (tt->key >> 16) == w;
  }
  EG_CHECK(with_w <= 1);
}

static void test_training_step(void) {
  eg_graph *g = eg_test_fixture("npu_conv_step");
  if (!g) return;
  const char *npu_socs[] = {"SM8450", "SM8650", "SM8850"};
  for (int s = 0; s < 3; s++) {
    eg_program p;
    if (!eg_test_build(g, npu_socs[s], &p)) continue;
    const eg_graph *cg = p.graph; /* placement indexes the compiled graph */
    const char *fwd[] = {"convolution", "convolution_1", "convolution_2"};
    for (int k = 0; k < 3; k++)
      EG_CHECK_MSG(p.parts.nodes[eg_test_node_named(cg, fwd[k])].npu, "%s %s: %s", npu_socs[s], fwd[k],
                   p.parts.nodes[eg_test_node_named(cg, fwd[k])].reason);
    /* [T,F,F] lowers; the traced [T,F,T] / [F,F,T] carry a grad_weight element nothing reads
     * (the weights are frozen), which the NPU lowering skips: they lower too */
    const eg_node_placement *b0 = &p.parts.nodes[eg_test_node_named(cg, "convolution_backward")];
    const eg_node_placement *b1 = &p.parts.nodes[eg_test_node_named(cg, "convolution_backward_1")];
    const eg_node_placement *b2 = &p.parts.nodes[eg_test_node_named(cg, "convolution_backward_2")];
    EG_CHECK(b1->npu);
    EG_CHECK_MSG(b0->npu, "convolution_backward: %s", b0->reason);
    EG_CHECK_MSG(b2->npu, "convolution_backward_2: %s", b2->reason);
    if (b1->npu) check_step_backward(cg, &p, "convolution_backward_1");
    eg_program_free(&p);
  }
  /* V68: the partitioner's float gate, before the builders are asked */
  eg_program p;
  if (eg_test_build(g, "SM8350", &p)) {
    const eg_graph *cg = p.graph;
    int convs = 0;
    for (int32_t i = 0; i < cg->n_nodes; i++) {
      if (cg->nodes[i].op != EG_OP_convolution && cg->nodes[i].op != EG_OP_convolution_backward)
        continue;
      convs++;
      EG_CHECK_MSG(!p.parts.nodes[i].npu && strcmp(p.parts.nodes[i].reason, "float ops need HTP "
                   "V69+ with fp16; SM8350 is V68") == 0, "%s", cg->nodes[i].name);
    }
    EG_CHECK_MSG(convs == 6, "%d conv nodes", convs); /* 3 forward + 3 backward survive */
    eg_program_free(&p);
  }
  eg_graph_destroy(g);
}

/* Without the grad_weight elements every backward lowers; grad_bias is a ReduceSum. */
static void test_training_step_without_grad_weight(void) {
  eg_graph *g = eg_test_fixture("npu_conv_step_nogw");
  eg_program p;
  if (!g || !eg_test_build(g, "SM8650", &p)) goto done;
  const eg_graph *cg = p.graph; /* placement indexes the compiled graph */
  const char *bwd[] = {"convolution_backward", "convolution_backward_1",
                       "convolution_backward_2"};
  int reduce_sums = 0;
  for (int k = 0; k < 3; k++) {
    const int32_t i = eg_test_node_named(cg, bwd[k]);
    EG_CHECK_MSG(p.parts.nodes[i].npu, "%s: %s", bwd[k], p.parts.nodes[i].reason);
    if (!p.parts.nodes[i].npu) continue;
    check_step_backward(cg, &p, bwd[k]);
    const int32_t gb = cg->values[cg->nodes[i].output].elems[2];
    if (gb < 0) continue;
    const eg_lowered *hp = &p.lowered[p.parts.nodes[i].partition];
    const int32_t gb_item = getitem_value(cg, bwd[k], 2);
    const eg_boundary *o = boundary_output(hp, gb_item);
    EG_CHECK(o && !o->nhwc);
    if (!o) continue;
    const eg_htp_qnn_op_node *rs = producer(hp->graph, o->tensor);
    static const uint32_t axes[3] = {0, 1, 2};
    EG_CHECK(rs && rs->type == EG_HTP_QNN_OP_REDUCE_SUM && param_is(rs, "axes", 3, axes));
    EG_CHECK(eg_htp_qnn_graph_tensor(hp->graph, o->tensor)->rank == 1);
    reduce_sums += rs != NULL;
  }
  EG_CHECK(reduce_sums == 2); /* [T,F,T] and [F,F,T] */
  eg_program_free(&p);
done:
  eg_graph_destroy(g);
}

/* Across partitions: the forward Conv2d (before the CPU loss) and the backward composite
 * (after it) are separate QNN graphs, and each holds its own STATIC copy of a shared weight.
 * Sharing across graphs is the program's business (lower.c keys statics per graph); this
 * prints what it costs today and checks each graph holds a weight at most once. */
static void test_step_static_copies(void) {
  eg_graph *g = eg_test_fixture("npu_conv_step_nogw");
  eg_program p;
  if (!g || !eg_test_build(g, "SM8650", &p)) goto done;
  const eg_graph *cg = p.graph; /* tensor keys name the compiled graph's value ids */
  size_t once = 0, held = 0;
  for (int32_t s = 0; s < cg->n_statics; s++) {
    const int32_t w = cg->statics[s].value;
    int copies = 0;
    for (int32_t k = 0; k < p.parts.n_partitions; k++) {
      const eg_htp_qnn_graph *qg = p.lowered[k].graph;
      int here = 0;
      for (int32_t t = 0; t < eg_htp_qnn_graph_num_tensors(qg); t++) {
        const eg_htp_qnn_tensor *tt = eg_htp_qnn_graph_tensor(qg, t);
        here += tt->type == EG_HTP_QNN_TENSOR_STATIC && tt->key >= 0 && (tt->key >> 16) == w;
      }
      EG_CHECK(here <= 1);
      copies += here;
    }
    once += copies ? cg->statics[s].nbytes : 0;
    held += (size_t)copies * cg->statics[s].nbytes;
  }
  printf("note: npu_conv_step_nogw on SM8650: %zu bytes of frozen weights held as %zu STATIC "
         "bytes over %d partitions (forward and backward partitions each hold a copy)\n", once,
         held, (int)p.parts.n_partitions);
  eg_program_free(&p);
done:
  eg_graph_destroy(g);
}

/* ---- full training: trainable weights ---- */

/* Checks the grad_weight chain of backward `name` (weight of shape [Cout, ci, kH, kW]):
 * Transpose(perm [3,0,1,2]) into the traced grad_weight output, from a Conv2d (stride = the
 * forward dilation 1, dilation = the forward stride, group `groups`) or from a StridedSlice of
 * one when `cropped`, whose filter is the grad_output transposed to [Ho, Wo, N, Cout]. */
static void check_grad_weight(const eg_graph *g, const eg_program *p, const char *name,
                              uint32_t groups, bool cropped) {
  const int32_t i = eg_test_node_named(g, name);
  const eg_node *n = &g->nodes[i];
  const eg_lowered *hp = &p->lowered[p->parts.nodes[i].partition];
  const eg_htp_qnn_graph *qg = hp->graph;
  const int32_t gw_item = getitem_value(g, name, 1);
  const eg_boundary *o = boundary_output(hp, gw_item);
  EG_CHECK_MSG(o && !o->nhwc, "%s: grad_weight is not a traced partition output", name);
  if (!o) return;
  const eg_value *w = &g->values[eg_node_arg(n, 2, NULL)->value];
  const uint32_t oihw[4] = {(uint32_t)w->shape[0], (uint32_t)w->shape[1], (uint32_t)w->shape[2],
                            (uint32_t)w->shape[3]};
  EG_CHECK(dims_are(eg_htp_qnn_graph_tensor(qg, o->tensor), 4, oihw));
  const eg_htp_qnn_op_node *tr = producer(qg, o->tensor);
  static const uint32_t to_oihw[4] = {3, 0, 1, 2};
  EG_CHECK(tr && tr->type == EG_HTP_QNN_OP_TRANSPOSE && param_is(tr, "perm", 4, to_oihw));
  if (!tr) return;
  const eg_htp_qnn_op_node *conv = producer(qg, tr->inputs[0]);
  EG_CHECK_MSG(conv && conv->type == (cropped ? EG_HTP_QNN_OP_STRIDED_SLICE : EG_HTP_QNN_OP_CONV_2D),
               "%s: grad_weight from %s", name, conv ? eg_htp_qnn_op_name(conv->type) : "nothing");
  if (conv && cropped && conv->type == EG_HTP_QNN_OP_STRIDED_SLICE)
    conv = producer(qg, conv->inputs[0]);
  EG_CHECK(conv && conv->type == EG_HTP_QNN_OP_CONV_2D);
  if (!conv || conv->type != EG_HTP_QNN_OP_CONV_2D) return;
  int64_t stride[2];
  int n_stride;
  EG_CHECK(eg_arg_int_list(n, 4, "stride", stride, 1, 2, &n_stride) == EG_OK);
  EG_CHECK(conv->attrs.conv.group == groups && conv->attrs.conv.stride[0] == 1 &&
           conv->attrs.conv.dilation[0] == (uint32_t)stride[0] &&
           conv->attrs.conv.dilation[1] == (uint32_t)stride[n_stride - 1]);
  const eg_value *gy = &g->values[eg_node_arg(n, 0, NULL)->value];
  const uint32_t hwnc[4] = {(uint32_t)gy->shape[2], (uint32_t)gy->shape[3],
                            (uint32_t)gy->shape[0], (uint32_t)gy->shape[1]};
  EG_CHECK(dims_are(eg_htp_qnn_graph_tensor(qg, conv->inputs[1]), 4, hwnc));
}

/* Checks the grad_weight chain of 1x1 backward `name` (weight [Cout, ci, 1, 1], no padding,
 * grad_output [N, Cout, Ho, Wo]): a Reshape into the traced grad_weight output of a 1x1
 * Conv2d (stride 1, dilation 1, group 1) of grad_output as [1, 1, Cout, N*Ho*Wo] by the input's
 * pixels as the filter [1, 1, N*Ho*Wo, ci], a Reshape of the forward input (of a StridedSlice
 * of it where `strided`): no Transpose of the input nor of the result. */
static void check_grad_weight_1x1(const eg_graph *g, const eg_program *p, const char *name,
                                  bool strided) {
  const int32_t i = eg_test_node_named(g, name);
  const eg_node *n = &g->nodes[i];
  const eg_htp_qnn_graph *qg = p->lowered[p->parts.nodes[i].partition].graph;
  const eg_boundary *o = boundary_output(&p->lowered[p->parts.nodes[i].partition],
                                         getitem_value(g, name, 1));
  EG_CHECK_MSG(o && !o->nhwc, "%s: grad_weight is not a traced partition output", name);
  if (!o) return;
  const eg_value *w = &g->values[eg_node_arg(n, 2, NULL)->value];
  const eg_value *gy = &g->values[eg_node_arg(n, 0, NULL)->value];
  const uint32_t cout = (uint32_t)w->shape[0], ci = (uint32_t)w->shape[1],
                 m = (uint32_t)(gy->shape[0] * gy->shape[2] * gy->shape[3]);
  const eg_htp_qnn_op_node *rs = producer(qg, o->tensor);
  EG_CHECK(rs && rs->type == EG_HTP_QNN_OP_RESHAPE);
  if (!rs) return;
  const eg_htp_qnn_op_node *conv = producer(qg, rs->inputs[0]);
  EG_CHECK_MSG(conv && conv->type == EG_HTP_QNN_OP_CONV_2D, "%s: grad_weight from %s", name,
               conv ? eg_htp_qnn_op_name(conv->type) : "nothing");
  if (!conv || conv->type != EG_HTP_QNN_OP_CONV_2D) return;
  EG_CHECK(conv->attrs.conv.group == 1 && conv->attrs.conv.stride[0] == 1 &&
           conv->attrs.conv.stride[1] == 1 && conv->attrs.conv.dilation[0] == 1 &&
           conv->attrs.conv.dilation[1] == 1);
  const uint32_t in_dims[4] = {1, 1, cout, m}, f_dims[4] = {1, 1, m, ci};
  EG_CHECK(dims_are(eg_htp_qnn_graph_tensor(qg, conv->inputs[0]), 4, in_dims));
  EG_CHECK(dims_are(eg_htp_qnn_graph_tensor(qg, conv->inputs[1]), 4, f_dims));
  const eg_htp_qnn_op_node *xr = producer(qg, conv->inputs[1]);
  EG_CHECK(xr && xr->type == EG_HTP_QNN_OP_RESHAPE);
  const eg_htp_qnn_op_node *xs = xr ? producer(qg, xr->inputs[0]) : NULL;
  EG_CHECK_MSG(strided ? xs && xs->type == EG_HTP_QNN_OP_STRIDED_SLICE
                       : !xs || xs->type != EG_HTP_QNN_OP_STRIDED_SLICE,
               "%s: the input's pixels from %s", name, xs ? eg_htp_qnn_op_name(xs->type) : "outside");
}

/* Every parameter trainable: every convolution and convolution_backward on the NPU, each
 * weight a partition input (APP_WRITE, no STATIC copy anywhere), permuted inside the graph;
 * grad_weight by its Conv2d (grouped for the depthwise conv; for the 1x1 stride-2 one, the 1x1
 * form over the strided input's pixels), grad_input by a grouped TransposeConv2d over the weight transposed to HWOI. */
static void test_full_training(void) {
  eg_graph *g = eg_test_fixture("npu_conv_train");
  eg_program p;
  if (!g || !eg_test_build(g, "SM8650", &p)) goto done;
  const eg_graph *cg = p.graph;
  for (int32_t i = 0; i < cg->n_nodes; i++)
    if (cg->nodes[i].op == EG_OP_convolution || cg->nodes[i].op == EG_OP_convolution_backward)
      EG_CHECK_MSG(p.parts.nodes[i].npu, "%s: %s", cg->nodes[i].name, p.parts.nodes[i].reason);
  size_t ir_static = 0; /* STATIC bytes of IR values (constants a lowering makes have no key) */
  for (int32_t k = 0; k < p.parts.n_partitions; k++)
    for (int32_t t = 0; t < eg_htp_qnn_graph_num_tensors(p.lowered[k].graph); t++) {
      const eg_htp_qnn_tensor *tt = eg_htp_qnn_graph_tensor(p.lowered[k].graph, t);
      if (tt->type == EG_HTP_QNN_TENSOR_STATIC && tt->key != EG_HTP_QNN_KEY_NONE) ir_static += tt->nbytes;
    }
  EG_CHECK_MSG(ir_static < 64, "%zu bytes", ir_static); /* no weight is STATIC (scalars only) */
  for (int32_t k = 0; k < p.parts.n_partitions; k++)
    for (int32_t t = 0; t < eg_htp_qnn_graph_num_tensors(p.lowered[k].graph); t++) {
      const eg_htp_qnn_tensor *tt = eg_htp_qnn_graph_tensor(p.lowered[k].graph, t);
      EG_CHECK_MSG(tt->type != EG_HTP_QNN_TENSOR_STATIC || tt->rank < 4, "partition %d: %s",
                   (int)k, tt->name);
    }
  const char *weights[3] = {"0_weight", "2_weight", "4_weight"};
  for (int k = 0; k < 3; k++) {
    int32_t w = -1;
    for (int32_t j = 0; j < cg->n_inputs; j++)
      if (strcmp(cg->inputs[j].name, weights[k]) == 0) w = cg->inputs[j].value;
    int reading = 0; /* partitions taking it as an input */
    for (int32_t q = 0; w >= 0 && q < p.parts.n_partitions; q++)
      reading += is_boundary_input(&p.lowered[q], w);
    EG_CHECK_MSG(w >= 0 && reading >= 1, "%s: read by %d partitions", weights[k], reading);
  }
  check_grad_weight_1x1(cg, &p, "convolution_backward", true);   /* 1x1 stride 2, 4x4 input */
  check_grad_weight(cg, &p, "convolution_backward_1", 4, false); /* depthwise */
  check_grad_weight(cg, &p, "convolution_backward_2", 1, false); /* [F,T,T] */
  /* the depthwise grad_input: TransposeConv2d group 4 over [3, 3, 4, 1] */
  const int32_t i1 = eg_test_node_named(cg, "convolution_backward_1");
  const eg_htp_qnn_graph *qg = p.lowered[p.parts.nodes[i1].partition].graph;
  const eg_htp_qnn_op_node *tc = NULL;
  for (int32_t k = 0; k < eg_htp_qnn_graph_num_ops(qg); k++) {
    const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(qg, k);
    if (op->type == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D && strstr(op->name, "convolution_backward_1"))
      tc = op;
  }
  static const uint32_t hwoi[4] = {3, 3, 4, 1};
  EG_CHECK_MSG(tc && tc->attrs.conv.group == 4 &&
               dims_are(eg_htp_qnn_graph_tensor(qg, tc->inputs[1]), 4, hwoi), "%s group %u",
               tc ? tc->name : "no TransposeConv2d", tc ? tc->attrs.conv.group : 0);
  EG_CHECK(find_op(qg, EG_HTP_QNN_OP_DEPTH_WISE_CONV_2D) || p.parts.nodes[i1].partition !=
           p.parts.nodes[eg_test_node_named(cg, "convolution_1")].partition);
  eg_program_free(&p);
done:
  eg_graph_destroy(g);
}

/* ---- decline reasons, one per case, straight from supports() ---- */

static void check_reason(const eg_graph *g, const eg_node *n, const char *want) {
  char reason[512] = "";
  const eg_target *t = eg_target_find("SM8650");
  const bool ok = eg_htp_builder_convolution_backward.supports(g, n, t, reason, sizeof reason);
  if (!want) {
    EG_CHECK_MSG(ok, "declined: %s", reason);
  } else {
    EG_CHECK_MSG(!ok && strcmp(reason, want) == 0, "got %s, want %s", ok ? "(accepted)" : reason,
                 want);
  }
}

static void test_backward_reasons(void) {
  eg_graph *g = eg_test_fixture("npu_conv_bwd");
  if (!g) return;
  eg_node *n = &g->nodes[eg_test_node_named(g, "convolution_backward")];
  check_reason(g, n, NULL);
  /* the verified graph is edited in place, one attribute at a time, and restored */
  eg_arg *dil = &n->args[6], *groups = &n->args[9], *transposed = &n->args[7],
         *stride = &n->args[4];
  /* dilation 2 in H with one more padding row per side keeps every shape: grad_input through
   * the dilated kernel (dilate_filter); without that padding, output_padding -2 */
  dil->list.items[0].i = 2;
  check_reason(g, n, "output_padding -2 not in [0, 2)");
  n->args[5].list.items[0].i++;
  check_reason(g, n, NULL);
  n->args[5].list.items[0].i--;
  dil->list.items[0].i = 1;
  groups->i = 2; /* grouped: TransposeConv2d with group 2 */
  check_reason(g, n, NULL);
  groups->i = 1;
  transposed->b = true;
  check_reason(g, n, "transposed=True unsupported");
  transposed->b = false;
  stride->list.n = 1;
  check_reason(g, n, "stride [2] unsupported: the NPU lowering needs one value per spatial dim");
  stride->list.n = 2;
  eg_value *w = &g->values[n->args[2].value];
  w->role = EG_ROLE_INPUT; /* a trainable weight: Transpose inside the partition */
  check_reason(g, n, NULL);
  w->role = EG_ROLE_STATIC;
  /* input 3 rows taller than the conv's output explains: op = 12 - ((5-1)*2 - 2 + 3) = 3 */
  eg_value *x = &g->values[n->args[1].value];
  x->shape[2] += 3;
  check_reason(g, n, "output_padding 3 not in [0, 2)");
  x->shape[2] -= 3;
  /* a grad_weight element that is read, whatever the traced mask: point element 1 at
   * grad_input's value and the getitem of element 0 at index 1 */
  eg_value *tuple = &g->values[n->output];
  const int32_t gx = tuple->elems[0];
  eg_node *get0 = NULL;
  for (int32_t k = 0; k < g->n_nodes; k++)
    if (g->nodes[k].op == EG_OP_getitem && g->nodes[k].args[0].value == n->output &&
        g->nodes[k].args[1].i == 0)
      get0 = &g->nodes[k];
  EG_CHECK(get0 != NULL);
  tuple->elems[1] = gx;
  check_reason(g, n, NULL); /* present but unread: not computed, still lowered */
  if (get0) { /* read: computed by its Conv2d; with grad_input gone, dilation is fine too */
    get0->args[1].i = 1;
    check_reason(g, n, NULL);
    tuple->elems[0] = -1;
    dil->list.items[0].i = 2;
    /* the fixture's stride is 2: grad_weight's Conv2d would have stride and dilation > 1 */
    check_reason(g, n, "grad_weight with stride [2, 2] and dilation [2, 1]: its Conv2d would "
                       "have both > 1, which QNN HTP refuses for some shapes (measured)");
    stride->list.items[0].i = stride->list.items[1].i = 1;
    check_reason(g, n, NULL); /* dilation alone is fine */
    /* stride and dilation 1, the padding reaching grad_output's height: grad_weight's Conv2d
     * (grad_output as its kernel) pads through an explicit Pad (test_grad_weight_explicit_pad) */
    dil->list.items[0].i = 1;
    eg_arg *pad = &n->args[5];
    const int64_t ho = g->values[n->args[0].value].shape[2], pad0 = pad->list.items[0].i;
    pad->list.items[0].i = ho;
    check_reason(g, n, NULL);
    pad->list.items[0].i = pad0;
    stride->list.items[0].i = stride->list.items[1].i = 2;
    dil->list.items[0].i = 1;
    tuple->elems[0] = gx;
    get0->args[1].i = 0;
  }
  tuple->elems[1] = -1;
  tuple->elems[0] = -1;
  check_reason(g, n, "no gradient is computed (output_mask [True, False, False])");
  tuple->elems[0] = gx;
  check_reason(g, n, NULL);
  eg_graph_destroy(g);
}

/* Forward: the kind of QNN op by groups and transposed, and its declines. */
static void test_forward_kinds(void) {
  eg_graph *g = eg_test_fixture("npu_conv_fwd");
  if (!g) return;
  eg_node *n = &g->nodes[eg_test_node_named(g, "convolution")];
  const eg_target *t = eg_target_find("SM8650");
  char reason[512] = "";
  EG_CHECK(eg_htp_builder_convolution.supports(g, n, t, reason, sizeof reason));
  eg_value *w = &g->values[n->args[1].value];
  w->role = EG_ROLE_INPUT; /* trainable: accepted, unless it carries quantization encodings */
  EG_CHECK(eg_htp_builder_convolution.supports(g, n, t, reason, sizeof reason));
  eg_quant q = {0};
  w->quant = &q;
  EG_CHECK(!eg_htp_builder_convolution.supports(g, n, t, reason, sizeof reason) &&
           strcmp(reason, "weight is a runtime value with quantization encodings: the filter "
                          "permute inside the partition is float only") == 0);
  w->quant = NULL;
  w->role = EG_ROLE_STATIC;
  n->args[6].b = true; /* transposed, dilated */
  n->args[5].list.items[1].i = 3;
  EG_CHECK(!eg_htp_builder_convolution.supports(g, n, t, reason, sizeof reason) &&
           strcmp(reason, "dilation [1, 3] unsupported: TransposeConv2d has no dilation") == 0);
  n->args[5].list.items[1].i = 1;
  n->args[7].list.items[0].i = 2; /* output_padding 2 with stride 2 */
  EG_CHECK(!eg_htp_builder_convolution.supports(g, n, t, reason, sizeof reason) &&
           strcmp(reason, "output_padding 2 not in [0, 2)") == 0);
  n->args[7].list.items[0].i = 0;
  n->args[6].b = false;
  EG_CHECK(eg_htp_builder_convolution.supports(g, n, t, reason, sizeof reason));
  /* a padding as wide as the kernel at stride 1 (an explicit Pad: test_forward_explicit_pad)
   * is accepted, float; with a quantized input it is declined (the Pad is float only) */
  const int64_t kw = g->values[n->args[1].value].shape[3];
  eg_arg *stride = &n->args[3], *pad = &n->args[4];
  const int64_t pad1 = pad->list.items[1].i;
  pad->list.items[1].i = kw;
  stride->list.items[1].i = 1;
  EG_CHECK(eg_htp_builder_convolution.supports(g, n, t, reason, sizeof reason));
  eg_value *x = &g->values[n->args[0].value];
  x->quant = &q;
  EG_CHECK(!eg_htp_builder_convolution.supports(g, n, t, reason, sizeof reason) &&
           strcmp(reason, "quantized input with stride 1 and a padding that reaches the "
                          "kernel's width: QNN HTP computes such a Conv2d wrong (measured: "
                          "relative error 1-1e4) and the explicit Pad lowered instead is float "
                          "only") == 0);
  pad->list.items[1].i = kw - 1; /* below the kernel: pad_amount, quantized input accepted */
  EG_CHECK(eg_htp_builder_convolution.supports(g, n, t, reason, sizeof reason));
  x->quant = NULL;
  stride->list.items[1].i = 2;
  pad->list.items[1].i = pad1;

  eg_program p;
  if (eg_test_build(g, "SM8650", &p)) {
    const eg_htp_qnn_graph *qg = p.lowered[0].graph;
    EG_CHECK(eg_htp_qnn_graph_num_ops(qg) == 1 && count_ops(qg, EG_HTP_QNN_OP_CONV_2D) == 1);
    EG_CHECK(p.lowered[0].n_inputs == 1 && p.lowered[0].inputs[0].nhwc);
    eg_program_free(&p);
  }
  eg_graph_destroy(g);
}

/* A conv whose padding reaches its kernel: its own pad_amount is `kept`, it has no bias input,
 * and the one Pad reads its output: scheme CONSTANT, fill 0, pad_amount `pads` ([before,
 * after] per dim). Returns that Pad (NULL on failure). */
static const eg_htp_qnn_op_node *check_explicit_pad(const eg_htp_qnn_graph *qg,
                                                const eg_htp_qnn_op_node *conv,
                                                const uint32_t kept[4], const uint32_t pads[8]) {
  EG_CHECK(param_is(conv, "pad_amount", 4, kept) && conv->n_inputs == 2);
  const eg_htp_qnn_op_node *pad = find_op(qg, EG_HTP_QNN_OP_PAD);
  EG_CHECK_MSG(pad && pad->inputs[0] == conv->outputs[0], "%s: no Pad of its output",
               conv->name);
  if (!pad || pad->inputs[0] != conv->outputs[0]) return NULL;
  const eg_htp_qnn_param *scheme = eg_htp_qnn_op_param(pad, "scheme");
  EG_CHECK(scheme && scheme->scalar.u32 == 0 && pad->attrs.pad.value == 0.0f);
  EG_CHECK(param_is(pad, "pad_amount", 8, pads));
  return pad;
}

/* A stride-1 forward conv whose padding reaches its kernel (3x3, padding 3): QNN HTP computes
 * that pad_amount wrong, so the Conv2d keeps 2 (kernel - 1) per side, without the bias, and
 * the one output row/col per side the third adds (a window wholly in the padding) comes from a
 * Pad of its output, then the bias by an ElementWiseAdd writing the result; padding 2 stays
 * all in pad_amount, the bias in the Conv2d. */
static void test_forward_explicit_pad(void) {
  for (int64_t padding = 3; padding >= 2; padding--) {
    eg_graph *g = eg_test_fixture("npu_conv_fwd");
    if (!g) return;
    eg_node *n = &g->nodes[eg_test_node_named(g, "convolution")];
    const eg_value *x = &g->values[n->args[0].value];
    eg_value *y = &g->values[n->output];
    for (int d = 0; d < 2; d++) {
      n->args[3].list.items[d].i = 1;
      n->args[4].list.items[d].i = padding;
      y->shape[2 + d] = x->shape[2 + d] + 2 * padding - 3 + 1;
    }
    eg_program p;
    if (eg_test_build(g, "SM8650", &p)) {
      const eg_htp_qnn_graph *qg = p.lowered[0].graph;
      const eg_htp_qnn_op_node *conv = find_op(qg, EG_HTP_QNN_OP_CONV_2D);
      static const uint32_t pads[8] = {0, 0, 1, 1, 1, 1, 0, 0}, kept[4] = {2, 2, 2, 2};
      const uint32_t pp = (uint32_t)padding, attr_pads[4] = {pp, pp, pp, pp};
      EG_CHECK(conv != NULL && count_ops(qg, EG_HTP_QNN_OP_PAD) == (padding == 3));
      const eg_htp_qnn_op_node *pad = conv && padding == 3 ? check_explicit_pad(qg, conv, kept, pads)
                                                      : NULL;
      if (pad) {
        const eg_htp_qnn_op_node *add = find_op(qg, EG_HTP_QNN_OP_ELEMENT_WISE_ADD);
        const eg_boundary *o = boundary_output(&p.lowered[0], n->output);
        EG_CHECK(add && add->inputs[0] == pad->outputs[0] && o &&
                 add->outputs[0] == o->tensor);
      }
      if (conv && padding == 2)
        EG_CHECK(param_is(conv, "pad_amount", 4, attr_pads) && conv->n_inputs == 3);
      eg_program_free(&p);
    }
    eg_graph_destroy(g);
  }
}

/* grad_weight of a depthwise 5x5 conv with padding 2 on a 2x2 map (npu_conv_gw_pad): its Conv2d
 * has grad_output (2x2) as the kernel, so padding 2 reaches it: of pad_amount [2, 2] per dim (pad
 * after: 4 + 1 + 1 - 2 - 2 = 2) the Conv2d keeps [1, 1], yielding [1, 3, 3, 4], and a Pad of
 * [1, 1] rows and columns makes the 5x5 grad_weight (uncropped) of it. */
static void test_grad_weight_explicit_pad(void) {
  eg_graph *g = eg_test_fixture("npu_conv_gw_pad");
  eg_program p;
  if (!g || !eg_test_build(g, "SM8650", &p)) goto done;
  const int32_t i = eg_test_node_named(p.graph, "convolution_backward");
  EG_CHECK_MSG(p.parts.nodes[i].npu, "%s", p.parts.nodes[i].reason);
  if (p.parts.nodes[i].npu) {
    const eg_htp_qnn_graph *qg = p.lowered[p.parts.nodes[i].partition].graph;
    const eg_htp_qnn_op_node *conv = find_op(qg, EG_HTP_QNN_OP_CONV_2D);
    static const uint32_t pads[8] = {0, 0, 1, 1, 1, 1, 0, 0}, core[4] = {1, 3, 3, 4};
    static const uint32_t kept[4] = {1, 1, 1, 1};
    EG_CHECK(conv && count_ops(qg, EG_HTP_QNN_OP_PAD) == 1 && conv->attrs.conv.group == 4);
    const eg_htp_qnn_op_node *pad = conv ? check_explicit_pad(qg, conv, kept, pads) : NULL;
    EG_CHECK(conv && dims_are(eg_htp_qnn_graph_tensor(qg, conv->outputs[0]), 4, core));
    /* the padded Y [ci, kH, kW, Cout] is what the Transpose to [Cout, ci, kH, kW] reads */
    static const uint32_t y[4] = {1, 5, 5, 4}, to_oihw[4] = {3, 0, 1, 2};
    const eg_boundary *o = boundary_output(&p.lowered[p.parts.nodes[i].partition],
                                               getitem_value(p.graph, "convolution_backward", 1));
    const eg_htp_qnn_op_node *tr = o ? producer(qg, o->tensor) : NULL;
    EG_CHECK(pad && dims_are(eg_htp_qnn_graph_tensor(qg, pad->outputs[0]), 4, y) && tr &&
             tr->type == EG_HTP_QNN_OP_TRANSPOSE && param_is(tr, "perm", 4, to_oihw) &&
             tr->inputs[0] == pad->outputs[0]);
  }
  eg_program_free(&p);
done:
  eg_graph_destroy(g);
}

/* The op producing tensor `t`, checked to be of `type`; NULL (and a failed check) otherwise. */
static const eg_htp_qnn_op_node *producer_of_type(const eg_htp_qnn_graph *qg, int32_t t, eg_htp_qnn_op type) {
  const eg_htp_qnn_op_node *op = producer(qg, t);
  EG_CHECK_MSG(op && op->type == type, "%s: produced by %s, want %s",
               eg_htp_qnn_graph_tensor(qg, t)->name, op ? eg_htp_qnn_op_name(op->type) : "nothing",
               eg_htp_qnn_op_name(type));
  return op && op->type == type ? op : NULL;
}

/* grad_input of a depthwise 5x5 stride-2 conv (npu_conv_dw5_s2: gy [2, 4, 4, 5] NHWC, derived
 * output_padding 1 per dim), which QNN HTP computes wrong as a strided TransposeConv2d: gy with
 * a zero after every row and column ([2, 8, 10, 4]: Reshape, Pad, Reshape, Pad, Reshape), then
 * a stride-1 TransposeConv2d (group 4) with pad_amount [2, 2 + 2 - 1 - 1] and no
 * output_padding, over the forward's one STATIC depthwise filter. */
static void test_depthwise_wide_zero_insertion(void) {
  eg_graph *g = eg_test_fixture("npu_conv_dw5_s2");
  eg_program p;
  if (!g || !eg_test_build(g, "SM8650", &p)) goto done;
  const int32_t i = eg_test_node_named(p.graph, "convolution_backward");
  EG_CHECK_MSG(p.parts.nodes[i].npu, "%s", p.parts.nodes[i].reason);
  if (!p.parts.nodes[i].npu) goto free;
  const eg_htp_qnn_graph *qg = p.lowered[p.parts.nodes[i].partition].graph;
  const eg_htp_qnn_op_node *tc = find_op(qg, EG_HTP_QNN_OP_TRANSPOSE_CONV_2D);
  static const uint32_t one[2] = {1, 1}, zero[2] = {0, 0}, pads[4] = {2, 2, 2, 2};
  static const uint32_t inserted[4] = {2, 8, 10, 4}, rows_padded[4] = {8, 2, 20, 1};
  static const uint32_t cols_padded[4] = {16, 5, 2, 4};
  static const uint32_t pad_rows[8] = {0, 0, 0, 1, 0, 0, 0, 0};
  static const uint32_t pad_cols[8] = {0, 0, 0, 0, 0, 1, 0, 0};
  EG_CHECK(tc && tc->attrs.conv.group == 4 && param_is(tc, "stride", 2, one) &&
           param_is(tc, "pad_amount", 4, pads) && param_is(tc, "output_padding", 2, zero));
  EG_CHECK(count_ops(qg, EG_HTP_QNN_OP_PAD) == 2 && count_static(qg, NULL) == 1);
  if (!tc) goto free;
  EG_CHECK(dims_are(eg_htp_qnn_graph_tensor(qg, tc->inputs[0]), 4, inserted));
  const eg_htp_qnn_op_node *op = producer_of_type(qg, tc->inputs[0], EG_HTP_QNN_OP_RESHAPE);
  if (op) op = producer_of_type(qg, op->inputs[0], EG_HTP_QNN_OP_PAD);
  if (op) {
    EG_CHECK(param_is(op, "pad_amount", 8, pad_cols) &&
             dims_are(eg_htp_qnn_graph_tensor(qg, op->outputs[0]), 4, cols_padded));
    op = producer_of_type(qg, op->inputs[0], EG_HTP_QNN_OP_RESHAPE);
  }
  if (op) op = producer_of_type(qg, op->inputs[0], EG_HTP_QNN_OP_PAD);
  if (op) {
    EG_CHECK(param_is(op, "pad_amount", 8, pad_rows) &&
             dims_are(eg_htp_qnn_graph_tensor(qg, op->outputs[0]), 4, rows_padded));
    op = producer_of_type(qg, op->inputs[0], EG_HTP_QNN_OP_RESHAPE);
  }
  if (op) EG_CHECK(eg_htp_qnn_graph_tensor(qg, op->inputs[0])->type == EG_HTP_QNN_TENSOR_APP_WRITE);
free:
  eg_program_free(&p);
done:
  eg_graph_destroy(g);
}

int main(void) {
  EG_RUN(test_pair_shares_the_filter);
  EG_RUN(test_backward_adds_no_static_bytes);
  EG_RUN(test_backward_does_not_read_input);
  EG_RUN(test_training_step);
  EG_RUN(test_training_step_without_grad_weight);
  EG_RUN(test_full_training);
  EG_RUN(test_forward_explicit_pad);
  EG_RUN(test_grad_weight_explicit_pad);
  EG_RUN(test_depthwise_wide_zero_insertion);
  EG_RUN(test_step_static_copies);
  EG_RUN(test_backward_reasons);
  EG_RUN(test_forward_kinds);
  return eg_test_summary();
}
