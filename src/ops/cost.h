/* cost.h — what a node costs, for the profile: floating-point operations and bytes moved.
 *
 * FLOPs count a multiply-add as two: convolution (forward, and each gradient
 * convolution_backward is asked for) 2 * outputs * (Cin/groups * kH * kW), mm/bmm/addmm/mv/dot
 * 2 * outputs * K; views and copies 0; every other op one per element it writes (elementwise
 * ops, norms, pooling, losses: an estimate of their arithmetic, which is small beside the data
 * they move). Bytes: the sizes of the tensors the node reads and writes. */
#ifndef EG_OPS_COST_H
#define EG_OPS_COST_H

#include <stdint.h>

#include "ir/graph.h"

double eg_node_flops(const eg_graph *g, const eg_node *n);
int64_t eg_node_bytes(const eg_graph *g, const eg_node *n);

#endif
