/* io_role.h — the roles of a graph's inputs and outputs in a training step (eg_io_role of
 * edgegrad.h), as the exporter records them: an input is "data", "label", "parameter",
 * "buffer" or "random"; an output "loss", "gradient", "buffer_update" or "output", a gradient
 * naming its parameter input and a buffer_update its buffer input ("of", eg_named.pair).
 *
 * Both readers (the graph JSON's "role"/"of", the .egp's role and pair codes) fill eg_named's
 * role and pair and then run eg_graph_check_roles, so a training loop can trust them:
 *   - each input's role is an input role, each output's an output role;
 *   - a gradient's "of" is a parameter input of the same dtype and shape, float32 (parameters
 *     are float32); a buffer_update's "of" a buffer input of the same dtype and shape; no other
 *     output names an input;
 *   - each parameter has at most one gradient and each buffer at most one update; in a
 *     training step (a graph with a gradient output) exactly one each. An evaluation graph
 *     (STEM.eval.json) has parameter and buffer inputs, the ones its training step trains,
 *     without gradients;
 *   - at most one output is the loss, a float32 scalar (one element);
 *   - an input is "random" exactly when it holds a random draw (eg_named.random: the graph
 *     JSON's "random_inputs").
 * Messages: "<inputs|outputs>[i] "<name>": role "<role>"[ of "<input>"] (<values>): <rule>". */
#ifndef EG_IR_IO_ROLE_H
#define EG_IR_IO_ROLE_H

#include <stdbool.h>

#include "ir/graph.h"

/* The role named `name` ("parameter", "buffer_update") among the roles of an input (is_input)
 * or of an output, into *out; false when it is none of them. */
bool eg_io_role_parse(const char *name, bool is_input, eg_io_role *out);

/* The names of the roles of an input (is_input) or an output, ", "-separated, for messages. */
const char *eg_io_role_list(bool is_input);

/* Checks the rules above on g's inputs' roles and outputs' roles and pairs, and sets each
 * input's pair: its gradient or update output, -1 when none. Names the first entry at fault. */
eg_status eg_graph_check_roles(eg_graph *g);

#endif
