#!/usr/bin/python3
"""tests/tools/emit_snapshot.py: every emitted text of a corpus of programs, written to a
folder, so that a refactoring can be checked byte for byte against the tree before it.

    emit_snapshot.py TDSLC OUT_DIR [--random N] [--jobs J] [--extra DIR]
    diff -r BEFORE_DIR AFTER_DIR

The corpus: examples/, tests/golden/, tests/errors/, bench/ (workloads, gemm, models),
every case of tests/run/test_ops.py, N programs of tests/run/randprog.py (seeds 0..N-1)
and the .tdsl files of each --extra folder. Each is emitted as c, llvm (for two CPUs: one
AVX2, one AVX-512), cuda, ptx, ir, kernels and header; a failed emission is recorded
with its exit status and stderr, which must not change either.

    emit_snapshot.py --record DIR TDSLC [SCRIPT ...]

runs test scripts of tests/run (all of them by default) with a tdslc that keeps a copy
of every program it is given in DIR (named by its content's hash): the programs the
tests compile, for --extra. Record them once, with the tdslc from before the change.
The sources are written to one folder (their paths appear in diagnostics):
$TDSL_SNAPSHOT_SRC, else tdsl-emit-snapshot in the temporary folder.
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


def corpus(nrandom, extra=()):
    """(name, source text) pairs."""
    out = []
    for d in ("examples", "tests/golden", "tests/errors", "bench/workloads", "bench/gemm", "bench/models"):
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
    for d in extra:
        for f in sorted(os.listdir(d)):
            if f.endswith(".tdsl"):
                with open(os.path.join(d, f), errors="replace") as fh:
                    out.append((f"extra_{f[:-5]}", fh.read()))
    return out


# Sources go to one fixed folder: their paths appear in diagnostics and comments.
SRC_DIR = os.environ.get("TDSL_SNAPSHOT_SRC") or os.path.join(tempfile.gettempdir(), "tdsl-emit-snapshot")

# The recording tdslc: copies each .tdsl argument to $TDSL_RECORD, then runs the real one.
SHIM = """#!/usr/bin/python3
import hashlib, os, sys
real, out = os.environ["TDSL_RECORD_REAL"], os.environ["TDSL_RECORD"]
for a in sys.argv[1:]:
    if a.endswith(".tdsl") and os.path.isfile(a):
        data = open(a, "rb").read()
        p = os.path.join(out, hashlib.sha1(data).hexdigest()[:16] + ".tdsl")
        if not os.path.exists(p):
            with open(p + ".tmp", "wb") as f:
                f.write(data)
            os.replace(p + ".tmp", p)
os.execv(real, [real] + sys.argv[1:])
"""


def record(out_dir, tdslc, scripts):
    """Runs the test scripts with the recording tdslc; returns how many programs it kept."""
    os.makedirs(out_dir, exist_ok=True)
    run_dir = os.path.join(ROOT, "tests", "run")
    if not scripts:
        scripts = sorted(f for f in os.listdir(run_dir) if f.startswith("test_") and f.endswith(".py"))
    with tempfile.TemporaryDirectory() as tmp:
        shim = os.path.join(tmp, "tdslc")
        with open(shim, "w") as fh:
            fh.write(SHIM)
        os.chmod(shim, 0o755)
        env = dict(os.environ, TDSL_RECORD_REAL=os.path.abspath(tdslc), TDSL_RECORD=os.path.abspath(out_dir))
        for script in scripts:
            for backend in ("c",):
                p = subprocess.run([sys.executable, os.path.join(run_dir, script), shim], capture_output=True,
                                   env=dict(env, TDSL_BACKEND=backend))
                print(f"{script} ({backend}): exit {p.returncode}", flush=True)
    return len([f for f in os.listdir(out_dir) if f.endswith(".tdsl")])


def emit_all(tdslc, out_dir, name, src):
    path = os.path.join(SRC_DIR, f"{name}.tdsl")
    with open(path, "w") as fh:
        fh.write(src)
    fns = re.findall(r"^fn\s+(\w+)", src, re.M)
    if len(fns) > 40:  # a test's batch of cases: each compile reads them all, so a sample of them
        fns = fns[:10] + fns[10::25]
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
    if len(sys.argv) > 1 and sys.argv[1] == "--record":
        if len(sys.argv) < 4:
            sys.exit("usage: emit_snapshot.py --record DIR TDSLC [SCRIPT ...]")
        print(f"{record(sys.argv[2], sys.argv[3], sys.argv[4:])} programs in {sys.argv[2]}")
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("tdslc")
    ap.add_argument("out_dir")
    ap.add_argument("--random", type=int, default=400)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--extra", action="append", default=[], help="a folder of more .tdsl programs")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    os.makedirs(SRC_DIR, exist_ok=True)
    progs = corpus(a.random, a.extra)
    tdslc = os.path.abspath(a.tdslc)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        list(ex.map(lambda p: emit_all(tdslc, a.out_dir, *p), progs))
    print(f"{len(progs)} programs x {len(KINDS)} kinds in {a.out_dir}")


if __name__ == "__main__":
    main()
