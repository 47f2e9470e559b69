// frontend/sema_nn.c: the functions of torch.nn.functional that are no single node
// (layer_norm, linear, ...): each is built here from the nodes it is made of, as parts
// (checked ASTs of their own under the call's location) that fusion joins again. The
// part builders are shared with any checker that composes ops.
#include "frontend/sema_internal.h"

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
  if (is_scalar(nsa->ty)) {
    diag_error(sema->cx, nsa->loc, "layer_norm(): argument %s must be tuple of ints, not %s",
               arg_name(sema, e, "normalized_shape"), py_type_name(nsa->ty));
    return poison(sema);
  }
  if (!get_ints(sema, e, nsa, "normalized_shape", ns, &k)) return poison(sema);
  if (k == 0) {
    diag_error(sema->cx, nsa->loc, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
               "one element, but got normalized_shape = []");
    return poison(sema);
  }
  int nd = xt->view.ndim;
  bool fits = k <= nd;
  for (int i = 0; fits && i < k; i++) fits = xt->view.shape[nd - k + i] == ns[i];
  if (!fits) {
    const char *want = shape_str(sema, k, ns);
    diag_error(sema->cx, call_loc(e), "Given normalized_shape=%s, expected input with shape [*, %.*s], but got input "
               "of size%s", want, (int)strlen(want) - 2, want + 1, shape_str(sema, nd, xt->view.shape));
    return poison(sema);
  }
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

