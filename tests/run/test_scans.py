#!/usr/bin/python3
"""tests/run/test_scans.py TDSLC: the cumulative ops — cumsum, cumprod (with dtype=),
cummax and cummin as (values, indices) with .values/.indices, logcumsumexp — in their
function, method and torch.NAME spellings. Each program runs and is compared with NumPy
on the same inputs: prefix sums and products accumulated in f64 and rounded to the
result dtype, np.logaddexp.accumulate, and a loop over the scan dim for cummax/cummin
with PyTorch's rules (a tie or a later NaN moves the index; NaN stays).

scan_cases() is the dtype and layout matrix (every dtype; contiguous, transposed,
stepped and expanded operands; every dim, negative dims; NaN, infinities, ties): it runs
in test_ops.py with the other op cases, and so also compiles in test_cuda_compile.py
and test_ptx_compile.py and runs in test_gpu_run.py. This script runs the programs
around it: empty dims, 0-d inputs, scans of fused producers read by later kernels, a
column scan large enough for the parallel blocks, unpacking, an unused half of cummax.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, Tally, compare_kinds, emit_text, opm,  # noqa: E402
                    require_backend, rnd, run_outputs)
from op_cases import Case  # noqa: E402


def cum(a, axis, op):
    """cumsum (op 'sum') or cumprod ('prod') of a in f64 (ints: int64, wrapping)."""
    a = np.asarray(a)
    a = a.astype(np.int64) if a.dtype.kind in "biu" else a.astype(np.float64)
    with np.errstate(all="ignore"):
        return np.cumsum(a, axis) if op == "sum" else np.cumprod(a, axis)


def cumext(a, axis, is_max):
    """PyTorch's cummax/cummin: (values, indices) along axis."""
    a = np.moveaxis(np.asarray(a), axis, -1)
    vals = np.empty_like(a)
    idx = np.zeros(a.shape, np.int64)
    if a.shape[-1] == 0:
        return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)
    best, pos = a[..., 0].copy(), np.zeros(a.shape[:-1], np.int64)
    for j in range(a.shape[-1]):
        x = a[..., j]
        with np.errstate(invalid="ignore"):
            take = (x >= best) if is_max else (x <= best)
            if a.dtype.kind == "f":
                take = take | np.isnan(x)
        best = np.where(take, x, best)
        pos = np.where(take, j, pos)
        vals[..., j], idx[..., j] = best, pos
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def logcumsumexp(a, axis):
    with np.errstate(all="ignore"):
        return np.logaddexp.accumulate(np.asarray(a).astype(np.float64), axis)


def cum_dtype(dt):
    return dt if dt in FLOAT_DTYPES else "i64"


