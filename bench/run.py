#!/usr/bin/python3
"""bench/run.py — tdsl's benchmark harness (`make bench`). See bench/README.md.

In one run: the machine's bars (a STREAM-style copy/triad bandwidth, bench/stream.c, and
the peak FMA rate, bench/peak.c), the compile latency of examples/attention.tdsl, which
OPENBLAS_CORETYPE is fastest here, then in interleaved rounds
  - the workloads of bench/workloads/ (tdsl C and LLVM backends, NumPy, PyTorch),
  - the GEMM table of bench/gemm/ (the same, plus OpenBLAS with the fastest core type),
  - the models of bench/models/ (tdsl against the same block as a torch.nn.Module),
  - the vector-math table (bench/vector_math.*) and the whole models (bench/models/whole.py),
then the workloads and vector math in Halide 14 (bench/halide_work.py) and `tdslc bench
--profile` of each whole model. Every tdsl case is first checked (`tdslc run`) against
NumPy in f64 or its torch.nn.Module, and is not timed when wrong; every Halide variant
against NumPy. tdsl runs through `tdslc bench --json` (timing); NumPy and PyTorch in
subprocesses with a cleaned environment. Writes bench/RESULTS.md (and the raw
numbers as JSON under build/bench/). Timings are reported, never asserted.

Usage: /usr/bin/python3 bench/run.py [--tdslc build/tdslc] [--threads 2]
           [--reps-scale 1.0] [--out bench/RESULTS.md] [--only NAME|GROUP,...]
Internal: run.py --worker numpy|torch|blasprobe|check ...   (prints JSON)
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
F32 = 4
MB = 1e6

# Variables that change which BLAS kernels OpenBLAS picks (and can slow it down a lot);
# removed from the environment of every process the harness starts.
BLAS_ENV_DROP = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# ---------------------------------------------------------------------------------------
# Workloads. Each has a .tdsl file in bench/workloads/ with one function `fn`; `inputs`
# lists the parameters' shapes in declaration order (all f32). `bytes` is the compulsory
# traffic (every input read once, every output written once); `flops` counts arithmetic
# (a multiply-add is 2; exp, division, max count 1 each). `kind` picks the bar:
# "memory" -> bytes / time vs the copy bandwidth; "compute" -> flops / time vs the best
# BLAS GFLOP/s of this run. `reps` timed calls after halide_work.warmup_for(reps) calls
# (`tdslc bench`'s warm-up: at least the calls a stream site takes to choose its store
# form), for every implementation alike.
# ---------------------------------------------------------------------------------------
N4K = 4096 * 4096


def _mm_flops(m, k, n):
    return 2 * m * k * n


WORKLOADS = [
    dict(name="elementwise", file="elementwise.tdsl", fn="elementwise",
         what="relu(x*2+1)*sigmoid(x), 4096²", kind="memory",
         inputs=[(4096, 4096)], bytes=2 * N4K * F32, flops=8 * N4K, reps=15),
    dict(name="transpose", file="transpose.tdsl", fn="transpose_copy",
         what="x.t().contiguous(), 4096²", kind="memory",
         inputs=[(4096, 4096)], bytes=2 * N4K * F32, flops=0, reps=15),
    dict(name="broadcast_add", file="broadcast_add.tdsl", fn="broadcast_add",
         what="(4096,1) + (1,4096)", kind="memory",
         inputs=[(4096, 1), (1, 4096)], bytes=(N4K + 2 * 4096) * F32, flops=N4K, reps=15),
    dict(name="column_sum", file="column_sum.tdsl", fn="column_sum",
         what="x.sum(0), 4096²", kind="memory",
         inputs=[(4096, 4096)], bytes=(N4K + 4096) * F32, flops=N4K, reps=15),
    dict(name="softmax", file="softmax.tdsl", fn="softmax_rows",
         what="softmax(x, -1), (256, 4096)", kind="memory",
         inputs=[(256, 4096)], bytes=2 * 256 * 4096 * F32, flops=5 * 256 * 4096, reps=50),
    dict(name="layer_norm", file="layer_norm.tdsl", fn="layer_norm",
         what="layer norm body, (32, 128, 512)", kind="memory",
         inputs=[(32, 128, 512)], bytes=2 * 32 * 128 * 512 * F32,
         flops=8 * 32 * 128 * 512, reps=50),
    dict(name="matmul", file="matmul.tdsl", fn="matmul_1024",
         what="a @ b, 1024² (tdsl: no BLAS)", kind="compute",
         inputs=[(1024, 1024), (1024, 1024)], bytes=3 * 1024 * 1024 * F32,
         flops=_mm_flops(1024, 1024, 1024), reps=10),
    dict(name="matmul_nt", file="matmul_nt.tdsl", fn="matmul_nt_1024",
         what="a @ b.t(), 1024² (tdsl: no BLAS)", kind="compute",
         inputs=[(1024, 1024), (1024, 1024)], bytes=3 * 1024 * 1024 * F32,
         flops=_mm_flops(1024, 1024, 1024), reps=10, target=False),
    dict(name="gelu_linear", file="gelu_linear.tdsl", fn="gelu_linear",
         what="gelu(x @ w.t() + b), x [4,128,768], w [3072,768]", kind="compute",
         inputs=[(4, 128, 768), (3072, 768), (3072,)],
         bytes=(4 * 128 * 768 + 3072 * 768 + 3072 + 4 * 128 * 3072) * F32,
         flops=_mm_flops(512, 768, 3072) + 2 * 512 * 3072, reps=10, target=False),
    dict(name="mlp", file="mlp.tdsl", fn="mlp",
         what="seed MLP 32×784→128→10", kind="compute",
         inputs=[(32, 784), (784, 128), (128,), (128, 10), (10,)],
         bytes=(32 * 784 + 784 * 128 + 128 + 128 * 10 + 10 + 32 * 10) * F32,
         flops=_mm_flops(32, 784, 128) + 2 * 32 * 128 + _mm_flops(32, 128, 10) + 32 * 10, reps=300),
    dict(name="attention", file="attention.tdsl", fn="attention",
         what="seed attention (2, 10, 512), 8 heads", kind="compute",
         inputs=[(2, 10, 512)] + [(512, 512)] * 4,
         bytes=(2 * 2 * 10 * 512 + 4 * 512 * 512) * F32,
         flops=4 * _mm_flops(20, 512, 512) + 2 * 16 * _mm_flops(10, 64, 10)
         + 16 * 10 * 10 * 6, reps=300),
]



# scaled_dot_product_attention (bench/workloads/sdpa.tdsl): each case fused (one tdsl
# kernel) and unfused (q @ k^T, softmax, @ v as three kernels); NumPy and PyTorch run the
# math path of both (`math` names their function). Not among issue 6's targets
# (`target` False): the report compares them in a table of their own.
def _sdpa_flops(b, h, l, s, e, causal):
    pairs = b * h * (l * (l + 1) // 2 if causal else l * s)  # (query, key) pairs computed
    return 4 * pairs * e + 5 * pairs


def _sdpa(name, b, h, l, causal, reps):
    what = "B=%d, H=%d, L=S=%d, E=64%s" % (b, h, l, ", causal" if causal else "")
    shape = (b, h, l, 64)
    common = dict(file="sdpa.tdsl", kind="compute", inputs=[shape] * 3, bytes=4 * b * h * l * 64 * F32,
                  flops=_sdpa_flops(b, h, l, l, 64, causal), reps=reps, target=False,
                  math="sdpa_causal" if causal else "sdpa")
    return [dict(name=name, fn=name, what=what + " (fused)", **common),
            dict(name=name + "_unfused", fn=name + "_unfused", what=what + " (q @ k^T, softmax, @ v)", **common)]


WORKLOADS += (_sdpa("sdpa_256", 8, 12, 256, False, 20) + _sdpa("sdpa_causal_256", 8, 12, 256, True, 20)
              + _sdpa("sdpa_1024", 1, 12, 1024, False, 10))
SDPA_GROUP = "sdpa"

E, H, D = 512, 8, 64
LAST_BLAS = ("blas_numpy", "blas_torch")  # the 1024² BLAS matmul reference entries

# ---------------------------------------------------------------------------------------
# The GEMM table (bench/gemm/*.tdsl, one function per case). `op` picks the eager form
# NumPy and PyTorch run; `params` are the function's parameters in order. Large shapes get
# few repetitions. `predict_from` names a smaller case of the same form: when its check run
# took so long that this one would take more than PREDICT_CAP_S per call, this one is
# neither checked nor timed (the table says why). `weight_bytes` (M = 1 rows): the bytes of
# w, which every call must read once.
# ---------------------------------------------------------------------------------------
GEMM_FORMS = {  # op -> (how the .tdsl writes it, NumPy's eager form, PyTorch's eager form)
    "nn": ("a @ b", lambda a, b: a @ b, lambda a, b: a @ b),
    "nt": ("a @ b.t()", lambda a, b: a @ b.T, lambda a, b: a @ b.t()),
    "tn": ("a.t() @ b", lambda a, b: a.T @ b, lambda a, b: a.t() @ b),
    "tt": ("a.t() @ b.t()", lambda a, b: a.T @ b.T, lambda a, b: a.t() @ b.t()),
    "linear": ("x @ w.t()", lambda x, w: x @ w.T, lambda x, w: x @ w.t()),
    "scores": ("q @ k.transpose(-2, -1)", lambda q, k: q @ k.transpose(0, 2, 1),
               lambda q, k: q @ k.transpose(-2, -1)),
    "pv": ("p @ v", lambda p, v: p @ v, lambda p, v: p @ v),
}
GEMM_GROUPS = ("gemm_square", "gemm_linear", "gemm_attention")
ATT_BH, ATT_D = 12, 64


def _gemm_cases():
    cases = []
    for n, reps in ((1024, 10), (2048, 3)):
        for op in ("nn", "nt", "tn", "tt"):
            cases.append(dict(
                name="%s_%d" % (op, n), group="gemm_square", file="square.tdsl", op=op,
                shape="%d²" % n, params=[("a", (n, n)), ("b", (n, n))],
                flops=_mm_flops(n, n, n), reps=reps,
                predict_from="%s_1024" % op if n == 2048 else None))
    for k, n in ((768, 3072), (3072, 768), (4096, 4096)):
        for m, reps in ((1, 50), (8, 30), (128, 10), (2048, 3)):
            cases.append(dict(
                name="linear_%d_%d_%d" % (m, k, n), group="gemm_linear", file="linear.tdsl",
                op="linear", shape="M=%d, K=%d, N=%d" % (m, k, n), m=m,
                params=[("x", (m, k)), ("w", (n, k))], flops=_mm_flops(m, k, n),
                weight_bytes=n * k * F32, reps=reps,
                predict_from="linear_128_%d_%d" % (k, n) if m == 2048 else None))
    for t, reps in ((64, 100), (128, 50), (512, 15)):
        cases.append(dict(
            name="scores_%d" % t, group="gemm_attention", file="attention.tdsl", op="scores",
            shape="[%d, %d, %d] @ [%d, %d, %d]" % (ATT_BH, t, ATT_D, ATT_BH, ATT_D, t),
            params=[("q", (ATT_BH, t, ATT_D)), ("k", (ATT_BH, t, ATT_D))],
            flops=ATT_BH * _mm_flops(t, ATT_D, t), reps=reps, predict_from=None))
        cases.append(dict(
            name="pv_%d" % t, group="gemm_attention", file="attention.tdsl", op="pv",
            shape="[%d, %d, %d] @ [%d, %d, %d]" % (ATT_BH, t, t, ATT_BH, t, ATT_D),
            params=[("p", (ATT_BH, t, t)), ("v", (ATT_BH, t, ATT_D))],
            flops=ATT_BH * _mm_flops(t, t, ATT_D), reps=reps, predict_from=None))
    for c in cases:
        c["fn"] = c["name"]
        c["what"] = GEMM_FORMS[c["op"]][0]
    return cases


GEMM_CASES = _gemm_cases()

# The models (bench/models/*.tdsl; their PyTorch twins and parameter lists live in
# bench/models/reference.py, which imports torch only when a model is built).
sys.path.insert(0, os.path.join(BENCH, "models"))
import reference as model_ref  # noqa: E402

MODELS = model_ref.MODELS
import whole as whole_ref  # noqa: E402  (bench/models/whole.py: the whole-model table)

WHOLE = whole_ref.WHOLE
sys.path.insert(0, BENCH)
import halide_work  # noqa: E402  (bench/halide_work.py: Halide's versions of the workloads)
import vector_math as vecmath  # noqa: E402  (bench/vector_math.py: the vector-math table)
import report27  # noqa: E402  (bench/report27.py: the tables of Halide, vector math, whole models)

# Time limits for the new groups, per implementation, case and round (reps are cut to fit
# TIME_BUDGET_S; a tdsl case whose last round used the budget, or whose `tdslc bench`
# took longer than REPEAT_CAP_S, is not timed again; a case whose single call takes more
# than SLOW_CAP_S is checked but not timed; one predicted to take more than PREDICT_CAP_S
# is neither). CHECK_TOL: the largest
# max|tdsl - reference| / max|reference| a check accepts.
TIME_BUDGET_S = 4.0
REPEAT_CAP_S = 10.0  # a `tdslc bench` command (compiling included) longer than this runs in one round only
SLOW_CAP_S = 5.0
PREDICT_CAP_S = 10.0
F64_CHECK_MAX_FLOPS = 60e9  # a model above this many FLOPs skips PyTorch's own f64 run (seconds of it)
WHOLE_BUDGET_S = 8.0  # a whole model's per-implementation budget per round (calls of up to seconds)
PROFILE_BUDGET_S = 6.0  # the timed calls of one model's `bench --profile`
WHOLE_SLOW_CAP_S = 60.0  # a whole model whose check call took longer is checked but not timed
CHECK_TOL = 1e-4

# OPENBLAS_CORETYPE candidates, each tried when the CPU has the flags it needs; the probe
# keeps the ones OpenBLAS really runs (openblas_get_corename() answers the same name).
CORETYPES = (("Haswell", ("avx2", "fma")), ("Zen", ("avx2", "fma", "AuthenticAMD")),
             ("SkylakeX", ("avx512f", "avx512bw", "avx512vl")),
             ("Cooperlake", ("avx512f", "avx512_bf16")),
             ("SapphireRapids", ("avx512f", "avx512_fp16", "amx_tile")))


def tdslc_inputs(shapes, np, seed=0):
    """The inputs `tdslc run` and `tdslc bench` draw when none is given (LANGUAGE.md §10):
    one splitmix64 stream, one draw per element in row-major order, parameters in order;
    a float is ((u >> 11) * 2^-53) * 2 - 1 in f64 rounded to f32, an int u >> 62. PyTorch's
    model timings use these, so both sides compute on the same numbers. shapes: a shape
    (f32), or (shape, "i64")."""
    out, pos = [], 0
    gamma = np.uint64(0x9E3779B97F4A7C15)
    for s in shapes:
        s, dt = (s[0], s[1]) if len(s) == 2 and isinstance(s[1], str) else (s, "f32")
        n = int(np.prod(s, dtype=np.int64))
        with np.errstate(over="ignore"):
            z = np.arange(pos + 1, pos + n + 1, dtype=np.uint64) * gamma + np.uint64(seed)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z ^= z >> np.uint64(31)
        if dt == "i64":
            out.append((z >> np.uint64(62)).astype(np.int64).reshape(s))
        else:
            out.append(((z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 * 2 - 1)
                       .astype(np.float32).reshape(s))
        pos += n
    return out


def param_shapes(md):
    """A model's parameters as tdslc_inputs takes them: shapes, (shape, "i64") for ids."""
    return [(p[2], p[3]) if len(p) > 3 else p[2] for p in md["params"]]


