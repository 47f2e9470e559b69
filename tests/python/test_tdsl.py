# tests/python/test_tdsl.py: the Python package tdsl (python/tdsl), run by pytest from
# ctest (python.pytest) with PYTHONPATH=build/python and TDSLC=build/tdslc. Results
# are checked against NumPy; messages and emitted texts against what tdslc itself
# prints for the same file; zero-copy through np.shares_memory and the arrays' bases.
import gc
import os
import subprocess

import numpy as np
import pytest

import tdsl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TDSLC = os.environ.get("TDSLC", os.path.join(ROOT, "build", "tdslc"))

ABI = """\
fn affine(x: f32[4, 8], w: f32[8, 3], b: f32[3]) -> f32[4, 3] {
    return (x @ w + b).relu()
}
fn tr(x: f32[2, 3]) -> f32[3, 2] {
    return x.t()
}
fn bump(mut x: i32[4], d: i32[4]) -> (i32[4], i32[2]) {
    x += 1
    return x // d, x[1:3]
}
fn pick(x: f32[5], i: i64[3]) -> f32[3] {
    return x[i] * 2
}
fn halves(a: f16[3], b: bf16[3]) -> (f16[3], bf16[3]) {
    return a * 2, b + b
}
fn total(x: i64[2, 0], y: f64[]) -> (f64[], i64[2]) {
    return y * 3, x.sum(1)
}
"""


@pytest.fixture(scope="module")
def abi_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("abi") / "abi.tdsl"
    path.write_text(ABI)
    return str(path)


def tdslc(*args):
    return subprocess.run([TDSLC, *args], capture_output=True, text=True)


def rng():
    return np.random.default_rng(7)


