/* resize_nchw_f32 — portable CPU kernels for aten.upsample_bilinear2d, aten.upsample_nearest2d
 * and their backwards, NCHW fp32.
 *
 * Layout: x / gx are `planes` (N*C) dense planes of h_in x w_in; y / gy planes of
 * h_out x w_out; all four sizes >= 1 (planes >= 0).
 *
 * Coordinates are ATen's (aten/src/ATen/native/UpSample.h), each dim on its own, in float as
 * ATen computes them for fp32 tensors:
 *   ratio      align_corners: (in - 1) / (out - 1), 0 when out == 1;
 *              else 1 / scale where a scale was given (scale_h / scale_w > 0; the scale need
 *              not reproduce out), else in / out.
 *   bilinear   out == in: a copy (whatever the ratio). Else the source coordinate is
 *              ratio * dst (align_corners) or max(ratio * (dst + 0.5) - 0.5, 0); it is taken
 *              between rows i0 = min(floor(src), in - 1) and i1 = min(i0 + 1, in - 1) with
 *              weight l1 = clamp(src - i0, 0, 1) on i1, 1 - l1 on i0 (PyTorch 2's guard: a
 *              scale that does not reproduce out may put src past the last row).
 *   nearest    out == in: dst; out == 2 * in: dst / 2 (ATen's exact cases, whatever the
 *              scale); else min(floor(dst * ratio), in - 1) with ratio = 1 / scale or in / out.
 *              (PyTorch 2's rule, forward and backward alike; PyTorch 1.13's forward takes the
 *              exact cases only for a single-channel input, its backward always.)
 * The backwards scatter-add gy with the forward's weights into gx, which they zero first, in
 * a fixed order (plane by plane, output rows and columns ascending), so results do not depend
 * on threads. Planes run in parallel (OpenMP). The per-dim source indices and weights are
 * computed once per call into `scratch` (eg_resize_scratch_bytes). Kernels know nothing about
 * graphs and never allocate. */
#ifndef EG_KERNELS_RESIZE_NCHW_F32_H
#define EG_KERNELS_RESIZE_NCHW_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eg_resize_params {
  int64_t planes;          /* N*C */
  int64_t h_in, w_in;      /* x plane, each >= 1 */
  int64_t h_out, w_out;    /* y plane, each >= 1 */
  bool align_corners;      /* bilinear only */
  double scale_h, scale_w; /* the scale factors ATen was given, > 0; 0: none (in / out) */
} eg_resize_params;

/* Bytes of scratch the bilinear (`bilinear`) or nearest kernels of `p` need (64-byte aligned). */
size_t eg_resize_scratch_bytes(const eg_resize_params *p, bool bilinear);

/* y = bilinear interpolation of x. */
void eg_upsample_bilinear2d_nchw_f32(const eg_resize_params *p, const float *x, float *y,
                                     void *scratch);
/* gx = 0; gx[i0/i1 rows, i0/i1 columns] += weights * gy. gx is fully overwritten. */
void eg_upsample_bilinear2d_backward_nchw_f32(const eg_resize_params *p, const float *gy,
                                              float *gx, void *scratch);
/* y = x at the nearest source row and column. */
void eg_upsample_nearest2d_nchw_f32(const eg_resize_params *p, const float *x, float *y,
                                    void *scratch);
/* gx = 0; gx[source of (i, j)] += gy[i, j]. gx is fully overwritten. */
void eg_upsample_nearest2d_backward_nchw_f32(const eg_resize_params *p, const float *gy,
                                             float *gx, void *scratch);

/* The linear map one dim of the forward applies, from `in` positions to `out` (both >= 1) with
 * the coordinates above (align_corners: bilinear only; scale: that dim's, 0 none), as a dense
 * matrix m [out, in] (row-major): y[d] = sum_i m[d, i] x[i] — bilinear l0 at i0 plus l1 at i1,
 * nearest 1 at the source. transposed writes m^T [in, out] instead, the backward's map of
 * that dim. m (in * out floats) is fully overwritten. Matrix-product forms of the resize (the
 * NPU's) are built from it, so they interpolate exactly where these kernels do. */
void eg_resize_dim_matrix_f32(int64_t in, int64_t out, bool bilinear, bool align_corners,
                              double scale, bool transposed, float *m);

#endif
