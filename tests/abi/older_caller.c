/* older_caller.c — an app built against an older edgegrad.h (tests/abi/edgegrad_older.h: each
 * structure without the fields later headers appended), linked with today's shared library.
 * Every structure it hands over or has filled lies at the very end of a readable page, the
 * next page unmapped: a library that read or wrote past the caller's struct_size (or out_size)
 * — its own, longer, sizeof — faults here (SIGSEGV; under AddressSanitizer, a SEGV report).
 * Checked, on tiny_step: the fields an older caller has are read and filled (a memory limit
 * refuses, an SoC is found, defaults are filled), the fields it lacks take their defaults
 * (no partition dump, the SoC's precision, no loss scaling, ...), and a trainer built from
 * older options, optimizer options and arrays trains and reports events at least as long as
 * the caller's. Prints "N passed, N failed"; exit 1 on any failure. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "edgegrad_older.h"

static int failed, passed;

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (cond) {                                                                          \
      passed++;                                                                          \
    } else {                                                                             \
      failed++;                                                                          \
      fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond,       \
              eg_last_error());                                                          \
    }                                                                                    \
  } while (0)

/* `size` zeroed bytes that end where an inaccessible page starts (size a multiple of 8, so
 * the block is aligned for any of the structures). Never freed: the process is short. */
static void *guarded(size_t size) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (size + page - 1) / page * page;
  unsigned char *p = mmap(NULL, n + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
  if (p == MAP_FAILED || mprotect(p + n, page, PROT_NONE) != 0) {
    perror("older_caller: mmap");
    _exit(2);
  }
  return p + n - size;
}
#define GUARDED(type) ((type *)guarded(sizeof(type)))

static eg_model *load(void) {
  eg_model *m = NULL;
  CHECK(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK);
  return m;
}

/* Every input of tiny_step from its .npy; 1, or 0 when one fails. */
static int set_inputs(const eg_model *m, eg_runtime *rt) {
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc *d = GUARDED(eg_tensor_desc);
    eg_tensor t;
    char path[512];
    if (eg_model_input(m, i, d) != EG_OK) return 0;
    snprintf(path, sizeof path, EG_TEST_DATA "/tiny_step_inputs/%s.npy", d->name);
    if (eg_npy_load(path, &t) != EG_OK) return 0;
    const eg_status s = eg_runtime_set_input(rt, d->name, &t);
    eg_tensor_free(&t);
    if (s != EG_OK) return 0;
  }
  return 1;
}

static void runtime_options(const eg_model *m) {
  eg_runtime_options *o = GUARDED(eg_runtime_options);
  eg_runtime *rt = NULL;
  *o = (eg_runtime_options){.struct_size = sizeof *o, .max_memory_bytes = 1};
  CHECK(eg_runtime_create_with_options(m, o, &rt) == EG_ERR_LIMIT && !rt);
  /* dump_partitions_dir and precision are not the caller's: off and the program's (a
   * partition dump on a graph that is not compiled would be refused) */
  *o = (eg_runtime_options){.struct_size = sizeof *o, .num_threads = 1};
  CHECK(eg_runtime_create_with_options(m, o, &rt) == EG_OK);
  CHECK(rt && set_inputs(m, rt) && eg_runtime_run(rt) == EG_OK && !eg_runtime_profile_count(rt));
  eg_runtime_destroy(rt);
}

static void compile_options(const eg_model *m) {
  eg_compile_options *o = GUARDED(eg_compile_options);
  *o = (eg_compile_options){.struct_size = sizeof *o, .soc = "SM8650"};
  eg_compile_report *r = NULL;
  CHECK(eg_compile_report_create(m, o, &r) == EG_OK);
  /* precision is not the caller's: the SoC's, fp16 on SM8650 */
  CHECK(r && strcmp(eg_compile_report_precision(r), "fp16") == 0);
  eg_compile_report_destroy(r);
}

static void filled(const eg_model *m) {
  eg_tensor_desc *d = GUARDED(eg_tensor_desc);
  CHECK(eg_model_input(m, 0, d) == EG_OK && d->name && d->tensor.rank >= 1);
  eg_target_info *t = GUARDED(eg_target_info);
  CHECK(eg_get_target(0, t) == EG_OK && t->soc && t->product && t->htp_arch > 0 && t->note);
}

/* The optimizer options an older caller fills with the defaults and hands back. */
static eg_optimizer_options *adam(void) {
  eg_optimizer_options *o = GUARDED(eg_optimizer_options);
  CHECK(eg_optimizer_defaults(EG_OPTIMIZER_ADAM, o) == EG_OK && o->struct_size == sizeof *o &&
        o->lr == 1e-3 && o->beta1 == 0.9 && o->beta2 == 0.999 && o->eps == 1e-8);
  o->lr = 0.01;
  return o;
}

static void optimizer_options(const eg_model *m) {
  eg_runtime *rt = NULL;
  eg_optimizer *opt = NULL;
  CHECK(eg_runtime_create_with_options(m, NULL, &rt) == EG_OK);
  CHECK(rt && set_inputs(m, rt) && eg_runtime_run(rt) == EG_OK);
  CHECK(rt && eg_optimizer_create(rt, adam(), &opt) == EG_OK);
  /* loss scaling is not the caller's: none */
  CHECK(opt && eg_optimizer_loss_scaling(opt) == EG_LOSS_SCALE_NONE &&
        eg_optimizer_step(opt) == EG_OK);
  eg_optimizer_destroy(opt);
  eg_runtime_destroy(rt);
}

static int on_event(const eg_trainer_event *e, void *user) {
  int *events = user;
  if (e->struct_size >= sizeof *e) ++*events; /* the library's event holds the caller's */
  return 0;
}

static void trainer(const eg_model *m) {
  eg_runtime *rt = NULL;
  eg_trainer *tr = NULL;
  eg_tensor x, y;
  CHECK(eg_npy_load(EG_TEST_DATA "/tiny_step_inputs/input.npy", &x) == EG_OK);
  CHECK(eg_npy_load(EG_TEST_DATA "/tiny_step_inputs/target.npy", &y) == EG_OK);
  CHECK(eg_runtime_create_with_options(m, NULL, &rt) == EG_OK && set_inputs(m, rt));
  eg_trainer_options *o = GUARDED(eg_trainer_options);
  CHECK(eg_trainer_defaults(o) == EG_OK && o->struct_size == sizeof *o && o->lr_step == 1 &&
        o->lr_gamma == 0.1 && !o->optimizer);
  o->optimizer = adam();
  CHECK(rt && eg_trainer_create(rt, o, &tr) == EG_OK);
  /* the arrays, the last one ending at the guard: read with the caller's stride */
  eg_trainer_array *a = guarded(2 * sizeof *a);
  a[0] = (eg_trainer_array){sizeof *a, "input", x};
  a[1] = (eg_trainer_array){sizeof *a, "target", y};
  int events = 0;
  CHECK(tr && eg_trainer_set_data(tr, a, 2) == EG_OK);
  if (tr) eg_trainer_set_callback(tr, on_event, &events);
  CHECK(tr && eg_trainer_fit(tr, 1) == EG_OK && events >= 2); /* a step and the epoch */
  eg_trainer_destroy(tr);
  eg_runtime_destroy(rt);
  eg_tensor_free(&x);
  eg_tensor_free(&y);
}

int main(void) {
  eg_model *m = load();
  if (m) {
    runtime_options(m);
    compile_options(m);
    filled(m);
    optimizer_options(m);
    trainer(m);
  }
  eg_model_destroy(m);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