# ---- results against NumPy ----
def test_a_fused_function_matches_numpy(abi_file):
    f = tdsl.compile(abi_file, fn="affine")
    r = rng()
    x, w, b = (r.standard_normal(s, dtype=np.float32) for s in ((4, 8), (8, 3), (3,)))
    np.testing.assert_allclose(f(x, w, b), np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_non_contiguous_and_flipped_arguments_are_read_through_their_strides(abi_file):
    f = tdsl.compile(abi_file, fn="affine")
    r = rng()
    x = r.standard_normal((8, 4), dtype=np.float32).T  # a transposed view
    w = r.standard_normal((16, 3), dtype=np.float32)[::-2]  # negative strides
    b = r.standard_normal(6, dtype=np.float32)[::2]
    np.testing.assert_allclose(f(x, w, b), np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_half_floats_and_bf16_bit_patterns(abi_file):
    f = tdsl.compile(abi_file, fn="halves")
    a = np.array([1.5, -2.25, 65504 / 4], dtype=np.float16)
    b = tdsl.f32_to_bf16(np.array([1.0, -3.5, 0.15625], dtype=np.float32))
    ra, rb = f(a, b)
    assert ra.dtype == np.float16 and rb.dtype == np.uint16
    np.testing.assert_array_equal(ra, a * 2)
    np.testing.assert_array_equal(tdsl.bf16_to_f32(rb), tdsl.bf16_to_f32(b) * 2)


def test_zero_dim_and_zero_size_arguments(abi_file):
    f = tdsl.compile(abi_file, fn="total")
    s, z = f(np.zeros((2, 0), dtype=np.int64), np.float64(2.5))
    assert s.shape == () and s == 7.5
    np.testing.assert_array_equal(z, np.zeros(2, dtype=np.int64))


def test_anything_with_array_interface_is_accepted(abi_file):
    class Wrapped:
        def __init__(self, a):
            self.a = a
            self.__array_interface__ = a.__array_interface__

    f = tdsl.compile(abi_file, fn="tr")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = f(Wrapped(x))
    np.testing.assert_array_equal(r, x.T)
    assert np.shares_memory(r, x)


# ---- zero copy ----
def test_returned_views_are_numpy_views_of_the_argument():
    f = tdsl.compile(os.path.join(ROOT, "examples", "storage_views.tdsl"), fn="views")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    want = [x.reshape(-1), x.T, x[:, ::2], x[-1], x[:, None, :], np.broadcast_to(x, (2, 3, 4)), x,
            x.T[1:, 1:].T.reshape(2, 1, 3)]
    got = f(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert np.shares_memory(g, x)
    assert got[1].strides == x.T.strides  # tdsl's strides, as NumPy's
    x[2, 3] = 100  # the views see writes to x
    assert got[3][3] == 100 and got[1][3, 2] == 100


def test_results_own_tdsl_storage(abi_file):
    f = tdsl.compile(abi_file, fn="affine")
    x, w, b = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32), np.ones(3, np.float32)
    y = f(x, w, b)
    owner = y.base
    assert type(owner).__name__ == "_Owner" and owner._tensor is not None
    assert not any(np.shares_memory(y, a) for a in (x, w, b))
    assert y.flags.writeable and y.flags.c_contiguous
    view = y[1:]
    del y, owner
    gc.collect()
    np.testing.assert_array_equal(view, np.full((3, 3), 9, np.float32))  # the storage lives while a view does


def test_mut_arguments_are_updated_in_place(abi_file):
    f = tdsl.compile(abi_file, fn="bump")
    x = np.array([1, 2, 3, 4], dtype=np.int32)
    q, v = f(x, np.full(4, 2, np.int32))
    np.testing.assert_array_equal(x, [2, 3, 4, 5])
    np.testing.assert_array_equal(q, [1, 1, 2, 2])
    np.testing.assert_array_equal(v, [3, 4])
    assert np.shares_memory(v, x)
    # a strided 'mut' argument is copied in and written back (LANGUAGE.md §8)
    base = np.arange(8, dtype=np.int32)
    f(base[::2], np.ones(4, np.int32))
    np.testing.assert_array_equal(base, [1, 1, 3, 3, 5, 5, 7, 7])


def test_a_read_only_mut_argument_is_refused(abi_file):
    f = tdsl.compile(abi_file, fn="bump")
    x = np.zeros(4, np.int32)
    x.flags.writeable = False
    with pytest.raises(tdsl.ArgumentError, match="argument 'x' is 'mut' but its array is read-only"):
        f(x, np.ones(4, np.int32))


# ---- torch CPU tensors, through DLPack ----
def test_torch_tensors_are_used_without_copies(abi_file):
    torch = pytest.importorskip("torch")
    f = tdsl.compile(abi_file, fn="tr")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    r = f(t)
    np.testing.assert_array_equal(r, t.numpy().T)
    assert np.shares_memory(r, t.numpy()) and r.flags.writeable
    g = tdsl.compile(abi_file, fn="bump")
    x = torch.tensor([1, 2, 3, 4], dtype=torch.int32)
    g(x, torch.full((4,), 2, dtype=torch.int32))
    assert x.tolist() == [2, 3, 4, 5]
    h = tdsl.compile(abi_file, fn="halves")
    _, rb = h(torch.ones(3, dtype=torch.float16), torch.tensor([1.5, 2, -3], dtype=torch.bfloat16))
    np.testing.assert_array_equal(tdsl.bf16_to_f32(rb), [3, 4, -6])


# ---- errors: the CLI's messages ----
def test_wrong_dtype_and_shape_name_both_types(abi_file):
    f = tdsl.compile(abi_file, fn="affine")
    x, w, b = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32), np.ones(3, np.float32)
    with pytest.raises(tdsl.ArgumentError) as e:
        f(x.astype(np.float64), w, b)
    assert str(e.value) == "affine: argument 'x' must be f32[4, 8] but is f64[4, 8]"
    with pytest.raises(tdsl.ArgumentError) as e:
        f(x, w, np.ones(4, np.float32))
    assert str(e.value) == "affine: argument 'b' must be f32[3] but is f32[4]"
    with pytest.raises(tdsl.ArgumentError) as e:
        f(x, w, np.ones(3, np.complex64))
    assert str(e.value) == "affine: argument 'b' must be f32[3] but is c64[3]"
    with pytest.raises(TypeError, match="takes 3 arguments but 2 were given"):
        f(x, w)


def test_a_data_error_has_the_message_tdslc_run_prints(abi_file, tmp_path):
    f = tdsl.compile(abi_file, fn="pick")
    x, i = np.arange(5, dtype=np.float32), np.array([0, 7, 1], dtype=np.int64)
    with pytest.raises(tdsl.DataError) as e:
        f(x, i)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "i.npy", i)
    cli = tdslc("run", abi_file, "--fn", "pick", "--in", "x=%s" % (tmp_path / "x.npy"), "--in",
                "i=%s" % (tmp_path / "i.npy"))
    assert cli.returncode == 3
    assert str(e.value) + "\n" == cli.stderr
    assert "error: index 7 is out of bounds for dimension 0 with size 5" in str(e.value)


