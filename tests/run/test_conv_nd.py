#!/usr/bin/python3
"""tests/run/test_conv_nd.py TDSLC: the rank-generic convolution and pooling family —
conv3d and conv_transpose3d (groups, a grouped 3-D convolution whose window view would
pass 8 dims, depthwise), max/avg/adaptive pools of 3 spatial dims, return_indices of the
max pools (1-D to 3-D, adaptive too: the flat position of each max in its plane, the
first of ties, the last NaN), max_unpool1d/2d/3d, and interpolate's modes (nearest,
nearest-exact, linear, bilinear, bicubic, trilinear, area). Each program runs and is
compared with NumPy computing the same thing here by direct loops over windows (the
meaning of PyTorch 1.13's kernels); f32, f64 and f16.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import itertools
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, compare_kinds, require_backend, run_outputs  # noqa: E402
from test_conv import np_conv_transpose  # noqa: E402  (rank-generic: 1-3 spatial dims)

RNG = np.random.default_rng(29)
NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64}


def tup(v, n):
    return (v,) * n if np.isscalar(v) else tuple(v)


def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """conv1d/2d/3d: x [N, C, *sp] (or unbatched), w [O, C/g, *k], by loops over taps."""
    nsp = w.ndim - 2
    unbatched = x.ndim == nsp + 1
    if unbatched:
        x = x[None]
    s, p, d = tup(stride, nsp), tup(padding, nsp), tup(dilation, nsp)
    k = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(v, v) for v in p])
    out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nsp)]
    N, C = x.shape[:2]
    O = w.shape[0]
    cg, og = C // groups, O // groups
    y = np.zeros((N, O) + tuple(out))
    for g in range(groups):
        for tap in np.ndindex(*k):
            sl = tuple(slice(tap[i] * d[i], tap[i] * d[i] + (out[i] - 1) * s[i] + 1, s[i]) for i in range(nsp))
            xs = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            ws = w[(slice(g * og, (g + 1) * og), slice(None)) + tap]
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", xs, ws)
    if b is not None:
        y = y + b.reshape((O,) + (1,) * nsp)
    return y[0] if unbatched else y


def first_max(vals, pos):
    """PyTorch's max pool scan: `val > max || isnan(val)` over the window in order."""
    best, at = -np.inf, pos[0] if pos else -1
    for v, q in zip(vals, pos):
        if v > best or np.isnan(v):
            best, at = v, q
    return best, at


def np_pool(x, nsp, k, s=None, p=0, dil=1, ceil=False, kind="max", cip=True, div=None):
    """max_pool/avg_pool over x's last nsp dims by loops over windows; max also returns the
    flat position of each max in its plane."""
    k, p, dil = tup(k, nsp), tup(p, nsp), tup(dil, nsp)
    s = k if s is None else tup(s, nsp)
    sp = x.shape[-nsp:]
    out = []
    for i in range(nsp):
        num = sp[i] + 2 * p[i] - dil[i] * (k[i] - 1) - 1 + (s[i] - 1 if ceil else 0)
        o = num // s[i] + 1
        if ceil and (o - 1) * s[i] >= sp[i] + p[i]:
            o -= 1
        out.append(o)
    lead = x.shape[:-nsp]
    y = np.zeros(lead + tuple(out))
    ix = np.zeros(lead + tuple(out), dtype=np.int64)
    for o in np.ndindex(*out):
        lo = [o[i] * s[i] - p[i] for i in range(nsp)]
        taps = [[lo[i] + j * dil[i] for j in range(k[i])] for i in range(nsp)]
        inside = [[t for t in taps[i] if 0 <= t < sp[i]] for i in range(nsp)]
        cells = list(itertools.product(*inside))
        pos = [int(np.ravel_multi_index(c, sp)) for c in cells]
        for l in np.ndindex(*lead):
            vals = [x[l + c] for c in cells]
            if kind == "max":
                y[l + o], ix[l + o] = first_max(vals, pos)
            else:
                ends = [min(lo[i] + k[i], sp[i] + p[i]) for i in range(nsp)]
                size = np.prod([ends[i] - lo[i] for i in range(nsp)]) if cip else len(cells)
                y[l + o] = sum(vals) / (div if div else size)
    return (y, ix) if kind == "max" else y


