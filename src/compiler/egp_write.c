/* egp_write.c — writing a compiled program file (format: program/egp_format.h; the public
 * eg_model_save_compiled is in compiler/api/compile.c).
 *
 * The metadata sections are built in growable buffers while strings and STATIC byte ranges are
 * interned (each distinct string, each distinct byte range once: hash, then compare); the
 * STRINGS section is built last from the interned table. The file is then one metadata block
 * (header, section table, sections, padding) followed by the STATIC ranges, written as parts
 * straight from the graph's and the QNN graphs' memory (no copy of the weights), atomically.
 * The output is a function of the program alone: writing the same program twice gives the
 * same bytes. */
#include <stdlib.h>
#include <string.h>

#include "compiler/egp_write.h"

#include "compiler/backend.h"
#include "program/egp_format.h"
#include "target/targets.h"
#include "util/error.h"
#include "util/file.h"

/* File codes are the enums' values: pin them so a reordered enum cannot change the format. */
_Static_assert(EG_DTYPE_FLOAT32 == 0 && EG_DTYPE_BOOL == 7 && EG_DTYPE_COUNT == 8, "dtype codes");
_Static_assert(EG_ARG_NONE == 0 && EG_ARG_VALUE == 4 && EG_ARG_LIST == 5 &&
               EG_ARG_MEMORY_FORMAT == 9 && EG_ARG_STR == 10, "arg kind codes");

/* ---- growable byte buffer ---- */

typedef struct wbuf {
  unsigned char *p;
  size_t n, cap;
  bool oom;
} wbuf;

