#!/usr/bin/python3
"""tests/run/test_vecmath.py TDSLC: the CPU math library (ir/vecmath.c) end to end,
against NumPy, on the backend named by TDSL_BACKEND (oracle.require_backend). One program
computes everything below, both dtypes, so the test compiles it once (the LLVM backend:
twice more, for the code check).

- Every function in f32 and f64 (exp exp2 expm1 log log2 log10 log1p tanh erf erfc sin
  cos sigmoid silu pow) in the three places a kernel computes one: an elementwise kernel
  over a dense sweep (f32: every 4096th bit pattern, the whole range: subnormals, huge
  values, inf and NaN, and uniform values where the functions vary; f64: random bit
  patterns and uniform values) plus the edge values (+-0, +-inf, NaN, subnormals, the
  overflow and underflow thresholds, sin's cold path); a row kernel (`F(x) - m`, m a
  row's amax of +0s, so the output is F(x) itself); a GEMM epilogue (`F(x @ I)`, x
  finite: the product by the identity is exact). Each result must be within the
  function's ULP bound (docs/vecmath.md's table plus the oracle's own error for f64) of
  NumPy's value (f64 for f32, long double for f64; erf and erfc from Python's math), and
  exactly NumPy's where that is 0, inf or NaN (with the sign of a zero or an infinity).
  sigmoid and silu are PyTorch's formulas, whose exp overflows to inf (a result of 0)
  where the format's does.
- hypot (also in the row and GEMM places) over the same pairs and over pairs of the
  extremes (max, subnormals, 0, inf with NaN), against NumPy's.
- pow over pairs of those edge values (IEEE 754's special cases, as NumPy gives them),
  random pairs, and PyTorch's special exponents (2, 3, 0.5, -0.5, -1, -2, and 1), whose
  values must be PyTorch's exactly (its own arithmetic: x * x, sqrt, 1 / sqrt, ...).
- mish over the elementwise sweep (where e^-|x| is normal) to its ULP bound.
- The composites built on them (gelu, gelu tanh, softplus, mish, logsigmoid, elu,
  log_softmax, logsumexp, softmax, scaled_dot_product_attention and the GEMM epilogue
  gelu(x @ w.t() + b)) against their formulas in NumPy.
- The generated code of that program, kernel by kernel (--emit=ir --json names each
  kernel's ops): each holds vector arithmetic and calls no libm function (f64 sin and
  cos: only the cold path's, and a GEMM epilogue's; docs/vecmath.md), in the LLVM backend's
  --emit=asm for an AVX2 and an AVX-512 CPU, and in the C backend's object as it ran
  (a `cc` in PATH keeps it; objdump -d).
- log, log2 and log10 of subnormal x: no multiply reads x in the emitted C (x86's
  microcode assist; subnormal_reads).
With TDSL_EMIT_ONLY=1 (the sanitizer pass) the program is emitted as C and its LLVM code
checked as above, but not run: the sweep and NumPy's reference are no work of tdslc's.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, run_outputs, test_subset  # noqa: E402

T = Tally()
LD = np.longdouble
UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "erf", "erfc", "sin", "cos", "sigmoid",
         "silu"]
# max ULP error allowed: docs/vecmath.md's measured maximum with a margin (f64: plus the
# oracle's own error where it is double precision: erf and erfc from math)
# mish: u = e^-|x| (~1 ULP) and the ratio's roundings (docs/vecmath.md: max 2.91 ULP f32,
# 3.01 f64 on dense sweeps; this sweep 2.71, 2.76; without the h (1 - t) step where it
# belongs, 3.28 f32)
MISH_BOUND = {"f32": 3.0, "f64": 3.25}
# softplus: f32 max 1.52 ULP on a sweep of 5.5*10^7 floats (docs/vecmath.md), this sweep's
# 1.45 (main's form 1.62; without w's correction 2.86 there); f64 (log1p's reduction, as
# main's) 1.65 here
SOFTPLUS_BOUND = {"f32": 1.75, "f64": 2.0}
BOUND = {
    "f32": {"exp": 1.5, "exp2": 1.5, "expm1": 1.5, "log": 1.5, "log2": 1.5, "log10": 1.5, "log1p": 2, "tanh": 2,
            "erf": 1.5, "erfc": 1.5, "sin": 1, "cos": 1, "sigmoid": 2.5, "silu": 2.5, "pow": 1, "hypot": 0.51},
    "f64": {"exp": 1.5, "exp2": 1.5, "expm1": 2, "log": 1.5, "log2": 1.5, "log10": 1.5, "log1p": 2, "tanh": 2,
            "erf": 2.5, "erfc": 7.5, "sin": 1, "cos": 1, "sigmoid": 3, "silu": 3, "pow": 2, "hypot": 2},
}
NP = {"f32": np.float32, "f64": np.float64}
INF, NAN = float("inf"), float("nan")


def edges(dt):
    """+-0, subnormals, thresholds, inf, nan and the neighbours of the finite ones."""
    fi = np.finfo(NP[dt])
    base = [0.0, float(fi.smallest_subnormal), float(fi.smallest_normal), float(fi.max), 1, 0.5, 2, 1e-8, 0.1,
            88.72283935546875, 87.33654, 103.97208, 104, 709.782712893384, 708.3964, 745.1332191019411, 746, 17.5,
            37.5, 0.625, 0.875, 3.9192, 5.9215, 9.19, 10.05, 26.5, 27.22, math.pi / 4, math.pi / 2, math.pi, 1e5,
            1e7, 2.0**23, 2.0**25, 1e22, 1e30, INF, NAN]
    # log1p's 2^(1-k) from u's exponent k (no clamp): its ends, k = 127 and 128 (f64 1023)
    base += [2.0**127, 1.2 * 2.0**127, 1.5 * 2.0**127] + ([2.0**1023, 1.5 * 2.0**1023] if dt == "f64" else [])
    # where exp's 2^n changes form (ir/vecmath.c): the ends of the normal exponents, of the
    # subnormals and of overflow, as exp2's integers and half-integers and as exp's n ln2
    # and (n + 1/2) ln2 (f32 and f64 both)
    for n in (124, 125, 126, 127, 128, 129, 148, 149, 150, 151, 1021, 1022, 1023, 1024, 1025, 1073, 1074, 1075, 1076):
        base += [n, n + 0.5, n * math.log(2), (n + 0.5) * math.log(2)]
    v = []
    for b in base:
        for s in (1, -1):
            x = NP[dt](s * b)
            v.append(x)
            if np.isfinite(x):
                with np.errstate(over="ignore"):
                    v += [np.nextafter(x, NP[dt](INF)), np.nextafter(x, NP[dt](-INF))]
    return np.array(v, dtype=NP[dt])


def sweep(dt, rng):
    # the sanitizer pass (TDSL_TEST_SUBSET=k) sweeps every kth of these inputs over the same
    # ranges: the same program for the sanitized tdslc, a kth of NumPy's reference work
    k = test_subset()
    if dt == "f32":
        bits = (np.arange((1 << 20) // k, dtype=np.uint64) * (4096 * k) + 1234).astype(np.uint32)
        dense = bits.view(np.float32)
        uni = rng.uniform(-12, 12, (1 << 17) // k).astype(np.float32)
    else:
        dense = rng.integers(0, 1 << 64, (1 << 18) // k, dtype=np.uint64, endpoint=False).view(np.float64)
        uni = np.concatenate([rng.uniform(-12, 12, (1 << 17) // k), rng.uniform(-750, 750, (1 << 15) // k)])
    # where exp's and exp2's results are subnormal (subnormal_once)
    lo = [(-104, -87.3), (-150, -126)] if dt == "f32" else [(-745.2, -708.3), (-1075, -1022)]
    sub = np.concatenate([rng.uniform(a, b, 1 << 12) for a, b in lo])
    x = np.concatenate([dense, uni.astype(NP[dt]), sub.astype(NP[dt]), edges(dt), near_pio2(dt, rng)])
    return np.concatenate([x, np.zeros((-x.size) % 64, dtype=NP[dt])])


def near_pio2(dt, rng):
    """The floats nearest k pi/2 and their neighbours, where sin's and cos's reduction
    cancels most: every k up to 4096, random k up to 2^18 (f32's lanes end at 2^17) and
    up to 2^26 (f64's exact reduction ends at 2^23, f32's in f64 at 2^25), both signs."""
    ks = np.concatenate([np.arange(1, 4097), rng.integers(4097, 1 << 18, 4096), rng.integers(1 << 18, 1 << 26, 2048)])
    near = (ks.astype(LD) * (LD("3.14159265358979323846264338327950288") / 2)).astype(NP[dt])
    up, down = np.nextafter(near, NP[dt](INF)), np.nextafter(near, NP[dt](-INF))
    v = np.concatenate([near, up, down, np.nextafter(up, NP[dt](INF)), np.nextafter(down, NP[dt](-INF))])
    return np.concatenate([v, -v])


def vec_math(f, x):
    """f (a function of Python's math) of each element of x, in double."""
    return np.array(list(map(f, x.astype(np.float64).tolist())))


def reference(op, x, dt):
    """NumPy's value: x in long double (f64 inputs) or f64 (f32 inputs); erf and erfc in
    double from math; sigmoid and silu with the format's own exp overflow."""
    with np.errstate(all="ignore"):
        hp = x.astype(LD if dt == "f64" else np.float64)
        if op in ("erf", "erfc"):
            return vec_math(getattr(math, op), x.astype(np.float64)).astype(hp.dtype)
        if op in ("sigmoid", "silu"):
            e = np.exp(-hp)
            den = np.where(np.isinf(e.astype(NP[dt])), INF, 1 + e)
            return 1 / den if op == "sigmoid" else hp / den
        return {"exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
                "log10": np.log10, "log1p": np.log1p, "tanh": np.tanh, "sin": np.sin, "cos": np.cos}[op](hp)


def ulp_check(name, got, ref, dt, bound, x=None, y=None):
    """got within bound ULPs of ref (a higher-precision array) rounded to dt, in steps of
    the smallest subnormal below the normal range; exact (and of the same sign) where ref
    is 0, inf or NaN."""
    got = np.asarray(got).reshape(-1)
    ref = np.asarray(ref).reshape(-1)
    fi = np.finfo(NP[dt])
    # the error in long double for f64 (x87 arithmetic, slow in NumPy); for f32 in double,
    # where an f32 value and the f64 reference differ by far more than double's rounding
    hp = LD if dt == "f64" else np.float64
    with np.errstate(all="ignore"):
        want = ref.astype(NP[dt])
        exact = (ref == 0) | ~np.isfinite(ref) | ~np.isfinite(want)
        same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))
        spacing = np.maximum(np.spacing(np.abs(want)), fi.smallest_subnormal).astype(hp)
        err = np.where(exact, 0, np.abs(got.astype(hp) - ref.astype(hp)) / spacing).astype(np.float64)
    bad = (exact & ~same) | (~exact & ~(err <= bound))
    worst = float(err[~exact].max()) if (~exact).any() else 0.0
    errs = []
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        at = f"x={x[i]!r}" + (f", y={y[i]!r}" if y is not None else "") if x is not None else f"index {i}"
        errs.append(f"{int(bad.sum())} of {got.size} off, e.g. {at}: got {got[i]!r}, want {want[i]!r} "
                    f"({err[i]:.2f} ulp, bound {bound})")
    T.report(f"{name}: {got.size} values, worst {worst:.3f} ulp (bound {bound})", errs)


