// frontend/sema_math.c: the computing ops of §6: elementwise unary and binary ops, where,
// clamp, reductions, softmax and matmul. Result dtypes follow PyTorch's CUDA kernels
// (and their messages for the dtypes they reject), shapes broadcast as PyTorch's
// infer_size; a math function of a Python scalar folds (sema_fold.c).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ============================================================================
// Elementwise ops (§6): dtype rules of PyTorch's CUDA kernels, broadcasting
// ============================================================================
// Dtype of a unary op's result; false (after PyTorch's message) when not implemented.
bool unary_dtype(Sema *sema, Loc loc, Op op, DType in, DType *out) {
  bool fl = dtype_is_float(in);
  const char *kname = NULL;
  if (op_flags(op) & OF_INT_TO_FLOAT) {  // ir/ops.def's flag: ints and bool compute in the default float
    *out = fl ? in : DT_F32;
    return true;
  }
  switch (op) {
  case OP_FRAC: kname = "frac_cuda"; break;
  case OP_TRUNC: kname = "trunc_cuda"; break;
  case OP_GELU: case OP_GELU_TANH: kname = "GeluCUDAKernelImpl"; break;
  case OP_SILU: kname = "silu_cuda"; break;
  case OP_ABS: kname = "abs_cuda"; break;
  case OP_FLOOR: kname = "floor_cuda"; break;
  case OP_CEIL: kname = "ceil_cuda"; break;
  case OP_ROUND: kname = "round_cuda"; break;
  case OP_NEG:
    if (in == DT_BOOL) {
      diag_error(sema->cx, loc, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                 "invert a mask, use the `~` or `logical_not()` operator instead.");
      return false;
    }
    *out = in;
    return true;
  case OP_RELU:
    if (in == DT_BOOL) {
      diag_error(sema->cx, loc, "Boolean inputs not supported for relu");
      return false;
    }
    *out = in;
    return true;
  case OP_SIGN: *out = in; return true;
  case OP_SQUARE: *out = in == DT_BOOL ? DT_I64 : in; return true;
  case OP_BITWISE_NOT:
    if (fl) {
      diag_error(sema->cx, loc, "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
      return false;
    }
    *out = in;
    return true;
  case OP_LOGICAL_NOT: *out = DT_BOOL; return true;
  default: td_unreachable();
  }
  // gelu/silu/frac take floats only; abs/floor/ceil/round/trunc anything but bool
  bool ok = (op == OP_GELU || op == OP_GELU_TANH || op == OP_SILU || op == OP_FRAC) ? fl : in != DT_BOOL;
  if (!ok) {
    diag_error(sema->cx, loc, "\"%s\" not implemented for '%s'", kname, torch_name(in));
    return false;
  }
  *out = in;
  return true;
}

TType *unary_node(Sema *sema, Ast *e, Op op, Ast *x, Loc loc) {
  TType *t = x->ty;
  DType dt;
  if (dtype_is_complex(t->dtype)) return complex_unary(sema, e, op, x, loc);
  if (op == OP_BITWISE_NOT && t->dtype == DT_BOOL) op = OP_LOGICAL_NOT;
  if (op == OP_BITWISE_NOT && e->kind == AST_CALL && dtype_is_float(t->dtype)) {
    // bitwise_not(x) reaches the kernel's dtype dispatch; only `~x` has the Python message
    diag_error(sema->cx, loc, "\"bitwise_not_cuda\" not implemented for '%s'", torch_name(t->dtype));
    return poison(sema);
  }
  if (!unary_dtype(sema, loc, op, t->dtype, &dt)) return poison(sema);
  set_operand1(sema, e, x);
  TType *r = ty_fresh(sema, dt, t->view.ndim, t->view.shape);
  r->wrapped = t->wrapped;  // -k of a run-time Python number is one
  return r;
}

// gelu(input, approximate='none'): 'tanh' is its own op, PyTorch's tanh approximation.
TType *ck_gelu(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const BuiltinDef tanh_def = {{"gelu", BK_NODE, OP_GELU_TANH, "input, approximate='none'", NULL}, ck_gelu,
                                      F_BOTH, OP_COUNT, 0, {DTR_ANY, NULL}};
  Ast *aa = barg(e, 1);
  if (aa && aa->ty->kind != TY_STR) {
    diag_error(sema->cx, aa->loc, "gelu(): argument 'approximate' must be str, not %s", py_type_name(aa->ty));
    return poison(sema);
  }
  if (aa && strcmp(aa->ty->module, "none") && strcmp(aa->ty->module, "tanh")) {
    diag_error(sema->cx, aa->loc, "approximate argument must be either none or tanh.");
    return poison(sema);
  }
  if (aa && !strcmp(aa->ty->module, "tanh")) {
    e->bi = &tanh_def.b;
    d = &tanh_def;
  }
  return ck_unary(sema, e, d);
}

TType *ck_unary(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  if (is_scalar(x->ty)) {  // sqrt(D): a compile-time scalar
    e->bi = NULL;
    TType *r = fold_math(sema, d->b.op, x->ty);
    return r ? r : poison(sema);
  }
  if (!get_tensor(sema, e, x, "input")) return poison(sema);
  return unary_node(sema, e, d->b.op, x, call_loc(e));
}

// Broadcast the shapes of the tensor operands; scalars take no part.
static bool broadcast_all(Sema *sema, Loc loc, Ast **xs, int n, int *nd, int64_t *shape) {
  *nd = 0;
  for (int i = 0; i < n; i++)
    if (is_tensor(xs[i]->ty) && !broadcast(sema, loc, nd, shape, xs[i]->ty->view.ndim, xs[i]->ty->view.shape))
      return false;
  return true;
}

static bool is_bool_operand(const TType *t) { return t->dtype == DT_BOOL; }

// The dtype of a binary op's result (PyTorch's rules and messages).
bool binary_dtype(Sema *sema, Loc loc, Op op, TType *a, TType *b, DType *out) {
  TType *ts[2] = {a, b};
  DType r = result_type(sema, ts, 2);
  switch (op) {
  case OP_SUB:
    if (is_bool_operand(a) && is_bool_operand(b)) {
      diag_error(sema->cx, loc, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                 "`logical_xor()` operator instead.");
      return false;
    }
    if ((is_tensor(a) && a->dtype == DT_BOOL) || (is_tensor(b) && b->dtype == DT_BOOL)) {
      diag_error(sema->cx, loc, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                 "to invert a mask, use the `~` or `logical_not()` operator instead.");
      return false;
    }
    break;
  case OP_DIV:
  case OP_ATAN2:
  case OP_COPYSIGN:
    if (!dtype_is_float(r)) r = DT_F32;
    break;
  case OP_HYPOT:
    if (!dtype_is_float(r)) {
      diag_error(sema->cx, loc, "\"hypot_cuda\" not implemented for '%s'", torch_name(r));
      return false;
    }
    break;
  case OP_NEXTAFTER:  // PyTorch 1.13's kernel: float and double (the next value in r's own format)
    if (r == DT_BF16) {
      diag_error(sema->cx, loc, "nextafter of bfloat16 is not supported by tdsl yet (the next bfloat16 value)");
      return false;
    }
    if (r != DT_F32 && r != DT_F64) {
      diag_error(sema->cx, loc, "\"nextafter_cuda\" not implemented for '%s'", torch_name(r));
      return false;
    }
    break;
  case OP_FMOD:
  case OP_DIV_TRUNC:
    if (r == DT_BOOL) {
      diag_error(sema->cx, loc, "\"%s\" not implemented for 'Bool'", op == OP_FMOD ? "fmod_cuda" : "div_trunc_cuda");
      return false;
    }
    break;
  case OP_BITWISE_AND:
  case OP_BITWISE_OR:
  case OP_BITWISE_XOR:
  case OP_LSHIFT:
  case OP_RSHIFT:
    if (dtype_is_float(r) || (r == DT_BOOL && (op == OP_LSHIFT || op == OP_RSHIFT))) {
      diag_error(sema->cx, loc, "\"%s_cuda\" not implemented for '%s'",
                 op == OP_LSHIFT ? "lshift" : op == OP_RSHIFT ? "rshift" : op_name(op), torch_name(r));
      return false;
    }
    break;
  case OP_FLOOR_DIVIDE:
  case OP_REMAINDER:
  case OP_POW:
    if (r == DT_BOOL) {
      diag_error(sema->cx, loc, "\"%s\" not implemented for 'Bool'",
                 op == OP_POW ? "pow_cuda" : op == OP_REMAINDER ? "remainder_cuda" : "div_floor_cuda");
      return false;
    }
    if (op == OP_POW && !dtype_is_float(r) && is_scalar(b) && b->dtype == DT_I64 && b->ival < 0) {
      diag_error(sema->cx, loc, "Integers to negative integer powers are not allowed.");
      return false;
    }
    break;
  case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_LOGICAL_AND:
  case OP_LOGICAL_OR:
    r = DT_BOOL;
    break;
  default: break;
  }
  *out = r;
  return true;
}

TType *binary_node(Sema *sema, Ast *e, Op op, Ast *a, Ast *b, Loc loc) {
  Ast *xs[2] = {a, b};
  int nd;
  int64_t shape[TD_MAX_DIMS];
  DType dt;
  if ((is_tensor(a->ty) && dtype_is_complex(a->ty->dtype)) || (is_tensor(b->ty) && dtype_is_complex(b->ty->dtype)))
    return complex_binary(sema, e, op, a, b, loc);
  if (!binary_dtype(sema, loc, op, a->ty, b->ty, &dt)) return poison(sema);
  if (!broadcast_all(sema, loc, xs, 2, &nd, shape) || !check_numel(sema, loc, nd, shape)) return poison(sema);
  set_operands(sema, e, xs, 2);
  TType *r = ty_fresh(sema, dt, nd, shape);
  // Python numbers make a Python number: k * 2 of a run-time int k still promotes as a
  // wrapped number (x * (k * 2) of a 0-d i32 x is i32, as with Python's int)
  r->wrapped = (is_scalar(a->ty) || a->ty->wrapped) && (is_scalar(b->ty) || b->ty->wrapped);
  return r;
}

TType *ck_binary(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  static const int binop_of[OP_COUNT] = {
      [OP_ADD] = BIN_ADD + 1, [OP_SUB] = BIN_SUB + 1, [OP_MUL] = BIN_MUL + 1, [OP_DIV] = BIN_DIV + 1,
      [OP_FLOOR_DIVIDE] = BIN_FLOORDIV + 1, [OP_REMAINDER] = BIN_MOD + 1, [OP_POW] = BIN_POW + 1,
      [OP_EQ] = BIN_EQ + 1, [OP_NE] = BIN_NE + 1, [OP_LT] = BIN_LT + 1, [OP_LE] = BIN_LE + 1,
      [OP_GT] = BIN_GT + 1, [OP_GE] = BIN_GE + 1};
  Op op = d->b.op;
  if (op == OP_MAXIMUM || op == OP_MINIMUM || op == OP_HYPOT || op == OP_NEXTAFTER) {  // tensors only, as in PyTorch
    if (!get_tensor(sema, e, a, "input") || !get_tensor(sema, e, b, "other")) return poison(sema);
  }
  if ((op == OP_COPYSIGN || op == OP_FMOD) && !get_tensor(sema, e, a, "input")) return poison(sema);
  if (is_scalar(a->ty) && is_scalar(b->ty)) {
    e->bi = NULL;
    TType *r = NULL;
    if (binop_of[op]) r = fold_binary(sema, call_loc(e), binop_of[op] - 1, a->ty, b->ty);
    else if (op == OP_ATAN2) r = ty_float(sema, atan2(a->ty->fval, b->ty->fval));
    else if (op == OP_LOGICAL_AND) r = ty_bool(sema, a->ty->fval != 0 && b->ty->fval != 0);
    else if (op == OP_LOGICAL_OR) r = ty_bool(sema, a->ty->fval != 0 || b->ty->fval != 0);
    if (!r) {
      if (!binop_of[op] && op != OP_ATAN2)
        diag_error(sema->cx, a->loc, "%s(): argument 'input' must be Tensor, not %s", d->b.name, py_type_name(a->ty));
      return poison(sema);
    }
    return r;
  }
  if (!is_tensor(a->ty) && !is_scalar(a->ty)) return get_tensor(sema, e, a, "input"), poison(sema);
  if (!is_tensor(b->ty) && !is_scalar(b->ty)) return get_tensor(sema, e, b, "other"), poison(sema);
  return binary_node(sema, e, op, a, b, call_loc(e));
}

// div(input, other, *, rounding_mode=None): 'trunc' is div_trunc, 'floor' floor_divide.
TType *ck_div(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const BuiltinDef trunc_def = {{"div", BK_NODE, OP_DIV_TRUNC, "input, other, *, rounding_mode=None", NULL},
                                       ck_div, F_BOTH, OP_COUNT, 0, {DTR_ANY, NULL}};
  static const BuiltinDef floor_def = {{"div", BK_NODE, OP_FLOOR_DIVIDE, "input, other, *, rounding_mode=None", NULL},
                                       ck_div, F_BOTH, OP_COUNT, 0, {DTR_ANY, NULL}};
  Ast *rm = barg(e, 2);
  if (rm && rm->ty->kind != TY_STR) {
    diag_error(sema->cx, rm->loc, "%s(): argument 'rounding_mode' must be str, not %s", d->b.name,
               py_type_name(rm->ty));
    return poison(sema);
  }
  if (rm && strcmp(rm->ty->module, "trunc") && strcmp(rm->ty->module, "floor")) {
    diag_error(sema->cx, rm->loc, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'",
               rm->ty->module);
    return poison(sema);
  }
  if (rm) {
    d = !strcmp(rm->ty->module, "trunc") ? &trunc_def : &floor_def;
    e->bi = &d->b;
  }
  return ck_binary(sema, e, d);
}

// ============================================================================
// Elementwise ops built from parts (frontend/sema_nn.c's builders): PyTorch composes
// them of other ops too (isnan is x != x, isclose ...), or fusion joins the parts again
// ============================================================================
// The largest finite value of a float dtype.
static double float_max(DType dt) {
  switch (dt) {
  case DT_F16: return 65504.0;
  case DT_BF16: return 3.38953138925153547590e38;
  case DT_F32: return 3.40282346638528859812e38;
  default: return 1.79769313486231570815e308;
  }
}

// alpha of add/sub converted to the result dtype dt as PyTorch's Scalar::to<T> does,
// which refuses a finite value T cannot hold (for halves T is at::Half / at::BFloat16, as
// on PyTorch's CPU; its value is then used as f32); false after reporting it.
static bool alpha_value(Sema *sema, const Ast *al, DType dt, double *out) {
  const TType *t = al->ty;
  double v = t->fval;
  int64_t i = t->ival;
  const char *ctype = NULL;
  switch (dt) {
  case DT_U8: ctype = i > 255 || i < -255 ? "uint8_t" : NULL; break;  // negatives wrap, as in c10's overflows()
  case DT_I8: ctype = i > INT8_MAX || i < INT8_MIN ? "int8_t" : NULL; break;
  case DT_I16: ctype = i > INT16_MAX || i < INT16_MIN ? "int16_t" : NULL; break;
  case DT_I32: ctype = i > INT32_MAX || i < INT32_MIN ? "int" : NULL; break;
  case DT_I64: break;
  case DT_F16: case DT_BF16: case DT_F32:
    if (isfinite(v) && fabs(v) > float_max(dt))
      ctype = dt == DT_F16 ? "at::Half" : dt == DT_BF16 ? "at::BFloat16" : "float";
    v = (float)v;
    break;
  default: break;
  }
  if (ctype) {
    diag_error(sema->cx, al->loc, "value cannot be converted to type %s without overflow", ctype);
    return false;
  }
  *out = dt == DT_BOOL ? (double)(v != 0) : v;
  return true;
}

// add(input, other, *, alpha=1), sub, subtract and rsub (other - alpha * input): input +
// alpha * other (input - alpha * other) with PyTorch's checks of alpha against the result
// dtype (that of input and other only: alpha does not promote). alpha is a number or a
// 0-d tensor (PyTorch takes one for a Number: then its value is known at run time only).
// Both operands become the result dtype, then its opmath dtype (halves in f32, as on
// CUDA), where alpha * other and the sum are computed, rounded once at the end; integer
// alpha in the result dtype, bool alpha a logical and.
TType *ck_add(Sema *sema, Ast *e, const BuiltinDef *d) {
  Op op = d->b.op;
  if (d->variant == 1) {  // rsub
    if (!get_tensor(sema, e, e->bargs[0], "input"))
      return poison(sema);
    Ast *t = e->bargs[0];
    e->bargs[0] = e->bargs[1], e->bargs[1] = t;
  }
  Ast *a = e->bargs[0], *b = e->bargs[1], *al = barg(e, 2);
  if (!al)
    return ck_binary(sema, e, d);
  const TType *at = al->ty;
  bool known = is_scalar(at);
  if (!known && !(is_tensor(at) && at->view.ndim == 0)) {
    diag_error(sema->cx, al->loc, "%s(): argument 'alpha' must be Number, not %s", d->b.name, py_type_name(at));
    return poison(sema);
  }
  if (!is_tensor(a->ty) && !is_scalar(a->ty)) {
    get_tensor(sema, e, a, "input");  // its message
    return poison(sema);
  }
  if (!is_tensor(b->ty) && !is_scalar(b->ty)) {
    get_tensor(sema, e, b, "other");  // its message
    return poison(sema);
  }
  Loc loc = call_loc(e);
  DType r;
  Ast *xs[2] = {a, b};
  int nd;
  int64_t shape[TD_MAX_DIMS];
  if (!binary_dtype(sema, loc, op, a->ty, b->ty, &r) || !broadcast_all(sema, loc, xs, 2, &nd, shape))
    return poison(sema);
  if (at->dtype == DT_BOOL && r != DT_BOOL) {
    diag_error(sema->cx, al->loc, "Boolean alpha only supported for Boolean results.");
    return poison(sema);
  }
  if (dtype_is_float(at->dtype) && !dtype_is_float(r)) {
    diag_error(sema->cx, al->loc, "For integral input tensors, argument alpha must not be a floating point number.");
    return poison(sema);
  }
  double v = 0;
  if (known && !alpha_value(sema, al, r, &v))
    return poison(sema);
  if (known && v == 1)
    return ck_binary(sema, e, d);
  if (known && is_scalar(a->ty) && is_scalar(b->ty)) {  // Python numbers: folded
    e->bi = NULL;
    TType *p = fold_binary(sema, loc, BIN_MUL, b->ty, at);
    TType *s = p ? fold_binary(sema, loc, op == OP_ADD ? BIN_ADD : BIN_SUB, a->ty, p) : NULL;
    return s ? s : poison(sema);
  }
  MathArgs ma = {.op = op, .dtype = r, .compute = dtype_is_float(r) ? dtype_compute(r) : r, .known = known,
                 .alpha = v, .ialpha = at->ival};
  return built(sema, e, d->b.build, KEEP(sema, ma), (Ast *[]){a, b, al}, known ? 2 : 3);
}

// isnan, isinf, isfinite, isposinf, isneginf: x != x, |x| == inf, |x| < inf, x == inf,
// x == -inf; of an int or bool tensor false (x != x) or, for isfinite, true (x == x).
TType *ck_float_test(Sema *sema, Ast *e, const BuiltinDef *d) {
  if (!get_tensor(sema, e, e->bargs[0], "input")) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (MathArgs){.test = (FloatTest)d->variant}), e->bargs, 1);
}

