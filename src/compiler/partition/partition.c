/* partition.c — the partitioner (see partition.h), written as numbered steps:
 *
 *   1. Skip lists: match every --skip-op / --skip-node name against the graph; a name matching
 *      nothing (or only getitem nodes, which cannot be placed on their own) gives a warning.
 *   2. Gates, for every node but getitem, in this order; the first "no" wins and its reason is
 *      the node's (npu_ops.h states the same contract from the builder's side):
 *        a. the op has a builder         else "no NPU lowering for aten.X"
 *        b. float tensors need a target with the FLOAT feature (V69+, fp16 not rejected)
 *                                        else "float ops need HTP V69+ with fp16; SM8350 is V68"
 *        c. the target's HTP arch >= the builder's min_htp_arch
 *                                        else "aten.X needs HTP V73+; SM8450 is V69"
 *        d. every dim of every tensor the node reads or defines fits QNN's uint32 dims
 *                                        else "dimension 8589934592 of x exceeds QNN's 32-bit
 *                                        dims" (so lowering never truncates a dim)
 *        e. the user's skip lists        else "skipped by --skip-op aten.X" / "--skip-node N"
 *        f. the builder's own supports() else the builder's reason
 *      The generic gates come first so a builder is never offered a node its target cannot run.
 *   3. A getitem takes its producer's placement (it is only a name for one of the producer's
 *      outputs; on the NPU that is an output tensor of the producer's QNN op).
 *   4. Grouping (below).
 *   5. Partitions are numbered in order of their first node; node lists are ascending.
 *
 * Step 4, grouping. Vertices of the "condensed" graph are the current NPU groups plus every CPU
 * node on its own; there is an edge X -> Y when some node of Y uses a value defined by a node of
 * X. Each NPU node starts as its own group (a getitem is first joined to its producer's group:
 * always legal, its only input is the producer). Then, in topological order of consumers, for
 * every edge u -> v between NPU nodes of different groups A = group(u), B = group(v), the groups
 * are merged unless B is reachable from A through some other vertex (A -> ... -> W -> ... -> B,
 * W neither A nor B): merging would then create the cycle A∪B -> W -> A∪B, and the merged
 * partition could not run as one NPU graph — it would need the result of W, which needs the
 * partition's own result. (B -> ... -> A cannot exist: with the edge A -> B it would already be a
 * cycle, and the condensed graph is kept acyclic by induction.) The search expands whole groups:
 * entering a group at one node and leaving it from another is a path, because a partition runs
 * as a unit. Passes repeat until one merges nothing, so at the end no two adjacent groups can be
 * merged: every partition is maximal and connected, and the condensed graph is acyclic. The
 * greedy order makes the result deterministic but not necessarily the fewest partitions.
 * This is the cycle check of ExecuTorch's CapabilityBasedPartitioner; ggml's sched_split_graph
 * instead cuts the node list into contiguous runs, which never forms a cycle but cannot merge
 * NPU nodes separated in the order by an independent CPU node.
 * Cost: O(passes * E * (V + E)) in the worst case; V and E are a training step's node and
 * edge counts (thousands at most), and with no NPU nodes it is O(V + E). */
#include "compiler/partition/partition.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* Whole-graph placements made so far (eg_placement_count): each runs every node's gates. */
static _Atomic long placements;

/* ---- the graph's node -> node edges, as compressed adjacency lists ---- */

typedef struct edges {
  int32_t *pred_start, *pred; /* preds of node i: pred[pred_start[i] .. pred_start[i+1]) */
  int32_t *succ_start, *succ;
} edges;

/* Calls visit(ctx, producer) for every node whose value `a` (or a list inside it) uses. */
static void arg_producers(const eg_graph *g, const eg_arg *a, void (*visit)(void *, int32_t),
                          void *ctx) {
  if (a->kind == EG_ARG_LIST) {
    for (int32_t i = 0; i < a->list.n; i++) arg_producers(g, &a->list.items[i], visit, ctx);
  } else if (a->kind == EG_ARG_VALUE) {
    EG_ASSERT(a->value >= 0 && a->value < g->n_values);
    const eg_value *v = &g->values[a->value];
    if (v->role == EG_ROLE_NODE) visit(ctx, v->def);
  }
}

