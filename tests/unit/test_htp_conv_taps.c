/* test_htp_conv_taps.c — grad_weight of a groups-1 convolution in its NPU forms
 * (builders/conv.c): where grad_output has at most Cout pixels (N*Ho*Wo <= Cout) one 1x1
 * Conv2d of grad_output's pixels by the im2col of the input (lower_grad_weight_pixels); with
 * more pixels, at stride > 1, groups 1 and Cin x Cout >= 32768 one MatMul per kernel tap
 * (lower_grad_weight_taps: QNN HTP's fast preparation computes the dilated Conv2d form as
 * garbage there), below it the Conv2d of the input by grad_output; the forward of a 1x1
 * conv with stride > 1 and no padding, a StridedSlice of the pixels it reads and a stride-1
 * Conv2d (pointwise_subsample). Checked on the lowered graph: which form, the
 * MatMuls' transpose_in0, each StridedSlice's box, the Concat of the taps, the Conv2d operands'
 * dims, no Transpose of an operand already in order. The numbers against PyTorch are
 * tests/ops/test_npu_conv.py's (taps_*, pointwise_*).
 *
 * Graph: convolution_backward [F, T, F] of x [N, cin, 7, 5] by a 3x1 kernel with 256 output
 * channels, stride 2, padding [1, 0] (Ho 4, Wo 3: a non-square kernel and output, so a
 * row/column or kH/kW mix-up shows): N = 22 has 264 pixels (> 256), N = 2 has 24. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_lower.h"

#define TAPS_VALUES(n, cin)                                                                     \
  T(0, "[" #n ", 256, 4, 3]") "," T(1, "[" #n ", " #cin ", 7, 5]") ","                          \
  T(2, "[256, " #cin ", 3, 1]") "," TUPLE(3, "[null, 4, null]") ","                             \
  T(4, "[256, " #cin ", 3, 1]") "," T(5, "[256, " #cin ", 3, 1]")
#define TAPS_NODES                                                                              \
  NODE("convolution_backward", "aten.convolution_backward.default",                             \
       "[{\"value\": 0}, {\"value\": 1}, {\"value\": 2}, [0], [2, 2], [1, 0], [1, 1], false, "  \
       "[0, 0], 1, [false, true, false]]", 3) ","                                               \
  GETITEM("getitem", 3, 1, 5)

static int count_ops(const eg_htp_qnn_graph *g, eg_htp_qnn_op type) {
  int n = 0;
  for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++) n += eg_htp_qnn_graph_op(g, k)->type == type;
  return n;
}

static bool i32_ranges_are(const eg_htp_qnn_graph *g, int32_t k, const int32_t want[12]) {
  const eg_htp_qnn_param *p = param(g, k, "ranges");
  if (!p || p->n_values != 12) return false;
  for (int i = 0; i < 12; i++)
    if (p->values.i32[i] != want[i]) return false;
  return true;
}

static void test_tap_form(void) {
  compiled c = compile("taps", TAPS_VALUES(22, 128), IN("gy", 0) "," IN("x", 1) "," IN("w", 2), "",
                       TAPS_NODES, IN("gw", 5), 0, NULL);
  EG_CHECK(on_npu(&c, "convolution_backward"));
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(count_ops(g, EG_HTP_QNN_OP_CONV_2D) == 0);
  EG_CHECK(count_ops(g, EG_HTP_QNN_OP_MAT_MUL) == 3 && count_ops(g, EG_HTP_QNN_OP_CONCAT) == 1);
  EG_CHECK(count_ops(g, EG_HTP_QNN_OP_STRIDED_SLICE) == 3 && count_ops(g, EG_HTP_QNN_OP_PAD) == 1);
  int tap = 0;
  for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++) {
    const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
    if (op->type == EG_HTP_QNN_OP_PAD) { /* x NHWC [22, 7, 5, 128]: 1 row before, 1 after (the
                                        last tap's window, rows 2..8) */
      EG_CHECK(dims_are(out_of(g, k), VALS(22, 9, 5, 128)));
    } else if (op->type == EG_HTP_QNN_OP_STRIDED_SLICE) {
      /* tap (a, 0): rows a, a + 2, .., 4 of them; columns 0, 2, 4 */
      const int32_t want[12] = {0, 22, 1, tap, tap + 7, 2, 0, 5, 2, 0, 128, 1};
      EG_CHECK_MSG(i32_ranges_are(g, k, want), "tap %d", tap);
      EG_CHECK(dims_are(out_of(g, k), VALS(22, 4, 3, 128)));
      tap++;
    } else if (op->type == EG_HTP_QNN_OP_MAT_MUL) {
      const eg_htp_qnn_param *t0 = param(g, k, "transpose_in0"), *t1 = param(g, k, "transpose_in1");
      EG_CHECK(t0 && t0->scalar.b && t1 && !t1->scalar.b);
      EG_CHECK(dims_are(in_of(g, k, 0), VALS(264, 256)) &&
               dims_are(in_of(g, k, 1), VALS(264, 128)));
      EG_CHECK(dims_are(out_of(g, k), VALS(256, 128)));
    } else if (op->type == EG_HTP_QNN_OP_CONCAT) {
      EG_CHECK(dims_are(out_of(g, k), VALS(256, 128, 3)) && op->n_inputs == 3);
    }
  }
  EG_CHECK(tap == 3);
  /* gy is a partition input held NHWC, as the MatMuls read it: no Transpose of it, identity or
     other; x is held NCHW and moves to NHWC once */
  int transposes = 0;
  for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++) {
    if (eg_htp_qnn_graph_op(g, k)->type != EG_HTP_QNN_OP_TRANSPOSE) continue;
    const eg_htp_qnn_param *perm = param(g, k, "perm");
    EG_CHECK(perm && perm->n_values == 4);
    if (perm && perm->n_values == 4)
      EG_CHECK_MSG(!(perm->values.u32[0] == 0 && perm->values.u32[1] == 1 &&
                     perm->values.u32[2] == 2 && perm->values.u32[3] == 3),
                   "Transpose %d: identity perm", k);
    transposes++;
  }
  EG_CHECK(transposes == 1);
  release(&c);
}

