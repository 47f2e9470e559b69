#!/usr/bin/python3
"""tests/run/test_scatter.py TDSLC: writes at run-time positions (docs/language.md, "Index
writes") against NumPy: x[idx] = v, x[i, :, pos] = k with a 0-d position, x[idx] += v
(no accumulation over repeats, as NumPy's and PyTorch's), x[mask] = v, index_put
(accumulate), index_copy, index_add, index_fill, scatter, scatter_add, scatter_reduce
(sum, prod, mean, amax, amin, include_self), each as x.NAME_ (x written), x.NAME and
torch.NAME (a copy); repeated and negative indices; every dtype; non-contiguous and
expanded sources; int-list indices (x[[0, 2]], v[:, [-1]]); the out-of-place view writes
slice_scatter, select_scatter, diagonal_scatter and masked_scatter (and masked_scatter_),
with Python's slice bounds (NumPy's assignment through the same slice is the oracle: the
Debian build of PyTorch 1.13 ignores `end` when step is 1); in-place methods
(x.clamp_(min=0) ...; written y = y.NAME_(...) until statements may be bare
expressions); a KV-cache decoding step whose untouched rows stay bitwise the
same; out-of-range indices exit 3 at the op's location.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (ALL_DTYPES, Tally, VALUE_NP, compare_kinds, require_backend, rnd, run_outputs,  # noqa: E402
                    tdslc_run_clean, test_subset, to_npy)

TDSLC = os.path.abspath(sys.argv[1])
BACKEND = require_backend(TDSLC)
T = Tally()
CASES_SEEN = [0]  # case() calls so far: the sanitizer pass runs every test_subset()th
RNG = np.random.default_rng(15)


def ty(dt, shape):
    return f"{dt}[{', '.join(str(s) for s in shape)}]"


def case(name, params, body, exprs, kinds, want, inputs):
    """fn f(PARAMS) -> (kinds of want) { BODY; return EXPRS } on inputs {name: (dtype, values)}."""
    CASES_SEEN[0] += 1
    if (CASES_SEEN[0] - 1) % test_subset():  # the sanitizer pass: a subset
        return
    rets = ", ".join(ty(k, np.shape(w)) for k, w in zip(kinds, want))
    lines = "".join(f"    {b}\n" for b in body)
    src = f"fn f({params}) -> ({rets}) {{\n{lines}    return {exprs}\n}}\n"
    p, outs = run_outputs(TDSLC, src, {k: to_npy(v, dt) for k, (dt, v) in inputs.items()})
    T.report(name, compare_kinds(p, outs, want, kinds), src)


def vals(dt, shape, lo=-4, hi=4):
    if dt == "bool":
        return RNG.random(shape) < 0.5
    if dt in ("u8",):
        return RNG.integers(0, 9, size=shape).astype(np.uint8)
    if dt in ("i8", "i16", "i32", "i64"):
        return RNG.integers(lo, hi + 1, size=shape).astype(VALUE_NP[dt])
    return rnd(RNG.integers(lo * 4, hi * 4 + 1, size=shape) / 4.0, dt)  # exact in every float dtype


def f64(a):
    return np.asarray(a).astype(np.float64)


# ---------------------------------------------------------------------------
# reference semantics (NumPy)
# ---------------------------------------------------------------------------
def scatter_ref(x, dim, index, src, reduce=None, include_self=True):
    """PyTorch's scatter / scatter_reduce over f64 values, serially in index order."""
    out = f64(x).copy()
    src = np.broadcast_to(f64(src), index.shape) if np.ndim(src) == 0 else f64(src)
    acc = {}
    for pos in np.ndindex(*index.shape):
        t = list(pos)
        t[dim] = index[pos]
        t = tuple(t)
        acc.setdefault(t, []).append(src[pos])
    for t, terms in acc.items():
        if reduce is None:
            out[t] = terms[-1]
            continue
        base = [out[t]] if include_self else []
        allt = base + terms
        if reduce in ("sum", "add"):
            out[t] = sum(allt)
        elif reduce in ("prod", "multiply"):
            out[t] = np.prod(allt)
        elif reduce == "amax":
            out[t] = np.nan if np.isnan(allt).any() else max(allt)
        elif reduce == "amin":
            out[t] = np.nan if np.isnan(allt).any() else min(allt)
        elif reduce == "mean":
            out[t] = sum(allt) / len(allt)
    return out


