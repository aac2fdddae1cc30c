/* exec_plan.c — the executor plan's record and its rules (see exec_plan.h). */
#include "backends/htp/exec_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

eg_status eg_htp_exec_plan_init(eg_htp_exec_plan *p, int32_t n_ops) {
  p->n_ops = 0;
  p->ops = malloc(((size_t)n_ops + 1) * sizeof *p->ops);
  if (!p->ops) return eg_error(EG_ERR_NOMEM, "executor plan: out of memory (%d ops)", (int)n_ops);
  for (int32_t k = 0; k < n_ops; k++)
    p->ops[k] = (eg_htp_exec_op){.how = EG_HTP_EXEC_RUN, .filter_read = EG_HTP_FILTER_READ_AS_IS,
                                 .filter_src = -1, .y_dst = -1};
  p->n_ops = n_ops;
  return EG_OK;
}

void eg_htp_exec_plan_free(eg_htp_exec_plan *p) {
  free(p->ops);
  p->ops = NULL;
  p->n_ops = 0;
}

void eg_htp_count_readers(const eg_htp_qnn_graph *g, int32_t *readers, int32_t *reader_of) {
  const int32_t nt = eg_htp_qnn_graph_num_tensors(g);
  for (int32_t t = 0; t < nt; t++) readers[t] = 0, reader_of[t] = -1;
  for (int32_t j = 0; j < eg_htp_qnn_graph_num_ops(g); j++) {
    const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, j);
    for (int32_t i = 0; i < op->n_inputs; i++)
      if (op->inputs[i] >= 0) readers[op->inputs[i]]++, reader_of[op->inputs[i]] = j;
  }
}

bool eg_htp_exec_op_planned(const eg_htp_exec_op *op) {
  return op->how != EG_HTP_EXEC_RUN || op->filter_read != EG_HTP_FILTER_READ_AS_IS ||
         op->filter_src != -1 || op->y_dst != -1;
}

eg_conv2d_nhwc_params eg_htp_conv2d_params(const eg_htp_qnn_graph *g,
                                           const eg_htp_qnn_op_node *op) {
  const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(g, op->inputs[0]),
                      *f = eg_htp_qnn_graph_tensor(g, op->inputs[1]),
                      *y = eg_htp_qnn_graph_tensor(g, op->outputs[0]);
  const eg_htp_qnn_conv_attrs *a = &op->attrs.conv;
  return (eg_conv2d_nhwc_params){
      .n = x->dims[0], .h_in = x->dims[1], .w_in = x->dims[2], .c_in = x->dims[3],
      .h_out = y->dims[1], .w_out = y->dims[2], .c_out = y->dims[3], .k_h = f->dims[0],
      .k_w = f->dims[1], .stride = {a->stride[0], a->stride[1]},
      .dilation = {a->dilation[0], a->dilation[1]}, .pad = {a->pad[0][0], a->pad[1][0]},
      .groups = a->group};
}

eg_transpose_conv2d_nhwc_params eg_htp_tconv2d_params(const eg_htp_qnn_graph *g,
                                                      const eg_htp_qnn_op_node *op) {
  const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(g, op->inputs[0]),
                      *f = eg_htp_qnn_graph_tensor(g, op->inputs[1]),
                      *y = eg_htp_qnn_graph_tensor(g, op->outputs[0]);
  const eg_htp_qnn_conv_attrs *a = &op->attrs.conv;
  return (eg_transpose_conv2d_nhwc_params){
      .n = x->dims[0], .h_in = x->dims[1], .w_in = x->dims[2], .c_in = x->dims[3],
      .h_out = y->dims[1], .w_out = y->dims[2], .c_out = y->dims[3], .k_h = f->dims[0],
      .k_w = f->dims[1], .stride = {a->stride[0], a->stride[1]},
      .pad = {a->pad[0][0], a->pad[1][0]}, .groups = a->group,
      .algo = EG_TRANSPOSE_CONV2D_AUTO};
}

