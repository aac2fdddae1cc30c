/* pool.c — NPU builders for 2-D pooling.
 *
 *   aten.max_pool2d_with_indices(x, k, s, p, d, ceil_mode) -> PoolMax2d (values)
 *       dilation 1. When the indices (element 1, int64; held INT_32 by pass i64_to_i32, NHWC
 *       like the values) are read, they are computed from the pooled maxima M (ATen's index
 *       of window (a, b) is the flat h * W + w of the FIRST maximum in row-major tap order):
 *         Xp  = Pad(x, -inf) where the windows reach past the input (padding, ceil_mode's
 *               last window); left out when none does
 *         X_t = StridedSlice(Xp, begin (i, j), stride (s_h, s_w), oh x ow) for tap t = (i, j)
 *         E_t = ElementWiseGreaterEqual(X_t, M)   (== M, as M is the window's maximum; the
 *               executor's ElementWiseEqual takes INT_32 operands only)
 *         idx = Select(E_1, P_1, Select(E_2, P_2, ... Select(E_{K-1}, P_{K-1}, P_K)))
 *       in INT_32, with P_t a STATIC [1, oh, ow, 1] map of tap t's flat input position: tap 1
 *       outermost gives the first match with no boolean logic. A padded position is -inf (QNN
 *       HTP fp16: -65536, below every finite fp16), never equal to a finite M, since ATen
 *       forbids a window of padding only (padding <= kernel / 2, and ceil_mode drops a last
 *       window starting in the padding); its P_t is the window's first tap inside the input,
 *       ATen's index for a window of -inf values, so such a window matches ATen too. Known
 *       difference: a NaN input is ATen's maximum but fails every comparison here (the index
 *       is then P_K, another element of the window); a NaN activation has already ruined
 *       the training step.
 *   aten.avg_pool2d(x, k, s, p, ceil_mode, count_include_pad, divisor_override)
 *                                                          -> PoolAvg2d
 *       count_include_pad -> count_pad_for_edges; divisor_override must be None
 *   aten._adaptive_avg_pool2d(x, [oh, ow])                 -> ReduceMean(axes [1, 2], keep_dims)
 *       for a 1x1 output; PoolAvg2d(filter = stride = [H/oh, W/ow]) when oh divides H and ow
 *       divides W (ATen's adaptive windows are then exactly those); else declined
 * Constraints: x float32 [N, C, H, W], non-empty (an unbatched [C, H, W] input has no NHWC
 * form: declined); x and the pooled result held NHWC (eg_value.axes, pass layout_nhwc:
 * lowering fails on a traced-order value). padding becomes pad_amount [[p0, p0], [p1, p1]].
 * ceil_mode -> rounding_mode:
 * ATen's ceil-mode size drops a last window that would start in the bottom/right padding, and
 * then equals the FLOOR count with the same windows, so rounding_mode is CEIL only where ATen's
 * size exceeds the floor size; a node whose two dims would need different modes is declined.
 * Average pooling never uses CEIL: its last window becomes FLOOR over that much more
 * bottom/right padding, not counted (avg_end_pad: QNN HTP computes CEIL windows past the edge
 * wrong); with count_include_pad and padding such a node is declined.
 * Clipping and divisors match ATen: windows are clipped to the input (max) and averages divide
 * by the window clipped to the padded extent (count_include_pad) or to the input.
 *
 *   aten.avg_pool2d_backward(gy, x, k, s, p, ceil_mode, count_include_pad, divisor_override)
 *   aten._adaptive_avg_pool2d_backward(gy, x)
 *       -> MatMul(S_w [W, ow], gy NHWC) + Reshape [N, oh, W*C] + MatMul(S_h [H, oh], .)
 *          + Reshape [N, H, W, C]
 *       Each pixel of window (i, j) gets gy[i, j] / divisor, and ATen's divisor is a product of
 *       one factor per dim (the window's extent clipped to the padded input with
 *       count_include_pad, else to the input; the adaptive window's extent; divisor_override
 *       whole), so the backward is separable, gx = S_h gy S_w^T per plane, with STATIC
 *       spreading matrices S [in, out] (S[h, i] = 1 / factor_i where row h is in window i),
 *       computed at compile time from the node's parsed window parameters. Every form lowers
 *       exactly so: padding, ceil_mode's last window, overlapping and uneven adaptive windows.
 *       QNN has no op for either backward; this is the two-MatMul form resize.c's upsampling
 *       uses too (eg_htp_separable_map). On QNN 2.51's HTP emulator (onnxruntime-qnn, SM8650,
 *       fp16) the form is within fp16 rounding of ATen: largest error 2e-4 to 1e-3 of max|gx|
 *       for adaptive 28 -> 7 and 28 -> 5 and avg pools 3/2/1 over 28 and 2/2/0 over 56 (64
 *       and 16 channels); htp-check runs it in conformance's train_pixel_seg. A matrix above
 *       EG_HTP_POOL_MAX_MATRIX elements is declined. A 1x1 adaptive average is traced as a
 *       mean (ATen's adaptive_avg_pool2d takes that path), whose backward is expand's Tile
 *       (shape.c).
 *
 *   aten.max_pool2d_with_indices_backward(gy, x, k, s, p, d, ceil_mode, indices)
 *       gy, indices (INT_32) and gx held NHWC. Per tap t = (i, j) of the kernel:
 *         C_t = Select(ElementWiseEqual(indices, P_t), gy, 0)    (P_t as in the forward)
 *       and gx sums every C_t placed at rows a*s_h - p_h + i*d_h and cols b*s_w - p_w +
 *       j*d_w, dropped outside the input (each input position sums the windows whose argmax
 *       it is, as ATen accumulates). Two placements, both exact:
 *       - phase form, where along each dim every phase r in [0, s) is some tap's offset
 *         i*d mod s (a kernel at least as long as its stride, dilation 1: every pool of the
 *         model zoo). In padded coordinates row h + p_h = (a + q_i) * s_h + r_i with
 *         q_i = i*d_h div s_h, r_i = i*d_h mod s_h: tap t lands in the grid [N, M_h, M_w, C]
 *         of its phase (r_i, r_j) shifted by (q_i, q_j) — a zero Pad where the shift or the
 *         grid's size asks for one — and the taps of one phase are summed
 *         (ElementWiseAdd). The s_h * s_w phases interleave by data movement alone: a Concat
 *         along C of a row's phases is [N, M_h, M_w, s_w*C], i.e. columns M_w*s_w; those
 *         reshaped to [N, M_h, 1, .] and concatenated on that unit axis are rows M_h*s_h.
 *         A StridedSlice crops the padding (rows p_h .. p_h + H, likewise cols), which drops
 *         the gradient of a tap outside the input (its P_t is another tap's position). M
 *         covers every shifted tap and the input: M = max(oh + q_max, ceil((p + H) / s)).
 *         Non-overlapping 2x2/2 over an even size is 4 Equal + 4 Select + 3 Concat +
 *         Reshapes; ResNet's 3x3/2/1 adds 9 Pads, 5 Adds and the crop;
 *       - otherwise (a phase with no tap: stride above kernel, or a dilation that skips
 *         phases) one separable map: the C_t of kernel row i are concatenated along W
 *         ([N, oh, kw*ow, C]), the kernel rows along H ([N, kh*oh, kw*ow, C]), and
 *         eg_htp_separable_map applies STATIC 0/1 matrices cols [W, kw*ow] and rows
 *         [H, kh*oh]: two MatMuls for the whole kernel, 0/1 weights keeping every gradient
 *         exact up to the sum. A matrix above EG_HTP_POOL_MAX_MATRIX elements is declined.
 *       The sums' order differs from ATen's only where three or more windows share an argmax.
 *       Any dilation lowers (the forward with dilation stays on the CPU; its indices come to
 *       the NPU narrowed). H * W beyond int32 is declined, and so are indices that no
 *       max_pool2d_with_indices of the same window computed (an index outside its window
 *       stops the CPU kernel with an error; here its gradient would be dropped silently).
 * Both index forms measured on QNN 2.51's HTP emulator (onnxruntime-qnn, SM8650, fp16) against
 * torch: the indices exact (ties included) for 3/2/1 over 16 and 112, 2/2/0 ceil_mode over 7,
 * 3/1/1 over 9; the selected gradients within fp16 rounding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/htp/compile/builders/builders.h"
#include "kernels/adaptive_pool2d_nchw_f32.h"
#include "kernels/avg_pool2d_nchw_f32.h"

/* ---- arguments ---- */

