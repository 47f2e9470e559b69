# python/tdsl/__init__.py: the Python package tdsl. tdsl.compile compiles one function
# of a .tdsl file or source text for this CPU with LLVM's JIT (as `tdslc run` does)
# and returns a Function; calling it with NumPy arrays (or torch CPU tensors, or
# anything with __array_interface__ or DLPack) runs it on their memory and returns
# NumPy arrays without copies (see _arrays.py for the rules). Compiled functions are
# cached in this process by the hash of (source, file name, function, -O level).
"""tdsl: compile .tdsl tensor functions and call them on NumPy arrays.

    f = tdsl.compile("model.tdsl", fn="block")
    g = tdsl.compile(source="fn add(a: f32[3], b: f32[3]) -> f32[3] { return a + b }")
    y = f(x, w)                 # NumPy arrays in, NumPy arrays out
    f.ir(), f.kernels(), f.c_source(), f.llvm_ir()   # what tdslc --emit=KIND prints
"""
import ctypes
import hashlib
import os
import re
import threading

import numpy as np

from . import _native
from ._arrays import ArgumentError, Arg, NUMPY_DTYPES, result, type_text
from ._native import DTYPES, lib

__all__ = ["compile", "Function", "Param", "CompileError", "DataError", "ArgumentError",
           "bf16_to_f32", "f32_to_bf16", "NUMPY_DTYPES"]


class CompileError(Exception):
    """An error in the program (or no such function): tdslc's messages, located.

    .file, .line, .col: where the first error is (line and col are None for an error
    without a place, such as a missing function); .status: tdslc's exit status;
    str(e): every message as tdslc prints them (file:line:col: error: ..., the line,
    the caret)."""

    def __init__(self, text, status, file):
        super().__init__(text.rstrip("\n"))
        self.text, self.status, self.file, self.line, self.col = text, status, file, None, None
        m = re.search(r"^(.*?):(\d+):(\d+): error: ", text, re.M)
        if m:
            self.file, self.line, self.col = m.group(1), int(m.group(2)), int(m.group(3))


class DataError(RuntimeError):
    """A run-time error in the data (an index out of range, an integer division by
    zero): the message `tdslc run` prints, FILE:line:col: error: MSG."""


class Param:
    """A parameter or a result of a Function: name, dtype (as tdsl spells it), shape, mut."""

    def __init__(self, name, dtype, shape, mut=False):
        self.name, self.dtype, self.shape, self.mut = name, dtype, tuple(shape), bool(mut)

    def __repr__(self):
        return "%s%s: %s" % ("mut " if self.mut else "", self.name, type_text(self.dtype, self.shape))


class Function:
    """One compiled function, kept loaded while this object lives."""

    def __init__(self, handle, source, filename, opt):
        self._h = handle
        self.source, self.filename, self.opt = source, filename, opt
        self.name = lib.tdslpy_name(handle).decode()
        dt, nd, mut = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        shape = (ctypes.c_int64 * _native.MAX_DIMS)()
        ref = ctypes.byref
        self.params = []
        for i in range(lib.tdslpy_nparams(handle)):
            name = lib.tdslpy_param(handle, i, ref(dt), ref(nd), shape, ref(mut)).decode()
            self.params.append(Param(name, DTYPES[dt.value], shape[:nd.value], mut.value))
        self.outputs = []
        for k in range(lib.tdslpy_noutputs(handle)):
            lib.tdslpy_output(handle, k, ref(dt), ref(nd), shape)
            self.outputs.append(Param("out%d" % k, DTYPES[dt.value], shape[:nd.value]))

    def __del__(self):
        if getattr(self, "_h", None) and lib is not None:
            lib.tdslpy_free(self._h)
            self._h = None

    def __repr__(self):
        return "<tdsl.Function %s(%s) -> %s>" % (self.name, ", ".join(map(repr, self.params)),
                                                 ", ".join(type_text(o.dtype, o.shape) for o in self.outputs))

    def __call__(self, *arrays):
        if len(arrays) != len(self.params):
            raise TypeError("%s() takes %d argument%s but %d were given" % (
                self.name, len(self.params), "" if len(self.params) == 1 else "s", len(arrays)))
        args = []
        try:
            for p, x in zip(self.params, arrays):
                args.append(Arg(self.name, (p.name, p.dtype, p.shape, p.mut), x))
            argv = (ctypes.POINTER(_native.Tensor) * max(len(args), 1))(*[ctypes.pointer(a.tensor) for a in args])
            outs = (_native.Tensor * max(len(self.outputs), 1))()
            rc = lib.tdslpy_call(self._h, argv, outs)
            if rc:
                msg = _native.last_error()
                if rc == _native.ERR_ARG:
                    raise ArgumentError(msg)
                if rc == _native.ERR_DATA:
                    raise DataError(msg)
                if rc == _native.ERR_NOMEM:
                    raise MemoryError(msg)
                raise RuntimeError("%s returned %d: %s" % (self.name, rc, msg))
            res = [result(outs[k], args) for k in range(len(self.outputs))]
        finally:
            for a in args:
                a.release()
        if not res:
            return None
        return res[0] if len(res) == 1 else tuple(res)

    def _emit(self, kind):
        return _native.take_text(lib.tdslpy_emit(self._h, kind.encode()))

    def ir(self):
        """The fusion plan, as `tdslc FILE --fn NAME --emit=ir` prints it."""
        return self._emit("ir")

    def kernels(self):
        """The scheduled loop nests (--emit=kernels)."""
        return self._emit("kernels")

    def c_source(self):
        """The portable C of the function (--emit=c --fn NAME)."""
        return self._emit("c")

    def llvm_ir(self):
        """The optimised LLVM IR the JIT compiled (--emit=llvm --fn NAME, for this CPU)."""
        return self._emit("llvm")


_cache = {}
_lock = threading.Lock()  # one compile at a time (LLVM's process-wide set-up is not thread-safe)


def compile(path=None, fn=None, *, source=None, filename=None, opt=2):
    """Compiles function fn of the .tdsl file at path, or of the text source (fn may be
    left out when there is one function). filename names the source in messages
    (default: path, or "<string>"). opt is tdslc's -O level. The same source, name,
    function and level give the same Function object, compiled once."""
    if (path is None) == (source is None):
        raise TypeError("tdsl.compile: give either a file path or source=")
    if path is not None:
        path = os.fspath(path)
        with open(path, "rb") as f:
            source = f.read().decode("utf-8", "surrogateescape")
        filename = filename or path
    filename = filename or "<string>"
    key = hashlib.sha256("\0".join([source, filename, fn or "", str(opt)]).encode("utf-8", "surrogateescape")).digest()
    with _lock:
        f = _cache.get(key)
        if f is None:
            diag, status = ctypes.c_void_p(), ctypes.c_int()
            h = lib.tdslpy_compile(filename.encode(), source.encode("utf-8", "surrogateescape"),
                                   fn.encode() if fn else None, int(opt), ctypes.byref(diag),
                                   ctypes.byref(status))
            text = _native.take_text(diag.value)
            if not h:
                raise CompileError(text or "tdslc: error: compilation failed", status.value, filename)
            f = _cache[key] = Function(h, source, filename, opt)
        return f


def bf16_to_f32(bits):
    """The float32 values of bf16 bit patterns (a uint16 array)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    """bf16 bit patterns (uint16) of float32 values, rounded to nearest even (NaN stays NaN)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, dtype=np.float32)), ((u >> 16) | 0x40).astype(np.uint16), r)
