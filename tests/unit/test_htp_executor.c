/* test_htp_executor.c — hand-built htp graphs run by the executor, against the portable NCHW CPU
 * kernels on the same data.
 *
 * The centrepiece is design.md's dgrad composite: a frozen HWIO weight, shared (one STATIC
 * tensor, found by source key) between a forward Conv2d and the backward
 * Transpose(perm [0,1,3,2]) + TransposeConv2d, with grad_bias as ReduceSum over N,H,W — checked
 * against eg_convolution_backward_nchw_f32 (mask [T, F, T]) for strides 1-3, every
 * output_padding the forward shapes derive, and the forward against eg_convolution_nchw_f32.
 * Also: NATIVE memory is shared between tensors whose lifetimes do not overlap, a small NHWC
 * classifier, threshold_backward as Greater + Select, and every binding / dtype error. */
#include <stdint.h>
#include <string.h>

#include "backends/htp/executor.h"
#include "eg_test.h"
#include "eg_test_exec.h"
#include "kernels/convolution_nchw_f32.h"
#include "kernels/log_softmax_f32.h"
#include "kernels/max_pool2d_nchw_f32.h"
#include "util/error.h"

#define DIMS(...) ((const uint32_t[]){__VA_ARGS__})

static void nhwc_to_nchw(const float *x, long n, long h, long w, long c, float *y) {
  for (long b = 0; b < n; b++)
    for (long i = 0; i < h * w; i++)
      for (long e = 0; e < c; e++) y[(b * c + e) * h * w + i] = x[(b * h * w + i) * c + e];
}

static void nchw_to_nhwc(const float *x, long n, long c, long h, long w, float *y) {
  for (long b = 0; b < n; b++)
    for (long i = 0; i < h * w; i++)
      for (long e = 0; e < c; e++) y[(b * h * w + i) * c + e] = x[(b * c + e) * h * w + i];
}

static int32_t add_tensor(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_tensor_type type,
                          eg_htp_qnn_dtype dtype, int rank, const uint32_t *dims, const void *data,
                          int64_t key) {
  size_t n = eg_htp_qnn_dtype_size(dtype);
  for (int i = 0; i < rank; i++) n *= dims[i];
  const eg_htp_qnn_tensor_desc d = {.name = name, .type = type, .dtype = dtype, .rank = rank,
                                .dims = dims, .data = data, .nbytes = data ? n : 0, .key = key};
  int32_t id = -1;
  EG_CHECK_MSG(eg_htp_qnn_graph_add_tensor(g, &d, &id) == EG_OK, "tensor %s: %s", name,
               eg_last_error());
  return id;
}

static int32_t f32(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_tensor_type type, int rank,
                   const uint32_t *dims) {
  return add_tensor(g, name, type, EG_HTP_QNN_DTYPE_FLOAT_32, rank, dims, NULL, EG_HTP_QNN_KEY_NONE);
}

#define op(...) eg_test_op(__VA_ARGS__)

static eg_htp_qnn_param vec2(const char *name, uint32_t a, uint32_t b) {
  return eg_htp_qnn_param_u32_tensor(name, 1, DIMS(2), DIMS(a, b));
}

static eg_htp_qnn_param pads(uint32_t p) {
  return eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(2, 2), DIMS(p, p, p, p));
}

/* ---- trainable weights: the layout Transposes the executor takes into its convs ---- */

typedef struct wlayout_case {
  long n, cin, h, cout, s, p;
  bool fused; /* few pixels against channels: the weight's Transposes are skipped */
} wlayout_case;

/* A trainable conv's step as the lowering emits it, weight W an APP_WRITE OIHW tensor:
 * y = Conv2d(x, Transpose(W, [2,3,1,0])); gx = TransposeConv2d(gy, Transpose(W, [2,3,0,1]));
 * gw = Transpose(Conv2d(Transpose(x, [3,1,2,0]), Transpose(gy, [1,2,0,3])), [3,0,1,2]), the
 * weight gradient's Conv2d having the forward's stride as its dilation. Against the NCHW
 * kernels; the op times say which Transposes ran (a skipped op has none). */
static void run_wlayout(const wlayout_case *c, unsigned seed) {
  const long k = 3, ho = (c->h + 2 * c->p - k) / c->s + 1;
  const long nx = c->n * c->h * c->h * c->cin, nw = c->cout * c->cin * k * k;
  const long ny = c->n * ho * ho * c->cout;
  const uint32_t n = (uint32_t)c->n, h = (uint32_t)c->h, ci = (uint32_t)c->cin;
  const uint32_t co = (uint32_t)c->cout, o = (uint32_t)ho, kk = (uint32_t)k;
  const uint32_t op_pad = (uint32_t)((c->h + 2 * c->p - k) % c->s);
  const uint32_t pa = (uint32_t)(k - c->h - c->p + c->s * (ho - 1)); /* gw's pad after */
  float *x = eg_test_rand_buf(nx, seed), *w = eg_test_rand_buf(nw, seed + 1);
  float *gy = eg_test_rand_buf(ny, seed + 2);
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("wlayout", &g) == EG_OK);
  const int32_t tx = f32(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(n, h, h, ci));
  const int32_t tw = f32(g, "w", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(co, ci, kk, kk));
  const int32_t tgy = f32(g, "gy", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(n, o, o, co));
  const int32_t ty = f32(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(n, o, o, co));
  const int32_t tgx = f32(g, "gx", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(n, h, h, ci));
  const int32_t tgw = f32(g, "gw", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(co, ci, kk, kk));
  const int32_t hwio = f32(g, "w_hwio", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(kk, kk, ci, co));
  const int32_t hwoi = f32(g, "w_hwoi", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(kk, kk, co, ci));
  const int32_t xt = f32(g, "x_t", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(ci, h, h, n));
  const int32_t gyt = f32(g, "gy_t", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(o, o, n, co));
  const int32_t gwc = f32(g, "gw_ihwo", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(ci, kk, kk, co));
