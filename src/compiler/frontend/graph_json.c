/* graph_json.c — the graph-file loader (docs/graph-format.md, version 1).
 *
 * Reads with jansson, fills the IR arrays, attaches the static weights from the safetensors
 * file, then runs the verifier and checks the inputs' and outputs' roles (ir/io_role.h). Every
 * field is checked before use; a failure leaves one message
 * "<file>: <where>: <what>: <rule>" and frees everything built so far. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/frontend.h"
#include "ir/io_role.h"
#include "util/checked.h"
#include "util/error.h"
#include "ops/verify.h"
#include "util/file.h"
#include "util/names.h"

#define EG_GRAPH_MAX_FILE ((size_t)1 << 30)
#define EG_GRAPH_FORMAT "edgegrad.graph"
#define EG_GRAPH_VERSION 1

typedef struct loader {
  const char *path;
  eg_graph *g;
} loader;

static eg_status bad(eg_status s, const char *fmt, ...) EG_PRINTF(2, 3);
static eg_status bad(eg_status s, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return eg_error(s, "%s", msg);
}

static eg_status get_array(json_t *obj, const char *key, const char *where, json_t **out) {
  *out = json_object_get(obj, key);
  if (!json_is_array(*out)) return bad(EG_ERR_FORMAT, "%s: '%s' missing or not a list", where, key);
  return EG_OK;
}

static eg_status get_string(json_t *obj, const char *key, const char *where, const char **out) {
  json_t *v = json_object_get(obj, key);
  if (!json_is_string(v)) return bad(EG_ERR_FORMAT, "%s: '%s' missing or not a string", where, key);
  *out = json_string_value(v);
  return EG_OK;
}

/* A name: a non-empty string (lowering, the runtime and the CLI look things up by name). */
static eg_status get_name(json_t *obj, const char *where, const char **out) {
  EG_TRY(get_string(obj, "name", where, out));
  if (!**out) return bad(EG_ERR_FORMAT, "%s: 'name' is empty: names are non-empty", where);
  return EG_OK;
}

static eg_status get_id(loader *L, json_t *obj, const char *key, const char *where,
                        bool nullable, int32_t *out) {
  json_t *v = json_object_get(obj, key);
  if (nullable && json_is_null(v)) {
    *out = -1;
    return EG_OK;
  }
  if (!json_is_integer(v))
    return bad(EG_ERR_FORMAT, "%s: '%s' missing or not an integer value id", where, key);
  json_int_t id = json_integer_value(v);
  if (id < 0 || id >= L->g->n_values)
    return bad(EG_ERR_INVALID, "%s: value id %lld out of range [0, %d): a dangling reference",
               where, (long long)id, L->g->n_values);
  *out = (int32_t)id;
  return EG_OK;
}

static eg_status parse_dtype(const char *name, const char *where, eg_dtype *out) {
  for (int d = 0; d < EG_DTYPE_COUNT; d++)
    if (strcmp(name, eg_dtype_name((eg_dtype)d)) == 0) {
      *out = (eg_dtype)d;
      return EG_OK;
    }
  return bad(EG_ERR_UNSUPPORTED, "%s: dtype '%s' unknown", where, name);
}

/* ---- values ---- */

static eg_status parse_tensor_type(json_t *jv, const char *where, eg_value *v) {
  const char *dt = NULL;
  json_t *shape;
  EG_TRY(get_string(jv, "dtype", where, &dt));
  EG_TRY(parse_dtype(dt, where, &v->dtype));
  EG_TRY(get_array(jv, "shape", where, &shape));
  if (json_array_size(shape) > EG_MAX_RANK)
    return bad(EG_ERR_UNSUPPORTED, "%s: rank %zu exceeds %d", where, json_array_size(shape),
               EG_MAX_RANK);
  v->rank = (int32_t)json_array_size(shape);
  for (int i = 0; i < v->rank; i++) {
    json_t *d = json_array_get(shape, (size_t)i);
    if (!json_is_integer(d) || json_integer_value(d) < 0)
      return bad(EG_ERR_FORMAT, "%s: shape[%d] is not a non-negative integer", where, i);
    v->shape[i] = json_integer_value(d);
  }
  /* Zero dimensions do not excuse the others: kernels derive strides from the non-zero ones. */
  char dims[160];
  if (eg_shape_numel(v->shape, v->rank, EG_MAX_NUMEL) < 0)
    return bad(EG_ERR_UNSUPPORTED, "%s: shape %s too large: each dimension is in [0, 2^40] and "
               "the product of the non-zero ones at most 2^40", where,
               eg_fmt_ints(dims, sizeof dims, v->shape, v->rank));
  return EG_OK;
}

