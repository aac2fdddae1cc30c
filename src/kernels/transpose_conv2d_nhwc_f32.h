/* transpose_conv2d_nhwc_f32 — QNN TransposeConv2d on NHWC activations, fp32.
 *
 *   x [n, h_in, w_in, c_in], filter [k_h, k_w, c_in, c_out/groups], bias [c_out] or NULL,
 *   y [n, h_out, w_out, c_out]:
 *   y[n, i*sh - pad_t + a, j*sw - pad_l + b, q*cog + co] += x[n, i, j, q*cig + ci]
 *                                                            * f[a, b, q*cig + ci, co]
 *   (q the group of ci, cig = c_in/groups, cog = c_out/groups), y starting from the bias (or 0);
 *   products landing outside y are dropped. QNN's output size is
 *   h_out = sh*(h_in-1) + k_h - pad_t - pad_b + output_padding_h; the caller passes h_out/w_out
 *   and the pads before the output (pad_t, pad_l) — pad_b and output_padding only set h_out.
 *
 * This is the input gradient of a Conv2d with the same filter read as HWIO [k_h, k_w, Cout_fwd,
 * Cin_fwd] after the QNN Transpose perm [0,1,3,2] (design.md §1). Algorithms
 * (eg_transpose_conv2d_algo):
 *   FLIP    (stride 1) a Conv2d with the filter rotated by 180 degrees and pads k-1-pad: im2col
 *           + sgemm with K = k_h*k_w*cig; the TransposeConv2d filter is already that conv's
 *           HWIO filter (groups 1), so nothing is copied but the column matrix.
 *   PHASE   (stride s > 1, groups 1) s_h*s_w sub-pixel phases, each a stride-1 FLIP conv with
 *           the taps that land on that phase; results are interleaved into y. No wasted MACs
 *           and no scatter-adds.
 *   COL2IM  (any) col [pixels of x, k_h*k_w*cog] = x x filter (rearranged [cig, taps, cog]) by
 *           sgemm, then every column block is added into its output pixel. Best when c_out is
 *           too small for the other two (a GEMM N of c_out is memory bound: the 7x7 stem's 3).
 *   WINOGRAD (stride 1, 3x3, groups 1) the FLIP conv by Winograd F(2x2, 3x3): 2x2 output tiles,
 *           each from a 4x4 x patch, as 16 sgemms [tiles, c_in] x [c_in, c_out] on transformed
 *           patches and filter: 2.25x fewer multiplies than FLIP (rounding differs from it by a
 *           few ulps of the sums). The filter transform is 16/9 of the filter's size; when the
 *           filter is constant the caller packs it once (_pack, params.prepacked), else every
 *           call transforms it into scratch.
 *   AUTO    picks by shape and thread count (see the .c); the tests force each one.
 *
 * Pieces (params.parts = T > 1): the work is cut into pieces that are themselves
 * TransposeConv2d's of the same filter — whole images when T <= n (T near-equal image ranges),
 * else output row bands (each image cut into T/gcd(n, T) bands, with the x rows that reach the
 * band) — run on T OpenMP threads, each piece by the algorithm above with one thread's sgemm
 * (sgemm inside a parallel region runs on its caller's thread: eg_nhwc_blas_nests). T narrow
 * GEMMs side by side scale where one multi-threaded sgemm with N = c_out does not.
 *
 * Kernels know nothing about graphs and never allocate: ask for the scratch size once (for the
 * same params, including algo) and pass a 64-byte aligned buffer at least that large. */
#ifndef EG_KERNELS_TRANSPOSE_CONV2D_NHWC_F32_H
#define EG_KERNELS_TRANSPOSE_CONV2D_NHWC_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum eg_transpose_conv2d_algo {
  EG_TRANSPOSE_CONV2D_AUTO,
  EG_TRANSPOSE_CONV2D_FLIP,   /* stride 1 only; otherwise behaves as AUTO */
  EG_TRANSPOSE_CONV2D_PHASE,  /* groups 1 only; otherwise behaves as AUTO */
  EG_TRANSPOSE_CONV2D_COL2IM,
  EG_TRANSPOSE_CONV2D_WINOGRAD /* stride 1, 3x3, groups 1 only; otherwise behaves as AUTO */
} eg_transpose_conv2d_algo;

