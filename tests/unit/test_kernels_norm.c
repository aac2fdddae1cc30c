/* test_kernels_norm.c — the batch-norm and group-norm kernels against a naive reference written
 * here from the definitions.
 *
 * The reference works in double with direct index arithmetic and shares no code with the
 * kernels; its backward uses the textbook form dx = invstd*(g - mean(g) - xhat*mean(g*xhat)),
 * g = dy*w, a different arrangement from the kernels', and is itself checked against central
 * finite differences of the reference forward. Kernel outputs are pre-filled with NaN (so
 * anything not written shows up), scratch is allocated at exactly the size asked for (so ASan
 * sees overruns), and every case runs all eight output masks, with and without weight. Sizes
 * include a channel with a large mean (1000 + noise), hw == 1 ([N, C] inputs) and tensors big
 * enough for the OpenMP paths. */
#include "kernels/batch_norm_nchw_f32.h"
#include "kernels/group_norm_nchw_f32.h"

#include "eg_test.h"

#define RTOL 1e-5
#define ATOL 1e-6

/* ---- helpers ---- */

static float *alloc_f(long n) { return malloc((size_t)(n > 0 ? n : 1) * sizeof(float)); }
static double *alloc_d(long n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

static float *nan_filled(long n) {
  float *p = alloc_f(n);
  for (long i = 0; i < n; i++) p[i] = NAN;
  return p;
}

/* Test data: uniform [-1, 1) times `scale` plus `offset`. */
static float *data(long n, unsigned seed, float scale, float offset) {
  float *p = alloc_f(n);
  eg_test_fill(p, n, seed);
  for (long i = 0; i < n; i++) p[i] = p[i] * scale + offset;
  return p;
}

/* Compares float kernel output with a double reference; reports the first mismatch. */
static void expect_close(const char *what, const char *ctx, const float *got, const double *ref,
                         long n) {
  float *r = alloc_f(n);
  for (long i = 0; i < n; i++) r[i] = (float)ref[i];
  long bad = eg_test_allclose(got, r, n, RTOL, ATOL);
  EG_CHECK_MSG(bad < 0, "%s %s: element %ld is %.9g, reference %.9g", ctx, what, bad,
               bad >= 0 ? got[bad] : 0.0, bad >= 0 ? r[bad] : 0.0);
  free(r);
}

/* ---- batch norm reference ---- */

static long bn_at(const eg_batch_norm_params *p, int64_t b, int64_t ch, int64_t i) {
  return (long)((b * p->c + ch) * p->hw + i);
}

/* Per channel: mean and invstd used to normalise (batch stats in training, running in eval),
 * plus the unbiased batch variance. */
static void ref_bn_stats(const eg_batch_norm_params *p, const double *x, const double *rm,
                         const double *rv, double *mean, double *invstd, double *var_unb) {
  for (int64_t ch = 0; ch < p->c; ch++) {
    double s = 0, ss = 0, m = (double)(p->n * p->hw);
    for (int64_t b = 0; b < p->n; b++)
      for (int64_t i = 0; i < p->hw; i++) s += x[bn_at(p, b, ch, i)];
    double mu = s / m;
    for (int64_t b = 0; b < p->n; b++)
      for (int64_t i = 0; i < p->hw; i++) {
        double d = x[bn_at(p, b, ch, i)] - mu;
        ss += d * d;
      }
    var_unb[ch] = ss / (m - 1);
    if (p->training) {
      mean[ch] = mu;
      invstd[ch] = 1.0 / sqrt(ss / m + p->eps);
    } else {
      mean[ch] = rm[ch];
      invstd[ch] = 1.0 / sqrt(rv[ch] + p->eps);
    }
  }
}

static void ref_bn_forward(const eg_batch_norm_params *p, const double *x, const double *w,
                           const double *bias, const double *rm, const double *rv, double *y,
                           double *mean, double *invstd, double *var_unb) {
  ref_bn_stats(p, x, rm, rv, mean, invstd, var_unb);
  for (int64_t b = 0; b < p->n; b++)
    for (int64_t ch = 0; ch < p->c; ch++)
      for (int64_t i = 0; i < p->hw; i++) {
        long k = bn_at(p, b, ch, i);
        y[k] = (x[k] - mean[ch]) * invstd[ch] * (w ? w[ch] : 1.0) + (bias ? bias[ch] : 0.0);
      }
}

/* Textbook backward with the forward's (mean, invstd). */
static void ref_bn_backward(const eg_batch_norm_params *p, const double *dy, const double *x,
                            const double *w, const double *mean, const double *invstd,
                            double *dx, double *dw, double *db) {
  double m = (double)(p->n * p->hw);
  for (int64_t ch = 0; ch < p->c; ch++) {
    double wc = w ? w[ch] : 1.0, mg = 0, mgx = 0, sdy = 0, sdyx = 0;
    for (int64_t b = 0; b < p->n; b++)
      for (int64_t i = 0; i < p->hw; i++) {
        long k = bn_at(p, b, ch, i);
        double xhat = (x[k] - mean[ch]) * invstd[ch];
        mg += dy[k] * wc / m;
        mgx += dy[k] * wc * xhat / m;
        sdy += dy[k];
        sdyx += dy[k] * xhat;
      }
    dw[ch] = sdyx;
    db[ch] = sdy;
    for (int64_t b = 0; b < p->n; b++)
      for (int64_t i = 0; i < p->hw; i++) {
        long k = bn_at(p, b, ch, i);
        double xhat = (x[k] - mean[ch]) * invstd[ch];
        dx[k] = p->training ? invstd[ch] * (dy[k] * wc - mg - xhat * mgx)
                            : invstd[ch] * dy[k] * wc;
      }
  }
}

/* ---- group norm reference ---- */

static long gn_at(const eg_group_norm_params *p, int64_t b, int64_t ch, int64_t i) {
  return (long)((b * p->c + ch) * p->hw + i);
}

static void ref_gn_forward(const eg_group_norm_params *p, const double *x, const double *w,
                           const double *bias, double *y, double *mean, double *rstd) {
  int64_t d = p->c / p->groups;
  double m = (double)(d * p->hw);
  for (int64_t b = 0; b < p->n; b++)
    for (int64_t g = 0; g < p->groups; g++) {
      double s = 0, ss = 0;
      for (int64_t ch = g * d; ch < (g + 1) * d; ch++)
        for (int64_t i = 0; i < p->hw; i++) s += x[gn_at(p, b, ch, i)];
      double mu = s / m;
      for (int64_t ch = g * d; ch < (g + 1) * d; ch++)
        for (int64_t i = 0; i < p->hw; i++) ss += pow(x[gn_at(p, b, ch, i)] - mu, 2);
      long r = (long)(b * p->groups + g);
      mean[r] = mu;
      rstd[r] = 1.0 / sqrt(ss / m + p->eps);
      for (int64_t ch = g * d; ch < (g + 1) * d; ch++)
        for (int64_t i = 0; i < p->hw; i++) {
          long k = gn_at(p, b, ch, i);
          y[k] = (x[k] - mu) * rstd[r] * (w ? w[ch] : 1.0) + (bias ? bias[ch] : 0.0);
        }
    }
}

static void ref_gn_backward(const eg_group_norm_params *p, const double *dy, const double *x,
                            const double *mean, const double *rstd, const double *w,
                            double *dx, double *dw, double *db) {
  int64_t d = p->c / p->groups;
  double m = (double)(d * p->hw);
  for (int64_t ch = 0; ch < p->c; ch++) dw[ch] = db[ch] = 0;
  for (int64_t b = 0; b < p->n; b++)
    for (int64_t g = 0; g < p->groups; g++) {
      long r = (long)(b * p->groups + g);
      double mg = 0, mgx = 0;
      for (int64_t ch = g * d; ch < (g + 1) * d; ch++)
        for (int64_t i = 0; i < p->hw; i++) {
          long k = gn_at(p, b, ch, i);
          double xhat = (x[k] - mean[r]) * rstd[r], gk = dy[k] * (w ? w[ch] : 1.0);
          mg += gk / m;
          mgx += gk * xhat / m;
          dw[ch] += dy[k] * xhat;
          db[ch] += dy[k];
        }
      for (int64_t ch = g * d; ch < (g + 1) * d; ch++)
        for (int64_t i = 0; i < p->hw; i++) {
          long k = gn_at(p, b, ch, i);
          double xhat = (x[k] - mean[r]) * rstd[r], gk = dy[k] * (w ? w[ch] : 1.0);
          dx[k] = rstd[r] * (gk - mg - xhat * mgx);
        }
    }
}

/* ---- the reference's own backward against finite differences ---- */

enum { FD_X = 24, FD_C = 4 };

/* One finite-difference problem: which = 0 (batch norm, training), 1 (eval), 2 (group norm). */
typedef struct fd_case {
  int which;
  eg_batch_norm_params bn;
  eg_group_norm_params gn;
  double dy[FD_X], rm[FD_C], rv[FD_C];
} fd_case;

/* L = sum(dy * y(x, w, b)) by the reference forward; mean/inv get its statistics. */
static double fd_loss(const fd_case *fc, const double *x, const double *w, const double *b,
                      double *mean, double *inv) {
  double y[FD_X], vu[FD_C], l = 0;
  if (fc->which < 2)
    ref_bn_forward(&fc->bn, x, w, b, fc->rm, fc->rv, y, mean, inv, vu);
  else
    ref_gn_forward(&fc->gn, x, w, b, y, mean, inv);
  for (int i = 0; i < FD_X; i++) l += fc->dy[i] * y[i];
  return l;
}

/* Central difference of fd_loss along element k of one of x, w, b (arg 0, 1, 2). */
static double fd_grad(const fd_case *fc, const double *x, const double *w, const double *b,
                      int arg, int k) {
  const double h = 1e-6;
  double v[3][FD_X], mean[8], inv[8], l[2];
  for (int sgn = 0; sgn < 2; sgn++) {
    memcpy(v[0], x, sizeof(double) * FD_X);
    memcpy(v[1], w, sizeof(double) * FD_C);
    memcpy(v[2], b, sizeof(double) * FD_C);
    v[arg][k] += sgn ? -h : h;
    l[sgn] = fd_loss(fc, v[0], v[1], v[2], mean, inv);
  }
  return (l[0] - l[1]) / (2 * h);
}

/* The reference's dx, dw, db must be central differences of its forward. */
static void test_reference_gradients(void) {
  double x[FD_X], w[FD_C], bias[FD_C], mean[8], inv[8], dx[FD_X], dw[FD_C], db[FD_C];
  float f[FD_X];
  fd_case fc = {.bn = {.n = 2, .c = 3, .hw = 4, .eps = 1e-3},
                .gn = {.n = 2, .c = 4, .hw = 3, .groups = 2, .eps = 1e-3}};
  eg_test_fill(f, FD_X, 1);
  for (int i = 0; i < FD_X; i++) x[i] = f[i] * 2.0;
  eg_test_fill(f, FD_X, 2);
  for (int i = 0; i < FD_X; i++) fc.dy[i] = f[i];
  eg_test_fill(f, FD_C, 3);
  for (int i = 0; i < FD_C; i++) {
    w[i] = 1 + f[i] * 0.5;
    bias[i] = f[i];
    fc.rm[i] = f[i] * 0.3;
    fc.rv[i] = 1.5 + f[i];
  }
  for (fc.which = 0; fc.which < 3; fc.which++) {
    fc.bn.training = fc.which == 0;
    fd_loss(&fc, x, w, bias, mean, inv);
    if (fc.which < 2)
      ref_bn_backward(&fc.bn, fc.dy, x, w, mean, inv, dx, dw, db);
    else
      ref_gn_backward(&fc.gn, fc.dy, x, mean, inv, w, dx, dw, db);
    const int nc = fc.which < 2 ? 3 : 4;
    const double *grads[3] = {dx, dw, db};
    for (int arg = 0; arg < 3; arg++)
      for (int k = 0; k < (arg ? nc : FD_X); k++) {
        double fd = fd_grad(&fc, x, w, bias, arg, k), an = grads[arg][k];
        EG_CHECK_MSG(fabs(fd - an) <= 1e-6 * (1 + fabs(fd)), "case %d arg %d [%d]: %.9g, finite "
                     "difference %.9g", fc.which, arg, k, an, fd);
      }
  }
}

/* ---- batch norm: kernel against reference ---- */

static double *to_d(const float *f, long n) {
  double *d = alloc_d(n);
  for (long i = 0; i < n; i++) d[i] = f[i];
  return d;
}

static void check_bn(int64_t n, int64_t c, int64_t hw, bool training, bool with_affine,
                     float offset) {
  eg_batch_norm_params p = {.n = n, .c = c, .hw = hw, .training = training, .momentum = 0.1,
                            .eps = 1e-5};
  long nx = (long)(n * c * hw);
  char ctx[160];
  snprintf(ctx, sizeof ctx, "bn n=%lld c=%lld hw=%lld %s %s offset=%g", (long long)n,
           (long long)c, (long long)hw, training ? "train" : "eval",
           with_affine ? "affine" : "no-weight", offset);
  float *x = data(nx, 11, 1.0f, 0.0f), *w = data(c, 12, 0.5f, 1.0f), *b = data(c, 13, 1, 0);
  float *rm = data(c, 14, 0.5f, 0.0f), *rv = data(c, 15, 0.4f, 1.0f), *dy = data(nx, 16, 1, 0);
  if (offset != 0) /* channel 0 sits far from zero: accuracy must not depend on the mean */
    for (int64_t bb = 0; bb < n; bb++)
      for (int64_t i = 0; i < hw; i++) x[(bb * c) * hw + i] += offset;
  if (offset != 0 && !training) rm[0] += offset;
  double *xd = to_d(x, nx), *wd = to_d(w, c), *bd = to_d(b, c), *rmd = to_d(rm, c);
  double *rvd = to_d(rv, c), *dyd = to_d(dy, nx);
  double *y_ref = alloc_d(nx), *mean = alloc_d(c), *inv = alloc_d(c), *vu = alloc_d(c);
  ref_bn_forward(&p, xd, with_affine ? wd : NULL, with_affine ? bd : NULL, rmd, rvd, y_ref,
                 mean, inv, vu);

  float *y = nan_filled(nx), *sm = nan_filled(c), *si = nan_filled(c);
  float *nrm = nan_filled(c), *nrv = nan_filled(c);
  eg_batch_norm_io io = {.x = x, .weight = with_affine ? w : NULL,
                         .bias = with_affine ? b : NULL, .running_mean = rm, .running_var = rv,
                         .y = y};
  if (training) io.save_mean = sm, io.save_invstd = si, io.new_running_mean = nrm,
                io.new_running_var = nrv;
  eg_batch_norm_nchw_f32(&p, &io);
  expect_close("y", ctx, y, y_ref, nx);
  if (training) {
    double *nrm_ref = alloc_d(c), *nrv_ref = alloc_d(c);
    for (int64_t ch = 0; ch < c; ch++) {
      nrm_ref[ch] = 0.9 * rmd[ch] + 0.1 * mean[ch];
      nrv_ref[ch] = 0.9 * rvd[ch] + 0.1 * vu[ch];
    }
    expect_close("save_mean", ctx, sm, mean, c);
    expect_close("save_invstd", ctx, si, inv, c);
    expect_close("new_running_mean", ctx, nrm, nrm_ref, c);
    expect_close("new_running_var", ctx, nrv, nrv_ref, c);
    free(nrm_ref);
    free(nrv_ref);
  }

  /* backward, with the statistics as the forward returned them (float) */
  double *dx_ref = alloc_d(nx), *dw_ref = alloc_d(c), *db_ref = alloc_d(c);
  double *mean_f = alloc_d(c), *inv_f = alloc_d(c);
  for (int64_t ch = 0; ch < c; ch++) {
    mean_f[ch] = training ? sm[ch] : rm[ch];
    inv_f[ch] = training ? si[ch] : 1.0 / sqrt((double)rv[ch] + p.eps);
  }
  ref_bn_backward(&p, dyd, xd, with_affine ? wd : NULL, mean_f, inv_f, dx_ref, dw_ref, db_ref);
  for (int mask = 0; mask < 8; mask++) {
    float *dx = nan_filled(nx), *dw = nan_filled(c), *db = nan_filled(c);
    eg_batch_norm_backward_io bio = {
        .gy = dy, .x = x, .weight = with_affine ? w : NULL, .running_mean = rm,
        .running_var = rv, .save_mean = training ? sm : NULL,
        .save_invstd = training ? si : NULL, .gx = mask & 1 ? dx : NULL,
        .gw = mask & 2 ? dw : NULL, .gb = mask & 4 ? db : NULL};
    eg_batch_norm_backward_nchw_f32(&p, &bio);
    char mctx[200];
    snprintf(mctx, sizeof mctx, "%s mask=%d", ctx, mask);
    if (mask & 1) expect_close("grad_input", mctx, dx, dx_ref, nx);
    if (mask & 2) expect_close("grad_weight", mctx, dw, dw_ref, c);
    if (mask & 4) expect_close("grad_bias", mctx, db, db_ref, c);
    /* unrequested outputs are left alone */
    if (!(mask & 1)) EG_CHECK_MSG(nx == 0 || isnan(dx[0]), "%s: grad_input written", mctx);
    free(dx);
    free(dw);
    free(db);
  }
  float *all[] = {x, w, b, rm, rv, dy, y, sm, si, nrm, nrv};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
  double *alld[] = {xd, wd, bd, rmd, rvd, dyd, y_ref, mean, inv, vu, dx_ref, dw_ref, db_ref,
                    mean_f, inv_f};
  for (size_t i = 0; i < sizeof alld / sizeof *alld; i++) free(alld[i]);
}

static void test_batch_norm(void) {
  /* hw <= 16 shapes take the channel-block path: {64, 200, 1} and {8, 130, 4} have a partial
   * last block, {512, 96, 1} and {16, 200, 16} are big enough for OpenMP there; {4, 70, 17}
   * is the smallest plane per channel, {8, 32, 300} per channel with OpenMP */
  const int64_t shapes[][3] = {{2, 3, 5},    {4, 16, 1},   {1, 8, 49},    {3, 5, 7},
                               {7, 1, 1},    {64, 200, 1}, {512, 96, 1},  {8, 32, 300},
                               {8, 130, 4},  {16, 200, 16}, {4, 70, 17}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (int training = 0; training < 2; training++)
      for (int affine = 0; affine < 2; affine++)
        check_bn(shapes[s][0], shapes[s][1], shapes[s][2], training, affine, 0.0f);
  check_bn(4, 3, 25, true, true, 1000.0f);
  check_bn(4, 3, 25, false, true, 1000.0f);
  check_bn(4, 3, 4, true, true, 1000.0f);
}

/* Eval with an empty batch: nothing to write, nothing read. */
static void test_batch_norm_empty(void) {
  eg_batch_norm_params p = {.n = 0, .c = 3, .hw = 4, .training = false, .eps = 1e-5};
  float rm[3] = {0, 0, 0}, rv[3] = {1, 1, 1}, dw[3], db[3];
  float *x = alloc_f(0), *y = alloc_f(0);
  eg_batch_norm_io io = {.x = x, .running_mean = rm, .running_var = rv, .y = y};
  eg_batch_norm_nchw_f32(&p, &io);
  eg_batch_norm_backward_io bio = {.gy = x, .x = x, .running_mean = rm, .running_var = rv,
                                   .gx = y, .gw = dw, .gb = db};
  eg_batch_norm_backward_nchw_f32(&p, &bio);
  for (int i = 0; i < 3; i++) EG_CHECK(dw[i] == 0 && db[i] == 0);
  free(x);
  free(y);
}

/* One value per channel in training: variance 0, invstd 1/sqrt(eps), unbiased variance NaN. */
static void test_batch_norm_single_value(void) {
  eg_batch_norm_params p = {.n = 1, .c = 2, .hw = 1, .training = true, .momentum = 0.1,
                            .eps = 1e-5};
  float x[2] = {3, -1}, rm[2] = {0, 0}, rv[2] = {1, 1}, y[2], sm[2], si[2], nrm[2], nrv[2];
  eg_batch_norm_io io = {.x = x, .running_mean = rm, .running_var = rv, .y = y,
                         .save_mean = sm, .save_invstd = si, .new_running_mean = nrm,
                         .new_running_var = nrv};
  eg_batch_norm_nchw_f32(&p, &io);
  for (int i = 0; i < 2; i++) {
    EG_CHECK(y[i] == 0 && sm[i] == x[i]);
    EG_CHECK(fabsf(si[i] - 316.227766f) < 1e-3f);
    EG_CHECK(fabsf(nrm[i] - 0.1f * x[i]) < 1e-6f && isnan(nrv[i]));
  }
}

/* ---- group norm: kernel against reference ---- */

static void check_gn(int64_t n, int64_t c, int64_t hw, int64_t groups, bool with_affine,
                     float offset) {
  eg_group_norm_params p = {.n = n, .c = c, .hw = hw, .groups = groups, .eps = 1e-5};
  long nx = (long)(n * c * hw), ns = (long)(n * groups);
  char ctx[160];
  snprintf(ctx, sizeof ctx, "gn n=%lld c=%lld hw=%lld groups=%lld %s offset=%g", (long long)n,
           (long long)c, (long long)hw, (long long)groups,
           with_affine ? "affine" : "no-weight", offset);
  float *x = data(nx, 21, 1.0f, offset), *w = data(c, 22, 0.5f, 1.0f), *b = data(c, 23, 1, 0);
  float *dy = data(nx, 24, 1, 0);
  double *xd = to_d(x, nx), *wd = to_d(w, c), *bd = to_d(b, c), *dyd = to_d(dy, nx);
  double *y_ref = alloc_d(nx), *mean = alloc_d(ns), *rstd = alloc_d(ns);
  ref_gn_forward(&p, xd, with_affine ? wd : NULL, with_affine ? bd : NULL, y_ref, mean, rstd);
  float *y = nan_filled(nx), *fm = nan_filled(ns), *fr = nan_filled(ns);
  eg_group_norm_io io = {.x = x, .weight = with_affine ? w : NULL,
                         .bias = with_affine ? b : NULL, .y = y, .mean = fm, .rstd = fr};
  eg_group_norm_nchw_f32(&p, &io);
  expect_close("y", ctx, y, y_ref, nx);
  expect_close("mean", ctx, fm, mean, ns);
  expect_close("rstd", ctx, fr, rstd, ns);

  double *dx_ref = alloc_d(nx), *dw_ref = alloc_d(c), *db_ref = alloc_d(c);
  double *mean_f = to_d(fm, ns), *rstd_f = to_d(fr, ns);
  ref_gn_backward(&p, dyd, xd, mean_f, rstd_f, with_affine ? wd : NULL, dx_ref, dw_ref, db_ref);
  size_t sb = eg_group_norm_backward_nchw_f32_scratch(&p);
  for (int mask = 0; mask < 8; mask++) {
    float *dx = nan_filled(nx), *dw = nan_filled(c), *db = nan_filled(c);
    double *scratch = malloc(sb ? sb : 1);
    for (size_t i = 0; i < sb / sizeof(double); i++) scratch[i] = NAN;
    eg_group_norm_backward_io bio = {.gy = dy, .x = x, .mean = fm, .rstd = fr,
                                     .weight = with_affine ? w : NULL,
                                     .gx = mask & 1 ? dx : NULL, .gw = mask & 2 ? dw : NULL,
                                     .gb = mask & 4 ? db : NULL};
    eg_group_norm_backward_nchw_f32(&p, &bio, scratch);
    char mctx[200];
    snprintf(mctx, sizeof mctx, "%s mask=%d", ctx, mask);
    if ((mask & 1) && c / groups * hw == 1) {
      /* one value per group: grad_input is exactly 0, but its terms are rstd*w*gy ~ 1/sqrt(eps)
       * and cancel in float arithmetic (as in ATen), leaving rounding noise of that size */
      for (long i = 0; i < nx; i++)
        EG_CHECK_MSG(fabsf(dx[i]) <= 1e-6f * fr[i / (nx / ns)] * 2, "%s: grad_input[%ld] %g",
                     mctx, i, dx[i]);
    } else if (mask & 1) {
      expect_close("grad_input", mctx, dx, dx_ref, nx);
    }
    if (mask & 2) expect_close("grad_weight", mctx, dw, dw_ref, c);
    if (mask & 4) expect_close("grad_bias", mctx, db, db_ref, c);
    if (!(mask & 2)) EG_CHECK_MSG(c == 0 || isnan(dw[0]), "%s: grad_weight written", mctx);
    free(dx);
    free(dw);
    free(db);
    free(scratch);
  }
  float *all[] = {x, w, b, dy, y, fm, fr};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
  double *alld[] = {xd, wd, bd, dyd, y_ref, mean, rstd, dx_ref, dw_ref, db_ref, mean_f, rstd_f};
  for (size_t i = 0; i < sizeof alld / sizeof *alld; i++) free(alld[i]);
}

static void test_group_norm(void) {
  const int64_t shapes[][3] = {{2, 6, 5}, {1, 4, 1}, {3, 8, 9}, {4, 32, 300}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int64_t c = shapes[s][1];
    const int64_t groups[] = {1, 2, c};
    for (int gi = 0; gi < 3; gi++)
      for (int affine = 0; affine < 2; affine++)
        check_gn(shapes[s][0], c, shapes[s][2], groups[gi], affine, 0.0f);
  }
  check_gn(2, 6, 16, 3, true, 1000.0f);
}

/* Empty spatial size: mean 0 and rstd NaN (ATen's values), nothing else touched. */
static void test_group_norm_empty(void) {
  eg_group_norm_params p = {.n = 2, .c = 4, .hw = 0, .groups = 2, .eps = 1e-5};
  float mean[4], rstd[4], dw[4], db[4];
  float *x = alloc_f(0), *y = alloc_f(0);
  eg_group_norm_io io = {.x = x, .y = y, .mean = mean, .rstd = rstd};
  eg_group_norm_nchw_f32(&p, &io);
  for (int i = 0; i < 4; i++) EG_CHECK(mean[i] == 0 && isnan(rstd[i]));
  size_t sb = eg_group_norm_backward_nchw_f32_scratch(&p);
  void *scratch = malloc(sb);
  float w[4] = {1, 1, 1, 1};
  eg_group_norm_backward_io bio = {.gy = x, .x = x, .mean = mean, .rstd = rstd, .weight = w,
                                   .gx = y, .gw = dw, .gb = db};
  eg_group_norm_backward_nchw_f32(&p, &bio, scratch);
  for (int i = 0; i < 4; i++) EG_CHECK(db[i] == 0);
  free(scratch);
  free(x);
  free(y);
}

int main(void) {
  EG_RUN(test_reference_gradients);
  EG_RUN(test_batch_norm);
  EG_RUN(test_batch_norm_empty);
  EG_RUN(test_batch_norm_single_value);
  EG_RUN(test_group_norm);
  EG_RUN(test_group_norm_empty);
  return eg_test_summary();
}
