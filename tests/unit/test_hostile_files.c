/* test_hostile_files.c — how edgegrad opens, reads and writes files, against a hostile file
 * system: a FIFO, folder or device where a file is read (refused at once by eg_file_open_read and
 * by every reader, never waited on: an alarm fails the test if anything blocks); a file or
 * symbolic link planted where a writer might put its temporary file (at a predictable name, or
 * at its random one as if guessed), or a link at the output path (eg_file_write_atomic writes
 * through none); the permissions of new files under a
 * umask; no temporary file left after a failed write; and eg_npy_read streaming a .npy from a
 * source (same tensor as eg_npy_load, no byte read past the stated size, nothing allocated for
 * data a header claims but the size does not hold). The files are made at run time in a
 * temporary folder. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_files.h"

/* The message is one line that names `file` and contains `needle`. */
static void check_message(const char *file, const char *needle) {
  const char *msg = eg_last_error();
  EG_CHECK_MSG(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
  EG_CHECK_MSG(strstr(msg, file) != NULL, "message '%s' does not name %s", msg, file);
  EG_CHECK(strchr(msg, '\n') == NULL);
}

/* The whole of a small file as a string ("" when it cannot be read). */
static const char *contents(const char *path) {
  static char buf[256];
  buf[0] = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return buf;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* Entries of the scratch folder whose name holds ".tmp" (temporaries left behind). */
static int temporaries_left(void) {
  DIR *d = opendir(eg_test_dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp") != NULL;
  if (d) closedir(d);
  return n;
}

static eg_status write_text_atomic(const char *path, const char *text) {
  eg_file_part part = {text, strlen(text)};
  return eg_file_write_atomic(path, &part, 1);
}

/* ---- reading: only regular files, refused before anything can block ---- */

static void test_open_read_refuses_special_files(void) {
  char fifo[512], dir[512];
  snprintf(fifo, sizeof fifo, "%s", path_in("in.fifo"));
  snprintf(dir, sizeof dir, "%s", path_in("a_folder"));
  EG_CHECK(mkfifo(fifo, 0600) == 0);
  EG_CHECK(mkdir(dir, 0700) == 0);
  int fd = 123;
  uint64_t size = 7;
  EG_CHECK(eg_file_open_read(fifo, &fd, &size) == EG_ERR_IO);
  check_message(fifo, "not a regular file (fifo)");
  EG_CHECK(fd == -1 && size == 0);
  EG_CHECK(eg_file_open_read(dir, &fd, &size) == EG_ERR_IO);
  check_message(dir, "not a regular file (folder)");
  EG_CHECK(eg_file_open_read("/dev/null", &fd, &size) == EG_ERR_IO);
  check_message("/dev/null", "not a regular file (character device)");
  EG_CHECK(eg_file_open_read(path_in("missing"), &fd, &size) == EG_ERR_IO);
  check_message("missing", "cannot open (No such file or directory)");
  /* every reader of the library goes through it */
  eg_tensor t;
  EG_CHECK(eg_npy_load(fifo, &t) == EG_ERR_IO);
  check_message(fifo, "not a regular file (fifo)");
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(fifo, &m) != EG_OK && m == NULL);
  check_message(fifo, "not a regular file (fifo)");
  EG_CHECK(eg_model_load_compiled(fifo, &m) != EG_OK && m == NULL);
  check_message(fifo, "not a regular file (fifo)");
  EG_CHECK(eg_model_load(dir, &m) != EG_OK && m == NULL);
  check_message(dir, "not a regular file (folder)");
}

static void test_open_read_regular_file(void) {
  write_text("plain.txt", "twelve bytes");
  int fd = -1;
  uint64_t size = 0;
  EG_CHECK(eg_file_open_read(path_in("plain.txt"), &fd, &size) == EG_OK);
  EG_CHECK(size == 12);
  EG_CHECK(fd >= 0 && !(fcntl(fd, F_GETFL) & O_NONBLOCK)); /* handed back blocking */
  EG_CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
  char buf[16] = {0};
  EG_CHECK(fd >= 0 && read(fd, buf, sizeof buf) == 12 && memcmp(buf, "twelve bytes", 12) == 0);
  if (fd >= 0) close(fd);
  /* a symbolic link to a regular file is read through */
  EG_CHECK(symlink(path_in("plain.txt"), path_in("plain.link")) == 0);
  EG_CHECK(eg_file_open_read(path_in("plain.link"), &fd, &size) == EG_OK && size == 12);
  if (fd >= 0) close(fd);
}

/* ---- writing: a fresh temporary, never through a planted file or link ---- */

static void test_write_ignores_planted_temporaries(void) {
  char victim[512], out[512]; /* path_in's buffers rotate: keep copies */
  snprintf(victim, sizeof victim, "%s", path_in("victim.txt"));
  snprintf(out, sizeof out, "%s", path_in("out.egp"));
  write_text("victim.txt", "precious");
  /* the names a writer could predict: "<out>.tmp.<pid>" (ours: this process writes), "<out>.tmp",
   * "<out>.tmp.XXXXXX" literally; links to the victim and a regular file */
  char planted[3][64];
  snprintf(planted[0], sizeof planted[0], "out.egp.tmp.%ld", (long)getpid());
  snprintf(planted[1], sizeof planted[1], "out.egp.tmp");
  snprintf(planted[2], sizeof planted[2], "out.egp.tmp.XXXXXX");
  for (int k = 0; k < 2; k++) EG_CHECK(symlink(victim, path_in(planted[k])) == 0);
  write_text(planted[2], "someone else's");
  for (int round = 0; round < 3; round++) /* a fresh name each time */
    EG_CHECK(write_text_atomic(out, round == 2 ? "new program" : "older") == EG_OK);
  EG_CHECK(strcmp(contents(victim), "precious") == 0);
  EG_CHECK(strcmp(contents(out), "new program") == 0);
  struct stat st;
  EG_CHECK(lstat(out, &st) == 0 && S_ISREG(st.st_mode));
  for (int k = 0; k < 2; k++) EG_CHECK(lstat(path_in(planted[k]), &st) == 0 && S_ISLNK(st.st_mode));
  EG_CHECK(strcmp(contents(path_in(planted[2])), "someone else's") == 0);
  EG_CHECK(temporaries_left() == 3); /* the three planted, nothing of ours */
  for (int k = 0; k < 3; k++) unlink(path_in(planted[k]));
}

/* An attacker who guessed the temporary's random name: while `guess_target` is set, the next
 * temporary the writer asks to create ("<path>.tmp.", O_CREAT) first gets a symbolic link
 * (guess_hard: a hard link) to guess_target planted at its name; guess_at keeps that name.
 * This definition of open is the one the statically linked library calls; every call is passed
 * on unchanged to openat. */
static const char *guess_target;
static bool guess_hard;
static char guess_at[512];

int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & O_CREAT) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  if (guess_target && (flags & O_CREAT) && strstr(path, ".tmp.")) {
    snprintf(guess_at, sizeof guess_at, "%s", path);
    if ((guess_hard ? link(guess_target, path) : symlink(guess_target, path)) != 0)
      guess_at[0] = 0;
    guess_target = NULL;
  }
  return openat(AT_FDCWD, path, flags, mode);
}