static eg_status parse_value(loader *L, json_t *jv, int32_t i) {
  char where[64];
  snprintf(where, sizeof where, "values[%d]", i);
  eg_value *v = &L->g->values[i];
  json_t *id = json_object_get(jv, "id");
  if (!json_is_object(jv)) return bad(EG_ERR_FORMAT, "%s: not an object", where);
  if (!json_is_integer(id) || json_integer_value(id) != i)
    return bad(EG_ERR_FORMAT, "%s: 'id' must equal its index %d (ids are dense)", where, i);
  const char *kind = NULL;
  EG_TRY(get_string(jv, "kind", where, &kind));
  if (strcmp(kind, "tensor") == 0) {
    v->kind = EG_VALUE_TENSOR;
    return parse_tensor_type(jv, where, v);
  }
  if (strcmp(kind, "tuple") != 0)
    return bad(EG_ERR_FORMAT, "%s: kind '%s' is neither 'tensor' nor 'tuple'", where, kind);
  v->kind = EG_VALUE_TUPLE;
  json_t *elems;
  EG_TRY(get_array(jv, "elements", where, &elems));
  v->n_elems = (int32_t)json_array_size(elems);
  v->elems = eg_arena_array(L->g->arena, (size_t)v->n_elems + 1, sizeof(int32_t));
  if (!v->elems) return bad(EG_ERR_NOMEM, "%s: out of memory", where);
  for (int32_t e = 0; e < v->n_elems; e++) {
    json_t *x = json_array_get(elems, (size_t)e);
    if (json_is_null(x)) {
      v->elems[e] = -1;
      continue;
    }
    if (!json_is_integer(x) || json_integer_value(x) < 0 ||
        json_integer_value(x) >= L->g->n_values)
      return bad(EG_ERR_INVALID, "%s: element %d is not a value id in [0, %d) or null", where, e,
                 L->g->n_values);
    v->elems[e] = (int32_t)json_integer_value(x);
  }
  return EG_OK;
}

/* Tuple elements must be tensors; checked after all values are read. */
static eg_status check_tuples(loader *L) {
  for (int32_t i = 0; i < L->g->n_values; i++) {
    const eg_value *v = &L->g->values[i];
    for (int32_t e = 0; v->kind == EG_VALUE_TUPLE && e < v->n_elems; e++)
      if (v->elems[e] >= 0 && L->g->values[v->elems[e]].kind != EG_VALUE_TENSOR)
        return bad(EG_ERR_INVALID, "values[%d]: element %d is tuple %d: tuples hold tensors",
                   i, e, v->elems[e]);
  }
  return EG_OK;
}

/* ---- arguments ---- */

static eg_status parse_arg(loader *L, json_t *j, const char *where, int depth, eg_arg *a);

/* {"str": S}: a Python str argument. Its values are each op's to check (in the verifier, which
 * also reads .egp files); here only its form: a string of 1 to EG_GRAPH_MAX_STR bytes without
 * NUL (a NUL would cut the C string short and a check could pass on the part before it). */
enum { EG_GRAPH_MAX_STR = 64 };

static eg_status parse_str(loader *L, json_t *x, const char *where, eg_arg *a) {
  if (!json_is_string(x)) return bad(EG_ERR_FORMAT, "%s: str is not a string", where);
  const size_t len = json_string_length(x);
  if (len == 0 || len > EG_GRAPH_MAX_STR || strlen(json_string_value(x)) != len)
    return bad(EG_ERR_FORMAT, "%s: str of %zu bytes%s: expected 1 to %d bytes without NUL",
               where, len, strlen(json_string_value(x)) != len ? " with a NUL" : "",
               EG_GRAPH_MAX_STR);
  a->kind = EG_ARG_STR;
  a->str = eg_arena_strdup(L->g->arena, json_string_value(x));
  return a->str ? EG_OK : bad(EG_ERR_NOMEM, "%s: out of memory", where);
}

