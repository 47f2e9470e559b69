#!/usr/bin/python3
"""bench/interleave.py — one workload, several tdsl builds and Halide, timed call by call in
one process: the A/B measurement for a noisy shared machine.

bench/run.py times each implementation in a process of its own, one after the other. On
this VM the memory changes speed by 2x from one minute to the next (bench/GAPS.md), so two
implementations timed a minute apart compare minutes, not code. Here one C program calls
every implementation round-robin (the order rotated every round), on the same inputs, and
prints each one's median and min against the best Halide variant:

  - each tdslc (LABEL=PATH, e.g. main's and a branch's) compiles bench/workloads/NAME.tdsl
    with both CPU backends: --emit=obj (LLVM), and --emit=c built with the flags
    `tdslc run --backend c` uses (driver/cc.c); the entries are renamed (objcopy) and
    linked into the program with the first tdslc's libtdslrt.a;
  - each Halide variant (--halide: hand, Adams2019, Mullapudi2016, Li2018) is compiled by
    bench/halide_work.py as a static library of the same algorithm and schedule
    bench/run.py times, reading the tdsl inputs' own memory;
  - a tdsl call allocates and releases its result (the storage cache hands the same block
    back), as in `tdslc bench`; so does a Halide call around its realization: every
    implementation writes the same output block. Why: a result larger than the last-level
    cache leaves part of itself there, dirty, and the next call is up to 1.3x faster when
    those lines are of the block it writes (broadcast_add, 64 MiB, plain stores: tdsl and
    Adams2019 each 1.04-1.32x faster after a writer of their own block than after a writer
    of another one, in one run). With a block of its own, each implementation's time
    depended on which one the order put before it (--own-block keeps that, to compare);
  - every implementation is warmed up for at least TDSL_STREAM_SETTLE calls (tdsl.h: the
    calls a streamed result's site takes to choose its store form), as bench/run.py warms
    up every peer, in rounds of K calls;
  - --block K: K calls of one implementation back to back before the next (1: strictly
    alternating; larger: each one's result stays in the caches between its own calls, as
    in bench/run.py's processes); the order of the implementations is shuffled every
    round (a fixed seed), so each follows every other about equally often;
  - --chrt: the program runs under `chrt -f 10` (real-time FIFO, for the few seconds it
    takes), so that other tenants' processes do not take the cores; it needs root or
    CAP_SYS_NICE, and holds both cores meanwhile.

Usage: bench/interleave.py broadcast_add --tdslc main=/work/main/build/tdslc
           --tdslc new=build/tdslc [--halide hand,Adams2019] [--calls 40] [--runs 3]
           [--block 1] [--chrt] [--threads 2] [--keep DIR] [--own-block]
Prints the table of each run. Timings only; nothing is checked here (bench/run.py checks
every implementation against NumPy).
"""
import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import halide_work  # noqa: E402
import run as R  # noqa: E402  (bench/run.py: WORKLOADS)

CC_FLAGS = (["-std=c11", "-O2", "-march=native", "-fvect-cost-model=dynamic", "-fno-math-errno",
             "-fno-trapping-math"]  # driver/cc.c's, without -shared -fPIC
            + (["-mprefer-vector-width=512"] if platform.machine() == "x86_64" else []))


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit("interleave: %s failed (exit %d): %s" % (cmd[0], r.returncode, (r.stderr or r.stdout).strip()[-600:]))
    return r.stdout


def tdsl_objects(w, tdslcs, d):
    """[(label, object)] for each tdslc and backend, the entry renamed v<k>."""
    src = os.path.join(HERE, "workloads", w["file"])
    objs = []
    for label, tdslc in tdslcs:
        inc = sh([tdslc, "--print-include-dir"]).strip()
        for backend in ("c", "llvm"):
            k = len(objs)
            o = os.path.join(d, "v%d.o" % k)
            if backend == "c":
                c = os.path.join(d, "v%d.c" % k)
                sh([tdslc, src, "--fn", w["fn"], "--emit=c", "-o", c])
                sh(["cc"] + CC_FLAGS + ["-I", inc, "-c", c, "-o", o])
            else:
                sh([tdslc, src, "--fn", w["fn"], "--emit=obj", "-o", o])
            sh(["objcopy", "--redefine-sym", "%s=v%d" % (w["fn"], k), o])
            objs.append(("%s-%s" % (label, backend), o))
    return objs


