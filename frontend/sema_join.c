// frontend/sema_join.c: the ops that join tensors or gather from one: cat, stack,
// index_select and gather, with PyTorch's checks of dims, sizes and index dtypes.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

// ============================================================================
// cat, stack, index_select, gather
// ============================================================================
// The tensors of sequence l: [a, b], (a, b), x.split(2), a name holding one.
static bool tensor_list(Sema *sema, const Ast *e, Ast *l, const char *pname, Ast ***xs, int *n) {
  if (!seq_items(sema, l, xs, n)) {
    diag_error(sema->cx, l->loc, "%s(): argument '%s' (position 1) must be tuple of Tensors, not %s", e->bi->name,
               pname, py_type_name(l->ty));
    return false;
  }
  for (int i = 0; i < *n; i++)
    if (!get_tensor(sema, e, (*xs)[i], pname)) return false;
  return true;
}

TType *ck_cat(Sema *sema, Ast *e, const BuiltinDef *d) {
  bool stack = d->b.op == OP_STACK;
  Ast *l = e->bargs[0];
  int64_t dim = 0;
  Ast **xs;
  int n;
  if (!tensor_list(sema, e, l, "tensors", &xs, &n)) return poison(sema);
  if (barg(e, 1) && !get_int(sema, e, e->bargs[1], "dim", &dim)) return poison(sema);
  Loc dloc = barg(e, 1) ? e->bargs[1]->loc : call_loc(e);
  if (n == 0) {
    diag_error(sema->cx, l->loc, stack ? "stack expects a non-empty TensorList"
                                    : "torch.cat(): expected a non-empty list of Tensors");
    return poison(sema);
  }
  TType **ts = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)n);
  for (int i = 0; i < n; i++) ts[i] = xs[i]->ty;
  const View *v0 = &ts[0]->view;
  int a;
  int64_t shape[TD_MAX_DIMS + 1];
  int on;
  if (stack) {
    for (int i = 1; i < n; i++)
      if (!same_shape(v0->ndim, v0->shape, ts[i]->view.ndim, ts[i]->view.shape)) {
        diag_error(sema->cx, xs[i]->loc, "stack expects each tensor to be equal size, but got %s at entry 0 "
                   "and %s at entry %d", shape_str(sema, v0->ndim, v0->shape),
                   shape_str(sema, ts[i]->view.ndim, ts[i]->view.shape), i);
        return poison(sema);
      }
    if (!wrap_dim(sema, dloc, dim, v0->ndim + 1, &a) || !check_rank(sema, call_loc(e), v0->ndim + 1))
      return poison(sema);
    on = 0;
    for (int i = 0; i <= v0->ndim; i++) shape[on++] = i == a ? n : (i < a ? v0->shape[i] : v0->shape[i - 1]);
  } else {
    for (int i = 0; i < n; i++)
      if (ts[i]->view.ndim == 0) {
        diag_error(sema->cx, xs[i]->loc, "zero-dimensional tensor (at position %d) cannot be concatenated",
                   i);
        return poison(sema);
      }
    if (!wrap_dim(sema, dloc, dim, v0->ndim, &a)) return poison(sema);
    on = v0->ndim;
    memcpy(shape, v0->shape, sizeof(int64_t) * (size_t)on);
    for (int i = 1; i < n; i++) {
      const View *vi = &ts[i]->view;
      if (vi->ndim != v0->ndim) {
        diag_error(sema->cx, xs[i]->loc, "Tensors must have same number of dimensions: got %d and %d",
                   v0->ndim, vi->ndim);
        return poison(sema);
      }
      for (int k = 0; k < on; k++)
        if (k != a && vi->shape[k] != v0->shape[k]) {
          diag_error(sema->cx, xs[i]->loc, "Sizes of tensors must match except in dimension %d. Expected "
                     "size %" PRId64 " but got size %" PRId64 " for tensor number %d in the list.", a, v0->shape[k],
                     vi->shape[k], i);
          return poison(sema);
        }
      if (!td_add(shape[a], vi->shape[a], &shape[a])) {
        diag_error(sema->cx, call_loc(e), "tensor size is too large: dimension %d of the concatenation overflows int64",
                   a);
        return poison(sema);
      }
    }
    if (!check_numel(sema, call_loc(e), on, shape)) return poison(sema);
  }
  e->attr.dim = a;
  e->attr.dims = 1u << a;
  DType rt = result_type(sema, ts, n);
  if (dtype_is_complex(rt)) {  // PyTorch promotes the real (and complex64) ones: lowering joins one dtype's pairs
    Ast **cs = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)n);
    for (int i = 0; i < n; i++) cs[i] = complex_cast(sema, xs[i], rt);
    xs = cs;
  }
  set_operands(sema, e, xs, n);
  return ty_fresh(sema, rt, on, shape);
}

