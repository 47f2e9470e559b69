// frontend/sema_more.c: more of PyTorch's spellings, each built from ops tdsl has:
// clamp_min/clamp_max, logical_xor, deg2rad/rad2deg, ravel, trace, diag, mv, addcmul,
// addcdiv, aminmax, count_nonzero, nansum, nanmean, xlogy, heaviside, logit,
// sinc, fmax/fmin, float_power, signbit, hardshrink/softshrink, prelu, rot90,
// hsplit/vsplit/dsplit, take_along_dim, slice/select/diagonal/masked_scatter; and the ops
// whose result depends on the values
// (nonzero, unique, masked_select, equal ...), refused with a message that says why.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static const double PI = 3.14159265358979323846;


// ============================================================================
// Elementwise
// ============================================================================
// clamp_min(input, min) / clamp_max(input, max)
TType *ck_clamp_one(Sema *sema, Ast *e, const BuiltinDef *d) {
  bool lo = d->variant == 0;  // clamp_min (else clamp_max)
  Ast **args = arena_alloc(&sema->cx->arena, sizeof(Ast *) * 3);
  args[0] = e->bargs[0], args[1] = lo ? e->bargs[1] : NULL, args[2] = lo ? NULL : e->bargs[1];
  e->bargs = args;
  e->nbargs = 3;
  e->bi = node_builtin(OP_CLAMP);
  return ck_clamp(sema, e, d);
}

// logical_xor(input, other): (input != 0) != (other != 0)
TType *ck_logical_xor(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *b = e->bargs[1];
  if (!is_tensor(b->ty) && !is_scalar(b->ty)) return get_tensor(sema, e, b, "other"), poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){0}), e->bargs, 2);
}

// deg2rad / rad2deg: a product with pi / 180 or its inverse (ints give f32)
TType *ck_deg2rad(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  if (x->ty->dtype == DT_BOOL) {
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for 'Bool'", d->b.name);
    return poison(sema);
  }
  double k = d->variant == 0 ? PI / 180.0 : 180.0 / PI;  // deg2rad, rad2deg
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){.k = k}), e->bargs, 1);
}

// xlogy(self, other): nan where other is nan, 0 where self is 0, else self * log(other)
TType *ck_xlogy(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *y = e->bargs[1];
  if (!is_tensor(y->ty) && !is_scalar(y->ty)) return get_tensor(sema, e, y, "other"), poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){0}), e->bargs, 2);
}

// heaviside(input, values): values where input == 0, else input > 0; one dtype
TType *ck_heaviside(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *v = e->bargs[1];
  if (!get_tensor(sema, e, v, "values")) return poison(sema);
  if (x->ty->dtype != v->ty->dtype) {
    diag_error(sema->cx, call_loc(e), "heaviside is not yet implemented for tensors with different dtypes.");
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){0}), e->bargs, 2);
}

// logit(input, eps=None): log(z / (1 - z)), z clamped to [eps, 1 - eps] when eps is given
TType *ck_logit(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *ea = barg(e, 1);
  if (ea && !is_scalar(ea->ty)) {
    diag_error(sema->cx, ea->loc, "logit(): argument 'eps' must be float, not %s", py_type_name(ea->ty));
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){.flag = ea, .k = ea ? ea->ty->fval : 0}), e->bargs, 1);
}

// sinc(input): sin(pi x) / (pi x), 1 at 0
TType *ck_sinc(Sema *sema, Ast *e, const BuiltinDef *d) {
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){0}), e->bargs, 1);
}

// fmax / fmin: maximum / minimum where a NaN loses to a number
TType *ck_fmax(Sema *sema, Ast *e, const BuiltinDef *d) {
  if (!get_tensor(sema, e, e->bargs[1], "other")) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){.op = d->b.op}), e->bargs, 2);
}

// float_power(input, exponent): pow computed in f64
TType *ck_float_power(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *b = e->bargs[1];
  if (!is_tensor(b->ty) && !is_scalar(b->ty)) return get_tensor(sema, e, b, "exponent"), poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){0}), e->bargs, 2);
}

// signbit(input): copysign(1, x) < 0 (so -0.0 and -nan count); ints x < 0; bool false
TType *ck_signbit(Sema *sema, Ast *e, const BuiltinDef *d) {
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){0}), e->bargs, 1);
}

