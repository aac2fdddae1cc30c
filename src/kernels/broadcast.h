/* broadcast — the index logic shared by the elementwise and copy kernels: how to walk a dense,
 * C-ordered output while reading up to EG_ITER_MAX_IN inputs through arbitrary element strides
 * (0 along a broadcast dim, permuted strides for a transpose).
 *
 * An eg_iter describes the walk after simplification: dims of extent 1 are dropped and adjacent
 * dims are merged wherever every input steps through them as one run (stride[d] ==
 * stride[d+1] * shape[d+1]), since the output always does. What remains is short: same-shape
 * operands become one flat dim, a per-channel [1,C,1,1] against [N,C,H,W] becomes
 * [N, C, H*W] with the channel operand's inner stride 0. Kernels loop over "rows" (every dim but
 * the last) and run a tight inner loop over the last dim, specialised on the inner strides.
 *
 * Invariant after eg_iter_init: rank >= 1 and every shape[d] >= 1, unless numel == 0 (then
 * rank == 1, shape[0] == 0). Strides are in elements. */
#ifndef EG_KERNELS_BROADCAST_H
#define EG_KERNELS_BROADCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "edgegrad.h"

#define EG_ITER_MAX_IN 3 /* where's condition, self and other */

typedef struct eg_iter {
  int rank;
  int n_in;
  int64_t numel;                               /* product of shape */
  int64_t shape[EG_MAX_RANK];                  /* output extent per dim */
  int64_t stride[EG_ITER_MAX_IN][EG_MAX_RANK]; /* input element strides per dim */
} eg_iter;

/* Element strides with which a dense C-ordered tensor of `shape` (rank `rank`) is read as the
 * broadcast output shape `out` (rank `out_rank` >= rank, NumPy's trailing alignment): the
 * tensor's own contiguous stride, or 0 where its extent is 1 or the dim is new. The shapes must
 * broadcast (the caller checked). */
void eg_broadcast_strides(const int64_t *shape, int rank, const int64_t *out, int out_rank,
                          int64_t *stride);

/* Builds the simplified walk over output shape `shape` (rank `rank`, 0 allowed) for `n_in`
 * inputs read with strides `stride[i]` (each `rank` long). */
void eg_iter_init(eg_iter *it, const int64_t *shape, int rank, int n_in,
                  const int64_t *const *stride);

/* Input element offsets of output row `row` (a row is one run of the last dim, rows counted in
 * C order over the other dims); idx gets its multi-index over dims [0, rank-1). */
void eg_iter_row(const eg_iter *it, int64_t row, int64_t *idx, int64_t *off);

/* [*begin, *end): the part of the flat output range [0, total) that the calling OpenMP thread
 * walks when a parallel region splits it evenly (all of it outside a parallel region). Shares
 * are multiples of 16 elements so that threads do not share output cache lines; trailing
 * threads may get an empty range. */
void eg_iter_thread_span(int64_t total, int64_t *begin, int64_t *end);

/* A walk over the output elements [begin, end) in blocks of whole rows: a block is `rows` rows
 * that follow one another along dim rank-2 (input i's row stride eg_iter_row_stride(it, i)),
 * written one after another; a part row (where begin or end cuts one) is a block of its own.
 * Kernels run one inner loop per block, so that short rows (a per-channel operand on a 2x2
 * plane: rows of 4) cost a loop each, not a call each. */
typedef struct eg_iter_blocks {
  const eg_iter *it;
  int64_t pos, end, col;
  int64_t idx[EG_MAX_RANK], off[EG_ITER_MAX_IN];
} eg_iter_blocks;

void eg_iter_blocks_init(eg_iter_blocks *b, const eg_iter *it, int64_t begin, int64_t end);

/* The next block, false after the last: *pos its first output element, *rows rows of *len
 * elements (*rows > 1 only when *len is the whole row), off[i] input i's element offset of
 * its first element. */
bool eg_iter_blocks_next(eg_iter_blocks *b, int64_t *pos, int64_t *rows, int64_t *len,
                         int64_t *off);

/* Input i's element stride from one row to the next within a block (0 for a rank-1 walk). */
static inline int64_t eg_iter_row_stride(const eg_iter *it, int i) {
  return it->rank > 1 ? it->stride[i][it->rank - 2] : 0;
}

/* Advances idx/off from one row to the next (C order). */
static inline void eg_iter_next_row(const eg_iter *it, int64_t *idx, int64_t *off) {
  for (int d = it->rank - 2; d >= 0; d--) {
    for (int i = 0; i < it->n_in; i++) off[i] += it->stride[i][d];
    if (++idx[d] < it->shape[d]) return;
    for (int i = 0; i < it->n_in; i++) off[i] -= it->stride[i][d] * it->shape[d];
    idx[d] = 0;
  }
}

#endif
