/* model.h — what an eg_model handle holds: a verified graph (weights included). */
#ifndef EG_RUNTIME_MODEL_H
#define EG_RUNTIME_MODEL_H

#include "ir/graph.h"

struct eg_model {
  eg_graph *graph;
};

#endif
