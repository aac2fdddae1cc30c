/* test_htp_conv_grouped.c — grouped TransposeConv2d with output_padding (builders/conv.c,
 * tconv_pads): QNN HTP computes a grouped TransposeConv2d with output_padding > 0 shifted by one,
 * so the lowering describes the same output with asymmetric pad_amount [p, p - op] and
 * output_padding 0, and declines where op > p. Checked on the lowered graph (params), on the
 * executor against edgegrad's NCHW reference kernels run with ATen's symmetric padding and
 * output_padding, and by the placement reason. PyTorch numerics are tests/ops/test_npu_conv.py's
 * (depthwise_s2_even, transposed_groups_pad).
 *
 * Graphs: the input gradient of a stride-2 depthwise conv on an even input (MobileNet's
 * downsampling: x [2, 4, 8, 8], 3x3, padding 1, groups 4: output_padding 1), the same with
 * groups 1 (unchanged: output_padding 1, symmetric pads), a 1x1 stride-2 depthwise conv
 * (padding 0 < output_padding 1: declined), and a grouped transposed conv forward. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_lower.h"
#include "kernels/convolution_nchw_f32.h"

/* The partition's TransposeConv2d, or NULL. */
static const eg_htp_qnn_op_node *tconv_of(const eg_htp_qnn_graph *g) {
  for (int32_t k = 0; g && k < eg_htp_qnn_graph_num_ops(g); k++)
    if (eg_htp_qnn_graph_op(g, k)->type == EG_HTP_QNN_OP_TRANSPOSE_CONV_2D) return eg_htp_qnn_graph_op(g, k);
  return NULL;
}

static bool u32_param_is(const eg_htp_qnn_op_node *op, const char *name, int n, const uint32_t *v) {
  const eg_htp_qnn_param *p = op ? eg_htp_qnn_op_param(op, name) : NULL;
  if (!p || p->n_values != n) return false;
  for (int i = 0; i < n; i++)
    if (p->values.u32[i] != v[i]) return false;
  return true;
}

static void nchw_to_nhwc(const float *src, long n, long c, long h, long w, float *dst) {
  for (long b = 0; b < n; b++)
    for (long ch = 0; ch < c; ch++)
      for (long y = 0; y < h; y++)
        for (long x = 0; x < w; x++)
          dst[((b * h + y) * w + x) * c + ch] = src[((b * c + ch) * h + y) * w + x];
}

/* max |got - want| <= 1e-5 * max(1, max |want|) */
static bool close_to(const float *got, const float *want, long n) {
  double scale = 1.0, err = 0.0;
  for (long i = 0; i < n; i++) scale = fmax(scale, fabs((double)want[i]));
  for (long i = 0; i < n; i++) err = fmax(err, fabs((double)got[i] - (double)want[i]));
  if (!(err <= 1e-5 * scale)) fprintf(stderr, "  max error %g (scale %g)\n", err, scale);
  return err <= 1e-5 * scale;
}

/* Runs the one-input partition hp on the executor into `out`: its outputs (grad_input's tuple
 * element and its getitem) are one tensor. */
static bool run_all(const eg_lowered *hp, float *in, float *out) {
  for (int k = 1; k < hp->n_outputs; k++) EG_CHECK(hp->outputs[k].tensor == hp->outputs[0].tensor);
  const eg_htp_qnn_tensor *ti = eg_htp_qnn_graph_tensor(hp->graph, hp->inputs[0].tensor);
  const eg_htp_qnn_tensor *to = eg_htp_qnn_graph_tensor(hp->graph, hp->outputs[0].tensor);
  const eg_htp_qnn_binding bi[1] = {{ti->id, in, ti->nbytes}}, bo[1] = {{to->id, out, to->nbytes}};
  eg_htp_qnn_executor *ex = NULL;
  eg_status s = eg_htp_qnn_executor_create_plan(hp->graph, eg_htp_qnn_graph_plan(hp->graph),
                                                EG_PRECISION_FP32, false, &ex);
  if (s == EG_OK) s = eg_htp_qnn_executor_execute(ex, bi, 1, bo, 1);
  EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
  eg_htp_qnn_executor_destroy(ex);
  return s == EG_OK;
}

/* convolution_backward [T, F, F] of x [2, 4, 8, 8] by W [4, 4/groups, k, k], stride 2,
 * padding p: compiles it, checks the TransposeConv2d's params against want_pads /
 * want_out_pad, and runs it on the executor against the NCHW reference backward kernel. */
