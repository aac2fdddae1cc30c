/* pad.c — NPU builder for constant padding.
 *
 *   aten.constant_pad_nd(self, pad, value=0) -> [StridedSlice(self) where a pad is negative]
 *                                               -> Pad(scheme CONSTANT, pad_amount,
 *                                                  pad_constant_value value)
 *     pad[2i], pad[2i+1] pad ATen dim rank-1-i before and after; a negative entry crops that
 *     many (the backward of a padding is the crop by the negated pad): the StridedSlice keeps
 *     [max(0, -before), size - max(0, -after)), and pad_amount holds the positive entries, both
 *     per QNN axis of self's held order (eg_htp_axis: NCHW dim 1 is NHWC axis 3). The Pad is
 *     left out when it would add nothing after a crop.
 *
 * QNN's Pad measured on its HTP emulator (QNN 2.51 through onnxruntime-qnn 2.7.0, SM8650,
 * fp16) against ONNX Runtime's CPU: right for zero and non-zero fills (-2 to 1e4) along the
 * batch, height, width and channel axes, after a Relu (relative error 1e-7 to 2.3e-4, fp16's).
 *
 * Constraints: self and the result float32 and non-empty (eg_htp_self_and_result_ok, so no
 * dim is cropped away); every pad entry within QNN's 32-bit params (UINT_32 pad_amount,
 * INT_32 ranges); a float fill (a number; ATen rounds an integer fill for a float tensor the
 * same way); no zero padding of H or W that a stride-1 convolution reads with a padding
 * reaching its kernel in total (folds_into_bad_conv). Layout: the result is held in self's
 * order (pass layout_nhwc, FOLLOW). */
#include <stdio.h>

#include "backends/htp/compile/builders/builders.h"

/* The node's pad list and fill value (verified by ops/tensor.c: an even count, at most two
 * per dim, a number as value). */
static bool read_pad(const eg_node *n, int64_t pad[2 * EG_MAX_RANK], int *k, float *value) {
  double v = 0.0;
  const eg_arg *a = eg_node_arg(n, 2, "value");
  if (eg_arg_int_list(n, 1, "pad", pad, 0, 2 * EG_MAX_RANK, k) != EG_OK) return false;
  if (a && a->kind != EG_ARG_NONE && eg_arg_scalar(n, 2, "value", &v) != EG_OK) return false;
  *value = (float)v;
  return true;
}

/* QNN HTP folds a zero Pad that feeds a Conv2d / DepthWiseConv2d into the conv's own padding
 * (measured on its emulator, SM8650: a Pad after a Relu, then the conv, computes as the conv
 * with both paddings). Where the two together reach the kernel at stride and dilation 1, that
 * is the pad_amount QNN HTP computes wrong (builders/conv.c, pad_reaches_kernel: relative error
 * 1), so such a padding is declined: on the CPU, it leaves the conv an input it cannot fold. */
static bool folds_into_bad_conv(const eg_graph *g, const eg_node *n, const int64_t *pad, int k,
                                float value, char *reason, size_t size) {
  const eg_value *x = &g->values[eg_htp_arg(n, 0, "self")];
  if (value != 0.0f || x->rank != 4) return false;
  const int64_t before[2] = {k > 2 ? pad[2] : 0, k > 0 ? pad[0] : 0}; /* H, W */
  for (int32_t i = (int32_t)(n - g->nodes) + 1; i < g->n_nodes; i++) {
    const eg_node *m = &g->nodes[i];
    int64_t s[2], p[2], d[2];
    int ns, np, nd;
    bool transposed = true;
    if (m->op != EG_OP_convolution || eg_htp_arg(m, 0, "input") != n->output ||
        eg_arg_int_list(m, 3, "stride", s, 1, 2, &ns) != EG_OK ||
        eg_arg_int_list(m, 4, "padding", p, 1, 2, &np) != EG_OK ||
        eg_arg_int_list(m, 5, "dilation", d, 1, 2, &nd) != EG_OK ||
        eg_arg_bool(m, 6, "transposed", &transposed) != EG_OK || transposed)
      continue;
    const int32_t w = eg_htp_arg(m, 1, "weight");
    if (w < 0 || g->values[w].rank != 4) continue;
    for (int a = 0; a < 2; a++) {
      const int64_t kern = g->values[w].shape[2 + a], total = before[a] + p[np == 2 ? a : 0];
      if (s[ns == 2 ? a : 0] == 1 && d[nd == 2 ? a : 0] == 1 && kern >= 2 && total >= kern) {
        snprintf(reason, size, "read by %s (stride 1, a kernel %lld wide, padding %lld): QNN HTP "
                 "folds this zero padding into that conv's, giving a padding of %lld that reaches "
                 "the kernel, which it computes wrong (measured: relative error 1)", m->name,
                 (long long)kern, (long long)p[np == 2 ? a : 0], (long long)total);
        return true;
      }
    }
  }
  return false;
}

