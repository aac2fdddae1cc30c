/* clone.h — a deep copy of a graph into a new arena.
 *
 * The compiler's passes rewrite a graph in place; compilation therefore works on a clone, so a
 * model's graph stays as loaded however often it is compiled. The clone owns everything it holds
 * (names, arguments, tuple elements, static bytes), so it outlives the original. */
#ifndef EG_IR_CLONE_H
#define EG_IR_CLONE_H

#include "ir/graph.h"

/* *out gets a copy of `g` (values with roles and defs, nodes with their args, kwargs, attrs and
 * scratch sizes, inputs, statics with their bytes, outputs); free with eg_graph_destroy.
 * EG_ERR_NOMEM (then *out is NULL). */
eg_status eg_graph_clone(const eg_graph *g, eg_graph **out);

#endif