static eg_status parse_tagged(loader *L, json_t *j, const char *where, eg_arg *a) {
  json_t *x;
  if (json_object_size(j) != 1)
    return bad(EG_ERR_FORMAT, "%s: a tagged argument has exactly one key", where);
  if ((x = json_object_get(j, "value"))) {
    if (!json_is_integer(x) || json_integer_value(x) < 0 ||
        json_integer_value(x) >= L->g->n_values)
      return bad(EG_ERR_INVALID, "%s: value id out of range [0, %d): a dangling reference",
                 where, L->g->n_values);
    a->kind = EG_ARG_VALUE;
    a->value = (int32_t)json_integer_value(x);
    return EG_OK;
  }
  if ((x = json_object_get(j, "float"))) {
    a->kind = EG_ARG_FLOAT;
    if (json_is_number(x)) a->f = json_number_value(x);
    else if (json_is_string(x) && strcmp(json_string_value(x), "inf") == 0) a->f = INFINITY;
    else if (json_is_string(x) && strcmp(json_string_value(x), "-inf") == 0) a->f = -INFINITY;
    else if (json_is_string(x) && strcmp(json_string_value(x), "nan") == 0) a->f = NAN;
    else return bad(EG_ERR_FORMAT, "%s: float is neither a number nor inf/-inf/nan", where);
    return EG_OK;
  }
  if ((x = json_object_get(j, "str"))) return parse_str(L, x, where, a);
  if ((x = json_object_get(j, "dtype"))) {
    a->kind = EG_ARG_DTYPE;
    if (!json_is_string(x)) return bad(EG_ERR_FORMAT, "%s: dtype is not a string", where);
    return parse_dtype(json_string_value(x), where, &a->dtype);
  }
  static const struct {
    const char *key;
    eg_arg_kind kind;
  } tags[] = {{"layout", EG_ARG_LAYOUT}, {"device", EG_ARG_DEVICE},
              {"memory_format", EG_ARG_MEMORY_FORMAT}};
  for (size_t t = 0; t < sizeof tags / sizeof tags[0]; t++)
    if ((x = json_object_get(j, tags[t].key))) {
      if (!json_is_string(x)) return bad(EG_ERR_FORMAT, "%s: %s is not a string", where, tags[t].key);
      a->kind = tags[t].kind;
      a->str = eg_arena_strdup(L->g->arena, json_string_value(x));
      return a->str ? EG_OK : bad(EG_ERR_NOMEM, "%s: out of memory", where);
    }
  return bad(EG_ERR_FORMAT, "%s: unknown argument tag '%s'", where,
             json_object_iter_key(json_object_iter(j)));
}

static eg_status parse_arg(loader *L, json_t *j, const char *where, int depth, eg_arg *a) {
  if (depth > 4) return bad(EG_ERR_FORMAT, "%s: lists nested deeper than 4", where);
  switch (json_typeof(j)) {
  case JSON_NULL: a->kind = EG_ARG_NONE; return EG_OK;
  case JSON_TRUE: a->kind = EG_ARG_BOOL; a->b = true; return EG_OK;
  case JSON_FALSE: a->kind = EG_ARG_BOOL; a->b = false; return EG_OK;
  case JSON_INTEGER: a->kind = EG_ARG_INT; a->i = json_integer_value(j); return EG_OK;
  case JSON_OBJECT: return parse_tagged(L, j, where, a);
  case JSON_ARRAY: {
    a->kind = EG_ARG_LIST;
    a->list.n = (int32_t)json_array_size(j);
    a->list.items = eg_arena_array(L->g->arena, (size_t)a->list.n + 1, sizeof(eg_arg));
    if (!a->list.items) return bad(EG_ERR_NOMEM, "%s: out of memory", where);
    for (int32_t i = 0; i < a->list.n; i++)
      EG_TRY(parse_arg(L, json_array_get(j, (size_t)i), where, depth + 1, &a->list.items[i]));
    return EG_OK;
  }
  default:
    return bad(EG_ERR_FORMAT, "%s: a bare real or string is not an argument (floats are "
               "tagged {\"float\": x})", where);
  }
}

/* ---- nodes ---- */

