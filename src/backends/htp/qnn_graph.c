/* qnn_graph.c — the htp backend graph (see qnn_graph.h): tensor table with key and name
 * lookup, op construction, and QNN's per-op rules.
 *
 * Layout of this file: names and dtypes; the graph and its three hash maps (source key ->
 * tensor, tensor name -> tensor, op name -> op); tensors; params; the rule table (one entry per
 * op in qnn_ops.def, each documenting QNN's inputs, params and output shape, with a check
 * function that parses params into attrs and compares the output's dims with the rule); op
 * construction; the dump. Arrays grow by doubling inside the arena (the old copy is simply left
 * behind: at most 2x, freed with the arena). */
#include "backends/htp/qnn_graph.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "backends/htp/exec_plan.h"
#include "util/arena.h"
#include "util/error.h"

/* ---- names ---- */

static const char *const op_names[] = {
#define QNN_OP(id, name) [EG_HTP_QNN_OP_##id] = name,
#include "backends/htp/qnn_ops.def"
#undef QNN_OP
};
_Static_assert(sizeof op_names / sizeof op_names[0] == EG_HTP_QNN_OP_COUNT, "op name table");

const char *eg_htp_qnn_op_name(eg_htp_qnn_op op) {
  return (unsigned)op < EG_HTP_QNN_OP_COUNT ? op_names[op] : "?";
}

eg_htp_qnn_op eg_htp_qnn_op_from_name(const char *name) {
  for (int i = 0; i < EG_HTP_QNN_OP_COUNT; i++)
    if (strcmp(op_names[i], name) == 0) return (eg_htp_qnn_op)i;
  return EG_HTP_QNN_OP_COUNT;
}

bool eg_htp_qnn_op_is_comparison(eg_htp_qnn_op op) {
  return op == EG_HTP_QNN_OP_ELEMENT_WISE_GREATER || op == EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL ||
         op == EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL || op == EG_HTP_QNN_OP_ELEMENT_WISE_EQUAL;
}

static const struct {
  const char *name;
  size_t size;
} dtype_info[] = {
    [EG_HTP_QNN_DTYPE_FLOAT_32] = {"float32", 4},        [EG_HTP_QNN_DTYPE_FLOAT_16] = {"float16", 2},
    [EG_HTP_QNN_DTYPE_INT_32] = {"int32", 4},            [EG_HTP_QNN_DTYPE_UINT_32] = {"uint32", 4},
    [EG_HTP_QNN_DTYPE_INT_8] = {"int8", 1},              [EG_HTP_QNN_DTYPE_UINT_8] = {"uint8", 1},
    [EG_HTP_QNN_DTYPE_BOOL_8] = {"bool8", 1},
    [EG_HTP_QNN_DTYPE_SFIXED_POINT_8] = {"sfixed_point_8", 1},
    [EG_HTP_QNN_DTYPE_UFIXED_POINT_8] = {"ufixed_point_8", 1},
    [EG_HTP_QNN_DTYPE_SFIXED_POINT_16] = {"sfixed_point_16", 2},
    [EG_HTP_QNN_DTYPE_UFIXED_POINT_16] = {"ufixed_point_16", 2},
    [EG_HTP_QNN_DTYPE_SFIXED_POINT_32] = {"sfixed_point_32", 4},
};
_Static_assert(sizeof dtype_info / sizeof dtype_info[0] == EG_HTP_QNN_DTYPE_COUNT, "dtype table");

const char *eg_htp_qnn_dtype_name(eg_htp_qnn_dtype dtype) {
  return (unsigned)dtype < EG_HTP_QNN_DTYPE_COUNT ? dtype_info[dtype].name : "?";
}

size_t eg_htp_qnn_dtype_size(eg_htp_qnn_dtype dtype) {
  return (unsigned)dtype < EG_HTP_QNN_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}

bool eg_htp_qnn_dtype_is_fixed_point(eg_htp_qnn_dtype dtype) {
  return dtype >= EG_HTP_QNN_DTYPE_SFIXED_POINT_8 && dtype <= EG_HTP_QNN_DTYPE_SFIXED_POINT_32;
}

static const char *const type_names[] = {"APP_WRITE", "APP_READ", "NATIVE", "STATIC"};

static const char *fmt_dims(char *buf, size_t size, const uint32_t *dims, int rank) {
  int64_t v[EG_HTP_QNN_MAX_RANK];
  for (int i = 0; i < rank && i < EG_HTP_QNN_MAX_RANK; i++) v[i] = dims[i];
  return eg_fmt_ints(buf, size, v, rank < EG_HTP_QNN_MAX_RANK ? rank : EG_HTP_QNN_MAX_RANK);
}

/* ---- the graph and its maps ---- */

/* Open addressing over ids; slot value id+1, 0 = empty. Capacity a power of two, kept at most
 * half full. Entries are never removed. */
typedef struct id_map {
  uint32_t cap, count;
  int32_t *slot;
} id_map;

struct eg_htp_qnn_graph {
  eg_arena *arena;
  const char *name;
  int32_t n_tensors, cap_tensors;
  eg_htp_qnn_tensor *tensors;
  int32_t n_ops, cap_ops;
  eg_htp_qnn_op_node *ops;
  id_map by_key, by_tensor_name, by_op_name;
  eg_htp_exec_plan plan; /* its ops malloc'ed, not in the arena */
};

static uint64_t hash_u64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

/* Which map: how to hash entry `id` and compare it with a probe. */
typedef enum map_kind { MAP_KEY, MAP_TENSOR_NAME, MAP_OP_NAME } map_kind;

static uint64_t entry_hash(const eg_htp_qnn_graph *g, map_kind k, int32_t id) {
  switch (k) {
  case MAP_KEY: return hash_u64((uint64_t)g->tensors[id].key);
  case MAP_TENSOR_NAME: return hash_str(g->tensors[id].name);
  default: return hash_str(g->ops[id].name);
  }
}

static bool entry_matches(const eg_htp_qnn_graph *g, map_kind k, int32_t id, int64_t key,
                          const char *name) {
  switch (k) {
  case MAP_KEY: return g->tensors[id].key == key;
  case MAP_TENSOR_NAME: return strcmp(g->tensors[id].name, name) == 0;
  default: return strcmp(g->ops[id].name, name) == 0;
  }
}

static id_map *map_of(eg_htp_qnn_graph *g, map_kind k) {
  return k == MAP_KEY ? &g->by_key : k == MAP_TENSOR_NAME ? &g->by_tensor_name : &g->by_op_name;
}

