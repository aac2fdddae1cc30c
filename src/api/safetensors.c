/* safetensors.c — the safetensors reader and writer (public API: eg_safetensors_load,
 * eg_safetensors_save and the accessors of edgegrad.h), the one codec of the format: the
 * weights a graph names (compiler/frontend/graph_json.c), and the first values, trained weights and
 * checkpoints of `edgegrad train`. The header is JSON, read and written with jansson (the one
 * use of it in the runtime library): read with json_loadb and JSON_REJECT_DUPLICATES, written
 * with json_dumpb, compact and in order.
 *
 * Layout (https://huggingface.co/docs/safetensors), all little-endian:
 *   bytes [0, 8)        u64 N, the header length
 *   bytes [8, 8+N)      UTF-8 JSON object: for each tensor name
 *                         {"dtype": "F32"|"F64"|"F16"|"I64"|"I32"|"I8"|"U8"|"BOOL",
 *                          "shape": [d0, ...], "data_offsets": [begin, end]}
 *                       and optionally "__metadata__": {string: string}
 *   bytes [8+N, EOF)    the byte buffer; a tensor's bytes are buffer[begin, end), C order.
 *
 * Reading checks every field before anything is used: a regular file of at most 16 GiB
 * (eg_file_open_read), read whole; N at most 100 MiB and within the file; the header JSON with
 * no key twice in an object, and an object; "__metadata__" an object whose values are strings;
 * every other key a tensor whose entry is an object with a known dtype (a string), a shape of
 * rank <= EG_MAX_RANK whose dimensions are in [0, 2^40] and whose non-zero dimensions multiply
 * to at most 2^40 (util/checked.h), and data_offsets of two integers with 0 <= begin <= end <=
 * buffer size and end - begin == numel * dtype size. Other members of an entry are ignored, as
 * are bytes of the buffer no tensor claims. A tensor is a view into the file's bytes: not
 * necessarily aligned for its dtype.
 *
 * Writing: the header compact (no whitespace), the tensors' entries in the caller's order then
 * "__metadata__" (only when there are pairs), padded with spaces to a multiple of 8 bytes so
 * that the byte buffer starts 8-byte aligned in the file; the tensors' bytes back to back in the
 * same order, without padding between them; all of it through eg_file_write_atomic. These are
 * the bytes edgegrad's two earlier writers (json_dumps, JSON_COMPACT | JSON_PRESERVE_ORDER)
 * gave for the same tensors and metadata. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgegrad.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/file.h"

/* Files are read whole; 16 GiB is far beyond any on-device model and its optimizer state. */
#define EG_ST_MAX_FILE ((size_t)16 << 30)
#define EG_ST_MAX_HEADER ((size_t)100 << 20)
#define EG_ST_METADATA "__metadata__"
/* How the header is written (JSON_PRESERVE_ORDER: the default since jansson 2.8). */
#define EG_ST_DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER)

static const struct {
  const char *code;
  eg_dtype dtype;
} st_dtypes[] = {{"F32", EG_DTYPE_FLOAT32}, {"F64", EG_DTYPE_FLOAT64}, {"F16", EG_DTYPE_FLOAT16},
                 {"I64", EG_DTYPE_INT64},   {"I32", EG_DTYPE_INT32},   {"I8", EG_DTYPE_INT8},
                 {"U8", EG_DTYPE_UINT8},    {"BOOL", EG_DTYPE_BOOL}};
#define ST_NDTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

struct eg_safetensors {
  unsigned char *file; /* the whole file */
  json_t *header;      /* names, keys and values point into its strings */
  eg_safetensors_entry *entries;
  int n;
  eg_safetensors_meta *meta;
  int n_meta;
};

/* ---- reading ---- */

