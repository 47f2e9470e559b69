"""bench/halide_work.py — Halide 14 versions of bench/run.py's workloads (`make bench`).

Each workload is written once as a Halide algorithm (x is NumPy's last axis, as Halide's
dim 0 is the innermost), then scheduled two ways on a fresh copy of its Funcs:
  - by hand, in the style of Halide's own apps (apps/linear_algebra, apps/hannk,
    test/performance/matrix_multiplication.cpp): the output tiled and vectorized at the
    natural vector width, its outer loop parallel, producers computed at the tile or row
    that needs them, reductions vectorized with atomic() or split across threads with
    rfactor;
  - by each of Halide's three autoschedulers, loaded as plugins (Adams2019, Mullapudi2016,
    Li2018), given the estimates of every input and output and this machine's
    parallelism and last-level cache.
Every variant is compiled for the host (hl.get_host_target()), checked against NumPy in
f64 (max |error| / max |reference| <= 1e-4) and timed; the workload's Halide result is
the fastest variant that passed. Halide realizes into a preallocated output, as Halide's
own benchmarks do (no allocation, no page faults in the timed call), and uses
HL_NUM_THREADS threads (the harness sets it to --threads).

Fair to both sides (bench/README.md, "Halide"): every buffer Halide reads or writes lies
in memory like tdsl's storages (runtime/storage.c): 64 MiB of output in 2 MiB-aligned,
MADV_HUGEPAGE-marked anonymous pages, so that neither side pays TLB misses the other does
not; the same block is written in every call, as tdsl's storage cache hands its result
the same block back; and the calls are warmed up and counted by `tdslc bench`'s rule
(warmup_for: a tenth of the timed calls, at least TDSL_STREAM_SETTLE of runtime/tdsl.h,
the calls a tdsl kernel with a streamed result makes before it chooses its store form).

one(name, variant, inputs, ...) compiles, checks and times one variant in this process
(bench/run.py runs each in a process of its own: a crash in Halide's generated code, which
Halide 14 has in a few schedules, costs that variant only); best_of() picks the fastest.
WORKS maps a workload to (algorithm, hand schedule, NumPy reference[, input reshape]).
"""
import math
import os
import re
import statistics
import time

PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu/halide14"
AUTOSCHEDULERS = ("Adams2019", "Mullapudi2016", "Li2018")
PLUGINS = {"Adams2019": "libautoschedule_adams2019.so", "Mullapudi2016": "libautoschedule_mullapudi2016.so",
           "Li2018": "libautoschedule_li2018.so"}
CHECK_TOL = 1e-4


def _gelu_np(np, y):
    erf = np.vectorize(math.erf, otypes=[np.float64])  # NumPy has no erf; the check only
    return 0.5 * y * (1 + erf(y / math.sqrt(2)))       # (a reference in f64, not timed)


# ---------------------------------------------------------------------------------------
# The algorithms. build(hl, P) gets one ImageParam per input (P[i], NumPy's shape
# reversed) and returns (output Func, {name: Func} for the hand schedule, the output's
# NumPy shape). hand(hl, t, out, f) schedules them. ref(np, *inputs) is the f64 answer.
# ---------------------------------------------------------------------------------------
N4K = 4096


def b_elementwise(hl, P):
    x, y = hl.Var("x"), hl.Var("y")
    out = hl.Func("out")
    v = P[0][x, y]
    out[x, y] = hl.max(v * 2 + 1, 0) * (1 / (1 + hl.exp(-v)))
    return out, {}, (N4K, N4K)


def h_elementwise(hl, t, out, f):  # apps' point-wise stages: vectorize x, parallel rows
    x, y = out.args()
    vec = t.natural_vector_size(hl.Float(32))
    out.vectorize(x, 2 * vec).parallel(y, 16)


def b_transpose(hl, P):
    x, y = hl.Var("x"), hl.Var("y")
    inp, out = hl.Func("inp"), hl.Func("out")
    inp[x, y] = P[0][x, y]
    out[x, y] = inp[y, x]
    return out, {"in": inp}, (N4K, N4K)


def h_transpose(hl, t, out, f):
    # block_transpose: square tiles of the vector width, the input's block loaded in dense
    # order into registers (in() at the tile) and shuffled; rows of tiles in parallel
    x, y = out.args()
    vec = t.natural_vector_size(hl.Float(32))
    b = min(vec, 16)
    xi, yi, yo = hl.Var("xi"), hl.Var("yi"), hl.Var("yo")
    out.tile(x, y, xi, yi, b, b).vectorize(xi).unroll(yi).split(y, yo, y, 4).parallel(yo)
    blk = f["in"]
    blk.compute_at(out, x).vectorize(blk.args()[0]).unroll(blk.args()[1])


