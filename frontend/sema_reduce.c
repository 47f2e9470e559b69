// frontend/sema_reduce.c: the reductions PyTorch composes of others — count_nonzero,
// nansum, nanmean, aminmax — checked here and built by ir/build_reduce.c (the plain
// reductions, sum, mean, amax ..., are sema_math.c's nodes).
#include "frontend/sema_internal.h"

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
