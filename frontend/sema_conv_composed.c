// frontend/sema_conv_composed.c: the ops torch.nn.functional composes of avg_pool and
// interpolate: lp_pool1d, lp_pool2d, local_response_norm, and the deprecated upsample,
// upsample_nearest, upsample_bilinear. Each is checked as PyTorch 1.13's Python code
// calls those ops: their checks, with their messages (and their names in them), on the
// arguments that code gives them; then built by ir/build_conv.c.
#include "frontend/sema_internal.h"

#include <string.h>

// The call avg_poolNd(x, kernel_size, stride, 0, ceil_mode) that PyTorch's lp_pool and
// local_response_norm make, as a call of the avg_pool row (for its checks and words): x
// is a value of type xt at e's place.
static Ast *avg_pool_call(Sema *sema, const Ast *e, int nsp, const TType *xt, Ast *ka, Ast *sa, Ast *ca) {
  Ast *c = ast_new(sema->cx, AST_CALL, e->loc);
  c->oploc = e->oploc;
  c->bi = &builtin_find_form(nsp == 1 ? "avg_pool1d" : "avg_pool2d", F_NNF)->b;
  Ast *x = ast_new(sema->cx, AST_NAME, e->loc), *zero = part_int(sema, e, 0);
  x->ty = (TType *)xt;
  Ast *args[5] = {x, ka, sa, zero, ca};
  c->bargs = arena_alloc(&sema->cx->arena, sizeof args);
  memcpy(c->bargs, args, sizeof args);
  c->nbargs = 5;
  return c;
}

// lp_pool1d / lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
// s = avg_pool(input ** norm_type, kernel_size, stride, 0, ceil_mode), then
// (sign(s) * relu(abs(s))) * (kw * kh), to the power 1 / norm_type.
TType *ck_lp_pool(Sema *sema, Ast *e, const BuiltinDef *d) {
  int nsp = d->variant;
  Ast *x = e->bargs[0], *pa = e->bargs[1], *ka = e->bargs[2];
  if (!is_scalar(pa->ty)) {
    diag_error(sema->cx, pa->loc, "pow(): argument 'exponent' must be Number, not %s", py_type_name(pa->ty));
    return poison(sema);
  }
  double norm = pa->ty->dtype == DT_BOOL ? (double)pa->ty->ival : pa->ty->fval;
  int64_t kk[MAX_LIST];
  int n;
  if (!get_ints(sema, e, ka, "kernel_size", kk, &n)) return poison(sema);
  DType pd;
  if (!binary_dtype(sema, call_loc(e), OP_POW, x->ty, pa->ty, &pd)) return poison(sema);
  TType *xp = ty_fresh(sema, pd, x->ty->view.ndim, x->ty->view.shape);  // x ** norm_type
  PoolArgs a = {.kind = POOL_LP, .nsp = nsp, .norm_type = norm, .count_include_pad = true};
  bool ceil_mode;
  if (!pool_args(sema, avg_pool_call(sema, e, nsp, xp, ka, barg(e, 3), barg(e, 4)), nsp, false, a.k, a.s, a.p, a.dil,
                 &ceil_mode, a.out))
    return poison(sema);
  if (nsp == 1 && !is_scalar(ka->ty)) {  // lp_pool1d multiplies by kernel_size itself
    diag_error(sema->cx, ka->loc, "mul(): argument 'other' (position 1) must be Tensor, not %s",
               py_type_name(ka->ty));
    return poison(sema);
  }
  if (norm == 0) {
    diag_error(sema->cx, pa->loc, "float division by zero");
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, a), (Ast *[]){x, pa}, 2);
}

// local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0): input / (k + alpha *
// avg over `size` channels around each of input^2, zero padded)^beta.
TType *ck_local_response_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *sa = e->bargs[1];
  Ast *al = barg(e, 2) ? e->bargs[2] : part_float(sema, e, 1e-4), *be = barg(e, 3) ? e->bargs[3] : part_float(sema, e, 0.75),
      *ka = barg(e, 4) ? e->bargs[4] : part_float(sema, e, 1.0);
  TType *xt = get_tensor(sema, e, x, "input");
  int64_t size;
  if (!xt) return poison(sema);
  int nd = xt->view.ndim;
  if (nd < 3) {
    diag_error(sema->cx, x->loc, "Expected 3D or higher dimensionality                          input (got %d "
               "dimensions)", nd);
    return poison(sema);
  }
  if (!get_int(sema, e, sa, "size", &size)) return poison(sema);
  LrnArgs a = {.size = size};
  if (view_numel(xt->view) != 0) {  // avg_pool2d's checks of the squares, padded and reshaped
    const int64_t *xs = xt->view.shape;
    int64_t rest = 1;
    for (int i = 2; i < nd; i++) rest *= xs[i];
    int64_t lo = size >= 0 ? size / 2 : -((-size + 1) / 2), hi = size - 1 >= 0 ? (size - 1) / 2 : -((-size + 2) / 2);
    int64_t shape[4] = {xs[0], 1, xs[1] + lo + hi, rest}, kernel[2] = {size, 1};
    DType sq;
    if (!binary_dtype(sema, call_loc(e), OP_MUL, xt, xt, &sq)) return poison(sema);
    PoolArgs p;
    bool ceil_mode;
    Ast *c = avg_pool_call(sema, e, 2, ty_fresh(sema, sq, 4, shape), part_ints(sema, e, 2, kernel), part_int(sema, e, 1),
                           NULL);
    if (!pool_args(sema, c, 2, false, p.k, p.s, p.p, p.dil, &ceil_mode, p.out)) return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, a), (Ast *[]){x, al, be, ka}, 4);
}

// upsample(input, size=None, scale_factor=None, mode='nearest', align_corners=None),
// upsample_nearest(input, size=None, scale_factor=None) and upsample_bilinear(input,
// size=None, scale_factor=None): interpolate with mode 'nearest', or 'bilinear' and
// align_corners=True, after PyTorch's deprecation warning.
TType *ck_upsample(Sema *sema, Ast *e, const BuiltinDef *d) {
  const char *name = d->b.name;
  diag_warning(sema->cx, call_loc(e), "nn.functional.%s is deprecated. Use nn.functional.interpolate instead.",
               name);
  Ast *args[7] = {e->bargs[0], barg(e, 1), barg(e, 2), barg(e, 3), barg(e, 4), NULL, NULL};
  if (d->variant == 1) {  // upsample_bilinear
    args[3] = ast_str(sema->cx, "bilinear", e->loc);
    args[3]->ty = ty_new(sema, TY_STR);
    args[3]->ty->module = args[3]->name;
    args[4] = ast_bool(sema->cx, true, e->loc);
    args[4]->ty = ty_bool(sema, true);
  }
  const BuiltinDef *interp = builtin_find_form("interpolate", F_NNF);
  e->bi = &interp->b;  // interpolate's checks and words, on these arguments
  e->bargs = arena_alloc(&sema->cx->arena, sizeof args);
  memcpy(e->bargs, args, sizeof args);
  e->nbargs = 7;
  return interp->check(sema, e, interp);
}
