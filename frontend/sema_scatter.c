// frontend/sema_scatter.c: writes at run-time positions, PyTorch 1.13's rules and
// messages: stores through an index (x[idx] = v, x[i, :, pos] = k, x[idx] op= v), through
// a bool mask (x[mask] = v: an elementwise where), index_put, index_copy, index_add,
// index_fill, scatter, scatter_add, scatter_reduce (each a method x.NAME_ writing x, and
// an out-of-place x.NAME / torch.NAME writing a clone), int-list indices (x[[0, 2]]),
// and the in-place methods of every other op (x.clamp_(min=0): the op's result stored
// into x); the out-of-place slice_scatter, select_scatter, diagonal_scatter and
// masked_scatter. The nodes are OP_INDEX_PUT and OP_SCATTER (ir/scatter.c builds them); a
// node's value is its target (lower.c), so later reads see the write.
#include "frontend/sema_internal.h"
#include "ir/opmath.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static const BuiltinDef def_index_put = {{"index_put", BK_NODE, OP_INDEX_PUT, "", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};
static const BuiltinDef def_scatter = {{"scatter", BK_NODE, OP_SCATTER, "", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};
static const BuiltinDef def_mask_target = {{"index", BK_NODE, OP_WHERE, "", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};

// The name e was called by: "index_add_" for x.index_add_(...).
static const char *called(const Ast *e) { return e->name ? e->name : e->bi->name; }
static bool is_inplace(const Ast *e) {
  const char *n = called(e);
  size_t len = strlen(n);
  return len > 1 && n[len - 1] == '_';
}

// ============================================================================
// index_put: the node, the check of its value's shape
// ============================================================================
// value v (a number or a tensor) broadcasts to the indexed shape (n, shape): PyTorch
// drops v's leading size-1 dims first.
static bool value_fits(Sema *sema, const Ast *v, int n, const int64_t *shape) {
  if (!is_tensor(v->ty)) return true;
  View vv = v->ty->view;
  while (vv.ndim > n && vv.shape[0] == 1) vv = view_select(vv, 0, 0);
  bool ok = vv.ndim <= n;
  for (int j = 0; ok && j < vv.ndim; j++) {
    int64_t s = vv.shape[j], want = shape[n - vv.ndim + j];
    ok = s == want || s == 1;
  }
  if (!ok)
    diag_error(sema->cx, v->loc, "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of "
               "shape %s", shape_str(sema, v->ty->view.ndim, v->ty->view.shape), shape_str(sema, n, shape));
  return ok;
}

// e becomes target[idx] = v (aug OP_ADD: += with repeats accumulating), of target's type.
static TType *put_node(Sema *sema, Ast *e, Ast *target, Ast *v, Ast **idx, const int *pos, int n, Op aug, int form) {
  int on;
  int64_t shape[2 * TD_MAX_DIMS];
  if (!indexed_shape(sema, call_loc(e), &target->ty->view, idx, pos, n, &on, shape) || !value_fits(sema, v, on, shape))
    return poison(sema);
  Ast **ops = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n + 2));
  ops[0] = target;
  ops[1] = v;
  for (int i = 0; i < n; i++) ops[i + 2] = idx[i];
  e->bi = &def_index_put.b;
  set_operands(sema, e, ops, n + 2);
  e->attr = (NodeAttr){0};
  for (int i = 0; i < n; i++) e->attr.dims |= 1u << pos[i];
  e->attr.aug = aug;
  e->attr.form = form;
  return target->ty;
}

// ============================================================================
// Stores through an index or a mask
// ============================================================================
// a op b for the op of an augmented assignment (x[...] op= v)
static Ast *aug_part(Sema *sema, const Ast *st, int binop, Ast *a, Ast *b) {
  return node_binary(sema, st, operator_row(binop)->b.op, a, b);
}

TType *mask_index(Sema *sema, Ast *e, TType *base) {
  Ast *m = e->list.data[0];
  const View *mv = &m->ty->view, *xv = &base->view;
  for (int k = 0; k < mv->ndim; k++)
    if (k >= xv->ndim || mv->shape[k] != xv->shape[k]) {
      if (k >= xv->ndim)
        diag_error(sema->cx, e->oploc, "too many indices for tensor of dimension %d (got %d)", xv->ndim, mv->ndim);
      else
        diag_error(sema->cx, m->loc, "The shape of the mask %s at index %d does not match the shape of the indexed "
                   "tensor %s at index %d", shape_str(sema, mv->ndim, mv->shape), k,
                   shape_str(sema, xv->ndim, xv->shape), k);
      return poison(sema);
    }
  if (m->ty->dtype != DT_BOOL) {
    diag_error(sema->cx, m->loc, "a byte mask store is not supported: use a bool mask");
    return poison(sema);
  }
  Ast *ops[2] = {e->lhs, m};
  e->bi = &def_mask_target.b;
  set_operands(sema, e, ops, 2);
  return ty_fresh(sema, base->dtype, xv->ndim, xv->shape);
}

