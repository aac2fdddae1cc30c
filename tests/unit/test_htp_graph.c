/* test_htp_graph.c — building the htp backend graph (qnn_graph.h): tensor table, shared STATIC
 * tensors by source key, and QNN's construction rules. Error paths are tested as carefully as
 * success: each rejected op is checked for its status, for the one-line message naming the op,
 * what is wrong and the rule, and for leaving the graph unchanged. */
#include <stdint.h>

#include "backends/htp/qnn_graph.h"
#include "eg_test.h"
#include "util/error.h"

/* ---- helpers ---- */

static int32_t tensor(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_tensor_type type, int rank,
                      const uint32_t *dims) {
  eg_htp_qnn_tensor_desc d = {.name = name, .type = type, .dtype = EG_HTP_QNN_DTYPE_FLOAT_32,
                          .rank = rank, .dims = dims, .key = EG_HTP_QNN_KEY_NONE};
  static float zeros[1 << 16];
  if (type == EG_HTP_QNN_TENSOR_STATIC) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    d.data = zeros;
    d.nbytes = n * sizeof(float);
  }
  int32_t id = -1;
  const eg_status st = eg_htp_qnn_graph_add_tensor(g, &d, &id);
  EG_CHECK_MSG(st == EG_OK, "add tensor %s: %s", name, eg_last_error());
  return id;
}

#define DIMS(...) ((const uint32_t[]){__VA_ARGS__})
#define T4(g, name, type, a, b, c, d) tensor(g, name, type, 4, DIMS(a, b, c, d))

static eg_status add_op(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_op type, int n_in,
                        const int32_t *in, int32_t out, int n_params, const eg_htp_qnn_param *params) {
  const eg_htp_qnn_op_desc d = {.name = name, .type = type, .n_inputs = n_in, .inputs = in,
                            .n_outputs = 1, .outputs = &out, .n_params = n_params,
                            .params = params};
  return eg_htp_qnn_graph_add_op(g, &d, NULL);
}

static eg_htp_qnn_param vec2(const char *name, uint32_t a, uint32_t b) {
  return eg_htp_qnn_param_u32_tensor(name, 1, DIMS(2), DIMS(a, b));
}

static eg_htp_qnn_param pads(uint32_t t, uint32_t b, uint32_t l, uint32_t r) {
  return eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(2, 2), DIMS(t, b, l, r));
}

/* The last error is exactly one line, starts with `prefix` and contains each of the fragments. */
static void expect_error(eg_status st, eg_status want, const char *prefix, const char *frag1,
                         const char *frag2) {
  const char *msg = eg_last_error();
  EG_CHECK_MSG(st == want, "status %d, want %d (%s)", (int)st, (int)want, msg);
  EG_CHECK_MSG(strncmp(msg, prefix, strlen(prefix)) == 0, "message '%s' lacks prefix '%s'", msg,
               prefix);
  EG_CHECK_MSG(!frag1 || strstr(msg, frag1), "message '%s' lacks '%s'", msg, frag1);
  EG_CHECK_MSG(!frag2 || strstr(msg, frag2), "message '%s' lacks '%s'", msg, frag2);
  EG_CHECK_MSG(!strchr(msg, '\n'), "message '%s' spans lines", msg);
}

/* ---- names and tensors ---- */

static void test_op_names(void) {
  EG_CHECK(strcmp(eg_htp_qnn_op_name(EG_HTP_QNN_OP_TRANSPOSE_CONV_2D), "TransposeConv2d") == 0);
  EG_CHECK(strcmp(eg_htp_qnn_op_name(EG_HTP_QNN_OP_DEPTH_WISE_CONV_2D), "DepthWiseConv2d") == 0);
  EG_CHECK(strcmp(eg_htp_qnn_op_name(EG_HTP_QNN_OP_BATCHNORM), "Batchnorm") == 0);
  for (int i = 0; i < EG_HTP_QNN_OP_COUNT; i++)
    EG_CHECK(eg_htp_qnn_op_from_name(eg_htp_qnn_op_name((eg_htp_qnn_op)i)) == (eg_htp_qnn_op)i);
  EG_CHECK(eg_htp_qnn_op_from_name("Conv3d") == EG_HTP_QNN_OP_COUNT);
  EG_CHECK(strcmp(eg_htp_qnn_op_name(EG_HTP_QNN_OP_COUNT), "?") == 0);
  EG_CHECK(eg_htp_qnn_dtype_size(EG_HTP_QNN_DTYPE_FLOAT_16) == 2);
  EG_CHECK(eg_htp_qnn_dtype_is_fixed_point(EG_HTP_QNN_DTYPE_UFIXED_POINT_8));
  EG_CHECK(!eg_htp_qnn_dtype_is_fixed_point(EG_HTP_QNN_DTYPE_UINT_8));
}

