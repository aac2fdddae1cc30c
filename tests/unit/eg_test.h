/* eg_test.h — the tiny harness every C unit test uses.
 *
 * A test file defines `static void test_xxx(void)` functions and a main() that calls
 * EG_RUN(test_xxx) for each, then returns eg_test_summary(). EG_CHECK records a failure with file
 * and line and continues; the summary prints "N passed, N failed" and returns non-zero on any
 * failure, so ctest sees it. Tests never call exit() from the middle of a check. */
#ifndef EG_TEST_H
#define EG_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgegrad.h"

static int eg_test_failures_in_case;
static int eg_test_passed, eg_test_failed;

#define EG_CHECK(cond)                                                                  \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);          \
      eg_test_failures_in_case++;                                                       \
    }                                                                                   \
  } while (0)

#define EG_CHECK_MSG(cond, ...)                                                         \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);          \
      fprintf(stderr, __VA_ARGS__);                                                     \
      fputc('\n', stderr);                                                              \
      eg_test_failures_in_case++;                                                       \
    }                                                                                   \
  } while (0)

#define EG_RUN(fn)                                                                      \
  do {                                                                                  \
    eg_test_failures_in_case = 0;                                                       \
    fn();                                                                               \
    if (eg_test_failures_in_case) {                                                     \
      eg_test_failed++;                                                                 \
      fprintf(stderr, "FAIL %s\n", #fn);                                                \
    } else {                                                                            \
      eg_test_passed++;                                                                 \
    }                                                                                   \
  } while (0)

static inline int eg_test_summary(void) {
  printf("%d passed, %d failed\n", eg_test_passed, eg_test_failed);
  return eg_test_failed ? 1 : 0;
}

/* Every gradient output (role EG_ROLE_GRADIENT) of a and b: a's equals `times` * b's, bit for
 * bit. */
static inline bool eg_test_grads_scaled(const eg_model *m, const eg_runtime *a,
                                        const eg_runtime *b, float times) {
  bool same = true;
  for (int i = 0; i < eg_model_num_outputs(m); i++) {
    eg_tensor_desc d;
    eg_tensor ta, tb;
    eg_model_output(m, i, &d);
    if (d.role != EG_ROLE_GRADIENT || eg_runtime_output(a, i, &ta) != EG_OK ||
        eg_runtime_output(b, i, &tb) != EG_OK)
      continue;
    const float *pa = ta.data, *pb = tb.data;
    for (int64_t k = 0; k < eg_tensor_numel(&ta); k++) same = same && pa[k] == times * pb[k];
  }
  return same;
}

/* Every input of a equals b's, bit for bit. */
static inline bool eg_test_inputs_equal(const eg_model *m, const eg_runtime *a,
                                        const eg_runtime *b) {
  bool same = true;
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor ta, tb;
    if (eg_runtime_input(a, i, &ta) != EG_OK || eg_runtime_input(b, i, &tb) != EG_OK) continue;
    same = same && memcmp(ta.data, tb.data, (size_t)eg_tensor_numel(&ta) *
                                                eg_dtype_size(ta.dtype)) == 0;
  }
  return same;
}

/* Sets every input of model `m` in `rt` from tests/data/tiny_step_inputs/<name>.npy (the
 * tiny_step fixture and the programs compiled from it). */
static inline eg_status eg_test_set_tiny_inputs(const eg_model *m, eg_runtime *rt) {
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    eg_tensor t;
    char path[512];
    eg_status s = eg_model_input(m, i, &d);
    if (s != EG_OK) return s;
    snprintf(path, sizeof path, EG_TEST_DATA "/tiny_step_inputs/%s.npy", d.name);
    if ((s = eg_npy_load(path, &t)) != EG_OK) return s;
    s = eg_runtime_set_input(rt, d.name, &t);
    eg_tensor_free(&t);
    if (s != EG_OK) return s;
  }
  return EG_OK;
}

/* The project's tolerance (eg_tensor_compare, include/edgegrad.h) over n floats, with the given
 * rtol and atol (EG_COMPARE_RTOL / EG_COMPARE_ATOL, or tighter): |a-b| <= rtol*|b| +
 * atol*max(1, max|ref| over finite ref), NaN only against NaN, inf only against the same inf.
 * Returns the index of the element furthest out of tolerance, or -1 when all match. */
static inline long eg_test_allclose(const float *a, const float *ref, long n, double rtol,
                                    double atol) {
  eg_tensor got = {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {n}, .data = (void *)a};
  eg_tensor want = got;
  want.data = (void *)ref;
  eg_compare_result r;
  if (eg_tensor_compare(&got, &want, rtol, atol, &r) != EG_OK) {
    fprintf(stderr, "eg_test_allclose: %s\n", eg_last_error());
    return 0;
  }
  return r.num_bad ? (long)r.worst : -1;
}

/* Deterministic pseudo-random floats in [-1, 1) for test inputs. */
static inline void eg_test_fill(float *p, long n, unsigned seed) {
  unsigned s = seed * 2654435761u + 12345u;
  for (long i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)((s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
  }
}

/* A malloc'd buffer of n floats (at least one) filled by eg_test_fill(seed). */
static inline float *eg_test_rand_buf(long n, unsigned seed) {
  float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  eg_test_fill(p, n, seed);
  return p;
}

/* A malloc'd buffer of n floats (at least one), all NaN: a kernel must overwrite it. */
static inline float *eg_test_nan_buf(long n) {
  float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (long i = 0; i < n; i++) p[i] = NAN;
  return p;
}

#endif
