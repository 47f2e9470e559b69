// frontend/sema_complex.c: complex tensors (c64, c128) in the op library. A complex
// tensor's type is its own (dtype c64/c128, shape and strides counted in complex
// elements, exactly PyTorch's); its graph value is the float view of its (real,
// imaginary) pairs (ir/ir.h's Value.cplx), so the ops PyTorch defines on complex tensors
// are built from float ops by ir/build_complex.c, and views act on the type as on any
// tensor. This file checks them with PyTorch 1.13's messages: view_as_real,
// view_as_complex, real/imag, polar, complex, conj, abs, angle, the elementwise functions
// (exp, log, sqrt, the trigonometric ones ...), + - * / ** == !=, matmul, dot, vdot, mv,
// sum/mean/prod, cumsum/cumprod (with a dtype=), cat/stack (real operands promoted),
// clone, z.view(dtype) of its parts' dtype, silu, tanhshrink, softsign, sinc, ldexp,
// normalize, dist, cov, corrcoef (composed of the complex ops here), creation and fills
// with a Python complex number, the views, gathers, scatters and index writes,
// conversions to and from real dtypes (to real: PyTorch's warning), Python's complex
// numbers (1j, complex(1, 2), folded as Python folds 1 + 2j); the ops that move, mask,
// pad or multiply values (roll, tril, masked_fill, pad, outer, einsum ...), checked by
// their own rows with the complex arguments typed as their parts and then run on the
// parts (on_parts: ComplexArgs' CX_PARTS); var, std, norm, any, all and the logical ops
// as PyTorch's real results. Every other op given a complex operand is refused here, with
// PyTorch's words where it has them.
// Invariant: no node of or over a complex dtype reaches the graph but the ones lowering
// turns into float pairs (lower.c's lower_complex_node: cat, stack, clone, copy, sum, mean,
// to, creation, the gathers index and index_select over the leading dims; a store of
// complex values through a view, an index_put or a scatter of complex values), or a
// builder of build_complex. A store's value is converted to its target's dtype here
// (complex_store_ok).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static bool is_complex(const TType *t) { return is_tensor(t) && dtype_is_complex(t->dtype); }

// The types an argument holds: itself, or a list's or tuple's elements; their count.
static int held(const Ast *a, const TType *const **ts) {
  if (!a || !a->ty) return 0;
  if (a->ty->kind == TY_LIST || a->ty->kind == TY_TUPLE) {
    *ts = (const TType *const *)a->ty->elems;
    return a->ty->nelem;
  }
  *ts = (const TType *const *)&a->ty;
  return 1;
}

// The first complex tensor of type t, or among its (nested) list's or tuple's elements.
static const TType *complex_in(const TType *t) {
  if (!t) return NULL;
  if (is_complex(t)) return t;
  for (int k = 0; (t->kind == TY_LIST || t->kind == TY_TUPLE) && k < t->nelem; k++) {
    const TType *c = complex_in(t->elems[k]);
    if (c) return c;
  }
  return NULL;
}

// The first complex tensor among call e's bound arguments (lists' elements included).
static const TType *complex_arg(const Ast *e) {
  for (int i = 0; i < e->nbargs; i++) {
    const TType *c = e->bargs[i] ? complex_in(e->bargs[i]->ty) : NULL;
    if (c) return c;
  }
  return NULL;
}

// A complex tensor among e's arguments, or a complex dtype (x.sum(dtype=torch.cfloat))
bool complex_operand(const Ast *e) {
  for (int i = 0; i < e->nbargs; i++)
    if (e->bargs[i] && e->bargs[i]->ty && e->bargs[i]->ty->kind == TY_DTYPE && dtype_is_complex(e->bargs[i]->ty->dtype))
      return true;
  return complex_arg(e) != NULL;
}

static TType *refuse(Sema *sema, const Ast *e, const char *name, DType dt) {
  diag_error(sema->cx, call_loc(e), "\"%s_cpu\" not implemented for '%s'", name, torch_name(dt));
  return poison(sema);
}

// Every tensor among e's operands of the one complex dtype dt (cat, stack, sum ...).
static bool all_complex(Sema *sema, const Ast *e, DType dt) {
  for (int i = 0; i < e->nbargs; i++) {
    const Ast *a = e->bargs[i];
    const TType *const *ts;
    int n = held(a, &ts);
    for (int k = 0; k < n; k++) {
      const TType *t = ts[k];
      if (is_tensor(t) && t->dtype != dt) {
        diag_error(sema->cx, a->loc, "expected scalar type %s but found %s: tdsl joins and reduces complex tensors "
                   "of one dtype (convert the others with torch.complex(x, torch.zeros_like(x)))",
                   torch_name(dt), torch_name(t->dtype));
        return false;
      }
    }
  }
  return true;
}

// ---- the calls the builders of ir/build_complex.c make ----
static TType *complex_built_args(Sema *sema, Ast *e, ComplexArgs a, Ast **ops, int n) {
  return built(sema, e, build_complex, KEEP(sema, a), ops, n);
}
static TType *complex_built(Sema *sema, Ast *e, ComplexOp op, Ast **ops, int n) {
  return complex_built_args(sema, e, (ComplexArgs){.op = op}, ops, n);
}

// x (a tensor or a number) as a tensor of complex dtype dt: a call of its own (x itself
// when it is one)
static Ast *as_complex(Sema *sema, Ast *x, DType dt) {
  if (is_complex(x->ty) && x->ty->dtype == dt && !x->ty->wrapped) return x;
  Ast *c = ast_new(sema->cx, AST_CALL, x->loc);
  c->name = "to";
  c->oploc = x->loc;
  c->ty = complex_built_args(sema, c, (ComplexArgs){.op = CX_FROM_REAL, .dtype = dt}, &x, 1);
  return c;
}
Ast *complex_cast(Sema *sema, Ast *x, DType dt) { return as_complex(sema, x, dt); }

// Python's complex number a (a number, 1j, or arithmetic of them folded): its parts
bool complex_const(const Ast *a, double *re, double *im) {
  const TType *t = a->ty;
  if (is_scalar(t) && t->kind == TY_SCALAR && t->dtype != DT_COUNT) {
    *re = t->dtype == DT_F64 ? t->fval : (double)t->ival, *im = 0;
    return true;
  }
  if (!is_complex(t) || !a->bi || a->bi->kind != BK_BUILD || a->bi->build != build_complex) return false;
  const ComplexArgs *ca = a->args;
  if (ca->op != CX_LITERAL) return false;
  *re = ca->re, *im = ca->im;
  return true;
}

// a tensor of shape (n, shape) and complex dtype dt filled with re + im j
TType *complex_full(Sema *sema, Ast *e, DType dt, int n, const int64_t *shape, double re, double im) {
  ComplexArgs ca = {.op = CX_FULL, .dtype = dt, .re = re, .im = im, .ndim = n};
  memcpy(ca.shape, shape, sizeof(int64_t) * (size_t)n);
  return complex_built_args(sema, e, ca, NULL, 0);
}

// z.float(), z.to(torch.int32), z.type_as(x), z.bool() ... of a complex z, which the row's
// checker typed as a real tensor: PyTorch 1.13's conversion, the real part (bool: the real
// part's != 0, as PyTorch 1.13 casts), with its UserWarning as a compile-time warning
static TType *to_real(Sema *sema, Ast *e, const TType *t) {
  Ast *x = e->bargs[0];
  diag_warning(sema->cx, call_loc(e), "Casting complex values to real discards the imaginary part (take .real to "
                 "say so, or abs())");
  return complex_built_args(sema, e, (ComplexArgs){.op = CX_TO_REAL, .dtype = t->dtype}, &x, 1);
}

// prod(input, dim=None, keepdim=False, *, dtype=None), cumsum(input, dim, *, dtype=None),
// cumprod(...) of a complex input: the dims checked, dtype (when given) the input's own
static TType *complex_reduce(Sema *sema, Ast *e, Op op) {
  Ast *x = e->bargs[0];
  const TType *t = x->ty;
  int nd = t->view.ndim, a = -1, di = op == OP_PROD ? 3 : 2;
  int64_t dim;
  bool keepdim = false;
  Ast *da = barg(e, 1);
  if (op != OP_PROD || da) {
    if (!get_int(sema, e, e->bargs[1], "dim", &dim) || !wrap_dim(sema, e->bargs[1]->loc, dim, nd, &a))
      return poison(sema);
    if (nd == 0) a = -1;  // a 0-d input: its one element
  }
  if (op == OP_PROD && barg(e, 2) && !get_bool(sema, e, e->bargs[2], "keepdim", &keepdim)) return poison(sema);
  DType dt = t->dtype;
  if (barg(e, di) && !get_dtype(sema, e, e->bargs[di], &dt)) return poison(sema);
  if (dt != t->dtype) {
    diag_error(sema->cx, barg(e, di)->loc, "%s() of a %s tensor with dtype=%s is not supported: tdsl computes it "
               "in the input's dtype (convert the input first)", op_name(op), dtype_name(t->dtype), dtype_name(dt));
    return poison(sema);
  }
  if (op != OP_PROD && a < 0) {  // a 0-d scan: the element itself
    return complex_built(sema, e, CX_SAME, &x, 1);
  }
  ComplexArgs ca = {.op = op == OP_PROD ? CX_PROD : op == OP_CUMSUM ? CX_CUMSUM : CX_CUMPROD, .dim = a,
                    .keepdim = keepdim};
  return complex_built_args(sema, e, ca, &x, 1);
}