typedef struct pred_collector {
  int32_t node;      /* the consumer */
  int32_t *seen;     /* seen[p] == node: p already recorded for this consumer */
  int32_t *out;      /* NULL while counting */
  int32_t count;
} pred_collector;

static void collect_pred(void *ctx, int32_t p) {
  pred_collector *c = ctx;
  if (c->seen[p] == c->node) return;
  c->seen[p] = c->node;
  if (c->out) c->out[c->count] = p;
  c->count++;
}

static int32_t node_preds(const eg_graph *g, int32_t i, int32_t *seen, int32_t *out) {
  const eg_node *n = &g->nodes[i];
  pred_collector c = {.node = i, .seen = seen, .out = out};
  for (int32_t a = 0; a < n->n_args; a++) arg_producers(g, &n->args[a], collect_pred, &c);
  for (int32_t a = 0; a < n->n_kwargs; a++) arg_producers(g, &n->kwargs[a], collect_pred, &c);
  return c.count;
}

static eg_status build_edges(const eg_graph *g, eg_arena *arena, edges *e) {
  int32_t n = g->n_nodes;
  int32_t *seen = malloc(((size_t)n + 1) * sizeof *seen);
  e->pred_start = eg_arena_array(arena, (size_t)n + 1, sizeof(int32_t));
  e->succ_start = eg_arena_array(arena, (size_t)n + 2, sizeof(int32_t));
  if (!seen || !e->pred_start || !e->succ_start) goto nomem;
  for (int32_t i = 0; i < n; i++) seen[i] = -1;
  for (int32_t i = 0; i < n; i++)
    e->pred_start[i + 1] = e->pred_start[i] + node_preds(g, i, seen, NULL);
  int32_t n_edges = e->pred_start[n];
  e->pred = eg_arena_array(arena, (size_t)n_edges + 1, sizeof(int32_t));
  e->succ = eg_arena_array(arena, (size_t)n_edges + 1, sizeof(int32_t));
  if (!e->pred || !e->succ) goto nomem;
  for (int32_t i = 0; i < n; i++) seen[i] = -1;
  for (int32_t i = 0; i < n; i++) node_preds(g, i, seen, e->pred + e->pred_start[i]);
  /* successors: count, prefix-sum into succ_start[p + 1], then fill ascending by consumer */
  for (int32_t k = 0; k < n_edges; k++) e->succ_start[e->pred[k] + 2]++;
  for (int32_t i = 0; i < n; i++) e->succ_start[i + 2] += e->succ_start[i + 1];
  for (int32_t v = 0; v < n; v++)
    for (int32_t k = e->pred_start[v]; k < e->pred_start[v + 1]; k++)
      e->succ[e->succ_start[e->pred[k] + 1]++] = v;
  free(seen);
  return EG_OK;
nomem:
  free(seen);
  return eg_error(EG_ERR_NOMEM, "partition: out of memory (%d nodes)", n);
}

/* ---- step 1: skip lists ---- */

/* Does skip-op `name` select traced target `target`? Exact, or an overload packet: `name` plus
 * "." is a prefix of `target` and the rest is one overload name ("aten.relu" -> ".default"). */
static bool skip_op_matches(const char *name, const char *target) {
  if (strcmp(name, target) == 0) return true;
  size_t len = strlen(name);
  return strncmp(name, target, len) == 0 && target[len] == '.' && target[len + 1] &&
         !strchr(target + len + 1, '.');
}

bool eg_partition_skips(const eg_partition_options *opt, const eg_node *n) {
  for (int k = 0; k < opt->n_skip_ops; k++)
    if (skip_op_matches(opt->skip_ops[k], eg_op_target(n->op))) return true;
  for (int k = 0; k < opt->n_skip_nodes; k++)
    if (strcmp(opt->skip_nodes[k], n->name) == 0) return true;
  return false;
}

