#!/usr/bin/python3
"""tests/run/test_losses.py TDSLC: the losses of torch.nn.functional (mse_loss, l1_loss,
smooth_l1_loss, huber_loss, soft_margin_loss, binary_cross_entropy(_with_logits), kl_div,
nll_loss, cross_entropy, poisson_nll_loss, gaussian_nll_loss: frontend/sema_loss.c; the
margin and embedding losses are test_losses_margin's) run as written — every keyword and reduction, f32, f64, f16 and
bf16, operands that are views (transposed, strided), targets of another shape that
broadcast — and compared with the same losses computed here in NumPy (float64, on the
inputs rounded as the program rounds them). Also: a class index out of range is a
run-time error (exit 3) and a target equal to ignore_index is not; mse_loss warns about a
target of another size as PyTorch does.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, bf16_bits_to_f32, count_errors, require_backend, run_outputs, tdslc_run_clean,  # noqa: E402
                    test_subset)

RNG = np.random.default_rng(14)
INPUTS = {
    "x": RNG.standard_normal((4, 5)).astype(np.float32),
    "y": RNG.standard_normal((4, 5)).astype(np.float32),
    "xt": RNG.standard_normal((5, 4)).astype(np.float32),  # used as xt.t(): a transposed view
    "t": np.array([0, 4, -100, 2], np.int64),
    "w": RNG.uniform(0.5, 2.0, 5).astype(np.float32),
    "x4": RNG.standard_normal((2, 5, 3, 2)).astype(np.float32),
    "t4": np.array([0, 4, 1, -100, 3, 3, 2, 1, 0, 4, -100, 2], np.int64).reshape(2, 3, 2),
    "v": RNG.uniform(0.1, 2.0, (4, 5)).astype(np.float32),  # poisson_nll_loss, gaussian_nll_loss
    "c": RNG.integers(0, 6, (4, 5)).astype(np.float32),
}
PARAMS = ("x: f32[4, 5], y: f32[4, 5], xt: f32[5, 4], t: i64[4], w: f32[5], x4: f32[2, 5, 3, 2], t4: i64[2, 3, 2], "
          "v: f32[4, 5], c: f32[4, 5]")
TOL = {"f64": 1e-12, "f32": 1e-5, "f16": 5e-3, "bf16": 3e-2}
# "f64@f32": an f64 result of f32 operands PyTorch computes partly in f32: f32's tolerance


# ---------------------------------------------------------------------------
# NumPy's losses (float64)
# ---------------------------------------------------------------------------
def f16(a):
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float64)


def f32(a):
    return np.asarray(a, np.float32).astype(np.float64)


def bf16(a):
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def reduce(loss, reduction):
    return {"none": loss, "mean": np.mean(loss), "sum": np.sum(loss)}[reduction]


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


def log_softmax(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))


def softmax(a, axis):
    return np.exp(log_softmax(a, axis))


def mse(a, b, r="mean"):
    return reduce((a - b) ** 2, r)


def l1(a, b, r="mean"):
    return reduce(np.abs(a - b), r)


def smooth_l1(a, b, r="mean", beta=1.0):
    z = np.abs(a - b)
    return reduce(np.where(z < beta, 0.5 * z * z / max(beta, 1e-300), z - 0.5 * beta), r)


def huber(a, b, r="mean", delta=1.0):
    z = np.abs(a - b)
    return reduce(np.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)), r)


def soft_margin(a, b, r="mean"):
    return reduce(np.log1p(np.exp(-a * b)), r)


def bce(p, t, r="mean", w=None):
    with np.errstate(divide="ignore"):  # log(0) is -inf, clamped to -100
        loss = -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log(1 - p), -100))
    return reduce(loss if w is None else loss * w, r)


def bce_logits(x, t, r="mean", w=None, pw=None):
    softplus_neg = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)  # log(1 + exp(-x))
    lw = 1 if pw is None else 1 + f32(pw - 1) * t  # pos_weight - 1 in pos_weight's dtype (f32 here)
    loss = (1 - t) * x + lw * softplus_neg
    return reduce(loss if w is None else loss * w, r)


def kl(x, t, r="mean", log_target=False):
    if log_target:
        loss = np.exp(t) * (t - x)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = np.where(t == 0, 0, t * np.log(np.where(t == 0, 1, t))) - t * x
    if r == "batchmean":
        return loss.sum() / x.shape[0]
    return reduce(loss, r)


def nll(lp, t, r="mean", w=None, ignore=-100):
    """lp: (N, C, ...) or (C,) with a 0-d t."""
    lp = np.asarray(lp)
    t = np.asarray(t)
    if lp.ndim == 1:
        lp, t = lp[None], t[None]
        squeeze = True
    else:
        squeeze = False
    c = lp.shape[1]
    wv = np.ones(c) if w is None else np.asarray(w, np.float64)
    keep = t != ignore
    safe = np.where(keep, t, 0)
    picked = np.take_along_axis(lp, safe[:, None], axis=1)[:, 0]
    wt = np.where(keep, wv[safe], 0)
    loss = np.where(keep, -wt * picked, 0)
    if r == "none":
        return loss[0] if squeeze else loss
    if r == "sum":
        return loss.sum()
    return loss.sum() / wt.sum()


def cross_entropy(x, t, r="mean", w=None, ignore=-100, ls=0.0):
    axis = 0 if x.ndim == 1 else 1
    lp = log_softmax(x, axis)
    loss = nll(lp, t, r, w, ignore)
    if ls <= 0:
        return loss
    c = x.shape[axis]
    wshape = [1] * x.ndim
    wshape[axis] = c
    wv = np.ones(c) if w is None else np.asarray(w, np.float64)
    smooth = np.where(np.asarray(t) == ignore, 0, -(lp * wv.reshape(wshape)).sum(axis))
    if r == "sum":
        smooth = smooth.sum()
    elif r == "mean":
        keep = np.asarray(t) != ignore
        smooth = smooth.sum() / np.where(keep, wv[np.where(keep, t, 0)], 0).sum()
    return (1 - ls) * loss + ls / c * smooth


def cross_entropy_probs(x, p, r="mean", w=None, ls=0.0, round_lp=lambda a: a):
    """round_lp: log_softmax is in x's dtype (f32 where the target is f64)."""
    axis = 0 if x.ndim == 1 else 1
    c = x.shape[axis]
    if ls > 0:
        p = p * (1 - ls) + ls / c
    wshape = [1] * x.ndim
    wshape[axis] = c
    prod = round_lp(log_softmax(x, axis)) * p * (1 if w is None else np.asarray(w, np.float64).reshape(wshape))
    if r == "none":
        return -prod.sum(axis)
    if r == "sum":
        return -prod.sum()
    return -prod.sum() / (x.size / c)


