/* test_kernels_elementwise.c — the broadcast index logic (kernels/broadcast.h) and the
 * elementwise kernels (kernels/elementwise_dense.h) against naive references written here.
 *
 * The index-logic tests spell out the simplified walk expected for the shapes that matter
 * (same shape, scalar, per-channel, two-sided, size-1 and empty) and check that walking rows
 * with eg_iter_next_row agrees with eg_iter_row. The kernel tests draw random pairs of
 * broadcastable shapes and compare every op and dtype with a reference that maps each output
 * multi-index straight to the operands' flat indices from the original shapes (no eg_iter).
 * Outputs are pre-filled with a sentinel so unwritten elements show up; some sizes exceed the
 * kernels' threading threshold so thread boundaries fall inside rows. */
#include <stdint.h>

#include "eg_test.h"
#include "kernels/broadcast.h"
#include "kernels/elementwise_dense.h"

/* ---- index logic ---- */

typedef struct walk {
  int rank;
  int64_t shape[EG_MAX_RANK];
  int64_t sa[EG_MAX_RANK], sb[EG_MAX_RANK];
} walk;

static void make_iter(const int64_t *a, int ra, const int64_t *b, int rb, eg_iter *it) {
  int64_t out[EG_MAX_RANK], st[2][EG_MAX_RANK];
  int r = ra > rb ? ra : rb;
  for (int d = 0; d < r; d++) {
    int64_t da = d < r - ra ? 1 : a[d - (r - ra)], db = d < r - rb ? 1 : b[d - (r - rb)];
    out[d] = da == 1 ? db : da;
  }
  eg_broadcast_strides(a, ra, out, r, st[0]);
  eg_broadcast_strides(b, rb, out, r, st[1]);
  const int64_t *sp[2] = {st[0], st[1]};
  eg_iter_init(it, out, r, 2, sp);
}

static void expect_walk(const int64_t *a, int ra, const int64_t *b, int rb, const walk *w,
                        const char *what) {
  eg_iter it;
  make_iter(a, ra, b, rb, &it);
  bool same = it.rank == w->rank && it.n_in == 2;
  for (int d = 0; same && d < w->rank; d++)
    same = it.shape[d] == w->shape[d] && it.stride[0][d] == w->sa[d] &&
           it.stride[1][d] == w->sb[d];
  EG_CHECK_MSG(same, "%s: got rank %d shape[0]=%lld stride=(%lld,%lld)", what, it.rank,
               (long long)it.shape[0], (long long)it.stride[0][0], (long long)it.stride[1][0]);
}

static void test_broadcast_strides(void) {
  int64_t st[EG_MAX_RANK];
  const int64_t x[] = {3, 1, 5}, out[] = {2, 3, 4, 5};
  eg_broadcast_strides(x, 3, out, 4, st);
  EG_CHECK(st[0] == 0 && st[1] == 5 && st[2] == 0 && st[3] == 1);
  const int64_t ones[] = {1, 1}, out2[] = {1, 1};
  eg_broadcast_strides(ones, 2, out2, 2, st); /* extent 1 in a 1-sized output dim: step */
  EG_CHECK(st[0] == 1 && st[1] == 1);
  eg_broadcast_strides(NULL, 0, out, 4, st); /* 0-d: all zero */
  EG_CHECK(st[0] == 0 && st[1] == 0 && st[2] == 0 && st[3] == 0);
}

