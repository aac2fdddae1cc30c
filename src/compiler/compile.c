/* compile.c — passes, partition, lower, order (see compile.h). */
#include "compiler/compile.h"

#include <stdlib.h>
#include <string.h>

#include "ir/clone.h"
#include "ir/edit.h"
#include "ir/readers.h"
#include "compiler/passes/pipeline.h"
#include "runtime/npu_step.h"
#include "util/error.h"

/* Unit of node i: partition id for NPU nodes, n_partitions + i for CPU nodes. */
static int32_t unit_of(const eg_partitioning *pt, int32_t i) {
  return pt->nodes[i].npu ? pt->nodes[i].partition : pt->n_partitions + i;
}

static void add_edges_from_arg(const eg_graph *g, const eg_partitioning *pt, const eg_arg *a,
                               int32_t to, int32_t *indeg, int32_t *edge_from, int32_t *edge_to,
                               int32_t *n_edges) {
  if (a->kind == EG_ARG_LIST) {
    for (int32_t k = 0; k < a->list.n; k++)
      add_edges_from_arg(g, pt, &a->list.items[k], to, indeg, edge_from, edge_to, n_edges);
    return;
  }
  if (a->kind != EG_ARG_VALUE) return;
  const eg_value *v = &g->values[a->value];
  if (v->role != EG_ROLE_NODE) return;
  int32_t from = unit_of(pt, v->def);
  if (from == to) return;
  edge_from[*n_edges] = from;
  edge_to[*n_edges] = to;
  (*n_edges)++;
  indeg[to]++;
}

static int32_t count_values(const eg_arg *a) {
  if (a->kind == EG_ARG_VALUE) return 1;
  int32_t n = 0;
  for (int32_t k = 0; a->kind == EG_ARG_LIST && k < a->list.n; k++) n += count_values(&a->list.items[k]);
  return n;
}

/* A binary min-heap of unit ids ordered by key[unit] (distinct keys: each unit's first node). */
static void heap_push(int32_t *h, int32_t *n, const int32_t *key, int32_t u) {
  int32_t i = (*n)++;
  for (; i > 0 && key[h[(i - 1) / 2]] > key[u]; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
  h[i] = u;
}

static int32_t heap_pop(int32_t *h, int32_t *n, const int32_t *key) {
  const int32_t top = h[0], last = h[--*n];
  int32_t i = 0;
  for (;;) {
    int32_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && key[h[c + 1]] < key[h[c]]) c++;
    if (key[h[c]] >= key[last]) break;
    h[i] = h[c];
    i = c;
  }
  if (*n > 0) h[i] = last;
  return top;
}

/* Kahn's algorithm over units; ready units are taken smallest-first-node first. */
static eg_status order_units(eg_program *p) {
  const eg_graph *g = p->graph;
  const eg_partitioning *pt = &p->parts;
  int32_t nu = pt->n_partitions + g->n_nodes, n_edges = 0, max_edges = 0;
  for (int32_t i = 0; i < g->n_nodes; i++)
    for (int32_t a = 0; a < g->nodes[i].n_args + g->nodes[i].n_kwargs; a++)
      max_edges += count_values(a < g->nodes[i].n_args ? &g->nodes[i].args[a]
                                                       : &g->nodes[i].kwargs[a - g->nodes[i].n_args]);
  int32_t *indeg = calloc((size_t)nu + 1, sizeof(int32_t));
  int32_t *first = malloc(((size_t)nu + 1) * sizeof(int32_t));
  int32_t *ef = malloc(((size_t)max_edges + 1) * sizeof(int32_t));
  int32_t *et = malloc(((size_t)max_edges + 1) * sizeof(int32_t));
  eg_status s = EG_OK;
  if (!indeg || !first || !ef || !et) {
    s = eg_error(EG_ERR_NOMEM, "compile: out of memory ordering %d units", nu);
    goto out;
  }
  for (int32_t u = 0; u < nu; u++) first[u] = INT32_MAX;
  for (int32_t i = g->n_nodes - 1; i >= 0; i--) first[unit_of(pt, i)] = i;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    for (int32_t a = 0; a < n->n_args + n->n_kwargs; a++)
      add_edges_from_arg(g, pt, a < n->n_args ? &n->args[a] : &n->kwargs[a - n->n_args],
                         unit_of(pt, i), indeg, ef, et, &n_edges);
  }
  /* Units in use: every partition, and CPU nodes. Repeatedly take the ready unit with the
   * smallest first node: a min-heap of ready units keyed by first node, and each unit's
   * outgoing edges in one array (CSR), so ordering is O((units + edges) log units). */
  int32_t *out_start = calloc((size_t)nu + 2, sizeof(int32_t));
  int32_t *out_to = malloc(((size_t)n_edges + 1) * sizeof(int32_t));
  int32_t *heap = malloc(((size_t)nu + 1) * sizeof(int32_t));
  if (!out_start || !out_to || !heap) {
    s = eg_error(EG_ERR_NOMEM, "compile: out of memory ordering %d units", nu);
    free(out_start);
    free(out_to);
    free(heap);
    goto out;
  }
  for (int32_t e = 0; e < n_edges; e++) out_start[ef[e] + 2]++;
  for (int32_t u = 0; u < nu; u++) out_start[u + 2] += out_start[u + 1];
  for (int32_t e = 0; e < n_edges; e++) out_to[out_start[ef[e] + 1]++] = et[e];
  int32_t n_heap = 0, n_order = 0;
  for (int32_t u = 0; u < nu; u++)
    if (first[u] != INT32_MAX && indeg[u] == 0) heap_push(heap, &n_heap, first, u);
  while (n_heap > 0) {
    const int32_t best = heap_pop(heap, &n_heap, first);
    p->steps[p->n_steps++] = best < pt->n_partitions ? (eg_program_step){-1, best}
                                                     : (eg_program_step){best - pt->n_partitions, -1};
    if (best < pt->n_partitions)
      for (int32_t k = 0; k < pt->partitions[best].n_nodes; k++)
        p->order[n_order++] = pt->partitions[best].nodes[k];
    else
      p->order[n_order++] = best - pt->n_partitions;
    for (int32_t e = out_start[best]; e < out_start[best + 1]; e++)
      if (--indeg[out_to[e]] == 0 && first[out_to[e]] != INT32_MAX)
        heap_push(heap, &n_heap, first, out_to[e]);
  }
  free(out_start);
  free(out_to);
  free(heap);
  if (n_order != g->n_nodes)
    s = eg_error(EG_ERR_INVALID, "compile: partitions form a cycle (%d of %d nodes ordered)",
                 n_order, g->n_nodes);
