// frontend/sema_alias.c: the ops PyTorch defines in terms of others, built here from
// them as parts: *_like and new_* creation, view_as, reshape_as, type_as, broadcast_to,
// swapaxes, movedim, unflatten, atleast_Nd, repeat, tile, repeat_interleave, roll,
// outer, dot, tensordot, addmm, baddbmm, norm; and x.unfold, a view of its own.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ============================================================================
// Argument parts
// ============================================================================
static Ast *call2(Sema *sema, const Ast *e, const char *op, Ast *a, Ast *b) {
  return part_call(sema, e, op, (Ast *[]){a, b}, 2);
}

// ============================================================================
// zeros_like(input, *, dtype=None), ones_like, empty_like (zeros), full_like(input,
// fill_value, *, dtype=None); x.new_zeros(size, *, dtype=None), new_ones, new_empty,
// new_full(size, fill_value, *, dtype=None)
// ============================================================================
TType *ck_like(Sema *sema, Ast *e, const BuiltinDef *d) {
  const TType *x = e->bargs[0]->ty;
  const char *n = d->b.name;
  bool fresh = !strncmp(n, "new_", 4), full = strstr(n, "full") != NULL;
  Ast *size = fresh ? e->bargs[1] : part_ints(sema, e, x->view.ndim, x->view.shape);
  Ast *dta = barg(e, 1 + fresh + full);  // dtype follows input (, size) (, fill_value)
  if (dta && dta->ty->kind != TY_DTYPE) {
    DType ignored;
    get_dtype(sema, e, dta, &ignored);
    return poison(sema);
  }
  Ast *dt = dta ? dta : part_dtype(sema, e, x->dtype);
  if (full) return become(sema, e, part_call(sema, e, "full", (Ast *[]){size, e->bargs[fresh ? 2 : 1], dt}, 3));
  const char *op = strstr(n, "ones") ? "ones" : "zeros";  // empty is zeros: its values are any
  return become(sema, e, call2(sema, e, op, size, dt));
}

// ============================================================================
// Views by another name
// ============================================================================
// view_as(other), reshape_as(other), broadcast_to(size), type_as(other), swapaxes/swapdims
TType *ck_view_alias(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *a = e->bargs[1];
  const char *n = d->b.name;
  if (!strcmp(n, "broadcast_to")) return become(sema, e, call2(sema, e, "expand", x, a));
  if (!strcmp(n, "adjoint"))  // of a real tensor: its last two dims swapped
    return become(sema, e, part_call(sema, e, "transpose", (Ast *[]){x, part_int(sema, e, -2), part_int(sema, e, -1)},
                                     3));
  if (!strncmp(n, "swap", 4))
    return become(sema, e, part_call(sema, e, "transpose", (Ast *[]){x, a, e->bargs[2]}, 3));
  const TType *o = get_tensor(sema, e, a, "other");
  if (!o) return poison(sema);
  if (!strcmp(n, "type_as")) return become(sema, e, call2(sema, e, "to", x, part_dtype(sema, e, o->dtype)));
  Ast *shape = part_ints(sema, e, o->view.ndim, o->view.shape);
  return become(sema, e, call2(sema, e, n[0] == 'v' ? "view" : "reshape", x, shape));
}

// fliplr(input) / flipud: flip of dim 1 / dim 0
TType *ck_flip_lr(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  bool lr = d->b.name[4] == 'l';
  if (x->ty->view.ndim < (lr ? 2 : 1)) {
    diag_error(sema->cx, call_loc(e), "Input must be >= %d-d.", lr ? 2 : 1);
    return poison(sema);
  }
  return become(sema, e, call2(sema, e, "flip", x, part_ints(sema, e, 1, (int64_t[]){lr ? 1 : 0})));
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
  return become(sema, e, call2(sema, e, "permute", x, part_ints(sema, e, nd, perm)));
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
  return become(sema, e, call2(sema, e, "view", x, part_ints(sema, e, n, shape)));
}

