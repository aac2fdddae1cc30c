/* test_kernels_loss.c — log_softmax_f32, nll_loss_f32 and mse_loss_f32 against naive references
 * written here in double straight from the formulas in the headers (which restate ATen's):
 * log-softmax by strided indexing per element (no tiles, no rows), nll by one loop per row, mse
 * by full multi-index broadcasting. Outputs are pre-filled with NaN so anything not written
 * shows up. */
#include "kernels/log_softmax_f32.h"
#include "kernels/mse_loss_f32.h"
#include "kernels/nll_loss_f32.h"

#include "eg_test.h"

#define RTOL 1e-5
#define ATOL 1e-6

static float *nan_buf(long n) {
  float *p = malloc((size_t)(n ? n : 1) * sizeof(float));
  for (long i = 0; i < n; i++) p[i] = NAN;
  return p;
}

/* ---- log_softmax ---- */

static void ref_log_softmax(const float *x, float *y, long outer, long dim, long inner) {
  for (long o = 0; o < outer; o++)
    for (long i = 0; i < inner; i++) {
      double mx = -INFINITY, s = 0;
      for (long d = 0; d < dim; d++) mx = fmax(mx, x[(o * dim + d) * inner + i]);
      for (long d = 0; d < dim; d++) s += exp(x[(o * dim + d) * inner + i] - mx);
      for (long d = 0; d < dim; d++) {
        long at = (o * dim + d) * inner + i;
        y[at] = (float)(x[at] - mx - log(s));
      }
    }
}

static void ref_log_softmax_backward(const float *gy, const float *y, float *gx, long outer,
                                     long dim, long inner) {
  for (long o = 0; o < outer; o++)
    for (long i = 0; i < inner; i++) {
      double s = 0;
      for (long d = 0; d < dim; d++) s += gy[(o * dim + d) * inner + i];
      for (long d = 0; d < dim; d++) {
        long at = (o * dim + d) * inner + i;
        gx[at] = (float)(gy[at] - exp((double)y[at]) * s);
      }
    }
}

static void test_log_softmax(void) {
  static const long cases[][3] = {
      {1, 1, 1}, {4, 10, 1}, {3, 1000, 1}, {1, 7, 5}, {2, 3, 16}, {2, 5, 37}, {3, 4, 100},
      {0, 5, 1}, {2, 0, 3}, {513, 64, 1}, {4, 21, 33 * 33},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    long outer = cases[c][0], dim = cases[c][1], inner = cases[c][2], n = outer * dim * inner;
    float *x = nan_buf(n), *y = nan_buf(n), *ry = nan_buf(n);
    float *gy = nan_buf(n), *gx = nan_buf(n), *rgx = nan_buf(n);
    eg_test_fill(x, n, (unsigned)c + 1);
    for (long i = 0; i < n; i++) x[i] *= 8; /* logits with some spread */
    eg_test_fill(gy, n, (unsigned)c + 100);
    eg_log_softmax_f32(x, y, outer, dim, inner);
    ref_log_softmax(x, ry, outer, dim, inner);
    long bad = eg_test_allclose(y, ry, n, RTOL, ATOL);
    EG_CHECK_MSG(bad < 0, "forward case %zu: y[%ld] = %g, want %g", c, bad, y[bad], ry[bad]);
    eg_log_softmax_backward_f32(gy, ry, gx, outer, dim, inner);
    ref_log_softmax_backward(gy, ry, rgx, outer, dim, inner);
    bad = eg_test_allclose(gx, rgx, n, RTOL, ATOL);
    EG_CHECK_MSG(bad < 0, "backward case %zu: gx[%ld] = %g, want %g", c, bad, gx[bad], rgx[bad]);
    free(x), free(y), free(ry), free(gy), free(gx), free(rgx);
  }
}

/* Large logits must not overflow: the max is subtracted first. */
static void test_log_softmax_stable(void) {
  const float x[3] = {1000.0f, 1001.0f, -1000.0f};
  float y[3];
  eg_log_softmax_f32(x, y, 1, 3, 1);
  EG_CHECK(fabs(y[0] - (-1.3132616f)) < 1e-5 && fabs(y[1] - (-0.3132617f)) < 1e-5);
  EG_CHECK(isinf(y[2]) || y[2] < -1999);
}

