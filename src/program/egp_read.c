/* egp_read.c — reading and validating a compiled program file (format: egp_format.h); the
 * public accessors of a model loaded from one are in api/program_info.c.
 *
 * Order: the header and section table (every offset and size against the file), STRINGS, GRAPH
 * (then eg_graph_verify), PLACEMENT (against the graph), NPU (each partition's record read by
 * its backend, which rebuilds its graph and checks its boundary, then what no backend can
 * know: static inputs stored, values needed outside handed back),
 * PROGRAM (steps and order against the placement and the graph's dependencies). Nothing is used
 * before it is checked; every count is bounded by the bytes left in its section before anything
 * is allocated for it. The file's bytes stay in one 64-byte aligned buffer that IR statics and
 * the backends' static bytes point into (read in place, never copied). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/io_role.h"
#include "ir/readers.h"
#include "ir/quant_rule.h"
#include "program/egp_format.h"
#include "target/targets.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/file.h"
#include "ops/verify.h"
#include "util/names.h"

static const char *const section_names[EG_EGP_N_SECTIONS + 1] = {
    "?", "STRINGS", "GRAPH", "PLACEMENT", "NPU", "PROGRAM", "STATIC"};

/* ---- a cursor over one section ---- */

typedef struct rd {
  const char *file;
  const char *sec;
  const unsigned char *base, *p, *end;
} rd;

static eg_status bad(const rd *c, eg_status st, const char *fmt, ...) EG_PRINTF(3, 4);
static eg_status bad(const rd *c, eg_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return eg_error(st, "%s: %s: %s", c->file, c->sec, msg);
}

static size_t left(const rd *c) { return (size_t)(c->end - c->p); }

static eg_status need(rd *c, size_t n, const char *what) {
  if (left(c) >= n) return EG_OK;
  return bad(c, EG_ERR_FORMAT, "%s at byte %zu (%zu bytes needed, %zu left): the section ends "
             "early", what, (size_t)(c->p - c->base), n, left(c));
}