// The (input, dim, index) arguments shared by index_select and gather: false after
// reporting a bad one.
static bool input_dim_index(Sema *sema, Ast *e, TType **x, TType **ix, int *a) {
  int64_t dim;
  *x = get_tensor(sema, e, e->bargs[0], "input");
  *ix = *x ? get_tensor(sema, e, e->bargs[2], "index") : NULL;
  return *ix && get_int(sema, e, e->bargs[1], "dim", &dim) && wrap_dim(sema, e->bargs[1]->loc, dim, (*x)->view.ndim, a);
}

TType *ck_index_select(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *xa = e->bargs[0], *ia = e->bargs[2];
  TType *x, *ix;
  int a;
  if (!input_dim_index(sema, e, &x, &ix, &a)) return poison(sema);
  if (ix->dtype != DT_I32 && ix->dtype != DT_I64) {
    diag_error(sema->cx, ia->loc, "index_select(): Expected dtype int32 or int64 for index");
    return poison(sema);
  }
  if (ix->view.ndim > 1) {
    diag_error(sema->cx, ia->loc, "index_select(): Index is supposed to be a vector");
    return poison(sema);
  }
  int64_t shape[TD_MAX_DIMS];
  int on = x->view.ndim;
  memcpy(shape, x->view.shape, sizeof(int64_t) * (size_t)on);
  if (on) shape[a] = view_numel(ix->view);
  e->attr.dim = a;
  e->attr.dims = on ? 1u << a : 0;
  Ast *xs[2] = {xa, ia};
  set_operands(sema, e, xs, 2);
  return ty_fresh(sema, x->dtype, on, shape);
}

TType *ck_gather(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *xa = e->bargs[0], *ia = e->bargs[2];
  TType *x, *ix;
  int a;
  if (!input_dim_index(sema, e, &x, &ix, &a)) return poison(sema);
  if (ix->dtype != DT_I64) {
    diag_error(sema->cx, ia->loc, "gather(): Expected dtype int64 for index");
    return poison(sema);
  }
  int nx = x->view.ndim ? x->view.ndim : 1, ni = ix->view.ndim ? ix->view.ndim : 1;
  if (nx != ni) {
    diag_error(sema->cx, ia->loc, "Index tensor must have the same number of dimensions as input tensor");
    return poison(sema);
  }
  for (int k = 0; k < x->view.ndim && k < ix->view.ndim; k++)
    if (k != a && ix->view.shape[k] > x->view.shape[k]) {
      diag_error(sema->cx, ia->loc, "Size does not match at dimension %d expected index %s to be smaller than self %s "
                 "apart from dimension %d", k, shape_str(sema, ix->view.ndim, ix->view.shape),
                 shape_str(sema, x->view.ndim, x->view.shape), a);
      return poison(sema);
    }
  e->attr.dim = a;
  e->attr.dims = x->view.ndim ? 1u << a : 0;
  Ast *xs[2] = {xa, ia};
  set_operands(sema, e, xs, 2);
  return ty_fresh(sema, x->dtype, ix->view.ndim, ix->view.shape);
}
