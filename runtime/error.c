// runtime/error.c: the runtime's error channel. Every failing runtime function
// formats its message here and returns non-zero; the message lives in a
// thread-local buffer, so threads never see each other's errors. Messages longer
// than the buffer are truncated, never overflow it.
#include "tdsl.h"

#include <stdarg.h>
#include <string.h>

static _Thread_local char last_error[1024];

const char *tdsl_last_error(void) { return last_error; }

// Formats into a scratch buffer first: callers may pass tdsl_last_error() as an
// argument to prefix the previous message.
int tdsl_set_error(const char *fmt, ...) {
  char tmp[sizeof last_error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  memcpy(last_error, tmp, sizeof tmp);
  return 1;
}

void tdsl_clear_error(void) { last_error[0] = '\0'; }
