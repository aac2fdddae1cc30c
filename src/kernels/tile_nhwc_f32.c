/* tile_nhwc_f32.c — QNN Tile (contract in tile_nhwc_f32.h). */
#include "kernels/tile_nhwc_f32.h"

#include <string.h>

/* Tiles the block of x at dim d (x_at, elements dims[d..]) into the block of y at y_at
 * (elements dims[e] * multiples[e] for e >= d); `x_block[d]` and `y_block[d]` are the element
 * counts of one index of dim d in x and in y. */
static void tile_dim(int rank, int d, const int64_t *dims, const int64_t *multiples,
                     const int64_t *x_block, const int64_t *y_block, const uint32_t *x_at,
                     uint32_t *y_at) {
  uint32_t *y0 = y_at;
  if (d == rank - 1) {
    memcpy(y_at, x_at, (size_t)dims[d] * sizeof *y_at);
  } else {
    for (int64_t i = 0; i < dims[d]; i++)
      tile_dim(rank, d + 1, dims, multiples, x_block, y_block, x_at + i * x_block[d],
               y_at + i * y_block[d]);
  }
  const size_t once = (size_t)(dims[d] * y_block[d]);
  for (int64_t k = 1; k < multiples[d]; k++) memcpy(y0 + (size_t)k * once, y0, once * sizeof *y0);
}

void eg_tile_nhwc_f32(int rank, const int64_t *dims, const int64_t *multiples, const void *x,
                      void *y) {
  int64_t x_block[EG_TILE_MAX_RANK], y_block[EG_TILE_MAX_RANK];
  x_block[rank - 1] = y_block[rank - 1] = 1;
  for (int d = rank - 2; d >= 0; d--) {
    x_block[d] = x_block[d + 1] * dims[d + 1];
    y_block[d] = y_block[d + 1] * dims[d + 1] * multiples[d + 1];
  }
  tile_dim(rank, 0, dims, multiples, x_block, y_block, x, y);
}