def main():
    x34 = vals("f32", (3, 4))
    # --- x[idx] = v, x[i, :, pos] = k, x[idx] += v ---
    i = np.array([2, -3, 0], dtype=np.int64)
    w = x34.copy()
    w[i] = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    w2 = x34.copy()
    w2[[0, 0, 2]] += 1.5
    case("setitem_index", "x: f32[3, 4], i: i64[3], j: i64[3]",
         ["y = x.clone()", "y[i] = torch.arange(4).float() + 1", "z = x.clone()", "z[j] += 1.5"],
         "y, z", ["f32", "f32"], [w, w2],
         {"x": ("f32", x34), "i": ("i64", i), "j": ("i64", np.array([0, 0, 2], np.int64))})
    x = vals("f32", (2, 3, 5))
    k = vals("f32", (2, 3))
    w = x.copy()
    w[1, :, 3] = k[1]
    w3 = x.copy()
    w3[:, 1, [4, 0]] = 7
    case("setitem_position", "x: f32[2, 3, 5], k: f32[2, 3], i: i64[], p: i64[]",
         ["y = x.clone()", "y[i, :, p] = k[1]", "z = x.clone()", "z[:, 1, [4, 0]] = 7"], "y, z", ["f32", "f32"],
         [w, w3], {"x": ("f32", x), "k": ("f32", k), "i": ("i64", np.array(1)), "p": ("i64", np.array(-2))})
    # two index tensors apart: the broadcast dims come first; a broadcast value
    x = vals("f32", (3, 4, 5))
    a, b = np.array([[0], [2]]), np.array([1, 4])
    w = x.copy()
    w[a, :, b] = np.arange(4, dtype=np.float32)
    case("setitem_apart", "x: f32[3, 4, 5], a: i64[2, 1], b: i64[2]",
         ["y = x.clone()", "y[a, :, b] = torch.arange(4).float()"], "y", ["f32"], [w],
         {"x": ("f32", x), "a": ("i64", a), "b": ("i64", b)})
    # every dtype: setitem with a value cast to x's dtype
    for dt in ALL_DTYPES:
        x = vals(dt, (4, 3))
        v = vals("f32", (2, 3))
        w = x.copy()
        w[[3, 1]] = rnd(v, dt)
        case(f"setitem_{dt}", f"x: {dt}[4, 3], v: f32[2, 3], i: i64[2]", ["y = x.clone()", "y[i] = v"], "y",
             [dt], [f64(w) if dt not in ("bool",) else w], {"x": (dt, x), "v": ("f32", v), "i": ("i64", np.array([3, 1]))})

    # --- x[mask] = v, x[mask] op= v ---
    x = vals("f32", (3, 4))
    m = np.array([True, False, True])
    mm = RNG.random((3, 4)) < 0.5
    r = np.array([5.0, 6.0, 7.0, 8.0], np.float32)
    w1, w2, w3 = x.copy(), x.copy(), x.copy()
    w1[m] = r
    w2[mm] = -1
    w3[mm] *= 2
    case("mask_store", "x: f32[3, 4], m: bool[3], mm: bool[3, 4], r: f32[4]",
         ["a = x.clone()", "a[m] = r", "b = x.clone()", "b[mm] = -1", "c = x.clone()", "c[mm] *= 2"], "a, b, c",
         ["f32"] * 3, [w1, w2, w3], {"x": ("f32", x), "m": ("bool", m), "mm": ("bool", mm), "r": ("f32", r)})

    # --- index_put ---
    x = vals("f32", (4, 3))
    i = np.array([1, 1, 3, 1], np.int64)
    v = vals("f32", (4, 3))
    wa = f64(x).copy()
    np.add.at(wa, i, f64(v))
    wp = x.copy()
    wp[i[2:]] = v[2:]
    case("index_put", "x: f32[4, 3], i: i64[4], j: i64[2], v: f32[4, 3]",
         ["y = x.clone()", "y = y.index_put_((i,), v, accumulate=True)"],
         "y, torch.index_put(x, (j,), v[2:]), x.index_put([i], v, True)",
         ["f32"] * 3, [wa, wp, wa], {"x": ("f32", x), "i": ("i64", i), "j": ("i64", i[2:]), "v": ("f32", v)})

    # --- index_copy, index_add, index_fill: every spelling, repeats, negative fill ---
    for dt in ALL_DTYPES:
        x = vals(dt, (3, 5))
        s = vals(dt, (3, 4))
        i = np.array([4, 0, 4, 2], np.int64)
        wc = x.copy()
        wc[:, i] = s
        wadd = f64(x).copy()
        for c in range(4):
            wadd[:, i[c]] += f64(s[:, c])
        wadd = rnd(wadd, dt) if dt != "bool" else wadd != 0
        wf = x.copy()
        wf[:, [4, 3]] = rnd(np.array(1.0), dt)
        exprs = "y, x.index_copy(1, i, s), torch.index_add(x, 1, i, s), z, x.index_fill(1, j, 1)"
        body = ["y = x.clone()", "y = y.index_copy_(1, i, s)", "z = x.clone()", "z = z.index_add_(1, i, s)"]
        case(f"index_ops_{dt}", f"x: {dt}[3, 5], s: {dt}[3, 4], i: i64[4], j: i64[2]", body, exprs, [dt] * 5,
             [wc, wc, wadd, wadd, wf], {"x": (dt, x), "s": (dt, s), "i": ("i64", i),
                                        "j": ("i64", np.array([-1, 3], np.int64))})
    # index_add's alpha, a non-contiguous (transposed) and an expanded source
    x = vals("f32", (4, 3))
    s = vals("f32", (3, 2))
    i = np.array([3, 3], np.int64)
    w = f64(x).copy()
    np.add.at(w, i, 2.5 * f64(s.T))
    w2 = f64(x).copy()
    np.add.at(w2, i, np.broadcast_to(f64(s[:, 0]), (2, 3)))
    case("index_add_alpha_strided", "x: f32[4, 3], s: f32[3, 2], i: i64[2]", [],
         "x.index_add(0, i, s.t(), alpha=2.5), x.index_add(0, i, s[:, 0].expand(2, 3))", ["f32", "f32"], [w, w2],
         {"x": ("f32", x), "s": ("f32", s), "i": ("i64", i)})

    # large enough for threads and vector loops: every repeat still adds up
    x = vals("f32", (64, 512))
    s = vals("f32", (300, 512))
    i = RNG.integers(-8, 8, size=300).astype(np.int64)
    ix = RNG.integers(0, 64, size=(300, 512)).astype(np.int64)
    w1 = f64(x).copy()
    np.add.at(w1, i, f64(s))
    case("index_put_accumulate_large", "x: f32[64, 512], s: f32[300, 512], i: i64[300], j: i64[300, 512]",
         ["y = x.clone()", "y = y.index_put_((i,), s, accumulate=True)"], "y, x.scatter_add(0, j, s)",
         ["f32", "f32"], [w1, scatter_ref(x, 0, ix, s, "sum")],
         {"x": ("f32", x), "s": ("f32", s), "i": ("i64", i), "j": ("i64", ix)})

    # --- scatter, scatter_add, scatter_reduce ---
    for dt in ALL_DTYPES:
        x = vals(dt, (3, 4))
        s = vals(dt, (2, 4))
        ix = np.array([[0, 2, 2, 1], [0, 0, 2, 1]], np.int64)  # repeats down dim 0
        ws = scatter_ref(x, 0, ix, s)
        ws = ws != 0 if dt == "bool" else rnd(ws, dt)
        wv = scatter_ref(x, 1, ix[:, :2], 1)
        wv = wv != 0 if dt == "bool" else rnd(wv, dt)
        exprs = "y, x.scatter(0, i, s), torch.scatter(x, 1, i[:, :2], 1)"
        kinds, want = [dt] * 3, [ws, ws, wv]
        if dt != "bool":
            wa = rnd(scatter_ref(x, 0, ix, s, "sum"), dt)
            exprs += ", x.scatter_add(0, i, s), z"
            kinds += [dt] * 2
            want += [wa, wa]
        case(f"scatter_{dt}", f"x: {dt}[3, 4], s: {dt}[2, 4], i: i64[2, 4]",
             ["y = x.clone()", "y = y.scatter_(0, i, s)", "z = x.clone()", "z = z.scatter_add_(0, i, s)"], exprs, kinds, want,
             {"x": (dt, x), "s": (dt, s), "i": ("i64", ix)})
    for dt in ("f32", "f64", "i32", "i64", "f16"):
        x = vals(dt, (3, 4))
        s = vals(dt, (3, 4))
        ix = RNG.integers(0, 4, size=(3, 4)).astype(np.int64)
        exprs, want = [], []
        for red in ("sum", "prod", "mean", "amax", "amin"):
            for inc in (True, False):
                exprs.append(f"x.scatter_reduce(1, i, s, \"{red}\", include_self={inc})")
                w = scatter_ref(x, 1, ix, s, red, inc)
                if red == "mean" and dt.startswith("i"):  # integer means divide by floor
                    w = scatter_ref(x, 1, ix, s, "sum", inc)
                    cnt = scatter_ref(np.full(x.shape, 1 if inc else 0), 1, ix, np.ones(ix.shape), "sum")
                    w = np.floor_divide(w, np.maximum(cnt, 1))
                want.append(rnd(w, dt))
        case(f"scatter_reduce_{dt}", f"x: {dt}[3, 4], s: {dt}[3, 4], i: i64[3, 4]",
             ["y = x.clone()", "y = y.scatter_reduce_(1, i, s, \"amax\")"], ", ".join(exprs) + ", y",
             [dt] * 11, want + [rnd(scatter_ref(x, 1, ix, s, "amax"), dt)],
             {"x": (dt, x), "s": (dt, s), "i": ("i64", ix)})
    # scatter's reduce= form
    x = vals("f32", (2, 3))
    ix = np.array([[1, 1, 0]], np.int64)
    s = vals("f32", (1, 3))
    case("scatter_reduce_kw", "x: f32[2, 3], s: f32[1, 3], i: i64[1, 3]", [],
         "x.scatter(0, i, s, reduce=\"add\"), x.scatter(0, i, 2.0, reduce=\"multiply\")", ["f32", "f32"],
         [scatter_ref(x, 0, ix, s, "add"), scatter_ref(x, 0, ix, 2.0, "multiply")],
         {"x": ("f32", x), "s": ("f32", s), "i": ("i64", ix)})

    # --- int-list indices ---
    x = vals("f32", (4, 5))
    case("list_index", "x: f32[4, 5]", [], "x[[0, 2]], x[:, [-1]], x[[3, 1, 1, 0]], x[[1], [4]]", ["f32"] * 4,
         [x[[0, 2]], x[:, [-1]], x[[3, 1, 1, 0]], x[[1], [4]]], {"x": ("f32", x)})

    # --- in-place methods (as expressions: their value is x) ---
    x = vals("f32", (3, 4))
    v = vals("f32", (4,))
    mm = RNG.random((3, 4)) < 0.5
    xi = vals("i32", (3, 4))
    case("inplace_methods", "x: f32[3, 4], v: f32[4], m: bool[3, 4], k: i32[3, 4]",
         ["a = x.clone()", "b = a.clamp_(min=0)", "c = x.clone()", "c = c.add_(v * 2)", "d = x.clone()",
          "e = d.mul_(2).relu_()", "f = x.clone()", "f = f.masked_fill_(m, 9)", "g = x.clone()", "g = g.fill_(3)",
          "h = x.clone()", "h = h.zero_()", "j = x.clone()", "j = j.copy_(v)", "n = k.clone()", "n = n.add_(1)"],
         "a, b, c, e, d, f, g, h, j, n", ["f32"] * 9 + ["i32"],
         [np.maximum(x, 0), np.maximum(x, 0), x + 2 * v, np.maximum(2 * x, 0), np.maximum(2 * x, 0),
          np.where(mm, 9, x), np.full_like(x, 3), np.zeros_like(x), np.broadcast_to(v, (3, 4)), xi + 1],
         {"x": ("f32", x), "v": ("f32", v), "m": ("bool", mm), "k": ("i32", xi)})

    view_scatters()
    kv_cache()
    # in-place methods as statements, as forward passes write them
    x = vals("f32", (4, 6))
    ix = np.array([[0, 2, 2], [1, 1, 3]], np.int64)
    y = np.clip(f64(x), 0, None)
    y[:, 1] = 7.0
    np.add.at(y, (ix, np.arange(3)[None, :].repeat(2, 0)), 1.0)
    m = np.triu(np.full((5, 5), -np.inf), 1)
    case("statement_forms", "x: f32[4, 6], ix: i64[2, 3]",
         ["y = x.clone()", "y.clamp_(min=0)", "y[:, 1].fill_(7.0)",
          "y.scatter_add_(0, ix, torch.ones(2, 3))", "m = torch.empty(5, 5)",
          "m.fill_(float('-inf'))", "m.triu_(1)"],
         "y, m", ["f32", "f32"], [y, m], {"x": ("f32", x), "ix": ("i64", ix)})
    out_of_range()
    return T.summary()