/* One channel less (127 x 256 < 32768): the Conv2d form, no MatMul. */
static void test_conv_form_below_bound(void) {
  compiled c = compile("taps_below", TAPS_VALUES(22, 127), IN("gy", 0) "," IN("x", 1) "," IN("w", 2),
                       "", TAPS_NODES, IN("gw", 5), 0, NULL);
  EG_CHECK(on_npu(&c, "convolution_backward"));
  const eg_htp_qnn_graph *g = qg(&c, 0);
  EG_CHECK(count_ops(g, EG_HTP_QNN_OP_CONV_2D) == 1 && count_ops(g, EG_HTP_QNN_OP_MAT_MUL) == 0);
  EG_CHECK(count_ops(g, EG_HTP_QNN_OP_CONCAT) == 0);
  for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++)
    if (eg_htp_qnn_graph_op(g, k)->type == EG_HTP_QNN_OP_CONV_2D) /* x as [ci, H, W, N] */
      EG_CHECK(dims_are(in_of(g, k, 0), VALS(127, 7, 5, 22)));
  release(&c);
}

/* Batch 2 (24 pixels <= 256 channels), on both sides of the tap form's bound: one 1x1 Conv2d
 * of grad_output [1, 1, 256, 24] by the input's im2col [1, 1, 24, cin*3] (the Concat of the 3
 * taps' StridedSlices as [1, 24, cin, 1] along axis 3: taps innermost, ATen's order; rank 3
 * [24, cin, 1] along axis 2 QNN HTP computes wrong, conformance conv_npu_054), no MatMul,
 * and one Transpose each of x (held NCHW, to NHWC) and of grad_output (NHWC to CNHW): none of
 * the weight-sized result. */
