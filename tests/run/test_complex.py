#!/usr/bin/python3
"""tests/run/test_complex.py TDSLC: complex tensors (c64, c128) against NumPy's complex
arithmetic: entry parameters and results through .npy (<c8, <c16), view_as_real,
view_as_complex, .real/.imag (views: their strides and offsets are PyTorch's, counted in
floats, and --emit=ir shows no kernel for them), + - * / with complex, real tensors and
Python numbers (PyTorch's promotion: f32 with c64 is c64, f64 with c64 is c128, an int
tensor with c64 is c64), torch.polar, torch.complex, abs, angle, conj, exp, sum and mean
over dims, cat and stack, reshape/transpose/permute/indexing views, matmul, and LLaMA's
rotary embedding as LLaMA writes it; PyTorch's printed form of a complex tensor; the
programs emitted as CUDA C and PTX too; the refusals in PyTorch 1.13's words.

check_math, one program (one tdslc run; its CUDA C through nvcc once and its PTX once):
log, log2, log10, sqrt, rsqrt, reciprocal, square, exp, sgn, sigmoid, the trigonometric and
hyperbolic functions and their inverses of c64 and c128 on a grid of every (a, b) of 15
values (signed zeros, 1e-3 and -4e-3 where the series take over, 30, -1e9, inf, -inf,
nan) and random points, against NumPy part by part: nan where NumPy has nan, the same
infinities, the same sign of a zero, else within the tolerance; pow (complex, real and
Python number exponents and bases, NumPy's npy_cpow for integers and 0), ==, !=, isnan,
isinf, isfinite, prod, cumsum, cumprod, complex->real casts (the real part; bool: the
real part's != 0, as PyTorch 1.13) and their warning, imaginary literals (1j, 2.5j,
complex(1, 2)) with Python's promotion, and writes: a real value into a complex tensor, a
complex one into a real tensor, through index tensors, masks and index_put_; the gathers
z[idx], index_select and gather.

Runs on the backend named by TDSL_BACKEND (c or llvm; unset: tdslc's default) and exits
77 (skip) when tdslc lacks it, see oracle.require_backend.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from oracle import Tally, emit_text, require_backend, run_cleanup, tdslc_run, test_subset  # noqa: E402

RNG = np.random.default_rng(30)
NP = {"c64": np.complex64, "c128": np.complex128, "f32": np.float32, "f64": np.float64, "i32": np.int32,
      "i64": np.int64, "bool": np.bool_}


def value(dtype, shape):
    if dtype in ("c64", "c128"):
        re, im = RNG.uniform(-1, 1, size=shape), RNG.uniform(-1, 1, size=shape)
        return (re + 1j * im).astype(NP[dtype])
    if dtype in ("i32", "i64"):
        return RNG.integers(-3, 4, size=shape).astype(NP[dtype])
    return RNG.uniform(-1, 1, size=shape).astype(NP[dtype])


def tstr(dtype, shape):
    return f"{dtype}[{', '.join(map(str, shape))}]"


def rope_ref(xq, freqs):
    """LLaMA's apply_rotary_emb on xq [B, T, H, D] with freqs [T, D/2], in complex64."""
    fc = (np.ones_like(freqs) * np.exp(1j * freqs.astype(np.float64))).astype(np.complex64)
    xc = xq.astype(np.float32).reshape(*xq.shape[:-1], -1, 2)
    xc = (xc[..., 0] + 1j * xc[..., 1]).astype(np.complex64)
    r = xc * fc[None, :, None, :]
    return np.stack([r.real, r.imag], -1).reshape(*xq.shape).astype(np.float32)


def stores_ref(z, w):
    y = z.copy()
    y[0] = w[1]
    y = ((y + w) * w / 2 - 1.5).astype(np.complex64)
    y[2:] = w[:2] * w[2:]
    y.real[1] = 5.0
    y[1:] += z.imag[:3]
    return y