// x[mask] = v is where(mask, v, x) stored into x (the mask's dims first, v broadcast
// over x's other dims); x[mask] op= v is where(mask, x op v, x).
static void mask_store(Sema *sema, Ast *st, Ast *target, Ast *rhs, int binop) {
  Ast *x = target->operands[0], *m = target->operands[1];
  if (binop >= 0) rhs = aug_part(sema, st, binop, x, rhs);
  if (is_poison(rhs->ty)) return;
  for (int k = m->ty->view.ndim; k < x->ty->view.ndim; k++) m = view_ast(sema, st, m, view_unsqueeze(m->ty->view, k));
  Ast *w = node_where(sema, st, m, rhs, x);
  if (!is_poison(w->ty)) check_store_common(sema, st, x, w, -1);
}

void index_store(Sema *sema, Ast *st, Ast *target, Ast *rhs, int binop) {
  if (target->bi == &def_mask_target.b) {
    mask_store(sema, st, target, rhs, binop);
    return;
  }
  if (target->bi->op != OP_INDEX) {
    diag_error(sema->cx, target->loc, "assignment through an index tensor is not supported");
    return;
  }
  Ast *base = target->operands[0];
  if (!store_writable(sema, st, base, base->ty)) return;
  // x[idx] op= v is x[idx] = x[idx] op v: the gather, then the put (repeats do not add up)
  if (binop >= 0) rhs = aug_part(sema, st, binop, target, rhs);
  if (is_poison(rhs->ty)) return;
  int n = target->noperands - 1, pos[TD_MAX_DIMS], np = 0;
  for (int d = 0; d < base->ty->view.ndim; d++)
    if (target->attr.dims >> d & 1) pos[np++] = d;
  TD_ASSERT(np == n);
  TType *t = put_node(sema, st, base, rhs, target->operands + 1, pos, n, OP_COUNT, IPF_SETITEM);
  if (!is_poison(t)) st->ty = t;
}

// x[[0, 2]]: the list as an i64 tensor (ir/build_create.c); negative entries wrap, out of
// range is PyTorch's error.
Ast *list_index(Sema *sema, Ast *e, Ast *it, int64_t size, int pos) {
  const TType *t = it->ty;
  int64_t v[MAX_LIST];
  int n = t->nelem;
  if (n == 0 || n > MAX_LIST) {
    diag_error(sema->cx, it->loc, n ? "too many entries in a list index: at most %d" : "an empty list index is not "
               "supported", MAX_LIST);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    const TType *el = t->elems[i];
    if (!is_scalar(el) || el->dtype == DT_F64) {
      diag_error(sema->cx, it->loc, "only lists of ints are valid indices (got an element of type %s)",
                 py_type_name(el));
      return NULL;
    }
    int64_t k = el->ival;
    if (k < -size || k >= size) {
      diag_error(sema->cx, it->loc, "index %" PRId64 " is out of bounds for dimension %d with size %" PRId64, k, pos,
                 size);
      return NULL;
    }
    v[i] = k < 0 ? k + size : k;
  }
  (void)e;
  int64_t *iv = arena_alloc(&sema->cx->arena, sizeof(int64_t) * (size_t)n);
  for (int i = 0; i < n; i++) iv[i] = v[i];
  CreateArgs a = {.n = n, .i = iv};
  return built_ast(sema, it, build_index_list, KEEP(sema, a), NULL, 0);
}

// ============================================================================
// index_put, index_copy, index_add, index_fill
// ============================================================================
// The target of an op called as e: x itself (writable) for x.NAME_(), else a clone.
static Ast *target_of(Sema *sema, Ast *e, Ast *x) {
  if (is_inplace(e)) return store_writable(sema, e, x, x->ty) ? x : NULL;
  return node_clone(sema, e, x);
}