static void put(wbuf *b, const void *d, size_t n) {
  if (b->oom || n == 0) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void put_u8(wbuf *b, uint32_t v) {
  unsigned char x = (unsigned char)v;
  put(b, &x, 1);
}

static void put_u32(wbuf *b, uint32_t v) {
  unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  put(b, x, 4);
}

static void put_i32(wbuf *b, int32_t v) { put_u32(b, (uint32_t)v); }

static void put_u64(wbuf *b, uint64_t v) {
  put_u32(b, (uint32_t)v);
  put_u32(b, (uint32_t)(v >> 32));
}

static void put_i64(wbuf *b, int64_t v) { put_u64(b, (uint64_t)v); }

static void put_f32(wbuf *b, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  put_u32(b, u);
}

static void put_f64(wbuf *b, double f) {
  uint64_t u;
  memcpy(&u, &f, 8);
  put_u64(b, u);
}

static void pad_to(wbuf *b, size_t align) {
  static const unsigned char zeros[64];
  put(b, zeros, (align - b->n % align) % align);
}

/* ---- interning: open addressing over entry indices (slot = index + 1, 0 empty) ---- */

typedef struct intern {
  uint32_t cap;
  int32_t *slot;
} intern;

static uint64_t hash_bytes(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 1469598103934665603ULL ^ (uint64_t)n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 1099511628211ULL;
    h ^= h >> 29;
  }
  for (; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h ^ (h >> 32);
}

/* Grows `m` to hold count+1 entries at most half full; rehash with `hash_of(ctx, id)`. */
static bool intern_reserve(intern *m, uint32_t count, uint64_t (*hash_of)(const void *, int32_t),
                           const void *ctx) {
  if (2 * (count + 1) <= m->cap) return true;
  uint32_t cap = m->cap ? 2 * m->cap : 64;
  int32_t *slot = calloc(cap, sizeof(int32_t));
  if (!slot) return false;
  for (uint32_t i = 0; i < m->cap; i++) {
    if (!m->slot[i]) continue;
    uint32_t j = (uint32_t)hash_of(ctx, m->slot[i] - 1) & (cap - 1);
    while (slot[j]) j = (j + 1) & (cap - 1);
    slot[j] = m->slot[i];
  }
  free(m->slot);
  m->slot = slot;
  m->cap = cap;
  return true;
}

/* ---- the writer ---- */

typedef struct range {
  const void *data;
  size_t n;
  uint64_t hash;
  uint64_t offset; /* in the STATIC section */
} range;

typedef struct writer {
  const eg_program *p;
  wbuf sec[EG_EGP_N_SECTIONS + 1]; /* by kind */
  bool oom;
  /* strings */
  const char **strs;
  uint32_t n_strs, cap_strs;
  intern str_map;
  /* STATIC ranges, in offset order */
  range *ranges;
  uint32_t n_ranges, cap_ranges;
  intern range_map;
  uint64_t static_size;
} writer;

static uint64_t str_hash_of(const void *ctx, int32_t id) {
  const writer *w = ctx;
  return hash_bytes(w->strs[id], strlen(w->strs[id]));
}

static uint64_t range_hash_of(const void *ctx, int32_t id) {
  return ((const writer *)ctx)->ranges[id].hash;
}

/* The string's id, interning it. NULL gives STR_NONE. */
static uint32_t str_id(writer *w, const char *s) {
  if (!s) return EG_EGP_STR_NONE;
  if (w->oom) return 0;
  size_t len = strlen(s);
  uint64_t h = hash_bytes(s, len);
  if (!intern_reserve(&w->str_map, w->n_strs, str_hash_of, w)) {
    w->oom = true;
    return 0;
  }
  uint32_t i = (uint32_t)h & (w->str_map.cap - 1);
  for (; w->str_map.slot[i]; i = (i + 1) & (w->str_map.cap - 1))
    if (strcmp(w->strs[w->str_map.slot[i] - 1], s) == 0) return (uint32_t)w->str_map.slot[i] - 1;
  if (w->n_strs == w->cap_strs) {
    uint32_t cap = w->cap_strs ? 2 * w->cap_strs : 64;
    const char **strs = realloc(w->strs, cap * sizeof *strs);
    if (!strs) {
      w->oom = true;
      return 0;
    }
    w->strs = strs;
    w->cap_strs = cap;
  }
  w->strs[w->n_strs] = s;
  w->str_map.slot[i] = (int32_t)w->n_strs + 1;
  return w->n_strs++;
}

static void put_str(writer *w, wbuf *b, const char *s) { put_u32(b, str_id(w, s)); }

/* The STATIC-section offset of these bytes, storing them if no identical range is stored. */
static uint64_t static_offset(writer *w, const void *data, size_t n) {
  if (w->oom) return 0;
  uint64_t h = hash_bytes(data, n);
  if (!intern_reserve(&w->range_map, w->n_ranges, range_hash_of, w)) {
    w->oom = true;
    return 0;
  }
  uint32_t i = (uint32_t)h & (w->range_map.cap - 1);
  for (; w->range_map.slot[i]; i = (i + 1) & (w->range_map.cap - 1)) {
    const range *r = &w->ranges[w->range_map.slot[i] - 1];
    if (r->hash == h && r->n == n && (n == 0 || r->data == data || memcmp(r->data, data, n) == 0))
      return r->offset;
  }
  if (w->n_ranges == w->cap_ranges) {
    uint32_t cap = w->cap_ranges ? 2 * w->cap_ranges : 64;
    range *rs = realloc(w->ranges, cap * sizeof *rs);
    if (!rs) {
      w->oom = true;
      return 0;
    }
    w->ranges = rs;
    w->cap_ranges = cap;
  }
  uint64_t off = (w->static_size + EG_EGP_STATIC_ALIGN - 1) & ~(uint64_t)(EG_EGP_STATIC_ALIGN - 1);
  w->ranges[w->n_ranges] = (range){data, n, h, off};
  w->range_map.slot[i] = (int32_t)w->n_ranges + 1;
  w->n_ranges++;
  w->static_size = off + n;
  return off;
}

/* ---- GRAPH ---- */

static void put_arg(writer *w, wbuf *b, const eg_arg *a) {
  put_u8(b, (uint32_t)a->kind);
  switch (a->kind) {
  case EG_ARG_NONE: break;
  case EG_ARG_INT: put_i64(b, a->i); break;
  case EG_ARG_FLOAT: put_f64(b, a->f); break;
  case EG_ARG_BOOL: put_u8(b, a->b ? 1 : 0); break;
  case EG_ARG_VALUE: put_i32(b, a->value); break;
  case EG_ARG_LIST:
    put_u32(b, (uint32_t)a->list.n);
    for (int32_t i = 0; i < a->list.n; i++) put_arg(w, b, &a->list.items[i]);
    break;
  case EG_ARG_DTYPE: put_u8(b, (uint32_t)a->dtype); break;
  default: put_str(w, b, a->str); break; /* LAYOUT, DEVICE, MEMORY_FORMAT, STR */
  }
}

/* Each entry with its role and pair; `inputs`: also its optional state_dict name and its random
 * kind (with a Bernoulli mask's probability). */
static void put_named(writer *w, wbuf *b, const eg_named *list, int32_t n, bool inputs) {
  put_u32(b, (uint32_t)n);
  for (int32_t i = 0; i < n; i++) {
    put_str(w, b, list[i].name);
    put_i32(b, list[i].value);
    put_u8(b, (uint32_t)list[i].role);
    put_i32(b, list[i].pair);
    if (!inputs) continue;
    put_str(w, b, list[i].state_dict);
    put_u8(b, (uint32_t)list[i].random);
    if (list[i].random) put_f64(b, list[i].random_p);
  }
}

static void put_quant(wbuf *b, const eg_quant *q) {
  put_u8(b, q ? 1 : 0);
  if (!q) return;
  put_u8(b, (uint32_t)q->dtype);
  put_i32(b, q->axis);
  put_u32(b, (uint32_t)q->n);
  put_i64(b, q->qmin);
  put_i64(b, q->qmax);
  for (int32_t i = 0; i < q->n; i++) put_f64(b, q->scale[i]);
  for (int32_t i = 0; i < q->n; i++) put_i64(b, q->zero_point[i]);
}

static void write_graph(writer *w) {
  const eg_graph *g = w->p->graph;
  wbuf *b = &w->sec[EG_EGP_SECTION_GRAPH];
  put_u32(b, (uint32_t)g->n_values);
  for (int32_t i = 0; i < g->n_values; i++) {
    const eg_value *v = &g->values[i];
    put_u8(b, v->kind == EG_VALUE_TUPLE ? 1 : 0);
    if (v->kind == EG_VALUE_TUPLE) {
      put_u32(b, (uint32_t)v->n_elems);
      for (int32_t e = 0; e < v->n_elems; e++) put_i32(b, v->elems[e]);
    } else {
      put_u8(b, (uint32_t)v->dtype);
      put_u8(b, (uint32_t)v->rank);
      for (int d = 0; d < v->rank; d++) put_i64(b, v->shape[d]);
      put_u8(b, v->axes == EG_AXES_NHWC ? 1 : 0);
      put_u8(b, v->npu_int32 ? 1 : 0);
      put_quant(b, v->quant);
    }
  }
  put_named(w, b, g->inputs, g->n_inputs, true);
  put_named(w, b, g->outputs, g->n_outputs, false);
  put_u32(b, (uint32_t)g->n_statics);
  for (int32_t i = 0; i < g->n_statics; i++) {
    const eg_static *s = &g->statics[i];
    put_str(w, b, s->name);
    put_i32(b, s->value);
    /* one weight, one copy: a static only NPU partitions read (through their own, usually
     * re-laid-out STATIC tensors) keeps its record but not its bytes; one a partition takes
     * as a boundary input (the backward's seed) is fed from these bytes */
    const bool cpu_side = eg_program_cpu_reads(w->p, s->value) ||
                          eg_program_npu_input(w->p, -1, s->value);
    put_u64(b, cpu_side ? static_offset(w, s->data, s->nbytes) : EG_EGP_NO_BYTES);
    put_u64(b, s->nbytes);
  }
  put_u32(b, (uint32_t)g->n_nodes);
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    put_str(w, b, n->name);
    put_str(w, b, eg_op_target(n->op));
    put_i32(b, n->output);
    put_str(w, b, n->source);
    put_u32(b, (uint32_t)n->n_args);
    for (int32_t a = 0; a < n->n_args; a++) put_arg(w, b, &n->args[a]);
    put_u32(b, (uint32_t)n->n_kwargs);
    for (int32_t a = 0; a < n->n_kwargs; a++) {
      put_str(w, b, n->kwarg_names[a]);
      put_arg(w, b, &n->kwargs[a]);
    }
  }
}

