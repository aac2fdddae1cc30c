/* elementwise.c — ATen's pointwise arithmetic: relu, neg, threshold_backward, add/sub (Tensor
 * and Scalar overloads, with alpha), rsub (Scalar and Tensor), mul and div (Tensor, Scalar,
 * Tensor_mode and Scalar_mode overloads), and where.self(condition, self, other) (a bool
 * condition choosing between two float32 tensors, all three broadcast together; no dtype
 * promotion: other dtypes are unsupported).
 *
 * Every binary op is one row of a spec table: where its two operands come from (a tensor
 * argument, a Python number, or either), which kernel op it is, and where its alpha (or
 * threshold) is. One check and one run serve them all:
 *   - the result dtype follows ATen's result_type: dimensioned tensors outrank 0-d tensors,
 *     which outrank Python numbers, and a lower kind only counts when it is of a higher
 *     category (bool < integer < floating) — so float32 * 2.5 stays float32, and int64 * 2.5
 *     is float32 (the default dtype). True division of integers gives float32.
 *   - div's rounding_mode (Tensor_mode, Scalar_mode: None, 'trunc' or 'floor'; any other value
 *     is refused at check time): None is true division; 'trunc' and 'floor' keep the result
 *     dtype (integers stay integers) and round as ATen's kernels (elementwise_dense.h). An
 *     integer divisor of 0 is found before the kernel runs and fails the run (EG_ERR_RUNTIME),
 *     as ATen raises ZeroDivisionError; a float one gives +-inf or NaN.
 *   - shapes broadcast both ways (NumPy rules); a 0-d tensor broadcasts like a number.
 *   - an input whose dtype is not the computation dtype is converted into scratch first (as
 *     TensorIterator casts to the common dtype); Python numbers are converted at check time and
 *     kept in the attrs.
 * Kernels: kernels/elementwise_dense.h (computation dtypes float32, float64, int64, int32; where
 * float32). */
#include <stdio.h>
#include <string.h>

#include "kernels/copy_dense.h"
#include "kernels/elementwise_dense.h"
#include "ops/op.h"

/* ---- numbers and dtype promotion ---- */

/* A Python number argument, exactly as traced (an int keeps all 64 bits). */
typedef struct number {
  eg_arg_kind kind; /* EG_ARG_INT, EG_ARG_FLOAT or EG_ARG_BOOL */
  int64_t i;        /* int and bool */
  double f;         /* float */
} number;

static bool number_of(const eg_arg *a, number *out) {
  if (!a) return false;
  *out = (number){.kind = a->kind};
  switch (a->kind) {
  case EG_ARG_INT: out->i = a->i; return true;
  case EG_ARG_BOOL: out->i = a->b; return true;
  case EG_ARG_FLOAT: out->f = a->f; return true;
  default: return false;
  }
}

static double number_as_double(const number *x) {
  return x->kind == EG_ARG_FLOAT ? x->f : (double)x->i;
}

static void number_format(const number *x, char *buf, size_t size) {
  if (x->kind == EG_ARG_FLOAT) snprintf(buf, size, "%g", x->f);
  else if (x->kind == EG_ARG_BOOL) snprintf(buf, size, "%s", x->i ? "True" : "False");
  else snprintf(buf, size, "%lld", (long long)x->i);
}

static bool is_float(eg_dtype d) {
  return d == EG_DTYPE_FLOAT32 || d == EG_DTYPE_FLOAT64 || d == EG_DTYPE_FLOAT16;
}

/* Rank of an integer dtype by width; bool below all. */
static int int_rank(eg_dtype d) {
  switch (d) {
  case EG_DTYPE_BOOL: return 0;
  case EG_DTYPE_UINT8:
  case EG_DTYPE_INT8: return 1;
  case EG_DTYPE_INT32: return 3;
  case EG_DTYPE_INT64: return 4;
  default: return -1;
  }
}

static int float_rank(eg_dtype d) {
  return d == EG_DTYPE_FLOAT16 ? 0 : d == EG_DTYPE_FLOAT32 ? 1 : 2;
}

/* c10::promoteTypes on edgegrad's dtypes; EG_DTYPE_COUNT stands for "undefined" (either side
 * undefined gives the other) and is also returned for uint8 with int8, whose promotion (int16)
 * edgegrad has no dtype for. */