static bool pad_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                         size_t size) {
  (void)t;
  int64_t pad[2 * EG_MAX_RANK];
  int k;
  float value;
  if (!read_pad(n, pad, &k, &value)) {
    snprintf(reason, size, "unreadable constant_pad_nd arguments");
    return false;
  }
  if (!eg_htp_self_and_result_ok(g, n, reason, size)) return false;
  for (int i = 0; i < k; i++)
    if (pad[i] < -(int64_t)INT32_MAX || pad[i] > (int64_t)INT32_MAX) {
      char s[160];
      snprintf(reason, size, "pad %s: entries beyond 2^31-1 exceed QNN's 32-bit params",
               eg_fmt_ints(s, sizeof s, pad, k));
      return false;
    }
  return !folds_into_bad_conv(g, n, pad, k, value, reason, size);
}

/* The crop of the negative entries before/after (per QNN axis) of tensor *t (value x): a
 * StridedSlice into `dst`, or into a new tensor when dst is -1; *t becomes its result. Nothing
 * when no entry is negative. */
static eg_status crop(eg_htp_lower *L, const eg_value *x, const int64_t *before,
                      const int64_t *after, int32_t dst, int32_t *t) {
  int32_t ranges[3 * EG_MAX_RANK];
  uint32_t dims[EG_MAX_RANK], kept[EG_MAX_RANK];
  bool any = false;
  eg_htp_dims(x, dims);
  for (int a = 0; a < x->rank; a++) {
    const int64_t lo = before[a] < 0 ? -before[a] : 0, hi = after[a] < 0 ? -after[a] : 0;
    ranges[3 * a] = (int32_t)lo;
    ranges[3 * a + 1] = (int32_t)(dims[a] - hi);
    ranges[3 * a + 2] = 1;
    kept[a] = (uint32_t)(dims[a] - lo - hi);
    any |= lo > 0 || hi > 0;
  }
  if (!any) return EG_OK;
  const uint32_t rdims[2] = {(uint32_t)x->rank, 3};
  const eg_htp_qnn_param r = eg_htp_qnn_param_i32_tensor("ranges", 2, rdims, ranges);
  const int32_t in = *t;
  if (dst >= 0) *t = dst;
  else EG_TRY(eg_htp_temp(L, "cropped", EG_HTP_QNN_DTYPE_FLOAT_32, x->rank, kept, t));
  return eg_htp_op(L, EG_HTP_QNN_OP_STRIDED_SLICE, &in, 1, t, 1, &r, 1);
}

static eg_status pad_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  int64_t pad[2 * EG_MAX_RANK];
  int k;
  float value;
  if (!read_pad(n, pad, &k, &value))
    return eg_node_error(n, EG_ERR_INVALID, "constant_pad_nd lowering: unreadable arguments");
  const int32_t self = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[self];
  int64_t before[EG_MAX_RANK] = {0}, after[EG_MAX_RANK] = {0};
  uint32_t amounts[2 * EG_MAX_RANK] = {0};
  bool adds = false, crops = false;
  for (int d = 0; d < x->rank; d++) {
    const int i = 2 * (x->rank - 1 - d); /* pad index of ATen dim d's "before" */
    if (i >= k) continue;
    const int axis = eg_htp_axis(x, d);
    before[axis] = pad[i];
    after[axis] = pad[i + 1];
    amounts[2 * axis] = pad[i] > 0 ? (uint32_t)pad[i] : 0;
    amounts[2 * axis + 1] = pad[i + 1] > 0 ? (uint32_t)pad[i + 1] : 0;
    adds |= pad[i] > 0 || pad[i + 1] > 0;
    crops |= pad[i] < 0 || pad[i + 1] < 0;
  }
  int32_t in, out;
  EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(x), "result"));
  EG_TRY(eg_htp_input(L, self, &in));
  EG_TRY(eg_htp_define(L, n->output, &out));
  EG_TRY(crop(L, x, before, after, adds ? -1 : out, &in)); /* a crop alone writes the result */
  if (crops && !adds) return EG_OK;
  const uint32_t dims[2] = {(uint32_t)x->rank, 2};
  const eg_htp_qnn_param p[3] = {eg_htp_qnn_param_u32("scheme", 0),
                             eg_htp_qnn_param_u32_tensor("pad_amount", 2, dims, amounts),
                             eg_htp_qnn_param_f32("pad_constant_value", value)};
  return eg_htp_op(L, EG_HTP_QNN_OP_PAD, &in, 1, &out, 1, p, 3);
}

const eg_htp_builder eg_htp_builder_constant_pad_nd = {
    "aten.constant_pad_nd -> StridedSlice (negative pads) + Pad (CONSTANT)", 0, pad_supports,
    pad_lower};