static eg_status rd_u8(rd *c, const char *what, uint8_t *out) {
  EG_TRY(need(c, 1, what));
  *out = *c->p++;
  return EG_OK;
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

static eg_status rd_u32(rd *c, const char *what, uint32_t *out) {
  EG_TRY(need(c, 4, what));
  *out = le32(c->p);
  c->p += 4;
  return EG_OK;
}

static eg_status rd_i32(rd *c, const char *what, int32_t *out) {
  uint32_t u;
  EG_TRY(rd_u32(c, what, &u));
  *out = (int32_t)u;
  return EG_OK;
}

static eg_status rd_u64(rd *c, const char *what, uint64_t *out) {
  EG_TRY(need(c, 8, what));
  *out = le64(c->p);
  c->p += 8;
  return EG_OK;
}

static eg_status rd_i64(rd *c, const char *what, int64_t *out) {
  uint64_t u;
  EG_TRY(rd_u64(c, what, &u));
  *out = (int64_t)u;
  return EG_OK;
}

static eg_status rd_f32(rd *c, const char *what, float *out) {
  uint32_t u;
  EG_TRY(rd_u32(c, what, &u));
  memcpy(out, &u, 4);
  return EG_OK;
}

static eg_status rd_f64(rd *c, const char *what, double *out) {
  uint64_t u;
  EG_TRY(rd_u64(c, what, &u));
  memcpy(out, &u, 8);
  return EG_OK;
}

/* A u8 flag that must be 0 or 1. */
static eg_status rd_bool(rd *c, const char *what, bool *out) {
  uint8_t v;
  EG_TRY(rd_u8(c, what, &v));
  if (v > 1) return bad(c, EG_ERR_FORMAT, "%s (%u): must be 0 or 1", what, v);
  *out = v == 1;
  return EG_OK;
}

/* A count of records at least `min_each` bytes long, at most `max`. */
static eg_status rd_count(rd *c, const char *what, size_t min_each, uint32_t max, int32_t *out) {
  uint32_t n;
  EG_TRY(rd_u32(c, what, &n));
  if (n > max)
    return bad(c, EG_ERR_FORMAT, "%s (%u): more than the limit %u", what, n, max);
  if ((uint64_t)n * min_each > left(c))
    return bad(c, EG_ERR_FORMAT, "%s (%u): the %zu bytes left cannot hold that many (%zu bytes "
               "each at least)", what, n, left(c), min_each);
  *out = (int32_t)n;
  return EG_OK;
}

/* An id in [lo, hi). */
static eg_status rd_id(rd *c, const char *what, int32_t lo, int32_t hi, int32_t *out) {
  EG_TRY(rd_i32(c, what, out));
  if (*out < lo || *out >= hi)
    return bad(c, EG_ERR_FORMAT, "%s (%d): out of range [%d, %d)", what, *out, lo, hi);
  return EG_OK;
}

static eg_status end_of_section(rd *c) {
  if (left(c) == 0) return EG_OK;
  return bad(c, EG_ERR_FORMAT, "%zu bytes left over after the last record (section size %zu): "
             "every byte of a section is accounted for", left(c), (size_t)(c->end - c->base));
}

/* ---- the loader ---- */

typedef struct loader {
  const char *file;
  const unsigned char *data;
  size_t size;
  int32_t *input_pairs; /* the pair the file records for each input (GRAPH) */
  uint64_t sec_off[EG_EGP_N_SECTIONS + 1], sec_size[EG_EGP_N_SECTIONS + 1];
  int32_t n_strs;
  const char **strs;
  eg_egp *e;
  eg_graph *g;
  eg_program *p;
} loader;

static rd section(const loader *L, int kind) {
  const unsigned char *b = L->data + L->sec_off[kind];
  return (rd){.file = L->file, .sec = section_names[kind], .base = b, .p = b,
              .end = b + L->sec_size[kind]};
}

/* A string id: a string (or NULL when `optional` and STR_NONE). */
static eg_status rd_str(const loader *L, rd *c, const char *what, bool optional, const char **out) {
  uint32_t id;
  EG_TRY(rd_u32(c, what, &id));
  *out = NULL;
  if (optional && id == EG_EGP_STR_NONE) return EG_OK;
  if (id >= (uint32_t)L->n_strs)
    return bad(c, EG_ERR_FORMAT, "%s: string id (%u): out of range [0, %d)%s", what, id, L->n_strs,
               optional ? " or 0xFFFFFFFF (none)" : "");
  *out = L->strs[id];
  return EG_OK;
}

/* A (offset, nbytes) range of the STATIC section: a pointer to its first byte. */
static eg_status rd_static(const loader *L, rd *c, const char *what, size_t want,
                           const void **data) {
  uint64_t off, n, have = L->sec_size[EG_EGP_SECTION_STATIC];
  EG_TRY(rd_u64(c, what, &off));
  EG_TRY(rd_u64(c, what, &n));
  if (n != want)
    return bad(c, EG_ERR_FORMAT, "%s: nbytes (%llu): must be %zu, the tensor's size", what,
               (unsigned long long)n, want);
  if (off % EG_EGP_STATIC_ALIGN != 0 || off > have || n > have - off)
    return bad(c, EG_ERR_FORMAT, "%s: STATIC range (offset %llu, %llu bytes): must start at a "
               "multiple of %u and lie within the STATIC section (%llu bytes)", what,
               (unsigned long long)off, (unsigned long long)n, EG_EGP_STATIC_ALIGN,
               (unsigned long long)have);
  *data = L->data + L->sec_off[EG_EGP_SECTION_STATIC] + off;
  return EG_OK;
}

/* ---- header and section table ---- */

static eg_status read_header(loader *L) {
  rd c = {.file = L->file, .sec = "header", .base = L->data, .p = L->data,
          .end = L->data + L->size};
  if (L->size < 4 || memcmp(L->data, EG_EGP_MAGIC, 4) != 0)
    return bad(&c, EG_ERR_FORMAT, "magic (%zu bytes read): not \"" EG_EGP_MAGIC "\": not an "
               "edgegrad compiled program", L->size < 4 ? L->size : (size_t)4);
  if (L->size < EG_EGP_HEADER_SIZE)
    return bad(&c, EG_ERR_FORMAT, "file (%zu bytes): shorter than the %u-byte header: truncated",
               L->size, EG_EGP_HEADER_SIZE);
  uint32_t version = le32(L->data + 4), n_sections = le32(L->data + 16), flags = le32(L->data + 20);
  uint64_t file_size = le64(L->data + 8), reserved = le64(L->data + 24);
  if (version < EG_EGP_VERSION)
    return bad(&c, EG_ERR_UNSUPPORTED, "version (%u): written by an older edgegrad; this one "
               "reads version %u, which records how the NPU executor runs each partition's "
               "layout Transposes and Reshapes and which values stay NHWC between partitions: "
               "compile the "
               "graph again with this edgegrad", version, EG_EGP_VERSION);
  if (version > EG_EGP_VERSION)
    return bad(&c, EG_ERR_UNSUPPORTED, "version (%u): written by a newer edgegrad; this one "
               "reads version %u: compile the graph with this edgegrad", version,
               EG_EGP_VERSION);
  if (file_size != L->size)
    return bad(&c, EG_ERR_FORMAT, "file_size (%llu) but the file has %zu bytes: truncated or "
               "extended", (unsigned long long)file_size, L->size);
  if (n_sections != EG_EGP_N_SECTIONS || flags != 0 || reserved != 0)
    return bad(&c, EG_ERR_FORMAT, "n_sections %u, flags %u, reserved %llu: must be %u, 0, 0",
               n_sections, flags, (unsigned long long)reserved, EG_EGP_N_SECTIONS);
  const uint64_t table_end = EG_EGP_HEADER_SIZE + EG_EGP_N_SECTIONS * EG_EGP_SECTION_ENTRY_SIZE;
  c.sec = "section table";
  if (L->size < table_end)
    return bad(&c, EG_ERR_FORMAT, "file (%zu bytes): shorter than header and table (%llu bytes): "
               "truncated", L->size, (unsigned long long)table_end);
  bool seen[EG_EGP_N_SECTIONS + 1] = {false};
  for (unsigned i = 0; i < EG_EGP_N_SECTIONS; i++) {
    const unsigned char *e = L->data + EG_EGP_HEADER_SIZE + i * EG_EGP_SECTION_ENTRY_SIZE;
    uint32_t kind = le32(e), res = le32(e + 4);
    uint64_t off = le64(e + 8), size = le64(e + 16);
    if (kind < 1 || kind > EG_EGP_N_SECTIONS || seen[kind] || res != 0)
      return bad(&c, EG_ERR_FORMAT, "entry %u: kind %u (reserved %u): must be a section kind in "
                 "[1, %u] not listed before, reserved 0", i, kind, res, EG_EGP_N_SECTIONS);
    uint32_t align = kind == EG_EGP_SECTION_STATIC ? EG_EGP_STATIC_ALIGN : EG_EGP_SECTION_ALIGN;
    if (off < table_end || off % align != 0 || off > L->size || size > L->size - off)
      return bad(&c, EG_ERR_FORMAT, "%s (offset %llu, size %llu): must start at a multiple of %u "
                 "after the section table (byte %llu) and end within the file (%zu bytes)",
                 section_names[kind], (unsigned long long)off, (unsigned long long)size, align,
                 (unsigned long long)table_end, L->size);
    seen[kind] = true;
    L->sec_off[kind] = off;
    L->sec_size[kind] = size;
  }
  for (int a = 1; a <= (int)EG_EGP_N_SECTIONS; a++)
    for (int b = 1; b <= (int)EG_EGP_N_SECTIONS; b++)
      if (a != b && L->sec_size[a] && L->sec_size[b] && L->sec_off[a] <= L->sec_off[b] &&
          L->sec_off[b] < L->sec_off[a] + L->sec_size[a])
        return bad(&c, EG_ERR_FORMAT, "%s (offset %llu, size %llu) overlaps %s (offset %llu): "
                   "sections are disjoint", section_names[a], (unsigned long long)L->sec_off[a],
                   (unsigned long long)L->sec_size[a], section_names[b],
                   (unsigned long long)L->sec_off[b]);
  /* every byte outside the header, the table and the (non-empty) sections is zero padding */
  uint64_t at = table_end;
  bool done[EG_EGP_N_SECTIONS + 1] = {false};
  for (;;) {
    int next = 0;
    for (int k = 1; k <= (int)EG_EGP_N_SECTIONS; k++)
      if (!done[k] && L->sec_size[k] && (!next || L->sec_off[k] < L->sec_off[next])) next = k;
    uint64_t end = next ? L->sec_off[next] : L->size;
    for (uint64_t i = at; i < end; i++)
      if (L->data[i] != 0)
        return bad(&c, EG_ERR_FORMAT, "byte %llu (0x%02x) outside every section: padding is zero",
                   (unsigned long long)i, L->data[i]);
    if (!next) return EG_OK;
    done[next] = true;
    at = L->sec_off[next] + L->sec_size[next];
  }
}

/* ---- STRINGS ---- */

static eg_status read_strings(loader *L) {
  rd c = section(L, EG_EGP_SECTION_STRINGS);
  EG_TRY(rd_count(&c, "count", 4, INT32_MAX - 1, &L->n_strs));
  L->strs = eg_arena_array(L->g->arena, (size_t)L->n_strs + 1, sizeof(char *));
  if (!L->strs) return bad(&c, EG_ERR_NOMEM, "out of memory for %d strings", L->n_strs);
  for (int32_t i = 0; i < L->n_strs; i++) {
    uint32_t len;
    EG_TRY(rd_u32(&c, "string length", &len));
    if (len > EG_EGP_MAX_STRING || len > left(&c))
      return bad(&c, EG_ERR_FORMAT, "string %d: length (%u): more than %s", i, len,
                 len > EG_EGP_MAX_STRING ? "65535" : "the bytes left in the section");
    if (memchr(c.p, 0, len))
      return bad(&c, EG_ERR_FORMAT, "string %d: a NUL byte inside: strings hold none", i);
    char *s = eg_arena_alloc(L->g->arena, (size_t)len + 1);
    if (!s) return bad(&c, EG_ERR_NOMEM, "out of memory");
    memcpy(s, c.p, len);
    c.p += len;
    L->strs[i] = s;
  }
  return end_of_section(&c);
}

/* ---- GRAPH ---- */

/* A quantization record (egp_format.h) for tensor value v; "what" names it in messages. */
static eg_status read_value_quant(loader *L, rd *c, const char *w, eg_value *v) {
  bool present;
  EG_TRY(rd_bool(c, w, &present));
  if (!present) return EG_OK;
  uint8_t dtype;
  int32_t axis, n;
  eg_quant q = {0};
  EG_TRY(rd_u8(c, w, &dtype));
  EG_TRY(rd_i32(c, w, &axis));
  EG_TRY(rd_count(c, w, 16, INT32_MAX - 1, &n));
  EG_TRY(rd_i64(c, w, &q.qmin));
  EG_TRY(rd_i64(c, w, &q.qmax));
  int64_t lo, hi; /* the rules are ir/quant_rule.h's, the verifier's on quantize nodes */
  if (dtype >= EG_DTYPE_COUNT || !eg_quant_storage_range((eg_dtype)dtype, &lo, &hi))
    return bad(c, EG_ERR_FORMAT, "%s: quant dtype (%u): must be int8, uint8 or int32", w, dtype);
  q.dtype = (eg_dtype)dtype;
  if (q.qmin < lo || q.qmax > hi || q.qmin > q.qmax)
    return bad(c, EG_ERR_FORMAT, "%s: quant range [%lld, %lld]: must lie in [%lld, %lld], min <= "
               "max", w, (long long)q.qmin, (long long)q.qmax, (long long)lo, (long long)hi);
  const int64_t want = axis < 0 ? 1 : axis < v->rank ? v->shape[axis] : -1;
  if (axis < -1 || want < 0 || n != want)
    return bad(c, EG_ERR_FORMAT, "%s: quant axis %d with %d scales: axis must be -1 (one scale) "
               "or a dim < rank %d with shape[axis] scales", w, axis, n, v->rank);
  q.axis = axis;
  q.n = n;
  double *scale = eg_arena_array(L->g->arena, (size_t)n + 1, sizeof(double));
  int64_t *zp = eg_arena_array(L->g->arena, (size_t)n + 1, sizeof(int64_t));
  eg_quant *copy = eg_arena_alloc(L->g->arena, sizeof *copy);
  if (!scale || !zp || !copy) return bad(c, EG_ERR_NOMEM, "%s: out of memory", w);
  for (int32_t k = 0; k < n; k++) {
    uint64_t bits;
    EG_TRY(rd_u64(c, w, &bits));
    memcpy(&scale[k], &bits, 8);
    if (!eg_quant_scale_ok(scale[k]))
      return bad(c, EG_ERR_FORMAT, "%s: quant scale[%d] (%g): " EG_QUANT_SCALE_RULE, w, k,
                 scale[k]);
  }
  for (int32_t k = 0; k < n; k++) {
    EG_TRY(rd_i64(c, w, &zp[k]));
    if (zp[k] < q.qmin || zp[k] > q.qmax)
      return bad(c, EG_ERR_FORMAT, "%s: quant zero_point[%d] (%lld): must lie in [%lld, %lld]",
                 w, k, (long long)zp[k], (long long)q.qmin, (long long)q.qmax);
  }
  q.scale = scale;
  q.zero_point = zp;
  *copy = q;
  v->quant = copy;
  return EG_OK;
}

static eg_status read_value(loader *L, rd *c, int32_t i) {
  eg_value *v = &L->g->values[i];
  char w[64];
  snprintf(w, sizeof w, "values[%d]", i);
  uint8_t kind, dtype, rank;
  EG_TRY(rd_u8(c, w, &kind));
  if (kind > 1)
    return bad(c, EG_ERR_FORMAT, "%s: kind (%u): must be 0 (tensor) or 1 (tuple)", w, kind);
  if (kind == 1) {
    v->kind = EG_VALUE_TUPLE;
    EG_TRY(rd_count(c, w, 4, INT32_MAX - 1, &v->n_elems));
    v->elems = eg_arena_array(L->g->arena, (size_t)v->n_elems + 1, sizeof(int32_t));
    if (!v->elems) return bad(c, EG_ERR_NOMEM, "%s: out of memory", w);
    for (int32_t e = 0; e < v->n_elems; e++)
      EG_TRY(rd_id(c, w, -1, L->g->n_values, &v->elems[e]));
    return EG_OK;
  }
  v->kind = EG_VALUE_TENSOR;
  EG_TRY(rd_u8(c, w, &dtype));
  EG_TRY(rd_u8(c, w, &rank));
  if (dtype >= EG_DTYPE_COUNT || rank > EG_MAX_RANK)
    return bad(c, EG_ERR_FORMAT, "%s: dtype %u, rank %u: must be a dtype code < %d and a rank <= "
               "%d", w, dtype, rank, EG_DTYPE_COUNT, EG_MAX_RANK);
  v->dtype = (eg_dtype)dtype;
  v->rank = rank;
  for (int d = 0; d < rank; d++) EG_TRY(rd_i64(c, w, &v->shape[d]));
  if (eg_shape_numel(v->shape, rank, EG_MAX_NUMEL) < 0) {
    char dims[200];
    return bad(c, EG_ERR_FORMAT, "%s: shape %s: every dim must be >= 0 and the product of the "
               "non-zero dims at most 2^40", w, eg_fmt_ints(dims, sizeof dims, v->shape, rank));
  }
  bool nhwc;
  EG_TRY(rd_bool(c, w, &nhwc));
  v->axes = nhwc ? EG_AXES_NHWC : EG_AXES_TRACED;
  EG_TRY(rd_bool(c, w, &v->npu_int32));
  if (v->npu_int32 && v->dtype != EG_DTYPE_INT64)
    return bad(c, EG_ERR_FORMAT, "%s: npu_int32 on a %s value: only int64 values are narrowed",
               w, eg_dtype_name(v->dtype));
  return read_value_quant(L, c, w, v);
}

/* A repeated name in a list of `what` (names are unique): one line naming both entries. */
static eg_status check_unique(const rd *c, const char *const *names, size_t stride, int32_t n,
                              const char *what) {
  int32_t later = 0, first = 0;
  int repeat = eg_names_find_repeat(names, stride, n, &later, &first);
  if (repeat < 0) return bad(c, EG_ERR_NOMEM, "%s: out of memory", what);
  if (repeat)
    return bad(c, EG_ERR_FORMAT, "%s[%d]: name '%s' repeats %s[%d]: names in %s are unique",
               what, later, eg_names_at(names, stride, later), what, first, what);
  return EG_OK;
}

/* The role and pair of entry `w`: the role a known code (its rules, and the pair's range:
 * eg_graph_check_roles once the graph is read), the pair kept in *pair. */
static eg_status read_role(rd *c, const char *w, eg_named *e, int32_t *pair) {
  uint8_t role;
  EG_TRY(rd_u8(c, w, &role));
  if (role > EG_ROLE_OUTPUT)
    return bad(c, EG_ERR_FORMAT, "%s: role code (%u): unknown (0 data to %d output)", w, role,
               EG_ROLE_OUTPUT);
  e->role = (eg_io_role)role;
  return rd_i32(c, w, pair);
}

static eg_status read_named(loader *L, rd *c, const char *list_name, eg_named **out,
                            int32_t *n_out) {
  int32_t n;
  const bool inputs = strcmp(list_name, "inputs") == 0;
  EG_TRY(rd_count(c, list_name, inputs ? 18 : 13, INT32_MAX - 1, &n));
  eg_named *list = eg_arena_array(L->g->arena, (size_t)n + 1, sizeof *list);
  if (!list) return bad(c, EG_ERR_NOMEM, "%s: out of memory", list_name);
  if (inputs && !(L->input_pairs = eg_arena_array(L->g->arena, (size_t)n + 1, sizeof(int32_t))))
    return bad(c, EG_ERR_NOMEM, "%s: out of memory", list_name);
  for (int32_t i = 0; i < n; i++) {
    char w[64];
    snprintf(w, sizeof w, "%s[%d]", list_name, i);
    EG_TRY(rd_str(L, c, w, false, &list[i].name));
    EG_TRY(rd_id(c, w, 0, L->g->n_values, &list[i].value));
    EG_TRY(read_role(c, w, &list[i], inputs ? &L->input_pairs[i] : &list[i].pair));
    if (!inputs) continue;
    EG_TRY(rd_str(L, c, w, true, &list[i].state_dict));
    uint8_t kind;
    EG_TRY(rd_u8(c, w, &kind));
    if (kind > EG_RANDOM_BERNOULLI)
      return bad(c, EG_ERR_FORMAT, "%s: random kind %u unknown (0 none, 1 bernoulli)", w, kind);
    list[i].random = (eg_random_kind)kind;
    if (kind) EG_TRY(rd_f64(c, w, &list[i].random_p)); /* its range: eg_graph_verify */
  }
  EG_TRY(check_unique(c, &list[0].name, sizeof *list, n, list_name));
  *out = list;
  *n_out = n;
  return EG_OK;
}

static eg_status read_statics(loader *L, rd *c) {
  eg_graph *g = L->g;
  EG_TRY(rd_count(c, "n_statics", 24, INT32_MAX - 1, &g->n_statics));
  g->statics = eg_arena_array(g->arena, (size_t)g->n_statics + 1, sizeof(eg_static));
  if (!g->statics) return bad(c, EG_ERR_NOMEM, "statics: out of memory");
  for (int32_t i = 0; i < g->n_statics; i++) {
    eg_static *s = &g->statics[i];
    char w[64];
    snprintf(w, sizeof w, "statics[%d]", i);
    EG_TRY(rd_str(L, c, w, false, &s->name));
    EG_TRY(rd_id(c, w, 0, g->n_values, &s->value));
    const eg_value *v = &g->values[s->value];
    if (v->kind != EG_VALUE_TENSOR)
      return bad(c, EG_ERR_FORMAT, "static %s: value %d is a tuple: statics are tensors",
                 s->name, s->value);
    s->nbytes = eg_value_nbytes(v);
    if (c->p + 16 <= c->end && le64(c->p) == EG_EGP_NO_BYTES) { /* not stored: checked later */
      uint64_t unused, n;
      EG_TRY(rd_u64(c, w, &unused));
      EG_TRY(rd_u64(c, w, &n));
      if (n != s->nbytes)
        return bad(c, EG_ERR_FORMAT, "%s: nbytes (%llu): must be %zu, the tensor's size", w,
                   (unsigned long long)n, s->nbytes);
      s->data = NULL;
      continue;
    }
    EG_TRY(rd_static(L, c, w, s->nbytes, &s->data));
  }
  return check_unique(c, &g->statics[0].name, sizeof *g->statics, g->n_statics, "statics");
}

static eg_status read_arg(loader *L, rd *c, const char *w, int depth, eg_arg *a) {
  if (depth > EG_EGP_MAX_ARG_DEPTH)
    return bad(c, EG_ERR_FORMAT, "%s: lists nested deeper than %d", w, EG_EGP_MAX_ARG_DEPTH);
  uint8_t kind, dtype;
  EG_TRY(rd_u8(c, w, &kind));
  if (kind > EG_ARG_STR)
    return bad(c, EG_ERR_FORMAT, "%s: argument kind (%u): must be in [0, %d]", w, kind,
               EG_ARG_STR);
  a->kind = (eg_arg_kind)kind;
  switch (a->kind) {
  case EG_ARG_NONE: return EG_OK;
  case EG_ARG_INT: return rd_i64(c, w, &a->i);
  case EG_ARG_FLOAT: {
    uint64_t bits;
    EG_TRY(rd_u64(c, w, &bits));
    memcpy(&a->f, &bits, 8);
    return EG_OK;
  }
  case EG_ARG_BOOL: return rd_bool(c, w, &a->b);
  case EG_ARG_VALUE: return rd_id(c, w, 0, L->g->n_values, &a->value);
  case EG_ARG_LIST:
    EG_TRY(rd_count(c, w, 1, INT32_MAX - 1, &a->list.n));
    a->list.items = eg_arena_array(L->g->arena, (size_t)a->list.n + 1, sizeof(eg_arg));
    if (!a->list.items) return bad(c, EG_ERR_NOMEM, "%s: out of memory", w);
    for (int32_t i = 0; i < a->list.n; i++)
      EG_TRY(read_arg(L, c, w, depth + 1, &a->list.items[i]));
    return EG_OK;
  case EG_ARG_DTYPE:
    EG_TRY(rd_u8(c, w, &dtype));
    if (dtype >= EG_DTYPE_COUNT)
      return bad(c, EG_ERR_FORMAT, "%s: dtype (%u): must be a dtype code < %d", w, dtype,
                 EG_DTYPE_COUNT);
    a->dtype = (eg_dtype)dtype;
    return EG_OK;
  default: return rd_str(L, c, w, false, &a->str); /* LAYOUT, DEVICE, MEMORY_FORMAT, STR */
  }
}

static eg_status read_node(loader *L, rd *c, int32_t i) {
  eg_node *n = &L->g->nodes[i];
  char w[160];
  const char *target;
  snprintf(w, sizeof w, "nodes[%d]", i);
  EG_TRY(rd_str(L, c, w, false, &n->name));
  snprintf(w, sizeof w, "node %s", n->name);
  EG_TRY(rd_str(L, c, w, false, &target));
  n->op = eg_op_from_target(target);
  if (n->op == EG_OP_COUNT)
    return bad(c, EG_ERR_UNSUPPORTED, "%s: op %s unknown: edgegrad has no kernel for it", w,
               target);
  EG_TRY(rd_id(c, w, -1, L->g->n_values, &n->output));
  EG_TRY(rd_str(L, c, w, true, &n->source));
  EG_TRY(rd_count(c, w, 1, INT32_MAX - 1, &n->n_args));
  n->args = eg_arena_array(L->g->arena, (size_t)n->n_args + 1, sizeof(eg_arg));
  if (!n->args) return bad(c, EG_ERR_NOMEM, "%s: out of memory", w);
  for (int32_t a = 0; a < n->n_args; a++) EG_TRY(read_arg(L, c, w, 0, &n->args[a]));
  EG_TRY(rd_count(c, w, 5, INT32_MAX - 1, &n->n_kwargs));
  n->kwarg_names = eg_arena_array(L->g->arena, (size_t)n->n_kwargs + 1, sizeof(char *));
  n->kwargs = eg_arena_array(L->g->arena, (size_t)n->n_kwargs + 1, sizeof(eg_arg));
  if (!n->kwarg_names || !n->kwargs) return bad(c, EG_ERR_NOMEM, "%s: out of memory", w);
  for (int32_t a = 0; a < n->n_kwargs; a++) {
    EG_TRY(rd_str(L, c, w, false, &n->kwarg_names[a]));
    EG_TRY(read_arg(L, c, w, 0, &n->kwargs[a]));
  }
  return EG_OK;
}

static eg_status read_graph(loader *L) {
  rd c = section(L, EG_EGP_SECTION_GRAPH);
  eg_graph *g = L->g;
  EG_TRY(rd_count(&c, "n_values", 2, INT32_MAX - 1, &g->n_values));
  g->values = eg_arena_array(g->arena, (size_t)g->n_values + 1, sizeof(eg_value));
  if (!g->values) return bad(&c, EG_ERR_NOMEM, "out of memory for %d values", g->n_values);
  for (int32_t i = 0; i < g->n_values; i++) EG_TRY(read_value(L, &c, i));
  for (int32_t i = 0; i < g->n_values; i++) {
    const eg_value *v = &g->values[i];
    for (int32_t e = 0; v->kind == EG_VALUE_TUPLE && e < v->n_elems; e++)
      if (v->elems[e] >= 0 && g->values[v->elems[e]].kind != EG_VALUE_TENSOR)
        return bad(&c, EG_ERR_FORMAT, "values[%d]: element %d is tuple %d: tuples hold tensors",
                   i, e, v->elems[e]);
  }
  EG_TRY(read_named(L, &c, "inputs", &g->inputs, &g->n_inputs));
  EG_TRY(read_named(L, &c, "outputs", &g->outputs, &g->n_outputs));
  EG_TRY(read_statics(L, &c));
  EG_TRY(rd_count(&c, "n_nodes", 20, INT32_MAX - 1, &g->n_nodes));
  g->nodes = eg_arena_array(g->arena, (size_t)g->n_nodes + 1, sizeof(eg_node));
  if (!g->nodes) return bad(&c, EG_ERR_NOMEM, "out of memory for %d nodes", g->n_nodes);
  for (int32_t i = 0; i < g->n_nodes; i++) EG_TRY(read_node(L, &c, i));
  EG_TRY(check_unique(&c, &g->nodes[0].name, sizeof *g->nodes, g->n_nodes, "nodes"));
  EG_TRY(end_of_section(&c));
  eg_status s = eg_graph_verify(g);
  if (s == EG_OK) s = eg_graph_check_roles(g);
  if (s != EG_OK) return eg_error_prefix(s, "%s: GRAPH", L->file);
  for (int32_t i = 0; i < g->n_inputs; i++)
    if (L->input_pairs[i] != g->inputs[i].pair)
      return bad(&c, EG_ERR_FORMAT, "inputs[%d] \"%s\": role \"%s\" with pair %d: must be %d, "
                 "the output that names it (-1: none)", (int)i, g->inputs[i].name,
                 eg_io_role_name(g->inputs[i].role), (int)L->input_pairs[i],
                 (int)g->inputs[i].pair);
  return EG_OK;
}

/* ---- PLACEMENT ---- */

static bool in_partition(const eg_partitioning *pt, int32_t node, int32_t k) {
  return pt->nodes[node].npu && pt->nodes[node].partition == k;
}

static eg_status read_placement(loader *L) {
  rd c = section(L, EG_EGP_SECTION_PLACEMENT);
  eg_partitioning *pt = &L->p->parts;
  const eg_graph *g = L->g;
  pt->arena = eg_arena_create();
  if (!pt->arena) return bad(&c, EG_ERR_NOMEM, "out of memory");
  int32_t n_nodes, n_npu = 0, listed = 0;
  EG_TRY(rd_count(&c, "n_nodes", 9, INT32_MAX - 1, &n_nodes));
  if (n_nodes != g->n_nodes)
    return bad(&c, EG_ERR_FORMAT, "n_nodes (%d): must equal the graph's %d", n_nodes, g->n_nodes);
  pt->n_nodes = n_nodes;
  pt->nodes = eg_arena_array(pt->arena, (size_t)n_nodes + 1, sizeof(eg_node_placement));
  if (!pt->nodes) return bad(&c, EG_ERR_NOMEM, "out of memory");
  int32_t *partition = calloc((size_t)n_nodes + 1, sizeof(int32_t));
  if (!partition) return bad(&c, EG_ERR_NOMEM, "out of memory");
  eg_status s = EG_OK;
  for (int32_t i = 0; s == EG_OK && i < n_nodes; i++) {
    eg_node_placement *np = &pt->nodes[i];
    char w[200];
    snprintf(w, sizeof w, "node %s", g->nodes[i].name);
    s = rd_bool(&c, w, &np->npu);
    if (s == EG_OK) s = rd_i32(&c, w, &partition[i]);
    if (s == EG_OK) s = rd_str(L, &c, w, true, &np->reason);
    np->partition = partition[i];
    if (s == EG_OK && np->npu && (np->partition < 0 || np->reason))
      s = bad(&c, EG_ERR_FORMAT, "%s: NPU placement with partition %d%s: an NPU node has a "
              "partition and no reason", w, np->partition, np->reason ? " and a reason" : "");
    if (s == EG_OK && !np->npu && (np->partition != -1 || !np->reason || !np->reason[0]))
      s = bad(&c, EG_ERR_FORMAT, "%s: CPU placement with partition %d%s: a CPU node has "
              "partition -1 and a reason", w, np->partition, np->reason ? "" : " and no reason");
    n_npu += np->npu;
  }
  free(partition);
  EG_TRY(s);
  EG_TRY(rd_count(&c, "n_partitions", 8, INT32_MAX - 1, &pt->n_partitions));
  pt->partitions = eg_arena_array(pt->arena, (size_t)pt->n_partitions + 1, sizeof(eg_partition));
  if (!pt->partitions) return bad(&c, EG_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < n_nodes; i++)
    if (pt->nodes[i].npu && pt->nodes[i].partition >= pt->n_partitions)
      return bad(&c, EG_ERR_FORMAT, "node %s: partition (%d): out of range [0, %d)",
                 g->nodes[i].name, pt->nodes[i].partition, pt->n_partitions);
  for (int32_t k = 0; k < pt->n_partitions; k++) {
    eg_partition *part = &pt->partitions[k];
    char w[64];
    snprintf(w, sizeof w, "partition %d", k);
    EG_TRY(rd_count(&c, w, 4, INT32_MAX - 1, &part->n_nodes));
    if (part->n_nodes == 0)
      return bad(&c, EG_ERR_FORMAT, "%s: no nodes: partitions are non-empty", w);
    part->nodes = eg_arena_array(pt->arena, (size_t)part->n_nodes, sizeof(int32_t));
    if (!part->nodes) return bad(&c, EG_ERR_NOMEM, "out of memory");
    for (int32_t j = 0; j < part->n_nodes; j++) {
      EG_TRY(rd_id(&c, w, 0, n_nodes, &part->nodes[j]));
      int32_t node = part->nodes[j];
      if ((j > 0 && node <= part->nodes[j - 1]) || !in_partition(pt, node, k))
        return bad(&c, EG_ERR_FORMAT, "%s: node %d (%s, placed %s %d): a partition lists its "
                   "own NPU nodes, ascending", w, node, g->nodes[node].name,
                   pt->nodes[node].npu ? "in partition" : "on the CPU", pt->nodes[node].partition);
    }
    listed += part->n_nodes;
  }
  if (listed != n_npu)
    return bad(&c, EG_ERR_FORMAT, "partitions list %d nodes but %d are placed on the NPU: every "
               "NPU node is in its partition's list", listed, n_npu);
  for (int32_t i = 0; i < n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_getitem || n->n_args < 1 || n->args[0].kind != EG_ARG_VALUE) continue;
    const eg_value *t = &g->values[n->args[0].value];
    if (t->role != EG_ROLE_NODE) continue;
    const eg_node_placement *a = &pt->nodes[i], *b = &pt->nodes[t->def];
    if (a->npu != b->npu || a->partition != b->partition)
      return bad(&c, EG_ERR_FORMAT, "node %s (partition %d): its producer %s is in partition %d: "
                 "a getitem takes its producer's placement", n->name, a->partition,
                 g->nodes[t->def].name, b->partition);
  }
  EG_TRY(rd_count(&c, "n_warnings", 4, INT32_MAX - 1, &pt->n_warnings));
  pt->warnings = eg_arena_array(pt->arena, (size_t)pt->n_warnings + 1, sizeof(char *));
  if (!pt->warnings) return bad(&c, EG_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < pt->n_warnings; i++)
    EG_TRY(rd_str(L, &c, "warning", false, &pt->warnings[i]));
  /* a static stored without bytes must be one the CPU side never reads */
  for (int32_t i = 0; i < g->n_statics; i++)
    if (!g->statics[i].data && g->statics[i].nbytes &&
        eg_program_cpu_reads(L->p, g->statics[i].value))
      return bad(&c, EG_ERR_FORMAT, "static %s (%zu bytes): stored without its bytes but read on "
                 "the CPU (by a CPU node or as a graph output): only statics that NPU "
                 "partitions alone read may omit them", g->statics[i].name,
                 g->statics[i].nbytes);
  return end_of_section(&c);
}