static eg_dtype promote_types(eg_dtype a, eg_dtype b) {
  if (a == EG_DTYPE_COUNT) return b;
  if (b == EG_DTYPE_COUNT || a == b) return a;
  if (is_float(a) || is_float(b)) {
    if (!is_float(a)) return b;
    if (!is_float(b)) return a;
    return float_rank(a) >= float_rank(b) ? a : b;
  }
  if (a == EG_DTYPE_BOOL) return b;
  if (b == EG_DTYPE_BOOL) return a;
  if (int_rank(a) == int_rank(b)) return EG_DTYPE_COUNT; /* uint8 with int8 -> int16 */
  return int_rank(a) > int_rank(b) ? a : b;
}

/* c10's combine_categories: the lower-priority kind counts only when its category is higher. */
static eg_dtype combine_categories(eg_dtype higher, eg_dtype lower) {
  if (higher != EG_DTYPE_COUNT && is_float(higher)) return higher;
  if (higher == EG_DTYPE_BOOL || (lower != EG_DTYPE_COUNT && is_float(lower)))
    return promote_types(higher, lower);
  return higher != EG_DTYPE_COUNT ? higher : lower;
}

/* Result-type state over the operands (ATen's ResultTypeState). */
typedef struct result_type {
  eg_dtype dim, zero, wrapped;
  bool failed; /* a promotion edgegrad cannot express (uint8 with int8) */
} result_type;

static void result_add(result_type *r, eg_dtype *slot, eg_dtype d) {
  eg_dtype p = promote_types(*slot, d);
  if (p == EG_DTYPE_COUNT && *slot != EG_DTYPE_COUNT) r->failed = true;
  *slot = p;
}

static void result_add_tensor(result_type *r, const eg_value *v) {
  result_add(r, v->rank > 0 ? &r->dim : &r->zero, v->dtype);
}

static void result_add_number(result_type *r, const number *x) {
  /* A wrapped Python number: float -> the default dtype (float32), int -> int64, bool. */
  eg_dtype d = x->kind == EG_ARG_FLOAT ? EG_DTYPE_FLOAT32
               : x->kind == EG_ARG_BOOL ? EG_DTYPE_BOOL
                                        : EG_DTYPE_INT64;
  result_add(r, &r->wrapped, d);
}

static eg_dtype result_dtype(const result_type *r) {
  if (r->failed) return EG_DTYPE_COUNT;
  return combine_categories(r->dim, combine_categories(r->zero, r->wrapped));
}

/* x as a value of computation dtype `d`. Floats are converted by C's rules (a float beyond
 * float32's range becomes inf, as ATen's cast of a wrapped number does); a float going to an
 * integer dtype must fit, else *ok = false. Integers wrap into int32. */
static eg_scalar number_to(const number *x, eg_dtype d, bool *ok) {
  eg_scalar s = {.i64 = 0};
  *ok = true;
  if (d == EG_DTYPE_FLOAT32) s.f32 = (float)number_as_double(x);
  else if (d == EG_DTYPE_FLOAT64) s.f64 = number_as_double(x);
  else if (x->kind != EG_ARG_FLOAT) {
    if (d == EG_DTYPE_INT64) s.i64 = x->i;
    else s.i32 = (int32_t)x->i; /* wraps (GCC, Clang) */
  } else {
    const double lim = d == EG_DTYPE_INT64 ? 0x1p63 : 0x1p31;
    *ok = x->f > -lim - 1.0 && x->f < lim; /* NaN fails */
    if (!*ok) return s;
    if (d == EG_DTYPE_INT64) s.i64 = (int64_t)x->f;
    else s.i32 = (int32_t)x->f;
  }
  return s;
}

static eg_scalar scalar_negate(eg_scalar s, eg_dtype d) {
  switch (d) {
  case EG_DTYPE_FLOAT32: s.f32 = -s.f32; break;
  case EG_DTYPE_FLOAT64: s.f64 = -s.f64; break;
  case EG_DTYPE_INT64: s.i64 = (int64_t)(0 - (uint64_t)s.i64); break;
  default: s.i32 = (int32_t)(0 - (uint32_t)s.i32); break;
  }
  return s;
}