static int32_t map_find(const eg_htp_qnn_graph *g, map_kind k, uint64_t h, int64_t key,
                        const char *name) {
  const id_map *m = k == MAP_KEY ? &g->by_key
                    : k == MAP_TENSOR_NAME ? &g->by_tensor_name : &g->by_op_name;
  if (m->cap == 0) return -1;
  for (uint32_t i = (uint32_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    const int32_t s = m->slot[i];
    if (s == 0) return -1;
    if (entry_matches(g, k, s - 1, key, name)) return s - 1;
  }
}

static void map_put(id_map *m, uint64_t h, int32_t id) {
  uint32_t i = (uint32_t)h & (m->cap - 1);
  while (m->slot[i] != 0) i = (i + 1) & (m->cap - 1);
  m->slot[i] = id + 1;
  m->count++;
}

/* Inserts entry `id` (not present yet), growing the table first if needed. */
static eg_status map_insert(eg_htp_qnn_graph *g, map_kind k, int32_t id) {
  id_map *m = map_of(g, k);
  if (2 * (m->count + 1) > m->cap) {
    const uint32_t cap = m->cap ? 2 * m->cap : 64;
    int32_t *slot = eg_arena_array(g->arena, cap, sizeof(int32_t));
    if (!slot) return eg_error(EG_ERR_NOMEM, "qnn graph %s: out of memory", g->name);
    const id_map old = *m;
    *m = (id_map){.cap = cap, .count = 0, .slot = slot};
    for (uint32_t i = 0; i < old.cap; i++)
      if (old.slot[i]) map_put(m, entry_hash(g, k, old.slot[i] - 1), old.slot[i] - 1);
  }
  map_put(m, entry_hash(g, k, id), id);
  return EG_OK;
}

/* Makes room for one more element in an arena array (doubling). */
static eg_status grow(eg_htp_qnn_graph *g, void **array, int32_t n, int32_t *cap, size_t elem) {
  if (n < *cap) return EG_OK;
  const int32_t new_cap = *cap ? 2 * *cap : 16;
  void *p = eg_arena_array(g->arena, (size_t)new_cap, elem);
  if (!p) return eg_error(EG_ERR_NOMEM, "qnn graph %s: out of memory", g->name);
  if (n) memcpy(p, *array, (size_t)n * elem);
  *array = p;
  *cap = new_cap;
  return EG_OK;
}

eg_status eg_htp_qnn_graph_create(const char *name, eg_htp_qnn_graph **out) {
  *out = NULL;
  eg_arena *arena = eg_arena_create();
  eg_htp_qnn_graph *g = arena ? eg_arena_alloc(arena, sizeof *g) : NULL;
  const char *copy = g ? eg_arena_strdup(arena, name ? name : "graph") : NULL;
  if (!copy) {
    eg_arena_destroy(arena);
    return eg_error(EG_ERR_NOMEM, "qnn graph %s: out of memory", name ? name : "graph");
  }
  g->arena = arena;
  g->name = copy;
  *out = g;
  return EG_OK;
}

void eg_htp_qnn_graph_destroy(eg_htp_qnn_graph *g) {
  if (!g) return;
  eg_htp_exec_plan_free(&g->plan);
  eg_arena_destroy(g->arena);
}

const eg_htp_exec_plan *eg_htp_qnn_graph_plan(const eg_htp_qnn_graph *g) { return &g->plan; }
eg_htp_exec_plan *eg_htp_qnn_graph_plan_mut(eg_htp_qnn_graph *g) { return &g->plan; }

const char *eg_htp_qnn_graph_name(const eg_htp_qnn_graph *g) { return g->name; }
int32_t eg_htp_qnn_graph_num_tensors(const eg_htp_qnn_graph *g) { return g->n_tensors; }
int32_t eg_htp_qnn_graph_num_ops(const eg_htp_qnn_graph *g) { return g->n_ops; }

const eg_htp_qnn_tensor *eg_htp_qnn_graph_tensor(const eg_htp_qnn_graph *g, int32_t id) {
  return id >= 0 && id < g->n_tensors ? &g->tensors[id] : NULL;
}

const eg_htp_qnn_op_node *eg_htp_qnn_graph_op(const eg_htp_qnn_graph *g, int32_t index) {
  return index >= 0 && index < g->n_ops ? &g->ops[index] : NULL;
}

int32_t eg_htp_qnn_graph_find_key(const eg_htp_qnn_graph *g, int64_t key) {
  return key < 0 ? -1 : map_find(g, MAP_KEY, hash_u64((uint64_t)key), key, NULL);
}

int32_t eg_htp_qnn_graph_find_tensor(const eg_htp_qnn_graph *g, const char *name) {
  return name ? map_find(g, MAP_TENSOR_NAME, hash_str(name), 0, name) : -1;
}

int64_t eg_htp_qnn_tensor_numel(const eg_htp_qnn_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->dims[i];
  return n;
}

/* ---- tensors ---- */

/* The description's shape, dtype and quantization are well formed. */
static eg_status check_tensor_desc(const eg_htp_qnn_graph *g, const eg_htp_qnn_tensor_desc *d) {
  const char *nm = d->name;
  char buf[128];
  if ((unsigned)d->type > EG_HTP_QNN_TENSOR_STATIC)
    return eg_error(EG_ERR_ARGUMENT, "tensor %s: type (%d): must be APP_WRITE, APP_READ, NATIVE "
                    "or STATIC", nm, (int)d->type);
  if ((unsigned)d->dtype >= EG_HTP_QNN_DTYPE_COUNT)
    return eg_error(EG_ERR_ARGUMENT, "tensor %s: dtype (%d): unknown QNN data type", nm,
                    (int)d->dtype);
  if (d->rank < 0 || d->rank > EG_HTP_QNN_MAX_RANK || (d->rank > 0 && !d->dims))
    return eg_error(EG_ERR_ARGUMENT, "tensor %s: rank (%d): must be in [0, %d] with dims", nm,
                    (int)d->rank, EG_HTP_QNN_MAX_RANK);
  uint64_t numel = 1;
  for (int i = 0; i < d->rank; i++) {
    if (d->dims[i] == 0)
      return eg_error(EG_ERR_ARGUMENT, "tensor %s: dims %s: every dimension must be >= 1", nm,
                      fmt_dims(buf, sizeof buf, d->dims, d->rank));
    numel *= d->dims[i];
    if (numel > ((uint64_t)1 << 40))
      return eg_error(EG_ERR_ARGUMENT, "tensor %s: dims %s: more than 2^40 elements", nm,
                      fmt_dims(buf, sizeof buf, d->dims, d->rank));
  }
  const bool fixed = eg_htp_qnn_dtype_is_fixed_point(d->dtype);
  const eg_htp_qnn_quant *q = &d->quant;
  if (fixed != (q->encoding != EG_HTP_QNN_QUANT_NONE))
    return eg_error(EG_ERR_ARGUMENT, "tensor %s: quantization encoding (%d) for dtype %s: "
                    "fixed-point dtypes need an encoding, others must have none", nm,
                    (int)q->encoding, eg_htp_qnn_dtype_name(d->dtype));
  /* a scale is a positive normal float32: what the IR's rule (ir/quant_rule.h) lowers to */
  if (q->encoding == EG_HTP_QNN_QUANT_SCALE_OFFSET && !(isnormal(q->scale) && q->scale > 0.0f))
    return eg_error(EG_ERR_ARGUMENT, "tensor %s: scale (%g): must be a positive normal float32",
                    nm, (double)q->scale);
  if (q->encoding == EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET &&
      (q->axis < 0 || q->axis >= d->rank || q->n_axis != (int32_t)d->dims[q->axis] ||
       !q->scales || !q->offsets))
    return eg_error(EG_ERR_ARGUMENT, "tensor %s: per-axis quantization (axis %d, %d scales): "
                    "axis must be a dim and give one scale and offset per index", nm,
                    (int)q->axis, (int)q->n_axis);
  for (int32_t i = 0; q->encoding == EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET && i < q->n_axis; i++)
    if (!(isnormal(q->scales[i]) && q->scales[i] > 0.0f))
      return eg_error(EG_ERR_ARGUMENT, "tensor %s: scales[%d] (%g): must be a positive normal "
                      "float32", nm, (int)i, (double)q->scales[i]);
  const size_t nbytes = (size_t)numel * eg_htp_qnn_dtype_size(d->dtype);
  if (d->type == EG_HTP_QNN_TENSOR_STATIC && (!d->data || d->nbytes != nbytes))
    return eg_error(EG_ERR_ARGUMENT, "tensor %s: STATIC data (%zu bytes, %s): must hold "
                    "product(dims) * %zu = %zu bytes", nm, d->data ? d->nbytes : 0,
                    d->data ? "given" : "missing", eg_htp_qnn_dtype_size(d->dtype), nbytes);
  if (d->type != EG_HTP_QNN_TENSOR_STATIC && d->data)
    return eg_error(EG_ERR_ARGUMENT, "tensor %s: data given for a %s tensor: only STATIC "
                    "tensors carry bytes", nm, type_names[d->type]);
  if (d->key < EG_HTP_QNN_KEY_NONE)
    return eg_error(EG_ERR_ARGUMENT, "tensor %s: key (%" PRId64 "): must be >= 0 or "
                    "EG_HTP_QNN_KEY_NONE", nm, d->key);
  (void)g;
  return EG_OK;
}

/* A known key asked for again: the description must match the tensor it names. */
static eg_status check_same_tensor(const eg_htp_qnn_graph *g, int32_t id,
                                   const eg_htp_qnn_tensor_desc *d) {
  const eg_htp_qnn_tensor *t = &g->tensors[id];
  bool same = t->type == d->type && t->dtype == d->dtype && t->rank == d->rank;
  for (int i = 0; same && i < d->rank; i++) same = t->dims[i] == d->dims[i];
  if (same) return EG_OK;
  char a[128], b[128];
  return eg_error(EG_ERR_INVALID, "tensor %s: key %" PRId64 " already names tensor %s (%s %s "
                  "%s), asked for %s %s %s: one key, one tensor", d->name, d->key, t->name,
                  type_names[t->type], eg_htp_qnn_dtype_name(t->dtype),
                  fmt_dims(a, sizeof a, t->dims, t->rank), type_names[d->type],
                  eg_htp_qnn_dtype_name(d->dtype), fmt_dims(b, sizeof b, d->dims, d->rank));
}

/* Copies what the tensor must own into the arena. */
static eg_status own_tensor_data(eg_htp_qnn_graph *g, const eg_htp_qnn_tensor_desc *d, eg_htp_qnn_tensor *t) {
  t->name = eg_arena_strdup(g->arena, d->name);
  if (!t->name) return eg_error(EG_ERR_NOMEM, "tensor %s: out of memory", d->name);
  if (d->type == EG_HTP_QNN_TENSOR_STATIC && d->copy_data) {
    unsigned char *p = eg_arena_alloc(g->arena, d->nbytes + 64);
    if (!p) return eg_error(EG_ERR_NOMEM, "tensor %s: out of memory for %zu bytes", d->name,
                            d->nbytes);
    p += (64 - ((uintptr_t)p & 63)) & 63;
    memcpy(p, d->data, d->nbytes);
    t->data = p;
  }
  if (d->quant.encoding == EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET) {
    float *s = eg_arena_array(g->arena, (size_t)d->quant.n_axis, sizeof(float));
    int32_t *o = eg_arena_array(g->arena, (size_t)d->quant.n_axis, sizeof(int32_t));
    if (!s || !o) return eg_error(EG_ERR_NOMEM, "tensor %s: out of memory", d->name);
    memcpy(s, d->quant.scales, sizeof(float) * (size_t)d->quant.n_axis);
    memcpy(o, d->quant.offsets, sizeof(int32_t) * (size_t)d->quant.n_axis);
    t->quant.scales = s;
    t->quant.offsets = o;
  }
  return EG_OK;
}

eg_status eg_htp_qnn_graph_add_tensor(eg_htp_qnn_graph *g, const eg_htp_qnn_tensor_desc *d, int32_t *id) {
  *id = -1;
  if (!d->name || !d->name[0])
    return eg_error(EG_ERR_ARGUMENT, "qnn graph %s: tensor name (empty): every tensor needs a "
                    "unique name", g->name);
  EG_TRY(check_tensor_desc(g, d));
  const int32_t known = eg_htp_qnn_graph_find_key(g, d->key);
  if (known >= 0) {
    EG_TRY(check_same_tensor(g, known, d));
    *id = known;
    return EG_OK;
  }
  if (eg_htp_qnn_graph_find_tensor(g, d->name) >= 0)
    return eg_error(EG_ERR_INVALID, "tensor %s: name already used in graph %s: tensor names "
                    "are unique", d->name, g->name);
  EG_TRY(grow(g, (void **)&g->tensors, g->n_tensors, &g->cap_tensors, sizeof(eg_htp_qnn_tensor)));
  eg_htp_qnn_tensor t = {.id = g->n_tensors, .type = d->type, .dtype = d->dtype, .quant = d->quant,
                     .rank = d->rank, .data = d->data, .key = d->key, .producer = -1};
  for (int i = 0; i < d->rank; i++) t.dims[i] = d->dims[i];
  t.nbytes = (size_t)eg_htp_qnn_tensor_numel(&t) * eg_htp_qnn_dtype_size(d->dtype);
  EG_TRY(own_tensor_data(g, d, &t));
  g->tensors[g->n_tensors] = t;
  EG_TRY(map_insert(g, MAP_TENSOR_NAME, t.id));
  if (d->key >= 0) EG_TRY(map_insert(g, MAP_KEY, t.id));
  g->n_tensors++;
  *id = t.id;
  return EG_OK;
}

/* ---- params ---- */

eg_htp_qnn_param eg_htp_qnn_param_u32(const char *name, uint32_t v) {
  return (eg_htp_qnn_param){.name = name, .kind = EG_HTP_QNN_PARAM_SCALAR,
                        .dtype = EG_HTP_QNN_DTYPE_UINT_32, .scalar.u32 = v};
}

eg_htp_qnn_param eg_htp_qnn_param_i32(const char *name, int32_t v) {
  return (eg_htp_qnn_param){.name = name, .kind = EG_HTP_QNN_PARAM_SCALAR,
                        .dtype = EG_HTP_QNN_DTYPE_INT_32, .scalar.i32 = v};
}

eg_htp_qnn_param eg_htp_qnn_param_f32(const char *name, float v) {
  return (eg_htp_qnn_param){.name = name, .kind = EG_HTP_QNN_PARAM_SCALAR,
                        .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .scalar.f32 = v};
}

eg_htp_qnn_param eg_htp_qnn_param_bool(const char *name, bool v) {
  return (eg_htp_qnn_param){.name = name, .kind = EG_HTP_QNN_PARAM_SCALAR,
                        .dtype = EG_HTP_QNN_DTYPE_BOOL_8, .scalar.b = v};
}

eg_htp_qnn_param eg_htp_qnn_param_u32_tensor(const char *name, int32_t rank, const uint32_t *dims,
                                     const uint32_t *values) {
  eg_htp_qnn_param p = {.name = name, .kind = EG_HTP_QNN_PARAM_TENSOR, .dtype = EG_HTP_QNN_DTYPE_UINT_32,
                    .rank = rank};
  int64_t n = 1;
  for (int i = 0; i < rank && i < EG_HTP_QNN_PARAM_MAX_RANK; i++) {
    p.dims[i] = dims[i];
    n *= dims[i];
  }
  if (rank < 1 || rank > EG_HTP_QNN_PARAM_MAX_RANK || n > EG_HTP_QNN_PARAM_MAX_VALUES) {
    p.n_values = -1; /* does not fit: add_op reports it */
    return p;
  }
  p.n_values = (int32_t)n;
  for (int64_t i = 0; i < n; i++) p.values.u32[i] = values[i];
  return p;
}

eg_htp_qnn_param eg_htp_qnn_param_i32_tensor(const char *name, int32_t rank, const uint32_t *dims,
                                     const int32_t *values) {
  uint32_t bits[EG_HTP_QNN_PARAM_MAX_VALUES];
  int64_t n = 1;
  for (int i = 0; i < rank && i < EG_HTP_QNN_PARAM_MAX_RANK; i++) n *= dims[i];
  for (int64_t i = 0; i < n && i < EG_HTP_QNN_PARAM_MAX_VALUES; i++) bits[i] = (uint32_t)values[i];
  eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor(name, rank, dims, bits);
  p.dtype = EG_HTP_QNN_DTYPE_INT_32;
  return p;
}

const eg_htp_qnn_param *eg_htp_qnn_op_param(const eg_htp_qnn_op_node *op, const char *name) {
  for (int i = 0; i < op->n_params; i++)
    if (strcmp(op->params[i].name, name) == 0) return &op->params[i];
  return NULL;
}

/* ---- validation context ---- */

#define MAX_PARAMS 6
#define MAX_INPUTS 64

/* How a param must look. Tensor params: `rank` and `dims`; a dims entry of 0 means "any >= 1"
 * (axes), and PERM_DIM means "in[0]'s rank". */
enum { PERM_DIM = 0xFF };

typedef struct param_rule {
  const char *name;
  eg_htp_qnn_param_kind kind;
  eg_htp_qnn_dtype dtype;
  bool mandatory;
  int8_t rank;
  uint8_t dims[EG_HTP_QNN_PARAM_MAX_RANK];
} param_rule;

typedef struct check_ctx check_ctx;
typedef eg_status (*check_fn)(check_ctx *c);

typedef struct op_rule {
  int8_t min_in, max_in;          /* inputs; optional ones may be omitted or -1 */
  int8_t n_out;
  param_rule params[MAX_PARAMS];  /* until name == NULL */
  check_fn check;
} op_rule;

struct check_ctx {
  const eg_htp_qnn_graph *g;
  const eg_htp_qnn_op_desc *d;
  const op_rule *rule;
  const eg_htp_qnn_tensor *in[MAX_INPUTS]; /* NULL: omitted */
  const eg_htp_qnn_tensor *out[1];
  const eg_htp_qnn_param *param[MAX_PARAMS]; /* by rule index; NULL: absent */
  eg_htp_qnn_attrs attrs;
};

/* "op <name> (<Type>): " + the rest; returns EG_ERR_INVALID. */
static eg_status fail(const check_ctx *c, const char *fmt, ...) EG_PRINTF(2, 3);
static eg_status fail(const check_ctx *c, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return eg_error(EG_ERR_INVALID, "op %s (%s): %s", c->d->name, eg_htp_qnn_op_name(c->d->type), msg);
}

static int find_rule_param(const op_rule *r, const char *name) {
  for (int i = 0; i < MAX_PARAMS && r->params[i].name; i++)
    if (strcmp(r->params[i].name, name) == 0) return i;
  return -1;
}

/* Param values with defaults (the param was checked against its rule already). */
static uint32_t param_u32(const check_ctx *c, const char *name, uint32_t def) {
  const int i = find_rule_param(c->rule, name);
  return i >= 0 && c->param[i] ? c->param[i]->scalar.u32 : def;
}

static float param_f32(const check_ctx *c, const char *name, float def) {
  const int i = find_rule_param(c->rule, name);
  return i >= 0 && c->param[i] ? c->param[i]->scalar.f32 : def;
}

static bool param_bool(const check_ctx *c, const char *name, bool def) {
  const int i = find_rule_param(c->rule, name);
  return i >= 0 && c->param[i] ? c->param[i]->scalar.b : def;
}

/* n values of a UINT_32 tensor param, or `def` (n values) when absent. */
static void param_u32s(const check_ctx *c, const char *name, const uint32_t *def, uint32_t *out,
                       int n) {
  const int i = find_rule_param(c->rule, name);
  const uint32_t *src = i >= 0 && c->param[i] ? c->param[i]->values.u32 : def;
  for (int k = 0; k < n; k++) out[k] = src[k];
}

/* One param against its rule. */
static eg_status check_param(const check_ctx *c, const eg_htp_qnn_param *p, const param_rule *r) {
  if (p->kind != r->kind || p->dtype != r->dtype)
    return fail(c, "param %s (%s %s): must be a %s %s", p->name,
                p->kind == EG_HTP_QNN_PARAM_SCALAR ? "scalar" : "tensor", eg_htp_qnn_dtype_name(p->dtype),
                r->kind == EG_HTP_QNN_PARAM_SCALAR ? "scalar" : "tensor", eg_htp_qnn_dtype_name(r->dtype));
  if (r->kind == EG_HTP_QNN_PARAM_SCALAR) return EG_OK;
  char buf[64];
  uint32_t want[EG_HTP_QNN_PARAM_MAX_RANK];
  for (int i = 0; i < r->rank; i++)
    want[i] = r->dims[i] == PERM_DIM ? (uint32_t)(c->in[0] ? c->in[0]->rank : 0) : r->dims[i];
  bool ok = p->n_values >= 0 && p->rank == r->rank;
  for (int i = 0; ok && i < r->rank; i++) ok = want[i] == 0 ? p->dims[i] >= 1 : p->dims[i] == want[i];
  if (!ok) {
    const int shown = p->rank >= 0 && p->rank <= EG_HTP_QNN_PARAM_MAX_RANK ? p->rank : 0;
    return fail(c, "param %s (shape %s%s): must have shape %s", p->name,
                fmt_dims(buf, sizeof buf, p->dims, shown), p->n_values < 0 ? ", too large" : "",
                r->dims[0] == 0 ? "[m], m >= 1" : fmt_dims((char[64]){0}, 64, want, r->rank));
  }
  return EG_OK;
}

/* Every given param is known, unique and well-formed; every mandatory one is present. */
static eg_status check_params(check_ctx *c) {
  const eg_htp_qnn_op_desc *d = c->d;
  if (d->n_params < 0 || (d->n_params > 0 && !d->params))
    return fail(c, "params (%d): a negative count or a NULL array", (int)d->n_params);
  for (int k = 0; k < d->n_params; k++) {
    const eg_htp_qnn_param *p = &d->params[k];
    const int i = p->name ? find_rule_param(c->rule, p->name) : -1;
    if (i < 0) return fail(c, "param %s: unknown: not a parameter of %s", p->name ? p->name : "(null)",
                           eg_htp_qnn_op_name(d->type));
    if (c->param[i]) return fail(c, "param %s: given twice: each param at most once", p->name);
    EG_TRY(check_param(c, p, &c->rule->params[i]));
    c->param[i] = p;
  }
  for (int i = 0; i < MAX_PARAMS && c->rule->params[i].name; i++)
    if (c->rule->params[i].mandatory && !c->param[i])
      return fail(c, "param %s: missing: mandatory for %s", c->rule->params[i].name,
                  eg_htp_qnn_op_name(d->type));
  return EG_OK;
}

/* Input and output counts, ids, tensor types and topological order. */
static eg_status check_io(check_ctx *c) {
  const eg_htp_qnn_op_desc *d = c->d;
  const op_rule *r = c->rule;
  if (d->n_inputs < r->min_in || d->n_inputs > r->max_in || (d->n_inputs > 0 && !d->inputs))
    return fail(c, "inputs (%d given): takes %d to %d", (int)d->n_inputs, r->min_in, r->max_in);
  if (d->n_outputs != r->n_out || !d->outputs)
    return fail(c, "outputs (%d given): produces %d", (int)d->n_outputs, r->n_out);
  for (int i = 0; i < d->n_inputs; i++) {
    const int32_t id = d->inputs[i];
    if (id == -1 && i >= r->min_in) continue;
    const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(c->g, id);
    if (!t) return fail(c, "in[%d] (tensor id %d): no such tensor%s", i, (int)id,
                        i >= r->min_in ? " (omit an optional input with -1)" : "");
    if ((t->type == EG_HTP_QNN_TENSOR_NATIVE || t->type == EG_HTP_QNN_TENSOR_APP_READ) && t->producer < 0)
      return fail(c, "in[%d] %s (%s, not produced yet): ops must be added in topological order",
                  i, t->name, type_names[t->type]);
    c->in[i] = t;
  }
  const eg_htp_qnn_tensor *o = eg_htp_qnn_graph_tensor(c->g, d->outputs[0]);
  if (!o) return fail(c, "out[0] (tensor id %d): no such tensor", (int)d->outputs[0]);
  if (o->type != EG_HTP_QNN_TENSOR_NATIVE && o->type != EG_HTP_QNN_TENSOR_APP_READ)
    return fail(c, "out[0] %s (%s): an op writes only NATIVE or APP_READ tensors", o->name,
                type_names[o->type]);
  if (o->producer >= 0)
    return fail(c, "out[0] %s (already written by op %s): each tensor has one producer",
                o->name, c->g->ops[o->producer].name);
  c->out[0] = o;
  return EG_OK;
}

/* ---- shape helpers for the rules ---- */

static eg_status expect_rank(const check_ctx *c, const char *what, const eg_htp_qnn_tensor *t,
                             int lo, int hi) {
  if (t->rank >= lo && t->rank <= hi) return EG_OK;
  if (lo == hi) return fail(c, "%s %s (rank %d): must be rank %d", what, t->name, (int)t->rank, lo);
  return fail(c, "%s %s (rank %d): must have rank in [%d, %d]", what, t->name, (int)t->rank, lo, hi);
}

/* Float graphs keep one dtype across data inputs and the output. A fixed-point tensor holds
 * real values (scale * (q + offset)), and QNN defines every op with a float data rule here
 * (convolutions, pools, FullyConnected, MatMul, Transpose, Reshape, Concat, reductions,
 * element-wise ops, activations, LogSoftmax, norms) for fixed-point data as well, with 8-bit
 * activations, 8-bit weights and 32-bit biases mixed: so where a rule wants FLOAT_32 (or one
 * fixed-point dtype) a fixed-point tensor (or FLOAT_32) is accepted. Cast stays non-quantized
 * (check_cast), and bool / integer rules stay exact. */
static eg_status expect_dtype(const check_ctx *c, const char *what, const eg_htp_qnn_tensor *t,
                              eg_htp_qnn_dtype want) {
  if (t->dtype == want) return EG_OK;
  const bool real_t = eg_htp_qnn_dtype_is_fixed_point(t->dtype) || t->dtype == EG_HTP_QNN_DTYPE_FLOAT_32;
  const bool real_w = eg_htp_qnn_dtype_is_fixed_point(want) || want == EG_HTP_QNN_DTYPE_FLOAT_32;
  if (real_t && real_w) return EG_OK;
  return fail(c, "%s %s (%s): must be %s", what, t->name, eg_htp_qnn_dtype_name(t->dtype),
              eg_htp_qnn_dtype_name(want));
}

/* A rank-1 [n] tensor (bias, gamma, ...), when present. */
static eg_status expect_vector(const check_ctx *c, int i, const char *role, uint32_t n) {
  const eg_htp_qnn_tensor *t = c->in[i];
  if (!t) return EG_OK;
  if (t->rank != 1 || t->dims[0] != n)
    return fail(c, "in[%d] %s %s (dims %s): must be [%u]", i, role, t->name,
                fmt_dims((char[96]){0}, 96, t->dims, t->rank), n);
  return expect_dtype(c, "in", t, c->in[0]->dtype);
}

/* The output must have exactly these dims and this dtype. */
static eg_status expect_out(const check_ctx *c, int rank, const uint32_t *dims,
                            eg_htp_qnn_dtype dtype) {
  const eg_htp_qnn_tensor *o = c->out[0];
  bool same = o->rank == rank;
  for (int i = 0; same && i < rank; i++) same = o->dims[i] == dims[i];
  char a[128], b[128];
  if (!same)
    return fail(c, "out[0] %s (dims %s, rule gives %s): output shape must follow the op's rule",
                o->name, fmt_dims(a, sizeof a, o->dims, o->rank), fmt_dims(b, sizeof b, dims, rank));
  return expect_dtype(c, "out[0]", o, dtype);
}

static eg_status expect_out_like(const check_ctx *c, const eg_htp_qnn_tensor *t) {
  return expect_out(c, t->rank, t->dims, t->dtype);
}

/* ---- rules: convolution ---- */

static eg_status check_strides(const check_ctx *c, const uint32_t *v, const char *name) {
  if (v[0] >= 1 && v[1] >= 1) return EG_OK;
  return fail(c, "param %s ([%u, %u]): must be >= 1", name, v[0], v[1]);
}

/* Conv2d / DepthWiseConv2d output size: floor((before + in + after - dil*(k-1) - 1) / s) + 1. */
static int64_t conv_out_size(uint32_t in, uint32_t k, uint32_t s, uint32_t dil, const uint32_t *pad) {
  const int64_t span = (int64_t)dil * (k - 1) + 1, padded = (int64_t)in + pad[0] + pad[1];
  return padded < span ? 0 : (padded - span) / s + 1;
}

/* stride, pad_amount, dilation into attrs.conv; in[0] and in[1] rank 4. */
static eg_status conv_common(check_ctx *c) {
  static const uint32_t ones[2] = {1, 1}, zeros[4] = {0, 0, 0, 0};
  eg_htp_qnn_conv_attrs *a = &c->attrs.conv;
  EG_TRY(expect_rank(c, "in[0]", c->in[0], 4, 4));
  EG_TRY(expect_rank(c, "in[1] filter", c->in[1], 4, 4));
  EG_TRY(expect_dtype(c, "in[1] filter", c->in[1], c->in[0]->dtype));
  param_u32s(c, "stride", ones, a->stride, 2);
  param_u32s(c, "pad_amount", zeros, &a->pad[0][0], 4);
  param_u32s(c, "dilation", ones, a->dilation, 2);
  param_u32s(c, "output_padding", zeros, a->output_padding, 2);
  a->group = param_u32(c, "group", 1);
  EG_TRY(check_strides(c, a->stride, "stride"));
  EG_TRY(check_strides(c, a->dilation, "dilation"));
  if (a->group < 1) return fail(c, "param group (0): must be >= 1");
  return EG_OK;
}

/* The [b, ho, wo, cout] output of a forward convolution. */
static eg_status conv_forward_out(check_ctx *c, uint32_t cout) {
  const eg_htp_qnn_conv_attrs *a = &c->attrs.conv;
  const eg_htp_qnn_tensor *x = c->in[0], *f = c->in[1];
  int64_t o[2];
  for (int d = 0; d < 2; d++) {
    o[d] = conv_out_size(x->dims[1 + d], f->dims[d], a->stride[d], a->dilation[d], a->pad[d]);
    if (o[d] < 1)
      return fail(c, "%s: padded input %u + %u + %u smaller than the dilated filter %lld: output "
                  "would be empty", d ? "width" : "height", a->pad[d][0], x->dims[1 + d],
                  a->pad[d][1], (long long)a->dilation[d] * (f->dims[d] - 1) + 1);
  }
  const uint32_t dims[4] = {x->dims[0], (uint32_t)o[0], (uint32_t)o[1], cout};
  return expect_out(c, 4, dims, x->dtype);
}

/* Conv2d: in[0] [b,h,w,cin], in[1] filter [kh,kw,cin/group,cout], in[2] bias [cout] (optional);
 * stride [2] and pad_amount [2,2] mandatory, dilation [2] (default 1), group (default 1). */
static eg_status check_conv2d(check_ctx *c) {
  EG_TRY(conv_common(c));
  const eg_htp_qnn_tensor *x = c->in[0], *f = c->in[1];
  const uint32_t g = c->attrs.conv.group, cin = x->dims[3], cout = f->dims[3];
  if (cin % g || cout % g)
    return fail(c, "channels (in %u, out %u, group %u): both must be divisible by group", cin,
                cout, g);
  if (f->dims[2] != cin / g)
    return fail(c, "in[1] filter %s (dim 2 = %u, in[0] has %u channels, group %u): filter is "
                "[kH, kW, Cin/group, Cout]", f->name, f->dims[2], cin, g);
  EG_TRY(expect_vector(c, 2, "bias", cout));
  return conv_forward_out(c, cout);
}

/* DepthWiseConv2d: in[0] [b,h,w,cin], in[1] filter [kh,kw,1,cin*mult], in[2] bias (optional);
 * stride and pad_amount mandatory, dilation (default 1). */
static eg_status check_depthwise_conv2d(check_ctx *c) {
  EG_TRY(conv_common(c));
  const eg_htp_qnn_tensor *x = c->in[0], *f = c->in[1];
  const uint32_t cin = x->dims[3], cout = f->dims[3];
  if (f->dims[2] != 1 || cout % cin)
    return fail(c, "in[1] filter %s (dims [%u, %u, %u, %u], in[0] has %u channels): filter is "
                "[kH, kW, 1, Cin*multiplier]", f->name, f->dims[0], f->dims[1], f->dims[2],
                cout, cin);
  EG_TRY(expect_vector(c, 2, "bias", cout));
  return conv_forward_out(c, cout);
}

/* TransposeConv2d: in[0] [b,h,w,cin], in[1] filter [kh,kw,cin,cout/group], in[2] bias [cout]
 * (optional); stride and pad_amount mandatory, group (default 1), output_padding [2] (default 0,
 * each < stride). No dilation in QNN's 2-D op.
 * out [b, ho, wo, cout], ho = stride*(h-1) + kh - pad_top - pad_bottom + output_padding. */
static eg_status check_transpose_conv2d(check_ctx *c) {
  EG_TRY(conv_common(c));
  const eg_htp_qnn_conv_attrs *a = &c->attrs.conv;
  const eg_htp_qnn_tensor *x = c->in[0], *f = c->in[1];
  const uint32_t g = a->group, cin = x->dims[3];
  if (cin % g) return fail(c, "in[0] channels (%u, group %u): must be divisible by group", cin, g);
  if (f->dims[2] != cin)
    return fail(c, "in[1] filter %s (dim 2 = %u, in[0] has %u channels): filter is [kH, kW, Cin, "
                "Cout/group]", f->name, f->dims[2], cin);
  const uint64_t cout = (uint64_t)f->dims[3] * g;
  if (cout > UINT32_MAX) return fail(c, "out channels (%llu): too many", (unsigned long long)cout);
  int64_t o[2];
  for (int d = 0; d < 2; d++) {
    if (a->output_padding[d] >= a->stride[d])
      return fail(c, "output_padding %u not in [0, stride=%u)", a->output_padding[d], a->stride[d]);
    o[d] = (int64_t)a->stride[d] * (x->dims[1 + d] - 1) + f->dims[d] - a->pad[d][0] -
           a->pad[d][1] + a->output_padding[d];
    if (o[d] < 1)
      return fail(c, "%s (%lld from stride %u, size %u, kernel %u, pads %u+%u): output would be "
                  "empty", d ? "width" : "height", (long long)o[d], a->stride[d], x->dims[1 + d],
                  f->dims[d], a->pad[d][0], a->pad[d][1]);
  }
  EG_TRY(expect_vector(c, 2, "bias", (uint32_t)cout));
  const uint32_t dims[4] = {x->dims[0], (uint32_t)o[0], (uint32_t)o[1], (uint32_t)cout};
  return expect_out(c, 4, dims, x->dtype);
}

/* ---- rules: pooling ---- */

/* PoolMax2d / PoolAvg2d: in[0] [b,h,w,c]; filter_size [2] and stride [2] mandatory, pad_amount
 * [2,2] (default 0, each < filter), rounding_mode (0 floor default, 1 ceil); PoolAvg2d also
 * count_pad_for_edges (default false).
 * out [b, ho, wo, c], ho = round((pad_top + h + pad_bottom - filter) / stride) + 1, and the
 * last window must start inside the input or its top/left padding. */
static eg_status check_pool(check_ctx *c) {
  static const uint32_t zeros[4] = {0, 0, 0, 0};
  eg_htp_qnn_pool_attrs *a = &c->attrs.pool;
  const eg_htp_qnn_tensor *x = c->in[0];
  EG_TRY(expect_rank(c, "in[0]", x, 4, 4));
  param_u32s(c, "filter_size", zeros, a->filter, 2);
  param_u32s(c, "stride", zeros, a->stride, 2);
  param_u32s(c, "pad_amount", zeros, &a->pad[0][0], 4);
  a->rounding_mode = param_u32(c, "rounding_mode", 0);
  a->count_pad_for_edges = param_bool(c, "count_pad_for_edges", false);
  EG_TRY(check_strides(c, a->filter, "filter_size"));
  EG_TRY(check_strides(c, a->stride, "stride"));
  if (a->rounding_mode > 1)
    return fail(c, "param rounding_mode (%u): must be 0 (FLOOR) or 1 (CEIL)", a->rounding_mode);
  uint32_t o[2];
  for (int d = 0; d < 2; d++) {
    const int64_t padded = (int64_t)x->dims[1 + d] + a->pad[d][0] + a->pad[d][1];
    if (a->pad[d][0] >= a->filter[d] || a->pad[d][1] >= a->filter[d])
      return fail(c, "pad_amount [%u, %u] (filter %u): each pad must be < filter_size",
                  a->pad[d][0], a->pad[d][1], a->filter[d]);
    if (padded < a->filter[d])
      return fail(c, "%s (padded %lld, filter %u): the window must fit the padded input",
                  d ? "width" : "height", (long long)padded, a->filter[d]);
    const int64_t span = padded - a->filter[d];
    const int64_t n = (a->rounding_mode ? (span + a->stride[d] - 1) : span) / a->stride[d] + 1;
    if ((n - 1) * a->stride[d] >= (int64_t)x->dims[1 + d] + a->pad[d][0])
      return fail(c, "%s (%lld windows, stride %u, size %u): the last window starts past the "
                  "input: use FLOOR rounding or less padding", d ? "width" : "height",
                  (long long)n, a->stride[d], x->dims[1 + d]);
    o[d] = (uint32_t)n;
  }
  const uint32_t dims[4] = {x->dims[0], o[0], o[1], x->dims[3]};
  return expect_out(c, 4, dims, x->dtype);
}

/* ---- rules: matrix products ---- */

/* FullyConnected: in[0] [..., n] (flattened to [numel/n, n]), in[1] weights [units, n], in[2]
 * bias [units] (optional); keep_dims (default false): out [numel/n, units], or in[0]'s dims
 * with the last replaced by units. */
static eg_status check_fully_connected(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0], *w = c->in[1];
  EG_TRY(expect_rank(c, "in[0]", x, 1, EG_HTP_QNN_MAX_RANK));
  EG_TRY(expect_rank(c, "in[1] weights", w, 2, 2));
  EG_TRY(expect_dtype(c, "in[1] weights", w, x->dtype));
  const uint32_t units = w->dims[0], n = w->dims[1];
  const bool keep = c->attrs.fully_connected.keep_dims = param_bool(c, "keep_dims", false);
  const int64_t numel = eg_htp_qnn_tensor_numel(x);
  if (keep ? x->dims[x->rank - 1] != n : numel % n != 0)
    return fail(c, "in[0] %s (%lld elements, last dim %u) and weights [%u, %u]: the input "
                "must split into rows of %u", x->name, (long long)numel, x->dims[x->rank - 1],
                units, n, n);
  EG_TRY(expect_vector(c, 2, "bias", units));
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  if (!keep) {
    dims[0] = (uint32_t)(numel / n);
    dims[1] = units;
    return expect_out(c, 2, dims, x->dtype);
  }
  for (int i = 0; i < x->rank; i++) dims[i] = x->dims[i];
  dims[x->rank - 1] = units;
  return expect_out(c, x->rank, dims, x->dtype);
}

