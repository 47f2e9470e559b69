#!/usr/bin/python3
"""tests/run/test_logic.py TDSLC: Python's and, or, not, in, not in, is and is not on
compile-time values (numbers, None, dtypes, strings, tuples and lists), folded by sema:
each program scales a tensor by the folded values and is compared with NumPy, where the
same expressions are evaluated by Python itself.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, require_backend, run_case  # noqa: E402

X = np.random.default_rng(11).standard_normal((3, 4)).astype(np.float32)

# Python expressions over compile-time values; tdsl's spelling is the same text, with
# torch's dtypes standing for themselves (x.dtype is torch.float32).
EXPRS = [
    "1 and 2", "0 and 2", "0 or 3", "2 or 0", "not 0", "not 2.5", "None or 4", "1 and not 0 or 5",
    "1 in (1, 2)", "3 in [1, 2]", "3 not in [1, 2]", "1.0 in (True, 2)", "(1, 2) in [(1, 2), 3]",
    "[1, 2] in [(1, 2)]", "'ab' in 'cabd'", "'x' not in 'abc'", "None is None", "None is not None",
    "1 is True", "True is True", "2 > 1 and 3 in (3,)", "not 1 in (2,)",
    "torch.float32 in [torch.float16, torch.bfloat16]", "torch.float32 is torch.float",
    "torch.int64 is not torch.long",
]

TORCH = {"float16": np.float16, "bfloat16": "bf16", "float32": np.float32, "float": np.float32,
         "int64": np.int64, "long": np.int64}


class _Torch:
    def __getattr__(self, name):
        return TORCH[name]


def python_value(expr):
    v = eval(expr, {"torch": _Torch()})  # the oracle: Python itself
    return float(v)


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    body = [f"v{i} = {e}" for i, e in enumerate(EXPRS)]
    rets = ", ".join(f"x * v{i}" for i in range(len(EXPRS)))
    x = X.astype(np.float64)
    want = [x * python_value(e) for e in EXPRS]
    errs, src = run_case(tdslc, "x: f32[3, 4]", body, rets, ["f32"] * len(EXPRS), want, {"x": X})
    t.report("folded and/or/not/in/is", errs, src)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
