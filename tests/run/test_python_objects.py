#!/usr/bin/python3
"""tests/run/test_python_objects.py TDSLC: Python's objects as forward passes use them, each
with Python's meaning, checked against NumPy on the same inputs: a list held by other lists
and names is one object (a change through one name is seen through every holder: the
regression first), list.pop, del of names, elements and slices, lambdas, dicts with
compile-time keys (indexing, items/keys/values, loops, ** into a call), einops' layers as
module objects and einops.parse_shape, functions as values (F.relu, torch.tanh, a user fn:
bound, in a const table, passed to a helper's Callable parameter with lambdas).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and exits
77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, compare_kinds, emit_text, gpu_emit_errors, refusal_errors, require_backend,  # noqa: E402
                    run_outputs, test_subset)

A = np.random.default_rng(21).standard_normal((3,)).astype(np.float32)
B = np.random.default_rng(22).standard_normal((3,)).astype(np.float32)
X = np.random.default_rng(23).standard_normal((2, 3, 4, 5)).astype(np.float32)


def f64(a):
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


SQ = "fn sq(t: f32[3]) -> f32[3] { return t * t }\n"
APPLY = ("fn apply(g: Callable, t: f32[3]) -> f32[3] { return g(t) }\n"
         "fn twice(g: Callable, t: f32[3], k: float = 1.0) -> f32[3] { return apply(g, t) * k + g(t) }\n")


def fn(sig, body):
    """A program of one function f: its signature and its body's lines (indented here)."""
    return f"fn f({sig} {{\n" + "".join(f"    {line}\n" for line in body) + "}\n"


# (name, program, inputs, the NumPy values of the results, their dtypes)
CASES = [
    # --- a list inside a list is the same object: the regression first ---
    ("a list held by another list sees its append",
     fn("a: f32[3], b: f32[3]) -> (f32[2, 2, 3], f32[2, 3], f32[3])",
        ["xs = [a]", "ys = [xs, xs]", "xs.append(b)", "zs = ys[1]",
         "return torch.stack([torch.stack(ys[0]), torch.stack(ys[1])]), torch.stack(zs), a * len(ys[0])"]),
     {"a": A, "b": B}, lambda a, b: [np.stack([np.stack([a, b])] * 2), np.stack([a, b]), 2 * a], ["f32"] * 3),
    ("a list rebound after another list took it keeps the old object",
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[3], f32[1, 3])",
        ["c = [a]", "d = [c]", "e = c", "c = [b]", "c.append(a)", "return d[0][0], e[0], torch.stack(e)"]),
     {"a": A, "b": B}, lambda a, b: [a, a, a[None]], ["f32"] * 3),
    ("nested holders: a tuple holding a list holding the list",
     fn("a: f32[3], b: f32[3]) -> (f32[3, 3], f32[3])",
        ["inner = [a]", "mid = [inner, b]", "t = (mid, 1)", "inner += [b * 2]", "inner.insert(0, b)",
         "return torch.stack(t[0][0]), mid[1] * len(t[0][0])"]),
     {"a": A, "b": B}, lambda a, b: [np.stack([b, a, 2 * b]), 3 * b], ["f32", "f32"]),
    ("append in a loop to a list another list holds",
     fn("a: f32[3]) -> f32[4, 3]",
        ["acc = []", "holder = [acc]", "h = a",
         "for i in range(4) {", "    h = h * 2 + 1", "    acc.append(h)", "}", "return torch.stack(holder[0]) * len(holder[0])"]),
     {"a": A}, lambda a: [4 * np.stack([2 * a + 1, 4 * a + 3, 8 * a + 7, 16 * a + 15])], ["f32"]),
    # --- pop and del ---
    ("pop() and pop(i): the element, and the list without it everywhere",
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[1, 3], f32[3])",
        ["xs = [a, b, a * 2]", "ys = xs", "z = xs.pop()", "w = xs.pop(0)", "n = [3, 4]", "k = n.pop()",
         "return z + w * k, torch.stack(ys), a * len(n) + torch.stack([xs.pop(-1)]).sum(0)"]),
     {"a": A, "b": B}, lambda a, b: [2 * a + 4 * a, b[None], a + b], ["f32"] * 3),
    ("del of an element, a slice and a name",
     fn("a: f32[3], b: f32[3]) -> (f32[2, 3], f32[3])",
        ["zs = [a, b, a + 1, b + 1, a + 2]", "h = [zs]", "del zs[1], zs[::2]", "t = a * 3", "del t",
         "t = b", "return torch.stack(h[0]), t"]),
     {"a": A, "b": B}, lambda a, b: [np.stack([a + 1, a + 2]), b], ["f32", "f32"]),
]