static void test_tensor_validation(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("g", &g) == EG_OK);
  int32_t id;
  const uint32_t zero[2] = {3, 0}, ok[2] = {3, 4};
  eg_htp_qnn_tensor_desc d = {.name = "a", .type = EG_HTP_QNN_TENSOR_NATIVE,
                          .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 2, .dims = zero, .key = -1};
  expect_error(eg_htp_qnn_graph_add_tensor(g, &d, &id), EG_ERR_ARGUMENT, "tensor a: dims [3, 0]",
               ">= 1", NULL);
  d.dims = ok;
  d.name = "";
  expect_error(eg_htp_qnn_graph_add_tensor(g, &d, &id), EG_ERR_ARGUMENT, "qnn graph g: tensor name",
               "unique name", NULL);
  d.name = "w";
  d.type = EG_HTP_QNN_TENSOR_STATIC;
  expect_error(eg_htp_qnn_graph_add_tensor(g, &d, &id), EG_ERR_ARGUMENT, "tensor w: STATIC data",
               "missing", "48 bytes");
  float buf[12] = {0};
  d.data = buf;
  d.nbytes = 40;
  expect_error(eg_htp_qnn_graph_add_tensor(g, &d, &id), EG_ERR_ARGUMENT, "tensor w: STATIC data (40",
               "48 bytes", NULL);
  d.type = EG_HTP_QNN_TENSOR_NATIVE;
  d.nbytes = 48;
  expect_error(eg_htp_qnn_graph_add_tensor(g, &d, &id), EG_ERR_ARGUMENT, "tensor w: data given",
               "only STATIC", NULL);
  d.data = NULL;
  d.nbytes = 0;
  d.dtype = EG_HTP_QNN_DTYPE_UFIXED_POINT_8;
  expect_error(eg_htp_qnn_graph_add_tensor(g, &d, &id), EG_ERR_ARGUMENT, "tensor w: quantization",
               "need an encoding", NULL);
  d.quant = (eg_htp_qnn_quant){.encoding = EG_HTP_QNN_QUANT_SCALE_OFFSET, .scale = 0.1f, .offset = -128};
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &d, &id) == EG_OK && id == 0);
  d.dtype = EG_HTP_QNN_DTYPE_FLOAT_32;
  d.quant = (eg_htp_qnn_quant){0};
  expect_error(eg_htp_qnn_graph_add_tensor(g, &d, &id), EG_ERR_INVALID, "tensor w: name already used",
               "unique", NULL);
  EG_CHECK(eg_htp_qnn_graph_num_tensors(g) == 1);
  EG_CHECK(eg_htp_qnn_graph_find_tensor(g, "w") == 0 && eg_htp_qnn_graph_find_tensor(g, "v") == -1);
  eg_htp_qnn_graph_destroy(g);
}

/* Two ops asking for the same weight (same source key) get one STATIC tensor, stored once. */
static void test_shared_static_by_key(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("shared", &g) == EG_OK);
  float w[3 * 3 * 4 * 8];
  for (int i = 0; i < 288; i++) w[i] = (float)i;
  const uint32_t dims[4] = {3, 3, 4, 8};
  const int64_t key = eg_htp_qnn_key(17, 0);
  eg_htp_qnn_tensor_desc d = {.name = "conv1.weight", .type = EG_HTP_QNN_TENSOR_STATIC,
                          .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 4, .dims = dims, .data = w,
                          .nbytes = sizeof w, .copy_data = true, .key = key};
  int32_t a, b;
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &d, &a) == EG_OK);
  d.name = "conv1.weight_again"; /* a second builder asking for the same value */
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &d, &b) == EG_OK);
  EG_CHECK(a == b && eg_htp_qnn_graph_num_tensors(g) == 1);
  EG_CHECK(eg_htp_qnn_graph_find_key(g, key) == a && eg_htp_qnn_graph_find_key(g, eg_htp_qnn_key(17, 1)) == -1);
  const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(g, a);
  EG_CHECK(t->data != w && memcmp(t->data, w, sizeof w) == 0 && ((uintptr_t)t->data & 63) == 0);
  const uint32_t other[4] = {3, 3, 8, 4};
  d.dims = other;
  expect_error(eg_htp_qnn_graph_add_tensor(g, &d, &b), EG_ERR_INVALID,
               "tensor conv1.weight_again: key", "already names tensor conv1.weight",
               "one key, one tensor");
  d.dims = dims;
  d.type = EG_HTP_QNN_TENSOR_NATIVE;
  d.data = NULL;
  d.nbytes = 0;
  expect_error(eg_htp_qnn_graph_add_tensor(g, &d, &b), EG_ERR_INVALID, "tensor conv1.weight_again",
               "STATIC", "NATIVE");
  /* Referenced (not copied) bytes stay the caller's. */
  d = (eg_htp_qnn_tensor_desc){.name = "ref", .type = EG_HTP_QNN_TENSOR_STATIC, .dtype = EG_HTP_QNN_DTYPE_FLOAT_32,
                           .rank = 4, .dims = dims, .data = w, .nbytes = sizeof w, .key = -1};
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &d, &b) == EG_OK && eg_htp_qnn_graph_tensor(g, b)->data == w);
  EG_CHECK(eg_htp_qnn_key(1, 0) != eg_htp_qnn_key(0, 1) && eg_htp_qnn_key(5, 3) >= 0);
  eg_htp_qnn_graph_destroy(g);
}

/* ---- Conv2d rules ---- */

typedef struct conv_graph {
  eg_htp_qnn_graph *g;
  int32_t x, w, b, y;
} conv_graph;

/* x [1,8,8,4], w [3,3,4,6], b [6], y [1,8,8,6]: stride 1, pad 1. */
static conv_graph conv_setup(void) {
  conv_graph c;
  EG_CHECK(eg_htp_qnn_graph_create("conv", &c.g) == EG_OK);
  c.x = T4(c.g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 1, 8, 8, 4);
  c.w = T4(c.g, "w", EG_HTP_QNN_TENSOR_STATIC, 3, 3, 4, 6);
  c.b = tensor(c.g, "b", EG_HTP_QNN_TENSOR_STATIC, 1, DIMS(6));
  c.y = T4(c.g, "y", EG_HTP_QNN_TENSOR_APP_READ, 1, 8, 8, 6);
  return c;
}

