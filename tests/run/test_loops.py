#!/usr/bin/python3
"""tests/run/test_loops.py TDSLC: static control flow — for loops unrolled at compile time
(range with Python's start/stop/step, tuples, lists, a tensor's first dim, enumerate,
zip, enumerate(zip(...), start=), tuple targets `for i, (w, b) in ...`, break and
continue, while on compile-time conditions, nested loops, loops in called functions),
if/elif/else on compile-time values
(shapes, loop variables, constants) choosing code, and a return inside a loop or a
branch ending the function. Each program runs and is compared with NumPy on the same
inputs; a loop written out by hand in NumPy is the oracle.

The layers of an unrolled loop build the same kernels at other offsets of the stacked
weights; they share one function (ir/share.c): checked on the kernels and the C a loop
emits (a 24-layer nanoGPT has the kernel functions and calls of a 12-layer one, its
entry running them in a loop of more iterations), and on layers
whose weights start at offsets that are not 64-byte multiples, flipped and strided.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, compare_kinds, emit_text, env_backend, require_backend, run_outputs, test_subset  # noqa: E402

rng = np.random.default_rng(15)
C = 8
X = rng.standard_normal((3, C)).astype(np.float32)
W = (rng.standard_normal((4, C, C)) / np.sqrt(C)).astype(np.float32)
B = rng.standard_normal((4, C)).astype(np.float32)
Y = rng.standard_normal((3, C)).astype(np.float32)
# layers of 3x3 weights (36 bytes: their starts are not 64-byte multiples) and 5-wide biases
L5 = 5
W9 = rng.standard_normal((L5, 3, 3)).astype(np.float32)
B9 = rng.standard_normal((L5, 5)).astype(np.float32)
X9 = rng.standard_normal((2, 3)).astype(np.float32)


def f64(a):
    return a.astype(np.float64)


def targets_and_jumps(x, ws, bs, pairs):
    h = f64(x)
    for w, b in zip(ws, bs):
        h = h * f64(w) + f64(b)
    for i, (w, b) in enumerate(zip(ws, bs), start=1):
        if i == 2:
            continue
        h = h + f64(w) * i - f64(b)
    for a, b in pairs:  # rows of two: a and b are 0-d
        h = h + f64(a) * f64(b)
    n = 0
    for i in range(4):
        for j in range(10):
            if j > i:
                break
            n = n + j
        if i == 2:
            break
        n = n * 10
    m, k = 100, 0
    while m > 1:
        m //= 2
        k += 1
        if k % 3 == 0:
            continue
        h = h - m
    while True:
        k = k * 2
        if k > 40:
            break
    return h * n + k


def odd_layers(x, w, b):
    h = f64(x)
    for i in range(w.shape[0]):
        h = np.tanh(h @ f64(w[i])[::-1] + f64(b[i])[::2]) * (i + 1)
    return h


def mlp(x, w, b):
    h = f64(x)
    for i in range(w.shape[0]):
        h = np.maximum(h @ f64(w[i]) + f64(b[i]), 0)
    return h


# (name, program, inputs, the NumPy values of its results, their kinds)
CASES = [
    ("stacked_mlp", f"""
const L = 4
fn f(x: f32[3, {C}], w: f32[L, {C}, {C}], b: f32[L, {C}]) -> f32[3, {C}] {{
    h = x
    for i in range(L) {{
        h = F.relu(h @ w[i] + b[i])
    }}
    return h
}}""", {"x": X, "w": W, "b": B}, lambda: [mlp(X, W, B)], ["f32"]),
    # the layer a function, called from the loop with views of the stacked weights
    ("stacked_mlp_calls", f"""
fn layer(h: f32[3, {C}], w: f32[{C}, {C}], b: f32[{C}]) -> f32[3, {C}] {{
    return relu(F.linear(h, w.t(), b))
}}
fn f(x: f32[3, {C}], w: f32[4, {C}, {C}], b: f32[4, {C}]) -> (f32[3, {C}], f32[3, {C}]) {{
    h = x
    for i in range(w.size(0)) {{
        h = layer(h, w[i], b[i])
    }}
    g = x
    for i in range(len(w) - 1, -1, -2) {{
        g = layer(g, w[i], b[i])
    }}
    return h, g
}}""", {"x": X, "w": W, "b": B}, lambda: [mlp(X, W, B), mlp(X, W[[3, 1]], B[[3, 1]])], ["f32", "f32"]),
    # Python's ranges: start, negative steps, empty ranges; the loop variable after the loop
    ("ranges", f"""
