/* common.c — checks several builder files share (see builders.h). */
#include <stdio.h>

#include "backends/htp/builders/builders.h"

bool eg_htp_float_tensor_ok(const eg_graph *g, int32_t id, char *reason, size_t size) {
  const eg_value *v = &g->values[id];
  char s[160];
  if (v->dtype == EG_DTYPE_INT64) {
    snprintf(reason, size, "int64 tensors: the NPU has no int64 (%s)", eg_value_label(g, id));
    return false;
  }
  if (v->dtype != EG_DTYPE_FLOAT32) {
    snprintf(reason, size, "%s tensor %s: the NPU lowering handles float32 only",
             eg_dtype_name(v->dtype), eg_value_label(g, id));
    return false;
  }
  if (eg_value_numel(v) == 0) {
    snprintf(reason, size, "empty tensor %s %s: QNN tensors need every dimension >= 1",
             eg_value_label(g, id), eg_fmt_ints(s, sizeof s, v->shape, v->rank));
    return false;
  }
  return true;
}

bool eg_htp_self_and_result_ok(const eg_graph *g, const eg_node *n, char *reason, size_t size) {
  const int32_t x = eg_htp_arg(n, 0, "self");
  if (x < 0 || g->values[x].kind != EG_VALUE_TENSOR) {
    snprintf(reason, size, "argument self is not a tensor");
    return false;
  }
  return eg_htp_float_tensor_ok(g, x, reason, size) &&
         eg_htp_float_tensor_ok(g, n->output, reason, size);
}
