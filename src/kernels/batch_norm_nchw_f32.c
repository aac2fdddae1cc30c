/* batch_norm_nchw_f32.c — aten.native_batch_norm(_backward), channels-first, fp32.
 *
 * One channel is n contiguous runs of hw floats, `c * hw` apart. Per channel the work is a fixed
 * number of linear passes: forward training 3 (sum, centred squares, write), eval 1, backward
 * 2 (sums, write). Reductions accumulate in double; per-channel constants are computed in
 * double; the elementwise write passes evaluate in double and round once (see affine_f32).
 *
 * A forward may add a tensor (a residual connection) and clamp its output in the write pass (a
 * ReLU or ReLU6 fused into it), a backward
 * mask its gradient in both passes (threshold_backward or hardtanh_backward fused into it): the
 * same loops with one more select, bit for bit the two kernels' result.
 *
 * Two loop orders, sharing the per-channel constants (forward_affine, backward_consts):
 *   larger   one channel at a time, over its n runs (parallel over channels);
 *   hw <= EG_BN_SMALL_HW  ([N, C] inputs after a linear layer, the 4x4 and 2x2 planes of a
 *            small net's last blocks) a channel's runs are a vector or less, so blocks of
 *            EG_BN_BLOCK channels are swept image by image with per-channel accumulators
 *            (parallel over blocks) — a call per run per pass cost 5 ns an element on
 *            MobileNetV2's [8, 960, 2, 2] (1 ms a step of its 6). */
#include "kernels/batch_norm_nchw_f32.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/norm_sums_f32.h"
#include "util/parallel.h"
#include "util/simd.h"

/* Channels per block on the small-plane path, and the planes it takes. */
enum { EG_BN_BLOCK = 64, EG_BN_SMALL_HW = 16 };

/* ---- per-channel constants, shared by both loop orders ---- */

/* The affine map y = (x - mean) * scale + shift of channel ch. In training, `batch_mean` and
 * `ss` (the sum of squares about it) are the batch statistics, and the saved and running
 * statistics asked for are written here; in eval both are ignored. */
typedef struct bn_affine {
  double mean, scale, shift;
} bn_affine;

static bn_affine forward_affine(const eg_batch_norm_params *p, const eg_batch_norm_io *io,
                                int64_t ch, double batch_mean, double ss) {
  const int64_t m = p->n * p->hw;
  double mean, invstd;
  if (p->training) {
    mean = batch_mean;
    invstd = 1.0 / sqrt(ss / (double)m + p->eps);
    if (io->save_mean) io->save_mean[ch] = (float)mean;
    if (io->save_invstd) io->save_invstd[ch] = (float)invstd;
    if (io->new_running_mean)
      io->new_running_mean[ch] =
          (float)((1.0 - p->momentum) * io->running_mean[ch] + p->momentum * mean);
    if (io->new_running_var) {
      double unbiased = m > 1 ? ss / (double)(m - 1) : NAN; /* ATen's 0/0 */
      io->new_running_var[ch] =
          (float)((1.0 - p->momentum) * io->running_var[ch] + p->momentum * unbiased);
    }
  } else {
    mean = io->running_mean[ch];
    invstd = 1.0 / sqrt((double)io->running_var[ch] + p->eps);
  }
  return (bn_affine){mean, invstd * (io->weight ? io->weight[ch] : 1.0),
                     io->bias ? io->bias[ch] : 0.0};
}

/* The statistics channel ch was normalised with. */
static void backward_stats(const eg_batch_norm_params *p, const eg_batch_norm_backward_io *io,
                           int64_t ch, double *mean, double *invstd) {
  if (p->training) {
    *mean = io->save_mean[ch];
    *invstd = io->save_invstd[ch];
  } else {
    *mean = io->running_mean[ch];
    *invstd = 1.0 / sqrt((double)io->running_var[ch] + p->eps);
  }
}

/* gx = gy * k + (x - mean) * kx + k0 for channel ch, from sg = sum(gy) and
 * sgx = sum(gy * (x - mean)); also writes gw and gb where asked for. */
typedef struct bn_grad {
  double mean, k, kx, k0;
} bn_grad;

static bn_grad backward_consts(const eg_batch_norm_params *p,
                               const eg_batch_norm_backward_io *io, int64_t ch, double mean,
                               double invstd, double sg, double sgx) {
  const int64_t m = p->n * p->hw;
  const double inv_m = m > 0 ? 1.0 / (double)m : 0.0;
  if (io->gb) io->gb[ch] = (float)sg;
  if (io->gw) io->gw[ch] = (float)(sgx * invstd);
  bn_grad r = {mean, invstd * (io->weight ? io->weight[ch] : 1.0), 0.0, 0.0};
  if (p->training) {
    r.kx = -invstd * invstd * sgx * inv_m * r.k;
    r.k0 = -sg * inv_m * r.k;
  }
  return r;
}

