/* eg_test_exec.h — hand-built QNN graphs (include after eg_test.h): a FLOAT_32 tensor, an op
 * with one output, and an executor for the graph run as a compiled program runs it: the layout
 * pass's executor plan made (backends/htp/compile/layout_pass.h), then followed. */
#ifndef EG_TEST_EXEC_H
#define EG_TEST_EXEC_H

#include "backends/htp/executor.h"
#include "backends/htp/compile/layout_pass.h"
#include "util/error.h"

/* A FLOAT_32 tensor; `data` (STATIC only, else NULL) is kept by pointer. */
static inline int32_t eg_test_f32(eg_htp_qnn_graph *g, const char *name,
                                  eg_htp_qnn_tensor_type type, int rank, const uint32_t *dims,
                                  const float *data) {
  size_t n = sizeof(float);
  for (int i = 0; i < rank; i++) n *= dims[i];
  const eg_htp_qnn_tensor_desc d = {.name = name, .type = type, .dtype = EG_HTP_QNN_DTYPE_FLOAT_32,
                                .rank = rank, .dims = dims, .data = data,
                                .nbytes = data ? n : 0, .key = EG_HTP_QNN_KEY_NONE};
  int32_t id = -1;
  EG_CHECK_MSG(eg_htp_qnn_graph_add_tensor(g, &d, &id) == EG_OK, "%s: %s", name, eg_last_error());
  return id;
}

/* Op `type` named `name` reading in[0 .. n_in), writing `out`. */
static inline void eg_test_op(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_op type, int n_in,
                              const int32_t *in, int32_t out, int n_params,
                              const eg_htp_qnn_param *params) {
  const eg_htp_qnn_op_desc d = {.name = name, .type = type, .n_inputs = n_in, .inputs = in,
                            .n_outputs = 1, .outputs = &out, .n_params = n_params,
                            .params = params};
  EG_CHECK_MSG(eg_htp_qnn_graph_add_op(g, &d, NULL) == EG_OK, "op %s: %s", name, eg_last_error());
}

static inline eg_status eg_test_executor(const eg_htp_qnn_graph *g, eg_precision precision,
                                         bool shared, eg_htp_qnn_executor **out) {
  eg_htp_exec_plan xp = {0};
  eg_status s = eg_htp_layout_pass(g, &xp);
  if (s == EG_OK) s = eg_htp_qnn_executor_create_plan(g, &xp, precision, shared, out);
  eg_htp_exec_plan_free(&xp);
  return s;
}

#endif
