#!/usr/bin/env python3
"""bench/gpu/run.py --tdslc TDSLC [--out DIR] [--small] [--seconds S] [--only NAMES] [--reps N]

The GPU benchmark: each workload of bench/gpu/workloads.tdsl timed by
`tdslc bench --target cuda` on both GPU backends (PTX through LLVM, CUDA C through
NVRTC: runtime/cuda.c's tdsl_gpu_bench, the kernels' time between CUDA events, the
inputs on the device already) and the same computation in PyTorch on the same GPU
(eager, CUDA events around each call, median of the calls), with the device's own bars:
copy bandwidth (PyTorch's copy_ of 1 GiB) and matmul rates (PyTorch's 8192-cubed f32
without TF32, and bf16). Rates use tdslc's count of bytes (each input read once, each
result written once) and flops for both, so the columns compare.

Writes DIR/bench.json (every number) and DIR/bench.md (the table); prints the table.
--small: sizes of a few thousand elements and 3 calls, for a check of the harness
(scripts/gpu-check --dry-run runs it under the CUDA shim, where PyTorch has no GPU).
--seconds: start no workload after that many seconds (they are listed as not run).
Needs only Python's standard library and, for the PyTorch column, torch with CUDA.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads.tdsl")

# name: (what it stresses, dims at full size, dims --small, {param: (dtype, [dim names])}, PyTorch)
ATTN = {"q": ("bf16", "BHLD"), "k": ("bf16", "BHLD"), "v": ("bf16", "BHLD")}
ATTN32 = {p: ("f32", "BHLD") for p in "qkv"}
W = [
    ("add_one", "bandwidth", {"N": 1 << 26}, {"N": 5000}, {"x": ("f32", "N")}, lambda x: x + 1.0),
    ("gelu_chain", "bandwidth", {"R": 16384, "C": 4096}, {"R": 33, "C": 70},
     {"x": ("f32", "RC"), "b": ("f32", "C")}, lambda x, b: _F().gelu(x * 1.5 + b) * x),
    ("bf16_chain", "bandwidth", {"N": 1 << 27}, {"N": 3000}, {"x": ("bf16", "N"), "y": ("bf16", "N")},
     lambda x, y: _torch().sigmoid(x * y + 1.0) * y),
    ("softmax_long", "bandwidth", {"R": 16384, "C": 4096}, {"R": 5, "C": 1500}, {"x": ("f32", "RC")},
     lambda x: _torch().softmax(x, -1)),
    ("softmax_short", "bandwidth", {"R": 1 << 19, "C": 128}, {"R": 40, "C": 100}, {"x": ("f32", "RC")},
     lambda x: _torch().softmax(x, -1)),
    ("layer_norm", "bandwidth", {"R": 16384, "C": 4096}, {"R": 9, "C": 700},
     {"x": ("f32", "RC"), "w": ("f32", "C"), "b": ("f32", "C")}, lambda x, w, b: _F().layer_norm(x, x.shape[-1:], w, b)),
    ("row_sum", "bandwidth", {"R": 16384, "C": 4096}, {"R": 9, "C": 3000}, {"x": ("f32", "RC")},
     lambda x: x.sum(-1)),
    ("matmul_f32", "compute", {"M": 4096, "K": 4096, "N": 4096}, {"M": 70, "K": 50, "N": 90},
     {"a": ("f32", "MK"), "b": ("f32", "KN")}, lambda a, b: a @ b),
    ("matmul_bf16", "compute", {"M": 4096, "K": 4096, "N": 4096}, {"M": 130, "K": 64, "N": 72},
     {"a": ("bf16", "MK"), "b": ("bf16", "KN")}, lambda a, b: a @ b),
    ("linear_gelu_bf16", "compute", {"M": 8192, "K": 4096, "N": 4096}, {"M": 64, "K": 32, "N": 40},
     {"x": ("bf16", "MK"), "w": ("bf16", "NK"), "b": ("bf16", "N")}, lambda x, w, b: _F().gelu(_F().linear(x, w, b))),
    ("sdpa_bf16", "compute", {"B": 4, "H": 16, "L": 2048, "D": 64}, {"B": 1, "H": 2, "L": 40, "D": 16}, ATTN,
     lambda q, k, v: _F().scaled_dot_product_attention(q, k, v)),
    ("sdpa_causal_bf16", "compute", {"B": 4, "H": 16, "L": 2048, "D": 64}, {"B": 1, "H": 2, "L": 40, "D": 16}, ATTN,
     lambda q, k, v: _F().scaled_dot_product_attention(q, k, v, is_causal=True)),
    ("sdpa_f32", "compute", {"B": 4, "H": 16, "L": 1024, "D": 64}, {"B": 1, "H": 2, "L": 40, "D": 16}, ATTN32,
     lambda q, k, v: _F().scaled_dot_product_attention(q, k, v)),
]
BACKENDS = ("ptx", "cuda")


def _torch():
    import torch
    return torch


def _F():
    import torch.nn.functional as F
    return F


def torch_cuda():
    """torch when it has a CUDA device, else (None, why)."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001  (any failure to import means no PyTorch column)
        return None, f"no PyTorch ({type(e).__name__}: {e})"
    if not torch.cuda.is_available():
        return None, f"PyTorch {torch.__version__} sees no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 matmul in f32, as tdsl's
    torch.backends.cudnn.allow_tf32 = False
    return torch, f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}"


