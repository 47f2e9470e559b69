#!/usr/bin/python3
"""tests/run/test_shape_copies.py TDSLC: the copies PyTorch defines by views of the input
(ir/build_shape.c) — pixel_shuffle and pixel_unshuffle (torch.NAME, F.NAME, keyword
factors), of 0 to 3 batch dims, each dtype, a non-contiguous input, a factor of 1 (a
view of the input, as PyTorch's composite reshape-permute-reshape gives), and the
located error of a view that would pass 8 dims. Compared with NumPy's reshape and
transpose, element for element; storage from tdslc's --json (input:x or new).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, from_npy, rand_values, require_backend, run_outputs, tdslc_run, to_npy  # noqa: E402

RNG = np.random.default_rng(29)


def shuffle(x, r):
    """[*, C r r, H, W] -> [*, C, H r, W r] (PyTorch's documented meaning)."""
    *b, c, h, w = x.shape
    k = len(b)
    y = x.reshape(*b, c // (r * r), r, r, h, w)
    return y.transpose(*range(k), k, k + 3, k + 1, k + 4, k + 2).reshape(*b, c // (r * r), h * r, w * r)


def unshuffle(x, r):
    """[*, C, H, W] -> [*, C r r, H / r, W / r]."""
    *b, c, h, w = x.shape
    k = len(b)
    y = x.reshape(*b, c, h // r, r, w // r, r)
    return y.transpose(*range(k), k, k + 2, k + 4, k + 1, k + 3).reshape(*b, c * r * r, h // r, w // r)


def ty(dt, shape):
    return f"{dt}[{', '.join(str(s) for s in shape)}]"


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    for dt in ("f32", "f64", "f16", "bf16", "i64", "i32", "u8", "bool"):
        for batch in ((), (2,), (2, 1), (2, 1, 3)):
            x = rand_values(RNG, dt, batch + (8, 6, 4))
            xv = x  # the values (bf16: as f32)
            exprs = ["F.pixel_shuffle(x, 2)", "torch.pixel_unshuffle(x, downscale_factor=2)",
                     "F.pixel_unshuffle(x.transpose(-1, -2), 2)", "torch.pixel_shuffle(x[..., :4, :, :], upscale_factor=2)"]
            want = [shuffle(xv, 2), unshuffle(xv, 2), unshuffle(np.swapaxes(xv, -1, -2), 2), shuffle(xv[..., :4, :, :], 2)]
            src = (f"fn f(x: {ty(dt, x.shape)}) -> ({', '.join(ty(dt, w.shape) for w in want)}) {{\n"
                   f"    return {', '.join(exprs)}\n}}\n")
            p, outs = run_outputs(tdslc, src, {"x": to_npy(x, dt)})
            errs = [] if p.returncode == 0 else [f"exit {p.returncode}: {p.stderr.decode(errors='replace')[:400]}"]
            for e, got, w in zip(exprs, outs, want):
                g = from_npy(got, dt)
                if g.shape != w.shape or not np.array_equal(g, w):
                    errs.append(f"{e}: shape {g.shape} want {w.shape}")
            t.report(f"pixel_shuffle {dt} batch {batch}", errs, src)
    # a factor of 1: the input itself, viewed (storage input:x); of 2 a new tensor
    x = rand_values(RNG, "f32", (2, 8, 3, 5))
    src = "fn f(x: f32[2, 8, 3, 5]) -> (f32[2, 8, 3, 5], f32[2, 2, 6, 10]) {\n" \
          "    return F.pixel_shuffle(x, 1), F.pixel_shuffle(x, 2)\n}\n"
    p, doc, _ = tdslc_run(tdslc, src, inputs={"x": x})
    storage = [o["storage"] for o in doc["outputs"]] if doc else None
    t.check("pixel_shuffle by 1 is a view of the input, by 2 a copy", storage == ["input:x", "new"],
            f"{storage} {p.stderr.decode(errors='replace')[:300]}")
    # 4 batch dims: the split view has 9 dims, refused at the call (PyTorch has no such limit)
    src = "fn f(x: f32[1, 1, 1, 1, 4, 2, 2]) -> f32[1, 1, 1, 1, 1, 4, 4] {\n" \
          "    return F.pixel_shuffle(x, 2)\n}\n"
    p, _, _ = tdslc_run(tdslc, src, inputs={})
    err = p.stderr.decode(errors="replace")
    t.check("pixel_shuffle past 8 dims: a located error", p.returncode == 1 and ":2:" in err and "error:" in err, err[:300])
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
