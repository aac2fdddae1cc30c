/* compiler.c — the htp backend's compiler interface (see compiler.h). */
#include "backends/htp/compile/compiler.h"

#include <stdio.h>
#include <stdlib.h>

#include "backends/htp/compile/lower.h"
#include "util/error.h"

static bool is_float(eg_dtype d) {
  return d == EG_DTYPE_FLOAT32 || d == EG_DTYPE_FLOAT16 || d == EG_DTYPE_FLOAT64;
}

static bool arg_has_float(const eg_graph *g, const eg_arg *a) {
  if (a->kind == EG_ARG_LIST) {
    for (int32_t i = 0; i < a->list.n; i++)
      if (arg_has_float(g, &a->list.items[i])) return true;
    return false;
  }
  return a->kind == EG_ARG_VALUE && g->values[a->value].kind == EG_VALUE_TENSOR &&
         is_float(g->values[a->value].dtype);
}

/* Does node `n` read or write a floating-point tensor? */
static bool node_has_float(const eg_graph *g, const eg_node *n) {
  for (int32_t a = 0; a < n->n_args; a++)
    if (arg_has_float(g, &n->args[a])) return true;
  for (int32_t a = 0; a < n->n_kwargs; a++)
    if (arg_has_float(g, &n->kwargs[a])) return true;
  if (n->output < 0) return false;
  const eg_value *v = &g->values[n->output];
  if (v->kind == EG_VALUE_TENSOR) return is_float(v->dtype);
  for (int32_t e = 0; e < v->n_elems; e++)
    if (v->elems[e] >= 0 && is_float(g->values[v->elems[e]].dtype)) return true;
  return false;
}

/* A dim of tensor value `id` beyond QNN's uint32 dims: writes the reason and returns false. */
static bool value_dims_fit(const eg_graph *g, int32_t id, char *reason, size_t size) {
  const eg_value *v = &g->values[id];
  if (v->kind != EG_VALUE_TENSOR) return true;
  for (int d = 0; d < v->rank; d++)
    if (v->shape[d] > (int64_t)UINT32_MAX) {
      snprintf(reason, size, "dimension %lld of %s exceeds QNN's 32-bit dims (at most %u)",
               (long long)v->shape[d], eg_value_label(g, id), UINT32_MAX);
      return false;
    }
  return true;
}

static bool arg_dims_fit(const eg_graph *g, const eg_arg *a, char *reason, size_t size) {
  if (a->kind == EG_ARG_LIST) {
    for (int32_t i = 0; i < a->list.n; i++)
      if (!arg_dims_fit(g, &a->list.items[i], reason, size)) return false;
    return true;
  }
  return a->kind != EG_ARG_VALUE || value_dims_fit(g, a->value, reason, size);
}

bool eg_htp_dims_fit(const eg_graph *g, const eg_node *n, char *reason, size_t size) {
  for (int32_t a = 0; a < n->n_args; a++)
    if (!arg_dims_fit(g, &n->args[a], reason, size)) return false;
  for (int32_t a = 0; a < n->n_kwargs; a++)
    if (!arg_dims_fit(g, &n->kwargs[a], reason, size)) return false;
  if (n->output < 0) return true;
  const eg_value *v = &g->values[n->output];
  if (v->kind == EG_VALUE_TENSOR) return value_dims_fit(g, n->output, reason, size);
  for (int32_t e = 0; e < v->n_elems; e++)
    if (v->elems[e] >= 0 && !value_dims_fit(g, v->elems[e], reason, size)) return false;
  return true;
}

static const eg_htp_builder *builder_of(const eg_backend *b, eg_op op) {
  return ((const eg_htp_builder *const *)b->data)[op];
}

static bool htp_gate(const eg_backend *b, const eg_graph *g, const eg_node *n, const eg_target *t,
                     char *reason, size_t size) {
  const eg_htp_builder *nb = builder_of(b, n->op);
  char op[160];
  eg_op_display_name(n->op, op, sizeof op);
  if (!nb) { /* a */
    snprintf(reason, size, "no NPU lowering for %s", op);
    return false;
  }
  if (node_has_float(g, n) && !(t->features & EG_NPU_FEATURE_FLOAT)) { /* b */
    if (t->htp_arch < 69)
      snprintf(reason, size, "float ops need HTP V69+ with fp16; %s is V%d", t->soc, t->htp_arch);
    else
      snprintf(reason, size, "float ops need HTP V69+ with fp16; %s is V%d without fp16%s%s%s",
               t->soc, t->htp_arch, t->note[0] ? " (" : "", t->note, t->note[0] ? ")" : "");
    return false;
  }
  if (t->htp_arch < nb->min_htp_arch) { /* c */
    snprintf(reason, size, "%s needs HTP V%d+; %s is V%d", op, nb->min_htp_arch, t->soc,
             t->htp_arch);
    return false;
  }
  return eg_htp_dims_fit(g, n, reason, size); /* d */
}

static bool htp_supports(const eg_backend *b, const eg_graph *g, const eg_node *n,
                         const eg_target *t, char *reason, size_t size) {
  const eg_htp_builder *nb = builder_of(b, n->op);
  return nb && nb->supports && nb->supports(g, n, t, reason, size);
}

static eg_status htp_lower(const eg_backend *b, const eg_graph *g, const eg_partitioning *parts,
                           eg_lowered *out) {
  return eg_htp_lower_partitions(g, parts, (const eg_htp_builder *const *)b->data, out);
}

/* An op with a builder is lowered whole: the builder maps the ATen op to its QNN ops. */
static bool htp_kept_whole(const eg_backend *b, eg_op op) { return builder_of(b, op) != NULL; }

eg_backend eg_htp_backend_with_builders(const eg_htp_builder *const *builders) {
  return (eg_backend){.name = "htp", .gate = htp_gate, .supports = htp_supports,
                      .lower = htp_lower, .write = eg_htp_egp_write,
                      .kept_whole = htp_kept_whole, .rt = &eg_htp_rt, .data = builders};
}

const eg_backend eg_htp_backend = {.name = "htp", .gate = htp_gate, .supports = htp_supports,
                                   .lower = htp_lower, .write = eg_htp_egp_write,
                                   .kept_whole = htp_kept_whole, .rt = &eg_htp_rt,
                                   .data = eg_htp_builders};
