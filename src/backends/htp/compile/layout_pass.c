/* layout_pass.c — the executor plan of a lowered partition (see layout_pass.h). */
#include "backends/htp/compile/layout_pass.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

typedef eg_htp_qnn_op_node op_t;

static const uint32_t swap_io[4] = {0, 1, 3, 2}, oihw_to_hwio[4] = {2, 3, 1, 0},
                      oihw_to_hwoi[4] = {2, 3, 0, 1}, hwio_to_oihw[4] = {3, 0, 1, 2};

static bool perm_is(const op_t *tr, const eg_htp_qnn_tensor *x, const uint32_t perm[4]) {
  return x->rank == 4 && !memcmp(tr->attrs.transpose.perm, perm, 4 * sizeof perm[0]);
}

static bool is_f32(const eg_htp_qnn_tensor *t, eg_htp_qnn_tensor_type type) {
  return t->type == type && t->dtype == EG_HTP_QNN_DTYPE_FLOAT_32;
}

static const eg_htp_qnn_tensor *in0(const eg_htp_qnn_graph *g, const op_t *op) {
  return eg_htp_qnn_graph_tensor(g, op->inputs[0]);
}

static const eg_htp_qnn_tensor *out0(const eg_htp_qnn_graph *g, const op_t *op) {
  return eg_htp_qnn_graph_tensor(g, op->outputs[0]);
}

/* Whether a Conv2d with these params can take its filter OIHW or write its output
 * transposed: groups 1 and not run by Winograd (which it would be where Winograd pays). */
static bool conv_takes_oihw(eg_conv2d_nhwc_params c) {
  c.winograd = eg_conv2d_nhwc_f32_winograd_pays(&c);
  return eg_conv2d_nhwc_f32_takes_oihw(&c);
}

/* Whether op r, reading a Transpose's output as input i, takes the weight behind it in the
 * form `read` (exec_plan.h): OI, a TransposeConv2d of group 1; OIHW, a Conv2d (conv) or a
 * TransposeConv2d (!conv) that takes it and has few pixels against its channels. */
static bool takes(const eg_htp_qnn_graph *g, const op_t *r, int32_t i, eg_htp_filter_read read,
                  bool conv) {
  if (i != 1) return false;
  if (read == EG_HTP_FILTER_READ_OI)
    return r->type == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D && r->attrs.conv.group == 1;
  if (conv) {
    if (r->type != EG_HTP_QNN_OP_CONV_2D) return false;
    const eg_conv2d_nhwc_params c = eg_htp_conv2d_params(g, r);
    return conv_takes_oihw(c) && c.n * c.h_out * c.w_out <= EG_HTP_OIHW_PIXELS_PER_C * c.c_out;
  }
  if (r->type != EG_HTP_QNN_OP_TRANSPOSE_CONV_2D) return false;
  const eg_transpose_conv2d_nhwc_params t = eg_htp_tconv2d_params(g, r);
  return eg_transpose_conv2d_nhwc_f32_takes_oihw(&t) &&
         t.n * t.h_in * t.w_in <= EG_HTP_OIHW_PIXELS_PER_C * t.c_in;
}

/* Transpose k's output read only as filters of ops that take the weight behind it as `read`:
 * k skipped, each reader reading the Transpose's input. No reader, or one that does not take
 * it: nothing changes. readers: per tensor, how many op inputs read it (the scans stop at the
 * last). */
static void redirect_filter(const eg_htp_qnn_graph *g, int32_t k, eg_htp_filter_read read,
                            bool conv, const int32_t *readers, eg_htp_exec_plan *plan) {
  const op_t *tr = eg_htp_qnn_graph_op(g, k);
  const int32_t y = tr->outputs[0], no = eg_htp_qnn_graph_num_ops(g);
  int32_t seen = 0, last = k;
  for (int32_t j = k + 1; j < no && seen < readers[y]; j++) {
    const op_t *r = eg_htp_qnn_graph_op(g, j);
    for (int32_t i = 0; i < r->n_inputs; i++) {
      if (r->inputs[i] != y) continue;
      if (!takes(g, r, i, read, conv)) return;
      seen++;
      last = j;
    }
  }
  if (seen == 0) return;
  plan->ops[k].how = EG_HTP_EXEC_SKIP;
  for (int32_t j = k + 1; j <= last; j++) {
    const op_t *r = eg_htp_qnn_graph_op(g, j);
    if (r->n_inputs < 2 || r->inputs[1] != y) continue;
    plan->ops[j].filter_src = tr->inputs[0];
    plan->ops[j].filter_read = (uint8_t)read;
  }
}

/* Transpose k [3,0,1,2] of a NATIVE float Conv2d output it alone reads: the Conv2d writes the
 * Transpose's output (y_dst) where it takes the mode. */
