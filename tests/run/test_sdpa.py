#!/usr/bin/python3
"""tests/run/test_sdpa.py TDSLC: F.scaled_dot_product_attention, one fused kernel
(ir/attn.c), against NumPy's softmax(q @ k^T * scale + bias) @ v in f64 on the same
inputs, rounded once to the dtype: f32, f64, f16 and bf16 inputs; 2-D, 3-D and 4-D
ones with broadcast batch dims; bool and float masks broadcast from [L, S] and [B, 1,
L, S], 1-D and [B, 1, L, S], a mask computed by elementwise ops, rows whose keys are all hidden (NaN, as
PyTorch's softmax of a row of -inf); is_causal with L < S and L > S; an explicit
scale; transposed, stepped and expanded operands, and an operand computed by another
op; empty L and S (S == 0 gives zeros, as PyTorch's empty softmax times an empty
value matrix does); one padded tile of rows against a single block of keys; scores
far apart (exp's that underflow, flushed to 0 below a floor). Also:
--emit=ir shows each call as one kernel.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, rnd, run_case, test_subset, to_npy  # noqa: E402

B, H, L, S, E, EV = 2, 3, 5, 7, 8, 6
SL = 70  # keys in several blocks (ir/attn.c's KEY_BLOCK) and a partial one
# 20 heads of 37 rows: enough batches for ir/attn_tile.c's parallel batch loop (its temps
# then shared by the tiles of a batch), a full tile of rows and a partial one (the small
# shapes above, with fewer rows than half a vector, get ir/attn.c's rows on most CPUs)
BB, LB, SB = 20, 37, 45
# 12 rows against 20 keys: ir/attn_tile.c's one padded tile and a single key block (no
# running rescale), 17 value columns (the micro-kernel's and the registers' columns)
LO, SO, EO = 12, 20, 17


def sdpa(q, k, v, mask=None, causal=False, scale=None):
    """PyTorch 2's math path in f64: softmax(q @ k^T * scale + bias) @ v."""
    s = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    elif mask is not None and mask.dtype == np.bool_:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    with np.errstate(invalid="ignore"):  # a row of -inf is NaN, as in PyTorch
        e = np.exp(s - s.max(axis=-1, keepdims=True)) if s.shape[-1] else s
        p = e / e.sum(axis=-1, keepdims=True)
    return p @ v


def inputs(dt, seed):
    rng = np.random.default_rng(seed)
    x = {
        "q": rng.standard_normal((B, H, L, E)), "k": rng.standard_normal((B, H, S, E)),
        "v": rng.standard_normal((B, H, S, EV)), "qt": rng.standard_normal((B, L, H, E)),
        "k1": rng.standard_normal((1, 1, S, E)), "kl": rng.standard_normal((B, SL, E)),
        "vl": rng.standard_normal((B, SL, EV)),
        "qb": rng.standard_normal((BB, LB, E)), "kb": rng.standard_normal((BB, SB, E)),
        "vb": rng.standard_normal((BB, SB, EV)),
        "qo": rng.standard_normal((2, LO, E)), "ko": rng.standard_normal((2, SO, E)),
        "vo": rng.standard_normal((2, SO, EO)), "fo": rng.standard_normal((LO, SO)),
    }
    x = {n: rnd(a, dt).astype(np.float64) for n, a in x.items()}
    bm = rng.random((L, S)) < 0.6
    bm[1] = False  # a row that sees no key: NaN
    fm = rnd(rng.standard_normal((B, 1, L, S)), dt).astype(np.float64)
    fm[0, 0, 2] = -np.inf  # every key -inf: NaN
    fm[1, 0, 3, :3] = -np.inf
    ml = rng.random((L, SL)) < 0.3
    ml[3] = False
    mb = rng.random((LB, SB)) < 0.5
    mb[30] = False
    mo = rng.random((LO, SO)) < 0.5
    mo[5] = False
    x["fo"][7, 2:] = -np.inf
    # 37 rows (a whole tile and a padded one), E = 37 and Ev = 19 (whole blocks of the
    # vector width, 8 or 16, and columns past them), 23 keys: ir/attn_tile.c's copies
    # through the registers and the scalar rest
    for n, shape in (("qw", (2, 37, 37)), ("kw", (2, 23, 37)), ("vw", (2, 23, 19))):
        x[n] = rnd(rng.standard_normal(shape), dt).astype(np.float64)
    x["bm"], x["fm"], x["ml"], x["mb"], x["mo"] = bm, fm, ml, mb, mo
    return x


