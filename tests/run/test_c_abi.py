#!/usr/bin/python3
"""tests/run/test_c_abi.py TDSLC: the generated C ABI as a user meets it.

Emits C (--emit=c) and the header (--emit=header) of a small file, compiles a C program
against them, tdsl.h and libtdslrt exactly as DESIGN.md says
(cc main.c gen.c -I$(tdslc --print-include-dir) -L$(tdslc --print-lib-dir) -ltdslrt -lm
-fopenmp), runs it, and checks what it saved against NumPy: values, the strides and
offset of a returned view (which shares the caller's storage), a 'mut' argument updated
in the caller's storage (also through a non-contiguous view), and the error codes and
messages of a wrong argument and of an index out of range. Fails without cc (declared).
"""
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import Tally, run_cmd  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])

SRC = """\
# abi.tdsl
fn affine(x: f32[4, 8], w: f32[8, 3], b: f32[3]) -> f32[4, 3] {
    return relu(x @ w + b)
}

fn tr(x: f32[2, 3]) -> (f32[3, 1], f64[2]) {
    return x.t()[:, 1:], x.double().sum(1)
}

fn pick(x: f32[5], i: i64[3]) -> f32[3] {
    return x[i] * 2
}

fn bump(mut x: i32[2, 3]) -> i64[3] {
    x += 1
    return x.sum(0) // 2
}
"""

MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

static void load(const char *path, tdsl_tensor *t) {
  if (tdsl_load_npy(path, t) != 0) {
    printf("load %s: %s\n", path, tdsl_last_error());
    exit(1);
  }
}

static void save(const char *path, const tdsl_tensor *t) {
  if (tdsl_save_npy(path, t) != 0) {
    printf("save %s: %s\n", path, tdsl_last_error());
    exit(1);
  }
}

static void meta(const char *name, const tdsl_tensor *t, const tdsl_tensor *base) {
  printf("%s ndim=%d strides=", name, t->ndim);
  for (int i = 0; i < t->ndim; i++)
    printf("%s%lld", i ? "," : "", (long long)t->strides[i]);
  printf(" offset=%lld shares=%d\n", (long long)t->offset, base && t->storage == base->storage);
}