def select(only):
    """--only: names of workloads, GEMM cases, model blocks, whole models or vector-math
    functions (vm_exp, vm_erf, ...), or the groups `workloads`, `sdpa` (the
    scaled_dot_product_attention workloads), `halide` (the workloads Halide has),
    `gemm`, `gemm_square`, `gemm_linear`, `gemm_attention`, `models` (the blocks), `whole`
    (the whole models), `vecmath`. Empty: everything. A workload Halide has, named or in a
    group, is timed in Halide too; `nohalide` leaves Halide out.
    Returns {"w", "g", "m", "x", "v": names selected (workloads, GEMM cases, blocks,
    whole models, vector-math functions), "halide": bool, "unknown": names}."""
    wn = [w["name"] for w in WORKLOADS]
    gn = [c["name"] for c in GEMM_CASES]
    mn = [m["name"] for m in MODELS]
    xn = [m["name"] for m in WHOLE]
    vn = ["vm_" + n for n in vecmath.NAMES]
    if not only or only == ["nohalide"]:
        return {"w": wn, "g": gn, "m": mn, "x": xn, "v": vn, "halide": not only, "unknown": []}
    sw, sg, sm, sx, sv, unknown = set(), set(), set(), set(), set(), []
    halide = False
    for x in only:
        if x == "workloads":
            sw.update(wn)
            halide = True
        elif x == "halide":
            sw.update(n for n in wn if n in halide_work.WORKS)
            halide = True
        elif x == SDPA_GROUP:
            sw.update(w["name"] for w in WORKLOADS if "math" in w)
        elif x == "gemm":
            sg.update(gn)
        elif x in GEMM_GROUPS:
            sg.update(c["name"] for c in GEMM_CASES if c["group"] == x)
        elif x == "models":
            sm.update(mn)
        elif x == "whole":
            sx.update(xn)
        elif x == "vecmath":
            sv.update(vn)
        elif x == "nohalide":
            pass
        elif x in wn:
            sw.add(x)
            halide = halide or x in halide_work.WORKS  # a workload named alone brings its Halide versions
        elif x in gn:
            sg.add(x)
        elif x in mn:
            sm.add(x)
        elif x in xn:
            sx.add(x)
        elif x in vn:
            sv.add(x)
        else:
            unknown.append(x)
    halide = (halide or bool(sv)) and "nohalide" not in only
    return {"w": [n for n in wn if n in sw], "g": [n for n in gn if n in sg], "m": [n for n in mn if n in sm],
            "x": [n for n in xn if n in sx], "v": [n for n in vn if n in sv], "halide": halide,
            "unknown": unknown}


# ---------------------------------------------------------------------------------------
# Worker: NumPy or PyTorch timings, in a subprocess whose environment the parent cleaned.
# ---------------------------------------------------------------------------------------
def _inputs(w, np):
    rng = np.random.default_rng(0)
    return [(rng.random(s, dtype=np.float64) * 2 - 1).astype(np.float32) for s in w["inputs"]]


def _numpy_fns(np):
    def softmax(x, axis=-1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    def attention(x, wq, wk, wv, wo):
        q = (x @ wq).reshape(2, 10, H, D).transpose(0, 2, 1, 3)
        k = (x @ wk).reshape(2, 10, H, D).transpose(0, 2, 1, 3)
        v = (x @ wv).reshape(2, 10, H, D).transpose(0, 2, 1, 3)
        s = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(D))
        a = softmax(s, -1)
        o = np.ascontiguousarray((a @ v).transpose(0, 2, 1, 3)).reshape(2, 10, E)
        return o @ wo

    def layer_norm(x):
        m = x.mean(-1, keepdims=True)
        v = x.var(-1, keepdims=True)  # ddof=0: biased, as unbiased=false
        return (x - m) / np.sqrt(v + np.float32(1e-5))

    def sdpa(q, k, v, causal=False):
        s = q @ k.transpose(0, 1, 3, 2) * np.float32(1 / math.sqrt(q.shape[-1]))
        if causal:
            s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, np.float32(-np.inf))
        return softmax(s, -1) @ v

    return {
        "sdpa": sdpa,
        "sdpa_causal": lambda q, k, v: sdpa(q, k, v, True),
        "elementwise": lambda x: np.maximum(x * 2 + 1, 0) * (1 / (1 + np.exp(-x))),
        "transpose": lambda x: np.ascontiguousarray(x.T),
        "broadcast_add": lambda a, b: a + b,
        "column_sum": lambda x: x.sum(0),
        "softmax": lambda x: softmax(x, -1),
        "layer_norm": layer_norm,
        "matmul": lambda a, b: a @ b,
        "matmul_nt": lambda a, b: a @ b.T,
        "gelu_linear": None,  # NumPy has no erf (SciPy's is not used): n/a
        "mlp": lambda x, w1, b1, w2, b2: np.maximum(x @ w1 + b1, 0) @ w2 + b2,
        "attention": attention,
    }


def _torch_fns(torch):
    def attention(x, wq, wk, wv, wo):
        q = (x @ wq).view(2, 10, H, D).transpose(1, 2)
        k = (x @ wk).view(2, 10, H, D).transpose(1, 2)
        v = (x @ wv).view(2, 10, H, D).transpose(1, 2)
        s = q @ k.transpose(-2, -1) / math.sqrt(D)
        a = torch.softmax(s, dim=-1)
        o = (a @ v).transpose(1, 2).contiguous().view(2, 10, E)
        return o @ wo

    def layer_norm(x):
        m = x.mean(-1, keepdim=True)
        v = x.var(-1, keepdim=True, unbiased=False)
        return (x - m) / torch.sqrt(v + 1e-5)

    def sdpa(q, k, v, causal=False):  # PyTorch 2's math path (1.13 has no F.scaled_dot_product_attention)
        s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.size(-1)))
        if causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).tril().logical_not(), float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    return {
        "sdpa": sdpa,
        "sdpa_causal": lambda q, k, v: sdpa(q, k, v, True),
        "elementwise": lambda x: torch.relu(x * 2 + 1) * torch.sigmoid(x),
        "transpose": lambda x: x.t().contiguous(),
        "broadcast_add": lambda a, b: a + b,
        "column_sum": lambda x: x.sum(0),
        "softmax": lambda x: torch.softmax(x, dim=-1),
        "layer_norm": layer_norm,
        "matmul": lambda a, b: a @ b,
        "matmul_nt": lambda a, b: a @ b.t(),
        "gelu_linear": lambda x, w, b: torch.nn.functional.gelu(x @ w.t() + b),
        "mlp": lambda x, w1, b1, w2, b2: (x @ w1 + b1).clamp(min=0) @ w2 + b2,
        "attention": attention,
    }


def _time_calls(f, args, warmup, reps, budget_s=None):
    """warmup calls, then reps timed calls (perf_counter around each). With budget_s, the
    first warm-up call is timed, and when the whole would take longer than budget_s the
    remaining warm-ups are dropped and reps cut to fit (at least 1)."""
    done = 0
    if budget_s and warmup > 0:
        t0 = time.perf_counter()
        f(*args)
        t1 = time.perf_counter() - t0
        done = 1
        if t1 * (warmup - 1 + reps) > budget_s:
            warmup, reps = 1, max(1, min(reps, int(budget_s / max(t1, 1e-9))))
    for _ in range(warmup - done):
        f(*args)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = f(*args)
        ts.append(time.perf_counter() - t0)
        del r
    ts_ms = [t * 1e3 for t in ts]
    return {"median_ms": statistics.median(ts_ms), "min_ms": min(ts_ms),
            "max_ms": max(ts_ms), "reps": reps, "warmup": warmup}


