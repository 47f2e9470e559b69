#!/usr/bin/python3
"""tests/run/test_nn.py TDSLC: the torch.nn.functional ops built from parts in
frontend/sema_nn.c and sema_act.c — activations (softplus, leaky_relu, rrelu, elu, selu, celu, relu6,
hardtanh, hardsigmoid, hardswish, mish, softsign, logsigmoid, tanhshrink, threshold,
glu, softmin), normalizations (rms_norm, group_norm, batch_norm, instance_norm,
normalize, cosine_similarity, pairwise_distance), embedding, one_hot and bilinear — in
their F.NAME, torch.NAME and bare spellings with every keyword, over f32, f64, f16,
bf16 and the int dtypes PyTorch accepts, on contiguous and non-contiguous inputs
(transposes, stepped slices, expands), compared with NumPy on the same inputs.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, count_errors, require_backend, run_outputs, test_subset  # noqa: E402

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
DECL = {np.float32: "f32", np.float64: "f64", np.float16: "f16", np.int32: "i32", np.int64: "i64", np.bool_: "bool",
        np.uint8: "u8", np.int8: "i8", np.int16: "i16"}
# relative-and-absolute tolerance of each result kind; halves are computed in f32 and
# rounded once, bf16 results are returned through .float()
TOL = {"f64": 1e-12, "f32": 2e-5, "f16": 2e-3, "bf16": 2e-2}


def bf16(a):
    """a rounded to bfloat16 (nearest even), as f64."""
    b = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


def softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softplus(a, beta=1.0, th=20.0):
    with np.errstate(over="ignore"):
        return np.where(a * beta > th, a, np.log1p(np.exp(a * beta)) / beta)


def elu(a, alpha=1.0):
    return np.where(a <= 0, np.expm1(np.minimum(a, 0)) * alpha, a)


def hardtanh(a, lo=-1.0, hi=1.0):
    return np.minimum(np.maximum(a, lo), hi)


def glu(a, axis):
    p, q = np.split(a, 2, axis=axis)
    return p * sigmoid(q)


def norm(a, p, axis, keepdims=False):
    a = np.abs(a)
    if p == np.inf:
        return a.max(axis=axis, keepdims=keepdims)
    if p == 0:
        return (a != 0).sum(axis=axis, keepdims=keepdims).astype(np.float64)
    return (a ** p).sum(axis=axis, keepdims=keepdims) ** (1 / p)


def rms_norm(a, axes, w=None, eps=1.1920928955078125e-07):
    y = a / np.sqrt((a * a).mean(axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def group_norm(a, g, w=None, b=None, eps=1e-5):
    n, c = a.shape[:2]
    r = a.reshape(n, g, -1)
    c_ = r - r.mean(-1, keepdims=True)
    y = (c_ / np.sqrt((c_ * c_).mean(-1, keepdims=True) + eps)).reshape(a.shape)
    ch = (c,) + (1,) * (a.ndim - 2)
    if w is not None:
        y = y * w.reshape(ch)
    if b is not None:
        y = y + b.reshape(ch)
    return y


def batch_norm(a, rm, rv, w=None, b=None, eps=1e-5):
    ch = (a.shape[1],) + (1,) * (a.ndim - 2)
    y = (a - rm.reshape(ch)) / np.sqrt(rv.reshape(ch) + eps)
    if w is not None:
        y = y * w.reshape(ch)
    if b is not None:
        y = y + b.reshape(ch)
    return y


def instance_norm(a, w=None, b=None, eps=1e-5):
    axes = tuple(range(2, a.ndim))
    c_ = a - a.mean(axis=axes, keepdims=True)
    y = c_ / np.sqrt((c_ * c_).mean(axis=axes, keepdims=True) + eps)
    ch = (a.shape[1],) + (1,) * (a.ndim - 2)
    if w is not None:
        y = y * w.reshape(ch)
    if b is not None:
        y = y + b.reshape(ch)
    return y


def normalize(a, p=2.0, axis=1, eps=1e-12):
    return a / np.maximum(norm(a, p, axis, True), eps)


def cosine_similarity(a, b, axis=1, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(norm(a, 2, axis, True), eps)
    nb = np.maximum(norm(b, 2, axis, True), eps)
    return ((a / na) * (b / nb)).sum(axis=axis)


def pairwise_distance(a, b, p=2.0, eps=1e-6, keepdim=False):
    return norm(a - b + eps, p, -1, keepdim)


RNG = np.random.default_rng(14)


def randn(*shape, scale=3.0, dtype=np.float32):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def randint(lo, hi, *shape, dtype=np.int64):
    return RNG.integers(lo, hi, shape).astype(dtype)


X = randn(4, 6)           # activations: values out to about +-9
XT = randn(6, 4)          # read as xt.t()
XS = randn(8, 6)          # read as xs[::2]
XH = randn(4, 6, dtype=np.float16)
XD = randn(4, 6, dtype=np.float64)
XI = randint(-6, 7, 4, 6, dtype=np.int32)
XL = randint(-6, 7, 4, 6)
XU8 = randint(0, 256, 4, 6, dtype=np.uint8)
XI8 = randint(-128, 128, 4, 6, dtype=np.int8)
XI16 = randint(-300, 300, 4, 6, dtype=np.int16)
N4 = randn(2, 6, 3, 4, scale=2.0)  # [N, C, H, W]
CH = randn(6, scale=1.0)
VAR = (np.abs(randn(6, scale=1.0)) + 0.5).astype(np.float32)
W3 = randn(5, 6, 3, scale=1.0)     # bilinear weight [O, I, J]
Y3 = randn(4, 3, scale=1.0)
IDX = randint(0, 3, 2, 3)
ROW = randn(1, 6)

# (name, inputs {param: array}, the returned expressions, their kinds, the NumPy values
# over the inputs as f64)
CASES = [
    ("softplus", {"x": X}, "F.softplus(x), F.softplus(x, beta=3, threshold=10), softplus(x * 4, 0.5, threshold=2)",
     ["f32"] * 3, lambda x: [softplus(x), softplus(x, 3, 10), softplus(x * 4, 0.5, 2)]),
    ("softplus_layouts", {"xt": XT, "xs": XS, "r": ROW},
     "F.softplus(xt.t()), F.softplus(xs[::2]), F.softplus(r.expand(4, 6), beta=2.0)", ["f32"] * 3,
     lambda xt, xs, r: [softplus(xt.T), softplus(xs[::2]), softplus(np.broadcast_to(r, (4, 6)), 2.0)]),
    ("softplus_dtypes", {"x": XH, "d": XD, "x32": X},
     "F.softplus(x), F.softplus(d, beta=2), F.softplus(x32.bfloat16()).float()", ["f16", "f64", "bf16"],
     lambda x, d, x32: [softplus(x), softplus(d, 2), softplus(bf16(x32))]),
    ("leaky_relu", {"x": X, "xt": XT, "h": XH},
     "F.leaky_relu(x), F.leaky_relu(xt.t(), negative_slope=0.2, inplace=False), leaky_relu(h, 0.1)",
     ["f32", "f32", "f16"],
     lambda x, xt, h: [np.where(x > 0, x, x * 0.01), np.where(xt.T > 0, xt.T, xt.T * 0.2),
                       np.where(h > 0, h, h * 0.1)]),
    # rrelu out of training: leaky_relu with the slope (lower + upper) / 2 (PyTorch 1.13's rrelu)
    ("rrelu", {"x": X, "xt": XT, "h": XH, "d": XD},
     "F.rrelu(x), torch.rrelu(xt.t(), 0.1, 0.3), F.rrelu(h, upper=0.5, training=False), "
     "F.rrelu(d, lower=0.5, upper=0.5, inplace=False)", ["f32", "f32", "f16", "f64"],
     lambda x, xt, h, d: [np.where(x > 0, x, x * (1 / 8 + 1 / 3) / 2), np.where(xt.T > 0, xt.T, xt.T * 0.2),
                          np.where(h > 0, h, h * (1 / 8 + 0.5) / 2), np.where(d > 0, d, d * 0.5)]),
    ("elu_selu_celu", {"x": X, "d": XD},
     "F.elu(x), F.elu(d, alpha=0.5), F.selu(x), torch.selu(d), F.celu(x, alpha=2.0), torch.celu(d), "
     "celu(x, 0.5, inplace=False)", ["f32", "f64", "f32", "f64", "f32", "f64", "f32"],
     lambda x, d: [elu(x), elu(d, 0.5), SELU_SCALE * elu(x, SELU_ALPHA), SELU_SCALE * elu(d, SELU_ALPHA),
                   np.where(x <= 0, 2 * np.expm1(np.minimum(x, 0) / 2), x), elu(d),
                   np.where(x <= 0, 0.5 * np.expm1(np.minimum(x, 0) / 0.5), x)]),
    ("elu_halves", {"h": XH, "x": X}, "F.elu(h), F.selu(x.bfloat16()).float(), F.celu(h, 3.0)",
     ["f16", "bf16", "f16"],
     lambda h, x: [elu(h), SELU_SCALE * elu(bf16(x), SELU_ALPHA), np.where(h <= 0, 3 * np.expm1(np.minimum(h, 0) / 3), h)]),
    ("relu6_hardtanh", {"x": X, "xs": XS, "h": XH},
     "F.relu6(x), F.hardtanh(xs[::2]), F.hardtanh(x, min_val=-2.5, max_val=0.5), hardtanh(h, -3, 3), relu6(h)",
     ["f32", "f32", "f32", "f16", "f16"],
     lambda x, xs, h: [hardtanh(x, 0, 6), hardtanh(xs[::2]), hardtanh(x, -2.5, 0.5), hardtanh(h, -3, 3),
                       hardtanh(h, 0, 6)]),
    # ints: the bounds are truncated to ints, the result stays int
    ("relu6_hardtanh_ints", {"i": XI, "l": XL},
     "F.relu6(i), F.hardtanh(l, -2.5, 3.7), F.hardtanh(i.t(), min_val=-4, max_val=2), F.relu6(l)",
     ["i32", "i64", "i32", "i64"],
     lambda i, l: [hardtanh(i, 0, 6), hardtanh(l, -2, 3), hardtanh(i.T, -4, 2), hardtanh(l, 0, 6)]),
    # the small ints: the result keeps the dtype (relu, relu6, hardtanh, threshold), softsign gives f32
    ("small_ints", {"u": XU8, "c": XI8, "s": XI16},
     "F.relu(u), F.relu6(c), F.hardtanh(s.t()), F.hardtanh(u, 2, 100), F.threshold(c, 1, 5), F.threshold(s, -3, 7), "
     "F.softsign(c), F.relu(s[::2]), F.relu6(u)",
     ["u8", "i8", "i16", "u8", "i8", "i16", "f32", "i16", "u8"],
     lambda u, c, s: [u, hardtanh(c, 0, 6).astype(np.int8), hardtanh(s.T, -1, 1).astype(np.int16),
                      hardtanh(u, 2, 100).astype(np.uint8), np.where(c > 1, c, 5).astype(np.int8),
                      np.where(s > -3, s, 7).astype(np.int16), c / (1 + np.abs(c.astype(np.float64))),
                      np.maximum(s[::2], 0), hardtanh(u, 0, 6).astype(np.uint8)]),
    ("hardsigmoid_hardswish", {"x": X, "xt": XT, "h": XH, "d": XD},
     "F.hardsigmoid(x), F.hardswish(xt.t()), F.hardsigmoid(h, inplace=False), hardswish(d), "
     "F.hardswish(x.bfloat16()).float()", ["f32", "f32", "f16", "f64", "bf16"],
     lambda x, xt, h, d: [np.clip(x + 3, 0, 6) / 6, xt.T * np.clip(xt.T + 3, 0, 6) / 6, np.clip(h + 3, 0, 6) / 6,
                          d * np.clip(d + 3, 0, 6) / 6, bf16(x) * np.clip(bf16(x) + 3, 0, 6) / 6]),
    ("mish_softsign", {"x": X, "h": XH, "d": XD, "xs": XS},
     "F.mish(x), F.mish(h), mish(d), F.softsign(xs[::2]), F.softsign(h), softsign(d)",
     ["f32", "f16", "f64", "f32", "f16", "f64"],
     lambda x, h, d, xs: [x * np.tanh(np.log1p(np.exp(x))), h * np.tanh(np.log1p(np.exp(h))),
                          d * np.tanh(np.log1p(np.exp(d))), xs[::2] / (1 + np.abs(xs[::2])), h / (1 + np.abs(h)),
                          d / (1 + np.abs(d))]),
    # softsign and tanhshrink of ints are floats, as PyTorch's Python formulas give
    ("softsign_tanhshrink_ints", {"i": XI, "l": XL},
     "F.softsign(i), F.softsign(l), F.tanhshrink(i), F.tanhshrink(l.t())", ["f32"] * 4,
     lambda i, l: [i / (1 + np.abs(i)), l / (1 + np.abs(l)), i - np.tanh(i), l.T - np.tanh(l.T)]),
    ("logsigmoid_tanhshrink", {"x": X * 5, "h": XH, "d": XD},
     "F.logsigmoid(x), F.logsigmoid(h), logsigmoid(d), F.tanhshrink(x), F.tanhshrink(h), tanhshrink(d)",
     ["f32", "f16", "f64", "f32", "f16", "f64"],
     lambda x, h, d: [np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))), np.minimum(h, 0) - np.log1p(np.exp(-np.abs(h))),
                      np.minimum(d, 0) - np.log1p(np.exp(-np.abs(d))), x - np.tanh(x), h - np.tanh(h),
                      d - np.tanh(d)]),
    ("threshold", {"x": X, "h": XH, "i": XI, "l": XL},
     "F.threshold(x, 0.5, -2.0), torch.threshold(h, -1, 7.5), F.threshold(i, -0.5, 2.5), "
     "threshold(l.t(), threshold=1, value=-3, inplace=False)", ["f32", "f16", "i32", "i64"],
     lambda x, h, i, l: [np.where(x <= 0.5, -2.0, x), np.where(h <= -1, 7.5, h), np.where(i <= 0, 2, i),
                         np.where(l.T <= 1, -3, l.T)]),
    ("glu", {"x": X, "xt": XT, "h": XH, "d": XD},
     "F.glu(x), F.glu(x, dim=0), F.glu(xt.t(), 1), glu(h, -2), F.glu(d)", ["f32", "f32", "f32", "f16", "f64"],
     lambda x, xt, h, d: [glu(x, -1), glu(x, 0), glu(xt.T, 1), glu(h, 0), glu(d, -1)]),
    ("softmin", {"x": X, "n": N4, "i": XI},
     "F.softmin(x, 1), F.softmin(x, dim=0), F.softmin(x), F.softmin(n), F.softmin(i, 1, dtype=torch.float64), "
     "softmin(x, -1, _stacklevel=5)", ["f32", "f32", "f32", "f32", "f64", "f32"],
     lambda x, n, i: [softmax(-x, 1), softmax(-x, 0), softmax(-x, 1), softmax(-n, 1), softmax(-i, 1),
                      softmax(-x, -1)]),
    ("rms_norm", {"x": X, "n": N4, "w": CH, "h": XH, "d": XD},
     "F.rms_norm(x, [6]), F.rms_norm(x, [6], weight=w, eps=1e-3), torch.rms_norm(n, [3, 4]), "
     "F.rms_norm(h, [6], w.half()), rms_norm(d, [4, 6], eps=0.5)", ["f32", "f32", "f32", "f16", "f64"],
     lambda x, n, w, h, d: [rms_norm(x, 1), rms_norm(x, 1, w, 1e-3), rms_norm(n, (2, 3)),
                            rms_norm(h, 1, w.astype(np.float16), 0.0009765625), rms_norm(d, (0, 1), None, 0.5)]),
    ("group_norm", {"n": N4, "w": CH, "b": VAR, "x": X},
     "F.group_norm(n, 3), torch.group_norm(n, 2, w, b), F.group_norm(n, num_groups=6, weight=w, eps=0.1), "
     "group_norm(x, 2, bias=b), F.group_norm(n.half(), 1, w.half(), b.half())",
     ["f32", "f32", "f32", "f32", "f16"],
     lambda n, w, b, x: [group_norm(n, 3), group_norm(n, 2, w, b), group_norm(n, 6, w, None, 0.1),
                         group_norm(x, 2, None, b),
                         group_norm(n.astype(np.float16).astype(np.float64), 1, w.astype(np.float16),
                                    b.astype(np.float16))]),
    ("group_norm_layouts", {"n": N4, "d": XD},
     "F.group_norm(n.transpose(2, 3), 3), F.group_norm(n[:, ::2], 1), F.group_norm(d.t(), 2)", ["f32", "f32", "f64"],
     lambda n, d: [group_norm(n.transpose(0, 1, 3, 2), 3), group_norm(n[:, ::2], 1), group_norm(d.T, 2)]),
    ("batch_norm", {"n": N4, "m": CH, "v": VAR, "w": CH * 2, "x": X},
     "F.batch_norm(n, m, v), F.batch_norm(n, m, v, w, v, training=False, momentum=0.5, eps=0.01), "
     "batch_norm(x, running_mean=m, running_var=v, bias=w), F.batch_norm(n.half(), m, v, w), "
     "F.batch_norm(n.transpose(2, 3).double(), m.double(), v.double())",
     ["f32", "f32", "f32", "f16", "f64"],
     lambda n, m, v, w, x: [batch_norm(n, m, v), batch_norm(n, m, v, w, v, 0.01), batch_norm(x, m, v, None, w),
                            batch_norm(n.astype(np.float16).astype(np.float64), m, v, w),
                            batch_norm(n.transpose(0, 1, 3, 2), m, v)]),
    ("instance_norm", {"n": N4, "m": CH, "v": VAR, "w": CH * 2},
     "F.instance_norm(n), F.instance_norm(n, weight=w, bias=v, eps=0.1), F.instance_norm(n[:, :, 0]), "
     "F.instance_norm(n, m, v, w, use_input_stats=False, momentum=0.2), F.instance_norm(n.half(), weight=w.half())",
     ["f32", "f32", "f32", "f32", "f16"],
     lambda n, m, v, w: [instance_norm(n), instance_norm(n, w, v, 0.1), instance_norm(n[:, :, 0]),
                         batch_norm(n, m, v, w), instance_norm(n.astype(np.float16).astype(np.float64),
                                                               w.astype(np.float16))]),
    ("normalize", {"x": X, "xt": XT, "h": XH, "d": XD},
     "F.normalize(x), F.normalize(x, p=1.0, dim=0), F.normalize(xt.t(), 3, -1, eps=0.5), "
     "F.normalize(x, p=math.inf), F.normalize(x, 0), F.normalize(h, dim=1), normalize(d, p=2.5)",
     ["f32", "f32", "f32", "f32", "f32", "f16", "f64"],
     lambda x, xt, h, d: [normalize(x), normalize(x, 1, 0), normalize(xt.T, 3, -1, 0.5), normalize(x, np.inf),
                          normalize(x, 0), normalize(h), normalize(d, 2.5)]),
    ("cosine_similarity", {"x": X, "y": XT, "r": ROW, "h": XH, "d": XD},
     "F.cosine_similarity(x, y.t()), torch.cosine_similarity(x, r, dim=0), F.cosine_similarity(x, r[0], 1, 0.5), "
     "F.cosine_similarity(h, h * 2), cosine_similarity(x, d, dim=-1, eps=1e-8), "
     "F.cosine_similarity(x * 1e-10, x * 1e-10)",
     ["f32", "f32", "f32", "f16", "f64", "f32"],
     lambda x, y, r, h, d: [cosine_similarity(x, y.T), cosine_similarity(x, r, 0), cosine_similarity(x, r[0], 1, 0.5),
                            cosine_similarity(h, h * 2), cosine_similarity(x, d, -1),
                            cosine_similarity(x * 1e-10, x * 1e-10)]),
    ("pairwise_distance", {"x": X, "y": XT, "r": ROW, "h": XH, "i": XI},
     "F.pairwise_distance(x, y.t()), torch.pairwise_distance(x, r, p=1.0), "
     "F.pairwise_distance(x, r[0], 3, eps=0.1, keepdim=True), F.pairwise_distance(h, h * 2), "
     "pairwise_distance(i, i.t().t() * 2, p=math.inf), F.pairwise_distance(x, x, p=0)",
     ["f32", "f32", "f32", "f16", "f32", "f32"],
     lambda x, y, r, h, i: [pairwise_distance(x, y.T), pairwise_distance(x, r, 1.0),
                            pairwise_distance(x, r[0], 3, 0.1, True), pairwise_distance(h, h * 2),
                            pairwise_distance(i, i * 2, np.inf), pairwise_distance(x, x, 0)]),
    ("embedding", {"i": IDX, "w": X, "wl": XL, "h": XH},
     "F.embedding(i, w), F.embedding(i.int(), wl), F.embedding(i.t(), h, padding_idx=0, max_norm=None, "
     "norm_type=2.0, scale_grad_by_freq=False, sparse=False), embedding(i[0], w.t()[::2, ::2], -1), "
     "F.embedding(i, w.double() > 0)",
     ["f32", "i64", "f16", "f32", "bool"],
     lambda i, w, wl, h: [w[i], wl[i], h[i.T], w.T[::2, ::2][i[0]], w[i] > 0]),
    ("one_hot", {"i": IDX}, "F.one_hot(i, 4), F.one_hot(i.t(), num_classes=6), one_hot(i[1], 5) * 3",
     ["i64"] * 3, lambda i: [np.eye(4, dtype=np.int64)[i], np.eye(6, dtype=np.int64)[i.T],
                              np.eye(5, dtype=np.int64)[i[1]] * 3]),
    ("bilinear", {"x": X, "y": Y3, "w": W3, "b": CH[:5].copy(), "d": XD},
     "F.bilinear(x, y, w), torch.bilinear(x, y, w, b), F.bilinear(x[0], y[1], w, bias=b), "
     "bilinear(x.t().t(), y * 2, w.transpose(1, 1), b), F.bilinear(d, y.double(), w.double()), "
     "F.bilinear(x.half(), y.half(), w.half(), b.half())",
     ["f32", "f32", "f32", "f32", "f64", "f16"],
     lambda x, y, w, b, d: [np.einsum("ni,oij,nj->no", x, w, y), np.einsum("ni,oij,nj->no", x, w, y) + b,
                            np.einsum("i,oij,j->o", x[0], w, y[1]) + b, np.einsum("ni,oij,nj->no", x, w, y * 2) + b,
                            np.einsum("ni,oij,nj->no", d, w, y),
                            np.einsum("ni,oij,nj->no", x.astype(np.float16).astype(np.float64),
                                      w.astype(np.float16).astype(np.float64),
                                      y.astype(np.float16).astype(np.float64)) + b.astype(np.float16)]),
    ("bilinear_batched", {"x": randn(2, 3, 6, scale=1.0), "y": randn(2, 3, 3, scale=1.0), "w": W3},
     "F.bilinear(x, y, w), F.bilinear(x.transpose(0, 1), y.transpose(0, 1), w)", ["f32"] * 2,
     lambda x, y, w: [np.einsum("abi,oij,abj->abo", x, w, y),
                      np.einsum("abi,oij,abj->abo", x.transpose(1, 0, 2), w, y.transpose(1, 0, 2))]),
]

NP_KIND = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32, "i32": np.int32,
           "i64": np.int64, "bool": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16}


def compare(outs, want, kinds):
    errs = count_errors(outs, want)
    for k, (got, w, kind) in enumerate(zip(outs, want, kinds)):
        w = np.asarray(w)
        if got.shape != w.shape:
            errs.append(f"out{k}: shape {got.shape}, want {w.shape}")
        elif got.dtype != NP_KIND[kind]:
            errs.append(f"out{k}: dtype {got.dtype}, want {kind}")
        elif kind in ("i32", "i64", "bool", "u8", "i8", "i16"):
            if not np.array_equal(got, w):
                errs.append(f"out{k}: {got.ravel()[:6]}, want {w.ravel()[:6]}")
        else:
            g = got.astype(np.float64)
            with np.errstate(invalid="ignore"):
                bad = ~((g == w) | (np.abs(g - w) <= TOL[kind] * (1 + np.abs(w))))
            if bad.any():
                i = tuple(np.argwhere(bad)[0])
                errs.append(f"out{k}: at {i}: got {got[i]}, want {w[i]}")
    return errs


# ---- nn modules made of modules (frontend/sema_mha.c), against PyTorch 1.13 itself ----
# One program: nn.MultiheadAttention batch-first and sequence-first, self- and cross-attention,
# bool, uint8 and float attn_mask (2-D and 3-D), bool and float key_padding_mask, kdim/vdim with
# add_bias_kv and add_zero_attn, bias=False on unbatched inputs, need_weights and average_attn_weights
# both ways, in f32 and f64 (and a float key_padding_mask next to a float attn_mask, which PyTorch 1.13
# leaves out); F.multi_head_attention_forward; nn.TransformerEncoderLayer post-norm
# (relu, batch_first, a key padding mask) and pre-norm (gelu by name, a float src_mask);
# nn.TransformerDecoderLayer; a torchvision-style EncoderBlock whose norm_layer default is
# functools.partial(nn.LayerNorm, eps=1e-6) and whose act_layer is nn.GELU passed as a value; a helper
# whose Callable[..., nn.Module] defaults are nn.LayerNorm and nn.GELU (and an Optional[torch.Tensor]),
# and partial(nn.LayerNorm, eps=0.5) given; nn.TransformerEncoder (its norm, a clone's parameters set in a loop)
# and nn.TransformerDecoder of the decoder layer above (its copies: one of them changed after); nn.Transformer
# batch-first with a key padding mask (computed as PyTorch does with gradients enabled: no nested fast path)
# and its generate_square_subsequent_mask.
MODULES_SRC = r"""import torch
import torch.nn as nn
import torch.nn.functional as F
from functools import partial
from typing import Callable, Optional

