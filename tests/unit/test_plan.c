/* test_plan.c — the activation plan on a real exported training step: values whose lifetimes
 * overlap never share bytes, every planned value fits the arena, offsets are aligned, and
 * sharing actually happens (the arena is smaller than the sum of all activations). Lifetimes
 * count in nodes, inside steps too (an NPU partition's executor runs its ops in its nodes'
 * order); a step's working block overlaps no value live at any node of the step. */
#include <stdint.h>

#include "eg_test.h"
#include "compiler/frontend/frontend.h"
#include "ops/op.h"
#include "runtime/plan.h"

/* Lifetimes in positions (step[i]: node i's position; the identity for node lifetimes). */
static void lifetimes(const eg_graph *g, const int32_t *step, int32_t *first, int32_t *last) {
  for (int32_t v = 0; v < g->n_values; v++) {
    first[v] = g->values[v].role == EG_ROLE_NODE ? step[g->values[v].def] : -1;
    last[v] = first[v];
  }
  for (int32_t i = 0; i < g->n_nodes; i++)
    for (int32_t a = 0; a < g->nodes[i].n_args; a++) {
      const eg_arg *arg = &g->nodes[i].args[a];
      if (arg->kind != EG_ARG_VALUE) continue;
      const eg_value *v = &g->values[arg->value];
      for (int32_t e = 0; e < (v->kind == EG_VALUE_TUPLE ? v->n_elems : 1); e++) {
        int32_t id = v->kind == EG_VALUE_TUPLE ? v->elems[e] : arg->value;
        if (id >= 0 && last[id] < step[i]) last[id] = step[i];
      }
    }
  for (int32_t o = 0; o < g->n_outputs; o++) last[g->outputs[o].value] = g->n_nodes;
}

/* Plans tiny_step with nodes grouped `group` at a time into steps (1: each node its own), and
 * with `aliases` each getitem's result on its tuple element: they share bytes, and the element
 * then lives as long as either (checked as one value). With `work`, every odd step has a working
 * block (as an NPU step's staging and executor memory): it overlaps no value live in its step,
 * and blocks are reused (the arena is smaller than values' and blocks' sum). */
