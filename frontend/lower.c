// frontend/lower.c: a checked function -> Graph. View ops are free: a BK_VIEW call
// becomes a new Value with the View sema computed over the same Buffer, so no node
// and no kernel can ever come from it. Materializing ops (BK_NODE) become one Node
// each; a call the op library builds (BK_BUILD) runs its builder (ir/build.h) over its
// operands' values. Calls of user functions are inlined: their type-checked clone (e->inlined)
// is lowered in a new scope with the parameters bound to the argument values.
// Lowering reports nothing: sema has already said everything there is to say.
#include "frontend/frontend.h"

#include <string.h>

typedef VEC(Value *) ValueList;

// A lowered Python sequence: element i is a tensor or number (v[i]), a sequence
// (sub[i]), or neither (None, a dtype, a string: both NULL).
typedef struct LSeq LSeq;
struct LSeq {
  int n;
  Value **v;
  LSeq **sub;
};

typedef struct Binding Binding;
struct Binding {
  const char *name;
  Value *value;  // a tensor or number
  LSeq *seq;     // or a sequence
  Binding *next;
};

// An expression's value once lowered, keyed by its node. Each node of the checked AST
// is lowered where its statement runs, and only there: a later reader of the same node
// (a list element read back as xs[0], a part that builders share, the elements of a
// loop's iterable) gets that value, not the name's binding at the later point. So a
// list holds values, as Python's does: `xs = [x]; x = x * 2; xs[0]` is the first x.
typedef struct Memo {
  const Ast *key;
  Value *value;
  LSeq *seq;
  Value **all;  // a BK_BUILD call: its n results (value is the first)
  int n;
} Memo;

// The results of a function body: one per declared result (NULL for a None result).
typedef struct Rets {
  ValueList vals;
  VEC(LSeq *) seqs;  // the same length: a sequence result (a helper's `return x, (k, v)`), or NULL
  bool done;  // a return was reached
} Rets;

typedef struct Lower {
  Ctx *cx;
  const Program *prog;
  Graph *g;
  Binding *scope;  // innermost first
  int depth;       // inlining depth: bindings are recorded only at depth 0
  Memo *memo;      // open addressing, a power of two slots
  int nmemo, cap;
  VEC(const Ast *) comps;  // the comprehensions lowered (their variables bound, then restored)
} Lower;

static Value *lower_expr(Lower *lw, const Ast *e);
static LSeq *lower_seq(Lower *lw, const Ast *e);
static void lower_block(Lower *lw, const AstList *stmts, Rets *rets);
static void lower_object(Lower *lw, const Ast *e);
static void lower_callee(Lower *lw, const Ast *e);

static bool is_seq(const TType *t) { return t->kind == TY_TUPLE || t->kind == TY_LIST || t->kind == TY_DICT; }
static bool is_value(const TType *t) { return t->kind == TY_TENSOR || t->kind == TY_SCALAR; }

// Rebinding a name unlinks its older binding: the scope holds each name once (sema_expr.c's
// bind_name does the same), so lookups do not grow with a body's length.
static void bind(Lower *lw, const char *name, Value *v, LSeq *seq) {
  for (Binding **p = &lw->scope; *p; p = &(*p)->next)
    if (strcmp((*p)->name, name) == 0) {
      *p = (*p)->next;
      break;
    }
  Binding *b = arena_alloc(&lw->cx->arena, sizeof *b);
  *b = (Binding){name, v, seq, lw->scope};
  lw->scope = b;
}

static void unbind(Lower *lw, const char *name) {
  for (Binding **p = &lw->scope; *p; p = &(*p)->next)
    if (strcmp((*p)->name, name) == 0) {
      *p = (*p)->next;
      return;
    }
}

static Binding *lookup(Lower *lw, const char *name) {
  for (Binding *b = lw->scope; b; b = b->next)
    if (strcmp(b->name, name) == 0)
      return b;
  return NULL;
}

