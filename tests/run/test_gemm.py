#!/usr/bin/python3
"""tests/run/test_gemm.py: the CPU matmul schedules of ir/gemm.c (packed, direct, dot)
against NumPy, on one backend (TDSL_BACKEND). Every layout (nn, nt, tn, tt), sliced and
expanded operands, batches that broadcast, PyTorch's 1-D rules, odd sizes (1, 3, 7, 17,
129, prime K), zero-size dims, f16/bf16/f32/f64/i32/i64 and fused epilogues, among them
epilogues that compute with the output index (tril, triu, causal masks, arange, eye).

Tolerance, per element: the schedules sum in another order than NumPy and may fuse each
multiply-add, so a float result may differ from the exact one by the classic dot-product
bound, which grows with K:  |got - exact| <= (2K + 4) * u * (|a| @ |b| + |bias|) + 2 * v * |exact|
with u the unit roundoff of the accumulation dtype (2^-24 for f16/bf16/f32, 2^-53 for
f64) and v that of the output dtype (the final rounding of f16 and bf16 results). The
exact product is computed in float64 from the same inputs (for f64 inputs with exact
small-integer-valued parts, see `values`). Integer results must be exact."""
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import (Tally, bf16_bits_to_f32, emit_text, f32_to_bf16_bits, require_backend, run_outputs,  # noqa: E402
                    test_subset)

U_ACC = {"f16": 2.0**-24, "bf16": 2.0**-24, "f32": 2.0**-24, "f64": 2.0**-53}
U_OUT = {"f16": 2.0**-11, "bf16": 2.0**-8, "f32": 2.0**-24, "f64": 2.0**-53}
NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}

T = Tally()


def values(rng, dt, shape):
    """Random inputs of dt as float64 (the exact values the program sees) and the array
    to save. bf16 travels as its bits."""
    if dt in ("i32", "i64"):
        v = rng.integers(-3, 4, size=shape)
        return v.astype(np.float64), v.astype(NP[dt])
    v = rng.uniform(-1, 1, size=shape)
    if dt == "bf16":
        bits = f32_to_bf16_bits(v.astype(np.float32))
        return bf16_bits_to_f32(bits).astype(np.float64), bits
    x = v.astype(NP[dt])
    return x.astype(np.float64), x


def bound_errors(got, exact, bound, dt):
    """Failure lines: got (dt's saved array) against exact, within bound per element."""
    if dt == "bf16":
        got = bf16_bits_to_f32(got)
    got = np.asarray(got, dtype=np.float64)
    if got.shape != exact.shape:
        return [f"shape {list(got.shape)} != {list(exact.shape)}"]
    inf = np.isinf(exact)  # (a causal mask's -inf): only itself will do
    if np.any(inf & (got != exact)):
        i = np.unravel_index(int(np.argmax(inf & (got != exact))), got.shape)
        return [f"at {list(i)} got {got[i]!r}, exact {exact[i]!r}"]
    err = np.abs(np.where(inf, 0, got) - np.where(inf, 0, exact)) - np.where(inf, 0, bound)
    if got.size and np.any(err > 0):
        i = np.unravel_index(int(np.argmax(err)), err.shape)
        return [f"at {list(i)} got {got[i]!r}, exact {exact[i]!r}, bound {bound[i]:.3g}"]
    return []


def shape_str(dt, shape):
    return f"{dt}[{', '.join(str(s) for s in shape)}]"