class EncoderBlock(nn.Module) {
    fn __init__(self, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float, attention_dropout: float,
                norm_layer: Callable[..., torch.nn.Module] = partial(nn.LayerNorm, eps=1e-6),
                act_layer: Optional[Callable[..., nn.Module]] = None) {
        super().__init__()
        if act_layer is None {
            act_layer = nn.ReLU
        }
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = nn.Sequential(nn.Linear(hidden_dim, mlp_dim), act_layer(), nn.Linear(mlp_dim, hidden_dim))
    }
    fn forward(self, input: torch.Tensor) {
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))
    }
}

fn mha(w: Tensor, b: Tensor, m: Callable) -> nn.Module {
    m.in_proj_weight = w[0:24]
    m.in_proj_bias = b[0:24]
    m.out_proj.weight = w[24:32]
    m.out_proj.bias = b[24:32]
    return m
}

fn tel(w: Tensor, b: Tensor, w1: Tensor, w2: Tensor, nw: Tensor, layer: Callable) -> nn.Module {
    mha(w, b, layer.self_attn)
    layer.linear1.weight, layer.linear1.bias = w1, b[32:48]
    layer.linear2.weight, layer.linear2.bias = w2, b[48:56]
    layer.norm1.weight, layer.norm1.bias = nw, b[56:64]
    layer.norm2.weight, layer.norm2.bias = nw * 2, b[56:64] - 1
    return layer
}

