/* clock.h — a monotonic clock in nanoseconds (the profile's timer). */
#ifndef EG_UTIL_CLOCK_H
#define EG_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t eg_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#endif
