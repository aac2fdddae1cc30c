/* tuple.c — getitem: Python's operator.getitem on a tuple-producing node.
 * getitem(tuple, i) -> element i (a tensor). Picking a None element is allowed only when the
 * node defines nothing (output null), as make_fx traces it for masked gradients. */
#include <string.h>

#include "ops/op.h"

typedef struct eg_getitem_attrs {
  int32_t index;
} eg_getitem_attrs;
EG_ATTRS_FIT(eg_getitem_attrs);

eg_status eg_check_getitem(eg_graph *g, eg_node *n) {
  EG_TRY(eg_node_check_arity(n, 2, 2, NULL));
  const eg_arg *a = eg_node_arg(n, 0, NULL);
  if (!a || a->kind != EG_ARG_VALUE || g->values[a->value].kind != EG_VALUE_TUPLE)
    return eg_node_error(n, EG_ERR_INVALID, "argument #0 is not a tuple: getitem picks an "
                         "element of a tuple");
  const eg_value *t = &g->values[a->value];
  int64_t index;
  EG_TRY(eg_arg_int(n, 1, NULL, &index));
  if (index < 0 || index >= t->n_elems)
    return eg_node_error(n, EG_ERR_INVALID, "index %lld out of range [0, %d) of tuple %s",
                         (long long)index, t->n_elems, eg_value_label(g, a->value));
  EG_ATTRS(n, eg_getitem_attrs)->index = (int32_t)index;
  int32_t elem = t->elems[index];
  if (elem < 0) {
    if (n->output >= 0)
      return eg_node_error(n, EG_ERR_INVALID, "element %lld of %s is None but the node has an "
                           "output: a None element defines nothing", (long long)index,
                           eg_value_label(g, a->value));
    return EG_OK;
  }
  const eg_value *e = &g->values[elem];
  return eg_out_tensor(g, n, e->dtype, e->rank, e->shape);
}

int32_t eg_getitem_element(const eg_graph *g, const eg_node *n) {
  const int32_t tuple = eg_node_arg(n, 0, NULL)->value;
  return g->values[tuple].elems[EG_ATTRS(n, eg_getitem_attrs)->index];
}

/* The runtime usually plans the result onto the element itself (an alias): nothing to copy. */
eg_status eg_run_getitem(const eg_exec *ex, const eg_node *n) {
  if (n->output < 0) return EG_OK;
  const int32_t elem = eg_getitem_element(ex->g, n);
  size_t bytes = eg_value_nbytes(&ex->g->values[elem]);
  if (bytes && ex->data[n->output] != ex->data[elem])
    memcpy(ex->data[n->output], ex->data[elem], bytes);
  return EG_OK;
}
