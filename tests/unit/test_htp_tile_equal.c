/* test_htp_tile_equal.c — QNN Tile and ElementWiseEqual: their kernels (tile_nhwc_f32,
 * equal_nhwc_i32) against naive references over random shapes, their graph rules (a multiple of
 * 0, a wrong output shape: one-line errors, the graph unchanged), and both ops through the
 * executor on INT_32 (nll_loss's one-hot mask: class indices against 0..C-1), where it refuses
 * a float Equal with a clear error. */
#include <stdint.h>

#include "backends/htp/executor.h"
#include "backends/htp/qnn_graph.h"
#include "eg_test.h"
#include "eg_test_exec.h"
#include "kernels/equal_nhwc_i32.h"
#include "kernels/tile_nhwc_f32.h"
#include "util/error.h"

#define DIMS(...) ((const uint32_t[]){__VA_ARGS__})

static uint32_t rng = 12345u;
static uint32_t next(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}

/* ---- kernels ---- */

/* y[i] = x[i % dims] per dim, by flat index arithmetic. */
static void ref_tile(int rank, const int64_t *dims, const int64_t *mult, const uint32_t *x,
                     uint32_t *y) {
  int64_t n = 1, out[8];
  for (int d = 0; d < rank; d++) n *= out[d] = dims[d] * mult[d];
  for (int64_t e = 0; e < n; e++) {
    int64_t rest = e, src = 0, stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
      const int64_t i = rest % out[d];
      rest /= out[d];
      src += (i % dims[d]) * stride;
      stride *= dims[d];
    }
    y[e] = x[src];
  }
}

/* Trials 200 to 299: ranks up to 3, dims up to 3 (often 1) and multiples up to 33, the doubling
 * copies' remainders and the merged dims of expand's broadcasts ([n, c, 1, 1] over a plane). */
static void test_tile_kernel(void) {
  for (int trial = 0; trial < 300; trial++) {
    const bool wide = trial >= 200;
    const int rank = 1 + (int)(next() % (wide ? 3 : 5));
    int64_t dims[8], mult[8], nx = 1, ny = 1;
    for (int d = 0; d < rank; d++) {
      dims[d] = 1 + next() % (wide ? 2 + next() % 2 : 4);
      mult[d] = 1 + next() % (wide ? 33 : 3);
      nx *= dims[d];
      ny *= dims[d] * mult[d];
    }
    uint32_t *x = malloc((size_t)nx * 4), *y = malloc((size_t)ny * 4), *r = malloc((size_t)ny * 4);
    for (int64_t i = 0; i < nx; i++) x[i] = next() | (next() << 24); /* any 4-byte pattern */
    for (int64_t i = 0; i < ny; i++) y[i] = 0xDEADBEEFu;
    eg_tile_nhwc_f32(rank, dims, mult, x, y);
    ref_tile(rank, dims, mult, x, r);
    EG_CHECK_MSG(memcmp(y, r, (size_t)ny * 4) == 0, "trial %d, rank %d", trial, rank);
    free(x);
    free(y);
    free(r);
  }
}

static void test_equal_kernel(void) {
  for (int trial = 0; trial < 200; trial++) {
    const int rank = (int)(next() % 5), rb = rank ? (int)(next() % (unsigned)(rank + 1)) : 0;
    int64_t da[8], db[8], na = 1, nb = 1;
    for (int d = 0; d < rank; d++) {
      da[d] = 1 + next() % 4;
      na *= da[d];
    }
    for (int d = 0; d < rb; d++) { /* b right-aligned: its dim is a's, or 1 (and a's may be 1) */
      const int64_t full = da[rank - rb + d];
      db[d] = next() % 3 == 0 ? 1 : full;
      if (full != 1 && db[d] != 1 && next() % 4 == 0) da[rank - rb + d] = 1;
    }
    na = 1;
    for (int d = 0; d < rank; d++) na *= da[d];
    for (int d = 0; d < rb; d++) nb *= db[d];
    const int ranks[2] = {rank, rb};
    const int64_t *dp[2] = {da, db};
    eg_ew_shape s;
    EG_CHECK(eg_ew_shape_init(&s, 2, ranks, dp));
    int64_t n = 1;
    for (int d = 0; d < s.rank; d++) n *= s.out[d];
    int32_t *a = malloc((size_t)na * 4), *b = malloc((size_t)nb * 4);
    uint8_t *y = malloc((size_t)n);
    for (int64_t i = 0; i < na; i++) a[i] = (int32_t)(next() % 3) - 1;
    for (int64_t i = 0; i < nb; i++) b[i] = (int32_t)(next() % 3) - 1;
    eg_equal_nhwc_i32(&s, a, b, y);
    bool ok = true;
    for (int64_t e = 0; e < n; e++) { /* the output index, then each operand's by broadcast */
      int64_t rest = e, ia = 0, ib = 0, sa = 1, sb = 1;
      for (int d = s.rank - 1; d >= 0; d--) {
        const int64_t i = rest % s.out[d];
        rest /= s.out[d];
        ia += (s.in[0][d] == 1 ? 0 : i) * sa;
        ib += (s.in[1][d] == 1 ? 0 : i) * sb;
        sa *= s.in[0][d];
        sb *= s.in[1][d];
      }
      ok &= y[e] == (a[ia] == b[ib]);
    }
    EG_CHECK_MSG(ok, "trial %d, ranks %d and %d", trial, rank, rb);
    free(a);
    free(b);
    free(y);
  }
}