DICT_PROGRAM = """\
fn attn(q: f32[3], k: f32[3], scale: float = 1.0, bias: f32[3] | None = None) -> f32[3] {
    r = q * k * scale
    if bias is not None {
        r = r + bias
    }
    return r
}
fn f(a: f32[3], b: f32[3]) -> (f32[3], f32[3], f32[3], f32[3], f32[3]) {
    d = {'q': a, 'k': b,
         'scale': 2.0,}
    e = d
    d['bias'] = a + 1
    acc = a * 0
    for name, v in d.items() {
        if name != 'scale' {
            acc = acc + v
        }
    }
    n = 0
    for key in d {
        n += len(key)
    }
    kw = dict(scale=3.0)
    kw.update({'bias': b})
    g = d.get('missing', a)
    p = e.pop('k')
    holder = [d]
    d['q'] += 1
    return attn(**d, k=p), acc, attn(a, b, **kw) * n, g, torch.stack([holder[0]['q'], list(d.values())[-1]]).sum(0) * len(e)
}
"""
CASES += [
    ("dicts: display, d[k] = v, items(), keys, get, pop, update, ** into a call, aliases",
     DICT_PROGRAM, {"a": A, "b": B},
     lambda a, b: [(a + 1) * b * 2 + a + 1, a + b + a + 1, (a * b * 3 + b) * 11, a, (a + 1 + a + 1) * 3],
     ["f32"] * 5),
    ("dict(pairs), in, del, setdefault, values() of a comprehension",
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[2, 3])",
        ["d = dict([('x', a), ('y', b)], z=a * b)", "del d['x']", "w = d.setdefault('w', b * 4)",
         "s = 10 if 'z' in d and 'x' not in d else 0",
         "return w + s, torch.stack([v * 2 for v in d.values()][1:])"]),
     {"a": A, "b": B}, lambda a, b: [4 * b + 10, np.stack([2 * a * b, 8 * b])], ["f32", "f32"]),
    ("a list inside a dict or a list changed through its holder; the name dict rebound leaves {} a dict",
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[3])",
        ["d = {'a': [a]}", "e = d", "d['a'].append(b * 2)", "xs = [[a, b], [b]]", "ys = xs[0]", "del xs[0][0]",
         "xs[1].pop()", "dict = 3", "z = {'k': b}",
         "return torch.stack(e['a']).sum(0) * len(xs[1]) + z['k'] * dict, ys[0] * len(xs[0])"]),
     {"a": A, "b": B}, lambda a, b: [(a + 2 * b) * 0 + 3 * b, b], ["f32", "f32"]),
    # --- functions as values ---
    ("torch's and F's functions and a user fn as values: bound, in a list, in a const table, imported",
     "from torch.nn.functional import silu\n"
     "const ACT2FN = {'relu': nn.functional.relu, 'tanh': torch.tanh, 'gelu_new': F.gelu}\n" + SQ +
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[3], f32[3], f32[3])",
        ["act = F.relu", "g = sq", "h = ACT2FN['gelu_new']", "acts = [torch.sigmoid, sq, silu]",
         "return act(a), ACT2FN['relu'](b) + ACT2FN['tanh'](a), g(a) + h(b, approximate='tanh'), "
         "acts[0](a) + acts[1](b) + acts[2](a)"]),
     {"a": A, "b": B},
     lambda a, b: [np.maximum(a, 0), np.maximum(b, 0) + np.tanh(a), a * a + gelu_tanh(b),
                   sigmoid(a) + b * b + a * sigmoid(a)], ["f32"] * 4),
    ("function values passed to a helper's Callable parameter: a user fn, F's, a lambda, through two helpers",
     SQ + APPLY +
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[3], f32[3], f32[3])",
        ["return apply(sq, a), apply(F.relu, b), apply(lambda t: F.gelu(t, approximate='tanh') * 3.0, a), "
         "twice(torch.tanh, b, k=2.0)"]),
     {"a": A, "b": B},
     lambda a, b: [a * a, np.maximum(b, 0), 3 * gelu_tanh(a), 3 * np.tanh(b)], ["f32"] * 4),
    ("nn module objects passed to a helper's Callable parameter",
     APPLY.split("\n")[0] + "\n" +
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[3])",
        ["act = nn.GELU(approximate='tanh')", "return apply(act, a), apply(nn.Tanh(), b)"]),
     {"a": A, "b": B}, lambda a, b: [gelu_tanh(a), np.tanh(b)], ["f32"] * 2),
    ("lambdas over the caller's locals passed to helpers: a number, a lambda over a tensor, a list, two helpers deep, "
     "a default",
     APPLY +
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[3], f32[3])",
        ["s = 3.0", "act = lambda u: u + b", "xs = [b]", "r = apply(lambda t: t * s + act(t) + xs[0], a)",
         "s = 10.0",
         "return r, twice(lambda t: act(t) * s, a, k=2.0), apply(lambda t, g=act, k=2.0: g(t) * s * k, b)"]),
     {"a": A, "b": B}, lambda a, b: [4 * a + 2 * b, 30 * (a + b), 40 * b], ["f32"] * 3),
    ("an entry point's str parameter with a default: fixed to it",
     "fn act_of(t: f32[3], act: str) -> f32[3] {\n    return {'relu': F.relu, 'tanh': torch.tanh}[act](t)\n}\n" +
     fn("a: f32[3], act: str = 'tanh', act2: str = 'relu') -> f32[3]",
        ["return act_of(a, act) + act_of(a, act=act2)"]),
     {"a": A}, lambda a: [np.tanh(a) + np.maximum(a, 0)], ["f32"]),
    # --- lambdas ---
    ("lambdas: bound, with defaults, late-binding closures, in a dict, inline, returning lambdas",
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[3], f32[3], f32[3])",
        ["act = lambda t: F.gelu(t, approximate='tanh')", "scale = 2.0", "mul = lambda u, k=3: u * k * scale",
         "scale = 10.0", "acts = {'relu': lambda t: torch.relu(t), 'twice': lambda t: act(act(t))}",
         "compose = lambda f, g: lambda v: f(g(v))",
         "return act(a), mul(a) + mul(b, k=1), acts['twice'](a) + (lambda t: t * 2)(b), compose(acts['relu'], mul)(a)"]),
     {"a": A, "b": B},
     lambda a, b: [gelu_tanh(a), a * 30 + b * 10, gelu_tanh(gelu_tanh(a)) + 2 * b, np.maximum(a * 30, 0)], ["f32"] * 4),
    # --- a module made inline, never named: its __init__'s bindings lowered before its call reads them ---
    ("an instance of a file's class made inline in a Sequential, a ModuleList and as an argument",
     "class Scale(nn.Module) {\n    fn __init__(self, w) { super().__init__(); self.w = w }\n"
     "    fn forward(self, x) { return x * self.w }\n}\nfn call_on(m, t) { return m(t) }\n" +
     fn("a: f32[3], b: f32[3]) -> (f32[3], f32[3], f32[3])",
        ["return (nn.Sequential(nn.Sequential(nn.Tanh(), Scale(b)), nn.ReLU())(a), "
         "nn.ModuleList([nn.Tanh(), Scale(b)])[1](a), call_on(Scale(b + 1.0), a))"]),
     {"a": A, "b": B}, lambda a, b: [np.maximum(np.tanh(a) * b, 0), a * b, a * (b + 1)], ["f32"] * 3),
    # --- einops' layers and parse_shape ---
    ("einops' Rearrange and Reduce layers, inline and bound",
     "from einops.layers.torch import Rearrange, Reduce\nimport einops\n"
     "fn f(x: f32[2, 3, 4, 5]) -> (f32[2, 20, 3], f32[2, 3, 2, 5], f32[2, 3]) {\n"
     "    to_tokens = Rearrange('b c h w -> b (h w) c')\n"
     "    pool = einops.layers.torch.Reduce('b c (h h2) w -> b c h w', 'max', h2=2)\n"
     "    return to_tokens(x), pool(x), Reduce('b c h w -> b c', reduction='mean')(x)\n}\n",
     {"x": X}, lambda x: [x.transpose(0, 2, 3, 1).reshape(2, 20, 3), x.reshape(2, 3, 2, 2, 5).max(3),
                          x.mean((2, 3))], ["f32"] * 3),
    ("einops.parse_shape: a dict of the named dims, into a reshape and ** into rearrange",
     "from einops import parse_shape, rearrange\n"
     "fn f(x: f32[2, 3, 4, 5]) -> (f32[2, 3, 20], f32[2, 3, 20], f32[5, 2]) {\n"
     "    s = parse_shape(x, 'b c _ _')\n    t = einops.parse_shape(x, 'b ... w')\n"
     "    return x.reshape(s['b'], s['c'], -1), rearrange(x, 'b c h w -> b c (h w)', **parse_shape(x, 'b c h _')), "
     "x[:, 0, 0, :].T.reshape(t['w'], len(s))\n}\n",
     {"x": X}, lambda x: [x.reshape(2, 3, 20), x.reshape(2, 3, 20), x[:, 0, 0, :].T], ["f32"] * 3),
]

