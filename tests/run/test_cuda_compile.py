#!/usr/bin/python3
"""tests/run/test_cuda_compile.py TDSLC: --emit=cuda compiles warning-free with nvcc, and
its device part compiles with NVRTC (what `run --target cuda` hands the runtime). No GPU
is needed; exits 77 (skip) when /usr/local/cuda/bin/nvcc is missing.

nvcc costs about 1.4 s a file and most of a big file's time goes to optimising and
assembling (ptxas) the device code, so programs are batched and each file gets what it
needs: the op programs of test_ops.py (each renamed, two files) and 100 random programs
of randprog.py (one file) go through nvcc's front end and device compile to PTX
(`nvcc -arch=compute_90 --ptx -Ofc=max -Werror all-warnings`: the whole file parsed
and checked, host code included, the device code lowered); the kernel shapes
ir/sched_gpu.c chooses (rows, reductions, argmax, matmuls on tensor cores too,
attention, large and odd sizes: SHAPES), stacked layers whose kernels share one
__global__ (LAYERS, its launches checked against --emit=kernels: defined once,
launched per layer with moved pointers) and the golden cases compile whole
(`nvcc -arch=sm_90 -c`: host code against the real cuda_runtime.h, ptxas's register
and shared-memory limits) and through NVRTC (libnvrtc.so by ctypes, for compute_90),
as do the examples' device parts (their files to PTX as the batches). The CPU shim
(test_shim.py) compiles and runs the batches' code too, with the host's compiler.
With TDSL_EMIT_ONLY=1 (the sanitizer pass) nvcc and NVRTC are not run: tdslc's part alone.
"""
import concurrent.futures
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import ROOT, Tally, test_subset  # noqa: E402

CUDA = "/usr/local/cuda"
NVCC = os.path.join(CUDA, "bin", "nvcc")
EMIT_ONLY = bool(os.environ.get("TDSL_EMIT_ONLY"))

