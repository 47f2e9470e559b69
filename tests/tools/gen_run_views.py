#!/usr/bin/python3
"""tests/tools/gen_run_views.py: record PyTorch 1.13's shape, strides and storage offset
for every case of tests/run/view_cases.py in tests/run/views_expected.json.

Run once with Debian's python3-torch (`/usr/bin/python3 tests/tools/gen_run_views.py`)
and commit the JSON; the end-to-end test reads it and needs no PyTorch.
"""
import json
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "run"))
from view_cases import CASES  # noqa: E402

TORCH_DTYPES = {"bool": torch.bool, "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
                "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}


def params(src, fn="f"):
    """The (name, dtype, shape) of fn's parameters, with the case's consts substituted."""
    consts = {}
    for name, expr in re.findall(r"const (\w+) = ([^\n]+)", src):
        consts[name] = eval(expr, {}, dict(consts))
    sig = re.search(r"fn " + fn + r"\((.*?)\) ->", src, re.S).group(1)
    out = []
    for m in re.finditer(r"(?:mut )?(\w+): (\w+)\[([^\]]*)\]", sig):
        dims = [eval(d, {}, dict(consts)) for d in m.group(3).split(",") if d.strip()]
        out.append((m.group(1), m.group(2), dims))
    return out


def flip_view(shape, dims):
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * max(shape[i + 1], 1)
    offset = 0
    for d in dims:
        if shape[d] > 0:
            offset += (shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    return strides, offset


def main():
    table = {}
    for name, src, _np_exprs, torch_exprs in CASES:
        env = {"torch": torch}
        for pname, dt, shape in params(src):
            env[pname] = torch.zeros(shape, dtype=TORCH_DTYPES[dt])
        outs = []
        if torch_exprs is None:  # flip: zero-copy in tdsl, a copy in PyTorch
            (pname, _, shape), = params(src)
            dims = [int(d) for d in re.findall(r"-?\d+", src.split("flip(")[1].split(")")[0].replace("x, ", ""))]
            strides, offset = flip_view(shape, [d % len(shape) for d in dims])
            outs.append({"shape": shape, "strides": strides, "offset": offset, "storage": "input:" + pname})
        else:
            for e in torch_exprs:
                t = eval(e, env)
                base = [p for p, v in env.items() if isinstance(v, torch.Tensor) and v.storage().data_ptr() == t.storage().data_ptr()]
                outs.append({"shape": list(t.shape), "strides": list(t.stride()), "offset": t.storage_offset(),
                             "storage": "input:" + base[0] if base else "new"})
        table[name] = outs
    with open(os.path.join(HERE, "..", "run", "views_expected.json"), "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(table)} cases")


if __name__ == "__main__":
    main()
