#!/usr/bin/python3
"""tests/run/test_attn_gqa.py TDSLC: grouped-query attention (ir/attn_fuse.c's
share_heads). Query heads share key/value heads through a copy that repeats them —
LLaMA's repeat_kv (`k[:, :, None].expand(B, KV, R, S, E).reshape(B, KV * R, S, E)`),
torch.repeat_interleave(k, R, dim=1) (head h reads kv head h // R) and k.repeat(1, R,
1, 1) (h % KV), k and v each in its own pattern (read through their own head maps: the
heads split at both cuts) — with written-out attention (softmax(q @ k^T ...) @ v: a causal
masked_fill, a float bias as LLaMA's) and F.scaled_dot_product_attention (no mask,
is_causal, a bool mask), n_rep 2 and 4, B 2, a k RoPE'd (rotate_half) before it is
repeated, the result's heads merged back, few query rows (ir/attn.c's rows) and a
partial tile (ir/attn_tile.c), in f32, f64, f16 and bf16 (written out too); LLaMA's RoPE'd q and k read
by one attention alone (the rotation applied as the attention loads them: attr.rope),
with either operand order in the products, on the tiles and on the rows, and Meta's
complex form (view_as_complex(x) * freqs): against NumPy's
softmax(q @ k^T * scale + bias) @ v in f64 with the heads repeated by np.repeat and
np.tile. One program, one run. Also --emit=ir of it: no key or value buffer at the
query heads' count (v read from a projection's [B, S, KV * Ev] is copied at its KV
heads, whose rows the tiles read faster than the projection's), and no rotation (a cat)
stored but the one k that three attentions read, the ks repeated for several query heads
(rotated once in their kernel, not once per query head) and one that is no rotation.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, compare_kinds, emit_text, require_backend, rnd, run_outputs, to_npy  # noqa: E402
from test_sdpa import sdpa  # noqa: E402

B, H, L, S, E, EV = 2, 8, 37, 45, 16, 12  # 37 rows: a full tile and a partial one
L5 = 5  # few rows: ir/attn.c's rows


def rope(k, c, s):
    """LLaMA's k * cos + rotate_half(k) * sin, cos and sin [B, S, E] per position."""
    h = k.shape[-1] // 2
    rot = np.concatenate((-k[..., h:], k[..., :h]), axis=-1)
    return k * c[:, None] + rot * s[:, None]


def rope_c(x, f):
    """Meta's LLaMA: view_as_real(view_as_complex(x) * freqs), x's pairs (2c, 2c + 1)."""
    y = (x[..., 0::2] + 1j * x[..., 1::2]) * (f[..., 0] + 1j * f[..., 1])
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = y.real, y.imag
    return out


def interleave(x, r):
    """Each head r times in a row (repeat_kv, repeat_interleave): head h is x's h // r."""
    return np.repeat(x, r, axis=1)


def tile(x, r):
    """The heads r times over (Tensor.repeat): head h is x's h % KV."""
    return np.tile(x, (1, r, 1, 1))


def repeat_kv(name, kv, r, s, e):
    return f"{name}[:, :, None, :, :].expand({B}, {kv}, {r}, {s}, {e}).reshape({B}, {kv * r}, {s}, {e})"


