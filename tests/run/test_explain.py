#!/usr/bin/python3
"""tests/run/test_explain.py TDSLC: the fusion plan explains itself (docs/language.md §6,
"Why a value is stored, why a kernel starts").

  - known cases give their reasons in --emit=ir, its --json and --emit=dot alike: a
    reduction feeding a reduction over the same rows starts a kernel; a value read by
    two kernels that costs more than the inline budget to recompute is stored and says
    how many times it is read and what it costs; a store in between, a matmul operand,
    a scan's result, transcendental ops;
  - every kernel has a reason and every computed value says why it is stored or not;
  - the intermediate buffers are listed with their size (elements times the dtype's
    bytes, computed here with NumPy) and the total;
  - --emit=kernels folds unrolled runs: expanding each folded line (its lists walked
    together) and each `locals:` group gives --emit=kernels --full exactly, for every
    function of the examples; --full with another kind is a usage error.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import EXAMPLES, Tally, dim_args, example_dims, example_functions  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
T = Tally()

CASES = """\
fn recompute(x: f32[16, 32]) -> (f32[16], f32[32]) {
    h = ((x * 2.0 + 1.0) * 3.0 - 4.0) / 5.0 + x * x - x / 7.0
    return h.sum(1), h.sum(0)
}

fn store_between(mut x: f32[4, 8]) -> f32[4, 8] {
    y = x * 2.0 + 1.0
    x[0] = 7.0
    return y.t().contiguous().t() + x
}

fn transcendental(x: f64[16, 32]) -> (f64[16], f64[32]) {
    h = exp(x) + sin(x)
    return h.sum(1), h.sum(0)
}

fn feeds(x: f16[8, 64]) -> f16[8, 1] {
    m = x.mean(-1, keepdim=True)
    return ((x - m.flip(0)) ** 2).mean(-1, keepdim=True)
}

fn into_matmul(x: f32[8, 16], w: f32[16, 4]) -> f32[8, 4] {
    return torch.tanh(x * 2.0) @ w
}

fn scan(x: i32[8, 16]) -> i64[8, 16] {
    c = x.cumsum(1)
    return c * 2
}

fn one(x: f32[8, 64]) -> f32[8, 64] {
    m = x.mean(-1, keepdim=True)
    v = x.var(-1, keepdim=True, unbiased=False)
    return (x - m) / torch.sqrt(v + 1e-5)
}

fn residual(x: f32[8, 32], w: f32[6, 32, 32]) -> f32[8, 32] {
    for i in range(6) {
        x = x + relu(F.layer_norm(x, (32,)) @ w[i])
    }
    return x
}

from transformers.activations import ACT2FN
fn act2fn(x: f32[8, 16], w: f32[16, 4]) -> f32[8, 4] {
    act = ACT2FN["gelu_new"]
    h = act(x * 2.0)
    return h @ w
}
"""


def tdslc(*args):
    return subprocess.run([TDSLC] + list(args), capture_output=True, encoding="utf-8", errors="replace", timeout=120)


def emit(path, fn, kind, *extra):
    if os.path.dirname(path) == EXAMPLES:  # a generic example function: its dims bound
        with open(path, encoding="utf-8") as f:
            extra += tuple(dim_args(example_dims(os.path.basename(path), f.read(), fn)))
    p = tdslc(path, "--fn", fn, "--emit=" + kind, "--cpu=haswell", *extra)
    if p.returncode != 0:
        raise RuntimeError(f"--emit={kind} --fn {fn}: exit {p.returncode}: {p.stderr[:600]}")
    return p.stdout


class Plan:
    """A function's plan in its three forms."""

    def __init__(self, path, fn):
        self.text = emit(path, fn, "ir")
        self.doc = json.loads(emit(path, fn, "ir", "--json"))
        self.dot = emit(path, fn, "dot")
        self.values = {v["name"]: v for v in self.doc["values"]}
        self.kernels = self.doc["kernels"]
        self.buffers = {b["name"]: b for b in self.doc["buffers"]}

    def kernel_reason(self, k):
        return self.kernels[k].get("reason", "")


