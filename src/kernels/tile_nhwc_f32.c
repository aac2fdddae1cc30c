/* tile_nhwc_f32.c — QNN Tile (contract in tile_nhwc_f32.h). */
#include "kernels/tile_nhwc_f32.h"

#include <string.h>

#include "util/simd.h"

/* y0[0, once) repeated to fill y0[0, once * m). One element: a fill; a few: element by
 * element; more: by doubling, each memcpy copying everything written so far (or what is
 * left), log2(m) calls rather than m - 1. Small blocks are the common case (a per-channel value
 * expanded over a plane: [n, c, 1, 1] -> [n, c, h, w]), and a call per copy of a few bytes
 * costs more than the copy. */
EG_KEEP_LOOPS static void repeat_block(uint32_t *y0, size_t once, int64_t m) {
  const size_t total = once * (size_t)m;
  if (once == 1) {
    const uint32_t v = y0[0];
    for (size_t j = 1; j < total; j++) y0[j] = v;
    return;
  }
  if (total <= 64) {
    for (size_t j = once; j < total; j++) y0[j] = y0[j - once];
    return;
  }
  for (size_t have = once; have < total;) {
    const size_t n = have < total - have ? have : total - have;
    memcpy(y0 + have, y0, n * sizeof *y0);
    have += n;
  }
}

/* Tiles the block of x at dim d (x_at, elements dims[d..]) into the block of y at y_at
 * (elements dims[e] * multiples[e] for e >= d); `x_block[d]` and `y_block[d]` are the element
 * counts of one index of dim d in x and in y. */
EG_KEEP_LOOPS static void tile_dim(int rank, int d, const int64_t *dims, const int64_t *multiples,
                     const int64_t *x_block, const int64_t *y_block, const uint32_t *x_at,
                     uint32_t *y_at) {
  uint32_t *y0 = y_at;
  if (d == rank - 1) {
    for (int64_t i = 0; i < dims[d]; i++) y_at[i] = x_at[i];
  } else {
    for (int64_t i = 0; i < dims[d]; i++)
      tile_dim(rank, d + 1, dims, multiples, x_block, y_block, x_at + i * x_block[d],
               y_at + i * y_block[d]);
  }
  repeat_block(y0, (size_t)(dims[d] * y_block[d]), multiples[d]);
}

void eg_tile_nhwc_f32(int rank, const int64_t *dims, const int64_t *multiples, const void *x,
                      void *y) {
  /* merged dims: a dim of multiple 1 joins the one before it (its elements stay together in
   * every copy of that one), and so does a dim of 1 after a dim of 1 (their copies are of one
   * element): [8, 96, 1, 1] by [1, 1, 32, 32] (expand's broadcast of a per-channel value over
   * a plane) is [768, 1] by [1, 1024] */
  int64_t md[EG_TILE_MAX_RANK], mm[EG_TILE_MAX_RANK];
  int r = 0;
  for (int d = 0; d < rank; d++) {
    if (r > 0 && multiples[d] == 1) {
      md[r - 1] *= dims[d];
    } else if (r > 0 && dims[d] == 1 && md[r - 1] == 1) {
      mm[r - 1] *= multiples[d];
    } else {
      md[r] = dims[d];
      mm[r++] = multiples[d];
    }
  }
  int64_t x_block[EG_TILE_MAX_RANK], y_block[EG_TILE_MAX_RANK];
  x_block[r - 1] = y_block[r - 1] = 1;
  for (int d = r - 2; d >= 0; d--) {
    x_block[d] = x_block[d + 1] * md[d + 1];
    y_block[d] = y_block[d + 1] * md[d + 1] * mm[d + 1];
  }
  tile_dim(r, 0, md, mm, x_block, y_block, x, y);
}