static size_t memo_slot(const Lower *lw, const Ast *e) {
  return ((uintptr_t)e >> 4) * 0x9E3779B97F4A7C15ull & (size_t)(lw->cap - 1);
}

static Memo *memo_get(const Lower *lw, const Ast *e) {
  if (!lw->cap) return NULL;
  for (size_t i = memo_slot(lw, e);; i = (i + 1) & (size_t)(lw->cap - 1)) {
    if (!lw->memo[i].key) return NULL;
    if (lw->memo[i].key == e) return &lw->memo[i];
  }
}

static void memo_add(Lower *lw, Memo m) {
  if (2 * (lw->nmemo + 1) > lw->cap) {
    Memo *old = lw->memo;
    int oldcap = lw->cap;
    lw->cap = oldcap ? 2 * oldcap : 64;
    lw->memo = arena_alloc(&lw->cx->arena, sizeof(Memo) * (size_t)lw->cap);
    lw->nmemo = 0;
    for (int i = 0; i < oldcap; i++)
      if (old[i].key) memo_add(lw, old[i]);
  }
  size_t i = memo_slot(lw, m.key);
  while (lw->memo[i].key) i = (i + 1) & (size_t)(lw->cap - 1);
  lw->memo[i] = m;
  lw->nmemo++;
}

static void memo_put(Lower *lw, const Ast *e, Value *v, LSeq *seq) { memo_add(lw, (Memo){e, v, seq, NULL, 0}); }

static LSeq *seq_new(Lower *lw, int n) {
  LSeq *s = arena_alloc(&lw->cx->arena, sizeof *s);
  s->n = n;
  s->v = arena_alloc(&lw->cx->arena, sizeof(Value *) * (size_t)(n + 1));
  s->sub = arena_alloc(&lw->cx->arena, sizeof(LSeq *) * (size_t)(n + 1));
  return s;
}

static Value *scalar_of(Lower *lw, const TType *t, Loc loc) {
  return graph_scalar(lw->g, t->dtype, t->fval, t->ival, loc);
}

// The declared shape of a parameter: from its type when sema gave the parameter one,
// else from the folded dims of its AST_TYPE.
static void param_shape(const Ast *p, int *ndim, int64_t *shape) {
  if (p->ty && p->ty->kind == TY_TENSOR) {
    *ndim = p->ty->view.ndim;
    memcpy(shape, p->ty->view.shape, sizeof(int64_t) * (size_t)*ndim);
    return;
  }
  *ndim = p->type->list.len;
  for (int i = 0; i < *ndim; i++) {
    const Ast *d = p->type->list.data[i];
    TD_ASSERT(d->ty && d->ty->kind == TY_SCALAR);
    shape[i] = d->ty->ival;
  }
}

