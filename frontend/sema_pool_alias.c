// frontend/sema_pool_alias.c: the ops torch.nn.functional composes of avg_pool and
// interpolate: lp_pool1d, lp_pool2d, local_response_norm, and the deprecated upsample,
// upsample_nearest, upsample_bilinear.
// Invariants: each is built as parts of the ops PyTorch 1.13's Python code calls, in the
// same order and dtypes (halves round after each op as PyTorch's do); the errors of those
// ops are theirs, at the argument the user wrote; local_response_norm's avg_pool3d with a
// (size, 1, 1) window is avg_pool2d with a (size, 1) window over the input's trailing
// dims flattened (the same sums, divided by size).
#include "frontend/sema_internal.h"

#include <string.h>

// lp_pool1d / lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
// s = avg_pool(input ** norm_type, kernel_size, stride, 0, ceil_mode), then
// (sign(s) * relu(abs(s))) * (kw * kh), to the power 1 / norm_type.
TType *ck_lp_pool(Sema *sema, Ast *e, const BuiltinDef *d) {
  int nsp = d->b.name[7] - '0';
  Ast *x = e->bargs[0], *pa = e->bargs[1], *ka = e->bargs[2];
  if (!is_scalar(pa->ty)) {
    diag_error(sema->cx, pa->loc, "pow(): argument 'exponent' must be Number, not %s", py_type_name(pa->ty));
    return poison(sema);
  }
  double p = pa->ty->dtype == DT_BOOL ? (double)pa->ty->ival : pa->ty->fval;
  int64_t k[MAX_LIST];
  int n;
  if (!get_ints(sema, e, ka, "kernel_size", k, &n)) return poison(sema);
  Ast *xp = part_call(sema, e, "pow", (Ast *[]){x, pa}, 2);
  Ast *s = part_call(sema, e, nsp == 1 ? "avg_pool1d" : "avg_pool2d",
                     (Ast *[]){xp, ka, barg(e, 3), part_int(sema, e, 0), barg(e, 4)}, 5);
  if (is_poison(s->ty)) return poison(sema);
  if (nsp == 1 && !is_scalar(ka->ty)) {  // lp_pool1d multiplies by kernel_size itself
    diag_error(sema->cx, ka->loc, "mul(): argument 'other' (position 1) must be Tensor, not %s",
               py_type_name(ka->ty));
    return poison(sema);
  }
  if (p == 0) {
    diag_error(sema->cx, pa->loc, "float division by zero");
    return poison(sema);
  }
  int64_t area = nsp == 1 || n == 1 ? k[0] * (nsp == 2 ? k[0] : 1) : k[0] * k[1];
  Ast *r = p_bin(sema, e, OP_MUL, p_un(sema, e, OP_SIGN, s), p_un(sema, e, OP_RELU, p_un(sema, e, OP_ABS, s)));
  r = p_bin(sema, e, OP_MUL, r, part_int(sema, e, area));
  return become(sema, e, part_call(sema, e, "pow", (Ast *[]){r, p_f(sema, e, 1.0 / p)}, 2));
}

// local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0): input / (k + alpha *
// avg over `size` channels around each of input^2, zero padded)^beta.
TType *ck_local_response_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *sa = e->bargs[1];
  Ast *al = barg(e, 2) ? e->bargs[2] : p_f(sema, e, 1e-4), *be = barg(e, 3) ? e->bargs[3] : p_f(sema, e, 0.75),
      *ka = barg(e, 4) ? e->bargs[4] : p_f(sema, e, 1.0);
  const TType *xt = get_tensor(sema, e, x, "input");
  int64_t size;
  if (!xt) return poison(sema);
  int nd = xt->view.ndim;
  if (nd < 3) {
    diag_error(sema->cx, x->loc, "Expected 3D or higher dimensionality                          input (got %d "
               "dimensions)", nd);
    return poison(sema);
  }
  if (!get_int(sema, e, sa, "size", &size)) return poison(sema);
  if (view_numel(xt->view) == 0) return become(sema, e, part_call(sema, e, "clone", &x, 1));
  const int64_t *xs = xt->view.shape;
  int64_t rest = 1;
  for (int i = 2; i < nd; i++) rest *= xs[i];
  int64_t shape[4] = {xs[0], 1, xs[1], rest};
  int64_t lo = size >= 0 ? size / 2 : -((-size + 1) / 2), hi = size - 1 >= 0 ? (size - 1) / 2 : -((-size + 2) / 2);
  int64_t pads[4] = {0, 0, lo, hi}, win[2] = {size, 1};
  Ast *div = part_call(sema, e, "reshape", (Ast *[]){p_bin(sema, e, OP_MUL, x, x), part_ints(sema, e, 4, shape)}, 2);
  div = part_call(sema, e, "pad", (Ast *[]){div, part_ints(sema, e, 4, pads), NULL, NULL}, 4);
  div = part_call(sema, e, "avg_pool2d", (Ast *[]){div, part_ints(sema, e, 2, win), part_int(sema, e, 1)}, 3);
  if (is_poison(div->ty)) return poison(sema);
  div = part_call(sema, e, "reshape", (Ast *[]){div, part_ints(sema, e, nd, xs)}, 2);
  div = p_bin(sema, e, OP_ADD, p_bin(sema, e, OP_MUL, div, al), ka);
  div = part_call(sema, e, "pow", (Ast *[]){div, be}, 2);
  return become(sema, e, p_bin(sema, e, OP_DIV, x, div));
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
  if (!strcmp(name, "upsample_bilinear")) {
    args[3] = ast_str(sema->cx, "bilinear", e->loc);
    args[3]->ty = ty_new(sema, TY_STR);
    args[3]->ty->module = args[3]->name;
    args[4] = ast_bool(sema->cx, true, e->loc);
    args[4]->ty = ty_bool(sema, true);
  }
  return become(sema, e, part_call(sema, e, "interpolate", args, 7));
}
