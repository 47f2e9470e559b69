#!/usr/bin/python3
"""tests/run/test_python_forms.py TDSLC: Python's expression and statement forms as forward
passes write them, each with Python's meaning, checked against NumPy on the same inputs:
lists and tuples that hold values (not names), append/extend, comprehensions, conditional
expressions, chained and parenthesised assignment targets, starred targets, None as a value
and optional parameters, default values, helpers whose scalar parameters size shapes,
short-circuit and/or, number literals, string prefixes (r, u, fr), f-strings, assert and torch._assert (compile time
and run time), `with ... as NAME`, functools.reduce, copy.deepcopy of modules, imports, nn modules constructed and called inline, functions without a
result.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and exits
77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, compare_kinds, emit_text, gpu_emit_errors, refusal_errors, require_backend,  # noqa: E402
                    run_outputs, test_subset)

A = np.random.default_rng(11).standard_normal((3,)).astype(np.float32)
X = np.random.default_rng(12).standard_normal((4, 6)).astype(np.float32)
W = np.random.default_rng(13).standard_normal((6, 6)).astype(np.float32)


def f64(a):
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind == "f" else a


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
    # --- list methods: append, extend, insert, +=; a list is one object however many names hold it ---
    ("append in a loop, then stack (the collect-then-stack pattern)",
     "fn f(x: f32[4, 6], w: f32[6, 6]) -> f32[3, 4, 6] {\n    ys = []\n    h = x\n    for i in range(3) {\n"
     "        h = torch.tanh(h @ w)\n        ys.append(h)\n    }\n    return torch.stack(ys)\n}\n",
     {"x": X, "w": W},
     lambda x, w: [np.stack([np.tanh(x @ w), np.tanh(np.tanh(x @ w) @ w), np.tanh(np.tanh(np.tanh(x @ w) @ w) @ w)])],
     ["f32"]),
    ("append, extend, insert and += change every name holding the list",
     "fn f(a: f32[3]) -> (f32[5, 3], f32[3]) {\n    xs = []\n    ys = xs\n    xs.append(a)\n    ys.extend([a * 2, a * 3])\n"
     "    xs.insert(0, a - 1)\n    ys += (a * 4,)\n    t = (a,)\n    u = t\n    t += (a * 5,)\n"
     "    return torch.stack(xs), u[-1] * len(u)\n}\n",
     {"a": A}, lambda a: [np.stack([a - 1, a, 2 * a, 3 * a, 4 * a]), a], ["f32", "f32"]),
    ("list(), tuple(), sum(), any(), all() of iterables",
     "fn f(x: f32[4, 6]) -> (f32[6], f32[6], f32[6]) {\n    rows = list(x)\n    t = tuple(r * 2 for r in rows)\n"
     "    ok = all(d > 0 for d in x.shape) and not any([False, 0])\n"
     "    return sum(rows), sum(t, start=x[0]) * ok, sum([1, 2.5]) + x[1]\n}\n",
     {"x": X}, lambda x: [x.sum(0), x[0] + 2 * x.sum(0), 3.5 + x[1]], ["f32"] * 3),
    # --- comprehensions ---
    ("list comprehension with a filter, over a range",
     "fn f(a: f32[3]) -> f32[2, 3] {\n    return torch.stack([a * i for i in range(4) if i % 2 == 1])\n}\n",
     {"a": A}, lambda a: [np.stack([a, 3 * a])], ["f32"]),
    ("nested comprehension clauses, tuple targets, zip and tensors",
     "fn f(x: f32[4, 6], w: f32[6, 6]) -> (f32[8, 6], f32[4, 6]) {\n"
     "    ps = [r * c for r in x[:2] for c in (1.0, 2.0, 3.0, 4.0)]\n"
     "    qs = [r + s for r, s in zip(x, w[:4])]\n    return torch.stack(ps), torch.stack(qs)\n}\n",
     {"x": X, "w": W},
     lambda x, w: [np.stack([x[i] * c for i in range(2) for c in (1, 2, 3, 4)]), x + w[:4]], ["f32", "f32"]),
    ("a comprehension's variable does not leak; a generator in torch.cat",
     "fn f(x: f32[4, 6]) -> (f32[4, 6], f32[4, 12]) {\n    r = x * 10\n    ys = [r + 1 for r in x]\n"
     "    return r + torch.stack(ys), torch.cat(tuple(x * k for k in range(2)), dim=1)\n}\n",
     {"x": X}, lambda x: [10 * x + x + 1, np.concatenate([0 * x, x], 1)], ["f32", "f32"]),
    # --- conditional expressions: only the branch taken is checked ---
    ("a if c else b picks at compile time, the other branch unchecked",
     "fn f(x: f32[4, 6]) -> (f32[4, 6], f32[4, 6], f32[6]) {\n    B, C = x.shape\n"
     "    a = x * 2 if C == 6 else undefined_name(x)\n    b = (x if B > 10 else -x) if C > 1 else x * 0\n"
     "    return a, b, x[0] if x.ndim == 2 else x\n}\n",
     {"x": X}, lambda x: [2 * x, -x, x[0]], ["f32"] * 3),
    # --- assignment targets ---
    ("chained, parenthesised, bracketed, nested and starred targets",
     "fn f(x: f32[4, 6]) -> (f32[4, 6], f32[4, 6], f32[4, 6], f32[4, 6]) {\n    h = w = x * 2\n    w = w + 1\n"
     "    (b, l) = x.shape\n    [p, q] = x[0], x[1]\n    first, (second, third) = 1, (2, 3)\n"
     "    *lead, last = x.shape\n    one, *rest = (1, 2, 3)\n    k, = [7]\n"
     "    return h, w, x * (b * l + first + second * third + last + len(lead) + rest[1] + k), (p + q).expand(4, 6)\n}\n",
     {"x": X}, lambda x: [2 * x, 2 * x + 1, x * (24 + 1 + 6 + 6 + 1 + 3 + 7), np.broadcast_to(x[0] + x[1], (4, 6))],
     ["f32"] * 4),
    ("trailing commas in parameters, calls, subscripts, lists and tuples",
     "fn f(x: f32[4, 6,], w: f32[6, 6],) -> (f32[4, 6], f32[8, 6],) {\n    t = x,\n"
     "    y = torch.cat([x, x,], dim=0,)\n    return t[0][0:4, :,] + w[:4,], y,\n}\n",
     {"x": X, "w": W}, lambda x, w: [x + w[:4], np.concatenate([x, x], 0)], ["f32", "f32"]),
    # --- None, optional parameters, default values ---
    ("None as a value; optional tensor parameters and defaults in a helper",
     "fn attend(q: f32[4, 6], k: f32[4, 6], mask: f32[4, 4] | None = None, scale: float = 1.0) -> f32[4, 4] {\n"
     "    s = q @ k.t() * scale\n    if mask is not None {\n        s = s + mask\n    }\n    return s\n}\n"
     "fn f(x: f32[4, 6], w: f32[6, 6]) -> (f32[4, 4], f32[4, 4], f32[4, 4]) {\n    m = None\n"
     "    bias = (x @ w)[:, :4]\n    return attend(x, x), attend(x, x, bias, scale=0.5), attend(x, x, mask=m, scale=2)\n}\n",
     {"x": X, "w": W},
     lambda x, w: [x @ x.T, 0.5 * (x @ x.T) + (x @ w)[:, :4], 2 * (x @ x.T)], ["f32"] * 3),
    ("typing's Optional[T], Union[T, None] and typing.Optional[T] on a helper's parameters, any tensor dtype",
     "class Twice(nn.Module) {\n    fn __init__(self) {\n        super().__init__()\n    }\n"
     "    fn forward(self, x) {\n        return x * 2\n    }\n}\n"
     "fn g(x: torch.Tensor, m: Optional[torch.Tensor] = None, b: Optional[int] = None,\n"
     "     c: Optional[Tuple[int, int]] = None, d: Union[None, float] = None, f: Optional[\"Twice\"] = None,\n"
     "     e: typing.Optional[torch.Tensor] = None, n: Optional[nn.Module] = None) -> torch.Tensor {\n"
     "    if m is not None {\n        x = x.masked_fill(m, 0.0)\n    }\n"
     "    if b is not None {\n        x = x + b\n    }\n    if c is not None {\n        x = x + c[0] * c[1]\n    }\n"
     "    if d is not None {\n        x = x * d\n    }\n    if f is not None {\n        x = f(x)\n    }\n"
     "    if e is not None {\n        x = x + e\n    }\n    if n is not None {\n        x = n(x)\n    }\n"
     "    return x\n}\n"
     "fn f(x: f32[4, 6]) -> (f32[4, 6], f32[4, 6], f32[4, 6], f32[4, 6]) {\n"
     "    return g(x), g(x, x > 0), g(x, b=1, c=(2, 3), d=0.5), g(x, f=Twice(), e=x, n=nn.ReLU())\n}\n",
     {"x": X}, lambda x: [x, np.where(x > 0, 0, x), (x + 7) * 0.5, np.maximum(3 * x, 0)], ["f32"] * 4),
    ("results typed (T, None); a helper without a result writes its mut parameter",
     "fn two(x: f32[4, 6]) -> (f32[4, 6], None) {\n    return x * 3, None\n}\n"
     "fn fill(mut o: f32[4, 6], v: f32[4, 6]) {\n    o.copy_(v + 1)\n}\n"
     "fn clear(mut o: f32[4, 6]) -> None {\n    o[0] = 0.0\n    return\n}\n"
     "fn f(x: f32[4, 6]) -> (f32[4, 6], f32[4, 6]) {\n    y, nothing = two(x)\n    assert nothing is None\n"
     "    o = torch.zeros(4, 6)\n    fill(o, y)\n    clear(o)\n    return y, o\n}\n",
     {"x": X}, lambda x: [3 * x, np.concatenate([np.zeros((1, 6)), 3 * x[1:] + 1])], ["f32", "f32"]),
    # --- helpers: scalar parameters are compile-time values, sizes included ---
    ("a helper's scalar parameters size its types and pick its branches",
     "fn down(x: f32[4, 6], stride: int, pad: int = 0) -> f32[4, (6 + 2 * pad - 1) // stride + 1] {\n"
     "    y = F.pad(x, (pad, pad))\n    return y[:, ::stride]\n}\n"
     "fn odd(x: f32[4, 6], k: int) -> f32[4, 6] {\n    if k % 2 {\n        return x * k\n    }\n    return -x\n}\n"
     "fn f(x: f32[4, 6]) -> (f32[4, 3], f32[4, 4], f32[4, 6]) {\n"
     "    return down(x, 2), down(x, 2, pad=1), odd(x, 3) + odd(x, 2)\n}\n",
     {"x": X}, lambda x: [x[:, ::2], np.pad(x, ((0, 0), (1, 1)))[:, ::2], 3 * x - x], ["f32"] * 3),
    ("a helper's untyped default (k=3) and a repeat count",
     "fn rep(x: f32[4, 6], n=2, scale=0.5) -> f32[4 * n, 6] {\n    return x.repeat(n, 1) * scale\n}\n"
     "fn f(x: f32[4, 6]) -> (f32[8, 6], f32[12, 6]) {\n    return rep(x), rep(x, 3, scale=1.0)\n}\n",
     {"x": X}, lambda x: [0.5 * np.tile(x, (2, 1)), np.tile(x, (3, 1))], ["f32", "f32"]),
    # --- and/or short-circuit, literals, f-strings ---
    ("or/and do not check what they skip; hex, octal, binary and underscores",
     "fn f(a: f32[3]) -> f32[3] {\n    k = 1 or undefined_name\n    j = 0 and undefined_name.x\n"
     "    n = 0x1F + 0o17 + 0b101 + 1_000 + 0xff_ff\n    return a * k + j + n + 1_0.5e-1\n}\n",
     {"a": A}, lambda a: [a + 31 + 15 + 5 + 1000 + 65535 + 1.05], ["f32"]),
    ("assert and torch._assert that hold at compile time; a message is not evaluated",
     "fn f(a: f32[3]) -> f32[3] {\n    assert a.shape == (3,), f\"bad {undefined_name}\"\n"
     "    assert a.ndim == 1\n    torch._assert(len(a) == 3, \"len\")\n    assert (a > -100).all(), f\"{a.shape}\"\n"
     "    torch._assert(a.sum() < 1e9, \"sum\")\n    return a\n}\n",
     {"a": A}, lambda a: [a], ["f32"]),
    # --- imports, and modules as forward passes spell them ---
    ("import lines bind the names a pasted file uses",
     "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as Fn\nfrom torch import cat, nn as tnn\n"
     "from math import sqrt, pi\nfrom torch.nn import functional\nfrom einops import rearrange\nfrom typing import Optional\n"
     "fn f(x: f32[4, 6]) -> f32[4, 12] {\n    y = Fn.relu(x) * sqrt(4.0) + pi + functional.gelu(x) + math.tau\n"
     "    return cat([y, tnn.functional.silu(x)], dim=1)\n}\n",
     {"x": X},
     lambda x: [np.concatenate([np.maximum(x, 0) * 2 + np.pi + gelu(x) + 2 * np.pi, x / (1 + np.exp(-x))], 1)],
     ["f32"]),
    ("nn modules constructed and called inline, or bound first; inplace=True",
     "import torch.nn as nn\nfn f(x: f32[4, 6], t: i64[4]) -> (f32[4, 6], f32[4, 6], f32[], f32[4, 6], f32[4, 6], f32[4, 6], f32[4, 6]) {\n"
     "    act = nn.GELU(approximate='tanh')\n    h = nn.ReLU(inplace=True)(x * 1)\n"
     "    loss = torch.nn.CrossEntropyLoss(label_smoothing=0.0)(x, t)\n    z = x * 1\n    F.silu(z, inplace=True)\n"
     "    s = nn.Softmax(dim=-1)(x)\n    d = nn.Dropout(0.1)(x)\n"
     "    return act(x), h, loss, nn.Identity()(z), s, nn.Flatten()(x.view(4, 2, 3)), nn.LeakyReLU(0.2)(x)\n}\n",
     {"x": X, "t": np.array([0, 5, 2, 3], dtype=np.int64)},
     lambda x, t: [gelu_tanh(x), np.maximum(x, 0), cross_entropy(x, t), x / (1 + np.exp(-x)), softmax(x), x,
                   np.where(x > 0, x, 0.2 * x)],
     ["f32"] * 7),
    ("chained comparisons, docstrings, str parameters of a helper, stdlib imports",
     "import os\nimport warnings\nfrom dataclasses import dataclass\n"
     "fn norm(x: f32[4, 6], data_format: str = \"channels_last\") -> f32[4, 6] {\n"
     "    \"\"\"Normalizes x.\n\n    Args: x (the input, \u2206-free).\n    \"\"\"\n"
     "    if data_format not in [\"channels_last\", \"channels_first\"] {\n        raise NotImplementedError\n    }\n"
     "    if data_format == \"channels_last\" {\n        return x - x.mean(-1, keepdim=True)\n    }\n"
     "    return x - x.mean(0, keepdim=True)\n}\n"
     "fn f(x: f32[4, 6]) -> (f32[4, 6], f32[4, 6]) {\n    B, C = x.shape\n    assert 0 < B <= C < 100\n"
     "    k = 2 if 1 < B < C else 0\n    return norm(x) * k, norm(x, \"channels_first\")\n}\n",
     {"x": X}, lambda x: [2 * (x - x.mean(-1, keepdims=True)), x - x.mean(0, keepdims=True)], ["f32", "f32"]),
    ("string prefixes: r (raw: a backslash is text), u, fr/rf, on docstrings and strings",
     r'''fn f(x: f32[4, 6]) -> (f32[4, 6], f32[4, 6], f32[6, 4]) {
    r"""A raw docstring, as timm and PyTorch write them: \d+ and \" stay text."""
    n = len(r"a\b") * 100 + len(r'a\'b') * 10 + len(fr"x\{1}") + len(U"ab") * 1000 + len(Rf'{2}\t') * 10000
    return F.gelu(x, approximate=r'tanh'), F.gelu(x, approximate=u"none") * n, torch.einsum(R"ij->ji", x)
}
''',
     {"x": X},
     lambda x: [gelu_tanh(x),
                gelu(x) * (len(r"a\b") * 100 + len(r'a\'b') * 10 + len(fr"x\{1}") + len(U"ab") * 1000
                           + len(Rf'{2}\t') * 10000),
                x.T],
     ["f32"] * 3),
    ("with ... as NAME (None of no_grad, nullcontext's enter_result), functools.reduce of function values",
     "import contextlib\nimport functools\nfrom functools import reduce\n"
     "fn mul(a, b) { return a * b }\n"
     "fn f(x: f32[4, 6]) -> (f32[4, 6], f32[6], f32[6], f32[6]) {\n"
     "    with torch.no_grad() as g, contextlib.nullcontext(x * 2) as y, torch.autocast('cpu', enabled=False) {\n"
     "        assert g is None\n        z = y + 1\n    }\n"
     "    with contextlib.nullcontext(enter_result=3) as k {\n        z = z * k\n    }\n"
     "    n = functools.reduce(lambda a, b: a * b, x.shape, 1)\n"
     "    assert n == 24 and reduce(lambda a, b: a + b, [1, 2, 3]) == 6\n"
     "    return (z, reduce(lambda a, b: a - b, [x[0], x[1], x[2]]), functools.reduce(mul, (x[1], x[3]), x[2]),\n"
     "            reduce(torch.maximum, list(x)))\n}\n",
     {"x": X}, lambda x: [(x * 2 + 1) * 3, x[0] - x[1] - x[2], x[2] * x[1] * x[3], x.max(0)], ["f32"] * 4),
    ("copy.deepcopy of an instance holding a Sequential and a ModuleList: the parameters set carried over, "
     "each copy's own after",
     "import torch.nn as nn\nimport copy\n"
     "class Block(nn.Module) {\n    fn __init__(self) {\n        super().__init__()\n"
     "        self.mlp = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6))\n"
     "        self.heads = nn.ModuleList([nn.Linear(6, 2), nn.Linear(6, 6)])\n    }\n"
     "    fn forward(self, x) { return self.heads[1](self.mlp(x)) }\n}\n"
     "fn f(x: f32[4, 6], w: f32[6, 6]) -> (f32[4, 6], f32[4, 6], f32[4, 6]) {\n    a = Block()\n"
     "    a.mlp[0].weight, a.mlp[0].bias, a.mlp[2].weight, a.mlp[2].bias = w, w[0], w, w[1]\n"
     "    a.heads[1].weight, a.heads[1].bias = w.t(), w[2]\n    c = copy.deepcopy(a)\n"
     "    c.mlp[2].weight = w * 2\n    layers = nn.ModuleList([copy.deepcopy(a) for _ in range(2)])\n"
     "    layers[0].heads[1].bias = w[3]\n    return (a(x), c(x), layers[0](x))\n}\n",
     {"x": X, "w": W},
     lambda x, w: [(lambda h: h @ w + w[2])(np.maximum(x @ w.T + w[0], 0) @ w.T + w[1]),
                   (lambda h: h @ w + w[2])(np.maximum(x @ w.T + w[0], 0) @ (2 * w).T + w[1]),
                   (lambda h: h @ w + w[3])(np.maximum(x @ w.T + w[0], 0) @ w.T + w[1])],
     ["f32"] * 3),
    ("parameterless norms as nn modules, and a module's attributes",
     "import torch.nn as nn\nfn f(x: f32[4, 6]) -> (f32[4, 6], f32[4, 6]) {\n"
     "    norm = nn.LayerNorm(6, elementwise_affine=False, eps=1e-6)\n    drop = nn.Dropout(0.25)\n"
     "    p = drop.p if not drop.training else 1.0\n    return norm(x), x * p\n}\n",
     {"x": X}, lambda x: [(x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-6), 0.25 * x],
     ["f32", "f32"]),
]


def gelu(x):
    from math import erf
    return x * 0.5 * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def cross_entropy(x, t):
    lp = np.log(softmax(x))
    return -lp[np.arange(len(t)), t].mean()


# (name, program, inputs, exit status, the first line tdslc prints on stderr after the path):
# checks that fail at run time (exit 3, located at the check) or at compile time (exit 1)
FAILURES = [
    ("a run-time assert that fails",
     "fn f(a: f32[3]) -> f32[3] {\n    assert (a > 0.5).all(), f\"need positive, shape {a.shape}\"\n    return a\n}\n",
     {"a": A}, 3, "2:12: error: AssertionError: need positive, shape torch.Size([3])"),
    ("torch._assert at run time, a % in its message",
     "fn f(a: f32[3]) -> f32[3] {\n    torch._assert(a[0] > 5, \"first 100% must be > 5\")\n    return a * 2\n}\n",
     {"a": A}, 3, "2:19: error: AssertionError: first 100% must be > 5"),
    ("an assert without a message",
     "fn f(a: f32[3]) -> f32[3] {\n    y = a * 2\n    assert y.sum() > 1000\n    return y\n}\n",
     {"a": A}, 3, "3:12: error: AssertionError"),
    ("a compile-time assert that fails, its f-string message",
     "fn f(a: f32[3]) -> f32[3] {\n    B = a.shape[0]\n    assert B % 2 == 0, f\"{B=} is odd, {a.dtype}, {0.5:.1%}\"\n"
     "    return a\n}\n",
     {"a": A}, 1, "3:12: error: AssertionError: B=3 is odd, torch.float32, 50.0%"),
    ("raise in the branch taken",
     "fn f(a: f32[3]) -> f32[3] {\n    if a.ndim != 2 {\n        raise ValueError(f\"expected 2 dims, got {a.ndim}\")\n"
     "    }\n    return a\n}\n",
     {"a": A}, 1, "3:9: error: ValueError: expected 2 dims, got 1"),
    ("cross_entropy's target out of range: PyTorch's words",
     "fn f(x: f32[4, 6], t: i64[4]) -> f32[] {\n    return F.cross_entropy(x, t * 33)\n}\n",
     {"x": X, "t": np.array([0, 3, 1, 2], dtype=np.int64)}, 3, "2:12: error: Target 99 is out of bounds."),
    ("nll_loss's target out of range",
     "fn f(x: f32[4, 6], t: i64[4]) -> f32[4] {\n    return F.nll_loss(x, t - 1, reduction='none')\n}\n",
     {"x": X, "t": np.array([0, 3, 1, 2], dtype=np.int64)}, 3, "2:12: error: Target -1 is out of bounds."),
]


def flat_sum(tdslc, t):
    """A flat expression of 20,000 terms compiles and computes, left to right, NumPy's f32 sum."""
    n = 20000
    terms = " + ".join(f"x * {i % 7}" if i % 3 == 0 else "x" for i in range(n))
    src = f"fn f(x: f32[3]) -> f32[3] {{\n    return {terms}\n}}\n"
    acc = np.zeros(3, np.float32)
    for i in range(n):
        acc = (acc + (A * np.float32(i % 7) if i % 3 == 0 else A)).astype(np.float32)
    p, outs = run_outputs(tdslc, src, {"x": A})
    errs = compare_kinds(p, outs, [acc.astype(np.float64)], ["f32"])
    t.report("a flat sum of 20,000 terms", errs)


def gpu_code(tdslc, t):
    """Every form compiles for the GPU: --emit=cuda and --emit=ptx of each program (a run-time
    assert included), and nvcc and ptxas accept the assert's when they are installed."""
    t.report("every form emits CUDA C and PTX",
             [f"{name} {e}" for name, src, *_ in CASES + [(n, s) for n, s, *_ in FAILURES if _[1] == 3]
              for e in gpu_emit_errors(tdslc, src, ["--fn", "f"])])
    nvcc, ptxas = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc", shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if not (os.access(nvcc, os.X_OK) and os.access(ptxas, os.X_OK)):
        print("skip nvcc and ptxas of a run-time assert (no CUDA toolkit)")
        return
    src = FAILURES[0][1]
    with tempfile.TemporaryDirectory() as d:
        errs = []
        include = subprocess.run([tdslc, "--print-include-dir"], capture_output=True, text=True).stdout.strip()
        for kind, tool in (("cuda", [nvcc, "-c", "-I", include]),
                           ("ptx", [ptxas, "-arch=sm_80"])):
            path = os.path.join(d, "a." + ("cu" if kind == "cuda" else "ptx"))
            with open(path, "w") as f:
                f.write(emit_text(tdslc, src, kind).stdout)
            p = subprocess.run(tool + [path, "-o", os.path.join(d, "a.o")], capture_output=True, timeout=300)
            if p.returncode != 0:
                errs.append(f"{tool[0]}: {p.stderr.decode(errors='replace')[:500]}")
        t.report("nvcc and ptxas compile a run-time assert", errs)


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, src, inputs, model, kinds in CASES[::test_subset()]:  # the sanitizer pass: a subset
        want = model(*[f64(v) for v in inputs.values()])
        p, outs = run_outputs(tdslc, src, inputs)
        t.report(name, compare_kinds(p, outs, want, kinds), src)
    for name, src, inputs, status, first in FAILURES:
        t.report(name, refusal_errors(tdslc, src, inputs, first, status), src)
    flat_sum(tdslc, t)
    if os.environ.get("TDSL_BACKEND", "llvm") == "llvm":  # once, not per backend: the GPU code of each form
        gpu_code(tdslc, t)
    # a function without a result: its C entry has no result parameter
    src = "fn g(mut o: f32[3], a: f32[3]) {\n    o.copy_(a)\n}\n"
    header = emit_text(tdslc, src, "header").stdout
    t.check("a function without a result has no out parameter",
            "int g(tdsl_tensor *o, const tdsl_tensor *a);" in header, header)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
