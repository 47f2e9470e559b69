#!/usr/bin/python3
"""tests/run/test_python_defs.py TDSLC: the Python that model code pastes as it is, with
Python's meaning, against NumPy on the same inputs, a few programs each checking several
forms at once (one tdslc run per program): a def inside a function (a local helper over the
enclosing locals, untyped parameters, defaults evaluated where it stands, passed to a
helper's Callable), a parameter named like a function of the file, module-level constants
without `const` and defaults computed from them, nested dict stores and set displays, a
user fn or a local def as a value passed on, a module chosen by a conditional expression,
transformers' ACT2FN; then the refusals, each one located line.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and exits
77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, compare_kinds, gpu_emit_errors, refusal_errors, require_backend, run_outputs,  # noqa: E402
                    test_subset)

RNG = np.random.default_rng(31)
X = RNG.standard_normal((2, 6)).astype(np.float32)
W = RNG.standard_normal((6, 6)).astype(np.float32)


def f64(a):
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def erf(x):
    return np.vectorize(math.erf)(x)


def gelu(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def local_defs(x, w):
    s = 2.0
    a = x @ w * 0.5 + 3
    heads = x.reshape(2, -1, 2).transpose(0, 2, 1)
    z = x.copy()
    z[0] = 5.0
    outs = np.stack([(x + i) * 2 for i in range(3)])
    return [a, heads, x * s, x + 1, x - 1, z, outs, np.tanh(x) * s + x * 3]


DEFS = """DEFAULT = 3
fn apply(f: Callable, x: f32[2, 6]) -> f32[2, 6] { return f(x) }
fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 2, 3], f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6],
                                     f32[3, 2, 6], f32[2, 6]) {
    n_heads = 2
    fn shape(states) {
        \"\"\"projection\"\"\"
        return states.view(2, -1, n_heads)
    }
    fn proj(h, k=DEFAULT, scale: float = 0.5) {
        y = h @ w
        return y * scale + k
    }
    s = 10.0
    fn g(t) { return t * s }
    s = 2.0
    fn two(t) { return t + 1, (t - 1, t) }
    a, (b, _) = two(x)
    fn fill(y) { y[0] = 5.0 }
    z = x.clone()
    fill(z)
    outs = []
    fn step(t, acc) {
        acc.append(t * 2)
        return acc
    }
    for i in range(3) {
        outs = step(x + i, outs)
    }
    fn outer(t, act=torch.tanh) {
        fn inner(u) { return act(u) * s }
        return inner(t) + t * DEFAULT
    }
    return proj(x), shape(x).transpose(1, 2), apply(g, x), a, b, z, torch.stack(outs), outer(x)
}
"""


def names(x, w):
    return [np.maximum(x, 0), x * 2 + 4 * 2, x * (1e-6 * 2) + 4, (x * 2 * 3 + 2 + 1) * 2]


NAMES = """DEFAULT_DIM = 4
SCALE = DEFAULT_DIM // 2
fn act(x: f32[2, 6]) -> f32[2, 6] { return x * 100 }
fn apply(x: f32[2, 6], act: Callable) -> f32[2, 6] { return act(x) }
fn scaled(x: f32[2, 6], act: int, dim=DEFAULT_DIM) -> f32[2, 6] { return x * act + dim * SCALE }
fn eps_of(x: f32[2, 6], eps=1e-6 * 2, dim: int = DEFAULT_DIM) -> f32[2, 6] { return x * eps + dim }
fn kw(x: f32[2, 6], *args, scale=1, **kwargs) -> torch.Tensor {
    extra = 100 if "padding_mask" in kwargs else 0
    return x * kwargs["a"] * scale + len(kwargs) + len(args) + extra
}
fn times(t: torch.Tensor, n: int) -> torch.FloatTensor { return t * n }
fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6]) {
    return apply(x, F.relu), scaled(x, 2), eps_of(x), times(kw(x, 7, a=2, b=3, scale=3), 2)
}
"""

def dicts(x, w):
    cache = {"layer": {}}
    cache["layer"]["k"] = x * 2
    d = {"a": {"b": {}}}
    d["a"]["b"]["c"] = x + 1
    d["a"]["b"]["c"] += x
    y = x
    for v in {1, 2, 2}:
        y = y + v
    s = {3, 1}
    y = y + 1  # `if {}` is false, `if s` true
    ok = 3 in s and 2 not in {1, 4} and {1, 3} == s and {"q": 1} == {"q": 1.0} and {1: 2} != {1: 3}
    return [cache["layer"]["k"], d["a"]["b"]["c"], y * len(s) * ok, x * len(set([1, 1, 2])) * len(cache)]


DICTS = """fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6]) {
    cache = {"layer": {}}
    cache["layer"]["k"] = x * 2
    d = {"a": {"b": {}}}
    d["a"]["b"]["c"] = x + 1
    d["a"]["b"]["c"] += x
    y = x
    for v in {1, 2, 2} {
        y = y + v
    }
    s = {3, 1}
    e = {}
    if e {
        y = y * 100
    }
    if s {
        y = y + 1
    }
    ok = 3 in s and 2 not in {1, 4} and {1, 3} == s and {"q": 1} == {"q": 1.0} and {1: 2} != {1: 3}
    return cache["layer"]["k"], d["a"]["b"]["c"], y * len(s) * ok, x * len(set([1, 1, 2])) * len(cache)
}
"""

def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# transformers' activations as its classes compute them (transformers/activations.py)
HF_ACTS = {
    "gelu": gelu,
    "gelu_10": lambda x: np.clip(gelu(x), -10, 10),
    "gelu_fast": lambda x: 0.5 * x * (1.0 + np.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x))),
    "gelu_new": gelu_tanh,
    "gelu_python": gelu,
    "gelu_pytorch_tanh": gelu_tanh,
    "gelu_accurate": gelu_tanh,
    "laplace": lambda x: 0.5 * (1.0 + erf((x - 0.707107) / (0.282095 * math.sqrt(2.0)))),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.01 * x),
    "linear": lambda x: x,
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "quick_gelu": lambda x: x * sigmoid(1.702 * x),
    "relu": lambda x: np.maximum(x, 0),
    "relu2": lambda x: np.maximum(x, 0) ** 2,
    "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": sigmoid,
    "silu": lambda x: x * sigmoid(x),
    "swish": lambda x: x * sigmoid(x),
    "tanh": np.tanh,
}


def acts(x, w):
    return [np.stack([HF_ACTS[k](x * 3) for k in HF_ACTS]), HF_ACTS["gelu_new"](x) + HF_ACTS["relu"](x)]


ACTS = ("from transformers.activations import ACT2FN, get_activation as get_act\n"
        "fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[%d, 2, 6], f32[2, 6]) {\n"
        "    names = %r\n"
        "    return torch.stack([ACT2FN[n](x * 3) for n in names]), get_act('gelu_new')(x) + ACT2FN['relu'](x)\n"
        "}\n") % (len(HF_ACTS), list(HF_ACTS))

def chunking(x, w):
    return [np.tanh(x @ w)] * 2 + [x * x * 2]


# transformers' apply_chunking_to_forward (pytorch_utils.py) as written but for braces and
# its result annotated torch.Tensor, called with a method of BertLayer (feed_forward_chunk,
# a fn inside the forward's fn, as a bound method closes over self), a lambda and *args
CHUNKING = 'import inspect\nfrom typing import Callable\n\nfn apply_chunking_to_forward(\n    forward_fn: Callable, chunk_size: int, chunk_dim: int, *input_tensors\n) -> torch.Tensor {\n    assert len(input_tensors) > 0, f"{input_tensors} has to be a tuple/list of tensors"\n\n    # inspect.signature exist since python 3.5 and is a python method -> no problem with backward compatibility\n    num_args_in_forward_chunk_fn = len(inspect.signature(forward_fn).parameters)\n    if num_args_in_forward_chunk_fn != len(input_tensors) {\n        raise ValueError(\n            f"forward_chunk_fn expects {num_args_in_forward_chunk_fn} arguments, but only {len(input_tensors)} input "\n            "tensors are given"\n        )\n    }\n\n    if chunk_size > 0 {\n        tensor_shape = input_tensors[0].shape[chunk_dim]\n        for input_tensor in input_tensors {\n            if input_tensor.shape[chunk_dim] != tensor_shape {\n                raise ValueError(\n                    f"All input tenors have to be of the same shape: {tensor_shape}, "\n                    f"found shape {input_tensor.shape[chunk_dim]}"\n                )\n            }\n        }\n\n        if input_tensors[0].shape[chunk_dim] % chunk_size != 0 {\n            raise ValueError(\n                f"The dimension to be chunked {input_tensors[0].shape[chunk_dim]} has to be a multiple of the chunk "\n                f"size {chunk_size}"\n            )\n        }\n\n        num_chunks = input_tensors[0].shape[chunk_dim] // chunk_size\n\n        # chunk input tensor into tuples\n        input_tensors_chunks = tuple(input_tensor.chunk(num_chunks, dim=chunk_dim) for input_tensor in input_tensors)\n        # apply forward fn to every tuple\n        output_chunks = tuple(forward_fn(*input_tensors_chunk) for input_tensors_chunk in zip(*input_tensors_chunks))\n        # concatenate output at same dimension\n        return torch.cat(output_chunks, dim=chunk_dim)\n    }\n\n    return forward_fn(*input_tensors)\n}\n\nfn f(x: f32[2, 6, 4], w: f32[4, 4]) -> (f32[2, 6, 4], f32[2, 6, 4], f32[2, 6, 4]) {\n    fn feed_forward_chunk(attention_output) {\n        return torch.tanh(attention_output @ w)\n    }\n    a = apply_chunking_to_forward(feed_forward_chunk, 0, 1, x)\n    b = apply_chunking_to_forward(feed_forward_chunk, 2, 1, x)\n    c = apply_chunking_to_forward(lambda p, q: p * q, 3, 1, x, x * 2)\n    return a, b, c\n}\n'


def partials(x, g):
    ls = lambda init: x + (x * 2 * g if init else x * 2) + (x + 2 * x)  # noqa: E731
    return [ls(True), ls(False)]


PARTIALS = 'from functools import partial\nimport functools\nfn layer_scale(x: f32[B, N, C], gamma: f32[C], inplace: bool = False) -> f32[B, N, C] {\n    return x.mul_(gamma) if inplace else x * gamma\n}\nfn block(x: f32[2, 3, 4], ls1_gamma: f32[4] | None, init_values: float | None = None) -> f32[2, 3, 4] {\n    ls1 = partial(layer_scale, gamma=ls1_gamma) if init_values else nn.Identity()\n    ls2 = functools.partial(torch.add, x)\n    return x + ls1(x * 2) + ls2(x, alpha=2)\n}\nfn f(x: f32[2, 3, 4], w: f32[4]) -> (f32[2, 3, 4], f32[2, 3, 4]) {\n    return block(x, w, 1e-5), block(x, None)\n}\n'


def bound_now(x, w):
    return [2 * x + x, 2 * x * (x + 1), np.stack([w[:2] * (x + i) for i in range(3)]), w[:2] - 2 * x]


# a partial's bound arguments are read where it is made, as Python's are (they were read
# where it was called: p(x) after `x = x * 2` added the new x, silently)
BOUND_NOW = 'from functools import partial\nfn scale(t: f32[A, B], g: f32[A, B]) -> f32[A, B] { return t * g }\nfn apply(f: Callable, t: f32[2, 6]) -> f32[2, 6] { return f(t) }\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[3, 2, 6], f32[2, 6]) {\n    p = partial(torch.add, other=x)\n    q = partial(scale, g=x + 1)\n    ps = []\n    for i in range(3) {\n        ps.append(partial(torch.mul, other=x + i))\n    }\n    x = x * 2\n    a = p(x)\n    b = apply(q, x)\n    c = torch.stack([g(w[:2]) for g in ps])\n    return a, b, c, apply(partial(torch.sub, other=x), w[:2])\n}\n'


def modules(x, w):
    def conv1d(inp, wt, pad):
        p = np.pad(inp, ((0, 0), (0, 0), (pad, pad)))
        k = wt.shape[2]
        return np.stack([[[(p[b, :, i:i + k] * wt[o]).sum() for i in range(p.shape[2] - k + 1)]
                          for o in range(wt.shape[0])] for b in range(inp.shape[0])])

    def conv2d(inp, wt, bias):
        kh, kw = wt.shape[2:]
        return np.stack([[[[(inp[b, :, i:i + kh, j:j + kw] * wt[o]).sum() + bias[o]
                            for j in range(inp.shape[3] - kw + 1)] for i in range(inp.shape[2] - kh + 1)]
                          for o in range(wt.shape[0])] for b in range(inp.shape[0])])
    q = x @ w[:4].T + w[4, :4]
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    ids = np.array([[0, 5, 2, 1, 1, 3], [4, 4, 0, 2, 5, 1]])
    return [q, x @ w.T, (x - mu) / np.sqrt(var + 1e-6) * w[0] + w[1],
            conv1d(x.reshape(2, 2, 3), w.reshape(3, 2, 6)[:, :, :3], 1),
            conv2d(x.reshape(2, 1, 2, 3), w[:3, :4].reshape(3, 1, 2, 2), w[5, :3]), w[ids], w[:4], gelu(q)]


# nn modules with parameters as objects, as __init__ makes them: their weights set from the
# function's parameters (`k.weight = w`, `nn.Parameter(w)`), called, passed to a helper,
# held in a list and a dict, read back (`q.weight`); they were refused
MODULES = 'import torch.nn as nn\nfn apply(m: Callable, t: torch.Tensor) -> torch.Tensor { return m(t) }\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 4], f32[2, 6], f32[2, 6], f32[2, 3, 3], f32[2, 3, 1, 2], f32[2, 6, 6],\n                                     f32[4, 6], f32[2, 4]) {\n    q = nn.Linear(6, 4)\n    q.weight = nn.Parameter(w[:4])\n    q.bias = nn.Parameter(w[4, :4])\n    k = nn.Linear(6, 6, bias=False)\n    k.weight = w\n    ln = nn.LayerNorm(6, eps=1e-6)\n    ln.weight = w[0]\n    ln.bias = w[1]\n    conv = nn.Conv1d(2, 3, 3, padding=1, bias=False)\n    conv.weight = w.reshape(3, 2, 6)[:, :, :3]\n    conv2 = nn.Conv2d(1, 3, (2, 2), stride=1)\n    conv2.weight = w[:3, :4].reshape(3, 1, 2, 2)\n    conv2.bias = w[5, :3]\n    emb = nn.Embedding(6, 6)\n    emb.weight = w\n    mods = {"k": k, "ln": ln}\n    layers = [q, nn.GELU()]\n    h = x\n    for layer in layers {\n        h = layer(h)\n    }\n    ids = torch.tensor([[0, 5, 2, 1, 1, 3], [4, 4, 0, 2, 5, 1]])\n    return (q(x), apply(mods["k"], x), mods["ln"](x), conv(x.reshape(2, 2, 3)), conv2(x.reshape(2, 1, 2, 3)), emb(ids),\n            q.weight, h)\n}\n'


def classes(x, w):
    def body(t):
        return gelu(t @ w.T + w[1]) @ w + w[2]
    return [x * w[0], x * 0.5, body(x) * 0.5, np.full(6, 0.5), body(x), x * w[0] + body(x) * 0.5]


# classes as pasted (timm's LayerScale, an Mlp holding nn.Linear objects and a LayerScale):
# made, their parameters set from the function's, called, a method called by another and
# handed on as a value (m.body), instances passed to a helper and held in a list
CLASSES = 'import torch\nimport torch.nn as nn\n\nclass LayerScale(nn.Module) {\n    """timm\'s"""\n    fn __init__(\n            self,\n            dim: int,\n            init_values: float = 1e-5,\n            inplace: bool = False,\n    ) -> None {\n        super().__init__()\n        self.inplace = inplace\n        self.gamma = nn.Parameter(init_values * torch.ones(dim))\n    }\n\n    fn forward(self, x: torch.Tensor) -> torch.Tensor {\n        return x.mul_(self.gamma) if self.inplace else x * self.gamma\n    }\n}\n\nclass Mlp(nn.Module) {\n    fn __init__(self, dim, hidden) {\n        super().__init__()\n        self.fc1 = nn.Linear(dim, hidden)\n        self.act = nn.GELU()\n        self.fc2 = nn.Linear(hidden, dim)\n        self.scale = LayerScale(dim, init_values=0.5)\n        self.calls = 0\n    }\n    fn body(self, x) {\n        return self.fc2(self.act(self.fc1(x)))\n    }\n    fn forward(self, x) {\n        return self.scale(self.body(x))\n    }\n}\n\nfn apply(m: Callable, t: torch.Tensor) -> torch.Tensor { return m(t) }\n\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[6], f32[2, 6], f32[2, 6]) {\n    ls1 = LayerScale(6, init_values=1e-5) if x.shape[1] == 6 else nn.Identity()\n    ls1.gamma = w[0]\n    ls2 = LayerScale(6, 0.5)\n    m = Mlp(6, 6)\n    m.fc1.weight = w\n    m.fc1.bias = w[1]\n    m.fc2.weight = w.t()\n    m.fc2.bias = w[2]\n    body = m.body\n    mods = [ls1, m]\n    return ls1(x), apply(ls2, x), mods[1](x), ls2.gamma, apply(body, x), torch.stack([g(x) for g in mods]).sum(0)\n}\n'


