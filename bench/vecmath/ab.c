// bench/vecmath/ab.c: the A/B driver of bench/vecmath/ab.py. It calls the entries that
// ab.py links in (ab_entries.h: AB_N functions of one f32 tensor of AB_SHAPE, each
// compiled by some tdslc and backend) round-robin, one call each per round, the order
// rotated every round, so that every variant sees the same minutes of the machine; then
// prints each one's median time and its ratio to the first (> 1: slower than the first).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ab_entries.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 40;
  if (rounds < 1 || rounds > 100000) {
    fprintf(stderr, "usage: ab [ROUNDS]\n");
    return 2;
  }
  const int64_t shape[] = {AB_SHAPE};
  const int nd = (int)(sizeof shape / sizeof *shape);
  tdsl_tensor x;
  if (tdsl_tensor_empty_uninit(&x, TDSL_F32, nd, shape)) {
    fprintf(stderr, "ab: %s\n", tdsl_last_error());
    return 1;
  }
  float *xd = tdsl_tensor_data(&x);
  int64_t n = tdsl_tensor_numel(&x);
  // uniform in [-8, 8), or (u + 8.5) AB_S + AB_B of that u where set (in double, rounded
  // once: subnormal inputs read from memory, none formed in the kernel)
  const char *es = getenv("AB_S"), *eb = getenv("AB_B");
  double scale = es ? atof(es) : 1, off = eb ? atof(eb) : 0;
  unsigned s = 12345;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    double u = (s >> 8) * (16.0 / 16777216.0) - 8.0;
    xd[i] = (float)(es || eb ? (u + 8.5) * scale + off : u);
  }
  double *t = calloc((size_t)AB_N * rounds, sizeof *t);
  for (int warm = 0; warm < 2; warm++)
    for (int v = 0; v < AB_N; v++) {
      tdsl_tensor out = {0};
      if (AB_FNS[v](&x, &out)) {
        fprintf(stderr, "ab: %s: %s\n", AB_NAMES[v], tdsl_last_error());
        return 1;
      }
      tdsl_tensor_release(&out);
    }
  for (int r = 0; r < rounds; r++)
    for (int j = 0; j < AB_N; j++) {
      int v = (j + r) % AB_N;
      tdsl_tensor out = {0};
      double t0 = now();
      AB_FNS[v](&x, &out);
      t[v * rounds + r] = now() - t0;
      tdsl_tensor_release(&out);
    }
  double base = 0;
  for (int v = 0; v < AB_N; v++) {
    qsort(t + v * rounds, (size_t)rounds, sizeof *t, cmp_d);
    double med = t[v * rounds + rounds / 2], lo = t[v * rounds + rounds / 4], hi = t[v * rounds + 3 * rounds / 4];
    if (v == 0)
      base = med;
    printf("%-24s median %8.3f ms  (quartiles %.3f %.3f)  ratio to %s %.3f\n", AB_NAMES[v], med * 1e3, lo * 1e3,
           hi * 1e3, AB_NAMES[0], med / base);
  }
  free(t);
  tdsl_tensor_release(&x);
  return 0;
}
