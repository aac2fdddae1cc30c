/* matmul.c — aten.mm, addmm, bmm, mv and dot, fp32, by CBLAS sgemm (kernels/addmm_f32.h,
 * kernels/bmm_f32.h).
 *
 *   mm(self [n, k], mat2 [k, m])                                   -> [n, m]
 *   addmm(self, mat1 [n, k], mat2 [k, m], *, beta=1, alpha=1)     -> [n, m]
 *       = beta * self + alpha * mat1 @ mat2, self expandable to [n, m] (ATen's expand: rank <= 2,
 *       each of its dims equal to the result's or 1); with beta == 0 self is ignored.
 *   bmm(self [b, n, k], mat2 [b, k, m])                            -> [b, n, m]
 *   mv(self [n, k], vec [k])                                       -> [n]   (= [n, k] @ [k, 1])
 *   dot(self [k], tensor [k])                                      -> []    (= [1, k] @ [k, 1])
 * Every operand has the rank its op names (ATen does not broadcast these) and all share one
 * dtype, as in ATen; only float32 is supported. Any size may be 0 (a 0 inner size gives
 * zeros, as the sum of nothing). Shape errors name both operand shapes. */
#include <limits.h>

#include "kernels/addmm_f32.h"
#include "kernels/bmm_f32.h"
#include "ops/op.h"

typedef struct eg_matmul_attrs {
  eg_addmm_params p;
  int64_t batch; /* bmm's batch count */
} eg_matmul_attrs;
EG_ATTRS_FIT(eg_matmul_attrs);

/* A float32 argument of rank `rank`: 2 (matrices), 3 (bmm's batches of them), 1 (vectors). */
static eg_status arg_operand(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                             int rank, const eg_value **out) {
  static const char *const what[4] = {"", "1-D vectors", "2-D matrices",
                                      "3-D batches of matrices"};
  EG_TRY(eg_arg_tensor(g, n, pos, kw, out));
  char s[160];
  if ((*out)->rank != rank)
    return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) has shape %s: %s takes %s", kw,
                         pos, eg_fmt_ints(s, sizeof s, (*out)->shape, (*out)->rank),
                         eg_op_target(n->op), what[rank]);
  if ((*out)->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument %s (#%d) dtype %s: %s supports float32 "
                         "only", kw, pos, eg_dtype_name((*out)->dtype), eg_op_target(n->op));
  return EG_OK;
}

/* The product of a (as [rows, ka]) and b (as [kb, cols]), named na, nb in messages: checks
 * ka == kb and sgemm's int sizes, and fills the node's params (alpha 1, beta 0, batch 1). */
static eg_status check_product(eg_node *n, const char *na, const eg_value *a, const char *nb,
                               const eg_value *b, int64_t rows, int64_t ka, int64_t kb,
                               int64_t cols) {
  char sa[160], sb[160];
  eg_fmt_ints(sa, sizeof sa, a->shape, a->rank);
  eg_fmt_ints(sb, sizeof sb, b->shape, b->rank);
  if (ka != kb)
    return eg_node_error(n, EG_ERR_INVALID, "%s %s and %s %s cannot be multiplied: %lld columns "
                         "against %lld rows", na, sa, nb, sb, (long long)ka, (long long)kb);
  if (rows > INT_MAX || ka > INT_MAX || cols > INT_MAX)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "%s %s and %s %s: sgemm takes dimensions up to "
                         "%d", na, sa, nb, sb, INT_MAX);
  eg_matmul_attrs *at = EG_ATTRS(n, eg_matmul_attrs);
  at->p = (eg_addmm_params){.n = rows, .k = ka, .m = cols, .alpha = 1, .beta = 0};
  at->batch = 1;
  return EG_OK;
}

/* A product of two arguments at positions 0 and 1 with ranks ra, rb (kw: their names). */
static eg_status check_pair(eg_graph *g, eg_node *n, const char *const *kw, int ra, int rb,
                            const eg_value **a, const eg_value **b) {
  EG_TRY(eg_node_check_arity(n, 2, 2, kw));
  EG_TRY(arg_operand(g, n, 0, kw[0], ra, a));
  return arg_operand(g, n, 1, kw[1], rb, b);
}

/* mm, mv, dot: one sgemm of the two arguments. */
static eg_status run_product(const eg_exec *ex, const eg_node *n, const char *kw_b) {
  eg_addmm_f32(&EG_ATTRS(n, eg_matmul_attrs)->p, NULL, eg_exec_arg(ex, n, 0, "self"),
               eg_exec_arg(ex, n, 1, kw_b), eg_exec_out(ex, n));
  return EG_OK;
}

static const char *const kw_mat2[] = {"self", "mat2", NULL};

eg_status eg_check_mm(eg_graph *g, eg_node *n) {
  const eg_value *a, *b;
  EG_TRY(check_pair(g, n, kw_mat2, 2, 2, &a, &b));
  EG_TRY(check_product(n, "self", a, "mat2", b, a->shape[0], a->shape[1], b->shape[0],
                       b->shape[1]));
  const int64_t shape[2] = {a->shape[0], b->shape[1]};
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, 2, shape);
}