fn f(x: f32[3, {C}]) -> (f32[3, {C}], f32[3, {C}], f32[3, {C}]) {{
    a = x * 0
    for i in range(2, 11, 3) {{
        a = a + i
    }}
    k = 100
    for k in range(5, 5) {{
        a = a * 1000
    }}
    for j in range(4, -3, -2) {{
        a = a * 2 + j
    }}
    n = 0
    for i in range(0, -4, -1) {{
        n += i
    }}
    return a, x * k + n, x * j + i
}}""", {"x": X}, lambda: [((((0 * f64(X) + 2 + 5 + 8) * 2 + 4) * 2 + 2) * 2 + 0) * 2 - 2,
                          f64(X) * 100 - 6, f64(X) * -2 - 3], ["f32"] * 3),
    # over tuples, lists, split's pieces, a tensor's rows, enumerate and zip
    ("sequences", f"""
fn f(x: f32[3, {C}], y: f32[3, {C}]) -> (f32[3, {C}], f32[3, 2], f32[{C}], f32[3, {C}], f32[3, {C}]) {{
    s = x * 0
    for t in (x, y, x * y) {{
        s = s + t
    }}
    p = x[:, :2] * 0
    for t in x.split(2, dim=1) {{
        p = p + t
    }}
    r = x[0] * 0
    for row in x {{
        r = r * 2 + row
    }}
    e = x * 0
    for q in enumerate([x, y]) {{
        i, t = q
        e = e + t * (i + 1)
    }}
    z = x * 0
    for q in zip((x, y), [3.0, 5.0], range(7, 9)) {{
        t, c, k = q
        z = z + t * c - k
    }}
    return s, p, r, e, z
}}""", {"x": X, "y": Y},
     lambda: [f64(X) + f64(Y) + f64(X) * f64(Y), sum(f64(X)[:, k:k + 2] for k in range(0, C, 2)),
              (f64(X[0]) * 2 + f64(X[1])) * 2 + f64(X[2]), f64(X) + 2 * f64(Y),
              f64(X) * 3 - 7 + f64(Y) * 5 - 8], ["f32"] * 5),
    # the loop's values are those of the tuple as the loop began, though the body rebinds a name in it
    ("rebinding", f"""
fn f(x: f32[3, {C}], y: f32[3, {C}]) -> (f32[3, {C}], f32[3, {C}]) {{
    s = x * 0
    for t in (x, y) {{
        s = s + t
        y = y * 10
    }}
    return s, y
}}""", {"x": X, "y": Y}, lambda: [f64(X) + f64(Y), f64(Y) * 100], ["f32", "f32"]),
    # conditions on compile-time values choose the code: loop variables, shapes, constants
    ("conditions", f"""
const MODE = 2
fn f(x: f32[3, {C}]) -> (f32[3, {C}], f32[3, {C}], f32[3, {C}]) {{
    h = x
    for i in range(5) {{
        if i % 2 == 0 and i != 4 {{
            h = h + 1
        }} elif i == 3 {{
            h = h * 2
        }} else if not i {{
            h = h * 100
        }} else {{
            h = h - 0.5
        }}
    }}
    if x.shape[0] == 3 {{
        g = x.exp()
    }} else {{
        g = x.view(-1)
    }}
    if MODE == 1 {{
        m = x.sin()
    }} elif MODE == 2 {{
        m = x.cos()
    }}
    return h, g, m
}}""", {"x": X}, lambda: [(((f64(X) + 1) - 0.5 + 1) * 2) - 0.5, np.exp(f64(X)), np.cos(f64(X))], ["f32"] * 3),
    # return inside a loop or a branch ends the function: the first one reached
    ("early_return", f"""
fn first_big(x: f32[3, {C}]) -> f32[3, {C}] {{
    for k in range(1, 10) {{
        if k * k > 10 {{
            return x * k
        }}
    }}
    return x
}}
fn pick(x: f32[3, {C}], y: f32[3, {C}]) -> f32[3, {C}] {{
    if x.size(1) > 100 {{
        return x
    }}
    return y
}}
fn f(x: f32[3, {C}], y: f32[3, {C}]) -> (f32[3, {C}], f32[3, {C}]) {{
    return first_big(x), pick(x, y)
}}""", {"x": X, "y": Y}, lambda: [f64(X) * 4, f64(Y)], ["f32", "f32"]),
    # tuple targets, enumerate(zip(...), start=), a tensor's rows unpacked, break and continue
    ("targets_and_jumps", f"""
