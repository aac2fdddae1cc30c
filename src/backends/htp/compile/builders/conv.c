/* conv.c — NPU builders for 2-D convolution, forward and backward (the reason edgegrad exists:
 * design.md §1).
 *
 *   aten.convolution(x, W, b?, stride, padding, dilation, transposed=False, [0, 0], g)
 *     g == 1, or Cin/g > 1       -> Conv2d(x, W_hwio, b?; stride, pad_amount, dilation, group g)
 *                                   (without b, then Pad and ElementWiseAdd b, for a padding
 *                                   that reaches the kernel: pad_reaches_kernel)
 *     g == Cin > 1 (one input channel per group)
 *                                -> DepthWiseConv2d(x, W_dw, b?; stride, pad_amount, dilation),
 *                                   channel multiplier Cout/Cin
 *   aten.convolution(..., transposed=True, output_padding, g)
 *                                -> TransposeConv2d(x, W_tconv, b?; stride, pad_amount,
 *                                   output_padding, group g)
 *   aten.convolution_backward, any output_mask (by the tuple's elements that are computed)
 *     grad_input  -> W_hwoi [kH, kW, Cout, Cin/g]: for a frozen weight, Transpose(perm
 *                    [0,1,3,2]) of the forward's STATIC filter (eg_htp_filter returns the same
 *                    tensor, so the weight is stored once); for a trainable one, one Transpose
 *                    of the ATen weight -> TransposeConv2d(grad_output, W_hwoi; stride,
 *                    pad_amount, output_padding, group g), output_padding = H_in - ((H_out-1)*s
 *                    - 2p + ke) per dim, ke = (k-1)*d + 1; with dilation d > 1 the filter is
 *                    first the dilated kernel W_d [ke_H, ke_W, Cout, Cin/g] (d - 1 zeros
 *                    between taps), built from W_hwoi inside the graph: Reshape [1, kH, kW,
 *                    Cout*Cin/g], MatMuls by STATIC 0/1 matrices E [ke, k] (E[i*d, i] = 1;
 *                    eg_htp_separable_map), Reshape back (dilate_filter). Measured right on
 *                    QNN's HTP emulator (QNN 2.51 through onnxruntime-qnn 2.7.0, SM8650, fp32
 *                    and fp16, against PyTorch's grad_input: relative error 3e-4 to 6e-4,
 *                    fp16's): depthwise 5x5 dilation 2 (9x9) and 3x3 dilation 2, plain 3x3
 *                    dilation 2 at stride 1 and 2, grouped 3x3 dilation 3, 1x1 (no MatMul
 *                    needed: ke = 1), static and runtime filters, and as whole training
 *                    steps on SM8550 / SM8650 / SM8750
 *     grad_weight -> Conv2d of the forward input by grad_output (lower_grad_weight); 1x1
 *                    kernel, groups 1, no padding: a 1x1 Conv2d of grad_output [1, 1, Cout,
 *                    N*Ho*Wo] by the input's pixels [1, 1, N*Ho*Wo, ci], already in ATen's
 *                    order (lower_grad_weight_pixels; also any kernel with groups 1 where
 *                    N*Ho*Wo <= Cout, over the im2col of the input's taps); other strided ones
 *                    with groups 1 and ci * Cout >= 32768 (QNN HTP's fast preparation computes
 *                    that Conv2d wrong): one MatMul per kernel tap of grad_output by the
 *                    strided slice of the input it meets, Concat (lower_grad_weight_taps)
 *     grad_bias   -> ReduceSum(grad_output, axes [0, 1, 2] = N, H, W of NHWC)
 *   (ATen [Cout, Cin/g, kH, kW] weights become QNN filters: HWIO [kH, kW, Cin/g, Cout],
 *   DepthWiseConv2d [kH, kW, 1, Cout], and from a transposed conv's [Cin, Cout/g, kH, kW],
 *   TransposeConv2d's [kH, kW, Cin, Cout/g]; a frozen weight is permuted once at lowering into a
 *   STATIC tensor (eg_htp_filter), a trainable one is a partition input (APP_WRITE, the
 *   runtime's own buffer: never copied into the program) permuted by a Transpose inside the
 *   graph every step (filter_of). pad_amount is [[pad_h, pad_h], [pad_w, pad_w]] from ATen's
 *   symmetric padding; a TransposeConv2d with output_padding op > 0 in a dim and group > 1 or
 *   stride > 2 there instead gets [p, p - op] there and output_padding 0 (tconv_pads).)
 *
 * Constraints, both ops: float32 operands (the partitioner's float gate already requires HTP
 * V69+ with fp16 and sends V68 and fp16-less parts to the CPU before supports() is asked, so
 * neither builder checks the arch), rank-4 non-empty tensors, stride / padding / dilation lists
 * of 2 values; a trainable weight carries no quantization encodings.
 *   forward, transposed: dilation 1 (QNN's TransposeConv2d has none), output_padding < stride.
 *   both, TransposeConv2d (tconv_pads, the forms QNN HTP computes right): output_padding <=
 *   padding per dim where it has group > 1 or stride > 2; depthwise (one channel per group in
 *   and out) with stride > 1 and a (dilated) kernel wider than 3: its input's zeros inserted
 *   explicitly (Reshapes and Pads, zero_insert), TransposeConv2d at stride 1 (a quantized forward
 *   input there is declined: the Pads are float only).
 *   backward, grad_weight: not with stride > 1 and dilation > 1 both (its Conv2d then has
 *   both, which QNN HTP refuses for some shapes: measured).
 *   forward Conv2d / DepthWiseConv2d and grad_weight's Conv2d with stride 1, dilation 1 and a
 *   padding that reaches the kernel's width in a dim (pad_reaches_kernel: QNN HTP computes that
 *   pad_amount wrong, measured): the conv keeps kernel - 1 of it per side there, and the output
 *   rows/cols the rest adds (zeros, plus the bias) come from an explicit Pad (constant 0) of
 *   its output and an ElementWiseAdd of the bias (split_pads, padded_output); a quantized
 *   forward input is then declined (the Pad is float only).
 *   forward: quantized input / frozen weight accepted (fixed-point QNN tensors, pass fold_qdq);
 *   not depthwise with stride > 1 and dilation > 1 both (QNN HTP refuses that DepthWiseConv2d:
 *   3x3 and 5x5, stride 2, dilation 2, fp32 and fp16, SM8650, measured).
 *   backward: no quantized grad_output / weight (see quantized()), nor a quantized forward input
 *   where grad_weight reads it; transposed False; where grad_input is computed, the derived
 *   output_padding (of the dilated kernel) in [0, stride). A grad_weight element nothing reads
 *   (PyTorch 1.13 traces one even for output_mask [*, False, True], docs/graph-format.md) is not
 *   computed, and then the forward `input` (argument 1) is not read either: its shape comes
 *   from the IR and it never becomes a partition input for this node.
 * The conv bias may be a runtime value (a trainable bias): a rank-1 tensor needs no layout.
 * Layout: x / grad_output and the rank-4 results of the forward and grad_input are NHWC
 * (eg_value.axes, set by pass layout_nhwc; lowering fails on a value in traced order);
 * grad_weight is in traced order, like the weight; the forward input of the backward and a
 * trainable weight are read in whichever order they are held (traced_axes composes it into the
 * one Transpose each needs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/htp/compile/builders/builders.h"

/* ---- reading a node ---- */

/* What both ops' lowerings need, read from the node's traced arguments (verified by
 * ops/conv.c: lists of 1 or 2 values, stride and dilation >= 1, padding >= 0). */
typedef struct conv_args {
  int32_t x, w, b;       /* convolution: input, weight, bias (-1: None);
                            convolution_backward: grad_output, input, weight (b = -1) */
  int n_stride, n_pad, n_dil;
  int64_t stride[2], pad[2], dil[2], out_pad[2], groups;
  bool transposed;
} conv_args;

/* Reads the arguments; `off` is 0 for convolution (stride is argument 3), 1 for
 * convolution_backward (stride is argument 4). */
static eg_status read_args(const eg_node *n, int off, conv_args *a) {
  int n_op;
  memset(a, 0, sizeof *a);
  a->x = eg_htp_arg(n, off ? 1 : 0, "input");
  a->w = eg_htp_arg(n, off ? 2 : 1, "weight");
  a->b = off ? -1 : eg_htp_arg(n, 2, "bias");
  EG_TRY(eg_arg_int_list(n, 3 + off, "stride", a->stride, 1, 2, &a->n_stride));
  EG_TRY(eg_arg_int_list(n, 4 + off, "padding", a->pad, 1, 2, &a->n_pad));
  EG_TRY(eg_arg_int_list(n, 5 + off, "dilation", a->dil, 1, 2, &a->n_dil));
  EG_TRY(eg_arg_bool(n, 6 + off, "transposed", &a->transposed));
  EG_TRY(eg_arg_int_list(n, 7 + off, "output_padding", a->out_pad, 1, 2, &n_op));
  if (n_op == 1) a->out_pad[1] = a->out_pad[0];
  return eg_arg_int(n, 8 + off, "groups", &a->groups);
}

/* "[True, False, True]", as the trace spells output_mask. */
static const char *fmt_mask(char *buf, size_t size, const bool m[3]) {
  snprintf(buf, size, "[%s, %s, %s]", m[0] ? "True" : "False", m[1] ? "True" : "False",
           m[2] ? "True" : "False");
  return buf;
}

/* ---- shared checks (each writes one sentence into reason on false) ---- */