static eg_status parse_kwargs(loader *L, json_t *kw, eg_node *n, const char *where) {
  if (!kw) return EG_OK;
  if (!json_is_object(kw)) return bad(EG_ERR_FORMAT, "%s: 'kwargs' is not an object", where);
  n->n_kwargs = (int32_t)json_object_size(kw);
  n->kwarg_names = eg_arena_array(L->g->arena, (size_t)n->n_kwargs + 1, sizeof(char *));
  n->kwargs = eg_arena_array(L->g->arena, (size_t)n->n_kwargs + 1, sizeof(eg_arg));
  if (!n->kwarg_names || !n->kwargs) return bad(EG_ERR_NOMEM, "%s: out of memory", where);
  const char *key;
  json_t *val;
  int32_t i = 0;
  json_object_foreach(kw, key, val) {
    char w[200];
    if (!*key) return bad(EG_ERR_FORMAT, "%s: a kwarg name is empty: kwargs are named", where);
    snprintf(w, sizeof w, "%s: kwarg '%s'", where, key);
    n->kwarg_names[i] = eg_arena_strdup(L->g->arena, key);
    if (!n->kwarg_names[i]) return bad(EG_ERR_NOMEM, "%s: out of memory", where);
    EG_TRY(parse_arg(L, val, w, 0, &n->kwargs[i]));
    i++;
  }
  return EG_OK;
}

static eg_status parse_node(loader *L, json_t *jn, int32_t i) {
  char where[200];
  snprintf(where, sizeof where, "nodes[%d]", i);
  if (!json_is_object(jn)) return bad(EG_ERR_FORMAT, "%s: not an object", where);
  eg_node *n = &L->g->nodes[i];
  const char *name = NULL, *target = NULL;
  EG_TRY(get_name(jn, where, &name));
  snprintf(where, sizeof where, "node %s", name);
  n->name = eg_arena_strdup(L->g->arena, name);
  if (!n->name) return bad(EG_ERR_NOMEM, "%s: out of memory", where);
  EG_TRY(get_string(jn, "target", where, &target));
  n->op = eg_op_from_target(target);
  if (n->op == EG_OP_COUNT)
    return bad(EG_ERR_UNSUPPORTED, "%s: op %s unknown: edgegrad has no kernel for it", where,
               target);
  json_t *args;
  EG_TRY(get_array(jn, "args", where, &args));
  n->n_args = (int32_t)json_array_size(args);
  n->args = eg_arena_array(L->g->arena, (size_t)n->n_args + 1, sizeof(eg_arg));
  if (!n->args) return bad(EG_ERR_NOMEM, "%s: out of memory", where);
  for (int32_t a = 0; a < n->n_args; a++) {
    char w[240];
    snprintf(w, sizeof w, "%s: argument #%d", where, a);
    EG_TRY(parse_arg(L, json_array_get(args, (size_t)a), w, 0, &n->args[a]));
  }
  EG_TRY(parse_kwargs(L, json_object_get(jn, "kwargs"), n, where));
  return get_id(L, jn, "output", where, true, &n->output);
}

/* `what` names the list in messages ("nodes", "inputs"). */
static eg_status check_unique(const char *const *names, size_t stride, int32_t n,
                              const char *what) {
  int32_t later = 0, first = 0;
  int repeat = eg_names_find_repeat(names, stride, n, &later, &first);
  if (repeat < 0) return bad(EG_ERR_NOMEM, "%s: out of memory", what);
  if (repeat)
    return bad(EG_ERR_INVALID, "%s[%d]: name '%s' repeats %s[%d]: names in %s are unique", what,
               later, eg_names_at(names, stride, later), what, first, what);
  return EG_OK;
}

/* ---- inputs, statics, outputs ---- */