/* Broadcasts a and b (NumPy rules, right-aligned) into out; false if incompatible. */
static bool broadcast(const uint32_t *a, int ra, const uint32_t *b, int rb, uint32_t *out,
                      int *rout) {
  const int r = ra > rb ? ra : rb;
  for (int i = 0; i < r; i++) {
    const uint32_t da = i < r - ra ? 1 : a[i - (r - ra)], db = i < r - rb ? 1 : b[i - (r - rb)];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  *rout = r;
  return true;
}

/* MatMul: in[0] [..., m, k] (or [..., k, m] with transpose_in0), in[1] [..., k, p] (or
 * [..., p, k] with transpose_in1), in[2] bias [p] (optional); batch dims broadcast.
 * out [..., m, p]. */
static eg_status check_mat_mul(check_ctx *c) {
  const eg_htp_qnn_tensor *a = c->in[0], *b = c->in[1];
  EG_TRY(expect_rank(c, "in[0]", a, 2, EG_HTP_QNN_MAX_RANK));
  EG_TRY(expect_rank(c, "in[1]", b, 2, EG_HTP_QNN_MAX_RANK));
  EG_TRY(expect_dtype(c, "in[1]", b, a->dtype));
  const bool t0 = c->attrs.matmul.transpose_in0 = param_bool(c, "transpose_in0", false);
  const bool t1 = c->attrs.matmul.transpose_in1 = param_bool(c, "transpose_in1", false);
  const uint32_t m = a->dims[a->rank - (t0 ? 1 : 2)], k = a->dims[a->rank - (t0 ? 2 : 1)];
  const uint32_t k1 = b->dims[b->rank - (t1 ? 1 : 2)], p = b->dims[b->rank - (t1 ? 2 : 1)];
  if (k != k1)
    return fail(c, "inner dims (in[0] gives %u, in[1] gives %u): must agree", k, k1);
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  int r;
  if (!broadcast(a->dims, a->rank - 2, b->dims, b->rank - 2, dims, &r))
    return fail(c, "batch dims of %s and %s: must broadcast", a->name, b->name);
  dims[r] = m;
  dims[r + 1] = p;
  EG_TRY(expect_vector(c, 2, "bias", p));
  return expect_out(c, r + 2, dims, a->dtype);
}

/* ---- rules: layout and shape ---- */

/* Transpose: in[0] rank n; perm [n] mandatory, a permutation of 0..n-1.
 * out dims[i] = in dims[perm[i]]. */
static eg_status check_transpose(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  EG_TRY(expect_rank(c, "in[0]", x, 1, EG_HTP_QNN_MAX_RANK));
  uint32_t *perm = c->attrs.transpose.perm, dims[EG_HTP_QNN_MAX_RANK], seen = 0;
  param_u32s(c, "perm", perm, perm, x->rank);
  for (int i = 0; i < x->rank; i++) {
    if (perm[i] >= (uint32_t)x->rank || (seen >> perm[i] & 1u))
      return fail(c, "param perm (%s): must be a permutation of 0..%d",
                  fmt_dims((char[96]){0}, 96, perm, x->rank), (int)x->rank - 1);
    seen |= 1u << perm[i];
    dims[i] = x->dims[perm[i]];
  }
  return expect_out(c, x->rank, dims, x->dtype);
}

/* Reshape: in[0]; out has the same dtype and element count, any dims. */
static eg_status check_reshape(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0], *o = c->out[0];
  if (eg_htp_qnn_tensor_numel(x) != eg_htp_qnn_tensor_numel(o))
    return fail(c, "out[0] %s (%lld elements, in[0] has %lld): reshape keeps the element count",
                o->name, (long long)eg_htp_qnn_tensor_numel(o), (long long)eg_htp_qnn_tensor_numel(x));
  return expect_dtype(c, "out[0]", o, x->dtype);
}