class Batch:
    """Cases gathered into programs of several outputs: each case's parameters renamed
    apart (c<N>_<name>), its expression one more element of the returned tuple, its
    result checked alone. A program per case made this script one of the slowest
    (each C program is a gcc run); PER_PROGRAM cases share one now."""
    PER_PROGRAM = 30

    def __init__(self, tdslc, backend):
        self.tdslc, self.backend, self.pending = tdslc, backend, []

    def add(self, name, params, expr, dt, out_dt, vals, arrs, want, mag, k):
        self.pending.append((name, params, expr, dt, out_dt, vals, arrs, want, mag, k))
        if len(self.pending) == self.PER_PROGRAM:
            self.flush()

    def flush(self):
        cases, self.pending = self.pending, []
        if not cases:
            return
        decls, exprs, rets, inputs = [], [], [], {}
        for n, (_, params, expr, dt, out_dt, _, arrs, want, _, _) in enumerate(cases):
            for pname, shape in params:
                decls.append(f"c{n}_{pname}: {shape_str(dt, shape)}")
                inputs[f"c{n}_{pname}"] = arrs[pname]
                expr = re.sub(rf"(?<![\w.]){pname}(?![\w(])", f"c{n}_{pname}", expr)
            exprs.append(expr)
            rets.append(shape_str(out_dt, want.shape))
        src = f"fn f({', '.join(decls)}) -> ({', '.join(rets)}) {{\n    return {', '.join(exprs)}\n}}"
        p, outs = run_outputs(self.tdslc, src, inputs, backend=self.backend)
        for n, (name, _, _, dt, out_dt, _, _, want, mag, k) in enumerate(cases):
            if p.returncode != 0 or len(outs) != len(cases):
                T.report(name, [f"tdslc failed: {p.stderr.decode(errors='replace').strip()[:300]}"], src)
                continue
            got = outs[n]
            if out_dt in ("i32", "i64"):
                T.check(name, np.array_equal(got, want.astype(NP[out_dt])), "integer result differs")
                continue
            acc = dt if dt in U_ACC else "f32"
            bound = (2 * k + 4) * U_ACC[acc] * mag + 2 * U_OUT[out_dt] * np.abs(want) + 1e-300
            if out_dt in ("f16", "bf16"):
                bound = bound + 2 * U_OUT[out_dt] * np.abs(want)
            errs = bound_errors(got, want, bound, out_dt)
            T.report(name, errs, src if errs else None)


BATCH = None


def case(tdslc, backend, rng, name, params, expr, dt="f32", out_dt=None, epilogue=None):
    """params: [(name, shape)] of dt; expr: the result written with them, and `exact`
    computes it from the float64 values (returns (result, |a|@|b| bound base)). Run
    with the other cases of its program (Batch)."""
    out_dt = out_dt or dt
    vals, arrs = {}, {}
    for pname, shape in params:
        vals[pname], arrs[pname] = values(rng, dt, shape)
    want, mag, k = epilogue(vals)
    BATCH.add(name, params, expr, dt, out_dt, vals, arrs, np.asarray(want), mag, k)


def mm(a_expr, b_expr):
    """An epilogue-free exact product of the transformed inputs."""
    def f(v):
        a, b = a_expr(v), b_expr(v)
        return np.matmul(a, b), np.matmul(np.abs(a), np.abs(b)), a.shape[-1]
    return f


LAYOUTS = {
    # name: (a's declared shape, b's declared shape, expression, a, b as NumPy views)
    "nn": (lambda m, k, n: ((m, k), (k, n)), "a @ b", lambda v: v["a"], lambda v: v["b"]),
    "nt": (lambda m, k, n: ((m, k), (n, k)), "a @ b.t()", lambda v: v["a"], lambda v: v["b"].T),
    "tn": (lambda m, k, n: ((k, m), (k, n)), "a.t() @ b", lambda v: v["a"].T, lambda v: v["b"]),
    "tt": (lambda m, k, n: ((k, m), (n, k)), "a.t() @ b.t()", lambda v: v["a"].T, lambda v: v["b"].T),
}

SIZES = [(1, 1, 1), (1, 131, 37), (3, 7, 17), (8, 64, 33), (9, 17, 129), (17, 129, 3), (7, 131, 40),
         (37, 29, 41), (64, 64, 64), (129, 17, 7), (100, 257, 70)]


def layouts(tdslc, backend, rng):
    for lname, (shapes, expr, fa, fb) in LAYOUTS.items():
        for m, k, n in SIZES:
            sa, sb = shapes(m, k, n)
            case(tdslc, backend, rng, f"{lname} {m}x{k}x{n}", [("a", sa), ("b", sb)], expr, epilogue=mm(fa, fb))
    # A packed with K past a block (KC_PACKED_MAX): blocks of 368, 368 and 364 terms
    case(tdslc, backend, rng, "tn long k", [("a", (1100, 100)), ("b", (1100, 200))], "a.t() @ b",
         epilogue=mm(lambda v: v["a"].T, lambda v: v["b"]))