// index_put(input, indices, values, accumulate=False)
TType *ck_index_put(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *l = e->bargs[1], *v = e->bargs[2];
  const TType *xt = x->ty;
  bool acc = false;
  if (barg(e, 3) && !get_bool(sema, e, e->bargs[3], "accumulate", &acc)) return poison(sema);
  Ast **items;
  int n;
  if (!seq_items(sema, l, &items, &n)) {
    diag_error(sema->cx, l->loc, "%s(): argument 'indices' (position 1) must be tuple of Tensors, not %s", called(e),
               py_type_name(l->ty));
    return poison(sema);
  }
  if (!get_tensor(sema, e, v, "values")) return poison(sema);
  if (n > xt->view.ndim) {
    diag_error(sema->cx, l->loc, "too many indices for tensor of dimension %d (got %d)", xt->view.ndim, n);
    return poison(sema);
  }
  int pos[TD_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    if (!get_tensor(sema, e, items[i], "indices")) return poison(sema);
    DType dt = items[i]->ty->dtype;
    if (dt != DT_I64) {
      diag_error(sema->cx, items[i]->loc, dt == DT_BOOL || dt == DT_U8 ? "boolean-mask indices are not supported by "
                 "index_put: use where" : "tensors used as indices must be long, byte or bool tensors");
      return poison(sema);
    }
    pos[i] = i;
  }
  if (n == 0) {
    diag_error(sema->cx, l->loc, "index_put(): expected at least one index tensor");
    return poison(sema);
  }
  if (v->ty->dtype != xt->dtype) {
    diag_error(sema->cx, v->loc, "Index put requires the source and destination dtypes match, got %s for the "
               "destination and %s for the source.", torch_name(xt->dtype), torch_name(v->ty->dtype));
    return poison(sema);
  }
  Ast *t = target_of(sema, e, x);
  if (!t) return poison(sema);
  return put_node(sema, e, t, v, items, pos, n, acc ? OP_ADD : OP_COUNT, IPF_SETITEM);
}

// A 0-d index as a 1-element vector (index_copy and kin take both).
static Ast *as_vector(Sema *sema, Ast *e, Ast *ix) {
  return ix->ty->view.ndim == 0 ? view_ast(sema, e, ix, view_unsqueeze(ix->ty->view, 0)) : ix;
}

