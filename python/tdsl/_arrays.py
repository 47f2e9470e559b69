# python/tdsl/_arrays.py: arrays in and out of a compiled function, without copies.
#
# In: a NumPy array, anything with __array_interface__ / __array_struct__, or a
# DLPack producer (a torch CPU tensor) is seen as a NumPy array of the same memory;
# its buffer is wrapped in a tdsl storage (tdsl_storage_wrap: tdsl never frees it) and
# its byte strides become element strides. Only an array that tdsl cannot address
# (misaligned, non-native byte order, a stride that is not a multiple of the element
# size) or an object that is no array at all (a list, a Python scalar: made an array of
# the parameter's dtype) is copied first, and a
# 'mut' argument is never copied: it must be addressable and writeable.
# Out: a result that shares an argument's storage (a returned view) is a NumPy view of
# that argument's memory with tdsl's strides; any other result is a NumPy array over
# the tdsl storage the function made, which it owns: the storage is released when the
# array (through its base, an _Owner) is collected.
#
# Scalar parameters (`eps: float`, `n: int`, `on: bool`): a Python number, a NumPy
# scalar or a 0-d array, converted as Python converts (an int or a bool to a float, a
# bool to an int; nothing else) into the 0-d f64/i64/bool tensor the entry's packed
# caller reads the value from.
#
# bf16: NumPy has no bfloat16. A bf16 parameter takes a uint16 array of the bit
# patterns (or a torch.bfloat16 tensor, whose bits are read in place); bf16 results are
# uint16 arrays of the bit patterns (tdsl.bf16_to_f32 widens them).
import ctypes

import numpy as np

from . import _native
from ._native import DTYPES, Tensor, lib

NUMPY_DTYPES = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16, "bf16": np.uint16,
                "f32": np.float32, "f64": np.float64, "u8": np.uint8, "i8": np.int8, "i16": np.int16,
                "c64": np.complex64, "c128": np.complex128}
_TDSL_OF = {np.dtype(v): DTYPES.index(k) for k, v in NUMPY_DTYPES.items()}


class ArgumentError(ValueError):
    """An argument of the wrong dtype or shape, or one tdsl cannot use as given."""


def type_text(dtype, shape):
    return "%s[%s]" % (dtype, ", ".join(str(n) for n in shape))


def as_numpy(x, dtype):
    """x as a NumPy array of the same memory where it can be: (array, from_dlpack).
    What is no array (a list, a Python scalar) becomes a new array of the parameter's dtype."""
    if isinstance(x, np.ndarray):
        return x, False
    if hasattr(x, "__array_interface__") or hasattr(x, "__array_struct__"):
        return np.asarray(x, dtype=NUMPY_DTYPES[dtype]), False
    if hasattr(x, "__dlpack__"):
        if str(getattr(x, "dtype", "")) == "torch.bfloat16":
            import torch  # only a torch tensor gets here
            return np.from_dlpack(x.detach().view(torch.int16)).view(np.uint16), True
        return np.from_dlpack(x.detach() if hasattr(x, "detach") else x), True
    return np.asarray(x, dtype=NUMPY_DTYPES[dtype]), False


def _addressable(a):
    item = a.dtype.itemsize
    return a.dtype.isnative and a.flags.aligned and all(s % item == 0 for s in a.strides)


class Arg:
    """One argument wrapped for a call: its tdsl_tensor over the array's memory."""

    def __init__(self, fn_name, param, x):
        name, dtype, shape, mut = param
        a, dlpack = as_numpy(x, dtype)
        if a.dtype.newbyteorder("=") not in _TDSL_OF:
            raise ArgumentError("%s: argument '%s' must be %s but is %s" % (
                fn_name, name, type_text(dtype, shape), type_text(a.dtype.name, a.shape)))
        if not _addressable(a):
            if mut:
                raise ArgumentError("%s: argument '%s' is 'mut' but its array cannot be written in place "
                                    "(misaligned, byte-swapped or with strides that are not whole elements)"
                                    % (fn_name, name))
            a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
        if mut and not a.flags.writeable and not dlpack:
            raise ArgumentError("%s: argument '%s' is 'mut' but its array is read-only" % (fn_name, name))
        self.array = a
        self.writeable = a.flags.writeable or dlpack  # NumPy marks DLPack arrays read-only
        item = a.dtype.itemsize
        lo = hi = 0
        if a.size:
            lo = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
            hi = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s > 0) + item
        ptr = a.__array_interface__["data"][0]
        t = Tensor()
        t.storage = lib.tdsl_storage_wrap(ptr + lo, hi - lo)
        if not t.storage:
            raise MemoryError(_native.last_error())
        t.dtype = _TDSL_OF[a.dtype]
        t.ndim = a.ndim  # more than MAX_DIMS: the entry reports "a tensor of N dims"
        for i in range(min(a.ndim, _native.MAX_DIMS)):
            t.shape[i] = a.shape[i]
            t.strides[i] = a.strides[i] // item
        t.offset = -lo // item
        self.tensor = t

    def release(self):
        lib.tdsl_tensor_release(ctypes.byref(self.tensor))