CAST = {"f32": "float", "f64": "double", "f16": "half", "bf16": "bfloat16"}


def cases(x, dt):
    """(expression, NumPy value) pairs over the inputs x."""
    q, k, v, bm, fm, qt, k1 = x["q"], x["k"], x["v"], x["bm"], x["fm"], x["qt"], x["k1"]
    kl, vl, ml = x["kl"], x["vl"], x["ml"]
    qb, kb, vb, mb = x["qb"], x["kb"], x["vb"], x["mb"]
    qo, ko, vo, mo, fo = x["qo"], x["ko"], x["vo"], x["mo"], x["fo"]
    a = "F.scaled_dot_product_attention"
    return [
        (f"{a}(q, k, v)", sdpa(q, k, v)),
        (f"{a}(q, k, v, bm)", sdpa(q, k, v, bm)),
        (f"{a}(q, k, v, attn_mask=fm)", sdpa(q, k, v, fm)),
        (f"{a}(q, k, v, fm[0, 0])", sdpa(q, k, v, fm[0, 0])),
        (f"{a}(q, k, v, bm.logical_not())", sdpa(q, k, v, ~bm)),
        (f"{a}(q, k, v, is_causal=True)", sdpa(q, k, v, causal=True)),
        (f"{a}(k, q, q, is_causal=True)", sdpa(k, q, q, causal=True)),
        (f"{a}(q, k, v, scale=0.3)", sdpa(q, k, v, scale=0.3)),
        (f"{a}(q, k, v, bm, 0.0, False, 2.0)", sdpa(q, k, v, bm, scale=2.0)),
        (f"{a}(q[0], k[1], v[0])", sdpa(q[0], k[1], v[0])),
        (f"{a}(q[0, 1], k[1, 2], v[0, 0], bm)", sdpa(q[0, 1], k[1, 2], v[0, 0], bm)),
        (f"{a}(q[1, 2], k, v)", sdpa(q[1, 2], k, v)),
        (f"{a}(qt.transpose(1, 2), k, v)", sdpa(qt.transpose(0, 2, 1, 3), k, v)),
        (f"{a}(q, k[:, :, ::2], v[:, :, ::2])", sdpa(q, k[:, :, ::2], v[:, :, ::2])),
        (f"{a}(q, k.transpose(-1, -2).transpose(-1, -2), v[..., 1:5])", sdpa(q, k, v[..., 1:5])),
        (f"{a}(q, k1.expand(2, 3, 7, 8), v)", sdpa(q, np.broadcast_to(k1, k.shape), v)),
        (f"{a}(q, k1, v)", sdpa(q, k1, v)),
        (f"{a}(q * 2, k, v + 1)", sdpa(q * 2, k, v + 1)),
        (f"{a}(q[:, :, :0], k, v)", sdpa(q[:, :, :0], k, v)),
        (f"{a}(q, k[:, :, :0], v[:, :, :0])", sdpa(q, k[:, :, :0], v[:, :, :0])),
        (f"{a}(q, k[:, :, :0], v[:, :, :0], is_causal=True)", sdpa(q, k[:, :, :0], v[:, :, :0], causal=True)),
        (f"{a}(q[:, 1], kl, vl)", sdpa(q[:, 1], kl, vl)),
        (f"{a}(q[:, 1], kl, vl, ml)", sdpa(q[:, 1], kl, vl, ml)),
        (f"{a}(q[:, 1], kl, vl, is_causal=True)", sdpa(q[:, 1], kl, vl, causal=True)),
        (f"{a}(kl, kl, vl, is_causal=True)", sdpa(kl, kl, vl, causal=True)),
        (f"{a}(kl[:, 1:], kl, vl[1], ml[0].{CAST[dt]}().log())", sdpa(kl[:, 1:], kl, vl[1], np.where(ml[0], 0.0, -np.inf))),
        (f"{a}(qb, kb, vb)", sdpa(qb, kb, vb)),
        (f"{a}(qb, kb, vb, is_causal=True)", sdpa(qb, kb, vb, causal=True)),
        (f"{a}(qb, kb, vb, mb)", sdpa(qb, kb, vb, mb)),
        (f"{a}(qb[:2, :3], kb[:2], vb[:2])", sdpa(qb[:2, :3], kb[:2], vb[:2])),
        (f"{a}(qb, kb.transpose(1, 2).transpose(1, 2), vb[:, :, 1:4], scale=0.7)", sdpa(qb, kb, vb[:, :, 1:4], scale=0.7)),
        (f"{a}(qo, ko, vo)", sdpa(qo, ko, vo)),
        (f"{a}(qo, ko, vo, is_causal=True)", sdpa(qo, ko, vo, causal=True)),
        (f"{a}(qo, ko, vo, mo)", sdpa(qo, ko, vo, mo)),
        (f"{a}(qo, ko, vo[..., :3], fo)", sdpa(qo, ko, vo[..., :3], fo)),
        (f"{a}(qo, ko[:, :8], vo[:, :8, :6])", sdpa(qo, ko[:, :8], vo[:, :8, :6])),
    ] + (written_out(x) + wide(x) if dt in ("f32", "f64") else written_f16(x) if dt == "f16" else [])