typedef struct eg_transpose_conv2d_nhwc_params {
  int64_t n, h_in, w_in, c_in;      /* x */
  int64_t h_out, w_out, c_out;      /* y */
  int64_t k_h, k_w;
  int64_t stride[2];                /* [h, w], each >= 1 */
  int64_t pad[2];                   /* QNN pad_amount[.][0]: output rows/cols cut at the start */
  int64_t groups;                   /* divides c_in and c_out */
  eg_transpose_conv2d_algo algo;
  int64_t chunk_bytes;              /* target bytes of one column-matrix chunk (WINOGRAD: of a
                                       chunk's transformed tiles); 0: 2 MiB (WINOGRAD 4 MiB) (as
                                       for eg_conv2d_nhwc_params: same value for _scratch and
                                       call) */
  int64_t parts;                    /* 0 or 1: one piece (sgemm threads itself); T > 1: T pieces
                                       on T OpenMP threads (see above). Same value for _scratch
                                       and the call */
  bool prepacked;                   /* the filter passed to the call is _pack's output for these
                                       params (only read when _packed_floats is not 0) */
  bool filter_oi;                   /* the filter is [k_h, k_w, c_out, c_in]: the weight of
                                       the conv this is the input gradient of, as that conv reads
                                       it (HWIO), with no Transpose; only where
                                       _takes_filter_oi. The algorithm is chosen as without it;
                                       COL2IM and WINOGRAD gather the same filter values (their
                                       results are bit for bit those of the transposed filter;
                                       both pack a constant one once: _pack), FLIP and PHASE run
                                       one sgemm per tap on it */
  bool filter_oihw;                 /* groups 1, no filter_oi: the filter is [c_in, c_out, k_h,
                                       k_w], the weight of the conv this is the input gradient
                                       of as PyTorch holds it (OIHW), whose Transpose the
                                       executor then skips: the algorithm is COL2IM, its sgemm
                                       reading the weight as [c_in, c_out*k_h*k_w] (no pack) and
                                       its scatter the columns in (co, tap) order */
} eg_transpose_conv2d_nhwc_params;

/* The algorithm for p run as ONE piece while sgemm runs on `threads` threads: AUTO and
 * inapplicable requests resolved (params.parts is not read). */
eg_transpose_conv2d_algo eg_transpose_conv2d_nhwc_f32_pick(const eg_transpose_conv2d_nhwc_params *p,
                                                            int threads);
/* The algorithm the kernel will run for p (for each piece when parts > 1):
 * eg_transpose_conv2d_nhwc_f32_pick(p, 1). */
eg_transpose_conv2d_algo
eg_transpose_conv2d_nhwc_f32_algo(const eg_transpose_conv2d_nhwc_params *p);
/* Plans p for `threads` threads: sets p->parts (pieces when the OpenBLAS build runs sgemm
 * single-threaded inside a parallel region and the work is large enough, else 1) and resolves
 * p->algo for that (p->algo may hold a request, as for _pick). Callers that plan once (the
 * executor) do this at create, so _scratch and the call agree even if the thread count changes
 * later. */
void eg_transpose_conv2d_nhwc_f32_plan(eg_transpose_conv2d_nhwc_params *p, int threads);

/* Whether p may set filter_oi: groups 1 and no filter_oihw (any algorithm: FLIP's and PHASE's
 * sgemms then read each tap's block of the forward weight transposed, one per tap; COL2IM and
 * WINOGRAD gather it into the forms they read). */
bool eg_transpose_conv2d_nhwc_f32_takes_filter_oi(const eg_transpose_conv2d_nhwc_params *p);

/* Whether p may set filter_oihw: groups 1 and filter_oi unset. */
bool eg_transpose_conv2d_nhwc_f32_takes_oihw(const eg_transpose_conv2d_nhwc_params *p);

/* Floats of the packed filter for p's algorithm (WINOGRAD: 16*c_in*c_out; COL2IM with filter_oi:
 * its gathered [c_in, taps, c_out], k_h*k_w*c_in*c_out), 0 when the algorithm reads the filter
 * as it is. Set params.prepacked before planning when the filter is constant:
 * AUTO then prefers WINOGRAD where it applies and enough output tiles share the packed filter. */
size_t eg_transpose_conv2d_nhwc_f32_packed_floats(const eg_transpose_conv2d_nhwc_params *p);
/* packed <- the filter in the form p's algorithm reads (_packed_floats floats, 64-byte
 * aligned); then pass `packed` as the filter with params.prepacked set. */
void eg_transpose_conv2d_nhwc_f32_pack(const eg_transpose_conv2d_nhwc_params *p,
                                       const float *filter, float *packed);

size_t eg_transpose_conv2d_nhwc_f32_scratch(const eg_transpose_conv2d_nhwc_params *p);

/* y = transposed conv of x with filter, + bias; y is fully overwritten. With parts > 1 this
 * opens its own parallel region (called inside one, the pieces run one after another). */
void eg_transpose_conv2d_nhwc_f32(const eg_transpose_conv2d_nhwc_params *p, const float *x,
                                  const float *filter, const float *bias, float *y,
                                  void *scratch);

#endif
