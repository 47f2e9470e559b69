#!/usr/bin/python3
"""tests/run/test_cpu_math.py TDSLC: the CPU schedule's own arithmetic (ir/sched.c, ir/vecmath.c)
against NumPy in float64.

- f32 exp, sigmoid and silu (PyTorch's 1 / (1 + exp(-x)) and x / (1 + exp(-x)), whose
  exp overflows below x = -88.7) are computed by a polynomial, not libm: checked over a
  dense sweep of [-110, 95], the overflow and underflow thresholds, subnormal
  results, specials (nan, +-inf, +-0) and huge inputs. exp must be within 2 ulp of
  the float64 result rounded to f32 (subnormal results: within one subnormal step),
  and exact on specials; sigmoid and silu within 4 ulp.
- float reductions accumulate in lanes: sum, prod, amax, amin, mean and softmax
  over rows whose length is and is not a multiple of the lane count, rows of -0.0 (PyTorch
  sums them to +0.0), rows holding nan and inf.
- softmax alone (its max without NaN propagation, its one-sided exp): nan and inf at every
  position, rows of -inf, subnormal results.
- a * 2^k + c as one fma (ir/sched.c): NumPy's bits at the overflow edge, for zeros,
  subnormals, inf and nan, f32 and f64.
- streaming stores: large write-only results are marked and keep their values (rows of
  any length); an accumulated result (matmul) is not marked; the size they start from
  (from the last-level cache, or TDSL_STREAM_MIN).

Runs on the backend named by TDSL_BACKEND (see oracle.require_backend).
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, run_outputs  # noqa: E402

F32 = np.float32
T = Tally()


def run(tdslc, backend, src, inputs):
    """Runs fn f of src with inputs {name: f32 array}; returns the outputs (out0.npy...)."""
    p, outs = run_outputs(tdslc, src, inputs, backend=backend)
    if p.returncode != 0:
        sys.exit(f"FAIL: tdslc exit {p.returncode}\n{p.stderr.decode(errors='replace')}")
    return outs


def ulp_error(got, want64):
    """|got - want| in ulps of the f32 result want64 rounds to (subnormals: steps of 2^-149)."""
    want = want64.astype(F32)
    spacing = np.maximum(np.spacing(np.abs(want)), np.float32(2.0**-149))
    return np.abs(got.astype(np.float64) - want64) / spacing.astype(np.float64)


def check_ulp(name, got, want64, max_ulp):
    """got within max_ulp of want64 rounded to f32, and exact where that is 0, inf or nan."""
    got = np.asarray(got).reshape(-1)
    want64 = np.asarray(want64, dtype=np.float64).reshape(-1)
    want = want64.astype(F32)
    special = ~np.isfinite(want) | (want == 0)
    bad = special & ~((got == want) | (np.isnan(got) & np.isnan(want)))
    err = np.where(special, 0, ulp_error(got, want64))
    bad |= err > max_ulp
    worst = float(err[np.isfinite(err)].max()) if err.size else 0.0
    errs = []
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        errs.append(f"{int(bad.sum())} values off, e.g. index {i}: got {got[i]!r}, want {want[i]!r} "
                    f"({err[i]:.2f} ulp)")
    T.report(f"{name}: {got.size} values, worst {worst:.2f} ulp", errs)


def sweep():
    edges = [88.72283, 88.722832, 88.7228394, 88.72284, 88.8, 89.0, -87.33654, -87.336548, -103.972, -103.97208,
             -103.9721, -104.0, -110.0, 1e-8, -1e-8, 0.5 * np.log(2), -0.5 * np.log(2), 1e30, -1e30,
             np.finfo(F32).max, -np.finfo(F32).max, 1e-45, -1e-45]
    x = np.concatenate([np.linspace(-110, 95, 400_000, dtype=F32), np.array(edges, dtype=F32),
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=F32)])
    with np.errstate(over="ignore"):
        x = np.concatenate([x, np.nextafter(np.array(edges, dtype=F32), F32(np.inf))])
    return np.concatenate([x, np.zeros((-x.size) % 64, dtype=F32)])


def softmax_alone(tdslc, backend):
    """softmax on its own: its row max needs no NaN propagation (a NaN makes the sum NaN), so
    the schedule uses a plain max and an exp for arguments <= 0 (a row of 16 or fewer is
    unrolled instead, its max one vector maximum). NaN at every lane position
    and in the remainder, +-inf, rows of -inf and subnormal results against NumPy."""
    rng = np.random.default_rng(11)
    for cols in (16, 37, 100):
        rows = 4 + 2 * cols
        a = rng.uniform(-5, 5, size=(rows, cols)).astype(F32)
        for j in range(cols):
            a[4 + j, j] = np.nan  # a nan at each position, then an inf at each
            a[4 + cols + j, j] = np.inf
        a[0, :] = -np.inf
        a[1, 0] = 0
        a[1, 1:] = -100  # exp(-100): subnormal results
        a[2, :] = -np.inf
        a[2, cols - 1] = 3  # one finite value: 1 there, 0 elsewhere
        a[3, :] = 1e30
        src = f"fn f(x: f32[{rows}, {cols}]) -> f32[{rows}, {cols}] {{\n    return softmax(x, -1)\n}}\n"
        k = emit_text(tdslc, src, "kernels")
        if cols <= 16:  # a short row, unrolled (ir/row.c's SHORT_ROW): its max one vector maximum, of
            # the row in place or of its column in the transposed block of rows (row.c's BLOCK)
            T.check(f"softmax [{rows}, {cols}]: --emit=kernels shows the row unrolled",
                    re.search(r"maximum\(l0, b\d+\[[^\]]*\{0(\.\.|, )", k.stdout) is not None, k.stdout)
        else:
            T.check(f"softmax [{rows}, {cols}]: --emit=kernels shows a plain max",
                    not ("maximum(" in k.stdout or " > " not in k.stdout), k.stdout)
        out = run(tdslc, backend, src, {"x": a})[0]
        a64 = a.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            ex = np.exp(a64 - a64.max(axis=1, keepdims=True))
            want = ex / ex.sum(axis=1, keepdims=True)
        fin = ~np.isnan(want).any(axis=1)
        check_ulp(f"softmax alone [{rows}, {cols}] (rows without nan)", out[fin], want[fin], 8)
        T.check(f"softmax alone [{rows}, {cols}]: rows with nan or +inf (or all -inf) are nan",
                np.isnan(out[~fin]).all())


def kernels_text(tdslc, src, emit="kernels"):
    k = emit_text(tdslc, src, emit)
    if k.returncode != 0:
        sys.exit(f"FAIL: --emit={emit}: {k.stderr}")
    return k.stdout


def llc_bytes():
    """The last-level cache of this machine as Linux's sysfs lists cpu0's caches (the
    highest level), or None where it does not."""
    best = (0, None)
    base = "/sys/devices/system/cpu/cpu0/cache"
    for i in range(8):
        try:
            with open(f"{base}/index{i}/level") as f:
                level = int(f.read())
            with open(f"{base}/index{i}/size") as f:
                v = f.read().strip()
        except (OSError, ValueError):
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(v[-1:], 1)
        size = int(v.rstrip("KMG") or 0) * mult
        if size > 0 and level > best[0]:
            best = (level, size)
    return best[1]


def streaming_size(tdslc):
    """Which results stream: 8 MiB or more, written by a row kernel or by a kernel whose
    buffers exceed 1.5 last-level caches (smaller ones are faster written plainly,
    ir/sched.c; the cache as it counts it, at most 32 MiB per CPU), or TDSL_STREAM_MIN bytes or more. The knob is checked both ways on one
    2 MiB result; without it (where sysfs tells the cache's size), x * 2 of half the cache
    and an outer sum of the whole cache are not streamed, x * 2 of the whole cache, an
    outer sum of twice it and x minus its row means (a row kernel) of half the cache are."""
    def ew(rows):
        return f"fn f(x: f32[{rows}, 1024]) -> f32[{rows}, 1024] {{\n    return x * 2\n}}\n"

    def outer(rows):
        return f"fn f(a: f32[{rows}, 1], b: f32[1, 1024]) -> f32[{rows}, 1024] {{\n    return a + b\n}}\n"

    def centered(rows):  # a row kernel: the row's mean, then the row again
        return (f"fn f(x: f32[{rows}, 1024]) -> f32[{rows}, 1024] {{\n"
                "    return x - x.mean(-1, keepdim=true)\n}\n")

    env = dict(os.environ)
    try:
        for knob, streams in ((str(2 << 20), True), (str((2 << 20) + 1), False), ("0", False), ("junk", False)):
            os.environ["TDSL_STREAM_MIN"] = knob
            T.check(f"TDSL_STREAM_MIN={knob}: a 2 MiB result {'streams' if streams else 'does not stream'}",
                    ("stream)" in kernels_text(tdslc, ew(512))) == streams)
        os.environ.pop("TDSL_STREAM_MIN", None)
        llc = llc_bytes()
        if llc:  # the cache ir/sched.c's usable_llc counts: at most 32 MiB per online CPU (at least 32 MiB)
            llc = min(llc, max(32 << 20, (os.sysconf("SC_NPROCESSORS_ONLN") or 1) * (32 << 20)))
        if llc and llc >= 16 << 20:
            rows = llc // (1024 * 4)  # a result of the whole cache
            for what, src, streams in (("x * 2, half the cache", ew(rows // 2), False),
                                       ("x * 2, the whole cache", ew(rows), True),
                                       ("an outer sum, the whole cache", outer(rows), False),
                                       ("an outer sum, twice the cache", outer(2 * rows), True),
                                       ("x - its row means (a row kernel), half the cache", centered(rows // 2), True),
                                       ("x - its row means, 4 MiB (under 8 MiB)", centered(1024), False)):
                T.check(f"{what} ({llc >> 20} MiB): {'streamed' if streams else 'not streamed'}",
                        ("stream)" in kernels_text(tdslc, src)) == streams)
    finally:
        os.environ.clear()
        os.environ.update(env)


def streaming(tdslc, backend):
    """Results of TDSL_STREAM_MIN bytes or more (8 MiB here; without it the rule follows
    the last-level cache, streaming_size) that no kernel reads back are marked `stream` (LLVM
    stores them non-temporally where it proves a vector store aligned); the values must not
    change, whatever the row length. A matmul's result does not stream: since the GEMM's
    tiles are one shared micro-kernel function (ir/gemm.c), its stores are that function's,
    which no kernel's stream marking reaches (a gap, bench/GAPS.md)."""
    streaming_size(tdslc)
    os.environ["TDSL_STREAM_MIN"] = str(8 << 20)  # the cases below stream at 8 MiB
    rng = np.random.default_rng(5)
    cases = [  # (source, inputs, NumPy's result, streams)
        ("fn f(x: f32[2048, 1024]) -> f32[1024, 2048] {\n    return x.t().contiguous()\n}\n",
         {"x": rng.standard_normal((2048, 1024)).astype(F32)}, lambda x: x.T, True),
        ("fn f(x: f32[2048, 1031]) -> f32[2048, 1031] {\n    return relu(x) + 1\n}\n",
         {"x": rng.standard_normal((2048, 1031)).astype(F32)}, lambda x: np.maximum(x, 0) + 1, True),
        ("fn f(a: f64[1024, 1], b: f64[1, 1024]) -> f64[1024, 1024] {\n    return a + b\n}\n",
         {"a": rng.standard_normal((1024, 1)), "b": rng.standard_normal((1, 1024))}, lambda a, b: a + b, True),
        ("fn f(a: f32[2048, 64], b: f32[64, 1024]) -> f32[2048, 1024] {\n    return a @ b\n}\n",
         {"a": rng.standard_normal((2048, 64)).astype(F32), "b": rng.standard_normal((64, 1024)).astype(F32)},
         lambda a, b: a.astype(np.float64) @ b.astype(np.float64), False),
    ]
    for src, inputs, want_fn, streams in cases:
        head = src.split("{")[0]
        text = kernels_text(tdslc, src)
        T.check(f"streaming {head}: --emit=kernels {'shows' if streams else 'does not show'} a stream",
                ("stream)" in text) == streams, text)
        if streams and backend in (None, "llvm") and "x.t()" in src:
            ir = kernels_text(tdslc, src, "llvm")
            T.check(f"streaming {head}: --emit=llvm has a !nontemporal store and a fence after it",
                    "!nontemporal" in ir and "fence seq_cst" in ir)
        got = run(tdslc, backend, src, inputs)[0]
        want = want_fn(*inputs.values())
        T.check(f"streaming {head}: values match NumPy",
                got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-4))
    del os.environ["TDSL_STREAM_MIN"]


