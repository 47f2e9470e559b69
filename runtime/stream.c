// runtime/stream.c: which store form a streamed result's kernel runs, chosen at run time
// (tdsl_stream_begin/end; codegen/c.c and codegen/llvm_kernel.c compile such a kernel
// with non-temporal and with plain stores and call one of them through a site).
//
// Why at run time: on this project's shared VM the memory runs in a fast and a slow
// state that switch within seconds to minutes (bench/GAPS.md). Writing 64 MiB, the
// non-temporal form took 1.2-1.3 ms in the fast state and plain stores 1.4-1.7 ms; in
// the slow state non-temporal stores took 2.4 ms and plain ones 1.6-1.9 ms, because part
// of a result written with plain stores is still in the last-level cache at the next
// call, where a non-temporal store always goes to DRAM. No form fixed at compile time
// wins in both; the faster form measured on the calls themselves does.
//
// The rule: a site runs its kept form (non-temporal first, the compile-time rule's
// choice) for `run` calls, then tries the other form for TRIES calls. The first call
// of a try is not counted (it finds the caches as the other form left them: plain
// stores after streaming find none of the result in the cache; streaming after plain
// stores writes back and drops the lines plain stores left), nor the first ones of a
// run. The try wins when its fastest counted call beats the kept form's fastest of its
// last KEEP calls by more than 1/32: the forms swap and the next run is FIRST_RUN calls
// long. A try that loses makes the next run 4 times as long, up to LONGEST_RUN, so a
// settled choice costs TRIES calls in LONGEST_RUN + TRIES of the slower form, and a
// change of the memory's state is found within LONGEST_RUN calls (0.6 s of 64 MiB
// results in the fast state).
//
// Invariants: the fields change only under the site's lock, taken with a test-and-set
// that never waits (a call that finds it taken is not counted); a call counts only
// when it ran the form the site expects at its end (another thread may have moved the
// site meanwhile); the forms compute the same values, so the choice changes timing only.
#include "tdsl.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

enum { FIRST_RUN = 16, LONGEST_RUN = 512, TRIES = 3, KEEP = 3 };
_Static_assert(sizeof(tdsl_stream_site) == 16 * sizeof(int64_t), "generated code allocates 16 words per site");
_Static_assert(KEEP == sizeof((tdsl_stream_site *)0)->last / sizeof(int64_t), "last[] holds KEEP times");

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// TDSL_STREAM_FORM, read once: 1 non-temporal, 0 plain, -1 measured.
static int fixed_form(void) {
  static int form = -2;  // -2: not read yet
  int f = __atomic_load_n(&form, __ATOMIC_RELAXED);
  if (f == -2) {
    const char *env = getenv("TDSL_STREAM_FORM");
    f = env && strcmp(env, "nt") == 0 ? 1 : env && strcmp(env, "plain") == 0 ? 0 : -1;
    __atomic_store_n(&form, f, __ATOMIC_RELAXED);
  }
  return f;
}

// The form the site runs now: 1 non-temporal, 0 plain.
static int site_form(const tdsl_stream_site *s) {
  return !(__atomic_load_n(&s->plain, __ATOMIC_RELAXED) ^ __atomic_load_n(&s->trying, __ATOMIC_RELAXED));
}

int64_t tdsl_stream_begin(tdsl_stream_site *s) {
  int f = fixed_form();
  if (f >= 0)
    return f;  // (bit 1 clear: not counted)
  return now_ns() << 2 | 2 | site_form(s);
}

// One counted call of t ns of the form the site expects (under the lock).
static void count(tdsl_stream_site *s, int64_t t) {
  s->n++;
  if (!s->trying) {
    s->last[s->n % KEEP] = t;
    int64_t run = s->run ? s->run : FIRST_RUN;
    if (s->n < run)
      return;
    s->best = s->last[0];
    for (int i = 1; i < KEEP; i++)
      s->best = s->last[i] < s->best ? s->last[i] : s->best;
    s->tried = INT64_MAX;
    s->n = 0;
    __atomic_store_n(&s->trying, 1, __ATOMIC_RELAXED);
    return;
  }
  if (s->n > 1 && t < s->tried)  // (the first call of a try is not counted)
    s->tried = t;
  if (s->n < TRIES)
    return;
  int64_t run = s->run ? s->run : FIRST_RUN;
  if (s->tried < s->best - s->best / 32) {
    __atomic_store_n(&s->plain, !s->plain, __ATOMIC_RELAXED);
    s->run = FIRST_RUN;
  } else {
    s->run = run * 4 < LONGEST_RUN ? run * 4 : LONGEST_RUN;
  }
  s->n = 0;
  __atomic_store_n(&s->trying, 0, __ATOMIC_RELAXED);
}

void tdsl_stream_end(tdsl_stream_site *s, int64_t token) {
  if (!(token & 2))
    return;
  int64_t t = now_ns() - (token >> 2);
  if (__atomic_exchange_n(&s->lock, 1, __ATOMIC_ACQUIRE))
    return;  // another thread is counting: this call is not
  if ((token & 1) == site_form(s))
    count(s, t);
  __atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
}
