/* test_compare.c — eg_tensor_compare, the project's tolerance: every case of
 * tests/data/tolerance_cases.json (which tests/conformance/test_tolerance.py also decides with
 * edgegrad.tolerance) gives its recorded verdict; arguments are checked with one-line errors;
 * per-call tolerances tighten the rule; float16 follows the float rule. */
#include <jansson.h>

#include "eg_test.h"

#define CASES EG_TEST_DATA "/tolerance_cases.json"

static eg_dtype dtype_of(const char *name) {
  for (int d = 0; d < EG_DTYPE_COUNT; d++)
    if (strcmp(eg_dtype_name((eg_dtype)d), name) == 0) return (eg_dtype)d;
  return EG_DTYPE_COUNT;
}

static double number_of(const json_t *v) {
  const char *s = json_string_value(v);
  if (!s) return json_number_value(v);
  if (strcmp(s, "nan") == 0) return NAN;
  if (strcmp(s, "inf") == 0) return INFINITY;
  if (strcmp(s, "-inf") == 0) return -INFINITY;
  if (strcmp(s, "-0") == 0) return -0.0;
  return 42; /* an unknown word: the case's verdict will not hold */
}

/* Fills t (dtype, shape) from the JSON arrays; data malloc'd. Returns 0 on a malformed case. */
static int build(eg_tensor *t, const char *dtype, const json_t *shape, const json_t *values) {
  memset(t, 0, sizeof *t);
  t->dtype = dtype_of(dtype);
  t->rank = (int32_t)json_array_size(shape);
  if (t->dtype == EG_DTYPE_COUNT || t->rank > EG_MAX_RANK) return 0;
  for (int i = 0; i < t->rank; i++) t->shape[i] = json_integer_value(json_array_get(shape, i));
  int64_t n = eg_tensor_numel(t);
  if ((int64_t)json_array_size(values) != n) return 0;
  t->data = calloc((size_t)(n > 0 ? n : 1), eg_dtype_size(t->dtype));
  for (int64_t i = 0; i < n; i++) {
    const json_t *v = json_array_get(values, (size_t)i);
    switch (t->dtype) {
    case EG_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)number_of(v); break;
    case EG_DTYPE_FLOAT64: ((double *)t->data)[i] = number_of(v); break;
    case EG_DTYPE_INT64: ((int64_t *)t->data)[i] = json_integer_value(v); break;
    case EG_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)json_integer_value(v); break;
    case EG_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)json_integer_value(v); break;
    case EG_DTYPE_UINT8: case EG_DTYPE_BOOL:
      ((uint8_t *)t->data)[i] = (uint8_t)json_integer_value(v);
      break;
    default: return 0;
    }
  }
  return 1;
}

static void test_cases_file(void) {
  json_error_t jerr;
  json_t *root = json_load_file(CASES, 0, &jerr);
  EG_CHECK_MSG(root != NULL, "%s: %s", CASES, jerr.text);
  const json_t *cases = json_object_get(root, "cases");
  EG_CHECK(json_array_size(cases) >= 20);
  for (size_t k = 0; k < json_array_size(cases); k++) {
    const json_t *c = json_array_get(cases, k);
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *dtype = json_string_value(json_object_get(c, "dtype"));
    const json_t *want_dtype = json_object_get(c, "want_dtype");
    const json_t *shape = json_object_get(c, "shape");
    const json_t *want_shape = json_object_get(c, "want_shape");
    eg_tensor got = {0}, want = {0};
    int ok = dtype && build(&got, dtype, shape, json_object_get(c, "got"));
    ok = build(&want, want_dtype ? json_string_value(want_dtype) : dtype,
               want_shape ? want_shape : shape, json_object_get(c, "want")) && ok;
    EG_CHECK_MSG(ok, "case %zu (%s) is malformed", k, name ? name : "?");
    if (ok) {
      eg_compare_result r;
      eg_status s = eg_tensor_compare(&got, &want, EG_COMPARE_RTOL, EG_COMPARE_ATOL, &r);
      if (json_is_true(json_object_get(c, "error"))) {
        EG_CHECK_MSG(s == EG_ERR_ARGUMENT, "%s: status %d, want EG_ERR_ARGUMENT", name, (int)s);
        EG_CHECK_MSG(strstr(eg_last_error(), "eg_tensor_compare: ") == eg_last_error() &&
                     strstr(eg_last_error(), "must have the same dtype and shape"),
                     "%s: %s", name, eg_last_error());
      } else {
        json_int_t bad = json_integer_value(json_object_get(c, "bad"));
        json_int_t worst = json_integer_value(json_object_get(c, "worst"));
        EG_CHECK_MSG(s == EG_OK && r.num_bad == bad && r.worst == worst,
                     "%s: status %d, %lld bad, worst %lld; want %lld bad, worst %lld (%s)", name,
                     (int)s, (long long)r.num_bad, (long long)r.worst, (long long)bad,
                     (long long)worst, eg_last_error());
      }
    }
    free(got.data);
    free(want.data);
  }
  json_decref(root);
}

/* eg_tensor_compare of two 3-element vectors of dtype `dt`. */
static eg_status compare3(eg_dtype dt, void *g, void *w, double rtol, double atol,
                          eg_compare_result *r) {
  eg_tensor got = {.dtype = dt, .rank = 1, .shape = {3}, .data = g};
  eg_tensor want = got;
  want.data = w;
  return eg_tensor_compare(&got, &want, rtol, atol, r);
}

