/* test_kernels_activation.c — the activation kernels (src/kernels/activation_f32.h) against
 * double-precision references, including the saturated and boundary inputs, and the strided
 * copy (src/kernels/strided_copy.h) — which also expands broadcast backward operands and
 * carries every op of the tensor family — against a naive index walk. */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eg_test.h"
#include "kernels/activation_f32.h"
#include "kernels/strided_copy.h"

#define N_ACT 64

/* Random values in [-8, 8) followed by the special inputs every activation must survive. */
static void act_inputs(float *x, unsigned seed) {
  static const float special[] = {-1e30f, -1e4f, -100.0f, -88.7f, -20.0f, -6.0f, -1.0f, -0.0f,
                                  0.0f,   1.0f,  6.0f,    20.0f,  88.7f,  100.0f, 1e4f, 1e30f};
  const int ns = (int)(sizeof special / sizeof special[0]);
  eg_test_fill(x, N_ACT - ns, seed);
  for (int i = 0; i < N_ACT - ns; i++) x[i] *= 8.0f;
  memcpy(x + N_ACT - ns, special, sizeof special);
}

static double sigmoid_ref(double x) {
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

/* Each output against its own magnitude (relative), with a small absolute floor; no NaN. */
static void check_close(const float *got, const double *want, long n, const char *what) {
  for (long i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]);
    EG_CHECK_MSG(!isnan(got[i]) && d <= 2e-6 * fabs(want[i]) + 1e-7, "%s[%ld]: %.9g vs %.9g",
                 what, i, (double)got[i], want[i]);
  }
}

static void test_sigmoid_tanh_silu(void) {
  float x[N_ACT], y[N_ACT];
  double want[N_ACT];
  act_inputs(x, 1);
  eg_sigmoid_f32(N_ACT, x, y);
  for (int i = 0; i < N_ACT; i++) want[i] = sigmoid_ref(x[i]);
  check_close(y, want, N_ACT, "sigmoid");
  eg_tanh_f32(N_ACT, x, y);
  for (int i = 0; i < N_ACT; i++) want[i] = tanh((double)x[i]);
  check_close(y, want, N_ACT, "tanh");
  eg_silu_f32(N_ACT, x, y);
  for (int i = 0; i < N_ACT; i++) want[i] = x[i] * sigmoid_ref(x[i]);
  check_close(y, want, N_ACT, "silu");
}

/* sigmoid as ATen computes it in float: 1 / (1 + exp(-x)), where exp(-x) beyond FLT_MAX is
 * inf and the result 0 (x < -88.72), although the true value is a denormal. */
static double sigmoid_aten(double x) {
  double e = exp(-x);
  return e > FLT_MAX ? 0.0 : 1.0 / (1.0 + e);
}

/* A dense sweep over the whole float range that matters (saturation, denormal results, tiny
 * |x| where tanh's polynomial branch runs): relative error within a few ulp of double. */
static void test_sweep_accuracy(void) {
  enum { N = 4096 };
  static float x[N], y[N];
  for (int i = 0; i < N / 2; i++) x[i] = -105.0f + 210.0f * (float)i / (N / 2);
  for (int i = N / 2; i < N; i++) { /* +-1e-8 .. +-2, geometric */
    float m = 1e-8f * powf(2e8f, (float)(i - N / 2) / (N / 4));
    x[i] = (i & 1) ? -m : m;
  }
  double worst[3] = {0, 0, 0};
  eg_sigmoid_f32(N, x, y);
  for (int i = 0; i < N; i++) {
    double w = sigmoid_aten(x[i]), d = fabs(y[i] - w) / fmax(fabs(w), FLT_MIN);
    if (d > worst[0]) worst[0] = d;
  }
  eg_tanh_f32(N, x, y);
  for (int i = 0; i < N; i++) {
    double w = tanh((double)x[i]), d = fabs(y[i] - w) / fmax(fabs(w), FLT_MIN);
    if (d > worst[1]) worst[1] = d;
  }
  eg_silu_f32(N, x, y);
  for (int i = 0; i < N; i++) {
    double w = x[i] * sigmoid_aten(x[i]), d = fabs(y[i] - w) / fmax(fabs(w), FLT_MIN);
    if (d > worst[2]) worst[2] = d;
  }
  EG_CHECK_MSG(worst[0] < 1e-6, "sigmoid: worst relative error %g", worst[0]);
  EG_CHECK_MSG(worst[1] < 1e-6, "tanh: worst relative error %g", worst[1]);
  EG_CHECK_MSG(worst[2] < 1e-6, "silu: worst relative error %g", worst[2]);
}