def views_and_batches(tdslc, backend, rng):
    # sliced operands (steps and offsets), a flipped one, a row of a matrix
    case(tdslc, backend, rng, "sliced", [("a", (40, 70)), ("b", (100, 50))], "a[1::2, 3:53] @ b[::2, 5:40]",
         epilogue=mm(lambda v: v["a"][1::2, 3:53], lambda v: v["b"][::2, 5:40]))
    case(tdslc, backend, rng, "sliced nt", [("a", (30, 70)), ("b", (90, 61))], "a[2:29, :60] @ b[1::3, 1:].t()",
         epilogue=mm(lambda v: v["a"][2:29, :60], lambda v: v["b"][1::3, 1:].T))
    case(tdslc, backend, rng, "flipped", [("a", (20, 33)), ("b", (33, 19))], "a.flip(0) @ b.flip(1)",
         epilogue=mm(lambda v: v["a"][::-1], lambda v: v["b"][:, ::-1]))
    # batches: plain, expanded (stride 0), broadcast from the right, a 2-D weight
    case(tdslc, backend, rng, "bmm", [("a", (4, 17, 9)), ("b", (4, 9, 23))], "bmm(a, b)",
         epilogue=mm(lambda v: v["a"], lambda v: v["b"]))
    case(tdslc, backend, rng, "expanded batch", [("a", (5, 20, 31)), ("b", (31, 18))],
         "a @ b.unsqueeze(0).expand(5, 31, 18)", epilogue=mm(lambda v: v["a"], lambda v: v["b"]))
    case(tdslc, backend, rng, "broadcast batch", [("a", (2, 3, 13, 16)), ("b", (3, 16, 21))], "a @ b",
         epilogue=mm(lambda v: v["a"], lambda v: v["b"]))
    case(tdslc, backend, rng, "linear 3d", [("x", (2, 24, 48)), ("w", (40, 48))], "x @ w.t()",
         epilogue=mm(lambda v: v["x"], lambda v: v["w"].T))
    # the batch folded into the rows (w reads no batch dim, everything flat) or not
    case(tdslc, backend, rng, "folded residual", [("x", (2, 24, 48)), ("w", (40, 48)), ("r", (2, 24, 40))],
         "x @ w.t() + r", epilogue=lambda v: (v["x"] @ v["w"].T + v["r"],
                                              np.abs(v["x"]) @ np.abs(v["w"]).T + np.abs(v["r"]), 48))
    case(tdslc, backend, rng, "broadcast residual", [("x", (2, 24, 48)), ("w", (40, 48)), ("r", (2, 1, 40))],
         "x @ w.t() + r", epilogue=lambda v: (v["x"] @ v["w"].T + v["r"],
                                              np.abs(v["x"]) @ np.abs(v["w"]).T + np.abs(v["r"]), 48))
    case(tdslc, backend, rng, "batch not flat", [("x", (24, 2, 48)), ("w", (40, 48))], "x.transpose(0, 1) @ w.t()",
         epilogue=mm(lambda v: np.swapaxes(v["x"], 0, 1), lambda v: v["w"].T))
    case(tdslc, backend, rng, "heads", [("q", (2, 3, 20, 16)), ("k", (2, 3, 20, 16))], "q @ k.transpose(-2, -1)",
         epilogue=mm(lambda v: v["q"], lambda v: np.swapaxes(v["k"], -2, -1)))
    case(tdslc, backend, rng, "many batches", [("q", (24, 9, 16)), ("k", (24, 16, 9))], "q @ k",
         epilogue=mm(lambda v: v["q"], lambda v: v["k"]))
    # PyTorch's 1-D rules
    case(tdslc, backend, rng, "vec @ mat", [("v", (70,)), ("b", (70, 45))], "v @ b",
         epilogue=mm(lambda v: v["v"], lambda v: v["b"]))
    case(tdslc, backend, rng, "mat @ vec", [("a", (45, 70)), ("v", (70,))], "a @ v",
         epilogue=mm(lambda v: v["a"], lambda v: v["v"]))
    case(tdslc, backend, rng, "vec @ vec", [("u", (77,)), ("v", (77,))], "u @ v",
         epilogue=mm(lambda v: v["u"], lambda v: v["v"]))
    case(tdslc, backend, rng, "batch @ vec", [("a", (3, 19, 40)), ("v", (40,))], "a @ v",
         epilogue=mm(lambda v: v["a"], lambda v: v["v"]))
    case(tdslc, backend, rng, "vec @ batch", [("v", (40,)), ("b", (3, 40, 19))], "v @ b",
         epilogue=mm(lambda v: v["v"], lambda v: v["b"]))


def dtypes(tdslc, backend, rng):
    for dt in ("f16", "bf16", "f64"):  # matmul of ints is PyTorch's error (its CUDA table)
        for lname in ("nn", "nt"):
            shapes, expr, fa, fb = LAYOUTS[lname]
            for m, k, n in ((5, 33, 19), (40, 70, 37)):
                sa, sb = shapes(m, k, n)
                case(tdslc, backend, rng, f"{dt} {lname} {m}x{k}x{n}", [("a", sa), ("b", sb)], expr, dt=dt,
                     epilogue=mm(fa, fb))