def written_f16(x):
    """Attention written out in f16, one attention computed in f32 and rounded once
    (ir/attn_fuse.c): a causal masked_fill, a float bias, and raw scores far beyond f16's
    65504 scaled back down (the parts would store them as inf, a row NaN; the attention's
    f32 scores do not overflow: PyTorch's fused attention on a GPU)."""
    q, k, v, fm, qb, kb, vb = x["q"], x["k"], x["v"], x["fm"], x["qb"], x["kb"], x["vb"]
    kt = "k.transpose(-2, -1)"
    causal = np.tril(np.ones((L, S))) == 0
    return [
        (f"softmax((q @ {kt} * 0.5).masked_fill(torch.tril(torch.ones({L}, {S})) == 0, float('-inf')), dim=-1) @ v",
         sdpa(q, k, v, ~causal, scale=0.5)),
        (f"softmax(q @ {kt} / 4.0 + fm, dim=-1) @ v", sdpa(q, k, v, fm, scale=0.25)),
        ("softmax((qb * 8192.0) @ kb.transpose(-2, -1) / 8192.0, dim=-1) @ vb", sdpa(qb, kb, vb, scale=1.0)),
    ]


def wide(x):
    """ir/attn_tile.c's copies through the registers (q and out read and written in the
    computing dtype: f32 and f64) with E and Ev not multiples of the vector width, and
    scores far apart (exp's that underflow, flushed to 0 below a floor)."""
    q, k, v, fm = x["q"], x["k"], x["v"], x["fm"]
    qb, kb, vb, qo, ko, vo = x["qb"], x["kb"], x["vb"], x["qo"], x["ko"], x["vo"]
    qw, kw, vw = x["qw"], x["kw"], x["vw"]
    a = "F.scaled_dot_product_attention"
    return [
        (f"{a}(qw, kw, vw)", sdpa(qw, kw, vw)),
        (f"{a}(qw, kw, vw, is_causal=True).transpose(0, 1).contiguous()",
         sdpa(qw, kw, vw, causal=True).transpose(1, 0, 2)),
        (f"{a}(qw.transpose(-1, -2).transpose(-1, -2), kw, vw[..., 2:], scale=0.2)",
         sdpa(qw, kw, vw[..., 2:], scale=0.2)),
        # scores ~64 apart: most exp(x - m) and some factors c below the floor where
        # attn_weight flushes them to 0 (rows and tiles, one block and several)
        (f"{a}(qb * 64, kb, vb)", sdpa(qb * 64, kb, vb)),
        (f"{a}(qo * 64, ko, vo, is_causal=True)", sdpa(qo * 64, ko, vo, causal=True)),
        (f"{a}(q * 64, k, v, fm)", sdpa(q * 64, k, v, fm)),
    ]


