"""tests/run/oracle.py: helpers shared by the end-to-end tests — running tdslc (on a
source text, with .npy inputs, for its --json output, its outK.npy files or an --emit
text), reading what it wrote, comparing with NumPy, and the bookkeeping of checks
(Tally: one ok/FAIL line each and the closing count). NumPy is the oracle; no expected
number comes from tdslc itself."""
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # a python3 earlier on PATH than Debian's (pyenv, a venv) may lack NumPy
    sys.exit(f"{sys.executable} has no NumPy: run the tests with /usr/bin/python3 (Debian's python3-numpy, "
             f"scripts/deps.sh), as ctest does, e.g. /usr/bin/python3 {sys.argv[0]} build/tdslc, or run "
             f"the script itself ({sys.argv[0]} build/tdslc: its first line names /usr/bin/python3)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")

NP_DTYPES = {"bool": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32,
             "i64": np.int64, "f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64}


def bf16_bits_to_f32(a):
    a = np.asarray(a)
    return (a.reshape(-1).astype(np.uint32) << 16).view(np.float32).reshape(a.shape)


# ---------------------------------------------------------------------------
# Backends. Every script that runs programs takes the backend from TDSL_BACKEND
# (c or llvm; unset or empty: tdslc's own default, no --backend flag) and calls
# require_backend() first, which exits 77 (ctest's skip) when tdslc cannot run
# that backend. tests/CMakeLists.txt registers each script that calls
# require_backend() once per backend, as run.NAME.c and run.NAME.llvm.
# ---------------------------------------------------------------------------
BACKENDS = ("c", "llvm")
SKIP = 77
_PROBE_SRC = "fn f(x: f32[2]) -> f32[2] {\n    return x + 1\n}"
# what tdslc says when a backend is not there (not written yet, or built without it)
_UNAVAILABLE = ("not supported yet", "not supported in this build", "built without", "TDSLC_WITH_LLVM")
_available = {}


def env_backend():
    """The backend named by TDSL_BACKEND, or None for tdslc's default."""
    b = os.environ.get("TDSL_BACKEND", "").strip()
    return b or None


def backend_args(backend):
    return ["--backend", backend] if backend else []


def backend_available(tdslc, backend):
    """(available, reason): runs a trivial program with `--backend backend`. Only tdslc
    saying the backend is missing (exit 2, 'not supported yet' or 'built without')
    makes it unavailable; any other failure counts as available so that the tests run
    and report it."""
    key = (tdslc, backend)
    if key not in _available and (cached := _probe_cached(tdslc, backend)):
        _available[key] = cached
    if key not in _available:
        d = tempfile.mkdtemp(prefix="tdsl-probe-")
        path = os.path.join(d, "probe.tdsl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(_PROBE_SRC + "\n")
        p = subprocess.run([tdslc, "run", path, "--json"] + backend_args(backend), capture_output=True, timeout=120)
        shutil.rmtree(d, ignore_errors=True)
        err = p.stderr.decode(errors="replace").strip()
        if p.returncode == 2 and any(s in err for s in _UNAVAILABLE):
            _available[key] = (False, err)
        else:
            _available[key] = (True, "")
        _probe_save(tdslc, backend, _available[key])
    return _available[key]


# The probe's answer is kept for the other scripts of the same ctest run (each script
# asked again: ~60 scripts a backend, a cc or sanitized start each): a file named by
# the backend and the tdslc binary (its path, inode, size and modification time), so a
# rebuilt tdslc is probed again.
def _probe_file(tdslc, backend):
    try:
        st = os.stat(tdslc)
    except OSError:
        return None
    ident = f"{os.path.realpath(tdslc)}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{backend}"
    name = "tdsl-backend-" + hashlib.sha256(ident.encode()).hexdigest()[:24]
    return os.path.join(tempfile.gettempdir(), name)


def _probe_cached(tdslc, backend):
    path = _probe_file(tdslc, backend)
    try:
        with open(path, encoding="utf-8") as f:
            ok, _, why = f.read().partition("\n")
        return (ok == "1", why)
    except (OSError, TypeError):
        return None


def _probe_save(tdslc, backend, answer):
    path = _probe_file(tdslc, backend)
    if path is None or not answer[0]:  # only a yes is kept: a missing cc or toolkit may be installed later
        return
    tmp = f"{path}.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(("1" if answer[0] else "0") + "\n" + answer[1])
        os.replace(tmp, path)
    except OSError:
        pass


def require_backend(tdslc, backend="env"):
    """Exits 77 (skip) when the backend (default: TDSL_BACKEND) is unavailable; returns
    the backend (None: tdslc's default). Prints which backend the script runs."""
    if backend == "env":
        backend = env_backend()
    if backend is not None and backend not in BACKENDS:
        print(f"TDSL_BACKEND={backend!r}: expected one of {', '.join(BACKENDS)}")
        sys.exit(2)
    ok, why = backend_available(tdslc, backend)
    if not ok:
        print(f"SKIP: backend {backend}: {why}")
        sys.exit(SKIP)
    print(f"backend: {backend or 'default'}")
    sys.stdout.flush()
    return backend


def save_inputs(d, inputs):
    """Saves inputs {param: array} in folder d as PARAM.npy, each array as it is (bf16
    as its bits); returns the `--in PARAM=PATH` arguments that pass them."""
    args = []
    for pname, arr in inputs.items():
        path = os.path.join(d, pname + ".npy")
        np.save(path, arr)
        args += ["--in", f"{pname}={path}"]
    return args


def tdslc_run(tdslc, src, args=(), name="case", backend="env", inputs=None, json_out=True, timeout=600):
    """Writes src (as NAME.tdsl) and inputs {param: array} (see save_inputs) to a new
    temporary folder, runs `tdslc run --out-dir OUT [--json] [--backend B] ARGS [--in ...]`,
    returns (process, parsed JSON or None, OUT). backend: "env" (TDSL_BACKEND), None
    (tdslc's default) or a backend name. json_out=False: no --json (large results), the
    document is None and the results are only OUT's outK.npy (load_outputs). The folder
    is OUT's parent: run_cleanup(OUT) removes it. timeout: generous, since a large bundle's
    cc -O2 on a loaded machine (here: a load of 10 on 2 cores) can pass 120 s; a hang still
    ends there, and at ctest's TIMEOUT."""
    if backend == "env":
        backend = env_backend()
    d = tempfile.mkdtemp(prefix="tdsl-")
    path = os.path.join(d, name + ".tdsl")
    with open(path, "w", encoding="utf-8") as f:
        f.write(src + "\n")
    out_dir = os.path.join(d, "out")
    argv = [tdslc, "run", path] + (["--json"] if json_out else []) + ["--out-dir", out_dir] + backend_args(backend)
    argv += list(args) + save_inputs(d, inputs or {})
    p = subprocess.run(argv, capture_output=True, timeout=timeout)
    if p.returncode == 0 and os.environ.get("TDSL_ALSO_EMIT_C") and backend in (None, "llvm"):
        p = also_emit_c(tdslc, path, args, p, timeout)
    doc = None
    if p.returncode == 0 and json_out:
        doc = json.loads(p.stdout.decode())
    return p, doc, out_dir


# run_flags: the options of `tdslc run` that `tdslc FILE --emit=c` does not take, with
# how many values follow each
_RUN_ONLY = {"--in": 1, "--arg": 1, "--seed": 1, "--out-dir": 1, "--backend": 1, "--json": 0}


def also_emit_c(tdslc, path, args, ran, timeout):
    """The sanitizer pass (TDSL_ALSO_EMIT_C=1, set for the LLVM runs of every script; their
    C runs are not registered there, since cc's work cannot find a bug in tdslc): the
    program that just ran is also emitted as C by the sanitized tdslc, so the C backend
    sees every program too. Returns ran, or the emission's process when it failed."""
    keep, i = [], 0
    args = list(args)
    while i < len(args):
        a = args[i]
        if a in _RUN_ONLY:
            i += 1 + _RUN_ONLY[a]
            continue
        keep.append(a)
        i += 1
    p = subprocess.run([tdslc, path, "--emit=c", "-o", os.devnull] + keep, capture_output=True, timeout=timeout)
    # (exit 2, a usage error, is the command line's: a generic function whose dims run took
    # from its --in files is unbound for --emit=c; a sanitizer's report exits 1)
    if p.returncode not in (0, 2):
        p.stderr = b"(the same program with --emit=c) " + p.stderr
        return p
    return ran


def run_cleanup(out_dir):
    """Removes the temporary folder of one tdslc_run (or run_function) call."""
    shutil.rmtree(os.path.dirname(out_dir), ignore_errors=True)


def tdslc_run_clean(*args, **kwargs):
    """tdslc_run for a caller that needs only the process and the JSON: the folder is
    removed before it returns. Returns (process, parsed JSON or None)."""
    p, doc, out_dir = tdslc_run(*args, **kwargs)
    run_cleanup(out_dir)
    return p, doc


def refusal_errors(tdslc, src, inputs, first, status=1):
    """`tdslc run` of src (written as case.tdsl) must exit with status and its stderr's
    first line end with 'case.tdsl:' + first (the location and the message); the lines
    saying how it did not, none when it did."""
    p, _ = tdslc_run_clean(tdslc, src, name="case", inputs=inputs)
    line = p.stderr.decode(errors="replace").split("\n")[0]
    errs = [] if p.returncode == status else [f"exit {p.returncode}, want {status}"]
    if not line.endswith("case.tdsl:" + first):
        errs.append(f"stderr {line!r}, want ...case.tdsl:{first!r}")
    return errs


def load_outputs(out_dir):
    """The arrays of out0.npy, out1.npy, ... in out_dir, in order."""
    outs = []
    while os.path.exists(os.path.join(out_dir, f"out{len(outs)}.npy")):
        outs.append(np.load(os.path.join(out_dir, f"out{len(outs)}.npy")))
    return outs


def run_outputs(tdslc, src, inputs, fn="f", backend="env", timeout=300):
    """Runs fn of src with inputs {param: array} (saved as they are) without --json, for
    results too large to print; returns (process, [the outK.npy arrays]) ([] on failure)."""
    p, _, out_dir = tdslc_run(tdslc, src, ["--fn", fn], backend=backend, inputs=inputs, json_out=False,
                              timeout=timeout)
    try:
        return p, load_outputs(out_dir) if p.returncode == 0 else []
    finally:
        run_cleanup(out_dir)


def emit_text(tdslc, src, kind, args=(), timeout=120):
    """`tdslc FILE --emit=KIND ARGS` of the source text src (written to a temporary
    file, removed after); returns the process, its stdout and stderr as text."""
    d = tempfile.mkdtemp(prefix="tdsl-emit-")
    try:
        path = os.path.join(d, "s.tdsl")
        with open(path, "w", encoding="utf-8") as f:
            f.write(src + "\n")
        return subprocess.run([tdslc, path, f"--emit={kind}"] + list(args), capture_output=True, encoding="utf-8",
                              errors="replace", timeout=timeout)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def gpu_emit_errors(tdslc, src, args=(), timeout=120):
    """`--emit=cuda` and `--emit=ptx` of the source text src (the GPU backends compile the
    graph the CPU backends ran): a line per kind tdslc refused, none when both emitted."""
    errs = []
    for kind in ("cuda", "ptx"):
        p = emit_text(tdslc, src, kind, args, timeout)
        if p.returncode != 0:
            errs.append(f"--emit={kind}: exit {p.returncode}: {p.stderr[:500]}")
    return errs


def run_cmd(cmd, cwd=None, env=None, timeout=300):
    """Runs cmd (a list), capturing its output as bytes."""
    return subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, env=env)


# ---------------------------------------------------------------------------
# The programs every backend must handle: examples/*.tdsl and the golden cases.
# ---------------------------------------------------------------------------
def example_functions():
    """(file name, source, function name) of every function of examples/*.tdsl, in order."""
    for fname in sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".tdsl")):
        with open(os.path.join(EXAMPLES, fname), encoding="utf-8") as f:
            src = f.read()
        for fn in re.findall(r"^fn\s+([A-Za-z_]\w*)", src, re.M):
            yield fname, src, fn