def _status_bytes(key):
    """VmRSS / VmHWM of this process in bytes (Linux's /proc/self/status), or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _peak_while(f, in_bytes):
    """Runs f() and returns (its result, what it held at its peak): in_bytes (the inputs,
    resident before) plus the most the resident set grew by during f — the measure `tdslc
    bench` reports as peak_bytes (driver/rss.c). None for the peak where /proc cannot say."""
    before = _status_bytes("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as cr:
            cr.write("5")  # the peak (VmHWM) starts again from the resident set now
    except OSError:
        before = None
    r = f()
    hwm = _status_bytes("VmHWM")
    return r, (in_bytes + max(0, hwm - before) if before is not None and hwm is not None else None)


def _loaded_libs(pattern):
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            if p.startswith("/") and re.search(pattern, os.path.basename(p)):
                libs.add(os.path.realpath(p))
    return sorted(libs)


def _blas_info(np):
    """Which BLAS this process really loaded, and (for OpenBLAS) which kernels it runs."""
    info = {}
    try:
        import threadpoolctl  # noqa: F401
        info["threadpoolctl"] = threadpoolctl.threadpool_info()
    except Exception:
        pass
    libs = _loaded_libs(r"blas|lapack|mkl|blis|gomp|iomp|omp")
    info["libraries"] = libs
    import ctypes
    for lib in libs:
        try:
            h = ctypes.CDLL(lib)
        except OSError:
            continue
        for sym, key in (("openblas_get_corename", "openblas_corename"),
                         ("openblas_get_config", "openblas_config")):
            if hasattr(h, sym):
                fn = getattr(h, sym)
                fn.restype = ctypes.c_char_p
                info[key] = fn().decode(errors="replace")
        if hasattr(h, "openblas_get_num_threads"):
            info["openblas_threads"] = h.openblas_get_num_threads()
    blas = [l for l in libs if re.search(r"blas|mkl|blis", os.path.basename(l))]
    if "openblas_corename" in info:
        kind = "OpenBLAS (%s kernels)" % info["openblas_corename"]
    elif any("mkl" in l for l in blas):
        kind = "MKL"
    elif any("blis" in l for l in blas):
        kind = "BLIS"
    elif any(re.search(r"/blas/libblas\.so", l) for l in blas):
        kind = "reference BLAS (netlib, unoptimized)"
    elif blas:
        kind = "unknown BLAS"
    else:
        kind = "no BLAS library loaded"
    info["summary"] = kind + (": " + ", ".join(blas) if blas else "")
    if np is not None:
        try:
            cfg = np.__config__
            bi = getattr(cfg, "blas_opt_info", None) or getattr(cfg, "blas_info", None)
            if bi:
                info["numpy_config_blas"] = {k: v for k, v in bi.items() if k in ("libraries", "library_dirs")}
        except Exception:
            pass
    return info


def worker(which, threads, scale, cases):
    """Times, in this process, every case named in `cases` (workloads, GEMM cases and, for
    PyTorch, models) that `which` implements; prints one JSON object."""
    import numpy as np
    out = {"framework": which, "env_dropped_check": {k: os.environ.get(k) for k in BLAS_ENV_DROP},
           "coretype_env": os.environ.get("OPENBLAS_CORETYPE")}
    if which == "torch":
        import torch
        torch.set_num_threads(threads)
        fns = _torch_fns(torch)
        conv = lambda a: torch.from_numpy(a)  # noqa: E731
        out["version"] = torch.__version__
        out["threads"] = torch.get_num_threads()
        cfg = torch.__config__.show()
        m = re.search(r"BLAS_INFO=([^,]*)", cfg)
        out["torch_blas_info"] = m.group(1) if m else "?"
        m = re.search(r"CPU capability usage: (\S+)", cfg)
        out["torch_cpu_capability"] = m.group(1) if m else "?"
        ctx = torch.no_grad()
    else:
        fns = _numpy_fns(np)
        conv = lambda a: a  # noqa: E731
        out["version"] = np.__version__
        out["threads"] = 1  # NumPy's own loops are single-threaded; BLAS threads below
        import contextlib
        ctx = contextlib.nullcontext()
    results = {}
    with ctx:
        for w in WORKLOADS:
            if w["name"] not in cases:
                continue
            fn = fns[w.get("math", w["name"])]
            if fn is None:
                results[w["name"]] = {"na": "NumPy has no erf"}
                continue
            args = [conv(a) for a in _inputs(w, np)]
            reps = max(3, int(round(w["reps"] * scale)))  # run_tdslc_bench's count, and its warm-up
            results[w["name"]] = _time_calls(fn, args, halide_work.warmup_for(reps), reps)
            del args
        # the BLAS reference: matmul 1024² (always measured, `only` or not)
        if "matmul" not in results:
            w = next(w for w in WORKLOADS if w["name"] == "matmul")
            args = [conv(a) for a in _inputs(w, np)]
            results["matmul"] = _time_calls(fns["matmul"], args, 2, max(3, int(round(10 * scale))))
        # the GEMM table, on the inputs tdslc bench draws
        for c in GEMM_CASES:
            if c["name"] not in cases:
                continue
            f = GEMM_FORMS[c["op"]][2 if which == "torch" else 1]
            args = [conv(a) for a in tdslc_inputs([s for _, s in c["params"]], np)]
            reps = max(1, int(round(c["reps"] * scale)))
            results[c["name"]] = _time_calls(f, args, halide_work.warmup_for(reps), reps, TIME_BUDGET_S)
            del args
        # the models: eager torch.nn.Modules, on the inputs and weights tdslc bench draws
        if which == "torch":
            for md in MODELS:
                if md["name"] not in cases:
                    continue
                arrays = dict(zip([p[0] for p in md["params"]], tdslc_inputs(param_shapes(md), np)))
                mod, ins = model_ref.load(md, arrays)
                reps = max(1, int(round(md["reps"] * scale)))
                results[md["name"]] = _time_calls(mod, ins, halide_work.warmup_for(reps), reps, TIME_BUDGET_S)
                del mod, ins, arrays
            for md in WHOLE:  # the whole models, likewise (one call can take seconds: the budget cuts reps)
                if md["name"] not in cases:
                    continue
                arrays = dict(zip([p[0] for p in md["params"]], tdslc_inputs(param_shapes(md), np)))
                in_bytes = sum(a.nbytes for a in arrays.values())
                mod, ins = whole_ref.load(md, arrays)
                del arrays
                reps = max(1, int(round(md["reps"] * scale)))
                r, peak = _peak_while(lambda: _time_calls(mod, ins, halide_work.warmup_for(reps), reps, WHOLE_BUDGET_S),
                                      in_bytes)
                r["peak_bytes"] = peak
                results[md["name"]] = r
                del mod, ins
        # the vector-math table: every function on the same 2^20 inputs
        vm = [n for n in vecmath.NAMES if "vm_" + n in cases]
        if vm:
            x = conv(vecmath.inputs(np))
            th = sys.modules.get("torch")
            for n in vm:
                v = vecmath.row(n)
                f = (lambda x, v=v: v[3](th, th.nn.functional, x)) if which == "torch" else \
                    (lambda x, v=v: v[2](np, x)) if v[2] else None
                if f is None:
                    results["vm_" + n] = {"na": "NumPy has no erf"}
                    continue
                reps = max(3, int(round(vecmath.REPS * scale)))
                results["vm_" + n] = _time_calls(f, [x], halide_work.warmup_for(reps), reps)
    out["results"] = results
    out["blas"] = _blas_info(np)
    print(json.dumps(out))


def halide_one_worker(name, variant, threads, scale, rounds):
    """One Halide variant of one workload (bench/halide_work.py), on the inputs NumPy and
    PyTorch time: compiled, checked, timed; prints its JSON."""
    import numpy as np
    w = next(w for w in WORKLOADS if w["name"] == name)
    reps = max(3, int(round(w["reps"] * scale)))  # run_tdslc_bench's count, and its warm-up
    r = halide_work.one(name, variant, _inputs(w, np), threads, halide_work.warmup_for(reps), reps, rounds)
    print(json.dumps(r))


def blasprobe_worker():
    """NumPy's matmul 1024² (f32), best of 10 after 3 warm-ups, and the OpenBLAS kernels that
    ran: one probe of one OPENBLAS_CORETYPE (set by the parent)."""
    import numpy as np
    a, b = tdslc_inputs([(1024, 1024), (1024, 1024)], np)
    r = _time_calls(lambda x, y: x @ y, (a, b), 3, 10)
    info = _blas_info(np)
    print(json.dumps({"coretype_env": os.environ.get("OPENBLAS_CORETYPE"), "best_ms": r["min_ms"],
                      "gflops": _mm_flops(1024, 1024, 1024) / (r["min_ms"] / 1e3) / 1e9,
                      "corename": info.get("openblas_corename"), "summary": info.get("summary")}))


def _npy_compare(out, ref):
    import numpy as np
    if out.shape != ref.shape:
        return {"ok": False, "error": "shape %s, expected %s" % (list(out.shape), list(ref.shape))}
    d = np.abs(out.astype(np.float64) - ref.astype(np.float64))
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    err_abs = float(d.max()) if d.size else 0.0
    err_rel = err_abs / scale if scale > 0 else err_abs
    ok = math.isfinite(err_rel) and err_rel <= CHECK_TOL  # a NaN where the reference has none fails
    return {"ok": ok, "err_abs": err_abs, "err_rel": err_rel, "tol": CHECK_TOL}


def dim_args(dims):
    return [a for k, v in sorted((dims or {}).items()) for a in ("--dim", "%s=%d" % (k, v))]


def fn_params(path, fn):
    """The parameter names of `fn NAME(a: f32[...], b: ...)` in a .tdsl file, in order."""
    with open(path, encoding="utf-8") as f:
        m = re.search(r"^fn %s\(([^)]*)\)" % re.escape(fn), f.read(), re.M)
    if not m:
        raise ValueError("%s: no fn %s" % (path, fn))
    return re.findall(r"(\w+)\s*:", re.sub(r"\[[^\]]*\]", "", m.group(1)))


def workload_ref(w, xs, np):
    """A workload's result in f64 from NumPy, on its inputs xs (f32, promoted here); the
    GELU of gelu_linear with Python's math.erf, as NumPy has no erf."""
    xs = [x.astype(np.float64) for x in xs]
    if w["name"] == "gelu_linear":
        x, wt, b = xs
        y = x @ wt.T + b
        return 0.5 * y * (1 + vecmath.erf64(np, y / math.sqrt(2)))
    return _numpy_fns(np)[w.get("math", w["name"])](*xs)


def _tdsl_check_run(tdslc, path, fn, backend, arrays, ref, workdir, dims=None):
    """`tdslc run` on the given inputs (.npy); compares out0.npy with `ref`. Also returns
    the time of the call itself (`--time`'s run stage) as an estimate for timing."""
    import numpy as np
    cmd = [tdslc, "run", path, "--fn", fn, "--backend", backend, "--time",
           "--out-dir", os.path.join(workdir, "out")] + dim_args(dims)
    for name, a in arrays.items():
        f = os.path.join(workdir, "in_%s.npy" % name)
        if not os.path.exists(f):
            np.save(f, a)
        cmd += ["--in", "%s=%s" % (name, f)]
    t0 = time.perf_counter()
    r = sh(cmd, timeout=600)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        what = {1: "compile error", 2: "bad input", 3: "run-time error", 4: "internal compiler error"}.get(
            r.returncode, "exit %d" % r.returncode)
        errs = [ln for ln in (r.stderr or "").splitlines() if ln.strip() and not ln.startswith("tdslc: time")]
        msg = errs[0].strip() if errs else first_line(r.stdout)
        return {"ok": False, "error": "%s: %s" % (what, msg), "wall_s": wall}
    res = {"wall_s": wall}
    for line in r.stderr.splitlines():
        m = re.match(r"tdslc: time\s+run\s+([\d.]+) ms", line)
        if m:
            res["run_ms"] = float(m.group(1))
    try:
        out = np.load(os.path.join(workdir, "out", "out0.npy"))
    except (OSError, ValueError) as e:
        res.update(ok=False, error="no out0.npy: %s" % e)
        return res
    res.update(_npy_compare(out, ref))
    return res


def check_worker(tdslc, workdir, cases, backends, threads):
    """Runs every selected workload, vector-math function, GEMM case and model once through
    `tdslc run` per backend and compares the result: workloads and vector math on the
    inputs NumPy and PyTorch time, with NumPy in f64 (vector_math.py's f64 reference);
    GEMM on inputs of its own (uniform in [-1, 1)) with NumPy in f64; models on the model's
    own kind of weights (see reference.check_data) with the torch.nn.Module in f32 (its own
    error against f64 is given beside)."""
    import numpy as np
    out = {}
    for w in WORKLOADS:
        if w["name"] not in cases:
            continue
        d = os.path.join(workdir, "check_" + w["name"])
        os.makedirs(d, exist_ok=True)
        path = os.path.join(BENCH, "workloads", w["file"])
        xs = _inputs(w, np)
        arrays, ref = dict(zip(fn_params(path, w["fn"]), xs)), workload_ref(w, xs, np)
        out[w["name"]] = {b: _tdsl_check_run(tdslc, path, w["fn"], b, arrays, ref, d) for b in backends}
        shutil.rmtree(d, ignore_errors=True)
        print("check %s: %s" % (w["name"], json.dumps(out[w["name"]])), file=sys.stderr, flush=True)
    vm = [n for n in vecmath.NAMES if "vm_" + n in cases]
    if vm:
        d = os.path.join(workdir, "check_vecmath")
        os.makedirs(d, exist_ok=True)
        x = vecmath.inputs(np)
        for n in vm:
            ref = vecmath.row(n)[6](np, x.astype(np.float64))
            out["vm_" + n] = {b: _tdsl_check_run(tdslc, os.path.join(BENCH, "vector_math.tdsl"), "v_" + n, b,
                                                 {"x": x}, ref, d) for b in backends}
        shutil.rmtree(d, ignore_errors=True)
    for c in GEMM_CASES:
        if c["name"] not in cases:
            continue
        res = {}
        pred = out.get(c["predict_from"] or "", {})
        need = []
        for b in backends:
            p = pred.get(b, {})
            est = p.get("run_ms") or p.get("predicted_ms")
            if est is not None:
                small = next(x for x in GEMM_CASES if x["name"] == c["predict_from"])
                est = est * c["flops"] / small["flops"]
                if est / 1e3 > PREDICT_CAP_S:
                    res[b] = {"ok": None, "predicted_ms": est,
                              "skipped": "one call would take about %.0f s (%s took %.1f s)"
                              % (est / 1e3, small["name"], p.get("run_ms", p.get("predicted_ms", 0)) / 1e3)}
                    continue
            need.append(b)
        if need:
            d = os.path.join(workdir, "check_" + c["name"])
            os.makedirs(d, exist_ok=True)
            rng = np.random.default_rng(1)
            arrays = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in c["params"]}
            a, b_ = [arrays[n].astype(np.float64) for n, _ in c["params"]]
            ref = GEMM_FORMS[c["op"]][1](a, b_)
            for b in need:
                res[b] = _tdsl_check_run(tdslc, os.path.join(BENCH, "gemm", c["file"]), c["fn"], b,
                                         arrays, ref, d)
            shutil.rmtree(d, ignore_errors=True)
        out[c["name"]] = res
    sel = [(md, model_ref) for md in MODELS if md["name"] in cases]
    sel += [(md, whole_ref) for md in WHOLE if md["name"] in cases]
    if sel:
        import torch
        torch.set_num_threads(threads)
        for md, mref in sel:
            d = os.path.join(workdir, "check_" + md["name"])
            os.makedirs(d, exist_ok=True)
            res = {}
            try:
                arrays = mref.check_data(md, np.random.default_rng(2), np)
                mod, ins = mref.load(md, arrays)
                with torch.no_grad():
                    ref = mod(*ins).numpy()
                    if md["flops"] < F64_CHECK_MAX_FLOPS:  # PyTorch's own f32 error, for scale
                        ref64 = mod.double()(*[t.double() if t.is_floating_point() else t for t in ins]).numpy()
                        res["torch_vs_f64"] = _npy_compare(ref, ref64)["err_rel"]
                del mod, ins
            except Exception as e:  # a broken twin is reported, not fatal
                out[md["name"]] = {b: {"ok": False, "error": "PyTorch model failed: %s" % e} for b in backends}
                continue
            for b in backends:
                res[b] = _tdsl_check_run(tdslc, os.path.join(BENCH, "models", md["file"]), md["fn"], b,
                                         arrays, ref, d, md.get("dims"))
            shutil.rmtree(d, ignore_errors=True)
            out[md["name"]] = res
            print("check %s: %s" % (md["name"], json.dumps(res)), file=sys.stderr, flush=True)
    print(json.dumps(out))


