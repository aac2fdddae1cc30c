/* error.h — the library's error channel.
 *
 * Anything a file or a caller can cause is reported by returning an eg_status and leaving one
 * line in a thread-local buffer: "<where>: <what> (<values>): <rule>". eg_error() sets it and
 * returns the status so call sites read `return eg_error(EG_ERR_INVALID, "...", ...);`.
 * eg_error_prefix() prepends context ("model.json: ") to the current message as an error
 * travels outwards. Assertions (EG_ASSERT) are for edgegrad's own invariants only. */
#ifndef EG_UTIL_ERROR_H
#define EG_UTIL_ERROR_H

#include <assert.h>

#include "edgegrad.h"

#if defined(__GNUC__)
#define EG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define EG_PRINTF(a, b)
#endif

eg_status eg_error(eg_status status, const char *fmt, ...) EG_PRINTF(2, 3);
/* Prepends "<prefix>: " to the current message; returns `status`. */
eg_status eg_error_prefix(eg_status status, const char *fmt, ...) EG_PRINTF(2, 3);

#define EG_ASSERT(cond) assert(cond)
/* Propagates a failing status. */
#define EG_TRY(expr)                 \
  do {                               \
    eg_status eg_try_s_ = (expr);    \
    if (eg_try_s_ != EG_OK) return eg_try_s_; \
  } while (0)

/* Formats an int64 list as "[1, 2, 3]" into buf (always NUL-terminated, truncated with "..."). */
const char *eg_fmt_ints(char *buf, size_t size, const int64_t *v, int n);

#endif
