#!/usr/bin/python3
"""tests/run/test_bandwidth.py TDSLC: the bandwidth-bound schedules end to end, against NumPy.

- Copies of permuted views (ir/ew.c's register blocks: vector loads, shuffles, vector
  stores, streamed past the caches when the result is large and its rows aligned) in
  every dtype, odd sizes and tails, rank 3 to 6 permutations, slices with steps and
  offsets, attention's head split and merge: bit for bit, NaN payloads included (the
  blocks move bits; the scalar tails of the same kernels convert f16/bf16 through f32,
  which keeps every value but may quiet a NaN's payload, so payloads are checked on
  shapes whose sizes are multiples of every block width); f16 and bf16 copies along
  unit strides (clone, head split) in vectors of their bits. Their results, and those of
  elementwise tiles (x.t() * 2), streamed whatever the LLC: marked so under Zen 3's L3.
- Which elementwise results the footprint rule streams (`--emit=kernels`), with Zen 3's
  32 MiB L3 and with the host's cache bounded by 32 MiB a CPU (ir/sched.c's usable_llc).
- Column reductions too tall for column blocks (ir/row.c's SPLIT: parts reduced in
  parallel, combined in order): exact for ints, bools, max/min/argmax/argmin, within
  the reduction tolerance for float sums, means, variances, products and logsumexp.
- Elementwise results large enough to be streamed (8 MiB here, TDSL_STREAM_MIN; the C
  backend's scalar loops in strips of a 64-byte line), in three dtypes, rows a multiple
  of a line and not; both store forms the runtime picks between (TDSL_STREAM_FORM=nt
  and =plain), each against NumPy and the two bit for bit. TDSL_STREAM_FORM of another
  value: one warning naming the valid values in a process of many calls of two sites;
  empty, nt or plain: none.
- Softmax and log_softmax of rows longer than a core's L2 (f32 and f16): NaN, inf, rows
  of -inf only, rows starting with 50000 -inf.
- Softmax results of 8.4 MiB and more (streamed: TDSL_STREAM_MIN is 8 MiB here):
  f32, f64, f16 and bf16, odd row lengths, rows read with a stride (of x.t()), rows with
  -inf, of -inf only (NaN, as PyTorch gives), with a NaN or a +inf (NaN), of one large
  value.
- Reductions and softmax over short rows (3 to 16 elements: unrolled, vectorized across
  rows): sums, means, variances, max, argmax with ties, logsumexp, softmax and
  log_softmax, over two dims at once, rows read with a stride, f16 and f64, rows of
  -inf, all -inf, NaN; in blocks of a vector of rows transposed through scratch: bf16,
  int sums, rows under kept outer dims with epilogues; log_softmax's looped rows with
  NaN, +inf, 1e30, rows of -inf only or half.
- Several softmaxes in one kernel, each keeping its terms in its result.
- Means and variances in one shifted pass: a large mean and a small spread, an outlier
  first, overflow, NaN; var, std, layer_norm, group_norm.

Runs on the backend named by TDSL_BACKEND (c or llvm), exits 77 when tdslc lacks it.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import (Tally, backend_args, bf16_bits_to_f32, compare, emit_text, env_backend,  # noqa: E402
                    f32_to_bf16_bits, require_backend, run_outputs, test_subset)

NP = {"bool": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64}
BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def rand(rng, dt, shape):
    """Values of dt (bf16: its bits) with a few NaNs of several payloads in the floats."""
    if dt == "bool":
        return rng.random(shape) < 0.5
    if dt in ("u8", "i8", "i16", "i32", "i64"):
        info = np.iinfo(NP[dt])
        return rng.integers(info.min, info.max, size=shape, dtype=NP[dt], endpoint=True)
    v = rng.standard_normal(shape).astype(np.float32)
    v = f32_to_bf16_bits(v) if dt == "bf16" else v.astype(NP[dt])
    flat = v.reshape(-1)
    nans = {"f16": [0x7e01, 0xfe33, 0x7c01], "bf16": [0x7fc1, 0xff81], "f32": [0x7fc00123, 0xffa00001],
            "f64": [0x7ff8000000000123, 0xfff0000000000001]}[dt]
    bits = flat.view(BITS[flat.itemsize])
    for k, b in enumerate(nans):
        bits[(k * 7919 + 13) % flat.size] = b
    return v


def same_bits(got, want):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    if got.shape != want.shape or got.dtype.itemsize != want.dtype.itemsize:
        return False
    return bool(np.array_equal(got.view(BITS[got.itemsize]), want.view(BITS[want.itemsize])))


def copy_cases():
    """(name, src, {param: array}, [NumPy results], payloads exact: of all, or a list of each)."""
    rng = np.random.default_rng(27)
    cases = []
    for dt in NP:
        for (r, c) in ((37, 70), (130, 257), (16, 16), (64, 96)):
            x = rand(rng, dt, (r, c))
            exact = r % 32 == 0 and c % 32 == 0  # only blocks, no scalar tail
            cases.append((f"t_{dt}_{r}x{c}", f"fn f(x: {dt}[{r}, {c}]) -> {dt}[{c}, {r}] {{\n"
                          f"  return x.t().contiguous()\n}}", {"x": x}, [x.T], exact))
    # results large enough to be streamed (9 MiB, rows of 64-byte multiples): the copy's
    # blocks, and the tiles of a transposed elementwise (values exact, NaN for NaN)
    x = rand(rng, "f32", (1152, 2048))
    with np.errstate(invalid="ignore"):  # (the signalling NaN)
        x2 = x.T * np.float32(2)
    cases.append(("t_f32_stream", "fn f(x: f32[1152, 2048]) -> (f32[2048, 1152], f32[2048, 1152]) {\n"
                  "  return x.t().contiguous(), x.t() * 2\n}", {"x": x}, [x.T, x2], [True, False]))
    x = rand(rng, "i8", (3, 37, 70))  # a view with an offset, sizes no multiple of a block
    cases.append(("view_offset", "fn f(x: i8[3, 37, 70]) -> i8[2, 67, 35] {\n"
                  "  return x[1:, 2:, 3:].permute(0, 2, 1).contiguous()\n}",
                  {"x": x}, [x[1:, 2:, 3:].transpose(0, 2, 1)], True))
    # copies along unit strides of 2-byte floats: vectors of their bits (payloads exact,
    # as the scalar f32 round trip would not keep a signalling NaN's), scalar tails
    x = rand(rng, "f16", (2, 3, 4, 64))
    cases.append(("f16_rows", "fn f(x: f16[2, 3, 4, 64]) -> (f16[2, 4, 3, 64], f16[2, 3, 4, 64]) {\n"
                  "  return x.permute(0, 2, 1, 3).contiguous(), x.clone()\n}",
                  {"x": x}, [x.transpose(0, 2, 1, 3), x], True))
    x = rand(rng, "bf16", (5, 7, 77))
    cases.append(("bf16_rows_tail", "fn f(x: bf16[5, 7, 77]) -> bf16[7, 5, 70] {\n"
                  "  return x[:, :, 3:73].transpose(0, 1).contiguous()\n}",
                  {"x": x}, [x[:, :, 3:73].transpose(1, 0, 2)], False))
    x = rand(rng, "f32", (70, 90))
    cases.append(("slices", "fn f(x: f32[70, 90]) -> (f32[30, 33], f32[40, 41]) {\n"
                  "  return x[3:69:2, 5:65:2].t().contiguous(), x[1:42, 2:42].t().contiguous()\n}",
                  {"x": x}, [x[3:69:2, 5:65:2].T, x[1:42, 2:42].T], False))
    x = rand(rng, "f64", (5, 33, 18))
    cases.append(("rank3", "fn f(x: f64[5, 33, 18]) -> (f64[18, 33, 5], f64[5, 18, 33], f64[33, 18, 5]) {\n"
                  "  return x.permute(2, 1, 0).contiguous(), x.transpose(1, 2).contiguous(), "
                  "x.permute(1, 2, 0).contiguous()\n}",
                  {"x": x}, [x.transpose(2, 1, 0), x.transpose(0, 2, 1), x.transpose(1, 2, 0)], False))
    x = rand(rng, "f16", (2, 3, 20, 17))
    cases.append(("rank4", "fn f(x: f16[2, 3, 20, 17]) -> f16[2, 17, 20, 3] {\n"
                  "  return x.permute(0, 3, 2, 1).contiguous()\n}", {"x": x}, [x.transpose(0, 3, 2, 1)], False))
    x = rand(rng, "i16", (2, 3, 2, 18, 17))
    cases.append(("rank5", "fn f(x: i16[2, 3, 2, 18, 17]) -> i16[2, 3, 17, 2, 18] {\n"
                  "  return x.permute(0, 1, 4, 2, 3).contiguous()\n}", {"x": x}, [x.transpose(0, 1, 4, 2, 3)], True))
    x = rand(rng, "bool", (2, 1, 3, 2, 33, 20))
    cases.append(("rank6", "fn f(x: bool[2, 1, 3, 2, 33, 20]) -> bool[2, 20, 3, 1, 2, 33] {\n"
                  "  return x.permute(0, 5, 2, 1, 3, 4).contiguous()\n}",
                  {"x": x}, [x.transpose(0, 5, 2, 1, 3, 4)], True))
    x = rand(rng, "bf16", (2, 24, 7, 33))
    cases.append(("nchw_nhwc", "fn f(x: bf16[2, 24, 7, 33]) -> bf16[2, 7, 33, 24] {\n"
                  "  return x.permute(0, 2, 3, 1).contiguous()\n}", {"x": x}, [x.transpose(0, 2, 3, 1)], False))
    x = rand(rng, "f32", (2, 20, 48))
    h = x.reshape(2, 20, 3, 16).transpose(0, 2, 1, 3)
    cases.append(("heads", "fn f(x: f32[2, 20, 48]) -> (f32[2, 3, 20, 16], f32[2, 20, 48]) {\n"
                  "  h = x.view(2, 20, 3, 16).transpose(1, 2).contiguous()\n"
                  "  return h, h.transpose(1, 2).contiguous().view(2, 20, 48)\n}",
                  {"x": x}, [h, x], True))
    return cases


def check_copies(tdslc, t):
    for name, src, inputs, wants, exact in copy_cases()[::test_subset()]:  # the sanitizer pass: a subset
        p, outs = run_outputs(tdslc, src, inputs)
        if p.returncode != 0 or len(outs) != len(wants):
            t.report(name, [p.stderr.decode()[-400:]])
            continue
        for k, (got, want) in enumerate(zip(outs, wants)):
            want = np.ascontiguousarray(want)
            if exact if isinstance(exact, bool) else exact[k]:
                ok = same_bits(got, want)
            elif want.dtype.kind == "f":  # values exact, NaN for NaN
                ok = got.shape == want.shape and bool(np.all((got == want) | (np.isnan(got) & np.isnan(want))))
            elif name.startswith(("t_bf16", "nchw", "bf16")):  # bf16 bits: NaN bits stay NaN bits
                g, w = got.astype(np.uint32) << 16, want.astype(np.uint32) << 16
                gf, wf = g.view(np.float32), w.view(np.float32)
                ok = got.shape == want.shape and bool(np.all((gf == wf) | (np.isnan(gf) & np.isnan(wf))))
            else:
                ok = same_bits(got, want)
            t.check(f"{name} out{k}", ok, "" if ok else f"got {got.reshape(-1)[:8]}, want {want.reshape(-1)[:8]}")


def check_tile_streams(tdslc, t):
    """A tiled kernel's result is streamed whatever the LLC (ir/ew.c: its lines are
    written far apart): 9 MiB results of a transposing copy and of a transposed
    elementwise are marked `stream` with Zen 3's 32 MiB L3, where the footprint rule
    (1.5 LLCs) would keep them cached; a plain elementwise result of the same size is not."""
    src = ("fn f(x: f32[1152, 2048]) -> (f32[2048, 1152], f32[2048, 1152], f32[1152, 2048]) {\n"
           "  return x.t().contiguous(), x.t() * 2, x * 2\n}")
    env_min = os.environ.pop("TDSL_STREAM_MIN", None)
    try:
        p = emit_text(tdslc, src, "kernels", ["--cpu=znver3"])
    finally:
        if env_min is not None:
            os.environ["TDSL_STREAM_MIN"] = env_min
    args = re.findall(r"^  args: (.*)$", p.stdout, re.M)
    want = ["b0 (read), b1 (write stream)", "b0 (read), b2 (write stream)", "b0 (read), b3 (write)"]
    t.check("tiled results streamed whatever the LLC", p.returncode == 0 and args == want, f"{args} {p.stderr[-300:]}")


def host_llc():
    """The last-level cache ir/cpu.c reads: the size of cpu0's highest-level sysfs cache
    leaf; None where sysfs has none (the check below is then skipped)."""
    base, best = "/sys/devices/system/cpu/cpu0/cache", None
    for leaf in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, leaf, "level")) as f:
                level = int(f.read())
            with open(os.path.join(base, leaf, "size")) as f:
                m = re.match(r"(\d+)([KMG]?)", f.read().strip())
        except (OSError, ValueError):
            continue
        if m and (best is None or level > best[0]):
            best = (level, int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)])
    return best[1] if best else None


def check_host_streams(tdslc, t):
    """Which elementwise results are streamed by the footprint rule (ir/sched.c: buffers
    over 1.5 last-level caches, the cache bounded by 32 MiB a CPU, at least 32 MiB): x * 2
    + 1 of 64, 32 and 16 MiB (buffers of 128, 64 and 32 MiB). With Zen 3's 32 MiB L3 the
    first two; on the host as its sysfs cache and CPU count say (this 2-core VM's 480 MiB
    L3, where 128 MiB of buffers run 1.2-1.5x faster streamed: the first alone)."""
    src = ("fn f(x: f32[4096, 4096], y: f32[2048, 4096], z: f32[1024, 4096]) -> "
           "(f32[4096, 4096], f32[2048, 4096], f32[1024, 4096]) {\n  return x * 2 + 1, y * 2 + 1, z * 2 + 1\n}")
    env_min = os.environ.pop("TDSL_STREAM_MIN", None)
    try:
        llc = host_llc()
        cases = [("znver3", ["--cpu=znver3"], 32 << 20)]
        if llc is not None:
            cases.append(("host", [], min(llc, max(32 << 20, os.sysconf("SC_NPROCESSORS_ONLN") * (32 << 20)))))
        for name, args, cache in cases:
            p = emit_text(tdslc, src, "kernels", args)
            got = re.findall(r"^  args: (.*)$", p.stdout, re.M)
            want = [f"b{i} (read), b{i + 3} (write{' stream' if mib * 2 << 20 > cache * 3 // 2 else ''})"
                    for i, mib in enumerate((64, 32, 16))]
            t.check(f"streamed results, {name} (cache {cache >> 20} MiB)", p.returncode == 0 and got == want,
                    f"{got} want {want} {p.stderr[-300:]}")
    finally:
        if env_min is not None:
            os.environ["TDSL_STREAM_MIN"] = env_min


def check_split_reductions(tdslc, t):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((70000, 5)).astype(np.float32) * 3 + 1
    x[1234, 2] = np.nan
    i = rng.integers(-1000, 1000, size=(3, 30000, 5)).astype(np.int32)
    b = rng.random((70000, 2)) < 0.9999
    src = ("fn f(x: f32[70000, 5], i: i32[3, 30000, 5], b: bool[70000, 2]) -> (f32[5], f32[5], f32[5], f32[5],\n"
           "    f32[5], i64[5], i64[5], f32[5], i64[3, 5], i32[3, 5], bool[2], bool[2], f32[5]) {\n"
           "  return (x.sum(0), x.mean(0), x.var(0), x.std(0), x.amax(0), x.argmax(0), x.argmin(0), x.logsumexp(0),\n"
           "    i.sum(1), i.amin(1), b.all(0), b.any(0), x.abs().sqrt().amin(0))\n}")
    p, outs = run_outputs(tdslc, src, {"x": x, "i": i, "b": b})
    if p.returncode != 0 or len(outs) != 13:
        t.report("split reductions", [p.stderr.decode()[-400:]])
        return
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        wants = [(xd.sum(0), "red"), (xd.mean(0), "red"), (xd.var(0, ddof=1), "red"), (xd.std(0, ddof=1), "red"),
                 (x.max(0), "exact"), (np.nanargmax(x, 0) * 0 + np.argmax(x, 0), "exact"),
                 (np.argmin(x, 0), "exact"),
                 (np.log(np.exp(xd - xd.max(0)).sum(0)) + xd.max(0), "red"), (i.astype(np.int64).sum(1), "exact"),
                 (i.min(1), "exact"), (b.all(0), "exact"), (b.any(0), "exact"),
                 (np.sqrt(np.abs(x)).min(0), "exact")]
    for k, ((want, kind), got) in enumerate(zip(wants, outs)):
        dt = {np.dtype(np.float32): "f32", np.dtype(np.int64): "i64", np.dtype(np.int32): "i32",
              np.dtype(np.bool_): "bool"}[got.dtype]
        want = np.asarray(want).astype(got.dtype)
        why = compare(got, want, dt, kind, 70000)
        t.check(f"split reduction out{k}", why is None, why or "")


def check_streamed_elementwise(tdslc, t):
    """Elementwise results of 8 MiB or more, written past the caches: the C backend's
    scalar loops in strips of one 64-byte line (f32, f64, f16), rows a multiple
    of a line and not (plain stores), NaN and -0.0 kept."""
    rng = np.random.default_rng(11)
    x = rand(rng, "f32", (512, 4112))
    x[3, 5], x[7, 9] = -0.0, np.inf
    a, b = rng.standard_normal((1024, 1)), rng.standard_normal((1, 1032))
    h = rng.standard_normal((2048, 2080)).astype(np.float16)
    u = rand(rng, "f32", (2049, 1029))
    src = ("fn f(x: f32[512, 4112], a: f64[1024, 1], b: f64[1, 1032], h: f16[2048, 2080], u: f32[2049, 1029]) -> (\n"
           "    f32[512, 4112], f64[1024, 1032], f16[2048, 2080], bool[512, 4112], f32[2049, 1029]) {\n"
           "  return relu(x * 2 + 1) * sigmoid(x), a + b, h * 3, x > 0.5, relu(u) + 1\n}")
    xd = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ew = np.where(2 * xd + 1 < 0, 0, 2 * xd + 1) / (1 + np.exp(-xd))
    wants = [(ew, "f32", "elem"), (a + b, "f64", "exact"), (h.astype(np.float32) * 3, "f16", "elem"),
             (x > 0.5, "bool", "exact"), (np.where(u < 0, 0, u) + 1, "f32", "exact")]
    # each such kernel is compiled with non-temporal and with plain stores, and the
    # runtime picks one per call (runtime/stream.c); one call runs the non-temporal form
    # (the first a site runs), TDSL_STREAM_FORM=plain the other: each against NumPy, and
    # the two bit for bit
    got_forms = []
    for form in ("nt", "plain"):
        os.environ["TDSL_STREAM_FORM"] = form
        p, outs = run_outputs(tdslc, src, {"x": x, "a": a, "b": b, "h": h, "u": u})
        os.environ.pop("TDSL_STREAM_FORM")
        if p.returncode != 0 or len(outs) != 5:
            t.report(f"streamed elementwise ({form})", [p.stderr.decode()[-400:]])
            return
        for k, ((want, dt, kind), got) in enumerate(zip(wants, outs)):
            why = compare(got, np.asarray(want).astype(got.dtype), dt, kind)
            t.check(f"streamed elementwise out{k} ({form} stores)", why is None, why or "")
        got_forms.append(outs)
    for k, (nt, plain) in enumerate(zip(*got_forms)):
        t.check(f"streamed elementwise out{k}: the same bits from both store forms",
                nt.tobytes() == plain.tobytes())


def check_stream_form_values(tdslc, t):
    """`tdslc bench` (a warm-up and 3 timed calls) of two streamed results under each
    value of TDSL_STREAM_FORM: a value that is no form warns once, on stderr, naming nt
    and plain (runtime/stream.c reads it once a process); unset, empty, nt, plain: no
    warning."""
    d = tempfile.mkdtemp(prefix="tdsl-form-")
    try:
        path = os.path.join(d, "s.tdsl")
        with open(path, "w", encoding="utf-8") as f:
            f.write("fn f(x: f32[2048, 1024]) -> (f32[2048, 1024], f32[2048, 1024]) {\n"
                    "  return x * 2, relu(x) + 1\n}\n")
        for value in (None, "", "nt", "plain", "NT", "auto"):
            env = dict(os.environ)
            env.pop("TDSL_STREAM_FORM", None)
            if value is not None:
                env["TDSL_STREAM_FORM"] = value
            p = subprocess.run([tdslc, "bench", path, "--fn", "f", "--reps", "3"] + backend_args(env_backend()),
                               capture_output=True, encoding="utf-8", errors="replace", env=env, timeout=300)
            warned = [ln for ln in p.stderr.splitlines() if "TDSL_STREAM_FORM" in ln]
            name = "TDSL_STREAM_FORM " + ("unset" if value is None else repr(value))
            if value in ("NT", "auto"):
                ok = (p.returncode == 0 and len(warned) == 1 and f"TDSL_STREAM_FORM={value} " in warned[0]
                      and "warning" in warned[0] and {"nt", "plain"} <= set(re.findall(r"\w+", warned[0])))
                t.check(name + ": one warning naming nt and plain", ok, p.stderr[-600:])
            else:
                t.check(name + ": no warning", p.returncode == 0 and not warned, p.stderr[-600:])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def softmax_np(x):
    m = x.max(-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(-1, keepdims=True)


def check_long_softmax(tdslc, t):
    rng = np.random.default_rng(9)
    n = 300000  # 1.2 MB f32 rows
    x = (rng.standard_normal((4, n)) * 4).astype(np.float32)
    x[1, :50000] = -np.inf  # the first chunks -inf only
    x[2, :] = -np.inf       # a row of -inf only: NaN
    x[3, 777] = np.nan
    src = (f"fn f(x: f32[4, {n}], h: f16[2, {n}]) -> (f32[4, {n}], f32[4, {n}], f16[2, {n}]) {{\n"
           "  return softmax(x, -1), log_softmax(x, -1), softmax(h, -1)\n}")
    h = (rng.standard_normal((2, n)) * 3).astype(np.float16)
    p, outs = run_outputs(tdslc, src, {"x": x, "h": h})
    if p.returncode != 0 or len(outs) != 3:
        t.report("long softmax", [p.stderr.decode()[-400:]])
        return
    xd = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        sm = softmax_np(xd)
        m = xd.max(-1, keepdims=True)
        lsm = xd - m - np.log(np.exp(xd - m).sum(-1, keepdims=True))
        hs = softmax_np(h.astype(np.float64))
    for k, (got, want, dt) in enumerate(((outs[0], sm, "f32"), (outs[1], lsm, "f32"), (outs[2], hs, "f16"))):
        why = compare(got, want.astype(got.dtype), dt, "red", 16)
        t.check(f"long softmax out{k}", why is None, why or "")


def check_big_softmax(tdslc, t):
    rng = np.random.default_rng(11)
    n = 4099  # odd: vector tails; results of 8.4 MiB (f32) and more
    rows = {"f32": 520, "f64": 260, "f16": 1040, "bf16": 1042}  # all different: one kernel each
    vals = {}
    for dt, r in rows.items():
        v = (rng.standard_normal((r, n)) * 5).astype(np.float32)
        v[1, ::3] = -np.inf
        v[2, :] = -np.inf
        v[3, 17] = np.nan
        v[4, 4000] = np.inf
        v[5, :] = 300.0 if dt != "f16" else 3.0  # every term 1
        vals[dt] = v.astype(np.float64) if dt == "f64" else v.astype(np.float16) if dt == "f16" else v
    xt = np.ascontiguousarray((rng.standard_normal((n, 530)) * 5).astype(np.float32))
    ins = {"a": vals["f32"], "b": vals["f64"], "c": vals["f16"], "d": f32_to_bf16_bits(vals["bf16"]), "e": xt}
    src = (f"fn f(a: f32[520, {n}], b: f64[260, {n}], c: f16[1040, {n}], d: bf16[1042, {n}], e: f32[{n}, 530]) -> (\n"
           f"    f32[520, {n}], f64[260, {n}], f16[1040, {n}], bf16[1042, {n}], f32[530, {n}]) {{\n"
           "  return softmax(a, -1), softmax(b, dim=1), c.softmax(-1), softmax(d, -1), softmax(e.t(), -1)\n}")
    p, outs = run_outputs(tdslc, src, ins)
    if p.returncode != 0 or len(outs) != 5:
        t.report("big softmax", [p.stderr.decode()[-400:]])
        return
    wants = [vals["f32"], vals["f64"], vals["f16"], bf16_bits_to_f32(ins["d"]), xt.T]
    for k, (got, w, dt) in enumerate(zip(outs, wants, ("f32", "f64", "f16", "bf16", "f32"))):
        with np.errstate(invalid="ignore", divide="ignore"):
            want = softmax_np(np.asarray(w, dtype=np.float64))
        if dt == "bf16":
            got = bf16_bits_to_f32(got)
        why = compare(got, want.astype(got.dtype), dt, "red", n)
        t.check(f"big softmax out{k} ({dt})", why is None, why or "")


def check_short_rows(tdslc, t):
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((5001, 3)) * 3).astype(np.float32)
    x[0, :] = -np.inf
    x[1, 1] = np.nan
    x[2, 0] = -np.inf
    x[3, :] = 2.0  # argmax ties: the first
    z = (rng.standard_normal((7, 4003)) * 3).astype(np.float32)
    h = (rng.standard_normal((2001, 5)) * 2).astype(np.float16)
    d = rng.standard_normal((999, 16))
    w = rng.standard_normal((1001, 2, 4)).astype(np.float32)
    src = ("fn f(x: f32[5001, 3], z: f32[7, 4003], h: f16[2001, 5], d: f64[999, 16], w: f32[1001, 2, 4]) -> (\n"
           "    f32[5001], f32[5001, 1], i64[5001], f32[5001], f32[5001, 3], f32[5001, 3], f32[5001],\n"
           "    f32[4003, 7], f32[4003], f16[2001, 5], f16[2001], f64[999], f64[999, 16], f32[1001], f32[1001]) {\n"
           "  return (x.sum(-1), x.amax(1, keepdim=true), x.argmax(-1), x.var(-1), softmax(x, -1), log_softmax(x, -1),\n"
           "    x.logsumexp(-1), softmax(z.t(), -1), z.t().mean(1), softmax(h, -1), h.sum(-1), d.std(1),\n"
           "    d.softmax(-1), w.sum([1, 2]), w.amin([-1, -2]))\n}")
    p, outs = run_outputs(tdslc, src, {"x": x, "z": z, "h": h, "d": d, "w": w})
    if p.returncode != 0 or len(outs) != 15:
        t.report("short rows", [p.stderr.decode()[-400:]])
        return
    xd, zt, hd = x.astype(np.float64), z.T.astype(np.float64), h.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = xd.max(-1, keepdims=True)
        lsm = xd - m - np.log(np.exp(xd - m).sum(-1, keepdims=True))
        lse = np.log(np.exp(xd - np.where(np.isinf(m), 0, m)).sum(-1)) + np.where(np.isinf(m), 0, m)[:, 0]
        wants = [(xd.sum(-1), "f32"), (x.max(1, keepdims=True), "f32"), (np.argmax(x, -1), "i64"),
                 (xd.var(-1, ddof=1), "f32"), (softmax_np(xd), "f32"), (lsm, "f32"), (lse, "f32"),
                 (softmax_np(zt), "f32"), (zt.mean(1), "f32"), (softmax_np(hd), "f16"), (hd.sum(-1), "f16"),
                 (d.std(1, ddof=1), "f64"), (softmax_np(d), "f64"), (w.astype(np.float64).sum((1, 2)), "f32"),
                 (w.min((1, 2)), "f32")]
    for k, ((want, dt), got) in enumerate(zip(wants, outs)):
        kind = "exact" if dt == "i64" or k in (1, 14) else "red"
        why = compare(got, np.asarray(want).astype(got.dtype), dt, kind, 16)
        t.check(f"short rows out{k}", why is None, why or "")


def check_row_blocks(tdslc, t):
    """Short rows run in blocks of a vector of rows through a transposed block in scratch
    (ir/row.c's BLOCK): bf16 rows, an int sum, rows under kept outer dims with an
    epilogue reading the input and a broadcast operand, blocks with and without a tail."""
    rng = np.random.default_rng(17)
    g = (rng.standard_normal((1003, 7)) * 3).astype(np.float32)
    g[5, :] = -np.inf
    gb = f32_to_bf16_bits(g)
    q = (rng.standard_normal((3, 77, 8)) * 2).astype(np.float32)
    bq = rng.standard_normal(8).astype(np.float32)
    iv = rng.integers(-1000, 1000, size=(1001, 6), dtype=np.int32)
    e = (rng.standard_normal((64, 12)) * 2).astype(np.float64)
    lw = (rng.standard_normal((6, 100)) * 4).astype(np.float32)  # a looped row: log_softmax's max skips NaN
    lw[0, 37] = np.nan
    lw[1, 99] = np.inf
    lw[2, :] = -np.inf
    lw[3, :] = 1e30
    lw[4, 50:] = -np.inf
    src = ("fn f(g: bf16[1003, 7], q: f32[3, 77, 8], bq: f32[8], iv: i32[1001, 6], e: f64[64, 12], lw: f32[6, 100]) -> (\n"
           "    bf16[1003, 7], f32[3, 77, 8], i64[1001], f64[64, 12], f32[3, 77], f32[6, 100], f64[6, 100]) {\n"
           "  return (softmax(g, -1), softmax(q, -1) * bq + q, iv.sum(-1), log_softmax(e, 1), q.var(-1),\n"
           "    log_softmax(lw, -1), log_softmax(lw.double(), -1))\n}")
    p, outs = run_outputs(tdslc, src, {"g": gb, "q": q, "bq": bq, "iv": iv, "e": e, "lw": lw})
    if p.returncode != 0 or len(outs) != 7:
        t.report("row blocks", [p.stderr.decode()[-400:]])
        return
    gd, qd = bf16_bits_to_f32(gb).astype(np.float64), q.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        wants = [(softmax_np(gd), "bf16"), (softmax_np(qd) * bq + qd, "f32"), (iv.astype(np.int64).sum(-1), "i64"),
                 (e - e.max(1, keepdims=True) - np.log(np.exp(e - e.max(1, keepdims=True)).sum(1, keepdims=True)),
                  "f64"), (qd.var(-1, ddof=1), "f32")]
        lwd = lw.astype(np.float64)
        lm = lwd.max(-1, keepdims=True)
        lsm = lwd - lm - np.log(np.exp(lwd - lm).sum(-1, keepdims=True))
        wants += [(lsm, "f32"), (lsm, "f64")]
    for k, ((want, dt), got) in enumerate(zip(wants, outs)):
        if dt == "bf16":
            got, want = bf16_bits_to_f32(got), want.astype(np.float32)
        why = compare(got, np.asarray(want).astype(got.dtype), dt, "red", 16)
        t.check(f"row blocks out{k} ({dt})", why is None, why or "")


def check_fused_softmaxes(tdslc, t):
    """Several softmaxes in one kernel: each stores its terms in its result in its sum
    pass and multiplies them there (ir/row.c's keep_out), f32 and f64; an f16 one and a
    log_softmax beside them recompute theirs. Rows with NaN, +inf, of -inf only."""
    rng = np.random.default_rng(19)
    x = (rng.standard_normal((9, 300)) * 4).astype(np.float32)
    x[1, 5] = np.nan
    x[2, 299] = np.inf
    x[3, :] = -np.inf
    x[4, :] = 1e30
    d = x.astype(np.float64)
    src = ("fn f(x: f32[9, 300], d: f64[9, 300]) -> (f32[9, 300], f32[9, 300], f64[9, 300], f64[9, 300], f16[9, 300],\n"
           "    f32[9, 300]) {\n"
           "  return (softmax(x, -1), softmax(x * 2.0, -1), softmax(d, -1), softmax(-d, 1), softmax(x.half(), -1),\n"
           "    log_softmax(x, -1))\n}")
    p, outs = run_outputs(tdslc, src, {"x": x, "d": d})
    if p.returncode != 0 or len(outs) != 6:
        t.report("fused softmaxes", [p.stderr.decode()[-400:]])
        return
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = d.max(-1, keepdims=True)
        lsm = d - m - np.log(np.exp(d - m).sum(-1, keepdims=True))
        h = x.astype(np.float16).astype(np.float64)
        wants = [(softmax_np(d), "f32"), (softmax_np(d * 2), "f32"), (softmax_np(d), "f64"), (softmax_np(-d), "f64"),
                 (softmax_np(h), "f16"), (lsm, "f32")]
    for k, ((want, dt), got) in enumerate(zip(wants, outs)):
        why = compare(got, np.asarray(want).astype(got.dtype), dt, "red", 300)
        t.check(f"fused softmaxes out{k} ({dt})", why is None, why or "")


def check_moments(tdslc, t):
    """Mean and variance of a row in one pass shifted by its first element (ir/row.c's
    moments): rows of a large mean and a small spread (1e4 + noise, where sum(x^2) -
    sum(x)^2 / n cancels to nothing in f32), an outlier first (the two passes again),
    moments that overflow f32, NaN; var, std, mean with var, layer_norm, group_norm; f32
    and f64."""
    rng = np.random.default_rng(23)
    a = (1e4 + rng.standard_normal((64, 1000))).astype(np.float32)
    a[1, 0] = 1e6            # an outlier first
    a[3, 500] = np.nan
    a[4, :] = 7.0            # no spread
    d = 1e8 + rng.standard_normal((16, 999)) * 3
    o = rng.standard_normal((3, 100)).astype(np.float32)
    o[:, 7] = 1e30  # the squared deviations overflow f32: var inf
    w = (1e4 + rng.standard_normal((4, 20000))).astype(np.float32)
    w[:, 0] += 100  # 100 sigma from the mean, first: the shifted sums would cancel ~13 bits
    g = (3e3 + rng.standard_normal((4, 6, 5, 7))).astype(np.float32)
    src = ("fn f(a: f32[64, 1000], d: f64[16, 999], g: f32[4, 6, 5, 7], o: f32[3, 100], w: f32[4, 20000]) -> (\n"
           "    f32[64], f32[64], f32[64], f32[64, 1000], f64[16], f64[16], f32[4, 6, 5, 7], f32[64], f32[3], f32[4]) {\n"
           "  return (a.var(-1), a.std(-1, correction=0), a.mean(-1), F.layer_norm(a, [1000]), d.var(1), d.mean(1),\n"
           "    F.group_norm(g, 2), a.mean(-1) + a.var(-1), o.var(-1), w.var(-1))\n}")
    p, outs = run_outputs(tdslc, src, {"a": a, "d": d, "g": g, "o": o, "w": w})
    if p.returncode != 0 or len(outs) != 10:
        t.report("moments", [p.stderr.decode()[-400:]])
        return
    ad, gd = a.astype(np.float64), g.astype(np.float64).reshape(4, 2, -1)
    with np.errstate(invalid="ignore", over="ignore"):
        ln = (ad - ad.mean(-1, keepdims=True)) / np.sqrt(ad.var(-1, keepdims=True) + 1e-5)
        gn = ((gd - gd.mean(-1, keepdims=True)) / np.sqrt(gd.var(-1, keepdims=True) + 1e-5)).reshape(g.shape)
        wants = [(ad.var(-1, ddof=1), "f32"), (ad.std(-1), "f32"), (ad.mean(-1), "f32"), (ln, "f32"),
                 (d.var(1, ddof=1), "f64"), (d.mean(1), "f64"), (gn, "f32"), (ad.mean(-1) + ad.var(-1, ddof=1), "f32"),
                 (o.astype(np.float64).var(-1, ddof=1), "f32"), (w.astype(np.float64).var(-1, ddof=1), "f32")]
    for k, ((want, dt), got) in enumerate(zip(wants, outs)):
        with np.errstate(over="ignore"):  # o's var: inf in f32
            why = compare(got, np.asarray(want).astype(got.dtype), dt, "red", 1000)
        t.check(f"moments out{k} ({dt})", why is None, why or "")


def main():
    tdslc = sys.argv[1]
    require_backend(tdslc)
    # results stream from 8 MiB on here (by default from twice the last-level cache,
    # ir/cpu.c), so that the streamed stores are checked on cheap sizes
    os.environ["TDSL_STREAM_MIN"] = str(8 << 20)
    t = Tally()
    check_copies(tdslc, t)
    check_tile_streams(tdslc, t)
    check_host_streams(tdslc, t)
    check_split_reductions(tdslc, t)
    check_streamed_elementwise(tdslc, t)
    check_stream_form_values(tdslc, t)
    check_long_softmax(tdslc, t)
    check_big_softmax(tdslc, t)
    check_short_rows(tdslc, t)
    check_row_blocks(tdslc, t)
    check_fused_softmaxes(tdslc, t)
    check_moments(tdslc, t)
    return t.summary()


if __name__ == "__main__":
    sys.exit(main())
