/* pool_window_f32 — internal to the NCHW pooling kernels (max_pool2d_nchw_f32.c,
 * avg_pool2d_nchw_f32.c, adaptive_pool2d_nchw_f32.c): the loops over one window of one dense
 * plane that their forward and backward passes share. Not a public kernel interface.
 *
 * A window is rows h0, h0 + dh, ... < h1 and columns w0, w0 + dw, ... < w1 (steps >= 1; the
 * average pools step by 1) of a plane `wi` floats wide, already clipped to the plane. Elements
 * are visited in row-major order, which fixes the float rounding of sums and the tie-breaking
 * of maxima. Static inline: they run once per output element, too often for a call. */
#ifndef EG_KERNELS_POOL_WINDOW_F32_H
#define EG_KERNELS_POOL_WINDOW_F32_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Sum of the window (step 1) in float, row by row. */
static inline float eg_pool_window_sum(const float *plane, int64_t wi, int64_t h0, int64_t h1,
                                       int64_t w0, int64_t w1) {
  float sum = 0.0f;
  for (int64_t h = h0; h < h1; h++)
    for (int64_t w = w0; w < w1; w++) sum += plane[h * wi + w];
  return sum;
}

/* Adds g to every element of the window (step 1). */
static inline void eg_pool_window_add(float *plane, int64_t wi, int64_t h0, int64_t h1,
                                      int64_t w0, int64_t w1, float g) {
  for (int64_t h = h0; h < h1; h++)
    for (int64_t w = w0; w < w1; w++) plane[h * wi + w] += g;
}

/* take ? a : b without a branch (bit masks), so that a loop of unpredictable selects runs as
 * straight-line code in its scalar remainder too. */
static inline float eg_pool_select_f32(bool take, float a, float b) {
  uint32_t ua, ub;
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  const uint32_t mask = (uint32_t)0 - (uint32_t)take;
  const uint32_t r = (ua & mask) | (ub & ~mask);
  float out;
  memcpy(&out, &r, sizeof out);
  return out;
}
static inline int64_t eg_pool_select_i64(bool take, int64_t a, int64_t b) {
  const uint64_t mask = (uint64_t)0 - (uint64_t)take;
  return (int64_t)(((uint64_t)a & mask) | ((uint64_t)b & ~mask));
}

/* Maximum of the window (-inf when empty) and, in *best, its flat offset h*wi + w (h0*wi + w0
 * when empty): ties go to the first element, a NaN always wins (the last NaN), as ATen's. */
static inline float eg_pool_window_max(const float *plane, int64_t wi, int64_t h0, int64_t h1,
                                       int64_t dh, int64_t w0, int64_t w1, int64_t dw,
                                       int64_t *best) {
  float m = -INFINITY;
  int64_t b = h0 * wi + w0;
  for (int64_t h = h0; h < h1; h += dh)
    for (int64_t w = w0; w < w1; w += dw) {
      const int64_t at = h * wi + w;
      const float v = plane[at];
      const bool take = (v > m) | isnan(v); /* selects, not branches: maxima are unpredictable */
      m = eg_pool_select_f32(take, v, m);
      b = eg_pool_select_i64(take, at, b);
    }
  *best = b;
  return m;
}

#endif
