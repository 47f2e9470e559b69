// frontend/sema_stmt.c: statements and function bodies: assignments (names hold tensors
// and numbers), augmented assignments, stores through a view (§7) with PyTorch's in-place
// checks (a writable storage, no overlap, a dtype the result casts to) and return
// against the declared types.
#include "frontend/sema_internal.h"

#include <string.h>

// ============================================================================
// Stores (§7): x[...] = v, x[...] op= v, x op= v
// ============================================================================
static const BuiltinDef def_store = {{"store", BK_NODE, OP_STORE, "", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};

// The variable a store target is written through (x in x.t()[0]).
static const Ast *root_name(const Ast *t) {
  while (t && t->kind != AST_NAME) t = t->lhs;
  return t;
}

const char *target_name(const Ast *t) {
  const Ast *r = root_name(t);
  return r ? r->name : "tensor";
}

// PyTorch's partial-overlap check of an in-place write: both tensors non-overlapping
// and dense over one storage, their element ranges intersecting without being the
// same tensor (same range and strides). Other overlaps (a flip, strided views) are
// not errors; lowering reads such a value from a copy made before the write.
static bool partial_overlap(const TType *w, const TType *r) {
  if (w->storage != r->storage || view_numel(w->view) == 0 || view_numel(r->view) == 0)
    return false;
  if (!view_is_dense(w->view) || !view_is_dense(r->view))
    return false;
  int64_t wb = w->view.offset, we = wb + view_numel(w->view), rb = r->view.offset, re = rb + view_numel(r->view);
  if (wb == rb && we == re) {
    for (int i = 0; i < w->view.ndim && i < r->view.ndim; i++)
      if (w->view.strides[i] != r->view.strides[i])
        return true;
    return w->view.ndim != r->view.ndim;
  }
  return wb < re && rb < we;
}

// The op of `x op= v`: the one the operator spells (add for '+').
static Op aug_op(int binop) { return operator_row(binop)->b.op; }

// x //= v, x %= v, x **= v, x &= v ... (the in-place ops the store kernel does not fold):
// `x = x op v` written into x's storage, the result cast to x's dtype when PyTorch allows.
// The plain '=' store of the op's result keeps the op's own checks (integer division by
// zero, dtypes); st->op becomes -1. false after an error.
static bool aug_other(Sema *sema, Ast *st, Ast *target) {
  if (st->op < 0 || !is_tensor(target->ty)) return true;
  // complex: z = z op v; but x[idx] op= v and x[mask] op= v compose their own (sema_scatter.c)
  bool indexed = target->bi && target->bi->kind == BK_NODE && !op_is_store(target->bi->op);
  if (st->op <= BIN_DIV && (!dtype_is_complex(target->ty->dtype) || indexed)) return true;
  if (st->op == BIN_MATMUL) {
    diag_error(sema->cx, st->oploc, "In-place matmul is not supported. Use 'a = a @ b' instead.");
    return false;
  }
  Op op = aug_op(st->op);
  Ast *r = node_binary(sema, st, op, target, st->rhs);
  if (is_poison(r->ty)) return false;
  if (!dtype_can_cast(r->ty->dtype, target->ty->dtype)) {
    diag_error(sema->cx, st->oploc, "result type %s can't be cast to the desired output type %s",
               torch_name(r->ty->dtype), torch_name(target->ty->dtype));
    return false;
  }
  st->rhs = r;
  st->op = -1;
  return true;
}

// target (of type t) may be written: a local or a 'mut' parameter, no element twice.
bool store_writable(Sema *sema, const Ast *st, const Ast *target, const TType *t) {
  const char *name = target_name(target);
  if (!t->writable && name[0] == '(') {  // a module's tensor read through its hidden binding ("(attr 4) bias")
    const char *close = strchr(name, ')');
    const char *attr = close && close[1] == ' ' ? close + 2 : name;
    diag_error(sema->cx, target->loc, "cannot write in place to a module's tensor '%s': it is read-only in tdsl; "
               "set the attribute anew (m.%s = m.%s * 2)", attr, attr, attr);
    return false;
  }
  if (!t->writable) {
    diag_error(sema->cx, target->loc, "cannot write to '%s': parameters are read-only unless declared 'mut'", name);
    const Ast *r = root_name(target);
    Sym *s = r ? find_local(sema, r->name) : NULL;
    if (s) diag_note(sema->cx, s->loc, "'%s' declared here", name);
    return false;
  }
  if (t->bits_of) {
    diag_error(sema->cx, target->loc, "cannot write to '%s': it is x.view(dtype) of another dtype, which tdsl computes "
               "as a copy of x's bits (PyTorch's shares x's storage, so the write would change x); write to x, or "
               "clone() the view first", name);
    diag_note(sema->cx, call_loc(t->bits_of), "the view of another dtype");
    return false;
  }
  for (int i = 0; i < t->view.ndim; i++)
    if (t->view.strides[i] == 0 && t->view.shape[i] > 1) {
      diag_error(sema->cx, st->oploc, "unsupported operation: more than one element of the written-to tensor refers to "
                 "a single memory location. Please clone() the tensor before performing the operation.");
      return false;
    }
  vec_push(&sema->cx->arena, &sema->written, t->storage);
  return true;
}

void check_store_common(Sema *sema, Ast *st, Ast *target, Ast *rhs, int binop) {
  TType *t = target->ty, *v = rhs->ty;
  if (is_poison(t) || is_poison(v)) return;
  if (!complex_store_ok(sema, st, target, rhs, binop)) return;  // sema_complex.c
  if (!is_tensor(t)) {
    diag_error(sema->cx, target->loc, "cannot assign to an element of a %s", py_type_name(t));
    return;
  }
  if (!is_tensor(v) && !is_scalar(v)) {
    diag_error(sema->cx, rhs->loc, "cannot assign a %s to a tensor", py_type_name(v));
    return;
  }
  while (target->bi && target->bi->kind == BK_NODE && op_is_store(target->bi->op))
    target = target->operands[0];  // x.mul_(2).relu_(): an in-place result is its target
  if (target->bi && target->bi->kind == BK_NODE) {  // x[idx] = v, x[mask] = v (sema_scatter.c)
    index_store(sema, st, target, rhs, binop);
    return;
  }
  if (!store_writable(sema, st, target, t)) return;
  if (is_tensor(v) && partial_overlap(t, v)) {
    diag_error(sema->cx, st->oploc, "unsupported operation: some elements of the input tensor and the written-to "
               "tensor refer to a single memory location. Please clone() the tensor before performing the operation.");
    return;
  }
  if (binop >= 0) {
    TD_ASSERT(binop <= BIN_DIV);  // the others became '=' of the op's result (aug_other)
    Op op = aug_op(binop);
    DType dt;
    if (!binary_dtype(sema, st->oploc, op, t, v, &dt)) return;
    if (!dtype_can_cast(dt, t->dtype)) {
      diag_error(sema->cx, st->oploc, "result type %s can't be cast to the desired output type %s", torch_name(dt),
                 torch_name(t->dtype));
      return;
    }
    if (is_tensor(v)) {
      int nd = t->view.ndim;
      int64_t shape[TD_MAX_DIMS];
      memcpy(shape, t->view.shape, sizeof(int64_t) * (size_t)nd);
      if (!broadcast(sema, st->oploc, &nd, shape, v->view.ndim, v->view.shape)) return;
      if (!same_shape(nd, shape, t->view.ndim, t->view.shape)) {
        diag_error(sema->cx, st->oploc, "output with shape %s doesn't match the broadcast shape %s",
                   shape_str(sema, t->view.ndim, t->view.shape), shape_str(sema, nd, shape));
        return;
      }
    }
    st->attr.aug = op;
  } else {
    if (is_tensor(v)) {  // PyTorch's setitem drops leading size-1 dims of the value, then expands
      TType tmp = *v;
      while (tmp.view.ndim > t->view.ndim && tmp.view.shape[0] == 1) tmp.view = view_select(tmp.view, 0, 0);
      View out;
      if (!expand_to(sema, rhs->loc, &tmp, t->view.ndim, t->view.shape, &out)) return;
    }
    st->attr.aug = OP_COUNT;
  }
  st->bi = &def_store.b;
  Ast *ops[2] = {target, rhs};
  set_operands(sema, st, ops, 2);
  st->ty = t;
}

// ============================================================================
// Statements and function bodies
// ============================================================================
// return v, ...: against the declared results (a None among them takes None); a function
// declared without a result (no arrow, -> None) returns None: `return` or `return None`.
static TType *tuple_of(Sema *sema, TType **ts, int n) {
  TType *t = ty_new(sema, TY_TUPLE);
  t->nelem = n;
  t->elems = ts;
  return t;
}

static void check_return(Sema *sema, Body *body, Ast *st) {
  Ast *fn = body->fn;
  int n = st->list.len;
  TType **ts = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(n + 1));
  bool bad = false;
  for (int i = 0; i < n; i++) {
    ts[i] = check_expr(sema, st->list.data[i]);
    if (is_poison(ts[i])) bad = true;
  }
  bool spread = n == 1 && ts[0]->kind == TY_TUPLE;  // return g(x), where g returns a tuple
  if (spread) {
    n = ts[0]->nelem;
    ts = ts[0]->elems;
  }
  if (fn->rets.len == 0 && n == 1 && ts[0]->kind == TY_NONE) n = 0;  // return None
  if ((fn->rets.len == 0 && (fn->op == DEF_LOCAL || fn != sema->entry)) || any_result(fn)) {  // a def inside a function
    // or an inlined helper, without an arrow: Python's
    body->ret = bad ? poison(sema) : n == 0 ? ty_new(sema, TY_NONE) : spread || st->list.len == 1 ? st->list.data[0]->ty
                                                                       : tuple_of(sema, ts, n);
    return;
  }
  if (!bad && n != fn->rets.len) {
    if (fn->rets.len == 0)
      diag_error(sema->cx, st->loc, "'%s' returns %d value%s but is declared without a result (it returns None)",
                 fn->name, n, n == 1 ? "" : "s");
    else
      diag_error(sema->cx, st->loc, "'%s' returns %d value%s but its type declares %d", fn->name, n,
                 n == 1 ? "" : "s", fn->rets.len);
    bad = true;
  }
  for (int i = 0; i < n && i < fn->rets.len && !bad; i++) {
    Ast *v = st->list.data[spread ? 0 : i];
    if (fn->rets.data[i]->kind == AST_NONE) {
      if (ts[i]->kind != TY_NONE) {
        diag_error(sema->cx, v->loc, "'%s' is declared to return None here, not %s", fn->name, py_type_name(ts[i]));
        diag_note(sema->cx, fn->rets.data[i]->loc, "declared here");
        bad = true;
      }
      continue;
    }
    if (fn->rets.data[i]->kind == AST_SCALAR_TYPE) {  // -> torch.Tensor: any tensor (declare_sig checked the word)
      if (!is_tensor(ts[i])) {
        diag_error(sema->cx, v->loc, "'%s' must return a tensor, not a %s", fn->name, py_type_name(ts[i]));
        bad = true;
      }
      continue;
    }
    TType *want = param_type(sema, fn->rets.data[i]);
    if (is_poison(want)) {
      bad = true;
    } else if (!is_tensor(ts[i])) {
      diag_error(sema->cx, v->loc, "'%s' must return a tensor %s, not a %s", fn->name, type_str(sema, want),
                 py_type_name(ts[i]));
      bad = true;
    } else if (ts[i]->dtype != want->dtype ||
               !same_shape(ts[i]->view.ndim, ts[i]->view.shape, want->view.ndim, want->view.shape)) {
      diag_error(sema->cx, v->loc, "return type mismatch: '%s' is declared to return %s but this is %s", fn->name,
                 type_str(sema, want), type_str(sema, ts[i]));
      diag_note(sema->cx, fn->rets.data[i]->loc, "declared here");
      bad = true;
    }
  }
  if (bad) {
    body->ret = poison(sema);
  } else if (fn->rets.len == 0) {
    body->ret = ty_new(sema, TY_NONE);
  } else if (n == 1 && !fn->ret_tuple) {
    body->ret = ts[0];
  } else {
    TType *t = ty_new(sema, TY_TUPLE);
    t->nelem = n;
    t->elems = ts;
    body->ret = t;
  }
  st->ty = body->ret;
}

