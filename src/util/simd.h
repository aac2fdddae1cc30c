/* simd.h — run-time choice of the SIMD instruction set for the hot CPU kernels.
 *
 * edgegrad is built for the target's baseline ISA only (no -march: the same library runs on
 * every x86-64 CPU, and the aarch64 build on every ARMv8-A core, whose baseline already has
 * NEON). On x86-64 the kernels whose loops vectorise (`omp simd`, straight-line channel
 * loops) are compiled twice with EG_SIMD_CLONES, GCC's function multiversioning: once for
 * x86-64-v3 (AVX2, FMA, BMI2) and once for the baseline (SSE2); the loader picks the version
 * the running CPU supports, once, through an ifunc resolver. OpenMP's outlined parallel bodies
 * inherit the clones. Elsewhere (aarch64, clang, non-glibc, -DEG_NO_SIMD_CLONES) the macro is
 * empty and the function is built once for the baseline.
 *
 * Results do not depend on the version picked beyond the order of `omp simd` reductions: the
 * build is ISO C (-std=c11), so GCC contracts no a*b+c into an FMA in either version.
 *
 * Hand-written AVX2 (intrinsics) goes in a function marked EG_TARGET_AVX2, called only when
 * eg_simd_avx2() says the running CPU has AVX2, inside #if EG_SIMD_X86, with a portable path
 * beside it.
 *
 * Use: put EG_SIMD_CLONES before the definition of a function whose loops do the work (a
 * kernel's entry point or its per-chunk worker), not on tiny helpers: a clone is not inlined
 * into its callers, and each call goes through the resolved pointer. */
#ifndef EG_UTIL_SIMD_H
#define EG_UTIL_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(EG_NO_SIMD_CLONES)
#define EG_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define EG_SIMD_CLONES
#endif

/* EG_KEEP_LOOPS: GCC turns a copy or zero-fill loop into a memcpy/memset call; for the short
 * rows of small planes (a few floats each) the call costs more than the copy, so the
 * functions that copy many short rows keep their loops (GCC only; clang leaves them). */
#if defined(__GNUC__) && !defined(__clang__)
#define EG_KEEP_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define EG_KEEP_LOOPS
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(EG_NO_SIMD_CLONES)
#define EG_SIMD_X86 1
#define EG_TARGET_AVX2 __attribute__((target("avx2,fma")))
/* Whether the running CPU has AVX2 and FMA (libgcc's CPU model, read once at start-up). */
#define eg_simd_avx2() (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#else
#define EG_SIMD_X86 0
#endif

#endif