/* Non-finite logits behave as ATen's: -inf gives -inf (and a zero gradient share), NaN or +inf
 * anywhere in a row makes the row NaN, an all -inf row is NaN. Rows of 3 and 40 take the short
 * and the vectorised paths of the exponential. */
static void test_log_softmax_nonfinite(void) {
  for (int len = 3; len <= 40; len += 37) {
    float x[40], y[40], gy[40], gx[40];
    for (int i = 0; i < len; i++) x[i] = (float)i * 0.5f - 3, gy[i] = 1;
    x[1] = -INFINITY;
    eg_log_softmax_f32(x, y, 1, len, 1);
    EG_CHECK(isinf(y[1]) && y[1] < 0);
    for (int i = 0; i < len; i++) EG_CHECK(i == 1 || isfinite(y[i]));
    eg_log_softmax_backward_f32(gy, y, gx, 1, len, 1);
    EG_CHECK(gx[1] == gy[1]);
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
      for (int i = 0; i < len; i++) x[i] = k == 2 ? -INFINITY : (float)i;
      x[len / 2] = bad[k];
      eg_log_softmax_f32(x, y, 1, len, 1);
      for (int i = 0; i < len; i++) EG_CHECK_MSG(isnan(y[i]), "len %d case %d: y[%d] = %g", len,
                                                 k, i, y[i]);
    }
  }
}

/* ---- nll_loss ---- */

typedef struct nll_case {
  long batch, classes;
  bool batched, weighted;
  long ignore_index;
} nll_case;

