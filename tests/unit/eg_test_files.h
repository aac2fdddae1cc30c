/* eg_test_files.h — a scratch folder for C unit tests that write the files they load
 * (include after eg_test.h).
 *
 *   eg_test_dir_open(tag)        makes /tmp/eg_test_<tag>_<pid>; false when it cannot
 *   eg_test_dir_close()          removes it and everything in it; false when it cannot
 *   path_in(name)                "<dir>/<name>" (one of four rotating buffers)
 *   write_bytes(name, data, n)   writes the file <dir>/<name>
 *   write_text(name, text)       the same for a NUL-terminated text */
#ifndef EG_TEST_FILES_H
#define EG_TEST_FILES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char eg_test_dir[256];

static inline bool eg_test_dir_open(const char *tag) {
  snprintf(eg_test_dir, sizeof eg_test_dir, "/tmp/eg_test_%s_%ld", tag, (long)getpid());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", eg_test_dir);
  return system(cmd) == 0;
}

static inline bool eg_test_dir_close(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", eg_test_dir);
  return system(cmd) == 0;
}

static inline const char *path_in(const char *name) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", eg_test_dir, name);
  return buf[k];
}

static inline void write_bytes(const char *name, const void *data, size_t n) {
  FILE *f = fopen(path_in(name), "wb");
  fwrite(data, 1, n, f);
  fclose(f);
}

static inline void write_text(const char *name, const char *text) {
  FILE *f = fopen(path_in(name), "wb");
  fputs(text, f);
  fclose(f);
}

#endif
