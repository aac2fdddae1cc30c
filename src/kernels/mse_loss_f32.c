/* mse_loss_f32.c — see mse_loss_f32.h. The innermost merged dim is walked as a row (a plain
 * loop when every operand is contiguous along it); an odometer over the outer dims keeps each
 * operand's row offset. Element-wise work is memory-bound, so it stays on one thread. */
#include "kernels/mse_loss_f32.h"

#include <stdbool.h>
#include <string.h>

void eg_mse_geom_init(eg_mse_geom *g, int out_rank, const int64_t *out_shape, int count,
                      const int *ranks, const int64_t *const *shapes) {
  memset(g, 0, sizeof *g);
  g->numel = 1;
  for (int d = 0; d < out_rank; d++) {
    g->numel *= out_shape[d];
    if (out_shape[d] == 1) continue; /* every operand has size 1 here too */
    int64_t st[EG_MSE_OPERANDS];
    for (int k = 0; k < count; k++) {
      int od = d - (out_rank - ranks[k]);
      st[k] = 0;
      if (od >= 0 && shapes[k][od] != 1) {
        st[k] = 1;
        for (int e = od + 1; e < ranks[k]; e++) st[k] *= shapes[k][e];
      }
    }
    /* merge into the previous dim when that is contiguous with this one for every operand */
    bool merge = g->rank > 0;
    for (int k = 0; merge && k < count; k++)
      merge = g->stride[k][g->rank - 1] == st[k] * out_shape[d];
    if (merge) {
      g->shape[g->rank - 1] *= out_shape[d];
      for (int k = 0; k < count; k++) g->stride[k][g->rank - 1] = st[k];
    } else {
      g->shape[g->rank] = out_shape[d];
      for (int k = 0; k < count; k++) g->stride[k][g->rank] = st[k];
      g->rank++;
    }
  }
}

/* Row offsets of the operands at the current outer position. */
typedef struct cursor {
  int64_t idx[EG_MAX_RANK];
  int64_t off[EG_MSE_OPERANDS];
} cursor;

static void cursor_step(cursor *c, const eg_mse_geom *g) {
  for (int d = g->rank - 2; d >= 0; d--) {
    for (int k = 0; k < EG_MSE_OPERANDS; k++) c->off[k] += g->stride[k][d];
    if (++c->idx[d] < g->shape[d]) return;
    for (int k = 0; k < EG_MSE_OPERANDS; k++) c->off[k] -= g->stride[k][d] * g->shape[d];
    c->idx[d] = 0;
  }
}

/* The innermost row: its length and each operand's stride along it. */
static int64_t row_len(const eg_mse_geom *g, int64_t s[EG_MSE_OPERANDS]) {
  for (int k = 0; k < EG_MSE_OPERANDS; k++) s[k] = g->rank ? g->stride[k][g->rank - 1] : 0;
  return g->rank ? g->shape[g->rank - 1] : 1;
}

void eg_mse_loss_none_f32(const eg_mse_geom *g, const float *x, const float *t, float *y) {
  if (g->numel == 0) return;
  int64_t s[EG_MSE_OPERANDS];
  const int64_t len = row_len(g, s), rows = g->numel / len;
  cursor c = {{0}, {0}};
  for (int64_t r = 0; r < rows; r++, cursor_step(&c, g)) {
    const float *xr = x + c.off[0], *tr = t + c.off[1];
    float *yr = y + r * len;
    if (s[0] == 1 && s[1] == 1) {
      for (int64_t i = 0; i < len; i++) yr[i] = (xr[i] - tr[i]) * (xr[i] - tr[i]);
    } else {
      for (int64_t i = 0; i < len; i++) {
        float dlt = xr[i * s[0]] - tr[i * s[1]];
        yr[i] = dlt * dlt;
      }
    }
  }
}

double eg_mse_loss_sum_f32(const eg_mse_geom *g, const float *x, const float *t) {
  if (g->numel == 0) return 0;
  int64_t s[EG_MSE_OPERANDS];
  const int64_t len = row_len(g, s), rows = g->numel / len;
  cursor c = {{0}, {0}};
  double sum = 0;
  for (int64_t r = 0; r < rows; r++, cursor_step(&c, g)) {
    const float *xr = x + c.off[0], *tr = t + c.off[1];
    double s0 = 0, s1 = 0;
    int64_t i = 0;
    for (; i + 2 <= len; i += 2) {
      float d0 = xr[i * s[0]] - tr[i * s[1]], d1 = xr[(i + 1) * s[0]] - tr[(i + 1) * s[1]];
      s0 += d0 * d0;
      s1 += d1 * d1;
    }
    for (; i < len; i++) {
      float d0 = xr[i * s[0]] - tr[i * s[1]];
      s0 += d0 * d0;
    }
    sum += s0 + s1;
  }
  return sum;
}

void eg_mse_loss_backward_f32(const eg_mse_geom *g, float norm, const float *x, const float *t,
                              const float *gy, float *gx) {
  if (g->numel == 0) return;
  int64_t s[EG_MSE_OPERANDS];
  const int64_t len = row_len(g, s), rows = g->numel / len;
  cursor c = {{0}, {0}};
  for (int64_t r = 0; r < rows; r++, cursor_step(&c, g)) {
    const float *xr = x + c.off[0], *tr = t + c.off[1], *gr = gy + c.off[2];
    float *o = gx + r * len;
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
      for (int64_t i = 0; i < len; i++) o[i] = norm * (xr[i] - tr[i]) * gr[i];
    } else {
      for (int64_t i = 0; i < len; i++)
        o[i] = norm * (xr[i * s[0]] - tr[i * s[1]]) * gr[i * s[2]];
    }
  }
}
