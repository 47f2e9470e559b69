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

static Ast *call(Sema *sema, const Ast *e, const char *op, Ast *a, Ast *b) {
  Ast *args[2] = {a, b};
  return part_call(sema, e, op, args, b ? 2 : 1);
}
static Ast *num(Sema *sema, const Ast *e, double v) { return part_float(sema, e, v); }
static Ast *bin(Sema *sema, const Ast *e, Op op, Ast *a, Ast *b) { return part_binary(sema, e, op, op_name(op), a, b); }
static Ast *where3(Sema *sema, const Ast *e, Ast *c, Ast *a, Ast *b) {
  return part_call(sema, e, "where", (Ast *[]){c, a, b}, 3);
}
static Ast *as_float(Sema *sema, const Ast *e, Ast *x) {  // ints and bool as f32, as float math promotes them
  return dtype_is_float(x->ty->dtype) ? x : part_cast(sema, e, x, "float");
}
static TType *done(Sema *sema, Ast *e, Ast *y) { return is_poison(y->ty) ? poison(sema) : become(sema, e, y); }

// ============================================================================
// Elementwise
// ============================================================================
// clamp_min(input, min) / clamp_max(input, max)
TType *ck_clamp_one(Sema *sema, Ast *e, const BuiltinDef *d) {
  bool lo = !strcmp(d->b.name, "clamp_min");
  Ast *args[3] = {e->bargs[0], lo ? e->bargs[1] : NULL, lo ? NULL : e->bargs[1]};
  return done(sema, e, part_call(sema, e, "clamp", args, 3));
}

// logical_xor(input, other): (input != 0) != (other != 0)
TType *ck_logical_xor(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = call(sema, e, "bool", e->bargs[0], NULL), *b = e->bargs[1];
  if (is_tensor(b->ty)) b = call(sema, e, "bool", b, NULL);
  else if (!is_scalar(b->ty)) return get_tensor(sema, e, b, "other"), poison(sema);
  else b = part_int(sema, e, b->ty->fval != 0), b->ty = ty_bool(sema, b->ival != 0);
  return done(sema, e, bin(sema, e, OP_NE, a, b));
}

// deg2rad / rad2deg: a product with pi / 180 or its inverse (ints give f32)
TType *ck_deg2rad(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  if (x->ty->dtype == DT_BOOL) {
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for 'Bool'", d->b.name);
    return poison(sema);
  }
  double k = d->b.name[0] == 'd' ? PI / 180.0 : 180.0 / PI;
  return done(sema, e, bin(sema, e, OP_MUL, as_float(sema, e, x), num(sema, e, k)));
}

// xlogy(self, other): nan where other is nan, 0 where self is 0, else self * log(other)
TType *ck_xlogy(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *y = e->bargs[1];
  if (!is_tensor(y->ty) && !is_scalar(y->ty)) return get_tensor(sema, e, y, "other"), poison(sema);
  Ast *lg = part_unary(sema, e, OP_LOG, "log", is_tensor(y->ty) ? as_float(sema, e, y) : y);
  if (is_poison(lg->ty)) return poison(sema);
  Ast *p = bin(sema, e, OP_MUL, x, lg);
  if (is_poison(p->ty)) return poison(sema);
  Ast *r = where3(sema, e, bin(sema, e, OP_EQ, x, part_int(sema, e, 0)), num(sema, e, 0), p);
  if (is_tensor(y->ty) && dtype_is_float(y->ty->dtype))
    r = where3(sema, e, bin(sema, e, OP_NE, y, y), num(sema, e, NAN), r);
  return done(sema, e, r);
}

