// frontend/sema_type.c: the types sema gives expressions (TType values in cx->arena) and
// PyTorch's names for them in messages; torch.result_type over tensor and scalar operands
// (the promotion rules are ir/dtype.c's); dims, ranks, numels and broadcasting.
// Invariants: a TY_SCALAR is a Python bool, int or float (DT_BOOL, DT_I64, DT_F64) with
// its value in ival and fval; every fresh tensor type gets a storage id of its own.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

// ============================================================================
// Types
// ============================================================================
TType *ty_new(Sema *sema, TyKind k) {
  TType *t = arena_alloc(&sema->cx->arena, sizeof *t);
  t->kind = k;
  return t;
}
TType *poison(Sema *sema) { return ty_new(sema, TY_POISON); }
TType *ty_int(Sema *sema, int64_t v) {
  TType *t = ty_new(sema, TY_SCALAR);
  t->dtype = DT_I64;
  t->ival = v;
  t->fval = (double)v;
  return t;
}
TType *ty_float(Sema *sema, double v) {
  TType *t = ty_new(sema, TY_SCALAR);
  t->dtype = DT_F64;
  t->fval = v;
  t->ival = isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0;  // ints use ival, floats fval
  return t;
}
TType *ty_bool(Sema *sema, bool v) {
  TType *t = ty_int(sema, v);
  t->dtype = DT_BOOL;
  return t;
}
TType *ty_dtype(Sema *sema, DType dt) {
  TType *t = ty_new(sema, TY_DTYPE);
  t->dtype = dt;
  return t;
}
TType *ty_module(Sema *sema, const char *name) {
  TType *t = ty_new(sema, TY_MODULE);
  t->module = name;
  return t;
}
// A fresh, writable, contiguous storage (a materialized result).
TType *ty_fresh(Sema *sema, DType dt, int ndim, const int64_t *shape) {
  TType *t = ty_new(sema, TY_TENSOR);
  t->dtype = dt;
  t->view = view_contiguous(ndim, shape);
  t->storage_numel = view_numel(t->view);
  t->storage = sema->nstorage++;
  t->writable = true;
  return t;
}
// Another view over src's storage.
TType *ty_view_of(Sema *sema, const TType *src, View v) {
  TType *t = ty_new(sema, TY_TENSOR);
  *t = *src;
  t->view = v;
  return t;
}

// PyTorch's names of dtypes in its messages ("expected scalar type Float").
const char *torch_name(DType dt) {
  static const char *n[DT_COUNT] = {"Bool", "Int", "Long", "Half", "BFloat16", "Float", "Double", "Byte", "Char", "Short",
                                    "ComplexFloat", "ComplexDouble"};
  return n[dt];
}
const char *torch_tensor_name(DType dt) {
  static const char *n[DT_COUNT] = {"BoolTensor",     "IntTensor",   "LongTensor",   "HalfTensor",
                                    "BFloat16Tensor", "FloatTensor", "DoubleTensor", "ByteTensor",
                                    "CharTensor",     "ShortTensor", "ComplexFloatTensor", "ComplexDoubleTensor"};
  return n[dt];
}
// The C++ name PyTorch's messages give a dtype ("expected dtype float for `end`", conv's
// "bias type (c10::Half)").
const char *cpp_type_name(DType dt) {
  static const char *const names[DT_COUNT] = {[DT_BOOL] = "bool", [DT_I32] = "int", [DT_I64] = "long int",
                                               [DT_F16] = "c10::Half", [DT_BF16] = "c10::BFloat16",
                                               [DT_F32] = "float", [DT_F64] = "double", [DT_U8] = "unsigned char",
                                               [DT_I8] = "signed char", [DT_I16] = "short int",
                                               [DT_C64] = "c10::complex<float>", [DT_C128] = "c10::complex<double>"};
  return names[dt];
}
const char *py_type_name(const TType *t) {
  switch (t->kind) {
  case TY_SCALAR: return t->dtype == DT_BOOL ? "bool" : t->dtype == DT_I64 ? "int" : "float";
  case TY_NONE: return "NoneType";
  case TY_DTYPE: return "torch.dtype";
  case TY_TENSOR:  // a scalar parameter of the entry: a Python number known only at run time
    if (t->wrapped) return t->dtype == DT_BOOL ? "run-time bool" : t->dtype == DT_I64 ? "run-time int" : "run-time float";
    return "Tensor";
  case TY_LIST: return t->container ? t->container : "list";
  case TY_TUPLE: return "tuple";
  case TY_MODULE: return t->ctor ? strrchr(t->module, '.') + 1 : "module";  // an nn module object: its class
  case TY_STR: return "str";
  case TY_DICT: return t->container ? t->container : "dict";
  default: return "?";
  }
}