/* ---- NPU ---- */

/* A backend's record (backends/serial.h): a cursor over its bytes alone. */
struct eg_egp_source {
  const loader *L;
  rd c;
};

eg_status eg_source_u8(eg_egp_source *s, const char *what, uint8_t *out) {
  return rd_u8(&s->c, what, out);
}
eg_status eg_source_bool(eg_egp_source *s, const char *what, bool *out) {
  return rd_bool(&s->c, what, out);
}
eg_status eg_source_u32(eg_egp_source *s, const char *what, uint32_t *out) {
  return rd_u32(&s->c, what, out);
}
eg_status eg_source_i32(eg_egp_source *s, const char *what, int32_t *out) {
  return rd_i32(&s->c, what, out);
}
eg_status eg_source_u64(eg_egp_source *s, const char *what, uint64_t *out) {
  return rd_u64(&s->c, what, out);
}
eg_status eg_source_i64(eg_egp_source *s, const char *what, int64_t *out) {
  return rd_i64(&s->c, what, out);
}
eg_status eg_source_f32(eg_egp_source *s, const char *what, float *out) {
  return rd_f32(&s->c, what, out);
}
eg_status eg_source_str(eg_egp_source *s, const char *what, bool optional, const char **out) {
  return rd_str(s->L, &s->c, what, optional, out);
}
eg_status eg_source_count(eg_egp_source *s, const char *what, size_t min_each, uint32_t max,
                          int32_t *out) {
  return rd_count(&s->c, what, min_each, max, out);
}
eg_status eg_source_id(eg_egp_source *s, const char *what, int32_t lo, int32_t hi, int32_t *out) {
  return rd_id(&s->c, what, lo, hi, out);
}
eg_status eg_source_static(eg_egp_source *s, const char *what, size_t nbytes, const void **data) {
  return rd_static(s->L, &s->c, what, nbytes, data);
}

