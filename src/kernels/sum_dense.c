/* sum_dense.c — the linear-pass reductions of sum_dense.h.
 *
 * The innermost groups form the unit of work, read contiguously:
 *   innermost reduced:  a run of len elements summed into one accumulator (sum_run);
 *   innermost kept:     a [rows, len] block (the reduced group before it, then the kept one)
 *                       added row by row into len accumulators (add_rows).
 * An odometer walks the outer groups in memory order and tracks each unit's accumulator
 * offset. One driver serves every element type through a table of these two functions, so the
 * per-unit call is amortised over a contiguous run or block.
 *
 * Accuracy and speed for float32: partial sums are kept in float only over short stretches
 * (EG_SUM_F32_STRETCH elements in 32 lanes in sum_run; EG_SUM_ROW_BLOCK rows in add_rows) and
 * then added into double, so the error stays at a few float ulps of one stretch, like pairwise
 * summation, while the loops vectorise as plain float adds. The lane loops have a fixed length
 * so the compiler keeps the lanes in vector registers; loops of unknown length carry `omp simd`,
 * which -O2's cheap vectoriser needs (a reduction under it is reassociated into vector lanes,
 * fixed at compile time, so still deterministic).
 * Integer accumulators are uint64_t internally, so overflow wraps instead of being undefined.
 *
 * Threads split only along kept positions (each accumulator is owned by one thread) or, for a
 * full reduction, into fixed chunks whose partial sums live in scratch and are combined in
 * order; so results never depend on the number of threads. */
#include "kernels/sum_dense.h"
#include "util/parallel.h"
#include "util/simd.h"

#include <omp.h>
#include <string.h>

/* Inputs smaller than this stay on one thread. */
enum { EG_SUM_OMP_MIN = 1 << 16 };
/* A full reduction is cut into chunks of this many elements (partial sums in scratch). */
enum { EG_SUM_CHUNK = 1 << 14 };
/* float32 add_rows works on column strips of this many floats (its partials live on the stack). */
enum { EG_SUM_COL_BLOCK = 2048 };
/* Independent partial sums in the generic (non-float32) sum_run. */
enum { EG_SUM_LANES = 16 };
/* float32 add_rows: rows summed in float before each flush into the double accumulators. */
enum { EG_SUM_ROW_BLOCK = 16 };

/* acc[ai] += x[xi] + ... + x[xi + len - 1] */
typedef void (*sum_run_fn)(void *acc, int64_t ai, const void *x, int64_t xi, int64_t len);
/* acc[ai + j] += sum_r x[xi + r * stride + j]  for j < len, r < rows */
typedef void (*add_rows_fn)(void *acc, int64_t ai, const void *x, int64_t xi, int64_t len,
                            int64_t rows, int64_t stride);

/* sum_run for runs r < count, one after another in x: acc[ai + r*astride] += the run at
 * xi + r*len (short runs of small planes: one call for a kept group's runs, not one each) */
typedef void (*sum_runs_fn)(void *acc, int64_t ai, int64_t astride, const void *x, int64_t xi,
                            int64_t len, int64_t count);

typedef struct sum_type {
  sum_run_fn sum_run;
  add_rows_fn add_rows;
  sum_run_fn acc_sum_run; /* sum_run over the accumulator type itself (combines partials) */
  sum_runs_fn sum_runs;   /* NULL: sum_run run by run */
} sum_type;

#define EG_SUM_GENERIC(sfx, T, A)                                                          \
  static void sum_run_##sfx(void *acc, int64_t ai, const void *x, int64_t xi, int64_t len) { \
    const T *p = (const T *)x + xi;                                                        \
    A lane[EG_SUM_LANES] = {0}, s = 0;                                                     \
    int64_t i = 0;                                                                         \
    for (; i + EG_SUM_LANES <= len; i += EG_SUM_LANES)                                     \
      for (int j = 0; j < EG_SUM_LANES; j++) lane[j] += (A)p[i + j];                       \
    for (; i < len; i++) s += (A)p[i];                                                     \
    for (int j = 0; j < EG_SUM_LANES; j++) s += lane[j];                                   \
    ((A *)acc)[ai] += s;                                                                   \
  }                                                                                        \
  static void add_rows_##sfx(void *acc, int64_t ai, const void *x, int64_t xi, int64_t len, \
                             int64_t rows, int64_t stride) {                               \
    A *a = (A *)acc + ai;                                                                  \
    for (int64_t r = 0; r < rows; r++) {                                                   \
      const T *p = (const T *)x + xi + r * stride;                                         \
      _Pragma("omp simd") for (int64_t i = 0; i < len; i++) a[i] += (A)p[i];               \
    }                                                                                      \
  }