static bool scalar_is_one(eg_scalar s, eg_dtype d) {
  switch (d) {
  case EG_DTYPE_FLOAT32: return s.f32 == 1.0f;
  case EG_DTYPE_FLOAT64: return s.f64 == 1.0;
  case EG_DTYPE_INT64: return s.i64 == 1;
  default: return s.i32 == 1;
  }
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static eg_status check_compute_dtype(const eg_node *n, const char *what, eg_dtype d) {
  if (eg_elementwise_dtype_ok(d)) return EG_OK;
  return eg_node_error(n, EG_ERR_UNSUPPORTED, "result dtype %s: %s computes in float32, "
                       "float64, int64 or int32 only", eg_dtype_name(d), what);
}

/* ---- binary ops ---- */

/* Where an operand comes from: argument `pos` / keyword `kw`, a tensor and/or a number. */
typedef struct operand_spec {
  int pos;
  const char *kw;
  bool tensor_ok, number_ok;
} operand_spec;

typedef struct binary_spec {
  const char *what;           /* the op in messages */
  eg_binary_op op;            /* ADD also stands for ADD_ALPHA */
  operand_spec a, b;          /* kernel operands: out = op(a, b) */
  int alpha_pos;              /* alpha / threshold argument; alpha_kw NULL: none */
  const char *alpha_kw;
  bool negate_alpha;          /* sub, rsub: a + (-alpha) * b */
  bool is_sub;                /* ATen's sub_check: no bool operands */
  bool true_div;              /* integer results are computed as float32 */
  bool rounding;              /* takes div's keyword rounding_mode */
  int max_pos;
  const char *const *known;   /* keyword names by position (eg_node_check_arity) */
} binary_spec;

static const char *const kw_tensor_alpha[] = {"self", "other", "alpha", NULL};
static const char *const kw_tensor[] = {"self", "other", NULL};
static const char *const kw_div[] = {"self", "other", "rounding_mode", NULL};
static const char *const kw_threshold[] = {"grad_output", "self", "threshold", NULL};

#define SELF_T {0, "self", true, false}
#define OTHER_TN {1, "other", true, true}
#define OTHER_N {1, "other", false, true}

static const binary_spec spec_add_Tensor = {"add", EG_BINARY_ADD, SELF_T, OTHER_TN, -1, "alpha",
                                            false, false, false, false, 2, kw_tensor_alpha};
static const binary_spec spec_sub_Tensor = {"sub", EG_BINARY_ADD, SELF_T, OTHER_TN, -1, "alpha",
                                            true, true, false, false, 2, kw_tensor_alpha};
static const binary_spec spec_add_Scalar = {"add", EG_BINARY_ADD, SELF_T, OTHER_N, 2, "alpha",
                                            false, false, false, false, 3, kw_tensor_alpha};
static const binary_spec spec_sub_Scalar = {"sub", EG_BINARY_ADD, SELF_T, OTHER_N, 2, "alpha",
                                            true, true, false, false, 3, kw_tensor_alpha};
/* rsub(self, other, alpha) = other - alpha * self: the number is the kernel's first operand. */
static const binary_spec spec_rsub_Scalar = {"rsub", EG_BINARY_ADD, OTHER_N, SELF_T, 2, "alpha",
                                             true, true, false, false, 3, kw_tensor_alpha};
static const binary_spec spec_mul_Tensor = {"mul", EG_BINARY_MUL, SELF_T, OTHER_TN, -1, NULL,
                                            false, false, false, false, 2, kw_tensor};
static const binary_spec spec_mul_Scalar = {"mul", EG_BINARY_MUL, SELF_T, OTHER_N, -1, NULL,
                                            false, false, false, false, 2, kw_tensor};
static const binary_spec spec_div_Tensor = {"div", EG_BINARY_DIV, SELF_T, OTHER_TN, -1, NULL,
                                            false, false, true, false, 2, kw_tensor};
/* div.Tensor_mode / div.Scalar_mode(self, other, *, rounding_mode=None) */
static const binary_spec spec_div_Tensor_mode = {"div", EG_BINARY_DIV, SELF_T, OTHER_TN, -1,
                                                 NULL, false, false, true, true, 2, kw_div};
static const binary_spec spec_div_Scalar = {"div", EG_BINARY_DIV, SELF_T, OTHER_N, -1, NULL,
                                            false, false, true, false, 2, kw_tensor};
static const binary_spec spec_div_Scalar_mode = {"div", EG_BINARY_DIV, SELF_T, OTHER_N, -1,
                                                 NULL, false, false, true, true, 2, kw_div};
/* threshold_backward(grad_output, self, threshold) = self <= threshold ? 0 : grad_output. */
static const binary_spec spec_threshold_backward = {
    "threshold_backward", EG_BINARY_THRESHOLD_BACKWARD, {0, "grad_output", true, false},
    {1, "self", true, false}, 2, "threshold", false, false, false, false, 3, kw_threshold};

/* Per operand, what the check decided. */
typedef struct operand_attrs {
  bool is_number;     /* a Python number, held in `value` */
  bool convert;       /* a tensor of another dtype, converted into scratch at `scratch_off` */
  eg_dtype dtype;     /* the tensor's own dtype */
  size_t scratch_off;
  eg_scalar value;
} operand_attrs;

typedef struct eg_binary_attrs {
  eg_binary_op op;    /* resolved: ADD_ALPHA when alpha != 1, DIV_TRUNC / DIV_FLOOR by mode */
  eg_dtype dtype;     /* computation and output dtype */
  eg_scalar alpha;    /* alpha (negated for sub) or threshold, in dtype */
  operand_attrs operand[2];
} eg_binary_attrs;
EG_ATTRS_FIT(eg_binary_attrs);

/* Reads operand `spec` into *v (a tensor) or *x (a number). */
static eg_status get_operand(const eg_graph *g, const eg_node *n, const operand_spec *spec,
                             const eg_value **v, number *x) {
  *v = NULL;
  const eg_arg *a = eg_node_arg(n, spec->pos, spec->kw);
  if (spec->number_ok && number_of(a, x)) return EG_OK;
  if (spec->tensor_ok) return eg_arg_tensor(g, n, spec->pos, spec->kw, v);
  const char *got = !a ? "missing" : a->kind == EG_ARG_VALUE ? "a tensor" : "not a number";
  return eg_node_error(n, EG_ERR_INVALID, "argument %s (#%d) is %s: %s takes a Python number "
                       "here", spec->kw, spec->pos, got, eg_op_target(n->op));
}

/* ATen's sub_check: subtraction is not defined on bool operands. */
static eg_status check_sub_bool(const eg_node *n, const eg_value *const v[2],
                                const number x[2]) {
  int bools = 0;
  for (int i = 0; i < 2; i++)
    bools += v[i] ? v[i]->dtype == EG_DTYPE_BOOL : x[i].kind == EG_ARG_BOOL;
  if (bools == 0) return EG_OK;
  return eg_node_error(n, EG_ERR_INVALID, "%s bool operand%s: subtraction is not defined on "
                       "bool (use logical_xor or logical_not)", bools == 2 ? "two" : "a",
                       bools == 2 ? "s" : "");
}

/* alpha (or threshold) in the computation dtype, with ATen's alpha_check. */
static eg_status check_alpha(const eg_node *n, const binary_spec *s, eg_binary_attrs *at) {
  at->alpha = (eg_scalar){.i64 = 0};
  if (!s->alpha_kw) return EG_OK;
  const bool threshold = s->op == EG_BINARY_THRESHOLD_BACKWARD;
  number x = {.kind = EG_ARG_INT, .i = 1};
  const eg_arg *a = eg_node_arg(n, s->alpha_pos, s->alpha_kw);
  if (threshold || (a && a->kind != EG_ARG_NONE)) {
    if (!number_of(a, &x))
      return eg_node_error(n, EG_ERR_INVALID, "argument %s is %s: expected a number",
                           s->alpha_kw, a ? "not a number" : "missing");
  }
  char buf[48];
  number_format(&x, buf, sizeof buf);
  if (!threshold && x.kind == EG_ARG_BOOL)
    return eg_node_error(n, EG_ERR_INVALID, "alpha (%s) is a bool: a bool alpha needs a bool "
                         "result, here %s", buf, eg_dtype_name(at->dtype));
  if (!threshold && x.kind == EG_ARG_FLOAT && !is_float(at->dtype))
    return eg_node_error(n, EG_ERR_INVALID, "alpha (%s) is a float: for integral inputs (result "
                         "%s) alpha must be an integer", buf, eg_dtype_name(at->dtype));
  bool ok;
  at->alpha = number_to(&x, at->dtype, &ok);
  if (!ok)
    return eg_node_error(n, EG_ERR_INVALID, "%s (%s): cannot be converted to %s without "
                         "overflow", s->alpha_kw, buf, eg_dtype_name(at->dtype));
  if (s->negate_alpha) at->alpha = scalar_negate(at->alpha, at->dtype);
  return EG_OK;
}

/* Operand plan: a number is converted to `dtype` now; a tensor of another dtype gets a
 * converted copy in scratch (at *scratch, which grows) at run time. */
static eg_status plan_operand(const eg_node *n, const eg_value *v, const number *x,
                              eg_dtype dtype, operand_attrs *o, size_t *scratch) {
  if (!v) {
    bool ok;
    o->is_number = true;
    o->value = number_to(x, dtype, &ok);
    if (ok) return EG_OK;
    char buf[48];
    number_format(x, buf, sizeof buf);
    return eg_node_error(n, EG_ERR_INVALID, "operand %s: cannot be converted to %s without "
                         "overflow", buf, eg_dtype_name(dtype));
  }
  o->dtype = v->dtype;
  if (v->dtype == dtype) return EG_OK;
  if (!eg_cast_supported(v->dtype, dtype))
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "operand dtype %s: no conversion to %s",
                         eg_dtype_name(v->dtype), eg_dtype_name(dtype));
  o->convert = true;
  o->scratch_off = *scratch;
  *scratch += align64((size_t)eg_value_numel(v) * eg_dtype_size(dtype));
  return EG_OK;
}