static uint64_t read_u64le(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static eg_status read_metadata(const char *path, json_t *md, eg_safetensors *st) {
  if (!json_is_object(md))
    return eg_error(EG_ERR_FORMAT, "%s: " EG_ST_METADATA " is not an object: it maps keys to "
                    "strings", path);
  if (!(st->meta = calloc(json_object_size(md) + 1, sizeof *st->meta)))
    return eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  const char *key;
  json_t *v;
  json_object_foreach(md, key, v) {
    if (!json_is_string(v))
      return eg_error(EG_ERR_FORMAT, "%s: " EG_ST_METADATA " '%s' is not a string: metadata "
                      "values are strings", path, key);
    st->meta[st->n_meta++] = (eg_safetensors_meta){key, json_string_value(v)};
  }
  return EG_OK;
}

/* The entry `m` of tensor `name` checked against the `bufsize`-byte buffer. */
static eg_status read_entry(const char *path, const char *name, json_t *m,
                            const unsigned char *buffer, size_t bufsize,
                            eg_safetensors_entry *e) {
  json_t *dt = json_object_get(m, "dtype"), *shape = json_object_get(m, "shape");
  json_t *offs = json_object_get(m, "data_offsets");
  if (!json_is_string(dt) || !json_is_array(shape) || !json_is_array(offs) ||
      json_array_size(offs) != 2)
    return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': an entry needs a dtype string, a shape "
                    "array and data_offsets [begin, end]", path, name);
  const char *code = json_string_value(dt);
  size_t k = 0;
  while (k < ST_NDTYPES && strcmp(st_dtypes[k].code, code) != 0) k++;
  if (k == ST_NDTYPES)
    return eg_error(EG_ERR_UNSUPPORTED, "%s: tensor '%s': dtype '%s' unknown to edgegrad: it "
                    "reads F32, F64, F16, I64, I32, I8, U8 and BOOL", path, name, code);
  eg_tensor *t = &e->t;
  t->dtype = st_dtypes[k].dtype;
  if (json_array_size(shape) > EG_MAX_RANK)
    return eg_error(EG_ERR_UNSUPPORTED, "%s: tensor '%s': rank %zu exceeds %d", path, name,
                    json_array_size(shape), EG_MAX_RANK);
  t->rank = (int32_t)json_array_size(shape);
  for (int i = 0; i < t->rank; i++) {
    json_t *d = json_array_get(shape, (size_t)i);
    if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > EG_MAX_NUMEL)
      return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a size in [0, 2^40]",
                      path, name, i);
    t->shape[i] = json_integer_value(d);
  }
  /* Zero dimensions do not excuse the others: [2^40, 2^40, 0] is refused like [2^40, 2^40]. */
  const int64_t numel = eg_shape_numel(t->shape, t->rank, EG_MAX_NUMEL);
  size_t need = 0;
  char dims[160];
  if (numel < 0 || !eg_count_bytes(numel, eg_dtype_size(t->dtype), &need))
    return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': shape %s too large: the product of the "
                    "non-zero dimensions is at most 2^40", path, name,
                    eg_fmt_ints(dims, sizeof dims, t->shape, t->rank));
  json_t *b = json_array_get(offs, 0), *en = json_array_get(offs, 1);
  if (!json_is_integer(b) || !json_is_integer(en))
    return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': data_offsets are not two integers [begin, "
                    "end]", path, name);
  const json_int_t begin = json_integer_value(b), end = json_integer_value(en);
  if (begin < 0 || end < begin || (uint64_t)end > bufsize)
    return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%lld, %lld] outside the "
                    "%zu-byte buffer: 0 <= begin <= end <= %zu", path, name, (long long)begin,
                    (long long)end, bufsize, bufsize);
  const size_t nbytes = (size_t)(end - begin);
  if (nbytes != need)
    return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%lld, %lld] hold %zu bytes "
                    "but %s %s takes %zu", path, name, (long long)begin, (long long)end, nbytes,
                    code, eg_fmt_ints(dims, sizeof dims, t->shape, t->rank), need);
  e->name = name;
  t->data = (void *)(buffer + begin);
  return EG_OK;
}

