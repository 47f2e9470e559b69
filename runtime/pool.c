// runtime/pool.c: the thread pool behind tdsl_parallel_for, on which the parallel
// loops of both CPU backends run (C and LLVM), and the first-error record their kernels
// share.
//
// Threads: tdsl_num_threads() - 1 persistent workers, created by the first loop that
// needs them; the calling thread works too. An idle worker watches for the next loop for
// SPIN_NS (the loops of one call come back to back, and waking a sleeping thread takes
// tens of microseconds in a VM), then sleeps on a condition variable; the caller, done
// with its chunks, watches for the last ones for WAIT_SPIN_NS, then sleeps. Neither
// spins against a busy core: a spinning thread yields to any other runnable thread of
// its core every few hundred nanoseconds (another process, or the very worker it waits
// for, which the scheduler often wakes on the waker's core: without the yield a caller
// spun out its whole window before the chunk it waited for could run), and gives up at
// once when it finds it lost its core for GAP_NS. At exit an atexit handler wakes and
// joins them.
//
// One loop at a time: `call_mu` is held for the whole of a parallel loop. A caller
// that finds it taken (a second user thread, or a task of the running loop) does not
// wait: it runs its loop serially on its own thread. So a loop never blocks on
// another one and nesting can never deadlock.
//
// A loop over [0, n) is cut into nchunks = min(4 * threads, n / grain) contiguous
// chunks whose sizes differ by at most one (so each holds >= grain iterations);
// nchunks <= 1 runs serially as fn(ctx, 0, n). Chunks are claimed through one atomic
// word holding (generation << 24 | next chunk): a worker that wakes late, after its
// loop has finished, finds another generation there and claims nothing, so the
// caller waits only for the chunks to be done, never for sleepy workers. The caller
// returns only after every chunk's fn has returned, and all their writes are visible
// to it (the done counter is acq_rel).
//
// Invariants: the job (fn, ctx, n, nchunks) changes only under `mu`, while `call_mu`
// is held, and only after the previous job's chunks are all done; a worker copies it
// under `mu`; a chunk is claimed at most once; `done` reaches nchunks exactly once
// per loop. After fork() the child has no workers: every loop there runs serially.
#include "tdsl.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum {
  MAX_THREADS = 1024,      // TDSL_NUM_THREADS is clamped to this
  CHUNKS_PER_THREAD = 4,   // load balance against uneven chunks and busy cores
  CHUNK_BITS = 24,         // MAX_THREADS * CHUNKS_PER_THREAD < 2^CHUNK_BITS
  SPIN_NS = 200000,        // how long an idle worker watches for work before it sleeps
  WAIT_SPIN_NS = 20000,    // how long the caller watches for the last chunks before it sleeps
  GAP_NS = 50000,          // a pause this long while spinning: the thread lost its core
};
_Static_assert((int64_t)MAX_THREADS * CHUNKS_PER_THREAD < ((int64_t)1 << CHUNK_BITS), "chunk field too small");
#define CHUNK_MASK ((UINT64_C(1) << CHUNK_BITS) - 1)
#define GEN_MASK ((UINT64_C(1) << (64 - CHUNK_BITS)) - 1)

typedef struct Job {
  tdsl_range_fn fn;
  void *ctx;
  int64_t n, nchunks;
  uint64_t gen;
} Job;

// ---- the pool's state: one per process ----
static pthread_mutex_t call_mu = PTHREAD_MUTEX_INITIALIZER;  // held by the running loop
// Guarded by call_mu:
static bool started, stopped;  // workers created; joined at exit (loops run serially after)
static int nworkers;           // created successfully (may be fewer than asked)
static pthread_t *workers;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;  // a new job, or quit
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;  // the last chunk is done
// Guarded by mu:
static Job job;
static bool quit;

static _Atomic uint64_t posted;      // job.gen, readable without mu (for spinning workers)
static _Atomic uint64_t next_chunk;  // (gen & GEN_MASK) << CHUNK_BITS | next chunk to claim
static _Atomic uint64_t done;        // chunks of the current job whose fn has returned
static atomic_bool forked;           // set in a fork() child: it has no workers

