// frontend/sema_index.c: x[...] as PyTorch indexes. Ints, slices, None and ... make one
// view of x (a BK_VIEW "index"); i64 index tensors (and int lists, made constant i64
// indices) make an advanced-index node (BK_NODE OP_INDEX) over that view. A store's
// target x[mask] is left to sema_scatter.c. Also take_along_dim and take (gathers).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <stdio.h>

// ============================================================================
// Indexing: basic indices are one view; i64 tensors make an advanced-index node
// ============================================================================
static const BuiltinDef def_index_view = {{"index", BK_VIEW, OP_COPY, "", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};
static const BuiltinDef def_index_node = {{"index", BK_NODE, OP_INDEX, "", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};

// The shape base[idx] has (base's view v, the index tensors idx at its dims pos,
// ascending): the broadcast index dims at the first indexed dim when the indexed dims
// are adjacent, else first; false after PyTorch's message when the indices do not
// broadcast together (or the rank is too high).
bool indexed_shape(Sema *sema, Loc loc, const View *v, Ast **idx, const int *pos, int n, int *on, int64_t *shape) {
  int nb = 0;
  int64_t bshape[TD_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    const View *iv = &idx[i]->ty->view;
    int nn = nb > iv->ndim ? nb : iv->ndim;
    bool ok = true;
    for (int k = 0; k < nn && ok; k++) {
      int ia = k - (nn - nb), ib = k - (nn - iv->ndim);
      int64_t sa = ia >= 0 ? bshape[ia] : 1, sb = ib >= 0 ? iv->shape[ib] : 1;
      ok = sa == sb || sa == 1 || sb == 1;
    }
    if (!ok) {
      char buf[512];
      int len = 0;
      for (int j = 0; j < n; j++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%s", j ? ", " : "",
                        shape_str(sema, idx[j]->ty->view.ndim, idx[j]->ty->view.shape));
      diag_error(sema->cx, loc, "shape mismatch: indexing tensors could not be broadcast together with shapes %s", buf);
      return false;
    }
    broadcast(sema, loc, &nb, bshape, iv->ndim, iv->shape);
  }
  bool adjacent = pos[n - 1] - pos[0] == n - 1;
  uint32_t mask = 0;
  for (int i = 0; i < n; i++) mask |= 1u << pos[i];
  *on = 0;
  if (!adjacent)
    for (int k = 0; k < nb; k++) shape[(*on)++] = bshape[k];
  for (int d = 0; d < v->ndim; d++) {
    if (adjacent && d == pos[0])
      for (int k = 0; k < nb; k++) shape[(*on)++] = bshape[k];
    if (!(mask >> d & 1)) shape[(*on)++] = v->shape[d];
  }
  return check_rank(sema, loc, *on);
}

// x[...] with index tensors: operands[0] is the base after the basic indices (a
// synthetic BK_VIEW AST_INDEX when they change it), then each index tensor;
// attr.dims has the bits of the dims of operands[0] that the tensors index.
static TType *advanced_index(Sema *sema, Ast *e, const TType *base, View v, Ast **idx, int *pos, int n) {
  for (int i = 0; i < n; i++) {
    DType dt = idx[i]->ty->dtype;
    if (dt == DT_BOOL || dt == DT_U8) {  // PyTorch takes a u8 index as a mask too
      diag_error(sema->cx, idx[i]->loc, "boolean-mask indexing is not supported: its shape is the number of true "
                 "elements of the mask, known only when the program runs: torch.where(mask, x, 0) keeps x's shape "
                 "(x[mask] = v, a store, works)");
      return poison(sema);
    }
    if (dt != DT_I64) {
      diag_error(sema->cx, idx[i]->loc, "tensors used as indices must be long, byte or bool tensors");
      return poison(sema);
    }
  }
  int64_t shape[2 * TD_MAX_DIMS];
  int on;
  uint32_t mask = 0;
  for (int i = 0; i < n; i++) mask |= 1u << pos[i];
  if (!indexed_shape(sema, e->oploc, &v, idx, pos, n, &on, shape)) return poison(sema);
  if (!check_numel(sema, e->oploc, on, shape)) return poison(sema);
  Ast *src = e->lhs;
  if (!view_equal(v, base->view)) {  // the basic part as its own view expression
    src = ast_new(sema->cx, AST_INDEX, e->loc);
    src->lhs = e->lhs;
    src->oploc = e->oploc;
    for (int i = 0; i < e->list.len; i++) {
      Ast *it = e->list.data[i];
      if (it->ty && is_tensor(it->ty)) it = ast_new(sema->cx, AST_SLICE, it->loc);
      vec_push(&sema->cx->arena, &src->list, it);
    }
    src->ty = ty_view_of(sema, base, v);
    src->bi = &def_index_view.b;
    set_operand1(sema, src, e->lhs);
  }
  Ast **ops = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n + 1));
  ops[0] = src;
  for (int i = 0; i < n; i++) ops[i + 1] = idx[i];
  set_operands(sema, e, ops, n + 1);
  e->bi = &def_index_node.b;
  e->attr.dims = mask;
  e->attr.dim = pos[0];
  return ty_fresh(sema, base->dtype, on, shape);
}