/* Operand `id` (called `what`) is a non-empty float32 tensor of rank `rank`. */
static bool operand_ok(const eg_graph *g, int32_t id, const char *what, int rank, char *reason,
                       size_t size) {
  const eg_value *v = id >= 0 ? &g->values[id] : NULL;
  if (!v || v->kind != EG_VALUE_TENSOR) {
    snprintf(reason, size, "%s is not a tensor", what);
    return false;
  }
  if (v->dtype != EG_DTYPE_FLOAT32) {
    snprintf(reason, size, "%s is %s: the NPU lowering handles float32 only", what,
             eg_dtype_name(v->dtype));
    return false;
  }
  if (v->rank != rank) {
    snprintf(reason, size, "%s has rank %d: needs rank %d", what, v->rank, rank);
    return false;
  }
  if (eg_value_numel(v) == 0) {
    char s[96];
    snprintf(reason, size, "%s is empty %s: QNN tensors need every dimension >= 1", what,
             eg_fmt_ints(s, sizeof s, v->shape, v->rank));
    return false;
  }
  return true;
}

/* Quantization guard of the backward: the one place where a quantized operand is declined, on
 * the values' metadata (eg_value.quant, pass annotate_quant), never on the graph's shape. The
 * forward takes quantized operands (fold_qdq); the backward lowering is a float one: with a
 * quantized grad_output or weight, TransposeConv2d would need encodings for
 * the transposed filter, and the STATIC filter shared with the forward Conv2d would carry the
 * forward's (a QDQ model's frozen weight is annotated even where the backward reads the raw
 * parameter, and a dequantize output carries them too; so will a value a future q/dq
 * folding leaves quantized): a quantized shared weight must never reach a float
 * TransposeConv2d. */
static bool quantized(const eg_value *v) { return v->quant != NULL; }

/* stride, padding and dilation each list one value per spatial dim, each fitting QNN's UINT_32
 * params. */
static bool lists_ok(const conv_args *a, char *reason, size_t size) {
  static const char *const names[3] = {"stride", "padding", "dilation"};
  const int counts[3] = {a->n_stride, a->n_pad, a->n_dil};
  const int64_t *vals[3] = {a->stride, a->pad, a->dil};
  for (int i = 0; i < 3; i++)
    if (counts[i] != 2) {
      snprintf(reason, size, "%s [%lld] unsupported: the NPU lowering needs one value per "
               "spatial dim", names[i], (long long)vals[i][0]);
      return false;
    }
  for (int i = 0; i < 3; i++)
    if (!eg_htp_u32_params_ok(names[i], vals[i], 2, reason, size)) return false;
  return true; /* output_padding, where used, lies in [0, stride) (out_pad_ok) */
}

/* Whether QNN HTP computes a Conv2d / DepthWiseConv2d of these attributes wrong when the
 * padding is its pad_amount. Measured on QNN's HTP emulator (QNN 2.51 through onnxruntime-qnn
 * 2.7.0, SM8650), against ONNX Runtime's CPU: where in some dim stride and dilation are 1, the
 * kernel is at least 2 wide and the leading padding at least as wide as the kernel, the output
 * is wrong (relative error 1 to 1e4; any group, static or runtime filter, leading padding alone
 * or on both sides); a 1-wide kernel, stride 2, dilation 2, or the same padding at the end only
 * are right. A grad_weight convolution has it when the forward's padding reaches grad_output's
 * size (a 5x5 depthwise conv with padding 2 on a 2x2 map). Such a convolution keeps kernel - 1
 * of each side's padding in that dim as its pad_amount (split_pads) and runs without its bias;
 * the output rows/cols the rest of the padding adds see nothing but padding (stride and
 * dilation 1), so they are zeros added by an explicit Pad (constant 0) of its output, and the
 * bias is added after (padded_output). Measured right on the same emulator (relative error
 * 3e-4 to 6e-4, fp16's: Conv2d and DepthWiseConv2d, static and runtime filters, with and
 * without bias, Relu before and after, kernels 2 to 5, paddings up to 5). Padding the input
 * instead is not: a Pad feeding the Conv2d is right alone, but wrong again (relative error 1)
 * as soon as a Relu produces its input, as in every network (QNN HTP folds it back into the
 * padding, measured), and a Concat of zero tensors is folded the same way. */
static bool reaches(int64_t kernel, int64_t stride, int64_t dil, int64_t pad_before) {
  return stride == 1 && dil == 1 && kernel >= 2 && pad_before >= kernel;
}

static bool pad_reaches_kernel(const int64_t kernel[2], const int64_t stride[2],
                               const int64_t dil[2], const int64_t pad_before[2]) {
  return reaches(kernel[0], stride[0], dil[0], pad_before[0]) ||
         reaches(kernel[1], stride[1], dil[1], pad_before[1]);
}

/* A Conv2d's pad_amount `pads` ([[top, bottom], [left, right]]) split for pad_reaches_kernel:
 * in each dim where the padding reaches the kernel, pads keeps kernel - 1 per side and
 * `extra` (a Pad's [[before, after] x 4] of the rank-4 output, dims 1 and 2) gets the rest:
 * the output rows/cols whose windows lie wholly in that padding. True when extra is not all
 * 0. */
static bool split_pads(const int64_t kernel[2], const int64_t stride[2], const int64_t dil[2],
                       uint32_t pads[4], uint32_t extra[8]) {
  bool any = false;
  memset(extra, 0, 8 * sizeof *extra);
  for (int d = 0; d < 2; d++) {
    if (!reaches(kernel[d], stride[d], dil[d], pads[2 * d])) continue;
    for (int side = 0; side < 2; side++) {
      uint32_t *p = &pads[2 * d + side];
      const uint32_t keep = *p < kernel[d] - 1 ? *p : (uint32_t)(kernel[d] - 1);
      extra[2 + 2 * d + side] = *p - keep;
      *p = keep;
      any |= extra[2 + 2 * d + side] > 0;
    }
  }
  return any;
}

/* The kernel's extent in spatial dim d (0: H, 1: W) of weight shape `w` under the
 * convolution's dilation: (k - 1) * dilation + 1, the kernel of the grad_input TransposeConv2d
 * (dilate_filter); k where the dilation is 1 (a transposed forward always: dilation_one). */
static int64_t dilated_kernel(const conv_args *a, const int64_t *w, int d) {
  return (w[2 + d] - 1) * a->dil[d] + 1;
}

static bool dilation_one(const conv_args *a, char *reason, size_t size) {
  if (a->dil[0] == 1 && a->dil[1] == 1) return true;
  snprintf(reason, size, "dilation [%lld, %lld] unsupported: TransposeConv2d has no dilation",
           (long long)a->dil[0], (long long)a->dil[1]);
  return false;
}

/* A trainable (runtime) weight is permuted into the filter layout inside the partition (a
 * Transpose run every step); one carrying quantization encodings is declined: its encodings
 * would have to follow the permute, which the lowering does not emit (fold_qdq quantizes frozen
 * weights only). */
static bool weight_ok(const eg_graph *g, const conv_args *a, char *reason, size_t size) {
  const eg_value *w = &g->values[a->w];
  if (w->role == EG_ROLE_STATIC || !quantized(w)) return true;
  snprintf(reason, size, "weight is a runtime value with quantization encodings: the filter "
           "permute inside the partition is float only");
  return false;
}

static bool out_pad_ok(const int64_t op[2], const int64_t stride[2], char *reason, size_t size) {
  for (int d = 0; d < 2; d++)
    if (op[d] < 0 || op[d] >= stride[d]) {
      snprintf(reason, size, "output_padding %lld not in [0, %lld)", (long long)op[d],
               (long long)stride[d]);
      return false;
    }
  return true;
}

/* TransposeConv2d's pad_amount and output_padding for ATen's symmetric padding a->pad and the
 * output_padding `op`, in a form Qualcomm's HTP computes right; false with the reason where
 * none is known. Measured on QNN's HTP emulator (QNN 2.51 through onnxruntime-qnn 2.7.0,
 * fp16 SoCs), against PyTorch's conv_transpose2d:
 *   - a grouped TransposeConv2d with output_padding > 0 is wrong (group == channels: the
 *     output_padding row/column lands at the top/left, shifting the whole output), and so is a
 *     group-1 one with output_padding > padding at stride 3 (relative error 0.4-1.0);
 *   - a depthwise one (one channel per group in and out) at stride > 1 with a kernel wider
 *     than 3 is wrong with or without output_padding (0.1-1.0 at 5x5, strides 2 and 3); 3x3
 *     is right without output_padding and in the form below.
 * Where output_padding needs folding (group > 1, or stride > 2) the same output is described
 * without it: cropping p - op instead of p at the bottom/right leaves the output the same
 * size, and the rows/cols op adds past a crop of p are exactly the ones the smaller crop keeps,
 * so pad_amount [p, p - op] with output_padding 0 is exact (and computed right). That needs
 * p >= op. Otherwise [[p, p], ..] and op. pads is pad_amount's [[top, bottom], [left,
 * right]]; tstride the TransposeConv2d's stride, a->stride but for the zero-insertion form:
 *   - a depthwise one at stride s > 1 wider than 3 gets its input's zeros inserted explicitly
 *     (zero_insert: s - 1 zeros after every row and column, [N, sH, sW, C]) and runs at stride
 *     1 with pad_amount [p, p + s - 1 - op] and output_padding 0: the same sums (a stride-s
 *     TransposeConv2d is the stride-1 one of the zero-interleaved input, s(H-1)+1 rows; the
 *     s - 1 trailing zero rows, less the op rows output_padding adds, are cropped at the
 *     bottom), exact, and measured right (relative error 3e-4 to 8e-4, fp16's, for 5x5 and 7x7,
 *     even and odd sizes, output_padding 0 and 1, static and runtime filters; the stride-2 form
 *     is wrong at 7x7 with output_padding there too: 1.2-1.6). The filter is the same tensor. */