#define PERM(...) eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(4), DIMS(__VA_ARGS__))
  const eg_htp_qnn_param p_hwio = PERM(2, 3, 1, 0), p_hwoi = PERM(2, 3, 0, 1);
  const eg_htp_qnn_param p_xt = PERM(3, 1, 2, 0), p_gyt = PERM(1, 2, 0, 3), p_oihw = PERM(3, 0, 1, 2);
#undef PERM
  const eg_htp_qnn_param cp[2] = {vec2("stride", (uint32_t)c->s, (uint32_t)c->s), pads((uint32_t)c->p)};
  const eg_htp_qnn_param tp[3] = {cp[0], cp[1], vec2("output_padding", op_pad, op_pad)};
  const eg_htp_qnn_param wp[3] = {
      vec2("stride", 1, 1), vec2("dilation", (uint32_t)c->s, (uint32_t)c->s),
      eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(2, 2),
                              DIMS((uint32_t)c->p, pa, (uint32_t)c->p, pa))};
  op(g, "w_to_hwio", EG_HTP_QNN_OP_TRANSPOSE, 1, &tw, hwio, 1, &p_hwio);           /* op 0 */
  op(g, "conv", EG_HTP_QNN_OP_CONV_2D, 2, (const int32_t[]){tx, hwio}, ty, 2, cp);  /* op 1 */
  op(g, "w_to_hwoi", EG_HTP_QNN_OP_TRANSPOSE, 1, &tw, hwoi, 1, &p_hwoi);           /* op 2 */
  op(g, "dgrad", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, (const int32_t[]){tgy, hwoi}, tgx, 3, tp);
  op(g, "x_t", EG_HTP_QNN_OP_TRANSPOSE, 1, &tx, xt, 1, &p_xt);
  op(g, "gy_t", EG_HTP_QNN_OP_TRANSPOSE, 1, &tgy, gyt, 1, &p_gyt);
  op(g, "wgrad", EG_HTP_QNN_OP_CONV_2D, 2, (const int32_t[]){xt, gyt}, gwc, 3, wp);
  op(g, "gw_to_oihw", EG_HTP_QNN_OP_TRANSPOSE, 1, &gwc, tgw, 1, &p_oihw);          /* op 7 */
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK, "%s", eg_last_error());
  int64_t times[16];
  eg_htp_qnn_executor_set_op_times(ex, times);
  float *y = eg_test_nan_buf(ny), *gx = eg_test_nan_buf(nx), *gw = eg_test_nan_buf(nw);
  const eg_htp_qnn_binding in[3] = {{tx, x, sizeof(float) * (size_t)nx},
                                {tw, w, sizeof(float) * (size_t)nw},
                                {tgy, gy, sizeof(float) * (size_t)ny}};
  const eg_htp_qnn_binding out[3] = {{ty, y, sizeof(float) * (size_t)ny},
                                 {tgx, gx, sizeof(float) * (size_t)nx},
                                 {tgw, gw, sizeof(float) * (size_t)nw}};
  for (int rep = 0; rep < 2; rep++)
    EG_CHECK_MSG(eg_htp_qnn_executor_execute(ex, in, 3, out, 3) == EG_OK, "%s", eg_last_error());
  char what[128];
  snprintf(what, sizeof what, "weight layouts n%ld c%ld %ldx%ld ->%ld s%ld p%ld", c->n, c->cin,
           c->h, c->h, c->cout, c->s, c->p);
  for (int t = 0; t <= 2; t += 2) /* ops 0, 2: the weight's Transposes, skipped when worth it */
    EG_CHECK_MSG((times[2 * t] == 0) == c->fused, "%s: op %d %s", what, t,
                 c->fused ? "ran (should be skipped)" : "was skipped");
  /* op 7, the weight gradient back to OIHW: always written by the Conv2d before it */
  EG_CHECK_MSG(times[2 * 7] == 0 && times[2 * 6] != 0, "%s: gw_to_oihw ran", what);
  /* reference: the NCHW kernels */
  float *xc = eg_test_nan_buf(nx), *gyc = eg_test_nan_buf(ny), *yc = eg_test_nan_buf(ny);
  float *gxc = eg_test_nan_buf(nx), *gwc_ref = eg_test_nan_buf(nw), *ref = eg_test_nan_buf(nx > ny ? nx : ny);
  nhwc_to_nchw(x, c->n, c->h, c->h, c->cin, xc);
  nhwc_to_nchw(gy, c->n, ho, ho, c->cout, gyc);
  const eg_conv2d_params q = {.n = c->n, .c_in = c->cin, .h_in = c->h, .w_in = c->h,
                              .c_out = c->cout, .h_out = ho, .w_out = ho, .k_h = k, .k_w = k,
                              .stride = {c->s, c->s}, .padding = {c->p, c->p},
                              .dilation = {1, 1}, .groups = 1};
  const bool mask[3] = {true, true, false};
  const size_t sb = eg_convolution_backward_nchw_f32_scratch(&q, mask);
  const size_t sf = eg_convolution_nchw_f32_scratch(&q);
  void *scratch = malloc((sb > sf ? sb : sf) + 1);
  eg_convolution_backward_nchw_f32(&q, mask, gyc, xc, w, gxc, gwc_ref, NULL, scratch);
  eg_convolution_nchw_f32(&q, xc, w, NULL, yc, scratch);
  nchw_to_nhwc(yc, c->n, c->cout, ho, ho, ref);
  long bad = eg_test_allclose(y, ref, ny, 1e-4, 1e-5);
  EG_CHECK_MSG(bad < 0, "%s: y element %ld", what, bad);
  nchw_to_nhwc(gxc, c->n, c->cin, c->h, c->h, ref);
  bad = eg_test_allclose(gx, ref, nx, 1e-4, 1e-5);
  EG_CHECK_MSG(bad < 0, "%s: grad_x element %ld", what, bad);
  bad = eg_test_allclose(gw, gwc_ref, nw, 1e-4, 1e-5);
  EG_CHECK_MSG(bad < 0, "%s: grad_w element %ld: %g vs %g", what, bad, bad >= 0 ? gw[bad] : 0.0,
               bad >= 0 ? gwc_ref[bad] : 0.0);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
  free(x), free(w), free(gy), free(y), free(gx), free(gw), free(xc), free(gyc), free(yc),
      free(gxc), free(gwc_ref), free(ref), free(scratch);
}