/* The kernel op of div's rounding_mode (keyword only): None keeps spec's true division. */
static eg_status check_rounding(const eg_node *n, const binary_spec *s, eg_binary_op *op,
                                bool *true_div) {
  static const char *const modes[] = {"trunc", "floor", NULL};
  int mode = -1;
  *op = s->op;
  *true_div = s->true_div;
  if (!s->rounding) return EG_OK;
  EG_TRY(eg_arg_choice(n, -1, "rounding_mode", modes, true, &mode));
  if (mode < 0) return EG_OK;
  *op = mode == 0 ? EG_BINARY_DIV_TRUNC : EG_BINARY_DIV_FLOOR;
  *true_div = false; /* ATen: the operands' common dtype, integers included */
  return EG_OK;
}

static eg_status check_binary(eg_graph *g, eg_node *n, const binary_spec *s) {
  EG_TRY(eg_node_check_arity(n, s->max_pos, s->max_pos, s->known));
  const eg_value *v[2];
  number x[2] = {{0}, {0}};
  EG_TRY(get_operand(g, n, &s->a, &v[0], &x[0]));
  EG_TRY(get_operand(g, n, &s->b, &v[1], &x[1]));
  eg_binary_op op;
  bool true_div;
  EG_TRY(check_rounding(n, s, &op, &true_div));
  if (s->is_sub) EG_TRY(check_sub_bool(n, v, x));

  /* Result dtype and computation dtype (they are the same). */
  result_type rt = {EG_DTYPE_COUNT, EG_DTYPE_COUNT, EG_DTYPE_COUNT, false};
  for (int i = 0; i < 2; i++) {
    if (v[i]) result_add_tensor(&rt, v[i]);
    else result_add_number(&rt, &x[i]);
  }
  eg_dtype dtype = result_dtype(&rt);
  if (dtype == EG_DTYPE_COUNT)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "operands uint8 and int8 promote to int16: "
                         "edgegrad has no int16");
  if (true_div && !is_float(dtype)) dtype = EG_DTYPE_FLOAT32;
  EG_TRY(check_compute_dtype(n, s->what, dtype));

  eg_binary_attrs *at = EG_ATTRS(n, eg_binary_attrs);
  memset(at, 0, sizeof *at);
  at->dtype = dtype;
  EG_TRY(check_alpha(n, s, at));
  at->op = op;
  if (op == EG_BINARY_ADD && !scalar_is_one(at->alpha, dtype)) at->op = EG_BINARY_ADD_ALPHA;

  size_t scratch = 0;
  for (int i = 0; i < 2; i++)
    EG_TRY(plan_operand(n, v[i], &x[i], dtype, &at->operand[i], &scratch));
  n->scratch_bytes = scratch;

  static const int64_t no_shape[1] = {0};
  const int64_t *shape[2] = {v[0] ? v[0]->shape : no_shape, v[1] ? v[1]->shape : no_shape};
  const int rank[2] = {v[0] ? v[0]->rank : 0, v[1] ? v[1]->rank : 0};
  int64_t out[EG_MAX_RANK];
  int out_rank;
  if (!eg_broadcast_shapes(shape[0], rank[0], shape[1], rank[1], out, &out_rank)) {
    char sa[160], sb[160];
    return eg_node_error(n, EG_ERR_INVALID, "operand shapes %s and %s: they do not broadcast "
                         "(trailing dims must be equal or 1)",
                         eg_fmt_ints(sa, sizeof sa, shape[0], rank[0]),
                         eg_fmt_ints(sb, sizeof sb, shape[1], rank[1]));
  }
  return eg_out_tensor(g, n, dtype, out_rank, out);
}

