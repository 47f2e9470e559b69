#!/usr/bin/python3
"""bench/run.py — tdsl's benchmark harness (`make bench`). See bench/README.md.

In one run: a STREAM-style copy/triad measurement of the memory bandwidth
(bench/stream.c), then for every workload in bench/workloads/ the tdsl time
(`tdslc bench --json`, C and LLVM backends), NumPy's and PyTorch's (eager, in
subprocesses with a cleaned environment), and the compile latency of
examples/attention.tdsl. Writes bench/RESULTS.md (and the raw numbers as JSON under
build/bench/). Timings are reported, never asserted.

Usage: /usr/bin/python3 bench/run.py [--tdslc build/tdslc] [--threads 2]
           [--reps-scale 1.0] [--out bench/RESULTS.md] [--only NAME,...]
Internal: run.py --worker numpy|torch --threads N --reps-scale X   (prints JSON)
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
# BLAS GFLOP/s of this run. `reps` timed calls after `warmup` calls, for every
# implementation alike.
# ---------------------------------------------------------------------------------------
N4K = 4096 * 4096


def _mm_flops(m, k, n):
    return 2 * m * k * n


WORKLOADS = [
    dict(name="elementwise", file="elementwise.tdsl", fn="elementwise",
         what="relu(x*2+1)*sigmoid(x), 4096²", kind="memory",
         inputs=[(4096, 4096)], bytes=2 * N4K * F32, flops=8 * N4K, warmup=2, reps=15),
    dict(name="transpose", file="transpose.tdsl", fn="transpose_copy",
         what="x.t().contiguous(), 4096²", kind="memory",
         inputs=[(4096, 4096)], bytes=2 * N4K * F32, flops=0, warmup=2, reps=15),
    dict(name="broadcast_add", file="broadcast_add.tdsl", fn="broadcast_add",
         what="(4096,1) + (1,4096)", kind="memory",
         inputs=[(4096, 1), (1, 4096)], bytes=(N4K + 2 * 4096) * F32, flops=N4K,
         warmup=2, reps=15),
    dict(name="column_sum", file="column_sum.tdsl", fn="column_sum",
         what="x.sum(0), 4096²", kind="memory",
         inputs=[(4096, 4096)], bytes=(N4K + 4096) * F32, flops=N4K, warmup=2, reps=15),
    dict(name="softmax", file="softmax.tdsl", fn="softmax_rows",
         what="softmax(x, -1), (256, 4096)", kind="memory",
         inputs=[(256, 4096)], bytes=2 * 256 * 4096 * F32, flops=5 * 256 * 4096,
         warmup=5, reps=50),
    dict(name="layer_norm", file="layer_norm.tdsl", fn="layer_norm",
         what="layer norm body, (32, 128, 512)", kind="memory",
         inputs=[(32, 128, 512)], bytes=2 * 32 * 128 * 512 * F32,
         flops=8 * 32 * 128 * 512, warmup=5, reps=50),
    dict(name="matmul", file="matmul.tdsl", fn="matmul_1024",
         what="a @ b, 1024² (tdsl: no BLAS)", kind="compute",
         inputs=[(1024, 1024), (1024, 1024)], bytes=3 * 1024 * 1024 * F32,
         flops=_mm_flops(1024, 1024, 1024), warmup=2, reps=10),
    dict(name="mlp", file="mlp.tdsl", fn="mlp",
         what="seed MLP 32×784→128→10", kind="compute",
         inputs=[(32, 784), (784, 128), (128,), (128, 10), (10,)],
         bytes=(32 * 784 + 784 * 128 + 128 + 128 * 10 + 10 + 32 * 10) * F32,
         flops=_mm_flops(32, 784, 128) + 2 * 32 * 128 + _mm_flops(32, 128, 10) + 32 * 10,
         warmup=20, reps=300),
    dict(name="attention", file="attention.tdsl", fn="attention",
         what="seed attention (2, 10, 512), 8 heads", kind="compute",
         inputs=[(2, 10, 512)] + [(512, 512)] * 4,
         bytes=(2 * 2 * 10 * 512 + 4 * 512 * 512) * F32,
         flops=4 * _mm_flops(20, 512, 512) + 2 * 16 * _mm_flops(10, 64, 10)
         + 16 * 10 * 10 * 6,
         warmup=20, reps=300),
]

E, H, D = 512, 8, 64
LAST_BLAS = ("blas_numpy", "blas_torch")  # the 1024² BLAS matmul reference entries


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

    return {
        "elementwise": lambda x: np.maximum(x * 2 + 1, 0) * (1 / (1 + np.exp(-x))),
        "transpose": lambda x: np.ascontiguousarray(x.T),
        "broadcast_add": lambda a, b: a + b,
        "column_sum": lambda x: x.sum(0),
        "softmax": lambda x: softmax(x, -1),
        "layer_norm": layer_norm,
        "matmul": lambda a, b: a @ b,
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

    return {
        "elementwise": lambda x: torch.relu(x * 2 + 1) * torch.sigmoid(x),
        "transpose": lambda x: x.t().contiguous(),
        "broadcast_add": lambda a, b: a + b,
        "column_sum": lambda x: x.sum(0),
        "softmax": lambda x: torch.softmax(x, dim=-1),
        "layer_norm": layer_norm,
        "matmul": lambda a, b: a @ b,
        "mlp": lambda x, w1, b1, w2, b2: (x @ w1 + b1).clamp(min=0) @ w2 + b2,
        "attention": attention,
    }


def _time_calls(f, args, warmup, reps):
    for _ in range(warmup):
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


def worker(which, threads, scale, only):
    import numpy as np
    out = {"framework": which, "env_dropped_check": {k: os.environ.get(k) for k in BLAS_ENV_DROP}}
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
            if only and w["name"] not in only:
                continue
            args = [conv(a) for a in _inputs(w, np)]
            reps = max(3, int(round(w["reps"] * scale)))
            warm = max(1, int(round(w["warmup"] * min(scale, 1.0))))
            results[w["name"]] = _time_calls(fns[w["name"]], args, warm, reps)
            del args
        # the BLAS reference: matmul 1024² (always measured, `only` or not)
        if "matmul" not in results:
            w = next(w for w in WORKLOADS if w["name"] == "matmul")
            args = [conv(a) for a in _inputs(w, np)]
            results["matmul"] = _time_calls(fns["matmul"], args, 2, max(3, int(round(10 * scale))))
    out["results"] = results
    out["blas"] = _blas_info(np)
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


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


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
    return res


def run_tdslc_bench(tdslc, w, backend, env, scale):
    path = os.path.join(BENCH, "workloads", w["file"])
    reps = max(3, int(round(w["reps"] * scale)))
    cmd = [tdslc, "bench", path, "--fn", w["fn"], "--backend", backend, "--reps", str(reps), "--json"]
    r = sh(cmd, env=env, timeout=600)
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
                    return res
            except ValueError:
                pass
    return {"error": "no JSON object with median_ms in: " + first_line(r.stdout)}


def run_worker(which, env, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", which,
           "--threads", str(args.threads), "--reps-scale", str(args.reps_scale)]
    if args.only:
        cmd += ["--only", args.only]
    r = sh(cmd, env=env, timeout=900)
    if r.returncode != 0:
        return {"error": "worker %s failed (exit %d): %s" % (which, r.returncode,
                                                             (r.stderr or "").strip()[-400:])}
    return json.loads(r.stdout.strip().splitlines()[-1])


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
    model, flags = "?", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "?":
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1]
    except OSError:
        pass
    info["cpu"] = model
    fl = flags.split()
    info["simd"] = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile") if f in fl)
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
        return "n/a" if "na" in r else "error"
    m = r["median_ms"]
    return ("%.3f" if m < 1 else "%.2f" if m < 100 else "%.1f") % m


def fmt_x(v):
    return "n/a" if v is None else "%.2f×" % v


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


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def target_row(name, need, value, ok, by):
    if value is None or value == "n/a":
        return "| %s | %s | n/a | not measured |" % (name, need)
    return "| %s | %s | %s | %s |" % (name, need, value, ("**met** (%s)" if ok else "**not met** (%s)") % by)


def report(data, path):
    mi, st, res = data["machine"], data["stream"], data["results"]
    npw, thw = data["numpy"], data["torch"]
    bw = st.get("copy_gbps")
    blas_np = med(npw.get("results", {}).get("matmul")) if "results" in npw else None
    blas_th = med(thw.get("results", {}).get("matmul")) if "results" in thw else None
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
        a("- Memory bandwidth (STREAM-style, %d threads, 3 arrays of %.0f MB, best of %d): "
          "**copy %.1f GB/s**, triad %.1f GB/s. Memory-bound workloads are compared with copy."
          % (st["threads"], st["array_bytes"] / MB, st["reps"], st["copy_gbps"], st["triad_gbps"]))
    if blas_gflops:
        a("- Best BLAS matmul 1024² (f32): **%.1f GFLOP/s** (%s; NumPy %s, PyTorch %s). "
          "Compute-bound workloads are compared with it."
          % (blas_gflops, best_blas_name,
             "%.1f" % gf["NumPy"] if gf["NumPy"] else "n/a",
             "%.1f" % gf["PyTorch"] if gf["PyTorch"] else "n/a"))
    else:
        a("- Best BLAS matmul: **not measured**")
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
    a("## Workloads")
    a("")
    a("tdsl columns: `tdslc bench --json` with the C backend / the LLVM backend. "
      "Speedup = other's time / tdsl's time (> 1: tdsl is faster). "
      "Bar = the fraction of the copy bandwidth (memory-bound: bytes moved / time) or of "
      "the best BLAS GFLOP/s (compute-bound: FLOPs / time) that each implementation reached.")
    a("")
    a("| workload | bound | tdsl C ms | tdsl LLVM ms | NumPy ms | PyTorch ms | vs PyTorch (C / LLVM) | vs NumPy (C / LLVM) | bar: C / LLVM / NumPy / PyTorch |")
    a("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    speed_th = {b: [] for b in backends}
    for w in WORKLOADS:
        n = w["name"]
        if n not in res:
            continue
        r = res[n]
        t = {b: med(r["tdsl"].get(b)) for b in backends}
        tn, tt = med(r.get("numpy")), med(r.get("torch"))
        for b in backends:
            speed_th[b].append(ratio(t[b], tt))
        a("| %s<br><sub>%s</sub> | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            n, w["what"], w["kind"],
            fmt_ms(r["tdsl"].get("c")), fmt_ms(r["tdsl"].get("llvm")),
            fmt_ms(r.get("numpy")), fmt_ms(r.get("torch")),
            " / ".join(fmt_x(ratio(t[b], tt)) for b in backends),
            " / ".join(fmt_x(ratio(t[b], tn)) for b in backends),
            " / ".join(fmt_pct(fraction(w, x, bw, blas_gflops)) for x in (t["c"], t["llvm"], tn, tt))))
    a("")
    a("Bytes and FLOPs per call (the harness's counts: every input read once, every output "
      "written once; see README):")
    a("")
    a("| workload | MB moved | MFLOP | NumPy min–max ms | PyTorch min–max ms | reps |")
    a("|---|---:|---:|---:|---:|---:|")
    for w in WORKLOADS:
        n = w["name"]
        if n not in res:
            continue
        r = res[n]
        rng = lambda x: "%.3g–%.3g" % (x["min_ms"], x["max_ms"]) if x and "min_ms" in x else "n/a"  # noqa: E731
        reps = (r.get("torch") or r.get("numpy") or {}).get("reps", "?")
        a("| %s | %.2f | %.2f | %s | %s | %s |" % (n, w["bytes"] / MB, w["flops"] / 1e6,
                                                 rng(r.get("numpy")), rng(r.get("torch")), reps))
    notes = []
    for w in WORKLOADS:
        n = w["name"]
        if n not in res:
            continue
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
            f = fraction(w, med(res[w["name"]]["tdsl"].get(b)), bw, blas_gflops)
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
        else:
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
                    help="multiply every workload's repetition count (e.g. 0.3 for a quick run)")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--rounds", type=int, default=3,
                    help="measure every implementation this many times, interleaved; keep each one's "
                         "best median")
    ap.add_argument("--out", default=os.path.join(BENCH, "RESULTS.md"))
    ap.add_argument("--json-out", default=os.path.join(ROOT, "build", "bench", "results.json"))
    ap.add_argument("--blas-coretype", default="",
                    help="set OPENBLAS_CORETYPE to this for every timed process (default: unset)")
    ap.add_argument("--report-only", action="store_true",
                    help="measure nothing: rewrite --out from the numbers in --json-out (after editing GAPS.md)")
    ap.add_argument("--worker", choices=("numpy", "torch"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.report_only:
        with open(args.json_out) as f:
            report(json.load(f), args.out)
        log("wrote %s from %s" % (os.path.relpath(args.out, ROOT), os.path.relpath(args.json_out, ROOT)))
        return 0
    only = set(x for x in args.only.split(",") if x)
    if args.worker:
        worker(args.worker, args.threads, args.reps_scale, only)
        return 0
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    unknown = only - {w["name"] for w in WORKLOADS}
    if unknown:
        ap.error("unknown workload(s): %s" % ", ".join(sorted(unknown)))

    t_start = time.time()
    env = clean_env(args.threads, args.blas_coretype)
    tdslc = os.path.abspath(args.tdslc)
    if not os.access(tdslc, os.X_OK):
        log("%s not found: build it first (make build)" % tdslc)
        return 1
    workdir = tempfile.mkdtemp(prefix="tdsl-bench-")
    try:
        data = {"threads": args.threads, "backends": ["c", "llvm"], "blas_coretype": args.blas_coretype}
        data["machine"] = machine_info(tdslc, env)
        log("memory bandwidth (bench/stream.c)...")
        data["stream"] = run_stream(env, workdir)
        log("  %s" % json.dumps(data["stream"]))
        log("compile latency (examples/attention.tdsl --emit=obj, best of 5)...")
        data["compile"] = compile_latency(tdslc, env, workdir)
        log("  %s" % json.dumps({k: v for k, v in data["compile"].items() if k != "stages_ms"}))
        res = {w["name"]: {"tdsl": {}} for w in WORKLOADS if not only or w["name"] in only}
        data["rounds"] = args.rounds
        for rnd in range(1, args.rounds + 1):
            log("round %d of %d" % (rnd, args.rounds))
            for w in WORKLOADS:
                if w["name"] not in res:
                    continue
                for b in data["backends"]:
                    log("tdsl %-5s %s..." % (b, w["name"]))
                    r = run_tdslc_bench(tdslc, w, b, env, args.reps_scale)
                    res[w["name"]]["tdsl"][b] = best_round(res[w["name"]]["tdsl"].get(b), r)
                    log("  %s" % json.dumps(r))
            for which in ("numpy", "torch"):
                log("%s (all workloads, one subprocess)..." % which)
                wr = run_worker(which, env, args)
                data[which] = wr
                if "error" in wr:
                    log("  " + wr["error"])
                for n, r in wr.get("results", {}).items():
                    if n in res:
                        res[n][which] = best_round(res[n].get(which), r)
                    log("  %-13s %s" % (n, json.dumps(r)))
                if "blas" in wr:
                    log("  BLAS: %s" % wr["blas"]["summary"])
        data["results"] = res
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
