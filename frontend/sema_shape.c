// frontend/sema_alias.c: the checks of the ops PyTorch defines in terms of others: *_like
// and new_* creation, view_as, reshape_as, type_as, broadcast_to, swapaxes, movedim,
// unflatten, atleast_Nd, repeat, tile, repeat_interleave, pixel_shuffle, roll, outer, dot,
// tensordot, addmm, baddbmm, norm; and x.unfold, a view of its own. A view is made here
// (view_ast); a copy or a computation is its row's builder's (ir/build_shape.c,
// build_linalg.c, build_reduce.c), handed the arguments parsed into the family's struct.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ============================================================================
// zeros_like(input, *, dtype=None), ones_like, empty_like (zeros), full_like(input,
// fill_value, *, dtype=None); x.new_zeros(size, *, dtype=None), new_ones, new_empty,
// new_full(size, fill_value, *, dtype=None)
// ============================================================================
TType *ck_like(Sema *sema, Ast *e, const BuiltinDef *d) {
  const TType *x = e->bargs[0]->ty;
  bool fresh = d->variant == 1, full = d->b.op == OP_FULL;  // new_zeros ... (else zeros_like ...)
  Ast *size = fresh ? e->bargs[1] : part_ints(sema, e, x->view.ndim, x->view.shape);
  Ast *dta = barg(e, 1 + fresh + full);  // dtype follows input (, size) (, fill_value)
  if (dta && dta->ty->kind != TY_DTYPE) {
    DType ignored;
    get_dtype(sema, e, dta, &ignored);
    return poison(sema);
  }
  Ast *dt = dta ? dta : part_dtype(sema, e, x->dtype);
  Ast **args = arena_alloc(&sema->cx->arena, sizeof(Ast *) * 3);
  args[0] = size, args[1] = full ? e->bargs[fresh ? 2 : 1] : dt, args[2] = dt;
  e->bargs = args;  // the creation op's arguments, checked in this call's words
  e->nbargs = full ? 3 : 2;
  TType *t = full ? ck_full(sema, e, d) : ck_zeros(sema, e, d);
  e->bi = node_builtin(d->b.op);  // empty is zeros: its values are any
  return t;
}

// ============================================================================
// Views by another name
// ============================================================================
// view_as(other), reshape_as(other), broadcast_to(size), type_as(other), swapaxes/swapdims
TType *ck_view_alias(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *a = e->bargs[1];
  if (d->variant == ALIAS_BROADCAST_TO) return ck_expand(sema, e, d);  // expand(x, size)
  if (d->variant == ALIAS_ADJOINT) {  // of a real tensor: its last two dims swapped (a 0-d one itself)
    const View *v = &x->ty->view;
    if (v->ndim == 1) {
      diag_error(sema->cx, call_loc(e), "tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                 "1-D tensor.");
      return poison(sema);
    }
    return view_result(sema, e, x->ty, v->ndim ? view_transpose(*v, v->ndim - 2, v->ndim - 1) : *v);
  }
  if (d->variant == ALIAS_SWAP) return ck_transpose(sema, e, d);
  const TType *o = get_tensor(sema, e, a, "other");
  if (!o) return poison(sema);
  if (d->variant == ALIAS_TYPE_AS) return cast_to(sema, e, o->dtype);
  rebind(sema, e, (Ast *[]){x, part_ints(sema, e, o->view.ndim, o->view.shape)}, 2);
  return d->variant == ALIAS_VIEW_AS ? ck_view(sema, e, d) : ck_reshape(sema, e, d);
}

// fliplr(input) / flipud: flip of dim 1 / dim 0
TType *ck_flip_lr(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  bool lr = d->variant == 1;  // fliplr (else flipud)
  if (x->ty->view.ndim < (lr ? 2 : 1)) {
    diag_error(sema->cx, call_loc(e), "Input must be >= %d-d.", lr ? 2 : 1);
    return poison(sema);
  }
  return view_result(sema, e, x->ty, view_flip(x->ty->view, 1, (int[]){lr ? 1 : 0}));
}

// movedim(input, source, destination) / moveaxis: a permute
TType *ck_movedim(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0];
  int nd = x->ty->view.ndim, src[TD_MAX_DIMS], dst[TD_MAX_DIMS], ns, nt;
  if (!get_dims(sema, e, e->bargs[1], "source", nd, src, &ns) ||
      !get_dims(sema, e, e->bargs[2], "destination", nd, dst, &nt))
    return poison(sema);
  if (ns != nt) {
    int64_t rs[MAX_LIST], rt[MAX_LIST];
    get_ints(sema, e, e->bargs[1], "source", rs, &ns);
    get_ints(sema, e, e->bargs[2], "destination", rt, &nt);
    diag_error(sema->cx, call_loc(e), "movedim: Invalid source or destination dims: source (%s dims) should contain the "
               "same number of dims as destination (%s dims)", shape_str(sema, ns, rs), shape_str(sema, nt, rt));
    return poison(sema);
  }
  int64_t perm[TD_MAX_DIMS];
  bool src_used[TD_MAX_DIMS] = {0}, dst_used[TD_MAX_DIMS] = {0};
  for (int i = 0; i < ns; i++) {
    perm[dst[i]] = src[i];
    src_used[src[i]] = dst_used[dst[i]] = true;
  }
  for (int i = 0, s = 0; i < nd; i++) {  // the other dims keep their order
    if (dst_used[i]) continue;
    while (src_used[s]) s++;
    perm[i] = s++;
  }
  int p[TD_MAX_DIMS];
  for (int i = 0; i < nd; i++) p[i] = (int)perm[i];
  return view_result(sema, e, x->ty, view_permute(x->ty->view, p));
}

