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

/* ---- the rules ---- */

static const char *const how_names[] = {"RUN", "FOLD", "SKIP", "ALIAS"};

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
  if (e->how == EG_HTP_EXEC_RUN) return true;
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
  int32_t *readers = calloc((size_t)eg_htp_qnn_graph_num_tensors(g) + 1, sizeof(int32_t));
  if (!readers) {
    snprintf(why, size, "out of memory checking it");
    return false;
  }
  for (int32_t j = 0; j < no; j++)
    for (int32_t i = 0; i < eg_htp_qnn_graph_op(g, j)->n_inputs; i++)
      if (eg_htp_qnn_graph_op(g, j)->inputs[i] >= 0)
        readers[eg_htp_qnn_graph_op(g, j)->inputs[i]]++;
  bool ok = true;
  for (int32_t k = 0; ok && k < no; k++) {
    char rule[320];
    ok = check_how(g, p, k, readers, rule, sizeof rule) &&
         check_readers(g, p, k, rule, sizeof rule) &&
         check_conv(g, p, k, readers, rule, sizeof rule);
    if (!ok) {
      const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
      snprintf(why, size, "op %d (%s, %s): %s", (int)k, op->name, eg_htp_qnn_op_name(op->type),
               rule);
    }
  }
  free(readers);
  return ok;
}
