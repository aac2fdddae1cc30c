/* test_backend_ops.c — every NPU builder against the CPU op it replaces (as ggml's
 * test-backend-ops compares each backend with the CPU one).
 *
 * `cases` is one table: for each op with a builder (eg_htp_builders) at least one small graph —
 * the op under test, node "ut", plus a getitem where it returns a tuple — with realistic
 * conv-net shapes and, where the lowering needs them, frozen weights. One loop walks it; for
 * each case it proves:
 *   - SM8650 (V75): node "ut" is placed on the NPU (a builder declining its own case is a
 *     failure, with the reason), and every output of the compiled runtime (NPU partitions on
 *     the htp executor) equals the CPU runtime's on the same seeded inputs: floats within
 *     rtol 1e-4 / atol 1e-5 (compiled with EG_PRECISION_FP32, the executor computes in fp32
 *     like the CPU kernels; fp16 storage has tests of its own), other dtypes exactly;
 *   - SM8350 (V68, no float path): every float node but getitems is on the CPU with the reason
 *     "float ops need HTP V69+ ...", and the outputs equal the CPU runtime's (an int64 case,
 *     which only moves elements, may run on the NPU there too).
 * Coverage: an op with a builder and no case fails the test (naming the op's target), so a new
 * builder needs a row here. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_lower.h"
#include "backends/htp/compile/npu_ops.h"
#include "runtime/model.h"

/* ---- JSON snippets ---- */

/* The node under test: always named "ut". */
#define UTK(target, args, kwargs, out) "{\"name\": \"ut\", \"target\": \"" target \
                                       "\", \"args\": " args ", \"kwargs\": " kwargs   \
                                       ", \"output\": " #out "}"
#define UT(target, args, out) UTK(target, args, "{}", out)

/* ---- the cases ---- */

/* A frozen weight: numel floats, uniform in [lo, hi) from the case's seed. */
typedef struct bo_static {
  const char *name, *shape;
  int numel;
  float lo, hi;
} bo_static;

/* One case: the op under test, a name (also its files' name), the contents of the graph JSON's
 * "values", "inputs", "statics", "nodes" and "outputs" lists, and its frozen weights. */
typedef struct bo_case {
  eg_op op;
  const char *name;
  const char *values, *inputs, *statics, *nodes, *outputs;
  int n_st;
  bo_static st[4];
} bo_case;

/* A case without frozen weights. */
#define NO_ST 0, {{NULL, NULL, 0, 0, 0}}