def written_out(x):
    """Attention written as its parts, which ir/attn_fuse.c makes one attention (in f32
    and f64 here; f16: written_f16): scales by * and /, none, masked_fill of a causal mask, a bool mask kept or
    hidden, a float bias."""
    q, k, v, bm, fm = x["q"], x["k"], x["v"], x["bm"], x["fm"]
    qb, kb, vb = x["qb"], x["kb"], x["vb"]
    kt = "k.transpose(-2, -1)"
    causal = np.tril(np.ones((L, S))) == 0
    return [
        (f"softmax(q @ {kt} * 0.3, dim=-1) @ v", sdpa(q, k, v, scale=0.3)),
        (f"F.softmax(q @ {kt} / 2.0, dim=-1) @ v", sdpa(q, k, v, scale=0.5)),
        (f"softmax(q @ {kt}, dim=-1) @ v", sdpa(q, k, v, scale=1.0)),
        (f"softmax((q @ {kt} * 0.5).masked_fill(torch.tril(torch.ones({L}, {S})) == 0, float('-inf')), dim=-1) @ v",
         sdpa(q, k, v, ~causal, scale=0.5)),
        # the same causal mask built again (as in each layer of GPT-2): is_causal's verdict reused
        (f"softmax((q @ {kt} * 0.25).masked_fill(torch.tril(torch.ones({L}, {S})) == 0, float('-inf')), dim=-1) @ v",
         sdpa(q, k, v, ~causal, scale=0.25)),
        (f"softmax(torch.where(bm, 0.25 * (q @ {kt}), float('-inf')), dim=-1) @ v", sdpa(q, k, v, bm, scale=0.25)),
        # a triangle one key wider than causal: a mask of constants, not is_causal
        (f"softmax((q @ {kt}).masked_fill(torch.tril(torch.ones({L}, {S}), diagonal=1) == 0, float('-inf')), dim=-1) @ v",
         sdpa(q, k, v, np.tril(np.ones((L, S)), 1) != 0, scale=1.0)),
        (f"softmax((q @ {kt}).masked_fill(bm, float('-inf')), dim=-1) @ v", sdpa(q, k, v, ~bm, scale=1.0)),
        (f"softmax(q @ {kt} / 4.0 + fm, dim=-1) @ v", sdpa(q, k, v, fm, scale=0.25)),
        (f"softmax(fm + q @ {kt}, dim=-1) @ v", sdpa(q, k, v, fm, scale=1.0)),
        ("softmax(qb @ kb.transpose(-2, -1) * 0.3, dim=-1) @ vb", sdpa(qb, kb, vb, scale=0.3)),
    ]


