#!/usr/bin/python3
"""tests/run/test_math_ops.py TDSLC: the elementwise ops built from other nodes (isclose,
nan_to_num, lerp, logaddexp, logaddexp2) and the binary ops of issue 14 on nan, inf and
±0 (hypot, copysign, fmod, div with a rounding mode), in each float dtype, with literals
and broadcasting; nextafter (f32, f64: bit for bit, the next value in the operands' own
format, mixed dtypes promoting); integer fmod and div(rounding_mode='trunc') by zero raise PyTorch's
ZeroDivisionError at run time. Compared with NumPy computing PyTorch's formulas in the
opmath dtype (f16/bf16 in f32, rounded once).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, compare, from_npy, opm, require_backend, rnd, run_outputs, tdslc_run,  # noqa: E402
                    test_subset)
from oracle import count_errors, run_cleanup, to_npy  # noqa: E402

SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.5, 1e-3, 100.0]
FLOATS = ["f16", "bf16", "f32", "f64"]
NP = {"f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64}
MAXF = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": float(np.finfo(np.float32).max),
        "f64": float(np.finfo(np.float64).max)}


def grid(dt):
    """Every pair of special values: x [n, 1] and y [n] broadcast to [n, n]."""
    v = rnd(np.array(SPECIALS), dt)
    return v.reshape(-1, 1), v


def isclose(a, b, rtol, atol, equal_nan, dt):
    """PyTorch 1.13's composition, each step rounded to its dtype."""
    fl = a.dtype.kind == "f"
    close = a == b
    if equal_nan and fl:
        close |= np.isnan(a) & np.isnan(b)
    if rtol == 0 and atol == 0:
        return close
    cd = dt if fl else "f32"
    ca = a.astype(np.float32) if a.dtype == np.bool_ else a
    cb = b if fl else b.astype(np.float32)
    with np.errstate(all="ignore"):
        allowed = rnd(atol + np.abs(rnd(rtol * opm(cb), cd)), cd)
        actual = np.abs(rnd(opm(ca).astype(np.float64) - opm(cb), cd))
    return close | (np.isfinite(actual) & (actual <= allowed))


def lerp(a, b, w):
    with np.errstate(all="ignore"):
        return np.where(w < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def logaddexp(a, b, two):
    with np.errstate(all="ignore"):
        m = np.maximum(a, b)
        d = -np.abs(a - b)
        r = m + (np.log1p(np.exp2(d)) / np.log(2) if two else np.log1p(np.exp(d)))
        return np.where(np.isinf(a) & (a == b), a, r)


def trunc_div(a, b):
    with np.errstate(all="ignore"):
        return np.trunc(a / b)


RUNS_SEEN = [0]  # run() calls so far


def run(tdslc, t, name, params, exprs, wants):
    """One function: params [(name, dtype, array)], outputs [(expr, dtype)], wants the
    NumPy values. The sanitizer pass runs every test_subset()th call."""
    RUNS_SEEN[0] += 1
    if (RUNS_SEEN[0] - 1) % test_subset():  # the sanitizer pass: a subset
        return
    ps = ", ".join(f"{n}: {d}[{', '.join(str(k) for k in v.shape)}]" for n, d, v in params)
    rets = ", ".join(f"{d}[{', '.join(str(k) for k in np.shape(w))}]" for (_, d), w in zip(exprs, wants))
    src = f"fn f({ps}) -> ({rets}) {{\n    return {', '.join(e for e, _ in exprs)}\n}}\n"
    p, outs = run_outputs(tdslc, src, {n: to_npy(v, d) for n, d, v in params})
    errs = []
    if p.returncode != 0:
        errs.append(f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:400]}")
    else:
        errs += count_errors(outs, wants)
        for (e, d), got, w in zip(exprs, outs, wants):
            r = compare(from_npy(got, d), rnd(np.asarray(w), d), d, "exact" if d in ("bool", "i32", "i64") else "elem")
            if r:
                errs.append(f"{e}: {r}")
    t.report(name, errs, src)