def scan_cases():
    """The matrix of test_ops.py (see the docstring)."""
    cases = []
    for dt in ALL_DTYPES:
        c = Case(f"scan_{dt}")
        rng = np.random.default_rng(zlib.crc32(c.name.encode()))
        xc = c.param(dt, [4, 5, 6], "c", rng)
        xt = c.param(dt, [4, 5, 6], "t", rng)
        xs = c.param(dt, [3, 7], "s", rng)
        xe = c.param(dt, [3, 5], "e", rng)
        exact = dt in INT_DTYPES
        cd = cum_dtype(dt)
        # (operand, dim as numpy axis, spelling)
        variants = [(xc, 2, "torch.{op}({x}, -1)"), (xc, 1, "{x}.{op}(1)"), (xt, 0, "{op}({x}, dim=0)"),
                    (xt, 2, "{x}.{op}(dim=2)"), (xs, 0, "{x}.{op}(-2)"), (xs, 1, "torch.{op}({x}, 1)"),
                    (xe, 0, "{op}({x}, 0)"), (xe, 1, "{x}.{op}(-1)")]
        for (e, v), ax, spell in variants:
            n = v.shape[ax]
            kind = "exact" if exact else "red"
            for op in ("sum", "prod"):
                c.out(spell.format(op="cum" + op, x=e), cd, cum(opm(v), ax, op), kind, n)
            for op, is_max in (("cummax", True), ("cummin", False)):
                vals, idx = cumext(v, ax, is_max)
                c.out(spell.format(op=op, x=e) + ".values", dt, vals, "exact")
                c.out(spell.format(op=op, x=e) + ".indices", "i64", idx, "exact")
            if dt in FLOAT_DTYPES:
                c.out(spell.format(op="logcumsumexp", x=e), dt, logcumsumexp(opm(v), ax), "red", n)
        # dtype=: the input converted first, then scanned in that dtype
        e, v = xc
        c.out(f"{e}.cumsum(1, dtype=f64)", "f64", cum(v.astype(np.float64), 1, "sum"), "red", 5)
        c.out(f"torch.cumprod({e}, 0, dtype=f32)", "f32", cum(v.astype(np.float32), 0, "prod"), "red", 4)
        if dt in ("f32", "f64", "i32"):  # a narrower float: the input rounded to it first
            c.out(f"{e}.cumsum(-1, dtype=bf16)", "bf16", cum(opm(rnd(v, "bf16")), 2, "sum"), "red", 6)
            c.out(f"{e}.cumprod(1, dtype=f16)", "f16", cum(opm(rnd(v, "f16")), 1, "prod"), "red", 5)
        if dt != "bool":
            iv = v.astype(np.float64)
            iv = np.trunc(iv).astype(np.int32)
            c.out(f"cumsum({e}, 2, dtype=i32)", "i32", cum(iv, 2, "sum").astype(np.int32), "exact")
        # the tuple indexed and unpacked
        c.let(f"mv, mi = torch.cummax({e}, 1)")
        vals, idx = cumext(v, 1, True)
        c.out("mv", dt, vals, "exact")
        c.out("mi", "i64", idx, "exact")
        vals, idx = cumext(v, 2, False)
        c.out(f"{e}.cummin(2)[0]", dt, vals, "exact")
        c.out(f"{e}.cummin(2)[1]", "i64", idx, "exact")
        cases.append(c)
    # NaN, infinities and ties along each dim
    for dt in FLOAT_DTYPES:
        c = Case(f"scan_special_{dt}")
        rng = np.random.default_rng(zlib.crc32(c.name.encode()))
        pool = np.array([np.nan, np.inf, -np.inf, 1.0, 1.0, -1.0, 0.5, 0.0, -0.0, 2.0])
        val = pool[rng.integers(0, len(pool), size=(5, 8))]
        val[0] = [1.0, np.nan, 3.0, np.nan, 0.5, 7.0, 7.0, -np.inf]  # PyTorch's doc example, and more
        val[1] = [-np.inf, -np.inf, 1.0, np.inf, np.nan, 2.0, np.inf, np.inf]
        val[2] = [np.inf, -np.inf, np.inf, 1.0, 1.0, -np.inf, np.inf, 0.0]
        val = val.astype(np.float32) if dt != "f64" else val
        for lay in ("c", "t"):
            e, v = c.param(dt, [5, 8], lay, val=val if lay == "c" else val.T.copy())
            for ax, d in ((1, -1), (0, 0)):
                for op, is_max in (("cummax", True), ("cummin", False)):
                    vals, idx = cumext(v, ax, is_max)
                    c.out(f"{e}.{op}({d}).values", dt, vals, "exact")
                    c.out(f"{e}.{op}({d}).indices", "i64", idx, "exact")
                c.out(f"{e}.logcumsumexp({d})", dt, logcumsumexp(opm(v), ax), "red", v.shape[ax])
                c.out(f"{e}.cumsum({d})", dt, cum(opm(v), ax, "sum"), "red", v.shape[ax])
                c.out(f"{e}.cumprod({d})", dt, cum(opm(v), ax, "prod"), "red", v.shape[ax])
        cases.append(c)
    return cases


# Programs around the matrix: (name, source, inputs, the NumPy values, their kinds)
RNG = np.random.default_rng(14)
X = RNG.standard_normal((6, 7)).astype(np.float32)
BIG = RNG.standard_normal((300, 257)).astype(np.float32)
E = np.zeros((0, 5), np.float32)
S = np.array(2.5, np.float32)
I = RNG.integers(-3, 4, size=(6, 7)).astype(np.int32)


