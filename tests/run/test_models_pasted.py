#!/usr/bin/python3
"""tests/run/test_models_pasted.py TDSLC: forward passes of public models, pasted from their
code bases and moved into tdsl by mechanical rules only (tests/run/models_pasted/*.tdsl say
which, and mark with EDIT each change tdsl still forced): nanoGPT's Block, a LLaMA-2 layer
with its KV cache, Mixtral's sparse MoE block, a timm ViT Block, torchvision's ResNet
BasicBlock and Bottleneck, Whisper's encoder block, mamba-minimal's MambaBlock, a DiT
block, a ConvNeXt block, a BERT layer, a GPT-NeoX layer, transformers' T5 encoder layer,
GPT-2 block, LLaMA decoder layer and CLIP encoder layer, and nanoGPT's whole GPT pasted as
written (its nn.ModuleDict, nn.ModuleList of Blocks, MLP as nn.Sequential), torchvision's BasicBlock
as written (nn.Conv2d and nn.BatchNorm2d objects, norm_layer a class as a value), and four modules written as a user
writes them (a BERT-style encoder layer with a padding mask, a diffusion UNet level, MobileNetV2's inverted residual,
a Whisper-style audio encoder stem with nn.MultiheadAttention). Each runs on small shapes with seeded
inputs and is compared with the same model written here in NumPy (float64).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and exits
77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import math
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, gpu_emit_errors, require_backend, tdslc_run, load_outputs, run_cleanup,  # noqa: E402
                    test_subset)

MODELS = os.path.join(HERE, "models_pasted")
RTOL = {"f32": 2e-4}


# ---- NumPy building blocks (float64) ----
def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def layer_norm(x, w=None, b=None, eps=1e-5, axis=-1):
    mu = x.mean(axis, keepdims=True)
    var = ((x - mu) ** 2).mean(axis, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1 + np.exp(-x))


def attention(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if mask is not None:
        s = s + mask
    if causal:
        t, u = s.shape[-2:]
        s = np.where(np.tril(np.ones((t, u), bool)), s, -np.inf)
    return softmax(s) @ v


def heads(x, h):  # (B, T, C) -> (B, h, T, C // h)
    b, t, c = x.shape
    return x.reshape(b, t, h, c // h).transpose(0, 2, 1, 3)


def merge(x):  # (B, h, T, d) -> (B, T, h * d)
    b, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    n, c, hh, ww = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (hh + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (ww + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dilation:i * dilation + stride * oh:stride,
                           j * dilation:j * dilation + stride * ow:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    return out if b is None else out + b[None, :, None, None]


def conv1d(x, w, b, padding, groups):
    return conv2d(x[:, :, None, :], w[:, :, None, :], b, padding=0, groups=groups)[:, :, 0, :] if padding == 0 else \
        conv2d(np.pad(x, ((0, 0), (0, 0), (padding, padding)))[:, :, None, :], w[:, :, None, :], b, groups=groups)[:, :, 0]


def batch_norm(x, mean, var, w, b, eps=1e-5):
    sh = (1, -1, 1, 1)
    return (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) * w.reshape(sh) + b.reshape(sh)


# ---- the models ----
def nanogpt(p):
    def blk(flash):
        x = p["x"]
        h = layer_norm(x, p["ln_1_weight"], p["ln_1_bias"])
        qkv = linear(h, p["c_attn_weight"], p["c_attn_bias"])
        q, k, v = (heads(t, 4) for t in np.split(qkv, 3, -1))
        y = attention(q, k, v, causal=True) if flash else \
            attention(q, k, v, mask=np.where(p["bias"][:, :, :8, :8] == 0, -np.inf, 0.0))
        x = x + linear(merge(y), p["c_proj_weight"], p["c_proj_bias"])
        h = layer_norm(x, p["ln_2_weight"], p["ln_2_bias"])
        return x + linear(gelu(linear(h, p["c_fc_weight"], p["c_fc_bias"])), p["mlp_proj_weight"], p["mlp_proj_bias"])
    return [blk(True), blk(False)]


def nanogpt_model(p):
    idx, targets = p["idx"].astype(np.int64), p["targets"].astype(np.int64)
    x = p["wte"][idx] + p["wpe"][np.arange(idx.shape[1])]
    for i in range(2):
        h = layer_norm(x, p["ln_1_w"][i], p["ln_1_b"][i])
        q, k, v = (heads(t, 4) for t in np.split(linear(h, p["attn_w"][i], p["attn_b"][i]), 3, -1))
        x = x + linear(merge(attention(q, k, v, causal=True)), p["proj_w"][i], p["proj_b"][i])
        h = layer_norm(x, p["ln_2_w"][i], p["ln_2_b"][i])
        x = x + linear(gelu(linear(h, p["fc_w"][i], p["fc_b"][i])), p["fc2_w"][i], p["fc2_b"][i])
    logits = linear(layer_norm(x, p["ln_f_w"], p["ln_f_b"]), p["wte"])  # lm_head tied to wte
    lg, t = logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    lsm = lg - lg.max(-1, keepdims=True)
    lsm = lsm - np.log(np.exp(lsm).sum(-1, keepdims=True))
    keep = t != -1  # ignore_index=-1
    return [logits, np.float64(-lsm[np.arange(len(t))[keep], t[keep]].mean()), logits[:, [-1], :]]


def llama2(p):
    cache_k, cache_v = p["cache_k"].copy(), p["cache_v"].copy()

    def rms(x, w):
        return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5) * w

    def rope(x, cos, sin):
        xr, xi = x[..., 0::2], x[..., 1::2]
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = xr * c - xi * s, xr * s + xi * c
        return out

    def layer(x, start, mask):
        b, t, d = x.shape
        h = rms(x, p["attention_norm_weight"])
        xq = linear(h, p["wq"]).reshape(b, t, 4, 8)
        xk = linear(h, p["wk"]).reshape(b, t, 2, 8)
        xv = linear(h, p["wv"]).reshape(b, t, 2, 8)
        cos, sin = p["freqs_cis"].real[start:start + t], p["freqs_cis"].imag[start:start + t]
        xq, xk = rope(xq, cos, sin), rope(xk, cos, sin)
        cache_k[:b, start:start + t], cache_v[:b, start:start + t] = xk, xv
        keys = np.repeat(cache_k[:b, :start + t], 2, axis=2).transpose(0, 2, 1, 3)
        values = np.repeat(cache_v[:b, :start + t], 2, axis=2).transpose(0, 2, 1, 3)
        o = attention(xq.transpose(0, 2, 1, 3), keys, values, mask=mask)
        h = x + linear(merge(o), p["wo"])
        f = rms(h, p["ffn_norm_weight"])
        return h + linear(silu(linear(f, p["w1"])) * linear(f, p["w3"]), p["w2"])
    mask = np.triu(np.full((4, 4), -np.inf), 1)
    return [layer(p["x"], 0, mask), layer(p["x1"], 4, None)]


def mixtral(p):
    x = p["hidden_states"].reshape(-1, 16)
    logits = linear(x, p["gate_weight"])
    r = softmax(logits, 1)
    top = np.argsort(-r, -1, kind="stable")[:, :2]
    w = np.take_along_axis(r, top, -1)
    w = w / w.sum(-1, keepdims=True)
    out = np.zeros_like(x)
    for e in range(4):
        we = (w * (top == e)).sum(-1, keepdims=True)
        h = silu(linear(x, p["experts_w1"][e])) * linear(x, p["experts_w3"][e])
        out += linear(h, p["experts_w2"][e]) * we
    return [out.reshape(2, 3, 16), logits]


def vit(p):
    def blk(ls):
        x = p["x"]
        h = layer_norm(x, p["norm1_weight"], p["norm1_bias"], 1e-6)
        qkv = linear(h, p["qkv_weight"], p["qkv_bias"]).reshape(2, 5, 3, 4, 8).transpose(2, 0, 3, 1, 4)
        a = linear(merge(attention(qkv[0], qkv[1], qkv[2])), p["proj_weight"], p["proj_bias"])
        x = x + (a * p["ls1_gamma"] if ls else a)
        h = layer_norm(x, p["norm2_weight"], p["norm2_bias"], 1e-6)
        m = linear(gelu(linear(h, p["fc1_weight"], p["fc1_bias"])), p["fc2_weight"], p["fc2_bias"])
        return x + (m * p["ls2_gamma"] if ls else m)
    return [blk(True), blk(False)]


def resnet(p):
    s, s16, s32 = p["s"], p["s16"], p["s32"]

    def bn(x, st, n=None):
        st = st if n is None else st[:, :n]
        return batch_norm(x, st[0], np.abs(st[1]) + 0.5, st[2], st[3])

    relu = lambda x: np.maximum(x, 0)  # noqa: E731
    y = relu(bn(conv2d(relu(bn(conv2d(p["x"], p["c1"], padding=1), s)), p["c2"], padding=1), s) + p["x"])
    z = relu(bn(conv2d(relu(bn(conv2d(y, p["d1"], stride=2, padding=1), s16)), p["d2"], padding=1), s16)
             + bn(conv2d(y, p["dd"], stride=2), s16))
    u = relu(bn(conv2d(relu(bn(conv2d(relu(bn(conv2d(z, p["b1"]), s16, 4)), p["b2"], padding=1), s16, 4)), p["b3"]),
                s16) + z)
    w = relu(bn(conv2d(relu(bn(conv2d(relu(bn(conv2d(u, p["g1"]), s16)), p["g2"], stride=2, padding=1, groups=2), s16)),
                       p["g3"]), s32) + bn(conv2d(u, p["gd"], stride=2), s32))
    return [y, z, u, w]


def whisper(p):
    x = p["x"]
    h = layer_norm(x, p["attn_ln_weight"], p["attn_ln_bias"])
    q, k, v = linear(h, p["query_weight"], p["query_bias"]), linear(h, p["key_weight"]), \
        linear(h, p["value_weight"], p["value_bias"])
    x = x + linear(merge(attention(heads(q, 4), heads(k, 4), heads(v, 4))), p["out_weight"], p["out_bias"])
    h = layer_norm(x, p["mlp_ln_weight"], p["mlp_ln_bias"])
    return [x + linear(gelu(linear(h, p["w0"], p["b0"])), p["w2"], p["b2"])]


def mamba(p):
    x = p["x"]
    xr = linear(x, p["in_proj_weight"])
    xx, res = xr[..., :32], xr[..., 32:]
    c = conv1d(xx.transpose(0, 2, 1), p["conv1d_weight"], p["conv1d_bias"], 3, 32)[:, :, :6].transpose(0, 2, 1)
    u = silu(c)
    A, D = -np.exp(p["A_log"]), p["D"]
    dbl = linear(u, p["x_proj_weight"])
    delta, B, C = dbl[..., :1], dbl[..., 1:5], dbl[..., 5:9]
    delta = np.log1p(np.exp(linear(delta, p["dt_proj_weight"], p["dt_proj_bias"])))
    dA = np.exp(np.einsum("bld,dn->bldn", delta, A))
    dBu = np.einsum("bld,bln,bld->bldn", delta, B, u)
    s = np.zeros((2, 32, 4))
    ys = []
    for i in range(6):
        s = dA[:, i] * s + dBu[:, i]
        ys.append(np.einsum("bdn,bn->bd", s, C[:, i]))
    y = np.stack(ys, 1) + u * D
    return [linear(y * silu(res), p["out_proj_weight"])]


def dit(p):
    x, c = p["x"], p["c"]
    mod = linear(silu(c), p["ada_weight"], p["ada_bias"])
    sh1, sc1, g1, sh2, sc2, g2 = np.split(mod, 6, 1)

    def modulate(h, sh, sc):
        return h * (1 + sc[:, None]) + sh[:, None]
    h = modulate(layer_norm(x, eps=1e-6), sh1, sc1)
    qkv = linear(h, p["qkv_weight"], p["qkv_bias"]).reshape(2, 5, 3, 4, 8).transpose(2, 0, 3, 1, 4)
    x = x + g1[:, None] * linear(merge(attention(qkv[0], qkv[1], qkv[2])), p["proj_weight"], p["proj_bias"])
    h = modulate(layer_norm(x, eps=1e-6), sh2, sc2)
    return [x + g2[:, None] * linear(gelu_tanh(linear(h, p["fc1_weight"], p["fc1_bias"])), p["fc2_weight"],
                                     p["fc2_bias"])]


def convnext(p):
    def blk(gamma):
        x = p["x"]
        h = conv2d(x, p["dwconv_weight"], p["dwconv_bias"], padding=3, groups=16).transpose(0, 2, 3, 1)
        h = layer_norm(h, p["norm_weight"], p["norm_bias"], 1e-6)
        h = linear(gelu(linear(h, p["pwconv1_weight"], p["pwconv1_bias"])), p["pwconv2_weight"], p["pwconv2_bias"])
        if gamma:
            h = p["gamma"] * h
        return x + h.transpose(0, 3, 1, 2)
    return [blk(True), blk(False)]


def bert(p):
    x = p["hidden_states"]
    mask = (1.0 - (p["mask"] > 0)[:, None, None, :]) * np.finfo(np.float32).min
    q, k, v = (heads(linear(x, p[n + "_weight"], p[n + "_bias"]), 4) for n in ("query", "key", "value"))
    a = merge(attention(q, k, v, mask=mask))
    a = layer_norm(linear(a, p["ao_dense_weight"], p["ao_dense_bias"]) + x, p["ao_ln_weight"], p["ao_ln_bias"], 1e-12)
    i = gelu(linear(a, p["i_dense_weight"], p["i_dense_bias"]))
    out = layer_norm(linear(i, p["o_dense_weight"], p["o_dense_bias"]) + a, p["o_ln_weight"], p["o_ln_bias"], 1e-12)
    return [out, out]  # the feed-forward unchunked, then chunked


# (file, entry, NumPy model, inputs made specially: {param: function(rng, shape)})
def gptneox(p):
    x, H, D, R = p["x"], 4, 8, 2
    inv_freq = 1.0 / (10000 ** (np.arange(0, R, 2) / R))
    freqs = np.outer(np.arange(16), inv_freq)
    emb = np.concatenate([freqs, freqs], -1)
    cos, sin = np.cos(emb)[:6][None, None], np.sin(emb)[:6][None, None]

    def rot(v):
        h = v.shape[-1] // 2
        return np.concatenate([-v[..., h:], v[..., :h]], -1)

    def rope(v):
        r = v[..., :R] * cos + rot(v[..., :R]) * sin
        return np.concatenate([r, v[..., R:]], -1)

    def mlp(h):
        h = linear(h, p["dense_h_to_4h_weight"], p["dense_h_to_4h_bias"])
        return linear(gelu(h), p["dense_4h_to_h_weight"], p["dense_4h_to_h_bias"])

    def layer(parallel):
        h = layer_norm(x, p["input_layernorm_weight"], p["input_layernorm_bias"])
        qkv = linear(h, p["query_key_value_weight"], p["query_key_value_bias"]).reshape(2, 6, H, 3 * D)
        q, k, v = (qkv[..., i * D:(i + 1) * D].transpose(0, 2, 1, 3) for i in range(3))
        a = attention(rope(q), rope(k), v, causal=True, scale=D ** -0.5)
        a = linear(merge(a), p["dense_weight"], p["dense_bias"])
        ln2 = lambda t: layer_norm(t, p["post_attention_layernorm_weight"], p["post_attention_layernorm_bias"])
        if parallel:
            return mlp(ln2(x)) + a + x
        return mlp(ln2(a + x)) + a + x
    return [layer(True), layer(False)]


def t5(p):
    x, H = p["x"], 4
    T = x.shape[1]

    def rms(h, w):
        return w * (h / np.sqrt((h ** 2).mean(-1, keepdims=True) + 1e-6))

    rp = np.arange(T)[None, :] - np.arange(T)[:, None]  # T5Attention._relative_position_bucket, bidirectional
    nb = 16
    buckets = (rp > 0).astype(np.int64) * nb
    rp = np.abs(rp)
    small = rp < nb // 2
    with np.errstate(divide="ignore"):
        large = nb // 2 + np.trunc(np.log(np.maximum(rp, 1) / (nb // 2)) / math.log(128 / (nb // 2)) * (nb // 2))
    buckets = buckets + np.where(small, rp, np.minimum(large.astype(np.int64), nb - 1))
    bias = p["relative_attention_bias_weight"][buckets].transpose(2, 0, 1)[None]
    h = rms(x, p["sa_layer_norm_weight"])
    q, k, v = (heads(linear(h, p[n + "_weight"]), H) for n in "qkv")
    x = x + linear(merge(softmax(q @ np.swapaxes(k, -1, -2) + bias) @ v), p["o_weight"])
    f = rms(x, p["ff_layer_norm_weight"])
    relu = x + linear(np.maximum(linear(f, p["wi_weight"]), 0), p["wo_weight"])
    gated = x + linear(gelu_tanh(linear(f, p["wi_0_weight"])) * linear(f, p["wi_1_weight"]), p["wo_weight"])
    return [relu, gated, bias]


def gpt2(p):
    x, H = p["x"], 4

    def conv1d(t, w, b):
        return t @ w + b

    h = layer_norm(x, p["ln_1_weight"], p["ln_1_bias"])
    q, k, v = (heads(t, H) for t in np.split(conv1d(h, p["c_attn_weight"], p["c_attn_bias"]), 3, -1))
    a = conv1d(merge(attention(q, k, v, causal=True)), p["attn_c_proj_weight"], p["attn_c_proj_bias"])
    x = x + a
    h = layer_norm(x, p["ln_2_weight"], p["ln_2_bias"])
    m = conv1d(gelu_tanh(conv1d(h, p["c_fc_weight"], p["c_fc_bias"])), p["mlp_c_proj_weight"], p["mlp_c_proj_bias"])
    return [x + m, k, v]


def hf_llama(p):
    x, H, KH, D = p["x"], 4, 2, 8

    def rms(h, w):
        return w * (h / np.sqrt((h ** 2).mean(-1, keepdims=True) + 1e-6))

    inv_freq = 1.0 / (10000 ** (np.arange(0, D, 2) / D))
    emb = np.concatenate([np.outer(np.arange(5), inv_freq)] * 2, -1)
    cos, sin = np.cos(emb), np.sin(emb)

    def rope(v):
        h = v.shape[-1] // 2
        return v * cos + np.concatenate([-v[..., h:], v[..., :h]], -1) * sin

    h = rms(x, p["input_layernorm_weight"])
    q = rope(heads(linear(h, p["q_proj_weight"]), H))
    k = np.repeat(rope(heads(linear(h, p["k_proj_weight"]), KH)), H // KH, axis=1)
    v = np.repeat(heads(linear(h, p["v_proj_weight"]), KH), H // KH, axis=1)
    x = x + linear(merge(attention(q, k, v, causal=True)), p["o_proj_weight"])
    h = rms(x, p["post_attention_layernorm_weight"])
    out = x + linear(silu(linear(h, p["gate_proj_weight"])) * linear(h, p["up_proj_weight"]), p["down_proj_weight"])
    return [out, out]  # pretraining_tp 1, then 2


def clip(p):
    x, H = p["x"], 4
    h = layer_norm(x, p["layer_norm1_weight"], p["layer_norm1_bias"])
    q, k, v = (heads(linear(h, p[n + "_proj_weight"], p[n + "_proj_bias"]), H) for n in "qkv")
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(8) + np.triu(np.full((6, 6), np.finfo(np.float32).min), 1)
    w = softmax(s)
    x = x + linear(merge(w @ v), p["out_proj_weight"], p["out_proj_bias"])
    h = layer_norm(x, p["layer_norm2_weight"], p["layer_norm2_bias"])
    f = linear(h, p["fc1_weight"], p["fc1_bias"])
    return [x + linear(f / (1 + np.exp(-1.702 * f)), p["fc2_weight"], p["fc2_bias"]), w]


def tv_basicblock(p):
    s = p["s"]

    def bn(t):
        return batch_norm(t, s[0], np.abs(s[1]) + 0.5, s[2], s[3])

    relu = lambda t: np.maximum(t, 0)  # noqa: E731
    y = relu(bn(conv2d(relu(bn(conv2d(p["x"], p["c1"], stride=2, padding=1))), p["c2"], padding=1)) +
             bn(conv2d(p["x"], p["dd"], stride=2)))
    return [y, relu(bn(conv2d(relu(bn(conv2d(y, p["c3"], padding=1))), p["c4"], padding=1)) + y)]


def group_norm(x, groups, w, b, eps):
    g = x.reshape(x.shape[0], groups, -1)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    return g.reshape(x.shape) * w[None, :, None, None] + b[None, :, None, None]


def bert_encoder(p):
    x = p["x"]
    q, k, v = (heads(linear(x, p[n + "_weight"], p[n + "_bias"]), 4) for n in "qkv")
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    s = np.where(p["mask"][:, None, None, :] == 0, -np.inf, s)
    x = layer_norm(x + linear(merge(softmax(s) @ v), p["o_weight"], p["o_bias"]), p["ln1_weight"], p["ln1_bias"],
                   1e-12)
    f = linear(gelu(linear(x, p["ff1_weight"], p["ff1_bias"])), p["ff2_weight"], p["ff2_bias"])
    return [layer_norm(x + f, p["ln2_weight"], p["ln2_bias"], 1e-12)]


def unet_block(p):
    def block(x, pre, nin):
        h = conv2d(silu(group_norm(x, 4, p[pre + "_norm1_weight"], p[pre + "_norm1_bias"], 1e-6)),
                   p[pre + "_conv1_weight"], p[pre + "_conv1_bias"], padding=1)
        h = h + linear(silu(p["temb"]), p[pre + "_temb_weight"], p[pre + "_temb_bias"])[:, :, None, None]
        h = conv2d(silu(group_norm(h, 4, p[pre + "_norm2_weight"], p[pre + "_norm2_bias"], 1e-6)),
                   p[pre + "_conv2_weight"], p[pre + "_conv2_bias"], padding=1)
        return (conv2d(x, p[pre + "_nin_weight"], p[pre + "_nin_bias"]) if nin else x) + h

    h1 = block(p["x"], "d", True)
    h = block(conv2d(h1, p["down_weight"], p["down_bias"], stride=2, padding=1), "m", False)
    h = conv2d(h.repeat(2, axis=2).repeat(2, axis=3), p["up_weight"], p["up_bias"], padding=1)
    return [block(np.concatenate([h, h1], axis=1), "u", True)]


def mobilenet_ir(p):
    def bn(t, s):
        return batch_norm(t, s[0], np.abs(s[1]) + 0.5, s[2], s[3])

    def block(x, pre, stride, sh, so):
        h = np.clip(bn(conv2d(x, p[pre + "_expand"]), sh), 0, 6)
        h = np.clip(bn(conv2d(h, p[pre + "_dw"], stride=stride, padding=1, groups=h.shape[1]), sh), 0, 6)
        return bn(conv2d(h, p[pre + "_project"]), so)

    y = block(p["x"], "a", 2, p["s96"], p["s24"])
    return [y, y + block(y, "b", 1, p["s144"], p["s24"])]


def whisper_stem(p):
    def conv1d_padded(x, w, b, stride):
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))[:, :, None, :]
        return conv2d(xp, w[:, :, None, :], b, stride=stride)[:, :, 0, :]

    x = gelu(conv1d_padded(p["mel"], p["conv1_weight"], p["conv1_bias"], 1))
    x = gelu(conv1d_padded(x, p["conv2_weight"], p["conv2_bias"], 2)).transpose(0, 2, 1)
    t, c = x.shape[1:]
    st = np.arange(t)[:, None] * np.exp(-math.log(10000) / (c // 2 - 1) * np.arange(c // 2))[None, :]
    x = x + np.concatenate([np.sin(st), np.cos(st)], axis=1)
    h = layer_norm(x, p["attn_ln_weight"], p["attn_ln_bias"])
    w3, b3 = np.split(p["in_proj_weight"], 3), np.split(p["in_proj_bias"], 3)
    q, k, v = (heads(linear(h, w, b), 4) for w, b in zip(w3, b3))
    x = x + linear(merge(attention(q, k, v)), p["out_proj_weight"], p["out_proj_bias"])
    h = layer_norm(x, p["mlp_ln_weight"], p["mlp_ln_bias"])
    x = x + linear(gelu(linear(h, p["fc1_weight"], p["fc1_bias"])), p["fc2_weight"], p["fc2_bias"])
    return [layer_norm(x, p["ln_post_weight"], p["ln_post_bias"])]


def fan_in(rng, shape):
    """A conv weight as PyTorch initialises one (scale 1 / sqrt(fan-in)), so the UNet's activations stay O(1)."""
    return (rng.standard_normal(shape) / math.sqrt(np.prod(shape[1:]))).astype(np.float32)


