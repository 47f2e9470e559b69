// ir/sched.c: the CPU schedule applied to built loop IR (sched_cpu in ir/loop.h).
// Three rewrites, each an exact description of what the backends then print, and
// one mark (3.):
//
// 0. A sum whose terms the next loop multiplies by its reciprocal (a softmax row, as
//    LKernel.softmax records it) stores its terms in that loop's output, which then only
//    multiplies: each exp is computed once per element. Softmax's row max then needs no
//    NaN propagation (softmax_max).
// 1. The math functions (exp, log, tanh, erf, sin, ...) and the composite ops built on
//    them become plain arithmetic (ir/vecmath.c), so a loop that uses them vectorizes
//    like any other instead of calling libm once per element.
// 2. A float reduction in an innermost loop (`acc = acc + e(j)`, max, min, product)
//    accumulates in LANES independent partial results: the loop is unrolled LANES
//    times, lane l takes the iterations j = l (mod LANES), the remainder goes to
//    lane 0, and the lanes are combined in a fixed tree. Every side effect keeps its
//    order; only the association of the reduction changes (NumPy's pairwise sum does
//    the same), identically in every backend. Where the loop is a sum, product,
//    select max or NaN-propagating maximum/minimum (amax, amin) of plain arithmetic
//    over consecutive elements, the lanes are one vector accumulator (ir/loop.h's
//    Lanes: one statement instead of LANES), folded into acc afterwards. An argmax or
//    argmin loop keeps its best value and where it was in two vectors (split_argext).
// 3. A result of 8 MiB or more that no kernel reads, written by a row kernel or by one
//    whose buffers do not fit the last-level cache (mark_streams says why), is marked
//    LArg.stream: the
//    LLVM backend stores it non-temporally wherever it proves a vector store aligned;
//    the C backend its 64-byte vector stores, and its scalar loops over whole lines in
//    strips of a line (codegen/cexpr.c's cexpr_stream_loop).
// 4. a * 2^k + c with a constant c becomes one fused multiply-add where the target has
//    one, for LLVM (fold_scale_add says why the value is the same for every a).

#include <math.h>
#include <string.h>

#include "ir/vecmath.h"

enum { LANES_BYTES = 64 };  // one 512-bit vector of partial results per reduction

// The kernel being scheduled.
typedef struct Sched {
  Ctx *cx;
  const LProgram *p;
  LKernel *k;
  const CpuTarget *cpu;
} Sched;

static void push(Sched *s, LStmtList *list, LStmt *st) { vec_push(&s->cx->arena, list, st); }

static int new_local(Sched *s, DType dt) {
  vec_push(&s->cx->arena, &s->k->locals, dt);
  return s->k->locals.len - 1;
}

// A let of v appended to pre; the local's reference.
static LExpr *hoist(Sched *s, LStmtList *pre, LExpr *v) {
  int l = new_local(s, v->dt);
  push(s, pre, ls_let(s->cx, l, v));
  return lx_local(s->cx, v->dt, l);
}

static LExpr *gt(Sched *s, LExpr *a, LExpr *b) { return lx_binary(s->cx, OP_GT, DT_BOOL, a, b); }

static bool is_local(const LExpr *e, int local) { return e->kind == LX_LOCAL && e->local == local; }

// Whether e or any expression under it satisfies pred(., arg).
static bool any_expr(const LExpr *e, bool (*pred)(const LExpr *, int), int arg) {
  if (!e)
    return false;
  return pred(e, arg) || any_expr(e->a, pred, arg) || any_expr(e->b, pred, arg) || any_expr(e->c, pred, arg) ||
         any_expr(e->idx.dyn, pred, arg);
}

// The same over a statement's own expressions (not its body's).
static bool any_in_stmt(const LStmt *st, bool (*pred)(const LExpr *, int), int arg) {
  return any_expr(st->val, pred, arg) || any_expr(st->cond, pred, arg) || any_expr(st->idx.dyn, pred, arg);
}

static bool reads_local(const LExpr *e, int local) { return any_expr(e, is_local, local); }

// ---- a sum's terms kept for a later pass (softmax's exp(x - max) / sum) ----
// for j: acc = acc + E(j); let r = 1 / acc; for j': buf[f(j')] = E(j') * r  becomes
// for j: t = E(j); buf[f(j)] = t; acc = acc + t; let r = 1 / acc; for j': buf[f(j')] = buf[f(j')] * r
// when E does not read buf and buf holds E's dtype exactly: each term is computed once.
// The kernel builder says where such a row is (LKernel.softmax): nothing here searches
// the loops for it.

static bool index_equal(const LIndex *a, int va, const LIndex *b, int vb);

// Whether a (over loop var va) and b (over vb) are the same expression.
static bool expr_equal(const LExpr *a, int va, const LExpr *b, int vb) {
  if (!a || !b)
    return a == b;
  if (a->kind != b->kind || a->dt != b->dt || a->op != b->op || a->lanes != b->lanes)
    return false;
  switch (a->kind) {
  case LX_LANE:
    if (a->i != b->i)
      return false;
    break;
  case LX_CONST: return dtype_is_float(a->dt) ? memcmp(&a->f, &b->f, sizeof a->f) == 0 : a->i == b->i;
  case LX_VAR: return a->var == b->var || (a->var == va && b->var == vb);
  case LX_LOCAL: return a->local == b->local;
  case LX_LOAD: return a->buf == b->buf && index_equal(&a->idx, va, &b->idx, vb);
  case LX_CHECKED_INDEX:
    if (a->i != b->i || a->wrap != b->wrap || a->err != b->err)
      return false;
    break;
  default: break;
  }
  return expr_equal(a->a, va, b->a, vb) && expr_equal(a->b, va, b->b, vb) && expr_equal(a->c, va, b->c, vb);
}

static bool index_equal(const LIndex *a, int va, const LIndex *b, int vb) {
  if (a->base != b->base || a->nterms != b->nterms || !expr_equal(a->dyn, va, b->dyn, vb))
    return false;
  for (int t = 0; t < a->nterms; t++) {
    bool same = a->var[t] == b->var[t] || (a->var[t] == va && b->var[t] == vb);
    if (!same || a->coef[t] != b->coef[t])
      return false;
  }
  return true;
}

static const LStmt *only_stmt(const LStmt *l, LStmtKind kind) {
  return l->kind == LS_LOOP && l->body.len == 1 && l->body.data[0]->kind == kind ? l->body.data[0] : NULL;
}

static LIndex rename_var(LIndex x, int from, int to) {
  for (int t = 0; t < x.nterms; t++)
    if (x.var[t] == from)
      x.var[t] = to;
  return x;
}

// How many statements in list (and under them) read local l.
static int count_reads(const LStmtList *list, int l) {
  int n = 0;
  for (int i = 0; i < list->len; i++)
    n += any_in_stmt(list->data[i], is_local, l) + count_reads(&list->data[i]->body, l);
  return n;
}