static bool backward_needs_sums(const eg_batch_norm_params *p,
                                const eg_batch_norm_backward_io *io) {
  return io->gw || io->gb || (io->gx && p->training);
}

/* ---- hw > EG_BN_SMALL_HW: one channel at a time ---- */

/* The gradient a backward reads: gy, or with a mask (eg_batch_norm_backward_io.mask_x) the
 * masked gy threshold_backward / hardtanh_backward would have written. The loops below take
 * `masked` as a constant and are inlined into each caller, so each has an unmasked and a
 * masked copy, the same loop with one more select. */
typedef struct bn_mask {
  const float *x;
  float lo, hi;
} bn_mask;

#define EG_BN_INLINE static inline __attribute__((always_inline))

/* The mask is bit arithmetic on both comparisons: a `?:` or `||` on float comparisons leaves
 * a branch in the loop (GCC, -ftrapping-math), which then does not vectorise. A masked
 * element is +0, as both backwards write it. */
EG_BN_INLINE float grad_at(const float *gy, bn_mask mk, bool masked, int64_t i) {
  if (!masked) return gy[i];
  const uint32_t keep = (uint32_t)((mk.x[i] <= mk.lo) | (mk.x[i] >= mk.hi)) - 1u;
  uint32_t bits;
  memcpy(&bits, &gy[i], sizeof bits);
  bits &= keep;
  float g;
  memcpy(&g, &bits, sizeof g);
  return g;
}

/* sum(gy) and sum(gy * (x - mean)) in double, added to *sg and *sgx: two halves side by side, as
 * norm_sums_f32.h's reductions split theirs in quarters (two sums each make four accumulators).
 * The mask's x is at the same offset as gy's. */
EG_BN_INLINE void sums_centred_f32(const float *gy, const float *x, bn_mask mk, bool masked,
                                   int64_t len, double mean, double *sg, double *sgx) {
  const int64_t h = len / 2;
  double a0 = 0.0, a1 = 0.0, b0 = 0.0, b1 = 0.0;
#pragma omp simd reduction(+ : a0, a1, b0, b1)
  for (int64_t i = 0; i < h; i++) {
    const float g0 = grad_at(gy, mk, masked, i), g1 = grad_at(gy, mk, masked, h + i);
    a0 += g0;
    a1 += g1;
    b0 += (double)g0 * ((double)x[i] - mean);
    b1 += (double)g1 * ((double)x[h + i] - mean);
  }
  for (int64_t i = 2 * h; i < len; i++) {
    const float g = grad_at(gy, mk, masked, i);
    a0 += g;
    b0 += (double)g * ((double)x[i] - mean);
  }
  *sg += a0 + a1;
  *sgx += b0 + b1;
}

/* The write passes evaluate each element in double and round once. Rounding the per-channel
 * constants to float instead (the mean folded into the shift) would bias a whole channel:
 * x - mean_f drops a mean far below x's ulp (a normalised conv output's mean is ~1e-8 of its
 * spread) the same way for every element, an offset the reductions downstream then sum
 * coherently (seen as 3x PyTorch's gradient error on MobileNetV2's BN weights). */

/* hardtanh's clamp (activation_f32.h), in its order: NaN stays NaN, -0 stays -0. */
EG_BN_INLINE float clamp_f32(float y, float lo, float hi) {
  const float v = y < lo ? lo : y;
  return hi < v ? hi : v;
}

/* What a forward's write pass does after the affine map: add z (when `added`), clamp to
 * [lo, hi] (when `clamped`). */
typedef struct bn_after {
  const float *z;
  float lo, hi;
} bn_after;

/* y = (x - mean) * scale + shift over len floats, then `after` (z at the same offset as y). */
EG_BN_INLINE void affine_f32(const float *x, float *y, int64_t len, bn_affine a, bool added,
                             bool clamped, bn_after after) {
#pragma omp simd
  for (int64_t i = 0; i < len; i++) {
    float v = (float)(((double)x[i] - a.mean) * a.scale + a.shift);
    if (added) v += after.z[i];
    y[i] = clamped ? clamp_f32(v, after.lo, after.hi) : v;
  }
}

/* affine_f32 with io's addend and clamp, y and z at element offset off. */
EG_BN_INLINE void affine_io(const eg_batch_norm_io *io, int64_t off, int64_t len, bn_affine a) {
  const bn_after after = {io->add ? io->add + off : NULL, io->clamp_lo, io->clamp_hi};
  if (io->add && io->clamp) affine_f32(io->x + off, io->y + off, len, a, true, true, after);
  else if (io->clamp) affine_f32(io->x + off, io->y + off, len, a, false, true, after);
  else if (io->add) affine_f32(io->x + off, io->y + off, len, a, true, false, after);
  else affine_f32(io->x + off, io->y + off, len, a, false, false, after);
}

