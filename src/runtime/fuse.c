/* fuse.c — the fused chains of a runtime's CPU nodes (fuse.h). */
#include "runtime/fuse.h"

#include <stdlib.h>

#include "util/error.h"

/* Who reads each value: refs[v] counts every reference (a node's argument, a list item, a
 * getitem of v's tuple element, a graph output), reader[v] is the last node that referenced
 * it. A node reading a tuple other than through getitem reads each element. */
typedef struct readers {
  int32_t *refs, *reader;
} readers;

static void count(readers *r, int32_t v, int32_t node) {
  r->refs[v]++;
  r->reader[v] = node;
}

static void count_arg(const eg_graph *g, const eg_node *n, int32_t node, const eg_arg *a,
                      readers *r) {
  if (a->kind == EG_ARG_LIST)
    for (int32_t i = 0; i < a->list.n; i++) count_arg(g, n, node, &a->list.items[i], r);
  if (a->kind != EG_ARG_VALUE) return;
  const eg_value *v = &g->values[a->value];
  if (v->kind != EG_VALUE_TUPLE) {
    count(r, a->value, node);
  } else if (n->op == EG_OP_getitem) {
    const int32_t el = eg_getitem_element(g, n);
    if (el >= 0) count(r, el, node);
  } else {
    for (int32_t e = 0; e < v->n_elems; e++)
      if (v->elems[e] >= 0) count(r, v->elems[e], node);
  }
}

static void count_readers(const eg_graph *g, readers *r) {
  for (int32_t k = 0; k < g->n_nodes; k++) {
    const eg_node *n = &g->nodes[k];
    for (int32_t a = 0; a < n->n_args; a++) count_arg(g, n, k, &n->args[a], r);
    for (int32_t a = 0; a < n->n_kwargs; a++) count_arg(g, n, k, &n->kwargs[a], r);
  }
  for (int32_t o = 0; o < g->n_outputs; o++) {
    const eg_value *v = &g->values[g->outputs[o].value];
    if (v->kind != EG_VALUE_TUPLE) count(r, g->outputs[o].value, -1);
    else
      for (int32_t e = 0; e < v->n_elems; e++)
        if (v->elems[e] >= 0) count(r, v->elems[e], -1);
  }
}

/* Node k runs on the CPU and is in no chain yet. */
static bool free_cpu(const eg_program *p, const eg_fusion *f, int32_t k) {
  return k >= 0 && (!p || !p->parts.nodes[k].npu) && f[k].role == EG_FUSE_NONE;
}

/* The one node reading value v (through exactly one reference), or -1. */
static int32_t sole_reader(const readers *r, int32_t v) {
  return v >= 0 && r->refs[v] == 1 ? r->reader[v] : -1;
}

/* Batch-norm forward b -> getitem(b, 0) -> clamping activation, each value read once. */
static bool find_bn_clamp(const eg_graph *g, const eg_program *p, const readers *r, int32_t b,
                          eg_fusion *f) {
  const eg_node *bn = &g->nodes[b];
  if (!eg_op_is_batch_norm(bn->op) || !free_cpu(p, f, b) || bn->output < 0) return false;
  const eg_value *t = &g->values[bn->output];
  if (t->kind != EG_VALUE_TUPLE || t->n_elems < 1) return false;
  const int32_t get = sole_reader(r, t->elems[0]);
  if (get < 0 || g->nodes[get].op != EG_OP_getitem || !free_cpu(p, f, get)) return false;
  const int32_t act = sole_reader(r, g->nodes[get].output);
  eg_clamp c;
  if (act < 0 || !free_cpu(p, f, act) || !eg_op_clamp_of(g, &g->nodes[act], &c)) return false;
  f[b] = (eg_fusion){.role = EG_FUSE_BN_CLAMP, .with = act, .clamp = c};
  f[act] = (eg_fusion){.role = EG_FUSE_FOLDED, .with = b};
  return true;
}

/* A gradient mask whose result only batch-norm backward b reads, as its grad_out. */
static bool find_bn_bwd_mask(const eg_graph *g, const eg_program *p, const readers *r,
                             int32_t b, eg_fusion *f) {
  const eg_node *bn = &g->nodes[b];
  if (bn->op != EG_OP_native_batch_norm_backward || !free_cpu(p, f, b)) return false;
  const int32_t gy = eg_exec_arg_id(bn, 0, "grad_out");
  if (gy < 0 || sole_reader(r, gy) != b || g->values[gy].role != EG_ROLE_NODE) return false;
  const int32_t m = g->values[gy].def;
  eg_grad_mask mask;
  if (g->nodes[m].output != gy || !free_cpu(p, f, m) ||
      !eg_op_grad_mask_of(g, &g->nodes[m], &mask))
    return false;
  f[b] = (eg_fusion){.role = EG_FUSE_BN_BWD_MASK, .with = m, .mask = mask};
  f[m] = (eg_fusion){.role = EG_FUSE_FOLDED, .with = b};
  return true;
}

eg_status eg_fusions_find(const eg_graph *g, const eg_program *p, eg_fusion **out,
                          int32_t *n_fused) {
  *out = NULL;
  *n_fused = 0;
  const size_t nv = (size_t)g->n_values + 1;
  eg_fusion *f = malloc(((size_t)g->n_nodes + 1) * sizeof *f);
  readers r = {calloc(nv, sizeof(int32_t)), malloc(nv * sizeof(int32_t))};
  if (!f || !r.refs || !r.reader) {
    free(f);
    free(r.refs);
    free(r.reader);
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  }
  for (int32_t k = 0; k < g->n_nodes; k++) f[k] = (eg_fusion){.with = -1};
  count_readers(g, &r);
  for (int32_t k = 0; k < g->n_nodes; k++)
    if (find_bn_clamp(g, p, &r, k, f) || find_bn_bwd_mask(g, p, &r, k, f)) ++*n_fused;
  free(r.refs);
  free(r.reader);
  *out = f;
  return EG_OK;
}
