#!/usr/bin/python3
"""tests/run/test_conv.py TDSLC: torch.nn.functional's padding (pad: constant, reflect,
replicate, circular, negative pads), pooling (max_pool, avg_pool, adaptive pools) and
convolution (conv1d, conv2d: stride, padding, 'same', dilation, groups, bias). Each
program runs and is compared with NumPy computing the same thing here (np.pad, window
views of numpy.lib.stride_tricks.sliding_window_view, einsum over the windows), on
contiguous and non-contiguous inputs, f32, f64 and f16.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.

`test_conv.py TDSLC --gpu-emit` (ctest's run.conv.gpu_emit, label gpu) instead compiles
every program, the empty ones included, in one file with --emit=cuda and nvcc and with
--emit=ptx and ptxas. The CUDA toolkit is optional (scripts/deps.sh does not install
it): without nvcc or ptxas that test exits 77, a skip ctest shows, never a pass.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, compare_kinds, env_backend, require_backend, run_outputs, test_subset  # noqa: E402

RNG = np.random.default_rng(14)


def np_pad(x, pads, mode="constant", value=0.0):
    """PyTorch's F.pad: pads[0:2] is the last dim's (left, right), negative crops."""
    npm = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    for i in range(len(pads) // 2):
        d = x.ndim - 1 - i
        l, r = pads[2 * i], pads[2 * i + 1]
        n = x.shape[d]
        if mode == "circular":  # PyTorch wraps the cropped middle
            x = np.take(x, range(max(-l, 0), n - max(-r, 0)), axis=d)
            crop = (0, 0)
        else:
            crop = (max(-l, 0), max(-r, 0))
        width = [(0, 0)] * x.ndim
        width[d] = (max(l, 0), max(r, 0))
        kw = {"constant_values": value} if npm == "constant" else {}
        x = np.pad(x, width, mode=npm, **kw)
        m = x.shape[d]
        x = np.take(x, range(crop[0], m - crop[1]), axis=d)
    return x


def np_pool(x, nsp, k, s=None, p=0, dil=1, ceil=False, kind="max", cip=True, div=None):
    """PyTorch's max_pool/avg_pool over x's last nsp dims, by direct loops over windows."""
    k, s, p, dil = [(v,) * nsp if np.isscalar(v) else tuple(v) for v in (k, s if s is not None else k, p, dil)]
    sp = x.shape[-nsp:]
    out = []
    for i in range(nsp):
        num = sp[i] + 2 * p[i] - dil[i] * (k[i] - 1) - 1 + (s[i] - 1 if ceil else 0)
        o = num // s[i] + 1
        if ceil and (o - 1) * s[i] >= sp[i] + p[i]:
            o -= 1
        out.append(o)
    y = np.zeros(x.shape[:-nsp] + tuple(out))
    for o in np.ndindex(*out):
        lo = [o[i] * s[i] - p[i] for i in range(nsp)]
        taps = [[lo[i] + j * dil[i] for j in range(k[i])] for i in range(nsp)]
        inside = [[t for t in taps[i] if 0 <= t < sp[i]] for i in range(nsp)]
        win = x[(...,) + np.ix_(*inside)]
        if kind == "max":
            y[(...,) + o] = win.reshape(x.shape[:-nsp] + (-1,)).max(-1)
        else:
            ends = [min(lo[i] + k[i], sp[i] + p[i]) for i in range(nsp)]
            size = np.prod([ends[i] - lo[i] for i in range(nsp)]) if cip else np.prod([len(v) for v in inside])
            y[(...,) + o] = win.reshape(x.shape[:-nsp] + (-1,)).sum(-1) / (div if div else size)
    return y


def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's conv1d/conv2d: x [N, C, *sp] (or unbatched), w [O, C/g, *k]; an einsum
    over the windows of the zero-padded input (sliding_window_view)."""
    nsp = w.ndim - 2
    unbatched = x.ndim == nsp + 1
    if unbatched:
        x = x[None]
    k = w.shape[2:]
    s, d = [(v,) * nsp if np.isscalar(v) else tuple(v) for v in (stride, dilation)]
    if padding == "same":
        tot = [d[i] * (k[i] - 1) for i in range(nsp)]
        pads = [(t // 2, t - t // 2) for t in tot]
    elif padding == "valid":
        pads = [(0, 0)] * nsp
    else:
        p = (padding,) * nsp if np.isscalar(padding) else tuple(padding)
        pads = [(v, v) for v in p]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    span = [d[i] * (k[i] - 1) + 1 for i in range(nsp)]
    win = sliding_window_view(xp, span, axis=tuple(range(2, 2 + nsp)))  # [N, C, *out_full, *span]
    sl = tuple(slice(None, None, s[i]) for i in range(nsp)) + tuple(slice(None, None, d[i]) for i in range(nsp))
    win = win[(slice(None), slice(None)) + sl]  # [N, C, *out, *k]
    N, C = x.shape[:2]
    O = w.shape[0]
    win = win.reshape((N, groups, C // groups) + win.shape[2:])
    wg = w.reshape((groups, O // groups) + w.shape[1:])
    sub = "hw"[:nsp] if nsp == 2 else "w"
    outs = "yz"[:nsp] if nsp == 2 else "z"
    y = np.einsum(f"ngc{outs}{sub},goc{sub}->ngo{outs}", win, wg).reshape((N, O) + win.shape[3:3 + nsp])
    if b is not None:
        y = y + b.reshape((O,) + (1,) * nsp)
    return y[0] if unbatched else y


def np_adaptive(x, nsp, out, kind):
    """PyTorch's adaptive pools: output i of a dim of length n reduces [floor(i n / o), ceil((i + 1) n / o))."""
    out = (out,) * nsp if np.isscalar(out) else tuple(out)
    sp = x.shape[-nsp:]
    y = np.zeros(x.shape[:-nsp] + out)
    for o in np.ndindex(*out):
        sl = tuple(slice(o[i] * sp[i] // out[i], -((-(o[i] + 1) * sp[i]) // out[i])) for i in range(nsp))
        win = x[(...,) + sl].reshape(x.shape[:-nsp] + (-1,))
        y[(...,) + o] = win.max(-1) if kind == "max" else win.mean(-1)
    return y


def np_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """PyTorch's conv_transpose1d/2d by scattering: each input element adds its weight
    window at out[h * s + i * d - p]."""
    nsp = w.ndim - 2
    unbatched = x.ndim == nsp + 1
    if unbatched:
        x = x[None]
    s, p, op, d = [(v,) * nsp if np.isscalar(v) else tuple(v) for v in (stride, padding, output_padding, dilation)]
    N, C = x.shape[:2]
    k = w.shape[2:]
    Og = w.shape[1]
    cg = C // groups
    out = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(nsp)]
    full = [(x.shape[2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(nsp)]
    y = np.zeros((N, Og * groups) + tuple(full))
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * cg:(g + 1) * cg]
        for tap in np.ndindex(*k):
            contrib = np.einsum("nc...,co->no...", xs, ws[(slice(None), slice(None)) + tap])
            sl = tuple(slice(tap[i] * d[i], tap[i] * d[i] + (x.shape[2 + i] - 1) * s[i] + 1, s[i]) for i in range(nsp))
            y[(slice(None), slice(g * Og, (g + 1) * Og)) + sl] += contrib
    y = y[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + out[i]) for i in range(nsp))]
    if b is not None:
        y = y + b.reshape((-1,) + (1,) * nsp)
    return y[0] if unbatched else y


# the dtype of the case being modelled is f64: PyTorch's linear modes compute their source
# indices and weights in the opmath type (double for double; nearest always in float)
INTERP_WIDE = False


def np_interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False):
    """PyTorch's F.interpolate (nearest, linear, bilinear): source indices computed in
    float32 as its kernels do (the linear modes of f64: in float64), one spatial dim after
    another."""
    nsp = x.ndim - 2
    for i in range(nsp):
        d = 2 + i
        n = x.shape[d]
        if size is not None:
            o = size if np.isscalar(size) else size[i]
            sc = np.float32(n) / np.float32(o)
        else:
            f = scale_factor if np.isscalar(scale_factor) else scale_factor[i]
            o = int(np.floor(n * f))
            sc = np.float32(1.0 / f)
        dst = np.arange(o, dtype=np.float32)
        if mode == "nearest":
            if o == n:
                continue
            idx = np.minimum(np.floor(dst * sc).astype(np.int64), n - 1)
            x = np.take(x, idx, axis=d)
            continue
        ft = np.float64 if INTERP_WIDE else np.float32
        if INTERP_WIDE:
            dst = dst.astype(ft)
            sc = ft(n) / ft(o) if size is not None else ft(1.0 / f)
        if align_corners:
            src = dst * (ft(n - 1) / ft(o - 1) if o > 1 else ft(0))
        else:
            src = np.maximum((dst + ft(0.5)) * sc - ft(0.5), ft(0))
        i0 = src.astype(np.int64)
        i1 = np.minimum(i0 + 1, n - 1)
        l1 = (src - i0).astype(np.float64)
        shape = [1] * x.ndim
        shape[d] = o
        x = np.take(x, i0, axis=d) * (1 - l1).reshape(shape) + np.take(x, i1, axis=d) * l1.reshape(shape)
    return x


def np_unfold(x, k, dilation=1, padding=0, stride=1):
    """PyTorch's F.unfold (im2col): column (c, i, j) of block (bh, bw) is
    x[c, bh * s - p + i * d, bw * s - p + j * d] (zero outside)."""
    k, d, p, s = [(v, v) if np.isscalar(v) else tuple(v) for v in (k, dilation, padding, stride)]
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    N, C, H, W = xp.shape
    nb = [((H, W)[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    out = np.zeros((N, C, k[0], k[1], nb[0], nb[1]))
    for i in range(k[0]):
        for j in range(k[1]):
            out[:, :, i, j] = xp[:, :, i * d[0]:i * d[0] + (nb[0] - 1) * s[0] + 1:s[0],
                                 j * d[1]:j * d[1] + (nb[1] - 1) * s[1] + 1:s[1]]
    return out.reshape(N, C * k[0] * k[1], nb[0] * nb[1])


def np_fold(x, output_size, k, dilation=1, padding=0, stride=1):
    """PyTorch's F.fold (col2im): block l's column (c, i, j) adds at
    (bh * s - p + i * d, bw * s - p + j * d) of channel c."""
    unbatched = x.ndim == 2
    if unbatched:
        x = x[None]
    k, d, p, s = [(v, v) if np.isscalar(v) else tuple(v) for v in (k, dilation, padding, stride)]
    oh, ow = output_size
    nb = [(output_size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    N, CK, L = x.shape
    C = CK // (k[0] * k[1])
    y = np.zeros((N, C, oh + 2 * p[0] + s[0] * k[0] * d[0], ow + 2 * p[1] + s[1] * k[1] * d[1]))
    cols = x.reshape(N, C, k[0], k[1], nb[0], nb[1])
    for i in range(k[0]):
        for j in range(k[1]):
            for bh in range(nb[0]):
                for bw in range(nb[1]):
                    y[:, :, bh * s[0] + i * d[0], bw * s[1] + j * d[1]] += cols[:, :, i, j, bh, bw]
    y = y[:, :, p[0]:p[0] + oh, p[1]:p[1] + ow]
    return y[0] if unbatched else y


X4 = RNG.standard_normal((2, 3, 5, 6))
X3 = RNG.standard_normal((2, 4, 9))

# (name, params {name: (dtype, array)}, returned expressions, their dtypes, NumPy values of the params)
PAD_CASES = [
    ("pad_constant", "F.pad(x, (1, 2, 2, 1), value=-1.5), F.pad(x, (1, 1)), "
     "torch.nn.functional.pad(x, [0, 0, 0, 0, 1, 0])",
     lambda x: [np_pad(x, (1, 2, 2, 1), value=-1.5), np_pad(x, (1, 1)), np_pad(x, (0, 0, 0, 0, 1, 0))]),
    ("pad_negative", "F.pad(x, (-1, 2, 2, -3)), F.pad(x, (-2, -1))",
     lambda x: [np_pad(x, (-1, 2, 2, -3)), np_pad(x, (-2, -1))]),
    ("pad_reflect", "F.pad(x, (1, 2, 3, 1), mode='reflect'), F.pad(x, (-1, 3, 2, -2), 'reflect')",
     lambda x: [np_pad(x, (1, 2, 3, 1), "reflect"), np_pad(x, (-1, 3, 2, -2), "reflect")]),
    ("pad_replicate", "F.pad(x, (1, 7, 3, 1), mode='replicate'), F.pad(x, (-1, 3, 2, -2), mode='replicate')",
     lambda x: [np_pad(x, (1, 7, 3, 1), "replicate"), np_pad(x, (-1, 3, 2, -2), "replicate")]),
    ("pad_circular", "F.pad(x, (1, 4, 3, 1), mode='circular'), F.pad(x, (-1, 3, 2, -2), mode='circular')",
     lambda x: [np_pad(x, (1, 4, 3, 1), "circular"), np_pad(x, (-1, 3, 2, -2), "circular")]),
]

POOL_CASES = [
    ("max_pool2d", "F.max_pool2d(x, 2), F.max_pool2d(x, (3, 2), stride=(2, 1), padding=1), "
     "torch.max_pool2d(x, 3, 2, 1, 2, True), F.max_pool2d(x, kernel_size=2, stride=3, ceil_mode=True)",
     lambda x: [np_pool(x, 2, 2), np_pool(x, 2, (3, 2), (2, 1), 1), np_pool(x, 2, 3, 2, 1, 2, True),
                np_pool(x, 2, 2, 3, ceil=True)]),
    ("max_pool1d", "F.max_pool1d(x[0], 3), F.max_pool1d(x[:, 1], 3, 2, 1, 2, True)",
     lambda x: [np_pool(x[0], 1, 3), np_pool(x[:, 1], 1, 3, 2, 1, 2, True)]),
    ("avg_pool2d", "F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, stride=2, padding=1), "
     "F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), F.avg_pool2d(x, (3, 2), 2, 1, True), "
     "F.avg_pool2d(x, 3, 2, 1, True, False), F.avg_pool2d(x, 2, divisor_override=3)",
     lambda x: [np_pool(x, 2, 2, kind="avg"), np_pool(x, 2, 3, 2, 1, kind="avg"),
                np_pool(x, 2, 3, 2, 1, kind="avg", cip=False), np_pool(x, 2, (3, 2), 2, 1, ceil=True, kind="avg"),
                np_pool(x, 2, 3, 2, 1, ceil=True, kind="avg", cip=False), np_pool(x, 2, 2, kind="avg", div=3)]),
    ("adaptive_pool2d", "F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, (5, 3)), "
     "F.adaptive_avg_pool2d(x, (3, 4)), "
     "F.adaptive_max_pool2d(x, (5, 2)), F.adaptive_max_pool2d(x, 4), F.adaptive_avg_pool2d(x[0], (7, 8))",
     lambda x: [np_adaptive(x, 2, 1, "avg"), np_adaptive(x, 2, (5, 3), "avg"), np_adaptive(x, 2, (3, 4), "avg"),
                np_adaptive(x, 2, (5, 2), "max"), np_adaptive(x, 2, 4, "max"), np_adaptive(x[0], 2, (7, 8), "avg")]),
    ("adaptive_pool1d", "F.adaptive_avg_pool1d(x[0], 4), torch.adaptive_avg_pool1d(x[:, 1], 3), "
     "F.adaptive_max_pool1d(x[0], 4), F.adaptive_max_pool1d(x[1, 2], 2)",
     lambda x: [np_adaptive(x[0], 1, 4, "avg"), np_adaptive(x[:, 1], 1, 3, "avg"), np_adaptive(x[0], 1, 4, "max"),
                np_adaptive(x[1, 2], 1, 2, "max")]),
    ("interpolate", "F.interpolate(x, size=(3, 4)), F.interpolate(x, scale_factor=1.7), "
     "F.interpolate(x, size=(8, 12), mode='bilinear'), F.interpolate(x, scale_factor=(0.6, 2.5), mode='bilinear', "
     "align_corners=True), F.interpolate(x[0], size=10, mode='linear'), F.interpolate(x[:, 0], 11)",
     lambda x: [np_interpolate(x, (3, 4)), np_interpolate(x, scale_factor=1.7),
                np_interpolate(x, (8, 12), mode="bilinear"),
                np_interpolate(x, scale_factor=(0.6, 2.5), mode="bilinear", align_corners=True),
                np_interpolate(x[0], 10, mode="linear"), np_interpolate(x[:, 0], 11)]),
    ("avg_pool1d", "F.avg_pool1d(x[0], 3), torch.avg_pool1d(x[:, 1], 3, 2, 1, True, False)",
     lambda x: [np_pool(x[0], 1, 3, kind="avg"), np_pool(x[:, 1], 1, 3, 2, 1, ceil=True, kind="avg", cip=False)]),
]

W2 = RNG.standard_normal((6, 3, 3, 2))
W2G = RNG.standard_normal((4, 1, 2, 3))
B6 = RNG.standard_normal(6)
W1 = RNG.standard_normal((6, 2, 3))
# (name, convolutions of x [2, 3, 5, 6], w [6, 3, 3, 2], g [4, 1, 2, 3] (groups=... of a 4-channel slice),
#  b [6], v [2, 4, 9], u [6, 2, 3]; their NumPy values)
CONV_CASES = [
    ("conv2d", "F.conv2d(x, w), F.conv2d(x, w, b, 1, 1), torch.conv2d(x, w, b, stride=2, padding=(2, 1)), "
     "F.conv2d(x, w, padding='same', dilation=(1, 2)), F.conv2d(x[0], w, bias=b, dilation=2, padding='valid'), "
     "F.conv2d(x, w, stride=(2, 3), padding=1, dilation=(2, 1))",
     lambda x, w, g, b, v, u: [np_conv(x, w), np_conv(x, w, b, 1, 1), np_conv(x, w, b, 2, (2, 1)),
                               np_conv(x, w, padding="same", dilation=(1, 2)),
                               np_conv(x[0], w, b, dilation=2, padding="valid"),
                               np_conv(x, w, stride=(2, 3), padding=1, dilation=(2, 1))]),
    ("conv2d_groups", "F.conv2d(v.view(2, 4, 3, 3), g, groups=4, padding=1), "
     "F.conv2d(x.permute(0, 1, 3, 2), w.transpose(2, 3), b, padding=1, stride=(1, 2)), "
     # depthwise: padding wider than the taps' reach on one side, strides, dilation, a bias; 1d
     "F.conv2d(x, w[:3, :1], b[:3], groups=3, padding=(1, 2), stride=(1, 2)), "
     "F.conv2d(x, g[:3, :1].repeat(1, 1, 2, 2), groups=3, padding=3, dilation=(2, 1)), "
     "F.conv1d(v, u[:4, :1], b[2:], groups=4, padding=2, dilation=2)",
     lambda x, w, g, b, v, u: [np_conv(v.reshape(2, 4, 3, 3), g, groups=4, padding=1),
                               np_conv(x.transpose(0, 1, 3, 2), w.transpose(0, 1, 3, 2), b, padding=1, stride=(1, 2)),
                               np_conv(x, w[:3, :1], b[:3], stride=(1, 2), padding=(1, 2), groups=3),
                               np_conv(x, np.tile(g[:3, :1], (1, 1, 2, 2)), padding=3, dilation=(2, 1), groups=3),
                               np_conv(v, u[:4, :1], b[2:], padding=2, dilation=2, groups=4)]),
    ("conv1d", "F.conv1d(v, u, groups=2), F.conv1d(v, u, b, stride=2, padding=2, dilation=2, groups=2), "
     "torch.conv1d(v[0], u[:4].repeat(1, 2, 1), padding='same', dilation=3), F.conv1d(v.transpose(1, 2)[:, :4], "
     "u[:, :1].repeat(1, 2, 1), groups=2, stride=3)",
     lambda x, w, g, b, v, u: [np_conv(v, u, groups=2), np_conv(v, u, b, 2, 2, 2, 2),
                               np_conv(v[0], np.tile(u[:4], (1, 2, 1)), padding="same", dilation=3),
                               np_conv(v.transpose(0, 2, 1)[:, :4], np.tile(u[:, :1], (1, 2, 1)), groups=2, stride=3)]),
]

W2T = RNG.standard_normal((3, 2, 3, 2))
W1T = RNG.standard_normal((4, 3, 3))
# (name, transposed convolutions of x [2, 3, 5, 6], w [3, 2, 3, 2], b [6], v [2, 4, 9], u [4, 3, 3])
CONVT_CASES = [
    ("conv_transpose2d", "F.conv_transpose2d(x, w), F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1), "
     "torch.conv_transpose2d(x[0], w, None, (2, 3), (2, 1), (0, 2), 1, (2, 1))",
     lambda x, w, b, v, u: [np_conv_transpose(x, w), np_conv_transpose(x, w, stride=2, padding=1, output_padding=1),
                            np_conv_transpose(x[0], w, None, (2, 3), (2, 1), (0, 2), 1, (2, 1))]),
    ("conv_transpose1d", "F.conv_transpose1d(v, u, b, groups=2), F.conv_transpose1d(v, u, stride=3, padding=2, "
     "dilation=2, groups=2, output_padding=1)",
     lambda x, w, b, v, u: [np_conv_transpose(v, u, b, groups=2),
                            np_conv_transpose(v, u, stride=3, padding=2, dilation=2, groups=2, output_padding=1)]),
]


def shape_of(a):
    return ", ".join(str(d) for d in np.shape(a))


RUNS = [0]
GPU_EMIT = "--gpu-emit" in sys.argv  # collect the programs, run none: check_gpu_emit compiles them


PENDING = []  # the cases to run: (name, params, inputs, lines, exprs, want, kinds, source)
BUNDLE = 8


def run_case(t, tdslc, name, params, exprs, want, kinds, body=()):
    """params: [(name, dtype, array, transposed)]: a transposed one is declared with its
    last two dims swapped and passed through .transpose(-1, -2) (a non-contiguous view).
    Returns the case's source; the case runs later, in a bundle (run_pending)."""
    decl, inputs, lines = [], {}, list(body)
    for pname, dt, a, tr in params:
        if tr:
            arr = np.ascontiguousarray(np.swapaxes(a, -1, -2))
            decl.append(f"{pname}_t: {dt}[{shape_of(arr)}]")
            lines.insert(0, f"{pname} = {pname}_t.transpose(-1, -2)")
            inputs[pname + "_t"] = arr.astype({"f32": np.float32, "f64": np.float64, "f16": np.float16}[dt])
        else:
            decl.append(f"{pname}: {dt}[{shape_of(a)}]")
            inputs[pname] = a.astype({"f32": np.float32, "f64": np.float64, "f16": np.float16}[dt])
    rets = ", ".join(f"{k}[{shape_of(w)}]" for k, w in zip(kinds, want))
    src = f"fn f({', '.join(decl)}) -> ({rets}) {{\n" + "".join(f"    {b}\n" for b in lines) + \
          f"    return {exprs}\n}}\n"
    RUNS[0] += 1
    if GPU_EMIT or (RUNS[0] - 1) % test_subset():  # the sanitizer pass runs a subset (oracle.test_subset)
        return src
    PENDING.append((name, decl, inputs, lines, exprs, want, kinds, src))
    return src


def run_pending(t, tdslc):
    """Runs the pending cases BUNDLE at a time as one function (each case's names
    prefixed k<j>_, its outputs a slice of the bundle's), so a compile's fixed cost is
    paid once per bundle; a bundle that does not run is run again case by case, so a
    failure names its case."""
    for i in range(0, len(PENDING), BUNDLE):
        group = PENDING[i:i + BUNDLE]
        decl, inputs, lines, exprs, rets = [], {}, [], [], []
        for j, (_, dcl, ins, lns, ex, want, kinds, _) in enumerate(group):
            names = sorted(ins, key=len, reverse=True) + [n[:-2] for n in ins if n.endswith("_t")]
            pat = re.compile(r"(?<![.\w])(" + "|".join(map(re.escape, names)) + r")\b")
            ren = lambda text, j=j, pat=pat: pat.sub(lambda m: f"k{j}_{m.group(1)}", text)  # noqa: E731
            decl += [ren(d) for d in dcl]
            inputs.update({f"k{j}_{n}": v for n, v in ins.items()})
            lines += [ren(ln) for ln in lns]
            exprs.append(ren(ex))
            rets += [f"{k}[{shape_of(w)}]" for k, w in zip(kinds, want)]
        src = f"fn f({', '.join(decl)}) -> ({', '.join(rets)}) {{\n" + "".join(f"    {ln}\n" for ln in lines) + \
              f"    return {', '.join(exprs)}\n}}\n"
        p, outs = run_outputs(tdslc, src, inputs)
        if p.returncode != 0 or len(outs) != len(rets):
            for name, _, ins, _, _, want, kinds, case_src in group:
                p1, outs1 = run_outputs(tdslc, case_src, ins)
                t.report(name, compare_kinds(p1, outs1, want, kinds), case_src)
            continue
        at = 0
        for name, _, _, _, _, want, kinds, case_src in group:
            t.report(name, compare_kinds(p, outs[at:at + len(want)], want, kinds), case_src)
            at += len(want)


CUDA_BIN = "/usr/local/cuda/bin"


def check_gpu_emit(t, tdslc, sources):
    """Every program in one file (its function renamed conv_I): --emit=cuda compiles with nvcc
    and --emit=ptx assembles with ptxas. The caller checked that both are there."""
    src = "\n".join(re.sub(r"^fn f\(", f"fn conv_{i}(", s, flags=re.M) for i, s in enumerate(sources))
    inc = subprocess.run([tdslc, "--print-include-dir"], capture_output=True, text=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="tdsl-conv-")
    try:
        path = os.path.join(tmp, "conv.tdsl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(src)
        for kind, tool, args in (("cuda", "nvcc", ["-arch=sm_90", "-c", "-Werror", "all-warnings", "-I", inc]),
                                 ("ptx", "ptxas", ["-arch=sm_90"])):
            out = os.path.join(tmp, "conv." + ("cu" if kind == "cuda" else "ptx"))
            p = subprocess.run([tdslc, path, f"--emit={kind}", "-o", out], capture_output=True, timeout=600)
            errs = [f"--emit={kind} exited {p.returncode}: {p.stderr.decode(errors='replace')[:1000]}"] \
                if p.returncode else []
            if not errs and not os.environ.get("TDSL_EMIT_ONLY"):  # (the sanitizer pass: tdslc's part alone)
                q = subprocess.run([os.path.join(CUDA_BIN, tool), *args, out, "-o", out + ".o"], capture_output=True,
                                   timeout=600)
                if q.returncode:
                    errs.append(f"{tool} failed: {q.stderr.decode(errors='replace')[:1000]}")
            t.report(f"--emit={kind} of {len(sources)} programs, {tool}", errs, "")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# A convolution is one GEMM over channels and taps reading windows of its input in
# place: one kernel, the matmul with the bias as its epilogue, and no buffer but the
# result (no im2col copy, no sum of per-tap products).
ONE_GEMM = [
    ("conv2d", "x: f32[2, 4, 9, 8], w: f32[6, 2, 3, 2], b: f32[6]", "f32[2, 6, 3, 3]",
     "F.conv2d(x, w, b, stride=(2, 3), dilation=(2, 1), groups=2)"),
    ("conv1d", "v: f64[3, 5, 11], u: f64[4, 5, 3]", "f64[3, 4, 9]", "F.conv1d(v, u)"),
]


def check_one_gemm(t, tdslc):
    d = tempfile.mkdtemp(prefix="tdsl-conv-")
    try:
        for name, params, ret, expr in ONE_GEMM:
            path = os.path.join(d, "f.tdsl")
            with open(path, "w", encoding="utf-8") as f:
                f.write(f"fn f({params}) -> {ret} {{\n    return {expr}\n}}\n")
            p = subprocess.run([tdslc, path, "--emit=ir"], capture_output=True, timeout=120)
            ir = p.stdout.decode(errors="replace")
            errs = [] if p.returncode == 0 else [f"exit {p.returncode}: {p.stderr.decode(errors='replace')[:600]}"]
            kernels = re.findall(r"^  k\d+: (.*?)  lines", ir, re.M)
            if not errs and kernels not in (["matmul add"], ["matmul"]):
                errs.append(f"kernels {kernels}, expected one matmul kernel\n{ir}")
            temps = [r for r in re.findall(r"^  (\S+) +buffer .*storage kernel", ir, re.M)
                     if not re.fullmatch(r"out\d+", r)]
            if not errs and temps:
                errs.append(f"intermediate buffers {temps}, expected none\n{ir}")
            t.report(f"{name} is one GEMM: {expr}", errs)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    tdslc = sys.argv[1]
    if GPU_EMIT and not os.environ.get("TDSL_EMIT_ONLY"):
        missing = [tool for tool in ("nvcc", "ptxas") if not os.path.exists(os.path.join(CUDA_BIN, tool))]
        if missing:
            print(f"SKIP: no {' or '.join(missing)} in {CUDA_BIN} (the CUDA toolkit is optional)")
            return 77
    else:
        require_backend(tdslc)
    t = Tally()
    sources = []
    for name, exprs, model in PAD_CASES:
        for dt, tr in (("f32", False), ("f64", True)):
            x = X4.astype(np.float32).astype(np.float64) if dt == "f32" else X4
            want = model(x)
            sources.append(run_case(t, tdslc, f"{name} {dt}{' transposed' if tr else ''}",
                                    [("x", dt, x, tr)], exprs, want, [dt] * len(want)))
    global INTERP_WIDE
    for name, exprs, model in POOL_CASES:
        for dt, tr in (("f32", True), ("f64", False), ("f16", False)):
            x = X4.astype(np.float32 if dt == "f32" else np.float16 if dt == "f16" else np.float64).astype(np.float64)
            INTERP_WIDE = dt == "f64"
            want = model(x)
            sources.append(run_case(t, tdslc, f"{name} {dt}{' transposed' if tr else ''}",
                                    [("x", dt, x, tr)], exprs, want, [dt] * len(want)))
    for name, exprs, model in CONV_CASES:
        for dt, tr in (("f32", True), ("f64", False), ("f16", False)):
            cast = {"f32": np.float32, "f16": np.float16, "f64": np.float64}[dt]
            arrs = [a.astype(cast).astype(np.float64) for a in (X4, W2, W2G, B6, X3, W1)]
            want = model(*arrs)
            params = [(n, dt, a, tr and n == "x") for n, a in zip("xwgbvu", arrs)]
            sources.append(run_case(t, tdslc, f"{name} {dt}{' transposed' if tr else ''}", params, exprs, want,
                                    [dt] * len(want)))
    for name, exprs, model in CONVT_CASES:
        for dt, tr in (("f32", True), ("f64", False), ("f16", False)):
            cast = {"f32": np.float32, "f16": np.float16, "f64": np.float64}[dt]
            arrs = [a.astype(cast).astype(np.float64) for a in (X4, W2T, B6, X3, W1T)]
            want = model(*arrs)
            params = [(n, dt, a, tr and n == "x") for n, a in zip("xwbvu", arrs)]
            sources.append(run_case(t, tdslc, f"{name} {dt}{' transposed' if tr else ''}", params, exprs, want,
                                    [dt] * len(want)))
    cols = RNG.standard_normal((2, 12, 20))
    for dt, tr in (("f32", True), ("f64", False), ("f16", False)):
        c = cols.astype({"f32": np.float32, "f16": np.float16, "f64": np.float64}[dt]).astype(np.float64)
        c2 = RNG.standard_normal((8, 9)).astype(np.float16).astype(np.float64)
        want = [np_fold(c, (5, 6), 2), np_fold(c2, (4, 5), (2, 1), dilation=(1, 2), padding=1, stride=(2, 3))]
        sources.append(run_case(t, tdslc, f"fold {dt}{' transposed' if tr else ''}",
                                [("c", dt, c, tr), ("c2", dt, c2, False)],
                                "F.fold(c, (5, 6), 2), F.fold(c2, (4, 5), (2, 1), dilation=(1, 2), padding=1, "
                                "stride=(2, 3))", want, [dt] * 2))
    im = RNG.standard_normal((2, 3, 6, 7))
    for dt, tr in (("f32", True), ("f64", False), ("f16", False)):
        a = im.astype({"f32": np.float32, "f16": np.float16, "f64": np.float64}[dt]).astype(np.float64)
        want = [np_unfold(a, 2), np_unfold(a, (2, 3), dilation=(2, 1), padding=1, stride=(2, 3)),
                np_fold(np_unfold(a, 3, padding=1), (6, 7), 3, padding=1)]
        sources.append(run_case(t, tdslc, f"unfold {dt}{' transposed' if tr else ''}", [("a", dt, a, tr)],
                                "F.unfold(a, 2), F.unfold(a, (2, 3), dilation=(2, 1), padding=1, stride=(2, 3)), "
                                "F.fold(F.unfold(a, 3, padding=1), (6, 7), 3, padding=1)", want, [dt] * 3))
    # empty tensors: no batch, no input channels (the bias alone), an empty padded input
    # (in the GPU batch too: nvcc takes kernels over an empty dim now)
    b = np.arange(6.0)
    for name, x, w, args in (("conv2d of no batch", np.zeros((0, 4, 6, 6)), np.ones((6, 4, 3, 3)), (1, (2, 1))),
                             ("conv2d of no channels", np.zeros((2, 0, 6, 6)), np.zeros((6, 0, 3, 3)), (0, 1))):
        want = [np_conv(x, w, b, padding=args[0], stride=args[1])]
        sources.append(run_case(t, tdslc, name, [("x", "f64", x, False), ("w", "f64", w, False),
                                                 ("b", "f64", b, False)],
                                f"F.conv2d(x, w, b, padding={args[0]}, stride={args[1]})", want, ["f64"]))
    x = np.zeros((2, 3, 4, 0))
    sources.append(run_case(t, tdslc, "pad of an empty tensor", [("x", "f32", x, False)],
                            "F.pad(x, (1, 2, 1, 1), value=3.0), F.pad(x[:0], (1, 1))",
                            [np_pad(x, (1, 2, 1, 1), value=3.0), np.zeros((0, 3, 4, 2))], ["f32", "f32"]))
    if GPU_EMIT:
        check_gpu_emit(t, tdslc, sources)
        return t.summary()
    run_pending(t, tdslc)
    if env_backend() in (None, "c"):  # once, not once per CPU backend
        check_one_gemm(t, tdslc)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
