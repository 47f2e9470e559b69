#!/usr/bin/python3
"""tests/run/test_vecmath.py TDSLC: the CPU math library (ir/vecmath.c) end to end,
against NumPy, on the backend named by TDSL_BACKEND (oracle.require_backend).

- Every function in f32 and f64 (exp exp2 expm1 log log2 log10 log1p tanh erf erfc sin
  cos sigmoid silu pow): a program computes all of them over a dense sweep — f32: every
  4096th bit pattern (the whole range: subnormals, huge values, inf and NaN) and uniform
  values where the functions vary; f64: random bit patterns and uniform values — plus
  the edge values (+-0, +-inf, NaN, subnormals, the overflow and underflow thresholds,
  sin's cold path). Each result must be within the function's ULP bound (docs/vecmath.md's
  table plus the oracle's own error for f64) of NumPy's value (f64 for f32, long double
  for f64; erf and erfc from Python's math), and exactly NumPy's where that is 0, inf or
  NaN (with the sign of a zero or an infinity). sigmoid and silu are PyTorch's formulas,
  whose exp overflows to inf (a result of 0) where the format's does.
- pow over pairs of those edge values (IEEE 754's special cases, as NumPy gives them),
  random pairs, and PyTorch's special exponents (2, 3, 0.5, -0.5, -1, -2).
- The composites built on them (gelu, gelu tanh, softplus, mish, logsigmoid, elu,
  log_softmax, logsumexp, softmax, scaled_dot_product_attention and the GEMM epilogue
  gelu(x @ w.t() + b)) against their formulas in NumPy.
- The generated code: for every function and composite, the hot loops hold vector
  instructions and call no libm function (sin and cos: only the cold path's, in a loop
  of its own), checked in the LLVM backend's --emit=asm for an AVX2 and an AVX-512 CPU,
  and in the C backend's C compiled by cc -S with driver/cc.c's flags.
"""
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, run_outputs  # noqa: E402

T = Tally()
LD = np.longdouble
UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "erf", "erfc", "sin", "cos", "sigmoid",
         "silu"]
# max ULP error allowed: docs/vecmath.md's measured maximum with a margin (f64: plus the
# oracle's own error where it is double precision: erf and erfc from math)
BOUND = {
    "f32": {"exp": 1.5, "exp2": 1.5, "expm1": 1.5, "log": 1.5, "log2": 1.5, "log10": 1.5, "log1p": 2, "tanh": 2,
            "erf": 1.5, "erfc": 1.5, "sin": 1, "cos": 1, "sigmoid": 2.5, "silu": 2.5, "pow": 1},
    "f64": {"exp": 1.5, "exp2": 1.5, "expm1": 2, "log": 1.5, "log2": 1.5, "log10": 1.5, "log1p": 2, "tanh": 2,
            "erf": 2.5, "erfc": 7.5, "sin": 1, "cos": 1, "sigmoid": 3, "silu": 3, "pow": 2},
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
    if dt == "f32":
        bits = (np.arange(1 << 20, dtype=np.uint64) * 4096 + 1234).astype(np.uint32)
        dense = bits.view(np.float32)
        uni = rng.uniform(-12, 12, 1 << 17).astype(np.float32)
    else:
        dense = rng.integers(0, 1 << 64, 1 << 18, dtype=np.uint64, endpoint=False).view(np.float64)
        uni = np.concatenate([rng.uniform(-12, 12, 1 << 17), rng.uniform(-750, 750, 1 << 15)])
    x = np.concatenate([dense, uni.astype(NP[dt]), edges(dt)])
    return np.concatenate([x, np.zeros((-x.size) % 64, dtype=NP[dt])])


def vec_math(f, x):
    return np.array([f(float(v)) if np.isfinite(v) else (f(float(v)) if not np.isnan(v) else NAN) for v in x])


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
    with np.errstate(all="ignore"):
        want = ref.astype(NP[dt])
        exact = (ref == 0) | ~np.isfinite(ref) | ~np.isfinite(want)
        same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))
        spacing = np.maximum(np.spacing(np.abs(want)), fi.smallest_subnormal).astype(LD)
        err = np.where(exact, 0, np.abs(got.astype(LD) - ref.astype(LD)) / spacing).astype(np.float64)
    bad = (exact & ~same) | (~exact & ~(err <= bound))
    worst = float(err[~exact].max()) if (~exact).any() else 0.0
    errs = []
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        at = f"x={x[i]!r}" + (f", y={y[i]!r}" if y is not None else "") if x is not None else f"index {i}"
        errs.append(f"{int(bad.sum())} of {got.size} off, e.g. {at}: got {got[i]!r}, want {want[i]!r} "
                    f"({err[i]:.2f} ulp, bound {bound})")
    T.report(f"{name}: {got.size} values, worst {worst:.3f} ulp (bound {bound})", errs)