static void check_plan(int32_t group, bool aliases, bool work) {
  eg_graph *g = NULL;
  EG_CHECK_MSG(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &g) == EG_OK, "%s",
               eg_last_error());
  if (!g) return;
  eg_plan plan;
  int32_t first[4096], last[4096], step[4096], alias[4096];
  EG_CHECK(g->n_values < 4096 && g->n_nodes < 4096);
  int32_t node_pos[4096];
  for (int32_t i = 0; i < g->n_nodes; i++) {
    step[i] = i / group;
    node_pos[i] = i;
  }
  for (int32_t v = 0; v < g->n_values; v++) alias[v] = -1;
  int n_alias = 0;
  for (int32_t i = 0; aliases && i < g->n_nodes; i++)
    if (g->nodes[i].op == EG_OP_getitem && g->nodes[i].output >= 0) {
      alias[g->nodes[i].output] = eg_getitem_element(g, &g->nodes[i]);
      n_alias++;
    }
  EG_CHECK(!aliases || n_alias > 5);
  size_t step_work[4096] = {0}, work_sum = 0;
  for (int32_t k = 1; work && k <= (g->n_nodes - 1) / group; k += 2) {
    step_work[k] = 1000 + 777 * (size_t)k;
    work_sum += step_work[k];
  }
  const eg_plan_spec spec = {.step_of = group > 1 || work ? step : NULL, .alias_of = alias,
                             .step_work = step_work};
  EG_CHECK_MSG(eg_plan_memory(g, &spec, &plan) == EG_OK, "%s", eg_last_error());
  lifetimes(g, node_pos, first, last);
  for (int32_t v = 0; v < g->n_values; v++)
    if (alias[v] >= 0) {
      EG_CHECK(plan.offset[v] == plan.offset[alias[v]] && plan.offset[v] != EG_PLAN_NONE);
      if (last[v] > last[alias[v]]) last[alias[v]] = last[v];
    }
  size_t total = 0;
  int planned = 0;
  for (int32_t a = 0; a < g->n_values; a++) {
    const eg_value *va = &g->values[a];
    bool is_act = va->role == EG_ROLE_NODE && va->kind == EG_VALUE_TENSOR;
    EG_CHECK((plan.offset[a] != EG_PLAN_NONE) == is_act);
    if (!is_act || alias[a] >= 0) continue;
    planned++;
    size_t sa = eg_value_nbytes(va);
    total += sa;
    EG_CHECK(plan.offset[a] % 64 == 0);
    EG_CHECK(plan.offset[a] + sa <= plan.arena_bytes);
    for (int32_t b = 0; b < a; b++) {
      if (plan.offset[b] == EG_PLAN_NONE || alias[b] >= 0) continue;
      size_t sb = eg_value_nbytes(&g->values[b]);
      bool live_together = first[a] <= last[b] && first[b] <= last[a];
      bool bytes_overlap = plan.offset[a] < plan.offset[b] + sb && plan.offset[b] < plan.offset[a] + sa;
      EG_CHECK_MSG(!(live_together && bytes_overlap && sa && sb),
                   "steps of %d nodes: values %d and %d share bytes", group, a, b);
    }
  }
  for (int32_t k = 0; k <= (g->n_nodes - 1) / group; k++) {
    const size_t w = plan.work_offset[k];
    EG_CHECK((w != EG_PLAN_NONE) == (step_work[k] > 0));
    if (w == EG_PLAN_NONE) continue;
    EG_CHECK(w % 64 == 0 && w + step_work[k] <= plan.arena_bytes);
    for (int32_t b = 0; b < g->n_values; b++) {
      if (plan.offset[b] == EG_PLAN_NONE || alias[b] >= 0) continue;
      const size_t sb = eg_value_nbytes(&g->values[b]);
      /* the step's nodes are [k * group, min((k + 1) * group, n_nodes) - 1] */
      const int32_t k0 = k * group, k1 = (k + 1) * group - 1;
      const bool live = first[b] <= k1 && k0 <= last[b];
      const bool overlap = w < plan.offset[b] + sb && plan.offset[b] < w + step_work[k];
      EG_CHECK_MSG(!(live && overlap && sb), "step %d's working block and value %d share bytes",
                   k, b);
    }
  }
  total += work_sum;
  EG_CHECK(planned > 20);
  EG_CHECK_MSG(plan.arena_bytes < total, "no sharing: arena %zu, sum %zu", plan.arena_bytes, total);
  eg_plan_free(&plan);
  eg_graph_destroy(g);
}

static void test_plan_on_training_step(void) { check_plan(1, false, false); }

/* Steps of three and of seven nodes: lifetimes stay node by node inside a step. */
static void test_plan_with_steps(void) {
  check_plan(3, false, false);
  check_plan(7, false, false);
}

/* getitem results planned onto their elements, alone and with steps. */
static void test_plan_with_aliases(void) {
  check_plan(1, true, false);
  check_plan(4, true, false);
}

/* Steps' working blocks in the arena, with single-node and grouped steps and aliases. The
 * planner keeps the smaller of two placements (each block at its step's start, or one shared
 * region for all): among these three, both are chosen (steps of 1 and 3: the shared region,
 * 33.0 and 15.4 KB against 51.2 and 15.6; steps of 5: each block at its step, 11.1 KB against
 * 11.3), and every check above holds for either. */
static void test_plan_with_step_work(void) {
  check_plan(1, false, true);
  check_plan(3, true, true);
  check_plan(5, false, true);
}

/* Blocks (an NPU step's executor tensors and staging) over the nodes and ticks of steps of
 * `group` nodes, tick 3 * (node's place in its step) + 0..2: a block overlaps no value live at
 * any of its nodes, nor a block whose ticks overlap its own (in the same step), and blocks
 * share bytes with each other and with values. */
