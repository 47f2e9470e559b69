#!/usr/bin/python3
"""bench/vecmath/ab.py: one function of a .tdsl file, compiled by two (or more) tdslc
binaries and both CPU backends, timed in one process, interleaved call by call
(bench/vecmath/ab.c): the A/B of a change against main on a shared, noisy machine.

    bench/vecmath/ab.py FILE.tdsl --fn NAME --shape 4096,4096 NAME=TDSLC [NAME=TDSLC...]
        [--backends c,llvm] [--rounds 40] [--runs 3] [--chrt] [--cpu NAME]

Each entry takes one f32 tensor of --shape (uniform in [-8, 8); with AB_S or AB_B in the
environment, u of that as (u + 8.5) AB_S + AB_B, made in the driver: subnormal inputs
without a kernel forming them). The entries' global symbols are renamed per variant
(objcopy --redefine-sym) and linked into one driver with
the runtime of the first tdslc. --chrt runs the driver under `chrt -f 10` (real-time
FIFO: other tenants wait; needs root), as bench/GAPS.md describes. The first variant is
the base of the printed ratios (> 1: slower than it). --cpu NAME compiles for that CPU
alone (tdslc --cpu=NAME, gcc -march=NAME), not the host: `--cpu znver3` gives both backends
Zen 3's AVX2 code and schedules on any x86 host that has AVX2 and FMA.
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CFLAGS = (["-std=c11", "-O2", "-march=native", "-fvect-cost-model=dynamic", "-fno-math-errno", "-fno-trapping-math",
           "-fopenmp"]  # driver/cc.c's
          + (["-mprefer-vector-width=512"] if platform.machine() == "x86_64" else []))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--fn", required=True)
    ap.add_argument("--shape", default="4096,4096")
    ap.add_argument("--backends", default="c,llvm")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--chrt", action="store_true")
    ap.add_argument("--cpu", default="")
    ap.add_argument("variants", nargs="+", help="NAME=TDSLC")
    a = ap.parse_args()
    variants = [v.split("=", 1) for v in a.variants]
    cpu = [f"--cpu={a.cpu}"] if a.cpu else []
    cflags = [f if not (a.cpu and f == "-march=native") else f"-march={a.cpu}" for f in CFLAGS
              if not (a.cpu and f.startswith("-mprefer-vector-width"))]
    first = variants[0][1]
    inc = run([first, "--print-include-dir"]).strip()
    lib = run([first, "--print-lib-dir"]).strip()
    with tempfile.TemporaryDirectory() as d:
        objs, names = [], []
        for vname, tdslc in variants:
            for be in a.backends.split(","):
                tag = f"{vname}_{be}"
                obj = os.path.join(d, tag + ".o")
                if be == "llvm":
                    run([tdslc, a.file, "--emit=obj", "--fn", a.fn, "-o", obj] + cpu)
                else:
                    src = os.path.join(d, tag + ".c")
                    run([tdslc, a.file, "--emit=c", "--fn", a.fn, "-o", src] + cpu)
                    run(["cc"] + cflags + ["-c", src, "-I", inc, "-o", obj])
                syms = [ln.split()[-1] for ln in run(["nm", "--defined-only", "-g", obj]).splitlines() if ln.strip()]
                ren = []
                for s in syms:
                    ren += ["--redefine-sym", f"{s}=ab_{tag}_{s}"]
                run(["objcopy"] + ren + [obj])
                objs.append(obj)
                names.append(tag)
        with open(os.path.join(d, "ab_entries.h"), "w") as f:
            f.write('#include "tdsl.h"\n')
            f.write(f"#define AB_N {len(names)}\n#define AB_SHAPE {a.shape}\n")
            for t in names:
                f.write(f"int ab_{t}_{a.fn}(const tdsl_tensor *, tdsl_tensor *);\n")
            f.write("static int (*const AB_FNS[])(const tdsl_tensor *, tdsl_tensor *) = {"
                    + ", ".join(f"ab_{t}_{a.fn}" for t in names) + "};\n")
            f.write("static const char *const AB_NAMES[] = {" + ", ".join(f'"{t}"' for t in names) + "};\n")
        exe = os.path.join(d, "ab")
        run(["cc", "-std=gnu11", "-O2", "-fopenmp", os.path.join(HERE, "ab.c")] + objs
            + ["-I", d, "-I", inc, os.path.join(lib, "libtdslrt.a"), "-lm", "-lpthread", "-ldl", "-o", exe])
        for _ in range(a.runs):
            cmd = (["chrt", "-f", "10"] if a.chrt else []) + [exe, str(a.rounds)]
            sys.stdout.write(run(cmd))
            sys.stdout.write("\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
