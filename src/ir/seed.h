/* seed.h — the seed of a training step's backward: the value autograd starts the backward
 * from, d loss / d loss = 1. An exported step traces it as aten.ones_like(loss); pass decompose
 * folds that node into a constant of ones (a compiled program's graph keeps only the constant).
 * Loss scaling (runtime/loss_seed.c) makes it the scale S at run time, so the compiler lowers a
 * constant seed read by NPU nodes as a boundary input of their partitions, not as a constant
 * baked into them (the NPU backend's lowering).
 *
 * Found by these rules, in this order (the loss is the float32 output of role "loss", as the
 * exporter records it: ir/io_role.h, docs/export.md):
 *   1. a node ones_like(loss) read by some node;
 *   2. else a float32 constant (static, its bytes present) of the loss's shape, every element
 *      1.0, read by some node: decompose's fold of rule 1.
 * More than one match of the rule that applies leaves the seed unknown: which one seeds the
 * backward cannot be told. */
#ifndef EG_IR_SEED_H
#define EG_IR_SEED_H

#include <stdint.h>

#include "ir/graph.h"

/* The value of g's float32 output of role loss, or -1. */
int32_t eg_graph_loss(const eg_graph *g);

/* The matches of the rule that applies (0 when neither matches; 0 as well without a loss):
 * their count, the first two in seeds[0], seeds[1] (-1 when absent), and in *rule the rule
 * that matched (1 or 2; 0 for none). */
int eg_graph_seed_matches(const eg_graph *g, int32_t seeds[2], int *rule);

/* The backward's seed when it is exactly one constant (rule 2), else -1: the static the NPU
 * partitions reading it take as a boundary input that the runtime writes. */
int32_t eg_graph_seed_constant(const eg_graph *g);

#endif
