/* loss.c — NPU builders for the loss end of a classifier's training step.
 *
 *   aten._log_softmax_backward_data(gy, y, dim, input_dtype)
 *                         gx = gy - exp(y) * sum(gy, dim, keepdim), in ATen's order:
 *                         ReduceSum(axes [dim], keep_dims) + ElementWiseExp +
 *                         ElementWiseMultiply + ElementWiseSubtract; any dim (gy, y and gx held
 *                         in one axis order, the dim's QNN axis reduced)
 *   aten.nll_loss_forward(x [N, C], target [N], weight?, reduction, ignore_index)
 *                      -> (output [], total_weight [])
 *   aten.nll_loss_backward(gy, x [N, C], target [N], weight?, reduction, ignore_index,
 *                          total_weight)  -> gx [N, C]
 *   aten.nll_loss2d_forward / nll_loss2d_backward: the same over x [N, C, H, W] and target
 *                          [N, H, W] (a segmentation net's pixel-wise loss), lowered as the
 *                          2-D form over N*H*W rows: x and gx are held NHWC (pass layout_nhwc),
 *                          so a Reshape makes x the rows [N*H*W, C], class axis last, and
 *                          gx [N*H*W, C] back [N, H, W, C]; the target is flattened to [N*H*W]
 *                          in the same (n, h, w) order. ATen's 2d kernel sums the same
 *                          per-pixel terms, with the same total_weight and gradient rule.
 *
 * Both nll ops build one mask m [N, C] from the class indices:
 *   hit = ElementWiseEqual(target as [N, 1], iota [C])   (INT_32; iota a STATIC 0..C-1)
 *   m   = ElementWiseSelect(hit, w, 0)                   (m[i, c] = w_c where target[i] == c)
 * with w [C] the class weights (all 1 without `weight`) and w[ignore_index] = 0 when
 * ignore_index is a class: a STATIC constant, or the weight tensor times a STATIC keep vector
 * when the weight is not static. A target equal to an ignore_index outside [0, C) (PyTorch's
 * -100) matches no class, so its row of m is zero. Every row then contributes what ATen's kernel
 * gives it (nothing for an ignored row, which total_weight does not count either):
 *   forward:  total_weight = ReduceSum(m)                        (all axes)
 *             mean: output = Neg(ReduceSum(x * m) / total_weight)
 *             sum:  output = Neg(ReduceSum(x * m))
 *   backward: mean: gx = m * Neg(gy / total_weight)   (ATen's w_t * -(gy / total_weight))
 *             sum:  gx = m * Neg(gy)
 * Class indices stay int32 (pass i64_to_i32 holds the int64 target as INT_32): a float
 * comparison would round indices above 2048 in an fp16 graph and match two classes.
 *
 * A target that is neither a class nor ignore_index stops ATen's kernel (and edgegrad's CPU
 * kernel) with an error; the NPU cannot stop, so the forward makes its loss and total_weight
 * NaN instead, which the backward of reduction mean spreads to every gradient and which stops
 * `edgegrad train` (a loss that is not finite): per row, valid = ReduceSum(hit as 1/0, axis 1)
 * (+ ElementWiseEqual(target, ignore_index) as 1/0 when ignore_index is no class), and
 * NaN is added where ReduceSum(1 - valid) > 0.5 (a count of 0/1 values, which fp16's rounding
 * never takes to 0).
 *
 * The backward's grad_output is, in an exported training step, the backward's seed: a
 * constant of ones (pass decompose folds ones_like(loss)), which loss scaling (`edgegrad
 * train`'s default in fp16) replaces by the scale at run time (runtime/loss_seed.c). It is read
 * through eg_htp_input, which lowers the seed as a boundary input the runtime writes, not as
 * a constant of the partition (lower.h), so the loss's forward and backward share one
 * partition and scaling reaches it.
 *
 * Constraints: x float32 [N, C] (nll_loss) or [N, C, H, W] (nll_loss2d, held NHWC), target
 * int64 [N] or [N, H, W] (a static one within int32), weight None or float32 [C], reduction
 * mean or sum (none, whose result has the target's shape, and nll_loss's 1-D unbatched form
 * stay on the CPU), at most EG_HTP_NLL_MAX_ROWS rows (pixels); the backward's gy and
 * total_weight one element each, of rank <= 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/htp/compile/builders/builders.h"
#include "kernels/nll_loss_f32.h"

/* ---- _log_softmax_backward_data ---- */

