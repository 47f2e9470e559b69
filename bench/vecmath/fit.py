#!/usr/bin/python3
"""bench/vecmath/fit.py: the polynomial coefficients of ir/vecmath.c, computed here.

Every polynomial there is a weighted minimax fit (Remez exchange) of a function on an
interval, with its coefficients rounded to the working precision one at a time (lowest
degree first, each rounding followed by a refit of the ones left, so the later ones
absorb the earlier roundings). Reference values come from Python's decimal module at 90
digits (exp and ln are decimal's own; sin, cos, atanh, erf by their series; erfc by its
continued fraction): the standard library only, no fitting package.

    bench/vecmath/fit.py            every table, as the C text ir/vecmath.c holds
    bench/vecmath/fit.py NAME...    only those (see TABLES)

Each table prints its interval, the weighted error of the real-valued fit (before
rounding) and the coefficients as C hex floats, lowest degree first. The error after
rounding, in ULPs, is what bench/vecmath/sweep.c measures on the generated code.
"""
import struct
import sys
from decimal import Decimal as D, getcontext, localcontext

getcontext().prec = 90


# ---- reference functions (Decimal in, Decimal out) ----

def pi():
    """pi by the decimal module documentation's series (3 + 1/8 + 9/640 + ...)."""
    with localcontext() as c:
        c.prec += 4
        lasts, t, s, n, na, d, da = 0, D(3), 3, 1, 0, 0, 24
        while s != lasts:
            lasts = s
            n, na = n + na, na + 8
            d, da = d + da, da + 32
            t = (t * n) / d
            s += t
    return +s


PI = pi()


def dsin(x):
    x = D(x)
    s, t, k = D(0), x, 1
    while abs(t) > D(10) ** -100:
        s += t
        t = -t * x * x / ((k + 1) * (k + 2))
        k += 2
    return s


def dcos(x):
    x = D(x)
    s, t, k = D(0), D(1), 0
    while abs(t) > D(10) ** -100:
        s += t
        t = -t * x * x / ((k + 1) * (k + 2))
        k += 2
    return s


def datanh(s):
    s = D(s)
    return (((1 + s) / (1 - s)).ln()) / 2


def derf(x):
    """erf by the series of positive terms erf(x) = 2/sqrt(pi) e^(-x^2) sum (2x^2)^n x / (2n+1)!!."""
    x = D(x)
    if x == 0:
        return D(0)
    with localcontext() as c:
        c.prec = 120
        t = x
        s, n = D(0), 0
        while t > s * D(10) ** -110:
            s += t
            n += 1
            t = t * 2 * x * x / (2 * n + 1)
        r = 2 / PI.sqrt() * (-x * x).exp() * s
    return +r


def derfc(x):
    """erfc: 1 - erf below 3, else the continued fraction e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/...)))."""
    x = D(x)
    if x < 3:
        with localcontext() as c:
            c.prec = 130
            r = 1 - derf(x)
        return +r
    with localcontext() as c:
        c.prec = 110
        f = x
        for k in range(600, 0, -1):
            f = x + D(k) / 2 / f
        r = (-x * x).exp() / PI.sqrt() / f
    return +r


# ---- Remez exchange ----

def xp(x, p):
    return D(1) if p == 0 else x ** p


def horner(c, pw, x):
    """sum c[j] * x^pw[j] (pw ascending)."""
    return sum(cj * xp(x, p) for cj, p in zip(c, pw))