/* ---- PLACEMENT ---- */

static void write_placement(writer *w) {
  const eg_partitioning *pt = &w->p->parts;
  wbuf *b = &w->sec[EG_EGP_SECTION_PLACEMENT];
  put_u32(b, (uint32_t)pt->n_nodes);
  for (int32_t i = 0; i < pt->n_nodes; i++) {
    put_u8(b, pt->nodes[i].npu ? 1 : 0);
    put_i32(b, pt->nodes[i].partition);
    put_str(w, b, pt->nodes[i].npu ? NULL : pt->nodes[i].reason);
  }
  put_u32(b, (uint32_t)pt->n_partitions);
  for (int32_t k = 0; k < pt->n_partitions; k++) {
    put_u32(b, (uint32_t)pt->partitions[k].n_nodes);
    for (int32_t j = 0; j < pt->partitions[k].n_nodes; j++) put_i32(b, pt->partitions[k].nodes[j]);
  }
  put_u32(b, (uint32_t)pt->n_warnings);
  for (int32_t i = 0; i < pt->n_warnings; i++) put_str(w, b, pt->warnings[i]);
}

/* ---- NPU ---- */

/* A backend's record (backends/serial.h), written into its own buffer first so that its size
 * precedes it. */
struct eg_egp_sink {
  writer *w;
  wbuf b;
};

