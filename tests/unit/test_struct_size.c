/* test_struct_size.c — the struct size rules of include/edgegrad.h ("binary compatibility")
 * with today's header, on tiny_step (an app built against an older header's layouts:
 * tests/abi/older_caller.c):
 *   - sizes refused with their one-line message: 0 (never set), not a multiple of the
 *     alignment, over EG_STRUCT_SIZE_MAX, for the options read and the structures filled, and
 *     an array whose elements disagree on the stride;
 *   - a size short of the library's: the fields past it take their defaults whatever the
 *     caller's memory holds there (junk put there on purpose, which read would change the
 *     result or be refused): runtime options (a dump folder, a precision), Adam's betas and
 *     eps, a trainer's shuffle, seed and normalization (an epoch bit for bit the defaults',
 *     unlike one in file order); a filled structure is written only as far as its size;
 *   - a newer caller's size: bytes past the library's layout pass when 0 and are refused
 *     otherwise; a filled structure's bytes past the library's are zeroed; the trainer's
 *     events carry the library's struct_size. */
#include <stddef.h>

#include "eg_test.h"

static void expect(eg_status got, eg_status want, const char *needle, int line) {
  EG_CHECK_MSG(got == want && strstr(eg_last_error(), needle), "line %d: status %d, '%s' "
               "(wanted %d, '%s')", line, (int)got, eg_last_error(), (int)want, needle);
}
#define EXPECT(call, want, needle) expect((call), (want), (needle), __LINE__)

static eg_model *load(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK);
  return m;
}

/* A runtime of m with its inputs set (NULL options: the defaults). */
static eg_runtime *ready(const eg_model *m) {
  eg_runtime *rt = NULL;
  EG_CHECK(eg_runtime_create_with_options(m, NULL, &rt) == EG_OK &&
           eg_test_set_tiny_inputs(m, rt) == EG_OK);
  return rt;
}