static eg_status log_softmax_backward_lower(eg_htp_lower *L, const eg_graph *g,
                                            const eg_node *n) {
  eg_htp_softmax_bwd s;
  EG_TRY(eg_htp_softmax_bwd_begin(L, g, n, &s));
  int32_t sum, e, prod, out;
  EG_TRY(eg_htp_softmax_bwd_line_sum(L, &s, s.gy, &sum));
  EG_TRY(eg_htp_temp(L, "exp", EG_HTP_QNN_DTYPE_FLOAT_32, s.rank, s.dims, &e));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_EXP, &s.y, 1, &e, 1, NULL, 0));
  EG_TRY(eg_htp_temp(L, "exp_sum", EG_HTP_QNN_DTYPE_FLOAT_32, s.rank, s.dims, &prod));
  const int32_t mul[2] = {e, sum};
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, &prod, 1, NULL, 0));
  EG_TRY(eg_htp_define(L, n->output, &out));
  const int32_t sub[2] = {s.gy, prod};
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, sub, 2, &out, 1, NULL, 0);
}

/* ---- nll_loss_forward, nll_loss_backward ---- */

/* At most this many rows (nll_loss2d: pixels): total_weight counts them (times their class
 * weights), in fp16 on the HTP, whose ReduceSum saturates (a count of 140000 ones comes out
 * 131008 on QNN 2.51's HTP emulator at fp16). */
#define EG_HTP_NLL_MAX_ROWS 65504

/* The arguments both nll ops share; `at` is self's position (0 forward, 1 backward). */
typedef struct nll_args {
  int32_t x, target, weight; /* value ids; weight -1 for None */
  int64_t reduction, ignore_index;
  uint32_t n, c;             /* rows (N, or N*H*W for nll_loss2d) and classes */
  bool two_d;                /* nll_loss2d: x [N, C, H, W] held NHWC, target [N, H, W] */
} nll_args;

static bool nll_read(const eg_graph *g, const eg_node *n, int at, nll_args *a, char *reason,
                     size_t size) {
  a->x = eg_htp_arg(n, at, "self");
  a->target = eg_htp_arg(n, at + 1, "target");
  a->weight = eg_htp_arg(n, at + 2, "weight");
  if (a->x < 0 || a->target < 0 || eg_arg_int(n, at + 3, "reduction", &a->reduction) != EG_OK ||
      eg_arg_int(n, at + 4, "ignore_index", &a->ignore_index) != EG_OK) {
    snprintf(reason, size, "self, target, reduction or ignore_index is missing");
    return false;
  }
  const eg_value *x = &g->values[a->x];
  a->two_d = n->op == EG_OP_nll_loss2d_forward || n->op == EG_OP_nll_loss2d_backward;
  if (x->rank != (a->two_d ? 4 : 2)) {
    snprintf(reason, size, "rank-%d scores: the NPU lowering takes the batched %s form only",
             x->rank, a->two_d ? "[N, C, H, W]" : "[N, C]");
    return false;
  }
  if (!eg_htp_float_tensor_ok(g, a->x, reason, size) ||
      !eg_htp_move_tensor_ok(g, a->target, reason, size) ||
      (a->weight >= 0 && !eg_htp_float_tensor_ok(g, a->weight, reason, size)))
    return false;
  if (a->reduction != EG_REDUCTION_MEAN && a->reduction != EG_REDUCTION_SUM) {
    snprintf(reason, size, "reduction %lld (none): the NPU lowering takes mean and sum only",
             (long long)a->reduction);
    return false;
  }
  if (x->shape[1] > INT32_MAX) {
    snprintf(reason, size, "%lld classes: the NPU compares class indices as int32",
             (long long)x->shape[1]);
    return false;
  }
  const int64_t rows = a->two_d ? x->shape[0] * x->shape[2] * x->shape[3] : x->shape[0];
  if (rows > EG_HTP_NLL_MAX_ROWS) {
    snprintf(reason, size, "%lld %s: total_weight, their count, would pass fp16's largest "
             "value %d in the NPU's fp16 graph", (long long)rows, a->two_d ? "pixels" : "rows",
             EG_HTP_NLL_MAX_ROWS);
    return false;
  }
  a->n = eg_htp_qnn_dim(rows);
  a->c = eg_htp_qnn_dim(x->shape[1]);
  return true;
}