static void test_result_fields(void) {
  float g[3] = {1, 2.5f, 3}, w[3] = {1, 2, 3};
  eg_compare_result r;
  EG_CHECK(compare3(EG_DTYPE_FLOAT32, g, w, EG_COMPARE_RTOL, EG_COMPARE_ATOL, &r) == EG_OK);
  EG_CHECK(r.num_bad == 1 && r.worst == 1 && r.got == 2.5 && r.want == 2 && r.err == 0.5);
  EG_CHECK(fabs(r.tol - (1e-4 * 2 + 1e-5 * 3)) < 1e-15);
  EG_CHECK(r.max_err == 0.5);
  /* a per-call tolerance: 1e-4 apart passes the project's rule, not a 1e-6 one */
  g[1] = 2.0002f;
  EG_CHECK(compare3(EG_DTYPE_FLOAT32, g, w, EG_COMPARE_RTOL, EG_COMPARE_ATOL, &r) == EG_OK &&
           r.num_bad == 0 && r.worst == -1);
  EG_CHECK(compare3(EG_DTYPE_FLOAT32, g, w, 1e-6, 1e-7, &r) == EG_OK && r.num_bad == 1);
  /* the test harness's wrapper applies the same rule */
  EG_CHECK(eg_test_allclose(g, w, 3, 1e-6, 1e-7) == 1);
  EG_CHECK(eg_test_allclose(g, w, 3, EG_COMPARE_RTOL, EG_COMPARE_ATOL) == -1);
  g[0] = w[0] = NAN;
  EG_CHECK(eg_test_allclose(g, w, 3, EG_COMPARE_RTOL, EG_COMPARE_ATOL) == -1);
}

static void test_float16(void) {
  /* 1 + 2^-10 (off by 9.8e-4), NaN, inf; against 1.0, NaN, inf */
  uint16_t g[3] = {0x3c01, 0x7e00, 0x7c00}, w[3] = {0x3c00, 0x7e00, 0x7c00};
  eg_compare_result r;
  EG_CHECK(compare3(EG_DTYPE_FLOAT16, g, w, EG_COMPARE_RTOL, EG_COMPARE_ATOL, &r) == EG_OK);
  EG_CHECK(r.num_bad == 1 && r.worst == 0 && r.want == 1.0 && fabs(r.got - 1.0009765625) < 1e-12);
  EG_CHECK(compare3(EG_DTYPE_FLOAT16, g, w, 1e-3, 0, &r) == EG_OK && r.num_bad == 0);
  g[2] = 0xfc00; /* -inf against inf */
  EG_CHECK(compare3(EG_DTYPE_FLOAT16, g, w, 1e-3, 0, &r) == EG_OK && r.num_bad == 1 &&
           r.worst == 2);
}

/* The call fails with `status` and a message starting with `where` and containing `rule`. */
static void expect_error(eg_status got, eg_status status, const char *text) {
  EG_CHECK_MSG(got == status, "status %d, want %d", (int)got, (int)status);
  EG_CHECK_MSG(strncmp(eg_last_error(), "eg_tensor_compare: ", 19) == 0 &&
               strstr(eg_last_error(), text), "message \"%s\", want \"%s\"", eg_last_error(), text);
}

static void test_arguments(void) {
  float v[2] = {0, 0};
  eg_tensor t = {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {2}, .data = v};
  eg_compare_result r;
  expect_error(eg_tensor_compare(&t, &t, 1e-4, 1e-5, NULL), EG_ERR_ARGUMENT, "out is NULL");
  expect_error(eg_tensor_compare(NULL, &t, 1e-4, 1e-5, &r), EG_ERR_ARGUMENT, "got is NULL");
  EG_CHECK(r.num_bad == 0 && r.worst == -1);
  expect_error(eg_tensor_compare(&t, NULL, 1e-4, 1e-5, &r), EG_ERR_ARGUMENT, "want is NULL");
  expect_error(eg_tensor_compare(&t, &t, -1, 1e-5, &r), EG_ERR_ARGUMENT,
               "tolerance invalid (rtol -1, atol_scale 1e-05): both must be finite and >= 0");
  expect_error(eg_tensor_compare(&t, &t, 1e-4, NAN, &r), EG_ERR_ARGUMENT, "tolerance invalid");
  eg_tensor u = t;
  u.dtype = EG_DTYPE_INT32;
  expect_error(eg_tensor_compare(&t, &u, 1e-4, 1e-5, &r), EG_ERR_ARGUMENT,
               "dtypes differ (got float32, want int32)");
  u = t;
  u.shape[0] = 1;
  expect_error(eg_tensor_compare(&t, &u, 1e-4, 1e-5, &r), EG_ERR_ARGUMENT,
               "shapes differ (got [2], want [1])");
  u = t;
  u.data = NULL;
  expect_error(eg_tensor_compare(&t, &u, 1e-4, 1e-5, &r), EG_ERR_ARGUMENT, "want data is NULL");
  u = t;
  u.rank = EG_MAX_RANK + 1;
  expect_error(eg_tensor_compare(&u, &t, 1e-4, 1e-5, &r), EG_ERR_ARGUMENT, "got rank invalid");
  u = t;
  u.dtype = EG_DTYPE_COUNT;
  expect_error(eg_tensor_compare(&t, &u, 1e-4, 1e-5, &r), EG_ERR_ARGUMENT, "want dtype invalid");
  u = t;
  u.shape[0] = -1;
  expect_error(eg_tensor_compare(&t, &u, 1e-4, 1e-5, &r), EG_ERR_ARGUMENT, "want shape invalid");
  /* an empty tensor needs no data */
  u = t;
  u.shape[0] = 0;
  u.data = NULL;
  EG_CHECK(eg_tensor_compare(&u, &u, 1e-4, 1e-5, &r) == EG_OK && r.num_bad == 0);
}

int main(void) {
  EG_RUN(test_cases_file);
  EG_RUN(test_result_fields);
  EG_RUN(test_float16);
  EG_RUN(test_arguments);
  return eg_test_summary();
}
