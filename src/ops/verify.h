/* verify.h — the graph verifier (verify.c): the structural rules of ir/graph.h plus every
 * node's op check, so it sits above the op layer (src/ops) it calls.
 *
 * It recomputes each value's role and defining node from the graph's lists, parses every
 * node's attributes and checks dtypes and shapes against its op's rules; so it runs after the
 * loaders (graph JSON, .egp) and after every compiler pass. Messages name the node or list
 * entry at fault. */
#ifndef EG_OPS_VERIFY_H
#define EG_OPS_VERIFY_H

#include "ir/graph.h"

/* Runs every node's op check in order plus the structural rules of ir/graph.h. */
eg_status eg_graph_verify(eg_graph *g);

#endif