// ============================================================================
// assert, torch._assert, raise
// ============================================================================
static const BuiltinDef def_assert = {{"assert", BK_NODE, OP_ASSERT, "", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};

// "AssertionError: msg" (msg NULL or empty: "AssertionError"); NULL after an error in msg.
static const char *assertion_text(Sema *sema, Ast *msg) {
  if (!msg) return "AssertionError";
  TType *m = msg->ty ? msg->ty : check_expr(sema, msg);
  if (is_poison(m)) return NULL;
  const char *s = py_str(sema, m, false, msg->loc);
  if (!s) return NULL;
  return *s ? arena_printf(&sema->cx->arena, "AssertionError: %s", s) : "AssertionError";
}

bool check_assertion(Sema *sema, Ast *cond, Ast *msg, Ast **node) {
  *node = NULL;
  TType *c = cond->ty ? cond->ty : check_expr(sema, cond);
  if (is_poison(c)) return false;
  if (!is_tensor(c)) {
    bool holds;
    if (!truth_value(sema, cond, &holds)) return false;
    if (holds) return true;  // the message is not evaluated, as in Python
    const char *text = assertion_text(sema, msg);
    if (text) diag_error(sema->cx, cond->loc, "%s", text);
    return false;
  }
  if (view_numel(c->view) != 1) {
    diag_error(sema->cx, cond->loc, "Boolean value of Tensor with more than one value is ambiguous");
    return false;
  }
  const char *text = assertion_text(sema, msg);  // a run-time check: its message made now
  if (!text) return false;
  size_t len = strlen(text), k = 0;
  char *esc = arena_alloc(&sema->cx->arena, 2 * len + 1);  // the kernel's message is a format: % doubled
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '%') esc[k++] = '%';
    esc[k++] = text[i];
  }
  Ast *n = ast_new(sema->cx, AST_CALL, cond->loc);
  n->name = "assert";
  n->bi = &def_assert.b;
  set_operand1(sema, n, cond);
  n->attr.msg = esc;
  n->ty = ty_fresh(sema, DT_BOOL, c->view.ndim, c->view.shape);
  *node = n;
  return true;
}