/* Whether ignore_index is one of the classes (its column of the mask is then zero). */
static bool ignores_class(const nll_args *a) {
  return a->ignore_index >= 0 && a->ignore_index < (int64_t)a->c;
}

/* A STATIC float32 constant of one value: rank 0, or [1]. */
static eg_status scalar(eg_htp_lower *L, const char *what, int rank, float v, int32_t *t) {
  const uint32_t one[1] = {1};
  return eg_htp_const_f32(L, what, rank, one, &v, t);
}

/* The class weights w [C] with w[ignore_index] = 0 when ignore_index is a class (file
 * comment). */
static eg_status class_weights(eg_htp_lower *L, const eg_graph *g, const nll_args *a,
                               int32_t *w) {
  const uint32_t cd[1] = {a->c};
  const eg_value *wv = a->weight >= 0 ? &g->values[a->weight] : NULL;
  if (wv && wv->role != EG_ROLE_STATIC && !ignores_class(a)) return eg_htp_input(L, a->weight, w);
  float *buf = malloc((size_t)a->c * sizeof *buf);
  if (!buf) return eg_error(EG_ERR_NOMEM, "lowering nll_loss: out of memory (%u class weights)",
                            a->c);
  const float *src =
      wv && wv->role == EG_ROLE_STATIC ? (const float *)g->statics[wv->def].data : NULL;
  for (uint32_t k = 0; k < a->c; k++) buf[k] = src ? src[k] : 1.0f;
  if (ignores_class(a)) buf[a->ignore_index] = 0.0f;
  int32_t c;
  eg_status st = eg_htp_const_f32(L, wv && !src ? "keep" : "class_weights", 1, cd, buf, &c);
  free(buf);
  EG_TRY(st);
  if (!wv || src) {
    *w = c;
    return EG_OK;
  }
  int32_t in[2];
  EG_TRY(eg_htp_input(L, a->weight, &in[0]));
  in[1] = c;
  EG_TRY(eg_htp_temp(L, "class_weights", EG_HTP_QNN_DTYPE_FLOAT_32, 1, cd, w));
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, in, 2, w, 1, NULL, 0);
}

/* The target as INT_32 rows [N] (*t; nll_loss2d's [N, H, W] flattened) and hit = (target ==
 * class) BOOL_8 [N, C]. */
static eg_status class_hits(eg_htp_lower *L, const nll_args *a, int32_t *t, int32_t *hit) {
  const uint32_t col_dims[2] = {a->n, 1}, cd[1] = {a->c}, nc[2] = {a->n, a->c};
  int32_t *iota = malloc((size_t)a->c * sizeof *iota);
  if (!iota) return eg_error(EG_ERR_NOMEM, "lowering nll_loss: out of memory (%u classes)",
                             a->c);
  for (uint32_t k = 0; k < a->c; k++) iota[k] = (int32_t)k;
  int32_t classes, col;
  eg_status st = eg_htp_const_i32(L, "classes", 1, cd, iota, &classes);
  free(iota);
  EG_TRY(st);
  EG_TRY(eg_htp_input(L, a->target, t));
  if (a->two_d) {
    const uint32_t nd[1] = {a->n};
    int32_t flat;
    EG_TRY(eg_htp_temp(L, "target_rows", EG_HTP_QNN_DTYPE_INT_32, 1, nd, &flat));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, t, 1, &flat, 1, NULL, 0));
    *t = flat;
  }
  EG_TRY(eg_htp_temp(L, "target_col", EG_HTP_QNN_DTYPE_INT_32, 2, col_dims, &col));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, t, 1, &col, 1, NULL, 0));
  EG_TRY(eg_htp_temp(L, "hit", EG_HTP_QNN_DTYPE_BOOL_8, 2, nc, hit));
  const int32_t in[2] = {col, classes};
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_EQUAL, in, 2, hit, 1, NULL, 0);
}

