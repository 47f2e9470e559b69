// frontend/sema_view.c: the view ops of §5 (view, reshape, flatten, transpose, permute,
// squeeze, expand, select, narrow, diagonal, as_strided, flip), contiguous, to and the
// casts, clone. A view's type is a new View over its source's storage, computed by
// view/view.h behind PyTorch's checks and messages; reshape, flatten, contiguous and to
// fall back on a copy (e->needs_copy, or the OP_TO node) when no view gives the result.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

// ============================================================================
// View ops (§5): a new View over the same storage, computed by view/view.h
// ============================================================================
TType *view_result(Sema *sema, Ast *e, const TType *x, View v) {
  set_operand1(sema, e, e->bargs[0]);
  return ty_view_of(sema, x, v);
}

// Resolve a requested shape with one -1 against numel, with PyTorch's messages. As in
// PyTorch's infer_size, the product of the given sizes wraps (so [2^62, 4, 0] matches
// 0 elements); a shape that passes but whose numel overflows fails afterwards, as
// PyTorch's numel check does (uint64, in order, so a 0 after an overflow still fails).
static bool infer_shape(Sema *sema, Loc loc, int64_t numel, int n, const int64_t *req, int64_t *shape) {
  if (!check_rank(sema, loc, n)) return false;
  int infer = -1;
  uint64_t prod = 1;
  for (int i = 0; i < n; i++) {
    if (req[i] == -1) {
      if (infer >= 0) {
        diag_error(sema->cx, loc, "only one dimension can be inferred");
        return false;
      }
      infer = i;
    } else if (req[i] < 0) {
      diag_error(sema->cx, loc, "invalid shape dimension %" PRId64, req[i]);
      return false;
    } else {
      prod *= (uint64_t)req[i];
    }
    shape[i] = req[i];
  }
  int64_t newsize = (int64_t)prod;
  if (!(numel == newsize || (infer >= 0 && newsize > 0 && numel % newsize == 0))) {
    diag_error(sema->cx, loc, "shape '%s' is invalid for input of size %" PRId64, shape_str(sema, n, req), numel);
    return false;
  }
  if (infer >= 0) {
    if (newsize == 0) {
      diag_error(sema->cx, loc, "cannot reshape tensor of 0 elements into shape %s because the unspecified dimension "
                 "size -1 can be any value and is ambiguous", shape_str(sema, n, req));
      return false;
    }
    shape[infer] = numel / newsize;
  }
  uint64_t total = 1;
  bool overflow = false;
  for (int i = 0; i < n; i++) overflow |= __builtin_mul_overflow(total, (uint64_t)shape[i], &total);
  if (overflow || total > (uint64_t)INT64_MAX) {
    diag_error(sema->cx, loc, "numel: integer multiplication overflow");
    return false;
  }
  return check_numel(sema, loc, n, shape);
}