fn f(x: f32[{C}], ws: f32[4, {C}], bs: f32[4, {C}], pairs: f32[3, 2]) -> f32[{C}] {{
    h = x
    for w, b in zip(ws, bs) {{
        h = h * w + b
    }}
    for i, (w, b) in enumerate(zip(ws, bs), start=1) {{
        if i == 2 {{
            continue
        }}
        h = h + w * i - b
    }}
    for a, b in pairs {{
        h = h + a * b
    }}
    n = 0
    for i in range(4) {{
        for j in range(10) {{
            if j > i {{ break }}
            n = n + j
        }}
        if i == 2 {{ break }}
        n = n * 10
    }}
    m, k = 100, 0
    while m > 1 {{
        m //= 2
        k += 1
        if k % 3 == 0 {{ continue }}
        h = h - m
    }}
    while True {{
        k = k * 2
        if k > 40 {{ break }}
    }}
    return h * n + k
}}""", {"x": Y[0], "ws": B, "bs": W[0, :4], "pairs": W[1, :3, :2]},
     lambda: [targets_and_jumps(Y[0], B, W[0, :4], W[1, :3, :2])], ["f32"]),
    # layers at offsets that are not 64-byte multiples, read through flipped and strided views
    ("odd_offsets", f"""
fn f(x: f32[2, 3], w: f32[{L5}, 3, 3], b: f32[{L5}, 5]) -> f32[2, 3] {{
    h = x
    for i in range({L5}) {{
        h = torch.tanh(h @ w[i].flip(0) + b[i, ::2]) * (i + 1)
    }}
    return h
}}""", {"x": X9, "w": W9, "b": B9}, lambda: [odd_layers(X9, W9, B9)], ["f32"]),
    # nested loops over a stacked weight of two indices, writes through views in a loop
    ("nested_and_stores", f"""
fn f(mut x: f32[3, {C}], w: f32[2, 2, {C}, {C}]) -> (f32[3, {C}], f32[3, {C}]) {{
    h = x * 1
    for i in range(2) {{
        for j in range(2) {{
            h = h @ w[i, j] + i * 10 + j
        }}
    }}
    for c in range(0, {C}, 2) {{
        x[:, c] = c
    }}
    return h, x
}}""", {"x": X, "w": W.reshape(2, 2, C, C)},
     lambda: [(((f64(X) @ f64(W[0]) + 0) @ f64(W[1]) + 1) @ f64(W[2]) + 10) @ f64(W[3]) + 11,
              np.where(np.arange(C) % 2 == 0, np.arange(C), f64(X))], ["f32", "f32"]),
]


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for name, src, inputs, want, kinds in CASES[::test_subset()]:  # the sanitizer pass: a subset
        p, outs = run_outputs(tdslc, src, inputs)
        t.report(name, compare_kinds(p, outs, want(), kinds), src)
    # an unrolled loop is the program written out: one fused kernel per layer of the MLP
    ir = emit_text(tdslc, CASES[0][1], "ir").stdout
    kernels = [ln for ln in ir.splitlines() if ln.startswith("  k")]
    t.check("stacked_mlp: one kernel per layer", len(kernels) == 4, ir)
    check_shared(t, tdslc)
    return t.summary()


def kernel_functions(c_text):
    return [ln for ln in c_text.splitlines() if ln.startswith("static int tdsl_g_")]


def check_shared(t, tdslc):
    """Layers whose kernels differ only in where they read share one function."""
    src = """