def one_kernel(tdslc, t):
    """--emit=ir: each call is one kernel named after the op."""
    src = ("fn f(q: f32[2, 3, 5, 8], k: f32[2, 3, 7, 8], v: f32[2, 3, 7, 6], m: bool[5, 7]) -> "
           "(f32[2, 3, 5, 6], f32[2, 3, 5, 6]) {\n"
           "    return F.scaled_dot_product_attention(q, k, v, m), "
           "F.scaled_dot_product_attention(q, k, v, is_causal=True)\n}\n")
    p = emit_text(tdslc, src, "ir")
    out, err = p.stdout, p.stderr
    lines = [ln.strip() for ln in out.splitlines()]
    # (on a CPU the kernel names its schedule after the lines: ir/attn_tile.c's tiles)
    kern = [ln.split("  schedule: ")[0] for ln in lines]
    src = ("fn f(q: f32[2, 3, 5, 8], k: f32[2, 3, 7, 8], v: f32[2, 3, 7, 6]) -> f32[2, 3, 5, 6] {\n"
           "    return softmax((q @ k.transpose(-2, -1) * 0.5).masked_fill(torch.tril(torch.ones(5, 7)) == 0, "
           "float('-inf')), dim=-1) @ v\n}\n")
    p2 = emit_text(tdslc, src, "ir")
    t.check("emit_ir_written_out_attention_is_one_kernel",
            p2.returncode == 0 and "kernels: 1" in p2.stdout and "scaled_dot_product_attention" in p2.stdout
            and "softmax" not in p2.stdout.split("kernels:")[1], p2.stdout + p2.stderr)
    p16 = emit_text(tdslc, src.replace("f32", "f16"), "ir")  # f16 too: computed in f32, rounded once
    t.check("emit_ir_written_out_f16_attention_is_one_kernel",
            p16.returncode == 0 and "kernels: 1" in p16.stdout and "scaled_dot_product_attention" in p16.stdout,
            p16.stdout + p16.stderr)
    # its mask, tril(ones) == 0, is evaluated at compile time: is_causal, no mask left to read
    plan2 = p2.stdout.split("kernels:")[1] if p2.returncode == 0 else ""
    t.check("emit_ir_written_out_causal_mask_is_is_causal", "k0: scaled_dot_product_attention  lines" in plan2
            and "arange" not in plan2 and "where" not in plan2, p2.stdout + p2.stderr)
    # the same mask built twice (GPT-2 builds it in each layer): both attentions is_causal
    # (the second from the first's verdict), a mask one key wider not
    mask = "masked_fill(torch.tril(torch.ones(5, 7){}) == 0, float('-inf'))"
    src = ("fn f(q: f32[2, 3, 5, 8], k: f32[2, 3, 7, 8], v: f32[2, 3, 7, 6]) -> "
           "(f32[2, 3, 5, 6], f32[2, 3, 5, 6], f32[2, 3, 5, 6]) {\n"
           + "".join(f"    a{i} = softmax((q @ k.transpose(-2, -1) * 0.5).{mask.format(d)}, dim=-1) @ v\n"
                     for i, d in enumerate(("", "", ", diagonal=1")))
           + "    return a0, a1, a2\n}\n")
    p3 = emit_text(tdslc, src, "ir")
    plan3 = p3.stdout.split("kernels:")[1] if p3.returncode == 0 else ""
    sd = [ln.split(":")[0] for ln in plan3.splitlines() if "scaled_dot_product_attention  lines" in ln]
    t.check("emit_ir_a_causal_mask_built_again_is_is_causal",
            len(sd) == 3 and plan3.count("logical_not") + plan3.count("where") + plan3.count("arange") > 0
            and "k0: scaled_dot_product_attention  lines" in plan3
            and "k1: scaled_dot_product_attention  lines" in plan3, p3.stdout + p3.stderr)
    t.check("emit_ir_one_kernel_per_call",
            p.returncode == 0 and "kernels: 2" in lines
            and "k0: scaled_dot_product_attention  lines 2" in kern
            and "k1: scaled_dot_product_attention  lines 2" in kern, out + err)


