"""tests/run/attn_cases.py: F.scaled_dot_product_attention as op cases (op_cases.Case) of
test_ops.py's all_cases(), so that test_ops runs its fused kernel (ir/attn.c) on both CPU
backends, test_gpu_run on a GPU, and test_cuda_compile and test_ptx_compile compile it:
every float dtype, with bool, float and causal masks, transposed, stepped and expanded
operands, and (f32) rows long enough to fill a GPU block. test_sdpa.py checks the
semantics more closely."""
import zlib

import numpy as np

from op_cases import Case
from oracle import FLOAT_DTYPES
from test_sdpa import sdpa


def attention_cases():
    cases = []
    a = "F.scaled_dot_product_attention"
    for dt in FLOAT_DTYPES:
        c = Case(f"attention_{dt}")
        rng = np.random.default_rng(zlib.crc32(c.name.encode()))
        q, vq = c.param(dt, [2, 3, 5, 8], "c", rng)
        k, vk = c.param(dt, [2, 3, 7, 8], "s", rng)
        v, vv = c.param(dt, [3, 7, 6], "t", rng)
        kx, vkx = c.param(dt, [2, 3, 7, 8], "e", rng)
        bm, vbm = c.param("bool", [5, 7], "c", rng)
        fm, vfm = c.param(dt, [2, 1, 5, 7], "c", rng)
        n = 7 * 8
        c.out(f"{a}({q}, {k}, {v})", dt, sdpa(vq, vk, vv), "red", n)
        c.out(f"{a}({q}, {kx}, {v}, {bm})", dt, sdpa(vq, vkx, vv, vbm), "red", n)
        c.out(f"{a}({q}, {k}, {v}, attn_mask={fm}, scale=0.5)", dt, sdpa(vq, vk, vv, vfm, scale=0.5), "red", n)
        c.out(f"{a}({q}, {k}, {v}, is_causal=True)", dt, sdpa(vq, vk, vv, causal=True), "red", n)
        if dt == "f32":
            ql, vql = c.param(dt, [2, 4, 33, 64], "c", rng)
            kl, vkl = c.param(dt, [2, 4, 40, 64], "c", rng)
            vl, vvl = c.param(dt, [2, 4, 40, 48], "c", rng)
            c.out(f"{a}({ql}, {kl}, {vl}, is_causal=True)", dt, sdpa(vql, vkl, vvl, causal=True), "red", 40 * 64)
        cases.append(c)
    return cases