// A call of a user function, lowered once (its results memoized on the call): its
// arguments (sema's operands, in parameter order: a Python scalar given to a 0-d tensor
// parameter already wrapped, a None left out) bound to the clone's parameters, its body
// lowered in a scope of its own. The results: one element per declared result.
static LSeq *lower_call(Lower *lw, const Ast *call) {
  Memo *m = memo_get(lw, call);
  if (m) return m->seq;
  const Ast *fn = call->inlined;
  TD_ASSERT(call->noperands == fn->list.len);
  int np = fn->list.len;
  Rets none = {0};
  lower_block(lw, &call->unrolled, &none);  // a lambda argument's captures (sema's lambda_closure), a local
                                            // def's captures and arguments (its operands read them)
  Value **args = arena_alloc(&lw->cx->arena, sizeof(Value *) * (size_t)(np + 1));
  for (int j = 0; j < np; j++) {
    const Ast *a = call->operands[j];
    args[j] = a && is_value(a->ty) ? lower_expr(lw, a) : NULL;
    if (a && a->ty && a->ty->kind == TY_MODULE) lower_object(lw, a);  // f(nn.Embedding(n, d, _weight=w)): its making
  }
  LSeq **seqs = arena_alloc(&lw->cx->arena, sizeof(LSeq *) * (size_t)(np + 1));
  for (int j = 0; j < np; j++)  // a tuple, list or dict parameter: the caller's object
    seqs[j] = call->operands[j] && is_seq(call->operands[j]->ty) ? lower_seq(lw, call->operands[j]) : NULL;
  Binding *saved = lw->scope, **tail = &lw->scope;
  lw->scope = NULL;
  for (const Binding *b = saved; b; b = b->next) {  // the hidden names (captures), seen in the body
    if (b->name[0] != '(') continue;
    *tail = arena_alloc(&lw->cx->arena, sizeof **tail);
    **tail = (Binding){b->name, b->value, b->seq, NULL};
    tail = &(*tail)->next;
  }
  for (int j = 0; j < np; j++)
    if (args[j] || seqs[j]) bind(lw, fn->list.data[j]->name, args[j], seqs[j]);
  lw->depth++;
  Rets rets = {0};
  lower_block(lw, &fn->body, &rets);
  lw->depth--;
  Binding *outlive = NULL;  // a def's nonlocal names, objects' attributes (sema's check_body): the caller's too
  for (const Binding *b = lw->scope; b; b = b->next) {
    if (strncmp(b->name, "(nonlocal ", 10) && strncmp(b->name, "(attr ", 6)) continue;
    Binding *c = arena_alloc(&lw->cx->arena, sizeof *c);
    *c = (Binding){b->name, b->value, b->seq, outlive};
    outlive = c;
  }
  lw->scope = saved;
  for (const Binding *b = outlive; b; b = b->next) bind(lw, b->name, b->value, b->seq);
  lower_block(lw, &call->body, &none);  // the caller's lists and dicts the body changed, rebound (sema's inline_call)
  LSeq *r = seq_new(lw, rets.vals.len);
  for (int i = 0; i < rets.vals.len; i++) r->v[i] = rets.vals.data[i], r->sub[i] = rets.seqs.data[i];
  memo_put(lw, call, NULL, r);
  return r;
}

// e selects one element of the sequence e->lhs (t[0], t.values), its expression (when sema
// knows it) the one operand; a slice (t[1:]) is a sequence of its own.
static bool is_element(const Ast *e) {
  if ((e->kind != AST_INDEX && e->kind != AST_ATTR) || !e->lhs || !e->lhs->ty || !is_seq(e->lhs->ty)) return false;
  return e->kind == AST_ATTR || e->list.len != 1 || e->list.data[0]->kind != AST_SLICE;
}

// The statements of a comprehension (its loop variables bound, each element computed as
// an AST_EXPR after its iteration's bindings), once, in a scope of their own: the names
// they bind are restored afterwards, as Python's comprehension does not leak them.
static void lower_comp(Lower *lw, const Ast *e) {
  for (int i = 0; i < lw->comps.len; i++)
    if (lw->comps.data[i] == e) return;
  vec_push(&lw->cx->arena, &lw->comps, e);
  typedef struct Saved {
    const char *name;
    bool bound;
    Value *value;
    LSeq *seq;
  } Saved;
  VEC(Saved) saved = {0};
  for (int i = 0; i < e->unrolled.len; i++) {
    const Ast *s = e->unrolled.data[i];
    for (int j = 0; s->kind == AST_ASSIGN && j < s->list.len; j++) {
      const char *name = s->list.data[j]->name;
      bool seen = false;
      for (int k = 0; k < saved.len && !seen; k++) seen = !strcmp(saved.data[k].name, name);
      if (seen) continue;
      Binding *b = lookup(lw, name);
      Saved keep = {name, b != NULL, b ? b->value : NULL, b ? b->seq : NULL};
      vec_push(&lw->cx->arena, &saved, keep);
    }
  }
  Rets none = {0};
  lower_block(lw, &e->unrolled, &none);  // the bindings, each element (an AST_EXPR) after its iteration's
  for (int k = 0; k < saved.len; k++) {
    if (saved.data[k].bound) bind(lw, saved.data[k].name, saved.data[k].value, saved.data[k].seq);
    else unbind(lw, saved.data[k].name);
  }
}

