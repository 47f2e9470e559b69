#!/usr/bin/python3
"""tests/run/test_recur.py TDSLC: scans written step by step (a state updated in a
Python-style loop, each step's output appended to a list and stacked), which ir/recur.c
turns into one kernel running the steps inside each row of the state
(ir/recur_build.c), against NumPy in f64; and, from `--emit=ir`, whether the
recurrence kernel was formed (it must be where the pattern holds, and must not be where
a step's state is read outside the steps: those run as before, and must still be right).

  - mamba: mamba-minimal's selective scan (exp(delta A) and delta B u recomputed in the
    steps, the state [1, D, N] from zeros, y = einsum('bdn,bn->bd'), then y + u D);
    D and N not multiples of a vector; `y + u D` is stored by the recurrence's kernel
    itself (ir/recur.c's tail): the program is that one kernel;
  - tailflip: the stack read at its own element and flipped (s * 2 + s.flip(1)): the
    recurrence is formed, the tail is not taken into it (a second kernel);
  - given: the decays a given as a [T, D, N] tensor, the state [D, N] from a given x0,
    stacked along dim 1; f32 and f64;
  - two: the same with T = 2;
  - final: the last state is returned too (read outside the steps): not fused;
  - batched: a batch of 2 states (a batched product per step): not fused.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, run_outputs  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
BACKEND = require_backend(TDSLC)
T = Tally()

L, DI, NS = 9, 20, 5
TG, D, N = 7, 33, 16


def given(name, dt, t):
    return f"""fn {name}(a: {dt}[{t}, {D}, {N}], u: {dt}[{t}, {D}], c: {dt}[{t}, {N}], x0: {dt}[{D}, {N}]) -> {dt}[{D}, {t}] {{
    x = x0
    ys = []
    for i in range({t}) {{
        x = a[i] * x + u[i].unsqueeze(-1)
        ys.append(x @ c[i])
    }}
    return torch.stack(ys, dim=1)
}}
"""


SRC = f"""fn mamba(u: f32[1, {L}, {DI}], delta: f32[1, {L}, {DI}], A: f32[{DI}, {NS}], Bm: f32[1, {L}, {NS}],
         Cm: f32[1, {L}, {NS}], D: f32[{DI}]) -> f32[1, {L}, {DI}] {{
    deltaA = torch.exp(torch.einsum('bld,dn->bldn', delta, A))
    deltaB_u = torch.einsum('bld,bln,bld->bldn', delta, Bm, u)
    x = torch.zeros(1, {DI}, {NS})
    ys = []
    for i in range({L}) {{
        x = deltaA[:, i] * x + deltaB_u[:, i]
        y = torch.einsum('bdn,bn->bd', x, Cm[:, i, :])
        ys.append(y)
    }}
    y = torch.stack(ys, dim=1)
    return y + u * D
}}
{given("given", "f32", TG)}{given("given64", "f64", TG)}{given("two", "f32", 2)}
fn tailflip(a: f32[{TG}, {D}, {N}], u: f32[{TG}, {D}], c: f32[{TG}, {N}], x0: f32[{D}, {N}]) -> f32[{D}, {TG}] {{
    x = x0
    ys = []
    for i in range({TG}) {{
        x = a[i] * x + u[i].unsqueeze(-1)
        ys.append(x @ c[i])
    }}
    s = torch.stack(ys, dim=1)
    return s * 2.0 + s.flip(1)
}}
fn final(a: f32[{TG}, {D}, {N}], u: f32[{TG}, {D}], c: f32[{TG}, {N}], x0: f32[{D}, {N}]) -> (f32[{D}, {TG}], f32[{D}, {N}]) {{
    x = x0
    ys = []
    for i in range({TG}) {{
        x = a[i] * x + u[i].unsqueeze(-1)
        ys.append(x @ c[i])
    }}
    return torch.stack(ys, dim=1), x
}}
fn batched(a: f32[{TG}, 2, {D}, {N}], c: f32[{TG}, 2, {N}]) -> f32[2, {TG}, {D}] {{
    x = torch.zeros(2, {D}, {N})
    ys = []
    for i in range({TG}) {{
        x = a[i] * x + 1.0
        ys.append(torch.einsum('bdn,bn->bd', x, c[i]))
    }}
    return torch.stack(ys, dim=1)
}}
"""

rng = np.random.default_rng(31)


def r(shape, lo=-1.0, hi=1.0, dt=np.float32):
    return rng.uniform(lo, hi, shape).astype(dt)


def f64(a):
    return a.astype(np.float64)


def steps(a, u, c, x0):
    x, ys = f64(x0), []
    for i in range(a.shape[0]):
        x = f64(a[i]) * x + f64(u[i])[:, None]
        ys.append(x @ f64(c[i]))
    return np.stack(ys, 1), x


cases = []
# mamba
u, delta = r((1, L, DI)), r((1, L, DI), 0.0, 0.5)
A, Bm, Cm, Dv = -np.exp(r((DI, NS), -2, 0.5)), r((1, L, NS)), r((1, L, NS)), r((DI,))
dA = np.exp(np.einsum('bld,dn->bldn', f64(delta), f64(A)))
dBu = np.einsum('bld,bln,bld->bldn', f64(delta), f64(Bm), f64(u))
x, ys = np.zeros((1, DI, NS)), []
for i in range(L):
    x = dA[:, i] * x + dBu[:, i]
    ys.append(np.einsum('bdn,bn->bd', x, f64(Cm[:, i, :])))
cases.append(("mamba", {"u": u, "delta": delta, "A": A.astype(np.float32), "Bm": Bm, "Cm": Cm, "D": Dv},
              [np.stack(ys, 1) + f64(u) * f64(Dv)], True))
for name, dt, t in (("given", np.float32, TG), ("given64", np.float64, TG), ("two", np.float32, 2)):
    ins = {"a": r((t, D, N), 0.5, 1.0, dt), "u": r((t, D), dt=dt), "c": r((t, N), dt=dt), "x0": r((D, N), dt=dt)}
    cases.append((name, ins, [steps(**ins)[0]], True))
ins = {"a": r((TG, D, N), 0.5, 1.0), "u": r((TG, D)), "c": r((TG, N)), "x0": r((D, N))}
cases.append(("final", ins, list(steps(**ins)), False))
ins = {"a": r((TG, D, N), 0.5, 1.0), "u": r((TG, D)), "c": r((TG, N)), "x0": r((D, N))}
s_ = steps(**ins)[0]
cases.append(("tailflip", ins, [s_ * 2.0 + s_[:, ::-1]], True))
a, c = r((TG, 2, D, N), 0.5, 1.0), r((TG, 2, N))
x, ys = np.zeros((2, D, N)), []
for i in range(TG):
    x = f64(a[i]) * x + 1.0
    ys.append(np.einsum('bdn,bn->bd', x, f64(c[i])))
cases.append(("batched", {"a": a, "c": c}, [np.stack(ys, 1)], False))

for name, ins, want, fused in cases:
    p = emit_text(TDSLC, SRC, "ir", ["--fn", name])
    if p.returncode != 0:
        T.report(f"{name}: --emit=ir", [f"exit {p.returncode}: {p.stderr.strip()[:800]}"], SRC)
    else:
        T.check(f"{name}: {'one recurrence kernel' if fused else 'not a recurrence'}",
                ("a recurrence:" in p.stdout) == fused, p.stdout[-1500:])
    if name in ("mamba", "tailflip"):  # the tail in the recurrence's kernel, or (flipped) after it
        p = emit_text(TDSLC, SRC, "kernels", ["--fn", name])
        nk, want_nk = p.stdout.count("\nkernel k"), 1 if name == "mamba" else 2
        T.check(f"{name}: {want_nk} kernels", p.returncode == 0 and nk == want_nk,
                f"exit {p.returncode}, {nk} kernels: {p.stderr.strip()[:400]}")
    p, outs = run_outputs(TDSLC, SRC, ins, fn=name, backend=BACKEND)
    if p.returncode != 0 or len(outs) != len(want):
        T.report(f"{name} runs", [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:800]}"], SRC)
        continue
    for k, (got, w) in enumerate(zip(outs, want)):
        tol = (1e-12 if got.dtype == np.float64 else 1e-5) * max(1.0, float(np.max(np.abs(w))))
        err = float(np.max(np.abs(got.astype(np.float64) - w)))
        T.check(f"{name} output {k} matches NumPy", got.shape == w.shape and err <= tol,
                f"shape {got.shape} want {w.shape}, max abs error {err} (tolerance {tol})")
sys.exit(T.summary())