def padding_mask(rng, shape):
    m = np.ones(shape, np.float32)
    m[0, -3:] = 0
    m[1, -1:] = 0
    return m


def tril_mask(rng, shape):
    return np.tril(np.ones(shape[-2:], np.float32))[None, None]


def token_ids(rng, shape):
    return rng.integers(0, 64, shape).astype(np.int64)


def targets_ignoring(rng, shape):
    t = token_ids(rng, shape)
    t[0, 3] = -1  # cross_entropy's ignore_index
    return t


def freqs_cis(rng, shape):
    """LLaMA's precompute_freqs_cis: torch.polar(ones, outer(t, freqs)), complex64 [end, dim / 2]."""
    end, half = shape
    freqs = 1.0 / (10000.0 ** (np.arange(0, 2 * half, 2)[:half] / (2 * half)))
    return np.exp(1j * np.outer(np.arange(end), freqs)).astype(np.complex64)


MODELS_TABLE = [
    ("nanogpt_block.tdsl", "nanogpt_block", nanogpt, {"bias": tril_mask}),
    ("llama2_layer.tdsl", "llama2_layer", llama2, {"cache_k": lambda r, s: np.zeros(s, np.float32),
                                                   "cache_v": lambda r, s: np.zeros(s, np.float32),
                                                   "freqs_cis": freqs_cis}),
    ("mixtral_moe.tdsl", "mixtral_moe", mixtral, {}),
    ("vit_block.tdsl", "vit_block", vit, {}),
    ("resnet_blocks.tdsl", "resnet_blocks", resnet, {}),
    ("whisper_block.tdsl", "whisper_block", whisper, {}),
    ("mamba_block.tdsl", "mamba_block", mamba, {"A_log": lambda r, s: (r.random(s) - 0.5).astype(np.float32)}),
    ("dit_block.tdsl", "dit_block", dit, {}),
    ("convnext_block.tdsl", "convnext_block", convnext, {}),
    ("bert_layer.tdsl", "bert", bert, {}),
    ("gptneox_layer.tdsl", "gptneox_layer", gptneox, {}),
    ("t5_layer.tdsl", "t5_layer", t5, {}),
    ("gpt2_block.tdsl", "gpt2", gpt2, {}),
    ("hf_llama_layer.tdsl", "hf_llama_layer", hf_llama, {}),
    ("clip_layer.tdsl", "clip_layer", clip, {}),
    ("nanogpt_model.tdsl", "gpt", nanogpt_model, {"idx": token_ids, "targets": targets_ignoring}),
    ("torchvision_basicblock.tdsl", "tv_basic_block", tv_basicblock, {}),
    ("bert_encoder.tdsl", "bert_encoder", bert_encoder, {"mask": padding_mask}),
    ("unet_block.tdsl", "unet_block", unet_block, {f"{b}_conv{i}_weight": fan_in for b in "dmu" for i in (1, 2)}),
    ("mobilenet_ir.tdsl", "mobilenet_ir", mobilenet_ir, {}),
    ("whisper_stem.tdsl", "whisper_stem", whisper_stem, {}),
]