// A node of a complex result (sema_complex.c's complex_supported): cat, stack, a copy, sum
// or mean of complex operands computed on their float pairs (their dims are the pairs'
// but the last); a creation or conversion of real values, the complex (x, 0).
static Value *lower_complex_node(Lower *lw, const Ast *e, Value **srcs, int n) {
  const TType *t = e->ty;
  DType pt = dtype_complex_part(t->dtype);
  View f = view_as_real(view_contiguous(t->view.ndim, t->view.shape));
  NodeAttr none = {0}, at = {0};
  Node *nd;
  if (n && srcs[0]->cplx) {
    nd = graph_node(lw->g, e->bi->op, pt, f.ndim, f.shape, srcs, n, e->attr, e->loc);
  } else {
    Value *parts[2];
    parts[0] = graph_node(lw->g, e->bi->op, pt, t->view.ndim, t->view.shape, srcs, n, e->attr, e->loc)->out;
    parts[1] = graph_node(lw->g, OP_ZEROS, pt, t->view.ndim, t->view.shape, NULL, 0, none, e->loc)->out;
    at.dim = t->view.ndim;
    at.dims = 1u << at.dim;
    nd = graph_node(lw->g, OP_STACK, pt, f.ndim, f.shape, parts, 2, at, e->loc);
  }
  nd->out->cplx = true;
  return nd->out;
}

static Value *lower_node(Lower *lw, const Ast *e) {
  Value *few[8];  // cat and stack take any number of operands
  int n = e->noperands;
  Value **srcs = n <= 8 ? few : arena_alloc(&lw->cx->arena, sizeof *srcs * (size_t)n);
  for (int i = 0; i < n; i++)
    srcs[i] = lower_expr(lw, e->operands[i]);
  const TType *t = e->ty;
  if (op_is_store(e->bi->op)) {  // a store or in-place update yields its target: later reads see the write
    Loc *locs = arena_alloc(&lw->cx->arena, sizeof(Loc) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) locs[i] = e->operands[i]->loc;
    return build_store_node(lw->g, e->bi->op, srcs, n, e->attr, e->loc, locs);
  }
  if (dtype_is_complex(t->dtype)) return lower_complex_node(lw, e, srcs, n);
  Node *nd = graph_node(lw->g, e->bi->op, t->dtype, t->view.ndim, t->view.shape, srcs, n, e->attr, e->loc);
  nd->out->wrapped = t->kind == TY_TENSOR && t->wrapped;  // arithmetic of run-time Python numbers
  return nd->out;
}

static Value *lower_view(Lower *lw, const Ast *e) {
  TD_ASSERT(e->noperands >= 1);
  Value *src = lower_expr(lw, e->operands[0]);
  if (e->needs_copy) {
    NodeAttr none = {0};
    bool cplx = src->cplx;
    Node *copy = graph_node(lw->g, OP_COPY, src->dtype, src->view.ndim, src->view.shape, &src, 1, none, e->loc);
    src = copy->out;
    src->cplx = cplx;
  }
  // A complex result: the view of its float pairs (view_as_complex: the same floats).
  bool cplx = dtype_is_complex(e->ty->dtype);
  View v = cplx ? view_as_real(e->ty->view) : e->ty->view;
  // x.contiguous() of a contiguous x, x.to(its own dtype): the same tensor, not a new value.
  if (view_equal(src->view, v) && src->cplx == cplx)
    return src;
  Value *r = graph_view(lw->g, src, v, e->loc);
  r->cplx = cplx;
  return r;
}

