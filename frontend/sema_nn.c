// frontend/sema_nn.c: the functions of torch.nn.functional that are no single node
// (layer_norm, linear, the activations, normalizations, embedding, one_hot, bilinear):
// each is built here from the nodes it is made of, as parts (checked ASTs of their own
// under the call's location) that fusion joins again. The part builders are shared with
// any checker that composes ops. Each checker reports every misuse (PyTorch's message,
// in PyTorch's order) before it builds a part, so a part never fails.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ============================================================================
// Parts: a checked node of builtin `builtin` under e's location
// ============================================================================
Ast *part(Sema *sema, const Ast *e, const char *builtin) {
  Ast *n = ast_new(sema->cx, AST_CALL, e->loc);
  n->name = builtin;
  n->oploc = e->oploc;
  n->bi = &builtin_find(builtin)->b;
  return n;
}

Ast *part_binary(Sema *sema, const Ast *e, Op op, const char *builtin, Ast *a, Ast *b) {
  Ast *n = part(sema, e, builtin);
  n->ty = binary_node(sema, n, op, a, b, call_loc(e));
  return n;
}

// mean over the dims of mask, kept
Ast *part_mean(Sema *sema, const Ast *e, Ast *x, uint32_t mask) {
  Ast *n = part(sema, e, "mean");
  n->ty = reduce_node(sema, n, x, mask, true, -1, x->ty->dtype);
  return n;
}

// A call of builtin `builtin` with its bound arguments args[0..n) in its signature's
// order (NULL: the default), checked by the builtin's own checker.
Ast *part_call(Sema *sema, const Ast *e, const char *builtin, Ast *const *args, int n) {
  Ast *c = part(sema, e, builtin);
  const BuiltinDef *d = builtin_find(builtin);
  c->bargs = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) c->bargs[i] = args[i];
  c->nbargs = n;
  c->ty = d->check(sema, c, d);
  return c;
}

Ast *part_cast(Sema *sema, const Ast *e, Ast *x, const char *to) { return part_call(sema, e, to, &x, 1); }

Ast *part_unary(Sema *sema, const Ast *e, Op op, const char *builtin, Ast *x) {
  Ast *n = part(sema, e, builtin);
  n->ty = unary_node(sema, n, op, x, call_loc(e));
  return n;
}

// A Python float (or int) literal at e's location.
Ast *part_float(Sema *sema, const Ast *e, double v) {
  Ast *n = ast_float(sema->cx, v, e->loc);
  n->ty = ty_float(sema, v);
  return n;
}
Ast *part_dtype(Sema *sema, const Ast *e, DType dt) {
  Ast *n = ast_dtype(sema->cx, dt, e->loc);
  n->ty = ty_dtype(sema, dt);
  return n;
}
Ast *part_int(Sema *sema, const Ast *e, int64_t v) {
  Ast *n = ast_int(sema->cx, v, e->loc);
  n->ty = ty_int(sema, v);
  return n;
}

// e becomes the node of its last part y; returns y's type.
TType *become(Sema *sema, Ast *e, const Ast *y) {
  if (is_poison(y->ty)) return poison(sema);
  e->bi = y->bi;
  e->attr = y->attr;
  e->needs_copy = y->needs_copy;
  set_operands(sema, e, y->operands, y->noperands);
  return y->ty;
}

// ============================================================================
// layer_norm, linear
// ============================================================================
// weight or bias of layer_norm: normalized_shape's shape, the input's dtype.
static bool norm_param(Sema *sema, const Ast *e, Ast *a, const char *pname, const TType *x, int k,
                       const int64_t *ns) {
  const TType *t = get_tensor(sema, e, a, pname);
  if (!t) return false;
  bool same = t->view.ndim == k;
  for (int i = 0; same && i < k; i++) same = t->view.shape[i] == ns[i];
  if (!same) {
    diag_error(sema->cx, a->loc, "Expected %s to be of same shape as normalized_shape, but got %s of shape %s and "
               "normalized_shape = %s", pname, pname, shape_str(sema, t->view.ndim, t->view.shape),
               shape_str(sema, k, ns));
    return false;
  }
  if (t->dtype != x->dtype) {
    diag_error(sema->cx, a->loc, "expected scalar type %s but found %s", torch_name(x->dtype), torch_name(t->dtype));
    return false;
  }
  return true;
}

// normalized_shape of layer_norm and rms_norm (fname): the last dims of the input, in
// ns[0..k); false after PyTorch's message.
static bool norm_shape(Sema *sema, const Ast *e, const char *fname, Ast *nsa, const TType *xt, int64_t *ns, int *k) {
  if (is_scalar(nsa->ty)) {
    diag_error(sema->cx, nsa->loc, "%s(): argument %s must be tuple of ints, not %s", fname,
               arg_name(sema, e, "normalized_shape"), py_type_name(nsa->ty));
    return false;
  }
  if (!get_ints(sema, e, nsa, "normalized_shape", ns, k)) return false;
  if (*k == 0) {
    diag_error(sema->cx, nsa->loc, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
               "one element, but got normalized_shape = []");
    return false;
  }
  int nd = xt->view.ndim;
  bool fits = *k <= nd;
  for (int i = 0; fits && i < *k; i++) fits = xt->view.shape[nd - *k + i] == ns[i];
  if (!fits) {
    const char *want = shape_str(sema, *k, ns);
    diag_error(sema->cx, call_loc(e), "Given normalized_shape=%s, expected input with shape [*, %.*s], but got input "
               "of size%s", want, (int)strlen(want) - 2, want + 1, shape_str(sema, nd, xt->view.shape));
    return false;
  }
  return true;
}

// F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05) over the last
// dims: c = x - mean(x), y = c * rsqrt(mean(c * c) + eps) (* weight) (+ bias); halves are
// computed in f32 and rounded once, as PyTorch's CUDA kernel does.
TType *ck_layer_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *nsa = e->bargs[1], *w = barg(e, 2), *b = barg(e, 3), *epsa = barg(e, 4);
  TType *xt = get_tensor(sema, e, x, "input");
  if (!xt) return poison(sema);
  int64_t ns[MAX_LIST];
  int k;
  if (!norm_shape(sema, e, "layer_norm", nsa, xt, ns, &k)) return poison(sema);
  int nd = xt->view.ndim;
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"LayerNormKernelImpl\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  if ((w && !norm_param(sema, e, w, "weight", xt, k, ns)) || (b && !norm_param(sema, e, b, "bias", xt, k, ns)))
    return poison(sema);
  if (epsa && !is_scalar(epsa->ty)) {
    diag_error(sema->cx, epsa->loc, "layer_norm(): argument 'eps' must be float, not %s", py_type_name(epsa->ty));
    return poison(sema);
  }
  Ast *eps = part_float(sema, e, epsa ? epsa->ty->fval : 1e-5);
  bool half = dtype_is_half(xt->dtype);
  Ast *xf = half ? part_cast(sema, e, x, "float") : x;
  uint32_t mask = (uint32_t)(((1ull << k) - 1) << (nd - k));
  Ast *c = part_binary(sema, e, OP_SUB, "sub", xf, part_mean(sema, e, xf, mask));
  Ast *var = part_mean(sema, e, part_binary(sema, e, OP_MUL, "mul", c, c), mask);
  Ast *r = part_unary(sema, e, OP_RSQRT, "rsqrt", part_binary(sema, e, OP_ADD, "add", var, eps));
  Ast *y = part_binary(sema, e, OP_MUL, "mul", c, r);
  if (w) y = part_binary(sema, e, OP_MUL, "mul", y, half ? part_cast(sema, e, w, "float") : w);
  if (b) y = part_binary(sema, e, OP_ADD, "add", y, half ? part_cast(sema, e, b, "float") : b);
  if (half) y = part_cast(sema, e, y, xt->dtype == DT_F16 ? "half" : "bfloat16");
  return become(sema, e, y);
}

