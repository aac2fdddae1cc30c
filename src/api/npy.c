/* npy.c — NumPy .npy reader and writer (public API: eg_npy_load, eg_npy_save).
 *
 * eg_npy_read reads one from any source of bytes, the header first and then the data straight
 * into its buffer (a file's bytes are never held twice); eg_npy_parse (one held in memory, an
 * .npz member) and eg_npy_load (a file) go through it.
 *
 * Format: "\x93NUMPY", major, minor (1, 2 or 3), header length (u16 LE for 1.x, u32 LE for
 * 2.x/3.x), then an ASCII Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a '\n', then the raw data. We accept little-endian (or byte-order-free)
 * descrs of the dtypes edgegrad knows, C order only, shapes within util/checked.h's rule (each
 * dimension in [0, 2^40], the non-zero ones multiplying to at most 2^40), and exactly
 * numel*itemsize data bytes. The header is copied and NUL-terminated before it is parsed. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgegrad.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/file.h"

#define EG_NPY_MAX_FILE ((size_t)16 << 30)

static const struct {
  const char *descr; /* without the byte-order character */
  eg_dtype dtype;
} npy_dtypes[] = {{"f4", EG_DTYPE_FLOAT32}, {"f8", EG_DTYPE_FLOAT64}, {"f2", EG_DTYPE_FLOAT16},
                  {"i8", EG_DTYPE_INT64},   {"i4", EG_DTYPE_INT32},   {"i1", EG_DTYPE_INT8},
                  {"u1", EG_DTYPE_UINT8},   {"b1", EG_DTYPE_BOOL}};
#define NPY_NDTYPES (sizeof npy_dtypes / sizeof npy_dtypes[0])

/* Finds 'key': in the header and returns a pointer just past the colon and spaces. */
static const char *npy_field(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(h, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (*p == ' ') p++;
  if (*p != ':') return NULL;
  p++;
  while (*p == ' ') p++;
  return p;
}

static eg_status parse_descr(const char *path, const char *h, eg_dtype *dtype) {
  const char *p = npy_field(h, "descr");
  if (!p || *p != '\'') return eg_error(EG_ERR_FORMAT, "%s: header has no 'descr' string", path);
  p++;
  /* Find the closing quote first: the header may end right after the opening one. */
  const char *end = strchr(p, '\'');
  if (!end || end - p < 2 || end - p > 9)
    return eg_error(EG_ERR_FORMAT, "%s: header 'descr' is malformed: it is a quoted "
                    "byte-order mark and type code such as '<f4'", path);
  char order = *p++;
  char code[9] = {0};
  memcpy(code, p, (size_t)(end - p));
  if (order == '>' && strcmp(code, "i1") != 0 && strcmp(code, "u1") != 0 &&
      strcmp(code, "b1") != 0)
    return eg_error(EG_ERR_UNSUPPORTED, "%s: descr '>%s' is big-endian: edgegrad reads "
                    "little-endian .npy files", path, code);
  if (order != '<' && order != '|' && order != '=' && order != '>')
    return eg_error(EG_ERR_FORMAT, "%s: descr '%c%s' has no byte-order mark", path, order, code);
  for (size_t k = 0; k < NPY_NDTYPES; k++)
    if (strcmp(npy_dtypes[k].descr, code) == 0) {
      *dtype = npy_dtypes[k].dtype;
      return EG_OK;
    }
  return eg_error(EG_ERR_UNSUPPORTED, "%s: dtype '%s' unsupported: edgegrad reads f4, f8, f2, "
                  "i8, i4, i1, u1, b1", path, code);
}

static eg_status parse_shape(const char *path, const char *h, eg_tensor *t) {
  const char *p = npy_field(h, "shape");
  if (!p || *p != '(') return eg_error(EG_ERR_FORMAT, "%s: header has no 'shape' tuple", path);
  p++;
  t->rank = 0;
  for (;;) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    if (!isdigit((unsigned char)*p))
      return eg_error(EG_ERR_FORMAT, "%s: header 'shape' is malformed", path);
    if (t->rank == EG_MAX_RANK)
      return eg_error(EG_ERR_UNSUPPORTED, "%s: rank exceeds %d", path, EG_MAX_RANK);
    char *end;
    unsigned long long d = strtoull(p, &end, 10);
    if (d > (unsigned long long)EG_MAX_NUMEL)
      return eg_error(EG_ERR_FORMAT, "%s: shape[%d] = %llu too large: dimensions are in [0, 2^40]",
                      path, t->rank, d);
    t->shape[t->rank++] = (int64_t)d;
    p = end;
    while (*p == ' ') p++;
    if (*p != ',' && *p != ')')
      return eg_error(EG_ERR_FORMAT, "%s: header 'shape' is malformed", path);
  }
  return EG_OK;
}