// A number argument of a float parameter: its value (an int or bool too, as PyTorch's
// parser takes them).
bool get_float(Sema *sema, const Ast *e, Ast *a, const char *pname, double *out) {
  if (is_scalar(a->ty)) {
    *out = a->ty->fval;
    return true;
  }
  diag_error(sema->cx, a->loc, "%s(): argument %s must be float, not %s", e->bi->name, arg_name(sema, e, pname),
             py_type_name(a->ty));
  return false;
}

// nan_to_num(input, nan=0.0, posinf=None, neginf=None): the dtype's largest (lowest)
// finite value where posinf (neginf) is None; ints and bool are copied.
TType *ck_nan_to_num(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0];
  TType *t = get_tensor(sema, e, x, "input");
  if (!t) return poison(sema);
  static const char *const pnames[3] = {"nan", "posinf", "neginf"};
  double v[3] = {0, float_max(t->dtype), -float_max(t->dtype)};
  for (int i = 0; i < 3; i++)
    if (barg(e, i + 1) && !get_float(sema, e, e->bargs[i + 1], pnames[i], &v[i])) return poison(sema);
  MathArgs ma = {.v = {v[0], v[1], v[2]}};
  return built(sema, e, d->b.build, KEEP(sema, ma), &x, 1);
}

// isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False), PyTorch's composition:
// a == b (or both nan), or |a - b| finite and <= atol + |rtol * b|, computed in a's
// dtype (ints and bool in f32).
TType *ck_isclose(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = e->bargs[0], *b = e->bargs[1];
  TType *ta = get_tensor(sema, e, a, "input"), *tb = ta ? get_tensor(sema, e, b, "other") : NULL;
  if (!tb) return poison(sema);
  double rtol = 1e-05, atol = 1e-08;
  bool equal_nan = false;
  if ((barg(e, 2) && !get_float(sema, e, e->bargs[2], "rtol", &rtol)) ||
      (barg(e, 3) && !get_float(sema, e, e->bargs[3], "atol", &atol)) ||
      (barg(e, 4) && !get_bool(sema, e, e->bargs[4], "equal_nan", &equal_nan)))
    return poison(sema);
  if (ta->dtype != tb->dtype) {
    diag_error(sema->cx, call_loc(e), "%s did not match %s", torch_name(ta->dtype), torch_name(tb->dtype));
    return poison(sema);
  }
  if (rtol < 0 || atol < 0) {
    diag_error(sema->cx, e->bargs[rtol < 0 ? 2 : 3]->loc, "%s must be greater than or equal to zero, but got %g",
               rtol < 0 ? "rtol" : "atol", rtol < 0 ? rtol : atol);
    return poison(sema);
  }
  MathArgs ma = {.v = {rtol, atol}, .flag = equal_nan};
  return built(sema, e, d->b.build, KEEP(sema, ma), e->bargs, 2);
}


