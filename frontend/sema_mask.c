// frontend/sema_mask.c: the ops that keep or replace elements by a mask — masked_fill,
// tril, triu — built from where and (for the triangles) the comparison of two aranges,
// which fusion computes inside the kernel that reads them: no mask is ever stored. And
// the ops whose result's shape depends on the values (nonzero, unique, masked_select,
// equal ...), refused with a message that says why.
#include "frontend/sema_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

// Whether the Python number v converts to dtype dt as PyTorch's checked_convert has it
// (reporting PyTorch's message at loc when not). An int converts to u8 from -255 up
// (wrapping), a float to a small int only inside its range.
bool scalar_fits(Sema *sema, Loc loc, const TType *v, DType dt) {
  static const char *const ctype[DT_COUNT] = {"bool",  "int",     "int64_t", "at::Half", "at::BFloat16",
                                              "float", "double",  "uint8_t", "int8_t",   "int16_t",
                                              "c10::complex<float>", "c10::complex<double>"};
  double f = v->dtype == DT_F64 ? v->fval : (double)v->ival;
  bool fits = true;
  if (dtype_is_small_int(dt)) {
    double lo = dt == DT_U8 ? 0 : dt == DT_I8 ? -128 : -32768, hi = dt == DT_U8 ? 255 : dt == DT_I8 ? 127 : 32767;
    fits = v->dtype == DT_F64 ? f >= lo && f <= hi : f >= (dt == DT_U8 ? -hi : lo) && f <= hi;
  } else if (dt == DT_I32) fits = isfinite(f) && f > -2147483649.0 && f < 2147483648.0;
  else if (dt == DT_I64) fits = v->dtype != DT_F64 || (isfinite(f) && fabs(f) < 9.2233720368547758e18);
  else if (dt == DT_F16) fits = !isfinite(f) || fabs(f) <= 65504.0;
  else if (dt == DT_BF16 || dt == DT_F32) fits = !isfinite(f) || fabs(f) <= FLT_MAX;
  if (!fits)
    diag_error(sema->cx, loc, "value cannot be converted to type %s without overflow", ctype[dt]);
  return fits;
}

// masked_fill(input, mask, value): where(mask, value, input) in input's dtype, of the
// shape input and mask broadcast to (PyTorch's out-of-place form expands input).
TType *ck_masked_fill(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *m = e->bargs[1], *v = e->bargs[2];
  const TType *xt = x->ty, *mt = get_tensor(sema, e, m, "mask");
  if (!mt) return poison(sema);
  if (mt->dtype != DT_BOOL) {
    diag_error(sema->cx, m->loc, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
               torch_name(mt->dtype));
    return poison(sema);
  }
  if (is_scalar(v->ty)) {
    if (!scalar_fits(sema, v->loc, v->ty, xt->dtype)) return poison(sema);
  } else if (is_tensor(v->ty)) {
    if (v->ty->view.ndim != 0) {
      diag_error(sema->cx, v->loc, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d "
                 "dimension(s).", v->ty->view.ndim);
      return poison(sema);
    }
  } else {
    diag_error(sema->cx, v->loc, "masked_fill() received an invalid combination of arguments - got (%s, %s), but "
               "expected (Tensor mask, Tensor value) or (Tensor mask, Number value)", py_type_name(m->ty),
               py_type_name(v->ty));
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){0}), e->bargs, 3);
}

// tril(input, diagonal=0) / triu: input where column - row <= diagonal (>= for triu) in
// the last two dims, else zero.
TType *ck_tril(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *ka = barg(e, 1);
  const TType *xt = x->ty;
  int64_t k = 0;
  int r;
  if (ka && !get_int(sema, e, ka, "diagonal", &k)) return poison(sema);
  if (!wrap_dim(sema, call_loc(e), -2, xt->view.ndim, &r)) return poison(sema);
  MathArgs ma = {.dim = r, .n = k, .lower = d->variant == 0};
  return built(sema, e, d->b.build, KEEP(sema, ma), e->bargs, 1);
}

// ============================================================================
// The ops whose result depends on the values: refused
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