static void test_conv2d_rules(void) {
  conv_graph c = conv_setup();
  const int32_t in[3] = {c.x, c.w, c.b};
  eg_htp_qnn_param p[4] = {vec2("stride", 1, 1), pads(1, 1, 1, 1)};
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 1, in, c.y, 2, p), EG_ERR_INVALID,
               "op conv (Conv2d): inputs (1 given)", "takes 2 to 3", NULL);
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 1, p), EG_ERR_INVALID,
               "op conv (Conv2d): param pad_amount: missing", "mandatory", NULL);
  p[2] = eg_htp_qnn_param_u32("padding", 1);
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 3, p), EG_ERR_INVALID,
               "op conv (Conv2d): param padding: unknown", NULL, NULL);
  p[2] = eg_htp_qnn_param_f32("group", 1.0f);
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 3, p), EG_ERR_INVALID,
               "op conv (Conv2d): param group (scalar float32)", "uint32", NULL);
  p[2] = eg_htp_qnn_param_u32("group", 2);
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 3, p), EG_ERR_INVALID,
               "op conv (Conv2d): in[1] filter w (dim 2 = 4", "Cin/group", NULL);
  p[2] = eg_htp_qnn_param_u32_tensor("stride", 1, DIMS(3), DIMS(1, 1, 1));
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 3, p), EG_ERR_INVALID,
               "op conv (Conv2d): param stride", "given twice", NULL);
  p[0] = eg_htp_qnn_param_u32_tensor("stride", 1, DIMS(3), DIMS(1, 1, 1));
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 2, p), EG_ERR_INVALID,
               "op conv (Conv2d): param stride (shape [3])", "[2]", NULL);
  p[0] = vec2("stride", 2, 2); /* the output would be 4x4, y says 8x8 */
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 2, p), EG_ERR_INVALID,
               "op conv (Conv2d): out[0] y (dims [1, 8, 8, 6], rule gives [1, 4, 4, 6])",
               "follow the op's rule", NULL);
  p[0] = vec2("stride", 0, 1);
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 2, p), EG_ERR_INVALID,
               "op conv (Conv2d): param stride ([0, 1])", ">= 1", NULL);
  EG_CHECK(eg_htp_qnn_graph_num_ops(c.g) == 0); /* nothing was added */
  p[0] = vec2("stride", 1, 1);
  p[2] = vec2("dilation", 1, 1);
  p[3] = eg_htp_qnn_param_u32("group", 1);
  EG_CHECK_MSG(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 4, p) == EG_OK, "%s",
               eg_last_error());
  const eg_htp_qnn_op_node *op = eg_htp_qnn_graph_op(c.g, 0);
  EG_CHECK(op && op->attrs.conv.pad[0][1] == 1 && op->attrs.conv.group == 1);
  EG_CHECK(eg_htp_qnn_graph_tensor(c.g, c.y)->producer == 0);
  EG_CHECK(eg_htp_qnn_op_param(op, "dilation") && !eg_htp_qnn_op_param(op, "output_padding"));
  expect_error(add_op(c.g, "conv", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 2, p), EG_ERR_INVALID,
               "op conv (Conv2d): name already used", "unique", NULL);
  expect_error(add_op(c.g, "conv2", EG_HTP_QNN_OP_CONV_2D, 3, in, c.y, 2, p), EG_ERR_INVALID,
               "op conv2 (Conv2d): out[0] y (already written by op conv)", "one producer", NULL);
  const int32_t bad_bias[3] = {c.x, c.w, c.x};
  const int32_t y2 = T4(c.g, "y2", EG_HTP_QNN_TENSOR_NATIVE, 1, 8, 8, 6);
  expect_error(add_op(c.g, "conv3", EG_HTP_QNN_OP_CONV_2D, 3, bad_bias, y2, 2, p), EG_ERR_INVALID,
               "op conv3 (Conv2d): in[2] bias x", "must be [6]", NULL);
  const int32_t no_bias[3] = {c.x, c.w, -1}; /* an omitted optional input */
  EG_CHECK_MSG(add_op(c.g, "conv4", EG_HTP_QNN_OP_CONV_2D, 3, no_bias, y2, 2, p) == EG_OK, "%s",
               eg_last_error());
  eg_htp_qnn_graph_destroy(c.g);
}

static void test_topological_order(void) {
  conv_graph c = conv_setup();
  const int32_t mid = T4(c.g, "mid", EG_HTP_QNN_TENSOR_NATIVE, 1, 8, 8, 4);
  const int32_t out = T4(c.g, "out", EG_HTP_QNN_TENSOR_APP_READ, 1, 8, 8, 4);
  expect_error(add_op(c.g, "relu", EG_HTP_QNN_OP_RELU, 1, &mid, out, 0, NULL), EG_ERR_INVALID,
               "op relu (Relu): in[0] mid (NATIVE, not produced yet)", "topological order", NULL);
  expect_error(add_op(c.g, "relu", EG_HTP_QNN_OP_RELU, 1, &c.x, c.w, 0, NULL), EG_ERR_INVALID,
               "op relu (Relu): out[0] w (STATIC)", "only NATIVE or APP_READ", NULL);
  const int32_t missing = 99;
  expect_error(add_op(c.g, "relu", EG_HTP_QNN_OP_RELU, 1, &missing, out, 0, NULL), EG_ERR_INVALID,
               "op relu (Relu): in[0] (tensor id 99)", "no such tensor", NULL);
  const int32_t absent = -1;
  expect_error(add_op(c.g, "relu", EG_HTP_QNN_OP_RELU, 1, &absent, out, 0, NULL), EG_ERR_INVALID,
               "op relu (Relu): in[0] (tensor id -1)", NULL, NULL);
  EG_CHECK(add_op(c.g, "relu", EG_HTP_QNN_OP_RELU, 1, &c.x, mid, 0, NULL) == EG_OK);
  EG_CHECK(add_op(c.g, "neg", EG_HTP_QNN_OP_ELEMENT_WISE_NEG, 1, &mid, out, 0, NULL) == EG_OK);
  expect_error(add_op(c.g, "bad", (eg_htp_qnn_op)EG_HTP_QNN_OP_COUNT, 1, &mid, out, 0, NULL),
               EG_ERR_INVALID, "op bad: type", "not a QNN op", NULL);
  eg_htp_qnn_graph_destroy(c.g);
}