eg_status eg_source_error(eg_egp_source *s, eg_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return bad(&s->c, st, "%s", msg);
}

eg_status eg_source_prefix(eg_egp_source *s, eg_status st, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return eg_error_prefix(st, "%s: %s: %s", s->c.file, s->c.sec, msg);
}

/* Partition k's record: the backend's name and its bytes, read by that backend. */
static eg_status read_lowered(loader *L, rd *c, int32_t k, eg_lowered *out) {
  char w[64];
  const char *name;
  uint64_t n;
  snprintf(w, sizeof w, "partition %d", k);
  EG_TRY(rd_str(L, c, w, false, &name));
  const eg_backend_rt *b = eg_backend_rt_named(name);
  if (!b)
    return bad(c, EG_ERR_UNSUPPORTED, "%s: backend %s unknown to this edgegrad: a program runs "
               "on a build that has its backends", w, name);
  EG_TRY(rd_u64(c, w, &n));
  if (n > left(c))
    return bad(c, EG_ERR_FORMAT, "%s: record of %llu bytes: more than the %zu bytes left", w,
               (unsigned long long)n, left(c));
  eg_egp_source src = {L, *c};
  src.c.end = c->p + n;
  c->p += n;
  EG_TRY(b->read(&src, L->g, &L->p->parts, k, out));
  if (left(&src.c) != 0)
    return bad(&src.c, EG_ERR_FORMAT, "%s (backend %s): %zu bytes of its record left over: "
               "every byte is accounted for", w, name, left(&src.c));
  snprintf(w, sizeof w, "partition %d: held", k);
  for (int32_t i = 0; i < out->n_inputs; i++) EG_TRY(rd_bool(c, w, &out->inputs[i].held));
  for (int32_t i = 0; i < out->n_outputs; i++) EG_TRY(rd_bool(c, w, &out->outputs[i].held));
  return EG_OK;
}