EG_SUM_GENERIC(f64, double, double)
EG_SUM_GENERIC(i64, int64_t, uint64_t)
EG_SUM_GENERIC(i32, int32_t, uint64_t)
EG_SUM_GENERIC(i8, int8_t, uint64_t)
EG_SUM_GENERIC(u8, uint8_t, uint64_t)
#undef EG_SUM_GENERIC

/* float32: four groups of eight float lanes (four vector registers, enough to hide the add
 * latency) over stretches of at most EG_SUM_F32_STRETCH elements; each stretch is folded
 * pairwise and added into double. A tail shorter than the 32 lanes is summed by a short
 * vector reduction. Separate fixed-length lane groups keep GCC's -O2 vectoriser on registers. */
enum { EG_SUM_F32_STRETCH = 512 };

/* The values a float32 run sums: the input itself (sq NULL), or its squared deviations
 * (x + alpha * m)^2, alpha and m given by sq (eg_sum_sq_dev_f32). */
typedef struct sq_dev {
  const float *x, *m; /* the input; one mean per accumulator, or one */
  float alpha;        /* the deviation is x + alpha * m (-1: x - m) */
  bool per_acc;       /* m has one value per accumulator (else one) */
} sq_dev;

/* q, or where sq is given, the n values of a stretch starting at q written into buf as the
 * elementwise kernels compute them: d = x + alpha * m, then d * d, each rounded to float. */
static inline __attribute__((always_inline)) const float *stretch_values(const float *q,
                                                                         int64_t n, float m,
                                                                         float alpha,
                                                                         const sq_dev *sq,
                                                                         float *buf) {
  if (!sq) return q;
  /* vector stores (a tail too), so the sum's vector loads of buf are forwarded from them */
#pragma omp simd
  for (int64_t k = 0; k < n; k++) {
    const float d = q[k] + alpha * m;
    buf[k] = d * d;
  }
  return buf;
}

/* acc[ai] += the sum of p[0 .. len) (sq NULL), or of their squared deviations from m. */
static inline __attribute__((always_inline)) void sum_run_f32_body(double *acc, int64_t ai,
                                                                   const float *p, int64_t len,
                                                                   const sq_dev *sq, float m) {
  float buf[EG_SUM_F32_STRETCH];
  const float alpha = sq ? sq->alpha : 0;
  double s = 0;
  int64_t i = 0;
  while (len - i >= 32) {
    int64_t n = len - i < EG_SUM_F32_STRETCH ? (len - i) / 32 * 32 : EG_SUM_F32_STRETCH;
    float l0[8] = {0}, l1[8] = {0}, l2[8] = {0}, l3[8] = {0};
    const float *v = stretch_values(p + i, n, m, alpha, sq, buf);
    for (const float *q = v, *end = v + n; q < end; q += 32)
      for (int j = 0; j < 8; j++) {
        l0[j] += q[j];
        l1[j] += q[j + 8];
        l2[j] += q[j + 16];
        l3[j] += q[j + 24];
      }
    for (int j = 0; j < 8; j++) l0[j] = (l0[j] + l1[j]) + (l2[j] + l3[j]);
    s += ((l0[0] + l0[4]) + (l0[1] + l0[5])) + ((l0[2] + l0[6]) + (l0[3] + l0[7]));
    i += n;
  }
  const float *t = stretch_values(p + i, len - i, m, alpha, sq, buf);
  float tail = 0;
#pragma omp simd reduction(+ : tail)
  for (int64_t k = 0; k < len - i; k++) tail += t[k];
  acc[ai] += s + tail;
}

