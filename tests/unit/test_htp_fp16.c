/* test_htp_fp16.c — the executor's fp16 precision (executor.h) on hand-built htp graphs.
 *
 * The graph is a frozen conv and its input gradient, design.md's composite:
 *   c = Conv2d(x, W); y = ElementWiseMultiply(c, s)          (forward, then a scale)
 *   gx = TransposeConv2d(gy, Transpose(W, [0,1,3,2]))        (input gradient, W folded)
 * with W and s STATIC. fp16 precision must store every float tensor as fp16 does and compute
 * each op as fp32 mode does between: so y equals, bit for bit, fp32 mode's Conv2d on the
 * fp16-rounded x and W, rounded, times the rounded s, rounded; gx equals fp32 mode's
 * TransposeConv2d on the rounded gy and W, rounded. Outputs are fp16 values and differ from
 * fp32 mode's; the graph's STATIC bytes and the caller's inputs are never written. Inputs
 * above 65504 saturate there, op outputs reach one binade further (131008), and a precision
 * out of range is refused. */
#include <stdint.h>
#include <string.h>

#include "backends/htp/executor.h"
#include "eg_test.h"
#include "eg_test_exec.h"
#include "util/error.h"
#include "util/fp16.h"

#define DIMS(...) ((const uint32_t[]){__VA_ARGS__})

enum { N = 2, H = 7, CI = 24, CO = 16, K = 3 };
#define NX (N * H * H * CI)
#define NY (N * H * H * CO)
#define NW (K * K * CI * CO)

#define tensor(...) eg_test_f32(__VA_ARGS__)

#define op(...) eg_test_op(__VA_ARGS__)

typedef struct composite {
  eg_htp_qnn_graph *g;
  int32_t x, gy, y, gx; /* y: c when conv_only */
} composite;

/* The composite over weights w (HWIO) and scale s; conv_only: just c = Conv2d(x, W) as y. */
static composite build(const float *w, const float *s, bool conv_only) {
  composite c = {0};
  EG_CHECK(eg_htp_qnn_graph_create("fp16", &c.g) == EG_OK);
  const eg_htp_qnn_param cp[2] = {
      eg_htp_qnn_param_u32_tensor("stride", 1, DIMS(2), DIMS(1, 1)),
      eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(2, 2), DIMS(1, 1, 1, 1))};
  const eg_htp_qnn_param tp[3] = {cp[0], cp[1],
                              eg_htp_qnn_param_u32_tensor("output_padding", 1, DIMS(2), DIMS(0, 0))};
  const eg_htp_qnn_param perm = eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(4), DIMS(0, 1, 3, 2));
  c.x = tensor(c.g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(N, H, H, CI), NULL);
  const int32_t tw = tensor(c.g, "w", EG_HTP_QNN_TENSOR_STATIC, 4, DIMS(K, K, CI, CO), w);
  if (conv_only) {
    c.y = tensor(c.g, "c", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(N, H, H, CO), NULL);
    op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 2, (const int32_t[]){c.x, tw}, c.y, 2, cp);
    return c;
  }
  const int32_t ts = tensor(c.g, "s", EG_HTP_QNN_TENSOR_STATIC, 1, DIMS(1), s);
  const int32_t tc = tensor(c.g, "c", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(N, H, H, CO), NULL);
  c.y = tensor(c.g, "y", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(N, H, H, CO), NULL);
  c.gy = tensor(c.g, "gy", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(N, H, H, CO), NULL);
  const int32_t twt = tensor(c.g, "w_hwoi", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(K, K, CO, CI), NULL);
  c.gx = tensor(c.g, "gx", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(N, H, H, CI), NULL);
  op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 2, (const int32_t[]){c.x, tw}, tc, 2, cp);
  op(c.g, "scale", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, 2, (const int32_t[]){tc, ts}, c.y, 0, NULL);
  op(c.g, "w_t", EG_HTP_QNN_OP_TRANSPOSE, 1, &tw, twt, 1, &perm);
  op(c.g, "dgrad", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, (const int32_t[]){c.gy, twt}, c.gx, 3, tp);
  return c;
}

/* Runs the composite at `precision` (conv_only: y only, gy unused). */
static void run(const composite *c, eg_precision precision, const float *x, const float *gy,
                float *y, float *gx) {
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG(eg_test_executor(c->g, precision, false, &ex) == EG_OK, "%s",
               eg_last_error());
  const eg_htp_qnn_binding in[2] = {{c->x, (void *)x, sizeof(float) * NX},
                                {c->gy, (void *)gy, sizeof(float) * NY}};
  const eg_htp_qnn_binding out[2] = {{c->y, y, sizeof(float) * NY}, {c->gx, gx, sizeof(float) * NX}};
  const int n = c->gx ? 2 : 1;
  EG_CHECK_MSG(ex && eg_htp_qnn_executor_execute(ex, in, n, out, n) == EG_OK, "%s", eg_last_error());
  eg_htp_qnn_executor_destroy(ex);
}

static float *rounded(const float *x, long n) {
  float *r = malloc(sizeof(float) * (size_t)n);
  memcpy(r, x, sizeof(float) * (size_t)n);
  eg_fp16_store_f32(r, (size_t)n);
  return r;
}

static long count_not_fp16(const float *x, long n) {
  long bad = 0;
  for (long i = 0; i < n; i++) bad += eg_fp16_to_f32(eg_fp16_from_f32(x[i])) != x[i];
  return bad;
}

