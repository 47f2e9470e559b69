#!/usr/bin/python3
"""tests/run/test_gpu_run.py TDSLC: `tdslc run --target cuda` on both GPU backends,
`--backend ptx` (PTX through LLVM's NVPTX target, the default) and `--backend cuda`
(CUDA C compiled by NVRTC at run time), through runtime/cuda.c's tdsl_gpu_run.

Without a GPU (no libcuda.so.1, no device: every CI machine) it checks exactly what
LANGUAGE.md §9-10 promise there: exit status 3, one line
`tdslc: error: --target cuda: no GPU here (...)` on stderr, nothing on stdout, no
--out-dir made, for --target cuda and for either --backend; then exits 77 (a skip).

With a GPU it runs, on each backend: every example function (test_examples.py's
NumPy models), data errors raised on the device (exit 3, a located message; one of
them in a later layer of kernels sharing one function), test_shim.py's GRID programs
(grid-stride loops that go round, matmul tiles and tensor cores, long rows, attention;
also under a one-block grid, TDSL_GPU_GRID=1), every op program of test_ops.py and
seeded random programs (randprog.py; TDSL_GPU_RANDOM_COUNT, default 100).
TDSL_GPU_JOBS runs that many programs at a time (default 2); TDSL_GPU_BACKENDS,
TDSL_GPU_PARTS (examples,errors,grid,ops,random) and TDSL_GPU_SECONDS (start nothing
after that many seconds; what is left is listed as not run, a failure) are for
scripts/gpu-check.
Tolerances are the CPU tests' own: they are relative to each result's magnitude and
already allow reassociated reductions, which GPU reductions are. A failure prints the
program.
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

# The GPU machine's python3 may have NumPy 2, whose repr of a scalar (np.float64(1.5))
# would reach generated programs: scalars print as NumPy 1 printed them.
if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
    np.set_printoptions(legacy="1.25")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import SKIP, Tally, example_functions, tdslc_run_clean  # noqa: E402

GPU_BACKENDS = ("ptx", "cuda")
PROBE = "fn f(x: f32[2]) -> f32[2] {\n    return x + 1\n}\n"
NO_GPU = re.compile(r"\Atdslc: error: --target cuda: no GPU here \(.+\)\n\Z")


def run_tdslc(tdslc, args):
    p = subprocess.run([tdslc] + args, capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def check_no_gpu(tdslc, d):
    """The no-GPU behaviour for each way of asking for the GPU; returns failure lines."""
    path = os.path.join(d, "probe.tdsl")
    errs = []
    for flags in (["--target", "cuda"], ["--backend", "ptx"], ["--backend", "cuda"],
                  ["--target", "cuda", "--backend", "cuda", "--json"]):
        out_dir = os.path.join(d, "out")
        rc, out, err = run_tdslc(tdslc, ["run", path, "--out-dir", out_dir] + flags)
        what = " ".join(flags)
        if rc != 3:
            errs.append(f"{what}: exit {rc}, expected 3 ({err.strip()})")
        if not NO_GPU.match(err):
            errs.append(f"{what}: stderr {err!r}, expected one line 'tdslc: error: --target cuda: no GPU here (...)'")
        if out:
            errs.append(f"{what}: stdout {out!r}, expected nothing")
        if os.path.exists(out_dir):
            errs.append(f"{what}: --out-dir was created")
            shutil.rmtree(out_dir, ignore_errors=True)
    return errs


# ---- with a GPU: each part is a list of (label, job), a job returning failure lines ----
def gpu_examples(tdslc, backend):
    """Every function of examples/*.tdsl against test_examples.MODELS."""
    from test_examples import check_example
    return [(f"[{backend}] example {fname}:{fn}", lambda fname=fname, src=src, fn=fn:
             check_example(tdslc, fname, src, fn, backend)) for fname, src, fn in example_functions()]


def gpu_ops(tdslc, backend):
    """test_ops.py's programs (every op, dtype and layout), each as op_cases.run_case runs it."""
    import test_ops
    from op_cases import run_case
    return [(f"[{backend}] {c.name} ({len(c.outs)} outputs)", lambda c=c: run_case(tdslc, c, backend))
            for c in test_ops.all_cases()]


def gpu_random(tdslc, backend):
    """Seeded random programs, in randprog's bundles; a bundle's job returns its programs'
    failures, each line naming the seed."""
    from randprog import Program, bundles, run_bundle
    count = int(os.environ.get("TDSL_GPU_RANDOM_COUNT", "100"))
    first = int(os.environ.get("TDSL_RANDOM_SEED", "0"))
    progs = [Program(s).build() for s in range(first, first + count)]

    def job(group):
        errs = []
        for q, (e, _) in zip(group, run_bundle(tdslc, group, backend)):
            errs += [f"seed {q.seed}: {x}" for x in e] + ([f"seed {q.seed} program:\n{q.src}"] if e else [])
        return errs
    return [(f"[{backend}] random seeds {g[0].seed}..{g[-1].seed}", lambda g=g: job(g)) for g in bundles(progs)]


def gpu_grid(tdslc, backend):
    """test_shim.py's GRID programs (sizes whose grid-stride loops go round, matmul tiles,
    tensor cores, long rows, attention) against NumPy, and again under a one-block grid
    (TDSL_GPU_GRID=1) for those FORCED names."""
    import test_shim
    jobs = []
    for k, (name, src, params, fn) in enumerate(test_shim.GRID):
        for forced in (False, True):
            if forced and name not in test_shim.FORCED:
                continue
            label = f"[{backend}] {'one block' if forced else 'grid'} {name}"
            jobs.append((label, lambda name=name, src=src, params=params, fn=fn, forced=forced, k=k:
                         run_grid(tdslc, backend, name, src, test_shim.grid_inputs(name, params, seed=k), fn, forced)))
    return jobs


def run_grid(tdslc, backend, name, src, inputs, fn, forced):
    import test_shim
    from oracle import save_inputs, to_npy
    d = tempfile.mkdtemp(prefix="tdsl-gpu-grid-")
    try:
        path = os.path.join(d, name + ".tdsl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(src + "\n")
        out_dir = os.path.join(d, "out")
        env = dict(os.environ, TDSL_GPU_GRID="1") if forced else None
        argv = [tdslc, "run", path, "--out-dir", out_dir, "--backend", backend]
        argv += save_inputs(d, {p: to_npy(v, dt) for p, (dt, v) in inputs.items()})
        p = subprocess.run(argv, capture_output=True, timeout=300, env=env)
        if p.returncode != 0:
            return [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:1500]}", "program:\n" + src]
        errs = test_shim.check_grid(fn, inputs, out_dir)
        return errs + (["program:\n" + src] if errs else [])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run_jobs(jobs, tally, workers, deadline):
    """Runs the jobs on workers threads and reports them to tally in order. A job not
    started by deadline (time.monotonic(), None: none) is not run: returns their labels."""
    late = []

    def one(label, job):
        if deadline is not None and time.monotonic() > deadline:
            late.append(label)
            return None
        try:
            return job()
        except Exception as e:  # noqa: BLE001  (a crash of the harness is a failure of that job)
            return [f"{type(e).__name__}: {e}"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
        futs = [(label, ex.submit(one, label, job)) for label, job in jobs]
        for label, fut in futs:
            errs = fut.result()
            if errs is not None:
                tally.report(label, errs)
    return late


# (name, source, inputs, message regex): one failing element each, so the message is
# fixed even though on the GPU the first raise of several is not.
DATA_ERRORS = [
    ("index", "fn f(x: f32[5], i: i64[3]) -> f32[3] {\n    return x[i]\n}",
     {"x": np.arange(5, dtype=np.float32), "i": np.array([0, 6, 1], dtype=np.int64)},
     r"(?:.*/)?f\.tdsl:2:\d+: error: index 6 is out of bounds for dimension 0 with size 5"),
    ("zerodiv", "fn f(a: i32[4], b: i32[4]) -> i32[4] {\n    return a // b\n}",
     {"a": np.array([1, 2, 3, 4], dtype=np.int32), "b": np.array([1, 1, 0, 1], dtype=np.int32)},
     r"(?:.*/)?f\.tdsl:2:\d+: error: ZeroDivisionError"),
    # the layers' gathers share one kernel (ir/share.c): the bad index is the third
    # layer's alone, read through that launch's moved pointer into i
    ("shared", "fn f(x: f32[16], w: f32[3, 16, 16], i: i64[3, 16]) -> f32[16] {\n    h = x\n"
     "    for j in range(3) {\n        h = (w[j] @ h)[i[j]]\n    }\n    return h\n}",
     {"x": np.arange(16, dtype=np.float32), "w": np.ones((3, 16, 16), dtype=np.float32),
      "i": np.array([np.arange(16), np.arange(16)[::-1], [1] * 15 + [23]], dtype=np.int64)},
     r"(?:.*/)?f\.tdsl:4:\d+: error: index 23 is out of bounds for dimension 0 with size 16"),
]