# ---------------------------------------------------------------------------
# The cases: (name, returned expressions, their dtypes, NumPy's values over the
# inputs as float64 arrays d)
# ---------------------------------------------------------------------------
def probs(a):
    return softmax(a, 1)


def poisson_nll(x, t, log_input=True, full=False, eps=1e-8, r="mean"):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        with np.errstate(divide="ignore", invalid="ignore"):
            st = t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t)
        loss = loss + np.where(t <= 1, 0, st)
    return reduce(loss, r)


def gaussian_nll(x, t, v, full=False, eps=1e-6, r="mean"):
    v = np.maximum(v, eps)
    loss = 0.5 * (np.log(v) + (x - t) ** 2 / v)
    if full:
        loss = loss + 0.5 * np.log(2 * np.pi)
    return reduce(loss, r)


CASES = [
    ("mse_loss", "F.mse_loss(x, y), F.mse_loss(x, y, reduction='sum'), F.mse_loss(x, y, None, None, 'none'), "
     "torch.nn.functional.mse_loss(xt.t(), y, size_average=None, reduce=None)",
     ["f32"] * 4,
     lambda d: [mse(d["x"], d["y"]), mse(d["x"], d["y"], "sum"), mse(d["x"], d["y"], "none"),
                mse(d["xt"].T, d["y"])]),
    ("mse_loss_broadcast", "F.mse_loss(x, y[0]), mse_loss(x[:, 0:1], y, reduction='none')", ["f32"] * 2,
     lambda d: [mse(d["x"], d["y"][0]), mse(d["x"][:, 0:1], d["y"], "none")]),
    ("mse_loss_dtypes", "F.mse_loss(x.double(), y.double()), F.mse_loss(x, y.double(), reduction='none'), "
     "F.mse_loss(x.half(), y.half()), F.mse_loss(x.bfloat16(), y.bfloat16(), reduction='none'), "
     "F.mse_loss(x, y.long(), reduction='sum')",
     ["f64", "f64", "f16", "bf16", "f32"],
     lambda d: [mse(d["x"], d["y"]), mse(d["x"], d["y"], "none"), mse(f16(d["x"]), f16(d["y"])),
                mse(bf16(d["x"]), bf16(d["y"]), "none"), mse(d["x"], np.trunc(d["y"]), "sum")]),
    ("l1_loss", "F.l1_loss(x, y), F.l1_loss(xt.t(), y, reduction='sum'), l1_loss(x, y[1], reduction='none'), "
     "F.l1_loss(x.double(), y.double()), F.l1_loss(x.half(), y.half(), reduction='none'), "
     "F.l1_loss(x.bfloat16(), y.bfloat16())",
     ["f32", "f32", "f32", "f64", "f16", "bf16"],
     lambda d: [l1(d["x"], d["y"]), l1(d["xt"].T, d["y"], "sum"), l1(d["x"], d["y"][1], "none"),
                l1(d["x"], d["y"]), l1(f16(d["x"]), f16(d["y"]), "none"), l1(bf16(d["x"]), bf16(d["y"]))]),
    ("l1_loss_ints", "F.l1_loss(t, t * 2, reduction='sum'), F.l1_loss(t.int(), t.int() - 3, reduction='none')",
     ["i64", "i32"],
     lambda d: [np.abs(d["t"] - 2 * d["t"]).sum(), np.abs(d["t"] - (d["t"] - 3))]),
    ("smooth_l1_loss", "F.smooth_l1_loss(x, y), F.smooth_l1_loss(x, y, reduction='none', beta=0.5), "
     "F.smooth_l1_loss(xt.t(), y, None, None, 'sum', 2), F.smooth_l1_loss(x, y, beta=0.0), "
     "F.smooth_l1_loss(x.double(), y.double(), beta=0.3), F.smooth_l1_loss(x.half(), y.half(), reduction='sum'), "
     "F.smooth_l1_loss(x.bfloat16(), y.bfloat16(), reduction='none')",
     ["f32", "f32", "f32", "f32", "f64", "f16", "bf16"],
     lambda d: [smooth_l1(d["x"], d["y"]), smooth_l1(d["x"], d["y"], "none", 0.5),
                smooth_l1(d["xt"].T, d["y"], "sum", 2.0), l1(d["x"], d["y"]), smooth_l1(d["x"], d["y"], "mean", 0.3),
                smooth_l1(f16(d["x"]), f16(d["y"]), "sum"), smooth_l1(bf16(d["x"]), bf16(d["y"]), "none")]),
    ("huber_loss", "F.huber_loss(x, y), F.huber_loss(x, y, 'none', 0.7), F.huber_loss(xt.t(), y, delta=2.5, "
     "reduction='sum'), F.huber_loss(x, y.double()), F.huber_loss(x.double(), y, reduction='none', delta=0.2), "
     "F.huber_loss(x.half(), y), F.huber_loss(x.bfloat16(), y.bfloat16(), reduction='sum')",
     ["f32", "f32", "f32", "f32", "f64", "f16", "bf16"],
     lambda d: [huber(d["x"], d["y"]), huber(d["x"], d["y"], "none", 0.7), huber(d["xt"].T, d["y"], "sum", 2.5),
                huber(d["x"], d["y"]), huber(d["x"], d["y"], "none", 0.2), huber(f16(d["x"]), d["y"]),
                huber(bf16(d["x"]), bf16(d["y"]), "sum")]),
    ("soft_margin_loss", "F.soft_margin_loss(x, y.sign()), F.soft_margin_loss(x * 30, y.sign(), reduction='none'), "
     "F.soft_margin_loss(xt.t(), y[0], None, None, 'sum'), F.soft_margin_loss(x.double(), y.double()), "
     "F.soft_margin_loss(x.half(), y.sign().half(), reduction='none'), F.soft_margin_loss(x.bfloat16(), y)",
     ["f32", "f32", "f32", "f64", "f16", "bf16"],
     lambda d: [soft_margin(d["x"], np.sign(d["y"])), soft_margin(d["x"] * 30, np.sign(d["y"]), "none"),
                soft_margin(d["xt"].T, d["y"][0], "sum"), soft_margin(d["x"], d["y"]),
                soft_margin(f16(d["x"]), np.sign(d["y"]), "none"), soft_margin(bf16(d["x"]), d["y"])]),
    ("binary_cross_entropy", "F.binary_cross_entropy(x.sigmoid(), y.sigmoid()), "
     "F.binary_cross_entropy(x.sigmoid(), (y > 0).float(), w, reduction='none'), "
     "F.binary_cross_entropy(xt.t().sigmoid(), y.sigmoid(), weight=w[0:1].double(), size_average=None, "
     "reduce=None, reduction='sum'), F.binary_cross_entropy(x.double().sigmoid(), y.double().sigmoid(), w), "
     "F.binary_cross_entropy(x.sigmoid().half(), y.sigmoid().half()), "
     "F.binary_cross_entropy(x.sigmoid().bfloat16(), y.sigmoid().bfloat16(), reduction='none'), "
     "F.binary_cross_entropy(where(x > 0, 1.0, 0.0), (y > 0).float(), reduction='sum')",
     ["f32", "f32", "f32", "f64", "f16", "bf16", "f32"],
     lambda d: [bce(sigmoid(d["x"]), sigmoid(d["y"])), bce(sigmoid(d["x"]), (d["y"] > 0) * 1.0, "none", d["w"]),
                bce(sigmoid(d["xt"].T), sigmoid(d["y"]), "sum", d["w"][0]), bce(sigmoid(d["x"]), sigmoid(d["y"]),
                                                                                 "mean", d["w"]),
                bce(f16(sigmoid(d["x"])), f16(sigmoid(d["y"]))),
                bce(bf16(sigmoid(d["x"])), bf16(sigmoid(d["y"])), "none"),
                bce((d["x"] > 0) * 1.0, (d["y"] > 0) * 1.0, "sum")]),
    ("binary_cross_entropy_with_logits", "F.binary_cross_entropy_with_logits(x, y.sigmoid()), "
     "F.binary_cross_entropy_with_logits(x * 40, (y > 0).float(), w, reduction='none', pos_weight=w[1:2]), "
     "F.binary_cross_entropy_with_logits(xt.t(), y.sigmoid(), pos_weight=w, reduction='sum'), "
     "F.binary_cross_entropy_with_logits(x, y.sigmoid().double(), None, None, None, 'mean', w), "
     "F.binary_cross_entropy_with_logits(x.half(), y.sigmoid().half()), "
     "F.binary_cross_entropy_with_logits(x.bfloat16(), y.sigmoid().bfloat16(), reduction='none')",
     ["f32", "f32", "f32", "f64@f32", "f16", "bf16"],
     lambda d: [bce_logits(d["x"], sigmoid(d["y"])),
                bce_logits(d["x"] * 40, (d["y"] > 0) * 1.0, "none", d["w"], d["w"][1]),
                bce_logits(d["xt"].T, sigmoid(d["y"]), "sum", None, d["w"]),
                bce_logits(d["x"], f32(sigmoid(d["y"])), "mean", None, d["w"]),
                bce_logits(f16(d["x"]), f16(sigmoid(d["y"]))),
                bce_logits(bf16(d["x"]), bf16(sigmoid(d["y"])), "none")]),
    ("kl_div", "F.kl_div(x.log_softmax(1), y.softmax(1), reduction='batchmean'), F.kl_div(x, y.relu()), "
     "F.kl_div(x, y, reduction='none', log_target=True), F.kl_div(xt.t(), y.abs(), None, None, 'sum', False), "
     "F.kl_div(x.double(), y.relu().double(), reduction='batchmean'), F.kl_div(x, y.double(), log_target=True), "
     "F.kl_div(x.half(), y.softmax(1).half(), reduction='sum'), "
     "F.kl_div(x.bfloat16(), y.bfloat16(), reduction='none', log_target=True)",
     ["f32", "f32", "f32", "f32", "f64", "f64", "f16", "bf16"],
     lambda d: [kl(log_softmax(d["x"], 1), probs(d["y"]), "batchmean"), kl(d["x"], np.maximum(d["y"], 0)),
                kl(d["x"], d["y"], "none", True), kl(d["xt"].T, np.abs(d["y"]), "sum"),
                kl(d["x"], np.maximum(d["y"], 0), "batchmean"), kl(d["x"], d["y"], "mean", True),
                kl(f16(d["x"]), f16(probs(d["y"])), "sum"), kl(bf16(d["x"]), bf16(d["y"]), "none", True)]),
    ("nll_loss", "F.nll_loss(x, t), F.nll_loss(x, t, w), F.nll_loss(x, t, w, reduction='none'), "
     "F.nll_loss(xt.t(), t.clamp(min=0), w, None, 4, None, 'sum'), F.nll_loss(x, t.clamp(min=1), "
     "reduction='none', ignore_index=2), F.nll_loss(x[0], t[1]), F.nll_loss(x[1], t[2], reduction='sum')",
     ["f32"] * 7,
     lambda d: [nll(d["x"], d["t"]), nll(d["x"], d["t"], "mean", d["w"]), nll(d["x"], d["t"], "none", d["w"]),
                nll(d["xt"].T, np.maximum(d["t"], 0), "sum", d["w"], 4),
                nll(d["x"], np.maximum(d["t"], 1), "none", None, 2),
                nll(d["x"][0], d["t"][1]), nll(d["x"][1], d["t"][2], "sum")]),
    ("nll_loss_spatial", "F.nll_loss(x4, t4), F.nll_loss(x4, t4, w, reduction='none'), "
     "F.nll_loss(x4.transpose(2, 3), t4.transpose(1, 2), w, reduction='sum'), "
     "F.nll_loss(x4.flatten(2), t4.flatten(1), w), F.nll_loss(x4[..., 0], t4[..., 0], reduction='none')",
     ["f32"] * 5,
     lambda d: [nll(d["x4"], d["t4"]), nll(d["x4"], d["t4"], "none", d["w"]),
                nll(d["x4"].transpose(0, 1, 3, 2), d["t4"].transpose(0, 2, 1), "sum", d["w"]),
                nll(d["x4"].reshape(2, 5, 6), d["t4"].reshape(2, 6), "mean", d["w"]),
                nll(d["x4"][..., 0], d["t4"][..., 0], "none")]),
    ("nll_loss_dtypes", "F.nll_loss(x.double(), t, w.double()), F.nll_loss(x.half(), t, w.half(), reduction='none'), "
     "F.nll_loss(x.bfloat16(), t), F.nll_loss(x4.half(), t4, reduction='sum')",
     ["f64", "f16", "bf16", "f16"],
     lambda d: [nll(d["x"], d["t"], "mean", d["w"]), nll(f16(d["x"]), d["t"], "none", f16(d["w"])),
                nll(bf16(d["x"]), d["t"]), nll(f16(d["x4"]), d["t4"], "sum")]),
    ("nll_loss_all_ignored", "F.nll_loss(x, t * 0 - 100), F.nll_loss(x, t * 0 - 100, reduction='sum'), "
     "F.nll_loss(x[0:0], t[0:0])", ["f32"] * 3,
     lambda d: [np.nan, 0.0, np.nan]),
    ("cross_entropy", "F.cross_entropy(x, t), F.cross_entropy(x, t, w, reduction='none'), "
     "F.cross_entropy(xt.t(), t.clamp(min=0), w, None, 4, None, 'sum'), F.cross_entropy(x[2], t[0]), "
     "F.cross_entropy(x4, t4, w), F.cross_entropy(x4.transpose(2, 3), t4.transpose(1, 2), reduction='none')",
     ["f32"] * 6,
     lambda d: [cross_entropy(d["x"], d["t"]), cross_entropy(d["x"], d["t"], "none", d["w"]),
                cross_entropy(d["xt"].T, np.maximum(d["t"], 0), "sum", d["w"], 4), cross_entropy(d["x"][2], d["t"][0]),
                cross_entropy(d["x4"], d["t4"], "mean", d["w"]),
                cross_entropy(d["x4"].transpose(0, 1, 3, 2), d["t4"].transpose(0, 2, 1), "none")]),
    ("cross_entropy_label_smoothing", "F.cross_entropy(x, t, label_smoothing=0.2), "
     "F.cross_entropy(x, t, w, reduction='none', label_smoothing=0.3), "
     "F.cross_entropy(x4, t4, w, None, -100, None, 'mean', 0.1), "
     "F.cross_entropy(x4, t4, reduction='sum', label_smoothing=1), "
     "F.cross_entropy(x, t.clamp(min=0), w, ignore_index=0, label_smoothing=0.25), F.cross_entropy(x, t, label_smoothing=-0.5)",
     ["f32"] * 6,
     lambda d: [cross_entropy(d["x"], d["t"], ls=0.2), cross_entropy(d["x"], d["t"], "none", d["w"], ls=0.3),
                cross_entropy(d["x4"], d["t4"], "mean", d["w"], ls=0.1),
                cross_entropy(d["x4"], d["t4"], "sum", ls=1.0),
                cross_entropy(d["x"], np.maximum(d["t"], 0), "mean", d["w"], 0, ls=0.25), cross_entropy(d["x"], d["t"])]),
    ("cross_entropy_probabilities", "F.cross_entropy(x, y.softmax(1)), "
     "F.cross_entropy(x, y.softmax(1), w, reduction='none', label_smoothing=0.2), "
     "F.cross_entropy(xt.t(), y.softmax(1).double(), reduction='sum'), "
     "F.cross_entropy(x4, x4.softmax(1), w, label_smoothing=0.4), F.cross_entropy(x[0], y[0].softmax(0))",
     ["f32", "f32", "f64@f32", "f32", "f32"],
     lambda d: [cross_entropy_probs(d["x"], probs(d["y"])),
                cross_entropy_probs(d["x"], probs(d["y"]), "none", d["w"], 0.2),
                cross_entropy_probs(d["xt"].T, f32(probs(d["y"])), "sum", round_lp=f32),
                cross_entropy_probs(d["x4"], softmax(d["x4"], 1), "mean", d["w"], 0.4),
                cross_entropy_probs(d["x"][0], softmax(d["y"][0], 0))]),
    ("cross_entropy_dtypes", "F.cross_entropy(x.double(), t, w.double(), label_smoothing=0.1), "
     "F.cross_entropy(x.half(), t, reduction='none'), F.cross_entropy(x.bfloat16(), t, w.bfloat16()), "
     "F.cross_entropy(x.half(), t, label_smoothing=0.2), F.cross_entropy(x.half(), y.softmax(1).half())",
     ["f64", "f16", "bf16", "f16", "f16"],
     lambda d: [cross_entropy(d["x"], d["t"], "mean", d["w"], ls=0.1), cross_entropy(f16(d["x"]), d["t"], "none"),
                cross_entropy(bf16(d["x"]), d["t"], "mean", bf16(d["w"])),
                cross_entropy(f16(d["x"]), d["t"], ls=0.2),
                cross_entropy_probs(f16(d["x"]), f16(probs(d["y"])))]),
    ("poisson_nll_loss", "F.poisson_nll_loss(x, c), F.poisson_nll_loss(v, c, log_input=False, reduction='none'), "
     "F.poisson_nll_loss(x, c, full=True, reduction='sum'), F.poisson_nll_loss(v, c, False, True, None, 0.1), "
     "F.poisson_nll_loss(xt.t(), c[0]), F.poisson_nll_loss(x.double(), c.double(), full=True, reduction='none'), "
     "F.poisson_nll_loss(x.half(), c.half(), reduction='none')",
     ["f32", "f32", "f32", "f32", "f32", "f64", "f16"],
     lambda d: [poisson_nll(d["x"], d["c"]), poisson_nll(d["v"], d["c"], False, r="none"),
                poisson_nll(d["x"], d["c"], full=True, r="sum"), poisson_nll(d["v"], d["c"], False, True, 0.1),
                poisson_nll(d["xt"].T, d["c"][0]), poisson_nll(d["x"], d["c"], full=True, r="none"),
                poisson_nll(f16(d["x"]), d["c"], r="none")]),
    ("gaussian_nll_loss", "F.gaussian_nll_loss(x, y, v), F.gaussian_nll_loss(x, y, v[:, 0], reduction='none'), "
     "F.gaussian_nll_loss(xt.t(), y, v[:, 1:2], full=True, reduction='sum'), "
     "F.gaussian_nll_loss(x, y[0], v - 1, eps=0.05), F.gaussian_nll_loss(x.double(), y.double(), v.double(), True), "
     "F.gaussian_nll_loss(x.half(), y.half(), v.half(), reduction='none')",
     ["f32", "f32", "f32", "f32", "f64", "f16"],
     lambda d: [gaussian_nll(d["x"], d["y"], d["v"]), gaussian_nll(d["x"], d["y"], d["v"][:, :1], r="none"),
                gaussian_nll(d["xt"].T, d["y"], d["v"][:, 1:2], True, r="sum"),
                gaussian_nll(d["x"], d["y"][0], d["v"] - 1, eps=0.05), gaussian_nll(d["x"], d["y"], d["v"], True),
                gaussian_nll(f16(d["x"]), f16(d["y"]), f16(d["v"]), r="none")]),
]