def scale_adds(tdslc, backend):
    """a * 2^k + c with a constant c is one fused multiply-add where the CPU has FMA, for
    the LLVM backend (ir/sched.c's fold_scale_add; --emit=kernels shows LLVM's kernels): the same bits as NumPy's two roundings for every a,
    at the overflow edge too (a * 2 = 2^128 plus c of -2^100 still overflows; c of
    -2^105 would not, so that one must stay two operations), for zeros, subnormals,
    inf and nan, in f32 and f64; and --emit=kernels shows the fma."""
    src = ("fn f(x: f32[64], d: f64[64]) -> (f32[64], f32[64], f32[64], f32[64], f32[64], f64[64], f64[64]) {\n"
           "  return x * 2 + 1, x * -4 - 3, 5 - 8 * x, x * 2 - 1.2676506002282294e+30, "
           "x * 2 - 4.056481920730334e+31, d * 2 + 1, d * 4 - 9.7453140114e+288\n}")
    ks = kernels_text(tdslc, src)
    T.check("scale_adds: x * 2 + 1 is one fma where the CPU has one (the LLVM backend's kernels)",
            "fma(" in ks or not re.search(r"\bfma\b", open("/proc/cpuinfo").read()), ks[-800:])
    edge = [0.0, -0.0, 1.0, -1.0, 2.0 ** 127, -(2.0 ** 127), 2.0 ** 126, 3.4028235e38, -3.4028235e38, 1.7e38,
            1.7014118e38, 1e-45, -1e-45, 1.1754944e-38, np.inf, -np.inf, np.nan, 0.5, -0.5, 0.25, 6.338253e29,
            -6.338253e29, 1e30, -1e30]
    rng = np.random.default_rng(5)
    x = np.concatenate([np.array(edge, F32), (rng.standard_normal(64 - len(edge)) * 1e3).astype(F32)])
    d = np.concatenate([np.array([0.0, -0.0, 2.0 ** 1023, -(2.0 ** 1023), 1.7976931348623157e308, 5e-324,
                                  np.inf, np.nan, 2.0 ** 1022]), rng.standard_normal(55) * 1e5])
    outs = run(tdslc, backend, src, {"x": x, "d": d})
    with np.errstate(over="ignore", invalid="ignore"):
        wants = [x * F32(2) + F32(1), x * F32(-4) - F32(3), F32(5) - F32(8) * x,
                 x * F32(2) - F32(2.0 ** 100), x * F32(2) - F32(2.0 ** 105),
                 d * 2.0 + 1.0, d * 4.0 - 2.0 ** 960]
    for k, (want, got) in enumerate(zip(wants, outs)):
        same = got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))
        bad = [] if same else [(float(a), float(g), float(w)) for a, g, w in
                               zip(x if k < 5 else d, got, want) if g.tobytes() != w.tobytes()][:4]
        T.check(f"scale_adds out{k}: NumPy's bits", same, f"(a, got, want): {bad}")


