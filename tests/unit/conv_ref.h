/* conv_ref.h — the naive convolution reference of the kernel tests (test_kernels_convolution,
 * test_kernels_conv_threads), written here straight from ATen's definition.
 *
 * The reference enumerates every product x[.]*w[.] that lands in y[.] (ref_taps) with direct
 * loops; forward, gx, gw and gb are then plain sums over those taps in double. It shares no code
 * with the kernels. Outputs are pre-filled with NaN (alloc_nan: anything not overwritten shows
 * up) and scratch allocated at exactly the size asked for (alloc_scratch: ASan sees overruns). */
#ifndef EG_TEST_CONV_REF_H
#define EG_TEST_CONV_REF_H

#include "kernels/convolution_nchw_f32.h"

#include "eg_test.h"

#define RTOL 1e-4
#define ATOL 1e-5

/* A convolution as a test names it; sizes of y are derived by ATen's formulas. */
typedef struct spec {
  int64_t n, c_in, h, w, c_out, kh, kw;
  int64_t sh, sw, ph, pw, dh, dw, oph, opw, groups;
  bool transposed;
} spec;

/* Fills *p from *s. False when ATen would reject the sizes (an empty output). */
static inline bool params_of(const spec *s, eg_conv2d_params *p) {
  *p = (eg_conv2d_params){.n = s->n, .c_in = s->c_in, .h_in = s->h, .w_in = s->w,
                          .c_out = s->c_out, .k_h = s->kh, .k_w = s->kw,
                          .stride = {s->sh, s->sw}, .padding = {s->ph, s->pw},
                          .dilation = {s->dh, s->dw}, .output_padding = {s->oph, s->opw},
                          .groups = s->groups, .transposed = s->transposed};
  const int64_t in[2] = {s->h, s->w}, k[2] = {s->kh, s->kw};
  int64_t out[2];
  for (int d = 0; d < 2; d++) {
    const int64_t span = p->dilation[d] * (k[d] - 1) + 1;
    out[d] = s->transposed ? (in[d] - 1) * p->stride[d] - 2 * p->padding[d] + span +
                                 p->output_padding[d]
                           : (in[d] + 2 * p->padding[d] - span) / p->stride[d] + 1;
    if (!s->transposed && in[d] + 2 * p->padding[d] - span < 0) return false;
    if (out[d] <= 0) return false;
  }
  p->h_out = out[0];
  p->w_out = out[1];
  return true;
}

static inline void describe(const eg_conv2d_params *p, char *buf, size_t size) {
  snprintf(buf, size,
           "%s n=%lld c_in=%lld %lldx%lld c_out=%lld %lldx%lld k=%lldx%lld s=%lld,%lld "
           "p=%lld,%lld d=%lld,%lld op=%lld,%lld g=%lld",
           p->transposed ? "transposed" : "conv", (long long)p->n, (long long)p->c_in,
           (long long)p->h_in, (long long)p->w_in, (long long)p->c_out, (long long)p->h_out,
           (long long)p->w_out, (long long)p->k_h, (long long)p->k_w, (long long)p->stride[0],
           (long long)p->stride[1], (long long)p->padding[0], (long long)p->padding[1],
           (long long)p->dilation[0], (long long)p->dilation[1], (long long)p->output_padding[0],
           (long long)p->output_padding[1], (long long)p->groups);
}

/* ---- the naive reference ---- */

static inline long x_numel(const eg_conv2d_params *p) {
  return (long)(p->n * p->c_in * p->h_in * p->w_in);
}
static inline long y_numel(const eg_conv2d_params *p) {
  return (long)(p->n * p->c_out * p->h_out * p->w_out);
}
static inline long w_numel(const eg_conv2d_params *p) {
  const int64_t lead = p->transposed ? p->c_in : p->c_out;
  const int64_t per = (p->transposed ? p->c_out : p->c_in) / p->groups;
  return (long)(lead * per * p->k_h * p->k_w);
}

/* One product of the convolution: x[x] * w[w] is added into y[y] (flat NCHW / weight indices). */
typedef struct tap {
  long x, w, y;
} tap;

/* Every tap, from the definitions:
 *   conv:        y[n,co,i,j] += w[co,ci',a,b] * x[n, g*cig+ci', i*s-p+a*d, j*s-p+b*d]
 *   transposed:  y[n, g*cog+co', i*s-p+a*d, j*s-p+b*d] += w[ci,co',a,b] * x[n,ci,i,j]
 * (g the group of co, resp. ci; terms outside the image dropped). Returns the count; *out is
 * malloc'ed. */