static bool declares(const LStmtList *list, int l) {
  for (int i = 0; i < list->len; i++)
    if (list->data[i]->kind == LS_LET && list->data[i]->local == l)
      return true;
  return false;
}

// Softmax's row max (LSoftmax: max_loop is m = maximum(m, x), the sum's term exp(x - m)),
// when the term is f32 or f64 and m is read nowhere else: a NaN in x makes the sum, and so
// every output, NaN whatever m is, so m needs no NaN propagation. Its loop becomes
// `let y = x; m = (y > m) ? y : m` (one max instruction instead of a max, a NaN test
// and a blend), and the term, whose argument is then <= 0 (or irrelevant), the
// one-sided exp, its lets appended to pre. Returns the term (rewritten or not).
static LExpr *softmax_max(Sched *s, const LSoftmax *sm, LStmtList *pre) {
  LStmt *ml = sm->max_loop;
  const LStmt *sl = sm->sum_loop, *mset = only_stmt(ml, LS_SET);
  LExpr *term = sl->body.data[0]->val->b, *d = term->a;
  TD_ASSERT(mset && ml->extent == sl->extent && term->kind == LX_UNARY && term->op == OP_EXP);
  const LExpr *mv = mset->val;
  int m = mset->local;
  TD_ASSERT(d->kind == LX_BINARY && d->op == OP_SUB && is_local(d->b, m) && mv->kind == LX_BINARY &&
            mv->op == OP_MAXIMUM && is_local(mv->a, m) && expr_equal(mv->b, ml->var, d->a, sl->var));
  if ((term->dt != DT_F32 && term->dt != DT_F64) || count_reads(sm->list, m) != 2 || !declares(sm->list, m))
    return term;
  int y = new_local(s, term->dt);
  LExpr *yv = lx_local(s->cx, term->dt, y), *mref = lx_local(s->cx, term->dt, m);
  LStmtList nb = {0};
  push(s, &nb, ls_let(s->cx, y, mv->b));
  push(s, &nb, ls_set(s->cx, m, lx_select(s->cx, gt(s, yv, mref), yv, mref)));
  ml->body = nb;
  return vecmath_exp_nonpos(s->cx, s->k, s->cpu, pre, hoist(s, pre, d));
}

// The sum's terms kept (LKernel.softmax: which loops those are, ir/row.c says), when
// the last pass stores exactly term * r (the softmax itself, or an epilogue that is
// its value unchanged) into a buffer of the term's dtype that the term does not read.
static void keep_terms(Sched *s, const LProgram *p) {
  const LSoftmax *sm = s->k->softmax;
  if (!sm)
    return;
  LStmt *st = sm->sum_loop, *sj = sm->final_loop;
  const LStmt *set = only_stmt(st, LS_SET), *store = only_stmt(sj, LS_STORE);
  TD_ASSERT(set && store && set->val->kind == LX_BINARY && set->val->op == OP_ADD && sj->extent == st->extent);
  const LExpr *term = set->val->b, *v = store->val;
  if (v->kind != LX_BINARY || v->op != OP_MUL || !is_local(v->b, sm->recip->local) ||
      !expr_equal(term, st->var, v->a, sj->var) || lx_loads(term, store->buf) ||
      p->bufs.data[s->k->args.data[store->buf].buf].dtype != term->dt || store->idx.dyn)
    return;
  LExpr *again = lx_load(s->cx, term->dt, store->buf, store->idx);
  s->k->args.data[store->buf].read = true;
  sj->body.data[0] = ls_store(s->cx, store->buf, store->idx, lx_binary(s->cx, OP_MUL, term->dt, again, v->b));
  int t = new_local(s, term->dt);
  LExpr *tv = lx_local(s->cx, term->dt, t);
  LStmtList nb = {0};
  push(s, &nb, ls_let(s->cx, t, softmax_max(s, sm, &nb)));
  push(s, &nb, ls_store(s->cx, store->buf, rename_var(store->idx, sj->var, st->var), tv));
  push(s, &nb, ls_set(s->cx, set->local, lx_binary(s->cx, OP_ADD, term->dt, set->val->a, tv)));
  st->body = nb;
}

// ---- reductions in lanes ----

static bool stmt_reads_local(const LStmt *st, int local) { return any_in_stmt(st, is_local, local); }

static bool folds(Op op) { return op == OP_ADD || op == OP_MUL || op == OP_MAXIMUM || op == OP_MINIMUM; }

static bool is_acc(const LExpr *e, const LStmt *st) { return e->kind == LX_LOCAL && e->local == st->local; }

// SET acc = (y > acc) ? y : acc with a local y (softmax_max's max without NaNs)
static bool is_select_max(const LStmt *st) {
  const LExpr *v = st->val, *c = v->a;
  return v->kind == LX_SELECT && c->kind == LX_BINARY && c->op == OP_GT && c->a->kind == LX_LOCAL &&
         v->b->kind == LX_LOCAL && v->b->local == c->a->local && is_acc(c->b, st) && is_acc(v->c, st) &&
         c->a->local != st->local;
}

// The fold of a SET: its binary op, or OP_GT for a select max.
static Op fold_op(const LStmt *st) { return st->val->kind == LX_SELECT ? OP_GT : st->val->op; }

// acc . x for a fold op: the binary op, or the select max (which reads its operands
// twice: they are lets in pre, so no expression is printed twice).
static LExpr *fold_apply(Sched *s, LStmtList *pre, Op op, DType dt, LExpr *acc, LExpr *x) {
  if (op != OP_GT)
    return lx_binary(s->cx, op, dt, acc, x);
  if (acc->kind != LX_LOCAL)
    acc = hoist(s, pre, acc);
  if (x->kind != LX_LOCAL)
    x = hoist(s, pre, x);
  return lx_select(s->cx, gt(s, x, acc), x, acc);
}

// The operand of SET acc = acc op x (or x op acc, or a select max) that is not acc, or NULL.
static LExpr *fold_operand(const LStmt *st) {
  const LExpr *v = st->val;
  if (st->kind == LS_SET && is_select_max(st) && dtype_is_float(v->dt))
    return v->b;
  if (st->kind != LS_SET || v->kind != LX_BINARY || !folds(v->op) || !dtype_is_float(v->dt) || v->lanes > 1)
    return NULL;
  bool left = v->a->kind == LX_LOCAL && v->a->local == st->local;
  LExpr *x = left ? v->b : v->a;
  if (!left && !(v->b->kind == LX_LOCAL && v->b->local == st->local))
    return NULL;
  return reads_local(x, st->local) ? NULL : x;
}

static double identity(Op op) {
  switch (op) {
  case OP_ADD: return -0.0;  // -0 + x == x for every x, +0 included
  case OP_MUL: return 1;
  case OP_MAXIMUM: case OP_GT: return -__builtin_inf();
  case OP_MINIMUM: return __builtin_inf();
  default: td_unreachable();
  }
}