static eg_status read_file(const char *path, eg_safetensors *st) {
  void *data;
  size_t size;
  EG_TRY(eg_file_read(path, EG_ST_MAX_FILE, &data, &size));
  st->file = data;
  if (size < 8)
    return eg_error(EG_ERR_FORMAT, "%s: %zu bytes: a safetensors file starts with an 8-byte "
                    "header length", path, size);
  const uint64_t hlen = read_u64le(st->file);
  if (hlen > size - 8)
    return eg_error(EG_ERR_FORMAT, "%s: header length %llu exceeds the file (%zu bytes)", path,
                    (unsigned long long)hlen, size);
  if (hlen > EG_ST_MAX_HEADER)
    return eg_error(EG_ERR_FORMAT, "%s: header length %llu exceeds the limit (%zu bytes)", path,
                    (unsigned long long)hlen, EG_ST_MAX_HEADER);
  json_error_t jerr;
  st->header = json_loadb((const char *)st->file + 8, (size_t)hlen, JSON_REJECT_DUPLICATES,
                          &jerr);
  if (!st->header && json_error_code(&jerr) == json_error_out_of_memory)
    return eg_error(EG_ERR_NOMEM, "%s: out of memory (reading the header JSON)", path);
  if (!st->header)
    return eg_error(EG_ERR_FORMAT, "%s: header JSON, line %d, column %d: %s", path, jerr.line,
                    jerr.column, jerr.text);
  json_t *root = st->header;
  if (!json_is_object(root))
    return eg_error(EG_ERR_FORMAT, "%s: header is not a JSON object", path);
  /* (unreachable within the header's limit; entries are counted in int) */
  if (json_object_size(root) >= INT_MAX)
    return eg_error(EG_ERR_FORMAT, "%s: %zu header keys: at most %d", path,
                    json_object_size(root), INT_MAX - 1);
  if (!(st->entries = calloc(json_object_size(root) + 1, sizeof *st->entries)))
    return eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  const unsigned char *buffer = st->file + 8 + hlen;
  const char *key;
  json_t *m;
  json_object_foreach(root, key, m) {
    if (strcmp(key, EG_ST_METADATA) == 0) {
      EG_TRY(read_metadata(path, m, st));
      continue;
    }
    EG_TRY(read_entry(path, key, m, buffer, size - 8 - (size_t)hlen, &st->entries[st->n]));
    st->n++;
  }
  return EG_OK;
}

eg_status eg_safetensors_load(const char *path, eg_safetensors **out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_safetensors_load: out is NULL");
  *out = NULL;
  if (!path) return eg_error(EG_ERR_ARGUMENT, "eg_safetensors_load: path is NULL");
  eg_safetensors *st = calloc(1, sizeof *st);
  if (!st) return eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  eg_status s = read_file(path, st);
  if (s != EG_OK) eg_safetensors_destroy(st); /* after the message: it may quote the header */
  else *out = st;
  return s;
}

void eg_safetensors_destroy(eg_safetensors *st) {
  if (!st) return;
  json_decref(st->header);
  free(st->entries);
  free(st->meta);
  free(st->file);
  free(st);
}

const eg_safetensors_entry *eg_safetensors_entries(const eg_safetensors *st, int *n) {
  if (n) *n = st ? st->n : 0;
  return st ? st->entries : NULL;
}

const eg_safetensors_entry *eg_safetensors_find(const eg_safetensors *st, const char *name) {
  for (int i = 0; st && name && i < st->n; i++)
    if (strcmp(st->entries[i].name, name) == 0) return &st->entries[i];
  return NULL;
}

const eg_safetensors_meta *eg_safetensors_metadata(const eg_safetensors *st, int *n) {
  if (n) *n = st ? st->n_meta : 0;
  return st ? st->meta : NULL;
}

const char *eg_safetensors_meta_get(const eg_safetensors *st, const char *key) {
  for (int i = 0; st && key && i < st->n_meta; i++)
    if (strcmp(st->meta[i].key, key) == 0) return st->meta[i].value;
  return NULL;
}

/* ---- writing ---- */