// F.linear(input, weight, bias=None) is input @ weight.t() (+ bias): a view of weight
// and a matmul node (with the add as its epilogue), made here as nodes of their own.
TType *ck_linear(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *w = e->bargs[1], *bias = barg(e, 2);
  if (!get_tensor(sema, e, x, "input") || !get_tensor(sema, e, w, "weight") ||
      (bias && !get_tensor(sema, e, bias, "bias")))
    return poison(sema);
  Loc loc = call_loc(e);
  const BuiltinDef *td = builtin_find("t"), *md = builtin_find("matmul"), *ad = builtin_find("add");
  Ast *wt = ast_new(sema->cx, AST_CALL, w->loc);
  wt->name = "t";
  wt->bi = &td->b;
  wt->bargs = arena_alloc(&sema->cx->arena, sizeof(Ast *));
  wt->bargs[0] = w;
  wt->nbargs = 1;
  wt->ty = ck_t(sema, wt, td);
  if (is_poison(wt->ty)) return poison(sema);
  if (!bias) {
    e->bi = &md->b;
    return matmul_node(sema, e, x, wt, loc);
  }
  Ast *mm = ast_new(sema->cx, AST_BINARY, loc);
  mm->op = BIN_MATMUL;
  mm->bi = &md->b;
  mm->ty = matmul_node(sema, mm, x, wt, loc);
  if (is_poison(mm->ty)) return poison(sema);
  e->bi = &ad->b;
  return binary_node(sema, e, OP_ADD, mm, bias, loc);
}


// ============================================================================
// Helpers of the ops below: arithmetic parts, Python number arguments, dtypes
// ============================================================================
static Ast *add(Sema *s, const Ast *e, Ast *a, Ast *b) { return part_binary(s, e, OP_ADD, "add", a, b); }
static Ast *sub(Sema *s, const Ast *e, Ast *a, Ast *b) { return part_binary(s, e, OP_SUB, "sub", a, b); }
static Ast *mul(Sema *s, const Ast *e, Ast *a, Ast *b) { return part_binary(s, e, OP_MUL, "mul", a, b); }
static Ast *dvd(Sema *s, const Ast *e, Ast *a, Ast *b) { return part_binary(s, e, OP_DIV, "div", a, b); }
static Ast *num(Sema *s, const Ast *e, double v) { return part_float(s, e, v); }
static Ast *exp_(Sema *s, const Ast *e, Ast *x) { return part_unary(s, e, OP_EXP, "exp", x); }
static Ast *log1p_(Sema *s, const Ast *e, Ast *x) { return part_unary(s, e, OP_LOG1P, "log1p", x); }
static Ast *expm1_(Sema *s, const Ast *e, Ast *x) { return part_unary(s, e, OP_EXPM1, "expm1", x); }
static Ast *abs_(Sema *s, const Ast *e, Ast *x) { return part_unary(s, e, OP_ABS, "abs", x); }

static Ast *where_(Sema *s, const Ast *e, Ast *c, Ast *a, Ast *b) {
  Ast *args[3] = {c, a, b};
  return part_call(s, e, "where", args, 3);
}
static Ast *clamp_(Sema *s, const Ast *e, Ast *x, Ast *lo, Ast *hi) {
  Ast *args[3] = {x, lo, hi};
  return part_call(s, e, "clamp", args, 3);
}

// x (a view op or a reshape) with the shape shape[0..n).
static Ast *reshape_(Sema *sema, const Ast *e, Ast *x, int n, const int64_t *shape) {
  Ast *args[2] = {x, part_ints(sema, e, n, shape)};
  return part_call(sema, e, "reshape", args, 2);
}

// The reduction `builtin` (sum, amax, amin) of x over the dims of mask.
static Ast *part_reduce(Sema *sema, const Ast *e, const char *builtin, Ast *x, uint32_t mask, bool keepdim) {
  Ast *n = part(sema, e, builtin);
  n->ty = reduce_node(sema, n, x, mask, keepdim, -1, x->ty->dtype);
  return n;
}

// x as dtype dt (itself when it has it).
static Ast *to_dtype(Sema *sema, const Ast *e, Ast *x, DType dt) {
  return x->ty->dtype == dt ? x : part_cast(sema, e, x, cast_method(dt));
}
// Halves are computed in f32 and rounded once at the end, as PyTorch's CUDA kernels do.
static Ast *up(Sema *sema, const Ast *e, Ast *x) {
  return dtype_is_half(x->ty->dtype) ? to_dtype(sema, e, x, DT_F32) : x;
}
static Ast *down(Sema *sema, const Ast *e, Ast *y, DType dt) {
  return dtype_is_half(dt) ? to_dtype(sema, e, y, dt) : y;
}

// A Python number argument i (kind: "Number" for PyTorch's Scalar, "float"); def when
// left out. A tensor is refused: its value is not known when compiling.
static bool num_arg(Sema *sema, const Ast *e, int i, const char *pname, const char *kind, double def, double *out) {
  Ast *a = barg(e, i);
  if (!a) {
    *out = def;
    return true;
  }
  if (is_scalar(a->ty) && (a->ty->dtype != DT_BOOL || !strcmp(kind, "Number"))) {
    *out = a->ty->fval;
    return true;
  }
  if (is_tensor(a->ty))
    diag_error(sema->cx, a->loc, "%s(): argument '%s' must be a number here: a tensor's value is not known when "
               "compiling", e->bi->name, pname);
  else
    diag_error(sema->cx, a->loc, "%s(): argument %s must be %s, not %s", e->bi->name, arg_name(sema, e, pname), kind,
               py_type_name(a->ty));
  return false;
}

// inplace=True writes the input: tdsl's ops return new values, so it is refused.
static bool no_inplace(Sema *sema, const Ast *e, int i) {
  Ast *a = barg(e, i);
  bool v = false;
  if (!a) return true;
  if (!get_bool(sema, e, a, "inplace", &v)) return false;
  if (v) {
    diag_error(sema->cx, a->loc, "%s(): inplace=True is not supported: it overwrites the input; use inplace=False "
               "and bind the result", e->bi->name);
    return false;
  }
  return true;
}

// The input of an activation (a tensor); with kernel, a float one (PyTorch's CUDA
// kernel's message for the others).
static TType *act_input(Sema *sema, const Ast *e, const char *kernel, int inplace_at) {
  TType *xt = get_tensor(sema, e, e->bargs[0], "input");
  if (!xt || (inplace_at >= 0 && !no_inplace(sema, e, inplace_at))) return NULL;
  if (kernel && !dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'", kernel, torch_name(xt->dtype));
    return NULL;
  }
  return xt;
}

// A Python number as a scalar of a tensor of dtype dt: an int tensor's kernel converts it
// to its own type (truncating), as PyTorch's Scalar.to<int>() does.
static Ast *scalar_for(Sema *sema, const Ast *e, double v, DType dt) {
  if (dtype_is_float(dt)) return num(sema, e, v);
  double t = v != v ? 0 : v > 9.2e18 ? 9.2e18 : v < -9.2e18 ? -9.2e18 : v;
  return part_int(sema, e, (int64_t)t);
}