# (name, params [(name, dtype, shape)], body lines, returned expressions, result types
# [(dtype, shape)], NumPy's values of the params)
CASES = [
    ("identity", [("z", "c64", (2, 3)), ("w", "c128", (4,))], [], "z, w", [("c64", (2, 3)), ("c128", (4,))],
     lambda z, w: [z, w]),
    ("arith", [("z", "c64", (2, 3)), ("w", "c64", (2, 3))], [], "z + w, z - w, z * w, z / w, -z",
     [("c64", (2, 3))] * 5, lambda z, w: [z + w, z - w, z * w, z / w, -z]),
    ("broadcast", [("z", "c64", (2, 3)), ("w", "c64", (3,))], [], "z * w, w - z, z / w",
     [("c64", (2, 3))] * 3, lambda z, w: [z * w, w - z, z / w]),
    ("mixed_real", [("z", "c64", (2, 3)), ("x", "f32", (2, 3)), ("d", "f64", (3,)), ("k", "i64", (2, 3))], [],
     "z * x, x / z, z + d, z * k, k - z", [("c64", (2, 3)), ("c64", (2, 3)), ("c128", (2, 3)), ("c64", (2, 3)),
                                          ("c64", (2, 3))],
     lambda z, x, d, k: [z * x, x / z, z + d, z * k.astype(np.float32), k.astype(np.float32) - z]),
    ("scalars", [("z", "c128", (5,))], [], "z * 2.5, 1 - z, z / 4, 2 * z + 1", [("c128", (5,))] * 4,
     lambda z: [z * 2.5, 1 - z, z / 4, 2 * z + 1]),
    ("unary", [("z", "c64", (3, 4))], [], "torch.abs(z), torch.angle(z), torch.conj(z), torch.exp(z), z.abs()",
     [("f32", (3, 4)), ("f32", (3, 4)), ("c64", (3, 4)), ("c64", (3, 4)), ("f32", (3, 4))],
     lambda z: [np.abs(z), np.angle(z), np.conj(z), np.exp(z), np.abs(z)]),
    ("unary128", [("z", "c128", (7,))], [], "torch.abs(z), torch.angle(z), z.conj(), z.exp()",
     [("f64", (7,)), ("f64", (7,)), ("c128", (7,)), ("c128", (7,))],
     lambda z: [np.abs(z), np.angle(z), np.conj(z), np.exp(z)]),
    ("make", [("a", "f32", (2, 3)), ("b", "f32", (3,)), ("r", "f64", (4,)), ("t", "f64", (4,))], [],
     "torch.complex(a, b), torch.polar(r, t), torch.polar(torch.ones_like(a), a)",
     [("c64", (2, 3)), ("c128", (4,)), ("c64", (2, 3))],
     lambda a, b, r, t: [a + 1j * b, r * np.exp(1j * t), np.exp(1j * a.astype(np.float64))]),
    ("parts", [("z", "c64", (2, 3)), ("x", "f32", (4, 3, 2))], [],
     "z.real, z.imag, torch.real(z), torch.imag(z), torch.view_as_real(z), torch.view_as_complex(x)",
     [("f32", (2, 3))] * 4 + [("f32", (2, 3, 2)), ("c64", (4, 3))],
     lambda z, x: [z.real, z.imag, z.real, z.imag, np.stack([z.real, z.imag], -1), x[..., 0] + 1j * x[..., 1]]),
    ("views", [("z", "c64", (2, 3, 4))], [],
     "z.transpose(0, 2), z.permute(1, 0, 2), z.reshape(6, 4), z[1], z[:, 1:3, ::2], z.flatten(1), z.t() if False else z.unsqueeze(1)",
     [("c64", (4, 3, 2)), ("c64", (3, 2, 4)), ("c64", (6, 4)), ("c64", (3, 4)), ("c64", (2, 2, 2)),
      ("c64", (2, 12)), ("c64", (2, 1, 3, 4))],
     lambda z: [z.transpose(2, 1, 0), z.transpose(1, 0, 2), z.reshape(6, 4), z[1], z[:, 1:3, ::2],
                z.reshape(2, 12), z[:, None]]),
    ("copies", [("z", "c64", (2, 3, 4))], [],
     "z.transpose(0, 1).reshape(3, 8), z.transpose(1, 2).contiguous(), z.clone()",
     [("c64", (3, 8)), ("c64", (2, 4, 3)), ("c64", (2, 3, 4))],
     lambda z: [z.transpose(1, 0, 2).reshape(3, 8), z.transpose(0, 2, 1), z]),
    ("reduce", [("z", "c64", (3, 4, 5)), ("w", "c128", (6,))], [],
     "z.sum(1), z.mean(-1), z.sum(), z.mean((0, 2), keepdim=True), w.sum(0)",
     [("c64", (3, 5)), ("c64", (3, 4)), ("c64", ()), ("c64", (1, 4, 1)), ("c128", ())],
     lambda z, w: [z.sum(1), z.mean(-1), z.sum(), z.mean((0, 2), keepdims=True), w.sum(0)]),
    ("join", [("z", "c64", (2, 3)), ("w", "c64", (2, 3))], [],
     "torch.cat([z, w], 0), torch.cat([z, w], -1), torch.stack([z, w]), torch.stack([z, w], -1)",
     [("c64", (4, 3)), ("c64", (2, 6)), ("c64", (2, 2, 3)), ("c64", (2, 3, 2))],
     lambda z, w: [np.concatenate([z, w], 0), np.concatenate([z, w], -1), np.stack([z, w]), np.stack([z, w], -1)]),
    ("matmul", [("a", "c64", (3, 5)), ("b", "c64", (5, 4)), ("c", "c128", (2, 3, 4)), ("d", "c128", (4, 2))], [],
     "a @ b, torch.matmul(c, d), a.t() @ a, torch.mm(a, b)",
     [("c64", (3, 4)), ("c128", (2, 3, 2)), ("c64", (5, 5)), ("c64", (3, 4))],
     lambda a, b, c, d: [a @ b, c @ d, a.T @ a, a @ b]),
    ("more_views", [("z", "c128", (4, 6))], [], "z.split(2, dim=1)[1], z[:1].expand(3, 6), z.chunk(2)[1].T",
     [("c128", (4, 2)), ("c128", (3, 6)), ("c128", (6, 2))], lambda z: [z[:, 2:4], np.broadcast_to(z[:1], (3, 6)),
                                                                        z[2:].T]),
    ("batched", [("a", "c64", (2, 3, 4)), ("b", "c64", (2, 4, 5))], [], "torch.bmm(a, b), torch.conj_physical(a)",
     [("c64", (2, 3, 5)), ("c64", (2, 3, 4))], lambda a, b: [a @ b, np.conj(a)]),
    ("create", [("x", "f32", (3, 4)), ("z", "c64", (4,))], [],
     "x.to(torch.cfloat), torch.zeros(3, 4, dtype=torch.cfloat) + z, torch.ones_like(x, dtype=torch.cdouble), "
     "torch.full((4,), 2.5, dtype=torch.complex64) * z, torch.arange(4, dtype=torch.cfloat) - z, "
     "z.to(torch.complex128), torch.isreal(torch.complex(x, x * 0))",
     [("c64", (3, 4)), ("c64", (3, 4)), ("c128", (3, 4)), ("c64", (4,)), ("c64", (4,)), ("c128", (4,)),
      ("bool", (3, 4))],
     lambda x, z: [x.astype(np.complex64), np.zeros((3, 4)) + z, np.ones((3, 4), np.complex128), 2.5 * z,
                   np.arange(4) - z, z.astype(np.complex128), np.ones((3, 4), bool)]),
    ("where", [("z", "c64", (2, 3)), ("w", "c64", (3,)), ("x", "f32", (2, 3)), ("v", "c128", (2, 1))], [],
     "torch.where(x > 0, z, w), torch.where(x > 0, z, 0.0), torch.where(x < 0, x, z), torch.where(x[0] > 0, w, v)",
     [("c64", (2, 3)), ("c64", (2, 3)), ("c64", (2, 3)), ("c128", (2, 3))],
     lambda z, w, x, v: [np.where(x > 0, z, w), np.where(x > 0, z, 0), np.where(x < 0, x, z), np.where(x[0] > 0, w, v)]),
    ("sgn", [("z", "c64", (5,)), ("x", "f32", (5,))], [],
     "torch.sgn(z), torch.sgn(z * 0), x.sgn(), z * (1.0 if z.is_complex() else 2.0), "
     "x * (1.0 if torch.is_complex(x) else 2.0), z * (3.0 if z.dtype.is_complex else 4.0)",
     [("c64", (5,)), ("c64", (5,)), ("f32", (5,)), ("c64", (5,)), ("f32", (5,)), ("c64", (5,))],
     lambda z, x: [z / np.abs(z), np.zeros(5), np.sign(x), z, 2 * x, 3 * z]),
    ("stores", [("z", "c64", (4,)), ("w", "c64", (4,))],
     ["y = z.clone()", "y[0] = w[1]", "y += w", "y *= w", "y /= 2", "y -= 1.5", "y[2:] = w[:2] * w[2:]",
      "y.real[1] = 5.0", "y[1:] += z.imag[:3]", "u = w.clone()", "u.mul_(z)", "u.add_(w)"],
     "y, u", [("c64", (4,))] * 2, lambda z, w: [stores_ref(z, w), w * z + w]),
    ("precompute_freqs_cis", [],  # LLaMA's, as it writes it
     ["dim, end, theta = 8, 6, 10000.0",
      "freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))",
      "t = torch.arange(end, device=freqs.device)", "freqs = torch.outer(t, freqs).float()"],
     "torch.polar(torch.ones_like(freqs), freqs)", [("c64", (6, 4))],
     lambda: [np.exp(1j * np.outer(np.arange(6), 1.0 / 10000.0 ** (np.arange(0, 8, 2)[:4] / 8)))]),
    ("rope", [("xq", "f32", (2, 5, 3, 8)), ("freqs", "f32", (5, 4))],
     ["freqs_cis = torch.polar(torch.ones_like(freqs), freqs)",
      "xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))",
      "fc = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])"],
     "torch.view_as_real(xq_ * fc).flatten(3).type_as(xq)", [("f32", (2, 5, 3, 8))],
     lambda xq, freqs: [rope_ref(xq, freqs)]),
]

