# tests/python/test_complex.py: NumPy's complex64 and complex128 arrays through the Python
# package (python/tdsl): complex arguments (contiguous or not), complex results, a
# returned part that views the argument's memory, a 'mut' complex argument written back;
# log, sqrt, pow, atanh, isfinite, imaginary literals and writes (complex into a real
# 'mut' argument, a mask write); values checked against NumPy's complex arithmetic.
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


def test_zero_dim_zero_size_and_strided_mut_complex_arguments(tmp_path):
    path = tmp_path / "z.tdsl"
    path.write_text("""\
fn f(z: c64[], w: c64[3], e: c64[0, 2]) -> (c64[3], c64[], c64[0, 2], f32[0, 2, 2], c64[2]) {
    return z * w, z.conj(), e * 2, torch.view_as_real(e), e.sum(0)
}
fn g(mut z: c128[2, 3], w: c128[3]) -> c128[3] {
    z[0] *= w
    return z[1] / w
}
""")
    f = tdsl.compile(str(path), fn="f")
    z, w, e = np.array(1 + 2j, np.complex64), (np.arange(3) + 1j).astype(np.complex64), np.zeros((0, 2), np.complex64)
    a, c, e2, er, s = f(z, w, e)
    np.testing.assert_allclose(a, z * w, rtol=1e-6)
    assert c == np.conj(z) and e2.shape == (0, 2) and er.shape == (0, 2, 2) and er.dtype == np.float32
    np.testing.assert_array_equal(s, np.zeros(2, np.complex64))
    g = tdsl.compile(str(path), fn="g")
    big = (np.arange(12) + 1j * np.arange(12)[::-1]).reshape(3, 4)
    zz, w2 = big[:2, 1:], w.astype(np.complex128)  # a strided argument: copied in, written back
    want = zz.copy()
    want[0] *= w2
    r = g(zz, w2)
    np.testing.assert_allclose(zz, want, rtol=1e-12)
    np.testing.assert_allclose(r, want[1] / w2, rtol=1e-12)


def test_complex_functions_literals_and_writes_match_numpy(tmp_path):
    path = tmp_path / "m.tdsl"
    path.write_text("""\
fn h(z: c128[6], x: f64[6], mut y: f32[6]) -> (c128[6], c128[6], c128[6], bool[6], c128[6]) {
    y[:3] = z[:3]
    u = z.clone()
    u[x > 0] = x * 2j
    return torch.log(z) + torch.sqrt(z), z ** 3 - x ** z, torch.atanh(z) * 1j, torch.isfinite(z / x), u
}
""")
    h = tdsl.compile(str(path), fn="h")
    z = np.array([1 + 2j, -0.5 - 1j, complex(-2, 0.0), complex(-2, -0.0), 0j, 3j])
    x = np.array([1.0, -2.0, 0.5, 3.0, 0.0, -1.0])
    y = np.zeros(6, np.float32)
    a, b, c, d, u = h(z, x, y)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(a, np.log(z) + np.sqrt(z), rtol=1e-12)  # log(0): -inf + 0j
        assert np.signbit(a[3].imag) and not np.signbit(a[2].imag)  # the branch cut's sides, by the zero's sign
        np.testing.assert_allclose(b, z ** 3 - x.astype(complex) ** z, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c, np.arctanh(z) * 1j, rtol=1e-12)
        np.testing.assert_array_equal(d, np.isfinite(z / x))
    np.testing.assert_array_equal(y, np.r_[z[:3].real, 0, 0, 0].astype(np.float32))
    want = z.copy()
    want[x > 0] = (x * 2j)[x > 0]
    np.testing.assert_array_equal(u, want)
