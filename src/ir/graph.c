/* graph.c — graph lifetime, value helpers, argument accessors and output checks used by every
 * op's check (see graph.h). */
#include "ir/graph.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/error.h"

eg_graph *eg_graph_create(void) {
  eg_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->arena = eg_arena_create();
  if (!g->arena) {
    free(g);
    return NULL;
  }
  return g;
}

void eg_graph_destroy(eg_graph *g) {
  if (!g) return;
  eg_arena_destroy(g->arena);
  free(g);
}

/* Every reader checks a value's shape with eg_shape_numel before the value exists (graph.h),
 * so these counts cannot fail: a failure is edgegrad's own bug. */
int64_t eg_value_numel(const eg_value *v) {
  const int64_t n = eg_shape_numel(v->shape, v->rank, EG_MAX_NUMEL);
  EG_ASSERT(n >= 0);
  return n < 0 ? 0 : n;
}

size_t eg_value_nbytes(const eg_value *v) {
  size_t nbytes = 0;
  const bool ok = eg_count_bytes(eg_value_numel(v), eg_dtype_size(v->dtype), &nbytes);
  EG_ASSERT(ok);
  (void)ok;
  return nbytes;
}

eg_quant *eg_quant_copy(eg_arena *a, const eg_quant *q) {
  eg_quant *c = eg_arena_alloc(a, sizeof *c);
  double *scale = eg_arena_array(a, (size_t)q->n + 1, sizeof(double));
  int64_t *zp = eg_arena_array(a, (size_t)q->n + 1, sizeof(int64_t));
  if (!c || !scale || !zp) return NULL;
  *c = *q;
  if (q->n > 0) {
    memcpy(scale, q->scale, (size_t)q->n * sizeof(double));
    memcpy(zp, q->zero_point, (size_t)q->n * sizeof(int64_t));
  }
  c->scale = scale;
  c->zero_point = zp;
  return c;
}

bool eg_quant_equal(const eg_quant *a, const eg_quant *b) {
  if (!a || !b) return a == b;
  if (a->dtype != b->dtype || a->axis != b->axis || a->n != b->n || a->qmin != b->qmin ||
      a->qmax != b->qmax)
    return false;
  for (int32_t i = 0; i < a->n; i++)
    if (a->scale[i] != b->scale[i] || a->zero_point[i] != b->zero_point[i]) return false;
  return true;
}

const char *eg_value_label(const eg_graph *g, int32_t id) {
  if (id < 0 || id >= g->n_values) return "?";
  const eg_value *v = &g->values[id];
  switch (v->role) {
  case EG_ROLE_INPUT: return g->inputs[v->def].name;
  case EG_ROLE_STATIC: return g->statics[v->def].name;
  case EG_ROLE_NODE: return g->nodes[v->def].name;
  default: return "?";
  }
}

eg_status eg_node_error(const eg_node *n, eg_status status, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return eg_error(status, "node %s: %s", n->name, msg);
}

int eg_wrap_dim(int64_t dim, int rank) {
  int64_t r = rank > 0 ? rank : 1; /* ATen lets a 0-d tensor use dims -1 and 0 */
  if (dim < -r || dim >= r) return -1;
  return (int)(dim < 0 ? dim + r : dim);
}

