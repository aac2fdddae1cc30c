/* clone.c — eg_graph_clone (see clone.h): every array and string copied into the new arena. */
#include "ir/clone.h"

#include <stdint.h>
#include <string.h>

#include "util/error.h"

/* Copies `n` elements of `size` bytes into `a` (a one-element array for n == 0, like the
 * loader's, so the pointer is never NULL). */
static void *dup_array(eg_arena *a, const void *src, size_t n, size_t size) {
  void *dst = eg_arena_array(a, n + 1, size);
  if (dst && n) memcpy(dst, src, n * size);
  return dst;
}

static bool clone_arg(eg_arena *a, eg_arg *dst, const eg_arg *src) {
  *dst = *src;
  switch (src->kind) {
  case EG_ARG_LAYOUT:
  case EG_ARG_DEVICE:
  case EG_ARG_MEMORY_FORMAT:
  case EG_ARG_STR: return !src->str || (dst->str = eg_arena_strdup(a, src->str));
  case EG_ARG_LIST:
    dst->list.items = eg_arena_array(a, (size_t)src->list.n + 1, sizeof(eg_arg));
    if (!dst->list.items) return false;
    for (int32_t i = 0; i < src->list.n; i++)
      if (!clone_arg(a, &dst->list.items[i], &src->list.items[i])) return false;
    return true;
  default: return true;
  }
}

static bool clone_args(eg_arena *a, eg_arg **dst, const eg_arg *src, int32_t n) {
  *dst = eg_arena_array(a, (size_t)n + 1, sizeof(eg_arg));
  if (!*dst) return false;
  for (int32_t i = 0; i < n; i++)
    if (!clone_arg(a, &(*dst)[i], &src[i])) return false;
  return true;
}

static bool clone_node(eg_arena *a, eg_node *dst, const eg_node *src) {
  *dst = *src; /* op, output, scratch_bytes, attrs (plain bytes: no pointers) */
  if (!(dst->name = eg_arena_strdup(a, src->name))) return false;
  if (src->source && !(dst->source = eg_arena_strdup(a, src->source))) return false;
  if (src->place_reason && !(dst->place_reason = eg_arena_strdup(a, src->place_reason)))
    return false;
  if (!clone_args(a, &dst->args, src->args, src->n_args)) return false;
  if (!clone_args(a, &dst->kwargs, src->kwargs, src->n_kwargs)) return false;
  dst->kwarg_names = eg_arena_array(a, (size_t)src->n_kwargs + 1, sizeof(char *));
  if (!dst->kwarg_names) return false;
  for (int32_t k = 0; k < src->n_kwargs; k++)
    if (!(dst->kwarg_names[k] = eg_arena_strdup(a, src->kwarg_names[k]))) return false;
  return true;
}

static bool clone_named(eg_arena *a, eg_named **dst, const eg_named *src, int32_t n) {
  if (!(*dst = dup_array(a, src, (size_t)n, sizeof(eg_named)))) return false;
  for (int32_t i = 0; i < n; i++) {
    if (!((*dst)[i].name = eg_arena_strdup(a, src[i].name))) return false;
    if (src[i].state_dict && !((*dst)[i].state_dict = eg_arena_strdup(a, src[i].state_dict)))
      return false;
  }
  return true;
}

static bool clone_static(eg_arena *a, eg_static *dst, const eg_static *src) {
  *dst = *src;
  if (!(dst->name = eg_arena_strdup(a, src->name))) return false;
  void *data = eg_arena_alloc(a, src->nbytes + 64);
  if (!data) return false;
  data = (void *)(((uintptr_t)data + 63) & ~(uintptr_t)63); /* statics are 64-byte aligned */
  if (src->nbytes) memcpy(data, src->data, src->nbytes);
  dst->data = data;
  return true;
}

static bool clone_into(eg_graph *c, const eg_graph *g) {
  eg_arena *a = c->arena;
  c->n_values = g->n_values;
  if (!(c->values = dup_array(a, g->values, (size_t)g->n_values, sizeof(eg_value)))) return false;
  for (int32_t i = 0; i < g->n_values; i++) {
    eg_value *v = &c->values[i];
    if (v->kind == EG_VALUE_TUPLE &&
        !(v->elems = dup_array(a, g->values[i].elems, (size_t)v->n_elems, sizeof(int32_t))))
      return false;
    if (v->quant && !(v->quant = eg_quant_copy(a, v->quant))) return false;
  }
  c->n_nodes = g->n_nodes;
  if (!(c->nodes = eg_arena_array(a, (size_t)g->n_nodes + 1, sizeof(eg_node)))) return false;
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (!clone_node(a, &c->nodes[i], &g->nodes[i])) return false;
  c->n_inputs = g->n_inputs;
  c->n_outputs = g->n_outputs;
  if (!clone_named(a, &c->inputs, g->inputs, g->n_inputs) ||
      !clone_named(a, &c->outputs, g->outputs, g->n_outputs))
    return false;
  c->n_statics = g->n_statics;
  if (!(c->statics = eg_arena_array(a, (size_t)g->n_statics + 1, sizeof(eg_static)))) return false;
  for (int32_t i = 0; i < g->n_statics; i++)
    if (!clone_static(a, &c->statics[i], &g->statics[i])) return false;
  return true;
}

eg_status eg_graph_clone(const eg_graph *g, eg_graph **out) {
  *out = NULL;
  eg_graph *c = eg_graph_create();
  if (!c || !clone_into(c, g)) {
    eg_graph_destroy(c);
    return eg_error(EG_ERR_NOMEM, "graph clone: out of memory (%d values, %d nodes)",
                    g->n_values, g->n_nodes);
  }
  *out = c;
  return EG_OK;
}