/* StridedSlice: in[0] rank n; ranges [n, 3] INT_32 mandatory, one (begin, end, stride) per
 * dim. Modelled: 0 <= begin < end <= dim and stride >= 1 (QNN also takes negative indices and
 * strides and the begin/end/shrink/new-axes masks; edgegrad's lowerings never emit them, so a
 * graph using them is refused here). out dims[i] = ceil((end - begin) / stride). */
static eg_status check_strided_slice(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  EG_TRY(expect_rank(c, "in[0]", x, 1, EG_HTP_QNN_MAX_RANK));
  const int i = find_rule_param(c->rule, "ranges");
  const int32_t *r = c->param[i]->values.i32;
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    const int32_t b = r[3 * d], e = r[3 * d + 1], s = r[3 * d + 2];
    if (b < 0 || e <= b || (uint32_t)e > x->dims[d] || s < 1)
      return fail(c, "param ranges (dim %d: begin %d, end %d, stride %d; in[0] dim %u): needs 0 "
                  "<= begin < end <= dim and stride >= 1", d, (int)b, (int)e, (int)s, x->dims[d]);
    c->attrs.slice.begin[d] = (uint32_t)b;
    c->attrs.slice.step[d] = (uint32_t)s;
    dims[d] = (uint32_t)((e - b + s - 1) / s);
  }
  return expect_out(c, x->rank, dims, x->dtype);
}

