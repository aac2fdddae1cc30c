/* bench_conv_kernels.c — GFLOP/s of eg_convolution_nchw_f32 (forward), and of
 * eg_convolution_backward_nchw_f32 for gx only (dgrad) and gw only (wgrad), on the shapes of
 * bench/dgrad_shapes.md plus two depthwise ones. Not a test.
 * FLOPs = 2*N*Cout*Ho*Wo*(Cin/groups)*kH*kW.
 * Threads: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS. Arguments, if any: run only the shapes whose
 * name starts with one of them. Build, e.g.:
 *   gcc -std=c11 -O2 -fopenmp -Isrc bench/bench_conv_kernels.c src/kernels/convolution_nchw_f32.c \
 *       src/kernels/convolution_backward_nchw_f32.c -lopenblas -o /tmp/bench_conv */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "kernels/convolution_nchw_f32.h"

typedef struct shape {
  const char *name;
  int64_t n, c_in, h, c_out, k, stride, pad, groups;
} shape;

static const shape shapes[] = {
    {"r18-l1", 8, 64, 56, 64, 3, 1, 1, 1},      {"r18-l2-ds", 8, 64, 56, 128, 3, 2, 1, 1},
    {"r18-l2", 8, 128, 28, 128, 3, 1, 1, 1},    {"r18-l3", 8, 256, 14, 256, 3, 1, 1, 1},
    {"r18-l4", 8, 512, 7, 512, 3, 1, 1, 1},     {"pw-1x1", 8, 32, 112, 64, 1, 1, 0, 1},
    {"stem-7x7", 1, 3, 224, 64, 7, 2, 3, 1},    {"dw-3x3", 8, 128, 56, 128, 3, 1, 1, 128},
    {"dw-3x3-s2", 8, 128, 56, 128, 3, 2, 1, 128},
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct buffers {
  float *x, *w, *y, *gx, *gw;
  void *scratch;
} buffers;

enum { FORWARD, DGRAD, WGRAD };

static void run_once(const eg_conv2d_params *p, const buffers *b, int what) {
  const bool mask[3] = {what == DGRAD, what == WGRAD, false};
  if (what == FORWARD)
    eg_convolution_nchw_f32(p, b->x, b->w, NULL, b->y, b->scratch);
  else
    eg_convolution_backward_nchw_f32(p, mask, b->y, b->x, b->w, b->gx, b->gw, NULL, b->scratch);
}

/* Seconds per call: one warm-up, then repeat for at least 0.3 s; the best of three rounds. */
static double time_call(const eg_conv2d_params *p, const buffers *b, int what) {
  run_once(p, b, what);
  double best = 1e30;
  for (int round = 0; round < 3; round++) {
    int reps = 0;
    const double t0 = now();
    double t = t0;
    while (t - t0 < 0.3 || reps < 2) {
      run_once(p, b, what);
      reps++;
      t = now();
    }
    if ((t - t0) / reps < best) best = (t - t0) / reps;
  }
  return best;
}

static bool selected(const char *name, int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strncmp(name, argv[i], strlen(argv[i])) == 0) return true;
  return argc <= 1;
}

static float *filled(size_t n) {
  float *f = malloc(sizeof(float) * n);
  for (size_t i = 0; i < n; i++) f[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
  return f;
}

int main(int argc, char **argv) {
#ifdef OPENBLAS_THREAD
  static const char *const modes[] = {"sequential", "pthreads", "OpenMP"};
  const int mode = openblas_get_parallel();
  printf("OpenBLAS (%s build): %s\n", mode >= 0 && mode <= 2 ? modes[mode] : "?",
         openblas_get_config());
#endif
  printf("%-10s %9s %9s %9s   (GFLOP/s; scratch MiB fwd/bwd)\n", "shape", "forward", "dgrad",
         "wgrad");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const shape *s = &shapes[i];
    if (!selected(s->name, argc, argv)) continue;
    const int64_t ho = (s->h + 2 * s->pad - s->k) / s->stride + 1;
    eg_conv2d_params p = {.n = s->n, .c_in = s->c_in, .h_in = s->h, .w_in = s->h,
                          .c_out = s->c_out, .h_out = ho, .w_out = ho, .k_h = s->k, .k_w = s->k,
                          .stride = {s->stride, s->stride}, .padding = {s->pad, s->pad},
                          .dilation = {1, 1}, .groups = s->groups};
    const bool mask_all[3] = {true, true, false};
    const size_t fwd_bytes = eg_convolution_nchw_f32_scratch(&p);
    const size_t bwd_bytes = eg_convolution_backward_nchw_f32_scratch(&p, mask_all);
    const size_t nx = (size_t)(s->n * s->c_in * s->h * s->h);
    const size_t nw = (size_t)(s->c_out * s->c_in / p.groups * s->k * s->k);
    buffers b = {.x = filled(nx), .w = filled(nw), .y = filled((size_t)(s->n * s->c_out * ho * ho)),
                 .gx = filled(nx), .gw = filled(nw),
                 .scratch = malloc(fwd_bytes > bwd_bytes ? fwd_bytes : bwd_bytes)};
    const double flops =
        2.0 * (double)(s->n * s->c_out * ho * ho * s->c_in / p.groups * s->k * s->k);
    double g[3];
    for (int what = 0; what < 3; what++) g[what] = flops / time_call(&p, &b, what) * 1e-9;
    printf("%-10s %9.1f %9.1f %9.1f   (%.1f / %.1f)\n", s->name, g[0], g[1], g[2],
           (double)fwd_bytes / (1 << 20), (double)bwd_bytes / (1 << 20));
    free(b.x);
    free(b.w);
    free(b.y);
    free(b.gx);
    free(b.gw);
    free(b.scratch);
  }
  return 0;
}
