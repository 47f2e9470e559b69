#!/usr/bin/python3
"""tests/run/test_limits.py TDSLC: the inputs of issue 16, each a located error or a
correct result, never a crash, a hang or gigabytes (docs/language.md, "Limits").

Programs too large to keep as files are generated here: call chains (linear, doubling,
each call under 900 minus signs), a statement chain of 6,000 multiplies, one expression
of 1,600 fused multiplies, a loop unrolled 14,000 times (the fuzz campaign's slow input;
--emit=ir listed each buffer's readers in time cubic in the graph). The sizes overflow int64 in arange, cat and the FLOP count;
an index into an empty dim; amax of a 0-d tensor; stack and cat of hundreds of tensors, with
a hundred --in files. Values are checked against NumPy.
"""
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="tdsl-limits-")
T = Tally()
LOCATED = re.compile(r"^case\.tdsl:\d+:\d+: error: ", re.M)


def limit_memory():  # 2 GiB of address space (a sanitizer build, in build-asan, reserves more for shadows)
    if "asan" not in TDSLC:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def tdslc(text, *args):
    with open(os.path.join(TMP, "case.tdsl"), "w") as f:
        f.write(text)
    return subprocess.run([TDSLC] + list(args), capture_output=True, timeout=120, cwd=TMP,
                          preexec_fn=limit_memory if "run" not in args else None)


def error(name, text, want, *args):
    """A located error (exit 1) whose first message contains `want`."""
    p = tdslc(text, "case.tdsl", "--emit=ir", *args)
    err = p.stderr.decode("utf-8", "replace")
    first = next((l for l in err.splitlines() if ": error: " in l), "")
    T.check(name, p.returncode == 1 and LOCATED.match(first) is not None and want in first,
            f"exit {p.returncode}: {err[:600]}")


def compiles(name, text, *args):
    p = tdslc(text, "case.tdsl", "--emit=c", *args)
    T.check(name, p.returncode == 0, f"exit {p.returncode}: {p.stderr.decode('utf-8', 'replace')[:600]}")


def chain(n, body):  # fn h0 .. h{n-1}, each `return BODY` of the next; the last returns x (c64 is a dtype)
    fns = [f"fn h{i}(x: f32[4]) -> f32[4] {{\n    return {body.format(f'h{i + 1}(x)')}\n}}\n" for i in range(n)]
    return "".join(fns) + f"fn h{n}(x: f32[4]) -> f32[4] {{\n    return x\n}}\n"


def run_values(name, text, want, *args):
    """`tdslc run` gives the one output want (NumPy's value)."""
    p = tdslc(text, "run", "case.tdsl", "--json", *args)
    out = p.stdout.decode("utf-8", "replace")
    ok = p.returncode == 0
    if ok:
        got = np.array(json.loads(out)["outputs"][0]["data"]).reshape(np.shape(want))
        ok = np.array_equal(got, want)
    T.check(name, ok, f"exit {p.returncode}: {out[:400]} {p.stderr.decode('utf-8', 'replace')[:400]}")