def epilogues(tdslc, backend, rng):
    def biased(v):
        p = v["x"] @ v["w"].T
        return np.maximum(p + v["c"], 0), np.abs(v["x"]) @ np.abs(v["w"]).T + np.abs(v["c"]), v["x"].shape[-1]
    case(tdslc, backend, rng, "linear relu", [("x", (33, 50)), ("w", (29, 50)), ("c", (29,))],
         "relu(x @ w.t() + c)", epilogue=biased)
    case(tdslc, backend, rng, "linear relu long k", [("x", (33, 7000)), ("w", (29, 7000)), ("c", (29,))],
         "relu(x @ w.t() + c)", epilogue=biased)  # k blocks: the sums wait in relu's buffer
    case(tdslc, backend, rng, "long k", [("a", (40, 7001)), ("b", (7001, 37))], "a @ b",
         epilogue=mm(lambda v: v["a"], lambda v: v["b"]))
    case(tdslc, backend, rng, "f16 out long k", [("x", (33, 7000)), ("w", (29, 7000))], "(x @ w.t()).half()",
         out_dt="f16", epilogue=mm(lambda v: v["x"], lambda v: v["w"].T))
    case(tdslc, backend, rng, "linear relu decode", [("x", (2, 50)), ("w", (29, 50)), ("c", (29,))],
         "relu(x @ w.t() + c)", epilogue=biased)

    def scaled(v):
        p = v["a"] @ v["b"]
        return p * 0.5 - 1, np.abs(v["a"]) @ np.abs(v["b"]) + 2, v["a"].shape[-1]
    case(tdslc, backend, rng, "scaled f16 out", [("a", (21, 40)), ("b", (40, 35))], "(a @ b * 0.5 - 1).half()",
         out_dt="f16", epilogue=scaled)
    case(tdslc, backend, rng, "residual", [("a", (21, 40)), ("b", (40, 40))], "a @ b * 0.5 - 1",
         epilogue=scaled)

    # prologues: a norm computed as the matmul packs its operand (ir/fuse.c's matmul_packs)
    def normed(rms):
        def f(v):
            x = v["x"]
            if rms:
                n = v["g"] * (x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6))
            else:
                n = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * v["g"] + v["h"]
            return n @ v["w"].T + v["c"], np.abs(n) @ np.abs(v["w"]).T + np.abs(v["c"]), x.shape[-1] + 8
        return f
    norm = [("x", (3, 19, 48)), ("g", (48,)), ("h", (48,)), ("w", (70, 48)), ("c", (70,))]
    case(tdslc, backend, rng, "layer norm prologue", norm, "F.linear(F.layer_norm(x, (48,), g, h), w, c)",
         epilogue=normed(False))
    case(tdslc, backend, rng, "rms norm prologue", norm,
         "g * (x * rsqrt(x.pow(2).mean(-1, keepdim=true) + 1e-6)) @ w.t() + c + 0 * h.sum()",
         epilogue=normed(True))
    case(tdslc, backend, rng, "rms norm prologue long k", [("x", (5, 9, 1800)), ("g", (1800,)), ("h", (1,)),
         ("w", (40, 1800)), ("c", (40,))], "g * (x * rsqrt(x.pow(2).mean(-1, keepdim=true) + 1e-6)) @ w.t() + c + 0 * h",
         epilogue=normed(True))

    # k split where the rows read in place overflow the L1 (ROWS: 1790 terms, blocks of
    # 448 and the rest), transposed with a GELU prologue and not; odd rows and columns
    gelu = np.vectorize(lambda t: 0.5 * t * (1 + math.erf(t / math.sqrt(2))))

    def gelu_pro(v):
        g = gelu(v["x"] + v["c"])
        return g @ v["w"].T + v["d"], np.abs(g) @ np.abs(v["w"]).T + np.abs(v["d"]), v["x"].shape[-1] + 8
    case(tdslc, backend, rng, "gelu prologue k blocks", [("x", (150, 1790)), ("c", (1790,)), ("w", (70, 1790)),
         ("d", (70,))], "F.gelu(x + c) @ w.t() + d", epilogue=gelu_pro)
    # x's 13 rows one column panel (AVX2 and AVX-512): its pack's k lines in parallel (2096
    # terms, then 4), w's rows streamed with the next row panel prefetched (90 rows: 15 panels)
    case(tdslc, backend, rng, "gelu prologue one panel", [("x", (13, 2100)), ("c", (2100,)), ("w", (90, 2100)),
         ("d", (90,))], "F.gelu(x + c) @ w.t() + d", epilogue=gelu_pro)

    def relu_bias(v):
        p = v["x"] @ v["w"].T + v["d"]
        return np.maximum(p, 0), np.abs(v["x"]) @ np.abs(v["w"]).T + np.abs(v["d"]), v["x"].shape[-1]
    case(tdslc, backend, rng, "linear relu k blocks", [("x", (2, 75, 1790)), ("w", (90, 1790)), ("d", (90,))],
         "relu(x @ w.t() + d)", epilogue=relu_bias)

    # a permuted NCHW input (a ConvNeXt block's x.permute(0, 2, 3, 1)): H folds into the
    # rows with W (35 rows a GEMM, N stays a batch), through a layer norm prologue and a
    # GELU epilogue; then the result scaled, permuted back and added to a residual
    def nhwc(v):
        x = np.transpose(v["x"], (0, 2, 3, 1))
        n = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * v["g"] + v["h"]
        return (gelu(n @ v["w"].T + v["c"]), np.abs(n) @ np.abs(v["w"]).T + np.abs(v["c"]), x.shape[-1] + 8)
    case(tdslc, backend, rng, "permuted layer norm gelu", [("x", (2, 24, 5, 7)), ("g", (24,)), ("h", (24,)),
         ("w", (40, 24)), ("c", (40,))], "F.gelu(F.layer_norm(x.permute(0, 2, 3, 1), (24,), g, h) @ w.t() + c)",
         epilogue=nhwc)

    def back(v):
        p = (v["y"] @ v["w"].T + v["e"]) * v["s"]
        mag = np.abs(v["s"]) * (np.abs(v["y"]) @ np.abs(v["w"]).T + np.abs(v["e"]))
        return v["x"] + np.transpose(p, (0, 3, 1, 2)), np.abs(v["x"]) + np.transpose(mag, (0, 3, 1, 2)), 41
    case(tdslc, backend, rng, "permuted back residual", [("x", (2, 24, 5, 7)), ("y", (2, 5, 7, 40)),
         ("w", (24, 40)), ("e", (24,)), ("s", (24,))], "x + (s * (y @ w.t() + e)).permute(0, 3, 1, 2)",
         epilogue=back)


