// frontend/sema_build.c: a call the op library builds (BK_BUILD). A checker that has
// checked a call hands its operands and its arguments, parsed into the family's typed
// struct (ir/build.h), to built(); the call's type is what the builder makes of values of
// the operands' types — a dry run into a graph of its own, so no shape or dtype of a
// built op is computed twice. lower.c runs the same builder on the operands' values.
// Invariant: a builder is run only on operands the checker has accepted; it reports
// nothing and cannot fail.
#include "frontend/sema_internal.h"

#include <string.h>

enum { MAX_RESULTS = 64 };

typedef struct DryRun {
  Sema *sema;
  const Ast *e;
  Graph *g;
  Ast **ops;
  Value **storage;  // per operand: the buffer value standing for its storage (NULL: none yet)
} DryRun;

// Operand i as a value of its type: a number, or a view of a buffer the size of its
// storage, one buffer per storage (operands that share one share it).
static Value *placeholder(void *ctx, int i) {
  DryRun *d = ctx;
  const TType *t = d->ops[i]->ty;
  if (t->kind == TY_SCALAR) return graph_scalar(d->g, t->dtype, t->fval, t->ival, d->ops[i]->loc);
  TD_ASSERT(t->kind == TY_TENSOR);
  Value *base = NULL;
  for (int j = 0; j < i && !base; j++)
    if (d->storage[j] && d->ops[j]->ty->storage == t->storage) base = d->storage[j];
  bool cplx = dtype_is_complex(t->dtype);  // its float pairs, as lowering gives it (ir/ir.h's Value.cplx)
  if (!base) {
    int64_t n = t->storage_numel * (cplx ? 2 : 1);
    base = graph_param(d->g, "(operand)", cplx ? dtype_complex_part(t->dtype) : t->dtype, 1, &n, false,
                       d->ops[i]->loc);
  }
  d->storage[i] = base;
  Value *v = graph_view(d->g, base, cplx ? view_as_real(t->view) : t->view, d->ops[i]->loc);
  v->wrapped = t->wrapped;
  v->cplx = cplx;
  return v;
}

// The type of result v of the dry run: a view of an operand's storage, or of a new one.
static TType *result_type_of(Sema *sema, const DryRun *d, int nops, const Value *v) {
  TD_ASSERT(v->buf);
  for (int i = 0; i < nops; i++) {
    if (!d->storage[i] || d->storage[i]->buf != v->buf) continue;
    const TType *op = d->ops[i]->ty;
    if (!dtype_is_complex(op->dtype) && !v->cplx) return ty_view_of(sema, op, v->view);
    TType *t = ty_view_of(sema, op, v->view);  // a view of a complex storage, or a complex view of floats
    t->dtype = v->dtype;
    t->storage_numel = op->storage_numel * (dtype_is_complex(op->dtype) ? 2 : 1);
    if (v->cplx) {
      t->dtype = dtype_complex_of(v->dtype);
      bool pairs = view_as_complex(v->view, &t->view);
      TD_ASSERT(pairs);
      t->storage_numel /= 2;
    }
    return t;
  }
  const Value *own = v->buf->own;
  if (v->cplx) {  // a complex result: the pairs of a new float storage
    TType *t = ty_fresh(sema, dtype_complex_of(v->dtype), own->view.ndim - 1, own->view.shape);
    bool pairs = view_as_complex(v->view, &t->view);
    TD_ASSERT(pairs);
    return t;
  }
  TType *t = ty_fresh(sema, v->dtype, own->view.ndim, own->view.shape);
  t->view = v->view;
  return t;
}

// ---- the checks of the primitives a builder applies (ir/build.h's BuildCheck): the
// messages of the ops a PyTorch composition calls, where the call's name is ----
// A value of the dry run as a type: a number, or a tensor.
static TType *value_type(Sema *sema, const Value *v) {
  TType *t = ty_new(sema, v->is_scalar ? TY_SCALAR : TY_TENSOR);
  t->dtype = v->dtype;
  if (v->is_scalar) {
    t->fval = v->sval;
    t->ival = v->ival;
  } else {
    t->view = v->view;
    t->wrapped = v->wrapped;
  }
  return t;
}