fn normed(x: Tensor, g: Tensor, norm_layer: Callable[..., nn.Module] = nn.LayerNorm, act_layer=nn.GELU,
          shift: Optional[torch.Tensor] = None) -> Tensor {
    norm = norm_layer(8)
    norm.weight, norm.bias = g, g - 1
    y = act_layer()(norm(x))
    return y if shift is None else y + shift
}

fn f(x: f32[2, 5, 8], mem: f32[2, 4, 8], kv6: f32[2, 4, 6], w: f32[48, 8], b: f32[64], w6: f32[16, 6],
     w1: f32[16, 8], w2: f32[8, 16], nw: f32[8], am: bool[5, 5], fm: f32[4, 5, 4], kpm: bool[2, 4],
     kp5: bool[2, 5], fm2: f32[5, 5]) -> (f32[2, 5, 8], f32[2, 5, 5], f32[5, 2, 8], f32[2, 2, 5, 4],
     f32[2, 5, 8], f32[2, 5, 6], f32[5, 8], f32[2, 5, 8], f32[5, 2, 8], f32[5, 2, 8], f32[2, 5, 5], f32[2, 5, 8],
     f64[2, 5, 8], f64[2, 5, 5], f32[2, 5, 8], f32[2, 5, 8], f32[5, 8], f32[5, 8], f32[2, 5, 8], f32[5, 2, 8],
     f32[2, 5, 8], f32[2, 4, 8]) {
    a1 = mha(w, b, nn.MultiheadAttention(8, 2, batch_first=True))
    o1, w1_ = a1(x, x, x, attn_mask=am)
    a2 = mha(w, b, nn.MultiheadAttention(8, 2))
    q, kv = x.transpose(0, 1), mem.transpose(0, 1)
    o2, w2_ = a2(q, kv, kv, attn_mask=fm, key_padding_mask=kpm, average_attn_weights=False)
    a3 = nn.MultiheadAttention(8, 2, kdim=6, vdim=6, add_bias_kv=True, add_zero_attn=True, batch_first=True)
    a3.q_proj_weight, a3.k_proj_weight, a3.v_proj_weight = w[32:40], w6[0:8], w6[8:16]
    a3.in_proj_bias = b[0:24]
    a3.bias_k, a3.bias_v = w[40:41].unsqueeze(0), w[41:42].unsqueeze(0)
    a3.out_proj.weight, a3.out_proj.bias = w[24:32], b[24:32]
    o3, w3_ = a3(x, kv6, kv6, key_padding_mask=kpm)
    a4 = nn.MultiheadAttention(8, 2, bias=False)
    a4.in_proj_weight, a4.out_proj.weight = w[0:24], w[24:32]
    o4, none4 = a4(x[0], mem[0], mem[0], need_weights=False)
    assert none4 is None
    assert isinstance(a4, nn.MultiheadAttention) and not isinstance(a4, nn.Linear) and isinstance(a4.out_proj, nn.Linear)
    t1 = tel(w, b, w1, w2, nw, nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True))
    t2 = tel(w, b, w1, w2, nw, nn.TransformerEncoderLayer(8, 2, 16, 0.0, "gelu", layer_norm_eps=1e-6, norm_first=True))
    o7, w7_ = F.multi_head_attention_forward(q, q, q, 8, 2, w[0:24], b[0:24], None, None, False, 0.0, w[24:32],
                                             b[24:32], training=False, key_padding_mask=kp5)
    blk = EncoderBlock(2, 8, 16, 0.1, 0.0, act_layer=nn.GELU)
    blk.ln_1.weight, blk.ln_1.bias, blk.ln_2.weight, blk.ln_2.bias = nw, b[56:64], nw * 2, b[56:64] - 1
    mha(w, b, blk.self_attention)
    blk.mlp[0].weight, blk.mlp[0].bias, blk.mlp[2].weight, blk.mlp[2].bias = w1, b[32:48], w2, b[48:56]
    a8 = mha(w.double(), b.double(), nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64))
    o8, w8_ = a8(x.double(), x.double(), x.double(), attn_mask=fm2.double())
    o9 = a1(x, x, x, attn_mask=am.to(torch.uint8), key_padding_mask=kp5.float() * -2.0, need_weights=False)[0]
    t3 = tel(w, b, w1, w2, nw, nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True))
    mha(w * 0.5, b, t3.multihead_attn)
    t3.norm3.weight, t3.norm3.bias = nw + 1, b[56:64]
    o10 = t3(x, mem, tgt_mask=fm2, memory_key_padding_mask=kpm)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16), 2, norm=nn.LayerNorm(8))
    for i, l in enumerate(enc.layers) {
        tel(w * (i + 1), b, w1, w2, nw, l)
    }
    enc.norm.weight, enc.norm.bias = nw, b[0:8]
    dec = nn.TransformerDecoder(t3, 2)
    dec.layers[1].linear1.weight = w1 * 0.5
    tr = nn.Transformer(8, 2, 1, 1, 16, activation="gelu", batch_first=True)
    tel(w, b, w1, w2, nw, tr.encoder.layers[0])
    td = tel(w * 0.5, b, w1, w2, nw, tr.decoder.layers[0])
    mha(w, b * 2, td.multihead_attn)
    td.norm3.weight, td.norm3.bias = nw, b[0:8]
    for n in (tr.encoder.norm, tr.decoder.norm) {
        n.weight, n.bias = nw + 0.5, b[8:16]
    }
    return (o1, w1_, o2, w2_, o3, w3_, o4, t1(x, src_key_padding_mask=kp5), t2(q, src_mask=fm2), o7, w7_, blk(x),
            o8, w8_, o9, o10, normed(x[0], nw), normed(x[0], nw, partial(nn.LayerNorm, eps=0.5), nn.Tanh, x[1]),
            a1(x, x, x, attn_mask=fm2, key_padding_mask=kp5.float() - 1.0, need_weights=False)[0],
            enc(q, mask=fm2, src_key_padding_mask=kp5), dec(x, mem, tgt_mask=fm2, memory_key_padding_mask=kpm),
            tr(x, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4), src_key_padding_mask=kp5))
}
"""


def modules_oracle(inputs):
    """The same modules in PyTorch 1.13 (float64, eval mode, no grad), on the same inputs."""
    import torch
    from functools import partial
    nn = torch.nn
    a = {k: torch.from_numpy(v.astype(np.float64) if v.dtype.kind == "f" else v) for k, v in inputs.items()}
    x, mem, kv6, w, b, w6, w1, w2, nw = (a[k] for k in ("x", "mem", "kv6", "w", "b", "w6", "w1", "w2", "nw"))
    dd = dict(dtype=torch.float64)

    def mha(m, w=w, b=b):
        m.in_proj_weight.copy_(w[0:24])
        m.in_proj_bias.copy_(b[0:24])
        m.out_proj.weight.copy_(w[24:32])
        m.out_proj.bias.copy_(b[24:32])
        return m.eval()

    def tel(layer, wm=w):
        mha(layer.self_attn, wm)
        for lin, wt, bias in ((layer.linear1, w1, b[32:48]), (layer.linear2, w2, b[48:56]),
                              (layer.norm1, nw, b[56:64]), (layer.norm2, nw * 2, b[56:64] - 1)):
            lin.weight.copy_(wt)
            lin.bias.copy_(bias)
        return layer.eval()

    with torch.no_grad():
        o1, w1_ = mha(nn.MultiheadAttention(8, 2, batch_first=True, **dd))(x, x, x, attn_mask=a["am"])
        q, kv = x.transpose(0, 1), mem.transpose(0, 1)
        o2, w2_ = mha(nn.MultiheadAttention(8, 2, **dd))(q, kv, kv, attn_mask=a["fm"], key_padding_mask=a["kpm"],
                                                         average_attn_weights=False)
        a3 = nn.MultiheadAttention(8, 2, kdim=6, vdim=6, add_bias_kv=True, add_zero_attn=True, batch_first=True, **dd)
        for p, v in ((a3.q_proj_weight, w[32:40]), (a3.k_proj_weight, w6[0:8]), (a3.v_proj_weight, w6[8:16]),
                     (a3.in_proj_bias, b[0:24]), (a3.bias_k, w[40:41][None]), (a3.bias_v, w[41:42][None]),
                     (a3.out_proj.weight, w[24:32]), (a3.out_proj.bias, b[24:32])):
            p.copy_(v)
        o3, w3_ = a3.eval()(x, kv6, kv6, key_padding_mask=a["kpm"])
        a4 = nn.MultiheadAttention(8, 2, bias=False, **dd)
        a4.in_proj_weight.copy_(w[0:24])
        a4.out_proj.weight.copy_(w[24:32])
        o4, _ = a4.eval()(x[0], mem[0], mem[0], need_weights=False)
        t1 = tel(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True, **dd))
        t2 = tel(nn.TransformerEncoderLayer(8, 2, 16, 0.0, "gelu", layer_norm_eps=1e-6, norm_first=True, **dd))
        o7, w7_ = torch.nn.functional.multi_head_attention_forward(
            q, q, q, 8, 2, w[0:24], b[0:24], None, None, False, 0.0, w[24:32], b[24:32], training=False,
            key_padding_mask=a["kp5"])
        ln = partial(nn.LayerNorm, eps=1e-6, **dd)
        blk_ln1, blk_ln2 = ln(8), ln(8)
        for m, wt, bias in ((blk_ln1, nw, b[56:64]), (blk_ln2, nw * 2, b[56:64] - 1)):
            m.weight.copy_(wt)
            m.bias.copy_(bias)
        sa = mha(nn.MultiheadAttention(8, 2, batch_first=True, **dd))
        h = blk_ln1(x)
        h = sa(h, h, h, need_weights=False)[0] + x
        mlp = nn.Sequential(nn.Linear(8, 16, **dd), nn.GELU(), nn.Linear(16, 8, **dd))
        for i, wt, bias in ((0, w1, b[32:48]), (2, w2, b[48:56])):
            mlp[i].weight.copy_(wt)
            mlp[i].bias.copy_(bias)
        blk = h + mlp(blk_ln2(h))
        o8, w8_ = mha(nn.MultiheadAttention(8, 2, batch_first=True, **dd))(x, x, x, attn_mask=a["fm2"])
        o9 = mha(nn.MultiheadAttention(8, 2, batch_first=True, **dd))(
            x, x, x, attn_mask=a["am"].to(torch.uint8), key_padding_mask=a["kp5"].double() * -2.0,
            need_weights=False)[0]
        outs = [o1, w1_, o2, w2_, o3, w3_, o4, t1(x, src_key_padding_mask=a["kp5"]), t2(q, src_mask=a["fm2"]), o7,
                w7_, blk, o8, w8_, o9]
        t3 = tel(nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True, **dd))
        mha(t3.multihead_attn, w * 0.5)
        t3.norm3.weight.copy_(nw + 1)
        t3.norm3.bias.copy_(b[56:64])
        outs.append(t3(x, mem, tgt_mask=a["fm2"], memory_key_padding_mask=a["kpm"]))
        for norm, act in ((nn.LayerNorm(8, **dd), nn.GELU()), (partial(nn.LayerNorm, eps=0.5)(8, **dd), nn.Tanh())):
            norm.weight.copy_(nw)
            norm.bias.copy_(nw - 1)
            outs.append(act(norm(x[0])) + (0 if isinstance(act, nn.GELU) else x[1]))
        outs.append(mha(nn.MultiheadAttention(8, 2, batch_first=True, **dd))(
            x, x, x, attn_mask=a["fm2"], key_padding_mask=a["kp5"].double() - 1.0, need_weights=False)[0])
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, **dd), 2,
                                    norm=nn.LayerNorm(8, **dd)).eval()
        for i, layer in enumerate(enc.layers):
            tel(layer, w * (i + 1))
        enc.norm.weight.copy_(nw)
        enc.norm.bias.copy_(b[0:8])
        outs.append(enc(q, mask=a["fm2"], src_key_padding_mask=a["kp5"]))
        dec = nn.TransformerDecoder(t3, 2).eval()
        dec.layers[1].linear1.weight.copy_(w1 * 0.5)
        outs.append(dec(x, mem, tgt_mask=a["fm2"], memory_key_padding_mask=a["kpm"]))
        tr = nn.Transformer(8, 2, 1, 1, 16, activation="gelu", batch_first=True, **dd).eval()
        tel(tr.encoder.layers[0])
        td = tel(tr.decoder.layers[0], w * 0.5)
        mha(td.multihead_attn, w, b * 2)
        td.norm3.weight.copy_(nw)
        td.norm3.bias.copy_(b[0:8])
        for n in (tr.encoder.norm, tr.decoder.norm):
            n.weight.copy_(nw + 0.5)
            n.bias.copy_(b[8:16])
        with torch.enable_grad():  # PyTorch's nested-tensor fast path only without gradients
            want = tr(x, mem, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4).double(),
                      src_key_padding_mask=a["kp5"])
        outs.append(want.detach())
    return [o.numpy() for o in outs]


def nn_modules(tdslc, t):
    rng = np.random.default_rng(41)

    def r(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    am = rng.random((5, 5)) < 0.4
    np.fill_diagonal(am, False)  # no row with every key hidden
    kpm = np.array([[False, False, True, False], [False, True, False, True]])
    kp5 = np.array([[False, False, False, False, True], [False, True, False, False, False]])
    inputs = {"x": r(2, 5, 8, scale=1.0), "mem": r(2, 4, 8, scale=1.0), "kv6": r(2, 4, 6, scale=1.0), "w": r(48, 8),
              "b": r(64, scale=0.2), "w6": r(16, 6), "w1": r(16, 8), "w2": r(8, 16), "nw": 1 + r(8, scale=0.1),
              "am": am, "fm": r(4, 5, 4), "kpm": kpm, "kp5": kp5, "fm2": r(5, 5)}
    want = modules_oracle(inputs)
    p, outs = run_outputs(tdslc, MODULES_SRC, inputs)
    if p.returncode != 0:
        errs = [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:600]}"]
    else:
        errs = compare(outs, want, ["f32"] * 12 + ["f64"] * 2 + ["f32"] * 8)
    t.report("nn.MultiheadAttention, nn.TransformerEncoderLayer and DecoderLayer, F.multi_head_attention_forward "
             "and module classes as values, against PyTorch", errs, MODULES_SRC)


# ---- the layers a torchvision-style CNN builds besides (3-D conv, norm and pools, pixel shuffles, the
# padding layers, LRN, the old upsampling layers), as module objects, against PyTorch 1.13 ----
LAYERS_BODY = """    torch.manual_seed(0)
    emb = nn.Embedding.from_pretrained(x4[0, 0], padding_idx=1)
    conv = nn.Conv3d(2, 3, 2, padding=1)
    conv.weight = w3
    conv.bias = b3
    bn = nn.BatchNorm3d(3, eps=1e-3)
    bn.running_mean, bn.running_var, bn.weight, bn.bias = b3, rv, rv - 0.5, b3 * 2.0
    y = bn(conv(x5))
    return (y, nn.MaxPool3d(2)(y), nn.AvgPool3d(2, stride=1)(y), nn.AdaptiveAvgPool3d(1)(y),
            nn.AdaptiveMaxPool3d((1, 2, 1))(y), nn.InstanceNorm3d(3)(y), nn.PixelShuffle(2)(x4),
            nn.PixelUnshuffle(2)(x4), nn.LocalResponseNorm(2)(x4), nn.UpsamplingNearest2d(scale_factor=2)(x4),
            nn.UpsamplingBilinear2d(size=(5, 6))(x4), nn.ZeroPad2d(1)(x4), nn.ConstantPad1d((1, 2), 3.5)(x3),
            nn.ConstantPad3d(1, -1.0)(x5), nn.ReflectionPad1d(2)(x3), nn.ReflectionPad2d((1, 0, 2, 1))(x4),
            nn.ReplicationPad1d((0, 2))(x3), nn.ReplicationPad2d(1)(x4), nn.ReplicationPad3d((1, 0, 0, 1, 1, 0))(x5),
            emb(ix), nn.Embedding(4, 4, _weight=x4[0, 1])(ix),
            nn.Sequential(nn.Identity(), nn.Embedding.from_pretrained(x4[0, 2]), nn.ReLU())(ix),
            torch.stack([nn.Embedding(4, 4, _weight=x4[0, j])(ix) * 2.0 for j in range(2)]),
            call_on(nn.Embedding(4, 4, _weight=x4[0, 3]), ix), *more(x4, x5, x3, y, w3, b3, wt2, wt1, wbl))