static bool tconv_pads(const eg_graph *g, const conv_args *a, const int64_t op[2],
                       uint32_t pads[4], int64_t out_pad[2], int64_t tstride[2], char *reason,
                       size_t size) {
  const int64_t *w = g->values[a->w].shape; /* [in, out / group, kH, kW] or [out, in / g, ..] */
  const bool depthwise = w[0] == a->groups && w[1] == 1;
  bool zeros = false;
  for (int d = 0; d < 2; d++)
    zeros |= depthwise && a->stride[d] > 1 && dilated_kernel(a, w, d) > 3;
  for (int d = 0; d < 2; d++) {
    tstride[d] = zeros ? 1 : a->stride[d];
    if (zeros) {
      pads[2 * d] = (uint32_t)a->pad[d];
      pads[2 * d + 1] = (uint32_t)(a->pad[d] + a->stride[d] - 1 - op[d]);
      out_pad[d] = 0;
      continue;
    }
    const bool fold = op[d] > 0 && (a->groups > 1 || a->stride[d] > 2);
    if (fold && op[d] > a->pad[d]) {
      snprintf(reason, size, "output_padding %lld > padding %lld with group %lld, stride %lld: "
               "QNN HTP computes such a TransposeConv2d wrong (measured: shifted); no exact form "
               "lowered", (long long)op[d], (long long)a->pad[d], (long long)a->groups,
               (long long)a->stride[d]);
      return false;
    }
    pads[2 * d] = (uint32_t)a->pad[d];
    pads[2 * d + 1] = (uint32_t)(fold ? a->pad[d] - op[d] : a->pad[d]);
    out_pad[d] = fold ? 0 : op[d];
  }
  return true;
}

/* ---- QNN params ---- */

static eg_htp_qnn_param pair_param(const char *name, const int64_t v[2]) {
  const uint32_t dims[1] = {2}, vals[2] = {(uint32_t)v[0], (uint32_t)v[1]};
  return eg_htp_qnn_param_u32_tensor(name, 1, dims, vals);
}

/* ---- ops inside the partition ---- */

/* Transpose of rank-4 tensor `in` into tensor `out` (out axis j = in axis perm[j]). */
static eg_status transpose_into(eg_htp_lower *L, int32_t in, const uint32_t perm[4], int32_t out) {
  const uint32_t perm_dims[1] = {4};
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor("perm", 1, perm_dims, perm);
  return eg_htp_op(L, EG_HTP_QNN_OP_TRANSPOSE, &in, 1, &out, 1, &p, 1);
}

static eg_status emit_reshape(eg_htp_lower *L, int32_t in, const uint32_t dims[4],
                              const char *what, int32_t *out) {
  EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, dims, out));
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &in, 1, out, 1, NULL, 0);
}

/* Whether permuting `in_dims` by `perm` keeps the memory order: the axes longer than 1 stay in
 * their order, so the Transpose only moves axes of size 1 and is a Reshape (a 1x1 kernel's
 * HWOI filter from ATen's [Cout, Cin, 1, 1], a batch of 1 moved inward). */
static bool keeps_order(const uint32_t in_dims[4], const uint32_t perm[4]) {
  int last = -1;
  for (int j = 0; j < 4; j++) {
    if (in_dims[perm[j]] == 1) continue;
    if ((int)perm[j] < last) return false;
    last = (int)perm[j];
  }
  return true;
}

/* The same into a new NATIVE tensor named `what`: none where it is already in that order, a
 * Reshape where the permutation keeps the memory order (keeps_order: QNN's HTP emulator runs a
 * Transpose at the cost of a copy, a Reshape as a view). */
static eg_status emit_transpose(eg_htp_lower *L, int32_t in, const uint32_t in_dims[4],
                                const uint32_t perm[4], const char *what, int32_t *out) {
  if (perm[0] == 0 && perm[1] == 1 && perm[2] == 2 && perm[3] == 3) { /* already in that order */
    *out = in;
    return EG_OK;
  }
  const uint32_t dims[4] = {in_dims[perm[0]], in_dims[perm[1]], in_dims[perm[2]],
                            in_dims[perm[3]]};
  if (keeps_order(in_dims, perm)) return emit_reshape(L, in, dims, what, out);
  EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, dims, out));
  return transpose_into(L, in, perm, *out);
}

/* Pad (scheme CONSTANT, 0) of rank-4 tensor `in` by pads [[before, after] x 4] into `out`. */
static eg_status pad_into(eg_htp_lower *L, int32_t in, const uint32_t pads[8], int32_t out) {
  const uint32_t pad_dims[2] = {4, 2};
  const eg_htp_qnn_param p[3] = {eg_htp_qnn_param_u32("scheme", 0),
                             eg_htp_qnn_param_u32_tensor("pad_amount", 2, pad_dims, pads),
                             eg_htp_qnn_param_f32("pad_constant_value", 0.0f)};
  return eg_htp_op(L, EG_HTP_QNN_OP_PAD, &in, 1, &out, 1, p, 3);
}

/* The same into a new NATIVE tensor named `what` (in's dims in_dims). */
static eg_status emit_pad(eg_htp_lower *L, int32_t in, const uint32_t in_dims[4],
                          const uint32_t pads[8], const char *what, int32_t *out) {
  uint32_t dims[4];
  for (int d = 0; d < 4; d++) dims[d] = in_dims[d] + pads[2 * d] + pads[2 * d + 1];
  EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, dims, out));
  return pad_into(L, in, pads, *out);
}

/* A rank-4 tensor's dims less the rows/cols a Pad of `extra` adds (split_pads): the dims of
 * the tensor that Pad reads. */
static void unpadded_dims(const uint32_t dims[4], const uint32_t extra[8], uint32_t core[4]) {
  for (int d = 0; d < 4; d++) core[d] = dims[d] - extra[2 * d] - extra[2 * d + 1];
}

/* The end of a convolution whose padding split_pads divided: its result `core` (without bias)
 * padded with the zero rows/cols `extra` into `out`, or, with a bias (-1: none), into a temp
 * to which the bias is added into `out` (the padded rows get the bias too). */
static eg_status padded_output(eg_htp_lower *L, int32_t core, const uint32_t core_dims[4],
                               const uint32_t extra[8], int32_t bias, int32_t out) {
  if (bias < 0) return pad_into(L, core, extra, out);
  int32_t in[2];
  EG_TRY(emit_pad(L, core, core_dims, extra, "conv_padded", &in[0]));
  in[1] = bias;
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, in, 2, &out, 1, NULL, 0);
}

/* The zero-insertion form of a TransposeConv2d (tconv_pads): where its stride tstride is below
 * the convolution's `stride`, NHWC tensor *x (IR value `value`, [N, H, W, C]) is replaced by
 * the same with stride - 1 zeros after each row and column, [N, sH, sW, C]: rows by
 * Reshape [N*H, 1, W*C, 1] -> Pad [0, sH - 1] of dim 1 -> Reshape [N*H*sH, W, 1, C], columns
 * by Pad [0, sW - 1] of dim 2 -> Reshape [N, sH*H, sW*W, C] (every step rank 4, contiguous
 * reshapes only). */
static eg_status zero_insert(eg_htp_lower *L, const eg_graph *g, int32_t value,
                             const int64_t stride[2], const int64_t tstride[2], int32_t *x) {
  if (tstride[0] == stride[0] && tstride[1] == stride[1]) return EG_OK;
  uint32_t d[4];
  eg_htp_dims(&g->values[value], d);
  const uint32_t sh = (uint32_t)stride[0], sw = (uint32_t)stride[1];
  const uint32_t rows[4] = {d[0] * d[1], 1, d[2] * d[3], 1}, cols[4] = {d[0] * d[1] * sh, d[2], 1,
                                                                        d[3]};
  const uint32_t pad_rows[8] = {0, 0, 0, sh - 1, 0, 0, 0, 0};
  const uint32_t pad_cols[8] = {0, 0, 0, 0, 0, sw - 1, 0, 0};
  const uint32_t out[4] = {d[0], d[1] * sh, d[2] * sw, d[3]};
  int32_t t;
  EG_TRY(emit_reshape(L, *x, rows, "zi_rows", &t));
  EG_TRY(emit_pad(L, t, rows, pad_rows, "zi_rows_padded", &t));
  EG_TRY(emit_reshape(L, t, cols, "zi_cols", &t));
  EG_TRY(emit_pad(L, t, cols, pad_cols, "zi_cols_padded", &t));
  return emit_reshape(L, t, out, "zi_input", x);
}

/* The partition tensor of rank-4 IR value `value` with its axes permuted so that axis j is the
 * value's traced (ATen) axis want[j], whatever order the value is held in (eg_value.axes): a
 * Transpose inside the partition, named `what` (none when it is held so). */