typedef struct state {
  const eg_graph *g;
  bool placed;           /* the graph's nodes carry their placement (eg_partition_placed) */
  const eg_partition_options *opt;
  const eg_backend *backend;
  eg_partitioning *out;
  edges e;
  int32_t warnings_cap, notes_cap;
} state;

typedef enum line_kind { LINE_WARNING, LINE_NOTE } line_kind;

/* Appends a formatted line to the result's warnings or notes (growing arena lists). */
static eg_status add_line(state *st, line_kind kind, const char *fmt, ...) EG_PRINTF(3, 4);
static eg_status add_line(state *st, line_kind kind, const char *fmt, ...) {
  eg_partitioning *p = st->out;
  const char ***list = kind == LINE_NOTE ? &p->notes : &p->warnings;
  int32_t *n = kind == LINE_NOTE ? &p->n_notes : &p->n_warnings;
  int32_t *cap = kind == LINE_NOTE ? &st->notes_cap : &st->warnings_cap;
  if (*n == *cap) {
    int32_t c = *cap ? 2 * *cap : 8;
    const char **w = eg_arena_array(p->arena, (size_t)c, sizeof *w);
    if (!w) return eg_error(EG_ERR_NOMEM, "partition: out of memory");
    if (*n) memcpy(w, *list, (size_t)*n * sizeof *w);
    *list = w;
    *cap = c;
  }
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *copy = eg_arena_strdup(p->arena, msg);
  if (!copy) return eg_error(EG_ERR_NOMEM, "partition: out of memory");
  (*list)[(*n)++] = copy;
  return EG_OK;
}

/* Warns about skip-list names selecting no node or only getitems (the lists themselves are
 * applied by eg_place_node, step 2). */
static eg_status step1_skip_lists(state *st) {
  const eg_graph *g = st->g;
  const eg_partition_options *opt = st->opt;
  for (int k = 0; k < opt->n_skip_ops; k++) {
    int hits = 0, getitems = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
      if (!skip_op_matches(opt->skip_ops[k], eg_op_target(g->nodes[i].op))) continue;
      if (g->nodes[i].op == EG_OP_getitem) {
        getitems++;
        continue;
      }
      hits++;
    }
    if (getitems)
      EG_TRY(add_line(st, LINE_WARNING, "--skip-op %s: a getitem takes its producer's placement: skip the "
                         "producer instead", opt->skip_ops[k]));
    else if (!hits)
      EG_TRY(add_line(st, LINE_WARNING, "--skip-op %s: no node has this op (give a target like "
                         "aten.convolution_backward; `edgegrad info` lists them)",
                         opt->skip_ops[k]));
  }
  for (int k = 0; k < opt->n_skip_nodes; k++) {
    int32_t i = 0;
    while (i < g->n_nodes && strcmp(g->nodes[i].name, opt->skip_nodes[k]) != 0) i++;
    if (i == g->n_nodes)
      EG_TRY(add_line(st, LINE_WARNING, "--skip-node %s: no node has this name", opt->skip_nodes[k]));
    else if (g->nodes[i].op == EG_OP_getitem)
      EG_TRY(add_line(st, LINE_WARNING, "--skip-node %s: a getitem takes its producer's placement: skip "
                         "the producer instead", opt->skip_nodes[k]));
  }
  return EG_OK;
}

/* ---- step 2: gates ---- */