static void test_runtime_weight_layouts(void) {
  static const wlayout_case cases[] = {
      {2, 24, 4, 32, 1, 1, true},  /* 32 pixels, 32 channels: every weight Transpose skipped */
      {2, 16, 7, 24, 2, 1, true},  /* stride 2: the weight gradient's Conv2d dilated */
      {2, 16, 8, 24, 2, 1, true},  /* stride 2, output_padding 1, no pad after in gw */
      {2, 8, 12, 8, 1, 1, false},  /* 288 pixels against 8 channels: the Transposes run */
  };
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) run_wlayout(&cases[i], 40 + i);
}

/* ---- the dgrad composite ---- */

typedef struct dgrad_case {
  long n, cin, h, w, cout, k, s, p;
} dgrad_case;

static void run_dgrad(const dgrad_case *c, unsigned seed) {
  const long ho = (c->h + 2 * c->p - c->k) / c->s + 1, wo = (c->w + 2 * c->p - c->k) / c->s + 1;
  const uint32_t oph = (uint32_t)((c->h + 2 * c->p - c->k) % c->s);
  const uint32_t opw = (uint32_t)((c->w + 2 * c->p - c->k) % c->s);
  const long nx = c->n * c->h * c->w * c->cin, nw = c->k * c->k * c->cin * c->cout;
  const long ny = c->n * ho * wo * c->cout;
  float *x = eg_test_rand_buf(nx, seed), *w = eg_test_rand_buf(nw, seed + 1), *gy = eg_test_rand_buf(ny, seed + 2);
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("dgrad", &g) == EG_OK);
  const uint32_t u[8] = {(uint32_t)c->n, (uint32_t)c->h, (uint32_t)c->w, (uint32_t)c->cin,
                         (uint32_t)ho, (uint32_t)wo, (uint32_t)c->cout, (uint32_t)c->k};
  const int64_t key = eg_htp_qnn_key(3, 0); /* the weight's value id in the ATen graph */
  /* forward: y = Conv2d(x, W_hwio) */
  const int32_t tx = f32(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(u[0], u[1], u[2], u[3]));
  const int32_t tw = add_tensor(g, "conv.weight_hwio", EG_HTP_QNN_TENSOR_STATIC,
                                EG_HTP_QNN_DTYPE_FLOAT_32, 4, DIMS(u[7], u[7], u[3], u[6]), w, key);
  const int32_t ty = f32(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(u[0], u[4], u[5], u[6]));
  const eg_htp_qnn_param cp[2] = {vec2("stride", (uint32_t)c->s, (uint32_t)c->s), pads((uint32_t)c->p)};
  op(g, "conv_fwd", EG_HTP_QNN_OP_CONV_2D, 2, (const int32_t[]){tx, tw}, ty, 2, cp);
  /* backward: the builder asks for the same weight by key and gets the same tensor */
  const int32_t tw2 = add_tensor(g, "convolution_backward.weight", EG_HTP_QNN_TENSOR_STATIC,
                                 EG_HTP_QNN_DTYPE_FLOAT_32, 4, DIMS(u[7], u[7], u[3], u[6]), w, key);
  EG_CHECK(tw2 == tw);
  const int32_t twt = f32(g, "w_hwoi", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(u[7], u[7], u[6], u[3]));
  const eg_htp_qnn_param perm = eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(4), DIMS(0, 1, 3, 2));
  op(g, "weight_to_hwoi", EG_HTP_QNN_OP_TRANSPOSE, 1, &tw2, twt, 1, &perm);
  const int32_t tgy = f32(g, "grad_y", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(u[0], u[4], u[5], u[6]));
  const int32_t tgx = f32(g, "grad_x", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(u[0], u[1], u[2], u[3]));
  const eg_htp_qnn_param tp[3] = {cp[0], cp[1], vec2("output_padding", oph, opw)};
  op(g, "transpose_conv", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, (const int32_t[]){tgy, twt}, tgx, 3, tp);
  const int32_t tgb = f32(g, "grad_b", EG_HTP_QNN_TENSOR_APP_READ, 1, DIMS(u[6]));
  const eg_htp_qnn_param axes = eg_htp_qnn_param_u32_tensor("axes", 1, DIMS(3), DIMS(0, 1, 2));
  op(g, "grad_bias", EG_HTP_QNN_OP_REDUCE_SUM, 1, &tgy, tgb, 1, &axes);
  EG_CHECK(eg_htp_qnn_graph_num_tensors(g) == 7); /* the weight once */
  /* run */
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK, "%s", eg_last_error());
  float *y = eg_test_nan_buf(ny), *gx = eg_test_nan_buf(nx), *gb = eg_test_nan_buf(c->cout);
  const eg_htp_qnn_binding in[2] = {{tx, x, sizeof(float) * (size_t)nx},
                                {tgy, gy, sizeof(float) * (size_t)ny}};
  const eg_htp_qnn_binding out[3] = {{ty, y, sizeof(float) * (size_t)ny},
                                 {tgx, gx, sizeof(float) * (size_t)nx},
                                 {tgb, gb, sizeof(float) * (size_t)c->cout}};
  for (int rep = 0; rep < 2; rep++) /* a second run must give the same answer */
    EG_CHECK_MSG(ex && eg_htp_qnn_executor_execute(ex, in, 2, out, 3) == EG_OK, "%s", eg_last_error());
  /* reference: NCHW kernels on the same data */
  float *xc = eg_test_nan_buf(nx), *wc = eg_test_nan_buf(nw), *gyc = eg_test_nan_buf(ny), *yc = eg_test_nan_buf(ny);
  float *gxc = eg_test_nan_buf(nx), *gbc = eg_test_nan_buf(c->cout), *ref = eg_test_nan_buf(nx > ny ? nx : ny);
  nhwc_to_nchw(x, c->n, c->h, c->w, c->cin, xc);
  nhwc_to_nchw(gy, c->n, ho, wo, c->cout, gyc);
  for (long t = 0; t < c->k * c->k; t++) /* HWIO -> OIHW */
    for (long i = 0; i < c->cin; i++)
      for (long o = 0; o < c->cout; o++) wc[(o * c->cin + i) * c->k * c->k + t] = w[(t * c->cin + i) * c->cout + o];
  const eg_conv2d_params q = {.n = c->n, .c_in = c->cin, .h_in = c->h, .w_in = c->w,
                              .c_out = c->cout, .h_out = ho, .w_out = wo, .k_h = c->k,
                              .k_w = c->k, .stride = {c->s, c->s}, .padding = {c->p, c->p},
                              .dilation = {1, 1}, .groups = 1};
  const bool mask[3] = {true, false, true};
  const size_t sb = eg_convolution_backward_nchw_f32_scratch(&q, mask);
  const size_t sf = eg_convolution_nchw_f32_scratch(&q);
  void *scratch = malloc((sb > sf ? sb : sf) + 1);
  eg_convolution_backward_nchw_f32(&q, mask, gyc, xc, wc, gxc, NULL, gbc, scratch);
  eg_convolution_nchw_f32(&q, xc, wc, NULL, yc, scratch);
  char what[128];
  snprintf(what, sizeof what, "dgrad n%ld c%ld %ldx%ld ->%ld k%ld s%ld p%ld op%u,%u", c->n,
           c->cin, c->h, c->w, c->cout, c->k, c->s, c->p, oph, opw);
  nchw_to_nhwc(gxc, c->n, c->cin, c->h, c->w, ref);
  long bad = eg_test_allclose(gx, ref, nx, 1e-4, 1e-5);
  EG_CHECK_MSG(bad < 0, "%s: grad_x element %ld: %g vs %g", what, bad, bad >= 0 ? gx[bad] : 0.0,
               bad >= 0 ? ref[bad] : 0.0);
  bad = eg_test_allclose(gb, gbc, c->cout, 1e-4, 1e-5);
  EG_CHECK_MSG(bad < 0, "%s: grad_b element %ld", what, bad);
  nchw_to_nhwc(yc, c->n, c->cout, ho, wo, ref);
  bad = eg_test_allclose(y, ref, ny, 1e-4, 1e-5);
  EG_CHECK_MSG(bad < 0, "%s: forward y element %ld", what, bad);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
  free(x), free(w), free(gy), free(y), free(gx), free(gb), free(xc), free(wc), free(gyc),
      free(yc), free(gxc), free(gbc), free(ref), free(scratch);
}

