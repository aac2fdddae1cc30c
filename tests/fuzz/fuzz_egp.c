/* fuzz_egp.c — bytes as a compiled program file (.egp, src/program/egp_format.h), loaded with
 * eg_model_load (which tells it from a graph file by its magic), then walked as `edgegrad
 * inspect` and `edgegrad info` do (eg_fuzz_describe) and, when small (EG_FUZZ_RUN_MAX_BYTES),
 * run once with fixed inputs. The libFuzzer build adds a mutator that keeps the file's
 * structure (fuzz_egp_mutator.c), so most mutations reach the section readers. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  eg_model *m = NULL;
  if (eg_model_load(eg_fuzz_input("input.egp", data, size), &m) != EG_OK) return 0;
  eg_fuzz_describe(m);
  if (eg_fuzz_run_bytes(m) <= EG_FUZZ_RUN_MAX_BYTES) {
    eg_runtime *rt = NULL;
    if (eg_runtime_create(m, &rt) == EG_OK) eg_fuzz_run(m, rt);
    eg_runtime_destroy(rt);
  }
  eg_model_destroy(m);
  return 0;
}
