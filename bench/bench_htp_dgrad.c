/* bench_htp_dgrad.c — GFLOP/s of the NPU (htp) path for a conv input gradient: the executor
 * running Transpose(W_hwio, perm [0,1,3,2]) + TransposeConv2d(grad_y, W_hwoi) on the shapes of
 * bench/dgrad_shapes.md. Not a test.
 *
 * FLOPs = 2*N*Cout*Ho*Wo*Cin*kH*kW (forward conv's Cin/Cout). Each shape is timed after one
 * warm-up as the best of 3 rounds of >= 0.3 s of eg_htp_qnn_executor_execute calls. The weight is a
 * STATIC tensor of the graph, so the executor plan the layout pass makes (as a compiled program
 * has it: backends/htp/compile/layout_pass.h) skips its Transpose, the TransposeConv2d reading the
 * HWIO weight as it is, and the executor transforms the constant filter at create when the
 * TransposeConv2d algorithm reads it transformed (Winograd, 3x3 stride 1; COL2IM's gathered
 * filter); the timed execute runs the TransposeConv2d only; executor creation is not timed.
 * GFLOP/s use the nominal FLOPs whatever the algorithm (Winograd F(2x2, 3x3) does 2.25x fewer
 * multiplies). A reference sgemm (1024^3) is timed first so numbers from a noisy machine can be
 * judged.
 *
 * Threads: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS; EG_BENCH_CPUTIME=1 times CPU time instead
 * of wall time (one thread on a busy machine). Arguments: [shape-name-prefix] [algo [pieces]]
 * where algo (auto|flip|phase|col2im|winograd) forces the TransposeConv2d algorithm and pieces
 * (1 or the thread count; default as planned) the pieces, in a kernel-level run of the kernel
 * alone (executor bypassed; weight transposed and, for Winograd, packed once before timing) to
 * compare them; there EG_BENCH_CHUNK_KIB overrides params.chunk_bytes. Build: the bench_htp_dgrad
 * CMake target (make bench runs it beside PyTorch through bench/bench_dgrad.py). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 199309L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "backends/htp/executor.h"
#include "backends/htp/compile/layout_pass.h"
#include "kernels/parallel_nhwc_f32.h"
#include "kernels/transpose_conv2d_nhwc_f32.h"
#include "kernels/transpose_f32.h"
#include "util/error.h"

typedef struct shape {
  const char *name;
  int64_t n, c_in, h, c_out, k, stride, pad;
} shape;

static const shape shapes[] = {
    {"r18-l1", 8, 64, 56, 64, 3, 1, 1},   {"r18-l2-ds", 8, 64, 56, 128, 3, 2, 1},
    {"r18-l2", 8, 128, 28, 128, 3, 1, 1}, {"r18-l3", 8, 256, 14, 256, 3, 1, 1},
    {"r18-l4", 8, 512, 7, 512, 3, 1, 1},  {"pw-1x1", 8, 32, 112, 64, 1, 1, 0},
    {"stem-7x7", 1, 3, 224, 64, 7, 2, 3},
};

/* Wall time, or with EG_BENCH_CPUTIME=1 the process's CPU time: on a shared machine that
 * excludes time other processes took from us (meaningful for one thread only). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now(void) {
  struct timespec t;
  clock_gettime(bench_clock, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *filled(size_t n, unsigned seed) {
  float *f = malloc(sizeof(float) * n);
  for (size_t i = 0; i < n; i++) f[i] = (float)(((i + seed) * 2654435761u) % 1000) * 1e-3f - 0.5f;
  return f;
}

/* What one timed call runs. */
typedef struct job {
  eg_htp_qnn_executor *ex;
  eg_htp_qnn_binding in[1], out[1];
  /* kernel-level (forced algorithm) */
  eg_transpose_conv2d_nhwc_params tp;
  int64_t wdims[4];
  const float *w, *gy;
  float *wt, *gx;
  float *packed; /* the filter as the algorithm reads it, or NULL */
  void *scratch;
} job;

static void run_once(const job *j) {
  if (j->ex) {
    if (eg_htp_qnn_executor_execute(j->ex, j->in, 1, j->out, 1) != EG_OK) {
      fprintf(stderr, "%s\n", eg_last_error());
      exit(1);
    }
    return;
  }
  eg_transpose_conv2d_nhwc_f32(&j->tp, j->gy, j->packed ? j->packed : j->wt, NULL, j->gx,
                               j->scratch);
}

/* Seconds per call: one warm-up, then the best of three rounds of >= 0.3 s. */
static double time_job(const job *j) {
  run_once(j);
  double best = 1e30;
  for (int round = 0; round < 3; round++) {
    int reps = 0;
    const double t0 = now();
    double t = t0;
    while (t - t0 < 0.3 || reps < 2) {
      run_once(j);
      reps++;
      t = now();
    }
    if ((t - t0) / reps < best) best = (t - t0) / reps;
  }
  return best;
}

