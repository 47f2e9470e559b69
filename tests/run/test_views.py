#!/usr/bin/python3
"""tests/run/test_views.py TDSLC: every case of view_cases.py through `tdslc run --json`.

For each output it checks (1) shape, strides, offset and storage against PyTorch's
numbers recorded in views_expected.json, (2) the data against the NumPy oracle
expression evaluated on the generated inputs, and (3) that the reported strides and
offset really address those values: np.lib.stride_tricks.as_strided over the input's
storage with them gives the oracle too.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, as_float_view, json_values, require_backend, run_cleanup, same_values,  # noqa: E402
                    tdslc_run, test_subset)
from view_cases import CASES  # noqa: E402


def check_case(tdslc, expected, name, src, np_exprs):
    p, doc, out_dir = tdslc_run(tdslc, src, args=["--fn", "f"], name=name)
    try:
        return check_outputs(p, doc, out_dir, expected, np_exprs)
    finally:
        run_cleanup(out_dir)


def check_outputs(p, doc, out_dir, expected, np_exprs):
    if p.returncode != 0:
        return [f"exit {p.returncode}: {p.stderr.decode()}"]
    errs = []
    inputs = {f[3:-4]: np.load(os.path.join(out_dir, f)) for f in os.listdir(out_dir) if f.startswith("in_")}
    env = {"np": np, **inputs}
    outs = doc["outputs"]
    if len(outs) != len(np_exprs):
        return [f"{len(outs)} outputs, expected {len(np_exprs)}"]
    for k, (out, want_meta, expr) in enumerate(zip(outs, expected, np_exprs)):
        for key in ("shape", "strides", "offset", "storage"):
            if out[key] != want_meta[key]:
                errs.append(f"out{k} {key}: got {out[key]}, PyTorch {want_meta[key]}")
        want = np.asarray(eval(expr, env))
        got = json_values(out["data"], out["dtype"]).reshape(want.shape)
        if not same_values(got, as_float_view(want, out["dtype"])):
            errs.append(f"out{k} data: got {got.tolist()}, NumPy {want.tolist()}")
        base = inputs[out["storage"].split(":")[1]].reshape(-1)
        if out["shape"] and 0 not in out["shape"]:
            item = base.itemsize
            strided = np.lib.stride_tricks.as_strided(base[out["offset"]:] if min(out["strides"]) >= 0 else base,
                                                      out["shape"], [s * item for s in out["strides"]])
            if min(out["strides"]) < 0:  # negative strides: address element by element
                idx = np.indices(out["shape"]).reshape(len(out["shape"]), -1)
                flat = out["offset"] + sum(i * s for i, s in zip(idx, out["strides"]))
                strided = base[flat].reshape(out["shape"])
            if not same_values(as_float_view(np.array(strided), out["dtype"]), as_float_view(want, out["dtype"])):
                errs.append(f"out{k}: strides/offset do not address the oracle's values")
        saved = np.load(os.path.join(out_dir, f"out{k}.npy"))
        if not same_values(as_float_view(saved, out["dtype"]), as_float_view(want, out["dtype"])):
            errs.append(f"out{k}.npy differs from the oracle")
    return errs


def main():
    tdslc = os.path.abspath(sys.argv[1])
    require_backend(tdslc)
    with open(os.path.join(HERE, "views_expected.json")) as f:
        expected = json.load(f)
    tally = Tally()
    for name, src, np_exprs, _ in CASES[::test_subset()]:  # the sanitizer pass: a subset
        tally.report(name, check_case(tdslc, expected[name], name, src, np_exprs))
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