def scopes(x, w):
    return [x + 2 * x + w[:2], x * 2, x * 9, x * (4.0 + 20 + 5)]


# nonlocal in a def inside a function (a tensor and a number rebound, a def inside a def) and
# global (a module-level number rebound by the entry and by a helper, read after): Python's
# meaning; they were parse errors. g, checked after f, runs from the module's state as
# Python's call would: SCALE and COUNT as the file defines them
SCOPES = 'COUNT = 0\nSCALE = 2.0\nfn bump(k: int) -> tuple {\n    global COUNT\n    COUNT += k\n    return (COUNT,)\n}\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6]) {\n    total = x\n    n = 0\n    fn add(t) {\n        nonlocal total, n\n        total = total + t\n        n += 1\n    }\n    add(x * 2)\n    add(w[:2])\n    fn outer() {\n        acc = x\n        fn inner() {\n            nonlocal acc\n            acc = acc * 3\n        }\n        inner()\n        inner()\n        return acc\n    }\n    global SCALE\n    SCALE = SCALE * 2\n    a = bump(2)[0]\n    b = bump(3)[0]\n    return total, x * n, outer(), x * (SCALE + a * 10 + b)\n}\nfn g(x: f32[2, 6], w: f32[6, 6]) -> f32[2, 6] {\n    return x * (SCALE + COUNT * 10 + bump(1)[0])\n}\n'