// assert cond[, msg]; raise E(msg) (lhs NULL): reached, it is the located error, and what
// follows is not reached.
static void check_assert(Sema *sema, Body *body, Ast *st) {
  if (st->lhs) {
    Ast *node;
    if (check_assertion(sema, st->lhs, st->rhs, &node) && node) set_operand1(sema, st, node);
    return;
  }
  Ast *x = st->rhs;  // raise ValueError(msg), raise ValueError
  const char *name = x->kind == AST_CALL && !x->lhs ? x->name : x->kind == AST_NAME ? x->name : NULL;
  const char *text = name;
  if (x->kind == AST_CALL && !x->lhs && x->list.len) {
    Ast *m = x->list.data[0];
    TType *t = check_expr(sema, m->kind == AST_KWARG ? m->rhs : m);
    const char *s = is_poison(t) ? NULL : py_str(sema, t, false, m->loc);
    if (s && *s) text = arena_printf(&sema->cx->arena, "%s: %s", name, s);
    else if (!s) text = NULL;
  }
  if (!name) diag_error(sema->cx, x->loc, "exceptions must derive from BaseException");
  else if (text) diag_error(sema->cx, st->loc, "%s", text);
  body->returned = true;  // nothing after it runs
  body->ret = poison(sema);
}

// The items of *v for n targets, the one at `star` starred (-1: none), as Python unpacks:
// a tensor over its first dim (*v becomes x.unbind()), a tuple or list of exactly n
// elements (at least n - 1 with a star). Python's messages: a 0-d tensor at vloc, the
// others at tloc.
static bool unpack_items(Sema *sema, Ast **v, int n, int star, Loc vloc, Loc tloc, Ast ***items, int *ni) {
  const TType *t = (*v)->ty;
  if (is_tensor(t) && t->view.ndim == 0) {
    diag_error(sema->cx, vloc, "iteration over a 0-d tensor");
    return false;
  }
  if (is_tensor(t)) {  // a, b = x iterates over x's first dim: x.unbind()
    *v = unbind_ast(sema, *v, *v);
    t = (*v)->ty;
  }
  if (is_poison(t)) return false;
  if (t->kind != TY_TUPLE && t->kind != TY_LIST) {
    diag_error(sema->cx, tloc, "cannot unpack non-iterable %s object", py_type_name(t));
    return false;
  }
  int m = t->nelem;
  if (star >= 0 && m < n - 1) {
    diag_error(sema->cx, tloc, "not enough values to unpack (expected at least %d, got %d)", n - 1, m);
    return false;
  }
  if (star < 0 && m != n) {
    if (m > n) diag_error(sema->cx, tloc, "too many values to unpack (expected %d)", n);
    else diag_error(sema->cx, tloc, "not enough values to unpack (expected %d, got %d)", n, m);
    return false;
  }
  return seq_items(sema, *v, items, ni);
}