static eg_status parse_named(loader *L, json_t *root, const char *key, eg_named **out,
                             int32_t *n_out) {
  json_t *arr;
  EG_TRY(get_array(root, key, "graph", &arr));
  int32_t n = (int32_t)json_array_size(arr);
  eg_named *list = eg_arena_array(L->g->arena, (size_t)n + 1, sizeof *list);
  if (!list) return bad(EG_ERR_NOMEM, "%s: out of memory", key);
  for (int32_t i = 0; i < n; i++) {
    char where[64];
    snprintf(where, sizeof where, "%s[%d]", key, i);
    json_t *e = json_array_get(arr, (size_t)i);
    const char *name = NULL;
    if (!json_is_object(e)) return bad(EG_ERR_FORMAT, "%s: not an object", where);
    EG_TRY(get_name(e, where, &name));
    EG_TRY(get_id(L, e, "value", where, false, &list[i].value));
    if (!(list[i].name = eg_arena_strdup(L->g->arena, name)))
      return bad(EG_ERR_NOMEM, "%s: out of memory", where);
    json_t *sd = strcmp(key, "inputs") == 0 ? json_object_get(e, "state_dict") : NULL;
    if (sd && (!json_is_string(sd) || !json_string_length(sd) ||
               strlen(json_string_value(sd)) != json_string_length(sd)))
      return bad(EG_ERR_FORMAT, "%s: \"state_dict\" of %s: expected a non-empty string without "
                 "NUL", where, name);
    if (sd && !(list[i].state_dict = eg_arena_strdup(L->g->arena, json_string_value(sd))))
      return bad(EG_ERR_NOMEM, "%s: out of memory", where);
  }
  EG_TRY(check_unique(&list[0].name, sizeof *list, n, key));
  *out = list;
  *n_out = n;
  return EG_OK;
}

static eg_status attach_static(loader *L, const eg_safetensors *st, const char *wpath,
                               eg_static *s) {
  const eg_value *v = &L->g->values[s->value];
  const eg_safetensors_entry *e = eg_safetensors_find(st, s->name);
  char a[160], b[160];
  if (v->kind != EG_VALUE_TENSOR)
    return bad(EG_ERR_INVALID, "static %s: value %d is a tuple: statics are tensors", s->name,
               s->value);
  if (!e) return bad(EG_ERR_INVALID, "static %s: no tensor of that name in %s", s->name, wpath);
  const eg_tensor *t = &e->t;
  bool same = t->dtype == v->dtype && t->rank == v->rank;
  for (int d = 0; same && d < v->rank; d++) same = t->shape[d] == v->shape[d];
  if (!same)
    return bad(EG_ERR_INVALID, "static %s: %s holds %s %s but the graph says %s %s", s->name,
               wpath, eg_dtype_name(t->dtype), eg_fmt_ints(a, sizeof a, t->shape, t->rank),
               eg_dtype_name(v->dtype), eg_fmt_ints(b, sizeof b, v->shape, v->rank));
  /* Copied out: safetensors offsets need not be aligned for the element type. */
  const size_t nbytes = (size_t)eg_tensor_numel(t) * eg_dtype_size(t->dtype);
  void *data = eg_arena_alloc(L->g->arena, nbytes + 64);
  if (!data) return bad(EG_ERR_NOMEM, "static %s: out of memory", s->name);
  data = (void *)(((uintptr_t)data + 63) & ~(uintptr_t)63);
  memcpy(data, t->data, nbytes);
  s->data = data;
  s->nbytes = nbytes;
  return EG_OK;
}

static eg_status parse_statics(loader *L, json_t *root) {
  eg_named *named;
  int32_t n;
  EG_TRY(parse_named(L, root, "statics", &named, &n));
  L->g->n_statics = n;
  L->g->statics = eg_arena_array(L->g->arena, (size_t)n + 1, sizeof(eg_static));
  if (!L->g->statics) return bad(EG_ERR_NOMEM, "statics: out of memory");
  for (int32_t i = 0; i < n; i++)
    L->g->statics[i] = (eg_static){.name = named[i].name, .value = named[i].value};
  if (n == 0) return EG_OK;
  const char *wname = NULL;
  EG_TRY(get_string(root, "weights", "graph", &wname));
  if (strchr(wname, '/') || strcmp(wname, "..") == 0 || !*wname)
    return bad(EG_ERR_FORMAT, "graph: weights '%s' must be a plain file name beside the graph",
               wname);
  char *wpath = eg_path_sibling(L->path, wname);
  if (!wpath) return bad(EG_ERR_NOMEM, "weights: out of memory");
  eg_safetensors *st = NULL;
  eg_status s = eg_safetensors_load(wpath, &st);
  for (int32_t i = 0; s == EG_OK && i < n; i++) s = attach_static(L, st, wname, &L->g->statics[i]);
  eg_safetensors_destroy(st);
  free(wpath);
  return s;
}

/* "random_inputs" (optional): [{"input": NAME, "distribution": "bernoulli", "p": P or null}],
 * each naming an input once. The dtype and p rules are the verifier's (a .egp carries them). */