def run(tdslc, backend, src, inputs):
    p, outs = run_outputs(tdslc, src, inputs, backend=backend)
    if p.returncode != 0:
        sys.exit(f"FAIL: tdslc exit {p.returncode}\n{p.stderr.decode(errors='replace')}\n{src}")
    return outs


def unary_all(tdslc, backend, dt, rng):
    x = sweep(dt, rng)
    n = x.size
    src = (f"fn f(x: {dt}[{n}]) -> ({', '.join([f'{dt}[{n}]'] * len(UNARY))}) {{\n"
           f"    return {', '.join(f'{op}(x)' for op in UNARY)}\n}}\n")
    outs = run(tdslc, backend, src, {"x": x})
    for op, got in zip(UNARY, outs):
        ulp_check(f"{op} {dt}", got, reference(op, x, dt), dt, BOUND[dt][op], x=x)


def pow_all(tdslc, backend, dt, rng):
    e = edges(dt)
    e = e[np.abs(e.astype(np.float64)) < 1e6]  # pairs of the edges: every special case, and more
    e = np.concatenate([e, np.array([3, -3, 0.25, 1.5, -2.5, 7, 1e6, -1e6, 31, 2.0**60], dtype=NP[dt])])
    xe, ye = np.meshgrid(e, e)
    xs = np.concatenate([xe.ravel(), rng.uniform(0, 4, 1 << 16), rng.uniform(-4, 4, 1 << 15),
                         rng.uniform(0, 100, 1 << 14)]).astype(NP[dt])
    ys = np.concatenate([ye.ravel(), rng.uniform(-40, 40, 1 << 16), np.floor(rng.uniform(-40, 40, 1 << 15)),
                         rng.uniform(-200, 200, 1 << 14)]).astype(NP[dt])
    pad = (-xs.size) % 64
    xs, ys = np.concatenate([xs, np.ones(pad, NP[dt])]), np.concatenate([ys, np.ones(pad, NP[dt])])
    n = xs.size
    src = (f"fn f(x: {dt}[{n}], y: {dt}[{n}]) -> ({dt}[{n}], {dt}[{n}], {dt}[{n}], {dt}[{n}], {dt}[{n}], "
           f"{dt}[{n}], {dt}[{n}]) {{\n"
           "    return pow(x, y), x ** 2, x ** 3, x ** 0.5, x ** -0.5, x ** -1, x ** -2\n}\n")
    outs = run(tdslc, backend, src, {"x": xs, "y": ys})
    hp = LD if dt == "f64" else np.float64
    with np.errstate(all="ignore"):
        ulp_check(f"pow {dt}", outs[0], np.power(xs.astype(hp), ys.astype(hp)), dt, BOUND[dt]["pow"], x=xs, y=ys)
        x = xs.astype(hp)
        # PyTorch's own exponents: x*x, x*x*x, sqrt, 1/sqrt, 1/x, 1/(x*x) (two roundings: 1 ulp)
        for k, (name, want) in enumerate([("2", x * x), ("3", x * x * x), ("0.5", np.sqrt(x)), ("-0.5", 1 / np.sqrt(x)),
                                          ("-1", 1 / x), ("-2", 1 / (x * x))]):
            ulp_check(f"x ** {name} {dt}", outs[k + 1], want, dt, 1.5, x=xs)


def rel_check(name, got, want, rtol, atol):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = (np.abs(got - want) <= atol + rtol * np.abs(want)) | (np.isnan(got) & np.isnan(want)) | (got == want)
    with np.errstate(invalid="ignore", divide="ignore"):
        err = np.abs(got - want) / (atol + rtol * np.abs(want))
    errs = []
    if not ok.all():
        i = int(np.flatnonzero(~ok.ravel())[0])
        errs.append(f"{int((~ok).sum())} off, e.g. index {i}: got {got.ravel()[i]!r}, want {want.ravel()[i]!r}")
    T.report(f"{name}: worst {float(np.nanmax(err)) if err.size else 0:.3f} of the tolerance", errs)


