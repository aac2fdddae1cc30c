/* runtime.c — the htp backend's runtime half (runtime.h): the table the program's partitions
 * point to. */
#include "backends/htp/runtime.h"

#include "backends/htp/executor.h"
#include "backends/htp/values.h"

static void htp_free(void *graph) { eg_htp_qnn_graph_destroy(graph); }

static eg_status htp_quant_view(const void *graph, int32_t tensor, eg_boundary_qview *out) {
  const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(graph, tensor);
  if (!t) return eg_error(EG_ERR_INVALID, "htp: tensor %d: not in the graph", (int)tensor);
  return eg_htp_qnn_qview_make(t, out);
}

const eg_backend_rt eg_htp_rt = {.name = "htp",
                                 .free = htp_free,
                                 .read = eg_htp_egp_read,
                                 .executor = &eg_htp_executor,
                                 .quant_view = htp_quant_view,
                                 .may_alias = eg_htp_may_alias,
                                 .describe = eg_htp_describe,
                                 .describe_tensor = eg_htp_describe_tensor,
                                 .describe_op = eg_htp_describe_op,
                                 .describe_param = eg_htp_describe_param,
                                 .export_onnx = eg_htp_export_onnx};