/* The random name is no defence on its own: a link planted at it is not written through either
 * (O_CREAT | O_EXCL: the writer takes another name). */
static void test_write_ignores_guessed_temporary(void) {
  char victim[512], out[512];
  snprintf(victim, sizeof victim, "%s", path_in("guessed_victim.txt"));
  snprintf(out, sizeof out, "%s", path_in("guessed.out"));
  write_text("guessed_victim.txt", "precious");
  for (int hard = 0; hard < 2; hard++) {
    guess_hard = hard;
    guess_target = victim;
    EG_CHECK_MSG(write_text_atomic(out, hard ? "second" : "first") == EG_OK, "%s",
                 eg_last_error());
    EG_CHECK_MSG(guess_at[0] && guess_target == NULL, "no %s link planted at the temporary",
                 hard ? "hard" : "symbolic");
    EG_CHECK_MSG(strcmp(contents(victim), "precious") == 0, "written through a planted %s link",
                 hard ? "hard" : "symbolic");
    EG_CHECK(strcmp(contents(out), hard ? "second" : "first") == 0);
    if (guess_at[0]) unlink(guess_at);
  }
  guess_target = NULL;
}

static void test_write_replaces_link_at_output(void) {
  char victim[512], link[512];
  snprintf(victim, sizeof victim, "%s", path_in("target.txt"));
  snprintf(link, sizeof link, "%s", path_in("linked.out"));
  write_text("target.txt", "precious");
  EG_CHECK(symlink(victim, link) == 0);
  EG_CHECK(write_text_atomic(link, "replaced") == EG_OK);
  struct stat st;
  EG_CHECK(lstat(link, &st) == 0 && S_ISREG(st.st_mode)); /* the link itself was replaced */
  EG_CHECK(strcmp(contents(link), "replaced") == 0);
  EG_CHECK(strcmp(contents(victim), "precious") == 0);
}