/* ---- graph rules and the executor ---- */

static int32_t tensor(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_tensor_type type,
                      eg_htp_qnn_dtype dtype, int rank, const uint32_t *dims, const void *data) {
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  eg_htp_qnn_tensor_desc d = {.name = name, .type = type, .dtype = dtype, .rank = rank,
                          .dims = dims, .key = EG_HTP_QNN_KEY_NONE, .data = data,
                          .nbytes = data ? n * 4 : 0, .copy_data = data != NULL};
  int32_t id = -1;
  EG_CHECK_MSG(eg_htp_qnn_graph_add_tensor(g, &d, &id) == EG_OK, "%s", eg_last_error());
  return id;
}

static eg_status add_op(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_op type, int n_in,
                        const int32_t *in, int32_t out, int n_params, const eg_htp_qnn_param *p) {
  const eg_htp_qnn_op_desc d = {.name = name, .type = type, .n_inputs = n_in, .inputs = in,
                            .n_outputs = 1, .outputs = &out, .n_params = n_params, .params = p};
  return eg_htp_qnn_graph_add_op(g, &d, NULL);
}

static void expect_error(eg_status st, const char *frag1, const char *frag2) {
  const char *msg = eg_last_error();
  EG_CHECK_MSG(st == EG_ERR_INVALID, "status %d (%s)", (int)st, msg);
  EG_CHECK_MSG(strstr(msg, frag1) && strstr(msg, frag2), "message '%s' lacks '%s' / '%s'", msg,
               frag1, frag2);
  EG_CHECK_MSG(!strchr(msg, '\n'), "message '%s' spans lines", msg);
}

static void test_tile_rules(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("tile", &g) == EG_OK);
  const int32_t x = tensor(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, EG_HTP_QNN_DTYPE_FLOAT_32, 2,
                           DIMS(3, 1), NULL);
  const int32_t y = tensor(g, "y", EG_HTP_QNN_TENSOR_APP_READ, EG_HTP_QNN_DTYPE_FLOAT_32, 2,
                           DIMS(3, 4), NULL);
  const eg_htp_qnn_param zero = eg_htp_qnn_param_u32_tensor("multiples", 1, DIMS(2), DIMS(1, 0));
  expect_error(add_op(g, "t", EG_HTP_QNN_OP_TILE, 1, &x, y, 1, &zero), "op t (Tile): param multiples "
               "([1, 0]", "must be >= 1");
  const eg_htp_qnn_param three = eg_htp_qnn_param_u32_tensor("multiples", 1, DIMS(2), DIMS(1, 3));
  expect_error(add_op(g, "t", EG_HTP_QNN_OP_TILE, 1, &x, y, 1, &three), "out[0] y (dims [3, 4], "
               "rule gives [3, 3])", "rule");
  const eg_htp_qnn_param short_m = eg_htp_qnn_param_u32_tensor("multiples", 1, DIMS(1), DIMS(4));
  expect_error(add_op(g, "t", EG_HTP_QNN_OP_TILE, 1, &x, y, 1, &short_m), "param multiples",
               "must have shape [2]");
  EG_CHECK(eg_htp_qnn_graph_num_ops(g) == 0);
  const eg_htp_qnn_param four = eg_htp_qnn_param_u32_tensor("multiples", 1, DIMS(2), DIMS(1, 4));
  EG_CHECK_MSG(add_op(g, "t", EG_HTP_QNN_OP_TILE, 1, &x, y, 1, &four) == EG_OK, "%s",
               eg_last_error());
  EG_CHECK(eg_htp_qnn_graph_op(g, 0)->attrs.tile.multiples[1] == 4);
  eg_htp_qnn_graph_destroy(g);
}

