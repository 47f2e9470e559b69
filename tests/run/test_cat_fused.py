#!/usr/bin/python3
"""tests/run/test_cat_fused.py TDSLC: cats and stacks recomputed piece by piece inside
their elementwise readers' kernels (ir/fuse.c's join_why, ir/ew.c's split nests,
ir/scalar.c's cat_expr), against NumPy's concatenate and stack:

  - RoPE's rotate_half (cat((-x2, x1), -1) * sin + x * cos) and the same with pieces
    of different sizes; a negative dim and three pieces; a stack; f64, i32, mixed
    dtypes (i32 and f32: the promoted f32); a cat read twice (once flipped: the
    pieces' bounds met from the other end), read transposed, broadcast against
    another operand, split along the outermost (parallel) dim of a large result, read
    transposed by a copy (register-block transposes within each piece) and by an
    elementwise op (tiles within each piece);
  - a cat that is also an output (stored), one a reduction reads (read in place: RED_SRC
    below); a cat whose reader a stack reads (stored: recomputed piece by piece it would
    store the reader);
  - a cat read through a view that splits its dim over two dims (f32 and f16): stored;
    why a cat stays stored, in `--emit=ir` (through such a view; read by a scan);
  - five cats of 16 pieces each (f16) summed: more piece bounds along one dim than a
    kernel splits its loops at, each read through selects over its clamped pieces;
and the plan: the RoPE function is one kernel (no kernel of its own for the cat), its
innermost loop split in two, no select in it.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, run_outputs  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
T = Tally()
RNG = np.random.default_rng(27)


def many_cuts(rng):
    """Five ways to cut 48 columns into 16 pieces: [[(lo, hi), ...], ...]."""
    cuts = []
    for _ in range(5):
        b = [0] + sorted(rng.choice(np.arange(1, 48), 15, replace=False).tolist()) + [48]
        cuts.append(list(zip(b[:-1], b[1:])))
    return cuts


CUTS = many_cuts(np.random.default_rng(5))
MANY = " + ".join("torch.cat((" + ", ".join(f"m[:, {lo}:{hi}]" for lo, hi in c) + "), dim=1)" for c in CUTS)

SRC = """
fn rope(x: f32[2, 3, 5, 8], c: f32[5, 8], s: f32[5, 8]) -> f32[2, 3, 5, 8] {
    rot = torch.cat((-x[..., 4:], x[..., :4]), dim=-1)
    return x * c + rot * s
}