/* Data of operand i in the computation dtype, with its value (NULL for a number). */
static const void *run_operand(const eg_exec *ex, const eg_node *n, const operand_spec *spec,
                               const operand_attrs *o, eg_dtype dtype, const eg_value **v) {
  *v = NULL;
  if (o->is_number) return &o->value;
  *v = eg_exec_argv(ex, n, spec->pos, spec->kw);
  const void *data = eg_exec_arg(ex, n, spec->pos, spec->kw);
  if (!o->convert) return data;
  void *dst = (char *)ex->scratch + o->scratch_off;
  eg_cast_dense(data, o->dtype, dst, dtype, eg_value_numel(*v));
  return dst;
}

/* ATen's integer division by zero (ZeroDivisionError), checked before the kernel runs: with a
 * non-empty result every element of the divisor is read. */
static eg_status check_divisor(const eg_node *n, const eg_binary_attrs *at, const void *b,
                               const eg_value *bv, const eg_value *out) {
  const bool rounding = at->op == EG_BINARY_DIV_TRUNC || at->op == EG_BINARY_DIV_FLOOR;
  if (!rounding || is_float(at->dtype) || eg_value_numel(out) == 0) return EG_OK;
  const int64_t zero = eg_binary_first_zero(at->dtype, b, bv ? eg_value_numel(bv) : 1);
  if (zero < 0) return EG_OK;
  char at_text[48] = "";
  if (bv) snprintf(at_text, sizeof at_text, " element %lld", (long long)zero);
  return eg_node_error(n, EG_ERR_RUNTIME, "integer division by zero (other%s is 0, rounding_mode "
                       "'%s', %s): ATen raises ZeroDivisionError", at_text,
                       at->op == EG_BINARY_DIV_TRUNC ? "trunc" : "floor",
                       eg_dtype_name(at->dtype));
}

