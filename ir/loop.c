// ir/loop.c: the loop IR's constructors and its verifier (its printed form,
// --emit=kernels, is ir/loop_print.c). Constructors allocate in cx->arena and return
// zeroed nodes whose `err` is -1 (no error) until the caller sets one. loop_verify
// checks what every backend relies on: loop variables are used only inside their
// loops, locals are declared (LS_LET) before they are read or set, every load and
// store stays inside its buffer for every iteration (the affine index's min and max
// over the loop extents), arguments are flagged read/written as they are used, and
// expression types follow the op semantics of ir/loop.h.
#include "ir/loop.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

// ---- construction ----

LExpr *lx_new(Ctx *cx, LExprKind kind, DType dt) {
  LExpr *e = arena_alloc(&cx->arena, sizeof *e);
  e->kind = kind;
  e->dt = dt;
  e->op = OP_COUNT;
  e->err = -1;
  e->var = -1;
  e->local = -1;
  e->buf = -1;
  e->lanes = 1;
  return e;
}

LExpr *lx_const_f(Ctx *cx, DType dt, double v) {
  LExpr *e = lx_new(cx, LX_CONST, dt);
  e->f = v;
  return e;
}

LExpr *lx_const_i(Ctx *cx, DType dt, int64_t v) {
  LExpr *e = lx_new(cx, LX_CONST, dt);
  e->i = v;
  e->f = (double)v;
  return e;
}

LExpr *lx_var(Ctx *cx, int var) {
  LExpr *e = lx_new(cx, LX_VAR, DT_I64);
  e->var = var;
  return e;
}

LExpr *lx_local(Ctx *cx, DType dt, int local) {
  LExpr *e = lx_new(cx, LX_LOCAL, dt);
  e->local = local;
  return e;
}

LExpr *lx_load(Ctx *cx, DType dt, int buf, LIndex idx) {
  LExpr *e = lx_new(cx, LX_LOAD, dt);
  e->buf = buf;
  e->idx = idx;
  return e;
}

LExpr *lx_unary(Ctx *cx, Op op, DType dt, LExpr *a) {
  LExpr *e = lx_new(cx, LX_UNARY, dt);
  e->op = op;
  e->a = a;
  return e;
}

LExpr *lx_binary(Ctx *cx, Op op, DType dt, LExpr *a, LExpr *b) {
  LExpr *e = lx_new(cx, LX_BINARY, dt);
  e->op = op;
  e->a = a;
  e->b = b;
  return e;
}

LExpr *lx_select(Ctx *cx, LExpr *c, LExpr *a, LExpr *b) {
  LExpr *e = lx_new(cx, LX_SELECT, a->dt);
  e->a = c;
  e->b = a;
  e->c = b;
  return e;
}

LExpr *lx_cast(Ctx *cx, DType dt, LExpr *a) {
  LExpr *e = lx_new(cx, LX_CAST, dt);
  e->a = a;
  return e;
}

LExpr *lx_bitcast(Ctx *cx, DType dt, LExpr *a) {
  LExpr *e = lx_new(cx, LX_BITCAST, dt);
  e->a = a;
  return e;
}

LExpr *lx_fma(Ctx *cx, LExpr *a, LExpr *b, LExpr *c) {
  LExpr *e = lx_new(cx, LX_FMA, a->dt);
  e->a = a;
  e->b = b;
  e->c = c;
  e->lanes = a->lanes;
  return e;
}

LExpr *lx_splat(Ctx *cx, int lanes, LExpr *a) {
  LExpr *e = lx_new(cx, LX_SPLAT, a->dt);
  e->a = a;
  e->lanes = lanes;
  return e;
}

LExpr *lx_vload(Ctx *cx, DType dt, int lanes, int buf, LIndex idx) {
  LExpr *e = lx_load(cx, dt, buf, idx);
  e->lanes = lanes;
  return e;
}

LExpr *lx_local_v(Ctx *cx, DType dt, int lanes, int local) {
  LExpr *e = lx_local(cx, dt, local);
  e->lanes = lanes;
  return e;
}

LExpr *lx_lane(Ctx *cx, LExpr *v, int lane) {
  LExpr *e = lx_new(cx, LX_LANE, v->dt);
  e->a = v;
  e->i = lane;
  return e;
}

LExpr *lx_shuffle(Ctx *cx, LExpr *a, LExpr *b, const int *sel, int lanes) {
  LExpr *e = lx_new(cx, LX_SHUFFLE, a->dt);
  e->a = a;
  e->b = b;
  e->lanes = lanes;
  int *s = arena_alloc(&cx->arena, sizeof(int) * (size_t)lanes);
  memcpy(s, sel, sizeof(int) * (size_t)lanes);
  e->sel = s;
  return e;
}

