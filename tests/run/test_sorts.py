#!/usr/bin/python3
"""tests/run/test_sorts.py TDSLC: sort, argsort, msort, topk, kthvalue and median
(with a dim: values and indices; without: one value) in every dtype PyTorch's CUDA
build takes for each, against NumPy on the same inputs: ties and ±0 (stable=True:
equal values keep their input order), NaN (the largest: last ascending, first
descending; median gives NaN at the row's first NaN), ±inf, descending, negative and
leading dims, transposed and stepped inputs, an elementwise producer computed in the
sort's read, empty dims and 0-d tensors. Values are compared bit for bit (NaN with
NaN). Where PyTorch leaves the index among equal values open (stable=False, topk,
kthvalue, median), the indices are checked to point at the values returned and to be
distinct.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, bf16_bits_to_f32, f32_to_bf16_bits, require_backend, rnd,  # noqa: E402
                    run_outputs, count_errors, test_subset)

DTYPES = ("bool", "i32", "i64", "f16", "bf16", "f32", "f64")
NP = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16, "bf16": np.float32,
      "f32": np.float32, "f64": np.float64}
FLOATS = (-2.0, -1.0, -0.5, 0.0, -0.0, 0.5, 1.0, 3.0, np.inf, -np.inf)


def values(rng, dt, shape, nan=True):
    """A value array of dt with many ties; floats with ±0, ±inf and (nan) some NaN."""
    if dt == "bool":
        return rng.random(shape) < 0.5
    if dt in ("i32", "i64"):
        return rng.integers(-3, 4, size=shape).astype(NP[dt])
    a = np.asarray(rng.choice(np.array(FLOATS), size=shape) + rng.integers(0, 2, size=shape) * rng.random(shape))
    if nan:
        a[rng.random(shape) < 0.12] = np.nan
    return rnd(a, dt)


def key(v, descending):
    """PyTorch's order of one value: NaN the largest; ±0 equal."""
    v = float(v)
    if v != v:
        return (0, 0.0) if descending else (1, 0.0)
    return (1, -v) if descending else (0, v)