// atleast_1d / 2d / 3d of one tensor: PyTorch's reshapes of 0-, 1- and 2-d inputs
TType *ck_atleast(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  const View *v = &x->ty->view;
  int want = d->b.name[8] - '0';
  if (v->ndim >= want) return become(sema, e, part_call(sema, e, "view", (Ast *[]){x, part_ints(sema, e, v->ndim,
                                                                                        v->shape)}, 2));
  int64_t s[3] = {1, 1, 1};
  int64_t n0 = v->ndim >= 1 ? v->shape[0] : 1, n1 = v->ndim >= 2 ? v->shape[1] : 1;
  if (want == 2) s[1] = n0;
  if (want == 3 && v->ndim == 1) s[1] = n0;
  if (want == 3 && v->ndim == 2) s[0] = n0, s[1] = n1;
  return become(sema, e, call2(sema, e, "view", x, part_ints(sema, e, want, s)));
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
  bool tile = d->b.name[0] == 't';
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
  if (!check_rank(sema, call_loc(e), 2 * k) && k > TD_MAX_DIMS) return poison(sema);
  int64_t pairs[2 * MAX_LIST], out[MAX_LIST], src[MAX_LIST];
  for (int i = 0; i < k; i++) {
    src[i] = i < k - v->ndim ? 1 : v->shape[i - (k - v->ndim)];
    pairs[2 * i] = r[i];
    pairs[2 * i + 1] = src[i];
    out[i] = wrap_mul(r[i], src[i]);
  }
  if (!check_numel(sema, call_loc(e), k, out)) return poison(sema);
  if (2 * k > TD_MAX_DIMS) {
    diag_error(sema->cx, call_loc(e), "repeat of %d dims is not supported: tdsl builds it with %d dims, at most %d", k,
               2 * k, TD_MAX_DIMS);
    return poison(sema);
  }
  int64_t ones[2 * MAX_LIST];
  for (int i = 0; i < k; i++) ones[2 * i] = 1, ones[2 * i + 1] = src[i];
  Ast *y = call2(sema, e, "view", x, part_ints(sema, e, 2 * k, ones));
  y = call2(sema, e, "expand", y, part_ints(sema, e, 2 * k, pairs));
  return become(sema, e, call2(sema, e, "reshape", y, part_ints(sema, e, k, out)));
}

// repeat_interleave(input, repeats, dim=None) with an int count
TType *ck_repeat_interleave(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
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
  if (!barg(e, 2)) x = part_call(sema, e, "flatten", &x, 1);
  else if (!get_int(sema, e, e->bargs[2], "dim", &dim)) return poison(sema);
  const View *v = &x->ty->view;
  int a;
  if (!wrap_dim(sema, barg(e, 2) ? e->bargs[2]->loc : call_loc(e), dim, v->ndim, &a)) return poison(sema);
  if (!check_rank(sema, call_loc(e), v->ndim + 1)) return poison(sema);
  int64_t big[TD_MAX_DIMS], out[TD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < v->ndim; i++) {
    big[n++] = v->shape[i];
    if (i == a) big[n++] = r;
    out[i] = i == a ? wrap_mul(v->shape[i], r) : v->shape[i];
  }
  Ast *y = call2(sema, e, "unsqueeze", x, part_int(sema, e, a + 1));
  y = call2(sema, e, "expand", y, part_ints(sema, e, n, big));
  return become(sema, e, call2(sema, e, "reshape", y, part_ints(sema, e, v->ndim, out)));
}

// roll(input, shifts, dims=None): per dim, the last `shift` elements first — a cat of
// two narrows; without dims, of the flattened input, viewed back
TType *ck_roll(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
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
    diag_error(sema->cx, e->bargs[1]->loc, "roll of %d shifts needs their dims", ns);
    return poison(sema);
  }
  Ast *y = da ? x : part_call(sema, e, "flatten", &x, 1);
  if (!da) dims[0] = 0, nd = 1;
  for (int i = 0; i < nd; i++) {
    int64_t n = y->ty->view.shape[dims[i]];
    if (n == 0) continue;
    int64_t s = ((sh[i] % n) + n) % n;
    if (s == 0) continue;
    Ast *dim = part_int(sema, e, dims[i]);
    Ast *tail = part_call(sema, e, "narrow", (Ast *[]){y, dim, part_int(sema, e, n - s), part_int(sema, e, s)}, 4);
    Ast *head = part_call(sema, e, "narrow", (Ast *[]){y, dim, part_int(sema, e, 0), part_int(sema, e, n - s)}, 4);
    y = call2(sema, e, "cat", part_seq(sema, e, TY_LIST, (Ast *[]){tail, head}, 2), dim);
  }
  if (!da) y = call2(sema, e, "view", y, part_ints(sema, e, v0->ndim, v0->shape));
  if (y == x) y = part_call(sema, e, "clone", &x, 1);  // a roll by whole turns is still a new tensor
  return become(sema, e, y);
}