/* ---- TransposeConv2d and Transpose (the dgrad composite) ---- */

static void test_transpose_conv2d_rules(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("dgrad", &g) == EG_OK);
  const int32_t w = T4(g, "w_hwio", EG_HTP_QNN_TENSOR_STATIC, 3, 3, 4, 6);
  const int32_t gy = T4(g, "grad_y", EG_HTP_QNN_TENSOR_APP_WRITE, 2, 4, 4, 6);
  const int32_t whwoi = T4(g, "w_hwoi", EG_HTP_QNN_TENSOR_NATIVE, 3, 3, 6, 4);
  const int32_t gx = T4(g, "grad_x", EG_HTP_QNN_TENSOR_APP_READ, 2, 8, 8, 4);
  const int32_t wrong = T4(g, "wrong", EG_HTP_QNN_TENSOR_NATIVE, 3, 3, 4, 6);
  eg_htp_qnn_param perm = eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(4), DIMS(0, 1, 3, 3));
  expect_error(add_op(g, "t", EG_HTP_QNN_OP_TRANSPOSE, 1, &w, whwoi, 1, &perm), EG_ERR_INVALID,
               "op t (Transpose): param perm ([0, 1, 3, 3])", "permutation of 0..3", NULL);
  perm = eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(4), DIMS(0, 1, 4, 2));
  expect_error(add_op(g, "t", EG_HTP_QNN_OP_TRANSPOSE, 1, &w, whwoi, 1, &perm), EG_ERR_INVALID,
               "op t (Transpose): param perm", "permutation", NULL);
  perm = eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(3), DIMS(0, 2, 1));
  expect_error(add_op(g, "t", EG_HTP_QNN_OP_TRANSPOSE, 1, &w, whwoi, 1, &perm), EG_ERR_INVALID,
               "op t (Transpose): param perm (shape [3])", "[4]", NULL);
  expect_error(add_op(g, "t", EG_HTP_QNN_OP_TRANSPOSE, 1, &w, whwoi, 0, NULL), EG_ERR_INVALID,
               "op t (Transpose): param perm: missing", NULL, NULL);
  perm = eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(4), DIMS(0, 1, 3, 2));
  expect_error(add_op(g, "t", EG_HTP_QNN_OP_TRANSPOSE, 1, &w, wrong, 1, &perm), EG_ERR_INVALID,
               "op t (Transpose): out[0] wrong (dims [3, 3, 4, 6], rule gives [3, 3, 6, 4])",
               NULL, NULL);
  EG_CHECK(add_op(g, "t", EG_HTP_QNN_OP_TRANSPOSE, 1, &w, whwoi, 1, &perm) == EG_OK);
  const int32_t in[2] = {gy, whwoi};
  eg_htp_qnn_param p[4] = {vec2("stride", 2, 2), pads(1, 1, 1, 1), vec2("output_padding", 2, 1)};
  expect_error(add_op(g, "tc", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, in, gx, 3, p), EG_ERR_INVALID,
               "op tc (TransposeConv2d): output_padding 2 not in [0, stride=2)", NULL, NULL);
  p[2] = vec2("dilation", 1, 1);
  expect_error(add_op(g, "tc", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, in, gx, 3, p), EG_ERR_INVALID,
               "op tc (TransposeConv2d): param dilation: unknown", NULL, NULL);
  p[2] = vec2("output_padding", 0, 0); /* 2*(4-1) + 3 - 2 + 0 = 7, not 8 */
  expect_error(add_op(g, "tc", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, in, gx, 3, p), EG_ERR_INVALID,
               "op tc (TransposeConv2d): out[0] grad_x (dims [2, 8, 8, 4], rule gives [2, 7, 7, 4])",
               NULL, NULL);
  const int32_t in_w[2] = {gy, w}; /* the HWIO weight itself: its dim 2 is 4, not Cin = 6 */
  p[2] = vec2("output_padding", 1, 1);
  expect_error(add_op(g, "tc", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, in_w, gx, 3, p), EG_ERR_INVALID,
               "op tc (TransposeConv2d): in[1] filter w_hwio (dim 2 = 4, in[0] has 6 channels)",
               "[kH, kW, Cin, Cout/group]", NULL);
  p[3] = eg_htp_qnn_param_u32("group", 4);
  expect_error(add_op(g, "tc", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, in, gx, 4, p), EG_ERR_INVALID,
               "op tc (TransposeConv2d): in[0] channels (6, group 4)", "divisible", NULL);
  EG_CHECK_MSG(add_op(g, "tc", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, in, gx, 3, p) == EG_OK, "%s",
               eg_last_error());
  EG_CHECK(eg_htp_qnn_graph_op(g, 1)->attrs.conv.output_padding[0] == 1);
  eg_htp_qnn_graph_destroy(g);
}

/* ---- StridedSlice (the crop of the weight-gradient Conv2d) ---- */