def float_cases(tdslc, t):
    rng = np.random.default_rng(14)
    for dt in FLOATS:
        x, y = grid(dt)
        xs, ys = opm(x), opm(y)
        bx = np.broadcast_to(xs, (len(SPECIALS), len(SPECIALS)))
        with np.errstate(all="ignore"):
            run(tdslc, t, f"specials_{dt}", [("x", dt, x), ("y", dt, y)],
                [("hypot(x, y)", dt), ("torch.copysign(x, y)", dt), ("x.fmod(y)", dt),
                 ("div(x, y, rounding_mode='trunc')", dt), ("torch.div(x, y, rounding_mode='floor')", dt),
                 ("logaddexp(x, y)", dt), ("x.isclose(y)", "bool"), ("isclose(x, y, equal_nan=True)", "bool"),
                 ("torch.nan_to_num(x + y)", dt), ("x.expand(12, 12).nan_to_num(1.5, posinf=2, neginf=-3.0)", dt),
                 ("copysign(x.expand(12, 12), -0.0)", dt), ("fmod(x.expand(12, 12), 2)", dt),
                 ("frac(x).expand(12, 12)", dt)],
                [np.hypot(xs, ys), np.copysign(xs, ys), np.fmod(xs, ys), trunc_div(xs, ys),
                 np.floor_divide(xs, ys), logaddexp(xs, ys, False),
                 isclose(x, y, 1e-5, 1e-8, False, dt), isclose(x, y, 1e-5, 1e-8, True, dt),
                 np.nan_to_num(opm(rnd(xs + ys, dt)), nan=0.0, posinf=MAXF[dt], neginf=-MAXF[dt]),
                 np.nan_to_num(bx, nan=1.5, posinf=2, neginf=-3.0), np.copysign(bx, -0.0), np.fmod(bx, 2),
                 bx - np.trunc(bx)])
        if dt != "f16":
            run(tdslc, t, f"logaddexp2_{dt}", [("x", dt, x), ("y", dt, y)], [("x.logaddexp2(y)", dt)],
                [logaddexp(xs, ys, True)])
        # lerp with a tensor and a scalar weight (both branches), isclose with wider tolerances
        a = rnd(rng.standard_normal((3, 5)), dt)
        b = rnd(rng.standard_normal((3, 5)), dt)
        w = rnd(rng.uniform(-1, 2, (5,)), dt)
        a_, b_, w_ = opm(a), opm(b), opm(w)
        near = rnd(a_ + rng.uniform(-0.02, 0.02, (3, 5)), dt)
        run(tdslc, t, f"lerp_isclose_{dt}", [("a", dt, a), ("b", dt, b), ("w", dt, w), ("n", dt, near)],
            [("lerp(a, b, w)", dt), ("a.lerp(b, 0.25)", dt), ("torch.lerp(a, b, 0.75)", dt),
             ("lerp(a, b, 1)", dt), ("isclose(a, n, rtol=0.01, atol=0.005)", "bool"),
             ("torch.isclose(n, a, 0.0, 0.0)", "bool"), ("a.isclose(n, atol=0.01)", "bool")],
            [lerp(a_, b_, w_), lerp(a_, b_, np.float64(0.25)), lerp(a_, b_, np.float64(0.75)), b_,
             isclose(a, near, 0.01, 0.005, False, dt), isclose(near, a, 0.0, 0.0, False, dt),
             isclose(a, near, 1e-5, 0.01, False, dt)])


