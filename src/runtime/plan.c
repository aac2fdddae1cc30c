/* plan.c — lifetime-based activation planning (see plan.h). */
#include "runtime/plan.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#define EG_ALIGN 64

typedef struct block {
  size_t off, size;
} block;

/* Live blocks sorted by offset; first fit into the lowest gap. */
typedef struct live_set {
  block *b;
  int32_t n;
} live_set;

static size_t place(live_set *ls, size_t size, size_t *high) {
  size_t off = 0;
  int32_t at = 0;
  for (; at < ls->n; at++) {
    if (ls->b[at].off >= off + size) break;
    size_t end = (ls->b[at].off + ls->b[at].size + EG_ALIGN - 1) & ~(size_t)(EG_ALIGN - 1);
    if (end > off) off = end;
  }
  memmove(&ls->b[at + 1], &ls->b[at], (size_t)(ls->n - at) * sizeof(block));
  ls->b[at] = (block){off, size};
  ls->n++;
  if (off + size > *high) *high = off + size;
  return off;
}

static void release(live_set *ls, size_t off) {
  for (int32_t i = 0; i < ls->n; i++)
    if (ls->b[i].off == off) {
      memmove(&ls->b[i], &ls->b[i + 1], (size_t)(ls->n - i - 1) * sizeof(block));
      ls->n--;
      return;
    }
}

/* Calls fn(ctx, v) for every tensor value argument `a` names: list items, a tuple's elements. */
static void each_value(const eg_graph *g, const eg_arg *a, void (*fn)(void *, int32_t),
                       void *ctx) {
  if (a->kind == EG_ARG_LIST)
    for (int32_t i = 0; i < a->list.n; i++) each_value(g, &a->list.items[i], fn, ctx);
  if (a->kind != EG_ARG_VALUE) return;
  const eg_value *v = &g->values[a->value];
  if (v->kind != EG_VALUE_TUPLE) {
    fn(ctx, a->value);
    return;
  }
  for (int32_t e = 0; e < v->n_elems; e++)
    if (v->elems[e] >= 0) fn(ctx, v->elems[e]);
}

/* Each value a node reads is read at least until `at`: last[] (and, inside a step, reach[] of
 * the step's internal values) raised to it. */
typedef struct reads {
  int32_t at;
  int32_t *last, *reach;
  const bool *internal; /* NULL: every value goes to last[] */
} reads;

static void note_read(void *ctx, int32_t v) {
  reads *r = ctx;
  int32_t *slot = r->internal && r->internal[v] ? &r->reach[v] : &r->last[v];
  if (*slot < r->at) *slot = r->at;
}

static void node_reads(const eg_graph *g, const eg_node *n, reads *r) {
  for (int32_t a = 0; a < n->n_args; a++) each_value(g, &n->args[a], note_read, r);
  for (int32_t a = 0; a < n->n_kwargs; a++) each_value(g, &n->kwargs[a], note_read, r);
}

/* Last position (the step, in run order) using each value, the spec's extra reads too; graph
 * outputs live past the last node. */
static void last_uses(const eg_graph *g, const eg_plan_spec *spec, const int32_t *pos,
                      int32_t *last) {
  for (int32_t v = 0; v < g->n_values; v++) last[v] = -1;
  reads r = {.last = last};
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const int32_t id = spec->order ? spec->order[i] : i;
    r.at = pos[id];
    if (!spec->folded || !spec->folded[id]) node_reads(g, &g->nodes[id], &r);
  }
  for (int32_t k = 0; k < spec->n_reads; k++) {
    r.at = pos[spec->reads[k].node];
    note_read(&r, spec->reads[k].value);
  }
  for (int32_t o = 0; o < g->n_outputs; o++) last[g->outputs[o].value] = g->n_nodes;
}

/* Inside a step of several nodes (an NPU partition), a value the step holds internally (spec's
 * `unplanned`) may be an alias of one an aliasing node read (the backend's may_alias: a view, detach or
 * reshape that emits no op), so a value read by such a node is read in fact until the last
 * reader, in the step, of its internal results, and recursively. Extends last[] of the
 * planned values by those reaches, walking each step backwards. (A getitem passing a tuple
 * element out of the step is planned onto the element: memory.c copy_aliases.) */