// The shapes of the tensors among ts broadcast (PyTorch's message when they do not), and
// a numel that fits.
static bool broadcasts(Sema *sema, Loc loc, TType **ts, int n) {
  int nd = 0;
  int64_t shape[TD_MAX_DIMS];
  for (int i = 0; i < n; i++)
    if (is_tensor(ts[i]) && !broadcast(sema, loc, &nd, shape, ts[i]->view.ndim, ts[i]->view.shape)) return false;
  return check_numel(sema, loc, nd, shape);
}

static bool check_unary(void *ctx, Op op, const Value *x) {
  DryRun *d = ctx;
  DType out;
  return unary_dtype(d->sema, call_loc(d->e), op, x->dtype, &out);
}

static bool check_binary(void *ctx, Op op, const Value *x, const Value *y) {
  DryRun *d = ctx;
  TType *ts[2] = {value_type(d->sema, x), value_type(d->sema, y)};
  DType out;
  return binary_dtype(d->sema, call_loc(d->e), op, ts[0], ts[1], &out) && broadcasts(d->sema, call_loc(d->e), ts, 2);
}

static bool check_where(void *ctx, const Value *c, const Value *x, const Value *y) {
  DryRun *d = ctx;
  TType *ts[3] = {value_type(d->sema, c), value_type(d->sema, x), value_type(d->sema, y)};
  return broadcasts(d->sema, call_loc(d->e), ts, 3);
}

// clamp's bounds, converted to an int result's dtype, must fit it (at the numbers'
// place: the call's)
static bool check_clamp(void *ctx, const Value *x, const Value *lo, const Value *hi) {
  DryRun *d = ctx;
  TType *ts[3] = {value_type(d->sema, x), lo ? value_type(d->sema, lo) : NULL, hi ? value_type(d->sema, hi) : NULL};
  DType dt = result_type(d->sema, ts, 3);
  for (int i = 1; i < 3; i++)
    if (ts[i] && dtype_is_int(dt) && !scalar_fits(d->sema, d->e->loc, ts[i], dt)) return false;
  return true;
}

static bool check_reduce(void *ctx, Op op, const Value *x, DType dt) {
  DryRun *d = ctx;
  Loc loc = call_loc(d->e);
  if (op == OP_MEAN && !dtype_is_float(x->dtype)) {
    diag_error(d->sema->cx, loc, "mean(): could not infer output dtype. Input dtype must be either a floating point "
               "or complex dtype. Got: %s", torch_name(x->dtype));
    return false;
  }
  if ((op == OP_VAR || op == OP_STD) && !dtype_is_float(x->dtype)) {
    diag_error(d->sema->cx, loc, "std and var only support floating point and complex dtypes");
    return false;
  }
  if ((op == OP_ARGMAX || op == OP_ARGMIN) && x->dtype == DT_BOOL) {
    diag_error(d->sema->cx, loc, "\"%s_cuda\" not implemented for 'Bool'", op_name(op));
    return false;
  }
  (void)dt;
  return true;
}

static bool check_softmax(void *ctx, const Value *x, DType dt) {
  DryRun *d = ctx;
  (void)x;
  if (dtype_is_float(dt)) return true;
  diag_error(d->sema->cx, call_loc(d->e), "\"host_softmax\" not implemented for '%s'", torch_name(dt));
  return false;
}

static bool check_matmul(void *ctx, const Value *x, const Value *y) {
  DryRun *d = ctx;
  int n;
  int64_t shape[TD_MAX_DIMS];
  Loc loc = call_loc(d->e);
  return matmul_shape(d->sema, loc, value_type(d->sema, x), value_type(d->sema, y), &n, shape) &&
         check_numel(d->sema, loc, n, shape);
}

// narrow's numbers are the builder's (at the call)
static bool check_narrow(void *ctx, const Value *x, int dim, int64_t start, int64_t len) {
  DryRun *d = ctx;
  Loc locs[4] = {call_loc(d->e), d->e->loc, d->e->loc, d->e->loc};
  int a;
  int64_t st;
  return narrow_ok(d->sema, locs, value_type(d->sema, x), dim, start, len, &a, &st);
}