def main():
    tdslc = sys.argv[1]
    backend = require_backend(tdslc)
    x = sweep()
    n = x.size
    src = (f"fn f(x: f32[{n}]) -> (f32[{n}], f32[{n}], f32[{n}]) {{\n"
           "    return x.exp(), sigmoid(x), silu(x)\n}\n")
    # the polynomial is what runs: no exp call is left in the scheduled kernels
    k = emit_text(tdslc, src, "kernels")
    if k.returncode != 0 or "exp(" in k.stdout or "sigmoid(" in k.stdout or "bits_f32(" not in k.stdout:
        sys.exit(f"FAIL: --emit=kernels should show exp as a polynomial:\n{k.stdout}{k.stderr}")
    e, s, si = run(tdslc, backend, src, {"x": x})
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        check_ulp("exp", e, np.exp(x64), 2)
        # PyTorch's formulas: exp(-x) overflows to inf in f32 below x = -88.7 (the result is 0)
        den = 1 + np.exp(-x64).astype(F32).astype(np.float64)
        check_ulp("sigmoid", s, 1 / den, 4)
        check_ulp("silu", si, x64 / den, 4)

    # reductions in lanes: row lengths around the lane counts (16 f32, 8 f64)
    rng = np.random.default_rng(7)
    for cols in (31, 32, 33, 47, 100, 1000):
        a = rng.uniform(-3, 3, size=(6, cols)).astype(F32)
        a[1, :] = -0.0
        a[2, cols // 2] = np.nan
        a[3, 3] = np.inf
        a[4, :] = rng.uniform(0.9, 1.1, size=cols).astype(F32)
        src = (f"fn f(x: f32[6, {cols}]) -> (f32[6], f32[6], f32[6], f32[6], f32[6], f32[6, {cols}], f64[6]) {{\n"
               "    return x.sum(-1), x.prod(-1), x.amax(-1), x.amin(-1), x.mean(-1), softmax(x, -1), "
               "x.to(f64).sum(-1)\n}\n")
        outs = run(tdslc, backend, src, {"x": a})
        a64 = a.astype(np.float64)
        tag = f"[6, {cols}]"
        # a sum's rounding grows with its length: allow ~cols ulps of the largest term
        scale = np.abs(a64).max(axis=1) * cols * 2.0**-23
        with np.errstate(invalid="ignore"):
            want = a64.sum(axis=1)
            ok = (np.abs(outs[0] - want) <= scale) | (np.isnan(outs[0]) & np.isnan(want)) | (outs[0] == want)
            T.check(f"sum {tag}", ok.all(), f"got {outs[0]}, want {want}")
            # PyTorch: a row of -0.0 sums to +0.0
            T.check(f"sum {tag}: a row of -0.0 gives +0.0", outs[0][1] == 0 and not np.signbit(outs[0][1]),
                    repr(outs[0][1]))
            check_ulp(f"prod {tag} (rows 4)", outs[1][4:5], np.prod(a64[4:5], axis=1), 4 + cols / 4)
            check_ulp(f"amax {tag}", outs[2], a64.max(axis=1), 0)
            check_ulp(f"amin {tag}", outs[3], a64.min(axis=1), 0)
            wmean = a64.mean(axis=1)
            ok = (np.abs(outs[4] - wmean) <= scale / cols + 1e-6) | (np.isnan(outs[4]) & np.isnan(wmean))
            ok |= outs[4] == wmean
            T.check(f"mean {tag}", ok.all(), f"got {outs[4]}, want {wmean}")
            ex = np.exp(a64 - a64.max(axis=1, keepdims=True))
            sm = ex / ex.sum(axis=1, keepdims=True)
            fin = np.isfinite(a64).all(axis=1)
            # f32's x - max rounds by up to 2^-22 at |x - max| ~ 6 (exp's argument: up to 3 ulp
            # of the term), then exp, the sum and the reciprocal: about 9 ulp at worst
            check_ulp(f"softmax {tag} (finite rows)", outs[5][fin], sm[fin], 10)
            T.check(f"softmax {tag}: rows with nan/inf are nan", np.isnan(outs[5][~fin]).all())
            want = a64.sum(axis=1)
            ok = (np.abs(outs[6] - want) <= 1e-12 * cols) | (np.isnan(outs[6]) & np.isnan(want)) | (outs[6] == want)
            T.check(f"f64 sum {tag}", ok.all(), f"got {outs[6]}, want {want}")
    softmax_alone(tdslc, backend)
    scale_adds(tdslc, backend)
    streaming(tdslc, backend)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
