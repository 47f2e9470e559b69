// driver/roofline.c: the machine's roofline for `tdslc bench --profile`: the peak FMA
// rate in f32 and f64 and the memory bandwidth, with the threads the calls run on.
//   - peak: each thread runs 12 independent chains acc = acc * m + c of fused multiply-adds
//     in registers (enough chains to cover the FMA latency times its issue rate), at the
//     widest vectors this CPU has (AVX-512 and AVX2 + FMA, else AVX2 + FMA, else plain C);
//     2 flops per lane; the best width.
//   - bandwidth: each thread copies blocks of its part of an array of max(128 MiB, 4 x the
//     last-level cache) into another with streaming stores (past the caches, as a large
//     memcpy's); bytes read + written over the time, as STREAM's copy counts them.
//   All are timed in rounds of about a millisecond that all the threads start together
//   (best_round), the f32 and f64 peaks at each width and the copy in turn for 0.9 s, the
//   best round of each kept: on a busy machine some rounds still run with every thread on
//   a core, where the 3 runs of 20 ms this took before rarely did (the f32 peak measured
//   23-44 GFLOP/s under ctest -j2 against a kernel's 70-113). Where no round finds every
//   thread on a core (a machine loaded several times over), the numbers come out low, by
//   up to the share of the threads that ran; a kernel outrunning them measures again.
// Measured once per CPU model and thread count and kept in $XDG_CACHE_HOME/tdsl/roofline
// (else $HOME/.cache/tdsl/roofline), one line per (CPU, threads). TDSL_ROOFLINE=measure
// measures again and keeps the better of each number in the cache (a busy machine only
// lowers a measurement); TDSL_ROOFLINE=PEAK,BW (GFLOP/s, GB/s) gives the
// numbers (the f64 peak is then half of PEAK). Invariant: a Roofline returned with 0 has
// positive, finite numbers.
#include "driver/driver.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

enum { CHAINS = 12 };

// One thread's work: `iters` rounds of CHAINS fused multiply-adds; returns its flops
// (the sum of the accumulators goes to *sink, so nothing is optimised away).
typedef double (*FmaFn)(int64_t iters, double *sink);

#define CHAIN_STEP(op) \
  a0 = op(a0, m, c), a1 = op(a1, m, c), a2 = op(a2, m, c), a3 = op(a3, m, c), a4 = op(a4, m, c), \
  a5 = op(a5, m, c), a6 = op(a6, m, c), a7 = op(a7, m, c), a8 = op(a8, m, c), a9 = op(a9, m, c), \
  a10 = op(a10, m, c), a11 = op(a11, m, c)
#define CHAIN_SUM (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11)

// The chains start apart (else the compiler computes one and copies it); acc * m + c
// with m < 1 stays near c / (1 - m): no overflow, no subnormal.
#define CHAIN_INIT(T, set1)                                                                                      \
  T a0 = set1(0.00), a1 = set1(0.01), a2 = set1(0.02), a3 = set1(0.03), a4 = set1(0.04), a5 = set1(0.05),    \
    a6 = set1(0.06), a7 = set1(0.07), a8 = set1(0.08), a9 = set1(0.09), a10 = set1(0.10), a11 = set1(0.11)
#define SAME(v) (v)
#define SAME_F(v) ((float)(v))

static double fma_c_f32(int64_t iters, double *sink) {
  float m = 0.9999f, c = 1e-4f;
  CHAIN_INIT(float, SAME_F);
#define FMA_C(a, m, c) fmaf(a, m, c)
  for (int64_t i = 0; i < iters; i++)
    CHAIN_STEP(FMA_C);
  *sink += CHAIN_SUM;
  return 2.0 * CHAINS * (double)iters;
}

static double fma_c_f64(int64_t iters, double *sink) {
  double m = 0.9999, c = 1e-4;
  CHAIN_INIT(double, SAME);
#undef FMA_C
#define FMA_C(a, m, c) fma(a, m, c)
  for (int64_t i = 0; i < iters; i++)
    CHAIN_STEP(FMA_C);
  *sink += CHAIN_SUM;
  return 2.0 * CHAINS * (double)iters;
}
#undef FMA_C

