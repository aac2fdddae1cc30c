/* test_fake_backend.c — a second backend behind the seam (fake.h): the conformance steps it
 * supports compile for it (the rest of each step on the CPU, every CPU node with its reason),
 * are written to a .egp that reads back (the fake partitions from their own records) and
 * writes again to the same bytes, and run: the fake partitions run on the fake executor, and
 * every output matches the CPU path's (within float32 rounding: the fake's Conv2d sums in
 * another order than the CPU kernels).
 *
 * Steps: with no argument, the fixtures of tests/data with convolutions and elementwise ops
 * (and a .egp naming an unknown backend is refused); else the graph JSONs named on the command
 * line, a folder standing for its *.json (ctest backends/fake@zoo: the conformance zoo's steps,
 * tests/backends/export_zoo.py). Each step prints its nodes on the fake NPU and on the CPU; the
 * named steps fail when there are none, or when no step puts a node on the fake NPU. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/compile.h"
#include "compiler/egp_write.h"
#include "eg_test.h"
#include "fake.h"
#include "compiler/frontend/frontend.h"
#include "program/egp_format.h"
#include "target/targets.h"

static const char *const fixtures[] = {"npu_conv_fwd", "npu_conv_step", "npu_conv_step_nogw",
                                       "npu_conv_train", "npu_conv_pair", "npu_conv_gw_pad",
                                       "pass_mse_step"};

/* Deterministic inputs for every model input: floats in [-1, 1) (buffers in [0.5, 1.5): a
 * running variance is positive), integers 0 (a valid class), bools true. */
static bool set_inputs(const eg_model *m, eg_runtime *rt) {
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    if (eg_model_input(m, i, &d) != EG_OK) return false;
    const int64_t n = eg_tensor_numel(&d.tensor);
    const size_t es = eg_dtype_size(d.tensor.dtype);
    void *buf = calloc((size_t)n + 1, es);
    if (!buf) return false;
    for (int64_t k = 0; k < n; k++) {
      const float u = (float)(((k * 7919 + i * 104729) % 2000) - 1000) / 1000.0f;
      if (d.tensor.dtype == EG_DTYPE_FLOAT32)
        ((float *)buf)[k] = d.role == EG_ROLE_BUFFER ? 1.0f + u / 2 : u;
      else if (d.tensor.dtype == EG_DTYPE_BOOL)
        ((unsigned char *)buf)[k] = 1;
    }
    eg_tensor t = d.tensor;
    t.data = buf;
    const eg_status s = eg_runtime_set_input(rt, d.name, &t);
    free(buf);
    if (s != EG_OK) return false;
  }
  return true;
}

/* Outputs of the CPU path (`cpu`) and the compiled program (`npu`) agree: integers exactly,
 * floats within 1e-4 of each output's largest magnitude (the fake's Conv2d sums in double, the
 * CPU's in float32 in another order; through a backward of tanh layers the difference grows
 * to a few 1e-5 of the gradient's scale). */
static bool same_outputs(const char *stem, const eg_model *m, const eg_runtime *cpu,
                         const eg_runtime *npu) {
  bool ok = true;
  for (int o = 0; o < eg_model_num_outputs(m); o++) {
    eg_tensor a, b;
    if (eg_runtime_output(cpu, o, &a) != EG_OK || eg_runtime_output(npu, o, &b) != EG_OK)
      return false;
    const int64_t n = eg_tensor_numel(&a);
    if (a.dtype != EG_DTYPE_FLOAT32) {
      ok = ok && memcmp(a.data, b.data, (size_t)n * eg_dtype_size(a.dtype)) == 0;
      continue;
    }
    double scale = 0;
    for (int64_t k = 0; k < n; k++) scale = fmax(scale, fabs(((const float *)a.data)[k]));
    for (int64_t k = 0; k < n; k++) {
      const double x = ((const float *)a.data)[k], y = ((const float *)b.data)[k];
      if (!(fabs(x - y) <= 1e-4 * scale + 1e-7)) { /* NaN on either side fails */
        fprintf(stderr, "%s: output %d element %lld: cpu %.9g fake %.9g\n", stem, o,
                (long long)k, x, y);
        ok = false;
        break;
      }
    }
  }
  return ok;
}

/* One step: compile for the fake backend, check the placement and its reasons, write and read
 * back the .egp, run it against the CPU path. Returns the number of fake partitions; *npu the
 * number of nodes on the fake NPU. */
