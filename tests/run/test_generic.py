#!/usr/bin/python3
"""tests/run/test_generic.py TDSLC: shape-generic functions and scalar parameters
(docs/language.md, "Generic functions" and "Scalar parameters"), run on the backend of
TDSL_BACKEND and checked against NumPy: one helper called at three shapes in one
program, dim expressions (f32[N, 4 * D], x.view(N, 4, D)), compile-time scalar
parameters and a Python scalar wrapped into a 0-d tensor parameter; a generic entry
bound by --dim (run, --emit=header) and by the shapes of --in files; run-time scalar
entry parameters through `run --arg` (with PyTorch's promotion of a Python float
against an integer tensor) and through the C ABI (the entry called from C with a
double: --emit=c, and --emit=obj when LLVM is there); the usage errors of --dim and --arg.
"""
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import Tally, backend_args, emit_text, load_outputs, require_backend, run_cleanup, run_cmd, \
    tdslc_run  # noqa: E402

from test_c_abi import sanitizer_flags  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
BACKEND = require_backend(TDSLC)

RMS = """\
fn rms(x: f32[N, D], w: f32[D], eps: float) -> f32[N, D] {
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
}
"""


def np_rms(x, w, eps):
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + eps) * w


def close(got, want, tol=1e-5):
    return got.shape == want.shape and np.allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def run(src, args, inputs=None):
    """(process, [outputs]) of `tdslc run` of src."""
    p, _, out = tdslc_run(TDSLC, src, list(args), inputs=inputs, json_out=False)
    try:
        return p, load_outputs(out) if p.returncode == 0 else []
    finally:
        run_cleanup(out)


def helpers(t, rng):
    src = RMS + """
fn heads(x: f32[N, 4 * D], w: f32[D]) -> f32[N, 4, D] {
    return x.view(N, 4, D) * w + D
}

fn scale(x: f32[N], k: int, a: float, on: bool, s: f32[]) -> f32[N] {
    return x * k + a + s * on
}

fn prog(a: f32[4, 8], b: f32[8], c: f32[2, 16], d: f32[16], e: f32[3, 5], f: f32[5], g: f32[3, 8], h: f32[2]) -> (f32[4, 8], f32[2, 16], f32[3, 5], f32[3, 4, 2], f32[3], f32[3]) {
    return rms(a, b, 1e-5), rms(c, d, 1), rms(e, f, eps=0.5), heads(g, h), scale(e[:, 0], 3, 2, True, 0.25), \
        scale(e[:, 1], 1, 0.0, False, 1)
}
"""
    ins = {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in
           (("a", (4, 8)), ("b", (8,)), ("c", (2, 16)), ("d", (16,)), ("e", (3, 5)), ("f", (5,)), ("g", (3, 8)),
            ("h", (2,)))}
    p, outs = run(src, ["--fn", "prog"], ins)
    t.check("a helper at three shapes in one program runs", p.returncode == 0 and len(outs) == 6, p.stderr.decode())
    if len(outs) != 6:
        return
    t.check("rms at [4, 8] (eps 1e-5)", close(outs[0], np_rms(ins["a"], ins["b"], 1e-5)))
    t.check("rms at [2, 16] (an int 1 to a float parameter)", close(outs[1], np_rms(ins["c"], ins["d"], 1.0)))
    t.check("rms at [3, 5] (eps by keyword)", close(outs[2], np_rms(ins["e"], ins["f"], 0.5)))
    t.check("a dim expression: f32[N, 4 * D] viewed as (N, 4, D), D a Python int in the body",
            close(outs[3], ins["g"].reshape(3, 4, 2) * ins["h"] + 2))
    t.check("compile-time int, float, bool parameters and 0.25 wrapped as f32[]",
            close(outs[4], ins["e"][:, 0].astype(np.float64) * 3 + 2 + 0.25))
    t.check("False and an int 1 to a 0-d tensor", close(outs[5], ins["e"][:, 1].astype(np.float64)))


