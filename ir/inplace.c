// ir/inplace.c: whether a kernel may write a temp over the storage of one it reads for
// the last time (inplace_ok; ir/share.c then makes the pair one argument). ir/share.c
// asks when it gives temps their buffers: a temp x whose life starts in kernel k may
// share the buffer of a temp y whose life ends in k when k reads every element of y
// only before, in the same iteration, the one store that writes x's element at the
// same storage offset. Mamba's scan writes y + u*D over delta this way, and a GEMM's
// epilogue its result over the operand it multiplies.
//
// What is proven, on the scheduled CPU loops (any failure: no):
//   - k is a CPU kernel (sched_cpu ran: LProgram.cpu), x and y of one dtype, y only read
//     in k, neither passed to a function (LS_CALL), no index of either dynamic;
//   - x is written exactly once per element: every store to x sits in loops of
//     constant extent each of whose vars (more than one iteration left by the ifs
//     around the store that bound it: `if (v < c)`, `if (!(v < c))`) its index uses, and its index is
//     one-to-one (one store: each term, by |coefficient|, steps past the span of the
//     smaller ones) or enumerating the stores' elements (lanes included) finds none
//     twice; none lies outside x;
//   - every load of y (wherever it sits, dynamic indices of other loads included) has
//     a store to x that writes the same storage elements (equal index once both
//     arguments' starts, LArg.at, are added; equal lanes) inside all of the store's
//     loops (the same iteration; no loop between redefines their vars) and before it
//     in that iteration: in an earlier statement of a list both lie in, or in the
//     store's own value.
// So each element e of the shared buffer is read as y[e] only in the iteration that
// writes x[e], before that write, and by no other iteration: the order of iterations,
// their threads and any vectorization of them do not matter. Within the iteration
// the load precedes the store in program order, which the backends keep because the
// two arguments become one pointer (ir/share.c's merge_args): no restrict or noalias
// pair ever names the same storage.
#include "ir/loop.h"

#include <string.h>

enum {
  INPLACE_MAX_DEPTH = 16,             // statement nesting followed
  INPLACE_MAX_STORES = 16,            // store statements to x considered
  INPLACE_MAX_ELEMS = 64 * 1024 * 1024,  // elements enumerated, at most
};

// Where a statement sits: the lists from the kernel's body down and its position in
// each, and the loops on the way.
typedef struct Path {
  int n;
  const LStmtList *list[INPLACE_MAX_DEPTH];
  int pos[INPLACE_MAX_DEPTH];
  const LStmt *loop[INPLACE_MAX_DEPTH];  // the statement at pos when it is a loop, else NULL
} Path;

typedef struct StoreAt {
  const LStmt *s;
  Path path;
} StoreAt;

typedef struct Check {
  const LKernel *k;
  int ax, ay;       // x's and y's args
  int64_t shift;    // y's start minus x's: y index i is storage element i + shift from x's start
  StoreAt st[INPLACE_MAX_STORES];
  int nst;
  bool ok;
} Check;

// ---- collecting x's stores, refusing what cannot be followed ----
static void scan_expr(Check *c, const LExpr *e) {
  if (!e || !c->ok)
    return;
  if ((e->kind == LX_LOAD || e->kind == LX_FRAG) && (e->buf == c->ax || e->buf == c->ay) && e->idx.dyn)
    c->ok = false;
  scan_expr(c, e->idx.dyn);
  scan_expr(c, e->a);
  scan_expr(c, e->b);
  scan_expr(c, e->c);
}

// Statement i of l, entered: p then leads to it (the caller leaves with p->n--).
static const LStmt *path_push(Path *p, const LStmtList *l, int i) {
  const LStmt *s = l->data[i];
  p->list[p->n] = l;
  p->pos[p->n] = i;
  p->loop[p->n] = s->kind == LS_LOOP ? s : NULL;
  p->n++;
  return s;
}