def composite_source(dt, R, C, N):
    a = f"{dt}[{R}, {C}]"
    qkv = f"{dt}[2, 4, 40, 16]"
    return (f"fn f(x: {a}, w: {dt}[{N}, {C}], b: {dt}[{N}], q: {qkv}, k: {qkv}, v: {qkv})"
            f" -> ({', '.join([a] * 8)}, {dt}[{R}], {a}, {dt}[{R}, {N}], {qkv}, {a}, {dt}[{R}]) {{\n"
            "    return gelu(x), gelu(x, approximate='tanh'), softplus(x), mish(x), logsigmoid(x), elu(x), "
            "log_softmax(x, -1), softmax(x, -1), logsumexp(x, -1), silu(x), gelu(x @ w.t() + b), "
            "scaled_dot_product_attention(q, k, v), sigmoid(x) * tanh(x) + log1p(exp(-abs(x))), "
            "(sin(x * 4) * cos(x)).sum(-1)\n}\n")


def erf_np(x):
    return np.vectorize(math.erf)(x)


def composites(tdslc, backend, dt, rng):
    R, C, N = 64, 100, 48
    src = composite_source(dt, R, C, N)
    x = rng.uniform(-12, 12, (R, C))
    x[0, :8] = [0, -0.0, INF, -INF, 30, -30, 1e-30, -1e-30]
    x[1, 5] = 1e12  # sin's cold path: the row's sum is run again with libm's sin and cos
    x[2, 99] = -3e9
    w, b = rng.standard_normal((N, C)) * 0.1, rng.standard_normal(N)
    q, k, v = (rng.standard_normal((2, 4, 40, 16)) for _ in range(3))
    ins = {"x": x, "w": w, "b": b, "q": q, "k": k, "v": v}
    ins = {n: a.astype(NP[dt]) for n, a in ins.items()}
    outs = run(tdslc, backend, src, ins)
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
        want = [
            ("gelu", X * 0.5 * (1 + erf_np(X / math.sqrt(2))), rt, 1e-6 if dt == "f32" else 1e-15),
            ("gelu tanh", 0.5 * X * (1 + np.tanh(math.sqrt(2 / math.pi) * (X + 0.044715 * X**3))), rt,
             1e-6 if dt == "f32" else 1e-15),
            ("softplus", sp, rt, 0), ("mish", X * np.tanh(sp), rt, 1e-30),
            ("logsigmoid", np.minimum(X, 0) - np.log1p(np.exp(-np.abs(X))), rt, 1e-30),
            ("elu", np.where(X > 0, X, np.expm1(X)), rt, 0),
            ("log_softmax", ls, 4 * rt, 1e-6 if dt == "f32" else 1e-14),
            ("softmax", np.exp(ls), 8 * rt, 1e-30), ("logsumexp", lse, 4 * rt, 1e-30),
            ("silu", X * sig, rt, 1e-30),
            ("gelu(x @ w.t() + b)", lin * 0.5 * (1 + erf_np(lin / math.sqrt(2))), 1e3 * rt, 1e3 * rt),
            ("scaled_dot_product_attention", att, 1e3 * rt, 1e3 * rt),
            ("sigmoid(x) * tanh(x) + log1p(exp(-abs(x)))", sig * np.tanh(X) + np.log1p(np.exp(-np.abs(X))), rt, 1e-7),
            ("(sin(x * 4) * cos(x)).sum(-1)", (np.sin(ins["x"] * NP[dt](4)).astype(np.float64) * np.cos(X)).sum(axis=1),
             1e2 * rt, 1e2 * rt),
        ]
    for got, (name, ref, rtol, atol) in zip(outs, want):
        finite = np.isfinite(ref) | np.isnan(ref)
        rel_check(f"{name} {dt}", got[finite], ref[finite], rtol, atol)


# ---- the generated code ----
LIBM = re.compile(r"\b(?:call|callq|jmp)\s+\*?(?P<f>(?:exp|exp2|expm1|log|log2|log10|log1p|tanh|erf|erfc|sin|cos|pow|"
                  r"sqrt|fma|fabs|copysign|trunc)f?)(?:@PLT)?\b")
# floating-point arithmetic on 256- or 512-bit registers (AT&T syntax: the registers follow)
VEC = re.compile(r"\bv(?:fn?m(?:add|sub)\w*|mul|add|sub|div|max|min|cmp|blendm?|rndscale|round|sqrt|cvt\w*)"
                 r"[ps][sd]\b[^\n]*%[yz]mm")