static void test_pixels_form(void) {
  for (int below = 0; below < 2; below++) {
    const uint32_t cin = below ? 127 : 128;
    compiled c = below ? compile("pixels_below", TAPS_VALUES(2, 127), IN("gy", 0) "," IN("x", 1)
                                 "," IN("w", 2), "", TAPS_NODES, IN("gw", 5), 0, NULL)
                       : compile("pixels", TAPS_VALUES(2, 128), IN("gy", 0) "," IN("x", 1) ","
                                 IN("w", 2), "", TAPS_NODES, IN("gw", 5), 0, NULL);
    EG_CHECK(on_npu(&c, "convolution_backward"));
    const eg_htp_qnn_graph *g = qg(&c, 0);
    EG_CHECK_MSG(count_ops(g, EG_HTP_QNN_OP_CONV_2D) == 1 && count_ops(g, EG_HTP_QNN_OP_MAT_MUL) == 0,
                 "cin %u", cin);
    EG_CHECK(count_ops(g, EG_HTP_QNN_OP_STRIDED_SLICE) == 3 && count_ops(g, EG_HTP_QNN_OP_PAD) == 1);
    EG_CHECK(count_ops(g, EG_HTP_QNN_OP_CONCAT) == 1 && count_ops(g, EG_HTP_QNN_OP_TRANSPOSE) == 2);
    int tap = 0;
    for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++) {
      const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
      if (op->type == EG_HTP_QNN_OP_STRIDED_SLICE) {
        const int32_t want[12] = {0, 2, 1, tap, tap + 7, 2, 0, 5, 2, 0, (int32_t)cin, 1};
        EG_CHECK_MSG(i32_ranges_are(g, k, want), "tap %d", tap);
        tap++;
      } else if (op->type == EG_HTP_QNN_OP_CONCAT) {
        const eg_htp_qnn_param *axis = param(g, k, "axis");
        EG_CHECK(axis && axis->scalar.u32 == 3 && op->n_inputs == 3);
        EG_CHECK(dims_are(in_of(g, k, 0), VALS(1, 24, cin, 1)));
        EG_CHECK(dims_are(out_of(g, k), VALS(1, 24, cin, 3)));
      } else if (op->type == EG_HTP_QNN_OP_CONV_2D) {
        EG_CHECK(dims_are(in_of(g, k, 0), VALS(1, 1, 256, 24)));
        EG_CHECK(dims_are(in_of(g, k, 1), VALS(1, 1, 24, cin * 3)));
        EG_CHECK(dims_are(out_of(g, k), VALS(1, 1, 256, cin * 3)));
      }
    }
    EG_CHECK(tap == 3);
    release(&c);
  }
}

/* The forward 1x1 conv with stride [2, 3] and no padding of x [2, 4, 7, 5] (a trainable weight
 * [6, 4, 1, 1]): a StridedSlice of rows 0, 2, .., 6 and columns 0, 3 (NHWC [2, 4, 2, 4]), then
 * a Conv2d at stride 1. With padding 1 it stays one strided Conv2d. */
static void test_pointwise_subsample(void) {
  for (int padded = 0; padded < 2; padded++) {
    const char *args = padded ? "[{\"value\": 0}, {\"value\": 1}, null, [2, 3], [1, 1], [1, 1], "
                                "false, [0, 0], 1]"
                              : "[{\"value\": 0}, {\"value\": 1}, null, [2, 3], [0, 0], [1, 1], "
                                "false, [0, 0], 1]";
    char nodes[512];
    snprintf(nodes, sizeof nodes, NODE("convolution", "aten.convolution.default", "%s", 2), args);
    const char *values = padded ? T(0, "[2, 4, 7, 5]") "," T(1, "[6, 4, 1, 1]") "," T(2, "[2, 6, 5, 3]")
                                : T(0, "[2, 4, 7, 5]") "," T(1, "[6, 4, 1, 1]") "," T(2, "[2, 6, 4, 2]");
    compiled c = compile(padded ? "pw_padded" : "pw", values, IN("x", 0) "," IN("w", 1), "", nodes,
                         IN("y", 2), 0, NULL);
    EG_CHECK(on_npu(&c, "convolution"));
    const eg_htp_qnn_graph *g = qg(&c, 0);
    EG_CHECK_MSG(count_ops(g, EG_HTP_QNN_OP_STRIDED_SLICE) == (padded ? 0 : 1), "padded %d", padded);
    EG_CHECK(count_ops(g, EG_HTP_QNN_OP_CONV_2D) == 1);
    for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++) {
      const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(g, k);
      if (op->type == EG_HTP_QNN_OP_STRIDED_SLICE) {
        const int32_t want[12] = {0, 2, 1, 0, 7, 2, 0, 5, 3, 0, 4, 1};
        EG_CHECK(i32_ranges_are(g, k, want));
        EG_CHECK(dims_are(out_of(g, k), VALS(2, 4, 2, 4)));
      } else if (op->type == EG_HTP_QNN_OP_CONV_2D) {
        const eg_htp_qnn_param *st = param(g, k, "stride");
        EG_CHECK(st && st->n_values == 2);
        if (st && st->n_values == 2)
          EG_CHECK_MSG(st->values.u32[0] == (padded ? 2u : 1u) &&
                       st->values.u32[1] == (padded ? 3u : 1u), "padded %d", padded);
      }
    }
    release(&c);
  }
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_test_htp_taps_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  EG_RUN(test_tap_form);
  EG_RUN(test_conv_form_below_bound);
  EG_RUN(test_pixels_form);
  EG_RUN(test_pointwise_subsample);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
