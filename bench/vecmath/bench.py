#!/usr/bin/python3
"""bench/vecmath/bench.py: the speed of tdsl's CPU math (ir/vecmath.c) against NumPy and
PyTorch, every implementation timed in the same process, interleaved, repeated.

    bench/vecmath/bench.py [--tdslc PATH] [--base-tdslc PATH] [--rounds N] [--only WORD[,WORD...]]
                           [--stat median|min] [--clock wall|cpu] [--json FILE]

Each function of the table runs on a 4096 x 4096 tensor, f32 and f64 (pow: of two such
tensors; pow(x, 1.5): a constant exponent), and the composites on the shapes the issue names:
gelu(x @ w.t() + b) and sin(x @ w.t() + b) with x
[4, 128, 768] and w [3072, 768], relu(x * 2 + 1) * sigmoid(x) on 4096 x 4096. tdsl's
functions are compiled once per backend (LLVM: tdslc --emit=obj; C: tdslc --emit=c and cc
with driver/cc.c's flags) into one shared object with a small shim, loaded with ctypes:
a call is exactly what a C caller of the compiled function pays (the result allocated
by the entry, from the runtime's storage cache). --base-tdslc adds the same two columns
for another tdslc (the code before this change, say). NumPy runs its ufuncs (one
thread); PyTorch 1.13 eager with 2 threads (torch.set_num_threads(2)); tdsl with its
own 2 threads (the runtime's pool, both backends).

Per round, each implementation of a case runs REPS calls back to back and its median is
kept; the table shows the median over rounds of those, as GB/s (bytes read and written
once) and the ratio of tdsl's LLVM backend to each peer (> 1: tdsl faster). Results are
checked against NumPy (or PyTorch where NumPy lacks the function) before timing.
"""
import argparse
import ctypes
import json
import math
import os
import platform
import statistics
import subprocess
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
N = 4096
CC_FLAGS = (["-std=c11", "-O2", "-march=native", "-fvect-cost-model=dynamic", "-fno-math-errno",
             "-fno-trapping-math"]  # driver/cc.c's, -mprefer-vector-width=512 on x86-64 too
            + (["-mprefer-vector-width=512"] if platform.machine() == "x86_64" else []))

try:
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(2)
except ImportError:  # the table then lacks PyTorch's column
    torch = None


def np_erf(x):
    return None  # NumPy has no erf