/* Common graphs: one op of x [2,3,6,6] (or with a second operand y of the same shape) to z. */
#define X4 "[2, 3, 6, 6]"
#define UNARY(op, id, target, args)                                                         \
  {EG_OP_##op, id, T(0, X4) "," T(1, X4), IN("x", 0), "", UT(target, args, 1), IN("z", 1), NO_ST}
#define BINARY(op, id, target, args)                                                        \
  {EG_OP_##op, id, T(0, X4) "," T(1, X4) "," T(2, X4), IN("x", 0) "," IN("y", 1), "",       \
   UT(target, args, 2), IN("z", 2), NO_ST}
/* An op of x (shape `in`) giving z (shape `out`). */
#define SHAPED(op, id, in, out, target, args)                                               \
  {EG_OP_##op, id, T(0, in) "," T(1, out), IN("x", 0), "", UT(target, args, 1), IN("z", 1), NO_ST}

/* Batch norm in eval with static w, b, running mean and var [3] (var in [0.25, 1.5)): tuple 5
 * (out, [0]-shaped save_mean / save_invstd) -> getitem 0. */
#define BN_VALUES T(0, X4) "," T(1, "[3]") "," T(2, "[3]") "," T(3, "[3]") "," T(4, "[3]") "," \
                  TUPLE(5, "[6, 7, 8]") "," T(6, X4) "," T(7, "[0]") "," T(8, "[0]") "," T(9, X4)
#define BN_STATICS IN("w", 1) "," IN("b", 2) "," IN("m", 3) "," IN("v", 4)
#define BN_ST                                                                               \
  4, {{"w", "[3]", 3, 0.5f, 1.5f}, {"b", "[3]", 3, -1, 1}, {"m", "[3]", 3, -1, 1},          \
      {"v", "[3]", 3, 0.25f, 1.5f}}
#define BN(op, id, target, args)                                                            \
  {EG_OP_##op, id, BN_VALUES, IN("x", 0), BN_STATICS,                                       \
   UT(target, args, 5) "," GETITEM("getitem", 5, 0, 9), IN("z", 9), BN_ST}
#define BN_ARGS V(0) ", " V(1) ", " V(2) ", " V(3) ", " V(4)

/* convolution(x, static w [numel wn], no bias; `args` from stride on) -> z. */
#define CONV(id, x, w, wn, z, args)                                                         \
  {EG_OP_convolution, id, T(0, x) "," T(1, w) "," T(2, z), IN("x", 0), IN("w", 1),          \
   UT("aten.convolution.default", "[" V(0) ", " V(1) ", null, " args "]", 2), IN("z", 2),   \
   1, {{"w", w, wn, -1, 1}}}
/* convolution_backward(gy, x [2,3,6,6], static w [4,3,3,3]; stride, padding, dilation),
 * mask [True, False, False]: tuple 3 -> getitem 0. */
#define CONV_BWD(id, gy, stride) CONV_BWD_DIL(id, gy, stride, "[1, 1]", "[1, 1]")
#define CONV_BWD_DIL(id, gy, stride, padding, dilation)                                     \
  {EG_OP_convolution_backward, id, T(0, gy) "," T(1, X4) "," T(2, "[4, 3, 3, 3]") ","       \
   TUPLE(3, "[4, null, null]") "," T(4, X4) "," T(5, X4), IN("gy", 0) "," IN("x", 1),       \
   IN("w", 2),                                                                              \
   UT("aten.convolution_backward.default",                                                  \
      "[" V(0) ", " V(1) ", " V(2) ", [4], " stride ", " padding ", " dilation ", false, "  \
      "[0, 0], 1, "                                                                         \
      "[true, false, false]]", 3) "," GETITEM("getitem", 3, 0, 5),                          \
   IN("gx", 5), 1, {{"w", "[4, 3, 3, 3]", 108, -1, 1}}}

static const bo_case cases[] = {
    /* convolution: plain (static weight, bias), depthwise, transposed */
    {EG_OP_convolution, "conv", T(0, X4) "," T(1, "[4, 3, 3, 3]") "," T(2, "[4]") ","
     T(3, "[2, 4, 6, 6]"), IN("x", 0), IN("w", 1) "," IN("b", 2),
     UT("aten.convolution.default",
        "[" V(0) ", " V(1) ", " V(2) ", [1, 1], [1, 1], [1, 1], false, [0, 0], 1]", 3),
     IN("z", 3), 2, {{"w", "[4, 3, 3, 3]", 108, -1, 1}, {"b", "[4]", 4, -1, 1}}},
    CONV("conv_dw", X4, "[3, 1, 3, 3]", 27, "[2, 3, 3, 3]",
         "[2, 2], [1, 1], [1, 1], false, [0, 0], 3"),
    CONV("conv_t", "[2, 3, 3, 3]", "[3, 4, 3, 3]", 108, "[2, 4, 6, 6]",
         "[2, 2], [1, 1], [1, 1], true, [1, 1], 1"),
    /* convolution_backward [True, False, False], frozen weight: stride 1 and stride 2 (the
     * lowering derives output_padding 1) */
    CONV_BWD("conv_bwd", "[2, 4, 6, 6]", "[1, 1]"),
    CONV_BWD("conv_bwd_s2", "[2, 4, 3, 3]", "[2, 2]"),
    /* dilated: grad_input's TransposeConv2d with the dilated kernel (both dims, and H only) */
    CONV_BWD_DIL("conv_bwd_dil", "[2, 4, 6, 6]", "[1, 1]", "[2, 2]", "[2, 2]"),
    CONV_BWD_DIL("conv_bwd_dil_h", "[2, 4, 6, 6]", "[1, 1]", "[2, 1]", "[2, 1]"),

    /* matrix products */
    {EG_OP_mm, "mm", T(0, "[4, 5]") "," T(1, "[5, 3]") "," T(2, "[4, 3]"),
     IN("a", 0) "," IN("b", 1), "", UT("aten.mm.default", "[" V(0) ", " V(1) "]", 2), IN("z", 2),
     NO_ST},
    {EG_OP_addmm, "addmm", T(0, "[3]") "," T(1, "[4, 5]") "," T(2, "[5, 3]") "," T(3, "[4, 3]"),
     IN("s", 0) "," IN("a", 1) "," IN("b", 2), "",
     UT("aten.addmm.default", "[" V(0) ", " V(1) ", " V(2) "]", 3), IN("z", 3), NO_ST},
    {EG_OP_addmm, "addmm_scaled", T(0, "[4, 3]") "," T(1, "[4, 5]") "," T(2, "[5, 3]") ","
     T(3, "[4, 3]"), IN("s", 0) "," IN("a", 1) "," IN("b", 2), "",
     UTK("aten.addmm.default", "[" V(0) ", " V(1) ", " V(2) "]",
         "{\"beta\": " F(0.5) ", \"alpha\": 2}", 3), IN("z", 3), NO_ST},
    {EG_OP_bmm, "bmm", T(0, "[2, 4, 5]") "," T(1, "[2, 5, 3]") "," T(2, "[2, 4, 3]"),
     IN("a", 0) "," IN("b", 1), "", UT("aten.bmm.default", "[" V(0) ", " V(1) "]", 2),
     IN("z", 2), NO_ST},

    /* shape and copies */
    SHAPED(t, "t", "[4, 5]", "[5, 4]", "aten.t.default", "[" V(0) "]"),
    SHAPED(view, "view", "[2, 3, 4, 4]", "[2, 48]", "aten.view.default", "[" V(0) ", [2, 48]]"),
    SHAPED(_unsafe_view, "_unsafe_view", "[2, 3, 4, 4]", "[6, 16]", "aten._unsafe_view.default",
           "[" V(0) ", [6, 16]]"),
    SHAPED(_reshape_alias, "_reshape_alias", "[2, 3, 4, 4]", "[2, 48]",
           "aten._reshape_alias.default", "[" V(0) ", [2, 48], [48, 1]]"),
    SHAPED(reshape, "reshape", "[2, 48]", "[2, 3, 4, 4]", "aten.reshape.default",
           "[" V(0) ", [2, 3, 4, 4]]"),
    SHAPED(permute, "permute", "[2, 3, 4, 5]", "[2, 4, 5, 3]", "aten.permute.default",
           "[" V(0) ", [0, 2, 3, 1]]"),
    {EG_OP_permute, "permute_int64", TI(0, "[2, 3, 4, 5]") "," TI(1, "[2, 4, 5, 3]"), IN("x", 0),
     "", UT("aten.permute.default", "[" V(0) ", [0, 2, 3, 1]]", 1), IN("z", 1), NO_ST},
    SHAPED(transpose_int, "transpose", "[2, 3, 4]", "[2, 4, 3]", "aten.transpose.int",
           "[" V(0) ", 1, 2]"),
    SHAPED(expand, "expand", "[3, 4]", "[1, 3, 4]", "aten.expand.default",
           "[" V(0) ", [1, 3, 4]]"),
    UNARY(detach, "detach", "aten.detach.default", "[" V(0) "]"),
    UNARY(alias, "alias", "aten.alias.default", "[" V(0) "]"),
    UNARY(lift_fresh_copy, "lift_fresh_copy", "aten.lift_fresh_copy.default", "[" V(0) "]"),
    UNARY(clone, "clone", "aten.clone.default", "[" V(0) "]"),
    {EG_OP__to_copy, "_to_copy", T(0, X4) "," T(1, X4), IN("x", 0), "",
     UTK("aten._to_copy.default", "[" V(0) "]", "{\"dtype\": {\"dtype\": \"float32\"}}", 1),
     IN("z", 1), NO_ST},

    /* elementwise */
    UNARY(relu, "relu", "aten.relu.default", "[" V(0) "]"),
    BINARY(threshold_backward, "threshold_backward", "aten.threshold_backward.default",
           "[" V(0) ", " V(1) ", 0]"),
    BINARY(add_Tensor, "add", "aten.add.Tensor", "[" V(0) ", " V(1) "]"),
    {EG_OP_add_Tensor, "add_bcast_alpha", T(0, X4) "," T(1, "[3, 1, 1]") "," T(2, X4),
     IN("x", 0) "," IN("b", 1), "",
     UTK("aten.add.Tensor", "[" V(0) ", " V(1) "]", "{\"alpha\": 2}", 2), IN("z", 2), NO_ST},
    UNARY(add_Scalar, "add_Scalar", "aten.add.Scalar", "[" V(0) ", " F(1.5) "]"),
    BINARY(sub_Tensor, "sub", "aten.sub.Tensor", "[" V(0) ", " V(1) "]"),
    UNARY(sub_Scalar, "sub_Scalar", "aten.sub.Scalar", "[" V(0) ", " F(1.5) ", 2]"),
    UNARY(rsub_Scalar, "rsub_Scalar", "aten.rsub.Scalar", "[" V(0) ", 3, " F(0.5) "]"),
    BINARY(mul_Tensor, "mul", "aten.mul.Tensor", "[" V(0) ", " V(1) "]"),
    UNARY(mul_Scalar, "mul_Scalar", "aten.mul.Scalar", "[" V(0) ", " F(0.25) "]"),
    BINARY(div_Tensor, "div", "aten.div.Tensor", "[" V(0) ", " V(1) "]"),
    {EG_OP_div_Tensor_mode, "div_mode", T(0, X4) "," T(1, X4) "," T(2, X4),
     IN("x", 0) "," IN("y", 1), "",
     UTK("aten.div.Tensor_mode", "[" V(0) ", " V(1) "]", "{\"rounding_mode\": null}", 2),
     IN("z", 2), NO_ST},
    UNARY(div_Scalar, "div_Scalar", "aten.div.Scalar", "[" V(0) ", 4]"),
    UNARY(neg, "neg", "aten.neg.default", "[" V(0) "]"),

    /* reductions and log-softmax */
    SHAPED(sum_default, "sum", X4, "[]", "aten.sum.default", "[" V(0) "]"),
    SHAPED(sum_dim_IntList, "sum_dim", X4, "[2, 3, 1, 1]", "aten.sum.dim_IntList",
           "[" V(0) ", [2, 3], true]"),
    SHAPED(sum_dim_IntList, "sum_dim_batch", X4, "[3, 6, 6]", "aten.sum.dim_IntList",
           "[" V(0) ", [0]]"),
    SHAPED(mean_default, "mean", X4, "[]", "aten.mean.default", "[" V(0) "]"),
    SHAPED(mean_dim, "mean_dim", X4, "[2, 3]", "aten.mean.dim", "[" V(0) ", [-1, -2]]"),
    SHAPED(_log_softmax, "log_softmax", "[4, 10]", "[4, 10]", "aten._log_softmax.default",
           "[" V(0) ", 1, false]"),
    SHAPED(expand, "expand_broadcast", "[2, 3, 1, 1]", X4, "aten.expand.default",
           "[" V(0) ", [2, 3, 6, 6]]"),
    /* constant padding: the last two dims with a fill; the channels with a crop of H (a
     * padding's backward crops); a crop alone */
    SHAPED(constant_pad_nd, "constant_pad_nd", X4, "[2, 3, 9, 7]",
           "aten.constant_pad_nd.default", "[" V(0) ", [1, 0, 2, 1], " F(-1.5) "]"),
    SHAPED(constant_pad_nd, "constant_pad_nd_crop", X4, "[2, 5, 3, 7]",
           "aten.constant_pad_nd.default", "[" V(0) ", [0, 1, -2, -1, 1, 1]]"),
    SHAPED(constant_pad_nd, "constant_pad_nd_crop_only", X4, "[2, 3, 6, 4]",
           "aten.constant_pad_nd.default", "[" V(0) ", [-1, -1]]"),

    /* upsampling: fractional ratios, scales, both align_corners */
    SHAPED(upsample_bilinear2d, "upsample_bilinear2d", X4, "[2, 3, 9, 13]",
           "aten.upsample_bilinear2d.default", "[" V(0) ", [9, 13], false]"),
    SHAPED(upsample_bilinear2d_vec, "upsample_bilinear2d_vec", X4, "[2, 3, 12, 9]",
           "aten.upsample_bilinear2d.vec", "[" V(0) ", null, true, [" F(2.0) ", " F(1.5) "]]"),
    SHAPED(upsample_bilinear2d_backward, "upsample_bilinear2d_backward", "[2, 3, 9, 4]", X4,
           "aten.upsample_bilinear2d_backward.default",
           "[" V(0) ", [9, 4], [2, 3, 6, 6], true]"),
    SHAPED(upsample_bilinear2d_backward_vec, "upsample_bilinear2d_backward_vec",
           "[2, 3, 12, 9]", X4, "aten.upsample_bilinear2d_backward.vec",
           "[" V(0) ", null, [2, 3, 6, 6], false, [" F(2.0) ", " F(1.5) "]]"),
    SHAPED(upsample_nearest2d, "upsample_nearest2d", X4, "[2, 3, 4, 13]",
           "aten.upsample_nearest2d.default", "[" V(0) ", [4, 13]]"),
    SHAPED(upsample_nearest2d_vec, "upsample_nearest2d_vec", X4, "[2, 3, 12, 9]",
           "aten.upsample_nearest2d.vec", "[" V(0) ", null, [" F(2.0) ", " F(1.5) "]]"),
    SHAPED(upsample_nearest2d_backward, "upsample_nearest2d_backward", "[2, 3, 4, 13]", X4,
           "aten.upsample_nearest2d_backward.default", "[" V(0) ", [4, 13], [2, 3, 6, 6]]"),
    SHAPED(upsample_nearest2d_backward_vec, "upsample_nearest2d_backward_vec", "[2, 3, 12, 9]",
           X4, "aten.upsample_nearest2d_backward.vec",
           "[" V(0) ", null, [2, 3, 6, 6], [" F(2.0) ", " F(1.5) "]]"),

    /* the loss end: targets in [-1, 10) (set_inputs), -1 the ignore_index */
    {EG_OP__log_softmax_backward_data, "log_softmax_backward", T(0, "[4, 10]") ","
     T(1, "[4, 10]") "," T(2, "[4, 10]"), IN("g", 0) "," IN("y", 1), "",
     UT("aten._log_softmax_backward_data.default",
        "[" V(0) ", " V(1) ", 1, {\"dtype\": \"float32\"}]", 2), IN("z", 2), NO_ST},
    {EG_OP_nll_loss_forward, "nll_loss_forward", T(0, "[6, 10]") "," TI(1, "[6]") ","
     TUPLE(2, "[3, 4]") "," T(3, "[]") "," T(4, "[]") "," T(5, "[]") "," T(6, "[]"),
     IN("x", 0) "," IN("target", 1), "",
     UT("aten.nll_loss_forward.default", "[" V(0) ", " V(1) ", null, 1, -1]", 2) ","
     GETITEM("getitem", 2, 0, 5) "," GETITEM("getitem_1", 2, 1, 6),
     IN("loss", 5) "," IN("total_weight", 6), NO_ST},
    {EG_OP_nll_loss_backward, "nll_loss_backward", T(0, "[]") "," T(1, "[6, 10]") ","
     TI(2, "[6]") "," T(3, "[]") "," T(4, "[6, 10]"),
     IN("gy", 0) "," IN("x", 1) "," IN("target", 2) "," IN("total_weight", 3), "",
     UT("aten.nll_loss_backward.default",
        "[" V(0) ", " V(1) ", " V(2) ", null, 2, -1, " V(3) "]", 4), IN("gx", 4), NO_ST},
    /* a segmentation net's per-pixel form: scores [N, C, H, W], targets [N, H, W] */
    {EG_OP_nll_loss2d_forward, "nll_loss2d_forward", T(0, "[2, 10, 3, 4]") ","
     TI(1, "[2, 3, 4]") "," TUPLE(2, "[3, 4]") "," T(3, "[]") "," T(4, "[]") "," T(5, "[]") ","
     T(6, "[]"), IN("x", 0) "," IN("target", 1), "",
     UT("aten.nll_loss2d_forward.default", "[" V(0) ", " V(1) ", null, 1, -1]", 2) ","
     GETITEM("getitem", 2, 0, 5) "," GETITEM("getitem_1", 2, 1, 6),
     IN("loss", 5) "," IN("total_weight", 6), NO_ST},
    {EG_OP_nll_loss2d_backward, "nll_loss2d_backward", T(0, "[]") "," T(1, "[2, 10, 3, 4]") ","
     TI(2, "[2, 3, 4]") "," T(3, "[]") "," T(4, "[2, 10, 3, 4]"),
     IN("gy", 0) "," IN("x", 1) "," IN("target", 2) "," IN("total_weight", 3), "",
     UT("aten.nll_loss2d_backward.default",
        "[" V(0) ", " V(1) ", " V(2) ", null, 1, -1, " V(3) "]", 4), IN("gx", 4), NO_ST},

    /* normalisation */
    BN(native_batch_norm, "batch_norm", "aten.native_batch_norm.default",
       "[" BN_ARGS ", false, " F(0.1) ", " F(1e-05) "]"),
    BN(_native_batch_norm_legit_no_training, "bn_legit_no_training",
       "aten._native_batch_norm_legit_no_training.default",
       "[" BN_ARGS ", " F(0.1) ", " F(0.001) "]"),
    BN(_native_batch_norm_legit, "bn_legit", "aten._native_batch_norm_legit.default",
       "[" BN_ARGS ", false, " F(0.1) ", " F(1e-05) "]"),
    /* batch statistics: runtime w, b; every element read */
    {EG_OP_native_batch_norm, "batch_norm_train", T(0, X4) "," T(1, "[3]") "," T(2, "[3]") ","
     T(3, "[3]") "," T(4, "[3]") "," TUPLE(5, "[6, 7, 8]") "," T(6, X4) "," T(7, "[3]") ","
     T(8, "[3]") "," T(9, X4) "," T(10, "[3]") "," T(11, "[3]"),
     IN("x", 0) "," IN("w", 1) "," IN("b", 2), IN("m", 3) "," IN("v", 4),
     UT("aten.native_batch_norm.default", "[" BN_ARGS ", true, " F(0.1) ", " F(1e-05) "]", 5)
     "," GETITEM("getitem", 5, 0, 9) "," GETITEM("getitem_1", 5, 1, 10) ","
     GETITEM("getitem_2", 5, 2, 11),
     IN("z", 9) "," IN("mean", 10) "," IN("invstd", 11),
     2, {{"m", "[3]", 3, -1, 1}, {"v", "[3]", 3, 0.25f, 1.5f}}},
    {EG_OP_native_batch_norm_backward, "batch_norm_backward", T(0, X4) "," T(1, X4) ","
     T(2, "[3]") "," T(3, "[3]") "," T(4, "[3]") "," T(5, "[3]") "," T(6, "[3]") ","
     TUPLE(7, "[8, 9, 10]") "," T(8, X4) "," T(9, "[3]") "," T(10, "[3]") "," T(11, X4) ","
     T(12, "[3]") "," T(13, "[3]"),
     IN("g", 0) "," IN("x", 1) "," IN("w", 2) "," IN("save_mean", 5) "," IN("save_invstd", 6),
     IN("m", 3) "," IN("v", 4),
     UT("aten.native_batch_norm_backward.default",
        "[" V(0) ", " V(1) ", " V(2) ", " V(3) ", " V(4) ", " V(5) ", " V(6) ", true, "
        F(1e-05) ", [true, true, true]]", 7)
     "," GETITEM("getitem", 7, 0, 11) "," GETITEM("getitem_1", 7, 1, 12) ","
     GETITEM("getitem_2", 7, 2, 13),
     IN("gx", 11) "," IN("gw", 12) "," IN("gb", 13),
     2, {{"m", "[3]", 3, -1, 1}, {"v", "[3]", 3, 0.25f, 1.5f}}},
    {EG_OP_native_group_norm, "group_norm", T(0, "[2, 4, 3, 3]") "," T(1, "[4]") "," T(2, "[4]")
     "," TUPLE(3, "[4, 5, 6]") "," T(4, "[2, 4, 3, 3]") "," T(5, "[2, 2]") "," T(6, "[2, 2]") ","
     T(7, "[2, 4, 3, 3]"), IN("x", 0) "," IN("w", 1) "," IN("b", 2), "",
     UT("aten.native_group_norm.default",
        "[" V(0) ", " V(1) ", " V(2) ", 2, 4, 9, 2, " F(1e-05) "]", 3) ","
     GETITEM("getitem", 3, 0, 7), IN("z", 7), NO_ST},
    /* layer norm over the last dim of a [B, L, D] tensor (a transformer's), every element read */
    {EG_OP_native_layer_norm, "layer_norm", T(0, "[2, 5, 8]") "," T(1, "[8]") "," T(2, "[8]")
     "," TUPLE(3, "[4, 5, 6]") "," T(4, "[2, 5, 8]") "," T(5, "[2, 5, 1]") ","
     T(6, "[2, 5, 1]") "," T(7, "[2, 5, 8]") "," T(8, "[2, 5, 1]") "," T(9, "[2, 5, 1]"),
     IN("x", 0) "," IN("w", 1) "," IN("b", 2), "",
     UT("aten.native_layer_norm.default", "[" V(0) ", [8], " V(1) ", " V(2) ", " F(1e-05) "]",
        3) "," GETITEM("getitem", 3, 0, 7) "," GETITEM("getitem_1", 3, 1, 8) ","
     GETITEM("getitem_2", 3, 2, 9), IN("z", 7) "," IN("mean", 8) "," IN("rstd", 9), NO_ST},
    /* its backward, every output; rstd in [0.5, 2) as a forward's */
    {EG_OP_native_layer_norm_backward, "layer_norm_backward", T(0, "[2, 5, 8]") ","
     T(1, "[2, 5, 8]") "," T(2, "[2, 5, 1]") "," T(3, "[2, 5, 1]") "," T(4, "[8]") ","
     T(5, "[8]") "," TUPLE(6, "[7, 8, 9]") "," T(7, "[2, 5, 8]") "," T(8, "[8]") ","
     T(9, "[8]") "," T(10, "[2, 5, 8]") "," T(11, "[8]") "," T(12, "[8]"), IN("g", 0) "," IN("x", 1) "," IN("mean", 2) "," IN("w", 4) "," IN("b", 5),
     IN("rstd", 3),
     UT("aten.native_layer_norm_backward.default", "[" V(0) ", " V(1) ", [8], " V(2) ", "
        V(3) ", " V(4) ", " V(5) ", [true, true, true]]", 6)
     "," GETITEM("getitem", 6, 0, 10) "," GETITEM("getitem_1", 6, 1, 11) ","
     GETITEM("getitem_2", 6, 2, 12), IN("gx", 10) "," IN("gw", 11) "," IN("gb", 12),
     1, {{"rstd", "[2, 5, 1]", 10, 0.5f, 2.0f}}},

    /* pooling */
    {EG_OP_max_pool2d_with_indices, "max_pool", T(0, X4) "," TUPLE(1, "[2, 3]") ","
     T(2, "[2, 3, 3, 3]") "," TI(3, "[2, 3, 3, 3]") "," T(4, "[2, 3, 3, 3]"), IN("x", 0), "",
     UT("aten.max_pool2d_with_indices.default", "[" V(0) ", [2, 2], [2, 2]]", 1) ","
     GETITEM("getitem", 1, 0, 4), IN("z", 4), NO_ST},
    {EG_OP_max_pool2d_with_indices, "max_pool_pad", T(0, X4) "," TUPLE(1, "[2, 3]") ","
     T(2, "[2, 3, 3, 3]") "," TI(3, "[2, 3, 3, 3]") "," T(4, "[2, 3, 3, 3]"), IN("x", 0), "",
     UT("aten.max_pool2d_with_indices.default", "[" V(0) ", [3, 3], [2, 2], [1, 1]]", 1) ","
     GETITEM("getitem", 1, 0, 4), IN("z", 4), NO_ST},
    /* the indices read: computed on the NPU as int32, compared exactly */
    {EG_OP_max_pool2d_with_indices, "max_pool_indices", T(0, X4) "," TUPLE(1, "[2, 3]") ","
     T(2, "[2, 3, 3, 3]") "," TI(3, "[2, 3, 3, 3]") "," T(4, "[2, 3, 3, 3]") ","
     TI(5, "[2, 3, 3, 3]"), IN("x", 0), "",
     UT("aten.max_pool2d_with_indices.default", "[" V(0) ", [3, 3], [2, 2], [1, 1]]", 1) ","
     GETITEM("getitem", 1, 0, 4) "," GETITEM("getitem_1", 1, 1, 5),
     IN("z", 4) "," IN("indices", 5), NO_ST},
    /* its backward, reading the forward's indices (valid ones: a forward feeds it) */
    {EG_OP_max_pool2d_with_indices_backward, "max_pool_backward", T(0, X4) ","
     T(1, "[2, 3, 3, 3]") "," TUPLE(2, "[3, 4]") "," T(3, "[2, 3, 3, 3]") ","
     TI(4, "[2, 3, 3, 3]") "," T(5, "[2, 3, 3, 3]") "," TI(6, "[2, 3, 3, 3]") "," T(7, X4),
     IN("x", 0) "," IN("g", 1), "",
     NODE("mp", "aten.max_pool2d_with_indices.default", "[" V(0) ", [3, 3], [2, 2], [1, 1]]",
          2) "," GETITEM("getitem", 2, 0, 5) "," GETITEM("getitem_1", 2, 1, 6) ","
     UT("aten.max_pool2d_with_indices_backward.default",
        "[" V(1) ", " V(0) ", [3, 3], [2, 2], [1, 1], [1, 1], false, " V(6) "]", 7),
     IN("gx", 7) "," IN("z", 5), NO_ST},
    SHAPED(avg_pool2d, "avg_pool", X4, "[2, 3, 3, 3]", "aten.avg_pool2d.default",
           "[" V(0) ", [3, 3], [2, 2], [1, 1]]"),
    SHAPED(avg_pool2d, "avg_pool_ceil", X4, "[2, 3, 3, 3]", "aten.avg_pool2d.default",
           "[" V(0) ", [3, 3], [2, 2], [0, 0], true, false]"),
    SHAPED(_adaptive_avg_pool2d, "adaptive_avg_pool", X4, "[2, 3, 3, 3]",
           "aten._adaptive_avg_pool2d.default", "[" V(0) ", [3, 3]]"),
    SHAPED(_adaptive_avg_pool2d, "global_avg_pool", X4, "[2, 3, 1, 1]",
           "aten._adaptive_avg_pool2d.default", "[" V(0) ", [1, 1]]"),
    {EG_OP__adaptive_avg_pool2d_backward, "global_avg_pool_backward", T(0, "[2, 3, 1, 1]") ","
     T(1, X4) "," T(2, X4), IN("g", 0) "," IN("x", 1), "",
     UT("aten._adaptive_avg_pool2d_backward.default", "[" V(0) ", " V(1) "]", 2), IN("z", 2),
     NO_ST},
    /* uneven adaptive windows: 6 -> 4 overlap */
    {EG_OP__adaptive_avg_pool2d_backward, "adaptive_avg_pool_backward", T(0, "[2, 3, 4, 3]") ","
     T(1, X4) "," T(2, X4), IN("g", 0) "," IN("x", 1), "",
     UT("aten._adaptive_avg_pool2d_backward.default", "[" V(0) ", " V(1) "]", 2), IN("z", 2),
     NO_ST},
    /* padding, ceil_mode and count_include_pad false: every divisor rule of ATen's */
    {EG_OP_avg_pool2d_backward, "avg_pool_backward", T(0, "[2, 3, 4, 3]") "," T(1, X4) ","
     T(2, X4), IN("g", 0) "," IN("x", 1), "",
     UT("aten.avg_pool2d_backward.default",
        "[" V(0) ", " V(1) ", [3, 2], [2, 2], [1, 0], true, false, null]", 2), IN("z", 2),
     NO_ST},
    {EG_OP_avg_pool2d_backward, "avg_pool_backward_pad_counted", T(0, "[2, 3, 3, 3]") ","
     T(1, X4) "," T(2, X4), IN("g", 0) "," IN("x", 1), "",
     UT("aten.avg_pool2d_backward.default",
        "[" V(0) ", " V(1) ", [3, 3], [2, 2], [1, 1], false, true, null]", 2), IN("z", 2),
     NO_ST},

    /* activations */
    UNARY(hardtanh, "hardtanh", "aten.hardtanh.default", "[" V(0) "]"),
    BINARY(hardtanh_backward, "hardtanh_backward", "aten.hardtanh_backward.default",
           "[" V(0) ", " V(1) ", " F(-0.5) ", " F(0.5) "]"),
    UNARY(sigmoid, "sigmoid", "aten.sigmoid.default", "[" V(0) "]"),
    BINARY(sigmoid_backward, "sigmoid_backward", "aten.sigmoid_backward.default",
           "[" V(0) ", " V(1) "]"),
    UNARY(tanh, "tanh", "aten.tanh.default", "[" V(0) "]"),
    BINARY(tanh_backward, "tanh_backward", "aten.tanh_backward.default", "[" V(0) ", " V(1) "]"),
    UNARY(silu, "silu", "aten.silu.default", "[" V(0) "]"),
    BINARY(silu_backward, "silu_backward", "aten.silu_backward.default", "[" V(0) ", " V(1) "]"),
    UNARY(hardswish, "hardswish", "aten.hardswish.default", "[" V(0) "]"),
    BINARY(hardswish_backward, "hardswish_backward", "aten.hardswish_backward.default",
           "[" V(0) ", " V(1) "]"),
    UNARY(hardsigmoid, "hardsigmoid", "aten.hardsigmoid.default", "[" V(0) "]"),
    BINARY(hardsigmoid_backward, "hardsigmoid_backward", "aten.hardsigmoid_backward.default",
           "[" V(0) ", " V(1) "]"),
    UNARY(gelu, "gelu", "aten.gelu.default", "[" V(0) "]"),
    {EG_OP_gelu, "gelu_tanh", T(0, X4) "," T(1, X4), IN("x", 0), "",
     UTK("aten.gelu.default", "[" V(0) "]", "{\"approximate\": {\"str\": \"tanh\"}}", 1), IN("z", 1),
     NO_ST},
    BINARY(gelu_backward, "gelu_backward", "aten.gelu_backward.default", "[" V(0) ", " V(1) "]"),
    {EG_OP_gelu_backward, "gelu_backward_tanh", T(0, X4) "," T(1, X4) "," T(2, X4),
     IN("x", 0) "," IN("y", 1), "",
     UTK("aten.gelu_backward.default", "[" V(0) ", " V(1) "]", "{\"approximate\": {\"str\": \"tanh\"}}",
         2), IN("z", 2), NO_ST},
    UNARY(clamp, "clamp", "aten.clamp.default", "[" V(0) ", " F(-0.5) ", " F(0.5) "]"),

    /* attention: softmax along a middle dim (Transpose + Softmax + Transpose); attention with
     * is_causal and a frozen mask, its backward with a given scale */
    SHAPED(_softmax, "softmax", X4, X4, "aten._softmax.default", "[" V(0) ", 1, false]"),
    SHAPED(_safe_softmax, "safe_softmax", X4, X4, "aten._safe_softmax.default",
           "[" V(0) ", -1]"),
    {EG_OP__softmax_backward_data, "softmax_backward", T(0, X4) "," T(1, X4) "," T(2, X4),
     IN("g", 0) "," IN("y", 1), "",
     UT("aten._softmax_backward_data.default",
        "[" V(0) ", " V(1) ", 2, {\"dtype\": \"float32\"}]", 2), IN("z", 2), NO_ST},
    {EG_OP_sdpa_flash, "sdpa_flash", T(0, "[2, 3, 5, 4]") "," T(1, "[2, 3, 7, 4]") ","
     T(2, "[2, 3, 7, 4]") "," T(3, "[5, 7]") "," TUPLE(4, "[5, 6]") "," T(5, "[2, 3, 5, 4]") ","
     T(6, "[2, 3, 5]") "," T(7, "[2, 3, 5, 4]") "," T(8, "[2, 3, 5]"),
     IN("q", 0) "," IN("k", 1) "," IN("v", 2), IN("mask", 3),
     UTK("aten._scaled_dot_product_flash_attention_for_cpu.default",
         "[" V(0) ", " V(1) ", " V(2) ", " F(0.0) ", true]",
         "{\"attn_mask\": " V(3) ", \"scale\": " F(0.3) "}", 4) ","
     GETITEM("getitem", 4, 0, 7) "," GETITEM("getitem_1", 4, 1, 8),
     IN("out", 7) "," IN("lse", 8), 1, {{"mask", "[5, 7]", 35, -1, 1}}},
    {EG_OP_sdpa_flash_backward, "sdpa_flash_backward", T(0, "[2, 3, 5, 4]") ","
     T(1, "[2, 3, 5, 4]") "," T(2, "[2, 3, 7, 4]") "," T(3, "[2, 3, 7, 4]") ","
     T(4, "[2, 3, 5, 4]") "," T(5, "[2, 3, 5]") "," TUPLE(6, "[7, 8, 9]") ","
     T(7, "[2, 3, 5, 4]") "," T(8, "[2, 3, 7, 4]") "," T(9, "[2, 3, 7, 4]") ","
     T(10, "[2, 3, 5, 4]") "," T(11, "[2, 3, 7, 4]") "," T(12, "[2, 3, 7, 4]"),
     IN("g", 0) "," IN("q", 1) "," IN("k", 2) "," IN("v", 3) "," IN("o", 4) "," IN("lse", 5),
     "",
     UTK("aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
         "[" V(0) ", " V(1) ", " V(2) ", " V(3) ", " V(4) ", " V(5) ", " F(0.0) ", false]",
         "{\"scale\": " F(0.4) "}", 6) ","
     GETITEM("getitem", 6, 0, 10) "," GETITEM("getitem_1", 6, 1, 11) ","
     GETITEM("getitem_2", 6, 2, 12), IN("gq", 10) "," IN("gk", 11) "," IN("gv", 12), NO_ST},

    /* joining */
    {EG_OP_cat, "cat", T(0, "[2, 3, 4, 4]") "," T(1, "[2, 2, 4, 4]") "," T(2, "[2, 5, 4, 4]"),
     IN("a", 0) "," IN("b", 1), "", UT("aten.cat.default", "[[" V(0) ", " V(1) "], 1]", 2),
     IN("z", 2), NO_ST},
    {EG_OP_stack, "stack", T(0, "[3, 4]") "," T(1, "[3, 4]") "," T(2, "[2, 3, 4]"),
     IN("a", 0) "," IN("b", 1), "", UT("aten.stack.default", "[[" V(0) ", " V(1) "]]", 2),
     IN("z", 2), NO_ST},
    {EG_OP_slice_Tensor, "slice_channels", T(0, "[2, 7, 4, 4]") "," T(1, "[2, 3, 4, 4]"),
     IN("x", 0), "", UT("aten.slice.Tensor", "[" V(0) ", 1, 1, 6, 2]", 1), IN("z", 1), NO_ST},
    {EG_OP_split_Tensor, "split_channels",
     T(0, "[2, 7, 3, 3]") "," TUPLE(1, "[2, 3, 4]") "," T(2, "[2, 3, 3, 3]") ","
     T(3, "[2, 3, 3, 3]") "," T(4, "[2, 1, 3, 3]") "," T(5, "[2, 3, 3, 3]") ","
     T(6, "[2, 3, 3, 3]") "," T(7, "[2, 1, 3, 3]"),
     IN("x", 0), "", UT("aten.split.Tensor", "[" V(0) ", 3, 1]", 1) ","
     GETITEM("getitem", 1, 0, 5) "," GETITEM("getitem_1", 1, 1, 6) ","
     GETITEM("getitem_2", 1, 2, 7), IN("a", 5) "," IN("b", 6) "," IN("c", 7), NO_ST},
    {EG_OP_split_with_sizes, "split_sizes_rows",
     T(0, "[2, 3, 5, 4]") "," TUPLE(1, "[2, 3]") "," T(2, "[2, 3, 1, 4]") ","
     T(3, "[2, 3, 4, 4]") "," T(4, "[2, 3, 1, 4]") "," T(5, "[2, 3, 4, 4]"),
     IN("x", 0), "", UT("aten.split_with_sizes.default", "[" V(0) ", [1, 4], -2]", 1) ","
     GETITEM("getitem", 1, 0, 4) "," GETITEM("getitem_1", 1, 1, 5),
     IN("a", 4) "," IN("b", 5), NO_ST},
    {EG_OP_select_int, "select_class_token", T(0, "[2, 5, 6]") "," T(1, "[2, 6]"),
     IN("x", 0), "", UT("aten.select.int", "[" V(0) ", 1, 0]", 1), IN("z", 1), NO_ST},
    {EG_OP_select_int, "select_neg", T(0, "[3, 2, 4, 5]") "," T(1, "[3, 2, 4]"),
     IN("x", 0), "", UT("aten.select.int", "[" V(0) ", -1, -2]", 1), IN("z", 1), NO_ST},
    {EG_OP_select_backward, "select_backward", T(0, "[2, 6]") "," T(1, "[2, 5, 6]"),
     IN("g", 0), "", UT("aten.select_backward.default", "[" V(0) ", [2, 5, 6], 1, 3]", 1),
     IN("z", 1), NO_ST},
    {EG_OP_slice_backward, "slice_backward", T(0, "[2, 3, 4, 4]") "," T(1, "[2, 7, 4, 4]"),
     IN("g", 0), "", UT("aten.slice_backward.default", "[" V(0) ", [2, 7, 4, 4], 1, 2, 5, 1]", 1),
     IN("z", 1), NO_ST},
    {EG_OP_slice_Tensor, "slice_tail", T(0, "[2, 3, 4, 5]") "," T(1, "[2, 3, 4, 3]"),
     IN("x", 0), "", UT("aten.slice.Tensor", "[" V(0) ", -1, -3, 9223372036854775807]", 1),
     IN("z", 1), NO_ST},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- running one case ---- */

/* The placement of node `name` in the report, or false when it has none. */
static bool find_placement(const eg_compile_report *rep, const char *name, eg_placement_info *p) {
  for (int i = 0; i < eg_compile_report_num_nodes(rep); i++)
    if (eg_compile_report_node(rep, i, p) == EG_OK && strcmp(p->name, name) == 0) return true;
  return false;
}

/* Whether node `name` of the loaded graph g computes in float: its result, or an element of
 * its tuple, is float32. A node the passes made (not in g) counts as float. */
static bool float_node(const eg_graph *g, const char *name) {
  const int32_t i = eg_test_find_node(g, name);
  if (i < 0) return true;
  const eg_value *v = &g->values[g->nodes[i].output];
  if (v->kind != EG_VALUE_TUPLE) return v->dtype == EG_DTYPE_FLOAT32;
  for (int32_t k = 0; k < v->n_elems; k++)
    if (v->elems[k] >= 0 && g->values[v->elems[k]].dtype == EG_DTYPE_FLOAT32) return true;
  return false;
}

/* Checks the placement for `soc`: on SM8650 node "ut" runs on the NPU; on SM8350 every float
 * node but getitems is on the CPU for want of a float path (an int64 node may still be on the
 * NPU there). */
static void check_placement(const bo_case *c, const eg_model *m, const char *soc) {
  eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = soc);
  eg_compile_report *rep = NULL;
  EG_CHECK_MSG(eg_compile_report_create(m, &opt, &rep) == EG_OK, "%s on %s: %s", c->name, soc,
               eg_last_error());
  if (!rep) return;
  eg_placement_info p;
  if (strcmp(soc, "SM8350") != 0) {
    EG_CHECK_MSG(find_placement(rep, "ut", &p), "%s: no node ut in the compiled graph", c->name);
    EG_CHECK_MSG(strcmp(p.target, eg_op_target(c->op)) == 0, "%s: ut is %s, not %s", c->name,
                 p.target, eg_op_target(c->op));
    EG_CHECK_MSG(p.placement == EG_PLACEMENT_NPU, "%s (%s) on %s: the builder declined: %s",
                 c->name, eg_op_target(c->op), soc, p.reason ? p.reason : "?");
  } else {
    static const char want[] = "float ops need HTP V69+";
    for (int i = 0; i < eg_compile_report_num_nodes(rep); i++) {
      if (eg_compile_report_node(rep, i, &p) != EG_OK || strcmp(p.target, "getitem") == 0 ||
          !float_node(m->graph, p.name))
        continue;
      EG_CHECK_MSG(p.placement == EG_PLACEMENT_CPU && p.reason &&
                       strncmp(p.reason, want, sizeof want - 1) == 0,
                   "%s on %s: node %s: %s", c->name, soc, p.name,
                   p.placement == EG_PLACEMENT_NPU ? "on the NPU" : p.reason);
    }
  }
  eg_compile_report_destroy(rep);
}

/* How many output elements the cases compared, over both SoCs. */
static long n_compared;

/* Output i of `got` equals output i of the CPU runtime `ref`. */
static void check_output(const bo_case *c, const char *soc, const eg_runtime *got,
                         const eg_runtime *ref, int i) {
  eg_tensor a, b;
  if (eg_runtime_output(got, i, &a) != EG_OK || eg_runtime_output(ref, i, &b) != EG_OK) {
    EG_CHECK_MSG(false, "%s on %s: output %d: %s", c->name, soc, i, eg_last_error());
    return;
  }
  const int64_t n = eg_tensor_numel(&a);
  EG_CHECK_MSG(a.dtype == b.dtype && n == eg_tensor_numel(&b), "%s on %s: output %d: %s x %lld "
               "vs %s x %lld", c->name, soc, i, eg_dtype_name(a.dtype), (long long)n,
               eg_dtype_name(b.dtype), (long long)eg_tensor_numel(&b));
  if (a.dtype != b.dtype || n != eg_tensor_numel(&b)) return;
  n_compared += (long)n;
  if (a.dtype == EG_DTYPE_FLOAT32) {
    const long k = eg_test_allclose(a.data, b.data, (long)n, 1e-4, 1e-5);
    EG_CHECK_MSG(k < 0, "%s (%s) on %s: output %d element %ld: %.9g, CPU %.9g", c->name,
                 eg_op_target(c->op), soc, i, k, k < 0 ? 0.0 : (double)((float *)a.data)[k],
                 k < 0 ? 0.0 : (double)((float *)b.data)[k]);
  } else {
    EG_CHECK_MSG(memcmp(a.data, b.data, (size_t)n * eg_dtype_size(a.dtype)) == 0,
                 "%s (%s) on %s: output %d differs", c->name, eg_op_target(c->op), soc, i);
  }
}

/* Seeded inputs on every runtime of rts[0..n): float32 in [-1, 1), int64 in (-1000, 1000) —
 * but an input named "target" (nll_loss's class indices) in [-1, 10) — other dtypes zero. */
static void set_inputs(const eg_model *m, unsigned seed, eg_runtime *const *rts, int n) {
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    if (eg_model_input(m, i, &d) != EG_OK) continue;
    const int64_t numel = eg_tensor_numel(&d.tensor);
    void *buf = calloc((size_t)(numel > 0 ? numel : 1), eg_dtype_size(d.tensor.dtype));
    float *u = eg_test_rand_buf((long)numel, seed * 31u + (unsigned)i);
    for (int64_t e = 0; e < numel; e++) {
      if (d.tensor.dtype == EG_DTYPE_FLOAT32) ((float *)buf)[e] = u[e];
      if (d.tensor.dtype == EG_DTYPE_INT64)
        ((int64_t *)buf)[e] = strcmp(d.name, "target") == 0 ? (int64_t)((u[e] + 1.0f) * 5.5f) - 1
                                                            : (int64_t)(u[e] * 1000.0f);
    }
    free(u);
    eg_tensor t = d.tensor;
    t.data = buf;
    for (int r = 0; r < n; r++)
      EG_CHECK_MSG(eg_runtime_set_input(rts[r], d.name, &t) == EG_OK, "%s", eg_last_error());
    free(buf);
  }
}

/* Writes the case's weights (uniform in each static's range, seeded) next to its graph. */
static void write_case_weights(const bo_case *c, unsigned seed) {
  stat_tensor st[4];
  float *data[4] = {0};
  for (int k = 0; k < c->n_st; k++) {
    const bo_static *s = &c->st[k];
    data[k] = eg_test_rand_buf(s->numel, seed * 31u + 17u + (unsigned)k);
    for (int e = 0; e < s->numel; e++)
      data[k][e] = s->lo + (data[k][e] + 1.0f) * 0.5f * (s->hi - s->lo);
    st[k] = (stat_tensor){s->name, s->shape, s->numel, data[k]};
  }
  write_weights(c->name, c->n_st, st);
  for (int k = 0; k < c->n_st; k++) free(data[k]);
}

/* Compiles case c for SM8650 and SM8350 and compares each compiled runtime with the CPU one. */
static void run_case(const bo_case *c, unsigned seed) {
  static const char *const socs[2] = {"SM8650", "SM8350"};
  char weights[128];
  write_case_weights(c, seed);
  snprintf(weights, sizeof weights, "%s.safetensors", c->name);
  eg_graph *g = eg_test_graph_json(tmpdir, c->name, weights, c->values, c->inputs, c->statics,
                                   c->nodes, c->outputs);
  if (!g) return;
  eg_model m = {.graph = g, .compiled = NULL};
  eg_runtime *rts[3] = {NULL, NULL, NULL}; /* CPU, then one per SoC */
  EG_CHECK_MSG(eg_runtime_create(&m, &rts[0]) == EG_OK, "%s: %s", c->name, eg_last_error());
  for (int s = 0; s < 2; s++) {
    check_placement(c, &m, socs[s]);
    eg_compile_options opt = EG_COMPILE_OPTIONS(.soc = socs[s], .precision = EG_PRECISION_FP32);
    EG_CHECK_MSG(eg_runtime_create_compiled(&m, &opt, &rts[1 + s]) == EG_OK, "%s on %s: %s",
                 c->name, socs[s], eg_last_error());
  }
  if (rts[0] && rts[1] && rts[2]) {
    set_inputs(&m, seed, rts, 3);
    for (int r = 0; r < 3; r++)
      EG_CHECK_MSG(eg_runtime_run(rts[r]) == EG_OK, "%s: run %d: %s", c->name, r,
                   eg_last_error());
    for (int s = 0; s < 2; s++)
      for (int i = 0; i < eg_model_num_outputs(&m); i++)
        check_output(c, socs[s], rts[1 + s], rts[0], i);
  }
  for (int r = 0; r < 3; r++) eg_runtime_destroy(rts[r]);
  eg_graph_destroy(g);
}

/* ---- the walk ---- */

static void test_every_builder_against_cpu(void) {
  bool covered[EG_OP_COUNT] = {false};
  for (int k = 0; k < N_CASES; k++) {
    const int before = eg_test_failures_in_case;
    run_case(&cases[k], (unsigned)k + 1u);
    if (eg_test_failures_in_case != before)
      fprintf(stderr, "FAIL case %s (%s)\n", cases[k].name, eg_op_target(cases[k].op));
    EG_CHECK_MSG(eg_htp_builders[cases[k].op] != NULL, "case %s: %s has no builder",
                 cases[k].name, eg_op_target(cases[k].op));
    covered[cases[k].op] = true;
  }
  int n_ops = 0;
  for (int op = 0; op < EG_OP_COUNT; op++) {
    if (!eg_htp_builders[op]) continue;
    n_ops++;
    EG_CHECK_MSG(covered[op], "builder without a case: %s", eg_op_target((eg_op)op));
  }
  printf("backend ops: %d ops with an NPU builder, %d cases, each on SM8650 and SM8350; %ld "
         "output elements compared with the CPU path\n", n_ops, N_CASES, n_compared);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_test_backend_ops_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  EG_RUN(test_every_builder_against_cpu);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