/* m = Select(hit, w, 0) [N, C]. */
static eg_status class_mask(eg_htp_lower *L, const eg_graph *g, const nll_args *a, int32_t hit,
                            int32_t *m) {
  const uint32_t nc[2] = {a->n, a->c};
  int32_t in[3] = {hit, -1, -1};
  EG_TRY(class_weights(L, g, a, &in[1]));
  EG_TRY(scalar(L, "zero", 1, 0.0f, &in[2]));
  EG_TRY(eg_htp_temp(L, "mask", EG_HTP_QNN_DTYPE_FLOAT_32, 2, nc, m));
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, in, 3, m, 1, NULL, 0);
}

/* A binary or unary op into a new float temporary "<node>_<what>" of `rank` / `dims`. */
static eg_status op_to(eg_htp_lower *L, eg_htp_qnn_op op, const int32_t *in, int n_in,
                       const char *what, int rank, const uint32_t *dims, int32_t *out) {
  EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, rank, dims, out));
  return eg_htp_op(L, op, in, n_in, out, 1, NULL, 0);
}

/* ReduceSum of `in` over `axes` (n_axes of them, no keep_dims) into a new temporary. */
static eg_status sum_to(eg_htp_lower *L, int32_t in, const uint32_t *axes, int n_axes,
                        const char *what, int rank, const uint32_t *dims, int32_t *out) {
  const uint32_t ad[1] = {(uint32_t)n_axes};
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor("axes", 1, ad, axes);
  EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, rank, dims, out));
  return eg_htp_op(L, EG_HTP_QNN_OP_REDUCE_SUM, &in, 1, out, 1, &p, 1);
}

/* The rank-0 flag: NaN when some row's target is neither a class nor ignore_index, else 0
 * (file comment). */
static eg_status invalid_target_flag(eg_htp_lower *L, const nll_args *a, int32_t t,
                                     int32_t hit, int32_t *flag) {
  static const uint32_t axis1[1] = {1}, axis0[1] = {0};
  const uint32_t nc[2] = {a->n, a->c}, nd[1] = {a->n};
  int32_t one, zero, zero0, half, nan0, hits01, valid, bad, n_bad, is_bad;
  EG_TRY(scalar(L, "one", 1, 1.0f, &one));
  EG_TRY(scalar(L, "zero_flag", 1, 0.0f, &zero));
  EG_TRY(scalar(L, "zero0", 0, 0.0f, &zero0));
  EG_TRY(scalar(L, "half", 0, 0.5f, &half));
  EG_TRY(scalar(L, "nan", 0, NAN, &nan0));
  const int32_t sel[3] = {hit, one, zero};
  EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, sel, 3, "hit01", 2, nc, &hits01));
  EG_TRY(sum_to(L, hits01, axis1, 1, "row_hits", 1, nd, &valid));
  if (!ignores_class(a) && a->ignore_index >= INT32_MIN && a->ignore_index <= INT32_MAX) {
    const int32_t ii = (int32_t)a->ignore_index;
    const uint32_t one_d[1] = {1};
    int32_t ii_t, ign, ign01, sum;
    EG_TRY(eg_htp_const_i32(L, "ignore_index", 1, one_d, &ii, &ii_t));
    EG_TRY(eg_htp_temp(L, "ignored", EG_HTP_QNN_DTYPE_BOOL_8, 1, nd, &ign));
    const int32_t eq[2] = {t, ii_t};
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_EQUAL, eq, 2, &ign, 1, NULL, 0));
    const int32_t sel2[3] = {ign, one, zero};
    EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, sel2, 3, "ignored01", 1, nd, &ign01));
    const int32_t add[2] = {valid, ign01};
    EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, add, 2, "row_valid", 1, nd, &sum));
    valid = sum;
  }
  const int32_t sub[2] = {one, valid};
  EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, sub, 2, "row_bad", 1, nd, &bad));
  EG_TRY(sum_to(L, bad, axis0, 1, "n_bad", 0, NULL, &n_bad));
  EG_TRY(eg_htp_temp(L, "any_bad", EG_HTP_QNN_DTYPE_BOOL_8, 0, NULL, &is_bad));
  const int32_t gt[2] = {n_bad, half};
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER, gt, 2, &is_bad, 1, NULL, 0));
  const int32_t sel3[3] = {is_bad, nan0, zero0};
  return op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, sel3, 3, "invalid", 0, NULL, flag);
}