// heaviside(input, values): values where input == 0, else input > 0; one dtype
TType *ck_heaviside(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *v = e->bargs[1];
  if (!get_tensor(sema, e, v, "values")) return poison(sema);
  if (x->ty->dtype != v->ty->dtype) {
    diag_error(sema->cx, call_loc(e), "heaviside is not yet implemented for tensors with different dtypes.");
    return poison(sema);
  }
  Ast *zero = part_int(sema, e, 0);
  Ast *step = call(sema, e, "to", bin(sema, e, OP_GT, x, zero), part_dtype(sema, e, x->ty->dtype));
  return done(sema, e, where3(sema, e, bin(sema, e, OP_EQ, x, zero), v, step));
}

// logit(input, eps=None): log(z / (1 - z)), z clamped to [eps, 1 - eps] when eps is given
TType *ck_logit(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *z = as_float(sema, e, e->bargs[0]), *ea = barg(e, 1);
  if (ea && !is_scalar(ea->ty)) {
    diag_error(sema->cx, ea->loc, "logit(): argument 'eps' must be float, not %s", py_type_name(ea->ty));
    return poison(sema);
  }
  if (ea) z = part_call(sema, e, "clamp", (Ast *[]){z, num(sema, e, ea->ty->fval), num(sema, e, 1 - ea->ty->fval)}, 3);
  Ast *q = bin(sema, e, OP_DIV, z, bin(sema, e, OP_SUB, num(sema, e, 1), z));
  return done(sema, e, part_unary(sema, e, OP_LOG, "log", q));
}

// sinc(input): sin(pi x) / (pi x), 1 at 0
TType *ck_sinc(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = as_float(sema, e, e->bargs[0]);
  Ast *px = bin(sema, e, OP_MUL, x, num(sema, e, PI));
  Ast *s = bin(sema, e, OP_DIV, part_unary(sema, e, OP_SIN, "sin", px), px);
  return done(sema, e, where3(sema, e, bin(sema, e, OP_EQ, x, part_int(sema, e, 0)), num(sema, e, 1), s));
}

// fmax / fmin: maximum / minimum where a NaN loses to a number
TType *ck_fmax(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  if (!get_tensor(sema, e, b, "other")) return poison(sema);
  bool mx = d->b.name[1] == 'm' && d->b.name[2] == 'a';
  Ast *m = bin(sema, e, mx ? OP_MAXIMUM : OP_MINIMUM, a, b);
  if (is_poison(m->ty) || !dtype_is_float(m->ty->dtype)) return done(sema, e, m);
  Ast *r = where3(sema, e, bin(sema, e, OP_NE, b, b), a, m);
  return done(sema, e, where3(sema, e, bin(sema, e, OP_NE, a, a), b, r));
}

// float_power(input, exponent): pow computed in f64
TType *ck_float_power(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = e->bargs[0], *b = e->bargs[1];
  if (is_tensor(b->ty)) b = call(sema, e, "double", b, NULL);
  else if (!is_scalar(b->ty)) return get_tensor(sema, e, b, "exponent"), poison(sema);
  return done(sema, e, bin(sema, e, OP_POW, call(sema, e, "double", a, NULL), b));
}

// signbit(input): copysign(1, x) < 0 (so -0.0 and -nan count); ints x < 0; bool false
TType *ck_signbit(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0];
  if (dtype_is_float(x->ty->dtype))
    x = part_call(sema, e, "copysign", (Ast *[]){part_call(sema, e, "ones_like", &x, 1), x}, 2);
  return done(sema, e, bin(sema, e, OP_LT, x, part_int(sema, e, 0)));
}

// hardshrink(input, lambd=0.5): x where |x| > lambd, else 0; softshrink moves x toward 0 by lambd
TType *ck_shrink(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *la = barg(e, 1);
  bool hard = d->b.name[0] == 'h';
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
  Ast *zero = num(sema, e, 0);
  if (hard) {
    Ast *keep = bin(sema, e, OP_GT, part_unary(sema, e, OP_ABS, "abs", x), num(sema, e, l));
    return done(sema, e, where3(sema, e, keep, x, zero));
  }
  Ast *lo = where3(sema, e, bin(sema, e, OP_LT, x, num(sema, e, -l)), bin(sema, e, OP_ADD, x, num(sema, e, l)), zero);
  return done(sema, e, where3(sema, e, bin(sema, e, OP_GT, x, num(sema, e, l)), bin(sema, e, OP_SUB, x, num(sema, e, l)),
                              lo));
}

