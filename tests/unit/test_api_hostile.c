/* test_api_hostile.c — every public function of include/edgegrad.h called with what a careless or
 * hostile caller passes: NULL handles and pointers, indices and counts out of range, ranks
 * beyond EG_MAX_RANK, shapes whose element count overflows int64, non-finite rates, a step
 * count at INT64_MAX. Each call must give its documented status (or sentinel: 0, NULL, -1) and,
 * for a status, one line in eg_last_error() naming what was wrong; the calls without a status
 * must leave the last message as it was. Nothing may crash or trip a sanitizer: the test runs
 * under ASan + UBSan in make check-asan, where any report aborts it. */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_files.h"

/* `got` must be `want`, with one non-empty line in eg_last_error() that holds `part`. */
static void expect_error(eg_status got, eg_status want, const char *part, const char *call,
                         int line) {
  const char *msg = eg_last_error();
  EG_CHECK_MSG(got == want && msg[0] && !strchr(msg, '\n') && strstr(msg, part),
               "line %d: %s: status %d (want %d), message \"%s\" (want one line holding "
               "\"%s\")", line, call, (int)got, (int)want, msg, part);
}
#define EXPECT_ERR(call, want, part) expect_error((call), (want), (part), #call, __LINE__)

/* A message no call below sets: a call without a status must leave it in place. */
static void set_marker(void) {
  eg_tensor t;
  EG_CHECK(eg_npy_load("", &t) == EG_ERR_IO);
}
#define MARKER_KEPT() EG_CHECK_MSG(strstr(eg_last_error(), "cannot open"), "%s", eg_last_error())