DType lx_bits_dtype(DType dt) {
  switch (dt) {
  case DT_F16: case DT_BF16: return DT_I16;
  case DT_BOOL: return DT_U8;
  default: return dt;
  }
}

// Whether a vector of dt may move elements of a buffer of dtype bt (the same dtype, or
// the bits of one: ir/loop.h's Lanes).
static bool moves_elements(DType dt, DType bt) { return dt == bt || lx_bits_dtype(bt) == dt; }

// The dtypes of vectors that are only moved, and of those computed with.
static bool movable(DType dt) {
  switch (dt) {
  case DT_F32: case DT_F64: case DT_I8: case DT_U8: case DT_I16: case DT_I32: case DT_I64: return true;
  default: return false;
  }
}

static void lanes_of(const LStmtList *body, int *lanes) {
  for (int i = 0; i < body->len; i++) {
    const LStmt *s = body->data[i];
    if (s->kind == LS_LET)
      lanes[s->local] = s->val->lanes;
    else if (s->kind == LS_LOOP || s->kind == LS_IF)
      lanes_of(&s->body, lanes);
  }
}

void loop_local_lanes(const LKernel *k, int *lanes) {
  for (int i = 0; i < k->locals.len; i++)
    lanes[i] = 1;
  lanes_of(&k->body, lanes);
}

static LStmt *new_stmt(Ctx *cx, LStmtKind kind) {
  LStmt *s = arena_alloc(&cx->arena, sizeof *s);
  s->kind = kind;
  s->var = -1;
  s->buf = -1;
  s->local = -1;
  return s;
}

LStmt *ls_loop(Ctx *cx, int var, int64_t extent) {
  LStmt *s = new_stmt(cx, LS_LOOP);
  s->var = var;
  s->extent = extent;
  return s;
}

LStmt *ls_store(Ctx *cx, int buf, LIndex idx, LExpr *val) {
  LStmt *s = new_stmt(cx, LS_STORE);
  s->buf = buf;
  s->idx = idx;
  s->val = val;
  return s;
}

LStmt *ls_prefetch(Ctx *cx, int buf, LIndex idx) {
  LStmt *s = new_stmt(cx, LS_PREFETCH);
  s->buf = buf;
  s->idx = idx;
  return s;
}

LStmt *ls_let(Ctx *cx, int local, LExpr *val) {
  LStmt *s = new_stmt(cx, LS_LET);
  s->local = local;
  s->val = val;
  return s;
}

LStmt *ls_set(Ctx *cx, int local, LExpr *val) {
  LStmt *s = new_stmt(cx, LS_SET);
  s->local = local;
  s->val = val;
  return s;
}

LStmt *ls_if(Ctx *cx, LExpr *cond) {
  LStmt *s = new_stmt(cx, LS_IF);
  s->cond = cond;
  return s;
}

LExpr *lx_arg(Ctx *cx, int i) {
  LExpr *e = lx_new(cx, LX_ARG, DT_I64);
  e->i = i;
  return e;
}

LStmt *ls_call(Ctx *cx, int fn, int nptr, int nval) {
  LStmt *s = new_stmt(cx, LS_CALL);
  LCall *c = arena_alloc(&cx->arena, sizeof *c);
  c->fn = fn;
  c->nptr = nptr;
  c->nval = nval;
  c->ptr = arena_alloc(&cx->arena, sizeof *c->ptr * (size_t)(nptr + 1));
  c->at = arena_alloc(&cx->arena, sizeof *c->at * (size_t)(nptr + 1));
  c->reach = arena_alloc(&cx->arena, sizeof *c->reach * (size_t)(nptr + 1));
  c->val = arena_alloc(&cx->arena, sizeof *c->val * (size_t)(nval + 1));
  s->call = c;
  return s;
}

// The element index of view v when dim k is walked by loop variable vars[k]: the
// view's offset plus one term per dim that moves (stride != 0) and has a variable
// (vars[k] >= 0; -1 pins the dim at index 0).
LIndex li_affine(const View *v, const int *vars) {
  LIndex ix = {0};
  ix.base = v->offset;
  for (int k = 0; k < v->ndim; k++) {
    if (v->strides[k] == 0 || vars[k] < 0)
      continue;
    TD_ASSERT(ix.nterms < LI_MAX_TERMS);
    ix.var[ix.nterms] = vars[k];
    ix.coef[ix.nterms] = v->strides[k];
    ix.nterms++;
  }
  return ix;
}

bool lx_same_index(const LIndex *x, const LIndex *y) {
  if (x->base != y->base || x->nterms != y->nterms)
    return false;
  for (int t = 0; t < x->nterms; t++)
    if (x->var[t] != y->var[t] || x->coef[t] != y->coef[t])
      return false;
  return true;
}