# views of a parameter: (expression, the float strides and offset PyTorch gives, the dtype)
VIEWS = [
    ("z.real", "f32[2, 3, 4]", [24, 8, 2], 0), ("z.imag", "f32[2, 3, 4]", [24, 8, 2], 1),
    ("torch.real(z)", "f32[2, 3, 4]", [24, 8, 2], 0), ("torch.imag(z)", "f32[2, 3, 4]", [24, 8, 2], 1),
    ("torch.view_as_real(z)", "f32[2, 3, 4, 2]", [24, 8, 2, 1], 0),
    ("torch.view_as_real(z[1, 2:, 1:])", "f32[1, 3, 2]", [8, 2, 1], 2 * (12 + 8 + 1)),
    ("torch.view_as_real(z.transpose(0, 2))", "f32[4, 3, 2, 2]", [2, 8, 24, 1], 0),
    ("torch.view_as_complex(torch.view_as_real(z)[:, 1])", "c64[2, 4]", [12, 1], 4),
    ("z.real[1]", "f32[3, 4]", [8, 2], 24),
]

ERRORS = [
    ("z < z", '"lt_cpu" not implemented for \'ComplexFloat\''),
    ("z.max()", '"max_all_cpu" not implemented for \'ComplexFloat\''),
    ("torch.relu(z)", "clamp is not supported for complex types"),
    ("torch.maximum(z, z)", "maximum not implemented for complex tensors."),
    ("torch.floor(z)", "floor is not supported for complex inputs"),
    ("torch.sign(z)", "Unlike NumPy, torch.sign is not intended to support complex numbers."),
    ("torch.view_as_real(x)", "view_as_real is only supported for complex tensors"),
    ("torch.view_as_complex(x[:, :2, :])", "Tensor must have a last dimension of size 2"),
    ("torch.view_as_complex(x.transpose(0, 2))", "Tensor must have a last dimension of size 2"),
    ("torch.view_as_complex(x[:, ::2, :2].transpose(1, 2).reshape(4, 2, 2)[:, :, :2])", None),
    ("torch.view_as_complex(x.reshape(48)[1:41].reshape(20, 2))", "Tensor must have a storage_offset divisible by 2"),
    ("torch.view_as_complex(x.reshape(24, 2)[:, :1].expand(24, 2))", "Tensor must have a last dimension with stride 1"),
    ("x.imag", "imag is not implemented for tensors with non-complex dtypes."),
    ("torch.polar(x, x.double())", "Expected object of scalar type Float but got scalar type Double for second argument"),
    ("torch.complex(k, k)", "Expected both inputs to be Half, Float or Double tensors but got Long and Long"),
    ("z @ x[0, :, :2]", "expected scalar type ComplexFloat but found Float"),
    ("z.view(torch.int64)", "view(Long) of a ComplexFloat tensor reinterprets its bits"),
    ("torch.where(z, z, z)", "where expected condition to be a boolean tensor, but got a tensor with dtype ComplexFloat"),
    ("z // z", '"div_floor_cpu" not implemented for \'ComplexFloat\''),
    ("torch.scatter_reduce(z, 1, k[None, :2].expand(2, 2), z[:, :2], 'amax')",
     '"scatter_gather_tensor_cpu_reduce_amax" not implemented for \'ComplexFloat\''),
    ("torch.isposinf(z)", "isposinf does not support complex inputs."),
    ("z.sum(dtype=torch.float32)", "sum() of a ComplexFloat tensor with dtype=Float is not supported by tdsl"),
    ("z.clone().index_put_((k[:1],), x[0, 0, :1])", "Index put requires the source and destination dtypes match, got "
     "ComplexFloat for the destination and Float for the source."),
    ("torch.full((2,), 1j, dtype=torch.float32)", "value cannot be converted to type float without overflow"),
    ("torch.log1p(z)", '"log1p_vml_cpu" not implemented for \'ComplexFloat\''),
]


