/* nll_loss_f32.c — see nll_loss_f32.h. Plain loops: one element of x is touched per row, so the
 * cost is the target scan (and, backward, zeroing gx); threads would not pay for themselves. */
#include "kernels/nll_loss_f32.h"

#include <math.h>
#include <string.h>

static bool per_sample(const eg_nll_params *p) {
  return p->reduction == EG_REDUCTION_NONE && p->batched;
}

static bool in_range(const eg_nll_params *p, int64_t t) { return t >= 0 && t < p->classes; }

/* The offset in x (and gx) of class t of sample b (flat over [batch, inner]). */
static int64_t at(const eg_nll_params *p, int64_t b, int64_t t) {
  return ((b / p->inner) * p->classes + t) * p->inner + b % p->inner;
}

int64_t eg_nll_loss_f32(const eg_nll_params *p, const float *x, const int64_t *target,
                        const float *weight, float *out, float *total_weight) {
  const int64_t samples = p->batch * p->inner;
  *total_weight = 0;
  if (per_sample(p)) {
    for (int64_t b = 0; b < samples; b++) {
      int64_t t = target[b];
      if (t == p->ignore_index) {
        out[b] = 0;
        continue;
      }
      if (!in_range(p, t)) return b;
      out[b] = -x[at(p, b, t)] * (weight ? weight[t] : 1.0f);
    }
    return -1;
  }
  if (samples == 0) {
    *out = p->reduction == EG_REDUCTION_MEAN ? NAN : 0.0f;
    return -1;
  }
  double loss = 0, wsum = 0;
  int64_t counted = 0;
  for (int64_t b = 0; b < samples; b++) {
    int64_t t = target[b];
    if (t == p->ignore_index) continue;
    if (!in_range(p, t)) return b;
    float w = weight ? weight[t] : 1.0f;
    loss -= (double)x[at(p, b, t)] * w;
    wsum += w;
    counted++;
  }
  float tw = weight ? (float)wsum : (float)counted;
  float l = (float)loss;
  *out = p->reduction == EG_REDUCTION_MEAN ? l / tw : l;
  *total_weight = tw;
  return -1;
}

int64_t eg_nll_loss_backward_f32(const eg_nll_params *p, const float *gy, const int64_t *target,
                                 const float *weight, const float *total_weight, float *gx) {
  const int64_t samples = p->batch * p->inner, numel = samples * p->classes;
  if (numel > 0) memset(gx, 0, (size_t)numel * sizeof(float));
  const bool each = per_sample(p);
  float grad = 0;
  if (!each) grad = -(p->reduction == EG_REDUCTION_MEAN ? *gy / *total_weight : *gy);
  for (int64_t b = 0; b < samples; b++) {
    int64_t t = target[b];
    if (t == p->ignore_index) continue;
    if (!in_range(p, t)) return b;
    float w = weight ? weight[t] : 1.0f;
    gx[at(p, b, t)] = each ? -w * gy[b] : w * grad;
  }
  return -1;
}
