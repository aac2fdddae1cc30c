/* broadcast.c — strides of broadcast operands and the simplified walk (see broadcast.h). */
#include "kernels/broadcast.h"

#include <stdbool.h>

#ifdef _OPENMP
#include <omp.h>
#endif

void eg_broadcast_strides(const int64_t *shape, int rank, const int64_t *out, int out_rank,
                          int64_t *stride) {
  const int lead = out_rank - rank;
  int64_t step = 1;
  for (int d = out_rank - 1; d >= 0; d--) {
    if (d < lead) {
      stride[d] = 0;
      continue;
    }
    const int64_t extent = shape[d - lead];
    stride[d] = extent == 1 && out[d] != 1 ? 0 : step;
    step *= extent;
  }
}

void eg_iter_init(eg_iter *it, const int64_t *shape, int rank, int n_in,
                  const int64_t *const *stride) {
  it->n_in = n_in;
  it->numel = 1;
  for (int d = 0; d < rank; d++) it->numel *= shape[d];
  it->rank = 0;
  if (it->numel == 0) {
    it->rank = 1;
    it->shape[0] = 0;
    for (int i = 0; i < n_in; i++) it->stride[i][0] = 0;
    return;
  }
  /* Walk from the innermost dim outwards, appending to a reversed list, merging each dim into
   * the previous (inner) one when every input continues the same run. */
  int64_t rshape[EG_MAX_RANK], rstride[EG_ITER_MAX_IN][EG_MAX_RANK];
  int r = 0;
  for (int d = rank - 1; d >= 0; d--) {
    if (shape[d] == 1) continue;
    bool merge = r > 0;
    for (int i = 0; merge && i < n_in; i++)
      merge = stride[i][d] == rstride[i][r - 1] * rshape[r - 1];
    if (merge) {
      rshape[r - 1] *= shape[d];
      continue;
    }
    rshape[r] = shape[d];
    for (int i = 0; i < n_in; i++) rstride[i][r] = stride[i][d];
    r++;
  }
  if (r == 0) { /* a single element */
    rshape[0] = 1;
    for (int i = 0; i < n_in; i++) rstride[i][0] = 0;
    r = 1;
  }
  it->rank = r;
  for (int d = 0; d < r; d++) {
    it->shape[d] = rshape[r - 1 - d];
    for (int i = 0; i < n_in; i++) it->stride[i][d] = rstride[i][r - 1 - d];
  }
}

void eg_iter_row(const eg_iter *it, int64_t row, int64_t *idx, int64_t *off) {
  for (int i = 0; i < it->n_in; i++) off[i] = 0;
  for (int d = it->rank - 2; d >= 0; d--) {
    idx[d] = row % it->shape[d];
    row /= it->shape[d];
    for (int i = 0; i < it->n_in; i++) off[i] += idx[d] * it->stride[i][d];
  }
}

void eg_iter_blocks_init(eg_iter_blocks *b, const eg_iter *it, int64_t begin, int64_t end) {
  b->it = it;
  b->pos = begin;
  b->end = end;
  if (begin >= end) return;
  const int64_t inner = it->shape[it->rank - 1];
  b->col = begin % inner;
  eg_iter_row(it, begin / inner, b->idx, b->off);
}

bool eg_iter_blocks_next(eg_iter_blocks *b, int64_t *pos, int64_t *rows, int64_t *len,
                         int64_t *off) {
  if (b->pos >= b->end) return false;
  const eg_iter *it = b->it;
  const int last = it->rank - 1;
  const int64_t inner = it->shape[last];
  *pos = b->pos;
  *rows = 1;
  *len = inner - b->col < b->end - b->pos ? inner - b->col : b->end - b->pos;
  if (b->col == 0 && last > 0 && *len == inner) { /* whole rows: as many as the dim holds */
    const int64_t left = it->shape[last - 1] - b->idx[last - 1];
    const int64_t fit = (b->end - b->pos) / inner;
    *rows = left < fit ? left : fit;
  }
  for (int i = 0; i < it->n_in; i++) off[i] = b->off[i] + b->col * it->stride[i][last];
  b->pos += *rows * *len;
  b->col = 0;
  if (b->pos < b->end && last > 0) { /* to the block's last row, then on by one (with carries) */
    b->idx[last - 1] += *rows - 1;
    for (int i = 0; i < it->n_in; i++) b->off[i] += (*rows - 1) * it->stride[i][last - 1];
    eg_iter_next_row(it, b->idx, b->off);
  }
  return true;
}

void eg_iter_thread_span(int64_t total, int64_t *begin, int64_t *end) {
  int64_t nth = 1, tid = 0;
#ifdef _OPENMP
  nth = omp_get_num_threads();
  tid = omp_get_thread_num();
#endif
  const int64_t chunk = ((total + nth - 1) / nth + 15) / 16 * 16;
  *begin = tid * chunk < total ? tid * chunk : total;
  *end = *begin + chunk < total ? *begin + chunk : total;
}