def test_a_compile_error_is_located_as_tdslc_reports_it(tmp_path):
    path = tmp_path / "bad.tdsl"
    path.write_text("fn f(a: f32[3], b: f32[4]) -> f32[3] {\n    return a + b\n}\n")
    with pytest.raises(tdsl.CompileError) as e:
        tdsl.compile(str(path))
    err = e.value
    assert (err.file, err.line, err.col, err.status) == (str(path), 2, 14, 1)
    cli = tdslc(str(path))
    assert cli.returncode == 1 and err.text == cli.stderr
    assert "The size of tensor a (3) must match the size of tensor b (4)" in str(err)


def test_a_missing_function_is_a_compile_error_listing_them(abi_file):
    with pytest.raises(tdsl.CompileError) as e:
        tdsl.compile(abi_file, fn="nope")
    cli = tdslc(abi_file, "--emit=ir", "--fn", "nope")
    assert e.value.status == 2 == cli.returncode and e.value.text == cli.stderr
    assert e.value.line is None
    with pytest.raises(tdsl.CompileError, match="defines several functions"):
        tdsl.compile(abi_file)


# ---- emitted texts, the cache ----
@pytest.mark.parametrize("kind,method", [("ir", "ir"), ("kernels", "kernels"), ("c", "c_source")])
def test_texts_are_what_tdslc_emits(abi_file, kind, method):
    f = tdsl.compile(abi_file, fn="affine")
    cli = tdslc(abi_file, "--fn", "affine", "--emit=" + kind)
    assert cli.returncode == 0
    assert getattr(f, method)() == cli.stdout


def test_llvm_ir_is_the_jit_s_module(abi_file):
    text = tdsl.compile(abi_file, fn="affine").llvm_ir()
    assert "define" in text and "@affine(" in text


def test_the_same_source_compiles_once(abi_file):
    src = "fn add(a: f32[3], b: f32[3]) -> f32[3] {\n    return a + b\n}\n"
    f = tdsl.compile(source=src)
    assert tdsl.compile(source=src) is f
    assert tdsl.compile(source=src, opt=1) is not f
    assert tdsl.compile(abi_file, fn="tr") is tdsl.compile(abi_file, fn="tr")
    assert tdsl.compile(abi_file, fn="tr") is not tdsl.compile(abi_file, fn="affine")
    np.testing.assert_array_equal(f(np.ones(3, np.float32), np.arange(3, dtype=np.float32)), [1, 2, 3])
    np.testing.assert_array_equal(f([1, 2, 3], [0.5, 0.5, 0.5]), [1.5, 2.5, 3.5])  # lists: the parameter's dtype
    assert [repr(p) for p in f.params] == ["a: f32[3]", "b: f32[3]"]


# ---- generic functions (dims written as names) and scalar parameters ----
GENERIC = """\
fn rms(x: f32[N, D], w: f32[D], eps: float) -> f32[N, D] {
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
}
fn heads(x: f32[N, 4 * D], w: f32[D]) -> f32[N, 4, D] {
    return x.view(N, 4, D) * w
}
fn scale(x: f32[N], k: int, a: float, on: bool) -> f32[N] {
    return x * k + a * on
}
fn mix(x: i64[N], a: float) -> f32[N] {
    return x * a
}
"""


@pytest.fixture(scope="module")
def generic_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("generic") / "generic.tdsl"
    path.write_text(GENERIC)
    return str(path)


def rms_numpy(x, w, eps):
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + eps) * w