// The names of target t bound to poison, a poisoned value each in vals.
static void poison_target(Sema *sema, const Ast *t, AstList *vals) {
  if (t->kind == AST_STARRED) t = t->lhs;
  if (t->kind == AST_NAME) {
    Ast *p = ast_new(sema->cx, AST_NONE, t->loc);
    p->ty = poison(sema);
    bind_expr(sema, t->name, p, t->loc);
    vec_push(&sema->cx->arena, vals, p);
    return;
  }
  for (int i = 0; i < t->list.len; i++) poison_target(sema, t->list.data[i], vals);
}

static void bind_target(Sema *sema, Ast *t, Ast *v, bool at_target, AstList *vals);

// The n targets ts unpack v, each name's value pushed on vals in order; a starred name
// gets a list of the items its place covers, as in Python.
static void unpack_into(Sema *sema, Ast **ts, int n, Ast *v, Loc tloc, bool at_target, AstList *vals) {
  int star = -1;
  for (int i = 0; i < n; i++)
    if (ts[i]->kind == AST_STARRED) star = i;
  Ast **items;
  int ni;
  if (is_poison(v->ty) || !unpack_items(sema, &v, n, star, at_target ? tloc : v->loc, tloc, &items, &ni)) {
    for (int i = 0; i < n; i++) poison_target(sema, ts[i], vals);
    return;
  }
  int rest = ni - (n - 1), k = 0;
  for (int i = 0; i < n; i++) {
    if (i == star) {
      Ast *l = part_seq(sema, ts[i], TY_LIST, items + k, rest);
      bind_expr(sema, ts[i]->lhs->name, l, ts[i]->lhs->loc);
      vec_push(&sema->cx->arena, vals, l);
      k += rest;
    } else {
      bind_target(sema, ts[i], items[k++], at_target, vals);
    }
  }
}