def programs():
    x = X.astype(np.float64)
    b = BIG.astype(np.float64)
    cv, ci = cumext(X, 1, True)
    dv, di = cumext(X, 0, False)
    return [
        ("empty dims", "fn f(e: f32[0, 5]) -> (f32[0, 5], f32[0, 5], f32[0, 5], i64[0, 5], f32[0, 5], i64[0, 5]) {\n"
         "    return e.cumsum(0), e.cumprod(1), e.logcumsumexp(0), e.cummax(0).indices, e.cummin(1)[0], "
         "torch.cumsum(e.long(), 1)\n}\n",
         {"e": E}, [np.zeros((0, 5))] * 3 + [np.zeros((0, 5), np.int64), np.zeros((0, 5)),
                                              np.zeros((0, 5), np.int64)],
         ["f32", "f32", "f32", "i64", "f32", "i64"]),
        ("0-d", "fn f(s: f32[]) -> (f32[], f32[], f32[], i64[], f32[], i64[]) {\n"
         "    v, i = s.cummax(0)\n"
         "    return s.cumsum(0), torch.cumprod(s, -1), s.logcumsumexp(0), i, v, s.cummin(-1).indices\n}\n",
         {"s": S}, [S, S, S, np.int64(0), S, np.int64(0)], ["f32", "f32", "f32", "i64", "f32", "i64"]),
        ("fused producer, read by later kernels",
         "fn f(x: f32[6, 7], i: i32[6, 7]) -> (f32[6, 7], f32[6], i64[6, 7]) {\n"
         "    c = torch.cumsum(x * 2.0 + 1.0, dim=1)\n"
         "    p = (x.t() * 0.5).cumprod(1)\n"
         "    return c - c.mean(1, keepdim=true), p.sum(0), (i * 3).cumsum(0) + i.cumsum(-1)\n}\n",
         {"x": X, "i": I},
         [np.cumsum(2 * x + 1, 1) - np.cumsum(2 * x + 1, 1).mean(1, keepdims=True),
          np.cumprod(x.T * 0.5, 1).sum(0), np.cumsum(3 * I.astype(np.int64), 0) + np.cumsum(I.astype(np.int64), 1)],
         ["f32", "f32", "i64"]),
        ("cummax values and indices", "fn f(x: f32[6, 7]) -> (f32[6, 7], i64[6, 7], i64[6, 7], f32[6, 7]) {\n"
         "    r = x.cummax(1)\n    m = torch.cummin(x, dim=0)\n"
         "    return r.values, r.indices, m.indices, m.values + r[0]\n}\n",
         {"x": X}, [cv, ci, di, dv.astype(np.float64) + cv], ["f32", "i64", "i64", "f32"]),
        ("large columns and rows", "fn f(x: f32[300, 257]) -> (f32[300, 257], f32[300, 257], f32[300, 257]) {\n"
         "    return x.cumsum(0), x.cumsum(1), x.t().logcumsumexp(1).t()\n}\n",
         {"x": BIG}, [np.cumsum(b, 0), np.cumsum(b, 1), logcumsumexp(b, 0)], ["f32", "f32", "f32"]),
    ]


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, src, inputs, want, kinds in programs():
        p, outs = run_outputs(tdslc, src, inputs)
        t.report(name, compare_kinds(p, outs, want, kinds), src)
    # an unpacked cummax whose values are unused computes its indices alone
    src = "fn f(x: f32[6, 7]) -> i64[6, 7] {\n    _, ix = x.cummax(1)\n    return ix\n}\n"
    p, outs = run_outputs(tdslc, src, {"x": X})
    t.report("unused values", compare_kinds(p, outs, [cumext(X, 1, True)[1]], ["i64"]), src)
    ir = emit_text(tdslc, src, "ir").stdout
    kernels = [ln.split(":", 1)[1].split("lines")[0].split() for ln in ir.splitlines() if ln.startswith("  k")]
    t.check("unused values: one kernel, the indices alone", kernels == [["cummax_indices"]], ir)
    # values and indices of one cummax share a kernel; a producer fuses into the scan
    src = "fn f(x: f32[6, 7]) -> (f32[6, 7], i64[6, 7]) {\n    return (x * 2.0).cummax(0)\n}\n"
    ir = emit_text(tdslc, src, "ir").stdout
    kernels = [ln.split(":", 1)[1].split("lines")[0].split() for ln in ir.splitlines() if ln.startswith("  k")]
    t.check("one kernel for values, indices and the producer", kernels == [["mul", "cummax", "cummax_indices"]], ir)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
