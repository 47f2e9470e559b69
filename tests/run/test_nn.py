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
    # an index outside the table is PyTorch's run-time error, at the call
    src = "fn f(i: i64[3], w: f32[4, 2]) -> f32[3, 2] {\n    return F.embedding(i, w)\n}\n"
    p, _ = run_outputs(tdslc, src, {"i": np.array([0, 4, 1]), "w": randn(4, 2)})
    err = p.stderr.decode(errors="replace")
    t.check("embedding index out of range is a run-time error", p.returncode == 3 and
            "index out of range in self" in err, err[:400])
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