static void collect(Check *c, const LStmtList *l, Path *p) {
  if (p->n >= INPLACE_MAX_DEPTH) {
    c->ok = false;
    return;
  }
  for (int i = 0; i < l->len && c->ok; i++) {
    const LStmt *s = path_push(p, l, i);
    if (s->kind == LS_CALL) {
      for (int a = 0; a < s->call->nptr; a++)
        if (s->call->ptr[a] == c->ax || s->call->ptr[a] == c->ay)
          c->ok = false;
      for (int a = 0; a < s->call->nval; a++)
        scan_expr(c, s->call->val[a]);
    }
    if (s->kind == LS_STORE && s->buf == c->ay)
      c->ok = false;
    if (s->kind == LS_STORE && s->buf == c->ax) {
      if (s->idx.dyn || c->nst == INPLACE_MAX_STORES)
        c->ok = false;
      else
        c->st[c->nst++] = (StoreAt){s, *p};
    }
    if (s->kind == LS_LOOP && (s->n || s->start || s->step))
      c->ok = false;
    scan_expr(c, s->val);
    scan_expr(c, s->cond);
    scan_expr(c, s->n);
    scan_expr(c, s->start);
    scan_expr(c, s->step);
    if (s->kind == LS_STORE)
      scan_expr(c, s->idx.dyn);
    collect(c, &s->body, p);
    p->n--;
  }
}

// ---- x written once per element ----
static int64_t index_coef(const LIndex *x, int var) {
  int64_t c = 0;
  for (int t = 0; t < x->nterms; t++)
    if (x->var[t] == var)
      c += x->coef[t];
  return c;
}

// The iterations [*lo, *hi) of the loop at depth dl of path p (its var `var`) that the
// ifs inside it on p leave to the statement p leads to: `if (var < c)` lowers hi to c,
// `if (!(var < c))` raises lo to c (ir/gemm.c's last column block, a branch of its
// own); other conditions narrow nothing (more iterations counted than run: never
// fewer), and ifs past a loop that defines var again are that loop's.
static void var_range(const Path *p, int dl, int var, int64_t *lo, int64_t *hi) {
  for (int d = dl + 1; d + 1 < p->n; d++) {
    const LStmt *s = p->list[d]->data[p->pos[d]];
    if (s->kind == LS_LOOP && s->var == var)
      return;
    if (s->kind != LS_IF)
      continue;
    const LExpr *c = s->cond;
    bool neg = c->kind == LX_UNARY && c->op == OP_LOGICAL_NOT;
    if (neg)
      c = c->a;
    if (c->kind != LX_BINARY || c->op != OP_LT || c->a->kind != LX_VAR || c->a->var != var ||
        c->b->kind != LX_CONST)
      continue;
    if (neg && c->b->i > *lo)
      *lo = c->b->i;
    if (!neg && c->b->i < *hi)
      *hi = c->b->i;
  }
}

// The loops (more than one iteration left by the ifs) around store st, as the index's
// coefficient of each var and its iterations' count; *shift: the index's offset at the
// loops' first iterations. False if one's var is not in the index (the element written
// again in every iteration of it) or a loop runs no iteration there.
static bool store_terms(const StoreAt *st, int64_t *ext, int64_t *coef, int *n, int64_t *shift) {
  *n = 0;
  *shift = 0;
  for (int d = 0; d < st->path.n; d++) {
    const LStmt *l = st->path.loop[d];
    if (!l)
      continue;
    int64_t lo = 0, hi = l->extent;
    var_range(&st->path, d, l->var, &lo, &hi);
    int64_t cf = index_coef(&st->s->idx, l->var);
    if (hi <= lo)
      return false;
    *shift += cf * lo;
    if (hi - lo == 1)
      continue;
    if (!cf)
      return false;
    ext[*n] = hi - lo;
    coef[(*n)++] = cf;
  }
  return true;
}

