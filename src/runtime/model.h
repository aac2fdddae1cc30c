/* model.h — what an eg_model handle holds: a verified graph (weights included), and, for a
 * model loaded from a compiled program file, that program (which then owns the graph). */
#ifndef EG_RUNTIME_MODEL_H
#define EG_RUNTIME_MODEL_H

#include "ir/graph.h"

struct eg_egp;

struct eg_model {
  eg_graph *graph;
  struct eg_egp *compiled; /* from a .egp (program/egp_format.h): owns graph; else NULL */
};

#endif
