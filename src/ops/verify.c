/* verify.c — the graph verifier: single definition, ids in range, topological order (so no
 * cycles), tuples only under getitem, every tensor shape within util/checked.h's element limit,
 * and every node checked by its op's rules.
 *
 * It recomputes each value's role/def from the graph's lists, so it can run after the loader
 * and after every pass. Messages name the node or list entry at fault. */
#include <math.h>
#include <stdio.h>

#include "ir/graph.h"
#include "ops/verify.h"
#include "ops/op.h"
#include "util/checked.h"
#include "util/error.h"

/* Value `id` is defined by `def` in `role`; `kind` and `name` say where, for the message only
 * (formatted when there is one: verify runs after every pass). */
static eg_status define(eg_graph *g, int32_t id, eg_value_role role, int32_t def,
                        const char *kind, const char *name) {
  if (id < 0 || id >= g->n_values)
    return eg_error(EG_ERR_INVALID, "%s %s: value id %d out of range [0, %d)", kind, name, id,
                    g->n_values);
  eg_value *v = &g->values[id];
  if (v->role != EG_ROLE_UNDEFINED)
    return eg_error(EG_ERR_INVALID, "%s %s: value %d is already defined by %s: a value has one "
                    "definition", kind, name, id, eg_value_label(g, id));
  v->role = role;
  v->def = def;
  return EG_OK;
}

static eg_status define_all(eg_graph *g) {
  for (int32_t i = 0; i < g->n_values; i++) g->values[i].role = EG_ROLE_UNDEFINED;
  for (int32_t i = 0; i < g->n_inputs; i++)
    EG_TRY(define(g, g->inputs[i].value, EG_ROLE_INPUT, i, "input", g->inputs[i].name));
  for (int32_t i = 0; i < g->n_statics; i++)
    EG_TRY(define(g, g->statics[i].value, EG_ROLE_STATIC, i, "static", g->statics[i].name));
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (n->output < 0) continue;
    EG_TRY(define(g, n->output, EG_ROLE_NODE, i, "node", n->name));
    const eg_value *v = &g->values[n->output];
    for (int32_t e = 0; v->kind == EG_VALUE_TUPLE && e < v->n_elems; e++)
      if (v->elems[e] >= 0) EG_TRY(define(g, v->elems[e], EG_ROLE_NODE, i, "node", n->name));
  }
  for (int32_t i = 0; i < g->n_values; i++) {
    const eg_value *v = &g->values[i];
    if (v->role == EG_ROLE_UNDEFINED)
      return eg_error(EG_ERR_INVALID, "value %d: defined by no input, static or node: every "
                      "value needs a definition", i);
    if (v->kind == EG_VALUE_TUPLE && v->role != EG_ROLE_NODE)
      return eg_error(EG_ERR_INVALID, "value %d (%s): a tuple must be a node's output", i,
                      eg_value_label(g, i));
  }
  return EG_OK;
}

/* Every value argument (also inside lists) must be defined before node `at`. */
static eg_status check_uses(const eg_graph *g, const eg_node *n, int32_t at, const eg_arg *a) {
  if (a->kind == EG_ARG_LIST) {
    for (int32_t i = 0; i < a->list.n; i++) EG_TRY(check_uses(g, n, at, &a->list.items[i]));
    return EG_OK;
  }
  if (a->kind != EG_ARG_VALUE) return EG_OK;
  if (a->value < 0 || a->value >= g->n_values)
    return eg_node_error(n, EG_ERR_INVALID, "argument uses value id %d, out of range [0, %d)",
                         a->value, g->n_values);
  const eg_value *v = &g->values[a->value];
  if (v->role == EG_ROLE_NODE && v->def >= at)
    return eg_node_error(n, EG_ERR_INVALID, "argument uses value %d of node %s, which does not "
                         "come before it: nodes must be in topological order (no cycles)",
                         a->value, g->nodes[v->def].name);
  if (v->kind == EG_VALUE_TUPLE && n->op != EG_OP_getitem)
    return eg_node_error(n, EG_ERR_INVALID, "argument is tuple %s: only getitem takes a tuple",
                         eg_value_label(g, a->value));
  return EG_OK;
}