static void test_iter_simplify(void) {
  {
    const int64_t a[] = {2, 3, 4};
    expect_walk(a, 3, a, 3, &(walk){1, {24}, {1}, {1}}, "same shape");
  }
  {
    const int64_t a[] = {3, 4};
    expect_walk(a, 2, NULL, 0, &(walk){1, {12}, {1}, {0}}, "tensor and 0-d");
    expect_walk(NULL, 0, a, 2, &(walk){1, {12}, {0}, {1}}, "0-d and tensor");
  }
  {
    const int64_t a[] = {2, 3, 4, 5}, b[] = {1, 3, 1, 1}, c[] = {3, 1, 1};
    expect_walk(a, 4, b, 4, &(walk){3, {2, 3, 20}, {60, 20, 1}, {0, 1, 0}}, "per-channel");
    expect_walk(c, 3, a, 4, &(walk){3, {2, 3, 20}, {0, 1, 0}, {60, 20, 1}}, "channel lhs");
  }
  {
    const int64_t a[] = {64, 100}, b[] = {100};
    expect_walk(a, 2, b, 1, &(walk){2, {64, 100}, {100, 1}, {0, 1}}, "bias rows");
  }
  {
    const int64_t a[] = {4, 1}, b[] = {1, 5};
    expect_walk(a, 2, b, 2, &(walk){2, {4, 5}, {1, 0}, {0, 1}}, "two-sided");
  }
  {
    const int64_t a[] = {3, 1, 5}, b[] = {4, 1};
    expect_walk(a, 3, b, 2, &(walk){3, {3, 4, 5}, {5, 0, 1}, {0, 1, 0}}, "two-sided 3-d");
  }
  {
    const int64_t a[] = {1, 1}, b[] = {1};
    expect_walk(a, 2, b, 1, &(walk){1, {1}, {0}, {0}}, "single element");
  }
  {
    const int64_t a[] = {2, 1, 3}, b[] = {2, 1, 3};
    expect_walk(a, 3, b, 3, &(walk){1, {6}, {1}, {1}}, "size-1 dim dropped");
  }
  {
    const int64_t a[] = {0, 3}, b[] = {3};
    expect_walk(a, 2, b, 1, &(walk){1, {0}, {0}, {0}}, "empty");
  }
  {
    /* A permuted input (strides 1, 3 over shape [3, 2]) does not merge. */
    const int64_t shape[] = {3, 2}, st[] = {1, 3};
    const int64_t *sp[1] = {st};
    eg_iter it;
    eg_iter_init(&it, shape, 2, 1, sp);
    EG_CHECK(it.rank == 2 && it.shape[0] == 3 && it.shape[1] == 2 && it.stride[0][0] == 1 &&
             it.stride[0][1] == 3);
  }
}

/* eg_iter_next_row from row 0 visits the same offsets as eg_iter_row(row). */
static void test_iter_rows(void) {
  const int64_t a[] = {3, 1, 4, 1, 2}, b[] = {5, 1, 6, 1};
  eg_iter it;
  make_iter(a, 5, b, 4, &it);
  EG_CHECK(it.rank >= 3);
  int64_t rows = it.numel / it.shape[it.rank - 1];
  int64_t idx[EG_MAX_RANK], off[2], idx2[EG_MAX_RANK], off2[2];
  eg_iter_row(&it, 0, idx, off);
  for (int64_t r = 0; r < rows; r++) {
    eg_iter_row(&it, r, idx2, off2);
    EG_CHECK_MSG(off[0] == off2[0] && off[1] == off2[1], "row %lld", (long long)r);
    if (r + 1 < rows) eg_iter_next_row(&it, idx, off);
  }
}

/* ---- kernels against the reference ---- */

typedef struct shapes {
  int ra, rb, r;
  int64_t a[EG_MAX_RANK], b[EG_MAX_RANK], out[EG_MAX_RANK];
} shapes;

static int64_t numel(const int64_t *s, int r) {
  int64_t n = 1;
  for (int d = 0; d < r; d++) n *= s[d];
  return n;
}

/* Flat index into an operand of shape s (rank rs) for output multi-index idx (rank r). */
static int64_t ref_index(const int64_t *s, int rs, const int64_t *idx, int r) {
  int64_t flat = 0;
  for (int d = 0; d < rs; d++) {
    const int64_t i = s[d] == 1 ? 0 : idx[d + r - rs];
    flat = flat * s[d] + i;
  }
  return flat;
}

static unsigned rng_state = 12345;
static unsigned rng(unsigned n) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (rng_state >> 16) % n;
}

/* Random broadcastable shapes of rank <= 5, dims in [1, 6], sometimes a 0-d side. */
static void random_shapes(shapes *s) {
  s->r = 1 + (int)rng(5);
  for (int d = 0; d < s->r; d++) s->out[d] = 1 + rng(6);
  s->ra = rng(6) == 0 ? 0 : s->r - (int)rng((unsigned)s->r);
  s->rb = rng(6) == 0 ? 0 : s->r - (int)rng((unsigned)s->r);
  if (s->ra < s->r && s->rb < s->r) s->ra = s->r;
  for (int d = 0; d < s->ra; d++) s->a[d] = rng(3) == 0 ? 1 : s->out[d + s->r - s->ra];
  for (int d = 0; d < s->rb; d++) s->b[d] = rng(3) == 0 ? 1 : s->out[d + s->r - s->rb];
  /* Dims where both sides are 1 give an output extent of 1. */
  for (int d = 0; d < s->r; d++) {
    const int64_t da = d < s->r - s->ra ? 1 : s->a[d - (s->r - s->ra)];
    const int64_t db = d < s->r - s->rb ? 1 : s->b[d - (s->r - s->rb)];
    s->out[d] = da > db ? da : db;
  }
}

