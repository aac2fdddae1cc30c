/* test_htp_tconv_pieces.c — TransposeConv2d cut into pieces run on several OpenMP threads
 * (params.parts > 1: image ranges, or output row bands when there are fewer images than pieces),
 * and the executor's planning of it and constant folding of the weight Transpose.
 *
 * Every algorithm (AUTO, FLIP, PHASE, COL2IM, WINOGRAD; the last with its filter transformed per
 * call and packed beforehand) is run in 1, 2, 3 and 4 pieces on shapes that give
 * image pieces, bands (n = 1, n = 3), bands whose x rows start at 0 or stop at h_in, kernels
 * shorter than the stride, crops, groups and more bands than output rows, against a naive
 * scatter reference. The parallel region asks for exactly `parts` threads, so the pieces run
 * side by side whatever OMP_NUM_THREADS the test runs with. The executor test sets two threads
 * for OpenMP and OpenBLAS before create, as OMP_NUM_THREADS=2 would, and checks the dgrad graph
 * (STATIC HWIO weight -> Transpose -> TransposeConv2d) against the reference, twice. */
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include <cblas.h>

#include "backends/htp/executor.h"
#include "eg_test.h"
#include "eg_test_exec.h"
#include "kernels/parallel_nhwc_f32.h"
#include "kernels/transpose_conv2d_nhwc_f32.h"
#include "util/error.h"

#define DIMS(...) ((const uint32_t[]){__VA_ARGS__})

static void *scratch_buf(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 127) / 64 * 64);
  memset(p, 0xff, (bytes + 127) / 64 * 64); /* NaN patterns: the kernel must overwrite */
  return p;
}

typedef struct tcase {
  long n, cin, h, w, cout, kh, kw, sh, sw, pt, pl, ho, wo, groups;
} tcase;

/* Naive QNN TransposeConv2d, filter [kh, kw, cin, cout/groups] (double accumulation). */
static void ref_tconv(const tcase *c, const float *x, const float *f, const float *bias,
                      float *y) {
  const long cig = c->cin / c->groups, cog = c->cout / c->groups;
  const long ny = c->n * c->ho * c->wo * c->cout;
  double *acc = calloc((size_t)ny, sizeof(double));
  for (long b = 0; b < c->n; b++)
    for (long i = 0; i < c->h; i++)
      for (long j = 0; j < c->w; j++)
        for (long ci = 0; ci < c->cin; ci++) {
          const double xv = x[((b * c->h + i) * c->w + j) * c->cin + ci];
          for (long a = 0; a < c->kh; a++)
            for (long bb = 0; bb < c->kw; bb++) {
              const long yy = i * c->sh - c->pt + a, xx = j * c->sw - c->pl + bb;
              if (yy < 0 || yy >= c->ho || xx < 0 || xx >= c->wo) continue;
              for (long co = 0; co < cog; co++)
                acc[((b * c->ho + yy) * c->wo + xx) * c->cout + ci / cig * cog + co] +=
                    xv * f[((a * c->kw + bb) * c->cin + ci) * cog + co];
            }
        }
  for (long r = 0; r < ny; r++) y[r] = (float)(acc[r] + (bias ? bias[r % c->cout] : 0.0));
  free(acc);
}

static const char *const algo_names[] = {"auto", "flip", "phase", "col2im", "winograd"};

/* p (groups 1) run again with filter_oi on f's [kh, kw, c_out, c_in] form (packed first when
 * p.prepacked): the same bits as y (p on f) where the algorithm gathers the filter (COL2IM,
 * WINOGRAD), close to ref otherwise (FLIP and PHASE sum per tap). */
