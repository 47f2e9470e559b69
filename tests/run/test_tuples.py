#!/usr/bin/python3
"""tests/run/test_tuples.py TDSLC: Python sequences as forward passes write them — tuple
literals, unpacking (q, k, v = x.split(C, dim=-1)), t[i], t[a:b], t + u, names holding
tuples; the ops that return several tensors (split, chunk, tensor_split, unbind,
max/min with a dim and their .values/.indices, broadcast_tensors); a tensor's Python
values (x.shape, x.size(d), x.ndim, x.dim(), x.numel(), x.dtype, x.mT, len(x)), as
nanoGPT's forward binds them (B, T, C = x.size()), with a, b = f(x) and return (a, b); Python's
float('inf'), int(), min()/max() of numbers. Each program runs and is compared with
NumPy on the same inputs.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, compare_kinds, emit_text, require_backend, run_case, run_outputs, test_subset  # noqa: E402

X = np.random.default_rng(5).standard_normal((4, 6)).astype(np.float32)
Y = np.random.default_rng(6).standard_normal((6,)).astype(np.float32)
X[1, 3] = X[1, 0]  # a tie: max(dim) indices are the first, as PyTorch's
I = np.random.default_rng(7).integers(-5, 5, size=(4, 6)).astype(np.int64)


def argfirst(a, axis, best):
    return (a == best(a, axis=axis, keepdims=True)).argmax(axis)


# (name, body lines, the returned expressions, their dtypes, the NumPy values over x [4, 6], y [6], i [4, 6])
CASES = [
    ("split_unpack", ["B, C = x.shape", "q, k, v = x.split(C // 3, dim=-1)"], "q + k * 2, v, x.split(4, 1)[1]",
     ["f32"] * 3, lambda x, y, i: [x[:, 0:2] + 2 * x[:, 2:4], x[:, 4:6], x[:, 4:6]]),
    ("split_sections", ["a, b = torch.split(x, [1, 3])"], "a * 1, b + 0, x.split((2, 4), dim=1)[-1]",
     ["f32"] * 3, lambda x, y, i: [x[0:1], x[1:4], x[:, 2:6]]),
    ("chunk", ["t = x.chunk(4, dim=1)"], "t[0], t[2], torch.cat(t[::-1], dim=1), len(t) * x",
     ["f32"] * 4,
     lambda x, y, i: [x[:, 0:2], x[:, 4:6], np.concatenate([x[:, 4:6], x[:, 2:4], x[:, 0:2]], 1), 3 * x]),
    ("tensor_split", ["a, b, c = torch.tensor_split(x, 3, dim=1)", "d, e, f = x.tensor_split([4, 1], dim=1)"],
     "a + 0, c * 1, d + 0, e + 0, f * 1, x.tensor_split(4)[3] + 0", ["f32"] * 6,
     lambda x, y, i: [x[:, 0:2], x[:, 4:6], x[:, 0:4], x[:, 4:4], x[:, 1:6], x[3:4]]),
    ("unbind", ["r0, r1, r2, r3 = x.unbind()", "s0, s1, s2, s3 = x"], "r0 + r3, torch.stack(x.unbind(1), dim=0), x.unbind(dim=-1)[5], s1 * s2",
     ["f32"] * 4, lambda x, y, i: [x[0] + x[3], x.T, x[:, 5], x[1] * x[2]]),
    ("max_dim", ["v, ix = x.max(dim=1)", "m = torch.min(x, 0, keepdim=True)"],
     "v, ix, m.values, m.indices, x.max(1)[0] + 1, x.max(-1).indices",
     ["f32", "i64", "f32", "i64", "f32", "i64"],
     lambda x, y, i: [x.max(1), argfirst(x, 1, np.max), x.min(0, keepdims=True),
                      argfirst(x, 0, np.min)[None, :], x.max(1) + 1, argfirst(x, 1, np.max)]),
    ("max_dim_ints", ["v, ix = i.max(1)", "w, jx = (i > 0).min(0)"], "v, ix, w, jx", ["i64", "i64", "bool", "i64"],
     lambda x, y, i: [i.max(1), argfirst(i, 1, np.max), (i > 0).min(0), argfirst((i > 0).astype(np.int64), 0, np.min)]),
    ("broadcast_tensors", ["a, b = torch.broadcast_tensors(x, y)"], "a + b, torch.broadcast_tensors(y, x)[0] * 1",
     ["f32"] * 2, lambda x, y, i: [x + y, np.broadcast_to(y, (4, 6))]),
    ("shapes", ["n = x.numel()", "B, T = x.size()", "s = x.shape"],
     "x.view((T, B)), x.reshape(s[1], s[0]), x.view(x.shape) * n, x.view(x.size(1), -1) + x.dim(), "
     "x.mT + x.ndim, x * len(x) + x.size(dim=-1), x.to(y.dtype), x.view(s[::-1]) * 1",
     ["f32"] * 8,
     lambda x, y, i: [x.reshape(6, 4), x.reshape(6, 4), x * 24, x.reshape(6, 4) + 2, x.T + 2, x * 4 + 6, x,
                      x.reshape(6, 4)]),
    ("tuple_literals", ["t = (x, y)", "u = t + (x * 2,)", "a, b, c = u"],
     "a + b, c, torch.cat((x, x), dim=0), torch.stack([x, x * 2])[1], x.permute((1, 0)), x.sum((0, 1)), "
     "torch.zeros((2, 3)) + x[0, 0], (x, y)[1]",
     ["f32"] * 8,
     lambda x, y, i: [x + y, 2 * x, np.concatenate([x, x], 0), 2 * x, x.T, x.sum(), np.zeros((2, 3)) + x[0, 0], y]),
    ("bitwise_operators", ["m = (x > 0) & (i < 2) | (x < -1) ^ (i == 0)", "k = (6 & 3) | (1 << 4) ^ (64 >> 2)"],
     "m, i & 3, i | -8, i ^ i.flip(0), (i & 7) << 2, i >> 1, i * k, ~(x > 0) & (i != 0)",
     ["bool"] + ["i64"] * 6 + ["bool"],
     lambda x, y, i: [((x > 0) & (i < 2)) | ((x < -1) ^ (i == 0)), i & 3, i | -8, i ^ i[::-1], (i & 7) << 2,
                      i >> 1, i * ((6 & 3) | (1 << 4) ^ (64 >> 2)), ~(x > 0) & (i != 0)]),
    ("python_numbers", ["big = float('inf')", "k = int('3') + int(2.9) + max(1, 2, 0) - min(3, 1)"],
     "x.clamp(max=big), where(x > 0, x, float('-inf')), x * k, x + float(\"1e-3\") + float(2), "
     "where(x > 10, float('nan'), x)",
     ["f32"] * 5,
     lambda x, y, i: [x, np.where(x > 0, x, -np.inf), x * 6, x + 1e-3 + 2, x]),
]


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    inputs = {"x": X, "y": Y, "i": I}
    for name, body, exprs, kinds, model in CASES[::test_subset()]:  # the sanitizer pass: a subset
        want = model(X.astype(np.float64), Y.astype(np.float64), I)
        errs, src = run_case(tdslc, "x: f32[4, 6], y: f32[6], i: i64[4, 6]", body, exprs, kinds, want, inputs)
        t.report(name, errs, src)
    # an unpacked result that is not used computes nothing: max(dim)'s indices alone
    src = "fn f(x: f32[4, 6]) -> i64[4] {\n    _, ix = x.max(1)\n    return ix\n}\n"
    p, outs = run_outputs(tdslc, src, {"x": X})
    t.report("unused values", compare_kinds(p, outs, [argfirst(X, 1, np.max)], ["i64"]), src)
    ir = emit_text(tdslc, src, "ir").stdout
    kernels = [ln.split(":", 1)[1].split("lines")[0].split() for ln in ir.splitlines() if ln.startswith("  k")]
    t.check("unused values: one kernel, argmax alone", kernels == [["argmax"]], ir)
    # a user function returning a tuple, indexed and unpacked
    src = ("fn two(a: f32[4, 6]) -> (f32[4, 6], f32[4, 3]) {\n    return a * 2, a[:, :3]\n}\n"
           "fn f(x: f32[4, 6]) -> (f32[4, 3], f32[4, 6]) {\n    t = two(x)\n    p, q = t\n    return t[1], p + q.sum()\n}\n")
    p, outs = run_outputs(tdslc, src, {"x": X})
    x = X.astype(np.float64)
    t.report("function tuples", compare_kinds(p, outs, [x[:, :3], 2 * x + x[:, :3].sum()], ["f32", "f32"]), src)
    # nanoGPT's forms: B, T, C = x.size() and x.shape bind compile-time ints, a, b = f(x)
    # unpacks a function's tuple, return (a, b) returns a parenthesised tuple
    src = ("fn two(a: f32[2, 3, 4]) -> (f32[2, 3, 4], f32[2, 3]) {\n    return (a * 2, a.sum(-1))\n}\n"
           "fn f(x: f32[2, 3, 4]) -> (f32[2, 3, 4], f32[3, 8], f32[6, 4]) {\n"
           "    B, T, C = x.size()\n    B2, T2, C2 = x.shape\n    a, b = two(x)\n"
           "    y = a.view(B * T, C) + b.view(B2 * T2, 1)\n"
           "    return (y.view(B, T, C), x.transpose(0, 1).reshape(T2, B * C2), zeros(B * T, C) + C2 * T)\n}\n")
    x3 = np.random.default_rng(8).standard_normal((2, 3, 4)).astype(np.float32)
    p, outs = run_outputs(tdslc, src, {"x": x3})
    x = x3.astype(np.float64)
    want = [2 * x + x.sum(-1, keepdims=True), x.transpose(1, 0, 2).reshape(3, 8), np.full((6, 4), 12.0)]
    t.report("nanogpt tuple forms", compare_kinds(p, outs, want, ["f32"] * 3), src)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