// a contraction's operands: one float dtype
static bool check_contract(void *ctx, const Value *x, const Value *y) {
  DryRun *d = ctx;
  return matmul_dtypes(d->sema, call_loc(d->e), value_type(d->sema, x), value_type(d->sema, y), "addmm_cuda");
}

// bmm's operands (einsum contracts with it): one float dtype
static bool check_bmm(void *ctx, const Value *x, const Value *y) {
  DryRun *d = ctx;
  if (x->dtype != y->dtype) {
    diag_error(d->sema->cx, call_loc(d->e), "expected scalar type %s but found %s", torch_name(x->dtype),
               torch_name(y->dtype));
    return false;
  }
  if (!dtype_is_float(x->dtype)) {
    diag_error(d->sema->cx, call_loc(d->e), "\"bmm_cuda\" not implemented for '%s'", torch_name(x->dtype));
    return false;
  }
  return true;
}

static bool check_rank_of(void *ctx, int ndim) {
  DryRun *d = ctx;
  return check_rank(d->sema, call_loc(d->e), ndim);
}

static const BuildCheck checks = {check_unary, check_binary, check_where,    check_clamp,  check_reduce, check_softmax,
                                  check_matmul, check_narrow, check_contract, check_bmm, check_rank_of};

static const Builtin element = {"(element)", BK_ELEMENT, OP_COUNT, "", NULL};

// e becomes a call of builder fn over ops[0..n) with args; its type, or the tuple of its
// results' types (each a BK_ELEMENT of the call).
TType *built(Sema *sema, Ast *e, BuildFn fn, const void *args, Ast **ops, int n) {
  Builtin *bi = arena_alloc(&sema->cx->arena, sizeof *bi);
  *bi = e->bi ? *e->bi : (Builtin){e->name, BK_BUILD, OP_COUNT, "", NULL};
  bi->kind = BK_BUILD;
  bi->build = fn;
  BuildIn *in = arena_alloc(&sema->cx->arena, sizeof *in * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) {
    const TType *t = ops[i]->ty;
    TD_ASSERT(t->kind == TY_SCALAR || t->kind == TY_TENSOR);
    in[i] = (BuildIn){.dtype = t->dtype, .view = t->view, .scalar = t->kind == TY_SCALAR, .wrapped = t->wrapped,
                      .f = t->fval, .i = t->ival};
  }
  DryRun d = {sema, e, graph_new(sema->cx, "(dry run)", e->loc), ops, NULL};
  d.storage = arena_alloc(&sema->cx->arena, sizeof(Value *) * (size_t)(n ? n : 1));
  Value *out[MAX_RESULTS];
  int k = build_check(d.g, e->loc, call_loc(e), fn, args, n, in, placeholder, &d, &checks, &d, out);
  if (k == 0) return poison(sema);
  TType *types[MAX_RESULTS];
  for (int i = 0; i < k; i++) types[i] = result_type_of(sema, &d, n, out[i]);
  Ast *call = e;
  if (k > 1) {  // a tuple: e's elements read the results of a call of their own
    call = ast_new(sema->cx, AST_CALL, e->loc);
    call->name = e->name;
    call->oploc = e->oploc;
  }
  call->bi = bi;
  call->args = args;
  set_operands(sema, call, ops, n);
  if (k == 1) return types[0];
  Ast *items[MAX_RESULTS];
  for (int i = 0; i < k; i++) {
    items[i] = ast_new(sema->cx, AST_CALL, e->loc);
    items[i]->name = e->name;
    items[i]->bi = &element;
    items[i]->ival = i;
    items[i]->ty = types[i];
    set_operand1(sema, items[i], call);
  }
  TType *t = tuple_result(sema, e, items, k);
  call->ty = t;  // the hidden call: a tuple (lowering runs its builder once, BK_ELEMENT reads it)
  return t;
}

static const Builtin view_builtin = {"(view)", BK_VIEW, OP_COPY, "", NULL};

// The view v of x's storage as an expression at e's place: no node.
Ast *view_ast(Sema *sema, const Ast *e, Ast *x, View v) {
  Ast *n = ast_new(sema->cx, AST_CALL, e->loc);
  n->name = view_builtin.name;
  n->oploc = e->oploc;
  n->bi = &view_builtin;
  set_operand1(sema, n, x);
  n->ty = ty_view_of(sema, x->ty, v);
  return n;
}

