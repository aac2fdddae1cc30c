/* convolution_nchw_f32 — portable CPU kernels for aten.convolution and
 * aten.convolution_backward, 2-D, NCHW activations, fp32.
 *
 * Semantics are ATen's. Shapes (g = groups):
 *   transposed == false:  x [N, Cin, H, W], w [Cout, Cin/g, kH, kW], y [N, Cout, Ho, Wo],
 *       Ho = (H + 2*pad_h - dil_h*(kH-1) - 1) / stride_h + 1
 *   transposed == true:   x [N, Cin, H, W], w [Cin, Cout/g, kH, kW], y [N, Cout, Ho, Wo],
 *       Ho = (H-1)*stride_h - 2*pad_h + dil_h*(kH-1) + output_padding_h + 1
 * In both cases `c_in`/`h_in`/`w_in` describe x (the op's input) and `c_out`/`h_out`/`w_out`
 * describe y (the op's output); bias has c_out elements.
 *
 * Kernels know nothing about graphs. They never allocate: the caller asks for the scratch size
 * once (at planning time) and passes a buffer at least that large on every call. They may use
 * OpenMP and the CBLAS sgemm's own threads; they are not re-entrant on one scratch buffer.
 * Scratch needs float alignment only (64 bytes is best); its contents on entry do not matter.
 *
 * Threading: sgemm is never called from inside a parallel region. The kernels' own loops
 * (im2col, col2im, depthwise taps) use OpenMP when OpenBLAS is an OpenMP build, which shares
 * libgomp's thread pool; with a pthreads OpenBLAS they stay serial, because libgomp's idle
 * threads would spin on the cores sgemm is using (2 cores, r18-l1 input gradient: 42 GFLOP/s
 * threaded vs 117 serial; 147 with the OpenMP OpenBLAS). Matrix sizes must fit in an int. */
#ifndef EG_KERNELS_CONVOLUTION_NCHW_F32_H
#define EG_KERNELS_CONVOLUTION_NCHW_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eg_conv2d_params {
  int64_t n;                     /* batch */
  int64_t c_in, h_in, w_in;      /* x: [n, c_in, h_in, w_in] */
  int64_t c_out, h_out, w_out;   /* y: [n, c_out, h_out, w_out] */
  int64_t k_h, k_w;              /* kernel spatial size */
  int64_t stride[2], padding[2], dilation[2], output_padding[2]; /* [h, w] */
  int64_t groups;
  bool transposed;
} eg_conv2d_params;

/* Bytes of scratch the forward kernel needs for these parameters (0 is allowed). */
size_t eg_convolution_nchw_f32_scratch(const eg_conv2d_params *p);

/* y = conv(x, w) + bias. `bias` may be NULL. */
void eg_convolution_nchw_f32(const eg_conv2d_params *p, const float *x, const float *w,
                             const float *bias, float *y, void *scratch);

/* What the kernel derives from w alone on every call (the flipped weights of a stride-1
 * transposed conv, the Winograd filter transform), made once for a weight whose bytes do not
 * change between calls: its bytes (0: nothing; a buffer needs float alignment, 64 bytes is
 * best), and `prepared` filled from w. */
size_t eg_convolution_nchw_f32_prepared_bytes(const eg_conv2d_params *p);
void eg_convolution_nchw_f32_prepare(const eg_conv2d_params *p, const float *w, void *prepared);

/* eg_convolution_nchw_f32 with `prepared`: NULL (the call derives what it needs in scratch), or
 * what eg_convolution_nchw_f32_prepare made from these bytes of w. The result is the same bit
 * for bit. */
void eg_convolution_nchw_f32_prepared(const eg_conv2d_params *p, const float *x, const float *w,
                                      const void *prepared, const float *bias, float *y,
                                      void *scratch);

/* Bytes of scratch the backward kernel needs for these parameters and mask. */
size_t eg_convolution_backward_nchw_f32_scratch(const eg_conv2d_params *p, const bool mask[3]);

/* Gradients of y = conv(x, w) + bias given gy = dL/dy (shape of y):
 *   gx [shape of x] if mask[0], gw [shape of w] if mask[1], gb [c_out] if mask[2].
 * Pointers for masked-off outputs are ignored (may be NULL); outputs asked for are fully
 * overwritten (never accumulated into). */
void eg_convolution_backward_nchw_f32(const eg_conv2d_params *p, const bool mask[3],
                                      const float *gy, const float *x, const float *w,
                                      float *gx, float *gw, float *gb, void *scratch);

/* What the backward kernel derives from w alone (for gx), as for the forward kernel. */
size_t eg_convolution_backward_nchw_f32_prepared_bytes(const eg_conv2d_params *p,
                                                       const bool mask[3]);
void eg_convolution_backward_nchw_f32_prepare(const eg_conv2d_params *p, const bool mask[3],
                                              const float *w, void *prepared);
void eg_convolution_backward_nchw_f32_prepared(const eg_conv2d_params *p, const bool mask[3],
                                               const float *gy, const float *x, const float *w,
                                               const void *prepared, float *gx, float *gw,
                                               float *gb, void *scratch);

#endif