static void check_filter_oi(const eg_transpose_conv2d_nhwc_params *p, const float *x,
                            const float *f, const float *bias, const float *y, void *scratch,
                            const float *ref) {
  eg_transpose_conv2d_nhwc_params po = *p;
  po.filter_oi = true;
  const long taps = p->k_h * p->k_w, ci_n = p->c_in, co_n = p->c_out;
  const long ny = p->n * p->h_out * p->w_out * co_n;
  float *fo = eg_test_nan_buf(taps * ci_n * co_n), *yo = eg_test_nan_buf(ny), *packed = NULL;
  for (long t = 0; t < taps; t++)
    for (long ci = 0; ci < ci_n; ci++)
      for (long co = 0; co < co_n; co++)
        fo[(t * co_n + co) * ci_n + ci] = f[(t * ci_n + ci) * co_n + co];
  const size_t np = eg_transpose_conv2d_nhwc_f32_packed_floats(&po);
  if (po.prepacked && np) {
    packed = scratch_buf(sizeof(float) * np);
    eg_transpose_conv2d_nhwc_f32_pack(&po, fo, packed);
  }
  eg_transpose_conv2d_nhwc_f32(&po, x, packed ? packed : fo, bias, yo, scratch);
  const eg_transpose_conv2d_algo algo = eg_transpose_conv2d_nhwc_f32_algo(&po);
  EG_CHECK(algo == eg_transpose_conv2d_nhwc_f32_algo(p));
  if (algo == EG_TRANSPOSE_CONV2D_COL2IM || algo == EG_TRANSPOSE_CONV2D_WINOGRAD)
    EG_CHECK_MSG(!memcmp(yo, y, sizeof(float) * (size_t)ny), "c%ld ->%ld k%ldx%ld parts %lld "
                 "algo %s filter_oi: not bit-identical to the transposed filter's", ci_n, co_n,
                 (long)p->k_h, (long)p->k_w, (long long)p->parts, algo_names[algo]);
  else
    EG_CHECK_MSG(eg_test_allclose(yo, ref, ny, 1e-4, 1e-5) < 0, "c%ld ->%ld algo %s filter_oi",
                 ci_n, co_n, algo_names[algo]);
  free(fo), free(yo), free(packed);
}

static void check_case(const tcase *c, unsigned seed) {
  const long nx = c->n * c->h * c->w * c->cin, ny = c->n * c->ho * c->wo * c->cout;
  const long nf = c->kh * c->kw * c->cin * (c->cout / c->groups);
  float *x = eg_test_rand_buf(nx, seed), *f = eg_test_rand_buf(nf, seed + 1), *bias = eg_test_rand_buf(c->cout, seed + 2);
  float *ref = eg_test_nan_buf(ny), *ref_nb = eg_test_nan_buf(ny), *y = eg_test_nan_buf(ny);
  ref_tconv(c, x, f, bias, ref);
  ref_tconv(c, x, f, NULL, ref_nb);
  for (int64_t parts = 1; parts <= 4; parts++)
    for (int algo = EG_TRANSPOSE_CONV2D_AUTO; algo <= EG_TRANSPOSE_CONV2D_WINOGRAD; algo++)
      for (int variant = 0; variant < 4; variant++) { /* no bias; bias; bias, 64 KiB chunks;
                                                         bias, filter packed beforehand */
        eg_transpose_conv2d_nhwc_params p = {
            .n = c->n, .h_in = c->h, .w_in = c->w, .c_in = c->cin, .h_out = c->ho,
            .w_out = c->wo, .c_out = c->cout, .k_h = c->kh, .k_w = c->kw,
            .stride = {c->sh, c->sw}, .pad = {c->pt, c->pl}, .groups = c->groups,
            .algo = (eg_transpose_conv2d_algo)algo, .chunk_bytes = variant == 2 ? 65536 : 0,
            .parts = parts, .prepacked = variant == 3};
        p.algo = eg_transpose_conv2d_nhwc_f32_pick(&p, 1); /* each piece on one thread */
        void *scratch = scratch_buf(eg_transpose_conv2d_nhwc_f32_scratch(&p));
        const size_t np = eg_transpose_conv2d_nhwc_f32_packed_floats(&p);
        float *packed = NULL;
        if (p.prepacked && np) {
          packed = scratch_buf(sizeof(float) * np);
          eg_transpose_conv2d_nhwc_f32_pack(&p, f, packed);
        }
        for (long i = 0; i < ny; i++) y[i] = NAN;
        eg_transpose_conv2d_nhwc_f32(&p, x, packed ? packed : f, variant ? bias : NULL, y,
                                     scratch);
        free(packed);
        if (c->groups == 1) /* the forward weight untransposed: COL2IM, WINOGRAD the same bits */
          check_filter_oi(&p, x, f, variant ? bias : NULL, y, scratch, variant ? ref : ref_nb);
        const long bad = eg_test_allclose(y, variant ? ref : ref_nb, ny, 1e-4, 1e-5);
        EG_CHECK_MSG(bad < 0, "n%ld c%ld %ldx%ld ->%ld %ldx%ld k%ldx%ld s%ld,%ld p%ld,%ld g%ld "
                     "parts %lld algo %s bias %d chunk %lld: element %ld: %g vs %g", c->n,
                     c->cin, c->h, c->w, c->cout, c->ho, c->wo, c->kh, c->kw, c->sh, c->sw,
                     c->pt, c->pl, c->groups, (long long)parts, algo_names[p.algo], variant > 0,
                     (long long)p.chunk_bytes, bad, bad >= 0 ? y[bad] : 0.0,
                     bad >= 0 ? (variant ? ref : ref_nb)[bad] : 0.0);
        free(scratch);
      }
  free(x), free(f), free(bias), free(ref), free(ref_nb), free(y);
}

