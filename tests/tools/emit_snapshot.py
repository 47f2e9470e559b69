#!/usr/bin/python3
"""tests/tools/emit_snapshot.py: every emitted text of a corpus of programs, written to a
folder, so that a refactoring can be checked byte for byte against the tree before it.

    emit_snapshot.py TDSLC OUT_DIR [--random N] [--jobs J]
    diff -r BEFORE_DIR AFTER_DIR

The corpus: examples/, tests/golden/, bench/ (workloads, gemm, models), every case of
tests/run/test_ops.py and N programs of tests/run/randprog.py (seeds 0..N-1). Each is
emitted as c, llvm (for two CPUs: one AVX2, one AVX-512), cuda, ptx, ir, kernels and
header; a failed emission is recorded with its exit status and stderr, which must not
change either.
"""
import argparse
import concurrent.futures
import inspect
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "run"))

KINDS = [("c", ["--cpu=haswell"]), ("c", ["--cpu=skylake-avx512"]), ("llvm", ["--cpu=haswell"]),
         ("llvm", ["--cpu=skylake-avx512"]), ("cuda", []), ("ptx", []), ("ir", ["--cpu=haswell"]),
         ("kernels", ["--cpu=haswell"]), ("header", [])]


def corpus(nrandom):
    """(name, source text) pairs."""
    out = []
    for d in ("examples", "tests/golden", "bench/workloads", "bench/gemm", "bench/models"):
        for f in sorted(os.listdir(os.path.join(ROOT, d))):
            if f.endswith(".tdsl"):
                with open(os.path.join(ROOT, d, f)) as fh:
                    out.append((f"{d.replace('/', '_')}_{f[:-5]}", fh.read()))
    import test_ops  # noqa: E402
    for name in sorted(n for n in dir(test_ops) if n.endswith("_cases")):
        fn = getattr(test_ops, name)
        if name == "all_cases" or inspect.signature(fn).parameters:  # every table at once; a runner
            continue
        for i, case in enumerate(fn()):
            out.append((f"ops_{name}_{i}", case.source()))
    import randprog  # noqa: E402
    for seed in range(nrandom):
        out.append((f"random_{seed}", randprog.Program(seed).build().src))
    return out


# Sources go to one fixed folder: their paths appear in diagnostics and comments.
SRC_DIR = os.path.join(tempfile.gettempdir(), "tdsl-emit-snapshot")


def emit_all(tdslc, out_dir, name, src):
    path = os.path.join(SRC_DIR, f"{name}.tdsl")
    with open(path, "w") as fh:
        fh.write(src)
    fns = re.findall(r"^fn\s+(\w+)", src, re.M)
    for kind, extra in KINDS:
        # ir and kernels show one function: every function of a file, one by one
        for fn in fns if kind in ("ir", "kernels") and len(fns) > 1 else [None]:
            args = [*extra, "--fn", fn] if fn else extra
            p = subprocess.run([tdslc, path, f"--emit={kind}", *args], capture_output=True)
            tag = "".join(e.split("=")[-1] for e in extra) + (f".{fn}" if fn else "")
            with open(os.path.join(out_dir, f"{name}.{kind}{'.' + tag if tag else ''}"), "wb") as fh:
                fh.write(p.stdout)
                if p.returncode != 0:
                    fh.write(b"\n--- exit %d\n" % p.returncode + p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tdslc")
    ap.add_argument("out_dir")
    ap.add_argument("--random", type=int, default=400)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    os.makedirs(SRC_DIR, exist_ok=True)
    progs = corpus(a.random)
    tdslc = os.path.abspath(a.tdslc)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        list(ex.map(lambda p: emit_all(tdslc, a.out_dir, *p), progs))
    print(f"{len(progs)} programs x {len(KINDS)} kinds in {a.out_dir}")


if __name__ == "__main__":
    main()