# ---------------------------------------------------------------------------------------
# Parent: environment, STREAM, tdslc, workers, report.
# ---------------------------------------------------------------------------------------
def clean_env(threads, coretype=""):
    env = dict(os.environ)
    for k in BLAS_ENV_DROP:
        env.pop(k, None)
    if coretype:  # an explicit choice (--blas-coretype), reported in RESULTS.md
        env["OPENBLAS_CORETYPE"] = coretype
    t = str(threads)
    env["OMP_NUM_THREADS"] = t
    env["OPENBLAS_NUM_THREADS"] = t
    env["MKL_NUM_THREADS"] = t
    env["TDSL_NUM_THREADS"] = t
    return env


T_START = time.time()


def log(msg):
    print("bench: [%4.0f s] %s" % (time.time() - T_START, msg), file=sys.stderr, flush=True)


def sh(cmd, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, **kw)
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(cmd, 127, "", str(e))


def first_line(s):
    s = (s or "").strip()
    return s.splitlines()[0] if s else ""


def l3_bytes():
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for idx in os.listdir(base):
            try:
                with open(os.path.join(base, idx, "size")) as f:
                    s = f.read().strip()
                v = int(re.match(r"(\d+)", s).group(1)) * {"K": 1024, "M": 1 << 20, "G": 1 << 30}.get(s[-1], 1)
                best = max(best, v)
            except (OSError, AttributeError, ValueError):
                pass
    except OSError:
        pass
    return best


def run_stream(env, workdir):
    exe = os.path.join(workdir, "stream")
    cc = sh(["cc", "-O3", "-march=native", "-fopenmp", os.path.join(BENCH, "stream.c"), "-o", exe])
    if cc.returncode != 0:
        return {"error": "cc failed: " + first_line(cc.stderr)}
    llc = l3_bytes()
    array_bytes = max(80 * 1000 * 1000, llc)  # each array >= 80 MB and >= the LLC: 3 arrays >> cache
    n = array_bytes // 8
    r = sh([exe, str(n), "10"], env=env, timeout=300)
    if r.returncode != 0:
        return {"error": "stream failed: " + first_line(r.stderr or r.stdout)}
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["llc_bytes"] = llc
    # The same copy over two arrays of the memory workloads' own size (64 MiB), kept from
    # call to call as theirs are: such a problem may stay in a large LLC (480 MB on the
    # Sapphire Rapids VM, where this copy ran at 34-36 GB/s against 21-24 over the arrays
    # above). The memory workloads are rated against the higher of the two (mem_bar), so
    # none gets its share from a copy slower than one of its own bytes.
    ws = max(math.prod(s) * F32 for w in WORKLOADS if w["kind"] == "memory" for s in w["inputs"])
    r = sh([exe, str(ws // 8), "10", "copy"], env=env, timeout=300)
    if r.returncode == 0:
        same = json.loads(r.stdout.strip().splitlines()[-1])
        res["copy_same"] = {k: same[k] for k in ("array_bytes", "copy_gbps", "check")}
    else:
        res["copy_same"] = {"error": "stream copy failed: " + first_line(r.stderr or r.stdout)}
    return res


def mem_bar(st):
    """The copy bandwidth the memory workloads are rated against: the higher of STREAM's
    copy over arrays past the LLC and the copy of two arrays of their own size."""
    bars = [st.get("copy_gbps"), (st.get("copy_same") or {}).get("copy_gbps")]
    return max((b for b in bars if b), default=None)


def build_peak(workdir):
    exe = os.path.join(workdir, "peak")
    cc = sh(["cc", "-O3", "-march=native", "-fopenmp", os.path.join(BENCH, "peak.c"), "-o", exe])
    return exe if cc.returncode == 0 else {"error": "cc failed: " + first_line(cc.stderr)}


def run_peak(exe, env, threads, kept):
    """One measurement of bench/peak.c (about 2 s), merged into `kept`: every rate keeps its
    best over the rounds, as STREAM keeps its best of 10 (another tenant taking a core
    during one measurement would otherwise set the bar low)."""
    if isinstance(exe, dict):
        return exe
    r = sh([exe, str(threads), "5"], env=env, timeout=300)
    if r.returncode != 0:
        return kept or {"error": "peak failed: " + first_line(r.stderr or r.stdout)}
    new = json.loads(r.stdout.strip().splitlines()[-1])
    new["measurements"] = 1
    if not kept or "error" in kept:
        return new
    out = dict(kept)
    out["measurements"] = kept.get("measurements", 1) + 1
    for k in ("f32_1t_gflops", "f32_gflops", "f64_1t_gflops", "f64_gflops"):
        if new.get(k, 0) > kept.get(k, 0):
            out[k] = new[k]
            isa = {"f32_gflops": "f32_isa", "f64_gflops": "f64_isa"}.get(k)
            if isa:
                out[isa] = new[isa]
    runs = {(x["isa"], x["dtype"], x["threads"]): x for x in kept.get("runs", [])}
    for x in new.get("runs", []):
        key = (x["isa"], x["dtype"], x["threads"])
        if key not in runs or x["gflops"] > runs[key]["gflops"]:
            runs[key] = x
    out["runs"] = list(runs.values())
    return out


def tdslc_bench(tdslc, path, fn, backend, reps, env, dims=None):
    cmd = [tdslc, "bench", path, "--fn", fn, "--backend", backend, "--reps", str(reps), "--json"] + dim_args(dims)
    t0 = time.perf_counter()
    r = sh(cmd, env=env, timeout=900)
    wall = time.perf_counter() - t0
    if r.returncode == 2 and "not supported yet" in (r.stderr + r.stdout):
        return {"na": "tdslc bench: not supported yet"}
    if r.returncode != 0:
        return {"error": "exit %d: %s" % (r.returncode, first_line(r.stderr) or first_line(r.stdout))}
    for line in reversed(r.stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                res = json.loads(line)
                if "median_ms" in res:
                    res["reps"] = reps
                    res["wall_s"] = wall  # the whole command: compiling included
                    return res
            except ValueError:
                pass
    return {"error": "no JSON object with median_ms in: " + first_line(r.stdout)}


def run_tdslc_bench(tdslc, w, backend, env, scale):
    reps = max(3, int(round(w["reps"] * scale)))
    return tdslc_bench(tdslc, os.path.join(BENCH, "workloads", w["file"]), w["fn"], backend, reps, env)


def check_blocks(check):
    """Why a case is not timed after its check (skipped, failed to run, wrong), as the
    round's result; None when it passed or was not checked. from_check: the check's own
    notes say why (no second note)."""
    if check is None:
        return None
    if check.get("skipped"):
        return {"skipped": check["skipped"], "from_check": True}
    if check.get("error"):
        return {"error": check["error"], "from_check": True}
    if check.get("ok") is False:
        return {"wrong": "the check failed (max rel. error %.2g)" % check.get("err_rel", float("nan")),
                "from_check": True}
    return None


def run_tdslc_case(tdslc, path, c, backend, env, scale, check, prev, budget=TIME_BUDGET_S, slow_cap=SLOW_CAP_S):
    """One round of a GEMM case or model in tdsl. Not timed when its check failed or was
    skipped, or when one call takes over SLOW_CAP_S; reps cut to TIME_BUDGET_S from the
    check's call time or the last round's median; a case whose last round already used the
    budget is not timed again (returns None: keep that round)."""
    blocked = check_blocks(check)
    if blocked:
        return blocked
    reps = max(1, int(round(c["reps"] * scale)))
    est = None
    if prev and "median_ms" in prev:
        if (prev["median_ms"] * (prev.get("reps", 1) + 1) > budget * 1e3
                or prev.get("wall_s", 0) > REPEAT_CAP_S):
            return None
        est = prev["median_ms"]
    elif check and check.get("run_ms"):
        est = check["run_ms"]
        if est > slow_cap * 1e3:
            return {"skipped": "one call takes %.1f s (the check's call): not timed" % (est / 1e3),
                    "estimate_ms": est}
    if est:
        reps = max(1, min(reps, int(budget * 1e3 / est) - 1))
    return tdslc_bench(tdslc, path, c["fn"], backend, reps, env, c.get("dims"))


def run_worker(which, env, args, cases, timeout=900):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", which,
           "--threads", str(args.threads), "--reps-scale", str(args.reps_scale),
           "--cases", ",".join(cases)]
    r = sh(cmd, env=env, timeout=timeout)
    if r.returncode != 0:
        return {"error": "worker %s failed (exit %d): %s" % (which, r.returncode,
                                                             (r.stderr or r.stdout or "").strip()[-400:])}
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "worker %s printed no JSON: %s" % (which, first_line(r.stderr) or first_line(r.stdout))}


def run_check_worker(env, args, tdslc, workdir, cases, backends):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "check",
           "--threads", str(args.threads), "--cases", ",".join(cases), "--tdslc", tdslc,
           "--workdir", workdir, "--backends", ",".join(backends)]
    r = sh(cmd, env=env, timeout=3600)
    if r.returncode != 0:
        return {"error": "check worker failed (exit %d): %s" % (r.returncode, (r.stderr or "").strip()[-400:])}
    return json.loads(r.stdout.strip().splitlines()[-1])


HALIDE_RETIME = 3.0  # from round 2 on, a Halide variant this much slower than its workload's best is not retimed


def run_halide_variant(args, env, n, v):
    """Halide variant v of workload n (bench/halide_work.py) in a process of its own (a
    crash inside Halide's generated code costs that variant): compiled, checked, timed once."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "halide", "--cases", n, "--variant", v,
           "--threads", str(args.threads), "--reps-scale", str(args.reps_scale), "--rounds", "1"]
    r = sh(cmd, env=dict(env, HL_NUM_THREADS=str(args.threads)), timeout=600)
    if r.returncode < 0:
        return {"error": "crashed (signal %d) inside Halide" % -r.returncode}
    if r.returncode != 0:
        return {"error": "exit %d: %s" % (r.returncode, (r.stderr or "").strip().splitlines()[-1:] or "")}
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "no JSON: " + first_line(r.stderr)}


def halide_round(args, env, n, kept):
    """One round of every Halide variant of workload n, run right after tdsl's calls of n in
    the same round, so that both are timed within seconds of each other (this shared VM's
    memory bandwidth changes by 2x from one minute to the next). kept: {variant: its best
    round so far}, updated. A variant that failed is not run again, nor, from round 2 on,
    one HALIDE_RETIME times slower than the best variant of n."""
    best = min((r["median_ms"] for r in kept.values() if "median_ms" in r), default=None)
    for v in ("hand",) + halide_work.AUTOSCHEDULERS:
        prev = kept.get(v)
        if prev is not None and ("median_ms" not in prev or prev["median_ms"] > HALIDE_RETIME * best):
            continue
        r = run_halide_variant(args, env, n, v)
        kept[v] = r if prev is None else best_round(prev, r)
        log("  halide %-14s %-14s %s" % (n, v, json.dumps({k: x for k, x in r.items() if k != "target"})))


def run_halide_vecmath(args, env, names):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "halide-vecmath", "--cases", ",".join(names),
           "--threads", str(args.threads), "--reps-scale", str(args.reps_scale), "--rounds", str(args.rounds)]
    r = sh(cmd, env=dict(env, HL_NUM_THREADS=str(args.threads)), timeout=900)
    if r.returncode != 0:
        return {"error": "Halide worker exit %d: %s" % (r.returncode, (r.stderr or "").strip()[-300:])}
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "no JSON: " + first_line(r.stderr)}


def run_profiles(tdslc, env, data, names, workdir):
    """`tdslc bench --profile --json` of each whole model (LLVM backend), on the bars this
    run measured (TDSL_ROOFLINE: peak.c's f32 peak, stream.c's copy bandwidth), with its
    roofline chart in build/bench/profiles/NAME.svg. Reps from the model's timed median."""
    pk, st = data.get("peak") or {}, data.get("stream") or {}
    roof = "%.4g,%.4g" % (pk.get("f32_gflops", 0), st.get("copy_gbps", 0))
    penv = dict(env)
    if pk.get("f32_gflops") and st.get("copy_gbps"):
        penv["TDSL_ROOFLINE"] = roof
    svgdir = os.path.join(ROOT, "build", "bench", "profiles")
    os.makedirs(svgdir, exist_ok=True)
    out = {}
    for md in WHOLE:
        if md["name"] not in names:
            continue
        t = med((data.get("whole", {}).get(md["name"], {}).get("tdsl") or {}).get("llvm"))
        reps = max(2, min(10, int(PROFILE_BUDGET_S * 1e3 / t))) if t else 2
        svg = os.path.join(svgdir, md["name"] + ".svg")
        cmd = [tdslc, "bench", os.path.join(BENCH, "models", md["file"]), "--fn", md["fn"], "--backend", "llvm",
               "--reps", str(reps), "--profile", "--json", "--plot", svg] + dim_args(md.get("dims"))
        r = sh(cmd, env=penv, timeout=900)
        if r.returncode != 0:
            out[md["name"]] = {"error": "exit %d: %s" % (r.returncode, first_line(r.stderr))}
        else:
            try:
                out[md["name"]] = json.loads(r.stdout)
                out[md["name"]]["svg"] = os.path.relpath(svg, ROOT)
            except ValueError:
                out[md["name"]] = {"error": "no JSON: " + first_line(r.stdout)}
        log("  profile %-16s %s" % (md["name"], out[md["name"]].get("error") or "%d kernels, %.1f ms" % (
            len(out[md["name"]].get("kernels", [])), out[md["name"]].get("mean_ms", 0))))
    return out


def probe_coretypes(args, mi):
    """NumPy's matmul 1024² with OPENBLAS_CORETYPE unset, then set to each candidate this CPU
    has the flags for; keeps the candidates OpenBLAS accepts (it reports the same core
    name) and picks the fastest of all."""
    flags = set(mi.get("cpu_flags", ()))
    probes = []
    for name, need in [("", ())] + list(CORETYPES):
        if not all(f in flags for f in need):
            continue
        env = clean_env(args.threads, name)
        r = sh([sys.executable, os.path.abspath(__file__), "--worker", "blasprobe"], env=env, timeout=120)
        try:
            p = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            probes.append({"coretype": name, "error": first_line(r.stderr) or "no output"})
            continue
        p["coretype"] = name
        core = (p.get("corename") or "")
        p["accepted"] = (not name) or core.lower() == name.lower()
        probes.append(p)
        log("  OPENBLAS_CORETYPE=%-14s -> %-12s %.1f GFLOP/s" % (name or "(unset)", core or "?", p["gflops"]))
    ok = [p for p in probes if p.get("accepted") and p.get("gflops")]
    best = max(ok, key=lambda p: p["gflops"]) if ok else None
    return {"probes": probes, "best": best["coretype"] if best else None,
            "best_corename": best.get("corename") if best else None}


def compile_latency(tdslc, env, workdir):
    src = os.path.join(ROOT, "examples", "attention.tdsl")
    obj = os.path.join(workdir, "attention.o")
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        r = sh([tdslc, src, "--emit=obj", "-o", obj], env=env)
        t = time.perf_counter() - t0
        if r.returncode != 0:
            return {"error": "exit %d: %s" % (r.returncode, first_line(r.stderr))}
        times.append(t * 1e3)
    stages = {}
    r = sh([tdslc, src, "--emit=obj", "-o", obj, "--time"], env=env)
    for line in r.stderr.splitlines():
        m = re.match(r"tdslc: time\s+(\S+)\s+([\d.]+) ms", line)
        if m:
            stages[m.group(1)] = float(m.group(2))
    return {"best_ms": min(times), "all_ms": times, "stages_ms": stages}


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def machine_info(tdslc, env):
    info = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")}
    model, flags, vendor = "?", "", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "?":
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1]
                if line.startswith("vendor_id") and not vendor:
                    vendor = line.split(":", 1)[1].strip()
    except OSError:
        pass
    info["cpu"] = model
    fl = flags.split()
    info["simd"] = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile") if f in fl)
    info["cpu_flags"] = sorted(set(fl) | ({"AuthenticAMD"} if vendor == "AuthenticAMD" else set()))
    info["cpus_online"] = os.cpu_count()
    info["cpus_usable"] = len(os.sched_getaffinity(0))
    ls = sh(["lscpu"])
    for key in ("Core(s) per socket", "Socket(s)", "Thread(s) per core", "Hypervisor vendor", "L3 cache"):
        m = re.search(r"^%s:\s*(.+)$" % re.escape(key), ls.stdout or "", re.M)
        if m:
            info[key] = m.group(1).strip()
    try:
        with open("/proc/meminfo") as f:
            info["mem_gib"] = round(int(f.readline().split()[1]) / (1 << 20), 1)
    except (OSError, ValueError, IndexError):
        pass
    info["load_start"] = loadavg()
    info["kernel"] = platform.release()
    info["python"] = platform.python_version()
    info["cc"] = first_line(sh(["cc", "--version"]).stdout)
    info["tdslc"] = first_line(sh([tdslc, "--version"], env=env).stdout) or "?"
    g = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    if g.returncode == 0:
        dirty = sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
        info["commit"] = g.stdout.strip() + (" (with uncommitted changes)" if dirty else "")
    info["env_dropped"] = [k for k in BLAS_ENV_DROP if k in os.environ]
    return info


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------
def best_round(kept, r):
    """Of two rounds' results for one implementation, the one with the lower median (a
    failed round loses): the same rule for tdsl, NumPy and PyTorch, against the moments
    when another tenant of this shared machine took the cores."""
    if not kept or "median_ms" not in kept:
        return r
    if "median_ms" not in r:
        return kept
    return r if r["median_ms"] < kept["median_ms"] else kept