bool eg_place_node(const eg_partition_options *opt, const eg_graph *g, const eg_node *n,
                   char *reason, size_t size) {
  const eg_target *t = opt->target;
  const eg_backend *b = opt->backend ? opt->backend : eg_backend_for_target(t);
  reason[0] = '\0';
  if (!b->gate(b, g, n, t, reason, size)) return false; /* a-d */
  for (int k = 0; k < opt->n_skip_ops; k++) /* e */
    if (skip_op_matches(opt->skip_ops[k], eg_op_target(n->op))) {
      snprintf(reason, size, "skipped by --skip-op %s", opt->skip_ops[k]);
      return false;
    }
  for (int k = 0; k < opt->n_skip_nodes; k++)
    if (strcmp(opt->skip_nodes[k], n->name) == 0) {
      snprintf(reason, size, "skipped by --skip-node %s", n->name);
      return false;
    }
  reason[0] = '\0';
  if (b->supports(b, g, n, t, reason, size)) return true; /* f */
  if (!reason[0]) {
    char op[160];
    snprintf(reason, size, "the NPU lowering of %s declined this node",
             eg_op_display_name(n->op, op, sizeof op));
  }
  return false;
}

static eg_status step2_gates(state *st) {
  char reason[512];
  for (int32_t i = 0; i < st->g->n_nodes; i++) {
    eg_node_placement *p = &st->out->nodes[i];
    const eg_node *n = &st->g->nodes[i];
    p->partition = -1;
    if (n->op == EG_OP_getitem) continue; /* step 3 */
    if (st->placed) { /* decided by eg_place_graph: read, never asked again */
      if (n->place == EG_PLACE_UNDECIDED)
        return eg_node_error(n, EG_ERR_INVALID, "not placed: pass place decides every node "
                             "before the graph is partitioned");
      p->npu = n->place == EG_PLACE_NPU;
      if (!p->npu && !(p->reason = eg_arena_strdup(st->out->arena, n->place_reason ? n->place_reason : "")))
        return eg_error(EG_ERR_NOMEM, "partition: out of memory");
      continue;
    }
    p->npu = eg_place_node(st->opt, st->g, n, reason, sizeof reason);
    if (!p->npu && !(p->reason = eg_arena_strdup(st->out->arena, reason)))
      return eg_error(EG_ERR_NOMEM, "partition: out of memory");
  }
  if (!st->placed) placements++;
  return EG_OK;
}

/* ---- step 3: getitem follows its producer ---- */

/* The node defining a getitem's tuple argument. */
static int32_t getitem_producer(const eg_graph *g, const eg_node *n) {
  const eg_arg *a = eg_node_arg(n, 0, NULL);
  EG_ASSERT(a && a->kind == EG_ARG_VALUE && g->values[a->value].role == EG_ROLE_NODE);
  return g->values[a->value].def;
}

static const char follows[] = "follows its producer";

static void step3_getitems(state *st) {
  for (int32_t i = 0; i < st->g->n_nodes; i++) {
    if (st->g->nodes[i].op != EG_OP_getitem) continue;
    eg_node_placement *p = &st->out->nodes[i];
    p->npu = st->out->nodes[getitem_producer(st->g, &st->g->nodes[i])].npu;
    p->reason = p->npu ? NULL : follows;
  }
}

/* ---- step 4: grouping ---- */

typedef struct groups {
  int32_t *parent;   /* union-find; CPU nodes stay their own roots */
  int32_t *next;     /* members of a root's group: a list through next[], ending at -1 */
  int32_t *tail;     /* last member, valid for roots */
  int32_t *stamp;    /* per root: last search that visited it */
  int32_t *lo, *hi;  /* per root: its members' lowest and highest node index */
  int32_t *queue;
  int32_t search;
} groups;

static int32_t find(groups *gr, int32_t x) {
  while (gr->parent[x] != x) {
    gr->parent[x] = gr->parent[gr->parent[x]];
    x = gr->parent[x];
  }
  return x;
}

static void unite(groups *gr, int32_t a, int32_t b) { /* roots */
  gr->parent[b] = a;
  if (gr->lo[b] < gr->lo[a]) gr->lo[a] = gr->lo[b];
  if (gr->hi[b] > gr->hi[a]) gr->hi[a] = gr->hi[b];
  gr->next[gr->tail[a]] = b;
  gr->tail[a] = gr->tail[b];
}