# name: (tdsl expression, params [(name, shape)], result shape, numpy fn or None, torch fn or None)
def cases():
    sq = [("x", [N, N])]
    two = [("x", [N, N]), ("y", [N, N])]
    c = {}
    un = {
        "exp": (np.exp, lambda t: torch.exp(t)), "exp2": (np.exp2, lambda t: torch.exp2(t)),
        "expm1": (np.expm1, lambda t: torch.expm1(t)), "log": (np.log, lambda t: torch.log(t)),
        "log2": (np.log2, lambda t: torch.log2(t)), "log10": (np.log10, lambda t: torch.log10(t)),
        "log1p": (np.log1p, lambda t: torch.log1p(t)), "tanh": (np.tanh, lambda t: torch.tanh(t)),
        "erf": (None, lambda t: torch.erf(t)), "erfc": (None, lambda t: torch.erfc(t)),
        "sin": (np.sin, lambda t: torch.sin(t)), "cos": (np.cos, lambda t: torch.cos(t)),
        "sqrt": (np.sqrt, lambda t: torch.sqrt(t)), "rsqrt": (lambda a: 1 / np.sqrt(a), lambda t: torch.rsqrt(t)),
        "sigmoid": (lambda a: 1 / (1 + np.exp(-a)), lambda t: torch.sigmoid(t)),
    }
    for dt in ("f32", "f64"):
        for op, (nf, tf) in un.items():
            c[f"{op} {dt}"] = (f"{op}(x)", dt, sq, [N, N], nf, tf)
        c[f"silu {dt}"] = ("silu(x)", dt, sq, [N, N], lambda a: a / (1 + np.exp(-a)), lambda t: F.silu(t))
        c[f"gelu {dt}"] = ("gelu(x)", dt, sq, [N, N], None, lambda t: F.gelu(t))
        c[f"gelu tanh {dt}"] = ("gelu(x, approximate='tanh')", dt, sq, [N, N], None,
                                lambda t: F.gelu(t, approximate="tanh"))
        c[f"softplus {dt}"] = ("softplus(x)", dt, sq, [N, N], None, lambda t: F.softplus(t))
        c[f"mish {dt}"] = ("mish(x)", dt, sq, [N, N], None, lambda t: F.mish(t))
        c[f"pow {dt}"] = ("pow(x, y)", dt, two, [N, N], np.power, lambda t, u: torch.pow(t, u))
        c[f"hypot {dt}"] = ("hypot(x, y)", dt, two, [N, N], np.hypot, lambda t, u: torch.hypot(t, u))
        c[f"log_softmax {dt}"] = ("log_softmax(x, -1)", dt, sq, [N, N], None, lambda t: F.log_softmax(t, -1))
        c[f"relu(x*2+1)*sigmoid(x) {dt}"] = ("relu(x * 2 + 1) * sigmoid(x)", dt, sq, [N, N],
                                             lambda a: np.maximum(a * 2 + 1, 0) / (1 + np.exp(-a)),
                                             lambda t: torch.relu(t * 2 + 1) * torch.sigmoid(t))
    c["gelu(x @ w.t() + b) f32"] = ("gelu(x @ w.t() + b)", "f32",
                                    [("x", [4, 128, 768]), ("w", [3072, 768]), ("b", [3072])], [4, 128, 3072],
                                    None, lambda x, w, b: F.gelu(x @ w.t() + b))
    c["sin(x @ w.t() + b) f32"] = ("sin(x @ w.t() + b)", "f32",
                                   [("x", [4, 128, 768]), ("w", [3072, 768]), ("b", [3072])], [4, 128, 3072],
                                   lambda x, w, b: np.sin(x @ w.T + b), lambda x, w, b: torch.sin(x @ w.t() + b))
    c["pow(x, 1.5) f32"] = ("pow(x, 1.5)", "f32", sq, [N, N], lambda a: np.power(a, np.float32(1.5)),
                            lambda t: torch.pow(t, 1.5))
    # the vector-math table's rows (bench/vector_math.*: 2^20 f32, x uniform in [-1, 1), in cache)
    t = [("x", [1 << 20])]
    c["table sin(8x) f32"] = ("sin(x * 8)", "f32", t, [1 << 20], lambda a: np.sin(a * 8), lambda a: torch.sin(a * 8))
    c["table cos(8x) f32"] = ("cos(x * 8)", "f32", t, [1 << 20], lambda a: np.cos(a * 8), lambda a: torch.cos(a * 8))
    c["table pow(x + 2, 1.5) f32"] = ("pow(x + 2, 1.5)", "f32", t, [1 << 20],
                                      lambda a: np.power(a + 2, np.float32(1.5)), lambda a: torch.pow(a + 2, 1.5))
    c["x @ w.t() + b f32"] = ("x @ w.t() + b", "f32",
                              [("x", [4, 128, 768]), ("w", [3072, 768]), ("b", [3072])], [4, 128, 3072],
                              None, lambda x, w, b: x @ w.t() + b)
    return c


def inputs(name, params, dt, rng):
    """Values where each function is defined and varies."""
    npdt = np.float32 if dt == "f32" else np.float64
    out = []
    for p, shape in params:
        if name.startswith("table"):
            a = rng.uniform(-1, 1, shape)
        elif "@" in name:
            a = rng.standard_normal(shape) * (0.05 if p != "x" else 1)
        elif name.startswith(("log", "sqrt", "rsqrt")) and not name.startswith("log_softmax"):
            a = rng.uniform(0.01, 100, shape)
        elif name.startswith("pow"):
            a = rng.uniform(0.1, 4, shape) if p == "x" else rng.uniform(-8, 8, shape)
        elif name.startswith(("sin", "cos")):
            a = rng.uniform(-100, 100, shape)
        else:
            a = rng.uniform(-8, 8, shape)
        out.append(np.ascontiguousarray(a.astype(npdt)))
    return out


