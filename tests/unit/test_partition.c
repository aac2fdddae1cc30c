/* test_partition.c — the partitioner (src/compiler/partition) with an injected builder table:
 * tests pretend some ops are NPU-capable and check grouping, the acyclicity rule, getitem following
 * its producer, skip lists, the arch/float gates and the exact reason strings; a property test
 * on random DAGs checks every result against an independent checker (placements consistent,
 * partitions connected, partition graph acyclic, no two adjacent partitions mergeable). Then
 * the real (empty) builder table on the committed fixture and the public compile API. */
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "eg_test.h"
#include "eg_test_backend.h"
#include "eg_test_graph.h"
#include "compiler/frontend/frontend.h"
#include "compiler/partition/partition.h"
#include "compiler/compile.h"
#include "compiler/egp_write.h"
#include "program/program.h"
#include "util/error.h"

/* ---- injected builders ---- */

static int offered; /* nodes offered to fake builders' supports() */

/* Supports every node except those named "decline*" (with a reason) or "mute*" (without). */
static bool fake_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                          size_t size) {
  (void)g;
  (void)t;
  offered++;
  if (strncmp(n->name, "decline", 7) == 0) {
    snprintf(reason, size, "test: %s declined", n->name);
    return false;
  }
  return strncmp(n->name, "mute", 4) != 0;
}

static const eg_htp_builder fake_any = {"fake", 0, fake_supports, NULL};
static const eg_htp_builder fake_v75 = {"fake V75+", 75, fake_supports, NULL};

/* relu, add, mul, convolution_backward: NPU-capable (mul needs V75); neg and the rest: none. */
static const eg_htp_builder *const *fake_table(void) {
  static const eg_htp_builder *table[EG_OP_COUNT];
  table[EG_OP_relu] = &fake_any;
  table[EG_OP_add_Tensor] = &fake_any;
  table[EG_OP_convolution_backward] = &fake_any;
  table[EG_OP_mul_Tensor] = &fake_v75;
  return table;
}

/* ---- hand-built graphs: input "x" is value 0 ---- */

#define MAX_VALUES 512
#define MAX_NODES 256

static eg_graph *tg_create(eg_dtype dtype) {
  eg_graph *g = eg_graph_create();
  if (!g) return NULL;
  g->values = eg_arena_array(g->arena, MAX_VALUES, sizeof(eg_value));
  g->nodes = eg_arena_array(g->arena, MAX_NODES, sizeof(eg_node));
  g->inputs = eg_arena_array(g->arena, 1, sizeof(eg_named));
  g->n_values = g->n_inputs = 1;
  g->inputs[0] = (eg_named){.name = "x", .value = 0};
  g->values[0] = (eg_value){.kind = EG_VALUE_TENSOR, .dtype = dtype, .rank = 1, .shape = {4},
                            .role = EG_ROLE_INPUT, .def = 0};
  return g;
}

static int32_t tg_tensor(eg_graph *g, int32_t node) {
  int32_t id = g->n_values++;
  g->values[id] = (eg_value){.kind = EG_VALUE_TENSOR, .dtype = g->values[0].dtype, .rank = 1,
                             .shape = {4}, .role = EG_ROLE_NODE, .def = node};
  return id;
}

/* A node of `op` on `n_in` tensor values; returns its output value. */
static int32_t op(eg_graph *g, const char *name, eg_op o, int n_in, ...) {
  va_list ap;
  va_start(ap, n_in);
  eg_node *n = eg_test_graph_vnode(g, name, o, n_in, ap);
  va_end(ap);
  n->output = tg_tensor(g, g->n_nodes - 1);
  return n->output;
}

/* A tuple-producing node on one input: elements present per `present` (n_elems of them). */
static int32_t tuple_op(eg_graph *g, const char *name, eg_op o, int32_t in, int n_elems,
                        const bool *present) {
  eg_node *n = eg_test_graph_node(g, name, o, 1);
  int32_t node = g->n_nodes - 1;
  n->args[0] = (eg_arg){.kind = EG_ARG_VALUE, .value = in};
  int32_t t = g->n_values++;
  eg_value *v = &g->values[t];
  *v = (eg_value){.kind = EG_VALUE_TUPLE, .n_elems = n_elems, .role = EG_ROLE_NODE, .def = node};
  v->elems = eg_arena_array(g->arena, (size_t)n_elems, sizeof(int32_t));
  for (int e = 0; e < n_elems; e++) v->elems[e] = present[e] ? tg_tensor(g, node) : -1;
  n->output = t;
  return t;
}

static int32_t getitem(eg_graph *g, const char *name, int32_t tuple, int index) {
  eg_node *n = eg_test_graph_node(g, name, EG_OP_getitem, 2);
  n->args[0] = (eg_arg){.kind = EG_ARG_VALUE, .value = tuple};
  n->args[1] = (eg_arg){.kind = EG_ARG_INT, .i = index};
  n->output = g->values[tuple].elems[index] >= 0 ? tg_tensor(g, g->n_nodes - 1) : -1;
  return n->output;
}

static int32_t node_at(const eg_graph *g, const char *name) {
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (strcmp(g->nodes[i].name, name) == 0) return i;
  fprintf(stderr, "no node %s\n", name);
  return 0;
}

/* ---- an independent checker of a partitioning ---- */