static eg_status traced_axes(eg_htp_lower *L, const eg_graph *g, int32_t value, const int want[4],
                             const char *what, int32_t *out) {
  static const int held_nhwc[4] = {0, 2, 3, 1}; /* held axis k holds traced axis held[k] */
  const eg_value *v = &g->values[value];
  uint32_t dims[4], perm[4];
  int32_t in;
  EG_TRY(eg_htp_input(L, value, &in));
  eg_htp_dims(v, dims);
  for (int j = 0; j < 4; j++)
    for (int k = 0; k < 4; k++)
      if ((eg_htp_is_nhwc(v) ? held_nhwc[k] : k) == want[j]) perm[j] = (uint32_t)k;
  return emit_transpose(L, in, dims, perm, what, out);
}

/* The filter of ATen weight `w` in `layout`: a frozen weight is permuted once, at lowering, into
 * a STATIC tensor shared by every op asking for the same layout (eg_htp_filter); a trainable
 * one is a partition input permuted by a Transpose inside the partition, every step. */
static eg_status filter_of(eg_htp_lower *L, const eg_graph *g, int32_t w,
                           eg_htp_filter_layout layout, int32_t *out) {
  static const int axes[3][4] = {{2, 3, 1, 0}, {2, 3, 0, 1}, {2, 3, 1, 0}}; /* eg_htp_filter's */
  static const char *const names[3] = {"w_hwio", "w_tconv", "w_dw"};
  if (g->values[w].role == EG_ROLE_STATIC) return eg_htp_filter(L, w, layout, out);
  return traced_axes(L, g, w, axes[layout], names[layout], out);
}

/* ---- im2col ---- */

#define IM2COL_MAX_TAPS 64 /* a 7x7 kernel has 49 */

/* The input pixels kernel tap (a, b) of a groups-1 convolution `a` of weight shape `w` meets,
 * for each tap in row-major order: xp at (y*s + a*d, x*s + b*d) for the Ho x Wo output pixels,
 * xp the input zero-padded by p before and pb after (so the last tap's window fits):
 *   X   [N, H + p + pb, W + p + pb, ci] = Pad(x NHWC)  (no Pad when p = pb = 0)
 *   taps[t] = Reshape(StridedSlice(X; rows a*d, stride s; cols b*d, stride s)) to `dims` (rank
 *             `rank`, N*Ho*Wo x ci elements; dims NULL: the slice [N, Ho, Wo, ci] itself), or
 *             X where the slice would be all of it (a 1x1 unpadded kernel at stride 1). */
static eg_status tap_pixels(eg_htp_lower *L, const eg_graph *g, const conv_args *a,
                            const int64_t *w, uint32_t ho, uint32_t wo, int rank,
                            const uint32_t *dims, int32_t taps[]) {
  const eg_value *x = &g->values[a->x];
  static const int nhwc[4] = {0, 2, 3, 1};
  const uint32_t n = eg_htp_qnn_dim(x->shape[0]), ci = eg_htp_qnn_dim(w[1]),
                 kh = eg_htp_qnn_dim(w[2]), kw = eg_htp_qnn_dim(w[3]);
  uint32_t xdims[4] = {n, eg_htp_qnn_dim(x->shape[2]), eg_htp_qnn_dim(x->shape[3]), ci};
  uint32_t pads[8] = {0};
  bool padded = false;
  for (int d = 0; d < 2; d++) {
    const int64_t need = ((int64_t)(d ? wo : ho) - 1) * a->stride[d] + (w[2 + d] - 1) * a->dil[d] +
                         1 - x->shape[2 + d] - a->pad[d];
    pads[2 + 2 * d] = (uint32_t)a->pad[d];
    pads[3 + 2 * d] = need > 0 ? (uint32_t)need : 0;
    padded = padded || pads[2 + 2 * d] || pads[3 + 2 * d];
  }
  int32_t xt;
  EG_TRY(traced_axes(L, g, a->x, nhwc, "x_nhwc", &xt));
  if (padded) {
    EG_TRY(emit_pad(L, xt, xdims, pads, "x_padded", &xt));
    for (int d = 1; d < 3; d++) xdims[d] += pads[2 * d] + pads[2 * d + 1];
  }
  const bool whole = xdims[1] == ho && xdims[2] == wo && kh * kw == 1;
  const uint32_t slicedims[4] = {n, ho, wo, ci}, rdims[2] = {4, 3};
  for (uint32_t ta = 0; ta < kh; ta++)
    for (uint32_t tb = 0; tb < kw; tb++) {
      const uint32_t t = ta * kw + tb, r0 = ta * (uint32_t)a->dil[0],
                     c0 = tb * (uint32_t)a->dil[1];
      const int32_t ranges[12] = {
          0, (int32_t)n, 1,
          (int32_t)r0, (int32_t)(r0 + (ho - 1) * a->stride[0] + 1), (int32_t)a->stride[0],
          (int32_t)c0, (int32_t)(c0 + (wo - 1) * a->stride[1] + 1), (int32_t)a->stride[1],
          0, (int32_t)ci, 1};
      const eg_htp_qnn_param r = eg_htp_qnn_param_i32_tensor("ranges", 2, rdims, ranges);
      char what[48];
      int32_t xs = xt;
      if (!whole) {
        snprintf(what, sizeof what, "dw_tap%u_x", t);
        EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, slicedims, &xs));
        EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_STRIDED_SLICE, &xt, 1, &xs, 1, &r, 1));
      }
      taps[t] = xs;
      if (!dims) continue;
      snprintf(what, sizeof what, "dw_tap%u_rows", t);
      EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, rank, dims, &taps[t]));
      EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &xs, 1, &taps[t], 1, NULL, 0));
    }
  return EG_OK;
}

/* The im2col of tap_pixels' `t_count` taps: their Concat along `axis` (a tensor of rank
 * `rank`, `catdims`) reshaped to `dims`; the one tap of a 1x1 kernel reshaped to `dims`. */
static eg_status join_taps(eg_htp_lower *L, const int32_t *taps, uint32_t t_count, int rank,
                           const uint32_t *catdims, uint32_t axis, const uint32_t dims[4],
                           const char *what, int32_t *out) {
  if (t_count == 1) return emit_reshape(L, taps[0], dims, what, out);
  int32_t cat;
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32("axis", axis);
  EG_TRY(eg_htp_temp(L, "x_im2col", EG_HTP_QNN_DTYPE_FLOAT_32, rank, catdims, &cat));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_CONCAT, taps, (int32_t)t_count, &cat, 1, &p, 1));
  return emit_reshape(L, cat, dims, what, out);
}

/* out [1, 1, rows, cout] = Conv2d(in0 [1, 1, rows, k], filter [1, 1, k, cout]): a 1x1 Conv2d,
 * stride 1, no padding, dilation 1, group 1, as a matrix product of its two inputs. */
static eg_status pointwise_conv(eg_htp_lower *L, int32_t in0, int32_t filter, int32_t out) {
  const int64_t one[2] = {1, 1};
  const uint32_t pad_dims[2] = {2, 2}, pads[4] = {0, 0, 0, 0};
  const eg_htp_qnn_param p[4] = {pair_param("stride", one),
                             eg_htp_qnn_param_u32_tensor("pad_amount", 2, pad_dims, pads),
                             pair_param("dilation", one), eg_htp_qnn_param_u32("group", 1)};
  const int32_t in[2] = {in0, filter};
  return eg_htp_op(L, EG_HTP_QNN_OP_CONV_2D, in, 2, &out, 1, p, 4);
}

/* ---- aten.convolution ---- */

typedef enum fwd_kind { FWD_CONV, FWD_DEPTHWISE, FWD_TRANSPOSE } fwd_kind;

/* A non-transposed conv with one input channel per group and more than one group runs as
 * DepthWiseConv2d (filter [kH, kW, 1, Cout]). groups == 1 stays a Conv2d even when Cin == 1:
 * its HWIO filter is then the very tensor a backward composite of the same weight reads (a
 * DepthWiseConv2d filter would be a second STATIC copy under another layout key). */
static bool is_depthwise(const conv_args *a, int64_t cin) {
  return a->groups > 1 && a->groups == cin;
}

/* A non-transposed forward whose padding goes partly into an explicit Pad (split_pads). */
static bool fwd_explicit_pad(const eg_graph *g, const conv_args *a) {
  const int64_t *w = g->values[a->w].shape;
  return !a->transposed &&
         pad_reaches_kernel((const int64_t[2]){w[2], w[3]}, a->stride, a->dil, a->pad);
}