static eg_model *load_tiny(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  return m;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void test_dtypes_and_numel(void) {
  EG_CHECK(strcmp(eg_dtype_name((eg_dtype)-1), "?") == 0);
  EG_CHECK(strcmp(eg_dtype_name(EG_DTYPE_COUNT), "?") == 0 && eg_dtype_size(EG_DTYPE_COUNT) == 0);
  EG_CHECK(eg_dtype_size((eg_dtype)-7) == 0);
  set_marker();
  EG_CHECK(eg_tensor_numel(NULL) == -1);
  const int64_t big = (int64_t)1 << 40;
  eg_tensor t = {.dtype = EG_DTYPE_FLOAT32, .rank = EG_MAX_RANK + 1};
  for (int d = 0; d < EG_MAX_RANK; d++) t.shape[d] = 1;
  EG_CHECK(eg_tensor_numel(&t) == -1); /* rank 9 */
  t.rank = -1;
  EG_CHECK(eg_tensor_numel(&t) == -1);
  t.rank = INT32_MAX;
  EG_CHECK(eg_tensor_numel(&t) == -1);
  t = (eg_tensor){.rank = 2, .shape = {big, big}}; /* 2^80 elements */
  EG_CHECK(eg_tensor_numel(&t) == -1);
  t = (eg_tensor){.rank = 3, .shape = {INT64_MAX, 2, 0}}; /* empty, but its strides overflow */
  EG_CHECK(eg_tensor_numel(&t) == -1);
  t = (eg_tensor){.rank = 2, .shape = {-1, -1}}; /* the product of two negatives is positive */
  EG_CHECK(eg_tensor_numel(&t) == -1);
  t = (eg_tensor){.rank = 1, .shape = {big}};
  EG_CHECK(eg_tensor_numel(&t) == big);
  t = (eg_tensor){.rank = EG_MAX_RANK, .shape = {2, 3, 1, 5, 1, 1, 7, 2}};
  EG_CHECK(eg_tensor_numel(&t) == 2 * 3 * 5 * 7 * 2);
  t = (eg_tensor){.rank = 2, .shape = {big, 0}};
  EG_CHECK(eg_tensor_numel(&t) == 0);
  t = (eg_tensor){.rank = 0};
  EG_CHECK(eg_tensor_numel(&t) == 1);
  MARKER_KEPT();
}

static void test_models(void) {
  eg_model *m = NULL;
  EXPECT_ERR(eg_model_load(NULL, &m), EG_ERR_ARGUMENT, "path is NULL");
  EG_CHECK(m == NULL);
  EXPECT_ERR(eg_model_load(EG_TEST_DATA "/tiny_step.json", NULL), EG_ERR_ARGUMENT, "out is NULL");
  EXPECT_ERR(eg_model_load_compiled(NULL, &m), EG_ERR_ARGUMENT, "path is NULL");
  EXPECT_ERR(eg_model_load_compiled(EG_TEST_DATA "/tiny_step.json", NULL), EG_ERR_ARGUMENT,
             "out is NULL");
  eg_model_destroy(NULL);
  if (!(m = load_tiny())) return;
  const int n_in = eg_model_num_inputs(m), n_out = eg_model_num_outputs(m);
  eg_tensor_desc d;
  EXPECT_ERR(eg_model_input(NULL, 0, &d), EG_ERR_ARGUMENT, "model is NULL");
  EXPECT_ERR(eg_model_input(m, 0, NULL), EG_ERR_ARGUMENT, "out is NULL");
  EXPECT_ERR(eg_model_input(m, -1, &d), EG_ERR_ARGUMENT, "index -1 out of range");
  EXPECT_ERR(eg_model_input(m, n_in, &d), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_model_input(m, INT32_MIN, &d), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_model_output(NULL, 0, &d), EG_ERR_ARGUMENT, "model is NULL");
  EXPECT_ERR(eg_model_output(m, 0, NULL), EG_ERR_ARGUMENT, "out is NULL");
  EXPECT_ERR(eg_model_output(m, n_out, &d), EG_ERR_ARGUMENT, "out of range");
  const char *target = NULL;
  int count = 0;
  EXPECT_ERR(eg_model_op_kind(NULL, 0, &target, &count), EG_ERR_ARGUMENT, "model is NULL");
  EXPECT_ERR(eg_model_op_kind(m, -1, &target, &count), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_model_op_kind(m, eg_model_num_op_kinds(m), &target, &count), EG_ERR_ARGUMENT,
             "out of range");
  EG_CHECK(eg_model_op_kind(m, 0, NULL, NULL) == EG_OK);

  set_marker();
  EG_CHECK(eg_model_num_inputs(NULL) == 0 && eg_model_num_outputs(NULL) == 0);
  EG_CHECK(eg_model_num_op_kinds(NULL) == 0 && eg_model_is_compiled(NULL) == 0);
  eg_model_get_stats(m, NULL);
  eg_model_stats st;
  memset(&st, 0xab, sizeof st);
  eg_model_get_stats(NULL, &st);
  EG_CHECK(st.num_nodes == 0 && st.num_values == 0 && st.num_statics == 0 && st.static_bytes == 0);
  eg_model_get_stats(m, &st);
  EG_CHECK(st.num_nodes > 0 && st.num_statics >= 0);
  int p = -1, b = -1;
  eg_model_training_io(NULL, &p, &b);
  EG_CHECK(p == 0 && b == 0);
  eg_model_training_io(m, NULL, NULL);
  MARKER_KEPT();

  /* eg_model_check_input: the value's rank, dtype and shape come from the caller */
  EG_CHECK(eg_model_input(m, 0, &d) == EG_OK);
  eg_tensor v = d.tensor;
  static float data[4096];
  v.data = data;
  EXPECT_ERR(eg_model_check_input(NULL, d.name, &v), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_model_check_input(m, NULL, &v), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_model_check_input(m, d.name, NULL), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_model_check_input(m, "no such input", &v), EG_ERR_ARGUMENT, "no such input");
  eg_tensor bad = v;
  bad.rank = EG_MAX_RANK + 1;
  EXPECT_ERR(eg_model_check_input(m, d.name, &bad), EG_ERR_ARGUMENT, "the model expects");
  bad.rank = -5;
  EXPECT_ERR(eg_model_check_input(m, d.name, &bad), EG_ERR_ARGUMENT, "the model expects");
  bad = v;
  bad.dtype = (eg_dtype)-3;
  EXPECT_ERR(eg_model_check_input(m, d.name, &bad), EG_ERR_ARGUMENT, "given ?");
  bad = v;
  bad.shape[0] = -bad.shape[0];
  EXPECT_ERR(eg_model_check_input(m, d.name, &bad), EG_ERR_ARGUMENT, "the model expects");
  bad = v;
  bad.data = NULL;
  EXPECT_ERR(eg_model_check_input(m, d.name, &bad), EG_ERR_ARGUMENT, "data is NULL");

  /* a graph model has no program */
  eg_program_info pi;
  eg_npu_partition_info part;
  eg_npu_tensor_info ti;
  eg_npu_op_info oi;
  const char *name = NULL;
  char value[64];
  EXPECT_ERR(eg_model_program_info(m, &pi), EG_ERR_ARGUMENT, "the model is a graph");
  EXPECT_ERR(eg_model_program_info(NULL, &pi), EG_ERR_ARGUMENT, "the model is NULL");
  EXPECT_ERR(eg_model_program_info(m, NULL), EG_ERR_ARGUMENT, "out is NULL");
  EXPECT_ERR(eg_model_npu_partition(m, 0, &part), EG_ERR_ARGUMENT, "the model is a graph");
  EXPECT_ERR(eg_model_npu_tensor(NULL, 0, 0, &ti), EG_ERR_ARGUMENT, "the model is NULL");
  EXPECT_ERR(eg_model_npu_op(m, 0, 0, &oi), EG_ERR_ARGUMENT, "the model is a graph");
  EXPECT_ERR(eg_model_npu_op_param(m, 0, 0, 0, &name, value, sizeof value), EG_ERR_ARGUMENT,
             "the model is a graph");
  eg_model_destroy(m);
}

/* A runtime over tiny_step with every input set. */
static eg_runtime *runtime_with_inputs(const eg_model *m) {
  eg_runtime *rt = NULL;
  EG_CHECK_MSG(eg_runtime_create(m, &rt) == EG_OK, "%s", eg_last_error());
  if (rt && eg_test_set_tiny_inputs(m, rt) != EG_OK) {
    EG_CHECK_MSG(false, "%s", eg_last_error());
    eg_runtime_destroy(rt);
    rt = NULL;
  }
  return rt;
}

static void test_runtime(void) {
  eg_model *m = load_tiny();
  if (!m) return;
  eg_runtime *rt = NULL;
  EXPECT_ERR(eg_runtime_create(NULL, &rt), EG_ERR_ARGUMENT, "model is NULL");
  EG_CHECK(rt == NULL);
  EXPECT_ERR(eg_runtime_create(m, NULL), EG_ERR_ARGUMENT, "out is NULL");
  eg_runtime_options neg = EG_RUNTIME_OPTIONS(.num_threads = INT32_MIN);
  EXPECT_ERR(eg_runtime_create_with_options(m, &neg, &rt), EG_ERR_ARGUMENT, "num_threads");
  eg_runtime_destroy(NULL);
  EG_CHECK_MSG(eg_runtime_create(m, &rt) == EG_OK, "%s", eg_last_error());
  if (!rt) goto out;
  eg_tensor_desc d;
  EG_CHECK(eg_model_input(m, 0, &d) == EG_OK);
  static float data[4096];
  eg_tensor v = d.tensor, bad;
  v.data = data;
  EXPECT_ERR(eg_runtime_set_input(NULL, d.name, &v), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_set_input(rt, NULL, &v), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_set_input(rt, d.name, NULL), EG_ERR_ARGUMENT, "NULL argument");
  bad = v;
  bad.rank = EG_MAX_RANK + 1;
  EXPECT_ERR(eg_runtime_set_input(rt, d.name, &bad), EG_ERR_ARGUMENT, "the model expects");
  bad = (eg_tensor){.dtype = v.dtype, .rank = 2, .shape = {(int64_t)1 << 40, (int64_t)1 << 40},
                    .data = data};
  EXPECT_ERR(eg_runtime_set_input(rt, d.name, &bad), EG_ERR_ARGUMENT, "the model expects");
  EXPECT_ERR(eg_runtime_run(NULL), EG_ERR_ARGUMENT, "runtime is NULL");
  EXPECT_ERR(eg_runtime_run(rt), EG_ERR_ARGUMENT, "not set"); /* no input set yet */
  eg_tensor t;
  EXPECT_ERR(eg_runtime_input(NULL, 0, &t), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_input(rt, 0, NULL), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_input(rt, -1, &t), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_runtime_input(rt, eg_model_num_inputs(m), &t), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_runtime_input(rt, 0, &t), EG_ERR_ARGUMENT, "not set");
  EXPECT_ERR(eg_runtime_output(NULL, 0, &t), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_output(rt, 0, NULL), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_output(rt, -1, &t), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_runtime_output(rt, 0, &t), EG_ERR_STATE, "no successful run yet");
  eg_profile_entry e;
  EXPECT_ERR(eg_runtime_profile_entry(NULL, 0, &e), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_profile_entry(rt, 0, NULL), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_profile_entry(rt, 0, &e), EG_ERR_ARGUMENT, "without options.profile");
  EXPECT_ERR(eg_runtime_profile_write_trace(NULL, "t.json"), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_profile_write_trace(rt, NULL), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_runtime_profile_write_trace(rt, "t.json"), EG_ERR_ARGUMENT, "no profiled run");
  set_marker();
  EG_CHECK(eg_runtime_profile_count(NULL) == 0 && eg_runtime_profile_count(rt) == 0);
  EG_CHECK(eg_runtime_profile_total_ns(NULL) == 0 && eg_runtime_profile_total_ns(rt) == 0);
  MARKER_KEPT();
out:
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

/* A copy of parameter input `index` of the runtime. */
static float *param_copy(const eg_runtime *rt, int index, int64_t *n) {
  eg_tensor t;
  if (eg_runtime_input(rt, index, &t) != EG_OK || t.dtype != EG_DTYPE_FLOAT32) return NULL;
  *n = eg_tensor_numel(&t);
  float *p = malloc(sizeof(float) * (size_t)(*n ? *n : 1));
  if (p) memcpy(p, t.data, sizeof(float) * (size_t)*n);
  return p;
}

/* Index of the first trainable parameter input (role EG_ROLE_PARAMETER). */
static int first_param(const eg_model *m) {
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc in;
    if (eg_model_input(m, i, &in) == EG_OK && in.role == EG_ROLE_PARAMETER) return i;
  }
  return -1;
}

static void test_optimizer(void) {
  eg_model *m = load_tiny();
  eg_runtime *rt = m ? runtime_with_inputs(m) : NULL;
  eg_optimizer *opt = NULL;
  eg_optimizer_options o;
  eg_optimizer_defaults(EG_OPTIMIZER_ADAM, &o);
  float *before = NULL, *after = NULL;
  if (!rt) goto out;
  EXPECT_ERR(eg_optimizer_create(NULL, &o, &opt), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_optimizer_create(rt, NULL, &opt), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_optimizer_create(rt, &o, NULL), EG_ERR_ARGUMENT, "NULL argument");
  eg_optimizer_options bad = o;
  bad.lr = INFINITY;
  EXPECT_ERR(eg_optimizer_create(rt, &bad, &opt), EG_ERR_ARGUMENT, "lr (inf)");
  bad = o;
  bad.beta2 = NAN;
  EXPECT_ERR(eg_optimizer_create(rt, &bad, &opt), EG_ERR_ARGUMENT, "beta2");
  eg_optimizer_defaults((eg_optimizer_kind)-1, &bad);
  EXPECT_ERR(eg_optimizer_create(rt, &bad, &opt), EG_ERR_ARGUMENT, "not an eg_optimizer_kind");
  EG_CHECK(opt == NULL);
  EXPECT_ERR(eg_optimizer_step(NULL), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_optimizer_set_lr(NULL, 0.1), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_optimizer_set_steps(NULL, 1), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_optimizer_state(NULL, 0, &(const char *){NULL}, &(eg_tensor){0}),
             EG_ERR_ARGUMENT, "NULL argument");
  eg_optimizer_destroy(NULL);
  set_marker();
  EG_CHECK(eg_optimizer_steps(NULL) == 0 && eg_optimizer_num_states(NULL) == 0);
  MARKER_KEPT();

  EG_CHECK_MSG(eg_runtime_run(rt) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(eg_optimizer_create(rt, &o, &opt) == EG_OK, "%s", eg_last_error());
  if (!opt) goto out;
  EXPECT_ERR(eg_optimizer_set_lr(opt, NAN), EG_ERR_ARGUMENT, "must be finite");
  EXPECT_ERR(eg_optimizer_set_lr(opt, INFINITY), EG_ERR_ARGUMENT, "must be finite");
  EXPECT_ERR(eg_optimizer_set_steps(opt, INT64_MIN), EG_ERR_ARGUMENT, "must be >= 0");
  const char *name = NULL;
  eg_tensor st;
  const int n_states = eg_optimizer_num_states(opt);
  EXPECT_ERR(eg_optimizer_state(opt, -1, &name, &st), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_optimizer_state(opt, n_states, &name, &st), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_optimizer_state(opt, 0, NULL, &st), EG_ERR_ARGUMENT, "NULL argument");
  EXPECT_ERR(eg_optimizer_state(opt, 0, &name, NULL), EG_ERR_ARGUMENT, "NULL argument");

  /* the last countable step: Adam's t = INT64_MAX (bias corrections 1), then no further one */
  const int p = first_param(m);
  int64_t n = 0, n2 = 0;
  EG_CHECK(p >= 0 && eg_optimizer_set_steps(opt, INT64_MAX - 1) == EG_OK);
  EG_CHECK_MSG(eg_optimizer_step(opt) == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_optimizer_steps(opt) == INT64_MAX);
  before = param_copy(rt, p, &n);
  EXPECT_ERR(eg_optimizer_step(opt), EG_ERR_STATE, "at its maximum");
  EG_CHECK(eg_optimizer_set_steps(opt, INT64_MAX) == EG_OK);
  EXPECT_ERR(eg_optimizer_step(opt), EG_ERR_STATE, "at its maximum");
  after = param_copy(rt, p, &n2);
  /* refused: nothing moved, the count stays */
  EG_CHECK(before && after && n == n2 && memcmp(before, after, sizeof(float) * (size_t)n) == 0);
  EG_CHECK(eg_optimizer_steps(opt) == INT64_MAX);
  for (int64_t k = 0; after && k < n; k++) EG_CHECK(isfinite(after[k]));
  eg_optimizer_destroy(opt);

  /* plain SGD keeps no state: no index is valid (and none divides by zero) */
  eg_optimizer_options sgd = {.struct_size = sizeof sgd, .kind = EG_OPTIMIZER_SGD, .lr = 0.1};
  EG_CHECK(eg_optimizer_create(rt, &sgd, &opt) == EG_OK && eg_optimizer_num_states(opt) == 0);
  EXPECT_ERR(eg_optimizer_state(opt, 0, &name, &st), EG_ERR_ARGUMENT, "out of range [0, 0)");
  EG_CHECK(eg_optimizer_set_steps(opt, INT64_MAX) == EG_OK);
  EXPECT_ERR(eg_optimizer_step(opt), EG_ERR_STATE, "at its maximum");
out:
  free(before);
  free(after);
  eg_optimizer_destroy(opt);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

static void test_npy(void) {
  if (!eg_test_dir_open("api_hostile")) {
    EG_CHECK(false);
    return;
  }
  static float data[16];
  const char *path = path_in("t.npy");
  eg_tensor t = {.dtype = EG_DTYPE_FLOAT32, .rank = 2, .shape = {2, 3}, .data = data}, bad, r;
  EXPECT_ERR(eg_npy_save(NULL, &t), EG_ERR_ARGUMENT, "path is NULL");
  EXPECT_ERR(eg_npy_save(path, NULL), EG_ERR_ARGUMENT, "tensor is NULL");
  bad = t;
  bad.rank = EG_MAX_RANK + 1;
  EXPECT_ERR(eg_npy_save(path, &bad), EG_ERR_ARGUMENT, "rank 9");
  bad.rank = -1;
  EXPECT_ERR(eg_npy_save(path, &bad), EG_ERR_ARGUMENT, "rank -1");
  bad = t;
  bad.dtype = EG_DTYPE_COUNT;
  EXPECT_ERR(eg_npy_save(path, &bad), EG_ERR_ARGUMENT, "must be an eg_dtype");
  bad = t;
  bad.shape[0] = (int64_t)1 << 40;
  bad.shape[1] = (int64_t)1 << 40;
  EXPECT_ERR(eg_npy_save(path, &bad), EG_ERR_ARGUMENT, "multiply to at most 2^40");
  bad = t;
  bad.shape[1] = -3;
  EXPECT_ERR(eg_npy_save(path, &bad), EG_ERR_ARGUMENT, "[2, -3]");
  bad = t;
  bad.data = NULL;
  EXPECT_ERR(eg_npy_save(path, &bad), EG_ERR_ARGUMENT, "data is NULL (24 bytes");
  EG_CHECK(!exists(path)); /* no refused call wrote anything */
  /* an empty tensor needs no data; it reads back as itself */
  bad = (eg_tensor){.dtype = EG_DTYPE_INT64, .rank = 3, .shape = {4, 0, 2}};
  EG_CHECK_MSG(eg_npy_save(path, &bad) == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_npy_load(path, &r) == EG_OK && r.dtype == EG_DTYPE_INT64 && r.rank == 3 &&
           r.shape[0] == 4 && r.shape[1] == 0 && r.shape[2] == 2);
  eg_tensor_free(&r);

  EXPECT_ERR(eg_npy_load(NULL, &r), EG_ERR_ARGUMENT, "path is NULL");
  EG_CHECK(r.data == NULL && r.rank == 0);
  EXPECT_ERR(eg_npy_load(path, NULL), EG_ERR_ARGUMENT, "out is NULL");
  EXPECT_ERR(eg_npy_parse("x.npy", NULL, 10, &r), EG_ERR_ARGUMENT, "bytes is NULL");
  EXPECT_ERR(eg_npy_parse(NULL, data, sizeof data, &r), EG_ERR_ARGUMENT, "name or bytes");
  EXPECT_ERR(eg_npy_parse("x.npy", data, sizeof data, NULL), EG_ERR_ARGUMENT, "out is NULL");
  EXPECT_ERR(eg_npy_parse("x.npy", NULL, 0, &r), EG_ERR_FORMAT, "not a .npy file");
  eg_tensor_free(NULL);
  EG_CHECK(eg_test_dir_close());
}

static void test_compare(void) {
  static float a[4];
  eg_compare_result res;
  eg_tensor t = {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {4}, .data = a}, big;
  EXPECT_ERR(eg_tensor_compare(NULL, &t, 1e-4, 1e-5, &res), EG_ERR_ARGUMENT, "got is NULL");
  EXPECT_ERR(eg_tensor_compare(&t, NULL, 1e-4, 1e-5, &res), EG_ERR_ARGUMENT, "want is NULL");
  EXPECT_ERR(eg_tensor_compare(&t, &t, 1e-4, 1e-5, NULL), EG_ERR_ARGUMENT, "out is NULL");
  EXPECT_ERR(eg_tensor_compare(&t, &t, NAN, 1e-5, &res), EG_ERR_ARGUMENT, "tolerance invalid");
  big = t;
  big.rank = EG_MAX_RANK + 1;
  EXPECT_ERR(eg_tensor_compare(&big, &t, 1e-4, 1e-5, &res), EG_ERR_ARGUMENT, "rank invalid (9)");
  /* same (overflowing) shape on both sides: refused before any element is read */
  big = (eg_tensor){.dtype = EG_DTYPE_FLOAT32, .rank = 2, .shape = {(int64_t)1 << 40,
                    (int64_t)1 << 40}, .data = a};
  EXPECT_ERR(eg_tensor_compare(&big, &big, 1e-4, 1e-5, &res), EG_ERR_ARGUMENT,
             "shape too large");
  big.shape[0] = big.shape[1] = (int64_t)1 << 32; /* 2^64 elements: wraps to 0 in int64 */
  EXPECT_ERR(eg_tensor_compare(&big, &big, 1e-4, 1e-5, &res), EG_ERR_ARGUMENT,
             "shape too large");
}

static void test_targets_and_compile(void) {
  eg_target_info ti;
  const int n = eg_num_targets();
  EXPECT_ERR(eg_get_target(-1, &ti), EG_ERR_ARGUMENT, "index -1 out of range");
  EXPECT_ERR(eg_get_target(n, &ti), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_get_target(0, NULL), EG_ERR_ARGUMENT, "out is NULL");
  eg_model *m = load_tiny();
  if (!m) return;
  eg_compile_report *r = NULL;
  eg_runtime *rt = NULL;
  eg_compile_options o = EG_COMPILE_OPTIONS(.soc = "SM8650"), bad;
  const char *skip[] = {NULL};
  EXPECT_ERR(eg_compile_report_create(NULL, &o, &r), EG_ERR_ARGUMENT, "are required");
  EXPECT_ERR(eg_compile_report_create(m, NULL, &r), EG_ERR_ARGUMENT, "are required");
  EXPECT_ERR(eg_compile_report_create(m, &o, NULL), EG_ERR_ARGUMENT, "out is NULL");
  bad = (eg_compile_options)EG_COMPILE_OPTIONS_INIT;
  EXPECT_ERR(eg_compile_report_create(m, &bad, &r), EG_ERR_ARGUMENT, "unknown SoC");
  bad = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "SM0000");
  EXPECT_ERR(eg_compile_report_create(m, &bad, &r), EG_ERR_ARGUMENT, "unknown SoC");
  /* the skip lists reach the compiler's passes before placement: checked first */
  bad = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "SM8650", .num_skip_ops = -1);
  EXPECT_ERR(eg_compile_report_create(m, &bad, &r), EG_ERR_ARGUMENT, "num_skip_ops (-1");
  bad = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "SM8650", .num_skip_nodes = 3);
  EXPECT_ERR(eg_compile_report_create(m, &bad, &r), EG_ERR_ARGUMENT,
             "num_skip_nodes (3, a NULL list)");
  bad = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "SM8650", .skip_ops = skip,
                                               .num_skip_ops = 1);
  EXPECT_ERR(eg_compile_report_create(m, &bad, &r), EG_ERR_ARGUMENT, "skip_ops[0] is NULL");
  bad = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "SM8650", .skip_nodes = skip,
                                               .num_skip_nodes = 1);
  EXPECT_ERR(eg_runtime_create_compiled(m, &bad, &rt), EG_ERR_ARGUMENT, "skip_nodes[0] is NULL");
  EXPECT_ERR(eg_model_save_compiled(m, &bad, "never.egp"), EG_ERR_ARGUMENT,
             "skip_nodes[0] is NULL");
  bad = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "SM8650", .dump_after = "no_such_pass");
  EXPECT_ERR(eg_compile_report_create(m, &bad, &r), EG_ERR_ARGUMENT, "no_such_pass");
  EG_CHECK(r == NULL);
  EXPECT_ERR(eg_runtime_create_compiled(NULL, &o, &rt), EG_ERR_ARGUMENT, "are required");
  EXPECT_ERR(eg_runtime_create_compiled(m, NULL, &rt), EG_ERR_ARGUMENT, "are required");
  EXPECT_ERR(eg_runtime_create_compiled(m, &o, NULL), EG_ERR_ARGUMENT, "out is NULL");
  bad = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "x");
  EXPECT_ERR(eg_runtime_create_compiled(m, &bad, &rt),
             EG_ERR_ARGUMENT, "unknown SoC");
  EG_CHECK(rt == NULL);
  EXPECT_ERR(eg_model_save_compiled(NULL, &o, "p.egp"), EG_ERR_ARGUMENT, "are required");
  EXPECT_ERR(eg_model_save_compiled(m, NULL, "p.egp"), EG_ERR_ARGUMENT, "are required");
  EXPECT_ERR(eg_model_save_compiled(m, &o, NULL), EG_ERR_ARGUMENT, "are required");

  eg_placement_info pi;
  int nn = 0;
  const int32_t *nodes = NULL;
  double total = -1, npu = -1;
  EXPECT_ERR(eg_compile_report_node(NULL, 0, &pi), EG_ERR_ARGUMENT, "report is NULL");
  EXPECT_ERR(eg_compile_report_partition(NULL, 0, &nn, &nodes), EG_ERR_ARGUMENT,
             "report is NULL");
  EXPECT_ERR(eg_compile_report_write_json(NULL, "r.json"), EG_ERR_ARGUMENT, "are required");
  set_marker();
  EG_CHECK(eg_compile_report_num_nodes(NULL) == 0 && eg_compile_report_num_partitions(NULL) == 0);
  EG_CHECK(eg_compile_report_num_warnings(NULL) == 0 && eg_compile_report_num_notes(NULL) == 0);
  EG_CHECK(eg_compile_report_warning(NULL, 0) == NULL && eg_compile_report_note(NULL, 0) == NULL);
  eg_compile_report_flops(NULL, &total, &npu);
  EG_CHECK(total == 0 && npu == 0);
  memset(&ti, 0xab, sizeof ti);
  eg_compile_report_target(NULL, &ti);
  EG_CHECK(ti.soc == NULL && ti.htp_arch == 0);
  eg_compile_report_destroy(NULL);
  MARKER_KEPT();

  EG_CHECK_MSG(eg_compile_report_create(m, &o, &r) == EG_OK, "%s", eg_last_error());
  if (r) {
    EXPECT_ERR(eg_compile_report_node(r, 0, NULL), EG_ERR_ARGUMENT, "out is NULL");
    EXPECT_ERR(eg_compile_report_node(r, -1, &pi), EG_ERR_ARGUMENT, "out of range");
    EXPECT_ERR(eg_compile_report_node(r, eg_compile_report_num_nodes(r), &pi), EG_ERR_ARGUMENT,
               "out of range");
    EXPECT_ERR(eg_compile_report_partition(r, 0, NULL, &nodes), EG_ERR_ARGUMENT,
               "num_nodes is NULL");
    EXPECT_ERR(eg_compile_report_partition(r, 0, &nn, NULL), EG_ERR_ARGUMENT, "nodes is NULL");
    EXPECT_ERR(eg_compile_report_partition(r, -1, &nn, &nodes), EG_ERR_ARGUMENT, "out of range");
    EXPECT_ERR(eg_compile_report_partition(r, eg_compile_report_num_partitions(r), &nn, &nodes),
               EG_ERR_ARGUMENT, "out of range");
    EXPECT_ERR(eg_compile_report_write_json(r, NULL), EG_ERR_ARGUMENT, "are required");
    set_marker();
    EG_CHECK(eg_compile_report_warning(r, -1) == NULL && eg_compile_report_note(r, INT32_MAX) ==
             NULL);
    eg_compile_report_target(r, NULL);
    eg_compile_report_flops(r, NULL, NULL);
    MARKER_KEPT();
  }
  eg_compile_report_destroy(r);
  eg_model_destroy(m);
}