def driver_source(w, ntdsl, hvariants, hshapes, oshape, own_block=False):
    """The C program: inputs as tdsl tensors (tdsl_fill_random), Halide's buffers over
    their memory, the calls round-robin in a shuffled order; prints one line per
    implementation. Halide's output is a tdsl storage taken and released around each call
    (the block tdsl's results get), or with own_block one block of its own."""
    n = len(w["inputs"])
    L = ['#define _GNU_SOURCE', '#include <stdio.h>', '#include <stdlib.h>', '#include <string.h>',
         '#include <time.h>', '#include <sys/mman.h>', '#include "tdsl.h"', '#include "HalideRuntime.h"']
    for v in hvariants:
        L.append("int hl_%s(%s);" % (v, ", ".join(["struct halide_buffer_t *"] * (len(hshapes) + 1))))
    for k in range(ntdsl):
        L.append("int v%d(%s, tdsl_tensor *out0);" % (k, ", ".join("const tdsl_tensor *a%d" % i for i in range(n))))
    L += ['static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); '
          'return t.tv_sec * 1e3 + t.tv_nsec * 1e-6; }',
          'static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; '
          'return x < y ? -1 : x > y; }',
          '// a block as runtime/storage.c makes one: 2 MiB aligned, huge pages, touched',
          'static float *block(size_t n) { size_t b = (n * 4 + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1); '
          'float *p = aligned_alloc(2u << 20, b); if (!p) exit(2); madvise(p, b, MADV_HUGEPAGE); memset(p, 0, b); '
          'return p; }',
          'static void hbuf(halide_buffer_t *b, halide_dimension_t *d, void *p, int nd, const int *shape) { '
          'memset(b, 0, sizeof *b); b->host = (uint8_t *)p; b->type.code = halide_type_float; b->type.bits = 32; '
          'b->type.lanes = 1; b->dimensions = nd; b->dim = d; int s = 1; for (int i = 0; i < nd; i++) { '
          'd[i].min = 0; d[i].extent = shape[nd - 1 - i]; d[i].stride = s; d[i].flags = 0; s *= shape[nd - 1 - i]; } }',
          'int main(int argc, char **argv) {',
          '  int N = argc > 1 ? atoi(argv[1]) : 40, B = argc > 2 ? atoi(argv[2]) : 1;',
          '  if (N < 1 || B < 1) return 2;',
          '  uint64_t st = 1;']
    for i, s in enumerate(w["inputs"]):
        L.append('  int64_t s%d[] = {%s}; tdsl_tensor a%d; if (tdsl_tensor_empty_uninit(&a%d, TDSL_F32, %d, s%d)) '
                 'return 2; tdsl_fill_random(&a%d, &st);' % (i, ", ".join(map(str, s)), i, i, len(s), i, i))
    for i, s in enumerate(hshapes):
        L.append('  int hs%d[] = {%s}; halide_dimension_t hd%d[8]; halide_buffer_t hb%d; '
                 'hbuf(&hb%d, hd%d, tdsl_tensor_data(&a%d), %d, hs%d);' % (i, ", ".join(map(str, s)), i, i, i, i, i,
                                                                          len(s), i))
    no = 1
    for d in oshape:
        no *= d
    L.append('  int hso[] = {%s}; halide_dimension_t hdo[8]; halide_buffer_t hbo; hbuf(&hbo, hdo, %s, %d, hso);'
             % (", ".join(map(str, oshape)), "block(%d)" % no if own_block else "NULL", len(oshape)))
    L.append('  int64_t so[] = {%s};' % ", ".join(map(str, oshape)))
    args = ", ".join("&a%d" % i for i in range(n))
    hargs = ", ".join("&hb%d" % i for i in range(len(hshapes))) + ", &hbo"
    T = ntdsl + len(hvariants)
    L += ['  int T = %d; double *ts = malloc(sizeof(double) * (size_t)N * T); if (!ts) return 2;' % T,
          '  int order[%d]; for (int j = 0; j < T; j++) order[j] = j;' % T,
          '  uint64_t sh = 0x9e3779b97f4a7c15u;',
          '  int W = B * ((TDSL_STREAM_SETTLE + B - 1) / B);  // warm-up calls, as bench/run.py\'s (warmup_for)',
          '  for (int rb = -W; rb < N; rb += B) {  // warm-up rounds, then blocks of B calls per implementation',
          '    for (int j = T - 1; j > 0; j--) {  // this round\'s order: Fisher-Yates, xorshift64',
          '      sh ^= sh << 13; sh ^= sh >> 7; sh ^= sh << 17;',
          '      int i = (int)(sh % (uint64_t)(j + 1)), x = order[i]; order[i] = order[j]; order[j] = x;',
          '    }',
          '    for (int j = 0; j < T; j++) {',
          '      int k = order[j];',
          '      for (int r = rb; r < rb + B && r < N; r++) {',
          '        double t0 = now(); int rc = 0;',
          '        switch (k) {']
    for k in range(ntdsl):
        L.append('        case %d: { tdsl_tensor o = {0}; rc = v%d(%s, &o); if (!rc) tdsl_tensor_release(&o); } break;'
                 % (k, k, args))
    for j, v in enumerate(hvariants):
        if own_block:
            L.append('        case %d: rc = hl_%s(%s); break;' % (ntdsl + j, v, hargs))
        else:
            L.append('        case %d: { tdsl_tensor o; rc = tdsl_tensor_empty_uninit(&o, TDSL_F32, %d, so); if (rc) break; '
                     'hbo.host = (uint8_t *)tdsl_tensor_data(&o); rc = hl_%s(%s); tdsl_tensor_release(&o); } break;'
                     % (ntdsl + j, len(oshape), v, hargs))
    L += ['        }',
          '        double t = now() - t0;',
          '        if (rc) { fprintf(stderr, "implementation %%d failed: %%s\\n", k, k < %d ? tdsl_last_error() : '
          '"halide"); return 1; }' % ntdsl,
          '        if (r >= 0) ts[(size_t)k * N + r] = t;',
          '      }',
          '    }',
          '  }',
          '  for (int k = 0; k < T; k++) qsort(ts + (size_t)k * N, (size_t)N, sizeof(double), cmp);',
          '  for (int k = 0; k < T; k++) printf("%d %.6g %.6g\\n", k, ts[(size_t)k * N + N / 2], ts[(size_t)k * N]);',
          '  return 0;', '}']
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", help="a name of bench/run.py's WORKLOADS that bench/halide_work.py has")
    ap.add_argument("--tdslc", action="append", default=[], metavar="LABEL=PATH",
                    help="a tdslc to compile the workload with (repeatable; the first's runtime is linked)")
    ap.add_argument("--halide", default="hand,Adams2019", help="Halide variants, comma-separated")
    ap.add_argument("--calls", type=int, default=40, help="timed calls of each implementation per run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--block", type=int, default=1, help="calls of one implementation back to back")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--chrt", action="store_true", help="run under chrt -f 10 (real-time FIFO)")
    ap.add_argument("--keep", default="", help="build in this folder and keep it")
    ap.add_argument("--own-block", action="store_true",
                    help="Halide writes one output block of its own (not the storage tdsl's results get)")
    a = ap.parse_args()
    w = next((w for w in R.WORKLOADS if w["name"] == a.workload), None)
    if w is None or a.workload not in halide_work.WORKS:
        ap.error("%s: not a workload Halide has (%s)" % (a.workload, ", ".join(sorted(halide_work.WORKS))))
    tdslcs = []
    for spec in a.tdslc or ["tdsl=" + os.path.join(os.path.dirname(HERE), "build", "tdslc")]:
        label, _, path = spec.rpartition("=")
        if not os.access(path, os.X_OK):
            ap.error("--tdslc %s: no executable there" % spec)
        tdslcs.append((label or "tdsl%d" % len(tdslcs), os.path.abspath(path)))
    hv = [v for v in a.halide.split(",") if v]
    for v in hv:
        if v != "hand" and v not in halide_work.AUTOSCHEDULERS:
            ap.error("--halide: %s is not hand or one of %s" % (v, ", ".join(halide_work.AUTOSCHEDULERS)))
    if a.calls < 1 or a.runs < 1 or a.block < 1:
        ap.error("--calls, --runs and --block must be at least 1")
    import numpy as np
    d = a.keep or tempfile.mkdtemp(prefix="tdsl-interleave-")
    os.makedirs(d, exist_ok=True)
    try:
        objs = tdsl_objects(w, tdslcs, d)
        hshapes = halide_work.halide_shapes(a.workload, np, w["inputs"])
        libs, oshape = [], None
        for v in hv:
            prefix = os.path.join(d, "hl_" + v)
            oshape = halide_work.static_library(a.workload, v, hshapes, a.threads, prefix, "hl_" + v)
            libs.append(prefix + ".a")
        main_c = os.path.join(d, "main.c")
        with open(main_c, "w") as f:
            f.write(driver_source(w, len(objs), hv, hshapes, oshape, a.own_block))
        exe = os.path.join(d, "interleave")
        inc = sh([tdslcs[0][1], "--print-include-dir"]).strip()
        lib = sh([tdslcs[0][1], "--print-lib-dir"]).strip()
        sh(["cc", "-O2", main_c] + [o for _, o in objs] + libs +
           ["-I", inc, "-I", "/usr/include/halide14", os.path.join(lib, "libtdslrt.a"), "-lm", "-lpthread", "-ldl",
            "-o", exe])
        labels = [lab for lab, _ in objs] + ["halide-" + v for v in hv]
        env = dict(os.environ, TDSL_NUM_THREADS=str(a.threads), HL_NUM_THREADS=str(a.threads))
        for run in range(a.runs):
            cmd = (["chrt", "-f", "10"] if a.chrt else []) + [exe, str(a.calls), str(a.block)]
            out = sh(cmd, env=env)
            rows = [line.split() for line in out.strip().splitlines()]
            med = {int(k): float(m) for k, m, _ in rows}
            mn = {int(k): float(x) for k, _, x in rows}
            hbest = min(med[k] for k in range(len(objs), len(labels)))
            hmin = min(mn[k] for k in range(len(objs), len(labels)))
            print("run %d of %d (%s, %d calls each, blocks of %d):" % (run + 1, a.runs, a.workload, a.calls, a.block))
            for k, lab in enumerate(labels):
                print("  %-22s median %8.3f ms  min %8.3f ms   best Halide / this: median %.2fx  min %.2fx"
                      % (lab, med[k], mn[k], hbest / med[k], hmin / mn[k]))
            sys.stdout.flush()
    finally:
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