static void run_kernel(eg_binary_op op, eg_dtype dt, const shapes *s, const void *a,
                       const void *b, eg_scalar alpha, void *out) {
  eg_iter it;
  int64_t st[2][EG_MAX_RANK];
  eg_broadcast_strides(s->a, s->ra, s->out, s->r, st[0]);
  eg_broadcast_strides(s->b, s->rb, s->out, s->r, st[1]);
  const int64_t *sp[2] = {st[0], st[1]};
  eg_iter_init(&it, s->out, s->r, 2, sp);
  eg_binary_dense(op, dt, &it, a, b, alpha, out);
}

/* (The rounding divisions' reference: the quotient in double, rounded; the data keeps it away
 * from the integers a float quotient could round onto.) */
static double ref_op_f(eg_binary_op op, double x, double y, double al) {
  switch (op) {
  case EG_BINARY_ADD: return x + y;
  case EG_BINARY_ADD_ALPHA: return x + al * y;
  case EG_BINARY_MUL: return x * y;
  case EG_BINARY_DIV: return x / y;
  case EG_BINARY_DIV_TRUNC: return trunc(x / y);
  case EG_BINARY_DIV_FLOOR: return floor(x / y);
  default: return y <= al ? 0.0 : x;
  }
}

/* Integer division: a divisor of 0 gives 0 (the op layer refuses it before the kernel runs). */
static int64_t ref_op_i(eg_binary_op op, int64_t x, int64_t y, int64_t al) {
  switch (op) {
  case EG_BINARY_ADD: return x + y;
  case EG_BINARY_ADD_ALPHA: return x + al * y;
  case EG_BINARY_MUL: return x * y;
  case EG_BINARY_DIV_TRUNC: return y ? x / y : 0;
  case EG_BINARY_DIV_FLOOR: return y ? x / y - (x % y != 0 && (x < 0) != (y < 0)) : 0;
  default: return y <= al ? 0 : x;
  }
}

/* Visits every output multi-index in C order, calling the reference for element k. */
#define FOR_EACH_OUT(s, k, ia, ib, BODY)                                                \
  do {                                                                                  \
    int64_t idx_[EG_MAX_RANK] = {0};                                                    \
    const int64_t n_ = numel((s)->out, (s)->r);                                         \
    for (int64_t k = 0; k < n_; k++) {                                                  \
      const int64_t ia = ref_index((s)->a, (s)->ra, idx_, (s)->r);                      \
      const int64_t ib = ref_index((s)->b, (s)->rb, idx_, (s)->r);                      \
      BODY;                                                                             \
      for (int d_ = (s)->r - 1; d_ >= 0 && ++idx_[d_] == (s)->out[d_]; d_--) idx_[d_] = 0; \
    }                                                                                   \
  } while (0)

static void check_f32(eg_binary_op op, const shapes *s, const char *what) {
  const int64_t na = numel(s->a, s->ra), nb = numel(s->b, s->rb), no = numel(s->out, s->r);
  float *a = malloc(sizeof(float) * (size_t)(na + 1));
  float *b = malloc(sizeof(float) * (size_t)(nb + 1));
  float *out = malloc(sizeof(float) * (size_t)(no + 1));
  float *ref = malloc(sizeof(float) * (size_t)(no + 1));
  eg_test_fill(a, na, 1);
  eg_test_fill(b, nb, 2);
  if (op == EG_BINARY_DIV || op == EG_BINARY_DIV_TRUNC || op == EG_BINARY_DIV_FLOOR)
    for (int64_t i = 0; i < nb; i++) b[i] += b[i] < 0 ? -0.5f : 0.5f;
  const float al = op == EG_BINARY_THRESHOLD_BACKWARD ? 0.125f : -1.5f;
  for (int64_t i = 0; i < no; i++) out[i] = NAN;
  run_kernel(op, EG_DTYPE_FLOAT32, s, a, b, (eg_scalar){.f32 = al}, out);
  FOR_EACH_OUT(s, k, ia, ib, ref[k] = (float)ref_op_f(op, a[ia], b[ib], al));
  const long bad = eg_test_allclose(out, ref, (long)no, 1e-6, 1e-7);
  EG_CHECK_MSG(bad < 0, "%s op %d f32: [%ld] = %g, want %g (ranks %d,%d -> %d)", what, (int)op,
               bad, bad < 0 ? 0.0 : out[bad], bad < 0 ? 0.0 : ref[bad], s->ra, s->rb, s->r);
  free(a), free(b), free(out), free(ref);
}