static void test_stores_fp16(void) {
  float *x = eg_test_rand_buf(NX, 1), *w = eg_test_rand_buf(NW, 2), *gy = eg_test_rand_buf(NY, 3);
  const float s = 1.0f / 3;
  float *x0 = rounded(x, NX), *w0 = rounded(w, NW), *gy0 = rounded(gy, NY);
  memcpy(x0, x, sizeof(float) * NX), memcpy(w0, w, sizeof(float) * NW);
  memcpy(gy0, gy, sizeof(float) * NY); /* copies to check nothing writes the originals */
  composite c = build(w, &s, false);
  float *y16 = eg_test_nan_buf(NY), *gx16 = eg_test_nan_buf(NX);
  float *y32 = eg_test_nan_buf(NY), *gx32 = eg_test_nan_buf(NX);
  run(&c, EG_PRECISION_FP16, x, gy, y16, gx16);
  run(&c, EG_PRECISION_FP32, x, gy, y32, gx32);
  EG_CHECK_MSG(count_not_fp16(y16, NY) == 0 && count_not_fp16(gx16, NX) == 0,
               "%ld of y, %ld of gx not fp16 values", count_not_fp16(y16, NY),
               count_not_fp16(gx16, NX));
  EG_CHECK(count_not_fp16(y32, NY) > NY / 2); /* fp32 mode keeps fp32 values */
  EG_CHECK(memcmp(y16, y32, sizeof(float) * NY) != 0 && memcmp(gx16, gx32, sizeof(float) * NX) != 0);
  EG_CHECK(memcmp(x, x0, sizeof(float) * NX) == 0 && memcmp(gy, gy0, sizeof(float) * NY) == 0);
  EG_CHECK(memcmp(w, w0, sizeof(float) * NW) == 0 && s == 1.0f / 3); /* STATIC bytes as given */
  /* the reference: fp32 mode on rounded data, each op's output rounded */
  const float s16 = eg_fp16_to_f32(eg_fp16_from_f32(s));
  float *xr = rounded(x, NX), *wr = rounded(w, NW), *gyr = rounded(gy, NY);
  float *cref = eg_test_nan_buf(NY), *yref = eg_test_nan_buf(NY), *gxref = eg_test_nan_buf(NX);
  composite cc = build(wr, NULL, true);
  run(&cc, EG_PRECISION_FP32, xr, NULL, cref, NULL);
  eg_fp16_store_f32(cref, NY);
  for (long i = 0; i < NY; i++) yref[i] = cref[i] * s16;
  eg_fp16_store_f32(yref, NY);
  composite cr = build(wr, &s16, false);
  run(&cr, EG_PRECISION_FP32, xr, gyr, cref, gxref); /* its y is unrounded between: unused */
  eg_fp16_store_f32(gxref, NX);
  EG_CHECK_MSG(memcmp(y16, yref, sizeof(float) * NY) == 0, "y differs from the per-op rounding");
  EG_CHECK_MSG(memcmp(gx16, gxref, sizeof(float) * NX) == 0, "gx differs from the rounded dgrad");
  eg_htp_qnn_graph_destroy(c.g), eg_htp_qnn_graph_destroy(cc.g), eg_htp_qnn_graph_destroy(cr.g);
  free(x), free(w), free(gy), free(x0), free(w0), free(gy0), free(y16), free(gx16), free(y32),
      free(gx32), free(xr), free(wr), free(gyr), free(cref), free(yref), free(gxref);
}

/* y = x + x: inputs above 65504 saturate to it on entry; sums keep fp16's precision up to
 * 131008 (as QNN HTP computes x + x of 65504: docs/fp16.md). */
static void test_saturates(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("sat", &g) == EG_OK);
  const int32_t tx = tensor(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 1, DIMS(6), NULL);
  const int32_t ty = tensor(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 1, DIMS(6), NULL);
  op(g, "add", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, 2, (const int32_t[]){tx, tx}, ty, 0, NULL);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP16, false, &ex) == EG_OK);
  const float x[6] = {1e5f, -40000.0f, 1.0f / 3, 1e-8f, 65504.0f, 50000.3f};
  float y[6];
  const eg_htp_qnn_binding in = {tx, (void *)x, sizeof x}, out = {ty, y, sizeof y};
  EG_CHECK(ex && eg_htp_qnn_executor_execute(ex, &in, 1, &out, 1) == EG_OK);
  EG_CHECK(y[0] == 131008.0f && y[1] == -80000.0f && y[4] == 131008.0f);
  EG_CHECK(y[5] == 100032.0f); /* 50000.3 enters as 50016 (fp16); doubled, kept */
  EG_CHECK(y[2] == 2 * eg_fp16_to_f32(eg_fp16_from_f32(1.0f / 3)) && y[3] == 0);
  eg_htp_qnn_executor_destroy(ex);
  ex = NULL;
  EG_CHECK(eg_test_executor(g, (eg_precision)7, false, &ex) == EG_ERR_ARGUMENT &&
           !ex && strstr(eg_last_error(), "precision (7)") && !strchr(eg_last_error(), '\n'));
  eg_htp_qnn_graph_destroy(g);
}

int main(void) {
  EG_RUN(test_stores_fp16);
  EG_RUN(test_saturates);
  return eg_test_summary();
}