// F.prelu(input, weight): x where x >= 0, else weight * x, weight per channel (dim 1)
TType *ck_prelu(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
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
  if (n != 1 && xv->ndim > 2) {  // [C] against [N, C, *]: C then ones
    int64_t shape[TD_MAX_DIMS];
    for (int i = 0; i < xv->ndim - 1; i++) shape[i] = i == 0 ? c : 1;
    w = call(sema, e, "view", w, part_ints(sema, e, xv->ndim - 1, shape));
  }
  Ast *neg = bin(sema, e, OP_MUL, w, x);
  return done(sema, e, where3(sema, e, bin(sema, e, OP_GE, x, part_int(sema, e, 0)), x, neg));
}

// addcmul(input, tensor1, tensor2, *, value=1) / addcdiv: input + value * t1 (* or /) t2
TType *ck_addcmul(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *in = e->bargs[0], *t1 = e->bargs[1], *t2 = e->bargs[2], *va = barg(e, 3);
  bool div = !strcmp(d->b.name, "addcdiv");
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
  Ast *p = bin(sema, e, div ? OP_DIV : OP_MUL, t1, t2);
  if (va && va->ty->fval != 1) p = bin(sema, e, OP_MUL, va, p);
  return done(sema, e, bin(sema, e, OP_ADD, in, p));
}

// mv(input, vec): a 2-D by 1-D matmul
TType *ck_mv(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *m = e->bargs[0], *v = e->bargs[1];
  if (!get_tensor(sema, e, v, "vec")) return poison(sema);
  if (m->ty->view.ndim != 2 || v->ty->view.ndim != 1) {
    diag_error(sema->cx, call_loc(e), "vector + matrix @ vector expected, got 1, %d, %d", m->ty->view.ndim,
               v->ty->view.ndim);
    return poison(sema);
  }
  return done(sema, e, call(sema, e, "matmul", m, v));
}

// ============================================================================
// Reductions
// ============================================================================
// trace(input): the sum of the main diagonal of a matrix
TType *ck_trace(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0];
  if (x->ty->view.ndim != 2) {
    diag_error(sema->cx, call_loc(e), "trace: expected a matrix, but got tensor with dim %d", x->ty->view.ndim);
    return poison(sema);
  }
  return done(sema, e, call(sema, e, "sum", call(sema, e, "diagonal", x, NULL), NULL));
}

// count_nonzero(input, dim=None): sum(input != 0) in i64
TType *ck_count_nonzero(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *nz = bin(sema, e, OP_NE, e->bargs[0], part_int(sema, e, 0));
  return done(sema, e, part_call(sema, e, "sum", (Ast *[]){nz, barg(e, 1)}, 2));
}

// nansum(input, dim=None, keepdim=False, *, dtype=None): the sum with NaN as 0;
// nanmean: that sum over the count of the others
TType *ck_nansum(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *dim = barg(e, 1), *keep = barg(e, 2), *dt = barg(e, 3);
  bool mean = !strcmp(d->b.name, "nanmean");
  if (mean && !dtype_is_float(x->ty->dtype)) {
    diag_error(sema->cx, call_loc(e), "nanmean(): expected input to have floating point dtype but got %s",
               torch_name(x->ty->dtype));
    return poison(sema);
  }
  Ast *ok = dtype_is_float(x->ty->dtype) ? bin(sema, e, OP_EQ, x, x) : NULL;
  Ast *v = ok ? where3(sema, e, ok, x, num(sema, e, 0)) : x;
  Ast *s = part_call(sema, e, "sum", (Ast *[]){v, dim, keep, dt}, 4);
  if (!mean || is_poison(s->ty)) return done(sema, e, s);
  Ast *n = part_call(sema, e, "sum", (Ast *[]){ok, dim, keep}, 3);
  return done(sema, e, bin(sema, e, OP_DIV, s, n));
}