// unflatten(input, dim, sizes): a view with dim split into sizes (one may be -1)
TType *ck_unflatten(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0];
  const View *v = &x->ty->view;
  int64_t dim, sizes[MAX_LIST];
  int a, k;
  if (!get_int(sema, e, e->bargs[1], "dim", &dim) || !wrap_dim(sema, e->bargs[1]->loc, dim, v->ndim, &a) ||
      !get_ints(sema, e, e->bargs[2], "sizes", sizes, &k))
    return poison(sema);
  if (k == 0) {
    diag_error(sema->cx, e->bargs[2]->loc, "unflatten: sizes must be non-empty");
    return poison(sema);
  }
  int64_t prod = 1, infer = -1;
  for (int i = 0; i < k; i++) {
    if (sizes[i] == -1 && infer < 0) infer = i;
    else prod = wrap_mul(prod, sizes[i]);
  }
  if (infer >= 0 && prod != 0 && v->shape[a] % prod == 0) sizes[infer] = v->shape[a] / prod;
  else if (infer >= 0 || prod != v->shape[a]) {
    diag_error(sema->cx, e->bargs[2]->loc, "unflatten: Provided sizes %s don't multiply up to the size of dim %d (%"
               PRId64 ") in the input tensor", shape_str(sema, k, sizes), a, v->shape[a]);
    return poison(sema);
  }
  int64_t shape[2 * TD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < v->ndim; i++) {
    if (i != a) shape[n++] = v->shape[i];
    else for (int j = 0; j < k; j++) shape[n++] = sizes[j];
  }
  if (!check_rank(sema, call_loc(e), n)) return poison(sema);
  rebind(sema, e, (Ast *[]){x, part_ints(sema, e, n, shape)}, 2);
  return ck_view(sema, e, d);
}

// x as atleast_Nd (want = N) makes it: a 0-d x reshaped to ones, a 1-d one unsqueezed at 0
// (and, for 3, at the end), a 2-d one for 3 at the end — PyTorch's views, strides included
// (a new dim before one of size 0 has stride 0).
static Ast *atleast(Sema *sema, const Ast *e, Ast *x, int want) {
  View v = x->ty->view;
  if (v.ndim >= want) return view_ast(sema, e, x, v);
  if (v.ndim == 0) {
    View r;
    TD_ASSERT(view_reshape(v, want, (int64_t[]){1, 1, 1}, &r));
    return view_ast(sema, e, x, r);
  }
  if (v.ndim == 1) v = view_unsqueeze(v, 0);
  if (want == 3) v = view_unsqueeze(v, v.ndim);
  return view_ast(sema, e, x, v);
}

