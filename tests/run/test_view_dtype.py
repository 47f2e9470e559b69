#!/usr/bin/python3
"""tests/run/test_view_dtype.py TDSLC: x.view(dtype), every pair of the dtypes tdsl has, as
PyTorch 1.13 allows it: of the same width the same bits; of another width the last dim's
bytes regrouped (its size scaled by the widths' ratio), through a view of the input
(offset, strided rows) too. The oracle is NumPy's view of the same bytes (little-endian,
bf16 as its uint16 bits); a byte viewed as bool is compared as `byte != 0` (tdsl's bool
is 0 or 1; PyTorch keeps the byte, which reads as true). Then PyTorch's checks: its
messages for a 0-d input, a last dim not of stride 1, a size, offset or stride not
divisible (the words PyTorch 1.13 raises, written out here).

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, run_outputs  # noqa: E402

# tdsl name, torch spelling, NumPy dtype of its bytes (bf16: its bits), width
DTYPES = [("bool", "torch.bool", np.bool_, 1), ("u8", "torch.uint8", np.uint8, 1), ("i8", "torch.int8", np.int8, 1),
          ("i16", "torch.int16", np.int16, 2), ("f16", "torch.float16", np.float16, 2),
          ("bf16", "torch.bfloat16", np.uint16, 2), ("i32", "torch.int32", np.int32, 4),
          ("f32", "torch.float32", np.float32, 4), ("i64", "torch.int64", np.int64, 8),
          ("f64", "torch.float64", np.float64, 8)]
ROWS, COLS = 3, 8  # a row: COLS elements of 8 bytes


def raw_bytes(rng, nbytes):
    """Random bytes that hold no NaN in any float dtype: each 2-byte word's high byte has
    bit 6 clear, so no f16, bf16, f32 or f64 exponent is all ones (a NaN's payload is not
    kept: tdsl holds halves in f32 registers). Zeros, ones and sign bits are common."""
    b = rng.integers(0, 256, nbytes, dtype=np.uint8)
    b[1::2] &= 0xBF
    b[rng.random(nbytes) < 0.15] = 0
    return b


def as_input(b, dt, shape):
    """The bytes b as a tensor of dt and shape (bool: each byte's low bit)."""
    if dt[0] == "bool":
        return (b[:int(np.prod(shape))] & 1).astype(np.bool_).reshape(shape)
    return b[:int(np.prod(shape)) * dt[3]].view(dt[2]).reshape(shape)


def oracle(x, frm, to):
    """NumPy's view of x's bytes as `to` along the last dim; a byte as bool: != 0."""
    b = np.ascontiguousarray(x).view(np.uint8) if frm[0] != "bool" else x.astype(np.uint8)
    b = b.reshape(x.shape[:-1] + (-1,))
    if to[0] == "bool":
        return b != 0
    return b.view(to[2])


def same(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    return np.array_equal(got.view(np.uint8), want.view(np.uint8)) if got.dtype != np.bool_ else np.array_equal(got, want)


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    t = Tally()
    rng = np.random.default_rng(29)
    for frm in DTYPES:
        # x: [ROWS + 1, 64 bytes] of frm; the views are of x and of x[1:, 8 bytes:] (an
        # offset, a row stride wider than the row), both allowed for every target
        cols = COLS * 8 // frm[3]  # 64 bytes a row
        x = as_input(raw_bytes(rng, (ROWS + 1) * 64), frm, (ROWS + 1, cols))
        sub = x[1:, 8 // frm[3]:]
        rets, exprs, want = [], [], []
        for to in DTYPES:
            for src, val in (("x", x), (f"x[1:, {8 // frm[3]}:]", sub)):
                w = oracle(val, frm, to)
                rets.append(f"{to[0]}[{', '.join(str(d) for d in w.shape)}]")
                exprs.append(f"{src}.view({to[1]})")
                want.append(w)
        src = (f"fn f(x: {frm[0]}[{ROWS + 1}, {cols}]) -> ({', '.join(rets)}) {{\n"
               f"    return {', '.join(exprs)}\n}}\n")
        p, outs = run_outputs(tdslc, src, {"x": x})
        bad = [f"{e} -> {w.dtype}{list(w.shape)}: got {g.dtype}{list(g.shape)} {g.ravel()[:6]}, want {w.ravel()[:6]}"
               for e, g, w in zip(exprs, outs, want) if not same(g, w)]
        if p.returncode != 0 or len(outs) != len(want):
            bad.append(p.stderr.decode(errors="replace")[:600])
        t.check(f"{frm[0]}.view(every dtype)", not bad, "\n".join(bad[:6]))
    # chains through halves and bytes come back to the bits they started from
    x = raw_bytes(rng, 4 * 8 * 4).view(np.float32).reshape(4, 8)
    src = ("fn f(x: f32[4, 8]) -> (f32[4, 8], f32[4, 8], f64[4, 2], i64[8, 2]) {\n"
           "    return x.view(torch.float16).view(torch.bfloat16).view(torch.int16).view(torch.float32), "
           "x.view(torch.int8).view(torch.uint8).view(torch.float32), "
           "x.view(torch.float16)[:, 4:12].view(dtype=torch.float64), x.t().contiguous().view(torch.int64)\n}\n")
    p, outs = run_outputs(tdslc, src, {"x": x})
    want = [x, x, np.ascontiguousarray(x.view(np.float16)[:, 4:12]).view(np.float64),
            np.ascontiguousarray(x.T).view(np.int64)]
    ok = p.returncode == 0 and len(outs) == 4 and all(same(g, w) for g, w in zip(outs, want))
    t.check("chains of views through halves and bytes", ok, p.stderr.decode(errors="replace")[:400] or str(outs))
    # PyTorch 1.13's checks, in its order, with its words
    errors = [
        ("f32[3, 8]", "x[0, 0].view(torch.int8)", "self.dim() cannot be 0 to view Float as Char (different element sizes)"),
        ("f32[3, 8]", "x.t().view(torch.float64)",
         "self.size(-1) must be divisible by 2 to view Float as Double (different element sizes), but got 3"),
        ("f32[3, 8]", "x[:, 1:7].view(torch.float64)",
         "self.storage_offset() must be divisible by 2 to view Float as Double (different element sizes), but got 1"),
        ("f32[3, 8]", "x[:, ::2].view(torch.float16)",
         "self.stride(-1) must be 1 to view Float as Half (different element sizes), but got 2"),
        ("f64[3, 8]", "x.t().view(torch.float32)",
         "self.stride(-1) must be 1 to view Double as Float (different element sizes), but got 8"),
        ("f16[3, 4, 4]", "x.transpose(1, 2).view(torch.int64)",
         "self.stride(-1) must be 1 to view Half as Long (different element sizes), but got 4"),
        ("f16[24]", "x.as_strided((2, 4), (3, 1), 0).view(torch.int32)",
         "self.stride(0) must be divisible by 2 to view Half as Int (different element sizes), but got 3"),
        ("f32[2, 0]", "x.view(torch.float64)",
         "self.stride(0) must be divisible by 2 to view Float as Double (different element sizes), but got 1"),
        ("i8[3, 16]", "x[:, 2:10].view(torch.float32)",
         "self.storage_offset() must be divisible by 4 to view Char as Float (different element sizes), but got 2"),
        ("f32[3, 8]", "x.view(dtype=(4, 6))", "view(): argument 'dtype' must be torch.dtype, not tuple"),
    ]
    for ty, expr, msg in errors:
        p = emit_text(tdslc, f"fn f(x: {ty}) {{\n    y = {expr}\n}}\n", "ir")
        t.check(f"{expr} of {ty}: PyTorch's message", p.returncode == 1 and f"error: {msg}\n" in p.stderr, p.stderr[:400])
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
