/* builders.h — what every NPU builder file includes: the builder struct
 * (backends/htp/compile/npu_ops.h), the lowering context (backends/htp/compile/lower.h) and small
 * argument helpers.
 *
 * A builder file opens with its mappings and constraints; each builder is a const
 * eg_htp_builder named eg_htp_builder_<op id>, declared in backends/htp/compile/npu_ops.h and
 * registered in backends/htp/compile/npu_ops.c. supports() gets nodes that passed the generic gates
 * (float on an fp16-capable V69+ target, arch, skip lists) and only checks what its lowering needs;
 * lower() may assume supports() said yes. */
#ifndef EG_BACKENDS_HTP_BUILDERS_H
#define EG_BACKENDS_HTP_BUILDERS_H

#include "backends/htp/compile/lower.h"
#include "backends/htp/compile/npu_ops.h"
#include "util/error.h"

/* Value id of tensor argument pos/kw, or -1 when missing or None. */
static inline int32_t eg_htp_arg(const eg_node *n, int pos, const char *kw) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  return a && a->kind == EG_ARG_VALUE ? a->value : -1;
}

/* The tensor value of argument pos/kw, or NULL. */
static inline const eg_value *eg_htp_arg_value(const eg_graph *g, const eg_node *n, int pos,
                                               const char *kw) {
  int32_t id = eg_htp_arg(n, pos, kw);
  return id >= 0 && g->values[id].kind == EG_VALUE_TENSOR ? &g->values[id] : NULL;
}

/* Value `id` can be an NPU tensor of a float lowering: float32 (int64: "the NPU has no int64")
 * and non-empty (QNN dims are >= 1). On false, one sentence in reason. */
bool eg_htp_float_tensor_ok(const eg_graph *g, int32_t id, char *reason, size_t size);
/* Argument `self` (#0) and the node's output both pass eg_htp_float_tensor_ok. */
bool eg_htp_self_and_result_ok(const eg_graph *g, const eg_node *n, char *reason, size_t size);
/* Value `id` can be an NPU tensor of a lowering that only moves elements (Reshape, Transpose,
 * Concat, an alias): as eg_htp_float_tensor_ok, or int64 — held as INT_32 inside the NPU graph
 * (pass i64_to_i32), so a static's elements must fit int32. */
bool eg_htp_move_tensor_ok(const eg_graph *g, int32_t id, char *reason, size_t size);
/* Argument `self` and the node's output pass eg_htp_move_tensor_ok and have one dtype. */
bool eg_htp_self_and_result_move_ok(const eg_graph *g, const eg_node *n, char *reason,
                                    size_t size);
/* The n values of attribute `what` (a stride, padding, dilation or kernel size list) fit the
 * UINT_32 params QNN takes them as, so the lowering never truncates one. On false, one sentence
 * in reason ("stride 4294967297 exceeds QNN's 32-bit params (at most 4294967295)"). */
bool eg_htp_u32_params_ok(const char *what, const int64_t *v, int n, char *reason, size_t size);

/* A separable linear map of an NHWC tensor's H and W (resize's interpolation, the average
 * pools' backward spreading): QNN tensor `in` [N, H, W, C] (dims `from`) becomes the graph
 * value out_value [N, h_to, w_to, C] by
 *   columns  MatMul(cols [w_to, W] STATIC, in)                  -> [N, H, w_to, C]
 *            (QNN MatMul's batch dims broadcast: cols applies to every [W, C] slice)
 *   rows     Reshape [N, H, w_to * C] + MatMul(rows [h_to, H] STATIC, .) -> [N, h_to, w_to * C]
 *            + Reshape to [N, h_to, w_to, C].
 * cols or rows -1 leaves that step out (w_to == W, or h_to == H); not both. */
/* The map's rows hold W * C of NCHW value y (the result) as one QNN dim: it must fit 32 bits.
 * On false, one sentence in reason. */
bool eg_htp_separable_rows_fit(const eg_value *y, char *reason, size_t size);
eg_status eg_htp_separable_map(eg_htp_lower *L, int32_t in, const uint32_t from[4],
                               uint32_t h_to, uint32_t w_to, int32_t cols, int32_t rows,
                               int32_t out_value);
/* The same into QNN tensor `out` [N, h_to, w_to, C] the caller made (a temp of a composite:
 * conv.c's dilated filter). */
eg_status eg_htp_separable_map_into(eg_htp_lower *L, int32_t in, const uint32_t from[4],
                                    uint32_t h_to, uint32_t w_to, int32_t cols, int32_t rows,
                                    int32_t out);

/* A softmax backward's operands along one dim (softmax's and log-softmax's): grad_output (#0)
 * and output (#1) as QNN tensors in grad_output's axis order, with the result in that order too;
 * the QNN axis of `dim` (#2); grad_output's dims and the same with the axis reduced to 1. */
typedef struct eg_htp_softmax_bwd {
  int32_t gy, y;  /* QNN tensor ids */
  uint32_t axis;
  int rank;
  uint32_t dims[EG_MAX_RANK], line_dims[EG_MAX_RANK];
} eg_htp_softmax_bwd;
/* The supports test of both: grad_output and output float32 tensors, grad_output of rank >= 1
 * (ReduceSum needs an axis). */
bool eg_htp_softmax_bwd_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                 char *reason, size_t size);
eg_status eg_htp_softmax_bwd_begin(eg_htp_lower *L, const eg_graph *g, const eg_node *n,
                                   eg_htp_softmax_bwd *s);
/* ReduceSum of QNN tensor `in` along s->axis, keeping it (1 wide), into a new temp *out. */
eg_status eg_htp_softmax_bwd_line_sum(eg_htp_lower *L, const eg_htp_softmax_bwd *s, int32_t in,
                                      int32_t *out);

#endif