static void check_grad_input(compiled *c, long groups, long k, long p, const uint32_t want_pads[4],
                             const uint32_t want_out_pad[2], const float *w) {
  const eg_htp_qnn_graph *g = qg(c, 0);
  const eg_htp_qnn_op_node *tc = tconv_of(g);
  EG_CHECK(tc != NULL);
  if (!tc) return;
  EG_CHECK(u32_param_is(tc, "pad_amount", 4, want_pads));
  EG_CHECK(u32_param_is(tc, "output_padding", 2, want_out_pad));
  EG_CHECK(tc->attrs.conv.group == (uint32_t)groups);
  EG_CHECK(tc->attrs.conv.pad[0][1] == want_pads[1] && tc->attrs.conv.pad[1][1] == want_pads[3]);
  const eg_lowered *hp = &c->prog.lowered[0];
  EG_CHECK(hp->n_inputs == 1 && hp->inputs[0].nhwc);
  const long n = 2, cin = 4, h = 8, ho = (h + 2 * p - k) / 2 + 1;
  const long ngy = n * cin * ho * ho, ngx = n * cin * h * h;
  float *gy = eg_test_rand_buf(ngy, 31), *gy_nhwc = eg_test_nan_buf(ngy);
  float *x = eg_test_rand_buf(ngx, 32), *ref = eg_test_nan_buf(ngx);
  float *ref_nhwc = eg_test_nan_buf(ngx), *got = eg_test_nan_buf(ngx);
  nchw_to_nhwc(gy, n, cin, ho, ho, gy_nhwc);
  const eg_conv2d_params q = {.n = n, .c_in = cin, .h_in = h, .w_in = h, .c_out = cin,
                              .h_out = ho, .w_out = ho, .k_h = k, .k_w = k, .stride = {2, 2},
                              .padding = {p, p}, .dilation = {1, 1}, .groups = groups};
  const bool mask[3] = {true, false, false};
  void *scratch = malloc(eg_convolution_backward_nchw_f32_scratch(&q, mask) + 64);
  eg_convolution_backward_nchw_f32(&q, mask, gy, x, w, ref, NULL, NULL, scratch);
  nchw_to_nhwc(ref, n, cin, h, h, ref_nhwc);
  if (run_all(hp, gy_nhwc, got)) EG_CHECK(close_to(got, ref_nhwc, ngx));
  free(gy), free(gy_nhwc), free(x), free(ref), free(ref_nhwc), free(got), free(scratch);
}

#define BWD_VALUES(w_shape)                                                                     \
  T(0, "[2, 4, 4, 4]") "," T(1, "[2, 4, 8, 8]") "," T(2, w_shape) "," TUPLE(3, "[4, null, null]") \
  "," T(4, "[2, 4, 8, 8]") "," T(5, "[2, 4, 8, 8]")
