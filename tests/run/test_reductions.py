#!/usr/bin/python3
"""tests/run/test_reductions.py TDSLC: the reductions built of others (frontend/sema_reduce.c): count_nonzero,
nansum/nanmean, aminmax — the "reductions" cases of composed_cases.py, each run and
compared with NumPy on the backend named by TDSL_BACKEND (exits 77 when tdslc lacks it);
and amax/amin, max()/min(), max(dim)/min(dim) and argmax over rows long enough for the CPU
schedule's vector accumulators (ir/sched.c: 16 f32 or 8 f64 lanes and a remainder), with
NaN (in the vector part and in the remainder), +-inf and +-0 rows: NaN anywhere gives NaN,
and the index of the first NaN, as NumPy's max/argmax.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

from composed_cases import run_families  # noqa: E402
from oracle import Tally, require_backend, run_case  # noqa: E402


def rows(dt, n):
    """[6, n] of dtype dt: random, a NaN mid-row and another later, a row of inf with a
    NaN, a row of -inf, a row of +-0, a NaN last (the remainder), a row of NaN."""
    x = np.random.default_rng(5).standard_normal((6, n)).astype(dt)
    x[0, 5], x[0, n - 9] = np.nan, -np.nan
    x[1, :] = np.inf
    x[1, 17] = np.nan
    x[2, :] = -np.inf
    x[3, :] = 0.0
    x[3, ::3] = -0.0
    x[4, n - 1] = np.nan
    x[5, :] = np.nan
    return x


def nan_rows():
    """The NaN-propagating reductions against NumPy (one program)."""
    t = Tally()
    x, y = rows(np.float32, 77), rows(np.float64, 45)
    exprs = ("x.amax(-1), x.amin(1), x.max(), y.min(), torch.max(y, 1).values, y.min(-1).values, "
             "x.max(-1).indices, y.argmin(1), x[3].amax().abs(), x[3].amin().abs()")
    want = [x.max(-1), x.min(1), x.max(), y.min(), y.max(1), y.min(-1), x.argmax(-1), y.argmin(1), 0.0, 0.0]
    kinds = ["f32", "f32", "f32", "f64", "f64", "f64", "i64", "i64", "f32", "f32"]
    errs, src = run_case(sys.argv[1], "x: f32[6, 77], y: f64[6, 45]", [], exprs, kinds,
                         [np.asarray(w, np.float64) if k[0] == "f" else w for w, k in zip(want, kinds)], {"x": x, "y": y})
    t.report("nan_rows", errs, src)
    return t.summary()

if __name__ == "__main__":
    require_backend(sys.argv[1])
    sys.exit(run_families({"reductions"}) | nan_rows())
