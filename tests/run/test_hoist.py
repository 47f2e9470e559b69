#!/usr/bin/python3
"""tests/run/test_hoist.py TDSLC: loop-invariant lets move out of their loops (ir/hoist.c).

  - sigmoid(x) * exp(y), x [R, 1] broadcast over y [R, C]: in `--emit=kernels`, the let
    loading x[i0] comes before the loop over the columns (it was inside it: gcc then left
    that loop scalar), and the let loading y stays inside it;
  - the same program and three that keep accumulators and values of the inner index
    in their loops (a row sum of a broadcast product, a cumsum of one, a running max
    under a broadcast), each run and compared with NumPy: a let moved that should not
    (an accumulator's start, a value of the loop's index) changes their results.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, run_outputs  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
BACKEND = require_backend(TDSLC)
T = Tally()

SRC = """fn bcast(x: f32[64, 1], y: f32[64, 16]) -> f32[64, 16] {
    return torch.sigmoid(x) * torch.exp(y)
}
fn rowsum(x: f32[8, 1000], y: f32[8, 1]) -> f32[8] {
    return (x * torch.exp(y)).sum(-1)
}
fn cum(x: f32[6, 50], y: f32[6, 1]) -> f32[6, 50] {
    return torch.cumsum(x * torch.tanh(y), 1)
}
fn rowmax(x: f32[5, 33], y: f32[1, 33]) -> f32[5] {
    return (x + torch.exp(y)).amax(-1)
}"""

# the structure: the x[i0] let before `for i1`, the y[...] let after it
p = emit_text(TDSLC, SRC, "kernels", ["--fn", "bcast"])
if p.returncode != 0:
    T.report("bcast: x's let before the inner loop", [f"exit {p.returncode}: {p.stderr.strip()[:800]}"], SRC)
else:
    lines = p.stdout.splitlines()
    inner = next((i for i, ln in enumerate(lines) if re.match(r"\s*for i1 in", ln)), None)
    xload = next((i for i, ln in enumerate(lines) if re.match(r"\s*let l\d+: f32 = b0\[i0\]$", ln)), None)
    yload = next((i for i, ln in enumerate(lines) if re.match(r"\s*let l\d+: f32 = b1\[", ln)), None)
    T.check("bcast: x's let before the inner loop, y's inside it",
            inner is not None and xload is not None and yload is not None and xload < inner < yload,
            f"lines: inner loop {inner}, x load {xload}, y load {yload}\n" + p.stdout)

rng = np.random.default_rng(27)


def f64(a):
    return a.astype(np.float64)


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


CASES = [
    ("bcast", {"x": (64, 1), "y": (64, 16)}, lambda x, y: sigmoid(f64(x)) * np.exp(f64(y))),
    ("rowsum", {"x": (8, 1000), "y": (8, 1)}, lambda x, y: (f64(x) * np.exp(f64(y))).sum(-1)),
    ("cum", {"x": (6, 50), "y": (6, 1)}, lambda x, y: np.cumsum(f64(x) * np.tanh(f64(y)), 1)),
    ("rowmax", {"x": (5, 33), "y": (1, 33)}, lambda x, y: (f64(x) + np.exp(f64(y))).max(-1)),
]
for fn, shapes, want_of in CASES:
    ins = {k: rng.uniform(-2, 2, s).astype(np.float32) for k, s in shapes.items()}
    want = want_of(**ins)
    p, outs = run_outputs(TDSLC, SRC, ins, fn=fn, backend=BACKEND)
    if p.returncode != 0 or len(outs) != 1:
        T.report(f"{fn} runs", [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:800]}"], SRC)
        continue
    err = float(np.max(np.abs(f64(outs[0]) - want) / (1 + np.abs(want))))
    T.check(f"{fn} matches NumPy", outs[0].shape == want.shape and err <= 2e-5, f"shape {outs[0].shape}, error {err}")
sys.exit(T.summary())