def main():
    # inlining: depth and size budgets, located at the call
    error("linear chain of 8000 calls", chain(8000, "{}"), "program too deeply nested", "--fn", "h0")
    error("chain of 1000 calls", chain(1000, "{}"), "program too deeply nested", "--fn", "h0")
    error("doubling chain of 20", chain(20, "{0} + {0}"), "inlining this call would create", "--fn", "h0")
    error("900 minus signs per call", chain(16, "-" * 900 + "{}"), "program too deeply nested", "--fn", "h0")
    nullary = "".join(f"fn h{i}() -> f32[4] {{\n    return h{i + 1}()\n}}\n" for i in range(3000))
    nullary += "fn h3000() -> f32[4] {\n    return zeros(4)\n}\nfn f(x: f32[h0()]) -> f32[4] {\n    return x\n}\n"
    error("a chain of 3000 calls in a dimension", nullary, "program too deeply nested", "--fn", "f")
    compiles("a chain within the limits", chain(40, "{}"), "--fn", "h0")
    compiles("a doubling chain within the limits", chain(8, "{0} + {0}"), "--fn", "h0")
    # statement and expression chains: fusion and kernel building stay shallow and linear
    compiles("6000 statements v = v * y",
             "fn f(x: f32[4], y: f32[4]) -> f32[4] {\n    v = x\n" + "    v = v * y\n" * 6000 + "    return v\n}\n")
    lines = ["fn f(x: f32[4], y: f32[4]) -> f32[4] {"]
    for j in range(16):
        lines.append(f"    v{j} = " + (f"v{j - 1}" if j else "x") + " * y" * 100)
    compiles("1600 fused multiplies", "\n".join(lines) + "\n    return v15\n}\n")
    # a loop of 14,000 iterations, near the op limit: the plan lists every buffer with its readers
    p = tdslc("fn f(x: f32[3]) -> f32[3] {\n    for i in range(14000) {\n        x = x + i\n    }\n    return x\n}\n",
              "case.tdsl", "--emit=ir")
    plan = p.stdout.decode("utf-8", "replace")
    rows = re.findall(r"^  x +f32\[3\] +12 bytes +k(\d+) -> k(\d+)  #", plan, re.M)
    T.check("a loop of 14000 iterations: each buffer read by the next kernel",
            p.returncode == 0 and len(rows) > 100 and all(int(b) == int(a) + 1 for a, b in rows),
            f"exit {p.returncode}: {len(rows)} rows {p.stderr.decode('utf-8', 'replace')[:400]}")
    # sizes: checked arithmetic
    run_values("arange(0, 2, INT64_MAX) is [0]",
               "fn f() -> i64[1] {\n    return arange(0, 2, 9223372036854775807)\n}\n",
               np.arange(0, 2, 2**63 - 1))
    error("cat overflows int64", "fn f(x: f32[4611686018427387904]) -> f32[1] {\n    return cat([x, x])\n}\n",
          "tensor size is too large")
    p = tdslc("fn f(a: f32[4294967296, 1], b: f32[1, 1073741824]) -> f32[] {\n    return (a @ b).sum()\n}\n",
              "bench", "case.tdsl")
    T.check("huge shapes: a clear allocation error", p.returncode == 3 and b"needs more than 9223372036854775807 bytes of tensors" in p.stderr,
            f"exit {p.returncode}: {p.stderr[:400]}")
    # indexing an empty dim raises PyTorch's IndexError text at run time
    p = tdslc("fn f(x: f32[0], i: i64[3]) -> f32[3] {\n    return x[i]\n}\n", "run", "case.tdsl")
    want = rb"case\.tdsl:2:12: error: index \d+ is out of bounds for dimension 0 with size 0"
    T.check("x[i] with x empty", p.returncode == 3 and re.search(want, p.stderr) is not None,
            f"exit {p.returncode}: {p.stderr[:400]}")
    t = np.array(2.5, dtype=np.float32)
    np.save(os.path.join(TMP, "t.npy"), t)
    run_values("amax(0) of a 0-d tensor is its value", "fn f(t: f32[]) -> f32[] {\n    return t.amax(0)\n}\n",
               np.amax(t, 0), "--in", "t=t.npy")
    # any number of operands: stack and cat of more than 64 tensors (the 65th was dropped
    # and its elements left unwritten), and as many --in files as a model has weights
    x = np.array([2], dtype=np.int32)
    np.save(os.path.join(TMP, "x.npy"), x)
    for n in (65, 300):
        run_values(f"stack of {n} tensors", f"fn f(x: i32[1]) -> i32[1, {n}] {{\n"
                   f"    return torch.stack(({', '.join(['x'] * n)}), 1)\n}}\n", np.stack([x] * n, 1), "--in", "x=x.npy")
    parts, ins = [np.array([i, -i], dtype=np.float32) for i in range(100)], []
    for i, v in enumerate(parts):
        np.save(os.path.join(TMP, f"p{i}.npy"), v)
        ins += ["--in", f"p{i}=p{i}.npy"]
    run_values("cat of 100 parameters, each from --in",
               f"fn f({', '.join(f'p{i}: f32[2]' for i in range(100))}) -> f32[200] {{\n"
               f"    return cat([{', '.join(f'p{i}' for i in range(100))}])\n}}\n", np.concatenate(parts), *ins)
    shutil.rmtree(TMP, True)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