def view_scatters():
    for dt in ("f32", "i64", "bf16", "bool"):
        x = vals(dt, (3, 4))
        m = RNG.random((3, 4)) < 0.5
        s = vals(dt, (12,))
        r, c, d = vals("f32", (4,)), vals("f32", (3, 2)), vals("f32", (2,))
        w = [x.copy() for _ in range(6)]
        w[0][m] = s[:m.sum()]
        w[1][-1] = rnd(r, dt)
        w[2][:, 1::2] = rnd(c, dt)
        w[3][[0, 1], [2, 3]] = rnd(d, dt)
        w[4][1:] = x[:2]
        mb = np.broadcast_to(m[1], (3, 4))
        w[5][mb] = s[:mb.sum()]
        case(f"view_scatters_{dt}", f"x: {dt}[3, 4], m: bool[3, 4], s: {dt}[12], r: f32[4], c: f32[3, 2], d: f32[2]",
             ["a = torch.masked_scatter(x, m, s)", "b = x.select_scatter(r, 0, -1)",
              "e = torch.slice_scatter(x, c, 1, 1, None, 2)", "g = torch.diagonal_scatter(x, d, 2)",
              "h = torch.slice_scatter(x, x[:2], start=-2)", "y = x.clone()", "y.masked_scatter_(m[1], s.view(3, 4))"],
             "a, b, e, g, h, y", [dt] * 6, [f64(v) if dt != "bool" else v for v in w],
             {"x": (dt, x), "m": ("bool", m), "s": (dt, s), "r": ("f32", r), "c": ("f32", c), "d": ("f32", d)})