static void test_write_mode_follows_umask(void) {
  static const mode_t masks[] = {022, 077, 027, 0};
  const mode_t old = umask(0);
  for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
    umask(masks[k]);
    const char *out = path_in("moded.out");
    EG_CHECK(write_text_atomic(out, "x") == EG_OK);
    struct stat st;
    EG_CHECK_MSG(stat(out, &st) == 0 && (st.st_mode & 0777) == (0666 & ~masks[k]),
                 "umask %03o: mode %03o", (unsigned)masks[k], (unsigned)(st.st_mode & 0777));
    unlink(out);
  }
  umask(old);
}

static void test_write_failure_leaves_nothing(void) {
  const int before = temporaries_left();
  /* a folder at the output path: the rename fails after the data was written */
  char dir[512];
  snprintf(dir, sizeof dir, "%s", path_in("busy.out"));
  EG_CHECK(mkdir(dir, 0700) == 0);
  EG_CHECK(write_text_atomic(dir, "data") == EG_ERR_IO);
  check_message(dir, "cannot write");
  EG_CHECK(strstr(eg_last_error(), ".tmp.") == NULL); /* the user's path, not the temporary's */
  EG_CHECK(temporaries_left() == before);
  /* a missing folder: nothing can be created */
  const char *lost = path_in("no/such/folder/x.out");
  EG_CHECK(write_text_atomic(lost, "data") == EG_ERR_IO);
  check_message(lost, "cannot create (No such file or directory)");
  EG_CHECK(strstr(eg_last_error(), ".tmp.") == NULL);
  /* a part without data */
  eg_file_part part = {NULL, 4};
  EG_CHECK(eg_file_write_atomic(path_in("null.out"), &part, 1) == EG_ERR_ARGUMENT);
  EG_CHECK(access(path_in("null.out"), F_OK) != 0);
  EG_CHECK(temporaries_left() == before);
}

/* ---- eg_npy_read: streamed, never past the stated size ---- */

typedef struct source {
  const unsigned char *p;
  size_t size, pos, chunk; /* chunk: most bytes handed out per call */
  size_t fail_at;          /* a read that would pass this offset fails (SIZE_MAX: never) */
} source;

static int64_t source_read(void *user, void *buf, size_t size) {
  source *s = user;
  if (size > s->chunk) size = s->chunk;
  if (size > s->size - s->pos) size = s->size - s->pos;
  if (s->pos + size > s->fail_at) return -1;
  memcpy(buf, s->p + s->pos, size);
  s->pos += size;
  return (int64_t)size;
}