def model_sort(a, axis, descending=False):
    """PyTorch's stable sort of a along axis: (values, indices)."""
    m = np.moveaxis(np.asarray(a), axis, -1)
    idx = np.zeros(m.shape, dtype=np.int64)
    for r in np.ndindex(*m.shape[:-1]):
        row = m[r]
        idx[r] = sorted(range(row.shape[0]), key=lambda j: (key(row[j], descending), j))
    vals = np.take_along_axis(m, idx, -1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def model_median(a, axis):
    """median(dim): the lower middle value, or NaN at the row's first NaN."""
    v, i = model_sort(a, axis)
    n = a.shape[axis]
    mv, mi = np.take(v, (n - 1) // 2, axis), np.take(i, (n - 1) // 2, axis)
    if a.dtype.kind == "f":
        nan = np.isnan(a).any(axis)
        mv = np.where(nan, np.nan, mv)
        mi = np.where(nan, np.isnan(a).argmax(axis), mi)
    return mv, mi


def same(got, want):
    """Bitwise equality of value arrays (NaN with NaN, -0.0 apart from 0.0)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if got.dtype.kind == "f" or want.dtype.kind == "f":
        g, w = got.astype(np.float64), want.astype(np.float64)
        return bool(np.all(((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))))
    return bool(np.array_equal(got, want))


def as_values(out, dt):
    return bf16_bits_to_f32(out) if dt == "bf16" else out


def to_npy(a, dt):
    a = np.array(a, order="C")
    return f32_to_bf16_bits(a) if dt == "bf16" else a.astype(NP[dt])


class Program:
    """One function's outputs, each with its check over the value arrays."""

    def __init__(self, dt):
        self.dt = dt
        self.lines = []
        self.outs = []  # (expr, dtype, shape, check(got) -> error or None)

    def out(self, expr, dtype, shape, check):
        self.outs.append((expr, dtype, tuple(shape), check))

    def exact(self, expr, dtype, want):
        want = np.asarray(want)
        self.out(expr, dtype, want.shape,
                 lambda g: None if same(g, want) else f"got {np.asarray(g).ravel()[:8]}, want {want.ravel()[:8]}")

    def points(self, expr, a, axis, want_vals, keepdim=False):
        """indices that pick want_vals out of a along axis, distinct in each row"""
        want_vals = np.asarray(want_vals)

        def check(g):
            g = np.asarray(g)
            if g.shape != want_vals.shape:
                return f"shape {g.shape}, want {want_vals.shape}"
            gi = g if keepdim or g.ndim == a.ndim else np.expand_dims(g, axis)
            if a.ndim == 0:
                return None if np.all(g == 0) else f"got {g}"
            if gi.size and (gi.min() < 0 or gi.max() >= a.shape[axis]):
                return f"index out of range: {g.ravel()[:8]}"
            picked = np.take_along_axis(a, gi, axis)
            if not same(picked if keepdim or g.ndim == a.ndim else np.squeeze(picked, axis), want_vals):
                return f"indices {g.ravel()[:8]} pick {picked.ravel()[:8]}, want {want_vals.ravel()[:8]}"
            s = np.sort(np.moveaxis(gi, axis, -1), -1)
            if s.shape[-1] > 1 and np.any(s[..., 1:] == s[..., :-1]):
                return f"repeated indices: {g.ravel()[:8]}"
            return None
        self.out(expr, "i64", want_vals.shape, check)


def type_str(dt, shape):
    return f"{dt}[{', '.join(str(d) for d in shape)}]"


def build(dt, rng):
    """(source, inputs, Program) of one dtype's function over x [5, 7], y (a transposed
    [7, 5]), s (stepped: [10, 7][1::2]), z (0-d) and e ([3, 0])."""
    x = values(rng, dt, (5, 7))
    y = values(rng, dt, (7, 5))
    s = values(rng, dt, (10, 7))
    z = values(rng, dt, ())
    e = values(rng, dt, (3, 0))
    p = Program(dt)
    yv, sv = y.T, s[1::2]
    xf = x.astype(np.float64)
    vals, idx = model_sort(x, -1)
    p.lines.append("a, ia = x.sort(stable=True)")
    p.exact("a", dt, vals)
    p.exact("ia", "i64", idx)
    vals, idx = model_sort(x, 0, True)
    p.lines.append("b = torch.sort(x, 0, descending=True, stable=True)")
    p.exact("b.values", dt, vals)
    p.exact("b.indices", "i64", idx)
    p.exact("x.argsort(dim=-2, stable=True)", "i64", model_sort(x, 0)[1])
    p.exact("torch.argsort(y.t(), 1, True, stable=True)", "i64", model_sort(yv, 1, True)[1])
    p.exact("torch.msort(s[1::2])", dt, model_sort(sv, 0)[0])
    p.exact("y.t().sort(-1, True)[0]", dt, model_sort(yv, -1, True)[0])
    p.points("y.t().sort(-1, True)[1]", yv, -1, model_sort(yv, -1, True)[0])
    p.exact("x.sort(dim=1, descending=False).values", dt, model_sort(x, 1)[0])
    p.points("x.sort(dim=1).indices", x, 1, model_sort(x, 1)[0])
    p.exact("z.sort()[0]", dt, z)
    p.exact("z.argsort()", "i64", np.zeros((), np.int64))
    p.exact("e.sort(-1)[0]", dt, e)
    p.exact("e.sort(0, stable=True)[1]", "i64", np.zeros((3, 0), np.int64))
    if dt != "bool":  # a producer computed in the sort's read
        w = rnd(xf * 2 + 1, dt) if dt in ("i32", "i64") else rnd(np.abs(xf) * 2, dt)
        p.exact(("(x * 2 + 1)" if dt in ("i32", "i64") else "(x.abs() * 2)") + ".sort(-1, stable=True)[0]",
                dt, model_sort(w, -1)[0])
    p.exact("x.median()", dt, median_all(x))
    p.exact("z.median()", dt, z)
    if dt != "bool":
        for expr, a, k, axis, largest in (("x.topk(3)", x, 3, -1, True), ("torch.topk(x, 2, 0, False)", x, 2, 0, False),
                                          ("s[1::2].topk(7, dim=1, largest=True, sorted=True)", sv, 7, 1, True),
                                          ("x.topk(0)", x, 0, -1, True)):
            v = np.take(model_sort(a, axis, largest)[0], range(k), axis)
            p.exact(f"{expr}[0]", dt, v)
            p.points(f"{expr}[1]", a, axis, v, keepdim=True)
        p.exact("z.topk(1).values", dt, z)
        p.exact("z.topk(1).indices", "i64", np.zeros((), np.int64))
        for expr, a, k, axis, keep in (("x.kthvalue(3)", x, 3, -1, False), ("torch.kthvalue(x, 5, 0, True)", x, 5, 0, True),
                                       ("y.t().kthvalue(1, dim=-2)", yv, 1, -2, False),
                                       ("x.kthvalue(7, keepdim=True)", x, 7, -1, True)):
            v = np.take(model_sort(a, axis)[0], [k - 1] if keep else k - 1, axis)
            p.exact(f"{expr}[0]", dt, v)
            p.points(f"{expr}[1]", a, axis, v, keepdim=keep)
        p.exact("z.kthvalue(1)[0]", dt, z)
        for expr, a, axis, keep in (("x.median(1)", x, 1, False), ("torch.median(x, 0, True)", x, 0, True),
                                    ("s[1::2].median(dim=-2)", sv, -2, False), ("y.t().median(-1)", yv, -1, False)):
            mv, mi = model_median(a, axis)
            if keep:
                mv, mi = np.expand_dims(mv, axis), np.expand_dims(mi, axis)
            p.exact(f"{expr}.values", dt, mv)
            nan = np.isnan(a.astype(np.float64)).any(axis, keepdims=keep) if dt not in ("i32", "i64") else None
            if nan is not None and nan.any():  # a NaN row: the first NaN's index, as PyTorch's CPU build
                p.exact(f"where({expr}.values.isnan(), {expr}.indices, -1)", "i64", np.where(nan, mi, -1))
            p.points(f"{expr}.indices", a, axis, mv, keepdim=keep)
        p.exact("z.median(0)[0]", dt, z)
        p.exact("z.median(-1, keepdim=True)[1]", "i64", np.zeros((), np.int64))
    params = f"x: {type_str(dt, (5, 7))}, y: {type_str(dt, (7, 5))}, s: {type_str(dt, (10, 7))}, " \
             f"z: {type_str(dt, ())}, e: {type_str(dt, (3, 0))}"
    rets = ", ".join(type_str(d, sh) for _, d, sh, _ in p.outs)
    body = "".join(f"    {ln}\n" for ln in p.lines)
    src = f"fn f({params}) -> ({rets}) {{\n{body}    return {', '.join(o[0] for o in p.outs)}\n}}\n"
    inputs = {"x": to_npy(x, dt), "y": to_npy(y, dt), "s": to_npy(s, dt), "z": to_npy(z, dt), "e": to_npy(e, dt)}
    return src, inputs, p


def median_all(a):
    f = np.asarray(a).reshape(-1)
    if f.dtype.kind == "f" and np.isnan(f).any():
        return np.array(np.nan, dtype=f.dtype)
    v, _ = model_sort(f, 0)
    return v[(f.size - 1) // 2]


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    rng = np.random.default_rng(14)
    for dt in DTYPES[::test_subset()]:  # the sanitizer pass: a subset
        src, inputs, p = build(dt, rng)
        proc, outs = run_outputs(tdslc, src, inputs)
        if proc.returncode != 0 or len(outs) != len(p.outs):
            t.report(f"{dt}: run", [f"exit {proc.returncode}: {proc.stderr.decode(errors='replace')[:800]}"], src)
            continue
        errs = []
        for (expr, odt, shape, check), got in zip(p.outs, outs):
            got = as_values(got, odt)
            err = f"shape {got.shape}, want {shape}" if got.shape != shape else check(got)
            if err:
                errs.append(f"{expr}: {err}")
        t.report(f"{dt}: {len(p.outs)} outputs", errs, src)
    # a NaN-free row of distinct values: argsort without stable, topk and kthvalue indices exactly
    x = np.random.default_rng(3).permutation(64 * 33).reshape(64, 33).astype(np.float32)
    src = ("fn f(x: f32[64, 33]) -> (i64[64, 33], i64[64, 5], i64[33], f32[64, 33]) {\n"
           "    return x.argsort(), x.topk(5)[1], x.kthvalue(17, 0)[1], -x.sort(-1, descending=True)[0]\n}\n")
    proc, outs = run_outputs(tdslc, src, {"x": x})
    want = [np.argsort(x, -1), np.argsort(-x, -1)[:, :5], np.argsort(x, 0)[16], np.sort(-x, -1)]
    errs = [f"exit {proc.returncode}: {proc.stderr.decode(errors='replace')[:400]}"] if proc.returncode else \
        count_errors(outs, want) + [f"out{k}" for k, (g, w) in enumerate(zip(outs, want)) if not same(g, w)]
    t.report("distinct values: indices", errs, src)
    # topk and kthvalue sort the first k only (blocks merged pairwise): rows of odd lengths, many k
    for n in (2, 9, 77, 130):
        p = Program("f32")
        x = values(rng, "f32", (3, n))
        for k in sorted({1, 2, 3, 5, 8, 13, 31, 64, n // 2, n - 1, n} & set(range(1, n + 1))):
            for largest in (True, False):
                v = model_sort(x, -1, largest)[0][:, :k]
                p.exact(f"x.topk({k}, largest={largest})[0]", "f32", v)
                p.points(f"x.topk({k}, largest={largest})[1]", x, -1, v, keepdim=True)
            v = model_sort(x, -1)[0][:, k - 1]
            p.exact(f"x.kthvalue({k})[0]", "f32", v)
            p.points(f"x.kthvalue({k})[1]", x, -1, v)
        rets = ", ".join(type_str(d, sh) for _, d, sh, _ in p.outs)
        src = f"fn f(x: f32[3, {n}]) -> ({rets}) {{\n    return {', '.join(o[0] for o in p.outs)}\n}}\n"
        proc, outs = run_outputs(tdslc, src, {"x": x})
        errs = [f"exit {proc.returncode}: {proc.stderr.decode(errors='replace')[:400]}"] if proc.returncode else \
            count_errors(outs, p.outs) + [f"{o[0]}: {o[3](g)}" for o, g in zip(p.outs, outs) if o[3](g)]
        t.report(f"topk and kthvalue of rows of {n} ({len(p.outs)} outputs)", errs, src)
    # values alone: the indices' node is dropped, one sort kernel
    x = np.random.default_rng(4).standard_normal((300, 1000)).astype(np.float32)
    src = "fn f(x: f32[300, 1000]) -> (f32[300, 1000], f32[300, 10]) {\n    return x.sort()[0], x.topk(10, largest=False)[0]\n}\n"
    proc, outs = run_outputs(tdslc, src, {"x": x})
    want = [np.sort(x, -1), np.sort(x, -1)[:, :10]]
    errs = [f"exit {proc.returncode}"] if proc.returncode else \
        count_errors(outs, want) + [f"out{k}" for k, (g, w) in enumerate(zip(outs, want)) if not same(g, w)]
    t.report("long rows (1000)", errs, src)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
