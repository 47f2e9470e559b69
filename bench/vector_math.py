"""bench/vector_math.py — the vector-math table of bench/run.py (`make bench`).

One row per math function: the expression each implementation computes on the same 2^20
f32 inputs (bench/vector_math.tdsl has tdsl's, one function each), NumPy's, PyTorch's and
Halide's spelling of it, and an f64 reference for the checks. The table gives each one's
GB/s: (input + output bytes) / time, with the data in the last-level cache. NumPy has no
erf (SciPy is not used), so its erf and exact-GELU cells are n/a; Halide 14 has no log1p
or expm1, so its cells compute log(1 + x) and exp(x) - 1 (marked). Halide's version of a
function is one vectorized, parallel loop (its hand schedule; autoschedulers add nothing
to a single elementwise stage), realized into a preallocated output.
"""
import math

N = 1 << 20
SQRT_2_PI = math.sqrt(2 / math.pi)


def _np_softplus(np, z):  # PyTorch's: z above the threshold 20, log1p(exp(z)) below
    return np.where(z > 20, z, np.log1p(np.exp(np.minimum(z, 20))))


def _hl_softplus(hl, z):
    return hl.select(z > 20, z, hl.log(1 + hl.exp(hl.min(z, 20))))


def erf64(np, z):
    return np.vectorize(math.erf, otypes=[np.float64])(z)


# name, formula, NumPy (None: n/a), PyTorch, Halide (hl, x) -> Expr, Halide note, f64 reference
VECMATH = [
    ("exp", "exp(4x)", lambda np, x: np.exp(x * 4), lambda t, F, x: t.exp(x * 4),
     lambda hl, x: hl.exp(x * 4), "", lambda np, x: np.exp(x * 4)),
    ("log", "log(x + 2)", lambda np, x: np.log(x + 2), lambda t, F, x: t.log(x + 2),
     lambda hl, x: hl.log(x + 2), "", lambda np, x: np.log(x + 2)),
    ("log1p", "log1p(x + 1)", lambda np, x: np.log1p(x + 1), lambda t, F, x: t.log1p(x + 1),
     lambda hl, x: hl.log(1 + (x + 1)), "log(1 + y)", lambda np, x: np.log1p(x + 1)),
    ("expm1", "expm1(4x)", lambda np, x: np.expm1(x * 4), lambda t, F, x: t.expm1(x * 4),
     lambda hl, x: hl.exp(x * 4) - 1, "exp(y) - 1", lambda np, x: np.expm1(x * 4)),
    ("tanh", "tanh(4x)", lambda np, x: np.tanh(x * 4), lambda t, F, x: t.tanh(x * 4),
     lambda hl, x: hl.tanh(x * 4), "", lambda np, x: np.tanh(x * 4)),
    ("erf", "erf(4x)", None, lambda t, F, x: t.erf(x * 4),
     lambda hl, x: hl.erf(x * 4), "", lambda np, x: erf64(np, x * 4)),
    ("sigmoid", "sigmoid(4x)", lambda np, x: 1 / (1 + np.exp(-(x * 4))), lambda t, F, x: t.sigmoid(x * 4),
     lambda hl, x: 1 / (1 + hl.exp(-(x * 4))), "", lambda np, x: 1 / (1 + np.exp(-(x * 4)))),
    ("gelu", "gelu(4x), erf form", None, lambda t, F, x: F.gelu(x * 4),
     lambda hl, x: 0.5 * (x * 4) * (1 + hl.erf((x * 4) * (1 / math.sqrt(2)))), "",
     lambda np, x: 0.5 * (x * 4) * (1 + erf64(np, x * 4 / math.sqrt(2)))),
    ("gelu_tanh", "gelu(4x, approximate='tanh')",
     lambda np, x: 0.5 * (x * 4) * (1 + np.tanh(SQRT_2_PI * ((x * 4) + 0.044715 * (x * 4) ** 3))),
     lambda t, F, x: F.gelu(x * 4, approximate="tanh"),
     lambda hl, x: 0.5 * (x * 4) * (1 + hl.tanh(SQRT_2_PI * ((x * 4) + 0.044715 * (x * 4) * (x * 4) * (x * 4)))), "",
     lambda np, x: 0.5 * (x * 4) * (1 + np.tanh(SQRT_2_PI * ((x * 4) + 0.044715 * (x * 4) ** 3)))),
    ("silu", "silu(4x)", lambda np, x: (x * 4) / (1 + np.exp(-(x * 4))), lambda t, F, x: F.silu(x * 4),
     lambda hl, x: (x * 4) / (1 + hl.exp(-(x * 4))), "", lambda np, x: (x * 4) / (1 + np.exp(-(x * 4)))),
    ("softplus", "softplus(4x)", lambda np, x: _np_softplus(np, x * 4), lambda t, F, x: F.softplus(x * 4),
     lambda hl, x: _hl_softplus(hl, x * 4), "", lambda np, x: _np_softplus(np, x * 4)),
    ("mish", "mish(4x)", lambda np, x: (x * 4) * np.tanh(_np_softplus(np, x * 4)), lambda t, F, x: F.mish(x * 4),
     lambda hl, x: (x * 4) * hl.tanh(_hl_softplus(hl, x * 4)), "",
     lambda np, x: (x * 4) * np.tanh(_np_softplus(np, x * 4))),
    ("sin", "sin(8x)", lambda np, x: np.sin(x * 8), lambda t, F, x: t.sin(x * 8),
     lambda hl, x: hl.sin(x * 8), "", lambda np, x: np.sin(x * 8)),
    ("cos", "cos(8x)", lambda np, x: np.cos(x * 8), lambda t, F, x: t.cos(x * 8),
     lambda hl, x: hl.cos(x * 8), "", lambda np, x: np.cos(x * 8)),
    ("pow", "pow(x + 2, 1.5)", lambda np, x: np.power(x + 2, np.float32(1.5)), lambda t, F, x: t.pow(x + 2, 1.5),
     lambda hl, x: hl.pow(x + 2, 1.5), "", lambda np, x: np.power(x + 2, 1.5)),
    ("sqrt", "sqrt(x + 2)", lambda np, x: np.sqrt(x + 2), lambda t, F, x: t.sqrt(x + 2),
     lambda hl, x: hl.sqrt(x + 2), "", lambda np, x: np.sqrt(x + 2)),
    ("rsqrt", "rsqrt(x + 2)", lambda np, x: 1 / np.sqrt(x + 2), lambda t, F, x: t.rsqrt(x + 2),
     lambda hl, x: 1 / hl.sqrt(x + 2), "", lambda np, x: 1 / np.sqrt(x + 2)),
]
NAMES = [v[0] for v in VECMATH]
BYTES = 2 * N * 4  # each element read once and written once
REPS = 30  # timed calls; the warm-up is tdslc bench's (halide_work.warmup_for)