#ifdef HAVE_X86
#define VEC_KERNEL(name, isa, T, set1, fmadd, add, lanes, reduce)                                           \
  __attribute__((target(isa))) static double name(int64_t iters, double *sink) {                          \
    T m = set1(0.9999), c = set1(1e-4);                                                                       \
    CHAIN_INIT(T, set1);                                                                                      \
    for (int64_t i = 0; i < iters; i++)                                                                       \
      CHAIN_STEP(fmadd);                                                                                      \
    T s = add(add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7))), add(add(a8, a9), add(a10, a11))); \
    *sink += reduce(s);                                                                                       \
    return 2.0 * CHAINS * lanes * (double)iters;                                                              \
  }

__attribute__((target("avx512f"))) static double sum512_ps(__m512 v) { return _mm512_reduce_add_ps(v); }
__attribute__((target("avx512f"))) static double sum512_pd(__m512d v) { return _mm512_reduce_add_pd(v); }
__attribute__((target("avx"))) static double sum256_ps(__m256 v) {
  float x[8];
  _mm256_storeu_ps(x, v);
  return x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7];
}
__attribute__((target("avx"))) static double sum256_pd(__m256d v) {
  double x[4];
  _mm256_storeu_pd(x, v);
  return x[0] + x[1] + x[2] + x[3];
}
#define SET512_PS(v) _mm512_set1_ps((float)(v))
#define SET256_PS(v) _mm256_set1_ps((float)(v))
VEC_KERNEL(fma_avx512_f32, "avx512f", __m512, SET512_PS, _mm512_fmadd_ps, _mm512_add_ps, 16, sum512_ps)
VEC_KERNEL(fma_avx512_f64, "avx512f", __m512d, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd, 8, sum512_pd)
VEC_KERNEL(fma_avx2_f32, "avx2,fma", __m256, SET256_PS, _mm256_fmadd_ps, _mm256_add_ps, 8, sum256_ps)
VEC_KERNEL(fma_avx2_f64, "avx2,fma", __m256d, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd, 4, sum256_pd)
#endif

// ---- rounds: the same short work on n threads at once, started together, many times ----
// One round: every thread waits at the start line, runs its share between two reads of
// its clock, waits at the finish; the round's rate is all the work over the span from the
// first start to the last finish, so a thread another process preempted makes that round
// slow, never fast. Many rounds of about a millisecond (under a scheduler's time slice),
// the best kept: on a busy machine some rounds still get through with every thread on a
// core, where a few long runs rarely do.
// The rounds cycle through a few measurements (the peaks at each width, the copy), so that
// each one's rounds spread over the whole time rather than a stretch of it that another
// process may hold.
typedef struct Rounds Rounds;
typedef struct Variant Variant;
typedef double (*RoundFn)(Rounds *rd, const Variant *v, int thread, int64_t round);  // the work done

struct Variant {
  RoundFn fn;
  FmaFn fma;      // the peak's: iters rounds of fma a thread
  int64_t iters;
  double best;    // its best rate (work per second)
};

enum { MAX_VARIANTS = 8 };

struct Rounds {
  int n;  // the threads taking part (those that could be started)
  Variant v[MAX_VARIANTS];
  int nv;
  pthread_barrier_t start, finish;
  pthread_mutex_t gate_mu;
  pthread_cond_t gate_cv;
  bool open, stop;
  double *t0, *t1, *work;
  double *sink;      // per thread
  int64_t *copies;   // per thread: the blocks it has copied
  char *dst;  // the copy's: thread i copies the next block of its part [i * per, +per)
  const char *src;
  size_t per, block;
};

// One round on thread i; false when the round is the signal to stop.
static bool round_once(Rounds *rd, int i, int64_t round) {
  pthread_barrier_wait(&rd->start);
  if (rd->stop)
    return false;
  rd->t0[i] = now_ms();
  const Variant *v = &rd->v[round % rd->nv];
  rd->work[i] = v->fn(rd, v, i, round);
  rd->t1[i] = now_ms();
  pthread_barrier_wait(&rd->finish);
  return true;
}

typedef struct Worker {
  Rounds *rd;
  int i;
} Worker;

