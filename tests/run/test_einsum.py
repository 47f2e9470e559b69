#!/usr/bin/python3
"""tests/run/test_einsum.py TDSLC: torch.einsum against np.einsum — the matmul forms
(mm, bmm, attention's scores and values, x @ w.t(), a batch on one side), outer products,
traces and diagonals, transposes, sums, '...' with broadcast dims, implicit outputs,
repeated labels in an operand, three and four operands, spaces and uppercase letters,
size-1 labels that broadcast, several contracted labels, non-contiguous operands, f64,
f16, bf16 and ints, the list form einsum(eq, [a, b]), the sublist form einsum(a, [0, 1],
b, [1, 2]) and an equation held by a name.
Each program runs and is compared with NumPy on the same inputs; the matmul forms are
checked to compile to one matmul kernel that reads the operands where they lie.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, compare_kinds, emit_text, f32_to_bf16_bits, bf16_bits_to_f32,  # noqa: E402
                    require_backend, run_outputs, test_subset)

RNG = np.random.default_rng(14)


def value(dtype, shape):
    """Random inputs of dtype: what is passed to tdslc, and its values in f64 (ints as they are)."""
    if dtype in ("i32", "i64"):
        a = RNG.integers(-3, 4, size=shape).astype({"i32": np.int32, "i64": np.int64}[dtype])
        return a, a
    if dtype == "bool":
        a = RNG.random(shape) < 0.5
        return a, a
    f = RNG.uniform(-1, 1, size=shape).astype(np.float32)
    if dtype == "bf16":
        bits = f32_to_bf16_bits(f)
        return bits, bf16_bits_to_f32(bits).astype(np.float64)
    a = f.astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[dtype])
    return a, a.astype(np.float64)


def ein(eq, *xs):
    return np.einsum(eq.replace(" ", ""), *xs)


def bcast(x, shape):
    return np.broadcast_to(x, shape)


# (name, params [(name, dtype, shape)], body lines, the returned expressions, their
# dtypes, the NumPy values over the params' values, whether each result is one matmul)
CASES = [
    ("mm", [("a", "f32", (5, 7)), ("b", "f32", (7, 6))], [], "torch.einsum('ij,jk->ik', a, b)", ["f32"],
     lambda a, b: [a @ b], True),
    ("mm_implicit", [("a", "f32", (5, 7)), ("b", "f32", (7, 6))], [], "einsum('ij,jk', a, b)", ["f32"],
     lambda a, b: [a @ b], True),
    ("bmm", [("a", "f32", (3, 4, 5)), ("b", "f32", (3, 5, 2))], [], "torch.einsum('bij,bjk->bik', a, b)", ["f32"],
     lambda a, b: [a @ b], True),
    ("attention_scores", [("q", "f32", (2, 3, 4, 8)), ("k", "f32", (2, 3, 5, 8))], [],
     "torch.einsum('bhqd,bhkd->bhqk', q, k)", ["f32"], lambda q, k: [q @ np.swapaxes(k, -1, -2)], True),
    ("attention_values", [("p", "f32", (2, 3, 4, 5)), ("v", "f32", (2, 3, 5, 8))], [],
     "torch.einsum('bhqk,bhkd->bhqd', p, v)", ["f32"], lambda p, v: [p @ v], True),
    ("linear", [("x", "f32", (6, 8)), ("w", "f32", (5, 8))], [], "torch.einsum('ij,kj->ik', x, w)", ["f32"],
     lambda x, w: [x @ w.T], True),
    ("batch_one_side", [("x", "f32", (2, 3, 8)), ("w", "f32", (8, 5))], [], "torch.einsum('bik,kj->bij', x, w)",
     ["f32"], lambda x, w: [x @ w], True),
    ("batch_other_side", [("x", "f32", (3, 8)), ("w", "f32", (2, 8, 5))], [], "torch.einsum('ik,bkj->bij', x, w)",
     ["f32"], lambda x, w: [x @ w], True),
    ("dot", [("a", "f32", (7,)), ("b", "f32", (7,))], [], "torch.einsum('i,i->', a, b)", ["f32"],
     lambda a, b: [a @ b], True),
    ("mv", [("a", "f32", (4, 7)), ("b", "f32", (7,))], [], "torch.einsum('ij,j->i', a, b)", ["f32"],
     lambda a, b: [a @ b], True),
    ("vm", [("a", "f32", (4, 7)), ("b", "f32", (4,))], [], "torch.einsum('ij,i->j', a, b)", ["f32"],
     lambda a, b: [b @ a], True),
    ("mm_out_transposed", [("a", "f32", (5, 7)), ("b", "f32", (7, 6))], [], "torch.einsum('ij,jk->ki', a, b)",
     ["f32"], lambda a, b: [(a @ b).T], True),
    ("outer", [("a", "f32", (4,)), ("b", "f32", (5,))], [], "einsum('i,j->ij', a, b), einsum('i,j', b, a)",
     ["f32", "f32"], lambda a, b: [np.outer(a, b), np.outer(b, a)], False),
    ("trace_diag", [("x", "f32", (5, 5))], [],
     "einsum('ii', x), einsum('ii->', x), einsum('ii->i', x), einsum('ii->i', x) * 2", ["f32"] * 4,
     lambda x: [np.trace(x), np.trace(x), np.diag(x), 2 * np.diag(x)], False),
    ("transposes", [("x", "f32", (3, 4, 5))], [],
     "einsum('ijk->kji', x), einsum('ijk->ikj', x) + 0, einsum('ijk', x), einsum('kij', x), einsum('ijk->ijk', x)",
     ["f32"] * 5, lambda x: [x.transpose(2, 1, 0), x.transpose(0, 2, 1), x, x.transpose(1, 2, 0), x], False),
    ("sums", [("x", "f32", (3, 4, 5))], [],
     "einsum('ijk->', x), einsum('ijk->j', x), einsum('ijk->ki', x), einsum('ijk->k', x)", ["f32"] * 4,
     lambda x: [x.sum(), x.sum((0, 2)), x.sum(1).T, x.sum((0, 1))], False),
    ("ellipsis", [("a", "f32", (2, 1, 3, 4)), ("b", "f32", (5, 4, 2))], [],
     "einsum('...ij,...jk->...ik', a, b), einsum('...ij->...ji', a), einsum('...j,...j->...', b, b), "
     "einsum('i...->...', b), einsum('...ij,...jk', a, b)",
     ["f32"] * 5,
     lambda a, b: [a @ b, np.swapaxes(a, -1, -2), (b * b).sum(-1), b.sum(0), a @ b], False),
    ("implicit", [("a", "f32", (3, 4)), ("b", "f32", (4, 3))], [],
     "einsum('ba', a), einsum('ij,ij', a, a), einsum('ij,ji', a, b), einsum('ij,jk', a, b), einsum('i,i', a[0], a[1])",
     ["f32"] * 5,
     lambda a, b: [a.T, (a * a).sum(), np.trace(a @ b), a @ b, a[0] @ a[1]], False),
    ("repeated", [("x", "f32", (3, 3, 4)), ("y", "f32", (4, 3, 4)), ("z", "f32", (3, 3, 3))], [],
     "einsum('iij->j', x), einsum('iji->ij', y), einsum('iij,jk->ik', x, y[:, 0, :]), einsum('iii->i', z), "
     "einsum('iii', z), einsum('jii,ij->j', z, x[:, :, 0])",
     ["f32"] * 6,
     lambda x, y, z: [ein('iij->j', x), ein('iji->ij', y), ein('iij,jk->ik', x, y[:, 0, :]), ein('iii->i', z),
                      ein('iii', z), ein('jii,ij->j', z, x[:, :, 0])], False),
    ("three_operands", [("a", "f32", (3, 4)), ("b", "f32", (4, 5)), ("c", "f32", (5, 2)), ("d", "f32", (2, 6))], [],
     "einsum('ij,jk,kl->il', a, b, c), einsum('ij,jk,kl,lm->im', a, b, c, d), einsum('i,ij,j->', a[:, 0], a, b[:, 0]),"
     " einsum('ij,ik,il->jkl', a, a, a), einsum('ab,bc,cd,de', a, b, c, d)",
     ["f32"] * 5,
     lambda a, b, c, d: [a @ b @ c, a @ b @ c @ d, a[:, 0] @ a @ b[:, 0], ein('ij,ik,il->jkl', a, a, a),
                         a @ b @ c @ d], False),
    ("spaces_uppercase", [("a", "f32", (3, 4)), ("b", "f32", (4, 5))], [],
     "einsum(' ij , jk -> ik ', a, b), einsum('iJ,Jk->ik', a, b), einsum('AB,BC->CA', a, b), einsum('Ba,ab', a, b), "
     "einsum('zA', a)",
     ["f32"] * 5, lambda a, b: [a @ b, a @ b, (a @ b).T, ein('Ba,ab', a, b), a.T], False),
    ("noncontiguous", [("a", "f32", (7, 5)), ("b", "f32", (7, 12)), ("q", "f32", (2, 5, 3, 8))], [],
     "einsum('ij,jk->ik', a.t(), b[:, ::2]), einsum('bhqd,bhkd->bhqk', q.transpose(1, 2), q.transpose(1, 2)), "
     "einsum('ij->j', b[1:, 3:]), einsum('ii->i', b[:, 5:]), einsum('ij,ij->i', a.t(), a.t())",
     ["f32"] * 5,
     lambda a, b, q: [a.T @ b[:, ::2], ein('bhqd,bhkd->bhqk', q.transpose(0, 2, 1, 3), q.transpose(0, 2, 1, 3)),
                      b[1:, 3:].sum(0), np.diag(b[:, 5:]), (a.T * a.T).sum(1)], False),
    ("several_contracted", [("a", "f32", (3, 4, 5)), ("b", "f32", (4, 5, 2)), ("c", "f32", (3, 5, 4))], [],
     "einsum('ijk,jkl->il', a, b), einsum('ikj,jkl->il', c, b), einsum('ijk,ijk->', a, a)",
     ["f32"] * 3,
     lambda a, b, c: [ein('ijk,jkl->il', a, b), ein('ikj,jkl->il', c, b), (a * a).sum()], False),
    ("free_dims_both_sides", [("a", "f32", (2, 3, 4)), ("b", "f32", (5, 4, 6)), ("x", "f32", (7, 2, 3, 4)),
                              ("y", "f32", (7, 5, 4, 6))], [],
     "einsum('aij,bjk->abik', a, b), einsum('ij,bjk->ibk', a[0], b), einsum('aij,jk->aik', a, b[0]), "
     "einsum('xaij,xbjk->xabik', x, y), einsum('aij,bjk->kbia', a, b)",
     ["f32"] * 5,
     lambda a, b, x, y: [ein('aij,bjk->abik', a, b), ein('ij,bjk->ibk', a[0], b), ein('aij,jk->aik', a, b[0]),
                         ein('xaij,xbjk->xabik', x, y), ein('aij,bjk->kbia', a, b)], False),
    ("batch_mul", [("a", "f32", (3, 4)), ("b", "f32", (3, 5)), ("c", "f32", (3,))], [],
     "einsum('bi,bj->bij', a, b), einsum('i,i->i', c, c), einsum('bi,bj,b->bij', a, b, c), einsum('ij,j->ij', b, b[0])",
     ["f32"] * 4,
     lambda a, b, c: [ein('bi,bj->bij', a, b), c * c, ein('bi,bj,b->bij', a, b, c), b * b[0]], False),
    ("size_one_labels", [("a", "f32", (3, 4)), ("b", "f32", (1, 5)), ("c", "f32", (3, 1)), ("d", "f32", (1,))], [],
     "einsum('ij,jk->ik', a, b), einsum('ij,ij->ij', a, c), einsum('ij,jk->ik', c, b), einsum('i,i->', a[0], d), "
     "einsum('ij->i', c), einsum('ij,jk', c, b)",
     ["f32"] * 6,
     lambda a, b, c, d: [a.sum(1)[:, None] * b[0], a * c, c @ b, a[0].sum() * d[0], c[:, 0], c @ b], False),
    ("zero_size", [("a", "f32", (3, 0)), ("b", "f32", (0, 4))], [],
     "einsum('ij,jk->ik', a, b), einsum('ij->i', a), einsum('ij->j', a)", ["f32"] * 3,
     lambda a, b: [np.zeros((3, 4)), np.zeros(3), np.zeros(0)], False),
    ("f64", [("a", "f64", (5, 7)), ("b", "f64", (3, 7, 6))], [],
     "einsum('ij,bjk->bik', a, b), einsum('ij->j', a), einsum('bij,bij->b', b, b)", ["f64"] * 3,
     lambda a, b: [a @ b, a.sum(0), (b * b).sum((1, 2))], False),
    ("f16", [("q", "f16", (2, 3, 4, 8)), ("k", "f16", (2, 3, 5, 8))], [],
     "einsum('bhqd,bhkd->bhqk', q, k), einsum('bhqd->bhd', q), einsum('bhqd,bhqd->bhq', q, q)", ["f16"] * 3,
     lambda q, k: [q @ np.swapaxes(k, -1, -2), q.sum(2), (q * q).sum(-1)], False),
    ("bf16", [("a", "bf16", (4, 8)), ("b", "bf16", (8, 3))], [], "einsum('ij,jk->ik', a, b)", ["bf16"],
     lambda a, b: [a @ b], False),
    ("mixed_dtypes_mul", [("a", "f32", (3,)), ("b", "f64", (4,)), ("h", "f16", (3,))], [],
     "einsum('i,j->ij', a, b), einsum('i,i->i', a, h)", ["f64", "f32"],
     lambda a, b, h: [np.outer(a, b), a * h], False),
    ("ints", [("i", "i32", (3, 4)), ("j", "i64", (4,)), ("m", "bool", (3, 4))], [],
     "einsum('ij->j', i), einsum('ij,j->ij', i, i[0]), einsum('ij,j->ij', i, j), einsum('ij->ji', m), "
     "einsum('ij->', m), einsum('i,j->ij', m[0], m[1]), einsum('ii->i', i[:, :3])",
     ["i64", "i32", "i64", "bool", "i64", "bool", "i32"],
     lambda i, j, m: [i.sum(0), i * i[0], i * j, m.T, m.sum(), np.outer(m[0], m[1]), np.diag(i[:, :3])], False),
    ("list_form", [("a", "f32", (3, 4)), ("b", "f32", (4, 5))], ["eq = 'ij,jk->ik'", "ops = [a, b]"],
     "torch.einsum('ij,jk->ik', [a, b]), einsum(eq, a, b), einsum(eq, ops), einsum('ij,jk', (a, b)), "
     "torch.einsum(a, [0, 1], b, [1, 2]), einsum(a, [0, 26], b, [26, 51], [51, 0])", ["f32"] * 6,
     lambda a, b: [a @ b] * 5 + [(a @ b).T], False),
]


def kernels_of(src):
    ir = emit_text(src=src, tdslc=TDSLC, kind="ir").stdout
    return [ln.split(":", 1)[1].split("lines")[0].split() for ln in ir.splitlines() if re.match(r"  k\d+: ", ln)], ir


TDSLC = None


def main():
    global TDSLC
    TDSLC = tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, params, body, exprs, kinds, model, one_matmul in CASES[::test_subset()]:  # the sanitizer pass: a subset
        vals = {p: value(dt, shape) for p, dt, shape in params}
        want = model(*[vals[p][1] for p, _, _ in params])
        rets = ", ".join(f"{k}[{', '.join(str(d) for d in np.shape(w))}]" for k, w in zip(kinds, want))
        decl = ", ".join(f"{p}: {dt}[{', '.join(str(d) for d in shape)}]" for p, dt, shape in params)
        lines = "".join(f"    {b}\n" for b in body)
        src = f"fn f({decl}) -> ({rets}) {{\n{lines}    return {exprs}\n}}\n"
        p, outs = run_outputs(tdslc, src, {k: v[0] for k, v in vals.items()})
        t.report(name, compare_kinds(p, outs, want, kinds), src)
        if one_matmul:
            ks, ir = kernels_of(src)
            t.check(f"{name}: one matmul kernel, no copies", ks == [["matmul"]], ir)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