def time_torch(torch, fn, args, reps):
    """Median ms of reps calls of fn(*args) on the device, after warm-up calls."""
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    ev[0].record()
    for r in range(reps):
        fn(*args)
        ev[r + 1].record()
    torch.cuda.synchronize()
    return statistics.median(ev[r].elapsed_time(ev[r + 1]) for r in range(reps))


def torch_inputs(torch, params, dims):
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    g = torch.Generator(device="cuda").manual_seed(0)
    return [torch.randn([dims[c] for c in shape], generator=g, device="cuda", dtype=dt[d])
            for d, shape in params.values()]


def bars(torch, small):
    """The device's own: copy GB/s and matmul TFLOP/s, measured with PyTorch."""
    out = {}
    n = 1 << (16 if small else 28)
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    ms = time_torch(torch, lambda: y.copy_(x), [], 5 if small else 20)
    out["copy_gbps"] = 2 * 4 * n / (ms * 1e6)
    s = 256 if small else 8192
    for name, dt in (("matmul_f32_tflops", torch.float32), ("matmul_bf16_tflops", torch.bfloat16)):
        a = torch.randn(s, s, device="cuda", dtype=dt)
        b = torch.randn(s, s, device="cuda", dtype=dt)
        ms = time_torch(torch, lambda a=a, b=b: a @ b, [], 3 if small else 10)
        out[name] = 2 * s ** 3 / (ms * 1e9)
    torch.cuda.empty_cache()
    return out


