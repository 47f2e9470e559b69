#!/usr/bin/python3
"""tests/run/test_complex_ops.py TDSLC: the rest of PyTorch 1.13's complex op surface, each
op of complex64/complex128 tensors against NumPy's complex arithmetic, in one program (one
tdslc run per backend, its CUDA C and PTX emitted once): moves and masks run on the parts
(roll, tril, triu, diag, trace, take_along_dim, masked_fill, pad, repeat, tile, diff,
repeat_interleave, take, the view scatters, masked_scatter, lerp), products (outer, kron,
inner, tensordot, einsum of two and three operands, cross, dot, vdot's conjugate, mv),
scatter/scatter_add/index_fill_/index_add_ with alpha, creation with a complex fill
(full, full_like, new_full, fill_, zeros/ones/eye with a complex dtype), the reductions
with another dtype= (sum, mean, prod, cumsum, cumprod: complex64 <-> complex128, real ->
complex), var/std/norm of complex tensors (real results, as PyTorch's), cat/stack of real
and complex tensors (promoted), silu, tanhshrink, softsign, sinc, ldexp, normalize, dist,
cov, corrcoef, z.view(dtype) of the parts' dtype, and the on-parts rows given views of
complex tensors (with a check that every row of sema_complex.c's lists has a case); then the
refusals that remain, in PyTorch 1.13's words (complex32 included).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and exits
77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, gpu_emit_errors, require_backend, run_cleanup, tdslc_run  # noqa: E402

RNG = np.random.default_rng(303)
NP = {"c64": np.complex64, "c128": np.complex128, "f32": np.float32, "f64": np.float64, "i64": np.int64,
      "bool": np.bool_}


def cval(dtype, shape):
    re, im = RNG.uniform(-1, 1, size=shape), RNG.uniform(-1, 1, size=shape)
    return (re + 1j * im).astype(NP[dtype])


INS = {"z": cval("c64", (3, 4)), "w": cval("c64", (3, 4)), "x": RNG.uniform(-1, 1, (3, 4)).astype(np.float32),
       "k": np.array([2, 0]), "m": RNG.uniform(size=(3, 4)) < 0.5, "ki": RNG.integers(0, 3, size=(3, 4)),
       "v": cval("c64", (4,)), "sq": cval("c64", (4, 4)), "y": cval("c128", (3, 4)), "u": cval("c128", (4,))}
PARAMS = ("z: c64[3, 4], w: c64[3, 4], x: f32[3, 4], k: i64[2], m: bool[3, 4], ki: i64[3, 4], v: c64[4], "
          "sq: c64[4, 4], y: c128[3, 4], u: c128[4]")


def masked_scatter(z, m, w):
    r = z.copy()
    r[m] = w.ravel()[:m.sum()]
    return r


def put(a, at, val):
    r = a.copy()
    r[at] = val
    return r


def diag_put(a, d):
    r = a.copy()
    np.fill_diagonal(r, d)
    return r


def scatter(z, dim, ki, src, add=False):
    r = z.copy()
    for i in np.ndindex(*ki.shape):
        t = list(i)
        t[dim] = ki[i]
        s = src[i] if np.ndim(src) else src
        r[tuple(t)] = r[tuple(t)] + s if add else s
    return r


def index_rows(z, k, vals, add=False):
    r = z.copy()
    for j, i in enumerate(k):
        r[i] = r[i] + vals[j] if add else vals[j]
    return r


# statements before the return: the in-place forms (their results s1, s2, f1 ..., a1)
BODY = ["s1 = z.clone()", "s1.scatter_(1, ki[:, :2], 1.5 - 1j)", "s2 = z.clone()", "s2.scatter_add_(1, ki, w)",
        "f1 = z.clone()", "f1.index_fill_(0, k, 1 - 1j)", "a1 = z.clone()", "a1.index_add_(0, k, w[:2], alpha=0.5 + 2j)",
        "f2 = z.clone()", "f2.fill_(1j)", "f3 = z.clone()", "f3.fill_(3)", "f4 = z.clone()", "f4.zero_()",
        "f5 = z.clone()", "f5.copy_(w)", "i1 = z.clone()", "i1.masked_fill_(m, 1j)", "i1.tril_()", "i1.lerp_(w, 0.5)",
        "i1.add_(w, alpha=2)", "i2 = z.clone()", "i2.masked_scatter_(m, w)", "i2.sub_(x, alpha=1j)"]


def cases():
    """(expression, result type, NumPy's value of INS)"""
    z, w, x, k, m, ki, v, sq, y, u = (INS[n] for n in "z w x k m ki v sq y u".split())
    c = "c64[3, 4]"
    return [
        # moves, masks, pads: the op on each part
        ("torch.roll(z, 1, 0)", c, np.roll(z, 1, 0)), ("z.roll((1, -1), (0, 1))", c, np.roll(z, (1, -1), (0, 1))),
        ("torch.tril(z)", c, np.tril(z)), ("y.triu(1)", "c128[3, 4]", np.triu(y, 1)),
        ("torch.diag(v)", "c64[4, 4]", np.diag(v)), ("torch.diag(sq, 1)", "c64[3]", np.diag(sq, 1)),
        ("torch.trace(sq)", "c64[]", np.trace(sq)), ("torch.diag_embed(z)", "c64[3, 4, 4]",
                                                     np.stack([np.diag(r) for r in z])),
        ("torch.take_along_dim(z, ki, 1)", c, np.take_along_axis(z, ki, 1)),
        ("torch.masked_fill(z, m, 2j)", c, np.where(m, 2j, z)), ("y.masked_fill(m, 1.5)", "c128[3, 4]",
                                                                   np.where(m, 1.5, y)),
        ("F.pad(z, (1, 2))", "c64[3, 7]", np.pad(z, ((0, 0), (1, 2)))),
        ("F.pad(z, (1, 1), value=0.5)", "c64[3, 6]", np.pad(z, ((0, 0), (1, 1)), constant_values=0.5)),
        ("z.repeat(2, 1)", "c64[6, 4]", np.tile(z, (2, 1))), ("torch.tile(v, (2,))", "c64[8]", np.tile(v, 2)),
        ("torch.diff(z)", "c64[3, 3]", np.diff(z)), ("torch.diff(y, n=2, dim=0)", "c128[1, 4]", np.diff(y, 2, 0)),
        ("torch.repeat_interleave(z, 2, 0)", "c64[6, 4]", np.repeat(z, 2, 0)),
        ("torch.take(z, k)", "c64[2]", z.ravel()[k]),
        ("torch.select_scatter(z, v, 0, 0)", c, put(z, 0, v)),
        ("torch.slice_scatter(z, w[:1], 0, 2, 3)", c, put(z, slice(2, 3), w[:1])),
        ("torch.diagonal_scatter(sq, v)", "c64[4, 4]", diag_put(sq, v)),
        ("torch.masked_scatter(z, m, w)", c, masked_scatter(z, m, w)),
        ("torch.lerp(z, w, 0.25)", c, z + np.float32(0.25) * (w - z)), 
        ("torch.lerp(z, w, z)", c, z + z * (w - z)), ("z.lerp(w, 0.5 + 1j)", c, z + (0.5 + 1j) * (w - z)),
        # products: linear in each operand
        ("torch.outer(v, v)", "c64[4, 4]", np.outer(v, v)), ("torch.outer(v, x[0])", "c64[4, 4]", np.outer(v, x[0])),
        ("torch.kron(sq[:2, :3], z[:2, :2])", "c64[4, 6]", np.kron(sq[:2, :3], z[:2, :2])),
        ("torch.inner(z, w)", "c64[3, 3]", np.inner(z, w)), ("torch.tensordot(z, sq, 1)", c, np.tensordot(z, sq, 1)),
        ("torch.einsum('ij,jk->ik', z, sq)", c, z @ sq), ("torch.einsum('i,j,k->ijk', v, v[:2], v[:3])",
                                                          "c64[4, 2, 3]", np.einsum('i,j,k->ijk', v, v[:2], v[:3])),
        ("torch.einsum('ij->j', z)", "c64[4]", z.sum(0)),
        ("torch.cross(z[:, :3], w[:, :3], dim=1)", "c64[3, 3]", np.cross(z[:, :3], w[:, :3], axis=1)),
        ("torch.dot(v, sq[0])", "c64[]", np.dot(v, sq[0])), ("torch.vdot(v, sq[0])", "c64[]", np.vdot(v, sq[0])),
        ("torch.vdot(u, u)", "c128[]", np.vdot(u, u)), ("torch.mv(sq, v)", "c64[4]", sq @ v),
        ("F.linear(z, sq)", c, z @ sq.T), ("F.linear(z, sq, v)", c, z @ sq.T + v), ("F.linear(z, v)", "c64[3]", z @ v),
        ("torch.addmm(v, z, sq)", c, v + z @ sq), ("torch.addmm(z, z, sq, beta=0.5, alpha=2j)", c, 0.5 * z + 2j * (z @ sq)),
        ("torch.addmv(v[:3], z, v, alpha=-1)", "c64[3]", v[:3] - z @ v), ("torch.addr(sq, v, v, beta=0)", "c64[4, 4]",
                                                                        np.outer(v, v)),
        ("torch.addcmul(z, z, w)", c, z + z * w), ("torch.addcdiv(z, x, w, value=2j)", c, z + 2j * (x / w)),
        ("torch.isclose(z, torch.where(m, z + 1e-6, w))", "bool[3, 4]", np.isclose(z, np.where(m, z + 1e-6, w))),
        ("torch.isclose(y, y * (1 + 1e-4), rtol=1e-3, atol=0)", "bool[3, 4]", np.isclose(y, y * (1 + 1e-4), 1e-3, 0)),
        ("torch.isclose(z * 0 / 0, z * 0 / 0, equal_nan=True)", "bool[3, 4]", np.ones((3, 4), bool)),
        ("torch.isclose(z * 0 / 0, z * 0 / 0)", "bool[3, 4]", np.zeros((3, 4), bool)),
        ("torch.float_power(z, 2)", "c128[3, 4]", z.astype(np.complex128) ** 2),
        ("torch.float_power(x, u[:1])", "c128[3, 4]", x.astype(np.float64) ** u[:1]),
        ("torch.baddbmm(z[None], z[None], sq[None])", "c64[1, 3, 4]", (z + z @ sq)[None]),
        ("F.pad(z[None], (1, 2), mode='reflect')", "c64[1, 3, 7]", np.pad(z, ((0, 0), (1, 2)), mode="reflect")[None]),
        ("F.pad(z[None], (2, 1), mode='circular')", "c64[1, 3, 7]", np.pad(z, ((0, 0), (2, 1)), mode="wrap")[None]),
        # scatters and index writes of complex values
        ("torch.scatter(z, 1, ki, w)", c, scatter(z, 1, ki, w)), ("y.scatter(0, ki, 2j)", "c128[3, 4]", scatter(y, 0, ki, 2j)),
        ("torch.scatter_add(z, 1, ki, w)", c, scatter(z, 1, ki, w, add=True)),
        ("torch.scatter(v, 0, k, v[:2])", "c64[4]", scatter(v, 0, k, v[:2])),
        ("torch.gather(torch.scatter(z, 1, torch.argsort(x, 1), w), 1, torch.argsort(x, 1))", c, w),  # a round trip
        ("torch.index_fill(v, 0, k, 1j)", "c64[4]", index_rows(v, k, [1j, 1j])),
        ("torch.take_along_dim(z, ki.flatten()[:3])", "c64[3]", z.ravel()[ki.ravel()[:3]]),
        ("z.masked_fill(m, v[0])", c, np.where(m, v[0], z)), 
        ("torch.kron(v, x[0])", "c64[16]", np.kron(v, x[0])), ("torch.outer(u, v)", "c128[4, 4]", np.outer(u, v)),
        ("z.scatter(1, ki, w, reduce='add')", c, scatter(z, 1, ki, w, add=True)),
        ("torch.scatter_reduce(z, 0, ki, w, 'sum')", c, scatter(z, 0, ki, w, add=True)),
        ("s1", c, scatter(z, 1, ki[:, :2], 1.5 - 1j)), ("s2", c, scatter(z, 1, ki, w, add=True)),
        ("torch.index_fill(z, 0, k, 2j)", c, index_rows(z, k, [2j, 2j])),
        ("z.index_fill(1, k, -1.5)", c, index_rows(z.T, k, [-1.5, -1.5]).T),
        ("f1", c, index_rows(z, k, [1 - 1j] * 2)),
        ("torch.index_add(z, 0, k, w[:2], alpha=2)", c, index_rows(z, k, 2 * w[:2], add=True)),
        ("a1", c, index_rows(z, k, (0.5 + 2j) * w[:2], add=True)),
        # creation with a complex fill
        ("torch.full((2, 3), 1 + 2j)", "c64[2, 3]", np.full((2, 3), 1 + 2j)),
        ("torch.full((2,), -1j, dtype=torch.cdouble)", "c128[2]", np.full(2, -1j)),
        ("torch.full((2,), 2 * (1 - 0.5j) / 1j, dtype=torch.cfloat)", "c64[2]", np.full(2, 2 * (1 - 0.5j) / 1j)),
        ("z.new_full((2,), 1j)", "c64[2]", np.full(2, 1j)), ("torch.full_like(y, 2j)", "c128[3, 4]", np.full((3, 4), 2j)),
        ("torch.full_like(x, 3, dtype=torch.cfloat)", c, np.full((3, 4), 3 + 0j)),
        ("torch.tensor(1j)", "c64[]", 1j), ("torch.tensor([[1 + 2j, 3], [-0.5j, 2.5]], dtype=torch.cdouble)",
                                             "c128[2, 2]", [[1 + 2j, 3], [-0.5j, 2.5]]),
        ("torch.tensor([1j, 2]) * v[:2]", "c64[2]", np.array([1j, 2]) * v[:2]),
        ("torch.zeros_like(z)", c, np.zeros((3, 4))), ("torch.ones_like(z)", c, np.ones((3, 4))),
        ("z.new_zeros(2)", "c64[2]", np.zeros(2)), ("y.new_ones((2, 1))", "c128[2, 1]", np.ones((2, 1))),
        ("torch.zeros(2, dtype=torch.cfloat)", "c64[2]", np.zeros(2)), ("torch.ones(2, dtype=torch.cdouble)",
                                                                         "c128[2]", np.ones(2)),
        ("torch.eye(3, dtype=torch.cfloat)", "c64[3, 3]", np.eye(3)), ("torch.eye(2, 3, dtype=torch.cdouble)",
                                                                        "c128[2, 3]", np.eye(2, 3)),
        ("i1", c, (lambda t: (lambda t2: t2 + 0.5 * (w - t2) + 2 * w)(np.tril(t)))(np.where(m, 1j, z))),
        ("i2", c, masked_scatter(z, m, w) - 1j * x),
        ("f2", c, np.full((3, 4), 1j)), ("f3", c, np.full((3, 4), 3)), ("f4", c, np.zeros((3, 4))), ("f5", c, w),
        # reductions with another dtype=
        ("z.sum(dtype=torch.cdouble)", "c128[]", z.astype(np.complex128).sum()),
        ("y.sum(0, dtype=torch.cfloat)", "c64[4]", y.astype(np.complex64).sum(0)),
        ("z.mean(1, dtype=torch.cdouble)", "c128[3]", z.astype(np.complex128).mean(1)),
        ("x.sum(dtype=torch.cfloat)", "c64[]", x.sum()), ("x.mean(0, dtype=torch.cdouble)", "c128[4]",
                                                          x.astype(np.float64).mean(0)),
        ("k.sum(dtype=torch.cfloat)", "c64[]", k.sum()),
        ("z.prod(1, dtype=torch.cdouble)", "c128[3]", z.astype(np.complex128).prod(1)),
        ("x.prod(dtype=torch.cdouble)", "c128[]", x.astype(np.float64).prod()),
        ("z.cumsum(0, dtype=torch.cdouble)", "c128[3, 4]", z.astype(np.complex128).cumsum(0)),
        ("x.cumsum(1, dtype=torch.cfloat)", c, x.cumsum(1)), ("k.cumsum(0, dtype=torch.cdouble)", "c128[2]", k.cumsum(0)),
        ("y.cumprod(1, dtype=torch.cfloat)", c, y.astype(np.complex64).cumprod(1)),
        ("x.cumprod(0, dtype=torch.cfloat)", c, x.cumprod(0)),
        # add and sub with alpha
        ("torch.add(z, w, alpha=2)", c, z + 2 * w), ("torch.sub(z, w, alpha=2j)", c, z - 2j * w),
        ("z.add(x, alpha=0.5)", c, z + 0.5 * x), ("torch.add(x, z, alpha=-3)", c, x - 3 * z),
        # real results: var, std (of |z - mean|), norms (of |z|), and the tests of z != 0
        ("z.var()", "f32[]", np.var(z, ddof=1)), ("y.var(1, unbiased=False)", "f64[3]", np.var(y, 1)),
        ("z.std(0, keepdim=True)", "f32[1, 4]", np.std(z, 0, ddof=1, keepdims=True)),
        ("torch.std(y, correction=0)", "f64[]", np.std(y)),
        ("z.norm()", "f32[]", np.linalg.norm(z)), ("torch.norm(y, p=1, dim=1)", "f64[3]", np.abs(y).sum(1)),
        ("torch.norm(z, p=float('inf'))", "f32[]", np.abs(z).max()),
        ("(z * m).any(1)", "bool[3]", (z * m).any(1)), ("(z * m).all(0)", "bool[4]", (z * m).all(0)),
        ("torch.count_nonzero(z * m, dim=0)", "i64[4]", np.count_nonzero(z * m, 0)),
        ("torch.logical_not(z * m)", "bool[3, 4]", z * m == 0),
        ("torch.logical_and(z * m, w)", "bool[3, 4]", (z * m != 0) & (w != 0)),
        ("torch.logical_or(z * m, x * 0)", "bool[3, 4]", z * m != 0),
        # cat and stack of real and complex tensors: promoted as PyTorch promotes them
        ("torch.cat([z, x])", "c64[6, 4]", np.concatenate([z, x])),
        ("torch.cat((x, z, y), 1)", "c128[3, 12]", np.concatenate([x, z, y], 1)),
        ("torch.stack([x, y], 1)", "c128[3, 2, 4]", np.stack([x, y], 1)),
        ("torch.stack((m, z))", "c64[2, 3, 4]", np.stack([m, z])),
        ("torch.cat([ki, v[None]])", "c64[4, 4]", np.concatenate([ki, v[None]])),
        # silu and sinc (1 where z is 0, NumPy's sinc)
        ("F.silu(z)", c, z / (1 + np.exp(-z))), ("torch.nn.functional.silu(y)", "c128[3, 4]", y / (1 + np.exp(-y))),
        ("torch.sinc(z * m)", c, np.sinc(z * m)), ("y.sinc()", "c128[3, 4]", np.sinc(y)),
        ("F.tanhshrink(z)", c, z - np.tanh(z)), ("F.softsign(y)", "c128[3, 4]", y / (1 + np.abs(y))),
        ("torch.ldexp(z, ki - 1)", c, z * 2.0 ** (ki - 1)),
        ("torch.ldexp(y, ki * 3 - 4)", "c128[3, 4]", y * 2.0 ** (ki * 3 - 4)),
        ("torch.ldexp(x, z)", c, x * 2.0 ** z),
        ("torch.dist(z, w)", "f32[]", np.linalg.norm((z - w).ravel())),
        ("torch.dist(z, y, 1)", "f64[]", np.abs(z - y).sum()), ("z.dist(x, float('inf'))", "f32[]", np.abs(z - x).max()),
        ("torch.dist(x, w, 3)", "f32[]", (np.abs(x - w) ** 3).sum() ** (1 / 3)),
        ("F.normalize(z)", c, z / np.linalg.norm(z, axis=1, keepdims=True)),
        ("F.normalize(y * m, p=1, dim=0)", "c128[3, 4]",
         y * m / np.maximum(np.abs(y * m).sum(0, keepdims=True), 1e-12)),
        ("F.normalize(z * 0)", c, np.zeros((3, 4))),
        # the parts' rows given views of complex tensors (their checkers' views typed complex)
        ("torch.diagflat(v[1:])", "c64[3, 3]", np.diagflat(v[1:])), ("torch.ger(v[:3], v)", "c64[3, 4]",
                                                                       np.outer(v[:3], v)),
        ("torch.narrow_copy(z, 1, 1, 2)", "c64[3, 2]", z[:, 1:3]),
        ("torch.diag_embed(z.t())", "c64[4, 3, 3]", np.stack([np.diag(r) for r in z.T])),
        ("torch.roll(z[:, 1:].t(), 1, 1)", "c64[3, 3]", np.roll(z[:, 1:].T, 1, 1)),
        ("torch.tril(z.t()[1:])", "c64[3, 3]", np.tril(z.T[1:])),
        ("torch.cross(z.t()[:3], w.t()[:3], dim=0)", "c64[3, 3]", np.cross(z.T[:3], w.T[:3], axis=0)),
        ("torch.cov(z)", "c64[3, 3]", np.cov(z)), ("torch.cov(y, correction=0)", "c128[3, 3]", np.cov(y, bias=True)),
        ("torch.corrcoef(z)", "c64[3, 3]", np.corrcoef(z)), ("torch.corrcoef(y.t())", "c128[4, 4]", np.corrcoef(y.T)),
        ("torch.corrcoef(v)", "c64[]", 1 + 0j), ("torch.cov(v)", "c64[]", np.cov(v)), ("torch.cov(sq.t())", "c64[4, 4]", np.cov(sq.T)),
        # view(dtype): the parts' dtype (the last dim doubled) or the own dtype
        ("z.view(torch.float32)", "f32[3, 8]", z.view(np.float32)), ("y.view(torch.double)", "f64[3, 8]",
                                                                     y.view(np.float64)),
        ("z[1:, 1:3].view(torch.float32) * 2", "f32[2, 4]", z[1:, 1:3].copy().view(np.float32) * 2),
        ("z.view(torch.complex64)", c, z),
    ]


def check_parts_rows(tally):
    """every row of sema_complex.c's on-parts lists has a case above (its own checker's views of
    complex arguments run, their types checked by the result's dtype and values)"""
    import re
    src = open(os.path.join(HERE, "..", "..", "frontend", "sema_complex.c")).read()
    rows = []
    for lst in ("linear_rows", "product_rows"):
        body = re.search(r"\b" + lst + r"\[\] = \{(.*?)\};", src, re.S)
        rows += re.findall(r'"(\w+)"', body.group(1)) if body else [f"<{lst} not found>"]
    exprs = " ".join(e for e, _, _ in cases()) + " " + " ".join(BODY)
    missing = [r for r in rows if not re.search(r"\b" + r + r"_?\(", exprs)]
    tally.report("every on-parts row has a case", [f"no case for {', '.join(missing)}"] if missing else [])


def check_values(tdslc, backend, tally):
    outs = cases()
    lines = "".join(f"  {line}\n" for line in BODY)
    src = (f"fn f({PARAMS}) -> ({', '.join(t for _, t, _ in outs)}) {{\n{lines}"
           f"  return {', '.join(e for e, _, _ in outs)}\n}}")
    p, _, out_dir = tdslc_run(tdslc, src, ["--fn", "f"], backend=backend, inputs=INS, json_out=False)
    try:
        if p.returncode != 0:
            tally.report("values", [f"exit {p.returncode}: {p.stderr.decode()[-3000:]}"])
            return
        for i, (expr, t, want) in enumerate(outs):
            got = np.load(os.path.join(out_dir, f"out{i}.npy"))
            dt, shape = t.split("[")
            shape = tuple(int(d) for d in shape[:-1].split(", ") if d)
            want = np.asarray(want)
            if got.dtype != np.dtype(NP[dt]) or got.shape != shape:
                tally.report(expr, [f"{got.dtype}{got.shape}, want {np.dtype(NP[dt])}{shape}"])
                continue
            tol = 1e-12 if dt in ("c128", "f64") else 2e-6
            ok = np.allclose(got, want, rtol=tol, atol=tol)
            tally.report(expr, [] if ok else [f"max |got - NumPy| = {np.max(np.abs(got - want))}\n{got}\n{want}"])
    finally:
        run_cleanup(out_dir)
    if backend in (None, "llvm"):  # the GPU backends compile the same graph
        tally.report("values --emit=cuda, --emit=ptx", gpu_emit_errors(tdslc, src, ["--fn", "f", "--target", "cuda"]))


# refused: (expression, the message's words); each one tdslc run of --emit=ir
ERRORS = [
    ("torch.zeros(2, dtype=torch.chalf)", "dtype torch.chalf is not supported by tdsl"),
    ("torch.view_as_complex(x.half().reshape(3, 2, 2))", "view_as_complex of a float16 tensor (complex32) is not supported"),
    ("z.scatter(1, ki, w, reduce='multiply')", "scatter() with reduce='multiply' of a complex tensor is not supported"),
    ("torch.scatter_reduce(z, 1, ki, w, 'amax')",
     '"scatter_gather_tensor_cpu_reduce_amax" not implemented for \'ComplexFloat\''),
    ("torch.norm(z, p='nuc')", "norm(p='nuc') of a complex tensor is not supported by tdsl"),
    ("y.prod(dtype=torch.float64)", "prod() of a ComplexDouble tensor with dtype=Double is not supported by tdsl"),
    ("torch.full((2,), 1j, dtype=torch.int64)", "value cannot be converted to type int64_t without overflow"),
    ("torch.index_fill(x, 0, k, 2j)", "index_fill_(): Converting complex Scalar to non-complex type is not supported"),
    ("torch.add(x, x, alpha=2j)", "For non-complex input tensors, argument alpha must not be a complex number."),
    ("z.index_add(0, k, w[:2], alpha=x)", "index_add(): argument 'alpha' must be Number, not Tensor"),
    ("torch.einsum('ij,jk->ik', x, sq)", "expected scalar type Float but found ComplexFloat"),
    ("F.linear(x, sq)", "expected scalar type Float but found ComplexFloat"),
    ("torch.isclose(z, y)", "ComplexFloat did not match ComplexDouble"),
    ("torch.tensor([1j, [2]])", "tensor() of complex values is supported of Python numbers and nested lists of them"),
    ("torch.tensor([1j], dtype=torch.float32)", "value cannot be converted to type float without overflow"),
    ("torch.tensordot(v, u, 1)", "expected scalar type ComplexFloat but found ComplexDouble"),
    ("z.lerp(w, x)", "expected dtype c10::complex<float> for `weight` but got dtype float"),
    ("torch.lerp(z, x, 0.5)", "expected dtype c10::complex<float> for `end` but got dtype float"),
    ("torch.lerp(x, x, 0.5 + 1j)", "value cannot be converted to type float without overflow"),
    ("z.t().view(torch.float32)",
     "self.stride(-1) must be 1 to view ComplexFloat as Float (different element sizes), but got 4"),
    ("z[0, 0].view(torch.float)", "self.dim() cannot be 0 to view ComplexFloat as Float (different element sizes)"),
    ("z.view(torch.float64)", "view(Double) of a ComplexFloat tensor reinterprets its bits"),
    ("F.softplus(z)", '"softplus_cpu" not implemented for \'ComplexFloat\''),
    ("F.gelu(y)", '"GeluKernelImpl" not implemented for \'ComplexDouble\''),
    ("F.logsigmoid(z)", '"log_sigmoid_cpu" not implemented for \'ComplexFloat\''),
    ("torch.cov(z, aweights=x[0, :4])", "cov() of a complex tensor with fweights or aweights is not supported"),
]


def check_errors(tdslc, tally):
    for expr, msg in ERRORS:
        src = f"fn f({PARAMS}) {{\n  r = {expr}\n}}"
        p = emit_text(tdslc, src, "ir")
        ok = p.returncode == 1 and "s.tdsl:2:" in p.stderr.split("error:")[0] and msg in p.stderr
        tally.report(f"refused {expr}", [] if ok else [f"exit {p.returncode}, want 1 and {msg!r}:\n{p.stderr[-1500:]}"])


def main():
    tdslc = sys.argv[1]
    backend = require_backend(tdslc)
    tally = Tally()
    check_parts_rows(tally)
    check_values(tdslc, backend, tally)
    check_errors(tdslc, tally)
    sys.exit(tally.summary(recap=True))


if __name__ == "__main__":
    main()