bool eg_htp_reshape_aliases(const eg_htp_qnn_graph *g, const eg_htp_qnn_op_node *op) {
  if (op->type != EG_HTP_QNN_OP_RESHAPE || op->n_inputs != 1 || op->inputs[0] < 0) return false;
  const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(g, op->inputs[0]),
                      *y = eg_htp_qnn_graph_tensor(g, op->outputs[0]);
  return y->type == EG_HTP_QNN_TENSOR_NATIVE &&
         (x->type == EG_HTP_QNN_TENSOR_NATIVE || x->type == EG_HTP_QNN_TENSOR_STATIC ||
          x->type == EG_HTP_QNN_TENSOR_APP_WRITE) &&
         x->dtype == y->dtype && x->nbytes == y->nbytes &&
         (y->dtype == EG_HTP_QNN_DTYPE_FLOAT_32 || y->dtype == EG_HTP_QNN_DTYPE_INT_32);
}

bool eg_htp_chain_op(const eg_htp_qnn_op_node *op, eg_ew_chain_op *out) {
  switch (op->type) {
  case EG_HTP_QNN_OP_ELEMENT_WISE_ADD: *out = EG_EW_CHAIN_ADD; return true;
  case EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT: *out = EG_EW_CHAIN_SUB; return true;
  case EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY: *out = EG_EW_CHAIN_MUL; return true;
  case EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE: *out = EG_EW_CHAIN_DIV; return true;
  case EG_HTP_QNN_OP_ELEMENT_WISE_GREATER: *out = EG_EW_CHAIN_GREATER; return true;
  case EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL: *out = EG_EW_CHAIN_GREATER_EQUAL; return true;
  case EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL: *out = EG_EW_CHAIN_LESS_EQUAL; return true;
  case EG_HTP_QNN_OP_ELEMENT_WISE_SELECT: *out = EG_EW_CHAIN_SELECT; return true;
  case EG_HTP_QNN_OP_ELEMENT_WISE_NEG: *out = EG_EW_CHAIN_NEG; return true;
  case EG_HTP_QNN_OP_RELU: *out = EG_EW_CHAIN_RELU; return true;
  case EG_HTP_QNN_OP_RELU_MIN_MAX: *out = EG_EW_CHAIN_RELU_MIN_MAX; return true;
  default: return false;
  }
}

int eg_htp_leaf_form(const eg_htp_qnn_tensor *x, const eg_htp_qnn_tensor *y) {
  if (eg_htp_qnn_tensor_numel(x) == 1) return EG_EW_LEAF_SCALAR;
  if (x->rank > y->rank || y->rank == 0) return -1;
  const int off = y->rank - x->rank;
  bool full = true, chan = x->dims[x->rank - 1] == y->dims[y->rank - 1];
  for (int d = 0; d < y->rank; d++) {
    const uint32_t xd = d < off ? 1 : x->dims[d - off];
    full = full && xd == y->dims[d];
    chan = chan && (d == y->rank - 1 || xd == 1);
  }
  return full ? EG_EW_LEAF_FULL : chan ? EG_EW_LEAF_CHAN : -1;
}

/* The dtype chain op `op` of type c reads as operand i, and the one it writes (i -1). */
static eg_htp_qnn_dtype chain_dtype(eg_ew_chain_op c, int i) {
  if (i < 0) return eg_ew_chain_op_masks(c) ? EG_HTP_QNN_DTYPE_BOOL_8 : EG_HTP_QNN_DTYPE_FLOAT_32;
  return c == EG_EW_CHAIN_SELECT && i == 0 ? EG_HTP_QNN_DTYPE_BOOL_8 : EG_HTP_QNN_DTYPE_FLOAT_32;
}

static bool same_dims(const eg_htp_qnn_tensor *a, const eg_htp_qnn_tensor *b) {
  return a->rank == b->rank && !memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]);
}

bool eg_htp_reduces_rows(const eg_htp_qnn_op_node *r, const eg_htp_qnn_tensor *x) {
  return (r->type == EG_HTP_QNN_OP_REDUCE_SUM || r->type == EG_HTP_QNN_OP_REDUCE_MEAN) &&
         r->n_inputs == 1 && r->inputs[0] == x->id && x->dtype == EG_HTP_QNN_DTYPE_FLOAT_32 &&
         x->rank >= 2 && eg_htp_qnn_tensor_numel(x) > 0 &&
         r->attrs.reduce.mask == (1u << (x->rank - 1)) - 1u;
}

