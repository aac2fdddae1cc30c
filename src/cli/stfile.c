/* stfile.c — see stfile.h. Layout: u64 little-endian header length N, N bytes of JSON
 * {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value"}}, then the tensors' bytes (offsets relative to the end of the
 * header). The writer pads the header with spaces to a multiple of 8 bytes, so every tensor
 * starts 8-byte aligned in the file. */
#include "stfile.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const struct {
  eg_dtype dtype;
  const char *name;
} st_dtypes[] = {{EG_DTYPE_FLOAT32, "F32"}, {EG_DTYPE_FLOAT64, "F64"}, {EG_DTYPE_FLOAT16, "F16"},
                 {EG_DTYPE_INT64, "I64"},   {EG_DTYPE_INT32, "I32"},   {EG_DTYPE_INT8, "I8"},
                 {EG_DTYPE_UINT8, "U8"},    {EG_DTYPE_BOOL, "BOOL"}};
#define N_ST_DTYPES ((int)(sizeof st_dtypes / sizeof st_dtypes[0]))

static size_t nbytes(const eg_tensor *t) {
  return (size_t)eg_tensor_numel(t) * eg_dtype_size(t->dtype);
}

/* The library's last message without its leading "<path>: ", for a message that names the file
 * as `what` (the option and the path) already. */
static const char *lib_message(const char *path) {
  const char *m = eg_last_error();
  const size_t n = strlen(path);
  return strncmp(m, path, n) == 0 && m[n] == ':' && m[n + 1] == ' ' ? m + n + 2 : m;
}

int st_write(const char *path, const char *what, const st_entry *e, int n, const st_meta *meta,
             int n_meta) {
  json_t *root = json_object(), *md = json_object();
  size_t off = 0;
  for (int i = 0; root && md && i < n; i++) {
    const char *dt = NULL;
    for (int k = 0; k < N_ST_DTYPES; k++)
      if (st_dtypes[k].dtype == e[i].t.dtype) dt = st_dtypes[k].name;
    json_t *shape = json_array();
    for (int d = 0; shape && d < e[i].t.rank; d++)
      json_array_append_new(shape, json_integer(e[i].t.shape[d]));
    const size_t len = nbytes(&e[i].t);
    json_t *one = json_pack("{s:s, s:o, s:[I, I]}", "dtype", dt ? dt : "?", "shape", shape,
                            "data_offsets", (json_int_t)off, (json_int_t)(off + len));
    if (!one || json_object_set_new(root, e[i].name, one)) {
      json_decref(root);
      json_decref(md);
      return fail(EXIT_FAIL, "%s: out of memory", what);
    }
    off += len;
  }
  for (int i = 0; root && md && i < n_meta; i++)
    json_object_set_new(md, meta[i].key, json_string(meta[i].value));
  if (root && md && n_meta) json_object_set_new(root, "__metadata__", md);
  else json_decref(md);
  char *text = root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(root);
  eg_file_part *parts = text ? malloc(sizeof *parts * ((size_t)n + 3)) : NULL;
  if (!parts) {
    free(text);
    return fail(EXIT_FAIL, "%s: out of memory", what);
  }
  size_t hlen = strlen(text), padded = (hlen + 7) & ~(size_t)7;
  unsigned char head[8];
  for (int k = 0; k < 8; k++) head[k] = (unsigned char)((uint64_t)padded >> (8 * k));
  parts[0] = (eg_file_part){head, 8};
  parts[1] = (eg_file_part){text, hlen};
  parts[2] = (eg_file_part){"        ", padded - hlen};
  for (int i = 0; i < n; i++) parts[i + 3] = (eg_file_part){e[i].t.data, nbytes(&e[i].t)};
  /* the library's writer: a fresh temporary beside `path`, fsync'ed, renamed over it */
  eg_status s = eg_file_write_atomic(path, parts, n + 3);
  free(parts);
  free(text);
  if (s != EG_OK)
    return fail(s == EG_ERR_NOMEM ? EXIT_FAIL : EXIT_USAGE, "%s: %s", what, lib_message(path));
  return 0;
}

static int bad(const char *what, const char *fmt, const char *detail) {
  return fail(EXIT_USAGE, "%s: not a safetensors file edgegrad can read (%s%s)", what, fmt,
              detail ? detail : "");
}

/* The tensor entries of out->header into out->e, each checked against the `data_size` bytes at
 * `data`. 0, or the exit status after the message. Frees nothing: the message may quote a name
 * the header holds, so the caller frees `out` only after it was printed. */