bool eg_broadcast_shapes(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out,
                         int *rout) {
  int r = ra > rb ? ra : rb;
  for (int i = 0; i < r; i++) {
    int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
    int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  *rout = r;
  return true;
}

/* ---- argument access ---- */

const eg_arg *eg_node_arg(const eg_node *n, int pos, const char *kw) {
  if (pos >= 0 && pos < n->n_args) return &n->args[pos];
  if (kw)
    for (int i = 0; i < n->n_kwargs; i++)
      if (strcmp(n->kwarg_names[i], kw) == 0) return &n->kwargs[i];
  return NULL;
}

static const char *arg_label(char *buf, size_t size, int pos, const char *kw) {
  if (kw) snprintf(buf, size, "argument %s (#%d)", kw, pos);
  else snprintf(buf, size, "argument #%d", pos);
  return buf;
}

static const char *kind_name(eg_arg_kind k) {
  static const char *const names[] = {"None", "int", "float", "bool", "value", "list",
                                      "dtype", "layout", "device", "memory_format", "str"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static eg_status arg_missing(const eg_node *n, int pos, const char *kw, const char *want) {
  char l[96];
  return eg_node_error(n, EG_ERR_INVALID, "%s missing: expected %s",
                       arg_label(l, sizeof l, pos, kw), want);
}

static eg_status arg_wrong(const eg_node *n, int pos, const char *kw, const eg_arg *a,
                           const char *want) {
  char l[96];
  return eg_node_error(n, EG_ERR_INVALID, "%s is a %s: expected %s",
                       arg_label(l, sizeof l, pos, kw), kind_name(a->kind), want);
}

static eg_status get_tensor(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                            const eg_value **out, bool optional) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  *out = NULL;
  if (!a || a->kind == EG_ARG_NONE) {
    if (optional) return EG_OK;
    return a ? arg_wrong(n, pos, kw, a, "a tensor") : arg_missing(n, pos, kw, "a tensor");
  }
  if (a->kind != EG_ARG_VALUE) return arg_wrong(n, pos, kw, a, "a tensor");
  /* ids were range-checked by the loader/verifier before any op check runs */
  const eg_value *v = &g->values[a->value];
  if (v->kind != EG_VALUE_TENSOR) {
    char l[96];
    return eg_node_error(n, EG_ERR_INVALID, "%s is tuple %s: expected a tensor (only getitem "
                         "may take a tuple)", arg_label(l, sizeof l, pos, kw),
                         eg_value_label(g, a->value));
  }
  *out = v;
  return EG_OK;
}

eg_status eg_arg_tensor(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                        const eg_value **out) {
  return get_tensor(g, n, pos, kw, out, false);
}

eg_status eg_arg_opt_tensor(const eg_graph *g, const eg_node *n, int pos, const char *kw,
                            const eg_value **out) {
  return get_tensor(g, n, pos, kw, out, true);
}

eg_status eg_arg_int(const eg_node *n, int pos, const char *kw, int64_t *out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a) return arg_missing(n, pos, kw, "an int");
  if (a->kind == EG_ARG_INT) *out = a->i;
  else if (a->kind == EG_ARG_BOOL) *out = a->b;
  else return arg_wrong(n, pos, kw, a, "an int");
  return EG_OK;
}

eg_status eg_arg_opt_int(const eg_node *n, int pos, const char *kw, int64_t *out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a || a->kind == EG_ARG_NONE) return EG_OK;
  return eg_arg_int(n, pos, kw, out);
}

eg_status eg_arg_bool(const eg_node *n, int pos, const char *kw, bool *out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a) return arg_missing(n, pos, kw, "a bool");
  if (a->kind != EG_ARG_BOOL) return arg_wrong(n, pos, kw, a, "a bool");
  *out = a->b;
  return EG_OK;
}

eg_status eg_arg_opt_bool(const eg_node *n, int pos, const char *kw, bool *out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a || a->kind == EG_ARG_NONE) return EG_OK;
  return eg_arg_bool(n, pos, kw, out);
}

eg_status eg_arg_scalar(const eg_node *n, int pos, const char *kw, double *out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a) return arg_missing(n, pos, kw, "a number");
  switch (a->kind) {
  case EG_ARG_INT: *out = (double)a->i; return EG_OK;
  case EG_ARG_FLOAT: *out = a->f; return EG_OK;
  case EG_ARG_BOOL: *out = a->b; return EG_OK;
  default: return arg_wrong(n, pos, kw, a, "a number");
  }
}

eg_status eg_arg_opt_scalar(const eg_node *n, int pos, const char *kw, double *out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a || a->kind == EG_ARG_NONE) return EG_OK;
  return eg_arg_scalar(n, pos, kw, out);
}