bool eg_htp_fuse_candidate(const eg_htp_qnn_graph *g, int32_t k, const int32_t *readers,
                           const int32_t *reader_of, int32_t *reader) {
  const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
  eg_ew_chain_op c, rc;
  if (!eg_htp_chain_op(op, &c) || op->n_inputs != eg_ew_chain_op_arity(c)) return false;
  const eg_htp_qnn_tensor *y = eg_htp_qnn_graph_tensor(g, op->outputs[0]);
  if (y->type != EG_HTP_QNN_TENSOR_NATIVE || y->dtype != chain_dtype(c, -1) ||
      readers[y->id] != 1 || reader_of[y->id] <= k)
    return false;
  const eg_htp_qnn_op_node *r = eg_htp_qnn_graph_op(g, reader_of[y->id]);
  if (eg_htp_reduces_rows(r, y)) {
    *reader = reader_of[y->id];
    return true;
  }
  if (!eg_htp_chain_op(r, &rc) || r->n_inputs != eg_ew_chain_op_arity(rc) ||
      !same_dims(y, eg_htp_qnn_graph_tensor(g, r->outputs[0])))
    return false;
  for (int i = 0; i < r->n_inputs; i++)
    if (r->inputs[i] == y->id && chain_dtype(rc, i) != y->dtype) return false;
  *reader = reader_of[y->id];
  return true;
}

/* Op k's group: adds its ops and leaves to *steps, *leaves; false when a leaf does not fit
 * (stops once over the bounds). */
static bool group_of(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, int32_t k,
                     const eg_htp_qnn_tensor *y, int *steps, int *leaves) {
  const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
  eg_ew_chain_op c;
  if (!eg_htp_chain_op(op, &c) || op->n_inputs != eg_ew_chain_op_arity(c)) return false;
  if (++*steps > EG_EW_CHAIN_MAX_STEPS) return false;
  for (int i = 0; i < op->n_inputs; i++) {
    if (op->inputs[i] < 0) return false;
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(g, op->inputs[i]);
    if (x->producer >= 0 && p->ops[x->producer].how == EG_HTP_EXEC_FUSED) {
      if (!group_of(g, p, x->producer, y, steps, leaves)) return false;
      continue;
    }
    const int form = eg_htp_leaf_form(x, y);
    if (++*leaves > EG_EW_CHAIN_MAX_LEAVES || x->dtype != chain_dtype(c, i) || form < 0 ||
        (x->dtype == EG_HTP_QNN_DTYPE_BOOL_8 && form == EG_EW_LEAF_CHAN))
      return false;
  }
  return true;
}

bool eg_htp_fused_group_fits(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p,
                             int32_t tail) {
  const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, tail);
  int steps = 0, leaves = 0;
  if (op->n_inputs == 1 && op->inputs[0] >= 0) { /* a reduction of a FUSED op's output */
    const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(g, op->inputs[0]);
    if (eg_htp_reduces_rows(op, x))
      return x->producer >= 0 && p->ops[x->producer].how == EG_HTP_EXEC_FUSED &&
             group_of(g, p, x->producer, x, &steps, &leaves);
  }
  const eg_htp_qnn_tensor *y = eg_htp_qnn_graph_tensor(g, op->outputs[0]);
  return y->dtype == EG_HTP_QNN_DTYPE_FLOAT_32 && group_of(g, p, tail, y, &steps, &leaves);
}

bool eg_htp_reads_fused(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, int32_t k) {
  const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
  for (int i = 0; i < op->n_inputs; i++) {
    const int32_t t = op->inputs[i] >= 0 ? eg_htp_qnn_graph_tensor(g, op->inputs[i])->producer : -1;
    if (t >= 0 && p->ops[t].how == EG_HTP_EXEC_FUSED) return true;
  }
  return false;
}

/* ---- the rules ---- */

static const char *const how_names[] = {"RUN", "FOLD", "SKIP", "ALIAS", "FUSED"};

static bool perm_is(const eg_htp_qnn_op_node *op, const eg_htp_qnn_tensor *x,
                    const uint32_t perm[4]) {
  return x->rank == 4 && !memcmp(op->attrs.transpose.perm, perm, 4 * sizeof perm[0]);
}

