/* replay_main.c — runs a fuzz target's LLVMFuzzerTestOneInput over saved inputs, without
 * libFuzzer: the ctest tests fuzz/replay_<target> replay the seed corpus and
 * tests/fuzz/crashes/<target>/ with it, in the release and the ASan+UBSan builds.
 *
 *   replay_<target> PATH...   each PATH a file, or a folder whose files (not starting with '.')
 *                             are replayed in name order
 *
 * With EG_FUZZ_VERBOSE set, each input's last error message (eg_last_error, "" when nothing
 * failed) is printed after it, to see how far an input gets.
 *
 * Exit status 0 when every input ran (a crash aborts, under the sanitizers with their report);
 * 1 when a path cannot be read. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *grown = realloc(buf, cap *= 2);
      if (!grown) free(buf);
      buf = grown;
    }
  }
  int err = ferror(f);
  fclose(f);
  if (!buf || err) {
    fprintf(stderr, "%s: cannot read\n", path);
    free(buf);
    return 1;
  }
  /* An exact-size copy, so ASan sees a read past the input's end. */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    free(buf);
    return 1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  if (getenv("EG_FUZZ_VERBOSE")) printf("%s: %s\n", path, eg_last_error());
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return 1;
  }
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char **grown = realloc(names, (n + 1) * sizeof *names);
    if (!grown) break;
    names = grown;
    if (!(names[n] = strdup(e->d_name))) break;
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    rc |= replay_file(path);
    (*count)++;
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      rc = 1;
    } else if (S_ISDIR(st.st_mode)) {
      rc |= replay_dir(argv[i], &count);
    } else {
      rc |= replay_file(argv[i]);
      count++;
    }
  }
  printf("replayed %d input%s\n", count, count == 1 ? "" : "s");
  return rc;
}