# --- nn.Module's parameters and buffers, against PyTorch's own module on the same state ---
STATE_CLASSES = """\
class Block(nn.Module) {
    fn __init__(self, d: int) {
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d, bias=False))
        self.gamma = nn.Parameter(torch.ones(d))
        self.plain = torch.ones(d)
    }
    fn forward(self, x) { return x + self.mlp(self.ln(x)) * self.gamma * self.plain }
}
class Net(nn.Module) {
    fn __init__(self, v: int, d: int) {
        super().__init__()
        self.wte = nn.Embedding(v, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
        self.bn = nn.BatchNorm1d(d)
        self.head = nn.Linear(d, v, bias=False)
        self.register_buffer("shift", torch.zeros(d))
        self.register_buffer("mask", torch.ones(d), persistent=False)
        self.gains = nn.ParameterList([nn.Parameter(torch.ones(d)) for _ in range(2)])
    }
    fn forward(self, idx) {
        x = self.wte(idx)
        for b in self.blocks { x = b(x) }
        return self.head(self.bn(x) * self.mask * self.gains[1] + self.shift)
    }
}
fn init(m) {
    if isinstance(m, nn.Linear) and m.bias is not None { m.bias = torch.zeros(m.out_features) }
}
"""
IDX = np.array([3, 1, 4, 1, 5], dtype=np.int64)


