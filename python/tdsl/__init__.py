# python/tdsl/__init__.py: the Python package tdsl. tdsl.compile compiles one function
# of a .tdsl file or source text for this CPU with LLVM's JIT (as `tdslc run` does)
# and returns a Function; calling it with NumPy arrays (or torch CPU tensors, or
# anything with __array_interface__ or DLPack) runs it on their memory and returns
# NumPy arrays without copies (see _arrays.py for the rules). Compiled functions are
# cached in this process by the hash of (source, file name, function, -O level, dims).
# A generic function (`fn rms(x: f32[N, D], ...)`) with dims left unbound is only
# declared; each call binds its dims from the arguments' shapes with the compiler's
# check (tdslpy_bind) and runs the Function compiled for that binding.
"""tdsl: compile .tdsl tensor functions and call them on NumPy arrays.

    f = tdsl.compile("model.tdsl", fn="block")
    g = tdsl.compile(source="fn add(a: f32[3], b: f32[3]) -> f32[3] { return a + b }")
    y = f(x, w)                 # NumPy arrays in, NumPy arrays out
    f.ir(), f.kernels(), f.c_source(), f.llvm_ir()   # what tdslc --emit=KIND prints
    r = tdsl.compile("m.tdsl", fn="rms")   # fn rms(x: f32[N, D], w: f32[D], eps: float)
    y = r(x, w, 1e-5)           # N and D bound from x and w, compiled once per binding
    r.bind(N=4, D=8), tdsl.compile("m.tdsl", fn="rms", dims={"N": 4, "D": 8})
"""
import ctypes
import hashlib
import os
import re
import threading

import numpy as np

from . import _native
from ._arrays import ArgumentError, Arg, NUMPY_DTYPES, result, scalar_arg, type_text
from ._native import lib

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
    """A parameter or a result of a Function: name, dtype (as tdsl spells it: "f32";
    "float", "int" or "bool" for a scalar parameter), shape (a tuple of ints; in a
    generic function a dim written as a name or an expression is its text: ("N", "4 * D")),
    mut, scalar (a Python scalar parameter, shape ())."""

    REQUIRED = object()  # the default of a parameter without one

    def __init__(self, name, dtype, shape, mut=False, scalar=False, default=REQUIRED, default_text=None):
        self.name, self.dtype, self.shape, self.mut = name, dtype, tuple(shape), bool(mut)
        self.scalar = bool(scalar)
        self.default, self.default_text = default, default_text  # `eps: float = 1e-6`: 1e-06, "1e-6"

    def __repr__(self):
        return "%s%s: %s" % ("mut " if self.mut else "", self.name,
                             self.dtype if self.scalar else type_text(self.dtype, self.shape))


def _default_value(text):
    """The value of a parameter's default as the source writes it: a literal (1e-6, -1, True,
    true, None) or arithmetic of literals (1 / 3, 2 ** -8); Param.REQUIRED for anything
    else (the caller passes the value)."""
    import ast as pyast
    text = {"true": "True", "false": "False"}.get(text.strip(), text.strip())
    try:
        return pyast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    try:
        tree = pyast.parse(text, mode="eval")
    except SyntaxError:
        return Param.REQUIRED
    allowed = (pyast.Expression, pyast.BinOp, pyast.UnaryOp, pyast.Constant, pyast.operator, pyast.unaryop)
    if not all(isinstance(n, allowed) for n in pyast.walk(tree)):
        return Param.REQUIRED
    try:
        import builtins  # this module's compile is tdsl.compile
        return eval(builtins.compile(tree, "<default>", "eval"), {"__builtins__": {}})
    except ArithmeticError:
        return Param.REQUIRED


def _dims_text(dims):
    return ", ".join("%s=%d" % kv for kv in dims.items())