// index_copy(input, dim, index, source), index_add(input, dim, index, source, *,
// alpha=1), index_fill(input, dim, index, value): an index_put along dim.
TType *ck_index_op(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *ia = e->bargs[2], *s = e->bargs[3];
  const TType *xt = x->ty, *it;
  int64_t dim;
  int a;
  const char *fn = called(e);
  bool fill = d->aux == OP_WHERE, add = d->aux == OP_ADD;
  if (!get_int(sema, e, e->bargs[1], "dim", &dim) || !(it = get_tensor(sema, e, ia, "index"))) return poison(sema);
  if (!wrap_dim(sema, e->bargs[1]->loc, dim, xt->view.ndim, &a)) return poison(sema);
  const char *base = fill ? "index_fill_" : add ? "index_add_" : "index_copy_";
  if (it->dtype != DT_I64 && !(add && it->dtype == DT_I32)) {
    if (fill) diag_error(sema->cx, ia->loc, "index_fill_(): Expected dtype int64 for index.");
    else if (add) diag_error(sema->cx, ia->loc, "index_add_(): Expected dtype int32/int64 for index");
    else diag_error(sema->cx, ia->loc, "index_copy_(): Expected a long tensor for index, but got %s",
                    torch_name(it->dtype));
    return poison(sema);
  }
  if (it->view.ndim > 1) {
    if (add)
      diag_error(sema->cx, ia->loc, "index_add_(): Index is supposed to be a vector, but got dim: %d with type: %s and "
                 "size: %s", it->view.ndim, torch_name(it->dtype), shape_str(sema, it->view.ndim, it->view.shape));
    else
      diag_error(sema->cx, ia->loc, "%s(): Index should have dimension 1 or 0 (got %d)", base, it->view.ndim);
    return poison(sema);
  }
  int64_t ni = view_numel(it->view);
  Ast *v = s;
  if (fill) {
    if (is_tensor(s->ty) && s->ty->view.ndim != 0) {
      diag_error(sema->cx, s->loc, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with %d "
                 "dimension(s).", s->ty->view.ndim);
      return poison(sema);
    }
    if (!is_tensor(s->ty) && !is_scalar(s->ty)) {
      diag_error(sema->cx, s->loc, "%s(): argument 'value' (position 3) must be Number, not %s", fn,
                 py_type_name(s->ty));
      return poison(sema);
    }
  } else {
    const TType *st = get_tensor(sema, e, s, "source");
    if (!st) return poison(sema);
    if (st->dtype != xt->dtype) {
      if (add)
        diag_error(sema->cx, s->loc, "index_add_(): self (%s) and source (%s) must have the same scalar type",
                   torch_name(xt->dtype), torch_name(st->dtype));
      else
        diag_error(sema->cx, s->loc, "index_copy_(): self and source expected to have the same dtype, but got (self) "
                   "%s and (source) %s", torch_name(xt->dtype), torch_name(st->dtype));
      return poison(sema);
    }
    int64_t ns = st->view.ndim ? st->view.shape[st->view.ndim > a ? a : 0] : 1;
    if (st->view.ndim != xt->view.ndim && !(st->view.ndim == 0 && xt->view.ndim == 0)) {
      diag_error(sema->cx, s->loc, "%s(): When source and destination are not scalars, their dimensionality must "
                 "match. Source dimensionality (%d), destination dimensionality (%d)", base, st->view.ndim,
                 xt->view.ndim);
      return poison(sema);
    }
    if (ns != ni) {
      if (add)
        diag_error(sema->cx, s->loc, "index_add_(): Number of indices (%" PRId64 ") should be equal to source.size(dim)"
                   ": (%" PRId64 "), for dim: %d", ni, ns, a);
      else
        diag_error(sema->cx, s->loc, "index_copy_(): Number of indices (%" PRId64 ") should be equal to "
                   "source.size(dim) (%" PRId64 ")", ni, ns);
      return poison(sema);
    }
    for (int k = 0; k < xt->view.ndim; k++)
      if (k != a && st->view.shape[k] != xt->view.shape[k]) {
        if (add)
          diag_error(sema->cx, s->loc, "The size of tensor a (%" PRId64 ") must match the size of tensor b (%" PRId64
                     ") at non-singleton dimension %d", xt->view.shape[k], st->view.shape[k], k);
        else
          diag_error(sema->cx, s->loc, "index_copy_(): Source/destination tensor must have same slice shapes. "
                     "Destination slice shape: %" PRId64 " at dimension %d and source slice shape: %" PRId64
                     " at dimension %d.", xt->view.shape[k], k, st->view.shape[k], k);
        return poison(sema);
      }
    if (add && barg(e, 4)) {  // source * alpha (an integer alpha for integer tensors, as PyTorch casts it)
      const TType *al = e->bargs[4]->ty;
      if (!is_scalar(al)) {
        diag_error(sema->cx, e->bargs[4]->loc, "index_add(): argument 'alpha' must be Number, not %s",
                   py_type_name(al));
        return poison(sema);
      }
      bool one = al->dtype == DT_F64 ? al->fval == 1.0 : al->ival == 1;
      if (!one) {
        Ast *k = e->bargs[4];
        if (!dtype_is_float(xt->dtype) && al->dtype == DT_F64) k = part_int(sema, e, (int64_t)al->fval);
        v = node_binary(sema, e, OP_MUL, s, k);
        if (is_poison(v->ty)) return poison(sema);
      }
    }
  }
  if (xt->view.ndim == 0 && ni > 1) {
    diag_error(sema->cx, ia->loc, "%s(): index %s has more entries than a 0-d self", base,
               shape_str(sema, it->view.ndim, it->view.shape));
    return poison(sema);
  }
  Ast *t = target_of(sema, e, x);
  if (!t) return poison(sema);
  if (xt->view.ndim == 0) {  // a 0-d self: the put into its 1-element view
    t = view_ast(sema, e, t, view_unsqueeze(t->ty->view, 0));
    if (is_tensor(v->ty) && !fill) v = view_ast(sema, e, v, view_unsqueeze(v->ty->view, 0));
    a = 0;
  }
  Ast *ix = as_vector(sema, e, ia);
  int form = fill ? IPF_INDEX_FILL : add ? IPF_INDEX_ADD : IPF_INDEX_COPY;
  TType *r = put_node(sema, e, t, v, &ix, &a, 1, add ? OP_ADD : OP_COUNT, form);
  return xt->view.ndim == 0 && !is_poison(r) ? t->operands[0]->ty : r;
}

// ============================================================================
// scatter, scatter_add, scatter_reduce
// ============================================================================
// The identity of a reduction in dtype dt (ir/ops.def's column): what
// include_self=False starts a touched element from, as a Python number.
static Ast *identity(Sema *sema, Ast *e, Op op, DType dt) {
  OpValue v = op_identity(op, dt);
  if (dtype_is_float(dt) && op != OP_ADD && op != OP_MUL) return part_float(sema, e, v.f);
  Ast *n = part_int(sema, e, v.i);
  if (dt == DT_BOOL && op != OP_ADD && op != OP_MUL) n->ty = ty_bool(sema, v.i != 0);
  return n;
}