def index_epilogues(tdslc, backend, rng):
    """Epilogues that compute with the output index (tril/triu's mask, a causal mask,
    arange, eye) fused after a matmul. Where w reads no batch dim the batch would fold
    into the rows (one GEMM of batch * M rows): the index such an epilogue sees must
    still be the true one (randprog seed 319: batch 1 of (x @ w).tril() kept its upper
    triangle)."""
    def prod(a_expr, b_expr, f):
        def g(v):
            a, b = a_expr(v), b_expr(v)
            return f(a @ b), np.abs(a) @ np.abs(b), a.shape[-1]
        return g
    x, wt = (lambda v: v["x"]), (lambda v: v["w"].T)
    case(tdslc, backend, rng, "tril folded 2x3x4 @ 4x3", [("x", (2, 3, 4)), ("w", (4, 3))], "(x @ w).tril()",
         epilogue=prod(x, lambda v: v["w"], np.tril))
    # each CPU schedule (dot: few rows, nt; direct: nn; packed: many rows, nt), k from -2 to 2
    for sname, xs, ws in (("dot", (2, 3, 16), (5, 16)), ("direct", (3, 5, 16), (7, 16)),
                          ("packed", (3, 40, 64), (50, 64))):
        for k in (-2, -1, 0, 1, 2)[::test_subset()]:  # the sanitizer pass: a subset
            case(tdslc, backend, rng, f"tril({k}) {sname}", [("x", xs), ("w", ws)], f"torch.tril(x @ w.t(), {k})",
                 epilogue=prod(x, wt, lambda p, k=k: np.tril(p, k)))
            case(tdslc, backend, rng, f"triu({k}) {sname}", [("x", xs), ("w", ws)], f"(x @ w.t()).triu(diagonal={k})",
                 epilogue=prod(x, wt, lambda p, k=k: np.triu(p, k)))
    case(tdslc, backend, rng, "tril direct nn", [("x", (3, 5, 16)), ("w", (16, 7))], "(x @ w).tril()",
         epilogue=prod(x, lambda v: v["w"], np.tril))
    case(tdslc, backend, rng, "tril after bias", [("x", (3, 5, 16)), ("w", (7, 16)), ("c", (7,))],
         "relu(x @ w.t() + c).tril(-1)", epilogue=lambda v: (np.tril(np.maximum(v["x"] @ v["w"].T + v["c"], 0), -1),
                                                           np.abs(v["x"]) @ np.abs(v["w"]).T + np.abs(v["c"]), 16))
    # 4-d: two batch dims folded (a 2-D weight), and attention's scores (k reads the batch)
    case(tdslc, backend, rng, "tril 4-d folded", [("x", (2, 3, 6, 8)), ("w", (8, 6))], "(x @ w).tril()",
         epilogue=prod(x, lambda v: v["w"], np.tril))
    qk = (lambda v: v["q"]), (lambda v: np.swapaxes(v["k"], -2, -1))
    case(tdslc, backend, rng, "causal tril", [("q", (2, 3, 6, 8)), ("k", (2, 3, 6, 8))],
         "(q @ k.transpose(-2, -1)).tril()", epilogue=prod(*qk, np.tril))
    causal = np.tril(np.ones((6, 6))) == 0
    case(tdslc, backend, rng, "causal masked_fill", [("q", (2, 3, 6, 8)), ("k", (2, 3, 6, 8))],
         "(q @ k.transpose(-2, -1)).masked_fill(torch.tril(torch.ones(6, 6)) == 0, float('-inf'))",
         epilogue=prod(*qk, lambda p: np.where(causal, -np.inf, p)))
    case(tdslc, backend, rng, "causal masked_fill folded", [("x", (2, 3, 6, 8)), ("w", (8, 6))],
         "(x @ w).masked_fill(torch.tril(torch.ones(6, 6)) == 0, float('-inf'))",
         epilogue=prod(x, lambda v: v["w"], lambda p: np.where(causal, -np.inf, p)))
    # the row and batch indices used otherwise: arange, eye, a where on indices
    r5, b3 = np.arange(5).reshape(5, 1), np.arange(3).reshape(3, 1, 1)
    others = {"(x @ w.t()) + torch.arange(5).unsqueeze(1)": lambda p: p + r5,
              "(x @ w.t()) * (torch.arange(3).reshape(3, 1, 1) + 1)": lambda p: p * (b3 + 1),
              "(x @ w.t()) + torch.arange(15).reshape(3, 5, 1)": lambda p: p + np.arange(15).reshape(3, 5, 1),
              "(x @ w.t()) * torch.eye(5, 7)": lambda p: p * np.eye(5, 7),
              "torch.where(torch.arange(5).unsqueeze(1) > torch.arange(7), x @ w.t(), 0.0)":
                  lambda p: np.where(r5 > np.arange(7), p, 0.0)}
    for expr, f in others.items():
        case(tdslc, backend, rng, expr, [("x", (3, 5, 16)), ("w", (7, 16))], expr, epilogue=prod(x, wt, f))
    # the fast path stays: an epilogue of values only is folded (no loop over the 7 batches)
    src = "fn f(x: f32[7, 4, 64], w: f32[20, 64], c: f32[20]) -> f32[7, 4, 20] {\n    return %s\n}"
    for expr, folds in (("relu(x @ w.t() + c)", True), ("(x @ w.t() + c).tril()", False)):
        p = emit_text(tdslc, src % expr, "kernels")
        T.check(f"--emit=kernels of {expr!r} {'folds' if folds else 'does not fold'} the batch",
                p.returncode == 0 and (re.search(r"in 0\.\.7\b", p.stdout) is None) == folds, p.stdout + p.stderr)


