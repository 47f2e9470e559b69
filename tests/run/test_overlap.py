#!/usr/bin/python3
"""tests/run/test_overlap.py TDSLC: in-place writes whose value reads the written storage.

PyTorch refuses partial overlaps of dense views (tests/errors covers those); the others
must read each element as it was before the write: `x += x.flip(0)` (flip copies in
PyTorch), strided views that interleave, a value computed from the target, a 0-d
element broadcast over the rest. NumPy's in-place operators buffer overlapping operands
the same way, so the same statements in NumPy are the oracle.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import Tally, require_backend, same_values, tdslc_run_clean  # noqa: E402

CASES = [
    ("flip", 5, ["x += x.flip(0)"], ["x += x[::-1]"]),
    ("flip_slice", 8, ["x[2:] -= x[:6].flip(0)"], ["x[2:] -= x[:6][::-1]"]),
    ("strided", 9, ["x[0:6:2] += x[2:8:2]"], ["x[0:6:2] += x[2:8:2]"]),
    ("computed", 6, ["x[1:] += x[:-1] * 2", "x[1:] = x[:-1] + 1"], ["x[1:] += x[:-1] * 2", "x[1:] = x[:-1] + 1"]),
    ("element", 6, ["x[1:] *= x[0]", "x[3:] = x[2]"], ["x[1:] *= x[0]", "x[3:] = x[2]"]),
    ("reread", 6, ["y = x * 1", "x[2:] += x[:4].flip(0)", "x += y"],
     ["y = x * 1", "x[2:] += x[:4][::-1]", "x += y"]),
]


def main():
    tdslc = os.path.abspath(sys.argv[1])
    require_backend(tdslc)
    tally = Tally()
    for name, n, tdsl_stmts, np_stmts in CASES:
        x0 = (np.arange(n, dtype=np.float32) * 1.5 - 2).astype(np.float32)
        body = "\n".join("  " + s for s in tdsl_stmts)
        src = f"fn f(mut x: f32[{n}]) -> f32[{n}] {{\n{body}\n  return x\n}}"
        p, doc = tdslc_run_clean(tdslc, src, name=name, inputs={"x": x0})
        env = {"x": x0.copy(), "np": np}
        for s in np_stmts:
            exec(s, env)
        want = env["x"]
        if p.returncode != 0:
            errs = [f"exit {p.returncode}: {p.stderr.decode()}"]
        else:
            got = np.array(doc["outputs"][0]["data"], dtype=np.float32)
            errs = [] if same_values(got, want) else [f"got {got.tolist()}, NumPy {want.tolist()}"]
        tally.report(name, errs, program=src)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