static int check_step(const char *json, const char *stem, int *npu) {
  eg_graph *g = NULL;
  eg_program p;
  memset(&p, 0, sizeof p);
  EG_CHECK_MSG(eg_graph_load_json(json, &g) == EG_OK, "%s: %s", stem, eg_last_error());
  if (!g) return 0;
  eg_partition_options opt = {.target = eg_target_find("SM8650"), .backend = &eg_fake_backend};
  const eg_status built = eg_program_build(g, &opt, &p);
  EG_CHECK_MSG(built == EG_OK, "%s: %s", stem, eg_last_error());
  int parts = built == EG_OK ? p.parts.n_partitions : 0, cpu = 0;
  *npu = 0;
  for (int32_t i = 0; built == EG_OK && i < p.graph->n_nodes; i++) {
    const eg_node_placement *np = &p.parts.nodes[i];
    *npu += np->npu;
    if (np->npu) continue;
    cpu++;
    /* every CPU node says why; getitems follow their producer */
    EG_CHECK_MSG(np->reason && np->reason[0], "%s: node %s on the CPU without a reason", stem,
                 p.graph->nodes[i].name);
    if (cpu <= 2) printf("  %s: %s on the CPU: %s\n", stem, p.graph->nodes[i].name, np->reason);
  }
  for (int32_t k = 0; k < parts; k++)
    EG_CHECK_MSG(p.lowered[k].backend == &eg_fake_rt, "%s: partition %d lowered by %s", stem,
                 (int)k, p.lowered[k].backend ? p.lowered[k].backend->name : "none");
  char path[512];
  snprintf(path, sizeof path, "test_fake_%s.egp", stem);
  void *bytes = NULL, *again = NULL;
  size_t size = 0, size2 = 0;
  eg_egp *e = NULL;
  if (built == EG_OK) {
    EG_CHECK_MSG(eg_egp_write(&p, path) == EG_OK, "%s: %s", stem, eg_last_error());
    EG_CHECK(eg_egp_write_memory(&p, &bytes, &size) == EG_OK);
    EG_CHECK_MSG(eg_egp_read(path, &e) == EG_OK, "%s: %s", stem, eg_last_error());
  }
  if (e) { /* round trip: the program read back writes the same bytes */
    for (int32_t k = 0; k < e->program.parts.n_partitions; k++)
      EG_CHECK(e->program.lowered[k].backend == &eg_fake_rt);
    EG_CHECK(eg_egp_write_memory(&e->program, &again, &size2) == EG_OK);
    EG_CHECK_MSG(size == size2 && memcmp(bytes, again, size) == 0, "%s: the .egp read back "
                 "writes other bytes (%zu, %zu)", stem, size, size2);
    eg_egp_free(e);
  }
  free(bytes);
  free(again);
  eg_model *src = NULL, *prog = NULL;
  eg_runtime *a = NULL, *b = NULL;
  EG_CHECK(eg_model_load(json, &src) == EG_OK);
  if (built == EG_OK) EG_CHECK_MSG(eg_model_load(path, &prog) == EG_OK, "%s: %s", stem, eg_last_error());
  if (src && prog) {
    EG_CHECK(eg_runtime_create(src, &a) == EG_OK);
    EG_CHECK_MSG(eg_runtime_create(prog, &b) == EG_OK, "%s: %s", stem, eg_last_error());
  }
  if (a && b) {
    const long before = eg_fake_ops_run();
    EG_CHECK(set_inputs(src, a) && set_inputs(prog, b));
    EG_CHECK(eg_runtime_run(a) == EG_OK);
    EG_CHECK_MSG(eg_runtime_run(b) == EG_OK, "%s: %s", stem, eg_last_error());
    EG_CHECK_MSG(parts == 0 || eg_fake_ops_run() > before, "%s: no fake op ran", stem);
    EG_CHECK(same_outputs(stem, src, a, b));
    eg_npu_partition_info info;
    if (parts > 0) {
      EG_CHECK(eg_model_npu_partition(prog, 0, &info) == EG_OK && strncmp(info.name, "fake_", 5) == 0);
      eg_npu_op_info op;
      EG_CHECK(eg_model_npu_op(prog, 0, 0, &op) == EG_OK && op.num_params == 0);
      EG_CHECK(eg_model_export_onnx(prog, 0, "test_fake.onnx") == EG_ERR_UNSUPPORTED);
    }
  }
  printf("%s: %d fake partition(s), %d node(s) on the fake NPU, %d on the CPU\n", stem, parts,
         *npu, cpu);
  eg_runtime_destroy(a);
  eg_runtime_destroy(b);
  eg_model_destroy(src);
  eg_model_destroy(prog);
  if (built == EG_OK) eg_program_free(&p);
  eg_graph_destroy(g);
  remove(path);
  return parts;
}