def empty(tdslc, backend, rng):
    for (m, k, n) in ((0, 5, 4), (3, 0, 4), (3, 5, 0)):
        case(tdslc, backend, rng, f"empty {m}x{k}x{n}", [("a", (m, k)), ("b", (k, n))], "a @ b",
             epilogue=mm(lambda v: v["a"], lambda v: v["b"]))
    # with a bias read in the product's kernel (the empty product's local read at no index: F.linear and
    # nn.MultiheadAttention of an empty batch or sequence)
    for pre, (m, k, n) in (((), (0, 5, 4)), ((2,), (0, 5, 4)), ((), (3, 5, 0))):
        case(tdslc, backend, rng, f"empty {pre}{m}x{k}x{n} + bias", [("a", pre + (m, k)), ("b", (n, k)), ("c", (n,))],
             "a @ b.t() + c", epilogue=lambda v: (v["a"] @ v["b"].T + v["c"],
                                                 np.abs(v["a"]) @ np.abs(v["b"].T) + np.abs(v["c"]), v["a"].shape[-1]))


def schedules(tdslc):
    """--emit=kernels names the schedule each shape gets, with its tile."""
    want = {"fn f(a: f32[200, 64], b: f32[64, 300]) -> f32[200, 300] {\n    return a @ b\n}": "gemm packed",
            "fn f(a: f32[200, 64], b: f32[64, 96]) -> f32[200, 96] {\n    return a @ b\n}": "gemm packed",
            "fn f(a: f32[200, 64], b: f32[96, 64]) -> f32[200, 96] {\n    return a @ b.t()\n}": "gemm packed",
            "fn f(a: f32[4, 64], b: f32[64, 96]) -> f32[4, 96] {\n    return a @ b\n}": "gemm packed",
            "fn f(a: f32[4, 64], b: f32[96, 64]) -> f32[4, 96] {\n    return a @ b.t()\n}": "gemm dot"}
    for src, sched in want.items():
        p = emit_text(tdslc, src, "kernels")
        T.check(f"--emit=kernels of {src.splitlines()[0]!r} says '{sched}'",
                p.returncode == 0 and f"schedule: {sched}" in p.stdout, p.stdout + p.stderr)
    # memory: panels are cache-sized blocks, never a packed copy of a whole operand; and
    # every matmul of a program calls the one micro-kernel function its tile needs
    src = ("fn f(x: f32[64, 768], w: f32[50257, 768], v: f32[768, 3072], a: f32[1024, 1024], b: f32[1024, 1024]) -> "
           "(f32[64, 50257], f32[64, 3072], f32[1024, 1024]) {\n    return x @ w.t(), x @ v, a @ b\n}")
    # (for CPUs of known caches: a host's own L2 sizes the panels, 2 MB ones reach 1/7 of a 1024² operand)
    for cpu in ("znver3", "skylake-avx512"):
        p = emit_text(tdslc, src, "kernels", [f"--cpu={cpu}"])
        temps = [int(m) for m in re.findall(r"^buffer b\d+ temp(?: scratch)? f32\[(\d+)\]", p.stdout, re.M)]
        T.check(f"--cpu={cpu}: packed panels are blocks: no temp of a matmul holds 1/8 of an operand",
                p.returncode == 0 and temps and max(temps) < 1024 * 1024 // 8, f"temps {temps}\n" + p.stderr)
    # a permuted NCHW input's H folds into the rows with W: one GEMM of 35 rows a batch, not 7
    src2 = "fn f(x: f32[2, 24, 5, 7], w: f32[40, 24]) -> f32[2, 5, 7, 40] {\n    return x.permute(0, 2, 3, 1) @ w.t()\n}"
    for cpu in ("host", "znver3"):
        p = emit_text(tdslc, src2, "kernels", [f"--cpu={cpu}"])
        T.check(f"--cpu={cpu}: x.permute(0, 2, 3, 1) @ w.t() folds H into the rows (nc 35)",
                p.returncode == 0 and re.search(r"schedule: gemm packed .* nc 35\b", p.stdout), p.stdout + p.stderr)
    # an operand packed across its rows (b's rows, far apart, into k-major panels) is copied
    # a line of each row at a time (16 f32 terms innermost), not a whole row (256 terms)
    src3 = "fn f(a: f32[200, 256], b: f32[96, 256]) -> f32[200, 96] {\n    return a @ b.t()\n}"
    for cpu in ("host", "znver3"):
        p = emit_text(tdslc, src3, "kernels", [f"--cpu={cpu}"])
        T.check(f"--cpu={cpu}: a @ b.t() packs b's rows a line of 16 terms at a time",
                p.returncode == 0 and re.search(r"for i\d+ in 0\.\.16 \{\n\s*b\d+\[[^\]]*\] = b1\[", p.stdout),
                p.stdout + p.stderr)
    # rows that overflow the L1 split k (ROWS); the row blocks are then sized for a k
    # block's rows (8 row panels of 6 at least), not for the whole K's (6 and 42 rows)
    src4 = "fn f(x: f32[128, 3072], w: f32[768, 3072]) -> f32[128, 768] {\n    return x @ w.t()\n}"
    for cpu in ("znver3", "skylake-avx512"):
        p = emit_text(tdslc, src4, "kernels", [f"--cpu={cpu}"])
        m = re.search(r"schedule: gemm packed 6x\d+ .*\bmc (\d+) kc \d+", p.stdout)
        T.check(f"--cpu={cpu}: x @ w.t() at K = 3072 splits k, its row blocks at least 48 rows",
                p.returncode == 0 and m and int(m.group(1)) >= 48, p.stdout + p.stderr)
    # ... but not where x's 64 rows are one column panel (each row panel meets it once)
    p = emit_text(tdslc, src4.replace("128, ", "64, "), "kernels", ["--cpu=skylake-avx512"])
    m = re.search(r"schedule: gemm packed 6x64 (.*)", p.stdout)
    kc = re.search(r"\bkc (\d+)", m.group(1)) if m else None
    T.check("--cpu=skylake-avx512: 64 x 3072 @ w.t(): no k split for the L1 (k blocks of half the L2 at most)",
            p.returncode == 0 and m and (not kc or int(kc.group(1)) >= 1536), p.stdout + p.stderr)
    # a.t() @ b at 2048^2: A packed in k blocks of at most 512 terms, a block of it under
    # a tenth of the data, so packed whole with the column blocks parallel (COLS)
    src5 = "fn f(a: f32[2048, 2048], b: f32[2048, 2048]) -> f32[2048, 2048] {\n    return a.t() @ b\n}"
    outs = [emit_text(tdslc, src5, "kernels", [f"--cpu={cpu}"]) for cpu in ("znver3", "skylake-avx512")]
    cols = r"schedule: gemm packed \d+x\d+ cols nc \d+ kc 512\b"
    T.check("--cpu=znver3 and skylake-avx512: a.t() @ b at 2048^2 is COLS with k blocks of 512",
            all(p.returncode == 0 and re.search(cols, p.stdout) for p in outs), "".join(p.stdout + p.stderr for p in outs))
    # x @ w.t() at 64 tokens streams w's rows: its micro-kernel prefetches the next row
    # panel; a square a @ b.t() (16 or 64 column panels meet each row panel) does not
    src7 = "fn f(x: f32[64, 768], w: f32[3072, 768]) -> f32[64, 3072] {\n    return x @ w.t()\n}"
    src8 = "fn f(a: f32[1024, 256], b: f32[1024, 256]) -> f32[1024, 1024] {\n    return a @ b.t()\n}"
    for cpu in ("host", "znver3"):
        for s, want in ((src7, True), (src8, False)):
            p = emit_text(tdslc, s, "kernels", [f"--cpu={cpu}"])
            got = bool(re.search(r"^\s*prefetch b\d+\[", p.stdout, re.M))
            T.check(f"--cpu={cpu}: {s.splitlines()[0]!r} prefetches A's next rows: {want}",
                    p.returncode == 0 and got == want, p.stdout[:3000] + p.stderr)
    # the micro-kernel's k loop takes 4 terms a step (then the kc % 4 left) where A's rows
    # are read in place (a @ b) or both operands are packed (a.t() @ b), and the packed
    # panels' lines are prefetched ahead, a line (16 f32 terms) at a time: 4 * NR terms of
    # B a step and 4 * MR of A
    for cpu in ("znver3", "skylake-avx512"):
        for s, pf in (("a @ b", False), ("a.t() @ b", True)):
            p = emit_text(tdslc, "fn f(a: f32[200, 200], b: f32[200, 200]) -> f32[200, 200] {\n    return %s\n}" % s,
                          "kernels", [f"--cpu={cpu}"])
            fn = p.stdout.split("\nkernel ")[0]
            steps = re.search(r"^  for i0 in 0\.\.floor_divide\(a0, 4\) .*\n(?:    .*\n)*?  \}\n"
                              r"  for i1 in 0\.\.remainder\(a0, 4\)", fn, re.M)
            got = (len(re.findall(r"^    prefetch b1\[", fn, re.M)), len(re.findall(r"^    prefetch b0\[", fn, re.M)))
            tile = re.search(r"schedule: gemm packed (\d+)x(\d+)", p.stdout)
            mr, nr = (int(tile.group(1)), int(tile.group(2))) if tile else (0, 0)
            want = ((4 * nr + 15) // 16, (4 * mr + 15) // 16) if pf else (0, 0)
            T.check(f"--cpu={cpu}: {s}'s micro-kernel takes 4 terms a step, prefetching {want} lines of B and A",
                    p.returncode == 0 and steps and got == want, f"{got}\n" + fn[:3000] + p.stderr)
    p = emit_text(tdslc, src, "kernels")
    funs = re.split(r"^function f\d+", p.stdout, flags=re.M)[1:]
    plain = [f for f in funs if not re.search(r"^\s*prefetch ", f.split("\nkernel ")[0], re.M)]
    T.check("three matmuls call at most two micro-kernel functions (and x @ w.t()'s prefetching one)",
            p.returncode == 0 and 1 <= len(plain) <= 2 and len(funs) <= 3, p.stdout[:2000])


def main():
    global BATCH
    tdslc = sys.argv[1]
    backend = require_backend(tdslc)
    BATCH = Batch(tdslc, backend)
    rng = np.random.default_rng(12)
    layouts(tdslc, backend, rng)
    views_and_batches(tdslc, backend, rng)
    dtypes(tdslc, backend, rng)
    epilogues(tdslc, backend, rng)
    index_epilogues(tdslc, backend, rng)
    empty(tdslc, backend, rng)
    BATCH.flush()
    schedules(tdslc)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
