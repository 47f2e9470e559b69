// frontend/sema_create.c: the creation ops zeros, ones, full, arange and eye (and *_like,
// new_*), with
// PyTorch's default dtypes (f32; i64 for an all-int arange; full takes its value's) and
// its checks of sizes.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>

// ============================================================================
// Creation ops: zeros ones full arange eye (PyTorch's default dtypes)
// ============================================================================
static bool creation_shape(Sema *sema, const Ast *e, Ast *a, int64_t *shape, int *n) {
  if (!get_ints(sema, e, a, "size", shape, n)) return false;
  if (!check_rank(sema, a->loc, *n)) return false;
  for (int i = 0; i < *n; i++)
    if (shape[i] < 0) {
      diag_error(sema->cx, a->loc, "Trying to create tensor with negative dimension %" PRId64 ": %s", shape[i],
                 shape_str(sema, *n, shape));
      return false;
    }
  return check_numel(sema, a->loc, *n, shape);
}

TType *ck_zeros(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  int64_t shape[MAX_LIST];
  int n;
  DType dt = DT_F32;
  if (!creation_shape(sema, e, e->bargs[0], shape, &n)) return poison(sema);
  if (barg(e, 1) && !get_dtype(sema, e, e->bargs[1], &dt)) return poison(sema);
  set_operands(sema, e, NULL, 0);
  return ty_fresh(sema, dt, n, shape);
}

TType *ck_full(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  int64_t shape[MAX_LIST];
  int n;
  Ast *va = e->bargs[1];
  if (!creation_shape(sema, e, e->bargs[0], shape, &n)) return poison(sema);
  double re, im;
  if (!is_scalar(va->ty) && complex_const(va, &re, &im)) {  // Python's complex number: complex64 by default
    DType dt = DT_C64;
    if (barg(e, 2) && !get_dtype(sema, e, e->bargs[2], &dt)) return poison(sema);
    if (!dtype_is_complex(dt)) {
      diag_error(sema->cx, va->loc, "value cannot be converted to type %s without overflow",
                 dtype_is_float(dt) ? (dt == DT_F64 ? "double" : "float") : dt == DT_BOOL ? "bool" : "int64_t");
      return poison(sema);
    }
    return complex_full(sema, e, dt, n, shape, re, im);
  }
  if (!is_scalar(va->ty)) {
    diag_error(sema->cx, va->loc, "full(): argument 'fill_value' must be Number, not %s", py_type_name(va->ty));
    return poison(sema);
  }
  DType dt = va->ty->dtype == DT_F64 ? DT_F32 : va->ty->dtype;
  if (barg(e, 2) && !get_dtype(sema, e, e->bargs[2], &dt)) return poison(sema);
  if (dtype_is_int(dt) && !scalar_fits(sema, va->loc, va->ty, dt)) return poison(sema);
  e->attr.lo = va->ty->fval;
  e->attr.ilo = va->ty->ival;
  if (!dtype_is_float(dt) && va->ty->dtype == DT_F64) e->attr.ilo = (int64_t)va->ty->ival;
  set_operands(sema, e, NULL, 0);
  return ty_fresh(sema, dt, n, shape);
}

TType *ck_arange(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *as[3] = {e->bargs[0], barg(e, 1), barg(e, 2)};
  if (!as[1]) as[1] = as[0], as[0] = NULL;  // arange(end)
  double v[3] = {0, 0, 1};
  int64_t iv[3] = {0, 0, 1};
  bool all_int = true;
  static const char *names[3] = {"start", "end", "step"};
  for (int i = 0; i < 3; i++) {
    if (!as[i]) continue;
    if (!is_scalar(as[i]->ty)) {
      diag_error(sema->cx, as[i]->loc, "arange(): argument '%s' must be Number, not %s", names[i],
                 py_type_name(as[i]->ty));
      return poison(sema);
    }
    v[i] = as[i]->ty->fval;
    iv[i] = as[i]->ty->ival;
    if (as[i]->ty->dtype == DT_F64) all_int = false;
  }
  DType dt = all_int ? DT_I64 : DT_F32;
  if (barg(e, 3) && !get_dtype(sema, e, e->bargs[3], &dt)) return poison(sema);
  if (v[2] == 0) {
    diag_error(sema->cx, as[2] ? as[2]->loc : call_loc(e), "step must be nonzero");
    return poison(sema);
  }
  if ((v[2] > 0 && v[1] < v[0]) || (v[2] < 0 && v[1] > v[0])) {
    diag_error(sema->cx, call_loc(e), "upper bound and larger bound inconsistent with step sign");
    return poison(sema);
  }
  int64_t count;
  if (all_int) {
    if (fabs((double)iv[1] - (double)iv[0]) > 4e18 || iv[2] == INT64_MIN) {
      diag_error(sema->cx, call_loc(e), "invalid size, possible overflow?");
      return poison(sema);
    }
    int64_t span, st = iv[2];  // ceil(span / st), span and st of one sign
    bool fits = td_add(iv[1], -iv[0], &span);  // |span| <= 4e18, checked above
    TD_ASSERT(fits);
    count = span / st + (span % st != 0);
  } else {
    double c = ceil((v[1] - v[0]) / v[2]);
    if (!(c < 9.2e18)) {
      diag_error(sema->cx, call_loc(e), "invalid size, possible overflow?");
      return poison(sema);
    }
    count = (int64_t)c;
  }
  e->attr.lo = v[0];
  e->attr.hi = v[2];
  e->attr.ilo = iv[0];
  e->attr.ihi = iv[2];
  set_operands(sema, e, NULL, 0);
  return ty_fresh(sema, dt, 1, &count);
}

