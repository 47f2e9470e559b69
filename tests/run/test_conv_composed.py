#!/usr/bin/python3
"""tests/run/test_conv_composed.py TDSLC: the ops torch.nn.functional composes of avg_pool
and interpolate (frontend/sema_conv_composed.c): lp_pool1d/2d, local_response_norm,
upsample, upsample_nearest, upsample_bilinear, run as written — transposed operands,
f32/f64/f16 — and compared with the same functions written here in NumPy (float64;
"f64@f32": an f64 result with interpolate's f32 source coordinates, checked to f32's
tolerance).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, require_backend, test_subset  # noqa: E402
from test_losses import check_case, f16  # noqa: E402

RNG = np.random.default_rng(15)
INPUTS = {
    "img": RNG.standard_normal((2, 3, 7, 6)).astype(np.float32),
    "x5": RNG.standard_normal((2, 6, 3, 2, 2)).astype(np.float32),
}
PARAMS = "img: f32[2, 3, 7, 6], x5: f32[2, 6, 3, 2, 2]"


def avg_pool(x, k, s, ceil_mode=False):
    """avg_pool over the trailing len(k) dims, no padding (windows that start in range)."""
    outs = []
    for i, (n, kk, ss) in enumerate(zip(x.shape[-len(k):], k, s)):
        o = (n - kk + (ss - 1 if ceil_mode else 0)) // ss + 1
        if ceil_mode and (o - 1) * ss >= n:
            o -= 1
        outs.append(o)
    out = np.zeros(x.shape[:-len(k)] + tuple(outs))
    for idx in np.ndindex(*outs):
        sl = tuple(slice(j * ss, j * ss + kk) for j, kk, ss in zip(idx, k, s))
        win = x[(Ellipsis,) + sl]
        cnt = np.prod([min(j * ss + kk, n) - j * ss for j, kk, ss, n in zip(idx, k, s, x.shape[-len(k):])])
        out[(Ellipsis,) + idx] = win.sum(axis=tuple(range(-len(k), 0))) / cnt
    return out


def lp_pool(x, p, k, s=None, ceil_mode=False):
    s = s or k
    a = avg_pool(x ** p, k, s, ceil_mode)
    return (np.sign(a) * np.maximum(np.abs(a), 0) * np.prod(k)) ** (1.0 / p)


def lrn(x, size, alpha=1e-4, beta=0.75, k=1.0):
    sq = x * x
    div = np.zeros_like(x)
    for c in range(x.shape[1]):
        lo, hi = max(c - size // 2, 0), min(c + (size - 1) // 2, x.shape[1] - 1)
        div[:, c] = sq[:, lo:hi + 1].sum(1) / size
    return x / (div * alpha + k) ** beta


def nearest(x, out):
    for d, o in zip(range(2, x.ndim), out):
        n = x.shape[d]
        x = np.take(x, np.minimum(np.floor(np.arange(o) * (n / o)).astype(int), n - 1), axis=d)
    return x


def bilinear_ac(x, out):
    for d, o in zip(range(2, x.ndim), out):
        n = x.shape[d]
        src = np.arange(o) * ((n - 1) / (o - 1) if o > 1 else 0)
        i0 = np.floor(src).astype(int)
        i1 = np.minimum(i0 + 1, n - 1)
        f = (src - i0).reshape([-1 if a == d else 1 for a in range(x.ndim)])
        x = np.take(x, i0, axis=d) * (1 - f) + np.take(x, i1, axis=d) * f
    return x


CASES = [
    ("lp_pool", "F.lp_pool2d(img, 2, 2), F.lp_pool2d(img, 1.5, (2, 3), stride=(1, 2)), "
     "F.lp_pool2d(img.transpose(2, 3), 3, 3, 2, True), F.lp_pool1d(img[0], 2, 3), "
     "F.lp_pool1d(img[0].transpose(1, 2), 1, 2, stride=3, ceil_mode=True), F.lp_pool2d(img.double(), 2, (3, 2))",
     ["f32", "f32", "f32", "f32", "f32", "f64"],
     lambda d: [lp_pool(d["img"], 2, (2, 2)), lp_pool(d["img"], 1.5, (2, 3), (1, 2)),
                lp_pool(d["img"].transpose(0, 1, 3, 2), 3, (3, 3), (2, 2), True), lp_pool(d["img"][0], 2, (3,)),
                lp_pool(d["img"][0].transpose(0, 2, 1), 1, (2,), (3,), True), lp_pool(d["img"], 2, (3, 2))]),
    ("local_response_norm", "F.local_response_norm(img, 2), F.local_response_norm(img[0], 3, alpha=0.1, beta=0.5, "
     "k=2.0), F.local_response_norm(x5, 4, 0.01, 1.0, 0.5), F.local_response_norm(img.transpose(1, 3), 5), "
     "F.local_response_norm(img.double(), 3, 1.0), F.local_response_norm(img.half(), 3, 0.5)",
     ["f32", "f32", "f32", "f32", "f64", "f16"],
     lambda d: [lrn(d["img"], 2), lrn(d["img"][0], 3, 0.1, 0.5, 2.0), lrn(d["x5"], 4, 0.01, 1.0, 0.5),
                lrn(d["img"].transpose(0, 3, 2, 1), 5), lrn(d["img"], 3, 1.0), lrn(f16(d["img"]), 3, 0.5)]),
    ("upsample", "F.upsample(img, scale_factor=2), F.upsample(img, size=(5, 9), mode='bilinear', align_corners=True), "
     "F.upsample_nearest(img[0], 10), F.upsample_nearest(img.transpose(2, 3), scale_factor=(2, 1)), "
     "F.upsample_bilinear(img, (4, 11)), F.upsample_bilinear(img.double(), scale_factor=2)",
     ["f32", "f32", "f32", "f32", "f32", "f64@f32"],
     lambda d: [nearest(d["img"], (14, 12)), bilinear_ac(d["img"], (5, 9)), nearest(d["img"][0], (10,)),
                nearest(d["img"].transpose(0, 1, 3, 2), (12, 7)), bilinear_ac(d["img"], (4, 11)),
                bilinear_ac(d["img"], (14, 12))]),
]


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, exprs, kinds, model in CASES[::test_subset()]:  # the sanitizer pass: a subset
        check_case(tdslc, t, name, exprs, kinds, model, INPUTS, PARAMS)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