eg_status eg_run_mm(const eg_exec *ex, const eg_node *n) { return run_product(ex, n, "mat2"); }

eg_status eg_check_addmm(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "mat1", "mat2", "beta", "alpha", NULL};
  EG_TRY(eg_node_check_arity(n, 3, 3, known));
  const eg_value *self, *a, *b;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &self));
  if (self->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument self (#0) dtype %s: %s supports "
                         "float32 only", eg_dtype_name(self->dtype), eg_op_target(n->op));
  EG_TRY(arg_operand(g, n, 1, "mat1", 2, &a));
  EG_TRY(arg_operand(g, n, 2, "mat2", 2, &b));
  EG_TRY(check_product(n, "mat1", a, "mat2", b, a->shape[0], a->shape[1], b->shape[0],
                       b->shape[1]));
  eg_addmm_params *p = &EG_ATTRS(n, eg_matmul_attrs)->p;
  double beta = 1, alpha = 1;
  EG_TRY(eg_arg_opt_scalar(n, 3, "beta", &beta));
  EG_TRY(eg_arg_opt_scalar(n, 4, "alpha", &alpha));
  p->beta = (float)beta;
  p->alpha = (float)alpha;
  /* self expands to [n, m]: align its dims right; a dim of 1 repeats (stride 0) */
  const int64_t shape[2] = {p->n, p->m};
  bool ok = self->rank <= 2;
  int64_t stride = 1, st[2] = {0, 0};
  for (int d = 1, sd = self->rank - 1; ok && d >= 0 && sd >= 0; d--, sd--) {
    ok = self->shape[sd] == shape[d] || self->shape[sd] == 1;
    st[d] = self->shape[sd] == 1 ? 0 : stride;
    stride *= self->shape[sd];
  }
  if (!ok) {
    char s0[160], s1[160], s2[160], s3[160];
    return eg_node_error(n, EG_ERR_INVALID, "self %s does not expand to the shape %s of mat1 %s "
                         "@ mat2 %s", eg_fmt_ints(s0, sizeof s0, self->shape, self->rank),
                         eg_fmt_ints(s1, sizeof s1, shape, 2),
                         eg_fmt_ints(s2, sizeof s2, a->shape, 2),
                         eg_fmt_ints(s3, sizeof s3, b->shape, 2));
  }
  p->bias_rs = st[0];
  p->bias_cs = st[1];
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, 2, shape);
}

eg_status eg_run_addmm(const eg_exec *ex, const eg_node *n) {
  eg_addmm_f32(&EG_ATTRS(n, eg_matmul_attrs)->p, eg_exec_arg(ex, n, 0, "self"),
               eg_exec_arg(ex, n, 1, "mat1"), eg_exec_arg(ex, n, 2, "mat2"),
               eg_exec_out(ex, n));
  return EG_OK;
}

eg_status eg_check_bmm(eg_graph *g, eg_node *n) {
  const eg_value *a, *b;
  EG_TRY(check_pair(g, n, kw_mat2, 3, 3, &a, &b));
  if (a->shape[0] != b->shape[0]) {
    char sa[160], sb[160];
    return eg_node_error(n, EG_ERR_INVALID, "self %s and mat2 %s: batch sizes %lld and %lld "
                         "must be equal", eg_fmt_ints(sa, sizeof sa, a->shape, 3),
                         eg_fmt_ints(sb, sizeof sb, b->shape, 3), (long long)a->shape[0],
                         (long long)b->shape[0]);
  }
  EG_TRY(check_product(n, "self", a, "mat2", b, a->shape[1], a->shape[2], b->shape[1],
                       b->shape[2]));
  EG_ATTRS(n, eg_matmul_attrs)->batch = a->shape[0];
  const int64_t shape[3] = {a->shape[0], a->shape[1], b->shape[2]};
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, 3, shape);
}

eg_status eg_run_bmm(const eg_exec *ex, const eg_node *n) {
  const eg_matmul_attrs *at = EG_ATTRS(n, eg_matmul_attrs);
  eg_bmm_f32(&at->p, at->batch, eg_exec_arg(ex, n, 0, "self"), eg_exec_arg(ex, n, 1, "mat2"),
             eg_exec_out(ex, n));
  return EG_OK;
}

eg_status eg_check_mv(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "vec", NULL};
  const eg_value *a, *v;
  EG_TRY(check_pair(g, n, known, 2, 1, &a, &v));
  EG_TRY(check_product(n, "self", a, "vec", v, a->shape[0], a->shape[1], v->shape[0], 1));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, 1, a->shape);
}

eg_status eg_run_mv(const eg_exec *ex, const eg_node *n) { return run_product(ex, n, "vec"); }

eg_status eg_check_dot(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "tensor", NULL};
  const eg_value *a, *b;
  EG_TRY(check_pair(g, n, known, 1, 1, &a, &b));
  EG_TRY(check_product(n, "self", a, "tensor", b, 1, a->shape[0], b->shape[0], 1));
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, 0, NULL);
}

eg_status eg_run_dot(const eg_exec *ex, const eg_node *n) { return run_product(ex, n, "tensor"); }
