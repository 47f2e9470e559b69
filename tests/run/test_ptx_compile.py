#!/usr/bin/python3
"""tests/run/test_ptx_compile.py TDSLC: `tdslc --emit=ptx` (codegen/ptx.c) on every
example, on every program of test_ops.py's tables, on seeded random programs
(randprog.py) and on test_cuda_compile.py's SHAPES (every GPU schedule: vectors, rows,
tiled and tensor-core matmuls, flash attention), each group combined into a few files
of many functions, and every PTX file assembled by CUDA's `ptxas -arch=sm_90` (LLVM 14
emits `.target sm_80` PTX, which Hopper's ptxas must accept): the examples and SHAPES
optimised as a GPU run would (their registers and shared memory against the limits),
the op and random batches at -O0 (the same acceptance of the PTX, a third of the time).
Nothing runs: no GPU is needed, only ptxas; without /usr/local/cuda/bin/ptxas (or
$PTXAS), or with a tdslc built without LLVM, the test exits 77, a skip.
TDSL_PTX_RANDOM_COUNT sets the number of random programs (100). Also checked: each
kernel `tdsl_g_<fn>_k<N>` of the loop IR is an .entry of the PTX, and --gpu-arch=sm_90
(newer than LLVM 14 knows) gives PTX for sm_86; and kernels with the same code (a
model's layers, ir/share.c) are one .entry: nanoGPT of 24 layers has the entries of 12.
With TDSL_EMIT_ONLY=1 (the sanitizer pass) ptxas is not run: tdslc's part alone.
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import EXAMPLES, Tally, test_subset  # noqa: E402

sys.path.insert(0, HERE)
PTXAS = os.environ.get("PTXAS", "/usr/local/cuda/bin/ptxas")
RANDOM_COUNT = int(os.environ.get("TDSL_PTX_RANDOM_COUNT", "100"))
# functions per combined .tdsl: LLVM's NVPTX pipeline and ptxas both take longer per
# kernel on a larger file (the 127 op programs: emit and ptxas -O0, 38 s of CPU in files
# of 40, 31 s in files of 10)
PER_FILE = 10


def combine(sources):
    """One .tdsl holding every `fn f` of sources, renamed t0, t1, ..."""
    out = []
    for i, src in enumerate(sources):
        out.append(re.sub(r"^fn f\(", f"fn t{i}(", src, count=1, flags=re.M))
    return "\n\n".join(out) + "\n"


def emit_and_assemble(tdslc, path, tmp, extra=(), quick=False):
    """--emit=ptx then ptxas (quick: -O0); returns a list of failure lines."""
    ptx = os.path.join(tmp, os.path.basename(path) + ".ptx")
    p = subprocess.run([tdslc, path, "--emit=ptx", "-o", ptx, *extra], capture_output=True, timeout=600)
    if p.returncode != 0:
        return [f"{path}: tdslc --emit=ptx exited {p.returncode}: {p.stderr.decode(errors='replace')[:2000]}"]
    q = None
    if not os.environ.get("TDSL_EMIT_ONLY"):  # (the sanitizer pass: tdslc's part alone; ptxas ran in the release pass)
        q = subprocess.run([PTXAS, "-arch=sm_90"] + (["-O0"] if quick else []) + [ptx, "-o", ptx + ".cubin"],
                           capture_output=True, timeout=600)
    if q is not None and q.returncode != 0:
        return [f"{path}: ptxas -arch=sm_90 failed: {q.stderr.decode(errors='replace')[:2000]}"]
    with open(ptx, encoding="utf-8") as f:
        text = f.read()
    errs = []
    k = subprocess.run([tdslc, path, "--target", "cuda", "--emit=kernels"], capture_output=True, timeout=600)
    if k.returncode == 0:  # one function (or one chosen): its kernels are entries, each code once
        fn = re.search(r"^program (\S+)", k.stdout.decode(), re.M).group(1)
        for kn, of in re.findall(r"^kernel (k\d+)(?: \(the code of (k\d+)\))?$", k.stdout.decode(), re.M):
            if of and f".entry tdsl_g_{fn}_{kn}(" in text:
                errs.append(f"{path}: {kn} has {of}'s code but an .entry of its own")
            if f".entry tdsl_g_{fn}_{of or kn}(" not in text:
                errs.append(f"{path}: no .entry tdsl_g_{fn}_{of or kn} in the PTX")
    return errs


def check_shared(tdslc, tmp):
    """nanoGPT (examples/nanogpt.tdsl) of 12 and 24 layers: the layers' kernels share one
    .entry each, so 24 layers have the entries of 12 (the first layers differ: fusion
    recomputes the residual sum into their kernels), and the PTX assembles."""
    with open(os.path.join(EXAMPLES, "nanogpt.tdsl"), encoding="utf-8") as f:
        gpt = f.read()
    errs, entries = [], []
    for layers in (12, 24):
        path = os.path.join(tmp, f"gpt{layers}.tdsl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(gpt.replace("const N_LAYER = 4\n", f"const N_LAYER = {layers}\n"))
        errs += emit_and_assemble(tdslc, path, tmp, ["--fn", "gpt"])
        k = subprocess.run([tdslc, path, "--fn", "gpt", "--target", "cuda", "--emit=kernels"], capture_output=True,
                           timeout=600, text=True)
        heads = re.findall(r"^kernel k\d+.*$", k.stdout, re.M)
        with open(os.path.join(tmp, f"gpt{layers}.tdsl.ptx"), encoding="utf-8") as f:
            n = len(re.findall(r"^\.visible \.entry ", f.read(), re.M))
        own = sum(1 for h in heads if "(the code of" not in h)
        if n != own:
            errs.append(f"{layers} layers: {n} .entry in the PTX, {own} kernels with code of their own")
        entries.append((len(heads), n))
    if not (entries[1][0] > entries[0][0] and entries[1][1] == entries[0][1]):
        errs.append(f"(kernels, entries) of 12 and 24 layers: {entries}: the later layers were not shared")
    return errs


def main():
    tdslc = os.path.abspath(sys.argv[1])
    if not os.access(PTXAS, os.X_OK):
        print(f"skipped: no ptxas at {PTXAS}")
        return 77
    probe = subprocess.run([tdslc, os.path.join(EXAMPLES, "mlp.tdsl"), "--emit=ptx", "-o", os.devnull],
                           capture_output=True, timeout=600)
    if b"built without LLVM" in probe.stderr:
        print("skipped: tdslc was built without LLVM")
        return 77
    import test_ops  # noqa: E402  (its tables; its main() is not run)
    from randprog import Program  # noqa: E402
    from test_cuda_compile import SHAPES  # noqa: E402
    with tempfile.TemporaryDirectory(prefix="tdsl_ptx_") as tmp:
        files = []  # (path, quick)
        for name in sorted(os.listdir(EXAMPLES)):
            if name.endswith(".tdsl"):
                files.append((os.path.join(EXAMPLES, name), False))
        path = os.path.join(tmp, "shapes.tdsl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(SHAPES)
        files.append((path, False))
        every = test_subset()
        ops = [c.source() for c in test_ops.all_cases()][::every]
        rand = [Program(s).build().src for s in range(RANDOM_COUNT // every)]
        for label, srcs in (("ops", ops), ("random", rand)):
            for i in range(0, len(srcs), PER_FILE):
                path = os.path.join(tmp, f"{label}{i // PER_FILE}.tdsl")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(combine(srcs[i:i + PER_FILE]))
                files.append((path, True))
        tally = Tally()
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
            for (path, quick), errs in zip(files, ex.map(lambda f: emit_and_assemble(tdslc, f[0], tmp, quick=f[1]),
                                                          files)):
                tally.report(os.path.basename(path) + (" (ptxas -O0)" if quick else ""), errs)
        # an architecture newer than LLVM 14 knows: PTX for sm_86, still assembled for sm_90
        ln = os.path.join(EXAMPLES, "layer_norm.tdsl")
        errs = emit_and_assemble(tdslc, ln, tmp, ["--gpu-arch=sm_90"])
        with open(os.path.join(tmp, "layer_norm.tdsl.ptx"), encoding="utf-8") as f:
            if not errs and ".target sm_86" not in f.read():
                errs.append("--gpu-arch=sm_90: expected .target sm_86")
        tally.report("layer_norm --gpu-arch=sm_90", errs)
        tally.report("nanogpt 12 and 24 layers: shared kernels", check_shared(tdslc, tmp))
        return tally.summary(f" ({len(ops)} op programs, {len(rand)} random programs, in {len(files)} files)")


if __name__ == "__main__":
    sys.exit(main())
