/* test_api_model_checks.c — what a training loop asks a model before it runs it, and what the
 * compiler entry points say of a model that is already compiled:
 *   - eg_model_input_classes gives, for the labels an nll_loss reads, exactly the bound the
 *     runtime enforces: labels C-1 run, labels C stop the run (judged by running the step, not
 *     by a number written here); for the compiled program of the same graph, the same C; for a
 *     float input, 0; NULLs and indices out of range give EG_ERR_ARGUMENT;
 *   - eg_compile_report_create, eg_model_save_compiled and eg_runtime_create_compiled on a
 *     model loaded from a .egp return EG_ERR_ARGUMENT naming its SoC (they crashed), and write
 *     nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_files.h"

static int input_index(const eg_model *m, const char *name) {
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    if (eg_model_input(m, i, &d) == EG_OK && strcmp(d.name, name) == 0) return i;
  }
  return -1;
}

/* One run of `m` with every input from tests/data/tiny_step_inputs, its labels all `label`. */
static eg_status run_with_labels(const eg_model *m, int64_t label) {
  eg_runtime *rt = NULL;
  eg_status s = eg_runtime_create(m, &rt);
  for (int i = 0; s == EG_OK && i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    eg_tensor t = {0};
    char path[512];
    eg_model_input(m, i, &d);
    snprintf(path, sizeof path, "%s/tiny_step_inputs/%s.npy", EG_TEST_DATA, d.name);
    s = eg_npy_load(path, &t);
    if (s == EG_OK && strcmp(d.name, "target") == 0)
      for (int64_t k = 0; k < eg_tensor_numel(&t); k++) ((int64_t *)t.data)[k] = label;
    if (s == EG_OK) s = eg_runtime_set_input(rt, d.name, &t);
    eg_tensor_free(&t);
  }
  if (s == EG_OK) s = eg_runtime_run(rt);
  eg_runtime_destroy(rt);
  return s;
}

static void test_classes(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  if (!m) return;
  const int target = input_index(m, "target"), input = input_index(m, "input");
  int64_t classes = -1, ignore = 0;
  EG_CHECK(target >= 0 && input >= 0);
  EG_CHECK_MSG(eg_model_input_classes(m, target, &classes, &ignore) == EG_OK, "%s",
               eg_last_error());
  EG_CHECK_MSG(classes > 1, "classes %lld", (long long)classes);
  EG_CHECK_MSG(ignore == -100, "ignore_index %lld (the exporter traces ATen's default)",
               (long long)ignore);
  EG_CHECK_MSG(run_with_labels(m, classes - 1) == EG_OK, "labels %lld: %s",
               (long long)(classes - 1), eg_last_error());
  EG_CHECK_MSG(run_with_labels(m, classes) == EG_ERR_RUNTIME, "labels %lld ran",
               (long long)classes);
  int64_t none = -1;
  EG_CHECK(eg_model_input_classes(m, input, &none, &ignore) == EG_OK && none == 0);
  EG_CHECK(eg_model_input_classes(m, -1, &none, &ignore) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_model_input_classes(m, eg_model_num_inputs(m), &none, &ignore) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_model_input_classes(NULL, 0, &none, &ignore) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_model_input_classes(m, target, NULL, &ignore) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_model_input_classes(m, target, &none, NULL) == EG_ERR_ARGUMENT);

  /* the compiled program of the same graph reads the same labels */
  EG_CHECK(eg_test_dir_open("model_checks"));
  const eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650");
  const char *egp = path_in("step.egp");
  eg_model *p = NULL;
  EG_CHECK_MSG(eg_model_save_compiled(m, &opt, egp) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(eg_model_load(egp, &p) == EG_OK, "%s", eg_last_error());
  int64_t compiled = -1;
  EG_CHECK(p && eg_model_input_classes(p, input_index(p, "target"), &compiled, &ignore) == EG_OK &&
           compiled == classes);
  eg_model_destroy(p);
  eg_model_destroy(m);
  EG_CHECK(eg_test_dir_close());
}

/* `got` is EG_ERR_ARGUMENT with one line naming `fn` and the program's SoC. */
static void expect_compiled(eg_status got, const char *fn) {
  const char *msg = eg_last_error();
  EG_CHECK_MSG(got == EG_ERR_ARGUMENT && strstr(msg, fn) && strstr(msg, "compiled for SM8650") &&
               !strchr(msg, '\n'), "%s: status %d, \"%s\"", fn, (int)got, msg);
}

static void test_compile_compiled(void) {
  EG_CHECK(eg_test_dir_open("model_checks"));
  eg_model *m = NULL, *p = NULL;
  const eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650");
  const char *egp = path_in("step.egp"), *again = path_in("again.egp");
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(m && eg_model_save_compiled(m, &opt, egp) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(eg_model_load(egp, &p) == EG_OK, "%s", eg_last_error());
  if (p) {
    eg_compile_report *rep = (eg_compile_report *)&rep; /* must be reset to NULL */
    expect_compiled(eg_compile_report_create(p, &opt, &rep), "eg_compile_report_create");
    EG_CHECK(rep == NULL);
    expect_compiled(eg_model_save_compiled(p, &opt, again), "eg_model_save_compiled");
    struct stat st;
    EG_CHECK(stat(again, &st) != 0);
    eg_runtime *rt = (eg_runtime *)&rt;
    expect_compiled(eg_runtime_create_compiled(p, &opt, &rt), "eg_runtime_create_compiled");
    EG_CHECK(rt == NULL);
    eg_runtime_options ro = EG_RUNTIME_OPTIONS_INIT;
    expect_compiled(eg_runtime_create_compiled_with_options(p, &opt, &ro, &rt),
                    "eg_runtime_create_compiled");
    /* the program itself still runs as it is */
    EG_CHECK_MSG(eg_runtime_create(p, &rt) == EG_OK, "%s", eg_last_error());
    eg_runtime_destroy(rt);
  }
  eg_model_destroy(p);
  eg_model_destroy(m);
  EG_CHECK(eg_test_dir_close());
}

int main(void) {
  EG_RUN(test_classes);
  EG_RUN(test_compile_compiled);
  return eg_test_summary();
}
