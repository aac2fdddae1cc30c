/* test_kernels_convolution.c — eg_convolution_nchw_f32 and eg_convolution_backward_nchw_f32
 * against the naive reference of conv_ref.h (written straight from ATen's definition, sharing no
 * code with the kernels). Every case runs the forward with and without bias and the backward
 * under all seven output masks, with outputs and scratch pre-filled with NaN (so anything not
 * overwritten, or read from scratch before being written, shows up) and scratch allocated at
 * exactly the size the _scratch function asks for (so ASan sees overruns). The kernels on a team
 * of threads: test_kernels_conv_threads.c. */
#include "kernels/conv_rowband_nchw.h"
#include "kernels/conv_winograd_nchw.h"
#include "kernels/convolution_nchw_f32.h"

#include "conv_ref.h"
#include "eg_test.h"

static void check_forward(const eg_conv2d_params *p, const tensors *t, const tap *taps, long nt,
                          const char *desc) {
  for (int with_bias = 0; with_bias < 2; with_bias++) {
    const float *bias = with_bias ? t->bias : NULL;
    float *y = alloc_nan(y_numel(p));
    void *scratch = alloc_scratch(eg_convolution_nchw_f32_scratch(p));
    eg_convolution_nchw_f32(p, t->x, t->w, bias, y, scratch);
    ref_forward(p, taps, nt, t->x, t->w, bias, t->y_ref);
    check_close(y, t->y_ref, y_numel(p), with_bias ? "y (bias)" : "y", desc);
    free(y);
    free(scratch);
  }
}

static void check_backward(const eg_conv2d_params *p, const tensors *t, const char *desc) {
  for (int m = 1; m < 8; m++) {
    const bool mask[3] = {m & 1, (m >> 1) & 1, (m >> 2) & 1};
    /* Masked-off outputs are passed as NULL: the kernel must not touch them. */
    float *gx = mask[0] ? alloc_nan(x_numel(p)) : NULL;
    float *gw = mask[1] ? alloc_nan(w_numel(p)) : NULL;
    float *gb = mask[2] ? alloc_nan((long)p->c_out) : NULL;
    void *scratch = alloc_scratch(eg_convolution_backward_nchw_f32_scratch(p, mask));
    eg_convolution_backward_nchw_f32(p, mask, t->gy, t->x, t->w, gx, gw, gb, scratch);
    if (gx) check_close(gx, t->gx_ref, x_numel(p), "gx", desc);
    if (gw) check_close(gw, t->gw_ref, w_numel(p), "gw", desc);
    if (gb) check_close(gb, t->gb_ref, (long)p->c_out, "gb", desc);
    free(gx);
    free(gw);
    free(gb);
    free(scratch);
  }
}


/* Runs forward (bias and no bias) and backward (all masks) of one case. Returns false, checking
 * nothing, when the sizes are not a valid ATen convolution. */
static bool check_case(const spec *s, unsigned seed) {
  eg_conv2d_params p;
  if (!params_of(s, &p)) return false;
  char desc[256];
  describe(&p, desc, sizeof desc);
  tensors t = tensors_new(&p, seed);
  tap *taps;
  const long nt = ref_taps(&p, &taps);
  check_forward(&p, &t, taps, nt, desc);
  ref_backward(&p, taps, nt, t.gy, t.x, t.w, t.gx_ref, t.gw_ref, t.gb_ref);
  check_backward(&p, &t, desc);
  free(taps);
  tensors_free(&t);
  return true;
}

/* ---- sweeps over small shapes ---- */

static const int64_t kernel_sizes[][2] = {{1, 1}, {2, 2}, {3, 3}, {5, 5}, {3, 1}, {1, 3}};
enum { N_KERNELS = sizeof kernel_sizes / sizeof kernel_sizes[0] };

/* Channels and groups {c_in, c_out, groups}, each tried on every geometry of the sweeps: plain,
 * two groups, depthwise, depthwise with channel multiplier 2 and 3, a single input channel, and
 * the transposes of the last two (which are depthwise-like on the other side). The kernels take
 * direct loops for some of these and GEMMs for others, in each direction. */
static const int64_t channel_configs[][3] = {{3, 2, 1}, {4, 6, 2}, {3, 3, 3}, {2, 4, 2},
                                             {2, 6, 2}, {1, 5, 1}, {6, 2, 2}, {5, 1, 1}};