# The schedules ir/sched_gpu.c chooses (see its file comment), with sizes that exercise
# the grid-stride loops, vectors, partial tiles, partial warps and the thread-per-row
# fallback; tensor-core matmuls (both operand layouts) and flash attention.
SHAPES = """
fn sm(x: f32[8, 100]) -> f32[8, 100] { return x.softmax(-1) }
fn empty_dim(x: f32[2, 3, 0]) -> f32[2, 3, 0] { return x * 2 + 1 }
fn empty_inner(x: f32[2, 0, 3]) -> (f32[2, 0, 3], f32[2, 3]) { return x.exp(), x.sum(1) }
fn sm_h(x: f16[300, 70]) -> f16[300, 70] { return x.softmax(-1) }
fn ln(x: f32[32, 10, 512]) -> f32[32, 10, 512] {
    m = x.mean(-1, keepdim=true)
    v = x.var(-1, keepdim=true, unbiased=false)
    return (x - m) / sqrt(v + 1e-5)
}
fn rs(x: f32[6, 7]) -> f32[6] { return x.sum(-1) }
fn rs_big(x: f64[100000, 3]) -> f64[100000] { return x.sum(-1) }
fn rmax(x: f32[6, 7]) -> f32[6] { return x.amax(-1) }
fn rmin_i(x: i32[9, 33]) -> i32[9] { return x.amin(-1) }
fn rprod(x: i64[5, 40]) -> i64[5] { return x.prod(-1) }
fn rall(x: bool[5, 40]) -> (bool[5], bool[5]) { return x.all(-1), x.any(-1) }
fn amax_(x: f32[6, 7]) -> i64[6] { return x.argmax(-1) }
fn amin_h(x: f16[600, 700]) -> i64[600] { return x.argmin(-1) }
fn amax_all(x: f32[6, 7]) -> i64[] { return x.argmax() }
fn lse(x: f32[6, 7]) -> f32[6] { return x.logsumexp(-1) }
fn var_(x: f64[40, 300]) -> f64[40] { return x.var(-1) }
fn colsum(x: f32[6, 7]) -> f32[7] { return x.sum(0) }
fn colsum_big(x: f32[512, 1024]) -> f32[1024] { return x.sum(0) }
fn total(x: f32[6, 7]) -> f32[] { return x.sum() }
fn mm_relu(a: f32[16, 32], b: f32[32, 24], c: f32[24]) -> f32[16, 24] { return relu(a @ b + c) }
fn mm_t(a: f32[16, 32], b: f32[24, 32]) -> f32[16, 24] { return a @ b.T }
fn mm_b(a: f32[3, 17, 33], b: f32[3, 33, 25]) -> f32[3, 17, 25] { return a @ b }
fn mm_big(a: f32[256, 512], b: f32[512, 384]) -> f32[256, 384] { return a @ b }
fn mm_h(a: f16[64, 64], b: f16[64, 64]) -> f16[64, 64] { return a @ b }
fn mm_bf(a: bf16[40, 24], b: bf16[24, 8]) -> bf16[40, 8] { return gelu(a @ b) }
fn mm_d(a: f64[20, 30], b: f64[30, 10]) -> f64[20, 10] { return a @ b }
fn mm_bf_big(a: bf16[256, 128], b: bf16[384, 128], c: bf16[384]) -> bf16[256, 384] { return gelu(a @ b.t() + c) }
fn mm_h_km(a: f16[96, 130], b: f16[96, 72]) -> f32[130, 72] { return (a.t() @ b).float() }
fn mv(a: f32[256, 512], b: f32[512]) -> f32[256] { return a @ b }
fn vm(a: f32[512], b: f32[512, 256]) -> f32[256] { return a @ b }
fn ew(x: f32[1000, 1000], y: f32[1000]) -> f32[1000, 1000] { return sigmoid(x * 2 + y) }
fn ew_t(x: f32[64, 48]) -> f32[48, 64] { return (x.t() + 1).exp() }
fn ew_i(x: i32[7, 9], y: i32[9]) -> (i32[7, 9], i32[7, 9]) { return x // y, x % y }
fn ew_pow(x: i64[50], y: i64[50]) -> i64[50] { return x ** y }
fn ew_cast(x: f32[33, 65]) -> (i32[33, 65], i64[33, 65], bf16[33, 65], bool[33, 65]) {
    return x.int(), x.long(), x.bfloat16(), x > 0
}
fn gat(x: f32[10, 20], i: i64[10, 5]) -> f32[10, 5] { return x.gather(1, i) }
fn scal(x: f32[]) -> f32[] { return x * 2 }
fn attn(q: f32[2, 12, 64, 64], k: f32[2, 12, 80, 64], v: f32[2, 12, 80, 64]) -> f32[2, 12, 64, 64] {
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
}
fn attn_h(q: f16[3, 200, 32], k: f16[3, 300, 32], v: f16[300, 16], m: bool[200, 300]) -> f16[3, 200, 16] {
    return F.scaled_dot_product_attention(q, k, v, m)
}
fn attn_big(q: bf16[2, 8, 256, 128], k: bf16[2, 8, 256, 128], v: bf16[2, 8, 256, 128]) -> bf16[2, 8, 256, 128] {
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
}
fn attn_s0(q: f32[2, 5, 8], k: f32[2, 0, 8], v: f32[2, 0, 6]) -> f32[2, 5, 6] {
    return F.scaled_dot_product_attention(q, k, v)
}
"""

# Stacked layers: the layers' kernels have the same code (ir/share.c), so each code is one
# __global__ that the host launches once per layer, its pointers moved to the layer's
# weights (`(float *)d[1] + 256`). One of each CUDA shape: a thread per row (a small
# matmul), elementwise with an error table (gather), a block per row (f16 softmax), and
# tiled matmuls.
LAYERS = """
const L = 6
fn mlp(x: f32[3, 16], w: f32[L, 16, 16], b: f32[L, 16]) -> f32[3, 16] {
    h = x
    for i in range(L) {
        h = F.relu(h @ w[i] + b[i])
    }
    return h
}
fn gat(x: f32[3, 16], w: f32[L, 16, 16], idx: i64[3, 16]) -> f32[3, 16] {
    h = x
    for i in range(L) {
        h = (h @ w[i]).gather(1, idx)
    }
    return h
}
fn half(x: f16[8, 32], g: f16[L, 32]) -> f16[8, 32] {
    h = x
    for i in range(L) {
        h = (h * g[i]).softmax(-1)
    }
    return h
}
fn tiled(x: f32[2, 40, 64], w: f32[L, 64, 64], b: f32[L, 64]) -> f32[2, 40, 64] {
    h = x
    for i in range(L) {
        h = gelu(h @ w[i].T + b[i])
    }
    return h
}
"""
LAYER_FNS = {"mlp": "tdsl_g_mlp_k0", "gat": "tdsl_g_gat_k1", "half": "tdsl_g_half_k0", "tiled": "tdsl_g_tiled_k0"}