// A scatter node: e (or a part under it) writes src at index along dim a of target.
static Ast *scatter_part(Sema *sema, Ast *e, Ast *target, Ast *src, Ast *ix, int a, Op aug) {
  Ast *n = ast_new(sema->cx, AST_CALL, e->loc);
  n->oploc = e->oploc;
  n->name = "scatter";
  n->bi = &def_scatter.b;
  Ast *ops[3] = {target, src, ix};
  set_operands(sema, n, ops, 3);
  n->attr.dim = a;
  n->attr.dims = target->ty->view.ndim ? 1u << a : 0;
  n->attr.aug = aug;
  n->ty = target->ty;
  return n;
}

// scatter(input, dim, index, src=None, value=None, reduce=None), scatter_add(input, dim,
// index, src), scatter_reduce(input, dim, index, src, reduce, *, include_self=True).
TType *ck_scatter(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *ia = e->bargs[2];
  const TType *xt = x->ty, *it;
  int64_t dim;
  int a;
  if (!get_int(sema, e, e->bargs[1], "dim", &dim) || !(it = get_tensor(sema, e, ia, "index"))) return poison(sema);
  if (!wrap_dim(sema, e->bargs[1]->loc, dim, xt->view.ndim, &a)) return poison(sema);
  bool reduce_op = d->aux == OP_SUM;  // scatter_reduce
  Ast *s = barg(e, 3);
  if (d->aux == OP_WHERE && !s) s = barg(e, 4);  // scatter(..., value=v)
  if (!s) {
    diag_error(sema->cx, call_loc(e), "%s() missing 1 required positional argument: \"src\"", called(e));
    return poison(sema);
  }
  Op aug = d->aux == OP_ADD ? OP_ADD : OP_COUNT;
  bool mean = false, include_self = true;
  if (reduce_op || (d->aux == OP_WHERE && barg(e, 5))) {
    Ast *r = reduce_op ? e->bargs[4] : e->bargs[5];
    const char *rs = r->ty->kind == TY_STR ? r->ty->module : "";
    static const struct {
      const char *name;
      Op op;
    } sr[] = {{"sum", OP_ADD}, {"prod", OP_MUL}, {"mean", OP_MEAN}, {"amax", OP_MAXIMUM}, {"amin", OP_MINIMUM}},
      sc[] = {{"add", OP_ADD}, {"multiply", OP_MUL}};
    aug = OP_COUNT;
    for (int i = 0; reduce_op && i < 5; i++)
      if (!strcmp(rs, sr[i].name)) aug = sr[i].op;
    for (int i = 0; !reduce_op && i < 2; i++)
      if (!strcmp(rs, sc[i].name)) aug = sc[i].op;
    if (aug == OP_COUNT) {
      diag_error(sema->cx, r->loc, reduce_op ? "reduce argument must be either sum, prod, mean, amax or amin."
                                             : "reduce argument must be either add or multiply.");
      return poison(sema);
    }
    mean = aug == OP_MEAN;
    if (reduce_op && barg(e, 5) && !get_bool(sema, e, e->bargs[5], "include_self", &include_self))
      return poison(sema);
  }
  if (it->dtype != DT_I64) {
    diag_error(sema->cx, ia->loc, "scatter(): Expected dtype int64 for index");
    return poison(sema);
  }
  bool tensor_src = is_tensor(s->ty);
  if (!tensor_src && !(d->aux == OP_WHERE && is_scalar(s->ty))) {
    if (!get_tensor(sema, e, s, "src")) return poison(sema);
  }
  if (tensor_src && s->ty->dtype != xt->dtype) {
    diag_error(sema->cx, s->loc, "scatter(): Expected self.dtype to be equal to src.dtype");
    return poison(sema);
  }
  int nx = xt->view.ndim ? xt->view.ndim : 1, ni = it->view.ndim ? it->view.ndim : 1;
  if (nx != ni) {
    diag_error(sema->cx, ia->loc, "Index tensor must have the same number of dimensions as self tensor");
    return poison(sema);
  }
  if (tensor_src && (s->ty->view.ndim ? s->ty->view.ndim : 1) != ni) {
    diag_error(sema->cx, ia->loc, "Index tensor must have the same number of dimensions as src tensor");
    return poison(sema);
  }
  bool ok = true;
  for (int k = 0; k < it->view.ndim && ok; k++) {
    if (k != a && it->view.shape[k] > xt->view.shape[k]) ok = false;
    if (tensor_src && s->ty->view.ndim && it->view.shape[k] > s->ty->view.shape[k]) ok = false;
  }
  if (!ok) {
    if (tensor_src)
      diag_error(sema->cx, ia->loc, "Expected index %s to be smaller than self %s apart from dimension %d and to be "
                 "smaller size than src %s", shape_str(sema, it->view.ndim, it->view.shape),
                 shape_str(sema, xt->view.ndim, xt->view.shape), a,
                 shape_str(sema, s->ty->view.ndim, s->ty->view.shape));
    else
      diag_error(sema->cx, ia->loc, "Expected index %s to be smaller than self %s apart from dimension %d",
                 shape_str(sema, it->view.ndim, it->view.shape), shape_str(sema, xt->view.ndim, xt->view.shape), a);
    return poison(sema);
  }
  if (xt->view.ndim == 0 && view_numel(it->view) > 1) {
    diag_error(sema->cx, ia->loc, "Expected index %s to be smaller than self %s apart from dimension %d",
               shape_str(sema, it->view.ndim, it->view.shape), shape_str(sema, 0, NULL), a);
    return poison(sema);
  }
  // PyTorch takes a 0-d tensor for a 1-element vector: the node sees one rank
  Ast *ix = ia;
  if (xt->view.ndim == 0) {
    if (ix->ty->view.ndim) ix = view_ast(sema, e, ix, view_squeeze_all(ix->ty->view));
    if (tensor_src && s->ty->view.ndim) s = view_ast(sema, e, s, view_squeeze_all(s->ty->view));
  } else {
    if (ix->ty->view.ndim == 0) ix = view_ast(sema, e, ix, view_unsqueeze(ix->ty->view, 0));
    if (tensor_src && s->ty->view.ndim == 0) s = view_ast(sema, e, s, view_unsqueeze(s->ty->view, 0));
  }
  if (mean) {
    // sum / count, count the terms (and self, unless include_self=False); integers
    // divide by floor; an untouched element keeps self (count 0 divides by 1)
    Ast *t = node_clone(sema, e, x);
    if (!include_self) t = scatter_part(sema, e, t, identity(sema, e, OP_ADD, xt->dtype), ix, a, OP_COUNT);
    Ast *sum = scatter_part(sema, e, t, s, ix, a, OP_ADD);
    Ast *c0 = node_fill(sema, e, include_self ? OP_ONES : OP_ZEROS, x->ty);
    Ast *ones = node_fill(sema, e, OP_ONES, s->ty);
    Ast *cnt = scatter_part(sema, e, c0, ones, ix, a, OP_ADD);
    cnt = node_clamp(sema, e, cnt, part_int(sema, e, 1), NULL);
    Ast *q = node_binary(sema, e, dtype_is_float(xt->dtype) ? OP_DIV : OP_FLOOR_DIVIDE, sum, cnt);
    if (is_poison(q->ty)) return poison(sema);
    if (!is_inplace(e)) return become(sema, e, q);
    if (!store_writable(sema, e, x, xt)) return poison(sema);
    e->ty = NULL;
    check_store_common(sema, e, x, q, -1);
    return e->ty ? e->ty : poison(sema);
  }
  Ast *t = target_of(sema, e, x);
  if (!t) return poison(sema);
  if (!include_self) t = scatter_part(sema, e, t, identity(sema, e, aug, xt->dtype), ix, a, OP_COUNT);
  return become(sema, e, scatter_part(sema, e, t, s, ix, a, aug));
}