bool lx_loads(const LExpr *e, int buf) {
  return e && ((e->kind == LX_LOAD && e->buf == buf) || lx_loads(e->idx.dyn, buf) || lx_loads(e->a, buf) ||
               lx_loads(e->b, buf) || lx_loads(e->c, buf));
}

bool lx_same(const LExpr *x, const LExpr *y) {
  if (!x || !y)
    return x == y;
  if (x->kind != y->kind || x->dt != y->dt || x->op != y->op || memcmp(&x->f, &y->f, sizeof x->f) || x->i != y->i ||
      x->var != y->var || x->local != y->local || x->buf != y->buf || x->err != y->err || x->wrap != y->wrap ||
      x->lanes != y->lanes)
    return false;
  if (x->kind == LX_LOAD && (!lx_same_index(&x->idx, &y->idx) || !lx_same(x->idx.dyn, y->idx.dyn)))
    return false;
  if (x->kind == LX_SHUFFLE && memcmp(x->sel, y->sel, sizeof *x->sel * (size_t)x->lanes))
    return false;
  return lx_same(x->a, y->a) && lx_same(x->b, y->b) && lx_same(x->c, y->c);
}

// A checked index, or an integer floor_divide, remainder or pow (division by zero, a
// negative exponent) that carries an error.
bool lx_raises_here(const LExpr *e) {
  if (e->err < 0)
    return false;
  if (e->kind == LX_CHECKED_INDEX)
    return true;
  return e->kind == LX_BINARY && dtype_is_int(e->dt) &&
         (e->op == OP_FLOOR_DIVIDE || e->op == OP_REMAINDER || e->op == OP_POW);
}

bool lx_raises(const LExpr *e) {
  if (!e)
    return false;
  if (lx_raises_here(e) || (e->kind == LX_LOAD && lx_raises(e->idx.dyn)))
    return true;
  return lx_raises(e->a) || lx_raises(e->b) || lx_raises(e->c);
}

int loop_host_bufs(const LProgram *p) {
  int n = 0;
  while (n < p->bufs.len && p->bufs.data[n].kind != LB_SHARED)
    n++;
  for (int i = n; i < p->bufs.len; i++)
    TD_ASSERT(p->bufs.data[i].kind == LB_SHARED);
  return n;
}

// ---- verification ----

typedef struct Verify {
  const LProgram *p;
  const LKernel *k;
  int64_t *extent;  // per var: the extent of its enclosing loop, -1 when not inside it
                    // (GPU form: LS_VAR's bound, and the thread's vars' launch sizes)
  bool *unbounded;  // per var: an LS_VAR whose value has no known bound
  bool *declared;   // per local: an LS_LET of it is in scope
  const int *lanes; // per local: its lanes (loop_local_lanes)
  bool dead;        // inside a loop of extent 0: nothing here ever runs
  bool func;        // verifying a function (LProgram.funcs)
} Verify;

// The range [*lo, *hi] of an integer expression over the active loops, when one can
// be bounded (constants, loop vars, checked indices and + - * of those).
static bool expr_range(const Verify *V, const LExpr *e, int64_t *lo, int64_t *hi) {
  int64_t alo, ahi, blo, bhi;
  switch (e->kind) {
  case LX_CONST: *lo = *hi = e->i; return true;
  case LX_VAR:
    if (e->var < 0 || e->var >= V->k->nvars || V->extent[e->var] < 1 || V->unbounded[e->var])
      return false;
    *lo = 0;
    *hi = V->extent[e->var] - 1;
    return true;
  case LX_CHECKED_INDEX:  // into a dim of size 0 it always raises: what it feeds never runs
    *lo = 0;
    *hi = e->i - 1;
    return e->i > 0;
  case LX_CAST: return dtype_is_int(e->dt) && dtype_is_int(e->a->dt) && expr_range(V, e->a, lo, hi);
  case LX_IDIV:
    if (!expr_range(V, e->a, &alo, &ahi) || e->b->kind != LX_CONST || alo < 0 || e->b->i <= 0)
      return false;
    *lo = e->op == OP_FLOOR_DIVIDE ? alo / e->b->i : 0;
    *hi = e->op == OP_FLOOR_DIVIDE ? ahi / e->b->i : (ahi < e->b->i ? ahi : e->b->i - 1);
    return true;
  case LX_BINARY:
    if (!expr_range(V, e->a, &alo, &ahi) || !expr_range(V, e->b, &blo, &bhi))
      return false;
    // (a bound past int64_t bounds nothing)
    if (e->op == OP_ADD)
      return td_add(alo, blo, lo) && td_add(ahi, bhi, hi);
    if (e->op == OP_SUB)
      return bhi > INT64_MIN && blo > INT64_MIN && td_add(alo, -bhi, lo) && td_add(ahi, -blo, hi);
    if (e->op == OP_MUL) {
      int64_t c[4];
      if (!td_mul(alo, blo, &c[0]) || !td_mul(alo, bhi, &c[1]) || !td_mul(ahi, blo, &c[2]) || !td_mul(ahi, bhi, &c[3]))
        return false;
      *lo = *hi = c[0];
      for (int i = 1; i < 4; i++) {
        *lo = c[i] < *lo ? c[i] : *lo;
        *hi = c[i] > *hi ? c[i] : *hi;
      }
      return true;
    }
    return false;
  default: return false;
  }
}

