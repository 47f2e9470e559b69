// frontend/sema_act.c: the activations of torch.nn.functional that are no single node
// (softplus, leaky_relu, elu, selu, celu, hardtanh, relu6, hardsigmoid, hardswish, mish,
// softsign, logsigmoid, tanhshrink, threshold, glu, softmin, hardshrink, softshrink,
// prelu, rrelu): PyTorch 1.13's checks and
// messages, in its order; the arguments parsed into ActArgs for the row's builder
// (ir/build_act.c). The input dtypes each takes are its row's dtype rule.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

// The input of an activation (a tensor), inplace (argument inplace_at) refused, and the
// row's dtype rule when rule is set.
static TType *act_input(Sema *sema, const Ast *e, const BuiltinDef *d, int inplace_at, bool rule) {
  TType *xt = get_tensor(sema, e, e->bargs[0], "input");
  if (!xt || (inplace_at >= 0 && !no_inplace(sema, e, inplace_at))) return NULL;
  if (rule && !check_dtype_rule(sema, e, d, xt->dtype)) return NULL;
  return xt;
}

// e becomes the activation the row's builder makes of its input, with args a.
static TType *act_built(Sema *sema, Ast *e, const BuiltinDef *d, ActArgs a) {
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}

// F.softplus(input, beta=1, threshold=20)
TType *ck_softplus(Sema *sema, Ast *e, const BuiltinDef *d) {
  ActArgs a = {0};
  TType *xt = act_input(sema, e, d, -1, true);
  if (!xt || !num_arg(sema, e, 1, "beta", "Number", 1, &a.beta) ||
      !num_arg(sema, e, 2, "threshold", "Number", 20, &a.threshold))
    return poison(sema);
  return act_built(sema, e, d, a);
}

// F.leaky_relu(input, negative_slope=0.01, inplace=False)
TType *ck_leaky_relu(Sema *sema, Ast *e, const BuiltinDef *d) {
  ActArgs a = {0};
  TType *xt = act_input(sema, e, d, 2, true);
  if (!xt || !num_arg(sema, e, 1, "negative_slope", "Number", 0.01, &a.slope)) return poison(sema);
  return act_built(sema, e, d, a);
}

// F.rrelu(input, lower=1/8, upper=1/3, training=False, inplace=False), torch.rrelu: out of
// training, leaky_relu with the slope (lower + upper) / 2, as ATen's rrelu; training=True
// draws each slope at random and is refused
TType *ck_rrelu(Sema *sema, Ast *e, const BuiltinDef *d) {
  ActArgs a = {0};
  double lo, hi;
  bool training = false;
  if (!get_tensor(sema, e, e->bargs[0], "input") || !no_inplace(sema, e, 4) ||
      !num_arg(sema, e, 1, "lower", "Number", 0.125, &lo) || !num_arg(sema, e, 2, "upper", "Number", 1.0 / 3, &hi) ||
      (barg(e, 3) && !get_bool(sema, e, barg(e, 3), "training", &training)))
    return poison(sema);
  if (!(lo <= hi)) {
    diag_error(sema->cx, call_loc(e), "Lower bound should be less than or equal to the upper bound");
    return poison(sema);
  }
  if (training) {
    diag_error(sema->cx, barg(e, 3)->loc, "rrelu() with training=True is random and tdsl compiles inference: pass "
               "training=False");
    return poison(sema);
  }
  if (!act_input(sema, e, d, -1, true)) return poison(sema);
  a.slope = (lo + hi) / 2;
  return act_built(sema, e, d, a);
}

// F.elu(input, alpha=1.0, inplace=False)
TType *ck_elu(Sema *sema, Ast *e, const BuiltinDef *d) {
  ActArgs a = {.scale = 1, .input_scale = 1};
  TType *xt = act_input(sema, e, d, 2, true);
  if (!xt || !num_arg(sema, e, 1, "alpha", "float", 1, &a.alpha)) return poison(sema);
  return act_built(sema, e, d, a);
}

// F.selu(input, inplace=False): elu with PyTorch's alpha and scale
TType *ck_selu(Sema *sema, Ast *e, const BuiltinDef *d) {
  ActArgs a = {.alpha = 1.6732632423543772848170429916717, .scale = 1.0507009873554804934193349852946,
               .input_scale = 1};
  TType *xt = act_input(sema, e, d, 1, true);
  if (!xt) return poison(sema);
  return act_built(sema, e, d, a);
}

// F.celu(input, alpha=1.0, inplace=False): elu(x, alpha, input_scale=1/alpha)
TType *ck_celu(Sema *sema, Ast *e, const BuiltinDef *d) {
  ActArgs a = {.scale = 1};
  TType *xt = act_input(sema, e, d, 2, false);
  if (!xt || !num_arg(sema, e, 1, "alpha", "float", 1, &a.alpha)) return poison(sema);
  if (a.alpha == 0) {
    diag_error(sema->cx, barg(e, 1) ? e->bargs[1]->loc : call_loc(e), "ZeroDivisionError: alpha cannot be 0 for CELU");
    return poison(sema);
  }
  if (!act_input(sema, e, d, -1, true)) return poison(sema);
  a.input_scale = 1 / a.alpha;
  return act_built(sema, e, d, a);
}