// Cloning a loop body for one lane: the loop var becomes mul * var2 + add, the
// reduction locals and every local the body declares are renamed through map.
typedef struct Clone {
  int var, var2;
  int64_t mul, add;
  int *map;  // old local -> new local (itself where not renamed)
} Clone;

static LIndex clone_index(Sched *s, const Clone *c, const LIndex *x);

static LExpr *clone_expr(Sched *s, const Clone *c, const LExpr *e) {
  if (!e)
    return NULL;
  if (e->kind == LX_VAR && e->var == c->var) {
    LExpr *v = lx_var(s->cx, c->var2);
    if (c->mul != 1)
      v = lx_binary(s->cx, OP_MUL, DT_I64, v, lx_const_i(s->cx, DT_I64, c->mul));
    if (c->add)
      v = lx_binary(s->cx, OP_ADD, DT_I64, v, lx_const_i(s->cx, DT_I64, c->add));
    return e->dt == DT_I64 ? v : lx_cast(s->cx, e->dt, v);
  }
  LExpr *n = arena_alloc(&s->cx->arena, sizeof *n);
  *n = *e;
  if (e->kind == LX_LOCAL)
    n->local = c->map[e->local];
  n->a = clone_expr(s, c, e->a);
  n->b = clone_expr(s, c, e->b);
  n->c = clone_expr(s, c, e->c);
  if (e->kind == LX_LOAD)
    n->idx = clone_index(s, c, &e->idx);
  return n;
}

static LIndex clone_index(Sched *s, const Clone *c, const LIndex *x) {
  LIndex r = *x;
  r.nterms = 0;
  int64_t coef = 0;
  for (int t = 0; t < x->nterms; t++) {
    if (x->var[t] == c->var) {
      coef += x->coef[t];
      continue;
    }
    r.var[r.nterms] = x->var[t];
    r.coef[r.nterms++] = x->coef[t];
  }
  if (coef) {
    TD_ASSERT(r.nterms < LI_MAX_TERMS);
    r.var[r.nterms] = c->var2;
    r.coef[r.nterms++] = coef * c->mul;
    r.base += coef * c->add;
  }
  r.dyn = clone_expr(s, c, x->dyn);
  return r;
}

static LStmt *clone_stmt(Sched *s, Clone *c, const LStmt *st) {
  LStmt *n = arena_alloc(&s->cx->arena, sizeof *n);
  *n = *st;
  n->val = clone_expr(s, c, st->val);
  n->cond = clone_expr(s, c, st->cond);
  if (st->kind == LS_STORE)
    n->idx = clone_index(s, c, &st->idx);
  if (st->kind == LS_LET)  // declared anew in this copy
    c->map[st->local] = new_local(s, s->k->locals.data[st->local]);
  if (st->kind == LS_LET || st->kind == LS_SET)
    n->local = c->map[st->local];
  if (st->kind == LS_IF) {  // its body after its condition, in order
    n->body = (LStmtList){0};
    for (int i = 0; i < st->body.len; i++)
      push(s, &n->body, clone_stmt(s, c, st->body.data[i]));
  }
  TD_ASSERT(st->kind != LS_LOOP);
  return n;
}

// Whether loop l is an innermost loop holding at least one float reduction and no
// other assignment to an outer local; red[i] marks the reduction statements.
static bool splittable(const LStmt *l, bool *red, DType *dt) {
  bool any = false;
  *dt = DT_COUNT;
  const LStmtList *b = &l->body;
  for (int i = 0; i < b->len; i++) {
    const LStmt *st = b->data[i];
    red[i] = false;
    if (st->kind == LS_LOOP || st->kind == LS_IF)
      return false;
    if (st->kind != LS_SET)
      continue;
    if (!fold_operand(st))
      return false;
    for (int j = 0; j < b->len; j++) {  // acc is read or written by nothing else
      const LStmt *o = b->data[j];
      if (j != i && (stmt_reads_local(o, st->local) || ((o->kind == LS_SET || o->kind == LS_LET) && o->local == st->local)))
        return false;
    }
    if (*dt != DT_COUNT && *dt != st->val->dt)
      return false;  // one lane count per loop
    *dt = st->val->dt;
    red[i] = any = true;
  }
  return any;
}

// The body of l for lane `lane` of the unrolled loop (var2 = the unrolled loop's var),
// or for the remainder (mul 1, var2 its var, add its start), appended to into.
static void emit_copy(Sched *s, const LStmt *l, Clone *c, LStmtList *into) {
  for (int i = 0; i < l->body.len; i++)
    push(s, into, clone_stmt(s, c, l->body.data[i]));
}

// ---- the lane form as vectors ----
// Where the loop holds only sums, products, select maxes or maximums/minimums (softmax's
// row max, amax, amin: gcc vectorizes neither the scalar lanes' selects nor a maximum()
// with its NaN tests; its 16 scalar maxes made C softmax [256, 4096] ~1.3x and C amax
// [4096, 8192] 3-4.5x slower than the vector form; each lane of a vector maximum is the
// scalar one, so the results are the unrolled lanes' bit for bit, NaN payloads and the
// sign of a zero included) and lets of float arithmetic that the
// vectors of ir/loop.h's Lanes can compute (loads of consecutive elements, + - *, fma,
// and values the loop does not change), lane l's partial result is lane l of one vector
// accumulator: for m { V = V op x(LANES m + 0..LANES) }, the same association as the
// unrolled form, written once instead of LANES times, which the backends' vectorizers
// then have nothing left to do for. The remainder goes to lane 0, taken out of V first.

// Whether e reads loop var `var` or a local of vloc (the loop's own lets).
static bool varies(const LExpr *e, int var, const bool *vloc) {
  if (!e)
    return false;
  if ((e->kind == LX_VAR && e->var == var) || (e->kind == LX_LOCAL && vloc[e->local]))
    return true;
  if (e->kind == LX_LOAD) {
    for (int t = 0; t < e->idx.nterms; t++)
      if (e->idx.var[t] == var && e->idx.coef[t] != 0)
        return true;
    if (varies(e->idx.dyn, var, vloc))
      return true;
  }
  return varies(e->a, var, vloc) || varies(e->b, var, vloc) || varies(e->c, var, vloc);
}

// The coefficient of var in ix.
static int64_t coef_of(const LIndex *ix, int var) {
  int64_t c = 0;
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] == var)
      c += ix->coef[t];
  return c;
}