// One store's elements are all distinct and inside [0, numel) (at: its start) when,
// its terms (the lanes one more, of coefficient 1) ordered by |coefficient|, each
// steps past the whole span of the smaller ones; its elements then lie in [lo, hi].
// The common case, decided without enumerating.
static bool one_store_distinct(const StoreAt *st, int64_t at, int64_t numel, int64_t *lo, int64_t *hi) {
  int64_t ext[INPLACE_MAX_DEPTH + 1], coef[INPLACE_MAX_DEPTH + 1], shift;
  int n;
  if (!store_terms(st, ext, coef, &n, &shift))
    return false;
  int lanes = st->s->val && st->s->val->lanes > 1 ? st->s->val->lanes : 1;
  ext[n] = lanes;
  coef[n++] = 1;
  for (int i = 1; i < n; i++)  // insertion sort by |coef|
    for (int j = i; j > 0 && (coef[j] < 0 ? -coef[j] : coef[j]) < (coef[j - 1] < 0 ? -coef[j - 1] : coef[j - 1]); j--) {
      int64_t t = coef[j];
      coef[j] = coef[j - 1], coef[j - 1] = t;
      t = ext[j];
      ext[j] = ext[j - 1], ext[j - 1] = t;
    }
  int64_t span = 0;  // the largest distance the smaller terms reach
  *lo = *hi = st->s->idx.base + at + shift;
  for (int i = 0; i < n; i++) {
    if (ext[i] == 1)
      continue;
    int64_t a = coef[i] < 0 ? -coef[i] : coef[i];
    if (a <= span || a > INPLACE_MAX_ELEMS || ext[i] > INPLACE_MAX_ELEMS)
      return false;
    span += a * (ext[i] - 1);
    if (span > INPLACE_MAX_ELEMS)
      return false;
    if (coef[i] < 0)
      *lo += coef[i] * (ext[i] - 1);
    else
      *hi += coef[i] * (ext[i] - 1);
  }
  return *lo >= 0 && *hi < numel;
}

// Marks the elements store st writes in seen (a byte per element of numel), a run of
// consecutive ones at a time (the lanes, and the loop stepping by them if any); false
// if one is marked already, lies outside, or a loop's var is not in the index.
static bool mark_store(const StoreAt *st, int64_t at, unsigned char *seen, int64_t numel, int64_t *budget) {
  const LStmt *s = st->s;
  int lanes = s->val && s->val->lanes > 1 ? s->val->lanes : 1;
  int64_t ext[INPLACE_MAX_DEPTH], coef[INPLACE_MAX_DEPTH], total = 1, run = lanes, shift;
  int nl;
  if (!store_terms(st, ext, coef, &nl, &shift))
    return false;
  for (int d = 0; d < nl; d++)
    if (coef[d] == lanes) {  // the run: this loop's elements follow each other
      run = lanes * ext[d];
      ext[d] = ext[--nl], coef[d] = coef[nl];
      break;
    }
  for (int d = 0; d < nl; d++) {
    if (total > *budget / ext[d])
      return false;
    total *= ext[d];
  }
  if (total > *budget / run)
    return false;
  *budget -= total * run;
  int64_t it[INPLACE_MAX_DEPTH] = {0};
  for (int64_t n = 0; n < total; n++) {
    int64_t e = s->idx.base + at + shift;
    for (int d = 0; d < nl; d++)
      e += coef[d] * it[d];
    if (e < 0 || e > numel - run || memchr(seen + e, 1, (size_t)run))
      return false;
    memset(seen + e, 1, (size_t)run);
    view_next_index(nl, it, ext);
  }
  return true;
}

// ---- every load of y before its element's store ----
// Whether a load in the statement at path lp (in its expressions) runs in the same
// iteration of st's loops as st, before it.
static bool before(const StoreAt *st, const Path *lp) {
  const Path *sp = &st->path;
  int last_loop = -1;
  for (int d = 0; d < sp->n; d++)
    if (sp->loop[d])
      last_loop = d;
  for (int d = 0; d < sp->n && d < lp->n; d++) {
    if (sp->list[d] != lp->list[d])
      return false;
    if (sp->pos[d] == lp->pos[d])
      continue;
    if (d <= last_loop || lp->pos[d] > sp->pos[d])
      return false;
    for (int e = d; e < lp->n; e++)  // the loops the load is in beyond the store's keep their vars
      for (int f = 0; lp->loop[e] && f <= last_loop; f++)
        if (sp->loop[f] && sp->loop[f]->var == lp->loop[e]->var)
          return false;
    return true;
  }
  return lp->n >= sp->n;  // in the store itself (its value)
}