static void verify_expr(Verify *V, const LExpr *e);

// Every variable of the index is live, and (when the index can be bounded) every
// element it reaches over the loops' iterations lies inside the argument's buffer.
// Elements ix + 0..lanes must stay in the buffer.
static void verify_index_lanes(Verify *V, int arg, const LIndex *ix, int lanes) {
  TD_ASSERT(arg >= 0 && arg < V->k->args.len);
  int b = V->k->args.data[arg].buf;
  TD_ASSERT(b >= 0 && b < V->p->bufs.len);
  TD_ASSERT(ix->nterms >= 0 && ix->nterms <= LI_MAX_TERMS);
  int64_t lo = ix->base, hi = ix->base;
  bool bounded = true;
  for (int t = 0; t < ix->nterms; t++) {
    int v = ix->var[t];
    TD_ASSERT(v >= 0 && v < V->k->nvars);
    TD_ASSERT(V->extent[v] >= 0);  // used inside its loop
    if (V->unbounded[v]) {  // (its extent, INT64_MAX, bounds nothing)
      bounded = false;
      continue;
    }
    int64_t last = V->extent[v] > 0 ? V->extent[v] - 1 : 0, c = ix->coef[t];
    lo += c < 0 ? c * last : 0;
    hi += c > 0 ? c * last : 0;
  }
  if (ix->dyn) {
    TD_ASSERT(dtype_is_int(ix->dyn->dt));
    verify_expr(V, ix->dyn);
    int64_t dlo, dhi;
    bounded &= expr_range(V, ix->dyn, &dlo, &dhi);
    lo += dlo;
    hi += dhi;
  }
  if (bounded && !V->dead) {  // from the argument's start (LArg.at)
    int64_t at = V->k->args.data[arg].at;
    TD_ASSERT(at >= 0 && lo + at >= 0);
    TD_ASSERT(hi + at + lanes - 1 < V->p->bufs.data[b].numel);
  }
}

// An mma operand: the 16 x 16 (A) or 16 x 8 (B) elements it reads lie in its buffer.
static void verify_frag(Verify *V, const LExpr *e) {
  TD_ASSERT((e->dt == DT_F16 || e->dt == DT_BF16) && e->b && e->b->kind == LX_CONST && e->b->i > 0);
  TD_ASSERT(V->p->bufs.data[V->k->args.data[e->buf].buf].dtype == e->dt && V->k->args.data[e->buf].read);
  int64_t ld = e->b->i;
  // its rows of ld, and the elements of a row: A 16 x 16; B 8 rows of 16 (n-major) or 16 of 8
  int64_t rows = e->i == LG_FRAG_B_NK ? 8 : 16, cols = e->i == LG_FRAG_B_KN ? 8 : 16;
  LIndex last = e->idx;
  last.base += (rows - 1) * ld;
  verify_index_lanes(V, e->buf, &e->idx, 1);
  verify_index_lanes(V, e->buf, &last, (int)cols);
}

static void verify_unary(const LExpr *e) {
  if (op_class(e->op) != OC_UNARY || !op_flags(e->op))
    td_internal_error(__FILE__, __LINE__, "'%s' is not a unary op of the loop IR", op_name(e->op));
  TD_ASSERT(e->a->dt == e->dt && op_computes_in(e->op, e->dt));
}

static void verify_binary(const LExpr *e) {
  if (op_class(e->op) != OC_BINARY)
    td_internal_error(__FILE__, __LINE__, "'%s' is not a binary op of the loop IR", op_name(e->op));
  DType a = e->a->dt, b = e->b->dt, t = e->dt;
  if (op_flags(e->op) & OF_COMPARE)
    TD_ASSERT(a == b && t == DT_BOOL && op_computes_in(e->op, a));
  else
    TD_ASSERT(a == t && b == t && op_computes_in(e->op, t));
}