// hardtanh's clamp: ints are accepted (bounds truncated to ints, which clamp's check makes
// fit the dtype; u8 with no negative bound), bool is not.
static TType *hardtanh_check(Sema *sema, Ast *e, const BuiltinDef *d, const TType *xt, ActArgs a) {
  if (xt->dtype == DT_BOOL) {
    diag_error(sema->cx, call_loc(e), "Bool inputs not supported for hardtanh");
    return poison(sema);
  }
  if (dtype_is_unsigned(xt->dtype) && (a.lo < 0 || a.hi < 0)) {
    diag_error(sema->cx, call_loc(e), "cannot do hardtanh on an unsigned type with negative limits");
    return poison(sema);
  }
  return act_built(sema, e, d, a);
}

// F.hardtanh(input, min_val=-1., max_val=1., inplace=False): clamp(x, min_val, max_val)
TType *ck_hardtanh(Sema *sema, Ast *e, const BuiltinDef *d) {
  ActArgs a = {0};
  TType *xt = act_input(sema, e, d, 3, false);
  if (!xt || !num_arg(sema, e, 1, "min_val", "float", -1, &a.lo) || !num_arg(sema, e, 2, "max_val", "float", 1, &a.hi))
    return poison(sema);
  return hardtanh_check(sema, e, d, xt, a);
}

// F.relu6(input, inplace=False): hardtanh(x, 0, 6)
TType *ck_relu6(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *xt = act_input(sema, e, d, 1, false);
  return xt ? hardtanh_check(sema, e, d, xt, (ActArgs){.lo = 0, .hi = 6}) : poison(sema);
}

// F.hardsigmoid(input, inplace=False), F.hardswish(input, inplace=False)
TType *ck_hardsigmoid(Sema *sema, Ast *e, const BuiltinDef *d) {
  ActArgs a = {.swish = d->variant == 1};
  TType *xt = act_input(sema, e, d, 1, true);
  return xt ? act_built(sema, e, d, a) : poison(sema);
}

// F.mish(input, inplace=False)
TType *ck_mish(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *xt = act_input(sema, e, d, 1, true);
  return xt ? act_built(sema, e, d, (ActArgs){0}) : poison(sema);
}

// F.softsign(input): x / (abs(x) + 1), PyTorch's Python formula: ints give f32, bool is
// abs's error.
TType *ck_softsign(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *xt = act_input(sema, e, d, -1, false);
  return xt ? act_built(sema, e, d, (ActArgs){0}) : poison(sema);
}

// F.logsigmoid(input)
TType *ck_logsigmoid(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *xt = act_input(sema, e, d, -1, true);
  return xt ? act_built(sema, e, d, (ActArgs){0}) : poison(sema);
}

// F.tanhshrink(input): x - tanh(x), PyTorch's Python formula (ints give f32; bool is the
// subtraction's error)
TType *ck_tanhshrink(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *xt = act_input(sema, e, d, -1, false);
  return xt ? act_built(sema, e, d, (ActArgs){0}) : poison(sema);
}

// F.threshold(input, threshold, value, inplace=False): x <= threshold ? value : x, both
// numbers converted to the input's dtype (ints truncate)
TType *ck_threshold(Sema *sema, Ast *e, const BuiltinDef *d) {
  ActArgs a = {0};
  TType *xt = act_input(sema, e, d, 3, false);
  if (!xt || !num_arg(sema, e, 1, "threshold", "Number", 0, &a.threshold) ||
      !num_arg(sema, e, 2, "value", "Number", 0, &a.value))
    return poison(sema);
  if (!check_dtype_rule(sema, e, d, xt->dtype)) return poison(sema);
  return act_built(sema, e, d, a);
}

// F.glu(input, dim=-1): a * sigmoid(b), a and b the halves of dim
TType *ck_glu(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *xt = act_input(sema, e, d, -1, false);
  int64_t dim = -1;
  int a;
  if (!xt || (barg(e, 1) && !get_int(sema, e, e->bargs[1], "dim", &dim))) return poison(sema);
  if (xt->view.ndim == 0) {
    diag_error(sema->cx, call_loc(e), "glu does not support scalars because halving size must be even");
    return poison(sema);
  }
  if (!wrap_dim(sema, barg(e, 1) ? e->bargs[1]->loc : call_loc(e), dim, xt->view.ndim, &a)) return poison(sema);
  int64_t n = xt->view.shape[a];
  if (n % 2) {
    diag_error(sema->cx, call_loc(e), "Halving dimension must be even, but dimension %d is size %" PRId64, a, n);
    return poison(sema);
  }
  if (!act_input(sema, e, d, -1, true)) return poison(sema);
  return act_built(sema, e, d, (ActArgs){.dim = a, .half = n / 2});
}

// F.softmin(input, dim=None, _stacklevel=3, dtype=None): softmax(-x, dim, dtype); without
// dim, PyTorch's implicit choice (0 for 0-, 1- and 3-d inputs, else 1)
TType *ck_softmin(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *xt = act_input(sema, e, d, -1, false);
  int64_t dim;
  int a;
  DType dt;
  if (!xt) return poison(sema);
  int nd = xt->view.ndim;
  if (barg(e, 1)) {
    if (!get_int(sema, e, e->bargs[1], "dim", &dim) || !wrap_dim(sema, e->bargs[1]->loc, dim, nd, &a))
      return poison(sema);
  } else {
    a = (nd == 0 || nd == 1 || nd == 3) ? 0 : 1;
  }
  if (barg(e, 3) && !get_dtype(sema, e, e->bargs[3], &dt)) return poison(sema);
  if (!barg(e, 3)) dt = xt->dtype;  // -x keeps the dtype (bool is neg's error)
  return act_built(sema, e, d, (ActArgs){.dim = a, .dtype = dt});
}

// ============================================================================
// hardshrink, softshrink, prelu
// ============================================================================
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