def fmt_ms(r):
    if r is None:
        return "n/a"
    if "median_ms" not in r:
        return "**wrong**" if "wrong" in r else "not timed" if "skipped" in r else "n/a" if "na" in r else "error"
    m = r["median_ms"]
    return ("%.3f" if m < 1 else "%.2f" if m < 100 else "%.1f") % m


def fmt_x(v):
    return "n/a" if v is None else "%.2f×" % v if v >= 0.1 else "%.2g×" % v


def fmt_pct(v):
    return "n/a" if v is None else "%.0f%%" % (100 * v)


def med(r):
    return r["median_ms"] if r and "median_ms" in r else None


def ratio(a, b):
    return b / a if a and b else None  # speedup of `a` over `b` = time_b / time_a


def fraction(w, ms, bw_gbps, blas_gflops):
    if not ms:
        return None
    s = ms / 1e3
    if w["kind"] == "memory":
        return w["bytes"] / s / 1e9 / bw_gbps if bw_gbps else None
    return w["flops"] / s / 1e9 / blas_gflops if blas_gflops else None


def peak_widths(pk):
    parts = []
    for isa in sorted({x["isa"] for x in pk.get("runs", [])}, reverse=True):
        cells = []
        for dt in ("f32", "f64"):
            xs = sorted((x for x in pk["runs"] if x["isa"] == isa and x["dtype"] == dt), key=lambda x: x["threads"])
            cells.append(" → ".join("%.1f" % x["gflops"] for x in xs) or "?")
        parts.append("%s %s" % (isa, " / ".join(cells)))
    return "; ".join(parts)


def of_peak(flops, ms, peak_gflops):
    return flops / (ms / 1e3) / 1e9 / peak_gflops if ms and peak_gflops else None


def gflops(flops, ms):
    return flops / (ms / 1e3) / 1e9 if ms else None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def target_row(name, need, value, ok, by):
    if value is None or value == "n/a":
        return "| %s | %s | n/a | not measured |" % (name, need)
    return "| %s | %s | %s | %s |" % (name, need, value, ("**met** (%s)" if ok else "**not met** (%s)") % by)


def cell_ms(r, notes, label):
    """A time cell of the GEMM and models tables; why a cell has no time goes to notes."""
    if r is None:
        return "n/a"
    if "median_ms" in r:
        return fmt_ms(r)
    for k, text in (("wrong", "**wrong**"), ("skipped", "not timed"), ("error", "error"), ("na", "n/a")):
        if k in r:
            if not r.get("from_check"):
                notes.append("- %s: %s" % (label, r[k]))
            return text
    return "n/a"


def round_notes(name, entry, backends, rounds, notes):
    for b in backends:
        r = entry["tdsl"].get(b) or {}
        if "median_ms" in r and r.get("wall_s", 0) > REPEAT_CAP_S and rounds > 1:
            notes.append("- tdsl %s %s: one `tdslc bench` command took %.0f s (%.0f ms of it timed calls; "
                         "the rest is mostly compiling): measured in one round"
                         % ({"c": "C", "llvm": "LLVM"}[b], name, r["wall_s"],
                            r["median_ms"] * (r.get("reps", 1) + 1)))


def check_cell(c):
    if not c:
        return "—"
    if c.get("skipped"):
        return "not run"
    if c.get("error") and "err_rel" not in c:
        return "**error**"
    if c.get("ok"):
        return "ok %.1e / %.1e" % (c["err_abs"], c["err_rel"])
    return "**WRONG** %.2g / %.2g" % (c.get("err_abs", float("nan")), c.get("err_rel", float("nan")))


def check_notes(name, checks, backends, notes):
    for b in backends:
        c = checks.get(name, {}).get(b) or {}
        label = "tdsl %s %s, check" % ({"c": "C", "llvm": "LLVM"}[b], name)
        if c.get("skipped"):
            notes.append("- %s not run: %s" % (label, c["skipped"]))
        elif c.get("error"):
            notes.append("- %s: %s" % (label, c["error"]))
        elif c.get("ok") is False:
            notes.append("- %s: max abs error %.3g, max abs error / max |reference| %.3g > %.0e"
                         % (label, c.get("err_abs", float("nan")), c.get("err_rel", float("nan")), c.get("tol", CHECK_TOL)))


def gemm_impls(data):
    """(key, column label) of the GEMM table's implementations; the best OpenBLAS is the
    NumPy worker run with the fastest OPENBLAS_CORETYPE (or NumPy's own column when unset
    was fastest)."""
    ct = data.get("coretypes") or {}
    best = ct.get("best")
    impls = [("c", "tdsl C"), ("llvm", "tdsl LLVM"), ("numpy", "NumPy"), ("torch", "PyTorch")]
    if best:
        impls.append(("blas_best", "OpenBLAS %s" % best))
    elif best == "":
        impls.append(("numpy", "OpenBLAS (unset)"))
    return impls


def impl_result(entry, key):
    return entry["tdsl"].get(key) if key in ("c", "llvm") else entry.get(key)


def best_blas_ms(entry, impls):
    """The fastest BLAS time of a GEMM case: NumPy, PyTorch or OpenBLAS with the fastest core
    type (all three call the BLAS for these shapes)."""
    ts = [med(impl_result(entry, k)) for k, _ in impls if k not in ("c", "llvm")]
    ts = [t for t in ts if t]
    return min(ts) if ts else None


def report_sdpa(data, L):
    """The scaled_dot_product_attention workloads side by side: fused and unfused tdsl,
    NumPy and PyTorch (the math path), and the ratios."""
    res, backends = data["results"], data["backends"]
    pairs = [w for w in WORKLOADS if "math" in w and not w["name"].endswith("_unfused") and w["name"] in res
             and w["name"] + "_unfused" in res]
    if not pairs:
        return
    a = L.append
    a("")
    a("## scaled_dot_product_attention: fused vs unfused")
    a("")
    a("Fused: one kernel (ir/attn_tile.c); unfused: `softmax(q @ k^T * scale) @ v`, three "
      "kernels with the [L, S] scores stored. NumPy and PyTorch (1.13, no fused SDPA) run the "
      "unfused math. Ratios are time / fused time (> 1: the fused kernel is faster). Load "
      "average at the start and the end of the run: %s / %s."
      % (data["machine"].get("load_start", "?"), data["machine"].get("load_end", "?")))
    a("")
    a("| case | fused C / LLVM ms | unfused C / LLVM ms | NumPy ms | PyTorch ms | unfused / fused (C / LLVM) | PyTorch / fused (C / LLVM) | NumPy / fused (C / LLVM) |")
    a("|---|---:|---:|---:|---:|---:|---:|---:|")
    for w in pairs:
        f, u = res[w["name"]], res[w["name"] + "_unfused"]
        tf = {b: med(f["tdsl"].get(b)) for b in backends}
        tu = {b: med(u["tdsl"].get(b)) for b in backends}
        tn, tt = med(f.get("numpy")), med(f.get("torch"))
        a("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            w["what"].replace(" (fused)", ""),
            " / ".join(fmt_ms(f["tdsl"].get(b)) for b in backends),
            " / ".join(fmt_ms(u["tdsl"].get(b)) for b in backends),
            fmt_ms(f.get("numpy")), fmt_ms(f.get("torch")),
            " / ".join(fmt_x(ratio(tf[b], tu[b])) for b in backends),
            " / ".join(fmt_x(ratio(tf[b], tt)) for b in backends),
            " / ".join(fmt_x(ratio(tf[b], tn)) for b in backends)))


