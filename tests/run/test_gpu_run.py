#!/usr/bin/python3
"""tests/run/test_gpu_run.py TDSLC: `tdslc run --target cuda` on both GPU backends,
`--backend ptx` (PTX through LLVM's NVPTX target, the default) and `--backend cuda`
(CUDA C compiled by NVRTC at run time), through runtime/cuda.c's tdsl_gpu_run.

Without a GPU (no libcuda.so.1, no device: every CI machine) it checks exactly what
LANGUAGE.md §9-10 promise there: exit status 3, one line
`tdslc: error: --target cuda: no GPU here (...)` on stderr, nothing on stdout, no
--out-dir made, for --target cuda and for either --backend; then exits 77 (a skip).

With a GPU it runs, on each backend: every example function (test_examples.py's
NumPy models), every op program of test_ops.py, seeded random programs (randprog.py;
TDSL_GPU_RANDOM_COUNT, default 100) and data errors raised on the device (exit 3, a
located message; one of them in a later layer of kernels sharing one function).
Tolerances are the CPU tests' own: they are relative to each result's magnitude and
already allow reassociated reductions, which GPU reductions are. A failure prints the
program.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

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


# ---- with a GPU: each part reports to the tally ----
def gpu_examples(tdslc, backend, tally):
    """Every function of examples/*.tdsl against test_examples.MODELS."""
    from test_examples import check_example
    for fname, src, fn in example_functions():
        tally.report(f"[{backend}] example {fname}:{fn}", check_example(tdslc, fname, src, fn, backend))


def gpu_ops(tdslc, backend, tally):
    """test_ops.py's programs (every op, dtype and layout), run through op_cases.run_cases."""
    import test_ops
    from op_cases import run_cases
    run_cases(tdslc, test_ops.all_cases(), tally, backend, f"[{backend}] ")


def gpu_random(tdslc, backend, tally):
    from randprog import Program, run_programs
    count = int(os.environ.get("TDSL_GPU_RANDOM_COUNT", "100"))
    first = int(os.environ.get("TDSL_RANDOM_SEED", "0"))
    progs = [Program(s).build() for s in range(first, first + count)]
    run_programs(tdslc, progs, tally, backend, f" [{backend}]")


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


def gpu_data_errors(tdslc, backend, tally):
    for name, src, inputs, msg in DATA_ERRORS:
        p, _ = tdslc_run_clean(tdslc, src, name="f", backend=backend, inputs=inputs)
        err = p.stderr.decode(errors="replace")
        errs = []
        if p.returncode != 3:
            errs.append(f"exit {p.returncode}, expected 3: {err.strip()[:600]}")
        elif not re.fullmatch(msg + r"\n", err.split("\n", 1)[0] + "\n"):
            errs.append(f"stderr {err!r}, expected /{msg}/")
        tally.report(f"[{backend}] data error {name}", errs)


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
        for backend in GPU_BACKENDS:
            for part in (gpu_examples, gpu_ops, gpu_random, gpu_data_errors):
                part(tdslc, backend, tally)
        return tally.summary(recap=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