/* An int list of 1 or 2 values (one applies to both dims) into v[2]; missing, None or [] gives
 * dflt. */
static void int_pair(const eg_node *n, int pos, const char *kw, const int64_t dflt[2],
                     int64_t v[2]) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  v[0] = dflt[0];
  v[1] = dflt[1];
  if (!a) return;
  if (a->kind == EG_ARG_INT) {
    v[0] = v[1] = a->i;
  } else if (a->kind == EG_ARG_LIST && a->list.n >= 1) {
    v[0] = a->list.items[0].i;
    v[1] = a->list.items[a->list.n > 1 ? 1 : 0].i;
  }
}

static bool bool_arg(const eg_node *n, int pos, const char *kw, bool dflt) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  return a && a->kind == EG_ARG_BOOL ? a->b : dflt;
}

/* A window pool's geometry and its QNN form. */
typedef struct window {
  int64_t k[2], s[2], p[2], d[2];
  bool ceil_mode;
  uint32_t rounding; /* QNN rounding_mode: 0 FLOOR, 1 CEIL */
} window;

/* max_pool2d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode) and
 * avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode, ...). */
static void parse_window(const eg_node *n, window *w) {
  static const int64_t zero[2] = {0, 0}, one[2] = {1, 1};
  const bool bwd = n->op == EG_OP_max_pool2d_with_indices_backward; /* grad_output first */
  const bool is_max = n->op == EG_OP_max_pool2d_with_indices || bwd;
  const int at = bwd ? 1 : 0;
  int_pair(n, at + 1, "kernel_size", one, w->k);
  int_pair(n, at + 2, "stride", w->k, w->s);
  int_pair(n, at + 3, "padding", zero, w->p);
  if (is_max) int_pair(n, at + 4, "dilation", one, w->d);
  else w->d[0] = w->d[1] = 1;
  w->ceil_mode = bool_arg(n, at + (is_max ? 5 : 4), "ceil_mode", false);
  w->rounding = 0;
}

/* The QNN rounding_mode giving ATen's output size out[2] for input in[2]; false with a reason
 * when none does. Dilation is 1 here. */
static bool choose_rounding(window *w, const int64_t in[2], const int64_t out[2], char *reason,
                            size_t size) {
  int64_t floor_n[2], ceil_n[2];
  for (int d = 0; d < 2; d++) {
    const int64_t span = in[d] + 2 * w->p[d] - w->k[d];
    floor_n[d] = span / w->s[d] + 1;
    ceil_n[d] = (span + w->s[d] - 1) / w->s[d] + 1;
  }
  w->rounding = out[0] != floor_n[0] || out[1] != floor_n[1];
  for (int d = 0; d < 2; d++) {
    const int64_t n = w->rounding ? ceil_n[d] : floor_n[d];
    if (n != out[d] || (n - 1) * w->s[d] >= in[d] + w->p[d]) {
      snprintf(reason, size, "ceil_mode output %lldx%lld: one QNN rounding_mode gives %lldx%lld "
               "(ATen dropped a last window in one dim only)", (long long)out[0],
               (long long)out[1], (long long)(w->rounding ? ceil_n[0] : floor_n[0]),
               (long long)(w->rounding ? ceil_n[1] : floor_n[1]));
      return false;
    }
  }
  return true;
}

/* The pooled input: a non-empty float32 [N, C, H, W] tensor. */
static bool pool_input_ok(const eg_value *x, char *reason, size_t size) {
  char s[96];
  if (!x || x->dtype != EG_DTYPE_FLOAT32) {
    snprintf(reason, size, "input is not a float32 tensor");
    return false;
  }
  if (x->rank != 4) {
    snprintf(reason, size, "unbatched input %s: pooling on the NPU takes NHWC rank 4",
             eg_fmt_ints(s, sizeof s, x->shape, x->rank));
    return false;
  }
  if (eg_value_numel(x) == 0) {
    snprintf(reason, size, "empty input %s: QNN tensors need every dim >= 1",
             eg_fmt_ints(s, sizeof s, x->shape, x->rank));
    return false;
  }
  return true;
}

/* The pooled output value: the node's tensor, or element 0 of max pool's tuple. */
static int32_t pooled_value(const eg_graph *g, const eg_node *n) {
  const eg_value *o = &g->values[n->output];
  return o->kind == EG_VALUE_TUPLE ? o->elems[0] : n->output;
}

static bool window_supports(const eg_graph *g, const eg_node *n, window *w, char *reason,
                            size_t size) {
  const eg_value *x = eg_htp_arg_value(g, n, 0, "self");
  if (!pool_input_ok(x, reason, size)) return false;
  parse_window(n, w);
  if (!eg_htp_u32_params_ok("kernel_size", w->k, 2, reason, size) ||
      !eg_htp_u32_params_ok("stride", w->s, 2, reason, size) ||
      !eg_htp_u32_params_ok("padding", w->p, 2, reason, size))
    return false;
  if (w->d[0] != 1 || w->d[1] != 1) {
    snprintf(reason, size, "dilation [%lld, %lld] unsupported: PoolMax2d has no dilation",
             (long long)w->d[0], (long long)w->d[1]);
    return false;
  }
  const int32_t y = pooled_value(g, n);
  if (y < 0) {
    snprintf(reason, size, "the pooled output is None");
    return false;
  }
  return choose_rounding(w, &x->shape[2], &g->values[y].shape[2], reason, size);
}