/* nll_loss2d's scores x NHWC [N, H, W, C] as rows [N*H*W, C] (*rows); nll_loss's x as it is. */
static eg_status score_rows(eg_htp_lower *L, const nll_args *a, int32_t *rows) {
  EG_TRY(eg_htp_input(L, a->x, rows));
  if (!a->two_d) return EG_OK;
  EG_TRY(eg_htp_want_axes(L, a->x, EG_AXES_NHWC, "self"));
  const uint32_t nc[2] = {a->n, a->c};
  int32_t in = *rows;
  EG_TRY(eg_htp_temp(L, "score_rows", EG_HTP_QNN_DTYPE_FLOAT_32, 2, nc, rows));
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &in, 1, rows, 1, NULL, 0);
}

static bool nll_forward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                 char *reason, size_t size) {
  (void)t;
  nll_args a;
  if (!nll_read(g, n, 0, &a, reason, size)) return false;
  const eg_value *y = &g->values[n->output];
  if (y->kind != EG_VALUE_TUPLE || y->n_elems != 2 || y->elems[0] < 0 || y->elems[1] < 0) {
    snprintf(reason, size, "the result is not an (output, total_weight) pair");
    return false;
  }
  return eg_htp_float_tensor_ok(g, y->elems[0], reason, size) &&
         eg_htp_float_tensor_ok(g, y->elems[1], reason, size);
}

static eg_status nll_forward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  static const uint32_t all[2] = {0, 1};
  nll_args a;
  char why[8];
  nll_read(g, n, 0, &a, why, sizeof why);
  const int32_t out_v = g->values[n->output].elems[0], tw_v = g->values[n->output].elems[1];
  const uint32_t nc[2] = {a.n, a.c};
  int32_t x, t, hit, m, prod, picked, count, flag, tw, out;
  EG_TRY(score_rows(L, &a, &x));
  EG_TRY(class_hits(L, &a, &t, &hit));
  EG_TRY(class_mask(L, g, &a, hit, &m));
  EG_TRY(invalid_target_flag(L, &a, t, hit, &flag));
  const int32_t mul[2] = {x, m};
  EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, "picked", 2, nc, &prod));
  EG_TRY(sum_to(L, prod, all, 2, "picked_sum", 0, NULL, &picked));
  EG_TRY(sum_to(L, m, all, 2, "weight_sum", 0, NULL, &count));
  const int32_t tw_in[2] = {count, flag};
  if (eg_htp_elem_used(g, n, 1)) EG_TRY(eg_htp_define(L, tw_v, &tw));
  else EG_TRY(eg_htp_temp(L, "total_weight", EG_HTP_QNN_DTYPE_FLOAT_32, 0, NULL, &tw));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, tw_in, 2, &tw, 1, NULL, 0));
  int32_t loss;
  if (a.reduction == EG_REDUCTION_MEAN) {
    const int32_t div[2] = {picked, tw};
    EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE, div, 2, "mean", 0, NULL, &loss));
  } else {
    const int32_t add[2] = {picked, flag};
    EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, add, 2, "sum", 0, NULL, &loss));
  }
  EG_TRY(eg_htp_define(L, out_v, &out));
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_NEG, &loss, 1, &out, 1, NULL, 0);
}