// lerp(input, end, weight), PyTorch's formula in the opmath dtype (halves in f32, rounded
// once): weight < 0.5 ? input + weight * (end - input) : end - (end - input) * (1 - weight).
TType *ck_lerp(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *y = e->bargs[1], *w = e->bargs[2];
  TType *tx = get_tensor(sema, e, x, "input"), *ty = tx ? get_tensor(sema, e, y, "end") : NULL;
  if (!ty) return poison(sema);
  if (!is_tensor(w->ty) && !is_scalar(w->ty)) return get_tensor(sema, e, w, "weight"), poison(sema);
  DType dt = tx->dtype;
  for (int i = 1; i < 3; i++) {
    const TType *t = e->bargs[i]->ty;
    if (is_tensor(t) && t->dtype != dt) {
      diag_error(sema->cx, e->bargs[i]->loc, "expected dtype %s for `%s` but got dtype %s", cpp_type_name(dt),
                 i == 1 ? "end" : "weight", cpp_type_name(t->dtype));
      return poison(sema);
    }
  }
  if (!dtype_is_float(dt)) {
    diag_error(sema->cx, call_loc(e), "\"lerp_cuda\" not implemented for '%s'", torch_name(dt));
    return poison(sema);
  }
  MathArgs ma = {.dtype = dt, .compute = dtype_compute(dt), .flag = is_scalar(w->ty)};
  if (ma.flag) {  // the weight and 1 - weight as the opmath dtype holds them
    double wv = w->ty->fval, rest = 1 - wv;
    if (ma.compute == DT_F32) wv = (float)wv, rest = (float)(1.0f - (float)wv);
    ma.v[0] = wv, ma.v[1] = rest;
  }
  return built(sema, e, d->b.build, KEEP(sema, ma), e->bargs, ma.flag ? 2 : 3);
}

