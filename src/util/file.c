/* file.c — see file.h. */
#define _POSIX_C_SOURCE 200809L
#include "util/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

eg_status eg_file_read(const char *path, size_t max_size, void **data, size_t *size) {
  *data = NULL;
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return eg_error(EG_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return eg_error(EG_ERR_IO, "%s: not a regular file", path);
  }
  if ((unsigned long long)st.st_size > max_size) {
    fclose(f);
    return eg_error(EG_ERR_FORMAT, "%s: size %lld bytes exceeds the limit %zu", path,
                    (long long)st.st_size, max_size);
  }
  size_t n = (size_t)st.st_size;
  unsigned char *buf = malloc(n + 1); /* +1: a NUL for text parsers, and malloc(0) safety */
  if (!buf) {
    fclose(f);
    return eg_error(EG_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, n);
  }
  size_t got = fread(buf, 1, n, f);
  int err = ferror(f);
  fclose(f);
  if (got != n || err) {
    free(buf);
    return eg_error(EG_ERR_IO, "%s: read %zu of %zu bytes", path, got, n);
  }
  buf[n] = 0;
  *data = buf;
  *size = n;
  return EG_OK;
}

eg_status eg_file_write_atomic(const char *path, const eg_file_part *parts, int n_parts) {
  size_t len = strlen(path) + 32;
  char *tmp = malloc(len);
  if (!tmp) return eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    eg_status s = eg_error(EG_ERR_IO, "%s: cannot create (%s)", tmp, strerror(errno));
    free(tmp);
    return s;
  }
  int ok = 1;
  for (int i = 0; i < n_parts && ok; i++)
    ok = parts[i].size == 0 || fwrite(parts[i].data, 1, parts[i].size, f) == parts[i].size;
  ok = fflush(f) == 0 && ok;
  ok = fsync(fileno(f)) == 0 && ok;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    eg_status s = eg_error(EG_ERR_IO, "%s: cannot write (%s)", path, strerror(errno));
    remove(tmp);
    free(tmp);
    return s;
  }
  free(tmp);
  return EG_OK;
}

char *eg_path_sibling(const char *path, const char *name) {
  const char *slash = strrchr(path, '/');
  size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
  char *out = malloc(dir + strlen(name) + 1);
  if (!out) return NULL;
  memcpy(out, path, dir);
  strcpy(out + dir, name);
  return out;
}
