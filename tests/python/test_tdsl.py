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
    assert str(e.value) == "affine: argument 'b' must be f32[3] but is complex64[3]"
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