def report_gemm(data, L, peak, bw):
    a = L.append
    g, checks, backends = data.get("gemm") or {}, data.get("checks") or {}, data["backends"]
    if not g:
        return
    impls = gemm_impls(data)
    notes = []
    a("")
    a("## GEMM")
    a("")
    a("f32 matmuls (`bench/gemm/*.tdsl`), every operand layout written with views; NumPy and PyTorch "
      "run the same eager expression on the same inputs (the ones `tdslc bench` draws).%s Best BLAS is "
      "the fastest of the BLAS columns, case by case. Speedup = other's time / tdsl's time. "
      "Check: `tdslc run` on other inputs against NumPy in f64: max abs error / max abs error ÷ "
      "max |reference| (tolerance %.0e)."
      % (("" if len(impls) <= 4 else
          " %s repeats NumPy's column: OpenBLAS's own choice of kernels was the fastest in the probe "
          "above." % impls[-1][1] if impls[-1][0] == "numpy" else
          " %s is NumPy with the `OPENBLAS_CORETYPE` that was fastest in the probe above." % impls[-1][1]),
         CHECK_TOL))
    a("")
    cols = " | ".join("%s ms" % lab for _, lab in impls)
    a("| case | shape | %s | vs PyTorch (C / LLVM) | vs NumPy (C / LLVM) | vs best BLAS (C / LLVM) | check C | check LLVM |"
      % cols)
    a("|---|---|%s---:|---:|---:|---|---|" % ("---:|" * len(impls)))
    for c in GEMM_CASES:
        if c["name"] not in g:
            continue
        e = g[c["name"]]
        t = {k: med(impl_result(e, k)) for k, _ in impls}
        cells = [cell_ms(impl_result(e, k), notes, "%s %s" % (lab, c["name"])) for k, lab in impls]
        a("| %s<br><sub>%s</sub> | %s | %s | %s | %s | %s | %s | %s |" % (
            c["name"], c["what"], c["shape"], " | ".join(cells),
            " / ".join(fmt_x(ratio(t[b], t["torch"])) for b in backends),
            " / ".join(fmt_x(ratio(t[b], t["numpy"])) for b in backends),
            " / ".join(fmt_x(ratio(t[b], best_blas_ms(e, impls))) for b in backends),
            check_cell(checks.get(c["name"], {}).get("c")), check_cell(checks.get(c["name"], {}).get("llvm"))))
        check_notes(c["name"], checks, backends, notes)
        round_notes(c["name"], e, backends, data.get("rounds", 1), notes)
    a("")
    a("Rates: GFLOP/s (2·M·N·K per matrix) and the share of the f32 peak (%s GFLOP/s), in the order %s."
      % ("%.1f" % peak if peak else "not measured", " / ".join(lab for _, lab in impls)))
    a("")
    a("| case | GFLOP | GFLOP/s | % of f32 peak | reps |")
    a("|---|---:|---:|---:|---|")
    for c in GEMM_CASES:
        if c["name"] not in g:
            continue
        e = g[c["name"]]
        t = [med(impl_result(e, k)) for k, _ in impls]
        reps = [str((impl_result(e, k) or {}).get("reps", "–")) for k, _ in impls]
        a("| %s | %.3g | %s | %s | %s |" % (
            c["name"], c["flops"] / 1e9,
            " / ".join("%.0f" % gflops(c["flops"], x) if x else "n/a" for x in t),
            " / ".join(fmt_pct(of_peak(c["flops"], x, peak)) for x in t), " / ".join(reps)))
    ones = [c for c in GEMM_CASES if c["name"] in g and c.get("m") == 1]
    if ones:
        a("")
        a("M = 1 (a matrix-vector product: every call reads all of w once): GB/s of weights read "
          "(N·K·4 bytes / time) and the share of the copy bandwidth (%s GB/s), in the same order. "
          "Weights smaller than the L3 cache stay in it from one call to the next, so those rows "
          "can exceed the DRAM bandwidth." % ("%.1f" % bw if bw else "not measured"))
        a("")
        a("| case | weights MB | GB/s of weights | % of copy bandwidth |")
        a("|---|---:|---:|---:|")
        llc = (data.get("stream") or {}).get("llc_bytes") or 0
        for c in ones:
            e = g[c["name"]]
            t = [med(impl_result(e, k)) for k, _ in impls]
            a("| %s | %.1f%s | %s | %s |" % (
                c["name"], c["weight_bytes"] / MB, " (< L3)" if c["weight_bytes"] < llc else "",
                " / ".join("%.1f" % (c["weight_bytes"] / (x / 1e3) / 1e9) if x else "n/a" for x in t),
                " / ".join(fmt_pct(c["weight_bytes"] / (x / 1e3) / 1e9 / bw) if x and bw else "n/a" for x in t)))
    for k, lab in (("numpy", "NumPy"), ("torch", "PyTorch"), ("blas_best", "OpenBLAS (best core type)")):
        if "error" in (data.get(k) or {}):
            notes.append("- %s worker: %s" % (lab, data[k]["error"]))
    if notes:
        a("")
        a("Notes:")
        L.extend(notes)


def report_models(data, L, peak):
    a = L.append
    mr, checks, backends = data.get("models") or {}, data.get("checks") or {}, data["backends"]
    if not mr:
        return
    notes = []
    a("")
    a("## Models")
    a("")
    a("One block of each model (`bench/models/*.tdsl`) against the same block written as a "
      "`torch.nn.Module` (`bench/models/reference.py`), eager, under `torch.no_grad()`, with its "
      "state and inputs copied from the arrays `tdslc bench` draws. Before timing, `tdslc run` "
      "computes the block on realistic weights and inputs, compared with the module's output: max abs "
      "error / max abs error ÷ max |PyTorch| (tolerance %.0e; PyTorch's own f32 error against its f64 "
      "run is given for scale). A block that disagrees is reported as wrong and not timed. GFLOP counts "
      "the matmuls and convolutions only." % CHECK_TOL)
    a("")
    a("| model | GFLOP | tdsl C ms | tdsl LLVM ms | PyTorch ms | vs PyTorch (C / LLVM) | f32 peak: C / LLVM / PyTorch | check C | check LLVM | PyTorch f32 vs f64 |")
    a("|---|---:|---:|---:|---:|---:|---:|---|---|---:|")
    for md in MODELS:
        if md["name"] not in mr:
            continue
        e = mr[md["name"]]
        t = {k: med(impl_result(e, k)) for k in ("c", "llvm", "torch")}
        ck = checks.get(md["name"], {})
        own = ck.get("torch_vs_f64")
        a("| %s<br><sub>%s</sub> | %.3g | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            md["name"], md["what"], md["flops"] / 1e9,
            cell_ms(e["tdsl"].get("c"), notes, "tdsl C %s" % md["name"]),
            cell_ms(e["tdsl"].get("llvm"), notes, "tdsl LLVM %s" % md["name"]),
            cell_ms(e.get("torch"), notes, "PyTorch %s" % md["name"]),
            " / ".join(fmt_x(ratio(t[b], t["torch"])) for b in backends),
            " / ".join(fmt_pct(of_peak(md["flops"], t[k], peak)) for k in ("c", "llvm", "torch")),
            check_cell(ck.get("c")), check_cell(ck.get("llvm")),
            "%.1e" % own if own is not None else "n/a"))
        check_notes(md["name"], checks, backends, notes)
        round_notes(md["name"], e, backends, data.get("rounds", 1), notes)
    if notes:
        a("")
        a("Notes:")
        L.extend(notes)


def report_targets12(data, L, peak, bw):
    a = L.append
    g, mr, backends = data.get("gemm") or {}, data.get("models") or {}, data["backends"]
    if not g and not mr:
        return
    impls = gemm_impls(data)
    a("")
    a("## Targets (issue 12)")
    a("")
    a("| target | required | measured | status |")
    a("|---|---|---|---|")
    for b in backends:
        label = {"c": "C", "llvm": "LLVM"}[b]
        for op in ("nn", "nt", "tn", "tt"):
            n = "%s_1024" % op
            if n not in g:
                continue
            e = g[n]
            tb = med(e["tdsl"].get(b))
            f = of_peak(2 * 1024 ** 3, tb, peak)
            x = ratio(tb, best_blas_ms(e, impls))
            need = "≥ 70% of f32 peak and ≥ 1.50× the best BLAS"
            if f is None:
                r = e["tdsl"].get(b) or {}
                why = next((k for k in ("wrong", "error", "skipped") if k in r), None)
                L.append("| %s matmul 1024² `%s` | %s | %s | %s |" % (
                    label, GEMM_FORMS[op][0], need, why or "n/a",
                    "**not met** (%s)" % why if why else "not measured"))
                continue
            L.append(target_row("%s matmul 1024² `%s`" % (label, GEMM_FORMS[op][0]), need,
                                "%s of peak, %s" % (fmt_pct(f), fmt_x(x)),
                                f >= 0.70 and x is not None and x >= 1.5,
                                "%+.0f points, %s the required" % (100 * (f - 0.70), fmt_x(x / 1.5) if x else "n/a")))
        lin = [c for c in GEMM_CASES if c["name"] in g and c["group"] == "gemm_linear"]
        big = [c for c in lin if c["m"] >= 8]
        if big:
            sp = [(ratio(med(g[c["name"]]["tdsl"].get(b)), med(g[c["name"]].get("torch"))), c["name"]) for c in big]
            if all(x for x, _ in sp):
                lo, lon = min(sp)
                k = sum(1 for x, _ in sp if x >= 1.2)
                L.append(target_row("%s nn.Linear `x @ w.t()`, M ≥ 8, vs PyTorch (slowest of %d shapes)" % (label, len(sp)),
                                    "≥ 1.20×", "%s (%s); %d of %d met" % (fmt_x(lo), lon, k, len(sp)), lo >= 1.2,
                                    "%s the required" % fmt_x(lo / 1.2)))
            else:
                L.append(target_row("%s nn.Linear M ≥ 8 vs PyTorch" % label, "≥ 1.20×", None, False, ""))
        ones = [c for c in lin if c["m"] == 1]
        if ones:
            fr = []
            for c in ones:
                tb = med(g[c["name"]]["tdsl"].get(b))
                fr.append((c["weight_bytes"] / (tb / 1e3) / 1e9 / bw if tb and bw else None, c["name"]))
            if all(x for x, _ in fr):
                lo, lon = min(fr)
                L.append(target_row("%s nn.Linear M = 1: weights / time, share of copy bandwidth (lowest of %d)"
                                    % (label, len(fr)), "≥ 80%", "%s (%s)" % (fmt_pct(lo), lon), lo >= 0.8,
                                    "%+.0f points" % (100 * (lo - 0.8))))
            else:
                L.append(target_row("%s nn.Linear M = 1: share of copy bandwidth" % label, "≥ 80%", None, False, ""))
        if mr:
            sp = []
            for md in MODELS:
                if md["name"] in mr:
                    e = mr[md["name"]]
                    sp.append((ratio(med(e["tdsl"].get(b)), med(e.get("torch"))), md["name"],
                               "wrong" in (e["tdsl"].get(b) or {})))
            if all(x for x, _, _ in sp):
                lo, lon, _ = min(sp)
                L.append(target_row("%s every model block vs PyTorch eager (slowest of %d)" % (label, len(sp)),
                                    "≥ 1.00×", "%s (%s)" % (fmt_x(lo), lon), lo >= 1.0, "%s the required" % fmt_x(lo)))
                gm = geomean([x for x, _, _ in sp])
                L.append(target_row("%s geometric mean over the model blocks vs PyTorch eager" % label,
                                    "≥ 2.00×", fmt_x(gm), gm >= 2.0, "%s the required" % fmt_x(gm / 2.0)))
            else:
                wrong = [n for x, n, w in sp if w]
                bad = [n for x, n, w in sp if not x and not w]
                why = "; ".join(p for p in ("wrong: " + ", ".join(wrong) if wrong else "",
                                            "not timed: " + ", ".join(bad) if bad else "") if p)
                L.append("| %s every model block vs PyTorch eager | ≥ 1.00× | %s | **not met** (%s) |"
                         % (label, why, "wrong" if wrong else "not timed"))
                L.append(target_row("%s geometric mean over the model blocks vs PyTorch eager" % label,
                                    "≥ 2.00×", None, False, ""))