static bool is_f32(const eg_htp_qnn_tensor *t, eg_htp_qnn_tensor_type type) {
  return t->type == type && t->dtype == EG_HTP_QNN_DTYPE_FLOAT_32;
}

/* What a SKIP Transpose of x with perm `op` makes of a filter read as `read` by an op of
 * `type`: whether they fit (exec_plan.h, filter_read). */
static bool filter_fits(const eg_htp_qnn_op_node *tr, const eg_htp_qnn_tensor *x,
                        eg_htp_qnn_op type, uint8_t read) {
  static const uint32_t swap_io[4] = {0, 1, 3, 2}, oihw_to_hwio[4] = {2, 3, 1, 0},
                        oihw_to_hwoi[4] = {2, 3, 0, 1};
  if (read == EG_HTP_FILTER_READ_OI)
    return type == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D && perm_is(tr, x, swap_io) &&
           is_f32(x, EG_HTP_QNN_TENSOR_STATIC);
  if (read == EG_HTP_FILTER_READ_OIHW)
    return perm_is(tr, x, type == EG_HTP_QNN_OP_CONV_2D ? oihw_to_hwio : oihw_to_hwoi) &&
           is_f32(x, EG_HTP_QNN_TENSOR_APP_WRITE);
  return false;
}

/* The rules of entry k's filter_src / filter_read and y_dst (Conv2d, TransposeConv2d);
 * readers: per tensor, how many op inputs read it. */
static bool check_conv(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, int32_t k,
                       const int32_t *readers, char *why, size_t size) {
  const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
  const eg_htp_exec_op *e = &p->ops[k];
  const bool conv = op->type == EG_HTP_QNN_OP_CONV_2D,
             tconv = op->type == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D;
  const int32_t nt = eg_htp_qnn_graph_num_tensors(g);
  if ((e->filter_src >= 0 || e->y_dst >= 0 || e->filter_read) && !conv && !tconv) {
    snprintf(why, size, "a filter source, filter form or y_dst: only a Conv2d or "
             "TransposeConv2d has them");
    return false;
  }
  if ((e->filter_src >= 0) != (e->filter_read != EG_HTP_FILTER_READ_AS_IS)) {
    snprintf(why, size, "filter source %d with filter form %d: a source needs a form (OI, "
             "OIHW) and a form a source", (int)e->filter_src, (int)e->filter_read);
    return false;
  }
  if (e->filter_src >= 0) {
    const eg_htp_qnn_tensor *f = op->n_inputs > 1 && op->inputs[1] >= 0
                                 ? eg_htp_qnn_graph_tensor(g, op->inputs[1]) : NULL;
    const int32_t t = f ? f->producer : -1;
    const eg_htp_qnn_op_node *tr = t >= 0 ? eg_htp_qnn_graph_op(g, t) : NULL;
    if (e->filter_src >= nt || !tr || p->ops[t].how != EG_HTP_EXEC_SKIP ||
        tr->inputs[0] != e->filter_src ||
        !filter_fits(tr, eg_htp_qnn_graph_tensor(g, e->filter_src), op->type, e->filter_read)) {
      snprintf(why, size, "filter read from tensor %d (form %d): input 1 must be the output of "
               "a SKIP Transpose of that tensor, of the perm and tensor type the form takes",
               (int)e->filter_src, (int)e->filter_read);
      return false;
    }
  }
  if (e->y_dst >= 0) {
    static const uint32_t to_oihw[4] = {3, 0, 1, 2};
    const eg_htp_qnn_tensor *y = eg_htp_qnn_graph_tensor(g, op->outputs[0]);
    const eg_htp_qnn_tensor *d = e->y_dst < nt ? eg_htp_qnn_graph_tensor(g, e->y_dst) : NULL;
    const int32_t t = d ? d->producer : -1;
    const eg_htp_qnn_op_node *tr = t >= 0 ? eg_htp_qnn_graph_op(g, t) : NULL;
    if (!conv || !tr || p->ops[t].how != EG_HTP_EXEC_SKIP || tr->type != EG_HTP_QNN_OP_TRANSPOSE ||
        tr->inputs[0] != y->id || readers[y->id] != 1 || !is_f32(y, EG_HTP_QNN_TENSOR_NATIVE) ||
        d->dtype != EG_HTP_QNN_DTYPE_FLOAT_32 || !perm_is(tr, y, to_oihw)) {
      snprintf(why, size, "writes tensor %d (y_dst): a Conv2d whose NATIVE float output only a "
               "SKIP Transpose [3,0,1,2] reads, that Transpose's output", (int)e->y_dst);
      return false;
    }
  }
  return true;
}