EG_SIMD_CLONES static void sum_run_f32(void *acc, int64_t ai, const void *x, int64_t xi,
                                       int64_t len) {
  sum_run_f32_body(acc, ai, (const float *)x + xi, len, NULL, 0);
}

EG_SIMD_CLONES static void sum_runs_f32(void *acc, int64_t ai, int64_t astride, const void *x,
                                        int64_t xi, int64_t len, int64_t count) {
  for (int64_t r = 0; r < count; r++)
    sum_run_f32_body(acc, ai + r * astride, (const float *)x + xi + r * len, len, NULL, 0);
}

/* A run of squared deviations from the mean of its accumulator: x is the sq_dev. */
EG_SIMD_CLONES static void sum_run_sq_dev_f32(void *acc, int64_t ai, const void *x, int64_t xi,
                                              int64_t len) {
  const sq_dev *sq = x;
  sum_run_f32_body(acc, ai, sq->x + xi, len, sq, sq->m[sq->per_acc ? ai : 0]);
}

EG_SIMD_CLONES static void sum_runs_sq_dev_f32(void *acc, int64_t ai, int64_t astride,
                                               const void *x, int64_t xi, int64_t len,
                                               int64_t count) {
  const sq_dev *sq = x;
  for (int64_t r = 0, a = ai; r < count; r++, a += astride)
    sum_run_f32_body(acc, a, sq->x + xi + r * len, len, sq, sq->m[sq->per_acc ? a : 0]);
}

/* float32: EG_SUM_ROW_BLOCK rows of a column strip summed in float, then into double. */
static void add_rows_f32(void *acc, int64_t ai, const void *x, int64_t xi, int64_t len,
                         int64_t rows, int64_t stride) {
  double *a = (double *)acc + ai;
  const float *p = (const float *)x + xi;
  for (int64_t c0 = 0; c0 < len; c0 += EG_SUM_COL_BLOCK) {
    const int64_t w = len - c0 < EG_SUM_COL_BLOCK ? len - c0 : EG_SUM_COL_BLOCK;
    for (int64_t r0 = 0; r0 < rows; r0 += EG_SUM_ROW_BLOCK) {
      const int64_t r1 = rows - r0 < EG_SUM_ROW_BLOCK ? rows : r0 + EG_SUM_ROW_BLOCK;
      float part[EG_SUM_COL_BLOCK];
      memcpy(part, p + r0 * stride + c0, (size_t)w * sizeof(float));
      for (int64_t r = r0 + 1; r < r1; r++) {
        const float *row = p + r * stride + c0;
#pragma omp simd
        for (int64_t j = 0; j < w; j++) part[j] += row[j];
      }
#pragma omp simd
      for (int64_t j = 0; j < w; j++) a[c0 + j] += part[j];
    }
  }
}

void eg_sum_geom_init(eg_sum_geom *g, int rank, const int64_t *shape, const bool *reduced) {
  memset(g, 0, sizeof *g);
  g->in_numel = g->out_numel = 1;
  for (int d = 0; d < rank; d++) {
    g->in_numel *= shape[d];
    if (!reduced[d]) g->out_numel *= shape[d];
    if (shape[d] == 1) continue; /* neither reduced nor kept changes anything */
    if (g->rank > 0 && g->reduced[g->rank - 1] == reduced[d]) {
      g->size[g->rank - 1] *= shape[d];
    } else {
      g->size[g->rank] = shape[d];
      g->reduced[g->rank] = reduced[d];
      g->rank++;
    }
  }
  int64_t stride = 1;
  for (int d = g->rank - 1; d >= 0; d--) {
    g->out_stride[d] = g->reduced[d] ? 0 : stride;
    if (!g->reduced[d]) stride *= g->size[d];
  }
}

static int64_t chunk_count(const eg_sum_geom *g) {
  return (g->size[0] + EG_SUM_CHUNK - 1) / EG_SUM_CHUNK;
}

static bool is_full_reduction(const eg_sum_geom *g) {
  return g->rank == 1 && g->reduced[0] && g->in_numel > 0;
}

size_t eg_sum_dense_scratch(const eg_sum_geom *g) {
  return is_full_reduction(g) ? (size_t)chunk_count(g) * 8 : 0;
}