def check_layers(tdslc, path):
    """LAYERS' CUDA C against its GPU kernels (--target cuda --emit=kernels): each kernel
    with code of its own is defined once, every other one defines nothing, and the host
    launches every kernel in order by the name of the code it runs, with its own buffers
    moved by their starts (`b1+256` there is `(float *)d[1] + 256` here)."""
    p = subprocess.run([tdslc, path, "--emit=cuda"], capture_output=True, text=True)
    if p.returncode != 0:
        return [f"--emit=cuda exit {p.returncode}: {p.stderr.strip()[:2000]}"]
    cu, errs = p.stdout, []
    for fn, shared_name in LAYER_FNS.items():
        k = subprocess.run([tdslc, path, "--fn", fn, "--target", "cuda", "--emit=kernels"], capture_output=True,
                           text=True)
        kernels = []  # (name launched, [(buf, at)], shared)
        shared_mem = {int(b) for b in re.findall(r"^buffer b(\d+) shared ", k.stdout, re.M)}  # no parameters
        for block in re.split(r"^kernel ", k.stdout, flags=re.M)[1:]:
            head = re.match(r"(k\d+)(?: \(the code of (k\d+)\))?\n", block)
            args = re.search(r"^  args: (.*)$", block, re.M).group(1)
            moved = [(int(b), int(a or 0)) for b, a in re.findall(r"b(\d+)(?:\+(\d+))? \(", args)
                     if int(b) not in shared_mem]
            kernels.append((f"tdsl_g_{fn}_{head.group(2) or head.group(1)}", moved, head.group(2) is not None))
        defined = re.findall(rf"__global__ void __launch_bounds__\(\d+\) (tdsl_g_{fn}_k\d+)\(", cu)
        own = [name for name, _, shared in kernels if not shared]
        if defined != own:
            errs.append(f"{fn}: __global__ {defined}, expected each kernel with code of its own once: {own}")
        launches = []
        for name, argtext in re.findall(rf"^    (tdsl_g_{fn}_k\d+)<<<\d+, \d+, 0>>>\(\*derr(.*)\);$", cu, re.M):
            pointers = re.findall(r", \([a-z0-9_]+ \*\)d\[(\d+)\](?: \+ (\d+))?", argtext)
            moved = [(int(b), int(a or 0)) for b, a in pointers]
            launches.append((name, moved))
        want = [(name, moved) for name, moved, _ in kernels]
        if launches != want:
            errs.append(f"{fn}: launches {launches}\n  expected {want}")
        if sum(1 for name, _, shared in kernels if shared and name == shared_name) != 5:
            errs.append(f"{fn}: expected 5 later layers running {shared_name}'s code: {kernels}")
        if not any(at for _, moved, _ in kernels for _, at in moved):
            errs.append(f"{fn}: no argument moved: {kernels}")
    if cu.count("static const char *const tdsl_g_gat_k1_errors[] = {") != 1:
        errs.append("gat: the shared kernel's error table is not defined once")
    if cu.count(', tdsl_g_gat_k1_errors);') != 6:
        errs.append("gat: not every layer's gather checks its errors with the shared table")
    return errs


def nvrtc_lib():
    for name in ("libnvrtc.so", "libnvrtc.so.13"):
        try:
            return ctypes.CDLL(os.path.join(CUDA, "lib64", name))
        except OSError:
            pass
    return None


def nvrtc_compile(lib, src, name, fast):
    """Compiles src with NVRTC for compute_90; returns an error text or None."""
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None)
    if rc != 0:
        return f"nvrtcCreateProgram: {rc}"
    opts = [b"--gpu-architecture=compute_90", b"-default-device"] + ([b"--Ofast-compile=max"] if fast else [])
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value + 1)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    text = log.value.decode(errors="replace").strip()
    if rc != 0:
        return f"nvrtc: {rc}\n{text}"
    if "warning" in text:
        return f"nvrtc warnings:\n{text}"
    return None