// ============================================================================
// fill_, zero_, copy_ and the in-place methods of every other op
// ============================================================================
// x.fill_(value), x.zero_(), x.copy_(src): a store into x.
TType *ck_fill(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *v;
  if (d->aux == OP_ZEROS) {
    v = part_int(sema, e, 0);
  } else {
    v = e->bargs[1];
    if (d->aux == OP_FULL && is_tensor(v->ty) && v->ty->view.ndim != 0) {
      diag_error(sema->cx, v->loc, "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.",
                 v->ty->view.ndim);
      return poison(sema);
    }
    if (d->aux == OP_COPY && !get_tensor(sema, e, v, "src")) return poison(sema);
  }
  e->ty = NULL;
  check_store_common(sema, e, x, v, -1);
  return e->ty ? e->ty : poison(sema);
}

TType *inplace_method(Sema *sema, Ast *e) {
  size_t len = strlen(e->name);
  if (len < 2 || e->name[len - 1] != '_') return NULL;
  char *base = arena_printf(&sema->cx->arena, "%.*s", (int)(len - 1), e->name);
  const BuiltinDef *d = builtin_find_form(base, F_METH);
  if (!d) return NULL;
  Ast *x = e->lhs;
  if (d->b.kind == BK_VIEW && d->check != ck_contiguous) {  // x.t_(): x becomes its view
    static const char *const views[] = {"t", "transpose", "squeeze", "unsqueeze", "as_strided", "swapdims",
                                        "swapaxes", "detach"};
    bool ok = false;
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) ok |= !strcmp(base, views[i]);
    if (!ok) return NULL;
    e->bi = &d->b;
    e->name = base;
    if (!bind_args(sema, e, d, x)) return poison(sema);
    TType *r = d->check(sema, e, d);
    // the variable: x, or the one an in-place view op of it rebinds (x.t_().unsqueeze_(0))
    const char *var = x->kind == AST_NAME ? x->name : x->kind == AST_CALL ? x->rebinds : NULL;
    if (is_poison(r) || !var || !find_local(sema, var)) return r;
    e->rebinds = var;  // later reads of x see the view (lower.c binds it)
    e->ty = r;
    bind_name(sema, var, r, x->loc);
    sema->scope->src = e;
    return r;
  }
  Ast *oop = ast_new(sema->cx, AST_CALL, e->loc);
  *oop = *e;
  oop->name = base;
  oop->bi = &d->b;
  if (!bind_args(sema, oop, d, x)) return poison(sema);
  TType *r = complex_operand(oop) ? complex_builtin(sema, oop, d) : NULL;  // sema_complex.c, as check_builtin
  if (!r) r = d->check(sema, oop, d);
  oop->ty = r;
  if (is_poison(r)) return poison(sema);
  const TType *xt = x->ty;
  if (!is_tensor(r)) {
    diag_error(sema->cx, e->oploc, "'%s' has no in-place form", base);
    return poison(sema);
  }
  if (!dtype_can_cast(r->dtype, xt->dtype)) {
    diag_error(sema->cx, e->oploc, "result type %s can't be cast to the desired output type %s", torch_name(r->dtype),
               torch_name(xt->dtype));
    return poison(sema);
  }
  if (!same_shape(r->view.ndim, r->view.shape, xt->view.ndim, xt->view.shape)) {
    diag_error(sema->cx, e->oploc, "output with shape %s doesn't match the broadcast shape %s",
               shape_str(sema, xt->view.ndim, xt->view.shape), shape_str(sema, r->view.ndim, r->view.shape));
    return poison(sema);
  }
  if (!store_writable(sema, e, x, xt)) return poison(sema);
  e->ty = NULL;
  check_store_common(sema, e, x, oop, -1);
  return e->ty ? e->ty : poison(sema);
}

