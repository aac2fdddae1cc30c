/* run_egp.c — the smallest app of the runtime library (libedgegrad_rt): loads a compiled
 * program (.egp, written by `edgegrad compile -o`), sets each input from NAME=FILE.npy, runs one
 * step and writes every output to OUTDIR/<output name>.npy. It links no compiler: no graph
 * JSON loader, no passes, no lowering.
 *
 *   run_egp PROGRAM.egp OUTDIR NAME=FILE.npy ...
 *
 * Exit status: 0 ok, 1 the load or run failed, 2 bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgegrad.h"

static int fail(eg_model *m, eg_runtime *rt) {
  fprintf(stderr, "run_egp: %s\n", eg_last_error());
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fputs("usage: run_egp PROGRAM.egp OUTDIR NAME=FILE.npy ...\n", stderr);
    return 2;
  }
  if (eg_version() / 100 != EG_VERSION_NUMBER / 100)
    fprintf(stderr, "run_egp: built against edgegrad %s, running with %s\n", EG_VERSION_STRING,
            eg_version_string());
  eg_model *m = NULL;
  eg_runtime *rt = NULL;
  if (eg_model_load_compiled(argv[1], &m) != EG_OK || eg_runtime_create(m, &rt) != EG_OK)
    return fail(m, rt);
  for (int i = 3; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) {
      fprintf(stderr, "run_egp: %s: expected NAME=FILE.npy\n", argv[i]);
      eg_runtime_destroy(rt);
      eg_model_destroy(m);
      return 2;
    }
    *eq = '\0';
    eg_tensor x;
    if (eg_npy_load(eq + 1, &x) != EG_OK) return fail(m, rt);
    eg_status s = eg_runtime_set_input(rt, argv[i], &x);
    eg_tensor_free(&x);
    if (s != EG_OK) return fail(m, rt);
  }
  if (eg_runtime_run(rt) != EG_OK) return fail(m, rt);
  for (int i = 0; i < eg_model_num_outputs(m); i++) {
    eg_tensor_desc d;
    eg_tensor y;
    char path[4096];
    if (eg_model_output(m, i, &d) != EG_OK || eg_runtime_output(rt, i, &y) != EG_OK)
      return fail(m, rt);
    if (snprintf(path, sizeof path, "%s/%s.npy", argv[2], d.name) >= (int)sizeof path) {
      fprintf(stderr, "run_egp: %s/%s.npy: path too long\n", argv[2], d.name);
      eg_runtime_destroy(rt);
      eg_model_destroy(m);
      return 1;
    }
    if (eg_npy_save(path, &y) != EG_OK) return fail(m, rt);
    printf("%s: %s [", d.name, eg_dtype_name(y.dtype));
    for (int k = 0; k < y.rank; k++) printf("%s%lld", k ? ", " : "", (long long)y.shape[k]);
    printf("]\n");
  }
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
  return 0;
}