static void bind_target(Sema *sema, Ast *t, Ast *v, bool at_target, AstList *vals) {
  if (t->kind == AST_NAME) {
    bind_expr(sema, t->name, v, t->loc);
    vec_push(&sema->cx->arena, vals, v);
    return;
  }
  unpack_into(sema, t->list.data, t->list.len, v, t->loc, at_target, vals);
}

static void bind_group(Sema *sema, AstList *ts, Ast *v, Loc tloc, bool at_target, AstList *vals) {
  if (ts->len == 1) bind_target(sema, ts->data[0], v, at_target, vals);
  else unpack_into(sema, ts->data, ts->len, v, tloc, at_target, vals);
}

void assign_targets(Sema *sema, Ast *st, Loc tloc, bool at_target) {
  AstList vals = {0};
  bind_group(sema, &st->list, st->rhs, tloc, at_target, &vals);
  for (int g = 0; g < st->body.len; g++)
    bind_group(sema, &st->body.data[g]->list, st->rhs, tloc, at_target, &vals);
  st->operands = vals.data;
  st->noperands = vals.len;
  st->ty = st->rhs->ty;
}

// Whether name is declared global in the function being checked (scope_decl).
static bool is_global(Sema *sema, const char *name) {
  return find_local(sema, arena_printf(&sema->cx->arena, "global %s", name)) != NULL;
}

// Whether type t holds a tensor (at any depth of its sequences).
static bool holds_tensor(const TType *t, int depth) {
  if (t->kind == TY_TENSOR) return true;
  for (int i = 0; depth < 32 && (t->kind == TY_TUPLE || t->kind == TY_LIST || t->kind == TY_DICT) && i < t->nelem; i++)
    if (holds_tensor(t->elems[i], depth + 1)) return true;
  return false;
}

// name = v (checked) of a name declared global: the module-level name rebound, as Python's
// global statement makes it (a constant of the file, read by every function checked after).
static void global_assign(Sema *sema, Ast *st, const Ast *name, Ast *v) {
  if (is_poison(v->ty)) return;
  if (holds_tensor(v->ty, 0)) {
    diag_error(sema->cx, v->loc, "a module-level name holds compile-time values: '%s', declared global, cannot hold "
               "a tensor (a tensor's values are known only when the program runs)", name->name);
    return;
  }
  Const *c = find_const(sema, name->name);
  if (!c) {
    vec_push(&sema->cx->arena, &sema->consts, ((Const){name->name, v->ty, name->loc, NULL}));
    c = &sema->consts.data[sema->consts.len - 1];
  }
  c->ty = v->ty;
  c->src = seq_now(sema, v);
  st->ty = v->ty;
}

