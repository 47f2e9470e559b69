#!/usr/bin/python3
"""tests/run/test_reductions.py TDSLC: the reductions built of others (frontend/sema_reduce.c): count_nonzero,
nansum/nanmean, aminmax — the "reductions" cases of composed_cases.py, each run and
compared with NumPy on the backend named by TDSL_BACKEND (exits 77 when tdslc lacks it);
and amax/amin, max()/min(), max(dim)/min(dim) and argmax over rows long enough for the CPU
schedule's vector accumulators (ir/sched.c: 16 f32 or 8 f64 lanes and a remainder), with
NaN (in the vector part and in the remainder), +-inf and +-0 rows: NaN anywhere gives NaN,
and the index of the first NaN, as NumPy's max/argmax.
"""
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

from composed_cases import run_families  # noqa: E402
from oracle import NP_DTYPES, Tally, emit_text, require_backend, run_case  # noqa: E402


def rows(dt, n):
    """[6, n] of dtype dt: random, a NaN mid-row and another later, a row of inf with a
    NaN, a row of -inf, a row of +-0, a NaN last (the remainder), a row of NaN."""
    x = np.random.default_rng(5).standard_normal((6, n)).astype(dt)
    x[0, 5], x[0, n - 9] = np.nan, -np.nan
    x[1, :] = np.inf
    x[1, 17] = np.nan
    x[2, :] = -np.inf
    x[3, :] = 0.0
    x[3, ::3] = -0.0
    x[4, n - 1] = np.nan
    x[5, :] = np.nan
    return x


def nan_rows():
    """The NaN-propagating reductions against NumPy (one program)."""
    t = Tally()
    x, y = rows(np.float32, 77), rows(np.float64, 45)
    exprs = ("x.amax(-1), x.amin(1), x.max(), y.min(), torch.max(y, 1).values, y.min(-1).values, "
             "x.max(-1).indices, y.argmin(1), x[3].amax().abs(), x[3].amin().abs()")
    want = [x.max(-1), x.min(1), x.max(), y.min(), y.max(1), y.min(-1), x.argmax(-1), y.argmin(1), 0.0, 0.0]
    kinds = ["f32", "f32", "f32", "f64", "f64", "f64", "i64", "i64", "f32", "f32"]
    errs, src = run_case(sys.argv[1], "x: f32[6, 77], y: f64[6, 45]", [], exprs, kinds,
                         [np.asarray(w, np.float64) if k[0] == "f" else w for w, k in zip(want, kinds)], {"x": x, "y": y})
    t.report("nan_rows", errs, src)
    return t.summary()