enum { N_CHANNEL_CONFIGS = sizeof channel_configs / sizeof channel_configs[0] };

static void set_channels(spec *s, int which) {
  s->c_in = channel_configs[which][0];
  s->c_out = channel_configs[which][1];
  s->groups = channel_configs[which][2];
}

/* Smallest size >= lo with (size + 2*pad - span) % stride == rem (the conv's leftover rows). */
static int64_t size_with_remainder(int64_t lo, int64_t pad, int64_t span, int64_t stride,
                                   int64_t rem) {
  int64_t size = lo;
  while (((size + 2 * pad - span) % stride + stride) % stride != rem) size++;
  return size;
}

/* Convolutions: stride 1-3 x kernels x padding 0-2 x dilation 1-2 x every leftover-row count;
 * the width takes different stride/pad/dilation so the two dimensions are not in lockstep. */
static void test_conv_sweep(void) {
  int cases = 0, counter = 0;
  for (int64_t s = 1; s <= 3; s++)
    for (int k = 0; k < N_KERNELS; k++)
      for (int64_t pad = 0; pad <= 2; pad++)
        for (int64_t dil = 1; dil <= 2; dil++)
          for (int64_t rem = 0; rem < s; rem++, counter++) {
            spec c = {.n = 1 + counter % 3, .kh = kernel_sizes[k][0], .kw = kernel_sizes[k][1],
                      .sh = s, .sw = s % 3 + 1, .ph = pad, .pw = (pad + counter) % 3,
                      .dh = dil, .dw = 3 - dil};
            const int64_t span_h = c.dh * (c.kh - 1) + 1, span_w = c.dw * (c.kw - 1) + 1;
            const int64_t lo_h = (span_h - 2 * c.ph < 1 ? 1 : span_h - 2 * c.ph) + counter % 2;
            const int64_t lo_w = (span_w - 2 * c.pw < 1 ? 1 : span_w - 2 * c.pw) + 1;
            c.h = size_with_remainder(lo_h, c.ph, span_h, c.sh, rem);
            c.w = size_with_remainder(lo_w, c.pw, span_w, c.sw, counter % c.sw);
            for (int ch = 0; ch < N_CHANNEL_CONFIGS; ch++) {
              set_channels(&c, ch);
              cases += check_case(&c, (unsigned)(counter * N_CHANNEL_CONFIGS + ch));
            }
          }
  EG_CHECK_MSG(cases == 216 * N_CHANNEL_CONFIGS, "ran %d cases", cases);
}

/* Transposed convolutions: the same grid, output_padding over all of [0, max(stride, dil)),
 * which is also the leftover-row count of the conv it transposes. */
static void test_transposed_sweep(void) {
  int cases = 0, counter = 0;
  for (int64_t s = 1; s <= 3; s++)
    for (int k = 0; k < N_KERNELS; k++)
      for (int64_t pad = 0; pad <= 2; pad++)
        for (int64_t dil = 1; dil <= 2; dil++)
          for (int64_t op = 0; op < (s > dil ? s : dil); op++, counter++) {
            spec c = {.n = 1 + counter % 3, .h = 3 + counter % 3, .w = 4 + counter % 2,
                      .kh = kernel_sizes[k][0], .kw = kernel_sizes[k][1], .sh = s,
                      .sw = s % 3 + 1, .ph = pad, .pw = (pad + counter) % 3, .dh = dil,
                      .dw = 3 - dil, .oph = op, .transposed = true};
            c.opw = counter % (c.sw > c.dw ? c.sw : c.dw);
            for (int ch = 0; ch < N_CHANNEL_CONFIGS; ch++) {
              set_channels(&c, ch);
              cases += check_case(&c, 100000u + (unsigned)(counter * N_CHANNEL_CONFIGS + ch));
            }
          }
  /* A few have outputs too small to exist (padding eats them), as ATen would reject. */
  EG_CHECK_MSG(cases >= 200 * N_CHANNEL_CONFIGS, "ran %d cases", cases);
}

/* Depthwise-like convolutions at dilation 1 in both dimensions (the sweeps above pair a
 * dilation of 2 with 1), the case of every depthwise conv in MobileNet-style nets: strides 1-3
 * in each dimension, kernels, padding 0-2, leftover rows and columns, plain and transposed,
 * multipliers 1-3 on either side; and two larger planes. */