// linspace(start, end, steps, *, dtype=None), logspace(start, end, steps, base=10.0, *,
// dtype=None): of numbers (ir/build_create.c); the default dtype is f32
TType *ck_linspace(Sema *sema, Ast *e, const BuiltinDef *d) {
  bool log = d->variant == 1;
  const char *fn = log ? "logspace" : "linspace";
  static const char *const names[3] = {"start", "end", "steps"};
  double v[3];
  for (int i = 0; i < 3; i++) {
    Ast *a = e->bargs[i];
    if (is_tensor(a->ty)) {
      const CreateArgs *c = a->ty->view.ndim == 0 && i < 2 ? literal_of(sema, a) : NULL;
      if (!c) {
        diag_error(sema->cx, a->loc, "%s(): a tensor %s known only at run time is not supported: pass a number", fn,
                   names[i]);
        return poison(sema);
      }
      v[i] = c->dtype[0] == DT_F64 ? c->f[0] : (double)c->i[0];
      continue;
    }
    if (!is_scalar(a->ty) || (i == 2 && a->ty->dtype == DT_F64)) {
      diag_error(sema->cx, a->loc, "%s(): argument '%s' (position %d) must be %s, not %s", fn, names[i], i + 1,
                 i == 2 ? "int" : "Number", py_type_name(a->ty));
      return poison(sema);
    }
    v[i] = a->ty->dtype == DT_F64 ? a->ty->fval : (double)a->ty->ival;
  }
  int64_t steps = e->bargs[2]->ty->ival;
  if (steps < 0) {
    diag_error(sema->cx, e->bargs[2]->loc, "number of steps must be non-negative");
    return poison(sema);
  }
  double base = 10.0;
  Ast *ba = log ? barg(e, 3) : NULL, *dta = barg(e, log ? 4 : 3);
  if (ba && !get_float(sema, e, ba, "base", &base)) return poison(sema);
  DType dt = DT_F32;
  if (dta && !get_dtype(sema, e, dta, &dt)) return poison(sema);
  if (dt == DT_BOOL) {
    diag_error(sema->cx, call_loc(e), "\"%s_cpu\" not implemented for 'Bool'", fn);
    return poison(sema);
  }
  CreateArgs a = {.cast = dt, .start = v[0], .end = v[1], .base = base, .steps = steps, .log = log};
  return built(sema, e, d->b.build, KEEP(sema, a), NULL, 0);
}

TType *ck_eye(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  int64_t shape[2];
  DType dt = DT_F32;
  if (!get_int(sema, e, e->bargs[0], "n", &shape[0])) return poison(sema);
  shape[1] = shape[0];
  if (barg(e, 1) && !get_int(sema, e, e->bargs[1], "m", &shape[1])) return poison(sema);
  if (shape[0] < 0) {
    diag_error(sema->cx, e->bargs[0]->loc, "n must be greater or equal to 0, got %" PRId64, shape[0]);
    return poison(sema);
  }
  if (shape[1] < 0) {
    diag_error(sema->cx, e->bargs[1]->loc, "m must be greater or equal to 0, got %" PRId64, shape[1]);
    return poison(sema);
  }
  if (!check_numel(sema, call_loc(e), 2, shape)) return poison(sema);
  if (barg(e, 2) && !get_dtype(sema, e, e->bargs[2], &dt)) return poison(sema);
  set_operands(sema, e, NULL, 0);
  return ty_fresh(sema, dt, 2, shape);
}

// ============================================================================
// *_like and new_*
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
  if (e->bi->kind != BK_BUILD) e->bi = node_builtin(d->b.op);  // empty is zeros: its values are any (a complex fill: built)
  return t;
}