// logaddexp and logaddexp2 (tensors only), as PyTorch's CUDA kernels compute them in the
// opmath dtype: a where a and b are the same infinity, else max(a, b) + log1p(exp(-|a -
// b|)) (exp2, and times 1 / ln 2, for logaddexp2).
TType *ck_logaddexp(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  TType *ta = get_tensor(sema, e, a, "input"), *tb = ta ? get_tensor(sema, e, b, "other") : NULL;
  if (!tb) return poison(sema);
  bool two = d->variant == 2;
  TType *ts[2] = {ta, tb};
  DType dt = result_type(sema, ts, 2);
  if (!dtype_is_float(dt) || (two && dt == DT_F16)) {
    diag_error(sema->cx, call_loc(e), "\"%s_cuda\" not implemented for '%s'", d->b.name, torch_name(dt));
    return poison(sema);
  }
  MathArgs ma = {.dtype = dt, .compute = dtype_compute(dt), .flag = two};
  return built(sema, e, d->b.build, KEEP(sema, ma), e->bargs, 2);
}

TType *ck_where(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *c = e->bargs[0], *a = e->bargs[1], *b = e->bargs[2];
  TType *ct = get_tensor(sema, e, c, "condition");
  if (!ct) return poison(sema);
  for (int i = 1; i < 3; i++)
    if (!is_tensor(e->bargs[i]->ty) && !is_scalar(e->bargs[i]->ty))
      return get_tensor(sema, e, e->bargs[i], i == 1 ? "input" : "other"), poison(sema);
  if (ct->dtype != DT_BOOL) {
    diag_error(sema->cx, c->loc, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
               torch_name(ct->dtype));
    return poison(sema);
  }
  return where_node(sema, e, c, a, b);
}