// aminmax(input, *, dim=None, keepdim=False): (min, max), torch.return_types.aminmax
TType *ck_aminmax(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  static const char *const fields[] = {"min", "max"};
  Ast *x = e->bargs[0], *dim = barg(e, 1), *keep = barg(e, 2);
  Ast *lo = part_call(sema, e, "amin", (Ast *[]){x, dim, keep}, 3);
  Ast *hi = part_call(sema, e, "amax", (Ast *[]){x, dim, keep}, 3);
  if (is_poison(lo->ty) || is_poison(hi->ty)) return poison(sema);
  TType *t = tuple_result(sema, e, (Ast *[]){lo, hi}, 2);
  t->fields = fields;
  return t;
}

// ============================================================================
// Views and tuples
// ============================================================================
// ravel(input): flatten, a view when it can be
TType *ck_ravel(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  return done(sema, e, call(sema, e, "reshape", e->bargs[0], part_int(sema, e, -1)));
}

// diag(input, diagonal=0): of a matrix its diagonal (a view, copied as PyTorch's is); of
// a vector the square matrix with it on the diagonal (where over compared aranges)
TType *ck_diag(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *ka = barg(e, 1);
  int64_t k = 0;
  if (ka && !get_int(sema, e, ka, "diagonal", &k)) return poison(sema);
  int nd = x->ty->view.ndim;
  if (nd != 1 && nd != 2) {
    diag_error(sema->cx, call_loc(e), "diag(): Supports 1D or 2D tensors. Got %dD", nd);
    return poison(sema);
  }
  if (nd == 2) {
    Ast *dg = part_call(sema, e, "diagonal", (Ast *[]){x, part_int(sema, e, k)}, 2);
    return done(sema, e, call(sema, e, "clone", dg, NULL));
  }
  int64_t n = x->ty->view.shape[0], ak = k < 0 ? -k : k, m = n + ak;
  Ast *v = x;
  if (ak) {  // x padded with |k| zeros, read along rows (k >= 0) or columns (k < 0)
    Ast *z = part_call(sema, e, "zeros", (Ast *[]){part_int(sema, e, ak), NULL}, 2);
    z = call(sema, e, "to", z, part_dtype(sema, e, x->ty->dtype));
    v = call(sema, e, "cat", part_seq(sema, e, TY_LIST, (Ast *[]){x, z}, 2), NULL);
  }
  if (k >= 0) v = call(sema, e, "unsqueeze", v, part_int(sema, e, 1));
  Ast *on = part_triangle(sema, e, m, m, k, true), *below = part_triangle(sema, e, m, m, k, false);
  Ast *zero = x->ty->dtype == DT_BOOL ? part_int(sema, e, 0) : num(sema, e, 0);
  if (x->ty->dtype == DT_BOOL) zero->ty = ty_bool(sema, false);
  else if (!dtype_is_float(x->ty->dtype)) zero = part_int(sema, e, 0);
  return done(sema, e, where3(sema, e, bin(sema, e, OP_LOGICAL_AND, on, below), v, zero));
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
  Ast *d0 = part_int(sema, e, dims[0]), *d1 = part_int(sema, e, dims[1]);
  Ast *y = x;  // PyTorch's: k = 1 flips dims[1] then transposes, k = 3 flips dims[0] then transposes
  if (k == 1 || k == 3) y = call(sema, e, "flip", x, part_seq(sema, e, TY_LIST, k == 1 ? &d1 : &d0, 1));
  if (k == 2) y = call(sema, e, "flip", x, part_seq(sema, e, TY_LIST, (Ast *[]){d0, d1}, 2));
  if (k == 1 || k == 3) y = part_call(sema, e, "transpose", (Ast *[]){y, d0, d1}, 3);
  return done(sema, e, y);
}