static _Thread_local bool in_task;  // this thread is running chunks of a parallel loop

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int threads_value;

// ---- how many threads ----
// TDSL_NUM_THREADS when it is a whole decimal number >= 1 (clamped to MAX_THREADS),
// else the online CPUs. Read once: the answer never changes during a run.
static void read_num_threads(void) {
  long v = 0;
  const char *s = getenv("TDSL_NUM_THREADS");
  if (s && *s) {
    char *end;
    v = strtol(s, &end, 10);
    if (*end != '\0')
      v = 0;
  }
  if (v < 1)
    v = sysconf(_SC_NPROCESSORS_ONLN);
  threads_value = v < 1 ? 1 : v > MAX_THREADS ? MAX_THREADS : (int)v;
}

int tdsl_num_threads(void) {
  pthread_once(&threads_once, read_num_threads);
  return threads_value;
}

// ---- running chunks ----
// Claims and runs chunks of j until none of its generation is left.
static void run_chunks(const Job *j) {
  uint64_t tag = (j->gen & GEN_MASK) << CHUNK_BITS;
  int64_t q = j->n / j->nchunks, r = j->n % j->nchunks;
  for (;;) {
    uint64_t v = atomic_load_explicit(&next_chunk, memory_order_relaxed);
    do {
      if ((v & ~CHUNK_MASK) != tag || (int64_t)(v & CHUNK_MASK) >= j->nchunks)
        return;
    } while (!atomic_compare_exchange_weak_explicit(&next_chunk, &v, v + 1, memory_order_relaxed,
                                                    memory_order_relaxed));
    int64_t c = (int64_t)(v & CHUNK_MASK);
    int64_t begin = c * q + (c < r ? c : r);
    j->fn(j->ctx, begin, begin + q + (c < r));
    if (atomic_fetch_add_explicit(&done, 1, memory_order_acq_rel) + 1 == (uint64_t)j->nchunks) {
      pthread_mutex_lock(&mu);
      pthread_cond_signal(&done_cv);
      pthread_mutex_unlock(&mu);
    }
  }
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Watches w for up to `limit` ns while it is below `until` (done) or equal to it
// (posted). Gives up at once when the thread was off its core between two looks
// (a gap of GAP_NS): another process holds that core, and spinning on would take its
// time slices for nothing (and, when a worker waits for this very core, keep the work
// itself from running).
static void spin_while(_Atomic uint64_t *w, uint64_t until, bool below, int64_t limit) {
  int64_t last = now_ns(), end = last + limit;
  for (int i = 1;; i++) {
    uint64_t v = atomic_load_explicit(w, memory_order_acquire);
    if (below ? v >= until : v != until)
      return;
    cpu_relax();
    if (i % 32 == 0) {
      sched_yield();  // a runnable thread on this core (another process, our caller) goes first
      int64_t t = now_ns();
      if (t > end || t - last > GAP_NS)
        return;
      last = t;
    }
  }
}

static void *worker_main(void *arg) {
  (void)arg;
  in_task = true;  // for good: anything a worker runs is inside a task
  uint64_t seen = 0;
  pthread_mutex_lock(&mu);
  for (;;) {
    if (job.gen == seen && !quit) {
      pthread_mutex_unlock(&mu);
      spin_while(&posted, seen, false, SPIN_NS);
      pthread_mutex_lock(&mu);
    }
    while (job.gen == seen && !quit)
      pthread_cond_wait(&work_cv, &mu);
    if (quit)
      break;
    Job j = job;
    seen = j.gen;
    pthread_mutex_unlock(&mu);
    run_chunks(&j);
    pthread_mutex_lock(&mu);
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

// ---- starting and stopping (under call_mu) ----
static void after_fork_in_child(void) { atomic_store(&forked, true); }

// Joins the workers, unless a loop is running (exit() called from a task or while
// another thread is in a loop): then they are left to die with the process.
static void stop_workers(void) {
  if (in_task || atomic_load(&forked) || pthread_mutex_trylock(&call_mu) != 0)
    return;
  if (started && !stopped) {
    pthread_mutex_lock(&mu);
    quit = true;
    pthread_cond_broadcast(&work_cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < nworkers; i++)
      pthread_join(workers[i], NULL);
    free(workers);
    workers = NULL;
    nworkers = 0;
    stopped = true;
  }
  pthread_mutex_unlock(&call_mu);
}

// Creates the workers with asynchronous signals blocked, so that signals sent to the
// process reach the user's threads; faults (SIGSEGV, ...) still reach the faulting worker.
static void start_workers(void) {
  started = true;
  int want = tdsl_num_threads() - 1;
  workers = malloc((size_t)want * sizeof *workers);
  if (!workers)
    return;
  sigset_t all, old;
  sigfillset(&all);
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
  for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
    sigdelset(&all, faults[i]);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  while (nworkers < want && pthread_create(&workers[nworkers], NULL, worker_main, NULL) == 0)
    nworkers++;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_atfork(NULL, NULL, after_fork_in_child);
  atexit(stop_workers);
}

// ---- the loop ----
void tdsl_parallel_for(int64_t n, int64_t grain, tdsl_range_fn fn, void *ctx) {
  if (n <= 0)
    return;
  if (grain <= 0)
    grain = 1;  // the caller knows the cost of an iteration; we do not
  int64_t nchunks = n / grain, cap = (int64_t)CHUNKS_PER_THREAD * tdsl_num_threads();
  if (nchunks > cap)
    nchunks = cap;
  if (nchunks <= 1 || in_task || atomic_load(&forked) || pthread_mutex_trylock(&call_mu) != 0) {
    fn(ctx, 0, n);
    return;
  }
  if (!started)
    start_workers();
  if (stopped || nworkers == 0) {
    pthread_mutex_unlock(&call_mu);
    fn(ctx, 0, n);
    return;
  }

  pthread_mutex_lock(&mu);
  Job j = {fn, ctx, n, nchunks, job.gen + 1};
  job = j;
  atomic_store_explicit(&posted, j.gen, memory_order_release);
  atomic_store_explicit(&done, 0, memory_order_relaxed);
  atomic_store_explicit(&next_chunk, (j.gen & GEN_MASK) << CHUNK_BITS, memory_order_relaxed);
  int64_t helpers = nchunks - 1;  // the caller takes a chunk too
  if (helpers >= nworkers)
    pthread_cond_broadcast(&work_cv);
  else
    for (int64_t i = 0; i < helpers; i++)
      pthread_cond_signal(&work_cv);
  pthread_mutex_unlock(&mu);

  in_task = true;
  run_chunks(&j);
  in_task = false;

  spin_while(&done, (uint64_t)nchunks, true, WAIT_SPIN_NS);  // the last chunks are usually nearly done
  pthread_mutex_lock(&mu);
  while (atomic_load_explicit(&done, memory_order_acquire) < (uint64_t)nchunks)
    pthread_cond_wait(&done_cv, &mu);
  pthread_mutex_unlock(&mu);
  pthread_mutex_unlock(&call_mu);
}

// ---- a kernel's first error ----
// One lock for every record: raising is the rare path, and a record lives on one
// kernel's stack, so contention is only among the threads of one loop.
static pthread_mutex_t error_mu = PTHREAD_MUTEX_INITIALIZER;

void tdsl_kernel_error_raise(tdsl_kernel_error *e, int k, long long value, int64_t iter) {
  if (k < 0)
    return;
  pthread_mutex_lock(&error_mu);
  if (e->k < 0 || (!e->sealed && iter < e->iter)) {
    e->k = k;
    e->value = value;
    e->iter = iter;
  }
  pthread_mutex_unlock(&error_mu);
}

void tdsl_kernel_error_seal(tdsl_kernel_error *e) {
  pthread_mutex_lock(&error_mu);
  e->sealed = e->k >= 0;
  pthread_mutex_unlock(&error_mu);
}