def programs():
    out = {}
    for dt in ("f32", "f64"):
        for op in UNARY + ["pow"]:
            args = "x, x" if op == "pow" else "x"
            params = f"x: {dt}[64, 4096]"
            out[f"{op} {dt}"] = f"fn f({params}) -> {dt}[64, 4096] {{\n    return {op}({args})\n}}\n"
        for name, expr in [("gelu", "gelu(x)"), ("gelu tanh", "gelu(x, approximate='tanh')"),
                           ("softplus", "softplus(x)"), ("mish", "mish(x)"), ("log_softmax", "log_softmax(x, -1)"),
                           ("softmax", "softmax(x, -1)"), ("relu(x*2+1)*sigmoid(x)", "relu(x * 2 + 1) * sigmoid(x)")]:
            out[f"{name} {dt}"] = f"fn f(x: {dt}[64, 4096]) -> {dt}[64, 4096] {{\n    return {expr}\n}}\n"
        out[f"logsumexp {dt}"] = f"fn f(x: {dt}[64, 4096]) -> {dt}[64] {{\n    return logsumexp(x, -1)\n}}\n"
        out[f"sum(sin(x)) {dt}"] = f"fn f(x: {dt}[64, 4096]) -> {dt}[64] {{\n    return sin(x).sum(-1)\n}}\n"
        out[f"gelu(x @ w.t() + b) {dt}"] = (
            f"fn f(x: {dt}[4, 128, 768], w: {dt}[3072, 768], b: {dt}[3072]) -> {dt}[4, 128, 3072] {{\n"
            "    return gelu(x @ w.t() + b)\n}\n")
        out[f"attention {dt}"] = (
            f"fn f(q: {dt}[2, 4, 256, 64], k: {dt}[2, 4, 256, 64], v: {dt}[2, 4, 256, 64]) -> {dt}[2, 4, 256, 64] "
            "{\n    return scaled_dot_product_attention(q, k, v)\n}\n")
    return out


def code_check(name, asm, vec_regs):
    """No libm call (sin, cos: only the cold path's) and vector arithmetic. LLVM 14 keeps a
    sum of sin or cos scalar (docs/vecmath.md): only the calls are checked there."""
    if name.startswith("sum(sin(x))") and "llvm" in name:
        vec_regs = False
    calls = sorted({m.group("f") for m in LIBM.finditer(asm)})
    trig = name.split()[0] in ("sin", "cos") or "sin(" in name
    allowed = {"sin", "sinf", "cos", "cosf"} if trig else set()
    bad = [c for c in calls if c not in allowed]
    nvec = len(VEC.findall(asm)) if vec_regs else 8
    T.check(f"{name}: vector arithmetic, no libm call{' but the cold path' if trig else ''}",
            not bad and nvec >= 8, f"libm calls {bad}, {nvec} vector arithmetic instructions")


def host_avx2():
    """Whether cc -march=native here has 256-bit vectors (else the C check skips them)."""
    try:
        with open("/proc/cpuinfo") as f:
            return " avx2" in f.read()
    except OSError:
        return False


def generated_code(tdslc, backend):
    progs = programs()
    if backend in (None, "llvm"):
        for cpu in ("znver3", "skylake-avx512"):
            for name, src in progs.items():
                k = emit_text(tdslc, src, "asm", [f"--cpu={cpu}"])
                if k.returncode != 0:
                    T.report(f"{name}: --emit=asm --cpu={cpu}", [k.stderr])
                    continue
                code_check(f"{name} (llvm, {cpu})", k.stdout, True)
    if backend == "c":
        inc = subprocess.run([tdslc, "--print-include-dir"], capture_output=True, text=True).stdout.strip()
        with tempfile.TemporaryDirectory() as d:
            for name, src in progs.items():
                k = emit_text(tdslc, src, "c")
                path = os.path.join(d, "k.c")
                with open(path, "w") as f:
                    f.write(k.stdout)
                # driver/cc.c's flags
                p = subprocess.run(["cc", "-std=c11", "-O2", "-march=native", "-fvect-cost-model=dynamic",
                                    "-fno-math-errno", "-fno-trapping-math", "-fopenmp", "-S", "-I", inc, path, "-o", "-"],
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    T.report(f"{name}: cc -S", [p.stderr])
                    continue
                code_check(f"{name} (c)", p.stdout, host_avx2())


def main():
    tdslc = sys.argv[1]
    backend = require_backend(tdslc)
    rng = np.random.default_rng(2027)
    for dt in ("f32", "f64"):
        unary_all(tdslc, backend, dt, rng)
        pow_all(tdslc, backend, dt, rng)
        composites(tdslc, backend, dt, rng)
    generated_code(tdslc, backend)
    return T.summary(recap=True)


if __name__ == "__main__":
    sys.exit(main())