/* Is group `to` reachable from group `from` through a vertex that is neither? Node indices are
 * a topological order, so a path into `to` only passes nodes below its highest member: the
 * search skips every node at or above it (keeping the merge loop near linear in the graph). */
static bool reaches_via_other(const edges *e, groups *gr, int32_t from, int32_t to) {
  int32_t head = 0, n_queued = 0;
  const int32_t limit = gr->hi[to];
  gr->search++;
  gr->stamp[from] = gr->stamp[to] = gr->search;
  for (int32_t x = from;; x = gr->queue[head++]) {
    for (int32_t u = x; u >= 0; u = gr->next[u]) {
      if (u >= limit) continue;
      for (int32_t k = e->succ_start[u]; k < e->succ_start[u + 1]; k++) {
        int32_t r = find(gr, e->succ[k]);
        if (r == to && x != from) return true;
        if (gr->stamp[r] == gr->search || gr->lo[r] >= limit) continue;
        gr->stamp[r] = gr->search;
        gr->queue[n_queued++] = r;
      }
    }
    if (head == n_queued) return false;
  }
}

static eg_status step4_group(state *st, groups *gr) {
  const eg_graph *g = st->g;
  const edges *e = &st->e;
  const eg_node_placement *pl = st->out->nodes;
  int32_t n = g->n_nodes;
  gr->parent = malloc(((size_t)n + 1) * sizeof(int32_t));
  gr->next = malloc(((size_t)n + 1) * sizeof(int32_t));
  gr->tail = malloc(((size_t)n + 1) * sizeof(int32_t));
  gr->stamp = calloc((size_t)n + 1, sizeof(int32_t));
  gr->queue = malloc(((size_t)n + 1) * sizeof(int32_t));
  gr->lo = malloc(((size_t)n + 1) * sizeof(int32_t));
  gr->hi = malloc(((size_t)n + 1) * sizeof(int32_t));
  if (!gr->parent || !gr->next || !gr->tail || !gr->stamp || !gr->queue || !gr->lo || !gr->hi)
    return eg_error(EG_ERR_NOMEM, "partition: out of memory (%d nodes)", n);
  for (int32_t i = 0; i < n; i++) {
    gr->parent[i] = gr->tail[i] = gr->lo[i] = gr->hi[i] = i;
    gr->next[i] = -1;
  }
  for (int32_t i = 0; i < n; i++)
    if (pl[i].npu && g->nodes[i].op == EG_OP_getitem)
      unite(gr, find(gr, getitem_producer(g, &g->nodes[i])), i);
  for (bool merged = true; merged;) {
    merged = false;
    for (int32_t v = 0; v < n; v++) {
      if (!pl[v].npu) continue;
      for (int32_t k = e->pred_start[v]; k < e->pred_start[v + 1]; k++) {
        int32_t u = e->pred[k];
        if (!pl[u].npu) continue;
        int32_t a = find(gr, u), b = find(gr, v);
        if (a == b || reaches_via_other(e, gr, a, b)) continue;
        unite(gr, a, b);
        merged = true;
      }
    }
  }
  return EG_OK;
}

/* ---- step 5: numbering ---- */

static eg_status step5_number(state *st, groups *gr) {
  eg_partitioning *p = st->out;
  int32_t n = st->g->n_nodes, *id_of_root = gr->stamp; /* reused: ids by root */
  for (int32_t i = 0; i < n; i++) id_of_root[i] = -1;
  for (int32_t i = 0; i < n; i++) {
    if (!p->nodes[i].npu) continue;
    int32_t r = find(gr, i);
    if (id_of_root[r] < 0) id_of_root[r] = p->n_partitions++;
    p->nodes[i].partition = id_of_root[r];
  }
  p->partitions = eg_arena_array(p->arena, (size_t)p->n_partitions + 1, sizeof(eg_partition));
  if (!p->partitions) return eg_error(EG_ERR_NOMEM, "partition: out of memory");
  for (int32_t i = 0; i < n; i++)
    if (p->nodes[i].npu) p->partitions[p->nodes[i].partition].n_nodes++;
  for (int32_t k = 0; k < p->n_partitions; k++) {
    p->partitions[k].nodes = eg_arena_array(p->arena, (size_t)p->partitions[k].n_nodes,
                                            sizeof(int32_t));
    if (!p->partitions[k].nodes) return eg_error(EG_ERR_NOMEM, "partition: out of memory");
    p->partitions[k].n_nodes = 0;
  }
  for (int32_t i = 0; i < n; i++)
    if (p->nodes[i].npu) {
      eg_partition *part = &p->partitions[p->nodes[i].partition];
      part->nodes[part->n_nodes++] = i;
    }
  return EG_OK;
}