// A vector select's condition over operands of dt (ir/loop.h's Lanes): p > q, or
// (p > q) || ((s != s) && (t == t)) (ir/sched.c's argmax in lanes), all of the select's lanes.
static bool vec_cond(const LExpr *c, DType dt) {
  bool gt = c->kind == LX_BINARY && c->op == OP_GT && c->a->dt == dt;
  if (gt || c->kind != LX_BINARY || c->op != OP_LOGICAL_OR)
    return gt;
  const LExpr *n = c->b;
  return vec_cond(c->a, dt) && n->kind == LX_BINARY && n->op == OP_LOGICAL_AND && n->lanes == c->lanes &&
         n->a->kind == LX_BINARY && n->a->op == OP_NE && n->a->a->dt == dt && n->a->lanes == c->lanes &&
         n->b->kind == LX_BINARY && n->b->op == OP_EQ && n->b->a->dt == dt && n->b->lanes == c->lanes;
}

static void verify_expr(Verify *V, const LExpr *e) {
  TD_ASSERT(e && e->kind < LX_COUNT && e->dt < DT_COUNT);
  TD_ASSERT(e->err >= -1 && e->err < V->k->errors.len);
  TD_ASSERT(e->lanes >= 1);
  if (e->lanes > 1) {  // the vector forms of ir/loop.h's Lanes
    TD_ASSERT(e->kind == LX_LOAD || e->kind == LX_LOCAL || e->kind == LX_SPLAT || e->kind == LX_FMA ||
              e->kind == LX_INSERT || e->kind == LX_MMA || e->kind == LX_FRAG || e->kind == LX_SHUFFLE ||
              (e->kind == LX_BINARY && (e->op == OP_ADD || e->op == OP_SUB || e->op == OP_MUL || e->op == OP_GT ||
                                          e->op == OP_MAXIMUM || e->op == OP_MINIMUM || e->op == OP_NE ||
                                          e->op == OP_EQ || e->op == OP_LOGICAL_AND || e->op == OP_LOGICAL_OR)) ||
              (e->kind == LX_SELECT && vec_cond(e->a, e->dt) && e->b->lanes == e->lanes && e->c->lanes == e->lanes));
    TD_ASSERT(e->kind == LX_SPLAT || e->kind == LX_LOAD || e->kind == LX_LOCAL || e->kind == LX_MMA ||
              e->kind == LX_FRAG || e->a->lanes == e->lanes || (e->kind == LX_SHUFFLE && 2 * e->a->lanes == e->lanes));
    TD_ASSERT(e->kind != LX_INSERT || e->b->lanes == 1);
    TD_ASSERT(e->kind != LX_BINARY || e->b->lanes == e->lanes);
    if (!V->k->gpu) {  // the GPU form's vectors are of any dtype (ir/loop.h)
      // a comparison: its operands' (a select's condition, vec_cond; as are its ands and ors of DT_BOOL)
      bool cmp = e->kind == LX_BINARY && (e->op == OP_GT || e->op == OP_NE || e->op == OP_EQ);
      bool logic = e->kind == LX_BINARY && (e->op == OP_LOGICAL_AND || e->op == OP_LOGICAL_OR);
      DType vt = cmp ? e->a->dt : e->dt;
      bool sel = e->kind == LX_SELECT || e->kind == LX_SPLAT || cmp;  // of i32/i64 too: argmax in lanes
      TD_ASSERT(logic || movable(vt));
      TD_ASSERT(logic || vt == DT_F32 || vt == DT_F64 || e->kind == LX_LOAD || e->kind == LX_LOCAL ||
                e->kind == LX_SHUFFLE || (sel && (vt == DT_I32 || vt == DT_I64)));
    }
    TD_ASSERT(e->kind != LX_FMA || (e->b->lanes == e->lanes && e->c->lanes == e->lanes));
  } else if (e->kind != LX_LANE && e->kind != LX_CONST && e->kind != LX_VAR && e->kind != LX_LOCAL &&
             e->kind != LX_LOAD && e->kind != LX_ARG) {
    TD_ASSERT(e->a->lanes == 1 && (!e->b || e->b->lanes == 1) && (!e->c || e->c->lanes == 1));
  }
  switch (e->kind) {
  case LX_CONST: return;
  case LX_VAR:
    TD_ASSERT(e->dt == DT_I64 && e->var >= 0 && e->var < V->k->nvars);
    TD_ASSERT(V->extent[e->var] >= 0);  // used inside its loop
    return;
  case LX_LOCAL:
    TD_ASSERT(e->local >= 0 && e->local < V->k->locals.len);
    TD_ASSERT(V->declared[e->local]);
    TD_ASSERT(V->k->locals.data[e->local] == e->dt);
    TD_ASSERT(V->lanes[e->local] == e->lanes);
    return;
  case LX_LOAD: {
    verify_index_lanes(V, e->buf, &e->idx, e->lanes);
    TD_ASSERT(V->k->args.data[e->buf].read);
    DType bt = V->p->bufs.data[V->k->args.data[e->buf].buf].dtype;
    TD_ASSERT(bt == e->dt || (e->lanes > 1 && moves_elements(e->dt, bt)));
    return;
  }
  case LX_UNARY:
    verify_expr(V, e->a);
    verify_unary(e);
    return;
  case LX_BINARY:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    verify_binary(e);
    return;
  case LX_SELECT:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    verify_expr(V, e->c);
    TD_ASSERT(e->a->dt == DT_BOOL && e->b->dt == e->dt && e->c->dt == e->dt);
    return;
  case LX_CAST: verify_expr(V, e->a); return;
  case LX_BITCAST:
    verify_expr(V, e->a);
    TD_ASSERT(dtype_size(e->dt) == dtype_size(e->a->dt) && dtype_size(e->dt) >= 2 &&
              (dtype_is_float(e->dt) || dtype_is_float(e->a->dt)));
    return;
  case LX_CHECKED_INDEX:
    verify_expr(V, e->a);
    TD_ASSERT(dtype_is_int(e->a->dt) && e->dt == DT_I64 && e->i >= 0);
    TD_ASSERT(e->err >= 0);
    return;
  case LX_FMA:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    verify_expr(V, e->c);
    TD_ASSERT((e->dt == DT_F32 || e->dt == DT_F64) && e->a->dt == e->dt && e->b->dt == e->dt && e->c->dt == e->dt);
    return;
  case LX_SPLAT:
    verify_expr(V, e->a);
    TD_ASSERT(e->a->lanes == 1 && e->a->dt == e->dt && e->lanes > 1);
    return;
  case LX_LANE:
    verify_expr(V, e->a);
    TD_ASSERT(e->a->kind == LX_LOCAL && e->a->lanes > 1 && e->i >= 0 && e->i < e->a->lanes && e->a->dt == e->dt);
    return;
  case LX_SHFL:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    TD_ASSERT(V->k->gpu && e->a->dt == e->dt && dtype_is_int(e->b->dt) && e->i >= LG_SHFL_DOWN &&
              e->i <= LG_SHFL_IDX);
    TD_ASSERT(e->dt == DT_I32 || e->dt == DT_I64 || e->dt == DT_F32 || e->dt == DT_F64);
    return;
  case LX_IDIV:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    TD_ASSERT((e->dt == DT_I32 || e->dt == DT_I64) && e->a->dt == e->dt && e->b->dt == e->dt);
    TD_ASSERT(e->op == OP_FLOOR_DIVIDE || e->op == OP_REMAINDER);
    return;
  case LX_INSERT:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    TD_ASSERT(e->a->dt == e->dt && e->b->dt == e->dt && e->lanes > 1 && e->i >= 0 && e->i < e->lanes);
    return;
  case LX_MMA:
    TD_ASSERT(V->k->gpu && e->dt == DT_F32 && e->lanes == 4 && e->c->dt == DT_F32 && e->c->lanes == 4);
    TD_ASSERT(e->a->kind == LX_FRAG && e->b->kind == LX_FRAG && e->a->dt == e->b->dt);
    TD_ASSERT(e->a->i == LG_FRAG_A_MK || e->a->i == LG_FRAG_A_KM);
    TD_ASSERT(e->b->i == LG_FRAG_B_NK || e->b->i == LG_FRAG_B_KN);
    verify_frag(V, e->a);
    verify_frag(V, e->b);
    verify_expr(V, e->c);
    return;
  case LX_FRAG: td_internal_error(__FILE__, __LINE__, "an mma fragment outside an mma");
  case LX_ARG: TD_ASSERT(V->func && e->dt == DT_I64 && e->i >= 0 && e->i < V->k->nscalars); return;
  case LX_SHUFFLE:
    verify_expr(V, e->a);
    verify_expr(V, e->b);
    TD_ASSERT(e->lanes > 1 && (e->a->lanes == e->lanes || 2 * e->a->lanes == e->lanes) &&
              e->b->lanes == e->a->lanes && e->a->dt == e->dt && e->b->dt == e->dt && e->sel);
    for (int l = 0; l < e->lanes; l++)
      TD_ASSERT(e->sel[l] >= 0 && e->sel[l] < 2 * e->a->lanes);
    return;
  case LX_COUNT: break;
  }
  td_unreachable();
}