def check_case(tdslc, backend, tally, name, params, body, exprs, types, fn):
    sig = ", ".join(f"{p}: {tstr(d, s)}" for p, d, s in params)
    rets = ", ".join(tstr(d, s) for d, s in types)
    lines = "".join(f"  {line}\n" for line in body)
    src = f"fn f({sig}) -> ({rets}) {{\n{lines}  return {exprs}\n}}"
    inputs = {p: value(d, s) for p, d, s in params}
    p, _, out_dir = tdslc_run(tdslc, src, ["--fn", "f"], backend=backend, inputs=inputs, json_out=False)
    try:
        if p.returncode != 0:
            tally.report(name, [f"exit {p.returncode}: {p.stderr.decode()[-2000:]}"])
            return
        want = fn(*[inputs[q] for q, _, _ in params])
        for k, ((dt, shape), w) in enumerate(zip(types, want)):
            got = np.load(os.path.join(out_dir, f"out{k}.npy"))
            if got.dtype != np.dtype(NP[dt]) or got.shape != tuple(shape):
                tally.report(name, [f"out{k}: {got.dtype}{got.shape}, want {np.dtype(NP[dt])}{tuple(shape)}"])
                continue
            tol = 2e-5 if dt in ("c64", "f32") else 1e-12
            w = np.asarray(w)
            if not np.allclose(got, w, rtol=tol, atol=tol * 4):
                tally.report(name, [f"out{k} differs: max |got - want| = {np.max(np.abs(got - w))}"])
                continue
            tally.report(f"{name} out{k}", [])
    finally:
        run_cleanup(out_dir)
    if backend in (None, "llvm"):  # the GPU backends compile the same graph
        for kind in ("cuda", "ptx"):
            ep = emit_text(tdslc, src, kind, ["--fn", "f", "--target", "cuda"])
            if ep.returncode != 0:
                tally.report(name, [f"--emit={kind}: exit {ep.returncode}: {ep.stderr[-1500:]}"])
            else:
                tally.report(f"{name} --emit={kind}", [])