static void extend_step_reads(const eg_graph *g, const int32_t *order, const int32_t *step_of,
                              const bool *internal, const bool *aliasing, int32_t *last,
                              int32_t *reach) {
  for (int32_t v = 0; v < g->n_values; v++) reach[v] = -1;
  for (int32_t i = g->n_nodes - 1; i >= 0; i--) {
    const int32_t id = order ? order[i] : i;
    const int32_t prev = i > 0 ? (order ? order[i - 1] : i - 1) : -1;
    const int32_t next = i + 1 < g->n_nodes ? (order ? order[i + 1] : i + 1) : -1;
    if ((prev < 0 || step_of[prev] != step_of[id]) && (next < 0 || step_of[next] != step_of[id]))
      continue; /* a step of one node reads its inputs at its own position */
    const eg_node *n = &g->nodes[id];
    int32_t r = i;
    const eg_value *o = n->output >= 0 ? &g->values[n->output] : NULL;
    for (int32_t e = 0; o && aliasing && aliasing[id] &&
                        e < (o->kind == EG_VALUE_TUPLE ? o->n_elems : 1); e++) {
      const int32_t ov = o->kind == EG_VALUE_TUPLE ? o->elems[e] : n->output;
      if (ov >= 0 && internal[ov] && reach[ov] > r) r = reach[ov];
    }
    reads rd = {.at = r, .last = last, .reach = reach, .internal = internal};
    node_reads(g, n, &rd);
  }
}

/* Each planned value is freed after position free_at = max(definition, last use). Returns, per
 * position, the chain of values to free there (head[i], linked through next[]). */
static void free_chains(const eg_graph *g, const int32_t *pos, const int32_t *last,
                        const bool *unplanned, int32_t *head, int32_t *next) {
  for (int32_t i = 0; i <= g->n_nodes; i++) head[i] = -1;
  for (int32_t id = 0; id < g->n_values; id++) {
    const eg_value *v = &g->values[id];
    if (v->role != EG_ROLE_NODE || v->kind != EG_VALUE_TENSOR || (unplanned && unplanned[id]))
      continue;
    int32_t at = last[id] > pos[v->def] ? last[id] : pos[v->def];
    next[id] = head[at];
    head[at] = id;
  }
}

/* spec.blocks as events in run order: where each starts (position of its first node, then
 * first_tick) and ends (last node, last_tick), each list sorted. */
typedef struct block_event {
  int64_t at; /* position << 32 | tick */
  int32_t block;
} block_event;

typedef struct block_events {
  block_event *start, *end;
} block_events;

static int by_at(const void *a, const void *b) {
  const block_event *x = a, *y = b;
  return x->at < y->at ? -1 : x->at > y->at ? 1 : x->block - y->block;
}

static eg_status block_events_make(const eg_graph *g, const eg_plan_spec *spec,
                                   const int32_t *pos, block_events *ev) {
  const size_t nb = (size_t)(spec->n_blocks > 0 ? spec->n_blocks : 0);
  ev->start = malloc((nb + 1) * sizeof(block_event));
  ev->end = malloc((nb + 1) * sizeof(block_event));
  if (!ev->start || !ev->end)
    return eg_error(EG_ERR_NOMEM, "memory plan: out of memory for %d blocks", spec->n_blocks);
  for (int32_t b = 0; b < (int32_t)nb; b++) {
    const eg_plan_block *k = &spec->blocks[b];
    if (k->first_node < 0 || k->first_node >= g->n_nodes || k->last_node < 0 ||
        k->last_node >= g->n_nodes || k->first_tick < 0 || k->last_tick < 0)
      return eg_error(EG_ERR_INVALID, "memory plan: block %d (nodes %d to %d, ticks %d to %d): "
                      "must name nodes of the graph and ticks >= 0", b, k->first_node,
                      k->last_node, k->first_tick, k->last_tick);
    ev->start[b] = (block_event){(int64_t)pos[k->first_node] << 32 | k->first_tick, b};
    ev->end[b] = (block_event){(int64_t)pos[k->last_node] << 32 | k->last_tick, b};
    if (ev->start[b].at > ev->end[b].at)
      return eg_error(EG_ERR_INVALID, "memory plan: block %d (nodes %d to %d, ticks %d to %d): "
                      "must not end before it starts", b, k->first_node, k->last_node,
                      k->first_tick, k->last_tick);
  }
  qsort(ev->start, nb, sizeof(block_event), by_at);
  qsort(ev->end, nb, sizeof(block_event), by_at);
  return EG_OK;
}

static void block_events_free(block_events *ev) {
  free(ev->start);
  free(ev->end);
}

/* Places every planned value (and each step's working block) of the run order: values at
 * their defining node, freed after their last reader (head/next chains of free_chains). With
 * shared_work, every step's block is one region at offset 0 as large as the largest, never
 * released; else each step's block is placed at its first node and released after its last. */