_SCALAR_DTYPES = {"float": np.float64, "int": np.int64, "bool": np.bool_}
_ACCEPTS = {"float": ("float", "int", "bool"), "int": ("int", "bool"), "bool": ("bool",)}


def scalar_arg(fn_name, name, kind, x):
    """The Arg of a scalar parameter `name: kind` (float, int or bool) from x."""
    if isinstance(x, int) and not isinstance(x, bool):
        got, value = "int", x  # a Python int, of any size
    else:
        if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
            if str(getattr(x, "dtype", "")) == "torch.bfloat16":
                x = x.float()  # as_numpy would give bf16's bits
            try:
                a = as_numpy(x, "f64")[0]
            except (BufferError, RuntimeError, TypeError):  # a dtype DLPack lacks (torch.bool)
                a = np.asarray(x)
        elif isinstance(x, (bool, float, complex, np.generic, np.ndarray)) or hasattr(x, "__array_interface__") \
                or hasattr(x, "__array_struct__"):
            a = np.asarray(x)
        else:
            raise TypeError("argument '%s' of '%s' must be %s, not %s" % (name, fn_name, kind, type(x).__name__))
        if a.ndim:
            raise ArgumentError("argument '%s' of '%s' must be %s, not an array of shape %s" % (
                name, fn_name, kind, a.shape))
        got = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}.get(a.dtype.kind, a.dtype.name)
        value = a.item()
    if got not in _ACCEPTS[kind]:
        raise TypeError("argument '%s' of '%s' must be %s, not %s" % (name, fn_name, kind, got))
    if kind == "int" and not -2**63 <= value < 2**63:
        raise ArgumentError("argument '%s' of '%s' must be a 64-bit int, not %d" % (name, fn_name, value))
    dtype = np.dtype(_SCALAR_DTYPES[kind])
    return Arg(fn_name, (name, DTYPES[_TDSL_OF[dtype]], (), False), np.array(value, dtype=dtype))


class _Owner:
    """The base of a result array: its memory, and what keeps that memory alive
    (the tdsl tensor it releases when collected, or the argument it views)."""

    def __init__(self, ptr, dtype, shape, strides, readonly, tensor=None, keep=None):
        self.__array_interface__ = {"version": 3, "data": (ptr, readonly), "typestr": dtype.str,
                                    "shape": shape, "strides": strides}
        self._tensor = tensor
        self._keep = keep

    def __del__(self):
        if self._tensor is not None and lib is not None:
            lib.tdsl_tensor_release(ctypes.byref(self._tensor))
            self._tensor = None


def result(t, args):
    """The NumPy array of result t (a tdsl_tensor the caller gives up)."""
    dtype = np.dtype(NUMPY_DTYPES[DTYPES[t.dtype]])
    item = dtype.itemsize
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] * item for i in range(t.ndim))
    storage = ctypes.cast(t.storage, ctypes.c_void_p).value
    ptr = (t.storage.contents.data or 0) + t.offset * item
    for arg in args:
        if ctypes.cast(arg.tensor.storage, ctypes.c_void_p).value == storage:
            lib.tdsl_tensor_release(ctypes.byref(t))
            owner = _Owner(ptr, dtype, shape, strides, not arg.writeable, keep=arg.array)
            return np.asarray(owner)
    return np.asarray(_Owner(ptr, dtype, shape, strides, False, tensor=t))