// Whether e (of dtype dt) can be computed for LANES consecutive values of var at once.
static bool vec_ok(const Sched *s, const LExpr *e, int var, DType dt, const bool *vloc) {
  if (e->dt != dt || e->lanes != 1)
    return false;
  if (!varies(e, var, vloc))
    return !lx_raises(e);  // the same value in every lane
  switch (e->kind) {
  case LX_LOCAL: return true;  // one of the loop's lets (varies)
  case LX_LOAD:
    return s->p->bufs.data[s->k->args.data[e->buf].buf].dtype == dt && coef_of(&e->idx, var) == 1 &&
           !varies(e->idx.dyn, var, vloc);
  case LX_BINARY:
    return (e->op == OP_ADD || e->op == OP_SUB || e->op == OP_MUL) && vec_ok(s, e->a, var, dt, vloc) &&
           vec_ok(s, e->b, var, dt, vloc);
  case LX_UNARY:  // -0.0 - a; a * a
    return (e->op == OP_NEG || e->op == OP_SQUARE) && vec_ok(s, e->a, var, dt, vloc);
  case LX_FMA:
    return vec_ok(s, e->a, var, dt, vloc) && vec_ok(s, e->b, var, dt, vloc) && vec_ok(s, e->c, var, dt, vloc);
  default: return false;
  }
}

// A vector op a . b of a's lanes.
static LExpr *vec_binary(Sched *s, Op op, LExpr *a, LExpr *b) {
  LExpr *v = lx_binary(s->cx, op, a->dt, a, b);
  v->lanes = a->lanes;
  return v;
}

// e (vec_ok) as a vector of `lanes` lanes over var = c->mul * c->var2 + lane; vmap: the
// loop's lets' vector locals; lets it needs (a square's operand) appended to pre.
static LExpr *vec_expr(Sched *s, const Clone *c, const LExpr *e, int lanes, const int *vmap, const bool *vloc,
                       LStmtList *pre) {
  if (!varies(e, c->var, vloc))
    return lx_splat(s->cx, lanes, clone_expr(s, c, e));
  switch (e->kind) {
  case LX_LOCAL: return lx_local_v(s->cx, e->dt, lanes, vmap[e->local]);
  case LX_LOAD: return lx_vload(s->cx, e->dt, lanes, e->buf, clone_index(s, c, &e->idx));
  case LX_BINARY:
    return vec_binary(s, e->op, vec_expr(s, c, e->a, lanes, vmap, vloc, pre),
                      vec_expr(s, c, e->b, lanes, vmap, vloc, pre));
  case LX_UNARY: {
    LExpr *a = vec_expr(s, c, e->a, lanes, vmap, vloc, pre);
    if (e->op == OP_NEG)
      return vec_binary(s, OP_SUB, lx_splat(s->cx, lanes, lx_const_f(s->cx, e->dt, -0.0)), a);
    int t = new_local(s, e->dt);  // square: ir/opmath.c's a * a, a computed once
    push(s, pre, ls_let(s->cx, t, a));
    return vec_binary(s, OP_MUL, lx_local_v(s->cx, e->dt, lanes, t), lx_local_v(s->cx, e->dt, lanes, t));
  }
  case LX_FMA:
    return lx_fma(s->cx, vec_expr(s, c, e->a, lanes, vmap, vloc, pre), vec_expr(s, c, e->b, lanes, vmap, vloc, pre),
                  vec_expr(s, c, e->c, lanes, vmap, vloc, pre));
  default: td_unreachable();
  }
}

// Loop l (splittable, red its reductions, lanes of dt) as vectors, appended to out, if
// every statement is a fold above (sum, product, select max, maximum, minimum) or a let
// of dt that vec_ok; else false.
static bool split_vectors(Sched *s, LStmt *l, const bool *red, DType dt, int lanes, LStmtList *out) {
  int nloc = s->k->locals.len;
  bool *vloc = arena_alloc(&s->cx->arena, (size_t)nloc + 1);
  for (int i = 0; i < l->body.len; i++) {
    const LStmt *st = l->body.data[i];
    if (red[i]) {
      Op op = fold_op(st);
      bool foldable = op == OP_ADD || op == OP_MUL || op == OP_GT || op == OP_MAXIMUM || op == OP_MINIMUM;
      if (!foldable || !vec_ok(s, fold_operand(st), l->var, dt, vloc))
        return false;
    } else if (st->kind != LS_LET || !vec_ok(s, st->val, l->var, dt, vloc)) {
      return false;
    } else {
      vloc[st->local] = true;
    }
  }
  int *vmap = arena_alloc(&s->cx->arena, sizeof(int) * (size_t)(nloc + 1));
  for (int i = 0; i < l->body.len; i++) {  // the accumulators start from the op's identity
    const LStmt *st = l->body.data[i];
    vmap[st->local] = new_local(s, dt);
    if (red[i])
      push(s, out, ls_let(s->cx, vmap[st->local], lx_splat(s->cx, lanes, lx_const_f(s->cx, dt, identity(fold_op(st))))));
  }
  int64_t nmain = l->extent / lanes;
  LStmt *main = ls_loop(s->cx, s->k->nvars++, nmain);
  int *same = arena_alloc(&s->cx->arena, sizeof(int) * (size_t)(nloc + 1));
  for (int m = 0; m < nloc; m++)
    same[m] = m;
  Clone c = {l->var, main->var, lanes, 0, same};
  for (int i = 0; i < l->body.len; i++) {
    const LStmt *st = l->body.data[i];
    LExpr *x = vec_expr(s, &c, red[i] ? fold_operand(st) : st->val, lanes, vmap, vloc, &main->body);
    if (red[i]) {  // V = V op x, or V = (x > V) ? x : V (x a local: fold_operand)
      LExpr *acc = lx_local_v(s->cx, dt, lanes, vmap[st->local]);
      if (fold_op(st) == OP_GT)
        x = lx_select(s->cx, gt(s, x, acc), x, acc), x->a->lanes = lanes;
      else
        x = lx_binary(s->cx, fold_op(st), dt, acc, x);
      x->lanes = lanes;
    }
    push(s, &main->body, (red[i] ? ls_set : ls_let)(s->cx, vmap[st->local], x));
  }
  push(s, out, main);
  // the remainder into lane 0 (taken out first); acc = acc . ((lane0 . lane1) . (lane2 . lane3)) . ...
  int *map0 = arena_alloc(&s->cx->arena, sizeof(int) * (size_t)(nloc + 1));
  memcpy(map0, same, sizeof(int) * (size_t)nloc);
  for (int i = 0; i < l->body.len && l->extent % lanes; i++) {
    const LStmt *st = l->body.data[i];
    if (!red[i])
      continue;
    map0[st->local] = new_local(s, dt);
    push(s, out, ls_let(s->cx, map0[st->local], lx_lane(s->cx, lx_local_v(s->cx, dt, lanes, vmap[st->local]), 0)));
  }
  if (l->extent % lanes) {
    LStmt *rest = ls_loop(s->cx, s->k->nvars++, l->extent % lanes);
    Clone rc = {l->var, rest->var, 1, nmain * lanes, map0};
    emit_copy(s, l, &rc, &rest->body);
    push(s, out, rest);
  }
  for (int i = 0; i < l->body.len; i++) {
    const LStmt *st = l->body.data[i];
    if (!red[i])
      continue;
    LExpr *v[lanes];
    for (int ln = 0; ln < lanes; ln++)
      v[ln] = lx_lane(s->cx, lx_local_v(s->cx, dt, lanes, vmap[st->local]), ln);
    if (l->extent % lanes)
      v[0] = lx_local(s->cx, dt, map0[st->local]);
    for (int w = lanes; w > 1; w /= 2)
      for (int m = 0; m < w / 2; m++)
        v[m] = fold_apply(s, out, fold_op(st), dt, v[2 * m], v[2 * m + 1]);
    push(s, out, ls_set(s->cx, st->local, fold_apply(s, out, fold_op(st), dt, lx_local(s->cx, dt, st->local), v[0])));
  }
  return true;
}