"""

# PReLU (its init, one weight per channel, float64), ConvTranspose1d/2d/3d (groups, dilation, output_padding
# and forward's output_size), Bilinear, ChannelShuffle (and F.channel_shuffle of bools), ReflectionPad3d
MORE_SRC = r"""fn more(x4, x5, x3, y, w3, b3, wt2, wt1, wbl) {
    p = nn.PReLU(4, init=0.1)
    p.weight = x4[0, 0, 0]
    ct2 = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2)
    ct2.weight, ct2.bias = wt2, wt2[0, 0, 0].repeat(2)
    ct1 = nn.ConvTranspose1d(2, 3, 2, dilation=2, bias=False)
    ct1.weight = wt1
    ct3 = nn.ConvTranspose3d(3, 2, 2, stride=(1, 2, 1), output_padding=(0, 1, 0))
    ct3.weight, ct3.bias = w3, b3[0:2]
    bl = nn.Bilinear(4, 5, 3)
    bl.weight, bl.bias = wbl, b3
    shuffled = F.channel_shuffle(x5 > 0.0, 2)
    return (nn.PReLU()(x4), p(x4), nn.PReLU(dtype=torch.float64)(x4.double()).float(), ct2(x4),
            ct2(x4, output_size=(1, 6, 8, 8)), ct1(x3), ct3(y), bl(x4[0, 0, 0:2], x3[0]), nn.ChannelShuffle(2)(x4),
            shuffled.float(), nn.ReflectionPad3d(1)(x5), nn.ReflectionPad3d((1, 0, 2, 1, 0, 1))(x5[0]))
}
"""


def layers_oracle(a):
    import torch
    nn = torch.nn
    a = {k: torch.from_numpy(v.astype(np.float64) if v.dtype.kind == "f" else v) for k, v in a.items()}
    x4, x5, x3, w3, b3, rv = (a[k] for k in ("x4", "x5", "x3", "w3", "b3", "rv"))
    with torch.no_grad():
        conv = nn.Conv3d(2, 3, 2, padding=1).double()
        bn = nn.BatchNorm3d(3, eps=1e-3).double().eval()
        conv.load_state_dict({"weight": w3, "bias": b3})
        bn.load_state_dict({"running_mean": b3, "running_var": rv, "weight": rv - 0.5, "bias": b3 * 2.0,
                            "num_batches_tracked": torch.tensor(0)})
        y = bn(conv(x5))
        outs = [y, nn.MaxPool3d(2)(y), nn.AvgPool3d(2, stride=1)(y), nn.AdaptiveAvgPool3d(1)(y),
                nn.AdaptiveMaxPool3d((1, 2, 1))(y), nn.InstanceNorm3d(3)(y), nn.PixelShuffle(2)(x4),
                nn.PixelUnshuffle(2)(x4), nn.LocalResponseNorm(2)(x4), nn.UpsamplingNearest2d(scale_factor=2)(x4),
                nn.UpsamplingBilinear2d(size=(5, 6))(x4), nn.ZeroPad2d(1)(x4), nn.ConstantPad1d((1, 2), 3.5)(x3),
                nn.ConstantPad3d(1, -1.0)(x5), nn.ReflectionPad1d(2)(x3), nn.ReflectionPad2d((1, 0, 2, 1))(x4),
                nn.ReplicationPad1d((0, 2))(x3), nn.ReplicationPad2d(1)(x4),
                nn.ReplicationPad3d((1, 0, 0, 1, 1, 0))(x5), nn.Embedding.from_pretrained(x4[0, 0], padding_idx=1)(a["ix"])]
        ix = a["ix"]  # modules made and called inline, their parameters set by the constructor
        outs += [nn.Embedding(4, 4, _weight=x4[0, 1])(ix),
                 nn.Sequential(nn.Identity(), nn.Embedding.from_pretrained(x4[0, 2]), nn.ReLU())(ix),
                 torch.stack([nn.Embedding(4, 4, _weight=x4[0, j])(ix) * 2.0 for j in range(2)]),
                 nn.Embedding(4, 4, _weight=x4[0, 3])(ix)]
        p = nn.PReLU(4, init=0.1).double()
        p.weight.copy_(x4[0, 0, 0])
        ct2 = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2).double()
        ct2.load_state_dict({"weight": a["wt2"], "bias": a["wt2"][0, 0, 0].repeat(2)})
        ct1 = nn.ConvTranspose1d(2, 3, 2, dilation=2, bias=False).double()
        ct1.weight.copy_(a["wt1"])
        ct3 = nn.ConvTranspose3d(3, 2, 2, stride=(1, 2, 1), output_padding=(0, 1, 0)).double()
        ct3.load_state_dict({"weight": w3, "bias": b3[0:2]})
        bl = nn.Bilinear(4, 5, 3).double()
        bl.load_state_dict({"weight": a["wbl"], "bias": b3})
        outs += [nn.PReLU().double()(x4), p(x4), nn.PReLU(dtype=torch.float64)(x4), ct2(x4),
                 ct2(x4, output_size=(1, 6, 8, 8)), ct1(x3), ct3(y), bl(x4[0, 0, 0:2], x3[0]),
                 nn.ChannelShuffle(2)(x4), torch.nn.functional.channel_shuffle(x5 > 0, 2).double(),
                 nn.ReflectionPad3d(1)(x5), nn.ReflectionPad3d((1, 0, 2, 1, 0, 1))(x5[0])]
    return [o.numpy() for o in outs]


def more_layers(tdslc, t):
    rng = np.random.default_rng(43)
    inputs = {k: rng.standard_normal(s).astype(np.float32) for k, s in
              (("x4", (1, 4, 4, 4)), ("x5", (1, 2, 3, 4, 4)), ("x3", (1, 2, 5)), ("w3", (3, 2, 2, 2, 2)),
               ("b3", (3,)), ("wt2", (4, 3, 3, 3)), ("wt1", (2, 3, 2)), ("wbl", (3, 4, 5)))}
    inputs["rv"] = (1 + rng.random(3)).astype(np.float32)
    inputs["ix"] = np.array([3, 0, 1], dtype=np.int64)
    want = layers_oracle(inputs)
    params = ", ".join(f"{k}: {'i64' if v.dtype == np.int64 else 'f32'}[{', '.join(map(str, v.shape))}]"
                       for k, v in inputs.items())
    rets = ", ".join(f"f32[{', '.join(map(str, w.shape))}]" for w in want)
    src = (f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nfn call_on(m, x) {{ return m(x) }}\n\n"
           f"{MORE_SRC}\nfn f({params}) -> ({rets}) {{\n{LAYERS_BODY}}}\n")
    p, outs = run_outputs(tdslc, src, inputs)
    if p.returncode != 0:
        errs = [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:600]}"]
    else:
        errs = compare(outs, want, ["f32"] * len(want))
    t.report("nn.Conv3d, BatchNorm3d, the 3-D pools, InstanceNorm3d, PixelShuffle, LocalResponseNorm, the padding "
             "and upsampling layers, PReLU, ConvTranspose1d/2d/3d, Bilinear, ChannelShuffle as module objects, Embedding.from_pretrained, nn.Embedding(n, d, _weight=w) made "
             "and called inline (alone, in a Sequential, a comprehension, as an argument), against PyTorch", errs, src)


# ---- a torchvision-style CNN: its __init__'s loop over self.modules() (nn.init.constant_ of each BatchNorm's
# weight and bias, kaiming_normal_ of each conv's weight, set by the entry), the entry setting each conv's weight
# by its name from named_modules(), against PyTorch's model with the same state_dict ----
CNN_SRC = r"""import torch
import torch.nn as nn