/* Decides the forward lowering; false (with the reason) when there is none. */
static bool fwd_plan(const eg_graph *g, const eg_node *n, conv_args *a, fwd_kind *kind,
                     char *reason, size_t size) {
  if (read_args(n, 0, a) != EG_OK) {
    snprintf(reason, size, "unreadable convolution arguments");
    return false;
  }
  if (!operand_ok(g, a->x, "input", 4, reason, size) ||
      !operand_ok(g, a->w, "weight", 4, reason, size) ||
      (a->b >= 0 && !operand_ok(g, a->b, "bias", 1, reason, size)))
    return false;
  /* quantized x / W (pass fold_qdq): the lowering gives them fixed-point tensors with their
   * encodings and the executor dequantizes them (executor.h), so the forward accepts them */
  if (!lists_ok(a, reason, size) || !weight_ok(g, a, reason, size)) return false;
  const int64_t cin = g->values[a->x].shape[1];
  if (a->transposed) {
    *kind = FWD_TRANSPOSE;
    uint32_t pads[4];
    int64_t op[2], tstride[2];
    if (!dilation_one(a, reason, size) || !out_pad_ok(a->out_pad, a->stride, reason, size) ||
        !tconv_pads(g, a, a->out_pad, pads, op, tstride, reason, size))
      return false;
    if ((tstride[0] != a->stride[0] || tstride[1] != a->stride[1]) &&
        quantized(&g->values[a->x])) {
      snprintf(reason, size, "quantized input of a depthwise TransposeConv2d wider than 3 at "
               "stride > 1: its zero-insertion form (QNN HTP computes the strided one wrong) is "
               "float only");
      return false;
    }
    return true;
  }
  *kind = is_depthwise(a, cin) ? FWD_DEPTHWISE : FWD_CONV;
  if (*kind == FWD_DEPTHWISE && (a->stride[0] > 1 || a->stride[1] > 1) &&
      (a->dil[0] > 1 || a->dil[1] > 1)) {
    snprintf(reason, size, "depthwise with stride [%lld, %lld] and dilation [%lld, %lld]: QNN "
             "HTP refuses such a DepthWiseConv2d (measured)", (long long)a->stride[0],
             (long long)a->stride[1], (long long)a->dil[0], (long long)a->dil[1]);
    return false;
  }
  if (fwd_explicit_pad(g, a) && quantized(&g->values[a->x])) {
    snprintf(reason, size, "quantized input with stride 1 and a padding that reaches the "
             "kernel's width: QNN HTP computes such a Conv2d wrong (measured: relative error "
             "1-1e4) and the explicit Pad lowered instead is float only");
    return false;
  }
  return true;
}

/* A float 1x1 Conv2d with stride > 1 and no padding reads every s-th pixel of its input and
 * nothing else: it runs as a StridedSlice of those pixels and a stride-1 Conv2d. QNN HTP's
 * emulator crashes (SIGSEGV reading past a buffer) running ResNet-50's layer4 downsample, a 1x1
 * stride-2 Conv2d from [2, 4, 4, 1024] to 2048 channels followed by its training batch norm, as
 * one strided Conv2d; the same graph with the slice runs (measured through onnxruntime-qnn
 * 2.7.0, QNN 2.51). A quantized input keeps the strided Conv2d (the slice would need its
 * encodings). */
static bool pointwise_subsample(const eg_graph *g, const conv_args *a, fwd_kind kind) {
  const int64_t *w = g->values[a->w].shape;
  return kind == FWD_CONV && w[2] == 1 && w[3] == 1 && (a->stride[0] > 1 || a->stride[1] > 1) &&
         a->pad[0] == 0 && a->pad[1] == 0 && !quantized(&g->values[a->x]);
}

/* The pixels (s0 * i, s1 * j) of NHWC input *x: [N, ceil(H / s0), ceil(W / s1), C]. */
static eg_status subsample_input(eg_htp_lower *L, const eg_graph *g, const conv_args *a,
                                 int32_t *x) {
  uint32_t d[4];
  eg_htp_dims(&g->values[a->x], d);
  const uint32_t s0 = (uint32_t)a->stride[0], s1 = (uint32_t)a->stride[1];
  const uint32_t out[4] = {d[0], (d[1] + s0 - 1) / s0, (d[2] + s1 - 1) / s1, d[3]};
  const int32_t ranges[12] = {0, (int32_t)d[0], 1, 0, (int32_t)d[1], (int32_t)s0,
                              0, (int32_t)d[2], (int32_t)s1, 0, (int32_t)d[3], 1};
  const uint32_t rdims[2] = {4, 3};
  const eg_htp_qnn_param r = eg_htp_qnn_param_i32_tensor("ranges", 2, rdims, ranges);
  int32_t sliced;
  EG_TRY(eg_htp_temp(L, "input_subsampled", EG_HTP_QNN_DTYPE_FLOAT_32, 4, out, &sliced));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_STRIDED_SLICE, x, 1, &sliced, 1, &r, 1));
  *x = sliced;
  return EG_OK;
}

static bool conv_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                          char *reason, size_t size) {
  (void)t;
  conv_args a;
  fwd_kind kind;
  return fwd_plan(g, n, &a, &kind, reason, size);
}

static eg_status conv_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  conv_args a;
  fwd_kind kind;
  char why[256];
  if (!fwd_plan(g, n, &a, &kind, why, sizeof why))
    return eg_node_error(n, EG_ERR_INVALID, "convolution lowering: %s", why);
  static const eg_htp_filter_layout layout[3] = {EG_HTP_FILTER_HWIO, EG_HTP_FILTER_DEPTHWISE,
                                                 EG_HTP_FILTER_TCONV};
  static const eg_htp_qnn_op op[3] = {EG_HTP_QNN_OP_CONV_2D, EG_HTP_QNN_OP_DEPTH_WISE_CONV_2D,
                                  EG_HTP_QNN_OP_TRANSPOSE_CONV_2D};
  int32_t in[3], out;
  EG_TRY(eg_htp_want_axes(L, a.x, EG_AXES_NHWC, "input"));
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_NHWC, "result"));
  EG_TRY(eg_htp_input(L, a.x, &in[0]));
  uint32_t tc_pads[4];
  int64_t tc_out_pad[2], tstride[2];
  if (kind == FWD_TRANSPOSE) { /* fwd_plan accepted these: tconv_pads succeeds */
    (void)tconv_pads(g, &a, a.out_pad, tc_pads, tc_out_pad, tstride, why, sizeof why);
    EG_TRY(zero_insert(L, g, a.x, a.stride, tstride, &in[0]));
  }
  uint32_t pads[4] = {(uint32_t)a.pad[0], (uint32_t)a.pad[0], (uint32_t)a.pad[1],
                      (uint32_t)a.pad[1]}, extra[8], core[4];
  const int64_t *w = g->values[a.w].shape;
  if (pointwise_subsample(g, &a, kind)) {
    EG_TRY(subsample_input(L, g, &a, &in[0]));
    a.stride[0] = a.stride[1] = 1;
  }
  const bool split = kind != FWD_TRANSPOSE &&
                     split_pads((const int64_t[2]){w[2], w[3]}, a.stride, a.dil, pads, extra);
  EG_TRY(filter_of(L, g, a.w, layout[kind], &in[1]));
  if (a.b >= 0) EG_TRY(eg_htp_input(L, a.b, &in[2]));
  EG_TRY(eg_htp_define(L, n->output, &out));
  int32_t conv_out = out; /* split: the conv without the zero rows/cols and the bias */
  if (split) {
    uint32_t dims[4];
    eg_htp_dims(&g->values[n->output], dims);
    unpadded_dims(dims, extra, core);
    EG_TRY(eg_htp_temp(L, "conv_core", EG_HTP_QNN_DTYPE_FLOAT_32, 4, core, &conv_out));
  }
  eg_htp_qnn_param p[4] = {pair_param("stride", a.stride),
                       eg_htp_qnn_param_u32_tensor("pad_amount", 2, (const uint32_t[]){2, 2}, pads)};
  int np = 2;
  if (kind == FWD_TRANSPOSE) {
    p[0] = pair_param("stride", tstride);
    p[1] = eg_htp_qnn_param_u32_tensor("pad_amount", 2, (const uint32_t[]){2, 2}, tc_pads);
    p[np++] = pair_param("output_padding", tc_out_pad);
    p[np++] = eg_htp_qnn_param_u32("group", (uint32_t)a.groups);
  } else {
    p[np++] = pair_param("dilation", a.dil);
    if (kind == FWD_CONV) p[np++] = eg_htp_qnn_param_u32("group", (uint32_t)a.groups);
  }
  EG_TRY(eg_htp_op(L, op[kind], in, a.b >= 0 && !split ? 3 : 2, &conv_out, 1, p, np));
  return split ? padded_output(L, conv_out, core, extra, a.b >= 0 ? in[2] : -1, out) : EG_OK;
}

/* ---- aten.convolution_backward ---- */

typedef struct bwd_plan_t {
  conv_args a;           /* a.x: the forward input (argument 1), read for grad_weight only */
  int32_t gy;            /* grad_output */
  int32_t grad_input, grad_weight, grad_bias; /* the elements computed, -1 when not */
  int64_t out_pad[2];    /* derived, for grad_input */
  uint32_t tc_pads[4];   /* grad_input's TransposeConv2d pad_amount, output_padding and */
  int64_t tc_out_pad[2]; /* stride, from tconv_pads */
  int64_t tc_stride[2];
} bwd_plan_t;

/* Decides the backward lowering; false (with the reason) when there is none. The order of the
 * checks fixes which single reason a node gets when several apply. */