/* IEEE special inputs give what ATen's formulas give. */
static void test_special_values(void) {
  const float x[] = {INFINITY, -INFINITY, NAN, -0.0f};
  float y[4];
  eg_sigmoid_f32(4, x, y);
  EG_CHECK(y[0] == 1.0f && y[1] == 0.0f && isnan(y[2]) && y[3] == 0.5f);
  eg_tanh_f32(4, x, y);
  EG_CHECK(y[0] == 1.0f && y[1] == -1.0f && isnan(y[2]) && y[3] == 0.0f && signbit(y[3]));
  eg_silu_f32(4, x, y);
  EG_CHECK(y[0] == INFINITY && isnan(y[1]) && isnan(y[2]) && y[3] == 0.0f);
  const float g[] = {1, 1, 1, 1};
  eg_silu_backward_f32(4, g, x, y);
  EG_CHECK(isnan(y[0]) && isnan(y[1]) && isnan(y[2]) && y[3] == 0.5f);
}

static void test_backwards(void) {
  float x[N_ACT], gy[N_ACT], y[N_ACT], gx[N_ACT];
  double want[N_ACT];
  act_inputs(x, 2);
  eg_test_fill(gy, N_ACT, 3);
  eg_sigmoid_f32(N_ACT, x, y);
  eg_sigmoid_backward_f32(N_ACT, gy, y, gx);
  for (int i = 0; i < N_ACT; i++) {
    double s = sigmoid_ref(x[i]);
    want[i] = gy[i] * s * (1 - s);
  }
  check_close(gx, want, N_ACT, "sigmoid_backward");
  eg_tanh_f32(N_ACT, x, y);
  eg_tanh_backward_f32(N_ACT, gy, y, gx);
  for (int i = 0; i < N_ACT; i++) {
    double t = tanh((double)x[i]);
    want[i] = gy[i] * (1 - t * t);
  }
  check_close(gx, want, N_ACT, "tanh_backward");
  eg_silu_backward_f32(N_ACT, gy, x, gx);
  for (int i = 0; i < N_ACT; i++) {
    double s = sigmoid_ref(x[i]);
    want[i] = gy[i] * s * (1 + x[i] * (1 - s));
  }
  /* silu_backward's (1 + x(1-s)) cancels near x = -1.28; compare with an absolute floor */
  for (int i = 0; i < N_ACT; i++) {
    double d = fabs((double)gx[i] - want[i]);
    EG_CHECK_MSG(d <= 1e-5 * fabs(want[i]) + 1e-6, "silu_backward[%d]: %.9g vs %.9g (x=%g)", i,
                 (double)gx[i], want[i], (double)x[i]);
  }
}

static void test_hardtanh(void) {
  const float x[] = {-7.0f, -6.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 6.0f, 7.0f, NAN};
  const int n = (int)(sizeof x / sizeof x[0]);
  float y[10], gy[10], gx[10];
  for (int i = 0; i < n; i++) gy[i] = (float)(i + 1);
  eg_hardtanh_f32(n, x, -1.0f, 1.0f, y);
  const float want[] = {-1, -1, -1, -0.5f, 0, 0.5f, 1, 1, 1};
  for (int i = 0; i < n - 1; i++) EG_CHECK_MSG(y[i] == want[i], "hardtanh[%d] = %g", i, y[i]);
  EG_CHECK(isnan(y[n - 1])); /* NaN propagates, as ATen's clamp */
  /* ReLU6 gradient: zero at and beyond both bounds, gy strictly inside, gy for NaN input */
  eg_hardtanh_backward_f32(n, gy, x, 0.0f, 6.0f, gx);
  const float gwant[] = {0, 0, 0, 0, 0, 6, 7, 0, 0, 10};
  for (int i = 0; i < n; i++)
    EG_CHECK_MSG(gx[i] == gwant[i], "hardtanh_backward[%d] = %g", i, gx[i]);
  /* min above max: every finite input gives max */
  eg_hardtanh_f32(n - 1, x, 1.0f, -1.0f, y);
  for (int i = 0; i < n - 1; i++) EG_CHECK(y[i] == -1.0f);
}

/* hardswish, hardsigmoid, gelu and their backwards against double references (kinks at +-3
 * exactly, as PyTorch 2.x), and NaN, which the op tests cannot feed: it propagates. */