// atleast_1d / 2d / 3d(*tensors): of one tensor its view; of several (or of a sequence
// of them) the tuple of their views
TType *ck_atleast(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], **xs;
  int n, npos = 0;
  bool one = false;  // atleast_1d(x): a tensor (a sequence of one gives a tuple of one)
  for (int i = 0; i < e->list.len; i++)
    if (e->list.data[i]->kind != AST_KWARG) npos++, one = is_tensor(e->list.data[i]->ty);
  if (!seq_items(sema, a, &xs, &n)) {
    diag_error(sema->cx, a->loc, "%s of the tuple a function returns is not supported: unpack it first", d->b.name);
    return poison(sema);
  }
  for (int i = 0; i < n; i++)
    if (!get_tensor(sema, e, xs[i], "tensors")) return poison(sema);
  if (n == 1 && npos == 1 && one) return become(sema, e, atleast(sema, e, xs[0], d->variant));
  Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) items[i] = atleast(sema, e, xs[i], d->variant);
  return tuple_result(sema, e, items, n);
}

// x.unfold(dimension, size, step): the windows of dim as a new last dim, a view
TType *ck_unfold(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  const TType *x = e->bargs[0]->ty;
  int64_t dim, size, step;
  int a = 0;
  if (!get_int(sema, e, e->bargs[1], "dimension", &dim) || !get_int(sema, e, e->bargs[2], "size", &size) ||
      !get_int(sema, e, e->bargs[3], "step", &step))
    return poison(sema);
  View v = x->view;
  if (v.ndim > 0 && !wrap_dim(sema, e->bargs[1]->loc, dim, v.ndim, &a)) return poison(sema);
  int64_t len = v.ndim ? v.shape[a] : 1, stride = v.ndim ? v.strides[a] : 1;
  if (size > len) {
    diag_error(sema->cx, e->bargs[2]->loc, "maximum size for tensor at dimension %d is %" PRId64 " but size is %"
               PRId64, a, len, size);
    return poison(sema);
  }
  if (step <= 0) {
    diag_error(sema->cx, e->bargs[3]->loc, "step is %" PRId64 " but must be > 0", step);
    return poison(sema);
  }
  if (size < 0) {
    diag_error(sema->cx, e->bargs[2]->loc, "size is %" PRId64 " but must be >= 0", size);
    return poison(sema);
  }
  if (!check_rank(sema, call_loc(e), v.ndim + 1)) return poison(sema);
  if (v.ndim == 0) {
    v.ndim = 1;
    v.shape[0] = size;
    v.strides[0] = 1;
  } else {
    v.shape[a] = (len - size) / step + 1;
    v.strides[a] = stride * step;
    v.shape[v.ndim] = size;
    v.strides[v.ndim] = stride;
    v.ndim++;
  }
  set_operand1(sema, e, e->bargs[0]);
  return ty_view_of(sema, x, v);
}

// ============================================================================
// Copies: repeat, tile, repeat_interleave, roll
// ============================================================================
// x.repeat(*sizes) / tile(dims): each dim unsqueezed, expanded to its count, merged
TType *ck_repeat(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  const View *v = &x->ty->view;
  int64_t r[MAX_LIST];
  int k;
  bool tile = d->variant == 1;  // tile (else repeat)
  if (!get_ints(sema, e, e->bargs[1], tile ? "dims" : "repeats", r, &k)) return poison(sema);
  if (tile && k < v->ndim) {  // tile prepends ones
    memmove(r + (v->ndim - k), r, sizeof(int64_t) * (size_t)k);
    for (int i = 0; i < v->ndim - k; i++) r[i] = 1;
    k = v->ndim;
  }
  if (k < v->ndim) {
    diag_error(sema->cx, e->bargs[1]->loc, "Number of dimensions of repeat dims can not be smaller than number of "
               "dimensions of tensor");
    return poison(sema);
  }
  for (int i = 0; i < k; i++)
    if (r[i] < 0) {
      diag_error(sema->cx, e->bargs[1]->loc, "Trying to create tensor with negative dimension %" PRId64 ": %s", r[i],
                 shape_str(sema, k, r));
      return poison(sema);
    }
  if (!check_rank(sema, call_loc(e), k)) return poison(sema);
  int64_t out[MAX_LIST];
  for (int i = 0; i < k; i++) out[i] = wrap_mul(r[i], i < k - v->ndim ? 1 : v->shape[i - (k - v->ndim)]);
  if (!check_numel(sema, call_loc(e), k, out)) return poison(sema);
  ShapeArgs a = {.n = k};
  memcpy(a.r, r, sizeof(int64_t) * (size_t)k);
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}