static void conv_writes_transposed(const eg_htp_qnn_graph *g, int32_t k, const int32_t *readers,
                                   eg_htp_exec_plan *plan) {
  const op_t *tr = eg_htp_qnn_graph_op(g, k);
  const eg_htp_qnn_tensor *x = in0(g, tr);
  if (!is_f32(x, EG_HTP_QNN_TENSOR_NATIVE) || readers[x->id] != 1 || x->producer < 0) return;
  const op_t *conv = eg_htp_qnn_graph_op(g, x->producer);
  if (conv->type != EG_HTP_QNN_OP_CONV_2D || !conv_takes_oihw(eg_htp_conv2d_params(g, conv)))
    return;
  plan->ops[k].how = EG_HTP_EXEC_SKIP;
  plan->ops[x->producer].y_dst = tr->outputs[0];
}

/* Op k's group (FUSED ops feeding it, through chains) back to RUN. */
static void unfuse(const eg_htp_qnn_graph *g, int32_t k, eg_htp_exec_plan *plan) {
  const op_t *op = eg_htp_qnn_graph_op(g, k);
  plan->ops[k].how = EG_HTP_EXEC_RUN;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const int32_t t = op->inputs[i] >= 0 ? eg_htp_qnn_graph_tensor(g, op->inputs[i])->producer : -1;
    if (t >= 0 && plan->ops[t].how == EG_HTP_EXEC_FUSED) unfuse(g, t, plan);
  }
}

/* Elementwise ops FUSED into their only readers (exec_plan.h): every candidate, then each
 * group whose tail does not fit the kernel (a mask output, a leaf it cannot read, too many ops
 * or leaves) run as it is. readers, reader_of: eg_htp_count_readers. */
static void fuse_elementwise(const eg_htp_qnn_graph *g, const int32_t *readers,
                             const int32_t *reader_of, eg_htp_exec_plan *plan) {
  const int32_t no = eg_htp_qnn_graph_num_ops(g);
  for (int32_t k = 0; k < no; k++) {
    int32_t r;
    if (plan->ops[k].how == EG_HTP_EXEC_RUN && eg_htp_fuse_candidate(g, k, readers, reader_of, &r))
      plan->ops[k].how = EG_HTP_EXEC_FUSED;
  }
  for (int32_t k = no - 1; k >= 0; k--) /* tails: last to first, a group's before its members */
    if (plan->ops[k].how == EG_HTP_EXEC_RUN && eg_htp_reads_fused(g, plan, k) &&
        !eg_htp_fused_group_fits(g, plan, k))
      unfuse(g, k, plan);
}

eg_status eg_htp_layout_pass(const eg_htp_qnn_graph *g, eg_htp_exec_plan *out) {
  const int32_t no = eg_htp_qnn_graph_num_ops(g), nt = eg_htp_qnn_graph_num_tensors(g);
  EG_TRY(eg_htp_exec_plan_init(out, no));
  int32_t *readers = calloc(2 * ((size_t)nt + 1), sizeof(int32_t)), *reader_of = readers + nt + 1;
  if (!readers) {
    eg_htp_exec_plan_free(out);
    return eg_error(EG_ERR_NOMEM, "layout pass %s: out of memory", eg_htp_qnn_graph_name(g));
  }
  eg_htp_count_readers(g, readers, reader_of);
  for (int32_t k = 0; k < no; k++) { /* folds first: a fold may read an earlier one */
    const op_t *tr = eg_htp_qnn_graph_op(g, k);
    if (tr->type != EG_HTP_QNN_OP_TRANSPOSE || !is_f32(out0(g, tr), EG_HTP_QNN_TENSOR_NATIVE))
      continue;
    const eg_htp_qnn_tensor *x = in0(g, tr);
    if (is_f32(x, EG_HTP_QNN_TENSOR_STATIC) ||
        (is_f32(x, EG_HTP_QNN_TENSOR_NATIVE) && x->producer >= 0 &&
         out->ops[x->producer].how == EG_HTP_EXEC_FOLD))
      out->ops[k].how = EG_HTP_EXEC_FOLD;
  }
  for (int32_t k = 0; k < no; k++) {
    const op_t *tr = eg_htp_qnn_graph_op(g, k);
    if (eg_htp_reshape_aliases(g, tr)) out->ops[k].how = EG_HTP_EXEC_ALIAS;
    if (tr->type != EG_HTP_QNN_OP_TRANSPOSE) continue;
    const eg_htp_qnn_tensor *x = in0(g, tr), *y = out0(g, tr);
    if (out->ops[k].how == EG_HTP_EXEC_FOLD) {
      if (is_f32(x, EG_HTP_QNN_TENSOR_STATIC) && perm_is(tr, x, swap_io))
        redirect_filter(g, k, EG_HTP_FILTER_READ_OI, false, readers, out);
    } else if (is_f32(x, EG_HTP_QNN_TENSOR_APP_WRITE) && is_f32(y, EG_HTP_QNN_TENSOR_NATIVE) &&
               (perm_is(tr, x, oihw_to_hwio) || perm_is(tr, x, oihw_to_hwoi))) {
      redirect_filter(g, k, EG_HTP_FILTER_READ_OIHW, perm_is(tr, x, oihw_to_hwio), readers,
                      out);
    } else if (perm_is(tr, x, hwio_to_oihw) && y->dtype == EG_HTP_QNN_DTYPE_FLOAT_32) {
      conv_writes_transposed(g, k, readers, out);
    }
  }
  fuse_elementwise(g, readers, reader_of, out);
  free(readers);
  return EG_OK;
}