// hardshrink(input, lambd=0.5): x where |x| > lambd, else 0; softshrink moves x toward 0 by lambd
TType *ck_shrink(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *la = barg(e, 1);
  bool hard = d->variant == 0;  // hardshrink (else softshrink)
  if (!dtype_is_float(x->ty->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"%s_cuda\" not implemented for '%s'", d->b.name, torch_name(x->ty->dtype));
    return poison(sema);
  }
  if (la && !is_scalar(la->ty)) {
    diag_error(sema->cx, la->loc, "%s(): argument 'lambd' must be Number, not %s", d->b.name, py_type_name(la->ty));
    return poison(sema);
  }
  double l = la ? la->ty->fval : 0.5;
  if (!hard && l < 0) {
    diag_error(sema->cx, la->loc, "lambda must be greater or equal to 0, but found to be %g.", l);
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){.flag = hard, .k = l}), e->bargs, 1);
}

// F.prelu(input, weight): x where x >= 0, else weight * x, weight per channel (dim 1)
TType *ck_prelu(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *w = e->bargs[1];
  const TType *wt = get_tensor(sema, e, w, "weight");
  if (!wt) return poison(sema);
  const View *xv = &x->ty->view;
  int64_t c = xv->ndim >= 2 ? xv->shape[1] : 1, n = view_numel(wt->view);
  if (wt->view.ndim > 1 || (n != 1 && n != c)) {
    diag_error(sema->cx, w->loc, "Mismatch of parameter numbers and input channel size. Found parameter numbers = %"
               PRId64 " and channel size = %" PRId64 ".", n, c);
    return poison(sema);
  }
  MathArgs ma = {0};
  if (n != 1 && xv->ndim > 2) {  // [C] against [N, C, *]: C then ones
    ma.ndim = xv->ndim - 1;
    for (int i = 0; i < xv->ndim - 1; i++) ma.shape[i] = i == 0 ? c : 1;
  }
  return built(sema, e, d->b.build, KEEP(sema, ma), e->bargs, 2);
}

// addcmul(input, tensor1, tensor2, *, value=1) / addcdiv: input + value * t1 (* or /) t2
TType *ck_addcmul(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *in = e->bargs[0], *t1 = e->bargs[1], *t2 = e->bargs[2], *va = barg(e, 3);
  bool div = d->variant == 1;  // addcdiv (else addcmul)
  if (!get_tensor(sema, e, t1, "tensor1") || !get_tensor(sema, e, t2, "tensor2")) return poison(sema);
  if (va && !is_scalar(va->ty)) {
    diag_error(sema->cx, va->loc, "%s(): argument 'value' must be Number, not %s", d->b.name, py_type_name(va->ty));
    return poison(sema);
  }
  if (div && !dtype_is_float(t1->ty->dtype) && !dtype_is_float(t2->ty->dtype)) {
    diag_error(sema->cx, call_loc(e), "Integer division with addcdiv is no longer supported, and in a future  release "
               "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
               "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs "
               "and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
               "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.");
    return poison(sema);
  }
  bool scaled = va && va->ty->fval != 1;
  MathArgs ma = {.op = div ? OP_DIV : OP_MUL, .flag = scaled};
  return built(sema, e, d->b.build, KEEP(sema, ma), (Ast *[]){in, t1, t2, va}, scaled ? 4 : 3);
}

// count_nonzero(input, dim=None): sum(input != 0) in i64
TType *ck_count_nonzero(Sema *sema, Ast *e, const BuiltinDef *d) {
  ReduceCall r;
  if (!reduce_args(sema, e, OP_SUM, "sum", &r)) return poison(sema);
  ReduceArgs a = {.mask = r.mask, .dim = r.dim};
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}

// nansum(input, dim=None, keepdim=False, *, dtype=None): the sum with NaN as 0;
// nanmean: that sum over the count of the others
TType *ck_nansum(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  bool mean = d->variant == 1;
  if (mean && !dtype_is_float(x->ty->dtype)) {
    diag_error(sema->cx, call_loc(e), "nanmean(): expected input to have floating point dtype but got %s",
               torch_name(x->ty->dtype));
    return poison(sema);
  }
  ReduceCall r;
  if (!reduce_args(sema, e, OP_SUM, "sum", &r)) return poison(sema);
  ReduceArgs a = {.mask = r.mask, .dim = r.dim, .keepdim = r.keepdim, .dtype = r.dtype, .mean = mean};
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}

// aminmax(input, *, dim=None, keepdim=False): (min, max), torch.return_types.aminmax
TType *ck_aminmax(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const char *const fields[] = {"min", "max"};
  ReduceCall r;
  if (!reduce_args(sema, e, OP_AMIN, "amin", &r) || !reduce_args(sema, e, OP_AMAX, "amax", &r)) return poison(sema);
  ReduceArgs a = {.mask = r.mask, .dim = r.dim, .keepdim = r.keepdim};
  TType *t = built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
  if (!is_poison(t)) t->fields = fields;
  return t;
}

// ============================================================================
// Views and tuples
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

// ============================================================================
// Out-of-place writes: slice_scatter, select_scatter, diagonal_scatter, masked_scatter
// ============================================================================
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

