/* test_place_once.c — a compile places the graph once (pass place, partition.h), and the
 * placement the later passes keep up to date is the one a fresh placement of the compiled graph
 * gives.
 *
 * For every fixture of tests/data (a training step, conv fixtures, QDQ models whose pairs
 * fold_qdq removes, fixtures of the other passes) and for SoCs with and without an NPU float
 * path (SM8650, SM8850, SM8350):
 *   - eg_program_build, eg_compile_report_create, eg_model_save_compiled and
 *     eg_runtime_create_compiled each add exactly one to eg_placement_count;
 *   - the program's placement equals eg_partition_graph's on the compiled graph: node by node
 *     (NPU or CPU, the same reason) and partition by partition (the same nodes), so no pass left
 *     a node's placement stale. */
#include <stdlib.h>
#include <string.h>

#include "eg_test.h"
#include "eg_test_files.h"
#include "eg_test_graph.h"

static const char *const fixtures[] = {"tiny_step",      "npu_conv_step", "npu_conv_step_nogw",
                                       "npu_conv_pair",  "npu_conv_fwd",  "npu_conv_bwd",
                                       "quant_net",      "quant_step",    "quant_tuple",
                                       "pass_fills",     "pass_mse_step"};
static const char *const socs[] = {"SM8650", "SM8850", "SM8350"};

/* The program's placement against a fresh one of its compiled graph. */
static void check_same_placement(const eg_program *p, const char *what) {
  eg_partition_options opt = {.target = p->target};
  eg_partitioning fresh;
  EG_CHECK_MSG(eg_partition_graph(p->graph, &opt, &fresh) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(fresh.n_nodes == p->parts.n_nodes, "%s: %d vs %d nodes", what, fresh.n_nodes,
               p->parts.n_nodes);
  for (int32_t i = 0; i < fresh.n_nodes && i < p->parts.n_nodes; i++) {
    const eg_node_placement *a = &p->parts.nodes[i], *b = &fresh.nodes[i];
    EG_CHECK_MSG(a->npu == b->npu && a->partition == b->partition,
                 "%s: node %s: compiled %s/%d, fresh %s/%d", what, p->graph->nodes[i].name,
                 a->npu ? "npu" : "cpu", a->partition, b->npu ? "npu" : "cpu", b->partition);
    EG_CHECK_MSG(a->npu || (a->reason && b->reason && strcmp(a->reason, b->reason) == 0),
                 "%s: node %s: reasons '%s' vs '%s'", what, p->graph->nodes[i].name,
                 a->reason ? a->reason : "(null)", b->reason ? b->reason : "(null)");
  }
  EG_CHECK_MSG(fresh.n_partitions == p->parts.n_partitions, "%s: %d vs %d partitions", what,
               p->parts.n_partitions, fresh.n_partitions);
  eg_partitioning_free(&fresh);
}

static void test_program_build_places_once(void) {
  int npu_nodes = 0;
  for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
    eg_graph *g = eg_test_fixture(fixtures[f]);
    for (size_t k = 0; g && k < sizeof socs / sizeof socs[0]; k++) {
      char what[96];
      snprintf(what, sizeof what, "%s on %s", fixtures[f], socs[k]);
      const long before = eg_placement_count();
      eg_program p;
      if (!eg_test_build(g, socs[k], &p)) continue;
      EG_CHECK_MSG(eg_placement_count() - before == 1, "%s: %ld placements", what,
                   eg_placement_count() - before);
      for (int32_t i = 0; i < p.parts.n_nodes; i++) npu_nodes += p.parts.nodes[i].npu;
      check_same_placement(&p, what);
      eg_program_free(&p);
    }
    eg_graph_destroy(g);
  }
  EG_CHECK_MSG(npu_nodes > 50, "only %d NPU nodes over every fixture: the check saw no NPU", npu_nodes);
}

/* The public compile entry points, on the training step. */
static void test_public_api_places_once(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_test_dir_open("place_once"));
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM8650");
  long before = eg_placement_count();
  eg_compile_report *r = NULL;
  EG_CHECK(m && eg_compile_report_create(m, &opt, &r) == EG_OK);
  EG_CHECK(eg_placement_count() - before == 1);
  eg_compile_report_destroy(r);

  before = eg_placement_count();
  const char *path = path_in("step.egp");
  EG_CHECK_MSG(m && eg_model_save_compiled(m, &opt, path) == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_placement_count() - before == 1);

  before = eg_placement_count();
  eg_runtime *rt = NULL;
  EG_CHECK(m && eg_runtime_create_compiled(m, &opt, &rt) == EG_OK);
  EG_CHECK(eg_placement_count() - before == 1);
  eg_runtime_destroy(rt);

  /* running a compiled program places nothing */
  eg_model *prog = NULL;
  before = eg_placement_count();
  EG_CHECK_MSG(eg_model_load_compiled(path, &prog) == EG_OK, "%s", eg_last_error());
  EG_CHECK(prog && eg_runtime_create(prog, &rt) == EG_OK);
  EG_CHECK(eg_placement_count() == before);
  eg_runtime_destroy(rt);
  eg_model_destroy(prog);
  eg_model_destroy(m);
  EG_CHECK(eg_test_dir_close());
}

int main(void) {
  EG_RUN(test_program_build_places_once);
  EG_RUN(test_public_api_places_once);
  return eg_test_summary();
}