static void test_dgrad_composite(void) {
  static const dgrad_case cases[] = {
      {2, 8, 10, 10, 16, 3, 1, 1},  {2, 16, 9, 9, 8, 3, 2, 1},  {2, 16, 10, 10, 8, 3, 2, 1},
      {1, 3, 23, 23, 16, 7, 2, 3},  {1, 3, 24, 24, 16, 7, 2, 3}, {2, 8, 12, 12, 12, 1, 1, 0},
      {2, 6, 11, 11, 10, 3, 3, 1}, {2, 6, 12, 12, 10, 3, 3, 1}, {2, 6, 13, 13, 10, 3, 3, 1},
      {1, 4, 9, 11, 6, 5, 3, 2},    {2, 32, 14, 14, 64, 3, 1, 1}, {1, 16, 28, 28, 32, 3, 2, 1},
  };
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) run_dgrad(&cases[i], 10 * i + 1);
}

/* ---- memory planning ---- */

/* x -> Relu -> a -> Neg -> b -> Relu -> c -> Neg -> d -> Sigmoid -> out: without a plan, a and
 * c (and b, d) may share bytes; each intermediate lives for two ops. With the layout pass's,
 * the Relus and Negs are one fused group (exec_plan.h FUSED): only d has bytes, and the
 * output is the same, bit for bit. */
