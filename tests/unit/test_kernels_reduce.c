/* test_kernels_reduce.c — eg_sum_dense_* against a naive reference written here.
 *
 * The reference walks every input element by its multi-index, drops the reduced dims to find
 * its output element and adds in long double; it shares no code with the kernel (no grouping,
 * no runs, no threads). Cases enumerate every reduced-dim mask of several shapes (with 1s and
 * 0s in them), sizes that take each threaded path (full reduction in chunks, [R, K] column
 * blocks, outer kept groups), a long sum for accuracy, integer types with wrap-around, and the
 * same reduction at 1 and 2 threads for bit-identical results. Accumulators are pre-filled with
 * garbage and scratch is allocated at exactly the size asked for. */
#include "kernels/sum_dense.h"

#include <omp.h>
#include <stdint.h>

#include "eg_test.h"

static int64_t numel_of(const int64_t *shape, int rank) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  return n;
}

/* out[j] = sum of x over the reduced dims, j indexing the kept dims in C order. */
static void ref_sum(const float *x, int rank, const int64_t *shape, const bool *reduced,
                    long double *out) {
  int64_t out_n = 1;
  for (int d = 0; d < rank; d++)
    if (!reduced[d]) out_n *= shape[d];
  for (int64_t j = 0; j < out_n; j++) out[j] = 0;
  int64_t n = numel_of(shape, rank);
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, o = 0, ostride = 1;
    for (int d = rank - 1; d >= 0; d--) {
      int64_t idx = rem % shape[d];
      rem /= shape[d];
      if (!reduced[d]) {
        o += idx * ostride;
        ostride *= shape[d];
      }
    }
    out[o] += x[i];
  }
}

static void *scratch_for(const eg_sum_geom *g) {
  size_t s = eg_sum_dense_scratch(g);
  void *p = malloc(s ? s : 1);
  if (s) memset(p, 0xA5, s);
  return p;
}

/* One f32 case: returns the number of mismatches (printed). */
static int check_f32(int rank, const int64_t *shape, const bool *reduced, unsigned seed) {
  eg_sum_geom g;
  eg_sum_geom_init(&g, rank, shape, reduced);
  int64_t n = numel_of(shape, rank);
  float *x = malloc((size_t)(n ? n : 1) * sizeof(float));
  eg_test_fill(x, n, seed);
  long double *ref = malloc((size_t)(g.out_numel ? g.out_numel : 1) * sizeof(long double));
  double *acc = malloc((size_t)(g.out_numel ? g.out_numel : 1) * sizeof(double));
  for (int64_t j = 0; j < g.out_numel; j++) acc[j] = NAN;
  void *scratch = scratch_for(&g);
  ref_sum(x, rank, shape, reduced, ref);
  eg_sum_dense_f32(&g, x, acc, scratch);
  int bad = 0;
  for (int64_t j = 0; j < g.out_numel; j++) {
    double want = (double)ref[j];
    if (!(fabs(acc[j] - want) <= 1e-6 * (fabs(want) + 1))) {
      if (bad++ < 3) {
        char desc[256];
        int used = snprintf(desc, sizeof desc, "shape");
        for (int d = 0; d < rank; d++)
          used += snprintf(desc + used, sizeof desc - (size_t)used, " %lld%s",
                           (long long)shape[d], reduced[d] ? "r" : "");
        fprintf(stderr, "  %s: out[%lld] = %.17g, want %.17g\n", desc, (long long)j, acc[j],
                want);
      }
    }
  }
  free(x);
  free(ref);
  free(acc);
  free(scratch);
  return bad;
}

/* Every reduced-dim mask of each shape. */
static void test_all_masks(void) {
  static const int64_t shapes[][5] = {
      {0}, {7}, {3, 5}, {1, 6}, {4, 1}, {2, 3, 4}, {3, 1, 5}, {2, 3, 4, 5}, {5, 1, 1, 7},
      {2, 1, 3, 1, 4}, {2, 0, 3}, {0, 4}, {1, 1, 1},
  };
  static const int ranks[] = {0, 1, 2, 2, 2, 3, 3, 4, 4, 5, 3, 2, 3};
  for (size_t s = 0; s < sizeof ranks / sizeof ranks[0]; s++) {
    int rank = ranks[s];
    for (unsigned mask = 0; mask < (1u << rank); mask++) {
      bool reduced[5];
      for (int d = 0; d < rank; d++) reduced[d] = (mask >> d) & 1;
      EG_CHECK(check_f32(rank, shapes[s], reduced, (unsigned)(s * 32 + mask)) == 0);
    }
  }
}