void reset_globals(Sema *sema) {
  if (sema->nfile_consts < 0) {
    sema->nfile_consts = sema->consts.len;
    if (!sema->consts.len) return;
    sema->file_consts = arena_alloc(&sema->cx->arena, sizeof(Const) * (size_t)sema->consts.len);
    memcpy(sema->file_consts, sema->consts.data, sizeof(Const) * (size_t)sema->consts.len);
    return;
  }
  sema->consts.len = sema->nfile_consts;  // a name first bound by a global statement: unbound again
  if (sema->nfile_consts) memcpy(sema->consts.data, sema->file_consts, sizeof(Const) * (size_t)sema->nfile_consts);
}

// pass; nonlocal a, b (sema_lambda.c renamed the names where the def is called: nothing to
// do, or Python's error where there is no enclosing def); global c: c a module-level name in
// the rest of this function (a name "global c" no source can spell marks it).
static void scope_decl(Sema *sema, Body *body, Ast *st) {
  if (!st->name) return;
  for (int i = 0; i < st->list.len; i++) {
    const Ast *n = st->list.data[i];
    if (!strcmp(st->name, "nonlocal")) {
      if (n->name[0] != '(') diag_error(sema->cx, n->loc, "no binding for nonlocal '%s' found", n->name);
      continue;
    }
    Sym *l = find_local(sema, n->name);
    if (l && !is_global(sema, n->name)) {
      diag_error(sema->cx, n->loc, "name '%s' is assigned to before global declaration", n->name);
      continue;
    }
    bind_name(sema, arena_printf(&sema->cx->arena, "global %s", n->name), ty_new(sema, TY_NONE), n->loc);
  }
  (void)body;
}

static void check_assign(Sema *sema, Ast *st) {
  check_expr(sema, st->rhs);
  const Ast *t = st->list.len == 1 && !st->body.len ? st->list.data[0] : NULL;
  if (t && t->kind == AST_NAME && is_global(sema, t->name)) {
    global_assign(sema, st, st->list.data[0], st->rhs);
    set_operand1(sema, st, st->rhs);
    return;
  }
  assign_targets(sema, st, st->oploc, false);
}

static void check_augassign(Sema *sema, Ast *st) {
  sema->mask_target = true;
  TType *t = check_expr(sema, st->lhs);
  sema->mask_target = false;
  TType *v = check_expr(sema, st->rhs);
  if (is_poison(t) || is_poison(v)) return;
  if (is_scalar(t) && is_scalar(v)) {  // n += 1 rebinds a Python scalar
    TType *r = fold_binary(sema, st->oploc, st->op, t, v);
    if (r && st->lhs->kind == AST_NAME && is_global(sema, st->lhs->name)) {  // global n; n += 1
      Ast *val = ast_new(sema->cx, AST_NONE, st->loc);
      val->ty = r;
      global_assign(sema, st, st->lhs, val);
      return;
    }
    if (r) bind_name(sema, st->lhs->name, r, st->lhs->loc);
    else bind_name(sema, st->lhs->name, poison(sema), st->lhs->loc);
    st->ty = r;
    return;
  }
  if (is_scalar(t) && is_tensor(v) && st->op == BIN_MATMUL) {
    diag_error(sema->cx, st->oploc, "unsupported operand type(s) for @=: '%s' and 'Tensor'", py_type_name(t));
    bind_name(sema, st->lhs->name, poison(sema), st->lhs->loc);
    return;
  }
  if (is_scalar(t) && is_tensor(v)) {  // n += x: as Python's int, n = n + x, a new tensor
    Op op = aug_op(st->op);
    Ast *name = st->lhs, *sum = node_binary(sema, st, op, name, st->rhs);
    sum->loc = st->loc;
    Ast *a = ast_new(sema->cx, AST_ASSIGN, st->loc);  // lowered in its place (st->unrolled)
    vec_push(&sema->cx->arena, &a->list, ast_name(sema->cx, name->name, name->loc));
    a->rhs = sum;
    set_operand1(sema, a, sum);
    st->unrolled = (AstList){0};
    vec_push(&sema->cx->arena, &st->unrolled, a);
    bind_name(sema, name->name, sum->ty, name->loc);
    return;
  }
  if (t->kind == TY_TUPLE || t->kind == TY_LIST) {  // xs += [y]: a list extended in place
    st->unrolled = (AstList){0};
    if (!seq_augassign(sema, st)) bind_name(sema, st->lhs->name, poison(sema), st->lhs->loc);
    return;
  }
  if (aug_other(sema, st, st->lhs)) check_store_common(sema, st, st->lhs, st->rhs, st->op);
}

