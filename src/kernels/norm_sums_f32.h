/* norm_sums_f32 — internal to the channels-first normalisation kernels (batch_norm_nchw_f32.c,
 * group_norm_nchw_f32.c): the double-precision reductions their statistics are made of, and
 * their shared threading threshold. Not a public kernel interface.
 *
 * Both reductions split [0, len) into four quarters summed side by side (four independent
 * vector accumulators hide the latency of the double adds; one would make the loop
 * latency-bound rather than memory-bound), then add the partial sums in a fixed order, so a
 * result depends only on the data and len, never on the caller or the thread count. */
#ifndef EG_KERNELS_NORM_SUMS_F32_H
#define EG_KERNELS_NORM_SUMS_F32_H

#include <stdint.h>

/* Below this many elements a normalisation runs on one thread: a parallel region costs more. */
enum { EG_NORM_OMP_MIN = 1 << 15 };

/* sum(x[0..len)) in double; 0 for len 0. */
double eg_norm_sum_f32(const float *x, int64_t len);

/* sum((x[i] - mean)^2) over [0, len) in double; 0 for len 0. */
double eg_norm_sumsq_centred_f32(const float *x, int64_t len, double mean);

#endif