static const char *st_code(eg_dtype dtype) {
  for (size_t k = 0; k < ST_NDTYPES; k++)
    if (st_dtypes[k].dtype == dtype) return st_dtypes[k].code;
  return NULL;
}

/* Tensor `t`'s entry {"dtype", "shape", "data_offsets": [begin, end]}; NULL: out of memory. */
static json_t *entry_json(const eg_tensor *t, size_t begin, size_t end) {
  json_t *shape = json_array(), *entry = NULL;
  bool ok = shape != NULL;
  for (int d = 0; ok && d < t->rank; d++)
    ok = json_array_append_new(shape, json_integer(t->shape[d])) == 0;
  if (ok)
    entry = json_pack("{s:s, s:O, s:[I, I]}", "dtype", st_code(t->dtype), "shape", shape,
                      "data_offsets", (json_int_t)begin, (json_int_t)end);
  json_decref(shape);
  return entry;
}

/* The header: the tensors' entries in order, then "__metadata__" when there are pairs; every
 * string already checked (check_savable). NULL: out of memory. */
static json_t *header_json(const eg_safetensors_entry *e, const size_t *nbytes, int n,
                           const eg_safetensors_meta *meta, int n_meta) {
  json_t *root = json_object();
  bool ok = root != NULL;
  size_t offset = 0;
  for (int i = 0; ok && i < n; i++) {
    json_t *entry = entry_json(&e[i].t, offset, offset + nbytes[i]);
    ok = json_object_set_new(root, e[i].name, entry) == 0;
    offset += nbytes[i];
  }
  if (ok && n_meta) {
    json_t *md = json_object(); /* root holds it (or it is NULL, and refused) */
    ok = json_object_set_new(root, EG_ST_METADATA, md) == 0;
    for (int i = 0; ok && i < n_meta; i++)
      ok = json_object_set_new(md, meta[i].key, json_string(meta[i].value)) == 0;
  }
  if (!ok) {
    json_decref(root);
    return NULL;
  }
  return root;
}