// ============================================================================
// Products and norms
// ============================================================================
// outer(input, vec2) / ger: input[:, None] * vec2
TType *ck_outer(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  if (!get_tensor(sema, e, b, "vec2")) return poison(sema);
  if (a->ty->view.ndim != 1 || b->ty->view.ndim != 1) {
    diag_error(sema->cx, call_loc(e), "%s: Expected 1-D argument %s, but got %d-D", d->b.name,
               a->ty->view.ndim != 1 ? "self" : "vec2", a->ty->view.ndim != 1 ? a->ty->view.ndim : b->ty->view.ndim);
    return poison(sema);
  }
  Ast *col = call2(sema, e, "unsqueeze", a, part_int(sema, e, 1));
  return become(sema, e, part_binary(sema, e, OP_MUL, "mul", col, b));
}

// dot(input, other): 1-D only, then matmul's own checks
TType *ck_dot(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = e->bargs[0], *b = e->bargs[1];
  if (!get_tensor(sema, e, b, "tensor")) return poison(sema);
  if (a->ty->view.ndim != 1 || b->ty->view.ndim != 1) {
    diag_error(sema->cx, call_loc(e), "1D tensors expected, but got %dD and %dD tensors", a->ty->view.ndim,
               b->ty->view.ndim);
    return poison(sema);
  }
  return become(sema, e, call2(sema, e, "matmul", a, b));
}

