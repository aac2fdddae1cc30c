/* depthwise_conv2d_nhwc_f32.c — QNN DepthWiseConv2d, NHWC (contract in the header). */
#include "kernels/depthwise_conv2d_nhwc_f32.h"

#include <stdbool.h>

#include "kernels/parallel_nhwc_f32.h"
#include "kernels/vec8_nhwc_f32.h"
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

/* Output pixel (i, j), the output channels of input channels [c0, c_in) (out: the pixel's
 * first output channel). */
EG_SIMD_CLONES static void output_pixel(const eg_dwconv2d_nhwc_params *p, const float *img,
                                        const float *f, const float *bias, int64_t i, int64_t j,
                                        int64_t c0, float *out) {
  const int64_t co = p->c_in * p->mult;
  for (int64_t e = c0 * p->mult; e < co; e++) out[e] = bias ? bias[e] : 0.0f;
  for (int64_t a = 0; a < p->k_h; a++) {
    const int64_t yy = i * p->stride[0] - p->pad[0] + a * p->dilation[0];
    if (yy < 0 || yy >= p->h_in) continue;
    for (int64_t b = 0; b < p->k_w; b++) {
      const int64_t xx = j * p->stride[1] - p->pad[1] + b * p->dilation[1];
      if (xx < 0 || xx >= p->w_in) continue;
      tap_accumulate(img + (yy * p->w_in + xx) * p->c_in + c0,
                     f + (a * p->k_w + b) * co + c0 * p->mult, p->c_in - c0, p->mult,
                     out + c0 * p->mult);
    }
  }
}

/* Channels per register block and output pixels per block of the mult-1 rows. */
enum { EG_DW_BLOCK = 16, EG_DW_PIXELS = 4 };

/* Output pixels j..j+np-1 (np 1 to 4) of row i, channels [c0, c0 + 16), into yp (pixel q at
 * yp + q*c_in): the sums stay in registers over the taps and each filter vector serves the np
 * pixels; each is bias (or 0) plus the products of the taps inside the image in (a, b)
 * order, as output_pixel adds them. Without `edge` every tap's column is inside the image.
 * Inlined with constant np and edge into its caller's clone. */
static EG_V8_INLINE void vblock(const eg_dwconv2d_nhwc_params *p, const float *img,
                                const float *f, const float *bias, int64_t i, int64_t j,
                                int64_t c0, float *yp, const int np, const bool edge) {
  const int64_t c = p->c_in, sw = p->stride[1];
  eg_v8 acc[EG_DW_PIXELS][2];
  eg_v8_block_init(acc, np, bias ? bias + c0 : NULL);
  for (int64_t a = 0; a < p->k_h; a++) {
    const int64_t yy = i * p->stride[0] - p->pad[0] + a * p->dilation[0];
    if (yy < 0 || yy >= p->h_in) continue;
    const float *xr = img + yy * p->w_in * c + c0;
    for (int64_t b = 0; b < p->k_w; b++) {
      const int64_t x0 = j * sw - p->pad[1] + b * p->dilation[1];
      if (edge && (x0 < 0 || x0 >= p->w_in)) continue;
      eg_v8_block_tap(acc, np, f + (a * p->k_w + b) * c + c0, xr + x0 * c, sw * c);
    }
  }
  eg_v8_block_store(yp, c, acc, np);
}

/* Output row i of a mult-1 conv (img: its image): per full 16-channel block, 4-pixel blocks
 * where every tap's column is inside the image and one pixel at a time elsewhere; the
 * channels past the last full block by output_pixel. */
EG_SIMD_CLONES static void row_mult1(const eg_dwconv2d_nhwc_params *p, const float *img,
                                     const float *f, const float *bias, int64_t i, float *yr) {
  const int64_t c = p->c_in, full = c / EG_DW_BLOCK * EG_DW_BLOCK, sw = p->stride[1];
  /* interior columns [j0, j1): j*sw - pad_l >= 0 and j*sw - pad_l + (k_w-1)*dw < w_in */
  int64_t j0 = (p->pad[1] + sw - 1) / sw, j1 = p->w_out;
  if (j0 < 0) j0 = 0;
  const int64_t last = p->w_in - 1 + p->pad[1] - (p->k_w - 1) * p->dilation[1];
  if (last < 0) j1 = 0;
  else if (last / sw + 1 < j1) j1 = last / sw + 1;
  if (j0 > j1) j0 = j1 = 0;
  for (int64_t c0 = 0; c0 < full; c0 += EG_DW_BLOCK) {
    int64_t j = 0;
    for (; j < j0; j++) vblock(p, img, f, bias, i, j, c0, yr + j * c + c0, 1, true);
    for (; j + EG_DW_PIXELS <= j1; j += EG_DW_PIXELS)
      vblock(p, img, f, bias, i, j, c0, yr + j * c + c0, EG_DW_PIXELS, false);
    for (; j < p->w_out; j++) vblock(p, img, f, bias, i, j, c0, yr + j * c + c0, 1, true);
  }
  if (full < c)
    for (int64_t j = 0; j < p->w_out; j++) output_pixel(p, img, f, bias, i, j, full, yr + j * c);
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
    if (p->mult == 1) {
      row_mult1(p, img, filter, bias, i, y + t * p->w_out * co);
      continue;
    }
    for (int64_t j = 0; j < p->w_out; j++)
      output_pixel(p, img, filter, bias, i, j, 0, y + (t * p->w_out + j) * co);
  }
}