/* Sizes big enough for each threaded path. */
static void test_threaded_paths(void) {
  const int64_t all[1] = {(1 << 20) + 37};
  const bool r1[1] = {true};
  EG_CHECK(check_f32(1, all, r1, 1) == 0);                /* full reduction, chunked */
  const int64_t rows[2] = {97, 4099};
  const bool r0[2] = {true, false};
  EG_CHECK(check_f32(2, rows, r0, 2) == 0);               /* [R, K]: column blocks */
  const int64_t nchw[4] = {8, 33, 17, 19};
  const bool bias[4] = {true, false, true, true};
  EG_CHECK(check_f32(4, nchw, bias, 3) == 0);             /* bias gradient: [R, K, R] */
  const bool spatial[4] = {false, false, true, true};
  EG_CHECK(check_f32(4, nchw, spatial, 4) == 0);          /* global pooling: [K, R] */
  const bool mid[4] = {false, true, false, true};
  EG_CHECK(check_f32(4, nchw, mid, 5) == 0);              /* [K, R, K, R] */
  const int64_t krk[3] = {300, 64, 5};
  const bool krk_r[3] = {false, true, false};
  EG_CHECK(check_f32(3, krk, krk_r, 6) == 0);             /* [K, R, K] */
}

/* A long sum of equal values. A plain float accumulator stalls at 2^21 here (25% off); the
 * kernel's float partials over short stretches, added in double, stay within 1e-6. */
static void test_accuracy(void) {
  const int64_t n = 1 << 24;
  float *x = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) x[i] = 0.1f;
  const int64_t shape[1] = {n};
  const bool reduced[1] = {true};
  eg_sum_geom g;
  eg_sum_geom_init(&g, 1, shape, reduced);
  void *scratch = scratch_for(&g);
  double acc = NAN;
  eg_sum_dense_f32(&g, x, &acc, scratch);
  double want = (double)n * (double)0.1f;
  EG_CHECK_MSG(fabs(acc - want) <= 1e-6 * want, "%.17g vs %.17g", acc, want);
  /* [R, K] over many rows */
  const int64_t shape2[2] = {1 << 16, 256};
  const bool red2[2] = {true, false};
  eg_sum_geom_init(&g, 2, shape2, red2);
  double *acc2 = malloc(256 * sizeof(double));
  eg_sum_dense_f32(&g, x, acc2, NULL);
  int off = 0;
  for (int j = 0; j < 256; j++) off += !(fabs(acc2[j] - 65536.0 * (double)0.1f) <= 1e-6 * 6554);
  EG_CHECK_MSG(off == 0, "%d of 256 column sums off: %.17g", off, acc2[0]);
  free(acc2);
  free(scratch);
  free(x);
}

/* The same reduction on 1 and 2 threads gives bit-identical sums. */
static void test_thread_independent(void) {
  const int64_t shapes[3][4] = {{1 << 21}, {61, 2053}, {4, 130, 33, 31}};
  const bool masks[3][4] = {{true}, {true, false}, {true, false, true, true}};
  const int ranks[3] = {1, 2, 4};
  for (int c = 0; c < 3; c++) {
    eg_sum_geom g;
    eg_sum_geom_init(&g, ranks[c], shapes[c], masks[c]);
    int64_t n = numel_of(shapes[c], ranks[c]);
    float *x = malloc((size_t)n * sizeof(float));
    eg_test_fill(x, n, 40u + (unsigned)c);
    double *a1 = malloc((size_t)g.out_numel * sizeof(double));
    double *a2 = malloc((size_t)g.out_numel * sizeof(double));
    void *scratch = scratch_for(&g);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    eg_sum_dense_f32(&g, x, a1, scratch);
    omp_set_num_threads(2);
    eg_sum_dense_f32(&g, x, a2, scratch);
    omp_set_num_threads(saved);
    EG_CHECK(memcmp(a1, a2, (size_t)g.out_numel * sizeof(double)) == 0);
    free(x);
    free(a1);
    free(a2);
    free(scratch);
  }
}