static void test_hard_and_gelu(void) {
  float x[N_ACT], gy[N_ACT], y[N_ACT], gx[N_ACT];
  double want[N_ACT];
  act_inputs(x, 4);
  x[0] = -3.0f;
  x[1] = 3.0f;
  eg_test_fill(gy, N_ACT, 5);
  eg_hardswish_f32(N_ACT, x, y);
  for (int i = 0; i < N_ACT; i++) want[i] = x[i] * fmin(fmax(x[i] + 3.0, 0.0), 6.0) / 6.0;
  check_close(y, want, N_ACT, "hardswish");
  eg_hardsigmoid_f32(N_ACT, x, y);
  for (int i = 0; i < N_ACT; i++) want[i] = fmin(fmax(x[i] + 3.0, 0.0), 6.0) / 6.0;
  check_close(y, want, N_ACT, "hardsigmoid");
  eg_hardswish_backward_f32(N_ACT, gy, x, gx);
  for (int i = 0; i < N_ACT; i++)
    want[i] = x[i] <= -3 ? 0 : x[i] >= 3 ? gy[i] : gy[i] * (x[i] / 3.0 + 0.5);
  check_close(gx, want, N_ACT, "hardswish_backward");
  eg_hardsigmoid_backward_f32(N_ACT, gy, x, gx);
  for (int i = 0; i < N_ACT; i++) want[i] = x[i] > -3 && x[i] < 3 ? gy[i] / 6.0 : 0;
  check_close(gx, want, N_ACT, "hardsigmoid_backward");
  eg_gelu_f32(N_ACT, x, y);
  for (int i = 0; i < N_ACT; i++) want[i] = x[i] * 0.5 * erfc(-x[i] / sqrt(2.0));
  check_close(y, want, N_ACT, "gelu");
  eg_gelu_backward_f32(N_ACT, gy, x, gx);
  for (int i = 0; i < N_ACT; i++) {
    const double xd = x[i], pdf = exp(-xd * xd / 2) * 0.39894228040143268;
    want[i] = gy[i] * (0.5 * erfc(-xd / sqrt(2.0)) + xd * pdf);
  }
  check_close(gx, want, N_ACT, "gelu_backward");
  const float nan_x[] = {NAN}, one[] = {1.0f};
  eg_hardswish_f32(1, nan_x, y);
  EG_CHECK(isnan(y[0]));
  eg_hardsigmoid_f32(1, nan_x, y);
  EG_CHECK(isnan(y[0]));
  eg_gelu_f32(1, nan_x, y);
  EG_CHECK(isnan(y[0]));
  eg_hardswish_backward_f32(1, one, nan_x, gx);
  EG_CHECK(isnan(gx[0]));
  eg_hardsigmoid_backward_f32(1, one, nan_x, gx);
  EG_CHECK(gx[0] == 0.0f);
}

/* ---- strided copy ---- */

static int64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (int64_t)(*s >> 33);
}

/* The naive walk: every index of the box, offsets summed from scratch. */
static void copy_ref(char *dst, const char *src, const eg_strided_copy_params *p) {
  int64_t total = 1, idx[EG_COPY_MAX_RANK] = {0};
  for (int d = 0; d < p->rank; d++) total *= p->shape[d];
  for (int64_t k = 0; k < total; k++) {
    int64_t rem = k, so = 0, dof = 0;
    for (int d = p->rank - 1; d >= 0; d--) {
      idx[d] = rem % p->shape[d];
      rem /= p->shape[d];
      so += idx[d] * p->src_stride[d];
      dof += idx[d] * p->dst_stride[d];
    }
    memcpy(dst + dof * (int64_t)p->elsize, src + so * (int64_t)p->elsize, p->elsize);
  }
}

/* Random boxes read from a random strided/broadcast view and written to a permuted dense
 * destination, for each element size, compared byte for byte with the naive walk. */
