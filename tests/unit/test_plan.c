/* test_plan.c — the activation plan on a real exported training step: values whose lifetimes
 * overlap never share bytes, every planned value fits the arena, offsets are aligned, and
 * sharing actually happens (the arena is smaller than the sum of all activations). */
#include <stdint.h>

#include "eg_test.h"
#include "frontend/frontend.h"
#include "runtime/plan.h"

static void lifetimes(const eg_graph *g, int32_t *first, int32_t *last) {
  for (int32_t v = 0; v < g->n_values; v++) {
    first[v] = g->values[v].role == EG_ROLE_NODE ? g->values[v].def : -1;
    last[v] = first[v];
  }
  for (int32_t i = 0; i < g->n_nodes; i++)
    for (int32_t a = 0; a < g->nodes[i].n_args; a++) {
      const eg_arg *arg = &g->nodes[i].args[a];
      if (arg->kind != EG_ARG_VALUE) continue;
      const eg_value *v = &g->values[arg->value];
      for (int32_t e = 0; e < (v->kind == EG_VALUE_TUPLE ? v->n_elems : 1); e++) {
        int32_t id = v->kind == EG_VALUE_TUPLE ? v->elems[e] : arg->value;
        if (id >= 0 && last[id] < i) last[id] = i;
      }
    }
  for (int32_t o = 0; o < g->n_outputs; o++) last[g->outputs[o].value] = g->n_nodes;
}

static void test_plan_on_training_step(void) {
  eg_graph *g = NULL;
  EG_CHECK_MSG(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &g) == EG_OK, "%s",
               eg_last_error());
  if (!g) return;
  eg_plan plan;
  EG_CHECK(eg_plan_memory(g, NULL, NULL, &plan) == EG_OK);
  int32_t first[4096], last[4096];
  EG_CHECK(g->n_values < 4096);
  lifetimes(g, first, last);
  size_t total = 0;
  int planned = 0;
  for (int32_t a = 0; a < g->n_values; a++) {
    const eg_value *va = &g->values[a];
    bool is_act = va->role == EG_ROLE_NODE && va->kind == EG_VALUE_TENSOR;
    EG_CHECK((plan.offset[a] != EG_PLAN_NONE) == is_act);
    if (!is_act) continue;
    planned++;
    size_t sa = eg_value_nbytes(va);
    total += sa;
    EG_CHECK(plan.offset[a] % 64 == 0);
    EG_CHECK(plan.offset[a] + sa <= plan.arena_bytes);
    for (int32_t b = 0; b < a; b++) {
      if (plan.offset[b] == EG_PLAN_NONE) continue;
      size_t sb = eg_value_nbytes(&g->values[b]);
      bool live_together = first[a] <= last[b] && first[b] <= last[a];
      bool bytes_overlap = plan.offset[a] < plan.offset[b] + sb && plan.offset[b] < plan.offset[a] + sa;
      EG_CHECK_MSG(!(live_together && bytes_overlap && sa && sb), "values %d and %d share bytes",
                   a, b);
    }
  }
  EG_CHECK(planned > 20);
  EG_CHECK_MSG(plan.arena_bytes < total, "no sharing: arena %zu, sum %zu", plan.arena_bytes, total);
  eg_plan_free(&plan);
  eg_graph_destroy(g);
}

int main(void) {
  EG_RUN(test_plan_on_training_step);
  return eg_test_summary();
}
