/* test_copy_alias.c — same-bytes copies on the CPU path are planned onto their source and copy
 * nothing (eg_copy_source; src/runtime/memory.c, copy_aliases), through the public API:
 *   - x -> relu -> detach -> view -> neg: the outputs relu and view are the same bytes (one
 *     pointer), with relu's values, and neg reads them; a second run with other inputs gives
 *     the new values (the alias is not a stale copy);
 *   - a detach of a graph input is not an alias (the caller's input buffer is not the arena's):
 *     its output holds its own copy, and changing the input does not change a finished output;
 *   - eg_copy_source: the self of detach/view, -1 for relu and for a view of another size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_graph.h"
#include "ops/op.h"

static char tmpdir[64];

#define UNARY(name, target, in, out) NODE(name, target, "[" V(in) "]", out)

static const char *chain_values =
    T(0, "[2, 3]") ", " T(1, "[2, 3]") ", " T(2, "[2, 3]") ", " T(3, "[6]") ", " T(4, "[6]") ", "
    T(5, "[2, 3]");
static const char *chain_nodes =
    UNARY("relu", "aten.relu.default", 0, 1) ", "
    UNARY("detach", "aten.detach.default", 1, 2) ", "
    NODE("view", "aten.view.default", "[" V(2) ", [6]]", 3) ", "
    UNARY("neg", "aten.neg.default", 3, 4) ", "
    UNARY("detach_in", "aten.detach.default", 0, 5);
static const char *chain_outputs =
    "{\"name\": \"r\", \"value\": 1}, {\"name\": \"v\", \"value\": 3}, "
    "{\"name\": \"n\", \"value\": 4}, {\"name\": \"d\", \"value\": 5}";

static eg_model *load_chain(void) {
  eg_graph *g = eg_test_graph_json(tmpdir, "chain", "none.safetensors", chain_values,
                                   IN("x", 0), "", chain_nodes, chain_outputs);
  if (!g) return NULL;
  eg_graph_destroy(g);
  char path[128];
  snprintf(path, sizeof path, "%s/chain.json", tmpdir);
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(path, &m) == EG_OK, "%s", eg_last_error());
  return m;
}

static const float *output(const eg_runtime *rt, int i) {
  eg_tensor t;
  EG_CHECK(eg_runtime_output(rt, i, &t) == EG_OK);
  return t.data;
}

static void run_with(eg_runtime *rt, float *x) {
  const eg_tensor in = {.dtype = EG_DTYPE_FLOAT32, .rank = 2, .shape = {2, 3}, .data = x};
  EG_CHECK_MSG(eg_runtime_set_input(rt, "x", &in) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(eg_runtime_run(rt) == EG_OK, "%s", eg_last_error());
}

static void test_chain_shares_bytes(void) {
  eg_model *m = load_chain();
  eg_runtime *rt = NULL;
  EG_CHECK(m && eg_runtime_create(m, &rt) == EG_OK);
  if (!rt) {
    eg_model_destroy(m);
    return;
  }
  for (int round = 0; round < 2; round++) {
    float x[6] = {1, -2, 3, -4, 5, -6};
    if (round) /* other values: the outputs must follow */
      for (int i = 0; i < 6; i++) x[i] = -x[i] * 0.5f;
    float want[6];
    for (int i = 0; i < 6; i++) want[i] = x[i] > 0 ? x[i] : 0;
    run_with(rt, x);
    const float *r = output(rt, 0), *v = output(rt, 1), *n = output(rt, 2), *d = output(rt, 3);
    EG_CHECK_MSG(r == v, "round %d: relu and its detach+view are %p and %p, not one buffer",
                 round, (const void *)r, (const void *)v);
    EG_CHECK(d != x);
    for (int i = 0; i < 6; i++) {
      EG_CHECK_MSG(v[i] == want[i] && n[i] == -want[i] && d[i] == x[i],
                   "round %d element %d: view %g neg %g detach(x) %g, want %g %g %g", round, i,
                   v[i], n[i], d[i], want[i], -want[i], x[i]);
    }
    x[0] = 99; /* the caller's buffer changed after the run: d holds its own copy */
    EG_CHECK(output(rt, 3)[0] != 99);
  }
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

static void test_copy_source(void) {
  eg_graph *g = eg_test_graph_json(tmpdir, "src", "none.safetensors",
                                   T(0, "[2, 3]") ", " T(1, "[2, 3]") ", " T(2, "[2, 3]") ", "
                                   T(3, "[3, 2]") ", " T(4, "[2]"),
                                   IN("x", 0), "",
                                   UNARY("relu", "aten.relu.default", 0, 1) ", "
                                   UNARY("detach", "aten.detach.default", 1, 2) ", "
                                   NODE("view", "aten.view.default", "[" V(2) ", [3, 2]]", 3) ", "
                                   NODE("sum", "aten.sum.dim_IntList", "[" V(3) ", [0]]", 4),
                                   "{\"name\": \"s\", \"value\": 4}");
  if (!g) return;
  EG_CHECK(eg_copy_source(g, &g->nodes[0]) == -1);
  EG_CHECK(eg_copy_source(g, &g->nodes[1]) == 1);
  EG_CHECK(eg_copy_source(g, &g->nodes[2]) == 2);
  EG_CHECK(eg_copy_source(g, &g->nodes[3]) == -1);
  eg_graph_destroy(g);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_copy_alias_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  EG_RUN(test_chain_shares_bytes);
  EG_RUN(test_copy_source);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