def scopes_g(x, w):
    return [x * (2.0 + 0 * 10 + 1)]


def class_attrs(x, w):
    return [x * 2 + 3, x * 5 + 3, x * 2 + 3, x * (2 * 10 + 0)]


# class attributes in the class body (one reading an earlier one), read as self.name and as
# Class.name; an instance's own attribute (set in __init__, or by self.n += 1 from the
# class's n) over its class's, the class's unchanged: Python's lookup (they were refused)
CLASS_ATTRS = 'class Scale(nn.Module) {\n    scale = 2.0\n    shift = scale + 1\n    n = 0\n    fn __init__(self, k=None) {\n        super().__init__()\n        if k is not None {\n            self.scale = k\n        }\n    }\n    fn forward(self, x) {\n        self.n += 1\n        return x * self.scale + self.shift\n    }\n}\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6]) {\n    a = Scale()\n    b = Scale(5.0)\n    y = a(x)\n    y = a(x)\n    return y, b(x), x * Scale.scale + Scale.shift, x * (a.n * 10 + Scale.n)\n}\n'


def derived(x, w):
    lin_c, lin_p = x @ w.T + w[0], x @ w.T + w[1]
    return [lin_c * 3 + 1 + 2, lin_p * 2, x * (6 + 2 * 100), x * (2.0 + 1.0)]


# a class derived from a class of the file: __init__ and methods inherited (Plain has none of
# its own), overridden (Child.extra, called by Base.forward through self: Child's), class
# attributes inherited, super().__init__(d) running Base's there and super().forward(x)
# calling Base's with self the Child, Base.__init__(self, 2) called explicitly (they were
# refused)
DERIVED = 'class Base(nn.Module) {\n    scale = 2.0\n    fn __init__(self, d: int) {\n        super().__init__()\n        self.d = d\n        self.fc = nn.Linear(d, d)\n    }\n    fn extra(self, x) { return x * self.scale }\n    fn forward(self, x) { return self.extra(self.fc(x)) }\n}\nclass Child(Base) {\n    shift = 1.0\n    fn __init__(self, d, k=3.0) {\n        super().__init__(d)\n        self.k = k\n    }\n    fn extra(self, x) { return x * self.k + self.shift }\n    fn forward(self, x) { return super().forward(x) + self.scale }\n}\nclass Plain(Base) {\n    pass\n}\nclass Named(Base) {\n    fn __init__(self) {\n        Base.__init__(self, 2)\n    }\n}\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6]) {\n    c = Child(6)\n    c.fc.weight = w\n    c.fc.bias = w[0]\n    p = Plain(6)\n    p.fc.weight = w\n    p.fc.bias = w[1]\n    return c(x), p(x), x * (c.d + Named().d * 100), x * (Child.scale + Child.shift)\n}\n'


def star_init(x, w):
    return [x * 2 * 0.5 + 2, x * 4 * 1.0 + 1, x * 3 * 2.0 + 1 + 1]


# *args and **kwargs of __init__ (a tuple and a dict of what the call gives), passed on to a
# base's as super().__init__(*args, **kwargs) (they were refused)
STAR_INIT = 'class Wrap(nn.Module) {\n    fn __init__(self, *args, **kwargs) {\n        super().__init__()\n        self.n = len(args)\n        self.scale = kwargs["scale"] if "scale" in kwargs else 1.0\n        self.first = args[0]\n    }\n    fn forward(self, x) { return x * self.first * self.scale + self.n }\n}\nclass Sub(Wrap) {\n    fn __init__(self, *args, **kwargs) {\n        super().__init__(*args, **kwargs)\n        self.extra = 1\n    }\n}\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6]) {\n    a = Wrap(2, 3, scale=0.5)\n    b = Wrap(4)\n    c = Sub(3, scale=2.0)\n    return a(x), b(x), c(x) + c.extra\n}\n'


def attr_targets(x, w):
    return [x * (4 * 100 + 5 * 10 + 3 + 2 * 1000), x @ w.T + w[0]]


# attributes as targets of a tuple assignment, beside a name (`self.h, self.w = size`,
# `m.weight, m.bias = w, b`): set left to right from the unpacked value (they were refused)
ATTR_TARGETS = 'class P(nn.Module) {\n    fn __init__(self, size) {\n        super().__init__()\n        self.h, self.w = size\n        n, self.k = 2, 3\n        self.n = n\n    }\n    fn forward(self, x) { return x * (self.h * 100 + self.w * 10 + self.k + self.n * 1000) }\n}\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6]) {\n    p = P((4, 5))\n    m = nn.Linear(6, 6)\n    m.weight, m.bias = w, w[0]\n    return p(x), m(x)\n}\n'


def attrs(x, w):
    return [x @ w, (x + 1) * 2, x * 2]