def merged_heads(tdslc, t, dt, seed):
    """An attention's result read only by a copy through a permutation (the heads merged
    back: y.transpose(1, 2).contiguous(), .permute(...).reshape(...)) is written by the
    attention straight into the copy's buffer (ir/attn_fuse.c): one program per dtype,
    rows that end in a partial tile (37) and few rows (5: ir/attn.c's rows), masks,
    is_causal, Ev of 6 and 17, the merged heads read by a matmul, a written-out
    attention, a permutation that moves Ev, and a result read twice (left as it was)."""
    rng = np.random.default_rng(100 + seed)
    Bm, Hm, Lm, Sm, Em = 2, 3, 37, 45, 8
    x = {"q": rng.standard_normal((Bm, Hm, Lm, Em)), "k": rng.standard_normal((Bm, Hm, Sm, Em)),
         "v": rng.standard_normal((Bm, Hm, Sm, 17)), "w": rng.standard_normal((Hm * 17, 5)),
         "q5": rng.standard_normal((Bm, Hm, 5, Em)), "fm": rng.standard_normal((Bm, 1, Lm, Sm))}
    x = {n: rnd(a, dt).astype(np.float64) for n, a in x.items()}
    x["bm"] = rng.random((Lm, Sm)) < 0.6
    x["bm"][3] = False  # a row that sees no key: NaN
    q, k, v, w, q5, fm, bm = x["q"], x["k"], x["v"], x["w"], x["q5"], x["fm"], x["bm"]
    a = "F.scaled_dot_product_attention"
    v6 = v[..., :6]

    def merge(y):
        return y.transpose(0, 2, 1, 3)

    cs = [
        (f"{a}(q, k, v).transpose(1, 2).contiguous()", merge(sdpa(q, k, v))),
        (f"{a}(q, k, v[..., :6], is_causal=True).transpose(1, 2).reshape({Bm}, {Lm}, {Hm * 6})",
         merge(sdpa(q, k, v6, causal=True)).reshape(Bm, Lm, Hm * 6)),
        (f"{a}(q, k, v, bm).permute(0, 2, 1, 3).contiguous()", merge(sdpa(q, k, v, bm))),
        (f"{a}(q, k, v, fm, scale=0.4).permute(2, 0, 1, 3).contiguous()",
         sdpa(q, k, v, fm, scale=0.4).transpose(2, 0, 1, 3)),
        (f"{a}(q, k, v).transpose(1, 2).contiguous().view({Bm}, {Lm}, {Hm * 17}) @ w",
         rnd(merge(sdpa(q, k, v)), dt).astype(np.float64).reshape(Bm, Lm, Hm * 17) @ w),  # (rounded as stored)
        (f"{a}(q5, k, v, is_causal=True).transpose(1, 2).contiguous()", merge(sdpa(q5, k, v, causal=True))),
        (f"{a}(q[1], k[1], v[1]).transpose(0, 1).contiguous()", sdpa(q[1], k[1], v[1]).transpose(1, 0, 2)),
        (f"{a}(q, k, v[..., :6]).transpose(-1, -2).contiguous()", sdpa(q, k, v6).swapaxes(-1, -2)),
        ("y2.transpose(1, 2).contiguous()", merge(sdpa(q, k, v6, scale=0.5))),
        ("y2", sdpa(q, k, v6, scale=0.5)),
    ]
    body = [f"y2 = {a}(q, k, v[..., :6], scale=0.5)"]
    if dt in ("f32", "f64", "f16"):
        cs.append(("(softmax(q @ k.transpose(-2, -1) * 0.3, dim=-1) @ v).transpose(1, 2).contiguous()",
                   merge(sdpa(q, k, v, scale=0.3))))
    params = (f"q: {dt}[{Bm}, {Hm}, {Lm}, {Em}], k: {dt}[{Bm}, {Hm}, {Sm}, {Em}], v: {dt}[{Bm}, {Hm}, {Sm}, 17], "
              f"w: {dt}[{Hm * 17}, 5], q5: {dt}[{Bm}, {Hm}, 5, {Em}], fm: {dt}[{Bm}, 1, {Lm}, {Sm}], "
              f"bm: bool[{Lm}, {Sm}]")
    feed = {n: to_npy(arr, "bool" if n == "bm" else dt) for n, arr in x.items()}
    want = [rnd(wv, dt).astype(np.float64) for _, wv in cs]
    errs, src = run_case(tdslc, params, body, ", ".join(e for e, _ in cs), [dt] * len(cs), want, feed)
    whole = [e for e in errs if not e.startswith("out")]
    for i, (expr, _) in enumerate(cs):
        mine = whole + [e for e in errs if e.startswith(f"out{i}:")]
        t.report(f"{dt} merged heads: {expr}", mine, src if mine else None)


def merged_heads_plan(tdslc, t):
    """--emit=ir: the copy that merges the heads back is gone; the matmul reads the
    attention's buffer."""
    src = ("fn f(q: f32[2, 3, 5, 8], k: f32[2, 3, 7, 8], v: f32[2, 3, 7, 6], w: f32[18, 4]) -> f32[2, 5, 4] {\n"
           "    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)\n"
           "    return y.transpose(1, 2).contiguous().view(2, 5, 18) @ w\n}\n")
    p = emit_text(tdslc, src, "ir")
    plan = p.stdout.split("kernels:")[1] if p.returncode == 0 else ""
    t.check("emit_ir_merged_heads_written_in_place",
            "kernels: 2" in p.stdout and "contiguous" not in plan
            and "k0: scaled_dot_product_attention" in plan and "k1: matmul" in plan, p.stdout + p.stderr)