/* gx = gy * k + (x - mean) * kx + k0 over len floats. */
EG_BN_INLINE void grad_f32(const float *gy, const float *x, bn_mask mk, bool masked, float *gx,
                           int64_t len, bn_grad k) {
#pragma omp simd
  for (int64_t i = 0; i < len; i++)
    gx[i] = (float)((double)grad_at(gy, mk, masked, i) * k.k + ((double)x[i] - k.mean) * k.kx +
                    k.k0);
}

EG_SIMD_CLONES static void forward_channel(const eg_batch_norm_params *p, const eg_batch_norm_io *io,
                            int64_t ch) {
  const int64_t m = p->n * p->hw, stride = p->c * p->hw;
  const float *x0 = io->x + ch * p->hw;
  double mean = 0.0, ss = 0.0;
  if (p->training) {
    for (int64_t b = 0; b < p->n; b++) mean += eg_norm_sum_f32(x0 + b * stride, p->hw);
    mean = m > 0 ? mean / (double)m : NAN;
    for (int64_t b = 0; b < p->n; b++)
      ss += eg_norm_sumsq_centred_f32(x0 + b * stride, p->hw, mean);
  }
  bn_affine a = forward_affine(p, io, ch, mean, ss);
  for (int64_t b = 0; b < p->n; b++) affine_io(io, ch * p->hw + b * stride, p->hw, a);
}

/* The mask of io at element offset off (its x NULL when there is none). */
static bn_mask mask_at(const eg_batch_norm_backward_io *io, int64_t off) {
  return (bn_mask){io->mask_x ? io->mask_x + off : NULL, io->mask_lo, io->mask_hi};
}

EG_BN_INLINE void backward_channel_with(const eg_batch_norm_params *p,
                                        const eg_batch_norm_backward_io *io, int64_t ch,
                                        bool masked) {
  const int64_t stride = p->c * p->hw;
  double mean, invstd, sg = 0.0, sgx = 0.0;
  backward_stats(p, io, ch, &mean, &invstd);
  if (backward_needs_sums(p, io))
    for (int64_t b = 0; b < p->n; b++) {
      int64_t off = b * stride + ch * p->hw;
      sums_centred_f32(io->gy + off, io->x + off, mask_at(io, off), masked, p->hw, mean, &sg,
                       &sgx);
    }
  bn_grad k = backward_consts(p, io, ch, mean, invstd, sg, sgx);
  if (!io->gx) return;
  for (int64_t b = 0; b < p->n; b++) {
    int64_t off = b * stride + ch * p->hw;
    grad_f32(io->gy + off, io->x + off, mask_at(io, off), masked, io->gx + off, p->hw, k);
  }
}

EG_SIMD_CLONES static void backward_channel(const eg_batch_norm_params *p,
                                            const eg_batch_norm_backward_io *io, int64_t ch) {
  if (io->mask_x) backward_channel_with(p, io, ch, true);
  else backward_channel_with(p, io, ch, false);
}

/* ---- hw <= EG_BN_SMALL_HW: blocks of channels, image by image ---- */

/* Sum of the hw floats at x, in double. */
static inline double run_sum(const float *x, int64_t hw) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t e = 0; e < hw; e++) s += x[e];
  return s;
}

static void forward_block(const eg_batch_norm_params *p, const eg_batch_norm_io *io,
                          int64_t c0, int64_t nb) {
  const int64_t hw = p->hw, m = p->n * hw;
  double mean[EG_BN_BLOCK] = {0}, ss[EG_BN_BLOCK] = {0}, scale[EG_BN_BLOCK], shift[EG_BN_BLOCK];
  if (p->training) {
    for (int64_t b = 0; b < p->n; b++) {
      const float *x = io->x + (b * p->c + c0) * hw;
      for (int64_t k = 0; k < nb; k++) mean[k] += run_sum(x + k * hw, hw);
    }
    for (int64_t k = 0; k < nb; k++) mean[k] = m > 0 ? mean[k] / (double)m : NAN;
    for (int64_t b = 0; b < p->n; b++) {
      const float *x = io->x + (b * p->c + c0) * hw;
      for (int64_t k = 0; k < nb; k++) {
        double q = 0.0;
#pragma omp simd reduction(+ : q)
        for (int64_t e = 0; e < hw; e++) {
          const double d = (double)x[k * hw + e] - mean[k];
          q += d * d;
        }
        ss[k] += q;
      }
    }
  }
  for (int64_t k = 0; k < nb; k++) {
    bn_affine a = forward_affine(p, io, c0 + k, mean[k], ss[k]);
    mean[k] = a.mean;
    scale[k] = a.scale;
    shift[k] = a.shift;
  }
  for (int64_t b = 0; b < p->n; b++)
    for (int64_t k = 0; k < nb; k++)
      affine_io(io, (b * p->c + c0 + k) * hw, hw, (bn_affine){mean[k], scale[k], shift[k]});
}