def entry_params(src, fn):
    """The parameters of fn in src: [(name, shape)] (all f32 here, but LLaMA's c64 freqs_cis and nanoGPT's i64
    token ids)."""
    m = re.search(r"\nfn " + fn + r"\((.*?)\)\s*->", src, re.S)
    params = []
    for mut, name, dims in re.findall(r"(mut\s+)?(\w+): (?:f32|c64|i64)\[([^\]]*)\]", m.group(1)):
        params.append((name, tuple(int(d) for d in dims.split(","))))
    return params


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for i, (file, fn, model, special) in enumerate(MODELS_TABLE):
        if i % test_subset():  # the sanitizer pass: a subset (each model keeps its seed)
            continue
        with open(os.path.join(MODELS, file), encoding="utf-8") as f:
            src = f.read()
        rng = np.random.default_rng(100 + i)
        inputs = {}
        for name, shape in entry_params(src, fn):
            make = special.get(name, lambda r, s: (r.standard_normal(s) * 0.5).astype(np.float32))
            inputs[name] = make(rng, shape)
        p, _, out_dir = tdslc_run(tdslc, src, args=["--fn", fn], name=fn, inputs=inputs, json_out=False,
                                  timeout=600)
        errs = []
        if p.returncode != 0:
            errs.append(f"exit {p.returncode}: {p.stderr.decode(errors='replace')[:800]}")
        else:
            outs = load_outputs(out_dir)
            want = model({k: v.astype(np.complex128 if np.iscomplexobj(v) else np.float64) for k, v in inputs.items()})
            if len(outs) != len(want):
                errs.append(f"{len(outs)} outputs, want {len(want)}")
            for k, (g, w) in enumerate(zip(outs, want)):
                if g.shape != w.shape:
                    errs.append(f"out{k}: shape {g.shape}, want {w.shape}")
                    continue
                err = np.abs(g.astype(np.float64) - w) / (1 + np.abs(w))
                if not np.isfinite(g).all() or err.max() > RTOL["f32"]:
                    j = np.unravel_index(np.nanargmax(err), err.shape)
                    errs.append(f"out{k} at {j}: got {g[j]}, want {w[j]} (relative error {err.max():.3g})")
        run_cleanup(out_dir)
        if os.environ.get("TDSL_BACKEND", "llvm") == "llvm":  # once, not per backend: its GPU code
            errs += gpu_emit_errors(tdslc, src, ["--fn", fn], timeout=600)
        t.report(f"{file} ({fn})", errs)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
