/* edit.c — in-place graph edits (see edit.h): value-argument walks, node and static removal with
 * dense renumbering of the remaining values, fresh names. */
#include "ir/edit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

bool eg_arg_reads(const eg_arg *a, int32_t value) {
  if (a->kind == EG_ARG_VALUE) return a->value == value;
  for (int32_t i = 0; a->kind == EG_ARG_LIST && i < a->list.n; i++)
    if (eg_arg_reads(&a->list.items[i], value)) return true;
  return false;
}

bool eg_node_reads(const eg_node *n, int32_t value) {
  for (int32_t a = 0; a < n->n_args; a++)
    if (eg_arg_reads(&n->args[a], value)) return true;
  for (int32_t a = 0; a < n->n_kwargs; a++)
    if (eg_arg_reads(&n->kwargs[a], value)) return true;
  return false;
}

/* Calls visit(ctx, &id) for every value id in `a` (lists included). */
static void each_value(eg_arg *a, void (*visit)(void *ctx, int32_t *id), void *ctx) {
  if (a->kind == EG_ARG_VALUE) visit(ctx, &a->value);
  for (int32_t i = 0; a->kind == EG_ARG_LIST && i < a->list.n; i++)
    each_value(&a->list.items[i], visit, ctx);
}

static void each_node_value(eg_node *n, void (*visit)(void *ctx, int32_t *id), void *ctx) {
  for (int32_t a = 0; a < n->n_args; a++) each_value(&n->args[a], visit, ctx);
  for (int32_t a = 0; a < n->n_kwargs; a++) each_value(&n->kwargs[a], visit, ctx);
}

typedef struct replacement {
  int32_t from, to;
} replacement;

static void replace_one(void *ctx, int32_t *id) {
  const replacement *r = ctx;
  if (*id == r->from) *id = r->to;
}

void eg_node_replace_value(eg_node *n, int32_t from, int32_t to) {
  replacement r = {from, to};
  each_node_value(n, replace_one, &r);
}

static void count_arg(const eg_arg *a, int32_t *uses) {
  if (a->kind == EG_ARG_VALUE && a->value >= 0) uses[a->value]++;
  for (int32_t i = 0; a->kind == EG_ARG_LIST && i < a->list.n; i++)
    count_arg(&a->list.items[i], uses);
}

void eg_node_count_uses(const eg_node *n, int32_t *uses) {
  for (int32_t a = 0; a < n->n_args; a++) count_arg(&n->args[a], uses);
  for (int32_t a = 0; a < n->n_kwargs; a++) count_arg(&n->kwargs[a], uses);
}

/* map[old id] = new id; -1: removed. A kept reference to a removed value is our own bug. */
static void renumber_one(void *ctx, int32_t *id) {
  const int32_t *map = ctx;
  if (*id < 0) return;
  EG_ASSERT(map[*id] >= 0);
  *id = map[*id];
}

/* Marks the values node `n` defines as removed. */
static void drop_defined(const eg_graph *g, const eg_node *n, int32_t *map) {
  if (n->output < 0) return;
  map[n->output] = -1;
  const eg_value *v = &g->values[n->output];
  for (int32_t e = 0; v->kind == EG_VALUE_TUPLE && e < v->n_elems; e++)
    if (v->elems[e] >= 0) map[v->elems[e]] = -1;
}

eg_status eg_graph_remove(eg_graph *g, const bool *drop_node, const bool *drop_static) {
  int32_t *map = malloc(((size_t)g->n_values + 1) * sizeof *map);
  if (!map)
    return eg_error(EG_ERR_NOMEM, "graph edit: out of memory (renumbering %d values)",
                    g->n_values);
  for (int32_t v = 0; v < g->n_values; v++) map[v] = 0;
  for (int32_t i = 0; drop_node && i < g->n_nodes; i++)
    if (drop_node[i]) drop_defined(g, &g->nodes[i], map);
  for (int32_t k = 0; drop_static && k < g->n_statics; k++)
    if (drop_static[k]) map[g->statics[k].value] = -1;

  int32_t nv = 0;
  for (int32_t v = 0; v < g->n_values; v++)
    if (map[v] >= 0) {
      g->values[nv] = g->values[v];
      map[v] = nv++;
    }
  g->n_values = nv;
  for (int32_t v = 0; v < nv; v++)
    for (int32_t e = 0; g->values[v].kind == EG_VALUE_TUPLE && e < g->values[v].n_elems; e++)
      renumber_one(map, &g->values[v].elems[e]);

  int32_t nn = 0;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    if (drop_node && drop_node[i]) continue;
    eg_node *n = &g->nodes[nn++];
    *n = g->nodes[i];
    renumber_one(map, &n->output);
    each_node_value(n, renumber_one, map);
  }
  g->n_nodes = nn;

  int32_t ns = 0;
  for (int32_t k = 0; k < g->n_statics; k++) {
    if (drop_static && drop_static[k]) continue;
    g->statics[ns] = g->statics[k];
    renumber_one(map, &g->statics[ns++].value);
  }
  g->n_statics = ns;
  for (int32_t i = 0; i < g->n_inputs; i++) renumber_one(map, &g->inputs[i].value);
  for (int32_t i = 0; i < g->n_outputs; i++) renumber_one(map, &g->outputs[i].value);
  free(map);
  return EG_OK;
}

static bool name_taken(const eg_graph *g, const char *name, const eg_node *except) {
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (&g->nodes[i] != except && strcmp(g->nodes[i].name, name) == 0) return true;
  for (int32_t i = 0; i < g->n_statics; i++)
    if (strcmp(g->statics[i].name, name) == 0) return true;
  for (int32_t i = 0; i < g->n_inputs; i++)
    if (strcmp(g->inputs[i].name, name) == 0) return true;
  return false;
}

const char *eg_graph_fresh_name(eg_graph *g, const char *base, const char *suffix,
                                const eg_node *except, eg_name_taken_fn also_taken,
                                const void *ctx) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s%s", base, suffix);
  for (int k = 2; (name_taken(g, buf, except) || (also_taken && also_taken(ctx, buf))) &&
                  k < 1000000;
       k++)
    snprintf(buf, sizeof buf, "%s%s_%d", base, suffix, k);
  return eg_arena_strdup(g->arena, buf);
}