def entry_bound(t, rng):
    x = rng.uniform(-1, 1, (3, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, 6).astype(np.float32)
    p, outs = run(RMS, ["--arg", "eps=0.125"], {"x": x, "w": w})
    t.check("run binds N and D from the --in files", p.returncode == 0 and outs and close(outs[0], np_rms(x, w, 0.125)),
            p.stderr.decode())
    d = tempfile.mkdtemp(prefix="tdsl-gen-")
    try:
        path = os.path.join(d, "rms.tdsl")
        with open(path, "w") as f:
            f.write(RMS)
        out = os.path.join(d, "out")
        p = run_cmd([TDSLC, "run", path, "--dim", "N=5", "--dim", "D=7", "--arg", "eps=1e-3", "--out-dir", out] +
                    backend_args(BACKEND))
        ok = p.returncode == 0
        t.check("run binds N and D from --dim (random inputs)", ok, p.stderr.decode())
        if ok:
            xi, wi, o = (np.load(os.path.join(out, n + ".npy")) for n in ("in_x", "in_w", "out0"))
            t.check("... of the bound shapes, matching NumPy", xi.shape == (5, 7) and close(o, np_rms(xi, wi, 1e-3)))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    h = emit_text(TDSLC, RMS, "header", ["--dim", "N=128", "--dim", "D=64"])
    t.check("--emit=header states the bound shapes and the double",
            h.returncode == 0 and "// rms(x: f32[128, 64], w: f32[64], eps: float) -> (f32[128, 64])" in h.stdout
            and "// with N=128, D=64" in h.stdout and
            "int rms(const tdsl_tensor *x, const tdsl_tensor *w, double eps, tdsl_tensor *out0);" in h.stdout,
            h.stdout + h.stderr)
    h = emit_text(TDSLC, RMS, "c")
    t.check("without a binding: which dims are unbound, exit 2",
            h.returncode == 2 and "every function is generic and unbound" in h.stderr and
            "skipping generic function 'rms': dims N, D are unbound (give --dim N=... --dim D=...)" in h.stderr,
            h.stderr)
    h = emit_text(TDSLC, "fn exists(val) {\n    return val is not None\n}\n", "c")
    t.check("a file of helpers only: no entry point (nothing is generic)",
            h.returncode == 2 and "no entry point: every function is a helper" in h.stderr and "generic" not in h.stderr,
            h.stderr)
    h = emit_text(TDSLC, RMS, "ir", ["--dim", "N=4"])
    t.check("a per-function kind names the unbound dims",
            h.returncode == 2 and "function 'rms' has unbound dims D: give --dim D=..." in h.stderr, h.stderr)
    two = RMS + "\nfn g(x: f32[3]) -> f32[3] {\n    return x + 1\n}\n"
    h = emit_text(TDSLC, two, "header")
    t.check("all functions: an unbound generic one is skipped with a note",
            h.returncode == 0 and "int g(" in h.stdout and "int rms(" not in h.stdout and "note: skipping" in h.stderr,
            h.stderr)
    for args, msg in ((["--dim", "K=3"], "--dim K: function 'rms' has no dim 'K'"),
                      (["--dim", "N=3", "--dim", "N=4"], "--dim N is given twice"),
                      (["--dim", "N=x"], "--dim takes NAME=SIZE")):
        h = emit_text(TDSLC, RMS, "c", args)
        t.check(f"usage error: {' '.join(args)}", h.returncode == 2 and msg in h.stderr, h.stderr)
    x2 = rng.uniform(-1, 1, (3, 6)).astype(np.float32)
    w2 = rng.uniform(-1, 1, 5).astype(np.float32)
    p, _ = run(RMS, ["--arg", "eps=1"], {"x": x2, "w": w2})
    err = p.stderr.decode()
    t.check("--in files that disagree on a dim: exit 2 naming the dim and both sources",
            p.returncode == 2 and "'w' has size 5 at dim 0 but D is 6 from --in x=" in err, err)


def scalars(t, rng):
    src = """\
fn f(x: i64[4], s: float, n: int, flag: bool) -> (f32[4], i64[4], bool[4]) {
    return x * s, x * n + n, (x > n) & flag
}
"""
    x = np.array([-3, 0, 2, 7], dtype=np.int64)
    p, outs = run(src, ["--arg", "s=0.5", "--arg", "n=2", "--arg", "flag=true"], {"x": x})
    ok = p.returncode == 0 and len(outs) == 3
    t.check("run --arg: float, int and bool entry scalars", ok, p.stderr.decode())
    if ok:
        t.check("an i64 tensor times a run-time float is f32, as with a Python float",
                outs[0].dtype == np.float32 and close(outs[0], x * 0.5))
        t.check("an i64 tensor with a run-time int stays i64", outs[1].dtype == np.int64 and
                np.array_equal(outs[1], x * 2 + 2))
        t.check("a run-time bool", np.array_equal(outs[2], (x > 2) & True))
    for args, msg in ((["--arg", "n=2", "--arg", "flag=1"], "'f' has a scalar parameter 's' (float): give it with --arg s=VALUE"),
                      (["--arg", "s=x", "--arg", "n=2", "--arg", "flag=1"], "--arg s=x: 'x' is not a float"),
                      (["--arg", "s=1", "--arg", "n=2.5", "--arg", "flag=1"], "--arg n=2.5: '2.5' is not an int"),
                      (["--arg", "s=1", "--arg", "n=2", "--arg", "flag=1", "--arg", "q=1"], "--arg q: 'f' has no parameter 'q'"),
                      (["--arg", "s=1", "--arg", "n=2", "--arg", "flag=1", "--arg", "x=1"], "--arg x: 'x' is a tensor parameter")):
        p, _ = run(src, args, {"x": x})
        t.check(f"usage error: {msg}", p.returncode == 2 and msg in p.stderr.decode(), p.stderr.decode())
    # arithmetic of run-time numbers is a Python number still (randprog seeds 5053 and 5230:
    # a 0-d i32 times n * 2 was i64, as if n * 2 were a 0-d i64 tensor); expected dtypes and
    # values are Python's with PyTorch 1.13's promotion of a wrapped number
    src = """\
fn f(a: i32[], h: f16[], y: i32[3], n: int, s: float) -> (i32[], i32[], f16[], i32[3], i32[]) {
    return a * (n * 2), a + -n, h * (s * 2), y * (n + 1), a * (n > 1)
}
"""
    a, h, y = np.array(3, np.int32), np.array(1.5, np.float16), np.arange(3, dtype=np.int32)
    p, outs = run(src, ["--arg", "n=5", "--arg", "s=0.5"], {"a": a, "h": h, "y": y})
    want = [np.array(30, np.int32), np.array(-2, np.int32), np.array(1.5, np.float16), np.array([0, 6, 12], np.int32),
            np.array(3, np.int32)]
    t.check("run-time numbers in arithmetic promote as Python numbers (k * 2, -k, k > 1 against 0-d tensors)",
            p.returncode == 0 and len(outs) == len(want) and
            all(o.dtype == w.dtype and np.array_equal(o, w) for o, w in zip(outs, want)),
            p.stderr.decode() if p.returncode else [(o.dtype, o.tolist()) for o in outs])
    bad = "fn f(x: f32[4], n: int) -> f32[2, 2] {\n    return x.view(2, n)\n}\n"
    h = emit_text(TDSLC, bad, "c")
    t.check("a run-time int where a compile-time size is needed: a located error",
            h.returncode == 1 and "s.tdsl:2:22: error:" in h.stderr and "run-time int" in h.stderr, h.stderr)


C_MAIN = r"""
#include <stdio.h>
#include "gen.h"

int main(void) {
  tdsl_tensor x, w, y = {0};
  if (tdsl_load_npy("x.npy", &x) || tdsl_load_npy("w.npy", &w))
    return 1;
  int rc = rms(&x, &w, 0.25, &y);
  printf("rc=%d\n", rc);
  if (rc == 0 && tdsl_save_npy("y.npy", &y))
    return 1;
  tdsl_tensor_release(&y);
  tdsl_tensor_release(&x);
  tdsl_tensor_release(&w);
  return 0;
}
"""


def c_abi(t, rng):
    # cc is a declared dependency (scripts/deps.sh installs gcc): missing, it fails
    if not t.check("cc is on PATH (gcc, from scripts/deps.sh)", shutil.which("cc")):
        return
    kinds = [("c", "gen.c")]
    # --emit=obj needs LLVM: only a tdslc built without it (TDSLC_WITH_LLVM=OFF) leaves it
    # out, and says so; any other failure of the probe is a failure here
    probe = emit_text(TDSLC, RMS, "obj", ["--dim", "N=1", "--dim", "D=1", "-o", os.devnull])
    if probe.returncode == 2 and "built without LLVM" in probe.stderr:
        print("SKIP --emit=obj: this tdslc was built without LLVM")
    elif t.check("--emit=obj of a generic function with --dim", probe.returncode == 0, probe.stderr):
        kinds.append(("obj", "gen.o"))
    inc = run_cmd([TDSLC, "--print-include-dir"]).stdout.decode().strip()
    lib = run_cmd([TDSLC, "--print-lib-dir"]).stdout.decode().strip()
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, 4).astype(np.float32)
    for kind, out in kinds:
        d = tempfile.mkdtemp(prefix="tdsl-gen-abi-")
        try:
            with open(os.path.join(d, "rms.tdsl"), "w") as f:
                f.write(RMS)
            with open(os.path.join(d, "main.c"), "w") as f:
                f.write(C_MAIN)
            np.save(os.path.join(d, "x.npy"), x)
            np.save(os.path.join(d, "w.npy"), w)
            dims = ["--dim", "N=3", "--dim", "D=4"]
            ok = all(run_cmd([TDSLC, "rms.tdsl", f"--emit={k}", "-o", o] + dims, d).returncode == 0
                     for k, o in ((kind, out), ("header", "gen.h")))
            p = run_cmd(["cc", "-std=c11", "-Wall", "-Werror", "main.c", out, f"-I{inc}", f"-L{lib}", "-ltdslrt",
                         "-lm", "-fopenmp", "-o", "main"] + sanitizer_flags(lib), d)
            ok = ok and p.returncode == 0
            t.check(f"--emit={kind}: a C program calls rms(&x, &w, 0.25, &y)", ok, p.stderr.decode())
            if not ok:
                continue
            env = dict(os.environ, LD_LIBRARY_PATH=lib + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))
            p = run_cmd(["./main"], d, env)
            ok = p.returncode == 0 and p.stdout.decode().strip() == "rc=0"
            t.check(f"--emit={kind}: the double reaches the kernels (vs NumPy)",
                    ok and close(np.load(os.path.join(d, "y.npy")), np_rms(x, w, 0.25)),
                    p.stdout.decode() + p.stderr.decode())
        finally:
            shutil.rmtree(d, ignore_errors=True)


def main():
    t = Tally()
    rng = np.random.default_rng(15)
    helpers(t, rng)
    entry_bound(t, rng)
    scalars(t, rng)
    c_abi(t, rng)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