def np_adaptive(x, nsp, out, kind):
    """Adaptive pools: output i of a dim of length n reduces [floor(i n / o), ceil((i + 1) n / o))."""
    out = tup(out, nsp)
    sp = x.shape[-nsp:]
    lead = x.shape[:-nsp]
    y = np.zeros(lead + out)
    ix = np.zeros(lead + out, dtype=np.int64)
    for o in np.ndindex(*out):
        rng = [range(o[i] * sp[i] // out[i], -((-(o[i] + 1) * sp[i]) // out[i])) for i in range(nsp)]
        cells = list(itertools.product(*rng))
        pos = [int(np.ravel_multi_index(c, sp)) for c in cells]
        for l in np.ndindex(*lead):
            vals = [x[l + c] for c in cells]
            if kind == "max":
                y[l + o], ix[l + o] = first_max(vals, pos)
            else:
                y[l + o] = np.mean(vals)
    return (y, ix) if kind == "max" else y


def np_unpool(x, ix, nsp, out):
    """max_unpool: zeros of size out in each plane, x's elements at their positions."""
    lead = x.shape[:-nsp]
    y = np.zeros(lead + (int(np.prod(out)),))
    xf = x.reshape(lead + (-1,))
    jf = ix.reshape(lead + (-1,))
    for l in np.ndindex(*lead):
        y[l][jf[l]] = xf[l]
    return y.reshape(lead + tuple(out))


# ---- interpolate: PyTorch 1.13's source indices, in f32 as its kernels compute them ----
def scale_of(n, o, sf, align, ft=np.float32):
    """The source-index scale, in ft (f32; f64 for f64 input, PyTorch's opmath type)."""
    if align:
        return ft(n - 1) / ft(o - 1) if o > 1 else ft(0)
    return ft(1.0 / sf) if sf is not None else ft(n) / ft(o)


def cubic_coeffs(t):
    A = -0.75

    def c1(v):
        return ((A + 2) * v - (A + 3)) * v * v + 1

    def c2(v):
        return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A
    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def np_interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False):
    nsp = x.ndim - 2
    if mode == "area":
        return np_adaptive(x, nsp, size if size is not None else
                           tuple(int(np.floor(x.shape[2 + i] * tup(scale_factor, nsp)[i])) for i in range(nsp)), "avg")
    ft = np.float64 if x.dtype == np.float64 else np.float32
    x = x.astype(np.float64)
    for i in range(nsp):
        d = 2 + i
        n = x.shape[d]
        sf = None if scale_factor is None else tup(scale_factor, nsp)[i]
        o = tup(size, nsp)[i] if size is not None else int(np.floor(n * sf))
        dst = np.arange(o, dtype=np.float32)
        shape = [1] * x.ndim
        shape[d] = o
        if mode in ("nearest", "nearest-exact"):
            sc = scale_of(n, o, sf, False)
            src = (dst + np.float32(0.5)) * sc if mode == "nearest-exact" else dst * sc
            idx = np.minimum(np.floor(src).astype(np.int64), n - 1)
            x = np.take(x, idx, axis=d)
            continue
        sc = scale_of(n, o, sf, align_corners, ft)
        dst = dst.astype(ft)
        if mode == "bicubic":
            src = dst * sc if align_corners else (dst + ft(0.5)) * sc - ft(0.5)
            i0 = np.floor(src).astype(np.int64)
            t = (src - i0).astype(ft)
            acc = 0
            for j, c in enumerate(cubic_coeffs(t)):
                idx = np.clip(i0 - 1 + j, 0, n - 1)
                acc = acc + np.take(x, idx, axis=d) * c.astype(np.float64).reshape(shape)
            x = acc
            continue
        src = dst * sc if align_corners else np.maximum((dst + ft(0.5)) * sc - ft(0.5), ft(0))
        i0 = src.astype(np.int64)
        i1 = np.minimum(i0 + 1, n - 1)
        l1 = (src - i0).astype(ft)
        l0 = ft(1) - l1
        x = np.take(x, i0, axis=d) * l0.astype(np.float64).reshape(shape) + \
            np.take(x, i1, axis=d) * l1.astype(np.float64).reshape(shape)
    return x


def shape_of(a):
    return ", ".join(str(d) for d in np.shape(a))


def run_case(t, tdslc, name, params, exprs, want, kinds):
    """params: [(name, dtype, array)]; exprs the returned expressions, want their NumPy values."""
    decl = [f"{p}: {dt}[{shape_of(a)}]" for p, dt, a in params]
    inputs = {p: a.astype(NP[dt]) for p, dt, a in params}
    rets = ", ".join(f"{k}[{shape_of(w)}]" for k, w in zip(kinds, want))
    src = f"fn f({', '.join(decl)}) -> ({rets}) {{\n    return {exprs}\n}}\n"
    p, outs = run_outputs(tdslc, src, inputs)
    t.report(name, compare_kinds(p, outs, want, kinds), src)


def rounded(a, dt):
    return a.astype(NP[dt]).astype(np.float64)


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    x5 = RNG.standard_normal((2, 4, 5, 6, 4))
    w3 = RNG.standard_normal((6, 2, 2, 3, 2))
    b6 = RNG.standard_normal(6)
    wd = RNG.standard_normal((4, 1, 3, 2, 2))   # depthwise: groups=4, C/g = 1
    wt = RNG.standard_normal((4, 3, 2, 2, 3))   # conv_transpose3d: [Cin, O/g, k...]
    for dt in ("f32", "f64", "f16"):
        x, w, b, d, u = (rounded(v, dt) for v in (x5, w3, b6, wd, wt))
        # groups=2 of 3-D: the window view [N, G, C/G, k.., out..] would have 9 dims
        want = [np_conv(x, w, b, groups=2), np_conv(x, w, None, stride=(2, 1, 2), padding=1, dilation=(1, 2, 1), groups=2),
                np_conv(x[0], d, None, padding=(1, 0, 1), groups=4),
                np_conv(x, np.tile(w[:, :1], (4, 1, 1, 1, 1)), None, groups=4)]
        run_case(t, tdslc, f"conv3d {dt}", [("x", dt, x), ("w", dt, w), ("b", dt, b), ("d", dt, d)],
                 "F.conv3d(x, w, b, groups=2), torch.conv3d(x, w, None, (2, 1, 2), 1, (1, 2, 1), 2), "
                 "F.conv3d(x[0], d, padding=(1, 0, 1), groups=4), F.conv3d(x, w[:, :1].repeat(4, 1, 1, 1, 1), groups=4)",
                 want, [dt] * 4)
        want = [np_conv_transpose(x, u), np_conv_transpose(x, u, stride=(2, 1, 2), padding=1, output_padding=(1, 0, 0)),
                np_conv_transpose(x[1], u, b[:3], dilation=(1, 2, 1))]
        run_case(t, tdslc, f"conv_transpose3d {dt}", [("x", dt, x), ("u", dt, u), ("b", dt, b)],
                 "F.conv_transpose3d(x, u), F.conv_transpose3d(x, u, stride=(2, 1, 2), padding=1, "
                 "output_padding=(1, 0, 0)), torch.conv_transpose3d(x[1], u, b[:3], dilation=(1, 2, 1))",
                 want, [dt] * 3)
        mp1, mi1 = np_pool(x, 3, 2)
        mp2, mi2 = np_pool(x, 3, (3, 2, 2), (2, 1, 2), 1, (1, 2, 1), True)
        want = [mp1, mp2, np_pool(x, 3, 2, kind="avg"), np_pool(x, 3, 3, 2, 1, kind="avg", cip=False, ceil=True),
                np_pool(x[0], 3, (2, 3, 2), 1, kind="avg", div=5)]
        run_case(t, tdslc, f"3-D pools {dt}", [("x", dt, x)],
                 "F.max_pool3d(x, 2), torch.max_pool3d(x, (3, 2, 2), (2, 1, 2), 1, (1, 2, 1), True), "
                 "F.avg_pool3d(x, 2), F.avg_pool3d(x, 3, 2, 1, True, False), "
                 "F.avg_pool3d(x[0], (2, 3, 2), 1, divisor_override=5)", want, [dt] * 5)
        aa, (am, ai) = np_adaptive(x, 3, (2, 4, 3), "avg"), np_adaptive(x, 3, (3, 2, 4), "max")
        run_case(t, tdslc, f"3-D adaptive pools {dt}", [("x", dt, x)],
                 "F.adaptive_avg_pool3d(x, (2, 4, 3)), F.adaptive_max_pool3d(x, (3, 2, 4)), "
                 "F.adaptive_max_pool3d(x, (3, 2, 4), return_indices=True)[1]", [aa, am, ai], [dt, dt, "i64"])
        # return_indices: ties and NaN (the first max; the last NaN)
        y = rounded(np.round(RNG.standard_normal((2, 3, 6, 5)) * 2) / 2, dt)
        y[0, 0, 1, 1] = y[0, 0, 2, 2] = np.nan
        p1, i1 = np_pool(y, 2, 2)
        p2, i2 = np_pool(y, 2, 3, 2, 1, 2)
        q1, j1 = np_pool(y[0], 1, 3, 2, 1)
        a2, k2 = np_adaptive(y, 2, (4, 3), "max")
        run_case(t, tdslc, f"return_indices {dt}", [("y", dt, y), ("x", dt, x)],
                 "F.max_pool2d(y, 2, return_indices=True)[0], F.max_pool2d(y, 2, return_indices=True)[1], "
                 "F.max_pool2d(y, 3, 2, 1, 2, return_indices=True)[1], F.max_pool1d(y[0], 3, 2, 1, return_indices=True)[1], "
                 "F.adaptive_max_pool2d(y, (4, 3), return_indices=True)[1], F.max_pool3d(x, 2, return_indices=True)[1], "
                 "F.max_pool2d(y, 2, return_indices=True)[0] * 2",  # an element as an operand
                 [p1, i1, i2, j1, k2, mi1, p1 * 2], [dt] + ["i64"] * 5 + [dt])
        # max_unpool of a pool's indices (and a given output size)
        z = rounded(RNG.standard_normal((2, 3, 5, 7)), dt)
        zp, zi = np_pool(z[:, :, :4, :6], 2, 2)
        op, oi = np_pool(z, 2, 2)
        vp, vi = np_pool(z[0], 1, 2, 2, 1)
        wp, wi = np_pool(x[:, :, :4], 3, 2)
        want = [np_unpool(zp, zi, 2, (4, 6)), np_unpool(op, oi, 2, (5, 7)), np_unpool(vp, vi, 1, (7,)),
                np_unpool(wp, wi, 3, (4, 6, 4))]
        run_case(t, tdslc, f"max_unpool {dt}", [("z", dt, z), ("x", dt, x)],
                 "F.max_unpool2d(*F.max_pool2d(z[:, :, :4, :6], 2, return_indices=True), 2), "
                 "F.max_unpool2d(*F.max_pool2d(z, 2, return_indices=True), 2, output_size=(5, 7)), "
                 "F.max_unpool1d(*F.max_pool1d(z[0], 2, 2, 1, return_indices=True), 2, 2, 1, [7]), "
                 "F.max_unpool3d(*F.max_pool3d(x[:, :, :4], 2, return_indices=True), 2)", want, [dt] * 4)
    for dt in ("f32", "f64"):
        v = rounded(RNG.standard_normal((2, 3, 5, 6)), dt)
        c = rounded(RNG.standard_normal((1, 2, 3, 4, 5)), dt)
        want = [np_interpolate(v, (7, 4), mode="nearest-exact"), np_interpolate(v, scale_factor=1.5, mode="nearest-exact"),
                np_interpolate(v, (8, 9), mode="bicubic"), np_interpolate(v, (4, 11), mode="bicubic", align_corners=True),
                np_interpolate(v, scale_factor=(1.5, 0.75), mode="bicubic"),
                np_interpolate(c, (5, 3, 8), mode="trilinear"),
                np_interpolate(c, scale_factor=2, mode="trilinear", align_corners=True),
                np_interpolate(v, (3, 4), mode="area"), np_interpolate(c, (2, 3, 2), mode="area"),
                np_interpolate(c, (4, 6, 7), mode="nearest")]
        run_case(t, tdslc, f"interpolate modes {dt}", [("v", dt, v), ("c", dt, c)],
                 "F.interpolate(v, (7, 4), mode='nearest-exact'), F.interpolate(v, scale_factor=1.5, mode='nearest-exact'), "
                 "F.interpolate(v, (8, 9), mode='bicubic'), F.interpolate(v, (4, 11), mode='bicubic', align_corners=True), "
                 "F.interpolate(v, scale_factor=(1.5, 0.75), mode='bicubic'), "
                 "F.interpolate(c, (5, 3, 8), mode='trilinear'), "
                 "F.interpolate(c, scale_factor=2, mode='trilinear', align_corners=True), "
                 "F.interpolate(v, (3, 4), mode='area'), F.interpolate(c, (2, 3, 2), mode='area'), "
                 "F.interpolate(c, (4, 6, 7))", want, [dt] * 10)
    sys.exit(t.summary(recap=True))


if __name__ == "__main__":
    main()