// ---- argmax / argmin in lanes ----
// row.c's argmax (argmin) loop, `for j { let x = E(j); if (C(x, b)) { b = x; p = P(j) } }`
// with C x > b (x < b), or x > b || (x != x && b == b) for floats (the first NaN wins),
// keeps per lane the best value and the block m where it came from: for m { X = E(L m +
// 0..L); I = M ? splat(m) : I; B = M ? X : B } with M the vector C(X, B), B from splat(b),
// I from 0. Lane l then holds (B_l, j = L I_l + l): where it never moved, b itself at a
// position p(j) no earlier than p's (it never replaces it); else a value better than b
// and the first position of it in that lane (C is strict). The lanes are merged into (b,
// p) one by one, taking a lane that is better (C) or the same value (NaN and NaN, -0 and
// +0 alike) at an earlier position, so (b, p) is the row's first best: PyTorch's answer,
// the scalar loop's. The remainder, all later positions, runs the scalar body after. I
// holds m in the value's dtype (f32: exact while m < 2^24).

static bool is_any_load(const LExpr *e, int unused) { return (void)unused, e->kind == LX_LOAD; }

// Whether e is local `l` of lanes 1.
static bool local_is(const LExpr *e, int l) { return e->kind == LX_LOCAL && e->local == l && e->lanes == 1; }

// The argext loop's parts: x's let, C's compare (GT or LT) and whether it has the NaN test.
typedef struct ArgExt {
  const LStmt *let, *iff;
  int x, best, pos;
  Op cmp;
  bool nan;
  DType dt;
} ArgExt;

// Whether c is C(x, b) of x = a->x, b = a->best (argext_loop's): sets a->cmp, a->nan,
// given a->dt (floats have the NaN test, ints not).
static bool argext_cond_of(ArgExt *a, const LExpr *c) {
  a->nan = c->kind == LX_BINARY && c->op == OP_LOGICAL_OR;
  if (a->nan) {  // (x ? b) || ((x != x) && (b == b))
    const LExpr *n = c->b;
    if (n->kind != LX_BINARY || n->op != OP_LOGICAL_AND || n->a->kind != LX_BINARY || n->a->op != OP_NE ||
        n->b->kind != LX_BINARY || n->b->op != OP_EQ || !local_is(n->a->a, a->x) || !local_is(n->a->b, a->x) ||
        !local_is(n->b->a, a->best) || !local_is(n->b->b, a->best))
      return false;
    c = c->a;
  }
  if (c->kind != LX_BINARY || (c->op != OP_GT && c->op != OP_LT) || !local_is(c->a, a->x) || !local_is(c->b, a->best))
    return false;
  a->cmp = c->op;
  bool fl = a->dt == DT_F32 || a->dt == DT_F64;
  if (!fl && a->dt != DT_I32 && a->dt != DT_I64)
    return false;
  if (a->nan != fl)
    return false;
  return true;
}

static bool argext_loop(const Sched *s, const LStmt *l, ArgExt *a) {
  const LStmtList *b = &l->body;
  if (b->len != 2 || b->data[0]->kind != LS_LET || b->data[1]->kind != LS_IF)
    return false;
  a->let = b->data[0], a->iff = b->data[1];
  a->x = a->let->local;
  a->dt = a->let->val->dt;
  const LStmtList *ib = &a->iff->body;
  if (ib->len != 2 || ib->data[0]->kind != LS_SET || ib->data[1]->kind != LS_SET || !local_is(ib->data[0]->val, a->x))
    return false;
  a->best = ib->data[0]->local, a->pos = ib->data[1]->local;
  const LExpr *c = a->iff->cond, *p = ib->data[1]->val;
  if (p->dt != DT_I64 || reads_local(p, a->x) || reads_local(p, a->best) || reads_local(p, a->pos) ||
      any_expr(p, is_any_load, 0) || s->k->locals.data[a->best] != a->dt)
    return false;
  if (!argext_cond_of(a, c))
    return false;
  bool *vloc = arena_alloc(&s->cx->arena, (size_t)s->k->locals.len + 1);  // E reads no local of the loop
  return !reads_local(a->let->val, a->x) && vec_ok(s, a->let->val, l->var, a->dt, vloc) &&
         !any_expr(a->let->val, is_local, a->best) && !any_expr(a->let->val, is_local, a->pos);
}

// e with loop var `var` replaced by r.
static LExpr *subst_var(Sched *s, const LExpr *e, int var, LExpr *r) {
  if (!e)
    return NULL;
  if (e->kind == LX_VAR && e->var == var)
    return r;
  LExpr *n = arena_alloc(&s->cx->arena, sizeof *n);
  *n = *e;
  n->a = subst_var(s, e->a, var, r);
  n->b = subst_var(s, e->b, var, r);
  n->c = subst_var(s, e->c, var, r);
  return n;
}

// The vector C(X, B): GT(X, B) (argmin: GT(B, X)), or with || ((X != X) && (B == B)).
static LExpr *argext_vcond(Sched *s, const ArgExt *a, LExpr *X, LExpr *B, int lanes) {
  LExpr *c = a->cmp == OP_GT ? gt(s, X, B) : gt(s, B, X);
  c->lanes = lanes;
  if (!a->nan)
    return c;
  LExpr *ne = lx_binary(s->cx, OP_NE, DT_BOOL, X, X), *eq = lx_binary(s->cx, OP_EQ, DT_BOOL, B, B);
  LExpr *n = lx_binary(s->cx, OP_LOGICAL_AND, DT_BOOL, ne, eq), *o = lx_binary(s->cx, OP_LOGICAL_OR, DT_BOOL, c, n);
  ne->lanes = eq->lanes = n->lanes = o->lanes = lanes;
  return o;
}