static bool bwd_plan(const eg_graph *g, const eg_node *n, bwd_plan_t *pl, char *reason,
                     size_t size) {
  bool mask[3];
  char m[64];
  if (read_args(n, 1, &pl->a) != EG_OK ||
      eg_arg_bool_list(n, 10, "output_mask", mask, 3) != EG_OK || n->output < 0 ||
      g->values[n->output].kind != EG_VALUE_TUPLE || g->values[n->output].n_elems != 3) {
    snprintf(reason, size, "unreadable convolution_backward arguments");
    return false;
  }
  const int32_t *el = g->values[n->output].elems;
  pl->gy = eg_htp_arg(n, 0, "grad_output");
  pl->grad_input = el[0];
  pl->grad_bias = el[2];
  /* 1. what is computed: PyTorch 1.13 traces a grad_weight element even for output_mask
   *    [*, False, True]; one nothing reads is not computed here (its getitem names nothing) */
  pl->grad_weight = el[1] >= 0 && eg_htp_elem_used(g, n, 1) ? el[1] : -1;
  if (pl->grad_input < 0 && pl->grad_weight < 0 && pl->grad_bias < 0) {
    snprintf(reason, size, "no gradient is computed (output_mask %s)",
             fmt_mask(m, sizeof m, mask));
    return false;
  }
  /* 2. operands: rank-4 float32 grad_output / input / weight */
  if (!operand_ok(g, pl->gy, "grad_output", 4, reason, size) ||
      !operand_ok(g, pl->a.x, "input", 4, reason, size) ||
      !operand_ok(g, pl->a.w, "weight", 4, reason, size))
    return false;
  /* 3. quantization, on the values' metadata (see quantized()); the forward input is read
   *    only by the grad_weight convolution */
  if (quantized(&g->values[pl->gy]) || quantized(&g->values[pl->a.w])) {
    snprintf(reason, size, "quantized grad_output/weight");
    return false;
  }
  if (pl->grad_weight >= 0 && quantized(&g->values[pl->a.x])) {
    snprintf(reason, size, "quantized input: the grad_weight convolution reads it as float");
    return false;
  }
  /* 4. the convolution's kind and attributes */
  if (pl->a.transposed) {
    snprintf(reason, size, "transposed=True unsupported");
    return false;
  }
  if (!lists_ok(&pl->a, reason, size)) return false;
  /* grad_weight's Conv2d has the forward dilation as stride and the forward stride as
   * dilation: QNN HTP refused 5 of 25 such Conv2d with both > 1 in the conformance sweep
   * (measured through onnxruntime-qnn 2.7.0, QNN 2.51), with no rule found in their shapes */
  const bool strided = pl->a.stride[0] > 1 || pl->a.stride[1] > 1;
  const bool dilated = pl->a.dil[0] > 1 || pl->a.dil[1] > 1;
  if (pl->grad_weight >= 0 && strided && dilated) {
    snprintf(reason, size, "grad_weight with stride [%lld, %lld] and dilation [%lld, %lld]: its "
             "Conv2d would have both > 1, which QNN HTP refuses for some shapes (measured)",
             (long long)pl->a.stride[0], (long long)pl->a.stride[1], (long long)pl->a.dil[0],
             (long long)pl->a.dil[1]);
    return false;
  }
  /* grad_weight's Conv2d (grad_output as the kernel, the forward's dilation as its stride and
   * the forward's stride as its dilation) with a padding that reaches that kernel: part of it
   * goes into a Pad (split_pads) */
  /* 5. grad_input: TransposeConv2d has no dilation: it runs with the dilated kernel (k - 1) * d
   *    + 1 (dilate_filter), ke; its output_padding makes grad_input exactly input's size:
   *    H_in = (H_out-1)*s - 2p + ke + op, i.e. op = H_in - ((H_out-1)*s - 2p + ke) */
  if (pl->grad_input >= 0) {
    const eg_value *x = &g->values[pl->a.x], *gy = &g->values[pl->gy], *w = &g->values[pl->a.w];
    for (int d = 0; d < 2; d++)
      pl->out_pad[d] = x->shape[2 + d] - ((gy->shape[2 + d] - 1) * pl->a.stride[d] -
                                          2 * pl->a.pad[d] + dilated_kernel(&pl->a, w->shape, d));
    if (!out_pad_ok(pl->out_pad, pl->a.stride, reason, size) ||
        !tconv_pads(g, &pl->a, pl->out_pad, pl->tc_pads, pl->tc_out_pad, pl->tc_stride, reason,
                    size))
      return false;
  }
  return true;
}

static bool conv_bwd_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                              char *reason, size_t size) {
  (void)t;
  bwd_plan_t pl;
  return bwd_plan(g, n, &pl, reason, size);
}

/* The zero-insertion matrix of one kernel dim, E [(k-1)*d + 1, k] with E[i*d, i] = 1 (0
 * elsewhere): E times a column of k taps spreads them d apart. A STATIC tensor. */
static eg_status dilation_matrix(eg_htp_lower *L, const char *what, uint32_t k, uint32_t dil,
                                 int32_t *tensor) {
  const uint32_t ke = (k - 1) * dil + 1, dims[2] = {ke, k};
  float *m = calloc((size_t)ke * k, sizeof *m);
  if (!m) return eg_error(EG_ERR_NOMEM, "lowering convolution_backward: out of memory (%ux%u "
                          "dilation matrix)", ke, k);
  for (uint32_t i = 0; i < k; i++) m[(size_t)i * dil * k + i] = 1.0f;
  const eg_status st = eg_htp_const_f32(L, what, 2, dims, m, tensor);
  free(m);
  return st;
}

/* grad_input of a dilated convolution is the TransposeConv2d of the dilated kernel W_d
 * [(kH-1)*dH + 1, (kW-1)*dW + 1, Cout, Cin/g] (d - 1 zeros between taps) at dilation 1.
 * *w (the HWOI filter, [kH, kW, Cout, Cin/g]) is replaced by W_d, built inside the partition
 * from that very tensor (the weight stays stored once, frozen or trainable): zero insertion
 * along both kernel axes is the separable map W_d = E_h W E_w^T of eg_htp_separable_map on the
 * view [1, kH, kW, Cout*Cin/g] (Reshapes around it), E the 0/1 dilation_matrix of each dilated
 * axis (an undilated axis keeps its taps: no MatMul). Exact in fp16 too: each output element
 * is one tap times 1 plus zeros. Dilation [1, 1] leaves *w as it is. */
static eg_status dilate_filter(eg_htp_lower *L, const conv_args *a, const int64_t *wshape,
                               int32_t *w) {
  if (a->dil[0] == 1 && a->dil[1] == 1) return EG_OK;
  const uint32_t kh = eg_htp_qnn_dim(wshape[2]), kw = eg_htp_qnn_dim(wshape[3]),
                 rest = eg_htp_qnn_dim(wshape[0] * wshape[1]);
  const uint32_t keh = (uint32_t)dilated_kernel(a, wshape, 0),
                 kew = (uint32_t)dilated_kernel(a, wshape, 1);
  const uint32_t view[4] = {1, kh, kw, rest}, dilated[4] = {1, keh, kew, rest},
                 filter[4] = {keh, kew, eg_htp_qnn_dim(wshape[0]), eg_htp_qnn_dim(wshape[1])};
  int32_t flat, spread, rows = -1, cols = -1;
  if (a->dil[0] > 1) EG_TRY(dilation_matrix(L, "dilate_rows", kh, (uint32_t)a->dil[0], &rows));
  if (a->dil[1] > 1) EG_TRY(dilation_matrix(L, "dilate_cols", kw, (uint32_t)a->dil[1], &cols));
  EG_TRY(emit_reshape(L, *w, view, "w_taps", &flat));
  EG_TRY(eg_htp_temp(L, "w_dilated_taps", EG_HTP_QNN_DTYPE_FLOAT_32, 4, dilated, &spread));
  EG_TRY(eg_htp_separable_map_into(L, flat, view, keh, kew, cols, rows, spread));
  return emit_reshape(L, spread, filter, "w_dilated", w);
}

/* grad_input = TransposeConv2d(grad_output, W_hwoi; group g), W_hwoi [kH, kW, Cout, Cin/g] (its
 * [kH, kW, Cin, Cout/group] with the roles of Cin and Cout swapped). A frozen weight: a Transpose
 * (perm [0,1,3,2]) of the forward's STATIC filter (HWIO, or DepthWiseConv2d's [kH, kW, 1, Cout]
 * for a depthwise conv: the same layout key the forward asks for, so the weight is stored once);
 * a trainable one: a Transpose of the ATen weight straight to HWOI. */
static eg_status lower_grad_input(eg_htp_lower *L, const eg_graph *g, const bwd_plan_t *pl,
                                  int32_t gy) {
  const eg_value *w = &g->values[pl->a.w];
  const int64_t cin = g->values[pl->a.x].shape[1];
  int32_t w_hwoi, in[2], gx;
  if (w->role == EG_ROLE_STATIC) {
    const eg_htp_filter_layout layout =
        is_depthwise(&pl->a, cin) ? EG_HTP_FILTER_DEPTHWISE : EG_HTP_FILTER_HWIO;
    const uint32_t fwd[4] = {eg_htp_qnn_dim(w->shape[2]), eg_htp_qnn_dim(w->shape[3]),
                             eg_htp_qnn_dim(w->shape[1]), eg_htp_qnn_dim(w->shape[0])};
    const uint32_t perm[4] = {0, 1, 3, 2};
    int32_t w_fwd;
    EG_TRY(eg_htp_filter(L, pl->a.w, layout, &w_fwd));
    EG_TRY(emit_transpose(L, w_fwd, fwd, perm, "w_hwoi", &w_hwoi));
  } else {
    static const int hwoi[4] = {2, 3, 0, 1};
    EG_TRY(traced_axes(L, g, pl->a.w, hwoi, "w_hwoi", &w_hwoi));
  }
  EG_TRY(dilate_filter(L, &pl->a, w->shape, &w_hwoi));
  EG_TRY(eg_htp_define(L, pl->grad_input, &gx));
  in[0] = gy;
  EG_TRY(zero_insert(L, g, pl->gy, pl->a.stride, pl->tc_stride, &in[0]));
  in[1] = w_hwoi;
  const eg_htp_qnn_param p[4] = {pair_param("stride", pl->tc_stride),
                             eg_htp_qnn_param_u32_tensor("pad_amount", 2, (const uint32_t[]){2, 2},
                                                     pl->tc_pads),
                             pair_param("output_padding", pl->tc_out_pad),
                             eg_htp_qnn_param_u32("group", (uint32_t)pl->a.groups)};
  return eg_htp_op(L, EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, in, 2, &gx, 1, p, 4);
}