// The rows PyTorch computes on complex tensors that tdsl runs on the parts (ComplexArgs'
// CX_PARTS): linear in their values jointly (moves, masks, scatters of views, pads:
// fn(re) + i fn(im)), or products, linear in each operand alone (outer, kron, einsum ...).
static const char *const linear_rows[] = {
    "roll", "tril", "triu", "diag", "diagflat", "diag_embed", "trace", "take_along_dim", "masked_fill", "pad",
    "repeat", "tile", "diff", "repeat_interleave", "take", "select_scatter", "slice_scatter", "diagonal_scatter",
    "masked_scatter", "narrow_copy", "lerp"};
static const char *const product_rows[] = {"outer", "ger", "kron", "inner", "tensordot", "einsum", "cross"};

// the products PyTorch computes only of operands of one dtype (outer and kron promote)
static const char *const one_dtype_rows[] = {"inner", "tensordot", "einsum", "cross"};

// the dtype's C++ name in PyTorch's messages (lerp's)
static const char *c10_name(DType dt) {
  switch (dt) {
  case DT_C64: return "c10::complex<float>";
  case DT_C128: return "c10::complex<double>";
  case DT_F64: return "double";
  case DT_F32: return "float";
  case DT_F16: return "c10::Half";
  default: return torch_name(dt);
  }
}

// e's tensor operands (a list's items too) of one dtype, or PyTorch's message naming the
// first operand's dtype and the first other one
static bool one_dtype(Sema *sema, const Ast *e) {
  const TType *first = NULL;
  for (int i = 0; i < e->nbargs; i++) {
    const TType *const *ts;
    int n = held(e->bargs[i], &ts);
    for (int k = 0; k < n; k++) {
      if (!is_tensor(ts[k]) || ts[k]->wrapped) continue;  // a Python number promotes
      if (!first) first = ts[k];
      else if (ts[k]->dtype != first->dtype) {
        diag_error(sema->cx, call_loc(e), "expected scalar type %s but found %s", torch_name(first->dtype),
                   torch_name(ts[k]->dtype));
        return false;
      }
    }
  }
  return true;
}

static bool listed(const char *name, const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(name, names[i])) return true;
  return false;
}

// z != 0 of a complex z (what PyTorch's logical ops, any, all and count_nonzero test), a
// call of its own; a itself when it is not complex
static Ast *nonzero(Sema *sema, Ast *a) {
  if (!is_complex(a->ty)) return a;
  Ast *c = ast_new(sema->cx, AST_CALL, a->loc);
  c->name = "ne";
  c->oploc = a->loc;
  Ast *xs[2] = {a, part_int(sema, c, 0)};
  c->ty = complex_built(sema, c, CX_NE, xs, 2);
  return c;
}

typedef struct Retyped {
  int n;
  bool full;  // more than 64 to retype: the call is refused
  Ast *ast[64];
  const TType *ty[64];
} Retyped;

// a complex argument (or a list's or tuple's complex item) typed as its parts, its type kept in r
static void retype(Sema *sema, Retyped *r, Ast *a) {
  if (!a || !a->ty) return;
  if (r->n == 64) {
    r->full = true;
    return;
  }
  if ((a->kind == AST_LIST || a->kind == AST_TUPLE) && (a->ty->kind == TY_LIST || a->ty->kind == TY_TUPLE)) {
    for (int i = 0; i < a->list.len; i++) retype(sema, r, a->list.data[i]);
    TType *l = arena_alloc(&sema->cx->arena, sizeof *l);
    *l = *a->ty;
    l->elems = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(l->nelem ? l->nelem : 1));
    for (int i = 0; i < l->nelem; i++) l->elems[i] = i < a->list.len ? a->list.data[i]->ty : a->ty->elems[i];
    r->ast[r->n] = a, r->ty[r->n++] = a->ty;
    a->ty = l;
    return;
  }
  if (!is_complex(a->ty)) return;
  TType *p = arena_alloc(&sema->cx->arena, sizeof *p);
  *p = *a->ty;
  p->dtype = dtype_complex_part(a->ty->dtype);
  r->ast[r->n] = a, r->ty[r->n++] = a->ty;
  a->ty = p;
}

// e checked by its row with its complex arguments typed as their parts (the row's checks
// and its builder's dry run see floats, of the parts' dtype), then run on the parts of
// its complex operands and of its real values (whose imaginary parts are 0); an index or
// a mask is taken as it is. The float result of the parts is the complex result of their
// precision (sum_parts: var and std, a real result).
static TType *on_parts(Sema *sema, Ast *e, const BuiltinDef *d, bool product, bool sum_parts) {
  Retyped r = {0};
  for (int i = 0; i < e->nbargs; i++) retype(sema, &r, e->bargs[i]);
  TType *t = r.full ? NULL : d->check(sema, e, d);
  for (int i = r.n - 1; i >= 0; i--) r.ast[i]->ty = (TType *)r.ty[i];
  if (!t) {
    diag_error(sema->cx, call_loc(e), "%s() of more than 64 complex tensors is not supported by tdsl", e->bi->name);
    return poison(sema);
  }
  if (is_poison(t)) return t;
  if (t->kind != TY_TENSOR || !dtype_is_float(t->dtype) || t->dtype == DT_F16 || t->dtype == DT_BF16 ||
      e->noperands > 16 || (e->bi->kind != BK_BUILD && e->bi->kind != BK_NODE)) {
    diag_error(sema->cx, call_loc(e), "%s() of a complex tensor is not supported by tdsl here: apply it to z.real and "
               "z.imag and join the results with torch.complex(re, im)", e->bi->name);
    return poison(sema);
  }
  ComplexArgs ca = {.op = CX_PARTS, .dtype = t->dtype, .multilinear = product, .sum_parts = sum_parts};
  if (e->bi->kind == BK_BUILD) {
    ca.fn = e->bi->build;
    ca.fargs = e->args;
    if (ca.fn == build_pad) {  // the fill value is real: the imaginary parts are padded with 0
      PadArgs pa = *(const PadArgs *)e->args;
      pa.fill = 0, pa.ifill = 0;
      ca.fargs_im = KEEP(sema, pa);
    }
  } else {
    ca.node = e->bi->op == OP_STD && sum_parts ? OP_VAR : e->bi->op;  // std: the root of the parts' variances' sum
    ca.root = e->bi->op == OP_STD && sum_parts;
    ca.attr = e->attr;
    ca.ndim = t->view.ndim;
    memcpy(ca.shape, t->view.shape, sizeof(int64_t) * (size_t)t->view.ndim);
  }
  for (int i = 0; i < e->noperands; i++) {
    const Ast *o = e->operands[i];
    const TType *ot = o->ty;
    bool value = is_scalar(ot) || (is_tensor(ot) && (dtype_is_float(ot->dtype) || is_complex(ot)));
    if (value) ca.parts |= 1u << i;
  }
  Builtin *bi = arena_alloc(&sema->cx->arena, sizeof *bi);
  *bi = *e->bi;
  bi->kind = BK_BUILD;
  bi->build = build_complex;
  e->bi = bi;
  e->args = KEEP(sema, ca);
  return ty_fresh(sema, sum_parts ? t->dtype : dtype_complex_of(t->dtype), t->view.ndim, t->view.shape);
}

// Python's nested lists of numbers, complex ones among them: each level's length, the
// parts in row-major order
typedef struct Literal {
  int ndim;
  bool leaf;  // a number seen: ndim is fixed
  int64_t shape[TD_MAX_DIMS];
  VEC(double) re, im;
} Literal;

static bool literal_walk(Sema *sema, Literal *l, const Ast *a, int level) {
  double re, im;
  if (a->kind == AST_LIST || a->kind == AST_TUPLE) {
    if (!l->leaf && level == l->ndim && level < TD_MAX_DIMS) l->shape[l->ndim++] = a->list.len;
    else if (level >= l->ndim || l->shape[level] != a->list.len) return false;
    for (int i = 0; i < a->list.len; i++)
      if (!literal_walk(sema, l, a->list.data[i], level + 1)) return false;
    return true;
  }
  if (!l->leaf) l->leaf = true;
  if (level != l->ndim || !complex_const(a, &re, &im)) return false;
  vec_push(&sema->cx->arena, &l->re, re);
  vec_push(&sema->cx->arena, &l->im, im);
  return true;
}

// torch.tensor(data, dtype=None) (as_tensor, scalar_tensor) of Python's complex numbers:
// complex64 unless dtype= says otherwise
static TType *complex_tensor(Sema *sema, Ast *e) {
  Literal l = {0};
  Ast *da = e->bargs[0], *dta = barg(e, 1);
  DType dt = DT_C64;
  if (dta && !get_dtype(sema, e, dta, &dt)) return poison(sema);
  if (!literal_walk(sema, &l, da, 0)) {
    diag_error(sema->cx, da->loc, "%s() of complex values is supported of Python numbers and nested lists of them "
               "in tdsl (torch.complex(re, im) joins tensors)", e->bi->name);
    return poison(sema);
  }
  if (!dtype_is_complex(dt)) {
    diag_error(sema->cx, da->loc, "value cannot be converted to type %s without overflow", c10_name(dt));
    return poison(sema);
  }
  int64_t n = l.re.len;
  DType *types = arena_alloc(&sema->cx->arena, sizeof(DType) * (size_t)(n ? n : 1));
  int64_t *ints = arena_alloc(&sema->cx->arena, sizeof(int64_t) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) types[i] = DT_F64;
  CreateArgs re = {.ndim = l.ndim, .n = n, .dtype = types, .f = l.re.data, .i = ints, .cast = dtype_complex_part(dt)};
  memcpy(re.shape, l.shape, sizeof(int64_t) * (size_t)l.ndim);
  CreateArgs im = re;
  im.f = l.im.data;
  ComplexArgs ca = {.op = CX_TENSOR, .dtype = dt, .fargs = KEEP(sema, re), .fargs_im = KEEP(sema, im)};
  return complex_built_args(sema, e, ca, NULL, 0);
}