def torch_state():
    """PyTorch's Net (STATE_CLASSES written in Python) with seeded random state, and that state as arrays."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d, bias=False))
            self.gamma = nn.Parameter(torch.ones(d))
            self.plain = torch.ones(d)

        def forward(self, x):
            return x + self.mlp(self.ln(x)) * self.gamma * self.plain

    class Net(nn.Module):
        def __init__(self, v, d):
            super().__init__()
            self.wte = nn.Embedding(v, d)
            self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
            self.bn = nn.BatchNorm1d(d)
            self.head = nn.Linear(d, v, bias=False)
            self.register_buffer("shift", torch.zeros(d))
            self.register_buffer("mask", torch.ones(d), persistent=False)
            self.gains = nn.ParameterList([nn.Parameter(torch.ones(d)) for _ in range(2)])

        def forward(self, idx):
            x = self.wte(idx)
            for b in self.blocks:
                x = b(x)
            return self.head(self.bn(x) * self.mask * self.gains[1] + self.shift)

    torch.manual_seed(5)
    net = Net(10, 8).eval()
    with torch.no_grad():
        for k, t in net.state_dict().items():
            if t.is_floating_point():
                t.copy_(torch.rand_like(t) + 0.5 if "running_var" in k else torch.randn_like(t))
    return torch, net, {k: t.numpy().copy() for k, t in net.state_dict().items() if t.is_floating_point()}


TORCH, NET, STATE = torch_state()
ARGS = {f"s{i}": v for i, v in enumerate(STATE.values())}
SD = "{" + ", ".join(f"'{k}': s{i}" for i, k in enumerate(STATE)) + "}"
SIG = "idx: i64[5], " + ", ".join(f"s{i}: f32{list(v.shape)}" for i, v in enumerate(STATE.values()))


def torch_members():
    """NET's get_parameter, get_buffer and get_submodule, summed."""
    return [np.array([NET.get_parameter("blocks.1.mlp.0.bias").sum().item(),
                      NET.get_buffer("bn.running_var").sum().item(),
                      NET.get_submodule("blocks.0.ln").weight.sum().item()], dtype=np.float32)]


