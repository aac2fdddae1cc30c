/* test_api_library.c — what the public API gives an app that embeds the library:
 *   - eg_version / eg_version_string are the header's (a library and header of one release);
 *   - the log callback gets the compiler's --dump-after text, one message per pass, and nothing
 *     is printed by the library (stdout is redirected to a file and must stay empty); with no
 *     callback the dump is dropped;
 *   - eg_runtime_options.num_threads: negative refused at creation, a positive count used for
 *     the run and the caller's OpenMP setting restored after it;
 *   - EG_ERR_STATE for reading an output or updating before any successful run. */
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_files.h"

static void test_version(void) {
  EG_CHECK(eg_version() == EG_VERSION_NUMBER);
  EG_CHECK(strcmp(eg_version_string(), EG_VERSION_STRING) == 0);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", EG_VERSION_MAJOR, EG_VERSION_MINOR, EG_VERSION_PATCH);
  EG_CHECK_MSG(strcmp(want, EG_VERSION_STRING) == 0, "%s vs %s", want, EG_VERSION_STRING);
}

typedef struct log_seen {
  int messages, debug, starts_after;
  size_t bytes;
} log_seen;

static void on_log(eg_log_level level, const char *message, void *user) {
  log_seen *s = user;
  s->messages++;
  s->debug += level == EG_LOG_DEBUG;
  s->starts_after += strncmp(message, "# after ", 8) == 0;
  s->bytes += strlen(message);
}

static void test_log_callback(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  if (!m) return;
  EG_CHECK(eg_test_dir_open("api_library"));
  /* stdout to a file: the library must write nothing there */
  fflush(stdout);
  const int saved = dup(1);
  FILE *cap = fopen(path_in("stdout.txt"), "w");
  EG_CHECK(cap && saved >= 0);
  if (!cap || saved < 0) return;
  dup2(fileno(cap), 1);

  log_seen seen = {0};
  eg_set_log_callback(on_log, &seen);
  eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650", .dump_after = "all");
  eg_compile_report *r = NULL;
  const eg_status s1 = eg_compile_report_create(m, &opt, &r);
  eg_compile_report_destroy(r);
  eg_set_log_callback(NULL, NULL);
  log_seen none = seen;
  r = NULL;
  const eg_status s2 = eg_compile_report_create(m, &opt, &r); /* no callback: dropped */
  eg_compile_report_destroy(r);

  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  fclose(cap);
  EG_CHECK(s1 == EG_OK && s2 == EG_OK);
  /* one message per pass, each the text IR after it */
  EG_CHECK_MSG(seen.messages == seen.debug && seen.starts_after == seen.messages &&
                   seen.messages >= 6 && seen.bytes > 1000,
               "%d messages (%d debug, %d dumps, %zu bytes)", seen.messages, seen.debug,
               seen.starts_after, seen.bytes);
  EG_CHECK(none.messages == seen.messages);
  FILE *f = fopen(path_in("stdout.txt"), "r");
  EG_CHECK(f && fgetc(f) == EOF);
  if (f) fclose(f);
  EG_CHECK(eg_test_dir_close());
  eg_model_destroy(m);
}

/* Sets every input of `rt` to zeros of its shape (buffer big enough for tiny_step). */
static bool set_zero_inputs(const eg_model *m, eg_runtime *rt) {
  static float zeros[4096];
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    if (eg_model_input(m, i, &d) != EG_OK) return false;
    eg_tensor t = d.tensor;
    if (eg_tensor_numel(&t) * (int64_t)eg_dtype_size(t.dtype) > (int64_t)sizeof zeros) return false;
    t.data = zeros;
    if (eg_runtime_set_input(rt, d.name, &t) != EG_OK) return false;
  }
  return true;
}

static void test_threads_and_state(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  if (!m) return;
  eg_runtime *rt = NULL;
  eg_runtime_options bad = EG_RUNTIME_OPTIONS(.num_threads = -1);
  EG_CHECK(eg_runtime_create_with_options(m, &bad, &rt) == EG_ERR_ARGUMENT && rt == NULL);
  EG_CHECK(strstr(eg_last_error(), "num_threads (-1)") != NULL);

  eg_runtime_options one = EG_RUNTIME_OPTIONS(.num_threads = 1);
  EG_CHECK_MSG(eg_runtime_create_with_options(m, &one, &rt) == EG_OK, "%s", eg_last_error());
  if (!rt) goto out;
  eg_tensor y;
  EG_CHECK(eg_runtime_output(rt, 0, &y) == EG_ERR_STATE);
  EG_CHECK(set_zero_inputs(m, rt));
  omp_set_num_threads(2);
  EG_CHECK_MSG(eg_runtime_run(rt) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(omp_get_max_threads() == 2, "the caller's thread count is %d after the run",
               omp_get_max_threads());
  EG_CHECK(eg_runtime_output(rt, 0, &y) == EG_OK);
out:
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_version);
  EG_RUN(test_log_callback);
  EG_RUN(test_threads_and_state);
  return eg_test_summary();
}
