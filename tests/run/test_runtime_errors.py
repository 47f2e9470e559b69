#!/usr/bin/python3
"""tests/run/test_runtime_errors.py TDSLC: errors in the data, found while running (§9).

An index out of range (x[idx], index_select, gather) and integer // or % by zero exit
with status 3 and one line `FILE:line:col: error: MSG` located at the op that raised
it (PyTorch's message), never with a signal; float division by zero is not an error
(inf and nan, as in PyTorch) and INT_MIN // -1 wraps. Bad input files still exit 2.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and
exits 77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import re
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, compare, count_errors, json_values, require_backend, tdslc_run_clean  # noqa: E402

TDSLC = os.path.abspath(sys.argv[1])
BACKEND = require_backend(TDSLC)  # exits 77 when TDSL_BACKEND names a backend tdslc lacks
TMP = tempfile.mkdtemp(prefix="tdsl-rterr-")
T = Tally()


def run(name, src, inputs, extra=()):
    """Runs src with inputs {param: array}; returns (process, JSON document or None)."""
    return tdslc_run_clean(TDSLC, src, args=extra, name=name, inputs=inputs)


def expect_error(name, src, inputs, msg, at, extra=()):
    """msg: the message (a regex when it is a re.Pattern); at: the text of the op on its
    line: the reported line must be that line and the column inside that text."""
    p, _ = run(name, src, inputs, extra)
    err = p.stderr.decode(errors="replace")
    errs = []
    if p.returncode != 3:
        errs.append(f"exit {p.returncode}, want 3" + (" (killed by a signal)" if p.returncode < 0 else ""))
    lines = src.split("\n")
    line_no = next(i + 1 for i, ln in enumerate(lines) if at in ln)
    start = lines[line_no - 1].index(at) + 1
    m = re.search(r"^(\S+?):(\d+):(\d+): error: (.*)$", err, re.M)
    if not m:
        errs.append("no 'FILE:line:col: error: MSG' line on stderr")
    else:
        path, line, col, text = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if not path.endswith(name + ".tdsl"):
            errs.append(f"file {path}, want the program's path")
        if line != line_no or not start <= col < start + len(at):
            errs.append(f"at {line}:{col}, want line {line_no}, column {start}..{start + len(at) - 1} ('{at}')")
        ok = msg.fullmatch(text) if isinstance(msg, re.Pattern) else text == msg
        if not ok:
            errs.append(f"message {text!r}, want {msg.pattern if isinstance(msg, re.Pattern) else msg!r}")
    if errs:
        errs.append("stderr:\n" + err.strip()[:1500])
    T.report(name, errs)


def expect_values(name, src, inputs, wants):
    p, doc = run(name, src, inputs)
    errs = []
    if p.returncode != 0:
        errs.append(f"exit {p.returncode}, want 0: {p.stderr.decode(errors='replace').strip()[:800]}")
    else:
        errs += count_errors(doc["outputs"], wants)
        for k, (o, (dt, want)) in enumerate(zip(doc["outputs"], wants)):
            want = np.asarray(want)
            got = json_values(o["data"], o["dtype"]).reshape(want.shape)
            r = compare(got, want, dt, "exact" if dt in ("i32", "i64") else "elem")
            if o["dtype"] != dt or r:
                errs.append(f"out{k} ({o['dtype']}): {r or 'dtype'}")
    T.report(name, errs)


def expect_exit2(name, src, inputs, pattern):
    p, _ = run(name, src, inputs)
    err = p.stderr.decode(errors="replace")
    errs = []
    if p.returncode != 2:
        errs.append(f"exit {p.returncode}, want 2")
    if not re.search(pattern, err):
        errs.append(f"stderr does not match {pattern!r}:\n{err.strip()[:800]}")
    T.report(name, errs)


def oob(i, dim, size):
    return f"index {i} is out of bounds for dimension {dim} with size {size}"


def main():
    x34 = np.arange(12, dtype=np.float32).reshape(3, 4)
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731

    # --- x[idx]: advanced indexing ---
    src = "fn f(x: f32[3, 4], i: i64[2]) -> f32[2, 4] {\n    return x[i]\n}"
    expect_error("index_past_end", src, {"x": x34, "i": i64(0, 5)}, oob(5, 0, 3), "x[i]")
    expect_error("index_negative_past_start", src, {"x": x34, "i": i64(-4, 1)}, oob(-4, 0, 3), "x[i]")
    expect_error("index_just_past_end", src, {"x": x34, "i": i64(2, 3)}, oob(3, 0, 3), "x[i]")
    expect_values("index_edges_in_range", src, {"x": x34, "i": i64(2, -3)}, [("f32", x34[[2, -3]])])
    src = "fn f(x: f32[3, 4], i: i64[2], j: i64[2]) -> f32[2] {\n    return x[i, j]\n}"
    expect_error("index_second_dim", src, {"x": x34, "i": i64(1, 2), "j": i64(0, 9)}, oob(9, 1, 4), "x[i, j]")
    # PyTorch's own wording for a slice before the index tensor names dimension 0
    src = "fn f(x: f32[3, 4], j: i64[2]) -> f32[3, 2] {\n    return x[:, j]\n}"
    expect_error("index_after_slice", src, {"x": x34, "j": i64(7, 0)}, oob(7, 0, 4), "x[:, j]")
    # the error is raised where the gather is, inside a longer program
    src = ("fn f(x: f32[3, 4], i: i64[2]) -> (f32[4], f32[]) {\n    a = x * 2\n    j = i + 1\n"
           "    g = a[j]\n    return a.sum(0), (g * 3).sum()\n}")
    expect_error("index_in_fused_chain", src, {"x": x34, "i": i64(0, 2)}, oob(3, 0, 3), "a[j]")

    # --- index_select: PyTorch's CPU text is "index out of range in self" ---
    sel = re.compile(r"index out of range in self|index 5 is out of bounds for dimension 0 with size 3")
    src = "fn f(x: f32[3, 4], i: i64[2]) -> f32[2, 4] {\n    return index_select(x, 0, i)\n}"
    expect_error("index_select_i64", src, {"x": x34, "i": i64(1, 5)}, sel, "index_select(x, 0, i)")
    src = "fn f(x: f32[4, 3], i: i32[2]) -> f32[4, 2] {\n    return x.index_select(1, i)\n}"
    expect_error("index_select_i32_dim1", src, {"x": x34.reshape(4, 3), "i": np.array([5, 0], dtype=np.int32)},
                 re.compile(r"index out of range in self|index 5 is out of bounds for dimension 1 with size 3"),
                 "x.index_select(1, i)")
    src = "fn f(x: f32[3, 4], i: i64[2]) -> f32[2, 4] {\n    return index_select(x, 0, i)\n}"
    expect_error("index_select_negative", src, {"x": x34, "i": i64(-1, 0)},
                 re.compile(r"index out of range in self|index -1 is out of bounds for dimension 0 with size 3"),
                 "index_select(x, 0, i)")

    # --- gather ---
    src = "fn f(x: f32[3, 4], i: i64[1, 2]) -> f32[1, 2] {\n    return gather(x, 0, i)\n}"
    expect_error("gather_dim0", src, {"x": x34, "i": i64([0, 5])}, oob(5, 0, 3), "gather(x, 0, i)")
    src = "fn f(x: f32[3, 4], i: i64[2, 1]) -> f32[2, 1] {\n    y = x.t()\n    return y.gather(1, i) + 1\n}"
    expect_error("gather_dim1_negative", src, {"x": x34, "i": i64([0], [-1])}, oob(-1, 1, 3), "y.gather(1, i)")

    # --- integer division and modulo by zero ---
    for dt, npdt in (("i32", np.int32), ("i64", np.int64)):
        a = np.array([7, -7, 3], dtype=npdt)
        b = np.array([2, 0, 1], dtype=npdt)
        src = f"fn f(a: {dt}[3], b: {dt}[3]) -> {dt}[3] {{\n    return a // b\n}}"
        expect_error(f"floor_divide_by_zero_{dt}", src, {"a": a, "b": b}, "ZeroDivisionError", "a // b")
        src = f"fn f(a: {dt}[3], b: {dt}[3]) -> {dt}[3] {{\n    return a % b\n}}"
        expect_error(f"remainder_by_zero_{dt}", src, {"a": a, "b": b}, "ZeroDivisionError", "a % b")
    src = ("fn f(a: i32[2, 3], b: i32[3]) -> (i32[2, 3], i32[2, 3]) {\n    c = a + 1\n"
           "    d = c.t().t() * 2\n    return c, d % b.abs()\n}")
    expect_error("remainder_by_zero_broadcast", src,
                 {"a": np.ones((2, 3), np.int32), "b": np.array([1, 0, 2], np.int32)}, "ZeroDivisionError", "d % b.abs()")
    src = "fn f(a: i64[3], b: i64[]) -> i64[3] {\n    return a // b\n}"
    expect_error("floor_divide_by_zero_0d", src, {"a": np.array([1, 2, 3], np.int64), "b": np.array(0, np.int64)},
                 "ZeroDivisionError", "a // b")

    # --- not errors: float division by zero, INT_MIN // -1 wraps ---
    src = ("fn f(a: f32[4], b: f32[4]) -> (f32[4], f32[4], f32[4]) {\n    return a / b, a // b, a % b\n}")
    fa = np.array([1.0, -1.0, 0.0, 2.5], np.float32)
    fb = np.zeros(4, np.float32)
    with np.errstate(all="ignore"):
        expect_values("float_division_by_zero", src, {"a": fa, "b": fb},
                      [("f32", fa / fb), ("f32", np.floor_divide(fa, fb)), ("f32", np.full(4, np.nan, np.float32))])
    src = "fn f(a: i32[2], b: i32[2]) -> (i32[2], i32[2]) {\n    return a // b, a % b\n}"
    imin = np.array([-2 ** 31, -2 ** 31], np.int32)
    expect_values("int_min_floor_divide_wraps", src, {"a": imin, "b": np.array([-1, 1], np.int32)},
                  [("i32", np.array([-2 ** 31, -2 ** 31], np.int32)), ("i32", np.array([0, 0], np.int32))])
    src = "fn f(a: i64[1], b: i64[1]) -> i64[1] {\n    return a // b\n}"
    expect_values("int64_min_floor_divide_wraps", src,
                  {"a": np.array([-2 ** 63], np.int64), "b": np.array([-1], np.int64)},
                  [("i64", np.array([-2 ** 63], np.int64))])

    # --- bad inputs are still exit 2, also for programs that run kernels ---
    src = "fn f(x: f32[3, 4], i: i64[2]) -> f32[2, 4] {\n    return x[i] * 2\n}"
    expect_exit2("bad_input_dtype", src, {"x": x34, "i": np.array([0, 1], np.int32)}, r"\bi\b.*(i64.*i32|i32.*i64)")
    expect_exit2("bad_input_shape", src, {"x": x34, "i": i64(0, 1, 2)}, r"'i'")
    d = os.path.join(TMP, "trunc")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), x34)
    with open(os.path.join(d, "x.npy"), "rb") as f:
        data = f.read()
    with open(os.path.join(d, "x_trunc.npy"), "wb") as f:
        f.write(data[:-8])
    p, _ = tdslc_run_clean(TDSLC, src, args=["--in", f"x={os.path.join(d, 'x_trunc.npy')}"], name="bad_input_truncated")
    T.report("bad_input_truncated", [] if p.returncode == 2 else [f"exit {p.returncode}, want 2"])
    p, _ = tdslc_run_clean(TDSLC, src, args=["--in", f"x={os.path.join(d, 'missing.npy')}"], name="bad_input_missing")
    T.report("bad_input_missing", [] if p.returncode == 2 else [f"exit {p.returncode}, want 2"])

    shutil.rmtree(TMP, ignore_errors=True)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