// tensordot(a, b, dims=2): the sum over a's dims ca and b's cb (an int n: a's last n
// and b's first n; else two lists), a's free dims then b's. a is permuted to
// [free..., contracted...] and b to [contracted..., free...], each side's free dims
// reshaped into one (a view where they merge), and one GEMM whose k spans every
// contracted dim reads them where they are (matmul_k).
TType *ck_tensordot(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = e->bargs[0], *b = e->bargs[1], *da = barg(e, 2);
  TType *ta = get_tensor(sema, e, a, "a"), *tb = ta ? get_tensor(sema, e, b, "b") : NULL;
  if (!ta || !tb) return poison(sema);
  if (barg(e, 3)) {
    diag_error(sema->cx, e->bargs[3]->loc, "tensordot(): out= is not supported: the result is returned");
    return poison(sema);
  }
  const View *va = &ta->view, *vb = &tb->view;
  int ca[TD_MAX_DIMS], cb[TD_MAX_DIMS], n = 2;
  int64_t ra[TD_MAX_DIMS], rb[TD_MAX_DIMS];  // the dims as written, for the message
  if (!da || da->ty->kind == TY_SCALAR) {
    int64_t k = 2;
    if (da && !get_int(sema, e, da, "dims", &k)) return poison(sema);
    if (k < 0) {
      diag_error(sema->cx, da->loc, "tensordot expects dims >= 0, but got dims=%" PRId64, k);
      return poison(sema);
    }
    n = (int)(k < TD_MAX_DIMS ? k : TD_MAX_DIMS);
    for (int i = 0; i < n; i++) {
      ra[i] = i - k, rb[i] = i;
      if (!wrap_dim(sema, e->bargs[0]->loc, ra[i], va->ndim, &ca[i]) ||
          !wrap_dim(sema, e->bargs[1]->loc, rb[i], vb->ndim, &cb[i]))
        return poison(sema);
    }
  } else {
    Ast **items;
    int ni, n2;
    if (!seq_items(sema, da, &items, &ni) || ni != 2) {
      diag_error(sema->cx, da->loc, "tensordot expects dims to be int or Tuple[List[int], List[int]] or "
                 "List[List[int]] containing two lists, but got %s", py_type_name(da->ty));
      return poison(sema);
    }
    if (!get_dims(sema, e, items[0], "dims", va->ndim, ca, &n) || !get_dims(sema, e, items[1], "dims", vb->ndim, cb, &n2))
      return poison(sema);
    if (n != n2) {
      diag_error(sema->cx, da->loc, "both dimension lists should have same length");
      return poison(sema);
    }
    get_ints(sema, e, items[0], "dims", ra, &n);
    get_ints(sema, e, items[1], "dims", rb, &n2);
  }
  for (int i = 0; i < n; i++)
    if (va->shape[ca[i]] != vb->shape[cb[i]]) {
      diag_error(sema->cx, call_loc(e), "contracted dimensions need to match, but first has size %" PRId64 " in dim %"
                 PRId64 " and second has size %" PRId64 " in dim %" PRId64, va->shape[ca[i]], ra[i],
                 vb->shape[cb[i]], rb[i]);
      return poison(sema);
    }
  // the permutations and the free dims' sizes
  int64_t pa[TD_MAX_DIMS], pb[TD_MAX_DIMS], ks[TD_MAX_DIMS + 2], out[2 * TD_MAX_DIMS];
  int npa = 0, npb = 0, no = 0;
  int64_t M = 1, N = 1;
  uint32_t in_a = 0, in_b = 0;
  for (int i = 0; i < n; i++) in_a |= 1u << ca[i], in_b |= 1u << cb[i];
  for (int i = 0; i < va->ndim; i++)
    if (!(in_a & (1u << i))) pa[npa++] = i, M *= va->shape[i], out[no++] = va->shape[i];
  for (int i = 0; i < n; i++) pa[npa++] = ca[i], pb[npb++] = cb[i];
  for (int i = 0; i < vb->ndim; i++)
    if (!(in_b & (1u << i))) pb[npb++] = i, N *= vb->shape[i], out[no++] = vb->shape[i];
  if (no > TD_MAX_DIMS) {
    diag_error(sema->cx, call_loc(e), "tensordot: the result would have %d dims; tdsl allows at most %d", no,
               TD_MAX_DIMS);
    return poison(sema);
  }
  Ast *ap = call2(sema, e, "permute", a, part_ints(sema, e, npa, pa));
  Ast *bp = call2(sema, e, "permute", b, part_ints(sema, e, npb, pb));
  // a: [M, k...] (k: at least one dim, [M, 1] for an outer product); b: [k..., N]
  int nk = n ? n : 1;
  ks[0] = M;
  for (int i = 0; i < nk; i++) ks[1 + i] = n ? va->shape[ca[i]] : 1;
  ap = call2(sema, e, "reshape", ap, part_ints(sema, e, nk + 1, ks));
  ks[nk] = N;
  for (int i = 0; i < nk; i++) ks[i] = n ? vb->shape[cb[i]] : 1;
  bp = call2(sema, e, "reshape", bp, part_ints(sema, e, nk + 1, ks));
  if (is_poison(ap->ty) || is_poison(bp->ty)) return poison(sema);
  Ast *y = nk == 1 ? call2(sema, e, "matmul", ap, bp)
                   : part_call(sema, e, "matmul_k", (Ast *[]){ap, bp, part_int(sema, e, nk)}, 3);
  if (is_poison(y->ty)) return poison(sema);
  return become(sema, e, call2(sema, e, "reshape", y, part_ints(sema, e, no, out)));
}

