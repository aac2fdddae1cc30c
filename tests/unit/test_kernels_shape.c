/* test_kernels_shape.c — the copy kernels behind the shape family (kernels/copy_dense.h):
 * strided gathers for permute/t/expand against a naive multi-index reference (every element
 * size, random permutations and expansions, sizes that take the tiled and the threaded paths),
 * dtype conversion against spelled-out expectations (including the edge rules the header
 * documents: NaN to bool, out-of-range floats, wrapping, bool bytes other than 0/1), and fills. */
#include <stdint.h>

#include "eg_test.h"
#include "kernels/copy_dense.h"

static unsigned rng_state = 777;
static unsigned rng(unsigned n) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (rng_state >> 16) % n;
}

static int64_t numel(const int64_t *s, int r) {
  int64_t n = 1;
  for (int d = 0; d < r; d++) n *= s[d];
  return n;
}

/* Element k of the input as a 64-bit pattern, so one reference serves every size. */
static uint64_t load(const void *p, size_t esize, int64_t k) {
  const unsigned char *c = (const unsigned char *)p + (size_t)k * esize;
  uint64_t v = 0;
  memcpy(&v, c, esize);
  return v;
}

/* out = gather(in) with input strides `st` over output shape `shape`, checked against the
 * reference out[idx] = in[sum idx[d] * st[d]]. */
