/* backend.h — the interface between the compiler and an NPU backend, in the spirit of
 * ggml-backend: the partitioner asks a backend whether it runs a node on a target (and if not,
 * why), the compiler asks it to lower each partition into its graph. The partitioner knows no
 * builder and no backend symbol; it gets the backend from the registry (eg_backend_for_target)
 * or from its options (tests inject one).
 *
 * The lowered form is the QNN-modelled graph of backends/htp/values.h (eg_htp_partition: a QNN
 * graph and its boundary), which the compiled program stores and the runtime's NPU steps
 * execute; a backend producing another form (a GPU, a real QNN SDK context binary) would add
 * its lowered type beside it. A new backend is one folder under src/backends/ implementing this
 * struct and one row in backends.c.
 *
 * Contract of the two questions, asked by the partitioner for every node but getitem (which
 * takes its producer's placement), in this order:
 *   1. gate(): can the target's NPU run this node's op at all — the backend's generic rules (an
 *      op it has a lowering for, a dtype path the target has, its generation, its dims). The
 *      first "no" wins.
 *   2. the user's skip lists (--skip-op / --skip-node): the partitioner's.
 *   3. supports(): does the lowering accept this particular node (its attributes, shapes,
 *      which arguments are static) — only asked for nodes that passed 1 and 2.
 * A "no" writes one sentence into reason[size] that reaches the user verbatim. */
#ifndef EG_BACKENDS_BACKEND_H
#define EG_BACKENDS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/executor.h"
#include "backends/htp/values.h"
#include "ir/graph.h"
#include "ir/placement.h"
#include "target/targets.h"

typedef struct eg_backend eg_backend;

struct eg_backend {
  const char *name; /* "htp" */
  /* Question 1 (see above). Must not modify anything. */
  bool (*gate)(const eg_backend *b, const eg_graph *g, const eg_node *n, const eg_target *t,
               char *reason, size_t size);
  /* Question 3 (see above). Must not modify anything. */
  bool (*supports)(const eg_backend *b, const eg_graph *g, const eg_node *n, const eg_target *t,
                   char *reason, size_t size);
  /* Lowers every partition of placement `parts` of verified graph `g` into out[0 ..
   * parts->n_partitions) (every node of them passed gate() and supports()), in time linear in
   * the graph and the partitions. On failure the message names the node whose lowering failed
   * and every out[k] is cleared. */
  eg_status (*lower)(const eg_backend *b, const eg_graph *g, const eg_partitioning *parts,
                     eg_htp_partition *out);
  /* The executor that runs what lower() makes (backends/executor.h): the runtime half. */
  const eg_backend_executor *executor;
  /* The backend's own data (the htp backend: its op -> builder table). */
  const void *data;
};

/* The backend that compiles for target `t` (today: the htp backend, for every SoC; a target
 * whose NPU runs nothing is still the htp backend, whose gate() declines with the reason). */
const eg_backend *eg_backend_for_target(const eg_target *t);

#endif