/* ---- max_pool2d_with_indices, avg_pool2d ---- */

/* At most this many kernel taps when the indices are computed: each costs a StridedSlice, a
 * comparison and a Select (forward) or a comparison, a Select and a Concat input (backward). */
#define EG_HTP_MAX_POOL_TAPS 64

/* The max pools' index geometry: the kernel has at most EG_HTP_MAX_POOL_TAPS taps and every
 * flat input index h * W + w of input [H, W] fits int32 (the NPU holds indices as INT_32). */
static bool index_form_ok(const window *w, int64_t h, int64_t wd, char *reason, size_t size) {
  if (w->k[0] * w->k[1] > EG_HTP_MAX_POOL_TAPS) {
    snprintf(reason, size, "kernel %lldx%lld: the indices' NPU form takes at most %d taps",
             (long long)w->k[0], (long long)w->k[1], EG_HTP_MAX_POOL_TAPS);
    return false;
  }
  if (h > INT32_MAX / wd) {
    snprintf(reason, size, "input %lldx%lld: flat indices beyond int32, which the NPU holds "
             "them as", (long long)h, (long long)wd);
    return false;
  }
  return true;
}

static bool max_pool_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                              char *reason, size_t size) {
  (void)t;
  window w;
  if (!window_supports(g, n, &w, reason, size)) return false;
  if (!eg_htp_elem_used(g, n, 1)) return true;
  const eg_value *x = eg_htp_arg_value(g, n, 0, "self");
  const int32_t idx = g->values[n->output].elems[1];
  return index_form_ok(&w, x->shape[2], x->shape[3], reason, size) &&
         eg_htp_move_tensor_ok(g, idx, reason, size);
}

static bool avg_pool_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                              char *reason, size_t size) {
  (void)t;
  window w;
  if (!window_supports(g, n, &w, reason, size)) return false;
  const eg_arg *div = eg_node_arg(n, 6, "divisor_override");
  if (div && div->kind != EG_ARG_NONE) {
    snprintf(reason, size, "divisor_override is set: PoolAvg2d divides by the window size");
    return false;
  }
  /* A CEIL last window is lowered as FLOOR over explicit bottom/right padding, not counted
   * (avg_end_pad). With count_include_pad and padding, ATen counts the padding but not the
   * overhang past it, which no one count_pad_for_edges gives. */
  if (w.rounding && bool_arg(n, 5, "count_include_pad", true) && (w.p[0] || w.p[1])) {
    snprintf(reason, size, "ceil_mode with count_include_pad and padding [%lld, %lld]: the last "
             "window's divisor counts the padding but not the overhang, which PoolAvg2d cannot "
             "express (and QNN HTP computes CEIL windows past the edge wrong)",
             (long long)w.p[0], (long long)w.p[1]);
    return false;
  }
  return true;
}

/* Average pooling's CEIL rounding as FLOOR over `end` more bottom/right padding (the last
 * window's overhang), not counted: QNN HTP (QNN 2.51's HTP backend, measured through
 * onnxruntime-qnn 2.7.0) gets PoolAvg2d's CEIL windows that run past the edge wrong (a 2x2
 * stride-2 window over a 7-wide input: relative error 1.0), and right with explicit padding.
 * Without padding, count_include_pad counts nothing past the input either, so the two agree. */
static void avg_end_pad(window *w, const int64_t in[2], const int64_t out[2], int64_t end[2]) {
  for (int d = 0; d < 2; d++) {
    const int64_t need = (out[d] - 1) * w->s[d] + w->k[d] - (in[d] + 2 * w->p[d]);
    end[d] = w->rounding && need > 0 ? need : 0;
  }
  w->rounding = 0;
}

/* Tap t = (i, j)'s STATIC INT_32 position map P_t [1, oh, ow, 1]: the flat input index
 * h * in_w + w the tap reads in window (a, b), h = a*s_h - p_h + i*d_h, w likewise; where that
 * lies outside the input, the window's first tap inside it (ATen's starting index, which it
 * keeps when no element beats -inf), so every P_t is a valid index and no padded position
 * aliases another window's element. */
static eg_status tap_positions(eg_htp_lower *L, const window *w, int64_t i, int64_t j,
                               int64_t in_h, int64_t in_w, uint32_t oh, uint32_t ow,
                               int32_t *tensor) {
  int32_t *pos = malloc((size_t)oh * ow * sizeof *pos);
  if (!pos) return eg_error(EG_ERR_NOMEM, "lowering max pool indices: out of memory (%ux%u)",
                            oh, ow);
  for (int64_t a = 0; a < oh; a++)
    for (int64_t b = 0; b < ow; b++) {
      int64_t h0 = a * w->s[0] - w->p[0], w0 = b * w->s[1] - w->p[1];
      const int64_t h = h0 + i * w->d[0], x = w0 + j * w->d[1];
      while (h0 < 0) h0 += w->d[0];
      while (w0 < 0) w0 += w->d[1];
      const bool in = h >= 0 && h < in_h && x >= 0 && x < in_w;
      pos[a * ow + b] = (int32_t)(in ? h * in_w + x : h0 * in_w + w0);
    }
  const uint32_t dims[4] = {1, oh, ow, 1};
  char what[48];
  snprintf(what, sizeof what, "tap_pos_%lld_%lld", (long long)i, (long long)j);
  const eg_status st = eg_htp_const_i32(L, what, 4, dims, pos, tensor);
  free(pos);
  return st;
}

