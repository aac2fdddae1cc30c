/* program.h — a graph compiled for a target: the compiled graph, placement, lowered NPU
 * partitions, and the order in which CPU nodes and NPU partitions run.
 *
 * Built by eg_program_build (compiler/compile.h) from a verified model graph, which it never
 * modifies: clone the graph, run the pass pipeline on the clone (compiler/passes/pipeline.h, which
 * places every node once), partition the result (compiler/partition/partition.h), lower every
 * partition through its backend (compiler/backend.h) into the backend's form (backends/lowered.h),
 * then order the units — each CPU node and each partition — topologically (Kahn, smallest first
 * node first; the partitioner keeps the unit graph acyclic). `order` lists node indices in
 * execution order with each partition's nodes contiguous, a valid topological order of the compiled
 * graph that the memory planner uses. Node indices everywhere refer to the compiled graph, whose
 * inputs and outputs are the model's (names, order, types). */
#ifndef EG_PROGRAM_PROGRAM_H
#define EG_PROGRAM_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backends/lowered.h"
#include "ir/placement.h"
#include "target/targets.h"

typedef struct eg_program_step {
  int32_t node;       /* CPU step: node index; NPU step: -1 */
  int32_t partition;  /* NPU step: partition id; CPU step: -1 */
} eg_program_step;

typedef struct eg_program {
  eg_graph *graph;            /* the compiled graph */
  bool owns_graph;            /* built here (freed with the program); false when read from a file */
  const eg_target *target;
  eg_precision precision;     /* how its NPU partitions compute floats: FP32 or FP16 (never
                                 DEFAULT; a .egp records it) */
  eg_partitioning parts;
  eg_lowered *lowered;        /* per partition: its backend and the backend's lowered form */
  int32_t n_steps;
  eg_program_step *steps;
  int32_t *order;             /* graph->n_nodes node indices */
} eg_program;

void eg_program_free(eg_program *p);

/* Does the CPU side of program `p` read value `value` — a CPU node's argument (also inside a
 * list) or a graph output? NPU partitions read statics through their own STATIC tensors, so a
 * static the CPU never reads needs no bytes of its own in a compiled program file. */
bool eg_program_cpu_reads(const eg_program *p, int32_t value);
/* Does NPU partition `part` of program `p` (lowered) take value `value` as a boundary input
 * (an APP_WRITE tensor the runtime fills from the value's buffer)? With part -1: does any
 * partition? A static taken so (the backward's seed, which loss scaling rewrites at run time:
 * ir/seed.h) is read from the CPU side's bytes, so a program file stores them. */
bool eg_program_npu_input(const eg_program *p, int32_t part, int32_t value);

#endif