/* The accessors of a compiled program, on indices out of range and NULL pointers. */
static void test_compiled_program(void) {
  eg_model *m = load_tiny(), *p = NULL;
  if (!m || !eg_test_dir_open("api_hostile_egp")) {
    EG_CHECK(false);
    eg_model_destroy(m);
    return;
  }
  const char *path = path_in("tiny.egp");
  eg_compile_options o = EG_COMPILE_OPTIONS(.soc = "SM8650");
  EG_CHECK_MSG(eg_model_save_compiled(m, &o, path) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(eg_model_load(path, &p) == EG_OK, "%s", eg_last_error());
  if (!p) goto out;
  eg_program_info info;
  EG_CHECK(eg_model_program_info(p, &info) == EG_OK && info.num_partitions > 0);
  const int np = info.num_partitions;
  eg_npu_partition_info part;
  eg_npu_tensor_info ti;
  eg_npu_op_info oi;
  const char *name = NULL;
  char value[64];
  EXPECT_ERR(eg_model_npu_partition(p, -1, &part), EG_ERR_ARGUMENT, "partition -1 out of range");
  EXPECT_ERR(eg_model_npu_partition(p, np, &part), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_model_npu_partition(p, 0, NULL), EG_ERR_ARGUMENT, "out is NULL");
  EG_CHECK(eg_model_npu_partition(p, 0, &part) == EG_OK);
  EXPECT_ERR(eg_model_npu_tensor(p, 0, -1, &ti), EG_ERR_ARGUMENT, "tensor -1 out of range");
  EXPECT_ERR(eg_model_npu_tensor(p, 0, part.num_tensors, &ti), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_model_npu_tensor(p, np, 0, &ti), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_model_npu_tensor(p, 0, 0, NULL), EG_ERR_ARGUMENT, "out is NULL");
  EXPECT_ERR(eg_model_npu_op(p, 0, -1, &oi), EG_ERR_ARGUMENT, "op -1 out of range");
  EXPECT_ERR(eg_model_npu_op(p, 0, part.num_ops, &oi), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_model_npu_op(p, INT32_MIN, 0, &oi), EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_model_npu_op(p, 0, 0, NULL), EG_ERR_ARGUMENT, "out is NULL");
  EG_CHECK(eg_model_npu_op(p, 0, 0, &oi) == EG_OK);
  EXPECT_ERR(eg_model_npu_op_param(p, 0, 0, -1, &name, value, sizeof value), EG_ERR_ARGUMENT,
             "param -1 out of range");
  EXPECT_ERR(eg_model_npu_op_param(p, 0, 0, oi.num_params, &name, value, sizeof value),
             EG_ERR_ARGUMENT, "out of range");
  EXPECT_ERR(eg_model_npu_op_param(p, 0, 0, 0, NULL, value, sizeof value), EG_ERR_ARGUMENT,
             "NULL name");
  EXPECT_ERR(eg_model_npu_op_param(p, 0, 0, 0, &name, NULL, 8), EG_ERR_ARGUMENT, "NULL name");
  EXPECT_ERR(eg_model_npu_op_param(p, 0, 0, 0, &name, value, 0), EG_ERR_ARGUMENT,
             "empty value buffer");
  /* a one-byte buffer still ends in a NUL */
  for (int op = 0; op < part.num_ops; op++) {
    if (eg_model_npu_op(p, 0, op, &oi) != EG_OK || oi.num_params == 0) continue;
    value[0] = 'x';
    EG_CHECK(eg_model_npu_op_param(p, 0, op, 0, &name, value, 1) == EG_OK && value[0] == 0);
    break;
  }
out:
  eg_model_destroy(p);
  eg_model_destroy(m);
  EG_CHECK(eg_test_dir_close());
}

int main(void) {
  EG_RUN(test_dtypes_and_numel);
  EG_RUN(test_models);
  EG_RUN(test_runtime);
  EG_RUN(test_optimizer);
  EG_RUN(test_npy);
  EG_RUN(test_compare);
  EG_RUN(test_targets_and_compile);
  EG_RUN(test_compiled_program);
  return eg_test_summary();
}
