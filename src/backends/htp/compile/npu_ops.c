/* npu_ops.c — the op -> NPU builder table (see npu_ops.h).
 *
 * Every op of ops.def has a row here, in the same order and families; the array is sized by its
 * designated entries and a _Static_assert ties it to EG_OP_COUNT, so an op added at the end of
 * ops.def without a row here fails to compile (one added in the middle defaults to NULL, which
 * is the safe answer: "no NPU lowering").
 *
 * A row is NO_LOWERING where no builder exists (the partitioner then places the node on the CPU
 * with the reason "no NPU lowering for aten.X"), else `&eg_htp_builder_<id>` — defined in a file
 * of src/backends/htp/compile/builders/ and declared in npu_ops.h. */
#include <stddef.h>

#include "backends/htp/compile/npu_ops.h"

#define NO_LOWERING NULL

const eg_htp_builder *const eg_htp_builders[] = {
    /* tuples: never consulted — a getitem takes its producer's placement (partition.c) */
    [EG_OP_getitem] = NO_LOWERING,

    /* convolution (src/ops/conv.c) */
    [EG_OP_convolution] = &eg_htp_builder_convolution,
    [EG_OP_convolution_backward] = &eg_htp_builder_convolution_backward,

    /* matrix products (src/ops/matmul.c) */
    [EG_OP_mm] = &eg_htp_builder_mm,
    [EG_OP_addmm] = &eg_htp_builder_addmm,
    [EG_OP_bmm] = &eg_htp_builder_bmm,
    [EG_OP_mv] = NO_LOWERING,
    [EG_OP_dot] = NO_LOWERING,

    /* attention (src/ops/attention.c) */
    [EG_OP_sdpa_flash] = &eg_htp_builder_sdpa_flash,
    [EG_OP_sdpa_flash_backward] = &eg_htp_builder_sdpa_flash_backward,
    [EG_OP__safe_softmax] = &eg_htp_builder__safe_softmax,

    /* shape and copies (src/ops/shape.c) */
    [EG_OP_t] = &eg_htp_builder_t,
    [EG_OP_view] = &eg_htp_builder_view,
    [EG_OP__unsafe_view] = &eg_htp_builder__unsafe_view,
    [EG_OP__reshape_alias] = &eg_htp_builder__reshape_alias,
    [EG_OP_reshape] = &eg_htp_builder_reshape,
    [EG_OP_permute] = &eg_htp_builder_permute,
    [EG_OP_transpose_int] = &eg_htp_builder_transpose_int,
    [EG_OP_expand] = &eg_htp_builder_expand,
    [EG_OP_detach] = &eg_htp_builder_detach,
    [EG_OP_alias] = &eg_htp_builder_alias,
    [EG_OP_lift_fresh_copy] = &eg_htp_builder_lift_fresh_copy,
    [EG_OP_clone] = &eg_htp_builder_clone,
    [EG_OP__to_copy] = &eg_htp_builder__to_copy,

    /* creation (src/ops/shape.c) */
    [EG_OP_ones_like] = NO_LOWERING,
    [EG_OP_zeros_like] = NO_LOWERING,
    [EG_OP_full] = NO_LOWERING,
    [EG_OP_scalar_tensor] = NO_LOWERING,

    /* elementwise (src/ops/elementwise.c) */
    [EG_OP_relu] = &eg_htp_builder_relu,
    [EG_OP_threshold_backward] = &eg_htp_builder_threshold_backward,
    [EG_OP_add_Tensor] = &eg_htp_builder_add_Tensor,
    [EG_OP_add_Scalar] = &eg_htp_builder_add_Scalar,
    [EG_OP_sub_Tensor] = &eg_htp_builder_sub_Tensor,
    [EG_OP_sub_Scalar] = &eg_htp_builder_sub_Scalar,
    [EG_OP_rsub_Scalar] = &eg_htp_builder_rsub_Scalar,
    [EG_OP_rsub_Tensor] = NO_LOWERING,
    [EG_OP_mul_Tensor] = &eg_htp_builder_mul_Tensor,
    [EG_OP_mul_Scalar] = &eg_htp_builder_mul_Scalar,
    [EG_OP_div_Tensor] = &eg_htp_builder_div_Tensor,
    [EG_OP_div_Tensor_mode] = &eg_htp_builder_div_Tensor_mode,
    [EG_OP_div_Scalar] = &eg_htp_builder_div_Scalar,
    [EG_OP_div_Scalar_mode] = NO_LOWERING,
    [EG_OP_neg] = &eg_htp_builder_neg,
    [EG_OP_where_self] = NO_LOWERING,

    /* reductions (src/ops/reduce.c) */
    [EG_OP_sum_default] = &eg_htp_builder_sum_default,
    [EG_OP_sum_dim_IntList] = &eg_htp_builder_sum_dim_IntList,
    [EG_OP_mean_default] = &eg_htp_builder_mean_default,
    [EG_OP_mean_dim] = &eg_htp_builder_mean_dim,

    /* softmax and losses (src/ops/loss.c) */
    [EG_OP__log_softmax] = &eg_htp_builder__log_softmax,
    [EG_OP__log_softmax_backward_data] = &eg_htp_builder__log_softmax_backward_data,
    [EG_OP__softmax] = &eg_htp_builder__softmax,
    [EG_OP__softmax_backward_data] = &eg_htp_builder__softmax_backward_data,
    [EG_OP_nll_loss_forward] = &eg_htp_builder_nll_loss_forward,
    [EG_OP_nll_loss_backward] = &eg_htp_builder_nll_loss_backward,
    [EG_OP_nll_loss2d_forward] = &eg_htp_builder_nll_loss2d_forward,
    [EG_OP_nll_loss2d_backward] = &eg_htp_builder_nll_loss2d_backward,
    [EG_OP_mse_loss] = NO_LOWERING,
    [EG_OP_mse_loss_backward] = NO_LOWERING,

    /* normalisation (src/ops/norm.c) */
    [EG_OP_native_batch_norm] = &eg_htp_builder_native_batch_norm,
    [EG_OP_native_batch_norm_backward] = &eg_htp_builder_native_batch_norm_backward,
    [EG_OP__native_batch_norm_legit_functional] = NO_LOWERING,
    [EG_OP__native_batch_norm_legit_no_training] =
        &eg_htp_builder__native_batch_norm_legit_no_training,
    [EG_OP__native_batch_norm_legit] = &eg_htp_builder__native_batch_norm_legit,
    [EG_OP__native_batch_norm_legit_no_stats] = NO_LOWERING,
    [EG_OP_native_group_norm] = &eg_htp_builder_native_group_norm,
    [EG_OP_native_group_norm_backward] = NO_LOWERING,
    [EG_OP_native_layer_norm] = &eg_htp_builder_native_layer_norm,
    [EG_OP_native_layer_norm_backward] = &eg_htp_builder_native_layer_norm_backward,

    /* pooling (src/ops/pool.c) */
    [EG_OP_max_pool2d_with_indices] = &eg_htp_builder_max_pool2d_with_indices,
    [EG_OP_max_pool2d_with_indices_backward] = &eg_htp_builder_max_pool2d_with_indices_backward,
    [EG_OP_avg_pool2d] = &eg_htp_builder_avg_pool2d,
    [EG_OP_avg_pool2d_backward] = &eg_htp_builder_avg_pool2d_backward,
    [EG_OP__adaptive_avg_pool2d] = &eg_htp_builder__adaptive_avg_pool2d,
    [EG_OP__adaptive_avg_pool2d_backward] = &eg_htp_builder__adaptive_avg_pool2d_backward,
    [EG_OP_adaptive_max_pool2d] = NO_LOWERING,
    [EG_OP_adaptive_max_pool2d_backward] = NO_LOWERING,

    /* upsampling (src/ops/resize.c) */
    [EG_OP_upsample_bilinear2d] = &eg_htp_builder_upsample_bilinear2d,
    [EG_OP_upsample_bilinear2d_vec] = &eg_htp_builder_upsample_bilinear2d_vec,
    [EG_OP_upsample_bilinear2d_backward] = &eg_htp_builder_upsample_bilinear2d_backward,
    [EG_OP_upsample_bilinear2d_backward_vec] = &eg_htp_builder_upsample_bilinear2d_backward_vec,
    [EG_OP_upsample_nearest2d] = &eg_htp_builder_upsample_nearest2d,
    [EG_OP_upsample_nearest2d_vec] = &eg_htp_builder_upsample_nearest2d_vec,
    [EG_OP_upsample_nearest2d_backward] = &eg_htp_builder_upsample_nearest2d_backward,
    [EG_OP_upsample_nearest2d_backward_vec] = &eg_htp_builder_upsample_nearest2d_backward_vec,

    /* activations (src/ops/activation.c) */
    [EG_OP_hardtanh] = &eg_htp_builder_hardtanh,
    [EG_OP_hardtanh_backward] = &eg_htp_builder_hardtanh_backward,
    [EG_OP_sigmoid] = &eg_htp_builder_sigmoid,
    [EG_OP_sigmoid_backward] = &eg_htp_builder_sigmoid_backward,
    [EG_OP_tanh] = &eg_htp_builder_tanh,
    [EG_OP_tanh_backward] = &eg_htp_builder_tanh_backward,
    [EG_OP_silu] = &eg_htp_builder_silu,
    [EG_OP_silu_backward] = &eg_htp_builder_silu_backward,
    [EG_OP_hardswish] = &eg_htp_builder_hardswish,
    [EG_OP_hardswish_backward] = &eg_htp_builder_hardswish_backward,
    [EG_OP_hardsigmoid] = &eg_htp_builder_hardsigmoid,
    [EG_OP_hardsigmoid_backward] = &eg_htp_builder_hardsigmoid_backward,
    [EG_OP_gelu] = &eg_htp_builder_gelu,
    [EG_OP_gelu_backward] = &eg_htp_builder_gelu_backward,
    [EG_OP_clamp] = &eg_htp_builder_clamp,
    [EG_OP_clamp_min] = NO_LOWERING,
    [EG_OP_clamp_max] = NO_LOWERING,

    /* joining, slicing and creation (src/ops/tensor.c) */
    [EG_OP_cat] = &eg_htp_builder_cat,
    [EG_OP_stack] = &eg_htp_builder_stack,
    [EG_OP_split_Tensor] = &eg_htp_builder_split_Tensor,
    [EG_OP_split_with_sizes] = &eg_htp_builder_split_with_sizes,
    [EG_OP_slice_Tensor] = &eg_htp_builder_slice_Tensor,
    [EG_OP_slice_backward] = &eg_htp_builder_slice_backward,
    [EG_OP_constant_pad_nd] = &eg_htp_builder_constant_pad_nd,
    [EG_OP_select_int] = &eg_htp_builder_select_int,
    [EG_OP_select_backward] = &eg_htp_builder_select_backward,
    [EG_OP_squeeze_dim] = NO_LOWERING,
    [EG_OP_squeeze_default] = NO_LOWERING,
    [EG_OP_unsqueeze] = NO_LOWERING,
    [EG_OP_repeat] = NO_LOWERING,
    [EG_OP_empty_memory_format] = NO_LOWERING,
    [EG_OP_empty_like] = NO_LOWERING,
    [EG_OP_fill_Scalar] = NO_LOWERING,
    [EG_OP_new_zeros] = NO_LOWERING,
};
_Static_assert(sizeof eg_htp_builders / sizeof eg_htp_builders[0] == EG_OP_COUNT,
               "ops.def and the NPU builder table disagree: give every op a row");