/* [R]: fixed chunks summed in parallel into scratch, then combined in order. */
static void sum_all(const eg_sum_geom *g, const void *x, void *acc, void *scratch,
                    const sum_type *t) {
  const int64_t len = g->size[0], chunks = chunk_count(g);
  memset(scratch, 0, (size_t)chunks * 8);
  EG_OMP_FOR_IF(len >= EG_SUM_OMP_MIN, for (int64_t c = 0; c < chunks; c++) {
    int64_t at = c * EG_SUM_CHUNK;
    t->sum_run(scratch, c, x, at, len - at < EG_SUM_CHUNK ? len - at : EG_SUM_CHUNK);
  });
  t->acc_sum_run(acc, 0, scratch, 0, chunks);
}

/* [R, K]: every row adds into the same K accumulators; each thread owns an even share of the
 * columns (a column's sum is computed the same way whatever the split). */
static void sum_rows(const eg_sum_geom *g, const void *x, void *acc, const sum_type *t) {
  const int64_t rows = g->size[0], cols = g->size[1];
  /* shares rounded to whole lanes so every strip starts vector-aligned with the rows */
  EG_OMP_PARALLEL_IF(g->in_numel >= EG_SUM_OMP_MIN && cols >= 2 * EG_SUM_LANES, {
    const int64_t nt = omp_get_num_threads(), me = omp_get_thread_num();
    const int64_t lanes = (cols + EG_SUM_LANES - 1) / EG_SUM_LANES;
    int64_t k0 = lanes * me / nt * EG_SUM_LANES, k1 = lanes * (me + 1) / nt * EG_SUM_LANES;
    if (k1 > cols) k1 = cols;
    if (k1 > k0) t->add_rows(acc, k0, x, k0, k1 - k0, rows, cols);
  });
}

/* Odometer over groups [lo, hi): the current position's accumulator offset. */
typedef struct odometer {
  int lo, hi;
  int64_t idx[EG_MAX_RANK];
  int64_t off;
} odometer;

static void odo_reset(odometer *o, int lo, int hi) {
  o->lo = lo;
  o->hi = hi;
  o->off = 0;
  for (int d = lo; d < hi; d++) o->idx[d] = 0;
}

static void odo_step(odometer *o, const eg_sum_geom *g) {
  for (int d = o->hi - 1; d >= o->lo; d--) {
    o->off += g->out_stride[d];
    if (++o->idx[d] < g->size[d]) return;
    o->off -= g->out_stride[d] * g->size[d];
    o->idx[d] = 0;
  }
}

static int64_t prod(const eg_sum_geom *g, int lo, int hi) {
  int64_t p = 1;
  for (int d = lo; d < hi; d++) p *= g->size[d];
  return p;
}

/* Units (runs or [rows, len] blocks) under outer groups [0, outer) that include a kept group.
 * Each thread owns an even share of the positions of the largest kept outer group p and walks
 * the positions before p (a), its share of p (j) and the positions after p (b) in memory order.
 * Every accumulator receives its units in the same order whatever the split. */
static void sum_units(const eg_sum_geom *g, int outer, const void *x, void *acc,
                      const sum_type *t) {
  const int last = g->rank - 1;
  const bool runs = g->reduced[last];
  const int64_t len = g->size[last], rows = runs ? 1 : g->size[last - 1];
  const int64_t unit = len * rows;
  int p = -1;
  for (int d = 0; d < outer; d++)
    if (!g->reduced[d] && (p < 0 || g->size[d] > g->size[p])) p = d;
  const int64_t np = g->size[p], na = prod(g, 0, p), nb = prod(g, p + 1, outer);
  EG_OMP_PARALLEL_IF(g->in_numel >= EG_SUM_OMP_MIN && np > 1, {
    const int64_t nt = omp_get_num_threads(), me = omp_get_thread_num();
    const int64_t j0 = np * me / nt, j1 = np * (me + 1) / nt;
    odometer oa, ob;
    odo_reset(&oa, 0, p);
    for (int64_t a = 0; a < na && j1 > j0; a++, odo_step(&oa, g)) {
      if (runs && nb == 1 && t->sum_runs) { /* the share's runs are one stretch of x */
        t->sum_runs(acc, oa.off + j0 * g->out_stride[p], g->out_stride[p], x,
                    (a * np + j0) * unit, len, j1 - j0);
        continue;
      }
      for (int64_t j = j0; j < j1; j++) {
        odo_reset(&ob, p + 1, outer);
        for (int64_t b = 0; b < nb; b++, odo_step(&ob, g)) {
          int64_t xi = ((a * np + j) * nb + b) * unit;
          int64_t ai = oa.off + j * g->out_stride[p] + ob.off;
          if (runs) t->sum_run(acc, ai, x, xi, len);
          else t->add_rows(acc, ai, x, xi, len, rows, len);
        }
      }
    }
  });
}