def b_broadcast_add(hl, P):
    x, y = hl.Var("x"), hl.Var("y")
    out = hl.Func("out")
    out[x, y] = P[0][y] + P[1][x]  # a [4096, 1] and b [1, 4096], their size-1 dims dropped
    return out, {}, (N4K, N4K)


def b_column_sum(hl, P):
    x = hl.Var("x")
    r = hl.RDom([hl.Range(0, N4K)])
    out = hl.Func("out")
    out[x] = 0.0
    out[x] = out[x] + P[0][x, r.x]
    return out, {"r": r}, (N4K,)


def h_column_sum(hl, t, out, f):
    # the rows split across threads with rfactor: each task sums a block of rows into its
    # own vector of column sums, then the blocks' sums are added
    x = out.args()[0]
    vec = t.natural_vector_size(hl.Float(32))
    ro, ri, u = hl.RVar("ro"), hl.RVar("ri"), hl.Var("u")
    out.update().split(hl.RVar(f["r"].x.name()), ro, ri, 256)
    part = out.update().rfactor([(ro, u)])
    part.compute_root().vectorize(x, 4 * vec).parallel(u)
    part.update(0).reorder([hl.VarOrRVar(v) for v in (x, ri, u)]).vectorize(x, 4 * vec).parallel(u)
    out.vectorize(x, 4 * vec)
    out.update().vectorize(x, 4 * vec)


def _row_softmax(hl, P, rows, n):
    x, y = hl.Var("x"), hl.Var("y")
    r = hl.RDom([hl.Range(0, n)])
    mx, e, s, out = hl.Func("mx"), hl.Func("e"), hl.Func("s"), hl.Func("out")
    mx[y] = hl.Float(32).min()
    mx[y] = hl.max(mx[y], P[0][r.x, y])
    e[x, y] = hl.exp(P[0][x, y] - mx[y])
    s[y] = 0.0
    s[y] = s[y] + e[r.x, y]
    out[x, y] = e[x, y] * (1 / s[y])
    return out, {"mx": mx, "e": e, "s": s, "r": r}, (rows, n)


def b_softmax(hl, P):
    return _row_softmax(hl, P, 256, 4096)


def h_softmax(hl, t, out, f):
    # hannk's Softmax: per row (parallel), the max and the sum as atomic vectorized
    # reductions at the row, the exps stored at the row and reused
    x, y = out.args()
    vec = t.natural_vector_size(hl.Float(32))
    out.parallel(y).vectorize(x, 2 * vec)
    rx = hl.RVar(f["r"].x.name())
    f["mx"].compute_at(out, y).update().atomic().vectorize(rx, 2 * vec)
    f["e"].compute_at(out, y).vectorize(f["e"].args()[0], 2 * vec)
    f["s"].compute_at(out, y).update().atomic().vectorize(rx, 2 * vec)


def b_layer_norm(hl, P):
    x, y = hl.Var("x"), hl.Var("y")
    n = 512
    r = hl.RDom([hl.Range(0, n)])
    sm, m, sq, v, out = hl.Func("sm"), hl.Func("m"), hl.Func("sq"), hl.Func("v"), hl.Func("out")
    sm[y] = 0.0
    sm[y] = sm[y] + P[0][r.x, y]
    m[y] = sm[y] / n
    sq[y] = 0.0
    d = P[0][r.x, y] - m[y]
    sq[y] = sq[y] + d * d
    v[y] = sq[y] / n
    out[x, y] = (P[0][x, y] - m[y]) / hl.sqrt(v[y] + 1e-5)
    return out, {"sm": sm, "sq": sq, "m": m, "v": v, "r": r}, (32 * 128, n)


def h_layer_norm(hl, t, out, f):
    x, y = out.args()
    vec = t.natural_vector_size(hl.Float(32))
    yo = hl.Var("yo")
    out.split(y, yo, y, 16).parallel(yo).vectorize(x, 2 * vec)
    rx = hl.RVar(f["r"].x.name())
    for k in ("sm", "sq"):
        f[k].compute_at(out, y).update().atomic().vectorize(rx, 2 * vec)
    f["m"].compute_at(out, y)
    f["v"].compute_at(out, y)


