/* bench/stream.c — a STREAM-style memory bandwidth measurement (copy and triad).
 *
 * Built by bench/run.py with `cc -O3 -march=native -fopenmp`, run with OMP_NUM_THREADS
 * threads (2 by default). Three double arrays of N elements each, N chosen so that every
 * array is far larger than the last-level cache (80 MB at least, see run.py). Each kernel
 * runs REPS times and the best time is kept, as in McCalpin's STREAM:
 *   copy:  c[i] = a[i]              counts 2 * 8 * N bytes (one read, one write)
 *   triad: a[i] = b[i] + s * c[i]   counts 3 * 8 * N bytes (two reads, one write)
 * Like STREAM, the count ignores the write-allocate read of the destination, so the
 * figures are what a kernel that reads R bytes and writes W bytes can expect to reach
 * for (R + W) / time. The arrays are first touched by the same static OpenMP schedule
 * the kernels use, so each thread works on pages it faulted in itself.
 *
 * With a third argument `copy`, only two arrays and the copy: the same traffic as a
 * workload that reads one array and writes another of N doubles, its arrays kept from
 * call to call (bench/run.py's bar at the memory workloads' own size, which may stay
 * in a large last-level cache where the arrays above do not).
 *
 * Usage: stream [N] [REPS] [copy]    Prints one JSON object on stdout.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double now(void) { return omp_get_wtime(); }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10L * 1000 * 1000; /* 80 MB per array */
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    int copy_only = argc > 3 && !strcmp(argv[3], "copy");
    if (n <= 0 || reps <= 0 || (argc > 3 && !copy_only)) {
        fprintf(stderr, "usage: stream [N] [REPS] [copy]\n");
        return 2;
    }
    double *a = aligned_alloc(64, ((size_t)n * sizeof(double) + 63) / 64 * 64);
    double *b = copy_only ? a : aligned_alloc(64, ((size_t)n * sizeof(double) + 63) / 64 * 64);
    double *c = aligned_alloc(64, ((size_t)n * sizeof(double) + 63) / 64 * 64);
    if (!a || !b || !c) {
        fprintf(stderr, "stream: out of memory for %d x %ld doubles\n", copy_only ? 2 : 3, n);
        return 1;
    }
    const double s = 3.0;

#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        b[i] = 2.0;
        a[i] = 1.0; /* (after b: in copy mode they are one array) */
        c[i] = 0.0;
    }

    double best_copy = 1e30, best_triad = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) c[i] = a[i];
        double t1 = now();
        if (copy_only) {
            if (t1 - t0 < best_copy) best_copy = t1 - t0;
            continue;
        }
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        double t2 = now();
        if (t1 - t0 < best_copy) best_copy = t1 - t0;
        if (t2 - t1 < best_triad) best_triad = t2 - t1;
    }

    /* check the arithmetic so the loops cannot be dropped: after the last rep, with
     * c = a_prev and a = b + s*c, every element of a is the same value */
    double expect = 1.0;
    for (int r = 0; r < reps && !copy_only; r++) expect = 2.0 + s * expect;
    long bad = 0;
    for (long i = 0; i < n; i += 4099)
        if ((copy_only ? c[i] : a[i]) != expect) bad++;

    double copy_bytes = 2.0 * sizeof(double) * (double)n;
    double triad_bytes = 3.0 * sizeof(double) * (double)n;
    printf("{\"threads\": %d, \"n\": %ld, \"array_bytes\": %ld, \"reps\": %d, "
           "\"copy_s\": %.9f, \"triad_s\": %.9f, "
           "\"copy_gbps\": %.3f, \"triad_gbps\": %.3f, \"check\": \"%s\"}\n",
           omp_get_max_threads(), n, (long)(n * (long)sizeof(double)), reps, best_copy,
           copy_only ? 0.0 : best_triad, copy_bytes / best_copy / 1e9,
           copy_only ? 0.0 : triad_bytes / best_triad / 1e9,
           bad ? "FAILED" : "ok");
    free(a);
    if (!copy_only) free(b);
    free(c);
    return bad ? 1 : 0;
}