/* ho/wo as QNN computes them: s*(in-1) + k - pad_before - pad_after + output_padding. */
static long out_size(long in, long k, long s, long before, long after, long op) {
  return s * (in - 1) + k - before - after + op;
}

static void test_pieces_vs_naive(void) {
  /* n, cin, h, w, cout, k, s, pad before, pad after, output_padding, groups */
  static const long shapes[][11] = {
      {8, 16, 6, 6, 12, 3, 1, 1, 1, 0, 1},  /* image pieces (4+4, 3+3+2, 2+2+2+2) */
      {1, 16, 9, 7, 12, 3, 1, 1, 1, 0, 1},  /* bands of one image */
      {3, 8, 7, 8, 16, 3, 2, 1, 1, 1, 1},   /* 3 images in 2 or 4 pieces: bands; PHASE */
      {1, 32, 8, 8, 3, 7, 2, 3, 3, 1, 1},   /* stem-like: cout 3, bands */
      {1, 6, 5, 5, 20, 1, 1, 0, 0, 0, 1},   /* 1x1 */
      {1, 5, 4, 4, 20, 1, 1, 0, 0, 0, 1},   /* 1x1, 4 rows */
      {1, 5, 3, 4, 20, 1, 2, 0, 0, 1, 1},   /* kernel < stride: i0 lowered, empty phases */
      {2, 6, 4, 4, 8, 2, 3, 0, 0, 2, 1},    /* kernel < stride, 2 images */
      {1, 6, 10, 10, 6, 3, 1, 4, 4, 0, 1},  /* pads >= kernel: a crop */
      {1, 12, 5, 5, 18, 3, 1, 1, 1, 0, 3},  /* groups, stride 1, bands */
      {3, 12, 5, 4, 6, 3, 2, 1, 1, 1, 2},   /* groups, stride 2 */
      {1, 8, 1, 5, 4, 3, 1, 1, 1, 0, 1},    /* one output row: empty bands */
      {1, 8, 2, 2, 4, 4, 3, 2, 0, 2, 1},    /* asymmetric pads */
      {2, 40, 9, 6, 36, 3, 1, 1, 1, 0, 1},  /* WINOGRAD: odd rows and columns (edge tiles) */
      {1, 8, 39, 40, 8, 3, 1, 1, 1, 0, 1},  /* WINOGRAD: 400 tiles, 2 chunks of 64 KiB */
      {1, 4, 7, 7, 8, 3, 1, 0, 0, 0, 1},    /* WINOGRAD: pad 0 (P = 2) */
      {1, 4, 9, 8, 8, 3, 1, 3, 3, 0, 1},    /* WINOGRAD: pad 3 (P = -1, a crop) */
  };
  for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const long *v = shapes[i];
    const tcase c = {v[0], v[1], v[2], v[3], v[4], v[5], v[5], v[6], v[6], v[7], v[7],
                     out_size(v[2], v[5], v[6], v[7], v[8], v[9]),
                     out_size(v[3], v[5], v[6], v[7], v[8], v[9]), v[10]};
    EG_CHECK_MSG(c.ho >= 1 && c.wo >= 1, "case %u: empty output", i);
    if (c.ho >= 1 && c.wo >= 1) check_case(&c, 500 + 10 * i);
  }
}