static void test_nll_loss(void) {
  static const nll_case cases[] = {
      {5, 4, true, false, -100}, {5, 4, true, true, -100}, {6, 3, true, true, 1},
      {6, 3, true, false, 2},    {1, 7, false, false, -100}, {1, 7, false, true, 3},
      {1, 7, false, true, -100}, {0, 4, true, true, -100},  {300, 10, true, true, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const nll_case *k = &cases[c];
    long n = k->batch * k->classes;
    float *x = nan_buf(n), *w = nan_buf(k->classes);
    int64_t *t = malloc((size_t)(k->batch + 1) * sizeof(int64_t));
    eg_test_fill(x, n, (unsigned)c + 7);
    eg_test_fill(w, k->classes, (unsigned)c + 70);
    for (long j = 0; j < k->classes; j++) w[j] += 1.5f;
    for (long b = 0; b < k->batch; b++) t[b] = (b * 7 + 3) % k->classes;
    if (!k->batched) t[0] = 3;
    const float *wp = k->weighted ? w : NULL;
    for (int red = 0; red <= 2; red++) {
      eg_nll_params p = {.batch = k->batch, .classes = k->classes, .inner = 1,
                         .ignore_index = k->ignore_index, .reduction = (eg_loss_reduction)red,
                         .batched = k->batched};
      bool each = red == 0 && k->batched;
      /* reference */
      double sum = 0, tw = 0;
      float *rout = nan_buf(k->batch);
      for (long b = 0; b < k->batch; b++) {
        double wt = t[b] == k->ignore_index ? 0 : (wp ? wp[t[b]] : 1);
        double l = t[b] == k->ignore_index ? 0 : -wt * x[b * k->classes + t[b]];
        rout[b] = (float)l;
        sum += l;
        tw += wt;
      }
      float want = (float)(red == 1 ? (k->batch ? sum / tw : NAN) : sum);
      float *out = nan_buf(k->batch), twv = NAN;
      EG_CHECK(eg_nll_loss_f32(&p, x, t, wp, out, &twv) == -1);
      if (each) {
        EG_CHECK(twv == 0);
        EG_CHECK(eg_test_allclose(out, rout, k->batch, RTOL, ATOL) < 0);
      } else {
        EG_CHECK_MSG(fabs(twv - tw) <= 1e-5 * (1 + tw), "case %zu red %d: tw %g vs %g", c, red,
                     twv, tw);
        EG_CHECK_MSG((isnan(want) && isnan(out[0])) || fabs(out[0] - want) <= 1e-5 *
                     (1 + fabs(want)), "case %zu red %d: %g vs %g", c, red, out[0], want);
      }
      /* backward */
      float *gy = nan_buf(k->batch + 1), *gx = nan_buf(n), *rgx = nan_buf(n);
      eg_test_fill(gy, k->batch + 1, (unsigned)c + 300);
      float twf = (float)tw;
      for (long i = 0; i < n; i++) rgx[i] = 0;
      for (long b = 0; b < k->batch; b++) {
        if (t[b] == k->ignore_index) continue;
        double wt = wp ? wp[t[b]] : 1;
        double g = each ? gy[b] : (red == 1 ? gy[0] / twf : gy[0]);
        rgx[b * k->classes + t[b]] = (float)(-wt * g);
      }
      EG_CHECK(eg_nll_loss_backward_f32(&p, gy, t, wp, &twf, gx) == -1);
      EG_CHECK_MSG(eg_test_allclose(gx, rgx, n, RTOL, ATOL) < 0, "backward case %zu red %d", c,
                   red);
      free(rout), free(out), free(gy), free(gx), free(rgx);
    }
    free(x), free(w), free(t);
  }
}

/* Every target ignored: the mean is 0/0 = NaN, the total weight 0, the gradient 0. */
static void test_nll_all_ignored(void) {
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const int64_t t[2] = {-1, -1};
  eg_nll_params p = {.batch = 2, .classes = 3, .inner = 1, .ignore_index = -1,
                     .reduction = EG_REDUCTION_MEAN, .batched = true};
  float out, tw;
  EG_CHECK(eg_nll_loss_f32(&p, x, t, NULL, &out, &tw) == -1);
  EG_CHECK(isnan(out) && tw == 0);
  float gy = 1, gx[6];
  EG_CHECK(eg_nll_loss_backward_f32(&p, &gy, t, NULL, &tw, gx) == -1);
  for (int i = 0; i < 6; i++) EG_CHECK(gx[i] == 0);
}

/* A target out of range (and not ignore_index) is reported by its row, for every mode. */
static void test_nll_bad_target(void) {
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const int64_t t[2][2] = {{0, 3}, {-2, 1}};
  const long want[2] = {1, 0};
  for (int k = 0; k < 2; k++)
    for (int red = 0; red <= 2; red++) {
      eg_nll_params p = {.batch = 2, .classes = 3, .inner = 1, .ignore_index = -100,
                         .reduction = (eg_loss_reduction)red, .batched = true};
      float out[2], tw = 1, gy[2] = {1, 1}, gx[6];
      EG_CHECK(eg_nll_loss_f32(&p, x, t[k], NULL, out, &tw) == want[k]);
      EG_CHECK(eg_nll_loss_backward_f32(&p, gy, t[k], NULL, &tw, gx) == want[k]);
    }
}

/* ---- mse_loss ---- */

typedef struct bshape {
  int rank;
  int64_t shape[4];
} bshape;

/* Element index of `s` for the output multi-index idx (right-aligned broadcasting). */
static long bindex(const bshape *s, int out_rank, const int64_t *idx) {
  long at = 0;
  for (int d = 0; d < s->rank; d++) {
    int od = d + out_rank - s->rank;
    at = at * s->shape[d] + (s->shape[d] == 1 ? 0 : idx[od]);
  }
  return at;
}

static long bnumel(const bshape *s) {
  long n = 1;
  for (int d = 0; d < s->rank; d++) n *= s->shape[d];
  return n;
}

static void test_mse(void) {
  /* x, t, gy and the broadcast output */
  static const bshape cases[][4] = {
      {{2, {3, 4}}, {2, {3, 4}}, {2, {3, 4}}, {2, {3, 4}}},
      {{1, {4}}, {2, {3, 4}}, {0, {0}}, {2, {3, 4}}},
      {{3, {2, 1, 5}}, {2, {3, 1}}, {3, {2, 3, 5}}, {3, {2, 3, 5}}},
      {{0, {0}}, {0, {0}}, {0, {0}}, {0, {0}}},
      {{4, {2, 3, 4, 5}}, {4, {2, 3, 4, 5}}, {0, {0}}, {4, {2, 3, 4, 5}}},
      {{2, {0, 3}}, {2, {0, 3}}, {2, {0, 3}}, {2, {0, 3}}},
      {{3, {4, 1, 6}}, {3, {1, 5, 6}}, {1, {6}}, {3, {4, 5, 6}}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const bshape *xs = &cases[c][0], *ts = &cases[c][1], *gs = &cases[c][2], *os = &cases[c][3];
    long nx = bnumel(xs), nt = bnumel(ts), ng = bnumel(gs), no = bnumel(os);
    float *x = nan_buf(nx), *t = nan_buf(nt), *gy = nan_buf(ng);
    eg_test_fill(x, nx, (unsigned)c + 1);
    eg_test_fill(t, nt, (unsigned)c + 2);
    eg_test_fill(gy, ng, (unsigned)c + 3);
    float *y = nan_buf(no), *ry = nan_buf(no), *gx = nan_buf(no), *rgx = nan_buf(no);
    float norm = 2.0f / (float)nx;
    double rsum = 0;
    for (long i = 0; i < no; i++) {
      int64_t idx[4];
      long rem = i;
      for (int d = os->rank - 1; d >= 0; d--) idx[d] = rem % os->shape[d], rem /= os->shape[d];
      double dl = (double)x[bindex(xs, os->rank, idx)] - t[bindex(ts, os->rank, idx)];
      ry[i] = (float)(dl * dl);
      rsum += dl * dl;
      rgx[i] = (float)(norm * dl * gy[bindex(gs, os->rank, idx)]);
    }
    const int ranks[3] = {xs->rank, ts->rank, gs->rank};
    const int64_t *shapes[3] = {xs->shape, ts->shape, gs->shape};
    eg_mse_geom g2, g3;
    eg_mse_geom_init(&g2, os->rank, os->shape, 2, ranks, shapes);
    eg_mse_geom_init(&g3, os->rank, os->shape, 3, ranks, shapes);
    eg_mse_loss_none_f32(&g2, x, t, y);
    EG_CHECK_MSG(eg_test_allclose(y, ry, no, RTOL, ATOL) < 0, "none case %zu", c);
    double s = eg_mse_loss_sum_f32(&g2, x, t);
    EG_CHECK_MSG(fabs(s - rsum) <= 1e-5 * (1 + rsum), "sum case %zu: %g vs %g", c, s, rsum);
    eg_mse_loss_backward_f32(&g3, norm, x, t, gy, gx);
    EG_CHECK_MSG(eg_test_allclose(gx, rgx, no, RTOL, ATOL) < 0, "backward case %zu", c);
    free(x), free(t), free(gy), free(y), free(ry), free(gx), free(rgx);
  }
}

static void test_mse_geometry(void) {
  /* equal shapes merge into one flat dim; a broadcast operand keeps its own */
  const int64_t s[3] = {2, 3, 4}, row[1] = {4};
  const int ranks[2] = {3, 3}, ranks_b[2] = {3, 1};
  const int64_t *same[2] = {s, s}, *bc[2] = {s, row};
  eg_mse_geom g;
  eg_mse_geom_init(&g, 3, s, 2, ranks, same);
  EG_CHECK(g.rank == 1 && g.shape[0] == 24 && g.numel == 24);
  eg_mse_geom_init(&g, 3, s, 2, ranks_b, bc);
  EG_CHECK(g.rank == 2 && g.shape[0] == 6 && g.shape[1] == 4);
  EG_CHECK(g.stride[1][0] == 0 && g.stride[1][1] == 1);
}

int main(void) {
  EG_RUN(test_log_softmax);
  EG_RUN(test_log_softmax_stable);
  EG_RUN(test_log_softmax_nonfinite);
  EG_RUN(test_nll_loss);
  EG_RUN(test_nll_all_ignored);
  EG_RUN(test_nll_bad_target);
  EG_RUN(test_mse);
  EG_RUN(test_mse_geometry);
  return eg_test_summary();
}
