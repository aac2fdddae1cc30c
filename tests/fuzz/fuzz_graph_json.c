/* fuzz_graph_json.c — bytes as a graph file and its weights: the input up to its first NUL
 * byte is written as graph.json, the rest (possibly nothing) as weights.safetensors beside it
 * (the seeds, tests/fuzz/make_corpus.sh, name that file in "weights"). The graph is loaded
 * with eg_model_load and driven through what the CLI does with a graph:
 *   - everything `edgegrad info` reads (eg_fuzz_describe);
 *   - a compile for one SoC (picked by a hash of the input from the target table): the
 *     placement report, then eg_model_save_compiled to a temporary .egp, which eg_model_load
 *     must accept (a program edgegrad wrote is one edgegrad reads) and which is described like
 *     `edgegrad inspect`;
 *   - when the model is small (EG_FUZZ_RUN_MAX_BYTES), a run on the CPU kernels and a run of
 *     the compiled program, each with fixed inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

static const char *pick_soc(const uint8_t *data, size_t size) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
  eg_target_info t;
  int n = eg_num_targets();
  if (n <= 0 || eg_get_target((int)(h % (uint32_t)n), &t) != EG_OK) return "SM8650";
  return t.soc;
}

static void run_model(const eg_model *m) {
  eg_runtime *rt = NULL;
  if (eg_runtime_create(m, &rt) == EG_OK) eg_fuzz_run(m, rt);
  eg_runtime_destroy(rt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t json_size = nul ? (size_t)(nul - data) : size;
  const uint8_t *weights = nul ? nul + 1 : data + size;
  eg_fuzz_input("weights.safetensors", weights, (size_t)(data + size - weights));
  const char *gp = eg_fuzz_input("graph.json", data, json_size);
  char graph_path[1024];
  snprintf(graph_path, sizeof graph_path, "%s", gp);

  eg_model *m = NULL;
  if (eg_model_load(graph_path, &m) != EG_OK) return 0;
  eg_fuzz_describe(m);

  eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = pick_soc(data, size));
  eg_compile_report *rep = NULL;
  if (eg_compile_report_create(m, &opt, &rep) == EG_OK) {
    for (int i = 0; i < eg_compile_report_num_nodes(rep); i++) {
      eg_placement_info p;
      eg_compile_report_node(rep, i, &p);
    }
    eg_compile_report_destroy(rep);
  }

  char egp_path[1024];
  snprintf(egp_path, sizeof egp_path, "%s", eg_fuzz_path("compiled.egp"));
  if (eg_model_save_compiled(m, &opt, egp_path) == EG_OK) {
    eg_model *prog = NULL;
    if (eg_model_load(egp_path, &prog) != EG_OK) {
      fprintf(stderr, "fuzz_graph_json: a program edgegrad wrote for %s is refused: %s\n",
              opt.soc, eg_last_error());
      abort();
    }
    eg_fuzz_describe(prog);
    if (eg_fuzz_run_bytes(prog) <= EG_FUZZ_RUN_MAX_BYTES) run_model(prog);
    eg_model_destroy(prog);
  }
  if (eg_fuzz_run_bytes(m) <= EG_FUZZ_RUN_MAX_BYTES) run_model(m);
  eg_model_destroy(m);
  return 0;
}
