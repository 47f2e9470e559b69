#!/usr/bin/python3
"""tests/run/test_examples.py TDSLC: every function of examples/*.tdsl through `tdslc run`.

Inputs come from the seeded generator (`--out-dir` writes them as in_NAME.npy); each
result is compared with a NumPy implementation written here (computed in f64 from
the very inputs, then compared with a tolerance for f32: nmse for matmul chains).
An example function with no NumPy model here is a failure, so a new example comes
with its check.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import math
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, compare, dim_args, example_dims, example_functions, json_values,  # noqa: E402
                    require_backend, run_cleanup, tdslc_run)


def softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(x, wq, wk, wv, wo):
    B, L, E = x.shape
    H = 8
    D = E // H
    q = (x @ wq).reshape(B, L, H, D).transpose(0, 2, 1, 3)
    k = (x @ wk).reshape(B, L, H, D).transpose(0, 2, 1, 3)
    v = (x @ wv).reshape(B, L, H, D).transpose(0, 2, 1, 3)
    a = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(D), -1)
    return [((a @ v).transpose(0, 2, 1, 3).reshape(B, L, E) @ wo, "mm")]


def causal_softmax(s):
    keep = np.arange(4)[None, :] <= np.arange(4)[:, None]
    return [(softmax(np.where(keep, s, -1e9), -1), "red")]


def views(x):
    xt = x.T
    return [(o, "exact") for o in (x.reshape(-1), xt, x[:, ::2], x[-1], x[:, None], np.broadcast_to(x, (2, 3, 4)), x,
                                   xt[1:, 1:].T.reshape(2, 1, 3))]


def gelu(a):
    return 0.5 * a * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))


def layer_norm(x, w, b, eps=1e-5):
    c = x - x.mean(-1, keepdims=True)
    return c / np.sqrt((c * c).mean(-1, keepdims=True) + eps) * w + b


def gpt_attention(x, wa, ba, wp, bp, nh=4):
    B, T, C = x.shape
    q, k, v = np.split(x @ wa.T + ba, 3, axis=2)
    q, k, v = (a.reshape(B, T, nh, C // nh).transpose(0, 2, 1, 3) for a in (q, k, v))
    att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(C // nh)
    att = softmax(np.where(np.tril(np.ones((T, T))) == 0, -np.inf, att), -1)
    return (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C) @ wp.T + bp


def gpt_mlp(x, wf, bf, wp, bp):
    return gelu(x @ wf.T + bf) @ wp.T + bp


def gpt_block(x, l1w, l1b, aw, ab, apw, apb, l2w, l2b, fw, fb, mw, mb):
    x = x + gpt_attention(layer_norm(x, l1w, l1b), aw, ab, apw, apb)
    return x + gpt_mlp(layer_norm(x, l2w, l2b), fw, fb, mw, mb)


def gpt(idx, wte, wpe, l1w, l1b, aw, ab, apw, apb, l2w, l2b, fw, fb, mw, mb, lfw, lfb):
    """nanogpt.tdsl's GPT: embeddings, the blocks in a loop over stacked weights, the
    final layer norm and the tied logits."""
    idx = idx.astype(np.int64)
    x = wte[idx] + wpe[np.arange(idx.shape[1])]
    for i in range(l1w.shape[0]):
        x = gpt_block(x, l1w[i], l1b[i], aw[i], ab[i], apw[i], apb[i], l2w[i], l2b[i], fw[i], fb[i], mw[i], mb[i])
    return layer_norm(x, lfw, lfb) @ wte.T


def rms_norm(x, w, eps=1e-6):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def llama_attention(x, wq, wk, wv, wo, nh=4, nkv=2):
    B, T, D = x.shape
    hd = D // nh
    q = (x @ wq.T).reshape(B, T, nh, hd).transpose(0, 2, 1, 3)
    k = (x @ wk.T).reshape(B, T, nkv, hd).transpose(0, 2, 1, 3)
    v = (x @ wv.T).reshape(B, T, nkv, hd).transpose(0, 2, 1, 3)
    inv_freq = 1.0 / 10000 ** (np.arange(0, hd, 2) / hd)
    emb = np.concatenate([np.outer(np.arange(T), inv_freq)] * 2, -1)
    q = q * np.cos(emb) + rotate_half(q) * np.sin(emb)
    k = k * np.cos(emb) + rotate_half(k) * np.sin(emb)
    k, v = np.repeat(k, nh // nkv, 1), np.repeat(v, nh // nkv, 1)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + np.triu(np.full((T, T), -np.inf), 1)
    return (softmax(s, -1) @ v).transpose(0, 2, 1, 3).reshape(B, T, D) @ wo.T


def feed_forward(x, w1, w2, w3):
    a = x @ w1.T
    return (a / (1 + np.exp(-a)) * (x @ w3.T)) @ w2.T


def llama_layer(x, an, wq, wk, wv, wo, fn, w1, w2, w3):
    h = x + llama_attention(rms_norm(x, an), wq, wk, wv, wo)
    return h + feed_forward(rms_norm(h, fn), w1, w2, w3)


def conv3x3(x, w):
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n, c, h, w, 3, 3
    return np.einsum("nchwij,ocij->nohw", win, w)


def batch_norm(x, mean, var, g, b, eps=1e-5):
    s = lambda a: a[None, :, None, None]  # noqa: E731
    return (x - s(mean)) / np.sqrt(s(var) + eps) * s(g) + s(b)


def conv_bn(x, w, mean, var, g, b):
    return batch_norm(conv3x3(x, w), mean, var, g, b)


def basic_block(x, w1, m1, v1, g1, b1, w2, m2, v2, g2, b2):
    out = np.maximum(batch_norm(conv3x3(x, w1), m1, v1, g1, b1), 0)
    return np.maximum(batch_norm(conv3x3(out, w2), m2, v2, g2, b2) + x, 0)


# (file, function) -> NumPy model: inputs in declaration order -> [(value, kind)]
MODELS = {
    ("mlp.tdsl", "mlp"): lambda x, w1, b1, w2, b2: [(np.maximum(x @ w1 + b1, 0) @ w2 + b2, "mm")],
    ("attention.tdsl", "attention"): attention,
    ("layer_norm.tdsl", "layer_norm"): lambda x: [((x - x.mean(-1, keepdims=True)) /
                                                   np.sqrt(x.var(-1, keepdims=True) + 1e-5), "red")],
    ("broadcast.tdsl", "outer"): lambda a, b: [(np.outer(a, b), "elem")],
    ("broadcast.tdsl", "outer_expand"): lambda a, b: [(np.outer(a, b), "elem"), (a[:, None] + b[None, :], "elem")],
    ("broadcast.tdsl", "batched_outer"): lambda a, b: [(np.einsum("bi,bj->bij", a, b), "elem")],
    ("broadcast.tdsl", "bias"): lambda m, row, col: [(m + row - col[:, None], "elem")],
    ("broadcast.tdsl", "pairwise_distance"): lambda x, y: [
        (np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)), "red")],
    ("broadcast.tdsl", "causal_softmax"): causal_softmax,
    ("storage_views.tdsl", "views"): views,
    ("nanogpt_block.tdsl", "causal_self_attention"): lambda *a: [(gpt_attention(*a), "mm")],
    ("nanogpt_block.tdsl", "mlp"): lambda *a: [(gpt_mlp(*a), "mm")],
    ("nanogpt_block.tdsl", "block"): lambda *a: [(gpt_block(*a), "mm")],
    ("nanogpt.tdsl", "causal_self_attention"): lambda *a: [(gpt_attention(*a), "mm")],
    ("nanogpt.tdsl", "mlp"): lambda *a: [(gpt_mlp(*a), "mm")],
    ("nanogpt.tdsl", "block"): lambda *a: [(gpt_block(*a), "mm")],
    ("nanogpt.tdsl", "gpt"): lambda *a: [(gpt(*a), "mm")],
    ("resnet_block.tdsl", "conv_bn"): lambda *a: [(conv_bn(*a), "mm")],
    ("resnet_block.tdsl", "basic_block"): lambda *a: [(basic_block(*a), "mm")],
    ("llama_layer.tdsl", "rms_norm"): lambda x, w: [(rms_norm(x, w), "red")],
    ("llama_layer.tdsl", "rotate_half"): lambda x: [(rotate_half(x), "exact")],
    ("llama_layer.tdsl", "rotate_half_kv"): lambda x: [(rotate_half(x), "exact")],
    ("llama_layer.tdsl", "attention"): lambda *a: [(llama_attention(*a), "mm")],
    ("llama_layer.tdsl", "feed_forward"): lambda *a: [(feed_forward(*a), "mm")],
    ("llama_layer.tdsl", "llama_layer"): lambda *a: [(llama_layer(*a), "mm")],
    ("storage_views.tdsl", "window"): lambda x: [(x[1:5].T[::2, 1:][:, 0:3].T.T, "exact")],
}


def params_of(src, fn):
    m = re.search(r"fn\s+" + fn + r"\s*\((.*?)\)\s*->", src, re.S)
    return [p.split(":")[0].replace("mut", "").strip() for p in re.split(r",\s*(?![^\[]*\])", m.group(1)) if p.strip()]


def shape_of(src, fn, pname, dims=None):
    """The shape of parameter pname of fn, its dims evaluated with the file's constants
    (and the generic dims bound in dims)."""
    consts = {m.group(1): m.group(2) for m in re.finditer(r"^const\s+(\w+)\s*=\s*(.+)$", src, re.M)}
    m = re.search(r"fn\s+" + fn + r"\s*\((.*?)\)\s*->", src, re.S)
    decl = re.search(r"\b" + pname + r"\s*:\s*\w+\[(.*?)\]", m.group(1)).group(1)
    env = dict(dims or {})
    for k, v in consts.items():
        env[k] = eval(v, {}, env)  # noqa: S307 (the file's own constant expressions)
    return tuple(int(eval(d, {}, env)) for d in decl.split(",") if d.strip())  # noqa: S307


def check_example(tdslc, fname, src, fn, backend="env"):
    """Runs fn of example fname (source src) on backend with the seeded generator's
    inputs and compares each result with its NumPy model; returns failure lines
    (test_gpu_run.py runs it on the GPU backends)."""
    model = MODELS.get((fname, fn))
    if model is None:
        return ["no NumPy model for this example function in test_examples.py"]
    # a variance is positive: the running variances of a batch norm are given, the rest generated
    params = params_of(src, fn)
    dims = example_dims(fname, src, fn)
    rng = np.random.default_rng(0)
    inputs = {n: rng.uniform(0.5, 1.5, size=shape_of(src, fn, n, dims)).astype(np.float32) for n in params if
              n.endswith("var")}
    args = ["--fn", fn] + dim_args(dims)
    p, doc, out_dir = tdslc_run(tdslc, src, args=args, name=fname[:-5], backend=backend, inputs=inputs)
    errs = []
    if p.returncode != 0:
        errs.append(f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:1500]}")
    else:
        ins = [inputs[n] if n in inputs else np.load(os.path.join(out_dir, f"in_{n}.npy")) for n in params]
        wants = model(*[a.astype(np.float64) for a in ins])
        if len(wants) != len(doc["outputs"]):
            errs.append(f"{len(doc['outputs'])} outputs, expected {len(wants)}")
        for k, (o, (want, kind)) in enumerate(zip(doc["outputs"], wants)):
            want = np.asarray(want).astype(np.float32)
            if o["dtype"] != "f32" or list(o["shape"]) != list(want.shape):
                errs.append(f"out{k}: {o['dtype']}{o['shape']}, expected f32{list(want.shape)}")
                continue
            n = max(int(np.prod(want.shape[-1:])), 1)
            r = compare(json_values(o["data"], o["dtype"]).reshape(want.shape), want, "f32", kind, n)
            if r:
                errs.append(f"out{k}: {r}")
    run_cleanup(out_dir)
    return errs


def main():
    tdslc = os.path.abspath(sys.argv[1])
    require_backend(tdslc)
    tally = Tally()
    for fname, src, fn in example_functions():
        tally.report(f"{fname} {fn}", check_example(tdslc, fname, src, fn))
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