// hsplit / vsplit / dsplit(input, indices_or_sections): tensor_split along dim 1 (0 for a
// vector), 0 or 2, an int count dividing the dim
TType *ck_hsplit(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *s = e->bargs[1];
  int nd = x->ty->view.ndim;
  char c = d->b.name[0];
  int need = c == 'h' ? 1 : c == 'v' ? 2 : 3, dim = c == 'h' ? (nd == 1 ? 0 : 1) : c == 'v' ? 0 : 2;
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
  Ast *t = part_call(sema, e, "tensor_split", (Ast *[]){x, s, part_int(sema, e, dim)}, 3);
  if (is_poison(t->ty)) return poison(sema);
  return tuple_result(sema, e, t->operands, t->noperands);
}

// take_along_dim(input, indices, dim=None): gather along dim after broadcasting the other
// dims; without dim, of the flattened input
TType *ck_take_along_dim(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *ix = e->bargs[1], *da = barg(e, 2);
  if (!get_tensor(sema, e, ix, "indices")) return poison(sema);
  if (!da) {
    Ast *fx = call(sema, e, "reshape", x, part_int(sema, e, -1)), *fi = call(sema, e, "reshape", ix, part_int(sema, e, -1));
    return done(sema, e, part_call(sema, e, "gather", (Ast *[]){fx, part_int(sema, e, 0), fi}, 3));
  }
  int64_t dim;
  int a;
  if (!get_int(sema, e, da, "dim", &dim) || !wrap_dim(sema, da->loc, dim, x->ty->view.ndim, &a)) return poison(sema);
  const View *xv = &x->ty->view, *iv = &ix->ty->view;
  if (xv->ndim != iv->ndim) {
    diag_error(sema->cx, ix->loc, "torch.take_along_dim(): input and indices should have the same number of dimensions, "
               "but got %d dimensions for input, and %d dimensions for indices", xv->ndim, iv->ndim);
    return poison(sema);
  }
  int64_t xs[TD_MAX_DIMS], is[TD_MAX_DIMS];
  for (int i = 0; i < xv->ndim; i++) {
    int64_t b = xv->shape[i] == 1 ? iv->shape[i] : xv->shape[i];
    xs[i] = i == a ? xv->shape[i] : b;
    is[i] = i == a ? iv->shape[i] : b;
  }
  Ast *bx = call(sema, e, "expand", x, part_ints(sema, e, xv->ndim, xs));
  Ast *bi = call(sema, e, "expand", ix, part_ints(sema, e, xv->ndim, is));
  if (is_poison(bx->ty) || is_poison(bi->ty)) return poison(sema);
  return done(sema, e, part_call(sema, e, "gather", (Ast *[]){bx, part_int(sema, e, a), bi}, 3));
}

// ============================================================================
// Out-of-place writes: slice_scatter, select_scatter, diagonal_scatter, masked_scatter
// ============================================================================
// x's elements at the linear positions pos (i64, any shape), from src (pos's shape,
// converted to x's dtype): x.reshape(-1).index_copy(0, pos.reshape(-1), src.reshape(-1))
// reshaped back to x's shape.
static Ast *write_at(Sema *sema, const Ast *e, Ast *x, Ast *pos, Ast *src) {
  const TType *t = x->ty;
  Ast *flat = part_ints(sema, e, 1, (int64_t[]){-1});
  Ast *v = src->ty->dtype == t->dtype ? src : part_call(sema, e, "to", (Ast *[]){src, part_dtype(sema, e, t->dtype)}, 2);
  Ast *args[4] = {part_call(sema, e, "reshape", (Ast *[]){x, flat}, 2), part_int(sema, e, 0),
                  part_call(sema, e, "reshape", (Ast *[]){pos, flat}, 2), part_call(sema, e, "reshape", (Ast *[]){v, flat}, 2)};
  Ast *y = part_call(sema, e, "index_copy", args, 4);
  return part_call(sema, e, "reshape", (Ast *[]){y, part_ints(sema, e, t->view.ndim, t->view.shape)}, 2);
}