static void place_all(const eg_graph *g, const eg_plan_spec *spec, const bool *unplanned,
                      const int32_t *head, const int32_t *next, const block_events *ev,
                      bool shared_work, live_set *ls, eg_plan *plan) {
  int32_t at_start = 0, at_end = 0; /* the next block events */
  const int32_t nb = spec->n_blocks > 0 ? spec->n_blocks : 0;
  const int32_t *order = spec->order, *step_of = spec->step_of;
  const size_t *step_work = step_of ? spec->step_work : NULL;
  size_t work = 0;
  for (int32_t k = 0; shared_work && step_work && k < g->n_nodes; k++)
    if (step_work[k] > work) work = step_work[k];
  if (work) place(ls, work, &plan->arena_bytes); /* offset 0, live throughout */
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const int32_t node = order ? order[i] : i;
    const int32_t step = step_of ? step_of[node] : i;
    const int32_t next_node = i + 1 < g->n_nodes ? (order ? order[i + 1] : i + 1) : -1;
    const eg_node *n = &g->nodes[node];
    if (n->scratch_bytes > plan->scratch_bytes) plan->scratch_bytes = n->scratch_bytes;
    const bool first = i == 0 || !step_of || step_of[order ? order[i - 1] : i - 1] != step;
    if (first && step_work && step_work[step])
      plan->work_offset[step] = work ? 0 : place(ls, step_work[step], &plan->arena_bytes);
    const eg_value *v = n->output >= 0 ? &g->values[n->output] : NULL;
    int32_t count = !v ? 0 : v->kind == EG_VALUE_TUPLE ? v->n_elems : 1;
    for (int32_t e = 0; e < count; e++) {
      int32_t id = v->kind == EG_VALUE_TUPLE ? v->elems[e] : n->output;
      if (id < 0 || unplanned[id]) continue; /* a None element, unplanned, or an alias */
      /* at least one byte, so no two live blocks share an offset */
      size_t bytes = eg_value_nbytes(&g->values[id]);
      plan->offset[id] = place(ls, bytes ? bytes : 1, &plan->arena_bytes);
    }
    /* the node's blocks in tick order, each placed before any ending at its tick is freed */
    while ((at_start < nb && ev->start[at_start].at >> 32 == i) ||
           (at_end < nb && ev->end[at_end].at >> 32 == i)) {
      const bool start = at_start < nb && ev->start[at_start].at >> 32 == i &&
                         (at_end == nb || ev->start[at_start].at <= ev->end[at_end].at);
      const int32_t b = start ? ev->start[at_start++].block : ev->end[at_end++].block;
      const size_t bytes = spec->blocks[b].bytes ? spec->blocks[b].bytes : 1;
      if (start) plan->block_offset[b] = place(ls, bytes, &plan->arena_bytes);
      else release(ls, plan->block_offset[b]);
    }
    /* values whose last reader is this node are freed after it; inside an NPU step too: its
     * executor runs the partition's ops in its nodes' order, reading a value bound in place at
     * the node that reads it and writing one at the node that defines it, and converts the
     * staged ones at the step's start (inputs) and end (outputs, placed at their node, so
     * nothing live after it shares their bytes) */
    for (int32_t id = head[i]; id >= 0; id = next[id]) release(ls, plan->offset[id]);
    const bool last_of_step = next_node < 0 || !step_of || step_of[next_node] != step;
    if (last_of_step && !work && plan->work_offset[step] != EG_PLAN_NONE)
      release(ls, plan->work_offset[step]);
  }
}