// e as where(c, a, b): the three broadcast (PyTorch's message at the call when not), the
// result of a and b's common dtype
TType *where_node(Sema *sema, Ast *e, Ast *c, Ast *a, Ast *b) {
  if (complex_where_operand(a, b)) return complex_where(sema, e, c, a, b);  // sema_complex.c (x[mask] = v)
  Ast *xs[3] = {c, a, b};
  TType *ts[2] = {a->ty, b->ty};
  int nd;
  int64_t shape[TD_MAX_DIMS];
  if (!broadcast_all(sema, call_loc(e), xs, 3, &nd, shape) || !check_numel(sema, call_loc(e), nd, shape))
    return poison(sema);
  set_operands(sema, e, xs, 3);
  return ty_fresh(sema, result_type(sema, ts, 2), nd, shape);
}

TType *ck_clamp(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *lo = barg(e, 1), *hi = barg(e, 2);
  TType *t = get_tensor(sema, e, x, "input");
  if (!t) return poison(sema);
  if (!lo && !hi) {
    diag_error(sema->cx, call_loc(e), "torch.clamp: At least one of 'min' or 'max' must not be None");
    return poison(sema);
  }
  for (int i = 1; i < 3; i++)
    if (barg(e, i) && !is_scalar(e->bargs[i]->ty)) {
      diag_error(sema->cx, e->bargs[i]->loc, "clamp(): '%s' must be a number: tensor bounds are not supported (use "
                 "maximum/minimum)", i == 1 ? "min" : "max");
      return poison(sema);
    }
  return clamp_node(sema, e, x, lo, hi);
}

// e as clamp(x, lo, hi) of number bounds lo, hi (NULL: none): of x and the bounds' common
// dtype, an int result's bounds checked to fit it (at each bound's place)
TType *clamp_node(Sema *sema, Ast *e, Ast *x, Ast *lo, Ast *hi) {
  TType *t = x->ty, *ts[3] = {t, lo ? lo->ty : NULL, hi ? hi->ty : NULL};
  Ast *bs[3] = {x, lo, hi};
  DType dt = result_type(sema, ts, 3);
  for (int i = 1; i < 3; i++)  // an int result: PyTorch converts each bound to it, checked
    if (ts[i] && dtype_is_int(dt) && !scalar_fits(sema, bs[i]->loc, ts[i], dt)) return poison(sema);
  e->attr.has_lo = lo != NULL;
  e->attr.has_hi = hi != NULL;
  if (lo) e->attr.lo = lo->ty->fval, e->attr.ilo = lo->ty->ival;
  if (hi) e->attr.hi = hi->ty->fval, e->attr.ihi = hi->ty->ival;
  set_operand1(sema, e, x);
  return ty_fresh(sema, dt, t->view.ndim, t->view.shape);
}

