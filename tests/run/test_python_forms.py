#!/usr/bin/python3
"""tests/run/test_python_forms.py TDSLC: Python's expression and statement forms as forward
passes write them, each with Python's meaning, checked against NumPy on the same inputs:
lists and tuples that hold values (not names), append/extend, comprehensions, conditional
expressions, chained and parenthesised assignment targets, starred targets, None as a value
and optional parameters, default values, helpers whose scalar parameters size shapes,
short-circuit and/or, number literals, f-strings, assert and torch._assert (compile time
and run time), imports, nn modules constructed and called inline, functions without a
result.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and exits
77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, compare_kinds, require_backend, run_outputs, tdslc_run_clean  # noqa: E402

A = np.random.default_rng(11).standard_normal((3,)).astype(np.float32)
X = np.random.default_rng(12).standard_normal((4, 6)).astype(np.float32)
W = np.random.default_rng(13).standard_normal((6, 6)).astype(np.float32)


def f64(a):
    return np.asarray(a, dtype=np.float64)


# (name, program, inputs, the NumPy values of the results, their dtypes). Each program's
# function is `f`; the values are computed in f64 from the same inputs.
CASES = [
    # --- lists and tuples hold values: the regression of issue 30 first ---
    ("list holds the value, not the name",
     "fn f(a: f32[3]) -> f32[3] {\n    x = a * 2\n    xs = [x]\n    x = x * 2\n    return xs[0]\n}\n",
     {"a": A}, lambda a: [2 * a], ["f32"]),
    ("tuple holds the value, not the name",
     "fn f(a: f32[3]) -> (f32[3], f32[3]) {\n    x = a + 1\n    t = (x, a)\n    x = x * 10\n"
     "    u, v = t\n    return u, t[0] + x\n}\n",
     {"a": A}, lambda a: [a + 1, (a + 1) + (a + 1) * 10], ["f32", "f32"]),
    ("collect with + then stack: each step's value",
     "fn f(a: f32[3]) -> f32[4, 3] {\n    ys = []\n    y = a\n    for i in range(4) {\n        y = y * 2 + i\n"
     "        ys = ys + [y]\n    }\n    return torch.stack(ys)\n}\n",
     {"a": A}, lambda a: [np.stack([a * 2, a * 4 + 1, a * 8 + 4, a * 16 + 11])], ["f32"]),
    ("nested lists hold values",
     "fn f(a: f32[3]) -> (f32[3], f32[3]) {\n    x = a\n    xss = [[x, x * 2], [x * 3]]\n    x = x - 100\n"
     "    return xss[0][1], xss[1][0] + xss[0][0]\n}\n",
     {"a": A}, lambda a: [2 * a, 4 * a], ["f32", "f32"]),
    ("a list element read after the loop that built it",
     "fn f(a: f32[3]) -> (f32[3], f32[3]) {\n    h = a\n    hs = [h]\n    for i in range(3) {\n        h = h + 1\n"
     "        hs = hs + [h]\n    }\n    h = h * 0\n    return hs[1], hs[-1] + h\n}\n",
     {"a": A}, lambda a: [a + 1, a + 3], ["f32", "f32"]),
]


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, src, inputs, model, kinds in CASES:
        want = model(*[f64(v) for v in inputs.values()])
        p, outs = run_outputs(tdslc, src, inputs)
        t.report(name, compare_kinds(p, outs, want, kinds), src)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