static bool slice_bound(Sema *sema, Ast *b, int64_t *out, int64_t none) {
  if (!b || b->kind == AST_NONE || (b->ty && b->ty->kind == TY_NONE)) {
    *out = none;
    return true;
  }
  if (is_scalar(b->ty) && b->ty->dtype != DT_F64) {
    *out = b->ty->ival;
    return true;
  }
  if (is_tensor(b->ty) && b->ty->wrapped)
    diag_error(sema->cx, b->loc, "a slice index must be a compile-time int, but this is a %s: a scalar parameter of "
               "the entry point is known only when it runs (called from another function, it is a compile-time "
               "value)", py_type_name(b->ty));
  else if (is_tensor(b->ty))
    diag_error(sema->cx, b->loc, "a slice index from a tensor is its value, known only when the program runs: a "
               "slice's bounds and step come from x.shape, len(x), a const or a literal");
  else if (!is_poison(b->ty))
    diag_error(sema->cx, b->loc, "slice indices must be integers or None or have an __index__ method");
  return false;
}

TType *check_index(Sema *sema, Ast *e) {
  bool mask_target = sema->mask_target;  // only this index is a store's target
  sema->mask_target = false;
  TType *base = check_expr(sema, e->lhs);
  bool bad = is_poison(base);
  for (int i = 0; i < e->list.len; i++) {
    Ast *it = e->list.data[i];
    if (it->kind == AST_SLICE) {
      Ast *bs[3] = {it->lhs, it->rhs, it->step};
      for (int k = 0; k < 3; k++)
        if (bs[k] && is_poison(check_expr(sema, bs[k]))) bad = true;
    } else if (it->kind != AST_ELLIPSIS && it->kind != AST_NONE) {
      if (is_poison(check_expr(sema, it))) bad = true;
    }
  }
  if (bad) return poison(sema);
  if (derived_modules(sema, base) && e->list.len == 1 && e->list.data[0]->kind == AST_SLICE) {
    diag_error(sema->cx, e->list.data[0]->loc, "a slice of a %s (a class derived from nn.%s) is not supported: "
               "PyTorch makes it as %s(...) of the modules sliced, calling its __init__ with them", base->ctor->name,
               nn_container_base(sema, base->ctor), base->ctor->name);
    return poison(sema);
  }
  if (derived_modules(sema, base)) base = (e->lhs = modules_node(sema, e->lhs))->ty;  // stack[0]: its modules
  if (base->kind == TY_TUPLE || base->kind == TY_LIST) return seq_index(sema, e);
  if (base->kind == TY_DICT) return dict_index(sema, e);
  if (!is_tensor(base)) {
    diag_error(sema->cx, e->lhs->loc, "'%s' object is not subscriptable", py_type_name(base));
    return poison(sema);
  }
  if (mask_target && e->list.len == 1 && is_tensor(e->list.data[0]->ty) &&
      (e->list.data[0]->ty->dtype == DT_BOOL || e->list.data[0]->ty->dtype == DT_U8))
    return mask_index(sema, e, base);  // x[mask] = v
  int consumed = 0, nell = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *it = e->list.data[i];
    if (it->kind == AST_ELLIPSIS) {
      if (++nell > 1) {
        diag_error(sema->cx, it->loc, "an index can only have a single ellipsis ('...')");
        return poison(sema);
      }
    } else if (it->kind != AST_NONE) {
      consumed++;
    }
  }
  View v = base->view;
  if (consumed > v.ndim) {
    Ast *first = e->list.data[0];
    // PyTorch's fast paths for a lone int or slice index have their own messages
    if (v.ndim == 0 && e->list.len == 1 && is_scalar(first->ty))
      diag_error(sema->cx, first->loc, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    else if (v.ndim == 0 && e->list.len == 1 && first->kind == AST_SLICE)
      diag_error(sema->cx, first->loc, "slice() cannot be applied to a 0-dim tensor.");
    else
      diag_error(sema->cx, e->oploc, "too many indices for tensor of dimension %d", v.ndim);
    return poison(sema);
  }
  Ast *idx[TD_MAX_DIMS];
  int pos[TD_MAX_DIMS], nidx = 0;
  int d = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *it = e->list.data[i];
    if (it->kind == AST_NONE) {
      if (!check_rank(sema, it->loc, v.ndim + 1)) return poison(sema);
      v = view_unsqueeze(v, d++);
    } else if (it->kind == AST_ELLIPSIS) {
      d += base->view.ndim - consumed;
    } else if (it->kind == AST_SLICE) {
      int64_t lo, hi, step;
      if (!slice_bound(sema, it->lhs, &lo, VIEW_SLICE_NONE) || !slice_bound(sema, it->rhs, &hi, VIEW_SLICE_NONE) ||
          !slice_bound(sema, it->step, &step, 1))
        return poison(sema);
      if (step == 0) {
        diag_error(sema->cx, it->step->loc, "slice step cannot be zero");
        return poison(sema);
      }
      if (step < 0) {
        diag_error(sema->cx, it->step->loc, "step must be greater than zero");
        return poison(sema);
      }
      v = view_slice(v, d++, lo, hi, step);
    } else if (is_tensor(it->ty)) {
      idx[nidx] = it;
      pos[nidx++] = d++;
    } else if (is_scalar(it->ty) && it->ty->dtype == DT_I64) {
      int64_t size = v.shape[d], k = it->ty->ival;
      if (k < -size || k >= size) {  // PyTorch names the position in the index, not a dim
        diag_error(sema->cx, it->loc, "index %" PRId64 " is out of bounds for dimension %d with size %" PRId64, k, i,
                   size);
        return poison(sema);
      }
      v = view_select(v, d, k < 0 ? k + size : k);
    } else if (it->ty->kind == TY_LIST) {  // x[[0, 2]]: a constant i64 index
      Ast *ix = list_index(sema, e, it, v.shape[d], nidx);
      if (!ix) return poison(sema);
      e->list.data[i] = ix;
      idx[nidx] = ix;
      pos[nidx++] = d++;
    } else {
      diag_error(sema->cx, it->loc, "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                 "are valid indices (got %s)", py_type_name(it->ty));
      return poison(sema);
    }
  }
  if (nidx) return advanced_index(sema, e, base, v, idx, pos, nidx);
  e->bi = &def_index_view.b;
  set_operand1(sema, e, e->lhs);
  return ty_view_of(sema, base, v);
}