def program(x):
    """The source, the outputs' dtypes and their NumPy values."""
    q, k2, v2, k4, v4, cs, sn, fm = (x[n] for n in ("q", "k2", "v2", "k4", "v4", "cs", "sn", "fm"))
    cq, sq, fq, fk = x["cq"], x["sq"], x["fq"], x["fk"]
    q5, qd, kd, vd, qh, kh, vh, qb, kb, vb, bm, vt = (x[n] for n in ("q5", "qd", "kd", "vd", "qh", "kh", "vh", "qb",
                                                                   "kb", "vb", "bm", "vt"))
    a = "F.scaled_dot_product_attention"
    kr = rope(k2, cs, sn)
    causal = f"masked_fill(torch.tril(torch.ones({L}, {S})) == 0, float('-inf'))"
    body = [
        f"kr = k2 * cs.unsqueeze(1) + torch.cat((-k2[..., {E // 2}:], k2[..., :{E // 2}]), dim=-1) * sn.unsqueeze(1)",
        f"kx = {repeat_kv('kr', 2, 4, S, E)}",
        f"vx = {repeat_kv('v2', 2, 4, S, E)}",
        f"k4x = {repeat_kv('k4', 4, 2, S, E)}",
        f"v4x = {repeat_kv('v4', 4, 2, S, EV)}",
        f"vs = vt.view({B}, {S}, 2, {EV}).transpose(1, 2)",
        # RoPE'd q and k, each read by one attention (rotated as it loads them)
        f"qr = cq.unsqueeze(1) * q + torch.cat((-q[..., {E // 2}:], q[..., :{E // 2}]), dim=-1) * sq.unsqueeze(1)",
        f"kr2 = k2 * cs.unsqueeze(1) + sn.unsqueeze(1) * torch.cat((-k2[..., {E // 2}:], k2[..., :{E // 2}]), dim=-1)",
        f"kr2x = {repeat_kv('kr2', 2, 4, S, E)}",
        f"c5 = cq[:, :{L5}].unsqueeze(1)",
        f"q5r = q5 * c5 + torch.cat((-q5[..., {E // 2}:], q5[..., :{E // 2}]), dim=-1) * sq[:, :{L5}].unsqueeze(1)",
        # not a rotation (the halves' roles swapped): left as written, in a kernel
        f"kw = k2 * cs.unsqueeze(1) + torch.cat((-k2[..., :{E // 2}], k2[..., {E // 2}:]), dim=-1) * sn.unsqueeze(1)",
        # the complex form (Meta's LLaMA)
        f"qc = torch.view_as_real(torch.view_as_complex(q.reshape({B}, {H}, {L}, {E // 2}, 2)) * "
        f"torch.view_as_complex(fq)).flatten(3)",
        f"kc = torch.view_as_real(torch.view_as_complex(k2.reshape({B}, 2, {S}, {E // 2}, 2)) * "
        f"torch.view_as_complex(fk)).flatten(3)",
        f"q5c = torch.view_as_real(torch.view_as_complex(q5.reshape({B}, {H}, {L5}, {E // 2}, 2)) * "
        f"torch.view_as_complex(fq[:{L5}])).flatten(3)",
        f"k5c = torch.view_as_real(torch.view_as_complex(k2.reshape({B}, 2, {S}, {E // 2}, 2)) * "
        f"torch.view_as_complex(fk)).flatten(3)",
        # k not repeated (4 heads): rotated in the attention too
        f"k4r = k4 * cs.unsqueeze(1) + torch.cat((-k4[..., {E // 2}:], k4[..., :{E // 2}]), dim=-1) * sn.unsqueeze(1)",
        f"k4s = sn.unsqueeze(1) * torch.cat((-k4[..., {E // 2}:], k4[..., :{E // 2}]), dim=-1) + cs.unsqueeze(1) * k4",
        f"k4c = torch.view_as_real(torch.view_as_complex(k4.reshape({B}, 4, {S}, {E // 2}, 2)) * "
        f"torch.view_as_complex(fk)).flatten(3)",
        f"k5r = k2 * cs.unsqueeze(1) + torch.cat((-k2[..., {E // 2}:], k2[..., :{E // 2}]), dim=-1) * sn.unsqueeze(1)",
    ]
    cases = [
        # n_rep 4, RoPE'd k, written out with a causal mask (is_causal)
        ("f32", f"softmax((q @ kx.transpose(-2, -1) / 4.0).{causal}, dim=-1) @ vx",
         sdpa(q, interleave(kr, 4), interleave(v2, 4), causal=True)),
        # n_rep 2, LLaMA's float bias, the heads merged back
        ("f32", f"(softmax(q @ k4x.transpose(2, 3) / 4.0 + fm, dim=-1) @ v4x).transpose(1, 2).contiguous()"
                f".reshape({B}, {L}, {H * EV})",
         sdpa(q, interleave(k4, 2), interleave(v4, 2), fm).transpose(0, 2, 1, 3).reshape(B, L, H * EV)),
        ("f32", f"{a}(q, torch.repeat_interleave(k4, 2, dim=1), torch.repeat_interleave(v4, 2, dim=1))",
         sdpa(q, interleave(k4, 2), interleave(v4, 2))),
        ("f32", f"{a}(q, k4.repeat(1, 2, 1, 1), v4.repeat(1, 2, 1, 1), is_causal=True)",
         sdpa(q, tile(k4, 2), tile(v4, 2), causal=True)),
        # v straight from a projection's [B, S, KV * Ev] (rows not dense: copied at KV heads)
        ("f32", f"{a}(q, kx, {repeat_kv('vs', 2, 4, S, EV)}, is_causal=True)",
         sdpa(q, interleave(kr, 4), interleave(vt.reshape(B, S, 2, EV).transpose(0, 2, 1, 3), 4), causal=True)),
        ("f32", f"{a}(q5, kx, v2.repeat_interleave(4, dim=1), is_causal=True)",
         sdpa(q5, interleave(kr, 4), interleave(v2, 4), causal=True)),
        # LLaMA: RoPE'd q and k (n_rep 4), a float bias; on the rows (few query rows): is_causal
        ("f32", f"softmax(qr @ kr2x.transpose(-2, -1) / 4.0 + fm, dim=-1) @ vx",
         sdpa(rope(q, cq, sq), interleave(kr, 4), interleave(v2, 4), fm)),
        ("f32", f"{a}(q5r, k5r.repeat_interleave(4, dim=1), v2.repeat_interleave(4, dim=1), is_causal=True)",
         sdpa(rope(q5, cq[:, :L5], sq[:, :L5]), interleave(kr, 4), interleave(v2, 4), causal=True)),
        ("f32", f"{a}(qc, kc.repeat_interleave(4, dim=1), vx, fm)",
         sdpa(rope_c(q, fq), interleave(rope_c(k2, fk), 4), interleave(v2, 4), fm)),
        ("f32", f"{a}(q5c, k5c.repeat_interleave(4, dim=1), vx, is_causal=True)",
         sdpa(rope_c(q5, fq[:L5]), interleave(rope_c(k2, fk), 4), interleave(v2, 4), causal=True)),
        ("f32", f"{a}(q[:, :4], k4r, v4, fm)", sdpa(q[:, :4], rope(k4, cs, sn), v4, fm)),
        ("f32", f"{a}(q5[:, :4], k4s, v4, is_causal=True)", sdpa(q5[:, :4], rope(k4, cs, sn), v4, causal=True)),
        ("f32", f"{a}(q[:, :4], k4c, v4, is_causal=True)", sdpa(q[:, :4], rope_c(k4, fk), v4, causal=True)),
        ("f32", f"{a}(q, kw.repeat_interleave(4, dim=1), vx)",
         sdpa(q, interleave(k2 * cs[:, None] + np.concatenate((-k2[..., :E // 2], k2[..., E // 2:]), axis=-1)
                            * sn[:, None], 4), interleave(v2, 4))),
        # k and v repeated in different patterns, each read through its own head map: heads split at both
        # cuts, (2, 2, 2) for h // 4 and h % 2, and (4, 2) for h % 2 and h // 2
        ("f32", f"{a}(q5, k2.repeat_interleave(4, dim=1), v2.repeat(1, 4, 1, 1))",
         sdpa(q5, interleave(k2, 4), tile(v2, 4))),
        ("f32", f"{a}(q5, k2.repeat(1, 4, 1, 1), v4.repeat_interleave(2, dim=1), is_causal=True)",
         sdpa(q5, tile(k2, 4), interleave(v4, 2), causal=True)),
        ("f32", f"softmax(q5 @ {repeat_kv('k4', 4, 2, S, E)}.transpose(-2, -1) / 4.0, dim=-1) @ v4.repeat(1, 2, 1, 1)",
         sdpa(q5, interleave(k4, 2), tile(v4, 2), scale=0.25)),
        ("f64", f"{a}(qd, {repeat_kv('kd', 2, 4, S, E)}, {repeat_kv('vd', 2, 4, S, EV)}, is_causal=True)",
         sdpa(qd, interleave(kd, 4), interleave(vd, 4), causal=True)),
        ("f64", f"softmax((qd @ {repeat_kv('kd', 2, 4, S, E)}.transpose(-2, -1)).masked_fill(bm, float('-inf')), "
                f"dim=-1) @ {repeat_kv('vd', 2, 4, S, EV)}",
         sdpa(qd, interleave(kd, 4), interleave(vd, 4), ~bm, scale=1.0)),
        ("f16", f"{a}(qh, kh.repeat_interleave(2, dim=1), vh.repeat_interleave(2, dim=1), bm)",
         sdpa(qh, interleave(kh, 2), interleave(vh, 2), bm)),
        ("bf16", f"{a}(qb, kb.repeat(1, 4, 1, 1), vb.repeat(1, 4, 1, 1), is_causal=True)",
         sdpa(qb, tile(kb, 4), tile(vb, 4), causal=True)),
        # written out in bf16: one attention too (computed in f32, rounded once)
        ("bf16", f"softmax((qb @ {repeat_kv('kb', 2, 4, S, E)}.transpose(-2, -1) / 4.0).{causal}, dim=-1) @ "
                 f"{repeat_kv('vb', 2, 4, S, EV)}",
         sdpa(qb, interleave(kb, 4), interleave(vb, 4), causal=True)),
    ]
    params = (f"q: f32[{B}, {H}, {L}, {E}], k2: f32[{B}, 2, {S}, {E}], v2: f32[{B}, 2, {S}, {E}], "
              f"k4: f32[{B}, 4, {S}, {E}], v4: f32[{B}, 4, {S}, {EV}], cs: f32[{B}, {S}, {E}], "
              f"sn: f32[{B}, {S}, {E}], fm: f32[{B}, 1, {L}, {S}], q5: f32[{B}, {H}, {L5}, {E}], "
              f"qd: f64[{B}, {H}, {L}, {E}], kd: f64[{B}, 2, {S}, {E}], vd: f64[{B}, 2, {S}, {EV}], "
              f"qh: f16[{B}, {H}, {L}, {E}], kh: f16[{B}, 4, {S}, {E}], vh: f16[{B}, 4, {S}, {EV}], "
              f"qb: bf16[{B}, {H}, {L}, {E}], kb: bf16[{B}, 2, {S}, {E}], vb: bf16[{B}, 2, {S}, {EV}], "
              f"bm: bool[{L}, {S}], vt: f32[{B}, {S}, {2 * EV}], cq: f32[{B}, {L}, {E}], sq: f32[{B}, {L}, {E}], "
              f"fq: f32[{L}, {E // 2}, 2], fk: f32[{S}, {E // 2}, 2]")
    rets = ", ".join(f"{dt}[{', '.join(str(d) for d in np.shape(w))}]" for dt, _, w in cases)
    src = (f"fn f({params}) -> ({rets}) {{\n" + "".join(f"    {b}\n" for b in body)
           + f"    return {', '.join(e for _, e, _ in cases)}\n}}\n")
    return src, cases


DTYPE_OF = {"qd": "f64", "kd": "f64", "vd": "f64", "qh": "f16", "kh": "f16", "vh": "f16", "qb": "bf16",
            "kb": "bf16", "vb": "bf16", "bm": "bool"}


def inputs():
    rng = np.random.default_rng(27)
    shapes = {"q": (B, H, L, E), "k2": (B, 2, S, E), "v2": (B, 2, S, E), "k4": (B, 4, S, E), "v4": (B, 4, S, EV),
              "cs": (B, S, E), "sn": (B, S, E), "fm": (B, 1, L, S), "q5": (B, H, L5, E), "qd": (B, H, L, E),
              "kd": (B, 2, S, E), "vd": (B, 2, S, EV), "qh": (B, H, L, E), "kh": (B, 4, S, E), "vh": (B, 4, S, EV),
              "qb": (B, H, L, E), "kb": (B, 2, S, E), "vb": (B, 2, S, EV), "vt": (B, S, 2 * EV), "cq": (B, L, E),
              "sq": (B, L, E), "fq": (L, E // 2, 2), "fk": (S, E // 2, 2)}
    x = {n: rnd(rng.standard_normal(s), DTYPE_OF.get(n, "f32")).astype(np.float64) for n, s in shapes.items()}
    x["fm"][1, 0, 3, :5] = -np.inf
    x["bm"] = rng.random((L, S)) < 0.6
    x["bm"][2] = True  # (the f64 case hides where bm is true: a row that sees no key, NaN)
    return x


def plan_checks(tdslc, t, src):
    """--emit=ir: every attention one kernel, no repeat copied: no buffer of B x H key or
    value rows (a copy of v at its KV heads where its rows are not dense)."""
    p = emit_text(tdslc, src, "ir")
    text = p.stdout + p.stderr
    plan = p.stdout.split("\nkernels:")[1] if p.returncode == 0 and "\nkernels:" in p.stdout else ""
    kernels, bufs = plan.split("\nbuffers:")[0], plan.split("\nbuffers:")[1] if "\nbuffers:" in plan else ""
    t.check("emit_ir_every_attention_one_kernel", kernels.count("scaled_dot_product_attention  lines") == 22, text)
    rot = [ln.strip() for ln in kernels.splitlines() if re.match(r"\s*k\d+: .*\b(cat|stack)\b", ln)]
    # stored: the k three attentions read, the one that is no rotation, and the 4 ks repeated for
    # 4 query heads each (a key/value head's k is rotated once, by its kernel)
    t.check("emit_ir_only_the_shared_the_repeated_and_the_non_rotation_in_a_kernel", len(rot) == 6, "\n".join(rot) or text)
    big = []
    for ln in bufs.splitlines()[1:]:
        m = re.search(r"\[([0-9, ]+)\]", ln)
        shape = [int(d) for d in m.group(1).split(",")] if m else []
        if S in shape and shape[-1] in (E, EV) and np.prod(shape) == B * H * S * shape[-1]:
            big.append(ln.strip())
    t.check("emit_ir_no_key_or_value_buffer_at_the_query_heads", plan != "" and not big, "\n".join(big) or text)


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    x = inputs()
    src, cases = program(x)
    plan_checks(tdslc, t, src)
    feed = {n: to_npy(a, DTYPE_OF.get(n, "f32")) for n, a in x.items()}
    want = [rnd(w, dt).astype(np.float64) for dt, _, w in cases]
    p, outs = run_outputs(tdslc, src, feed)
    errs = compare_kinds(p, outs, want, [dt for dt, _, _ in cases])
    whole = [e for e in errs if not e.startswith("out")]
    for i, (dt, expr, _) in enumerate(cases):
        mine = whole + [e for e in errs if e.startswith(f"out{i}:")]
        t.report(f"{dt} {expr}", mine, src if mine else None)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