def torch_net(double=False, tie=False, init=False, freeze=False):
    """NET's forward on IDX and its (parameters, buffers) counts, after what the case does to a copy."""
    import copy
    net = copy.deepcopy(NET)
    if tie:
        net.head.weight = net.wte.weight
    if init:
        net.apply(lambda m: isinstance(m, TORCH.nn.Linear) and m.bias is not None and TORCH.nn.init.zeros_(m.bias))
    if double:
        net.double()
    if freeze:
        net.blocks[0].requires_grad_(False)
    with TORCH.no_grad():
        y = net(TORCH.from_numpy(IDX)).numpy()
    return [y, np.array([sum(p.numel() for p in net.parameters()),
                         sum(p.numel() for p in net.parameters() if p.requires_grad),
                         sum(b.numel() for b in net.buffers())], dtype=np.float32)]


CASES += [
    ("nn.Module's state: load_state_dict of the function's tensors, state_dict's, named_parameters' and "
     "named_buffers' names as PyTorch's, parameters counted, get_parameter/get_buffer/get_submodule",
     STATE_CLASSES + fn(SIG + ") -> (f32[5, 10], f32[3], f32[3])",
                        ["model = Net(10, 8)", f"r = model.load_state_dict({SD})",
                         f"assert list(model.state_dict().keys()) == {list(NET.state_dict().keys())!r}",
                         f"assert [n for n, p in model.named_parameters()] == "
                         f"{[n for n, _ in NET.named_parameters()]!r}",
                         f"assert [n for n, b in model.named_buffers()] == {[n for n, _ in NET.named_buffers()]!r}",
                         "assert r.missing_keys == [] and r.unexpected_keys == []",
                         "n = sum(p.numel() for p in model.parameters())",
                         "g = sum(p.numel() for p in model.parameters() if p.requires_grad)",
                         "got = torch.stack([model.get_parameter('blocks.1.mlp.0.bias').sum(), "
                         "model.get_buffer('bn.running_var').sum(), model.get_submodule('blocks.0.ln').weight.sum()])",
                         "return model(idx), torch.tensor([n, g, sum(b.numel() for b in model.buffers())]).float(), "
                         "got"]),
     {"idx": IDX, **ARGS}, lambda *_: torch_net() + torch_members(), ["f32"] * 3),
    ("nn.Module's state: tied weights counted once, state_dict() into another model, apply(fn), double(), "
     "requires_grad_(False)",
     STATE_CLASSES + fn(SIG + ") -> (f64[5, 10], f32[3])",
                        ["a = Net(10, 8)", f"a.load_state_dict({SD})", "a.head.weight = a.wte.weight",
                         "b = Net(10, 8)", "r = b.load_state_dict(a.state_dict(), strict=False)",
                         "b.head.weight = b.wte.weight", "m = b.apply(init).double()",
                         "m.blocks[0].requires_grad_(False)",
                         "n = sum(p.numel() for p in m.parameters())",
                         "g = sum(p.numel() for p in m.parameters() if p.requires_grad)",
                         "return m(idx), torch.tensor([n, g, sum(b.numel() for b in m.buffers())]).float()"]),
     {"idx": IDX, **ARGS}, lambda *_: torch_net(double=True, tie=True, init=True, freeze=True), ["f64", "f32"]),
]