/* The forward's indices (file comment): from QNN tensors in (x NHWC) and m (the maxima). */
static eg_status max_pool_indices(eg_htp_lower *L, const eg_graph *g, const eg_node *n,
                                  const window *w, int32_t in, int32_t m) {
  const int32_t xv = eg_htp_arg(n, 0, "self"), iv = g->values[n->output].elems[1];
  const eg_value *x = &g->values[xv], *y = &g->values[pooled_value(g, n)];
  EG_TRY(eg_htp_want_axes(L, iv, EG_AXES_NHWC, "indices"));
  const uint32_t nb = eg_htp_qnn_dim(x->shape[0]), c = eg_htp_qnn_dim(x->shape[1]);
  const uint32_t oh = eg_htp_qnn_dim(y->shape[2]), ow = eg_htp_qnn_dim(y->shape[3]);
  const uint32_t od[4] = {nb, oh, ow, c};
  uint32_t pad[8] = {0}, pd[4] = {nb, 0, 0, c};
  bool pads = false;
  for (int d = 0; d < 2; d++) {
    const int64_t o = y->shape[2 + d], inn = x->shape[2 + d];
    const int64_t end = (o - 1) * w->s[d] + w->k[d] - w->p[d] - inn;
    pad[2 + 2 * d] = (uint32_t)w->p[d];
    pad[3 + 2 * d] = end > 0 ? (uint32_t)end : 0;
    pd[1 + d] = (uint32_t)(inn + pad[2 + 2 * d] + pad[3 + 2 * d]);
    pads |= pad[2 + 2 * d] || pad[3 + 2 * d];
  }
  int32_t xp = in;
  if (pads) {
    static const uint32_t four_by_two[2] = {4, 2};
    const eg_htp_qnn_param p[3] = {eg_htp_qnn_param_u32("scheme", 0),
                               eg_htp_qnn_param_u32_tensor("pad_amount", 2, four_by_two, pad),
                               eg_htp_qnn_param_f32("pad_constant_value", -INFINITY)};
    EG_TRY(eg_htp_temp(L, "padded", EG_HTP_QNN_DTYPE_FLOAT_32, 4, pd, &xp));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_PAD, &in, 1, &xp, 1, p, 3));
  }
  const int64_t kh = w->k[0], kw = w->k[1], taps = kh * kw;
  int32_t cur = -1, pos_last = -1;
  for (int64_t t = taps - 1; t >= 0; t--) { /* innermost first: tap 1 ends outermost */
    const int64_t i = t / kw, j = t % kw;
    int32_t pos, tap, hit, sel[3];
    char what[3][48];
    snprintf(what[0], sizeof what[0], "tap_%lld_%lld", (long long)i, (long long)j);
    snprintf(what[1], sizeof what[1], "is_max_%lld_%lld", (long long)i, (long long)j);
    snprintf(what[2], sizeof what[2], "first_max_%lld_%lld", (long long)i, (long long)j);
    EG_TRY(tap_positions(L, w, i, j, x->shape[2], x->shape[3], oh, ow, &pos));
    if (t == taps - 1) {
      pos_last = pos;
      if (taps > 1) {
        cur = pos;
        continue;
      }
    }
    const int32_t ranges[12] = {0, (int32_t)nb, 1,
                                (int32_t)i, (int32_t)(i + (oh - 1) * w->s[0] + 1),
                                (int32_t)w->s[0],
                                (int32_t)j, (int32_t)(j + (ow - 1) * w->s[1] + 1),
                                (int32_t)w->s[1],
                                0, (int32_t)c, 1};
    static const uint32_t rdims[2] = {4, 3};
    const eg_htp_qnn_param r = eg_htp_qnn_param_i32_tensor("ranges", 2, rdims, ranges);
    EG_TRY(eg_htp_temp(L, what[0], EG_HTP_QNN_DTYPE_FLOAT_32, 4, od, &tap));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_STRIDED_SLICE, &xp, 1, &tap, 1, &r, 1));
    EG_TRY(eg_htp_temp(L, what[1], EG_HTP_QNN_DTYPE_BOOL_8, 4, od, &hit));
    const int32_t ge[2] = {tap, m};
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, ge, 2, &hit, 1, NULL, 0));
    sel[0] = hit;
    sel[1] = pos;
    sel[2] = taps > 1 ? cur : pos_last;
    if (t == 0) EG_TRY(eg_htp_define(L, iv, &cur));
    else EG_TRY(eg_htp_temp(L, what[2], EG_HTP_QNN_DTYPE_INT_32, 4, od, &cur));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, sel, 3, &cur, 1, NULL, 0));
  }
  return EG_OK;
}

static eg_status window_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const bool is_max = n->op == EG_OP_max_pool2d_with_indices;
  window w;
  char why[8];
  const int32_t x = eg_htp_arg(n, 0, "self"), y = pooled_value(g, n);
  parse_window(n, &w);
  choose_rounding(&w, &g->values[x].shape[2], &g->values[y].shape[2], why, sizeof why);
  int64_t end[2] = {0, 0};
  const bool overhang = !is_max && w.rounding;
  if (overhang) avg_end_pad(&w, &g->values[x].shape[2], &g->values[y].shape[2], end);
  static const uint32_t two[1] = {2}, two_by_two[2] = {2, 2};
  const uint32_t k[2] = {(uint32_t)w.k[0], (uint32_t)w.k[1]};
  const uint32_t s[2] = {(uint32_t)w.s[0], (uint32_t)w.s[1]};
  const uint32_t pad[4] = {(uint32_t)w.p[0], (uint32_t)(w.p[0] + end[0]), (uint32_t)w.p[1],
                           (uint32_t)(w.p[1] + end[1])};
  eg_htp_qnn_param p[5] = {eg_htp_qnn_param_u32_tensor("filter_size", 1, two, k),
                       eg_htp_qnn_param_u32_tensor("stride", 1, two, s),
                       eg_htp_qnn_param_u32_tensor("pad_amount", 2, two_by_two, pad),
                       eg_htp_qnn_param_u32("rounding_mode", w.rounding)};
  int n_params = 4;
  if (!is_max)
    p[n_params++] = eg_htp_qnn_param_bool("count_pad_for_edges",
                                      !overhang && bool_arg(n, 5, "count_include_pad", true));
  int32_t in, out;
  EG_TRY(eg_htp_want_axes(L, x, EG_AXES_NHWC, "input"));
  EG_TRY(eg_htp_want_axes(L, y, EG_AXES_NHWC, "result"));
  EG_TRY(eg_htp_input(L, x, &in));
  EG_TRY(eg_htp_define(L, y, &out));
  EG_TRY(eg_htp_op(L, is_max ? EG_HTP_QNN_OP_POOL_MAX_2D : EG_HTP_QNN_OP_POOL_AVG_2D, &in, 1, &out, 1, p,
                   n_params));
  if (!is_max || !eg_htp_elem_used(g, n, 1)) return EG_OK;
  return max_pool_indices(L, g, n, &w, in, out);
}

/* ---- _adaptive_avg_pool2d ---- */