class Block(nn.Module) {
    fn __init__(self, c: int) {
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.act = nn.ReLU(inplace=True)
    }
    fn forward(self, x) { return self.act(self.bn(self.conv(x))) + x }
}

class Net(nn.Module) {
    fn __init__(self) {
        super().__init__()
        self.stem = nn.Conv2d(2, 3, 1)
        self.layers = nn.Sequential(Block(3), Block(3))
        self.pool = nn.AdaptiveAvgPool2d(1)
        for m in self.modules() {
            if isinstance(m, nn.Conv2d) {
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            } elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)) {
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            }
        }
    }
    fn forward(self, x) { return torch.flatten(self.pool(self.layers(self.stem(x))), 1) }
}

fn f(x: f32[2, 2, 5, 5], w0: f32[3, 2, 1, 1], b0: f32[3], w1: f32[3, 3, 3, 3], w2: f32[3, 3, 3, 3], rm: f32[3],
     rv: f32[3]) -> f32[2, 3] {
    torch.manual_seed(0)
    net = Net()
    ws = {"stem": w0, "layers.0.conv": w1, "layers.1.conv": w2}
    for name, m in net.named_modules() {
        if isinstance(m, nn.Conv2d) {
            m.weight = ws[name]
        } elif isinstance(m, nn.BatchNorm2d) {
            m.running_mean, m.running_var = rm, rv
        }
    }
    net.stem.bias = b0
    assert [n for n, _ in net.named_children()] == ["stem", "layers", "pool"]
    assert len(list(net.layers[1].children())) == 3
    assert [type(net).__name__, net.layers[0].__class__.__name__, type(net.stem).__name__] == ["Net", "Block", "Conv2d"]
    net.requires_grad_(False).zero_grad()
    return net.train(False)(x) + nn.Sequential(nn.Identity(), nn.Dropout(0.0)).train().eval()(x[:, 0, 0, :3]) * 0.0
}
"""


def cnn_oracle(a):
    import torch
    nn = torch.nn
    t = {k: torch.from_numpy(v.astype(np.float64)) for k, v in a.items()}

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(c)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(self.bn(self.conv(x))) + x

    net = nn.Sequential()
    net.stem = nn.Conv2d(2, 3, 1)
    net.layers = nn.Sequential(Block(3), Block(3))
    net.pool = nn.AdaptiveAvgPool2d(1)
    net.flat = nn.Flatten(1)
    sd = net.double().state_dict()
    sd.update({"stem.weight": t["w0"], "stem.bias": t["b0"], "layers.0.conv.weight": t["w1"],
               "layers.1.conv.weight": t["w2"]})
    for i in range(2):
        sd[f"layers.{i}.bn.running_mean"], sd[f"layers.{i}.bn.running_var"] = t["rm"], t["rv"]
    net.load_state_dict(sd)
    with torch.no_grad():
        return [net.eval()(t["x"]).numpy()]


def cnn_modules(tdslc, t):
    rng = np.random.default_rng(44)
    inputs = {k: (rng.standard_normal(s) * 0.5).astype(np.float32) for k, s in
              (("x", (2, 2, 5, 5)), ("w0", (3, 2, 1, 1)), ("b0", (3,)), ("w1", (3, 3, 3, 3)), ("w2", (3, 3, 3, 3)),
               ("rm", (3,)))}
    inputs["rv"] = (1 + rng.random(3)).astype(np.float32)
    want = cnn_oracle(inputs)
    p, outs = run_outputs(tdslc, CNN_SRC, inputs)
    if p.returncode != 0:
        errs = [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:600]}"]
    else:
        errs = compare(outs, want, ["f32"])
    t.report("a torchvision-style CNN: self.modules() in __init__ with nn.init fills, named_modules(), "
             "named_children(), train(False), requires_grad_, type(m).__name__, against PyTorch", errs, CNN_SRC)


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, inputs, exprs, kinds, model in CASES[::test_subset()]:  # the sanitizer pass: a subset
        want = model(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in inputs.values()])
        params = ", ".join(f"{p}: {DECL[a.dtype.type]}[{', '.join(map(str, a.shape))}]" for p, a in inputs.items())
        rets = ", ".join(f"{'f32' if k == 'bf16' else k}[{', '.join(str(d) for d in np.shape(w))}]"
                         for k, w in zip(kinds, want))
        src = f"fn f({params}) -> ({rets}) {{\n    return {exprs}\n}}\n"
        p, outs = run_outputs(tdslc, src, inputs)
        if p.returncode != 0:
            errs = [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:600]}"]
        else:
            errs = compare(outs, want, kinds)
        t.report(name, errs, src)
    nn_modules(tdslc, t)
    more_layers(tdslc, t)
    cnn_modules(tdslc, t)
    # an index outside the table is PyTorch's run-time error, at the call
    src = "fn f(i: i64[3], w: f32[4, 2]) -> f32[3, 2] {\n    return F.embedding(i, w)\n}\n"
    p, _ = run_outputs(tdslc, src, {"i": np.array([0, 4, 1]), "w": randn(4, 2)})
    err = p.stderr.decode(errors="replace")
    t.check("embedding index out of range is a run-time error", p.returncode == 3 and
            "index out of range in self" in err, err[:400])
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