// The scalar loop of l's last l->extent % lanes elements, from element done on, appended
// to out (none where lanes divide the extent): l's body, every local keeping its name.
static void push_tail(Sched *s, const LStmt *l, int64_t done, int lanes, LStmtList *out) {
  if (!(l->extent % lanes))
    return;
  LStmt *rest = ls_loop(s->cx, s->k->nvars++, l->extent % lanes);
  int *map = arena_alloc(&s->cx->arena, sizeof(int) * (size_t)(s->k->locals.len + 1));
  for (int m = 0; m < s->k->locals.len; m++)
    map[m] = m;
  Clone rc = {l->var, rest->var, 1, done, map};
  emit_copy(s, l, &rc, &rest->body);
  push(s, out, rest);
}

// Loop l (an argext_loop) in lanes, appended to out; false where it is not one.
static bool split_argext(Sched *s, LStmt *l, LStmtList *out) {
  ArgExt a;
  if (l->parallel || !argext_loop(s, l, &a))
    return false;
  int lanes = LANES_BYTES / dtype_size(a.dt);
  int64_t nmain = l->extent / lanes;
  if (l->extent < 2 * lanes || (a.dt == DT_F32 && nmain >= ((int64_t)1 << 24)) ||
      (a.dt == DT_I32 && nmain > INT32_MAX))
    return false;
  DType dt = a.dt;
  int B = new_local(s, dt), I = new_local(s, dt), X = new_local(s, dt);
  LExpr *bref = lx_local(s->cx, dt, a.best), *pref = lx_local(s->cx, DT_I64, a.pos);
  push(s, out, ls_let(s->cx, B, lx_splat(s->cx, lanes, bref)));
  push(s, out, ls_let(s->cx, I, lx_splat(s->cx, lanes, dtype_is_float(dt) ? lx_const_f(s->cx, dt, 0) : lx_const_i(s->cx, dt, 0))));
  LStmt *main = ls_loop(s->cx, s->k->nvars++, nmain);
  int *same = arena_alloc(&s->cx->arena, sizeof(int) * (size_t)(s->k->locals.len + 1));
  for (int m = 0; m < s->k->locals.len; m++)
    same[m] = m;
  Clone c = {l->var, main->var, lanes, 0, same};
  bool *vloc = arena_alloc(&s->cx->arena, (size_t)s->k->locals.len + 1);
  push(s, &main->body, ls_let(s->cx, X, vec_expr(s, &c, a.let->val, lanes, same, vloc, &main->body)));
  LExpr *Xv = lx_local_v(s->cx, dt, lanes, X), *Bv = lx_local_v(s->cx, dt, lanes, B),
        *Iv = lx_local_v(s->cx, dt, lanes, I);
  LExpr *mv = lx_splat(s->cx, lanes, lx_cast(s->cx, dt, lx_var(s->cx, main->var)));
  LExpr *si = lx_select(s->cx, argext_vcond(s, &a, Xv, Bv, lanes), mv, Iv);
  LExpr *sb = lx_select(s->cx, argext_vcond(s, &a, Xv, Bv, lanes), Xv, Bv);
  si->lanes = sb->lanes = lanes;
  push(s, &main->body, ls_set(s->cx, I, si));
  push(s, &main->body, ls_set(s->cx, B, sb));
  push(s, out, main);
  const LExpr *P = a.iff->body.data[1]->val;
  for (int ln = 0; ln < lanes; ln++) {  // merge lane ln: C(v, b) || (v same as b && p(j) < p)
    int v = new_local(s, dt), pj = new_local(s, DT_I64);
    push(s, out, ls_let(s->cx, v, lx_lane(s->cx, lx_local_v(s->cx, dt, lanes, B), ln)));
    LExpr *j = lx_binary(s->cx, OP_ADD, DT_I64,
                         lx_binary(s->cx, OP_MUL, DT_I64, lx_cast(s->cx, DT_I64, lx_lane(s->cx, lx_local_v(s->cx, dt, lanes, I), ln)),
                                   lx_const_i(s->cx, DT_I64, lanes)),
                         lx_const_i(s->cx, DT_I64, ln));
    push(s, out, ls_let(s->cx, pj, subst_var(s, P, l->var, j)));
    LExpr *vv = lx_local(s->cx, dt, v), *pv = lx_local(s->cx, DT_I64, pj);
    LExpr *eq = lx_binary(s->cx, OP_EQ, DT_BOOL, vv, bref);
    same[a.x] = v;  // C(v, b)
    LExpr *better = clone_expr(s, &(Clone){-1, -1, 1, 0, same}, a.iff->cond);
    same[a.x] = a.x;
    if (a.nan)
      eq = lx_binary(s->cx, OP_LOGICAL_OR, DT_BOOL, eq,
                     lx_binary(s->cx, OP_LOGICAL_AND, DT_BOOL, lx_binary(s->cx, OP_NE, DT_BOOL, vv, vv),
                               lx_binary(s->cx, OP_NE, DT_BOOL, bref, bref)));
    LExpr *earlier = lx_binary(s->cx, OP_LOGICAL_AND, DT_BOOL, eq, lx_binary(s->cx, OP_LT, DT_BOOL, pv, pref));
    LStmt *upd = ls_if(s->cx, lx_binary(s->cx, OP_LOGICAL_OR, DT_BOOL, better, earlier));
    push(s, &upd->body, ls_set(s->cx, a.best, vv));
    push(s, &upd->body, ls_set(s->cx, a.pos, pv));
    push(s, out, upd);
  }
  push_tail(s, l, nmain * lanes, lanes, out);
  return true;
}