def mha_plan(tdslc, t):
    """--emit=ir: nn.MultiheadAttention without its weights is the in-projection GEMM, one attention
    kernel (the key padding and attention masks combined inside it) and the out-projection GEMM, as
    F.scaled_dot_product_attention between two F.linear calls is."""
    src = ("import torch.nn as nn\n"
           "fn f(x: f32[2, 5, 8], w: f32[24, 8], b: f32[24], ow: f32[8, 8], ob: f32[8], kpm: bool[2, 5], "
           "am: bool[5, 5]) -> f32[2, 5, 8] {\n"
           "    mha = nn.MultiheadAttention(8, 2, batch_first=True)\n"
           "    mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight, mha.out_proj.bias = w, b, ow, ob\n"
           "    return mha(x, x, x, need_weights=False, key_padding_mask=kpm, attn_mask=am)[0]\n}\n")
    p = emit_text(tdslc, src, "ir")
    plan = p.stdout.split("kernels:")[1] if p.returncode == 0 else ""
    t.check("emit_ir_multihead_attention_is_gemm_attention_gemm",
            "kernels: 3" in p.stdout and "k0: matmul add" in plan and "k2: matmul add" in plan
            and "scaled_dot_product_attention  lines" in plan.split("k1:")[1].split("\n")[0]
            and "softmax" not in plan and "contiguous" not in plan, p.stdout + p.stderr)


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    one_kernel(tdslc, t)
    merged_heads_plan(tdslc, t)
    mha_plan(tdslc, t)
    for seed, dt in list(enumerate(("f32", "f16")))[::test_subset()]:
        merged_heads(tdslc, t, dt, seed)
    for seed, dt in list(enumerate(("f32", "f64", "f16", "bf16")))[::test_subset()]:  # the sanitizer pass: a subset
        x = inputs(dt, seed)
        cs = cases(x, dt)
        params = (f"q: {dt}[{B}, {H}, {L}, {E}], k: {dt}[{B}, {H}, {S}, {E}], v: {dt}[{B}, {H}, {S}, {EV}], "
                  f"bm: bool[{L}, {S}], fm: {dt}[{B}, 1, {L}, {S}], qt: {dt}[{B}, {L}, {H}, {E}], "
                  f"k1: {dt}[1, 1, {S}, {E}], kl: {dt}[{B}, {SL}, {E}], vl: {dt}[{B}, {SL}, {EV}], "
                  f"ml: bool[{L}, {SL}], qb: {dt}[{BB}, {LB}, {E}], kb: {dt}[{BB}, {SB}, {E}], vb: {dt}[{BB}, {SB}, {EV}], "
                  f"mb: bool[{LB}, {SB}], qo: {dt}[2, {LO}, {E}], ko: {dt}[2, {SO}, {E}], vo: {dt}[2, {SO}, {EO}], "
                  f"mo: bool[{LO}, {SO}], fo: {dt}[{LO}, {SO}], qw: {dt}[2, 37, 37], kw: {dt}[2, 23, 37], "
                  f"vw: {dt}[2, 23, 19]")
        feed = {n: to_npy(a, "bool" if n in ("bm", "ml", "mb", "mo") else dt) for n, a in x.items()}
        # one program per dtype (a program per case, then per 7, made this one of the
        # slowest scripts: each C program is a gcc run); the failure lines name the output
        want = [rnd(w, dt).astype(np.float64) for _, w in cs]
        errs, src = run_case(tdslc, params, [], ", ".join(e for e, _ in cs), [dt] * len(cs), want, feed)
        whole = [e for e in errs if not e.startswith("out")]  # the run itself failed
        for k, (expr, _) in enumerate(cs):
            mine = whole + [e for e in errs if e.startswith(f"out{k}:")]
            t.report(f"{dt} {expr}", mine, src if mine else None)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
