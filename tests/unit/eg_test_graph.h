/* eg_test_graph.h — graph fixtures shared by the C unit tests of the IR, the passes, the
 * partitioner and the NPU lowering (include after eg_test.h).
 *
 *   eg_test_fixture(name)              loads tests/data/NAME.json (EG_TEST_DATA); a failure is
 *                                      a check failure and gives NULL;
 *   eg_test_graph_json(dir, name, weights, values, inputs, statics, nodes, outputs)
 *                                      writes DIR/NAME.json, an exported graph with the given
 *                                      JSON lists (weights file: `weights`, in DIR), and loads
 *                                      it (the loader verifies);
 *   eg_test_build(g, soc, p)           eg_program_build for a SoC; a failure is a check failure;
 *   eg_test_sm8650()                   partition options of SM8650 (default builders);
 *   eg_test_find_node(g, name)         the index of node `name`, or -1 (no check);
 *   eg_test_node_named(g, name)        the same, where a missing node is a check failure;
 *   eg_test_count_op(g, op)            how many nodes of g have op `op`;
 *   eg_test_graph_node(g, name, op, n) appends a node with n arguments (room for one more) to a
 *                                      hand-built graph whose nodes array has room for it;
 *   eg_test_graph_vnode(g, name, op, n, ap)
 *                                      the same, its n arguments the tensor values (int32_t)
 *                                      read from `ap`. */
#ifndef EG_TEST_GRAPH_H
#define EG_TEST_GRAPH_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "eg_test.h"
#include "compiler/frontend/frontend.h"
#include "compiler/partition/partition.h"
#include "compiler/compile.h"
#include "target/targets.h"
#include "util/error.h"

static inline eg_graph *eg_test_fixture(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.json", EG_TEST_DATA, name);
  eg_graph *g = NULL;
  EG_CHECK_MSG(eg_graph_load_json(path, &g) == EG_OK, "%s", eg_last_error());
  return g;
}

static inline eg_graph *eg_test_graph_json(const char *dir, const char *name, const char *weights,
                                           const char *values, const char *inputs,
                                           const char *statics, const char *nodes,
                                           const char *outputs) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s.json", dir, name);
  FILE *f = fopen(path, "w");
  EG_CHECK(f != NULL);
  if (!f) return NULL;
  fprintf(f, "{\"format\": \"edgegrad.graph\", \"version\": 1, \"producer\": {\"name\": \"test\"},"
          " \"weights\": \"%s\", \"values\": [%s], \"inputs\": [%s], \"statics\": [%s],"
          " \"nodes\": [%s], \"outputs\": [%s]}\n", weights, values, inputs, statics, nodes,
          outputs);
  fclose(f);
  eg_graph *g = NULL;
  EG_CHECK_MSG(eg_graph_load_json(path, &g) == EG_OK, "%s: %s", name, eg_last_error());
  return g;
}

static inline bool eg_test_build(const eg_graph *g, const char *soc, eg_program *p) {
  eg_partition_options opt = {.target = eg_target_find(soc)};
  eg_status s = eg_program_build(g, &opt, p);
  EG_CHECK_MSG(s == EG_OK, "%s: %s", soc, eg_last_error());
  return s == EG_OK;
}

static inline const eg_partition_options *eg_test_sm8650(void) {
  static eg_partition_options opt;
  opt.target = eg_target_find("SM8650");
  return &opt;
}

static inline int32_t eg_test_find_node(const eg_graph *g, const char *name) {
  for (int32_t i = 0; g && i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].name, name) == 0) return i;
  return -1;
}

static inline int32_t eg_test_node_named(const eg_graph *g, const char *name) {
  const int32_t i = eg_test_find_node(g, name);
  EG_CHECK_MSG(i >= 0, "no node %s", name);
  return i;
}

static inline int eg_test_count_op(const eg_graph *g, eg_op op) {
  int k = 0;
  for (int32_t i = 0; g && i < g->n_nodes; i++) k += g->nodes[i].op == op;
  return k;
}

static inline eg_node *eg_test_graph_node(eg_graph *g, const char *name, eg_op op, int n_args) {
  eg_node *n = &g->nodes[g->n_nodes++];
  n->name = eg_arena_strdup(g->arena, name);
  n->op = op;
  n->n_args = n_args;
  n->args = eg_arena_array(g->arena, (size_t)n_args + 1, sizeof(eg_arg));
  return n;
}

static inline eg_node *eg_test_graph_vnode(eg_graph *g, const char *name, eg_op op, int n_in,
                                           va_list ap) {
  eg_node *n = eg_test_graph_node(g, name, op, n_in);
  for (int i = 0; i < n_in; i++)
    n->args[i] = (eg_arg){.kind = EG_ARG_VALUE, .value = va_arg(ap, int32_t)};
  return n;
}

#endif
