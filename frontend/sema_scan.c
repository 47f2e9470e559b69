// frontend/sema_scan.c: the op table's checkers of the cumulative ops (§6): cumsum,
// cumprod and logcumsumexp make one scan node each; cummax and cummin make two over
// the same input and dim, values and indices (ir/build_scan.c), as the named tuple
// torch.return_types.cummax (cummin) with .values and .indices. The dtypes are those
// PyTorch's CUDA kernels accept, with their messages: cumsum and cumprod of ints or
// bool give i64 (or `dtype`, the input converted first), never bool; logcumsumexp
// takes floats only; cummax and cummin take every dtype, their indices i64. A 0-d
// input scans its one element (dim 0 or -1).
#include "frontend/sema_internal.h"

// The node of scan `op` over x along dim a, of dtype dt, into e.
static TType *scan_node(Sema *sema, Ast *e, Ast *x, int a, DType dt) {
  const View *v = &x->ty->view;
  e->attr.dim = a;
  e->attr.dims = v->ndim ? 1u << a : 0;
  set_operand1(sema, e, x);
  return ty_fresh(sema, dt, v->ndim, v->shape);
}

// The input and its wrapped dim, bound as (input, dim, ...); false after the message.
static bool scan_args(Sema *sema, Ast *e, TType **x, int *a) {
  int64_t dim;
  *x = get_tensor(sema, e, e->bargs[0], "input");
  return *x && get_int(sema, e, e->bargs[1], "dim", &dim) &&
         wrap_dim(sema, e->bargs[1]->loc, dim, (*x)->view.ndim, a);
}

// cumsum(input, dim, *, dtype=None), cumprod(...), logcumsumexp(input, dim)
TType *ck_scan(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *x;
  int a;
  if (!scan_args(sema, e, &x, &a)) return poison(sema);
  Op op = d->b.op;
  DType dt = x->dtype;
  if (op == OP_LOGCUMSUMEXP) {
    if (!dtype_is_float(dt)) {
      diag_error(sema->cx, call_loc(e), "\"logcumsumexp_cuda\" not implemented for '%s'", torch_name(dt));
      return poison(sema);
    }
  } else {
    if (!dtype_is_float(dt)) dt = DT_I64;
    if (barg(e, 2) && !get_dtype(sema, e, e->bargs[2], &dt)) return poison(sema);
    if (dt == DT_BOOL) {
      diag_error(sema->cx, call_loc(e), "\"%s_cuda\" not implemented for 'Bool'", d->b.name);
      return poison(sema);
    }
  }
  return scan_node(sema, e, e->bargs[0], a, dt);
}

// cummax(input, dim), cummin(input, dim): (values, indices), built by ir/build_scan.c
TType *ck_cummax(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const char *const fields[] = {"values", "indices"};
  TType *x;
  int a;
  if (!scan_args(sema, e, &x, &a)) return poison(sema);
  ScanArgs sa = {.op = (Op)d->variant, .dim = a};
  TType *t = built(sema, e, d->b.build, KEEP(sema, sa), e->bargs, 1);
  if (!is_poison(t)) t->fields = fields;
  return t;
}
