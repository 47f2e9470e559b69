#!/usr/bin/python3
"""tests/run/test_builtin.py TDSLC: the op table (frontend/sema_builtin.c): PyTorch's spellings of the ops tdsl has — torch.NAME,
F.NAME and torch.nn.functional.NAME (F and nn as `import torch.nn.functional as F` and
`import torch.nn as nn` bind them), torch's dtype names (torch.float64, torch.long),
Python's True/False and math.pi/e/tau/inf, math.sqrt/floor of numbers, string arguments
(approximate='tanh'), NumPy's argument names (axis=, keepdims=), the in-place view ops
(x.t_()), the *_copy ops, linspace/logspace, x.view(dtype) (a few; every pair: test_view_dtype),
tensor_split and one_hot of constant tensors, narrow at a 0-d tensor start — run as written and compared with NumPy
on the same inputs (or PyTorch 1.13's results, written out).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, compare_kinds, require_backend, run_outputs, test_subset  # noqa: E402


def gelu(a):
    return 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))


def gelu_tanh(a):
    return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))


def softmax(a, axis):
    with np.errstate(invalid="ignore"):  # a row of -inf (an attention mask) is NaN, as in PyTorch
        e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(a, axes, eps=1e-5):
    c = a - a.mean(axis=axes, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=axes, keepdims=True) + eps)


def sdpa(q, k, v, bias=0.0, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale) + bias
    return softmax(s, -1) @ v


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


X = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
Y = np.random.default_rng(4).standard_normal((6, 5)).astype(np.float32)

# (name, the returned expressions, their dtypes, the NumPy values over x [4, 6] and y [6, 5])
CASES = [
    ("torch_functions", "torch.exp(x), torch.sigmoid(x), torch.relu(x), torch.tanh(x)", ["f32"] * 4,
     lambda x, y: [np.exp(x), sigmoid(x), np.maximum(x, 0), np.tanh(x)]),
    ("torch_math", "torch.matmul(x, y), torch.softmax(x, dim=-1), torch.sum(x, 1), torch.clamp(x, min=0.5)",
     ["f32"] * 4,
     lambda x, y: [x @ y, softmax(x, -1), x.sum(1), np.maximum(x, 0.5)]),
    ("functional", "F.gelu(x), F.silu(x), F.relu(x), F.softmax(x, -1), F.log_softmax(x, dim=0)", ["f32"] * 5,
     lambda x, y: [gelu(x), x * sigmoid(x), np.maximum(x, 0), softmax(x, -1), np.log(softmax(x, 0))]),
    ("nn_functional", "torch.nn.functional.gelu(x), nn.functional.sigmoid(x)", ["f32"] * 2,
     lambda x, y: [gelu(x), sigmoid(x)]),
    ("torch_views", "torch.transpose(x, 0, 1), torch.cat([x, x], dim=1), torch.stack([x, x]).sum(0)", ["f32"] * 3,
     lambda x, y: [x.T, np.concatenate([x, x], 1), 2 * x]),
    ("python_literals", "x.sum(1, keepdim=True) * math.pi, where(x > 0, x, -math.inf), "
     "x / math.sqrt(4) + math.floor(2.5), x.amax(dim=0, keepdim=False) * math.e, "
     "x.mean(-1, keepdim=True).expand(4, 6) + math.tau", ["f32"] * 5,
     lambda x, y: [x.sum(1, keepdims=True) * math.pi, np.where(x > 0, x, -np.inf), x / 2 + 2, x.max(0) * math.e,
                   np.broadcast_to(x.mean(-1, keepdims=True), (4, 6)) + math.tau]),
    ("linear", "F.linear(x, y.t(), y[0]), F.linear(x, y.t()), torch.nn.functional.linear(x, y[:, 0], bias=None)",
     ["f32"] * 3, lambda x, y: [x @ y + y[0], x @ y, x @ y[:, 0]]),
    ("dropout", "F.dropout(x, 0.1, training=False) * 2, F.alpha_dropout(x, 0.3) + 1, "
     "F.dropout2d(x, p=0.5, training=False)",
     ["f32"] * 3, lambda x, y: [x * 2, x + 1, x]),
    ("layer_norm", "F.layer_norm(x, [6], y[:, 0], y[:, 1]), torch.layer_norm(x, [4, 6], eps=0.1), "
     "F.layer_norm(x.half(), [6], weight=y[:, 2].half())", ["f32", "f32", "f16"],
     lambda x, y: [layer_norm(x, 1) * y[:, 0] + y[:, 1], layer_norm(x, (0, 1), 0.1),
                   layer_norm(x.astype(np.float16).astype(np.float64), 1) * y[:, 2].astype(np.float16)]),
    ("gelu_tanh", "F.gelu(x, approximate='tanh'), x.double().gelu(approximate=\"tanh\"), F.gelu(x, approximate='none')",
     ["f32", "f64", "f32"], lambda x, y: [gelu_tanh(x), gelu_tanh(x), gelu(x)]),
    ("masked_fill", "x.masked_fill(x > 0, 0.5), torch.masked_fill(x, x[0] < 0, float('-inf')), "
     "x.long().masked_fill(x < 0, 7.9), (x > 0).masked_fill(x < -0.5, 1), x.masked_fill(x > 0, y[0, 0]), "
     "x[0].masked_fill(y[:, :1] > 0, 2.0)", ["f32", "f32", "i64", "bool", "f32", "f32"],
     lambda x, y: [np.where(x > 0, 0.5, x), np.where(x[0] < 0, -np.inf, x), np.where(x < 0, 7, np.trunc(x)),
                   np.where(x < -0.5, True, x > 0), np.where(x > 0, y[0, 0], x),
                   np.where(y[:, :1] > 0, 2.0, x[0])]),
    ("tril_triu", "x.tril(), torch.triu(x, 1), x.tril(diagonal=-2), torch.triu(x.t(), diagonal=-1), "
     "x.masked_fill(torch.tril(torch.ones(4, 6)) == 0, float('-inf')).softmax(-1), "
     "torch.stack([x, x]).long().triu(2), (x > 0).tril()", ["f32", "f32", "f32", "f32", "f32", "i64", "bool"],
     lambda x, y: [np.tril(x), np.triu(x, 1), np.tril(x, -2), np.triu(x.T, -1),
                   softmax(np.where(np.tril(np.ones((4, 6))) == 0, -np.inf, x), -1),
                   np.triu(np.stack([np.trunc(x)] * 2), 2), np.tril(x > 0)]),
    ("like", "torch.zeros_like(x) + 1, torch.ones_like(x, dtype=torch.long), torch.full_like(x, 2.5), "
     "x.new_zeros(2, 3) + x[0, 0], x.new_full((2, 2), 7), x.new_ones([3]).double(), torch.empty_like(y) * 0",
     ["f32", "i64", "f32", "f32", "f32", "f64", "f32"],
     lambda x, y: [np.ones((4, 6)), np.ones((4, 6)), np.full((4, 6), 2.5), np.zeros((2, 3)) + x[0, 0],
                   np.full((2, 2), 7.0), np.ones(3), np.zeros((6, 5))]),
    ("view_aliases", "x.view_as(torch.zeros(6, 4)) * 1, x.reshape_as(x.t()), x.type_as(y.long()), "
     "torch.broadcast_to(y[0], (3, 5)) * 1, x.swapaxes(0, 1), torch.swapdims(x, 1, 0) + 0, x.mT * 1, "
     "torch.movedim(x.view(2, 3, 4), (0, 1), (2, 0)) * 1, x.moveaxis(-1, 0) * 1, x.unflatten(1, (2, -1)) * 1, "
     "torch.atleast_3d(x) * 1, torch.atleast_2d(y[0, 0]) * 1, x.unfold(1, 3, 2) * 1, torch.fliplr(x) * 1, "
     "x.flipud() * 1",
     ["f32", "f32", "i64"] + ["f32"] * 12,
     lambda x, y: [x.reshape(6, 4), x.reshape(6, 4), np.trunc(x),
                   np.broadcast_to(y[0], (3, 5)), x.T, x.T, x.T, np.moveaxis(x.reshape(2, 3, 4), (0, 1), (2, 0)),
                   np.moveaxis(x, -1, 0), x.reshape(4, 2, 3), x[:, :, None], np.array([[y[0, 0]]]),
                   np.stack([x[:, 0:3], x[:, 2:5]], 1), x[:, ::-1], x[::-1]]),
    ("repeats", "x.repeat(2, 1, 3), torch.tile(x, (2,)), x.repeat_interleave(2, dim=1), "
     "torch.repeat_interleave(y[0], 3), x.roll(1), torch.roll(x, (1, -2), (0, 1)), x.roll(6, 1)",
     ["f32"] * 7,
     lambda x, y: [np.tile(x, (2, 1, 3)), np.tile(x, (1, 2)), np.repeat(x, 2, 1), np.repeat(y[0], 3),
                   np.roll(x, 1), np.roll(x, (1, -2), (0, 1)), x]),
    ("products", "torch.outer(x[0], y[:, 0]), x[1].dot(y[:, 1]), torch.addmm(y[0, 0], x, y), "
     "torch.addmm(y[0], x, y, beta=0.5, alpha=2), torch.baddbmm(x[:2, :5], x.view(2, 2, 6), y.expand(2, 6, 5)), "
     "x.norm(), torch.norm(x, p=1, dim=1), x.norm(float('inf'), 0, True), x.norm(3, 1), x.norm(0)",
     ["f32"] * 10,
     lambda x, y: [np.outer(x[0], y[:, 0]), x[1] @ y[:, 1], y[0, 0] + x @ y, 0.5 * y[0] + 2 * (x @ y),
                   x[:2, :5] + x.reshape(2, 2, 6) @ y, np.sqrt((x * x).sum()), np.abs(x).sum(1),
                   np.abs(x).max(0, keepdims=True), (np.abs(x) ** 3).sum(1) ** (1 / 3), np.count_nonzero(x) * 1.0]),
    ("correction", "x.var(1, correction=0), torch.std(x, 0, correction=2, keepdim=True), x.var(), "
     "torch.var_mean(x, 1)[0], torch.var_mean(x, 1, correction=0)[1], torch.std_mean(x, True)[0], "
     "torch.std_mean(x, dim=(0, 1), keepdim=True)[1]", ["f32"] * 7,
     lambda x, y: [x.var(1), x.std(0, ddof=2, keepdims=True), x.var(ddof=1), x.var(1, ddof=1), x.mean(1),
                   x.std(ddof=1), x.mean(keepdims=True)]),
    ("sdpa", "F.scaled_dot_product_attention(x, x.flip(0), x), "
     "F.scaled_dot_product_attention(x, x, x * 2, is_causal=True), "
     "F.scaled_dot_product_attention(x, x, x, attn_mask=x[:, :4] > 0, scale=0.5), "
     "F.scaled_dot_product_attention(x.view(2, 2, 6), x.view(2, 2, 6), x.view(2, 2, 6), x[:2, :2])",
     ["f32"] * 4,
     lambda x, y: [sdpa(x, x[::-1], x), sdpa(x, x, 2 * x, bias=np.where(np.tril(np.ones((4, 4))) > 0, 0, -np.inf)),
                   sdpa(x, x, x, bias=np.where(x[:, :4] > 0, 0, -np.inf), scale=0.5),
                   sdpa(x.reshape(2, 2, 6), x.reshape(2, 2, 6), x.reshape(2, 2, 6), bias=x[:2, :2])]),
    ("torch_dtypes", "x.to(torch.float64) * 2, torch.zeros(4, 6, dtype=torch.long) + 3, x.to(torch.half).float(), "
     "torch.sum(x, 0, dtype=torch.double)", ["f64", "i64", "f32", "f64"],
     lambda x, y: [x.astype(np.float64) * 2, np.full((4, 6), 3, np.int64), x.astype(np.float16).astype(np.float32),
                   x.astype(np.float64).sum(0)]),
    # NumPy's argument names, as PyTorch's argument parser takes them
    ("numpy_names", "torch.sum(x, axis=1), x.mean(axis=0, keepdims=True), x.amax(axis=1), x.argmax(axis=0), "
     "torch.std(x, axis=0), x.cumsum(axis=1)", ["f32", "f32", "f32", "i64", "f32", "f32"],
     lambda x, y: [x.sum(1), x.mean(0, keepdims=True), x.max(1), x.argmax(0), x.std(0, ddof=1), x.cumsum(1)]),
    # atleast_Nd of several tensors (a tuple), of a sequence; .mT .mH .H adjoint() of real and 0-d tensors
    ("atleast_several", "torch.atleast_2d(x[0, 0], x[0])[0], torch.atleast_2d(x[0, 0], x[0])[1], "
     "torch.atleast_3d([x[0]])[0], torch.atleast_1d(x[1, 1]), torch.atleast_3d(x)",
     ["f32"] * 5, lambda x, y: [x[0, 0].reshape(1, 1), x[0][None], x[0][None, :, None], x[1, 1].reshape(1),
                                x[:, :, None]]),
    ("transposes", "x.mT, x.mH, x.H, x.adjoint(), x[0, 0].mT, x[0, 0].H, x[0, 0].adjoint(), "
     "torch.stack([x, x]).mT, torch.stack([x, x]).adjoint()", ["f32"] * 9,
     lambda x, y: [x.T, x.T, x.T, x.T, x[0, 0], x[0, 0], x[0, 0], np.stack([x.T, x.T]), np.stack([x.T, x.T])]),
    ("detach", "x.detach() * 2, torch.detach(y) + 1", ["f32"] * 2, lambda x, y: [x * 2, y + 1]),
    ("in_place_views", "z, w, v + 0", ["f32"] * 3, lambda x, y: [x.T, x, x.T[None]],
     ["z = x.clone()", "z.t_()", "z.unsqueeze_(0)", "z.squeeze_(0)", "w = x.clone()", "w.transpose_(0, 1)",
      "w.swapdims_(0, 1)", "v = x.clone()", "v.swapaxes_(0, 1).unsqueeze_(0)"]),
    ("linspace", "torch.linspace(0, 1, 5), torch.linspace(-2, 3.5, 7, dtype=torch.float64), "
     "torch.linspace(0, 10, 4, dtype=torch.int64), torch.logspace(0, 2, 3), torch.logspace(0, 3, 4, base=2), "
     "torch.linspace(3, 10, 1), torch.logspace(0, 2, 3, dtype=torch.int64), torch.linspace(0, 1, 0)",
     ["f32", "f64", "i64", "f32", "f32", "f32", "i64", "f32"],
     lambda x, y: [np.linspace(0, 1, 5), np.linspace(-2, 3.5, 7), np.array([0, 3, 6, 10]), np.array([1., 10., 100.]),
                   np.array([1., 2., 4., 8.]), np.array([3.]), np.array([1, 10, 100]), np.zeros(0)]),
    ("view_dtype", "x.view(torch.int32), x.double().view(torch.int64), x.view(torch.float32), "
     "x.view(torch.int32).view(torch.float32)", ["i32", "i64", "f32", "f32"],
     lambda x, y: [x.astype(np.float32).view(np.int32), x.view(np.int64), x, x]),
    ("copies", "torch.transpose_copy(x, 0, 1), torch.permute_copy(x, (1, 0)), torch.select_copy(x, 1, 2), "
     "torch.slice_copy(x, 1, 1, 5, 2), torch.diagonal_copy(x, 1), torch.unsqueeze_copy(x, 0), torch.t_copy(x), "
     "torch.view_copy(x, (6, 4)), torch.split_copy(x, 2)[1], torch.unbind_copy(x)[2], "
     "torch.expand_copy(x[0], (2, 6)), torch.detach_copy(x), torch.squeeze_copy(x[None]), "
     "torch.unfold_copy(x, 1, 2, 2), torch.as_strided_copy(x, (2, 2), (1, 2)), torch.alias_copy(y), "
     "torch.split_with_sizes_copy(x, [1, 3])[1]", ["f32"] * 17,
     lambda x, y: [x.T, x.T, x[:, 2], x[:, 1:5:2], np.diagonal(x, 1), x[None], x.T, x.reshape(6, 4), x[2:4], x[2],
                   np.broadcast_to(x[0], (2, 6)), x, x, np.stack([x[:, 0:2], x[:, 2:4], x[:, 4:6]], 1),
                   np.array([[x.flat[0], x.flat[2]], [x.flat[1], x.flat[3]]]), y, x[1:4]]),
    ("constant_tensors", "torch.tensor_split(x, idx, 1)[1], x.tensor_split(torch.tensor(3))[0], "
     "F.one_hot(torch.tensor([0, 3, 1])), x.narrow(1, torch.tensor(2), 3), x.narrow(1, torch.tensor(-2), 2)",
     ["f32", "f32", "i64", "f32", "f32"],
     lambda x, y: [x[:, 1:3], x[:2], np.eye(4, dtype=np.int64)[[0, 3, 1]], x[:, 2:5], x[:, 4:6]],
     ["idx = torch.tensor([1, 3])"]),
    # a start known at run time only: a gather (negative counts from the end)
    ("narrow_at", "x.narrow(1, s + 2, 3), x.narrow(0, s - 3, 2), torch.narrow(x, 1, s, 6)", ["f32"] * 3,
     lambda x, y: [x[:, 2:5], x[1:3], x], ["s = (y[0, 0] * 0).long()"]),
    ("shifts", "(x * 10).long().__lshift__(2), (x * 10).int().__rshift__(1)", ["i64", "i32"],
     lambda x, y: [np.trunc(x.astype(np.float32) * 10).astype(np.int64) << 2,
                   np.trunc(x.astype(np.float32) * 10).astype(np.int32) >> 1]),
    ("broadcast_shapes", "torch.zeros(torch.broadcast_shapes((3, 1), (6,), 1)) + x[0], "
     "torch.ones(torch.broadcast_shapes(2, (1,)))", ["f32"] * 2,
     lambda x, y: [np.zeros((3, 6)) + x[0], np.ones(2)]),
    ("ravel_repeat", "x.t().ravel(), x[:, ::2].ravel(), x[::2].flatten(), x.repeat(1, 2, 1, 1, 2)", ["f32"] * 4,
     lambda x, y: [x.T.ravel(), x[:, ::2].ravel(), x[::2].ravel(), np.tile(x, (1, 2, 1, 1, 2))]),
]


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, exprs, kinds, model, *body in CASES[::test_subset()]:  # the sanitizer pass: a subset
        want = model(X.astype(np.float64), Y.astype(np.float64))
        rets = ", ".join(f"{k}[{', '.join(str(d) for d in np.shape(w))}]" for k, w in zip(kinds, want))
        lines = "".join(f"    {b}\n" for b in (body[0] if body else []))
        src = f"fn f(x: f32[4, 6], y: f32[6, 5]) -> ({rets}) {{\n{lines}    return {exprs}\n}}\n"
        p, outs = run_outputs(tdslc, src, {"x": X, "y": Y})
        errs = compare_kinds(p, outs, want, kinds)
        t.report(name, errs, src)
    # a function of the file may take an op's name, as a Python `def` would: the bare
    # name then calls it; F.NAME, torch.NAME and the method are still PyTorch's
    src = ("fn linear(a: f32[4, 6]) -> f32[4, 6] {\n    return a * 2\n}\n"
           "fn softmax(a: f32[4, 6]) -> f32[4, 6] {\n    return a + 1\n}\n"
           "fn f(x: f32[4, 6], y: f32[6, 5]) -> (f32[4, 6], f32[4, 5], f32[4, 6], f32[4, 6]) {\n"
           "    return linear(x), F.linear(x, y.t()), softmax(x), x.softmax(-1) + torch.softmax(x, 1)\n}\n")
    p, outs = run_outputs(tdslc, src, {"x": X, "y": Y})
    x64 = X.astype(np.float64)
    want = [x64 * 2, x64 @ Y.astype(np.float64), x64 + 1, 2 * softmax(x64, -1)]
    ok = p.returncode == 0 and len(outs) == 4 and all(
        np.allclose(g.astype(np.float64), w, rtol=1e-5, atol=1e-5) for g, w in zip(outs, want))
    t.check("functions named linear and softmax beside PyTorch's", ok, p.stderr.decode(errors="replace")[:400])
    # x.view(dtype) among bool, uint8 and int8: the same bits (NumPy's view); a byte viewed
    # as bool is x != 0
    u = np.array([0, 1, 127, 128, 200, 255], np.uint8)
    i = np.array([-128, -1, 0, 5, 127, -56], np.int8)
    b = np.array([True, False, True, True, False, False])
    src = ("fn f(u: u8[6], i: i8[6], b: bool[6]) -> (i8[6], u8[6], u8[6], i8[6], bool[6], u8[6]) {\n"
           "    return u.view(torch.int8), i.view(torch.uint8), b.view(torch.uint8), b.view(torch.int8), "
           "u.view(torch.bool), i.view(torch.uint8).view(torch.int8).view(torch.uint8)\n}\n")
    p, outs = run_outputs(tdslc, src, {"u": u, "i": i, "b": b})
    want = [u.view(np.int8), i.view(np.uint8), b.view(np.uint8), b.view(np.int8), u != 0, i.view(np.uint8)]
    ok = p.returncode == 0 and len(outs) == 6 and all(g.dtype == w.dtype and np.array_equal(g, w)
                                                       for g, w in zip(outs, want))
    t.check("view(dtype) among bool, uint8 and int8", ok, p.stderr.decode(errors="replace")[:400] or str(outs))
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