def solve(a, b):
    """Gaussian elimination with partial pivoting in Decimal."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for k in range(col, n + 1):
                m[r][k] -= f * m[col][k]
    x = [D(0)] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def alternation(e, keep):
    """The Remez exchange's new reference: the largest |e| of each run of one sign of the
    errors e, then the smaller end dropped until at most keep are left."""
    ext, i = [], 0
    while i < len(e):
        j, best = i, i
        while j < len(e) and (e[j] >= 0) == (e[i] >= 0):
            if abs(e[j]) > abs(e[best]):
                best = j
            j += 1
        ext.append(best)
        i = j
    while len(ext) > keep:
        if abs(e[ext[0]]) < abs(e[ext[-1]]):
            ext.pop(0)
        else:
            ext.pop()
    return ext


def remez(g, w, a, b, pw, fixed=None, npts=2500, iters=40):
    """Coefficients c (for the powers pw) minimizing max |w(x) (sum c_j x^pw_j - g(x))|
    over [a, b]; fixed: {j: value} coefficients held. Returns (c, weighted error)."""
    fixed = fixed or {}
    free = [j for j in range(len(pw)) if j not in fixed]
    a, b = D(a), D(b)
    grid = [(a + b) / 2 - (b - a) / 2 * dcos(PI * k / (npts - 1)) for k in range(npts)]
    gv = [g(x) for x in grid]
    wv = [w(x) for x in grid]
    fv = [gv[i] - sum(fixed[j] * xp(grid[i], pw[j]) for j in fixed) for i in range(npts)]
    m = len(free)
    ref = [round(k * (npts - 1) / m) for k in range(m + 1)]
    c = [D(0)] * len(pw)
    err = D(0)
    for _ in range(iters):
        rows = [[xp(grid[i], pw[j]) for j in free] + [(-1) ** r / wv[i]] for r, i in enumerate(ref)]
        sol = solve(rows, [fv[i] for i in ref])
        for k, j in enumerate(free):
            c[j] = sol[k]
        for j in fixed:
            c[j] = fixed[j]
        lev = abs(sol[-1])
        e = [wv[i] * (horner(c, pw, grid[i]) - gv[i]) for i in range(npts)]
        ext = alternation(e, m + 1)
        err = max(abs(v) for v in e)
        if len(ext) < m + 1:
            break
        ref = ext
        if err <= lev * (1 + D("1e-9")):
            break
    return c, err


def rational_remez(g, w, a, b, n, m, npts=1500, iters=40):
    """P (degree n) and Q (degree m, constant 1) minimizing max |w(x) (P(x)/Q(x) - g(x))|:
    the linear Remez step solved for P, Q and the level E with E's factor Q taken from
    the previous step (repeated until Q settles), then the usual exchange."""
    a, b = D(a), D(b)
    grid = [(a + b) / 2 - (b - a) / 2 * dcos(PI * k / (npts - 1)) for k in range(npts)]
    gv = [g(x) for x in grid]
    wv = [w(x) for x in grid]
    npar = n + m + 2
    ref = [round(k * (npts - 1) / (npar - 1)) for k in range(npar)]
    p, q = [D(0)] * (n + 1), [D(1)] + [D(0)] * m
    err = D(0)
    for _ in range(iters):
        for _ in range(8):
            rows = []
            for r, i in enumerate(ref):
                x, qp = grid[i], horner(q, list(range(m + 1)), grid[i])
                rows.append([xp(x, j) for j in range(n + 1)] + [-gv[i] * xp(x, j) for j in range(1, m + 1)] +
                            [-(-1) ** r / wv[i] * qp])
            sol = solve(rows, [gv[i] for i in ref])
            p, q, lev = sol[:n + 1], [D(1)] + sol[n + 1:n + 1 + m], abs(sol[-1])
        e = [wv[i] * (horner(p, list(range(n + 1)), grid[i]) / horner(q, list(range(m + 1)), grid[i]) - gv[i])
             for i in range(npts)]
        ext = alternation(e, npar)
        err = max(abs(v) for v in e)
        if len(ext) < npar:
            break
        ref = ext
        if err <= lev * (1 + D("1e-6")):
            break
    return p, q, err


def to_f32(v):
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def weighted_error(g, w, a, b, pw, c, npts=3000):
    a, b = D(a), D(b)
    worst = D(0)
    for k in range(npts + 1):
        x = (a + b) / 2 - (b - a) / 2 * dcos(PI * k / npts)
        worst = max(worst, abs(w(x) * (horner(c, pw, x) - g(x))))
    return worst


def rounded_fit(g, w, a, b, pw, prec, fixed=None):
    """The fit with its coefficients rounded to prec ('f32'/'f64'): the better (by the
    weighted error on a fine grid) of two roundings, each coefficient to nearest, or one
    at a time from the lowest degree with the rest refitted after each (which can do
    worse where the refit's basis is no longer a Chebyshev system). Returns (c, error
    of the real fit, error after rounding)."""
    fixed = dict(fixed or {})
    rnd = to_f32 if prec == "f32" else float
    c0, err0 = remez(g, w, a, b, pw, fixed)
    nearest = [D(rnd(v)) for v in c0]
    best, best_err = nearest, weighted_error(g, w, a, b, pw, nearest)
    c = c0
    for j in range(len(pw)):
        if j in fixed:
            continue
        fixed[j] = D(rnd(c[j]))
        if len(fixed) < len(pw):
            c, _ = remez(g, w, a, b, pw, fixed)
    seq = [fixed[j] for j in range(len(pw))]
    seq_err = weighted_error(g, w, a, b, pw, seq)
    if seq_err < best_err:
        best, best_err = seq, seq_err
    return best, err0, best_err


# ---- the tables ----
# name: (precision, function g of the fitting variable, weight, interval, powers, what it is)

def exp_p(r):  # (e^r - 1 - r) / r^2
    return (r.exp() - 1 - r) / (r * r) if abs(r) > D("1e-30") else D(1) / 2


def exp_w(r):  # relative error of expm1 (hence of exp): r^2 / |expm1 r|
    return (r * r) / abs(r.exp() - 1) if abs(r) > D("1e-30") else abs(r)


def log_t(z):  # (2 atanh(s) - 2s) / s, z = s^2
    s = z.sqrt()
    return (2 * datanh(s) - 2 * s) / s


def tanh_p(z):  # (tanh x - x) / x^3, z = x^2
    x = z.sqrt()
    e = (2 * x).exp()
    t = (e - 1) / (e + 1)
    return (t - x) / (x * z) if z > D("1e-40") else D(-1) / 3


def tanh_w(z):
    x = z.sqrt()
    e = (2 * x).exp()
    t = (e - 1) / (e + 1)
    return z * x / t if z > D("1e-40") else z


def sin_s(z):
    x = z.sqrt()
    return (dsin(x) - x) / (x * z) if z > D("1e-40") else D(-1) / 6


def sin_w(z):
    x = z.sqrt()
    return z * x / dsin(x) if z > D("1e-40") else z


def cos_c(z):
    x = z.sqrt()
    return (dcos(x) - 1 + z / 2) / (z * z) if z > D("1e-30") else D(1) / 24


def cos_w(z):
    return z * z / dcos(z.sqrt())


def erf_p(z):  # erf(x) / x, z = x^2
    x = z.sqrt()
    return derf(x) / x if z > D("1e-40") else 2 / PI.sqrt()


def erfcx(a):  # erfc(a) e^(a^2)
    return derfc(a) * (a * a).exp()


LN2 = D(2).ln()
SQRT2 = D(2).sqrt()
S_MAX = (SQRT2 - 1) / (SQRT2 + 1)  # s = f / (2 + f) at f = sqrt(2) - 1
R_EXP = LN2 / 2 * D("1.0002")
R_TRIG = PI / 4 * D("1.0002")
TANH_SMALL = D("0.625")
ERF_SMALL = D("0.875")
ERF_ONE_F32 = D("3.925")  # erf(x) rounds to 1 from 3.9192 (f32), 5.9215 (f64)
ERF_ONE_F64 = D("5.93")
Z0 = D("1e-30")  # intervals in x^2 start here, where the weights vanish at 0


def tables():
    t = {}
    # exp, expm1 (and through them sigmoid, silu, softplus, tanh's large branch):
    # e^r = 1 + r + r^2 P(r) on |r| <= ln2/2
    t["exp_f32"] = ("f32", exp_p, exp_w, -R_EXP, R_EXP, range(5))
    t["exp_f64"] = ("f64", exp_p, exp_w, -R_EXP, R_EXP, range(10))
    # log, log1p: log1p(f) = f - s (f - T(s^2)), s = f / (2 + f), |s| <= 0.1716
    zl = S_MAX * S_MAX * D("1.01")
    t["log_f32"] = ("f32", log_t, lambda z: D(1), D("1e-9"), zl, range(1, 4))
    t["log_f64"] = ("f64", log_t, lambda z: D(1), D("1e-12"), zl, range(1, 8))
    # log1p(v) for v in [0, 1] without a reduction (softplus's f32 log1p(e^-|a|)): s = v /
    # (2 + v) <= 1/3, 2 atanh(s) = 2s + s T(s^2) on z <= 1/9
    for k in (3, 4, 5):
        t[f"log1pe{k}_f32"] = ("f32", log_t, lambda z: D(1), D("1e-9"), D(1) / 9 * D("1.001"), range(1, k + 1))
    # pow's log: the same with the z coefficient held at 2/3 (the code adds (2/3) s^3 as
    # a double-double)
    t["logdd_f64"] = ("f64", log_t, lambda z: D(1), D("1e-12"), zl, range(1, 9), {0: D(2) / 3})
    # tanh for |x| < 0.625: x + x^3 P(x^2)
    zt = TANH_SMALL * TANH_SMALL
    t["tanh_f32"] = ("f32", tanh_p, tanh_w, Z0, zt, range(5))
    t["tanh_f64"] = ("f64", tanh_p, tanh_w, Z0, zt, range(11))
    # sin r = r + r^3 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4
    zs = R_TRIG * R_TRIG
    t["sin_f32"] = ("f32", sin_s, sin_w, Z0, zs, range(4))
    t["sin_f64"] = ("f64", sin_s, sin_w, Z0, zs, range(7))
    t["cos_f32"] = ("f32", cos_c, cos_w, Z0, zs, range(4))
    t["sin_f32d"] = ("f64", sin_s, sin_w, Z0, zs, range(4))  # f32's, computed in f64
    t["cos_f32d"] = ("f64", cos_c, cos_w, Z0, zs, range(4))
    t["cos_f64"] = ("f64", cos_c, cos_w, Z0, zs, range(7))
    # erf for |x| < 0.875: x P(x^2)
    ze = ERF_SMALL * ERF_SMALL
    # (the constant held at 2/sqrt(pi): the code adds it as two parts)
    t["erf_f32"] = ("f32", erf_p, lambda z: 1 / erf_p(z), Z0, ze, range(6), {0: 2 / PI.sqrt()})
    t["erf_f64"] = ("f64", erf_p, lambda z: 1 / erf_p(z), Z0, ze, range(11), {0: 2 / PI.sqrt()})
    # erf for 0.875 <= |x| < (where it rounds to 1): 1 - exp(Q(|x| - 0.875)), Q fitted
    # to log(erfc) with erfc's weight (the absolute error of erf)
    t["erfq_f32"] = ("f32", lambda t: derfc(t + ERF_SMALL).ln(), lambda t: derfc(t + ERF_SMALL), D(0),
                     ERF_ONE_F32 - ERF_SMALL, range(8))
    t["erfq_f64"] = ("f64", lambda t: derfc(t + ERF_SMALL).ln(), lambda t: derfc(t + ERF_SMALL), D(0),
                     ERF_ONE_F64 - ERF_SMALL, range(18))
    return t


def erfc_g(wv):
    """a erfcx(a) at w = 1/a^2 (1/sqrt(pi) at w = 0): erfc(a) = e^(-a^2) / a * P(w)/Q(w)."""
    a = 1 / wv.sqrt()
    return derfc(a) * (a * a).exp() * a


# rational tables: name: (precision, g, weight, a, b, deg P, deg Q)
def rational_tables():
    t = {}
    w = lambda v: 1 / erfc_g(v)  # noqa: E731 (relative error)
    inv2 = lambda a: 1 / (D(a) * D(a))  # noqa: E731
    t["erfc_f32"] = ("f64", erfc_g, w, inv2("10.1"), inv2("0.875"), 4, 4)  # f32 computes it in f64
    t["erfc_f64a"] = ("f64", erfc_g, w, inv2("1.75"), inv2("0.875"), 7, 7)
    t["erfc_f64b"] = ("f64", erfc_g, w, inv2("4"), inv2("1.75"), 7, 7)
    t["erfc_f64c"] = ("f64", erfc_g, w, inv2("27.3"), inv2("4"), 7, 7)
    return t


def c_hex(v, prec):
    f = float(v)
    if prec == "f32":
        f = to_f32(f)
    return f.hex()


def main(names):
    t = tables()
    rt = rational_tables()
    for name in names or list(t) + list(rt):
        if name in rt:
            prec, g, w, a, b, n, m = rt[name]
            p, q, err = rational_remez(g, w, a, b, n, m)
            print(f"// {name}: [{float(a):.6g}, {float(b):.6g}], P/Q of degrees {n}/{m}, "
                  f"weighted error {float(err):.3g} (2^{float(err.ln() / LN2):.1f})")
            print(f"static const double {name.upper()}_P[] = {{{', '.join(c_hex(v, prec) for v in p)}}};")
            print(f"static const double {name.upper()}_Q[] = {{{', '.join(c_hex(v, prec) for v in q)}}};")
            sys.stdout.flush()
            continue
        prec, g, w, a, b, pw = t[name][:6]
        fixed = t[name][6] if len(t[name]) > 6 else None
        pw = list(pw)
        c, err, rerr = rounded_fit(g, w, a, b, pw, prec, fixed)
        print(f"// {name}: [{float(a):.6g}, {float(b):.6g}], powers {pw[0]}..{pw[-1]}, weighted error "
              f"{float(err):.3g} (2^{float(err.ln() / LN2):.1f}), rounded {float(rerr):.3g} "
              f"(2^{float(rerr.ln() / LN2):.1f})")
        body = ", ".join(c_hex(v, prec) for v in c)
        print(f"static const double {name.upper()}[] = {{{body}}};")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