/* The dgrad graph: W_hwio (STATIC) -> Transpose -> W_hwoi (NATIVE) -> TransposeConv2d. */
static eg_status build_graph(const shape *s, const float *w, eg_htp_qnn_graph **out, int32_t *gy_id,
                             int32_t *gx_id) {
  const int64_t ho = (s->h + 2 * s->pad - s->k) / s->stride + 1;
  const uint32_t op = (uint32_t)((s->h + 2 * s->pad - s->k) % s->stride);
  const uint32_t k = (uint32_t)s->k, ci = (uint32_t)s->c_in, co = (uint32_t)s->c_out;
  const uint32_t wd[4] = {k, k, ci, co}, wtd[4] = {k, k, co, ci};
  const uint32_t gyd[4] = {(uint32_t)s->n, (uint32_t)ho, (uint32_t)ho, co};
  const uint32_t gxd[4] = {(uint32_t)s->n, (uint32_t)s->h, (uint32_t)s->h, ci};
  eg_htp_qnn_graph *g;
  EG_TRY(eg_htp_qnn_graph_create(s->name, &g));
  *out = g;
  int32_t tw, twt;
  const eg_htp_qnn_tensor_desc dw = {.name = "w_hwio", .type = EG_HTP_QNN_TENSOR_STATIC,
                                 .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 4, .dims = wd,
                                 .data = w, .nbytes = sizeof(float) * k * k * ci * co, .key = 0};
  EG_TRY(eg_htp_qnn_graph_add_tensor(g, &dw, &tw));
  const eg_htp_qnn_tensor_desc dwt = {.name = "w_hwoi", .type = EG_HTP_QNN_TENSOR_NATIVE,
                                  .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 4, .dims = wtd, .key = -1};
  EG_TRY(eg_htp_qnn_graph_add_tensor(g, &dwt, &twt));
  const eg_htp_qnn_tensor_desc dgy = {.name = "grad_y", .type = EG_HTP_QNN_TENSOR_APP_WRITE,
                                  .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 4, .dims = gyd, .key = -1};
  EG_TRY(eg_htp_qnn_graph_add_tensor(g, &dgy, gy_id));
  const eg_htp_qnn_tensor_desc dgx = {.name = "grad_x", .type = EG_HTP_QNN_TENSOR_APP_READ,
                                  .dtype = EG_HTP_QNN_DTYPE_FLOAT_32, .rank = 4, .dims = gxd, .key = -1};
  EG_TRY(eg_htp_qnn_graph_add_tensor(g, &dgx, gx_id));
  const eg_htp_qnn_param perm = eg_htp_qnn_param_u32_tensor("perm", 1, (const uint32_t[]){4},
                                                    (const uint32_t[]){0, 1, 3, 2});
  const eg_htp_qnn_op_desc t = {.name = "weight_to_hwoi", .type = EG_HTP_QNN_OP_TRANSPOSE, .n_inputs = 1,
                            .inputs = &tw, .n_outputs = 1, .outputs = &twt, .n_params = 1,
                            .params = &perm};
  EG_TRY(eg_htp_qnn_graph_add_op(g, &t, NULL));
  const uint32_t st = (uint32_t)s->stride, p = (uint32_t)s->pad;
  const eg_htp_qnn_param tp[3] = {
      eg_htp_qnn_param_u32_tensor("stride", 1, (const uint32_t[]){2}, (const uint32_t[]){st, st}),
      eg_htp_qnn_param_u32_tensor("pad_amount", 2, (const uint32_t[]){2, 2},
                              (const uint32_t[]){p, p, p, p}),
      eg_htp_qnn_param_u32_tensor("output_padding", 1, (const uint32_t[]){2},
                              (const uint32_t[]){op, op})};
  const int32_t in[2] = {*gy_id, twt};
  const eg_htp_qnn_op_desc tc = {.name = "transpose_conv", .type = EG_HTP_QNN_OP_TRANSPOSE_CONV_2D,
                             .n_inputs = 2, .inputs = in, .n_outputs = 1, .outputs = gx_id,
                             .n_params = 3, .params = tp};
  return eg_htp_qnn_graph_add_op(g, &tc, NULL);
}

static double sgemm_reference(void) {
  enum { D = 1024 };
  float *a = filled(D * D, 1), *b = filled(D * D, 2), *c = filled(D * D, 3);
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    const double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, D, D, D, 1.0f, a, D, b, D, 0.0f, c, D);
    if (now() - t0 < best) best = now() - t0;
  }
  free(a), free(b), free(c);
  return 2.0 * D * D * D / best * 1e-9;
}

static const char *const algo_names[] = {"auto", "flip", "phase", "col2im", "winograd"};