static void *worker_run(void *arg) {
  Worker *w = arg;
  Rounds *rd = w->rd;
  pthread_mutex_lock(&rd->gate_mu);  // wait until the barriers are made for the threads started
  while (!rd->open)
    pthread_cond_wait(&rd->gate_cv, &rd->gate_mu);
  bool stop = rd->stop;  // no barriers: nothing to run
  pthread_mutex_unlock(&rd->gate_mu);
  int64_t round = 0;
  while (!stop && round_once(rd, w->i, round))
    round++;
  return NULL;
}

// Each variant's best rate (work per second) into rd->v[*].best: rounds on rd->n threads
// (fewer if not all can be started: the rates come out lower, never wrong), the variants in
// turn, for about budget_ms, 8 rounds of each at least; 0 where none could be timed.
static void best_round(Rounds *rd, double budget_ms) {
  int want = rd->n, n = 1;
  pthread_t *th = calloc((size_t)want, sizeof *th);
  Worker *ws = calloc((size_t)want, sizeof *ws);
  rd->t0 = calloc((size_t)want, sizeof *rd->t0);
  rd->t1 = calloc((size_t)want, sizeof *rd->t1);
  rd->work = calloc((size_t)want, sizeof *rd->work);
  rd->open = rd->stop = false;
  pthread_mutex_init(&rd->gate_mu, NULL);
  pthread_cond_init(&rd->gate_cv, NULL);
  for (; n < want; n++) {
    ws[n] = (Worker){rd, n};
    if (pthread_create(&th[n], NULL, worker_run, &ws[n]) != 0)
      break;
  }
  rd->n = n;
  bool made = pthread_barrier_init(&rd->start, NULL, (unsigned)n) == 0;
  if (made && pthread_barrier_init(&rd->finish, NULL, (unsigned)n) != 0) {
    pthread_barrier_destroy(&rd->start);
    made = false;
  }
  pthread_mutex_lock(&rd->gate_mu);
  rd->stop = !made, rd->open = true;
  pthread_cond_broadcast(&rd->gate_cv);
  pthread_mutex_unlock(&rd->gate_mu);
  if (made) {
    double t_end = now_ms() + budget_ms;
    for (int64_t round = 0; round < 8 * rd->nv || now_ms() < t_end; round++) {
      round_once(rd, 0, round);
      // the threads' own rates summed where each ran at least 90% of its time while all
      // the others ran (a thread woken late from the start line does not count against
      // the round), else all the work over the round's span
      double lo = rd->t0[0], hi = rd->t1[0], first_end = rd->t1[0], last_start = rd->t0[0], work = 0, sum = 0;
      bool together = true;
      for (int i = 0; i < n; i++) {
        lo = fmin(lo, rd->t0[i]), hi = fmax(hi, rd->t1[i]);
        first_end = fmin(first_end, rd->t1[i]), last_start = fmax(last_start, rd->t0[i]);
        work += rd->work[i];
        sum += rd->t1[i] > rd->t0[i] ? rd->work[i] / ((rd->t1[i] - rd->t0[i]) / 1e3) : 0;
      }
      for (int i = 0; i < n; i++)
        together &= first_end - last_start >= 0.9 * (rd->t1[i] - rd->t0[i]);
      double rate = together ? sum : hi > lo ? work / ((hi - lo) / 1e3) : 0;
      Variant *v = &rd->v[round % rd->nv];
      if (rate > v->best)
        v->best = rate;
    }
    rd->stop = true;  // every worker waits at the start line: this round tells them to stop
    pthread_barrier_wait(&rd->start);
  }
  for (int i = 1; i < n; i++)
    pthread_join(th[i], NULL);
  if (made) {
    pthread_barrier_destroy(&rd->start);
    pthread_barrier_destroy(&rd->finish);
  }
  pthread_cond_destroy(&rd->gate_cv);
  pthread_mutex_destroy(&rd->gate_mu);
  free(th);
  free(ws);
  free(rd->t0);
  free(rd->t1);
  free(rd->work);
}

static double round_fma(Rounds *rd, const Variant *v, int thread, int64_t round) {
  (void)round;
  double sink = 0, flops = v->fma(v->iters, &sink);
  rd->sink[thread] += sink;
  return flops;
}