eg_status eg_arg_int_list(const eg_node *n, int pos, const char *kw, int64_t *out, int min_n,
                          int max_n, int *n_out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  char want[64], l[96];
  snprintf(want, sizeof want, "a list of %d to %d ints", min_n, max_n);
  if (!a) return arg_missing(n, pos, kw, want);
  if (a->kind == EG_ARG_INT && min_n <= 1 && max_n >= 1) {
    out[0] = a->i;
    *n_out = 1;
    return EG_OK;
  }
  if (a->kind != EG_ARG_LIST) return arg_wrong(n, pos, kw, a, want);
  if (a->list.n < min_n || a->list.n > max_n)
    return eg_node_error(n, EG_ERR_INVALID, "%s has %d elements: expected %d to %d",
                         arg_label(l, sizeof l, pos, kw), a->list.n, min_n, max_n);
  for (int i = 0; i < a->list.n; i++) {
    if (a->list.items[i].kind != EG_ARG_INT)
      return eg_node_error(n, EG_ERR_INVALID, "%s element %d is a %s: expected an int",
                           arg_label(l, sizeof l, pos, kw), i,
                           kind_name(a->list.items[i].kind));
    out[i] = a->list.items[i].i;
  }
  *n_out = a->list.n;
  return EG_OK;
}

eg_status eg_arg_opt_int_list(const eg_node *n, int pos, const char *kw, int64_t *out,
                              int min_n, int max_n, int *n_out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a || a->kind == EG_ARG_NONE) {
    *n_out = -1;
    return EG_OK;
  }
  return eg_arg_int_list(n, pos, kw, out, min_n, max_n, n_out);
}

eg_status eg_arg_bool_list(const eg_node *n, int pos, const char *kw, bool *out, int count) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  char want[64], l[96];
  snprintf(want, sizeof want, "a list of %d bools", count);
  if (!a) return arg_missing(n, pos, kw, want);
  if (a->kind != EG_ARG_LIST) return arg_wrong(n, pos, kw, a, want);
  if (a->list.n != count)
    return eg_node_error(n, EG_ERR_INVALID, "%s has %d elements: expected %d",
                         arg_label(l, sizeof l, pos, kw), a->list.n, count);
  for (int i = 0; i < count; i++) {
    if (a->list.items[i].kind != EG_ARG_BOOL)
      return eg_node_error(n, EG_ERR_INVALID, "%s element %d is a %s: expected a bool",
                           arg_label(l, sizeof l, pos, kw), i,
                           kind_name(a->list.items[i].kind));
    out[i] = a->list.items[i].b;
  }
  return EG_OK;
}

eg_status eg_arg_opt_dtype(const eg_node *n, int pos, const char *kw, eg_dtype *out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a || a->kind == EG_ARG_NONE) return EG_OK;
  if (a->kind != EG_ARG_DTYPE) return arg_wrong(n, pos, kw, a, "a dtype");
  *out = a->dtype;
  return EG_OK;
}

/* s for a message: itself when it is 1 to 32 printable ASCII characters, else its length (a
 * .egp string may hold any bytes, and a message is one line). */
static const char *shown_str(char *buf, size_t size, const char *s) {
  size_t len = strlen(s);
  bool plain = len > 0 && len <= 32;
  for (size_t i = 0; plain && i < len; i++) plain = s[i] >= 0x20 && s[i] <= 0x7e;
  if (plain) snprintf(buf, size, "'%s'", s);
  else snprintf(buf, size, "(a str of %zu bytes)", len);
  return buf;
}

eg_status eg_arg_choice(const eg_node *n, int pos, const char *kw, const char *const *choices,
                        bool none_ok, int *out) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  if (!a || (none_ok && a->kind == EG_ARG_NONE)) return EG_OK;
  char set[160] = "", l[96], s[64];
  for (int k = 0; choices[k]; k++) {
    size_t used = strlen(set);
    snprintf(set + used, sizeof set - used, "%s%s", k ? ", " : "", choices[k]);
  }
  const char *label = pos < 0 && kw ? kw : arg_label(l, sizeof l, pos, kw); /* keyword-only */
  if (a->kind != EG_ARG_STR)
    return eg_node_error(n, EG_ERR_INVALID, "%s is a %s: expected %sa str in {%s}", label,
                         kind_name(a->kind), none_ok ? "None or " : "", set);
  for (int k = 0; choices[k]; k++)
    if (strcmp(a->str, choices[k]) == 0) {
      *out = k;
      return EG_OK;
    }
  return eg_node_error(n, EG_ERR_INVALID, "%s %s not in {%s}", label,
                       shown_str(s, sizeof s, a->str), set);
}