def _matmul(hl, a, b_at, m, n, k):
    """C[x, y] = sum_k a[k, y] * b_at(x, k): a Func pair (mm accumulates, out copies)."""
    x, y = hl.Var("x"), hl.Var("y")
    r = hl.RDom([hl.Range(0, k)])
    mm, out = hl.Func("mm"), hl.Func("out")
    mm[x, y] = 0.0
    mm[x, y] = mm[x, y] + a[r.x, y] * b_at(x, r.x)
    return mm, out, r


def _schedule_matmul(hl, t, out, mm, r, m, n, k):
    # test/performance/matrix_multiplication.cpp's shape: register tiles of 3 vectors x 8
    # rows (AVX-512; 4 rows with AVX2), rows of tiles in parallel, the reduction split in
    # k blocks by rfactor so that a block of b stays in cache
    x, y = out.args()
    vec = t.natural_vector_size(hl.Float(32))
    avx512 = t.has_feature(hl.TargetFeature.AVX512)
    tx, ty = 3 * vec, 8 if avx512 else 4
    tile_y = max(ty, min(m, m // 4 if m >= 4 * ty else ty))
    tile_k = max(1, min(k, 64 if k % 64 == 0 else k))
    xi, yi, yii, xy, z = hl.Var("xi"), hl.Var("yi"), hl.Var("yii"), hl.Var("xy"), hl.Var("z")
    ko, ki = hl.RVar("ko"), hl.RVar("ki")
    out.tile(x, y, xi, yi, tx, tile_y).split(yi, yi, yii, ty) \
        .vectorize(xi, vec).unroll(xi).unroll(yii).fuse(x, y, xy).parallel(xy)
    mm.update().split(hl.RVar(r.x.name()), ko, ki, tile_k)
    intm = mm.update().rfactor([(ko, z)])
    intm.compute_at(mm, y).vectorize(x, vec).unroll(x).unroll(y)
    intm.update(0).reorder([hl.VarOrRVar(v) for v in (x, y, ki)]).vectorize(x, vec).unroll(x).unroll(y)
    mm.compute_at(out, xy).vectorize(x, vec).unroll(x)
    mm.update().split(y, y, yi, ty).reorder([hl.VarOrRVar(v) for v in (x, yi, y, ko)]).vectorize(x, vec) \
        .unroll(x).unroll(yi)


def b_matmul(hl, P):
    mm, out, r = _matmul(hl, P[0], lambda x, k: P[1][x, k], 1024, 1024, 1024)
    x, y = hl.Var("x"), hl.Var("y")
    out[x, y] = mm[x, y]
    return out, {"mm": mm, "r": r}, (1024, 1024)


def h_matmul(hl, t, out, f):
    _schedule_matmul(hl, t, out, f["mm"], f["r"], 1024, 1024, 1024)


def b_matmul_nt(hl, P):
    # a @ b.t(): b is read transposed, so the hand schedule first copies it into the
    # layout the tiles read (Bt, computed at root: apps/linear_algebra's swizzle)
    x, y = hl.Var("x"), hl.Var("y")
    bt = hl.Func("bt")
    bt[x, y] = P[1][y, x]
    mm, out, r = _matmul(hl, P[0], lambda x, k: bt[x, k], 1024, 1024, 1024)
    out[x, y] = mm[x, y]
    return out, {"mm": mm, "r": r, "bt": bt}, (1024, 1024)


def h_matmul_nt(hl, t, out, f):
    bt = f["bt"]
    x, y = bt.args()
    xi, yi = hl.Var("xi"), hl.Var("yi")
    vec = t.natural_vector_size(hl.Float(32))
    bt.compute_root().tile(x, y, xi, yi, vec, vec).vectorize(xi).unroll(yi).parallel(y)
    _schedule_matmul(hl, t, out, f["mm"], f["r"], 1024, 1024, 1024)


GL_M, GL_K, GL_N = 4 * 128, 768, 3072


def b_gelu_linear(hl, P):
    # gelu(x @ w.t() + b): x viewed as [512, 768]; w [3072, 768] read transposed (wt)
    x, y = hl.Var("x"), hl.Var("y")
    wt = hl.Func("wt")
    wt[x, y] = P[1][y, x]
    mm, out, r = _matmul(hl, P[0], lambda x, k: wt[x, k], GL_M, GL_N, GL_K)
    z = mm[x, y] + P[2][x]
    out[x, y] = 0.5 * z * (1 + hl.erf(z * (1 / math.sqrt(2))))
    return out, {"mm": mm, "r": r, "bt": wt}, (GL_M, GL_N)


def h_gelu_linear(hl, t, out, f):
    bt = f["bt"]
    x, y = bt.args()
    xi, yi = hl.Var("xi"), hl.Var("yi")
    vec = t.natural_vector_size(hl.Float(32))
    bt.compute_root().tile(x, y, xi, yi, vec, vec).vectorize(xi).unroll(yi).parallel(y)
    _schedule_matmul(hl, t, out, f["mm"], f["r"], GL_M, GL_N, GL_K)


def b_mlp(hl, P):
    # relu(x @ w1 + b1) @ w2 + b2, x [32, 784], w1 [784, 128], w2 [128, 10]
    x, y = hl.Var("x"), hl.Var("y")
    mm1, h, r1 = _matmul(hl, P[0], lambda x, k: P[1][x, k], 32, 128, 784)
    h[x, y] = hl.max(mm1[x, y] + P[2][x], 0)
    r2 = hl.RDom([hl.Range(0, 128)])
    mm2, out = hl.Func("mm2"), hl.Func("out")
    mm2[x, y] = 0.0
    mm2[x, y] = mm2[x, y] + h[r2.x, y] * P[3][x, r2.x]
    out[x, y] = mm2[x, y] + P[4][x]
    return out, {"mm1": mm1, "h": h, "mm2": mm2, "r1": r1, "r2": r2}, (32, 10)


def h_mlp(hl, t, out, f):
    # small: the hidden layer computed at root in vector tiles (parallel over its 32 rows),
    # the 10-wide output per row
    vec = t.natural_vector_size(hl.Float(32))
    h, mm1 = f["h"], f["mm1"]
    x, y = h.args()
    h.compute_root().vectorize(x, vec).parallel(y, 8)
    mm1.compute_at(h, y).vectorize(mm1.args()[0], vec)
    mm1.update().reorder([hl.VarOrRVar(v) for v in (mm1.args()[0], hl.RVar(f["r1"].x.name()))]) \
        .vectorize(mm1.args()[0], vec)
    f["mm2"].compute_at(out, out.args()[1])


WORKS = {
    "elementwise": (b_elementwise, h_elementwise, lambda np, a: np.maximum(a * 2 + 1, 0) / (1 + np.exp(-a))),
    "transpose": (b_transpose, h_transpose, lambda np, a: a.T.copy()),
    "broadcast_add": (b_broadcast_add, h_elementwise, lambda np, a, b: a + b),
    "column_sum": (b_column_sum, h_column_sum, lambda np, a: a.sum(0)),
    "softmax": (b_softmax, h_softmax,
                lambda np, a: np.exp(a - a.max(-1, keepdims=True)) / np.exp(a - a.max(-1, keepdims=True))
                .sum(-1, keepdims=True)),
    "layer_norm": (b_layer_norm, h_layer_norm,
                   lambda np, a: ((a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)),
                   lambda a: a.reshape(-1, a.shape[-1])),
    "matmul": (b_matmul, h_matmul, lambda np, a, b: a @ b),
    "matmul_nt": (b_matmul_nt, h_matmul_nt, lambda np, a, b: a @ b.T),
    "gelu_linear": (b_gelu_linear, h_gelu_linear,
                    lambda np, x, w, b: _gelu_np(np, x.reshape(-1, GL_K) @ w.T + b),
                    lambda a: a.reshape(-1, GL_K) if a.ndim == 3 else a),
    "mlp": (b_mlp, h_mlp, lambda np, x, w1, b1, w2, b2: np.maximum(x @ w1 + b1, 0) @ w2 + b2),
}


HUGE = 2 << 20  # runtime/storage.c's HUGE_MIN: from this size on a storage is huge-page backed


def aligned(np, a):
    """A copy of a (or a zeroed array of shape a, when a is a shape) laid out as tdsl's
    storages are (runtime/storage.c): at a 64-byte boundary (Halide 14's generated code
    faults on some schedules when a buffer is not; NumPy aligns to 16), and from 2 MiB on
    in anonymous pages at a 2 MiB boundary marked MADV_HUGEPAGE (transparent huge pages in
    "madvise" mode back only such ranges). The array keeps its mapping alive."""
    import mmap
    shape = a if isinstance(a, tuple) else a.shape
    n = int(np.prod(shape, dtype=np.int64)) * 4
    if n >= HUGE:
        m = mmap.mmap(-1, n + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        raw = np.frombuffer(m, np.uint8)
        off = (-raw.ctypes.data) % HUGE
        if hasattr(m, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
            m.madvise(mmap.MADV_HUGEPAGE, off, n)  # a hint, as storage.c's: failure changes nothing
    else:
        raw = np.empty(n + 64, np.uint8)
        off = (-raw.ctypes.data) % 64
    out = raw[off:off + n].view(np.float32).reshape(shape)
    out[...] = 0 if isinstance(a, tuple) else a  # every page touched before the timed calls
    return out


def _stream_settle():
    """TDSL_STREAM_SETTLE of runtime/tdsl.h: the calls a stream site makes before it
    chooses its store form (runtime/stream.c's rule)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runtime", "tdsl.h")
    with open(path) as f:
        m = re.search(r"^#define TDSL_STREAM_SETTLE (\d+)$", f.read(), re.M)
    if not m:
        raise SystemExit("bench: %s defines no TDSL_STREAM_SETTLE" % path)
    return int(m.group(1))


STREAM_SETTLE = _stream_settle()


def warmup_for(reps):
    """The untimed calls before `reps` timed ones: `tdslc bench`'s rule (driver/run.c's
    bench_warmup: a tenth of them, at least the stream sites' settle length), so that
    Halide, NumPy, PyTorch and tdsl are warmed up alike. (`tdslc bench` stops warming up
    after a second of calls, as _time's budget and run.py's _time_calls cut theirs.)"""
    return max(STREAM_SETTLE, 1 if reps < 10 else reps // 10)


def _rev(a):
    """A NumPy array as Halide sees it: its last axis is dim 0 (a view, no copy)."""
    return a.transpose(tuple(range(a.ndim - 1, -1, -1)))


def _compile(hl, name, variant, inputs, threads):
    """A fresh copy of workload `name` scheduled by `variant` ("hand" or an autoscheduler),
    compiled for the host: (realize(), output array, compile seconds, schedule text)."""
    import numpy as np
    build, hand = WORKS[name][:2]
    if len(WORKS[name]) > 3:  # the ranks the algorithm is written for (views, no copy)
        inputs = [WORKS[name][3](a) for a in inputs]
    t = hl.get_host_target()
    # size-1 dims dropped (Halide wants dim 0 dense), every buffer 64-byte aligned
    inputs = [aligned(np, a.squeeze() if 1 in a.shape else a) for a in inputs]
    P = [hl.ImageParam(hl.Float(32), a.ndim, "in%d" % i) for i, a in enumerate(inputs)]
    out, funcs, oshape = build(hl, P)
    for p, a in zip(P, inputs):
        p.set_estimates([hl.Range(0, s) for s in reversed(a.shape)])
    out.set_estimates([hl.Range(0, s) for s in reversed(oshape)])
    t0 = time.perf_counter()
    text = ""
    p = hl.Pipeline(out)
    if variant == "hand":
        hand(hl, t, out, funcs)
    else:
        mp = hl.MachineParams(threads, _llc_bytes() or 32 << 20, 40)
        res = p.auto_schedule(variant, t, mp)
        text = getattr(res, "schedule_source", "") or ""
    p.compile_jit(t)
    secs = time.perf_counter() - t0
    for pp, a in zip(P, inputs):
        pp.set(hl.Buffer(_rev(a)))
    o = aligned(np, tuple(oshape))
    ob = hl.Buffer(_rev(o))
    return (lambda: p.realize(ob)), o, secs, text, (P, ob, inputs)


def halide_shapes(name, np, shapes):
    """The NumPy shapes of the buffers Halide's version of workload `name` reads, given
    the shapes of the tdsl function's parameters: size-1 dims dropped, then the
    workload's reshape (the same views _compile makes, without copying)."""
    out = []
    for s in shapes:
        a = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=tuple(s), strides=(0,) * len(s))
        a = a.squeeze() if 1 in a.shape else a
        out.append(tuple(WORKS[name][3](a).shape) if len(WORKS[name]) > 3 else tuple(a.shape))
    return out


def static_library(name, variant, shapes, threads, prefix, fname):
    """Workload `name` scheduled by `variant` ("hand" or an autoscheduler) for the host,
    written as Halide's static library prefix.a (and prefix.h) whose function fname takes
    one halide_buffer_t per input, then the output's (bench/interleave.py links it).
    shapes: Halide's input shapes (halide_shapes). Returns the output's NumPy shape."""
    import halide as hl
    build, hand = WORKS[name][:2]
    t = hl.get_host_target()
    P = [hl.ImageParam(hl.Float(32), len(sh), "in%d" % i) for i, sh in enumerate(shapes)]
    out, funcs, oshape = build(hl, P)
    for pp, sh in zip(P, shapes):
        pp.set_estimates([hl.Range(0, d) for d in reversed(sh)])
    out.set_estimates([hl.Range(0, d) for d in reversed(oshape)])
    p = hl.Pipeline(out)
    if variant == "hand":
        hand(hl, t, out, funcs)
    else:
        ok = load_plugins(hl).get(variant)
        if ok is not True:
            raise RuntimeError(ok)
        p.auto_schedule(variant, t, hl.MachineParams(threads, _llc_bytes() or 32 << 20, 40))
    p.compile_to_static_library(prefix, P, fname, t)
    return tuple(oshape)


def _llc_bytes():
    best = 0
    for i in range(8):
        try:
            with open("/sys/devices/system/cpu/cpu0/cache/index%d/size" % i) as f:
                s = f.read().strip()
            v = int(s.rstrip("KMG")) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1], 1)
            best = max(best, v)
        except (OSError, ValueError):
            pass
    return best


BUDGET_S = 2.0  # the timed calls of one variant, per round: a slow variant gets fewer


def _time(f, warmup, reps):
    t0 = time.perf_counter()
    f()
    t1 = time.perf_counter() - t0
    if t1 * (warmup - 1 + reps) > BUDGET_S:
        warmup, reps = 1, max(1, min(reps, int(BUDGET_S / max(t1, 1e-9))))
    for _ in range(warmup - 1):
        f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": statistics.median(ts), "min_ms": min(ts), "max_ms": max(ts), "reps": reps}


def load_plugins(hl):
    """{autoscheduler: True, or why it cannot be loaded}."""
    loaded = {}
    for s in AUTOSCHEDULERS:
        try:
            hl.load_plugin(os.path.join(PLUGIN_DIR, PLUGINS[s]))
            loaded[s] = True
        except Exception as e:  # a missing plugin: that variant is reported, not fatal
            loaded[s] = "cannot load %s: %s" % (PLUGINS[s], e)
    return loaded


def one(name, variant, ins, threads, warmup, reps, rounds):
    """One variant of one workload in this process: compiled, checked against NumPy in
    f64, then timed `rounds` times (its best median). Returns its result dict; a crash in
    Halide's generated code takes the process with it (run.py runs each in its own)."""
    import numpy as np
    import halide as hl
    r = {"target": str(hl.get_host_target())}
    if variant != "hand":
        ok = load_plugins(hl).get(variant)
        if ok is not True:
            return {"error": ok}
    ref = WORKS[name][2](np, *[a.astype(np.float64) for a in ins])
    try:
        fn, o, secs, text, keep = _compile(hl, name, variant, ins, threads)
        fn()
        d = np.abs(o.astype(np.float64) - ref.reshape(o.shape))
        scale_ = float(np.abs(ref).max()) or 1.0
        err = float(d.max()) / scale_ if d.size else 0.0
        r.update(compile_s=secs, err_rel=err, ok=bool(math.isfinite(err) and err <= CHECK_TOL))
        if text:
            r["schedule_lines"] = text.count("\n")
        if r["ok"]:
            for rnd in range(rounds):
                t = _time(fn, warmup if rnd == 0 else 1, reps)
                if "median_ms" not in r or t["median_ms"] < r["median_ms"]:
                    r.update(t)
    except Exception as e:  # an autoscheduler that fails on a pipeline is reported
        msg = str(e).strip()
        r["error"] = msg.splitlines()[-1][:300] if msg else type(e).__name__
    return r


def best_of(res):
    """The fastest variant that passed its check, and the fastest autoscheduler, into res."""
    ok = [(r["median_ms"], v) for v, r in res.items() if isinstance(r, dict) and "median_ms" in r]
    if ok:
        best = min(ok)[1]
        res["best"] = {"variant": best, **{k: res[best][k] for k in ("median_ms", "min_ms", "max_ms", "reps")}}
        auto = [(t, v) for t, v in ok if v != "hand"]
        if auto:
            res["best_auto"] = min(auto)[1]
    return res
