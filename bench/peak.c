/* bench/peak.c — the machine's peak floating-point rate: independent FMA chains per thread.
 *
 * Built by bench/run.py with `cc -O3 -march=native -fopenmp`, like stream.c. Every thread
 * runs NACC independent chains acc[j] = acc[j] * m + c, one fused multiply-add per chain
 * and iteration, in registers, at the vector widths this build can use (chosen at compile
 * time from -march=native):
 *   AVX-512 (__AVX512F__): 16 f32 / 8 f64 lanes, 24 accumulators;
 *   AVX2 + FMA (__FMA__):    8 f32 / 4 f64 lanes, 12 accumulators;
 *   neither: a 4-lane GNU vector `a * m + c`, which the compiler may or may not fuse.
 * A chain's next FMA waits for its last one (latency ~4 cycles), and a core issues one or
 * two FMAs per cycle: NACC chains cover latency x throughput with room to spare, so the
 * loop runs at the FMA units' throughput. On a CPU with AVX-512 both widths are measured
 * (some cores split a 512-bit FMA into two 256-bit halves, or slow down their clock for
 * it); the peak is the faster one.
 *
 * Counted: 2 flops per FMA lane. Each measurement times one parallel region in which every
 * thread runs the same number of iterations (the slowest thread sets the time), repeated
 * REPS times, the best kept. The iteration count is calibrated first so that one region
 * lasts about 50 ms. m and c keep every chain converging to c / (1 - m), a normal number:
 * no overflow, no subnormals. The results are summed into a volatile so that nothing is
 * dropped.
 *
 * Usage: peak [THREADS] [REPS]   (THREADS: default OMP_NUM_THREADS; measures 1 and THREADS)
 * Prints one JSON object on stdout.
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile double sink;

/* One kernel per (width, dtype): NACC accumulators of vector type V, FMA F. */
#define CHAIN_KERNEL(NAME, V, SET1, FMA, NACC, LANES, STORE, ET)                    \
  static void NAME(long iters) {                                                   \
    V acc[NACC];                                                                   \
    for (int j = 0; j < NACC; j++) acc[j] = SET1((ET)(0.5 + 0.01 * j));            \
    const V m = SET1((ET)0.999999), c = SET1((ET)1e-6);                            \
    for (long i = 0; i < iters; i++) {                                             \
      _Pragma("GCC unroll 64") for (int j = 0; j < NACC; j++) acc[j] = FMA(acc[j], m, c); \
    }                                                                              \
    ET out[LANES];                                                                 \
    double s = 0;                                                                  \
    for (int j = 0; j < NACC; j++) {                                               \
      STORE(out, acc[j]);                                                          \
      for (int l = 0; l < LANES; l++) s += out[l];                                 \
    }                                                                              \
    sink += s;                                                                     \
  }

#if defined(__AVX512F__)
CHAIN_KERNEL(k512_f32, __m512, _mm512_set1_ps, _mm512_fmadd_ps, 24, 16, _mm512_storeu_ps, float)
CHAIN_KERNEL(k512_f64, __m512d, _mm512_set1_pd, _mm512_fmadd_pd, 24, 8, _mm512_storeu_pd, double)
#endif
#if defined(__FMA__)
CHAIN_KERNEL(k256_f32, __m256, _mm256_set1_ps, _mm256_fmadd_ps, 12, 8, _mm256_storeu_ps, float)
CHAIN_KERNEL(k256_f64, __m256d, _mm256_set1_pd, _mm256_fmadd_pd, 12, 4, _mm256_storeu_pd, double)
#endif
#if !defined(__FMA__)
/* Generic: GNU vector extensions; a * m + c becomes an FMA only where the target has one. */
typedef float v4f __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
static inline v4f set1_v4f(float x) { return (v4f){x, x, x, x}; }
static inline v2d set1_v2d(double x) { return (v2d){x, x}; }
static inline v4f fma_v4f(v4f a, v4f m, v4f c) { return a * m + c; }
static inline v2d fma_v2d(v2d a, v2d m, v2d c) { return a * m + c; }
static inline void st_v4f(float *p, v4f v) { memcpy(p, &v, sizeof v); }
static inline void st_v2d(double *p, v2d v) { memcpy(p, &v, sizeof v); }
CHAIN_KERNEL(kgen_f32, v4f, set1_v4f, fma_v4f, 12, 4, st_v4f, float)
CHAIN_KERNEL(kgen_f64, v2d, set1_v2d, fma_v2d, 12, 2, st_v2d, double)
#endif

