/* safetensors.c — see safetensors.h. */
#include "frontend/safetensors.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"
#include "util/error.h"
#include "util/file.h"

/* Weights files are read whole; 16 GiB is far beyond any on-device model. */
#define EG_ST_MAX_FILE ((size_t)16 << 30)
#define EG_ST_MAX_HEADER ((size_t)100 << 20)

static const struct {
  const char *code;
  eg_dtype dtype;
} st_dtypes[] = {{"F32", EG_DTYPE_FLOAT32}, {"F64", EG_DTYPE_FLOAT64}, {"F16", EG_DTYPE_FLOAT16},
                 {"I64", EG_DTYPE_INT64},   {"I32", EG_DTYPE_INT32},   {"I8", EG_DTYPE_INT8},
                 {"U8", EG_DTYPE_UINT8},    {"BOOL", EG_DTYPE_BOOL}};
#define ST_NDTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

static uint64_t read_u64le(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static eg_status parse_entry(const char *path, const char *name, json_t *obj, size_t bufsize,
                             eg_st_entry *e) {
  json_t *dt = json_object_get(obj, "dtype"), *shape = json_object_get(obj, "shape");
  json_t *offs = json_object_get(obj, "data_offsets");
  if (!json_is_object(obj) || !json_is_string(dt) || !json_is_array(shape) ||
      !json_is_array(offs) || json_array_size(offs) != 2)
    return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': needs dtype, shape and data_offsets "
                    "[begin, end]", path, name);
  size_t k = 0;
  while (k < ST_NDTYPES && strcmp(st_dtypes[k].code, json_string_value(dt)) != 0) k++;
  if (k == ST_NDTYPES)
    return eg_error(EG_ERR_UNSUPPORTED, "%s: tensor '%s': dtype %s unknown", path, name,
                    json_string_value(dt));
  e->dtype = st_dtypes[k].dtype;
  if (json_array_size(shape) > EG_MAX_RANK)
    return eg_error(EG_ERR_UNSUPPORTED, "%s: tensor '%s': rank %zu exceeds %d", path, name,
                    json_array_size(shape), EG_MAX_RANK);
  e->rank = (int32_t)json_array_size(shape);
  for (int i = 0; i < e->rank; i++) {
    json_t *d = json_array_get(shape, (size_t)i);
    if (!json_is_integer(d) || json_integer_value(d) < 0 ||
        json_integer_value(d) > EG_MAX_NUMEL)
      return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a size in [0, 2^40]",
                      path, name, i);
    e->shape[i] = json_integer_value(d);
  }
  /* Zero dimensions do not excuse the others: [2^40, 2^40, 0] is refused like [2^40, 2^40]. */
  int64_t numel = eg_shape_numel(e->shape, e->rank, EG_MAX_NUMEL);
  size_t need = 0;
  char dims[160];
  if (numel < 0 || !eg_count_bytes(numel, eg_dtype_size(e->dtype), &need))
    return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': shape %s too large: the product of the "
                    "non-zero dimensions is at most 2^40", path, name,
                    eg_fmt_ints(dims, sizeof dims, e->shape, e->rank));
  json_t *b = json_array_get(offs, 0), *en = json_array_get(offs, 1);
  if (!json_is_integer(b) || !json_is_integer(en) || json_integer_value(b) < 0 ||
      json_integer_value(en) < json_integer_value(b) ||
      (uint64_t)json_integer_value(en) > bufsize)
    return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': data_offsets outside the %zu-byte buffer",
                    path, name, bufsize);
  e->begin = (size_t)json_integer_value(b);
  e->nbytes = (size_t)(json_integer_value(en) - json_integer_value(b));
  if (e->nbytes != need)
    return eg_error(EG_ERR_FORMAT, "%s: tensor '%s': %zu data bytes but shape and dtype need "
                    "%zu", path, name, e->nbytes, need);
  e->name = strdup(name);
  return e->name ? EG_OK : eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
}

static eg_status parse_header(const char *path, json_t *root, eg_safetensors *st) {
  if (!json_is_object(root))
    return eg_error(EG_ERR_FORMAT, "%s: header is not a JSON object", path);
  st->entries = calloc(json_object_size(root) + 1, sizeof *st->entries);
  if (!st->entries) return eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  const char *key;
  json_t *val;
  json_object_foreach(root, key, val) {
    if (strcmp(key, "__metadata__") == 0) continue;
    EG_TRY(parse_entry(path, key, val, st->buffer_size, &st->entries[st->n]));
    st->n++;
  }
  return EG_OK;
}