/* Every boundary's `held` (backends/lowered.h): only on an NHWC boundary of a value the
 * runtime may hold NHWC between partitions (eg_nhwc_between_partitions), and alike on every
 * boundary of the value. */
static eg_status check_held(loader *L, rd *c) {
  const eg_program *p = L->p;
  bool *may = NULL;
  unsigned char *seen = calloc((size_t)L->g->n_values + 1, 1); /* 0 none yet, 1 no, 2 held */
  eg_status s = seen ? eg_nhwc_between_partitions(L->g, &p->parts, &may)
                     : bad(c, EG_ERR_NOMEM, "out of memory");
  for (int32_t k = 0; s == EG_OK && k < p->parts.n_partitions; k++) {
    const eg_lowered *lp = &p->lowered[k];
    for (int32_t i = 0; s == EG_OK && i < lp->n_inputs + lp->n_outputs; i++) {
      const bool in = i < lp->n_inputs;
      const eg_boundary *b = in ? &lp->inputs[i] : &lp->outputs[i - lp->n_inputs];
      const unsigned char want = b->held ? 2 : 1;
      if (b->held && (!b->nhwc || !may[b->value]))
        s = bad(c, EG_ERR_FORMAT, "partition %d: %s[%d]: value %s held NHWC between partitions: "
                "only a float32 NHWC value defined on the NPU that no CPU node or graph output "
                "reads is", k, in ? "inputs" : "outputs", in ? i : i - lp->n_inputs,
                eg_value_label(L->g, b->value));
      else if (seen[b->value] && seen[b->value] != want)
        s = bad(c, EG_ERR_FORMAT, "partition %d: %s[%d]: value %s held NHWC on one boundary and "
                "not on another: the runtime holds a value one way", k, in ? "inputs" : "outputs",
                in ? i : i - lp->n_inputs, eg_value_label(L->g, b->value));
      seen[b->value] = want;
    }
  }
  free(may);
  free(seen);
  return s;
}

