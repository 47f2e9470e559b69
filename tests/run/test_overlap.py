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
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import require_backend, same_values, tdslc_run  # noqa: E402

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
    failed = 0
    tmp = tempfile.mkdtemp(prefix="tdsl-overlap-")
    try:
        for name, n, tdsl_stmts, np_stmts in CASES:
            x0 = (np.arange(n, dtype=np.float32) * 1.5 - 2).astype(np.float32)
            path = os.path.join(tmp, "x.npy")
            np.save(path, x0)
            body = "\n".join("  " + s for s in tdsl_stmts)
            src = f"fn f(mut x: f32[{n}]) -> f32[{n}] {{\n{body}\n  return x\n}}"
            p, doc, out_dir = tdslc_run(tdslc, src, args=["--in", f"x={path}"], name=name)
            shutil.rmtree(os.path.dirname(out_dir), ignore_errors=True)
            env = {"x": x0.copy(), "np": np}
            for s in np_stmts:
                exec(s, env)
            want = env["x"]
            if p.returncode != 0:
                err = f"exit {p.returncode}: {p.stderr.decode()}"
            else:
                got = np.array(doc["outputs"][0]["data"], dtype=np.float32)
                err = None if same_values(got, want) else f"got {got.tolist()}, NumPy {want.tolist()}"
            print(f"{'ok  ' if not err else 'FAIL'} {name}")
            if err:
                print("     " + err + "\n     program:\n" + src)
            failed += bool(err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