INIT_CLASS = """\
class MLP(nn.Module) {
    fn __init__(self, d: int) {
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)
        self.apply(self._init_weights)
    }
    fn _init_weights(self, module) {
        if isinstance(module, nn.Linear) {
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None { torch.nn.init.zeros_(module.bias) }
        }
    }
    fn forward(self, x) { return self.c_proj(F.gelu(self.c_fc(x))) }
}
fn shift_bias(m) { m.bias = m.bias + 1.0 }
"""
W1 = np.random.default_rng(24).standard_normal((12, 3)).astype(np.float32)
W2 = np.random.default_rng(25).standard_normal((3, 12)).astype(np.float32)
CASES += [
    ("nanoGPT's init: apply(self._init_weights) in __init__ (bias is not None of a parameter not set), double() "
     "before load_state_dict converts what it loads; g = fn; g(m) sets m's attribute",
     INIT_CLASS + fn("x: f64[2, 3], w1: f32[12, 3], w2: f32[3, 12]) -> (f64[2, 3], f32[1])",
                     ["m = MLP(3).double()",
                      "r = m.load_state_dict({'c_fc.weight': w1, 'c_proj.weight': w2}, strict=False)",
                      "assert r.missing_keys == ['c_fc.bias', 'c_proj.bias'] and r.unexpected_keys == []",
                      "assert all(p.dtype == torch.float64 for p in m.parameters())",
                      "g = shift_bias", "g(m.c_proj)  # a function value setting an attribute",
                      "return m(x), torch.tensor([sum(p.numel() for p in m.parameters())]).float()"]),
     {"x": X[0, :2, 0, :3].astype(np.float64), "w1": W1, "w2": W2},
     lambda x, w1, w2: [TORCH.nn.functional.gelu(TORCH.from_numpy(x) @ TORCH.from_numpy(w1).T).numpy() @ w2.T + 1,
                        np.array([12 * 3 + 12 + 3 * 12 + 3], dtype=np.float32)], ["f64", "f32"]),
]

TIED_CLASS = """\
class GPT(nn.Module) {
    fn __init__(self, v: int, d: int) {
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(v, d), ln_f=nn.LayerNorm(d)))
        self.lm_head = nn.Linear(d, v, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
    }
    fn forward(self, idx) { return self.lm_head(self.transformer.ln_f(self.transformer.wte(idx))) }
}
"""


def tied_gpt(idx, w, g, b):
    """TIED_CLASS's forward in NumPy: the embedding and the head one matrix."""
    h = w[idx.astype(np.int64)]
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * g + b
    return [h @ w.T, np.array([10 * 4 + 4 + 4], dtype=np.float32)]


CASES += [
    ("tied weights in __init__ before they are set (nanoGPT's wte.weight = lm_head.weight): one parameter, loaded "
     "through either key",
     TIED_CLASS + fn("idx: i64[3], w: f32[10, 4], g: f32[4], b: f32[4]) -> (f32[3, 10], f32[1])",
                     ["m = GPT(10, 4)",
                      "m.load_state_dict({'transformer.wte.weight': w, 'transformer.ln_f.weight': g, "
                      "'transformer.ln_f.bias': b, 'lm_head.weight': w})",
                      "assert list(m.state_dict().keys()) == ['transformer.wte.weight', 'transformer.ln_f.weight', "
                      "'transformer.ln_f.bias', 'lm_head.weight']",
                      "return m(idx), torch.tensor([sum(p.numel() for p in m.parameters())]).float()"]),
     {"idx": IDX[:3], "w": np.random.default_rng(26).standard_normal((10, 4)).astype(np.float32),
      "g": A[[0, 1, 2, 0]].copy(), "b": B[[0, 1, 2, 1]].copy()}, tied_gpt, ["f32"] * 2),
]