static void test_strided_copy_random(void) {
  uint64_t seed = 42;
  static const size_t sizes[] = {1, 2, 4, 8, 3};
  for (int trial = 0; trial < 400; trial++) {
    eg_strided_copy_params p = {.rank = (int)(lcg(&seed) % 7),
                                .elsize = sizes[trial % 5]};
    int64_t src_span = 1, dst_span = 1;
    for (int d = p.rank - 1; d >= 0; d--) {
      p.shape[d] = 1 + lcg(&seed) % 4;
      if (lcg(&seed) % 5 == 0) p.shape[d] = 1;
    }
    /* destination: dense in a random dim order (distinct positions) */
    int order[EG_COPY_MAX_RANK];
    for (int d = 0; d < p.rank; d++) order[d] = d;
    for (int d = p.rank - 1; d > 0; d--) {
      int k = (int)(lcg(&seed) % (d + 1)), t = order[d];
      order[d] = order[k];
      order[k] = t;
    }
    for (int j = p.rank - 1; j >= 0; j--) {
      p.dst_stride[order[j]] = dst_span;
      dst_span *= p.shape[order[j]];
    }
    /* source: random stride multiples, some broadcast (0) */
    for (int d = p.rank - 1; d >= 0; d--) {
      int64_t kind = lcg(&seed) % 4;
      p.src_stride[d] = kind == 0 ? 0 : src_span * (kind == 3 ? 2 : 1);
      src_span += (p.shape[d] - 1) * p.src_stride[d];
    }
    size_t sbytes = (size_t)src_span * p.elsize, dbytes = (size_t)dst_span * p.elsize;
    unsigned char *src = malloc(sbytes), *got = malloc(dbytes), *want = malloc(dbytes);
    for (size_t i = 0; i < sbytes; i++) src[i] = (unsigned char)lcg(&seed);
    memset(got, 0xAB, dbytes);
    memset(want, 0xAB, dbytes);
    eg_strided_copy(got, src, &p);
    copy_ref((char *)want, (const char *)src, &p);
    EG_CHECK_MSG(memcmp(got, want, dbytes) == 0, "trial %d (rank %d, elsize %zu) differs", trial,
                 p.rank, p.elsize);
    free(src);
    free(got);
    free(want);
  }
}

/* A copy large enough to take the parallel path: a column slice with step 3 of a big matrix,
 * and the repeat view [r0, s0, r1, s1] of a [2, 3] tensor. */
static void test_strided_copy_large_and_repeat(void) {
  const int64_t rows = 1 << 12, cols = 300;
  float *a = malloc(sizeof(float) * (size_t)(rows * cols));
  float *got = malloc(sizeof(float) * (size_t)(rows * 100));
  eg_test_fill(a, (long)(rows * cols), 7);
  eg_strided_copy_params p = {.rank = 2, .elsize = 4, .shape = {rows, 100},
                              .dst_stride = {100, 1}, .src_stride = {cols, 3}};
  eg_strided_copy(got, a + 1, &p);
  int bad = 0;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < 100; j++) bad += got[i * 100 + j] != a[i * cols + 1 + 3 * j];
  EG_CHECK_MSG(bad == 0, "%d elements of the step-3 column slice differ", bad);
  free(a);
  free(got);

  const int64_t x[6] = {0, 1, 2, 3, 4, 5};
  int64_t out[4 * 9];
  /* x [2, 3] repeated by [2, 3] -> [4, 9]: out[k*2+i][l*3+j] = x[i][j] */
  eg_strided_copy_params r = {.rank = 4, .elsize = 8, .shape = {2, 2, 3, 3},
                              .dst_stride = {18, 9, 3, 1}, .src_stride = {0, 3, 0, 1}};
  eg_strided_copy(out, x, &r);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 9; j++)
      EG_CHECK_MSG(out[i * 9 + j] == x[(i % 2) * 3 + j % 3], "repeat [%d, %d] = %lld", i, j,
                   (long long)out[i * 9 + j]);
}

static void test_strided_copy_empty_and_scalar(void) {
  float src = 3.5f, dst = 0.0f;
  eg_strided_copy_params p = {.rank = 0, .elsize = 4};
  eg_strided_copy(&dst, &src, &p);
  EG_CHECK(dst == 3.5f);
  eg_strided_copy_params e = {.rank = 2, .elsize = 4, .shape = {3, 0}, .dst_stride = {0, 1},
                              .src_stride = {0, 1}};
  eg_strided_copy(NULL, NULL, &e); /* an empty box touches nothing */
}

int main(void) {
  EG_RUN(test_sigmoid_tanh_silu);
  EG_RUN(test_sweep_accuracy);
  EG_RUN(test_special_values);
  EG_RUN(test_backwards);
  EG_RUN(test_hardtanh);
  EG_RUN(test_hard_and_gelu);
  EG_RUN(test_strided_copy_random);
  EG_RUN(test_strided_copy_large_and_repeat);
  EG_RUN(test_strided_copy_empty_and_scalar);
  return eg_test_summary();
}