// ============================================================================
// Reductions and softmax
// ============================================================================
// Which reductions take only one int dim (PyTorch's signatures).
static bool single_dim_reduction(Op op) {
  return op == OP_PROD || op == OP_ARGMAX || op == OP_ARGMIN || op == OP_ALL || op == OP_ANY || op == OP_MAX ||
         op == OP_MIN;
}

// e as the reduction of x over the dims of mask (dim: the one dim written, else -1),
// of result dtype dt.
TType *reduce_node(Sema *sema, Ast *e, Ast *x, uint32_t mask, bool keepdim, int dim, DType dt) {
  const View *v = &x->ty->view;
  int64_t shape[TD_MAX_DIMS];
  int on = 0;
  for (int i = 0; i < v->ndim; i++) {
    if (!(mask >> i & 1)) shape[on++] = v->shape[i];
    else if (keepdim) shape[on++] = 1;
  }
  e->attr.dims = mask;
  e->attr.keepdim = keepdim;
  e->attr.dim = dim;
  set_operand1(sema, e, x);
  return ty_fresh(sema, dt, on, shape);
}

// The arguments of a reduction op(x, dim, keepdim, dtype) (var and std: unbiased at
// barg 2, correction at barg 4) bound in e, checked as PyTorch checks them: its dims
// (*mask; *dim the one written, else -1), keepdim, correction and result dtype. name:
// the op's in the messages. False after the message.
bool reduce_args(Sema *sema, Ast *e, Op op, const char *name, ReduceCall *r) {
  Ast *xa = e->bargs[0], *da = barg(e, 1);
  int ki = (op == OP_VAR || op == OP_STD) ? 3 : 2;
  Ast *ka = barg(e, ki), *dta = (op == OP_SUM || op == OP_MEAN || op == OP_PROD) ? barg(e, 3) : NULL;
  TType *x = get_tensor(sema, e, xa, "input");
  if (!x) return false;
  int nd = x->view.ndim;
  bool keepdim = false, unbiased = true;
  // var(x, True) means unbiased=True in PyTorch's var(input, unbiased) overload
  if ((op == OP_VAR || op == OP_STD) && da && is_scalar(da->ty) && da->ty->dtype == DT_BOOL) {
    unbiased = da->ty->ival != 0;
    da = NULL;
  } else if ((op == OP_VAR || op == OP_STD) && barg(e, 2) && !get_bool(sema, e, e->bargs[2], "unbiased", &unbiased)) {
    return false;
  }
  int64_t correction = unbiased ? 1 : 0;
  Ast *ca = (op == OP_VAR || op == OP_STD) ? barg(e, 4) : NULL;
  if (ca && barg(e, 2)) {  // PyTorch's overloads take one or the other
    diag_error(sema->cx, ca->loc, "%s(): pass either unbiased or correction, not both", name);
    return false;
  }
  if (ca && !get_int(sema, e, ca, "correction", &correction)) return false;
  if (ka && !get_bool(sema, e, ka, "keepdim", &keepdim)) return false;
  uint32_t mask = 0;
  int dims[MAX_LIST], n = 0;
  if (da) {
    if (single_dim_reduction(op) && da->ty->kind == TY_LIST) {
      diag_error(sema->cx, da->loc, "%s(): argument %s must be int, not list", name, arg_name(sema, e, "dim"));
      return false;
    }
    if (!get_dims(sema, e, da, "dim", nd, dims, &n)) return false;
    for (int i = 0; i < n; i++) mask |= 1u << dims[i];
    if (n == 0) da = NULL;  // sum(x, []) reduces everything
  }
  if (!da) mask = nd ? (uint32_t)((1ull << nd) - 1) : 0;
  if (nd == 0) mask = 0;
  // dtypes
  DType in = x->dtype, dt = in;
  if (dta && !get_dtype(sema, e, dta, &dt)) return false;
  switch (op) {
  case OP_SUM:
  case OP_PROD:
    if (!dta) dt = build_reduce_dtype(op, in);
    break;
  case OP_MEAN:
    if (!dtype_is_float(dta ? dt : in) && !dtype_is_complex(dta ? dt : in)) {
      diag_error(sema->cx, call_loc(e), "mean(): could not infer output dtype. Input dtype must be either a floating "
                 "point or complex dtype. Got: %s", torch_name(dta ? dt : in));
      return false;
    }
    break;
  case OP_VAR:
  case OP_STD:
    if (!dtype_is_float(in)) {
      diag_error(sema->cx, call_loc(e), "std and var only support floating point and complex dtypes");
      return false;
    }
    break;
  case OP_ARGMAX:
  case OP_ARGMIN:
    if (in == DT_BOOL) {
      diag_error(sema->cx, call_loc(e), "\"%s_cuda\" not implemented for 'Bool'", name);
      return false;
    }
    dt = build_reduce_dtype(op, in);
    break;
  default: dt = build_reduce_dtype(op, in); break;
  }
  // reductions without an identity need elements
  if (op == OP_AMAX || op == OP_AMIN || op == OP_ARGMAX || op == OP_ARGMIN || op == OP_MAX || op == OP_MIN) {
    if (!da && view_numel(x->view) == 0) {
      if (op == OP_ARGMAX || op == OP_ARGMIN)
        diag_error(sema->cx, call_loc(e), "%s(): Expected reduction dim to be specified for input.numel() == 0.",
                   name);
      else
        diag_error(sema->cx, call_loc(e), "%s(): Expected reduction dim to be specified for input.numel() == 0. "
                   "Specify the reduction dim with the 'dim' argument.", name);
      return false;
    }
    // the first empty dim in the order given; amax/amin name it as written, argmax/argmin wrapped
    for (int k = 0; da && k < n; k++)
      if (x->view.ndim && x->view.shape[dims[k]] == 0) {  // a 0-d tensor reduces its one element
        int64_t raw[MAX_LIST], shown = dims[k];
        int nr;
        if ((op == OP_AMAX || op == OP_AMIN) && get_ints(sema, e, da, "dim", raw, &nr) && k < nr) shown = raw[k];
        diag_error(sema->cx, da->loc, "%s(): Expected reduction dim %" PRId64 " to have non-zero size.", name, shown);
        return false;
      }
  }
  *r = (ReduceCall){mask, (da && n == 1) ? dims[0] : -1, keepdim, correction, dt};
  return true;
}