static void test_native_memory_reuse(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("chain", &g) == EG_OK);
  const uint32_t *d = DIMS(4, 1000);
  int32_t t[6];
  t[0] = f32(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 2, d);
  static const char *const names[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; i++) t[1 + i] = f32(g, names[i], EG_HTP_QNN_TENSOR_NATIVE, 2, d);
  t[5] = f32(g, "out", EG_HTP_QNN_TENSOR_APP_READ, 2, d);
  static const eg_htp_qnn_op types[] = {EG_HTP_QNN_OP_RELU, EG_HTP_QNN_OP_ELEMENT_WISE_NEG, EG_HTP_QNN_OP_RELU,
                                    EG_HTP_QNN_OP_ELEMENT_WISE_NEG, EG_HTP_QNN_OP_SIGMOID};
  static const char *const opn[] = {"r1", "n1", "r2", "n2", "s"};
  for (int i = 0; i < 5; i++) op(g, opn[i], types[i], 1, &t[i], t[i + 1], 0, NULL);
  eg_htp_qnn_executor *ex = NULL, *fused = NULL;
  EG_CHECK(eg_htp_qnn_executor_create(g, &ex) == EG_OK);
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP32, false, &fused) == EG_OK);
  eg_htp_qnn_executor_stats st, sf;
  eg_htp_qnn_executor_get_stats(ex, &st);
  eg_htp_qnn_executor_get_stats(fused, &sf);
  EG_CHECK_MSG(st.native_sum_bytes == 4 * 16000 && st.native_bytes == 2 * 16000,
               "native %zu of %zu", st.native_bytes, st.native_sum_bytes);
  EG_CHECK_MSG(sf.native_sum_bytes == 16000, "fused: native %zu", sf.native_sum_bytes);
  float *x = eg_test_rand_buf(4000, 5), *y = eg_test_nan_buf(4000), *yf = eg_test_nan_buf(4000);
  const eg_htp_qnn_binding in = {t[0], x, 16000}, out = {t[5], y, 16000},
                           out_f = {t[5], yf, 16000};
  EG_CHECK(eg_htp_qnn_executor_execute(ex, &in, 1, &out, 1) == EG_OK);
  EG_CHECK(eg_htp_qnn_executor_execute(fused, &in, 1, &out_f, 1) == EG_OK);
  EG_CHECK(memcmp(y, yf, 16000) == 0);
  eg_htp_qnn_executor_destroy(fused);
  free(yf);
  bool ok = true;
  for (int i = 0; i < 4000; i++) { /* relu, neg, relu, neg: -(max(-max(x,0),0)) = 0 -> 0.5 */
    const float v = x[i] > 0 ? x[i] : 0.0f, r = -(-v > 0 ? -v : 0.0f);
    ok &= fabsf(y[i] - 1.0f / (1.0f + expf(-r))) < 1e-6f;
  }
  EG_CHECK(ok);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
  free(x), free(y);
}

/* Shared working memory (what the runtime gives a program's partitions): an executor made with
 * eg_htp_qnn_executor_create_shared refuses to run before it has its memory, names its tensors
 * with their ops, and two executors running one after the other from the same buffers (filled
 * with NaN first) give the answers of an executor with memory of its own, each tensor written
 * in its own buffer. */
static void test_shared_work(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("chain", &g) == EG_OK);
  const uint32_t *d = DIMS(3, 500);
  const int32_t x = f32(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 2, d);
  const int32_t a = f32(g, "a", EG_HTP_QNN_TENSOR_NATIVE, 2, d);
  const int32_t b = f32(g, "b", EG_HTP_QNN_TENSOR_NATIVE, 2, d);
  const int32_t y = f32(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 2, d);
  op(g, "r", EG_HTP_QNN_OP_SIGMOID, 1, &x, a, 0, NULL);
  op(g, "n", EG_HTP_QNN_OP_ELEMENT_WISE_NEG, 1, &a, b, 0, NULL);
  op(g, "t", EG_HTP_QNN_OP_TANH, 1, &b, y, 0, NULL);
  eg_htp_qnn_executor *own = NULL, *s1 = NULL, *s2 = NULL;
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP32, false, &own) == EG_OK);
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP32, true, &s1) == EG_OK);
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP32, true, &s2) == EG_OK);
  float *in = eg_test_rand_buf(1500, 9), *want = eg_test_nan_buf(1500);
  float *got1 = eg_test_nan_buf(1500), *got2 = eg_test_nan_buf(1500);
  const eg_htp_qnn_binding bi = {x, in, 6000}, bw = {y, want, 6000};
  const eg_htp_qnn_binding b1 = {y, got1, 6000}, b2 = {y, got2, 6000};
  EG_CHECK(eg_htp_qnn_executor_execute(s1, &bi, 1, &b1, 1) == EG_ERR_STATE);
  EG_CHECK(strstr(eg_last_error(), "eg_htp_qnn_executor_set_tensor_memory") != NULL);
  /* tensor by tensor: a (ops 0-1) and b (ops 1-2), each 6000 bytes rounded to 64 */
  const eg_htp_qnn_work_tensor *wt = NULL, *wt2 = NULL;
  EG_CHECK(eg_htp_qnn_executor_work_tensors(s1, &wt) == 2);
  EG_CHECK(eg_htp_qnn_executor_work_tensors(s2, &wt2) == 2);
  EG_CHECK(wt[0].tensor == a && wt[0].bytes == 6016 && wt[0].first_op == 0 && wt[0].last_op == 1);
  EG_CHECK(wt[1].tensor == b && wt[1].bytes == 6016 && wt[1].first_op == 1 && wt[1].last_op == 2);
  float *ta = eg_test_nan_buf(1504), *tb = eg_test_nan_buf(1504);
  void *const bufs[2] = {ta, tb};
  eg_htp_qnn_executor_set_tensor_memory(s1, bufs, NULL);
  eg_htp_qnn_executor_set_tensor_memory(s2, bufs, NULL);
  EG_CHECK(eg_htp_qnn_executor_execute(own, &bi, 1, &bw, 1) == EG_OK);
  for (int rep = 0; rep < 2; rep++) {
    EG_CHECK(eg_htp_qnn_executor_execute(s1, &bi, 1, &b1, 1) == EG_OK);
    EG_CHECK(eg_htp_qnn_executor_execute(s2, &bi, 1, &b2, 1) == EG_OK);
  }
  EG_CHECK(memcmp(got1, want, 6000) == 0 && memcmp(got2, want, 6000) == 0);
  for (int i = 0; i < 1500; i++) /* a and b went to their own buffers: sigmoid, then its negation */
    EG_CHECK(ta[i] > 0.0f && ta[i] < 1.0f && tb[i] == -ta[i]);
  free(ta), free(tb);
  eg_htp_qnn_executor_destroy(own);
  eg_htp_qnn_executor_destroy(s1);
  eg_htp_qnn_executor_destroy(s2);
  eg_htp_qnn_graph_destroy(g);
  free(in), free(want), free(got1), free(got2);
}