// ============================================================================
// take_along_dim, take
// ============================================================================
// take_along_dim(input, indices, dim=None): gather along dim after broadcasting the other
// dims; without dim, of the flattened input
TType *ck_take_along_dim(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *ix = e->bargs[1], *da = barg(e, 2);
  if (!get_tensor(sema, e, ix, "indices")) return poison(sema);
  IndexArgs a = {.dim = -1};
  if (da) {
    int64_t dim;
    if (!get_int(sema, e, da, "dim", &dim) || !wrap_dim(sema, da->loc, dim, x->ty->view.ndim, &a.dim))
      return poison(sema);
    const View *xv = &x->ty->view, *iv = &ix->ty->view;
    if (xv->ndim != iv->ndim) {
      diag_error(sema->cx, ix->loc, "torch.take_along_dim(): input and indices should have the same number of "
                 "dimensions, but got %d dimensions for input, and %d dimensions for indices", xv->ndim, iv->ndim);
      return poison(sema);
    }
    a.ndim = xv->ndim;
    for (int i = 0; i < xv->ndim; i++) {
      int64_t b = xv->shape[i] == 1 ? iv->shape[i] : xv->shape[i];
      a.shape[i] = i == a.dim ? xv->shape[i] : b;
      a.ishape[i] = i == a.dim ? iv->shape[i] : b;
    }
    View v;
    if (!expand_to(sema, call_loc(e), x->ty, a.ndim, a.shape, &v) ||
        !expand_to(sema, call_loc(e), ix->ty, a.ndim, a.ishape, &v))
      return poison(sema);
  }
  if (ix->ty->dtype != DT_I64) {  // gather's check
    diag_error(sema->cx, e->loc, "gather(): Expected dtype int64 for index");
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 2);
}

// take(input, index): the flattened input gathered at index, of index's shape
TType *ck_take(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *ix = e->bargs[1];
  if (!get_tensor(sema, e, ix, "index")) return poison(sema);
  if (ix->ty->dtype != DT_I32 && ix->ty->dtype != DT_I64) {  // index_select's check, of the flattened index
    diag_error(sema->cx, e->loc, "index_select(): Expected dtype int32 or int64 for index");
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, (IndexArgs){0}), e->bargs, 2);
}