// ============================================================================
// Activations (PyTorch's CUDA kernels' formulas)
// ============================================================================
// F.softplus(input, beta=1, threshold=20): x * beta > threshold ? x : log1p(exp(x * beta)) / beta
TType *ck_softplus(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  double beta, th;
  TType *xt = act_input(sema, e, "softplus_cuda", -1);
  if (!xt || !num_arg(sema, e, 1, "beta", "Number", 1, &beta) || !num_arg(sema, e, 2, "threshold", "Number", 20, &th))
    return poison(sema);
  Ast *x = up(sema, e, e->bargs[0]);
  Ast *bx = beta == 1 ? x : mul(sema, e, x, num(sema, e, beta));
  Ast *sp = log1p_(sema, e, exp_(sema, e, bx));
  if (beta != 1) sp = dvd(sema, e, sp, num(sema, e, beta));
  Ast *y = where_(sema, e, part_binary(sema, e, OP_GT, "gt", bx, num(sema, e, th)), x, sp);
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.leaky_relu(input, negative_slope=0.01, inplace=False): x > 0 ? x : x * negative_slope
TType *ck_leaky_relu(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  double slope;
  TType *xt = act_input(sema, e, "leaky_relu_cuda", 2);
  if (!xt || !num_arg(sema, e, 1, "negative_slope", "Number", 0.01, &slope)) return poison(sema);
  Ast *x = up(sema, e, e->bargs[0]);
  Ast *y = where_(sema, e, part_binary(sema, e, OP_GT, "gt", x, num(sema, e, 0)), x,
                  mul(sema, e, x, num(sema, e, slope)));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// PyTorch's elu kernel, shared by elu, selu and celu:
//   x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale
static TType *elu_parts(Sema *sema, Ast *e, const TType *xt, double alpha, double scale, double input_scale) {
  Ast *x = up(sema, e, e->bargs[0]);
  Ast *xi = input_scale == 1 ? x : mul(sema, e, x, num(sema, e, input_scale));
  Ast *neg = expm1_(sema, e, xi);
  neg = mul(sema, e, neg, num(sema, e, alpha * scale));
  Ast *pos = scale == 1 ? x : mul(sema, e, x, num(sema, e, scale));
  Ast *y = where_(sema, e, part_binary(sema, e, OP_LE, "le", x, num(sema, e, 0)), neg, pos);
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.elu(input, alpha=1.0, inplace=False)
TType *ck_elu(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  double alpha;
  TType *xt = act_input(sema, e, "elu_cuda", 2);
  if (!xt || !num_arg(sema, e, 1, "alpha", "float", 1, &alpha)) return poison(sema);
  return elu_parts(sema, e, xt, alpha, 1, 1);
}

// F.selu(input, inplace=False): elu with PyTorch's alpha and scale
TType *ck_selu(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *xt = act_input(sema, e, "elu_cuda", 1);
  if (!xt) return poison(sema);
  return elu_parts(sema, e, xt, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1);
}

// F.celu(input, alpha=1.0, inplace=False): elu(x, alpha, input_scale=1/alpha)
TType *ck_celu(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  double alpha;
  TType *xt = act_input(sema, e, NULL, 2);
  if (!xt || !num_arg(sema, e, 1, "alpha", "float", 1, &alpha)) return poison(sema);
  if (alpha == 0) {
    diag_error(sema->cx, barg(e, 1) ? e->bargs[1]->loc : call_loc(e), "ZeroDivisionError: alpha cannot be 0 for CELU");
    return poison(sema);
  }
  if (!act_input(sema, e, "elu_cuda", -1)) return poison(sema);
  return elu_parts(sema, e, xt, alpha, 1, 1 / alpha);
}

// hardtanh's clamp: ints are accepted (bounds truncated to ints; u8 with no negative
// bound), bool is not.
static TType *hardtanh_parts(Sema *sema, Ast *e, const TType *xt, double lo, double hi) {
  if (xt->dtype == DT_BOOL) {
    diag_error(sema->cx, call_loc(e), "Bool inputs not supported for hardtanh");
    return poison(sema);
  }
  if (dtype_is_unsigned(xt->dtype) && (lo < 0 || hi < 0)) {
    diag_error(sema->cx, call_loc(e), "cannot do hardtanh on an unsigned type with negative limits");
    return poison(sema);
  }
  Ast *y = clamp_(sema, e, e->bargs[0], scalar_for(sema, e, lo, xt->dtype), scalar_for(sema, e, hi, xt->dtype));
  return become(sema, e, y);
}

// F.hardtanh(input, min_val=-1., max_val=1., inplace=False): clamp(x, min_val, max_val)
TType *ck_hardtanh(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  double lo, hi;
  TType *xt = act_input(sema, e, NULL, 3);
  if (!xt || !num_arg(sema, e, 1, "min_val", "float", -1, &lo) || !num_arg(sema, e, 2, "max_val", "float", 1, &hi))
    return poison(sema);
  return hardtanh_parts(sema, e, xt, lo, hi);
}

// F.relu6(input, inplace=False): hardtanh(x, 0, 6)
TType *ck_relu6(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *xt = act_input(sema, e, NULL, 1);
  return xt ? hardtanh_parts(sema, e, xt, 0, 6) : poison(sema);
}

// F.hardsigmoid(input, inplace=False): min(max(x + 3, 0), 6) * (1 / 6);
// F.hardswish(input, inplace=False): x * min(max(x + 3, 0), 6) / 6
TType *ck_hardsigmoid(Sema *sema, Ast *e, const BuiltinDef *d) {
  bool swish = !strcmp(d->b.name, "hardswish");
  TType *xt = act_input(sema, e, swish ? "hardswish_cuda" : "hardsigmoid_cuda", 1);
  if (!xt) return poison(sema);
  Ast *x = up(sema, e, e->bargs[0]);
  Ast *h = clamp_(sema, e, add(sema, e, x, num(sema, e, 3)), num(sema, e, 0), num(sema, e, 6));
  Ast *y = swish ? dvd(sema, e, mul(sema, e, x, h), num(sema, e, 6)) : mul(sema, e, h, num(sema, e, 1.0 / 6.0));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.mish(input, inplace=False): x * tanh(log1p(exp(x)))
TType *ck_mish(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *xt = act_input(sema, e, "mish_cuda", 1);
  if (!xt) return poison(sema);
  Ast *x = up(sema, e, e->bargs[0]);
  Ast *sp = log1p_(sema, e, exp_(sema, e, x));
  Ast *y = mul(sema, e, x, part_unary(sema, e, OP_TANH, "tanh", sp));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.softsign(input): x / (abs(x) + 1), PyTorch's Python formula: ints give f32, bool is
// abs's error.
TType *ck_softsign(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *xt = act_input(sema, e, NULL, -1);
  if (!xt) return poison(sema);
  Ast *x = up(sema, e, e->bargs[0]);
  Ast *a = abs_(sema, e, x);
  if (is_poison(a->ty)) return poison(sema);
  Ast *y = dvd(sema, e, x, add(sema, e, a, num(sema, e, 1)));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.logsigmoid(input): min(x, 0) - log1p(exp(-abs(x))), PyTorch's CUDA kernel
TType *ck_logsigmoid(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *xt = act_input(sema, e, "log_sigmoid_forward_cuda", -1);
  if (!xt) return poison(sema);
  Ast *x = up(sema, e, e->bargs[0]);
  Ast *z = exp_(sema, e, part_unary(sema, e, OP_NEG, "neg", abs_(sema, e, x)));
  Ast *y = sub(sema, e, clamp_(sema, e, x, NULL, num(sema, e, 0)),
               log1p_(sema, e, z));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.tanhshrink(input): x - tanh(x), PyTorch's Python formula (ints give f32; bool is
// the subtraction's error)
TType *ck_tanhshrink(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *xt = act_input(sema, e, NULL, -1);
  if (!xt) return poison(sema);
  Ast *x = up(sema, e, e->bargs[0]);
  Ast *y = sub(sema, e, x, part_unary(sema, e, OP_TANH, "tanh", x));
  if (is_poison(y->ty)) return poison(sema);
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.threshold(input, threshold, value, inplace=False): x <= threshold ? value : x, both
// numbers converted to the input's dtype (ints truncate)
TType *ck_threshold(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  double th, val;
  TType *xt = act_input(sema, e, NULL, 3);
  if (!xt || !num_arg(sema, e, 1, "threshold", "Number", 0, &th) || !num_arg(sema, e, 2, "value", "Number", 0, &val))
    return poison(sema);
  if (xt->dtype == DT_BOOL) {
    diag_error(sema->cx, call_loc(e), "\"threshold_cuda\" not implemented for 'Bool'");
    return poison(sema);
  }
  Ast *x = e->bargs[0];
  Ast *c = part_binary(sema, e, OP_LE, "le", x, scalar_for(sema, e, th, xt->dtype));
  return become(sema, e, where_(sema, e, c, scalar_for(sema, e, val, xt->dtype), x));
}

// F.glu(input, dim=-1): a * sigmoid(b), a and b the halves of dim
TType *ck_glu(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *xt = act_input(sema, e, NULL, -1);
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
  if (!act_input(sema, e, "glu_cuda", -1)) return poison(sema);
  Ast *args[4] = {e->bargs[0], part_int(sema, e, a), part_int(sema, e, 0), part_int(sema, e, n / 2)};
  Ast *lo = up(sema, e, part_call(sema, e, "narrow", args, 4));
  args[2] = part_int(sema, e, n / 2);
  Ast *hi = up(sema, e, part_call(sema, e, "narrow", args, 4));
  Ast *y = mul(sema, e, lo, part_unary(sema, e, OP_SIGMOID, "sigmoid", hi));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.softmin(input, dim=None, _stacklevel=3, dtype=None): softmax(-x, dim, dtype); without
// dim, PyTorch's implicit choice (0 for 0-, 1- and 3-d inputs, else 1)
TType *ck_softmin(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *xt = act_input(sema, e, NULL, -1);
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
  Ast *neg = part_unary(sema, e, OP_NEG, "neg", e->bargs[0]);
  if (is_poison(neg->ty)) return poison(sema);
  Ast *args[3] = {neg, part_int(sema, e, a), barg(e, 3)};
  return become(sema, e, part_call(sema, e, "softmax", args, 3));
}

// ============================================================================
// Normalizations
// ============================================================================
// torch.finfo(dt).eps
static double finfo_eps(DType dt) {
  switch (dt) {
  case DT_F16: return 0.0009765625;
  case DT_BF16: return 0.0078125;
  case DT_F64: return 2.220446049250313e-16;
  default: return 1.1920928955078125e-07;
  }
}

// F.rms_norm(input, normalized_shape, weight=None, eps=None) (PyTorch 2.4's, with
// layer_norm's checks and messages): y = x * rsqrt(mean(x * x) + eps) (* weight) over the
// last dims; eps None is torch.finfo(input.dtype).eps; halves computed in f32.
TType *ck_rms_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *w = barg(e, 2);
  TType *xt = get_tensor(sema, e, x, "input");
  int64_t ns[MAX_LIST];
  int k;
  double eps;
  if (!xt || !norm_shape(sema, e, "rms_norm", e->bargs[1], xt, ns, &k)) return poison(sema);
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"rms_norm\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  if ((w && !norm_param(sema, e, w, "weight", xt, k, ns)) ||
      !num_arg(sema, e, 3, "eps", "float", finfo_eps(xt->dtype), &eps))
    return poison(sema);
  int nd = xt->view.ndim;
  uint32_t mask = (uint32_t)(((1ull << k) - 1) << (nd - k));
  Ast *xf = up(sema, e, x);
  Ast *ms = part_mean(sema, e, mul(sema, e, xf, xf), mask);
  Ast *y = mul(sema, e, xf, part_unary(sema, e, OP_RSQRT, "rsqrt", add(sema, e, ms, num(sema, e, eps))));
  if (w) y = mul(sema, e, y, up(sema, e, w));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// A per-channel parameter p of a [N, C, *] input, as [C, 1, ...] to broadcast over it.
static Ast *per_channel(Sema *sema, const Ast *e, Ast *p, int nd, int64_t c) {
  int64_t shape[TD_MAX_DIMS] = {c};
  for (int i = 1; i < nd - 1; i++) shape[i] = 1;
  return reshape_(sema, e, p, nd > 1 ? nd - 1 : 1, shape);
}

// F.group_norm(input, num_groups, weight=None, bias=None, eps=1e-05): x [N, C, *] as
// [N, G, rest], normalized over rest (biased variance), then * weight[C] + bias[C].
TType *ck_group_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *w = barg(e, 2), *b = barg(e, 3);
  TType *xt = get_tensor(sema, e, x, "input");
  int64_t g;
  double eps;
  if (!xt || !get_int(sema, e, e->bargs[1], "num_groups", &g)) return poison(sema);
  if ((w && !get_tensor(sema, e, w, "weight")) || (b && !get_tensor(sema, e, b, "bias")) ||
      !num_arg(sema, e, 4, "eps", "float", 1e-5, &eps))
    return poison(sema);
  const View *v = &xt->view;
  int nd = v->ndim;
  if (nd == 0) {
    diag_error(sema->cx, call_loc(e), "Dimension specified as 0 but tensor has no dimensions");
    return poison(sema);
  }
  int a1;
  if (!wrap_dim(sema, call_loc(e), 1, nd, &a1)) return poison(sema);
  int64_t n = v->shape[0], c = v->shape[1], spatial = 1;
  for (int i = 2; i < nd; i++) spatial = wrap_mul(spatial, v->shape[i]);
  // F.group_norm's Python checks first: input.size(0) * input.size(1) // num_groups
  if (g == 0) {
    diag_error(sema->cx, e->bargs[1]->loc, "integer division or modulo by zero");
    return poison(sema);
  }
  int64_t nc = wrap_mul(n, c), per = nc / g - (nc % g != 0 && (nc < 0) != (g < 0));  // Python's //
  if (wrap_mul(per, spatial) == 1) {
    int64_t sz[TD_MAX_DIMS] = {per, g};
    for (int i = 2; i < nd; i++) sz[i] = v->shape[i];
    diag_error(sema->cx, call_loc(e), "Expected more than 1 value per channel when training, got input size %s",
               shape_str(sema, nd, sz));
    return poison(sema);
  }
  if (g < 0) {
    diag_error(sema->cx, e->bargs[1]->loc, "Expected num groups to be greater than 0, got %" PRId64, g);
    return poison(sema);
  }
  if (c % g) {
    diag_error(sema->cx, call_loc(e), "Expected number of channels in input to be divisible by num_groups, but got "
               "input of shape %s and num_groups=%" PRId64, shape_str(sema, nd, v->shape), g);
    return poison(sema);
  }
  Ast *ps[2] = {w, b};
  for (int i = 0; i < 2; i++) {
    if (!ps[i]) continue;
    const View *pv = &ps[i]->ty->view;
    if (pv->ndim != 1 || pv->shape[0] != c) {
      // PyTorch 1.13 prints the weight's shape in the bias's message too ([0] when there is none)
      const View *shown = w ? &w->ty->view : NULL;
      diag_error(sema->cx, ps[i]->loc, "Expected %s to be a vector of size equal to the number of channels in input, "
                 "but got %s of shape %s and input of shape %s", i ? "bias" : "weight", i ? "bias" : "weight",
                 shown ? shape_str(sema, shown->ndim, shown->shape) : "[0]", shape_str(sema, nd, v->shape));
      return poison(sema);
    }
  }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"GroupNormKernelImpl\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  for (int i = 0; i < 2; i++)
    if (ps[i] && ps[i]->ty->dtype != xt->dtype) {
      diag_error(sema->cx, ps[i]->loc, "expected scalar type %s but found %s", torch_name(xt->dtype),
                 torch_name(ps[i]->ty->dtype));
      return poison(sema);
    }
  int64_t grouped[3] = {n, g, wrap_mul(c / g, spatial)};
  Ast *xg = reshape_(sema, e, up(sema, e, x), 3, grouped);
  Ast *cen = sub(sema, e, xg, part_mean(sema, e, xg, 1u << 2));
  Ast *var = part_mean(sema, e, mul(sema, e, cen, cen), 1u << 2);
  Ast *y = mul(sema, e, cen, part_unary(sema, e, OP_RSQRT, "rsqrt", add(sema, e, var, num(sema, e, eps))));
  y = reshape_(sema, e, y, nd, v->shape);
  if (w) y = mul(sema, e, y, per_channel(sema, e, up(sema, e, w), nd, c));
  if (b) y = add(sema, e, y, per_channel(sema, e, up(sema, e, b), nd, c));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// The per-channel tensors of batch_norm / instance_norm (running_mean, running_var,
// weight, bias: NULL when None): tensors of `want` elements (shown as `want`, `got`
// times `scale`). False after PyTorch's message.
static bool bn_params(Sema *sema, const Ast *e, Ast **ps, const char *const *names, int64_t want, int64_t scale) {
  for (int i = 0; i < 4; i++) {
    if (!ps[i]) continue;
    const TType *t = get_tensor(sema, e, ps[i], names[i]);
    if (!t) return false;
    int64_t got = view_numel(t->view);
    if (wrap_mul(got, scale) != wrap_mul(want, scale)) {
      diag_error(sema->cx, ps[i]->loc, "%s should contain %" PRId64 " elements not %" PRId64, names[i],
                 wrap_mul(want, scale), wrap_mul(got, scale));
      return false;
    }
  }
  return true;
}

// Their layout and dtype, which the kernel finds after its dispatch on the input's dtype:
// vectors of one dtype, the input's or f32 beside a half input (PyTorch's mixed precision).
static bool bn_dtypes(Sema *sema, const TType *xt, Ast **ps) {
  DType pt = DT_COUNT;
  for (int i = 0; i < 4; i++) {
    if (!ps[i]) continue;
    const TType *t = ps[i]->ty;
    if (t->view.ndim != 1) {
      diag_error(sema->cx, ps[i]->loc, "TensorAccessor expected 1 dims but tensor has %d", t->view.ndim);
      return false;
    }
    if (pt == DT_COUNT) pt = t->dtype;
    DType expect = pt == DT_F32 && dtype_is_half(xt->dtype) ? DT_F32 : xt->dtype;
    if (t->dtype != expect) {
      diag_error(sema->cx, ps[i]->loc, "expected scalar type %s but found %s", torch_name(expect),
                 torch_name(t->dtype));
      return false;
    }
  }
  return true;
}

// (x - mean) * rsqrt(var + eps) (* weight) (+ bias) with per-channel statistics of a
// [N, C, *] input (running_mean and running_var: ps[0], ps[1]), in f32 for halves.
static TType *bn_apply(Sema *sema, Ast *e, const TType *xt, Ast **ps, double eps) {
  int nd = xt->view.ndim;
  int64_t c = xt->view.shape[1];
  Ast *q[4];
  for (int i = 0; i < 4; i++) q[i] = ps[i] ? per_channel(sema, e, up(sema, e, ps[i]), nd, c) : NULL;
  Ast *xf = up(sema, e, e->bargs[0]);
  Ast *r = part_unary(sema, e, OP_RSQRT, "rsqrt", add(sema, e, q[1], num(sema, e, eps)));
  Ast *y = mul(sema, e, sub(sema, e, xf, q[0]), r);
  if (q[2]) y = mul(sema, e, y, q[2]);
  if (q[3]) y = add(sema, e, y, q[3]);
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
// momentum=0.1, eps=1e-05) in evaluation mode, with the running statistics; training=True
// updates running_mean and running_var in place, which tdsl does not do.
TType *ck_batch_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  static const char *const names[4] = {"running_mean", "running_var", "weight", "bias"};
  TType *xt = get_tensor(sema, e, e->bargs[0], "input");
  bool training = false;
  double momentum, eps;
  if (!xt || (barg(e, 5) && !get_bool(sema, e, e->bargs[5], "training", &training)) ||
      !num_arg(sema, e, 6, "momentum", "float", 0.1, &momentum) || !num_arg(sema, e, 7, "eps", "float", 1e-5, &eps))
    return poison(sema);
  if (training) {
    diag_error(sema->cx, e->bargs[5]->loc, "batch_norm(): training=True is not supported: it updates running_mean "
               "and running_var in place; use training=False (the running statistics)");
    return poison(sema);
  }
  Ast *ps[4] = {barg(e, 1), barg(e, 2), barg(e, 3), barg(e, 4)};
  int nd = xt->view.ndim;
  int64_t c = nd > 1 ? xt->view.shape[1] : 0;
  for (int i = 0; i < 2; i++)
    if (!ps[i]) {
      diag_error(sema->cx, e->bargs[1 + i]->loc, "%s must be defined in evaluation mode", names[i]);
      return poison(sema);
    }
  if (!bn_params(sema, e, ps, names, c, 1)) return poison(sema);
  int a1;
  if (!wrap_dim(sema, call_loc(e), 1, nd, &a1)) return poison(sema);
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"batch_norm_elementwise_cuda\" not implemented for '%s'",
               torch_name(xt->dtype));
    return poison(sema);
  }
  if (!bn_dtypes(sema, xt, ps)) return poison(sema);
  return bn_apply(sema, e, xt, ps, eps);
}

// F.instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
// use_input_stats=True, momentum=0.1, eps=1e-05): each sample's channels normalized by
// their own mean and (biased) variance over the spatial dims; use_input_stats=False uses
// the running statistics as batch_norm does. With use_input_stats=True PyTorch also
// updates given running statistics in place, which tdsl does not do: refused.
TType *ck_instance_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  static const char *const names[4] = {"running_mean", "running_var", "weight", "bias"};
  TType *xt = get_tensor(sema, e, e->bargs[0], "input");
  bool stats = true;
  double momentum, eps;
  if (!xt || (barg(e, 5) && !get_bool(sema, e, e->bargs[5], "use_input_stats", &stats)) ||
      !num_arg(sema, e, 6, "momentum", "float", 0.1, &momentum) || !num_arg(sema, e, 7, "eps", "float", 1e-5, &eps))
    return poison(sema);
  const View *v = &xt->view;
  int nd = v->ndim;
  Ast *ps[4] = {barg(e, 1), barg(e, 2), barg(e, 3), barg(e, 4)};
  if (stats) {
    int64_t spatial = 1;
    for (int i = 2; i < nd; i++) spatial = wrap_mul(spatial, v->shape[i]);
    if (spatial == 1) {
      diag_error(sema->cx, call_loc(e), "Expected more than 1 spatial element when training, got input size "
                 "torch.Size(%s)", shape_str(sema, nd, v->shape));
      return poison(sema);
    }
    for (int i = 0; i < 2; i++)
      if (ps[i]) {
        diag_error(sema->cx, ps[i]->loc, "instance_norm(): %s is updated in place when use_input_stats=True, which "
                   "tdsl does not do; pass the running statistics only with use_input_stats=False", names[i]);
        return poison(sema);
      }
  } else if (!ps[0] || !ps[1]) {
    diag_error(sema->cx, call_loc(e), "Expected running_mean and running_var to be defined when use_input_stats is "
               "false");
    return poison(sema);
  }
  int a1;
  if (!wrap_dim(sema, call_loc(e), 1, nd, &a1)) return poison(sema);
  if (!bn_params(sema, e, ps, names, v->shape[1], v->shape[0])) return poison(sema);
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'",
               stats ? "batch_norm_stats_cuda" : "batch_norm_elementwise_cuda", torch_name(xt->dtype));
    return poison(sema);
  }
  if (!bn_dtypes(sema, xt, ps)) return poison(sema);
  if (!stats) return bn_apply(sema, e, xt, ps, eps);
  uint32_t mask = (uint32_t)(((1ull << nd) - 1) & ~3ull);
  Ast *xf = up(sema, e, e->bargs[0]);
  Ast *cen = sub(sema, e, xf, part_mean(sema, e, xf, mask));
  Ast *var = part_mean(sema, e, mul(sema, e, cen, cen), mask);
  Ast *y = mul(sema, e, cen, part_unary(sema, e, OP_RSQRT, "rsqrt", add(sema, e, var, num(sema, e, eps))));
  if (ps[2]) y = mul(sema, e, y, per_channel(sema, e, up(sema, e, ps[2]), nd, v->shape[1]));
  if (ps[3]) y = add(sema, e, y, per_channel(sema, e, up(sema, e, ps[3]), nd, v->shape[1]));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// The p-norm of float x over the dims of mask (torch.norm / linalg.vector_norm):
// 2: sqrt(sum(x * x)), 1: sum(abs(x)), inf / -inf: amax / amin(abs(x)), 0: the count of
// nonzeros, else sum(abs(x) ** p) ** (1 / p).
static Ast *vnorm(Sema *sema, const Ast *e, Ast *x, double p, uint32_t mask, bool keepdim) {
  if (p == 2) return part_unary(sema, e, OP_SQRT, "sqrt", part_reduce(sema, e, "sum", mul(sema, e, x, x), mask, keepdim));
  if (p == INFINITY || p == -INFINITY) return part_reduce(sema, e, p > 0 ? "amax" : "amin", abs_(sema, e, x), mask, keepdim);
  if (p == 0) {
    Ast *nz = to_dtype(sema, e, part_binary(sema, e, OP_NE, "ne", x, num(sema, e, 0)), x->ty->dtype);
    return part_reduce(sema, e, "sum", nz, mask, keepdim);
  }
  Ast *a = abs_(sema, e, x);
  if (p == 1) return part_reduce(sema, e, "sum", a, mask, keepdim);
  Ast *s = part_reduce(sema, e, "sum", part_binary(sema, e, OP_POW, "pow", a, num(sema, e, p)), mask, keepdim);
  return part_binary(sema, e, OP_POW, "pow", s, num(sema, e, 1 / p));
}

// F.normalize(input, p=2.0, dim=1, eps=1e-12, out=None): x / max(norm_p(x, dim), eps)
TType *ck_normalize(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *xt = get_tensor(sema, e, e->bargs[0], "input");
  double p, eps;
  int64_t dim = 1;
  int a;
  if (!xt || !num_arg(sema, e, 1, "p", "float", 2, &p) ||
      (barg(e, 2) && !get_int(sema, e, e->bargs[2], "dim", &dim)) || !num_arg(sema, e, 3, "eps", "float", 1e-12, &eps))
    return poison(sema);
  if (barg(e, 4)) {
    diag_error(sema->cx, e->bargs[4]->loc, "normalize(): out= is not supported: the result is returned");
    return poison(sema);
  }
  if (!wrap_dim(sema, barg(e, 2) ? e->bargs[2]->loc : call_loc(e), dim, xt->view.ndim, &a)) return poison(sema);
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "norm(): input dtype should be either floating point or complex. Got %s "
               "instead.", torch_name(xt->dtype));
    return poison(sema);
  }
  Ast *x = up(sema, e, e->bargs[0]);
  Ast *n = vnorm(sema, e, x, p, xt->view.ndim ? 1u << a : 0, true);
  Ast *y = dvd(sema, e, x, clamp_(sema, e, n, num(sema, e, eps), NULL));
  return become(sema, e, down(sema, e, y, xt->dtype));
}

// F.cosine_similarity(x1, x2, dim=1, eps=1e-8), PyTorch 1.13's formula: both expanded to
// the broadcast shape in their common (float) dtype, then
// sum(x1 / max(norm(x1), eps) * (x2 / max(norm(x2), eps)), dim)
TType *ck_cosine_similarity(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x1 = e->bargs[0], *x2 = e->bargs[1];
  TType *t1 = get_tensor(sema, e, x1, "x1"), *t2 = t1 ? get_tensor(sema, e, x2, "x2") : NULL;
  int64_t dim = 1;
  double eps;
  int a;
  if (!t2 || (barg(e, 2) && !get_int(sema, e, e->bargs[2], "dim", &dim)) ||
      !num_arg(sema, e, 3, "eps", "float", 1e-8, &eps))
    return poison(sema);
  TType *ts[2] = {t1, t2};
  DType ct = result_type(sema, ts, 2);
  if (!dtype_is_float(ct)) {
    diag_error(sema->cx, call_loc(e), "expected common dtype to be floating point, yet common dtype is %s",
               torch_name(ct));
    return poison(sema);
  }
  int nd = t1->view.ndim;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, t1->view.shape, sizeof(int64_t) * (size_t)nd);
  if (!broadcast(sema, call_loc(e), &nd, shape, t2->view.ndim, t2->view.shape)) return poison(sema);
  if (!wrap_dim(sema, barg(e, 2) ? e->bargs[2]->loc : call_loc(e), dim, nd, &a)) return poison(sema);
  DType cf = dtype_is_half(ct) ? DT_F32 : ct;
  Ast *args[2] = {NULL, part_ints(sema, e, nd, shape)};
  Ast *q[2];
  for (int i = 0; i < 2; i++) {
    args[0] = to_dtype(sema, e, e->bargs[i], cf);
    Ast *xe = part_call(sema, e, "expand", args, 2);
    Ast *n = clamp_(sema, e, vnorm(sema, e, xe, 2, nd ? 1u << a : 0, true), num(sema, e, eps), NULL);
    q[i] = dvd(sema, e, xe, n);
  }
  Ast *y = part_reduce(sema, e, "sum", mul(sema, e, q[0], q[1]), nd ? 1u << a : 0, false);
  return become(sema, e, down(sema, e, y, ct));
}

// F.pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False): norm_p(x1 - x2 + eps)
// over the last dim of the broadcast shape
TType *ck_pairwise_distance(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *t1 = get_tensor(sema, e, e->bargs[0], "x1"), *t2 = t1 ? get_tensor(sema, e, e->bargs[1], "x2") : NULL;
  double p, eps;
  bool keepdim = false;
  if (!t2 || !num_arg(sema, e, 2, "p", "float", 2, &p) || !num_arg(sema, e, 3, "eps", "float", 1e-6, &eps) ||
      (barg(e, 4) && !get_bool(sema, e, e->bargs[4], "keepdim", &keepdim)))
    return poison(sema);
  TType *ts[2] = {t1, t2};
  DType ct = result_type(sema, ts, 2);
  Ast *a = e->bargs[0], *b = e->bargs[1];
  if (dtype_is_half(ct)) a = to_dtype(sema, e, a, DT_F32), b = to_dtype(sema, e, b, DT_F32);
  Ast *diff = sub(sema, e, a, b);
  if (is_poison(diff->ty)) return poison(sema);
  diff = add(sema, e, diff, num(sema, e, eps));
  int nd = diff->ty->view.ndim;
  Ast *y = vnorm(sema, e, diff, p, nd ? 1u << (nd - 1) : 0, keepdim);
  return become(sema, e, down(sema, e, y, ct));
}

// ============================================================================
// embedding, one_hot, bilinear
// ============================================================================
// rows[index] for an index tensor of any shape: index_select of its flattened values,
// viewed as index.shape + [row size].
static Ast *take_rows(Sema *sema, const Ast *e, Ast *rows, Ast *index) {
  const View *iv = &index->ty->view;
  int64_t flat = -1, shape[TD_MAX_DIMS + 1];
  Ast *args[3] = {rows, part_int(sema, e, 0), reshape_(sema, e, index, 1, &flat)};
  Ast *sel = part_call(sema, e, "index_select", args, 3);
  memcpy(shape, iv->shape, sizeof(int64_t) * (size_t)iv->ndim);
  shape[iv->ndim] = rows->ty->view.shape[1];
  return reshape_(sema, e, sel, iv->ndim + 1, shape);
}

// How PyTorch's CUDA build names an index tensor of the wrong dtype.
static const char *cuda_type_name(Sema *sema, DType dt) {
  if (dt == DT_BOOL) return "CUDABoolType";
  if (dt == DT_BF16) return "CUDABFloat16Type";
  return arena_printf(&sema->cx->arena, "torch.cuda.%s", torch_tensor_name(dt));
}

// F.embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
// scale_grad_by_freq=False, sparse=False): weight's rows at input (padding_idx,
// scale_grad_by_freq and sparse change only the gradient); max_norm renormalizes rows of
// weight in place, which tdsl does not do.
TType *ck_embedding(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *ia = e->bargs[0], *wa = e->bargs[1];
  TType *it = get_tensor(sema, e, ia, "input"), *wt = it ? get_tensor(sema, e, wa, "weight") : NULL;
  int64_t pad;
  double norm_type;
  bool flag;
  if (!wt) return poison(sema);
  if (barg(e, 2)) {
    if (!get_int(sema, e, e->bargs[2], "padding_idx", &pad)) return poison(sema);
    int64_t rows = wt->view.ndim ? wt->view.shape[0] : 1;
    if (pad >= rows || pad < -rows) {
      diag_error(sema->cx, e->bargs[2]->loc, "Padding_idx must be within num_embeddings");
      return poison(sema);
    }
  }
  if (barg(e, 3)) {
    diag_error(sema->cx, e->bargs[3]->loc, "embedding(): max_norm is not supported: it renormalizes rows of weight in "
               "place");
    return poison(sema);
  }
  if (!num_arg(sema, e, 4, "norm_type", "float", 2, &norm_type) ||
      (barg(e, 5) && !get_bool(sema, e, e->bargs[5], "scale_grad_by_freq", &flag)) ||
      (barg(e, 6) && !get_bool(sema, e, e->bargs[6], "sparse", &flag)))
    return poison(sema);
  if (wt->view.ndim != 2) {
    diag_error(sema->cx, wa->loc, "'weight' must be 2-D");
    return poison(sema);
  }
  if (it->dtype != DT_I32 && it->dtype != DT_I64) {
    diag_error(sema->cx, ia->loc, "Expected tensor for argument #1 'indices' to have one of the following scalar "
               "types: Long, Int; but got %s instead (while checking arguments for embedding)",
               cuda_type_name(sema, it->dtype));
    return poison(sema);
  }
  if (!check_rank(sema, call_loc(e), it->view.ndim + 1)) return poison(sema);
  return become(sema, e, take_rows(sema, e, wa, ia));
}

// F.one_hot(tensor, num_classes=-1): (tensor.unsqueeze(-1) == arange(num_classes)).long(),
// one elementwise kernel the size of the result. PyTorch's CPU build checks the values
// (its CUDA build leaves it to a device assert); here a value outside [0, num_classes)
// gives a row of zeros. num_classes=-1 takes the count from the values, which are not
// known when compiling: refused.
TType *ck_one_hot(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *ta = e->bargs[0];
  TType *t = get_tensor(sema, e, ta, "tensor");
  int64_t n = -1;
  if (!t || (barg(e, 1) && !get_int(sema, e, e->bargs[1], "num_classes", &n))) return poison(sema);
  if (t->dtype != DT_I64) {
    diag_error(sema->cx, call_loc(e), "one_hot is only applicable to index tensor.");
    return poison(sema);
  }
  Loc nloc = barg(e, 1) ? e->bargs[1]->loc : call_loc(e);
  if (view_numel(t->view) == 0 && n <= 0) {
    diag_error(sema->cx, nloc, "Can not infer total number of classes from empty tensor.");
    return poison(sema);
  }
  if (n == -1) {
    diag_error(sema->cx, nloc, "one_hot(): num_classes=-1 takes the number of classes from the values, which are not "
               "known when compiling: pass num_classes");
    return poison(sema);
  }
  if (n <= 0 && view_numel(t->view) != 0) {
    diag_error(sema->cx, nloc, "Class values must be smaller than num_classes.");
    return poison(sema);
  }
  if (!check_rank(sema, call_loc(e), t->view.ndim + 1)) return poison(sema);
  Ast *uargs[2] = {ta, part_int(sema, e, -1)}, *rargs[1] = {part_int(sema, e, n)};
  Ast *eq = part_binary(sema, e, OP_EQ, "eq", part_call(sema, e, "unsqueeze", uargs, 2),
                        part_call(sema, e, "arange", rargs, 1));
  if (is_poison(eq->ty)) return poison(sema);
  return become(sema, e, to_dtype(sema, e, eq, DT_I64));
}

// F.bilinear(input1, input2, weight, bias=None): y[..., o] = sum_ij x1[..., i] W[o, i, j]
// x2[..., j] (+ bias[o]), built as one GEMM x1 @ W.permute(1, 0, 2).reshape(I, O * J),
// then the product with x2 summed over j.
TType *ck_bilinear(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x1 = e->bargs[0], *x2 = e->bargs[1], *w = e->bargs[2], *b = barg(e, 3);
  TType *t1 = get_tensor(sema, e, x1, "input1"), *t2 = t1 ? get_tensor(sema, e, x2, "input2") : NULL;
  TType *wt = t2 ? get_tensor(sema, e, w, "weight") : NULL;
  if (!wt || (b && !get_tensor(sema, e, b, "bias"))) return poison(sema);
  Loc loc = call_loc(e);
  int nd = t1->view.ndim;
  if (nd != t2->view.ndim) {
    diag_error(sema->cx, loc, "bilinear(): input dimensions do not match: got %d and %d", nd, t2->view.ndim);
    return poison(sema);
  }
  for (int i = 0; i < nd - 1; i++)
    if (t1->view.shape[i] != t2->view.shape[i]) {
      diag_error(sema->cx, loc, "bilinear(): input batch dimensions do not match at dim %d: got %" PRId64 " and %"
                 PRId64, i, t1->view.shape[i], t2->view.shape[i]);
      return poison(sema);
    }
  if (nd == 0) {
    diag_error(sema->cx, x1->loc, "Dimension specified as 0 but tensor has no dimensions");
    return poison(sema);
  }
  int a;
  if (!wrap_dim(sema, w->loc, 2, wt->view.ndim, &a)) return poison(sema);
  if (wt->view.ndim != 3) {
    diag_error(sema->cx, w->loc, "bilinear(): weight must be 3-D [out, in1, in2], got %d dims", wt->view.ndim);
    return poison(sema);
  }
  int64_t o = wt->view.shape[0], in1 = wt->view.shape[1], in2 = wt->view.shape[2];
  int64_t i1 = t1->view.shape[nd - 1], i2 = t2->view.shape[nd - 1];
  if (i1 != in1 || i2 != in2) {
    diag_error(sema->cx, loc, "bilinear(): input%d size does not match weight size: got %" PRId64 " but expected %"
               PRId64, i1 != in1 ? 1 : 2, i1 != in1 ? i1 : i2, i1 != in1 ? in1 : in2);
    return poison(sema);
  }
  if (b && b->ty->view.ndim == 0) {
    diag_error(sema->cx, b->loc, "Dimension specified as 0 but tensor has no dimensions");
    return poison(sema);
  }
  if (b && b->ty->view.shape[0] != o) {
    diag_error(sema->cx, loc, "bilinear(): bias size does not match weight size: got %" PRId64 " but expected %"
               PRId64, b->ty->view.shape[0], o);
    return poison(sema);
  }
  Ast *others[2] = {x2, w};
  for (int i = 0; i < 2; i++)
    if (others[i]->ty->dtype != t1->dtype) {
      diag_error(sema->cx, loc, "expected scalar type %s but found %s", torch_name(t1->dtype),
                 torch_name(others[i]->ty->dtype));
      return poison(sema);
    }
  if (!dtype_is_float(t1->dtype)) {
    diag_error(sema->cx, loc, "\"bmm_cuda\" not implemented for '%s'", torch_name(t1->dtype));
    return poison(sema);
  }
  int64_t perm[3] = {1, 0, 2}, wshape[2] = {in1, wrap_mul(o, in2)}, tshape[TD_MAX_DIMS];
  Ast *pargs[2] = {w, part_ints(sema, e, 3, perm)};
  Ast *wr = reshape_(sema, e, part_call(sema, e, "permute", pargs, 2), 2, wshape);
  Ast *margs[2] = {x1, wr};
  Ast *t = part_call(sema, e, "matmul", margs, 2);
  if (is_poison(t->ty)) return poison(sema);
  memcpy(tshape, t1->view.shape, sizeof(int64_t) * (size_t)(nd - 1));
  tshape[nd - 1] = o;
  tshape[nd] = in2;
  if (!check_rank(sema, loc, nd + 1)) return poison(sema);
  t = up(sema, e, reshape_(sema, e, t, nd + 1, tshape));
  Ast *uargs[2] = {up(sema, e, x2), part_int(sema, e, -2)};
  Ast *y = mul(sema, e, t, part_call(sema, e, "unsqueeze", uargs, 2));
  y = down(sema, e, part_reduce(sema, e, "sum", y, 1u << nd, false), t1->dtype);
  if (b) y = add(sema, e, y, b);
  return become(sema, e, y);
}

// ============================================================================
// scaled_dot_product_attention
// ============================================================================
// F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
// is_causal=False, scale=None) as PyTorch 2 defines it: softmax(q @ k^T * scale + bias) @ v,
// the bias -inf where a bool mask is false or above the diagonal when causal, or a float
// mask added. That composition (PyTorch's math path) is built first, to check: its
// diagnostics and its result's type are PyTorch's. The call then becomes one node,
// OP_SDPA, of query, key, value and the mask, each expanded to the result's batch dims
// (views), which ir/attn.c computes as one kernel; the parts are left unused.
TType *ck_sdpa(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *q = e->bargs[0], *k = e->bargs[1], *v = e->bargs[2], *mask = barg(e, 3), *pa = barg(e, 4), *ca = barg(e, 5),
      *sa = barg(e, 6);
  const TType *qt = q->ty, *kt = get_tensor(sema, e, k, "key"), *vt = kt ? get_tensor(sema, e, v, "value") : NULL;
  if (!vt || (mask && !get_tensor(sema, e, mask, "attn_mask"))) return poison(sema);
  if (qt->dtype != kt->dtype || qt->dtype != vt->dtype) {
    diag_error(sema->cx, call_loc(e), "Expected query, key, and value to have the same dtype, but got query.dtype: %s "
               "key.dtype: %s and value.dtype: %s instead.", torch_name(qt->dtype), torch_name(kt->dtype),
               torch_name(vt->dtype));
    return poison(sema);
  }
  if (qt->view.ndim < 2 || kt->view.ndim < 2 || vt->view.ndim < 2) {
    diag_error(sema->cx, call_loc(e), "scaled_dot_product_attention: query, key and value must have at least 2 "
               "dimensions");
    return poison(sema);
  }
  bool causal = false;
  if (ca && !get_bool(sema, e, ca, "is_causal", &causal)) return poison(sema);
  if (causal && mask) {
    diag_error(sema->cx, mask->loc, "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
               "is_causal=True");
    return poison(sema);
  }
  if (pa && (!is_scalar(pa->ty) || pa->ty->fval != 0)) {
    diag_error(sema->cx, pa->loc, "dropout_p must be 0: tdsl computes inference, where PyTorch's callers pass 0.0");
    return poison(sema);
  }
  if (sa && !is_scalar(sa->ty)) {
    diag_error(sema->cx, sa->loc, "scaled_dot_product_attention(): argument 'scale' must be float, not %s",
               py_type_name(sa->ty));
    return poison(sema);
  }
  int64_t E = qt->view.shape[qt->view.ndim - 1], L = qt->view.shape[qt->view.ndim - 2],
          S = kt->view.shape[kt->view.ndim - 2];
  double scale = sa ? sa->ty->fval : 1.0 / sqrt((double)E);
  Ast *kT = part_call(sema, e, "transpose", (Ast *[]){k, part_int(sema, e, -2), part_int(sema, e, -1)}, 3);
  Ast *s = part_call(sema, e, "matmul", (Ast *[]){q, kT}, 2);
  if (is_poison(s->ty)) return poison(sema);
  s = part_binary(sema, e, OP_MUL, "mul", s, part_float(sema, e, scale));
  Ast *neg_inf = part_float(sema, e, -INFINITY);
  if (causal) {
    s = part_call(sema, e, "where", (Ast *[]){part_triangle(sema, e, L, S, 0, true), s, neg_inf}, 3);
  } else if (mask && mask->ty->dtype == DT_BOOL) {
    s = part_call(sema, e, "where", (Ast *[]){mask, s, neg_inf}, 3);
  } else if (mask) {
    s = part_binary(sema, e, OP_ADD, "add", s, mask);
  }
  if (is_poison(s->ty)) return poison(sema);
  Ast *p = part_call(sema, e, "softmax", (Ast *[]){s, part_int(sema, e, -1)}, 2);
  const TType *rt = part_call(sema, e, "matmul", (Ast *[]){p, v}, 2)->ty;
  if (is_poison(rt)) return poison(sema);
  int nd = rt->view.ndim;
  TD_ASSERT(nd >= 2);
  Ast *ops[4] = {q, k, v, mask};
  int nops = mask ? 4 : 3;
  for (int i = 0; i < nops; i++) {  // each to the result's batch dims, its own last two
    const View *ov = &ops[i]->ty->view;
    int64_t shape[TD_MAX_DIMS];
    memcpy(shape, rt->view.shape, sizeof(int64_t) * (size_t)(nd - 2));
    bool m = i == 3;  // a mask broadcasts in its last dims too
    shape[nd - 2] = m ? L : ov->shape[ov->ndim - 2];
    shape[nd - 1] = m ? S : ov->shape[ov->ndim - 1];
    ops[i] = part_call(sema, e, "expand", (Ast *[]){ops[i], part_ints(sema, e, nd, shape)}, 2);
    if (is_poison(ops[i]->ty)) return poison(sema);
  }
  Ast *n = part(sema, e, "scaled_dot_product_attention");
  n->attr.scale = scale;
  n->attr.causal = causal;
  set_operands(sema, n, ops, nops);
  n->ty = ty_fresh(sema, rt->dtype, nd, rt->view.shape);
  return become(sema, e, n);
}
