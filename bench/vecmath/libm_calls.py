#!/usr/bin/python3
"""bench/vecmath/libm_calls.py: which libm functions the generated code of the bench
workloads, the bench models, the examples and the vector-math table still calls, per
backend: tdslc --emit=c (a call in the C text) and --emit=llvm (a `call` of a libm
function, or of an LLVM intrinsic that lowers to one: llvm.sin, llvm.pow, ...).
Functions that are instructions on x86-64 (sqrt, fabs, fma, floor, ceil, trunc, rint,
copysign, fmin/fmax) are not counted.

    bench/vecmath/libm_calls.py [--tdslc PATH] [FILES...]

Prints one line per file and backend that calls any, with the calls and their counts.
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIBM = ("sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 expm1 log log2 log10 log1p "
        "pow hypot fmod remainder erf erfc lgamma tgamma cbrt nextafter ldexp frexp modf").split()
NAMES = "|".join(sorted({n + s for n in LIBM for s in ("", "f")}, key=len, reverse=True))
C_CALL = re.compile(r"(?<![\w.])(" + NAMES + r")\s*\(")
LL_CALL = re.compile(r"\bcall\b[^@\n]*@(?:(" + NAMES + r")|llvm\.(" + "|".join(LIBM) + r")\.(?:f32|f64|v\d+f\d+))\(")


HELPER = re.compile(r"^static inline [^(]*\b(tdsl_g_\w+)\s*\(")


def calls(text, pattern, c):
    """{libm function: calls} in the code (C: outside comments; a call of one of the C
    preamble's inline helpers counts as the libm calls in its body)."""
    out = collections.Counter()
    helpers = {}
    lines = [re.sub(r"//.*", "", ln) for ln in text.splitlines()] if c else text.splitlines()
    for line in lines:
        h = HELPER.match(line) if c else None
        if h:
            helpers[h.group(1)] = [next(g for g in m.groups() if g) for m in pattern.finditer(line)]
    for line in lines:
        if c and (HELPER.match(line) or line.lstrip().startswith("#")):
            continue
        for m in pattern.finditer(line):
            out[next(g for g in m.groups() if g)] += 1
        for name, fs in helpers.items():
            n = len(re.findall(r"\b" + name + r"\s*\(", line))
            for f in fs if n else ():
                out[f] += n
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", default=os.path.join(ROOT, "build", "tdslc"))
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = args.files or sorted(glob.glob(os.path.join(ROOT, "bench", "workloads", "*.tdsl")) +
                                 glob.glob(os.path.join(ROOT, "bench", "models", "*.tdsl")) +
                                 glob.glob(os.path.join(ROOT, "examples", "*.tdsl")) +
                                 [os.path.join(ROOT, "bench", "vector_math.tdsl")])
    total = collections.Counter()
    with tempfile.TemporaryDirectory() as d:
        for f in files:
            for emit, pattern in (("c", C_CALL), ("llvm", LL_CALL)):
                out = os.path.join(d, "out")
                cmd = [args.tdslc, f, f"--emit={emit}", "-o", out]
                p = subprocess.run(cmd, capture_output=True, text=True)
                unbound = sorted({d for m in re.finditer(r"dims? ([\w, ]+?) (?:is|are) unbound", p.stderr)
                                  for d in m.group(1).split(", ")})
                if p.returncode != 0 and unbound:  # a generic model: its dims at 64
                    p = subprocess.run(cmd + [a for d in unbound for a in ("--dim", f"{d}=64")],
                                       capture_output=True, text=True)
                name = os.path.relpath(f, ROOT)
                if p.returncode != 0:
                    print(f"{name} [{emit}]: tdslc exit {p.returncode}: {p.stderr.strip()[:200]}")
                    continue
                with open(out) as fh:
                    found = calls(fh.read(), pattern, emit == "c")
                total.update({(emit, k): v for k, v in found.items()})
                if found:
                    print(f"{name} [{emit}]: " + ", ".join(f"{k} x{v}" for k, v in sorted(found.items())))
    print("total: " + (", ".join(f"{k} [{e}] x{v}" for (e, k), v in sorted(total.items())) or "no libm call"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