SHIM_HEAD = r"""
#include <stdlib.h>
#include <string.h>
#include "tdsl.h"
void *vm_tensor(int dt, int ndim, const int64_t *shape, const void *data, size_t nbytes) {
  tdsl_tensor *t = calloc(1, sizeof *t);
  if (tdsl_tensor_from_data(t, (tdsl_dtype)dt, ndim, shape, NULL, 0, data, nbytes) != 0)
    return NULL;
  return t;
}
void *vm_data(void *t) { return tdsl_tensor_data((tdsl_tensor *)t); }
void vm_release(void *t) { tdsl_tensor_release((tdsl_tensor *)t); }
void vm_free(void *t) { tdsl_tensor_release((tdsl_tensor *)t); free(t); }
"""


def shim_fn(sym, nparams):
    args = ", ".join(f"(const tdsl_tensor *)a[{i}]" for i in range(nparams))
    return (f"int {sym}({', '.join(['const tdsl_tensor *'] * nparams)}, tdsl_tensor *);\n"
            f"int call_{sym}(void **a, int reps, void *keep) {{\n"
            "  int rc = 0;\n"
            "  for (int r = 0; r < reps && !rc; r++) {\n"
            "    tdsl_tensor out; memset(&out, 0, sizeof out);\n"
            f"    rc = {sym}({args}, &out);\n"
            "    if (keep && r == reps - 1) *(tdsl_tensor *)keep = out; else tdsl_tensor_release(&out);\n"
            "  }\n  return rc;\n}\n")


def build(tdslc, tag, cs, d):
    """The functions of cs compiled by tdslc with each backend, symbols TAG_BACKEND_I;
    returns the object files and the shim text."""
    objs, shim = [], ""
    for backend in ("llvm", "c"):
        src = []
        for i, (name, (expr, dt, params, rshape, _, _)) in enumerate(cs.items()):
            ps = ", ".join(f"{p}: {dt}[{', '.join(map(str, s))}]" for p, s in params)
            src.append(f"fn {tag}_{backend}_{i}({ps}) -> {dt}[{', '.join(map(str, rshape))}] {{\n"
                       f"    return {expr}\n}}\n")
            shim += shim_fn(f"{tag}_{backend}_{i}", len(params))
        path = os.path.join(d, f"{tag}_{backend}.tdsl")
        with open(path, "w") as f:
            f.write("\n".join(src))
        obj = os.path.join(d, f"{tag}_{backend}.o")
        if backend == "llvm":
            subprocess.run([tdslc, path, "--emit=obj", "-o", obj], check=True)
        else:
            csrc = os.path.join(d, f"{tag}_{backend}.c")
            subprocess.run([tdslc, path, "--emit=c", "-o", csrc], check=True)
            inc = subprocess.run([tdslc, "--print-include-dir"], capture_output=True, text=True).stdout.strip()
            subprocess.run(["cc"] + CC_FLAGS + ["-fPIC", "-c", csrc, "-I", inc, "-o", obj], check=True)
        objs.append(obj)
    return objs, shim


CLOCK = [time.perf_counter]


