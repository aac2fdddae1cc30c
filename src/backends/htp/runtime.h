/* runtime.h — the htp backend's runtime half (backends/lowered.h eg_backend_rt): its lowered
 * partitions (a QNN-modelled graph, qnn_graph.h, and its boundary) read from a .egp
 * (egp_read.c), described to the public API (info.c), exported as ONNX (export_onnx.c) and
 * run by its executor (executor.c). */
#ifndef EG_BACKENDS_HTP_RUNTIME_H
#define EG_BACKENDS_HTP_RUNTIME_H

#include "backends/lowered.h"

extern const eg_backend_rt eg_htp_rt;
/* Its executor (executor.c). */
extern const eg_backend_executor eg_htp_executor;

/* eg_backend_rt.read (egp_read.c). */
eg_status eg_htp_egp_read(eg_egp_source *src, const eg_graph *g, const eg_partitioning *parts,
                          int32_t k, eg_lowered *out);
/* eg_backend_rt.describe* (info.c). */
void eg_htp_describe(const void *graph, eg_npu_partition_info *out);
void eg_htp_describe_tensor(const void *graph, int32_t tensor, eg_precision precision,
                            eg_npu_tensor_info *out);
void eg_htp_describe_op(const void *graph, int32_t op, eg_npu_op_info *out);
void eg_htp_describe_param(const void *graph, int32_t op, int32_t index, const char **name,
                           char *value, size_t size);
/* eg_backend_rt.export_onnx (export_onnx.c). */
eg_status eg_htp_export_onnx(const eg_graph *g, const eg_target *t, const eg_lowered *lp,
                             const char *path);

#endif
