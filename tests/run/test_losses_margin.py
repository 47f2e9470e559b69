#!/usr/bin/python3
"""tests/run/test_losses_margin.py TDSLC: the margin and embedding losses of
torch.nn.functional (margin_ranking_loss, hinge_embedding_loss, cosine_embedding_loss,
multilabel_soft_margin_loss, multi_margin_loss, multilabel_margin_loss,
triplet_margin_loss, triplet_margin_with_distance_loss: frontend/sema_loss_margin.c), run
as written — reductions none/mean/sum, weights, broadcast and odd shapes, empty batches,
f32/f64/f16, transposed and strided operands — and compared
with the same functions written here in NumPy (float64, on the inputs rounded as the
program rounds them; "f64@f32": an f64 result with parts in f32 — the sigmoid of an f32
target, interpolate's f32 source coordinates — checked to f32's tolerance). Also: a class index out of range is a run-time error (exit 3).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, require_backend, tdslc_run_clean, test_subset  # noqa: E402
from test_losses import check_case, f16, f32, reduce  # noqa: E402

RNG = np.random.default_rng(15)
INPUTS = {
    "x": RNG.standard_normal((4, 5)).astype(np.float32),
    "y": RNG.standard_normal((4, 5)).astype(np.float32),
    "z": RNG.standard_normal((4, 5)).astype(np.float32),
    "xt": RNG.standard_normal((5, 4)).astype(np.float32),  # used as xt.t(): a transposed view
    "s": np.array([1, -1, -1, 1], np.float32),
    "t": np.array([0, 4, 2, 2], np.int64),
    "ml": np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 2, 2, 2, 2], [4, 4, -1, 0, 0]], np.int64),
    "w": RNG.uniform(0.5, 2.0, 5).astype(np.float32),
}
PARAMS = "x: f32[4, 5], y: f32[4, 5], z: f32[4, 5], xt: f32[5, 4], s: f32[4], t: i64[4], ml: i64[4, 5], w: f32[5]"


# ---------------------------------------------------------------------------
# NumPy's functions (float64)
# ---------------------------------------------------------------------------
def logsigmoid(a):
    return np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))


def margin_ranking(a, b, t, m=0.0, r="mean"):
    return reduce(np.maximum(0, -t * (a - b) + m), r)


def hinge(x, t, m=1.0, r="mean"):
    return reduce(np.where(t != 1, np.maximum(0, m - x), 0) + np.where(t != -1, x, 0), r)


def cosine_embedding(a, b, t, m=0.0, r="mean"):
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    return reduce(np.where(t == 1, 1 - cos, 0) + np.where(t == -1, np.maximum(0, cos - m), 0), r)


def multilabel_soft_margin(x, t, w=None, r="mean"):
    loss = -(t * logsigmoid(x) + (1 - t) * logsigmoid(-x))
    if w is not None:
        loss = loss * w
    return reduce(loss.sum(-1) / x.shape[-1], r)


def multi_margin(x, t, p=1, m=1.0, w=None, r="mean"):
    x2 = x.reshape(-1, x.shape[-1] if x.ndim else 1)
    t1 = np.reshape(t, -1)
    per = np.zeros(len(t1))
    for n, y in enumerate(t1):
        for j in range(x2.shape[1]):
            if j != y:
                h = max(0.0, m - x2[n, y] + x2[n, j]) ** p
                per[n] += h * (w[y] if w is not None else 1.0)
    per /= x2.shape[1]
    return reduce(per.reshape(np.shape(t)), r)


def multilabel_margin(x, tg, r="mean"):
    x2, t2 = x.reshape(-1, x.shape[-1]), tg.reshape(-1, x.shape[-1])
    per = np.zeros(len(x2))
    for n in range(len(x2)):
        ys = []
        for y in t2[n]:
            if y == -1:
                break
            ys.append(y)
        for y in ys:
            for i in range(x2.shape[1]):
                if i not in ys:
                    per[n] += max(0.0, 1 - x2[n, y] + x2[n, i])
    per /= x2.shape[1]
    return reduce(per if x.ndim == 2 else per[0], r)


def pdist(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def triplet(a, pos, neg, m=1.0, p=2.0, eps=1e-6, swap=False, r="mean"):
    dp, dn = pdist(a, pos, p, eps), pdist(a, neg, p, eps)
    if swap:
        dn = np.minimum(dn, pdist(pos, neg, p, eps))
    return reduce(np.maximum(0, m + dp - dn), r)


CASES = [
    ("margin_ranking_loss", "F.margin_ranking_loss(x[:, 0], y[:, 0], s), "
     "F.margin_ranking_loss(x, y, s.unsqueeze(1), margin=0.5, reduction='none'), "
     "F.margin_ranking_loss(xt.t(), y, s[0:1].unsqueeze(1), 0.2, None, None, 'sum'), "
     "F.margin_ranking_loss(x.double(), y.double(), s.double().unsqueeze(1), 0.1), "
     "F.margin_ranking_loss(x.half(), y.half(), s.half().unsqueeze(1), reduction='none'), "
     "F.margin_ranking_loss(x[0:0, 0], y[0:0, 0], s[0:0], reduction='sum')",
     ["f32", "f32", "f32", "f64", "f16", "f32"],
     lambda d: [margin_ranking(d["x"][:, 0], d["y"][:, 0], d["s"]),
                margin_ranking(d["x"], d["y"], d["s"][:, None], 0.5, "none"),
                margin_ranking(d["xt"].T, d["y"], d["s"][0], 0.2, "sum"),
                margin_ranking(d["x"], d["y"], d["s"][:, None], 0.1),
                margin_ranking(f16(d["x"]), f16(d["y"]), d["s"][:, None], 0, "none"), 0.0]),
    ("hinge_embedding_loss", "F.hinge_embedding_loss(x, y.sign()), "
     "F.hinge_embedding_loss(x, s.unsqueeze(1), margin=0.3, reduction='none'), "
     "F.hinge_embedding_loss(xt.t(), y.sign(), 2.0, None, None, 'sum'), "
     "F.hinge_embedding_loss(x.double(), y.sign()), F.hinge_embedding_loss(x.half(), y.sign().half(), "
     "reduction='none')",
     ["f32", "f32", "f32", "f64", "f16"],
     lambda d: [hinge(d["x"], np.sign(d["y"])), hinge(d["x"], d["s"][:, None], 0.3, "none"),
                hinge(d["xt"].T, np.sign(d["y"]), 2.0, "sum"), hinge(d["x"], np.sign(d["y"])),
                hinge(f16(d["x"]), np.sign(d["y"]), 1.0, "none")]),
    ("cosine_embedding_loss", "F.cosine_embedding_loss(x, y, s), "
     "F.cosine_embedding_loss(x, y, s, margin=0.1, reduction='none'), "
     "F.cosine_embedding_loss(xt.t(), y, -s, -0.2, None, None, 'sum'), "
     "F.cosine_embedding_loss(x[0], y[0], s[1]), F.cosine_embedding_loss(x.double(), y.double(), s.double()), "
     "F.cosine_embedding_loss(x[0:0], y[0:0], s[0:0], reduction='sum')",
     ["f32", "f32", "f32", "f32", "f64", "f32"],
     lambda d: [cosine_embedding(d["x"], d["y"], d["s"]), cosine_embedding(d["x"], d["y"], d["s"], 0.1, "none"),
                cosine_embedding(d["xt"].T, d["y"], -d["s"], -0.2, "sum"),
                cosine_embedding(d["x"][0], d["y"][0], d["s"][1]), cosine_embedding(d["x"], d["y"], d["s"]), 0.0]),
    ("multilabel_soft_margin_loss", "F.multilabel_soft_margin_loss(x, (y > 0).float()), "
     "F.multilabel_soft_margin_loss(x, y.sigmoid(), w, reduction='none'), "
     "F.multilabel_soft_margin_loss(xt.t(), (y > 0).float(), weight=w[0:1], reduction='sum'), "
     "F.multilabel_soft_margin_loss(x.double(), y.sigmoid().double(), w.double()), "
     "F.multilabel_soft_margin_loss(x.half(), (y > 0).half(), reduction='none')",
     ["f32", "f32", "f32", "f64@f32", "f16"],
     lambda d: [multilabel_soft_margin(d["x"], (d["y"] > 0) * 1.0),
                multilabel_soft_margin(d["x"], 1 / (1 + np.exp(-d["y"])), d["w"], "none"),
                multilabel_soft_margin(d["xt"].T, (d["y"] > 0) * 1.0, d["w"][0], "sum"),
                multilabel_soft_margin(d["x"], f32(1 / (1 + np.exp(-d["y"]))), d["w"]),
                multilabel_soft_margin(f16(d["x"]), (d["y"] > 0) * 1.0, None, "none")]),
    ("multi_margin_loss", "F.multi_margin_loss(x, t), F.multi_margin_loss(x, t, p=2, margin=0.7, reduction='none'), "
     "F.multi_margin_loss(x, t, 1, 1.5, w, None, None, 'sum'), F.multi_margin_loss(xt.t(), t, 2, weight=w), "
     "F.multi_margin_loss(x[1], t[1]), F.multi_margin_loss(x[1], t[1:2], reduction='none'), "
     "F.multi_margin_loss(x.double(), t, weight=w.double(), reduction='none'), "
     "F.multi_margin_loss(x.half(), t, 2, weight=w.half(), reduction='none'), "
     "F.multi_margin_loss(x[0:0], t[0:0], reduction='sum'), F.multi_margin_loss(x[0:0], t[0:0], reduction='none')",
     ["f32", "f32", "f32", "f32", "f32", "f32", "f64", "f16", "f32", "f32"],
     lambda d: [multi_margin(d["x"], d["t"]), multi_margin(d["x"], d["t"], 2, 0.7, None, "none"),
                multi_margin(d["x"], d["t"], 1, 1.5, d["w"], "sum"), multi_margin(d["xt"].T, d["t"], 2, 1.0, d["w"]),
                multi_margin(d["x"][1], d["t"][1]), multi_margin(d["x"][1], d["t"][1:2], r="none"),
                multi_margin(d["x"], d["t"], w=d["w"], r="none"),
                multi_margin(f16(d["x"]), d["t"], 2, w=f16(d["w"]), r="none"), 0.0, np.zeros(0)]),
    ("multilabel_margin_loss", "F.multilabel_margin_loss(x, ml), F.multilabel_margin_loss(x, ml, reduction='none'), "
     "F.multilabel_margin_loss(xt.t(), ml, None, None, 'sum'), F.multilabel_margin_loss(x[0], ml[0]), "
     "F.multilabel_margin_loss(x.double(), ml.t().t()), F.multilabel_margin_loss(x.half(), ml, reduction='none'), "
     "F.multilabel_margin_loss(x[0:0], ml[0:0], reduction='none')",
     ["f32", "f32", "f32", "f32", "f64", "f16", "f32"],
     lambda d: [multilabel_margin(d["x"], d["ml"]), multilabel_margin(d["x"], d["ml"], "none"),
                multilabel_margin(d["xt"].T, d["ml"], "sum"), multilabel_margin(d["x"][0], d["ml"][0]),
                multilabel_margin(d["x"], d["ml"]), multilabel_margin(f16(d["x"]), d["ml"], "none"), np.zeros(0)]),
    ("triplet_margin_loss", "F.triplet_margin_loss(x, y, z), "
     "F.triplet_margin_loss(x, y, z, margin=0.5, p=1, swap=True, reduction='none'), "
     "F.triplet_margin_loss(xt.t(), y, z[0:1], 2.0, 3, 1e-3, False, None, None, 'sum'), "
     "F.triplet_margin_loss(x.double(), y.double(), z.double(), swap=True), "
     "F.triplet_margin_with_distance_loss(x, y, z), "
     "F.triplet_margin_with_distance_loss(x, y, z, distance_function=None, margin=2.0, swap=True, reduction='none')",
     ["f32", "f32", "f32", "f64", "f32", "f32"],
     lambda d: [triplet(d["x"], d["y"], d["z"]), triplet(d["x"], d["y"], d["z"], 0.5, 1, swap=True, r="none"),
                triplet(d["xt"].T, d["y"], d["z"][0:1], 2.0, 3, 1e-3, r="sum"),
                triplet(d["x"], d["y"], d["z"], swap=True), triplet(d["x"], d["y"], d["z"]),
                triplet(d["x"], d["y"], d["z"], 2.0, swap=True, r="none")]),
]


def check_run_time(tdslc, t):
    # a class index out of range is found while running: gather's error
    for expr in ("F.multi_margin_loss(x, t + 1)", "F.multilabel_margin_loss(x, ml + 1)"):
        src = f"fn f({PARAMS}) -> f32[] {{\n    return {expr}\n}}\n"
        p, _ = tdslc_run_clean(tdslc, src, args=["--fn", "f"], inputs=INPUTS)
        err = p.stderr.decode(errors="replace")
        t.check(f"{expr}: a class index out of range exits 3", p.returncode == 3 and
                "error: index 5 is out of bounds" in err, err[:600])


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, exprs, kinds, model in CASES[::test_subset()]:  # the sanitizer pass: a subset
        check_case(tdslc, t, name, exprs, kinds, model, INPUTS, PARAMS)
    check_run_time(tdslc, t)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