def int_cases(tdslc, t):
    rng = np.random.default_rng(15)
    for dt in ("i32", "i64", "bool"):
        a = rng.integers(-20, 21, (4, 6)).astype(np.int32 if dt == "i32" else np.int64)
        b = (rng.integers(1, 6, (6,)) * rng.choice([-1, 1], (6,))).astype(a.dtype)
        if dt == "bool":
            a, b = a > 0, b > 0
        exprs = [("isnan(a)", "bool"), ("a.isinf()", "bool"), ("isfinite(a)", "bool"), ("nan_to_num(a)", dt),
                 ("isclose(a, a.flip(0))", "bool"), ("torch.isclose(a, a.flip(0), atol=3)", "bool"),
                 ("bitwise_and(a, b)", dt), ("a.bitwise_xor(b)", dt)]
        wants = [np.zeros(a.shape, bool), np.zeros(a.shape, bool), np.ones(a.shape, bool), a,
                 isclose(a, a[::-1], 1e-5, 1e-8, False, dt), isclose(a, a[::-1], 1e-5, 3, False, dt),
                 a & b, a ^ b]
        if dt != "bool":
            exprs += [("fmod(a, b)", dt), ("div(a, b, rounding_mode='trunc')", dt), ("a.fmod(-3)", dt),
                      ("a.div(3, rounding_mode='trunc')", dt), ("bitwise_or(a, 6)", dt), ("a.bitwise_and(-4)", dt),
                      ("bitwise_left_shift(a, 2)", dt), ("a.bitwise_right_shift(b.abs())", dt),
                      ("fmod(a, 2.5)", "f32"), ("copysign(a, b)", "f32"), ("div(a, b)", "f32"),
                      ("torch.divide(a, b, rounding_mode='floor')", dt)]
            q = np.abs(a) // np.abs(b)
            wants += [np.fmod(a, b), np.where((a < 0) != (b < 0), -q, q), np.fmod(a, -3),
                      np.where(a < 0, -(np.abs(a) // 3), a // 3), a | 6, a & -4, a << 2, a >> np.abs(b),
                      np.fmod(a.astype(np.float32), np.float32(2.5)),
                      np.copysign(a.astype(np.float32), b.astype(np.float32)),
                      a.astype(np.float32) / b.astype(np.float32), np.floor_divide(a, b)]
        else:
            exprs += [("bitwise_or(a, True)", dt), ("a.bitwise_and(3)", "i64")]
            wants += [a | True, a.astype(np.int64) & 3]
        run(tdslc, t, f"ints_{dt}", [("a", dt, a), ("b", dt, b)], exprs, wants)


def alpha_cases(tdslc, t):
    """add/sub/subtract/rsub with alpha= in every dtype: input + alpha * other computed in
    the opmath dtype (f16/bf16 in f32 with alpha as an f32, rounded once), ints wrapping in
    the result dtype, a bool alpha a logical and; alpha a number or a 0-d tensor."""
    rng = np.random.default_rng(16)
    for dt in ("f16", "bf16", "f32", "f64"):
        a, b = rnd(rng.standard_normal((3, 4)), dt), rnd(rng.standard_normal((4,)), dt)
        cd = np.float64 if dt == "f64" else np.float32
        A, B = a.astype(cd), b.astype(cd)
        with np.errstate(all="ignore"):
            run(tdslc, t, f"alpha_{dt}", [("a", dt, a), ("b", dt, b)],
                [("torch.add(a, b, alpha=2.5)", dt), ("a.sub(b, alpha=-0.3)", dt), ("torch.subtract(a, b, alpha=3)", dt),
                 ("torch.rsub(a, b, alpha=1.7)", dt), ("torch.add(a, 2, alpha=0.5)", dt),
                 ("a.add(b, alpha=b[1])", dt), ("a.add(b, alpha=1)", dt)],
                [A + cd(2.5) * B, A - cd(-0.3) * B, A - cd(3) * B, B - cd(1.7) * A, A + cd(1.0), A + B[1] * B, A + B])
    for dt in ("u8", "i8", "i16", "i32", "i64"):
        a = rng.integers(-100, 100, (3, 4)).astype(np.int64)
        b = rng.integers(-100, 100, (4,)).astype(np.int64)
        if dt == "u8":
            a, b = a & 255, b & 255
        npt = {"u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}[dt]
        a, b = a.astype(npt), b.astype(npt)
        A, B = a.astype(np.int64), b.astype(np.int64)
        w = lambda v: np.asarray(v).astype(npt)  # noqa: E731 (wraps as PyTorch's integer arithmetic)
        run(tdslc, t, f"alpha_{dt}", [("a", dt, a), ("b", dt, b)],
            [("torch.add(a, b, alpha=3)", dt), ("a.sub(b, alpha=-2)", dt), ("torch.add(a, 5, alpha=7)", dt),
             ("torch.rsub(a, b, alpha=2)", dt), ("a.add(b, alpha=b[0])", dt),
             ("torch.add(a, 1.5, alpha=2)", "f32"), ("a.add(b.long(), alpha=100000)", "i64")],
            [w(A + 3 * B), w(A + 2 * B), w(A + 35), w(B - 2 * A), w(A + B[0] * B),
             a.astype(np.float32) + np.float32(3.0), A + 100000 * B])
    a, b = rng.random((3, 4)) < 0.5, rng.random((4,)) < 0.5
    run(tdslc, t, "alpha_bool", [("a", "bool", a), ("b", "bool", b)],
        [("torch.add(a, b, alpha=True)", "bool"), ("a.add(b, alpha=False)", "bool"), ("torch.add(a, b, alpha=2)", "bool"),
         ("a.add(b, alpha=0)", "bool"), ("a.add(b, alpha=b[0])", "bool"),
         ("torch.add(a, b.long(), alpha=3)", "i64")],
        [a | b, a | np.zeros_like(b), a | b, a | np.zeros_like(b), a | (b & b[0]), a + 3 * b.astype(np.int64)])
    # the in-place forms: x.add_(y, alpha=), x.sub_ (the result stored in x's dtype)
    for dt, other, alpha in (("f16", "f16", 0.1), ("i8", "i8", 3), ("i64", "i32", -2), ("f32", "i64", 2.5)):
        x = rnd(rng.standard_normal((2, 3)) * 4, dt) if dt[0] == "f" else rng.integers(-50, 50, (2, 3))
        y = rng.integers(-50, 50, (3,)) if other[0] == "i" else rnd(rng.standard_normal((3,)), other)
        src = (f"fn f(x: {dt}[2, 3], y: {other}[3]) -> ({dt}[2, 3], {dt}[2, 3]) {{\n    t = x.clone()\n"
               f"    t.add_(y, alpha={alpha})\n    u = x.clone()\n    u.sub_(y, alpha={alpha})\n    return t, u\n}}\n")
        p, outs = run_outputs(tdslc, src, {"x": to_npy(x, dt), "y": to_npy(y, other)})
        if dt[0] == "f":
            cd = np.float64 if dt == "f64" else np.float32
            X, Y, al = opm(x).astype(cd), np.asarray(y).astype(cd), cd(alpha)
            wants = [X + al * Y, X - al * Y]
        else:
            npt = {"i8": np.int8, "i64": np.int64}[dt]
            X, Y = x.astype(np.int64), y.astype(np.int64)
            wants = [(X + alpha * Y).astype(npt), (X - alpha * Y).astype(npt)]
        errs = [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:400]}"] if p.returncode else \
            count_errors(outs, wants) + [
            f"out{k}: {r}" for k, (got, want) in enumerate(zip(outs, wants))
            if (r := compare(from_npy(got, dt), rnd(want, dt), dt, "exact" if dt[0] == "i" else "elem"))]
        t.report(f"alpha_inplace_{dt}_{other}", errs, src)


def raise_cases(tdslc, t):
    """Integer fmod and div(rounding_mode='trunc') by zero: PyTorch's ZeroDivisionError."""
    for expr in ("fmod(a, b)", "div(a, b, rounding_mode='trunc')", "a.fmod(0)"):
        src = f"fn f(a: i64[3], b: i64[3]) -> i64[3] {{\n    return {expr}\n}}\n"
        a, b = np.array([1, 2, 3], np.int64), np.array([1, 0, 2], np.int64)
        p, _, out_dir = tdslc_run(tdslc, src, ["--fn", "f"], inputs={"a": a, "b": b}, json_out=False)
        run_cleanup(out_dir)
        err = p.stderr.decode(errors="replace")
        t.check(f"{expr} by zero raises", p.returncode == 3 and "error: ZeroDivisionError" in err,
                f"exit {p.returncode}: {err[:300]}")


def nextafter_cases(tdslc, t):
    """torch.nextafter: NumPy's nextafter in the promoted dtype, compared bit for bit (a
    result computed in f64 and rounded to f32 would give x back)."""
    rng = np.random.default_rng(29)
    for dt in ("f32", "f64"):
        x, y = grid(dt)
        r = rnd(rng.standard_normal((7,)) * 1e3, dt)
        tiny = rnd(np.array([0.0, -0.0, 1e-45 if dt == "f32" else 5e-324, -1e-40, 3.0e38, 1.0]), dt)
        wants = [np.nextafter(x, y), np.nextafter(r, r + 1), np.nextafter(r, np.float32(0)), np.nextafter(tiny, -tiny),
                 np.nextafter(r, np.float64(2).astype(NP[dt]))]
        exprs = [("torch.nextafter(x, y)", dt), ("r.nextafter(r + 1)", dt), ("torch.nextafter(r, torch.zeros(7))", dt),
                 ("torch.nextafter(s, -s)", dt), ("nextafter(r, torch.tensor(2.0, dtype=torch.float64))", dt)]
        params = [("x", dt, x), ("y", dt, y), ("r", dt, r), ("s", dt, tiny)]
        ps = ", ".join(f"{n}: {d}[{', '.join(str(k) for k in v.shape)}]" for n, d, v in params)
        rets = ", ".join(f"{d}[{', '.join(str(k) for k in np.shape(w))}]" for (_, d), w in zip(exprs, wants))
        src = f"fn f({ps}) -> ({rets}) {{\n    return {', '.join(e for e, _ in exprs)}\n}}\n"
        p, outs = run_outputs(tdslc, src, {n: to_npy(v, d) for n, d, v in params})
        errs = [] if p.returncode == 0 else [f"exit {p.returncode}: {p.stderr.decode(errors='replace')[:400]}"]
        for (e, d), got, w in zip(exprs, outs if not errs else [], wants):
            w = np.asarray(w, NP[dt])
            if got.dtype != w.dtype or got.shape != w.shape or not np.array_equal(got.view(f"u{w.itemsize}"),
                                                                                w.view(f"u{w.itemsize}")):
                errs.append(f"{e}: got {got.ravel()[:6]} want {w.ravel()[:6]}")
        t.report(f"nextafter_{dt}", errs, src)
    # f32 and f64 operands: an f64 result (each other's promotion)
    x32 = rnd(rng.standard_normal((5,)), "f32")
    x64 = rng.standard_normal((5,))
    p, outs = run_outputs(tdslc, "fn f(a: f32[5], b: f64[5]) -> f64[5] {\n    return torch.nextafter(a, b)\n}\n",
                          {"a": x32, "b": x64})
    w = np.nextafter(x32.astype(np.float64), x64)
    t.check("nextafter of f32 and f64", p.returncode == 0 and outs and np.array_equal(outs[0], w),
            p.stderr.decode(errors="replace")[:400])


def main():
    tdslc = os.path.abspath(sys.argv[1])
    require_backend(tdslc)
    t = Tally()
    float_cases(tdslc, t)
    nextafter_cases(tdslc, t)
    int_cases(tdslc, t)
    alpha_cases(tdslc, t)
    raise_cases(tdslc, t)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