/* target [3] INT_32 -> Reshape [3, 1] -> Tile [3, 2] (int32 moves) and Equal with the STATIC
 * classes [4] -> BOOL_8 [3, 4]: the one-hot rows of the targets. */
static void test_int32_through_executor(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("onehot", &g) == EG_OK);
  static const int32_t classes[4] = {0, 1, 2, 3};
  const int32_t t = tensor(g, "t", EG_HTP_QNN_TENSOR_APP_WRITE, EG_HTP_QNN_DTYPE_INT_32, 1, DIMS(3),
                           NULL);
  const int32_t col = tensor(g, "col", EG_HTP_QNN_TENSOR_NATIVE, EG_HTP_QNN_DTYPE_INT_32, 2,
                             DIMS(3, 1), NULL);
  const int32_t tiled = tensor(g, "tiled", EG_HTP_QNN_TENSOR_APP_READ, EG_HTP_QNN_DTYPE_INT_32, 2,
                               DIMS(3, 2), NULL);
  const int32_t c = tensor(g, "classes", EG_HTP_QNN_TENSOR_STATIC, EG_HTP_QNN_DTYPE_INT_32, 1, DIMS(4),
                           classes);
  const int32_t hit = tensor(g, "hit", EG_HTP_QNN_TENSOR_APP_READ, EG_HTP_QNN_DTYPE_BOOL_8, 2,
                             DIMS(3, 4), NULL);
  const eg_htp_qnn_param two = eg_htp_qnn_param_u32_tensor("multiples", 1, DIMS(2), DIMS(1, 2));
  EG_CHECK(add_op(g, "r", EG_HTP_QNN_OP_RESHAPE, 1, &t, col, 0, NULL) == EG_OK);
  EG_CHECK(add_op(g, "tile", EG_HTP_QNN_OP_TILE, 1, &col, tiled, 1, &two) == EG_OK);
  const int32_t eq[2] = {col, c};
  EG_CHECK_MSG(add_op(g, "eq", EG_HTP_QNN_OP_ELEMENT_WISE_EQUAL, 2, eq, hit, 0, NULL) == EG_OK, "%s",
               eg_last_error());
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK, "%s", eg_last_error());
  int32_t tv[3] = {2, -100, 0x7FFFFFFF}, tl[6];
  uint8_t h[12];
  const eg_htp_qnn_binding in = {t, tv, sizeof tv};
  const eg_htp_qnn_binding out[2] = {{tiled, tl, sizeof tl}, {hit, h, sizeof h}};
  EG_CHECK_MSG(ex && eg_htp_qnn_executor_execute(ex, &in, 1, out, 2) == EG_OK, "%s", eg_last_error());
  static const uint8_t want[12] = {0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  static const int32_t want_t[6] = {2, 2, -100, -100, 0x7FFFFFFF, 0x7FFFFFFF};
  EG_CHECK(memcmp(h, want, sizeof h) == 0);
  EG_CHECK(memcmp(tl, want_t, sizeof tl) == 0);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
}

/* QNN defines Equal on floats too; the executor runs the int32 form only and says so. */
static void test_float_equal_refused(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("feq", &g) == EG_OK);
  const int32_t a = tensor(g, "a", EG_HTP_QNN_TENSOR_APP_WRITE, EG_HTP_QNN_DTYPE_FLOAT_32, 1, DIMS(3),
                           NULL);
  const int32_t y = tensor(g, "y", EG_HTP_QNN_TENSOR_APP_READ, EG_HTP_QNN_DTYPE_BOOL_8, 1, DIMS(3), NULL);
  const int32_t in[2] = {a, a};
  EG_CHECK(add_op(g, "eq", EG_HTP_QNN_OP_ELEMENT_WISE_EQUAL, 2, in, y, 0, NULL) == EG_OK);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_ERR_UNSUPPORTED && ex == NULL);
  EG_CHECK_MSG(strstr(eg_last_error(), "op eq (ElementWiseEqual): tensor a is float32") &&
               strstr(eg_last_error(), "int32"), "%s", eg_last_error());
  eg_htp_qnn_graph_destroy(g);
}

int main(void) {
  EG_RUN(test_tile_kernel);
  EG_RUN(test_equal_kernel);
  EG_RUN(test_tile_rules);
  EG_RUN(test_int32_through_executor);
  EG_RUN(test_float_equal_refused);
  return eg_test_summary();
}
