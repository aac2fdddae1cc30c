/* test_npu_dump.c — eg_runtime_options.dump_partitions_dir through the public API, on
 * tiny_step (the files' contents are checked against PyTorch by
 * tests/cli/test_dump_partitions.sh):
 *   - refused at creation with one line and *out NULL, creating nothing: a runtime without NPU
 *     partitions (not compiled; compiled for SM8350, which has no float path), a folder whose
 *     parent does not exist, a path that is a file, "";
 *   - compiled for SM8650, a run makes the folder and one per partition, each with .npy files
 *     that load; the option's string is copied at creation;
 *   - a run whose partition folder is blocked by a file fails with EG_ERR_IO naming it. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edgegrad.h"
#include "eg_test.h"

#define TINY EG_TEST_DATA "/tiny_step.json"

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* The .npy files in `dir` that eg_npy_load reads; -1 if `dir` is no folder. */
static int npy_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    const size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".npy") != 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    eg_tensor t;
    if (eg_npy_load(path, &t) == EG_OK) n++;
    eg_tensor_free(&t);
  }
  closedir(d);
  return n;
}

/* Creation with the dump folder `dir`, compiled for `soc` (NULL: not compiled). */
static eg_status create(const eg_model *m, const char *soc, const char *dir, eg_runtime **rt) {
  const eg_runtime_options opt = EG_RUNTIME_OPTIONS(.dump_partitions_dir = dir);
  const eg_compile_options copt = EG_COMPILE_OPTIONS(.soc = soc);
  return soc ? eg_runtime_create_compiled_with_options(m, &copt, &opt, rt)
             : eg_runtime_create_with_options(m, &opt, rt);
}

static void refused(const eg_model *m, const char *soc, const char *dir, const char *needle) {
  eg_runtime *rt = (eg_runtime *)&rt;
  const eg_status s = create(m, soc, dir, &rt);
  EG_CHECK_MSG(s == EG_ERR_ARGUMENT && rt == NULL, "%s %s: status %d", soc ? soc : "cpu", dir,
               (int)s);
  EG_CHECK_MSG(strstr(eg_last_error(), needle) && !strchr(eg_last_error(), '\n'),
               "%s: message %s, wanted %s", dir, eg_last_error(), needle);
  eg_runtime_destroy(rt);
}

static void test_refusals(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(TINY, &m) == EG_OK);
  if (!m) return;
  refused(m, NULL, "npu_dump_cpu", "runs no NPU partition (not compiled");
  EG_CHECK(!exists("npu_dump_cpu"));
  refused(m, "SM8350", "npu_dump_cpu", "runs no NPU partition (compiled for SM8350");
  EG_CHECK(!exists("npu_dump_cpu"));
  refused(m, "SM8650", "npu_dump_none/dump", "cannot create (folder npu_dump_none does not exist)");
  EG_CHECK(!exists("npu_dump_none"));
  FILE *f = fopen("npu_dump_file", "wb");
  EG_CHECK(f && fclose(f) == 0);
  refused(m, "SM8650", "npu_dump_file", "exists and is not a folder");
  refused(m, "SM8650", "npu_dump_file/dump", "(folder npu_dump_file is not a folder)");
  refused(m, "SM8650", "", "expected a folder");
  remove("npu_dump_file");
  eg_model_destroy(m);
}

static void test_dump_and_blocked_folder(void) {
  eg_model *m = NULL;
  eg_runtime *rt = NULL;
  char dir[64] = "npu_dump_XXXXXX";
  EG_CHECK(eg_model_load(TINY, &m) == EG_OK && mkdtemp(dir));
  char given[80];
  snprintf(given, sizeof given, "%s/dump", dir);
  eg_status s = m ? create(m, "SM8650", given, &rt) : EG_ERR_ARGUMENT;
  EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
  if (s != EG_OK) goto out;
  given[0] = 'X'; /* the runtime keeps its own copy */
  EG_CHECK(eg_test_set_tiny_inputs(m, rt) == EG_OK);
  char path[128];
  snprintf(path, sizeof path, "%s/dump", dir);
  EG_CHECK_MSG(!exists(path), "%s made before the first run", path);
  EG_CHECK_MSG(eg_runtime_run(rt) == EG_OK, "%s", eg_last_error());
  snprintf(path, sizeof path, "%s/dump/partition_0", dir);
  EG_CHECK_MSG(npy_files(path) >= 2, "%s: %d .npy files", path, npy_files(path));
  /* a file where the folder goes: the next run fails naming it, the files stay */
  char blocked[160], moved[160];
  snprintf(moved, sizeof moved, "%s/moved", dir);
  EG_CHECK(rename(path, moved) == 0);
  snprintf(blocked, sizeof blocked, "%s", path);
  FILE *f = fopen(blocked, "wb");
  EG_CHECK(f && fclose(f) == 0);
  EG_CHECK(eg_runtime_run(rt) == EG_ERR_IO);
  EG_CHECK_MSG(strstr(eg_last_error(), blocked) && strstr(eg_last_error(), "in the way") &&
                   !strchr(eg_last_error(), '\n'),
               "%s", eg_last_error());
  remove(blocked);
  EG_CHECK(npy_files(moved) >= 2);
out:
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_refusals);
  EG_RUN(test_dump_and_blocked_folder);
  return eg_test_summary();
}
