/* arrays.c — named arrays from a folder of .npy files or an .npz archive (arrays.h).
 *
 * An array is bounded before it is read: its stated size (a file's; a member's uncompressed
 * size from the archive's directory) must be at most EG_ARRAYS_MAX_MEMBER and fit the budget.
 * eg_npy_read then reads exactly that many bytes (a member that inflates to more, or to less,
 * is refused: after the stated size libzip must give nothing more, and it checks the CRC at the
 * member's end). Encrypted members are refused by libzip (no password is given). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "arrays.h"
#include "cli.h"
#include "outdir.h"

#define EG_ARRAYS_MAX_MEMBER ((zip_uint64_t)16 << 30)

struct arrays {
  const char *path, *opt;
  size_t *budget; /* NULL or 0 in it: no limit */
  zip_t *zip;     /* NULL: a folder */
};

/* The archive at `path`, opened only when it is a regular file. */
static int open_zip(arrays *a) {
  int fd, err = 0;
  uint64_t size;
  if (eg_file_open_read(a->path, &fd, &size) != EG_OK)
    return fail(EXIT_USAGE, "train: %s %s", a->opt, eg_last_error()); /* "<path>: <why>" */
  if ((a->zip = zip_fdopen(fd, ZIP_CHECKCONS, &err))) return 0; /* the archive owns fd now */
  close(fd);
  zip_error_t ze;
  zip_error_init_with_code(&ze, err);
  int rc = fail(EXIT_USAGE, "train: %s %s: not a folder nor a readable .npz archive (%s): give a "
                "folder of <input>.npy files or a numpy.savez archive", a->opt, a->path,
                zip_error_strerror(&ze));
  zip_error_fini(&ze);
  return rc;
}

int arrays_open(const char *path, const char *opt, size_t *budget, arrays **out) {
  *out = NULL;
  struct stat st;
  if (stat(path, &st) != 0)
    return fail(EXIT_USAGE, "train: %s %s: not a folder nor an .npz archive (%s): give a folder "
                "of <input>.npy files or a numpy.savez archive", opt, path, strerror(errno));
  arrays *a = calloc(1, sizeof *a);
  if (!a) return fail(EXIT_FAIL, "train: out of memory");
  a->path = path;
  a->opt = opt;
  a->budget = budget;
  int rc = S_ISDIR(st.st_mode) ? 0 : open_zip(a);
  if (rc) {
    free(a);
    return rc;
  }
  *out = a;
  return 0;
}

void arrays_where(const arrays *a, const char *name, char *buf, size_t size) {
  if (a->zip) snprintf(buf, size, "%s[%s.npy]", a->path, name);
  else snprintf(buf, size, "%s/%s.npy", a->path, name);
}

/* Takes the `size` bytes array `where` states it holds (`kind`: how they are counted) from the
 * budget, before any is read: at most EG_ARRAYS_MAX_MEMBER, and less than the budget left. */
static int take_bytes(const arrays *a, const char *where, uint64_t size, const char *kind) {
  if (size > EG_ARRAYS_MAX_MEMBER)
    return fail(EXIT_USAGE, "train: data %s: %llu bytes%s: an array is at most %llu bytes",
                where, (unsigned long long)size, kind, (unsigned long long)EG_ARRAYS_MAX_MEMBER);
  if (!a->budget || !*a->budget) return 0;
  if (size >= *a->budget)
    return fail(EXIT_USAGE, "train: data %s: %llu bytes%s, and --max-memory has %zu bytes left "
                "for the data and the runtime together: raise --max-memory or give less data",
                where, (unsigned long long)size, kind, *a->budget);
  *a->budget -= (size_t)size;
  return 0;
}

/* eg_npy_read's source over an archive member; remembers a libzip error and the bytes read. */
typedef struct member_source {
  zip_file_t *zf;
  uint64_t got;
  bool failed;
} member_source;

static int64_t member_read(void *user, void *buf, size_t size) {
  member_source *m = user;
  zip_int64_t n = zip_fread(m->zf, buf, size);
  if (n < 0) m->failed = true;
  else m->got += (uint64_t)n;
  return n;
}