static bool adaptive_avg_pool_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                       char *reason, size_t size) {
  (void)t;
  const eg_value *x = eg_htp_arg_value(g, n, 0, "self");
  if (!pool_input_ok(x, reason, size)) return false;
  const eg_value *y = &g->values[n->output];
  const int64_t h = x->shape[2], w = x->shape[3], oh = y->shape[2], ow = y->shape[3];
  if (oh < 1 || ow < 1) {
    snprintf(reason, size, "empty output %lldx%lld: QNN tensors need every dim >= 1",
             (long long)oh, (long long)ow);
    return false;
  }
  if (h % oh || w % ow) {
    snprintf(reason, size, "input %lldx%lld to output %lldx%lld: adaptive windows are uneven; "
             "PoolAvg2d needs the input size to be a multiple of the output size",
             (long long)h, (long long)w, (long long)oh, (long long)ow);
    return false;
  }
  return true;
}

static eg_status adaptive_avg_pool_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t xv = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[xv], *y = &g->values[n->output];
  const uint32_t h = eg_htp_qnn_dim(x->shape[2]), w = eg_htp_qnn_dim(x->shape[3]);
  const uint32_t oh = eg_htp_qnn_dim(y->shape[2]), ow = eg_htp_qnn_dim(y->shape[3]);
  int32_t in, out;
  EG_TRY(eg_htp_want_axes(L, xv, EG_AXES_NHWC, "input"));
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_NHWC, "result"));
  EG_TRY(eg_htp_input(L, xv, &in));
  EG_TRY(eg_htp_define(L, n->output, &out));
  static const uint32_t two[1] = {2}, two_by_two[2] = {2, 2};
  if (oh == 1 && ow == 1) { /* global average: mean over NHWC axes H, W */
    static const uint32_t axes[2] = {1, 2};
    const eg_htp_qnn_param p[2] = {eg_htp_qnn_param_u32_tensor("axes", 1, two, axes),
                               eg_htp_qnn_param_bool("keep_dims", true)};
    return eg_htp_op(L, EG_HTP_QNN_OP_REDUCE_MEAN, &in, 1, &out, 1, p, 2);
  }
  static const uint32_t zero_pad[4] = {0, 0, 0, 0};
  const uint32_t k[2] = {h / oh, w / ow};
  const eg_htp_qnn_param p[4] = {eg_htp_qnn_param_u32_tensor("filter_size", 1, two, k),
                             eg_htp_qnn_param_u32_tensor("stride", 1, two, k),
                             eg_htp_qnn_param_u32_tensor("pad_amount", 2, two_by_two, zero_pad),
                             eg_htp_qnn_param_u32("rounding_mode", 0)};
  return eg_htp_op(L, EG_HTP_QNN_OP_POOL_AVG_2D, &in, 1, &out, 1, p, 4);
}

/* ---- avg_pool2d_backward, _adaptive_avg_pool2d_backward ---- */

/* Above this many elements, one dim's spreading matrix is declined (16 MiB of float32): its
 * MatMul would also cost in * out multiply-adds per row. */
#define EG_HTP_POOL_MAX_MATRIX (1LL << 22)

static bool is_adaptive(const eg_node *n) { return n->op == EG_OP__adaptive_avg_pool2d_backward; }

/* Dim d's (0: H, 1: W) window `i` of node n: input rows [*lo, *hi) and the factor of the
 * divisor it contributes. ATen's divisor is a product of one factor per dim: the window's
 * extent clipped to the padded input (count_include_pad) or to the input, or the adaptive
 * window's extent; divisor_override is put whole on H. */
static void dim_window(const eg_node *n, int d, int64_t i, int64_t *lo, int64_t *hi,
                       int64_t *div) {
  if (is_adaptive(n)) {
    const eg_adaptive_pool2d_params *a = EG_ATTRS(n, const eg_adaptive_pool2d_params);
    const int64_t in = d ? a->w_in : a->h_in, out = d ? a->w_out : a->h_out;
    *lo = i * in / out;
    *hi = ((i + 1) * in + out - 1) / out;
    *div = *hi - *lo;
    return;
  }
  const eg_avg_pool2d_params *p = EG_ATTRS(n, const eg_avg_pool2d_params);
  const int64_t in = d ? p->w_in : p->h_in;
  const int64_t start = i * p->stride[d] - p->padding[d];
  const int64_t end = start + p->kernel[d] < in + p->padding[d] ? start + p->kernel[d]
                                                                : in + p->padding[d];
  *lo = start > 0 ? start : 0;
  *hi = end < in ? end : in;
  *div = p->count_include_pad ? end - start : *hi - *lo;
  if (p->divisor_override) *div = d ? 1 : p->divisor_override;
}

/* Dim d's input and output (pooled) sizes. */
static void dim_sizes(const eg_node *n, int d, int64_t *in, int64_t *out) {
  if (is_adaptive(n)) {
    const eg_adaptive_pool2d_params *a = EG_ATTRS(n, const eg_adaptive_pool2d_params);
    *in = d ? a->w_in : a->h_in;
    *out = d ? a->w_out : a->h_out;
  } else {
    const eg_avg_pool2d_params *p = EG_ATTRS(n, const eg_avg_pool2d_params);
    *in = d ? p->w_in : p->h_in;
    *out = d ? p->w_out : p->h_out;
  }
}

static bool avg_pool_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                       char *reason, size_t size) {
  (void)t;
  const eg_value *gy = eg_htp_arg_value(g, n, 0, "grad_output");
  if (!pool_input_ok(gy, reason, size) ||
      !eg_htp_float_tensor_ok(g, n->output, reason, size))
    return false;
  const eg_value *x = &g->values[n->output];
  if (x->rank != 4) {
    snprintf(reason, size, "unbatched result: pooling on the NPU takes NHWC rank 4");
    return false;
  }
  for (int d = 0; d < 2; d++) {
    int64_t in, out, lo, hi, div;
    dim_sizes(n, d, &in, &out);
    if (in > EG_HTP_POOL_MAX_MATRIX / out) {
      snprintf(reason, size, "%s %lld -> %lld: its spreading matrix (%g elements) exceeds the "
               "NPU lowering's STATIC matrix limit of %lld elements", d ? "W" : "H",
               (long long)out, (long long)in, (double)in * (double)out, EG_HTP_POOL_MAX_MATRIX);
      return false;
    }
    for (int64_t i = 0; i < out; i++) {
      dim_window(n, d, i, &lo, &hi, &div);
      if (div <= 0) {
        snprintf(reason, size, "window %lld of %s divides by %lld", (long long)i, d ? "W" : "H",
                 (long long)div);
        return false;
      }
    }
  }
  return eg_htp_separable_rows_fit(x, reason, size);
}

/* Dim d's STATIC spreading matrix S [in, out]: S[h, i] = 1 / factor_i where input row h lies
 * in window i (dim_window), else 0. */