# attributes set in a helper (an nn.Linear's weight), in a method (forward keeping its last
# input), `self.calls += 1`, an object made and returned by a def inside the function: the
# caller's object (they were refused, or read names that had ended with the call)
ATTRS = 'class Cache(nn.Module) {\n    fn __init__(self) {\n        super().__init__()\n        self.last = None\n        self.calls = 0\n    }\n    fn forward(self, x) {\n        self.last = x * 2\n        self.calls += 1\n        return x + 1\n    }\n}\nfn set_w(m: Callable, w: f32[6, 6]) { m.weight = w.t() }\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6]) {\n    k = nn.Linear(6, 6, bias=False)\n    set_w(k, w)\n    c = Cache()\n    y = c(x)\n    y = c(y)\n    return k(x), c.last, x * c.calls\n}\nfn g(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6]) {\n    fn make(t) {\n        return Cache() if t is None else nn.Linear(6, 6)\n    }\n    c = make(None)\n    c(w[:2])\n    lin = make(w)\n    lin.weight = w\n    lin.bias = w[0] * 1\n    lin.bias += w[1]\n    return c.last, lin(x), x * c.calls\n}\n'



def attrs_g(x, w):
    return [w[:2] * 2, x @ w.T + w[0] + w[1], x]


def kv_cache(x, w):
    return [np.stack([x[0], 2 * x[1]]), np.concatenate([x[0:1], 2 * x[1:2], np.zeros((2, 6))])]


# a module keeping a cache as an attribute its forward writes into (LLaMA's self.cache_k)
KV_CACHE = 'class KV(nn.Module) {\n    fn __init__(self, n) {\n        super().__init__()\n        self.cache_k = torch.zeros(4, n)\n    }\n    fn forward(self, x, pos: int) {\n        self.cache_k[pos] = x\n        return self.cache_k[: pos + 1]\n    }\n}\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[4, 6]) {\n    kv = KV(6)\n    a = kv(x[0], 0)\n    b = kv(x[1] * 2, 1)\n    return b, kv.cache_k\n}\n'


def changed(x, w):
    return [np.stack([x, (x + 1) * 2, x + 2]), np.stack([x * 0, x * 1]), x * 3, x]


# a list or dict changed in place by a helper or a local def is the caller's object (it
# was not: the caller's list stayed as it was, silently)
CHANGED = 'fn push(xs: list, t: f32[2, 6]) { xs.append(t) }\nfn put(d: dict, k: str, t: f32[2, 6]) -> f32[2, 6] {\n    d[k] = t * 3\n    return t\n}\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[3, 2, 6], f32[2, 2, 6], f32[2, 6], f32[2, 6]) {\n    outs = [x]\n    held = [outs]\n    fn hook(t) {\n        outs.append(t * 2)\n    }\n    hook(x + 1)\n    push(outs, x + 2)\n    ys = []\n    for i in range(2) {\n        push(ys, x * i)\n    }\n    cache = {}\n    y = put(cache, "k", x)\n    return torch.stack(held[0]), torch.stack(ys), cache["k"], y\n}\n'

# decorators: @staticmethod (T5Attention._relative_position_bucket's: no self; called through
# self, through the class and as a value), and @torch.no_grad(), @torch.jit.script and
# @torch.inference_mode(), which change nothing a compiled forward pass computes
DECORATED = 'import torch\nimport torch.nn as nn\nclass Bucket(nn.Module) {\n    fn __init__(self, k) {\n' \
    '        super().__init__()\n        self.k = k\n    }\n\n    @staticmethod\n    fn _scale(t, by=2.0) {\n' \
    '        return t * by\n    }\n    @torch.no_grad()\n    fn forward(self, x) {\n        f = self._scale\n' \
    '        g = Bucket._scale\n        return self._scale(x) + Bucket._scale(x, by=self.k) + f(x, 10.0) + g(x, 3.0)\n    }\n}\n' \
    '@torch.jit.script\n' \
    'fn helper(t: torch.Tensor) -> torch.Tensor {\n    return t + 1\n}\n@torch.inference_mode()\n' \
    'fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6]) {\n    m = Bucket(5.0)\n' \
    '    return m(x), helper(x @ w)\n}\n'


def decorated(x, w):
    return [x * 2 + x * 5 + x * 10 + x * 3, x @ w + 1]


# annotated assignments (x: T = v in a body, at module level, and x: T alone) and a @dataclass
# config, as nanoGPT's GPTConfig: its __init__ made from the annotated fields, in order (a
# field annotated again keeps its first place and takes the last default, as in Python)
DATACLASS = 'from dataclasses import dataclass\nfrom typing import Optional\nimport torch\nHIDDEN: int = 3\n' \
    '@dataclass\nclass Config {\n    n_head: int\n    n_embd: int = 768\n    dropout: float = 0.0\n' \
    '    bias: bool = True\n    scale = 2.0\n    n_embd: int = 769\n}\nfn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6]) {\n' \
    '    c = Config(3, n_embd=10)\n    d = Config(n_head=1, dropout=0.5, bias=False)\n    y: torch.Tensor = x @ w\n' \
    '    z: Optional[torch.Tensor]\n' \
    '    return x * c.n_embd + c.n_head * 100 + d.dropout * 1000 + c.scale * 10000 + d.bias + HIDDEN, y * d.n_embd\n}\n'


def dataclass_(x, w):
    return [x * 10 + 300 + 500 + 20000 + 0 + 3, (x @ w) * 769]


# (name, program, the NumPy model of its results, their dtypes)
# nn.Sequential, nn.ModuleList and nn.ModuleDict as objects, built in __init__ (a list
# comprehension, *[...] unpacked, append, extend, update) and used as forward passes use them:
# iterated, indexed (negative, a slice: the container of the same class), called (a Sequential
# runs its modules in order, nested and empty ones too), len, `in`, items(), c[i] = m, + and *
# of containers, isinstance, handed to a helper's Callable parameter
CONTAINERS = r'''import torch
import torch.nn as nn
from typing import Optional, Tuple

class Block(nn.Module) {
    fn __init__(self, d: int, k: float) {
        super().__init__()
        self.fc = nn.Linear(d, d, bias=False)
        self.k = k
    }
    fn forward(self, x: torch.Tensor) -> torch.Tensor {
        return x + torch.tanh(self.fc(x)) * self.k
    }
}

class Net(nn.Module) {
    fn __init__(self, d: int, n: int) {
        super().__init__()
        self.blocks = nn.ModuleList([Block(d, i + 1.0) for i in range(n)])
        self.blocks.append(Block(d, 10.0))
        self.blocks.extend([Block(d, 20.0)])
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.GELU(), *[nn.Tanh() for _ in range(2)])
        self.acts = nn.ModuleDict({"relu": nn.ReLU(), "sig": nn.Sigmoid()})
        self.acts.update([("tanh", nn.Tanh())])
        self.nested = nn.ModuleList([nn.Sequential(nn.ReLU()), nn.Tanh()])
        self.nested[-1] = nn.Sequential()
        self.acts["relu"] = nn.ReLU()
    }
    fn forward(self, x) {
        h = x
        for blk in self.blocks {
            h = blk(h)
        }
        a = self.blocks[-1](x) + len(self.blocks)
        for i, blk in enumerate(self.blocks[1:3]) {
            a = blk(a) * (i + 1)
        }
        tail = self.mlp[1:]
        acts = [self.acts[k](x) for k in self.acts]
        n = 0
        for name, act in self.acts.items() {
            n += len(name) if name in self.acts and isinstance(act, nn.Module) else 100
        }
        both = self.blocks[:1] + self.blocks[3:]
        y = x
        for blk in both { y = blk(y) }
        seq2 = (nn.Sequential(nn.Tanh()) * 2)(x) + nn.Sequential().append(nn.ReLU()).append(nn.Tanh())(x)
        flag = isinstance(self.blocks, nn.Module) and not isinstance(self.blocks, list)
        return (h, a, self.mlp(x), tail(x) + self.mlp[-1](x), torch.stack(acts).sum(0) * n,
                self.nested[0](x) + self.nested[1](x), y * flag, seq2)
    }
}

fn apply(m: Callable, t: torch.Tensor) -> torch.Tensor { return m(t) }

fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6],
                                     f32[2, 6], f32[2, 6]) {
    net = Net(6, 2)
    for i, blk in enumerate(net.blocks) {
        blk.fc.weight = w * ((i + 1) * 0.1)
    }
    net.mlp[0].weight = w.t()
    net.mlp[0].bias = w[0]
    h, a, m, t, acts, s, y, seq2 = net(x)
    return h, a, m, t, acts, s, y, seq2, apply(net.mlp[1:], x)
}
'''