static void test_strided_slice_rules(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("slice", &g) == EG_OK);
  const int32_t x = T4(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 2, 5, 7, 3);
  const int32_t y = T4(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 2, 4, 3, 3);
  const int32_t r_ok[12] = {0, 2, 1, 0, 4, 1, 1, 7, 2, 0, 3, 1};
  eg_htp_qnn_param p = eg_htp_qnn_param_i32_tensor("ranges", 2, DIMS(4, 3), r_ok);
  eg_htp_qnn_param u = eg_htp_qnn_param_u32_tensor("ranges", 2, DIMS(4, 3),
                                           (const uint32_t *)(const void *)r_ok);
  expect_error(add_op(g, "s", EG_HTP_QNN_OP_STRIDED_SLICE, 1, &x, y, 1, &u), EG_ERR_INVALID,
               "op s (StridedSlice): param ranges (tensor uint32)", "must be a tensor int32", NULL);
  eg_htp_qnn_param short_r = eg_htp_qnn_param_i32_tensor("ranges", 2, DIMS(3, 3), r_ok);
  expect_error(add_op(g, "s", EG_HTP_QNN_OP_STRIDED_SLICE, 1, &x, y, 1, &short_r), EG_ERR_INVALID,
               "op s (StridedSlice): param ranges (shape [3, 3])", "[4, 3]", NULL);
  expect_error(add_op(g, "s", EG_HTP_QNN_OP_STRIDED_SLICE, 1, &x, y, 0, NULL), EG_ERR_INVALID,
               "op s (StridedSlice): param ranges: missing", NULL, NULL);
  const int32_t r_past[12] = {0, 2, 1, 0, 6, 1, 1, 7, 2, 0, 3, 1};
  eg_htp_qnn_param past = eg_htp_qnn_param_i32_tensor("ranges", 2, DIMS(4, 3), r_past);
  expect_error(add_op(g, "s", EG_HTP_QNN_OP_STRIDED_SLICE, 1, &x, y, 1, &past), EG_ERR_INVALID,
               "op s (StridedSlice): param ranges (dim 1: begin 0, end 6, stride 1; in[0] dim 5)",
               "end <= dim", NULL);
  const int32_t r_neg[12] = {0, 2, 1, 0, 4, 1, 1, 7, -2, 0, 3, 1};
  eg_htp_qnn_param neg = eg_htp_qnn_param_i32_tensor("ranges", 2, DIMS(4, 3), r_neg);
  expect_error(add_op(g, "s", EG_HTP_QNN_OP_STRIDED_SLICE, 1, &x, y, 1, &neg), EG_ERR_INVALID,
               "op s (StridedSlice): param ranges (dim 2: begin 1, end 7, stride -2", NULL, NULL);
  const int32_t r_big[12] = {0, 2, 1, 0, 5, 1, 1, 7, 2, 0, 3, 1}; /* 5 rows, y has 4 */
  eg_htp_qnn_param big = eg_htp_qnn_param_i32_tensor("ranges", 2, DIMS(4, 3), r_big);
  expect_error(add_op(g, "s", EG_HTP_QNN_OP_STRIDED_SLICE, 1, &x, y, 1, &big), EG_ERR_INVALID,
               "op s (StridedSlice): out[0] y (dims [2, 4, 3, 3], rule gives [2, 5, 3, 3])",
               NULL, NULL);
  EG_CHECK_MSG(add_op(g, "s", EG_HTP_QNN_OP_STRIDED_SLICE, 1, &x, y, 1, &p) == EG_OK, "%s",
               eg_last_error());
  EG_CHECK(eg_htp_qnn_graph_op(g, 0)->attrs.slice.begin[2] == 1 &&
           eg_htp_qnn_graph_op(g, 0)->attrs.slice.step[2] == 2);
  eg_htp_qnn_graph_destroy(g);
}

/* ---- Pad (the explicit padding of a convolution whose pad_amount QNN HTP computes wrong) ---- */

static void test_pad_rules(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("pad", &g) == EG_OK);
  const int32_t x = T4(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 2, 5, 7, 3);
  const int32_t y = T4(g, "y", EG_HTP_QNN_TENSOR_APP_READ, 2, 8, 9, 3);
  const uint32_t ok[8] = {0, 0, 2, 1, 1, 1, 0, 0};
  eg_htp_qnn_param p[3] = {eg_htp_qnn_param_u32("scheme", 0),
                       eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(4, 2), ok),
                       eg_htp_qnn_param_f32("pad_constant_value", 0.0f)};
  expect_error(add_op(g, "p", EG_HTP_QNN_OP_PAD, 1, &x, y, 0, NULL), EG_ERR_INVALID,
               "op p (Pad): param scheme: missing", NULL, NULL);
  p[0] = eg_htp_qnn_param_u32("scheme", 3);
  expect_error(add_op(g, "p", EG_HTP_QNN_OP_PAD, 1, &x, y, 3, p), EG_ERR_INVALID,
               "op p (Pad): param scheme (3): only 0 (CONSTANT) is modelled", NULL, NULL);
  p[0] = eg_htp_qnn_param_u32("scheme", 0);
  p[1] = eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(3, 2), ok);
  expect_error(add_op(g, "p", EG_HTP_QNN_OP_PAD, 1, &x, y, 3, p), EG_ERR_INVALID,
               "op p (Pad): param pad_amount (shape [3, 2])", "[4, 2]", NULL);
  const uint32_t big[8] = {0, 0, 3, 1, 1, 1, 0, 0}; /* 9 rows, y has 8 */
  p[1] = eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(4, 2), big);
  expect_error(add_op(g, "p", EG_HTP_QNN_OP_PAD, 1, &x, y, 3, p), EG_ERR_INVALID,
               "op p (Pad): out[0] y (dims [2, 8, 9, 3], rule gives [2, 9, 9, 3])", NULL, NULL);
  const uint32_t huge[8] = {0, 0, UINT32_MAX, 1, 1, 1, 0, 0};
  p[1] = eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(4, 2), huge);
  expect_error(add_op(g, "p", EG_HTP_QNN_OP_PAD, 1, &x, y, 3, p), EG_ERR_INVALID,
               "op p (Pad): param pad_amount (dim 1: 4294967295 + 5 + 1)", "too long", NULL);
  p[1] = eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(4, 2), ok);
  p[2] = eg_htp_qnn_param_f32("pad_constant_value", 2.5f);
  EG_CHECK_MSG(add_op(g, "p", EG_HTP_QNN_OP_PAD, 1, &x, y, 3, p) == EG_OK, "%s", eg_last_error());
  EG_CHECK(eg_htp_qnn_graph_op(g, 0)->attrs.pad.before[1] == 2 &&
           eg_htp_qnn_graph_op(g, 0)->attrs.pad.before[2] == 1 &&
           eg_htp_qnn_graph_op(g, 0)->attrs.pad.value == 2.5f);
  eg_htp_qnn_graph_destroy(g);
}