def itemsize(dtype):
    return {"bf16": 2}.get(dtype) or np.dtype({"f16": "float16", "f32": "float32", "f64": "float64", "u8": "uint8",
                                              "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                                              "bool": "bool"}[dtype]).itemsize


def check_consistent(name, pl):
    """Each kernel's reason in the JSON is the text's line under it and in its dot
    cluster; every computed value's reason appears on its text line; the buffer list
    sizes and total follow from dtype and shape."""
    errs = []
    lines = pl.text.splitlines()
    for i, k in enumerate(pl.kernels):
        why = k.get("reason")
        if not why:
            errs.append(f"kernel {k['name']} has no reason")
            continue
        at = [j for j, ln in enumerate(lines) if re.match(rf"  {k['name']}: ", ln)]
        if len(at) != 1 or at[0] + 1 >= len(lines) or lines[at[0] + 1] != f"    # new kernel: {why}":
            errs.append(f"text form of {k['name']}'s reason differs: {why!r}")
        if f'label="{k["name"]} (lines ' not in pl.dot or f"new kernel: {why}" not in pl.dot:
            errs.append(f"dot form lacks {k['name']}'s reason {why!r}")
    for v in pl.doc["values"]:
        computed = v["kind"] == "fused" or (v["kind"] == "buffer" and str(v["storage"]).startswith("kernel:"))
        if computed and not (v["reason"] or "").startswith(("stored: ", "not stored: ")):
            errs.append(f"value {v['name']} has no reason: {v['reason']!r}")
        if v["reason"] and not any(ln.startswith(f"  {v['name']} ") and ln.endswith("# " + v["reason"]) for ln in lines):
            errs.append(f"text form lacks {v['name']}'s reason {v['reason']!r}")
        if v["reason"] and v["reason"].startswith("stored: ") and v["reason"][8:] not in pl.dot:
            errs.append(f"dot form lacks {v['name']}'s reason")
    total = 0
    for b in pl.doc["buffers"]:
        want = int(np.prod(b["shape"], dtype=np.int64)) * itemsize(b["dtype"])
        total += want
        if b["bytes"] != want:
            errs.append(f"buffer {b['name']}: {b['bytes']} bytes, expected {want}")
        if not b["reason"]:
            errs.append(f"buffer {b['name']} has no reason")
        shape = ", ".join(str(s) for s in b["shape"])
        if not any(re.match(rf"  {re.escape(b['name'])} +{b['dtype']}\[{shape}\]  {want} bytes  {b['kernel']} -> ", ln)
                   for ln in lines):
            errs.append(f"text form lacks buffer {b['name']}")
    head = f"buffers: {len(pl.doc['buffers'])} intermediate, {total} bytes"
    if head not in lines:
        errs.append(f"text form lacks {head!r}")
    T.report(f"{name}: --emit=ir, --json and --emit=dot give the same reasons and sizes", errs, pl.text)


def known_cases(path):
    pl = Plan(path, "feeds")
    m = pl.values["m"]
    T.check("feeds: two kernels; the second starts because a reduction feeds one over the same rows",
            len(pl.kernels) == 2 and pl.kernel_reason(1).startswith("reduction feeds a reduction over the same rows")
            and "mean at line 18 (k0)" in pl.kernel_reason(1), pl.text)
    T.check("feeds: m is stored because another kernel reads it, a buffer of 8 f16",
            m["reason"].startswith("stored: read by another kernel") and pl.buffers.get("m", {}).get("bytes") == 16
            and pl.buffers["m"]["readers"] == ["k1"], pl.text)
    check_consistent("feeds", pl)

    pl = Plan(path, "recompute")
    h = pl.values["h"]
    r = re.fullmatch(r"stored: read (\d+) times and costs (\d+) ops to recompute \(more than (\d+)\)", h["reason"])
    T.check("recompute: h, read by two kernels, is stored: it says it is read 2 times and costs more than the budget",
            r is not None and r.group(1) == "2" and int(r.group(2)) > int(r.group(3))
            and pl.buffers["h"]["readers"] == ["k1", "k2"], pl.text)
    check_consistent("recompute", pl)

    # a residual stream: each x is reduced by the next norm and read by the next sum; one
    # of two nested such values is stored, so every layer has the same kernels (the old
    # op budget stored one where the chain outgrew it: layers 5 and 6 differed)
    pl = Plan(path, "residual")
    ops = [" ".join(k["ops"]) for k in pl.kernels]
    period = next((p for p in range(1, len(ops) // 2 + 1) if all(ops[i] == ops[i + p] for i in range(len(ops) - p))),
                  None)
    T.check("residual: the layers' kernels repeat with a period of at most two layers (6 kernels)",
            period is not None and period <= 6 and len(ops) >= 3 * period, pl.text)
    T.check("residual: a stored x says why: reduced and read again, stored by the matmul it reads as its epilogue",
            "x" in pl.buffers and re.search(r"\n  x .*# stored: reduced and read again, it reads matmul at line \d+ "
                                            r"\(k\d+\), read by nothing else: stored as that matmul's epilogue", pl.text),
            pl.text)
    check_consistent("residual", pl)

    # an ACT2FN entry (a lambda of tdslc's own source) stands at the line that calls it
    lines = CASES.split("\n")
    call = 1 + next(i for i, t in enumerate(lines) if "h = act(x * 2.0)" in t)
    first = 1 + next(i for i, t in enumerate(lines) if t.startswith("fn act2fn"))
    pl = Plan(path, "act2fn")
    klines = [ln for k in pl.kernels for ln in k["lines"]]
    T.check(f"act2fn: ACT2FN's ops are placed at the call (line {call}), every kernel line inside the function",
            call in klines and all(first <= ln <= first + 4 for ln in klines)
            and all(first <= v["line"] <= first + 4 for v in pl.doc["values"]), pl.text)
    check_consistent("act2fn", pl)

    pl = Plan(path, "transcendental")
    T.check("transcendental: h is stored for its transcendental ops, a buffer of 512 f64",
            "transcendental ops" in pl.values["h"]["reason"] and pl.buffers["h"]["bytes"] == 512 * 8, pl.text)
    check_consistent("transcendental", pl)

    pl = Plan(path, "store_between")
    T.check("store_between: y is stored because a store runs in between",
            pl.values["y"]["reason"].startswith("stored: store in between: the store at line 8")
            and any(k["ops"] == ["store"] and k["reason"] == "a store is a kernel of its own" for k in pl.kernels),
            pl.text)
    check_consistent("store_between", pl)

    pl = Plan(path, "into_matmul")
    temps = list(pl.buffers.values())
    T.check("into_matmul: the unnamed operand of the matmul is a listed buffer, stored for the matmul",
            len(temps) == 1 and temps[0]["name"].startswith("t") and temps[0]["reason"].startswith("read by matmul")
            and temps[0]["shape"] == [8, 16] and pl.kernel_reason(1) == "a matmul starts a kernel", pl.text)
    check_consistent("into_matmul", pl)

    pl = Plan(path, "scan")
    T.check("scan: the scan's result is stored and the product reading it starts a kernel",
            pl.values["c"]["reason"].startswith("stored: a scan's result is always stored")
            and pl.kernel_reason(1).startswith("it reads the scan cumsum") and pl.buffers["c"]["bytes"] == 8 * 16 * 8,
            pl.text)
    check_consistent("scan", pl)

    pl = Plan(path, "one")
    T.check("one: the layer norm with var is one kernel with no intermediate buffer",
            len(pl.kernels) == 1 and pl.doc["buffers"] == [] and "buffers: 0 intermediate, 0 bytes" in pl.text
            and pl.values["m"]["reason"] == "not stored: read only inside k0", pl.text)


LIST = re.compile(r"\{(-?\d+(?:\.\.-?\d+)?(?:, (?:-?\d+(?:\.\.-?\d+)?|\.\.\.))*)\}")


def parse_list(body):
    items = body.split(", ")
    if "..." in items:
        a, b, c = int(items[0]), int(items[1]), int(items[3])
        return list(range(a, c + (b - a), b - a))
    out = []
    for it in items:
        lo, _, hi = it.partition("..")
        out += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    return out


def expand(text):
    """The full form a compact --emit=kernels text stands for."""
    out = []
    for line in text.splitlines():
        if line.startswith("  locals:"):
            parts = []
            for g in line[len("  locals: "):].split(", "):
                names, ty = g.split(" ")
                lo, _, hi = names.partition("..")
                parts += [f"l{i} {ty}" for i in range(int(lo[1:]), int(hi[1:] if hi else lo[1:]) + 1)]
            out.append("  locals: " + ", ".join(parts))
            continue
        lists = list(LIST.finditer(line))
        if not lists:
            out.append(line)
            continue
        vals = [parse_list(m.group(1)) for m in lists]
        n = len(vals[0])
        if any(len(v) != n for v in vals) or n < 2:
            raise ValueError(f"lists of different lengths: {line}")
        for k in range(n):
            s, at = "", 0
            for m, v in zip(lists, vals):
                pre = line[at:m.start()]
                x = v[k]
                if pre.endswith(" + ") and not pre.endswith("l"):
                    pre = pre[:-3]
                    s += pre + ("" if x == 0 else f" - {-x}" if x < 0 else f" + {x}")
                else:
                    s += pre + str(x)
                at = m.end()
            out.append(s + line[at:])
    return "\n".join(out) + "\n"


def compact_form():
    fns = [(os.path.join(EXAMPLES, name), fn) for name, _, fn in example_functions()]
    errs, folded = [], 0
    for path, fn in fns:
        try:
            compact, full = emit(path, fn, "kernels"), emit(path, fn, "kernels", "--full")
            if expand(compact) != full:
                errs.append(f"{os.path.basename(path)} --fn {fn}: the expanded compact form differs from --full")
            folded += compact.count("\n") < full.count("\n")
        except (RuntimeError, ValueError) as e:
            errs.append(f"{os.path.basename(path)} --fn {fn}: {e}")
    T.report(f"--emit=kernels of {len(fns)} example functions, expanded, is --emit=kernels --full", errs)
    mlp = os.path.join(EXAMPLES, "mlp.tdsl")
    c, f = emit(mlp, "mlp", "kernels"), emit(mlp, "mlp", "kernels", "--full")
    T.check("examples/mlp.tdsl: the compact form folds the unrolled accumulators into fewer lines",
            c.count("\n") < f.count("\n") and re.search(r"l\{0\.\.\d+\} = fma\(", c) and folded > 0, c)
    p = tdslc(mlp, "--emit=ir", "--full")
    T.check("--full with --emit=ir is a usage error (exit 2)",
            p.returncode == 2 and "--full goes with --emit=kernels" in p.stderr, p.stderr)


def main():
    d = tempfile.mkdtemp(prefix="tdsl-explain-")
    path = os.path.join(d, "cases.tdsl")
    with open(path, "w", encoding="utf-8") as f:
        f.write(CASES)
    try:
        known_cases(path)
    except RuntimeError as e:
        T.report("known cases compile", [str(e)])
    finally:
        os.remove(path)
        os.rmdir(d)
    for name, _, fn in example_functions():
        check_consistent(f"{name} --fn {fn}", Plan(os.path.join(EXAMPLES, name), fn))
    compact_form()
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
