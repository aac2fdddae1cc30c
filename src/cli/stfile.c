/* stfile.c — see stfile.h. Layout: u64 little-endian header length N, N bytes of JSON
 * {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value"}}, then the tensors' bytes (offsets relative to the end of the
 * header). The writer pads the header with spaces to a multiple of 8 bytes, so every tensor
 * starts 8-byte aligned in the file. */
#include "stfile.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Writes all of `len` bytes; false on an error (errno set). */
static bool write_all(int fd, const void *p, size_t len) {
  const unsigned char *b = p;
  while (len) {
    ssize_t w = write(fd, b, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    b += w;
    len -= (size_t)w;
  }
  return true;
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
  if (!text) return fail(EXIT_FAIL, "%s: out of memory", what);
  size_t hlen = strlen(text), padded = (hlen + 7) & ~(size_t)7;
  unsigned char head[8];
  for (int k = 0; k < 8; k++) head[k] = (unsigned char)((uint64_t)padded >> (8 * k));

  size_t plen = strlen(path);
  char *tmp = malloc(plen + 16);
  if (!tmp) {
    free(text);
    return fail(EXIT_FAIL, "%s: out of memory", what);
  }
  snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  bool ok = fd >= 0 && write_all(fd, head, 8) && write_all(fd, text, hlen) &&
            write_all(fd, "        ", padded - hlen);
  for (int i = 0; ok && i < n; i++) ok = write_all(fd, e[i].t.data, nbytes(&e[i].t));
  ok = ok && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
  int err = errno;
  if (fd >= 0 && close(fd) != 0 && ok) ok = false, err = errno;
  ok = ok && rename(tmp, path) == 0;
  if (!ok) {
    if (errno) err = errno;
    if (fd >= 0) unlink(tmp);
  }
  free(tmp);
  free(text);
  if (!ok)
    return fail(EXIT_USAGE, "%s: cannot write (%s): the file, if it existed, is unchanged", what,
                strerror(err));
  return 0;
}

static int bad(const char *what, const char *fmt, const char *detail) {
  return fail(EXIT_USAGE, "%s: not a safetensors file edgegrad can read (%s%s)", what, fmt,
              detail ? detail : "");
}

int st_read(const char *path, const char *what, st_file *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return fail(EXIT_USAGE, "%s: cannot open (%s)", what, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return fail(EXIT_USAGE, "%s: not a regular file", what);
  }
  size_t size = (size_t)st.st_size;
  out->bytes = malloc(size ? size : 1);
  bool read_ok = out->bytes && fread(out->bytes, 1, size, f) == size;
  fclose(f);
  if (!read_ok) {
    st_free(out);
    return fail(EXIT_USAGE, "%s: cannot read %zu bytes", what, size);
  }
  if (size < 8) {
    st_free(out);
    return bad(what, "shorter than its 8-byte header length", NULL);
  }
  uint64_t hlen = 0;
  for (int k = 0; k < 8; k++) hlen |= (uint64_t)out->bytes[k] << (8 * k);
  if (hlen > size - 8) {
    st_free(out);
    return bad(what, "header length past the end of the file", NULL);
  }
  json_error_t jerr;
  json_t *root = json_loadb((const char *)out->bytes + 8, (size_t)hlen, JSON_REJECT_DUPLICATES,
                            &jerr);
  out->header = root;
  if (!json_is_object(root)) {
    st_free(out);
    return bad(what, "header is not a JSON object: ", root ? "" : jerr.text);
  }
  const size_t data_size = size - 8 - (size_t)hlen;
  const unsigned char *data = out->bytes + 8 + hlen;
  out->e = calloc(json_object_size(root) + 1, sizeof *out->e);
  if (!out->e) {
    st_free(out);
    return fail(EXIT_FAIL, "%s: out of memory", what);
  }
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    if (strcmp(key, "__metadata__") == 0) {
      const char *mk;
      json_t *mv;
      if (!json_is_object(v)) {
        st_free(out);
        return bad(what, "__metadata__ is not an object", NULL);
      }
      json_object_foreach(v, mk, mv) if (!json_is_string(mv)) {
        st_free(out);
        return bad(what, "a __metadata__ value is not a string: ", mk);
      }
      continue;
    }
    st_entry *e = &out->e[out->n];
    const char *dt = NULL;
    json_t *shape = NULL, *offs = NULL;
    if (json_unpack(v, "{s:s, s:o, s:o}", "dtype", &dt, "shape", &shape, "data_offsets", &offs) ||
        !json_is_array(shape) || !json_is_array(offs) || json_array_size(offs) != 2 ||
        json_array_size(shape) > EG_MAX_RANK) {
      st_free(out);
      return bad(what, "tensor entry without dtype, shape (rank <= 8) and data_offsets: ", key);
    }
    int k = 0;
    while (k < N_ST_DTYPES && strcmp(st_dtypes[k].name, dt) != 0) k++;
    if (k == N_ST_DTYPES) {
      st_free(out);
      return bad(what, "dtype unknown to edgegrad in: ", key);
    }
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
    if (!ok) {
      st_free(out);
      return bad(what, "shape or data_offsets out of range or not matching the dtype: ", key);
    }
    e->t.data = (void *)(data + begin);
    out->n++;
  }
  return 0;
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
