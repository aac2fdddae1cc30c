/* print.h — the graph's text form, for --dump-after and for reading a graph by eye.
 *
 * One line per graph input, static, node and output, in that order:
 *
 *   graph: 5 inputs, 1 static, 40 nodes, 6 outputs
 *   input x: %0 float32[4, 1, 8, 8]
 *   static c: %3 float32[] (4 bytes)
 *   node convolution: %7 float32[4, 8, 6, 6] = aten.convolution.default(%0, %1, None, [1, 1], ...)
 *   node convolution_backward: %9 (%10, None, %11) = aten.convolution_backward.default(...)
 *   node sum: %12 float32[] = aten.sum.dim_IntList(%7, [0], keepdim=False)
 *   output loss: %12
 *
 * Values are %id; a node's result is shown with its dtype and shape (tuples list their elements,
 * None for a masked one; a getitem of a None element shows "_"). Arguments appear as traced:
 * ints, floats (always with a '.' or an exponent, or inf/-inf/nan), True/False, None, [lists],
 * dtypes by name, layouts/devices/memory formats as their strings; keywords as name=value. */
#ifndef EG_IR_PRINT_H
#define EG_IR_PRINT_H

#include <stdio.h>

#include "ir/graph.h"

/* Writes `g` to `out`. Needs only well-formed ids (the loader guarantees them); never fails. */
void eg_graph_print(const eg_graph *g, FILE *out);

#endif