EG_BN_INLINE void backward_block_with(const eg_batch_norm_params *p,
                                      const eg_batch_norm_backward_io *io, int64_t c0, int64_t nb,
                                      bool masked) {
  const int64_t hw = p->hw;
  double mean[EG_BN_BLOCK], invstd[EG_BN_BLOCK], sg[EG_BN_BLOCK] = {0}, sgx[EG_BN_BLOCK] = {0};
  bn_grad kk[EG_BN_BLOCK];
  for (int64_t k = 0; k < nb; k++) backward_stats(p, io, c0 + k, &mean[k], &invstd[k]);
  if (backward_needs_sums(p, io))
    for (int64_t b = 0; b < p->n; b++) {
      const float *gy = io->gy + (b * p->c + c0) * hw, *x = io->x + (b * p->c + c0) * hw;
      const bn_mask mk = mask_at(io, (b * p->c + c0) * hw);
      for (int64_t k = 0; k < nb; k++) {
        double a = 0.0, q = 0.0;
#pragma omp simd reduction(+ : a, q)
        for (int64_t e = 0; e < hw; e++) {
          const float g = grad_at(gy, mk, masked, k * hw + e);
          a += g;
          q += (double)g * ((double)x[k * hw + e] - mean[k]);
        }
        sg[k] += a;
        sgx[k] += q;
      }
    }
  for (int64_t k = 0; k < nb; k++)
    kk[k] = backward_consts(p, io, c0 + k, mean[k], invstd[k], sg[k], sgx[k]);
  if (!io->gx) return;
  for (int64_t b = 0; b < p->n; b++) {
    const float *gy = io->gy + (b * p->c + c0) * hw, *x = io->x + (b * p->c + c0) * hw;
    const bn_mask mk = mask_at(io, (b * p->c + c0) * hw);
    float *gx = io->gx + (b * p->c + c0) * hw;
    for (int64_t k = 0; k < nb; k++)
#pragma omp simd
      for (int64_t e = 0; e < hw; e++)
        gx[k * hw + e] = (float)(grad_at(gy, mk, masked, k * hw + e) * kk[k].k +
                                 ((double)x[k * hw + e] - kk[k].mean) * kk[k].kx + kk[k].k0);
  }
}

static void backward_block(const eg_batch_norm_params *p, const eg_batch_norm_backward_io *io,
                           int64_t c0, int64_t nb) {
  if (io->mask_x) backward_block_with(p, io, c0, nb, true);
  else backward_block_with(p, io, c0, nb, false);
}

/* ---- entry points ---- */

/* Every channel of the forward (fwd) or the backward (bwd; exactly one of the two is non-NULL),
 * in the loop order for p->hw, parallel over channels or blocks when big enough. */
EG_SIMD_CLONES static void run_channels(const eg_batch_norm_params *p, const eg_batch_norm_io *fwd,
                         const eg_batch_norm_backward_io *bwd) {
  const bool big = p->n * p->c * p->hw >= EG_NORM_OMP_MIN;
  if (p->hw <= EG_BN_SMALL_HW) {
    const int64_t blocks = (p->c + EG_BN_BLOCK - 1) / EG_BN_BLOCK;
    EG_OMP_FOR_IF(big, for (int64_t i = 0; i < blocks; i++) {
      int64_t c0 = i * EG_BN_BLOCK, nb = p->c - c0 < EG_BN_BLOCK ? p->c - c0 : EG_BN_BLOCK;
      if (fwd) forward_block(p, fwd, c0, nb);
      else backward_block(p, bwd, c0, nb);
    });
    return;
  }
  EG_OMP_FOR_IF(big, for (int64_t ch = 0; ch < p->c; ch++) {
    if (fwd) forward_channel(p, fwd, ch);
    else backward_channel(p, bwd, ch);
  });
}

EG_SIMD_CLONES
void eg_batch_norm_nchw_f32(const eg_batch_norm_params *p, const eg_batch_norm_io *io) {
  run_channels(p, io, NULL);
}

EG_SIMD_CLONES
void eg_batch_norm_backward_nchw_f32(const eg_batch_norm_params *p,
                                     const eg_batch_norm_backward_io *io) {
  run_channels(p, NULL, io);
}
