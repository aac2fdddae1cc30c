/* test_htp_kernels_threads.c — the htp executor's NHWC kernels on two OpenMP threads, each
 * against the same kernel on one thread, bit for bit: Conv2d's row bands run side by side (each
 * band whole on one thread with a band matrix of its own, eg_conv2d_nhwc_params.threads),
 * Winograd's 16 products side by side, and Sigmoid split over the team. test_htp_kernels checks
 * the one-thread results against naive references; this test is apart from it so that make
 * check-aarch64, whose qemu-user cannot start a second thread (Makefile, AARCH64_SKIP), still
 * runs those. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "eg_test.h"
#include "kernels/activation_f32.h"
#include "kernels/conv2d_nhwc_f32.h"
#include "kernels/elementwise_nhwc_f32.h"

/* Exactly `bytes` (at least 1), NaN-filled, so that an overrun shows under ASan. */
static void *scratch_buf(size_t bytes) {
  float *p = malloc(bytes ? bytes : 1);
  for (size_t i = 0; i < bytes / sizeof(float); i++) p[i] = NAN;
  return p;
}

/* y of one Conv2d at `threads` OpenMP threads, planned for `plan` (eg_conv2d_nhwc_params.threads). */
static float *conv_at(eg_conv2d_nhwc_params p, int plan, int threads, const float *x,
                      const float *f, const float *bias, long ny) {
  p.threads = plan;
  float *y = eg_test_nan_buf(ny);
  void *s = scratch_buf(eg_conv2d_nhwc_f32_scratch(&p));
  const int caller = omp_get_max_threads();
  omp_set_num_threads(threads);
  eg_conv2d_nhwc_f32(&p, x, f, bias, y, s);
  omp_set_num_threads(caller);
  free(s);
  return y;
}

typedef struct conv_case {
  long n, cin, h, w, cout, k, s, pad, d;
  bool winograd;
} conv_case;

/* Row-band shapes (bands of a 32x32 ResNet's layers, dilated, strided, several bands per image)
 * and a Winograd layer whose 16 products are each below eg_nhwc_sgemm's split. */
static void test_conv_threads(void) {
  static const conv_case cases[] = {
      {2, 32, 40, 40, 8, 3, 1, 1, 1, false},  /* row bands */
      {1, 64, 64, 64, 4, 3, 1, 1, 1, false},  /* several row bands an image */
      {1, 16, 40, 40, 8, 3, 1, 2, 2, false},  /* dilated */
      {1, 8, 40, 40, 8, 3, 2, 1, 1, false},   /* strided */
      {8, 16, 32, 32, 16, 3, 1, 1, 1, false}, /* a 32x32 ResNet's 16-channel layer */
      {2, 16, 32, 32, 16, 3, 1, 1, 1, true},  /* Winograd: 512 tiles x 16 x 16 a product */
      {8, 16, 32, 32, 16, 3, 1, 1, 1, true},
  };
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const conv_case *c = &cases[i];
    const long ho = (c->h + 2 * c->pad - c->d * (c->k - 1) - 1) / c->s + 1;
    const long wo = (c->w + 2 * c->pad - c->d * (c->k - 1) - 1) / c->s + 1;
    const long ny = c->n * ho * wo * c->cout;
    float *x = eg_test_rand_buf(c->n * c->h * c->w * c->cin, 300 + i);
    float *f = eg_test_rand_buf(c->k * c->k * c->cin * c->cout, 400 + i);
    float *bias = eg_test_rand_buf(c->cout, 500 + i);
    for (int flip = 0; flip < (c->winograd ? 1 : 2); flip++) /* Winograd: unflipped only */
      for (int small = 0; small < 2; small++)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
          const eg_conv2d_nhwc_params p = {
              .n = c->n, .h_in = c->h, .w_in = c->w, .c_in = c->cin, .h_out = ho,
              .w_out = wo, .c_out = c->cout, .k_h = c->k, .k_w = c->k, .stride = {c->s, c->s},
              .dilation = {c->d, c->d}, .pad = {c->pad, c->pad}, .groups = 1, .flip = flip,
              .chunk_bytes = small ? 65536 : 0, .winograd = c->winograd};
          if (c->winograd && !eg_conv2d_nhwc_f32_takes_winograd(&p)) {
            EG_CHECK_MSG(false, "case %u: Winograd does not take it", i);
            continue;
          }
          const float *b = with_bias ? bias : NULL;
          float *one = conv_at(p, 1, 1, x, f, b, ny), *two = conv_at(p, 2, 2, x, f, b, ny);
          EG_CHECK_MSG(memcmp(one, two, sizeof(float) * (size_t)ny) == 0,
                       "conv case %u flip %d chunk %s bias %d: 2 threads differ from 1", i, flip,
                       small ? "64K" : "default", with_bias);
          free(one), free(two);
        }
    free(x), free(f), free(bias);
  }
}

/* Sigmoid over a tensor large enough to be split across 2 threads (each share its own loop):
 * bit for bit the CPU path's sigmoid (both are kernels/sigmoid_f32.h's), within 2e-7 relative
 * of 1 / (1 + e^-x) in double, 0 and 1 far out, NaN kept; every element written. */
static void test_sigmoid_threads(void) {
  enum { N = (1 << 18) + 37 };
  float *x = eg_test_rand_buf(N, 801), *y = eg_test_nan_buf(N), *ref = eg_test_nan_buf(N);
  for (int i = 0; i < N; i++) x[i] *= 40.0f;
  const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 88.8f, -88.8f, 1e30f, -1e30f,
                           -103.0f, 1e-30f};
  for (int i = 0; i < (int)(sizeof special / sizeof special[0]); i++) x[i * 1000] = special[i];
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  eg_unary_nhwc_f32(EG_UNARY_SIGMOID, N, x, y, 0.0f, 0.0f);
  omp_set_num_threads(threads);
  eg_sigmoid_f32(N, x, ref);
  EG_CHECK_MSG(memcmp(y, ref, sizeof(float) * N) == 0, "sigmoid: the CPU path's, bit for bit");
  bool ok = true;
  for (int i = 1; i < N; i++) {
    const double want = 1.0 / (1.0 + exp(-(double)x[i]));
    ok &= fabs(y[i] - want) <= 2e-7 * want + 1e-38; /* 0 where e^x is below FLT_MIN */
  }
  EG_CHECK_MSG(ok && isnan(y[0]), "sigmoid: close to 1 / (1 + e^-x), NaN kept");
  EG_CHECK(y[1000] == 1.0f && y[2000] == 0.0f && y[3000] == 0.5f && y[4000] == 0.5f &&
           y[5000] == 1.0f && y[6000] == 0.0f && y[7000] == 1.0f && y[8000] == 0.0f &&
           y[9000] == 0.0f && y[10000] == 0.5f);
  free(x), free(y), free(ref);
}

int main(void) {
  EG_RUN(test_conv_threads);
  EG_RUN(test_sigmoid_threads);
  return eg_test_summary();
}