/* ---- the other ops' rules ---- */

static void test_pool_and_reduce_rules(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("pr", &g) == EG_OK);
  const int32_t x = T4(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, 1, 10, 10, 3);
  const int32_t y = T4(g, "y", EG_HTP_QNN_TENSOR_NATIVE, 1, 5, 5, 3);
  eg_htp_qnn_param p[4] = {vec2("filter_size", 2, 2), vec2("stride", 2, 2),
                       eg_htp_qnn_param_u32("rounding_mode", 2)};
  expect_error(add_op(g, "pool", EG_HTP_QNN_OP_POOL_MAX_2D, 1, &x, y, 3, p), EG_ERR_INVALID,
               "op pool (PoolMax2d): param rounding_mode (2)", "FLOOR", NULL);
  p[2] = pads(2, 0, 0, 0);
  expect_error(add_op(g, "pool", EG_HTP_QNN_OP_POOL_MAX_2D, 1, &x, y, 3, p), EG_ERR_INVALID,
               "op pool (PoolMax2d): pad_amount [2, 0] (filter 2)", "< filter_size", NULL);
  p[2] = eg_htp_qnn_param_bool("count_pad_for_edges", true);
  expect_error(add_op(g, "pool", EG_HTP_QNN_OP_POOL_MAX_2D, 1, &x, y, 3, p), EG_ERR_INVALID,
               "op pool (PoolMax2d): param count_pad_for_edges: unknown", NULL, NULL);
  EG_CHECK_MSG(add_op(g, "pool", EG_HTP_QNN_OP_POOL_AVG_2D, 1, &x, y, 3, p) == EG_OK, "%s",
               eg_last_error());
  /* ceil rounding whose last window starts past the input */
  const int32_t x11 = T4(g, "x11", EG_HTP_QNN_TENSOR_APP_WRITE, 1, 11, 11, 3);
  const int32_t y2 = T4(g, "y2", EG_HTP_QNN_TENSOR_NATIVE, 1, 5, 5, 3);
  eg_htp_qnn_param q[4] = {vec2("filter_size", 2, 2), vec2("stride", 3, 3), pads(0, 1, 0, 1),
                       eg_htp_qnn_param_u32("rounding_mode", 1)};
  expect_error(add_op(g, "pool2", EG_HTP_QNN_OP_POOL_MAX_2D, 1, &x11, y2, 4, q), EG_ERR_INVALID,
               "op pool2 (PoolMax2d): height (5 windows, stride 3, size 11)", "starts past", NULL);
  const int32_t s = tensor(g, "s", EG_HTP_QNN_TENSOR_APP_READ, 1, DIMS(3));
  eg_htp_qnn_param axes = eg_htp_qnn_param_u32_tensor("axes", 1, DIMS(3), DIMS(0, 1, 1));
  expect_error(add_op(g, "sum", EG_HTP_QNN_OP_REDUCE_SUM, 1, &y, s, 1, &axes), EG_ERR_INVALID,
               "op sum (ReduceSum): param axes ([0, 1, 1], rank 4)", "distinct", NULL);
  axes = eg_htp_qnn_param_u32_tensor("axes", 1, DIMS(3), DIMS(0, 1, 2));
  EG_CHECK_MSG(add_op(g, "sum", EG_HTP_QNN_OP_REDUCE_SUM, 1, &y, s, 1, &axes) == EG_OK, "%s",
               eg_last_error());
  EG_CHECK(eg_htp_qnn_graph_op(g, 1)->attrs.reduce.mask == 0x7);
  const int32_t k = T4(g, "k", EG_HTP_QNN_TENSOR_APP_READ, 1, 1, 1, 3);
  eg_htp_qnn_param rp[2] = {axes, eg_htp_qnn_param_bool("keep_dims", false)};
  expect_error(add_op(g, "mean", EG_HTP_QNN_OP_REDUCE_MEAN, 1, &y, k, 2, rp), EG_ERR_INVALID,
               "op mean (ReduceMean): out[0] k (dims [1, 1, 1, 3], rule gives [3])", NULL, NULL);
  rp[1] = eg_htp_qnn_param_bool("keep_dims", true);
  EG_CHECK(add_op(g, "mean", EG_HTP_QNN_OP_REDUCE_MEAN, 1, &y, k, 2, rp) == EG_OK);
  eg_htp_qnn_graph_destroy(g);
}