fn f(x: f32[2, 3, 5, 8], c: f32[5, 8], s: f32[5, 8], a: f32[4, 2, 6], b: f32[4, 3, 6], e: f32[4, 1, 6],
     d: f64[3, 7], d2: f64[2, 7], i: i32[5, 4], big: f32[300, 128], h: f16[4, 8],
      m: f16[3, 48], ta: f32[40, 48], tb: f32[24, 48], tc: f32[64, 20], td: f32[64, 30]) -> (
        f32[2, 3, 5, 8], f32[4, 6, 6], f32[4, 3, 2, 6], f64[5, 7], i32[5, 12], f32[10, 4], f32[4, 4, 5],
         f32[6, 5], f32[4, 5, 6], f32[300, 128], f32[4, 5, 6], f32[4, 5, 6], f32[4, 5], f32[4, 2, 4],
         f16[4, 2, 4], f16[3, 48], f32[48, 64], f32[50, 64], f32[6]) {
    r1 = x * c + torch.cat((x[..., 5:], -x[..., :5]), dim=-1) * s
    r2 = torch.cat((a, b * 2.0, e), dim=-2) + 1.0
    r3 = torch.stack((a, a * a, -a), dim=1) * 3.0
    r4 = torch.exp(torch.cat((d, d2 - 1.0), dim=0))
    r5 = torch.cat((i, -i, i * 2), dim=1) * 3
    r6 = torch.cat((i, a[0, 0, :4].expand(5, 4)), dim=0) + 0.5
    y = torch.cat((a[:, :, 1:], b[:, :2, 1:] * 2.0), dim=1)
    r7 = y * y + y.flip(1)
    r8 = torch.cat((a[0], b[0]), dim=0).t() * 2.0 + a[0, 0, :].unsqueeze(1)
    r9 = torch.cat((a, b), dim=1) * torch.cat((e, e), dim=-1)[:, :, 3:9]
    r10 = torch.cat((big[:100] * 2.0, -big[100:]), dim=0) + 1.0
    z = torch.cat((b, a), dim=1)
    r11 = z * 2.0
    r12 = torch.cat((a, b), dim=1).sum(-1) + 1.0
    r13 = torch.cat((a[:, 0, :], b[:, 0, :2]), dim=1).view(4, 2, 4) * 2.0
    r14 = torch.cat((h[:, :3], -h[:, 3:]), dim=1).view(4, 2, 4) * 2.0
    r15 = MANY
    r16 = torch.cat((ta, tb), dim=0).t().contiguous()
    r17 = torch.cat((tc, td), dim=1).t() * 2.0 + 1.0
    r18 = torch.stack((a[0, 0], torch.cat((a[0, 1, :2], b[0, 0, :4])) * 2.0, e[0, 0])).sum(0)
    return r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, z, r11, r12, r13, r14, r15, r16, r17, r18
}
""".replace("MANY", MANY)


def inputs():
    def f32(*shape):
        return RNG.standard_normal(shape).astype(np.float32)
    return {"x": f32(2, 3, 5, 8), "c": f32(5, 8), "s": f32(5, 8), "a": f32(4, 2, 6), "b": f32(4, 3, 6),
            "e": f32(4, 1, 6), "d": RNG.standard_normal((3, 7)), "d2": RNG.standard_normal((2, 7)),
            "i": RNG.integers(-50, 50, (5, 4)).astype(np.int32), "big": f32(300, 128),
            "h": RNG.standard_normal((4, 8)).astype(np.float16),
            "m": RNG.standard_normal((3, 48)).astype(np.float16), "ta": f32(40, 48), "tb": f32(24, 48),
            "tc": f32(64, 20), "td": f32(64, 30)}


def want(v):
    x, c, s, a, b, e, d, d2, i, big, h, m = (v[k] for k in ("x", "c", "s", "a", "b", "e", "d", "d2", "i", "big", "h",
                                                             "m"))
    ta, tb, tc, td = v["ta"], v["tb"], v["tc"], v["td"]
    cat = np.concatenate
    many = cat([m[:, lo:hi] for lo, hi in CUTS[0]], axis=1)
    for cut in CUTS[1:]:
        many = many + cat([m[:, lo:hi] for lo, hi in cut], axis=1)  # (f16 sums, rounded each time)
    y = cat((a[:, :, 1:], b[:, :2, 1:] * 2), axis=1)
    hc = cat((h[:, :3], -h[:, 3:]), axis=1).astype(np.float32).reshape(4, 2, 4) * 2
    return [
        x * c + cat((x[..., 5:], -x[..., :5]), axis=-1) * s,
        cat((a, b * 2, e), axis=-2) + 1,
        np.stack((a, a * a, -a), axis=1) * 3,
        np.exp(cat((d, d2 - 1), axis=0)),
        cat((i, -i, i * 2), axis=1) * 3,
        cat((i.astype(np.float32), np.broadcast_to(a[0, 0, :4], (5, 4))), axis=0) + np.float32(0.5),
        y * y + y[:, ::-1],
        cat((a[0], b[0]), axis=0).T * 2 + a[0, 0, :][:, None],
        cat((a, b), axis=1) * cat((e, e), axis=-1)[:, :, 3:9],
        cat((big[:100] * 2, -big[100:]), axis=0) + 1,
        cat((b, a), axis=1),
        cat((b, a), axis=1) * 2,
        cat((a, b), axis=1).sum(-1) + 1,
        cat((a[:, 0, :], b[:, 0, :2]), axis=1).reshape(4, 2, 4) * 2,
        hc.astype(np.float16),
        many,
        np.concatenate((ta, tb), axis=0).T,
        np.concatenate((tc, td), axis=1).T * 2 + 1,
        np.stack((a[0, 0], cat((a[0, 1, :2], b[0, 0, :4])) * 2, e[0, 0])).sum(0),
    ]


def main():
    require_backend(TDSLC)
    v = inputs()
    p, outs = run_outputs(TDSLC, SRC, v, fn="f")
    if p.returncode != 0:
        T.report("run", [f"exit {p.returncode}: {p.stderr.strip()[:800]}"], program=SRC)
    else:
        check_outputs("f", outs, want(v))
    check_reduced()
    p = emit_text(TDSLC, SRC, "ir", ["--json", "--fn", "rope"])
    if p.returncode != 0:
        T.report("rope plan", [f"exit {p.returncode}: {p.stderr.strip()[:800]}"])
    else:
        ks = json.loads(p.stdout).get("kernels", [])
        T.check("rope: one kernel", len(ks) == 1, json.dumps(ks)[:800])
    # its loops split where the pieces change (0..4, 4..8), each piece read directly
    p = emit_text(TDSLC, SRC, "kernels", ["--fn", "rope"])
    body = p.stdout.split("kernel k0", 1)[-1]
    T.check("rope: split, no selects", p.returncode == 0 and body.count("in 0..4 {") == 2 and "?" not in body,
            body[:1500])
    # why a cat stays stored, as --emit=ir says it (ir/why.c's piece reasons)
    for fn, reason in (("split_view", "read by mul at line 3 (k1) through a view that splits the dim its pieces"
                        " change along"),
                       ("reduced", "read by cumsum at line 8 (k1), which is no elementwise op to split where the"
                        " pieces change")):
        p = emit_text(TDSLC, WHY_SRC, "ir", ["--fn", fn])
        T.check(f"{fn}: --emit=ir gives the cat's reason", p.returncode == 0 and f"# stored: {reason}" in p.stdout,
                p.stdout[:1500] + p.stderr[:400])
    sys.exit(T.summary())


# Reductions reading a cat in place (ir/fuse.c's pieces_read_why, ir/row.c's row_cuts): the
# cat is never stored. ViT's class token then a layer norm, a softmax (pieces along the
# rows); sums, var_mean and argmax over the cat's dim (long rows: each pass split where the pieces
# change; a short row: unrolled); a mean over a channels-first cat (N, C, H, W). Then the
# column schedule's joined dims (ir/row.c's col_join): a channels-last layer norm's statistics
# of an NCHW x (H and W one loop of H W columns) and a mean over C of a padded x (not joined: the
# padding compares the index of W).
RED_SRC = """
fn reduced(cls: f32[1, 1, 64], x: f32[2, 16, 64], w: f32[64], b: f32[64], p: f32[8, 40], q: f32[8, 50],
           s: f32[8, 5], t: f32[8, 11], u: f64[6, 30], v: f64[4, 30], m: f32[2, 3, 4, 5], n: f32[2, 5, 4, 5],
           y: f32[2, 24, 6, 7]) -> (f32[2, 17, 64], f32[8], f32[8], f32[8], f64[10, 30], f32[8], f32[2, 4, 5],
           f32[2, 6, 7], f32[2, 6, 7], f32[2, 6, 9], i64[8]) {
    r1 = F.layer_norm(torch.cat([cls.expand(2, -1, -1), x], 1), (64,), w, b)
    r2 = torch.cat([p, q], -1).sum(-1)
    r3, r4 = torch.var_mean(torch.cat([p, q * 2.0], -1), -1)
    r5 = torch.softmax(torch.cat([u, v], 0), -1) * 2.0
    r6 = torch.cat([s, t], -1).sum(-1)
    r7 = torch.cat([m, n], 1).mean(1)
    r8, r9 = torch.var_mean(y.permute(0, 2, 3, 1), -1)
    r10 = F.pad(y, (1, 1)).mean(1)
    r11 = torch.cat([q, p, q], -1).argmax(-1)
    return r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11
}
"""


def red_inputs():
    def f32(*shape):
        return RNG.standard_normal(shape).astype(np.float32)
    return {"cls": f32(1, 1, 64), "x": f32(2, 16, 64), "w": f32(64), "b": f32(64), "p": f32(8, 40),
            "q": f32(8, 50), "s": f32(8, 5), "t": f32(8, 11), "u": RNG.standard_normal((6, 30)),
            "v": RNG.standard_normal((4, 30)), "m": f32(2, 3, 4, 5), "n": f32(2, 5, 4, 5), "y": f32(2, 24, 6, 7)}


def red_want(v):
    cat = np.concatenate

    def ln(z, eps=1e-5):
        z = z.astype(np.float64)
        return (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + eps)

    pq = cat((v["p"], v["q"] * 2), -1).astype(np.float64)
    e = np.exp(cat((v["u"], v["v"]), 0))
    y64 = v["y"].astype(np.float64)
    yp = np.pad(y64, ((0, 0), (0, 0), (0, 0), (1, 1)))
    return [(ln(cat((np.broadcast_to(v["cls"], (2, 1, 64)), v["x"]), 1)) * v["w"] + v["b"]).astype(np.float32),
            cat((v["p"], v["q"]), -1).astype(np.float64).sum(-1).astype(np.float32),
            pq.var(-1, ddof=1).astype(np.float32), pq.mean(-1).astype(np.float32), e / e.sum(-1, keepdims=True) * 2,
            cat((v["s"], v["t"]), -1).astype(np.float64).sum(-1).astype(np.float32),
            cat((v["m"], v["n"]), 1).astype(np.float64).mean(1).astype(np.float32),
            y64.var(1, ddof=1).astype(np.float32), y64.mean(1).astype(np.float32),
            yp.mean(1).astype(np.float32), cat((v["q"], v["p"], v["q"]), -1).argmax(-1)]


def check_outputs(name, outs, ws):
    T.check(f"{name}: outputs", len(outs) == len(ws), f"{len(outs)} outputs, want {len(ws)}")
    for k, (got, w) in enumerate(zip(outs, ws)):
        errs = []
        if got.dtype != w.dtype or got.shape != w.shape:
            errs.append(f"{got.dtype}{list(got.shape)}, want {w.dtype}{list(w.shape)}")
        elif w.dtype.kind == "f":
            tol = 1e-2 if w.dtype == np.float16 else 1e-5 if name == "f" else 1e-4
            if not np.allclose(got.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol):
                errs.append(f"max error {np.max(np.abs(got.astype(np.float64) - w)):.3g}")
        elif not np.array_equal(got, w):
            errs.append("values differ")
        T.report(f"{name}: r{k + 1}", errs)


def check_reduced():
    v = red_inputs()
    p, outs = run_outputs(TDSLC, RED_SRC, v, fn="reduced")
    if p.returncode != 0:
        return T.report("reduced: run", [f"exit {p.returncode}: {p.stderr.strip()[:800]}"], program=RED_SRC)
    check_outputs("reduced", outs, red_want(v))
    # no cat stored; r8 and r9 one loop of the 42 positions (H W joined), r10's not
    p = emit_text(TDSLC, RED_SRC, "ir", ["--fn", "reduced"])
    T.check("reduced: no cat stored", p.returncode == 0 and "buffers: 0 intermediate" in p.stdout, p.stdout[-1500:])
    p = emit_text(TDSLC, RED_SRC, "kernels", ["--fn", "reduced"])
    T.check("reduced: H W joined", p.returncode == 0 and " in 0..42 {" in p.stdout and " in 0..54 {" not in p.stdout,
            p.stdout[-3000:])


WHY_SRC = """fn split_view(a: f32[4, 6], b: f32[4, 6]) -> f32[4, 3, 4] {
    c = torch.cat([a, b], dim=1)
    return c.reshape(4, 3, 4) * 2 + 1
}
fn reduced(a: f32[4, 6], b: f32[4, 6]) -> f32[4, 12] {
    c = torch.cat([a, b], dim=1)
    d = c * 2
    return d + c.cumsum(-1)
}
"""

if __name__ == "__main__":
    main()