enum { ROUND_MS = 1 };  // a round's length, about

// The iterations of fma that take about ROUND_MS on one thread.
static int64_t calibrate(FmaFn fma) {
  double sink = 0;
  int64_t iters = 1 << 8;
  for (;;) {  // the best of 3 tries, so that a preempted try misleads less
    double ms = 1e30;
    for (int t = 0; t < 3; t++) {
      double t0 = now_ms();
      fma(iters, &sink);
      ms = fmin(ms, now_ms() - t0);
    }
    if (ms >= ROUND_MS / 4.0 || iters > ((int64_t)1 << 40))
      return iters * 4;
    iters *= 2;
  }
}

// Copies n bytes (a multiple of 64, both 64-byte aligned) past the caches: the stores
// go straight to memory (no read of the destination first), as a large memcpy's do.
static void copy_stream(char *dst, const char *src, size_t n) {
#ifdef HAVE_X86
  for (size_t i = 0; i < n; i += 64) {
    __m128i a = _mm_load_si128((const __m128i *)(src + i)), b = _mm_load_si128((const __m128i *)(src + i + 16));
    __m128i c = _mm_load_si128((const __m128i *)(src + i + 32)), d = _mm_load_si128((const __m128i *)(src + i + 48));
    _mm_stream_si128((__m128i *)(dst + i), a);
    _mm_stream_si128((__m128i *)(dst + i + 16), b);
    _mm_stream_si128((__m128i *)(dst + i + 32), c);
    _mm_stream_si128((__m128i *)(dst + i + 48), d);
  }
  _mm_sfence();
#else
  memcpy(dst, src, n);
#endif
}

static double round_copy(Rounds *rd, const Variant *v, int thread, int64_t round) {
  (void)v, (void)round;
  size_t blocks = rd->per / rd->block;
  size_t off = rd->per * (size_t)thread + rd->block * (size_t)(rd->copies[thread]++ % (int64_t)blocks);
  copy_stream(rd->dst + off, rd->src + off, rd->block);
  return 2.0 * (double)rd->block;  // read + written, as STREAM's copy counts them
}

enum { BUDGET_MS = 900 };  // the rounds' time: the f32 peak, the f64 peak and the copy in turn