static eg_status parse_random_inputs(loader *L, json_t *root) {
  json_t *arr = json_object_get(root, "random_inputs");
  if (!arr) return EG_OK;
  if (!json_is_array(arr)) return bad(EG_ERR_FORMAT, "graph: \"random_inputs\" is not an array");
  eg_graph *g = L->g;
  for (size_t k = 0; k < json_array_size(arr); k++) {
    char where[64];
    snprintf(where, sizeof where, "random_inputs[%zu]", k);
    json_t *e = json_array_get(arr, k), *p = json_object_get(e, "p");
    const char *name = NULL, *dist = NULL;
    if (!json_is_object(e)) return bad(EG_ERR_FORMAT, "%s: not an object", where);
    EG_TRY(get_string(e, "input", where, &name));
    EG_TRY(get_string(e, "distribution", where, &dist));
    if (strcmp(dist, "bernoulli") != 0)
      return bad(EG_ERR_UNSUPPORTED, "%s: distribution '%s': edgegrad draws bernoulli masks",
                 where, dist);
    if (p && !json_is_null(p) && !json_is_number(p))
      return bad(EG_ERR_FORMAT, "%s: \"p\" is not a number or null", where);
    eg_named *in = NULL;
    for (int32_t i = 0; i < g->n_inputs && !in; i++)
      if (strcmp(g->inputs[i].name, name) == 0) in = &g->inputs[i];
    if (!in) return bad(EG_ERR_INVALID, "%s: input '%s' unknown: a random input is an input",
                        where, name);
    if (in->random != EG_RANDOM_NONE)
      return bad(EG_ERR_INVALID, "%s: input '%s' listed twice", where, name);
    in->random = EG_RANDOM_BERNOULLI;
    in->random_p = p && json_is_number(p) ? json_number_value(p) : NAN;
  }
  return EG_OK;
}

/* The input named `name`, or -1. */
static int32_t input_index(const eg_graph *g, const char *name) {
  for (int32_t i = 0; i < g->n_inputs; i++)
    if (strcmp(g->inputs[i].name, name) == 0) return i;
  return -1;
}

/* Entry i of "inputs" (is_input) or "outputs": its "role", and an output's "of" as the index of
 * the input it names (-1 without). Their rules: ir/io_role.h, checked once the graph is read. */
static eg_status parse_role(loader *L, json_t *e, bool is_input, int32_t i, eg_named *named) {
  char where[320];
  snprintf(where, sizeof where, "%s[%d] \"%s\"", is_input ? "inputs" : "outputs", (int)i,
           named->name);
  json_t *role = json_object_get(e, "role"), *of = json_object_get(e, "of");
  if (!role)
    return bad(EG_ERR_FORMAT, "%s: no \"role\": a graph that records roles records one for "
               "every input and output (re-export it with this edgegrad's exporter)", where);
  if (!json_is_string(role))
    return bad(EG_ERR_FORMAT, "%s: \"role\" is not a string", where);
  const char *name = json_string_value(role);
  if (!eg_io_role_parse(name, is_input, &named->role))
    return bad(EG_ERR_FORMAT, "%s: role \"%s\" unknown: the roles of an %s are %s", where, name,
               is_input ? "input" : "output", eg_io_role_list(is_input));
  named->pair = -1;
  if (!of) return EG_OK;
  if (is_input)
    return bad(EG_ERR_FORMAT, "%s: role \"%s\" with \"of\": only outputs name an input", where,
               name);
  if (!json_is_string(of))
    return bad(EG_ERR_FORMAT, "%s: role \"%s\": \"of\" is not a string", where, name);
  named->pair = input_index(L->g, json_string_value(of));
  if (named->pair < 0)
    return bad(EG_ERR_INVALID, "%s: role \"%s\" of \"%s\": no input %s", where, name,
               json_string_value(of), json_string_value(of));
  return EG_OK;
}

/* Every input's and output's role. A graph without any "role" (written before the exporter
 * recorded them) reads as data inputs (a random draw: random) and plain outputs: it has no
 * parameter, so training loops refuse it and say to export it again. */
