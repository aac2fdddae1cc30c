/* strided_copy.c — the N-d strided element copy (see strided_copy.h). */
#include "kernels/strided_copy.h"

#include <stdbool.h>
#include <string.h>

#include "util/parallel.h"

/* Copies at or above this many bytes are split across threads. */
#define EG_COPY_PARALLEL_BYTES ((int64_t)1 << 20)
#define EG_COPY_MAX_CHUNKS 64

void eg_dense_strides(const int64_t *shape, int rank, int64_t *stride) {
  int64_t step = 1;
  for (int d = rank - 1; d >= 0; d--) {
    stride[d] = step;
    step *= shape[d];
  }
}

typedef struct walk {
  int rank;                          /* >= 1 */
  int64_t shape[EG_COPY_MAX_RANK];
  int64_t ds[EG_COPY_MAX_RANK], ss[EG_COPY_MAX_RANK];
} walk;

/* Drops extent-1 dims and merges a dim into its inner neighbour when both sides continue the
 * same run. Returns false when the box is empty. */
static bool simplify(const eg_strided_copy_params *p, walk *w) {
  int64_t rshape[EG_COPY_MAX_RANK], rds[EG_COPY_MAX_RANK], rss[EG_COPY_MAX_RANK];
  int r = 0;
  for (int d = p->rank - 1; d >= 0; d--) {
    if (p->shape[d] == 0) return false;
    if (p->shape[d] == 1) continue;
    if (r > 0 && p->dst_stride[d] == rds[r - 1] * rshape[r - 1] &&
        p->src_stride[d] == rss[r - 1] * rshape[r - 1]) {
      rshape[r - 1] *= p->shape[d];
      continue;
    }
    rshape[r] = p->shape[d];
    rds[r] = p->dst_stride[d];
    rss[r] = p->src_stride[d];
    r++;
  }
  if (r == 0) { /* a single element */
    rshape[0] = 1;
    rds[0] = rss[0] = 1;
    r = 1;
  }
  w->rank = r;
  for (int d = 0; d < r; d++) {
    w->shape[d] = rshape[r - 1 - d];
    w->ds[d] = rds[r - 1 - d];
    w->ss[d] = rss[r - 1 - d];
  }
  return true;
}

/* One run of the innermost dim. The fixed-size memcpy calls compile to plain moves, without
 * the type punning a cast to an integer pointer would be. */
#define EG_COPY_ROW_SIZED(size)                                                   \
  for (int64_t i = 0; i < n; i++)                                                 \
    memcpy(d + i * ds * (size), s + i * ss * (size), (size))

static void copy_row(char *d, const char *s, int64_t n, int64_t ds, int64_t ss, size_t es) {
  if (ds == 1 && ss == 1) {
    memcpy(d, s, (size_t)n * es);
    return;
  }
  switch (es) {
  case 1: EG_COPY_ROW_SIZED(1); break;
  case 2: EG_COPY_ROW_SIZED(2); break;
  case 4: EG_COPY_ROW_SIZED(4); break;
  case 8: EG_COPY_ROW_SIZED(8); break;
  default:
    for (int64_t i = 0; i < n; i++)
      memcpy(d + i * ds * (int64_t)es, s + i * ss * (int64_t)es, es);
  }
}

/* Offsets (elements) and outer multi-index of row `row` (rows in C order over dims 0..rank-2). */
static void row_start(const walk *w, int64_t row, int64_t *idx, int64_t *doff, int64_t *soff) {
  *doff = *soff = 0;
  for (int d = w->rank - 2; d >= 0; d--) {
    idx[d] = row % w->shape[d];
    row /= w->shape[d];
    *doff += idx[d] * w->ds[d];
    *soff += idx[d] * w->ss[d];
  }
}

static void next_row(const walk *w, int64_t *idx, int64_t *doff, int64_t *soff) {
  for (int d = w->rank - 2; d >= 0; d--) {
    *doff += w->ds[d];
    *soff += w->ss[d];
    if (++idx[d] < w->shape[d]) return;
    *doff -= w->ds[d] * w->shape[d];
    *soff -= w->ss[d] * w->shape[d];
    idx[d] = 0;
  }
}

void eg_strided_copy(void *dst, const void *src, const eg_strided_copy_params *p) {
  walk w;
  if (!simplify(p, &w)) return;
  const int last = w.rank - 1;
  const int64_t n = w.shape[last], ds = w.ds[last], ss = w.ss[last];
  const int64_t es = (int64_t)p->elsize;
  int64_t rows = 1;
  for (int d = 0; d < last; d++) rows *= w.shape[d];
  int64_t chunks = 1;
  if (rows > 1 && rows * n * es >= EG_COPY_PARALLEL_BYTES)
    chunks = rows < EG_COPY_MAX_CHUNKS ? rows : EG_COPY_MAX_CHUNKS;
  char *d0 = dst;
  const char *s0 = src;
  EG_OMP_FOR_IF(chunks > 1, for (int64_t c = 0; c < chunks; c++) {
    const int64_t r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
    int64_t idx[EG_COPY_MAX_RANK], doff, soff;
    row_start(&w, r0, idx, &doff, &soff);
    for (int64_t r = r0; r < r1; r++) {
      copy_row(d0 + doff * es, s0 + soff * es, n, ds, ss, p->elsize);
      next_row(&w, idx, &doff, &soff);
    }
  });
}