static void test_f64(void) {
  const int64_t shape[3] = {3, 4, 5};
  const bool reduced[3] = {true, false, true};
  double x[60];
  for (int i = 0; i < 60; i++) x[i] = i * 0.25 - 3;
  eg_sum_geom g;
  eg_sum_geom_init(&g, 3, shape, reduced);
  double acc[4];
  eg_sum_dense_f64(&g, x, acc, NULL);
  for (int j = 0; j < 4; j++) {
    double want = 0;
    for (int a = 0; a < 3; a++)
      for (int c = 0; c < 5; c++) want += x[a * 20 + j * 5 + c];
    EG_CHECK(fabs(acc[j] - want) <= 1e-12);
  }
}

static void test_integers(void) {
  const int64_t shape[2] = {3, 2};
  const bool rows[2] = {true, false}, all[2] = {true, true};
  eg_sum_geom g;
  eg_sum_geom_init(&g, 2, shape, rows);
  int64_t acc[2] = {99, 99};
  const int64_t xi64[6] = {INT64_MAX, 5, 1, -7, 0, 3};
  eg_sum_dense_i64(&g, xi64, acc, NULL);
  EG_CHECK(acc[0] == INT64_MIN);   /* wraps, as ATen's int64 sum */
  EG_CHECK(acc[1] == 1);
  const int32_t xi32[6] = {INT32_MAX, -1, INT32_MAX, -1, 2, -1};
  eg_sum_dense_i32(&g, xi32, acc, NULL);
  EG_CHECK(acc[0] == 2 * (int64_t)INT32_MAX + 2);  /* no int32 overflow */
  EG_CHECK(acc[1] == -3);
  const int8_t xi8[6] = {-128, 127, -128, 127, -128, 127};
  eg_sum_dense_i8(&g, xi8, acc, NULL);
  EG_CHECK(acc[0] == -384 && acc[1] == 381);
  const uint8_t xb[6] = {1, 0, 1, 1, 0, 1};
  eg_sum_dense_u8(&g, xb, acc, NULL);
  EG_CHECK(acc[0] == 2 && acc[1] == 2);
  eg_sum_geom_init(&g, 2, shape, all);
  void *scratch = scratch_for(&g);
  eg_sum_dense_u8(&g, xb, acc, scratch);
  EG_CHECK(acc[0] == 4);
  free(scratch);
  /* a big bool count through the chunked path */
  const int64_t big[1] = {(1 << 20) + 3};
  eg_sum_geom_init(&g, 1, big, all);
  uint8_t *b = malloc((size_t)big[0]);
  for (int64_t i = 0; i < big[0]; i++) b[i] = (uint8_t)(i % 3 == 0);
  scratch = scratch_for(&g);
  eg_sum_dense_u8(&g, b, acc, scratch);
  EG_CHECK(acc[0] == (big[0] + 2) / 3);
  free(scratch);
  free(b);
}

static void test_geometry(void) {
  const int64_t shape[4] = {8, 16, 1, 9};
  const bool reduced[4] = {true, false, true, true};
  eg_sum_geom g;
  eg_sum_geom_init(&g, 4, shape, reduced);
  EG_CHECK(g.rank == 3);
  EG_CHECK(g.size[0] == 8 && g.size[1] == 16 && g.size[2] == 9);
  EG_CHECK(g.reduced[0] && !g.reduced[1] && g.reduced[2]);
  EG_CHECK(g.out_numel == 16 && g.in_numel == 8 * 16 * 9);
  const bool lead[4] = {true, true, false, false};
  eg_sum_geom_init(&g, 4, shape, lead);
  EG_CHECK(g.rank == 2 && g.size[0] == 128 && g.size[1] == 9);
}

int main(void) {
  EG_RUN(test_geometry);
  EG_RUN(test_all_masks);
  EG_RUN(test_threaded_paths);
  EG_RUN(test_accuracy);
  EG_RUN(test_thread_independent);
  EG_RUN(test_f64);
  EG_RUN(test_integers);
  return eg_test_summary();
}