// slice_scatter(input, src, dim=0, start=None, end=None, step=1),
// select_scatter(input, src, dim, index), diagonal_scatter(input, src, offset=0, dim1=0,
// dim2=1): input with src written where the view (slice, select, diagonal) of it is.
TType *ck_view_scatter(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const Builtin select = {"select", BK_VIEW, OP_COPY, "input, dim, index", NULL},
                       diagonal = {"diagonal", BK_VIEW, OP_COPY, "input, offset=0, dim1=0, dim2=1", NULL};
  Ast *x = e->bargs[0], *src = e->bargs[1];
  if (!is_tensor(x->ty) || !is_tensor(src->ty)) {
    diag_error(sema->cx, call_loc(e), "%s(): argument '%s' must be Tensor, not %s", d->b.name,
               is_tensor(x->ty) ? "src" : "input", py_type_name(is_tensor(x->ty) ? src->ty : x->ty));
    return poison(sema);
  }
  const TType *t = x->ty;
  IndexArgs a = {.view = (ViewScatter)d->variant};
  View pos;  // the positions the view takes, of arange(numel) viewed as the input
  if (a.view == SCATTER_SLICE) {  // the positions along dim, as Python's slice takes them
    int64_t v[4] = {0, 0, INT64_MAX, 1};
    bool given[4] = {true, false, false, true};
    for (int i = 0; i < 4; i++) {
      const Ast *arg = e->bargs[2 + i];
      if (!arg || arg->ty->kind == TY_NONE) continue;
      if (!is_scalar(arg->ty) || arg->ty->dtype == DT_F64) {
        diag_error(sema->cx, arg->loc, "slice_scatter(): argument '%s' must be int, not %s",
                   (const char *[]){"dim", "start", "end", "step"}[i], py_type_name(arg->ty));
        return poison(sema);
      }
      v[i] = arg->ty->ival, given[i] = true;
    }
    if (!wrap_dim(sema, e->bargs[2] ? e->bargs[2]->loc : call_loc(e), v[0], t->view.ndim, &a.dim)) return poison(sema);
    if (v[3] <= 0) {
      diag_error(sema->cx, e->bargs[5]->loc, "slice step must be positive");
      return poison(sema);
    }
    int64_t n = t->view.shape[a.dim], lo = given[1] ? v[1] : 0, hi = given[2] ? v[2] : n;
    lo = lo < 0 ? (lo + n < 0 ? 0 : lo + n) : (lo > n ? n : lo);
    hi = hi < 0 ? (hi + n < 0 ? 0 : hi + n) : (hi > n ? n : hi);
    a.start = lo, a.end = hi < lo ? lo : hi, a.step = v[3];
    pos = view_contiguous(t->view.ndim, t->view.shape);
    pos.shape[a.dim] = (a.end - a.start) / a.step + ((a.end - a.start) % a.step != 0);
  } else {  // select or diagonal of the positions: their own checks and words
    Ast sub = *e, *holder = ast_new(sema->cx, AST_NAME, e->loc);
    holder->ty = ty_fresh(sema, DT_I64, t->view.ndim, t->view.shape);
    Ast *args[4] = {holder, e->bargs[2], barg(e, 3), barg(e, 4)};
    sub.bargs = args;
    sub.nbargs = a.view == SCATTER_SELECT ? 3 : 4;
    sub.bi = a.view == SCATTER_SELECT ? &select : &diagonal;
    sub.lhs = NULL;
    TType *pt = a.view == SCATTER_SELECT ? ck_select(sema, &sub, NULL) : ck_diagonal(sema, &sub, NULL);
    if (is_poison(pt)) return poison(sema);
    pos = pt->view;
    if (a.view == SCATTER_SELECT) {
      int64_t index = args[2]->ty->ival;
      wrap_dim(sema, e->loc, args[1]->ty->ival, t->view.ndim, &a.dim);
      a.start = index < 0 ? index + t->view.shape[a.dim] : index;
    } else {
      a.offset = args[1] ? args[1]->ty->ival : 0;
      wrap_dim(sema, e->loc, args[2] ? args[2]->ty->ival : 0, t->view.ndim, &a.dim1);
      wrap_dim(sema, e->loc, args[3] ? args[3]->ty->ival : 1, t->view.ndim, &a.dim2);
    }
  }
  if (!same_shape(src->ty->view.ndim, src->ty->view.shape, pos.ndim, pos.shape)) {
    diag_error(sema->cx, src->loc, "expected src to have a size equal to the slice of self. src size = %s, slice size = %s",
               shape_str(sema, src->ty->view.ndim, src->ty->view.shape), shape_str(sema, pos.ndim, pos.shape));
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 2);
}