/* ---- a small NHWC classifier ---- */

/* x [2,8,8,3] -> Conv2d 3x3 pad 1 (+bias) -> Relu -> PoolMax2d 2x2 -> Reshape [2, 4*4*5] ->
 * FullyConnected 10 -> LogSoftmax, against NCHW kernels and plain loops. */
static void test_small_classifier(void) {
  const long n = 2, h = 8, cin = 3, cout = 5, classes = 10, feat = 4 * 4 * cout;
  float *x = eg_test_rand_buf(n * h * h * cin, 71), *w = eg_test_rand_buf(9 * cin * cout, 72);
  float *bias = eg_test_rand_buf(cout, 73), *fw = eg_test_rand_buf(classes * feat, 74), *fb = eg_test_rand_buf(classes, 75);
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("cls", &g) == EG_OK);
  const int32_t tx = f32(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(2, 8, 8, 3));
  const int32_t tw = add_tensor(g, "w", EG_HTP_QNN_TENSOR_STATIC, EG_HTP_QNN_DTYPE_FLOAT_32, 4,
                                DIMS(3, 3, 3, 5), w, eg_htp_qnn_key(1, 0));
  const int32_t tb = add_tensor(g, "b", EG_HTP_QNN_TENSOR_STATIC, EG_HTP_QNN_DTYPE_FLOAT_32, 1, DIMS(5),
                                bias, eg_htp_qnn_key(2, 0));
  const int32_t tfw = add_tensor(g, "fw", EG_HTP_QNN_TENSOR_STATIC, EG_HTP_QNN_DTYPE_FLOAT_32, 2,
                                 DIMS(10, 80), fw, EG_HTP_QNN_KEY_NONE);
  const int32_t tfb = add_tensor(g, "fb", EG_HTP_QNN_TENSOR_STATIC, EG_HTP_QNN_DTYPE_FLOAT_32, 1,
                                 DIMS(10), fb, EG_HTP_QNN_KEY_NONE);
  const int32_t c1 = f32(g, "c1", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(2, 8, 8, 5));
  const int32_t r1 = f32(g, "r1", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(2, 8, 8, 5));
  const int32_t p1 = f32(g, "p1", EG_HTP_QNN_TENSOR_NATIVE, 4, DIMS(2, 4, 4, 5));
  const int32_t f1 = f32(g, "f1", EG_HTP_QNN_TENSOR_NATIVE, 2, DIMS(2, 80));
  const int32_t l1 = f32(g, "l1", EG_HTP_QNN_TENSOR_NATIVE, 2, DIMS(2, 10));
  const int32_t out = f32(g, "logp", EG_HTP_QNN_TENSOR_APP_READ, 2, DIMS(2, 10));
  const eg_htp_qnn_param cp[2] = {vec2("stride", 1, 1), pads(1)};
  op(g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, (const int32_t[]){tx, tw, tb}, c1, 2, cp);
  op(g, "relu", EG_HTP_QNN_OP_RELU, 1, &c1, r1, 0, NULL);
  const eg_htp_qnn_param pp[2] = {vec2("filter_size", 2, 2), vec2("stride", 2, 2)};
  op(g, "pool", EG_HTP_QNN_OP_POOL_MAX_2D, 1, &r1, p1, 2, pp);
  op(g, "flatten", EG_HTP_QNN_OP_RESHAPE, 1, &p1, f1, 0, NULL);
  op(g, "fc", EG_HTP_QNN_OP_FULLY_CONNECTED, 3, (const int32_t[]){f1, tfw, tfb}, l1, 0, NULL);
  op(g, "logsm", EG_HTP_QNN_OP_LOG_SOFTMAX, 1, &l1, out, 0, NULL);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK, "%s", eg_last_error());
  float got[20];
  const eg_htp_qnn_binding in = {tx, x, sizeof(float) * 384}, ob = {out, got, sizeof got};
  EG_CHECK(ex && eg_htp_qnn_executor_execute(ex, &in, 1, &ob, 1) == EG_OK);
  /* reference */
  float xc[384], wc[135], yc[640], pc[160], pn[160], logits[20], ref[20];
  int64_t idx[160];
  nhwc_to_nchw(x, n, h, h, cin, xc);
  for (long t = 0; t < 9; t++)
    for (long i = 0; i < cin; i++)
      for (long o = 0; o < cout; o++) wc[(o * cin + i) * 9 + t] = w[(t * cin + i) * cout + o];
  const eg_conv2d_params q = {.n = n, .c_in = cin, .h_in = h, .w_in = h, .c_out = cout,
                              .h_out = h, .w_out = h, .k_h = 3, .k_w = 3, .stride = {1, 1},
                              .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
  void *scratch = malloc(eg_convolution_nchw_f32_scratch(&q) + 1);
  eg_convolution_nchw_f32(&q, xc, wc, bias, yc, scratch);
  for (int i = 0; i < 640; i++) yc[i] = yc[i] > 0 ? yc[i] : 0;
  const eg_max_pool2d_params mp = {.planes = n * cout, .h_in = 8, .w_in = 8, .h_out = 4,
                                   .w_out = 4, .kernel = {2, 2}, .stride = {2, 2},
                                   .padding = {0, 0}, .dilation = {1, 1}};
  eg_max_pool2d_nchw_f32(&mp, yc, pc, idx);
  nchw_to_nhwc(pc, n, cout, 4, 4, pn); /* flatten in NHWC order, as the graph does */
  for (long b = 0; b < n; b++)
    for (long k = 0; k < classes; k++) {
      double s = fb[k];
      for (long e = 0; e < feat; e++) s += (double)pn[b * feat + e] * fw[k * feat + e];
      logits[b * classes + k] = (float)s;
    }
  eg_log_softmax_f32(logits, ref, n, classes, 1);
  const long bad = eg_test_allclose(got, ref, 20, 1e-4, 1e-5);
  EG_CHECK_MSG(bad < 0, "classifier output %ld: %g vs %g", bad, bad >= 0 ? got[bad] : 0.0,
               bad >= 0 ? ref[bad] : 0.0);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
  free(x), free(w), free(bias), free(fw), free(fb), free(scratch);
}