static eg_status run_binary(const eg_exec *ex, const eg_node *n, const binary_spec *s) {
  const eg_binary_attrs *at = EG_ATTRS(n, eg_binary_attrs);
  const eg_value *v[2];
  const void *data[2] = {run_operand(ex, n, &s->a, &at->operand[0], at->dtype, &v[0]),
                         run_operand(ex, n, &s->b, &at->operand[1], at->dtype, &v[1])};
  const eg_value *out = eg_exec_outv(ex, n);
  EG_TRY(check_divisor(n, at, data[1], v[1], out));
  int64_t stride[2][EG_MAX_RANK];
  for (int i = 0; i < 2; i++) {
    if (v[i]) eg_broadcast_strides(v[i]->shape, v[i]->rank, out->shape, out->rank, stride[i]);
    else
      for (int d = 0; d < out->rank; d++) stride[i][d] = 0;
  }
  const int64_t *strides[2] = {stride[0], stride[1]};
  eg_iter it;
  eg_iter_init(&it, out->shape, out->rank, 2, strides);
  eg_binary_dense(at->op, at->dtype, &it, data[0], data[1], at->alpha, eg_exec_out(ex, n));
  return EG_OK;
}

#define BINARY_OP(id)                                              \
  eg_status eg_check_##id(eg_graph *g, eg_node *n) {               \
    return check_binary(g, n, &spec_##id);                         \
  }                                                                \
  eg_status eg_run_##id(const eg_exec *ex, const eg_node *n) {     \
    return run_binary(ex, n, &spec_##id);                          \
  }