def subnormal_once(name, got, ref, dt):
    """Where ref is subnormal, got is it rounded once (exp's and exp2's 2^n in two normal
    factors, the second product rounding): within half a unit of the smallest subnormal
    plus the relative error of the factor scaled (2 ULPs of it), where a result rounded
    twice is off by up to a whole unit."""
    fi = np.finfo(NP[dt])
    got, ref = np.asarray(got).reshape(-1), np.asarray(ref).reshape(-1)
    with np.errstate(all="ignore"):
        sub = (ref > 0) & (ref < float(fi.smallest_normal))
        units = ref[sub].astype(LD) / LD(float(fi.smallest_subnormal))
        err = np.abs(got[sub].astype(LD) / LD(float(fi.smallest_subnormal)) - units)
        excess = (err - LD(0.5) - units * LD(float(fi.eps))).astype(np.float64)
    errs = [] if not sub.any() or excess.max() <= 0 else [
        f"{int((excess > 0).sum())} of {int(sub.sum())} rounded more than once, "
        f"e.g. {float(err[int(np.argmax(excess))]):.3f} units of the smallest subnormal"]
    if not sub.any():
        errs = ["no subnormal result in the sweep"]
    T.report(f"{name}: {int(sub.sum())} subnormal results rounded once", errs)