static void verify_stmts(Verify *V, const LStmtList *body);

// A call from a kernel: each pointer argument matches the callee's parameter in dtype
// and use, and the elements the call may reach through it lie in the caller's buffer.
static void verify_call(Verify *V, const LCall *c) {
  TD_ASSERT(!V->func && c && c->fn >= 0 && c->fn < V->p->funcs.len);
  const LProgram *fp = V->p->funcs.data[c->fn];
  const LKernel *f = fp->kernels.data[0];
  TD_ASSERT(c->nptr == f->args.len && c->nval == f->nscalars);
  for (int i = 0; i < c->nptr; i++) {
    int a = c->ptr[i];
    TD_ASSERT(a >= 0 && a < V->k->args.len);
    const LArg *ca = &V->k->args.data[a], *fa = &f->args.data[i];
    TD_ASSERT(V->p->bufs.data[ca->buf].dtype == fp->bufs.data[fa->buf].dtype);
    TD_ASSERT((!fa->read || ca->read) && (!fa->written || ca->written));
    TD_ASSERT(c->reach[i] >= 1 && c->reach[i] <= fp->bufs.data[fa->buf].numel);
    TD_ASSERT(c->at[i].dyn == NULL);
    verify_index_lanes(V, a, &c->at[i], (int)c->reach[i]);
  }
  for (int i = 0; i < c->nval; i++) {
    verify_expr(V, c->val[i]);
    TD_ASSERT(c->val[i]->dt == DT_I64 && c->val[i]->lanes == 1);
  }
}

