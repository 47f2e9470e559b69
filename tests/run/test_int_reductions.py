#!/usr/bin/python3
"""tests/run/test_int_reductions.py TDSLC: integer reductions whose result the same kernel
goes on computing with: -x.sum(0), 5 - y.sum(0), z.sum(1).abs(), x.sum(0) * 3 + 1,
-x.prod(0), x - x.sum(0, keepdim=True) (x.long() for bool), y.amax(0) - y.amin(0), in every integer dtype and
bool, on short constant extents (4, 16 rows of 2 or 3 columns).

any/all in every dtype: PyTorch 1.13 gives uint8 for a uint8 input and bool for every
other; folded in bool, converted at the end, in the row schedule (dim 1), the column
schedule (dim 0 of a short x) and the split one (dim 0 of a [20000, 4] t, whose columns
hold their only zero, or only nonzero, at the first row, a middle one and the last),
with keepdim, all dims, and an epilogue computing on the result (u8: wrapping * 200).

gcc 12.2 (Debian 12's cc) miscompiled these kernels of the C backend when it vectorized
the reduction (GCC bug 107212): -sum(x, 0) of an i32[4, 2] came out as one element of x
negated, not the column's sum (found by `make fuzz`'s differential half, seed
1795871933). codegen/c.c compiles a kernel that accumulates integers without gcc 12's
loop vectorizer. The values are NumPy's, in int64 with wrapping.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, VALUE_NP, Tally, f32_to_bf16_bits, rand_values, require_backend, run_case  # noqa: E402


def i64(a):
    return np.asarray(a).astype(np.int64)


def case(dt):
    """(params, exprs, kinds, want, inputs) of one dtype's program."""
    rng = np.random.default_rng(zlib.crc32(dt.encode()))
    lo = 0 if dt in ("bool", "u8") else -3
    x = rand_values(rng, dt, [4, 2], ilo=lo, ihi=3)
    y = rand_values(rng, dt, [16, 3], ilo=lo, ihi=3)
    z = rand_values(rng, dt, [2, 4, 3], ilo=lo, ihi=3)
    exprs = ["-x.sum(0)", "5 - y.sum(0)", "z.sum(1).abs()", "x.sum(0) * 3 + 1", "-x.prod(0)",
             ("x.long()" if dt == "bool" else "x") + " - x.sum(0, keepdim=true)"]  # no bool - int
    want = [-i64(x).sum(0), 5 - i64(y).sum(0), np.abs(i64(z).sum(1)), i64(x).sum(0) * 3 + 1,
            -i64(x).prod(0), i64(x) - i64(x).sum(0, keepdims=True)]
    kinds = ["i64"] * len(exprs)
    if dt != "bool":  # PyTorch refuses the subtraction of bools
        exprs.append("y.amax(0) - y.amin(0)")
        want.append((i64(y).max(0) - i64(y).min(0)).astype(rand_values(rng, dt, [1]).dtype))
        kinds.append(dt)
    params = f"x: {dt}[4, 2], y: {dt}[16, 3], z: {dt}[2, 4, 3]"
    return params, ", ".join(exprs), kinds, want, {"x": x, "y": y, "z": z}


def any_all_case(dt):
    """(params, exprs, kinds, want, inputs) of any/all in dtype dt."""
    rng = np.random.default_rng(zlib.crc32(("any_all" + dt).encode()))
    rd = "u8" if dt == "u8" else "bool"
    x = rand_values(rng, dt, [5, 7], ilo=0, ihi=2)
    n = 20000
    t = np.ones((n, 4), dtype=VALUE_NP[dt])  # column c: all but its marked rows nonzero, then its negation
    for c, r in enumerate((0, n // 2 + 3, n - 1)):
        t[r, c] = 0
    t[:, 3] = 0
    t[n - 1, 3] = 1
    if dt in FLOAT_DTYPES:  # nan is true, -0 false
        t[1, 0] = np.nan
        x[0, 0], x[1, 1] = np.nan, -0.0
    u = t == 0  # all of it: only where t is zero
    exprs = ["x.any(1)", "x.all(1, keepdim=true)", "torch.any(x, 0)", "x.all(dim=0)", "x.any()", "x.all()",
             "t.any(0)", "t.all(0)", "u.any(0, keepdim=true)", "u.all(0)",
             "x.any(1) * 200" if dt == "u8" else "x.any(1).long() * 200"]
    nz, unz = x != 0, u != 0
    tnz = t != 0
    want = [nz.any(1), nz.all(1, keepdims=True), nz.any(0), nz.all(0), nz.any(), nz.all(),
            tnz.any(0), tnz.all(0), unz.any(0, keepdims=True), unz.all(0)]
    kinds = [rd] * 6 + [rd] * 2 + ["bool"] * 2
    if dt == "u8":
        want.append((nz.any(1).astype(np.uint8) * np.uint8(200)).astype(np.uint8))
        kinds.append("u8")
    else:
        want.append(nz.any(1).astype(np.int64) * 200)
        kinds.append("i64")
    want = [np.asarray(w).astype(VALUE_NP[k]) for w, k in zip(want, kinds)]
    params = f"x: {dt}[5, 7], t: {dt}[{n}, 4]"
    body = ["u = t == 0"]
    if dt == "bf16":  # passed as its bits
        x, t = f32_to_bf16_bits(x), f32_to_bf16_bits(t)
    return params, body, ", ".join(exprs), kinds, want, {"x": x, "t": t}


def main():
    tdslc = os.path.abspath(sys.argv[1])
    require_backend(tdslc)
    T = Tally()
    for dt in INT_DTYPES:
        params, exprs, kinds, want, inputs = case(dt)
        errs, src = run_case(tdslc, params, [], exprs, kinds, want, inputs)
        T.report(f"reductions of {dt} computed on in their kernel", errs, program=src)
    for dt in ALL_DTYPES:
        params, body, exprs, kinds, want, inputs = any_all_case(dt)
        errs, src = run_case(tdslc, params, body, exprs, kinds, want, inputs)
        T.report(f"any and all of {dt} (uint8: uint8, else bool)", errs, program=src)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
