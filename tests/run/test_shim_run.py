#!/usr/bin/python3
"""tests/run/test_shim_run.py TDSLC: `tdslc run --target cuda --backend cuda` end to end on
the CPU: the GPU suite's own checks (test_gpu_run.py: the examples against their NumPy
models, data errors raised on the device, a model's layers sharing one kernel) with
tests/shim's fake libcuda.so.1 and libnvrtc.so first on LD_LIBRARY_PATH. So what `run`
does with a GPU runs here: driver/gpu.c's launch table, runtime/cuda.c's buffers,
copies, launches and error record, and the NVRTC image of codegen/cuda.c, whose
kernels the fake NVRTC compiles with the host's C++ compiler and the fake driver runs
under the shim's checker (a race, a bad access or barrier fails the launch).

`--backend ptx` cannot run on the CPU: the fake driver refuses PTX, and this test checks
that it says so (the PTX is checked by ptxas in test_ptx_compile.py, and is built from
the same loop IR as the CUDA C, ir/sched_gpu.c). TDSL_SHIM_RUN_ALL=1 runs every example
function (default: one per file, the rest run in test_shim.py's batch). Exits 77
without a C++ compiler.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "shim"))
from oracle import SKIP, Tally, example_functions, test_subset, tdslc_run_clean  # noqa: E402
import shimcc  # noqa: E402


def main():
    tdslc = os.path.abspath(sys.argv[1])
    if shutil.which(shimcc.CXX) is None:
        print(f"SKIP: no C++ compiler '{shimcc.CXX}'")
        return SKIP
    tc = shimcc.toolchain(os.path.join(os.path.dirname(tdslc), "shim"))
    os.environ.update(tc.env())  # every tdslc this test starts sees the fake GPU
    import test_gpu_run
    from test_examples import check_example
    tally = Tally()
    # the fake device answers, and --backend ptx says why it cannot run here
    p, _ = tdslc_run_clean(tdslc, test_gpu_run.PROBE, name="probe", backend="ptx")
    err = p.stderr.decode(errors="replace")
    tally.check("--backend ptx under the shim: refused, saying why", p.returncode != 0 and
                "the CUDA shim runs CUDA C images only" in err, f"exit {p.returncode}: {err.strip()[:600]}")
    every = test_subset()
    seen, n = set(), 0
    for fname, src, fn in example_functions():
        if fname in seen and not os.environ.get("TDSL_SHIM_RUN_ALL"):
            continue
        seen.add(fname)
        n += 1
        if (n - 1) % every:
            continue
        tally.report(f"[shim cuda] example {fname}:{fn}", check_example(tdslc, fname, src, fn, "cuda"))
    test_gpu_run.gpu_data_errors(tdslc, "cuda", tally)
    check_bench(tdslc, tally)
    return tally.summary(" (run --target cuda --backend cuda under the CUDA shim)", recap=True)


BENCH = "fn f(x: f32[300, 70]) -> f32[300, 70] {\n    return softmax(x, -1) * 2.0\n}\n"


def check_bench(tdslc, tally):
    """`tdslc bench --target cuda --backend cuda --json`: tdsl_gpu_bench's calls, timed by
    the fake driver's events, one JSON line with the device's numbers (no threads)."""
    d = tempfile.mkdtemp(prefix="tdsl-shim-bench-")
    try:
        path = os.path.join(d, "b.tdsl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(BENCH)
        p = subprocess.run([tdslc, "bench", path, "--backend", "cuda", "--reps", "3", "--json"], capture_output=True,
                           text=True, timeout=300)
        errs = []
        try:
            doc = json.loads(p.stdout) if p.returncode == 0 else None
        except ValueError:
            doc = None
        if doc is None:
            errs.append(f"exit {p.returncode}: {p.stdout.strip()[:300]} {p.stderr.strip()[:600]}")
        elif not (doc["backend"] == "cuda" and doc["threads"] == 0 and 0 < doc["min_ms"] <= doc["median_ms"] <=
                  doc["max_ms"] and doc["bytes"] == 2 * 300 * 70 * 4):
            errs.append(f"unexpected JSON {doc}")
        tally.report("[shim cuda] bench --target cuda: three calls timed by events", errs)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
