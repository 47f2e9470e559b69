"""bench/vecmath/halide_ulp.py — how accurate Halide 14's f32 math is, next to tdsl's bounds.

Computes Halide's exp, log, log(1 + x), exp(x) - 1, erf, pow, softplus and its fast_exp,
fast_log, fast_pow (JIT for the host, vectorized as bench/vector_math.py does) over a
dense f32 sweep of each function's domain (every STRIDE-th bit pattern, plus the bench's
own argument ranges densely), and prints the maximum error in ULPs of the f32 result
against an f64 reference (NumPy; erf: PyTorch's f64 erf where installed, else Python's
math.erf on a subsample), and what each returns for the special values (±0, ±inf, NaN,
the smallest subnormal, a negative argument). A reference, not a test: needs python3-halide.

Usage: /usr/bin/python3 bench/vecmath/halide_ulp.py [--stride 61]
"""
import argparse
import math
import sys

import numpy as np


def ulp_err(got, ref):
    """|got - ref| in ULPs of ref rounded to f32 (its spacing; the smallest subnormal below
    the normal range). got f32, ref f64. NaN where the reference is not finite."""
    with np.errstate(over="ignore"):
        r32 = ref.astype(np.float32)
    sp = np.spacing(np.abs(r32)).astype(np.float64)
    # at a power of two, ref just below it: the spacing below
    pow2 = np.abs(np.frexp(r32)[0]) == 0.5
    sp = np.where(pow2 & (np.abs(ref) < np.abs(r32.astype(np.float64))), sp / 2, sp)
    sp = np.maximum(sp, 2.0 ** -149)
    e = np.abs(got.astype(np.float64) - ref) / sp
    both_inf = np.isinf(got) & np.isinf(r32) & (np.sign(got) == np.sign(r32))
    e = np.where(both_inf, 0.0, e)
    e = np.where(np.isfinite(ref) | both_inf, e, np.nan)
    return e


def halide_fn(hl, expr, nargs):
    ps = [hl.ImageParam(hl.Float(32), 1, "a%d" % k) for k in range(nargs)]
    i = hl.Var("i")
    f = hl.Func("f")
    f[i] = expr(*[p[i] for p in ps])
    t = hl.get_host_target()
    vec = t.natural_vector_size(hl.Float(32))
    f.vectorize(i, 2 * vec)
    f.compile_jit(t)

    def run(*arrs):
        n = len(arrs[0])
        pad = (-n) % (2 * vec)
        bufs = [np.ascontiguousarray(np.concatenate([a, np.ones(pad, np.float32)])) for a in arrs]
        for p, b in zip(ps, bufs):
            p.set(hl.Buffer(b))
        out = np.empty(n + pad, np.float32)
        f.realize(hl.Buffer(out))
        return out[:n]
    return run


def sweep(lo_bits, hi_bits, stride):
    b = np.arange(lo_bits, hi_bits, stride, dtype=np.uint64).astype(np.uint32)
    return b.view(np.float32)


def erf64(x):
    try:
        import torch
        return torch.erf(torch.from_numpy(x.astype(np.float64))).numpy()
    except ImportError:
        return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stride", type=int, default=61)
    a = ap.parse_args()
    import halide as hl
    s = a.stride
    pos = sweep(1, 0x7F800000, s)                       # every positive finite float
    allf = np.concatenate([pos, -pos])
    sp_vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.4e-45, -1.0, 1.0], np.float32)
    softplus = lambda hl, z: hl.select(z > 20, z, hl.log(1 + hl.exp(hl.min(z, 20))))
    def np_softplus(z):
        z = z.astype(np.float64)
        return np.where(z > 20, z, np.log1p(np.exp(np.minimum(z, 20))))
    cases = [
        # name, Halide expr, domain, f64 reference, bench range
        ("exp", lambda x: hl.exp(x), allf[np.abs(allf) < 104], np.exp, np.linspace(-4, 4, 1 << 20, dtype=np.float32)),
        ("fast_exp", lambda x: hl.fast_exp(x), allf[np.abs(allf) < 88], np.exp, np.linspace(-4, 4, 1 << 20, dtype=np.float32)),
        ("log", lambda x: hl.log(x), pos, np.log, np.linspace(1, 3, 1 << 20, dtype=np.float32)),
        ("fast_log", lambda x: hl.fast_log(x), pos, np.log, np.linspace(1, 3, 1 << 20, dtype=np.float32)),
        ("log1p as log(1 + x)", lambda x: hl.log(1 + x), allf[allf > -1], np.log1p, np.linspace(0, 2, 1 << 20, dtype=np.float32)),
        ("expm1 as exp(x) - 1", lambda x: hl.exp(x) - 1, allf[np.abs(allf) < 88], np.expm1, np.linspace(-4, 4, 1 << 20, dtype=np.float32)),
        ("erf", lambda x: hl.erf(x), allf[np.abs(allf) < 5], erf64, np.linspace(-4, 4, 1 << 20, dtype=np.float32)),
        ("softplus", lambda x: softplus(hl, x), allf[np.abs(allf) < 100], np_softplus, np.linspace(-4, 4, 1 << 20, dtype=np.float32)),
        ("pow(x, 1.5)", lambda x: hl.pow(x, 1.5), pos[pos < 1e25], lambda v: np.power(v, 1.5), np.linspace(1, 3, 1 << 20, dtype=np.float32)),
        ("fast_pow(x, 1.5)", lambda x: hl.fast_pow(x, 1.5), pos[pos < 1e25], lambda v: np.power(v, 1.5), np.linspace(1, 3, 1 << 20, dtype=np.float32)),
    ]
    print("| Halide 14 f32 | max ULP, whole domain | normal x and result | bench range | at the normal max | 0 | -0 | inf | -inf | NaN | 2^-149 | -1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, ex, dom, ref, br in cases:
        f = halide_fn(hl, ex, 1)
        r = ref(dom.astype(np.float64))
        e = ulp_err(f(dom), r)
        nrm = (np.abs(dom) >= 2.0 ** -126) & (np.abs(r) >= 2.0 ** -126) & (np.abs(r) < 3.4e38)
        en = np.where(nrm, e, np.nan)
        k = int(np.nanargmax(en))
        eb = ulp_err(f(br), ref(br.astype(np.float64)))
        spv = f(sp_vals)
        print("| %s | %.3g | %.3g | %.3g | x=%.9g | %s |" % (name, np.nanmax(e), np.nanmax(en), np.nanmax(eb), dom[k],
              " | ".join("%g" % v for v in spv[:7])))
        sys.stdout.flush()
    # pow in both arguments: x in [1e-3, 1e3], y in [-8, 8]
    rng = np.random.default_rng(0)
    x = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), 1 << 22)).astype(np.float32)
    y = rng.uniform(-8, 8, 1 << 22).astype(np.float32)
    for name, ex in (("pow(x, y)", lambda u, v: hl.pow(u, v)), ("fast_pow(x, y)", lambda u, v: hl.fast_pow(u, v))):
        f = halide_fn(hl, ex, 2)
        r = np.power(x.astype(np.float64), y.astype(np.float64))
        e = ulp_err(f(x, y), r)
        e = e[np.abs(r) < 3e38]
        print("| %s, x in [1e-3, 1e3], y in [-8, 8] | %.3g | | | | |" % (name, np.nanmax(e)))


if __name__ == "__main__":
    main()