// addmm(input, mat1, mat2, *, beta=1, alpha=1), baddbmm (batch1, batch2), addmv (mat,
// vec), addr (vec1, vec2), addbmm (batch1, batch2, summed over the batch): beta * input
// + alpha * (the product), input broadcast to the product's shape
TType *ck_addmm(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const struct {
    const char *name, *product, *p1, *p2;
  } forms[] = {{"addmm", "mm", "mat1", "mat2"},   {"baddbmm", "bmm", "batch1", "batch2"},
               {"addmv", "mv", "mat", "vec"},     {"addr", "outer", "vec1", "vec2"},
               {"addbmm", "bmm_sum", "batch1", "batch2"}};
  int f = 0;
  while (strcmp(forms[f].name, d->b.name)) f++;
  Ast *in = e->bargs[0], *ba = barg(e, 3), *aa = barg(e, 4);
  if (!get_tensor(sema, e, e->bargs[1], forms[f].p1) || !get_tensor(sema, e, e->bargs[2], forms[f].p2))
    return poison(sema);
  for (Ast *s = ba; s; s = s == ba ? aa : NULL)
    if (!is_scalar(s->ty)) {
      diag_error(sema->cx, s->loc, "%s(): argument '%s' must be Number, not %s", d->b.name, s == ba ? "beta" : "alpha",
                 py_type_name(s->ty));
      return poison(sema);
    }
  Ast *p = part_call(sema, e, forms[f].product, (Ast *[]){e->bargs[1], e->bargs[2]}, 2);
  if (is_poison(p->ty)) return poison(sema);
  View ev;
  if (!expand_to(sema, call_loc(e), in->ty, p->ty->view.ndim, p->ty->view.shape, &ev)) return poison(sema);
  if (aa && aa->ty->fval != 1) p = part_binary(sema, e, OP_MUL, "mul", p, aa);
  if (ba && ba->ty->fval == 0) return become(sema, e, part_call(sema, e, "clone", &p, 1));  // beta=0 ignores input
  Ast *s = ba && ba->ty->fval != 1 ? part_binary(sema, e, OP_MUL, "mul", in, ba) : in;
  return become(sema, e, part_binary(sema, e, OP_ADD, "add", s, p));
}

// norm(input, p='fro', dim=None, keepdim=False, dtype=None): vector p-norms over dim (all
// dims by default); 'fro' is the 2-norm
TType *ck_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *pa = barg(e, 1), *da = barg(e, 2), *ka = barg(e, 3), *dta = barg(e, 4);
  double p = 2;
  if (pa && pa->ty->kind == TY_STR) {
    if (strcmp(pa->ty->module, "fro")) {
      diag_error(sema->cx, pa->loc, "norm: p='%s' is not supported: tdsl has the vector p-norms and 'fro'",
                 pa->ty->module);
      return poison(sema);
    }
  } else if (pa && is_scalar(pa->ty)) {
    p = pa->ty->fval;
  } else if (pa) {
    diag_error(sema->cx, pa->loc, "norm(): argument 'p' must be Number, not %s", py_type_name(pa->ty));
    return poison(sema);
  }
  if (dta) {
    x = call2(sema, e, "to", x, dta);
    if (is_poison(x->ty)) return poison(sema);
  }
  if (!dtype_is_float(x->ty->dtype)) {
    diag_error(sema->cx, call_loc(e), "norm(): input dtype should be either floating point or complex. Got %s instead.",
               torch_name(x->ty->dtype));
    return poison(sema);
  }
  Ast *a = part_call(sema, e, "abs", &x, 1);
  Ast *dims = da ? da : part_ints(sema, e, 0, NULL);
  Ast *keep = ka ? ka : part_int(sema, e, 0);
  if (!ka) keep->ty = ty_bool(sema, false);
  Ast *r;
  if (isinf(p)) {
    r = part_call(sema, e, p > 0 ? "amax" : "amin", (Ast *[]){a, dims, keep}, 3);
  } else if (p == 0) {
    Ast *nz = part_binary(sema, e, OP_NE, "ne", x, part_int(sema, e, 0));
    r = part_call(sema, e, "sum", (Ast *[]){part_cast(sema, e, nz, x->ty->dtype == DT_F64 ? "double" : "float"), dims,
                                            keep}, 3);
  } else if (p == 1) {
    r = part_call(sema, e, "sum", (Ast *[]){a, dims, keep}, 3);
  } else if (p == 2) {
    r = part_call(sema, e, "sqrt", (Ast *[]){part_call(sema, e, "sum", (Ast *[]){part_binary(sema, e, OP_MUL, "mul", x,
                                                                                             x), dims, keep}, 3)}, 1);
  } else {
    Ast *s = part_call(sema, e, "sum", (Ast *[]){part_binary(sema, e, OP_POW, "pow", a, part_float(sema, e, p)), dims,
                                                 keep}, 3);
    r = part_binary(sema, e, OP_POW, "pow", s, part_float(sema, e, 1.0 / p));
  }
  if (dtype_is_half(x->ty->dtype) && r->ty->dtype != x->ty->dtype) r = call2(sema, e, "to", r, part_dtype(sema, e, x->ty->dtype));
  return become(sema, e, r);
}