static void test_depthwise_dilation_1(void) {
  static const int64_t depthwise[][3] = {{3, 3, 3}, {2, 4, 2}, {2, 6, 2}, {6, 2, 2}, {4, 4, 4}};
  int cases = 0, counter = 0;
  for (int64_t sh = 1; sh <= 3; sh++)
    for (int64_t sw = 1; sw <= 3; sw++)
      for (int k = 0; k < N_KERNELS; k++)
        for (int64_t pad = 0; pad <= 2; pad++, counter++) {
          const int64_t kh = kernel_sizes[k][0], kw = kernel_sizes[k][1];
          const int64_t ph = pad < kh ? pad : kh - 1, pw = (pad + counter) % 3 < kw ? (pad + counter) % 3 : 0;
          spec c = {.n = 1 + counter % 3, .kh = kh, .kw = kw, .sh = sh, .sw = sw, .ph = ph,
                    .pw = pw, .dh = 1, .dw = 1, .transposed = counter % 4 == 3};
          const int64_t lo_h = (kh - 2 * ph < 1 ? 1 : kh - 2 * ph) + counter % 5;
          const int64_t lo_w = (kw - 2 * pw < 1 ? 1 : kw - 2 * pw) + counter % 7;
          c.h = size_with_remainder(lo_h, ph, kh, sh, counter % sh);
          c.w = size_with_remainder(lo_w, pw, kw, sw, (counter / 3) % sw);
          if (c.transposed) c.oph = counter % sh, c.opw = (counter / 2) % sw;
          const int64_t *ch = depthwise[counter % 5];
          c.c_in = ch[0], c.c_out = ch[1], c.groups = ch[2];
          cases += check_case(&c, 200000u + (unsigned)counter);
        }
  EG_CHECK_MSG(cases >= 155, "ran %d of 162 cases", cases);
  /* a 3x3 stride-1 depthwise conv on 89x89 planes, a 5x5 stride-2 transposed one on 40x41 */
  const spec big = {.n = 2, .c_in = 3, .c_out = 3, .groups = 3, .h = 89, .w = 89, .kh = 3,
                    .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1};
  EG_CHECK(check_case(&big, 300001u));
  const spec big2 = {.n = 2, .c_in = 4, .c_out = 4, .groups = 4, .h = 40, .w = 41, .kh = 5,
                     .kw = 5, .sh = 2, .sw = 2, .ph = 2, .pw = 2, .dh = 1, .dw = 1,
                     .transposed = true, .oph = 1, .opw = 0};
  EG_CHECK(check_case(&big2, 300002u));
}

/* ---- larger images: the one-image-per-GEMM paths, pointwise shortcuts, uneven batches ---- */

/* Output planes of >= 1536 pixels put one image in each GEMM (writing y in place, bias via
 * beta = 1); 1x1/s1/p0 then skips im2col entirely. */