void eg_sink_u8(eg_egp_sink *s, uint32_t v) { put_u8(&s->b, v); }
void eg_sink_u32(eg_egp_sink *s, uint32_t v) { put_u32(&s->b, v); }
void eg_sink_i32(eg_egp_sink *s, int32_t v) { put_i32(&s->b, v); }
void eg_sink_u64(eg_egp_sink *s, uint64_t v) { put_u64(&s->b, v); }
void eg_sink_i64(eg_egp_sink *s, int64_t v) { put_i64(&s->b, v); }
void eg_sink_f32(eg_egp_sink *s, float v) { put_f32(&s->b, v); }
void eg_sink_str(eg_egp_sink *s, const char *str) { put_str(s->w, &s->b, str); }
void eg_sink_static(eg_egp_sink *s, const void *data, size_t nbytes) {
  put_u64(&s->b, static_offset(s->w, data, nbytes));
  put_u64(&s->b, nbytes);
}

/* Per partition: its backend's name, the size of its record, the record, and whether each
 * boundary (inputs, then outputs) is held NHWC between partitions (eg_boundary.held). */
static void write_npu(writer *w) {
  const eg_program *p = w->p;
  wbuf *b = &w->sec[EG_EGP_SECTION_NPU];
  put_u32(b, (uint32_t)p->parts.n_partitions);
  for (int32_t k = 0; k < p->parts.n_partitions; k++) {
    const eg_lowered *lp = &p->lowered[k];
    const eg_backend *be = eg_backend_named(lp->backend->name);
    eg_egp_sink sink = {.w = w};
    be->write(lp, &sink);
    put_str(w, b, lp->backend->name);
    put_u64(b, sink.b.n);
    put(b, sink.b.p, sink.b.n);
    if (sink.b.oom) b->oom = true;
    free(sink.b.p);
    for (int32_t i = 0; i < lp->n_inputs; i++) put_u8(b, lp->inputs[i].held ? 1 : 0);
    for (int32_t i = 0; i < lp->n_outputs; i++) put_u8(b, lp->outputs[i].held ? 1 : 0);
  }
}