def test_a_generic_function_binds_its_dims_from_each_call(generic_file):
    f = tdsl.compile(generic_file, fn="rms")
    assert f.generic and f.dimvars == ["N", "D"] and f.dims == {}
    assert [repr(p) for p in f.params] == ["x: f32[N, D]", "w: f32[D]", "eps: float"]
    assert f.params[0].shape == ("N", "D") and f.params[2].scalar and f.outputs[0].shape == ("N", "D")
    r = rng()
    for n, d in ((4, 8), (2, 16), (1, 3)):
        x, w = r.standard_normal((n, d), dtype=np.float32), r.standard_normal(d, dtype=np.float32)
        y = f(x, w, 1e-5)
        assert y.shape == (n, d) and y.dtype == np.float32
        np.testing.assert_allclose(y, rms_numpy(x, w, 1e-5), rtol=1e-5, atol=1e-6)
    h = tdsl.compile(generic_file, fn="heads")
    assert [repr(p) for p in h.params] == ["x: f32[N, 4 * D]", "w: f32[D]"]
    assert h.outputs[0].shape == ("N", 4, "D")
    x, w = r.standard_normal((3, 8), dtype=np.float32), r.standard_normal(2, dtype=np.float32)
    np.testing.assert_array_equal(h(x, w), x.reshape(3, 4, 2) * w)
    with pytest.raises(tdsl.ArgumentError) as e:  # 4 * D checked by the entry, not solved
        h(np.ones((3, 10), np.float32), w)
    assert str(e.value) == "heads: argument 'x' must be f32[3, 8] but is f32[3, 10]"


def test_each_binding_compiles_once(generic_file):
    src = GENERIC + "\n# test_each_binding_compiles_once\n"  # its own cache entries
    f = tdsl.compile(source=src, fn="rms")
    before = len(tdsl._cache)
    r = rng()
    x, w = r.standard_normal((4, 8), dtype=np.float32), r.standard_normal(8, dtype=np.float32)
    f(x, w, 1e-5)
    assert len(tdsl._cache) == before + 1
    f(x[::-1], w * 2, 0.5)  # same shapes: the same compiled function
    f(r.standard_normal((8, 4), dtype=np.float32).T, w, 0.5)  # same binding through other strides
    assert len(tdsl._cache) == before + 1
    g = f.bind(N=4, D=8)
    assert not g.generic and g.dims == {"N": 4, "D": 8}
    assert g is f.bind({"N": 4, "D": 8}) is tdsl.compile(source=src, fn="rms", dims={"N": 4, "D": 8})
    assert len(tdsl._cache) == before + 1
    k = f.bind(N=2, D=8)
    assert k is not g and len(tdsl._cache) == before + 2
    np.testing.assert_allclose(f(x[:2], w, 0.5), rms_numpy(x[:2], w, 0.5), rtol=1e-5, atol=1e-6)
    assert len(tdsl._cache) == before + 2


def test_an_inconsistent_call_has_the_compiler_s_message(generic_file, tmp_path):
    f = tdsl.compile(generic_file, fn="rms")
    with pytest.raises(tdsl.ArgumentError) as e:
        f(np.ones((4, 8), np.float32), np.ones(16, np.float32), 1e-5)
    assert str(e.value) == "argument 'w' of 'rms' has size 16 at dim 0 but D is 8 from 'x'"
    bad = tmp_path / "bad.tdsl"  # the same call inside the language
    bad.write_text(GENERIC + "fn bad(a: f32[4, 8], b: f32[16]) -> f32[4, 8] {\n    return rms(a, b, 1e-5)\n}\n")
    cli = tdslc(str(bad), "--fn", "bad", "--emit=ir")
    assert cli.returncode == 1 and "error: " + str(e.value) + "\n" in cli.stderr
    with pytest.raises(tdsl.ArgumentError) as e:
        f(np.ones((4, 8, 2), np.float32), np.ones(8, np.float32), 1e-5)
    assert str(e.value) == "argument 'x' of 'rms' must be f32[N, D], not a tensor of 3 dims [4, 8, 2]"
    with pytest.raises(tdsl.ArgumentError) as e:  # dtypes: the bound entry's check
        f(np.ones((4, 8), np.float64), np.ones(8, np.float32), 1e-5)
    assert str(e.value) == "rms: argument 'x' must be f32[4, 8] but is f64[4, 8]"
    with pytest.raises(TypeError, match="takes 3 arguments but 2 were given"):
        f(np.ones((4, 8), np.float32), np.ones(8, np.float32))