/* A one-element float32 tensor of rank <= 1 (grad_output, total_weight). */
static bool one_element_ok(const eg_graph *g, int32_t id, const char *what, char *reason,
                           size_t size) {
  if (id < 0) {
    snprintf(reason, size, "%s is not a tensor", what);
    return false;
  }
  if (!eg_htp_float_tensor_ok(g, id, reason, size)) return false;
  if (g->values[id].rank > 1 || eg_value_numel(&g->values[id]) != 1) {
    char s[96];
    snprintf(reason, size, "%s %s: the NPU lowering takes one element of rank <= 1", what,
             eg_fmt_ints(s, sizeof s, g->values[id].shape, g->values[id].rank));
    return false;
  }
  return true;
}

static bool nll_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                  char *reason, size_t size) {
  (void)t;
  nll_args a;
  return nll_read(g, n, 1, &a, reason, size) &&
         one_element_ok(g, eg_htp_arg(n, 0, "grad_output"), "grad_output", reason, size) &&
         one_element_ok(g, eg_htp_arg(n, 6, "total_weight"), "total_weight", reason, size) &&
         eg_htp_float_tensor_ok(g, n->output, reason, size);
}

static eg_status nll_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  nll_args a;
  char why[8];
  nll_read(g, n, 1, &a, why, sizeof why);
  const int32_t gy_v = eg_htp_arg(n, 0, "grad_output"), tw_v = eg_htp_arg(n, 6, "total_weight");
  const int rank = g->values[gy_v].rank > g->values[tw_v].rank ? g->values[gy_v].rank
                                                                 : g->values[tw_v].rank;
  const uint32_t one_d[1] = {1};
  int32_t t, hit, m, gy, scale, neg, out;
  EG_TRY(class_hits(L, &a, &t, &hit));
  EG_TRY(class_mask(L, g, &a, hit, &m));
  EG_TRY(eg_htp_input(L, gy_v, &gy));
  scale = gy;
  if (a.reduction == EG_REDUCTION_MEAN) {
    int32_t div[2] = {gy, -1};
    EG_TRY(eg_htp_input(L, tw_v, &div[1]));
    EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE, div, 2, "grad_mean", rank, one_d, &scale));
  }
  EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_NEG, &scale, 1, "neg_grad",
               a.reduction == EG_REDUCTION_MEAN ? rank : g->values[gy_v].rank, one_d, &neg));
  EG_TRY(eg_htp_define(L, n->output, &out));
  const int32_t mul[2] = {m, neg};
  if (!a.two_d) return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, &out, 1, NULL, 0);
  /* nll_loss2d: the rows [N*H*W, C] back to gx NHWC [N, H, W, C] */
  const uint32_t nc[2] = {a.n, a.c};
  int32_t rows;
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_NHWC, "result"));
  EG_TRY(op_to(L, EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, mul, 2, "grad_rows", 2, nc, &rows));
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &rows, 1, &out, 1, NULL, 0);
}

const eg_htp_builder eg_htp_builder__log_softmax_backward_data = {
    "aten._log_softmax_backward_data -> ReduceSum + ElementWiseExp + ElementWiseMultiply + "
    "ElementWiseSubtract", 0, eg_htp_softmax_bwd_supports, log_softmax_backward_lower};
const eg_htp_builder eg_htp_builder_nll_loss_forward = {
    "aten.nll_loss_forward [N, C] -> ElementWiseEqual one-hot + ElementWiseSelect + "
    "ElementWiseMultiply + ReduceSum + ElementWiseDivide + ElementWiseNeg", 0,
    nll_forward_supports, nll_forward_lower};
const eg_htp_builder eg_htp_builder_nll_loss_backward = {
    "aten.nll_loss_backward [N, C] -> ElementWiseEqual one-hot + ElementWiseSelect + "
    "ElementWiseDivide + ElementWiseNeg + ElementWiseMultiply", 0, nll_backward_supports,
    nll_backward_lower};
const eg_htp_builder eg_htp_builder_nll_loss2d_forward = {
    "aten.nll_loss2d_forward [N, C, H, W] -> Reshape to [N*H*W, C] + nll_loss_forward's ops", 0,
    nll_forward_supports, nll_forward_lower};
const eg_htp_builder eg_htp_builder_nll_loss2d_backward = {
    "aten.nll_loss2d_backward [N, C, H, W] -> nll_loss_backward's ops over [N*H*W, C] + "
    "Reshape", 0, nll_backward_supports, nll_backward_lower};
