// runtime/stream.c: which store form a streamed result's kernel runs, chosen at run time
// (tdsl_stream_begin/end; codegen/c.c and codegen/llvm_kernel.c compile such a kernel
// with non-temporal and with plain stores and call one of them through a site).
//
// Why at run time: on this project's shared VM the memory runs in a fast and a slow
// state that switch within seconds to minutes (bench/GAPS.md). Writing 64 MiB, the
// non-temporal form took 1.2-1.3 ms in the fast state and plain stores 1.4-1.7 ms; in
// the slow state non-temporal stores took 2.4 ms and plain ones 1.6-1.9 ms, because part
// of a result written with plain stores is still in the last-level cache at the next
// call, where a non-temporal store always goes to DRAM (an 8 MiB result: 0.13 ms plain,
// 0.30 ms non-temporal). No form fixed at compile time wins in both; the faster form
// measured on the calls themselves does.
//
// The rule, in phases: a run of the kept form (non-temporal first, the compile-time
// rule's choice), uncounted; a sample of the kept form; the try's first call of the
// other form, uncounted (it finds the caches as the other form left them: plain stores
// after streaming find none of the result in the cache; streaming after plain stores
// writes back and drops the lines plain stores left); a sample of the other form; where
// the try won, the kept form's first call again, uncounted, and its second sample. A
// sample's time is its fastest call (noise only ever adds time), confirmed: the sample
// goes on, MAX_SAMPLE calls at most, until it has SAMPLE calls, its second fastest
// within 1/16 of the fastest, and SAMPLE_NS in all (a kernel of microseconds). The try
// wins when its sample and the kept form's are confirmed and it is faster by more than
// 1/MARGIN; the forms swap when the kept form's second sample is confirmed too, agrees
// with its first within 1/8 (the host's load did not change under the comparison), and
// the try still wins against the faster of the two. Then the next run is FIRST_RUN
// calls; a check that ends otherwise makes the next run 4 times as long, up to
// LONGEST_RUN.
//
// Where timing cannot decide, the kept form stays (at first the compile-time rule's,
// from the sizes: non-temporal stores for a result past 1.5 last-level caches,
// ir/sched.c): on a loaded host a call can be slow by 2-40x, and the fastest of 8 such
// calls of each form, or of 2 taken before the load changed, decides by chance. Measured
// with a busy loop on one of this 2-core VM's cores, x * 2 + 1 of 64 MiB on 2 threads
// (non-temporal 2.65 ms a call quiet, plain 4.2; loaded 50-150 ms either), 4 sites of
// 100 calls per process, processes alternated (two sets of 3 each): the share of calls
// 11-100 run with plain stores was 0.17-0.52 deciding on unconfirmed samples and on a
// margin of 1/32, 0.08-0.28 with confirmed samples and a margin of 1/16, 0.03-0.12 with
// the second sample too (the tries' own calls included: 0.07-0.08 on the quiet host
// under either rule, every site keeping non-temporal stores).
//
// A change of state is also found within a run: DRIFT calls in a row of the kept form,
// each off its last sample's fastest call (slower by half or more, or faster by 1/8 or
// more) and agreeing with the first of them within 1/8, end the run at once (a new
// sample of the kept form, then a try). Non-temporal stores went from 1.2 to 2.4 ms
// when the memory turned slow, in the middle of a run of 64 or 512 calls; noise alone
// seldom gives DRIFT such calls in a row (a loaded host's calls spread; the fastest
// call of a sample is seldom beaten by 1/8 once, let alone DRIFT times), and a new
// sample of the new level stops it firing again.
//
// So the first choice is made early: a site's first run is its first call alone (page
// faults of fresh outputs, cold caches), and a kernel of SAMPLE_NS / SAMPLE or more per
// call (every result streamed by default, 8 MiB and up) whose calls of a form agree has
// its form chosen after TDSL_STREAM_SETTLE = 9 calls at most (non-temporal 1-3, plain
// 4-6; where plain won, non-temporal 7-9) and runs the winner from call 10 on (from call
// 7 where non-temporal stores stay); otherwise after 3 * (1 + MAX_SAMPLE) calls at most.
// The first choice is checked by a try FIRST_RUN calls later; a settled choice then
// costs 3 calls of the slower form (and one transition back) every LONGEST_RUN + 6 or
// so, and a change of the memory's state is found within that (0.6 s of 64 MiB results
// in the fast state).
//
// TDSL_STREAM_FORM=nt or =plain fixes the form; unset or empty: measured; any other
// value: measured, with one warning on stderr per process.
//
// Invariants: the fields change only under the site's lock, taken with a test-and-set
// that never waits (a call that finds it taken is not counted); a call counts only
// when it ran the form the site expects at its end (another thread may have moved the
// site meanwhile); the forms compute the same values, so the choice changes timing only.
#include "tdsl.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