static void test_one_image_per_gemm(void) {
  const spec cases[] = {
      {.n = 2, .c_in = 2, .h = 40, .w = 40, .c_out = 3, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
      {.n = 2, .c_in = 4, .h = 40, .w = 41, .c_out = 6, .kh = 1, .kw = 1, .sh = 1, .sw = 1,
       .dh = 1, .dw = 1, .groups = 2},
      {.n = 2, .c_in = 3, .h = 81, .w = 81, .c_out = 2, .kh = 3, .kw = 3, .sh = 2, .sw = 2,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
      {.n = 2, .c_in = 3, .h = 40, .w = 40, .c_out = 2, .kh = 1, .kw = 1, .sh = 1, .sw = 1,
       .dh = 1, .dw = 1, .groups = 1, .transposed = true},
      /* 1x1, stride 1, dilation 2, output_padding 1: a 1x1 kernel whose two sides differ in
       * size, so it must not take the pointwise shortcut. */
      {.n = 1, .c_in = 3, .h = 40, .w = 40, .c_out = 2, .kh = 1, .kw = 1, .sh = 1, .sw = 1,
       .dh = 2, .dw = 2, .oph = 1, .opw = 1, .groups = 1, .transposed = true},
      {.n = 2, .c_in = 3, .h = 40, .w = 40, .c_out = 3, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    EG_CHECK(check_case(&cases[i], 77u + (unsigned)i));
}

/* 1000-pixel planes, 3 images: batches of 2 then 1. */
static void test_uneven_batches(void) {
  const spec cases[] = {
      {.n = 3, .c_in = 3, .h = 25, .w = 40, .c_out = 4, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
      {.n = 3, .c_in = 4, .h = 25, .w = 40, .c_out = 2, .kh = 3, .kw = 3, .sh = 2, .sw = 2,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .oph = 1, .opw = 1, .groups = 2, .transposed = true},
      {.n = 3, .c_in = 2, .h = 25, .w = 40, .c_out = 2, .kh = 1, .kw = 1, .sh = 1, .sw = 1,
       .dh = 1, .dw = 1, .groups = 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    EG_CHECK(check_case(&cases[i], 99u + (unsigned)i));
}

/* The weight gradient by im2col + GEMM in both orientations (convolution_backward_nchw_f32.c,
 * weight_grad): the transposed GEMM and its tiled untranspose for up to 64 small channels per
 * group (64 and 40: whole and partial 32-channel strips, with groups; 45 rows per group, no
 * whole tile), the direct GEMM above (65 and 72, with groups). */
static void test_weight_grad_orientations(void) {
  const spec cases[] = {
      {.n = 2, .c_in = 8, .h = 5, .w = 6, .c_out = 64, .kh = 3, .kw = 3, .sh = 2, .sw = 2,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
      {.n = 3, .c_in = 10, .h = 7, .w = 5, .c_out = 80, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 2},
      {.n = 2, .c_in = 16, .h = 4, .w = 5, .c_out = 130, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 0, .dh = 1, .dw = 1, .groups = 2},
      {.n = 2, .c_in = 9, .h = 6, .w = 7, .c_out = 72, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    EG_CHECK(check_case(&cases[i], 700u + (unsigned)i));
}

/* The geometry the stride-1 "down" of a (transposed) conv reads: the flipped one for a
 * transposed conv, whose small side is read padded by dil*(k-1) - pad. */
static eg_conv_geom down_geom(const eg_conv2d_params *p) {
  eg_conv_geom g = eg_conv_geom_of(p);
  if (p->transposed) {
    const int64_t cb = g.cb, hb = g.hb, wb = g.wb;
    g.cb = g.cs, g.hb = g.hs, g.wb = g.ws, g.cs = cb, g.hs = hb, g.ws = wb;
    g.ph = g.dh * (g.kh - 1) - g.ph, g.pw = g.dw * (g.kw - 1) - g.pw;
  }
  return g;
}

/* 3x3 stride-1 convs with enough channels and output tiles run by Winograd F(2x2, 3x3)
 * (conv_winograd_nchw.h), forward and, through the flipped "down", the input gradient and the
 * stride-1 transposed conv: odd sizes (a last half tile), pads 0-2, odd channel counts, rows
 * wider than one transform block (70 tiles), and several chunks whose boundaries fall inside
 * an image. */
static void test_winograd(void) {
  const spec cases[] = {
      {.n = 2, .c_in = 32, .h = 17, .w = 15, .c_out = 40, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
      {.n = 3, .c_in = 40, .h = 14, .w = 13, .c_out = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .dh = 1, .dw = 1, .groups = 1},
      {.n = 3, .c_in = 33, .h = 10, .w = 11, .c_out = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 2, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
      {.n = 1, .c_in = 32, .h = 3, .w = 140, .c_out = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
      {.n = 2, .c_in = 64, .h = 29, .w = 64, .c_out = 64, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
      {.n = 2, .c_in = 32, .h = 15, .w = 16, .c_out = 36, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1, .transposed = true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    eg_conv2d_params p;
    EG_CHECK(params_of(&cases[i], &p));
    const eg_conv_geom g = down_geom(&p);
    EG_CHECK_MSG(eg_conv_wino_applies(&g), "case %zu does not reach the Winograd path", i);
    EG_CHECK(check_case(&cases[i], 300u + (unsigned)i));
  }
}

/* Stride 1 along rows on planes of >= 512 output pixels, no Winograd (or thin Winograd
 * geometries on >= 256 pixels): one column matrix per
 * kernel row (conv_rowband_nchw.h), forward and, through the flip, the stride-1 input gradient
 * and transposed conv: one image per GEMM and batches (uneven, the last of one image), groups,
 * dilation, column stride 2, pads 0 and 2 (rows read past the plane's end), 5x3 and 2x2
 * kernels. */
static void test_row_bands(void) {
  const spec cases[] = {
      {.n = 1, .c_in = 3, .h = 32, .w = 32, .c_out = 5, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
      {.n = 3, .c_in = 4, .h = 24, .w = 30, .c_out = 6, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 2},
      {.n = 3, .c_in = 3, .h = 44, .w = 41, .c_out = 4, .kh = 5, .kw = 3, .sh = 1, .sw = 2,
       .ph = 2, .pw = 0, .dh = 2, .dw = 1, .groups = 1},
      {.n = 2, .c_in = 2, .h = 27, .w = 26, .c_out = 3, .kh = 2, .kw = 2, .sh = 1, .sw = 1,
       .ph = 0, .pw = 1, .dh = 1, .dw = 2, .groups = 1},
      {.n = 3, .c_in = 5, .h = 22, .w = 25, .c_out = 3, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 0, .pw = 2, .dh = 1, .dw = 1, .groups = 1, .transposed = true},
      /* thin channels where Winograd applies: row bands first, forward and input gradient */
      {.n = 2, .c_in = 32, .h = 16, .w = 18, .c_out = 40, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
       .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    eg_conv2d_params p;
    EG_CHECK(params_of(&cases[i], &p));
    const eg_conv_geom g = down_geom(&p);
    EG_CHECK_MSG(eg_conv_rowband_down_applies(&g) && eg_conv_rowband_applies(&g) ==
                                                     !eg_conv_wino_applies(&g),
                 "case %zu does not reach the row-band path", i);
    EG_CHECK(check_case(&cases[i], 500u + (unsigned)i));
  }
}

/* A 1x1/s1/p0 conv on one big image needs no scratch at all. */
static void test_pointwise_needs_no_scratch(void) {
  const spec s = {.n = 1, .c_in = 8, .h = 40, .w = 40, .c_out = 8, .kh = 1, .kw = 1, .sh = 1,
                  .sw = 1, .dh = 1, .dw = 1, .groups = 1};
  eg_conv2d_params p;
  EG_CHECK(params_of(&s, &p));
  EG_CHECK(eg_convolution_nchw_f32_scratch(&p) == 0);
}

/* An empty batch: gw and gb are still fully written (zeros), nothing else is touched. */
static void test_empty_batch(void) {
  const spec s = {.n = 0, .c_in = 2, .h = 5, .w = 5, .c_out = 3, .kh = 3, .kw = 3, .sh = 1,
                  .sw = 1, .dh = 1, .dw = 1, .groups = 1};
  eg_conv2d_params p;
  EG_CHECK(params_of(&s, &p));
  float w[2 * 3 * 9], gw[2 * 3 * 9], gb[3];
  eg_test_fill(w, 54, 5);
  for (int i = 0; i < 54; i++) gw[i] = NAN;
  for (int i = 0; i < 3; i++) gb[i] = NAN;
  const bool mask[3] = {true, true, true};
  EG_CHECK(eg_convolution_backward_nchw_f32_scratch(&p, mask) == 0);
  eg_convolution_backward_nchw_f32(&p, mask, NULL, NULL, w, NULL, gw, gb, NULL);
  for (int i = 0; i < 54; i++) EG_CHECK(gw[i] == 0.0f);
  for (int i = 0; i < 3; i++) EG_CHECK(gb[i] == 0.0f);
}

/* Depthwise 3x3 and 5x5 at strides 1 and 2, plain and transposed, 3 and 37 channels, on planes
 * narrow and wide: y must equal, bit for bit, the bias plus each in-bounds tap's product added
 * in float one at a time, taps a-major (conv_depthwise_nchw.h's contract, whichever of its
 * paths runs). Channel 1 has
 * bias -0.0 over an input of -0.0 (a product with a padding zero would turn its -0 outputs
 * into +0), channel 2 an infinite corner weight (one with a padding zero would make NaN). */
static void test_depthwise_sum_order(void) {
  static const int64_t sizes[][2] = {{1, 1}, {2, 2}, {4, 4}, {5, 7}, {8, 8}, {12, 15}, {16, 16}, {20, 33}};
  for (int t = 0; t < 8; t++)
    for (int64_t k = 3; k <= 5; k += 2)
      for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        /* 37 channels: two blocks of 16 and 5 on the small planes' channel-block path */
        const int64_t c = t < 4 ? 3 : 37, h = sizes[z][0], w = sizes[z][1], pad = k / 2,
                      st = 1 + t % 4 / 2;
        const bool tr = t % 2 == 1;
        const int64_t ho = tr ? (h - 1) * st - 2 * pad + k : (h + 2 * pad - k) / st + 1;
        const int64_t wo = tr ? (w - 1) * st - 2 * pad + k : (w + 2 * pad - k) / st + 1;
        if (ho < 1 || wo < 1) continue;
        const eg_conv2d_params p = {.n = 2, .c_in = c, .h_in = h, .w_in = w, .c_out = c,
                                    .h_out = ho, .w_out = wo, .k_h = k, .k_w = k,
                                    .stride = {st, st}, .padding = {pad, pad},
                                    .dilation = {1, 1}, .groups = c, .transposed = tr};
        const int64_t plane = h * w, kk = k * k, oplane = ho * wo;
        float *x = malloc(sizeof(float) * (size_t)(2 * c * plane));
        float *y = malloc(sizeof(float) * (size_t)(2 * c * oplane));
        float *want = malloc(sizeof(float) * (size_t)(2 * c * oplane));
        float wt[37 * 25], bias[37] = {0.25f, -0.0f, -1.5f};
        for (int64_t q = 3; q < c; q++) bias[q] = (float)(q % 7) / 4.0f - 0.75f;
        void *scratch = malloc(eg_convolution_nchw_f32_scratch(&p) + 1);
        for (int64_t e = 0; e < 2 * c * plane; e++)
          x[e] = e / plane % c == 1 ? -0.0f : (float)((e * 37 % 101) - 50) / 16.0f;
        for (int64_t e = 0; e < c * kk; e++) wt[e] = (float)((e * 13 % 23) + 1) / 8.0f;
        wt[2 * kk] = INFINITY;
        for (int64_t n = 0; n < 2; n++)
          for (int64_t q = 0; q < c; q++)
            for (int64_t i = 0; i < ho; i++)
              for (int64_t j = 0; j < wo; j++) {
                float acc = bias[q];
                for (int64_t a = 0; a < k; a++)
                  for (int64_t b = 0; b < k; b++) {
                    /* conv: reads x[i*st - pad + a]; transposed: x[(i + pad - a) / st] where
                     * that divides */
                    const int64_t ui = tr ? i + pad - a : i * st - pad + a;
                    const int64_t uj = tr ? j + pad - b : j * st - pad + b;
                    if (tr && (ui < 0 || uj < 0 || ui % st || uj % st)) continue;
                    const int64_t ii = tr ? ui / st : ui, jj = tr ? uj / st : uj;
                    if (ii >= 0 && ii < h && jj >= 0 && jj < w)
                      acc += wt[q * kk + a * k + b] * x[(n * c + q) * plane + ii * w + jj];
                  }
                want[(n * c + q) * oplane + i * wo + j] = acc;
              }
        eg_convolution_nchw_f32(&p, x, wt, bias, y, scratch);
        EG_CHECK_MSG(memcmp(y, want, sizeof(float) * (size_t)(2 * c * oplane)) == 0,
                     "depthwise %lldx%lld stride %lld on %lldx%lld, transposed %d: not "
                     "bit-identical", (long long)k, (long long)k, (long long)st, (long long)h,
                     (long long)w, tr);
        free(x);
        free(y);
        free(want);
        free(scratch);
      }
}

int main(void) {
  EG_RUN(test_conv_sweep);
  EG_RUN(test_transposed_sweep);
  EG_RUN(test_depthwise_dilation_1);
  EG_RUN(test_depthwise_sum_order);
  EG_RUN(test_one_image_per_gemm);
  EG_RUN(test_uneven_batches);
  EG_RUN(test_weight_grad_orientations);
  EG_RUN(test_winograd);
  EG_RUN(test_row_bands);
  EG_RUN(test_pointwise_needs_no_scratch);
  EG_RUN(test_empty_batch);
  return eg_test_summary();
}