def kv_cache():
    """One decoding step: the new key and value written at a run-time position of mut
    caches, then attention over the positions up to it."""
    B, H, Tn, D, pos = 2, 3, 8, 4, 5
    kc, vc = vals("f32", (B, H, Tn, D)), vals("f32", (B, H, Tn, D))
    kn, vn, q = vals("f32", (B, H, D)), vals("f32", (B, H, D)), vals("f32", (B, H, D))
    src = f"""fn step(mut k_cache: f32[{B}, {H}, {Tn}, {D}], mut v_cache: f32[{B}, {H}, {Tn}, {D}], k_new: f32[{B}, {H}, {D}],
        v_new: f32[{B}, {H}, {D}], q: f32[{B}, {H}, {D}], pos: i64[]) -> (f32[{B}, {H}, {D}], f32[{B}, {H}, {Tn}, {D}], f32[{B}, {H}, {Tn}, {D}]) {{
    k_cache[:, :, pos] = k_new
    v_cache.index_copy_(2, pos.view(1), v_new.unsqueeze(2))  # a statement: the update is what it does
    s = (k_cache @ q.unsqueeze(-1)).squeeze(-1) / 2.0
    s = s.masked_fill(torch.arange({Tn}) > pos, float("-inf"))
    return (s.softmax(-1).unsqueeze(-1) * v_cache).sum(2), k_cache, v_cache
}}"""
    p, outs = run_outputs(TDSLC, src, {"k_cache": kc, "v_cache": vc, "k_new": kn, "v_new": vn, "q": q,
                                       "pos": np.array(pos, np.int64)}, fn="step")
    k2, v2 = kc.copy(), vc.copy()
    k2[:, :, pos], v2[:, :, pos] = kn, vn
    s = np.einsum("bhtd,bhd->bht", f64(k2), f64(q)) / 2.0
    s[:, :, pos + 1:] = -np.inf
    e = np.exp(s - s.max(-1, keepdims=True))
    att = np.einsum("bht,bhtd->bhd", e / e.sum(-1, keepdims=True), f64(v2))
    errs = compare_kinds(p, outs, [att, k2, v2], ["f32"] * 3)
    if not errs:  # the untouched rows: bitwise what they were
        keep = [t for t in range(Tn) if t != pos]
        for name, got, old in (("k_cache", outs[1], kc), ("v_cache", outs[2], vc)):
            if got[:, :, keep].tobytes() != old[:, :, keep].tobytes():
                errs.append(f"{name}: an untouched row changed")
            if not np.array_equal(got[:, :, pos], k2[:, :, pos] if name == "k_cache" else v2[:, :, pos]):
                errs.append(f"{name}: the new row is not the new key/value")
    T.report("kv_cache_decode_step", errs, src)


