/* conv2d_nhwc_f32 — QNN Conv2d on NHWC activations and HWIO filters, fp32.
 *
 *   x [n, h_in, w_in, c_in], filter [k_h, k_w, c_in/groups, c_out], bias [c_out] or NULL,
 *   y [n, h_out, w_out, c_out]:
 *   y[n,i,j,co] = bias[co] + sum_{a,b,ci'} x[n, i*sh - pad_t + a*dh, j*sw - pad_l + b*dw,
 *                                           q*cig + ci'] * f[tap(a,b), ci', co]
 *   with q = co / (c_out/groups), cig = c_in/groups, x read as 0 outside its bounds, and
 *   tap(a,b) = (a, b), or (k_h-1-a, k_w-1-b) when `flip` is set (the filter rotated by 180
 *   degrees: a stride-1 TransposeConv2d is this with flip, see transpose_conv2d_nhwc_f32.h).
 *   The caller gives h_out/w_out; pads before the input may be negative (a crop), and the pad
 *   after is whatever h_out implies.
 *
 * Method: im2col + CBLAS sgemm (or, with `winograd`, Winograd F(2x2, 3x3)). Output pixels are processed in chunks; per chunk and group the
 * column matrix [pixels, k_h*k_w*cig] is gathered (contiguous runs of cig channels: NHWC makes
 * every row of the column matrix a few memcpy's) and multiplied by the filter, which in HWIO is
 * already the [k_h*k_w*cig, c_out] matrix sgemm wants (no copy). A 1x1/stride-1/unpadded conv
 * skips im2col. With filter_oi each tap's [c_out, c_in] block is sgemm's transposed B, one
 * sgemm per tap (K = c_in) into the same y. A grouped conv with one output channel per group
 * (c_out == groups > 1, depthwise-like) runs as a direct loop instead (no scratch). A kernel
 * at least as tall as the output (a weight gradient as a Conv2d: 32x32 kernel, 3x3 output)
 * gathers column-shifted bands of the input instead, each output pixel's column-matrix row a
 * contiguous run of them, and runs one sgemm per output row: its im2col would copy each input
 * row once per output row. Chunks keep the column matrix near cache size.
 *
 * Kernels know nothing about graphs and never allocate: ask for the scratch size once, pass a
 * buffer at least that large (64-byte aligned) on every call. Not re-entrant on one scratch. */
#ifndef EG_KERNELS_CONV2D_NHWC_F32_H
#define EG_KERNELS_CONV2D_NHWC_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eg_conv2d_nhwc_params {
  int64_t n, h_in, w_in, c_in;      /* x */
  int64_t h_out, w_out, c_out;      /* y */
  int64_t k_h, k_w;
  int64_t stride[2], dilation[2];   /* [h, w], each >= 1 */
  int64_t pad[2];                   /* zeros before the input [top, left]; may be negative */
  int64_t groups;                   /* divides c_in and c_out */
  bool flip;                        /* read the filter rotated by 180 degrees */
  bool filter_oi;                   /* groups 1 only: the filter is [k_h, k_w, c_out, c_in]
                                       (each tap's block transposed: the weight of the conv a
                                       TransposeConv2d is the input gradient of), read
                                       transposed by one sgemm per tap, never copied */
  bool filter_oihw;                 /* groups 1, no flip, no filter_oi: the filter is
                                       [c_out, c_in, k_h, k_w], the weight as PyTorch holds it
                                       (whose HWIO Transpose the executor then skips): the
                                       column matrix is gathered in (ci, tap) order and sgemm
                                       reads the filter transposed */
  bool y_cnhw;                      /* groups 1, no filter_oi: y is written [c_out, n, h_out,
                                       w_out] (the NHWC result with perm [3,0,1,2], e.g. a
                                       weight gradient in OIHW), by sgemm computing the
                                       transposed product */
  bool winograd;                    /* run by Winograd F(2x2, 3x3) (winograd_nhwc_f32.h): only
                                       where eg_conv2d_nhwc_f32_takes_winograd; the filter is
                                       transformed on every call */
  int64_t chunk_bytes;              /* target bytes of one column-matrix chunk; 0: 2 MiB. Pass
                                       the same value to _scratch and the kernel (e.g.
                                       eg_nhwc_chunk_bytes() fixed at plan time) */
  int threads;                      /* threads the row-band method may run bands side by side
                                       on, each band whole on one thread with a band matrix of
                                       its own, where a band's products are too small for the
                                       sgemm to split (0 or 1: one after another; the same sums
                                       either way). Pass the same value to _scratch and the
                                       kernel (e.g. omp_get_max_threads() at plan time) */
} eg_conv2d_nhwc_params;

/* Bytes of scratch eg_conv2d_nhwc_f32 needs for these parameters (may be 0). */
size_t eg_conv2d_nhwc_f32_scratch(const eg_conv2d_nhwc_params *p);

/* Whether p may set filter_oi: groups 1. */
bool eg_conv2d_nhwc_f32_takes_filter_oi(const eg_conv2d_nhwc_params *p);
/* Whether p (filter_oi, flip and winograd unset) may set filter_oihw, and y_cnhw: groups 1. */
bool eg_conv2d_nhwc_f32_takes_oihw(const eg_conv2d_nhwc_params *p);
/* Whether p may set winograd: 3x3, stride 1, dilation 1, groups 1, none of flip, filter_oi,
 * filter_oihw, y_cnhw. */
bool eg_conv2d_nhwc_f32_takes_winograd(const eg_conv2d_nhwc_params *p);
/* Whether p takes winograd and it pays: both channel counts and the output tiles numerous
 * enough (see the .c). */
bool eg_conv2d_nhwc_f32_winograd_pays(const eg_conv2d_nhwc_params *p);

/* y = conv(x, filter) + bias; y is fully overwritten. */
void eg_conv2d_nhwc_f32(const eg_conv2d_nhwc_params *p, const float *x, const float *filter,
                        const float *bias, float *y, void *scratch);

#endif