/* Where lower_grad_weight's Conv2d has dilation (the forward stride) > 1, groups 1 and
 * ci * Cout at least this, QNN HTP's fast graph preparation (QNN 2.51,
 * htp_graph_finalization_optimization_mode 1) computes it wrong (relative error 2e3 to 5e3,
 * garbage; its default effort is right): measured with batch ci x Cout 256 x 512, 256 x 384,
 * 384 x 256, 512 x 128, 512 x 256, 1024 x 128, 2048 x 64, 512 x 1024 and 1024 x 2048, kernels
 * 1x1 to 4x4, dilation 2 to 4 (ResNet's layer4 downsample and first 3x3 in a full-training
 * step), right at 256 x 256, 128 x 512 (products of 65536 too), 256 x 128 and below. Such a
 * grad_weight (at most IM2COL_MAX_TAPS taps) takes the tap form (lower_grad_weight_taps),
 * right in both; the bound is half the smallest failing product, so the boundary, which the
 * measurements do not pin down, is not approached. */
#define TAP_FORM_MIN_PRODUCT 32768

/* grad_weight of a strided convolution (groups 1) as one MatMul per kernel tap (a, b):
 * dW[o, i, a, b] = sum_{n,y,x} g[n,o,y,x] * xp[n, i, y*s + a*d, x*s + b*d]:
 *   Xab [N*Ho*Wo, ci]   = tap_pixels
 *   G   [N*Ho*Wo, Cout] = Reshape(grad_output NHWC)
 *   Tab [Cout, ci]      = MatMul(G, Xab; transpose_in0)
 *   grad_weight [Cout, ci, kH, kW] = Reshape(Concat over the taps of Tab as [Cout, ci, 1],
 *                                    axis 2), or Reshape(Tab) for a 1x1 kernel. */
static eg_status lower_grad_weight_taps(eg_htp_lower *L, const eg_graph *g,
                                        const bwd_plan_t *pl) {
  const eg_value *gyv = &g->values[pl->gy], *w = &g->values[pl->a.w];
  static const int nhwc[4] = {0, 2, 3, 1};
  const uint32_t n = eg_htp_qnn_dim(gyv->shape[0]), ci = eg_htp_qnn_dim(w->shape[1]),
                 cout = eg_htp_qnn_dim(w->shape[0]), kh = eg_htp_qnn_dim(w->shape[2]),
                 kw = eg_htp_qnn_dim(w->shape[3]), ho = eg_htp_qnn_dim(gyv->shape[2]),
                 wo = eg_htp_qnn_dim(gyv->shape[3]), m = n * ho * wo;
  const uint32_t g2dims[2] = {m, cout}, xabdims[2] = {m, ci}, tdims[2] = {cout, ci};
  const uint32_t t3dims[3] = {cout, ci, 1}, catdims[3] = {cout, ci, kh * kw};
  int32_t gt, g2, gw, xab[IM2COL_MAX_TAPS];
  EG_TRY(tap_pixels(L, g, &pl->a, w->shape, ho, wo, 2, xabdims, xab));
  EG_TRY(traced_axes(L, g, pl->gy, nhwc, "gy_nhwc", &gt));
  EG_TRY(eg_htp_temp(L, "gy_rows", EG_HTP_QNN_DTYPE_FLOAT_32, 2, g2dims, &g2));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &gt, 1, &g2, 1, NULL, 0));
  EG_TRY(eg_htp_want_axes(L, pl->grad_weight, EG_AXES_TRACED, "grad_weight"));
  EG_TRY(eg_htp_define(L, pl->grad_weight, &gw));
  const eg_htp_qnn_param mp[2] = {eg_htp_qnn_param_bool("transpose_in0", true),
                              eg_htp_qnn_param_bool("transpose_in1", false)};
  int32_t taps[IM2COL_MAX_TAPS];
  for (uint32_t t = 0; t < kh * kw; t++) {
    char what[48];
    int32_t in[2] = {g2, xab[t]}, tab;
    snprintf(what, sizeof what, "dw_tap%u", t);
    EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 2, tdims, &tab));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_MAT_MUL, in, 2, &tab, 1, mp, 2));
    if (kh * kw == 1) return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &tab, 1, &gw, 1, NULL, 0);
    snprintf(what, sizeof what, "dw_tap%u_col", t);
    EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 3, t3dims, &taps[t]));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &tab, 1, &taps[t], 1, NULL, 0));
  }
  int32_t cat;
  const eg_htp_qnn_param axis = eg_htp_qnn_param_u32("axis", 2);
  EG_TRY(eg_htp_temp(L, "dw_taps", EG_HTP_QNN_DTYPE_FLOAT_32, 3, catdims, &cat));
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_CONCAT, taps, (int32_t)(kh * kw), &cat, 1, &axis, 1));
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &cat, 1, &gw, 1, NULL, 0);
}

/* grad_weight (groups 1) as one 1x1 Conv2d with grad_output's N*Ho*Wo pixels as its input
 * channels, over the input pixels each kernel tap meets (im2col, taps innermost):
 * dW[o, i, t] = sum_m G[m, o] * Xt[m, i], m = (n, y, x), Xt = tap_pixels' tap t:
 *   P   [1, 1, M, ci*T] = Reshape(Concat over the taps of Xt as [1, M, ci, 1], axis 3), or
 *                         Xt as [1, 1, M, ci] for a 1x1 kernel (T = 1); the same Concat of
 *                         rank-3 pieces [M, ci, 1] along axis 2 QNN HTP computes wrong
 *                         (QNN 2.51, SM8550/8650/8750, fast preparation: relative error 1.6
 *                         for M 2, ci 2, a 5x5 kernel; conformance conv_npu_054)
 *   Gt  [1, 1, Cout, M] = Reshape(Transpose(grad_output NHWC -> [Cout, N, Ho, Wo]))
 *   grad_weight [Cout, ci, kH, kW] = Reshape(Conv2d(Gt, P) [1, 1, Cout, ci*T])
 * The result is in ATen's order already: one Transpose of grad_output, where the general form
 * (lower_grad_weight) transposes the input, grad_output and the weight-sized result; the im2col
 * tensor has T*M*ci elements, the result Cout*ci*T, so lower_grad_weight takes this form for
 * 1x1 unpadded kernels (no copy of the input at all) and where M <= Cout.
 * On QNN's HTP emulator (QNN 2.51, SM8650, bench/htp_cycles_ab.py) the Conv2d over M channels
 * also costs a fraction of the general form's Conv2d over N channels with an Ho x Wo kernel. */
static eg_status lower_grad_weight_pixels(eg_htp_lower *L, const eg_graph *g,
                                          const bwd_plan_t *pl) {
  const eg_value *gyv = &g->values[pl->gy], *w = &g->values[pl->a.w];
  static const int cnhw[4] = {1, 0, 2, 3};
  const uint32_t ci = eg_htp_qnn_dim(w->shape[1]), cout = eg_htp_qnn_dim(w->shape[0]),
                 t_count = eg_htp_qnn_dim(w->shape[2] * w->shape[3]),
                 m = eg_htp_qnn_dim(gyv->shape[0] * gyv->shape[2] * gyv->shape[3]);
  const uint32_t fdims[4] = {1, 1, m, ci * t_count}, gdims[4] = {1, 1, cout, m},
                 ydims[4] = {1, 1, cout, ci * t_count}, tdims[4] = {1, m, ci, 1},
                 catdims[4] = {1, m, ci, t_count};
  const uint32_t ho = eg_htp_qnn_dim(gyv->shape[2]), wo = eg_htp_qnn_dim(gyv->shape[3]);
  int32_t taps[IM2COL_MAX_TAPS], xf, gt, gr, y, gw;
  EG_TRY(tap_pixels(L, g, &pl->a, w->shape, ho, wo, 4, t_count > 1 ? tdims : NULL, taps));
  EG_TRY(join_taps(L, taps, t_count, 4, catdims, 3, fdims, "x_im2col_filter", &xf));
  EG_TRY(traced_axes(L, g, pl->gy, cnhw, "gy_cnhw", &gt));
  EG_TRY(emit_reshape(L, gt, gdims, "gy_cols", &gr));
  EG_TRY(eg_htp_temp(L, "dw_conv", EG_HTP_QNN_DTYPE_FLOAT_32, 4, ydims, &y));
  EG_TRY(pointwise_conv(L, gr, xf, y));
  EG_TRY(eg_htp_want_axes(L, pl->grad_weight, EG_AXES_TRACED, "grad_weight"));
  EG_TRY(eg_htp_define(L, pl->grad_weight, &gw));
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &y, 1, &gw, 1, NULL, 0);
}

/* grad_weight as one Conv2d: dW[o, i, a, b] = sum_{n,y,x} g[n,o,y,x] * x[n, q*ci + i,
 * y*s - p + a*d, x*s - p + b*d] (q = o's group, ci = Cin/g) is a convolution of the forward
 * input, with ci in the role of the batch and (group, image) as channels, by grad_output as the
 * filter ([Ho, Wo, N, Cout], group g), the forward stride as dilation and the forward dilation
 * as stride:
 *   X' [ci, H, W, g*N]  = x through Transpose (and, for g > 1, Reshapes: [N, HW, g, ci] ->
 *                         [ci, HW, g, N] -> [ci, H, W, g*N])
 *   F  [Ho, Wo, N, Cout] = Transpose(grad_output)
 *   Y  [ci, kH', kW', Cout] = Conv2d(X', F; stride d, dilation s, pad_amount [[p, pb], ..])
 *   grad_weight [Cout, ci, kH, kW] = Transpose(Y or StridedSlice(Y), perm [3, 0, 1, 2])
 * The pad after, pb = d(kH-1) + s(Ho-1) + 1 - H - p, makes kH' = kH exactly; where the forward
 * never read its last rows (pb < 0, e.g. a 1x1 stride-2 conv of an even input) pb is 0 and the
 * extra rows of Y are cropped by a StridedSlice. */