BINARY_OP(add_Tensor)
BINARY_OP(sub_Tensor)
BINARY_OP(add_Scalar)
BINARY_OP(sub_Scalar)
BINARY_OP(rsub_Scalar)
BINARY_OP(mul_Tensor)
BINARY_OP(mul_Scalar)
BINARY_OP(div_Tensor)
BINARY_OP(div_Tensor_mode)
BINARY_OP(div_Scalar)
BINARY_OP(div_Scalar_mode)
BINARY_OP(threshold_backward)

/* Whether checked node n is op `op` computing kernel op `kop` in float32 on two float32
 * tensors, the first (and the second unless `broadcast`) as large as the result, with
 * *operand their value ids. */
static bool binary_f32(const eg_graph *g, const eg_node *n, eg_op op, eg_binary_op kop,
                       bool broadcast, int32_t operand[2]) {
  const eg_binary_attrs *at = EG_ATTRS(n, const eg_binary_attrs);
  if (n->op != op || at->op != kop || at->dtype != EG_DTYPE_FLOAT32 || n->output < 0)
    return false;
  const int64_t numel = eg_value_numel(&g->values[n->output]);
  for (int i = 0; i < 2; i++) {
    operand[i] = eg_exec_arg_id(n, i, i ? "other" : "self");
    if (at->operand[i].is_number || at->operand[i].convert || operand[i] < 0 ||
        (eg_value_numel(&g->values[operand[i]]) != numel && !(i && broadcast)))
      return false;
  }
  return true;
}

bool eg_op_add_f32(const eg_graph *g, const eg_node *n, int32_t operand[2]) {
  return binary_f32(g, n, EG_OP_add_Tensor, EG_BINARY_ADD, false, operand);
}

bool eg_op_sub_f32(const eg_graph *g, const eg_node *n, int32_t operand[2], float *alpha) {
  if (!binary_f32(g, n, EG_OP_sub_Tensor, EG_BINARY_ADD_ALPHA, true, operand)) return false;
  *alpha = EG_ATTRS(n, const eg_binary_attrs)->alpha.f32;
  return true;
}

bool eg_op_square_f32(const eg_graph *g, const eg_node *n, int32_t *x) {
  int32_t operand[2];
  if (!binary_f32(g, n, EG_OP_mul_Tensor, EG_BINARY_MUL, false, operand) ||
      operand[0] != operand[1])
    return false;
  *x = operand[0];
  return true;
}

bool eg_threshold_backward_f32(const eg_node *n, float *threshold) {
  const eg_binary_attrs *at = EG_ATTRS(n, const eg_binary_attrs);
  if (n->op != EG_OP_threshold_backward || at->dtype != EG_DTYPE_FLOAT32 ||
      at->operand[0].is_number || at->operand[1].is_number || at->operand[0].convert ||
      at->operand[1].convert)
    return false;
  *threshold = at->alpha.f32;
  return true;
}

/* ---- rsub.Tensor ---- */

/* rsub.Tensor(self, other, *, alpha=1) = other - alpha * self, broadcasting both ways: the
 * kernel computes other + (-alpha) * self, as for rsub.Scalar but with a tensor (or a number,
 * as sub.Tensor takes one) for other. */
static const binary_spec spec_rsub_Tensor = {"rsub", EG_BINARY_ADD, OTHER_TN, SELF_T, -1,
                                             "alpha", true, true, false, false, 2,
                                             kw_tensor_alpha};
BINARY_OP(rsub_Tensor)

/* ---- unary ops ---- */

static const char *const kw_self[] = {"self", NULL};