// "[3, 4]" as PyTorch prints sizes.
const char *shape_str(Sema *sema, int n, const int64_t *shape) {
  char buf[TD_MAX_DIMS * 24 + 4];
  int k = 0;
  buf[k++] = '[';
  for (int i = 0; i < n && i < 64; i++)
    k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%" PRId64, i ? ", " : "", shape[i]);
  snprintf(buf + k, sizeof buf - (size_t)k, "]");
  return arena_strdup(&sema->cx->arena, buf);
}
// "f32[3, 4]" as the language writes types.
const char *type_str(Sema *sema, const TType *t) {
  if (t->kind == TY_TENSOR)
    return arena_printf(&sema->cx->arena, "%s%s", dtype_name(t->dtype), shape_str(sema, t->view.ndim, t->view.shape));
  return py_type_name(t);
}

// At most TD_MAX_DIMS dims, and a numel that fits in int64.
bool check_rank(Sema *sema, Loc loc, int ndim) {
  if (ndim > TD_MAX_DIMS) {
    diag_error(sema->cx, loc, "tensors have at most %d dimensions, but this one would have %d", TD_MAX_DIMS, ndim);
    return false;
  }
  return true;
}
// The runtime also needs the product of max(size, 1) (which bounds every contiguous
// stride) to fit, so a zero-size tensor with huge other dims is refused here too.
bool check_numel(Sema *sema, Loc loc, int ndim, const int64_t *shape) {
  int64_t n, span = 1;
  if (!view_numel_checked(ndim, shape, &n)) {
    diag_error(sema->cx, loc, "tensor size %s is too large: its number of elements overflows int64",
               shape_str(sema, ndim, shape));
    return false;
  }
  for (int i = 0; i < ndim; i++)
    if (shape[i] > 1 && __builtin_mul_overflow(span, shape[i], &span)) {
      diag_error(sema->cx, loc, "tensor size %s is too large: its strides overflow int64",
                 shape_str(sema, ndim, shape));
      return false;
    }
  return true;
}

// ============================================================================
// Dtype promotion: torch.result_type (ir/dtype.c) of tensor and scalar operands
// ============================================================================
// NULL entries and other kinds than tensors and scalars take no part.
DType result_type(Sema *sema, TType **ts, int n) {
  DTypeOperand *ops = arena_alloc(&sema->cx->arena, sizeof *ops * (size_t)(n ? n : 1));
  int k = 0;
  for (int i = 0; i < n; i++) {
    const TType *t = ts[i];
    if (!t) continue;
    if (t->kind == TY_SCALAR || (t->kind == TY_TENSOR && t->wrapped)) ops[k++] = (DTypeOperand){t->dtype, DTO_WRAPPED};
    else if (t->kind == TY_TENSOR && t->view.ndim > 0) ops[k++] = (DTypeOperand){t->dtype, DTO_DIMMED};
    else if (t->kind == TY_TENSOR) ops[k++] = (DTypeOperand){t->dtype, DTO_ZERO_DIM};
  }
  return dtype_result_type(ops, k);
}

// ============================================================================
// Shapes: dims, broadcasting
// ============================================================================
// PyTorch's maybe_wrap_dim: a 0-d tensor accepts dims in [-1, 0].
bool wrap_dim(Sema *sema, Loc loc, int64_t d, int ndim, int *out) {
  int64_t n = ndim <= 0 ? 1 : ndim;
  if (d < -n || d > n - 1) {
    diag_error(sema->cx, loc, "Dimension out of range (expected to be in range of [%" PRId64 ", %" PRId64
               "], but got %" PRId64 ")", -n, n - 1, d);
    return false;
  }
  *out = (int)(d < 0 ? d + n : d);
  return true;
}

// Broadcast b into the accumulated shape a (PyTorch's infer_size).
bool broadcast(Sema *sema, Loc loc, int *na, int64_t *a, int nb, const int64_t *b) {
  int n = *na > nb ? *na : nb;
  int64_t out[TD_MAX_DIMS];
  for (int i = n - 1; i >= 0; i--) {
    int ia = i - (n - *na), ib = i - (n - nb);
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      diag_error(sema->cx, loc, "The size of tensor a (%" PRId64 ") must match the size of tensor b (%" PRId64
                 ") at non-singleton dimension %d", sa, sb, i);
      return false;
    }
    out[i] = sa == 1 ? sb : sa;
  }
  memcpy(a, out, sizeof(int64_t) * (size_t)n);
  *na = n;
  return true;
}
