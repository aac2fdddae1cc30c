/* npu_ops.h — which graph ops the NPU (HTP) backend can lower, and what each lowering needs.
 *
 * One const table, eg_htp_builders, indexed by eg_op: entry `op` is the builder that lowers
 * nodes of that op into the QNN-modelled NPU graph, or NULL when no lowering exists. A builder
 * states its requirements as data (the lowest HTP generation its QNN ops run on) and may decline
 * an individual node with a reason (e.g. "group 2 > 1: TransposeConv2d lowering needs group 1").
 *
 * Contract with the partitioner (partition.c), which consults this table in a fixed order:
 *   1. no builder                       -> CPU, "no NPU lowering for aten.X"
 *   2. float tensors on a target without the FLOAT feature
 *                                       -> CPU, "float ops need HTP V69+ with fp16; ..."
 *   3. target HTP arch < min_htp_arch   -> CPU, "aten.X needs HTP V73+; SM8450 is V69"
 *   4. a tensor dim above UINT32_MAX    -> CPU, "dimension 8589934592 of x exceeds QNN's 32-bit
 *                                          dims (at most 4294967295)"
 *   5. user skip lists (--skip-op, --skip-node)
 *   6. builder->supports() says no      -> CPU, the builder's reason
 * So a builder is only ever offered nodes that already pass the generic gates: supports() never
 * sees a float node on V68 or on a part whose QNN rejects fp16, needs no arch checks of its
 * own beyond what min_htp_arch expresses, and every dim of the node's tensors fits a uint32.
 *
 * Registering a builder: define a `const eg_htp_builder eg_htp_builder_<id>` in its file under
 * src/backends/htp/compile/builders/ (one per ATen op family), declare it below, and replace the
 * op's NO_LOWERING in npu_ops.c with its address. */
#ifndef EG_BACKENDS_HTP_NPU_OPS_H
#define EG_BACKENDS_HTP_NPU_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "ir/graph.h"
#include "target/targets.h"

/* The lowering context builders emit QNN ops through (src/backends/htp/compile/lower.h). */
typedef struct eg_htp_lower eg_htp_lower;

typedef struct eg_htp_builder {
  /* Its mapping, for messages and docs, e.g.
   * "aten.convolution_backward [T,F,F] -> Transpose + TransposeConv2d". */
  const char *mapping;
  /* The lowest HTP generation (68, 69, 73, ...) whose QNN ops this lowering uses; 0: any. */
  int min_htp_arch;
  /* Whether this builder can lower node `n` of `g` on target `t`. On false it writes one
   * sentence into reason[size] saying why (e.g. "dilation [2, 2]: TransposeConv2d lowering
   * needs dilation 1"); the partitioner shows it to the user verbatim. Must not modify
   * anything; only called for nodes that passed the generic gates (see above). */
  bool (*supports)(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                   size_t size);
  /* Emits the QNN ops for node `n` (already accepted by supports()) through `L`: tensors for
   * its arguments (eg_htp_input / eg_htp_filter), the tensors of the values it defines
   * (eg_htp_define), then the ops (eg_htp_op). Returns a status with a message on failure. */
  eg_status (*lower)(eg_htp_lower *L, const eg_graph *g, const eg_node *n);
} eg_htp_builder;

/* The builder of each op, NULL where no NPU lowering exists (today: every op). */
extern const eg_htp_builder *const eg_htp_builders[EG_OP_COUNT];