// The positions of x's elements a view of x takes: the view `op` (its arguments after
// the input in args[1..n)) of arange(numel).reshape(x.shape), whose values are positions.
static Ast *view_positions(Sema *sema, const Ast *e, const TType *t, const char *op, Ast **args, int n) {
  int64_t numel = 1;
  for (int i = 0; i < t->view.ndim; i++) numel *= t->view.shape[i];
  Ast *all = part_call(sema, e, "arange", (Ast *[]){part_int(sema, e, numel)}, 1);
  args[0] = part_call(sema, e, "reshape", (Ast *[]){all, part_ints(sema, e, t->view.ndim, t->view.shape)}, 2);
  return part_call(sema, e, op, args, n);
}

// slice_scatter(input, src, dim=0, start=None, end=None, step=1),
// select_scatter(input, src, dim, index), diagonal_scatter(input, src, offset=0, dim1=0,
// dim2=1): input with src written where the view (slice, select, diagonal) of it is.
TType *ck_view_scatter(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *src = e->bargs[1];
  if (!is_tensor(x->ty) || !is_tensor(src->ty)) {
    diag_error(sema->cx, call_loc(e), "%s(): argument '%s' must be Tensor, not %s", d->b.name,
               is_tensor(x->ty) ? "src" : "input", py_type_name(is_tensor(x->ty) ? src->ty : x->ty));
    return poison(sema);
  }
  const TType *t = x->ty;
  Ast *pos;
  if (d->b.name[1] == 'l') {  // slice_scatter: the positions along dim, as Python's slice takes them
    int64_t v[4] = {0, 0, INT64_MAX, 1};
    bool given[4] = {true, false, false, true};
    for (int i = 0; i < 4; i++) {
      const Ast *a = e->bargs[2 + i];
      if (!a || a->ty->kind == TY_NONE) continue;
      if (!is_scalar(a->ty) || a->ty->dtype == DT_F64) {
        diag_error(sema->cx, a->loc, "slice_scatter(): argument '%s' must be int, not %s",
                   (const char *[]){"dim", "start", "end", "step"}[i], py_type_name(a->ty));
        return poison(sema);
      }
      v[i] = a->ty->ival, given[i] = true;
    }
    int dim;
    if (!wrap_dim(sema, e->bargs[2] ? e->bargs[2]->loc : call_loc(e), v[0], t->view.ndim, &dim)) return poison(sema);
    if (v[3] <= 0) {
      diag_error(sema->cx, e->bargs[5]->loc, "slice step must be positive");
      return poison(sema);
    }
    int64_t n = t->view.shape[dim], lo = given[1] ? v[1] : 0, hi = given[2] ? v[2] : n;
    lo = lo < 0 ? (lo + n < 0 ? 0 : lo + n) : (lo > n ? n : lo);
    hi = hi < 0 ? (hi + n < 0 ? 0 : hi + n) : (hi > n ? n : hi);
    Ast *idx = part_call(sema, e, "arange", (Ast *[]){part_int(sema, e, lo), part_int(sema, e, hi < lo ? lo : hi),
                                                       part_int(sema, e, v[3])}, 3);
    Ast *args[3] = {NULL, part_int(sema, e, dim), idx};
    pos = view_positions(sema, e, t, "index_select", args, 3);
  } else if (d->b.name[1] == 'e') {  // select_scatter
    Ast *args[3] = {NULL, e->bargs[2], e->bargs[3]};
    pos = view_positions(sema, e, t, "select", args, 3);
  } else {  // diagonal_scatter
    Ast *args[4] = {NULL, e->bargs[2], e->bargs[3], e->bargs[4]};
    pos = view_positions(sema, e, t, "diagonal", args, 4);
  }
  if (is_poison(pos->ty)) return poison(sema);
  if (!same_shape(src->ty->view.ndim, src->ty->view.shape, pos->ty->view.ndim, pos->ty->view.shape)) {
    diag_error(sema->cx, src->loc, "expected src to have a size equal to the slice of self. src size = %s, slice size = %s",
               shape_str(sema, src->ty->view.ndim, src->ty->view.shape),
               shape_str(sema, pos->ty->view.ndim, pos->ty->view.shape));
    return poison(sema);
  }
  return done(sema, e, write_at(sema, e, x, pos, src));
}

