#!/usr/bin/python3
"""tests/run/test_python_objects.py TDSLC: the Python objects forward passes hand around
tensors. Devices (x.device, torch.device, device= of the creation ops, x.to(device),
x.to(device, dtype), x.to(other), x.cuda(), x.cpu(), x.type(dtype)) are accepted and
ignored; torch.finfo and torch.iinfo are compile-time numbers, checked against NumPy's
finfo and iinfo (bfloat16's from its format: 8 exponent bits, 7 fraction bits);
torch.tensor of numbers is a constant tensor with PyTorch's dtype inference (a float
makes f32, ints i64, bools bool), checked against np.array of the same data. And
torch.meshgrid (views), in Swin's relative position index as timm writes it.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, require_backend, run_case  # noqa: E402

X = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
I = np.random.default_rng(4).integers(-9, 9, size=(3, 4)).astype(np.int64)

BF16_MAX = (2 - 2.0 ** -7) * 2.0 ** 127
BF16_TINY = 2.0 ** -126

# (name, body lines, returned expressions, their dtypes, NumPy values over x, i)
CASES = [
    ("devices", ["a = x.to(x.device)", "b = torch.zeros(3, 4, device=x.device, dtype=torch.float64)",
                 "c = x.to('cuda', torch.float64)", "d = x.cuda(0) + x.cpu()",
                 "e = torch.ones_like(x, device='cpu', requires_grad=False)",
                 "g = x.to(device=torch.device('cuda', 0), dtype=torch.float16)", "h = x.to(i)",
                 "k = x.type(torch.int32)", "m = torch.full([], 2.0, dtype=x.dtype, device=x.device)",
                 "n = torch.arange(4, device='cuda:1', pin_memory=False, layout=torch.strided)",
                 "q = torch.empty(3, 4, device='cpu', memory_format=torch.contiguous_format)"],
     "a, b + c, d, e, g, h, k, x * m, n, x * q.shape[0] + q.dtype.is_floating_point",
     ["f32", "f64", "f32", "f32", "f16", "i64", "i32", "f32", "i64", "f32"],
     lambda x, i: [x, x.astype(np.float64), 2 * x, np.ones_like(x), x.astype(np.float16), np.trunc(x).astype(np.int64),
                   np.trunc(x).astype(np.int32), 2 * x, np.arange(4), 3 * x + 1]),
    ("finfo", ["h16 = torch.finfo(torch.float16)", "s32 = torch.finfo()", "d64 = torch.finfo(torch.double)",
               "b16 = torch.finfo(torch.bfloat16)", "c8 = torch.iinfo(torch.int8)", "b8 = torch.iinfo(torch.uint8)",
               "l64 = torch.iinfo(torch.long)",
               "v = torch.tensor([h16.max, h16.min, h16.eps, h16.tiny, s32.max, s32.eps, s32.tiny, s32.resolution, "
               "d64.eps, d64.tiny, b16.max, b16.eps, b16.tiny, s32.bits, d64.smallest_normal], dtype=torch.float64)",
               "w = torch.tensor([c8.min, c8.max, b8.min, b8.max, l64.min, l64.max, c8.bits, l64.bits])"],
     "v, w, x.masked_fill(x > 0, torch.finfo(x.dtype).min)", ["f64", "i64", "f32"],
     lambda x, i: [np.array([np.finfo(np.float16).max, np.finfo(np.float16).min, np.finfo(np.float16).eps,
                             np.finfo(np.float16).tiny, np.finfo(np.float32).max, np.finfo(np.float32).eps,
                             np.finfo(np.float32).tiny, np.finfo(np.float32).resolution, np.finfo(np.float64).eps,
                             np.finfo(np.float64).tiny, BF16_MAX, 2.0 ** -7, BF16_TINY, 32, np.finfo(np.float64).tiny]),
                   np.array([-128, 127, 0, 255, np.iinfo(np.int64).min, np.iinfo(np.int64).max, 8, 64]),
                   np.where(x > 0, np.finfo(np.float32).min, x)]),
    ("tensor", ["a = torch.tensor([[1, 2], [3, 4]])", "b = torch.tensor([1, 2.5, True])",
                "c = torch.tensor([True, False])", "d = torch.tensor(3.0)", "e = torch.tensor(((1.5, 2),), dtype=torch.float64)",
                "g = torch.tensor([1.7, -1.7], dtype=torch.int64)", "h = torch.as_tensor(x)",
                "k = torch.scalar_tensor(3)", "m = torch.tensor([])", "n = torch.tensor(x)",
                "p = torch.as_tensor([[-1, 0]], dtype=torch.int8, device='cpu')"],
     "a, b, c, d, e, g, h, k, m, n, p", ["i64", "f32", "bool", "f32", "f64", "i64", "f32", "f32", "f32", "f32", "i8"],
     lambda x, i: [np.array([[1, 2], [3, 4]]), np.array([1, 2.5, 1]), np.array([True, False]), np.array(3.0),
                   np.array([[1.5, 2]]), np.array([1, -1]), x, np.array(3.0), np.zeros(0), x, np.array([[-1, 0]])]),
]


SWIN = ["window_size = (3, 4)", "coords_h = torch.arange(window_size[0])", "coords_w = torch.arange(window_size[1])",
        'coords = torch.stack(torch.meshgrid([coords_h, coords_w], indexing="ij"))',
        "coords_flatten = torch.flatten(coords, 1)",
        "relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]",
        "relative_coords = relative_coords.permute(1, 2, 0).contiguous()",
        "relative_coords[:, :, 0] += window_size[0] - 1", "relative_coords[:, :, 1] += window_size[1] - 1",
        "relative_coords[:, :, 0] *= 2 * window_size[1] - 1", "relative_position_index = relative_coords.sum(-1)",
        "gx, gy = torch.meshgrid(x[0], x[1, :3], indexing='xy')", "m0, m1, m2 = torch.meshgrid(x[0, :2], x[1], x[2, 0])"]


def swin_index(h, w):
    coords = np.stack(np.meshgrid(np.arange(h), np.arange(w), indexing="ij"))
    flat = coords.reshape(2, -1)
    rel = (flat[:, :, None] - flat[:, None, :]).transpose(1, 2, 0).copy()
    rel[:, :, 0] += h - 1
    rel[:, :, 1] += w - 1
    rel[:, :, 0] *= 2 * w - 1
    return rel.sum(-1)


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, body, exprs, kinds, model in CASES:
        want = model(X.astype(np.float64), I)
        errs, src = run_case(tdslc, "x: f32[3, 4], i: i64[3, 4]", body, exprs, kinds, want, {"x": X, "i": I})
        t.report(name, errs, src)
    x = X.astype(np.float64)
    gx, gy = np.meshgrid(x[0], x[1, :3], indexing="xy")
    m0, m1, m2 = np.meshgrid(x[0, :2], x[1], x[2, :1], indexing="ij")
    errs, src = run_case(tdslc, "x: f32[3, 4]", SWIN, "relative_position_index, gx, gy, m0, m1 + m2",
                         ["i64", "f32", "f32", "f32", "f32"], [swin_index(3, 4), gx, gy, m0, m1 + m2], {"x": X})
    t.report("meshgrid: swin relative position index", errs, src)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