def data_error_job(tdslc, backend, src, inputs, msg, name):
    p, _ = tdslc_run_clean(tdslc, src, name="f", backend=backend, inputs=inputs)
    err = p.stderr.decode(errors="replace")
    if p.returncode != 3:
        return [f"exit {p.returncode}, expected 3: {err.strip()[:600]}"]
    if not re.fullmatch(msg + r"\n", err.split("\n", 1)[0] + "\n"):
        return [f"stderr {err!r}, expected /{msg}/"]
    return []


def gpu_data_errors(tdslc, backend, tally=None):
    """DATA_ERRORS as jobs; with tally, run at once and reported."""
    jobs = [(f"[{backend}] data error {name}", lambda src=src, inputs=inputs, msg=msg, name=name:
             data_error_job(tdslc, backend, src, inputs, msg, name)) for name, src, inputs, msg in DATA_ERRORS]
    if tally is None:
        return jobs
    for label, job in jobs:
        tally.report(label, job())
    return []


PARTS = {"examples": gpu_examples, "errors": gpu_data_errors, "grid": gpu_grid, "ops": gpu_ops, "random": gpu_random}


def main():
    tdslc = os.path.abspath(sys.argv[1])
    d = tempfile.mkdtemp(prefix="tdsl-gpu-")
    try:
        with open(os.path.join(d, "probe.tdsl"), "w", encoding="utf-8") as f:
            f.write(PROBE)
        rc, _, err = run_tdslc(tdslc, ["run", os.path.join(d, "probe.tdsl"), "--target", "cuda", "--json"])
        if rc == 3 and "no GPU here" in err:
            errs = check_no_gpu(tdslc, d)
            for e in errs:
                print("FAIL " + e)
            if errs:
                return 1
            print(f"ok   no GPU: exit 3 and one line for --target cuda and --backend ptx|cuda ({err.strip()})")
            print("SKIP: no GPU here, so nothing runs on one")
            return SKIP
        tally = Tally()
        # TDSL_GPU_BACKENDS, TDSL_GPU_PARTS: the backends and parts to run (default all),
        # TDSL_GPU_JOBS programs at a time (default 2), TDSL_GPU_SECONDS: start no program
        # after that many seconds (scripts/gpu-check); those left are listed as not run.
        backends = os.environ.get("TDSL_GPU_BACKENDS", ",".join(GPU_BACKENDS)).split(",")
        parts = os.environ.get("TDSL_GPU_PARTS", ",".join(PARTS)).split(",")
        workers = max(1, int(os.environ.get("TDSL_GPU_JOBS", "2")))
        secs = os.environ.get("TDSL_GPU_SECONDS")
        deadline = time.monotonic() + float(secs) if secs else None
        jobs = [j for part in parts for backend in backends for j in PARTS[part](tdslc, backend)]
        late = run_jobs(jobs, tally, workers, deadline)
        for label in late:
            print(f"NOT RUN {label} (past TDSL_GPU_SECONDS={secs})")
        rc = tally.summary(f"{f', {len(late)} not run (out of time)' if late else ''} on the GPU", recap=True)
        return rc or (1 if late else 0)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