/* ---- entry point ---- */


/* Step 6: a frozen weight read by NPU nodes of several partitions (typically a conv's forward
 * and its backward, split by CPU nodes such as the loss) is held by each partition's NPU graph;
 * say so. The compiled program file still stores its bytes once. */
static void static_partitions(const state *st, const eg_arg *a, int32_t part, int32_t *first,
                              bool *shared) {
  if (a->kind == EG_ARG_LIST)
    for (int32_t k = 0; k < a->list.n; k++)
      static_partitions(st, &a->list.items[k], part, first, shared);
  if (a->kind != EG_ARG_VALUE || st->g->values[a->value].role != EG_ROLE_STATIC) return;
  if (first[a->value] < 0) first[a->value] = part;
  else if (first[a->value] != part) shared[a->value] = true;
}

static eg_status step6_shared_statics(state *st) {
  const eg_graph *g = st->g;
  int32_t *first = malloc(((size_t)g->n_values + 1) * sizeof(int32_t));
  bool *shared = calloc((size_t)g->n_values + 1, sizeof(bool));
  eg_status s = first && shared ? EG_OK : eg_error(EG_ERR_NOMEM, "partition: out of memory");
  for (int32_t v = 0; first && v < g->n_values; v++) first[v] = -1;
  for (int32_t i = 0; s == EG_OK && i < g->n_nodes; i++) {
    const eg_node_placement *pl = &st->out->nodes[i];
    const eg_node *n = &g->nodes[i];
    for (int32_t a = 0; pl->npu && a < n->n_args + n->n_kwargs; a++)
      static_partitions(st, a < n->n_args ? &n->args[a] : &n->kwargs[a - n->n_args],
                        pl->partition, first, shared);
  }
  for (int32_t v = 0; s == EG_OK && v < g->n_values; v++)
    if (shared[v])
      s = add_line(st, LINE_NOTE, "weight %s is read on the NPU by several partitions: each partition's "
                      "graph holds its own copy at run time, because CPU nodes between them "
                      "(e.g. the loss between a forward and its backward) split the graph; "
                      "the compiled program stores its bytes once", eg_value_label(g, v));
  free(first);
  free(shared);
  return s;
}

static eg_status run_steps(state *st) {
  const eg_graph *g = st->g;
  eg_partitioning *p = st->out;
  size_t n = (size_t)g->n_nodes + 1;
  p->n_nodes = g->n_nodes;
  p->nodes = eg_arena_array(p->arena, n, sizeof *p->nodes);
  if (!p->nodes)
    return eg_error(EG_ERR_NOMEM, "partition: out of memory (%d nodes)", g->n_nodes);
  EG_TRY(build_edges(g, p->arena, &st->e));
  EG_TRY(step1_skip_lists(st));
  EG_TRY(step2_gates(st));
  step3_getitems(st);
  groups gr = {0};
  eg_status s = step4_group(st, &gr);
  if (s == EG_OK) s = step5_number(st, &gr);
  if (s == EG_OK) s = step6_shared_statics(st);
  free(gr.parent);
  free(gr.next);
  free(gr.tail);
  free(gr.stamp);
  free(gr.queue);
  free(gr.lo);
  free(gr.hi);
  return s;
}