// x.view(dtype), PyTorch's view_dtype: x itself for its own dtype. Else the same bits as
// another dtype: of the same width, one OP_BITCAST node (bool, u8 and i8: a cast, whose
// bool is 0 or 1 where PyTorch keeps a byte other than 0 and 1, which reads as true); of
// another width, the last dim's size scaled by the widths' ratio, behind PyTorch's checks
// (last stride 1; to a wider dtype: last size, offset and the other strides divisible),
// built of those bits by ir/build_shape.c's build_view_dtype. Every one is a copy of the
// bits where PyTorch's is a view sharing x's storage.
static TType *view_dtype(Sema *sema, Ast *e, TType *x, DType dt) {
  if (dt == x->dtype) return view_result(sema, e, x, x->view);
  int from = dtype_size(x->dtype), to = dtype_size(dt);
  if (from == to && from == 1) return cast_to(sema, e, dt);
  if (from == to) {
    e->bi = node_builtin(OP_BITCAST);
    set_operand1(sema, e, e->bargs[0]);
    return ty_fresh(sema, dt, x->view.ndim, x->view.shape);
  }
  const View *v = &x->view;
  Loc loc = call_loc(e);
  const char *a = torch_name(x->dtype), *b = torch_name(dt);
  if (v->ndim == 0) {
    diag_error(sema->cx, loc, "self.dim() cannot be 0 to view %s as %s (different element sizes)", a, b);
    return poison(sema);
  }
  int last = v->ndim - 1;
  int64_t k = to > from ? to / from : 1;  // to a wider dtype: PyTorch's checks in its order
  if (v->shape[last] % k || v->offset % k) {
    bool size = v->shape[last] % k;
    diag_error(sema->cx, loc, "%s must be divisible by %" PRId64 " to view %s as %s (different element sizes), but got %"
               PRId64, size ? "self.size(-1)" : "self.storage_offset()", k, a, b, size ? v->shape[last] : v->offset);
    return poison(sema);
  }
  if (v->strides[last] != 1) {
    diag_error(sema->cx, loc, "self.stride(-1) must be 1 to view %s as %s (different element sizes), but got %" PRId64,
               a, b, v->strides[last]);
    return poison(sema);
  }
  for (int i = 0; i < last; i++)
    if (v->strides[i] % k) {
      diag_error(sema->cx, loc, "self.stride(%d) must be divisible by %" PRId64 " to view %s as %s (different element "
                 "sizes), but got %" PRId64, i, k, a, b, v->strides[i]);
      return poison(sema);
    }
  return built(sema, e, build_view_dtype, KEEP(sema, (ShapeArgs){.dtype = dt}), e->bargs, 1);
}