def test_dims_bound_up_front(generic_file):
    g = tdsl.compile(generic_file, fn="rms", dims={"N": 4, "D": 8})
    assert not g.generic and g.dims == {"N": 4, "D": 8}
    assert [repr(p) for p in g.params] == ["x: f32[4, 8]", "w: f32[8]", "eps: float"]
    assert repr(g).endswith("-> f32[4, 8] with N=4, D=8>")
    x, w = rng().standard_normal((4, 8), dtype=np.float32), np.full(8, 2, np.float32)
    np.testing.assert_allclose(g(x, w, 1e-3), rms_numpy(x, w, 1e-3), rtol=1e-5, atol=1e-6)
    with pytest.raises(tdsl.ArgumentError, match=r"rms: argument 'x' must be f32\[4, 8\] but is f32\[2, 8\]"):
        g(x[:2], w, 1e-3)
    p = tdsl.compile(generic_file, fn="rms", dims={"N": 4})  # D still bound by each call
    assert p.generic and p.dims == {"N": 4} and repr(p.params[1]) == "w: f32[D]"
    assert p(x, w, 1e-3).shape == (4, 8)
    with pytest.raises(tdsl.ArgumentError) as e:
        p(x[:3], w, 1e-3)
    assert str(e.value) == "argument 'x' of 'rms' has size 3 at dim 0 but N is 4 from dims"
    with pytest.raises(TypeError, match=r"rms\(\) has no dim 'K' \(its dims: N, D\)"):
        tdsl.compile(generic_file, fn="rms", dims={"K": 3})
    with pytest.raises(TypeError, match=r"affine\(\) has no dim 'N' \(it is not generic\)"):
        tdsl.compile(source=ABI, fn="affine", dims={"N": 3})
    with pytest.raises(ValueError, match="dim N of rms\\(\\) must be >= 0"):
        tdsl.compile(generic_file, fn="rms", dims={"N": -1})


@pytest.mark.parametrize("kind,method", [("ir", "ir"), ("kernels", "kernels"), ("c", "c_source")])
def test_texts_of_a_generic_function_need_its_dims(generic_file, kind, method):
    f = tdsl.compile(generic_file, fn="rms")
    with pytest.raises(TypeError) as e:
        getattr(f, method)()
    assert str(e.value) == "rms() is generic and its dims N, D are unbound: give dims={'N': ..., 'D': ...}"
    with pytest.raises(TypeError, match="its dim D is unbound"):
        getattr(f, method)(dims={"N": 4})
    cli = tdslc(generic_file, "--fn", "rms", "--emit=" + kind, "--dim", "N=4", "--dim", "D=8")
    assert cli.returncode == 0
    assert getattr(f, method)(dims={"N": 4, "D": 8}) == cli.stdout
    assert getattr(f.bind(N=4, D=8), method)() == cli.stdout


def test_scalar_parameters_take_python_numbers(generic_file):
    f = tdsl.compile(generic_file, fn="scale")
    assert [repr(p) for p in f.params] == ["x: f32[N]", "k: int", "a: float", "on: bool"]
    x = rng().standard_normal(5, dtype=np.float32)
    for k, a, on in ((3, 0.25, True), (-2, 1e-3, False), (True, 7, True)):
        np.testing.assert_allclose(f(x, k, a, on), x * np.float32(k) + np.float32(a) * np.float32(on), rtol=1e-6)
    # NumPy scalars and 0-d arrays of any width are converted, not read as the entry's f64/i64
    got = f(x, np.int32(4), np.array(0.5, np.float32), np.array(True))
    np.testing.assert_allclose(got, x * 4 + np.float32(0.5), rtol=1e-6)
    got = f(x, np.array(2, np.int8), np.float16(1.5), np.bool_(False))
    np.testing.assert_allclose(got, x * 2, rtol=1e-6)
    # Python-scalar promotion: an i64 tensor times a float is f32, as in PyTorch
    m = tdsl.compile(generic_file, fn="mix")
    i = np.array([1, -3, 1 << 20], np.int64)
    y = m(i, 0.1)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, i.astype(np.float32) * np.float32(0.1), rtol=1e-6)