eg_status eg_safetensors_open(const char *path, eg_safetensors *st) {
  memset(st, 0, sizeof *st);
  void *data;
  EG_TRY(eg_file_read(path, EG_ST_MAX_FILE, &data, &st->file_size));
  st->file = data;
  /* Read before any eg_safetensors_close, which zeroes *st. */
  size_t size = st->file_size;
  if (size < 8) {
    eg_safetensors_close(st);
    return eg_error(EG_ERR_FORMAT, "%s: %zu bytes: a safetensors file starts with an 8-byte "
                    "header length", path, size);
  }
  uint64_t hlen = read_u64le(st->file);
  if (hlen > size - 8 || hlen > EG_ST_MAX_HEADER) {
    eg_safetensors_close(st);
    return eg_error(EG_ERR_FORMAT, "%s: header length %llu exceeds the file (%zu bytes)", path,
                    (unsigned long long)hlen, size);
  }
  st->buffer = st->file + 8 + hlen;
  st->buffer_size = st->file_size - 8 - (size_t)hlen;
  json_error_t jerr;
  json_t *root = json_loadb((const char *)st->file + 8, (size_t)hlen, JSON_REJECT_DUPLICATES,
                            &jerr);
  if (!root) {
    eg_safetensors_close(st);
    return eg_error(EG_ERR_FORMAT, "%s: header JSON, column %d: %s", path, jerr.column,
                    jerr.text);
  }
  eg_status s = parse_header(path, root, st);
  json_decref(root);
  if (s != EG_OK) eg_safetensors_close(st);
  return s;
}

void eg_safetensors_close(eg_safetensors *st) {
  for (int32_t i = 0; st->entries && i < st->n; i++) free(st->entries[i].name);
  free(st->entries);
  free(st->file);
  memset(st, 0, sizeof *st);
}

const eg_st_entry *eg_safetensors_find(const eg_safetensors *st, const char *name) {
  for (int32_t i = 0; i < st->n; i++)
    if (strcmp(st->entries[i].name, name) == 0) return &st->entries[i];
  return NULL;
}

static const char *st_code(eg_dtype dtype) {
  for (size_t k = 0; k < ST_NDTYPES; k++)
    if (st_dtypes[k].dtype == dtype) return st_dtypes[k].code;
  return NULL;
}

static json_t *entry_json(const eg_tensor *t, size_t begin, size_t end) {
  json_t *shape = json_array();
  for (int d = 0; d < t->rank; d++) json_array_append_new(shape, json_integer(t->shape[d]));
  return json_pack("{s:s, s:o, s:[I, I]}", "dtype", st_code(t->dtype), "shape", shape,
                   "data_offsets", (json_int_t)begin, (json_int_t)end);
}

eg_status eg_safetensors_save(const char *path, int n, const char *const *names,
                              const eg_tensor *tensors) {
  json_t *root = json_object();
  eg_file_part *parts = calloc((size_t)n + 2, sizeof *parts);
  char *header = NULL;
  eg_status s = EG_OK;
  size_t offset = 0;
  if (!root || !parts) {
    s = eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    size_t nb = (size_t)eg_tensor_numel(&tensors[i]) * eg_dtype_size(tensors[i].dtype);
    if (!st_code(tensors[i].dtype)) {
      s = eg_error(EG_ERR_ARGUMENT, "%s: tensor '%s': dtype %s has no safetensors code", path,
                   names[i], eg_dtype_name(tensors[i].dtype));
      goto done;
    }
    json_object_set_new(root, names[i], entry_json(&tensors[i], offset, offset + nb));
    parts[i + 2] = (eg_file_part){tensors[i].data, nb};
    offset += nb;
  }
  header = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (!header) {
    s = eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
    goto done;
  }
  /* Pad the header with spaces to a multiple of 8 so the buffer starts aligned. */
  size_t hlen = strlen(header), padded = (hlen + 7) & ~(size_t)7;
  char *h2 = realloc(header, padded + 1);
  if (!h2) {
    s = eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
    goto done;
  }
  header = h2;
  memset(header + hlen, ' ', padded - hlen);
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  parts[0] = (eg_file_part){len8, 8};
  parts[1] = (eg_file_part){header, padded};
  s = eg_file_write_atomic(path, parts, n + 2);
done:
  free(header);
  free(parts);
  json_decref(root);
  return s;
}