// repeat_interleave(input, repeats, dim=None) with an int count
TType *ck_repeat_interleave(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *ra = e->bargs[1];
  int64_t r, dim = 0;
  if (is_tensor(ra->ty)) {
    diag_error(sema->cx, ra->loc, "repeat_interleave with a tensor of counts is not supported: the result's shape would "
               "depend on its values; give an int");
    return poison(sema);
  }
  if (!get_int(sema, e, ra, "repeats", &r)) return poison(sema);
  if (r < 0) {
    diag_error(sema->cx, ra->loc, "repeats can not be negative");
    return poison(sema);
  }
  if (barg(e, 2) && !get_int(sema, e, e->bargs[2], "dim", &dim)) return poison(sema);
  View flat = view_contiguous(1, (int64_t[]){view_numel(x->ty->view)});  // the input flattened, without dim
  const View *v = barg(e, 2) ? &x->ty->view : &flat;
  int a;
  if (!wrap_dim(sema, barg(e, 2) ? e->bargs[2]->loc : call_loc(e), dim, v->ndim, &a)) return poison(sema);
  if (!check_rank(sema, call_loc(e), v->ndim + 1)) return poison(sema);
  int64_t out[TD_MAX_DIMS];
  for (int i = 0; i < v->ndim; i++) out[i] = i == a ? wrap_mul(v->shape[i], r) : v->shape[i];
  if (!check_numel(sema, call_loc(e), v->ndim, out)) return poison(sema);
  ShapeArgs sa = {.flat = !barg(e, 2), .dim = a, .count = r};
  return built(sema, e, d->b.build, KEEP(sema, sa), e->bargs, 1);
}

// pixel_shuffle(input, upscale_factor), pixel_unshuffle(input, downscale_factor) (variant
// 1): PyTorch's checks of the shapes, with its words
TType *ck_pixel_shuffle(Sema *sema, Ast *e, const BuiltinDef *d) {
  const char *name = d->b.name, *what = d->variant ? "downscale_factor" : "upscale_factor";
  Ast *x = e->bargs[0];
  int64_t r;
  if (!get_tensor(sema, e, x, "input") || !get_int(sema, e, e->bargs[1], what, &r)) return poison(sema);
  const View *v = &x->ty->view;
  int n = v->ndim;
  if (n < 3) {
    diag_error(sema->cx, call_loc(e), "%s expects input to have at least 3 dimensions, but got input with %d "
               "dimension(s)", name, n);
    return poison(sema);
  }
  if (r <= 0) {
    diag_error(sema->cx, e->bargs[1]->loc, "%s expects a positive %s, but got %" PRId64, name, what, r);
    return poison(sema);
  }
  int64_t c = v->shape[n - 3], h = v->shape[n - 2], w = v->shape[n - 1], rr;
  if (!d->variant) {
    if (__builtin_mul_overflow(r, r, &rr) || c % rr != 0) {
      diag_error(sema->cx, call_loc(e), "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
                 "square of upscale_factor, but input.size(-3)=%" PRId64 " is not divisible by %" PRId64, c,
                 wrap_mul(r, r));
      return poison(sema);
    }
    if (__builtin_mul_overflow(h, r, &rr) || __builtin_mul_overflow(w, r, &rr)) {
      diag_error(sema->cx, call_loc(e), "numel: integer multiplication overflow");
      return poison(sema);
    }
  } else {
    for (int i = 0; i < 2; i++)
      if ((i ? w : h) % r != 0) {
        diag_error(sema->cx, call_loc(e), "pixel_unshuffle expects %s to be divisible by downscale_factor, but "
                   "input.size(%d)=%" PRId64 " is not divisible by %" PRId64, i ? "width" : "height", i - 2,
                   i ? w : h, r);
        return poison(sema);
      }
  }
  ShapeArgs sa = {.count = r, .flat = d->variant == 1};
  return built(sema, e, d->b.build, KEEP(sema, sa), e->bargs, 1);
}

