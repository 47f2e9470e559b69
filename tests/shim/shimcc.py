#!/usr/bin/python3
"""tests/shim/shimcc.py: builds and runs the CUDA C that tdslc generates on the CPU, under
the CUDA shim (tdsl_shim.h says what the shim is and checks).

As a module (the shim tests import it):
  toolchain(cache)      the shim's libraries, built once per content of their sources
                        into a folder under `cache`: libtdsl_shim.so (shim.cc), the fake
                        libcuda.so.1 and libnvrtc.so (one folder, for LD_LIBRARY_PATH),
                        the batch runner's object and a libtdslrt built from runtime/
  rewrite(text, ...)    C++ from CUDA C: `k<<<g, b, s>>>(a...)` becomes
                        TDSL_SHIM_LAUNCH(k, g, b, s)(a...), and registrations are
                        appended (the shared-memory section; each __global__ for the
                        driver API; each host entry for the runner)
  build_runner(...)     --emit=cuda files and the runner linked into one executable
  run_batch(...)        that executable over many calls: {fn: (failure lines, reports)}
As a command (what the fake NVRTC runs): `shimcc.py --lib DIR module SRC OUT` compiles an
NVRTC image into a module the fake driver loads.

The generated code is compiled with -fsanitize=thread for its instrumentation only: the
__tsan_* hooks are the shim's (libtdsl_shim.so), and libtsan is never linked.
"""
import concurrent.futures
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

SHIM = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(SHIM))
RUNTIME = os.path.join(ROOT, "runtime")
VIEW = os.path.join(ROOT, "view")
CXX = os.environ.get("TDSL_SHIM_CXX", "g++")
CC = os.environ.get("TDSL_SHIM_CC_C", "gcc")
# -O0: the generated code's compile is most of a run, and its kernels are fast enough
# unoptimised (run.shim: 48 s of CPU at -O0, 90 s at -O1, the same 290 checks passing)
OPT = os.environ.get("TDSL_SHIM_OPT", "-O0")
# no __tsan_func_entry/exit calls: the shim's are empty (shim.cc), and a call at each
# function's entry and exit (an exception's path among them) is g++'s work for nothing
GEN_FLAGS = ["-std=gnu++17", OPT, "-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0", "-fPIC",
             "-fno-strict-aliasing", "-w", "-I", SHIM, "-I", RUNTIME]

LAUNCH = re.compile(r"\b(\w+)<<<(.*?)>>>\(")
KERNEL = re.compile(r"__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(")
ENTRY = re.compile(r'^extern "C" int (\w+)\(', re.M)


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{(p.stdout + p.stderr)[-6000:]}")
    return p


def sources():
    """The files the toolchain is built from (its cache key)."""
    own = [os.path.join(SHIM, f) for f in ("shim.cc", "tdsl_shim.h", "tdsl_shim_entry.h", "runner.cc",
                                           "fake_cuda.cc", "fake_nvrtc.cc", "shimcc.py")]
    rt = sorted(os.path.join(RUNTIME, f) for f in os.listdir(RUNTIME) if f.endswith((".c", ".h")))
    view = sorted(os.path.join(VIEW, f) for f in os.listdir(VIEW) if f.endswith((".c", ".h", ".def")))
    return own + rt + view


