/* quant.h — the quantization a QDQ graph's quantize nodes apply, read from the node (for the
 * dequantize op, pass annotate_quant and the NPU executor's view of a quantized value).
 *
 * In the graph format a quantized tensor's dtype is its integer storage (quint8 -> uint8,
 * qint8 -> int8, qint32 -> int32); its scale and zero point live only in the quantize node
 * that made it (docs/graph-format.md, "Quantized models"). */
#ifndef EG_OPS_QUANT_H
#define EG_OPS_QUANT_H

#include "ir/graph.h"
#include "kernels/quant_f32.h"

/* The quantization node `n` (quantize_per_tensor or quantize_per_channel, checked) applies. The
 * arrays of *out point into the node's attrs (per tensor) or the graph's statics (per channel):
 * valid while the graph is unchanged; eg_quant_copy makes an owned copy. */
void eg_quant_of_node(const eg_graph *g, const eg_node *n, eg_quant *out);

/* The node that quantized value `id` (the argument of a dequantize), or NULL when `id` is not
 * the output of a quantize node. */
const eg_node *eg_quant_producer(const eg_graph *g, int32_t id);

/* The kernel view of a tensor of shape/rank quantized by `q` (quant_f32.h), with the
 * quantized axis at `axis` of that shape (q->axis for the traced layout; a caller holding the
 * tensor in another axis order passes where the axis went). */
eg_quant_view eg_quant_view_of(const eg_quant *q, const int64_t *shape, int rank, int axis);

#endif
