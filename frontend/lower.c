// frontend/lower.c: a checked function -> Graph. View ops are free: a BK_VIEW call
// becomes a new Value with the View sema computed over the same Buffer, so no node
// and no kernel can ever come from it. Materializing ops (BK_NODE) become one Node
// each. Calls of user functions are inlined: their type-checked clone (e->inlined)
// is lowered in a new scope with the parameters bound to the argument values.
// Lowering reports nothing: sema has already said everything there is to say.
#include "frontend/frontend.h"

#include <string.h>

typedef VEC(Value *) ValueList;

typedef struct Binding Binding;
struct Binding {
  const char *name;
  Value *value;       // a tensor or number
  ValueList *tuple;   // or a sequence: its elements (NULL where one is no tensor or number)
  Binding *next;
};

// An expression's value once lowered: a part that builders share (layer_norm's centred
// input feeds its variance and its result) becomes one node, not one per reader.
typedef struct Memo {
  const Ast *key;
  Value *value;
  Value **all;  // a BK_BUILD call: its n results (value is the first)
  int n;
} Memo;

typedef struct Lower {
  Ctx *cx;
  const Program *prog;
  Graph *g;
  Binding *scope;  // innermost first
  int depth;       // inlining depth: bindings are recorded only at depth 0
  Memo *memo;      // open addressing, a power of two slots
  int nmemo, cap;
} Lower;

static Value *lower_expr(Lower *lw, const Ast *e);
static void lower_body(Lower *lw, const Ast *fn, ValueList *rets);
static void lower_block(Lower *lw, const AstList *stmts, ValueList *rets);

// Rebinding a name unlinks its older binding: the scope holds each name once (sema_expr.c's
// bind_name does the same), so lookups do not grow with a body's length.
static void bind(Lower *lw, const char *name, Value *v) {
  for (Binding **p = &lw->scope; *p; p = &(*p)->next)
    if (strcmp((*p)->name, name) == 0) {
      *p = (*p)->next;
      break;
    }
  Binding *b = arena_alloc(&lw->cx->arena, sizeof *b);
  *b = (Binding){name, v, NULL, lw->scope};
  lw->scope = b;
}