static eg_status parse_header(const char *path, const unsigned char *f, size_t size,
                              eg_tensor *t, size_t *data_off) {
  if (size < 10 || memcmp(f, "\x93NUMPY", 6) != 0)
    return eg_error(EG_ERR_FORMAT, "%s: not a .npy file (no \\x93NUMPY magic)", path);
  unsigned major = f[6];
  size_t hlen, hoff;
  if (major == 1) {
    hlen = (size_t)f[8] | (size_t)f[9] << 8;
    hoff = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return eg_error(EG_ERR_FORMAT, "%s: truncated header", path);
    hlen = (size_t)f[8] | (size_t)f[9] << 8 | (size_t)f[10] << 16 | (size_t)f[11] << 24;
    hoff = 12;
  } else {
    return eg_error(EG_ERR_UNSUPPORTED, "%s: .npy version %u unknown", path, major);
  }
  if (hlen > size - hoff)
    return eg_error(EG_ERR_FORMAT, "%s: header length %zu exceeds the file (%zu bytes)", path,
                    hlen, size);
  char *h = malloc(hlen + 1);
  if (!h) return eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  memcpy(h, f + hoff, hlen);
  h[hlen] = 0;
  eg_status s = parse_descr(path, h, &t->dtype);
  if (s == EG_OK) {
    const char *fo = npy_field(h, "fortran_order");
    if (!fo) s = eg_error(EG_ERR_FORMAT, "%s: header has no 'fortran_order'", path);
    else if (strncmp(fo, "False", 5) != 0)
      s = eg_error(EG_ERR_UNSUPPORTED, "%s: fortran_order is not False: edgegrad reads C-order "
                   "arrays (use numpy.ascontiguousarray)", path);
  }
  if (s == EG_OK) s = parse_shape(path, h, t);
  free(h);
  *data_off = hoff + hlen;
  return s;
}

/* Reads exactly `n` bytes of the source into `buf`; *done counts the bytes read of `size`. */
static eg_status read_exact(const char *name, eg_read_fn read, void *user, void *buf, size_t n,
                            uint64_t *done, uint64_t size) {
  size_t got = 0;
  while (got < n) {
    const int64_t r = read(user, (unsigned char *)buf + got, n - got);
    if (r <= 0 || (uint64_t)r > n - got)
      return eg_error(EG_ERR_IO, "%s: read %llu of %llu bytes (%s)", name,
                      (unsigned long long)(*done + got), (unsigned long long)size,
                      r < 0 ? "the source failed" : r == 0 ? "it ended early"
                                                           : "the source overran the buffer");
    got += (size_t)r;
  }
  *done += n;
  return EG_OK;
}

/* Where the header of a .npy file ends, from its first `n` (<= 12) bytes; 0 when they do not
 * start one (parse_header then says why). */
static uint64_t header_end(const unsigned char *f, size_t n) {
  if (n < 10 || memcmp(f, "\x93NUMPY", 6) != 0) return 0;
  if (f[6] == 1) return 10 + ((uint64_t)f[8] | (uint64_t)f[9] << 8);
  if ((f[6] == 2 || f[6] == 3) && n >= 12)
    return 12 + ((uint64_t)f[8] | (uint64_t)f[9] << 8 | (uint64_t)f[10] << 16 |
                 (uint64_t)f[11] << 24);
  return 0;
}