static void check_gather(const int64_t *shape, int r, const int64_t *st, int64_t in_numel,
                         size_t esize, const char *what) {
  const int64_t n = numel(shape, r);
  unsigned char *in = malloc(esize * (size_t)(in_numel + 1));
  unsigned char *out = malloc(esize * (size_t)(n + 1));
  for (size_t i = 0; i < esize * (size_t)in_numel; i++) in[i] = (unsigned char)(i * 7 + 3);
  memset(out, 0xee, esize * (size_t)(n + 1));
  eg_iter it;
  eg_iter_init(&it, shape, r, 1, &st);
  eg_copy_strided_dense(&it, esize, in, out);
  int64_t idx[EG_MAX_RANK] = {0}, bad = -1;
  for (int64_t k = 0; k < n && bad < 0; k++) {
    int64_t off = 0;
    for (int d = 0; d < r; d++) off += idx[d] * st[d];
    if (load(out, esize, k) != load(in, esize, off)) bad = k;
    for (int d = r - 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
  }
  EG_CHECK_MSG(bad < 0, "%s (esize %zu): first mismatch at %lld", what, esize, (long long)bad);
  EG_CHECK_MSG(load(out, esize, n) == load((const unsigned char[8]){0xee, 0xee, 0xee, 0xee, 0xee,
                                                                    0xee, 0xee, 0xee}, esize, 0),
               "%s: wrote past the end", what);
  free(in), free(out);
}

/* Output shape and input strides of x.permute(perm) for x of shape `in`. */
static void permuted(const int64_t *in, int r, const int *perm, int64_t *shape, int64_t *st) {
  int64_t contiguous[EG_MAX_RANK], step = 1;
  for (int d = r - 1; d >= 0; d--) contiguous[d] = step, step *= in[d];
  for (int d = 0; d < r; d++) shape[d] = in[perm[d]], st[d] = contiguous[perm[d]];
}

static void test_permute_random(void) {
  static const size_t sizes[] = {1, 2, 4, 8};
  for (int t = 0; t < 200; t++) {
    const int r = 1 + (int)rng(5);
    int64_t in[EG_MAX_RANK], shape[EG_MAX_RANK], st[EG_MAX_RANK];
    int perm[EG_MAX_RANK];
    for (int d = 0; d < r; d++) in[d] = 1 + rng(7), perm[d] = d;
    for (int d = r - 1; d > 0; d--) { /* Fisher-Yates */
      const int j = (int)rng((unsigned)d + 1), tmp = perm[d];
      perm[d] = perm[j], perm[j] = tmp;
    }
    permuted(in, r, perm, shape, st);
    char what[32];
    snprintf(what, sizeof what, "permute case %d", t);
    check_gather(shape, r, st, numel(in, r), sizes[t % 4], what);
  }
}

static void test_transpose_tiled(void) {
  /* t() of a matrix, odd sizes (partial tiles), big enough for threads; and a batched
   * NCHW -> NHWC permute. */
  const int64_t in[2] = {300, 257};
  const int perm[2] = {1, 0};
  int64_t shape[EG_MAX_RANK], st[EG_MAX_RANK];
  permuted(in, 2, perm, shape, st);
  check_gather(shape, 2, st, numel(in, 2), 4, "t 300x257");
  check_gather(shape, 2, st, numel(in, 2), 8, "t 300x257");
  const int64_t x[4] = {4, 33, 17, 19};
  const int p4[4] = {0, 2, 3, 1};
  permuted(x, 4, p4, shape, st);
  check_gather(shape, 4, st, numel(x, 4), 4, "nchw->nhwc");
  check_gather(shape, 4, st, numel(x, 4), 1, "nchw->nhwc");
  const int64_t y[3] = {64, 100, 24};
  const int p3[3] = {1, 0, 2};
  permuted(y, 3, p3, shape, st);
  check_gather(shape, 3, st, numel(y, 3), 2, "permute 1,0,2");
}

static void test_expand(void) {
  /* [3,1,5] -> [4,3,6,5]: a new leading dim and a size-1 dim, both stride 0. */
  const int64_t shape[4] = {4, 3, 6, 5}, st[4] = {0, 5, 0, 1};
  check_gather(shape, 4, st, 15, 4, "expand");
  const int64_t col[2] = {50, 3000}, cst[2] = {1, 0}; /* [50,1] -> [50,3000], threaded */
  check_gather(col, 2, cst, 50, 4, "expand column");
  const int64_t sc[3] = {2, 3, 4}, sst[3] = {0, 0, 0}; /* 0-d -> [2,3,4] */
  check_gather(sc, 3, sst, 1, 8, "expand 0-d");
  const int64_t big[4] = {32, 64, 40, 40}, bst[4] = {0, 1, 0, 0};
  check_gather(big, 4, bst, 64, 4, "expand big");
  const int64_t empty[2] = {0, 3}, est[2] = {0, 1};
  check_gather(empty, 2, est, 3, 4, "expand to empty");
  /* Squeeze-and-excitation's mean backward, [5,1501,1,1] -> [5,1501,3,3]: rows of 9 taken in
   * blocks, threaded with a thread boundary inside a row. */
  const int64_t se[4] = {5, 1501, 3, 3}, sest[4] = {1501, 1, 0, 0};
  check_gather(se, 4, sest, 5 * 1501, 4, "expand per channel");
  check_gather(se, 4, sest, 5 * 1501, 8, "expand per channel");
  /* Short dense rows in blocks: [1501,5,3,3].permute(1,0,2,3), rows of 9 at row stride 45. */
  const int64_t pin[4] = {1501, 5, 3, 3};
  const int pp[4] = {1, 0, 2, 3};
  int64_t pshape[EG_MAX_RANK], pst[EG_MAX_RANK];
  permuted(pin, 4, pp, pshape, pst);
  check_gather(pshape, 4, pst, numel(pin, 4), 4, "permute short rows");
}

static void test_cast(void) {
  const float f[6] = {1.75f, -2.5f, 0.0f, NAN, 3e10f, -0.0f};
  int64_t i64[6];
  eg_cast_dense(f, EG_DTYPE_FLOAT32, i64, EG_DTYPE_INT64, 6);
  EG_CHECK(i64[0] == 1 && i64[1] == -2 && i64[2] == 0 && i64[3] == INT64_MIN &&
           i64[4] == (int64_t)3e10f && i64[5] == 0);
  int32_t i32[6];
  eg_cast_dense(f, EG_DTYPE_FLOAT32, i32, EG_DTYPE_INT32, 6);
  EG_CHECK(i32[0] == 1 && i32[1] == -2 && i32[3] == INT32_MIN && i32[4] == INT32_MIN);
  uint8_t b[6];
  eg_cast_dense(f, EG_DTYPE_FLOAT32, b, EG_DTYPE_BOOL, 6);
  EG_CHECK(b[0] == 1 && b[1] == 1 && b[2] == 0 && b[3] == 1 && b[4] == 1 && b[5] == 0);
  double d[6];
  eg_cast_dense(f, EG_DTYPE_FLOAT32, d, EG_DTYPE_FLOAT64, 6);
  EG_CHECK(d[0] == 1.75 && d[1] == -2.5 && isnan(d[3]) && d[4] == (double)3e10f);

  const int64_t big[4] = {300, -1, ((int64_t)1 << 40) + 3, -129};
  int8_t s8[4];
  uint8_t u8[4];
  int32_t w32[4];
  eg_cast_dense(big, EG_DTYPE_INT64, s8, EG_DTYPE_INT8, 4);
  EG_CHECK(s8[0] == 44 && s8[1] == -1 && s8[2] == 3 && s8[3] == 127);
  eg_cast_dense(big, EG_DTYPE_INT64, u8, EG_DTYPE_UINT8, 4);
  EG_CHECK(u8[0] == 44 && u8[1] == 255 && u8[2] == 3 && u8[3] == 127);
  eg_cast_dense(big, EG_DTYPE_INT64, w32, EG_DTYPE_INT32, 4);
  EG_CHECK(w32[0] == 300 && w32[1] == -1 && w32[2] == 3 && w32[3] == -129);

  const uint8_t bools[3] = {0, 1, 2}; /* a stray 2 still reads as true */
  float bf[3];
  int64_t bi[3];
  eg_cast_dense(bools, EG_DTYPE_BOOL, bf, EG_DTYPE_FLOAT32, 3);
  EG_CHECK(bf[0] == 0.0f && bf[1] == 1.0f && bf[2] == 1.0f);
  eg_cast_dense(bools, EG_DTYPE_BOOL, bi, EG_DTYPE_INT64, 3);
  EG_CHECK(bi[0] == 0 && bi[1] == 1 && bi[2] == 1);

  const uint8_t u[2] = {200, 255};
  float uf[2];
  eg_cast_dense(u, EG_DTYPE_UINT8, uf, EG_DTYPE_FLOAT32, 2);
  EG_CHECK(uf[0] == 200.0f && uf[1] == 255.0f);

  EG_CHECK(eg_cast_supported(EG_DTYPE_FLOAT16, EG_DTYPE_FLOAT16));
  EG_CHECK(!eg_cast_supported(EG_DTYPE_FLOAT16, EG_DTYPE_FLOAT32));
  EG_CHECK(!eg_cast_supported(EG_DTYPE_COUNT, EG_DTYPE_FLOAT32));
  for (int a = 0; a < EG_DTYPE_COUNT; a++)
    for (int c = 0; c < EG_DTYPE_COUNT; c++)
      EG_CHECK(eg_cast_supported((eg_dtype)a, (eg_dtype)c) ==
               (a == c || (a != EG_DTYPE_FLOAT16 && c != EG_DTYPE_FLOAT16)));

  /* A threaded conversion. */
  const long n = 300001;
  double *src = malloc(sizeof(double) * (size_t)n);
  float *dst = malloc(sizeof(float) * (size_t)n);
  for (long i = 0; i < n; i++) src[i] = (double)i * 0.5 - 1000.0;
  eg_cast_dense(src, EG_DTYPE_FLOAT64, dst, EG_DTYPE_FLOAT32, n);
  long bad = -1;
  for (long i = 0; i < n && bad < 0; i++)
    if (dst[i] != (float)src[i]) bad = i;
  EG_CHECK_MSG(bad < 0, "f64->f32 at %ld", bad);
  free(src), free(dst);
}

static void test_fill(void) {
  const size_t sizes[] = {1, 2, 4, 8};
  for (int s = 0; s < 4; s++) {
    const long n = s == 3 ? 100003 : 37;
    unsigned char *out = malloc(sizes[s] * (size_t)(n + 1));
    memset(out, 0, sizes[s] * (size_t)(n + 1));
    const unsigned char value[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
    eg_fill_dense(out, sizes[s], value, n);
    long bad = -1;
    for (long i = 0; i < n && bad < 0; i++)
      if (memcmp(out + (size_t)i * sizes[s], value, sizes[s]) != 0) bad = i;
    EG_CHECK_MSG(bad < 0, "fill esize %zu at %ld", sizes[s], bad);
    EG_CHECK(out[sizes[s] * (size_t)n] == 0);
    free(out);
  }
}

int main(void) {
  EG_RUN(test_permute_random);
  EG_RUN(test_transpose_tiled);
  EG_RUN(test_expand);
  EG_RUN(test_cast);
  EG_RUN(test_fill);
  return eg_test_summary();
}