/* A value node `node` of partition k defines (its output, or an element of its tuple) that is
 * read outside the partition but is none of its outputs (has_out). */
static eg_status check_handed_back(rd *c, const eg_graph *g, const eg_readers *readers,
                                   const bool *has_out, int32_t k, int32_t node, int32_t value) {
  if (value < 0) return EG_OK;
  const eg_value *x = &g->values[value];
  if (x->kind == EG_VALUE_TENSOR && x->role == EG_ROLE_NODE && x->def == node &&
      eg_readers_outside(readers, value, k) && !has_out[value])
    return bad(c, EG_ERR_FORMAT, "partition %d: value %s (of node %s) is needed outside but is no "
               "output: the partition must hand it back", k, eg_value_label(g, value),
               g->nodes[node].name);
  return EG_OK;
}

/* What a backend's read() cannot know about partition k's boundary: a static fed to it as an
 * input has its bytes stored, and every value its nodes define that is read outside it is
 * handed back. `readers`: of the whole placement; `has_out`: per value id, all false (and left
 * so). */
static eg_status check_boundary(loader *L, rd *c, int32_t k, const eg_readers *readers,
                                bool *has_out) {
  const eg_graph *g = L->g;
  const eg_lowered *lp = &L->p->lowered[k];
  for (int32_t i = 0; i < lp->n_inputs; i++) {
    const eg_value *v = &g->values[lp->inputs[i].value];
    if (v->role == EG_ROLE_STATIC && !g->statics[v->def].data && g->statics[v->def].nbytes)
      return bad(c, EG_ERR_FORMAT, "partition %d: inputs[%d]: static %s (%zu bytes): stored "
                 "without its bytes but fed to the partition as an input: a static a partition "
                 "takes as an input is fed from its stored bytes", k, i, g->statics[v->def].name,
                 g->statics[v->def].nbytes);
  }
  for (int32_t i = 0; i < lp->n_outputs; i++) has_out[lp->outputs[i].value] = true;
  eg_status s = EG_OK;
  const eg_partition *part = &L->p->parts.partitions[k];
  for (int32_t j = 0; s == EG_OK && j < part->n_nodes; j++) {
    const int32_t node = part->nodes[j], out = g->nodes[node].output;
    s = check_handed_back(c, g, readers, has_out, k, node, out);
    const eg_value *t = out >= 0 ? &g->values[out] : NULL;
    for (int32_t e = 0; s == EG_OK && t && t->kind == EG_VALUE_TUPLE && e < t->n_elems; e++)
      s = check_handed_back(c, g, readers, has_out, k, node, t->elems[e]);
  }
  for (int32_t i = 0; i < lp->n_outputs; i++) has_out[lp->outputs[i].value] = false;
  return s;
}