def check_views(tdslc, backend, tally):
    """Results that view the parameter z: PyTorch's strides and offset (in floats), no kernel."""
    for expr, rtype, strides, offset in VIEWS:
        d = tempfile.mkdtemp(prefix="tdsl-cx-")
        path = os.path.join(d, "v.tdsl")
        body = f"fn f(z: c64[2, 3, 4]) -> {rtype} {{\n  return {expr}\n}}\n"
        with open(path, "w") as f:
            f.write(body)
        ir = subprocess.run([tdslc, path, "--emit=ir"], capture_output=True, text=True)
        if ir.returncode != 0:
            tally.report(expr, [f"--emit=ir: {ir.stderr[-1500:]}"])
            continue
        if "kernel k" in ir.stdout or "\n  k0" in ir.stdout:
            tally.report(expr, [f"a kernel for a view:\n{ir.stdout}"])
            continue
        p, doc, out_dir = tdslc_run(tdslc, body, ["--fn", "f"], backend=backend,
                                    inputs={"z": value("c64", (2, 3, 4))})
        run_cleanup(out_dir)
        if p.returncode != 0:
            tally.report(expr, [p.stderr.decode()[-1500:]])
            continue
        o = doc["outputs"][0]
        if o["strides"] != strides or o["offset"] != offset or o["storage"] != "input:z":
            tally.report(expr, [f"strides {o['strides']} offset {o['offset']} storage {o['storage']}, "
                                f"want {strides} {offset} input:z"])
        else:
            tally.report(expr, [])


def check_print(tdslc, backend, tally):
    """`tdslc run`'s printed results: PyTorch 1.13's text for these values."""
    src = ("fn f(a: f32[3], b: f32[3], c: f64[2]) -> (c64[3], c128[2], c64[]) {\n"
           "  return torch.complex(a, b), torch.complex(c, c * 2), torch.complex(a[0], b[1])\n}")
    inputs = {"a": np.array([1, -0.5, 0], np.float32), "b": np.array([2, -3.25, 3], np.float32),
              "c": np.array([1.5, 2], np.float64)}
    want = ["out0 = tensor([ 1.0000+2.0000j, -0.5000-3.2500j,  0.0000+3.0000j])",
            "out1 = tensor([1.5000+3.j, 2.0000+4.j], dtype=torch.complex128)", "out2 = tensor(1.-3.2500j)"]
    p, _, out_dir = tdslc_run(tdslc, src, ["--fn", "f"], backend=backend, inputs=inputs, json_out=False)
    run_cleanup(out_dir)
    text = p.stdout.decode()
    p, doc, out_dir = tdslc_run(tdslc, src, ["--fn", "f"], backend=backend, inputs=inputs)
    run_cleanup(out_dir)
    data = [o["data"] for o in doc["outputs"]] if doc else None
    tally.report("run --json: [real, imaginary] pairs",
                 [] if data == [[[1.0, 2.0], [-0.5, -3.25], [0.0, 3.0]], [[1.5, 3.0], [2.0, 4.0]], [[1.0, -3.25]]]
                 else [f"data {data}"])
    for w in want:
        if w in text:
            tally.report(f"print {w}", [])
        else:
            tally.report("print", [f"missing {w!r} in:\n{text}"])