/* _plan: pieces only with more than one thread, enough work and an sgemm that runs on its
 * caller's thread inside a parallel region; the algorithm is then the one-thread one. */
static void test_plan(void) {
  eg_transpose_conv2d_nhwc_params p = {.n = 8, .h_in = 56, .w_in = 56, .c_in = 64, .h_out = 56,
                              .w_out = 56, .c_out = 64, .k_h = 3, .k_w = 3, .stride = {1, 1},
                              .pad = {1, 1}, .groups = 1};
  eg_transpose_conv2d_nhwc_f32_plan(&p, 1);
  EG_CHECK(p.parts == 1 && p.algo == EG_TRANSPOSE_CONV2D_FLIP);
  p.algo = EG_TRANSPOSE_CONV2D_AUTO;
  eg_transpose_conv2d_nhwc_f32_plan(&p, 2);
  if (eg_nhwc_blas_nests())
    EG_CHECK(p.parts == 2 && p.algo == EG_TRANSPOSE_CONV2D_FLIP);
  else
    EG_CHECK(p.parts == 1 && p.algo == EG_TRANSPOSE_CONV2D_COL2IM);
  p = (eg_transpose_conv2d_nhwc_params){.n = 1, .h_in = 4, .w_in = 4, .c_in = 8, .h_out = 4, .w_out = 4,
                               .c_out = 8, .k_h = 3, .k_w = 3, .stride = {1, 1}, .pad = {1, 1},
                               .groups = 1};
  eg_transpose_conv2d_nhwc_f32_plan(&p, 2); /* too small to be worth a fork */
  EG_CHECK(p.parts == 1);
}