static unsigned char *file_bytes(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  unsigned char *b = malloc(1 << 16);
  *n = f && b ? fread(b, 1, 1 << 16, f) : 0;
  if (f) fclose(f);
  return b;
}

static void test_npy_read_streams(void) {
  const char *path = EG_TEST_DATA "/tiny_step_inputs/input.npy";
  size_t n;
  unsigned char *bytes = file_bytes(path, &n);
  eg_tensor want, got;
  EG_CHECK(eg_npy_load(path, &want) == EG_OK);
  const size_t data = (size_t)eg_tensor_numel(&want) * eg_dtype_size(want.dtype);
  /* one byte per call, with trailing bytes the stated size excludes: read up to it, no further */
  unsigned char *longer = calloc(n + 100, 1);
  memcpy(longer, bytes, n);
  source s = {longer, n + 100, 0, 1, SIZE_MAX};
  EG_CHECK(eg_npy_read("one_by_one.npy", n, source_read, &s, &got) == EG_OK);
  EG_CHECK(s.pos == n);
  EG_CHECK(got.dtype == want.dtype && got.rank == want.rank &&
           memcmp(got.shape, want.shape, sizeof got.shape) == 0 &&
           memcmp(got.data, want.data, data) == 0);
  eg_tensor_free(&got);
  /* a source that fails inside the data */
  source f = {bytes, n, 0, 64, n - 8};
  EG_CHECK(eg_npy_read("failing.npy", n, source_read, &f, &got) == EG_ERR_IO);
  check_message("failing.npy", "read ");
  EG_CHECK(got.data == NULL);
  /* a source that ends before its stated size */
  source shortsrc = {bytes, n - 5, 0, 4096, SIZE_MAX};
  EG_CHECK(eg_npy_read("short.npy", n, source_read, &shortsrc, &got) == EG_ERR_IO);
  check_message("short.npy", "it ended early");
  /* a header claiming 2^32 floats in a 200-byte file: refused after the header, no data read */
  char hdr[128];
  int hl = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, "
                    "'shape': (65536, 65536), }\n");
  unsigned char claim[200] = "\x93NUMPY\x01\x00";
  claim[8] = (unsigned char)hl;
  memcpy(claim + 10, hdr, (size_t)hl);
  source c = {claim, sizeof claim, 0, 4096, SIZE_MAX};
  EG_CHECK(eg_npy_read("claims.npy", sizeof claim, source_read, &c, &got) == EG_ERR_FORMAT);
  check_message("claims.npy", "data bytes but shape and dtype need 17179869184");
  EG_CHECK(c.pos == 10 + (size_t)hl);
  /* a header longer than the stated size */
  source h = {bytes, n, 0, 4096, SIZE_MAX};
  EG_CHECK(eg_npy_read("cut.npy", 40, source_read, &h, &got) == EG_ERR_FORMAT);
  check_message("cut.npy", "exceeds the file (40 bytes)");
  EG_CHECK(h.pos <= 12);
  eg_tensor_free(&want);
  free(longer);
  free(bytes);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_hostile_files: a reader blocked for 20 s\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

int main(void) {
  if (!eg_test_dir_open("files")) return 1;
  signal(SIGALRM, on_alarm);
  alarm(20); /* a blocking open of a FIFO would hang the test: fail it instead */
  EG_RUN(test_open_read_refuses_special_files);
  EG_RUN(test_open_read_regular_file);
  EG_RUN(test_write_ignores_planted_temporaries);
  EG_RUN(test_write_ignores_guessed_temporary);
  EG_RUN(test_write_replaces_link_at_output);
  EG_RUN(test_write_mode_follows_umask);
  EG_RUN(test_write_failure_leaves_nothing);
  EG_RUN(test_npy_read_streams);
  alarm(0);
  eg_test_dir_close();
  return eg_test_summary();
}
