// runtime/profile.c: the timestamps of `tdslc bench --profile`. A profiling build's
// entry calls tdsl_prof_mark(k) before kernel k and tdsl_prof_mark(nkernels) after its
// last kernel (codegen/c.c, codegen/llvm_entry.c, only when LProgram.profile is set);
// each mark charges the time since the previous one to the kernel that was running.
// Invariants: nothing is recorded unless tdsl_prof_start was called and tdsl_prof_stop
// was not; time between a call's last mark and the next call's first (the entry's
// argument checks, allocation, the caller) is charged to no kernel; the totals only
// grow while recording. One thread records (the driver's), so there is no locking.
#include "tdsl.h"

#include <stdlib.h>
#include <time.h>

static struct {
  bool on;
  int n;        // kernels
  double *ns;   // n totals
  int running;  // the kernel since the last mark, -1: none
  struct timespec last;
} prof = {.running = -1};

int tdsl_prof_start(int nkernels) {
  tdsl_prof_stop();
  int n = nkernels > 0 ? nkernels : 0;
  prof.ns = calloc((size_t)(n ? n : 1), sizeof *prof.ns);
  if (!prof.ns) {
    tdsl_set_error("out of memory for the profile of %d kernels", n);
    return TDSL_ERR_NOMEM;
  }
  prof.n = n;
  prof.running = -1;
  prof.on = true;
  return 0;
}

void tdsl_prof_mark(int k) {
  if (!prof.on)
    return;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  if (prof.running >= 0)
    prof.ns[prof.running] += (double)(t.tv_sec - prof.last.tv_sec) * 1e9 + (double)(t.tv_nsec - prof.last.tv_nsec);
  prof.running = k >= 0 && k < prof.n ? k : -1;
  prof.last = t;
}

int tdsl_prof_read(double *ns, int n) {
  for (int k = 0; k < n && k < prof.n; k++)
    ns[k] = prof.ns[k];
  return prof.n;
}

void tdsl_prof_stop(void) {
  free(prof.ns);
  prof.ns = NULL;
  prof.n = 0;
  prof.running = -1;
  prof.on = false;
}