eg_status eg_plan_memory(const eg_graph *g, const eg_plan_spec *spec, eg_plan *plan) {
  const eg_plan_spec none = {0};
  if (!spec) spec = &none;
  const int32_t *order = spec->order, *step_of = spec->step_of, *alias_of = spec->alias_of;
  bool *unplanned = NULL; /* spec's, and the aliases */
  memset(plan, 0, sizeof *plan);
  size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 2;
  const size_t nb = (size_t)(spec->n_blocks > 0 ? spec->n_blocks : 0) + 1;
  block_events ev = {0};
  plan->offset = malloc(nv * sizeof(size_t));
  plan->work_offset = malloc(nn * sizeof(size_t));
  plan->block_offset = malloc(nb * sizeof(size_t));
  int32_t *last = malloc(nv * sizeof(int32_t)), *next = malloc(nv * sizeof(int32_t));
  int32_t *head = malloc(nn * sizeof(int32_t)), *pos = malloc(nn * sizeof(int32_t));
  live_set ls = {malloc((nv + nb + 1) * sizeof(block)), 0};
  unplanned = calloc(nv, sizeof(bool));
  eg_status s = EG_OK;
  /* live blocks: at most every value, every block and one step's working block */
  if (!plan->offset || !plan->work_offset || !plan->block_offset || !last || !next || !head ||
      !pos || !ls.b || !unplanned) {
    s = eg_error(EG_ERR_NOMEM, "memory plan: out of memory for %d values", g->n_values);
    goto done;
  }
  for (size_t v = 0; v < nv; v++) plan->offset[v] = EG_PLAN_NONE;
  for (size_t k = 0; k < nn; k++) plan->work_offset[k] = EG_PLAN_NONE;
  const size_t *step_work = step_of ? spec->step_work : NULL;
  /* pos: a node's place in the run order (values live from their definition to their last
   * reader, node by node, inside a step too); step_of groups nodes for the work blocks */
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const int32_t id = order ? order[i] : i;
    const int32_t step = step_of ? step_of[id] : i, prev = i > 0 ? (order ? order[i - 1] : i - 1) : -1;
    pos[id] = i;
    if (step < 0 || step >= g->n_nodes || (prev >= 0 && step_of && step < step_of[prev])) {
      s = eg_error(EG_ERR_INVALID, "memory plan: node %d (step %d): the steps must run in order, "
                   "each one's nodes together", id, step);
      goto done;
    }
  }
  s = block_events_make(g, spec, pos, &ev);
  if (s != EG_OK) goto done;
  last_uses(g, spec, pos, last);
  if (step_of && spec->unplanned) /* next[] is free until free_chains: the walk's scratch */
    extend_step_reads(g, order, step_of, spec->unplanned, spec->aliasing, last, next);
  for (int32_t v = 0; v < g->n_values; v++) {
    unplanned[v] = (spec->unplanned && spec->unplanned[v]) || (alias_of && alias_of[v] >= 0);
    /* an alias's bytes are its target's: the target lives as long as either is read */
    if (alias_of && alias_of[v] >= 0 && last[v] > last[alias_of[v]]) last[alias_of[v]] = last[v];
  }
  free_chains(g, pos, last, unplanned, head, next);
  place_all(g, spec, unplanned, head, next, &ev, false, &ls, plan);
  /* The steps' working blocks placed as the steps come (first fit among the values live then)
   * can leave holes later, larger blocks do not fit; one region at the arena's start for every
   * step's block (steps run one at a time) wastes its bytes while no step runs. Both are
   * planned and the smaller arena kept (MobileNetV2, bias only: 71 MB the first way, 62 the
   * second; ResNet-18, bias only: 30 against 34). */
  bool any_work = false;
  for (int32_t k = 0; step_work && k < g->n_nodes; k++) any_work = any_work || step_work[k];
  if (any_work) {
    eg_plan alt = {.offset = malloc(nv * sizeof(size_t)),
                   .work_offset = malloc(nn * sizeof(size_t)),
                   .block_offset = malloc(nb * sizeof(size_t))};
    if (!alt.offset || !alt.work_offset || !alt.block_offset) {
      eg_plan_free(&alt);
      s = eg_error(EG_ERR_NOMEM, "memory plan: out of memory for %d values", g->n_values);
      goto done;
    }
    for (size_t v = 0; v < nv; v++) alt.offset[v] = EG_PLAN_NONE;
    for (size_t k = 0; k < nn; k++) alt.work_offset[k] = EG_PLAN_NONE;
    ls.n = 0;
    place_all(g, spec, unplanned, head, next, &ev, true, &ls, &alt);
    if (alt.arena_bytes < plan->arena_bytes) {
      eg_plan_free(plan);
      *plan = alt;
    } else {
      eg_plan_free(&alt);
    }
  }
  for (int32_t v = 0; alias_of && v < g->n_values; v++)
    if (alias_of[v] >= 0) plan->offset[v] = plan->offset[alias_of[v]];
done:
  block_events_free(&ev);
  free(unplanned);
  free(last);
  free(next);
  free(head);
  free(pos);
  free(ls.b);
  if (s != EG_OK) eg_plan_free(plan);
  return s;
}

void eg_plan_free(eg_plan *plan) {
  free(plan->offset);
  free(plan->work_offset);
  free(plan->block_offset);
  plan->offset = NULL;
  plan->work_offset = NULL;
  plan->block_offset = NULL;
}