TType *ck_view(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t req[MAX_LIST], shape[MAX_LIST];
  int n;
  Ast *sz = e->bargs[1];
  if (sz->ty->kind == TY_DTYPE) return view_dtype(sema, e, x, sz->ty->dtype);
  if ((sz->ty->kind == TY_LIST || sz->ty->kind == TY_TUPLE) && sz->ty->nelem == 1 && sz->ty->elems[0]->kind == TY_DTYPE)
    return view_dtype(sema, e, x, sz->ty->elems[0]->dtype);
  if (!get_ints(sema, e, e->bargs[1], "size", req, &n)) return poison(sema);
  if (!infer_shape(sema, call_loc(e), view_numel(x->view), n, req, shape)) return poison(sema);
  View v;
  if (!view_reshape(x->view, n, shape, &v)) {
    diag_error(sema->cx, call_loc(e), "view size is not compatible with input tensor's size and stride (at least one "
               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
    return poison(sema);
  }
  return view_result(sema, e, x, v);
}

// reshape/flatten: a view when possible, else a copy then a contiguous view of it.
static TType *reshape_to(Sema *sema, Ast *e, const TType *x, int n, const int64_t *shape) {
  View v;
  if (view_reshape(x->view, n, shape, &v)) return view_result(sema, e, x, v);
  e->needs_copy = true;
  set_operand1(sema, e, e->bargs[0]);
  return ty_fresh(sema, x->dtype, n, shape);
}

TType *ck_reshape(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t req[MAX_LIST], shape[MAX_LIST];
  int n;
  if (!get_ints(sema, e, e->bargs[1], "shape", req, &n)) return poison(sema);
  if (!infer_shape(sema, call_loc(e), view_numel(x->view), n, req, shape)) return poison(sema);
  return reshape_to(sema, e, x, n, shape);
}

TType *ck_flatten(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t s0 = 0, s1 = -1;
  int a, b;
  if (barg(e, 1) && !get_int(sema, e, e->bargs[1], "start_dim", &s0)) return poison(sema);
  if (barg(e, 2) && !get_int(sema, e, e->bargs[2], "end_dim", &s1)) return poison(sema);
  Loc l1 = barg(e, 1) ? e->bargs[1]->loc : call_loc(e), l2 = barg(e, 2) ? e->bargs[2]->loc : call_loc(e);
  if (!wrap_dim(sema, l1, s0, x->view.ndim, &a) || !wrap_dim(sema, l2, s1, x->view.ndim, &b)) return poison(sema);
  if (a > b) {
    diag_error(sema->cx, call_loc(e), "flatten() has invalid args: start_dim cannot come after end_dim");
    return poison(sema);
  }
  if (x->view.ndim == 0) {
    int64_t one = 1;
    return reshape_to(sema, e, x, 1, &one);
  }
  if (a == b) return view_result(sema, e, x, x->view);
  int64_t shape[TD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < a; i++) shape[n++] = x->view.shape[i];
  int64_t p = 1;
  for (int i = a; i <= b; i++) p *= x->view.shape[i];  // bounded by numel
  shape[n++] = p;
  for (int i = b + 1; i < x->view.ndim; i++) shape[n++] = x->view.shape[i];
  return reshape_to(sema, e, x, n, shape);
}

TType *ck_transpose(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t d0, d1;
  int a, b;
  if (!get_int(sema, e, e->bargs[1], "dim0", &d0) || !get_int(sema, e, e->bargs[2], "dim1", &d1)) return poison(sema);
  if (!wrap_dim(sema, e->bargs[1]->loc, d0, x->view.ndim, &a) ||
      !wrap_dim(sema, e->bargs[2]->loc, d1, x->view.ndim, &b))
    return poison(sema);
  if (x->view.ndim == 0) return view_result(sema, e, x, x->view);
  return view_result(sema, e, x, view_transpose(x->view, a, b));
}

TType *ck_t(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  if (x->view.ndim > 2) {
    diag_error(sema->cx, call_loc(e), "t() expects a tensor with <= 2 dimensions, but self is %dD", x->view.ndim);
    return poison(sema);
  }
  if (x->view.ndim < 2) return view_result(sema, e, x, x->view);
  return view_result(sema, e, x, view_transpose(x->view, 0, 1));
}

// x.detach(): x itself, a view (tdsl computes no gradients)
TType *ck_detach(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  return view_result(sema, e, x, x->view);
}

// x.T: all dims reversed (PyTorch 1.13 only warns when ndim != 2).
TType *ck_T(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int perm[TD_MAX_DIMS];
  for (int i = 0; i < x->view.ndim; i++) perm[i] = x->view.ndim - 1 - i;
  return view_result(sema, e, x, view_permute(x->view, perm));
}

TType *ck_permute(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t req[MAX_LIST];
  int n, perm[TD_MAX_DIMS];
  if (!get_ints(sema, e, e->bargs[1], "dims", req, &n)) return poison(sema);
  if (n != x->view.ndim) {
    diag_error(sema->cx, e->bargs[1]->loc, "permute(sparse_coo): number of dimensions in the tensor input does not "
               "match the length of the desired ordering of dimensions i.e. input.dim() = %d is not equal to "
               "len(dims) = %d",
               x->view.ndim, n);
    return poison(sema);
  }
  bool seen[TD_MAX_DIMS] = {0};
  for (int i = 0; i < n; i++) {
    if (!wrap_dim(sema, e->bargs[1]->loc, req[i], n, &perm[i])) return poison(sema);
    if (seen[perm[i]]) {
      diag_error(sema->cx, e->bargs[1]->loc, "permute(): duplicate dims are not allowed.");
      return poison(sema);
    }
    seen[perm[i]] = true;
  }
  return view_result(sema, e, x, view_permute(x->view, perm));
}

TType *ck_unsqueeze(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t dim;
  int a;
  if (!get_int(sema, e, e->bargs[1], "dim", &dim)) return poison(sema);
  if (!wrap_dim(sema, e->bargs[1]->loc, dim, x->view.ndim + 1, &a)) return poison(sema);
  if (!check_rank(sema, call_loc(e), x->view.ndim + 1)) return poison(sema);
  return view_result(sema, e, x, view_unsqueeze(x->view, a));
}

TType *ck_squeeze(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  if (!barg(e, 1)) return view_result(sema, e, x, view_squeeze_all(x->view));
  int64_t dim;
  int a;
  if (!get_int(sema, e, e->bargs[1], "dim", &dim)) return poison(sema);
  if (!wrap_dim(sema, e->bargs[1]->loc, dim, x->view.ndim, &a)) return poison(sema);
  if (x->view.ndim == 0) return view_result(sema, e, x, x->view);
  return view_result(sema, e, x, view_squeeze(x->view, a));
}

// PyTorch's expand, with its messages; shared by expand, expand_as and stores.
bool expand_to(Sema *sema, Loc loc, const TType *x, int n, const int64_t *req, View *out) {
  int nd = x->view.ndim;
  if (n < nd) {
    diag_error(sema->cx, loc, "expand(torch.%s{%s}, size=%s): the number of sizes provided (%d) must be greater or "
               "equal to the number of dimensions in the tensor (%d)", torch_tensor_name(x->dtype),
               shape_str(sema, nd, x->view.shape), shape_str(sema, n, req), n, nd);
    return false;
  }
  if (!check_rank(sema, loc, n)) return false;
  // PyTorch's inferExpandGeometry walks the dims from the right and stops at the first
  // leading -1 or mismatch; a negative size that survives the walk only fails its numel
  // check afterwards.
  bool negative = false;
  for (int i = n - 1; i >= 0; i--) {
    int xd = i - (n - nd);
    int64_t have = xd >= 0 ? x->view.shape[xd] : 1, want = req[i];
    if (want == -1) {
      if (xd < 0) {
        diag_error(sema->cx, loc, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                   "dimension %d", i);
        return false;
      }
      want = have;
    }
    if (want != have && have != 1) {
      diag_error(sema->cx, loc, "The expanded size of the tensor (%" PRId64 ") must match the existing size (%" PRId64
                 ") at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s", want, have, i,
                 shape_str(sema, n, req), shape_str(sema, nd, x->view.shape));
      return false;
    }
    negative |= want < 0;
  }
  int bad = 0;
  int64_t numel;
  if (negative || !view_expand(x->view, n, req, out, &bad) || !view_numel_checked(out->ndim, out->shape, &numel)) {
    diag_error(sema->cx, loc, "numel: integer multiplication overflow");
    return false;
  }
  return check_numel(sema, loc, out->ndim, out->shape);
}

TType *ck_expand(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t req[MAX_LIST];
  int n;
  View v;
  if (!get_ints(sema, e, e->bargs[1], "size", req, &n)) return poison(sema);
  if (!expand_to(sema, call_loc(e), x, n, req, &v)) return poison(sema);
  return view_result(sema, e, x, v);
}

TType *ck_expand_as(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty, *o = get_tensor(sema, e, e->bargs[1], "other");
  View v;
  if (!o) return poison(sema);
  if (!expand_to(sema, call_loc(e), x, o->view.ndim, o->view.shape, &v)) return poison(sema);
  return view_result(sema, e, x, v);
}

TType *ck_select(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t dim, idx;
  int a;
  if (!get_int(sema, e, e->bargs[1], "dim", &dim) || !get_int(sema, e, e->bargs[2], "index", &idx)) return poison(sema);
  if (x->view.ndim == 0) {
    diag_error(sema->cx, call_loc(e), "select() cannot be applied to a 0-dim tensor.");
    return poison(sema);
  }
  if (!wrap_dim(sema, e->bargs[1]->loc, dim, x->view.ndim, &a)) return poison(sema);
  int64_t size = x->view.shape[a];
  if (idx < -size || idx >= size) {
    diag_error(sema->cx, e->bargs[2]->loc, "select(): index %" PRId64 " out of range for tensor of size %s at "
               "dimension %d", idx, shape_str(sema, x->view.ndim, x->view.shape), a);
    return poison(sema);
  }
  return view_result(sema, e, x, view_select(x->view, a, idx < 0 ? idx + size : idx));
}

// narrow(x, dim, start, length)'s checks (PyTorch 1.13's messages: at the call, at dim, at
// start, at length): the wrapped dim and start. PyTorch wraps start like a dim index over
// `size` dims, except that start == size (an empty narrow at the end) is allowed.
bool narrow_ok(Sema *sema, const Loc *locs, const TType *x, int64_t dim, int64_t start, int64_t len, int *a,
               int64_t *st) {
  if (x->view.ndim == 0) {
    diag_error(sema->cx, locs[0], "narrow() cannot be applied to a 0-dim tensor.");
    return false;
  }
  if (!wrap_dim(sema, locs[1], dim, x->view.ndim, a)) return false;
  int64_t size = x->view.shape[*a];
  *st = start;
  if (start != size) {
    int64_t m = size <= 0 ? 1 : size;
    if (start < -m || start > m - 1) {
      diag_error(sema->cx, locs[2], "Dimension out of range (expected to be in range of [%" PRId64 ", %" PRId64
                 "], but got %" PRId64 ")", -m, m - 1, start);
      return false;
    }
    if (*st < 0) *st += m;
  }
  if (len < 0 || *st > size - len) {
    diag_error(sema->cx, locs[3], "start (%" PRId64 ") + length (%" PRId64 ") exceeds dimension size (%" PRId64 ").",
               *st, len, size);
    return false;
  }
  return true;
}

// narrow of a start known at run time only (ir/build_shape.c: a gather, not a view)
static TType *narrow_at(Sema *sema, Ast *e) {
  TType *x = e->bargs[0]->ty;
  int64_t dim, len;
  int a;
  if (!get_int(sema, e, e->bargs[1], "dim", &dim) || !get_int(sema, e, e->bargs[3], "length", &len) ||
      !wrap_dim(sema, e->bargs[1]->loc, dim, x->view.ndim, &a))
    return poison(sema);
  if (x->view.ndim == 0) {
    diag_error(sema->cx, call_loc(e), "narrow() cannot be applied to a 0-dim tensor.");
    return poison(sema);
  }
  if (len < 0 || len > x->view.shape[a]) {
    diag_error(sema->cx, e->bargs[3]->loc, "start (0) + length (%" PRId64 ") exceeds dimension size (%" PRId64 ").",
               len, x->view.shape[a]);
    return poison(sema);
  }
  ShapeArgs sa = {.dim = a, .length = len};
  Ast *ops[2] = {e->bargs[0], e->bargs[2]};
  return built(sema, e, build_narrow_at, KEEP(sema, sa), ops, 2);
}

TType *ck_narrow(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  Ast *sa = e->bargs[2];
  int64_t dim, start, len, st;
  int a;
  if (is_tensor(sa->ty)) {  // narrow(input, dim, start: 0-d int tensor, length)
    if (sa->ty->view.ndim != 0 || !dtype_is_int(sa->ty->dtype)) {
      diag_error(sema->cx, sa->loc, "start must be an 0-dim integral Tensor.");
      return poison(sema);
    }
    const CreateArgs *c = literal_of(sema, sa);
    if (!c) return narrow_at(sema, e);
    start = literal_int(c, 0);  // a constant: its value
  } else if (!get_int(sema, e, sa, "start", &start)) {
    return poison(sema);
  }
  if (!get_int(sema, e, e->bargs[1], "dim", &dim) || !get_int(sema, e, e->bargs[3], "length", &len))
    return poison(sema);
  Loc locs[4] = {call_loc(e), e->bargs[1]->loc, e->bargs[2]->loc, e->bargs[3]->loc};
  if (!narrow_ok(sema, locs, x, dim, start, len, &a, &st)) return poison(sema);
  return view_result(sema, e, x, view_narrow(x->view, a, st, len));
}

TType *ck_diagonal(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t off = 0, d1 = 0, d2 = 1;
  int a, b;
  if ((barg(e, 1) && !get_int(sema, e, e->bargs[1], "offset", &off)) ||
      (barg(e, 2) && !get_int(sema, e, e->bargs[2], "dim1", &d1)) ||
      (barg(e, 3) && !get_int(sema, e, e->bargs[3], "dim2", &d2)))
    return poison(sema);
  Loc l1 = barg(e, 2) ? e->bargs[2]->loc : call_loc(e), l2 = barg(e, 3) ? e->bargs[3]->loc : call_loc(e);
  if (!wrap_dim(sema, l1, d1, x->view.ndim, &a) || !wrap_dim(sema, l2, d2, x->view.ndim, &b)) return poison(sema);
  if (a == b) {
    diag_error(sema->cx, call_loc(e), "diagonal dimensions cannot be identical %" PRId64 ", %" PRId64, d1, d2);
    return poison(sema);
  }
  return view_result(sema, e, x, view_diagonal(x->view, off, a, b));
}

TType *ck_as_strided(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t size[MAX_LIST], stride[MAX_LIST], off = x->view.offset;
  int n, ns;
  if (!get_ints(sema, e, e->bargs[1], "size", size, &n) || !get_ints(sema, e, e->bargs[2], "stride", stride, &ns))
    return poison(sema);
  if (barg(e, 3) && !get_int(sema, e, e->bargs[3], "storage_offset", &off)) return poison(sema);
  if (n != ns) {
    diag_error(sema->cx, e->bargs[2]->loc, "mismatch in length of strides and shape");
    return poison(sema);
  }
  if (!check_rank(sema, e->bargs[1]->loc, n)) return poison(sema);
  // PyTorch's setStrided, in its order: negative strides, then the storage bounds
  // (computeStorageNbytes in uint64 with its overflow checks; nothing to check when a
  // size is 0), then the storage offset.
  for (int i = 0; i < n; i++)
    if (stride[i] < 0) {
      diag_error(sema->cx, e->bargs[2]->loc, "as_strided: Negative strides are not supported at the moment, got "
                 "strides: %s", shape_str(sema, n, stride));
      return poison(sema);
    }
  bool empty = false, overflow = false;
  uint64_t bytes = 1;
  for (int i = 0; i < n; i++) empty |= size[i] == 0;
  int isz = dtype_size(x->dtype);
  if (!empty) {
    for (int i = 0; i < n; i++) {
      uint64_t span;
      overflow |= __builtin_mul_overflow((uint64_t)stride[i], (uint64_t)size[i] - 1, &span);
      overflow |= __builtin_add_overflow(bytes, span, &bytes);
    }
    overflow |= __builtin_mul_overflow(bytes, (uint64_t)isz, &bytes);
    if (overflow) {
      diag_error(sema->cx, call_loc(e), "Storage size calculation overflowed with sizes=%s and strides=%s",
                 shape_str(sema, n, size), shape_str(sema, n, stride));
      return poison(sema);
    }
    int64_t need = wrap_add((int64_t)bytes, wrap_mul(off, isz));
    if (need > wrap_mul(x->storage_numel, isz)) {
      diag_error(sema->cx, call_loc(e), "setStorage: sizes %s, strides %s, storage offset %" PRId64 ", and itemsize %d "
                 "requiring a storage size of %" PRId64 " are out of bounds for storage of size %" PRId64,
                 shape_str(sema, n, size), shape_str(sema, n, stride), off, isz, need, x->storage_numel * isz);
      return poison(sema);
    }
  }
  if (off < 0) {
    diag_error(sema->cx, e->bargs[3]->loc, "Tensor: invalid storage offset %" PRId64, off);
    return poison(sema);
  }
  for (int i = 0; i < n; i++)  // PyTorch lets some of these through, as tensors of negative size
    if (size[i] < 0) {
      diag_error(sema->cx, e->bargs[1]->loc, "Trying to create tensor with negative dimension %" PRId64 ": %s", size[i],
                 shape_str(sema, n, size));
      return poison(sema);
    }
  if (!check_numel(sema, e->bargs[1]->loc, n, size)) return poison(sema);
  View v;
  if (!view_as_strided(n, size, stride, off, x->storage_numel, &v)) {
    diag_error(sema->cx, call_loc(e), "setStorage: sizes %s, strides %s, storage offset %" PRId64 ", and itemsize %d "
               "are out of bounds for storage of size %" PRId64, shape_str(sema, n, size), shape_str(sema, n, stride),
               off, isz, x->storage_numel * isz);
    return poison(sema);
  }
  return view_result(sema, e, x, v);
}

TType *ck_flip(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int dims[MAX_LIST], n;
  if (!get_dims(sema, e, e->bargs[1], "dims", x->view.ndim, dims, &n)) return poison(sema);
  if (x->view.ndim == 0) return view_result(sema, e, x, x->view);
  return view_result(sema, e, x, view_flip(x->view, n, dims));
}

TType *ck_contiguous(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  set_operand1(sema, e, e->bargs[0]);
  if (view_is_contiguous(x->view)) return x;
  e->needs_copy = true;
  return ty_fresh(sema, x->dtype, x->view.ndim, x->view.shape);
}

// F.dropout and its kin, as a forward pass in inference calls them (training=False):
// the input itself, as PyTorch returns it. Training is random, which a compiled
// inference function is not: refused with a message that says so.
TType *ck_dropout(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *pa = barg(e, 1), *ta = barg(e, 2), *ia = barg(e, 3);
  bool training = d->variant, inplace = false;  // the alpha kinds default to False
  if (!get_tensor(sema, e, x, "input")) return poison(sema);
  if (pa && !is_scalar(pa->ty)) {
    diag_error(sema->cx, pa->loc, "%s(): argument 'p' must be float, not %s", d->b.name, py_type_name(pa->ty));
    return poison(sema);
  }
  double p = pa ? pa->ty->fval : 0.5;
  if (!(p >= 0 && p <= 1)) {
    diag_error(sema->cx, pa->loc, "dropout probability has to be between 0 and 1, but got %g", p);
    return poison(sema);
  }
  if ((ta && !get_bool(sema, e, ta, "training", &training)) || (ia && !get_bool(sema, e, ia, "inplace", &inplace)))
    return poison(sema);
  if (training) {
    diag_error(sema->cx, ta ? ta->loc : call_loc(e),
               "%s() with training=True is random and tdsl compiles inference: pass training=False", d->b.name);
    return poison(sema);
  }
  set_operand1(sema, e, x);
  return x->ty;
}

static const BuiltinDef def_to_view = {{"to", BK_VIEW, OP_COPY, "input, dtype", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};
static const BuiltinDef def_to_node = {{"to", BK_NODE, OP_TO, "input, dtype", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};

TType *cast_to(Sema *sema, Ast *e, DType dt) {
  TType *x = e->bargs[0]->ty;
  set_operand1(sema, e, e->bargs[0]);
  if (x->dtype == dt) {
    e->bi = &def_to_view.b;
    return x;
  }
  e->bi = &def_to_node.b;
  return ty_fresh(sema, dt, x->view.ndim, x->view.shape);
}
// to(dtype, non_blocking=False, copy=False), to(device, dtype=None, ...), to(other, ...),
// to(device=..., dtype=...): PyTorch's overloads, told apart by the first argument's type.
// The device is checked and ignored; without a dtype, the tensor itself. copy=True is
// always a copy.
TType *ck_to(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *first = barg(e, 1), *dta = NULL, *copy = barg(e, 3);
  bool want_copy = false;
  if (first && (first->ty->kind == TY_STR || (is_scalar(first->ty) && first->ty->dtype == DT_I64))) {
    if (!tensor_option(sema, e, "device", first)) return poison(sema);
    dta = barg(e, 2);  // to(device, dtype)
    if (dta && dta->ty->kind != TY_DTYPE) dta = NULL;
  } else if (first && is_tensor(first->ty)) {
    dta = part_dtype(sema, e, first->ty->dtype);  // to(other): other's dtype
  } else {
    dta = first;
  }
  if (copy && !get_bool(sema, e, copy, "copy", &want_copy)) return poison(sema);
  DType dt = e->bargs[0]->ty->dtype;
  if (dta && !get_dtype(sema, e, dta, &dt)) return poison(sema);
  if (want_copy && dt == e->bargs[0]->ty->dtype) return become(sema, e, node_clone(sema, e, e->bargs[0]));
  return cast_to(sema, e, dt);
}
// float() double() ... : the dtype is in d->aux as a DType

TType *ck_cast(Sema *sema, Ast *e, const BuiltinDef *d) { return cast_to(sema, e, (DType)d->aux); }

TType *ck_clone(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  set_operand1(sema, e, e->bargs[0]);
  return ty_fresh(sema, x->dtype, x->view.ndim, x->view.shape);
}

// ============================================================================
// The *_copy ops: the view op's result, copied (torch.transpose_copy(x, 0, 1) is
// x.transpose(0, 1).clone(); of a tuple each element's copy)
// ============================================================================
// slice_copy(input, dim=0, start=None, end=None, step=1): input[start:end:step] along dim
static TType *ck_slice(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t dim = 0, st = 0, en = INT64_MAX, step = 1;
  int a;
  Ast *sa = barg(e, 2), *ea = barg(e, 3);
  if ((barg(e, 1) && !get_int(sema, e, e->bargs[1], "dim", &dim)) || (sa && !get_int(sema, e, sa, "start", &st)) ||
      (ea && !get_int(sema, e, ea, "end", &en)) || (barg(e, 4) && !get_int(sema, e, e->bargs[4], "step", &step)))
    return poison(sema);
  if (!wrap_dim(sema, barg(e, 1) ? e->bargs[1]->loc : call_loc(e), dim, x->view.ndim, &a)) return poison(sema);
  if (step <= 0) {
    diag_error(sema->cx, e->bargs[4]->loc, "slice step must be positive");
    return poison(sema);
  }
  int64_t n = x->view.shape[a];
  if (st < 0) st += n;
  if (en < 0) en += n;
  st = st < 0 ? 0 : st > n ? n : st;
  en = en < st ? st : en > n ? n : en;
  return view_result(sema, e, x, view_slice(x->view, a, st, en, step));
}

TType *ck_view_copy(Sema *sema, Ast *e, const BuiltinDef *d) {
  static TType *(*const views[])(Sema *, Ast *, const BuiltinDef *) = {
      [VC_AS_STRIDED] = ck_as_strided, [VC_DETACH] = ck_detach, [VC_DIAGONAL] = ck_diagonal,
      [VC_EXPAND] = ck_expand, [VC_PERMUTE] = ck_permute, [VC_SELECT] = ck_select, [VC_SLICE] = ck_slice,
      [VC_SPLIT] = ck_split, [VC_SQUEEZE] = ck_squeeze, [VC_T] = ck_t, [VC_TRANSPOSE] = ck_transpose,
      [VC_UNBIND] = ck_unbind, [VC_UNFOLD] = ck_unfold, [VC_UNSQUEEZE] = ck_unsqueeze, [VC_VIEW] = ck_view};
  BuiltinDef base = *d;
  base.variant = SPLIT_SIZE;  // split_copy, split_with_sizes_copy: split's
  TType *t = views[d->variant](sema, e, &base);
  if (is_poison(t)) return t;
  if (t->kind == TY_TUPLE) {
    Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(e->noperands ? e->noperands : 1));
    for (int i = 0; i < e->noperands; i++) items[i] = node_clone(sema, e, e->operands[i]);
    return tuple_result(sema, e, items, e->noperands);
  }
  Ast *v = ast_new(sema->cx, AST_CALL, e->loc);
  *v = *e;  // the view, as an expression of its own
  v->ty = t;
  return become(sema, e, node_clone(sema, e, v));
}