// a call node at e's place typed as complex a OP b (complex_binary)
static Ast *cx_binary(Sema *sema, const Ast *e, Op op, Ast *a, Ast *b) {
  Ast *c = ast_new(sema->cx, AST_CALL, e->loc);
  c->name = op_name(op);
  c->oploc = e->oploc;
  c->ty = complex_binary(sema, c, op, a, b, call_loc(e));
  return c;
}

// linear(input, weight, bias=None), addmm, addmv, addr, baddbmm (input, a, b, *, beta=1,
// alpha=1) of complex tensors of one dtype: beta input + alpha (a @ b), composed of the
// complex matmul (addr: the outer product a[:, None] * b) and arithmetic; beta = 0 drops
// input, as PyTorch's
static TType *complex_product_sum(Sema *sema, Ast *e, const char *name) {
  bool lin = !strcmp(name, "linear");
  if (!one_dtype(sema, e)) return poison(sema);
  Ast *in = lin ? barg(e, 2) : e->bargs[0], *a = e->bargs[lin ? 0 : 1], *b = barg(e, lin ? 1 : 2);
  Ast *beta = lin ? NULL : barg(e, 3), *alpha = lin ? NULL : barg(e, 4);
  if (!b || !is_tensor(a->ty) || !is_tensor(b->ty) || (in && !is_tensor(in->ty))) {
    diag_error(sema->cx, call_loc(e), "%s() of complex tensors takes tensors in tdsl", name);
    return poison(sema);
  }
  const View *av = &a->ty->view, *bv = &b->ty->view;
  int want_a = !strcmp(name, "baddbmm") ? 3 : !strcmp(name, "addr") ? 1 : lin ? -1 : 2;
  int want_b = !strcmp(name, "baddbmm") ? 3 : !strcmp(name, "addr") || !strcmp(name, "addmv") ? 1 : lin ? -1 : 2;
  if ((want_a >= 0 && av->ndim != want_a) || (want_b >= 0 && bv->ndim != want_b) || (lin && bv->ndim > 2)) {
    diag_error(sema->cx, call_loc(e), "%s() of tensors of %d and %d dims is not supported", name, av->ndim, bv->ndim);
    return poison(sema);
  }
  Ast *p = ast_new(sema->cx, AST_CALL, e->loc);
  p->name = "matmul";
  p->oploc = e->oploc;
  if (!strcmp(name, "addr")) {  // a[:, None] * b[None, :]
    Ast *ac = view_ast(sema, e, a, view_unsqueeze(a->ty->view, 1)), *bc = view_ast(sema, e, b, view_unsqueeze(b->ty->view, 0));
    p = cx_binary(sema, e, OP_MUL, ac, bc);
  } else {
    Ast *bt = lin && bv->ndim == 2 ? view_ast(sema, e, b, view_transpose(b->ty->view, 0, 1)) : b;
    p->ty = complex_matmul(sema, p, a, bt, call_loc(e));
  }
  if (is_poison(p->ty)) return poison(sema);
  double re, im;
  if (alpha && !(complex_const(alpha, &re, &im) && re == 1 && im == 0)) p = cx_binary(sema, e, OP_MUL, alpha, p);
  if (is_poison(p->ty)) return poison(sema);
  if (!in || (beta && complex_const(beta, &re, &im) && re == 0 && im == 0)) {  // p itself
    Ast *xs[1] = {p};
    return complex_built(sema, e, CX_SAME, xs, 1);
  }
  if (beta && !(complex_const(beta, &re, &im) && re == 1 && im == 0)) in = cx_binary(sema, e, OP_MUL, beta, in);
  if (is_poison(in->ty)) return poison(sema);
  return complex_binary(sema, e, OP_ADD, in, p, call_loc(e));
}

// a call node at e's place of complex op `op` over xs
static Ast *cx_node(Sema *sema, const Ast *e, ComplexOp op, Ast **xs, int n) {
  Ast *c = ast_new(sema->cx, AST_CALL, e->loc);
  c->name = "complex";
  c->oploc = e->oploc;
  c->ty = complex_built(sema, c, op, xs, n);
  return c;
}

// isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) of complex tensors, as
// PyTorch computes it: input == other, or |input - other| finite and <= atol + rtol |other|;
// with equal_nan, both nan too
static TType *complex_isclose(Sema *sema, Ast *e) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  double rtol = 1e-5, atol = 1e-8;
  bool eqnan = false;
  if ((barg(e, 2) && !get_float(sema, e, e->bargs[2], "rtol", &rtol)) ||
      (barg(e, 3) && !get_float(sema, e, e->bargs[3], "atol", &atol)) ||
      (barg(e, 4) && !get_bool(sema, e, e->bargs[4], "equal_nan", &eqnan)) || !get_tensor(sema, e, b, "other"))
    return poison(sema);
  if (a->ty->dtype != b->ty->dtype) {
    diag_error(sema->cx, call_loc(e), "%s did not match %s", torch_name(a->ty->dtype), torch_name(b->ty->dtype));
    return poison(sema);
  }
  Ast *d = cx_binary(sema, e, OP_SUB, a, b);
  if (is_poison(d->ty)) return poison(sema);
  Ast *ad = cx_node(sema, e, CX_ABS, &d, 1), *ab = cx_node(sema, e, CX_ABS, &b, 1);
  Ast *bound = node_binary(sema, e, OP_ADD, node_binary(sema, e, OP_MUL, ab, part_float(sema, e, rtol)),
                           part_float(sema, e, atol));
  Ast *near = node_binary(sema, e, OP_LOGICAL_AND, node_binary(sema, e, OP_LE, ad, bound),
                          node_binary(sema, e, OP_LT, ad, part_float(sema, e, INFINITY)));
  Ast *r = node_binary(sema, e, OP_LOGICAL_OR, cx_binary(sema, e, OP_EQ, a, b), near);
  if (eqnan) {
    Ast *na = cx_node(sema, e, CX_ISNAN, &a, 1), *nb = cx_node(sema, e, CX_ISNAN, &b, 1);
    r = node_binary(sema, e, OP_LOGICAL_OR, r, node_binary(sema, e, OP_LOGICAL_AND, na, nb));
  }
  if (is_poison(r->ty)) return poison(sema);
  return complex_built(sema, e, CX_SAME, &r, 1);
}

// scatter, scatter_add, scatter_reduce (and their in-place forms) of a complex target: the
// pairs written or summed (ir/build.c's store gives the index the pair dim), a number's
// value as a complex tensor of the index's shape; the products and extremes refused.
static TType *complex_scatter(Sema *sema, Ast *e, const BuiltinDef *d, DType dt) {
  Ast *r = d->aux == OP_SUM ? barg(e, 4) : d->aux == OP_WHERE ? barg(e, 5) : NULL;
  if (r && r->ty->kind == TY_STR) {
    const char *rs = r->ty->module;
    if (!strcmp(rs, "amax") || !strcmp(rs, "amin")) {
      diag_error(sema->cx, r->loc, "\"scatter_gather_tensor_cpu_reduce_%s\" not implemented for '%s'", rs,
                 torch_name(dt));
      return poison(sema);
    }
    if (strcmp(rs, "sum") && strcmp(rs, "add")) {
      diag_error(sema->cx, r->loc, "%s() with reduce='%s' of a complex tensor is not supported by tdsl: reduce='sum' "
                 "and the writes are (a product of complex numbers is not one of their parts)", e->bi->name, rs);
      return poison(sema);
    }
  }
  int si = barg(e, 3) || d->aux != OP_WHERE ? 3 : 4;
  Ast *s = barg(e, si), *ia = barg(e, 2);
  double re, im;
  if (s && ia && is_tensor(ia->ty) && complex_const(s, &re, &im)) {
    Ast *f = ast_new(sema->cx, AST_CALL, s->loc);
    f->name = "full";
    f->oploc = s->loc;
    f->ty = complex_full(sema, f, dt, ia->ty->view.ndim, ia->ty->view.shape, re, im);
    e->bargs[si] = f;
  }
  return NULL;
}