static void test_refused(void) {
  eg_model *m = load();
  eg_runtime *rt = m ? ready(m) : NULL, *none = NULL;
  if (!rt) goto out;
  eg_runtime_options o = EG_RUNTIME_OPTIONS();
  o.struct_size = 0;
  EXPECT(eg_runtime_create_with_options(m, &o, &none), EG_ERR_ARGUMENT,
         "eg_runtime_create: eg_runtime_options size (0 bytes): must be the sizeof the caller "
         "declares it with, a multiple of 8 from 8 to 4096");
  o.struct_size = 12;
  EXPECT(eg_runtime_create_with_options(m, &o, &none), EG_ERR_ARGUMENT, "size (12 bytes)");
  o.struct_size = EG_STRUCT_SIZE_MAX + 8;
  EXPECT(eg_runtime_create_with_options(m, &o, &none), EG_ERR_ARGUMENT, "size (4104 bytes)");
  eg_compile_options c = EG_COMPILE_OPTIONS(.soc = "SM8650");
  c.struct_size = 0;
  eg_compile_report *rep = NULL;
  EXPECT(eg_compile_report_create(m, &c, &rep), EG_ERR_ARGUMENT,
         "eg_compile_report_create: eg_compile_options size (0 bytes)");
  EXPECT(eg_runtime_create_compiled(m, &c, &none), EG_ERR_ARGUMENT,
         "eg_runtime_create_compiled: eg_compile_options size (0 bytes)");
  eg_optimizer_options sgd;
  EG_CHECK(eg_optimizer_defaults(EG_OPTIMIZER_SGD, &sgd) == EG_OK);
  sgd.struct_size = 0;
  eg_optimizer *opt = NULL;
  EXPECT(eg_optimizer_create(rt, &sgd, &opt), EG_ERR_ARGUMENT,
         "eg_optimizer_create: eg_optimizer_options size (0 bytes)");
  eg_trainer_options t;
  EG_CHECK(eg_trainer_defaults(&t) == EG_OK);
  t.optimizer = &sgd; /* its size 0 */
  eg_trainer *tr = NULL;
  EXPECT(eg_trainer_create(rt, &t, &tr), EG_ERR_ARGUMENT,
         "eg_trainer_create: optimizer: eg_optimizer_options size (0 bytes)");
  t.struct_size = 0;
  EXPECT(eg_trainer_create(rt, &t, &tr), EG_ERR_ARGUMENT,
         "eg_trainer_create: eg_trainer_options size (0 bytes)");
  EG_CHECK(!none && !rep && !opt && !tr);
  /* arrays: every element gives the first one's size */
  EG_CHECK(eg_trainer_defaults(&t) == EG_OK && eg_trainer_create(rt, &t, &tr) == EG_OK);
  eg_tensor x = {0};
  eg_trainer_array a[2] = {EG_TRAINER_ARRAY("input", x), EG_TRAINER_ARRAY("target", x)};
  a[1].struct_size += 8;
  char needle[120];
  snprintf(needle, sizeof needle, "eg_trainer_set_data: arrays[1].struct_size (%zu; arrays[0]'s "
           "%zu): every element", sizeof *a + 8, sizeof *a);
  EXPECT(eg_trainer_set_data(tr, a, 2), EG_ERR_ARGUMENT, needle);
  a[0].struct_size = 0;
  EXPECT(eg_trainer_step_batch(tr, a, 2, NULL), EG_ERR_ARGUMENT,
         "eg_trainer_step_batch: eg_trainer_array size (0 bytes)");
  eg_trainer_destroy(tr);
  /* filled structures */
  eg_tensor_desc d;
  EXPECT((eg_model_input)(m, 0, &d, 0), EG_ERR_ARGUMENT,
         "eg_model_input: eg_tensor_desc size (0 bytes)");
  eg_target_info ti;
  EXPECT((eg_get_target)(0, &ti, 4), EG_ERR_ARGUMENT, "eg_get_target: eg_target_info size (4");
  EXPECT((eg_optimizer_defaults)(EG_OPTIMIZER_SGD, &sgd, 0), EG_ERR_ARGUMENT,
         "eg_optimizer_defaults: eg_optimizer_options size (0 bytes)");
  eg_model_stats st;
  memset(&st, 0xab, sizeof st);
  (eg_model_get_stats)(m, &st, 0); /* no status: nothing written */
  EG_CHECK(st.num_nodes == (int)0xabababab);
out:
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

static void test_short_runtime_options(void) {
  eg_model *m = load();
  eg_runtime *rt = NULL;
  if (!m) return;
  /* junk past the size: a dump folder (refused on a graph that is not compiled), a precision
   * that is no eg_precision */
  eg_runtime_options o = EG_RUNTIME_OPTIONS(.num_threads = 1, .dump_partitions_dir = "/x/y",
                                            .precision = (eg_precision)7);
  EXPECT(eg_runtime_create_with_options(m, &o, &rt), EG_ERR_ARGUMENT, "precision (7)");
  o.struct_size = offsetof(eg_runtime_options, dump_partitions_dir);
  EG_CHECK_MSG(eg_runtime_create_with_options(m, &o, &rt) == EG_OK, "%s", eg_last_error());
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

/* Adam at lr 0.01 after one run and step of m: its runtime. */
static eg_runtime *adam_step(const eg_model *m, const eg_optimizer_options *o) {
  eg_runtime *rt = ready(m);
  eg_optimizer *opt = NULL;
  EG_CHECK(rt && eg_runtime_run(rt) == EG_OK);
  EG_CHECK_MSG(rt && eg_optimizer_create(rt, o, &opt) == EG_OK && eg_optimizer_step(opt) == EG_OK,
               "%s", eg_last_error());
  eg_optimizer_destroy(opt);
  return rt;
}

static void test_short_optimizer_options(void) {
  eg_model *m = load();
  if (!m) return;
  eg_optimizer_options want, junk;
  EG_CHECK(eg_optimizer_defaults(EG_OPTIMIZER_ADAM, &want) == EG_OK);
  want.lr = 0.01;
  junk = want;
  junk.beta1 = junk.beta2 = 0.5;
  junk.eps = 1;
  eg_runtime *a = adam_step(m, &want), *b = adam_step(m, &junk);
  junk.struct_size = offsetof(eg_optimizer_options, nesterov); /* kind .. dampening */
  eg_runtime *c = adam_step(m, &junk);
  EG_CHECK(a && b && c && !eg_test_inputs_equal(m, a, b)); /* the junk counts when read */
  EG_CHECK(a && c && eg_test_inputs_equal(m, a, c));       /* past the size, Adam's defaults */
  eg_runtime_destroy(a);
  eg_runtime_destroy(b);
  eg_runtime_destroy(c);
  eg_model_destroy(m);
}

#define N_EX 8 /* tiny_step's two examples four times, each scaled a little */

/* One epoch of SGD (lr 0.1) over N_EX examples with trainer options `o`; its runtime (NULL when
 * the trainer was refused: `status`). */
static eg_runtime *epoch(const eg_model *m, eg_trainer_options *o, eg_status *status) {
  static float images[N_EX * 144];
  static int64_t labels[N_EX];
  eg_tensor x;
  if (eg_npy_load(EG_TEST_DATA "/tiny_step_inputs/input.npy", &x) != EG_OK) return NULL;
  for (int k = 0; k < N_EX * 144; k++)
    images[k] = ((const float *)x.data)[k % 288] * (1.0f + 0.125f * (float)(k / 144));
  for (int k = 0; k < N_EX; k++) labels[k] = k % 3;
  eg_tensor_free(&x);
  const eg_tensor xs = {EG_DTYPE_FLOAT32, 4, {N_EX, 1, 12, 12}, images};
  const eg_tensor ys = {EG_DTYPE_INT64, 1, {N_EX}, labels};
  const eg_trainer_array data[] = {EG_TRAINER_ARRAY("input", xs), EG_TRAINER_ARRAY("target", ys)};
  eg_optimizer_options sgd;
  EG_CHECK(eg_optimizer_defaults(EG_OPTIMIZER_SGD, &sgd) == EG_OK);
  sgd.lr = 0.1;
  o->optimizer = &sgd;
  eg_runtime *rt = ready(m);
  eg_trainer *tr = NULL;
  *status = rt ? eg_trainer_create(rt, o, &tr) : EG_ERR_STATE;
  if (*status != EG_OK) {
    eg_runtime_destroy(rt);
    return NULL;
  }
  EG_CHECK_MSG(eg_trainer_set_data(tr, data, 2) == EG_OK && eg_trainer_fit(tr, 1) == EG_OK,
               "%s", eg_last_error());
  eg_trainer_destroy(tr);
  return rt;
}

static void test_short_trainer_options(void) {
  eg_model *m = load();
  if (!m) return;
  eg_trainer_options o;
  eg_status s;
  EG_CHECK(eg_trainer_defaults(&o) == EG_OK);
  eg_runtime *want = epoch(m, &o, &s);
  o.shuffle = false;
  eg_runtime *in_order = epoch(m, &o, &s);
  /* junk past the size: shuffle off, another seed, a normalization that is refused */
  o.seed = 5;
  o.normalize = true;
  o.std = 0;
  EG_CHECK(!epoch(m, &o, &s) && s == EG_ERR_ARGUMENT && strstr(eg_last_error(), "std > 0"));
  o.struct_size = offsetof(eg_trainer_options, shuffle);
  eg_runtime *got = epoch(m, &o, &s);
  EG_CHECK_MSG(got, "%s", eg_last_error());
  EG_CHECK(want && in_order && !eg_test_inputs_equal(m, want, in_order));
  EG_CHECK(want && got && eg_test_inputs_equal(m, want, got));
  eg_runtime_destroy(want);
  eg_runtime_destroy(in_order);
  eg_runtime_destroy(got);
  eg_model_destroy(m);
}

static void test_short_filled(void) {
  eg_model *m = load();
  if (!m) return;
  eg_tensor_desc d;
  memset(&d, 0xab, sizeof d);
  const size_t n = offsetof(eg_tensor_desc, state_dict);
  EG_CHECK((eg_model_input)(m, 0, &d, n) == EG_OK && d.name && d.tensor.rank >= 1);
  const unsigned char *past = (const unsigned char *)&d + n;
  for (size_t k = 0; k < sizeof d - n; k++) EG_CHECK(past[k] == 0xab);
  eg_model_destroy(m);
}

static int event_sizes(const eg_trainer_event *e, void *user) {
  *(bool *)user &= e->struct_size == sizeof *e && EG_HAS_FIELD(e, eg_trainer_event, skipped_steps);
  return 0;
}

static void test_newer_caller(void) {
  eg_model *m = load();
  eg_runtime *rt = NULL;
  if (!m) return;
  struct {
    eg_runtime_options o;
    unsigned char future[16]; /* fields a newer header added */
  } newer = {EG_RUNTIME_OPTIONS(.num_threads = 1), {0}};
  newer.o.struct_size = sizeof newer;
  EG_CHECK_MSG(eg_runtime_create_with_options(m, &newer.o, &rt) == EG_OK, "%s", eg_last_error());
  eg_runtime_destroy(rt);
  rt = NULL;
  newer.future[9] = 3;
  char needle[120];
  snprintf(needle, sizeof needle, "eg_runtime_options byte %zu of %zu (0x03)",
           sizeof(eg_runtime_options) + 9, sizeof newer);
  EXPECT(eg_runtime_create_with_options(m, &newer.o, &rt), EG_ERR_ARGUMENT, needle);
  EG_CHECK(!rt);
  struct {
    eg_tensor_desc d;
    unsigned char future[16];
  } filled;
  memset(&filled, 0xab, sizeof filled);
  EG_CHECK((eg_model_input)(m, 0, &filled.d, sizeof filled) == EG_OK && filled.d.name);
  for (size_t k = 0; k < sizeof filled.future; k++) EG_CHECK(filled.future[k] == 0);
  /* a trainer's events: the library's size */
  rt = ready(m);
  eg_trainer_options t;
  eg_trainer *tr = NULL;
  EG_CHECK(eg_trainer_defaults(&t) == EG_OK && rt && eg_trainer_create(rt, &t, &tr) == EG_OK);
  eg_tensor x, y;
  EG_CHECK(eg_npy_load(EG_TEST_DATA "/tiny_step_inputs/input.npy", &x) == EG_OK);
  EG_CHECK(eg_npy_load(EG_TEST_DATA "/tiny_step_inputs/target.npy", &y) == EG_OK);
  const eg_trainer_array data[] = {EG_TRAINER_ARRAY("input", x), EG_TRAINER_ARRAY("target", y)};
  bool sized = true;
  if (tr) eg_trainer_set_callback(tr, event_sizes, &sized);
  EG_CHECK(tr && eg_trainer_set_data(tr, data, 2) == EG_OK && eg_trainer_fit(tr, 1) == EG_OK);
  EG_CHECK(sized);
  eg_trainer_destroy(tr);
  eg_tensor_free(&x);
  eg_tensor_free(&y);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_refused);
  EG_RUN(test_short_runtime_options);
  EG_RUN(test_short_optimizer_options);
  EG_RUN(test_short_trainer_options);
  EG_RUN(test_short_filled);
  EG_RUN(test_newer_caller);
  return eg_test_summary();
}