/* Pad: in[0] rank n; scheme mandatory, modelled for 0 (CONSTANT) only (QNN's MIRROR_SYMMETRIC,
 * MIRROR_REFLECT and EDGE are never emitted by edgegrad's lowerings, so a graph using them is
 * refused here); pad_amount [n, 2] UINT_32 mandatory, (before, after) per dim;
 * pad_constant_value (default 0), the fill. out dims[i] = before + dims[i] + after. */
static eg_status check_pad(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  EG_TRY(expect_rank(c, "in[0]", x, 1, EG_HTP_QNN_MAX_RANK));
  const uint32_t scheme = param_u32(c, "scheme", 0);
  if (scheme != 0)
    return fail(c, "param scheme (%u): only 0 (CONSTANT) is modelled", scheme);
  const uint32_t *p = c->param[find_rule_param(c->rule, "pad_amount")]->values.u32;
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    const uint64_t n = (uint64_t)p[2 * d] + x->dims[d] + p[2 * d + 1];
    if (n > UINT32_MAX)
      return fail(c, "param pad_amount (dim %d: %u + %u + %u): padded dim too long", d,
                  p[2 * d], x->dims[d], p[2 * d + 1]);
    c->attrs.pad.before[d] = p[2 * d];
    dims[d] = (uint32_t)n;
  }
  c->attrs.pad.value = param_f32(c, "pad_constant_value", 0.0f);
  return expect_out(c, x->rank, dims, x->dtype);
}