def gelu_erf(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def containers(x, w):
    ws = [w * ((i + 1) * 0.1) for i in range(4)]
    ks = [1.0, 2.0, 10.0, 20.0]

    def blk(i, h):
        return h + np.tanh(h @ ws[i].T) * ks[i]
    h = x
    for i in range(4):
        h = blk(i, h)
    a = blk(2, blk(1, blk(3, x) + 4) * 1) * 2
    sig = 1 / (1 + np.exp(-x))
    return [h, a, np.tanh(np.tanh(gelu_erf(x @ w + w[0]))), np.tanh(np.tanh(gelu_erf(x))) + np.tanh(x),
            (np.maximum(x, 0) + sig + np.tanh(x)) * (4 + 3 + 4), np.maximum(x, 0) + x, blk(3, blk(0, x)),
            np.tanh(np.tanh(x)) + np.tanh(np.maximum(x, 0)), np.tanh(np.tanh(gelu_erf(x)))]


# nn containers as pasted models build them (checked against PyTorch 1.13 running the same code
# in eval mode): nn.Sequential of an OrderedDict (from collections, and collections.OrderedDict):
# its modules by name and by position, a slice keeping the names, append; stores through nested
# containers (ml[0][0] = m, self.blocks[1].layers[0] = m); nn.ParameterList and nn.ParameterDict
# (iterated, indexed, items(), len, set by the entry); a @property's @k.setter (run by a store in
# __init__ and by the entry); classes derived from nn.Sequential (super().forward(x)), nn.ModuleList and
# nn.ModuleDict (their own), held in a ModuleList; an instance made and called inline whose forward
# iterates a ModuleList attribute (was an internal error); a module-level (name): T = v
CONTAINERS2 = r'''import torch
import torch.nn as nn
from collections import OrderedDict
import collections

(SCALE): float = 0.5

class Stack(nn.Sequential) {
    fn __init__(self, d: int, n: int) {
        layers = []
        for i in range(n) {
            layers.append(nn.Linear(d, d, bias=False))
            layers.append(nn.Tanh())
        }
        super().__init__(*layers)
        self.k = 2.0
    }
    fn forward(self, x) { return super().forward(x) * self.k }
}

class Blocks(nn.ModuleList) {
    fn __init__(self, n: int) {
        super().__init__([nn.ReLU() for _ in range(n)])
        self.append(nn.Sigmoid())
    }
    fn forward(self, x) {
        for i, b in enumerate(self) { x = b(x) + i }
        return x * len(self)
    }
}

class Heads(nn.ModuleDict) {
    fn __init__(self) {
        super().__init__({"a": nn.Tanh()})
        self["b"] = nn.ReLU()
    }
    fn forward(self, x) { return self["a"](x) + self.b(x) }
}

class Inner(nn.Module) {
    fn __init__(self) {
        super().__init__()
        self.layers = nn.ModuleList([nn.ReLU(), nn.ReLU()])
    }
    fn forward(self, x) {
        for l in self.layers { x = l(x) }
        return x
    }
}

class Net(nn.Module) {
    fn __init__(self, d: int) {
        super().__init__()
        self.seq = nn.Sequential(OrderedDict([("fc", nn.Linear(d, d)), ("act", nn.GELU())]))
        self.named = nn.Sequential(collections.OrderedDict(tanh=nn.Tanh(), drop=nn.Dropout(0.1)))
        self.named.append(nn.Sigmoid())
        self.blocks = nn.ModuleList([Inner(), Inner()])
        self.blocks[1].layers[0] = nn.Tanh()
        self.ps = nn.ParameterList([nn.Parameter(torch.ones(d) * i) for i in range(3)])
        self.pd = nn.ParameterDict({"a": nn.Parameter(torch.zeros(d))})
        self.pd["bb"] = nn.Parameter(torch.ones(d))
        self._k = 1.0
        self.k = 5.0
    }
    @property
    fn k(self) { return self._k }
    @k.setter
    fn k(self, v) { self._k = v * 2 }
    fn forward(self, x) {
        p = x * len(self.ps)
        for t in self.ps { p = p + t }
        for name, t in self.pd.items() { p = p + t * len(name) }
        return (self.seq(x), self.seq.act(x) + self.seq[1](x),
                self.named.tanh(x) + self.named[2](x) + self.named[1:](x),
                self.blocks[1](x) + self.blocks[0](x), p + self.pd.a, x * self.k)
    }
}

fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6],
                                     f32[2, 6], f32[2, 6]) {
    net = Net(6)
    net.seq.fc.weight = w
    net.seq[0].bias = w[0]
    net.pd["a"] = w[1]
    net.ps[0] = w[2]
    net.k = 3.0
    s = Stack(6, 2)
    s[0].weight = w
    s[2].weight = w.t()
    ml = nn.ModuleList([nn.ModuleList([nn.ReLU()]), Blocks(2), Heads()])
    ml[0][0] = nn.Tanh()
    ml[1][1] = nn.Tanh()
    assert isinstance(s, nn.Sequential) and isinstance(ml[1], nn.ModuleList) and isinstance(s[0], nn.Linear)
    assert not isinstance(s[1], nn.Linear) and isinstance(net.ps, nn.ParameterList) and isinstance(s, nn.Module)
    a, b, c, d, e, g = net(x)
    return a, b, c, d, e, g, s(x) + SCALE, ml[0][0](x) + ml[1](x), ml[2](x) + Inner()(x)
}
'''


def containers2(x, w):
    sig = 1 / (1 + np.exp(-x))
    relu = np.maximum(x, 0)
    y = np.tanh(np.tanh(x @ w.T) @ w)
    sig_b = 1 / (1 + np.exp(-(np.tanh(relu) + 1))) + 2
    return [gelu_erf(x @ w.T + w[0]), 2 * gelu_erf(x), np.tanh(x) + 2 * sig, np.maximum(np.tanh(x), 0) + relu,
            3 * x + w[2] + 2 * w[1] + 5, 6 * x, y * 2 + 0.5, np.tanh(x) + 3 * sig_b, np.tanh(x) + 2 * relu]


# transformers' GPT2MLP and pytorch_utils.Conv1D as written: nn.Parameter(torch.empty(...)) then
# nn.init.normal_ (a random initialiser leaves the parameter to be set, as load_state_dict sets it),
# nn.init.zeros_/ones_/constant_ (filled), a forward annotated Optional[Tuple[torch.FloatTensor]]
# (unchecked, as Python's), ACT2FN, a @dataclass config, .eval()
GPT2_MLP = r'''from typing import Optional, Tuple
import torch
from torch import nn
from transformers.activations import ACT2FN
from dataclasses import dataclass

@dataclass
class GPT2Config {
    hidden_size: int = 6
    activation_function: str = "gelu_new"
    resid_pdrop: float = 0.1
}

class Conv1D(nn.Module) {
    fn __init__(self, nf, nx) {
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)
    }

    fn forward(self, x) {
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x
    }
}

class GPT2MLP(nn.Module) {
    fn __init__(self, intermediate_size, config) {
        super().__init__()
        embed_dim = config.hidden_size
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = ACT2FN[config.activation_function]
        self.dropout = nn.Dropout(config.resid_pdrop)
    }

    fn forward(self, hidden_states: Optional[Tuple[torch.FloatTensor]]) -> torch.FloatTensor {
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states
    }
}

fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6]) {
    mlp = GPT2MLP(6, GPT2Config()).eval()
    mlp.c_fc.weight = w
    mlp.c_fc.bias = w[0]
    mlp.c_proj.weight = w.t()
    k = Conv1D(6, 6)
    k.weight = torch.zeros(6, 6)
    nn.init.ones_(k.weight)
    nn.init.constant_(k.bias, 0.5)
    return mlp(x), k(x)
}
'''


def gpt2_mlp(x, w):
    h = x @ w + w[0]
    h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
    return [h @ w.T, x.sum(1, keepdims=True) + np.zeros((1, 6)) + 0.5]


# @property (through self, a property holding a module, called) and @classmethod (through the
# class, through self, as a value, cls(...) making an instance); any annotation of a result,
# unchecked as Python's (-> torch.Tensor of a tuple, Tuple[..., int], Optional[...] of an int,
# a string); an f"""...""" message in a branch not taken
PROPS = r'''import torch
import torch.nn as nn
from typing import Optional, Tuple

class Scale(nn.Module) {
    base = 2.0
    fn __init__(self, k: float, w: Optional[torch.Tensor] = None) {
        super().__init__()
        self.k = k
        self.w = w
    }
    @property
    fn factor(self) -> float {
        return self.k * self.base
    }
    @property
    fn proj(self) {
        return nn.Identity() if self.w is None else nn.Tanh()
    }
    @classmethod
    fn make(cls, k, w=None) -> "Scale" {
        return cls(k + 1.0, w)
    }
    @classmethod
    fn unit(cls) {
        return cls.make(0.0)
    }
    fn forward(self, x: torch.Tensor) -> torch.Tensor {
        if x.ndim != 2 {
            raise ValueError(f"""Scale takes 2-d inputs,
                got {x.ndim} dims""")
        }
        return self.proj(x) * self.factor, self.factor
    }
}

fn pair(x: torch.Tensor) -> torch.Tensor {
    return x * 2, x + 1
}
fn trio(x: torch.Tensor) -> Tuple[torch.Tensor, Optional[torch.Tensor], int] {
    return x, None, 3
}
fn num(x: torch.Tensor) -> Optional[torch.Tensor] {
    return x.shape[0]
}

fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6]) {
    a = Scale.make(1.0)
    b = a.make(2.0, w)
    c = Scale.unit()
    y, fa = a(x)
    z, fb = b(x)
    mk = Scale.make
    p, q = pair(x)
    t, none, three = trio(x)
    (k): int = num(x)
    return y + fa, z * fb, c(x)[0] + mk(3.0).factor, p * q, t * three * k + (none is None)
}
'''


def props(x, w):
    return [x * 4 + 4, np.tanh(x) * 6 * 6, x * 2 + 8, (x * 2) * (x + 1), x * 3 * 2 + 1]


CASES = [
    ("defs inside a function: closures, untyped parameters, defaults, in-place writes, lists, Callable",
     DEFS, local_defs, ["f32"] * 8),
    ("a parameter named like a function of the file; module-level constants and defaults of them; **kwargs",
     NAMES, names, ["f32"] * 4),
    ("nested dict stores, set displays, set(), dict and set equality and truth (was silently skipped)", DICTS, dicts, ["f32"] * 4),
    ("transformers' ACT2FN and get_activation imported", ACTS, acts, ["f32"] * 2),
    ("*args, inspect.signature(f).parameters, zip(*xs), -> torch.Tensor: apply_chunking_to_forward",
     CHUNKING, chunking, ["f32"] * 3),
    ("functools.partial of a user fn chosen by a conditional expression, of torch.add", PARTIALS, partials,
     ["f32"] * 2),
    ("a partial's bound arguments read where it is made, not where it is called (was: a wrong result)", BOUND_NOW,
     bound_now, ["f32"] * 4),
    ("nn.Linear, LayerNorm, Conv1d, Conv2d, Embedding as objects, their parameters set: called, passed on, held",
     MODULES, modules, ["f32"] * 8),
    ("classes as pasted: __init__ with super().__init__(), nn.Parameter, submodules; forward, methods, bound methods",
     CLASSES, classes, ["f32"] * 6),
    ("nonlocal and global statements: tensors and numbers rebound in the enclosing def, module-level names",
     SCOPES, scopes, ["f32"] * 4),
    ("a second entry point sees the module-level names as the file defines them, not as f's global statements "
     "left them (was: a wrong result)", SCOPES, scopes_g, ["f32"], "g"),
    ("class attributes: read through self and the class, an instance's own over its class's", CLASS_ATTRS,
     class_attrs, ["f32"] * 4),
    ("a class derived from a class of the file: inherited, overridden, super().__init__(d), super().forward(x)",
     DERIVED, derived, ["f32"] * 4),
    ("*args and **kwargs of __init__, passed on by super().__init__(*args, **kwargs)", STAR_INIT, star_init,
     ["f32"] * 3),
    ("attributes as targets of a tuple assignment", ATTR_TARGETS, attr_targets, ["f32"] * 2),
    ("attributes set in a helper, in a method, by +=; an object made by a def and returned", ATTRS, attrs,
     ["f32"] * 3),
    ("attributes set: an object made by a def, a tensor attribute updated in place", ATTRS, attrs_g, ["f32"] * 3,
     "g"),
    ("a cache kept as an attribute, written by forward (self.cache_k[pos] = x)", KV_CACHE, kv_cache, ["f32"] * 2),
    ("a list or dict changed in place in a helper or a local def: the caller's, every holder's", CHANGED, changed,
     ["f32"] * 4),
    ("decorators: @staticmethod through self, the class and as a value; @torch.no_grad() and the like dropped",
     DECORATED, decorated, ["f32"] * 2),
    ("annotated assignments (x: T = v, x: T) and a @dataclass config's __init__ from its fields", DATACLASS,
     dataclass_, ["f32"] * 2),
    ("nn.Sequential, nn.ModuleList, nn.ModuleDict built in __init__, iterated, indexed, sliced, called", CONTAINERS,
     containers, ["f32"] * 9),
    ("@property, @classmethod, any result annotation, an f-string in triple quotes", PROPS, props, ["f32"] * 5),
    ("nn.Sequential(OrderedDict), nested container stores, ParameterList/Dict, @x.setter, classes derived from "
     "containers", CONTAINERS2, containers2, ["f32"] * 9),
    ("transformers' GPT2MLP and Conv1D as written: nn.init.normal_, zeros_, ones_, constant_, Optional[Tuple[...]]",
     GPT2_MLP, gpt2_mlp, ["f32"] * 2),
]

def helpers(x, w):
    def heads(t):
        return t.reshape(2, 2, 3).transpose(1, 0, 2).reshape(2, 6)
    relu = np.maximum(x, 0)
    r = np.maximum(2 * x, 0) + x + 2 * x + relu + 2 * x
    return [x + w[0] + w[1] + 3.0 + r, heads(x), heads(x + 1) + 2 * heads(x * 3), x * w[:2] + x * w[2:4], x * 4 + 1,
            np.stack([x, x + 5, x * 2])]


# lucidrains' helpers as Python writes them (untyped parameters, no arrow, names C reserves:
# inlined, no entry points), map of a lambda over a tuple and over two lists, filter;
# parameters annotated with a module type (torchvision's downsample: nn.Module | None = None);
# with statements whose body runs as written
HELPERS = """from einops import rearrange
import contextlib
fn exists(val) { return val is not None }
fn default(val, d) { return val if exists(val) else d }
fn main(x) { return x * 2 }
fn double(x: f32[2, 6]) { return x * 2 }
class Block(nn.Module) {
    fn forward(self, x) { return x * 2 }
}
fn run(block: "Block", m: nn.Module, x: torch.Tensor, downsample: torch.nn.Module | None = None, b: Block = None) {
    return m(block(x)) + (downsample(x) if downsample is not None else x) + (b(x) if b is not None else 0)
}
fn f(x: f32[2, 6], w: f32[6, 6]) -> (f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6], f32[2, 6], f32[3, 2, 6]) {
    q, k, v = map(lambda t: rearrange(t, 'b (h d) -> h b d', h=2).reshape(2, 6), (x, x + 1, x * 3))
    ys = list(map(lambda a, c: a * c, (x, x), [w[:2], w[2:4]]))
    zs = torch.stack(tuple(filter(lambda t: t.shape[0] == 2, [x, w, x + 5])) + (main(x),))
    r = run(Block(), nn.ReLU(), x) + run(Block(), nn.Identity(), x, nn.ReLU(), Block())
    with torch.no_grad(), contextlib.nullcontext() {
        h = x * 2
    }
    with torch.cuda.amp.autocast(enabled=False), torch.backends.cuda.sdp_kernel(enable_flash=False) {
        h = h + 1
    }
    return x + default(None, w[0]) + default(w[1], 7) + default(None, 3.0) + r, q, k + double(v), ys[0] + ys[1], main(x) + h, zs
}
"""

CASES.append(("helpers as Python writes them (untyped, no arrow, C's names), map, filter", HELPERS, helpers,
              ["f32"] * 6))

CLS = 'class S(nn.Module) {\n    fn __init__(self, d: int, k: float = 2.0) {\n        super().__init__()\n        self.k = k\n    }\n    fn forward(self, x) { return x * self.k }\n}\n'

# (name, program, the first line of stderr after 'case.tdsl:')
FAILURES = [
    ("an untyped parameter of the entry point",
     "fn f(a) -> f32[3] { return a }", "1:6: error: 'f' is a helper, not an entry point: its parameter 'a' has no "
     "type (an entry point's are typed: a: f32[dims], int, float or bool); it compiles where another function calls "
     "it"),
    ("an entry point returning a value without an arrow: checked as an entry, its body's errors first",
     "fn f(a: f32[3]) { return a }", "1:19: error: 'f' returns 1 value but is declared without a result (it returns None)"),
    ("an entry point named as C's keyword", "fn default(a: f32[3]) -> f32[3] { return a }",
     "1:4: error: invalid function name 'default': it is a C keyword"),
    ("map of one argument", "fn f(a: f32[3]) -> f32[3] {\n    return tuple(map(abs))[0]\n}",
     "2:18: error: TypeError: map() must have at least two arguments."),
    ("an autocast that runs", "fn f(a: f32[3]) -> f32[3] {\n    with torch.autocast('cpu') {\n        a = a * 2\n"
     "    }\n    return a\n}", "2:10: error: torch.autocast() changes the dtypes of the ops inside it, which tdsl "
     "computes as written: cast them yourself (x.half(), x.to(torch.bfloat16)), or give enabled=False"),
    ("a context manager tdsl lacks", "fn f(a: f32[3]) -> f32[3] {\n    with open('x') {\n        a = a * 2\n"
     "    }\n    return a\n}", "2:10: error: this context manager is not supported: tdsl runs a with statement's "
     "body as written under torch.no_grad(), torch.inference_mode(), torch.set_grad_enabled(), "
     "torch.backends.cuda.sdp_kernel(), contextlib.nullcontext() and an autocast given enabled=False"),
    ("filter of three", "fn f(a: f32[3]) -> f32[3] {\n    return tuple(filter(None, [a], [a]))[0]\n}",
     "2:18: error: TypeError: filter expected 2 arguments, got 3"),
    ("a local def called with a keyword it lacks",
     "fn f(a: f32[3]) -> f32[3] {\n    fn g(t) { return t }\n    return g(a, u=1)\n}",
     "3:17: error: g() got an unexpected keyword argument 'u'"),
    ("a local def missing an argument",
     "fn f(a: f32[3]) -> f32[3] {\n    fn g(t, u) { return t }\n    return g(a)\n}",
     "3:12: error: g() missing 1 required positional argument: 'u'"),
    ("a tensor in a set", "fn f(a: f32[3]) -> f32[3] {\n    s = {a}\n    return a\n}",
     "2:10: error: a set's elements must be compile-time values (strings, numbers, None), not Tensor: keep "
     "tensors in a list or a tuple"),
    ("an activation transformers lacks", "from transformers.activations import ACT2FN\n"
     "fn f(a: f32[3]) -> f32[3] {\n    return ACT2FN['gelu_99'](a)\n}", "3:19: error: KeyError: 'gelu_99'"),
    ("a name of transformers.activations tdsl does not compile", "from transformers.activations import ACT2CLS\n"
     "fn f(a: f32[3]) -> f32[3] {\n    return ACT2CLS['gelu']()(a)\n}",
     "3:12: error: 'ACT2CLS' is imported from 'transformers.activations', which tdsl does not compile: write what "
     "it computes with torch's ops, or compute it outside and pass it as a parameter"),
    ("two *args parameters", "fn g(*a, *b) { return a }\nfn f(a: f32[3]) -> f32[3] {\n    return a\n}",
     "1:11: error: * argument may appear only once"),
    ("an entry point's torch.Tensor parameter", "fn f(a: torch.Tensor) -> f32[3] {\n    return a\n}",
     "1:6: error: an entry point's tensor parameter 'a' needs its dtype and shape: write a: f32[dims] in place of "
     "Tensor (called from another function, 'f' takes any tensor)"),
    ("a number passed to a torch.Tensor parameter", "fn g(t: torch.Tensor) -> torch.Tensor { return t }\n"
     "fn f(a: f32[3]) -> f32[3] {\n    return g(1.0)\n}", "3:14: error: argument 't' of 'g' must be Tensor, not float"),
    ("a parameter after **kwargs", "fn g(**k, a) { return a }\nfn f(a: f32[3]) -> f32[3] {\n    return a\n}",
     "1:11: error: arguments cannot follow var-keyword argument"),
    ("a keyword-only parameter left out", "fn g(*a, k: int) -> torch.Tensor { return a[0] * k }\n"
     "fn f(a: f32[3]) -> f32[3] {\n    return g(a, a)\n}",
     "3:12: error: g() missing 1 required keyword-only argument: 'k'"),
    ("an entry point whose result is torch.Tensor", "fn f(a: f32[3]) -> torch.Tensor {\n    return a\n}",
     "1:20: error: the result of an entry point needs its dtype and shape: write f32[dims] (or the result's dtype) "
     "in place of Tensor, as its C function returns one"),
    ("inspect.signature of a torch function", "import inspect\nfn f(a: f32[3]) -> f32[3] {\n"
     "    n = len(inspect.signature(torch.relu).parameters)\n    return a\n}",
     "3:31: error: inspect.signature() of function is not known to tdsl: it takes a fn of the file, a fn inside "
     "one, a lambda or an nn module object"),
    ("a partial of no function", "from functools import partial\nfn f(a: f32[3]) -> f32[3] {\n"
     "    g = partial(a, 1)\n    return a\n}", "3:17: error: the first argument must be callable"),
    ("an nn module's parameter used before it is set", "fn f(a: f32[3]) -> f32[3] {\n    m = nn.Linear(3, 2)\n"
     "    return m(a)\n}", "3:12: error: Linear's weight is not set: tdsl has no initial values for parameters; set "
     "it from a parameter of the function first (m.weight = w)"),
    ("an nn module's parameter of the wrong shape", "fn f(a: f32[3]) -> f32[3] {\n    m = nn.Linear(3, 2)\n"
     "    m.weight = a\n    return a\n}", "3:16: error: size mismatch for weight: copying a param with shape "
     "torch.Size([3]), the shape in current model is torch.Size([2, 3])"),
    ("a number as an nn module's parameter", "fn f(a: f32[3]) -> f32[3] {\n    m = nn.Linear(3, 3, bias=False)\n"
     "    m.weight = 2\n    return a\n}", "3:16: error: cannot assign 'int' as parameter 'weight' (torch.nn.Parameter "
     "or None expected)"),
    ("an attribute an nn module lacks", "fn f(a: f32[3]) -> f32[3] {\n    m = nn.Linear(3, 3, bias=False)\n"
     "    m.weight = a.expand(3, 3)\n    return m.wieght\n}", "4:14: error: 'Linear' object has no attribute 'wieght'"),
    ("an nn module called on two inputs", "fn f(a: f32[3]) -> f32[3] {\n    m = nn.Linear(3, 3, bias=False)\n"
     "    m.weight = a.expand(3, 3)\n    return m(a, a)\n}",
     "4:12: error: Linear.forward() takes 2 positional arguments but 3 were given"),
    ("an nn.Linear called on an input of the wrong size", "fn f(a: f32[3]) -> f32[3] {\n"
     "    m = nn.Linear(3, 3, bias=False)\n    m.weight = a.expand(3, 3)\n    return m(a[:2])\n}",
     "4:12: error: mat1 and mat2 shapes cannot be multiplied (1x2 and 3x3)"),
    ("an attribute holding a parameter updated in place", "fn f(a: f32[3]) -> f32[3] {\n    m = nn.Linear(3, 3)\n"
     "    m.weight = a.expand(3, 3)\n    m.bias = a\n    m.bias += a\n    return m(a)\n}",
     "5:5: error: cannot write to 'm.bias': parameters are read-only unless declared 'mut'"),
    ("a class's __init__ missing an argument", CLS + "fn f(a: f32[3]) -> f32[3] {\n    return S()(a)\n}",
     "9:12: error: __init__() missing 1 required positional argument: 'd'"),
    ("a class's __init__ given a keyword it lacks", CLS + "fn f(a: f32[3]) -> f32[3] {\n    return S(3, j=1)(a)\n}",
     "9:17: error: __init__() got an unexpected keyword argument 'j'"),
    ("a class's __init__ given a tensor for an int", CLS + "fn f(a: f32[3]) -> f32[3] {\n    return S(a)(a)\n}",
     "9:14: error: argument 'd' of 'S.__init__' must be int, not Tensor"),
    ("a method that does not exist", CLS + "fn f(a: f32[3]) -> f32[3] {\n    s = S(3)\n    return s.nope(a)\n}",
     "10:14: error: 'S' object has no attribute 'nope'"),
    ("forward given two inputs", CLS + "fn f(a: f32[3]) -> f32[3] {\n    return S(3).forward(a, a)\n}",
     "9:28: error: forward() takes 2 positional arguments but 3 were given"),
    ("a class without forward called", "class T(nn.Module) {\n    pass\n}\nfn f(a: f32[3]) -> f32[3] { return T()(a) }",
     "4:36: error: NotImplementedError: Module [T] is missing the required \"forward\" function"),
    ("a class attribute holding a list", "class T(nn.Module) {\n    x = [1, 2]\n}\n"
     "fn f(a: f32[3]) -> f32[3] { return a }",
     "2:9: error: class attribute 'x' is a list: a class attribute holds a number, a string or None (set others in "
     "__init__: self.x = value)"),
    ("a class attribute that does not exist", "class T(nn.Module) {\n    x = 3\n}\n"
     "fn f(a: f32[3]) -> f32[3] { return a * T.y }", "4:42: error: type object 'T' has no attribute 'y'"),
    ("super() outside a method", "fn f(a: f32[3]) -> f32[3] {\n    return super().forward(a)\n}",
     "2:12: error: RuntimeError: super(): no arguments"),
    ("an attribute in a nested target", "fn f(a: f32[3]) -> f32[3] {\n    m = nn.Linear(3, 3)\n"
     "    (m.weight, (m.bias, c)) = a.expand(3, 3), (a, 1)\n    return m(a)\n}",
     "3:19: error: an attribute as a nested or chained assignment's target is not supported yet: write its own "
     "assignment (x.bias = v) or one tuple of targets (x.a, x.b = u, v)"),
    ("nonlocal in a file's function", "fn f(a: f32[3]) -> f32[3] {\n    nonlocal a\n    return a\n}",
     "2:14: error: no binding for nonlocal 'a' found"),
    ("nonlocal of a name the enclosing function lacks", "fn f(a: f32[3]) -> f32[3] {\n    fn g() {\n"
     "        nonlocal zz\n        zz = 1\n    }\n    g()\n    return a\n}", "3:18: error: no binding for nonlocal 'zz' found"),
    ("global after the name is assigned", "fn f(a: f32[3]) -> f32[3] {\n    b = 1\n    global b\n    return a\n}",
     "3:12: error: name 'b' is assigned to before global declaration"),
    ("a tensor in a global", "fn f(a: f32[3]) -> f32[3] {\n    global G\n    G = a\n    return a\n}",
     "3:9: error: a module-level name holds compile-time values: 'G', declared global, cannot hold a tensor (a "
     "tensor's values are known only when the program runs)"),
    ("a def rebinding a nonlocal handed to a helper", "fn ap(g: Callable) { g() }\nfn f(a: f32[3]) -> f32[3] {\n"
     "    n = 0\n    fn g() {\n        nonlocal n\n        n += 1\n    }\n    ap(g)\n    return a\n}",
     "4:5: error: a fn that rebinds a nonlocal name ('n') handed to another function is not supported yet: call it "
     "where it is defined"),
    ("an f\"\"\"...\"\"\" message raised: its first line", PROPS.split("fn pair")[0] +
     "fn f(a: f32[3]) -> f32[3] {\n    y, k = Scale(1.0)(a)\n    return y\n}\n",
     "30:13: error: ValueError: Scale takes 2-d inputs,"),
    ("a Sequential's module that is no Module", "fn f(a: f32[3]) -> f32[3] {\n"
     "    return nn.Sequential(nn.ReLU(), lambda t: t)(a)\n}", "2:37: error: __main__.<lambda> is not a Module subclass"),
    ("a ModuleList indexed past its end", "class B(nn.Module) {\n    fn __init__(self) {\n"
     "        self.layers = nn.ModuleList([nn.ReLU() for _ in range(2)])\n    }\n"
     "    fn forward(self, x) { return self.layers[-3](x) }\n}\nfn f(a: f32[3]) -> f32[3] { return B()(a) }",
     "5:46: error: index -3 is out of range"),
    ("a parameter read after nn.init.normal_ without being set", GPT2_MLP.split("class GPT2MLP")[0] +
     "fn f(a: f32[3]) -> f32[3] {\n    return Conv1D(3, 3)(a)\n}\n",
     "25:65: error: Conv1D's weight is not set: tdsl has no initial values for parameters; set it from a parameter of "
     "the function first (m.weight = w)"),
    ("nn.init.normal_ of a local tensor", "fn f(a: f32[3]) -> f32[3] {\n    t = torch.zeros(3)\n"
     "    nn.init.normal_(t)\n    return a + t\n}\n", "3:21: error: nn.init.normal_ fills a tensor with random "
     "numbers, which tdsl does not have: call it on a module's parameter (self.weight), which the program then sets "
     "(m.weight = w)"),
    ("a missing key of an inner dict", "fn f(a: f32[3]) -> f32[3] {\n    d = {'l': {}}\n    d['l']['k'] += a\n"
     "    return a\n}", "3:12: error: KeyError: 'k'"),
]


SHAPES = {CHUNKING: ((2, 6, 4), (4, 4)), PARTIALS: ((2, 3, 4), (4,))}


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, src, model, kinds, *entry in CASES[::test_subset()]:  # the sanitizer pass: a subset
        inputs = {"x": X, "w": W} if "x: f32[2, 6]" in src else \
            {"x": RNG.standard_normal(SHAPES[src][0]).astype(np.float32),
             "w": RNG.standard_normal(SHAPES[src][1]).astype(np.float32)}
        want = model(*[f64(v) for v in inputs.values()])
        p, outs = run_outputs(tdslc, src, inputs, fn=entry[0] if entry else "f")
        t.report(name, compare_kinds(p, outs, want, kinds), src)
    for name, src, first in FAILURES:
        t.report(name, refusal_errors(tdslc, src, {"a": X[0, :3].copy()}, first), src)
    if os.environ.get("TDSL_BACKEND", "llvm") == "llvm":  # once: each program's GPU code
        t.report("every program emits CUDA C and PTX",
                 [f"{name} {e}" for name, src, *_ in CASES for e in gpu_emit_errors(tdslc, src, ["--fn", "f"])])
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
