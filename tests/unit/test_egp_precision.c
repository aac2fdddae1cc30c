/* test_egp_precision.c — the precision a compiled program records (.egp PROGRAM's u8 after
 * the SoC, since version 5; egp_format.h): written as compiled (fp16 here), read back into the
 * program and eg_model_program_info / eg_model_npu_tensor; an unknown code refused; a file of
 * an older version refused; compile and runtime options out of range refused. And
 * the default (precision unset) for every SoC eg_get_target lists: its float_precision (fp16)
 * in the report, the saved program and the in-memory runtime, fp32 on a SoC without a float
 * path; EG_PRECISION_FP32 gives fp32 everywhere. */
#include <stdint.h>
#include <string.h>

#include "eg_test.h"
#include "api/runtime.h"
#include "program/egp_format.h"
#include "util/error.h"

static unsigned char *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*size + 1);
  if (b && fread(b, 1, *size, f) != *size) {
    free(b);
    b = NULL;
  }
  fclose(f);
  return b;
}

static uint64_t le64_at(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* The section table entry of PROGRAM (kind 5). */
static unsigned char *program_entry(unsigned char *file) {
  for (unsigned i = 0; i < EG_EGP_N_SECTIONS; i++) {
    unsigned char *e = file + EG_EGP_HEADER_SIZE + i * EG_EGP_SECTION_ENTRY_SIZE;
    if (e[0] == EG_EGP_SECTION_PROGRAM) return e;
  }
  return NULL;
}

static eg_status read_image(const unsigned char *b, size_t n, eg_precision *precision) {
  eg_egp *e = NULL;
  const eg_status s = eg_egp_read_memory("p.egp", b, n, &e);
  if (e) *precision = e->program.precision;
  eg_egp_free(e);
  return s;
}

static void test_recorded(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  if (!m) return;
  eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650", .precision = EG_PRECISION_FP16);
  EG_CHECK_MSG(eg_model_save_compiled(m, &opt, "precision_fp16.egp") == EG_OK, "%s",
               eg_last_error());
  opt.precision = (eg_precision)9;
  EG_CHECK(eg_model_save_compiled(m, &opt, "never.egp") == EG_ERR_ARGUMENT &&
           strstr(eg_last_error(), "precision (9)"));
  eg_model_destroy(m);
  /* loaded: the program and its float tensors say fp16 */
  eg_model *p = NULL;
  EG_CHECK_MSG(eg_model_load("precision_fp16.egp", &p) == EG_OK, "%s", eg_last_error());
  eg_program_info pi;
  EG_CHECK(p && eg_model_program_info(p, &pi) == EG_OK && strcmp(pi.precision, "fp16") == 0);
  eg_npu_tensor_info t;
  int floats = 0;
  for (int i = 0; p && eg_model_npu_tensor(p, 0, i, &t) == EG_OK; i++) {
    const bool is_float = strcmp(t.dtype, "float32") == 0;
    floats += is_float;
    EG_CHECK(is_float ? t.precision && strcmp(t.precision, "fp16") == 0 : t.precision == NULL);
  }
  EG_CHECK(floats > 0);
  eg_runtime_options ro = EG_RUNTIME_OPTIONS(.precision = (eg_precision)3);
  eg_runtime *rt = NULL;
  EG_CHECK(p && eg_runtime_create_with_options(p, &ro, &rt) == EG_ERR_ARGUMENT && !rt &&
           strstr(eg_last_error(), "precision (3)"));
  eg_model_destroy(p);
  /* the byte itself: 2 read as fp16, 3 refused; a file of an older version (4 had no
   * precision, 5 no roles) is refused with a word to compile the graph again */
  size_t n = 0;
  unsigned char *b = read_all("precision_fp16.egp", &n), *entry = b ? program_entry(b) : NULL;
  EG_CHECK(entry != NULL);
  if (!entry) {
    free(b);
    return;
  }
  const uint64_t off = le64_at(entry + 8);
  eg_precision got = EG_PRECISION_DEFAULT;
  EG_CHECK(b[off + 4] == EG_PRECISION_FP16 && read_image(b, n, &got) == EG_OK &&
           got == EG_PRECISION_FP16);
  b[off + 4] = 3;
  EG_CHECK(read_image(b, n, &got) == EG_ERR_FORMAT &&
           strstr(eg_last_error(), "PROGRAM: precision (3): must be 1 (fp32) or 2 (fp16)"));
  b[off + 4] = EG_PRECISION_FP16;
  for (unsigned char v = 3; v <= 5; v++) {
    b[4] = v;
    EG_CHECK_MSG(read_image(b, n, &got) == EG_ERR_UNSUPPORTED &&
                 strstr(eg_last_error(), "written by an older edgegrad") &&
                 strstr(eg_last_error(), "compile the graph again"), "%s", eg_last_error());
  }
  free(b);
}

/* 16 for "fp16", 32 for "fp32", 0 for NULL, -1 for anything else. */
static int precision_bits(const char *name) {
  if (!name) return 0;
  return strcmp(name, "fp16") == 0 ? 16 : strcmp(name, "fp32") == 0 ? 32 : -1;
}

/* The precision compiling `m` for `soc` with `precision` takes, as the report, a saved and
 * reloaded program and the in-memory runtime have it: "fp16" or "fp32" when all three agree,
 * else NULL (a check failure says which). */
static const char *compiled_precision(const eg_model *m, const char *soc, eg_precision precision) {
  const eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = soc, .precision = precision);
  eg_compile_report *rep = NULL;
  EG_CHECK_MSG(eg_compile_report_create(m, &opt, &rep) == EG_OK, "%s: %s", soc, eg_last_error());
  const int reported = precision_bits(rep ? eg_compile_report_precision(rep) : NULL);
  const bool has_partitions = rep && eg_compile_report_num_partitions(rep) > 0;
  eg_compile_report_destroy(rep);
  eg_model *p = NULL;
  eg_program_info pi = {0};
  EG_CHECK_MSG(eg_model_save_compiled(m, &opt, "precision_default.egp") == EG_OK &&
                   eg_model_load("precision_default.egp", &p) == EG_OK &&
                   eg_model_program_info(p, &pi) == EG_OK,
               "%s: %s", soc, eg_last_error());
  const int recorded = precision_bits(pi.precision);
  eg_model_destroy(p);
  eg_runtime *rt = NULL;
  EG_CHECK_MSG(eg_runtime_create_compiled(m, &opt, &rt) == EG_OK, "%s: %s", soc, eg_last_error());
  const bool rt_fp16 = rt && eg_runtime_npu_fp16(rt);
  eg_runtime_destroy(rt);
  const bool agree = reported > 0 && recorded == reported &&
                     rt_fp16 == (has_partitions && reported == 16);
  EG_CHECK_MSG(agree, "%s (precision %d): report fp%d, program fp%d, runtime %s", soc,
               (int)precision, reported, recorded, rt_fp16 ? "fp16" : "not fp16");
  return !agree ? NULL : reported == 16 ? "fp16" : "fp32";
}

static void test_default(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  if (!m) return;
  int n_fp16 = 0, n_none = 0;
  for (int i = 0; i < eg_num_targets(); i++) {
    eg_target_info t;
    EG_CHECK(eg_get_target(i, &t) == EG_OK && t.float_precision);
    if (!t.float_precision) continue;
    const bool fp16 = strcmp(t.float_precision, "fp16") == 0;
    n_fp16 += fp16;
    n_none += !fp16;
    const char *got = compiled_precision(m, t.soc, EG_PRECISION_DEFAULT);
    EG_CHECK_MSG(got && strcmp(got, fp16 ? "fp16" : "fp32") == 0, "%s (float path %s): %s",
                 t.soc, t.float_precision, got ? got : "-");
    got = compiled_precision(m, t.soc, EG_PRECISION_FP32);
    EG_CHECK_MSG(got && strcmp(got, "fp32") == 0, "%s with FP32: %s", t.soc, got ? got : "-");
  }
  EG_CHECK_MSG(n_fp16 > 0 && n_none > 0, "%d SoCs with an fp16 float path, %d without", n_fp16,
               n_none);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_recorded);
  EG_RUN(test_default);
  return eg_test_summary();
}
