/* attention_f32 — scaled-dot-product attention and its backward, fp32, dense C-ordered
 * [problems, rows, cols] tensors, products by CBLAS sgemm. ATen's
 * _scaled_dot_product_flash_attention_for_cpu(_backward) semantics.
 *
 * One problem is (q [L, E], k [S, E], v [S, E]); p->problems of them lie back to back (B * H).
 * Forward, for each query row i:
 *   s[i, j]  = scale * q[i] . k[j] + mask[i, j]       (j > i masked to -inf when causal:
 *                                                    top-left aligned, also when L != S)
 *   m        = max_j s[i, j]                         (NaN scores do not raise it)
 *   out[i]   = sum_j exp(s[i, j] - m) v[j] / sum_j exp(s[i, j] - m)
 *   lse[i]   = m + log(sum_j exp(s[i, j] - m))
 * A row whose scores are all -inf (fully masked) gives out[i] = 0 and lse[i] = 0, as ATen's
 * kernel does. Softmax sums accumulate in float, the exponentials are expf.
 * Backward, from the forward's out and lse as given (not recomputed):
 *   P    = exp(s - lse)          dV = P^T gout            dP = gout V^T
 *   D[i] = gout[i] . out[i]      dS = P * (dP - D)        dQ = scale dS K   dK = scale dS^T Q
 * The mask is read at mask[b * mask_sb + h * mask_sh + i * mask_si + j * mask_sj] for problem
 * b * heads + h: strides of 0 broadcast it. L, S and E must each fit an int (sgemm's type) and
 * be >= 1 except L, which may be 0; callers check. Outputs must not overlap the inputs. */
#ifndef EG_KERNELS_ATTENTION_F32_H
#define EG_KERNELS_ATTENTION_F32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eg_attention_params {
  int64_t problems, heads; /* B * H problems; heads splits a problem index into (b, h) */
  int64_t l, s, e;         /* query length, key/value length, head dim */
  float scale;
  bool causal;
  int64_t mask_sb, mask_sh, mask_si, mask_sj; /* element strides of the mask, 0: broadcast */
} eg_attention_params;

typedef struct eg_attention_io {
  const float *q, *k, *v, *mask; /* mask NULL: none */
  float *out, *lse;
} eg_attention_io;

typedef struct eg_attention_backward_io {
  const float *gout, *q, *k, *v, *out, *lse, *mask;
  float *gq, *gk, *gv;
} eg_attention_backward_io;

/* Scratch bytes each call needs (64-byte aligned by the caller). */
size_t eg_attention_scratch_bytes(const eg_attention_params *p);
size_t eg_attention_backward_scratch_bytes(const eg_attention_params *p);

void eg_attention_f32(const eg_attention_params *p, const eg_attention_io *io, void *scratch);
void eg_attention_backward_f32(const eg_attention_params *p, const eg_attention_backward_io *io,
                               void *scratch);

/* aten._safe_softmax, the softmax of the unfused attention ATen falls back to: softmax along
 * `dim` of x seen as [outer, dim, inner] (kernels/log_softmax_f32.h), except that a line whose
 * inputs are all -inf (a fully masked query) gives zeros instead of NaN. x and y must not
 * overlap. */
void eg_safe_softmax_f32(const float *x, float *y, int64_t outer, int64_t dim, int64_t inner);

#endif