def check_errors(tdslc, tally):
    for expr, msg in ERRORS:
        src = f"fn f(z: c64[2, 3], x: f32[4, 3, 4], k: i64[3]) {{\n  return {expr}\n}}"
        if expr.startswith("store:"):  # a statement
            expr = expr[len("store:"):]
            src = f"fn f(z: c64[2, 3], x: f32[4, 3, 4], k: i64[3]) -> c64[2, 3] {{\n  y = z.clone()\n  {expr}\n  return y\n}}"
        p = emit_text(tdslc, src, "ir")
        err = p.stderr
        if p.returncode != 1 or "error:" not in err or (msg and msg not in err):
            tally.report(expr, [f"exit {p.returncode}, want 1 and {msg!r}:\n{err[-1500:]}"])
        else:
            tally.report(f"error {expr}", [])


# the grid of check_math: every (a, b) of these, then random points
EDGE = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1e-3, -4e-3, 30.0, -1e9, np.inf, -np.inf, np.nan]
UNARY = {"log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt, "rsqrt": lambda z: 1 / np.sqrt(z),
         "reciprocal": lambda z: 1 / z, "square": lambda z: z * z, "exp": np.exp,
         "sgn": lambda z: sgn(z), "sin": np.sin, "cos": np.cos, "tan": np.tan,
         "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos,
         "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
         "sigmoid": lambda z: 1 / (1 + np.exp(-z))}


def sgn(z):
    """torch.sgn: 0 at 0, else each part divided by |z| (a real division, as c10::complex's)."""
    m = np.abs(z)
    r = np.zeros_like(z)
    r.real, r.imag = np.where(m == 0, 0, z.real / m), np.where(m == 0, 0, z.imag / m)
    return r


def same_values(got, want, tol):
    """Part by part: nan where want is nan, the same infinities, a zero of want's sign
    (or within tol), else within tol relative. Returns the flat index of the first
    difference, or None."""
    g, w = np.asarray(got).ravel(), np.asarray(want).ravel()
    if np.iscomplexobj(g) and not np.iscomplexobj(w):
        w = w.astype(g.dtype)
    if g.dtype == bool or w.dtype == bool:
        bad = np.nonzero(g != w)[0]
        return bad[0] if len(bad) else None
    for parts in ((g.real, w.real), (g.imag, w.imag)) if np.iscomplexobj(w) else ((g, w),):
        a, b = (np.asarray(q).astype(np.float64) for q in parts)
        with np.errstate(invalid="ignore", over="ignore"):
            ok = np.where(np.isnan(b), np.isnan(a),
                          np.where(np.isinf(b), a == b,
                                   np.where(b == 0, (np.abs(a) <= tol) & ((a != 0) | (np.signbit(a) == np.signbit(b))),
                                            np.abs(a - b) <= tol * (1 + np.abs(b)))))
        bad = np.nonzero(~ok)[0]
        if len(bad):
            return bad[0]
    return None


def check_math(tdslc, backend, tally):
    with np.errstate(all="ignore"):  # NumPy's own warnings of its edge values
        check_math_values(tdslc, backend, tally)


