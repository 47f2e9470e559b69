// frontend/sema_shape.c: the shape ops PyTorch defines by others — views by other names
// (view_as, reshape_as, type_as, broadcast_to, swapaxes, fliplr/flipud, movedim,
// unflatten, atleast_Nd, x.unfold) and copies made of views (repeat, tile,
// repeat_interleave, pixel_shuffle, roll, ravel, diag, rot90, hsplit/vsplit/dsplit,
// diagflat, narrow_copy). A view is made here (view_ast); a copy is its row's builder's
// (ir/build_shape.c), handed the arguments parsed into ShapeArgs. The view ops themselves
// are sema_view.c's.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ============================================================================
// zeros_like(input, *, dtype=None), ones_like, empty_like (zeros), full_like(input,
// fill_value, *, dtype=None); x.new_zeros(size, *, dtype=None), new_ones, new_empty,
// new_full(size, fill_value, *, dtype=None)
// ============================================================================
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
  int p[TD_MAX_DIMS];
  view_movedim_perm(nd, ns, src, dst, p);
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

// ============================================================================
// ravel, diag, rot90, hsplit/vsplit/dsplit, diagflat, narrow_copy
// ============================================================================
// ravel(input): PyTorch's contiguous().view(-1): a view of a contiguous input, else a copy
TType *ck_ravel(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t n = view_numel(x->view);
  View v;
  if (view_is_contiguous(x->view) && view_reshape(x->view, 1, &n, &v)) return view_result(sema, e, x, v);
  e->needs_copy = true;
  set_operand1(sema, e, e->bargs[0]);
  return ty_fresh(sema, x->dtype, 1, &n);
}

// diag(input, diagonal=0): of a matrix its diagonal (a view, copied as PyTorch's is); of
// a vector the square matrix with it on the diagonal (where over compared aranges)
TType *ck_diag(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *ka = barg(e, 1);
  int64_t k = 0;
  if (ka && !get_int(sema, e, ka, "diagonal", &k)) return poison(sema);
  int nd = x->ty->view.ndim;
  if (nd != 1 && nd != 2) {
    diag_error(sema->cx, call_loc(e), "diag(): Supports 1D or 2D tensors. Got %dD", nd);
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, (LinalgArgs){.offset = k}), e->bargs, 1);
}

// rot90(input, k=1, dims=[0, 1]): flips and a transpose, views
TType *ck_rot90(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *ka = barg(e, 1), *da = barg(e, 2);
  int64_t k = 1;
  int dims[MAX_LIST] = {0, 1}, n = 2;
  if (ka && !get_int(sema, e, ka, "k", &k)) return poison(sema);
  if (da && !get_dims(sema, e, da, "dims", x->ty->view.ndim, dims, &n)) return poison(sema);
  if (n != 2) {
    diag_error(sema->cx, da->loc, "expected total rotation dims == 2, but got dims = %d", n);
    return poison(sema);
  }
  if (x->ty->view.ndim < 2) {
    diag_error(sema->cx, call_loc(e), "expected total dims >= 2, but got total dims = %d", x->ty->view.ndim);
    return poison(sema);
  }
  k = ((k % 4) + 4) % 4;
  View v = x->ty->view;  // PyTorch's: k = 1 flips dims[1] then transposes, k = 3 flips dims[0] then transposes
  if (k == 1 || k == 3) v = view_flip(v, 1, &dims[k == 1 ? 1 : 0]);
  if (k == 2) v = view_flip(v, 2, dims);
  if (k == 1 || k == 3) v = view_transpose(v, dims[0], dims[1]);
  return view_result(sema, e, x->ty, v);
}

// hsplit / vsplit / dsplit(input, indices_or_sections): tensor_split along dim 1 (0 for a
// vector), 0 or 2, an int count dividing the dim
TType *ck_hsplit(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *s = e->bargs[1];
  int nd = x->ty->view.ndim;
  int v = d->variant;  // the dim split: hsplit 1, vsplit 0, dsplit 2
  int need = v == 1 ? 1 : v == 0 ? 2 : 3, dim = v == 1 ? (nd == 1 ? 0 : 1) : v;
  if (nd < need) {
    diag_error(sema->cx, call_loc(e), "torch.%s requires a tensor with at least %d dimension, but got a tensor with %d "
               "dimensions!", d->b.name, need, nd);
    return poison(sema);
  }
  if (is_scalar(s->ty) && s->ty->dtype != DT_F64 && s->ty->ival != 0 && x->ty->view.shape[dim] % s->ty->ival) {
    diag_error(sema->cx, s->loc, "torch.%s attempted to split along dimension %d, but the size of the dimension %"
               PRId64 " is not divisible by the split_size %" PRId64 "!", d->b.name, dim, x->ty->view.shape[dim],
               s->ty->ival);
    return poison(sema);
  }
  rebind(sema, e, (Ast *[]){x, s, part_int(sema, e, dim)}, 3);  // tensor_split(input, sections, dim)
  return ck_split(sema, e, builtin_find("tensor_split"));  // its row's variant, not this one's dim
}

// diagflat(input, offset=0): diag of the flattened input; narrow_copy: a narrow, copied
TType *ck_diagflat(Sema *sema, Ast *e, const BuiltinDef *d) {
  if (d->variant == 1) {  // narrow_copy: narrow's checks, its view copied
    int64_t dim, start, len, st;
    int a;
    if (!get_int(sema, e, e->bargs[1], "dim", &dim) || !get_int(sema, e, e->bargs[2], "start", &start) ||
        !get_int(sema, e, e->bargs[3], "length", &len))
      return poison(sema);
    Loc locs[4] = {call_loc(e), e->bargs[1]->loc, e->bargs[2]->loc, e->bargs[3]->loc};
    if (!narrow_ok(sema, locs, e->bargs[0]->ty, dim, start, len, &a, &st)) return poison(sema);
    return built(sema, e, build_narrow_copy, KEEP(sema, (ShapeArgs){.dim = a, .start = st, .length = len}), e->bargs, 1);
  }
  int64_t k = 0;  // diagflat: diag of the input flattened
  if (barg(e, 1) && !get_int(sema, e, e->bargs[1], "diagonal", &k)) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (LinalgArgs){.offset = k, .flat = true}), e->bargs, 1);
}
