/* log.h — the library's log channel (eg_set_log_callback in edgegrad.h): messages go to the
 * callback the app set, or nowhere. Library code never writes to stdout or stderr. */
#ifndef EG_UTIL_LOG_H
#define EG_UTIL_LOG_H

#include <stdbool.h>

#include "edgegrad.h"
#include "util/error.h"

/* Whether a callback is set (so callers can skip building a message nobody reads). */
bool eg_log_enabled(void);
/* Sends the formatted message (one line, cut at 1023 bytes) to the callback, if one is set. */
void eg_log(eg_log_level level, const char *fmt, ...) EG_PRINTF(2, 3);
/* Sends `text` as it is (it may span lines). */
void eg_log_text(eg_log_level level, const char *text);

#endif