def tdsl_bench(tdslc, name, dims, backend, reps):
    argv = [tdslc, "bench", WORKLOADS, "--fn", name, "--backend", backend, "--reps", str(reps), "--json"]
    for d, v in dims.items():
        argv += ["--dim", f"{d}={v}"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after 300 s"}
    if p.returncode != 0:
        return {"error": f"exit {p.returncode}: {p.stderr.strip()[-500:]}"}
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": f"not JSON: {p.stdout[:300]}"}


def schedules(tdslc, name, dims):
    """The GPU schedule of each kernel, from --emit=kernels."""
    argv = [tdslc, WORKLOADS, "--target", "cuda", "--emit=kernels", "--fn", name]
    for d, v in dims.items():
        argv += ["--dim", f"{d}={v}"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return [ln.strip()[len("gpu: "):].split(";")[0] for ln in p.stdout.splitlines() if ln.strip().startswith("gpu:")]


def rate(kind, doc, ms):
    if not ms:
        return None
    return doc["flops"] / (ms * 1e9) if kind == "compute" else doc["bytes"] / (ms * 1e6)


def fmt(v, nd=1):
    return "—" if v is None else f"{v:.{nd}f}"


def table(res):
    lines = ["| workload | sizes | tdsl ptx ms | tdsl cuda ms | torch ms | rate ptx / cuda / torch | "
             "torch ÷ best tdsl | schedule |", "|---|---|---|---|---|---|---|---|"]
    for r in res["workloads"]:
        if r.get("not_run"):
            lines.append(f"| {r['name']} | | | | | not run: {r['not_run']} | | |")
            continue
        unit = "TFLOP/s" if r["kind"] == "compute" else "GB/s"
        ms = {b: r[b].get("median_ms") for b in BACKENDS}
        tms = r.get("torch_ms")
        best = min((m for m in ms.values() if m), default=None)
        ratio = f"{tms / best:.2f}" if best and tms else "—"
        errs = "; ".join(f"{b}: {r[b]['error'][:100]}" for b in BACKENDS if "error" in r[b])
        sizes = " ".join(f"{k}={v}" for k, v in r["dims"].items())
        lines.append(f"| {r['name']} | {sizes} | {fmt(ms['ptx'], 3)} | {fmt(ms['cuda'], 3)} | {fmt(tms, 3)} | "
                     f"{fmt(r.get('rate_ptx'))} / {fmt(r.get('rate_cuda'))} / {fmt(r.get('rate_torch'))} {unit} | "
                     f"{ratio} | {'; '.join(r['schedules'])}{' — ' + errs if errs else ''} |")
    b = res.get("bars") or {}
    head = [f"GPU benchmark ({res['torch']}; tdsl: median of {res['reps']} calls' kernel time, events).",
            f"Bars: copy {fmt(b.get('copy_gbps'))} GB/s, f32 matmul {fmt(b.get('matmul_f32_tflops'))} TFLOP/s, "
            f"bf16 matmul {fmt(b.get('matmul_bf16_tflops'))} TFLOP/s (PyTorch). "
            "torch ÷ best tdsl > 1: tdsl is faster.", ""]
    return "\n".join(head + lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tdslc", required=True)
    ap.add_argument("--out", default=".")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=None)
    a = ap.parse_args()
    t0 = time.monotonic()
    reps = a.reps or (3 if a.small else 20)
    torch, why = torch_cuda()
    res = {"torch": why, "reps": reps, "small": a.small, "workloads": []}
    if torch is not None:
        res["bars"] = bars(torch, a.small)
    only = set(filter(None, a.only.split(",")))
    for name, kind, big, small, params, fn in W:
        if only and name not in only:
            continue
        dims = small if a.small else big
        r = {"name": name, "kind": kind, "dims": dims}
        res["workloads"].append(r)
        if a.seconds is not None and time.monotonic() - t0 > a.seconds:
            r["not_run"] = f"past --seconds {a.seconds:g}"
            continue
        r["schedules"] = schedules(a.tdslc, name, dims)
        for b in BACKENDS:
            r[b] = tdsl_bench(a.tdslc, name, dims, b, reps)
            r[f"rate_{b}"] = rate(kind, r[b], r[b].get("median_ms")) if "error" not in r[b] else None
        doc = next((r[b] for b in BACKENDS if "error" not in r[b]), None)
        if torch is not None:
            try:
                args = torch_inputs(torch, params, dims)
                r["torch_ms"] = time_torch(torch, fn, args, reps)
                if doc:
                    r["rate_torch"] = rate(kind, doc, r["torch_ms"])
                del args
                torch.cuda.empty_cache()
            except Exception as e:  # noqa: BLE001  (reported in the table, the rest still runs)
                r["torch_error"] = f"{type(e).__name__}: {e}"[:300]
        print(f"[{time.monotonic() - t0:6.1f} s] {name}: " +
              ", ".join(f"{b} {r[b].get('median_ms', r[b].get('error', '')[:80])}" for b in BACKENDS) +
              f", torch {r.get('torch_ms', r.get('torch_error', '—'))}", file=sys.stderr, flush=True)
    res["seconds"] = time.monotonic() - t0
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "bench.json"), "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1)
    md = table(res)
    with open(os.path.join(a.out, "bench.md"), "w", encoding="utf-8") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