def shape_of(w):
    return ", ".join(str(n) for n in np.shape(w))


def check_case(tdslc, t, name, exprs, kinds, model, inputs=INPUTS, params=PARAMS):
    d = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in inputs.items()}
    want = [np.asarray(w, np.float64) for w in model(d)]
    rets = ", ".join(f"{k.split('@')[0]}[{shape_of(w)}]" for k, w in zip(kinds, want))
    src = f"fn f({params}) -> ({rets}) {{\n    return {exprs}\n}}\n"
    p, outs = run_outputs(tdslc, src, inputs)
    errs = []
    if p.returncode != 0:
        errs.append(f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:600]}")
    else:
        errs += count_errors(outs, want)
    for k, (got, w, kind) in enumerate(zip(outs, want, kinds)):
        if got.shape != w.shape:
            errs.append(f"out{k}: shape {got.shape}, want {w.shape}")
            continue
        if kind in ("i64", "i32"):
            if got.dtype != {"i64": np.int64, "i32": np.int32}[kind] or not np.array_equal(got, w):
                errs.append(f"out{k}: {got.dtype} {got.ravel()[:4]}, want {w.ravel()[:4]}")
            continue
        kind, tol = kind.split("@")[0], TOL[kind.split("@")[-1]]
        want_dt = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.uint16}[kind]
        g = bf16_bits_to_f32(got).astype(np.float64) if kind == "bf16" else got.astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~((g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tol * (1 + np.abs(w))))
        if got.dtype != want_dt or bad.any():
            i = tuple(np.argwhere(bad)[0]) if bad.any() else ()
            errs.append(f"out{k} ({exprs.split('), ')[k] if k < len(exprs.split('), ')) else ''}): {got.dtype}, "
                        f"at {i}: got {g[i] if bad.any() else ''}, want {w[i] if bad.any() else ''}")
    t.report(name, errs, src)


