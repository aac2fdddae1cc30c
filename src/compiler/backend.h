/* backend.h — the interface between the compiler and an NPU backend, in the spirit of
 * ggml-backend: the partitioner asks a backend whether it runs a node on a target (and if not,
 * why), the compiler asks it to lower each partition into its graph. The partitioner knows no
 * builder and no backend symbol; it gets the backend from the registry (eg_backend_for_target)
 * or from its options (tests inject one).
 *
 * The lowered form is the backend's own (backends/lowered.h eg_lowered: an opaque graph and a
 * boundary described generically); the compiled program records, per partition, the backend's
 * runtime half (eg_backend_rt), which loads, describes and runs it, and this compile half
 * writes it into the .egp. Nothing outside a backend's folder and the registry names the
 * backend's types or functions (tests/arch/check_layers.py enforces it: a backend's
 * identifiers carry its folder's name as their prefix, eg_<name>_ / EG_<NAME>_). A new backend
 * is one folder under src/backends/<name>/ implementing this struct and eg_backend_rt, and one
 * row in each registry file (backends.c, backends_rt.c); a test registers its own backend with
 * eg_backend_register instead (tests/backends/fake/).
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

#include "backends/lowered.h"
#include "backends/serial.h"
#include "ir/graph.h"
#include "ir/placement.h"
#include "target/targets.h"

typedef struct eg_backend eg_backend;

struct eg_backend {
  const char *name; /* "htp": the runtime half's name too */
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
                     eg_lowered *out);
  /* Writes a partition lower() made into its .egp record (backends/serial.h), what the
   * runtime half's read() reads back. */
  void (*write)(const eg_lowered *lp, eg_egp_sink *sink);
  /* Whether the backend runs op `op` as one node, so pass decompose keeps it whole instead of
   * rewriting it into simpler ops (the htp backend: the ops its builder table lowers). */
  bool (*kept_whole)(const eg_backend *b, eg_op op);
  /* The runtime half: what runs, reads and describes the partitions lower() makes. */
  const eg_backend_rt *rt;
  /* The backend's own data (the htp backend: its op -> builder table). */
  const void *data;
};

/* The backend that compiles for target `t` (today: the htp backend, for every SoC; a target
 * whose NPU runs nothing is still the htp backend, whose gate() declines with the reason). */
const eg_backend *eg_backend_for_target(const eg_target *t);
/* The backend called `name` (built in, or registered); NULL if none. */
const eg_backend *eg_backend_named(const char *name);
/* Registers another backend (a test's) and its runtime half (eg_backend_rt_register), to be
 * found by name; a compile asks it by passing it in eg_partition_options.backend. EG_ERR_INVALID
 * when its name is taken or the table is full. */
eg_status eg_backend_register(const eg_backend *b);

#endif