static void test_elementwise_and_misc_rules(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("misc", &g) == EG_OK);
  const int32_t a = T4(g, "a", EG_HTP_QNN_TENSOR_APP_WRITE, 2, 3, 4, 5);
  const int32_t b = tensor(g, "b", EG_HTP_QNN_TENSOR_APP_WRITE, 2, DIMS(4, 5));
  const int32_t c = tensor(g, "c", EG_HTP_QNN_TENSOR_APP_WRITE, 2, DIMS(3, 5));
  const int32_t o = T4(g, "o", EG_HTP_QNN_TENSOR_NATIVE, 2, 3, 4, 5);
  const int32_t ac[2] = {a, c}, ab[2] = {a, b};
  expect_error(add_op(g, "add", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, 2, ac, o, 0, NULL), EG_ERR_INVALID,
               "op add (ElementWiseAdd): in[0] a [2, 3, 4, 5] and in[1] c [3, 5]", "broadcast", NULL);
  EG_CHECK(add_op(g, "add", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, 2, ab, o, 0, NULL) == EG_OK);
  const int32_t gt = T4(g, "gt", EG_HTP_QNN_TENSOR_NATIVE, 2, 3, 4, 5);
  expect_error(add_op(g, "gt", EG_HTP_QNN_OP_ELEMENT_WISE_GREATER, 2, ab, gt, 0, NULL), EG_ERR_INVALID,
               "op gt (ElementWiseGreater): out[0] gt (float32)", "bool8", NULL);
  const uint32_t d4[4] = {2, 3, 4, 5};
  const eg_htp_qnn_tensor_desc md = {.name = "mask", .type = EG_HTP_QNN_TENSOR_NATIVE,
                                 .dtype = EG_HTP_QNN_DTYPE_BOOL_8, .rank = 4, .dims = d4, .key = -1};
  int32_t mask;
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &md, &mask) == EG_OK);
  EG_CHECK(add_op(g, "gt2", EG_HTP_QNN_OP_ELEMENT_WISE_GREATER, 2, ab, mask, 0, NULL) == EG_OK);
  /* GreaterEqual and LessEqual: comparisons too, BOOL_8 out */
  const int32_t le = T4(g, "le", EG_HTP_QNN_TENSOR_NATIVE, 2, 3, 4, 5);
  expect_error(add_op(g, "le", EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, 2, ab, le, 0, NULL),
               EG_ERR_INVALID, "op le (ElementWiseLessEqual): out[0] le (float32)", "bool8", NULL);
  expect_error(add_op(g, "ge", EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, 2, ab, le, 0, NULL),
               EG_ERR_INVALID, "op ge (ElementWiseGreaterEqual): out[0] le (float32)", "bool8",
               NULL);
  const eg_htp_qnn_tensor_desc mle = {.name = "mask_le", .type = EG_HTP_QNN_TENSOR_NATIVE,
                                  .dtype = EG_HTP_QNN_DTYPE_BOOL_8, .rank = 4, .dims = d4, .key = -1};
  const eg_htp_qnn_tensor_desc mge = {.name = "mask_ge", .type = EG_HTP_QNN_TENSOR_NATIVE,
                                  .dtype = EG_HTP_QNN_DTYPE_BOOL_8, .rank = 4, .dims = d4, .key = -1};
  int32_t mask_le, mask_ge;
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &mle, &mask_le) == EG_OK &&
           eg_htp_qnn_graph_add_tensor(g, &mge, &mask_ge) == EG_OK);
  EG_CHECK(add_op(g, "le2", EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, 2, ab, mask_le, 0, NULL) == EG_OK);
  EG_CHECK(add_op(g, "ge2", EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, 2, ab, mask_ge, 0, NULL) ==
           EG_OK);
  EG_CHECK(eg_htp_qnn_op_from_name("ElementWiseLessEqual") == EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL &&
           eg_htp_qnn_op_from_name("ElementWiseGreaterEqual") == EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL);
  const int32_t sel = T4(g, "sel", EG_HTP_QNN_TENSOR_APP_READ, 2, 3, 4, 5);
  const int32_t bad_sel[3] = {o, a, b}, good_sel[3] = {mask, a, b};
  expect_error(add_op(g, "sel", EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, 3, bad_sel, sel, 0, NULL),
               EG_ERR_INVALID, "op sel (ElementWiseSelect): in[0] condition o (float32)", "bool8", NULL);
  EG_CHECK(add_op(g, "sel", EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, 3, good_sel, sel, 0, NULL) == EG_OK);
  /* ReluMinMax, LogSoftmax, Reshape, Concat, FullyConnected, MatMul, norms */
  const int32_t r = T4(g, "r", EG_HTP_QNN_TENSOR_NATIVE, 2, 3, 4, 5);
  eg_htp_qnn_param mm[2] = {eg_htp_qnn_param_f32("min_value", 6.0f), eg_htp_qnn_param_f32("max_value", 0.0f)};
  expect_error(add_op(g, "clip", EG_HTP_QNN_OP_RELU_MIN_MAX, 1, &o, r, 2, mm), EG_ERR_INVALID,
               "op clip (ReluMinMax): params min_value 6, max_value 0", "<=", NULL);
  expect_error(add_op(g, "clip", EG_HTP_QNN_OP_RELU_MIN_MAX, 1, &o, r, 1, mm), EG_ERR_INVALID,
               "op clip (ReluMinMax): param max_value: missing", NULL, NULL);
  const int32_t ls = T4(g, "ls", EG_HTP_QNN_TENSOR_NATIVE, 2, 3, 4, 5);
  const eg_htp_qnn_param axis = eg_htp_qnn_param_u32("axis", 4);
  expect_error(add_op(g, "ls", EG_HTP_QNN_OP_LOG_SOFTMAX, 1, &o, ls, 1, &axis), EG_ERR_INVALID,
               "op ls (LogSoftmax): param axis (4)", "< rank 4", NULL);
  const int32_t rs = tensor(g, "rs", EG_HTP_QNN_TENSOR_NATIVE, 2, DIMS(6, 21));
  expect_error(add_op(g, "rs", EG_HTP_QNN_OP_RESHAPE, 1, &o, rs, 0, NULL), EG_ERR_INVALID,
               "op rs (Reshape): out[0] rs (126 elements, in[0] has 120)", NULL, NULL);
  const int32_t cat = T4(g, "cat", EG_HTP_QNN_TENSOR_NATIVE, 2, 3, 4, 10);
  const int32_t cin[2] = {o, b};
  expect_error(add_op(g, "cat", EG_HTP_QNN_OP_CONCAT, 2, cin, cat, 0, NULL), EG_ERR_INVALID,
               "op cat (Concat): in[1] b (dims [4, 5]", "except along axis 3", NULL);
  const int32_t cin2[2] = {o, a};
  EG_CHECK(add_op(g, "cat", EG_HTP_QNN_OP_CONCAT, 2, cin2, cat, 0, NULL) == EG_OK);
  const int32_t fw = tensor(g, "fw", EG_HTP_QNN_TENSOR_STATIC, 2, DIMS(7, 9));
  const int32_t fo = tensor(g, "fo", EG_HTP_QNN_TENSOR_NATIVE, 2, DIMS(40, 7));
  const int32_t fin[2] = {o, fw};
  expect_error(add_op(g, "fc", EG_HTP_QNN_OP_FULLY_CONNECTED, 2, fin, fo, 0, NULL), EG_ERR_INVALID,
               "op fc (FullyConnected): in[0] o (120 elements, last dim 5) and weights [7, 9]",
               "rows of 9", NULL);
  const int32_t mo = T4(g, "mo", EG_HTP_QNN_TENSOR_NATIVE, 2, 3, 4, 4);
  const int32_t min_[2] = {o, o};
  expect_error(add_op(g, "mm", EG_HTP_QNN_OP_MAT_MUL, 2, min_, mo, 0, NULL), EG_ERR_INVALID,
               "op mm (MatMul): inner dims (in[0] gives 5, in[1] gives 4)", NULL, NULL);
  const eg_htp_qnn_param t1 = eg_htp_qnn_param_bool("transpose_in1", true);
  EG_CHECK_MSG(add_op(g, "mm", EG_HTP_QNN_OP_MAT_MUL, 2, min_, mo, 1, &t1) == EG_OK, "%s",
               eg_last_error());
  const int32_t gn = T4(g, "gn", EG_HTP_QNN_TENSOR_NATIVE, 2, 3, 4, 5);
  const eg_htp_qnn_param grp = eg_htp_qnn_param_u32("group", 2);
  expect_error(add_op(g, "gn", EG_HTP_QNN_OP_GROUP_NORM, 1, &o, gn, 1, &grp), EG_ERR_INVALID,
               "op gn (GroupNorm): param group (2, 5 channels)", "divide", NULL);
  const eg_htp_qnn_param mode = eg_htp_qnn_param_u32("mode", 3);
  expect_error(add_op(g, "gn", EG_HTP_QNN_OP_INSTANCE_NORM, 1, &o, gn, 1, &mode), EG_ERR_INVALID,
               "op gn (InstanceNorm): param mode (3)", "MU_SIGMA", NULL);
  const int32_t bnw = tensor(g, "bnw", EG_HTP_QNN_TENSOR_STATIC, 1, DIMS(4));
  const int32_t bn_in[2] = {o, bnw};
  expect_error(add_op(g, "bn", EG_HTP_QNN_OP_BATCHNORM, 2, bn_in, gn, 0, NULL), EG_ERR_INVALID,
               "op bn (Batchnorm): in[1] weights bnw (dims [4])", "[5]", NULL);
  eg_htp_qnn_graph_destroy(g);
}