// The column form (ir/row.c's col_argext and its split parts): best and pos are
// buffers, one element per kept column, and the loop runs over consecutive columns:
// `for j { let x = E(j); let b = best[f(j)]; if (C(x, b)) { best[f(j)] = x; pos[g(j)] = P } }`
// with P the same for every j and pos of x's dtype (row.c's pos_dtype). The columns are
// independent: L at a time, M = C(X, B); pos = M ? splat(P) : pos; best = M ? X : B,
// each lane the scalar step of its column (argmax(0) of [4096, 8192] f32 was 4-7x
// slower than amax(0) with the if, which neither gcc nor LLVM vectorized).
static bool split_colargext(Sched *s, LStmt *l, LStmtList *out) {
  const LStmtList *b = &l->body;
  if (l->parallel || b->len != 3 || b->data[0]->kind != LS_LET || b->data[1]->kind != LS_LET ||
      b->data[2]->kind != LS_IF)
    return false;
  ArgExt a = {.let = b->data[0], .iff = b->data[2], .x = b->data[0]->local, .best = b->data[1]->local, .pos = -1,
              .dt = b->data[0]->val->dt};
  const LExpr *bl = b->data[1]->val;
  const LStmtList *ib = &a.iff->body;
  if (bl->kind != LX_LOAD || bl->dt != a.dt || bl->idx.dyn || coef_of(&bl->idx, l->var) != 1 || ib->len != 2 ||
      ib->data[0]->kind != LS_STORE || ib->data[1]->kind != LS_STORE || ib->data[0]->buf != bl->buf ||
      !index_equal(&ib->data[0]->idx, l->var, &bl->idx, l->var) || !local_is(ib->data[0]->val, a.x) ||
      !argext_cond_of(&a, a.iff->cond))
    return false;
  const LStmt *ps = ib->data[1];
  int pbuf = ps->buf, bbuf = bl->buf;
  const LExpr *P = ps->val;
  bool *vloc = arena_alloc(&s->cx->arena, (size_t)s->k->locals.len + 1);
  if (pbuf == bbuf || ps->idx.dyn || coef_of(&ps->idx, l->var) != 1 || P->dt != a.dt ||
      s->p->bufs.data[s->k->args.data[pbuf].buf].dtype != a.dt ||
      s->p->bufs.data[s->k->args.data[bbuf].buf].dtype != a.dt || varies(P, l->var, vloc) ||
      any_expr(P, is_any_load, 0) || reads_local(P, a.x) || reads_local(P, a.best) ||
      !vec_ok(s, a.let->val, l->var, a.dt, vloc) || reads_local(a.let->val, a.best) || lx_loads(a.let->val, pbuf) ||
      lx_loads(a.let->val, bbuf))
    return false;
  int lanes = LANES_BYTES / dtype_size(a.dt);
  int64_t nmain = l->extent / lanes;
  if (nmain < 1)
    return false;
  DType dt = a.dt;
  int X = new_local(s, dt), B = new_local(s, dt);
  LStmt *main = ls_loop(s->cx, s->k->nvars++, nmain);
  int *same = arena_alloc(&s->cx->arena, sizeof(int) * (size_t)(s->k->locals.len + 1));
  for (int m = 0; m < s->k->locals.len; m++)
    same[m] = m;
  Clone c = {l->var, main->var, lanes, 0, same};
  LIndex bi = clone_index(s, &c, &bl->idx), pi = clone_index(s, &c, &ps->idx);
  push(s, &main->body, ls_let(s->cx, X, vec_expr(s, &c, a.let->val, lanes, same, vloc, &main->body)));
  push(s, &main->body, ls_let(s->cx, B, lx_vload(s->cx, dt, lanes, bbuf, bi)));
  LExpr *Xv = lx_local_v(s->cx, dt, lanes, X), *Bv = lx_local_v(s->cx, dt, lanes, B);
  LExpr *sp = lx_select(s->cx, argext_vcond(s, &a, Xv, Bv, lanes), lx_splat(s->cx, lanes, clone_expr(s, &c, P)),
                        lx_vload(s->cx, dt, lanes, pbuf, pi));
  LExpr *sb = lx_select(s->cx, argext_vcond(s, &a, Xv, Bv, lanes), Xv, Bv);
  sp->lanes = sb->lanes = lanes;
  push(s, &main->body, ls_store(s->cx, pbuf, pi, sp));
  push(s, &main->body, ls_store(s->cx, bbuf, bi, sb));
  push(s, out, main);
  push_tail(s, l, nmain * lanes, lanes, out);
  return true;
}

// Replaces innermost float reduction loops in body (recursively) by their lane form.
static void split_list(Sched *s, LStmtList *body) {
  LStmtList out = {0};
  for (int i = 0; i < body->len; i++) {
    LStmt *l = body->data[i];
    if (l->kind == LS_IF)
      split_list(s, &l->body);
    if (l->kind != LS_LOOP) {
      push(s, &out, l);
      continue;
    }
    split_list(s, &l->body);
    if (split_argext(s, l, &out) || split_colargext(s, l, &out))
      continue;
    bool red[l->body.len > 0 ? l->body.len : 1];
    DType dt;
    int lanes = 0;
    if (!l->parallel && splittable(l, red, &dt))
      lanes = LANES_BYTES / (dt == DT_F64 ? 8 : 4);
    if (!lanes || l->extent < 2 * lanes) {
      push(s, &out, l);
      continue;
    }
    if (split_vectors(s, l, red, dt, lanes, &out))
      continue;
    int nloc = s->k->locals.len;
    int *map[lanes];
    for (int ln = 0; ln < lanes; ln++) {
      map[ln] = arena_alloc(&s->cx->arena, sizeof(int) * (size_t)(nloc + 1));
      for (int m = 0; m < nloc; m++)
        map[ln][m] = m;
    }
    for (int j = 0; j < l->body.len; j++) {  // lanes 1.. start from the op's identity
      const LStmt *st = l->body.data[j];
      for (int ln = 1; ln < lanes && red[j]; ln++) {
        map[ln][st->local] = new_local(s, dt);
        push(s, &out, ls_let(s->cx, map[ln][st->local], lx_const_f(s->cx, dt, identity(fold_op(st)))));
      }
    }
    int64_t nmain = l->extent / lanes;
    LStmt *main = ls_loop(s->cx, s->k->nvars++, nmain);
    for (int ln = 0; ln < lanes; ln++) {
      Clone c = {l->var, main->var, lanes, ln, map[ln]};
      emit_copy(s, l, &c, &main->body);
    }
    push(s, &out, main);
    if (l->extent % lanes) {
      LStmt *rest = ls_loop(s->cx, s->k->nvars++, l->extent % lanes);
      Clone c = {l->var, rest->var, 1, nmain * lanes, map[0]};
      emit_copy(s, l, &c, &rest->body);
      push(s, &out, rest);
    }
    for (int j = 0; j < l->body.len; j++) {  // acc = ((acc . lane1) . (lane2 . lane3)) . ...
      const LStmt *st = l->body.data[j];
      if (!red[j])
        continue;
      LExpr *v[lanes];
      for (int ln = 0; ln < lanes; ln++)
        v[ln] = lx_local(s->cx, dt, map[ln][st->local]);
      for (int w = lanes; w > 1; w /= 2)
        for (int m = 0; m < w / 2; m++)
          v[m] = fold_apply(s, &out, fold_op(st), dt, v[2 * m], v[2 * m + 1]);
      push(s, &out, ls_set(s->cx, st->local, v[0]));
    }
  }
  *body = out;
}

// ---- a * 2^k + c as one fused multiply-add ----
// The elementwise workload's x * 2 + 1 rounds twice, the first time exactly: a * 2^k
// (k >= 0, either sign) loses no bit short of overflow (subnormal a included), so
// fma(a, 2^k, c) rounds the same exact sum once and one vector operation goes. The
// two forms part only where a * 2^k overflows (to +-inf) and c pulls the exact sum back
// under the overflow threshold: such a * 2^k is at least 2^128 (f64: 2^1024), 2^103
// (2^970) beyond the threshold, so c is a constant of magnitude at most 2^100 (2^960).
// Zeros: a * 2^k keeps a's sign, and fma's exact sum of two zeros is the sign the
// rounded sum has. x - c is x + (-c) and c - x is c + (-x) in IEEE 754, so a * 2^k - c
// and c - a * 2^k fold too. Only with FMA (elsewhere fma is a libm call), and only for
// LLVM: the elementwise workload 1-2% faster there, but 3-4% slower through gcc, which
// then reads x from memory in 3 operations (interleaved, 3 runs, 13:32 UTC).