static void sum_dense(const eg_sum_geom *g, const void *x, void *acc, void *scratch,
                      const sum_type *t) {
  if (g->out_numel > 0) memset(acc, 0, (size_t)g->out_numel * 8);
  if (g->in_numel == 0) return;
  if (g->rank == 0) {
    t->sum_run(acc, 0, x, 0, 1);
  } else if (g->rank == 1) {
    if (g->reduced[0]) sum_all(g, x, acc, scratch, t);
    else t->add_rows(acc, 0, x, 0, g->size[0], 1, g->size[0]);
  } else if (g->rank == 2 && g->reduced[0]) {
    sum_rows(g, x, acc, t);
  } else {
    /* innermost reduced: units are its runs; kept: [reduced, kept] blocks */
    sum_units(g, g->reduced[g->rank - 1] ? g->rank - 1 : g->rank - 2, x, acc, t);
  }
}

static const sum_type sum_f32 = {sum_run_f32, add_rows_f32, sum_run_f64, sum_runs_f32};
static const sum_type sum_f64 = {sum_run_f64, add_rows_f64, sum_run_f64, NULL};
static const sum_type sum_i64 = {sum_run_i64, add_rows_i64, sum_run_i64, NULL};
static const sum_type sum_i32 = {sum_run_i32, add_rows_i32, sum_run_i64, NULL};
static const sum_type sum_i8 = {sum_run_i8, add_rows_i8, sum_run_i64, NULL};
static const sum_type sum_u8 = {sum_run_u8, add_rows_u8, sum_run_i64, NULL};

void eg_sum_dense_f32(const eg_sum_geom *g, const float *x, double *acc, void *scratch) {
  sum_dense(g, x, acc, scratch, &sum_f32);
}
/* The innermost group is reduced (checked by the caller), so the driver hands out runs only,
 * each into its output element's accumulator (or, with one output element, a chunk's partial
 * sum); add_rows is never called. */
static const sum_type sum_sq_dev_f32 = {sum_run_sq_dev_f32, NULL, sum_run_f64,
                                        sum_runs_sq_dev_f32};

void eg_sum_sq_dev_f32(const eg_sum_geom *g, const float *x, const float *m, float alpha,
                       bool per_output, double *acc, void *scratch) {
  const sq_dev sq = {x, m, alpha, per_output && g->out_numel > 1};
  sum_dense(g, &sq, acc, scratch, &sum_sq_dev_f32);
}
void eg_sum_dense_f64(const eg_sum_geom *g, const double *x, double *acc, void *scratch) {
  sum_dense(g, x, acc, scratch, &sum_f64);
}
void eg_sum_dense_i64(const eg_sum_geom *g, const int64_t *x, int64_t *acc, void *scratch) {
  sum_dense(g, x, acc, scratch, &sum_i64);
}
void eg_sum_dense_i32(const eg_sum_geom *g, const int32_t *x, int64_t *acc, void *scratch) {
  sum_dense(g, x, acc, scratch, &sum_i32);
}
void eg_sum_dense_i8(const eg_sum_geom *g, const int8_t *x, int64_t *acc, void *scratch) {
  sum_dense(g, x, acc, scratch, &sum_i8);
}
void eg_sum_dense_u8(const eg_sum_geom *g, const uint8_t *x, int64_t *acc, void *scratch) {
  sum_dense(g, x, acc, scratch, &sum_u8);
}