// ============================================================================
// Ops whose result depends on the values
// ============================================================================
TType *ck_data_dependent(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const struct {
    const char *name, *why, *instead;
  } whys[] = {
      {"nonzero", "its shape is the number of nonzero elements",
       "compute on the mask (x != 0) instead, with torch.where(mask, a, b) or mask.sum()"},
      {"argwhere", "its shape is the number of nonzero elements",
       "compute on the mask (x != 0) instead, with torch.where(mask, a, b) or mask.sum()"},
      {"masked_select", "its shape is the number of true elements of the mask",
       "torch.where(mask, x, 0) keeps x's shape (mask.sum() counts them)"},
      {"unique", "its shape is the number of distinct values",
       "compare the values with a mask of a fixed shape, (x[:, None] == x[None, :])"},
      {"unique_consecutive", "its shape is the number of runs",
       "mark where runs start with a mask of a fixed shape, (x[1:] != x[:-1])"},
      {"bincount", "its shape is the largest value plus one",
       "give the number of classes: F.one_hot(x, num_classes=N).sum(0)"},
      {"equal", "it is a Python bool", "torch.eq(a, b).all() is the same answer as a tensor"},
      {"allclose", "it is a Python bool", "torch.isclose(a, b).all() is the same answer as a tensor"},
  };
  const char *why = "its result depends on the values", *instead = "compute with masks of a fixed shape";
  for (size_t i = 0; i < sizeof whys / sizeof whys[0]; i++)
    if (!strcmp(whys[i].name, d->b.name)) why = whys[i].why, instead = whys[i].instead;
  diag_error(sema->cx, call_loc(e), "%s() is not supported: %s, known only when the program runs: %s", d->b.name,
             why, instead);
  return poison(sema);
}

// ============================================================================
// A few more: real-valued forms of complex helpers, and small compositions
// ============================================================================
// real(x): x itself; isreal(x): all true; angle(x): pi where x < 0, else 0 (nan kept)
TType *ck_real(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  if (d->variant == 0) {  // real(x): x itself, a view
    set_operand1(sema, e, x);
    return ty_view_of(sema, x->ty, x->ty->view);
  }
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){0}), e->bargs, 1);  // isreal, angle
}

// ldexp(input, other): input * 2 ** other, in floats
TType *ck_ldexp(Sema *sema, Ast *e, const BuiltinDef *d) {
  if (!get_tensor(sema, e, e->bargs[1], "other")) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){0}), e->bargs, 2);
}

// dist(input, other, p=2): norm(input - other, p)
TType *ck_dist(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *o = e->bargs[1], *pa = barg(e, 2);
  if (!get_tensor(sema, e, o, "other")) return poison(sema);
  DType r;
  int nd = x->ty->view.ndim;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, x->ty->view.shape, sizeof(int64_t) * (size_t)nd);
  if (!binary_dtype(sema, call_loc(e), OP_SUB, x->ty, o->ty, &r) ||
      !broadcast(sema, call_loc(e), &nd, shape, o->ty->view.ndim, o->ty->view.shape))
    return poison(sema);
  ReduceArgs a = {.mask = nd ? (uint32_t)((1ull << nd) - 1) : 0, .dim = -1, .dtype = DT_COUNT};
  if (!norm_p(sema, pa, DT_COUNT, &a.p)) return poison(sema);
  if (!dtype_is_float(r)) {
    diag_error(sema->cx, call_loc(e), "norm(): input dtype should be either floating point or complex. Got %s instead.",
               torch_name(r));
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 2);
}

// diff(input, n=1, dim=-1): x[1:] - x[:-1] along dim, n times (bool: !=)
TType *ck_diff(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  int64_t n = 1, dim = -1;
  int a;
  if ((barg(e, 1) && !get_int(sema, e, e->bargs[1], "n", &n)) || (barg(e, 2) && !get_int(sema, e, e->bargs[2], "dim",
                                                                                          &dim)))
    return poison(sema);
  if (barg(e, 3) || barg(e, 4)) {
    diag_error(sema->cx, (barg(e, 3) ? e->bargs[3] : e->bargs[4])->loc, "diff(): prepend and append are not supported");
    return poison(sema);
  }
  if (x->ty->view.ndim == 0) {
    diag_error(sema->cx, call_loc(e), "diff expects input to be at least one-dimensional");
    return poison(sema);
  }
  if (!wrap_dim(sema, barg(e, 2) ? e->bargs[2]->loc : call_loc(e), dim, x->ty->view.ndim, &a)) return poison(sema);
  if (n < 0) {
    diag_error(sema->cx, e->bargs[1]->loc, "order must be non-negative but got %" PRId64, n);
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){.dim = a, .n = n}), e->bargs, 1);
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