/* Concat: in[0..m) of one rank and dtype, equal except along axis; axis (default rank-1).
 * out: in[0]'s dims with dims[axis] the sum. */
static eg_status check_concat(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  EG_TRY(expect_rank(c, "in[0]", x, 1, EG_HTP_QNN_MAX_RANK));
  const uint32_t axis = c->attrs.concat.axis = param_u32(c, "axis", (uint32_t)x->rank - 1);
  if (axis >= (uint32_t)x->rank)
    return fail(c, "param axis (%u): must be < rank %d", axis, (int)x->rank);
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  uint64_t total = 0;
  for (int i = 0; i < x->rank; i++) dims[i] = x->dims[i];
  for (int k = 0; k < c->d->n_inputs; k++) {
    const eg_htp_qnn_tensor *t = c->in[k];
    if (!t) return fail(c, "in[%d] (omitted): Concat takes no optional inputs", k);
    bool ok = t->rank == x->rank;
    for (int i = 0; ok && i < x->rank; i++) ok = i == (int)axis || t->dims[i] == x->dims[i];
    if (!ok)
      return fail(c, "in[%d] %s (dims %s, in[0] %s): inputs must agree except along axis %u", k,
                  t->name, fmt_dims((char[96]){0}, 96, t->dims, t->rank),
                  fmt_dims((char[96]){0}, 96, x->dims, x->rank), axis);
    EG_TRY(expect_dtype(c, "in", t, x->dtype));
    total += t->dims[axis];
  }
  if (total > UINT32_MAX) return fail(c, "axis %u (total %llu): too long", axis,
                                      (unsigned long long)total);
  dims[axis] = (uint32_t)total;
  return expect_out(c, x->rank, dims, x->dtype);
}

/* Cast: in[0] of any non-quantized dtype; out: same dims, any non-quantized dtype. */
static eg_status check_cast(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0], *o = c->out[0];
  if (eg_htp_qnn_dtype_is_fixed_point(x->dtype) || eg_htp_qnn_dtype_is_fixed_point(o->dtype))
    return fail(c, "dtypes (%s -> %s): Cast converts between non-quantized types (use "
                "Quantize/Dequantize)", eg_htp_qnn_dtype_name(x->dtype), eg_htp_qnn_dtype_name(o->dtype));
  return expect_out(c, x->rank, x->dims, o->dtype);
}

/* Tile: in[0] rank n >= 1; multiples [n] mandatory, each >= 1. out dims[i] = in dims[i] *
 * multiples[i] (in[0] repeated along each axis), in[0]'s dtype. */
static eg_status check_tile(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  EG_TRY(expect_rank(c, "in[0]", x, 1, EG_HTP_QNN_MAX_RANK));
  uint32_t *m = c->attrs.tile.multiples, dims[EG_HTP_QNN_MAX_RANK];
  param_u32s(c, "multiples", m, m, x->rank);
  for (int i = 0; i < x->rank; i++) {
    const uint64_t d = (uint64_t)x->dims[i] * m[i];
    if (m[i] < 1 || d > UINT32_MAX)
      return fail(c, "param multiples (%s, in[0] dims %s): each multiple must be >= 1 and "
                  "keep the dim within 32 bits", fmt_dims((char[96]){0}, 96, m, x->rank),
                  fmt_dims((char[96]){0}, 96, x->dims, x->rank));
    dims[i] = (uint32_t)d;
  }
  return expect_out(c, x->rank, dims, x->dtype);
}

/* ---- rules: reductions ---- */

/* ReduceSum / ReduceMean / ReduceMax: in[0] rank n >= 1; axes [m] mandatory, distinct, each < n; keep_dims
 * (default false). out: in[0]'s dims without the axes (or with 1s when keep_dims). */
static eg_status check_reduce(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  EG_TRY(expect_rank(c, "in[0]", x, 1, EG_HTP_QNN_MAX_RANK));
  const eg_htp_qnn_param *axes = c->param[find_rule_param(c->rule, "axes")];
  uint32_t mask = 0;
  for (int i = 0; i < axes->n_values; i++) {
    const uint32_t a = axes->values.u32[i];
    if (a >= (uint32_t)x->rank || (mask >> a & 1u))
      return fail(c, "param axes (%s, rank %d): axes must be distinct dims of in[0]",
                  fmt_dims((char[96]){0}, 96, axes->values.u32, axes->n_values), (int)x->rank);
    mask |= 1u << a;
  }
  const bool keep = param_bool(c, "keep_dims", false);
  c->attrs.reduce.mask = mask;
  c->attrs.reduce.keep_dims = keep;
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (!(mask >> i & 1u)) dims[r++] = x->dims[i];
    else if (keep) dims[r++] = 1;
  return expect_out(c, r, dims, x->dtype);
}

/* ---- rules: elementwise ---- */

/* ElementWiseAdd/Subtract/Multiply/Divide and the comparisons Greater/GreaterEqual/LessEqual/
 * Equal (in[0] > / >= / <= / == in[1]): in[0], in[1] of one dtype, NumPy broadcasting; out:
 * the broadcast shape, in[0]'s dtype (a comparison: BOOL_8). */
static eg_status check_binary(check_ctx *c) {
  const eg_htp_qnn_tensor *a = c->in[0], *b = c->in[1];
  EG_TRY(expect_dtype(c, "in[1]", b, a->dtype));
  uint32_t dims[EG_HTP_QNN_MAX_RANK];
  int r;
  if (!broadcast(a->dims, a->rank, b->dims, b->rank, dims, &r))
    return fail(c, "in[0] %s %s and in[1] %s %s: shapes must broadcast", a->name,
                fmt_dims((char[96]){0}, 96, a->dims, a->rank), b->name,
                fmt_dims((char[96]){0}, 96, b->dims, b->rank));
  const bool cmp = eg_htp_qnn_op_is_comparison(c->d->type);
  return expect_out(c, r, dims, cmp ? EG_HTP_QNN_DTYPE_BOOL_8 : a->dtype);
}

/* ElementWiseSelect: in[0] condition BOOL_8, in[1] (true) and in[2] (false) of one dtype;
 * all three broadcast. out: the broadcast shape, in[1]'s dtype. */
static eg_status check_select(check_ctx *c) {
  const eg_htp_qnn_tensor *cond = c->in[0], *a = c->in[1], *b = c->in[2];
  EG_TRY(expect_dtype(c, "in[0] condition", cond, EG_HTP_QNN_DTYPE_BOOL_8));
  EG_TRY(expect_dtype(c, "in[2]", b, a->dtype));
  uint32_t ab[EG_HTP_QNN_MAX_RANK], dims[EG_HTP_QNN_MAX_RANK];
  int rab, r;
  if (!broadcast(a->dims, a->rank, b->dims, b->rank, ab, &rab) ||
      !broadcast(cond->dims, cond->rank, ab, rab, dims, &r))
    return fail(c, "in[0] %s, in[1] %s, in[2] %s: shapes must broadcast",
                fmt_dims((char[96]){0}, 96, cond->dims, cond->rank),
                fmt_dims((char[96]){0}, 96, a->dims, a->rank),
                fmt_dims((char[96]){0}, 96, b->dims, b->rank));
  return expect_out(c, r, dims, a->dtype);
}