// masked_scatter(input, mask, source): input and mask broadcast together; the k-th true
// element of the mask (row-major) takes source's k-th element. The k of each element is
// the running count of trues before it (cumsum): source.reshape(-1)[k] where the mask is
// true, input elsewhere. Too few source elements: index_select's error, at run time.
TType *ck_masked_scatter(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
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
  Ast *to = part_ints(sema, e, n, shape), *flat = part_ints(sema, e, 1, (int64_t[]){-1});
  if (m->ty->dtype != DT_BOOL) m = bin(sema, e, OP_NE, m, part_int(sema, e, 0));
  Ast *mf = part_call(sema, e, "reshape", (Ast *[]){part_call(sema, e, "broadcast_to", (Ast *[]){m, to}, 2), flat}, 2);
  Ast *xf = part_call(sema, e, "reshape", (Ast *[]){part_call(sema, e, "broadcast_to", (Ast *[]){x, to}, 2), flat}, 2);
  Ast *k = part_call(sema, e, "cumsum", (Ast *[]){mf, part_int(sema, e, 0)}, 2);  // i64 of a bool
  k = part_call(sema, e, "clamp", (Ast *[]){bin(sema, e, OP_SUB, k, part_int(sema, e, 1)), part_int(sema, e, 0)}, 2);
  Ast *sf = part_call(sema, e, "reshape", (Ast *[]){src, flat}, 2);
  Ast *v = part_call(sema, e, "index_select", (Ast *[]){sf, part_int(sema, e, 0), k}, 3);
  return done(sema, e, part_call(sema, e, "reshape", (Ast *[]){where3(sema, e, mf, v, xf), to}, 2));
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
  if (!strcmp(d->b.name, "real")) return done(sema, e, part_call(sema, e, "view_as", (Ast *[]){x, x}, 2));
  if (!strcmp(d->b.name, "isreal"))  // every element of a real tensor, NaN included
    return done(sema, e, part_call(sema, e, "ones_like", (Ast *[]){x, part_dtype(sema, e, DT_BOOL)}, 2));
  Ast *xf = as_float(sema, e, x);
  Ast *a = where3(sema, e, bin(sema, e, OP_LT, xf, part_int(sema, e, 0)), num(sema, e, PI), num(sema, e, 0));
  return done(sema, e, where3(sema, e, bin(sema, e, OP_NE, xf, xf), xf, a));
}

// ldexp(input, other): input * 2 ** other, in floats
TType *ck_ldexp(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *o = e->bargs[1];
  if (!get_tensor(sema, e, o, "other")) return poison(sema);
  Ast *p = bin(sema, e, OP_POW, num(sema, e, 2), as_float(sema, e, o));
  return done(sema, e, bin(sema, e, OP_MUL, as_float(sema, e, x), p));
}

// dist(input, other, p=2): norm(input - other, p)
TType *ck_dist(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *o = e->bargs[1];
  if (!get_tensor(sema, e, o, "other")) return poison(sema);
  Ast *df = bin(sema, e, OP_SUB, x, o);
  if (is_poison(df->ty)) return poison(sema);
  return done(sema, e, part_call(sema, e, "norm", (Ast *[]){df, barg(e, 2)}, 2));
}