static eg_status check_unary(eg_graph *g, eg_node *n, const char *what) {
  EG_TRY(eg_node_check_arity(n, 1, 1, kw_self));
  const eg_value *x;
  EG_TRY(eg_arg_tensor(g, n, 0, "self", &x));
  if (n->op == EG_OP_neg && x->dtype == EG_DTYPE_BOOL)
    return eg_node_error(n, EG_ERR_INVALID, "self dtype bool: negation is not defined on bool "
                         "(use logical_not)");
  EG_TRY(check_compute_dtype(n, what, x->dtype));
  return eg_out_tensor(g, n, x->dtype, x->rank, x->shape);
}

static eg_status run_unary(const eg_exec *ex, const eg_node *n, eg_unary_op op) {
  const eg_value *x = eg_exec_argv(ex, n, 0, "self");
  eg_unary_dense(op, x->dtype, eg_exec_arg(ex, n, 0, "self"), eg_exec_out(ex, n),
                 eg_value_numel(x));
  return EG_OK;
}

eg_status eg_check_relu(eg_graph *g, eg_node *n) { return check_unary(g, n, "relu"); }
eg_status eg_run_relu(const eg_exec *ex, const eg_node *n) {
  return run_unary(ex, n, EG_UNARY_RELU);
}

eg_status eg_check_neg(eg_graph *g, eg_node *n) { return check_unary(g, n, "neg"); }
eg_status eg_run_neg(const eg_exec *ex, const eg_node *n) {
  return run_unary(ex, n, EG_UNARY_NEG);
}

/* ---- where ---- */

static const char *const kw_where[] = {"condition", "self", "other", NULL};

eg_status eg_check_where_self(eg_graph *g, eg_node *n) {
  EG_TRY(eg_node_check_arity(n, 3, 3, kw_where));
  const eg_value *v[3];
  for (int i = 0; i < 3; i++) EG_TRY(eg_arg_tensor(g, n, i, kw_where[i], &v[i]));
  if (v[0]->dtype != EG_DTYPE_BOOL)
    return eg_node_error(n, EG_ERR_INVALID, "condition dtype %s: where expects a bool "
                         "condition", eg_dtype_name(v[0]->dtype));
  for (int i = 1; i < 3; i++)
    if (v[i]->dtype != EG_DTYPE_FLOAT32)
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "%s dtype %s: where runs on float32 self "
                           "and other only", kw_where[i], eg_dtype_name(v[i]->dtype));
  int64_t shape[EG_MAX_RANK];
  int rank = v[0]->rank;
  memcpy(shape, v[0]->shape, sizeof(int64_t) * (size_t)rank);
  for (int i = 1; i < 3; i++) {
    int64_t next[EG_MAX_RANK]; /* eg_broadcast_shapes' output must not alias an input */
    if (eg_broadcast_shapes(shape, rank, v[i]->shape, v[i]->rank, next, &rank)) {
      memcpy(shape, next, sizeof(int64_t) * (size_t)rank);
      continue;
    }
    char s0[160], s1[160], s2[160];
    return eg_node_error(n, EG_ERR_INVALID, "condition shape %s, self shape %s and other shape "
                         "%s: they do not broadcast (trailing dims must be equal or 1)",
                         eg_fmt_ints(s0, sizeof s0, v[0]->shape, v[0]->rank),
                         eg_fmt_ints(s1, sizeof s1, v[1]->shape, v[1]->rank),
                         eg_fmt_ints(s2, sizeof s2, v[2]->shape, v[2]->rank));
  }
  return eg_out_tensor(g, n, EG_DTYPE_FLOAT32, rank, shape);
}

eg_status eg_run_where_self(const eg_exec *ex, const eg_node *n) {
  const eg_value *out = eg_exec_outv(ex, n);
  int64_t stride[3][EG_MAX_RANK];
  const int64_t *strides[3] = {stride[0], stride[1], stride[2]};
  for (int i = 0; i < 3; i++) {
    const eg_value *v = eg_exec_argv(ex, n, i, kw_where[i]);
    eg_broadcast_strides(v->shape, v->rank, out->shape, out->rank, stride[i]);
  }
  eg_iter it;
  eg_iter_init(&it, out->shape, out->rank, 3, strides);
  eg_where_dense_f32(&it, eg_exec_arg(ex, n, 0, "condition"), eg_exec_arg(ex, n, 1, "self"),
                     eg_exec_arg(ex, n, 2, "other"), eg_exec_out(ex, n));
  return EG_OK;
}