// roll(input, shifts, dims=None): per dim, the last `shift` elements first — a cat of
// two narrows; without dims, of the flattened input, viewed back
TType *ck_roll(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *da = barg(e, 2);
  const View *v0 = &x->ty->view;
  int64_t sh[MAX_LIST];
  int ns, nd = 0, dims[MAX_LIST];
  if (!get_ints(sema, e, e->bargs[1], "shifts", sh, &ns)) return poison(sema);
  if (da) {
    if (!get_dims(sema, e, da, "dims", v0->ndim, dims, &nd)) return poison(sema);
    if (nd != ns) {
      diag_error(sema->cx, call_loc(e), "shifts and dimensions must align. shifts: %d, dims:%d", ns, nd);
      return poison(sema);
    }
  } else if (ns != 1) {
    diag_error(sema->cx, call_loc(e), "shifts and dimensions must align. shifts: %d, dims:0", ns);
    return poison(sema);
  }
  ShapeArgs a = {.flat = !da, .n = da ? nd : 1};
  View flat = view_contiguous(1, (int64_t[]){view_numel(*v0)});
  for (int i = 0; i < a.n; i++) {
    a.dims[i] = da ? dims[i] : 0;
    int64_t n = (da ? v0 : &flat)->shape[a.dims[i]];
    a.r[i] = n ? ((sh[i] % n) + n) % n : 0;
  }
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}

// norm's p: a number, or 'fro' (2), of a norm over dtype dt (which must be a float);
// false after the message
bool norm_p(Sema *sema, Ast *pa, DType dt, double *p) {
  *p = 2;
  if (pa && pa->ty->kind == TY_STR) {
    if (strcmp(pa->ty->module, "fro")) {
      diag_error(sema->cx, pa->loc, "norm: p='%s' is not supported: tdsl has the vector p-norms and 'fro'",
                 pa->ty->module);
      return false;
    }
  } else if (pa && is_scalar(pa->ty)) {
    *p = pa->ty->fval;
  } else if (pa) {
    diag_error(sema->cx, pa->loc, "norm(): argument 'p' must be Number, not %s", py_type_name(pa->ty));
    return false;
  }
  if (dt != DT_COUNT && !dtype_is_float(dt)) {
    diag_error(sema->cx, pa ? pa->loc : (Loc){0}, "norm(): input dtype should be either floating point or complex. "
               "Got %s instead.", torch_name(dt));
    return false;
  }
  return true;
}

// norm(input, p='fro', dim=None, keepdim=False, dtype=None): vector p-norms over dim (all
// dims by default); 'fro' is the 2-norm
TType *ck_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *pa = barg(e, 1), *da = barg(e, 2), *ka = barg(e, 3), *dta = barg(e, 4);
  ReduceArgs a = {.dtype = DT_COUNT};
  if (!norm_p(sema, pa, DT_COUNT, &a.p)) return poison(sema);
  DType dt = x->ty->dtype;
  if (dta && !get_dtype(sema, e, dta, &dt)) return poison(sema);
  if (dta) a.dtype = dt;
  if (!dtype_is_float(dt)) {
    diag_error(sema->cx, call_loc(e), "norm(): input dtype should be either floating point or complex. Got %s instead.",
               torch_name(dt));
    return poison(sema);
  }
  int nd = x->ty->view.ndim, dims[MAX_LIST], n = 0;
  if (da && !get_dims(sema, e, da, "dim", nd, dims, &n)) return poison(sema);
  if (ka && !get_bool(sema, e, ka, "keepdim", &a.keepdim)) return poison(sema);
  for (int i = 0; i < n; i++) a.mask |= 1u << dims[i];
  if (!n) a.mask = nd ? (uint32_t)((1ull << nd) - 1) : 0;
  a.dim = n == 1 ? dims[0] : -1;
  if (isinf(a.p) && !n && view_numel(x->ty->view) == 0) {  // amax, amin need elements
    diag_error(sema->cx, call_loc(e), "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify "
               "the reduction dim with the 'dim' argument.", a.p > 0 ? "amax" : "amin");
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}
