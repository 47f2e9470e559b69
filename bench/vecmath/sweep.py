#!/usr/bin/python3
"""bench/vecmath/sweep.py: builds and runs bench/vecmath/sweep.c, the accuracy sweep of
tdsl's CPU math, on the code of one backend.

    bench/vecmath/sweep.py [--tdslc PATH] [--backend c|llvm] [--cpu NAME] [SWEEP ARGS...]

SWEEP ARGS go to sweep (--stride S: every S-th f32, default 1 = all 2^32; --f64-count N;
--only NAME). --cpu builds the functions for another CPU (the LLVM backend; x86-64 has
no FMA, so the sweep measures the unfused arithmetic). An exhaustive run of every
function takes about an hour on two cores; `--stride 97` a minute.
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "erf", "erfc", "sin", "cos",
         "sigmoid", "silu"]
CHUNK = 1 << 22


def source():
    out = []
    for dt in ("f32", "f64"):
        for op in UNARY:
            out.append(f"fn vm_{op}_{dt}(x: {dt}[{CHUNK}]) -> {dt}[{CHUNK}] {{\n    return {op}(x)\n}}\n")
        out.append(f"fn vm_pow_{dt}(x: {dt}[{CHUNK}], y: {dt}[{CHUNK}]) -> {dt}[{CHUNK}] {{\n"
                   f"    return pow(x, y)\n}}\n")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", default=os.path.join(ROOT, "build", "tdslc"))
    ap.add_argument("--backend", default="llvm", choices=["c", "llvm"])
    ap.add_argument("--cpu", default=None)
    args, rest = ap.parse_known_args()
    tdslc = args.tdslc
    inc = subprocess.run([tdslc, "--print-include-dir"], capture_output=True, text=True, check=True).stdout.strip()
    lib = subprocess.run([tdslc, "--print-lib-dir"], capture_output=True, text=True, check=True).stdout.strip()
    cpu = [f"--cpu={args.cpu}"] if args.cpu else []
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "sweep.tdsl")
        with open(src, "w") as f:
            f.write(source())
        subprocess.run([tdslc, src, "--emit=header", "-o", os.path.join(d, "sweep_fns.h")] + cpu, check=True)
        if args.backend == "c":
            fns = os.path.join(d, "fns.c")
            subprocess.run([tdslc, src, "--emit=c", "-o", fns] + cpu, check=True)
            # the flags tdslc's own C backend uses (driver/cc.c)
            subprocess.run(["cc", "-std=c11", "-O2", "-march=native", "-fvect-cost-model=dynamic", "-fno-math-errno", "-fno-trapping-math",
                            "-fopenmp"] + (["-mprefer-vector-width=512"] if platform.machine() == "x86_64" else []) + ["-c", fns, "-I", inc, "-o", os.path.join(d, "fns.o")], check=True)
        else:
            subprocess.run([tdslc, src, "--emit=obj", "-o", os.path.join(d, "fns.o")] + cpu, check=True)
        exe = os.path.join(d, "sweep")
        subprocess.run(["cc", "-std=gnu11", "-O2", "-fopenmp", os.path.join(HERE, "sweep.c"), os.path.join(d, "fns.o"),
                        "-I", d, "-I", inc, os.path.join(lib, "libtdslrt.a"), "-lm", "-lpthread", "-o", exe], check=True)
        sys.stdout.flush()
        return subprocess.run([exe] + rest).returncode


if __name__ == "__main__":
    sys.exit(main())