/* Whether op k is a SKIP Transpose whose readers read its input instead (case (i) of
 * exec_plan.h), not one whose output its input's Conv2d writes (case (ii)). */
static bool skip_redirects(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, int32_t k) {
  const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
  if (p->ops[k].how != EG_HTP_EXEC_SKIP || op->type != EG_HTP_QNN_OP_TRANSPOSE) return false;
  const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(g, op->inputs[0]);
  return !(x->producer >= 0 && p->ops[x->producer].y_dst == op->outputs[0]);
}

/* The rules of entry k's how (FOLD, SKIP: Transposes; ALIAS: Reshapes); readers as for
 * check_conv (each reader of a case (i) SKIP's output is checked by check_readers). */
static bool check_how(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, int32_t k,
                      const int32_t *readers, char *why, size_t size) {
  const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
  const eg_htp_exec_op *e = &p->ops[k];
  if (e->how == EG_HTP_EXEC_RUN || e->how == EG_HTP_EXEC_FUSED) return true; /* check_fused */
  if (e->how == EG_HTP_EXEC_ALIAS) {
    if (eg_htp_reshape_aliases(g, op)) return true;
    snprintf(why, size, "ALIAS: only a Reshape whose output is NATIVE, of its input's dtype "
             "(FLOAT_32 or INT_32), and whose input is NATIVE, STATIC or a graph input holds "
             "its input's bytes");
    return false;
  }
  if (op->type != EG_HTP_QNN_OP_TRANSPOSE) {
    snprintf(why, size, "%s: only a Transpose is folded or skipped", how_names[e->how]);
    return false;
  }
  const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(g, op->inputs[0]),
                      *y = eg_htp_qnn_graph_tensor(g, op->outputs[0]);
  if (e->how == EG_HTP_EXEC_FOLD) {
    const bool constant = is_f32(x, EG_HTP_QNN_TENSOR_STATIC) ||
                          (is_f32(x, EG_HTP_QNN_TENSOR_NATIVE) && x->producer >= 0 &&
                           p->ops[x->producer].how == EG_HTP_EXEC_FOLD);
    if (!constant || !is_f32(y, EG_HTP_QNN_TENSOR_NATIVE)) {
      snprintf(why, size, "FOLD: a folded Transpose reads a FLOAT_32 STATIC tensor or a folded "
               "op's output and writes a NATIVE FLOAT_32 tensor (%s reads %s)", y->name,
               x->name);
      return false;
    }
    return true;
  }
  /* SKIP: (ii) a Conv2d writes y itself, or (i) its readers read x for it */
  if (!skip_redirects(g, p, k)) return true;
  if (readers[y->id] == 0 || y->type != EG_HTP_QNN_TENSOR_NATIVE) {
    snprintf(why, size, "SKIP: its output %s (%d readers) must be NATIVE and read, as a filter "
             "redirected to its input, or written by the Conv2d before it", y->name,
             (int)readers[y->id]);
    return false;
  }
  return true;
}

/* Op j's inputs: one that is a case (i) SKIP Transpose's output is its filter (input 1),
 * redirected to the Transpose's input. */
static bool check_readers(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, int32_t j,
                          char *why, size_t size) {
  const eg_htp_qnn_op_node *r = eg_htp_qnn_graph_op(g, j);
  for (int32_t i = 0; i < r->n_inputs; i++) {
    const int32_t t = r->inputs[i] >= 0 ? eg_htp_qnn_graph_tensor(g, r->inputs[i])->producer : -1;
    if (t < 0 || !skip_redirects(g, p, t)) continue;
    if (i != 1 || p->ops[j].filter_src != eg_htp_qnn_graph_op(g, t)->inputs[0]) {
      snprintf(why, size, "reads op %d (%s, SKIP)'s output as input %d: every reader of a "
               "skipped Transpose's output must read it as a filter redirected to its input",
               (int)t, eg_htp_qnn_graph_op(g, t)->name, (int)i);
      return false;
    }
  }
  return true;
}