def out_of_range():
    cases = [
        ("setitem", "fn f(x: f32[3, 4], i: i64[2]) -> f32[3, 4] {\n    y = x.clone()\n    y[i] = 1.0\n    return y\n}",
         {"i": np.array([0, 3], np.int64)}, "index 3 is out of bounds for dimension 0 with size 3", "y[i] = 1.0"),
        ("setitem_negative", "fn f(x: f32[3, 4], i: i64[]) -> f32[3, 4] {\n    y = x.clone()\n    y[:, i] = 1.0\n"
         "    return y\n}", {"i": np.array(-5, np.int64)}, "index -5 is out of bounds for dimension 0 with size 4",
         "y[:, i] = 1.0"),
        ("scatter", "fn f(x: f32[3, 4], i: i64[1, 2]) -> f32[3, 4] {\n    return x.scatter(0, i, 2.0)\n}",
         {"i": np.array([[0, 5]], np.int64)}, "index 5 is out of bounds for dimension 0 with size 3",
         "x.scatter(0, i, 2.0)"),
        ("scatter_add_negative", "fn f(x: f32[3, 4], i: i64[1, 2], s: f32[1, 2]) -> f32[3, 4] {\n"
         "    return x.scatter_add(1, i, s)\n}", {"i": np.array([[0, -1]], np.int64), "s": np.ones((1, 2), np.float32)},
         "index -1 is out of bounds for dimension 1 with size 4", "x.scatter_add(1, i, s)"),
        ("index_add", "fn f(mut x: f32[3, 4], i: i64[2], s: f32[2, 4]) -> f32[3, 4] {\n    x = x.index_add_(0, i, s)\n"
         "    return x\n}", {"i": np.array([1, 3], np.int64), "s": np.ones((2, 4), np.float32)},
         "index out of range in self", "x = x.index_add_(0, i, s)"),
        ("index_copy", "fn f(x: f32[3, 4], i: i64[2], s: f32[3, 2]) -> f32[3, 4] {\n    return x.index_copy(1, i, s)\n}",
         {"i": np.array([7, 0], np.int64), "s": np.ones((3, 2), np.float32)},
         "index_copy_(): index 7 is out of bounds for dimension 1 with size 4", "x.index_copy(1, i, s)"),
        ("masked_scatter_short", "fn f(x: f32[3, 4], m: bool[3, 4], s: f32[5]) -> f32[3, 4] {\n"
         "    return x.masked_scatter(m, s)\n}", {"m": np.ones((3, 4), bool), "s": np.ones(5, np.float32)},
         "index out of range in self", "x.masked_scatter(m, s)"),
    ]
    for name, src, inputs, msg, at in cases:
        inputs = dict(inputs)
        inputs.setdefault("x", np.zeros((3, 4), np.float32))
        p, _ = tdslc_run_clean(TDSLC, src, name=name, inputs=inputs)
        err = p.stderr.decode(errors="replace")
        errs = []
        if p.returncode != 3:
            errs.append(f"exit {p.returncode}, want 3: {err.strip()[:400]}")
        lines = src.split("\n")
        line_no = next(n + 1 for n, ln in enumerate(lines) if at in ln)
        start = lines[line_no - 1].index(at) + 1
        m = re.search(r"^\S+?:(\d+):(\d+): error: (.*)$", err, re.M)
        if not m:
            errs.append(f"no located error: {err.strip()[:400]}")
        elif int(m.group(1)) != line_no or not start <= int(m.group(2)) < start + len(at) or m.group(3) != msg:
            errs.append(f"got {m.group(0)!r}, want line {line_no} col {start}.. {msg!r}")
        T.report(f"out_of_range_{name}", errs, src)


if __name__ == "__main__":
    sys.exit(main())
