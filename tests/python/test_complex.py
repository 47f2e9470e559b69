# tests/python/test_complex.py: NumPy's complex64 and complex128 arrays through the Python
# package (python/tdsl): complex arguments (contiguous or not), complex results, a
# returned part that views the argument's memory, a 'mut' complex argument written back;
# values checked against NumPy's complex arithmetic.
import os

import numpy as np

import tdsl

SRC = """\
fn rot(z: c64[3, 4], w: c64[4]) -> (c64[3, 4], f32[3, 4], c128[4]) {
    return z * w + 1, z.imag, w.to(torch.cdouble) / 2
}
fn spin(mut z: c128[5], x: f64[5]) -> c128[5] {
    z += torch.polar(x, x)
    return z.conj()
}
"""


def compiled(tmp_path, fn):
    path = tmp_path / "cx.tdsl"
    path.write_text(SRC)
    return tdsl.compile(str(path), fn=fn)


def crand(r, shape, dtype):
    return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dtype)


def test_complex_arguments_and_results_match_numpy(tmp_path):
    f = compiled(tmp_path, "rot")
    r = np.random.default_rng(3)
    z, w = crand(r, (3, 4), np.complex64), crand(r, (4,), np.complex64)
    a, im, h = f(z, w)
    assert a.dtype == np.complex64 and im.dtype == np.float32 and h.dtype == np.complex128
    np.testing.assert_allclose(a, z * w + 1, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(im, z.imag)
    np.testing.assert_allclose(h, w.astype(np.complex128) / 2, rtol=1e-12)
    assert np.shares_memory(im, z)  # .imag is a view of the argument


def test_non_contiguous_complex_arguments_are_read_through_their_strides(tmp_path):
    f = compiled(tmp_path, "rot")
    r = np.random.default_rng(4)
    big = crand(r, (4, 6), np.complex64)
    z, w = big.T[1:5, :3].T, big[2, ::-1][:4]
    a, _, _ = f(z, w)
    np.testing.assert_allclose(a, z * w + 1, rtol=1e-5, atol=1e-6)


def test_a_mut_complex_argument_is_updated_in_place(tmp_path):
    f = compiled(tmp_path, "spin")
    r = np.random.default_rng(5)
    z0 = crand(r, (5,), np.complex128)
    z, x = z0.copy(), r.standard_normal(5)
    c = f(z, x)
    want = z0 + x * np.exp(1j * x)
    np.testing.assert_allclose(z, want, rtol=1e-12)
    np.testing.assert_allclose(c, np.conj(want), rtol=1e-12)