CASES += [
    ("copy.deepcopy of a module whose weights are set: the copy's parameters its own (counted apart; torch's "
     "counts), a module held twice in the original held twice in the copy",
     "import copy\n" + fn("x: f32[2, 4], w: f32[4, 4], b: f32[4]) -> (f32[2, 4], f32[2])",
                          ["a = nn.Linear(4, 4)", "a.weight = w", "a.bias = b", "s = nn.Sequential(a, a)",
                           "c = copy.deepcopy(s)", "c[1].bias = b * 2",
                           "both = nn.ModuleList([s, c, s])",
                           "return c(x), torch.tensor([len(list(both.parameters())), len(both.state_dict())]).float()"]),
     {"x": X[0, :2, 0, :4].copy(), "w": (np.arange(16, dtype=np.float32).reshape(4, 4) - 7) / 8,
      "b": B[[0, 1, 2, 1]].copy()},
     lambda x, w, b: [(x @ w.T + b * 2) @ w.T + b * 2, np.array([4, 12], dtype=np.float32)], ["f32"] * 2),
    ("copy.deepcopy of a module holding more than 64 modules (100 here: its memo grows; once an error 'a module "
     "this deep')",
     "import copy\n" + fn("x: f32[2, 4], w: f32[4, 4], b: f32[4]) -> (f32[2, 4], f32[2, 4])",
                          ["a = nn.Linear(4, 4)", "a.weight = w", "a.bias = b",
                           "s = nn.Sequential(*[nn.Sequential(nn.Identity(), nn.ReLU()) for _ in range(33)], a)",
                           "c = copy.deepcopy(s)", "c[33].bias = b * 2", "return c(x), s(x)"]),
     {"x": X[0, :2, 0, :4].copy(), "w": (np.arange(16, dtype=np.float32).reshape(4, 4) - 7) / 8,
      "b": B[[0, 1, 2, 1]].copy()},
     lambda x, w, b: [np.maximum(x, 0) @ w.T + b * 2, np.maximum(x, 0) @ w.T + b], ["f32"] * 2),
]