static eg_status spread_matrix(eg_htp_lower *L, const eg_node *n, int d, int32_t *tensor) {
  int64_t in, out, lo, hi, div;
  dim_sizes(n, d, &in, &out);
  float *m = calloc((size_t)(in * out), sizeof *m);
  if (!m) return eg_error(EG_ERR_NOMEM, "lowering %s: out of memory (%lldx%lld matrix)",
                          n->name, (long long)in, (long long)out);
  for (int64_t i = 0; i < out; i++) {
    dim_window(n, d, i, &lo, &hi, &div);
    for (int64_t h = lo; h < hi; h++) m[h * out + i] = 1.0f / (float)div;
  }
  const uint32_t dims[2] = {eg_htp_qnn_dim(in), eg_htp_qnn_dim(out)};
  const eg_status st = eg_htp_const_f32(L, d ? "spread_w" : "spread_h", 2, dims, m, tensor);
  free(m);
  return st;
}

static eg_status avg_pool_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t gy_v = eg_htp_arg(n, 0, "grad_output");
  EG_TRY(eg_htp_want_axes(L, gy_v, EG_AXES_NHWC, "grad_output"));
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_NHWC, "result"));
  const eg_value *gy = &g->values[gy_v], *x = &g->values[n->output];
  const uint32_t nb = eg_htp_qnn_dim(x->shape[0]), c = eg_htp_qnn_dim(x->shape[1]);
  const uint32_t from[4] = {nb, eg_htp_qnn_dim(gy->shape[2]), eg_htp_qnn_dim(gy->shape[3]), c};
  int32_t in, spread_w, spread_h;
  EG_TRY(eg_htp_input(L, gy_v, &in));
  EG_TRY(spread_matrix(L, n, 1, &spread_w));
  EG_TRY(spread_matrix(L, n, 0, &spread_h));
  return eg_htp_separable_map(L, in, from, eg_htp_qnn_dim(x->shape[2]),
                              eg_htp_qnn_dim(x->shape[3]), spread_w, spread_h, n->output);
}

/* ---- max_pool2d_with_indices_backward ---- */

/* Whether indices value `iv` is element 1 of a max_pool2d_with_indices node with the window
 * `w` (through clones, such as pass layout_nhwc's conversions): only such indices are taps of
 * their windows. An index that is no tap of its window stops the CPU kernel with an error; the
 * NPU form would drop its gradient silently, so other indices stay on the CPU. */
static bool indices_from_forward(const eg_graph *g, int32_t iv, const window *w) {
  for (int hops = 0; hops < 8 && iv >= 0; hops++) {
    const eg_value *v = &g->values[iv];
    if (v->role != EG_ROLE_NODE) return false;
    const eg_node *m = &g->nodes[v->def];
    if (m->op == EG_OP_clone) {
      iv = eg_htp_arg(m, 0, "self");
      continue;
    }
    const eg_arg *tuple = eg_node_arg(m, 0, NULL), *idx = eg_node_arg(m, 1, NULL);
    if (m->op != EG_OP_getitem || !tuple || tuple->kind != EG_ARG_VALUE || !idx ||
        idx->kind != EG_ARG_INT || idx->i != 1 || g->values[tuple->value].role != EG_ROLE_NODE)
      return false;
    const eg_node *f = &g->nodes[g->values[tuple->value].def];
    if (f->op != EG_OP_max_pool2d_with_indices) return false;
    window fw;
    parse_window(f, &fw);
    for (int d = 0; d < 2; d++)
      if (fw.k[d] != w->k[d] || fw.s[d] != w->s[d] || fw.p[d] != w->p[d] || fw.d[d] != w->d[d])
        return false;
    return true;
  }
  return false;
}

/* Whether the phase form (file comment) applies: along each dim, every phase r in [0, s) is
 * the offset i*d mod s of some tap i (a kernel no shorter than its stride, dilation 1). */
static bool phase_form_ok(const window *w) {
  for (int d = 0; d < 2; d++)
    for (int64_t r = 0; r < w->s[d]; r++) {
      bool hit = false;
      for (int64_t i = 0; i < w->k[d] && !hit; i++) hit = i * w->d[d] % w->s[d] == r;
      if (!hit) return false;
    }
  return true;
}

static bool max_pool_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                       char *reason, size_t size) {
  (void)t;
  const eg_value *gy = eg_htp_arg_value(g, n, 0, "grad_output");
  const int32_t iv = eg_htp_arg(n, 7, "indices");
  if (!pool_input_ok(gy, reason, size) ||
      !eg_htp_float_tensor_ok(g, n->output, reason, size))
    return false;
  if (iv < 0 || g->values[iv].kind != EG_VALUE_TENSOR ||
      g->values[iv].dtype != EG_DTYPE_INT64 || !eg_htp_move_tensor_ok(g, iv, reason, size)) {
    if (iv < 0 || g->values[iv].dtype != EG_DTYPE_INT64)
      snprintf(reason, size, "indices is not an int64 tensor");
    return false;
  }
  const eg_value *x = &g->values[n->output];
  if (x->rank != 4) {
    snprintf(reason, size, "unbatched result: pooling on the NPU takes NHWC rank 4");
    return false;
  }
  window w;
  parse_window(n, &w);
  if (!eg_htp_u32_params_ok("kernel_size", w.k, 2, reason, size) ||
      !eg_htp_u32_params_ok("stride", w.s, 2, reason, size) ||
      !eg_htp_u32_params_ok("padding", w.p, 2, reason, size) ||
      !eg_htp_u32_params_ok("dilation", w.d, 2, reason, size) ||
      !index_form_ok(&w, x->shape[2], x->shape[3], reason, size))
    return false;
  if (!indices_from_forward(g, iv, &w)) {
    snprintf(reason, size, "indices not read from a max_pool2d_with_indices of this window: "
             "the NPU form cannot check that each index is a tap of its window");
    return false;
  }
  if (w.k[0] < 1 || w.k[1] < 1 || w.s[0] < 1 || w.s[1] < 1 || w.d[0] < 1 || w.d[1] < 1) {
    snprintf(reason, size, "kernel, stride and dilation must be >= 1");
    return false;
  }
  for (int d = 0; d < 2 && !phase_form_ok(&w); d++) {
    const int64_t in = x->shape[2 + d], taps = w.k[d] * gy->shape[2 + d];
    if (in > EG_HTP_POOL_MAX_MATRIX / taps) {
      snprintf(reason, size, "%s %lld taps -> %lld: its placement matrix (%g elements) exceeds "
               "the NPU lowering's STATIC matrix limit of %lld elements", d ? "W" : "H",
               (long long)taps, (long long)in, (double)in * (double)taps,
               EG_HTP_POOL_MAX_MATRIX);
      return false;
    }
  }
  return eg_htp_separable_rows_fit(x, reason, size);
}

/* Dim d's STATIC 0/1 placement matrix [in, k * out]: entry (h, i * out + a) is 1 where tap i of
 * window a reads input row h (a*s - p + i*dil == h). */
