/* parallel_nhwc_f32.h — threading policy shared by the htp executor's NHWC kernels.
 *
 * Our own loops use OpenMP, and so does the kernels' sgemm (eg_nhwc_sgemm): a large call is
 * split over a region of its own, each thread running its share single-threaded, and OpenBLAS
 * never threads a call itself; a kernel that splits its own work into pieces (TransposeConv2d)
 * runs each piece's sgemms whole on the piece's thread (eg_nhwc_blas_nests). A pthreads build of
 * OpenBLAS keeps its own worker threads, and libgomp's idle workers then spin on the cores sgemm
 * is using (measured on 2 cores by the NCHW kernels: a 3x slowdown), so with such a build our
 * loops stay serial. Also the default chunk
 * size of the GEMM-based kernels. Internal header: the NHWC kernels and the executor that plans
 * them. */
#ifndef EG_KERNELS_PARALLEL_NHWC_F32_H
#define EG_KERNELS_PARALLEL_NHWC_F32_H

#include <stdbool.h>
#include <stdint.h>

#include <cblas.h>
#include <omp.h>

#include "kernels/conv_im2col.h"

/* Loops with less work than this (elements touched) stay on one thread: 256K elements, some
 * 50-100 us of a memory-bound loop. Every region the executor forks makes the calling thread wait
 * for the other one at its end, and on a machine whose cores other processes also use, that
 * wait is a scheduler slice whenever the other thread is off its core; at 32K a MobileNetV2 head
 * .egp step forked 174 regions and ran 3-5x slower on 2 threads than on 1 there (74 now). */
enum { EG_NHWC_OMP_MIN = 1 << 18 };

/* Whether a loop of `work` elements may fork OpenMP threads. Never inside a parallel region:
 * kernels that split their work across threads themselves (TransposeConv2d's pieces) run the
 * loops of each piece on that piece's thread, whatever OMP_NESTED says. */
static inline bool eg_nhwc_omp_worth(int64_t work) {
#ifdef OPENBLAS_THREAD
  if (openblas_get_parallel() == OPENBLAS_THREAD) return false;
#endif
  return work >= EG_NHWC_OMP_MIN && !omp_in_parallel();
}

/* Whether sgemm called from inside an OpenMP parallel region runs on the calling thread only,
 * so that several such calls can run side by side, one per thread: true for OpenBLAS's OpenMP
 * build (it checks omp_in_parallel) and its single-threaded build; false for the pthreads
 * build, whose own workers would oversubscribe the cores. */
static inline bool eg_nhwc_blas_nests(void) {
#ifdef OPENBLAS_THREAD
  return openblas_get_parallel() != OPENBLAS_THREAD;
#else
  return false;
#endif
}

/* Threads sgemm will use (1 when unknown). */
static inline int eg_nhwc_blas_threads(void) {
#ifdef OPENBLAS_THREAD
  const int t = openblas_get_num_threads();
  return t > 1 ? t : 1;
#else
  return 1;
#endif
}

/* Multiply-adds per thread from which an sgemm is split over the threads (below: one thread
 * runs it whole). OpenBLAS 0.3.21 runs calls of up to 1e6 multiply-adds through small-matrix
 * kernels that sum in another order than its blocked ones, so a share of a call just above that
 * would round unlike the whole call (1x1 weight gradients of a 32x32 ResNet, [32, 16] by K =
 * 2048, differed in the last bits); from 2^20 per share on, both run blocked and every element
 * is summed alike. */
#define EG_NHWC_SGEMM_SPLIT_MACS ((int64_t)1 << 20)

/* C = op(A) op(B) + beta*C (row-major, alpha 1), never threaded by OpenBLAS itself: OpenBLAS's
 * own split (of any call above 2^18 multiply-adds, outside a region) synchronises its threads
 * many times per call by spinning on flags; on 2 cores the executor's GEMMs (channels 16-1280,
 * batch 8) ran slower on 2 threads than on 1, and on a machine whose cores other processes also
 * use, where one of the two threads waits for a core, whole .egp steps ran 3-10x slower. So a
 * call with enough work per thread opens a region and each thread runs its share
 * single-threaded (eg_conv_sgemm_team: whole multiples of 8 of C's longer side, K never split,
 * so every element is summed as by the whole call); a smaller one runs whole on the calling
 * thread (OpenBLAS follows omp_get_max_threads, set to 1 around the call); on a thread of
 * someone else's team (TransposeConv2d's pieces) the whole call, which OpenBLAS runs there. */
static inline void eg_nhwc_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                 const float *a, int64_t lda, const float *b, int64_t ldb,
                                 float beta, float *c, int64_t ldc) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads > 1 && m * n * k >= threads * EG_NHWC_SGEMM_SPLIT_MACS && eg_nhwc_blas_nests()) {
#pragma omp parallel
    eg_conv_sgemm_team(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (threads > 1) omp_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
  if (threads > 1) omp_set_num_threads(threads);
}

/* Default target size of one im2col/col2im chunk: 4 MiB per sgemm thread. Fewer, larger sgemm
 * calls mean fewer of OpenBLAS's thread synchronisations, and each thread's share of the column
 * matrix stays near L2 size. Measured on the dgrad benchmark shapes: one thread, 1-8 MiB within
 * noise; two threads, 8 MiB chunks beat 2 MiB by 5-10% on r18-l3/l4 (up to 20% while the
 * machine's second core was contended). Callers fix the value at plan time and pass it in the
 * kernel params, so a scratch size and the kernel call always agree. */
static inline int64_t eg_nhwc_chunk_bytes(void) {
  const int t = eg_nhwc_blas_threads();
  return ((int64_t)4 << 20) * (t < 8 ? t : 8);
}

/* n floats rounded up to a multiple of 16 (64 bytes), so scratch regions stay line-aligned. */
static inline int64_t eg_nhwc_round16(int64_t n) { return (n + 15) / 16 * 16; }

#endif
