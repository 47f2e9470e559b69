#!/usr/bin/python3
"""tests/run/test_fusion.py TDSLC: the fusion plan of `tdslc FILE --emit=ir --json` (§10).

  - an elementwise chain of any length, with views (transpose, slices, flip, expand,
    unsqueeze, reshape of a fused value) between its ops, is one kernel;
  - softmax and log_softmax are one kernel each; the seed layer norm at most two;
    relu(x @ w + b) is one kernel; a layer or RMS norm before a linear is computed as
    the matmul packs its operand (never stored); a residual stream after a linear is
    stored by that linear's kernel, and so is y * silu(x @ w.t()) read by a linear;
  - programs of views only, contiguous() of a contiguous tensor and a same-dtype
    .to() have no kernel;
  - a transposed or sliced matmul operand is read through its strides: no kernel
    with a "contiguous" op;
  - each kernel's "lines" are the source lines of its ops; values computed inside a
    kernel are "fused" (no strides, offset or storage), the result is a buffer
    whose storage is that kernel;
  - an MLP, act(x @ w1.t() [+ b1]) @ w2.t(), of at least 96 rows and small weights is one
    kernel (ir/gemm_chain.c: the hidden by row blocks, never stored), its results those
    of NumPy on both CPU backends; of 64 rows it stays two GEMMs.
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
from oracle import EXAMPLES, Tally, backend_available, compare, emit_text, run_outputs  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
T = Tally()


def plan(src, fn=None):
    p = emit_text(TDSLC, src, "ir", ["--json"] + (["--fn", fn] if fn else []))
    if p.returncode != 0:
        return None, f"exit {p.returncode}: {p.stderr.strip()[:800]}"
    try:
        return json.loads(p.stdout), None
    except ValueError as e:
        return None, f"bad JSON: {e}"


def report(name, errs, src=None, doc=None):
    """On a failure also the program and the kernels of its plan."""
    if errs and doc:
        errs = errs + ["kernels: " + json.dumps(doc.get("kernels"))]
    T.report(name, errs, program=src)


def check(name, src, nkernels=None, max_kernels=None, fused=(), lines=None, no_op=None, fn=None, ops=None):
    """nkernels: exact count; max_kernels: an upper bound; fused: names that must be
    'fused' values; lines: the expected 'lines' of the only kernel; no_op: an op name
    no kernel may hold; ops: op names the only kernel must hold (in any order)."""
    doc, err = plan(src, fn)
    if err:
        return report(name, [err], src)
    errs = []
    ks = doc.get("kernels", [])
    if nkernels is not None and len(ks) != nkernels:
        errs.append(f"{len(ks)} kernels, want {nkernels}")
    if max_kernels is not None and len(ks) > max_kernels:
        errs.append(f"{len(ks)} kernels, want at most {max_kernels}")
    vals = {v["name"]: v for v in doc.get("values", [])}
    for n in fused:
        v = vals.get(n)
        if v is None:
            errs.append(f"no value '{n}'")
        elif v["kind"] != "fused" or v["strides"] is not None or v["offset"] is not None or v["storage"] is not None:
            errs.append(f"'{n}' is {v['kind']} (strides {v['strides']}, storage {v['storage']}), want fused")
    if lines is not None and len(ks) == 1 and ks[0]["lines"] != lines:
        errs.append(f"kernel lines {ks[0]['lines']}, want {lines}")
    if ops is not None and len(ks) == 1 and sorted(ks[0]["ops"]) != sorted(ops):
        errs.append(f"kernel ops {ks[0]['ops']}, want {sorted(ops)}")
    if no_op is not None:
        for k in ks:
            if no_op in k["ops"]:
                errs.append(f"kernel {k['name']} holds '{no_op}': {k['ops']}")
    # every kernel names lines that exist, sorted and unique; results of kernels are buffers
    nlines = src.count("\n") + 1
    for k in ks:
        if k["lines"] != sorted(set(k["lines"])) or any(not 1 <= ln <= nlines for ln in k["lines"]):
            errs.append(f"kernel {k['name']} lines {k['lines']}")
    for v in doc.get("values", []):
        if v["kind"] == "buffer" and v["storage"] and v["storage"].startswith("kernel:"):
            if v["storage"][7:] not in {k["name"] for k in ks}:
                errs.append(f"'{v['name']}' names an unknown kernel {v['storage']}")
    report(name, errs, src, doc)


# ---------------------------------------------------------------------------
# Elementwise chains with views between the ops
# ---------------------------------------------------------------------------
UNARY = [("exp", "exp({a})"), ("tanh", "{a}.tanh()"), ("neg", "-{a}"), ("abs", "abs({a})"),
         ("sigmoid", "sigmoid({a})"), ("sin", "{a}.sin()"), ("relu", "relu({a})"), ("sqrt", "sqrt({a})"),
         ("gelu", "gelu({a})"), ("clamp", "{a}.clamp(min=0)"), ("mul", "{a} * 2"), ("add", "{a} + 1.5"),
         ("div", "{a} / 3"), ("pow", "{a} ** 2"), ("to", "{a}.to(f64).float()")]
BINARY = [("add", "{a} + {b}"), ("sub", "{a} - {b}"), ("mul", "{a} * {b}"), ("div", "{a} / {b}"),
          ("maximum", "maximum({a}, {b})"), ("minimum", "{a}.minimum({b})")]
# views that keep a [6, 6] shape, applied to fused values
VIEWS = ["{a}.t()", "{a}.transpose(0, 1)", "{a}.flip(0)", "{a}.permute(1, 0)", "{a}.view(36).view(6, 6)",
         "{a}.reshape(3, 12).reshape(6, 6)", "{a}[::1]", "{a}.unsqueeze(0)[0]", "{a}.T"]
# operands: parameters read through views of every kind
OPERANDS = ["x", "y.t()", "z[1:7, ::2]", "v.unsqueeze(0).expand(6, 6)", "w.flip(1)", "x.T"]
BCAST = OPERANDS + ["v[:, None]", "v", "w[2]"]   # right operands may also broadcast
PARAMS = "x: f32[6, 6], y: f32[6, 6], z: f32[8, 12], v: f32[6], w: f32[6, 6]"


def chain(seed, length):
    r = random.Random(seed)
    body, cur, names = [], r.choice(OPERANDS), []
    for i in range(length):
        if r.random() < 0.5:
            _, spell = r.choice(UNARY)
            e = spell.format(a=f"({cur})" if not cur.isidentifier() else cur)
        else:
            _, spell = r.choice(BINARY)
            a, b = f"({cur})", f"({r.choice(BCAST)})"
            e = spell.format(a=a, b=b) if r.random() < 0.5 else spell.format(a=b, b=a)
        name = f"t{i}"
        body.append(f"    {name} = {e}")
        names.append(name)
        cur = name
        if r.random() < 0.5:  # a view of the fused value, bound to a name
            body.append(f"    r{i} = {r.choice(VIEWS).format(a=cur)}")
            cur = f"r{i}"  # (u8 and i8 name dtypes)
    src = f"fn f({PARAMS}) -> f32[6, 6] {{\n" + "\n".join(body) + f"\n    return {cur} * 1.0\n}}"
    return src, names[:], list(range(2, len(body) + 3))


# MLP chains (ir/fuse.c's chain_of, ir/gemm_chain.c): rows, C, H, O not multiples of the
# tiles (48-row blocks, 8 or 6 hidden units a call, 256 a chunk), two and three leading
# dims, a bias-less linear, GELU erf and tanh, ReLU, SiLU, a layer norm computed as the
# rows are packed, a residual epilogue. One program, one run per backend.
MLP_SRC = """fn f(a: f32[101, 37], a1: f32[75, 37], a2: f32[29, 75], ab: f32[29],
      b: f32[3, 35, 24], b1: f32[40, 24], b2: f32[20, 40], bb: f32[40],
      c: f32[2, 7, 9, 16], c1: f32[33, 16], c2: f32[17, 33], cb: f32[33],
      d: f32[97, 40], d1: f32[601, 40], d2: f32[40, 601], db: f32[601]) -> (
      f32[101, 29], f32[3, 35, 20], f32[2, 7, 9, 17], f32[97, 40]) {
    ya = F.linear(F.gelu(F.linear(a, a1), approximate='tanh'), a2, ab)
    yb = F.linear(F.relu(F.linear(b, b1, bb)), b2)
    yc = F.linear(F.silu(F.linear(c, c1, cb)), c2)
    yd = d + F.linear(F.gelu(F.linear(F.layer_norm(d, (40,)), d1, db)), d2)
    return ya, yb, yc, yd
}"""


def mlp_chains():
    from math import erf, sqrt
    doc, err = plan(MLP_SRC)
    chains = [k for k in doc["kernels"] if k["ops"].count("matmul") == 2] if doc else []
    hidden = [[101, 75], [3, 35, 40], [2, 7, 9, 33], [97, 601]]  # no buffer holds a whole hidden
    stored = [b["shape"] for b in doc.get("buffers", []) if b.get("shape") in hidden] if doc else []
    report("mlp_chain_plan", [err] if err else [] if len(chains) == 4 and not stored else
           [f"{len(chains)} kernels hold both linears of an MLP, want 4: {[k['ops'] for k in doc['kernels']]}; "
            f"hidden buffers {stored}"], MLP_SRC, doc)
    wide = ("fn f(x: f32[96, 6000], w1: f32[8, 6000], w2: f32[16, 8]) -> f32[96, 16] {\n"
            "    return F.linear(F.relu(F.linear(x, w1)), w2)\n}")
    check("mlp_wide_input_two_gemms", wide, nkernels=2)  # its scratch (1.2 MB a thread) over the 3 KB hidden
    src64 = ("fn f(x: f32[64, 32], w1: f32[64, 32], w2: f32[32, 64]) -> f32[64, 32] {\n"
             "    return F.linear(F.gelu(F.linear(x, w1)), w2)\n}")
    check("mlp_64_rows_two_gemms", src64, nkernels=2)
    rng = np.random.default_rng(27)
    shapes = {"a": [101, 37], "a1": [75, 37], "a2": [29, 75], "ab": [29], "b": [3, 35, 24], "b1": [40, 24],
              "b2": [20, 40], "bb": [40], "c": [2, 7, 9, 16], "c1": [33, 16], "c2": [17, 33], "cb": [33],
              "d": [97, 40], "d1": [601, 40], "d2": [40, 601], "db": [601]}
    ins = {n: (rng.standard_normal(s) / (np.sqrt(s[-1]) if n[-1] in "12" else 1)).astype(np.float32)
           for n, s in shapes.items()}
    x = {n: v.astype(np.float64) for n, v in ins.items()}
    gelu = np.vectorize(lambda h: 0.5 * h * (1 + erf(h / sqrt(2))))
    tanh_gelu = lambda h: 0.5 * h * (1 + np.tanh(sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))  # noqa: E731
    dn = (x["d"] - x["d"].mean(-1, keepdims=True)) / np.sqrt(x["d"].var(-1, keepdims=True) + 1e-5)
    want = [tanh_gelu(x["a"] @ x["a1"].T) @ x["a2"].T + x["ab"],
            np.maximum(x["b"] @ x["b1"].T + x["bb"], 0) @ x["b2"].T,
            (lambda h: h / (1 + np.exp(-h)))(x["c"] @ x["c1"].T + x["cb"]) @ x["c2"].T,
            x["d"] + gelu(dn @ x["d1"].T + x["db"]) @ x["d2"].T]
    for be in ("c", "llvm"):
        if not backend_available(TDSLC, be)[0]:
            continue
        p, outs = run_outputs(TDSLC, MLP_SRC, ins, backend=be)
        errs = [] if p.returncode == 0 and len(outs) == 4 else [f"exit {p.returncode}: {p.stderr.strip()[-800:]}"]
        for i, (g, w) in enumerate(zip(outs, want)):
            e = compare(g, w, "f32", "red", w.shape[-1] * 8)
            if e:
                errs.append(f"output {i}: {e}")
        report(f"mlp_chain_values_{be}", errs, MLP_SRC)


# In-place ops on an elementwise kernel's result (ir/fuse.c's store_fits, ir/ew.c's
# ew_stores): a store into the whole result, reading it at the same index only, is that
# kernel's, which writes each element once; the traps (the value read at other elements,
# a view stored into, a kernel or an inline node reading the old value, a store into part
# of it in between) keep PyTorch's values. One program, one run per backend, exact against NumPy.
INPLACE_SRC = """fn f(x: f32[6, 8], w: f32[8], b: f32[8], s: f32[6, 8], r: f32[6, 8], a: i32[6, 8], c: i32[6, 8],
      h: f16[6, 8], g: f16[6, 8], q: f32[8, 8]) -> (f32[6, 8], f32[6, 8], f32[6, 8], i32[6, 8], f16[6, 8],
      f32[6, 8], f32[6, 8], f32[6, 8], f32[8], f32[8, 8], f32[8, 8], f32[8, 8], f32[6, 8], f32[6, 8]) {
    y = x * w + b
    F.relu6(y, inplace=True)
    y2 = x * 3.0
    y2.mul_(s).add_(r)
    ai = a * 3 + c
    ai += c
    ai.clamp_(min=0)
    hh = h * g
    hh.add_(g)
    t = x - 1.0
    t.add_(t.flip(0))
    u = x * 2.0
    u[1:].add_(1.0)
    v = x + w
    sv = v.sum(0)
    v.mul_(2.0)
    z0 = q * 2.0
    z1 = z0 + 1.0
    z0.mul_(3.0)
    zt = q * 2.0
    zt.add_(q.t())
    d = x / 2.0
    d.zero_()
    e = x * 5.0
    e[0] = 7.0
    e.sub_(s)
    return y, y, y2, ai, hh, t, u, v, sv, z0, z1, zt, d, e
}"""


def inplace_stores():
    src = ("fn f(x: f32[64, 32], w: f32[32], b: f32[32]) -> f32[64, 32] {\n    y = x * w + b\n"
           "    F.relu6(y, inplace=True)\n    return y\n}")
    check("inplace_after_elementwise", src, nkernels=1, lines=[2, 3], ops=["mul", "add", "clamp", "store"])
    src = ("fn f(x: i32[64, 32], s: i32[64, 32]) -> i32[64, 32] {\n    y = x * 3\n"
           "    y.mul_(s).add_(x)\n    y.clamp_(min=0)\n    return y\n}")
    check("inplace_chain_after_elementwise", src, nkernels=1)
    src = ("fn f(x: f32[8, 8]) -> (f32[8, 8], f32[8]) {\n    y = x * 2.0\n    m = y.sum(0)\n"
           "    y.add_(y.t())\n    return y, m\n}")
    check("inplace_other_index_kept_apart", src, nkernels=4)
    rng = np.random.default_rng(5)
    f32 = lambda *sh: rng.standard_normal(sh).astype(np.float32)  # noqa: E731
    ins = {"x": f32(6, 8) * 4, "w": f32(8), "b": f32(8), "s": f32(6, 8), "r": f32(6, 8),
           "a": rng.integers(-9, 9, (6, 8)).astype(np.int32), "c": rng.integers(-9, 9, (6, 8)).astype(np.int32),
           "h": f32(6, 8).astype(np.float16), "g": f32(6, 8).astype(np.float16), "q": f32(8, 8)}
    x, w, b, s, r, a, c, h, g, q = (ins[k] for k in "x w b s r a c h g q".split())
    y = np.clip(x * w + b, np.float32(0), np.float32(6))
    ai = np.maximum((a * 3 + c) + c, 0).astype(np.int32)
    t = x - np.float32(1)
    u = x * np.float32(2)
    u[1:] += np.float32(1)
    v = x + w
    e = x * np.float32(5)
    e[0] = 7
    e -= s
    want = [y, y, (x * np.float32(3)) * s + r, ai, (h * g) + g, t + t[::-1], u, v * np.float32(2),
            v.sum(0), q * np.float32(6), q * np.float32(2) + np.float32(1), q * np.float32(2) + q.T, np.zeros_like(x), e]
    for be in ("c", "llvm"):
        if not backend_available(TDSLC, be)[0]:
            continue
        p, outs = run_outputs(TDSLC, INPLACE_SRC, ins, backend=be)
        errs = [] if p.returncode == 0 and len(outs) == len(want) else [
            f"exit {p.returncode}: {p.stderr.strip()[-800:]}"]
        for i, (got, wv) in enumerate(zip(outs, want)):
            e = compare(got, wv, "f32", "red", 8) if i == 8 else compare(got, wv, str(got.dtype), "exact")
            if e:
                errs.append(f"output {i}: {e}")
        report(f"inplace_store_values_{be}", errs, INPLACE_SRC)


def main():
    for length in (1, 2, 3, 5, 8, 13, 21, 40):
        for seed in range(3):
            src, names, _ = chain(length * 100 + seed, length)
            op_lines = [i + 1 for i, ln in enumerate(src.split("\n")) if ln.strip().startswith(("t", "return"))]
            check(f"elementwise_chain_{length}_{seed}", src, nkernels=1, fused=names, lines=op_lines)
    # a chain written as one expression over many views
    src = ("fn f(x: f32[4, 6], y: f32[6, 4], z: f32[6]) -> f32[6, 4] {\n"
           "    return tanh((exp(x).t() * 2 + y)[::1].flip(1) - z.unsqueeze(1).expand(6, 4)).abs()\n}")
    check("elementwise_one_line", src, nkernels=1, lines=[2])
    # bool, int and mixed-dtype chains fuse too
    src = ("fn f(x: i32[4, 5], y: f32[5, 4], m: bool[4, 5]) -> f32[4, 5] {\n    a = (x * 3 + 1) // 2\n"
           "    b = where(logical_and(m, a > 2), a.float(), y.t())\n    c = logical_not(b < 0.5)\n"
           "    return where(c, y.t(), -x.float())\n}")
    check("elementwise_mixed_dtypes", src, nkernels=1, fused=["a", "b", "c"], lines=[2, 3, 4, 5])

    # a fused value read by several ops of the same kernel
    src = "fn f(x: f32[6, 6]) -> f32[6, 6] {\n    a = exp(x)\n    return a * a + sin(a)\n}"
    check("elementwise_reused_value", src, nkernels=1, fused=["a"], lines=[2, 3])
    # softmax, log_softmax, layer norm, relu(x @ w + b)
    for dim in (-1, 0, 1):
        check(f"softmax_dim{dim}", f"fn f(x: f32[8, 16]) -> f32[8, 16] {{\n    return softmax(x, dim={dim})\n}}",
              nkernels=1, lines=[2])
        check(f"log_softmax_dim{dim}", f"fn f(x: f32[8, 16]) -> f32[8, 16] {{\n    return log_softmax(x, {dim})\n}}",
              nkernels=1, lines=[2])
    check("softmax_of_view", "fn f(x: f32[16, 8]) -> f32[8, 16] {\n    return x.t().softmax(-1)\n}", nkernels=1)
    with open(os.path.join(EXAMPLES, "layer_norm.tdsl"), encoding="utf-8") as f:
        check("layer_norm_seed", f.read().rstrip("\n"), max_kernels=2)
    # F.layer_norm and F.group_norm: both statistics read x, one kernel reads it once
    check("f_layer_norm", "fn f(x: f32[4, 8, 32], g: f32[32], b: f32[32]) -> f32[4, 8, 32] {\n"
          "    return F.layer_norm(x, [32], g, b)\n}", nkernels=1)
    check("f_group_norm", "fn f(x: f32[2, 6, 5, 5]) -> f32[2, 6, 5, 5] {\n    return F.group_norm(x, 3)\n}",
          nkernels=1)
    # ConvNeXt's channels-first LayerNorm: the variance reads the mean on its row, one kernel
    # (ir/fuse.c's row_reads_row) that reads x once and stores no mean
    check("layer_norm_channels_first", "fn f(x: f32[2, 8, 5, 5], w: f32[8], b: f32[8]) -> f32[2, 8, 5, 5] {\n"
          "    u = x.mean(1, keepdim=True)\n    s = (x - u).pow(2).mean(1, keepdim=True)\n"
          "    x = (x - u) / torch.sqrt(s + 1e-6)\n    return w[:, None, None] * x + b[:, None, None]\n}",
          nkernels=1, fused=["u", "s"])
    src = ("fn f(x: f32[32, 64], w: f32[64, 16], b: f32[16]) -> f32[32, 16] {\n"
           "    return relu(x @ w + b)\n}")
    check("relu_matmul_bias", src, nkernels=1, lines=[2], ops=["matmul", "add", "relu"])
    src = ("fn f(x: f32[32, 64], w: f32[64, 16], b: f32[16]) -> f32[32, 16] {\n"
           "    h = x @ w\n    h2 = h + b\n    return h2.clamp(min=0)\n}")
    check("relu_matmul_bias_lines", src, nkernels=1, lines=[2, 3, 4], fused=["h", "h2"])
    # a norm before a linear (x @ w.t()) is computed as the matmul packs x: its result is
    # never stored, only the rows' statistics are
    src = ("fn f(x: f32[2, 16, 64], g: f32[64], b: f32[64], w: f32[96, 64], c: f32[96]) -> f32[2, 16, 96] {\n"
           "    n = F.layer_norm(x, (64,), g, b)\n    return F.linear(n, w, c)\n}")
    check("layer_norm_into_linear", src, max_kernels=3, fused=["n"])
    src = ("fn f(x: f32[2, 16, 64], g: f32[64], w: f32[96, 64]) -> f32[2, 16, 96] {\n"
           "    n = g * (x * rsqrt(x.pow(2).mean(-1, keepdim=true) + 1e-6))\n    return n @ w.t()\n}")
    check("rms_norm_into_linear", src, max_kernels=2, fused=["n"])
    # the residual stream after a block's last linear, reduced by the next norm and read by
    # the next sum: stored by that matmul as its epilogue (ir/fuse.c's reads_lone_matmul), not
    # the matmul's result with the norm's kernels adding x to it again
    src = ("fn f(x: f32[2, 16, 64], h: f32[2, 16, 32], w: f32[64, 32], b: f32[64], v: f32[48, 64])"
           " -> f32[2, 16, 48] {\n    x = x + F.linear(h, w, b)\n"
           "    return F.linear(F.layer_norm(x, (64,)), v) + x.sum(-1, keepdim=True)\n}")
    doc, err = plan(src)
    mm = [k["ops"] for k in doc["kernels"] if k["ops"][:1] == ["matmul"]] if doc else []
    report("residual_stored_by_its_matmul", [err] if err else [] if ["matmul", "add", "add"] in mm else
           [f"no kernel stores x + (h @ w.t() + b) as a matmul's epilogue: {mm}"], src, doc)
    # Mamba's y * silu(res), packed by out_proj: stored as res's matmul's epilogue (over y,
    # ir/fuse.c's packed_over), not recomputed in out_proj's pack with y and res both live
    src = ("fn f(x: f32[16, 64], z: f32[16, 32], w: f32[32, 64], v: f32[24, 32]) -> f32[16, 24] {\n"
           "    y = z * 2.0\n    return F.linear(y * F.silu(F.linear(x, w)), v)\n}")
    doc, err = plan(src)
    ks = [k["ops"] for k in doc["kernels"]] if doc else []
    report("gated_packed_operand_is_an_epilogue", [err] if err else [] if any(
        "matmul" in k and "silu" in k[k.index("matmul"):] for k in ks) else [f"silu(x @ w.t()) is no matmul's epilogue: {ks}"],
        src, doc)

    # no kernels at all
    with open(os.path.join(EXAMPLES, "storage_views.tdsl"), encoding="utf-8") as f:
        sv = f.read().rstrip("\n")
    check("views_only_storage_views", sv, nkernels=0, fn="views")
    check("views_only_window", sv, nkernels=0, fn="window")
    check("contiguous_of_contiguous", "fn f(x: f32[3, 4]) -> f32[3, 4] {\n    return x.contiguous()\n}", nkernels=0)
    check("contiguous_after_double_transpose",
          "fn f(x: f32[3, 4]) -> f32[4, 3] {\n    return x.t().t().contiguous().t()\n}", nkernels=0)
    check("contiguous_of_row_slice", "fn f(x: f32[3, 4]) -> f32[2, 4] {\n    return x[1:].contiguous()\n}", nkernels=0)
    check("same_dtype_to", "fn f(x: f32[3, 4]) -> (f32[3, 4], f32[4, 3]) {\n    return x.to(f32), x.t().float()\n}",
          nkernels=0)
    check("contiguous_of_transpose_copies",
          "fn f(x: f32[3, 4]) -> f32[4, 3] {\n    return x.t().contiguous()\n}", nkernels=1, lines=[2])

    # matmul operands read through strides
    for name, operand_a, operand_b, decl in [
            ("transposed_lhs", "x.t()", "w", "x: f32[16, 8], w: f32[16, 4]"),
            ("transposed_rhs", "x", "w.t()", "x: f32[8, 16], w: f32[4, 16]"),
            ("sliced_lhs", "x[::2, 1:]", "w", "x: f32[16, 17], w: f32[16, 4]"),
            ("sliced_rhs", "x", "w[:, ::3]", "x: f32[8, 16], w: f32[16, 12]"),
            ("expanded_lhs", "x.expand(8, 16)", "w", "x: f32[1, 16], w: f32[16, 4]"),
            ("batched_transposed", "x.transpose(1, 2)", "w.transpose(-2, -1)", "x: f32[2, 16, 8], w: f32[2, 4, 16]")]:
        out = "f32[2, 8, 4]" if "batched" in name else "f32[8, 4]"
        src = f"fn f({decl}) -> {out} {{\n    return {operand_a} @ {operand_b}\n}}"
        check(f"matmul_{name}", src, nkernels=1, no_op="contiguous", lines=[2])
    # the attention example: heads are views, never copied before their matmuls
    with open(os.path.join(EXAMPLES, "attention.tdsl"), encoding="utf-8") as f:
        att = f.read().rstrip("\n")
    doc, err = plan(att)
    errs = [err] if err else []
    if doc:
        vals = {v["name"]: v for v in doc["values"]}
        for n in ("q", "k", "v"):
            if vals.get(n, {}).get("kind") not in ("view", "fused"):
                errs.append(f"'{n}' is {vals.get(n, {}).get('kind')}, want a view")
        n_contig = sum("contiguous" in k["ops"] for k in doc["kernels"])
        if n_contig > 1:
            errs.append(f"{n_contig} kernels copy with contiguous: only the one before view(2, 10, E) is needed")
        # q @ k^T / sqrt(D), softmax and @ v: one attention kernel (ir/attn_fuse.c), the
        # scores and probabilities never stored
        att_k = [k for k in doc["kernels"] if "scaled_dot_product_attention" in k["ops"]]
        if len(att_k) != 1 or any("softmax" in k["ops"] for k in doc["kernels"]):
            errs.append(f"the attention is not one scaled_dot_product_attention kernel: "
                        f"{[k['ops'] for k in doc['kernels']]}")
        if any(b.get("name") in ("s", "a") for b in doc.get("buffers", [])):
            errs.append(f"scores or probabilities stored: {[b.get('name') for b in doc['buffers']]}")
    report("attention_views", errs)
    mlp_chains()
    inplace_stores()

    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