// r's peaks and bandwidth on n threads (the bandwidth 0 if its arrays cannot be had).
// The peaks: the widest vectors this CPU has (plain C only without AVX2: scalar code never
// beats it), with AVX-512 also AVX2 (a CPU that splits 512-bit FMAs may run 256-bit ones
// as fast). The copy: each thread copies the next block of its part of an array of
// max(128 MiB, 4 x the last-level cache), so every block comes from memory.
static void measure(int n, Roofline *r) {
  FmaFn f32[2] = {fma_c_f32, NULL}, f64[2] = {fma_c_f64, NULL};
#ifdef HAVE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    f32[0] = fma_avx2_f32, f64[0] = fma_avx2_f64;
  if (__builtin_cpu_supports("avx512f"))
    f32[1] = fma_avx512_f32, f64[1] = fma_avx512_f64;
#endif
  int widths = f32[1] ? 2 : 1;
  double *sinks = calloc((size_t)n, sizeof *sinks);
  int64_t *copies = calloc((size_t)n, sizeof *copies);
  Rounds rd = {.n = n, .sink = sinks, .copies = copies};
  for (int w = 0; w < widths; w++) {
    rd.v[rd.nv++] = (Variant){.fn = round_fma, .fma = f32[w], .iters = calibrate(f32[w])};
    rd.v[rd.nv++] = (Variant){.fn = round_fma, .fma = f64[w], .iters = calibrate(f64[w])};
  }
  // The last-level cache as every schedule sees it (ir/cpu.c: sysfs's highest level, else
  // sysconf's L3, at most 32 MiB a CPU). This 2-core VM's raw 480 MiB sysfs L3 made arrays
  // of 1.9 GB, 35-37 GB/s; 4 x the bounded 64 MiB (256 MiB) measures 40-45 GB/s, arrays of
  // 512 MiB the same (alternated runs): past the cache either way, the larger arrays
  // slower for other reasons (blocks of 8 MiB over the 1.9 GB arrays: 36-39 GB/s).
  int64_t bytes = 4 * cpu_target(NULL).llc;
  if (bytes < ((int64_t)128 << 20))
    bytes = (int64_t)128 << 20;
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && psize > 0 && bytes > (int64_t)pages * psize / 8)
    bytes = (int64_t)pages * psize / 8;
  size_t per = ((size_t)bytes / (size_t)n) & ~(size_t)4095;
  // a block: 1/16 of the part, 1 MiB at least (so the start line's cost stays small)
  size_t block = (per / 16) & ~(size_t)4095;
  if (block < ((size_t)1 << 20))
    block = per;
  char *src = per ? aligned_alloc(4096, per * (size_t)n) : NULL, *dst = per ? aligned_alloc(4096, per * (size_t)n) : NULL;
  int copy = -1;
  if (src && dst && block) {
    memset(src, 1, per * (size_t)n);  // every page faulted in before timing
    memset(dst, 0, per * (size_t)n);
    rd.src = src, rd.dst = dst, rd.per = per, rd.block = block;
    // the copy's rounds take longer than the peaks': one in every two
    for (int v = rd.nv, nv = rd.nv; v < 2 * nv; v++)
      rd.v[rd.nv++] = (Variant){.fn = round_copy}, copy = v;
  }
  best_round(&rd, BUDGET_MS);
  r->peak_f32 = r->peak_f64 = r->bandwidth = 0;
  for (int w = 0; w < widths; w++) {
    r->peak_f32 = fmax(r->peak_f32, rd.v[2 * w].best / 1e9);
    r->peak_f64 = fmax(r->peak_f64, rd.v[2 * w + 1].best / 1e9);
  }
  for (int v = copy >= 0 ? 2 * widths : rd.nv; v < rd.nv; v++)
    r->bandwidth = fmax(r->bandwidth, rd.v[v].best / 1e9);
  free(sinks);
  free(copies);
  free(src);
  free(dst);
  time_t now = time(NULL);
  struct tm tm;
  if (localtime_r(&now, &tm))
    strftime(r->when, sizeof r->when, "%Y-%m-%d %H:%M", &tm);
  r->source = "measured";
}

// ---- the cache: "CPU\tTHREADS\tPEAK_F32\tPEAK_F64\tBW\tWHEN" per line ----
static void cpu_name(char *buf, size_t n) {
  snprintf(buf, n, "?");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
      const char *s = strchr(line, ':') + 1;
      while (*s == ' ' || *s == '\t')
        s++;
      snprintf(buf, n, "%.*s", (int)strcspn(s, "\n\t"), s);
      break;
    }
  }
  fclose(f);
}

// The cache's path into r->cache, its folder made; false if there is no home for it.
static bool cache_path(Roofline *r) {
  const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char dir[4000];
  if (x && *x)
    snprintf(dir, sizeof dir, "%s/tdsl", x);
  else if (home && *home)
    snprintf(dir, sizeof dir, "%s/.cache/tdsl", home);
  else
    return false;
  if (strlen(dir) + 1 >= sizeof dir)
    return false;
  for (char *s = dir + 1;; s++) {  // mkdir -p
    bool end = !*s;
    if (*s == '/' || end) {
      *s = 0;
      if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return false;
      if (end)
        break;
      *s = '/';
    }
  }
  snprintf(r->cache, sizeof r->cache, "%s/roofline", dir);
  return true;
}

static bool cache_read(Roofline *r, const char *cpu, int threads) {
  FILE *f = fopen(r->cache, "r");
  if (!f)
    return false;
  char line[1024];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    char *tab = strchr(line, '\t');
    if (!tab || (size_t)(tab - line) != strlen(cpu) || strncmp(line, cpu, (size_t)(tab - line)) != 0)
      continue;
    int t;
    double a, b, c;
    char when[32] = "";
    if (sscanf(tab + 1, "%d\t%lf\t%lf\t%lf\t%31[^\n]", &t, &a, &b, &c, when) >= 4 && t == threads && a > 0 &&
        b > 0 && c > 0 && isfinite(a) && isfinite(b) && isfinite(c)) {
      r->peak_f32 = a, r->peak_f64 = b, r->bandwidth = c;
      snprintf(r->when, sizeof r->when, "%s", when);
      r->source = "cached";
      found = true;
    }
  }
  fclose(f);
  return found;
}