// A call the op library builds: its builder over its operands, each lowered where the
// builder first reads it (ir/build.h); every result, once.
typedef struct Operands {
  Lower *lw;
  const Ast *e;
} Operands;

static Value *operand(void *ctx, int i) {
  Operands *o = ctx;
  return lower_expr(o->lw, o->e->operands[i]);
}

static const Memo *lower_built(Lower *lw, const Ast *e) {
  const Memo *m = memo_get(lw, e);
  if (m) return m;
  lower_callee(lw, e);
  int n = e->noperands;
  BuildIn *in = arena_alloc(&lw->cx->arena, sizeof *in * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) {
    const TType *t = e->operands[i]->ty;
    in[i] = (BuildIn){.dtype = t->dtype, .view = t->view, .scalar = t->kind == TY_SCALAR, .wrapped = t->wrapped,
                      .f = t->fval, .i = t->ival};
  }
  Value **out = arena_alloc(&lw->cx->arena, sizeof(Value *) * 64);
  Operands o = {lw, e};
  Loc name = e->oploc.end > e->oploc.begin ? e->oploc : e->loc;
  int k = build_call(lw->g, e->loc, name, e->bi->build, e->args, n, in, operand, &o, out);
  memo_add(lw, (Memo){e, out[0], NULL, out, k});
  return memo_get(lw, e);
}

// callee(x) of a module object or container made inline (nn.Embedding(n, d, _weight=w)(i), B()(x),
// nn.Sequential(B(), ...)(x)): the callee's making first, the bindings its constructor or __init__ left
// (sema's obj_set, run_init), which the call's value reads. Memoized there.
static void lower_callee(Lower *lw, const Ast *e) {
  if (e->kind != AST_APPLY) return;
  const Ast *c = e->lhs;
  while (is_element(c)) c = c->lhs;  // nn.ModuleList([...])[1](x): the list made
  if (!c->ty || c->kind == AST_NAME || c->kind == AST_NONE) return;  // made where bound; a step of a Sequential's
                                                                      // call (sema's container_call): made already
  if (is_seq(c->ty)) lower_seq(lw, c);  // each module of the container made
  else lower_object(lw, c);
}

// xs.pop(), d.get(k): a call of Python's whose value is another expression's (its one
// operand, of the same type), the list's or dict's new value bound first (e->unrolled);
// NULL for any other node.
static const Ast *taken(Lower *lw, const Ast *e) {
  if ((e->kind != AST_CALL && e->kind != AST_APPLY) || e->bi || e->inlined || e->noperands != 1 ||
      e->operands[0]->ty != e->ty)
    return NULL;
  lower_callee(lw, e);
  Rets none = {0};
  lower_block(lw, &e->unrolled, &none);
  return e->operands[0];
}

// The sequence e, every element lowered now (memoized on e).
static LSeq *lower_seq(Lower *lw, const Ast *e) {
  TD_ASSERT(e->ty && is_seq(e->ty));
  if (e->comp) lower_comp(lw, e->comp);  // an element of a comprehension (read by another sequence)
  Memo *m = memo_get(lw, e);
  if (m) return m->seq;
  lower_callee(lw, e);
  LSeq *s;
  const Ast *el = taken(lw, e);
  if (el) {
    s = lower_seq(lw, el);
  } else if (e->kind == AST_CALL && e->inlined) {
    return lower_call(lw, e);
  } else if (e->kind == AST_NAME) {
    Binding *b = lookup(lw, e->name);
    TD_ASSERT(b && b->seq);
    return b->seq;  // a binding is a value already: nothing to memoize
  } else if (is_element(e)) {
    s = e->noperands == 1 ? lower_seq(lw, e->operands[0]) : lower_seq(lw, e->lhs)->sub[e->ival];
    TD_ASSERT(s);
  } else if (e->kind == AST_COND) {
    s = lower_seq(lw, e->operands[0]);
  } else {
    if (e->kind == AST_COMP) lower_comp(lw, e);
    int n = e->ty->nelem;
    TD_ASSERT(e->noperands == n);
    s = seq_new(lw, n);
    for (int i = 0; i < n; i++) {
      const TType *t = e->ty->elems[i];
      if (is_value(t)) s->v[i] = lower_expr(lw, e->operands[i]);
      else if (is_seq(t)) s->sub[i] = lower_seq(lw, e->operands[i]);
      else lower_object(lw, e->operands[i]);  // [partial(f, a=x)]
    }
  }
  memo_put(lw, e, NULL, s);
  return s;
}