static void bind_tuple(Lower *lw, const char *name, ValueList *vs) {
  bind(lw, name, NULL);
  lw->scope->tuple = vs;
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

static const Memo *memo_find(const Lower *lw, const Ast *e) {
  if (!lw->cap) return NULL;
  for (size_t i = memo_slot(lw, e);; i = (i + 1) & (size_t)(lw->cap - 1)) {
    if (!lw->memo[i].key) return NULL;
    if (lw->memo[i].key == e) return &lw->memo[i];
  }
}

static Value *memo_get(const Lower *lw, const Ast *e) {
  const Memo *m = memo_find(lw, e);
  return m ? m->value : NULL;
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

static void memo_put(Lower *lw, const Ast *e, Value *v) { memo_add(lw, (Memo){e, v, NULL, 0}); }

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

// A call of a user function: its arguments (sema's operands, in parameter order: a
// Python scalar given to a 0-d tensor parameter already wrapped) bound to the clone's
// parameters, its body lowered in a scope of its own.
static void lower_inlined(Lower *lw, const Ast *call, ValueList *rets) {
  const Ast *fn = call->inlined;
  TD_ASSERT(call->noperands == fn->list.len);
  Value **args = arena_alloc(&lw->cx->arena, sizeof(Value *) * (size_t)(fn->list.len + 1));
  for (int j = 0; j < fn->list.len; j++)
    args[j] = lower_expr(lw, call->operands[j]);
  Binding *saved = lw->scope;
  lw->scope = NULL;
  for (int j = 0; j < fn->list.len; j++)
    bind(lw, fn->list.data[j]->name, args[j]);
  lw->depth++;
  lower_body(lw, fn, rets);
  lw->depth--;
  lw->scope = saved;
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
  return graph_node(lw->g, e->bi->op, t->dtype, t->view.ndim, t->view.shape, srcs, n, e->attr, e->loc)->out;
}

static Value *lower_view(Lower *lw, const Ast *e) {
  TD_ASSERT(e->noperands >= 1);
  Value *src = lower_expr(lw, e->operands[0]);
  if (e->needs_copy) {
    NodeAttr none = {0};
    Node *copy = graph_node(lw->g, OP_COPY, src->dtype, src->view.ndim, src->view.shape, &src, 1, none, e->loc);
    src = copy->out;
  }
  // x.contiguous() of a contiguous x, x.to(its own dtype): the same tensor, not a new value.
  if (view_equal(src->view, e->ty->view))
    return src;
  return graph_view(lw->g, src, e->ty->view, e->loc);
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
  const Memo *m = memo_find(lw, e);
  if (m) return m;
  int n = e->noperands;
  BuildIn *in = arena_alloc(&lw->cx->arena, sizeof *in * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) {
    const TType *t = e->operands[i]->ty;
    in[i] = (BuildIn){.dtype = t->dtype, .view = t->view, .scalar = t->kind == TY_SCALAR, .wrapped = t->wrapped,
                      .f = t->fval, .i = t->ival};
  }
  Value **out = arena_alloc(&lw->cx->arena, sizeof(Value *) * 64);
  Operands o = {lw, e};
  int k = build_call(lw->g, e->loc, e->oploc.end > e->oploc.begin ? e->oploc : e->loc, e->bi->build, e->args, n, in, operand, &o, out);
  memo_add(lw, (Memo){e, out[0], out, k});
  return memo_find(lw, e);
}

static bool is_seq(const TType *t) { return t->kind == TY_TUPLE || t->kind == TY_LIST; }

// The elements of sequence e, in order; NULL for one that is no tensor or number (a
// dtype, a nested sequence), which nothing lowered reads.
static void lower_seq(Lower *lw, const Ast *e, ValueList *out) {
  if (e->kind == AST_CALL && e->inlined) {
    lower_inlined(lw, e, out);
    return;
  }
  if (e->kind == AST_NAME) {
    Binding *b = lookup(lw, e->name);
    TD_ASSERT(b && b->tuple);
    for (int i = 0; i < b->tuple->len; i++) vec_push(&lw->cx->arena, out, b->tuple->data[i]);
    return;
  }
  for (int i = 0; i < e->ty->nelem; i++) {
    const TType *t = e->ty->elems[i];
    bool value = t->kind == TY_SCALAR || t->kind == TY_TENSOR;
    vec_push(&lw->cx->arena, out, value ? lower_expr(lw, e->operands[i]) : NULL);
  }
}

static Value *lower_element(Lower *lw, const Ast *seq, int i) {
  ValueList all = {0};
  lower_seq(lw, seq, &all);
  TD_ASSERT(i < all.len && all.data[i]);
  return all.data[i];
}

static Value *lower_expr(Lower *lw, const Ast *e) {
  TD_ASSERT(e->ty);
  if (e->ty->kind == TY_SCALAR)
    return scalar_of(lw, e->ty, e->loc);
  if (e->kind == AST_CALL && e->inlined) {
    ValueList rets = {0};
    lower_inlined(lw, e, &rets);
    TD_ASSERT(rets.len >= 1);
    return rets.data[0];
  }
  if ((e->kind == AST_INDEX || e->kind == AST_ATTR) && is_seq(e->lhs->ty))  // t[0], t.values
    return e->noperands ? lower_expr(lw, e->operands[0]) : lower_element(lw, e->lhs, (int)e->ival);
  if (e->bi && e->bi->kind == BK_BUILD)
    return lower_built(lw, e)->value;
  if (e->bi && e->bi->kind == BK_ELEMENT) {
    const Memo *m = lower_built(lw, e->operands[0]);
    TD_ASSERT(e->ival < m->n);
    return m->all[e->ival];
  }
  if (e->bi) {
    Value *v = memo_get(lw, e);
    if (!v) {
      v = e->bi->kind == BK_VIEW ? lower_view(lw, e) : lower_node(lw, e);
      memo_put(lw, e, v);
      if (e->rebinds) bind(lw, e->rebinds, v);  // x.t_(): x is the view from here on
    }
    return v;
  }
  if (e->kind == AST_NAME) {
    Binding *b = lookup(lw, e->name);
    TD_ASSERT(b && b->value);
    return b->value;
  }
  td_internal_error(__FILE__, __LINE__, "cannot lower a %s expression", ast_kind_name(e->kind));
}

static void lower_stmt(Lower *lw, const Ast *s, ValueList *rets) {
  switch (s->kind) {
  case AST_ASSIGN: {
    if (s->list.len == 1 && is_seq(s->rhs->ty)) {  // t = x.split(2): every element now
      ValueList *vs = arena_alloc(&lw->cx->arena, sizeof *vs);
      lower_seq(lw, s->rhs, vs);
      bind_tuple(lw, s->list.data[0]->name, vs);
      return;
    }
    if (s->list.len == 1 && s->rhs->ty->kind != TY_TENSOR && s->rhs->ty->kind != TY_SCALAR)
      return;  // a dtype or a string: sema has used it
    if (s->list.len == 1) {
      // a loop variable over a tuple (sema_ctl.c): its element as the loop found it, even
      // where the body rebinds the name the element was written with
      Binding *seq = s->name ? lookup(lw, s->name) : NULL;
      Value *v = seq && seq->tuple && s->ival < seq->tuple->len && seq->tuple->data[s->ival]
                     ? seq->tuple->data[s->ival]
                     : lower_expr(lw, s->rhs);
      const char *name = s->list.data[0]->name;
      bind(lw, name, v);
      if (lw->depth == 0 && name[0] != '(')  // not a loop's hidden iterable
        graph_name(lw->g, v, name);
      return;
    }
    ValueList vals = {0};
    lower_seq(lw, s->rhs, &vals);
    TD_ASSERT(vals.len == s->list.len);
    for (int i = 0; i < vals.len; i++) {
      const Ast *t = s->list.data[i];
      if (is_seq(t->ty)) {  // a, b = (x.shape, y): a's elements, from its expression when there is one
        ValueList *vs = arena_alloc(&lw->cx->arena, sizeof *vs);
        bool expr = s->rhs->kind != AST_NAME && !(s->rhs->kind == AST_CALL && s->rhs->inlined);
        if (expr) lower_seq(lw, s->rhs->operands[i], vs);
        bind_tuple(lw, t->name, vs);
        continue;
      }
      bind(lw, t->name, vals.data[i]);
      if (lw->depth == 0 && vals.data[i] && !vals.data[i]->is_scalar)
        graph_name(lw->g, vals.data[i], t->name);
    }
    return;
  }
  case AST_AUGASSIGN:
  case AST_STORE:
    lower_expr(lw, s);
    return;
  case AST_EXPR:
    if (s->lhs->ty->kind == TY_TENSOR)
      lower_expr(lw, s->lhs);
    return;
  case AST_BREAK:     // sema cut the unrolled iteration here: nothing more to run
  case AST_CONTINUE:
    return;
  case AST_FOR:  // unrolled by sema: the iterations in order
  case AST_WHILE:
  case AST_IF:   // the branch taken
    lower_block(lw, &s->unrolled, rets);
    return;
  case AST_RETURN:
    for (int i = 0; i < s->list.len; i++) {
      const Ast *r = s->list.data[i];
      if (r->ty->kind == TY_TUPLE)
        lower_seq(lw, r, rets);
      else
        vec_push(&lw->cx->arena, rets, lower_expr(lw, r));
    }
    return;
  default:
    td_internal_error(__FILE__, __LINE__, "unexpected statement %s", ast_kind_name(s->kind));
  }
}

// Statements in order until a return gives the results (a return inside a loop or a
// branch ends the function: nothing after it was checked).
static void lower_block(Lower *lw, const AstList *stmts, ValueList *rets) {
  for (int i = 0; i < stmts->len && rets->len == 0; i++)
    lower_stmt(lw, stmts->data[i], rets);
}

static void lower_body(Lower *lw, const Ast *fn, ValueList *rets) {
  lower_block(lw, &fn->body, rets);
}

Graph *lower_fn(Ctx *cx, const Program *p, const Ast *fn) {
  Lower lw = {.cx = cx, .prog = p};
  lw.g = graph_new(cx, fn->name, fn->loc);
  for (int i = 0; i < fn->list.len; i++) {
    const Ast *prm = fn->list.data[i];
    int ndim;
    int64_t shape[TD_MAX_DIMS];
    param_shape(prm, &ndim, shape);
    bool wrapped = prm->ty && prm->ty->kind == TY_TENSOR && prm->ty->wrapped;  // a run-time scalar
    Value *v = graph_param(lw.g, prm->name, wrapped ? prm->ty->dtype : prm->type->dtype, ndim, shape, prm->mut,
                           prm->loc);
    v->wrapped = v->buf->scalar = wrapped;
    bind(&lw, prm->name, v);
  }
  ValueList rets = {0};
  lower_body(&lw, fn, &rets);
  for (int i = 0; i < rets.len; i++) {
    Value *r = rets.data[i];
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
