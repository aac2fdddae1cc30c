/* arrays.c — named arrays from a folder of .npy files or an .npz archive (arrays.h).
 *
 * An .npz member is bounded before it is read: its uncompressed size (from the archive's
 * directory) must be at most EG_ARRAYS_MAX_MEMBER, and libzip must hand back exactly that many
 * bytes (it checks the CRC at the member's end); then eg_npy_parse checks the array as for a
 * file. Encrypted members are refused by libzip (no password is given). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#include "arrays.h"
#include "cli.h"
#include "outdir.h"

#define EG_ARRAYS_MAX_MEMBER ((zip_uint64_t)16 << 30)

struct arrays {
  const char *path, *opt;
  zip_t *zip; /* NULL: a folder */
};

int arrays_open(const char *path, const char *opt, arrays **out) {
  *out = NULL;
  struct stat st;
  if (stat(path, &st) != 0)
    return fail(EXIT_USAGE, "train: %s %s: not a folder nor an .npz archive (%s): give a folder "
                "of <input>.npy files or a numpy.savez archive", opt, path, strerror(errno));
  arrays *a = calloc(1, sizeof *a);
  if (!a) return fail(EXIT_FAIL, "train: out of memory");
  a->path = path;
  a->opt = opt;
  if (!S_ISDIR(st.st_mode)) {
    int err = 0;
    if (!(a->zip = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &err))) {
      zip_error_t ze;
      zip_error_init_with_code(&ze, err);
      int rc = fail(EXIT_USAGE, "train: %s %s: not a folder nor a readable .npz archive (%s): "
                    "give a folder of <input>.npy files or a numpy.savez archive", opt, path,
                    zip_error_strerror(&ze));
      zip_error_fini(&ze);
      free(a);
      return rc;
    }
  }
  *out = a;
  return 0;
}

void arrays_where(const arrays *a, const char *name, char *buf, size_t size) {
  if (a->zip) snprintf(buf, size, "%s[%s.npy]", a->path, name);
  else snprintf(buf, size, "%s/%s.npy", a->path, name);
}

/* Member <name>.npy of the archive, parsed. */
static int get_member(const arrays *a, const char *name, const char *why, eg_tensor *out) {
  char where[1200], member[600];
  arrays_where(a, name, where, sizeof where);
  snprintf(member, sizeof member, "%s.npy", name);
  const zip_int64_t at = zip_name_locate(a->zip, member, 0);
  if (at < 0) return fail(EXIT_USAGE, "train: data %s: missing: %s", where, why);
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(a->zip, (zip_uint64_t)at, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    return fail(EXIT_USAGE, "train: data %s: unreadable member (%s)", where,
                zip_strerror(a->zip));
  if (st.size > EG_ARRAYS_MAX_MEMBER)
    return fail(EXIT_USAGE, "train: data %s: %llu bytes uncompressed: a member is at most "
                "%llu bytes", where, (unsigned long long)st.size,
                (unsigned long long)EG_ARRAYS_MAX_MEMBER);
  unsigned char *bytes = malloc((size_t)st.size + 1);
  if (!bytes) return fail(EXIT_FAIL, "train: data %s: out of memory (%llu bytes)", where,
                          (unsigned long long)st.size);
  zip_file_t *zf = zip_fopen_index(a->zip, (zip_uint64_t)at, 0);
  int rc = 0;
  if (!zf) {
    rc = fail(EXIT_USAGE, "train: data %s: cannot open the member (%s)", where,
              zip_strerror(a->zip));
  } else {
    zip_uint64_t got = 0;
    zip_int64_t n = 1;
    while (got < st.size && (n = zip_fread(zf, bytes + got, st.size - got)) > 0)
      got += (zip_uint64_t)n;
    unsigned char extra;
    /* a read past the stated size must give nothing more (and makes libzip check the CRC) */
    if (n >= 0 && got == st.size) n = zip_fread(zf, &extra, 1);
    if (n != 0 || got != st.size)
      rc = fail(EXIT_USAGE, "train: data %s: the member is damaged (%s; %llu of %llu bytes "
                "read): the archive is truncated or altered", where,
                n < 0 ? zip_file_strerror(zf) : "size differs from the directory's",
                (unsigned long long)got, (unsigned long long)st.size);
    zip_fclose(zf);
  }
  if (rc == 0) {
    eg_status s = eg_npy_parse(where, bytes, (size_t)st.size, out);
    if (s != EG_OK) rc = fail_status(s);
  }
  free(bytes);
  return rc;
}

int arrays_get(const arrays *a, const char *name, const char *why, eg_tensor *out) {
  memset(out, 0, sizeof *out);
  if (!outdir_name_ok(name))
    return fail(EXIT_USAGE, "train: input %s: not usable as a file name in a data folder", name);
  if (a->zip) return get_member(a, name, why, out);
  char *path = outdir_join(a->path, name, ".npy");
  if (!path) return fail(EXIT_FAIL, "train: out of memory");
  struct stat st;
  int rc = 0;
  if (stat(path, &st) != 0) {
    rc = fail(EXIT_USAGE, "train: data %s: missing: %s", path, why);
  } else {
    eg_status s = eg_npy_load(path, out);
    if (s != EG_OK) rc = fail_status(s);
  }
  free(path);
  return rc;
}

void arrays_close(arrays *a) {
  if (!a) return;
  if (a->zip) zip_discard(a->zip);
  free(a);
}