def report(data, path):
    mi, st, res = data["machine"], data["stream"], data["results"]
    npw, thw = data["numpy"], data["torch"]
    bw = st.get("copy_gbps")
    ref = data.get("blas_ref") or {k: (w.get("results") or {}).get("matmul") for k, w in (("numpy", npw), ("torch", thw))}
    blas_np, blas_th = med(ref.get("numpy")), med(ref.get("torch"))
    mmf = next(w for w in WORKLOADS if w["name"] == "matmul")["flops"]
    gf = {k: (mmf / (v / 1e3) / 1e9 if v else None) for k, v in (("NumPy", blas_np), ("PyTorch", blas_th))}
    best_blas_name = max((k for k in gf if gf[k]), key=lambda k: gf[k], default=None)
    blas_gflops = gf[best_blas_name] if best_blas_name else None
    backends = data["backends"]
    L = []
    a = L.append
    a("# tdsl benchmark results")
    a("")
    a("Written by `make bench` (`bench/run.py`); what each number means: `bench/README.md`.")
    a("Every number below was measured in the same run, on the machine described at the end.")
    a("Times are the median over the repetitions of one call, in milliseconds; each call")
    a("allocates its outputs. Every implementation was measured in %d interleaved rounds and"
      % data.get("rounds", 1))
    a("keeps its best round's median (the bandwidth bar is STREAM's best of 10 likewise).")
    a("Machines are noisy: treat differences under ~10% as noise.")
    a("")
    a("## Bars")
    a("")
    if "error" in st:
        a("- Memory bandwidth: **not measured** (%s)" % st["error"])
    else:
        same = st.get("copy_same") or {}
        a("- Memory bandwidth (STREAM-style, %d threads, 3 arrays of %.0f MB, best of %d): "
          "**copy %.1f GB/s**, triad %.1f GB/s; the copy over 2 arrays of the memory workloads' own %.0f MB "
          "(kept from call to call, as theirs): %s. Memory-bound workloads are compared with the higher "
          "copy (**%.1f GB/s**), the Linear and roofline figures with the first."
          % (st["threads"], st["array_bytes"] / MB, st["reps"], st["copy_gbps"], st["triad_gbps"],
             same.get("array_bytes", 0) / MB,
             "%.1f GB/s" % same["copy_gbps"] if "copy_gbps" in same else same.get("error", "not measured"),
             mem_bar(st)))
    if blas_gflops:
        a("- Best BLAS matmul 1024² (f32): **%.1f GFLOP/s** (%s; NumPy %s, PyTorch %s). "
          "Compute-bound workloads are compared with it."
          % (blas_gflops, best_blas_name,
             "%.1f" % gf["NumPy"] if gf["NumPy"] else "n/a",
             "%.1f" % gf["PyTorch"] if gf["PyTorch"] else "n/a"))
    else:
        a("- Best BLAS matmul: **not measured**")
    pk = data.get("peak") or {}
    peak = pk.get("f32_gflops")
    if "error" in pk:
        a("- Peak FLOP/s: **not measured** (%s)" % pk["error"])
    elif peak:
        a("- Peak FLOP/s (`bench/peak.c`: independent FMA chains in registers, best of %d × %d "
          "measurements): **f32 %.1f GFLOP/s** with %d threads (%.1f on 1), f64 %.1f (%.1f on 1). "
          "Every compute-bound row also gives its share of the f32 peak with %d threads."
          % (pk.get("reps", 0), pk.get("measurements", 1), peak, pk.get("threads", 0),
             pk.get("f32_1t_gflops", 0), pk.get("f64_gflops", 0), pk.get("f64_1t_gflops", 0),
             pk.get("threads", 0)))
        a("  Per vector width (f32 / f64 GFLOP/s, 1 thread → %d threads): %s."
          % (pk.get("threads", 0), peak_widths(pk)))
        if pk.get("f32_gflops", 0) < pk.get("threads", 1) * pk.get("f32_1t_gflops", 0) * 0.8:
            a("  **Note:** %d threads reached less than 80%% of %d × the 1-thread rate: another process "
              "probably held a core in every measurement, and the bar is low." % (pk["threads"], pk["threads"]))
    ct = data.get("coretypes")
    if ct:
        a("- OpenBLAS core types (NumPy matmul 1024², best of 10; `OPENBLAS_CORETYPE` → kernels that ran: "
          "GFLOP/s): " + ", ".join(
              "%s → %s: %s" % (p["coretype"] or "unset", p.get("corename") or "?",
                               ("%.1f" % p["gflops"]) if p.get("gflops") else p.get("error", "n/a"))
              + ("" if p.get("accepted", True) else " (not accepted)")
              for p in ct["probes"])
          + ". Fastest: **%s**." % (("OPENBLAS_CORETYPE=" + ct["best"]) if ct.get("best")
                                   else "unset (OpenBLAS's own choice)" if ct.get("best") == ""
                                   else "none"))
    blas_sum = [w.get("blas", {}).get("summary") for w in (npw, thw)]
    a("- BLAS that ran: NumPy → %s; PyTorch → %s (torch BLAS_INFO=%s)."
      % (blas_sum[0] or "?", blas_sum[1] or "?", thw.get("torch_blas_info", "?")))
    if any(s and s.startswith("reference BLAS") for s in blas_sum):
        a("  **Warning:** the reference (netlib) BLAS is not an optimized BLAS; the matmul")
        a("  bar it sets is far below what OpenBLAS reaches on this CPU, so the compute-bound")
        a("  fractions and the matmul target are not meaningful until OpenBLAS is installed")
        a("  (Debian: `libopenblas0-pthread`, which becomes `libblas.so.3` by update-alternatives).")
    if any(s and "(Prescott kernels)" in s for s in blas_sum) and "avx512f" in mi.get("simd", ""):
        a("  **Warning:** OpenBLAS runs its Prescott (generic SSE3) kernels on this AVX-512 CPU:")
        a("  this OpenBLAS build does not know the CPU model and fell back. The BLAS bar is then")
        a("  several times below what OpenBLAS can reach here; `--blas-coretype SkylakeX` (or")
        a("  `Cooperlake`) picks the AVX-512 kernels explicitly (a choice shown below).")
    a("")
    speed_th = {b: [] for b in backends}
    if res:
        a("## Workloads")
        a("")
        a("tdsl columns: `tdslc bench --json` with the C backend / the LLVM backend. "
          "Speedup = other's time / tdsl's time (> 1: tdsl is faster). "
          "Bar = the fraction of the copy bandwidth (memory-bound: bytes moved / time, against the higher copy "
          "of the Bars) or of "
          "the best BLAS GFLOP/s (compute-bound: FLOPs / time) that each implementation reached.")
        a("")
        a("| workload | bound | tdsl C ms | tdsl LLVM ms | NumPy ms | PyTorch ms | vs PyTorch (C / LLVM) | vs NumPy (C / LLVM) | bar: C / LLVM / NumPy / PyTorch | f32 peak: C / LLVM / NumPy / PyTorch |")
        a("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for w in WORKLOADS:
            n = w["name"]
            if n not in res:
                continue
            r = res[n]
            t = {b: med(r["tdsl"].get(b)) for b in backends}
            tn, tt = med(r.get("numpy")), med(r.get("torch"))
            for b in backends:
                if w.get("target", True):
                    speed_th[b].append(ratio(t[b], tt))
            a("| %s<br><sub>%s</sub> | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                n, w["what"], w["kind"],
                fmt_ms(r["tdsl"].get("c")), fmt_ms(r["tdsl"].get("llvm")),
                fmt_ms(r.get("numpy")), fmt_ms(r.get("torch")),
                " / ".join(fmt_x(ratio(t[b], tt)) for b in backends),
                " / ".join(fmt_x(ratio(t[b], tn)) for b in backends),
                " / ".join(fmt_pct(fraction(w, x, mem_bar(st), blas_gflops)) for x in (t["c"], t["llvm"], tn, tt)),
                " / ".join(fmt_pct(of_peak(w["flops"], x, peak)) for x in (t["c"], t["llvm"], tn, tt))
                if w["kind"] == "compute" else "—"))
        a("")
        a("Bytes and FLOPs per call (the harness's counts: every input read once, every output "
          "written once; see README), and each backend's check: `tdslc run` on the inputs NumPy and "
          "PyTorch time, against NumPy in f64 (gelu_linear's erf: Python's math.erf), max |error| / "
          "max |error| ÷ max |reference| (at most %.0e; a workload that fails its check is not timed):"
          % CHECK_TOL)
        a("")
        a("| workload | MB moved | MFLOP | NumPy min–max ms | PyTorch min–max ms | reps | check C | check LLVM |")
        a("|---|---:|---:|---:|---:|---:|---|---|")
        for w in WORKLOADS:
            n = w["name"]
            if n not in res:
                continue
            r = res[n]
            rng = lambda x: "%.3g–%.3g" % (x["min_ms"], x["max_ms"]) if x and "min_ms" in x else "n/a"  # noqa: E731
            reps = (r.get("torch") or r.get("numpy") or {}).get("reps", "?")
            ck = (data.get("checks") or {}).get(n, {})
            a("| %s | %.2f | %.2f | %s | %s | %s | %s | %s |" % (n, w["bytes"] / MB, w["flops"] / 1e6,
                                                               rng(r.get("numpy")), rng(r.get("torch")), reps,
                                                               check_cell(ck.get("c")), check_cell(ck.get("llvm"))))
        notes = []
        for w in WORKLOADS:
            n = w["name"]
            if n not in res:
                continue
            check_notes(n, data.get("checks") or {}, backends, notes)
            for b in backends:
                x = res[n]["tdsl"].get(b) or {}
                if "error" in x:
                    notes.append("- tdsl %s on %s: %s" % (b, n, x["error"]))
                elif "bytes" in x and x["bytes"] and abs(x["bytes"] - w["bytes"]) > 0.01 * w["bytes"]:
                    notes.append("- tdsl %s on %s: `tdslc bench` counts %d bytes, the harness %d "
                                 "(the table uses the harness's count)" % (b, n, x["bytes"], w["bytes"]))
        nas = sorted({x["na"] for r in res.values() for x in r["tdsl"].values() if x and "na" in x})
        for e in ("numpy", "torch"):
            if "error" in data[e]:
                notes.append("- %s: %s" % (e, data[e]["error"]))
        if nas or notes:
            a("")
            a("Notes:")
            for s in nas:
                a("- tdsl columns are n/a: %s (`build/tdslc bench` exited 2)." % s)
            L.extend(notes)

    report_sdpa(data, L)
    report_gemm(data, L, peak, bw)
    report_models(data, L, peak)
    me = sys.modules[__name__]
    report27.halide_table(data, L, me)
    report27.vecmath_table(data, L, me)
    report27.whole_table(data, L, me)
    report27.profiles_section(data, L, me)

    # targets
    a("")
    a("## Targets (issue 6)")
    a("")
    a("| target | required | measured | status |")
    a("|---|---|---|---|")
    for b in backends:
        label = {"c": "C", "llvm": "LLVM"}[b]
        for w in WORKLOADS:
            if w["kind"] != "memory" or w["name"] not in res:
                continue
            f = fraction(w, med(res[w["name"]]["tdsl"].get(b)), mem_bar(st), blas_gflops)
            L.append(target_row("%s %s: share of copy bandwidth" % (label, w["name"]), "≥ 70%",
                                fmt_pct(f), f is not None and f >= 0.70,
                                "%+.0f points" % (100 * (f - 0.70)) if f is not None else ""))
        if "matmul" in res:
            w = next(w for w in WORKLOADS if w["name"] == "matmul")
            f = fraction(w, med(res["matmul"]["tdsl"].get(b)), bw, blas_gflops)
            L.append(target_row("%s matmul 1024²: share of best BLAS GFLOP/s" % label, "≥ 50%",
                                fmt_pct(f), f is not None and f >= 0.50,
                                "%+.0f points" % (100 * (f - 0.50)) if f is not None else ""))
        for n in ("mlp", "attention"):
            if n in res:
                s = ratio(med(res[n]["tdsl"].get(b)), med(res[n].get("torch")))
                L.append(target_row("%s %s vs PyTorch" % (label, n), "≥ 1.00×", fmt_x(s),
                                    s is not None and s >= 1.0,
                                    "%.2f× the required" % s if s else ""))
        sp = speed_th[b]
        if sp and all(sp):
            g = geomean(sp)
            L.append(target_row("%s geometric mean speedup over PyTorch (%d workloads)" % (label, len(sp)),
                                "≥ 1.50×", fmt_x(g), g >= 1.5, "%.2f× the required" % (g / 1.5)))
            lo = min(sp)
            L.append(target_row("%s slowest workload vs PyTorch" % label, "≥ 0.50×", fmt_x(lo),
                                lo >= 0.5, "%.2f× the required" % (lo / 0.5)))
        elif res:
            L.append(target_row("%s geometric mean speedup over PyTorch" % label, "≥ 1.50×", None, False, ""))
            L.append(target_row("%s slowest workload vs PyTorch" % label, "≥ 0.50×", None, False, ""))
    cl = data["compile"]
    if "best_ms" in cl:
        L.append(target_row("compile examples/attention.tdsl to an object (best of 5, wall)", "≤ 50 ms",
                            "%.1f ms" % cl["best_ms"], cl["best_ms"] <= 50,
                            "%.2f× the limit" % (cl["best_ms"] / 50)))
        if cl.get("stages_ms"):
            a("")
            a("Compile stages (`--time`, one run): " + ", ".join(
                "%s %.1f ms" % (k, v) for k, v in cl["stages_ms"].items()))
    else:
        L.append(target_row("compile examples/attention.tdsl to an object", "≤ 50 ms", None, False, ""))
        a("")
        a("Compile latency: %s" % cl.get("error"))
    report_targets12(data, L, peak, bw)
    report27.targets(data, L, me)
    # why the missed targets are missed: written by hand in bench/GAPS.md, kept with the numbers
    gaps = os.path.join(ROOT, "bench", "GAPS.md")
    if os.path.exists(gaps):
        a("")
        with open(gaps, encoding="utf-8") as f:
            L.extend(f.read().rstrip("\n").split("\n"))

    a("")
    a("## Machine")
    a("")
    a("| | |")
    a("|---|---|")
    a("| date | %s |" % mi["date"])
    a("| CPU | %s (%s) |" % (mi["cpu"], mi.get("simd", "")))
    a("| cores | %s online, %s usable; %s socket(s) × %s core(s) × %s thread(s)%s |" % (
        mi["cpus_online"], mi["cpus_usable"], mi.get("Socket(s)", "?"), mi.get("Core(s) per socket", "?"),
        mi.get("Thread(s) per core", "?"),
        "; virtualized (%s)" % mi["Hypervisor vendor"] if mi.get("Hypervisor vendor") else ""))
    a("| L3 / memory | %s / %s GiB |" % (mi.get("L3 cache", "?"), mi.get("mem_gib", "?")))
    a("| threads used | %d (stream: OMP_NUM_THREADS; tdsl: TDSL_NUM_THREADS; PyTorch: set_num_threads; "
      "BLAS: OPENBLAS_NUM_THREADS; NumPy's own loops are single-threaded) |" % data["threads"])
    a("| kernel / Python | %s / %s |" % (mi["kernel"], mi["python"]))
    a("| C compiler | %s |" % mi["cc"])
    a("| tdslc | %s, commit %s |" % (mi["tdslc"], mi.get("commit", "?")))
    a("| NumPy | %s; BLAS: %s |" % (npw.get("version", "?"), npw.get("blas", {}).get("summary", "?")))
    if data.get("blas_best", {}).get("blas"):
        a("| OpenBLAS, fastest core type | NumPy with OPENBLAS_CORETYPE=%s (GEMM table only); BLAS: %s |" % (
            data["blas_best"].get("coretype_env"), data["blas_best"]["blas"].get("summary", "?")))
    a("| PyTorch | %s (CPU capability %s, %s threads); BLAS: %s |" % (
        thw.get("version", "?"), thw.get("torch_cpu_capability", "?"), thw.get("threads", "?"),
        thw.get("blas", {}).get("summary", "?")))
    envs = ("removed %s (set in the caller's environment) for every timed process" % ", ".join(mi["env_dropped"])
            if mi["env_dropped"] else "OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE were not set (they are removed when set)")
    if data.get("blas_coretype"):
        envs += "; then OPENBLAS_CORETYPE=%s set on purpose (--blas-coretype)" % data["blas_coretype"]
    a("| environment | %s |" % envs)
    a("| load average (1, 5, 15 min) | %s at the start, %s at the end (other work on the machine "
      "skews every number; %d CPUs) |" % (mi.get("load_start", "?"), mi.get("load_end", "?"), mi["cpus_online"]))
    a("| harness run time | %.0f s |" % data["elapsed_s"])
    a("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tdslc", default=os.path.join(ROOT, "build", "tdslc"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps-scale", type=float, default=1.0,
                    help="multiply every case's repetition count (e.g. 0.3 for a quick run)")
    ap.add_argument("--only", default="",
                    help="comma-separated names of workloads, GEMM cases or models, or groups: "
                         "workloads, gemm, gemm_square, gemm_linear, gemm_attention, models")
    ap.add_argument("--rounds", type=int, default=3,
                    help="measure every implementation this many times, interleaved; keep each one's "
                         "best median")
    ap.add_argument("--out", default=os.path.join(BENCH, "RESULTS.md"))
    ap.add_argument("--json-out", default=os.path.join(ROOT, "build", "bench", "results.json"))
    ap.add_argument("--blas-coretype", default="",
                    help="set OPENBLAS_CORETYPE to this for every timed process (default: unset)")
    ap.add_argument("--report-only", action="store_true",
                    help="measure nothing: rewrite --out from the numbers in --json-out (after editing GAPS.md)")
    ap.add_argument("--worker", choices=("numpy", "torch", "blasprobe", "check", "halide", "halide-vecmath"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--variant", default="hand", help=argparse.SUPPRESS)
    ap.add_argument("--cases", default="", help=argparse.SUPPRESS)
    ap.add_argument("--workdir", default="", help=argparse.SUPPRESS)
    ap.add_argument("--backends", default="c,llvm", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.report_only:
        with open(args.json_out) as f:
            report(json.load(f), args.out)
        log("wrote %s from %s" % (os.path.relpath(args.out, ROOT), os.path.relpath(args.json_out, ROOT)))
        return 0
    if args.worker:
        cases = set(x for x in args.cases.split(",") if x)
        if args.worker == "blasprobe":
            blasprobe_worker()
        elif args.worker == "check":
            check_worker(args.tdslc, args.workdir, cases, args.backends.split(","), args.threads)
        elif args.worker == "halide":
            halide_one_worker(sorted(cases)[0], args.variant, args.threads, args.reps_scale, args.rounds)
        elif args.worker == "halide-vecmath":
            import json as _j
            names = [n for n in vecmath.NAMES if "vm_" + n in cases]
            print(_j.dumps(vecmath.halide_worker(names, args.threads, args.reps_scale, args.rounds)))
        else:
            worker(args.worker, args.threads, args.reps_scale, cases)
        return 0
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    S = select([x for x in args.only.split(",") if x])
    sel_w, sel_g, sel_m, sel_x, sel_v = S["w"], S["g"], S["m"], S["x"], S["v"]
    if S["unknown"]:
        ap.error("unknown workload(s), case(s) or group(s): %s" % ", ".join(S["unknown"]))

    t_start = time.time()
    env = clean_env(args.threads, args.blas_coretype)
    tdslc = os.path.abspath(args.tdslc)
    if not os.access(tdslc, os.X_OK):
        log("%s not found: build it first (make build)" % tdslc)
        return 1
    workdir = tempfile.mkdtemp(prefix="tdsl-bench-")
    try:
        data = {"threads": args.threads, "backends": ["c", "llvm"], "blas_coretype": args.blas_coretype}
        backends = data["backends"]
        data["machine"] = mi = machine_info(tdslc, env)
        log("memory bandwidth (bench/stream.c)...")
        data["stream"] = run_stream(env, workdir)
        log("  %s" % json.dumps(data["stream"]))
        log("peak FLOP/s (bench/peak.c; measured again in every round)...")
        peak_exe = build_peak(workdir)
        data["peak"] = run_peak(peak_exe, env, args.threads, None)
        log("  %s" % json.dumps({k: v for k, v in data["peak"].items() if k != "runs"}))
        log("compile latency (examples/attention.tdsl --emit=obj, best of 5)...")
        data["compile"] = compile_latency(tdslc, env, workdir)
        log("  %s" % json.dumps({k: v for k, v in data["compile"].items() if k != "stages_ms"}))
        env_best = None
        if sel_g:
            log("OpenBLAS core types (NumPy matmul 1024², best of 10 each)...")
            data["coretypes"] = probe_coretypes(args, mi)
            best = data["coretypes"]["best"]
            if best:  # unset fastest: the NumPy column already is the best OpenBLAS
                env_best = clean_env(args.threads, best)
            log("  fastest: %s" % (best if best else "unset" if best is not None else "none"))
        if sel_w or sel_v or sel_g or sel_m or sel_x:
            log("checks: `tdslc run` on %d workloads, %d vector-math functions, %d GEMM cases, %d model blocks "
                "and %d whole models against NumPy / PyTorch..." % (len(sel_w), len(sel_v), len(sel_g), len(sel_m),
                                                                    len(sel_x)))
            data["checks"] = run_check_worker(env, args, tdslc, workdir, sel_w + sel_v + sel_g + sel_m + sel_x,
                                              backends)
            for n, r in data["checks"].items():
                log("  %-22s %s" % (n, json.dumps(r)))
        checks = data.get("checks", {})
        res = {n: {"tdsl": {}} for n in sel_w}
        gres = {n: {"tdsl": {}} for n in sel_g}
        mres = {n: {"tdsl": {}} for n in sel_m}
        xres = {n: {"tdsl": {}} for n in sel_x}
        vres = {n: {"tdsl": {}} for n in sel_v}
        hres = {n: {} for n in sel_w if n in halide_work.WORKS} if S["halide"] else {}
        if hres:
            log("Halide: %d workloads, hand schedule and 3 autoschedulers, each in its own process, in every "
                "round right after tdsl's calls of the workload" % len(hres))
        data["rounds"] = args.rounds
        for rnd in range(1, args.rounds + 1):
            log("round %d of %d" % (rnd, args.rounds))
            if rnd > 1:
                data["peak"] = run_peak(peak_exe, env, args.threads, data["peak"])
                log("  peak: %s" % json.dumps({k: v for k, v in data["peak"].items() if k != "runs"}))
            for w in WORKLOADS:
                if w["name"] not in res:
                    continue
                for b in backends:
                    log("tdsl %-5s %s..." % (b, w["name"]))
                    r = check_blocks(checks.get(w["name"], {}).get(b)) or run_tdslc_bench(tdslc, w, b, env,
                                                                                            args.reps_scale)
                    res[w["name"]]["tdsl"][b] = best_round(res[w["name"]]["tdsl"].get(b), r)
                    log("  %s" % json.dumps(r))
                if w["name"] in hres:  # Halide's variants of it, in the same round, right after tdsl's
                    halide_round(args, env, w["name"], hres[w["name"]])
            for n in sel_v:
                for b in backends:
                    r = check_blocks(checks.get(n, {}).get(b)) or tdslc_bench(
                        tdslc, os.path.join(BENCH, "vector_math.tdsl"), "v_" + n[3:], b,
                        max(3, int(round(vecmath.REPS * args.reps_scale))), env)
                    vres[n]["tdsl"][b] = best_round(vres[n]["tdsl"].get(b), r)
                    log("tdsl %-5s %-22s %s" % (b, n, json.dumps(r)))
            for table, cases, sub in ((gres, GEMM_CASES, "gemm"), (mres, MODELS, "models")):
                for c in cases:
                    if c["name"] not in table:
                        continue
                    for b in backends:
                        prev = table[c["name"]]["tdsl"].get(b)
                        r = run_tdslc_case(tdslc, os.path.join(BENCH, sub, c["file"]), c, b, env,
                                           args.reps_scale, checks.get(c["name"], {}).get(b), prev)
                        if r is None:
                            continue
                        log("tdsl %-5s %-22s %s" % (b, c["name"], json.dumps(r)))
                        table[c["name"]]["tdsl"][b] = best_round(prev, r)
            for c in WHOLE:  # one call takes up to seconds: a larger budget, one round when compiling is long
                if c["name"] not in xres:
                    continue
                for b in backends:
                    prev = xres[c["name"]]["tdsl"].get(b)
                    r = run_tdslc_case(tdslc, os.path.join(BENCH, "models", c["file"]), c, b, env, args.reps_scale,
                                       checks.get(c["name"], {}).get(b), prev, WHOLE_BUDGET_S, WHOLE_SLOW_CAP_S)
                    if r is None:
                        continue
                    log("tdsl %-5s %-22s %s" % (b, c["name"], json.dumps(r)))
                    xres[c["name"]]["tdsl"][b] = best_round(prev, r)
            workers = [("numpy", env, sel_w + sel_g + sel_v), ("torch", env, sel_w + sel_g + sel_m + sel_v)]
            if sel_x and (rnd == 1 or args.rounds == 1 or rnd == args.rounds):  # whole models: 2 rounds at most
                workers[1] = ("torch", env, workers[1][2] + sel_x)
            if env_best is not None and sel_g:
                workers.append(("numpy", env_best, sel_g))
            for which, wenv, cases in workers:
                key = which if wenv is env else "blas_best"
                log("%s (%d cases, one subprocess)..." % (key, len(cases)))
                wr = run_worker(which, wenv, args, cases)
                data[key] = wr
                if "error" in wr:
                    log("  " + wr["error"])
                if key in ("numpy", "torch") and "matmul" in wr.get("results", {}):
                    ref = data.setdefault("blas_ref", {})  # the BLAS bar: its best round too
                    ref[key] = best_round(ref.get(key), wr["results"]["matmul"])
                for n, r in wr.get("results", {}).items():
                    for table in (res, gres, mres, xres, vres):
                        if n in table:
                            table[n][key] = best_round(table[n].get(key), r)
                    log("  %-22s %s" % (n, json.dumps(r)))
                if "blas" in wr:
                    log("  BLAS: %s" % wr["blas"]["summary"])
        data["results"] = res
        data["gemm"] = gres
        data["models"] = mres
        data["whole"] = xres
        data["vecmath"] = vres
        if hres:
            data["halide"] = {n: halide_work.best_of(kept) for n, kept in hres.items()}
        if sel_v and S["halide"]:
            log("Halide: the vector-math table...")
            data["halide_vecmath"] = run_halide_vecmath(args, env, sel_v)
            log("  %s" % json.dumps(data["halide_vecmath"])[:600])
        if sel_x:
            log("profiles: `tdslc bench --profile` of the whole models (LLVM)...")
            data["profiles"] = run_profiles(tdslc, env, data, sel_x, workdir)
        data["elapsed_s"] = time.time() - t_start
        data["machine"]["load_end"] = loadavg()
        os.makedirs(os.path.dirname(os.path.abspath(args.json_out)), exist_ok=True)
        with open(args.json_out, "w") as f:
            json.dump(data, f, indent=1)
        report(data, args.out)
        log("wrote %s (raw numbers: %s) in %.0f s" % (os.path.relpath(args.out, ROOT),
                                                       os.path.relpath(args.json_out, ROOT), data["elapsed_s"]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