static eg_status place_matrix(eg_htp_lower *L, const window *w, int d, int64_t in, int64_t out,
                              int32_t *tensor) {
  const int64_t cols = w->k[d] * out;
  float *m = calloc((size_t)(in * cols), sizeof *m);
  if (!m) return eg_error(EG_ERR_NOMEM, "lowering max pool backward: out of memory (%lldx%lld "
                          "matrix)", (long long)in, (long long)cols);
  for (int64_t i = 0; i < w->k[d]; i++)
    for (int64_t a = 0; a < out; a++) {
      const int64_t h = a * w->s[d] - w->p[d] + i * w->d[d];
      if (h >= 0 && h < in) m[h * cols + i * out + a] = 1.0f;
    }
  const uint32_t dims[2] = {eg_htp_qnn_dim(in), eg_htp_qnn_dim(cols)};
  const eg_status st = eg_htp_const_f32(L, d ? "place_w" : "place_h", 2, dims, m, tensor);
  free(m);
  return st;
}

/* A Concat of n QNN tensors along `axis` into a new float temp of dims `dims`; n == 1 passes
 * the one tensor through. */
static eg_status concat_to(eg_htp_lower *L, const int32_t *in, int n, uint32_t axis,
                           const char *what, const uint32_t dims[4], int32_t *out) {
  if (n == 1) {
    *out = in[0];
    return EG_OK;
  }
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32("axis", axis);
  EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, dims, out));
  return eg_htp_op(L, EG_HTP_QNN_OP_CONCAT, in, n, out, 1, &p, 1);
}

/* Tap (i, j)'s gradient C = Select(ElementWiseEqual(indices, P), gy, 0) into a new temp. */
static eg_status tap_grad(eg_htp_lower *L, const window *w, int64_t i, int64_t j,
                          const eg_value *x, int32_t idx, int32_t gy, int32_t zero,
                          const uint32_t od[4], int32_t *out) {
  int32_t pos, hit;
  char what[2][48];
  snprintf(what[0], sizeof what[0], "is_arg_%lld_%lld", (long long)i, (long long)j);
  snprintf(what[1], sizeof what[1], "tap_grad_%lld_%lld", (long long)i, (long long)j);
  EG_TRY(tap_positions(L, w, i, j, x->shape[2], x->shape[3], od[1], od[2], &pos));
  EG_TRY(eg_htp_temp(L, what[0], EG_HTP_QNN_DTYPE_BOOL_8, 4, od, &hit));
  const int32_t eq[2] = {idx, pos};
  EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_EQUAL, eq, 2, &hit, 1, NULL, 0));
  const int32_t sel[3] = {hit, gy, zero};
  EG_TRY(eg_htp_temp(L, what[1], EG_HTP_QNN_DTYPE_FLOAT_32, 4, od, out));
  return eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, sel, 3, out, 1, NULL, 0);
}

/* A Reshape of `in` into a new float temp of dims `dims`. */
static eg_status reshape_to(eg_htp_lower *L, int32_t in, const char *what,
                            const uint32_t dims[4], int32_t *out) {
  EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, dims, out));
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &in, 1, out, 1, NULL, 0);
}

/* The phase form (file comment): tap gradients shifted into their phase grids and summed, the
 * phases interleaved by Concat + Reshape, the padding cropped. */
static eg_status phase_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n,
                             const window *w, int32_t gy_t, int32_t idx, int32_t zero) {
  const eg_value *x = &g->values[n->output], *gy = &g->values[eg_htp_arg(n, 0, "grad_output")];
  const uint32_t nb = eg_htp_qnn_dim(x->shape[0]), c = eg_htp_qnn_dim(x->shape[1]);
  const uint32_t od[4] = {nb, eg_htp_qnn_dim(gy->shape[2]), eg_htp_qnn_dim(gy->shape[3]), c};
  const uint32_t s[2] = {(uint32_t)w->s[0], (uint32_t)w->s[1]};
  uint32_t m[2];
  bool crop = false;
  for (int d = 0; d < 2; d++) { /* grid rows: every shifted tap, and the input's extent */
    const int64_t in = x->shape[2 + d], q_max = (w->k[d] - 1) * w->d[d] / w->s[d];
    const int64_t cover = (w->p[d] + in + w->s[d] - 1) / w->s[d];
    m[d] = (uint32_t)(od[1 + d] + q_max > cover ? od[1 + d] + q_max : cover);
    crop |= w->p[d] != 0 || (int64_t)m[d] * w->s[d] != in;
  }
  const uint32_t md[4] = {nb, m[0], m[1], c};
  int32_t phase[EG_HTP_MAX_POOL_TAPS];
  for (int k = 0; k < EG_HTP_MAX_POOL_TAPS; k++) phase[k] = -1;
  for (int64_t i = 0; i < w->k[0]; i++)
    for (int64_t j = 0; j < w->k[1]; j++) {
      const int64_t oi = i * w->d[0], oj = j * w->d[1];
      const uint32_t qi = (uint32_t)(oi / s[0]), qj = (uint32_t)(oj / s[1]);
      int32_t tg, *acc = &phase[oi % s[0] * s[1] + oj % s[1]];
      char what[48];
      EG_TRY(tap_grad(L, w, i, j, x, idx, gy_t, zero, od, &tg));
      if (qi || qj || m[0] != od[1] || m[1] != od[2]) {
        const uint32_t pad[8] = {0, 0, qi, m[0] - od[1] - qi, qj, m[1] - od[2] - qj, 0, 0};
        static const uint32_t four_by_two[2] = {4, 2};
        const eg_htp_qnn_param p[3] = {
            eg_htp_qnn_param_u32("scheme", 0),
            eg_htp_qnn_param_u32_tensor("pad_amount", 2, four_by_two, pad),
            eg_htp_qnn_param_f32("pad_constant_value", 0.0f)};
        int32_t shifted;
        snprintf(what, sizeof what, "tap_shift_%lld_%lld", (long long)i, (long long)j);
        EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, md, &shifted));
        EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_PAD, &tg, 1, &shifted, 1, p, 3));
        tg = shifted;
      }
      if (*acc < 0) {
        *acc = tg;
        continue;
      }
      const int32_t add[2] = {*acc, tg};
      snprintf(what, sizeof what, "phase_sum_%lld_%lld", (long long)i, (long long)j);
      EG_TRY(eg_htp_temp(L, what, EG_HTP_QNN_DTYPE_FLOAT_32, 4, md, acc));
      EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_ELEMENT_WISE_ADD, add, 2, acc, 1, NULL, 0));
    }
  /* phase (r, t) holds rows r + s_h*a and cols t + s_w*b: cols interleave by a Concat along C
   * ([.., b, t, c] = col s_w*b + t), rows by one along a unit axis after W*C */
  const uint32_t cols_d[4] = {nb, m[0], m[1], s[1] * c};
  const uint32_t row_d[4] = {nb, m[0], 1, m[1] * s[1] * c};
  const uint32_t all_d[4] = {nb, m[0], s[0], m[1] * s[1] * c};
  const uint32_t full_d[4] = {nb, m[0] * s[0], m[1] * s[1], c};
  int32_t rows[EG_HTP_MAX_POOL_TAPS], all, out;
  for (uint32_t r = 0; r < s[0]; r++) {
    char what[2][48];
    snprintf(what[0], sizeof what[0], "phase_row_%u", r);
    snprintf(what[1], sizeof what[1], "phase_row_%u_flat", r);
    EG_TRY(concat_to(L, &phase[r * s[1]], (int)s[1], 3, what[0], cols_d, &rows[r]));
    if (s[0] > 1) EG_TRY(reshape_to(L, rows[r], what[1], row_d, &rows[r]));
  }
  EG_TRY(concat_to(L, rows, (int)s[0], 2, "phases", all_d, &all));
  if (!crop) {
    EG_TRY(eg_htp_define(L, n->output, &out));
    return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &all, 1, &out, 1, NULL, 0);
  }
  if (s[0] > 1 || s[1] > 1) EG_TRY(reshape_to(L, all, "phase_grid", full_d, &all));
  const int32_t ranges[12] = {0, (int32_t)nb, 1,
                              (int32_t)w->p[0], (int32_t)(w->p[0] + x->shape[2]), 1,
                              (int32_t)w->p[1], (int32_t)(w->p[1] + x->shape[3]), 1,
                              0, (int32_t)c, 1};
  static const uint32_t rdims[2] = {4, 3};
  const eg_htp_qnn_param r = eg_htp_qnn_param_i32_tensor("ranges", 2, rdims, ranges);
  EG_TRY(eg_htp_define(L, n->output, &out));
  return eg_htp_op(L, EG_HTP_QNN_OP_STRIDED_SLICE, &all, 1, &out, 1, &r, 1);
}