class Function:
    """One function: compiled and kept loaded while this object lives, or, for a generic
    function (dims written as names) with a dim unbound, declared: each call binds its
    dims from the arguments' shapes and runs the Function compiled for that binding."""

    def __init__(self, handle, source, filename, fn, opt):
        self._h = handle
        self.source, self.filename, self.opt, self._fn = source, filename, opt, fn
        self.name = lib.tdslpy_name(handle).decode()
        self.generic = bool(lib.tdslpy_generic(handle))
        size = ctypes.c_int64()
        ref = ctypes.byref
        self.dimvars, self.dims = [], {}
        for k in range(lib.tdslpy_ndimvars(handle)):
            name = lib.tdslpy_dimvar(handle, k, ref(size)).decode()
            self.dimvars.append(name)
            if size.value >= 0:
                self.dims[name] = size.value
        dtype, nd, mut, scalar = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()

        def shape(i):
            dims = []
            for d in range(nd.value):
                text = lib.tdslpy_dim(handle, i, d, ref(size))
                dims.append(size.value if text is None else text.decode())
            return dims

        n = lib.tdslpy_nparams(handle)
        self.params = []
        for i in range(n):
            name = lib.tdslpy_param(handle, i, ref(dtype), ref(nd), ref(mut), ref(scalar)).decode()
            text, dflt = lib.tdslpy_param_default(handle, i), Param.REQUIRED
            if text:
                text, dflt = ctypes.string_at(text).decode(), lib.tdslpy_free_text(text)
                dflt = _default_value(text)
            self.params.append(Param(name, dtype.value.decode(), shape(i), mut.value, scalar.value, dflt, text))
        self.outputs = []
        for k in range(lib.tdslpy_noutputs(handle)):
            dt = lib.tdslpy_output(handle, k, ref(nd)).decode()
            self.outputs.append(Param("out%d" % k, dt, shape(n + k)))
        self._by_shapes = {}  # generic: the argument shapes of each call seen -> its bound Function

    def __del__(self):
        if getattr(self, "_h", None) and lib is not None:
            lib.tdslpy_free(self._h)
            self._h = None

    def __repr__(self):
        return "<tdsl.Function %s(%s) -> %s%s>" % (
            self.name, ", ".join(map(repr, self.params)), ", ".join(type_text(o.dtype, o.shape) for o in self.outputs),
            " with " + _dims_text(self.dims) if self.dims else "")

    def bind(self, dims=None, **sizes):
        """The Function with these dims bound (a dict, or keywords: f.bind(N=4, D=8)),
        compiled once per binding and cached as tdsl.compile's results are. Dims left
        unbound leave it generic."""
        dims = dict(dims or {}, **sizes)
        for name, value in dims.items():
            if name not in self.dimvars:
                raise TypeError("%s() has no dim '%s' (%s)" % (
                    self.name, name, "its dims: " + ", ".join(self.dimvars) if self.dimvars else "it is not generic"))
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError("dim %s of %s() must be an int, not %s" % (name, self.name, type(value).__name__))
            if value < 0:
                raise ValueError("dim %s of %s() must be >= 0, not %d" % (name, self.name, value))
            if name in self.dims and self.dims[name] != value:
                raise ValueError("dim %s of %s() is bound to %d, not %d" % (name, self.name, self.dims[name], value))
        if all(name in self.dims for name in dims):
            return self
        dims = {name: int(dims[name]) if name in dims else self.dims[name]
                for name in self.dimvars if name in dims or name in self.dims}
        return _compile(self.source, self.filename, self._fn, self.opt, dims)

    def _unbound(self):
        return [d for d in self.dimvars if d not in self.dims]

    def _bound_for(self, params, arrays):
        """The Function compiled for the dims these arguments bind (tdslpy_bind: the
        compiler's own check of their shapes, with its message)."""
        shapes = []
        for p, x in zip(params, arrays):
            if p.scalar:
                shapes.append(None)
                continue
            try:
                s = getattr(x, "shape", None)
                shapes.append(tuple(int(n) for n in (np.shape(x) if s is None else s)))
            except (TypeError, ValueError) as e:
                raise ArgumentError("%s: argument '%s' is not an array: %s" % (self.name, p.name, e)) from None
        key = tuple(shapes)
        f = self._by_shapes.get(key)
        if f is not None:
            return f
        n, md = len(params), _native.MAX_DIMS
        ndims, buf = (ctypes.c_int * max(n, 1))(), (ctypes.c_int64 * max(n * md, 1))()
        for i, s in enumerate(shapes):
            ndims[i] = -1 if s is None else len(s)
            for a, size in enumerate((s or ())[:md]):
                buf[i * md + a] = size
        values = (ctypes.c_int64 * max(len(self.dimvars), 1))()
        diag = ctypes.c_void_p()
        with _lock:
            rc = lib.tdslpy_bind(self._h, ndims, buf, values, ctypes.byref(diag))
        text = _native.take_text(diag.value) or ""
        if rc:
            raise ArgumentError(text.strip().replace("tdslc: error: ", "", 1))
        f = self.bind({d: values[k] for k, d in enumerate(self.dimvars) if values[k] >= 0})
        if f.generic:  # every dim is written alone somewhere, so a call binds them all
            raise ArgumentError("%s: dims %s are unbound" % (self.name, ", ".join(f._unbound())))
        self._by_shapes[key] = f
        return f

    def _arguments(self, arrays, named):
        """The arguments of a call in parameter order: those given by position, then by name,
        then each default (Python's messages for a missing or unexpected one)."""
        if len(arrays) > len(self.params) or (not named and all(p.default_text is None for p in self.params)):
            raise TypeError("%s() takes %d argument%s but %d were given" % (
                self.name, len(self.params), "" if len(self.params) == 1 else "s", len(arrays)))
        names = [p.name for p in self.params]
        for k in named:
            if k not in names:
                raise TypeError("%s() got an unexpected keyword argument '%s'" % (self.name, k))
            if names.index(k) < len(arrays):
                raise TypeError("%s() got multiple values for argument '%s'" % (self.name, k))
        args, missing = list(arrays), []
        for p in self.params[len(arrays):]:
            if p.name in named:
                args.append(named[p.name])
            elif p.default is not Param.REQUIRED and not (p.default is None and not p.scalar):
                args.append(p.default)
            else:
                missing.append(p)
        if missing:
            p = missing[0]
            if p.default_text is not None:  # `m: f32[3] | None = None`, `k = f(3)`: the entry was compiled with it given
                raise TypeError("%s(): pass '%s': its default %s is not a value the compiled entry point takes" % (
                    self.name, p.name, p.default_text))
            q = ["'%s'" % m.name for m in missing]
            listed = q[0] if len(q) == 1 else " and ".join(q) if len(q) == 2 else ", ".join(q[:-1]) + ", and " + q[-1]
            raise TypeError("%s() missing %d required positional argument%s: %s" % (
                self.name, len(q), "" if len(q) == 1 else "s", listed))
        return args

    def __call__(self, *arrays, **named):
        if named or len(arrays) != len(self.params):
            arrays = self._arguments(arrays, named)
        if self.generic:
            return self._bound_for(self.params, arrays)(*arrays)
        args = []
        try:
            for p, x in zip(self.params, arrays):
                if p.scalar:
                    args.append(scalar_arg(self.name, p.name, p.dtype, x))
                else:
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

    def _emit(self, kind, dims):
        f = self.bind(dims) if dims else self
        if f.generic:
            unbound = f._unbound()
            raise TypeError("%s() is generic and its dim%s %s %s unbound: give %s" % (
                self.name, "s" if len(unbound) > 1 else "", ", ".join(unbound), "are" if len(unbound) > 1 else "is",
                "dims={%s}" % ", ".join("'%s': ..." % d for d in unbound)))
        return _native.take_text(lib.tdslpy_emit(f._h, kind.encode()))

    def ir(self, dims=None):
        """The fusion plan, as `tdslc FILE --fn NAME --emit=ir` prints it (a generic
        function's with dims={...} bound, as --dim binds them)."""
        return self._emit("ir", dims)

    def kernels(self, dims=None):
        """The scheduled loop nests (--emit=kernels)."""
        return self._emit("kernels", dims)

    def c_source(self, dims=None):
        """The portable C of the function (--emit=c --fn NAME)."""
        return self._emit("c", dims)

    def llvm_ir(self, dims=None):
        """The optimised LLVM IR the JIT compiled (--emit=llvm --fn NAME, for this CPU)."""
        return self._emit("llvm", dims)


