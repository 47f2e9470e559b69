#!/usr/bin/python3
"""tests/run/test_int_reductions.py TDSLC: integer reductions whose result the same kernel
goes on computing with: -x.sum(0), 5 - y.sum(0), z.sum(1).abs(), x.sum(0) * 3 + 1,
-x.prod(0), x - x.sum(0, keepdim=True) (x.long() for bool), y.amax(0) - y.amin(0), in every integer dtype and
bool, on short constant extents (4, 16 rows of 2 or 3 columns).

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
from oracle import INT_DTYPES, Tally, rand_values, require_backend, run_case  # noqa: E402


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


def main():
    tdslc = os.path.abspath(sys.argv[1])
    require_backend(tdslc)
    T = Tally()
    for dt in INT_DTYPES:
        params, exprs, kinds, want, inputs = case(dt)
        errs, src = run_case(tdslc, params, [], exprs, kinds, want, inputs)
        T.report(f"reductions of {dt} computed on in their kernel", errs, program=src)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