static void verify_stmt(Verify *V, const LStmt *s) {
  const LKernel *k = V->k;
  switch (s->kind) {
  case LS_LOOP: {
    TD_ASSERT(s->var >= 0 && s->var < k->nvars);
    TD_ASSERT(V->extent[s->var] < 0);  // a variable is not reused by a nested loop
    TD_ASSERT(s->extent >= 0 && s->vector >= 0);
    TD_ASSERT(k->gpu || (!s->start && !s->step));
    if (s->start)
      verify_expr(V, s->start);
    if (s->step)
      verify_expr(V, s->step);
    TD_ASSERT((!s->start || s->start->dt == DT_I64) && (!s->step || s->step->dt == DT_I64));
    TD_ASSERT(!V->func || !s->parallel);
    if (s->n) {  // (a function's loop of n iterations: extent bounds its indices)
      TD_ASSERT(V->func && s->n->dt == DT_I64 && s->n->lanes == 1);
      verify_expr(V, s->n);
    }
    bool dead = V->dead;
    V->extent[s->var] = s->extent;
    V->dead = dead || s->extent == 0;
    verify_stmts(V, &s->body);
    V->extent[s->var] = -1;
    V->dead = dead;
    return;
  }
  case LS_STORE:
    verify_expr(V, s->val);
    verify_index_lanes(V, s->buf, &s->idx, s->val->lanes);
    TD_ASSERT(s->val->lanes == 1 || moves_elements(s->val->dt, V->p->bufs.data[k->args.data[s->buf].buf].dtype));
    TD_ASSERT(k->args.data[s->buf].written);
    return;
  case LS_LET:
    TD_ASSERT(s->local >= 0 && s->local < k->locals.len);
    verify_expr(V, s->val);
    TD_ASSERT(s->val->dt == k->locals.data[s->local] && s->val->lanes == V->lanes[s->local]);
    V->declared[s->local] = true;
    return;
  case LS_SET:
    TD_ASSERT(s->local >= 0 && s->local < k->locals.len);
    TD_ASSERT(V->declared[s->local]);
    verify_expr(V, s->val);
    TD_ASSERT(s->val->dt == k->locals.data[s->local] && s->val->lanes == V->lanes[s->local]);
    return;
  case LS_IF: {
    verify_expr(V, s->cond);
    TD_ASSERT(s->cond->dt == DT_BOOL);
    // under `var < c` (a loop's last iterations left to other statements: ir/gemm.c's
    // block_loop) the body's indices are bounded by var's first c iterations
    const LExpr *c = s->cond;
    int v = c->kind == LX_BINARY && c->op == OP_LT && c->a->kind == LX_VAR && c->b->kind == LX_CONST ? c->a->var : -1;
    int64_t saved = v >= 0 ? V->extent[v] : 0;
    if (v >= 0 && saved > 0 && c->b->i >= 0 && c->b->i < saved)
      V->extent[v] = c->b->i;
    verify_stmts(V, &s->body);
    if (v >= 0)
      V->extent[v] = saved;
    return;
  }
  case LS_VAR: {  // in scope to the end of its list (verify_stmts)
    TD_ASSERT(k->gpu && s->var >= 0 && s->var < k->nvars && V->extent[s->var] < 0);
    verify_expr(V, s->val);
    TD_ASSERT(s->val->dt == DT_I64);
    int64_t lo, hi;
    if (expr_range(V, s->val, &lo, &hi)) {
      TD_ASSERT(lo >= 0);
      V->extent[s->var] = hi + 1;
    } else {
      V->extent[s->var] = INT64_MAX;
      V->unbounded[s->var] = true;
    }
    return;
  }
  case LS_SYNC: TD_ASSERT(k->gpu && (s->extent == 0 || s->extent == 32)); return;
  case LS_CALL: verify_call(V, s->call); return;
  case LS_PREFETCH: {  // (its element may lie outside the buffer: unbounded)
    TD_ASSERT(!k->gpu && s->buf >= 0 && s->buf < k->args.len && s->idx.nterms >= 0 && s->idx.nterms <= LI_MAX_TERMS);
    for (int t = 0; t < s->idx.nterms; t++)
      TD_ASSERT(s->idx.var[t] >= 0 && s->idx.var[t] < k->nvars && V->extent[s->idx.var[t]] >= 0);
    if (s->idx.dyn) {
      TD_ASSERT(dtype_is_int(s->idx.dyn->dt));
      verify_expr(V, s->idx.dyn);
    }
    return;
  }
  case LS_COUNT: break;
  }
  td_unreachable();
}