static bool same_elements(const Check *c, const LStmt *s, const LExpr *ld) {
  int ls = s->val && s->val->lanes > 1 ? s->val->lanes : 1, ll = ld->lanes > 1 ? ld->lanes : 1;
  if (ls != ll || s->idx.base != ld->idx.base + c->shift)
    return false;
  LIndex a = s->idx, b = ld->idx;
  a.base = b.base = 0;
  // equal as sums (terms in any order, a var named twice adds up)
  for (int t = 0; t < a.nterms; t++)
    if (index_coef(&a, a.var[t]) != index_coef(&b, a.var[t]))
      return false;
  for (int t = 0; t < b.nterms; t++)
    if (index_coef(&a, b.var[t]) != index_coef(&b, b.var[t]))
      return false;
  return true;
}

static void loads_expr(Check *c, const LExpr *e, const Path *p) {
  if (!e || !c->ok)
    return;
  if (e->kind == LX_FRAG && e->buf == c->ay)
    c->ok = false;
  if (e->kind == LX_LOAD && e->buf == c->ay) {
    bool found = false;
    for (int i = 0; i < c->nst && !found; i++)
      found = same_elements(c, c->st[i].s, e) && before(&c->st[i], p);
    c->ok = found;
  }
  loads_expr(c, e->idx.dyn, p);
  loads_expr(c, e->a, p);
  loads_expr(c, e->b, p);
  loads_expr(c, e->c, p);
}

static void loads(Check *c, const LStmtList *l, Path *p) {
  for (int i = 0; i < l->len && c->ok; i++) {
    const LStmt *s = path_push(p, l, i);
    loads_expr(c, s->val, p);
    loads_expr(c, s->cond, p);
    if (s->kind == LS_STORE)
      loads_expr(c, s->idx.dyn, p);
    if (s->kind == LS_CALL)
      for (int a = 0; a < s->call->nval; a++)
        loads_expr(c, s->call->val[a], p);
    loads(c, &s->body, p);
    p->n--;
  }
}

static int arg_index(const LKernel *k, int buf) {
  for (int a = 0; a < k->args.len; a++)
    if (k->args.data[a].buf == buf)
      return a;
  return -1;
}

bool inplace_ok(Ctx *cx, const LProgram *p, int kernel, int x, int y, InplaceMarks *marks) {
  const LKernel *k = p->kernels.data[kernel];
  const LBuf *bx = &p->bufs.data[x], *by = &p->bufs.data[y];
  if (!p->cpu || k->gpu || x == y || bx->dtype != by->dtype || bx->scratch || by->scratch)
    return false;
  Check *c = arena_alloc(&cx->arena, sizeof *c);
  c->k = k;
  c->ax = arg_index(k, x);
  c->ay = arg_index(k, y);
  c->ok = true;
  if (c->ax < 0 || c->ay < 0 || k->args.data[c->ay].written || !k->args.data[c->ax].written)
    return false;
  c->shift = k->args.data[c->ay].at - k->args.data[c->ax].at;
  Path path = {0};
  collect(c, &k->body, &path);
  if (!c->ok || !c->nst)
    return false;
  // the shared storage: x's elements from x's start on (y's too, by the shift)
  int64_t numel = bx->numel > by->numel ? bx->numel : by->numel;
  if (numel > INPLACE_MAX_ELEMS)
    return false;
  path.n = 0;
  loads(c, &k->body, &path);
  if (!c->ok)
    return false;
  int64_t at = k->args.data[c->ax].at, lo, hi;
  if (c->nst == 1)
    return one_store_distinct(&c->st[0], at, numel, &lo, &hi);
  if (marks->n < numel) {
    marks->n = numel;
    marks->b = arena_alloc(&cx->arena, (size_t)numel);
  } else {
    memset(marks->b, 0, (size_t)numel);
  }
  int64_t budget = INPLACE_MAX_ELEMS;
  for (int i = 0; i < c->nst && c->ok; i++)
    c->ok = mark_store(&c->st[i], at, marks->b, numel, &budget);
  return c->ok;
}