class Toolchain:
    def __init__(self, d):
        self.dir = d
        self.lib = os.path.join(d, "lib")  # libtdsl_shim.so, libcuda.so.1, libnvrtc.so
        self.runner = os.path.join(d, "runner.o")
        self.rt = os.path.join(d, "libtdslrt_shim.a")

    def env(self, base=None):
        """An environment whose dlopen('libcuda.so.1') and dlopen('libnvrtc.so') find the fakes."""
        e = dict(os.environ if base is None else base)
        e["LD_LIBRARY_PATH"] = self.lib + (":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
        return e


def _build(d):
    lib = os.path.join(d, "lib")
    os.makedirs(lib)
    shim_so = os.path.join(lib, "libtdsl_shim.so")
    run([CXX, "-std=c++17", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function",
         "-I", SHIM, os.path.join(SHIM, "shim.cc"), "-o", shim_so, "-ldl"])
    link = ["-L", lib, "-ltdsl_shim", f"-Wl,-rpath,{lib}"]
    run([CXX, "-std=c++17", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", "-I", SHIM,
         os.path.join(SHIM, "fake_cuda.cc"), "-o", os.path.join(lib, "libcuda.so.1"), "-Wl,-soname,libcuda.so.1"] + link)
    cc = f"{sys.executable} {os.path.abspath(__file__)} --lib {lib}"
    run([CXX, "-std=c++17", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror", f'-DTDSL_SHIM_CC="{cc}"',
         os.path.join(SHIM, "fake_nvrtc.cc"), "-o", os.path.join(lib, "libnvrtc.so")])
    run([CXX, "-std=c++17", "-O1", "-fPIC", "-c", "-Wall", "-Wextra", "-Werror", "-I", SHIM, "-I", RUNTIME,
         os.path.join(SHIM, "runner.cc"), "-o", os.path.join(d, "runner.o")])
    objs = []
    for src in [os.path.join(RUNTIME, f) for f in sorted(os.listdir(RUNTIME)) if f.endswith(".c")] + \
            [os.path.join(VIEW, "view.c")]:
        o = os.path.join(d, os.path.basename(src) + ".o")
        run([CC, "-std=c11", "-O1", "-fPIC", "-c", "-D_POSIX_C_SOURCE=200809L", "-I", RUNTIME, "-I", VIEW, src,
             "-o", o])
        objs.append(o)
    run(["ar", "rcs", os.path.join(d, "libtdslrt_shim.a")] + objs)


def toolchain(cache):
    """The shim's libraries, built into cache/<hash of their sources> unless already there."""
    h = hashlib.sha256()
    for f in sources():
        with open(f, "rb") as fh:
            h.update(f.encode() + b"\0" + fh.read())
    h.update(" ".join([CXX, CC, sys.executable]).encode())
    d = os.path.join(cache, "shim-" + h.hexdigest()[:16])
    if not os.path.exists(os.path.join(d, "done")):
        # built where it stays (the fakes' rpath and command name that folder), under a
        # lock: a test starting beside this one waits and uses the same build
        os.makedirs(cache, exist_ok=True)
        with open(d + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.exists(os.path.join(d, "done")):
                shutil.rmtree(d, ignore_errors=True)
                _build(d)
                open(os.path.join(d, "done"), "w").close()
    return Toolchain(d)


def rewrite(text, kernels=False, entries=None):
    """C++ for the shim from CUDA C text (see the module's comment). entries (a prefix):
    the host entries register for the runner as prefix + name, and the entries and
    kernels become static, so that files with the same names link into one runner."""
    out = LAUNCH.sub(lambda m: f"TDSL_SHIM_LAUNCH({m.group(1)}, {m.group(2)})(", text)
    tail = ["", "// ---- appended by tests/shim/shimcc.py ----", "TDSL_SHIM_SECTION()"]
    if kernels:
        tail += [f"TDSL_SHIM_KERNEL({k})" for k in KERNEL.findall(text)]
    if entries is not None:
        names = ENTRY.findall(text)
        out = out.replace('extern "C" __global__ void', "static __global__ void")
        out = ENTRY.sub(lambda m: f"static int {m.group(1)}(", out)
        tail += ['#include "tdsl_shim_entry.h"'] + [f'TDSL_SHIM_PROGRAM({f}, "{entries}{f}")' for f in names]
    return out + "\n".join(tail) + "\n"


def _fix_lib_path(tc_lib):
    """A module built for the fake driver links the libtdsl_shim.so that loaded the driver."""
    return ["-L", tc_lib, "-ltdsl_shim", f"-Wl,-rpath,{tc_lib}"]


def compile_module(lib, src, out):
    """An NVRTC image (CUDA C with no includes) as a shared object of registered kernels."""
    with open(src, encoding="utf-8") as f:
        text = rewrite(f.read(), kernels=True)
    cc = out + ".cc"
    with open(cc, "w", encoding="utf-8") as f:
        f.write(text)
    obj = out + ".o"
    run([CXX] + GEN_FLAGS + ["-include", "tdsl_shim.h", "-c", cc, "-o", obj])
    run([CXX, "-shared", "-o", out, obj] + _fix_lib_path(lib))


def build_runner(tc, units, exe, jobs=2):
    """An executable running the host entries of --emit=cuda files (see runner.cc).
    units: [(path of the .cu, the prefix its entries register under, how many pieces to
    compile it in)]; the pieces (split at the programs' sections) compile `jobs` at a
    time. Returns the number of kernels (__global__ functions) compiled."""
    pieces, nkernels = [], 0
    for cu, prefix, parts in units:
        with open(cu, encoding="utf-8") as f:
            text = f.read()
        nkernels += len(KERNEL.findall(text))
        for i, piece in enumerate(split_programs(text, parts)):
            cc = f"{exe}.{len(pieces)}.cc"
            with open(cc, "w", encoding="utf-8") as f:
                f.write(rewrite(piece, entries=prefix))
            pieces.append(cc)
    objs = [cc[:-3] + ".o" for cc in pieces]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        outs = list(ex.map(lambda i: subprocess.run([CXX] + GEN_FLAGS + ["-c", pieces[i], "-o", objs[i]],
                                                    capture_output=True, text=True), range(len(pieces))))
    errs = [f"{CXX} {cc}:\n{(p.stdout + p.stderr)[-6000:]}" for cc, p in zip(pieces, outs) if p.returncode != 0]
    if errs:
        raise RuntimeError("\n".join(errs))
    run([CXX, "-o", exe] + objs + [tc.runner, tc.rt] + _fix_lib_path(tc.lib) + ["-lm", "-lpthread", "-ldl"])
    return nkernels


def build_selftest(tc, exe):
    """tests/shim/selftest.cu (the shim's own cases) as an executable."""
    with open(os.path.join(SHIM, "selftest.cu"), encoding="utf-8") as f:
        text = rewrite(f.read())
    cc = exe + ".cc"
    with open(cc, "w", encoding="utf-8") as f:
        f.write(text)
    run([CXX] + GEN_FLAGS + ["-c", cc, "-o", exe + ".o"])
    run([CXX, "-o", exe, exe + ".o"] + _fix_lib_path(tc.lib))


def split_programs(text, parts):
    """text (one --emit=cuda file) as `parts` files that compile alone: each has the
    prelude (everything before the first program's device section) and the host helpers,
    and a share of the programs, each program's device and host sections together."""
    if parts <= 1:
        return [text]
    dev = [m.start() for m in re.finditer(r"^// ---- (\w+): device ----$", text, re.M)]
    helpers = text.find("// ---- host helpers ----")
    host = {m.group(1): m.start() for m in re.finditer(r"^// ---- (\w+): host ----$", text, re.M)}
    if not dev or helpers < 0:
        return [text]
    prelude = text[:dev[0]]
    names = [re.match(r"// ---- (\w+): device ----", text[s:]).group(1) for s in dev]
    ends = dev[1:] + [helpers]
    host_starts = [host[n] for n in names]
    host_ends = host_starts[1:] + [len(text)]
    helper_text = text[helpers:host_starts[0]]
    out = []
    for p in range(parts):
        idx = range(p, len(names), parts)
        body = "".join(text[dev[i]:ends[i]] for i in idx)
        hosts = "".join(text[host_starts[i]:host_ends[i]] for i in idx)
        out.append(prelude + body + helper_text + hosts)
    return [o for o, p in zip(out, range(parts)) if range(p, len(names), parts)]


def run_batch(exe, calls, timeout=900):
    """Runs exe over calls [(fn, out_dir, [input .npy paths])]; returns ({fn: failure
    lines}, the whole output). A function missing from the output (the runner died on
    an earlier one) gets the runner's exit."""
    fd, manifest = tempfile.mkstemp(prefix="shim-", suffix=".txt")
    with os.fdopen(fd, "w") as f:
        for fn, out_dir, ins in calls:
            f.write("\t".join([fn, out_dir] + list(ins)) + "\n")
    try:
        p = subprocess.run([exe, manifest], capture_output=True, text=True, timeout=timeout)
    finally:
        os.unlink(manifest)
    results, cur, lines = {}, None, []
    for ln in p.stdout.splitlines():
        m = re.match(r"^== (\w+)$", ln)
        if m:
            cur, lines = m.group(1), []
            continue
        m = re.match(r"^(ok|FAIL) (\w+)(?:: (.*))?$", ln)
        if m and m.group(2) == cur:
            results[cur] = [] if m.group(1) == "ok" else lines + [m.group(3)]
            cur = None
            continue
        if cur:
            lines.append(ln)
    for fn, _, _ in calls:
        if fn not in results:
            why = f"the runner exited {p.returncode} before finishing it"
            if cur == fn:
                why += " (while running it): " + "\n".join(lines[-20:] + p.stderr.splitlines()[-20:])
            results[fn] = [why]
    return results, p.stdout + p.stderr


def main(argv):
    if len(argv) == 5 and argv[0] == "--lib" and argv[2] == "module":
        try:
            compile_module(argv[1], argv[3], argv[4])
        except RuntimeError as e:
            print(e)
            return 1
        return 0
    print("usage: shimcc.py --lib DIR module SRC OUT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