/* The dgrad graph on two threads: STATIC W_hwio -> Transpose [0,1,3,2] -> TransposeConv2d. */
static void run_dgrad_graph(long n, long cin, long h, long cout, long k, long s, long pad,
                            unsigned seed) {
  const long ho = (h + 2 * pad - k) / s + 1, op = (h + 2 * pad - k) % s;
  const long nw = k * k * cin * cout, ngy = n * ho * ho * cout, ngx = n * h * h * cin;
  float *w = eg_test_rand_buf(nw, seed), *gy = eg_test_rand_buf(ngy, seed + 1), *wt = eg_test_nan_buf(nw);
  float *gx = eg_test_nan_buf(ngx), *ref = eg_test_nan_buf(ngx);
  const uint32_t un = (uint32_t)n, uc = (uint32_t)cin, uh = (uint32_t)h, uo = (uint32_t)cout;
  const uint32_t uk = (uint32_t)k, uho = (uint32_t)ho, us = (uint32_t)s, up = (uint32_t)pad;
  eg_htp_qnn_graph *g = NULL;
  EG_CHECK(eg_htp_qnn_graph_create("dgrad2", &g) == EG_OK);
  int32_t tw = -1, twt = -1, tgy = -1, tgx = -1;
  const eg_htp_qnn_tensor_desc dw = {.name = "w_hwio", .type = EG_HTP_QNN_TENSOR_STATIC,
                                 .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 4,
                                 .dims = DIMS(uk, uk, uc, uo), .data = w,
                                 .nbytes = sizeof(float) * (size_t)nw, .key = EG_HTP_QNN_KEY_NONE};
  const eg_htp_qnn_tensor_desc dwt = {.name = "w_hwoi", .type = EG_HTP_QNN_TENSOR_NATIVE,
                                  .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 4,
                                  .dims = DIMS(uk, uk, uo, uc), .key = EG_HTP_QNN_KEY_NONE};
  const eg_htp_qnn_tensor_desc dgy = {.name = "grad_y", .type = EG_HTP_QNN_TENSOR_APP_WRITE,
                                  .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 4,
                                  .dims = DIMS(un, uho, uho, uo), .key = EG_HTP_QNN_KEY_NONE};
  const eg_htp_qnn_tensor_desc dgx = {.name = "grad_x", .type = EG_HTP_QNN_TENSOR_APP_READ,
                                  .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 4,
                                  .dims = DIMS(un, uh, uh, uc), .key = EG_HTP_QNN_KEY_NONE};
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &dw, &tw) == EG_OK);
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &dwt, &twt) == EG_OK);
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &dgy, &tgy) == EG_OK);
  EG_CHECK(eg_htp_qnn_graph_add_tensor(g, &dgx, &tgx) == EG_OK);
  const eg_htp_qnn_param perm = eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(4), DIMS(0, 1, 3, 2));
  const eg_htp_qnn_op_desc t = {.name = "weight_to_hwoi", .type = EG_HTP_QNN_OP_TRANSPOSE,
                            .n_inputs = 1, .inputs = &tw, .n_outputs = 1, .outputs = &twt,
                            .n_params = 1, .params = &perm};
  EG_CHECK(eg_htp_qnn_graph_add_op(g, &t, NULL) == EG_OK);
  const eg_htp_qnn_param tp[3] = {
      eg_htp_qnn_param_u32_tensor("stride", 1, DIMS(2), DIMS(us, us)),
      eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(2, 2), DIMS(up, up, up, up)),
      eg_htp_qnn_param_u32_tensor("output_padding", 1, DIMS(2), DIMS((uint32_t)op, (uint32_t)op))};
  const eg_htp_qnn_op_desc tc = {.name = "transpose_conv", .type = EG_HTP_QNN_OP_TRANSPOSE_CONV_2D,
                             .n_inputs = 2, .inputs = (const int32_t[]){tgy, twt},
                             .n_outputs = 1, .outputs = &tgx, .n_params = 3, .params = tp};
  EG_CHECK(eg_htp_qnn_graph_add_op(g, &tc, NULL) == EG_OK);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK, "%s", eg_last_error());
  if (ex) {
    eg_htp_qnn_executor_stats st;
    eg_htp_qnn_executor_get_stats(ex, &st);
    EG_CHECK_MSG(st.native_bytes == 0, "the folded weight is outside the arena (%zu bytes)",
                 st.native_bytes);
    const eg_htp_qnn_binding in = {tgy, gy, sizeof(float) * (size_t)ngy};
    const eg_htp_qnn_binding out = {tgx, gx, sizeof(float) * (size_t)ngx};
    /* reference: the transposed weight as a TransposeConv2d filter */
    for (long tap = 0; tap < k * k; tap++)
      for (long i = 0; i < cin; i++)
        for (long o = 0; o < cout; o++)
          wt[(tap * cout + o) * cin + i] = w[(tap * cin + i) * cout + o];
    const tcase c = {n, cout, ho, ho, cin, k, k, s, s, pad, pad, h, h, 1};
    ref_tconv(&c, gy, wt, NULL, ref);
    for (int rep = 0; rep < 2; rep++) { /* the folded weight serves every run */
      for (long i = 0; i < ngx; i++) gx[i] = NAN;
      EG_CHECK_MSG(eg_htp_qnn_executor_execute(ex, &in, 1, &out, 1) == EG_OK, "%s", eg_last_error());
      const long bad = eg_test_allclose(gx, ref, ngx, 1e-4, 1e-5);
      EG_CHECK_MSG(bad < 0, "dgrad n%ld c%ld %ld ->%ld k%ld s%ld p%ld run %d: element %ld", n,
                   cin, h, cout, k, s, pad, rep, bad);
    }
  }
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
  free(w), free(gy), free(wt), free(gx), free(ref);
}

static void test_executor_two_threads(void) {
  omp_set_num_threads(2);
  openblas_set_num_threads(2);
  EG_CHECK(eg_nhwc_blas_threads() == 2);
  run_dgrad_graph(4, 32, 16, 32, 3, 1, 1, 41);  /* image pieces */
  run_dgrad_graph(1, 16, 29, 64, 3, 2, 1, 42);  /* bands, PHASE */
  run_dgrad_graph(1, 3, 64, 64, 7, 2, 3, 43);   /* stem: bands, COL2IM */
  run_dgrad_graph(3, 32, 16, 32, 3, 1, 1, 44);  /* 3 images on 2 threads: bands */
  run_dgrad_graph(2, 4, 6, 8, 3, 1, 1, 45);     /* small: one piece */
}

int main(void) {
  EG_RUN(test_pieces_vs_naive);
  EG_RUN(test_plan);
  EG_RUN(test_executor_two_threads);
  return eg_test_summary();
}