// z.view(dtype) of a complex tensor z: itself (its own dtype), or its parts' dtype: the
// last dim doubled, view_as_real(z) with its last two dims merged (PyTorch's rule for a
// smaller element: z.stride(-1) is 1). Other dtypes would reinterpret its bits: refused.
static TType *complex_view_dtype(Sema *sema, Ast *e, DType rd) {
  Ast *x = e->bargs[0];
  const View *xv = &x->ty->view;
  DType dt = x->ty->dtype, pt = dtype_complex_part(dt);
  if (rd == dt) return complex_built(sema, e, CX_SAME, &x, 1);
  if (rd != pt) {
    diag_error(sema->cx, call_loc(e), "view(%s) of a %s tensor reinterprets its bits: tdsl views a complex tensor only "
               "as its parts' dtype (%s), as view_as_real does", torch_name(rd), torch_name(dt), torch_name(pt));
    return poison(sema);
  }
  if (xv->ndim == 0 || xv->strides[xv->ndim - 1] != 1) {
    if (xv->ndim == 0)
      diag_error(sema->cx, call_loc(e), "self.dim() cannot be 0 to view %s as %s (different element sizes)",
                 torch_name(dt), torch_name(pt));
    else
      diag_error(sema->cx, call_loc(e), "self.stride(-1) must be 1 to view %s as %s (different element sizes), but "
                 "got %" PRId64, torch_name(dt), torch_name(pt), xv->strides[xv->ndim - 1]);
    return poison(sema);
  }
  Ast *ar = ast_new(sema->cx, AST_CALL, x->loc);
  ar->name = "view_as_real";
  ar->oploc = x->loc;
  ar->ty = complex_built(sema, ar, CX_AS_REAL, &x, 1);
  if (is_poison(ar->ty)) return ar->ty;
  View v = ar->ty->view;  // (..., n, 2): (..., 2 n) of stride 1
  v.ndim--;
  v.shape[v.ndim - 1] *= 2;
  v.strides[v.ndim - 1] = 1;
  Ast *r = view_ast(sema, e, ar, v);
  return built(sema, e, build_complex, KEEP(sema, ((ComplexArgs){.op = CX_SAME})), &r, 1);
}

// cov of complex z (the "cov" row's arguments; weights refused): its expression, NULL after
// the message
static Ast *cov_of(Sema *sema, Ast *e) {
  Ast *z = e->bargs[0];
  DType dt = z->ty->dtype;
  int64_t corr = 1;
  if (barg(e, 1) && !get_int(sema, e, e->bargs[1], "correction", &corr)) return NULL;
  if (barg(e, 2) || barg(e, 3)) {
    diag_error(sema->cx, (barg(e, 2) ? e->bargs[2] : e->bargs[3])->loc, "cov() of a complex tensor with fweights or "
               "aweights is not supported by tdsl: apply them to the centered observations");
    return NULL;
  }
  int nd = z->ty->view.ndim;
  if (nd > 2) {
    diag_error(sema->cx, call_loc(e), "cov(): expected input to have two or fewer dimensions but got an input with "
               "%d dimensions", nd);
    return NULL;
  }
  Ast *m = nd == 2 ? z : view_ast(sema, e, z, nd == 1 ? view_unsqueeze(z->ty->view, 0)
                                                   : view_unsqueeze(view_unsqueeze(z->ty->view, 0), 0));
  int64_t n = m->ty->view.shape[1], one[2] = {n, 1};
  Ast *f = ast_new(sema->cx, AST_CALL, e->loc);
  f->name = "full";
  f->oploc = e->oploc;
  f->ty = complex_full(sema, f, dt, 2, one, n ? 1.0 / (double)n : NAN, 0);
  Ast *mf[2] = {m, f};
  Ast *zc = cx_binary(sema, e, OP_SUB, m, cx_node(sema, e, CX_MATMUL, mf, 2));
  if (is_poison(zc->ty)) return NULL;
  Ast *cj = cx_node(sema, e, CX_CONJ, &zc, 1);
  Ast *pr[2] = {zc, view_ast(sema, e, cj, view_transpose(cj->ty->view, 0, 1))};
  double k = (double)n - (double)corr;
  Ast *c = cx_binary(sema, e, OP_DIV, cx_node(sema, e, CX_MATMUL, pr, 2), part_float(sema, e, k > 0 ? k : 0));
  if (is_poison(c->ty)) return NULL;
  if (nd < 2) c = view_ast(sema, e, c, view_select(view_select(c->ty->view, 0, 0), 0, 0));
  return c;
}

// x in [-1, 1] (NaN kept)
static Ast *clip1(Sema *sema, const Ast *e, Ast *x) {
  return node_binary(sema, e, OP_MAXIMUM, node_binary(sema, e, OP_MINIMUM, x, part_float(sema, e, 1)),
                     part_float(sema, e, -1));
}

// cov (corr false) or corrcoef of complex z, PyTorch's: c / sqrt(re diag c) on each side,
// its parts clipped to [-1, 1] (a 0-d c: c / c)
static TType *complex_cov(Sema *sema, Ast *e, bool corr) {
  Ast *c = cov_of(sema, e);
  if (!c) return poison(sema);
  if (corr && c->ty->view.ndim == 0) {
    c = cx_binary(sema, e, OP_DIV, c, c);
  } else if (corr) {
    Ast *dg = view_ast(sema, e, c, view_diagonal(c->ty->view, 0, 0, 1));
    Ast *sd = node_binary(sema, e, OP_POW, cx_node(sema, e, CX_REAL, &dg, 1), part_float(sema, e, 0.5));
    c = cx_binary(sema, e, OP_DIV, c, view_ast(sema, e, sd, view_unsqueeze(sd->ty->view, 1)));
    c = cx_binary(sema, e, OP_DIV, c, view_ast(sema, e, sd, view_unsqueeze(sd->ty->view, 0)));
    Ast *ri[2] = {clip1(sema, e, cx_node(sema, e, CX_REAL, &c, 1)), clip1(sema, e, cx_node(sema, e, CX_IMAG, &c, 1))};
    c = cx_node(sema, e, CX_MAKE, ri, 2);
  }
  if (is_poison(c->ty)) return poison(sema);
  return built(sema, e, build_complex, KEEP(sema, ((ComplexArgs){.op = CX_SAME})), &c, 1);
}