#define BWD_NODES(pad, groups)                                                                  \
  NODE("convolution_backward", "aten.convolution_backward.default",                             \
       "[{\"value\": 0}, {\"value\": 1}, {\"value\": 2}, [0], [2, 2], [" #pad ", " #pad "], "   \
       "[1, 1], false, [0, 0], " #groups ", [true, false, false]]", 3) ","                       \
  GETITEM("getitem", 3, 0, 5)

/* Depthwise, stride 2, 3x3, padding 1, even input: output_padding 1 becomes pad_amount
 * [[1, 0], [1, 0]] with output_padding [0, 0]; the executor's result is ATen's. */
static void test_depthwise_grad_input(void) {
  float w[4 * 9];
  eg_test_fill(w, 4 * 9, 30);
  const stat_tensor st[1] = {{"w", "[4, 1, 3, 3]", 4 * 9, w}};
  compiled c = compile("dw_bwd", BWD_VALUES("[4, 1, 3, 3]"), IN("gy", 0) "," IN("x", 1),
                       IN("w", 2), BWD_NODES(1, 4), IN("gx", 5), 1, st);
  EG_CHECK(on_npu(&c, "convolution_backward"));
  if (c.ok && on_npu(&c, "convolution_backward"))
    check_grad_input(&c, 4, 3, 1, (const uint32_t[]){1, 0, 1, 0}, (const uint32_t[]){0, 0}, w);
  release(&c);
}

/* Groups 1 (QNN computes output_padding right there): symmetric pads and output_padding 1. */
static void test_group1_keeps_output_padding(void) {
  float w[4 * 4 * 9];
  eg_test_fill(w, 4 * 4 * 9, 40);
  const stat_tensor st[1] = {{"w", "[4, 4, 3, 3]", 4 * 4 * 9, w}};
  compiled c = compile("g1_bwd", BWD_VALUES("[4, 4, 3, 3]"), IN("gy", 0) "," IN("x", 1),
                       IN("w", 2), BWD_NODES(1, 1), IN("gx", 5), 1, st);
  EG_CHECK(on_npu(&c, "convolution_backward"));
  if (c.ok && on_npu(&c, "convolution_backward"))
    check_grad_input(&c, 1, 3, 1, (const uint32_t[]){1, 1, 1, 1}, (const uint32_t[]){1, 1}, w);
  release(&c);
}

/* Depthwise 1x1, stride 2, padding 0 on an even input: output_padding 1 > padding 0 has no
 * asymmetric form: declined with the measured reason. */
static void test_depthwise_op_above_pad_declines(void) {
  float w[4];
  eg_test_fill(w, 4, 50);
  const stat_tensor st[1] = {{"w", "[4, 1, 1, 1]", 4, w}};
  compiled c = compile("dw_1x1", BWD_VALUES("[4, 1, 1, 1]"), IN("gy", 0) "," IN("x", 1),
                       IN("w", 2), BWD_NODES(0, 4), IN("gx", 5), 1, st);
  const char *why = reason_of(&c, "convolution_backward");
  EG_CHECK_MSG(strcmp(why, "output_padding 1 > padding 0 with group 4, stride 2: QNN HTP "
                           "computes such a TransposeConv2d wrong (measured: shifted); no exact "
                           "form lowered") == 0, "reason: %s", why);
  EG_CHECK(!on_npu(&c, "convolution_backward"));
  release(&c);
}

/* conv_transpose2d(x [2, 4, 3, 3], W [4, 3, 3, 3], b [6]; stride 2, padding 1, output_padding
 * 1, groups 2) -> [2, 6, 6, 6]: pad_amount [[1, 0], [1, 0]], output_padding [0, 0]; the
 * executor's result is the NCHW reference's with ATen's parameters. Output_padding 1 in H only
 * (W 0) changes H's pads only. */
static void test_transposed_forward_grouped(void) {
  float w[4 * 3 * 9], b[6];
  eg_test_fill(w, 4 * 3 * 9, 60);
  eg_test_fill(b, 6, 61);
  const stat_tensor st[2] = {{"w", "[4, 3, 3, 3]", 4 * 3 * 9, w}, {"b", "[6]", 6, b}};
  compiled c = compile("tc_fwd", T(0, "[2, 4, 3, 3]") "," T(1, "[4, 3, 3, 3]") "," T(2, "[6]") ","
                       T(3, "[2, 6, 6, 5]"), IN("x", 0), IN("w", 1) "," IN("b", 2),
                       NODE("convolution", "aten.convolution.default",
                            "[{\"value\": 0}, {\"value\": 1}, {\"value\": 2}, [2, 2], [1, 1], "
                            "[1, 1], true, [1, 0], 2]", 3),
                       IN("y", 3), 2, st);
  const eg_htp_qnn_op_node *tc = tconv_of(qg(&c, 0));
  EG_CHECK(tc != NULL);
  if (tc) {
    EG_CHECK(u32_param_is(tc, "pad_amount", 4, (const uint32_t[]){1, 0, 1, 1}));
    EG_CHECK(u32_param_is(tc, "output_padding", 2, (const uint32_t[]){0, 0}));
    EG_CHECK(tc->attrs.conv.group == 2);
    const long nx = 2 * 4 * 3 * 3, ny = 2 * 6 * 6 * 5;
    float *x = eg_test_rand_buf(nx, 62), *x_nhwc = eg_test_nan_buf(nx);
    float *ref = eg_test_nan_buf(ny), *ref_nhwc = eg_test_nan_buf(ny), *got = eg_test_nan_buf(ny);
    nchw_to_nhwc(x, 2, 4, 3, 3, x_nhwc);
    const eg_conv2d_params q = {.n = 2, .c_in = 4, .h_in = 3, .w_in = 3, .c_out = 6, .h_out = 6,
                                .w_out = 5, .k_h = 3, .k_w = 3, .stride = {2, 2},
                                .padding = {1, 1}, .dilation = {1, 1}, .output_padding = {1, 0},
                                .groups = 2, .transposed = true};
    void *scratch = malloc(eg_convolution_nchw_f32_scratch(&q) + 64);
    eg_convolution_nchw_f32(&q, x, w, b, ref, scratch);
    nchw_to_nhwc(ref, 2, 6, 6, 5, ref_nhwc);
    float *in[1] = {x_nhwc};
    if (execute(&c, 0, 1, (const int32_t[]){0}, in, 3, got)) EG_CHECK(close_to(got, ref_nhwc, ny));
    free(x), free(x_nhwc), free(ref), free(ref_nhwc), free(got), free(scratch);
  }
  release(&c);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_test_htp_cg_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  EG_RUN(test_depthwise_grad_input);
  EG_RUN(test_group1_keeps_output_padding);
  EG_RUN(test_depthwise_op_above_pad_declines);
  EG_RUN(test_transposed_forward_grouped);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
