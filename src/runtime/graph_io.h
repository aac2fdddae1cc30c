/* graph_io.h — a graph's inputs and outputs as the public API describes them (eg_tensor_desc,
 * the training roles the exporter records): what eg_model_input/_output give, and what the
 * trainer reads of the step it trains. */
#ifndef EG_RUNTIME_GRAPH_IO_H
#define EG_RUNTIME_GRAPH_IO_H

#include "edgegrad.h"
#include "ir/graph.h"

/* The role of input (is_input) or output `index` of `g` in a training step, and *pair its
 * partner's index (-1 none), as the graph records them (ir/io_role.h): eg_tensor_desc's role
 * and pair. */
eg_io_role eg_graph_io_role(const eg_graph *g, bool is_input, int32_t index, int32_t *pair);
/* Input (is_input) or output `index` (in range) of `g` as eg_model_input/_output give it. */
void eg_graph_describe(const eg_graph *g, bool is_input, int index, eg_tensor_desc *out);
/* eg_model_input_classes of input `index` (in range) of `g`. */
void eg_graph_input_classes(const eg_graph *g, int index, int64_t *classes,
                            int64_t *ignore_index);

#endif
