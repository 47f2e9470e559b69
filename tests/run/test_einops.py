#!/usr/bin/python3
"""tests/run/test_einops.py TDSLC: einops' rearrange, repeat, reduce, einsum, pack and unpack against NumPy
written from einops' documented meaning (its README's and docstrings' examples: the
transposes, space-to-depth, attention's head split and merge, the list of images stacked,
concatenated and split, repeat as broadcast, tile and upsampling, max and average pooling,
global pooling, the per-channel mean subtracted), with named and anonymous axes,
parentheses, `...`, `()` and `1`, sizes as keywords, every reduction einops has, every
dtype, non-contiguous inputs and a recipe of more elementary axes than a tensor's dims.
Each program runs and is compared with NumPy on the same inputs; the pure rearranges (and
repeats that are broadcasts) are checked to compile to no kernel at all (--emit=ir), and
those einops computes with a copy to exactly one. The LLVM pass also emits each program as
CUDA C and PTX.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, bf16_bits_to_f32, compare_kinds, emit_text, gpu_emit_errors, f32_to_bf16_bits,  # noqa: E402
                    require_backend, run_outputs, test_subset)

RNG = np.random.default_rng(30)
INTS = {"u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}


def value(dtype, shape):
    """Random inputs of dtype: what is passed to tdslc, and its values (floats in f64)."""
    if dtype in INTS:
        a = RNG.integers(0 if dtype == "u8" else -3, 4, size=shape).astype(INTS[dtype])
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


def R(x, *shape):
    return np.reshape(x, shape)


def T(x, *perm):
    return np.transpose(x, perm)


def pool(x, op, k1, k2):
    """x [b, c, h, w] reduced over k1 x k2 windows (einops' 'b c (h h2) (w w2) -> b c h w')."""
    b, c, h, w = x.shape
    return op(x.reshape(b, c, h // k1, k1, w // k2, k2), axis=(3, 5))


# (name, params [(name, dtype, shape)], body lines, the returned expressions, their
# dtypes, the NumPy values over the params' values)
CASES = [
    # einops' README: rearrange
    ("transpose", [("x", "f32", (2, 3, 4, 5))], [],
     "einops.rearrange(x, 'b c h w -> b h w c'), einops.rearrange(x, 'b c h w -> w h c b')", ["f32"] * 2,
     lambda x: [T(x, 0, 2, 3, 1), T(x, 3, 2, 1, 0)]),
    ("space_to_depth", [("x", "f32", (2, 3, 4, 6))], [],
     "einops.rearrange(x, 'b c (h h2) (w w2) -> b (c h2 w2) h w', h2=2, w2=2), "
     "einops.rearrange(x, 'b c (h h1) (w w1) -> b h w (c h1 w1)', h1=2, w1=3)", ["f32"] * 2,
     lambda x: [R(T(R(x, 2, 3, 2, 2, 3, 2), 0, 1, 3, 5, 2, 4), 2, 12, 2, 3),
                R(T(R(x, 2, 3, 2, 2, 2, 3), 0, 2, 4, 1, 3, 5), 2, 2, 2, 18)]),
    ("depth_to_space", [("x", "f32", (2, 12, 2, 3))], [],
     "einops.rearrange(x, 'b (c h2 w2) h w -> b c (h h2) (w w2)', h2=2, w2=2)", ["f32"],
     lambda x: [R(T(R(x, 2, 3, 2, 2, 2, 3), 0, 1, 4, 2, 5, 3), 2, 3, 4, 6)]),
    ("attention_heads", [("q", "f32", (2, 7, 24)), ("o", "f32", (2, 4, 7, 6))], [],
     "einops.rearrange(q, 'b n (h d) -> b h n d', h=4), einops.rearrange(o, 'b h n d -> b n (h d)'), "
     "einops.rearrange(q, 'b n (h d) -> (b h) n d', d=6)", ["f32"] * 3,
     lambda q, o: [T(R(q, 2, 7, 4, 6), 0, 2, 1, 3), R(T(o, 0, 2, 1, 3), 2, 7, 24),
                   R(T(R(q, 2, 7, 4, 6), 0, 2, 1, 3), 8, 7, 6)]),
    ("images_list", [("a", "f32", (6, 4, 3)), ("b", "f32", (6, 4, 3)), ("c", "f32", (6, 4, 3))],
     ["ims = [a, b, c]"],
     "einops.rearrange(ims, 'b h w c -> b h w c'), einops.rearrange(ims, 'b h w c -> b c h w'), "
     "einops.rearrange(ims, 'b h w c -> (b h) w c'), einops.rearrange(ims, 'b h w c -> h (b w) c'), "
     "einops.rearrange(ims, 'b h w c -> b (c h w)'), "
     "einops.rearrange(ims, 'b (h1 h) (w1 w) c -> (b h1 w1) h w c', h1=2, w1=2), "
     "einops.rearrange(ims, 'b (h h1) (w w1) c -> b h w (c h1 w1)', h1=2, w1=2)", ["f32"] * 7,
     lambda a, b, c: (lambda s: [s, T(s, 0, 3, 1, 2), R(s, 18, 4, 3), R(T(s, 1, 0, 2, 3), 6, 12, 3),
                                 R(T(s, 0, 3, 1, 2), 3, 72),
                                 R(T(R(s, 3, 2, 3, 2, 2, 3), 0, 1, 3, 2, 4, 5), 12, 3, 2, 3),
                                 R(T(R(s, 3, 3, 2, 2, 2, 3), 0, 1, 3, 5, 2, 4), 3, 3, 2, 12)])(np.stack([a, b, c]))),
    ("list_mixed_dtypes", [("a", "i32", (2, 3)), ("b", "f16", (2, 3))], [],
     "einops.rearrange([a, b], 'n h w -> h (n w)')", ["f16"],
     lambda a, b: [R(T(np.stack([a, b]), 1, 0, 2), 2, 6).astype(np.float16)]),
    ("patches", [("x", "f32", (2, 4, 6, 3))], [],
     "einops.rearrange(x, 'b (h p1) (w p2) c -> b (h w) (p1 p2 c)', p1=2, p2=3), "
     "einops.rearrange(x, 'b (h p1) (w p2) c -> (b h w) p1 p2 c', p1=2, p2=2)", ["f32"] * 2,
     lambda x: [R(T(R(x, 2, 2, 2, 2, 3, 3), 0, 1, 3, 2, 4, 5), 2, 4, 18),
                R(T(R(x, 2, 2, 2, 3, 2, 3), 0, 1, 3, 2, 4, 5), 12, 2, 2, 3)]),
    ("units", [("x", "f32", (3, 1, 4)), ("y", "f32", (3, 4))], [],
     "einops.rearrange(x, 'a 1 b -> a b'), einops.rearrange(x, 'a () b -> b a'), einops.rearrange(y, 'a b -> a 1 b'), "
     "einops.rearrange(y, 'a b -> () a () b ()'), einops.rearrange(y, 'a (b 1) -> (1 b) a'), "
     "einops.rearrange(x, 'a (1 c) b -> (c b a)')", ["f32"] * 6,
     lambda x, y: [R(x, 3, 4), R(x, 3, 4).T, R(y, 3, 1, 4), R(y, 1, 3, 1, 4, 1), y.T, R(T(x, 1, 2, 0), 12)]),
    ("ellipsis", [("x", "f32", (2, 3, 4, 5))], [],
     "einops.rearrange(x, '... h w -> ... (h w)'), einops.rearrange(x, 'b ... -> ... b'), "
     "einops.rearrange(x, 'b ... c -> b c ...'), einops.rearrange(x, '... -> (...)'), "
     "einops.rearrange(x, 'b ... -> b (...)'), einops.rearrange(x, 'a b c d ... -> d c ... b a'), "
     "einops.rearrange(x, '... a b c d -> (b ...) a c d')", ["f32"] * 7,
     lambda x: [R(x, 2, 3, 20), T(x, 1, 2, 3, 0), T(x, 0, 3, 1, 2), R(x, 120), R(x, 2, 60), T(x, 3, 2, 1, 0),
                R(x, 2, 3, 4, 5).transpose(1, 0, 2, 3)]),
    ("ellipsis_groups", [("x", "f32", (6, 4, 5))], [],
     "einops.rearrange(x, '(a b) ... -> a (... b)', a=2), einops.rearrange(x, '(a b) ... c -> b a ... c', b=2)",
     ["f32"] * 2,
     lambda x: [R(T(R(x, 2, 3, 4, 5), 0, 2, 3, 1), 2, 60), T(R(x, 3, 2, 4, 5), 1, 0, 2, 3)]),
    ("identity_and_names", [("x", "f32", (2, 3, 4))], [],
     "einops.rearrange(x, 'a b c -> a b c'), einops.rearrange(x, 'batch seq_len d_model -> d_model batch seq_len'), "
     "einops.rearrange(x, ' a  b   c->c b a '), einops.rearrange(x, 'a2 b_3 C -> (C a2) b_3')", ["f32"] * 4,
     lambda x: [x, T(x, 2, 0, 1), T(x, 2, 1, 0), R(T(x, 2, 0, 1), 8, 3)]),
    ("non_contiguous", [("x", "f32", (4, 3, 6))], ["y = x.transpose(0, 2)", "z = x[:, 1:, ::2]"],
     "einops.rearrange(y, 'a b c -> (a b) c'), einops.rearrange(y, '(a a2) b c -> a (b a2) c', a2=2), "
     "einops.rearrange(z, 'a b c -> c (a b)'), einops.reduce(y, 'a b c -> c', 'sum'), "
     "einops.repeat(z, 'a b c -> a b c r', r=2)", ["f32"] * 5,
     lambda x: (lambda y, z: [R(y, 18, 4), R(T(R(y, 3, 2, 3, 4), 0, 2, 1, 3), 3, 6, 4), R(T(z, 2, 0, 1), 3, 8),
                              y.sum((0, 1)), np.repeat(z[..., None], 2, 3)])(T(x, 2, 1, 0), x[:, 1:, ::2])),
    ("many_axes", [("x", "f32", (2, 4, 4, 2))], [],
     "einops.rearrange(x, '(a1 a2) (b1 b2) (c1 c2) d -> a1 a2 (b1 b2 c1) c2 d', a1=1, b1=2, c1=2), "
     "einops.rearrange(x, '(a1 a2) (b1 b2) (c1 c2) (d1 d2) -> (a1 a2 b1) (b2 c1 c2) d1 d2', a1=2, b1=2, c1=2, d1=1), "
     "einops.reduce(x, '(a1 a2) (b1 b2) (c1 c2) (d1 d2) -> a1 a2 d1', 'sum', a1=2, b1=2, c1=2, d1=2)",
     ["f32"] * 3,
     lambda x: [R(x, 1, 2, 8, 2, 2), R(x, 4, 8, 1, 2), R(x.sum((1, 2)), 2, 1, 2)]),
    # einops' own test suite's patterns (tests/test_ops.py: identity_patterns,
    # equivalent_rearrange_patterns, equivalent_reduction_patterns), each with the NumPy it means
    ("suite_identity", [("x", "f32", (2, 3, 4, 5, 6))], [],
     ", ".join(f"einops.rearrange(x, '{p}')" for p in [
         "...->...", "a b c d e-> a b c d e", "a b c d e ...-> ... a b c d e", "a b c d e ...-> a ... b c d e",
         "... a b c d e -> ... a b c d e", "a ... e-> a ... e", "a ... -> a ... ", "a ... c d e -> a (...) c d e"]),
     ["f32"] * 8, lambda x: [x] * 8),
    ("suite_equivalent", [("x", "f32", (2, 3, 4, 5, 6))], [],
     ", ".join(f"einops.rearrange(x, '{p}')" for p in [
         "a b c d e -> (a b) c d e", "a b ... -> (a b) ... ", "a b c d e -> a b (c d) e", "... c d e -> ... (c d) e",
         "a b c d e -> a b c d e", "... -> ... ", "a b c d e -> (a b c d e)", "... ->  (...)",
         "a b c d e -> b (c d e) a", "a b ... -> b (...) a", "a b c d e -> b (a c d) e", "a b ... e -> b (a ...) e"]),
     ["f32"] * 12,
     lambda x: [R(x, 6, 4, 5, 6)] * 2 + [R(x, 2, 3, 20, 6)] * 2 + [x] * 2 + [R(x, 720)] * 2 +
               [R(T(x, 1, 2, 3, 4, 0), 3, 120, 2)] * 2 + [R(T(x, 1, 0, 2, 3, 4), 3, 40, 6)] * 2),
    ("suite_reductions", [("x", "f64", (2, 3, 4, 5, 6))], [],
     ", ".join(f"einops.reduce(x, '{p}', '{r}')" for r in ["sum", "max"] for p in [
         "a b c d e -> ", " ... ->  ", "a b c d e -> (e a)", "a ... e -> (e a)", "a b c d e -> d (a e)",
         " a b c d e ... -> d (a e) ", "a b c d e -> (a b)", " ... c d e  -> (...) "]),
     ["f64"] * 16,
     lambda x: [w for f in (np.sum, np.max) for w in
                [f(x)] * 2 + [R(f(x, (1, 2, 3)).T, 12)] * 2 + [R(T(f(x, (1, 2)), 1, 0, 2), 5, 12)] * 2 +
                [R(f(x, (2, 3, 4)), 6)] * 2]),
    # repeat (einops' docstring)
    ("repeat", [("x", "f32", (3, 4))], [],
     "einops.repeat(x, 'h w -> h w c', c=3), einops.repeat(x, 'h w -> (repeat h) w', repeat=2), "
     "einops.repeat(x, 'h w -> (h2 h) (w3 w)', h2=2, w3=3), einops.repeat(x, 'h w -> (h h2) (w w2)', h2=2, w2=2), "
     "einops.repeat(x, 'h w -> c h w', c=2), einops.repeat(x, 'h w -> h 2 w'), einops.repeat(x, 'h w -> w h'), "
     "einops.repeat(x, '... -> b ...', b=2), einops.repeat(x, 'h w -> (w b) h', b=2)", ["f32"] * 9,
     lambda x: [np.repeat(x[..., None], 3, 2), np.tile(x, (2, 1)), np.tile(x, (2, 3)),
                np.repeat(np.repeat(x, 2, 0), 2, 1), np.stack([x, x]), np.stack([x, x], 1), x.T, np.stack([x, x]),
                np.repeat(x.T, 2, 0)]),
    ("repeat_pixelate", [("x", "f32", (6, 8))], [],
     "einops.repeat(einops.reduce(x, '(h h2) (w w2) -> h w', 'mean', h2=2, w2=2), 'h w -> (h h2) (w w2)', h2=2, w2=2)",
     ["f32"], lambda x: [np.repeat(np.repeat(x.reshape(3, 2, 4, 2).mean((1, 3)), 2, 0), 2, 1)]),
    ("repeat_dtypes", [("i", "i64", (2, 3)), ("m", "bool", (2, 3)), ("h", "bf16", (3,))], [],
     "einops.repeat(i, 'a b -> (a r) b', r=2), einops.repeat(m, 'a b -> b a c', c=2), einops.repeat(h, 'c -> b c', b=4)",
     ["i64", "bool", "bf16"], lambda i, m, h: [np.repeat(i, 2, 0), np.repeat(m.T[..., None], 2, 2), np.stack([h] * 4)]),
    # reduce (einops' docstring)
    ("reduce_docs", [("x", "f32", (5, 2, 3)), ("y", "f32", (2, 3, 6, 8))], [],
     "einops.reduce(x, 't b c -> b c', 'max'), einops.reduce(x, 'time batch channel -> batch channel', 'max'), "
     "einops.reduce(y, 'b c (h1 h2) (w1 w2) -> b c h1 w1', 'max', h2=2, w2=2), "
     "einops.reduce(y, 'b c (h1 2) (w1 2) -> b c h1 w1', 'max'), "
     "einops.reduce(y, 'b c (h1 h2) (w1 w2) -> b c h1 w1', 'max', h1=3, w1=4), "
     "einops.reduce(y, 'b c h w -> b c', 'mean'), y - einops.reduce(y, 'b c h w -> 1 c 1 1', 'mean'), "
     "y - einops.reduce(y, 'b c h w -> b c 1 1', 'mean'), y - einops.reduce(y, 'b c h w -> b c () ()', 'mean')",
     ["f32"] * 9,
     lambda x, y: [x.max(0), x.max(0), pool(y, np.max, 2, 2), pool(y, np.max, 2, 2), pool(y, np.max, 2, 2),
                   y.mean((2, 3)), y - y.mean((0, 2, 3), keepdims=True), y - y.mean((2, 3), keepdims=True),
                   y - y.mean((2, 3), keepdims=True)]),
    ("reductions", [("x", "f32", (2, 3, 4))], [],
     "einops.reduce(x, 'a b c -> a', 'sum'), einops.reduce(x, 'a b c -> c a', 'min'), "
     "einops.reduce(x, 'a b c -> b', 'prod'), einops.reduce(x, 'a b c -> (c a)', 'mean'), "
     "einops.reduce(x > 0, 'a b c -> a c', 'any'), einops.reduce(x > -0.5, 'a b c -> b', 'all'), "
     "einops.reduce(x, 'a ... -> a', 'max'), einops.reduce(x, '... c -> c', 'sum'), einops.reduce(x, 'a b c ->', 'sum'), "
     "einops.reduce(x, 'a b (c 2) -> b a', 'sum')", ["f32", "f32", "f32", "f32", "bool", "bool", "f32", "f32",
                                                      "f32", "f32"],
     lambda x: [x.sum((1, 2)), x.min(1).T, x.prod((0, 2)), x.mean(1).T.reshape(8), (x > 0).any(1),
                (x > -0.5).all((0, 2)), x.max((1, 2)), x.sum((0, 1)), x.sum(), x.sum(2).T]),
    ("reduce_ints", [("i", "i32", (2, 3, 4)), ("m", "bool", (2, 3)), ("u", "u8", (2, 4))], [],
     "einops.reduce(i, 'a b c -> a', 'sum'), einops.reduce(m, 'a b -> b', 'sum'), einops.reduce(i, 'a b c -> c', 'prod'), "
     "einops.reduce(i, 'a b c -> c b', 'max'), einops.reduce(u, 'a b -> a', 'min'), einops.reduce(i, 'a b c -> c a b', 'mean'), "
     "einops.reduce(i, 'a b c -> a c', 'any'), einops.reduce(u, '(a 2) b -> b', 'sum')",
     ["i64", "i64", "i64", "i32", "u8", "i32", "bool", "i64"],
     lambda i, m, u: [i.sum((1, 2)), m.sum(0), np.prod(i, (0, 1), dtype=np.int64), i.max(0).T, u.min(1),
                      T(i, 2, 0, 1), (i != 0).any(1), u.astype(np.int64).sum(0)]),
    ("reduce_halves", [("h", "f16", (4, 6)), ("b", "bf16", (3, 4))], [],
     "einops.reduce(h, 'a (b 3) -> b', 'mean'), einops.reduce(h, 'a b -> a', 'sum'), einops.reduce(b, 'a b -> b', 'max'), "
     "einops.reduce(b, 'a b -> a', 'mean')", ["f16", "f16", "bf16", "bf16"],
     lambda h, b: [h.reshape(4, 2, 3).mean((0, 2)), h.sum(1), b.max(0), b.mean(1)]),
    ("reduce_as_rearrange", [("x", "f64", (2, 3))], [],
     "einops.reduce(x, 'a b -> b a', 'rearrange'), einops.reduce(x, 'a b -> a b c', 'repeat', c=2)", ["f64"] * 2,
     lambda x: [x.T, np.repeat(x[..., None], 2, 2)]),
    ("all_dtypes", [("a", "u8", (2, 3)), ("b", "i8", (2, 3)), ("c", "i16", (2, 3)), ("d", "f64", (2, 3)),
                    ("e", "bf16", (2, 3)), ("f", "f16", (2, 3))], [],
     "einops.rearrange(a, 'x y -> y x'), einops.rearrange(b, 'x (y z) -> z x y', z=3), einops.repeat(c, 'x y -> x y 2'), "
     "einops.rearrange(d, 'x y -> (y x)'), einops.rearrange(e, 'x y -> y x'), einops.reduce(f, 'x y -> y', 'max')",
     ["u8", "i8", "i16", "f64", "bf16", "f16"],
     lambda a, b, c, d, e, f: [a.T, T(R(b, 2, 1, 3), 2, 0, 1), np.repeat(c[..., None], 2, 2), d.T.reshape(6), e.T,
                               f.max(0)]),
    ("keywords_bound", [("x", "f32", (6, 4))], ["n = 3"],
     "einops.rearrange(x, '(a b) c -> a (b c)', a=n), einops.rearrange(tensor=x, pattern='a b -> b a'), "
     "einops.reduce(x, 'a b -> b', reduction='sum')", ["f32"] * 3,
     lambda x: [R(x, 3, 8), x.T, x.sum(0)]),
    ("pattern_by_name", [("x", "f32", (3, 24))], ["p = 'b (h d) -> h d b'", "heads = 4"],
     "einops.rearrange(x, p, d=24 // heads), einops.rearrange(x, 'b (h d) -> b h d', h=heads)", ["f32"] * 2,
     lambda x: [T(R(x, 3, 4, 6), 1, 2, 0), R(x, 3, 4, 6)]),
    ("zero_dims", [("s", "f32", ()), ("x", "f32", (3,))], [],
     "einops.rearrange(s, ' -> 1 ()'), einops.rearrange(s, '->'), einops.repeat(s, '-> c', c=3), "
     "einops.reduce(x, 'a ->', 'sum'), einops.rearrange(s, '... -> (...)')", ["f32"] * 5,
     lambda s, x: [R(s, 1, 1), s, np.repeat(R(s, 1), 3), x.sum(), R(s, 1)]),
    ("zero_size", [("x", "f32", (0, 3)), ("y", "f32", (2, 0))], [],
     "einops.rearrange(x, 'a b -> b a'), einops.reduce(y, 'a b -> a', 'sum'), einops.reduce(y, 'a b -> a', 'prod'), "
     "einops.repeat(x, 'a b -> a b c', c=2)", ["f32"] * 4,
     lambda x, y: [x.T, y.sum(1), y.prod(1), np.zeros((0, 3, 2))]),
    # recipes of more elementary axes than a tensor's dims: neighbours a view merges first
    ("merged_axes", [("x", "f32", (2, 4, 4, 4, 2))], [],
     "einops.rearrange(x, '(a1 a2) (b1 b2) (c1 c2) (d1 d2) e -> (a1 a2 b1) b2 (c1 c2 d1 d2) e', a1=1, b1=2, c1=2, d1=2), "
     "einops.rearrange(x, '(a1 a2) (b1 b2) (c1 c2) (d1 d2) e -> e (c1 c2) (a1 a2) (d1 d2) (b1 b2)', a1=1, b1=2, c1=2, "
     "d1=2), einops.reduce(x, '(a1 a2) (b1 b2) (c1 c2) (d1 d2) e -> (a1 a2) e', 'sum', a1=1, b1=2, c1=2, d1=2), "
     "einops.reduce(x, '(a1 a2) (b1 b2) (c1 c2) (d1 d2) e -> e (d2 d1) a1 a2', 'max', a1=1, b1=2, c1=2, d1=2), "
     "einops.rearrange(x.transpose(1, 2), '(a1 a2) (b1 b2) (c1 c2) (d1 d2) e -> (a1 a2 b1) b2 (c1 c2 d1 d2) e', a1=1, "
     "b1=2, c1=2, d1=2)", ["f32"] * 5,
     lambda x: [R(x, 4, 2, 16, 2), T(x, 4, 2, 0, 3, 1), x.sum((1, 2, 3)),
                T(R(x.max((1, 2)), 1, 2, 2, 2, 2), 4, 3, 2, 0, 1).reshape(2, 4, 1, 2),
                R(T(x, 0, 2, 1, 3, 4), 4, 2, 16, 2)]),
    # einops.einsum (its docstring's examples)
    ("einsum", [("x", "f32", (2, 3, 4)), ("y", "f32", (4, 3, 5)), ("z", "f32", (2, 6, 7)), ("q", "f32", (2, 5, 4)),
                ("w", "f32", (6, 4)), ("m", "f32", (4, 4))], [],
     "einops.einsum(x, y, z, 'a b c, c b d, a g k -> a b k'), einops.einsum(x, q, 'b i d, b j d -> b i j'), "
     "einops.einsum(w, x, 'out_dim in_dim, ... in_dim -> ... out_dim'), einops.einsum(m, 'i i ->'), "
     "einops.einsum(x, 'b i d -> b d'), einops.einsum(x, q, '_ i d, _ j d -> _ i j'), "
     "einops.einsum(x, w, 'batch h w, channel w -> batch channel h'), einops.einsum(x, '(a) b c -> c (b)')",
     ["f32"] * 8,
     lambda x, y, z, q, w, m: [np.einsum('abc,cbd,agk->abk', x, y, z), np.einsum('bid,bjd->bij', x, q),
                               np.einsum('oi,...i->...o', w, x), np.trace(m), x.sum(1), np.einsum('bid,bjd->bij', x, q),
                               np.einsum('bhw,cw->bch', x, w), x.sum(0).T]),
    ("einsum_dtypes", [("a", "f64", (3, 4)), ("b", "f64", (4, 2)), ("h", "f16", (3, 4)), ("i", "i64", (3, 4))], [],
     "einops.einsum(a, b, 'i j, j k -> i k'), einops.einsum(h, h, 'i j, i j -> i'), einops.einsum(i, 'i j -> j')",
     ["f64", "f16", "i64"], lambda a, b, h, i: [a @ b, (h * h).sum(1), i.sum(0)]),
    # einops.pack and unpack (its docstring's example)
    ("pack_unpack", [("a", "f32", (2, 3, 5)), ("b", "f32", (2, 3, 7, 5)), ("c", "f32", (2, 3, 7, 9, 5))],
     ["packed, ps = einops.pack([a, b, c], 'i j * k')", "x, y, z = einops.unpack(packed, ps, 'i j * k')"],
     "packed, x, y * 2, z, einops.rearrange(c, 'i j a b k -> i j (a b) k', a=7), "
     "einops.unpack(packed, [[1], [-1], [7, 9]], 'i j * k')[1]", ["f32"] * 6,
     lambda a, b, c: [np.concatenate([R(a, 2, 3, 1, 5), R(b, 2, 3, 7, 5), R(c, 2, 3, 63, 5)], 2), a, b * 2, c,
                      R(c, 2, 3, 63, 5), R(b, 2, 3, 7, 5)]),
    ("pack_rows", [("x", "f32", (3, 2, 4)), ("s", "i64", (2, 5))], [],
     "einops.pack(x, 'i *')[0], einops.pack(x, '* k')[0], einops.pack(s, '*')[0]", ["f32", "f32", "i64"],
     lambda x, s: [np.concatenate(list(x), 1), np.concatenate(list(x), 0), np.concatenate(list(s))]),
    # the names imported, as model code imports them
    ("imported", [("x", "f32", (2, 3, 4)), ("w", "f32", (5, 4))],
     ["from einops import rearrange, repeat, reduce, einsum, pack, unpack", "import einops as eo",
      "packed, ps = pack([x, x], 'b * d')"],
     "rearrange(x, 'b n d -> d (b n)'), repeat(w, 'o i -> o i r', r=2), reduce(x, 'b n d -> b', 'max'), "
     "einsum(x, w, 'b n i, o i -> b o n'), unpack(packed, ps, 'b * d')[1], eo.rearrange(x, 'b n d -> n b d')",
     ["f32"] * 6,
     lambda x, w: [R(T(x, 2, 0, 1), 4, 6), np.repeat(w[..., None], 2, 2), x.max((1, 2)),
                   np.einsum('bni,oi->bon', x, w), x, T(x, 1, 0, 2)]),
    ("pack_ends", [("x", "i32", (3, 4)), ("y", "f16", (2, 5, 4)), ("z", "f16", (6,))], [],
     "einops.pack([x, y], '* d')[0], einops.pack([z], 'b *')[0], einops.unpack(z, [(2,), (-1,)], '*')[1], "
     "einops.unpack(z, [(2, 2), [2]], '*')[0]", ["f16", "f16", "f16", "f16"],
     lambda x, y, z: [np.concatenate([x, R(y, 10, 4)]).astype(np.float16), R(z, 6, 1), z[2:], R(z[:4], 2, 2)]),
]

# Programs whose rearranges and repeats PyTorch computes as views: no kernel at all
# (the result is the input's storage, viewed); those it must copy: one kernel; a recipe
# of more axes than a tensor's dims, merged only where a view can: no copy either.
VIEWS = [
    ("x: f32[2, 3, 4, 5]", "f32[2, 4, 5, 3]", "einops.rearrange(x, 'b c h w -> b h w c')", []),
    ("x: f32[2, 7, 24]", "f32[2, 4, 7, 6]", "einops.rearrange(x, 'b n (h d) -> b h n d', h=4)", []),
    ("x: f32[2, 3, 4, 6]", "f32[2, 3, 2, 2, 3, 2]",
     "einops.rearrange(x, 'b c (h h2) (w w2) -> b c h h2 w w2', h2=2, w2=2)", []),
    ("x: f32[2, 3, 4, 5]", "f32[2, 60]", "einops.rearrange(x, 'b c h w -> b (c h w)')", []),
    ("x: f32[2, 3, 4, 5]", "f32[6, 4, 5, 1]", "einops.rearrange(x, 'b c h w -> (b c) h w 1')", []),
    ("x: f32[2, 3, 4, 5]", "f32[2, 60]", "einops.rearrange(x, 'b ... -> b (...)')", []),
    ("x: f32[2, 1, 5]", "f32[5, 2]", "einops.rearrange(x, 'a () c -> c a')", []),
    ("x: f32[4, 5]", "f32[4, 5, 3]", "einops.repeat(x, 'h w -> h w c', c=3)", []),
    ("x: f32[4, 5]", "f32[3, 4, 5]", "einops.repeat(x, 'h w -> b h w', b=3)", []),
    ("x: f32[4, 5]", "f32[4, 5]", "einops.repeat(x, 'h w -> (b h) w', b=1)", []),
    ("x: f32[2, 3, 4, 6]", "f32[2, 12, 2, 3]",
     "einops.rearrange(x, 'b c (h h2) (w w2) -> b (c h2 w2) h w', h2=2, w2=2)", ["contiguous"]),
    ("x: f32[2, 4, 7, 6]", "f32[2, 7, 24]", "einops.rearrange(x, 'b h n d -> b n (h d)')", ["contiguous"]),
    ("x: f32[4, 5]", "f32[8, 5]", "einops.repeat(x, 'h w -> (h h2) w', h2=2)", ["contiguous"]),
    ("x: f32[4, 5]", "f32[8, 5]", "einops.repeat(x, 'h w -> (h2 h) w', h2=2)", ["contiguous"]),
    ("x: f32[2, 4, 4, 4, 2]", "f32[2, 2]", "einops.reduce(x.transpose(1, 2), '(a1 a2) (b1 b2) (c1 c2) (d1 d2) e -> "
     "(a1 a2) e', 'sum', a1=1, b1=2, c1=2, d1=2)", ["sum"]),
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
    for name, params, body, exprs, kinds, model in CASES[::test_subset()]:  # the sanitizer pass: a subset
        vals = {p: value(dt, shape) for p, dt, shape in params}
        want = model(*[vals[p][1] for p, _, _ in params])
        rets = ", ".join(f"{k}[{', '.join(str(d) for d in np.shape(w))}]" for k, w in zip(kinds, want))
        decl = ", ".join(f"{p}: {dt}[{', '.join(str(d) for d in shape)}]" for p, dt, shape in params)
        top = "".join(f"{b}\n" for b in body if b.startswith(("import ", "from ")))  # a file's import lines
        lines = "".join(f"    {b}\n" for b in body if not b.startswith(("import ", "from ")))
        src = f"{top}fn f({decl}) -> ({rets}) {{\n{lines}    return {exprs}\n}}\n"
        p, outs = run_outputs(tdslc, src, {k: v[0] for k, v in vals.items()})
        errs = compare_kinds(p, outs, want, kinds)
        if os.environ.get("TDSL_BACKEND", "llvm") == "llvm":  # once, not per backend: its GPU code
            errs += gpu_emit_errors(tdslc, src)
        t.report(name, errs, src)
    for decl, ret, expr, want in VIEWS:
        src = f"fn f({decl}) -> {ret} {{\n    return {expr}\n}}\n"
        ks, ir = kernels_of(src)
        t.check(f"{expr}: kernels {want}", ks == [[k] for k in want], src + ir)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