static Value *lower_expr(Lower *lw, const Ast *e) {
  TD_ASSERT(e->ty);
  if (e->ty->kind == TY_SCALAR) {
    if (e->kind == AST_CALL && !memo_get(lw, e) && taken(lw, e)) memo_put(lw, e, NULL, NULL);  // n = sizes.pop()
    return scalar_of(lw, e->ty, e->loc);
  }
  if (e->comp) lower_comp(lw, e->comp);  // an element of a comprehension (read by another sequence)
  if (e->kind == AST_CALL && e->inlined) {  // its results memoized as a sequence
    LSeq *r = lower_call(lw, e);
    TD_ASSERT(r->n >= 1 && r->v[0]);
    return r->v[0];
  }
  Memo *m = memo_get(lw, e);
  if (m) {
    TD_ASSERT(m->value);
    return m->value;
  }
  lower_callee(lw, e);
  if (e->bi && e->bi->kind == BK_BUILD) return lower_built(lw, e)->value;  // memoized there
  // a + b + c ...: the chain of first operands lowered from the innermost out in a loop,
  // so a flat expression of any length costs no depth of C stack
  if (e->bi && e->noperands && e->operands[0]->bi && !memo_get(lw, e->operands[0])) {
    VEC(const Ast *) chain = {0};
    for (const Ast *a = e->operands[0]; a->bi && a->bi->kind != BK_BUILD && a->noperands && a->ty->kind == TY_TENSOR &&
                           !memo_get(lw, a);
         a = a->operands[0])
      vec_push(&lw->cx->arena, &chain, a);
    for (int i = chain.len - 1; i >= 0; i--) lower_expr(lw, chain.data[i]);
  }
  Value *v;
  const Ast *el = taken(lw, e);
  if (el) {  // xs.pop()
    v = lower_expr(lw, el);
  } else if (is_element(e)) {  // t[0], t.values
    v = e->noperands == 1 ? lower_expr(lw, e->operands[0]) : lower_seq(lw, e->lhs)->v[e->ival];
  } else if (e->kind == AST_COND) {  // the branch taken
    v = lower_expr(lw, e->operands[0]);
  } else if (e->bi && e->bi->kind == BK_ELEMENT) {  // one result of a call the op library builds
    const Memo *c = lower_built(lw, e->operands[0]);
    TD_ASSERT(e->ival < c->n);
    v = c->all[e->ival];
  } else if (e->bi) {
    v = e->bi->kind == BK_VIEW ? lower_view(lw, e) : lower_node(lw, e);
    if (e->rebinds) bind(lw, e->rebinds, v, NULL);  // x.t_(): x is the view from here on
  } else if (e->kind == AST_NAME) {
    Binding *b = lookup(lw, e->name);
    TD_ASSERT(b && b->value);
    v = b->value;
  } else {
    td_internal_error(__FILE__, __LINE__, "cannot lower a %s expression", ast_kind_name(e->kind));
  }
  TD_ASSERT(v);
  memo_put(lw, e, v, NULL);
  return v;
}

