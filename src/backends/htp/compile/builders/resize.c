/* resize.c — NPU builders for 2-D upsampling (bilinear and nearest), forward and backward.
 *
 * Each dim of ATen's resize is a linear map of that dim alone: y = A_h x A_w^T per plane, with
 * A_h [Ho, H] and A_w [Wo, W] the dims' interpolation matrices (two taps a row for bilinear, a
 * single 1 for nearest), and the backward is its transpose, gx = A_h^T gy A_w. Both directions
 * are lowered as that product (eg_htp_separable_map), on the NHWC value x [N, H, W, C]:
 *
 *   columns  MatMul(P [Wo', W'] STATIC, x [N, H, W', C])      -> [N, H, Wo', C]
 *            (QNN MatMul's batch dims broadcast: P applies to every [W', C] slice)
 *   rows     Reshape [N, H, Wo' * C] + MatMul(Q [Ho', H'] STATIC, .) -> [N, Ho', Wo' * C]
 *            + Reshape [N, Ho', Wo', C]
 *
 *   aten.upsample_bilinear2d(.vec), aten.upsample_nearest2d(.vec)      P = A_w,   Q = A_h
 *   aten.upsample_bilinear2d_backward(.vec),
 *   aten.upsample_nearest2d_backward(.vec)                             P = A_w^T, Q = A_h^T
 *
 * The matrices come from eg_resize_dim_matrix_f32 (kernels/resize_nchw_f32.h), the CPU
 * kernels' own coordinates, so every form the CPU op takes lowers exactly: align_corners true
 * and false, integer and fractional ratios, downsampling, an output of 1, nearest's exact
 * cases, and a given scale that does not reproduce the output size (coordinates from 1/scale,
 * which a Resize by output size cannot express). A dim whose size is unchanged is a copy in
 * both modes (an identity matrix): its MatMul is left out (the columns' stays when both are,
 * so an op writes the result).
 *
 * Why MatMul and not QNN's ResizeBilinear / ResizeNearestNeighbor: measured on QNN 2.51's HTP
 * emulator (onnxruntime-qnn, SM8650, fp16), ONNX Resize becomes ResizeBilinear or
 * ResizeNearestNeighbor for the half_pixel, pytorch_half_pixel, align_corners and asymmetric
 * modes and matches PyTorch to fp16 rounding, but bilinear costs 10 to 25 times the cycles of
 * these two MatMuls (16 channels 28x28 -> 224x224: 0.9-1.2e9 cycles against 3-4e7) and
 * nearest about as many or twice as many; a backward has no QNN op at all, and the product
 * covers every coordinate rule with one form for both directions.
 *
 * Constraints: float32, non-empty (an empty batch has no QNN tensor); x and the result held
 * NHWC (eg_value.axes, pass layout_nhwc). Each matrix is a STATIC weight of the partition:
 * one above EG_HTP_RESIZE_MAX_MATRIX elements (16 MiB of float32, e.g. 2048 -> 2049) is
 * declined, as its MatMul would also cost in * out multiply-adds per output row. */
#include <stdio.h>
#include <stdlib.h>

#include "backends/htp/compile/builders/builders.h"
#include "kernels/resize_nchw_f32.h"

#define EG_HTP_RESIZE_MAX_MATRIX (1LL << 22)

/* What the op's check parsed (ops/resize.c): the CPU kernel's params. */
static const eg_resize_params *params(const eg_node *n) {
  return EG_ATTRS(n, const eg_resize_params);
}

static bool is_bilinear(eg_op op) {
  return op == EG_OP_upsample_bilinear2d || op == EG_OP_upsample_bilinear2d_vec ||
         op == EG_OP_upsample_bilinear2d_backward ||
         op == EG_OP_upsample_bilinear2d_backward_vec;
}

static bool is_backward(eg_op op) {
  return op == EG_OP_upsample_bilinear2d_backward ||
         op == EG_OP_upsample_bilinear2d_backward_vec ||
         op == EG_OP_upsample_nearest2d_backward || op == EG_OP_upsample_nearest2d_backward_vec;
}

/* Argument 0 (self, input or grad_output by overload). */
static int32_t arg0(const eg_node *n) {
  const bool vec = n->op == EG_OP_upsample_bilinear2d_vec || n->op == EG_OP_upsample_nearest2d_vec;
  return eg_htp_arg(n, 0, is_backward(n->op) ? "grad_output" : vec ? "input" : "self");
}

