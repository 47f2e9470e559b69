// driver/rss.c: the process's resident memory, for bench's report of what a call holds
// at its peak: the current and the peak resident set (Linux's VmRSS and VmHWM in
// /proc/self/status) and a reset of the peak (writing 5 to /proc/self/clear_refs), so
// that the peak read after the timed calls is theirs and not the compiler's. Elsewhere
// (or where /proc is not mounted) every figure is -1 and bench leaves the figures out.
#include "driver/driver.h"

#include <inttypes.h>
#include <string.h>

// The value of "KEY: N kB" in /proc/self/status in bytes, or -1.
static int64_t status_bytes(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  int64_t kb = -1;
  size_t n = strlen(key);
  while (kb < 0 && fgets(line, sizeof line, f))
    if (!strncmp(line, key, n) && line[n] == ':' && sscanf(line + n + 1, "%" SCNd64, &kb) != 1)
      kb = -1;
  fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

int64_t rss_now(void) { return status_bytes("VmRSS"); }
int64_t rss_peak(void) { return status_bytes("VmHWM"); }

bool rss_reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f)
    return false;
  bool ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok;
}