// The dict that d[k1][k2] = v stores into: d[k1] of a local dict d (at any depth), checked
// on a clone (the store's target is checked as a tensor's when it is none); NULL for another.
static Ast *inner_dict(Sema *sema, const Ast *base) {
  const Ast *r = base;
  while (r->kind == AST_INDEX) r = r->lhs;
  Sym *d = r != base && r->kind == AST_NAME ? find_local(sema, r->name) : NULL;
  if (!d || d->ty->kind != TY_DICT) return NULL;
  Ast *probe = ast_clone(sema->cx, base);
  TType *t = check_expr(sema, probe);
  return is_poison(t) || t->kind == TY_DICT ? probe : NULL;
}

// Whether base (of a store base[i] = v) names an nn container: a local, or an attribute of an
// object a local holds (self.layers), found without checking it (which reports its errors).
static bool container_base(Sema *sema, const Ast *base) {
  const Ast *n = base->kind == AST_ATTR ? base->lhs : base;
  Sym *s = n->kind == AST_NAME ? find_local(sema, n->name) : NULL;
  if (!s || base->kind == AST_NAME) return s && is_container(s->ty);
  int k = base->kind == AST_ATTR && s->ty->kind == TY_MODULE ? obj_find(s->ty->attrs, base->name) : -1;
  return k >= 0 && is_container(s->ty->attrs->ty[k]);
}

// The nn container that base[i] = v stores into when base reaches it through others (ml[0][0] = m,
// self.blocks[1].layers[0] = m): base checked on a clone, from a local; NULL for another.
static Ast *inner_container(Sema *sema, const Ast *base) {
  const Ast *r = base;
  while (r->kind == AST_INDEX || r->kind == AST_ATTR) r = r->lhs;
  Sym *s = r->kind == AST_NAME ? find_local(sema, r->name) : NULL;
  if (!s || (!is_container(s->ty) && !is_instance(s->ty)) || (r == base && !derived_modules(sema, s->ty))) return NULL;
  Ast *probe = ast_clone(sema->cx, base);
  TType *t = check_expr(sema, probe);
  if (derived_modules(sema, t)) return modules_node(sema, probe);  // blocks[0] = m of class Blocks(nn.ModuleList)
  return is_poison(t) || is_container(t) ? probe : NULL;
}

static void check_store(Sema *sema, Ast *st) {
  Ast *base = st->lhs->kind == AST_INDEX ? st->lhs->lhs : NULL;
  if (base && container_base(sema, base)) {  // c[i] = m of an nn container (sema_container.c)
    if (!is_poison(check_expr(sema, base))) container_store(sema, st);
    return;
  }
  Ast *held = base ? inner_container(sema, base) : NULL;
  if (held) {  // ml[0][0] = m: the inner container changed, seen by every holder
    st->lhs->lhs = held;
    if (!is_poison(held->ty)) container_store(sema, st);
    return;
  }
  Sym *d = base && base->kind == AST_NAME ? find_local(sema, base->name) : NULL;
  if (d && d->ty->kind == TY_DICT) {  // d[k] = v: the dict with k's value (sema_dict.c)
    base->ty = d->ty;
    if (!is_poison(check_expr(sema, st->rhs))) dict_store(sema, st, st->lhs, st->rhs);
    return;
  }
  Ast *inner = base ? inner_dict(sema, base) : NULL;
  if (inner) {  // cache["layer"]["k"] = v: the inner dict changed, seen by every holder
    st->lhs->lhs = inner;
    if (!is_poison(inner->ty) && !is_poison(check_expr(sema, st->rhs))) dict_store(sema, st, st->lhs, st->rhs);
    return;
  }
  sema->mask_target = true;  // x[mask] = v: the mask's store, not a masked_select
  check_expr(sema, st->lhs);
  sema->mask_target = false;
  if (is_poison(check_expr(sema, st->rhs)) || is_poison(st->lhs->ty)) return;
  if (aug_other(sema, st, st->lhs)) check_store_common(sema, st, st->lhs, st->rhs, st->op);
}