/* ElementWiseNeg, ElementWiseRsqrt, ElementWiseExp, ElementWiseLog, Relu, Sigmoid, Tanh, Gelu: out
 * like in[0]. */
static eg_status check_unary(check_ctx *c) { return expect_out_like(c, c->in[0]); }

/* ReluMinMax: min_value and max_value (float scalars) mandatory, min <= max. */
static eg_status check_relu_min_max(check_ctx *c) {
  const float lo = param_f32(c, "min_value", 0.0f), hi = param_f32(c, "max_value", 0.0f);
  if (!(lo <= hi))
    return fail(c, "params min_value %g, max_value %g: min_value must be <= max_value",
                (double)lo, (double)hi);
  c->attrs.relu_min_max.min_value = lo;
  c->attrs.relu_min_max.max_value = hi;
  return expect_out_like(c, c->in[0]);
}

/* ElementWiseNeuron: operation (UINT_32, mandatory) 2 HARD_SIGMOID or 3 HARD_SWISH (QNN's
 * other operations are not modelled); HARD_SIGMOID needs alpha and beta (finite floats: QNN's
 * defaults are not relied on), HARD_SWISH takes neither. out like in[0]. */
static eg_status check_neuron(check_ctx *c) {
  const uint32_t op = param_u32(c, "operation", 0);
  const bool has_a = c->param[find_rule_param(c->rule, "alpha")] != NULL;
  const bool has_b = c->param[find_rule_param(c->rule, "beta")] != NULL;
  const float alpha = param_f32(c, "alpha", 0.0f), beta = param_f32(c, "beta", 0.0f);
  if (op != EG_HTP_QNN_NEURON_HARD_SIGMOID && op != EG_HTP_QNN_NEURON_HARD_SWISH)
    return fail(c, "param operation (%u): must be 2 (HARD_SIGMOID) or 3 (HARD_SWISH)", op);
  if (op == EG_HTP_QNN_NEURON_HARD_SWISH && (has_a || has_b))
    return fail(c, "param %s: HARD_SWISH takes no alpha or beta", has_a ? "alpha" : "beta");
  if (op == EG_HTP_QNN_NEURON_HARD_SIGMOID && !(has_a && has_b && isfinite(alpha) && isfinite(beta)))
    return fail(c, "params alpha %g, beta %g%s: HARD_SIGMOID needs both, finite", (double)alpha,
                (double)beta, has_a && has_b ? "" : " (one missing)");
  c->attrs.neuron.operation = op;
  c->attrs.neuron.alpha = alpha;
  c->attrs.neuron.beta = beta;
  return expect_out_like(c, c->in[0]);
}

/* Softmax, LogSoftmax: in[0] rank n >= 1; axis (default n-1), beta (default 1.0).
 * out = softmax(beta * in) / log_softmax(beta * in) along axis, like in[0]. */
static eg_status check_log_softmax(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  EG_TRY(expect_rank(c, "in[0]", x, 1, EG_HTP_QNN_MAX_RANK));
  const uint32_t axis = c->attrs.softmax.axis = param_u32(c, "axis", (uint32_t)x->rank - 1);
  c->attrs.softmax.beta = param_f32(c, "beta", 1.0f);
  if (axis >= (uint32_t)x->rank)
    return fail(c, "param axis (%u): must be < rank %d", axis, (int)x->rank);
  return expect_out_like(c, x);
}

/* ---- rules: normalization (channel last) ---- */

/* Batchnorm (inference, statistics folded in): in[0] [b, ..., c], in[1] weights [c], in[2] bias
 * [c] (optional). out = in * weights + bias, like in[0]. */
static eg_status check_batchnorm(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  EG_TRY(expect_rank(c, "in[0]", x, 1, EG_HTP_QNN_MAX_RANK));
  EG_TRY(expect_vector(c, 1, "weights", x->dims[x->rank - 1]));
  EG_TRY(expect_vector(c, 2, "bias", x->dims[x->rank - 1]));
  return expect_out_like(c, x);
}

/* InstanceNorm: in[0] [b, ..., c] rank >= 3, in[1] gamma [c], in[2] beta [c] (both optional);
 * epsilon (default 1e-12), mode (0 MU_SIGMA default, 1 RMS), normalize_variance (default true),
 * region (0 ACROSS_SPATIAL default, 1 ACROSS_CHANNEL, 2 ACROSS_ALL). */
static eg_status check_instance_norm(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  eg_htp_qnn_norm_attrs *a = &c->attrs.norm;
  EG_TRY(expect_rank(c, "in[0]", x, 3, EG_HTP_QNN_MAX_RANK));
  EG_TRY(expect_vector(c, 1, "gamma", x->dims[x->rank - 1]));
  EG_TRY(expect_vector(c, 2, "beta", x->dims[x->rank - 1]));
  a->epsilon = param_f32(c, "epsilon", 1e-12f);
  a->mode = param_u32(c, "mode", 0);
  a->normalize_variance = param_bool(c, "normalize_variance", true);
  a->region = param_u32(c, "region", 0);
  if (a->mode > 1) return fail(c, "param mode (%u): must be 0 (MU_SIGMA) or 1 (RMS)", a->mode);
  if (a->region > 2)
    return fail(c, "param region (%u): must be 0 (ACROSS_SPATIAL), 1 (ACROSS_CHANNEL) or 2 "
                "(ACROSS_ALL)", a->region);
  if (!(a->epsilon >= 0.0f)) return fail(c, "param epsilon (%g): must be >= 0", (double)a->epsilon);
  return expect_out_like(c, x);
}

/* GroupNorm: in[0] [b, ..., c] rank >= 2, in[1] gamma [c], in[2] beta [c] (both optional);
 * epsilon (default 1e-5), group (default 1, divides c). */
static eg_status check_group_norm(check_ctx *c) {
  const eg_htp_qnn_tensor *x = c->in[0];
  eg_htp_qnn_norm_attrs *a = &c->attrs.norm;
  EG_TRY(expect_rank(c, "in[0]", x, 2, EG_HTP_QNN_MAX_RANK));
  const uint32_t ch = x->dims[x->rank - 1];
  EG_TRY(expect_vector(c, 1, "gamma", ch));
  EG_TRY(expect_vector(c, 2, "beta", ch));
  a->epsilon = param_f32(c, "epsilon", 1e-5f);
  a->group = param_u32(c, "group", 1);
  if (a->group < 1 || ch % a->group)
    return fail(c, "param group (%u, %u channels): must be >= 1 and divide the channels",
                a->group, ch);
  if (!(a->epsilon >= 0.0f)) return fail(c, "param epsilon (%g): must be >= 0", (double)a->epsilon);
  return expect_out_like(c, x);
}

/* ---- the rule table ---- */

#define U32 EG_HTP_QNN_DTYPE_UINT_32
#define F32 EG_HTP_QNN_DTYPE_FLOAT_32
#define B8 EG_HTP_QNN_DTYPE_BOOL_8
#define I32 EG_HTP_QNN_DTYPE_INT_32
#define SCALAR(n, t, m) {n, EG_HTP_QNN_PARAM_SCALAR, t, m, 0, {0, 0}}
#define VEC2(n, m) {n, EG_HTP_QNN_PARAM_TENSOR, U32, m, 1, {2, 0}}
#define PADS(n, m) {n, EG_HTP_QNN_PARAM_TENSOR, U32, m, 2, {2, 2}}

#define CONV_PARAMS VEC2("stride", true), PADS("pad_amount", true)
#define POOL_PARAMS                                                                  \
  VEC2("filter_size", true), VEC2("stride", true), PADS("pad_amount", false),       \
      SCALAR("rounding_mode", U32, false)
#define REDUCE_PARAMS                                                                \
  {"axes", EG_HTP_QNN_PARAM_TENSOR, U32, true, 1, {0, 0}}, SCALAR("keep_dims", B8, false)
#define BINARY {2, 2, 1, {{0}}, check_binary}
#define UNARY {1, 1, 1, {{0}}, check_unary}

