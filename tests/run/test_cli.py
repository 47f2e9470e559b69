#!/usr/bin/python3
"""tests/run/test_cli.py TDSLC: the command line of LANGUAGE.md §10 and bad input.

Exit statuses (0 ok, 1 program error, 2 bad command line or input file), messages that
name the parameter and both dtypes or shapes, the seeded generator checked against an
independent splitmix64 written here with NumPy, .npy inputs in every layout NumPy
writes, and robustness: deep nesting, NUL bytes, invalid UTF-8, an empty file, size
overflow, too many dims, const division by zero — never a signal, always located.
"""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import ROOT, Tally, same_values  # noqa: E402

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
          sorted(doc) == ["backend", "bytes", "flops", "gbps", "gflops", "max_ms", "median_ms", "min_ms", "threads"],
          p.stderr.decode())
    check("bench --json names its backend and threads", doc.get("backend") in ("llvm", "c") and doc.get("threads", 0) >= 1,
          str(doc))
    check("bench counts 2*M*N*K flops for the matmul plus one per relu element",
          doc.get("flops") == 2 * 8 * 4 * 16 + 8 * 4, str(doc))
    check("bench counts the bytes of the parameters and the result", doc.get("bytes") == 4 * (8 * 16 + 16 * 4 + 8 * 4))
    check("bench times are ordered", doc and doc["min_ms"] <= doc["median_ms"] <= doc["max_ms"])
    p = tdslc("bench", mm, "--reps", "2", "--backend", "c", env=dict(os.environ, TDSL_NUM_THREADS="3"))
    check("bench without --json prints a summary line naming its backend and threads",
          p.returncode == 0 and b"f (c backend, 3 threads): 2 calls, median" in p.stdout, p.stdout.decode() + p.stderr.decode())
    expect("bench --reps 0 is refused", tdslc("bench", mm, "--reps", "0"), 2, r"--reps")

    # --- robustness: located errors, exit 1, never a signal ---
    cases = {
        "deep parentheses": "fn f(x: f32[2]) -> f32[2] { return " + "(" * 50000 + "x" + ")" * 50000 + " }\n",
        "deep brackets": "fn f(x: f32[2]) -> f32[2] { return x" + "[" * 50000 + "0" + "]" * 50000 + " }\n",
        "a long operator chain": "fn f(x: f32[2]) -> f32[2] { return x" + " + x" * 50000 + " }\n",
        "a long unary chain": "fn f(x: f32[2]) -> f32[2] { return " + "-" * 50000 + "x }\n",
        "a NUL byte": "fn f(x: f32[2]) -> f32[2] {\n  return x\0\n}\n",
        "invalid UTF-8": b"fn f(x: f32[2]) -> f32[2] {\n  return \xff\xfe x\n}\n",
        "invalid UTF-8 in a comment": b"# caf\xc3\n fn f(x: f32[2]) -> f32[2] { return x }\n",
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
    p = tdslc(write("empty.tdsl", ""), "--emit=ir")
    check("an empty file: no function, exit 2, no crash",
          p.returncode == 2 and b"defines no function" in p.stderr, p.stderr.decode())
    p = tdslc(write("empty.tdsl", ""), "--emit=ast")
    check("an empty file parses to an empty program", p.returncode == 0)
    p = tdslc(write("empty.tdsl", ""), "--emit=tokens")
    check("an empty file has no tokens to speak of", p.returncode == 0)

    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