def check_math_values(tdslc, backend, tally):
    # 15 x 18: the grid's 225 points and 45 random ones, as 2-D tensors (the backends'
    # vector loops, which a 1-D tensor of this size gets, would make the C a few times
    # larger: `r` below, 1-D, takes that path for a few of the functions)
    grid = np.array([complex(a, b) for a in EDGE for b in EDGE])
    r = np.random.default_rng(31)
    rnd = r.uniform(-3, 3, 45) + 1j * r.uniform(-3, 3, 45)
    zg = np.concatenate([grid, rnd]).reshape(15, 18)
    n = zg.size
    w = (r.uniform(-2, 2, n) + 1j * r.uniform(-2, 2, n))
    w[::7], w[::11], w[::13], w[::17] = 2, 0, -1, 3  # NumPy's integer exponents among them
    w = w.reshape(15, 18)
    ins = {"z": zg.astype(np.complex64), "y": zg, "w": w.astype(np.complex64), "v": w, "x": r.uniform(
        -2, 2, (15, 18)).astype(np.float32), "k": np.array([3, 0]), "m": r.uniform(size=5) < 0.5,
        "zz": value("c64", (3, 5)), "yy": value("c128", (3, 5)), "r": value("c64", (40,)) * 3}
    z, y, w, v, x, k, m, zz, yy, r1 = (ins[q] for q in ["z", "y", "w", "v", "x", "k", "m", "zz", "yy", "r"])
    shape = "15, 18"
    outs = []  # (expression, result type, NumPy's value)
    for op, f in UNARY.items():
        for name, dt in (("z", "c64"), ("y", "c128")):
            outs.append((f"torch.{op}({name})", f"{dt}[{shape}]", f(ins[name])))
    outs += [("zz.log() * zz.rsqrt() + torch.arctanh(zz)", "c64[3, 5]", np.log(zz) / np.sqrt(zz) + np.arctanh(zz)),
             ("torch.exp(r) + torch.atanh(r) + r.sqrt()", "c64[40]", np.exp(r1) + np.arctanh(r1) + np.sqrt(r1))]
    c5 = f"c64[{shape}]"
    outs += [
        # an inf or nan base with a non-integer exponent: C99's complex multiply recovers
        # infinities that exp(w log z) does not (docs/language.md)
        ("torch.where(z.isfinite(), z, 1) ** w", c5, np.where(np.isfinite(z), z, 1) ** w),
        ("torch.where(y.isfinite(), y, 1) ** v", f"c128[{shape}]", np.where(np.isfinite(y), y, 1) ** v),
        ("z ** w.real.round()", c5, z ** np.round(w.real)), ("z ** 2", c5, z ** 2), ("y ** -3", f"c128[{shape}]", y ** -3),
        ("z ** 0", c5, z ** 0), ("w ** 0.5", c5, w ** 0.5), ("2 ** w", c5, 2 ** w), ("x ** w", c5, x.astype(np.complex64) ** w),
        ("w ** x", c5, w ** x.astype(np.complex64)), ("torch.pow(v, 7)", f"c128[{shape}]", v ** 7), ("w.pow(w)", c5, w ** w),
        ("z == w", f"bool[{shape}]", z == w), ("z != z", f"bool[{shape}]", z != z), ("torch.eq(y, v)", f"bool[{shape}]", y == v),
        ("z == 2", f"bool[{shape}]", z == 2), ("y.ne(1j)", f"bool[{shape}]", y != 1j),
        ("torch.isnan(z)", f"bool[{shape}]", np.isnan(z)), ("y.isinf()", f"bool[{shape}]", np.isinf(y)),
        ("torch.isfinite(z)", f"bool[{shape}]", np.isfinite(z)),
        ("zz.prod()", "c64[]", zz.prod()), ("zz.prod(0)", "c64[5]", zz.prod(0)), ("yy.prod(1, keepdim=True)",
                                                                                "c128[3, 1]", yy.prod(1, keepdims=True)),
        ("torch.prod(zz[:, :0], 1)", "c64[3]", np.ones(3)), ("zz.cumsum(1)", "c64[3, 5]", zz.cumsum(1)),
        ("torch.cumsum(yy, 0)", "c128[3, 5]", yy.cumsum(0)), ("zz.cumprod(-1)", "c64[3, 5]", np.cumprod(zz, -1)),
        ("torch.cumprod(yy, dim=0)", "c128[3, 5]", np.cumprod(yy, 0)),
        ("w.float()", f"f32[{shape}]", w.real), ("v.to(torch.float64)", f"f64[{shape}]", v.real), ("z.bool()", f"bool[{shape}]", z.real != 0),
        ("w.to(torch.int32)", f"i32[{shape}]", w.real.astype(np.int32)), ("w.type_as(x)", f"f32[{shape}]", w.real),
        ("w * 1j", c5, w * 1j), ("x * 2.5j", c5, x * np.complex64(2.5j)), ("1j * 1j + w", c5, -1 + w),
        ("w * complex(1, -2)", c5, w * (1 - 2j)), ("x.double() + 1e-3J", f"c128[{shape}]", x.astype(np.float64) + 1e-3j),
        ("(x + 1j) / (2 - 1j)", c5, (x + 1j) / (2 - 1j)),
        ("zz[:, k]", "c64[3, 2]", zz[:, k]), ("yy.index_select(1, k)", "c128[3, 2]", yy[:, k]),
        ("zz[:1].gather(1, k[None])", "c64[1, 2]", np.take_along_axis(zz[:1], k[None], 1)),
        ("a", "c64[5]", None), ("b", "f32[5]", None), ("c", "c128[3, 5]", None),
    ]
    # the writes: a, b, c (their NumPy values below)
    body = ["a = zz[0].clone()", "a[1:3] = x[0, :2]", "a[0] = 2", "a[k] = 1j", "a[m] += 1", "a[3:] *= w[0, :2]",
            "b = x[0, :5].clone()", "b[1:] = w[0, :4]", "b[k] = w[0, :2] * 1j", "c = yy.clone()", "c[m[:3]] = 0",
            "c[:, k] = v[0, :6].reshape(3, 2)", "c.index_put_((k[1:],), v[0, :5].reshape(1, 5))", "c[2] = x[0, :5]"]
    a = zz[0].copy()
    a[1:3] = x[0, :2]
    a[0] = 2
    a[k] = 1j
    a[m] += 1
    a[3:] *= w[0, :2]
    b = x[0, :5].copy()
    b[1:] = w[0, :4].real
    b[k] = (w[0, :2] * 1j).real
    c = yy.copy()
    c[m[:3]] = 0
    c[:, k] = v[0, :6].reshape(3, 2)
    c[k[1:]] = v[0, :5]
    c[2] = x[0, :5]
    want_writes = {"a": a, "b": b, "c": c}
    params = ("z: c64[{n}], y: c128[{n}], w: c64[{n}], v: c128[{n}], x: f32[{n}], k: i64[2], m: bool[5], "
              "zz: c64[3, 5], yy: c128[3, 5], r: c64[40]").format(n=shape)
    lines = "".join(f"  {line}\n" for line in body)
    src = (f"fn f({params}) -> ({', '.join(t for _, t, _ in outs)}) {{\n{lines}"
           f"  return {', '.join(e for e, _, _ in outs)}\n}}")
    p, _, out_dir = tdslc_run(tdslc, src, ["--fn", "f"], backend=backend, inputs=ins, json_out=False)
    try:
        if p.returncode != 0:
            tally.report("math", [f"exit {p.returncode}: {p.stderr.decode()[-3000:]}"])
            return
        warned = p.stderr.decode().count("warning: Casting complex values to real discards the imaginary part")
        tally.check("math: the casts and writes of complex to real warn (7 of them)", warned == 7,
                    f"{warned} warnings:\n{p.stderr.decode()[-3000:]}")
        for i, (expr, t, want) in enumerate(outs):
            want = want_writes[expr] if want is None else want
            got = np.load(os.path.join(out_dir, f"out{i}.npy"))
            dt, shape = t.split("[")
            shape = tuple(int(d) for d in shape[:-1].split(", ") if d)
            if got.dtype != np.dtype(NP[dt]) or got.shape != shape:
                tally.report(expr, [f"{got.dtype}{got.shape}, want {np.dtype(NP[dt])}{shape}"])
                continue
            tol = 1e-12 if dt in ("c128", "f64") else 2e-5
            bad = same_values(got, want, tol)
            tally.report(f"math {expr}", [] if bad is None else [
                f"at {bad}" + (f" (z = {zg.ravel()[bad]})" if got.size == n else "") +
                f": got {got.ravel()[bad]}, NumPy {np.asarray(want).ravel()[bad]}"])
    finally:
        run_cleanup(out_dir)
    if backend in (None, "llvm"):  # the GPU backends compile the same graph: its CUDA C through nvcc once
        check_gpu_compile(tdslc, src, tally)