def tie_rows(rng, dt, shape):
    """Values of dtype dt from a few levels, so that most rows tie on their extreme; floats
    also get NaN (a few rows several, at random places: first lanes, last lanes, the
    remainder), +-inf and -0.0 among +0.0."""
    x = rng.integers(-3, 4, size=shape).astype(dt)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        x.flat[rng.integers(0, x.size, size=x.size // 9)] = info.max
        x.flat[rng.integers(0, x.size, size=x.size // 9)] = info.min
        return x
    flat = x.reshape(-1)
    for v, k in ((np.inf, 23), (-np.inf, 23), (-0.0, 5), (0.0, 5)):
        flat[rng.integers(0, flat.size, size=flat.size // k)] = v
    rows = x.reshape(-1, shape[-1])
    for r in range(0, rows.shape[0], 3):  # NaN in every third row, one or two, anywhere
        rows[r, rng.integers(0, shape[-1], size=1 + r % 2)] = np.nan
    return x


def argext_rows():
    """argmax/argmin (and max(dim)/min(dim)'s indices and values) against NumPy's argmax/argmin (the
    first extreme; NaN the extreme and its first wins; -0.0 == 0.0) over rows shorter than
    a vector, of a vector and a remainder, long, of every CPU lane dtype, over the last
    dim, a middle dim, dim 0, the whole tensor, and with keepdim (one program)."""
    t = Tally()
    rng = np.random.default_rng(27)
    shapes = {"a": ("f32", (9, 13)), "b": ("f32", (12, 77)), "c": ("f32", (6, 1000)), "d": ("f64", (9, 45)),
              "e": ("i32", (8, 70)), "g": ("i64", (7, 37)), "h": ("f32", (5, 40, 3)), "k": ("f64", (4, 16)),
              "m": ("f32", (3, 48)), "n": ("f32", (9, 40)), "q": ("f64", (7, 20)), "u": ("i32", (6, 35)),
              "v": ("f32", (3, 50, 40)), "w": ("f32", (3000, 40))}
    ins = {n: tie_rows(rng, NP_DTYPES[k], s) for n, (k, s) in shapes.items()}
    ins["m"][:] = -np.inf  # all -inf: index 0
    ins["m"][1, 40] = np.nan
    ins["m"][2, ::2] = np.inf
    a, b, c, d, e, g, h, k, m, n, q, u, v, w = (ins[n] for n in "abcdeghkmnquvw")
    cases = [("a.argmax(-1)", a.argmax(-1)), ("a.argmin(1)", a.argmin(1)), ("b.argmax(-1)", b.argmax(-1)),
             ("b.argmin(-1, keepdim=True)", b.argmin(-1)[:, None]), ("torch.max(b, 1).indices", b.argmax(1)),
             ("b.min(-1).indices", b.argmin(-1)), ("c.argmax(1)", c.argmax(1)), ("c.argmin(1)", c.argmin(1)),
             ("d.argmax(-1)", d.argmax(-1)), ("d.argmin(1, keepdim=True)", d.argmin(1)[:, None]),
             ("e.argmax(-1)", e.argmax(-1)), ("e.argmin(-1)", e.argmin(-1)), ("g.argmax(1)", g.argmax(1)),
             ("g.min(1).indices", g.argmin(1)), ("h.argmax(1)", h.argmax(1)), ("h.argmin(0)", h.argmin(0)),
             ("h.argmax(-1)", h.argmax(-1)), ("b.argmax(0)", b.argmax(0)), ("c.argmax()", c.argmax()),
             ("d.argmin()", d.argmin()), ("k.argmax(1)", k.argmax(1)), ("k.argmin(-1)", k.argmin(-1)),
             ("m.argmax(1)", m.argmax(1)), ("m.argmin(1)", m.argmin(1)),
             # over dim 0 and a middle dim: columns in lanes (ir/sched.c's split_colargext), split or not
             ("n.argmax(0)", n.argmax(0)), ("n.argmin(0, keepdim=True)", n.argmin(0)[None]),
             ("q.argmin(0)", q.argmin(0)), ("u.argmax(0)", u.argmax(0)), ("u.min(0).indices", u.argmin(0)),
             ("v.argmax(1)", v.argmax(1)), ("v.argmin(0)", v.argmin(0)), ("w.argmax(0)", w.argmax(0)),
             ("w.min(0).indices", w.argmin(0))]
    kinds = ["i64"] * len(cases)
    # max(dim)/min(dim)'s values with their indices (one pass: the first extreme's value)
    for x, w, kd in (("torch.max(b, 1).values", b.max(1), "f32"), ("c.min(-1).values", c.min(-1), "f32"),
                     ("d.max(1).values", d.max(1), "f64"), ("e.max(1).values", e.max(1), "i32"),
                     ("g.min(-1).values", g.min(-1), "i64"), ("m.max(1).values", m.max(1), "f32"),
                     ("w.max(0).values", w.max(0), "f32"), ("u.min(0).values", u.min(0), "i32")):
        cases.append((x, w))
        kinds.append(kd)
    params = ", ".join(f"{n}: {kd}[{', '.join(map(str, s))}]" for n, (kd, s) in shapes.items())
    want = [np.asarray(w, np.float64) if k[0] == "f" else np.asarray(w) for (_, w), k in zip(cases, kinds)]
    errs, src = run_case(sys.argv[1], params, [], ", ".join(x for x, _ in cases), kinds, want, ins)
    t.report("argext_rows", errs, src)
    return t.summary()


def strip_rows():
    """Row kernels reducing a dim that is not the innermost, with a result of the input's
    shape (ir/row.c's STRIP: the kept dims after it in strips of rows in lanes, the
    P % S last rows a strip of their own): ConvNeXt's channels-first layer norm (its mean
    read by the variance: one kernel), softmax and log_softmax over dim 1, a variance and
    mean of one input (two passes), a reduction over two middle dims, f64 rows, against
    NumPy (one program). The kept sizes leave a tail (99 = 64 + 35 f32 rows, 70 = 2 x 32 +
    6 f64 rows); a is offset by 10, so that a wrong mean shows in the variance."""
    t = Tally()
    rng = np.random.default_rng(31)
    a = (10 + rng.standard_normal((2, 24, 9, 11))).astype(np.float32)
    wa, ba = rng.standard_normal(24).astype(np.float32), rng.standard_normal(24).astype(np.float32)
    d = rng.standard_normal((3, 20, 70))
    c = rng.standard_normal((2, 5, 6, 40)).astype(np.float32)
    a64 = a.astype(np.float64)
    u = a64.mean(1, keepdims=True)
    s = ((a64 - u) ** 2).mean(1, keepdims=True)
    ln = wa[:, None, None] * ((a64 - u) / np.sqrt(s + 1e-6)) + ba[:, None, None]
    e = np.exp(d - d.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    ec = np.exp(c - c.max(1, keepdims=True))
    body = ["u = a.mean(1, keepdim=True)", "s = (a - u).pow(2).mean(1, keepdim=True)",
            "ln = wa[:, None, None] * ((a - u) / torch.sqrt(s + 1e-6)) + ba[:, None, None]"]
    cases = [("ln", ln, "f32"), ("d.softmax(1)", sm, "f64"),
             ("torch.log_softmax(c, 1)", np.log(ec / ec.sum(1, keepdims=True)), "f32"),
             ("(d - d.mean(1, keepdim=True)) / d.std(1, keepdim=True)",
              (d - d.mean(1, keepdims=True)) / d.std(1, ddof=1, keepdims=True), "f64"),
             ("c - c.mean((1, 2), keepdim=True)", c - c.mean((1, 2), keepdims=True), "f32"),
             ("a.permute(0, 3, 1, 2) - a.permute(0, 3, 1, 2).amax(1, keepdim=True)",
              a.transpose(0, 3, 1, 2) - a.transpose(0, 3, 1, 2).max(1, keepdims=True), "f32")]
    params = "a: f32[2, 24, 9, 11], wa: f32[24], ba: f32[24], d: f64[3, 20, 70], c: f32[2, 5, 6, 40]"
    errs, src = run_case(sys.argv[1], params, body, ", ".join(x for x, _, _ in cases), [k for _, _, k in cases],
                         [np.asarray(w, np.float64) for _, w, _ in cases], {"a": a, "wa": wa, "ba": ba, "d": d, "c": c})
    # the kernels of the layer norm, of softmax with the standardization (one: the same
    # rows) and of c's centring run in strips (their row-level values in per-thread
    # scratch named "kN.strip", which later kernels may share), log_softmax over 5
    # and the permuted amax as before
    lines = emit_text(sys.argv[1], src, "kernels").stdout.splitlines()
    sbufs = {ln.split()[1] for ln in lines if ln.startswith("buffer") and ln.endswith(".strip")}
    strips = sum(1 for ln in lines if ln.startswith("  args:") and any(f"{b} (" in ln for b in sbufs))
    if strips != 3:
        errs = errs + [f"{strips} kernels in strips, want 3"]
    t.report("strip_rows", errs, src)
    return t.summary()


def erf(x):
    return np.vectorize(math.erf)(x)


def act_rows():
    """Row kernels over a costly elementwise producer (ir/row.c's row_cache: the producer
    computed once per row into per-thread scratch "kN.row", every pass reading it):
    layer_norm of gelu (f32, and over the permuted channels of a [B, C, T] input plus a
    positional term), of silu (f64), rms_norm of tanh-gelu, softmax of tanh, log_softmax
    of exp, a standardization of silu by its std (f64), a layer_norm of tanh plus the tanh
    flipped and rolled over rows, against NumPy, rows not a multiple
    of the vector (one program); every kernel keeps its rows. And the moments pass in vector
    lanes: LLVM's code for LayerNorm(GELU) of [4, 384] on Zen 3 and on an AVX-512 CPU has
    no scalar FMA (the old pass evaluated the GELU in 16 scalar lanes: 22 scalar FMAs,
    and its polynomials in 220 FMAs against 22)."""
    t = Tally()
    rng = np.random.default_rng(41)
    x = (2 * rng.standard_normal((7, 45))).astype(np.float32)
    y = 2 * rng.standard_normal((5, 27))
    z = (2 * rng.standard_normal((2, 37, 5))).astype(np.float32)
    pos = rng.standard_normal((5, 37)).astype(np.float32)
    w, b = rng.standard_normal(45).astype(np.float32), rng.standard_normal(45).astype(np.float32)
    x64, z64 = x.astype(np.float64), z.astype(np.float64)

    def ln(a, eps=1e-5):
        u = a.mean(-1, keepdims=True)
        return (a - u) / np.sqrt(((a - u) ** 2).mean(-1, keepdims=True) + eps)

    def sm(a):
        e = np.exp(a - a.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    gelu = 0.5 * x64 * (1 + erf(x64 / np.sqrt(2)))
    gt = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3)))
    sy = y / (1 + np.exp(-y))
    gz = (0.5 * z64 * (1 + erf(z64 / np.sqrt(2)))).transpose(0, 2, 1) + pos
    body = ["g = F.gelu(x, approximate='tanh')", "s = F.silu(y)", "t = torch.tanh(x)"]
    cases = [("F.layer_norm(F.gelu(x), (45,), w, b)", ln(gelu) * w + b, "f32"),
             ("F.layer_norm(s, (27,))", ln(sy), "f64"),
             ("g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + 1e-6) * w",
              gt / np.sqrt((gt ** 2).mean(-1, keepdims=True) + 1e-6) * w, "f32"),
             ("torch.softmax(torch.tanh(y), -1)", sm(np.tanh(y)), "f64"),
             ("torch.log_softmax(torch.exp(x * 0.3), -1)", np.log(sm(np.exp(x64 * 0.3))), "f32"),
             ("F.layer_norm(F.gelu(z).permute(0, 2, 1) + pos, (37,))", ln(gz), "f32"),
             ("(s - s.mean(-1, keepdim=True)) / s.std(-1, keepdim=True)",
              (sy - sy.mean(-1, keepdims=True)) / sy.std(-1, ddof=1, keepdims=True), "f64"),
             # the kept values read at other places of the row, and of other rows (recomputed)
             ("F.layer_norm(t, (45,)) + t.flip(-1) + t.roll(1, 0)",
              ln(np.tanh(x64)) + np.tanh(x64)[:, ::-1] + np.roll(np.tanh(x64), 1, 0), "f32")]
    params = "x: f32[7, 45], y: f64[5, 27], z: f32[2, 37, 5], pos: f32[5, 37], w: f32[45], b: f32[45]"
    errs, src = run_case(sys.argv[1], params, body, ", ".join(c for c, _, _ in cases), [k for _, _, k in cases],
                         [np.asarray(v, np.float64) for _, v, _ in cases],
                         {"x": x, "y": y, "z": z, "pos": pos, "w": w, "b": b})
    lines = emit_text(sys.argv[1], src, "kernels").stdout.splitlines()
    rbufs = {ln.split()[1] for ln in lines if ln.startswith("buffer") and ln.endswith(".row")}
    kept = sum(1 for ln in lines if ln.startswith("  args:") and any(f"{r} (" in ln for r in rbufs))
    nk = sum(1 for ln in lines if ln.startswith("kernel "))
    if kept != nk or nk < 5:
        errs = errs + [f"{kept} of {nk} kernels keep their row, want all"]
    one = "fn f(x: f32[4, 384], w: f32[384], b: f32[384]) -> f32[4, 384] { return F.layer_norm(F.gelu(x), (384,), w, b) }"
    for cpu in ("znver3", "skylake-avx512"):
        asm = emit_text(sys.argv[1], one, "asm", [f"--cpu={cpu}"]).stdout
        ss, ps = len(re.findall(r"\bvfn?m(?:add|sub)\w*ss\b", asm)), len(re.findall(r"\bvfn?m(?:add|sub)\w*ps\b", asm))
        if ss or not 0 < ps < 100:
            errs = errs + [f"--cpu={cpu}: {ss} scalar and {ps} vector FMAs in LayerNorm(GELU), want 0 and 1..99"]
    t.report("act_rows", errs, src)
    return t.summary()


if __name__ == "__main__":
    require_backend(sys.argv[1])
    sys.exit(run_families({"reductions"}) | nan_rows() | argext_rows() | strip_rows() | act_rows())