/* ---- PROGRAM and STRINGS ---- */

static void write_program(writer *w) {
  const eg_program *p = w->p;
  wbuf *b = &w->sec[EG_EGP_SECTION_PROGRAM];
  put_str(w, b, p->target->soc);
  put_u8(b, (uint8_t)(p->precision == EG_PRECISION_FP16 ? EG_PRECISION_FP16 : EG_PRECISION_FP32));
  put_u32(b, (uint32_t)p->n_steps);
  for (int32_t k = 0; k < p->n_steps; k++) {
    put_i32(b, p->steps[k].node);
    put_i32(b, p->steps[k].partition);
  }
  put_u32(b, (uint32_t)p->graph->n_nodes);
  for (int32_t i = 0; i < p->graph->n_nodes; i++) put_i32(b, p->order[i]);
}

static eg_status write_strings(writer *w) {
  wbuf *b = &w->sec[EG_EGP_SECTION_STRINGS];
  put_u32(b, w->n_strs);
  for (uint32_t i = 0; i < w->n_strs; i++) {
    size_t len = strlen(w->strs[i]);
    if (len > EG_EGP_MAX_STRING)
      return eg_error(EG_ERR_UNSUPPORTED, "egp: string '%.40s...' (%zu bytes): longer than %u "
                      "bytes", w->strs[i], len, EG_EGP_MAX_STRING);
    put_u32(b, (uint32_t)len);
    put(b, w->strs[i], len);
  }
  return EG_OK;
}

/* ---- assembling the file ---- */

/* The metadata block (header, section table, sections, padding up to STATIC) and the file
 * parts: meta, then each STATIC range and its padding. */
static eg_status assemble(writer *w, wbuf *meta, eg_file_part **parts_out, int *n_parts_out) {
  static const unsigned char zeros[EG_EGP_STATIC_ALIGN];
  static const int order[EG_EGP_N_SECTIONS] = {
      EG_EGP_SECTION_STRINGS, EG_EGP_SECTION_GRAPH, EG_EGP_SECTION_PLACEMENT,
      EG_EGP_SECTION_NPU,     EG_EGP_SECTION_PROGRAM, EG_EGP_SECTION_STATIC};
  uint64_t off[EG_EGP_N_SECTIONS + 1] = {0}, size[EG_EGP_N_SECTIONS + 1] = {0};
  uint64_t at = EG_EGP_HEADER_SIZE + EG_EGP_N_SECTIONS * EG_EGP_SECTION_ENTRY_SIZE;
  for (unsigned i = 0; i + 1 < EG_EGP_N_SECTIONS; i++) {
    int k = order[i];
    at = (at + EG_EGP_SECTION_ALIGN - 1) & ~(uint64_t)(EG_EGP_SECTION_ALIGN - 1);
    off[k] = at;
    size[k] = w->sec[k].n;
    at += size[k];
  }
  at = (at + EG_EGP_STATIC_ALIGN - 1) & ~(uint64_t)(EG_EGP_STATIC_ALIGN - 1);
  off[EG_EGP_SECTION_STATIC] = at;
  size[EG_EGP_SECTION_STATIC] = w->static_size;
  uint64_t file_size = at + w->static_size;

  put(meta, EG_EGP_MAGIC, 4);
  put_u32(meta, EG_EGP_VERSION);
  put_u64(meta, file_size);
  put_u32(meta, EG_EGP_N_SECTIONS);
  put_u32(meta, 0);
  put_u64(meta, 0);
  for (unsigned i = 0; i < EG_EGP_N_SECTIONS; i++) {
    put_u32(meta, (uint32_t)order[i]);
    put_u32(meta, 0);
    put_u64(meta, off[order[i]]);
    put_u64(meta, size[order[i]]);
  }
  for (unsigned i = 0; i + 1 < EG_EGP_N_SECTIONS; i++) {
    pad_to(meta, EG_EGP_SECTION_ALIGN);
    put(meta, w->sec[order[i]].p, w->sec[order[i]].n);
  }
  pad_to(meta, EG_EGP_STATIC_ALIGN);
  if (meta->oom) return eg_error(EG_ERR_NOMEM, "egp: out of memory");

  eg_file_part *parts = calloc(2 * (size_t)w->n_ranges + 1, sizeof *parts);
  if (!parts) return eg_error(EG_ERR_NOMEM, "egp: out of memory");
  int n = 0;
  parts[n++] = (eg_file_part){meta->p, meta->n};
  for (uint32_t r = 0; r < w->n_ranges; r++) {
    parts[n++] = (eg_file_part){w->ranges[r].data, w->ranges[r].n};
    uint64_t end = w->ranges[r].offset + w->ranges[r].n;
    uint64_t next = r + 1 < w->n_ranges ? w->ranges[r + 1].offset : end;
    if (next > end) parts[n++] = (eg_file_part){zeros, (size_t)(next - end)};
  }
  *parts_out = parts;
  *n_parts_out = n;
  return EG_OK;
}

