# python/tdsl/_native.py: libtdslpy.so (python/tdslpy.h) through ctypes: the library
# found beside this file, the runtime's structs (runtime/tdsl.h) and the signature
# of every function the package calls.
import ctypes
import os

MAX_DIMS = 8  # TDSL_MAX_DIMS

# tdsl_dtype's order (runtime/tdsl.h), as the language spells the dtypes.
DTYPES = ("bool", "i32", "i64", "f16", "bf16", "f32", "f64", "u8", "i8", "i16", "c64", "c128")

# Entry error codes (runtime/tdsl.h).
ERR_ARG, ERR_DATA, ERR_NOMEM = 2, 3, 5


class Storage(ctypes.Structure):
    _fields_ = [("refcount", ctypes.c_int64), ("data", ctypes.c_void_p),
                ("nbytes", ctypes.c_size_t), ("device", ctypes.c_int)]


class Tensor(ctypes.Structure):
    _fields_ = [("storage", ctypes.POINTER(Storage)), ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS),
                ("offset", ctypes.c_int64)]


def _load():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libtdslpy.so")
    lib = ctypes.CDLL(path)
    c_int_p, i64_p = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int64)
    sigs = {
        "tdslpy_compile": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                             ctypes.POINTER(ctypes.c_char_p), i64_p, ctypes.c_int,
                                             ctypes.POINTER(ctypes.c_void_p), c_int_p]),
        "tdslpy_free": (None, [ctypes.c_void_p]),
        "tdslpy_free_text": (None, [ctypes.c_void_p]),
        "tdslpy_name": (ctypes.c_char_p, [ctypes.c_void_p]),
        "tdslpy_generic": (ctypes.c_int, [ctypes.c_void_p]),
        "tdslpy_nparams": (ctypes.c_int, [ctypes.c_void_p]),
        "tdslpy_param": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), c_int_p,
                                           c_int_p, c_int_p]),
        "tdslpy_param_default": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int]),
        "tdslpy_noutputs": (ctypes.c_int, [ctypes.c_void_p]),
        "tdslpy_output": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int, c_int_p]),
        "tdslpy_dim": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, i64_p]),
        "tdslpy_ndimvars": (ctypes.c_int, [ctypes.c_void_p]),
        "tdslpy_dimvar": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int, i64_p]),
        "tdslpy_bind": (ctypes.c_int, [ctypes.c_void_p, c_int_p, i64_p, i64_p, ctypes.POINTER(ctypes.c_void_p)]),
        "tdslpy_call": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(Tensor)),
                                       ctypes.POINTER(Tensor)]),
        "tdslpy_emit": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]),
        "tdsl_last_error": (ctypes.c_char_p, []),
        "tdsl_storage_wrap": (ctypes.POINTER(Storage), [ctypes.c_void_p, ctypes.c_size_t]),
        "tdsl_storage_release": (None, [ctypes.POINTER(Storage)]),
        "tdsl_tensor_release": (None, [ctypes.POINTER(Tensor)]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


lib = _load()


def take_text(ptr):
    """The str of a malloc'd C text, which is freed."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib.tdslpy_free_text(ptr)


def last_error():
    return lib.tdsl_last_error().decode("utf-8", "replace")
