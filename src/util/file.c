/* file.c — see file.h. */
#define _POSIX_C_SOURCE 200809L
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"

static const char *file_kind(mode_t m) {
  return S_ISDIR(m)    ? "folder"
         : S_ISFIFO(m) ? "fifo"
         : S_ISCHR(m)  ? "character device"
         : S_ISBLK(m)  ? "block device"
         : S_ISSOCK(m) ? "socket"
                       : "special file";
}

static eg_status not_regular(const char *path, mode_t m) {
  return eg_error(EG_ERR_IO, "%s: not a regular file (%s): edgegrad reads its files from regular "
                  "files only", path, file_kind(m));
}

eg_status eg_file_open_read(const char *path, int *fd, uint64_t *size) {
  if (fd) *fd = -1;
  if (size) *size = 0;
  if (!path || !fd || !size)
    return eg_error(EG_ERR_ARGUMENT, "eg_file_open_read: path, fd or size is NULL");
  /* stat first: a FIFO or device is refused without being opened (an open can block, or act:
   * a tape rewinds, a terminal becomes ours) */
  struct stat st;
  if (stat(path, &st) != 0) return eg_error(EG_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return not_regular(path, st.st_mode);
  /* The path may name something else by now: O_NONBLOCK keeps the open from waiting on a FIFO
   * swapped in since, and fstat checks what was actually opened. */
  int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (f < 0) return eg_error(EG_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  eg_status s = EG_OK;
  int flags = 0;
  if (fstat(f, &st) != 0) s = eg_error(EG_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  else if (!S_ISREG(st.st_mode)) s = not_regular(path, st.st_mode);
  else if ((flags = fcntl(f, F_GETFL)) == -1 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) == -1)
    s = eg_error(EG_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  if (s != EG_OK) {
    close(f);
    return s;
  }
  *fd = f;
  *size = (uint64_t)st.st_size;
  return EG_OK;
}

eg_status eg_file_read_fd(const char *path, int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (unsigned char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return eg_error(EG_ERR_IO, "%s: read %zu of %zu bytes (%s)", path, got, n,
                      r < 0 ? strerror(errno) : "the file ended early");
    got += (size_t)r;
  }
  return EG_OK;
}

eg_status eg_file_read(const char *path, size_t max_size, void **data, size_t *size) {
  *data = NULL;
  *size = 0;
  int fd;
  uint64_t n64;
  EG_TRY(eg_file_open_read(path, &fd, &n64));
  if (n64 > max_size) {
    close(fd);
    return eg_error(EG_ERR_FORMAT, "%s: size %llu bytes exceeds the limit %zu", path,
                    (unsigned long long)n64, max_size);
  }
  size_t n = (size_t)n64;
  unsigned char *buf = malloc(n + 1); /* +1: a NUL for text parsers, and malloc(0) safety */
  eg_status s = buf ? eg_file_read_fd(path, fd, buf, n)
                    : eg_error(EG_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, n);
  close(fd);
  if (s != EG_OK) {
    free(buf);
    return s;
  }
  buf[n] = 0;
  *data = buf;
  *size = n;
  return EG_OK;
}

/* ---- atomic writes ---- */

#define EG_TMP_SUFFIX ".tmp.XXXXXX"
#define EG_TMP_TRIES 100

static uint64_t mix64(uint64_t z) { /* splitmix64's finaliser */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Creates "<path>.tmp.XXXXXX" (six random letters or digits) with O_CREAT | O_EXCL: an existing
 * file or symbolic link (dangling or not) at that name makes the open fail, and another name is
 * tried, so nothing planted there is ever written through. Not mkstemp: its 0600 would need the
 * umask to widen, and reading the umask (umask() twice) races with other threads; open's mode
 * 0666 gets the umask applied by the kernel, as any new file. *tmp is malloc'ed. */
static eg_status create_temporary(const char *path, char **tmp, int *fd) {
  static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static _Atomic uint64_t counter;
  const size_t len = strlen(path);
  char *name = malloc(len + sizeof EG_TMP_SUFFIX);
  if (!name) return eg_error(EG_ERR_NOMEM, "%s: out of memory", path);
  memcpy(name, path, len);
  memcpy(name + len, EG_TMP_SUFFIX, sizeof EG_TMP_SUFFIX);
  char *x = name + len + sizeof EG_TMP_SUFFIX - 7;
  /* Unpredictable enough that another user cannot pre-create the name and stall a write (the
   * time in ns, the process, and addresses under ASLR); O_EXCL is what keeps writes safe. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const uint64_t seed = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
                        ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)name ^
                        ((uint64_t)(uintptr_t)&ts << 17);
  int f = -1;
  for (int k = 0; k < EG_TMP_TRIES && f < 0; k++) {
    uint64_t r = mix64(seed + atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ULL);
    for (int i = 0; i < 6; i++, r /= 62) x[i] = chars[r % 62];
    f = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (f < 0 && errno != EEXIST) break;
  }
  if (f < 0) {
    eg_status s = eg_error(EG_ERR_IO, "%s: cannot create (%s): a new file is written beside "
                           "it, then renamed over it", path, strerror(errno));
    free(name);
    return s;
  }
  *tmp = name;
  *fd = f;
  return EG_OK;
}

/* Writes all of `len` bytes; false on an error (errno set). */
static bool write_all(int fd, const void *p, size_t len) {
  const unsigned char *b = p;
  while (len) {
    ssize_t w = write(fd, b, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    b += w;
    len -= (size_t)w;
  }
  return true;
}

eg_status eg_file_write_atomic(const char *path, const eg_file_part *parts, int n_parts) {
  if (!path || (!parts && n_parts > 0) || n_parts < 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_file_write_atomic: path or parts is NULL, or n_parts "
                    "%d < 0", n_parts);
  for (int i = 0; i < n_parts; i++)
    if (parts[i].size && !parts[i].data)
      return eg_error(EG_ERR_ARGUMENT, "%s: part %d of %zu bytes has no data", path, i,
                      parts[i].size);
  char *tmp = NULL;
  int fd = -1;
  EG_TRY(create_temporary(path, &tmp, &fd));
  bool ok = true;
  for (int i = 0; i < n_parts && ok; i++) ok = write_all(fd, parts[i].data, parts[i].size);
  ok = ok && fsync(fd) == 0;
  int err = ok ? 0 : errno;
  if (close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && rename(tmp, path) != 0) ok = false, err = errno;
  if (!ok) unlink(tmp);
  free(tmp);
  if (!ok)
    return eg_error(EG_ERR_IO, "%s: cannot write (%s): the file, if it existed, is unchanged",
                    path, strerror(err ? err : EIO));
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