def check_gpu_compile(tdslc, src, tally):
    ptx = emit_text(tdslc, src, "ptx", ["--fn", "f", "--target", "cuda"])
    tally.report("math --emit=ptx", [] if ptx.returncode == 0 else [f"exit {ptx.returncode}: {ptx.stderr[-2000:]}"])
    cu = emit_text(tdslc, src, "cuda", ["--fn", "f", "--target", "cuda"])
    if cu.returncode != 0:
        tally.report("math --emit=cuda", [f"exit {cu.returncode}: {cu.stderr[-2000:]}"])
        return
    nvcc = "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        tally.report("math --emit=cuda (nvcc missing: emitted, not compiled)", [])
        return
    d = tempfile.mkdtemp(prefix="tdsl-cx-cu-")
    try:
        path = os.path.join(d, "m.cu")
        with open(path, "w") as f:
            f.write(cu.stdout)
        inc = subprocess.run([tdslc, "--print-include-dir"], capture_output=True, text=True).stdout.strip()
        c = subprocess.run([nvcc, "-arch=compute_90", "--ptx", "-Werror", "all-warnings", "-I", inc, path, "-o",
                            os.path.join(d, "m.ptx")], capture_output=True, text=True, timeout=600)
        tally.report("math --emit=cuda compiles with nvcc", [] if c.returncode == 0 else [c.stderr[-3000:]])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    tdslc = sys.argv[1]
    backend = require_backend(tdslc)
    tally = Tally()
    for case in CASES[::test_subset()]:  # the sanitizer pass: a subset
        check_case(tdslc, backend, tally, *case)
    check_views(tdslc, backend, tally)
    check_print(tdslc, backend, tally)
    check_errors(tdslc, tally)
    check_math(tdslc, backend, tally)
    sys.exit(tally.summary(recap=True))


if __name__ == "__main__":
    main()