def device_part(cu):
    """The device code of a .cu: after the runtime header's include, before the host."""
    start = cu.index('#include "tdsl.h"\n') + len('#include "tdsl.h"\n')
    end = cu.index("// ---- host helpers ----") if "// ---- host helpers ----" in cu else len(cu)
    return cu[start:end]


def rename(src, old, new):
    return re.sub(rf"^fn {old}\(", f"fn {new}(", src, count=1, flags=re.M)


def op_programs(part, nparts):
    import test_ops  # noqa: E402  (its main() runs only as a script)
    srcs = []
    for i, c in enumerate(test_ops.all_cases()):
        if i % nparts == part:
            srcs.append(rename(c.source(), "f", f"op{i}_{re.sub(r'[^A-Za-z0-9_]', '_', c.name)}"))
    return "\n\n".join(srcs) + "\n"


def random_programs(first, count):
    from randprog import Program  # noqa: E402
    return "\n\n".join(rename(Program(s).build().src, "f", f"rand{s}") for s in range(first, first + count)) + "\n"


def main():
    tdslc = os.path.abspath(sys.argv[1])
    if not os.path.exists(NVCC):
        print(f"skip: {NVCC} not found")
        return 77
    inc = subprocess.run([tdslc, "--print-include-dir"], capture_output=True, text=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="tdsl-cuda-")
    try:
        # (label, path, mode): "front" nvcc to PTX; "full" nvcc -c and NVRTC; "front+rtc"
        # nvcc to PTX and NVRTC. The big batches first, so the two cores share them.
        jobs = []
        every = test_subset()
        batches = [("ops_a", op_programs(0, 2 * every), "front"), ("ops_b", op_programs(1, 2 * every), "front"),
                   ("random", random_programs(0, 100 // every), "front"), ("shapes", SHAPES, "full"),
                   ("layers", LAYERS, "full")]
        for name, text, mode in batches:
            path = os.path.join(tmp, name + ".tdsl")
            with open(path, "w") as f:
                f.write(text)
            nfn = len(re.findall(r"^fn ", text, flags=re.M))
            jobs.append((f"{name} ({nfn} functions, {mode})", path, mode))
        examples = sorted(glob.glob(os.path.join(ROOT, "examples", "*.tdsl")))
        jobs += [(os.path.relpath(f, ROOT) + " (front+rtc)", f, "front+rtc") for f in examples]
        goldens = sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "cuda_*.tdsl")))
        jobs += [(os.path.relpath(f, ROOT) + " (full)", f, "full") for f in goldens]
        lib = nvrtc_lib()
        if lib is None:
            print("note: libnvrtc.so not found: NVRTC compiles skipped")

        def compile_job(job):
            label, path, mode = job
            stem = os.path.splitext(os.path.basename(path))[0]
            cu = os.path.join(tmp, stem + ".cu")
            p = subprocess.run([tdslc, path, "--emit=cuda", "-o", cu], capture_output=True, text=True)
            if p.returncode != 0:
                return label, [f"--emit=cuda exit {p.returncode}: {p.stderr.strip()[:2000]}"]
            errs = []
            if EMIT_ONLY:  # the sanitizer pass: tdslc's part alone (nvcc's ran in the release pass)
                return label, errs
            if mode == "full":
                cmd = [NVCC, "-arch=sm_90", "-c", "-Werror", "all-warnings", "-I", inc, cu, "-o", cu + ".o"]
            else:
                cmd = [NVCC, "-arch=compute_90", "--ptx", "-Ofc=max", "-Werror", "all-warnings", "-I", inc, cu, "-o",
                       cu + ".ptx"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                errs.append(f"nvcc:\n{(p.stdout + p.stderr).strip()[:3000]}")
            if lib is not None and mode != "front":
                with open(cu) as f:
                    e = nvrtc_compile(lib, device_part(f.read()), stem + ".cu", mode != "full")
                if e:
                    errs.append(e[:3000])
            return label, errs

        tally = Tally()
        tally.report("layers: one __global__ per code, launched per layer with moved pointers",
                     check_layers(tdslc, os.path.join(tmp, "layers.tdsl")))
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
            for label, errs in ex.map(compile_job, jobs):
                tally.report(label, errs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
