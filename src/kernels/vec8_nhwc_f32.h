/* vec8_nhwc_f32.h — the NHWC kernels' register blocks: 8 floats as one GCC vector, for loops
 * whose sums must stay in registers over many products (depthwise convolutions' taps), where
 * the compiler keeps a float array in memory. Each operation on it is the float operation per
 * lane (no contraction: C11), so a kernel using it computes what its scalar loop would, bit for
 * bit. Not for compilers without GCC's vector extensions (GCC and Clang have them). */
#ifndef EG_KERNELS_VEC8_NHWC_F32_H
#define EG_KERNELS_VEC8_NHWC_F32_H

#include <stdint.h>
#include <string.h>

typedef float eg_v8 __attribute__((vector_size(32)));

/* v <- the 8 floats at p, any alignment; p <- v. Macros: an eg_v8 passed by value would change
 * the ABI between a function's SIMD clones (util/simd.h). */
#define EG_V8_LOAD(v, p) memcpy(&(v), (p), sizeof(eg_v8))
#define EG_V8_STORE(p, v) memcpy((p), &(v), sizeof(eg_v8))

/* A helper inlined into its caller's clone with constant arguments, and a loop over a few
 * register blocks unrolled, so the blocks stay in registers. */
#define EG_V8_INLINE inline __attribute__((always_inline))
#define EG_V8_UNROLL4 _Pragma("GCC unroll 4")

/* ---- a register block of np (1 to 4) output pixels by 16 channels (the depthwise convs) ---- */

/* acc[q] <- bias[0, 16) (or 0) for each of the np pixels. */
static EG_V8_INLINE void eg_v8_block_init(eg_v8 (*acc)[2], const int np, const float *bias) {
  EG_V8_UNROLL4
  for (int q = 0; q < np; q++)
    for (int h = 0; h < 2; h++) {
      acc[q][h] = (eg_v8){0};
      if (bias) EG_V8_LOAD(acc[q][h], bias + 8 * h);
    }
}

/* acc[q] += x[q * xs + (0 .. 16)] * w[0 .. 16) for each of the np pixels: one tap, its filter
 * vector loaded once for all of them. */
static EG_V8_INLINE void eg_v8_block_tap(eg_v8 (*acc)[2], const int np, const float *w,
                                         const float *x, int64_t xs) {
  eg_v8 w0, w1;
  EG_V8_LOAD(w0, w);
  EG_V8_LOAD(w1, w + 8);
  EG_V8_UNROLL4
  for (int q = 0; q < np; q++) {
    eg_v8 x0, x1;
    EG_V8_LOAD(x0, x + q * xs);
    EG_V8_LOAD(x1, x + q * xs + 8);
    acc[q][0] += x0 * w0;
    acc[q][1] += x1 * w1;
  }
}

/* y[q * ys + (0 .. 16)] <- acc[q] for each of the np pixels. */
static EG_V8_INLINE void eg_v8_block_store(float *y, int64_t ys, eg_v8 (*acc)[2], const int np) {
  EG_V8_UNROLL4
  for (int q = 0; q < np; q++) {
    EG_V8_STORE(y + q * ys, acc[q][0]);
    EG_V8_STORE(y + q * ys + 8, acc[q][1]);
  }
}

#endif
