/* fuse.c — the fused chains of a runtime's CPU nodes (fuse.h). */
#include "runtime/fuse.h"

#include <math.h>
#include <stdlib.h>

#include "util/error.h"

/* Who reads each value: value v's refs[v] references (a node's argument, a list item, a
 * getitem of v's tuple element, a graph output) are by[first[v]] .. by[first[v] + refs[v] - 1],
 * each the referencing node (-1: a graph output). A node reading a tuple other than through
 * getitem reads each element. */
typedef struct readers {
  int32_t *refs, *first, *by;
  int32_t n; /* references placed so far (while filling) */
  bool filling;
} readers;

static void note(readers *r, int32_t v, int32_t node) {
  if (!r->filling) {
    r->refs[v]++;
    r->n++;
  } else {
    r->by[r->first[v] + r->refs[v]++] = node;
  }
}

static void note_arg(const eg_graph *g, const eg_node *n, int32_t node, const eg_arg *a,
                     readers *r) {
  if (a->kind == EG_ARG_LIST)
    for (int32_t i = 0; i < a->list.n; i++) note_arg(g, n, node, &a->list.items[i], r);
  if (a->kind != EG_ARG_VALUE) return;
  const eg_value *v = &g->values[a->value];
  if (v->kind != EG_VALUE_TUPLE) {
    note(r, a->value, node);
  } else if (n->op == EG_OP_getitem) {
    const int32_t el = eg_getitem_element(g, n);
    if (el >= 0) note(r, el, node);
  } else {
    for (int32_t e = 0; e < v->n_elems; e++)
      if (v->elems[e] >= 0) note(r, v->elems[e], node);
  }
}

static void note_all(const eg_graph *g, readers *r) {
  for (int32_t k = 0; k < g->n_nodes; k++) {
    const eg_node *n = &g->nodes[k];
    for (int32_t a = 0; a < n->n_args; a++) note_arg(g, n, k, &n->args[a], r);
    for (int32_t a = 0; a < n->n_kwargs; a++) note_arg(g, n, k, &n->kwargs[a], r);
  }
  for (int32_t o = 0; o < g->n_outputs; o++) {
    const eg_value *v = &g->values[g->outputs[o].value];
    if (v->kind != EG_VALUE_TUPLE) note(r, g->outputs[o].value, -1);
    else
      for (int32_t e = 0; e < v->n_elems; e++)
        if (v->elems[e] >= 0) note(r, v->elems[e], -1);
  }
}

/* Counts, then places every reference. */
static eg_status readers_make(const eg_graph *g, readers *r) {
  const size_t nv = (size_t)g->n_values + 1;
  *r = (readers){calloc(nv, sizeof(int32_t)), malloc(nv * sizeof(int32_t)), NULL, 0, false};
  if (r->refs && r->first) {
    note_all(g, r);
    r->by = malloc(((size_t)r->n + 1) * sizeof(int32_t));
  }
  if (!r->refs || !r->first || !r->by)
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  for (int32_t v = 0, at = 0; v < g->n_values; v++) {
    r->first[v] = at;
    at += r->refs[v];
    r->refs[v] = 0;
  }
  r->filling = true;
  note_all(g, r);
  return EG_OK;
}

static void readers_free(readers *r) {
  free(r->refs);
  free(r->first);
  free(r->by);
}

/* What the search knows: the graph, the program, each node's place in the run order, the
 * readers, and the roles given so far. */
typedef struct search {
  const eg_graph *g;
  const eg_program *p;
  int32_t *pos;
  readers r;
  eg_fusion *f;
} search;

/* Node k runs on the CPU and is in no chain yet. */
static bool free_cpu(const search *s, int32_t k) {
  return k >= 0 && (!s->p || !s->p->parts.nodes[k].npu) && s->f[k].role == EG_FUSE_NONE;
}

/* The one node reading value v (through exactly one reference), or -1. */
static int32_t sole_reader(const search *s, int32_t v) {
  return v >= 0 && s->r.refs[v] == 1 ? s->r.by[s->r.first[v]] : -1;
}

/* The value whose bytes v repeats as a CPU copy (view, detach, clone, getitem ...:
 * eg_copy_source), or -1. */
static int32_t copied_from(const search *s, int32_t v) {
  const eg_value *x = &s->g->values[v];
  if (x->role != EG_ROLE_NODE || (s->p && s->p->parts.nodes[x->def].npu)) return -1;
  const int32_t src = eg_copy_source(s->g, &s->g->nodes[x->def]);
  return src == v ? -1 : src;
}

/* hardtanh_backward's mask reads its input x: where a hardtanh with the same bounds lo < hi
 * clamps that x (through copies) into r before the backward runs, the mask reads r instead —
 * x <= lo exactly where r <= lo, x >= hi exactly where r >= hi, NaN where NaN — so x need not
 * be kept for the backward (and a batch norm's output x need not be stored at all). */