eg_status eg_node_check_arity(const eg_node *n, int min_pos, int max_pos,
                              const char *const *known) {
  if (n->n_args > max_pos)
    return eg_node_error(n, EG_ERR_INVALID, "%d positional arguments: %s takes at most %d",
                         n->n_args, eg_op_target(n->op), max_pos);
  for (int i = 0; i < n->n_kwargs; i++) {
    int pos = -1;
    for (int k = 0; known && known[k]; k++)
      if (strcmp(known[k], n->kwarg_names[i]) == 0) pos = k;
    if (pos < 0)
      return eg_node_error(n, EG_ERR_INVALID, "unknown keyword argument '%s' for %s",
                           n->kwarg_names[i], eg_op_target(n->op));
    if (pos < n->n_args)
      return eg_node_error(n, EG_ERR_INVALID, "argument '%s' given both by position and keyword",
                           n->kwarg_names[i]);
  }
  (void)min_pos; /* required arguments are reported by their accessors, with their names */
  return EG_OK;
}

/* ---- output checks ---- */

static eg_status compare_tensor(const eg_graph *g, const eg_node *n, const char *what,
                                int32_t id, eg_dtype dtype, int rank, const int64_t *shape) {
  const eg_value *v = &g->values[id];
  char got[160], want[160];
  if (v->kind != EG_VALUE_TENSOR)
    return eg_node_error(n, EG_ERR_INVALID, "%s is a tuple: %s gives a tensor", what,
                         eg_op_target(n->op));
  if (v->dtype != dtype)
    return eg_node_error(n, EG_ERR_INVALID, "%s dtype %s contradicts %s (expected %s)", what,
                         eg_dtype_name(v->dtype), eg_op_target(n->op), eg_dtype_name(dtype));
  bool same = v->rank == rank;
  for (int i = 0; same && i < rank; i++) same = v->shape[i] == shape[i];
  if (!same)
    return eg_node_error(n, EG_ERR_INVALID, "%s shape %s contradicts %s (expected %s)", what,
                         eg_fmt_ints(got, sizeof got, v->shape, v->rank), eg_op_target(n->op),
                         eg_fmt_ints(want, sizeof want, shape, rank));
  return EG_OK;
}

eg_status eg_out_tensor(const eg_graph *g, const eg_node *n, eg_dtype dtype, int rank,
                        const int64_t *shape) {
  if (n->output < 0)
    return eg_node_error(n, EG_ERR_INVALID, "output is None: %s gives a tensor",
                         eg_op_target(n->op));
  return compare_tensor(g, n, "output", n->output, dtype, rank, shape);
}

eg_status eg_out_tuple(const eg_graph *g, const eg_node *n, int count) {
  if (n->output < 0 || g->values[n->output].kind != EG_VALUE_TUPLE)
    return eg_node_error(n, EG_ERR_INVALID, "output is not a tuple: %s gives a tuple of %d",
                         eg_op_target(n->op), count);
  const eg_value *t = &g->values[n->output];
  if (t->n_elems != count)
    return eg_node_error(n, EG_ERR_INVALID, "output tuple has %d elements: %s gives %d",
                         t->n_elems, eg_op_target(n->op), count);
  return EG_OK;
}

eg_status eg_out_elem(const eg_graph *g, const eg_node *n, int i, bool present, eg_dtype dtype,
                      int rank, const int64_t *shape) {
  const eg_value *t = &g->values[n->output];
  int32_t id = t->elems[i];
  char what[48];
  snprintf(what, sizeof what, "output element %d", i);
  if (!present) {
    if (id >= 0)
      return eg_node_error(n, EG_ERR_INVALID, "%s is a tensor: expected None here", what);
    return EG_OK;
  }
  if (id < 0) return eg_node_error(n, EG_ERR_INVALID, "%s is None: expected a tensor", what);
  return compare_tensor(g, n, what, id, dtype, rank, shape);
}
