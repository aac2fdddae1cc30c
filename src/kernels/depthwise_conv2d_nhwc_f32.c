/* depthwise_conv2d_nhwc_f32.c — QNN DepthWiseConv2d, NHWC (contract in the header). */
#include "kernels/depthwise_conv2d_nhwc_f32.h"

#include "kernels/parallel_nhwc_f32.h"
#include "util/simd.h"

/* out[co] += x_pixel[co / mult] * w[co] for every output channel. */
static void tap_accumulate(const float *restrict xp, const float *restrict w, int64_t c_in,
                           int64_t mult, float *restrict out) {
  if (mult == 1) {
#pragma omp simd
    for (int64_t e = 0; e < c_in; e++) out[e] += xp[e] * w[e];
    return;
  }
  for (int64_t c = 0; c < c_in; c++)
    for (int64_t m = 0; m < mult; m++) out[c * mult + m] += xp[c] * w[c * mult + m];
}

EG_SIMD_CLONES static void output_pixel(const eg_dwconv2d_nhwc_params *p, const float *img, const float *f,
                         const float *bias, int64_t i, int64_t j, float *out) {
  const int64_t co = p->c_in * p->mult;
  for (int64_t e = 0; e < co; e++) out[e] = bias ? bias[e] : 0.0f;
  for (int64_t a = 0; a < p->k_h; a++) {
    const int64_t yy = i * p->stride[0] - p->pad[0] + a * p->dilation[0];
    if (yy < 0 || yy >= p->h_in) continue;
    for (int64_t b = 0; b < p->k_w; b++) {
      const int64_t xx = j * p->stride[1] - p->pad[1] + b * p->dilation[1];
      if (xx < 0 || xx >= p->w_in) continue;
      tap_accumulate(img + (yy * p->w_in + xx) * p->c_in, f + (a * p->k_w + b) * co, p->c_in,
                     p->mult, out);
    }
  }
}

EG_SIMD_CLONES
void eg_depthwise_conv2d_nhwc_f32(const eg_dwconv2d_nhwc_params *p, const float *x,
                                  const float *filter, const float *bias, float *y) {
  const int64_t rows = p->n * p->h_out, co = p->c_in * p->mult;
#pragma omp parallel for schedule(static) \
    if (eg_nhwc_omp_worth(rows * p->w_out * co * p->k_h * p->k_w))
  for (int64_t t = 0; t < rows; t++) {
    const int64_t n = t / p->h_out, i = t % p->h_out;
    const float *img = x + n * p->h_in * p->w_in * p->c_in;
    for (int64_t j = 0; j < p->w_out; j++)
      output_pixel(p, img, filter, bias, i, j, y + (t * p->w_out + j) * co);
  }
}
