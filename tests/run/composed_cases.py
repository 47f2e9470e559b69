"""tests/run/composed_cases.py: the cases of the ops tdsl builds from the ops it has, by
family, each a program run and compared with NumPy on the same inputs, on the backend
named by TDSL_BACKEND; the family's test script (test_elementwise, test_linalg,
test_reductions, test_shape) runs its family's cases (run_families). Not a test itself.
  elementwise (frontend/sema_elementwise.c, sema_act.c): the aliases (absolute, clip,
    greater, multiply ...), clamp_min/clamp_max, logical_xor, deg2rad, xlogy, heaviside,
    logit, sinc, fmax/fmin, float_power, signbit, hardshrink/softshrink, prelu,
    addcmul/addcdiv, real/isreal/angle
  linalg (sema_linalg.c): addmv/addr, mv, vdot, tensordot, cross, kron, diag_embed,
    addbmm, cov, corrcoef, trace
  reductions (sema_reduce.c): count_nonzero, nansum/nanmean, aminmax
  shape (sema_shape.c, sema_index.c): ravel, diag, rot90, hsplit/vsplit/dsplit,
    split_with_sizes, take_along_dim
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, require_backend, run_case  # noqa: E402

X = np.random.default_rng(11).standard_normal((4, 6)).astype(np.float32)
X[0, 0], X[1, 1], X[2, 2] = 0.0, np.nan, -0.0
Y = np.random.default_rng(12).standard_normal((6, 5)).astype(np.float32)
I = np.random.default_rng(13).integers(-3, 4, size=(4, 6)).astype(np.int64)
IDX = np.random.default_rng(14).integers(0, 6, size=(4, 2)).astype(np.int64)


def xlogy(a, b):
    with np.errstate(all="ignore"):
        r = np.where(a == 0, 0.0, a * np.log(b))
    return np.where(np.isnan(b), np.nan, r)


def sinc(a):
    with np.errstate(all="ignore"):
        return np.where(a == 0, 1.0, np.sin(math.pi * a) / (math.pi * a))


# (family, name, body lines, returned expressions, their dtypes, the NumPy values over x [4, 6] (a
# 0, a nan, a -0.0), y [6, 5], i i64[4, 6], idx i64[4, 2] in [0, 6))
CASES = [
    ("elementwise", "aliases", [], "torch.absolute(x), x.negative(), torch.sgn(i), torch.arctan2(x, x.t().t() + 1), "
     "torch.greater(x, 0.5), x.greater_equal(y[0, 0]), torch.less(i, 1), i.less_equal(0), torch.not_equal(i, 2), "
     "torch.multiply(x, 2), x.subtract(1)",
     ["f32", "f32", "i64", "f32", "bool", "bool", "bool", "bool", "bool", "f32", "f32"],
     lambda x, y, i, idx: [np.abs(x), -x, np.sign(i), np.arctan2(x, x + 1), x > 0.5, x >= y[0, 0], i < 1, i <= 0,
                           i != 2, 2 * x, x - 1]),
    ("elementwise", "clamps", [], "torch.clip(x, -0.5, 0.5), x.clamp_min(0.1), torch.clamp_max(i, 1), torch.logical_xor(x > 0, i)",
     ["f32", "f32", "i64", "bool"],
     lambda x, y, i, idx: [np.clip(x, -0.5, 0.5), np.where(np.isnan(x), x, np.maximum(x, 0.1)), np.minimum(i, 1),
                           (x > 0) != (i != 0)]),
    ("elementwise", "elementwise", [], "torch.deg2rad(x), i.rad2deg(), torch.xlogy(x.abs(), y[0, 0] + x * 0 + 2), "
     "torch.xlogy(x, x), torch.heaviside(x, y[0, 0] * 0 + 0.5), "
     "torch.logit(x.sigmoid()), torch.logit(x, eps=0.25), torch.sinc(x), torch.fmax(x, x.flip(0)), "
     "torch.fmin(x, y[:4, 0:1]), torch.float_power(x, 2), torch.signbit(x), torch.signbit(i)",
     ["f32"] * 8 + ["f32", "f32", "f64", "bool", "bool"],
     lambda x, y, i, idx: [x * math.pi / 180, i * 180 / math.pi, xlogy(np.abs(x), y[0, 0] + x * 0 + 2), xlogy(x, x),
                           np.where(x == 0, 0.5, (x > 0) * 1.0), x,
                           np.log(np.clip(x, 0.25, 0.75) / (1 - np.clip(x, 0.25, 0.75))), sinc(x),
                           np.fmax(x, x[::-1]), np.fmin(x, y[:4, 0:1]), x.astype(np.float64) ** 2,
                           np.signbit(x), i < 0]),
    ("elementwise", "shrinks_prelu", [], "torch.hardshrink(x), F.hardshrink(x, 1.0), F.softshrink(x, lambd=0.3), "
     "F.prelu(x, torch.ones(1) * 0.25), torch.prelu(x.view(2, 2, 6).transpose(1, 2), y[:, 0])",
     ["f32"] * 5,
     lambda x, y, i, idx: [np.where(np.abs(x) > 0.5, x, 0), np.where(np.abs(x) > 1, x, 0),
                           np.where(x > 0.3, x - 0.3, np.where(x < -0.3, x + 0.3, 0)),
                           np.where(x >= 0, x, 0.25 * x),
                           np.where(x.reshape(2, 2, 6).transpose(0, 2, 1) >= 0, x.reshape(2, 2, 6).transpose(0, 2, 1),
                                    y[:, 0][None, :, None] * x.reshape(2, 2, 6).transpose(0, 2, 1))]),
    ("elementwise", "products", [], "torch.addcmul(x, x, x.flip(1), value=0.5), x.addcdiv(x, y[:4, :1] + 3), "
     "torch.addmv(y[:4, 0], x, y[:, 1], beta=2, alpha=0.5), torch.addr(x, y[:4, 0], y[:, 2]), torch.mv(x, y[:, 3]), "
     "torch.vdot(y[:, 0], y[:, 1])", ["f32"] * 6,
     lambda x, y, i, idx: [x + 0.5 * x * x[:, ::-1], x + x / (y[:4, :1] + 3), 2 * y[:4, 0] + 0.5 * (x @ y[:, 1]),
                           x + np.outer(y[:4, 0], y[:, 2]), x @ y[:, 3], y[:, 0] @ y[:, 1]]),
    ("linalg", "tensordot", [], "torch.tensordot(x, y, dims=1), torch.tensordot(x.view(4, 2, 3), y.view(2, 3, 5)), "
     "torch.tensordot(x.view(4, 2, 3).permute(2, 0, 1), y.view(2, 3, 5), dims=([2, 0], [0, 1])), "
     "torch.tensordot(y[:, 0], y[0], dims=0), torch.tensordot(x.view(2, 2, 6).transpose(0, 1), y, ([-1], [0])), "
     "torch.tensordot(y.t(), x.t()[:, :3], [[1], [0]]), torch.tensordot(x, x, 2)",
     ["f32"] * 7,
     lambda x, y, i, idx: [x @ y, x @ y, x @ y, np.multiply.outer(y[:, 0], y[0]),
                           x.reshape(2, 2, 6).transpose(1, 0, 2) @ y, y.T @ x.T[:, :3],
                           np.tensordot(x, x, 2)]),
    ("linalg", "linalg", ["v = x.view(2, 4, 3)", "w = y[:, :3].reshape(2, 3, 3)[:, :1, :]", "fw = i[0, :5].abs()"],
     "torch.cross(v, v.flip(1)), v.cross(w, dim=2), torch.cross(x.view(3, 8), x.view(3, 8).flip(1), dim=0), "
     "torch.kron(y[:2, :3], x[:3, :2]), torch.kron(i[:2], i[0, :3]), torch.kron(y[0], x[:2, :2]), "
     "torch.diag_embed(x[:2]), x[:2].diag_embed(1), torch.diag_embed(i[:2, :3], -1, 0, 2), "
     "torch.diag_embed(x[0] > 0), torch.addbmm(y[:4, :2], x.view(2, 4, 3), y[:6, :2].reshape(2, 3, 2)), "
     "x[:, :5].addbmm(x.view(3, 4, 2), y.view(3, 2, 5), beta=0.5, alpha=2), torch.cov(y), y.cov(correction=0), "
     "torch.cov(y[0]), torch.cov(i[:3].t()), torch.cov(y, fweights=fw), torch.cov(y, aweights=y[0].abs()), "
     "torch.cov(y, correction=2, fweights=fw, aweights=y[1].abs()), torch.corrcoef(y), torch.corrcoef(y[0])",
     ["f32", "f32", "f32", "f32", "i64", "f32", "f32", "f32", "i64", "bool", "f32", "f32", "f32", "f32", "f32", "f32",
      "f32", "f32", "f32", "f32", "f32"],
     lambda x, y, i, idx: [np.cross(x.reshape(2, 4, 3), x.reshape(2, 4, 3)[:, ::-1]),
                           np.cross(x.reshape(2, 4, 3), y[:, :3].reshape(2, 3, 3)[:, :1, :], axis=2),
                           np.cross(x.reshape(3, 8), x.reshape(3, 8)[:, ::-1], axis=0),
                           np.kron(y[:2, :3], x[:3, :2]), np.kron(i[:2], i[0, :3]), np.kron(y[0], x[:2, :2]),
                           np.stack([np.diag(r) for r in x[:2]]), np.stack([np.diag(r, 1) for r in x[:2]]),
                           np.stack([np.diag(r, -1) for r in i[:2, :3]]).transpose(1, 0, 2),
                           np.diag(x[0] > 0),
                           y[:4, :2] + sum(x.reshape(2, 4, 3)[b] @ y[:6, :2].reshape(2, 3, 2)[b] for b in range(2)),
                           0.5 * x[:, :5] + 2 * sum(x.reshape(3, 4, 2)[b] @ y.reshape(3, 2, 5)[b] for b in range(3)),
                           np.cov(y), np.cov(y, ddof=0), np.cov(y[0]), np.cov(i[:3].T.astype(np.float64)),
                           np.cov(y, fweights=np.abs(i[0, :5])), np.cov(y, aweights=np.abs(y[0])),
                           np.cov(y, ddof=2, fweights=np.abs(i[0, :5]), aweights=np.abs(y[1])),
                           np.corrcoef(y), np.corrcoef(y[0])]),
    ("reductions", "reductions", ["s = torch.aminmax(y, dim=1)", "lo, hi = y.aminmax()"],
     "torch.trace(y), i[:, :4].trace(), torch.count_nonzero(i), i.count_nonzero(dim=1), torch.nansum(x), "
     "x.nansum(1), torch.nanmean(x, 0, keepdim=True), s.min, s.max, lo, hi",
     ["f32", "i64", "i64", "i64", "f32", "f32", "f32", "f32", "f32", "f32", "f32"],
     lambda x, y, i, idx: [np.trace(y), np.trace(i[:, :4]), np.count_nonzero(i), np.count_nonzero(i, 1),
                           np.nansum(x), np.nansum(x, 1), np.nanmean(x, 0, keepdims=True), y.min(1), y.max(1),
                           y.min(), y.max()]),
    ("elementwise", "real_forms", [], "torch.real(x) * 1, torch.isreal(x), torch.angle(x), torch.angle(i), "
     "torch.ldexp(x, i), torch.dist(x, x.flip(0)), torch.dist(y, y * 2, 1), torch.diff(x, dim=0), "
     "torch.diff(y, n=2), torch.diff(x > 0), torch.inner(x, y.t()), torch.inner(y[0], y[1]), "
     "torch.take(x, idx), torch.diagflat(x[:2, :2], 1), x.narrow_copy(1, 2, 3), x.adjoint() * 1",
     ["f32", "bool", "f32", "f32", "f32", "f32", "f32", "f32", "f32", "bool", "f32", "f32", "f32", "f32", "f32",
      "f32"],
     lambda x, y, i, idx: [x, np.ones_like(x, bool), np.where(np.isnan(x), x, np.where(x < 0, math.pi, 0.0)),
                           np.where(i < 0, math.pi, 0.0), x * 2.0 ** i,
                           np.sqrt(np.nansum((x - x[::-1]) ** 2)) * (np.nan if np.isnan(x).any() else 1),
                           np.abs(y - 2 * y).sum(), np.diff(x, axis=0), np.diff(y, 2), np.diff(x > 0),
                           x @ y, y[0] @ y[1], x.reshape(-1)[idx], np.diagflat(x[:2, :2], 1), x[:, 2:5], x.T]),
    ("shape", "views", ["a, b = torch.hsplit(x, 2)", "c, d = x.vsplit([1])", "e, f = torch.split_with_sizes(x, [2, 4], 1)"],
     "torch.ravel(x.t()), torch.diag(x), torch.diag(x, 2), torch.diag(y[0]), torch.diag(y[:, 0], -2), "
     "torch.diag(i[0], 1), torch.rot90(x), torch.rot90(x, 2), torch.rot90(x, -1, [1, 0]), "
     "torch.rot90(x.view(2, 2, 6), 1, (1, 2)), a + 0, b * 1, c + 0, d * 1, torch.dsplit(x.view(2, 2, 6), 3)[1] * 1, "
     "e * 1, f * 1, torch.take_along_dim(x, idx, 1), torch.take_along_dim(x, idx[:1], dim=1), "
     "torch.take_along_dim(x, idx)",
     ["f32"] * 5 + ["i64"] + ["f32"] * 14,
     lambda x, y, i, idx: [x.T.reshape(-1), np.diag(x), np.diag(x, 2), np.diag(y[0]), np.diag(y[:, 0], -2),
                           np.diag(i[0], 1), np.rot90(x), np.rot90(x, 2), np.rot90(x, -1, (1, 0)),
                           np.rot90(x.reshape(2, 2, 6), 1, (1, 2)), x[:, :3], x[:, 3:], x[:1], x[1:],
                           x.reshape(2, 2, 6)[:, :, 2:4], x[:, :2], x[:, 2:],
                           np.take_along_axis(x, idx, 1), np.take_along_axis(x, np.broadcast_to(idx[:1], (4, 2)), 1),
                           x.reshape(-1)[idx.reshape(-1)]]),
]


def run_families(families):
    """Runs the cases of the given families with tdslc (argv[1]); the exit status."""
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    inputs = {"x": X, "y": Y, "i": I, "idx": IDX}
    for family, name, body, exprs, kinds, model in CASES:
        if family not in families:
            continue
        want = model(X.astype(np.float64), Y.astype(np.float64), I, IDX)
        errs, src = run_case(tdslc, "x: f32[4, 6], y: f32[6, 5], i: i64[4, 6], idx: i64[4, 2]", body, exprs, kinds,
                             want, inputs)
        t.report(name, errs, src)
    return t.summary()