static void check_blocks(int32_t group) {
  eg_graph *g = NULL;
  EG_CHECK(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &g) == EG_OK);
  if (!g) return;
  static int32_t step[4096], pos[4096], first[4096], last[4096];
  static eg_plan_block blocks[4096];
  int32_t nb = 0;
  uint32_t seed = 12345;
  for (int32_t i = 0; i < g->n_nodes; i++) step[i] = i / group, pos[i] = i;
  for (int32_t k0 = 0; k0 < g->n_nodes; k0 += group) {
    const int32_t n = k0 + group <= g->n_nodes ? group : g->n_nodes - k0;
    for (int32_t j = 0; j < 2 * n && nb < 4096; j++) {
      seed = seed * 1103515245u + 12345u;
      const int32_t a = (int32_t)(seed >> 8) % (3 * n), b = a + (int32_t)(seed >> 20) % 5;
      const int32_t e = b < 3 * n ? b : 3 * n - 1;
      blocks[nb++] = (eg_plan_block){.bytes = 64 + (seed >> 16) % 3000, .first_node = k0 + a / 3,
                                     .last_node = k0 + e / 3, .first_tick = a, .last_tick = e};
    }
  }
  eg_plan plan;
  const eg_plan_spec spec = {.step_of = step, .blocks = blocks, .n_blocks = nb};
  EG_CHECK_MSG(eg_plan_memory(g, &spec, &plan) == EG_OK, "%s", eg_last_error());
  lifetimes(g, pos, first, last);
  size_t sum = 0;
  for (int32_t x = 0; x < nb; x++) {
    const eg_plan_block *bx = &blocks[x];
    const size_t ox = plan.block_offset[x];
    sum += bx->bytes;
    EG_CHECK(ox % 64 == 0 && ox + bx->bytes <= plan.arena_bytes);
    for (int32_t v = 0; v < g->n_values; v++) {
      if (plan.offset[v] == EG_PLAN_NONE) continue;
      const size_t sv = eg_value_nbytes(&g->values[v]);
      const bool live = first[v] <= bx->last_node && bx->first_node <= last[v];
      const bool overlap = ox < plan.offset[v] + sv && plan.offset[v] < ox + bx->bytes;
      EG_CHECK_MSG(!(live && overlap && sv), "steps of %d: block %d and value %d share bytes",
                   group, x, v);
    }
    for (int32_t y = 0; y < x; y++) {
      const eg_plan_block *by = &blocks[y];
      const size_t oy = plan.block_offset[y];
      const bool live = step[bx->first_node] == step[by->first_node] &&
                        bx->first_tick <= by->last_tick && by->first_tick <= bx->last_tick;
      const bool overlap = ox < oy + by->bytes && oy < ox + bx->bytes;
      EG_CHECK_MSG(!(live && overlap), "steps of %d: blocks %d and %d share bytes", group, x, y);
    }
  }
  for (int32_t v = 0; v < g->n_values; v++)
    if (plan.offset[v] != EG_PLAN_NONE) sum += eg_value_nbytes(&g->values[v]);
  EG_CHECK_MSG(plan.arena_bytes < sum / 2, "little sharing: arena %zu, sum %zu", plan.arena_bytes,
               sum);
  eg_plan_free(&plan);
  /* a block ending before it starts, or naming no node, is refused */
  blocks[0] = (eg_plan_block){.bytes = 64, .first_node = 1, .last_node = 0, .first_tick = 3,
                              .last_tick = 3};
  EG_CHECK(eg_plan_memory(g, &spec, &plan) == EG_ERR_INVALID && plan.offset == NULL);
  blocks[0].last_tick = blocks[0].first_tick;
  blocks[0].last_node = g->n_nodes;
  EG_CHECK(eg_plan_memory(g, &spec, &plan) == EG_ERR_INVALID && plan.offset == NULL);
  eg_graph_destroy(g);
}

static void test_plan_with_blocks(void) {
  check_blocks(1);
  check_blocks(4);
  check_blocks(9);
}

/* Steps out of run order are refused with a reason, not planned wrongly. */
static void test_plan_refuses_unordered_steps(void) {
  eg_graph *g = NULL;
  EG_CHECK(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &g) == EG_OK);
  if (!g) return;
  int32_t step[4096];
  for (int32_t i = 0; i < g->n_nodes; i++) step[i] = g->n_nodes - 1 - i;
  eg_plan plan;
  const eg_plan_spec spec = {.step_of = step};
  EG_CHECK(eg_plan_memory(g, &spec, &plan) == EG_ERR_INVALID);
  EG_CHECK(plan.offset == NULL);
  eg_graph_destroy(g);
}

int main(void) {
  EG_RUN(test_plan_on_training_step);
  EG_RUN(test_plan_with_steps);
  EG_RUN(test_plan_with_aliases);
  EG_RUN(test_plan_with_step_work);
  EG_RUN(test_plan_with_blocks);
  EG_RUN(test_plan_refuses_unordered_steps);
  return eg_test_summary();
}
