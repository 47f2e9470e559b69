#!/usr/bin/python3
"""tests/run/test_logic.py TDSLC: Python's and, or, not, in, not in, is and is not on
compile-time values (numbers, None, dtypes, strings, tuples and lists), folded by sema:
each program scales a tensor by the folded values and is compared with NumPy, where the
same expressions are evaluated by Python itself. Also every augmented assignment
(+= -= *= /= //= %= **= &= |= ^= <<= >>=) on Python numbers (folded), on tensors (in
place, PyTorch's in-place ops) and on a Python number updated by a tensor (n += x rebinds
n to a new tensor, as Python's int does), and T5's relative-position buckets written as
Hugging Face writes them.

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
J = np.random.default_rng(12).integers(-20, 20, size=(3, 4)).astype(np.int64)

T5_BUCKET = [
    "num_buckets = 32", "max_distance = 128", "relative_buckets = 0", "num_buckets //= 2",
    "relative_buckets += (relative_position > 0).to(torch.long) * num_buckets",
    "relative_position = torch.abs(relative_position)", "max_exact = num_buckets // 2",
    "is_small = relative_position < max_exact",
    "relative_position_if_large = max_exact + (torch.log(relative_position.float() / max_exact) "
    "/ math.log(max_distance / max_exact) * (num_buckets - max_exact)).to(torch.long)",
    "relative_position_if_large = torch.min(relative_position_if_large, "
    "torch.full_like(relative_position_if_large, num_buckets - 1))",
    "relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)",
]


def t5_bucket(rp, num_buckets=32, max_distance=128):
    num_buckets //= 2
    buckets = (rp > 0).astype(np.int64) * num_buckets
    rp = np.abs(rp)
    max_exact = num_buckets // 2
    small = rp < max_exact
    with np.errstate(divide="ignore"):
        large = max_exact + (np.log(rp.astype(np.float32) / np.float32(max_exact))
                             / np.float32(np.log(max_distance / max_exact))
                             * np.float32(num_buckets - max_exact)).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(small, rp, large)

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

    # augmented assignments: Python numbers, tensors in place, a number updated by a tensor
    ops = ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="]
    body, rets, want = [], [], []
    for k, op in enumerate(ops):
        n = 23
        if op in ("/=",):
            n = 23.0
        env = {"n": n}
        exec(f"n {op} 3", env)  # the oracle: Python itself
        body += [f"n{k} = {23.0 if op == '/=' else 23}", f"n{k} {op} 3"]
        rets.append(f"x * n{k}")
        want.append(X.astype(np.float64) * env["n"])
    body += ["i = j.clone()", "i //= 3", "m = j.clone()", "m %= 4", "p = x.clone()", "p **= 2",
             "q = j.clone()", "q &= 6", "q |= 1", "q ^= 3", "r = j.abs()", "r <<= 2", "r >>= 1",
             "s = 0", "s += j * 2", "u = 1.5", "u *= x", "w = x.clone()", "w[1:, 0] //= 0.25"]
    rets += ["i", "m", "p", "q", "r", "s", "u", "w"]
    jj = J.copy()
    w = X.astype(np.float64).copy()
    w[1:, 0] = np.floor(w[1:, 0] / 0.25)
    want += [np.floor_divide(jj, 3), np.mod(jj, 4), X.astype(np.float64) ** 2, ((jj & 6) | 1) ^ 3,
             (np.abs(jj) << 2) >> 1, 2 * jj, 1.5 * X.astype(np.float64), w]
    kinds = ["f32"] * len(ops) + ["i64", "i64", "f32", "i64", "i64", "i64", "f32", "f32"]
    errs, src = run_case(tdslc, "x: f32[3, 4], j: i64[3, 4]", body, ", ".join(rets), kinds, want, {"x": X, "j": J})
    t.report("augmented assignments", errs, src)

    # star unpacking in calls and displays, as transformers writes shapes
    body = ["input_shape = y.shape[:-1]", "hidden_shape = (*input_shape, -1, 2)", "a = y.view(hidden_shape)",
            "b = y.view(*input_shape, 2, 2)", "c = torch.stack([*y], dim=0)",
            "d = torch.cat([*y.unbind(0), y[0]], dim=0).view(*y.shape[:1], 3, -1, 2)",
            "e = torch.zeros(*(2, 3)) + len((*y.shape, *[1, 2]))"]
    yv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y64 = yv.astype(np.float64)
    want = [y64.reshape(2, 3, 2, 2), y64.reshape(2, 3, 2, 2), y64,
            np.concatenate([y64[0], y64[1], y64[0]], 0).reshape(2, 3, -1, 2), np.full((2, 3), 5.0)]
    errs, src = run_case(tdslc, "y: f32[2, 3, 4]", body, "a, b, c, d, e", ["f32"] * 5, want, {"y": yv})
    t.report("star unpacking", errs, src)

    # T5's relative position buckets (transformers' T5Attention._relative_position_bucket)
    src = T5_BUCKET
    rp = (np.arange(16)[None, :] - np.arange(16)[:, None]).astype(np.int64)
    errs, _ = run_case(tdslc, "relative_position: i64[16, 16]", T5_BUCKET, "relative_buckets", ["i64"],
                       [t5_bucket(rp)], {"relative_position": rp})
    t.report("t5 relative position buckets", errs, src)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