static void test_dump(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("dump", &g) == EG_OK);
  const int32_t w = T4(g, "w", EG_HTP_QNN_TENSOR_STATIC, 3, 3, 2, 5);
  const int32_t wt = T4(g, "wt", EG_HTP_QNN_TENSOR_APP_READ, 3, 3, 5, 2);
  const eg_htp_qnn_param perm = eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(4), DIMS(0, 1, 3, 2));
  EG_CHECK(add_op(g, "to_hwoi", EG_HTP_QNN_OP_TRANSPOSE, 1, &w, wt, 1, &perm) == EG_OK);
  char buf[2048] = {0};
  FILE *f = fmemopen(buf, sizeof buf - 1, "w");
  eg_htp_qnn_graph_dump(g, f);
  fclose(f);
  EG_CHECK_MSG(strstr(buf, "qnn graph dump: 2 tensors, 1 ops"), "%s", buf);
  EG_CHECK_MSG(strstr(buf, "%0 w: STATIC float32 [3, 3, 2, 5] (360 bytes)"), "%s", buf);
  EG_CHECK_MSG(strstr(buf, "op 0 to_hwoi Transpose (w) -> (wt) perm=[0, 1, 3, 2]"), "%s", buf);
  eg_htp_qnn_graph_destroy(g);
}

int main(void) {
  EG_RUN(test_op_names);
  EG_RUN(test_tensor_validation);
  EG_RUN(test_shared_static_by_key);
  EG_RUN(test_conv2d_rules);
  EG_RUN(test_topological_order);
  EG_RUN(test_transpose_conv2d_rules);
  EG_RUN(test_strided_slice_rules);
  EG_RUN(test_pad_rules);
  EG_RUN(test_pool_and_reduce_rules);
  EG_RUN(test_elementwise_and_misc_rules);
  EG_RUN(test_dump);
  return eg_test_summary();
}