// A copy of args (size bytes) in the arena: the typed struct a call keeps.
void *keep_args(Sema *sema, const void *args, size_t size) {
  void *p = arena_alloc(&sema->cx->arena, size);
  memcpy(p, args, size);
  return p;
}

// ============================================================================
// Nodes a checker composes itself (statement forms, stores through an index): the op's
// own node of ir/ops.def (node_builtin), no row looked up by a name
// ============================================================================
// A call node of op at at's place, its operands and type yet to set.
static Ast *node_ast(Sema *sema, const Ast *at, Op op) {
  Ast *n = ast_new(sema->cx, AST_CALL, at->loc);
  n->bi = node_builtin(op);
  n->name = n->bi->name;
  n->oploc = at->oploc;
  return n;
}

Ast *node_binary(Sema *sema, const Ast *at, Op op, Ast *a, Ast *b) {
  Ast *n = node_ast(sema, at, op);
  n->ty = binary_node(sema, n, op, a, b, call_loc(at));
  return n;
}

Ast *node_where(Sema *sema, const Ast *at, Ast *c, Ast *x, Ast *y) {
  Ast *n = node_ast(sema, at, OP_WHERE);
  n->ty = where_node(sema, n, c, x, y);
  return n;
}

Ast *node_clone(Sema *sema, const Ast *at, Ast *x) {
  Ast *n = node_ast(sema, at, OP_CLONE);
  set_operand1(sema, n, x);
  n->ty = ty_fresh(sema, x->ty->dtype, x->ty->view.ndim, x->ty->view.shape);
  return n;
}

Ast *node_clamp(Sema *sema, const Ast *at, Ast *x, Ast *lo, Ast *hi) {
  Ast *n = node_ast(sema, at, OP_CLAMP);
  n->ty = clamp_node(sema, n, x, lo, hi);
  return n;
}

Ast *node_fill(Sema *sema, const Ast *at, Op op, const TType *like) {
  Ast *n = node_ast(sema, at, op);
  set_operands(sema, n, NULL, 0);
  n->ty = ty_fresh(sema, like->dtype, like->view.ndim, like->view.shape);
  return n;
}

// full((), v, dtype=dt): the 0-d tensor of number v
Ast *node_full(Sema *sema, const Ast *at, const TType *v, DType dt) {
  Ast *n = node_ast(sema, at, OP_FULL);
  n->attr.lo = v->fval;
  n->attr.ilo = v->ival;
  set_operands(sema, n, NULL, 0);
  n->ty = ty_fresh(sema, dt, 0, NULL);
  return n;
}

// A call of builder fn over ops[0..n) with args at at's place: its type set (poison after
// the builder's checks refused it).
Ast *built_ast(Sema *sema, const Ast *at, BuildFn fn, const void *args, Ast **ops, int n) {
  Ast *c = ast_new(sema->cx, AST_CALL, at->loc);
  c->oploc = at->oploc;
  c->name = at->name ? at->name : at->bi ? at->bi->name : "(built)";
  c->ty = built(sema, c, fn, args, ops, n);
  return c;
}

// ============================================================================
// Tensors whose values are known when compiling
// ============================================================================
const CreateArgs *literal_of(Sema *sema, const Ast *a) {
  if (!is_tensor(a->ty)) return NULL;
  const TType *t = a->ty;
  for (int depth = 0; a->kind == AST_NAME && depth < 64; depth++) {
    Sym *s = find_local(sema, a->name);
    if (!s || !s->src || s->ty != a->ty) return NULL;
    a = s->src;
  }
  if (a->kind != AST_CALL || !a->bi || a->bi->kind != BK_BUILD || a->bi->build != build_literal || !a->args)
    return NULL;
  const CreateArgs *c = a->args;
  if (c->copy) return NULL;
  for (int i = 0; i < sema->written.len; i++)
    if (sema->written.data[i] == t->storage) return NULL;
  return c;
}

int64_t literal_int(const CreateArgs *c, int64_t i) {
  return c->dtype[i] == DT_F64 ? (int64_t)c->f[i] : c->i[i];
}