/* Edges u -> v of the graph (v uses a value u defines), from the args. */
static int graph_edges(const eg_graph *g, int32_t *from, int32_t *to, int cap) {
  int n = 0;
  for (int32_t v = 0; v < g->n_nodes; v++)
    for (int32_t a = 0; a < g->nodes[v].n_args; a++) {
      const eg_arg *arg = &g->nodes[v].args[a];
      if (arg->kind != EG_ARG_VALUE || g->values[arg->value].role != EG_ROLE_NODE) continue;
      if (n < cap) {
        from[n] = g->values[arg->value].def;
        to[n] = v;
      }
      n++;
    }
  return n;
}

/* Vertex of node i in the partition graph: its partition (merging `pa` into `pb`), or a
 * vertex of its own for a CPU node. */
static int vertex(const eg_partitioning *p, int32_t i, int32_t pa, int32_t pb) {
  int32_t k = p->nodes[i].partition;
  if (k < 0) return p->n_partitions + i;
  return k == pa ? pb : k;
}

/* Is the graph of partitions and CPU nodes acyclic (Kahn), with partition pa merged into pb? */
static bool condensed_acyclic(const eg_graph *g, const eg_partitioning *p, int32_t pa,
                              int32_t pb) {
  static int32_t from[4096], to[4096], indeg[4096], queue[4096];
  static bool adj[600][600];
  int n_edges = graph_edges(g, from, to, 4096);
  int nv = p->n_partitions + g->n_nodes;
  if (n_edges > 4096 || nv > 600) return false;
  memset(indeg, 0, sizeof indeg);
  for (int a = 0; a < nv; a++) memset(adj[a], 0, (size_t)nv);
  for (int k = 0; k < n_edges; k++) {
    int a = vertex(p, from[k], pa, pb), b = vertex(p, to[k], pa, pb);
    if (a != b && !adj[a][b]) {
      adj[a][b] = true;
      indeg[b]++;
    }
  }
  int head = 0, tail = 0, present = 0;
  bool used[600] = {false};
  for (int32_t i = 0; i < g->n_nodes; i++) used[vertex(p, i, pa, pb)] = true;
  for (int a = 0; a < nv; a++) {
    present += used[a];
    if (used[a] && indeg[a] == 0) queue[tail++] = a;
  }
  while (head < tail) {
    int a = queue[head++];
    for (int b = 0; b < nv; b++)
      if (adj[a][b] && --indeg[b] == 0) queue[tail++] = b;
  }
  return tail == present;
}

static int32_t uf_find(int32_t *parent, int32_t x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

/* Every documented invariant of a result; returns the number of violations. */
static int check_invariants(const eg_graph *g, const eg_partitioning *p) {
  int bad = 0;
  static int32_t from[4096], to[4096], parent[MAX_NODES], seen[MAX_NODES];
  int n_edges = graph_edges(g, from, to, 4096);
  EG_CHECK(p->n_nodes == g->n_nodes);
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node_placement *pl = &p->nodes[i];
    bool ok = pl->npu ? (pl->partition >= 0 && pl->partition < p->n_partitions && !pl->reason)
                      : (pl->partition == -1 && pl->reason && pl->reason[0]);
    EG_CHECK_MSG(ok, "node %s placement inconsistent", g->nodes[i].name);
    bad += !ok;
    seen[i] = 0;
  }
  for (int32_t k = 0; k < p->n_partitions; k++) {
    const eg_partition *part = &p->partitions[k];
    EG_CHECK(part->n_nodes > 0);
    for (int32_t j = 0; j < part->n_nodes; j++) {
      int32_t i = part->nodes[j];
      bool ok = p->nodes[i].partition == k && (j == 0 || part->nodes[j - 1] < i);
      EG_CHECK_MSG(ok, "partition %d lists node %d wrongly", k, i);
      bad += !ok;
      seen[i]++;
    }
    /* numbered by first node */
    if (k > 0) EG_CHECK(p->partitions[k - 1].nodes[0] < part->nodes[0]);
  }
  for (int32_t i = 0; i < g->n_nodes; i++) {
    EG_CHECK(seen[i] == (p->nodes[i].npu ? 1 : 0));
    bad += seen[i] != (p->nodes[i].npu ? 1 : 0);
    parent[i] = i;
  }
  /* connected: one weak component per partition along intra-partition edges */
  for (int k = 0; k < n_edges; k++)
    if (p->nodes[from[k]].npu && p->nodes[from[k]].partition == p->nodes[to[k]].partition)
      parent[uf_find(parent, from[k])] = uf_find(parent, to[k]);
  for (int32_t k = 0; k < p->n_partitions; k++) {
    const eg_partition *part = &p->partitions[k];
    for (int32_t j = 1; j < part->n_nodes; j++) {
      bool ok = uf_find(parent, part->nodes[j]) == uf_find(parent, part->nodes[0]);
      EG_CHECK_MSG(ok, "partition %d not connected", k);
      bad += !ok;
    }
  }
  bool acyclic = condensed_acyclic(g, p, -1, -1);
  EG_CHECK_MSG(acyclic, "the partition graph has a cycle");
  bad += !acyclic;
  /* maximal: merging the partitions of any NPU -> NPU edge would make a cycle */
  for (int k = 0; k < n_edges; k++) {
    int32_t pa = p->nodes[from[k]].partition, pb = p->nodes[to[k]].partition;
    if (pa < 0 || pb < 0 || pa == pb) continue;
    bool cyclic = !condensed_acyclic(g, p, pa, pb);
    EG_CHECK_MSG(cyclic, "partitions %d and %d (edge %s -> %s) could merge", pa, pb,
                 g->nodes[from[k]].name, g->nodes[to[k]].name);
    bad += !cyclic;
  }
  /* getitem follows its producer */
  for (int32_t i = 0; i < g->n_nodes; i++) {
    if (g->nodes[i].op != EG_OP_getitem) continue;
    int32_t prod = g->values[g->nodes[i].args[0].value].def;
    bool ok = p->nodes[i].npu == p->nodes[prod].npu &&
              p->nodes[i].partition == p->nodes[prod].partition;
    EG_CHECK_MSG(ok, "getitem %s does not follow %s", g->nodes[i].name, g->nodes[prod].name);
    bad += !ok;
  }
  return bad;
}