static eg_status read_npu(loader *L) {
  rd c = section(L, EG_EGP_SECTION_NPU);
  eg_program *p = L->p;
  int32_t n;
  EG_TRY(rd_count(&c, "n_partitions", 12, INT32_MAX - 1, &n));
  if (n != p->parts.n_partitions)
    return bad(&c, EG_ERR_FORMAT, "n_partitions (%d): must equal PLACEMENT's %d", n,
               p->parts.n_partitions);
  p->lowered = calloc((size_t)n + 1, sizeof(eg_lowered));
  if (!p->lowered) return bad(&c, EG_ERR_NOMEM, "out of memory");
  for (int32_t k = 0; k < n; k++) EG_TRY(read_lowered(L, &c, k, &p->lowered[k]));
  EG_TRY(end_of_section(&c));
  eg_readers readers = {0};
  bool *has_out = calloc((size_t)L->g->n_values + 1, sizeof(bool));
  eg_status s = has_out ? eg_readers_compute(L->g, &p->parts, &readers)
                        : bad(&c, EG_ERR_NOMEM, "out of memory");
  for (int32_t k = 0; s == EG_OK && k < n; k++) s = check_boundary(L, &c, k, &readers, has_out);
  if (s == EG_OK) s = check_held(L, &c);
  eg_readers_free(&readers);
  free(has_out);
  return s;
}

/* ---- PROGRAM ---- */

/* Every value argument defined by a node ran earlier: pos[def] < pos[at]. */
static bool args_before(const eg_graph *g, const eg_arg *a, const int32_t *pos, int32_t at,
                        int32_t *bad_value) {
  if (a->kind == EG_ARG_LIST) {
    for (int32_t i = 0; i < a->list.n; i++)
      if (!args_before(g, &a->list.items[i], pos, at, bad_value)) return false;
    return true;
  }
  if (a->kind != EG_ARG_VALUE) return true;
  const eg_value *v = &g->values[a->value];
  if (v->role != EG_ROLE_NODE || pos[v->def] < pos[at]) return true;
  *bad_value = a->value;
  return false;
}

static eg_status check_order(loader *L, rd *c, int32_t *pos) {
  const eg_program *p = L->p;
  const eg_graph *g = L->g;
  int32_t at = 0;
  for (int32_t k = 0; k < p->n_steps; k++) {
    const eg_program_step *st = &p->steps[k];
    int32_t n = st->partition >= 0 ? p->parts.partitions[st->partition].n_nodes : 1;
    for (int32_t j = 0; j < n; j++, at++) {
      int32_t want = st->partition >= 0 ? p->parts.partitions[st->partition].nodes[j] : st->node;
      if (p->order[at] != want)
        return bad(c, EG_ERR_FORMAT, "order[%d] (%d): must be %d: the order is the steps with "
                   "each partition expanded to its nodes", at, p->order[at], want);
      pos[want] = at;
    }
  }
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    int32_t v = -1;
    bool ok = true;
    for (int32_t a = 0; ok && a < n->n_args; a++) ok = args_before(g, &n->args[a], pos, i, &v);
    for (int32_t a = 0; ok && a < n->n_kwargs; a++) ok = args_before(g, &n->kwargs[a], pos, i, &v);
    if (!ok)
      return bad(c, EG_ERR_FORMAT, "node %s (step position %d) uses %s, whose node runs at "
                 "position %d: steps run in a topological order", n->name, pos[i],
                 eg_value_label(g, v), pos[g->values[v].def]);
  }
  return EG_OK;
}