def row(name):
    return next(v for v in VECMATH if v[0] == name)


def inputs(np):
    """The input NumPy and PyTorch time on: uniform in [-1, 1), f32, seeded."""
    return (np.random.default_rng(0).random(N, dtype=np.float64) * 2 - 1).astype(np.float32)


def halide_worker(names, threads, scale, rounds):
    """Halide's version of each function: compiled, checked against the f64 reference
    (max |error| / max |reference| <= 1e-4), timed `rounds` times (best median). Returns
    {name: result}."""
    import statistics
    import time
    import numpy as np
    import halide as hl
    t = hl.get_host_target()
    x = inputs(np)
    out = {}
    vec = t.natural_vector_size(hl.Float(32))
    for name in names:
        v = row(name)
        r = {}
        try:
            inp = hl.ImageParam(hl.Float(32), 1, "x")
            i = hl.Var("i")
            f = hl.Func("f_" + name)
            f[i] = v[4](hl, inp[i])
            f.vectorize(i, 2 * vec).parallel(i, 16384)  # contiguous chunks of 64 KiB per task
            f.compile_jit(t)
            from halide_work import aligned, warmup_for
            xa = aligned(np, x)  # 64-byte aligned, as tdsl's storages (Halide 14 faults otherwise)
            inp.set(hl.Buffer(xa))
            o = aligned(np, (N,))
            ob = hl.Buffer(o)
            f.realize(ob)
            ref = v[6](np, x.astype(np.float64))
            err = float(np.abs(o - ref).max() / max(np.abs(ref).max(), 1e-30))
            r.update(err_rel=err, ok=bool(math.isfinite(err) and err <= 1e-4), note=v[5])
            if r["ok"]:
                reps = max(3, int(round(REPS * scale)))
                for rnd in range(rounds):
                    for _ in range(warmup_for(reps) if rnd == 0 else 1):
                        f.realize(ob)
                    ts = []
                    for _ in range(reps):
                        t0 = time.perf_counter()
                        f.realize(ob)
                        ts.append((time.perf_counter() - t0) * 1e3)
                    m = statistics.median(ts)
                    if "median_ms" not in r or m < r["median_ms"]:
                        r.update(median_ms=m, min_ms=min(ts), max_ms=max(ts), reps=reps)
        except Exception as e:
            msg = str(e).strip()
            r["error"] = msg.splitlines()[-1][:300] if msg else type(e).__name__
        out[name] = r
    return out
