/* npy.c — NumPy .npy reader and writer (public API: eg_npy_load, eg_npy_save).
 *
 * eg_npy_parse reads one held in memory (an .npz member), eg_npy_load a file.
 *
 * Format: "\x93NUMPY", major, minor (1, 2 or 3), header length (u16 LE for 1.x, u32 LE for
 * 2.x/3.x), then an ASCII Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a '\n', then the raw data. We accept little-endian (or byte-order-free)
 * descrs of the dtypes edgegrad knows, C order only, shapes within util/checked.h's rule (each
 * dimension in [0, 2^40], the non-zero ones multiplying to at most 2^40), and exactly
 * numel*itemsize data bytes. The header is copied and NUL-terminated before it is parsed. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

eg_status eg_npy_parse(const char *path, const void *bytes, size_t size, eg_tensor *out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_npy_parse: out is NULL");
  memset(out, 0, sizeof *out);
  if (!path || (!bytes && size))
    return eg_error(EG_ERR_ARGUMENT, "eg_npy_parse: name or bytes is NULL");
  eg_tensor t = {0};
  size_t off = 0;
  eg_status s = parse_header(path, bytes, size, &t, &off);
  if (s == EG_OK) {
    int64_t numel = eg_shape_numel(t.shape, t.rank, EG_MAX_NUMEL);
    size_t need = 0;
    char dims[160];
    if (numel < 0 || !eg_count_bytes(numel, eg_dtype_size(t.dtype), &need))
      s = eg_error(EG_ERR_FORMAT, "%s: shape %s too large: the product of the non-zero "
                   "dimensions is at most 2^40", path, eg_fmt_ints(dims, sizeof dims, t.shape,
                                                                  t.rank));
    else if (need != size - off)
      s = eg_error(EG_ERR_FORMAT, "%s: %zu data bytes but shape and dtype need %zu", path,
                   size - off, need);
    else if (!(t.data = malloc(need ? need : 1)))
      s = eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
    else
      memcpy(t.data, (const unsigned char *)bytes + off, need);
  }
  if (s == EG_OK) *out = t;
  return s;
}

eg_status eg_npy_load(const char *path, eg_tensor *out) {
  if (out) memset(out, 0, sizeof *out);
  void *data;
  size_t size;
  EG_TRY(eg_file_read(path, EG_NPY_MAX_FILE, &data, &size));
  eg_status s = eg_npy_parse(path, data, size, out);
  free(data);
  return s;
}

eg_status eg_npy_save(const char *path, const eg_tensor *t) {
  const char *code = NULL;
  for (size_t k = 0; k < NPY_NDTYPES; k++)
    if (npy_dtypes[k].dtype == t->dtype) code = npy_dtypes[k].descr;
  if (!code || t->rank < 0 || t->rank > EG_MAX_RANK)
    return eg_error(EG_ERR_ARGUMENT, "%s: cannot save a tensor of dtype %s, rank %d", path,
                    eg_dtype_name(t->dtype), t->rank);
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
  eg_file_part parts[2] = {{header, total},
                           {t->data, (size_t)eg_tensor_numel(t) * eg_dtype_size(t->dtype)}};
  return eg_file_write_atomic(path, parts, 2);
}

void eg_tensor_free(eg_tensor *t) {
  if (!t) return;
  free(t->data);
  t->data = NULL;
}
