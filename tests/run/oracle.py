"""tests/run/oracle.py: helpers shared by the end-to-end tests — running tdslc, reading
its --json output and .npy files, and comparing with NumPy. NumPy is the oracle; no
expected number comes from tdslc itself."""
import json
import os
import subprocess
import tempfile

import numpy as np

NP_DTYPES = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16,
             "bf16": np.uint16, "f32": np.float32, "f64": np.float64}


def bf16_bits_to_f32(a):
    return (a.astype(np.uint32) << 16).view(np.float32)


def tdslc_run(tdslc, src, args=(), name="case"):
    """Writes src to a temporary folder, runs `tdslc run --json --out-dir`, returns
    (process, parsed JSON or None, out_dir)."""
    d = tempfile.mkdtemp(prefix="tdsl-")
    path = os.path.join(d, name + ".tdsl")
    with open(path, "w", encoding="utf-8") as f:
        f.write(src + "\n")
    out_dir = os.path.join(d, "out")
    p = subprocess.run([tdslc, "run", path, "--json", "--out-dir", out_dir] + list(args),
                       capture_output=True, timeout=120)
    doc = None
    if p.returncode == 0:
        doc = json.loads(p.stdout.decode())
    return p, doc, out_dir


def f32_to_bf16_bits(a):
    """Round-to-nearest-even of float32 values to bfloat16 bits (NaN stays NaN)."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    return np.where(nan, (u >> 16) | 0x40, r).astype(np.uint16)


def json_values(data, dtype):
    """The JSON 'data' array as a NumPy array of dtype (non-finite strings decoded).
    bf16 text is the shortest decimal that rounds back to the same bf16: it is read as
    float32, rounded to bf16 and widened again, so it compares with the oracle's bits."""
    conv = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}
    vals = [conv[v] if isinstance(v, str) else v for v in data]
    if dtype == "bf16":
        return bf16_bits_to_f32(f32_to_bf16_bits(np.array(vals, dtype=np.float32)))
    return np.array(vals, dtype=NP_DTYPES[dtype])


def as_float_view(a, dtype):
    return bf16_bits_to_f32(a) if dtype == "bf16" else a


def same_values(got, want):
    """Bitwise-exact equality for copies and views (nan == nan, -0.0 != 0.0)."""
    if got.shape != want.shape:
        return False
    if got.dtype.kind == "f":
        return bool(np.all((got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))))
    return bool(np.array_equal(got, want))