_cache = {}
_lock = threading.RLock()  # one compile at a time (LLVM's process-wide set-up is not thread-safe)


def _compile(source, filename, fn, opt, dims):
    """The Function of (source, filename, fn, opt) with dims bound: cached."""
    parts = [source, filename, fn or "", str(opt)] + ["%s=%d" % kv for kv in sorted(dims.items())]
    key = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).digest()
    with _lock:
        f = _cache.get(key)
        if f is None:
            diag, status = ctypes.c_void_p(), ctypes.c_int()
            names = (ctypes.c_char_p * max(len(dims), 1))(*[n.encode() for n in dims])
            values = (ctypes.c_int64 * max(len(dims), 1))(*dims.values())
            h = lib.tdslpy_compile(filename.encode(), source.encode("utf-8", "surrogateescape"),
                                   fn.encode() if fn else None, int(opt), names, values, len(dims),
                                   ctypes.byref(diag), ctypes.byref(status))
            text = _native.take_text(diag.value)
            if not h:
                raise CompileError(text or "tdslc: error: compilation failed", status.value, filename)
            f = _cache[key] = Function(h, source, filename, fn, opt)
        return f


def compile(path=None, fn=None, *, source=None, filename=None, opt=2, dims=None):
    """Compiles function fn of the .tdsl file at path, or of the text source (fn may be
    left out when there is one function). filename names the source in messages
    (default: path, or "<string>"). opt is tdslc's -O level. dims ({"N": 128}) binds
    dims of a generic function, as tdslc's --dim; those left unbound are bound at each
    call from the arguments' shapes. The same source, name, function, level and dims
    give the same Function object, compiled once."""
    if (path is None) == (source is None):
        raise TypeError("tdsl.compile: give either a file path or source=")
    if path is not None:
        path = os.fspath(path)
        with open(path, "rb") as f:
            source = f.read().decode("utf-8", "surrogateescape")
        filename = filename or path
    filename = filename or "<string>"
    f = _compile(source, filename, fn, opt, {})
    return f.bind(dims) if dims else f


def bf16_to_f32(bits):
    """The float32 values of bf16 bit patterns (a uint16 array)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    """bf16 bit patterns (uint16) of float32 values, rounded to nearest even (NaN stays NaN)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, dtype=np.float32)), ((u >> 16) | 0x40).astype(np.uint16), r)