# The dims the generic functions of an example are run with (tdslc run --dim NAME=SIZE).
EXAMPLE_DIMS = {"nanogpt.tdsl": {"B": 2, "T": 16}}


def example_dims(fname, src, fn):
    """{dim: size} for the dims fn's own parameters name (a generic example function)."""
    sig = re.search(r"fn\s+" + fn + r"\s*\((.*?)\)\s*->", src, re.S).group(1)
    return {k: v for k, v in EXAMPLE_DIMS.get(fname, {}).items() if re.search(r"\b" + k + r"\b", sig)}


def dim_args(dims):
    """--dim NAME=SIZE for each of dims."""
    return [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]


def program_files():
    """examples/*.tdsl and tests/golden/*.tdsl, sorted: every program that type-checks (the
    grammar_* goldens exercise the parser only and are left out)."""
    goldens = [f for f in glob.glob(os.path.join(ROOT, "tests", "golden", "*.tdsl"))
               if not os.path.basename(f).startswith("grammar_")]
    return sorted(glob.glob(os.path.join(EXAMPLES, "*.tdsl")) + goldens)


# ---------------------------------------------------------------------------
# Bookkeeping: each check prints `ok   NAME` or `FAIL NAME` with its failure lines
# indented below; summary() prints `N passed, M failed` and gives the exit status.
# ---------------------------------------------------------------------------
class Tally:
    def __init__(self):
        self.total = 0
        self.failed = []  # (name, first failure line)

    def report(self, name, errs, program=None):
        """One check whose failure lines are errs (empty: passed). program: a source
        text printed in full under a failure. Returns whether it passed."""
        errs = [str(e) for e in errs]
        self.total += 1
        print(f"{'ok  ' if not errs else 'FAIL'} {name}")
        for e in errs:
            print("     " + e.replace("\n", "\n     "))
        if errs:
            self.failed.append((name, errs[0].split("\n")[0]))
            if program is not None:
                print("     program:\n" + "\n".join("       " + ln for ln in program.split("\n")))
        return not errs

    def check(self, name, cond, detail=""):
        """One check of a condition; detail (any value) is printed under a failure."""
        if cond:
            return self.report(name, [])
        empty = detail is None or (isinstance(detail, (str, bytes)) and not detail)
        return self.report(name, ["(condition false)" if empty else detail])

    def summary(self, note="", recap=False):
        """Prints `N passed, M failed` (and note), with recap each failure's name and
        first line again; returns the exit status: 1 when a check failed, else 0."""
        print(f"{self.total - len(self.failed)} passed, {len(self.failed)} failed{note}")
        if recap:
            for name, first in self.failed:
                print(f"FAIL {name}: {first}")
        return 1 if self.failed else 0