def check_run_time(tdslc, t):
    # a class index out of range is found while running: PyTorch's words, at the call
    src = f"fn f({PARAMS}) -> f32[] {{\n    return F.cross_entropy(x, t.clamp(min=0) + 2)\n}}\n"
    p, _ = tdslc_run_clean(tdslc, src, args=["--fn", "f"], inputs=INPUTS)
    err = p.stderr.decode(errors="replace")
    t.check("a class index out of range exits 3", p.returncode == 3 and
            "error: Target 6 is out of bounds." in err and ":2:12:" in err, err[:600])
    # a target equal to ignore_index (out of range or not) is never read
    src = f"fn f({PARAMS}) -> (f32[], f32[4]) {{\n    return F.nll_loss(x, t * 0 + 7, ignore_index=7), " \
          f"F.nll_loss(x, where(t < 0, 12, t), ignore_index=12, reduction='none')\n}}\n"
    p, outs = run_outputs(tdslc, src, INPUTS)
    d = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in INPUTS.items()}
    ok = p.returncode == 0 and len(outs) == 2 and np.isnan(outs[0]) and np.allclose(
        outs[1], nll(d["x"], np.where(d["t"] < 0, 12, d["t"]), "none", None, 12), rtol=1e-5, atol=1e-6)
    t.check("targets equal to ignore_index are not read", ok, p.stderr.decode(errors="replace")[:600])
    # PyTorch's warning for a target of another size; the result broadcasts
    src = f"fn f({PARAMS}) -> f32[] {{\n    return F.mse_loss(x, w)\n}}\n"
    p, outs = run_outputs(tdslc, src, INPUTS)
    err = p.stderr.decode(errors="replace")
    ok = p.returncode == 0 and "warning: Using a target size (torch.Size([5])) that is different to the input " \
        "size (torch.Size([4, 5]))" in err and np.allclose(outs[0], mse(d["x"], d["w"]), rtol=1e-5)
    t.check("mse_loss warns about a target of another size and broadcasts", ok, err[:600])


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, exprs, kinds, model in CASES[::test_subset()]:  # the sanitizer pass: a subset
        check_case(tdslc, t, name, exprs, kinds, model)
    check_run_time(tdslc, t)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