// A row's call with a complex operand: NULL when the row's own checker takes it (views,
// joins, reductions, and the ops whose node checkers below take complex operands); else
// the complex op's type, or PyTorch's refusal.
TType *complex_builtin(Sema *sema, Ast *e, const BuiltinDef *d) {
  const char *name = d->b.name;
  if (d->check == ck_complex) return NULL;
  // sum, mean, prod, cumsum, cumprod with a dtype=: the input converted first (a complex
  // dtype), or PyTorch's real result of a complex input refused
  bool red = d->b.kind == BK_NODE && (d->b.op == OP_SUM || d->b.op == OP_MEAN || d->b.op == OP_PROD ||
                                      d->b.op == OP_CUMSUM || d->b.op == OP_CUMPROD);
  int di = d->b.op == OP_CUMSUM || d->b.op == OP_CUMPROD ? 2 : 3;
  if (red && barg(e, di) && is_tensor(e->bargs[0]->ty)) {
    DType rd;
    if (!get_dtype(sema, e, e->bargs[di], &rd)) return poison(sema);
    if (dtype_is_complex(rd)) {
      e->bargs[0] = as_complex(sema, e->bargs[0], rd);
      e->bargs[di] = NULL;
      if (is_poison(e->bargs[0]->ty)) return poison(sema);
    } else if (is_complex(e->bargs[0]->ty)) {
      diag_error(sema->cx, e->bargs[di]->loc, "%s() of a %s tensor with dtype=%s is not supported by tdsl: take .real "
                 "(or abs()) first", name, torch_name(e->bargs[0]->ty->dtype), torch_name(rd));
      return poison(sema);
    }
  }
  if (!complex_arg(e)) return NULL;  // a complex dtype= of a creation or a conversion: lowering's (x, 0)
  DType dt = complex_arg(e)->dtype;
  if (d->check == ck_cast || d->check == ck_to || d->check == ck_type || d->check == ck_view_alias) {
    if (!is_complex(e->bargs[0]->ty)) return NULL;  // a real tensor made complex: (x, 0) (lower.c)
    TType *t = d->check(sema, e, d);
    return is_tensor(t) && !is_complex(t) && t->kind == TY_TENSOR ? to_real(sema, e, t) : t;
  }
  if (d->b.kind == BK_BUILD && d->b.build == build_float_test && is_complex(e->bargs[0]->ty)) {
    Ast *x = e->bargs[0];
    if (d->variant == TEST_NAN) return complex_built(sema, e, CX_ISNAN, &x, 1);
    if (d->variant == TEST_INF) return complex_built(sema, e, CX_ISINF, &x, 1);
    if (d->variant == TEST_FINITE) return complex_built(sema, e, CX_ISFINITE, &x, 1);
    diag_error(sema->cx, call_loc(e), "%s does not support complex inputs.", name);
    return poison(sema);
  }
  if (d->b.kind == BK_NODE && (d->b.op == OP_PROD || d->b.op == OP_CUMSUM || d->b.op == OP_CUMPROD) &&
      is_complex(e->bargs[0]->ty))
    return complex_reduce(sema, e, d->b.op);
  if (!strcmp(name, "view")) {
    if ((!barg(e, 1) || barg(e, 1)->ty->kind != TY_DTYPE) &&
        !(barg(e, 1) && barg(e, 1)->ty->kind == TY_LIST && barg(e, 1)->ty->nelem == 1 &&
          barg(e, 1)->ty->elems[0]->kind == TY_DTYPE))
      return NULL;  // x.view(shape)
    return complex_view_dtype(sema, e, barg(e, 1)->ty->kind == TY_DTYPE ? barg(e, 1)->ty->dtype
                                                                          : barg(e, 1)->ty->elems[0]->dtype);
  }
  if (d->check == ck_real) {
    Ast *x = e->bargs[0];
    if (d->variant == 0) return complex_built(sema, e, CX_REAL, &x, 1);
    if (d->variant == 2) return complex_built(sema, e, CX_ANGLE, &x, 1);
    return complex_built(sema, e, CX_ISREAL, &x, 1);
  }
  if (d->b.kind == BK_VIEW) return NULL;
  if (listed(name, one_dtype_rows, sizeof one_dtype_rows / sizeof *one_dtype_rows) && !one_dtype(sema, e))
    return poison(sema);
  if (!strcmp(name, "lerp") && is_tensor(e->bargs[1]->ty) && e->bargs[1]->ty->dtype != e->bargs[0]->ty->dtype) {
    DType a = e->bargs[0]->ty->dtype, b = e->bargs[1]->ty->dtype;
    diag_error(sema->cx, e->bargs[1]->loc, "expected dtype %s for `end` but got dtype %s", c10_name(a), c10_name(b));
    return poison(sema);
  }
  if (!strcmp(name, "lerp") && e->nbargs >= 3) {  // a weight tensor of the input's dtype, a number it holds
    const TType *a = e->bargs[0]->ty, *w = e->bargs[2]->ty;
    if (is_tensor(w) && !w->wrapped && w->dtype != a->dtype) {
      diag_error(sema->cx, e->bargs[2]->loc, "expected dtype %s for `weight` but got dtype %s", c10_name(a->dtype),
                 c10_name(w->dtype));
      return poison(sema);
    }
    if (is_complex(w) && w->wrapped && !is_complex(a)) {
      diag_error(sema->cx, e->bargs[2]->loc, "value cannot be converted to type %s without overflow",
                 c10_name(a->dtype));
      return poison(sema);
    }
  }
  if (!strcmp(name, "lerp") && e->nbargs >= 3 && is_complex(e->bargs[2]->ty)) {  // input + weight * (end - input)
    Ast *a = e->bargs[0], *w = e->bargs[2], *dif = node_binary(sema, e, OP_SUB, e->bargs[1], a);
    if (is_poison(dif->ty)) return poison(sema);
    Ast *m = node_binary(sema, e, OP_MUL, w, dif);
    if (is_poison(m->ty)) return poison(sema);
    return binary_node(sema, e, OP_ADD, a, m, call_loc(e));
  }
  if (listed(name, linear_rows, sizeof linear_rows / sizeof *linear_rows))
    return on_parts(sema, e, d, false, false);
  if (listed(name, product_rows, sizeof product_rows / sizeof *product_rows))
    return on_parts(sema, e, d, true, false);
  // var and std of complex values are real: E|z - mean z|^2 = var(re) + var(im)
  if (d->b.kind == BK_NODE && (d->b.op == OP_VAR || d->b.op == OP_STD) && is_complex(e->bargs[0]->ty))
    return on_parts(sema, e, d, false, true);
  // a vector norm depends only on |z|: norm(abs(z), ...) (PyTorch's real result)
  if (!strcmp(name, "norm") && is_complex(e->bargs[0]->ty)) {
    Ast *p = barg(e, 1);
    if (p && p->ty->kind == TY_STR && !strcmp(p->ty->module, "nuc")) {
      diag_error(sema->cx, p->loc, "norm(p='nuc') of a complex tensor is not supported by tdsl (it is a sum of "
                 "singular values)");
      return poison(sema);
    }
    Ast *x = e->bargs[0], *a = ast_new(sema->cx, AST_CALL, x->loc);
    a->name = "abs";
    a->oploc = x->loc;
    a->ty = complex_built(sema, a, CX_ABS, &x, 1);
    e->bargs[0] = a;
    return NULL;
  }
  // dist(input, other, p) of complex tensors: the p-norm of |input - other| (PyTorch's real
  // result), as dist(|input - other|, 0-d zero of its dtype)
  if (!strcmp(name, "dist")) {
    Ast *df = cx_binary(sema, e, OP_SUB, e->bargs[0], e->bargs[1]);
    if (is_poison(df->ty)) return poison(sema);
    Ast *f = ast_new(sema->cx, AST_CALL, e->loc);
    f->name = "zeros";
    f->oploc = e->oploc;
    int64_t none[1] = {0};
    f->ty = complex_full(sema, f, df->ty->dtype, 0, none, 0, 0);
    e->bargs[0] = cx_node(sema, e, CX_ABS, &df, 1);
    e->bargs[1] = cx_node(sema, e, CX_REAL, &f, 1);
    return NULL;
  }
  // normalize(z, p, dim, eps) = z / max(||z||_p, eps) = sgn(z) * normalize(|z|, p, dim, eps)
  if (!strcmp(name, "normalize") && is_complex(e->bargs[0]->ty)) {
    Ast *z = e->bargs[0], *n = ast_new(sema->cx, AST_CALL, e->loc);
    *n = *e;
    n->bargs = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)e->nbargs);
    memcpy(n->bargs, e->bargs, sizeof(Ast *) * (size_t)e->nbargs);
    n->bargs[0] = cx_node(sema, e, CX_ABS, &z, 1);
    n->ty = d->check(sema, n, d);
    if (is_poison(n->ty)) return poison(sema);
    return complex_binary(sema, e, OP_MUL, cx_node(sema, e, CX_SGN, &z, 1), n, call_loc(e));
  }
  // cov(z, correction) of complex observations (the columns): mm(zc, zc^H) / (N - correction),
  // zc = z - its rows' means (a 1-D z is one variable: a 0-d result), PyTorch's definition
  if (!strcmp(name, "cov") && is_complex(e->bargs[0]->ty)) return complex_cov(sema, e, false);
  if (!strcmp(name, "corrcoef") && is_complex(e->bargs[0]->ty)) return complex_cov(sema, e, true);
  // any, all, count_nonzero test z != 0
  if ((d->check == ck_reduce && (d->b.op == OP_ANY || d->b.op == OP_ALL)) || !strcmp(name, "count_nonzero")) {
    e->bargs[0] = nonzero(sema, e->bargs[0]);
    return NULL;
  }
  if (!strcmp(name, "dot") || !strcmp(name, "mv")) return NULL;  // a complex matmul (complex_matmul)
  if (!strcmp(name, "addcmul") || !strcmp(name, "addcdiv")) {  // input + value * (t1 * t2), (t1 / t2)
    Ast *t1 = e->bargs[1], *t2 = e->bargs[2], *val = barg(e, 3);
    if (!is_tensor(t1->ty) || !is_tensor(t2->ty)) {
      diag_error(sema->cx, call_loc(e), "%s() of complex tensors takes tensors in tdsl", name);
      return poison(sema);
    }
    Ast *q = cx_binary(sema, e, name[4] == 'm' ? OP_MUL : OP_DIV, t1, t2);
    if (is_poison(q->ty)) return poison(sema);
    if (val) q = cx_binary(sema, e, OP_MUL, val, q);
    if (is_poison(q->ty)) return poison(sema);
    return complex_binary(sema, e, OP_ADD, e->bargs[0], q, call_loc(e));
  }
  if (!strcmp(name, "isclose") && is_tensor(e->bargs[0]->ty) && is_complex(e->bargs[0]->ty)) return complex_isclose(sema, e);
  if (!strcmp(name, "float_power")) {  // in complex128, as PyTorch's
    Ast *xs[2] = {e->bargs[0], e->bargs[1]};
    for (int i = 0; i < 2; i++)
      if (is_tensor(xs[i]->ty) && !xs[i]->ty->wrapped) xs[i] = as_complex(sema, xs[i], DT_C128);
    return complex_binary(sema, e, OP_POW, xs[0], xs[1], call_loc(e));
  }
  static const char *const product_sums[] = {"linear", "addmm", "addmv", "addr", "baddbmm"};
  if (listed(name, product_sums, sizeof product_sums / sizeof *product_sums)) return complex_product_sum(sema, e, name);
  if (!strcmp(name, "vdot")) {  // dot(conj(input), other)
    Ast *c = ast_new(sema->cx, AST_CALL, e->bargs[0]->loc), *x = e->bargs[0];
    c->name = "conj";
    c->oploc = x->loc;
    c->ty = is_complex(x->ty) ? complex_built(sema, c, CX_CONJ, &x, 1) : x->ty;
    if (!is_complex(x->ty)) c = x;
    e->bargs[0] = c;
    return NULL;
  }
  if (d->check == ck_unary || d->check == ck_binary || d->check == ck_matmul || d->check == ck_div) return NULL;
  if (d->check == ck_add) {  // add(input, other, alpha=a): input + a * other
    Ast *o = e->bargs[1], *al = barg(e, 2);
    if (al && (is_tensor(o->ty) || is_scalar(o->ty))) {
      if (!is_scalar(al->ty) && !(is_complex(al->ty) && al->ty->wrapped)) {
        diag_error(sema->cx, al->loc, "%s(): argument 'alpha' must be Number, not %s", name, py_type_name(al->ty));
        return poison(sema);
      }
      if (is_complex(al->ty) && !is_complex(o->ty) && !is_complex(e->bargs[0]->ty)) {
        diag_error(sema->cx, al->loc, "For non-complex input tensors, argument alpha must not be a complex number.");
        return poison(sema);
      }
      Ast *m = node_binary(sema, al, OP_MUL, o, al);
      if (is_poison(m->ty)) return poison(sema);
      e->bargs[1] = m;
      e->bargs[2] = NULL;
    }
    return NULL;
  }
  if (d->check == ck_where) {  // where(condition, input, other): ck_where's checks, then the pairs chosen
    Ast *c = e->bargs[0];
    if (!get_tensor(sema, e, c, "condition")) return poison(sema);
    if (c->ty->dtype != DT_BOOL) {
      diag_error(sema->cx, c->loc, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                 torch_name(c->ty->dtype));
      return poison(sema);
    }
    int nd = 0;
    int64_t shape[TD_MAX_DIMS];
    for (int i = 0; i < 3; i++) {
      const TType *t = e->bargs[i]->ty;
      if (!is_tensor(t) && !is_scalar(t))
        return get_tensor(sema, e, e->bargs[i], i == 1 ? "input" : "other"), poison(sema);
      if (is_tensor(t) && !broadcast(sema, call_loc(e), &nd, shape, t->view.ndim, t->view.shape)) return poison(sema);
    }
    if (!check_rank(sema, call_loc(e), nd + 1)) return poison(sema);
    return complex_built(sema, e, CX_WHERE, e->bargs, 3);
  }
  if (d->check == ck_cat) return NULL;  // cat, stack: ck_cat promotes the others to the result's complex dtype
  if (d->check == ck_clone) return all_complex(sema, e, dt) ? NULL : poison(sema);
  // gathers and writes through index tensors act on the pairs' leading dims: index_select,
  // gather (its index given the pairs' dim, ir/build_complex.c),
  // index_put(_), index_copy(_), index_add(_) without alpha, of complex values of dtype dt
  if (!strcmp(name, "index_select")) return NULL;
  if ((!strcmp(name, "tensor") || !strcmp(name, "as_tensor") || !strcmp(name, "scalar_tensor")) &&
      (!is_tensor(e->bargs[0]->ty) || (e->bargs[0]->ty->wrapped && is_complex(e->bargs[0]->ty))))
    return complex_tensor(sema, e);  // Python's numbers
  static const char *const creations[] = {"zeros_like", "ones_like", "empty_like", "full_like", "new_zeros",
                                          "new_ones", "new_empty", "new_full", "full", "fill_", "zero_", "copy_"};
  if (listed(name, creations, sizeof creations / sizeof *creations)) return NULL;  // ck_full's complex fill
  Ast *x = e->bargs[0];
  if (!strncmp(name, "index_fill", 10)) {  // the value as a 0-d tensor of x's dtype
    Ast *v = barg(e, 3);
    if (!is_complex(x->ty)) {
      diag_error(sema->cx, v ? v->loc : call_loc(e), "index_fill_(): Converting complex Scalar to non-complex type is "
                 "not supported");
      return poison(sema);
    }
    if (v && (is_scalar(v->ty) || (is_tensor(v->ty) && v->ty->view.ndim == 0))) e->bargs[3] = as_complex(sema, v, dt);
    return NULL;
  }
  if (!strncmp(name, "index_add", 9) && barg(e, 4) && is_complex(x->ty) && barg(e, 3) && is_tensor(e->bargs[3]->ty)) {
    Ast *s = e->bargs[3], *al = e->bargs[4];  // source * alpha, then index_add without it
    if (!is_scalar(al->ty) && !(is_complex(al->ty) && al->ty->wrapped)) {
      diag_error(sema->cx, al->loc, "index_add(): argument 'alpha' must be Number, not %s", py_type_name(al->ty));
      return poison(sema);
    }
    Ast *m = ast_new(sema->cx, AST_CALL, al->loc);
    m->name = "mul";
    m->oploc = al->loc;
    m->ty = complex_binary(sema, m, OP_MUL, s, al, al->loc);
    if (is_poison(m->ty)) return poison(sema);
    e->bargs[3] = m;
    e->bargs[4] = NULL;
  }
  if (!strncmp(name, "scatter", 7) && is_complex(x->ty)) return complex_scatter(sema, e, d, dt);
  if (!strcmp(name, "sinc") && is_complex(x->ty)) return complex_built(sema, e, CX_SINC, &x, 1);
  if (!strcmp(name, "tanhshrink") && is_complex(x->ty)) return complex_built(sema, e, CX_TANHSHRINK, &x, 1);
  if (!strcmp(name, "softsign") && is_complex(x->ty)) return complex_built(sema, e, CX_SOFTSIGN, &x, 1);
  if (!strcmp(name, "ldexp")) {  // input * 2.0 ** other, PyTorch's definition
    Ast *p = node_binary(sema, e, OP_POW, part_float(sema, e, 2), e->bargs[1]);
    if (is_poison(p->ty)) return poison(sema);
    return complex_binary(sema, e, OP_MUL, x, p, call_loc(e));
  }
  if (!strcmp(name, "gather")) {  // gather(input, dim, index): its checks, then the pairs gathered
    TType *t = d->check(sema, e, d);
    if (is_poison(t)) return t;
    Ast *xs[2] = {e->bargs[0], e->bargs[2]};
    return complex_built_args(sema, e, (ComplexArgs){.op = CX_GATHER, .dim = e->attr.dim}, xs, 2);
  }
  bool put = !strncmp(name, "index_put", 9), copy = !strncmp(name, "index_copy", 10);
  if (put || copy || (!strncmp(name, "index_add", 9) && !barg(e, 4))) {
    Ast *v = barg(e, put ? 2 : 3);
    if (!is_complex(e->bargs[0]->ty)) return NULL;  // the row's checks of a real target
    if (v && (!is_tensor(v->ty) || v->ty->dtype != dt)) {
      diag_error(sema->cx, v->loc, "Index put requires the source and destination dtypes match, got %s for the "
                 "destination and %s for the source.", torch_name(dt),
                 is_tensor(v->ty) ? torch_name(v->ty->dtype) : py_type_name(v->ty));
      return poison(sema);
    }
    return NULL;
  }
  if (d->check == ck_reduce && (d->b.op == OP_SUM || d->b.op == OP_MEAN)) {
    if (barg(e, 3)) {
      diag_error(sema->cx, barg(e, 3)->loc, "%s() of a complex tensor takes no dtype in tdsl", name);
      return poison(sema);
    }
    return NULL;
  }
  if (d->check == ck_clamp || d->check == ck_clamp_one || !strcmp(name, "relu") || !strcmp(name, "relu6") ||
      !strcmp(name, "hardtanh")) {
    diag_error(sema->cx, call_loc(e), "clamp is not supported for complex types");
    return poison(sema);
  }
  if (d->b.op == OP_MAXIMUM || d->b.op == OP_MINIMUM) {
    diag_error(sema->cx, call_loc(e), "%s not implemented for complex tensors.", d->b.op == OP_MAXIMUM ? "maximum"
                                                                                                        : "minimum");
    return poison(sema);
  }
  if (!strcmp(name, "nansum") || !strcmp(name, "nanmean")) {
    diag_error(sema->cx, call_loc(e), "%s does not support complex inputs", name);
    return poison(sema);
  }
  if (d->b.op == OP_MAX || d->b.op == OP_MIN) return refuse(sema, e, d->b.op == OP_MAX ? "max_all" : "min_all", dt);
  static const char *const acts[][2] = {  // PyTorch 1.13's kernels that refuse complex values
      {"logsigmoid", "log_sigmoid_cpu"}, {"hardsigmoid", "hardsigmoid_cpu"}, {"hardswish", "hardswish_cpu"},
      {"mish", "mish_cpu"}, {"softplus", "softplus_cpu"}, {"gelu", "GeluKernelImpl"}, {"elu", "elu_cpu"},
      {"selu", "elu_cpu"}, {"celu", "elu_cpu"},
      {"glu", "glu_cpu"}};
  for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
    if (!strcmp(name, acts[i][0])) {
      diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'", acts[i][1], torch_name(dt));
      return poison(sema);
    }
  diag_error(sema->cx, call_loc(e), "%s() of a %s tensor is not supported by tdsl: apply it to z.real and z.imag "
             "and join the results with torch.complex(re, im)", name, torch_name(dt));
  return poison(sema);
}