def f32_to_bf16_bits(a):
    """Round-to-nearest-even of float32 values to bfloat16 bits (NaN stays NaN)."""
    f = np.asarray(a, dtype=np.float32)
    u = f.reshape(-1).view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = np.isnan(f.reshape(-1))
    return np.where(nan, (u >> 16) | 0x40, r).astype(np.uint16).reshape(f.shape)


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


# ---------------------------------------------------------------------------
# Value-level harness for the op tests (test_ops, test_examples, test_random).
# A tensor's *value* array holds exactly what the program sees: bf16 values as
# float32 numbers that bf16 represents, every other dtype as its own NumPy dtype.
# Oracles compute in PyTorch's "opmath" type (f32 for f16/bf16, the dtype itself
# otherwise) and round the result to the output dtype with `rnd`.
# ---------------------------------------------------------------------------
INTS = ("u8", "i8", "i16", "i32", "i64")  # the integer dtypes (bool is not one)
INT_DTYPES = ("bool",) + INTS
FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")
ALL_DTYPES = INT_DTYPES + FLOAT_DTYPES
VALUE_NP = {"bool": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32,
            "i64": np.int64, "f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64}


def rnd(a, dtype):
    """a (any NumPy array) converted to dtype's value array as PyTorch converts:
    floats to ints truncate toward zero (and wrap to a small int), f64 goes to f16/bf16
    through f32; ints wrap to a narrower int."""
    a = np.asarray(a)
    if dtype == "bf16":
        with np.errstate(over="ignore"):
            return bf16_bits_to_f32(f32_to_bf16_bits(a.astype(np.float32)))
    if dtype == "f16":
        with np.errstate(over="ignore"):
            return a.astype(np.float32).astype(np.float16)
    if dtype == "bool":
        return a != 0
    if dtype in INTS and a.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return np.trunc(a).astype(np.int64).astype(VALUE_NP[dtype])
    with np.errstate(over="ignore"):
        return a.astype(VALUE_NP[dtype])


def opm(a, dtype=None):
    """The value array in the type PyTorch computes with: f16 -> f32, else unchanged."""
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype == np.float16 else a


def to_npy(a, dtype):
    """The array written to an .npy file for a parameter of dtype."""
    a = np.array(a, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    return f32_to_bf16_bits(a) if dtype == "bf16" else a.astype(VALUE_NP[dtype])


def from_npy(a, dtype):
    return bf16_bits_to_f32(a) if dtype == "bf16" else a


def rand_values(rng, dtype, shape, lo=-1.0, hi=1.0, ilo=0, ihi=3):
    """Random values of dtype: floats uniform in [lo, hi), ints in ilo..ihi, bools random."""
    shape = tuple(shape)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS:
        return rng.integers(ilo, ihi + 1, size=shape).astype(VALUE_NP[dtype])
    return rnd(rng.uniform(lo, hi, size=shape), dtype)


# (rtol, atol) for one rounding of an elementwise result
ELEM_TOL = {"f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2), "f32": (2e-5, 2e-6), "f64": (1e-10, 1e-12)}
# per-term accumulation slack for reductions (scaled by the number of terms)
ACC_EPS = {"f16": 2e-6, "bf16": 2e-6, "f32": 2e-6, "f64": 1e-14}
# normalised mean squared error bound for matmul (ggml's nmse)
NMSE_TOL = {"f16": 1e-5, "bf16": 2e-4, "f32": 1e-10, "f64": 1e-24}


def compare(got, want, dtype, kind="elem", n=1):
    """None when got matches want, else a short reason. kind: 'exact' (bitwise, nan==nan),
    'elem' (one rounding), 'red' (a reduction over n terms), 'mm' (nmse)."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"shape {list(got.shape)} != {list(want.shape)}"
    if dtype in INT_DTYPES or kind == "exact":
        want = want.astype(got.dtype)
        if same_values(got, want):
            return None
        if dtype in FLOAT_DTYPES:
            bad = np.argwhere(~((got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))))
        else:
            bad = np.argwhere(got != want)
        i = tuple(bad[0]) if len(bad) else ()
        return f"differs at {list(i)}: got {got[i] if got.ndim else got}, want {want[i] if want.ndim else want}"
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    if not np.array_equal(gn, wn):
        i = tuple(np.argwhere(gn != wn)[0])
        return f"nan mismatch at {list(i)}: got {g[i]}, want {w[i]}"
    gi, wi = np.isinf(g), np.isinf(w)
    if not np.array_equal(gi, wi) or not np.array_equal(g[gi], w[wi]):
        i = tuple(np.argwhere((gi != wi) | (gi & (g != w)))[0])
        return f"inf mismatch at {list(i)}: got {g[i]}, want {w[i]}"
    fin = ~(gn | gi)
    g, w = g[fin], w[fin]
    if g.size == 0:
        return None
    if kind == "mm":
        den = float(np.sum(w * w))
        nmse = float(np.sum((g - w) ** 2)) / (den if den > 0 else 1.0)
        return None if nmse <= NMSE_TOL[dtype] else f"nmse {nmse:.3g} > {NMSE_TOL[dtype]:.3g}"
    rtol, atol = ELEM_TOL[dtype]
    if kind == "red":
        rtol, atol = rtol * 4, atol + ACC_EPS[dtype] * max(1, n)
    err = np.abs(g - w) - (atol + rtol * np.abs(w))
    if np.all(err <= 0):
        return None
    k = int(np.argmax(err))
    return f"got {g[k]!r}, want {w[k]!r} (|diff| {abs(g[k] - w[k]):.3g}, rtol {rtol:g} atol {atol:g})"


def type_str(dtype, shape):
    return f"{dtype}[{', '.join(str(d) for d in shape)}]"


def run_function(tdslc, src, fn, inputs, name="case", extra=(), backend="env"):
    """Runs `fn` of src with inputs {param: (dtype, value array)} passed as .npy files,
    on backend (see tdslc_run). Returns (process, JSON document or None, out_dir);
    run_cleanup(out_dir) removes its folder."""
    npy = {pname: to_npy(val, dt) for pname, (dt, val) in inputs.items()}
    return tdslc_run(tdslc, src, args=["--fn", fn] + list(extra), name=name, backend=backend, inputs=npy)


def check_outputs(doc, out_dir, outs, first=None):
    """outs: [(dtype, want value array, kind, n, view)] in output order: the run's
    outputs, or with `first` those from number first on (a bundle's slice). Checks
    dtype, shape, row-major strides of materialized results, the values, and that
    outK.npy holds the same values as the JSON. Returns a list of (index, reason)."""
    errs = []
    got_outs = doc["outputs"] if first is None else doc["outputs"][first:first + len(outs)]
    first = first or 0
    if len(got_outs) != len(outs):
        return [(-1, f"{len(got_outs)} outputs, expected {len(outs)}")]
    for k, (o, (dt, want, kind, n, view)) in enumerate(zip(got_outs, outs)):
        want = np.asarray(want)
        if o["dtype"] != dt:
            errs.append((k, f"dtype {o['dtype']}, expected {dt}"))
            continue
        if list(o["shape"]) != list(want.shape):
            errs.append((k, f"shape {o['shape']}, expected {list(want.shape)}"))
            continue
        if not view:
            st, acc = [], 1
            for s in reversed(want.shape):
                st.append(acc)
                acc *= max(s, 1)
            if o["strides"] != st[::-1] or o["storage"] != "new":
                errs.append((k, f"materialized result: strides {o['strides']} storage {o['storage']}, "
                                f"expected {st[::-1]} new"))
        got = json_values(o["data"], dt).reshape(want.shape)
        r = compare(got, want, dt, kind, n)
        if r:
            errs.append((k, r))
            continue
        path = os.path.join(out_dir, f"out{first + k}.npy")
        if os.path.exists(path):
            saved = from_npy(np.load(path), dt)
            if saved.shape != want.shape or not same_values(np.array(saved, order="C"), got.astype(saved.dtype)):
                errs.append((k, f"out{k}.npy differs from the JSON data"))
        else:
            errs.append((k, f"out{k}.npy missing"))
    return errs


KIND_TOL = {"f64": 1e-12, "f32": 1e-5, "f16": 1e-3, "bf16": 1e-2}
KIND_NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.uint16}  # bf16 .npy: its bits


def compare_kinds(p, outs, want, kinds):
    """The errors of a run (p, outs from run_outputs) against NumPy values `want` (f64
    arrays) whose dtypes are `kinds` ("f32", "i64", "bool" ...): ints and bools exactly,
    floats within the kind's relative tolerance, infinities and NaN where NumPy has them."""
    if p.returncode != 0:
        return [f"exit {p.returncode}: {p.stderr.decode(errors='replace').strip()[:400]}"]
    errs = []
    if len(outs) != len(want):
        return [f"{len(outs)} outputs, want {len(want)}"]
    for k, (got, w, kind) in enumerate(zip(outs, want, kinds)):
        w = np.asarray(w)
        if got.shape != w.shape:
            errs.append(f"out{k}: shape {got.shape}, want {w.shape}")
        elif kind not in KIND_TOL:
            if got.dtype != np.dtype(VALUE_NP[kind]) or \
                    not np.array_equal(got, w.astype(got.dtype)):
                errs.append(f"out{k}: {got.dtype} {got.ravel()[:4]}, want {w.ravel()[:4]}")
        else:
            g = (bf16_bits_to_f32(got) if kind == "bf16" else got).astype(np.float64)
            with np.errstate(invalid="ignore"):  # inf - inf
                bad = ~((g == w) | (np.abs(g - w) <= KIND_TOL[kind] * (1 + np.abs(w))) | (np.isnan(g) & np.isnan(w)))
            if got.dtype != KIND_NP[kind] or bad.any():
                i = np.argwhere(bad)[0] if bad.any() else None
                errs.append(f"out{k}: {got.dtype}, at {i}: got {got[tuple(i)] if i is not None else ''}, "
                            f"want {w[tuple(i)] if i is not None else ''}")
    return errs


def count_errors(got, want, what="outputs"):
    """[] when got and want (sequences zipped together by a check) have the same length,
    else the line that says they do not: zip would silently check only the shorter."""
    return [] if len(got) == len(want) else [f"{len(got)} {what}, expected {len(want)}"]


def run_case(tdslc, params, body, exprs, kinds, want, inputs):
    """Runs `fn f(PARAMS) -> (the types of want) { BODY; return EXPRS }` on inputs and
    compares with want (see compare_kinds); returns (failure lines, the program)."""
    rets = ", ".join(f"{k}[{', '.join(str(d) for d in np.shape(w))}]" for k, w in zip(kinds, want))
    lines = "".join(f"    {b}\n" for b in body)
    src = f"fn f({params}) -> ({rets}) {{\n{lines}    return {exprs}\n}}\n"
    p, outs = run_outputs(tdslc, src, inputs)
    return compare_kinds(p, outs, want, kinds), src


def test_subset():
    """TDSL_TEST_SUBSET=N (the sanitizer pass of `make test` sets it): the long scripts run
    every Nth of their programs, the rest having run in the plain pass; 1 otherwise."""
    try:
        return max(1, int(os.environ.get("TDSL_TEST_SUBSET", "1")))
    except ValueError:
        return 1