// A Python object e makes (functools.partial(f, a=x), or the branch a conditional takes):
// the bindings its making left (sema's partial_bind_now: the values it holds, read where it
// is made), lowered once; its function's too when that is made inline.
static void lower_object(Lower *lw, const Ast *e) {
  while (e->kind == AST_COND && e->noperands == 1) e = e->operands[0];
  if (!e->ty || e->ty->kind != TY_MODULE || memo_get(lw, e)) return;
  if (e->kind == AST_CALL && e->list.len && e->list.data[0]->kind != AST_KWARG) lower_object(lw, e->list.data[0]);
  if (!e->unrolled.len) return;
  memo_put(lw, e, NULL, NULL);
  Rets none = {0};
  lower_block(lw, &e->unrolled, &none);
}

// Evaluates e where its statement runs: a value or every element of a sequence; a call of
// a user function runs its body whatever it returns (it may write 'mut' parameters).
static void force(Lower *lw, const Ast *e) {
  if (e->kind == AST_CALL && e->inlined) {
    lower_call(lw, e);
  } else if (e->ty->kind == TY_TENSOR) {
    lower_expr(lw, e);
  } else if (is_seq(e->ty)) {
    lower_seq(lw, e);
  } else if (e->ty->kind == TY_MODULE) {
    lower_object(lw, e);
  } else if (e->kind == AST_CALL && !e->bi) {  // a call of None: what it did (xs.append(v), torch._assert)
    Rets none = {0};
    lower_block(lw, &e->unrolled, &none);
    for (int i = 0; i < e->noperands; i++)
      if (e->operands[i] && e->operands[i]->ty->kind == TY_TENSOR) lower_expr(lw, e->operands[i]);
  }
}

// Binds the names of target t (a name, or a tuple of targets, starred ones included) in
// order to the value expressions sema gave each name (vals, from *k on).
static void bind_target(Lower *lw, const Ast *t, Ast *const *vals, int *k) {
  if (t->kind == AST_STARRED) t = t->lhs;
  if (t->kind != AST_NAME) {
    for (int i = 0; i < t->list.len; i++) bind_target(lw, t->list.data[i], vals, k);
    return;
  }
  const Ast *v = vals[(*k)++];
  const char *name = t->name;
  if (is_seq(v->ty)) {
    bind(lw, name, NULL, lower_seq(lw, v));
  } else if (is_value(v->ty)) {
    Value *x = lower_expr(lw, v);
    bind(lw, name, x, NULL);
    if (lw->depth == 0 && name[0] != '(' && !x->is_scalar)  // not a loop's hidden iterable
      graph_name(lw->g, x, name);
  } else {
    lower_object(lw, v);
    unbind(lw, name);  // None, a dtype, a string, a function: sema has used it
  }
}

