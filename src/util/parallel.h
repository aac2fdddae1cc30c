/* parallel.h — OpenMP regions entered only where a second thread joins.
 *
 * libgomp sets up a team for every parallel region it enters, also one that a false `if`
 * clause or a single available thread leaves to the calling thread alone: a team allocated,
 * initialised and freed, about 1.5 us and a malloc/free pair each (measured on this project's
 * 2-core host), and a training step of small tensors enters hundreds of them (ResNet-18 head,
 * batch 8 of 64x64: 309 per CPU step, 419 per .egp step; MobileNetV2 head 741). The macros run
 * their statement in a region when eg_omp_forks says a second thread would join, else directly
 * on the calling thread, where omp_get_num_threads() is 1 and omp_get_thread_num() 0 as in a
 * team of one: the statement computes the same either way. It must hold no #pragma line (a
 * macro argument cannot). */
#ifndef EG_UTIL_PARALLEL_H
#define EG_UTIL_PARALLEL_H

#include <stdbool.h>
#include <stdint.h>

#include <omp.h>

/* Whether a region asked for when `worth` holds would have more than one thread. */
static inline bool eg_omp_forks(bool worth) {
  return worth && omp_get_max_threads() > 1 && !omp_in_parallel();
}

/* The block, in a parallel region when eg_omp_forks(worth). */
#define EG_OMP_PARALLEL_IF(worth, ...)       \
  do {                                       \
    if (eg_omp_forks(worth)) {               \
      _Pragma("omp parallel") { __VA_ARGS__ } \
    } else {                                 \
      __VA_ARGS__                            \
    }                                        \
  } while (0)

/* The for statement, shared out statically over a parallel region when eg_omp_forks(worth). */
#define EG_OMP_FOR_IF(worth, ...)                             \
  do {                                                        \
    if (eg_omp_forks(worth)) {                                \
      _Pragma("omp parallel for schedule(static)") __VA_ARGS__ \
    } else {                                                  \
      __VA_ARGS__                                             \
    }                                                         \
  } while (0)

/* ---- one region per kernel call ----
 * A kernel whose stages (im2col, GEMM, unpacking) would each open a region of their own may run
 * them all in one EG_OMP_PARALLEL_IF region instead: its loops are then EG_OMP_FOR_TEAM loops,
 * shared out over the team the region made (every thread of it must reach each one), and work
 * that is not a loop is divided by eg_omp_share. Outside a region the same code runs whole on the
 * calling thread, or forks per loop as EG_OMP_FOR_IF. Such code must not be called by the threads
 * of someone else's team one by one (each would take only its share). */

/* The for statement: inside a team of more than one thread a worksharing loop over it, shared
 * out statically, ending in a barrier; else as EG_OMP_FOR_IF(worth). */
#define EG_OMP_FOR_TEAM(worth, ...)                           \
  do {                                                        \
    if (omp_get_num_threads() > 1) {                          \
      _Pragma("omp for schedule(static)") __VA_ARGS__          \
    } else {                                                  \
      EG_OMP_FOR_IF(worth, __VA_ARGS__);                      \
    }                                                         \
  } while (0)

/* Every thread of the team waits here for the others (nothing outside a region). */
static inline void eg_omp_barrier(void) {
  if (omp_get_num_threads() > 1) {
    _Pragma("omp barrier")
  }
}

/* The calling thread's share [*lo, *hi) of [0, n): whole multiples of `grain` (the last share
 * ends at n), split by thread number, so a thread count gives every thread the same share each
 * time; [0, n) outside a region. */
static inline void eg_omp_share(int64_t n, int64_t grain, int64_t *lo, int64_t *hi) {
  const int64_t nt = omp_get_num_threads(), me = omp_get_thread_num();
  const int64_t units = (n + grain - 1) / grain, u0 = units * me / nt, u1 = units * (me + 1) / nt;
  *lo = u0 * grain < n ? u0 * grain : n;
  *hi = u1 * grain < n ? u1 * grain : n;
}

#endif
