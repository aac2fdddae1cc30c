/* readers.h — who reads each value of a placed graph, per partition: what the lowering, the
 * .egp reader and the runtime all ask about partition boundaries (no backend's business: it is
 * a question about the graph and its placement). */
#ifndef EG_IR_READERS_H
#define EG_IR_READERS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/graph.h"
#include "ir/placement.h"

/* Who reads each value, for every partition of a placement at once (one pass over the graph,
 * so asking for every partition costs O(nodes + values), not partitions x nodes): per value id,
 * EG_READ_NONE when no node reads it, the partition of its readers when they all lie in
 * one NPU partition, or EG_READ_OUTSIDE when a CPU node, two partitions or the graph's
 * outputs read it. A getitem's readers count as readers of the element it names. */
enum { EG_READ_NONE = -1, EG_READ_OUTSIDE = -2 };
typedef struct eg_readers {
  int32_t n_values;
  int32_t *of; /* per value id */
} eg_readers;
eg_status eg_readers_compute(const eg_graph *g, const eg_partitioning *parts, eg_readers *out);
void eg_readers_free(eg_readers *r);
/* Value `value` is read outside partition p: by a CPU node, another partition, or as a graph
 * output. */
bool eg_readers_outside(const eg_readers *r, int32_t value, int32_t p);
/* The values the runtime may hold NHWC in its own buffers, so the NPU steps that write and read
 * them bind them in place and nothing converts them: held NHWC (rank 4, axes EG_AXES_NHWC: pass
 * layout_nhwc), float32 and not quantized, defined by an NPU node, and read only by NPU nodes
 * (no CPU node, no graph output, a getitem's readers counting as the element's) — every step
 * that touches one agrees on its order. The compiler holds these (less repeats of one tensor
 * held unalike: compiler/compile.c) and records it on the boundaries (eg_boundary.held); the
 * .egp reader checks a file's against it. *out: per value id (malloc'ed, the caller frees). */
eg_status eg_nhwc_between_partitions(const eg_graph *g, const eg_partitioning *parts, bool **out);

#endif
