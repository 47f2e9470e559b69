#!/usr/bin/python3
"""tests/run/test_cli.py TDSLC: the command line of LANGUAGE.md §10 and bad input.

Exit statuses (0 ok, 1 program error, 2 bad command line or input file), messages that
name the parameter and both dtypes or shapes, the seeded generator checked against an
independent splitmix64 written here with NumPy, .npy inputs in every layout NumPy
writes, and robustness: deep nesting, size overflow, too many dims, const division by
zero — never a signal, always located. Every flag value is checked before use: --cpu
against LLVM 14's x86-64 processors (the list itself checked against llc-14), --gpu-arch
against NVIDIA's architectures, for every --emit kind, run and bench: a usage error
naming the valid values, never an internal error or a signal. Bounded diagnostics: a
file that is not UTF-8 text (NUL bytes, invalid UTF-8, a binary, random bytes) is
refused in one line; valid but meaningless text stops after -ferror-limit errors with
control bytes escaped and long lines cut. An empty file compiles to well-headed empty
output with a warning.
"""
import atexit
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import ROOT, Tally, same_values, test_subset  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="tdsl-cli-")
atexit.register(shutil.rmtree, TMP, True)
T = Tally()
check = T.check


def write(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def tdslc(*args, timeout=60, env=None):
    return subprocess.run([TDSLC] + list(args), capture_output=True, timeout=timeout, cwd=TMP, env=env)


def expect(name, p, status, pattern=None):
    err = p.stderr.decode("utf-8", "replace")
    ok = p.returncode == status and (pattern is None or re.search(pattern, err, re.M))
    check(name, ok, f"\n     exit {p.returncode} (want {status}), stderr:\n{err}")


TR = write("tr.tdsl", "fn tr(x: f32[2, 3]) -> f32[3, 2] { return x.t() }\n")
TWO = write("two.tdsl", "fn a(x: f32[2]) -> f32[2] { return x }\nfn b(x: f32[2]) -> f32[1] { return x[1:] }\n")


def splitmix(seed, n):
    mask = (1 << 64) - 1
    s, out = seed, []
    for _ in range(n):
        s = (s + 0x9E3779B97F4A7C15) & mask
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append(z ^ (z >> 31))
    return out


def gen_floats(seed, n, dtype):
    return np.array([((u >> 11) * 2.0 ** -53) * 2 - 1 for u in splitmix(seed, n)], dtype=np.float64).astype(dtype)


def main():
    # --- the seeded generator and the JSON of a view ---
    p = tdslc("run", TR, "--json")
    check("run --json exits 0", p.returncode == 0, p.stderr.decode())
    doc = json.loads(p.stdout) if p.returncode == 0 else {"outputs": [{}]}
    out = doc["outputs"][0]
    x = gen_floats(0, 6, np.float32).reshape(2, 3)
    check("json names the function", doc.get("function") == "tr")
    check("json output is PyTorch's transposed view",
          out.get("shape") == [3, 2] and out.get("strides") == [1, 3] and out.get("offset") == 0 and
          out.get("contiguous") is False and out.get("storage") == "input:x" and out.get("dtype") == "f32")
    got = np.array(out.get("data", []), dtype=np.float32)
    check("seed 0 draws splitmix64 values, row-major, rounded to f32", same_values(got, x.T.reshape(-1)))
    p = tdslc("run", TR, "--json", "--seed", "12345")
    got = np.array(json.loads(p.stdout)["outputs"][0]["data"], dtype=np.float32)
    check("--seed changes the stream", same_values(got, gen_floats(12345, 6, np.float32).reshape(2, 3).T.reshape(-1)))
    ints = write("ints.tdsl", "fn f(a: i32[5], b: bool[4], c: f32[2]) -> (i32[5], bool[4], f32[2]) { return a, b, c }\n")
    p = tdslc("run", ints, "--json", "--seed", "7")
    outs = json.loads(p.stdout)["outputs"] if p.returncode == 0 else []
    u = splitmix(7, 11)
    check("ints draw u >> 62, bools u >> 63, in declaration order",
          len(outs) == 3 and outs[0]["data"] == [v >> 62 for v in u[:5]] and
          outs[1]["data"] == [bool(v >> 63) for v in u[5:9]], p.stderr.decode())
    given = write("given.npy", b"")
    np.save(given, np.arange(5, dtype=np.int32))
    p = tdslc("run", ints, "--json", "--seed", "7", "--in", f"a={given}")
    outs = json.loads(p.stdout)["outputs"] if p.returncode == 0 else []
    check("a parameter given by --in draws nothing",
          len(outs) == 3 and outs[0]["data"] == [0, 1, 2, 3, 4] and outs[1]["data"] == [bool(v >> 63) for v in u[:4]])

    # --- --in with every layout NumPy writes ---
    a = np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5
    for label, arr in [("C order", a), ("Fortran order", np.asfortranarray(a))]:
        path = write(f"in_{label[0]}.npy", b"")
        np.save(path, arr)
        p = tdslc("run", TR, "--json", "--in", f"x={path}")
        data = json.loads(p.stdout)["outputs"][0]["data"] if p.returncode == 0 else None
        check(f"--in reads a {label} .npy", data == a.T.reshape(-1).tolist(), p.stderr.decode())
    outdir = os.path.join(TMP, "outs", "nested")
    p = tdslc("run", TR, "--out-dir", outdir)
    check("--out-dir is created and holds out0.npy and in_x.npy",
          p.returncode == 0 and os.path.exists(os.path.join(outdir, "out0.npy")) and
          os.path.exists(os.path.join(outdir, "in_x.npy")), p.stderr.decode())
    if p.returncode == 0:
        o, i = np.load(os.path.join(outdir, "out0.npy")), np.load(os.path.join(outdir, "in_x.npy"))
        check("out0.npy is the transpose of in_x.npy", same_values(o, i.T))
    p = tdslc("run", TR)
    check("run without --json prints the tensor with its strides",
          p.returncode == 0 and b"tensor(" in p.stdout and b"strides [1, 3]" in p.stdout, p.stdout.decode())

    # --- bad inputs: exit 2, a message naming the parameter ---
    wrong_dtype = write("f64.npy", b"")
    np.save(wrong_dtype, a.astype(np.float64))
    expect("an .npy of the wrong dtype is refused", tdslc("run", TR, "--in", f"x={wrong_dtype}"), 2,
           r"x.*f32.*f64|x.*f64.*f32")
    wrong_shape = write("shape.npy", b"")
    np.save(wrong_shape, a.T.copy())
    expect("an .npy of the wrong shape is refused", tdslc("run", TR, "--in", f"x={wrong_shape}"), 2,
           r"'x' is f32\[2, 3\] but the file holds f32\[3, 2\]")
    good = open(os.path.join(TMP, "in_C.npy"), "rb").read()
    expect("a truncated .npy is refused", tdslc("run", TR, "--in", f"x={write('trunc.npy', good[:-5])}"), 2, r"--in x=")
    expect("a truncated .npy header is refused", tdslc("run", TR, "--in", f"x={write('trunch.npy', good[:20])}"), 2,
           r"--in x=")
    expect("a file that is not .npy is refused", tdslc("run", TR, "--in", f"x={write('not.npy', 'hello, world')}"), 2,
           r"--in x=")
    expect("a missing .npy is refused", tdslc("run", TR, "--in", "x=/nonexistent/x.npy"), 2, r"--in x=")
    expect("--in naming no parameter is refused", tdslc("run", TR, "--in", f"y={wrong_dtype}"), 2, r"no parameter 'y'")
    expect("--in without '=' is refused", tdslc("run", TR, "--in", "x"), 2, r"NAME=FILE")
    expect("--in naming one parameter twice is refused",
           tdslc("run", TR, "--in", f"x={wrong_dtype}", "--in", f"x={wrong_shape}"), 2, r"--in x is given twice")

    # --- the command line ---
    expect("a missing source file is exit 2", tdslc("run", "/nonexistent.tdsl"), 2, r"cannot open")
    expect("several functions without --fn list them", tdslc("run", TWO), 2, r"choose one with --fn \(a, b\)")
    expect("--fn naming no function lists them", tdslc("run", TWO, "--fn", "c"), 2, r"no function 'c'.*a, b")
    p = tdslc("run", TWO, "--fn", "b", "--json")
    check("--fn picks the function", p.returncode == 0 and json.loads(p.stdout)["function"] == "b")
    expect("an unknown option is exit 2", tdslc(TR, "--frobnicate"), 2, r"unknown option")
    expect("an unknown --emit kind is exit 2", tdslc(TR, "--emit=exe"), 2, r"unknown --emit kind")
    expect("a conflicting --target is exit 2", tdslc(TR, "--emit=ptx", "--target", "cpu"), 2, r"conflicts")
    expect("a bad --seed is exit 2", tdslc("run", TR, "--seed", "-1"), 2, r"--seed")
    p = tdslc("--version")
    check("--version prints a version", p.returncode == 0 and p.stdout.startswith(b"tdslc "))
    p = tdslc("--print-include-dir")
    inc = p.stdout.decode().strip()
    check("--print-include-dir holds tdsl.h", os.path.exists(os.path.join(inc, "tdsl.h")), inc)
    p = tdslc("--help")
    check("--help prints the usage", p.returncode == 0 and b"usage: tdslc" in p.stdout)
    usage, _, rest = p.stdout.decode().partition("\n\n")
    names = sorted(set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", usage.replace("usage: tdslc", ""))) - {"-h"})
    columns = [line[:24] for line in rest.split("\n") if line.startswith("  -")]
    def listed(name):
        return any(re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", c) for c in columns)
    check("--help has a line for each option of its usage", names and all(listed(n) for n in names),
          [n for n in names if not listed(n)])
    check("--help lists the exit statuses", "exit status: 0 success" in rest and "4 an internal" in rest, rest)
    with open(os.path.join(ROOT, "docs", "tdslc.1"), encoding="utf-8") as f:
        man = f.read().replace("\\-", "-")
    check("the man page names each option of --help", all(n in man for n in names),
          [n for n in names if n not in man])
    if tdslc("--version").stdout.strip().endswith(b"0.1.0"):
        check("the man page has tdslc's version", '"tdsl 0.1.0"' in man)
    ln = os.path.join(ROOT, "examples", "layer_norm.tdsl")
    p = tdslc(ln, "--emit=ptx", "--gpu-arch=sm_90", "-o", os.path.join(TMP, "ln.ptx"))
    if p.returncode == 0:  # a tdslc with LLVM
        check("--gpu-arch above sm_86 warns and says what it emits",
              re.search(rb"tdslc: warning: --gpu-arch=sm_90 .*'.target sm_86'", p.stderr), p.stderr.decode())
        p = tdslc(ln, "--emit=ptx", "--gpu-arch=sm_86", "-o", os.path.join(TMP, "ln.ptx"))
        check("--gpu-arch=sm_86 does not warn", p.returncode == 0 and not p.stderr, p.stderr.decode())
    p = tdslc(ln, "--emit=cuda", "--gpu-arch=sm_90", "-o", os.path.join(TMP, "ln.cu"))
    check("--emit=cuda --gpu-arch=sm_90 does not warn", p.returncode == 0 and not p.stderr, p.stderr.decode())
    p = tdslc(TR, "--emit=ir", "--json")
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    check("--emit=ir --json lists the parameter and the view result",
          [v["name"] for v in doc.get("values", [])] == ["x", "out0"] and doc["values"][1]["kind"] == "view" and
          doc["values"][1]["strides"] == [1, 3] and doc["kernels"] == [], p.stdout.decode())
    out_path = os.path.join(TMP, "ir.txt")
    p = tdslc(TR, "--emit=ir", "-o", out_path)
    check("-o writes the output file", p.returncode == 0 and os.path.getsize(out_path) > 0)
    p = tdslc(TR, "--emit=ir", "-o", "-")
    with open(out_path, "rb") as f:
        check("-o - writes to stdout, no file named '-'",
              p.returncode == 0 and p.stdout == f.read() and not os.path.exists(os.path.join(TMP, "-")), p.stderr.decode())
    # a device or a pipe is written in place, never renamed over (as root, a rename
    # would have replaced /dev/null with a regular file)
    p = tdslc(TR, "--emit=c", "-o", os.devnull)
    check("-o /dev/null writes to the device and leaves it a device",
          p.returncode == 0 and stat.S_ISCHR(os.stat(os.devnull).st_mode), p.stderr.decode())
    fifo = os.path.join(TMP, "fifo")
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE)
    p = tdslc(TR, "--emit=ir", "-o", fifo)
    got = reader.communicate(timeout=60)[0]
    with open(out_path, "rb") as f:
        check("-o FIFO writes through the pipe and leaves it a pipe",
              p.returncode == 0 and got == f.read() and stat.S_ISFIFO(os.stat(fifo).st_mode), p.stderr.decode())
    p = tdslc(TR, "--emit=tokens")
    check("--emit=tokens prints tokens", p.returncode == 0 and b"IDENT" in p.stdout, p.stdout.decode()[:200])
    p = tdslc(TR, "--emit=ast")
    check("--emit=ast prints the tree", p.returncode == 0 and b"tr" in p.stdout)
    kern = write("kern.tdsl", "fn f(x: f32[2, 3]) -> f32[2, 3] {\n  return x * 2\n}\n")
    p = tdslc("run", kern, "--json")
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    check("a program needing a kernel runs through the C backend",
          p.returncode == 0 and doc["outputs"][0]["storage"] == "new", p.stderr.decode())
    p_c = tdslc("run", kern, "--json", "--backend", "c")
    p_l = tdslc("run", kern, "--json", "--backend", "llvm")
    # TDSL_CFLAGS: more flags for cc, after tdslc's own and before the files
    cflags = lambda v: dict(os.environ, TDSL_CFLAGS=v)  # noqa: E731
    p = tdslc("run", kern, "--json", "--backend", "c", env=cflags("  -O0\t-g  -DTDSL_CLI_TEST=1 "))
    check("TDSL_CFLAGS='-O0 -g ...' builds the same results",
          p.returncode == 0 and p_c.returncode == 0 and json.loads(p.stdout) == json.loads(p_c.stdout), p.stderr.decode())
    stop = write("stop.h", "#error TDSL_CFLAGS reached cc\n")
    p = tdslc("run", kern, "--backend", "c", env=cflags(f"-include {stop}"))
    expect("TDSL_CFLAGS reaches cc, whose failure names them: exit 4", p, 4,
           r"with TDSL_CFLAGS='-include .*stop\.h'(.|\n)*TDSL_CFLAGS reached cc")
    p = tdslc("run", kern, "--backend", "c", env=cflags(" ".join(["-g"] * 33)))
    expect("TDSL_CFLAGS of more than 32 flags: exit 2", p, 2, r"^tdslc: error: TDSL_CFLAGS holds more than 32 flags$")
    llvm_built = not (p_l.returncode == 2 and b"built without LLVM" in p_l.stderr)
    if llvm_built:
        check("--backend llvm runs and agrees with --backend c",
              p_l.returncode == 0 and p_c.returncode == 0 and json.loads(p_l.stdout) == json.loads(p_c.stdout),
              p_l.stderr.decode() + p_c.stderr.decode())
        # the default backend is llvm: in-process, so no C compiler is needed at all
        mlp = os.path.join(HERE, "..", "..", "examples", "mlp.tdsl")
        p = subprocess.run([TDSLC, "run", mlp], capture_output=True, timeout=120, cwd=TMP,
                           env=dict(os.environ, PATH="/nonexistent"))
        check("run works with no cc on PATH (the default backend is llvm)",
              p.returncode == 0 and b"tensor(" in p.stdout, p.stderr.decode())
        p = subprocess.run([TDSLC, "run", kern, "--backend", "c"], capture_output=True, timeout=120, cwd=TMP,
                           env=dict(os.environ, PATH="/nonexistent"))
        expect("--backend c with no cc on PATH is an internal error naming cc", p, 4, r"'cc'")
        p = tdslc("run", kern, "--time")
        check("run --time prints the LLVM stages", p.returncode == 0 and b"tdslc: time optimize" in p.stderr and
              b"tdslc: time jit" in p.stderr, p.stderr.decode())
    else:
        expect("--backend llvm says the build has no LLVM", p_l, 2, r"built without LLVM")

    # --- bench: one JSON object; flops and bytes follow from the program, never timing thresholds ---
    mm = write("mm.tdsl", "fn f(a: f32[8, 16], b: f32[16, 4]) -> f32[8, 4] { return relu(a @ b) }\n")
    p = tdslc("bench", mm, "--reps", "3", "--json")
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    check("bench --json prints the documented keys",
          sorted(doc) == ["backend", "bytes", "flops", "gbps", "gflops", "max_ms", "median_ms", "min_ms", "peak_bytes",
                          "threads", "warmup_calls"],
          p.stderr.decode())
    check("bench --json counts its warm-up: TDSL_STREAM_SETTLE (9) calls before 3 timed ones",
          doc.get("warmup_calls") == 9, str(doc))
    check("bench --json names its backend and threads", doc.get("backend") in ("llvm", "c") and doc.get("threads", 0) >= 1,
          str(doc))
    check("bench counts 2*M*N*K flops for the matmul plus one per relu element",
          doc.get("flops") == 2 * 8 * 4 * 16 + 8 * 4, str(doc))
    check("bench counts the bytes of the parameters and the result", doc.get("bytes") == 4 * (8 * 16 + 16 * 4 + 8 * 4))
    check("bench times are ordered", doc and doc["min_ms"] <= doc["median_ms"] <= doc["max_ms"])
    p = tdslc("bench", mm, "--reps", "2", "--backend", "c", env=dict(os.environ, TDSL_NUM_THREADS="3"))
    check("bench without --json prints a summary line naming its backend and threads",
          p.returncode == 0 and b"f (c backend, 3 threads): 2 calls, median" in p.stdout, p.stdout.decode() + p.stderr.decode())
    # peak memory: a call reading 8 MB and writing 8 MB holds both at once (never less), and
    # nothing near a third copy (driver/rss.c: the inputs plus what the resident set grew by)
    big = write("big.tdsl", "fn f(a: f32[2048, 1024]) -> f32[2048, 1024] { return a * 2 + 1 }\n")
    p = tdslc("bench", big, "--reps", "3", "--json")
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    moved = 2 * 4 * 2048 * 1024
    with open(TDSLC, "rb") as f:  # AddressSanitizer's quarantine and shadow memory grow the resident set
        sanitized = b"__asan_init" in f.read()
    if os.path.exists("/proc/self/clear_refs"):
        check("bench --json's peak_bytes holds the input and the output" + ("" if sanitized else ", not a third copy"),
              doc.get("bytes") == moved and 0.95 * moved <= doc.get("peak_bytes", -1)
              and (sanitized or doc["peak_bytes"] < 1.45 * moved), str(doc))
    else:
        check("bench --json's peak_bytes is -1 where /proc cannot say", doc.get("peak_bytes") == -1, str(doc))
    expect("bench --reps 0 is refused", tdslc("bench", mm, "--reps", "0"), 2, r"--reps")

    # --- robustness: located errors, exit 1, never a signal ---
    cases = {
        "deep parentheses": "fn f(x: f32[2]) -> f32[2] { return " + "(" * 50000 + "x" + ")" * 50000 + " }\n",
        "deep brackets": "fn f(x: f32[2]) -> f32[2] { return x" + "[" * 50000 + "0" + "]" * 50000 + " }\n",
        "a long method chain": "fn f(x: f32[2]) -> f32[2] { return x" + ".relu()" * 50000 + " }\n",
        "a long unary chain": "fn f(x: f32[2]) -> f32[2] { return " + "-" * 50000 + "x }\n",
        "a control character": "fn f(x: f32[2]) -> f32[2] {\n  return x\x01\n}\n",
        "sizes overflowing 64 bits": "fn f(x: f32[4294967296, 4294967296, 16]) -> f32[1] { return x[0, 0, 0:1] }\n",
        "more than 8 dims": "fn f(x: f32[1, 1, 1, 1, 1, 1, 1, 1, 1]) -> f32[1] { return x.view(1) }\n",
        "const division by zero": "const A = 4 // 0\nfn f(x: f32[2]) -> f32[2] { return x }\n",
        "a float const division by zero": "const A = 1.0 / 0\nfn f(x: f32[2]) -> f32[2] { return x }\n",
        "a huge integer literal": "fn f(x: f32[99999999999999999999999]) -> f32[1] { return x }\n",
        "a lone brace": "}\n",
        "an unterminated function": "fn f(x: f32[2]) -> f32[2] {\n  return x\n",
    }
    for label, src in cases.items():
        path = write("robust.tdsl", src)
        for args in (["--emit=ir"], ["run"]):
            argv = ["run", path] if args == ["run"] else [path] + args
            p = tdslc(*argv)
            err = p.stderr.decode("utf-8", "replace")
            check(f"{label} ({args[0]}): located error, exit 1",
                  p.returncode == 1 and re.search(r"robust\.tdsl:\d+:\d+: error: ", err) and "^" in err,
                  f"exit {p.returncode}: {err[:500]}")
    # a chain of operators is flat, not deep: it compiles, whatever its length (issue 31.3);
    # the sanitizer pass (a subset) takes the 20,000 terms, a quarter of the time
    # there (the LLVM IR of the chain grows faster than its length), far past any nesting limit
    terms = 50000 if test_subset() == 1 else 20000
    p = tdslc("run", write("flat.tdsl", "fn f(x: f32[2]) -> f32[2] { return x" + " + x" * terms + " }\n"), "--json")
    check(f"a long operator chain ({terms} terms) compiles and runs", p.returncode == 0, p.stderr.decode()[:500])
    p = tdslc(write("empty.tdsl", ""), "--emit=ir")
    check("an empty file: no function, exit 2, no crash",
          p.returncode == 2 and b"defines no function" in p.stderr, p.stderr.decode())
    p = tdslc(write("empty.tdsl", ""), "--emit=ast")
    check("an empty file parses to an empty program", p.returncode == 0)
    p = tdslc(write("empty.tdsl", ""), "--emit=tokens")
    check("an empty file has no tokens to speak of", p.returncode == 0)

    check_not_text()
    check_error_limit()
    check_empty_file()
    check_cpu_flag()
    check_gpu_arch_flag()
    return T.summary()


# ---------------------------------------------------------------------------
# Files that are not UTF-8 text: refused in one line, exit 2 (a bad input file, as an
# unreadable one is: there is no program text to point into), before any stage.
# ---------------------------------------------------------------------------
def check_not_text():
    import random
    r = random.Random(31)
    with open(TDSLC, "rb") as f:
        elf = f.read(4096)
    cases = {
        "4 KiB of an executable": elf,
        "20 KB of random bytes": bytes(r.randrange(256) for _ in range(20000)),
        "a NUL byte": b"fn f(x: f32[2]) -> f32[2] {\n  return x\0\n}\n",
        "invalid UTF-8": b"fn f(x: f32[2]) -> f32[2] {\n  return \xff\xfe x\n}\n",
        "invalid UTF-8 in a comment": b"# caf\xc3\n fn f(x: f32[2]) -> f32[2] { return x }\n",
        "an overlong UTF-8 sequence": b"fn f(x: f32[2]) -> f32[2] { return x }\n# \xc0\xaf\n",
    }
    for label, data in cases.items():
        path = write("bin.tdsl", data)
        for argv in ([path], [path, "--emit=tokens"], ["run", path]):
            p = tdslc(*argv)
            err = p.stderr.decode("utf-8", "replace")
            check(f"{label} ({' '.join(argv[:-1] if argv[0] == 'run' else argv[1:]) or 'default'}): "
                  "refused in one line, exit 2",
                  p.returncode == 2 and err.count("\n") == 1 and len(err) < 300 and
                  re.match(r"tdslc: error: '.*bin\.tdsl' is not UTF-8 text: (invalid|NUL) byte 0x[0-9A-F]{2} "
                           r"at line \d+, byte column \d+\n$", err) and not p.stdout,
                  f"exit {p.returncode}, {len(err)} bytes: {err[:300]}")
    p = tdslc(write("bin.tdsl", b"fn f(x: f32[2]) -> f32[2] {\n  return \xff x\n}\n"))
    check("the refusal says where the first bad byte is",
          b"invalid byte 0xFF at line 2, byte column 10" in p.stderr, p.stderr.decode("utf-8", "replace"))
    p = tdslc(write("utf8.tdsl", "# caf\u00e9 \u2014 \U0001F600\nfn f(x: f32[2]) -> f32[2] { return x }\n"))
    check("UTF-8 text of 2, 3 and 4 bytes is accepted", p.returncode == 0, p.stderr.decode())


# ---------------------------------------------------------------------------
# Valid text that is no program: at most -ferror-limit errors (default 20), then one
# "too many errors" line; control characters escaped; lines cut around the caret.
# ---------------------------------------------------------------------------
def check_error_limit():
    many = write("many.tdsl", "fn f(x: f32[2]) -> f32[2] {\n" +
                 "".join(f"    y{i} = x + z{i}\n" for i in range(30)) + "    return x\n}\n")
    p = tdslc(many, "--emit=ir")
    err = p.stderr.decode()
    errors = re.findall(r"^\S*many\.tdsl:\d+:\d+: error: ", err, re.M)
    check("30 errors: the first 20, then 'too many errors emitted, stopping now', exit 1",
          p.returncode == 1 and len(errors) == 20 and
          err.rstrip("\n").split("\n")[-1] == "tdslc: error: too many errors emitted, stopping now [-ferror-limit=20]",
          f"exit {p.returncode}, {len(errors)} errors:\n{err[-400:]}")
    for n, want in (("0", 30), ("5", 5), ("30", 30), ("29", 29)):
        p = tdslc(many, "--emit=ir", f"-ferror-limit={n}")
        err = p.stderr.decode()
        got = len(re.findall(r"^\S*many\.tdsl:\d+:\d+: error: ", err, re.M))
        stopped = "too many errors emitted" in err
        check(f"-ferror-limit={n}: {want} errors{', then the stop line' if want < 30 else ', no stop line'}",
              p.returncode == 1 and got == want and stopped == (want < 30), f"{got} errors, stopped {stopped}")
    p = tdslc("run", many, "-ferror-limit", "3")
    check("run takes -ferror-limit N too", p.returncode == 1 and
          len(re.findall(rb"^\S*many\.tdsl:\d+:\d+: error: ", p.stderr, re.M)) == 3, p.stderr.decode())
    for bad in ("-ferror-limit=x", "-ferror-limit=-1", "-ferror-limit="):
        expect(f"{bad} is a usage error", tdslc(many, bad), 2, r"-ferror-limit takes a non-negative integer")
    import random
    r = random.Random(7)
    alphabet = [chr(c) for c in range(1, 32) if c != 10] + [chr(c) for c in range(32, 127)] * 3 + ["\n"] * 8
    garbage = write("garbage.tdsl", "".join(r.choice(alphabet) for _ in range(20000)))
    p = tdslc(garbage, "--emit=ir")
    err = p.stderr.decode("utf-8", "replace")
    lines = err.split("\n")
    check("20 KB of control characters and ASCII: exit 1, a bounded report",
          p.returncode == 1 and len(re.findall(r"^\S*garbage\.tdsl:\d+:\d+: error: ", err, re.M)) == 20 and
          "too many errors emitted" in err and len(err) < 20 * 3 * 130 + 200, f"exit {p.returncode}, {len(err)} bytes")
    check("the report holds no control byte but newlines", not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", err),
          repr([l for l in lines if re.search(r"[\x00-\x09\x0b-\x1f\x7f]", l)][:2]))
    check("control characters are shown as <U+XXXX>", "<U+00" in err, err[:300])
    check("every echoed line is at most 4 + 3 + 100 + 3 columns", all(len(l) <= 110 for l in lines if l.startswith("    ")),
          max(lines, key=len))
    wide = write("wide.tdsl", "fn f(x: f32[2]) -> f32[2] {\n    return x +" + " " * 4000 + "y" + " " * 100 + "+ x" +
                 " " * 4000 + "# a comment\n}\n")
    p = tdslc(wide, "--emit=ir")
    err = p.stderr.decode().split("\n")
    src, caret = (err[1], err[2]) if len(err) > 2 else ("", "")
    check("a 8 KB line is cut to a window around the caret, '...' at both cuts",
          p.returncode == 1 and re.match(r"\S*wide\.tdsl:2:4015: error: ", err[0]) and src.startswith("    ...") and
          src.endswith("...") and len(src) == 110 and caret.endswith("^") and src[len(caret) - 1] == "y",
          "\n".join(err[:3]))


# ---------------------------------------------------------------------------
# A file without functions (empty, or only constants) compiles as an empty module: the
# output names the file, declares nothing, builds, and tdslc warns once.
# ---------------------------------------------------------------------------
def check_empty_file():
    inc = tdslc("--print-include-dir").stdout.decode().strip()
    for label, src in (("an empty file", ""), ("a file with only a constant", "const N = 4\n")):
        path = write("nothing.tdsl", src)
        warn = b"tdslc: warning: " + path.encode() + b" defines no function: the output declares none\n"
        for kind in ("c", "header", "cuda"):
            p = tdslc(path, f"--emit={kind}")
            first = p.stdout.split(b"\n", 1)[0].decode()
            check(f"{label}, --emit={kind}: exit 0, one warning, the output names the file",
                  p.returncode == 0 and p.stderr == warn and first.startswith(f"// Generated by tdslc from {path}:") and
                  b"?" not in p.stdout.split(b"\n", 1)[0], f"exit {p.returncode}: {p.stderr.decode()} {first}")
        p = tdslc(path)
        check(f"{label}: the default kind is C, with no '?'", p.returncode == 0 and b"from ?" not in p.stdout)
        for kind, ext, cc in (("c", "c", ["cc", "-std=c11", "-c"]), ("header", "h", ["cc", "-std=c11", "-fsyntax-only"])):
            out = os.path.join(TMP, f"nothing.{ext}")
            tdslc(path, f"--emit={kind}", "-o", out)
            q = subprocess.run(cc + ["-Wall", "-Werror", "-I", inc, out, "-o", os.path.join(TMP, "nothing.o")],
                               capture_output=True, timeout=60)
            check(f"{label}, --emit={kind}: the empty output compiles", q.returncode == 0, q.stderr.decode())
        p = tdslc(path, "--emit=header")
        check(f"{label}: the header's guard comes from the file's name", b"#ifndef TDSL_GEN_NOTHING_H" in p.stdout)
        p = tdslc(path, "--emit=llvm")
        if not (p.returncode == 2 and b"built without LLVM" in p.stderr):
            for kind in ("llvm", "obj", "ptx"):
                p = tdslc(path, f"--emit={kind}", "-o", os.path.join(TMP, "nothing.out"))
                check(f"{label}, --emit={kind}: exit 0 and the warning", p.returncode == 0 and p.stderr == warn,
                      p.stderr.decode())


# ---------------------------------------------------------------------------
# --cpu and --gpu-arch: checked for every --emit kind, run and bench, before use.
# ---------------------------------------------------------------------------
KINDS = ("tokens", "ast", "ir", "kernels", "c", "header", "llvm", "asm", "obj", "cuda", "ptx", "dot")


def kinds_for(i):
    """The --emit kinds the ith bad flag value is tried with: every one; in the sanitizer
    pass (oracle.test_subset) a few by turns, every kind still tried with some bad value
    (each start of the sanitized tdslc costs ~30 ms; the plain pass tried them all)."""
    k = test_subset()
    return KINDS if k == 1 else KINDS[i * 3 % len(KINDS):][:3]


def has_llvm():
    p = tdslc(TR, "--emit=llvm")
    return not (p.returncode == 2 and b"built without LLVM" in p.stderr)


def llc14():
    """llc-14: declared with llvm-14-dev (its package llvm-14), so missing is a failure."""
    for path in (shutil.which("llc-14"), "/usr/lib/llvm-14/bin/llc"):
        if path and os.path.exists(path):
            return path
    return None


def listed_cpus():
    p = tdslc("--cpu=help")
    lines = p.stdout.decode().split("\n")
    return p, [w for line in lines[1:] for w in line.split()]


def check_cpu_flag():
    p, names = listed_cpus()
    check("--cpu=help needs no file, exits 0 and lists host first, then LLVM's names",
          p.returncode == 0 and names[:1] == ["host"] and "haswell" in names and "x86-64-v4" in names,
          p.stdout.decode()[:300])
    check("--cpu=help with a file lists too and compiles nothing",
          tdslc(TR, "--cpu=help").stdout == p.stdout)
    bad = {"bogus": r"not a CPU LLVM 14 knows for x86-64", "i386": r"a 32-bit CPU: it cannot run x86-64 code",
           "cortex-a53": r"not a CPU LLVM 14 knows", "": r"an empty CPU name",
           "haswel": r"did you mean 'haswell'\?", "HASWELL": r"not a CPU"}
    for i, (name, why) in enumerate(bad.items()):
        for kind in kinds_for(i):
            p = tdslc(TR, f"--emit={kind}", f"--cpu={name}", "-o", os.path.join(TMP, "cpu.out"))
            err = p.stderr.decode()
            check(f"--emit={kind} --cpu={name!s}: usage error naming the valid CPUs",
                  p.returncode == 2 and re.match(r"tdslc: error: --cpu=" + re.escape(name) + ": .*" + why, err) and
                  "tdslc: note: --cpu takes one of:\n    host alderlake" in err and "znver3" in err and
                  "LLVM ERROR" not in err and "recognized processor" not in err and not p.stdout,
                  f"exit {p.returncode}: {err[:300]}")
        for mode in ("run", "bench"):
            p = tdslc(mode, TR, f"--cpu={name}")
            check(f"{mode} --cpu={name}: usage error", p.returncode == 2 and b"--cpu takes one of" in p.stderr,
                  p.stderr.decode()[:300])
    expect("--cpu without a value is a usage error", tdslc(TR, "--cpu"), 2, r"missing CPU name after '--cpu'")
    for kind in ("c", "kernels", "ir") + (("llvm", "asm", "obj") if has_llvm() else ()):
        p = tdslc(TR, f"--emit={kind}", "--cpu=host", "-o", os.path.join(TMP, "cpu.out"))
        q = tdslc(TR, f"--emit={kind}", "-o", os.path.join(TMP, "cpu2.out"))
        check(f"--emit={kind} --cpu=host is the default", p.returncode == 0 and not p.stderr and
              open(os.path.join(TMP, "cpu.out"), "rb").read() == open(os.path.join(TMP, "cpu2.out"), "rb").read() or
              kind == "obj", p.stderr.decode())
    mm = write("cpu_mm.tdsl", "fn f(a: f32[64, 64], b: f32[64, 64]) -> f32[64, 64] { return a @ b }\n")
    p = tdslc(mm, "--emit=kernels", "--cpu=skylake-avx512")
    q = tdslc(mm, "--emit=kernels", "--cpu=x86-64")
    check("--emit=kernels follows --cpu (the CPU schedule)", p.returncode == 0 and q.returncode == 0 and
          p.stdout != q.stdout, p.stderr.decode())
    ref = tdslc("run", mm, "--json", "--backend", "c")
    for backend in ("c", "llvm") if has_llvm() else ("c",):
        for cpu in ("skylake-avx512", "x86-64", "haswell"):
            p = tdslc("run", mm, "--json", "--backend", backend, f"--cpu={cpu}")
            ok = p.returncode == 0 and ref.returncode == 0
            if ok:
                got = np.array(json.loads(p.stdout)["outputs"][0]["data"])
                want = np.array(json.loads(ref.stdout)["outputs"][0]["data"])
                ok = np.allclose(got, want, rtol=1e-5, atol=1e-5)
            check(f"run --backend {backend} --cpu={cpu}: runs here and agrees with the host schedule", ok,
                  p.stderr.decode()[:300])
        p = tdslc("bench", mm, "--reps", "1", "--backend", backend, "--cpu=skylake-avx512")
        check(f"bench --backend {backend} takes --cpu", p.returncode == 0, p.stderr.decode()[:300])
    p = tdslc(TR, "--emit=ptx", "--cpu=haswell", "-o", os.path.join(TMP, "x.ptx")) if has_llvm() else None
    if p is not None:
        check("--cpu on the cuda target warns that it has no effect",
              p.returncode == 0 and p.stderr == b"tdslc: warning: --cpu has no effect on --target cuda "
                                                b"(the GPU's is --gpu-arch)\n", p.stderr.decode())
    if not has_llvm():
        return
    # The list against LLVM 14 itself: every name llc-14 knows for x86-64 either compiles
    # x86-64 code (llc-14 and tdslc agree) and is listed, or llc-14 refuses it and so does tdslc.
    llc = llc14()
    check("llc-14 is installed (llvm-14, with llvm-14-dev)", llc is not None)
    if not llc:
        return
    q = subprocess.run([llc, "-march=x86-64", "-mcpu=help"], capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    text = q.stderr.decode() + q.stdout.decode()
    body = text.split("Available CPUs for this target:", 1)[-1].split("Available features", 1)[0]
    llvm_names = re.findall(r"^\s+(\S+)\s+- Select the", body, re.M)
    check("llc-14 -mcpu=help lists x86 processors", len(llvm_names) > 50, text[:300])
    ll = write("ret.ll", "define i32 @f(i32 %a) {\n  ret i32 %a\n}\n")
    ours = set(names) - {"host"}
    check("every listed CPU is one llc-14 knows", ours <= set(llvm_names), sorted(ours - set(llvm_names)))
    wrong = []
    for name in llvm_names:
        # (the sanitizer pass, TDSL_EMIT_ONLY: tdslc's refusals alone; llc-14's agreement
        # with the list is no work of tdslc's and was checked in the release pass)
        r = None if os.environ.get("TDSL_EMIT_ONLY") else subprocess.run(
            [llc, "-mtriple=x86_64-pc-linux-gnu", f"-mcpu={name}", ll, "-o", os.devnull], capture_output=True,
            timeout=60)
        if r is not None and (r.returncode == 0) != (name in ours):
            wrong.append(f"{name}: llc-14 exit {r.returncode}, listed {name in ours}")
        if name not in ours:
            p = tdslc(TR, "--emit=obj", f"--cpu={name}", "-o", os.path.join(TMP, "cpu.o"))
            if p.returncode != 2 or b"a 32-bit CPU" not in p.stderr:
                wrong.append(f"{name}: tdslc exit {p.returncode} {p.stderr.decode()[:100]}")
    check("the listed CPUs are exactly llc-14's that compile x86-64 code; the rest refused as 32-bit", not wrong,
          wrong)
    bad_emit = []
    for name in sorted(ours):
        p = tdslc(TR, "--emit=obj", f"--cpu={name}", "-o", os.path.join(TMP, "cpu.o"))
        if p.returncode != 0 or p.stderr:
            bad_emit.append(f"{name}: exit {p.returncode} {p.stderr.decode()[:100]}")
    check("every listed CPU compiles an object with no warning", not bad_emit, bad_emit)


def check_gpu_arch_flag():
    p = tdslc("--gpu-arch=help")
    archs = p.stdout.decode().split("\n")
    words = [w for line in archs[3:] for w in line.split()]
    check("--gpu-arch=help needs no file and lists sm_30 to sm_121",
          p.returncode == 0 and words[:1] == ["sm_30"] and words[-1:] == ["sm_121"] and "sm_86" in words and
          "sm_90" in words, p.stdout.decode())
    llvm = has_llvm()
    for i, arch in enumerate(("sm_20", "sm_1", "sm_999", "sm_100000000000", "sm_80f", "sm_86a", "sm_90b", "sm_", "",
                              "80", "SM_80", "sm_080", "compute_80", "sm_90aa")):
        for kind in kinds_for(i):
            p = tdslc(TR, f"--emit={kind}", f"--gpu-arch={arch}", "-o", os.path.join(TMP, "gpu.out"))
            err = p.stderr.decode()
            check(f"--emit={kind} --gpu-arch={arch}: usage error naming the valid architectures",
                  p.returncode == 2 and err.startswith(f"tdslc: error: --gpu-arch={arch}: not a GPU architecture") and
                  "sm_30 sm_32" in err and "sm_121" in err and not p.stdout, f"exit {p.returncode}: {err[:300]}")
        for mode in ("run", "bench"):
            p = tdslc(mode, TR, "--target", "cuda", f"--gpu-arch={arch}")
            check(f"{mode} --gpu-arch={arch}: usage error", p.returncode == 2 and b"not a GPU architecture" in p.stderr,
                  p.stderr.decode()[:200])
    expect("--gpu-arch without a value is a usage error", tdslc(TR, "--gpu-arch"), 2, r"missing architecture")
    for arch in ("sm_30", "sm_75", "sm_86", "sm_90", "sm_90a", "sm_100f", "sm_121"):
        for kind in ("ptx",) if llvm else ():
            p = tdslc(TR, f"--emit={kind}", f"--gpu-arch={arch}", "-o", os.path.join(TMP, "gpu.ptx"))
            warns = int(re.match(r"sm_(\d+)", arch).group(1)) > 86
            check(f"--emit=ptx --gpu-arch={arch} compiles{' (with the sm_86 warning)' if warns else ''}",
                  p.returncode == 0 and (b"is newer than LLVM 14's PTX target" in p.stderr) == warns, p.stderr.decode())
        p = tdslc(TR, "--emit=cuda", f"--gpu-arch={arch}", "-o", os.path.join(TMP, "gpu.cu"))
        check(f"--emit=cuda --gpu-arch={arch} compiles", p.returncode == 0 and not p.stderr, p.stderr.decode())
    p = tdslc(TR, "--emit=c", "--gpu-arch=sm_80", "-o", os.path.join(TMP, "gpu.c"))
    check("--gpu-arch on the cpu target warns that it has no effect",
          p.returncode == 0 and p.stderr == b"tdslc: warning: --gpu-arch has no effect on --target cpu\n",
          p.stderr.decode())


if __name__ == "__main__":
    sys.exit(main())