TType *ck_reduce(Sema *sema, Ast *e, const BuiltinDef *d) {
  Op op = d->b.op;
  Ast *xa = e->bargs[0], *da = barg(e, 1);
  if ((op == OP_MAX || op == OP_MIN) && da && is_tensor(da->ty)) {  // max(a, b) is maximum(a, b)
    static const BuiltinDef dmax = {{"maximum", BK_NODE, OP_MAXIMUM, "input, other", NULL}, ck_binary, F_BOTH, OP_COUNT, 0, {DTR_ANY, NULL}};
    static const BuiltinDef dmin = {{"minimum", BK_NODE, OP_MINIMUM, "input, other", NULL}, ck_binary, F_BOTH, OP_COUNT, 0, {DTR_ANY, NULL}};
    const BuiltinDef *m = op == OP_MAX ? &dmax : &dmin;
    e->bi = &m->b;
    return ck_binary(sema, e, m);
  }
  if ((op == OP_MAX || op == OP_MIN) && da) {
    Ast *ka = barg(e, 2);
    bool keepdim = false;
    if (!get_tensor(sema, e, xa, "input") || (ka && !get_bool(sema, e, ka, "keepdim", &keepdim))) return poison(sema);
    return tuple_max(sema, e, op == OP_MAX, xa, da, ka);
  }
  ReduceCall r;
  if (!reduce_args(sema, e, op, d->b.name, &r)) return poison(sema);
  e->attr.correction = r.correction;
  return reduce_node(sema, e, xa, r.mask, r.keepdim, r.dim, r.dtype);
}

// var_mean / std_mean: (var or std, mean) over the same dims, a tuple of two parts
TType *ck_var_mean(Sema *sema, Ast *e, const BuiltinDef *d) {
  ReduceCall r;
  if (!reduce_args(sema, e, d->b.op, d->b.op == OP_VAR ? "var" : "std", &r)) return poison(sema);
  ReduceArgs a = {.op = d->b.op, .mask = r.mask, .dim = r.dim, .keepdim = r.keepdim, .correction = r.correction};
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}

TType *ck_softmax(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *xa = e->bargs[0];
  TType *x = get_tensor(sema, e, xa, "input");
  int64_t dim;
  int a;
  if (!x || !get_int(sema, e, e->bargs[1], "dim", &dim)) return poison(sema);
  if (!wrap_dim(sema, e->bargs[1]->loc, dim, x->view.ndim, &a)) return poison(sema);
  DType dt = x->dtype;
  if (barg(e, 2) && !get_dtype(sema, e, e->bargs[2], &dt)) return poison(sema);
  if (!dtype_is_float(dt)) {
    diag_error(sema->cx, call_loc(e), "\"host_softmax\" not implemented for '%s'", torch_name(dt));
    return poison(sema);
  }
  (void)d;
  e->attr.dim = a;
  e->attr.dims = x->view.ndim ? 1u << a : 0;
  set_operand1(sema, e, xa);
  return ty_fresh(sema, dt, x->view.ndim, x->view.shape);
}

// ============================================================================
// matmul, mm, bmm: PyTorch's 1-D / 2-D / folded / batched rules and messages
// ============================================================================
bool matmul_dtypes(Sema *sema, Loc loc, const TType *a, const TType *b, const char *kernel) {
  if (a->dtype != b->dtype) {
    if (a->view.ndim == 1 && b->view.ndim == 1)
      diag_error(sema->cx, loc, "dot : expected both vectors to have same dtype, but found %s and %s",
                 torch_name(a->dtype), torch_name(b->dtype));
    else
      diag_error(sema->cx, loc, "expected scalar type %s but found %s", torch_name(a->dtype), torch_name(b->dtype));
    return false;
  }
  if (!dtype_is_float(a->dtype)) {
    diag_error(sema->cx, loc, "\"%s\" not implemented for '%s'",
               a->view.ndim == 1 && b->view.ndim == 1 ? "dot" : kernel, torch_name(a->dtype));
    return false;
  }
  return true;
}

static void mm_error(Sema *sema, Loc loc, int64_t r1, int64_t c1, int64_t r2, int64_t c2) {
  diag_error(sema->cx, loc, "mat1 and mat2 shapes cannot be multiplied (%" PRId64 "x%" PRId64 " and %" PRId64
             "x%" PRId64 ")", r1, c1, r2, c2);
}
static void mv_error(Sema *sema, Loc loc, int64_t r, int64_t c, int64_t k) {
  diag_error(sema->cx, loc, "size mismatch, got %" PRId64 ", %" PRId64 "x%" PRId64 ",%" PRId64, r, r, c, k);
}