static eg_status parse_roles(loader *L, json_t *root) {
  eg_graph *g = L->g;
  json_t *lists[2] = {json_object_get(root, "inputs"), json_object_get(root, "outputs")};
  bool recorded = false;
  for (int l = 0; l < 2; l++)
    for (size_t k = 0; k < json_array_size(lists[l]); k++)
      recorded |= json_object_get(json_array_get(lists[l], k), "role") != NULL;
  for (int32_t i = 0; i < g->n_inputs; i++) {
    eg_named *in = &g->inputs[i];
    if (recorded) EG_TRY(parse_role(L, json_array_get(lists[0], (size_t)i), true, i, in));
    else in->role = in->random != EG_RANDOM_NONE ? EG_ROLE_RANDOM : EG_ROLE_DATA;
  }
  for (int32_t o = 0; o < g->n_outputs; o++) {
    eg_named *out = &g->outputs[o];
    out->role = EG_ROLE_OUTPUT;
    out->pair = -1;
    json_t *e = json_array_get(lists[1], (size_t)o);
    if (recorded) EG_TRY(parse_role(L, e, false, o, out));
    else if (json_object_get(e, "of"))
      return bad(EG_ERR_FORMAT, "outputs[%d] \"%s\": \"of\" without \"role\": \"of\" names "
                 "the input of a gradient or a buffer_update", (int)o, out->name);
  }
  return EG_OK;
}

static eg_status parse_graph(loader *L, json_t *root) {
  const char *format = NULL;
  if (!json_is_object(root)) return bad(EG_ERR_FORMAT, "top level is not an object");
  EG_TRY(get_string(root, "format", "graph", &format));
  json_t *ver = json_object_get(root, "version");
  if (strcmp(format, EG_GRAPH_FORMAT) != 0)
    return bad(EG_ERR_FORMAT, "graph: format '%s' is not '" EG_GRAPH_FORMAT "'", format);
  if (!json_is_integer(ver) || json_integer_value(ver) != EG_GRAPH_VERSION)
    return bad(EG_ERR_UNSUPPORTED, "graph: version %lld unknown: this edgegrad reads version %d",
               json_is_integer(ver) ? (long long)json_integer_value(ver) : -1LL,
               EG_GRAPH_VERSION);
  json_t *values, *nodes;
  EG_TRY(get_array(root, "values", "graph", &values));
  EG_TRY(get_array(root, "nodes", "graph", &nodes));
  eg_graph *g = L->g;
  g->n_values = (int32_t)json_array_size(values);
  g->n_nodes = (int32_t)json_array_size(nodes);
  g->values = eg_arena_array(g->arena, (size_t)g->n_values + 1, sizeof(eg_value));
  g->nodes = eg_arena_array(g->arena, (size_t)g->n_nodes + 1, sizeof(eg_node));
  if (!g->values || !g->nodes) return bad(EG_ERR_NOMEM, "graph: out of memory");
  for (int32_t i = 0; i < g->n_values; i++)
    EG_TRY(parse_value(L, json_array_get(values, (size_t)i), i));
  EG_TRY(check_tuples(L));
  EG_TRY(parse_named(L, root, "inputs", &g->inputs, &g->n_inputs));
  EG_TRY(parse_random_inputs(L, root));
  EG_TRY(parse_named(L, root, "outputs", &g->outputs, &g->n_outputs));
  EG_TRY(parse_roles(L, root));
  for (int32_t i = 0; i < g->n_nodes; i++) EG_TRY(parse_node(L, json_array_get(nodes, (size_t)i), i));
  EG_TRY(check_unique(&g->nodes[0].name, sizeof *g->nodes, g->n_nodes, "nodes"));
  EG_TRY(parse_statics(L, root));
  EG_TRY(eg_graph_verify(g));
  return eg_graph_check_roles(g);
}

eg_status eg_graph_load_json(const char *path, eg_graph **out) {
  *out = NULL;
  void *text;
  size_t size;
  EG_TRY(eg_file_read(path, EG_GRAPH_MAX_FILE, &text, &size));
  json_error_t jerr;
  json_t *root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr);
  free(text);
  if (!root)
    return eg_error(EG_ERR_FORMAT, "%s: JSON line %d column %d: %s", path, jerr.line,
                    jerr.column, jerr.text);
  loader L = {.path = path, .g = eg_graph_create()};
  eg_status s = L.g ? parse_graph(&L, root) : eg_error(EG_ERR_NOMEM, "out of memory");
  json_decref(root);
  if (s != EG_OK) {
    eg_graph_destroy(L.g);
    return eg_error_prefix(s, "%s", path);
  }
  *out = L.g;
  return EG_OK;
}