def subnormal_results(P, dt, rng):
    """exp over the inputs whose results are subnormal, densely (f32: every 8th float of
    (-104, -87); f64: 2^16 random in (-745.2, -708.3)), exp2 likewise ((-150, -126), f64
    (-1075, -1022)), and e^x as softplus (x < -17) and softmax (a row [0, x...]: the sum
    rounds to 1) compute it, where no float operation may form a subnormal (ir/vecmath.c's
    scale2_t, exp_nonpos: integer operations on a sum's bits): each NumPy's value exactly
    where that is determined (the reference, in units of the smallest subnormal, farther
    from a tie than the scaled factor's own error, 2 ULPs of it), else within half a unit
    of it plus that error (subnormal_once)."""
    fi = np.finfo(NP[dt])
    if dt == "f32":
        lo, hi = np.float32(-87).view(np.int32), np.float32(-104).view(np.int32)
        xe = np.arange(lo, hi, 8 * test_subset(), dtype=np.int32).view(np.float32)
        x2 = np.linspace(-150, -126, xe.size).astype(np.float32)
    else:
        n = (1 << 16) // test_subset()
        xe, x2 = rng.uniform(-745.2, -708.3, n), rng.uniform(-1075, -1022, n)
    xe = np.concatenate([xe, np.zeros((-xe.size) % 8, dtype=NP[dt])])
    x2 = x2[:xe.size]
    pe, p2 = P.param(f"sub_e{dt}", dt, xe), P.param(f"sub_2{dt}", dt, x2)
    rows = np.concatenate([np.zeros((xe.size // 7 + 1, 1)), np.resize(xe, (xe.size // 7 + 1, 7))], axis=1)
    pr = P.param(f"sub_r{dt}", dt, rows.astype(NP[dt]))
    unit = LD(float(fi.smallest_subnormal))
    def check(got, x, f, name):
        got = np.asarray(got).reshape(-1)
        with np.errstate(all="ignore"):
            ref = f(x.astype(LD if dt == "f64" else np.float64))
        subnormal_once(f"{name} {dt}, subnormal results", got, ref, dt)
        u = ref.astype(LD) / unit
        tie = np.abs(u - np.floor(u) - LD(0.5))
        sure = (tie > u * LD(float(fi.eps)) * 2) & (ref < float(fi.smallest_normal))
        want = ref.astype(NP[dt])
        off = sure & (got != want)
        T.report(f"{name} {dt}: {int(sure.sum())} subnormal results NumPy's exactly", [] if not off.any() else [
            f"{int(off.sum())} differ, e.g. x={x[off][0]!r}: got {got[off][0]!r}, want {want[off][0]!r}"])
    P.out(f"exp({pe})", dt, xe.shape, lambda got: check(got, xe, np.exp, "exp"))
    P.out(f"exp2({p2})", dt, x2.shape, lambda got: check(got, x2, np.exp2, "exp2"))
    P.out(f"softplus({pe})", dt, xe.shape, lambda got: check(got, xe, np.exp, "softplus (e^x)"))
    P.out(f"softmax({pr}, -1)", dt, rows.shape,
          lambda got: check(np.asarray(got)[:, 1:], rows[:, 1:].astype(NP[dt]).reshape(-1), np.exp, "softmax (e^x)"))


PR, PC = 256, 256  # the row and GEMM positions' inputs: rows, columns (a parallel kernel)


def positions_input(dt, rng):
    """PR x PC finite nonzero values for the row and GEMM positions: the finite edges, a
    sample of the sweep's finite values, uniform values where the functions vary. (Not
    zero: x @ I may round -0 to +0.)"""
    e = edges(dt)
    x = sweep(dt, rng)
    x = x[np.isfinite(x) & (x != 0)]
    e = e[np.isfinite(e) & (e != 0)]
    n = PR * PC
    lo = 12 if dt == "f32" else 40
    v = np.concatenate([e, rng.choice(x, n // 2), rng.uniform(-lo, lo, n).astype(NP[dt])])[:n]
    return v.astype(NP[dt]).reshape(PR, PC)


def pow_inputs(dt, rng):
    e = edges(dt)
    e = e[np.abs(e.astype(np.float64)) < 1e6]  # pairs of the edges: every special case, and more
    fi = np.finfo(NP[dt])  # and huge exponents: y log x overflows (pow of a subnormal to the max)
    e = np.concatenate([e, np.array([3, -3, 0.25, 1.5, -2.5, 7, 1e6, -1e6, 31, 2.0**60, 1e30, -1e30, fi.max, -fi.max,
                                     float(fi.smallest_subnormal)], dtype=NP[dt])])
    xe, ye = np.meshgrid(e, e)
    xs = np.concatenate([xe.ravel(), rng.uniform(0, 4, 1 << 16), rng.uniform(-4, 4, 1 << 15),
                         rng.uniform(0, 100, 1 << 14)]).astype(NP[dt])
    ys = np.concatenate([ye.ravel(), rng.uniform(-40, 40, 1 << 16), np.floor(rng.uniform(-40, 40, 1 << 15)),
                         rng.uniform(-200, 200, 1 << 14)]).astype(NP[dt])
    pad = (-xs.size) % 64
    return np.concatenate([xs, np.ones(pad, NP[dt])]), np.concatenate([ys, np.ones(pad, NP[dt])])


def pair_reference(op, x, y, dt):
    """pow or hypot in long double (f64 inputs) or f64 (f32 inputs)."""
    hp = LD if dt == "f64" else np.float64
    with np.errstate(all="ignore"):
        return {"pow": np.power, "hypot": np.hypot}[op](x.astype(hp), y.astype(hp))


class Program:
    """The one program: parameters (name, dtype, array) and outputs (expression, its type,
    its check: a function of the result)."""

    def __init__(self):
        self.params, self.outs = [], []

    def param(self, name, dt, a):
        self.params.append((name, dt, a))
        return name

    def out(self, expr, dt, shape, check):
        self.outs.append((expr, f"{dt}[{', '.join(map(str, shape))}]", check))

    def source(self):
        ps = ", ".join(f"{n}: {dt}[{', '.join(map(str, a.shape))}]" for n, dt, a in self.params)
        return (f"fn f({ps}) -> ({', '.join(t for _, t, _ in self.outs)}) {{\n"
                f"    return {', '.join(e for e, _, _ in self.outs)}\n}}\n")

    def inputs(self):
        return {n: a for n, _, a in self.params}


def functions(P, dt, rng):
    """Every function: elementwise over the sweep, in a row kernel, in a GEMM epilogue."""
    x = sweep(dt, rng)
    s = P.param(f"s{dt}", dt, x)
    def check(got, op):
        ref = reference(op, x, dt)
        ulp_check(f"{op} {dt}", got, ref, dt, BOUND[dt][op], x=x)
        if op in ("exp", "exp2"):
            subnormal_once(f"{op} {dt}", got, ref, dt)
    for op in UNARY:
        P.out(f"{op}({s})", dt, x.shape, lambda got, op=op: check(got, op))
    # mish, x tanh(softplus(x)), a ratio of e^-|x| of its own (vm_tanh_log1p_exp), over the
    # sweep where e^-|x| is normal (below, x times e^x's subnormal error is as large for
    # main's log1p and tanh: up to ~50 ULP; there only its sign is checked)
    lo = -87.3 if dt == "f32" else -708.3
    def check_mish(got):
        with np.errstate(all="ignore"):
            hp = x.astype(LD if dt == "f64" else np.float64)
            ref = hp * np.tanh(np.where(hp > 50, hp, np.log1p(np.exp(hp))))
        keep = ~(x < lo)
        ulp_check(f"mish {dt}", got[keep], ref[keep], dt, MISH_BOUND[dt], x=x[keep])
        low = got[(x < lo) & np.isfinite(x)]
        T.report(f"mish {dt}: finite x < {lo} gives -0 or a negative", [] if np.signbit(low).all() else
                 [f"{int((~np.signbit(low)).sum())} of {low.size} without the sign"])
    P.out(f"mish({s})", dt, x.shape, check_mish)
    # softplus, max(x, 0) + log1p(e^-|x|) (f32: log1p without a reduction, vm_log1p_exp),
    # against PyTorch's formula (x above 20; log1p(exp(x)) below, e^x's subnormals included)
    def check_softplus(got):
        with np.errstate(all="ignore"):
            hp = x.astype(LD if dt == "f64" else np.float64)
            ref = np.where(hp > 20, hp, np.log1p(np.exp(hp)))
        ulp_check(f"softplus {dt}", got, ref, dt, SOFTPLUS_BOUND[dt], x=x)
    P.out(f"softplus({s})", dt, x.shape, check_softplus)
    subnormal_results(P, dt, rng)
    g0 = positions_input(dt, rng)
    ops = UNARY + ["pow", "hypot"]
    g = P.param(f"g{dt}", dt, np.ascontiguousarray(np.broadcast_to(g0, (len(ops),) + g0.shape)))
    eye = P.param(f"e{dt}", dt, np.eye(PC, dtype=NP[dt]))
    h0 = np.concatenate([np.floor(rng.uniform(-20, 20, PR * PC // 4)), rng.uniform(-30, 30, PR * PC * 3 // 4)])
    h0 = h0.astype(NP[dt]).reshape(PR, PC)
    h = P.param(f"h{dt}", dt, h0)
    gv = g0.ravel()
    for k, op in enumerate(ops):
        two = op in ("pow", "hypot")
        call = (lambda a, op=op: f"{op}({a}, {h})") if two else (lambda a, op=op: f"{op}({a})")
        ref = pair_reference(op, g0, h0, dt) if two else reference(op, gv, dt)
        y = h0.ravel() if two else None
        P.out(f"{call(f'{g}[{k}]')} - abs({g}[{k}] * 0).amax(-1, keepdim=True)", dt, g0.shape,
              lambda got, op=op, ref=ref, y=y: ulp_check(f"{op} {dt}, row kernel", got, ref, dt, BOUND[dt][op],
                                                         x=gv, y=y))
        P.out(call(f"{g}[{k}] @ {eye}"), dt, g0.shape,
              lambda got, op=op, ref=ref, y=y: ulp_check(f"{op} {dt}, GEMM epilogue", got, ref, dt, BOUND[dt][op],
                                                         x=gv, y=y))


def pows(P, dt, rng):
    xs, ys = pow_inputs(dt, rng)
    px, py = P.param(f"px{dt}", dt, xs), P.param(f"py{dt}", dt, ys)
    for op in ("pow", "hypot"):
        P.out(f"{op}({px}, {py})", dt, xs.shape,
              lambda got, op=op: ulp_check(f"{op} {dt}", got, pair_reference(op, xs, ys, dt), dt, BOUND[dt][op],
                                           x=xs, y=ys))
    # hypot of huge and tiny values: no overflow or underflow on the way
    fi = np.finfo(NP[dt])
    big = np.array([fi.max, fi.max / 2, fi.max / 3, fi.smallest_subnormal, fi.smallest_normal, 1e-30, 3e-39, 0, -0.0,
                    INF, -INF, NAN], dtype=NP[dt])
    bx, by = (a.ravel() for a in np.meshgrid(big, big))
    hx, hy = P.param(f"hx{dt}", dt, bx), P.param(f"hy{dt}", dt, by)
    P.out(f"hypot({hx}, {hy})", dt, bx.shape,
          lambda got: ulp_check(f"hypot {dt}, extremes", got, pair_reference("hypot", bx, by, dt), dt,
                                BOUND[dt]["hypot"], x=bx, y=by))
    # PyTorch's own exponents (pow_tensor_scalar): x*x, x*x*x, sqrt, 1/sqrt, 1/x, 1/(x*x)
    # in the format's arithmetic, each step rounded, as NumPy computes them in that format;
    # x ** 1 is std::pow(x, 1), x itself. Exactly those values.
    x, one = xs, NP[dt](1)
    with np.errstate(all="ignore"):
        special = [("2", x * x), ("3", x * x * x), ("0.5", np.sqrt(x)), ("-0.5", one / np.sqrt(x)), ("-1", one / x),
                   ("-2", one / (x * x)), ("1", x)]
    # x ** 1.5: x sqrt(x) with its roundings undone, held to pow's bound over positive
    # floats of every exponent (bit patterns at a stride), [0.5, 8] densely, and the
    # pairs' x (the edge values among them)
    ib = {"f32": (np.uint32, np.int32), "f64": (np.uint64, np.int64)}[dt]
    top = int(np.array(INF, dtype=NP[dt]).view(ib[0]))
    pos = np.arange(0, top, top // (1 << 16), dtype=np.uint64).astype(ib[0]).view(NP[dt])
    dense = np.concatenate([pos, rng.uniform(0.5, 8, 1 << 16).astype(NP[dt])])
    for name, xv in (("sweep", dense), ("pairs", xs)):
        v = P.param(f"p15{name}{dt}", dt, xv)
        P.out(f"{v} ** 1.5", dt, xv.shape,
              lambda got, xv=xv, name=name: ulp_check(f"x ** 1.5 {dt}, {name}", got,
                                                      pair_reference("pow", xv, np.full_like(xv, 1.5), dt), dt,
                                                      BOUND[dt]["pow"], x=xv))
    for name, want in special:
        P.out(f"{px} ** {name}", dt, xs.shape,
              lambda got, name=name, want=want: ulp_check(f"x ** {name} {dt}, exactly", got, want, dt, 0, x=xs))


def rel_check(name, got, want, rtol, atol):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = (np.abs(got - want) <= atol + rtol * np.abs(want)) | (np.isnan(got) & np.isnan(want)) | (got == want)
        ok &= ~np.isinf(want) | (got == want)  # an infinite want's tolerance is infinite too
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.abs(got - want) / (atol + rtol * np.abs(want))
    errs = []
    if not ok.all():
        i = int(np.flatnonzero(~ok.ravel())[0])
        errs.append(f"{int((~ok).sum())} off, e.g. index {i}: got {got.ravel()[i]!r}, want {want.ravel()[i]!r}")
    T.report(f"{name}: worst {float(np.nanmax(err)) if err.size else 0:.3f} of the tolerance", errs)


def erf_np(x):
    return np.vectorize(math.erf)(x)


def composites(P, dt, rng):
    R, C, N = 64, 1000, 48
    x = rng.uniform(-12, 12, (R, C))
    x[0, :8] = [0, -0.0, INF, -INF, 30, -30, 1e-30, -1e-30]
    x[1, 5] = 1e12  # sin's cold path: the row's sum is run again with libm's sin and cos
    x[2, 99] = -3e9
    x[3, :6] = [89, 100, 700, 710, 1000, -100]  # e^x overflows: f32 from 89 on, f64 from 710
    # gelu's two paths meet at x / sqrt(2) = +-0.875; erf is 1 from 3.92 * sqrt(2); subnormal x
    g = 0.875 * math.sqrt(2)
    x[4, :12] = [g, -g, np.nextafter(g, 2), -np.nextafter(g, 2), np.nextafter(g, 1), -np.nextafter(g, 1), 5.5437,
                 -5.5437, 5.5438, -5.5438, 1e-40, -1e-40]
    w, b = rng.standard_normal((N, C)) * 0.1, rng.standard_normal(N)
    q, k, v = (rng.standard_normal((2, 4, 40, 16)) for _ in range(3))
    ins = {"x": x, "w": w, "b": b, "q": q, "k": k, "v": v}
    ins = {n: a.astype(NP[dt]) for n, a in ins.items()}
    nm = {n: P.param(f"c{n}{dt}", dt, a) for n, a in ins.items()}
    X = ins["x"].astype(np.float64)
    rt = 1e-6 if dt == "f32" else 1e-14
    with np.errstate(all="ignore"):
        sig = 1 / (1 + np.exp(-X))
        sp = np.where(X > 20, X, np.log1p(np.exp(X)))
        m0 = X.max(axis=1, keepdims=True)  # softmax, log_softmax: a row with +inf is NaN
        ls = X - m0 - np.log(np.exp(X - m0).sum(axis=1, keepdims=True))
        m = np.where(np.isinf(m0), 0, m0)  # PyTorch's logsumexp: an infinite max shifts by 0
        lse = m[:, 0] + np.log(np.exp(X - m).sum(axis=1))
        lin = ins["x"].astype(np.float64) @ ins["w"].astype(np.float64).T + ins["b"].astype(np.float64)
        Q, K, V = (ins[n].astype(np.float64) for n in "qkv")
        s = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(16)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        att = (s / s.sum(axis=-1, keepdims=True)) @ V
        tiny = 1e-6 if dt == "f32" else 1e-15
        sub = 2.0**-149 if dt == "f32" else 2.0**-1074  # a subnormal result's unit (e^-100 in f32)
        xs = nm["x"]
        want = [
            ("gelu", f"gelu({xs})", X * 0.5 * (1 + erf_np(X / math.sqrt(2))), rt, tiny),
            ("gelu tanh", f"gelu({xs}, approximate='tanh')",
             0.5 * X * (1 + np.tanh(math.sqrt(2 / math.pi) * (X + 0.044715 * X**3))), rt, tiny),
            ("softplus", f"softplus({xs})", sp, rt, sub), ("mish", f"mish({xs})", X * np.tanh(sp), rt, 1e-30),
            ("logsigmoid", f"logsigmoid({xs})", np.minimum(X, 0) - np.log1p(np.exp(-np.abs(X))), rt, 1e-30),
            ("elu", f"elu({xs})", np.where(X > 0, X, np.expm1(X)), rt, 0),
            ("log_softmax", f"log_softmax({xs}, -1)", ls, 4 * rt, 1e-6 if dt == "f32" else 1e-14),
            ("softmax", f"softmax({xs}, -1)", np.exp(ls), 8 * rt, 1e-30),
            ("logsumexp", f"logsumexp({xs}, -1)", lse, 4 * rt, 1e-30),
            ("silu", f"silu({xs})", X * sig, rt, 1e-30),
            ("gelu(x @ w.t() + b)", f"gelu({xs} @ {nm['w']}.t() + {nm['b']})",
             lin * 0.5 * (1 + erf_np(lin / math.sqrt(2))), 1e3 * rt, 1e3 * rt),
            ("sigmoid(x) * tanh(x) + log1p(exp(-abs(x)))", f"sigmoid({xs}) * tanh({xs}) + log1p(exp(-abs({xs})))",
             sig * np.tanh(X) + np.log1p(np.exp(-np.abs(X))), rt, 1e-7),
            # written out, log1p(exp(x)) is inf where exp(x) overflows in the dtype, as in PyTorch
            # (the softplus form max(x, 0) + log1p(e^-|x|) must not leak into it)
            ("log1p(exp(x))", f"log1p(exp({xs}))",
             np.where(np.isinf(np.exp(ins["x"])), np.inf, np.log1p(np.exp(X))), rt, sub),
            ("(sin(x * 4) * cos(x)).sum(-1)", f"(sin({xs} * 4) * cos({xs})).sum(-1)",
             (np.sin(ins["x"] * NP[dt](4)).astype(np.float64) * np.cos(X)).sum(axis=1), 1e2 * rt, 1e2 * rt),
        ]
    if dt == "f32":  # (f64's is the same schedule; its C takes a second to compile)
        want.append(("scaled_dot_product_attention", f"scaled_dot_product_attention({nm['q']}, {nm['k']}, {nm['v']})",
                     att, 1e3 * rt, 1e3 * rt))
    for name, expr, ref, rtol, atol in want:
        def check(got, name=name, ref=ref, rtol=rtol, atol=atol):
            finite = np.isfinite(ref) | np.isnan(ref) | (name == "log1p(exp(x))")
            rel_check(f"{name} {dt}", got[finite], ref[finite], rtol, atol)
        P.out(expr, dt, ref.shape, check)


# ---- subnormal inputs without microcode assists ----
# An x86 core takes a microcode assist (~100 cycles a vector) for each multiply, FMA or
# division that reads a subnormal; adds, compares, selects and integer operations take
# them at full speed (docs/vecmath.md). log, log2 and log10 bring a subnormal x to normal
# range by integer operations: in the C kernel (--emit=c) no multiply, division or FMA
# reads the loaded x (main's x * 2^24 did: 6.7-7.2x the time of normal x on this
# repository's Intel hosts; bench/vecmath/ab.py measures it). Speed itself is the bench's.
MUL_READS = r"(?:\b{0}\s*[*/]|[*/]\s*{0}\b|\bfmaf?\(\s*{0}\s*,|\bfmaf?\([^;]*,\s*{0}\s*[,)])"


def subnormal_reads(tdslc):
    for fn in ("log", "log2", "log10"):
        for dt, ct in (("f32", "float"), ("f64", "double")):
            p = emit_text(tdslc, f"fn f(x: {dt}[64]) -> {dt}[64] {{ return torch.{fn}(x) }}", "c")
            errs = [p.stderr[:300]] if p.returncode != 0 else []
            m = re.search(rf"\b{ct} (t\d+) = b0\[", p.stdout) if not errs else None
            if not errs and not m:
                errs.append("no load of x in the emitted kernel")
            if m:
                bad = [ln.strip() for ln in p.stdout.splitlines() if re.search(MUL_READS.format(m.group(1)), ln)]
                errs += [f"a multiply reads x: {ln[:160]}" for ln in bad[:2]]
            T.report(f"torch.{fn}, {dt}: no multiply reads x (subnormal x without assists)", errs)


# ---- the generated code ----
LIBM = re.compile(r"\b(?:call|callq|jmp)\s+(?:\*|[0-9a-f]+\s+<)?(?P<f>(?:exp|exp2|expm1|log|log2|log10|log1p|tanh|erf|"
                  r"erfc|sin|cos|pow|sqrt|fma|fabs|copysign|trunc)f?)(?:@PLT|@plt)?\b")
# floating-point arithmetic on 256- or 512-bit registers (AT&T syntax: the registers follow)
VEC = re.compile(r"\bv(?:fn?m(?:add|sub)\w*|mul|add|sub|div|max|min|cmp|blendm?|rndscale|round|sqrt|cvt\w*)"
                 r"[ps][sd]\b[^\n]*%[yz]mm")
# a function's label in an assembly listing (LLVM's or gcc's, `NAME:`) or a disassembly
# (objdump's, `ADDRESS <NAME>:`): a kernel's (tdsl_g_f_kN and its parallel body, gcc's
# .part/.cold/.constprop clones) or any other
LABEL = re.compile(r"^(?:[0-9a-f]+ <(?P<dname>[^>@]+)>|(?P<name>[A-Za-z_][\w.]*)):", re.M)
KERNEL = re.compile(r"^tdsl_g_f_(?P<k>k\d+)(?:_|\.|$)")


# a call of a function kernels share (the GEMM micro-kernel, tdsl_g_f_fN)
SHARED_FUNC = re.compile(r"^(?P<f>tdsl_g_f_f\d+)(?:_|\.|$)")
OTHER_BODY = re.compile(r"\btdsl_g_f_(?P<k>k\d+)_p\d+")
SHARED_CALL = re.compile(r"\b(?:call|callq|jmp)\s+(?:[0-9a-f]+\s+<)?(?P<f>tdsl_g_f_f\d+)\b")


def kernel_code(asm):
    """{kernel name: its functions' assembly, with the shared functions it calls (a
    matmul's micro-kernel)}; code outside every kernel (the entry, into which a compiler
    may inline a kernel called once) under None."""
    out, funcs = {}, {}
    marks = list(LABEL.finditer(asm))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(asm)
        name = m.group("name") or m.group("dname")
        fm = SHARED_FUNC.match(name)
        if fm:
            funcs[fm.group("f")] = funcs.get(fm.group("f"), "") + asm[m.start():end]
            continue
        km = KERNEL.match(name)
        key = km.group("k") if km else None
        out[key] = out.get(key, "") + asm[m.start():end]
    for key, text in out.items():
        called = sorted({c.group("f") for c in SHARED_CALL.finditer(text)})
        out[key] = text + "".join(funcs.get(f, "") for f in called)
    # a kernel whose loop is another's (the same code: the LLVM backend emits it once, and
    # the kernel hands that one's parallel body to tdsl_parallel_for) is checked on it
    for key, text in list(out.items()):
        other = sorted({r.group("k") for r in OTHER_BODY.finditer(text)} - {key})
        out[key] = text + "".join(out.get(k, "") for k in other)
    return out


def code_check(tag, asm, kernels, vec_regs, llvm):
    """Each kernel: vector arithmetic and no libm call (sin, cos: the cold path's and a
    GEMM epilogue's). LLVM 14 keeps a sum of sin or cos scalar (docs/vecmath.md): only the
    calls are checked there. A kernel a compiler inlined into the entry (no code of its
    own) is checked with the entry's code."""
    code = kernel_code(asm)
    inlined = [k for k in kernels if k not in code]
    groups = [([k], code[k]) for k in kernels if k in code]
    if inlined:
        groups.append((inlined, code.get(None, "")))
    for ks, text in groups:
        ops = sorted({op for k in ks for op in kernels[k]})
        name = f"{tag}: {', '.join(ks)} ({' '.join(ops)})"
        trig = "sin" in ops or "cos" in ops
        allowed = {"sin", "cos"} if trig else set()  # f64's cold path; f32's has none
        if ks is inlined and any(op in ("sin", "cos") for k in kernels for op in kernels[k]):
            allowed = {"sin", "cos"}  # the entry may hold the inlined head of a cold path (gcc's partial inlining)
        bad = sorted({m.group("f") for m in LIBM.finditer(text)} - allowed)
        want_vec = vec_regs and not (llvm and trig and "sum" in ops)
        # x ** 2 is one multiply, x ** 1 a copy; f32 hypot six instructions (in f64)
        least = {("pow",): 0, ("hypot",): 4}.get(tuple(ops), 8)
        nvec = len(VEC.findall(text)) if want_vec else least
        T.check(f"{name}: vector arithmetic, no libm call{' but the cold path' if trig else ''}",
                not bad and nvec >= least, f"libm calls {bad}, {nvec} vector arithmetic instructions")


def host_avx2():
    """Whether cc -march=native here has 256-bit vectors (else the C check skips them)."""
    try:
        with open("/proc/cpuinfo") as f:
            return " avx2" in f.read()
    except OSError:
        return False


def keep_cc_output(d):
    """A `cc` first in PATH, in folder d, that runs the real one and copies its output (the
    C backend's fn.so) to d/fn.so: the code checked is the code that ran. Returns the
    PATH to run tdslc with."""
    real = shutil.which("cc")
    if real is None:
        sys.exit("FAIL: no C compiler 'cc'")
    with open(os.path.join(d, "cc"), "w") as f:
        f.write(f'#!/bin/sh\n"{real}" "$@" || exit $?\nprev=\n'
                f'for a in "$@"; do [ "$prev" = -o ] && cp "$a" "{d}/fn.so"; prev=$a; done\nexit 0\n')
    os.chmod(os.path.join(d, "cc"), 0o755)
    return d + os.pathsep + os.environ.get("PATH", "")


def generated_code(tdslc, backend, src, so):
    ir = emit_text(tdslc, src, "ir", ["--json"])
    if ir.returncode != 0:
        T.report("--emit=ir --json", [ir.stderr])
        return
    kernels = {k["name"]: k["ops"] for k in json.loads(ir.stdout)["kernels"]}
    if backend in (None, "llvm"):
        for cpu in ("znver3", "skylake-avx512"):
            k = emit_text(tdslc, src, "asm", [f"--cpu={cpu}"], timeout=600)
            if k.returncode != 0:
                T.report(f"--emit=asm --cpu={cpu}", [k.stderr])
                continue
            code_check(f"llvm, {cpu}", k.stdout, kernels, True, True)
    if backend == "c":
        if not os.path.exists(so):
            T.report("the C backend's object", [f"the cc wrapper kept no {so}"])
            return
        p = subprocess.run(["objdump", "-d", "--no-show-raw-insn", so], capture_output=True, text=True)
        if p.returncode != 0:
            T.report("objdump -d", [p.stderr])
            return
        code_check("c", p.stdout, kernels, host_avx2(), False)


def main():
    tdslc = sys.argv[1]
    backend = require_backend(tdslc)
    rng = np.random.default_rng(2027)
    P = Program()
    for dt in ("f32", "f64"):
        functions(P, dt, rng)
        pows(P, dt, rng)
        composites(P, dt, rng)
    src = P.source()
    if os.environ.get("TDSL_EMIT_ONLY"):  # the sanitizer pass: tdslc's part alone (the program
        # emitted as C, the LLVM backend's code checked); the sweep and NumPy's reference, no work
        # of tdslc's, ran in the plain pass
        c = emit_text(tdslc, src, "c")
        T.report("--emit=c", [] if c.returncode == 0 else [c.stderr])
        generated_code(tdslc, "llvm", src, None)
        return T.summary(" (TDSL_EMIT_ONLY: the sweep not run)")
    with tempfile.TemporaryDirectory() as d:
        path = os.environ.get("PATH", "")
        if backend == "c":
            os.environ["PATH"] = keep_cc_output(d)
        try:
            p, outs = run_outputs(tdslc, src, P.inputs(), backend=backend, timeout=600)
        finally:
            os.environ["PATH"] = path
        if p.returncode != 0:
            sys.exit(f"FAIL: tdslc exit {p.returncode}\n{p.stderr.decode(errors='replace')}")
        for (_, _, check), got in zip(P.outs, outs):
            check(got)
        generated_code(tdslc, backend, src, os.path.join(d, "fn.so"))
    if backend in (None, "c"):
        subnormal_reads(tdslc)
    return T.summary(recap=True)


if __name__ == "__main__":
    sys.exit(main())