static inline long ref_taps(const eg_conv2d_params *p, tap **out) {
  const int64_t cig = p->c_in / p->groups, cog = p->c_out / p->groups;
  const int64_t kh = p->k_h, kw = p->k_w;
  /* The loops run over the side whose pixels are the "i, j" above. */
  const int64_t outer_c = p->transposed ? p->c_in : p->c_out;
  const int64_t outer_h = p->transposed ? p->h_in : p->h_out;
  const int64_t outer_w = p->transposed ? p->w_in : p->w_out;
  const int64_t inner_c = p->transposed ? cog : cig;
  const int64_t inner_h = p->transposed ? p->h_out : p->h_in;
  const int64_t inner_w = p->transposed ? p->w_out : p->w_in;
  const int64_t inner_call = p->transposed ? p->c_out : p->c_in;
  const int64_t most = p->n * outer_c * outer_h * outer_w * inner_c * kh * kw;
  tap *t = malloc(sizeof(tap) * (size_t)(most + 1));
  long count = 0;
  for (int64_t n = 0; n < p->n; n++)
    for (int64_t c = 0; c < outer_c; c++)
      for (int64_t i = 0; i < outer_h; i++)
        for (int64_t j = 0; j < outer_w; j++)
          for (int64_t cl = 0; cl < inner_c; cl++)
            for (int64_t a = 0; a < kh; a++)
              for (int64_t b = 0; b < kw; b++) {
                const int64_t hi = i * p->stride[0] - p->padding[0] + a * p->dilation[0];
                const int64_t wi = j * p->stride[1] - p->padding[1] + b * p->dilation[1];
                if (hi < 0 || hi >= inner_h || wi < 0 || wi >= inner_w) continue;
                const int64_t ci = c / (p->transposed ? cig : cog) * inner_c + cl;
                const long outer_idx = (long)(((n * outer_c + c) * outer_h + i) * outer_w + j);
                const long inner_idx =
                    (long)(((n * inner_call + ci) * inner_h + hi) * inner_w + wi);
                t[count].w = (long)(((c * inner_c + cl) * kh + a) * kw + b);
                t[count].x = p->transposed ? outer_idx : inner_idx;
                t[count].y = p->transposed ? inner_idx : outer_idx;
                count++;
              }
  *out = t;
  return count;
}

static inline void to_float(const double *d, float *f, long n) {
  for (long i = 0; i < n; i++) f[i] = (float)d[i];
}

/* y = conv(x, w) + bias. */
static inline void ref_forward(const eg_conv2d_params *p, const tap *t, long nt, const float *x,
                        const float *w, const float *bias, float *y) {
  const long ny = y_numel(p), plane = (long)(p->h_out * p->w_out);
  double *acc = calloc((size_t)ny + 1, sizeof(double));
  for (long e = 0; e < ny; e++) acc[e] = bias ? (double)bias[e / plane % p->c_out] : 0.0;
  for (long k = 0; k < nt; k++) acc[t[k].y] += (double)x[t[k].x] * (double)w[t[k].w];
  to_float(acc, y, ny);
  free(acc);
}

/* gx, gw, gb of y = conv(x, w) + bias: each tap's adjoint, and gy summed per channel. */
static inline void ref_backward(const eg_conv2d_params *p, const tap *t, long nt, const float *gy,
                         const float *x, const float *w, float *gx, float *gw, float *gb) {
  const long nx = x_numel(p), nw = w_numel(p), ny = y_numel(p);
  const long plane = (long)(p->h_out * p->w_out);
  double *dx = calloc((size_t)nx + 1, sizeof(double)), *dw = calloc((size_t)nw + 1, sizeof(double));
  double *db = calloc((size_t)p->c_out + 1, sizeof(double));
  for (long k = 0; k < nt; k++) {
    dx[t[k].x] += (double)gy[t[k].y] * (double)w[t[k].w];
    dw[t[k].w] += (double)gy[t[k].y] * (double)x[t[k].x];
  }
  for (long e = 0; e < ny; e++) db[e / plane % p->c_out] += (double)gy[e];
  to_float(dx, gx, nx);
  to_float(dw, gw, nw);
  to_float(db, gb, (long)p->c_out);
  free(dx);
  free(dw);
  free(db);
}

/* ---- running the kernels ---- */

static inline float *alloc_nan(long n) {
  float *f = malloc(sizeof(float) * (size_t)(n + 1));
  for (long i = 0; i <= n; i++) f[i] = NAN;
  return f;
}

/* Exactly `bytes` (ASan catches overruns), filled with NaN bit patterns. */
static inline void *alloc_scratch(size_t bytes) {
  void *s = malloc(bytes ? bytes : 1);
  memset(s, 0xff, bytes);
  return s;
}

static inline void check_close(const float *got, const float *ref, long n, const char *what,
                        const char *desc) {
  const long bad = eg_test_allclose(got, ref, n, RTOL, ATOL);
  EG_CHECK_MSG(bad < 0, "%s [%ld] = %g, want %g; %s", what, bad,
               bad < 0 ? 0.0 : (double)got[bad], bad < 0 ? 0.0 : (double)ref[bad], desc);
}

typedef struct tensors {
  float *x, *w, *bias, *gy;
  float *y_ref, *gx_ref, *gw_ref, *gb_ref;
} tensors;

/* Inputs x, w, bias, gy filled from seeds seed..seed+3; outputs and references NaN. */
static inline tensors tensors_new(const eg_conv2d_params *p, unsigned seed) {
  tensors t = {.x = alloc_nan(x_numel(p)), .w = alloc_nan(w_numel(p)),
               .bias = alloc_nan((long)p->c_out), .gy = alloc_nan(y_numel(p)),
               .y_ref = alloc_nan(y_numel(p)), .gx_ref = alloc_nan(x_numel(p)),
               .gw_ref = alloc_nan(w_numel(p)), .gb_ref = alloc_nan((long)p->c_out)};
  eg_test_fill(t.x, x_numel(p), seed);
  eg_test_fill(t.w, w_numel(p), seed + 1);
  eg_test_fill(t.bias, (long)p->c_out, seed + 2);
  eg_test_fill(t.gy, y_numel(p), seed + 3);
  return t;
}

static inline void tensors_free(tensors *t) {
  free(t->x);
  free(t->w);
  free(t->bias);
  free(t->gy);
  free(t->y_ref);
  free(t->gx_ref);
  free(t->gw_ref);
  free(t->gb_ref);
}

#endif
