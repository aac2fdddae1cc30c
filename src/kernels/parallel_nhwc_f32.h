/* parallel_nhwc_f32.h — threading policy shared by the htp executor's NHWC kernels.
 *
 * Our own loops use OpenMP; sgemm (OpenBLAS) threads itself and is never called inside an
 * OpenMP parallel region. A pthreads build of OpenBLAS keeps its own worker threads, and
 * libgomp's idle workers then spin on the cores sgemm is using (measured on 2 cores by the NCHW
 * kernels: a 3x slowdown), so with such a build our loops stay serial. Internal header: kernels
 * only. */
#ifndef EG_KERNELS_PARALLEL_NHWC_F32_H
#define EG_KERNELS_PARALLEL_NHWC_F32_H

#include <stdbool.h>
#include <stdint.h>

#include <cblas.h>

/* Loops with less work than this (elements touched) stay on one thread. */
enum { EG_NHWC_OMP_MIN = 1 << 15 };

/* Whether a loop of `work` elements may fork OpenMP threads. */
static inline bool eg_nhwc_omp_worth(int64_t work) {
#ifdef OPENBLAS_THREAD
  if (openblas_get_parallel() == OPENBLAS_THREAD) return false;
#endif
  return work >= EG_NHWC_OMP_MIN;
}

/* n floats rounded up to a multiple of 16 (64 bytes), so scratch regions stay line-aligned. */
static inline int64_t eg_nhwc_round16(int64_t n) { return (n + 15) / 16 * 16; }

#endif
