/* test_kernels_conv_threads.c — the NCHW convolution kernels on a team of threads: calls big
 * enough to run in one parallel region of their own (conv_im2col.h, Threading) checked against
 * the naive reference of conv_ref.h at 1 and 2 OpenMP threads. A test of its own, apart from
 * test_kernels_convolution's sweeps, so that under qemu (make check-aarch64) each has its own
 * timeout. */
#include "kernels/conv_im2col.h"
#include "kernels/convolution_nchw_f32.h"

#include <omp.h>

#include "conv_ref.h"
#include "eg_test.h"

/* y (with bias), gx, gw and gb of one case at `threads` OpenMP threads, in `out` (y, gx, gw, gb
 * one after another: y_numel + x_numel + w_numel + c_out floats, pre-filled with NaN). */
static void run_at(const eg_conv2d_params *p, const tensors *t, int threads, float *out) {
  const bool mask[3] = {true, true, true};
  float *y = out, *gx = y + y_numel(p), *gw = gx + x_numel(p), *gb = gw + w_numel(p);
  void *fs = alloc_scratch(eg_convolution_nchw_f32_scratch(p));
  void *bs = alloc_scratch(eg_convolution_backward_nchw_f32_scratch(p, mask));
  const int caller = omp_get_max_threads();
  omp_set_num_threads(threads);
  eg_convolution_nchw_f32(p, t->x, t->w, t->bias, y, fs);
  eg_convolution_backward_nchw_f32(p, mask, t->gy, t->x, t->w, gx, gw, gb, bs);
  omp_set_num_threads(caller);
  free(fs);
  free(bs);
}

/* Calls big enough to run in one region of their own (conv_im2col.h, Threading), on each path
 * that splits its GEMMs over a team: im2col + GEMM on batched images (forward, gx by the flip,
 * gw with the transposed GEMM), stride 2 (gx by GEMM + col2im), one pointwise image per GEMM
 * (gw untransposed), groups, Winograd and row bands (forward, gx, gw). At 1 and 2 threads each
 * output must match the reference (a share left out or written twice shows). y, gx and gb must
 * also be bit-identical at both counts (no GEMM splits K, and the shares were seen to take the
 * whole call's OpenBLAS kernels); gw is not compared: OpenBLAS may run a share of its GEMM by
 * its small-matrix kernels where the whole GEMM was too big for them (by M*N*K), another
 * rounding. */
static spec same_padded(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t k,
                        int64_t stride, int64_t groups) {
  return (spec){.n = n, .c_in = c_in, .h = h, .w = w, .c_out = c_out, .kh = k, .kw = k,
                .sh = stride, .sw = stride, .ph = k / 2, .pw = k / 2, .dh = 1, .dw = 1,
                .groups = groups};
}

static void test_threads_agree(void) {
  const spec cases[] = {
      same_padded(4, 32, 8, 8, 48, 3, 1, 1),   same_padded(2, 24, 20, 19, 48, 3, 2, 1),
      same_padded(2, 16, 40, 40, 40, 1, 1, 1), same_padded(4, 32, 8, 9, 32, 3, 1, 2),
      same_padded(2, 32, 14, 14, 32, 3, 1, 1), same_padded(2, 8, 32, 31, 16, 3, 1, 1),
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    eg_conv2d_params p;
    EG_CHECK(params_of(&cases[i], &p));
    char desc[256];
    describe(&p, desc, sizeof desc);
    const int64_t macs = p.n * p.h_out * p.w_out * p.c_out * (p.c_in / p.groups) * p.k_h * p.k_w;
    omp_set_num_threads(2);
    EG_CHECK_MSG(eg_conv_team_worth(macs), "%s: too small to run in a team", desc);
    const long ny = y_numel(&p), nx = x_numel(&p), nw = w_numel(&p), all = ny + nx + nw + p.c_out;
    tensors t = tensors_new(&p, 700u + 4u * (unsigned)i);
    tap *taps;
    const long nt = ref_taps(&p, &taps);
    ref_forward(&p, taps, nt, t.x, t.w, t.bias, t.y_ref);
    ref_backward(&p, taps, nt, t.gy, t.x, t.w, t.gx_ref, t.gw_ref, t.gb_ref);
    float *got[2] = {alloc_nan(all), alloc_nan(all)};
    for (int k = 0; k < 2; k++) {
      run_at(&p, &t, k + 1, got[k]);
      check_close(got[k], t.y_ref, ny, k ? "y, 2 threads" : "y, 1 thread", desc);
      check_close(got[k] + ny, t.gx_ref, nx, k ? "gx, 2 threads" : "gx, 1 thread", desc);
      check_close(got[k] + ny + nx, t.gw_ref, nw, k ? "gw, 2 threads" : "gw, 1 thread", desc);
      check_close(got[k] + ny + nx + nw, t.gb_ref, (long)p.c_out, k ? "gb, 2 threads" : "gb",
                  desc);
    }
    static const char *const names[4] = {"y", "gx", "gw", "gb"};
    const long at[5] = {0, ny, ny + nx, ny + nx + nw, all};
    for (int o = 0; o < 4; o++) {
      const size_t bytes = sizeof(float) * (size_t)(at[o + 1] - at[o]);
      if (o != 2) /* gw: see above */
        EG_CHECK_MSG(memcmp(got[0] + at[o], got[1] + at[o], bytes) == 0,
                     "%s at 2 threads is not bit-identical to 1 thread; %s", names[o], desc);
    }
    free(got[0]);
    free(got[1]);
    free(taps);
    tensors_free(&t);
  }
}

int main(void) {
  EG_RUN(test_threads_agree);
  return eg_test_summary();
}