/* The checks both entry points make of their arguments. */
static eg_status check_args(const eg_graph *g, const eg_partition_options *opt, const char *fn) {
  if (!g || !opt || !opt->target)
    return eg_error(EG_ERR_ARGUMENT, "%s: graph, options and target are required", fn);
  if ((opt->n_skip_ops > 0 && !opt->skip_ops) || (opt->n_skip_nodes > 0 && !opt->skip_nodes) ||
      opt->n_skip_ops < 0 || opt->n_skip_nodes < 0)
    return eg_error(EG_ERR_ARGUMENT, "%s: skip list count (%d ops, %d nodes) without a list", fn,
                    opt->n_skip_ops, opt->n_skip_nodes);
  for (int k = 0; k < opt->n_skip_ops; k++)
    if (!opt->skip_ops[k]) return eg_error(EG_ERR_ARGUMENT, "%s: skip op %d is NULL", fn, k);
  for (int k = 0; k < opt->n_skip_nodes; k++)
    if (!opt->skip_nodes[k]) return eg_error(EG_ERR_ARGUMENT, "%s: skip node %d is NULL", fn, k);
  return EG_OK;
}

static eg_status partition(const eg_graph *g, const eg_partition_options *opt, bool placed,
                           eg_partitioning *out, const char *fn) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "%s: out is NULL", fn);
  memset(out, 0, sizeof *out);
  EG_TRY(check_args(g, opt, fn));
  out->arena = eg_arena_create();
  if (!out->arena) return eg_error(EG_ERR_NOMEM, "partition: out of memory");
  state st = {.g = g, .placed = placed, .opt = opt, .out = out,
              .backend = opt->backend ? opt->backend : eg_backend_for_target(opt->target)};
  eg_status s = run_steps(&st);
  if (s != EG_OK) eg_partitioning_free(out);
  return s;
}

eg_status eg_partition_graph(const eg_graph *g, const eg_partition_options *opt,
                             eg_partitioning *out) {
  return partition(g, opt, false, out, "eg_partition_graph");
}

eg_status eg_partition_placed(const eg_graph *g, const eg_partition_options *opt,
                              eg_partitioning *out) {
  return partition(g, opt, true, out, "eg_partition_placed");
}

/* ---- the placement on the graph's nodes ---- */

/* Sets node i's fields from one decision; the reason goes into the graph's arena. */
static eg_status place_one(const eg_partition_options *opt, eg_graph *g, int32_t i) {
  eg_node *n = &g->nodes[i];
  char reason[512];
  const bool npu = eg_place_node(opt, g, n, reason, sizeof reason);
  n->place = npu ? EG_PLACE_NPU : EG_PLACE_CPU;
  n->place_reason = npu ? NULL : eg_arena_strdup(g->arena, reason);
  if (!npu && !n->place_reason) return eg_error(EG_ERR_NOMEM, "place: out of memory");
  return EG_OK;
}

/* Every getitem takes its producer's placement (step 3). */
static void place_getitems(eg_graph *g) {
  for (int32_t i = 0; i < g->n_nodes; i++) {
    eg_node *n = &g->nodes[i];
    if (n->op != EG_OP_getitem) continue;
    n->place = g->nodes[getitem_producer(g, n)].place;
    n->place_reason = n->place == EG_PLACE_NPU ? NULL : follows;
  }
}

eg_status eg_place_graph(eg_graph *g, const eg_partition_options *opt) {
  EG_TRY(check_args(g, opt, "eg_place_graph"));
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op != EG_OP_getitem) EG_TRY(place_one(opt, g, i));
  place_getitems(g);
  placements++;
  return EG_OK;
}

eg_status eg_place_again(eg_graph *g, const eg_partition_options *opt, const bool *which) {
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (which[i] && g->nodes[i].op != EG_OP_getitem) EG_TRY(place_one(opt, g, i));
  place_getitems(g);
  return EG_OK;
}

long eg_placement_count(void) { return placements; }