static int read_entries(st_file *out, const char *what, const unsigned char *data,
                        size_t data_size) {
  json_t *root = out->header;
  if (!(out->e = calloc(json_object_size(root) + 1, sizeof *out->e)))
    return fail(EXIT_FAIL, "%s: out of memory", what);
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    if (strcmp(key, "__metadata__") == 0) {
      const char *mk;
      json_t *mv;
      if (!json_is_object(v)) return bad(what, "__metadata__ is not an object", NULL);
      json_object_foreach(v, mk, mv) if (!json_is_string(mv))
        return bad(what, "a __metadata__ value is not a string: ", mk);
      continue;
    }
    st_entry *e = &out->e[out->n];
    const char *dt = NULL;
    json_t *shape = NULL, *offs = NULL;
    if (json_unpack(v, "{s:s, s:o, s:o}", "dtype", &dt, "shape", &shape, "data_offsets", &offs) ||
        !json_is_array(shape) || !json_is_array(offs) || json_array_size(offs) != 2 ||
        json_array_size(shape) > EG_MAX_RANK)
      return bad(what, "tensor entry without dtype, shape (rank <= 8) and data_offsets: ", key);
    int k = 0;
    while (k < N_ST_DTYPES && strcmp(st_dtypes[k].name, dt) != 0) k++;
    if (k == N_ST_DTYPES) return bad(what, "dtype unknown to edgegrad in: ", key);
    e->name = key;
    e->t.dtype = st_dtypes[k].dtype;
    e->t.rank = (int32_t)json_array_size(shape);
    uint64_t count = 1;
    bool ok = true;
    for (int d = 0; d < e->t.rank; d++) {
      json_t *x = json_array_get(shape, (size_t)d);
      json_int_t s = json_is_integer(x) ? json_integer_value(x) : -1;
      ok = ok && s >= 0 && (s == 0 || count <= (uint64_t)INT64_MAX / (uint64_t)s);
      if (ok) count *= (uint64_t)s, e->t.shape[d] = s;
    }
    json_t *b = json_array_get(offs, 0), *en = json_array_get(offs, 1);
    json_int_t begin = json_is_integer(b) ? json_integer_value(b) : -1;
    json_int_t end = json_is_integer(en) ? json_integer_value(en) : -1;
    ok = ok && count <= SIZE_MAX / eg_dtype_size(e->t.dtype);
    ok = ok && begin >= 0 && end >= begin && (uint64_t)end <= data_size &&
         (uint64_t)(end - begin) == count * eg_dtype_size(e->t.dtype);
    if (!ok)
      return bad(what, "shape or data_offsets out of range or not matching the dtype: ", key);
    e->t.data = (void *)(data + begin);
    out->n++;
  }
  return 0;
}

int st_read(const char *path, const char *what, st_file *out) {
  memset(out, 0, sizeof *out);
  int fd;
  uint64_t size64;
  eg_status s = eg_file_open_read(path, &fd, &size64); /* a regular file, or refused unopened */
  if (s != EG_OK) return fail(EXIT_USAGE, "%s: %s", what, lib_message(path));
  FILE *f = fdopen(fd, "rb");
  const size_t size = (size_t)size64;
  int rc = 0;
  if (!f || size64 >= SIZE_MAX)
    rc = fail(EXIT_FAIL, "%s: cannot read %llu bytes", what, (unsigned long long)size64);
  else if (!(out->bytes = malloc(size ? size : 1)))
    rc = fail(EXIT_FAIL, "%s: out of memory (%zu bytes)", what, size);
  else if (fread(out->bytes, 1, size, f) != size)
    rc = fail(EXIT_USAGE, "%s: cannot read %zu bytes", what, size);
  if (f) fclose(f);
  else close(fd);
  uint64_t hlen = 0;
  if (rc == 0 && size < 8) rc = bad(what, "shorter than its 8-byte header length", NULL);
  for (int k = 0; rc == 0 && k < 8; k++) hlen |= (uint64_t)out->bytes[k] << (8 * k);
  if (rc == 0 && hlen > size - 8) rc = bad(what, "header length past the end of the file", NULL);
  json_error_t jerr;
  json_t *root = rc ? NULL : json_loadb((const char *)out->bytes + 8, (size_t)hlen,
                                        JSON_REJECT_DUPLICATES, &jerr);
  out->header = root;
  if (rc == 0 && !json_is_object(root))
    rc = bad(what, "header is not a JSON object: ", root ? "" : jerr.text);
  if (rc == 0)
    rc = read_entries(out, what, out->bytes + 8 + hlen, size - 8 - (size_t)hlen);
  if (rc) st_free(out); /* after the message: it may quote a name the header holds */
  return rc;
}

const st_entry *st_find(const st_file *f, const char *name) {
  for (int i = 0; i < f->n; i++)
    if (strcmp(f->e[i].name, name) == 0) return &f->e[i];
  return NULL;
}

const char *st_meta_get(const st_file *f, const char *key) {
  json_t *md = f->header ? json_object_get(f->header, "__metadata__") : NULL;
  json_t *v = md ? json_object_get(md, key) : NULL;
  return v ? json_string_value(v) : NULL;
}

void st_free(st_file *f) {
  json_decref(f->header);
  free(f->e);
  free(f->bytes);
  memset(f, 0, sizeof *f);
}
