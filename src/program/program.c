/* program.c — what the runtime side asks of a program (see program.h). */
#include "program/program.h"

#include <stdlib.h>
#include <string.h>

#include "ir/edit.h"

bool eg_program_cpu_reads(const eg_program *p, int32_t value) {
  const eg_graph *g = p->graph;
  for (int32_t i = 0; i < g->n_outputs; i++)
    if (g->outputs[i].value == value) return true;
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (!p->parts.nodes[i].npu && eg_node_reads(&g->nodes[i], value)) return true;
  return false;
}

bool eg_program_npu_input(const eg_program *p, int32_t part, int32_t value) {
  const int32_t first = part < 0 ? 0 : part, end = part < 0 ? p->parts.n_partitions : part + 1;
  for (int32_t k = first; p->lowered && k < end; k++)
    for (int32_t i = 0; i < p->lowered[k].n_inputs; i++)
      if (p->lowered[k].inputs[i].value == value) return true;
  return false;
}

void eg_program_free(eg_program *p) {
  for (int32_t k = 0; p->lowered && k < p->parts.n_partitions; k++)
    eg_lowered_free(&p->lowered[k]);
  free(p->lowered);
  free(p->steps);
  free(p->order);
  if (p->parts.arena) eg_partitioning_free(&p->parts);
  if (p->owns_graph) eg_graph_destroy(p->graph);
  memset(p, 0, sizeof *p);
}
