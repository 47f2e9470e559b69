#!/usr/bin/python3
"""tests/run/test_buffer_plan.py TDSLC: the storage a program's temporaries take
(`--emit=kernels`' buffer lines, after temps whose lives do not overlap share a buffer:
ir/share.c), checked against the arithmetic of the sizes the program's values have, and
the same programs run against NumPy.

  - a chain of same-sized intermediates (six scans, each reading the one before) holds
    at most two of them at once: its temps take at most 2 x its size (and a row's
    accumulator);
  - a step-by-step scan (Mamba's selective scan as mamba-minimal writes it): a state
    [D, N] updated T times from a[i] (given, or computed as exp(u * -exp(A_log))), each
    step's y = x @ c[i] kept for a stack at the end. Its temps need two states (the one read and the one
    written) and the T outputs the stack reads: not a state per step (a small output
    kept to the end pinning a state's buffer), nor the [T, D, N] exp whose steps read
    disjoint slices (each element is computed once either way: recomputed in the step
    that reads it, it is never stored);
  - a linear whose output is split in two halves, one read at once (a chain of 40 ops),
    the other only at the end (Mamba's in_proj and its res): the late half is computed
    where it is read (ir/late_half.c), so the temps hold the chain's two intermediates
    and little more, not the whole product across the chain;
  - in place: a temp written over the temp its first kernel reads last, where that
    kernel reads each element before, in the same iteration, the one store writing it
    (ir/inplace.c): mamba's scan with its tail (the recurrence's kernel stores
    y + u*D straight over delta, which it reads last; then a linear) holds delta and u
    only, not delta, u and the stacked y; a chain of row cumsums (each written over
    the one before) holds one intermediate; ResNet's bottlenecks (the residual GEMM's
    result, bn(conv3) + identity and its ReLU, over the identity it reads last: a
    downsample's result, then the block before's) hold one block output, not two. And where the reuse would be wrong, a
    cumsum reading the one before flipped (the element it writes over is read later in
    the row), the two keep apart: checked by the plan and by the values, against NumPy;
  - a result written in place over a temp its first kernel reads last (ConvNeXt's block:
    its input kept for the residual, out = y + f(y) read through a permute) takes no
    buffer for that temp: it lives in the result's storage (ir/share.c); read flipped,
    the temp keeps a buffer of its own;
  - temps whose lives end before the result's first kernel live in the result's storage,
    which holds nothing until then (ir/share.c: Mamba's x_dbl and GEMM packs, GPT-2's
    layers in its logits): a cumsum read only by a reduction the result reads takes no
    buffer, and two such temps read by one kernel lie apart in it (early, early2).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, run_outputs  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
BACKEND = require_backend(TDSLC)
T = Tally()

T_, D, N = 16, 256, 16
ML, MD, MN = 32, 64, 16
ROWS, COLS = 64, 256
LR, LK, LH = 64, 96, 128
RC, RC4, RW, RH = 16, 32, 8, 12
QB, QC, QS = 2, 24, 5
SRC = f"""fn steps(a: f32[{T_}, {D}, {N}], u: f32[{T_}, {D}], c: f32[{T_}, {N}]) -> f32[{D}, {T_}] {{
    x = torch.zeros({D}, {N})
    ys = []
    for i in range({T_}) {{
        x = a[i] * x + u[i].unsqueeze(-1)
        ys.append(x @ c[i])
    }}
    return torch.stack(ys, dim=1)
}}
fn scan(u: f32[{T_}, {D}], A_log: f32[{D}, {N}], c: f32[{T_}, {N}]) -> f32[{D}, {T_}] {{
    a = torch.exp(u.unsqueeze(-1) * -torch.exp(A_log))
    x = torch.zeros({D}, {N})
    ys = []
    for i in range({T_}) {{
        x = a[i] * x + u[i].unsqueeze(-1)
        ys.append(x @ c[i])
    }}
    return torch.stack(ys, dim=1)
}}
fn chain(x: f32[{ROWS}, {COLS}]) -> f32[{ROWS}, {COLS}] {{
    for i in range(6) {{
        x = torch.cumsum(x, i % 2)
    }}
    return x
}}
fn late(x: f32[{LR}, {LK}], w: f32[{2 * LH}, {LK}]) -> f32[{LR}, {LH}] {{
    h, r = F.linear(x, w).split([{LH}, {LH}], dim=-1)
    for i in range(20) {{
        h = torch.tanh(torch.cumsum(h, i % 2))
    }}
    return h * r
}}
fn mtail(dt: f32[1, {ML}, {MD}], A: f32[{MD}, {MN}], Bm: f32[1, {ML}, {MN}], Cm: f32[1, {ML}, {MN}],
         u0: f32[1, {ML}, {MD}], Dp: f32[{MD}], W: f32[{MD}, {MD}]) -> f32[1, {ML}, {MD}] {{
    delta = F.softplus(dt * 2.0)
    u = torch.cumsum(u0, 1)
    deltaA = torch.exp(torch.einsum('bld,dn->bldn', delta, A))
    deltaB_u = torch.einsum('bld,bln,bld->bldn', delta, Bm, u)
    x = torch.zeros(1, {MD}, {MN})
    ys = []
    for i in range({ML}) {{
        x = deltaA[:, i] * x + deltaB_u[:, i]
        ys.append(torch.einsum('bdn,bn->bd', x, Cm[:, i, :]))
    }}
    y = torch.stack(ys, dim=1)
    return (y + u * Dp) @ W
}}
fn bnorm(x: f32[1, C, H, W], p: f32[4, C]) -> f32[1, C, H, W] {{
    return F.batch_norm(x, p[2], p[3], p[0], p[1], training=False, eps=1e-5)
}}
fn block(x: f32[1, CI, H, W], identity: f32[1, CO, H, W], w1: f32[{RW}, CI, 1, 1], w2: f32[{RW}, {RW}, 3, 3],
         w3: f32[CO, {RW}, 1, 1], p: f32[4, CO]) -> f32[1, CO, H, W] {{
    out = F.relu(F.conv2d(x, w1))
    out = F.relu(F.conv2d(out, w2, padding=1))
    out = bnorm(F.conv2d(out, w3), p)
    out += identity
    return F.relu(out)
}}
fn bottle(x: f32[1, {RC}, {RH}, {RH}], wd: f32[{RC4}, {RC}, 1, 1], pd: f32[4, {RC4}], w1: f32[{RW}, {RC}, 1, 1],
          w2: f32[{RW}, {RW}, 3, 3], w3: f32[{RC4}, {RW}, 1, 1], p3: f32[4, {RC4}], v1: f32[{RW}, {RC4}, 1, 1],
          v2: f32[{RW}, {RW}, 3, 3], v3: f32[{RC4}, {RW}, 1, 1], q3: f32[4, {RC4}]) -> f32[1, {RC4}, {RH}, {RH}] {{
    y = block(x, bnorm(F.conv2d(x, wd), pd), w1, w2, w3, p3)
    return block(y, y, v1, v2, v3, q3)
}}
fn same(x: f32[{ROWS}, {COLS}]) -> f32[{COLS}, {ROWS}] {{
    c1 = torch.cumsum(x, 1)
    c2 = torch.cumsum(c1 * 2.0, 1)
    return torch.cumsum(c2, 0).t().contiguous()
}}
fn resid(x: f32[{QB}, {QC}, {QS}, {QS}], w: f32[{QC}, {QC}]) -> f32[{QB}, {QC}, {QS}, {QS}] {{
    y = torch.cumsum(x, 1)
    h = F.linear(y.permute(0, 2, 3, 1), w)
    return y + h.permute(0, 3, 1, 2)
}}
fn rflip(x: f32[{QB}, {QC}, {QS}, {QS}], w: f32[{QC}, {QC}]) -> f32[{QB}, {QC}, {QS}, {QS}] {{
    y = torch.cumsum(x, 1)
    h = F.linear(y.permute(0, 2, 3, 1), w)
    return y.flip(1) + h.permute(0, 3, 1, 2)
}}
fn flip(x: f32[{ROWS}, {COLS}]) -> f32[{COLS}] {{
    c1 = torch.cumsum(x, 1)
    c2 = torch.cumsum(c1.flip(1) * 2.0, 1)
    return torch.cumsum(c2, 0).t().contiguous().sum(1)
}}
fn early(x: f32[{ROWS}, {COLS}]) -> f32[{ROWS}, {COLS}] {{
    c = torch.cumsum(x, 1)
    s = c.amax(0, keepdim=True)
    return torch.cumsum(x * s, 1)
}}
fn early2(x: f32[{ROWS}, {2 * COLS}]) -> f32[{ROWS}, {2 * COLS}] {{
    c = torch.cumsum(x[:, :{COLS}], 1)
    d = torch.cumsum(c.flip(1), 1)
    s = (c * d).amax(1, keepdim=True)
    return torch.cumsum(x * s, 1)
}}"""

BUF = re.compile(r"^buffer b\d+ (\w+)( scratch)? (\w+)\[([\d, ]*)\] (\S+)")
SIZES = {"f32": 4, "i64": 8}


def temp_bytes(fn):
    """(bytes of the buffers the entry allocates for temps, their lines) of fn, or (None, error)."""
    p = emit_text(TDSLC, SRC, "kernels", ["--fn", fn])
    if p.returncode != 0:
        return None, f"exit {p.returncode}: {p.stderr.strip()[:800]}"
    total, lines = 0, []
    for ln in p.stdout.splitlines():
        m = BUF.match(ln)
        if m and m.group(1) == "temp" and not m.group(2):  # scratch: per thread, not the entry's
            numel = int(np.prod([int(s) for s in m.group(4).split(",") if s.strip()], dtype=np.int64))
            total += numel * SIZES[m.group(3)]
            lines.append(ln)
    return total, lines


def check_bound(name, fn, bound, why):
    got, lines = temp_bytes(fn)
    if got is None:
        return T.report(name, [lines], SRC)
    T.check(name, got <= bound, f"temps take {got} bytes, want at most {bound} ({why}):\n" + "\n".join(lines))


# the chain: two values of ROWS x COLS f32 at once, and a cumsum's accumulator (a row or a column)
v = ROWS * COLS * 4
check_bound("chain: at most two intermediates live", "chain", 2 * v + max(ROWS, COLS) * 4,
            f"two of {v} bytes and an accumulator")
# the scan: two states, the T step outputs the stack reads; with the decays a given
# (steps) and computed as exp(u * -exp(A_log)) (scan: recomputed where each step reads
# its slice, a [T, D, N] buffer of T x a state would pass the bound)
state, y = D * N * 4, D * 4
for fn in ("steps", "scan"):
    check_bound(f"{fn}: two states and the step outputs", fn, 2 * state + T_ * y,
                f"2 states of {state} bytes and {T_} outputs of {y}")
# the late half: the chain's two intermediates and at most one more of their size (the
# whole product held across the chain is two more)
half = LR * LH * 4
check_bound("late: the second half of a linear computed where it is read", "late", 3 * half,
            f"3 of {half} bytes")

# in place: mamba's tail over delta (delta and u, and the cumsum's accumulator row);
# the row cumsums (one intermediate and an accumulator row); the flipped read keeps
# two intermediates apart (in place there, the row's later reads would see the writes)
md = ML * MD * 4
check_bound("mtail: y + u*D written over delta", "mtail", 2 * md + MD * 4, f"2 of {md} bytes and a row of {MD * 4}")
check_bound("same: cumsums each over the one before", "same", v + max(ROWS, COLS) * 4,
            f"one of {v} bytes and an accumulator")
# ResNet's bottlenecks: the residual GEMM's result (bn(conv3) + identity, relu) written
# over its identity, which it reads last (a downsample's result, then the block before's),
# so one block output's buffer is held, not two
blk = RC4 * RH * RH * 4
got, lines = temp_bytes("bottle")
if got is None:
    T.report("bottle: --emit=kernels", [lines], SRC)
else:
    big = [ln for ln in lines if BUF.match(ln).group(3) == "f32" and
           int(np.prod([int(d) for d in BUF.match(ln).group(4).split(",")])) * 4 >= blk]
    T.check("bottle: a bottleneck's output written over its identity", len(big) <= 1,
            f"{len(big)} temps of a block output's {blk} bytes or more, want 1:\n" + "\n".join(lines))
# the residual's input in the result's storage: of the two temps of its size (y and the
# linear's channels-last h) only h keeps a buffer; read flipped, y keeps one too
qv = QB * QC * QS * QS * 4
for fn, want_n in (("resid", 1), ("rflip", 2)):
    got, lines = temp_bytes(fn)
    if got is None:
        T.report(f"{fn}: --emit=kernels", [lines], SRC)
        continue
    big = [ln for ln in lines if int(np.prod([int(d) for d in BUF.match(ln).group(4).split(",")])) * 4 >= qv]
    T.check(f"{fn}: {want_n} temps of the block's size", len(big) == want_n,
            f"{len(big)} temps of {qv} bytes or more, want {want_n}:\n" + "\n".join(lines))
got, lines = temp_bytes("flip")  # (its result, summed, cannot hold c1)
if got is None:
    T.report("flip: --emit=kernels", [lines], SRC)
else:
    T.check("flip: a flipped read is not written over", got >= 2 * v,
            f"temps take {got} bytes, want at least {2 * v} (two intermediates):\n" + "\n".join(lines))
# early temps in the result's storage: only the reductions' rows keep buffers
check_bound("early: a temp dead before the result's kernel lives in it", "early", COLS * 4, f"a row of {COLS * 4}")
check_bound("early2: two such temps, one kernel reading both", "early2", ROWS * 4, f"a column of {ROWS * 4}")

# the same programs, run
rng = np.random.default_rng(27)
u = rng.uniform(-1, 1, (T_, D)).astype(np.float32)
a_log = rng.uniform(-2, 0.5, (D, N)).astype(np.float32)
c = rng.uniform(-1, 1, (T_, N)).astype(np.float32)
a = np.exp(u.astype(np.float64)[:, :, None] * -np.exp(a_log.astype(np.float64)))
x, ys = np.zeros((D, N)), []
for i in range(T_):
    x = a[i] * x + u[i].astype(np.float64)[:, None]
    ys.append(x @ c[i].astype(np.float64))
want = np.stack(ys, 1)
for fn, ins in (("steps", {"a": a.astype(np.float32), "u": u, "c": c}), ("scan", {"u": u, "A_log": a_log, "c": c})):
    p, outs = run_outputs(TDSLC, SRC, ins, fn=fn, backend=BACKEND)
    if p.returncode != 0 or len(outs) != 1:
        T.report(f"{fn} runs", [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:800]}"], SRC)
        continue
    err = float(np.max(np.abs(outs[0].astype(np.float64) - want)))
    T.check(f"{fn} matches NumPy", outs[0].shape == want.shape and err <= 1e-4 * max(1.0, float(np.max(np.abs(want)))),
            f"shape {outs[0].shape}, max abs error {err}")
xin = rng.uniform(-1, 1, (ROWS, COLS)).astype(np.float32)
want = xin.astype(np.float64)
for i in range(6):
    want = np.cumsum(want, i % 2)
p, outs = run_outputs(TDSLC, SRC, {"x": xin}, fn="chain", backend=BACKEND)
if p.returncode != 0 or len(outs) != 1:
    T.report("chain runs", [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:800]}"], SRC)
else:
    err = float(np.max(np.abs(outs[0].astype(np.float64) - want)))
    T.check("chain matches NumPy", err <= 1e-5 * float(np.max(np.abs(want))), f"max abs error {err}")
xl = rng.uniform(-1, 1, (LR, LK)).astype(np.float32)
wl = rng.uniform(-0.2, 0.2, (2 * LH, LK)).astype(np.float32)
z = xl.astype(np.float64) @ wl.astype(np.float64).T
want, r = z[:, :LH], z[:, LH:]
for i in range(20):
    want = np.tanh(np.cumsum(want, i % 2))
want = want * r
p, outs = run_outputs(TDSLC, SRC, {"x": xl, "w": wl}, fn="late", backend=BACKEND)
if p.returncode != 0 or len(outs) != 1:
    T.report("late runs", [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:800]}"], SRC)
else:
    err = float(np.max(np.abs(outs[0].astype(np.float64) - want)))
    T.check("late matches NumPy", outs[0].shape == want.shape and err <= 1e-4 * max(1.0, float(np.max(np.abs(want)))),
            f"shape {outs[0].shape}, max abs error {err}")
# in place, run
dt_ = rng.uniform(-1, 1, (1, ML, MD)).astype(np.float32)
A_ = -np.exp(rng.uniform(-2, 0.5, (MD, MN))).astype(np.float32)
Bm_, Cm_ = (rng.uniform(-1, 1, (1, ML, MN)).astype(np.float32) for _ in range(2))
u0_ = rng.uniform(-0.3, 0.3, (1, ML, MD)).astype(np.float32)
Dp_, W_ = rng.uniform(-1, 1, (MD,)).astype(np.float32), rng.uniform(-0.2, 0.2, (MD, MD)).astype(np.float32)
z = 2.0 * dt_.astype(np.float64)
delta = np.where(z > 20, z, np.log1p(np.exp(np.minimum(z, 20))))
uu = np.cumsum(u0_.astype(np.float64), 1)
dA = np.exp(np.einsum('bld,dn->bldn', delta, A_.astype(np.float64)))
dBu = np.einsum('bld,bln,bld->bldn', delta, Bm_.astype(np.float64), uu)
x, ys = np.zeros((1, MD, MN)), []
for i in range(ML):
    x = dA[:, i] * x + dBu[:, i]
    ys.append(np.einsum('bdn,bn->bd', x, Cm_[:, i, :].astype(np.float64)))
want = (np.stack(ys, 1) + uu * Dp_.astype(np.float64)) @ W_.astype(np.float64)
runs = [("mtail", {"dt": dt_, "A": A_, "Bm": Bm_, "Cm": Cm_, "u0": u0_, "Dp": Dp_, "W": W_}, want, 1e-4)]
for fn, flipped in (("same", False), ("flip", True)):
    c1 = np.cumsum(xin.astype(np.float64), 1)
    c2 = np.cumsum((c1[:, ::-1] if flipped else c1) * 2.0, 1)
    runs.append((fn, {"x": xin}, np.cumsum(c2, 0).T.sum(1) if flipped else np.cumsum(c2, 0).T, 1e-5))
ex = xin.astype(np.float64)
runs.append(("early", {"x": xin}, np.cumsum(ex * np.cumsum(ex, 1).max(0, keepdims=True), 1), 1e-5))
x2 = rng.uniform(-1, 1, (ROWS, 2 * COLS)).astype(np.float32)
ec = np.cumsum(x2[:, :COLS].astype(np.float64), 1)
es = (ec * np.cumsum(ec[:, ::-1], 1)).max(1, keepdims=True)
runs.append(("early2", {"x": x2}, np.cumsum(x2.astype(np.float64) * es, 1), 1e-5))


def np_conv(x, w, pad=0):
    """conv2d of one image [C, H, W] by w [O, C, k, k], stride 1, zero padding pad (f64)."""
    k = w.shape[-1]
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    h, wd = xp.shape[1] - k + 1, xp.shape[2] - k + 1
    return sum(np.einsum('oc,chw->ohw', w[:, :, i, j], xp[:, i:i + h, j:j + wd]) for i in range(k) for j in range(k))


def np_bn(x, p):
    return (x - p[2][:, None, None]) / np.sqrt(p[3][:, None, None] + 1e-5) * p[0][:, None, None] + p[1][:, None, None]


def np_block(x, idn, w1, w2, w3, p):
    out = np.maximum(np_conv(x, w1), 0)
    out = np.maximum(np_conv(out, w2, 1), 0)
    return np.maximum(np_bn(np_conv(out, w3), p) + idn, 0)


def bn_params(c):
    return np.stack([rng.uniform(0.5, 1.5, c), rng.uniform(-0.5, 0.5, c), rng.uniform(-0.5, 0.5, c),
                     rng.uniform(0.5, 2, c)]).astype(np.float32)


bi = {"x": rng.uniform(-1, 1, (1, RC, RH, RH)), "wd": rng.uniform(-0.3, 0.3, (RC4, RC, 1, 1)), "pd": bn_params(RC4),
      "w1": rng.uniform(-0.3, 0.3, (RW, RC, 1, 1)), "w2": rng.uniform(-0.3, 0.3, (RW, RW, 3, 3)),
      "w3": rng.uniform(-0.3, 0.3, (RC4, RW, 1, 1)), "p3": bn_params(RC4),
      "v1": rng.uniform(-0.3, 0.3, (RW, RC4, 1, 1)), "v2": rng.uniform(-0.3, 0.3, (RW, RW, 3, 3)),
      "v3": rng.uniform(-0.3, 0.3, (RC4, RW, 1, 1)), "q3": bn_params(RC4)}
bi = {k: a.astype(np.float32) for k, a in bi.items()}
b64 = {k: a.astype(np.float64) for k, a in bi.items()}
y = np_block(b64["x"][0], np_bn(np_conv(b64["x"][0], b64["wd"]), b64["pd"]), b64["w1"], b64["w2"], b64["w3"],
             b64["p3"])
runs.append(("bottle", bi, np_block(y, y, b64["v1"], b64["v2"], b64["v3"], b64["q3"])[None], 1e-5))
qx = rng.uniform(-1, 1, (QB, QC, QS, QS)).astype(np.float32)
qw = rng.uniform(-0.3, 0.3, (QC, QC)).astype(np.float32)
qy = np.cumsum(qx.astype(np.float64), 1)
qh = (qy.transpose(0, 2, 3, 1) @ qw.astype(np.float64).T).transpose(0, 3, 1, 2)
runs.append(("resid", {"x": qx, "w": qw}, qy + qh, 1e-5))
runs.append(("rflip", {"x": qx, "w": qw}, qy[:, ::-1] + qh, 1e-5))
for fn, ins, want, tol in runs:
    p, outs = run_outputs(TDSLC, SRC, ins, fn=fn, backend=BACKEND)
    if p.returncode != 0 or len(outs) != 1:
        T.report(f"{fn} runs", [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:800]}"], SRC)
        continue
    err = float(np.max(np.abs(outs[0].astype(np.float64) - want)))
    T.check(f"{fn} matches NumPy", outs[0].shape == want.shape and err <= tol * max(1.0, float(np.max(np.abs(want)))),
            f"shape {outs[0].shape}, max abs error {err}")
sys.exit(T.summary())