def timed(fn, reps):
    t0 = CLOCK[0]()
    fn(reps)
    return (CLOCK[0]() - t0) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdslc", default=os.path.join(ROOT, "build", "tdslc"))
    ap.add_argument("--base-tdslc", default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--stat", default="median", choices=["median", "min"],
                    help="of a round's calls and over rounds (min: steadier on a loaded machine)")
    ap.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                    help="cpu: the process's CPU time (with TDSL_NUM_THREADS=1 and one-thread peers, "
                         "a loaded machine's time slices do not count)")
    args = ap.parse_args()
    stat = statistics.median if args.stat == "median" else min
    if args.clock == "cpu":
        CLOCK[0] = time.process_time
        if torch is not None:
            torch.set_num_threads(1)
    only = args.only.split(",") if args.only else None  # words, any of which a case's name holds
    cs = {k: v for k, v in cases().items() if not only or any(w in k for w in only)}
    tdslcs = [("new", args.tdslc)] + ([("base", args.base_tdslc)] if args.base_tdslc else [])
    inc = subprocess.run([args.tdslc, "--print-include-dir"], capture_output=True, text=True).stdout.strip()
    lib = subprocess.run([args.tdslc, "--print-lib-dir"], capture_output=True, text=True).stdout.strip()
    d = tempfile.mkdtemp(prefix="vmbench-")
    objs, shim = [], SHIM_HEAD
    for tag, t in tdslcs:
        o, s = build(t, tag, cs, d)
        objs += o
        shim += s
    with open(os.path.join(d, "shim.c"), "w") as f:
        f.write(shim)
    so = os.path.join(d, "bench.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", os.path.join(d, "shim.c"), "-I", inc] + objs +
                   ["-L", lib, "-ltdslrt", f"-Wl,-rpath,{lib}", "-lm", "-o", so], check=True)
    L = ctypes.CDLL(so)
    L.vm_tensor.restype = ctypes.c_void_p
    L.vm_tensor.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p,
                            ctypes.c_size_t]
    L.vm_data.restype = ctypes.c_void_p
    L.vm_data.argtypes = [ctypes.c_void_p]
    L.vm_release.argtypes = [ctypes.c_void_p]
    L.vm_free.argtypes = [ctypes.c_void_p]
    rng = np.random.default_rng(1)
    rows = []
    for i, (name, (expr, dt, params, rshape, nf, tf)) in enumerate(cs.items()):
        ins = inputs(name, params, dt, rng)
        tdt = 5 if dt == "f32" else 6  # TDSL_F32, TDSL_F64 (runtime/tdsl.h)
        tens = []
        for a in ins:
            shape = (ctypes.c_int64 * a.ndim)(*a.shape)
            tens.append(L.vm_tensor(tdt, a.ndim, shape, a.ctypes.data, a.nbytes))
        argv = (ctypes.c_void_p * len(tens))(*tens)
        impls = {}
        npdt = np.float32 if dt == "f32" else np.float64
        nbytes = sum(a.nbytes for a in ins) + math.prod(rshape) * np.dtype(npdt).itemsize
        for tag, _ in tdslcs:
            for backend in ("llvm", "c"):
                fn = getattr(L, f"call_{tag}_{backend}_{i}")
                fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
                impls[f"tdsl {backend}" + ("" if tag == "new" else f" ({tag})")] = \
                    (lambda reps, fn=fn: fn(argv, reps, None))
        if nf is not None:
            impls["numpy"] = lambda reps, nf=nf: [nf(*ins) for _ in range(reps)]
        if tf is not None and torch is not None:
            tins = [torch.from_numpy(a) for a in ins]
            impls["torch"] = lambda reps, tf=tf, tins=tins: [tf(*tins) for _ in range(reps)]
        # check tdsl's LLVM result against NumPy or PyTorch first
        keep = (ctypes.c_byte * 256)()
        getattr(L, f"call_new_llvm_{i}")(argv, 1, keep)
        got = np.ctypeslib.as_array(ctypes.cast(L.vm_data(ctypes.addressof(keep)), ctypes.POINTER(
            ctypes.c_float if dt == "f32" else ctypes.c_double)), shape=tuple(rshape)).copy()
        ref = nf(*ins) if nf is not None else tf(*[torch.from_numpy(a) for a in ins]).numpy()
        L.vm_release(ctypes.addressof(keep))
        ok = np.allclose(got, ref, rtol=1e-4 if dt == "f32" else 1e-10, atol=1e-5, equal_nan=True)
        one = timed(impls["tdsl llvm"], 1)
        reps = max(2, min(20, int(0.3 / max(one, 1e-4))))
        per = {k: [] for k in impls}
        for _ in range(args.rounds):
            for k, f in impls.items():
                per[k].append(stat([timed(f, 1) for _ in range(reps)]))
        med = {k: stat(v) for k, v in per.items()}
        row = {"case": name, "check": ok, "bytes": nbytes, "ms": {k: v * 1e3 for k, v in med.items()},
               "gbps": {k: nbytes / v / 1e9 for k, v in med.items()}}
        rows.append(row)
        for t in tens:
            L.vm_free(t)
        cols = "  ".join(f"{k} {v * 1e3:8.2f} ms {nbytes / v / 1e9:6.2f} GB/s" for k, v in med.items())
        ratios = "  ".join(f"vs {k} {med[k] / med['tdsl llvm']:.2f}x" for k in med if k != "tdsl llvm")
        print(f"{name:28s} {'ok ' if ok else 'BAD'} {cols}\n{'':32s}{ratios}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