static bool matrix_fits(const char *dim, int64_t in, int64_t out, char *reason, size_t size) {
  if (in <= EG_HTP_RESIZE_MAX_MATRIX / out) return true;
  snprintf(reason, size, "%s %lld -> %lld: its interpolation matrix (%g elements) exceeds the "
           "NPU lowering's STATIC matrix limit of %lld elements", dim, (long long)in,
           (long long)out, (double)in * (double)out, EG_HTP_RESIZE_MAX_MATRIX);
  return false;
}

static bool resize_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                            char *reason, size_t size) {
  (void)t;
  const int32_t x = arg0(n);
  if (x < 0 || g->values[x].kind != EG_VALUE_TENSOR) {
    snprintf(reason, size, "argument #0 is not a tensor");
    return false;
  }
  const eg_resize_params *p = params(n);
  return eg_htp_float_tensor_ok(g, x, reason, size) &&
         eg_htp_float_tensor_ok(g, n->output, reason, size) &&
         matrix_fits("H", p->h_in, p->h_out, reason, size) &&
         matrix_fits("W", p->w_in, p->w_out, reason, size) &&
         eg_htp_separable_rows_fit(&g->values[n->output], reason, size);
}

/* One dim's STATIC map [to, from] in the direction of node n: A [out, in] forward, A^T
 * [in, out] backward. */
static eg_status dim_matrix(eg_htp_lower *L, const eg_node *n, const char *what, int64_t in,
                            int64_t out, double scale, int32_t *tensor) {
  const eg_resize_params *p = params(n);
  const bool bwd = is_backward(n->op);
  float *m = malloc((size_t)(in * out) * sizeof *m);
  if (!m) return eg_error(EG_ERR_NOMEM, "lowering %s: out of memory (%lldx%lld matrix)",
                          n->name, (long long)out, (long long)in);
  eg_resize_dim_matrix_f32(in, out, is_bilinear(n->op), p->align_corners, scale, bwd, m);
  const uint32_t dims[2] = {eg_htp_qnn_dim(bwd ? in : out), eg_htp_qnn_dim(bwd ? out : in)};
  const eg_status st = eg_htp_const_f32(L, what, 2, dims, m, tensor);
  free(m);
  return st;
}

static eg_status resize_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t x_id = arg0(n);
  const eg_resize_params *p = params(n);
  const bool bwd = is_backward(n->op);
  EG_TRY(eg_htp_want_axes(L, x_id, EG_AXES_NHWC, bwd ? "grad_output" : "input"));
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_NHWC, "result"));
  const eg_value *x = &g->values[x_id], *y = &g->values[n->output];
  /* NHWC dims of the op's argument (from) and result (to) */
  const uint32_t nb = eg_htp_qnn_dim(x->shape[0]), c = eg_htp_qnn_dim(x->shape[1]);
  const uint32_t h0 = eg_htp_qnn_dim(x->shape[2]), w0 = eg_htp_qnn_dim(x->shape[3]);
  const uint32_t h1 = eg_htp_qnn_dim(y->shape[2]), w1 = eg_htp_qnn_dim(y->shape[3]);
  const bool rows = h0 != h1, cols = w0 != w1 || !rows;
  const uint32_t from[4] = {nb, h0, w0, c};
  int32_t in, m_cols = -1, m_rows = -1;
  EG_TRY(eg_htp_input(L, x_id, &in));
  if (cols) EG_TRY(dim_matrix(L, n, "cols", p->w_in, p->w_out, p->scale_w, &m_cols));
  if (rows) EG_TRY(dim_matrix(L, n, "rows", p->h_in, p->h_out, p->scale_h, &m_rows));
  return eg_htp_separable_map(L, in, from, h1, w1, m_cols, m_rows, n->output);
}

#define RESIZE_BUILDER(id, target)                                                          \
  const eg_htp_builder eg_htp_builder_##id = {                                              \
      target " -> MatMul (columns, STATIC interpolation matrix) + Reshape + MatMul (rows) + " \
      "Reshape", 0, resize_supports, resize_lower}

RESIZE_BUILDER(upsample_bilinear2d, "aten.upsample_bilinear2d");
RESIZE_BUILDER(upsample_bilinear2d_vec, "aten.upsample_bilinear2d.vec");
RESIZE_BUILDER(upsample_nearest2d, "aten.upsample_nearest2d");
RESIZE_BUILDER(upsample_nearest2d_vec, "aten.upsample_nearest2d.vec");
RESIZE_BUILDER(upsample_bilinear2d_backward, "aten.upsample_bilinear2d_backward");
RESIZE_BUILDER(upsample_bilinear2d_backward_vec, "aten.upsample_bilinear2d_backward.vec");
RESIZE_BUILDER(upsample_nearest2d_backward, "aten.upsample_nearest2d_backward");
RESIZE_BUILDER(upsample_nearest2d_backward_vec, "aten.upsample_nearest2d_backward.vec");