static eg_status read_program(loader *L) {
  rd c = section(L, EG_EGP_SECTION_PROGRAM);
  eg_program *p = L->p;
  const eg_partitioning *pt = &p->parts;
  const char *soc;
  EG_TRY(rd_str(L, &c, "soc", false, &soc));
  p->target = eg_target_find(soc);
  if (!p->target)
    return bad(&c, EG_ERR_UNSUPPORTED, "soc (%s): a SoC this edgegrad does not know", soc);
  uint8_t precision;
  EG_TRY(rd_u8(&c, "precision", &precision));
  if (precision != EG_PRECISION_FP32 && precision != EG_PRECISION_FP16)
    return bad(&c, EG_ERR_FORMAT, "precision (%u): must be 1 (fp32) or 2 (fp16)", precision);
  p->precision = (eg_precision)precision;
  int32_t n_steps, n_order, n_cpu = 0;
  for (int32_t i = 0; i < pt->n_nodes; i++) n_cpu += !pt->nodes[i].npu;
  EG_TRY(rd_count(&c, "n_steps", 8, INT32_MAX - 1, &n_steps));
  if ((int64_t)n_steps != (int64_t)n_cpu + pt->n_partitions)
    return bad(&c, EG_ERR_FORMAT, "n_steps (%d): must be %d (%d CPU nodes + %d partitions)",
               n_steps, n_cpu + pt->n_partitions, n_cpu, pt->n_partitions);
  p->steps = calloc((size_t)n_steps + 1, sizeof(eg_program_step));
  p->order = calloc((size_t)L->g->n_nodes + 1, sizeof(int32_t));
  char *seen = calloc((size_t)L->g->n_nodes + (size_t)pt->n_partitions + 1, 1);
  int32_t *pos = calloc((size_t)L->g->n_nodes + 1, sizeof(int32_t));
  eg_status s =
      p->steps && p->order && seen && pos ? EG_OK : bad(&c, EG_ERR_NOMEM, "out of memory");
  for (int32_t k = 0; s == EG_OK && k < n_steps; k++) {
    eg_program_step *st = &p->steps[k];
    char w[64];
    snprintf(w, sizeof w, "steps[%d]", k);
    if ((s = rd_i32(&c, w, &st->node)) != EG_OK || (s = rd_i32(&c, w, &st->partition)) != EG_OK)
      break;
    bool cpu_step = st->partition == -1 && st->node >= 0 && st->node < L->g->n_nodes &&
                    !pt->nodes[st->node].npu;
    bool npu_step = st->node == -1 && st->partition >= 0 && st->partition < pt->n_partitions;
    size_t unit = cpu_step ? (size_t)st->node : (size_t)L->g->n_nodes + (size_t)st->partition;
    if ((!cpu_step && !npu_step) || seen[unit])
      s = bad(&c, EG_ERR_FORMAT, "%s (node %d, partition %d): must be a CPU node with partition "
              "-1 or node -1 with a partition, each once", w, st->node, st->partition);
    else
      seen[unit] = 1;
    p->n_steps = k + 1;
  }
  if (s == EG_OK) s = rd_count(&c, "n_order", 4, INT32_MAX - 1, &n_order);
  if (s == EG_OK && n_order != L->g->n_nodes)
    s = bad(&c, EG_ERR_FORMAT, "n_order (%d): must equal the graph's %d nodes", n_order,
            L->g->n_nodes);
  for (int32_t i = 0; s == EG_OK && i < n_order; i++)
    s = rd_id(&c, "order", 0, n_order, &p->order[i]);
  if (s == EG_OK) s = end_of_section(&c);
  if (s == EG_OK) s = check_order(L, &c, pos);
  free(seen);
  free(pos);
  return s;
}

/* ---- entry points ---- */

static eg_status read_all(loader *L) {
  EG_TRY(read_header(L));
  EG_TRY(read_strings(L));
  EG_TRY(read_graph(L));
  EG_TRY(read_placement(L));
  EG_TRY(read_npu(L));
  return read_program(L);
}

void eg_egp_free(eg_egp *e) {
  if (!e) return;
  eg_program_free(&e->program);
  eg_graph_destroy(e->graph);
  free(e->file);
  free(e);
}

/* Takes ownership of `buf` (64-byte aligned, `size` bytes). */
static eg_status read_owned(const char *name, unsigned char *buf, size_t size, eg_egp **out) {
  *out = NULL;
  eg_egp *e = calloc(1, sizeof *e);
  eg_graph *g = e ? eg_graph_create() : NULL;
  if (!g) {
    free(e);
    free(buf);
    return eg_error(EG_ERR_NOMEM, "%s: out of memory", name);
  }
  e->file = buf;
  e->file_bytes = size;
  e->graph = g;
  e->program.graph = g;
  loader L = {.file = name, .data = buf, .size = size, .e = e, .g = g, .p = &e->program};
  eg_status s = read_all(&L);
  if (s != EG_OK) {
    eg_egp_free(e);
    return s;
  }
  e->static_bytes = (size_t)L.sec_size[EG_EGP_SECTION_STATIC];
  *out = e;
  return EG_OK;
}

static unsigned char *alloc_file(size_t size) {
  return aligned_alloc(EG_EGP_STATIC_ALIGN, (size + EG_EGP_STATIC_ALIGN) & ~(size_t)63);
}

eg_status eg_egp_read_memory(const char *name, const void *data, size_t size, eg_egp **out) {
  *out = NULL;
  unsigned char *buf = alloc_file(size);
  if (!buf) return eg_error(EG_ERR_NOMEM, "%s: out of memory for %zu bytes", name, size);
  if (size) memcpy(buf, data, size);
  return read_owned(name, buf, size, out);
}

eg_status eg_egp_read(const char *path, eg_egp **out) {
  *out = NULL;
  int fd;
  uint64_t fsize;
  EG_TRY(eg_file_open_read(path, &fd, &fsize));
  if (fsize > EG_EGP_MAX_FILE) {
    close(fd);
    return eg_error(EG_ERR_FORMAT, "%s: size %llu bytes: more than the limit 2^40", path,
                    (unsigned long long)fsize);
  }
  size_t size = (size_t)fsize;
  unsigned char *buf = alloc_file(size);
  eg_status s = buf ? eg_file_read_fd(path, fd, buf, size)
                    : eg_error(EG_ERR_NOMEM, "%s: out of memory for %zu bytes", path, size);
  close(fd);
  if (s != EG_OK) {
    free(buf);
    return s;
  }
  return read_owned(path, buf, size, out);
}

bool eg_egp_file_has_magic(const char *path) {
  int fd;
  uint64_t size;
  if (!path || eg_file_open_read(path, &fd, &size) != EG_OK) return false; /* the loader says why */
  char head[4];
  bool yes = size >= 4 && eg_file_read_fd(path, fd, head, 4) == EG_OK &&
             memcmp(head, EG_EGP_MAGIC, 4) == 0;
  close(fd);
  return yes;
}