/* The header's tensor, checked: its data is exactly the `size - off` bytes after the header. */
static eg_status check_data(const char *name, const eg_tensor *t, uint64_t size, size_t off,
                            size_t *need) {
  int64_t numel = eg_shape_numel(t->shape, t->rank, EG_MAX_NUMEL);
  char dims[160];
  if (numel < 0 || !eg_count_bytes(numel, eg_dtype_size(t->dtype), need))
    return eg_error(EG_ERR_FORMAT, "%s: shape %s too large: the product of the non-zero "
                    "dimensions is at most 2^40", name,
                    eg_fmt_ints(dims, sizeof dims, t->shape, t->rank));
  if (*need != size - off)
    return eg_error(EG_ERR_FORMAT, "%s: %llu data bytes but shape and dtype need %zu", name,
                    (unsigned long long)(size - off), *need);
  return EG_OK;
}

eg_status eg_npy_read(const char *name, uint64_t size, eg_read_fn read, void *user,
                      eg_tensor *out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_npy_read: out is NULL");
  memset(out, 0, sizeof *out);
  if (!name || !read) return eg_error(EG_ERR_ARGUMENT, "eg_npy_read: name or read is NULL");
  unsigned char pre[12];
  uint64_t done = 0;
  const size_t n = size < sizeof pre ? (size_t)size : sizeof pre;
  EG_TRY(read_exact(name, read, user, pre, n, &done, size));
  eg_tensor t = {0};
  size_t off = 0, need = 0;
  const uint64_t end = header_end(pre, n);
  if (end <= n) { /* not a .npy start, or a header too short to hold a dict: refused */
    eg_status s = parse_header(name, pre, n, &t, &off);
    return s != EG_OK ? s : eg_error(EG_ERR_FORMAT, "%s: header too short", name);
  }
  if (end > size)
    return eg_error(EG_ERR_FORMAT, "%s: header length %llu exceeds the file (%llu bytes)", name,
                    (unsigned long long)(end - (pre[6] == 1 ? 10 : 12)), (unsigned long long)size);
  /* the header whole (at most `size` bytes, which the caller let us read), then the data */
  unsigned char *head = malloc((size_t)end);
  if (!head) return eg_error(EG_ERR_NOMEM, "%s: out of memory", name);
  memcpy(head, pre, n);
  eg_status s = read_exact(name, read, user, head + n, (size_t)end - n, &done, size);
  if (s == EG_OK) s = parse_header(name, head, (size_t)end, &t, &off);
  free(head);
  if (s == EG_OK) s = check_data(name, &t, size, off, &need);
  if (s == EG_OK && !(t.data = malloc(need ? need : 1)))
    s = eg_error(EG_ERR_NOMEM, "%s: out of memory for %zu bytes", name, need);
  if (s == EG_OK) s = read_exact(name, read, user, t.data, need, &done, size);
  if (s != EG_OK) {
    free(t.data);
    return s;
  }
  *out = t;
  return EG_OK;
}

typedef struct mem_source {
  const unsigned char *p;
  size_t left;
} mem_source;

static int64_t mem_read(void *user, void *buf, size_t size) {
  mem_source *m = user;
  if (size > m->left) size = m->left;
  if (size) memcpy(buf, m->p, size);
  m->p += size;
  m->left -= size;
  return (int64_t)size;
}

eg_status eg_npy_parse(const char *path, const void *bytes, size_t size, eg_tensor *out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_npy_parse: out is NULL");
  memset(out, 0, sizeof *out);
  if (!path || (!bytes && size))
    return eg_error(EG_ERR_ARGUMENT, "eg_npy_parse: name or bytes is NULL");
  mem_source m = {bytes, size};
  return eg_npy_read(path, size, mem_read, &m, out);
}

static int64_t fd_read(void *user, void *buf, size_t size) {
  for (;;) {
    ssize_t r = read(*(const int *)user, buf, size);
    if (r >= 0 || errno != EINTR) return r;
  }
}