static void lower_stmt(Lower *lw, const Ast *s, Rets *rets) {
  switch (s->kind) {
  case AST_ASSIGN: {  // the value at this statement, then each name (sema: s->operands, one per name)
    force(lw, s->rhs);
    int k = 0;
    for (int i = 0; i < s->list.len; i++) bind_target(lw, s->list.data[i], s->operands, &k);
    for (int g = 0; g < s->body.len; g++)  // chained: a = b = v
      for (int i = 0; i < s->body.data[g]->list.len; i++) bind_target(lw, s->body.data[g]->list.data[i], s->operands, &k);
    TD_ASSERT(k == s->noperands);
    return;
  }
  case AST_AUGASSIGN:  // n += x of a number, xs += ys: the rebinding sema made (s->unrolled)
    if (s->unrolled.len) lower_block(lw, &s->unrolled, rets);
    else if (s->ty) lower_expr(lw, s);
    return;
  case AST_STORE:  // x[i] = v; d[k] = v of a dict: its new value bound (sema: s->unrolled)
    if (s->unrolled.len) lower_block(lw, &s->unrolled, rets);
    else lower_expr(lw, s);
    return;
  case AST_EXPR:
    force(lw, s->lhs);
    lower_block(lw, &s->unrolled, rets);  // xs.append(v): the list's new value bound
    return;
  case AST_ASSERT:  // a run-time check: its node (a compile-time one left nothing)
    if (s->noperands) lower_expr(lw, s->operands[0]);
    return;
  case AST_BREAK:     // sema cut the unrolled iteration here: nothing more to run
  case AST_CONTINUE:
  case AST_PASS:
    return;
  case AST_FOR:  // unrolled by sema: the iterations in order
  case AST_WHILE:
  case AST_IF:   // the branch taken
    lower_block(lw, &s->unrolled, rets);
    return;
  case AST_RETURN:
    for (int i = 0; i < s->list.len; i++) {
      const Ast *r = s->list.data[i];
      if (is_seq(r->ty) && s->list.len == 1) {  // return g(x), g returning a tuple: its elements
        LSeq *q = lower_seq(lw, r);
        for (int j = 0; j < q->n; j++) {
          vec_push(&lw->cx->arena, &rets->vals, q->v[j]);
          vec_push(&lw->cx->arena, &rets->seqs, q->sub[j]);
        }
      } else {
        if (!is_value(r->ty) && !is_seq(r->ty)) lower_object(lw, r);  // return LayerScale(d): its making
        vec_push(&lw->cx->arena, &rets->vals, is_value(r->ty) ? lower_expr(lw, r) : NULL);
        vec_push(&lw->cx->arena, &rets->seqs, is_seq(r->ty) ? lower_seq(lw, r) : NULL);
      }
    }
    rets->done = true;
    return;
  default:
    td_internal_error(__FILE__, __LINE__, "unexpected statement %s", ast_kind_name(s->kind));
  }
}

// Statements in order until a return gives the results (a return inside a loop or a
// branch ends the function: nothing after it was checked).
static void lower_block(Lower *lw, const AstList *stmts, Rets *rets) {
  for (int i = 0; i < stmts->len && !rets->done; i++)
    lower_stmt(lw, stmts->data[i], rets);
}

Graph *lower_fn(Ctx *cx, const Program *p, const Ast *fn, bool cpu) {
  Lower lw = {.cx = cx, .prog = p};
  lw.g = graph_new(cx, fn->name, fn->loc);
  lw.g->cpu = cpu;  // (before the builders run: a depthwise conv's node is the CPU's)
  for (int i = 0; i < fn->list.len; i++) {
    const Ast *prm = fn->list.data[i];
    if (prm->ty && prm->ty->kind == TY_STR) continue;  // act: str = 'gelu': fixed to its default, no parameter
    int ndim;
    int64_t shape[TD_MAX_DIMS];
    param_shape(prm, &ndim, shape);
    bool wrapped = prm->ty && prm->ty->kind == TY_TENSOR && prm->ty->wrapped;  // a run-time scalar
    DType dt = wrapped ? prm->ty->dtype : prm->type->dtype;
    bool cplx = dtype_is_complex(dt);
    if (cplx) {  // its float pairs (the entry views the caller's complex tensor so)
      shape[ndim++] = 2;
      dt = dtype_complex_part(dt);
    }
    Value *v = graph_param(lw.g, prm->name, dt, ndim, shape, prm->mut, prm->loc);
    v->wrapped = v->buf->scalar = wrapped;
    v->cplx = cplx;
    bind(&lw, prm->name, v, NULL);
  }
  Rets rets = {0};
  lower_block(&lw, &fn->body, &rets);
  for (int i = 0; i < rets.vals.len; i++) {
    Value *r = rets.vals.data[i];
    if (!r) continue;  // a None result: no output
    if (r->buf && r->buf->scalar) {  // `return eps`: the caller's value lives on the entry's stack
      NodeAttr none = {0};
      r = graph_node(lw.g, OP_COPY, r->dtype, r->view.ndim, r->view.shape, &r, 1, none, fn->loc)->out;
    }
    graph_output(lw.g, r);
  }
  graph_prune(lw.g);
  graph_verify(lw.g);
  return lw.g;
}