static eg_status max_pool_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t gy_v = eg_htp_arg(n, 0, "grad_output"), iv = eg_htp_arg(n, 7, "indices");
  EG_TRY(eg_htp_want_axes(L, gy_v, EG_AXES_NHWC, "grad_output"));
  EG_TRY(eg_htp_want_axes(L, iv, EG_AXES_NHWC, "indices"));
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_NHWC, "result"));
  const eg_value *gy = &g->values[gy_v], *x = &g->values[n->output];
  window w;
  parse_window(n, &w);
  const uint32_t one[1] = {1};
  const float zero_v = 0.0f;
  int32_t gy_t, idx, zero;
  EG_TRY(eg_htp_input(L, gy_v, &gy_t));
  EG_TRY(eg_htp_input(L, iv, &idx));
  EG_TRY(eg_htp_const_f32(L, "zero", 1, one, &zero_v, &zero));
  if (phase_form_ok(&w)) return phase_lower(L, g, n, &w, gy_t, idx, zero);
  const int64_t kh = w.k[0], kw = w.k[1];
  const uint32_t nb = eg_htp_qnn_dim(x->shape[0]), c = eg_htp_qnn_dim(x->shape[1]);
  const uint32_t oh = eg_htp_qnn_dim(gy->shape[2]), ow = eg_htp_qnn_dim(gy->shape[3]);
  const uint32_t od[4] = {nb, oh, ow, c}, row_d[4] = {nb, oh, (uint32_t)kw * ow, c};
  const uint32_t all_d[4] = {nb, (uint32_t)kh * oh, (uint32_t)kw * ow, c};
  int32_t rows[EG_HTP_MAX_POOL_TAPS], cols[EG_HTP_MAX_POOL_TAPS], all;
  for (int64_t i = 0; i < kh; i++) {
    for (int64_t j = 0; j < kw; j++)
      EG_TRY(tap_grad(L, &w, i, j, x, idx, gy_t, zero, od, &cols[j]));
    char row_name[32];
    snprintf(row_name, sizeof row_name, "kernel_row_%lld", (long long)i);
    EG_TRY(concat_to(L, cols, (int)kw, 2, row_name, row_d, &rows[i]));
  }
  EG_TRY(concat_to(L, rows, (int)kh, 1, "taps", all_d, &all));
  int32_t place_w, place_h;
  EG_TRY(place_matrix(L, &w, 1, x->shape[3], ow, &place_w));
  EG_TRY(place_matrix(L, &w, 0, x->shape[2], oh, &place_h));
  return eg_htp_separable_map(L, all, all_d, eg_htp_qnn_dim(x->shape[2]),
                              eg_htp_qnn_dim(x->shape[3]), place_w, place_h, n->output);
}

/* ---- the builders ---- */

const eg_htp_builder eg_htp_builder_max_pool2d_with_indices = {
    "aten.max_pool2d_with_indices -> PoolMax2d (+ indices: Pad + StridedSlice + "
    "ElementWiseGreaterEqual + ElementWiseSelect per tap)", 0, max_pool_supports, window_lower};
const eg_htp_builder eg_htp_builder_max_pool2d_with_indices_backward = {
    "aten.max_pool2d_with_indices_backward -> ElementWiseEqual + ElementWiseSelect per tap, "
    "then Pad + ElementWiseAdd per phase, Concat + Reshape + StridedSlice (kernel >= stride) "
    "or Concat + MatMul (columns, STATIC 0/1 matrix) + Reshape + MatMul (rows) + Reshape", 0,
    max_pool_backward_supports, max_pool_backward_lower};
const eg_htp_builder eg_htp_builder_avg_pool2d = {"aten.avg_pool2d -> PoolAvg2d", 0,
                                                  avg_pool_supports, window_lower};
const eg_htp_builder eg_htp_builder__adaptive_avg_pool2d = {
    "aten._adaptive_avg_pool2d -> ReduceMean (1x1) or PoolAvg2d (even windows)", 0,
    adaptive_avg_pool_supports, adaptive_avg_pool_lower};
const eg_htp_builder eg_htp_builder_avg_pool2d_backward = {
    "aten.avg_pool2d_backward -> MatMul (columns, STATIC spreading matrix) + Reshape + MatMul "
    "(rows) + Reshape", 0, avg_pool_backward_supports, avg_pool_backward_lower};
const eg_htp_builder eg_htp_builder__adaptive_avg_pool2d_backward = {
    "aten._adaptive_avg_pool2d_backward -> MatMul (columns, STATIC spreading matrix) + Reshape "
    "+ MatMul (rows) + Reshape", 0, avg_pool_backward_supports, avg_pool_backward_lower};
