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

#endif
