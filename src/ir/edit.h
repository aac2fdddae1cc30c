/* edit.h — editing a graph in place, shared by the passes and the code that asks who reads a
 * value (the NPU lowering, the program): reading and rewriting value arguments, removing nodes
 * and statics with the values they define, and fresh names.
 *
 * Contracts. Value arguments are eg_arg of kind EG_ARG_VALUE, also nested in EG_ARG_LIST; the
 * helpers below visit both. Removal keeps the order of what stays (nodes stay topological,
 * statics and values keep their relative order) and renumbers the values densely from 0, in
 * every place that holds an id: node outputs, arguments (lists included), tuple elements,
 * inputs, statics and outputs. Removal leaves value roles and defs stale: run eg_graph_verify
 * afterwards (the pipeline does after every pass in Debug builds and once at its end). */
#ifndef EG_IR_EDIT_H
#define EG_IR_EDIT_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/graph.h"

/* `a` (or a list inside it) is value `value`. */
bool eg_arg_reads(const eg_arg *a, int32_t value);
/* Some argument or keyword argument of `n` reads `value`. */
bool eg_node_reads(const eg_node *n, int32_t value);
/* Every argument or keyword argument of `n` reading `from` reads `to` instead. */
void eg_node_replace_value(eg_node *n, int32_t from, int32_t to);
/* Adds 1 to uses[v] for each argument or keyword argument (list items included) of `n` that is
 * value v (a node reading v twice counts twice); `uses` has one entry per value of the graph. */
void eg_node_count_uses(const eg_node *n, int32_t *uses);

/* Removes from `g` the nodes i with drop_node[i] and the statics k with drop_static[k] (either
 * array may be NULL: none), together with the values they define (a node's output and, for a
 * tuple, its elements; a static's value), and renumbers the remaining values (see above).
 * The caller guarantees that nothing kept reads a removed value: no kept node's argument, tuple
 * element, input or output (an internal invariant, asserted). Inputs are never removed: a
 * runtime binds them by name. EG_ERR_NOMEM (then `g` is unchanged). */
eg_status eg_graph_remove(eg_graph *g, const bool *drop_node, const bool *drop_static);

/* Extra names a caller considers taken (nodes it is building outside g->nodes). */
typedef bool (*eg_name_taken_fn)(const void *ctx, const char *name);

/* A name for a new node or static: base+suffix, else base+suffix_2, _3, ..., the first one that
 * no node of `g` (but `except`, a node being replaced; NULL for none), no static and no input
 * has, and for which also_taken(ctx, name) is false (also_taken NULL: no extra names). In g's
 * arena; NULL when out of memory. */
const char *eg_graph_fresh_name(eg_graph *g, const char *base, const char *suffix,
                                const eg_node *except, eg_name_taken_fn also_taken,
                                const void *ctx);

#endif
