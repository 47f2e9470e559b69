// frontend/sema_elementwise.c: the elementwise ops PyTorch composes of others —
// clamp_min/clamp_max, logical_xor, deg2rad/rad2deg, xlogy, heaviside, logit, sinc,
// fmax/fmin, float_power, signbit, addcmul/addcdiv, real/isreal/angle of real tensors,
// ldexp, diff — checked here, each built by its row's builder (ir/build_math.c). The
// primitive elementwise ops (one node each) are sema_math.c's.
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
