/* frontend.h — reading exported graphs into the IR.
 * eg_graph_load_json reads PATH.json (docs/graph-format.md) and the safetensors file it names,
 * validates every field, and verifies the graph (eg_graph_verify). On failure *out is NULL and
 * the message starts with the file's path. */
#ifndef EG_FRONTEND_FRONTEND_H
#define EG_FRONTEND_FRONTEND_H

#include "ir/graph.h"

eg_status eg_graph_load_json(const char *path, eg_graph **out);

#endif
