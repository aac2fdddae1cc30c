/* error.c — thread-local last-error message (see error.h). */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define EG_ERRMSG_SIZE 1024
static _Thread_local char eg_errmsg[EG_ERRMSG_SIZE];

const char *eg_last_error(void) { return eg_errmsg; }

eg_status eg_error(eg_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(eg_errmsg, sizeof eg_errmsg, fmt, ap);
  va_end(ap);
  /* One line, always: a message built from file contents must not smuggle newlines. */
  for (char *p = eg_errmsg; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  return status;
}

eg_status eg_error_prefix(eg_status status, const char *fmt, ...) {
  char prefix[512], old[EG_ERRMSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, eg_errmsg, sizeof old);
  return eg_error(status, "%s: %s", prefix, old);
}

const char *eg_fmt_ints(char *buf, size_t size, const int64_t *v, int n) {
  size_t used = 0;
  buf[0] = '\0';
  used += (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
  if (used >= size && size > 4) memcpy(buf + size - 4, "...", 4);
  return buf;
}