static int n_args;
static char **args;

static void test_fixtures(void) {
  int with_parts = 0, npu;
  for (size_t i = 0; i < sizeof fixtures / sizeof *fixtures; i++) {
    char json[512];
    snprintf(json, sizeof json, "%s/%s.json", EG_TEST_DATA, fixtures[i]);
    with_parts += check_step(json, fixtures[i], &npu) > 0;
  }
  /* the conv fixtures all have forward convolutions and ReLUs the fake NPU runs */
  EG_CHECK_MSG(with_parts >= 6, "%d steps with fake partitions", with_parts);
}

/* One named step; counts it in *steps, and in *with_npu when a node of it is on the NPU. */
static void named_step(const char *json, int *steps, int *with_npu) {
  const char *slash = strrchr(json, '/');
  int npu = 0;
  check_step(json, slash ? slash + 1 : json, &npu);
  *steps += 1;
  *with_npu += npu > 0;
}

/* The steps named on the command line: files, and each folder's *.json (in name order). */
static void test_named_steps(void) {
  int steps = 0, with_npu = 0;
  for (int i = 0; i < n_args; i++) {
    struct stat st;
    if (stat(args[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
      named_step(args[i], &steps, &with_npu);
      continue;
    }
    char pattern[512];
    snprintf(pattern, sizeof pattern, "%s/*.json", args[i]);
    glob_t gl;
    const int r = glob(pattern, 0, NULL, &gl);
    EG_CHECK_MSG(r == 0, "%s: no step (*.json) in the folder", args[i]);
    for (size_t k = 0; r == 0 && k < gl.gl_pathc; k++)
      named_step(gl.gl_pathv[k], &steps, &with_npu);
    if (r == 0) globfree(&gl);
  }
  printf("%d step(s) ran, %d with nodes on the fake NPU\n", steps, with_npu);
  EG_CHECK_MSG(steps > 0, "no step named");
  EG_CHECK_MSG(with_npu > 0, "none of the %d steps puts a node on the fake NPU", steps);
}

/* A .egp naming a backend this build lacks is refused in one line naming it. */
static void test_unknown_backend_refused(void) {
  char json[512];
  snprintf(json, sizeof json, "%s/npu_conv_fwd.json", EG_TEST_DATA);
  eg_graph *g = NULL;
  eg_program p;
  EG_CHECK(eg_graph_load_json(json, &g) == EG_OK);
  eg_partition_options opt = {.target = eg_target_find("SM8650"), .backend = &eg_fake_backend};
  if (!g || eg_program_build(g, &opt, &p) != EG_OK) {
    EG_CHECK(0);
    eg_graph_destroy(g);
    return;
  }
  void *bytes = NULL;
  size_t size = 0;
  EG_CHECK(p.parts.n_partitions > 0 && eg_egp_write_memory(&p, &bytes, &size) == EG_OK);
  /* rename the backend in STRINGS: "fake" -> "fakf" (same length) */
  unsigned char *f = bytes;
  bool renamed = false;
  for (size_t i = 0; bytes && i + 8 <= size && !renamed; i++)
    if (memcmp(f + i, "\4\0\0\0fake", 8) == 0) f[i + 7] = 'f', renamed = true;
  EG_CHECK(renamed);
  eg_egp *e = NULL;
  EG_CHECK(eg_egp_read_memory("renamed.egp", bytes, size, &e) == EG_ERR_UNSUPPORTED);
  EG_CHECK_MSG(strstr(eg_last_error(), "renamed.egp: NPU: partition 0: backend fakf unknown") &&
               !strchr(eg_last_error(), '\n'), "%s", eg_last_error());
  eg_egp_free(e);
  free(bytes);
  eg_program_free(&p);
  eg_graph_destroy(g);
}

int main(int argc, char **argv) {
  n_args = argc - 1;
  args = argv + 1;
  if (eg_backend_register(&eg_fake_backend) != EG_OK) {
    fprintf(stderr, "register: %s\n", eg_last_error());
    return 1;
  }
  EG_CHECK(eg_backend_named("fake") == &eg_fake_backend && eg_backend_rt_named("fake") == &eg_fake_rt);
  if (n_args > 0) {
    EG_RUN(test_named_steps);
  } else {
    EG_RUN(test_fixtures);
    EG_RUN(test_unknown_backend_refused);
  }
  return eg_test_summary();
}