/* Member <name>.npy of the archive, streamed into *out. */
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
  int rc = take_bytes(a, where, st.size, " uncompressed");
  if (rc) return rc;
  member_source src = {zip_fopen_index(a->zip, (zip_uint64_t)at, 0), 0, false};
  if (!src.zf)
    return fail(EXIT_USAGE, "train: data %s: cannot open the member (%s)", where,
                zip_strerror(a->zip));
  eg_status s = eg_npy_read(where, st.size, member_read, &src, out);
  unsigned char extra;
  /* a read past the stated size must give nothing more (and makes libzip check the CRC) */
  if (s == EG_OK && member_read(&src, &extra, 1) != 0) s = EG_ERR_IO;
  if (s == EG_ERR_IO)
    rc = fail(EXIT_USAGE, "train: data %s: the member is damaged (%s; %llu of %llu bytes "
              "read): the archive is truncated or altered", where,
              src.failed ? zip_file_strerror(src.zf) : "size differs from the directory's",
              (unsigned long long)src.got, (unsigned long long)st.size);
  else if (s != EG_OK)
    rc = fail_status(s);
  if (rc) eg_tensor_free(out);
  zip_fclose(src.zf);
  return rc;
}

static int64_t fd_read(void *user, void *buf, size_t size) {
  for (;;) {
    ssize_t r = read(*(const int *)user, buf, size);
    if (r >= 0 || errno != EINTR) return r;
  }
}

/* DIR/<name>.npy, streamed into *out. */
static int get_file(const arrays *a, const char *path, const char *why, eg_tensor *out) {
  struct stat st;
  if (stat(path, &st) != 0) return fail(EXIT_USAGE, "train: data %s: missing: %s", path, why);
  int fd;
  uint64_t size;
  if (eg_file_open_read(path, &fd, &size) != EG_OK)
    return fail(EXIT_USAGE, "train: data %s", eg_last_error()); /* "<path>: <why>" */
  int rc = take_bytes(a, path, size, "");
  eg_status s = rc ? EG_OK : eg_npy_read(path, size, fd_read, &fd, out);
  close(fd);
  return rc ? rc : s == EG_OK ? 0 : fail_status(s);
}

int arrays_get(const arrays *a, const char *name, const char *why, eg_tensor *out) {
  memset(out, 0, sizeof *out);
  if (!outdir_name_ok(name))
    return fail(EXIT_USAGE, "train: input %s: not usable as a file name in a data folder", name);
  if (a->zip) return get_member(a, name, why, out);
  char *path = outdir_join(a->path, name, ".npy");
  if (!path) return fail(EXIT_FAIL, "train: out of memory");
  int rc = get_file(a, path, why, out);
  free(path);
  return rc;
}

void arrays_close(arrays *a) {
  if (!a) return;
  if (a->zip) zip_discard(a->zip);
  free(a);
}

int arrays_read_inputs(const char *src, const char *opt, size_t *budget, const eg_model *m,
                       eg_tensor *files, char **where, eg_trainer_array *out, int *n) {
  arrays *arr;
  int rc = arrays_open(src, opt, budget, &arr);
  for (int i = 0; rc == 0 && i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    eg_model_input(m, i, &d);
    if (d.role != EG_ROLE_DATA && d.role != EG_ROLE_LABEL) continue;
    char why[400], at[1200];
    snprintf(why, sizeof why, "input %s (%s) needs its examples there", d.name,
             eg_dtype_name(d.tensor.dtype));
    arrays_where(arr, d.name, at, sizeof at);
    rc = arrays_get(arr, d.name, why, &files[*n]);
    if (rc == 0 && !(where[*n] = strdup(at))) rc = fail(EXIT_FAIL, "train: out of memory");
    if (rc) break;
    out[*n] = (eg_trainer_array)EG_TRAINER_ARRAY(d.name, files[*n], where[*n]);
    (*n)++;
  }
  arrays_close(arr);
  return rc;
}