static void check_f64(eg_binary_op op, const shapes *s, const char *what) {
  const int64_t na = numel(s->a, s->ra), nb = numel(s->b, s->rb), no = numel(s->out, s->r);
  double *a = malloc(sizeof(double) * (size_t)(na + 1));
  double *b = malloc(sizeof(double) * (size_t)(nb + 1));
  double *out = malloc(sizeof(double) * (size_t)(no + 1));
  for (int64_t i = 0; i < na; i++) a[i] = (double)(i % 17) - 8.25;
  for (int64_t i = 0; i < nb; i++) b[i] = (double)(i % 13) - 6.5;
  for (int64_t i = 0; i < no; i++) out[i] = NAN;
  const double al = 0.75;
  run_kernel(op, EG_DTYPE_FLOAT64, s, a, b, (eg_scalar){.f64 = al}, out);
  int64_t bad = -1;
  FOR_EACH_OUT(s, k, ia, ib, if (bad < 0 && !(out[k] == ref_op_f(op, a[ia], b[ib], al))) bad = k);
  EG_CHECK_MSG(bad < 0, "%s op %d f64: first mismatch at %lld", what, (int)op, (long long)bad);
  free(a), free(b), free(out);
}

static void check_int(eg_binary_op op, eg_dtype dt, const shapes *s, const char *what) {
  const int64_t na = numel(s->a, s->ra), nb = numel(s->b, s->rb), no = numel(s->out, s->r);
  const size_t es = dt == EG_DTYPE_INT64 ? 8 : 4;
  char *a = malloc(es * (size_t)(na + 1)), *b = malloc(es * (size_t)(nb + 1));
  char *out = malloc(es * (size_t)(no + 1));
  memset(out, 0x5a, es * (size_t)(no + 1));
#define GET(p, i) (dt == EG_DTYPE_INT64 ? ((int64_t *)(void *)(p))[i] : ((int32_t *)(void *)(p))[i])
  for (int64_t i = 0; i < na; i++) {
    if (dt == EG_DTYPE_INT64) ((int64_t *)(void *)a)[i] = i % 23 - 11;
    else ((int32_t *)(void *)a)[i] = (int32_t)(i % 23 - 11);
  }
  for (int64_t i = 0; i < nb; i++) {
    if (dt == EG_DTYPE_INT64) ((int64_t *)(void *)b)[i] = i % 7 - 3;
    else ((int32_t *)(void *)b)[i] = (int32_t)(i % 7 - 3);
  }
  eg_scalar al = dt == EG_DTYPE_INT64 ? (eg_scalar){.i64 = 3} : (eg_scalar){.i32 = 3};
  run_kernel(op, dt, s, a, b, al, out);
  int64_t bad = -1;
  FOR_EACH_OUT(s, k, ia, ib,
               if (bad < 0 && GET(out, k) != ref_op_i(op, GET(a, ia), GET(b, ib), 3)) bad = k);
#undef GET
  EG_CHECK_MSG(bad < 0, "%s op %d %s: first mismatch at %lld", what, (int)op,
               eg_dtype_name(dt), (long long)bad);
  free(a), free(b), free(out);
}

static void check_all(const shapes *s, const char *what) {
  for (int op = 0; op < EG_BINARY_COUNT; op++) {
    check_f32((eg_binary_op)op, s, what);
    check_f64((eg_binary_op)op, s, what);
    if (op == EG_BINARY_DIV) continue;
    check_int((eg_binary_op)op, EG_DTYPE_INT64, s, what);
    check_int((eg_binary_op)op, EG_DTYPE_INT32, s, what);
  }
}

static void test_binary_random(void) {
  for (int t = 0; t < 300; t++) {
    shapes s;
    random_shapes(&s);
    char what[32];
    snprintf(what, sizeof what, "random case %d", t);
    check_all(&s, what);
  }
}