// diff(input, n=1, dim=-1): x[1:] - x[:-1] along dim, n times (bool: !=)
TType *ck_diff(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
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
  Ast *y = x;
  for (int64_t i = 0; i < n && y->ty->view.shape[a] > 0; i++) {
    int64_t len = y->ty->view.shape[a] - 1;
    Ast *ad = part_int(sema, e, a);
    Ast *hi = part_call(sema, e, "narrow", (Ast *[]){y, ad, part_int(sema, e, 1), part_int(sema, e, len)}, 4);
    Ast *lo = part_call(sema, e, "narrow", (Ast *[]){y, ad, part_int(sema, e, 0), part_int(sema, e, len)}, 4);
    y = bin(sema, e, y->ty->dtype == DT_BOOL ? OP_NE : OP_SUB, hi, lo);
  }
  return done(sema, e, y == x ? call(sema, e, "clone", x, NULL) : y);
}

// inner(input, other): the sum over the last dims of both, a matmul with other's last
// dims moved first (1-D both: dot; a 0-d one: a product)
TType *ck_inner(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = e->bargs[0], *b = e->bargs[1];
  if (!get_tensor(sema, e, b, "other")) return poison(sema);
  int na = a->ty->view.ndim, nb = b->ty->view.ndim;
  if (na == 0 || nb == 0) return done(sema, e, bin(sema, e, OP_MUL, a, b));
  if (a->ty->view.shape[na - 1] != b->ty->view.shape[nb - 1]) {
    diag_error(sema->cx, call_loc(e), "inner() the last dimension must match on both input tensors but got shapes %s "
               "and %s", shape_str(sema, na, a->ty->view.shape), shape_str(sema, nb, b->ty->view.shape));
    return poison(sema);
  }
  // b [*, K] -> [K, prod(*)]; a @ that -> [*a, prod(*b)] -> [*a, *b]
  int64_t K = b->ty->view.shape[nb - 1], rest = view_numel(b->ty->view) / (K ? K : 1);
  Ast *bm = call(sema, e, "reshape", b, part_ints(sema, e, 2, (int64_t[]){K ? rest : 0, K}));
  Ast *p = call(sema, e, "matmul", a, call(sema, e, "t", bm, NULL));
  if (is_poison(p->ty)) return poison(sema);
  int64_t shape[2 * TD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < na - 1; i++) shape[n++] = a->ty->view.shape[i];
  for (int i = 0; i < nb - 1; i++) shape[n++] = b->ty->view.shape[i];
  return done(sema, e, call(sema, e, "reshape", p, part_ints(sema, e, n, shape)));
}

// take(input, index): the flattened input gathered at index, of index's shape
TType *ck_take(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *ix = e->bargs[1];
  if (!get_tensor(sema, e, ix, "index")) return poison(sema);
  Ast *flat = call(sema, e, "reshape", x, part_int(sema, e, -1));
  Ast *fi = call(sema, e, "reshape", ix, part_int(sema, e, -1));
  Ast *g = part_call(sema, e, "index_select", (Ast *[]){flat, part_int(sema, e, 0), fi}, 3);
  if (is_poison(g->ty)) return poison(sema);
  return done(sema, e, call(sema, e, "reshape", g, part_ints(sema, e, ix->ty->view.ndim, ix->ty->view.shape)));
}

// diagflat(input, offset=0): diag of the flattened input; narrow_copy: a narrow, copied
TType *ck_diagflat(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  if (!strcmp(d->b.name, "narrow_copy"))
    return done(sema, e, call(sema, e, "clone", part_call(sema, e, "narrow", e->bargs, 4), NULL));
  Ast *flat = call(sema, e, "reshape", x, part_int(sema, e, -1));
  return done(sema, e, part_call(sema, e, "diag", (Ast *[]){flat, barg(e, 1)}, 2));
}