/* Builders defined by the backend (src/backends/htp/compile/builders/), by op id. */
extern const eg_htp_builder eg_htp_builder_relu;
extern const eg_htp_builder eg_htp_builder_hardtanh;
extern const eg_htp_builder eg_htp_builder_sigmoid;
extern const eg_htp_builder eg_htp_builder_tanh;
extern const eg_htp_builder eg_htp_builder_clamp;
extern const eg_htp_builder eg_htp_builder_hardswish;
extern const eg_htp_builder eg_htp_builder_hardsigmoid;
/* elementwise.c, pool.c, norm.c */
extern const eg_htp_builder eg_htp_builder_add_Tensor;
extern const eg_htp_builder eg_htp_builder_sub_Tensor;
extern const eg_htp_builder eg_htp_builder_add_Scalar;
extern const eg_htp_builder eg_htp_builder_sub_Scalar;
extern const eg_htp_builder eg_htp_builder_rsub_Scalar;
extern const eg_htp_builder eg_htp_builder_mul_Tensor;
extern const eg_htp_builder eg_htp_builder_mul_Scalar;
extern const eg_htp_builder eg_htp_builder_div_Tensor;
extern const eg_htp_builder eg_htp_builder_div_Tensor_mode;
extern const eg_htp_builder eg_htp_builder_div_Scalar;
extern const eg_htp_builder eg_htp_builder_neg;
extern const eg_htp_builder eg_htp_builder_threshold_backward;
extern const eg_htp_builder eg_htp_builder_hardtanh_backward;
extern const eg_htp_builder eg_htp_builder_hardswish_backward;
extern const eg_htp_builder eg_htp_builder_hardsigmoid_backward;
extern const eg_htp_builder eg_htp_builder_sigmoid_backward;
extern const eg_htp_builder eg_htp_builder_tanh_backward;
extern const eg_htp_builder eg_htp_builder_silu;
extern const eg_htp_builder eg_htp_builder_silu_backward;
extern const eg_htp_builder eg_htp_builder_max_pool2d_with_indices;
extern const eg_htp_builder eg_htp_builder_max_pool2d_with_indices_backward;
extern const eg_htp_builder eg_htp_builder_avg_pool2d;
extern const eg_htp_builder eg_htp_builder__adaptive_avg_pool2d;
extern const eg_htp_builder eg_htp_builder__adaptive_avg_pool2d_backward;
extern const eg_htp_builder eg_htp_builder_avg_pool2d_backward;
extern const eg_htp_builder eg_htp_builder_native_batch_norm;
extern const eg_htp_builder eg_htp_builder_native_batch_norm_backward;
extern const eg_htp_builder eg_htp_builder__native_batch_norm_legit_no_training;
extern const eg_htp_builder eg_htp_builder__native_batch_norm_legit;
extern const eg_htp_builder eg_htp_builder_native_group_norm;
/* layer_norm.c, gelu.c */
extern const eg_htp_builder eg_htp_builder_native_layer_norm;
extern const eg_htp_builder eg_htp_builder_native_layer_norm_backward;
extern const eg_htp_builder eg_htp_builder_gelu;
extern const eg_htp_builder eg_htp_builder_gelu_backward;
/* conv.c */
extern const eg_htp_builder eg_htp_builder_convolution;
extern const eg_htp_builder eg_htp_builder_convolution_backward;
extern const eg_htp_builder eg_htp_builder_constant_pad_nd;
/* matmul.c, shape.c, reduce.c */
extern const eg_htp_builder eg_htp_builder_mm;
extern const eg_htp_builder eg_htp_builder_addmm;
extern const eg_htp_builder eg_htp_builder_bmm;
extern const eg_htp_builder eg_htp_builder_t;
extern const eg_htp_builder eg_htp_builder_view;
extern const eg_htp_builder eg_htp_builder__unsafe_view;
extern const eg_htp_builder eg_htp_builder__reshape_alias;
extern const eg_htp_builder eg_htp_builder_reshape;
extern const eg_htp_builder eg_htp_builder_permute;
extern const eg_htp_builder eg_htp_builder_transpose_int;
extern const eg_htp_builder eg_htp_builder_expand;
extern const eg_htp_builder eg_htp_builder_detach;
extern const eg_htp_builder eg_htp_builder_alias;
extern const eg_htp_builder eg_htp_builder_lift_fresh_copy;
extern const eg_htp_builder eg_htp_builder_clone;
extern const eg_htp_builder eg_htp_builder__to_copy;
extern const eg_htp_builder eg_htp_builder_sum_default;
extern const eg_htp_builder eg_htp_builder_sum_dim_IntList;
extern const eg_htp_builder eg_htp_builder_mean_default;
extern const eg_htp_builder eg_htp_builder_mean_dim;
extern const eg_htp_builder eg_htp_builder__log_softmax;
/* loss.c */
extern const eg_htp_builder eg_htp_builder__log_softmax_backward_data;
extern const eg_htp_builder eg_htp_builder_nll_loss_forward;
extern const eg_htp_builder eg_htp_builder_nll_loss_backward;
extern const eg_htp_builder eg_htp_builder_nll_loss2d_forward;
extern const eg_htp_builder eg_htp_builder_nll_loss2d_backward;
/* attention.c */
extern const eg_htp_builder eg_htp_builder__softmax;
extern const eg_htp_builder eg_htp_builder__safe_softmax;
extern const eg_htp_builder eg_htp_builder__softmax_backward_data;
extern const eg_htp_builder eg_htp_builder_sdpa_flash;
extern const eg_htp_builder eg_htp_builder_sdpa_flash_backward;
extern const eg_htp_builder eg_htp_builder_cat;
extern const eg_htp_builder eg_htp_builder_slice_Tensor;
extern const eg_htp_builder eg_htp_builder_slice_backward;
extern const eg_htp_builder eg_htp_builder_select_int;
extern const eg_htp_builder eg_htp_builder_select_backward;
extern const eg_htp_builder eg_htp_builder_split_Tensor;
extern const eg_htp_builder eg_htp_builder_split_with_sizes;
extern const eg_htp_builder eg_htp_builder_stack;
/* resize.c */
extern const eg_htp_builder eg_htp_builder_upsample_bilinear2d;
extern const eg_htp_builder eg_htp_builder_upsample_bilinear2d_vec;
extern const eg_htp_builder eg_htp_builder_upsample_bilinear2d_backward;
extern const eg_htp_builder eg_htp_builder_upsample_bilinear2d_backward_vec;
extern const eg_htp_builder eg_htp_builder_upsample_nearest2d;
extern const eg_htp_builder eg_htp_builder_upsample_nearest2d_vec;
extern const eg_htp_builder eg_htp_builder_upsample_nearest2d_backward;
extern const eg_htp_builder eg_htp_builder_upsample_nearest2d_backward_vec;

#endif