def test_a_scalar_argument_of_the_wrong_kind_is_refused(generic_file):
    f = tdsl.compile(generic_file, fn="scale")
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError) as e:
        f(x, 2, "0.5", True)
    assert str(e.value) == "argument 'a' of 'scale' must be float, not str"
    with pytest.raises(tdsl.ArgumentError) as e:
        f(x, 2, np.array([0.5, 1.0, 2.0]), True)
    assert str(e.value) == "argument 'a' of 'scale' must be float, not an array of shape (3,)"
    with pytest.raises(TypeError, match="argument 'k' of 'scale' must be int, not float"):
        f(x, 2.5, 0.5, True)
    with pytest.raises(TypeError, match="argument 'on' of 'scale' must be bool, not int"):
        f(x, 2, 0.5, 1)
    with pytest.raises(TypeError, match="argument 'a' of 'scale' must be float, not complex"):
        f(x, 2, 1j, True)
    with pytest.raises(tdsl.ArgumentError, match="argument 'k' of 'scale' must be a 64-bit int"):
        f(x, 2**64, 0.5, True)


def test_torch_scalars_and_generic_calls(generic_file):
    torch = pytest.importorskip("torch")
    f = tdsl.compile(generic_file, fn="scale")
    got = f(torch.arange(3, dtype=torch.float32), torch.tensor(2), torch.tensor(0.5, dtype=torch.bfloat16),
            torch.tensor(True))
    np.testing.assert_array_equal(got, [0.5, 2.5, 4.5])
    g = tdsl.compile(generic_file, fn="rms")
    x, w = torch.randn(3, 5), torch.rand(5) + 0.5
    np.testing.assert_allclose(g(x, w, 1e-5), rms_numpy(x.numpy(), w.numpy(), 1e-5), rtol=1e-5, atol=1e-6)


DEFAULTS_SRC = """
fn f(x: f32[N], eps: float = 1e-6, k: int = 2, flip: bool = false, scale=1 / 4, m: f32[N] | None = None) -> f32[N] {
    y = x * k + eps
    if m is not None {
        y = y + m
    }
    return torch.where(torch.tensor(flip), -y, y) * scale
}
"""


def test_parameters_left_out_take_their_defaults():
    f = tdsl.compile(source=DEFAULTS_SRC, fn="f")
    assert [p.default for p in f.params[1:5]] == [1e-6, 2, False, 0.25]
    assert [repr(p) for p in f.params[1:5]] == ["eps: float", "k: int", "flip: bool", "scale: float"]
    x, m = rng().standard_normal(5, dtype=np.float32), rng().standard_normal(5, dtype=np.float32)
    want = (x * np.float32(2) + np.float32(1e-6) + m) * np.float32(0.25)
    np.testing.assert_allclose(f(x, m=m), want, rtol=1e-6)
    np.testing.assert_allclose(f(x, k=3, m=m, flip=True), -(x * np.float32(3) + np.float32(1e-6) + m) * 0.25,
                               rtol=1e-6)
    np.testing.assert_allclose(f(x, 0.5, 1, False, 1.0, m), x + np.float32(0.5) + m, rtol=1e-6)
    with pytest.raises(TypeError, match=r"f\(\) missing 1 required positional argument: 'x'"):
        f(m=m)
    with pytest.raises(TypeError, match=r"f\(\): pass 'm': its default None"):
        f(x)
    with pytest.raises(TypeError, match=r"f\(\) got an unexpected keyword argument 'q'"):
        f(x, m=m, q=1)
    with pytest.raises(TypeError, match=r"f\(\) got multiple values for argument 'eps'"):
        f(x, 1.0, eps=2.0, m=m)