static eg_status lower_grad_weight(eg_htp_lower *L, const eg_graph *g, const bwd_plan_t *pl) {
  const eg_value *x = &g->values[pl->a.x], *gyv = &g->values[pl->gy], *w = &g->values[pl->a.w];
  const uint32_t groups = (uint32_t)pl->a.groups;
  const uint32_t n = eg_htp_qnn_dim(x->shape[0]), h = eg_htp_qnn_dim(x->shape[2]),
                 wd = eg_htp_qnn_dim(x->shape[3]), cout = eg_htp_qnn_dim(w->shape[0]),
                 ci = eg_htp_qnn_dim(w->shape[1]);
  const int64_t taps = w->shape[2] * w->shape[3],
                m = gyv->shape[0] * gyv->shape[2] * gyv->shape[3];
  if (groups == 1 && taps <= IM2COL_MAX_TAPS &&
      ((taps == 1 && pl->a.pad[0] == 0 && pl->a.pad[1] == 0) || m <= (int64_t)cout))
    return lower_grad_weight_pixels(L, g, pl);
  if (groups == 1 && (pl->a.stride[0] > 1 || pl->a.stride[1] > 1) &&
      (uint64_t)ci * cout >= TAP_FORM_MIN_PRODUCT && w->shape[2] * w->shape[3] <= IM2COL_MAX_TAPS)
    return lower_grad_weight_taps(L, g, pl);
  int32_t xt, ft, y, in[2], gw;
  if (groups == 1) {
    static const int chwn[4] = {1, 2, 3, 0};
    EG_TRY(traced_axes(L, g, pl->a.x, chwn, "x_chwn", &xt));
  } else { /* [N, HW, g, ci] (NHWC) or [N, g, ci, HW] (traced) -> [ci, HW, g, N] */
    const bool nhwc = eg_htp_is_nhwc(x);
    const uint32_t grouped[4] = {n, nhwc ? h * wd : groups, nhwc ? groups : ci,
                                 nhwc ? ci : h * wd};
    const uint32_t perm_nhwc[4] = {3, 1, 2, 0}, perm_nchw[4] = {2, 3, 1, 0};
    const uint32_t chwn[4] = {ci, h, wd, groups * n};
    int32_t x_in, x_grouped, x_moved;
    EG_TRY(eg_htp_input(L, pl->a.x, &x_in));
    EG_TRY(emit_reshape(L, x_in, grouped, "x_grouped", &x_grouped));
    EG_TRY(emit_transpose(L, x_grouped, grouped, nhwc ? perm_nhwc : perm_nchw, "x_moved",
                          &x_moved));
    EG_TRY(emit_reshape(L, x_moved, chwn, "x_chwn", &xt));
  }
  static const int hwnc[4] = {2, 3, 0, 1};
  EG_TRY(traced_axes(L, g, pl->gy, hwnc, "gy_hwnc", &ft));
  /* the Conv2d: stride d, dilation s; pad after so that it yields kH rows, or more (cropped) */
  int64_t pad_after[2], rows[2], k[2] = {w->shape[2], w->shape[3]};
  const int64_t in_len[2] = {h, wd};
  for (int d = 0; d < 2; d++) {
    const int64_t ho = gyv->shape[2 + d], s = pl->a.stride[d], dil = pl->a.dil[d];
    const int64_t need = dil * (k[d] - 1) + s * (ho - 1) + 1 - in_len[d] - pl->a.pad[d];
    pad_after[d] = need > 0 ? need : 0;
    rows[d] = (in_len[d] + pl->a.pad[d] + pad_after[d] - s * (ho - 1) - 1) / dil + 1;
  }
  const bool crop = rows[0] != k[0] || rows[1] != k[1];
  const uint32_t ydims[4] = {ci, eg_htp_qnn_dim(rows[0]), eg_htp_qnn_dim(rows[1]), cout};
  EG_TRY(eg_htp_temp(L, "dw_conv", EG_HTP_QNN_DTYPE_FLOAT_32, 4, ydims, &y));
  const uint32_t pad_dims[2] = {2, 2};
  uint32_t pads[4] = {(uint32_t)pl->a.pad[0], (uint32_t)pad_after[0], (uint32_t)pl->a.pad[1],
                      (uint32_t)pad_after[1]}, extra[8], core[4];
  const bool split = split_pads((const int64_t[2]){gyv->shape[2], gyv->shape[3]}, pl->a.dil,
                                pl->a.stride, pads, extra);
  int32_t conv_out = y; /* split: Y without its zero rows/cols (padded_output) */
  if (split) {
    unpadded_dims(ydims, extra, core);
    EG_TRY(eg_htp_temp(L, "dw_conv_core", EG_HTP_QNN_DTYPE_FLOAT_32, 4, core, &conv_out));
  }
  const eg_htp_qnn_param p[4] = {pair_param("stride", pl->a.dil),
                             eg_htp_qnn_param_u32_tensor("pad_amount", 2, pad_dims, pads),
                             pair_param("dilation", pl->a.stride),
                             eg_htp_qnn_param_u32("group", groups)};
  in[0] = xt;
  in[1] = ft;
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_CONV_2D, in, 2, &conv_out, 1, p, 4));
  if (split) EG_TRY(padded_output(L, conv_out, core, extra, -1, y));
  if (crop) {
    const uint32_t kept[4] = {ci, eg_htp_qnn_dim(k[0]), eg_htp_qnn_dim(k[1]), cout};
    const int32_t ranges[12] = {0, (int32_t)ci, 1, 0, (int32_t)k[0], 1,
                                0, (int32_t)k[1], 1, 0, (int32_t)cout, 1};
    const uint32_t rdims[2] = {4, 3};
    const eg_htp_qnn_param r = eg_htp_qnn_param_i32_tensor("ranges", 2, rdims, ranges);
    int32_t cropped;
    EG_TRY(eg_htp_temp(L, "dw_crop", EG_HTP_QNN_DTYPE_FLOAT_32, 4, kept, &cropped));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_STRIDED_SLICE, &y, 1, &cropped, 1, &r, 1));
    y = cropped;
  }
  static const uint32_t to_oihw[4] = {3, 0, 1, 2};
  EG_TRY(eg_htp_want_axes(L, pl->grad_weight, EG_AXES_TRACED, "grad_weight"));
  EG_TRY(eg_htp_define(L, pl->grad_weight, &gw));
  return transpose_into(L, y, to_oihw, gw);
}

/* grad_bias = ReduceSum(grad_output) over N, H, W: NHWC axes 0, 1, 2, leaving [Cout]. */
static eg_status lower_grad_bias(eg_htp_lower *L, const bwd_plan_t *pl, int32_t gy) {
  const uint32_t dims[1] = {3}, axes[3] = {0, 1, 2};
  int32_t gb;
  EG_TRY(eg_htp_define(L, pl->grad_bias, &gb));
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor("axes", 1, dims, axes);
  return eg_htp_op(L, EG_HTP_QNN_OP_REDUCE_SUM, &gy, 1, &gb, 1, &p, 1);
}

static eg_status conv_bwd_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  bwd_plan_t pl;
  char why[256];
  if (!bwd_plan(g, n, &pl, why, sizeof why))
    return eg_node_error(n, EG_ERR_INVALID, "convolution_backward lowering: %s", why);
  int32_t gy;
  EG_TRY(eg_htp_want_axes(L, pl.gy, EG_AXES_NHWC, "grad_output"));
  if (pl.grad_input >= 0) EG_TRY(eg_htp_want_axes(L, pl.grad_input, EG_AXES_NHWC, "grad_input"));
  EG_TRY(eg_htp_input(L, pl.gy, &gy)); /* the forward input is asked for by grad_weight only */
  if (pl.grad_input >= 0) EG_TRY(lower_grad_input(L, g, &pl, gy));
  if (pl.grad_weight >= 0) EG_TRY(lower_grad_weight(L, g, &pl));
  if (pl.grad_bias >= 0) EG_TRY(lower_grad_bias(L, &pl, gy));
  return EG_OK;
}

const eg_htp_builder eg_htp_builder_convolution = {
    "aten.convolution -> Conv2d / DepthWiseConv2d / TransposeConv2d", 0, conv_supports,
    conv_lower};
const eg_htp_builder eg_htp_builder_convolution_backward = {
    "aten.convolution_backward, every output_mask -> Transpose + TransposeConv2d (grad_input), "
    "Transposes + Conv2d (+ StridedSlice) (grad_weight; 1x1 groups 1 unpadded: Transpose + "
    "1x1 Conv2d over the pixels, im2col Concat where N*Ho*Wo <= Cout; strided with ci * Cout >= 32768: "
    "StridedSlice + MatMul per kernel tap + Concat), ReduceSum (grad_bias); fp, not "
    "transposed, dilated grad_input through the dilated kernel (Reshape + MatMul), V69+",
    0, conv_bwd_supports, conv_bwd_lower};