static int parse_algo(const char *s) {
  for (int i = 0; i < 5; i++)
    if (strcmp(s, algo_names[i]) == 0) return i;
  return -1;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : "";
  const int algo = argc > 2 ? parse_algo(argv[2]) : -1;
  const int pieces = argc > 3 ? atoi(argv[3]) : 0;
  const char *cpu = getenv("EG_BENCH_CPUTIME");
  if (cpu && strcmp(cpu, "1") == 0) bench_clock = CLOCK_PROCESS_CPUTIME_ID;
  const char *omp = getenv("OMP_NUM_THREADS"), *ob = getenv("OPENBLAS_NUM_THREADS");
  printf("threads: OMP_NUM_THREADS=%s OPENBLAS_NUM_THREADS=%s; sgemm 1024^3: %.1f GFLOP/s\n",
         omp ? omp : "-", ob ? ob : "-", sgemm_reference());
  printf("%-10s %10s %10s %10s %6s\n", "shape", "ms", "GFLOP/s", "algo", "pieces");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const shape *s = &shapes[i];
    if (strncmp(s->name, only, strlen(only)) != 0) continue;
    const int64_t ho = (s->h + 2 * s->pad - s->k) / s->stride + 1;
    const size_t nw = (size_t)(s->k * s->k * s->c_in * s->c_out);
    const size_t ngy = (size_t)(s->n * ho * ho * s->c_out), ngx = (size_t)(s->n * s->h * s->h * s->c_in);
    float *w = filled(nw, 7), *gy = filled(ngy, 8), *gx = malloc(sizeof(float) * ngx);
    float *wt = malloc(sizeof(float) * nw);
    eg_htp_qnn_graph *g = NULL;
    int32_t gy_id, gx_id;
    job j = {0};
    eg_htp_exec_plan xp = {0}; /* as compiled: the weight's Transpose skipped (layout_pass.h) */
    if (build_graph(s, w, &g, &gy_id, &gx_id) != EG_OK || eg_htp_layout_pass(g, &xp) != EG_OK ||
        eg_htp_qnn_executor_create_plan(g, &xp, EG_PRECISION_FP32, false, &j.ex) != EG_OK) {
      fprintf(stderr, "%s: %s\n", s->name, eg_last_error());
      return 1;
    }
    j.in[0] = (eg_htp_qnn_binding){gy_id, gy, sizeof(float) * ngy};
    j.out[0] = (eg_htp_qnn_binding){gx_id, gx, sizeof(float) * ngx};
    j.tp = (eg_transpose_conv2d_nhwc_params){.n = s->n, .h_in = ho, .w_in = ho, .c_in = s->c_out,
                                    .h_out = s->h, .w_out = s->h, .c_out = s->c_in, .k_h = s->k,
                                    .k_w = s->k, .stride = {s->stride, s->stride},
                                    .pad = {s->pad, s->pad}, .groups = 1,
                                    .algo = algo < 0 ? EG_TRANSPOSE_CONV2D_AUTO : (eg_transpose_conv2d_algo)algo,
                                    .chunk_bytes = eg_nhwc_chunk_bytes()};
    if (algo >= 0) { /* kernel-level, forced algorithm */
      eg_htp_qnn_executor_destroy(j.ex);
      j.ex = NULL;
      j.w = w, j.gy = gy, j.wt = wt, j.gx = gx;
      j.wdims[0] = j.wdims[1] = s->k, j.wdims[2] = s->c_in, j.wdims[3] = s->c_out;
      eg_transpose_f32(4, j.wdims, (const uint32_t[]){0, 1, 3, 2}, w, wt);
      j.tp.prepacked = true; /* a constant weight, as in the executor */
      const char *kib = getenv("EG_BENCH_CHUNK_KIB");
      if (kib) j.tp.chunk_bytes = (int64_t)atoi(kib) << 10;
      if (pieces > 0) { /* j.tp.algo still holds the request */
        j.tp.parts = pieces;
        j.tp.algo =
            eg_transpose_conv2d_nhwc_f32_pick(&j.tp, pieces > 1 ? 1 : eg_nhwc_blas_threads());
      } else {
        eg_transpose_conv2d_nhwc_f32_plan(&j.tp, eg_nhwc_blas_threads());
      }
      const size_t bytes = eg_transpose_conv2d_nhwc_f32_scratch(&j.tp);
      j.scratch = aligned_alloc(64, (bytes + 127) / 64 * 64);
      const size_t np = eg_transpose_conv2d_nhwc_f32_packed_floats(&j.tp);
      if (np) {
        j.packed = aligned_alloc(64, (sizeof(float) * np + 127) / 64 * 64);
        eg_transpose_conv2d_nhwc_f32_pack(&j.tp, wt, j.packed);
      }
    } else { /* as the executor planned it: the weight is constant */
      j.tp.prepacked = true;
      eg_transpose_conv2d_nhwc_f32_plan(&j.tp, eg_nhwc_blas_threads());
    }
    const double sec = time_job(&j);
    const double flops = 2.0 * (double)(s->n * s->c_out * ho * ho * s->c_in * s->k * s->k);
    printf("%-10s %10.3f %10.1f %10s %6lld\n", s->name, sec * 1e3, flops / sec * 1e-9,
           algo_names[eg_transpose_conv2d_nhwc_f32_algo(&j.tp)], (long long)j.tp.parts);
    fflush(stdout);
    eg_htp_qnn_executor_destroy(j.ex);
    eg_htp_exec_plan_free(&xp);
    eg_htp_qnn_graph_destroy(g);
    free(w), free(gy), free(gx), free(wt), free(j.scratch), free(j.packed);
  }
  return 0;
}
