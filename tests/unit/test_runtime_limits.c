/* test_runtime_limits.c — eg_runtime_options and eg_model_check_input, through the public API
 * only, on the tiny_step fixture:
 *   - no options (NULL or zeroed) is eg_runtime_create;
 *   - max_memory_bytes refuses with EG_ERR_LIMIT, *out NULL and one line giving the bytes
 *     needed and the limit; the boundary is exact (needed passes, needed - 1 fails), and a
 *     runtime under a limit runs like one without;
 *   - the compiled path (eg_runtime_create_compiled_with_options) honours the same limit;
 *   - eg_model_check_input says exactly what eg_runtime_set_input says, without a runtime. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgegrad.h"
#include "eg_test.h"

#define TINY EG_TEST_DATA "/tiny_step.json"

static eg_model *load_tiny(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(TINY, &m) == EG_OK, "%s", eg_last_error());
  return m;
}

/* Sets every input from tests/data/tiny_step_inputs and runs; 1 on success. */
static int run_tiny(const eg_model *m, eg_runtime *rt) {
  return eg_test_set_tiny_inputs(m, rt) == EG_OK && eg_runtime_run(rt) == EG_OK;
}

/* The bytes a refusal says are needed ("memory needed (N bytes"), or 0. */
static size_t needed_bytes(void) {
  const char *at = strstr(eg_last_error(), "memory needed (");
  return at ? (size_t)strtoull(at + strlen("memory needed ("), NULL, 10) : 0;
}

static void test_no_options_is_no_limit(void) {
  eg_model *m = load_tiny();
  if (!m) return;
  eg_runtime_options none = EG_RUNTIME_OPTIONS_INIT;
  eg_runtime *a = NULL, *b = NULL;
  EG_CHECK(eg_runtime_create_with_options(m, NULL, &a) == EG_OK && a);
  EG_CHECK(eg_runtime_create_with_options(m, &none, &b) == EG_OK && b);
  EG_CHECK(a && run_tiny(m, a));
  eg_runtime_destroy(a);
  eg_runtime_destroy(b);
  eg_model_destroy(m);
}

static void test_limit_refuses_before_allocating(void) {
  eg_model *m = load_tiny();
  if (!m) return;
  eg_runtime_options opt = EG_RUNTIME_OPTIONS(.max_memory_bytes = 1);
  eg_runtime *rt = (eg_runtime *)&opt; /* must be reset to NULL */
  EG_CHECK(eg_runtime_create_with_options(m, &opt, &rt) == EG_ERR_LIMIT);
  EG_CHECK(rt == NULL);
  const char *msg = eg_last_error();
  EG_CHECK_MSG(strstr(msg, "exceeds max_memory_bytes (1 bytes)") &&
                   strstr(msg, "activation arena") && !strchr(msg, '\n'),
               "%s", msg);
  size_t need = needed_bytes();
  EG_CHECK_MSG(need > 1, "%s", msg);
  /* the boundary is exact: `need` bytes are enough, one fewer is not */
  opt.max_memory_bytes = need - 1;
  EG_CHECK(eg_runtime_create_with_options(m, &opt, &rt) == EG_ERR_LIMIT && rt == NULL);
  EG_CHECK(needed_bytes() == need);
  opt.max_memory_bytes = need;
  EG_CHECK_MSG(eg_runtime_create_with_options(m, &opt, &rt) == EG_OK && rt, "%s", eg_last_error());
  /* and a runtime under a limit gives what an unlimited one gives */
  eg_runtime *free_rt = NULL;
  EG_CHECK(eg_runtime_create(m, &free_rt) == EG_OK);
  if (rt && free_rt && run_tiny(m, rt) && run_tiny(m, free_rt)) {
    for (int i = 0; i < eg_model_num_outputs(m); i++) {
      eg_tensor x, y;
      EG_CHECK(eg_runtime_output(rt, i, &x) == EG_OK && eg_runtime_output(free_rt, i, &y) == EG_OK);
      EG_CHECK(memcmp(x.data, y.data, (size_t)eg_tensor_numel(&x) * eg_dtype_size(x.dtype)) == 0);
    }
  } else {
    EG_CHECK_MSG(0, "run under a limit: %s", eg_last_error());
  }
  eg_runtime_destroy(rt);
  eg_runtime_destroy(free_rt);
  eg_model_destroy(m);
}

static void test_limit_on_the_compiled_path(void) {
  eg_model *m = load_tiny();
  if (!m) return;
  eg_compile_options copt = EG_COMPILE_OPTIONS(.soc = "SM8650");
  eg_runtime_options opt = EG_RUNTIME_OPTIONS(.max_memory_bytes = 64);
  eg_runtime *rt = NULL;
  EG_CHECK(eg_runtime_create_compiled_with_options(m, &copt, &opt, &rt) == EG_ERR_LIMIT);
  EG_CHECK(rt == NULL);
  EG_CHECK_MSG(strstr(eg_last_error(), "exceeds max_memory_bytes (64 bytes)"), "%s",
               eg_last_error());
  opt.max_memory_bytes = (size_t)1 << 30;
  EG_CHECK_MSG(eg_runtime_create_compiled_with_options(m, &copt, &opt, &rt) == EG_OK, "%s",
               eg_last_error());
  EG_CHECK(rt && run_tiny(m, rt));
  eg_runtime_destroy(rt);
  rt = NULL;
  EG_CHECK(eg_runtime_create_compiled_with_options(m, &copt, NULL, &rt) == EG_OK && rt);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

static void test_check_input_matches_set_input(void) {
  eg_model *m = load_tiny();
  if (!m) return;
  eg_runtime *rt = NULL;
  EG_CHECK(eg_runtime_create(m, &rt) == EG_OK);
  float data[2 * 1 * 12 * 12] = {0};
  eg_tensor good = {.dtype = EG_DTYPE_FLOAT32, .rank = 4, .shape = {2, 1, 12, 12}, .data = data};
  eg_tensor wrong = good;
  wrong.shape[3] = 11;
  EG_CHECK(eg_model_check_input(m, "input", &good) == EG_OK);
  const eg_tensor *cases[] = {&wrong, &good};
  const char *names[] = {"input", "nosuch"};
  for (int k = 0; k < 2; k++) {
    char said[512];
    EG_CHECK(eg_model_check_input(m, names[k], cases[k]) == EG_ERR_ARGUMENT);
    snprintf(said, sizeof said, "%s", eg_last_error());
    EG_CHECK(rt && eg_runtime_set_input(rt, names[k], cases[k]) == EG_ERR_ARGUMENT);
    EG_CHECK_MSG(strcmp(said, eg_last_error()) == 0, "check: %s / set: %s", said, eg_last_error());
  }
  EG_CHECK(strstr(eg_last_error(), "input nosuch: no such input") != NULL);
  EG_CHECK(eg_model_check_input(NULL, "input", &good) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_model_check_input(m, NULL, &good) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_model_check_input(m, "input", NULL) == EG_ERR_ARGUMENT);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_no_options_is_no_limit);
  EG_RUN(test_limit_refuses_before_allocating);
  EG_RUN(test_limit_on_the_compiled_path);
  EG_RUN(test_check_input_matches_set_input);
  return eg_test_summary();
}