static void mask_from_output(const search *s, int32_t bwd, eg_fusion *fm) {
  eg_grad_mask *m = &fm->mask;
  if (s->g->nodes[fm->with].op != EG_OP_hardtanh_backward || !(m->lo < m->hi)) return;
  /* x, then what it copies, and so on: the first read by such a hardtanh */
  for (int32_t x = m->x, hops = 0; x >= 0 && hops < 16; x = copied_from(s, x), hops++)
    for (int32_t i = 0; i < s->r.refs[x]; i++) {
      const int32_t a = s->r.by[s->r.first[x] + i];
      eg_clamp c;
      if (a < 0 || (s->p && s->p->parts.nodes[a].npu) || s->pos[a] > s->pos[bwd] ||
          !eg_op_clamp_of(s->g, &s->g->nodes[a], &c) || c.lo != m->lo || c.hi != m->hi ||
          eg_exec_arg_id(&s->g->nodes[a], 0, "self") != x)
        continue;
      m->x = s->g->nodes[a].output;
      fm->redirected = true;
      return;
    }
}

/* A gradient mask whose result only batch-norm backward b reads, as its grad_out. */
static bool find_bn_bwd_mask(search *s, int32_t b) {
  const eg_graph *g = s->g;
  const eg_node *bn = &g->nodes[b];
  if (bn->op != EG_OP_native_batch_norm_backward || !free_cpu(s, b)) return false;
  const int32_t gy = eg_exec_arg_id(bn, 0, "grad_out");
  if (gy < 0 || sole_reader(s, gy) != b || g->values[gy].role != EG_ROLE_NODE) return false;
  const int32_t m = g->values[gy].def;
  eg_fusion fb = {.role = EG_FUSE_BN_BWD_MASK, .with = m, .add_node = -1, .add = -1};
  if (g->nodes[m].output != gy || !free_cpu(s, m) ||
      !eg_op_grad_mask_of(g, &g->nodes[m], &fb.mask))
    return false;
  mask_from_output(s, b, &fb);
  s->f[b] = fb;
  s->f[m] = (eg_fusion){.role = EG_FUSE_FOLDED, .with = b, .add_node = -1, .add = -1};
  return true;
}

/* Whether nothing reads value v but node `except`, masks that read an activation's output
 * instead (mask_from_output) and CPU copies of v read likewise; v is no graph output. */
static bool read_by_redirected_only(const search *s, int32_t v, int32_t except, int depth) {
  for (int32_t i = 0; i < s->r.refs[v]; i++) {
    const int32_t k = s->r.by[s->r.first[v] + i];
    if (k < 0 || depth > 16) return false;
    if (k == except) continue;
    const eg_fusion *fk = &s->f[k];
    if (fk->role == EG_FUSE_FOLDED && s->f[fk->with].redirected &&
        s->f[fk->with].mask.gy != v)
      continue; /* read as the mask's x, which it reads no more */
    const eg_node *n = &s->g->nodes[k];
    if ((s->p && s->p->parts.nodes[k].npu) || eg_copy_source(s->g, n) != v ||
        !read_by_redirected_only(s, n->output, -1, depth + 1))
      return false;
  }
  return true;
}

/* A clamping activation that alone reads value v, CPU and in no chain: its node, or -1. */
static int32_t sole_clamp(const search *s, int32_t v, eg_clamp *c) {
  const int32_t k = sole_reader(s, v);
  return free_cpu(s, k) && eg_op_clamp_of(s->g, &s->g->nodes[k], c) ? k : -1;
}

/* y + z (add.Tensor, either order), read by a clamping activation alone, where y is the
 * batch norm b's output: the add's node (*act the activation's, *z the other operand), or -1.
 * z must exist when b runs. */
static int32_t residual_of(const search *s, int32_t b, int32_t y, int32_t k, int32_t *z,
                           int32_t *act, eg_clamp *c) {
  int32_t op[2];
  if (!free_cpu(s, k) || !eg_op_add_f32(s->g, &s->g->nodes[k], op) || (op[0] == y) == (op[1] == y))
    return -1;
  *z = op[0] == y ? op[1] : op[0];
  const eg_value *zv = &s->g->values[*z];
  if (zv->role == EG_ROLE_NODE && s->pos[zv->def] >= s->pos[b]) return -1;
  *act = sole_clamp(s, s->g->nodes[k].output, c);
  return *act >= 0 ? k : -1;
}

/* Batch-norm forward b -> getitem(b, 0) -> clamping activation (or -> add -> clamping
 * activation), each value read by the next alone (or also by masks that no longer read it:
 * read_by_redirected_only). */
