/* cost.c — FLOPs and bytes of a node (cost.h). */
#include "ops/cost.h"

static const eg_value *arg_tensor(const eg_graph *g, const eg_node *n, int32_t a) {
  if (a >= n->n_args || n->args[a].kind != EG_ARG_VALUE) return NULL;
  const eg_value *v = &g->values[n->args[a].value];
  return v->kind == EG_VALUE_TENSOR ? v : NULL;
}

/* The node's tensor outputs: out[k] for k < return value (a tuple's present elements). */
static int32_t outputs(const eg_graph *g, const eg_node *n, const eg_value **out, int32_t max) {
  if (n->output < 0) return 0;
  const eg_value *v = &g->values[n->output];
  if (v->kind == EG_VALUE_TENSOR) {
    out[0] = v;
    return 1;
  }
  int32_t k = 0;
  for (int32_t e = 0; v->kind == EG_VALUE_TUPLE && e < v->n_elems && k < max; e++)
    if (v->elems[e] >= 0 && g->values[v->elems[e]].kind == EG_VALUE_TENSOR)
      out[k++] = &g->values[v->elems[e]];
  return k;
}

/* Multiply-adds per output element of a convolution with weight w [Cout, Cin/groups, kH, kW]. */
static double conv_macs_per_output(const eg_value *w) {
  return w && w->rank >= 1 && w->shape[0] > 0 ? (double)eg_value_numel(w) / (double)w->shape[0]
                                              : 0.0;
}

static double inner_k(const eg_value *a) {
  return a && a->rank >= 1 ? (double)a->shape[a->rank - 1] : 0.0;
}

double eg_node_flops(const eg_graph *g, const eg_node *n) {
  const eg_value *out[16];
  const int32_t n_out = outputs(g, n, out, 16);
  double written = 0.0;
  for (int32_t k = 0; k < n_out; k++) written += (double)eg_value_numel(out[k]);
  switch (n->op) {
  case EG_OP_convolution:
    return n_out ? 2.0 * (double)eg_value_numel(out[0]) * conv_macs_per_output(arg_tensor(g, n, 1))
                 : 0.0;
  case EG_OP_convolution_backward: {
    /* grad_input and grad_weight each cost the forward's multiply-adds; grad_bias a sum */
    const eg_value *gy = arg_tensor(g, n, 0), *w = arg_tensor(g, n, 2);
    const eg_value *tuple = n->output >= 0 ? &g->values[n->output] : NULL;
    if (!gy || !tuple || tuple->kind != EG_VALUE_TUPLE) return written;
    const double fwd = 2.0 * (double)eg_value_numel(gy) * conv_macs_per_output(w);
    double f = 0.0;
    for (int32_t e = 0; e < tuple->n_elems && e < 3; e++)
      if (tuple->elems[e] >= 0) f += e < 2 ? fwd : (double)eg_value_numel(gy);
    return f;
  }
  case EG_OP_mm:
  case EG_OP_bmm:
  case EG_OP_mv:
  case EG_OP_dot:
    return 2.0 * written * inner_k(arg_tensor(g, n, 0));
  case EG_OP_addmm:
    return 2.0 * written * inner_k(arg_tensor(g, n, 1)) + written;
  case EG_OP_sdpa_flash: /* q @ k^T and P @ v: 2 L S E each per (batch, head) */
  case EG_OP_sdpa_flash_backward: { /* five such products */
    const eg_value *q = arg_tensor(g, n, n->op == EG_OP_sdpa_flash ? 0 : 1),
                   *k = arg_tensor(g, n, n->op == EG_OP_sdpa_flash ? 1 : 2);
    const double products = n->op == EG_OP_sdpa_flash ? 2.0 : 5.0;
    return q && k && k->rank == 4 ? products * 2.0 * (double)eg_value_numel(q) *
                                        (double)k->shape[2] + written
                                  : written;
  }
  case EG_OP_getitem:
  case EG_OP_t:
  case EG_OP_view:
  case EG_OP__unsafe_view:
  case EG_OP__reshape_alias:
  case EG_OP_reshape:
  case EG_OP_permute:
  case EG_OP_transpose_int:
  case EG_OP_expand:
  case EG_OP_detach:
  case EG_OP_alias:
  case EG_OP_lift_fresh_copy:
  case EG_OP_clone:
  case EG_OP__to_copy:
    return 0.0;
  default:
    return written;
  }
}

static int64_t arg_bytes(const eg_graph *g, const eg_arg *a) {
  if (a->kind == EG_ARG_LIST) {
    int64_t b = 0;
    for (int32_t i = 0; i < a->list.n; i++) b += arg_bytes(g, &a->list.items[i]);
    return b;
  }
  if (a->kind != EG_ARG_VALUE || g->values[a->value].kind != EG_VALUE_TENSOR) return 0;
  return (int64_t)eg_value_nbytes(&g->values[a->value]);
}

int64_t eg_node_bytes(const eg_graph *g, const eg_node *n) {
  int64_t b = 0;
  for (int32_t a = 0; a < n->n_args; a++) b += arg_bytes(g, &n->args[a]);
  for (int32_t a = 0; a < n->n_kwargs; a++) b += arg_bytes(g, &n->kwargs[a]);
  const eg_value *out[16];
  const int32_t n_out = outputs(g, n, out, 16);
  for (int32_t k = 0; k < n_out; k++) b += (int64_t)eg_value_nbytes(out[k]);
  return b;
}
