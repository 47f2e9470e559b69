// driver/roofline.c: the machine's roofline for `tdslc bench --profile`: the peak FMA
// rate in f32 and f64 and the memory bandwidth, with the threads the calls run on.
//   - peak: each thread runs 12 independent chains acc = acc * m + c of fused multiply-adds
//     in registers (enough chains to cover the FMA latency times its issue rate), at each
//     vector width this CPU has (AVX-512, AVX2 + FMA, else plain C); 2 flops per lane;
//     the best of 3 runs of about 20 ms, the best width.
//   - bandwidth: each thread copies its part of an array of max(128 MiB, 4 x the last-level
//     cache) into another (memcpy, which streams large copies past the caches); bytes
//     read + written over the time, the best of 5, as STREAM's copy counts them.
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

// ---- threads: run the same work on n threads at once; the wall time of the whole ----
typedef struct Job {
  FmaFn fma;  // the peak's work, or NULL for the copy
  int64_t iters;
  double flops, sink;
  char *dst;
  const char *src;
  size_t bytes;
} Job;

static void *job_run(void *arg) {
  Job *j = arg;
  if (j->fma)
    j->flops = j->fma(j->iters, &j->sink);
  else
    memcpy(j->dst, j->src, j->bytes);
  return NULL;
}

// Runs jobs[0..n) on n threads (the first on this one); the seconds they took together.
static double run_jobs(Job *jobs, int n) {
  pthread_t *th = calloc((size_t)n, sizeof *th);
  bool *started = calloc((size_t)n, sizeof *started);
  double t0 = now_ms();
  for (int i = 1; i < n; i++)
    started[i] = pthread_create(&th[i], NULL, job_run, &jobs[i]) == 0;
  job_run(&jobs[0]);
  for (int i = 1; i < n; i++) {
    if (started[i])
      pthread_join(th[i], NULL);
    else
      job_run(&jobs[i]);  // no thread: this one does it (the rate comes out lower, never wrong)
  }
  double s = (now_ms() - t0) / 1e3;
  free(th);
  free(started);
  return s;
}

// The best GFLOP/s of fma on n threads: calibrated to ~20 ms a run, best of 3.
static double peak_of(FmaFn fma, int n) {
  double sink = 0, best = 0;
  int64_t iters = 1 << 12;
  for (;;) {  // calibrate on one thread
    double t0 = now_ms();
    fma(iters, &sink);
    double ms = now_ms() - t0;
    if (ms > 5 || iters > ((int64_t)1 << 40))
      break;
    iters *= 4;
  }
  iters *= 4;
  Job *jobs = calloc((size_t)n, sizeof *jobs);
  for (int run = 0; run < 3; run++) {
    for (int i = 0; i < n; i++)
      jobs[i] = (Job){.fma = fma, .iters = iters};
    double s = run_jobs(jobs, n), flops = 0;
    for (int i = 0; i < n; i++)
      flops += jobs[i].flops;
    if (s > 0 && flops / s / 1e9 > best)
      best = flops / s / 1e9;
  }
  free(jobs);
  return best;
}

// The best copy GB/s (bytes read + written) on n threads; 0 if the arrays cannot be had.
static double bandwidth_of(int n) {
  int64_t bytes = 4 * cpu_target(NULL).llc;  // (ir/cpu.c: sysfs's highest level, else sysconf's L3)
  if (bytes < ((int64_t)128 << 20))
    bytes = (int64_t)128 << 20;
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && psize > 0 && bytes > (int64_t)pages * psize / 8)
    bytes = (int64_t)pages * psize / 8;
  size_t per = ((size_t)bytes / (size_t)n) & ~(size_t)4095;
  char *src = aligned_alloc(4096, per * (size_t)n), *dst = aligned_alloc(4096, per * (size_t)n);
  double best = 0;
  if (src && dst && per) {
    Job *jobs = calloc((size_t)n, sizeof *jobs);
    memset(src, 1, per * (size_t)n);  // every page faulted in before timing
    memset(dst, 0, per * (size_t)n);
    for (int run = 0; run < 5; run++) {
      for (int i = 0; i < n; i++)
        jobs[i] = (Job){.dst = dst + per * (size_t)i, .src = src + per * (size_t)i, .bytes = per};
      double s = run_jobs(jobs, n);
      if (s > 0 && 2.0 * (double)per * n / s / 1e9 > best)
        best = 2.0 * (double)per * n / s / 1e9;
    }
    free(jobs);
  }
  free(src);
  free(dst);
  return best;
}

static void measure(int n, Roofline *r) {
  r->peak_f32 = peak_of(fma_c_f32, n);
  r->peak_f64 = peak_of(fma_c_f64, n);
#ifdef HAVE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    r->peak_f32 = fmax(r->peak_f32, peak_of(fma_avx2_f32, n));
    r->peak_f64 = fmax(r->peak_f64, peak_of(fma_avx2_f64, n));
  }
  if (__builtin_cpu_supports("avx512f")) {
    r->peak_f32 = fmax(r->peak_f32, peak_of(fma_avx512_f32, n));
    r->peak_f64 = fmax(r->peak_f64, peak_of(fma_avx512_f64, n));
  }
#endif
  r->bandwidth = bandwidth_of(n);
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
  if (!(r->bandwidth > 0)) {  // no memory for the arrays: a bar that rates nothing as memory-bound
    fprintf(stderr, "tdslc: warning: could not measure the memory bandwidth; the roofline uses 1 TB/s\n");
    r->bandwidth = 1000;
  }
  if (cached)
    cache_write(r, cpu, threads);
  return 0;
}