static bool find_bn_clamp(search *s, int32_t b) {
  const eg_graph *g = s->g;
  const eg_node *bn = &g->nodes[b];
  if (!eg_op_is_batch_norm(bn->op) || !free_cpu(s, b) || bn->output < 0) return false;
  const eg_value *t = &g->values[bn->output];
  if (t->kind != EG_VALUE_TUPLE || t->n_elems < 1) return false;
  const int32_t get = sole_reader(s, t->elems[0]);
  if (get < 0 || g->nodes[get].op != EG_OP_getitem || !free_cpu(s, get)) return false;
  const int32_t y = g->nodes[get].output;
  int32_t act = -1, add = -1, z = -1;
  eg_clamp c;
  for (int32_t i = 0; i < s->r.refs[y] && act < 0; i++) {
    const int32_t k = s->r.by[s->r.first[y] + i];
    if (free_cpu(s, k) && eg_op_clamp_of(g, &g->nodes[k], &c)) act = k;
    else if ((add = residual_of(s, b, y, k, &z, &act, &c)) < 0) act = -1;
  }
  if (act < 0 || !read_by_redirected_only(s, y, add >= 0 ? add : act, 0)) return false;
  s->f[b] = (eg_fusion){.role = EG_FUSE_BN_CLAMP, .with = act, .clamp = c, .add_node = add,
                        .add = z};
  s->f[act] = (eg_fusion){.role = EG_FUSE_FOLDED, .with = b, .add_node = -1, .add = -1};
  if (add >= 0) s->f[add] = (eg_fusion){.role = EG_FUSE_FOLDED, .with = b, .add_node = -1,
                                        .add = -1};
  return true;
}

/* m, of at most x's rank, broadcasts over x (rank 4) as one value per channel (dim 1) or one
 * value. */
static bool per_channel(const eg_value *x, const eg_value *m) {
  if (x->rank != 4 || m->rank > x->rank) return false;
  for (int i = 0; i < m->rank; i++) {
    const int d = x->rank - m->rank + i;
    if (m->shape[i] != 1 && (d != 1 || m->shape[i] != x->shape[1])) return false;
  }
  return true;
}

/* Sum node k of mul(d, d), d = sub(x, m), m per channel, each value read by the next alone. */
static bool find_sum_sq_dev(search *s, int32_t k) {
  const eg_graph *g = s->g;
  if (!free_cpu(s, k) || !eg_op_sum_channels_f32(g, &g->nodes[k])) return false;
  const int32_t sq = eg_exec_arg_id(&g->nodes[k], 0, "self");
  if (sole_reader(s, sq) != k || g->values[sq].role != EG_ROLE_NODE) return false;
  const int32_t mul = g->values[sq].def;
  int32_t d, op[2];
  float alpha;
  if (!free_cpu(s, mul) || g->nodes[mul].output != sq ||
      !eg_op_square_f32(g, &g->nodes[mul], &d) || g->values[d].role != EG_ROLE_NODE ||
      s->r.refs[d] != 2 || s->r.by[s->r.first[d]] != mul || s->r.by[s->r.first[d] + 1] != mul)
    return false;
  const int32_t sub = g->values[d].def;
  if (!free_cpu(s, sub) || g->nodes[sub].output != d ||
      !eg_op_sub_f32(g, &g->nodes[sub], op, &alpha) ||
      !per_channel(&g->values[op[0]], &g->values[op[1]]))
    return false;
  s->f[k] = (eg_fusion){.role = EG_FUSE_SUM_SQ_DEV, .with = mul, .add_node = -1, .add = -1,
                        .dev = {op[0], op[1], alpha, sub}};
  s->f[mul] = s->f[sub] = (eg_fusion){.role = EG_FUSE_FOLDED, .with = k, .add_node = -1,
                                      .add = -1};
  return true;
}

eg_status eg_fusions_find(const eg_graph *g, const eg_program *p, eg_fusion **out,
                          int32_t *n_fused) {
  *out = NULL;
  *n_fused = 0;
  search s = {.g = g, .p = p};
  s.f = malloc(((size_t)g->n_nodes + 1) * sizeof *s.f);
  s.pos = malloc(((size_t)g->n_nodes + 1) * sizeof *s.pos);
  eg_status st = s.f && s.pos ? readers_make(g, &s.r)
                              : eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  if (st == EG_OK) {
    for (int32_t k = 0; k < g->n_nodes; k++) {
      s.f[k] = (eg_fusion){.with = -1, .add_node = -1, .add = -1};
      s.pos[p ? p->order[k] : k] = k;
    }
    /* the backwards first: which masks read an activation's output decides which batch-norm
     * outputs have no reader left but their activation */
    for (int32_t k = 0; k < g->n_nodes; k++) *n_fused += find_bn_bwd_mask(&s, k);
    for (int32_t k = 0; k < g->n_nodes; k++) *n_fused += find_bn_clamp(&s, k);
    for (int32_t k = 0; k < g->n_nodes; k++) *n_fused += find_sum_sq_dev(&s, k);
  }
  readers_free(&s.r);
  free(s.pos);
  if (st != EG_OK) {
    free(s.f);
    return st;
  }
  *out = s.f;
  return EG_OK;
}