typedef struct {
  const char *isa, *dtype;
  void (*kernel)(long);
  int nacc, lanes;
} Kernel;

static const Kernel kernels[] = {
#if defined(__AVX512F__)
    {"avx512", "f32", k512_f32, 24, 16},
    {"avx512", "f64", k512_f64, 24, 8},
#endif
#if defined(__FMA__)
    {"avx2", "f32", k256_f32, 12, 8},
    {"avx2", "f64", k256_f64, 12, 4},
#else
    {"generic", "f32", kgen_f32, 12, 4},
    {"generic", "f64", kgen_f64, 12, 2},
#endif
};

/* Seconds for one parallel region of `iters` iterations per thread. */
static double region(const Kernel *k, int threads, long iters) {
  double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
  {
#pragma omp barrier
#pragma omp master
    t0 = omp_get_wtime();
    k->kernel(iters);
#pragma omp barrier
#pragma omp master
    t1 = omp_get_wtime();
  }
  return t1 - t0;
}

/* Best GFLOP/s of `reps` regions, each calibrated to last about 50 ms. */
static double measure(const Kernel *k, int threads, int reps) {
  long iters = 1 << 14;
  while (iters < (1L << 40)) {
    double t = region(k, threads, iters);
    if (t > 0.02) {
      iters = (long)((double)iters * 0.05 / t) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t = region(k, threads, iters);
    if (t < best) best = t;
  }
  double flops = 2.0 * k->nacc * k->lanes * (double)iters * threads;
  return flops / best / 1e9;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : omp_get_max_threads();
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (threads <= 0 || reps <= 0) {
    fprintf(stderr, "usage: peak [THREADS] [REPS]\n");
    return 2;
  }
  int nk = (int)(sizeof kernels / sizeof kernels[0]);
  double best[2][2] = {{0, 0}, {0, 0}}; /* [dtype f32/f64][1 thread / THREADS] */
  const char *best_isa[2][2] = {{"", ""}, {"", ""}};
  printf("{\"threads\": %d, \"reps\": %d, \"runs\": [", threads, reps);
  for (int i = 0; i < nk; i++) {
    const Kernel *k = &kernels[i];
    int d = strcmp(k->dtype, "f64") == 0;
    int tcount[2] = {1, threads};
    for (int t = 0; t < (threads > 1 ? 2 : 1); t++) {
      double g = measure(k, tcount[t], reps);
      printf("%s{\"isa\": \"%s\", \"dtype\": \"%s\", \"lanes\": %d, \"accumulators\": %d, "
             "\"threads\": %d, \"gflops\": %.3f}",
             i || t ? ", " : "", k->isa, k->dtype, k->lanes, k->nacc, tcount[t], g);
      if (g > best[d][t]) best[d][t] = g, best_isa[d][t] = k->isa;
    }
  }
  if (threads == 1) {
    best[0][1] = best[0][0], best[1][1] = best[1][0];
    best_isa[0][1] = best_isa[0][0], best_isa[1][1] = best_isa[1][0];
  }
  printf("], \"f32_1t_gflops\": %.3f, \"f32_gflops\": %.3f, \"f64_1t_gflops\": %.3f, "
         "\"f64_gflops\": %.3f, \"f32_isa\": \"%s\", \"f64_isa\": \"%s\"}\n",
         best[0][0], best[0][1], best[1][0], best[1][1], best_isa[0][1], best_isa[1][1]);
  return 0;
}