/* threshold_backward(gy, x, 0) = Select(Greater(x, 0), gy, 0): a STATIC scalar broadcast. */
static void test_threshold_backward(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("thr", &g) == EG_OK);
  const float zero = 0.0f;
  const int32_t tx = f32(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(2, 3, 3, 4));
  const int32_t tgy = f32(g, "gy", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(2, 3, 3, 4));
  const int32_t tz = add_tensor(g, "zero", EG_HTP_QNN_TENSOR_STATIC, EG_HTP_QNN_DTYPE_FLOAT_32, 1,
                                DIMS(1), &zero, EG_HTP_QNN_KEY_NONE);
  const int32_t tm = add_tensor(g, "mask", EG_HTP_QNN_TENSOR_NATIVE, EG_HTP_QNN_DTYPE_BOOL_8, 4,
                                DIMS(2, 3, 3, 4), NULL, EG_HTP_QNN_KEY_NONE);
  const int32_t tgx = f32(g, "gx", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(2, 3, 3, 4));
  op(g, "gt", EG_HTP_QNN_OP_ELEMENT_WISE_GREATER, 2, (const int32_t[]){tx, tz}, tm, 0, NULL);
  op(g, "sel", EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, 3, (const int32_t[]){tm, tgy, tz}, tgx, 0, NULL);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK, "%s", eg_last_error());
  float *x = eg_test_rand_buf(72, 81), *gy = eg_test_rand_buf(72, 82), *gx = eg_test_nan_buf(72);
  const eg_htp_qnn_binding in[2] = {{tgy, gy, 288}, {tx, x, 288}}, out = {tgx, gx, 288};
  EG_CHECK(ex && eg_htp_qnn_executor_execute(ex, in, 2, &out, 1) == EG_OK);
  bool ok = true;
  for (int i = 0; i < 72; i++) ok &= gx[i] == (x[i] > 0 ? gy[i] : 0.0f);
  EG_CHECK(ok);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
  free(x), free(gy), free(gx);
}

/* StridedSlice: a box with steps, against the index formula. */
static void test_strided_slice(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("slice", &g) == EG_OK);
  const int32_t tx = f32(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(2, 5, 7, 3));
  const int32_t ty = f32(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(1, 3, 2, 2));
  const int32_t r[12] = {1, 2, 1, 0, 5, 2, 2, 6, 3, 1, 3, 1};
  const eg_htp_qnn_param p = eg_htp_qnn_param_i32_tensor("ranges", 2, DIMS(4, 3), r);
  op(g, "s", EG_HTP_QNN_OP_STRIDED_SLICE, 1, &tx, ty, 1, &p);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK, "%s", eg_last_error());
  float *x = eg_test_rand_buf(210, 91), *y = eg_test_nan_buf(12);
  const eg_htp_qnn_binding in = {tx, x, 840}, out = {ty, y, 48};
  EG_CHECK(ex && eg_htp_qnn_executor_execute(ex, &in, 1, &out, 1) == EG_OK);
  bool ok = true;
  for (int h = 0; h < 3; h++)
    for (int w = 0; w < 2; w++)
      for (int c = 0; c < 2; c++)
        ok &= y[(h * 2 + w) * 2 + c] == x[((1 * 5 + 2 * h) * 7 + 2 + 3 * w) * 3 + 1 + c];
  EG_CHECK(ok);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
  free(x), free(y);
}

/* Pad (CONSTANT): in[0] placed at the leading pads of each dim, every other element the fill;
 * against the index formula, with a non-zero fill so a missing fill shows. */