eg_status eg_npy_load(const char *path, eg_tensor *out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_npy_load: out is NULL");
  memset(out, 0, sizeof *out);
  if (!path) return eg_error(EG_ERR_ARGUMENT, "eg_npy_load: path is NULL");
  int fd;
  uint64_t size;
  EG_TRY(eg_file_open_read(path, &fd, &size));
  eg_status s = size > EG_NPY_MAX_FILE
                    ? eg_error(EG_ERR_FORMAT, "%s: size %llu bytes exceeds the limit %zu", path,
                               (unsigned long long)size, EG_NPY_MAX_FILE)
                    : eg_npy_read(path, size, fd_read, &fd, out); /* no second copy */
  close(fd);
  return s;
}

/* The tensor eg_npy_save can write: a dtype .npy knows, a rank in [0, EG_MAX_RANK], a shape
 * eg_tensor_numel counts (the readers' size rule), and data behind every byte of it. */
static eg_status check_savable(const char *path, const eg_tensor *t, const char **code,
                               size_t *bytes) {
  *code = NULL;
  for (size_t k = 0; k < NPY_NDTYPES; k++)
    if (npy_dtypes[k].dtype == t->dtype) *code = npy_dtypes[k].descr;
  if (!*code || t->rank < 0 || t->rank > EG_MAX_RANK)
    return eg_error(EG_ERR_ARGUMENT, "%s: cannot save a tensor of dtype %s (%d), rank %d: the "
                    "dtype must be an eg_dtype and the rank in [0, %d]", path,
                    eg_dtype_name(t->dtype), (int)t->dtype, (int)t->rank, EG_MAX_RANK);
  const int64_t numel = eg_tensor_numel(t);
  char dims[160];
  if (numel < 0 || !eg_count_bytes(numel, eg_dtype_size(t->dtype), bytes))
    return eg_error(EG_ERR_ARGUMENT, "%s: cannot save a tensor of shape %s: dimensions are in "
                    "[0, 2^40] and the non-zero ones multiply to at most 2^40", path,
                    eg_fmt_ints(dims, sizeof dims, t->shape, t->rank));
  if (*bytes && !t->data)
    return eg_error(EG_ERR_ARGUMENT, "%s: cannot save a tensor of shape %s: data is NULL (%zu "
                    "bytes to write)", path, eg_fmt_ints(dims, sizeof dims, t->shape, t->rank),
                    *bytes);
  return EG_OK;
}

eg_status eg_npy_save(const char *path, const eg_tensor *t) {
  if (!path || !t)
    return eg_error(EG_ERR_ARGUMENT, "eg_npy_save: %s is NULL", path ? "tensor" : "path");
  const char *code = NULL;
  size_t bytes = 0;
  EG_TRY(check_savable(path, t, &code, &bytes));
  char dict[256], shape[200] = "";
  size_t used = 0;
  for (int i = 0; i < t->rank; i++)
    used += (size_t)snprintf(shape + used, sizeof shape - used, "%lld,%s",
                             (long long)t->shape[i], i + 1 < t->rank ? " " : "");
  int n = snprintf(dict, sizeof dict, "{'descr': '%c%s', 'fortran_order': False, 'shape': (%s), }",
                   eg_dtype_size(t->dtype) == 1 ? '|' : '<', code, shape);
  /* Pad so that magic(6)+version(2)+len(2)+header is a multiple of 64, ending in '\n'. */
  size_t total = ((size_t)n + 10 + 1 + 63) & ~(size_t)63;
  size_t hlen = total - 10;
  char header[320];
  memset(header, ' ', sizeof header);
  memcpy(header, "\x93NUMPY\x01\x00", 8);
  header[8] = (char)(hlen & 0xff);
  header[9] = (char)(hlen >> 8);
  memcpy(header + 10, dict, (size_t)n);
  header[total - 1] = '\n';
  eg_file_part parts[2] = {{header, total}, {t->data, bytes}};
  return eg_file_write_atomic(path, parts, 2);
}

void eg_tensor_free(eg_tensor *t) {
  if (!t) return;
  free(t->data);
  t->data = NULL;
}