static void check_stmt(Sema *sema, Body *body, Ast *st) {
  switch (st->kind) {
  case AST_ASSIGN: check_assign(sema, st); break;
  case AST_AUGASSIGN: check_augassign(sema, st); break;
  case AST_STORE: check_store(sema, st); break;
  case AST_RETURN:
    check_return(sema, body, st);
    body->returned = true;
    break;
  case AST_ASSERT: check_assert(sema, body, st); break;
  case AST_PASS: scope_decl(sema, body, st); break;  // pass; nonlocal a; global b
  case AST_FN: local_def(sema, st); break;  // a def inside a function (sema_lambda.c)
  case AST_EXPR:  // its value unused: what it does is an in-place update (x.clamp_(min=0))
    if (st->lhs->kind == AST_CALL && !st->lhs->lhs && !strcmp(st->lhs->name, "del")) {  // del a, xs[i]
      st->ty = st->lhs->ty = seq_del(sema, st->lhs) ? ty_new(sema, TY_NONE) : poison(sema);
      break;
    }
    st->ty = check_expr(sema, st->lhs);
    break;
  case AST_FOR: check_for(sema, body, st); break;
  case AST_IF: check_if(sema, body, st); break;
  case AST_WHILE: check_while(sema, body, st); break;
  case AST_BREAK: case AST_CONTINUE:  // Python's SyntaxErrors
    if (body->loops == 0)
      diag_error(sema->cx, st->loc, st->kind == AST_BREAK ? "'break' outside loop" : "'continue' not properly in loop");
    else
      body->jump = st->kind;
    break;
  default: diag_error(sema->cx, st->loc, "expected a statement"); break;
  }
}

// A return of this block makes what follows it an error, as it can never run; a return
// reached inside a loop or a branch (static control flow, sema_ctl.c) ends the function
// there, and the rest of the block is not reached, so not checked. So for a break or
// continue: the block ends at the statement that reached it (the list is cut there, so
// that lowering runs what was reached), and a statement right after one is an error.
void check_block(Sema *sema, Body *body, AstList *stmts) {
  bool own = false, warned = false;
  for (int i = 0; i < stmts->len; i++) {
    Ast *st = stmts->data[i];
    if (body->jump != AST_COUNT) {
      const Ast *prev = stmts->data[i - 1];
      if (prev->kind == AST_BREAK || prev->kind == AST_CONTINUE)
        diag_error(sema->cx, st->loc, "unreachable statement after '%s'", ast_kind_name(prev->kind));
      stmts->len = i;
      break;
    }
    if (body->returned && !own) break;
    if (body->returned && !warned) {
      diag_error(sema->cx, st->loc, "unreachable statement after 'return'");
      warned = true;
    }
    check_stmt(sema, body, st);
    if (st->kind == AST_RETURN) own = true;
  }
}

// Check fn's body with its parameters bound to params; returns what it returns.
TType *check_body(Sema *sema, Ast *fn, TType **params) {
  Sym *saved = sema->scope;
  sema->scope = hidden_syms(sema, saved);  // a closure's captures, passed in a lambda (sema_lambda.c)
  Ast **srcs = sema->param_src;
  sema->param_src = NULL;
  for (int i = 0; i < fn->list.len; i++) {
    bind_name(sema, fn->list.data[i]->name, params[i], name_loc(fn->list.data[i]));
    const TyKind k = params[i]->kind;
    if (srcs && (k == TY_TUPLE || k == TY_LIST || k == TY_DICT)) sema->scope->src = srcs[i];  // a helper's tuple parameter
  }
  Body body = {fn, NULL, false, 0, AST_COUNT};
  check_block(sema, &body, &fn->body);
  if (!body.returned && (fn->rets.len == 0 || any_result(fn))) {  // falling off the end returns None, as Python's
    body.ret = ty_new(sema, TY_NONE);
  } else if (!body.returned) {  // at the closing brace, where the return is missing
    Loc brace = fn->loc;
    if (brace.end > brace.begin) brace.begin = brace.end - 1;
    diag_error(sema->cx, brace, "function '%s' must end with a 'return'", fn->name);
  }
  // a def's nonlocal names ("(nonlocal 4) x", sema_lambda.c) and the attributes of objects it
  // set ("(attr 5) weight", sema_object.c): the caller reads them after the call
  Sym *outlive = NULL;
  for (Sym *s = sema->scope; s; s = s->next)
    if ((!strncmp(s->name, "(nonlocal ", 10) || !strncmp(s->name, "(attr ", 6)) && find_local(sema, s->name) == s) {
      Sym *c = arena_alloc(&sema->cx->arena, sizeof *c);
      *c = *s;
      c->next = outlive;
      outlive = c;
    }
  sema->scope = saved;
  for (Sym *s = outlive; s; s = s->next) {
    bind_name(sema, s->name, s->ty, s->loc);
    sema->scope->src = s->src;
  }
  return body.ret ? body.ret : poison(sema);
}