static void writer_free(writer *w) {
  for (int k = 0; k <= (int)EG_EGP_N_SECTIONS; k++) free(w->sec[k].p);
  free(w->strs);
  free(w->str_map.slot);
  free(w->ranges);
  free(w->range_map.slot);
}

/* Builds every section; then `emit` gets the parts. */
static eg_status write_parts(const eg_program *p, eg_status (*emit)(void *, const eg_file_part *,
                                                                    int),
                             void *ctx) {
  if (!p || !p->graph || !p->target)
    return eg_error(EG_ERR_ARGUMENT, "egp: the program is NULL or incomplete");
  writer w = {.p = p};
  wbuf meta = {0};
  eg_file_part *parts = NULL;
  int n_parts = 0;
  write_graph(&w);
  write_placement(&w);
  write_npu(&w);
  write_program(&w);
  eg_status s = w.oom ? eg_error(EG_ERR_NOMEM, "egp: out of memory") : write_strings(&w);
  for (int k = 0; s == EG_OK && k <= (int)EG_EGP_N_SECTIONS; k++)
    if (w.sec[k].oom) s = eg_error(EG_ERR_NOMEM, "egp: out of memory");
  if (s == EG_OK) s = assemble(&w, &meta, &parts, &n_parts);
  if (s == EG_OK) s = emit(ctx, parts, n_parts);
  free(parts);
  free(meta.p);
  writer_free(&w);
  return s;
}

static eg_status emit_file(void *ctx, const eg_file_part *parts, int n) {
  return eg_file_write_atomic(ctx, parts, n);
}

eg_status eg_egp_write(const eg_program *p, const char *path) {
  if (!path) return eg_error(EG_ERR_ARGUMENT, "egp: path is NULL");
  return write_parts(p, emit_file, (void *)path);
}

typedef struct mem_out {
  void **data;
  size_t *size;
} mem_out;

static eg_status emit_memory(void *ctx, const eg_file_part *parts, int n) {
  mem_out *m = ctx;
  size_t total = 0;
  for (int i = 0; i < n; i++) total += parts[i].size;
  unsigned char *buf = malloc(total ? total : 1);
  if (!buf) return eg_error(EG_ERR_NOMEM, "egp: out of memory for %zu bytes", total);
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    if (parts[i].size) memcpy(buf + at, parts[i].data, parts[i].size);
    at += parts[i].size;
  }
  *m->data = buf;
  *m->size = total;
  return EG_OK;
}

eg_status eg_egp_write_memory(const eg_program *p, void **data, size_t *size) {
  *data = NULL;
  *size = 0;
  mem_out m = {data, size};
  return write_parts(p, emit_memory, &m);
}