enum { FIRST_RUN = 16, LONGEST_RUN = 512, SAMPLE = 2, MAX_SAMPLE = 8, DRIFT = 3, MARGIN = 16 };
enum { SAMPLE_NS = 50000 };
enum { RUN, KEPT_SAMPLE, TRY_FIRST, TRY_SAMPLE, BACK_FIRST, BACK_SAMPLE };  // a site's phases, in order
_Static_assert(sizeof(tdsl_stream_site) == 16 * sizeof(int64_t), "generated code allocates 16 words per site");
_Static_assert(TDSL_STREAM_SETTLE == 1 + SAMPLE + 1 + SAMPLE + 1 + SAMPLE, "tdsl.h's settle length is the rule's");

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// TDSL_STREAM_FORM, read once: 1 non-temporal, 0 plain, -1 measured. The thread that
// stores the value read warns about a value that is no form, so a process warns once.
static int fixed_form(void) {
  static int form = -2;  // -2: not read yet
  int f = __atomic_load_n(&form, __ATOMIC_RELAXED);
  if (f != -2)
    return f;
  const char *env = getenv("TDSL_STREAM_FORM");
  bool unset = !env || !*env;
  f = unset ? -1 : !strcmp(env, "nt") ? 1 : !strcmp(env, "plain") ? 0 : -1;
  int was = -2;
  if (__atomic_compare_exchange_n(&form, &was, f, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED) && f < 0 && !unset)
    fprintf(stderr, "tdsl: warning: TDSL_STREAM_FORM=%s ignored: the valid values are nt and plain (unset or "
            "empty: each kernel's store form is measured)\n", env);
  return was == -2 ? f : was;
}

// The form the site runs now: 1 non-temporal, 0 plain.
static int site_form(const tdsl_stream_site *s) {
  int64_t phase = __atomic_load_n(&s->phase, __ATOMIC_RELAXED);
  bool trying = phase == TRY_FIRST || phase == TRY_SAMPLE;
  return !(__atomic_load_n(&s->plain, __ATOMIC_RELAXED) ^ trying);
}

int64_t tdsl_stream_begin(tdsl_stream_site *s) {
  int f = fixed_form();
  if (f >= 0)
    return f;  // (bit 1 clear: not counted)
  return now_ns() << 2 | 2 | site_form(s);
}

static void to_phase(tdsl_stream_site *s, int64_t phase) {
  s->n = 0;
  s->sum = 0;
  s->drift = 0;
  __atomic_store_n(&s->phase, phase, __ATOMIC_RELAXED);
}

// Whether a sample's fastest call is confirmed by its second fastest (within 1/16).
static bool confirmed(const tdsl_stream_site *s, int64_t fastest) {
  return s->second - fastest <= fastest / 16;  // (second >= fastest >= 0: no overflow)
}

// One more call of t ns in the current sample; true when the sample is complete
// (confirmed, or MAX_SAMPLE calls).
static bool sampled(tdsl_stream_site *s, int64_t *fastest, int64_t t) {
  if (s->n++ == 0) {
    *fastest = t;
    s->second = INT64_MAX;
  } else if (t < *fastest) {
    s->second = *fastest;
    *fastest = t;
  } else if (t < s->second) {
    s->second = t;
  }
  s->sum = t < INT64_MAX - s->sum ? s->sum + t : INT64_MAX;
  return s->n >= MAX_SAMPLE || (s->n >= SAMPLE && confirmed(s, *fastest) && s->sum >= SAMPLE_NS);
}

// The check ends without a swap: the kept form's next run, 4 times the last.
static void keep(tdsl_stream_site *s) {
  s->run = !s->run ? FIRST_RUN : s->run * 4 < LONGEST_RUN ? s->run * 4 : LONGEST_RUN;
  to_phase(s, RUN);
}

// One more call of t ns in the kept form's run: true when DRIFT calls in a row were
// off the sample's fastest call and agree (the memory changed state).
static bool drifted(tdsl_stream_site *s, int64_t t) {
  int64_t b = s->best;  // (b, t, level >= 0: no difference below overflows)
  bool off = t - b > b / 2 || b - t > b / 8;
  if (!off) {
    s->drift = 0;
    return false;
  }
  int64_t d = t > s->level ? t - s->level : s->level - t;
  if (s->drift == 0 || d > s->level / 8) {  // the first off call, or one off elsewhere
    s->level = t;
    s->drift = 1;
    return false;
  }
  return ++s->drift >= DRIFT;
}

// One call of t ns of the form the site expects (under the lock).
static void count(tdsl_stream_site *s, int64_t t) {
  switch (s->phase) {
  case RUN:
    if (++s->n >= (s->run ? s->run : 1) || (s->run && drifted(s, t)))
      to_phase(s, KEPT_SAMPLE);
    return;
  case KEPT_SAMPLE:
    if (!sampled(s, &s->best, t))
      return;
    if (confirmed(s, s->best))
      to_phase(s, TRY_FIRST);
    else
      keep(s);  // no time to hold a try to
    return;
  case TRY_FIRST:
    to_phase(s, TRY_SAMPLE);
    return;
  case TRY_SAMPLE:
    if (!sampled(s, &s->tried, t))
      return;
    if (confirmed(s, s->tried) && s->tried < s->best - s->best / MARGIN)
      to_phase(s, BACK_FIRST);
    else
      keep(s);
    return;
  case BACK_FIRST:
    to_phase(s, BACK_SAMPLE);
    return;
  default: {
    if (!sampled(s, &s->again, t))
      return;
    int64_t lo = s->again < s->best ? s->again : s->best, hi = s->again < s->best ? s->best : s->again;
    if (confirmed(s, s->again) && hi - lo <= lo / 8 && s->tried < lo - lo / MARGIN) {
      __atomic_store_n(&s->plain, !s->plain, __ATOMIC_RELAXED);
      s->best = s->tried;  // the kept form's time now (what a run's calls are held to)
      s->run = FIRST_RUN;
      to_phase(s, RUN);
    } else {
      s->best = s->again;
      keep(s);
    }
  }
  }
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
