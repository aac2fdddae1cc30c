/* pool2d_nhwc_f32.c — max and average pooling, NHWC (contract in the header). One output row
 * per parallel task; the channel loop is innermost and contiguous. */
#include "kernels/pool2d_nhwc_f32.h"

#include "kernels/parallel_nhwc_f32.h"
#include "util/parallel.h"
#include "util/simd.h"

typedef struct window {
  int64_t y0, y1, x0, x1;         /* clipped to the input */
  int64_t count_padded;           /* positions inside the padded extent */
} window;

static int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static window window_of(const eg_pool2d_nhwc_params *p, int64_t i, int64_t j) {
  const int64_t ys = i * p->stride[0] - p->pad[0][0], xs = j * p->stride[1] - p->pad[1][0];
  const int64_t ye = ys + p->k[0], xe = xs + p->k[1];
  const int64_t py = clamp(ye, -p->pad[0][0], p->h_in + p->pad[0][1]) - ys;
  const int64_t px = clamp(xe, -p->pad[1][0], p->w_in + p->pad[1][1]) - xs;
  return (window){clamp(ys, 0, p->h_in), clamp(ye, 0, p->h_in), clamp(xs, 0, p->w_in),
                  clamp(xe, 0, p->w_in), py * px};
}

/* The pixel helpers are inlined into the cloned entry points (vectorised for the clone's
 * instruction set); the max is a branch-free select over the channels (a `||` and no restrict
 * kept it scalar: ResNet-18's 3x3/2 stem pool, 8x64x32x32, took 2.35 ms). */
#define EG_POOL_INLINE static inline __attribute__((always_inline))

EG_POOL_INLINE void max_pixel(const eg_pool2d_nhwc_params *p, const float *img, const window *w,
                              float *restrict out) {
  const int64_t c = p->c;
  for (int64_t e = 0; e < c; e++) out[e] = -__builtin_inff();
  for (int64_t y = w->y0; y < w->y1; y++)
    for (int64_t x = w->x0; x < w->x1; x++) {
      const float *restrict src = img + (y * p->w_in + x) * c;
#pragma omp simd
      for (int64_t e = 0; e < c; e++) {
        const float v = src[e], m = out[e];
        out[e] = ((v > m) | (v != v)) ? v : m; /* NaN wins, as in PyTorch */
      }
    }
}

EG_POOL_INLINE void avg_pixel(const eg_pool2d_nhwc_params *p, const float *img, const window *w,
                              float *restrict out) {
  const int64_t c = p->c;
  const int64_t count = p->count_pad ? w->count_padded : (w->y1 - w->y0) * (w->x1 - w->x0);
  for (int64_t e = 0; e < c; e++) out[e] = 0.0f;
  for (int64_t y = w->y0; y < w->y1; y++)
    for (int64_t x = w->x0; x < w->x1; x++) {
      const float *src = img + (y * p->w_in + x) * c;
#pragma omp simd
      for (int64_t e = 0; e < c; e++) out[e] += src[e];
    }
  const float inv = 1.0f / (float)(count > 0 ? count : 1);
#pragma omp simd
  for (int64_t e = 0; e < c; e++) out[e] *= inv;
}

EG_POOL_INLINE void pool(const eg_pool2d_nhwc_params *p, const float *x, float *y, bool is_max) {
  const int64_t rows = p->n * p->h_out;
  const bool worth = eg_nhwc_omp_worth(rows * p->w_out * p->c * p->k[0] * p->k[1]);
  EG_OMP_FOR_IF(worth, for (int64_t t = 0; t < rows; t++) {
    const int64_t n = t / p->h_out, i = t % p->h_out;
    const float *img = x + n * p->h_in * p->w_in * p->c;
    for (int64_t j = 0; j < p->w_out; j++) {
      const window w = window_of(p, i, j);
      float *out = y + (t * p->w_out + j) * p->c;
      if (is_max)
        max_pixel(p, img, &w, out);
      else
        avg_pixel(p, img, &w, out);
    }
  });
}

EG_SIMD_CLONES
void eg_max_pool2d_nhwc_f32(const eg_pool2d_nhwc_params *p, const float *x, float *y) {
  pool(p, x, y, true);
}

EG_SIMD_CLONES
void eg_avg_pool2d_nhwc_f32(const eg_pool2d_nhwc_params *p, const float *x, float *y) {
  pool(p, x, y, false);
}