// A block's lets (and LS_VARs) go out of scope at its end.
static void verify_stmts(Verify *V, const LStmtList *body) {
  int n = V->k->locals.len;
  bool saved[n > 0 ? n : 1];
  memcpy(saved, V->declared, sizeof(bool) * (size_t)n);
  for (int i = 0; i < body->len; i++) {
    TD_ASSERT(body->data[i] && body->data[i]->kind < LS_COUNT);
    verify_stmt(V, body->data[i]);
  }
  memcpy(V->declared, saved, sizeof(bool) * (size_t)n);
  for (int i = 0; i < body->len; i++)
    if (body->data[i]->kind == LS_VAR) {
      V->extent[body->data[i]->var] = -1;
      V->unbounded[body->data[i]->var] = false;
    }
}

// k's statements, with no var bound yet but the GPU launch's (gs: the thread's vars range
// over the launch); func: k is the kernel of a function (LProgram.funcs).
static void verify_kernel(const LProgram *p, const LKernel *k, const LGpuSched *gs, bool func) {
  int64_t extent[k->nvars > 0 ? k->nvars : 1];
  bool unbounded[k->nvars > 0 ? k->nvars : 1];
  bool declared[k->locals.len > 0 ? k->locals.len : 1];
  for (int i = 0; i < k->nvars; i++)
    extent[i] = -1;
  memset(unbounded, 0, sizeof unbounded);
  memset(declared, 0, sizeof declared);
  int lanes[k->locals.len > 0 ? k->locals.len : 1];
  loop_local_lanes(k, lanes);
  if (gs) {
    int64_t wb = (gs->block + 31) / 32;
    int sv[4] = {gs->tid, gs->ctaid, gs->lane, gs->warp};
    int64_t se[4] = {gs->block, gs->grid, gs->block < 32 ? gs->block : 32, wb};
    for (int j = 0; j < 4; j++)
      if (sv[j] >= 0) {
        TD_ASSERT(sv[j] < k->nvars);
        extent[sv[j]] = se[j];
      }
  }
  Verify V = {p, k, extent, unbounded, declared, lanes, false, func};
  verify_stmts(&V, &k->body);
}

void loop_verify(const LProgram *p) {
  for (int i = 0; i < p->params.len; i++) {
    const LParam *pr = &p->params.data[i];
    TD_ASSERT(pr->buf >= 0 && pr->buf < p->bufs.len);
    DType bdt = p->bufs.data[pr->buf].dtype;  // a complex parameter's buffer: its float pairs
    TD_ASSERT(p->bufs.data[pr->buf].kind == LB_PARAM &&
              (bdt == pr->dtype || (dtype_is_complex(pr->dtype) && bdt == dtype_complex_part(pr->dtype))));
  }
  for (int i = 0; i < p->outputs.len; i++) {
    const LOutput *o = &p->outputs.data[i];
    TD_ASSERT(o->buf >= 0 && o->buf < p->bufs.len);
    int64_t lo, hi;
    if (view_extent(o->view, &lo, &hi))
      TD_ASSERT(lo >= 0 && hi < p->bufs.data[o->buf].numel);
  }
  for (int ki = 0; ki < p->kernels.len; ki++) {
    const LKernel *k = p->kernels.data[ki];
    TD_ASSERT(k && k->nvars >= 0);
    for (int i = 0; i < k->args.len; i++)
      TD_ASSERT(k->args.data[i].buf >= 0 && k->args.data[i].buf < p->bufs.len);
    verify_kernel(p, k, k->same ? NULL : k->gpu, false);  // (a kernel with an earlier one's code keeps its loops)
  }
  for (int fi = 0; fi < p->funcs.len; fi++) {
    const LProgram *fp = p->funcs.data[fi];
    TD_ASSERT(fp && fp->kernels.len == 1 && fp->funcs.len == 0);
    const LKernel *k = fp->kernels.data[0];
    TD_ASSERT(k->nvars >= 0 && k->nscalars >= 0 && k->errors.len == 0);
    for (int i = 0; i < k->args.len; i++)
      TD_ASSERT(k->args.data[i].buf == i && k->args.data[i].at == 0 && !k->args.data[i].stream);
    verify_kernel(fp, k, NULL, true);
  }
}