// masked_scatter(input, mask, source): input and mask broadcast together; the k-th true
// element of the mask (row-major) takes source's k-th element. The k of each element is
// the running count of trues before it (cumsum): source.reshape(-1)[k] where the mask is
// true, input elsewhere. Too few source elements: index_select's error, at run time.
TType *ck_masked_scatter(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *m = e->bargs[1], *src = e->bargs[2];
  for (int i = 0; i < 3; i++)
    if (!is_tensor(e->bargs[i]->ty)) {
      diag_error(sema->cx, e->bargs[i]->loc, "masked_scatter(): argument '%s' must be Tensor, not %s",
                 (const char *[]){"input", "mask", "source"}[i], py_type_name(e->bargs[i]->ty));
      return poison(sema);
    }
  if (src->ty->dtype != x->ty->dtype) {  // PyTorch's words, its missing space included
    diag_error(sema->cx, src->loc, "masked_scatter: expected self and source to have same dtypes but got%s and %s",
               torch_name(x->ty->dtype), torch_name(src->ty->dtype));
    return poison(sema);
  }
  if (dtype_is_float(m->ty->dtype)) {
    diag_error(sema->cx, m->loc, "masked_scatter_ only supports boolean masks, but got mask with dtype %s",
               torch_name(m->ty->dtype));
    return poison(sema);
  }
  int n = x->ty->view.ndim;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, x->ty->view.shape, sizeof(int64_t) * (size_t)n);
  if (!broadcast(sema, call_loc(e), &n, shape, m->ty->view.ndim, m->ty->view.shape)) return poison(sema);
  IndexArgs a = {.ndim = n};
  memcpy(a.shape, shape, sizeof(int64_t) * (size_t)n);
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 3);
}
