/* log.c — the log callback (see log.h). The callback and its pointer are set together under a
 * lock, so a message never reaches a callback with another callback's pointer. */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static eg_log_fn callback;
static void *callback_user;

void eg_set_log_callback(eg_log_fn fn, void *user) {
  pthread_mutex_lock(&lock);
  callback = fn;
  callback_user = user;
  pthread_mutex_unlock(&lock);
}

bool eg_log_enabled(void) {
  pthread_mutex_lock(&lock);
  bool on = callback != NULL;
  pthread_mutex_unlock(&lock);
  return on;
}

void eg_log_text(eg_log_level level, const char *text) {
  pthread_mutex_lock(&lock);
  eg_log_fn fn = callback;
  void *user = callback_user;
  pthread_mutex_unlock(&lock);
  if (fn) fn(level, text, user);
}

void eg_log(eg_log_level level, const char *fmt, ...) {
  if (!eg_log_enabled()) return;
  va_list ap;
  va_start(ap, fmt);
  char text[1024]; /* one line, as error messages are */
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  eg_log_text(level, text);
}