// Rewrites the cache with this (CPU, threads) line replaced, each number the better of
// the old line's and r's (another tenant of a shared machine can only make a measurement
// low); quietly keeps the old file on failure.
static void cache_write(Roofline *r, const char *cpu, int threads) {
  Roofline old = *r;
  if (cache_read(&old, cpu, threads)) {
    r->peak_f32 = fmax(r->peak_f32, old.peak_f32);
    r->peak_f64 = fmax(r->peak_f64, old.peak_f64);
    r->bandwidth = fmax(r->bandwidth, old.bandwidth);
  }
  char tmp[4200], line[1024];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", r->cache, (long)getpid());
  FILE *out = fopen(tmp, "w");
  if (!out)
    return;
  FILE *in = fopen(r->cache, "r");
  while (in && fgets(line, sizeof line, in)) {
    char *tab = strchr(line, '\t');
    int t = tab ? atoi(tab + 1) : -1;
    bool same = tab && (size_t)(tab - line) == strlen(cpu) && !strncmp(line, cpu, strlen(cpu)) && t == threads;
    if (!same && strchr(line, '\n'))
      fputs(line, out);
  }
  if (in)
    fclose(in);
  fprintf(out, "%s\t%d\t%.4g\t%.4g\t%.4g\t%s\n", cpu, threads, r->peak_f32, r->peak_f64, r->bandwidth, r->when);
  if (fclose(out) != 0 || rename(tmp, r->cache) != 0)
    remove(tmp);
}

int roofline_get(int threads, bool again, Roofline *r) {
  *r = (Roofline){0};
  if (threads < 1)
    threads = 1;
  const char *env = getenv("TDSL_ROOFLINE");
  if (env && *env && strcmp(env, "measure") != 0) {
    char *end;
    double peak = strtod(env, &end), bw = *end == ',' ? strtod(end + 1, &end) : 0;
    if (*end || !(peak > 0) || !(bw > 0) || !isfinite(peak) || !isfinite(bw))
      return usage_error("TDSL_ROOFLINE='%s': expected PEAK,BW (GFLOP/s and GB/s, e.g. 235,30) or 'measure'", env);
    r->peak_f32 = peak, r->peak_f64 = peak / 2, r->bandwidth = bw;
    r->source = "TDSL_ROOFLINE";
    return 0;
  }
  char cpu[256];
  cpu_name(cpu, sizeof cpu);
  bool cached = cache_path(r);
  again |= env && !strcmp(env, "measure");
  if (cached && !again && cache_read(r, cpu, threads))
    return 0;
  fprintf(stderr, "tdslc: measuring this machine's peak FLOP/s and memory bandwidth with %d thread%s (once: "
          "kept in %s)...\n", threads, threads == 1 ? "" : "s", cached ? r->cache : "no cache: no home folder");
  measure(threads, r);
  if (!(r->peak_f32 > 0) || !(r->peak_f64 > 0)) {  // the threads or their start line could not be made
    cached = false, r->cache[0] = 0;  // a guess is not kept
    if (threads > 1) {
      fprintf(stderr, "tdslc: warning: could not run %d threads together; the roofline is one thread's peaks times %d\n",
              threads, threads);
      measure(1, r);
      r->peak_f32 *= threads, r->peak_f64 *= threads;
    }
    if (!(r->peak_f32 > 0) || !(r->peak_f64 > 0)) {  // a bar that rates nothing as compute-bound
      fprintf(stderr, "tdslc: warning: could not measure the peak FLOP/s; the roofline uses 1 PFLOP/s\n");
      r->peak_f32 = r->peak_f64 = 1e6;
    }
  }
  if (!(r->bandwidth > 0)) {  // no memory for the arrays: a bar that rates nothing as memory-bound
    fprintf(stderr, "tdslc: warning: could not measure the memory bandwidth; the roofline uses 1 TB/s\n");
    r->bandwidth = 1000;
  }
  if (cached)
    cache_write(r, cpu, threads);
  return 0;
}