/* ---- running the partitioner ---- */

static eg_partition_options fake_options(const char *soc) {
  return (eg_partition_options){.target = eg_target_find(soc), .backend = eg_test_backend(fake_table())};
}

static bool place(const eg_graph *g, const eg_partition_options *opt, eg_partitioning *p) {
  eg_status s = eg_partition_graph(g, opt, p);
  EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
  if (s != EG_OK) return false;
  check_invariants(g, p);
  return true;
}

static const char *reason_of(const eg_graph *g, const eg_partitioning *p, const char *name) {
  const char *r = p->nodes[node_at(g, name)].reason;
  return r ? r : "(npu)";
}

static int32_t part_of(const eg_graph *g, const eg_partitioning *p, const char *name) {
  return p->nodes[node_at(g, name)].partition;
}

#define CHECK_REASON(g, p, name, want)                                                      \
  EG_CHECK_MSG(strcmp(reason_of(g, p, name), want) == 0, "%s: reason '%s', want '%s'", name, \
               reason_of(g, p, name), want)

/* ---- grouping ---- */

static void test_chain_is_one_partition(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  int32_t a = op(g, "a", EG_OP_relu, 1, 0);
  int32_t b = op(g, "b", EG_OP_add_Tensor, 2, a, 0);
  op(g, "c", EG_OP_relu, 1, b);
  eg_partition_options opt = fake_options("SM8650");
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    EG_CHECK(p.n_partitions == 1 && p.partitions[0].n_nodes == 3);
    EG_CHECK(part_of(g, &p, "a") == 0 && part_of(g, &p, "c") == 0);
    EG_CHECK(p.n_warnings == 0);
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

static void test_cpu_node_splits_chain(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  int32_t a = op(g, "a", EG_OP_relu, 1, 0);
  int32_t n = op(g, "n", EG_OP_neg, 1, a);
  op(g, "c", EG_OP_relu, 1, n);
  eg_partition_options opt = fake_options("SM8650");
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    EG_CHECK(p.n_partitions == 2);
    EG_CHECK(part_of(g, &p, "a") == 0 && part_of(g, &p, "n") == -1 && part_of(g, &p, "c") == 1);
    CHECK_REASON(g, &p, "n", "no NPU lowering for aten.neg");
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

/*      a ----> c            a, c, d on the NPU; b on the CPU. {a, c} is one partition, but d
 *      |        \           cannot join it: {a, c, d} -> b -> {a, c, d} would be a cycle.
 *      +-> b --> d                                                                        */
static void test_diamond_cpu_node_forbids_merge(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  int32_t a = op(g, "a", EG_OP_relu, 1, 0);
  int32_t b = op(g, "b", EG_OP_neg, 1, a);
  int32_t c = op(g, "c", EG_OP_relu, 1, a);
  op(g, "d", EG_OP_add_Tensor, 2, b, c);
  eg_partition_options opt = fake_options("SM8650");
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    EG_CHECK(p.n_partitions == 2);
    EG_CHECK(part_of(g, &p, "a") == 0 && part_of(g, &p, "c") == 0);
    EG_CHECK(part_of(g, &p, "b") == -1 && part_of(g, &p, "d") == 1);
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

/* The same diamond with a direct edge a -> d and b on the CPU: {a} and {d} stay apart. */
static void test_diamond_direct_edge(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  int32_t a = op(g, "a", EG_OP_relu, 1, 0);
  int32_t b = op(g, "b", EG_OP_neg, 1, a);
  op(g, "d", EG_OP_add_Tensor, 2, a, b);
  eg_partition_options opt = fake_options("SM8650");
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    EG_CHECK(p.n_partitions == 2);
    EG_CHECK(part_of(g, &p, "a") == 0 && part_of(g, &p, "d") == 1);
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
  /* all on the NPU: one partition */
  g = tg_create(EG_DTYPE_FLOAT32);
  a = op(g, "a", EG_OP_relu, 1, 0);
  b = op(g, "b", EG_OP_relu, 1, a);
  op(g, "d", EG_OP_add_Tensor, 2, a, b);
  if (place(g, &opt, &p)) EG_CHECK(p.n_partitions == 1 && p.partitions[0].n_nodes == 3);
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

/* Two NPU nodes that only share a graph input are not connected: two partitions. */
static void test_unconnected_nodes_stay_apart(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  op(g, "a", EG_OP_relu, 1, 0);
  op(g, "b", EG_OP_relu, 1, 0);
  eg_partition_options opt = fake_options("SM8650");
  eg_partitioning p;
  if (place(g, &opt, &p)) EG_CHECK(p.n_partitions == 2);
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

/* A cycle only visible when a partition is treated as one unit: G = {p, q, r} is entered at p
 * (from a, through the CPU node c1) and left from q (to b, through c2), though p cannot reach q
 * inside G. Merging a and b (edge a -> b) would give {a,b} -> c1 -> G -> c2 -> {a,b}.
 *
 *   x -> a -> c1 -> p -> r <- q <- x        a, p, q, r, b: NPU; c1, c2: CPU
 *        |                   q -> c2 -> b
 *        +-----------------------------> b                                       */
static void test_cycle_through_partition(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  int32_t a = op(g, "a", EG_OP_relu, 1, 0);
  int32_t c1 = op(g, "c1", EG_OP_neg, 1, a);
  int32_t pp = op(g, "p", EG_OP_relu, 1, c1);
  int32_t q = op(g, "q", EG_OP_relu, 1, 0);
  op(g, "r", EG_OP_add_Tensor, 2, pp, q);
  int32_t c2 = op(g, "c2", EG_OP_neg, 1, q);
  op(g, "b", EG_OP_add_Tensor, 2, a, c2);
  eg_partition_options opt = fake_options("SM8650");
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    EG_CHECK(p.n_partitions == 3);
    EG_CHECK(part_of(g, &p, "a") == 0 && part_of(g, &p, "p") == 1 && part_of(g, &p, "q") == 1 &&
             part_of(g, &p, "r") == 1 && part_of(g, &p, "b") == 2);
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

/* ---- getitem ---- */

static void test_getitem_follows_producer(void) {
  const bool present[3] = {true, false, true};
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  int32_t t = tuple_op(g, "cb", EG_OP_convolution_backward, 0, 3, present);
  int32_t e0 = getitem(g, "g0", t, 0);
  getitem(g, "g1", t, 1); /* a None element: defines nothing */
  int32_t e2 = getitem(g, "g2", t, 2);
  op(g, "use0", EG_OP_relu, 1, e0);
  op(g, "use2", EG_OP_neg, 1, e2);
  eg_partition_options opt = fake_options("SM8650");
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    EG_CHECK(p.n_partitions == 1 && p.partitions[0].n_nodes == 5);
    EG_CHECK(part_of(g, &p, "g0") == 0 && part_of(g, &p, "g1") == 0 && part_of(g, &p, "g2") == 0);
    EG_CHECK(part_of(g, &p, "use2") == -1);
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
  /* producer on the CPU: its getitems too, even when their consumers are NPU nodes */
  g = tg_create(EG_DTYPE_FLOAT32);
  t = tuple_op(g, "decline_cb", EG_OP_convolution_backward, 0, 3, present);
  e0 = getitem(g, "g0", t, 0);
  op(g, "use0", EG_OP_relu, 1, e0);
  if (place(g, &opt, &p)) {
    CHECK_REASON(g, &p, "decline_cb", "test: decline_cb declined");
    CHECK_REASON(g, &p, "g0", "follows its producer");
    EG_CHECK(p.n_partitions == 1 && part_of(g, &p, "use0") == 0);
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

/* ---- skip lists ---- */

static eg_graph *skip_graph(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  int32_t a = op(g, "a", EG_OP_relu, 1, 0);
  int32_t b = op(g, "b", EG_OP_add_Tensor, 2, a, a);
  int32_t c = op(g, "c", EG_OP_relu, 1, b);
  const bool present[2] = {true, true};
  int32_t t = tuple_op(g, "cb", EG_OP_convolution_backward, c, 2, present);
  getitem(g, "g0", t, 0);
  return g;
}

static void test_skip_lists(void) {
  eg_graph *g = skip_graph();
  struct {
    const char *skip_op, *skip_node;
    const char *node, *reason; /* expected on that node */
  } cases[] = {
      {"aten.relu", NULL, "a", "skipped by --skip-op aten.relu"},
      {"aten.relu.default", NULL, "c", "skipped by --skip-op aten.relu.default"},
      {"aten.add", NULL, "b", "skipped by --skip-op aten.add"},
      {"aten.add.Tensor", NULL, "b", "skipped by --skip-op aten.add.Tensor"},
      {NULL, "b", "b", "skipped by --skip-node b"},
      {NULL, "cb", "g0", "follows its producer"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    eg_partition_options opt = fake_options("SM8650");
    opt.skip_ops = &cases[k].skip_op;
    opt.n_skip_ops = cases[k].skip_op != NULL;
    opt.skip_nodes = &cases[k].skip_node;
    opt.n_skip_nodes = cases[k].skip_node != NULL;
    eg_partitioning p;
    if (place(g, &opt, &p)) {
      CHECK_REASON(g, &p, cases[k].node, cases[k].reason);
      EG_CHECK_MSG(p.n_warnings == 0, "case %zu: %s", k, p.n_warnings ? p.warnings[0] : "");
    }
    eg_partitioning_free(&p);
  }
  /* relu skipped: a and c on the CPU split b off from cb */
  const char *relu = "aten.relu";
  eg_partition_options opt = fake_options("SM8650");
  opt.skip_ops = &relu;
  opt.n_skip_ops = 1;
  eg_partitioning p;
  if (place(g, &opt, &p))
    EG_CHECK(p.n_partitions == 2 && part_of(g, &p, "b") == 0 && part_of(g, &p, "cb") == 1);
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

static void test_skip_names_matching_nothing_warn(void) {
  eg_graph *g = skip_graph();
  const char *ops[] = {"aten.nosuch", "aten", "aten.relu.default.x", "getitem", "aten.relu"};
  const char *nodes[] = {"nosuch", "g0", "a"};
  eg_partition_options opt = fake_options("SM8650");
  opt.skip_ops = ops;
  opt.n_skip_ops = 5;
  opt.skip_nodes = nodes;
  opt.n_skip_nodes = 3;
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    const char *want[] = {
        "--skip-op aten.nosuch: no node has this op (give a target like "
        "aten.convolution_backward; `edgegrad info` lists them)",
        "--skip-op aten: no node has this op (give a target like aten.convolution_backward; "
        "`edgegrad info` lists them)",
        "--skip-op aten.relu.default.x: no node has this op (give a target like "
        "aten.convolution_backward; `edgegrad info` lists them)",
        "--skip-op getitem: a getitem takes its producer's placement: skip the producer instead",
        "--skip-node nosuch: no node has this name",
        "--skip-node g0: a getitem takes its producer's placement: skip the producer instead",
    };
    EG_CHECK(p.n_warnings == 6);
    for (int k = 0; k < 6 && k < p.n_warnings; k++)
      EG_CHECK_MSG(strcmp(p.warnings[k], want[k]) == 0, "warning %d: '%s'", k, p.warnings[k]);
    /* the first matching skip names the reason; the skip-op comes before the skip-node */
    CHECK_REASON(g, &p, "a", "skipped by --skip-op aten.relu");
    EG_CHECK(p.nodes[node_at(g, "g0")].npu);
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

/* ---- arch and float gates ---- */

static void test_float_gate(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  int32_t a = op(g, "a", EG_OP_relu, 1, 0);
  op(g, "b", EG_OP_neg, 1, a);
  struct {
    const char *soc, *reason;
  } cases[] = {
      {"SM8350", "float ops need HTP V69+ with fp16; SM8350 is V68"},
      {"SM8635", "float ops need HTP V69+ with fp16; SM8635 is V73 without fp16 (QNN rejects "
                 "fp16 on this V73 part)"},
      {"SM7675", "float ops need HTP V69+ with fp16; SM7675 is V73 without fp16 (QNN rejects "
                 "fp16 on this V73 part)"},
      {"SM8450", NULL},
      {"SM8550", NULL},
      {"SM8850", NULL},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    eg_partition_options opt = fake_options(cases[k].soc);
    eg_partitioning p;
    offered = 0;
    if (place(g, &opt, &p)) {
      CHECK_REASON(g, &p, "a", cases[k].reason ? cases[k].reason : "(npu)");
      /* the op gate comes first: no lowering beats the float gate */
      CHECK_REASON(g, &p, "b", "no NPU lowering for aten.neg");
      /* the builder is never offered a node its target cannot run */
      EG_CHECK_MSG(offered == (cases[k].reason ? 0 : 1), "%s: offered %d", cases[k].soc, offered);
    }
    eg_partitioning_free(&p);
  }
  eg_graph_destroy(g);
  /* integer tensors need no float path: on the NPU even on V68 */
  g = tg_create(EG_DTYPE_INT32);
  op(g, "a", EG_OP_relu, 1, 0);
  eg_partition_options opt = fake_options("SM8350");
  eg_partitioning p;
  if (place(g, &opt, &p)) EG_CHECK(p.nodes[0].npu && p.n_partitions == 1);
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

static void test_min_arch_gate(void) {
  eg_graph *g = tg_create(EG_DTYPE_INT32);
  op(g, "m", EG_OP_mul_Tensor, 2, 0, 0);
  struct {
    const char *soc, *reason;
  } cases[] = {
      {"SM8350", "aten.mul.Tensor needs HTP V75+; SM8350 is V68"},
      {"SM8550", "aten.mul.Tensor needs HTP V75+; SM8550 is V73"},
      {"SM8650", NULL},
      {"SM8750", NULL},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    eg_partition_options opt = fake_options(cases[k].soc);
    eg_partitioning p;
    if (place(g, &opt, &p)) CHECK_REASON(g, &p, "m", cases[k].reason ? cases[k].reason : "(npu)");
    eg_partitioning_free(&p);
  }
  eg_graph_destroy(g);
  /* float and below the op's arch: the float reason comes first */
  g = tg_create(EG_DTYPE_FLOAT32);
  op(g, "m", EG_OP_mul_Tensor, 2, 0, 0);
  eg_partition_options opt = fake_options("SM8350");
  eg_partitioning p;
  if (place(g, &opt, &p))
    CHECK_REASON(g, &p, "m", "float ops need HTP V69+ with fp16; SM8350 is V68");
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

static void test_builder_declines(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  int32_t a = op(g, "decline_a", EG_OP_relu, 1, 0);
  op(g, "mute_b", EG_OP_add_Tensor, 2, a, a);
  eg_partition_options opt = fake_options("SM8650");
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    CHECK_REASON(g, &p, "decline_a", "test: decline_a declined");
    CHECK_REASON(g, &p, "mute_b", "the NPU lowering of aten.add.Tensor declined this node");
    EG_CHECK(p.n_partitions == 0);
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

static void test_bad_arguments(void) {
  eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
  eg_partitioning p;
  eg_partition_options opt = {0};
  EG_CHECK(eg_partition_graph(g, &opt, &p) == EG_ERR_ARGUMENT && p.arena == NULL);
  opt = fake_options("SM8650");
  opt.n_skip_ops = 2;
  EG_CHECK(eg_partition_graph(g, &opt, &p) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_partition_graph(NULL, &opt, &p) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_partition_graph(g, &opt, NULL) == EG_ERR_ARGUMENT);
  opt.n_skip_ops = 0;
  EG_CHECK(eg_partition_graph(g, &opt, &p) == EG_OK && p.n_nodes == 0 && p.n_partitions == 0);
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

/* ---- random DAGs against the checker ---- */

static unsigned rnd(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static void test_random_dags(void) {
  int bad = 0, parts = 0;
  for (unsigned seed = 1; seed <= 300 && bad == 0; seed++) {
    unsigned s = seed;
    eg_graph *g = tg_create(EG_DTYPE_FLOAT32);
    int n = 4 + (int)(rnd(&s) % 40);
    int32_t outs[MAX_NODES];
    int n_outs = 0;
    outs[n_outs++] = 0;
    for (int i = 0; i < n; i++) {
      char name[32];
      unsigned kind = rnd(&s) % 10;
      int32_t x = outs[rnd(&s) % (unsigned)n_outs], y = outs[rnd(&s) % (unsigned)n_outs];
      /* prefer recent values so chains and diamonds form */
      if (rnd(&s) % 2) x = outs[n_outs - 1 - (int)(rnd(&s) % (unsigned)(n_outs < 3 ? n_outs : 3))];
      snprintf(name, sizeof name, "n%d", i);
      if (kind < 3) outs[n_outs++] = op(g, name, EG_OP_neg, 1, x);             /* CPU */
      else if (kind < 6) outs[n_outs++] = op(g, name, EG_OP_relu, 1, x);      /* NPU */
      else if (kind < 9) outs[n_outs++] = op(g, name, EG_OP_add_Tensor, 2, x, y); /* NPU */
      else {
        const bool present[2] = {true, true};
        int32_t t = tuple_op(g, name, EG_OP_convolution_backward, x, 2, present);
        snprintf(name, sizeof name, "n%d_0", i);
        outs[n_outs++] = getitem(g, name, t, 0);
        snprintf(name, sizeof name, "n%d_1", i);
        outs[n_outs++] = getitem(g, name, t, 1);
      }
    }
    eg_partition_options opt = fake_options("SM8650");
    eg_partitioning p;
    if (eg_partition_graph(g, &opt, &p) == EG_OK) {
      bad += check_invariants(g, &p);
      parts += p.n_partitions;
      if (bad) fprintf(stderr, "random DAG seed %u failed\n", seed);
    } else {
      bad++;
    }
    eg_partitioning_free(&p);
    eg_graph_destroy(g);
  }
  EG_CHECK(bad == 0);
  EG_CHECK(parts > 300); /* the graphs did exercise grouping */
}

/* ---- the real table and the fixture ---- */

/* The fixture with an empty builder table: every node on the CPU, reasons exact. */
static void test_fixture_no_builders(void) {
  eg_graph *g = NULL;
  EG_CHECK_MSG(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &g) == EG_OK, "%s",
               eg_last_error());
  if (!g) return;
  static const eg_htp_builder *empty[EG_OP_COUNT];
  const char *socs[] = {"SM8350", "SM8450", "SM8635", "SM8650", "SM8850"};
  for (int k = 0; k < 5; k++) {
    eg_partition_options opt = {.target = eg_target_find(socs[k]), .backend = eg_test_backend(empty)};
    eg_partitioning p;
    if (!place(g, &opt, &p)) continue;
    EG_CHECK(p.n_partitions == 0);
    for (int32_t i = 0; i < g->n_nodes; i++) {
      char want[200], name[160];
      if (g->nodes[i].op == EG_OP_getitem)
        snprintf(want, sizeof want, "follows its producer");
      else
        snprintf(want, sizeof want, "no NPU lowering for %s",
                 eg_op_display_name(g->nodes[i].op, name, sizeof name));
      EG_CHECK_MSG(!p.nodes[i].npu && strcmp(p.nodes[i].reason, want) == 0, "%s: %s",
                   g->nodes[i].name, p.nodes[i].reason);
    }
    CHECK_REASON(g, &p, "sum_1", "no NPU lowering for aten.sum.dim_IntList");
    eg_partitioning_free(&p);
  }
  eg_graph_destroy(g);
}

/* The fixture with the real table on SM8350 (V68): nothing on the NPU; every node with a
 * builder gives the float-gate reason, the rest "no NPU lowering". */
static void test_fixture_real_table_v68(void) {
  eg_graph *g = NULL;
  EG_CHECK(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &g) == EG_OK);
  if (!g) return;
  eg_partition_options opt = {.target = eg_target_find("SM8350")};
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    EG_CHECK(p.n_partitions == 0);
    for (int32_t i = 0; i < g->n_nodes; i++) {
      const eg_node *n = &g->nodes[i];
      if (n->op == EG_OP_getitem || !eg_htp_builders[n->op]) continue;
      EG_CHECK_MSG(strcmp(p.nodes[i].reason, "float ops need HTP V69+ with fp16; SM8350 is V68") == 0,
                   "%s: %s", n->name, p.nodes[i].reason);
    }
    eg_partitioning_free(&p);
  }
  eg_graph_destroy(g);
}

/* The fixture with every op but the losses pretended NPU-capable: invariants hold. */
static void test_fixture_with_fake_support(void) {
  eg_graph *g = NULL;
  EG_CHECK(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &g) == EG_OK);
  if (!g) return;
  static const eg_htp_builder *table[EG_OP_COUNT];
  for (int i = 0; i < EG_OP_COUNT; i++) table[i] = &fake_any;
  table[EG_OP_nll_loss_forward] = table[EG_OP_nll_loss_backward] = NULL;
  eg_partition_options opt = {.target = eg_target_find("SM8650"), .backend = eg_test_backend(table)};
  eg_partitioning p;
  if (place(g, &opt, &p)) {
    int cpu = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) cpu += !p.nodes[i].npu;
    EG_CHECK(cpu == 4); /* the two losses and nll_loss_forward's two getitems */
    EG_CHECK(p.n_partitions >= 2);
  }
  eg_partitioning_free(&p);
  eg_graph_destroy(g);
}

/* ---- the public API ---- */

/* The report lists the compiled graph's nodes: `model` through the pass pipeline, placed with
 * `opt` (program.h's eg_program_place, which the report is built on). Checks every node of the
 * report against it (name, target, placement, partition, reason, source) and returns the
 * compiled graph's node count (-1 if it could not be compiled). */
static int check_report_is_compiled_graph(const eg_compile_report *r, const char *model,
                                          const eg_partition_options *opt) {
  eg_graph *g = NULL, *cg = NULL;
  eg_partitioning parts;
  EG_CHECK(eg_graph_load_json(model, &g) == EG_OK);
  const bool ok = g && eg_program_place(g, opt, NULL, NULL, &cg, &parts) == EG_OK;
  EG_CHECK_MSG(ok, "%s", eg_last_error());
  eg_graph_destroy(g);
  if (!ok) return -1;
  const int n = cg->n_nodes;
  EG_CHECK_MSG(eg_compile_report_num_nodes(r) == n, "report %d nodes, compiled graph %d",
               eg_compile_report_num_nodes(r), n);
  EG_CHECK(eg_compile_report_num_partitions(r) == parts.n_partitions);
  for (int i = 0; i < n && i < eg_compile_report_num_nodes(r); i++) {
    const eg_node *cn = &cg->nodes[i];
    const eg_node_placement *pl = &parts.nodes[i];
    eg_placement_info pi;
    EG_CHECK(eg_compile_report_node(r, i, &pi) == EG_OK);
    EG_CHECK_MSG(strcmp(pi.name, cn->name) == 0 && strcmp(pi.target, eg_op_target(cn->op)) == 0,
                 "report node %d is %s (%s), compiled graph's %s", i, pi.name, pi.target,
                 cn->name);
    EG_CHECK_MSG((pi.placement == EG_PLACEMENT_NPU) == pl->npu && pi.partition == pl->partition,
                 "%s: placement", cn->name);
    EG_CHECK_MSG(pl->npu ? pi.reason == NULL : strcmp(pi.reason, pl->reason) == 0,
                 "%s: reason %s", cn->name, pi.reason ? pi.reason : "(none)");
    EG_CHECK_MSG(cn->source ? pi.source && strcmp(pi.source, cn->source) == 0 : !pi.source,
                 "%s: source %s", cn->name, pi.source ? pi.source : "(none)");
  }
  eg_partitioning_free(&parts);
  eg_graph_destroy(cg);
  return n;
}

static void test_public_api(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK);
  if (!m) return;
  eg_compile_report *r = (eg_compile_report *)1;
  eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = "SM9999");
  EG_CHECK(eg_compile_report_create(m, &opt, &r) == EG_ERR_ARGUMENT && r == NULL);
  EG_CHECK(strstr(eg_last_error(), "choose one of SM8350, SM8450") != NULL);

  const char *skip_nodes[] = {"relu", "nosuch"};
  /* SM8350 (V68, no float path): nothing is placed on the NPU whatever builders exist */
  opt = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "sm8350", .skip_nodes = skip_nodes,
                                               .num_skip_nodes = 2);
  EG_CHECK(eg_compile_report_create(m, &opt, &r) == EG_OK && r != NULL);
  eg_model_destroy(m); /* the report does not refer to the model */
  if (!r) return;
  eg_target_info t;
  eg_compile_report_target(r, &t);
  EG_CHECK(strcmp(t.soc, "SM8350") == 0 && t.htp_arch == 68 && !t.has_float);
  const eg_partition_options popt = {.target = eg_target_find("SM8350"),
                                     .skip_nodes = skip_nodes, .n_skip_nodes = 2};
  const int n = check_report_is_compiled_graph(r, EG_TEST_DATA "/tiny_step.json", &popt);
  EG_CHECK(n > 0);
  EG_CHECK(eg_compile_report_num_partitions(r) == 0);
  eg_placement_info pi;
  EG_CHECK(eg_compile_report_node(r, 0, &pi) == EG_OK && strcmp(pi.name, "convolution") == 0 &&
           strcmp(pi.target, "aten.convolution.default") == 0 &&
           pi.placement == EG_PLACEMENT_CPU && pi.partition == -1 &&
           (strcmp(pi.reason, "no NPU lowering for aten.convolution") == 0 ||
            strcmp(pi.reason, "float ops need HTP V69+ with fp16; SM8350 is V68") == 0));
  /* the fixture's first conv: x [2, 1, 12, 12], w [4, 1, 3, 3], stride 2, padding 1 ->
   * [2, 4, 6, 6]: 2 FLOPs per multiply-add, 1 * 3 * 3 of them per output */
  EG_CHECK_MSG(pi.flops == 2.0 * (2 * 4 * 6 * 6) * (1 * 3 * 3), "conv: %.0f FLOPs", pi.flops);
  double total = -1, npu = -1, sum = 0;
  for (int i = 0; i < n; i++)
    if (eg_compile_report_node(r, i, &pi) == EG_OK) sum += pi.flops;
  eg_compile_report_flops(r, &total, &npu);
  EG_CHECK_MSG(total == sum && total > 0 && npu == 0, "total %.0f (nodes: %.0f), npu %.0f", total,
               sum, npu);
  eg_compile_report_flops(r, NULL, NULL);
  eg_compile_report_flops(NULL, &total, &npu);
  EG_CHECK(total == 0 && npu == 0);
  EG_CHECK(eg_compile_report_node(r, n, &pi) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_compile_report_node(r, -1, &pi) == EG_ERR_ARGUMENT);
  int count;
  const int32_t *nodes;
  EG_CHECK(eg_compile_report_partition(r, 0, &count, &nodes) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_compile_report_num_warnings(r) == 1);
  EG_CHECK(strcmp(eg_compile_report_warning(r, 0),
                  "--skip-node nosuch: no node has this name") == 0);
  EG_CHECK(eg_compile_report_warning(r, 1) == NULL);

  char path[64];
  snprintf(path, sizeof path, "test_partition_report_%ld.json", (long)getpid());
  EG_CHECK(eg_compile_report_write_json(r, path) == EG_OK);
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
  EG_CHECK_MSG(root != NULL, "%s", err.text);
  if (root) {
    EG_CHECK(strcmp(json_string_value(json_object_get(root, "soc")), "SM8350") == 0);
    EG_CHECK(json_integer_value(json_object_get(root, "htp_arch")) == 68);
    json_t *ns = json_object_get(root, "nodes");
    EG_CHECK(n > 0 && json_array_size(ns) == (size_t)n);
    json_t *n0 = json_array_get(ns, 0);
    EG_CHECK(strcmp(json_string_value(json_object_get(n0, "placement")), "cpu") == 0);
    EG_CHECK(json_is_null(json_object_get(n0, "partition")));
    EG_CHECK(json_array_size(json_object_get(root, "partitions")) == 0);
    EG_CHECK(json_array_size(json_object_get(root, "warnings")) == 1);
    json_decref(root);
  }
  remove(path);
  EG_CHECK(eg_compile_report_write_json(r, "/nonexistent-dir/r.json") == EG_ERR_IO);
  eg_compile_report_destroy(r);

  /* --no-fallback: fails, and still hands over the report */
  EG_CHECK(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK);
  opt = (eg_compile_options)EG_COMPILE_OPTIONS(.soc = "SM8350", .no_fallback = 1);
  r = NULL;
  EG_CHECK(eg_compile_report_create(m, &opt, &r) == EG_ERR_UNSUPPORTED && r != NULL);
  char msg[4096], want[96];
  snprintf(msg, sizeof msg, "%s", eg_last_error());
  const eg_partition_options nf = {.target = eg_target_find("SM8350")};
  const int nn = r ? check_report_is_compiled_graph(r, EG_TEST_DATA "/tiny_step.json", &nf) : -1;
  snprintf(want, sizeof want, "compile for SM8350: %d of %d nodes would run on the CPU "
           "(convolution: ", nn, nn);
  EG_CHECK_MSG(nn > 0 && strstr(msg, want) != NULL, "%s", msg);
  eg_compile_report_destroy(r);
  EG_CHECK(eg_compile_report_create(m, NULL, &r) == EG_ERR_ARGUMENT && r == NULL);
  EG_CHECK(eg_compile_report_create(m, &opt, NULL) == EG_ERR_ARGUMENT);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_chain_is_one_partition);
  EG_RUN(test_cpu_node_splits_chain);
  EG_RUN(test_diamond_cpu_node_forbids_merge);
  EG_RUN(test_diamond_direct_edge);
  EG_RUN(test_unconnected_nodes_stay_apart);
  EG_RUN(test_cycle_through_partition);
  EG_RUN(test_getitem_follows_producer);
  EG_RUN(test_skip_lists);
  EG_RUN(test_skip_names_matching_nothing_warn);
  EG_RUN(test_float_gate);
  EG_RUN(test_min_arch_gate);
  EG_RUN(test_builder_declines);
  EG_RUN(test_bad_arguments);
  EG_RUN(test_random_dags);
  EG_RUN(test_fixture_no_builders);
  EG_RUN(test_fixture_real_table_v68);
  EG_RUN(test_fixture_with_fake_support);
  EG_RUN(test_public_api);
  return eg_test_summary();
}
