#!/usr/bin/python3
"""tests/run/test_shim.py TDSLC: the CUDA C of `tdslc --emit=cuda` run on the CPU under the
CUDA shim (tests/shim: each block's threads as fibers, warp intrinsics in lockstep, and a
checker of races, bounds and barriers), against NumPy. First the shim's own self-test
(tests/shim/selftest.cu: right kernels pass, and a race, an access out of bounds, a
barrier or shuffle some threads never reach, unwritten shared memory are reported).

What runs, each program's kernels as tdslc's schedule launches them (grid, block, shared
memory, the host entry's copies and checks):
  - every op case of test_ops.py (op_cases.py and friends), with their NumPy values;
  - seeded random programs of randprog.py (TDSL_SHIM_RANDOM_COUNT, default 100);
  - every function of examples/*.tdsl, with test_examples.py's NumPy models;
  - GRID below: sizes whose grid-stride loops go round, matmul tiles, long rows.
Every program also runs with TDSL_GPU_GRID=1 (a one-block grid: every grid-stride loop
goes round) where FORCED names it. A program passes when its results match NumPy and
the shim reported nothing (a race, an access out of bounds, a barrier not every thread
reaches) and none of its kernels was left to one or two threads (a launch moving 256 KiB
or more of device memory, half of it by its two busiest threads), but for SERIAL_KNOWN,
which must be found so. The sanitizer pass (oracle.test_subset) emits every Nth op case and random
program and stops there (TDSL_EMIT_ONLY: g++ and the shim are no work of tdslc's). Without g++ (TDSL_SHIM_CXX) the test exits 77.

The files compile once per run into one executable (tests/shim/shimcc.py), which runs
every call in one process; the shim's own libraries are cached beside tdslc.
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
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "shim"))
from oracle import (EXAMPLE_DIMS, SKIP, Tally, compare, dim_args, example_dims, example_functions,  # noqa: E402
                    from_npy, rnd, test_subset, to_npy)
import shimcc  # noqa: E402

RANDOM_COUNT = int(os.environ.get("TDSL_SHIM_RANDOM_COUNT", "100"))
ONLY = re.compile(os.environ.get("TDSL_SHIM_ONLY", ""))  # (development: the programs whose label matches)


def rename(src, old, new):
    return re.sub(rf"^fn {old}\(", f"fn {new}(", src, count=1, flags=re.M)


def emit(tdslc, src_path, cu, args=()):
    p = subprocess.run([tdslc, src_path, "--target", "cuda", "--emit=cuda", "-o", cu] + list(args),
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"tdslc {src_path} --emit=cuda: exit {p.returncode}: {p.stderr[-3000:]}")


def save(d, name, arr):
    path = os.path.join(d, name + ".npy")
    np.save(path, arr)
    return path


def load_outs(out_dir):
    outs = []
    while os.path.exists(os.path.join(out_dir, f"out{len(outs)}.npy")):
        outs.append(np.load(os.path.join(out_dir, f"out{len(outs)}.npy")))
    return outs


# ---- the op cases: their outputs against their NumPy values ----
def check_case(case, out_dir):
    outs = load_outs(out_dir)
    if len(outs) != len(case.outs):
        return [f"{len(outs)} outputs, expected {len(case.outs)}"]
    errs = []
    for got, (expr, dt, want, kind, n, _) in zip(outs, case.outs):
        r = compare(from_npy(got, dt), want, dt, kind, n)
        if r:
            errs.append(f"{expr}: {r}")
    return errs


# ---- random programs: randprog's per-element tolerances ----
def check_random(prog, out_dir):
    from randprog import check_doc
    outs = load_outs(out_dir)
    doc = {"outputs": [{"dtype": n.dtype, "shape": list(o.shape),
                        "data": from_npy(o, n.dtype).ravel().tolist()} for o, n in zip(outs, prog.outs)]}
    if len(outs) != len(prog.outs):
        return [f"{len(outs)} outputs, expected {len(prog.outs)}"]
    return check_doc(prog, doc)


# ---- examples: test_examples.py's models on seeded inputs ----
def example_params(src, fn, dims):
    """[(name, dtype, shape)] of fn's parameters, dims evaluated with the file's constants."""
    from test_examples import params_of, shape_of
    sig = re.search(r"fn\s+" + fn + r"\s*\((.*?)\)\s*->", src, re.S).group(1)
    out = []
    for name in params_of(src, fn):
        dt = re.search(r"\b" + name + r"\s*:\s*(\w+)\[", sig).group(1)
        out.append((name, dt, shape_of(src, fn, name, dims)))
    return out


def example_inputs(src, fn, dims, seed):
    rng = np.random.default_rng(seed)
    ins = {}
    for name, dt, shape in example_params(src, fn, dims):
        if dt in ("i64", "i32"):
            ins[name] = (dt, rng.integers(0, 4, size=shape))
        elif name.endswith("var"):  # a variance is positive
            ins[name] = (dt, rng.uniform(0.5, 1.5, size=shape))
        else:
            ins[name] = (dt, rng.uniform(-1, 1, size=shape))
    return {k: (dt, rnd(v, dt)) for k, (dt, v) in ins.items()}


def check_example(model, inputs, out_dir):
    wants = model(*[v.astype(np.float64) for _, v in inputs.values()])
    outs = load_outs(out_dir)
    if len(outs) != len(wants):
        return [f"{len(outs)} outputs, expected {len(wants)}"]
    errs = []
    for k, (got, (want, kind)) in enumerate(zip(outs, wants)):
        want = np.asarray(want).astype(np.float32)
        n = max(int(np.prod(want.shape[-1:])), 1)
        r = compare(got, want, "f32", kind, n)
        if r:
            errs.append(f"out{k}: {r}")
    return errs


# ---- GRID: sizes whose loops go round, and every kernel shape at scale ----
def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _ln(x):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def _sdpa(q, k, v, causal=False, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return _softmax(s) @ v


# (name, source, [(param, dtype, shape)], NumPy function of the inputs -> [(value, dtype, kind, n)])
GRID = [
    ("ew_long", "fn f(x: f32[300, 257], y: f32[257]) -> f32[300, 257] { return sigmoid(x * 2 + y) }",
     [("x", "f32", (300, 257)), ("y", "f32", (257,))],
     lambda x, y: [(1 / (1 + np.exp(-(x * 2 + y))), "f32", "elem", 1)]),
    ("ew_t", "fn f(x: f32[64, 48]) -> f32[48, 64] { return (x.t() + 1).exp() }",
     [("x", "f32", (64, 48))], lambda x: [(np.exp(x.T + 1), "f32", "elem", 1)]),
    ("ew_half", "fn f(x: f16[1000, 33], y: bf16[33]) -> f16[1000, 33] { return x * y.half() + 1 }",
     [("x", "f16", (1000, 33)), ("y", "bf16", (33,))], lambda x, y: [(x * y + 1, "f16", "elem", 1)]),
    ("sm_rows", "fn f(x: f32[37, 1000]) -> f32[37, 1000] { return x.softmax(-1) }",
     [("x", "f32", (37, 1000))], lambda x: [(_softmax(x), "f32", "red", 1000)]),
    ("sm_short", "fn f(x: f32[300, 20]) -> f32[300, 20] { return x.softmax(-1) }",
     [("x", "f32", (300, 20))], lambda x: [(_softmax(x), "f32", "red", 20)]),
    ("ln", "fn f(x: f32[40, 512]) -> f32[40, 512] {\n    m = x.mean(-1, keepdim=true)\n"
     "    v = x.var(-1, keepdim=true, unbiased=false)\n    return (x - m) / sqrt(v + 1e-5)\n}",
     [("x", "f32", (40, 512))], lambda x: [(_ln(x), "f32", "red", 512)]),
    ("rowsum", "fn f(x: f64[5000, 3]) -> f64[5000] { return x.sum(-1) }",
     [("x", "f64", (5000, 3))], lambda x: [(x.sum(-1), "f64", "red", 3)]),
    ("colsum", "fn f(x: f32[300, 333]) -> f32[333] { return x.sum(0) }",
     [("x", "f32", (300, 333))], lambda x: [(x.sum(0), "f32", "red", 300)]),
    ("argmin_h", "fn f(x: f16[60, 700]) -> i64[60] { return x.argmin(-1) }",
     [("x", "f16", (60, 700))], lambda x: [(x.argmin(-1), "i64", "exact", 1)]),
    ("total", "fn f(x: f32[123, 457]) -> f32[] { return x.sum() }",
     [("x", "f32", (123, 457))], lambda x: [(x.sum(), "f32", "red", 123 * 457)]),
    ("mm", "fn f(a: f32[70, 90], b: f32[90, 50], c: f32[50]) -> f32[70, 50] { return relu(a @ b + c) }",
     [("a", "f32", (70, 90)), ("b", "f32", (90, 50)), ("c", "f32", (50,))],
     lambda a, b, c: [(np.maximum(a @ b + c, 0), "f32", "mm", 1)]),
    ("mm_t", "fn f(a: f32[3, 33, 40], b: f32[3, 17, 40]) -> f32[3, 33, 17] { return a @ b.transpose(1, 2) }",
     [("a", "f32", (3, 33, 40)), ("b", "f32", (3, 17, 40))],
     lambda a, b: [(a @ np.swapaxes(b, 1, 2), "f32", "mm", 1)]),
    ("mm_big", "fn f(a: f32[130, 70], b: f32[70, 140]) -> f32[130, 140] { return a @ b }",
     [("a", "f32", (130, 70)), ("b", "f32", (70, 140))], lambda a, b: [(a @ b, "f32", "mm", 1)]),
    ("mm_mid", "fn f(a: f32[2, 70, 33], b: f32[66, 33]) -> f32[2, 70, 66] { return tanh(a @ b.t()) }",
     [("a", "f32", (2, 70, 33)), ("b", "f32", (66, 33))], lambda a, b: [(np.tanh(a @ b.T), "f32", "mm", 1)]),
    ("mm_d", "fn f(a: f64[65, 20], b: f64[20, 70]) -> f64[65, 70] { return a @ b }",
     [("a", "f64", (65, 20)), ("b", "f64", (20, 70))], lambda a, b: [(a @ b, "f64", "mm", 1)]),
    ("mm_h", "fn f(a: f16[64, 48], b: f16[48, 40]) -> f16[64, 40] { return a @ b }",
     [("a", "f16", (64, 48)), ("b", "f16", (48, 40))], lambda a, b: [(a @ b, "f16", "mm", 1)]),
    ("mma_h", "fn f(a: f16[130, 72], b: f16[72, 140]) -> f16[130, 140] { return a @ b }",
     [("a", "f16", (130, 72)), ("b", "f16", (72, 140))], lambda a, b: [(a @ b, "f16", "mm", 1)]),
    ("mma_h_lined", "fn f(a: f16[128, 64], b: f16[64, 136]) -> f16[128, 136] { return a @ b }",
     [("a", "f16", (128, 64)), ("b", "f16", (64, 136))], lambda a, b: [(a @ b, "f16", "mm", 1)]),
    ("mma_bf_t", "fn f(a: bf16[2, 64, 48], b: bf16[40, 48]) -> bf16[2, 64, 40] { return relu(a @ b.t()) }",
     [("a", "bf16", (2, 64, 48)), ("b", "bf16", (40, 48))], lambda a, b: [(np.maximum(a @ b.T, 0), "bf16", "mm", 1)]),
    ("mma_h_km", "fn f(a: f16[48, 64], b: f16[48, 72]) -> f32[64, 72] { return (a.t() @ b).float() }",
     [("a", "f16", (48, 64)), ("b", "f16", (48, 72))], lambda a, b: [(rnd(a.T @ b, "f16"), "f32", "mm", 1)]),
    ("mm_bf", "fn f(a: bf16[40, 24], b: bf16[24, 8]) -> bf16[40, 8] { return gelu(a @ b) }",
     [("a", "bf16", (40, 24)), ("b", "bf16", (24, 8))],
     lambda a, b: [(0.5 * (a @ b) * (1 + np.vectorize(__import__("math").erf)((a @ b) / np.sqrt(2))), "bf16", "mm",
                    1)]),
    ("mv", "fn f(a: f32[200, 300], b: f32[300]) -> f32[200] { return a @ b }",
     [("a", "f32", (200, 300)), ("b", "f32", (300,))], lambda a, b: [(a @ b, "f32", "mm", 1)]),
    ("attn", "fn f(q: f32[2, 3, 40, 32], k: f32[2, 3, 70, 32], v: f32[2, 3, 70, 32]) -> f32[2, 3, 40, 32] {\n"
     "    return F.scaled_dot_product_attention(q, k, v, is_causal=True)\n}",
     [("q", "f32", (2, 3, 40, 32)), ("k", "f32", (2, 3, 70, 32)), ("v", "f32", (2, 3, 70, 32))],
     lambda q, k, v: [(_sdpa(q, k, v, causal=True), "f32", "mm", 1)]),
    ("scan_long", "fn f(x: f32[2, 40000]) -> f32[2, 40000] { return x.cumsum(-1) }",
     [("x", "f32", (2, 40000))], lambda x: [(np.cumsum(x, -1), "f32", "red", 40000)]),
    ("scan_max", "fn f(x: f32[3, 5000]) -> (f32[3, 5000], i64[3, 5000]) {\n    r = x.cummax(-1)\n"
     "    return r.values, r.indices\n}",
     [("x", "f32", (3, 5000))], lambda x: _cumext(x, True, "f32")),
    ("scan_min_i", "fn f(x: i32[2, 3000]) -> (i32[2, 3000], i64[2, 3000]) {\n    r = x.cummin(-1)\n"
     "    return r.values, r.indices\n}",
     [("x", "i32", (2, 3000))], lambda x: _cumext(x, False, "i32")),
    ("scan_lse", "fn f(x: f64[2, 3000]) -> f64[2, 3000] { return torch.logcumsumexp(x, -1) }",
     [("x", "f64", (2, 3000))], lambda x: [(np.logaddexp.accumulate(x, -1), "f64", "red", 3000)]),
    ("scan_b", "fn f(x: bool[2, 3000]) -> (bool[2, 3000], i64[2, 3000]) {\n    r = x.cummax(-1)\n"
     "    return r.values, r.indices\n}",
     [("x", "bool", (2, 3000))], lambda x: _cumext(x, True, "bool")),
    ("scan_col_h", "fn f(x: f16[3000, 3]) -> f16[3000, 3] { return x.cumsum(0) }",
     [("x", "f16", (3000, 3))], lambda x: [(np.cumsum(x, 0), "f16", "red", 3000)]),
    ("scan_i", "fn f(x: i64[2, 2000]) -> (i64[2, 2000], f64[2, 2000]) {\n"
     "    return x.cumprod(1), x.cumsum(1, dtype=torch.float64)\n}",
     [("x", "i64", (2, 2000))], lambda x: [(np.cumprod(x, 1), "i64", "exact", 1), (np.cumsum(x, 1), "f64", "red", 2000)]),
    ("scan_bf", "fn f(x: bf16[4000]) -> (bf16[4000], bf16[4000]) {\n"
     "    return x.cummin(0).values, torch.logcumsumexp(x, 0)\n}",
     [("x", "bf16", (4000,))],
     lambda x: [(np.minimum.accumulate(x), "bf16", "exact", 1), (np.logaddexp.accumulate(x), "bf16", "red", 4000)]),
    ("attn_h", "fn f(q: f16[2, 50, 16], k: f16[2, 60, 16], v: f16[60, 8], m: bool[50, 60]) -> f16[2, 50, 8] {\n"
     "    return F.scaled_dot_product_attention(q, k, v, m)\n}",
     [("q", "f16", (2, 50, 16)), ("k", "f16", (2, 60, 16)), ("v", "f16", (60, 8)), ("m", "bool", (50, 60))],
     lambda q, k, v, m: [(_sdpa(q, k, v, mask=m | np.eye(50, 60, dtype=bool)), "f16", "mm", 1)]),
]
# The kernels left to one or two threads (the shim's `tdsl-shim-serial:` lines: a launch
# moving 256 KiB or more, half of it by its two busiest threads) that are known, with why;
# any other is a failure, and each of these must be found (the check works).
SERIAL_KNOWN = {}
FORCED = ("ew_long", "sm_rows", "sm_short", "ln", "colsum", "argmin_h", "total", "mm", "mm_mid", "mm_h", "mma_h",
          "attn", "scan_long", "scan_max")


def _cumext(x, mx, dt):
    """cummax (mx) or cummin of x along its last dim as PyTorch defines them: values and
    indices, a tie or a nan taking the later index (a nan propagates)."""
    acc = np.full(x.shape[:-1], -np.inf if mx else np.inf)
    pos = np.zeros(x.shape[:-1], np.int64)
    vals, idx = np.empty(x.shape), np.empty(x.shape, np.int64)
    with np.errstate(invalid="ignore"):
        for j in range(x.shape[-1]):
            xj = x[..., j]
            take = ((xj >= acc) if mx else (xj <= acc)) | np.isnan(xj)
            acc, pos = np.where(take, xj, acc), np.where(take, j, pos)
            vals[..., j], idx[..., j] = acc, pos
    return [(vals, dt, "exact", 1), (idx, "i64", "exact", 1)]


def grid_inputs(name, params, seed):
    rng = np.random.default_rng(seed)
    ins = {}
    for p, dt, shape in params:
        if dt == "bool":
            v = rng.random(shape) < 0.7
            if name == "attn_h":  # every query sees a key
                v |= np.eye(*shape, dtype=bool)
            ins[p] = (dt, v)
        elif name in ("scan_max", "scan_min_i"):  # ties, nans, a row of one value
            v = rng.integers(-3, 4, size=shape).astype(np.float64)
            if dt == "f32":
                v[1, [1999, 3500]] = np.nan
            v[-1] = 1
            ins[p] = (dt, rnd(v, dt))
        else:
            ins[p] = (dt, rnd(rng.uniform(-1, 1, size=shape), dt))
    return ins


def check_grid(fn, inputs, out_dir):
    args = [v.astype(np.float64) if v.dtype.kind == "f" else v for _, v in inputs.values()]
    wants = fn(*args)
    outs = load_outs(out_dir)
    if len(outs) != len(wants):
        return [f"{len(outs)} outputs, expected {len(wants)}"]
    errs = []
    for k, (got, (want, dt, kind, n)) in enumerate(zip(outs, wants)):
        r = compare(from_npy(got, dt), rnd(want, dt), dt, kind, n)
        if r:
            errs.append(f"out{k}: {r}")
    return errs


def main():
    tdslc = os.path.abspath(sys.argv[1])
    if shutil.which(shimcc.CXX) is None:
        print(f"SKIP: no C++ compiler '{shimcc.CXX}'")
        return SKIP
    every = test_subset()
    tc = shimcc.toolchain(os.path.join(os.path.dirname(tdslc), "shim"))
    work = tempfile.mkdtemp(prefix="tdsl-shim-")
    try:
        return run_all(tdslc, tc, work, every)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# a random program's run-time scalar parameters (randprog.SCALARS): 0-d files the runner
# reads as the entry's double, int64_t and bool arguments
SCALAR_NP = {"float": np.float64, "int": np.int64, "pybool": np.bool_}


def run_all(tdslc, tc, work, every):
    import test_ops
    import test_examples
    from randprog import Program
    units, calls, checks = [], [], []  # checks: (label, fn name, check(out_dir) -> errs, program)

    def call(name, inputs, check, label, program=None):
        d = os.path.join(work, "out", name)
        os.makedirs(d, exist_ok=True)
        paths = [save(d, "in_" + p, np.asarray(v, SCALAR_NP[dt]) if dt in SCALAR_NP else to_npy(v, dt))
                 for p, (dt, v) in inputs.items()]
        calls.append((name, d, paths))
        checks.append((label, name, lambda: check(d), program))

    # the op cases, in one file
    cases = [c for c in test_ops.all_cases()[::every] if ONLY.search(f"op {c.name}")]
    path = os.path.join(work, "ops.tdsl")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join(rename(c.source(), "f", f"op{i}") for i, c in enumerate(cases)) + "\n")
    if cases:
        emit(tdslc, path, path + ".cu")
        units.append((path + ".cu", "", 4 if len(cases) > 40 else 1))
    for i, c in enumerate(cases):
        call(f"op{i}", c.inputs(), lambda d, c=c: check_case(c, d), f"op {c.name} ({len(c.outs)} outputs)",
             c.source())

    # random programs, in one file
    progs = [p for p in (Program(s).build() for s in range(0, RANDOM_COUNT, every))
             if ONLY.search(f"random seed {p.seed}")]
    path = os.path.join(work, "random.tdsl")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join(rename(p.src, "f", f"rand{p.seed}") for p in progs) + "\n")
    if progs:
        emit(tdslc, path, path + ".cu")
        units.append((path + ".cu", "", 2 if len(progs) > 50 else 1))
    for p in progs:
        call(f"rand{p.seed}", {n: (dt, v) for n, dt, v in p.params}, lambda d, p=p: check_random(p, d),
             f"random seed {p.seed} ({p.dt})", p.src)

    # the examples, a file each (their functions' names meet)
    seen = set()
    for fname, src, fn in example_functions():
        if not ONLY.search(f"example {fname}:{fn}"):
            continue
        stem = fname[:-5]
        dims = example_dims(fname, src, fn)
        if fname not in seen:
            seen.add(fname)
            cu = os.path.join(work, stem + ".cu")
            emit(tdslc, os.path.join(shimcc.ROOT, "examples", fname), cu, dim_args(EXAMPLE_DIMS.get(fname, {})))
            units.append((cu, f"ex_{stem}_", 1))
        model = test_examples.MODELS.get((fname, fn))
        inputs = example_inputs(src, fn, dims, seed=len(calls))
        if model is None:
            checks.append((f"example {fname}:{fn}", None, lambda: ["no NumPy model in test_examples.py"], None))
            continue
        call(f"ex_{stem}_{fn}", inputs, lambda d, m=model, i=inputs: check_example(m, i, d), f"example {fname}:{fn}")

    # GRID, in one file, and again under a one-block grid
    for forced in (False, True):
        path = os.path.join(work, f"grid{int(forced)}.tdsl")
        rows = [g for g in GRID if (not forced or g[0] in FORCED) and
                ONLY.search(f"{'one block' if forced else 'grid'} {g[0]}")]
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n\n".join(rename(src, "f", name) for name, src, _, _ in rows) + "\n")
        if not rows:
            continue
        env = dict(os.environ, TDSL_GPU_GRID="1") if forced else None
        p = subprocess.run([tdslc, path, "--target", "cuda", "--emit=cuda", "-o", path + ".cu"], capture_output=True,
                           text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"--emit=cuda {path}: {p.stderr[-3000:]}")
        prefix = "one_" if forced else "grid_"
        units.append((path + ".cu", prefix, 1))
        for k, (name, src, params, fn) in enumerate(rows):
            inputs = grid_inputs(name, params, seed=k)
            call(prefix + name, inputs, lambda d, fn=fn, i=inputs: check_grid(fn, i, d),
                 f"{'one block' if forced else 'grid'} {name}", src)

    tally = Tally()
    if os.environ.get("TDSL_EMIT_ONLY"):  # the sanitizer pass: tdslc's part alone (every emit above
        # succeeded); g++'s compile and the shim's run are no work of tdslc's and ran in the release pass
        tally.check(f"--emit=cuda of {len(units)} files ({len(calls)} programs)", True)
        return tally.summary(" (TDSL_EMIT_ONLY: the shim not run)")
    # the shim itself: right kernels pass, and each kind of mistake is reported
    exe = os.path.join(work, "selftest")
    shimcc.build_selftest(tc, exe)
    p = subprocess.run([exe], capture_output=True, text=True, timeout=300)
    print(p.stdout, end="")
    tally.check("the shim's self-test (tests/shim/selftest.cu)", p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:])

    exe = os.path.join(work, "runner")
    nkernels = shimcc.build_runner(tc, units, exe, jobs=2)
    results, out = shimcc.run_batch(exe, calls)
    stats = re.search(r"^stats: (.*)$", out, re.M)
    serial, cur = {}, None  # {fn: the shim's serial lines}
    for ln in out.splitlines():
        m = re.match(r"^== (\w+)$", ln)
        cur = m.group(1) if m else cur
        if cur and ln.startswith("tdsl-shim-serial: "):
            serial.setdefault(cur, []).append(ln)
    for label, name, check, program in checks:
        errs = list(results.get(name, [])) if name else []
        if not errs:
            errs = check()
        if label in SERIAL_KNOWN and not serial.get(name):
            errs.append(f"expected a kernel left to one or two threads ({SERIAL_KNOWN[label]}); the shim saw none")
        elif label not in SERIAL_KNOWN:
            errs += [f"a kernel left to one or two threads: {ln}" for ln in serial.get(name, [])]
        tally.report(label, errs, program=program if errs else None)
    for label, why in SERIAL_KNOWN.items():
        if any(c[0] == label for c in checks):
            print(f"known: {label}: a kernel left to one or two threads: {why}")
    note = (f" ({len(cases)} op cases, {len(progs)} random programs, {len(seen)} example files, "
            f"{sum(1 for c in calls if c[0].startswith(('grid_', 'one_')))} grid programs: {len(calls)} programs, "
            f"{nkernels} kernels compiled; {stats.group(1) if stats else 'no stats'} under the shim)")
    return tally.summary(note, recap=True)


if __name__ == "__main__":
    sys.exit(main())