out:
  free(indeg);
  free(first);
  free(ef);
  free(et);
  return s;
}

/* held (eg_nhwc_between_partitions: the values only NPU steps touch, held NHWC) less the
 * values a partition also puts out as another value of the same bytes that the CPU reads (one
 * tensor, or a copy: a ReLU's result for a CPU max pool and its detach for the backward's
 * threshold): both then stay in IR order on one buffer (eg_npu_step_output_repeats) rather
 * than one buffer in each order for as long as either lives; their NPU readers convert them
 * as they take them. */
static eg_status hold_repeats_alike(const eg_program *p, bool *held) {
  int32_t *root = NULL;
  for (int32_t k = 0; k < p->parts.n_partitions; k++) {
    const eg_lowered *lp = &p->lowered[k];
    int32_t *grown = realloc(root, ((size_t)lp->n_outputs + 1) * sizeof(int32_t));
    if (!grown) {
      free(root);
      return eg_error(EG_ERR_NOMEM, "compile: out of memory");
    }
    root = grown;
    for (int32_t j = 0; j < lp->n_outputs; j++)
      root[j] = eg_npu_copy_root(p->graph, lp->outputs[j].value);
    for (int32_t j = 1; j < lp->n_outputs; j++)
      for (int32_t i = 0; i < j; i++) {
        const int32_t vi = lp->outputs[i].value, vj = lp->outputs[j].value;
        if (eg_npu_outputs_same_bytes(lp, root, i, j) && held[vi] != held[vj])
          held[vi] = held[vj] = false;
      }
  }
  free(root);
  return EG_OK;
}

/* Each boundary's layout in the runtime's buffers (eg_boundary.held), for the program's
 * partitions together. */
static eg_status hold_between(eg_program *p) {
  bool *held = NULL;
  eg_status s = eg_nhwc_between_partitions(p->graph, &p->parts, &held);
  if (s == EG_OK) s = hold_repeats_alike(p, held);
  for (int32_t k = 0; s == EG_OK && k < p->parts.n_partitions; k++) {
    eg_lowered *lp = &p->lowered[k];
    for (int32_t i = 0; i < lp->n_inputs; i++) lp->inputs[i].held = held[lp->inputs[i].value];
    for (int32_t i = 0; i < lp->n_outputs; i++) lp->outputs[i].held = held[lp->outputs[i].value];
  }
  free(held);
  return s;
}

static eg_status lower_all(eg_program *p, const eg_partition_options *opt) {
  p->lowered = calloc((size_t)p->parts.n_partitions + 1, sizeof(eg_lowered));
  if (!p->lowered) return eg_error(EG_ERR_NOMEM, "compile: out of memory");
  const eg_backend *b = opt->backend ? opt->backend : eg_backend_for_target(opt->target);
  EG_TRY(b->lower(b, p->graph, &p->parts, p->lowered));
  return hold_between(p); /* the runtime holds values as the boundaries say */
}

eg_status eg_program_place(const eg_graph *g, const eg_partition_options *opt,
                           const char *dump_after, FILE *dump, eg_graph **compiled,
                           eg_partitioning *parts) {
  *compiled = NULL;
  memset(parts, 0, sizeof *parts);
  EG_TRY(eg_passes_check_dump(dump_after));
  eg_graph *c = NULL;
  eg_status s = eg_graph_clone(g, &c);
  if (s == EG_OK) s = eg_passes_run(c, opt, dump_after, dump);
  if (s == EG_OK) s = eg_partition_placed(c, opt, parts); /* placed by pass place */
  if (s != EG_OK) {
    eg_graph_destroy(c);
    return s;
  }
  *compiled = c;
  return EG_OK;
}

eg_status eg_program_build(const eg_graph *g, const eg_partition_options *opt, eg_program *out) {
  memset(out, 0, sizeof *out);
  out->target = opt->target;
  eg_status s = eg_program_place(g, opt, NULL, NULL, &out->graph, &out->parts);
  out->owns_graph = out->graph != NULL;
  if (s != EG_OK) return s;
  g = out->graph;
  s = lower_all(out, opt);
  if (s == EG_OK) {
    size_t nu = (size_t)out->parts.n_partitions + (size_t)g->n_nodes + 1;
    out->steps = calloc(nu, sizeof(eg_program_step));
    out->order = calloc((size_t)g->n_nodes + 1, sizeof(int32_t));
    s = out->steps && out->order ? order_units(out)
                                 : eg_error(EG_ERR_NOMEM, "compile: out of memory");
  }
  if (s != EG_OK) eg_program_free(out);
  return s;
}