// Whether e is the constant +-2^j, j >= 0, of a float type.
static bool pow2_const(const LExpr *e) {
  if (e->kind != LX_CONST || (e->dt != DT_F32 && e->dt != DT_F64) || e->lanes != 1 || !isfinite(e->f))
    return false;
  int ex;
  double m = frexp(fabs(e->f), &ex);
  return m == 0.5 && ex >= 1;
}

static bool small_const(const LExpr *e) {
  return e->kind == LX_CONST && e->lanes == 1 && fabs(e->f) <= (e->dt == DT_F32 ? 0x1p100 : 0x1p960);
}

// e (in place, then its operands) as fma(a, K, c) where it is a * K +- c or c +- a * K.
static void fold_scale_add(Ctx *cx, LExpr *e) {
  if (!e)
    return;
  fold_scale_add(cx, e->a);
  fold_scale_add(cx, e->b);
  fold_scale_add(cx, e->c);
  fold_scale_add(cx, e->idx.dyn);
  if (e->kind != LX_BINARY || (e->op != OP_ADD && e->op != OP_SUB) || (e->dt != DT_F32 && e->dt != DT_F64) ||
      e->lanes != 1)
    return;
  for (int side = 0; side < 2; side++) {
    LExpr *mul = side ? e->b : e->a, *c = side ? e->a : e->b;
    if (mul->kind != LX_BINARY || mul->op != OP_MUL || mul->dt != e->dt || mul->lanes != 1 || !small_const(c) ||
        c->dt != e->dt)
      continue;
    LExpr *a = pow2_const(mul->b) ? mul->a : pow2_const(mul->a) ? mul->b : NULL;
    LExpr *k = a == mul->a ? mul->b : mul->a;
    if (!a || a->dt != e->dt || a->lanes != 1)
      continue;
    if (e->op == OP_SUB && side == 0)  // a * K - c
      c = lx_const_f(cx, e->dt, -c->f);
    else if (e->op == OP_SUB)  // c - a * K
      k = lx_const_f(cx, e->dt, -k->f);
    *e = *lx_fma(cx, a, k, c);
    return;
  }
}

static void fold_scale_adds(Ctx *cx, LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    LStmt *st = l->data[i];
    fold_scale_add(cx, st->val);
    fold_scale_add(cx, st->cond);
    fold_scale_add(cx, st->idx.dyn);
    fold_scale_adds(cx, &st->body);
  }
}

// ---- streaming stores ----

// Whether some kernel reads program buffer b.
static bool buf_read(const LProgram *p, int b) {
  for (int i = 0; i < p->kernels.len; i++)
    for (int a = 0; a < p->kernels.data[i]->args.len; a++)
      if (p->kernels.data[i]->args.data[a].buf == b && p->kernels.data[i]->args.data[a].read)
        return true;
  return false;
}

// A result that no kernel reads back (no accumulation, no later pass) is written past
// the caches when it is at least STREAM_FLOOR bytes and the kernel's buffers together
// (what it reads and writes) exceed 1.5 last-level caches: then they cannot all stay in
// the cache from one call to the next, and a normal store first reads every line it
// writes. Below that, plain stores win: the result stays in the L3 for whoever reads it
// next, and a call that writes the same block again (a model run, a benchmark loop)
// finds it there. A row kernel (KK_ROW) streams from STREAM_FLOOR on whatever its
// footprint: it reads each row again after the row's reductions, from the core's L2,
// where plain stores of its result would take the row's lines (layer_norm's 8 MiB
// result: 0.186-0.21 ms streamed against 0.198-0.25 plain, `tdslc bench`, both
// backends). Measured with 2 threads on this 32 MiB-L3 Zen 4 VM, non-temporal
// against plain stores, `tdslc bench` (same block every call): x * 2 + 1 of 16 MiB (32
// MiB of buffers) 0.31 ms against 0.22-0.26, of 32 MiB (64 MiB) 0.63-0.70 against
// 0.94-1.02; (N, 1) + (1, 4096) of 16 MiB 0.30 against 0.10-0.25, of 32 MiB 0.60 against
// 0.34-0.54, of 64 MiB the same (1.2 ms). TDSL_STREAM_MIN (cpu->stream_min) replaces the
// rule by a size alone. A kernel whose stores are tiled (ir/ew.c's transposing copies and
// elementwise tiles: lines written far apart, 5x slower through the caches) has already
// marked its written args: those are streamed whatever the footprint. Both CPU backends
// act on the mark (above).
//
// The cache the rule compares with is CpuTarget.llc: the host's bounded per CPU, where a
// VM's reported L3 is most of a server chip's (ir/cpu.c, cpu_usable_llc).
static const int64_t STREAM_FLOOR = (int64_t)8 << 20;
// Saturating: a buffer's element count may be near 2^62 (its allocation fails at run
// time with a clear error, tests/fuzz/regressions/matmul_flops_overflow.tdsl).
static int64_t buf_bytes(const LProgram *p, int b) {
  return td_sat_mul(p->bufs.data[b].numel, dtype_size(p->bufs.data[b].dtype));
}

static void mark_streams(LProgram *p, const CpuTarget *cpu) {
  int64_t llc = cpu->llc;
  for (int i = 0; i < p->kernels.len; i++) {
    const LKernel *k = p->kernels.data[i];
    int64_t footprint = 0;
    for (int a = 0; a < k->args.len; a++)
      footprint = td_sat_add(footprint, buf_bytes(p, k->args.data[a].buf));
    bool big = cpu->stream_min > 0 || k->kind == KK_ROW || footprint > llc + llc / 2;
    int64_t floor = cpu->stream_min > 0 ? cpu->stream_min : STREAM_FLOOR;
    for (int a = 0; a < k->args.len; a++) {
      LArg *arg = &k->args.data[a];
      arg->stream = (big || arg->stream) && p->bufs.data[arg->buf].kind == LB_RESULT && arg->written &&
                    buf_bytes(p, arg->buf) >= floor && !buf_read(p, arg->buf);
    }
  }
}

void sched_cpu(Ctx *cx, LProgram *p, const CpuTarget *cpu) {
  p->cpu = true;
  for (int i = 0; i < p->kernels.len; i++) {
    Sched s = {cx, p, p->kernels.data[i], cpu};
    keep_terms(&s, p);
    if (cpu->fma && !cpu->c_source)
      fold_scale_adds(cx, &s.k->body);
    vecmath_kernel(cx, s.k, cpu);
    split_list(&s, &s.k->body);
    hoist_invariants(cx, s.k);
  }
  mark_streams(p, cpu);
  loop_verify(p);
}