/* Sizes over the threading threshold, with rows that thread boundaries cut. */
static void test_binary_big(void) {
  const shapes cases[] = {
      {3, 2, 3, {3, 7, 3131}, {7, 1}, {3, 7, 3131}},          /* inner stride (1,0) */
      {4, 4, 4, {4, 16, 33, 35}, {1, 16, 1, 1}, {4, 16, 33, 35}}, /* per-channel */
      {2, 2, 2, {301, 1}, {1, 299}, {301, 299}},              /* two-sided */
      {1, 1, 1, {100003}, {100003}, {100003}},                /* flat */
      {1, 0, 1, {70001}, {0}, {70001}},                       /* scalar */
      /* A per-image, per-channel scale on small planes (squeeze-and-excitation): rows of 9
       * taken in blocks, a thread boundary inside a row; either operand order. */
      {4, 4, 4, {5, 1501, 3, 3}, {5, 1501, 1, 1}, {5, 1501, 3, 3}},
      {4, 4, 4, {5, 1501, 1, 1}, {5, 1501, 3, 3}, {5, 1501, 3, 3}},
      /* Blocks of rows end at each image (walk [5, 1501, 9], the channel operand's row
       * stride 1 restarting per image). */
      {4, 4, 4, {5, 1501, 3, 3}, {1, 1501, 1, 1}, {5, 1501, 3, 3}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char what[32];
    snprintf(what, sizeof what, "big case %zu", i);
    check_all(&cases[i], what);
  }
}

static void test_int_wraps(void) {
  const int64_t a[3] = {INT64_MAX, INT64_MIN, 7}, b[3] = {1, -1, 2};
  int64_t out[3];
  const shapes s = {1, 1, 1, {3}, {3}, {3}};
  run_kernel(EG_BINARY_ADD, EG_DTYPE_INT64, &s, a, b, (eg_scalar){.i64 = 0}, out);
  EG_CHECK(out[0] == INT64_MIN && out[1] == INT64_MAX && out[2] == 9);
  run_kernel(EG_BINARY_MUL, EG_DTYPE_INT64, &s, a, b, (eg_scalar){.i64 = 0}, out);
  EG_CHECK(out[0] == INT64_MAX && out[1] == INT64_MIN && out[2] == 14);
}

static void test_unary(void) {
  const float x[6] = {-2.0f, -0.0f, 0.0f, 3.5f, NAN, -INFINITY};
  float out[6];
  eg_unary_dense(EG_UNARY_RELU, EG_DTYPE_FLOAT32, x, out, 6);
  EG_CHECK(out[0] == 0.0f && out[1] == 0.0f && signbit(out[1]) && out[2] == 0.0f &&
           out[3] == 3.5f && isnan(out[4]) && out[5] == 0.0f);
  eg_unary_dense(EG_UNARY_NEG, EG_DTYPE_FLOAT32, x, out, 6);
  EG_CHECK(out[0] == 2.0f && out[3] == -3.5f && isnan(out[4]) && out[5] == INFINITY);
  const int32_t xi[3] = {INT32_MIN, -5, 5};
  int32_t oi[3];
  eg_unary_dense(EG_UNARY_NEG, EG_DTYPE_INT32, xi, oi, 3);
  EG_CHECK(oi[0] == INT32_MIN && oi[1] == 5 && oi[2] == -5);
  eg_unary_dense(EG_UNARY_RELU, EG_DTYPE_INT32, xi, oi, 3);
  EG_CHECK(oi[0] == 0 && oi[1] == 0 && oi[2] == 5);
  /* Big enough to thread. */
  const long n = 200001;
  double *xd = malloc(sizeof(double) * (size_t)n), *od = malloc(sizeof(double) * (size_t)n);
  for (long i = 0; i < n; i++) xd[i] = (double)(i % 11) - 5.0;
  eg_unary_dense(EG_UNARY_RELU, EG_DTYPE_FLOAT64, xd, od, n);
  long bad = -1;
  for (long i = 0; i < n && bad < 0; i++)
    if (od[i] != (xd[i] < 0 ? 0.0 : xd[i])) bad = i;
  EG_CHECK_MSG(bad < 0, "relu f64 at %ld", bad);
  free(xd), free(od);
  EG_CHECK(eg_elementwise_dtype_ok(EG_DTYPE_FLOAT32) && !eg_elementwise_dtype_ok(EG_DTYPE_BOOL));
}

int main(void) {
  EG_RUN(test_broadcast_strides);
  EG_RUN(test_iter_simplify);
  EG_RUN(test_iter_rows);
  EG_RUN(test_binary_random);
  EG_RUN(test_binary_big);
  EG_RUN(test_int_wraps);
  EG_RUN(test_unary);
  return eg_test_summary();
}