// a OP b with a complex operand (the operator and its function forms): + - * / as
// complex arithmetic, the comparisons refused as PyTorch refuses them.
TType *complex_binary(Sema *sema, Ast *e, Op op, Ast *a, Ast *b, Loc loc) {
  DType dt = is_complex(a->ty) ? a->ty->dtype : b->ty->dtype;
  static const ComplexOp cops[OP_COUNT] = {[OP_ADD] = CX_ADD + 1, [OP_SUB] = CX_SUB + 1, [OP_MUL] = CX_MUL + 1,
                                          [OP_DIV] = CX_DIV + 1, [OP_POW] = CX_POW + 1, [OP_EQ] = CX_EQ + 1,
                                          [OP_NE] = CX_NE + 1};
  ComplexOp cop = cops[op] ? cops[op] - 1 : CX_COUNT;
  if (op == OP_LOGICAL_AND || op == OP_LOGICAL_OR)  // of z != 0
    return binary_node(sema, e, op, nonzero(sema, a), nonzero(sema, b), loc);
  if (op == OP_MAXIMUM || op == OP_MINIMUM) {
    diag_error(sema->cx, loc, "%s not implemented for complex tensors.", op == OP_MAXIMUM ? "maximum" : "minimum");
    return poison(sema);
  }
  if (cop == CX_COUNT) {
    static const struct { Op op; const char *kernel; } kernels[] = {
        {OP_LT, "lt"}, {OP_LE, "le"}, {OP_GT, "gt"}, {OP_GE, "ge"}, {OP_FLOOR_DIVIDE, "div_floor"},
        {OP_REMAINDER, "remainder"}, {OP_POW, "pow"}, {OP_EQ, "eq"}, {OP_NE, "ne"}, {OP_ATAN2, "atan2"}};
    const char *k = op_name(op);
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
      if (kernels[i].op == op) k = kernels[i].kernel;
    diag_error(sema->cx, loc, "\"%s_cpu\" not implemented for '%s'", k, torch_name(dt));
    return poison(sema);
  }
  for (int i = 0; i < 2; i++) {
    const TType *t = i ? b->ty : a->ty;
    if (is_tensor(t) && t->dtype == DT_BOOL && op == OP_SUB) {
      diag_error(sema->cx, loc, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                 "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
      return poison(sema);
    }
  }
  double ar, ai, br, bi;  // Python's complex numbers: 1 + 2j is the number, as Python folds it
  if ((op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV) && complex_const(a, &ar, &ai) &&
      complex_const(b, &br, &bi)) {
    double re, im;
    if (op == OP_ADD) re = ar + br, im = ai + bi;
    else if (op == OP_SUB) re = ar - br, im = ai - bi;
    else if (op == OP_MUL) re = ar * br - ai * bi, im = ar * bi + ai * br;
    else if (br == 0 && bi == 0) {
      diag_error(sema->cx, loc, "ZeroDivisionError: complex division by zero");
      return poison(sema);
    } else if (fabs(br) >= fabs(bi)) {  // Smith's, as Python's
      double q = bi / br, den = br + bi * q;
      re = (ar + ai * q) / den, im = (ai - ar * q) / den;
    } else {
      double q = br / bi, den = br * q + bi;
      re = (ar * q + ai) / den, im = (ai * q - ar) / den;
    }
    return complex_literal(sema, e, re, im);
  }
  Ast *xs[2] = {a, b};
  TType *r = complex_built(sema, e, cop, xs, 2);
  // a Python number's arithmetic (1 + 2j, x * 2j of a run-time number x) makes one
  if (is_tensor(r) && (is_scalar(a->ty) || a->ty->wrapped) && (is_scalar(b->ty) || b->ty->wrapped)) r->wrapped = true;
  return r;
}

// op(x) of a complex x: the complex functions PyTorch 1.13 defines (ir/build_complex.c's
// formulas); the rest refused.
TType *complex_unary(Sema *sema, Ast *e, Op op, Ast *x, Loc loc) {
  static const ComplexOp cops[OP_COUNT] = {
      [OP_NEG] = CX_NEG + 1,   [OP_ABS] = CX_ABS + 1,     [OP_EXP] = CX_EXP + 1,     [OP_LOG] = CX_LOG + 1,
      [OP_LOG2] = CX_LOG2 + 1, [OP_LOG10] = CX_LOG10 + 1, [OP_SQRT] = CX_SQRT + 1,   [OP_RSQRT] = CX_RSQRT + 1,
      [OP_RECIPROCAL] = CX_RECIPROCAL + 1, [OP_SQUARE] = CX_SQUARE + 1,
      [OP_SIN] = CX_SIN + 1,   [OP_COS] = CX_COS + 1,     [OP_TAN] = CX_TAN + 1,     [OP_SINH] = CX_SINH + 1,
      [OP_COSH] = CX_COSH + 1, [OP_TANH] = CX_TANH + 1,   [OP_ASIN] = CX_ASIN + 1,   [OP_ACOS] = CX_ACOS + 1,
      [OP_ATAN] = CX_ATAN + 1, [OP_ASINH] = CX_ASINH + 1, [OP_ACOSH] = CX_ACOSH + 1, [OP_ATANH] = CX_ATANH + 1,
      [OP_SIGMOID] = CX_SIGMOID + 1, [OP_SILU] = CX_SILU + 1};
  double re, im;
  if (op == OP_NEG && complex_const(x, &re, &im)) return complex_literal(sema, e, -re, -im);  // -2j
  if (op == OP_LOGICAL_NOT) {  // z == 0
    Ast *xs[2] = {x, part_int(sema, e, 0)};
    return complex_built(sema, e, CX_EQ, xs, 2);
  }
  if (cops[op]) return complex_built(sema, e, cops[op] - 1, &x, 1);
  static const struct { Op op; const char *kernel; } kernels[] = {  // PyTorch 1.13's words for its refusals
      {OP_LOG1P, "log1p_vml_cpu"}, {OP_EXPM1, "expm1_vml_cpu"}, {OP_ERF, "erf_vml_cpu"}, {OP_ERFC, "erfc_vml_cpu"},
      {OP_EXP2, "exp2"}, {OP_LGAMMA, "lgamma_vml_cpu"}};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
    if (kernels[i].op == op) {
      diag_error(sema->cx, loc, "\"%s\" not implemented for '%s'", kernels[i].kernel, torch_name(x->ty->dtype));
      return poison(sema);
    }
  if (op == OP_RELU) {
    diag_error(sema->cx, loc, "clamp is not supported for complex types");
  } else if (op == OP_SIGN) {
    diag_error(sema->cx, loc, "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
               "torch.sgn instead.");
  } else if (op == OP_FLOOR || op == OP_CEIL || op == OP_TRUNC || op == OP_ROUND || op == OP_FRAC) {
    diag_error(sema->cx, loc, "%s is not supported for complex inputs", op_name(op));
  } else {
    diag_error(sema->cx, loc, "\"%s_cpu\" not implemented for '%s': tdsl computes abs, angle, conj, exp, log, sqrt, "
               "rsqrt, reciprocal, sigmoid, the trigonometric and hyperbolic functions and their inverses, and "
               "+ - * / ** @ of complex tensors", op_name(op), torch_name(x->ty->dtype));
  }
  return poison(sema);
}

// a @ b with a complex operand: one complex dtype, as PyTorch's matmul requires.
TType *complex_matmul(Sema *sema, Ast *e, Ast *a, Ast *b, Loc loc) {
  if (a->ty->dtype != b->ty->dtype) {
    diag_error(sema->cx, loc, "expected scalar type %s but found %s", torch_name(a->ty->dtype),
               torch_name(b->ty->dtype));
    return poison(sema);
  }
  int n;
  int64_t shape[TD_MAX_DIMS];
  TType pa = *a->ty, pb = *b->ty;  // the shapes' checks (matmul's of floats: its dtype checks passed above)
  pa.dtype = pb.dtype = dtype_complex_part(a->ty->dtype);
  if (!matmul_shape(sema, loc, &pa, &pb, &n, shape) || !check_numel(sema, loc, n, shape)) return poison(sema);
  Ast *xs[2] = {a, b};
  return complex_built(sema, e, CX_MATMUL, xs, 2);
}

// z.real, z.imag: views of a complex tensor's parts (x.real of a float x: x itself).
TType *complex_attr(Sema *sema, Ast *e) {
  Ast *x = e->lhs;
  bool imag = !strcmp(e->name, "imag");
  if (!is_complex(x->ty)) {
    if (imag) {
      diag_error(sema->cx, e->oploc, "imag is not implemented for tensors with non-complex dtypes.");
      return poison(sema);
    }
    return complex_built(sema, e, CX_SAME, &x, 1);  // x.real of a float x: x itself
  }
  e->bargs = arena_alloc(&sema->cx->arena, sizeof(Ast *));
  e->bargs[0] = x;
  e->nbargs = 1;
  return complex_built(sema, e, imag ? CX_IMAG : CX_REAL, &x, 1);
}

// Whether checked call e (of type t) computes what lowering can make of complex values
// (false after the message): a node of a complex result only of the ops lower.c's
// lower_node turns into float pairs (joins, clones, sum, mean, creation, a real tensor
// converted); a view of a complex result only of a complex tensor; a built op given a
// complex operand only by ir/build_complex.c. The gathers, scatters, index writes and
// other ops a checker composes directly are refused here.
bool complex_supported(Sema *sema, const Ast *e, const TType *t) {
  bool out = is_complex(t), in = false;
  for (int i = 0; (t->kind == TY_TUPLE || t->kind == TY_LIST) && i < t->nelem; i++)  // split, chunk, unbind
    out |= is_complex(t->elems[i]);
  for (int i = 0; i < e->noperands && !in; i++)
    in = e->operands[i] && e->operands[i]->ty && is_complex(e->operands[i]->ty);
  if (!out && !in) return true;
  const Builtin *bi = e->bi;
  if (bi->kind == BK_BUILD && bi->build == build_complex) return true;
  if (bi->kind == BK_ELEMENT) return true;
  if (bi->kind == BK_VIEW && out == (e->noperands && e->operands[0]->ty && is_complex(e->operands[0]->ty)))
    return true;  // a view of a complex tensor is one
  if (bi->kind == BK_NODE && bi->op == OP_WHERE && !strcmp(bi->name, "index") && e->noperands == 2)
    return true;  // x[mask] as a store's target (sema_scatter.c's mask_store makes the where)
  if (bi->kind == BK_NODE && out) {
    switch (bi->op) {
    case OP_CAT: case OP_STACK: case OP_CLONE: case OP_COPY: case OP_SUM: case OP_MEAN:
    case OP_INDEX: case OP_INDEX_SELECT:  // gathers of the leading dims: the pairs gathered
      return true;
    case OP_SCATTER:  // scatter, scatter_add: the pairs written or added (complex_scatter)
      if (e->attr.aug != OP_COUNT && e->attr.aug != OP_ADD) break;
      return true;
    case OP_INDEX_PUT:  // x[idx] = v, index_put_ ...: the pairs written (or added), of complex values
      if (e->attr.aug != OP_COUNT && e->attr.aug != OP_ADD && e->attr.aug != OP_COPY) break;
      return true;
    case OP_TO:  // c64 <-> c128, or (x, 0) of a real x
      return true;
    case OP_STORE:  // z.add_(w): the pairs written, or added to the pairs
      if (e->attr.aug != OP_COUNT && e->attr.aug != OP_ADD && e->attr.aug != OP_SUB) break;
      for (int i = 0; i < e->noperands; i++)
        if (e->operands[i] && is_tensor(e->operands[i]->ty) && !is_complex(e->operands[i]->ty)) goto refused;
      return true;
    case OP_ZEROS: case OP_ONES: case OP_FULL: case OP_ARANGE: case OP_EYE:
      for (int i = 0; i < e->noperands; i++)  // made of real values: (x, 0)
        if (e->operands[i] && e->operands[i]->ty && is_complex(e->operands[i]->ty)) goto refused;
      return true;
    default: break;
    }
  }
  if (bi->kind == BK_NODE && bi->op == OP_TO) {
    diag_error(sema->cx, call_loc(e), "casting a complex tensor to %s discards its imaginary part: tdsl refuses it "
               "(take .real, or abs())", dtype_name(t->dtype));
    return false;
  }
refused:
  diag_error(sema->cx, call_loc(e), "'%s' is not supported with complex tensors: tdsl computes their views, "
             "elementwise math, sum, mean, prod, cumsum, cumprod, cat, stack, clone, x[idx], index_select and "
             "index writes; apply it to .real and .imag (torch.view_as_real(z)) and join them with torch.complex",
             bi->name && bi->name[0] != '(' ? bi->name : "this op");
  return false;
}

// rhs, in place, as the conversion a of its old self (a node of its own): what a store
// writes when the value's dtype is not the target's
static bool convert_in_place(Sema *sema, Ast *rhs, ComplexArgs a) {
  Ast *inner = ast_new(sema->cx, rhs->kind, rhs->loc), *call = ast_new(sema->cx, AST_CALL, rhs->loc);
  *inner = *rhs;
  call->name = a.op == CX_TO_REAL ? "real" : "complex";
  call->oploc = rhs->loc;
  call->ty = complex_built_args(sema, call, a, &inner, 1);
  if (is_poison(call->ty)) return false;
  *rhs = *call;
  return true;
}

// A store into target of rhs (binop: -1 for '=', else the operator of `target op= rhs`,
// which for a complex target was rewritten as '=' of the complex op's result): a real
// value written into a complex target is (v, 0), of the target's dtype; a complex value
// into a real target is its real part, with PyTorch's UserWarning (`x op= z` is left to
// the store's own check, PyTorch's error). false after the message.
bool complex_store_ok(Sema *sema, const Ast *st, const Ast *target, Ast *rhs, int binop) {
  bool tc = is_complex(target->ty), vc = is_complex(rhs->ty);
  if (!tc && !vc) return true;
  if (!is_tensor(target->ty) || (!is_tensor(rhs->ty) && !is_scalar(rhs->ty))) return true;  // the common checks say
  if (tc && (!vc || rhs->ty->dtype != target->ty->dtype))
    return convert_in_place(sema, rhs, (ComplexArgs){.op = CX_FROM_REAL, .dtype = target->ty->dtype});
  if (tc || binop >= 0) return true;
  diag_warning(sema->cx, rhs->loc, "Casting complex values to real discards the imaginary part (write its .real to "
               "say so)");
  (void)st;
  return convert_in_place(sema, rhs, (ComplexArgs){.op = CX_TO_REAL, .dtype = target->ty->dtype});
}

bool complex_where_operand(const Ast *a, const Ast *b) { return is_complex(a->ty) || is_complex(b->ty); }

// where(c, a, b) with a complex a or b, of a bool c (x[mask] = v: the pairs chosen)
TType *complex_where(Sema *sema, Ast *e, Ast *c, Ast *a, Ast *b) {
  Ast *xs[3] = {c, a, b};
  int nd = 0;
  int64_t shape[TD_MAX_DIMS];
  for (int i = 0; i < 3; i++) {
    const TType *t = xs[i]->ty;
    if (is_tensor(t) && !broadcast(sema, call_loc(e), &nd, shape, t->view.ndim, t->view.shape)) return poison(sema);
  }
  if (!check_rank(sema, call_loc(e), nd + 1)) return poison(sema);
  e->bi = NULL;
  return complex_built(sema, e, CX_WHERE, xs, 3);
}

// Python's complex number re + im j (2.5j, complex(1, 2)): a 0-d complex128 tensor that
// promotes as a Python number does (x * 1j of a float32 x is complex64, as in PyTorch).
TType *complex_literal(Sema *sema, Ast *e, double re, double im) {
  TType *t = complex_built_args(sema, e, (ComplexArgs){.op = CX_LITERAL, .re = re, .im = im}, NULL, 0);
  if (is_tensor(t)) t->wrapped = true;
  return t;
}

// ---- the rows of complex ops (sema_builtin.c) ----
TType *ck_complex(Sema *sema, Ast *e, const BuiltinDef *d) {
  ComplexOp op = (ComplexOp)d->variant;
  Ast *x = e->bargs[0];
  const TType *t = x->ty;
  switch (op) {
  case CX_AS_REAL:
    if (!is_complex(t)) {
      diag_error(sema->cx, call_loc(e), "view_as_real is only supported for complex tensors");
      return poison(sema);
    }
    if (!check_rank(sema, call_loc(e), t->view.ndim + 1)) return poison(sema);
    return complex_built(sema, e, op, &x, 1);
  case CX_AS_COMPLEX: {
    const View *v = &t->view;
    const char *bad = NULL;
    if (t->dtype != DT_F32 && t->dtype != DT_F64 && t->dtype != DT_F16) {
      diag_error(sema->cx, call_loc(e), "view_as_complex is only supported for half, float and double tensors, but "
                 "got a tensor of scalar type: %s", torch_name(t->dtype));
      return poison(sema);
    }
    if (v->ndim == 0) bad = "Input tensor must have one or more dimensions";
    else if (v->shape[v->ndim - 1] != 2) bad = "Tensor must have a last dimension of size 2";
    else if (v->strides[v->ndim - 1] != 1) bad = "Tensor must have a last dimension with stride 1";
    for (int i = 0; !bad && i + 1 < v->ndim; i++)
      if (v->strides[i] % 2) bad = "Tensor must have a stride divisible by 2 for all but last dimension";
    if (!bad && v->offset % 2) bad = "Tensor must have a storage_offset divisible by 2";
    if (bad) {
      diag_error(sema->cx, call_loc(e), "%s", bad);
      return poison(sema);
    }
    if (t->dtype == DT_F16) {
      diag_error(sema->cx, call_loc(e), "view_as_complex of a float16 tensor (complex32) is not supported: tdsl's "
                 "complex dtypes are complex64 and complex128 (x.float() first)");
      return poison(sema);
    }
    return complex_built(sema, e, op, &x, 1);
  }
  case CX_IMAG:
    if (!is_complex(t)) {
      diag_error(sema->cx, call_loc(e), "imag is not implemented for tensors with non-complex dtypes.");
      return poison(sema);
    }
    return complex_built(sema, e, op, &x, 1);
  case CX_CONJ:
    if (!is_complex(t)) {  // conj of a real tensor: the tensor itself
      return complex_built(sema, e, CX_SAME, &x, 1);
    }
    return complex_built(sema, e, op, &x, 1);
  case CX_SAME: return complex_built(sema, e, op, &x, 1);
  case CX_IS_COMPLEX:
    e->bi = NULL;  // a Python value
    return ty_bool(sema, is_complex(t));
  case CX_SGN:
    if (!is_complex(t)) {  // sgn of a real tensor is sign
      static const BuiltinDef sign = {{"sgn", BK_NODE, OP_SIGN, "input", NULL}, ck_unary, F_BOTH, OP_COUNT, 0,
                                      {DTR_ANY, NULL}};
      e->bi = &sign.b;
      return ck_unary(sema, e, &sign);
    }
    return complex_built(sema, e, op, &x, 1);
  case CX_POLAR:
  case CX_MAKE: {
    Ast *y = e->bargs[1];
    // complex(re, im) of Python numbers, written bare: Python's complex number
    if (op == CX_MAKE && !e->lhs && is_scalar(t) && is_scalar(y->ty))
      return complex_literal(sema, e, t->fval, y->ty->fval);
    if (!get_tensor(sema, e, x, op == CX_POLAR ? "abs" : "real")) return poison(sema);
    if (!get_tensor(sema, e, y, op == CX_POLAR ? "angle" : "imag")) return poison(sema);
    DType a = t->dtype, b = y->ty->dtype;
    bool fa = a == DT_F32 || a == DT_F64 || a == DT_F16, fb = b == DT_F32 || b == DT_F64 || b == DT_F16;
    if (!fa || !fb) {
      diag_error(sema->cx, call_loc(e), "Expected both inputs to be Half, Float or Double tensors but got %s and %s",
                 torch_name(a), torch_name(b));
      return poison(sema);
    }
    if (a != b) {
      diag_error(sema->cx, call_loc(e), "Expected object of scalar type %s but got scalar type %s for second argument",
                 torch_name(a), torch_name(b));
      return poison(sema);
    }
    if (a == DT_F16) {
      if (op == CX_POLAR) return refuse(sema, e, "polar", a);
      diag_error(sema->cx, call_loc(e), "complex() of float16 tensors (complex32) is not supported: tdsl's complex "
                 "dtypes are complex64 and complex128 (x.float() first)");
      return poison(sema);
    }
    Ast *xs[2] = {x, y};
    int nd = t->view.ndim;
    int64_t shape[TD_MAX_DIMS];
    memcpy(shape, t->view.shape, sizeof(int64_t) * (size_t)nd);
    if (!broadcast(sema, call_loc(e), &nd, shape, y->ty->view.ndim, y->ty->view.shape) ||
        !check_rank(sema, call_loc(e), nd + 1))
      return poison(sema);
    return complex_built(sema, e, op, xs, 2);
  }
  default: break;
  }
  td_unreachable();
}