static void test_pad(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("pad", &g) == EG_OK);
  const int32_t tx = f32(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 4, DIMS(2, 3, 2, 3));
  const int32_t ty = f32(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 4, DIMS(3, 6, 5, 3));
  const uint32_t pads[8] = {1, 0, 2, 1, 0, 3, 0, 0};
  const eg_htp_qnn_param p[3] = {eg_htp_qnn_param_u32("scheme", 0),
                             eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(4, 2), pads),
                             eg_htp_qnn_param_f32("pad_constant_value", -1.5f)};
  op(g, "pad", EG_HTP_QNN_OP_PAD, 1, &tx, ty, 3, p);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK, "%s", eg_last_error());
  float *x = eg_test_rand_buf(36, 93), *y = eg_test_nan_buf(270);
  const eg_htp_qnn_binding in = {tx, x, 144}, out = {ty, y, 1080};
  EG_CHECK(ex && eg_htp_qnn_executor_execute(ex, &in, 1, &out, 1) == EG_OK);
  bool ok = true;
  for (int n = 0; n < 3; n++)
    for (int h = 0; h < 6; h++)
      for (int w = 0; w < 5; w++)
        for (int c = 0; c < 3; c++) {
          const int xn = n - 1, xh = h - 2, xw = w;
          const bool inside = xn >= 0 && xn < 2 && xh >= 0 && xh < 3 && xw < 2;
          const float want = inside ? x[((xn * 3 + xh) * 2 + xw) * 3 + c] : -1.5f;
          ok &= y[((n * 6 + h) * 5 + w) * 3 + c] == want;
        }
  EG_CHECK(ok);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
  free(x), free(y);
}

/* ---- errors ---- */

static void test_binding_errors(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("bind", &g) == EG_OK);
  const int32_t tx = f32(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 1, DIMS(4));
  const int32_t ty = f32(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 1, DIMS(4));
  op(g, "relu", EG_HTP_QNN_OP_RELU, 1, &tx, ty, 0, NULL);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK);
  float x[4] = {-1, 2, -3, 4}, y[4];
  const eg_htp_qnn_binding in = {tx, x, 16}, out = {ty, y, 16};
  EG_CHECK(eg_htp_qnn_executor_execute(ex, NULL, 0, &out, 1) == EG_ERR_ARGUMENT);
  EG_CHECK_MSG(strstr(eg_last_error(), "execute bind: input x (not bound): every APP_WRITE"),
               "%s", eg_last_error());
  EG_CHECK(eg_htp_qnn_executor_execute(ex, &in, 1, NULL, 0) == EG_ERR_ARGUMENT);
  EG_CHECK_MSG(strstr(eg_last_error(), "output y (not bound)"), "%s", eg_last_error());
  const eg_htp_qnn_binding small = {tx, x, 12};
  EG_CHECK(eg_htp_qnn_executor_execute(ex, &small, 1, &out, 1) == EG_ERR_ARGUMENT);
  EG_CHECK_MSG(strstr(eg_last_error(), "input x (12 bytes): needs a buffer of exactly 16 bytes"),
               "%s", eg_last_error());
  const eg_htp_qnn_binding twice[2] = {in, in};
  EG_CHECK(eg_htp_qnn_executor_execute(ex, twice, 2, &out, 1) == EG_ERR_ARGUMENT);
  EG_CHECK_MSG(strstr(eg_last_error(), "bound twice"), "%s", eg_last_error());
  EG_CHECK(eg_htp_qnn_executor_execute(ex, &out, 1, &out, 1) == EG_ERR_ARGUMENT);
  EG_CHECK_MSG(strstr(eg_last_error(), "input[0] (tensor id 1, y): must name an APP_WRITE"),
               "%s", eg_last_error());
  const eg_htp_qnn_binding nowhere = {tx, NULL, 16};
  EG_CHECK(eg_htp_qnn_executor_execute(ex, &nowhere, 1, &out, 1) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_htp_qnn_executor_execute(ex, &in, 1, &out, 1) == EG_OK);
  EG_CHECK(y[0] == 0 && y[1] == 2 && y[2] == 0 && y[3] == 4);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
}

static void test_unsupported_graphs(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("fp16", &g) == EG_OK);
  const int32_t tx = add_tensor(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, EG_HTP_QNN_DTYPE_FLOAT_16, 1,
                                DIMS(4), NULL, EG_HTP_QNN_KEY_NONE);
  const int32_t ty = add_tensor(g, "y", EG_HTP_QNN_TENSOR_APP_READ, EG_HTP_QNN_DTYPE_FLOAT_16, 1,
                                DIMS(4), NULL, EG_HTP_QNN_KEY_NONE);
  op(g, "relu", EG_HTP_QNN_OP_RELU, 1, &tx, ty, 0, NULL);
  eg_htp_qnn_executor *ex = (eg_htp_qnn_executor *)1;
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_ERR_UNSUPPORTED && ex == NULL);
  EG_CHECK_MSG(strstr(eg_last_error(), "op relu (Relu): tensor x is float16: the executor runs "
                      "float32"), "%s", eg_last_error());
  eg_htp_qnn_graph_destroy(g);
  /* an output no op writes */
  EG_CHECK(eg_htp_qnn_graph_create("dangling", &g) == EG_OK);
  f32(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 1, DIMS(4));
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_ERR_INVALID && ex == NULL);
  EG_CHECK_MSG(strstr(eg_last_error(), "output tensor y (APP_READ, no producer)"), "%s",
               eg_last_error());
  eg_htp_qnn_graph_destroy(g);
}

int main(void) {
  EG_RUN(test_dgrad_composite);
  EG_RUN(test_runtime_weight_layouts);
  EG_RUN(test_native_memory_reuse);
  EG_RUN(test_shared_work);
  EG_RUN(test_small_classifier);
  EG_RUN(test_threshold_backward);
  EG_RUN(test_strided_slice);
  EG_RUN(test_pad);
  EG_RUN(test_binding_errors);
  EG_RUN(test_unsupported_graphs);
  return eg_test_summary();
}