static int by_string(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The `n` strings of `s` (sorted in place) all differ; else EG_ERR_ARGUMENT naming `what`. */
static eg_status check_unique(const char *path, const char *what, const char **s, int n) {
  qsort(s, (size_t)n, sizeof *s, by_string);
  for (int i = 1; i < n; i++)
    if (strcmp(s[i - 1], s[i]) == 0)
      return eg_error(EG_ERR_ARGUMENT, "%s: %s '%s' given twice: each is written once", path,
                      what, s[i]);
  return EG_OK;
}

/* A name, key or value the header can hold: a string, UTF-8 (as jansson takes them). */
static eg_status check_string(const char *path, const char *what, const char *s) {
  if (!s) return eg_error(EG_ERR_ARGUMENT, "%s: a %s is NULL", path, what);
  json_t *j = json_string(s); /* NULL for a string that is not UTF-8, or out of memory */
  const bool utf8 = j != NULL;
  if (!j && !(j = json_string_nocheck(s)))
    return eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  json_decref(j);
  if (!utf8)
    return eg_error(EG_ERR_ARGUMENT, "%s: %s '%s' is not UTF-8: the header is UTF-8 JSON", path,
                    what, s);
  return EG_OK;
}

/* Every name, key and tensor writable; nbytes[i] the bytes of tensor i. */
static eg_status check_savable(const char *path, const eg_safetensors_entry *e, int n,
                               const eg_safetensors_meta *meta, int n_meta, size_t *nbytes,
                               const char **scratch) {
  size_t total = 0;
  char dims[160];
  for (int i = 0; i < n; i++) {
    const eg_tensor *t = &e[i].t;
    EG_TRY(check_string(path, "tensor name", e[i].name));
    if (strcmp(e[i].name, EG_ST_METADATA) == 0)
      return eg_error(EG_ERR_ARGUMENT, "%s: tensor name '" EG_ST_METADATA "': the format "
                      "reserves it for the metadata", path);
    const int64_t numel = eg_tensor_numel(t);
    if (!st_code(t->dtype) || numel < 0 || !eg_count_bytes(numel, eg_dtype_size(t->dtype),
                                                           &nbytes[i]))
      return eg_error(EG_ERR_ARGUMENT, "%s: tensor '%s': dtype %s (%d), rank %d, shape %s: "
                      "the dtype must be an eg_dtype, the rank in [0, %d], the dimensions in "
                      "[0, 2^40] and the non-zero ones multiply to at most 2^40", path,
                      e[i].name, eg_dtype_name(t->dtype), (int)t->dtype, (int)t->rank,
                      t->rank >= 0 && t->rank <= EG_MAX_RANK
                          ? eg_fmt_ints(dims, sizeof dims, t->shape, t->rank) : "?",
                      EG_MAX_RANK);
    if (nbytes[i] && !t->data)
      return eg_error(EG_ERR_ARGUMENT, "%s: tensor '%s': data is NULL (%zu bytes to write)",
                      path, e[i].name, nbytes[i]);
    if (nbytes[i] > SIZE_MAX - total)
      return eg_error(EG_ERR_ARGUMENT, "%s: tensor '%s': the tensors add up to more than "
                      "SIZE_MAX bytes", path, e[i].name);
    total += nbytes[i];
    scratch[i] = e[i].name;
  }
  EG_TRY(check_unique(path, "tensor name", scratch, n));
  for (int i = 0; i < n_meta; i++) {
    EG_TRY(check_string(path, "metadata key", meta[i].key));
    EG_TRY(check_string(path, "metadata value", meta[i].value));
    scratch[i] = meta[i].key;
  }
  return check_unique(path, "metadata key", scratch, n_meta);
}

eg_status eg_safetensors_save(const char *path, const eg_safetensors_entry *entries, int n,
                              const eg_safetensors_meta *meta, int n_meta) {
  if (!path || n < 0 || n_meta < 0 || (n && !entries) || (n_meta && !meta))
    return eg_error(EG_ERR_ARGUMENT, "eg_safetensors_save: path %s, %d entries at %s, %d "
                    "metadata pairs at %s: a path, and arrays for the counts given",
                    path ? "given" : "NULL", n, entries ? "given" : "NULL", n_meta,
                    meta ? "given" : "NULL");
  const size_t most = (size_t)(n > n_meta ? n : n_meta) + 1;
  size_t *nbytes = calloc((size_t)n + 1, sizeof *nbytes);
  const char **scratch = calloc(most, sizeof *scratch);
  eg_file_part *parts = calloc((size_t)n + 2, sizeof *parts);
  json_t *root = NULL;
  char *header = NULL;
  eg_status s = nbytes && scratch && parts
                    ? check_savable(path, entries, n, meta, n_meta, nbytes, scratch)
                    : eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  if (s == EG_OK && !(root = header_json(entries, nbytes, n, meta, n_meta)))
    s = eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  /* Padded with spaces to a multiple of 8 so that the byte buffer starts aligned. */
  const size_t len = s == EG_OK ? json_dumpb(root, NULL, 0, EG_ST_DUMP_FLAGS) : 0;
  const size_t padded = (len + 7) & ~(size_t)7;
  if (s == EG_OK && (!len || !(header = malloc(padded)) ||
                     json_dumpb(root, header, padded, EG_ST_DUMP_FLAGS) != len))
    s = eg_error(EG_ERR_NOMEM, "%s: out of memory (a header of %zu bytes)", path, padded);
  if (s == EG_OK) {
    memset(header + len, ' ', padded - len);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    parts[0] = (eg_file_part){len8, 8};
    parts[1] = (eg_file_part){header, padded};
    for (int i = 0; i < n; i++) parts[i + 2] = (eg_file_part){entries[i].t.data, nbytes[i]};
    s = eg_file_write_atomic(path, parts, n + 2);
  }
  json_decref(root);
  free(header);
  free(parts);
  free(scratch);
  free(nbytes);
  return s;
}