const L = 6
fn f(x: f32[3, 16], w: f32[L, 16, 16], b: f32[L, 16]) -> f32[3, 16] {
    h = x
    for i in range(L) {
        h = F.relu(h @ w[i] + b[i])
    }
    return h
}"""
    ks = emit_text(tdslc, src, "kernels").stdout
    heads = [ln for ln in ks.splitlines() if ln.startswith("kernel ")]
    t.check("6 layers: 6 kernels, 5 of them the first's code",
            len(heads) == 6 and all(h.endswith("(the code of k0)") for h in heads[1:]), ks)
    t.check("6 layers: the later layers read the weights from their own start",
            "b1+256 (read)" in ks and "b1+1280 (read)" in ks and "b2+80 (read)" in ks, ks)
    c = emit_text(tdslc, src, "c").stdout
    t.check("6 layers: one kernel function in the C", len(kernel_functions(c)) == 1, c)
    with open(os.path.join(HERE, "..", "..", "examples", "nanogpt.tdsl"), encoding="utf-8") as f:
        gpt = f.read()
    counts, llvm_calls = [], []
    for layers in (12, 24):
        text = gpt.replace("const N_LAYER = 4\n", f"const N_LAYER = {layers}\n")
        p = emit_text(tdslc, text, "c", ["--fn", "gpt"])
        rolled = [int(n) for n in re.findall(r"tdsl_g_l < (\d+) && TDSL_G_OK\(tdsl_g_rc\)", p.stdout)]
        calls = len(re.findall(r"(?:= |TDSL_G_RUN\()tdsl_g_gpt_k\d+\(", p.stdout))  # (the first, then guarded)
        counts.append((len(kernel_functions(p.stdout)), calls, max(rolled, default=0), p.returncode))
        if env_backend() == "llvm":  # the LLVM entry rolls the same run into a loop
            ll = emit_text(tdslc, text, "llvm", ["--fn", "gpt"])
            entry = ll.stdout[ll.stdout.find("define i32 @gpt("):]
            llvm_calls.append((len(re.findall(r"call i32 @tdsl_g_gpt_k\d+\(", entry)), ll.returncode))
    # (the first layer differs: its residual sum reads the embedding; from the second on,
    # the layers' calls repeat and the entry runs them in a loop)
    t.check("nanoGPT: 24 layers emit the kernel functions and the calls of 12, in a loop of more iterations",
            counts[0][0] == counts[1][0] and counts[0][1] == counts[1][1] and counts[1][2] > counts[0][2] > 0
            and counts[0][3] == counts[1][3] == 0, str(counts))
    if llvm_calls:
        t.check("nanoGPT: the LLVM entry of 24 layers has the call sites of 12's",
                llvm_calls[0] == llvm_calls[1] and llvm_calls[0][0] > 0 and llvm_calls[0][1] == 0, str(llvm_calls))
    check_gpt2_plan(t, tdslc)


def check_gpt2_plan(t, tdslc):
    """GPT-2 small (bench/models/gpt2.tdsl, 12 layers of 7 calls; the attention writes its
    heads merged, ir/attn_fuse.c, so no copy merges them): the temps' buffer plan
    (ir/share.c) gives every layer from the second on the buffers of the layer before
    (the residual stream written in place over itself, ir/inplace.c), so the entry runs 11
    turns of a loop of 7 calls, each from the second half of one layer to the first half of
    the next (17 call sites: the first layer's first half, the last one's second half and the
    head written out; since the residual stream is stored by the linear that adds it, ir/fuse.c,
    every layer's plan is alike: it was 10 turns from layer 1 to 10, 24 call sites, when the
    first layer's stream was stored otherwise). With the stream in two buffers by turns it was 5
    turns of 14 calls (31 call sites); a plan that opens its slots as the layers need
    them gave the second layer other buffers: a loop of 4 and 51 call sites."""
    with open(os.path.join(HERE, "..", "..", "bench", "models", "gpt2.tdsl"), encoding="utf-8") as f:
        src = f.read()
    args = ["--fn", "gpt2", "--dim", "B=1", "--dim", "T=64"]
    p = emit_text(tdslc, src, "c", args)
    rolled = [int(n) for n in re.findall(r"tdsl_g_l < (\d+) && TDSL_G_OK\(tdsl_g_rc\)", p.stdout)]
    calls = len(re.findall(r"(?:= |TDSL_G_RUN\()tdsl_g_gpt2_k\d+\(", p.stdout))
    t.check("GPT-2 small: 11 turns of a loop of one layer's calls (17 call sites)",
            p.returncode == 0 and rolled == [11] and calls == 17, f"{rolled} {calls} {p.stderr}")
    # Issue 31's size budget for the whole model's C (kernels shared, micro-kernels once):
    # a kernel printed twice (the vocabulary projection's plain-store twin) read 61,530.
    # 55,426 before the GEMM micro-kernel's k loop was unrolled 4 terms a step (ir/gemm.c's
    # micro_of: the linears' 6x64 kernel, 1.05x on this forward with LLVM), 66,688 after.
    size = len(p.stdout.encode())
    t.check("GPT-2 small: --emit=c within 68,000 bytes", p.returncode == 0 and size <= 68000, f"{size} bytes")
    if env_backend() == "llvm":
        ll = emit_text(tdslc, src, "llvm", args)
        entry = ll.stdout[ll.stdout.find("define i32 @gpt2("):]
        n = len(re.findall(r"call i32 @tdsl_g_gpt2_k\d+\(", entry))
        t.check("GPT-2 small: the LLVM entry has the same 17 call sites", ll.returncode == 0 and n == 17,
                f"{n} {ll.stderr}")


if __name__ == "__main__":
    sys.exit(main())