/* The rules of FUSED ops and the tails of their groups (op k: FUSED, or RUN reading a FUSED
 * op's output); readers as for check_conv, reader_of: per tensor, its last reader. */
static bool check_fused(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, int32_t k,
                        const int32_t *readers, const int32_t *reader_of, char *why,
                        size_t size) {
  int32_t r = -1;
  if (p->ops[k].how == EG_HTP_EXEC_FUSED &&
      (!eg_htp_fuse_candidate(g, k, readers, reader_of, &r) ||
       (p->ops[r].how != EG_HTP_EXEC_RUN && p->ops[r].how != EG_HTP_EXEC_FUSED))) {
    snprintf(why, size, "FUSED: an elementwise op whose NATIVE output (of its dtype) one later "
             "elementwise op, RUN or FUSED, alone reads, over the same dims, or a ReduceSum or "
             "ReduceMean over every dim but the last (a float output)");
    return false;
  }
  if (p->ops[k].how == EG_HTP_EXEC_RUN && eg_htp_reads_fused(g, p, k) &&
      !eg_htp_fused_group_fits(g, p, k)) {
    snprintf(why, size, "reads a FUSED op's output: the tail of a group of elementwise ops "
             "(at most %d ops, %d leaf operands: dense, per channel or one element, of the "
             "op's dtype) with a FLOAT_32 output, or a reduction of one over every dim but the "
             "last", EG_EW_CHAIN_MAX_STEPS,
             EG_EW_CHAIN_MAX_LEAVES);
    return false;
  }
  return true;
}

bool eg_htp_exec_plan_check(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, char *why,
                            size_t size) {
  const int32_t no = eg_htp_qnn_graph_num_ops(g);
  if (p->n_ops == 0) return true;
  if (p->n_ops != no) {
    snprintf(why, size, "%d entries for %d ops: one per op", (int)p->n_ops, (int)no);
    return false;
  }
  for (int32_t k = 0; k < no; k++) { /* codes and ids first: the rules below follow them */
    const eg_htp_exec_op *e = &p->ops[k];
    if (e->how >= EG_HTP_EXEC_HOW_COUNT || e->filter_read >= EG_HTP_FILTER_READ_COUNT ||
        e->filter_src < -1 || e->filter_src >= eg_htp_qnn_graph_num_tensors(g) || e->y_dst < -1 ||
        e->y_dst >= eg_htp_qnn_graph_num_tensors(g)) {
      snprintf(why, size, "op %d (%s): how %d, filter form %d, tensors %d and %d: codes below "
               "%d and %d, tensor ids -1 or below %d", (int)k, eg_htp_qnn_graph_op(g, k)->name,
               (int)e->how, (int)e->filter_read, (int)e->filter_src, (int)e->y_dst,
               (int)EG_HTP_EXEC_HOW_COUNT, (int)EG_HTP_FILTER_READ_COUNT,
               (int)eg_htp_qnn_graph_num_tensors(g));
      return false;
    }
  }
  const size_t nt = (size_t)eg_htp_qnn_graph_num_tensors(g);
  int32_t *readers = calloc(2 * (nt + 1), sizeof(int32_t)), *reader_of = readers + nt + 1;
  if (!readers) {
    snprintf(why, size, "out of memory checking it");
    return false;
  }
  eg_htp_count_readers(g, readers, reader_of);
  bool ok = true;
  for (int32_t k = 0; ok && k < no; k++) {
    char rule[320];
    ok = check_how(g, p, k, readers, rule, sizeof rule) &&
         check_readers(g, p, k, rule, sizeof rule) &&
         check_conv(g, p, k, readers, rule, sizeof rule) &&
         check_fused(g, p, k, readers, reader_of, rule, sizeof rule);
    if (!ok) {
      const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
      snprintf(why, size, "op %d (%s, %s): %s", (int)k, op->name, eg_htp_qnn_op_name(op->type),
               rule);
    }
  }
  free(readers);
  return ok;
}