int main(void) {
  tdsl_tensor x, w, b, y = {0};
  load("x.npy", &x);
  load("w.npy", &w);
  load("b.npy", &b);
  printf("affine rc=%d\n", affine(&x, &w, &b, &y));
  save("affine.npy", &y);
  tdsl_tensor_release(&y);

  // tr on an argument with a storage offset: the view result is offset by it too
  tdsl_tensor s, v, t0 = {0}, t1 = {0};
  load("s.npy", &s);  // f32[8]
  tdsl_tensor_view(&v, &s, 2, (int64_t[]){2, 3}, NULL, 2);
  printf("tr rc=%d\n", tr(&v, &t0, &t1));
  meta("tr0", &t0, &s);
  meta("tr1", &t1, &s);
  save("tr0.npy", &t0);
  save("tr1.npy", &t1);
  tdsl_tensor_release(&t0);
  tdsl_tensor_release(&t1);

  // a wrong argument: an error code and a message, never a crash
  int rc = tr(&s, &t0, &t1);
  printf("wrong rc=%d msg=%s null=%d\n", rc, tdsl_last_error(), t0.storage == NULL);
  tdsl_tensor_release(&v);

  tdsl_tensor px, pi, p = {0};
  load("px.npy", &px);
  load("pi.npy", &pi);
  printf("pick rc=%d\n", pick(&px, &pi, &p));
  save("pick.npy", &p);
  tdsl_tensor_release(&p);
  tdsl_tensor_release(&pi);
  load("pi_bad.npy", &pi);
  rc = pick(&px, &pi, &p);
  printf("pickbad rc=%d msg=%s\n", rc, tdsl_last_error());

  // mut: contiguous, then a transposed view of a [3, 2] storage
  tdsl_tensor m, mt, r = {0};
  load("m.npy", &m);  // i32[2, 3]
  printf("bump rc=%d\n", bump(&m, &r));
  save("bump_x.npy", &m);
  save("bump_r.npy", &r);
  tdsl_tensor_release(&r);
  tdsl_tensor mbase;
  load("mt.npy", &mbase);  // i32[3, 2]
  tdsl_tensor_view(&mt, &mbase, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0);
  printf("bumpt rc=%d\n", bump(&mt, &r));
  save("bumpt_base.npy", &mbase);
  save("bumpt_r.npy", &r);
  tdsl_tensor *all[] = {&x, &w, &b, &s, &px, &pi, &m, &mt, &mbase, &r};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    tdsl_tensor_release(all[i]);
  return 0;
}
"""

def sanitizer_flags(lib):
    """A sanitizer build of libtdslrt needs its users built with the sanitizer too."""
    so = os.path.join(lib, "libtdslrt.so")
    if os.path.exists(so):
        with open(so, "rb") as f:
            if b"__asan_init" in f.read():
                return ["-fsanitize=address,undefined"]
    return []


def write_user_program(d, kind, out, check):
    """abi.tdsl and main.c in d, then tdslc's --emit=KIND -o OUT and --emit=header -o gen.h
    of abi.tdsl; (include dir, lib dir) of tdslc, or None when an emit failed."""
    with open(os.path.join(d, "abi.tdsl"), "w") as f:
        f.write(SRC)
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write(MAIN)
    for k, o in ((kind, out), ("header", "gen.h")):
        p = run_cmd([TDSLC, "abi.tdsl", f"--emit={k}", "-o", o], d)
        check(f"--emit={k} writes {o}", p.returncode == 0, p.stderr.decode())
        if p.returncode != 0:
            return None
    inc = run_cmd([TDSLC, "--print-include-dir"], d).stdout.decode().strip()
    return inc, run_cmd([TDSLC, "--print-lib-dir"], d).stdout.decode().strip()


def run_main(d, lib, check):
    """Runs ./main (MAIN, built in d against libtdslrt in lib) on the inputs it loads and
    checks what it prints and saves against NumPy; check(name, cond, detail) records each
    result (test_llvm_abi.py runs the same program built from LLVM's object)."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    w = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 3).astype(np.float32)
    s = np.arange(8, dtype=np.float32) * 1.5 - 2
    px = np.array([1.5, -2.0, 3.25, 4.0, -5.5], dtype=np.float32)
    pi = np.array([4, -1, 0], dtype=np.int64)
    pi_bad = np.array([1, 7, -9], dtype=np.int64)
    m = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    mt = np.arange(6, dtype=np.int32).reshape(3, 2) * 3
    for name, a in (("x", x), ("w", w), ("b", b), ("s", s), ("px", px), ("pi", pi), ("pi_bad", pi_bad), ("m", m),
                    ("mt", mt)):
        np.save(os.path.join(d, name + ".npy"), a)
    env = dict(os.environ, LD_LIBRARY_PATH=lib + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""))
    p = run_cmd(["./main"], d, env)
    out = p.stdout.decode()
    check("the user program runs", p.returncode == 0, out + p.stderr.decode())
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)

    def load(name):
        return np.load(os.path.join(d, name + ".npy"))

    check("affine returns 0", lines.get("affine") == "rc=0", out)
    want = np.maximum(x.astype(np.float64) @ w.astype(np.float64) + b, 0)
    got = load("affine")
    check("affine matches NumPy", got.dtype == np.float32 and np.allclose(got, want, rtol=1e-5, atol=1e-6),
          f"{got} vs {want}")

    v = s[2:8].reshape(2, 3)
    check("tr returns 0", lines.get("tr") == "rc=0", out)
    # x.t()[:, 1:] is at offset 3 of x, and x at offset 2 of its storage
    check("a returned view shares the caller's storage, offset by the caller's offset",
          lines.get("tr0") == "ndim=2 strides=1,3 offset=5 shares=1", lines.get("tr0"))
    check("a materialized result is new and contiguous", lines.get("tr1") == "ndim=1 strides=1 offset=0 shares=0",
          lines.get("tr1"))
    check("the view's values", np.array_equal(load("tr0"), v.T[:, 1:]))
    check("the f64 sum", np.allclose(load("tr1"), v.astype(np.float64).sum(1), rtol=1e-12))
    check("a wrong argument is TDSL_ERR_ARG with both types named",
          lines.get("wrong") == "rc=2 msg=tr: argument 'x' must be f32[2, 3] but is f32[8] null=1", lines.get("wrong"))

    check("pick returns 0", lines.get("pick") == "rc=0", out)
    check("pick matches NumPy", np.array_equal(load("pick"), px[pi] * 2))
    check("an index out of range is TDSL_ERR_DATA with PyTorch's message, located",
          lines.get("pickbad") == "rc=3 msg=abi.tdsl:11:12: error: index 7 is out of bounds for dimension 0 with size 5",
          lines.get("pickbad"))

    check("bump returns 0", lines.get("bump") == "rc=0" and lines.get("bumpt") == "rc=0", out)
    check("a contiguous mut argument is updated in place", np.array_equal(load("bump_x"), m + 1))
    check("bump's result", np.array_equal(load("bump_r"), np.floor_divide((m + 1).sum(0), 2)))
    check("a non-contiguous mut argument is written back through its strides",
          np.array_equal(load("bumpt_base"), mt + 1), load("bumpt_base"))
    check("bump's result on the transposed argument",
          np.array_equal(load("bumpt_r"), np.floor_divide((mt.T + 1).sum(0), 2)))


def main():
    if not shutil.which("cc"):  # a declared dependency (scripts/deps.sh installs gcc): its absence fails
        print("FAIL no cc on PATH (gcc, which scripts/deps.sh installs)")
        return 1
    d = tempfile.mkdtemp(prefix="tdsl-abi-")
    try:
        return body(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def body(d):
    tally = Tally()
    dirs = write_user_program(d, "c", "gen.c", tally.check)
    if not dirs:
        return 1
    inc, lib = dirs
    p = run_cmd(["cc", "-std=c11", "-O2", "-Wall", "-Werror", "main.c", "gen.c", f"-I{inc}", f"-L{lib}", "-ltdslrt",
             "-lm", "-fopenmp", "-o", "main"] + sanitizer_flags(lib), d)
    tally.check("the user program compiles against the header and libtdslrt", p.returncode == 0, p.stderr.decode())
    if p.returncode != 0:
        return 1
    run_main(d, lib, tally.check)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
