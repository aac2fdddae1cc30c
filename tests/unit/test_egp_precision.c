/* test_egp_precision.c — the precision a compiled program records (.egp version 5, PROGRAM's
 * u8 after the SoC; egp_format.h): written as compiled (fp16 here), read back into the
 * program and eg_model_program_info / eg_model_npu_tensor; an unknown code refused; a version
 * 4 file (no such byte) read as fp32; compile and runtime options out of range refused. */
#include <stdint.h>
#include <string.h>

#include "eg_test.h"
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

static void set64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
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
  eg_compile_options opt = {.soc = "SM8650", .precision = EG_PRECISION_FP16};
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
  eg_runtime_options ro = {.precision = (eg_precision)3};
  eg_runtime *rt = NULL;
  EG_CHECK(p && eg_runtime_create_with_options(p, &ro, &rt) == EG_ERR_ARGUMENT && !rt &&
           strstr(eg_last_error(), "precision (3)"));
  eg_model_destroy(p);
  /* the byte itself: 2 read as fp16, 3 refused, and a version 4 file without it is fp32 */
  size_t n = 0;
  unsigned char *b = read_all("precision_fp16.egp", &n), *entry = b ? program_entry(b) : NULL;
  EG_CHECK(entry != NULL);
  if (!entry) {
    free(b);
    return;
  }
  const uint64_t off = le64_at(entry + 8), size = le64_at(entry + 16);
  eg_precision got = EG_PRECISION_DEFAULT;
  EG_CHECK(b[off + 4] == EG_PRECISION_FP16 && read_image(b, n, &got) == EG_OK &&
           got == EG_PRECISION_FP16);
  b[off + 4] = 3;
  EG_CHECK(read_image(b, n, &got) == EG_ERR_FORMAT &&
           strstr(eg_last_error(), "PROGRAM: precision (3): must be 1 (fp32) or 2 (fp16)"));
  memmove(b + off + 4, b + off + 5, (size_t)size - 5); /* version 4: no precision byte */
  b[off + size - 1] = 0;                                /* now padding */
  set64(entry + 16, size - 1);
  b[4] = 4;
  got = EG_PRECISION_DEFAULT;
  EG_CHECK_MSG(read_image(b, n, &got) == EG_OK && got == EG_PRECISION_FP32, "%s",
               eg_last_error());
  b[4] = 3;
  EG_CHECK(read_image(b, n, &got) == EG_ERR_UNSUPPORTED && strstr(eg_last_error(), "version (3)"));
  free(b);
}

int main(void) {
  EG_RUN(test_recorded);
  return eg_test_summary();
}
