/* matmul.c — aten.mm and aten.addmm, fp32, by CBLAS sgemm (kernels/addmm_f32.h).
 *
 *   mm(self [n, k], mat2 [k, m])                                   -> [n, m]
 *   addmm(self, mat1 [n, k], mat2 [k, m], *, beta=1, alpha=1)     -> [n, m]
 *       = beta * self + alpha * mat1 @ mat2, self expandable to [n, m] (ATen's expand: rank <= 2,
 *       each of its dims equal to the result's or 1); with beta == 0 self is ignored.
 * Every matrix operand is 2-D and all share one dtype, as in ATen; only float32 is supported.
 * Shape errors name both operand shapes. */
#include <limits.h>

#include "kernels/addmm_f32.h"
#include "ops/op.h"

typedef struct eg_matmul_attrs {
  eg_addmm_params p;
} eg_matmul_attrs;
EG_ATTRS_FIT(eg_matmul_attrs);

/* A 2-D float32 matrix argument. */
static eg_status arg_matrix(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                            const eg_value **out) {
  EG_TRY(eg_arg_tensor(g, n, pos, kw, out));
  char s[160];
  if ((*out)->rank != 2)
    return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) has shape %s: %s takes 2-D "
                         "matrices", kw, pos, eg_fmt_ints(s, sizeof s, (*out)->shape,
                                                          (*out)->rank), eg_op_target(n->op));
  if ((*out)->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument %s (#%d) dtype %s: %s supports float32 "
                         "only", kw, pos, eg_dtype_name((*out)->dtype), eg_op_target(n->op));
  return EG_OK;
}

/* a [n, k] @ b [k, m]: checks the shapes and fills n, k, m (named na, nb in messages). */
static eg_status check_product(eg_node *n, const char *na, const eg_value *a, const char *nb,
                               const eg_value *b) {
  char sa[160], sb[160];
  eg_fmt_ints(sa, sizeof sa, a->shape, 2);
  eg_fmt_ints(sb, sizeof sb, b->shape, 2);
  if (a->shape[1] != b->shape[0])
    return eg_node_error(n, EG_ERR_INVALID, "%s %s and %s %s cannot be multiplied: %lld columns "
                         "against %lld rows", na, sa, nb, sb, (long long)a->shape[1],
                         (long long)b->shape[0]);
  if (a->shape[0] > INT_MAX || a->shape[1] > INT_MAX || b->shape[1] > INT_MAX)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "%s %s and %s %s: sgemm takes dimensions up to "
                         "%d", na, sa, nb, sb, INT_MAX);
  eg_addmm_params *p = &EG_ATTRS(n, eg_matmul_attrs)->p;
  *p = (eg_addmm_params){.n = a->shape[0], .k = a->shape[1], .m = b->shape[1],
                         .alpha = 1, .beta = 0};
  return EG_OK;
}

eg_status eg_check_mm(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "mat2", NULL};
  EG_TRY(eg_node_check_arity(n, 2, 2, known));
  const eg_value *a, *b;
  EG_TRY(arg_matrix(g, n, 0, "self", &a));
  EG_TRY(arg_matrix(g, n, 1, "mat2", &b));
  EG_TRY(check_product(n, "self", a, "mat2", b));
  const int64_t shape[2] = {a->shape[0], b->shape[1]};
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, 2, shape);
}

eg_status eg_run_mm(const eg_exec *ex, const eg_node *n) {
  eg_addmm_f32(&EG_ATTRS(n, eg_matmul_attrs)->p, NULL, eg_exec_arg(ex, n, 0, "self"),
               eg_exec_arg(ex, n, 1, "mat2"), eg_exec_out(ex, n));
  return EG_OK;
}

eg_status eg_check_addmm(eg_graph *g, eg_node *n) {
  static const char *const known[] = {"self", "mat1", "mat2", "beta", "alpha", NULL};
  EG_TRY(eg_node_check_arity(n, 3, 3, known));
  const eg_value *self, *a, *b;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &self));
  if (self->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "argument self (#0) dtype %s: %s supports "
                         "float32 only", eg_dtype_name(self->dtype), eg_op_target(n->op));
  EG_TRY(arg_matrix(g, n, 1, "mat1", &a));
  EG_TRY(arg_matrix(g, n, 2, "mat2", &b));
  EG_TRY(check_product(n, "mat1", a, "mat2", b));
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