bool matmul_shape(Sema *sema, Loc loc, const TType *ta, const TType *tb, int *on, int64_t *out) {
  const View *a = &ta->view, *b = &tb->view;
  int d1 = a->ndim, d2 = b->ndim;
  if (d1 == 0 || d2 == 0) {
    diag_error(sema->cx, loc, "both arguments to matmul need to be at least 1D, but they are %dD and %dD", d1, d2);
    return false;
  }
  if (!matmul_dtypes(sema, loc, ta, tb, d1 >= 3 && d2 >= 3 ? "bmm_cuda" : "addmm_cuda")) return false;
  const int64_t *sa = a->shape, *sb = b->shape;
  *on = 0;
  if (d1 == 1 && d2 == 1) {
    if (sa[0] != sb[0]) {
      diag_error(sema->cx, loc, "inconsistent tensor size, expected tensor [%" PRId64 "] and src [%" PRId64 "] to have "
                 "the same number of elements, but got %" PRId64 " and %" PRId64 " elements respectively",
                 sa[0], sb[0], sa[0], sb[0]);
      return false;
    }
    return true;
  }
  if (d1 == 2 && d2 == 1) {
    if (sa[1] != sb[0]) return mv_error(sema, loc, sa[0], sa[1], sb[0]), false;
    out[(*on)++] = sa[0];
    return true;
  }
  if (d1 == 1 && d2 == 2) {
    if (sa[0] != sb[0]) return mm_error(sema, loc, 1, sa[0], sb[0], sb[1]), false;
    out[(*on)++] = sb[1];
    return true;
  }
  if (d1 == 2 && d2 == 2) {
    if (sa[1] != sb[0]) return mm_error(sema, loc, sa[0], sa[1], sb[0], sb[1]), false;
    out[(*on)++] = sa[0];
    out[(*on)++] = sb[1];
    return true;
  }
  if (d1 >= 3 && d2 <= 2) {  // fold a's batch into its rows
    int64_t rows = 1;
    for (int i = 0; i < d1 - 1; i++) rows = wrap_mul(rows, sa[i]);
    int64_t m = sa[d1 - 1];
    if (m != sb[0]) {
      if (d2 == 1) mv_error(sema, loc, rows, m, sb[0]);
      else mm_error(sema, loc, rows, m, sb[0], sb[1]);
      return false;
    }
    for (int i = 0; i < d1 - 1; i++) out[(*on)++] = sa[i];
    if (d2 == 2) out[(*on)++] = sb[1];
    return true;
  }
  if (d2 >= 3 && d1 <= 2) {  // fold b's batch: computed as (b^T @ a^T)^T
    int64_t rows = 1;
    for (int i = 0; i < d2 - 2; i++) rows = wrap_mul(rows, sb[i]);
    rows = wrap_mul(rows, sb[d2 - 1]);
    int64_t k = sb[d2 - 2], m = sa[d1 - 1];
    if (k != m) {
      if (d1 == 1) mv_error(sema, loc, rows, k, m);
      else mm_error(sema, loc, rows, k, m, sa[0]);
      return false;
    }
    for (int i = 0; i < d2 - 2; i++) out[(*on)++] = sb[i];
    if (d1 == 2) out[(*on)++] = sa[0];
    out[(*on)++] = sb[d2 - 1];
    return true;
  }
  // batched: broadcast the batch dims, then bmm's check
  int nb = d1 - 2;
  int64_t batch[TD_MAX_DIMS];
  memcpy(batch, sa, sizeof(int64_t) * (size_t)nb);
  if (!broadcast(sema, loc, &nb, batch, d2 - 2, sb)) return false;
  int64_t B = 1;
  for (int i = 0; i < nb; i++) B = wrap_mul(B, batch[i]);
  if (sa[d1 - 1] != sb[d2 - 2]) {
    diag_error(sema->cx, loc, "Expected size for first two dimensions of batch2 tensor to be: [%" PRId64 ", %" PRId64
               "] but got: [%" PRId64 ", %" PRId64 "].", B, sa[d1 - 1], B, sb[d2 - 2]);
    return false;
  }
  for (int i = 0; i < nb; i++) out[(*on)++] = batch[i];
  out[(*on)++] = sa[d1 - 2];
  out[(*on)++] = sb[d2 - 1];
  return true;
}

TType *matmul_node(Sema *sema, Ast *e, Ast *a, Ast *b, Loc loc) {
  int n;
  int64_t shape[TD_MAX_DIMS];
  if (dtype_is_complex(a->ty->dtype) || dtype_is_complex(b->ty->dtype)) return complex_matmul(sema, e, a, b, loc);
  if (!matmul_shape(sema, loc, a->ty, b->ty, &n, shape) || !check_numel(sema, loc, n, shape)) return poison(sema);
  Ast *xs[2] = {a, b};
  set_operands(sema, e, xs, 2);
  return ty_fresh(sema, a->ty->dtype, n, shape);
}

// mm's and bmm's own checks of their operands a and b (kind "mm" or "bmm"; "matmul": none)
bool matmul_kind_ok(Sema *sema, const Ast *e, const char *kind, const Ast *a, const Ast *b) {
  const TType *ta = a->ty, *tb = b->ty;
  if (!strcmp(kind, "mm")) {
    if (ta->view.ndim != 2) return diag_error(sema->cx, a->loc, "self must be a matrix"), false;
    if (tb->view.ndim != 2) return diag_error(sema->cx, b->loc, "mat2 must be a matrix"), false;
  } else if (!strcmp(kind, "bmm")) {
    if (ta->view.ndim != 3) return diag_error(sema->cx, a->loc, "batch1 must be a 3D tensor"), false;
    if (tb->view.ndim != 3) return diag_error(sema->cx, b->loc, "batch2 must be a 3D tensor"), false;
    if (ta->view.shape[0] != tb->view.shape[0] || ta->view.shape[2] != tb->view.shape[1]) {
      diag_error(sema->cx, call_loc(e), "Expected size for first two dimensions of batch2 tensor to be: [%" PRId64 ", %"
                 PRId64 "] but got: [%" PRId64 ", %" PRId64 "].", ta->view.shape[0], ta->view.shape[2],
                 tb->view.shape[0], tb->view.shape[1]);
      return false;
    }
  }
  return true;
}

TType *ck_matmul(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  TType *ta = get_tensor(sema, e, a, "input");
  TType *tb = ta ? get_tensor(sema, e, b, strstr(d->b.sig, "mat2") ? "mat2" : "other") : NULL;  // its name in the row
  if (!ta || !tb || !matmul_kind_ok(sema, e, d->b.name, a, b)) return poison(sema);
  return matmul_node(sema, e, a, b, call_loc(e));
}
