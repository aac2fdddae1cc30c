/* vec8_nhwc_f32.h — the NHWC kernels' register blocks: 8 floats as one GCC vector, for loops
 * whose sums must stay in registers over many products (depthwise convolutions' taps), where
 * the compiler keeps a float array in memory. Each operation on it is the float operation per
 * lane (no contraction: C11), so a kernel using it computes what its scalar loop would, bit for
 * bit. Not for compilers without GCC's vector extensions (GCC and Clang have them). */
#ifndef EG_KERNELS_VEC8_NHWC_F32_H
#define EG_KERNELS_VEC8_NHWC_F32_H

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

#endif