# (name, program, the first line tdslc prints on stderr after the path): compile-time errors
FAILURES = [
    # --- nn.Module's state: PyTorch's messages ---
    ("load_state_dict: a missing key", STATE_CLASSES + fn("a: f32[3]) -> f32[3]", [
        "m = Block(3)", "m.load_state_dict({'gamma': a})", "return a"]),
     "33:7: error: RuntimeError: Error(s) in loading state_dict for Block:"),
    ("load_state_dict: a size mismatch", STATE_CLASSES + fn("a: f32[3]) -> f32[3]", [
        "m = nn.Linear(3, 2)", "m.load_state_dict({'weight': a, 'bias': a}, strict=False)", "return a"]),
     "33:7: error: RuntimeError: Error(s) in loading state_dict for Linear:"),
    ("register_buffer over an attribute", STATE_CLASSES + fn("a: f32[3]) -> f32[3]", [
        "m = Block(3)", "m.register_buffer('ln', a)", "return a"]),
     "33:23: error: KeyError: \"attribute 'ln' already exists\""),
    ("Module.to an integer dtype", fn("a: f32[3]) -> f32[3]", ["m = nn.Linear(3, 3).to(torch.long)", "return a"]),
     "2:28: error: TypeError: nn.Module.to only accepts floating point or complex dtypes, but got desired "
     "dtype=torch.int64"),
    ("get_parameter of a buffer", fn("a: f32[3]) -> f32[3]", [
        "m = nn.Sequential(nn.BatchNorm1d(3))", "return m.get_parameter('0.running_mean')"]),
     "3:28: error: AttributeError: `running_mean` is not an nn.Parameter"),
    ("parameters() of a parameter not set", fn("a: f32[3]) -> f32[3]", [
        "m = nn.Linear(3, 3)", "n = sum(p.numel() for p in m.parameters())", "return a"]),
     "3:34: error: parameters(): parameter 'weight' is not set: tdsl has no initial values for parameters; set it "
     "first (m.weight = w, or load_state_dict)"),
    ("pop from an empty list", fn("a: f32[3]) -> f32[3]", ["xs = []", "y = xs.pop()", "return a"]),
     "3:12: error: pop from empty list"),
    ("pop index out of range", fn("a: f32[3]) -> f32[3]", ["xs = [a]", "return xs.pop(1)"]),
     "3:19: error: pop index out of range"),
    ("del of an element out of range", fn("a: f32[3]) -> f32[3]", ["xs = [a]", "del xs[2]", "return a"]),
     "3:12: error: list assignment index out of range"),
    ("a name used after del", fn("a: f32[3]) -> f32[3]", ["b = a", "del b", "return b"]),
     "4:12: error: use of undeclared name 'b'"),
    ("a missing key", fn("a: f32[3]) -> f32[3]", ["d = {'q': a}", "return d['k']"]),
     "3:14: error: KeyError: 'k'"),
    ("a tensor as a key", fn("a: f32[3]) -> f32[3]", ["d = {a: 1}", "return a"]),
     "2:10: error: a dict's keys must be compile-time values (strings, numbers, None), not Tensor: index a list or keep "
     "the tensors under string keys"),
    ("** of a dict with a number key", fn("a: f32[3]) -> f32[3]", ["d = {1: a}", "return torch.relu(**d)"]),
     "3:25: error: keywords must be strings"),
    ("parse_shape of the wrong number of dims", fn("a: f32[3]) -> f32[3]", ["s = einops.parse_shape(a, 'b c')",
                                                                           "return a"]),
     "2:31: error: Can't parse shape with different number of dimensions: b c torch.Size([3])"),
    ("a lambda called with too many arguments", fn("a: f32[3]) -> f32[3]", ["f = lambda t: t", "return f(a, a)"]),
     "3:17: error: <lambda>() takes 1 positional argument but 2 were given"),
    ("a lambda's missing argument", fn("a: f32[3]) -> f32[3]", ["f = lambda t, u: t", "return f(a)"]),
     "3:12: error: <lambda>() missing 1 required positional argument: 'u'"),
    ("a function value called with a keyword its function lacks",
     fn("a: f32[3]) -> f32[3]", ["act = F.relu", "return act(a, bogus=1)"]),
     "3:19: error: relu() got an unexpected keyword argument 'bogus'"),
    ("a tensor passed to a Callable parameter",
     APPLY.split("\n")[0] + "\n" + fn("a: f32[3]) -> f32[3]", ["return apply(a, a)"]),
     "3:18: error: argument 'g' of 'apply' must be callable, not Tensor"),
    ("an attribute of a function value", fn("a: f32[3]) -> f32[3]", ["act = F.relu", "return act.weight"]),
     "3:16: error: 'function' object has no attribute 'weight'"),
    ("del of a tuple's element", fn("a: f32[3]) -> f32[3]", ["t = (a, a)", "del t[0]", "return a"]),
     "3:9: error: 'tuple' object doesn't support item deletion"),
]


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, src, inputs, model, kinds in CASES[::test_subset()]:  # the sanitizer pass: a subset
        want = model(*[f64(v) for v in inputs.values()])
        p, outs = run_outputs(tdslc, src, inputs)
        t.report(name, compare_kinds(p, outs, want, kinds), src)
    for name, src, first in FAILURES:
        t.report(name, refusal_errors(tdslc, src, {"a": A}, first), src)
    p = emit_text(tdslc, fn("a: f32[3], act: str = 'relu') -> f32[3]", ["return a"]), "c")
    want = "int f(const tdsl_tensor *a, tdsl_tensor *out0)"
    t.report("a str parameter fixed to its default is no parameter of the C entry",
             [] if want in p.stdout else [f"exit {p.returncode}, no {want!r} in --emit=c: {p.stderr[:300]}"])
    if os.environ.get("TDSL_BACKEND", "llvm") == "llvm":  # once: each form's GPU code
        t.report("every form emits CUDA C and PTX",
                 [f"{name} {e}" for name, src, *_ in CASES for e in gpu_emit_errors(tdslc, src, ["--fn", "f"])])
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