static const op_rule rules[] = {
    [EG_HTP_QNN_OP_CONV_2D] = {2, 3, 1,
                           {CONV_PARAMS, VEC2("dilation", false), SCALAR("group", U32, false)},
                           check_conv2d},
    [EG_HTP_QNN_OP_DEPTH_WISE_CONV_2D] = {2, 3, 1, {CONV_PARAMS, VEC2("dilation", false)},
                                      check_depthwise_conv2d},
    [EG_HTP_QNN_OP_TRANSPOSE_CONV_2D] = {2, 3, 1,
                                     {CONV_PARAMS, SCALAR("group", U32, false),
                                      VEC2("output_padding", false)},
                                     check_transpose_conv2d},
    [EG_HTP_QNN_OP_POOL_MAX_2D] = {1, 1, 1, {POOL_PARAMS}, check_pool},
    [EG_HTP_QNN_OP_POOL_AVG_2D] = {1, 1, 1,
                               {POOL_PARAMS, SCALAR("count_pad_for_edges", B8, false)},
                               check_pool},
    [EG_HTP_QNN_OP_FULLY_CONNECTED] = {2, 3, 1, {SCALAR("keep_dims", B8, false)},
                                   check_fully_connected},
    [EG_HTP_QNN_OP_MAT_MUL] = {2, 3, 1,
                           {SCALAR("transpose_in0", B8, false), SCALAR("transpose_in1", B8, false)},
                           check_mat_mul},
    [EG_HTP_QNN_OP_TRANSPOSE] = {1, 1, 1, {{"perm", EG_HTP_QNN_PARAM_TENSOR, U32, true, 1, {PERM_DIM, 0}}},
                             check_transpose},
    [EG_HTP_QNN_OP_RESHAPE] = {1, 1, 1, {{0}}, check_reshape},
    [EG_HTP_QNN_OP_STRIDED_SLICE] = {1, 1, 1,
                                 {{"ranges", EG_HTP_QNN_PARAM_TENSOR, I32, true, 2, {PERM_DIM, 3}}},
                                 check_strided_slice},
    [EG_HTP_QNN_OP_PAD] = {1, 1, 1,
                       {SCALAR("scheme", U32, true),
                        {"pad_amount", EG_HTP_QNN_PARAM_TENSOR, U32, true, 2, {PERM_DIM, 2}},
                        SCALAR("pad_constant_value", F32, false)},
                       check_pad},
    [EG_HTP_QNN_OP_CONCAT] = {1, MAX_INPUTS, 1, {SCALAR("axis", U32, false)}, check_concat},
    [EG_HTP_QNN_OP_CAST] = {1, 1, 1, {{0}}, check_cast},
    [EG_HTP_QNN_OP_TILE] = {1, 1, 1, {{"multiples", EG_HTP_QNN_PARAM_TENSOR, U32, true, 1, {PERM_DIM, 0}}},
                        check_tile},
    [EG_HTP_QNN_OP_REDUCE_SUM] = {1, 1, 1, {REDUCE_PARAMS}, check_reduce},
    [EG_HTP_QNN_OP_REDUCE_MEAN] = {1, 1, 1, {REDUCE_PARAMS}, check_reduce},
    [EG_HTP_QNN_OP_REDUCE_MAX] = {1, 1, 1, {REDUCE_PARAMS}, check_reduce},
    [EG_HTP_QNN_OP_ELEMENT_WISE_ADD] = BINARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT] = BINARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY] = BINARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_DIVIDE] = BINARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_GREATER] = BINARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL] = BINARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL] = BINARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_EQUAL] = BINARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_SELECT] = {3, 3, 1, {{0}}, check_select},
    [EG_HTP_QNN_OP_ELEMENT_WISE_NEG] = UNARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_RSQRT] = UNARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_EXP] = UNARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_LOG] = UNARY,
    [EG_HTP_QNN_OP_RELU] = UNARY,
    [EG_HTP_QNN_OP_RELU_MIN_MAX] = {1, 1, 1,
                                {SCALAR("min_value", F32, true), SCALAR("max_value", F32, true)},
                                check_relu_min_max},
    [EG_HTP_QNN_OP_SIGMOID] = UNARY,
    [EG_HTP_QNN_OP_TANH] = UNARY,
    [EG_HTP_QNN_OP_GELU] = UNARY,
    [EG_HTP_QNN_OP_ELEMENT_WISE_NEURON] = {1, 1, 1,
                                       {SCALAR("operation", U32, true),
                                        SCALAR("alpha", F32, false), SCALAR("beta", F32, false)},
                                       check_neuron},
    [EG_HTP_QNN_OP_SOFTMAX] = {1, 1, 1, {SCALAR("axis", U32, false), SCALAR("beta", F32, false)},
                           check_log_softmax},
    [EG_HTP_QNN_OP_LOG_SOFTMAX] = {1, 1, 1, {SCALAR("axis", U32, false), SCALAR("beta", F32, false)},
                               check_log_softmax},
    [EG_HTP_QNN_OP_BATCHNORM] = {2, 3, 1, {{0}}, check_batchnorm},
    [EG_HTP_QNN_OP_INSTANCE_NORM] = {1, 3, 1,
                                 {SCALAR("epsilon", F32, false), SCALAR("mode", U32, false),
                                  SCALAR("normalize_variance", B8, false),
                                  SCALAR("region", U32, false)},
                                 check_instance_norm},
    [EG_HTP_QNN_OP_GROUP_NORM] = {1, 3, 1, {SCALAR("epsilon", F32, false), SCALAR("group", U32, false)},
                              check_group_norm},
};
_Static_assert(sizeof rules / sizeof rules[0] == EG_HTP_QNN_OP_COUNT, "one rule per QNN op");

/* ---- ops ---- */

/* Copies the op into the arena and records it as its output's producer. */
static eg_status append_op(eg_htp_qnn_graph *g, const check_ctx *c, int32_t *index) {
  const eg_htp_qnn_op_desc *d = c->d;
  EG_TRY(grow(g, (void **)&g->ops, g->n_ops, &g->cap_ops, sizeof(eg_htp_qnn_op_node)));
  eg_htp_qnn_op_node op = {.type = d->type, .n_inputs = d->n_inputs, .n_outputs = d->n_outputs,
                       .n_params = d->n_params, .attrs = c->attrs};
  op.name = eg_arena_strdup(g->arena, d->name);
  op.inputs = eg_arena_array(g->arena, (size_t)d->n_inputs + 1, sizeof(int32_t));
  op.outputs = eg_arena_array(g->arena, (size_t)d->n_outputs, sizeof(int32_t));
  op.params = eg_arena_array(g->arena, (size_t)d->n_params + 1, sizeof(eg_htp_qnn_param));
  bool ok = op.name && op.inputs && op.outputs && op.params;
  for (int i = 0; ok && i < d->n_params; i++) {
    op.params[i] = d->params[i];
    ok = (op.params[i].name = eg_arena_strdup(g->arena, d->params[i].name)) != NULL;
  }
  if (!ok) return eg_error(EG_ERR_NOMEM, "op %s: out of memory", d->name);
  memcpy(op.inputs, d->inputs, sizeof(int32_t) * (size_t)d->n_inputs);
  memcpy(op.outputs, d->outputs, sizeof(int32_t) * (size_t)d->n_outputs);
  g->ops[g->n_ops] = op;
  EG_TRY(map_insert(g, MAP_OP_NAME, g->n_ops));
  g->tensors[d->outputs[0]].producer = g->n_ops;
  if (index) *index = g->n_ops;
  g->n_ops++;
  return EG_OK;
}

eg_status eg_htp_qnn_graph_add_op(eg_htp_qnn_graph *g, const eg_htp_qnn_op_desc *d, int32_t *index) {
  if (index) *index = -1;
  if ((unsigned)d->type >= EG_HTP_QNN_OP_COUNT)
    return eg_error(EG_ERR_INVALID, "op %s: type (%d): not a QNN op edgegrad models",
                    d->name ? d->name : "(null)", (int)d->type);
  if (!d->name || !d->name[0])
    return eg_error(EG_ERR_INVALID, "qnn graph %s: %s op name (empty): every op needs a unique "
                    "name", g->name, eg_htp_qnn_op_name(d->type));
  if (map_find(g, MAP_OP_NAME, hash_str(d->name), 0, d->name) >= 0)
    return eg_error(EG_ERR_INVALID, "op %s (%s): name already used in graph %s: op names are "
                    "unique", d->name, eg_htp_qnn_op_name(d->type), g->name);
  check_ctx c = {.g = g, .d = d, .rule = &rules[d->type]};
  EG_TRY(check_io(&c));
  EG_TRY(check_params(&c));
  EG_TRY(c.rule->check(&c));
  return append_op(g, &c, index);
}

/* ---- dump ---- */

static void dump_param(const eg_htp_qnn_param *p, FILE *out) {
  fprintf(out, " %s=", p->name);
  if (p->kind == EG_HTP_QNN_PARAM_SCALAR) {
    switch (p->dtype) {
    case EG_HTP_QNN_DTYPE_FLOAT_32: fprintf(out, "%g", (double)p->scalar.f32); break;
    case EG_HTP_QNN_DTYPE_BOOL_8: fprintf(out, "%s", p->scalar.b ? "true" : "false"); break;
    case EG_HTP_QNN_DTYPE_INT_32: fprintf(out, "%d", (int)p->scalar.i32); break;
    default: fprintf(out, "%u", p->scalar.u32); break;
    }
    return;
  }
  const int inner = p->rank == 2 ? (int)p->dims[1] : p->n_values;
  fputc('[', out);
  for (int i = 0; i < p->n_values; i++) {
    if (p->rank == 2 && i % inner == 0) fprintf(out, "%s[", i ? ", " : "");
    else if (i) fprintf(out, ", ");
    if (p->dtype == EG_HTP_QNN_DTYPE_INT_32) fprintf(out, "%d", (int)p->values.i32[i]);
    else fprintf(out, "%u", p->values.u32[i]);
    if (p->rank == 2 && i % inner == inner - 1) fputc(']', out);
  }
  fputc(']', out);
}

static void dump_tensor(const eg_htp_qnn_tensor *t, FILE *out) {
  char buf[160];
  fprintf(out, "  %%%d %s: %s %s %s", (int)t->id, t->name, type_names[t->type],
          eg_htp_qnn_dtype_name(t->dtype), fmt_dims(buf, sizeof buf, t->dims, t->rank));
  if (t->quant.encoding == EG_HTP_QNN_QUANT_SCALE_OFFSET)
    fprintf(out, " scale=%g offset=%d", (double)t->quant.scale, (int)t->quant.offset);
  else if (t->quant.encoding == EG_HTP_QNN_QUANT_AXIS_SCALE_OFFSET)
    fprintf(out, " per-axis(%d)", (int)t->quant.axis);
  if (t->type == EG_HTP_QNN_TENSOR_STATIC) fprintf(out, " (%zu bytes)", t->nbytes);
  if (t->key >= 0) fprintf(out, " key=%" PRId64, t->key);
  fputc('\n', out);
}

void eg_htp_qnn_graph_dump(const eg_htp_qnn_graph *g, FILE *out) {
  fprintf(out, "qnn graph %s: %d tensors, %d ops\n", g->name, (int)g->n_tensors, (int)g->n_ops);
  for (int i = 0; i < g->n_tensors; i++) dump_tensor(&g->tensors[i], out);
  for (int k = 0; k < g->n_ops; k++) {
    const eg_htp_qnn_op_node *op = &g->ops[k];
    fprintf(out, "  op %d %s %s (", k, op->name, eg_htp_qnn_op_name(op->type));
    for (int i = 0; i < op->n_inputs; i++)
      fprintf(out, "%s%s", i ? ", " : "", op->inputs[i] >= 0 ? g->tensors[op->inputs[i]].name : "-");
    fprintf(out, ") -> (%s)", g->tensors[op->outputs[0]].name);
    for (int i = 0; i < op->n_params; i++) dump_param(&op->params[i], out);
    fputc('\n', out);
  }
}