static eg_status check_outputs(const eg_graph *g) {
  for (int32_t i = 0; i < g->n_outputs; i++) {
    int32_t id = g->outputs[i].value;
    if (id < 0 || id >= g->n_values)
      return eg_error(EG_ERR_INVALID, "output %s: value id %d out of range [0, %d)",
                      g->outputs[i].name, id, g->n_values);
    if (g->values[id].kind != EG_VALUE_TENSOR)
      return eg_error(EG_ERR_INVALID, "output %s: value %d is a tuple: outputs are tensors",
                      g->outputs[i].name, id);
  }
  return EG_OK;
}

/* Every tensor shape passes util/checked.h's rule, so eg_value_numel / eg_value_nbytes hold for
 * whatever reader built the graph. */
static eg_status check_shapes(const eg_graph *g) {
  for (int32_t i = 0; i < g->n_values; i++) {
    const eg_value *v = &g->values[i];
    if (v->kind != EG_VALUE_TENSOR) continue;
    if (v->rank < 0 || v->rank > EG_MAX_RANK)
      return eg_error(EG_ERR_INVALID, "value %d (%s): rank %d: must be in [0, %d]", i,
                      eg_value_label(g, i), (int)v->rank, EG_MAX_RANK);
    if (eg_shape_numel(v->shape, v->rank, EG_MAX_NUMEL) < 0) {
      char dims[200];
      return eg_error(EG_ERR_UNSUPPORTED, "value %d (%s): shape %s: every dim must be >= 0 and "
                      "the product of the non-zero dims at most 2^40", i, eg_value_label(g, i),
                      eg_fmt_ints(dims, sizeof dims, v->shape, v->rank));
    }
  }
  return EG_OK;
}

/* A random input (eg_named.random) holds a 0/1 mask a loop can write: float32, float64, uint8
 * or bool, its probability NAN (unknown) or in [0, 1]. (That it is never a trainable parameter
 * or a state buffer is a rule of the roles the loaders check: ir/io_role.h.) */
static eg_status check_random_inputs(const eg_graph *g) {
  for (int32_t i = 0; i < g->n_inputs; i++) {
    const eg_named *in = &g->inputs[i];
    if (in->random == EG_RANDOM_NONE) continue;
    const eg_value *v = &g->values[in->value];
    if ((unsigned)in->random > EG_RANDOM_BERNOULLI)
      return eg_error(EG_ERR_UNSUPPORTED, "input %s: random kind %d unknown", in->name,
                      (int)in->random);
    if (v->kind != EG_VALUE_TENSOR ||
        (v->dtype != EG_DTYPE_FLOAT32 && v->dtype != EG_DTYPE_FLOAT64 &&
         v->dtype != EG_DTYPE_UINT8 && v->dtype != EG_DTYPE_BOOL))
      return eg_error(EG_ERR_UNSUPPORTED, "input %s: a Bernoulli mask of dtype %s: masks are "
                      "float32, float64, uint8 or bool", in->name,
                      v->kind == EG_VALUE_TENSOR ? eg_dtype_name(v->dtype) : "(tuple)");
    if (!isnan(in->random_p) && !(in->random_p >= 0 && in->random_p <= 1))
      return eg_error(EG_ERR_INVALID, "input %s: Bernoulli probability %g: must be in [0, 1]",
                      in->name, in->random_p);
  }
  return EG_OK;
}

eg_status eg_graph_verify(eg_graph *g) {
  EG_TRY(define_all(g));
  EG_TRY(check_random_inputs(g));
  EG_TRY(check_shapes(g));
  for (int32_t i = 0; i < g->n_nodes; i++) {
    eg_node *n = &g->nodes[i];
    for (int32_t a = 0; a < n->n_args; a++) EG_TRY(check_uses(g, n, i, &n->args[a]));
    for (int32_t a = 0; a < n->n_kwargs; a++) EG_TRY(check_uses(g, n, i, &n->kwargs[a]));
    if ((unsigned)n->op >= EG_OP_COUNT)
      return eg_node_error(n, EG_ERR_UNSUPPORTED, "op id %d unknown", (int)n->op);
    n->scratch_bytes = 0;
    EG_TRY(eg_op_check[n->op](g, n));
  }
  return check_outputs(g);
}
