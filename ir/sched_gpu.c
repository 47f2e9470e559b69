// ir/sched_gpu.c: the GPU schedule (sched_gpu in ir/loop.h; ir/gpu.h lists the files it
// is spread over). For each kernel of a GPU program it proves which iterations of its
// loops are independent, chooses a schedule, and rewrites the kernel into the GPU form
// of ir/loop.h — the statements every thread of the launch runs — with its launch:
//   elementwise   all loops independent and the innermost body loop-free: one loop over
//                 the flat iterations, grid-stride over every thread of the grid
//                 (consecutive threads take consecutive elements), each iteration
//                 V = 16 bytes / element lanes of the innermost loop with 128-bit loads
//                 and stores where every store and those loads line up (V divides the
//                 innermost extent, their other strides and starts); blocks of 256
//   matmul, attention   ir/matmul_gpu.c, ir/attn_gpu.c
//   long scans    ir/scan_gpu.c (a block per row)
//   rows          outer independent loops (the rows) whose body has loops to split:
//                 ir/gpu_row.c (a warp or a block per row)
//   several nests top-level loops touching no element another writes: each its own
//                 elementwise loop (or a thread per row), one after another
//   thread per row  anything else: the outer independent loops over every thread of
//                 the grid, each row run as the C backend runs it
// Grids hold at most GpuTarget.max_grid blocks; every loop over blocks is grid-stride,
// so any grid is right (TDSL_GPU_GRID=1 runs them all round). An empty nest launches
// nothing.
//
// Independence (gpu_independent): every access inside a loop to a buffer written
// inside it moves by the same stride c per iteration and stays within a window
// narrower than |c| (or all of them share one index, injective over the loop's var and
// the inner vars it moves with; or, in a SORT kernel, any two of them either walk
// disjoint ranges or lie apart by no multiple of their common stride within the loop),
// and no local carries a value across iterations. Several top-level nests run on the
// same threads when no element one touches is written by another (the ranges of their
// indices), and no local lives in two of them.
//
// Invariants: the GPU form keeps the kernel's statements and their order within an
// iteration; only which thread runs an iteration, and the association of a reduction
// across threads (gpu_row.c), are chosen.
#include "ir/gpu.h"

#include <stdlib.h>
#include <string.h>

// ============================================================================
// What statements read and write
// ============================================================================
static void expr_access(const LExpr *e, GpuArgSet *r) {
  if (!e)
    return;
  if (e->kind == LX_LOAD) {
    gpu_set_add(r, e->buf);
    expr_access(e->idx.dyn, r);
  }
  expr_access(e->a, r);
  expr_access(e->b, r);
  expr_access(e->c, r);
}

void gpu_stmt_access(const LStmt *s, GpuArgSet *r, GpuArgSet *w) {
  expr_access(s->val, r);
  expr_access(s->cond, r);
  if (s->kind == LS_STORE) {
    gpu_set_add(w, s->buf);
    expr_access(s->idx.dyn, r);
  }
  gpu_stmts_access(&s->body, r, w);
}
void gpu_stmts_access(const LStmtList *l, GpuArgSet *r, GpuArgSet *w) {
  for (int i = 0; i < l->len; i++)
    gpu_stmt_access(l->data[i], r, w);
}

// ---- every access, with its index, for the independence tests ----
typedef struct Access {
  int arg;
  const LIndex *idx;
  bool store;
} Access;
typedef VEC(Access) AccessList;

typedef struct Scan {
  Arena *ar;
  AccessList acc;
  int64_t *ext;  // NULL, or per loop var met: its loop's extent
  bool live;     // leave out loops of no iterations (they never run)
} Scan;

static void scan_expr(Scan *s, const LExpr *e) {
  if (!e)
    return;
  if (e->kind == LX_LOAD) {
    vec_push(s->ar, &s->acc, ((Access){e->buf, &e->idx, false}));
    scan_expr(s, e->idx.dyn);
  }
  scan_expr(s, e->a);
  scan_expr(s, e->b);
  scan_expr(s, e->c);
}

static void scan_stmt(Scan *s, const LStmt *st) {
  if (st->kind == LS_LOOP) {
    if (s->live && st->extent <= 0)
      return;
    if (s->ext)
      s->ext[st->var] = st->extent;
  }
  scan_expr(s, st->val);
  scan_expr(s, st->cond);
  if (st->kind == LS_STORE) {
    vec_push(s->ar, &s->acc, ((Access){st->buf, &st->idx, true}));
    scan_expr(s, st->idx.dyn);
  }
  for (int i = 0; i < st->body.len; i++)
    scan_stmt(s, st->body.data[i]);
}

// The coefficient of var in ix.
static int64_t coef_of(const LIndex *ix, int var) {
  int64_t s = 0;
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] == var)
      s += ix->coef[t];
  return s;
}

static bool same_index(const LIndex *a, const LIndex *b, int nvars) {
  if (a->dyn || b->dyn || a->base != b->base)
    return false;
  for (int v = 0; v < nvars; v++)
    if (coef_of(a, v) != coef_of(b, v))
      return false;
  return true;
}

// ---- loop vars and locals ----
static bool index_reads_var(const LIndex *ix, int var);

static bool expr_reads_var(const LExpr *e, int var) {
  if (!e)
    return false;
  if (e->kind == LX_VAR && e->var == var)
    return true;
  if ((e->kind == LX_LOAD || e->kind == LX_FRAG) && index_reads_var(&e->idx, var))
    return true;
  return expr_reads_var(e->a, var) || expr_reads_var(e->b, var) || expr_reads_var(e->c, var);
}

static bool index_reads_var(const LIndex *ix, int var) {
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] == var && ix->coef[t] != 0)
      return true;
  return expr_reads_var(ix->dyn, var);
}

bool gpu_reads_var(const LStmtList *l, int var) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (expr_reads_var(s->val, var) || expr_reads_var(s->cond, var) || expr_reads_var(s->start, var) ||
        expr_reads_var(s->step, var) ||
        (s->kind == LS_STORE && index_reads_var(&s->idx, var)) || gpu_reads_var(&s->body, var))
      return true;
  }
  return false;
}

// Whether e reads no loop var outside allowed[0..nallowed).
bool gpu_reads_only_vars(const LExpr *e, const int *allowed, int nallowed, int nvars) {
  for (int v = 0; v < nvars; v++) {
    if (!expr_reads_var(e, v))
      continue;
    bool ok = false;
    for (int i = 0; i < nallowed; i++)
      ok |= allowed[i] == v;
    if (!ok)
      return false;
  }
  return true;
}

bool gpu_expr_reads_local(const LExpr *e, int local) {
  if (!e)
    return false;
  if (e->kind == LX_LOCAL && e->local == local)
    return true;
  if (e->kind == LX_LOAD && gpu_expr_reads_local(e->idx.dyn, local))
    return true;
  return gpu_expr_reads_local(e->a, local) || gpu_expr_reads_local(e->b, local) || gpu_expr_reads_local(e->c, local);
}

bool gpu_expr_reads_any_local(const LExpr *e) {
  if (!e)
    return false;
  if (e->kind == LX_LOCAL)
    return true;
  if (e->kind == LX_LOAD && gpu_expr_reads_any_local(e->idx.dyn))
    return true;
  return gpu_expr_reads_any_local(e->a) || gpu_expr_reads_any_local(e->b) || gpu_expr_reads_any_local(e->c);
}

static void expr_mark_locals(const LExpr *e, bool *used) {
  if (!e)
    return;
  if (e->kind == LX_LOCAL)
    used[e->local] = true;
  if (e->kind == LX_LOAD)
    expr_mark_locals(e->idx.dyn, used);
  expr_mark_locals(e->a, used);
  expr_mark_locals(e->b, used);
  expr_mark_locals(e->c, used);
}

// Marks in used the locals that st, or a statement below it, reads, lets or sets;
// skip and the statements it holds are left out.
static void mark_locals(const LStmt *st, const LStmt *skip, bool *used) {
  if (st == skip)
    return;
  if (st->kind == LS_LET || st->kind == LS_SET)
    used[st->local] = true;
  expr_mark_locals(st->val, used);
  expr_mark_locals(st->cond, used);
  if (st->kind == LS_STORE)
    expr_mark_locals(st->idx.dyn, used);
  for (int i = 0; i < st->body.len; i++)
    mark_locals(st->body.data[i], skip, used);
}

// Which locals the kernel mentions outside skip.
bool *gpu_locals_outside(GpuBuild *c, const LStmt *skip) {
  bool *used = arena_alloc(&c->cx->arena, (size_t)c->k->locals.len + 1);
  for (int i = 0; i < c->k->body.len; i++)
    mark_locals(c->k->body.data[i], skip, used);
  return used;
}

bool gpu_expr_has_dyn(const LExpr *e) {
  if (!e)
    return false;
  if (e->kind == LX_LOAD && e->idx.dyn)
    return true;
  return gpu_expr_has_dyn(e->a) || gpu_expr_has_dyn(e->b) || gpu_expr_has_dyn(e->c);
}

bool gpu_stmts_have_loop(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    if (l->data[i]->kind == LS_LOOP || gpu_stmts_have_loop(&l->data[i]->body))
      return true;
  }
  return false;
}

// The vars of loops inside l.
static void inner_vars(const LStmtList *l, bool *inner) {
  for (int i = 0; i < l->len; i++) {
    if (l->data[i]->kind == LS_LOOP)
      inner[l->data[i]->var] = true;
    inner_vars(&l->data[i]->body, inner);
  }
}

// ---- nests ----
// The loops of the perfect nest starting at s (each body exactly one loop, down to the
// first body that is not), at most max; returns how many, with the innermost body.
int gpu_perfect_nest(const LStmt *s, const LStmt **loops, int max, const LStmtList **body) {
  int n = 0;
  while (s->kind == LS_LOOP && n < max) {
    loops[n++] = s;
    *body = &s->body;
    if (s->body.len != 1 || s->body.data[0]->kind != LS_LOOP)
      break;
    s = s->body.data[0];
  }
  return n;
}

// ============================================================================
// Independent loops
// ============================================================================
// Whether a local that `loop` lets or sets (in l, its body, or below) is mentioned by
// the rest of the kernel: it carries a value across iterations, or out of the loop.
static bool carries_local(const LStmtList *l, const bool *outside) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if ((s->kind == LS_LET || s->kind == LS_SET) && outside[s->local])
      return true;
    if (carries_local(&s->body, outside))
      return true;
  }
  return false;
}

// The second test of loop_independent, for interleaved layouts (a loop over a dim that
// is not the outermost of the buffer): every access of arg has the same index, and that
// index, over the loop's var and the inner vars it moves with, is injective — each
// |coef| (sorted) exceeds the span of all smaller ones.
static bool radix_disjoint(GpuBuild *c, const AccessList *acc, int arg, const LIndex *first, const bool *inner,
                           const LStmt *loop) {
  int nv = c->k->nvars;
  for (int i = 0; i < acc->len; i++)
    if (acc->data[i].arg == arg && !same_index(acc->data[i].idx, first, nv))
      return false;
  int64_t *mag = arena_alloc(&c->cx->arena, sizeof(int64_t) * (size_t)(nv + 1));
  int64_t *span = arena_alloc(&c->cx->arena, sizeof(int64_t) * (size_t)(nv + 1));
  int n = 0;
  for (int v = 0; v < nv; v++) {
    if (!inner[v] && v != loop->var)
      continue;
    int64_t k = coef_of(first, v);
    int64_t e = v == loop->var ? loop->extent : c->extent[v];
    if (k == 0 || e <= 1)
      continue;
    k = k < 0 ? -k : k;
    int j = n++;
    while (j > 0 && mag[j - 1] > k) {  // insertion sort by |coef|
      mag[j] = mag[j - 1], span[j] = span[j - 1];
      j--;
    }
    mag[j] = k, span[j] = k * (e - 1);
  }
  int64_t below = 0;
  for (int j = 0; j < n; j++) {
    if (mag[j] <= below)
      return false;
    below += span[j];
  }
  return true;
}

static const int64_t GLIMIT = (int64_t)1 << 60;  // larger magnitudes: "unknown"
static int64_t iabs(int64_t x) { return x < 0 ? -x : x; }

// The third test of loop_independent, for accesses at several offsets (a sort's
// compare-exchange of elements b and b + h, or b and 2h-1-b): no access of arg moves
// with an inner var, all move alike with the outer vars, and any two of them either
// have the same index (injective over the loop's var, whose coefficient is not 0), or
// walk disjoint ranges over the loop, or move alike with it by c and lie apart by a
// distance that is no multiple c * m with 0 < |m| < its extent.
// Used for SORT kernels only, for now: it proves other kernels' loops independent too
// (the matmul row form's), whose schedules stay as they were until measured on a GPU.
static bool offsets_disjoint(GpuBuild *c, const AccessList *acc, int arg, const bool *inner, const LStmt *loop) {
  if (c->k->kind != KK_SORT)
    return false;
  int nv = c->k->nvars;
  int64_t e = loop->extent;
  for (int i = 0; i < acc->len; i++) {
    const LIndex *x = acc->data[i].idx;
    if (acc->data[i].arg != arg)
      continue;
    for (int v = 0; v < nv; v++)
      if (inner[v] && coef_of(x, v) != 0)
        return false;
    if (coef_of(x, loop->var) == 0)
      return false;
    for (int j = i + 1; j < acc->len; j++) {
      const LIndex *y = acc->data[j].idx;
      if (acc->data[j].arg != arg || same_index(x, y, nv))
        continue;
      for (int v = 0; v < nv; v++)
        if (!inner[v] && v != loop->var && coef_of(x, v) != coef_of(y, v))
          return false;
      int64_t cx = coef_of(x, loop->var), cy = coef_of(y, loop->var);
      if (iabs(cx) > GLIMIT / (e > 1 ? e : 1) || iabs(cy) > GLIMIT / (e > 1 ? e : 1))
        return false;
      int64_t xl = x->base + (cx < 0 ? cx * (e - 1) : 0), xh = x->base + (cx > 0 ? cx * (e - 1) : 0);
      int64_t yl = y->base + (cy < 0 ? cy * (e - 1) : 0), yh = y->base + (cy > 0 ? cy * (e - 1) : 0);
      if (xh < yl || yh < xl)
        continue;
      int64_t d = y->base - x->base;
      if (cx != cy || (d % cx == 0 && iabs(d / cx) < e))
        return false;
    }
  }
  return true;
}

// Whether the iterations of `loop` are independent (LGpuSched's test), with every var
// outside it fixed.
bool gpu_independent(GpuBuild *c, const LStmt *loop) {
  Ctx *cx = c->cx;
  if (carries_local(&loop->body, gpu_locals_outside(c, loop)))
    return false;
  GpuArgSet r = {0}, w = {0};
  gpu_stmts_access(&loop->body, &r, &w);
  if (gpu_set_empty(&w))
    return true;
  int nv = c->k->nvars;
  bool *inner = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nv + 1));
  inner_vars(&loop->body, inner);
  Scan sc = {&cx->arena, {0}, NULL, false};
  for (int i = 0; i < loop->body.len; i++)
    scan_stmt(&sc, loop->body.data[i]);
  const AccessList *acc = &sc.acc;
  for (int a = 0; a < c->k->args.len; a++) {
    if (!gpu_set_has(&w, a))
      continue;
    const LIndex *first = NULL;
    int64_t cv = 0, lo = 0, hi = 0;
    for (int i = 0; i < acc->len; i++) {
      if (acc->data[i].arg != a)
        continue;
      const LIndex *ix = acc->data[i].idx;
      if (ix->dyn)
        return false;
      int64_t l = ix->base, h = ix->base;
      for (int v = 0; v < nv; v++) {
        int64_t k = coef_of(ix, v);
        if (inner[v]) {
          int64_t span = k * (c->extent[v] - 1);
          if (span < 0)
            l += span;
          else
            h += span;
        } else if (first && k != coef_of(first, v)) {  // outer vars (and the loop's own) must move every
          if (!offsets_disjoint(c, acc, a, inner, loop))  // access alike, or the offsets keep apart
            return false;
          goto next_arg;
        }
      }
      if (!first) {
        first = ix;
        cv = coef_of(ix, loop->var);
        lo = l, hi = h;
      } else {
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
      }
    }
    if (!first)
      continue;
    int64_t mag = cv < 0 ? -cv : cv;
    if (mag == 0)
      return false;
    if (hi - lo >= mag && !radix_disjoint(c, acc, a, first, inner, loop) && !offsets_disjoint(c, acc, a, inner, loop))
      return false;
  next_arg:;
  }
  return true;
}

// ============================================================================
// Nests apart
// ============================================================================
// [*lo, *hi]: what the terms of ix over variables not in skip add to its base, the
// variables ranging over [0, ext); false when unknown (no extent, or too large).
static bool term_range(const LIndex *ix, const bool *skip, const int64_t *ext, int nvars, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  for (int v = 0; v < nvars; v++) {
    if (skip && skip[v])
      continue;
    int64_t c = coef_of(ix, v);
    if (c == 0)
      continue;
    if (ext[v] <= 0 || c > GLIMIT || c < -GLIMIT || ext[v] - 1 > GLIMIT / (c < 0 ? -c : c))
      return false;
    int64_t x = c * (ext[v] - 1);
    *(x > 0 ? hi : lo) += x;
    if (*hi > GLIMIT || *lo < -GLIMIT)
      return false;
  }
  return true;
}

// The residues mod c of ix (each var over [0, ext)) when its terms but those of
// coefficient c, and its base, reach only [*lo, *hi] within [0, c): false otherwise.
static bool residues(const LIndex *ix, const int64_t *ext, int nv, int64_t c, int64_t *lo, int64_t *hi) {
  *lo = *hi = ix->base;
  for (int v = 0; v < nv; v++) {
    int64_t k = coef_of(ix, v);
    if (k == 0 || k == c)
      continue;
    if (ext[v] <= 0 || k < 0 || k > GLIMIT || ext[v] - 1 > GLIMIT / k)
      return false;
    *hi += k * (ext[v] - 1);
  }
  return *lo >= 0 && *hi < c;
}

// Whether x and y (of two nests) never meet: both step by the same largest coefficient
// c, and their other terms keep them in disjoint ranges of residues mod c (cat along an
// inner dim: row i of a at columns [0, 300), of b at [300, 800)).
static bool apart_mod(const LIndex *x, const int64_t *xe, const LIndex *y, const int64_t *ye, int nv) {
  int64_t c = 0;
  for (int t = 0; t < x->nterms; t++)
    c = x->coef[t] > c ? x->coef[t] : c;
  bool in_y = false;
  for (int t = 0; t < y->nterms; t++) {
    if (y->coef[t] > c)
      return false;
    in_y |= y->coef[t] == c;
  }
  int64_t xl, xh, yl, yh;
  return c > 0 && in_y && residues(x, xe, nv, c, &xl, &xh) && residues(y, ye, nv, c, &yl, &yh) &&
         (xh < yl || yh < xl);
}

// Whether top-level statements a and b touch no element the other one writes
// (comparing the ranges of their indices).
static bool independent(Arena *ar, const LKernel *k, const LStmt *a, const LStmt *b) {
  int nv = k->nvars;
  Scan sa = {ar, {0}, arena_alloc(ar, sizeof(int64_t) * (size_t)(nv + 1)), true};
  Scan sb = {ar, {0}, arena_alloc(ar, sizeof(int64_t) * (size_t)(nv + 1)), true};
  scan_stmt(&sa, a);
  scan_stmt(&sb, b);
  for (int i = 0; i < sa.acc.len; i++)
    for (int j = 0; j < sb.acc.len; j++) {
      const Access *x = &sa.acc.data[i], *y = &sb.acc.data[j];
      if (x->arg != y->arg || (!x->store && !y->store))
        continue;
      int64_t xl, xh, yl, yh;
      if (x->idx->dyn || y->idx->dyn || !term_range(x->idx, NULL, sa.ext, nv, &xl, &xh) ||
          !term_range(y->idx, NULL, sb.ext, nv, &yl, &yh))
        return false;
      if (x->idx->base + xl <= y->idx->base + yh && y->idx->base + yl <= x->idx->base + xh &&
          !apart_mod(x->idx, sa.ext, y->idx, sb.ext, nv))
        return false;
    }
  return true;
}

// The perfect nest of s up to its first loop of no iterations: its length.
static int live_nest(const LStmt *s, const LStmt **chain, int max) {
  const LStmtList *body;
  int n = gpu_perfect_nest(s, chain, max, &body);
  for (int j = 0; j < n; j++)
    if (chain[j]->extent <= 0)
      return j;
  return n;
}


// The extent of every loop var of l.
static void loop_extents(int64_t *ext, const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    if (l->data[i]->kind == LS_LOOP)
      ext[l->data[i]->var] = l->data[i]->extent;
    loop_extents(ext, &l->data[i]->body);
  }
}

// ============================================================================
// Building the GPU form
// ============================================================================
int gpu_new_var(GpuBuild *g) { return g->k->nvars++; }

int gpu_new_local(GpuBuild *g, DType dt) {
  vec_push(&g->cx->arena, &g->k->locals, dt);
  return g->k->locals.len - 1;
}

int gpu_shared(GpuBuild *g, DType dt, int64_t n, const char *name) {
  vec_push(&g->cx->arena, &g->p->bufs, ((LBuf){LB_SHARED, dt, n, name, -1, false, false}));
  vec_push(&g->cx->arena, &g->k->args, ((LArg){.buf = g->p->bufs.len - 1, .read = true, .written = true}));
  return g->k->args.len - 1;
}

LExpr *gpu_i64(GpuBuild *g, int64_t v) { return lx_const_i(g->cx, DT_I64, v); }

static bool is_const(const LExpr *e, int64_t v) { return e->kind == LX_CONST && e->i == v; }

LExpr *gpu_add(GpuBuild *g, LExpr *a, LExpr *b) {
  if (is_const(a, 0))
    return b;
  if (is_const(b, 0))
    return a;
  if (a->kind == LX_CONST && b->kind == LX_CONST)
    return gpu_i64(g, a->i + b->i);
  return lx_binary(g->cx, OP_ADD, DT_I64, a, b);
}

LExpr *gpu_mul(GpuBuild *g, LExpr *a, int64_t c) {
  if (c == 1)
    return a;
  if (c == 0)
    return gpu_i64(g, 0);
  if (a->kind == LX_CONST)
    return gpu_i64(g, a->i * c);
  return lx_binary(g->cx, OP_MUL, DT_I64, a, gpu_i64(g, c));
}

// a (>= 0, below 2^31 when `narrow`) / or % b, in i32 where it fits (a 32-bit division
// by a constant is a multiply; a 64-bit one is a sequence of them).
static LExpr *idiv(GpuBuild *g, Op op, LExpr *a, int64_t b, bool narrow) {
  TD_ASSERT(b > 0);
  if (a->kind == LX_CONST)
    return gpu_i64(g, op == OP_FLOOR_DIVIDE ? a->i / b : a->i % b);
  if (b == 1)
    return op == OP_FLOOR_DIVIDE ? a : gpu_i64(g, 0);
  DType dt = narrow && b <= INT32_MAX ? DT_I32 : DT_I64;
  LExpr *e = lx_new(g->cx, LX_IDIV, dt);
  e->op = op;
  e->a = dt == DT_I64 ? a : lx_cast(g->cx, DT_I32, a);
  e->b = lx_const_i(g->cx, dt, b);
  return dt == DT_I64 ? e : lx_cast(g->cx, DT_I64, e);
}

LExpr *gpu_div(GpuBuild *g, LExpr *a, int64_t b) { return idiv(g, OP_FLOOR_DIVIDE, a, b, false); }
LExpr *gpu_mod(GpuBuild *g, LExpr *a, int64_t b) { return idiv(g, OP_REMAINDER, a, b, false); }

static LExpr *special(GpuBuild *g, int *var) {
  if (*var < 0)
    *var = gpu_new_var(g);
  return lx_var(g->cx, *var);
}
LExpr *gpu_tid(GpuBuild *g) { return special(g, &g->gs->tid); }
LExpr *gpu_ctaid(GpuBuild *g) { return special(g, &g->gs->ctaid); }
LExpr *gpu_lane(GpuBuild *g) { return special(g, &g->gs->lane); }
LExpr *gpu_warp(GpuBuild *g) { return special(g, &g->gs->warp); }

void gpu_push(GpuBuild *g, LStmtList *l, LStmt *s) { vec_push(&g->cx->arena, l, s); }

LStmtList *gpu_loop(GpuBuild *g, LStmtList *l, int var, int64_t extent, LExpr *start, LExpr *step) {
  LStmt *s = ls_loop(g->cx, var, extent);
  s->start = start && !is_const(start, 0) ? start : NULL;
  s->step = step && !is_const(step, 1) ? step : NULL;
  gpu_push(g, l, s);
  return &s->body;
}

void gpu_sync(GpuBuild *g, LStmtList *l, bool warp) {
  LStmt *s = ls_loop(g->cx, 0, warp ? GPU_WARP : 0);
  s->kind = LS_SYNC;
  s->var = -1;
  gpu_push(g, l, s);
}

void gpu_setvar(GpuBuild *g, LStmtList *l, int var, LExpr *val) {
  LStmt *s = ls_loop(g->cx, var, 0);
  s->kind = LS_VAR;
  s->val = val;
  gpu_push(g, l, s);
}

void gpu_decompose(GpuBuild *g, LStmtList *l, const LStmt *const *loops, int n, LExpr *f, const LStmtList *body) {
  int64_t div = 1, total = 1;
  for (int i = 0; i < n; i++)
    total *= loops[i]->extent > 0 ? loops[i]->extent : 1;
  bool narrow = total <= INT32_MAX;
  for (int i = n - 1; i >= 0; i--) {
    const LStmt *s = loops[i];
    int64_t ext = s->extent > 0 ? s->extent : 1;
    if (!body || gpu_reads_var(body, s->var)) {
      LExpr *v = idiv(g, OP_FLOOR_DIVIDE, f, div, narrow);
      if (i > 0)
        v = idiv(g, OP_REMAINDER, v, ext, narrow);
      gpu_setvar(g, l, s->var, v);
    }
    div *= ext;
  }
}

// ============================================================================
// Copies with substitutions
// ============================================================================
static LIndex subst_index(GpuBuild *g, const LIndex *ix, GpuSubst *s) {
  LIndex r = *ix;
  r.nterms = 0;
  LExpr *extra = NULL;
  for (int t = 0; t < ix->nterms; t++) {
    LExpr *to = s->var ? s->var[ix->var[t]] : NULL;
    if (!to) {
      r.var[r.nterms] = ix->var[t], r.coef[r.nterms++] = ix->coef[t];
      continue;
    }
    // var -> an expression: var + c (an offset), another var, or anything (then dyn)
    if (to->kind == LX_VAR) {
      r.var[r.nterms] = to->var, r.coef[r.nterms++] = ix->coef[t];
    } else if (to->kind == LX_BINARY && to->op == OP_ADD && to->a->kind == LX_VAR && to->b->kind == LX_CONST) {
      r.var[r.nterms] = to->a->var, r.coef[r.nterms++] = ix->coef[t];
      r.base += ix->coef[t] * to->b->i;
    } else {
      LExpr *term = gpu_mul(g, to, ix->coef[t]);
      extra = extra ? gpu_add(g, extra, term) : term;
    }
  }
  r.dyn = ix->dyn ? gpu_subst_expr(g, ix->dyn, s) : NULL;
  if (extra)
    r.dyn = r.dyn ? gpu_add(g, r.dyn, extra) : extra;
  return r;
}

LExpr *gpu_subst_expr(GpuBuild *g, const LExpr *e, GpuSubst *s) {
  if (!e)
    return NULL;
  if (e->kind == LX_LOAD && s->load) {
    LExpr *r = s->load(s, e);
    if (r)
      return r;
  }
  if (e->kind == LX_VAR && s->var && s->var[e->var])
    return s->var[e->var];
  LExpr *r = lx_new(g->cx, e->kind, e->dt);
  *r = *e;
  if (e->kind == LX_LOCAL && s->local && s->local[e->local] >= 0)
    r->local = s->local[e->local];
  if (e->kind == LX_LOAD)
    r->idx = subst_index(g, &e->idx, s);
  r->a = gpu_subst_expr(g, e->a, s);
  r->b = gpu_subst_expr(g, e->b, s);
  r->c = gpu_subst_expr(g, e->c, s);
  return r;
}

LStmt *gpu_subst_stmt(GpuBuild *g, const LStmt *st, GpuSubst *s) {
  LStmt *r = arena_alloc(&g->cx->arena, sizeof *r);
  *r = *st;
  r->body = (LStmtList){0};
  r->val = gpu_subst_expr(g, st->val, s);
  r->cond = gpu_subst_expr(g, st->cond, s);
  r->start = gpu_subst_expr(g, st->start, s);
  r->step = gpu_subst_expr(g, st->step, s);
  if ((st->kind == LS_LET || st->kind == LS_SET) && s->local && s->local[st->local] >= 0)
    r->local = s->local[st->local];
  if (st->kind == LS_STORE)
    r->idx = subst_index(g, &st->idx, s);
  for (int i = 0; i < st->body.len; i++)
    gpu_push(g, &r->body, gpu_subst_stmt(g, st->body.data[i], s));
  return r;
}

// ============================================================================
// Elementwise: one grid-stride loop over the flat iterations
// ============================================================================
enum { VEC_MIN = 1024 };  // fewer elements than this: no vectors (the code would only grow)

static bool index_aligned(const LIndex *ix, int iv, int lanes, int64_t at) {
  if (ix->dyn || coef_of(ix, iv) != 1 || ix->base % lanes || at % lanes)
    return false;
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] != iv && ix->coef[t] % lanes)
      return false;
  return true;
}

typedef struct Vec {
  GpuBuild *g;
  int iv, lanes;
  const LStmtList *body;
  int lane;          // the lane whose copy is being built
  int nvload;
  const LExpr *vload[64];  // the loads read as vectors, and their locals
  int vlocal[64];
} Vec;

// The lanes of the access ix of arg could be one vector access.
static bool vec_access(const Vec *v, int arg, const LIndex *ix) {
  return index_aligned(ix, v->iv, v->lanes, v->g->k->args.data[arg].at);
}

static void scan_loads(const LExpr *e, const LExpr **loads, int *n, int max) {
  if (!e)
    return;
  if (e->kind == LX_LOAD && *n < max)
    loads[(*n)++] = e;
  if (e->kind == LX_LOAD)
    scan_loads(e->idx.dyn, loads, n, max);
  scan_loads(e->a, loads, n, max);
  scan_loads(e->b, loads, n, max);
  scan_loads(e->c, loads, n, max);
}

// The lanes of body's innermost var iv to take at once (1: none). Every statement a
// let, set or store; a written buffer accessed at one index only, never loaded after a
// store of it; every store a vector store.
static int vector_lanes(GpuBuild *g, const LStmtList *body, int iv, int64_t extent, int64_t total) {
  if (total < VEC_MIN)
    return 1;
  int maxsize = 0;
  const LExpr *loads[256];
  int nl = 0;
  for (int i = 0; i < body->len; i++) {
    const LStmt *s = body->data[i];
    if (s->kind != LS_LET && s->kind != LS_SET && s->kind != LS_STORE)
      return 1;
    if (s->val->lanes > 1)
      return 1;
    scan_loads(s->val, loads, &nl, 256);
    if (s->kind == LS_STORE) {
      if (s->idx.dyn)
        return 1;
      int sz = (int)dtype_size(g->p->bufs.data[g->k->args.data[s->buf].buf].dtype);
      maxsize = sz > maxsize ? sz : maxsize;
    }
  }
  if (nl == 256 || maxsize == 0)
    return 1;
  for (int i = 0; i < nl; i++)
    if (coef_of(&loads[i]->idx, iv) == 1 && !loads[i]->idx.dyn) {
      int sz = (int)dtype_size(g->p->bufs.data[g->k->args.data[loads[i]->buf].buf].dtype);
      maxsize = sz > maxsize ? sz : maxsize;
    }
  int lanes = 16 / maxsize;
  if (lanes > 8)
    lanes = 8;
  if (lanes < 2 || extent % lanes)
    return 1;
  Vec v = {.g = g, .iv = iv, .lanes = lanes};
  // stores: vectors, and each written buffer at one index, not read after its store
  for (int i = 0; i < body->len; i++) {
    const LStmt *s = body->data[i];
    if (s->kind != LS_STORE)
      continue;
    if (!vec_access(&v, s->buf, &s->idx))
      return 1;
    for (int j = 0; j < body->len; j++) {
      const LStmt *t = body->data[j];
      const LExpr *ls[256];
      int n = 0;
      scan_loads(t->val, ls, &n, 256);
      for (int q = 0; q < n; q++)
        if (ls[q]->buf == s->buf && (j > i || !same_index(&ls[q]->idx, &s->idx, g->k->nvars)))
          return 1;
      if (t->kind == LS_STORE && t->buf == s->buf && !same_index(&t->idx, &s->idx, g->k->nvars))
        return 1;
    }
  }
  return lanes;
}

// A load of lane v->lane: a lane of its vector local, else the scalar load moved to it.
static LExpr *vec_load(GpuSubst *s, const LExpr *e) {
  Vec *v = s->ctx;
  for (int i = 0; i < v->nvload; i++)
    if (v->vload[i]->buf == e->buf && same_index(&v->vload[i]->idx, &e->idx, v->g->k->nvars))
      return lx_lane(v->g->cx, lx_local_v(v->g->cx, e->dt, v->lanes, v->vlocal[i]), v->lane);
  return NULL;  // (subst_index moves it by the lane's offset)
}

// body, V lanes of iv at once: the vector loads first, then each lane's statements
// (their locals renamed per lane, iv read as iv + lane), the stores last, as vectors.
static void vectorize(GpuBuild *g, const LStmtList *body, int iv, int lanes, LStmtList *out) {
  Vec v = {.g = g, .iv = iv, .lanes = lanes, .body = body};
  const LExpr *loads[256];
  int nl = 0;
  for (int i = 0; i < body->len; i++)
    scan_loads(body->data[i]->val, loads, &nl, 256);
  for (int i = 0; i < nl; i++) {
    const LExpr *e = loads[i];
    if (!vec_access(&v, e->buf, &e->idx))
      continue;
    bool seen = false;
    for (int j = 0; j < v.nvload && !seen; j++)
      seen = v.vload[j]->buf == e->buf && same_index(&v.vload[j]->idx, &e->idx, g->k->nvars);
    if (seen || v.nvload == 64)
      continue;
    int l = gpu_new_local(g, e->dt);
    gpu_push(g, out, ls_let(g->cx, l, lx_vload(g->cx, e->dt, lanes, e->buf, e->idx)));
    v.vload[v.nvload] = e;
    v.vlocal[v.nvload++] = l;
  }
  int nloc = g->k->locals.len, nv = g->k->nvars;
  int *lmap = arena_alloc(&g->cx->arena, sizeof(int) * (size_t)(nloc + 1));
  LExpr **vmap = arena_alloc(&g->cx->arena, sizeof(LExpr *) * (size_t)(nv + 1));
  int *stored = arena_alloc(&g->cx->arena, sizeof(int) * (size_t)(body->len * lanes + 1));
  GpuSubst s = {.local = lmap, .var = vmap, .load = vec_load, .ctx = &v};
  for (int lane = 0; lane < lanes; lane++) {
    v.lane = lane;
    for (int i = 0; i < nloc; i++)
      lmap[i] = -1;
    vmap[iv] = lane ? lx_binary(g->cx, OP_ADD, DT_I64, lx_var(g->cx, iv), gpu_i64(g, lane)) : NULL;
    for (int i = 0; i < body->len; i++) {
      const LStmt *st = body->data[i];
      if (st->kind == LS_LET)
        lmap[st->local] = gpu_new_local(g, g->k->locals.data[st->local]);
      if (st->kind != LS_STORE) {
        gpu_push(g, out, gpu_subst_stmt(g, st, &s));
        continue;
      }
      DType bt = g->p->bufs.data[g->k->args.data[st->buf].buf].dtype;
      LExpr *val = gpu_subst_expr(g, st->val, &s);
      if (val->dt != bt)
        val = lx_cast(g->cx, bt, val);
      int l = gpu_new_local(g, bt);
      gpu_push(g, out, ls_let(g->cx, l, val));
      stored[i * lanes + lane] = l;
    }
  }
  for (int i = 0; i < body->len; i++) {
    const LStmt *st = body->data[i];
    if (st->kind != LS_STORE)
      continue;
    DType bt = g->p->bufs.data[g->k->args.data[st->buf].buf].dtype;
    LExpr *vec = lx_splat(g->cx, lanes, lx_local(g->cx, bt, stored[i * lanes]));
    for (int lane = 1; lane < lanes; lane++) {
      LExpr *ins = lx_new(g->cx, LX_INSERT, bt);
      ins->lanes = lanes;
      ins->a = vec;
      ins->b = lx_local(g->cx, bt, stored[i * lanes + lane]);
      ins->i = lane;
      vec = ins;
    }
    gpu_push(g, out, ls_store(g->cx, st->buf, st->idx, vec));
  }
}

// The nest loops[0..n) with loop-free body as one grid-stride loop over its flat
// iterations, appended to out; the iterations in *iters.
static void lower_flat(GpuBuild *g, const LStmt *const *loops, int n, const LStmtList *body, LStmtList *out,
                       int64_t *iters, int *lanes_out) {
  int64_t total = 1;
  for (int i = 0; i < n; i++)
    total *= loops[i]->extent;
  const LStmt *inner = loops[n - 1];
  int lanes = vector_lanes(g, body, inner->var, inner->extent, total);
  *iters = total / lanes;
  *lanes_out = lanes;
  if (total == 0)
    return;
  int f = gpu_new_var(g);
  LExpr *gtid = gpu_add(g, gpu_mul(g, gpu_ctaid(g), g->gs->block), gpu_tid(g));
  LStmtList *l = gpu_loop(g, out, f, *iters, gtid, gpu_i64(g, g->gs->grid * g->gs->block));
  if (lanes == 1) {
    gpu_decompose(g, l, loops, n, lx_var(g->cx, f), body);
    for (int i = 0; i < body->len; i++)
      gpu_push(g, l, body->data[i]);
    return;
  }
  // the iteration's vars: the nest's, its innermost loop taken `lanes` at a time
  LStmt *in = arena_alloc(&g->cx->arena, sizeof *in);
  *in = *inner;
  in->var = gpu_new_var(g);
  in->extent = inner->extent / lanes;
  const LStmt **vl = arena_alloc(&g->cx->arena, sizeof *vl * (size_t)(n + 1));
  memcpy(vl, loops, sizeof *vl * (size_t)n);
  vl[n - 1] = in;
  gpu_decompose(g, l, vl, n, lx_var(g->cx, f), NULL);
  gpu_setvar(g, l, inner->var, gpu_mul(g, lx_var(g->cx, in->var), lanes));
  vectorize(g, body, inner->var, lanes, l);
}

// ============================================================================
// A thread per row
// ============================================================================
static void lower_serial(GpuBuild *g, const LStmt *const *rows, int nrows, const LStmtList *row, LStmtList *out) {
  int64_t total = 1;
  for (int i = 0; i < nrows; i++)
    total *= rows[i]->extent;
  if (total == 0)
    return;
  int r = gpu_new_var(g);
  LExpr *gtid = gpu_add(g, gpu_mul(g, gpu_ctaid(g), g->gs->block), gpu_tid(g));
  LStmtList *l = gpu_loop(g, out, r, total, gtid, gpu_i64(g, g->gs->grid * g->gs->block));
  gpu_decompose(g, l, rows, nrows, lx_var(g->cx, r), row);
  for (int i = 0; i < row->len; i++)
    gpu_push(g, l, row->data[i]);
}

// ============================================================================
// Choosing the schedule
// ============================================================================
static int64_t grid_for(GpuBuild *g, int64_t work, int64_t per_block) {
  int64_t grid = (work + per_block - 1) / per_block;
  return grid < g->t->max_grid ? grid : g->t->max_grid;
}

// A map nest (ir/gpu.h): a perfect nest of independent loops whose body has no loop.
bool gpu_map_nest(GpuBuild *g, const LStmt *s, const LStmt **loops, int *n, const LStmtList **body) {
  *n = gpu_perfect_nest(s, loops, GPU_MAX_NEST, body);
  if (*n == 0 || gpu_stmts_have_loop(*body))
    return false;
  for (int i = 0; i < *n; i++)
    if (!gpu_independent(g, loops[i]))
      return false;
  return true;
}

// The outer independent loops of s's perfect nest (its rows): how many.
static int row_nest(GpuBuild *g, const LStmt *s, const LStmt **loops, const LStmtList **row) {
  int n = 0;
  while (n < GPU_MAX_NEST && s->kind == LS_LOOP && gpu_independent(g, s)) {
    loops[n++] = s;
    *row = &s->body;
    if (s->body.len != 1 || s->body.data[0]->kind != LS_LOOP)
      break;
    s = s->body.data[0];
  }
  return n;
}

// Top-level statements run by the same threads one after another: each a loop, no
// local in two of them, no element one touches written by another.
static bool nests_apart(GpuBuild *g) {
  const LStmtList *body = &g->k->body;
  Arena *ar = &g->cx->arena;
  int nl = g->k->locals.len;
  int *owner = arena_alloc(ar, sizeof *owner * (size_t)(nl + 1));
  for (int l = 0; l < nl; l++)
    owner[l] = -1;
  for (int i = 0; i < body->len; i++) {
    if (body->data[i]->kind != LS_LOOP)
      return false;
    bool *used = arena_alloc(ar, (size_t)nl + 1);
    mark_locals(body->data[i], NULL, used);
    for (int l = 0; l < nl; l++) {
      if (used[l] && owner[l] >= 0)
        return false;
      if (used[l])
        owner[l] = i;
    }
  }
  for (int i = 0; i < body->len; i++)
    for (int j = i + 1; j < body->len; j++)
      if (!independent(ar, g->k, body->data[i], body->data[j]))
        return false;
  return true;
}

static const char *lanes_name(GpuBuild *g, const char *base, int lanes) {
  return lanes > 1 ? arena_printf(&g->cx->arena, "%s, %d-lane vectors", base, lanes) : base;
}

static void schedule(GpuBuild *g) {
  LKernel *k = g->k;
  const LStmtList *old = &k->body;
  LGpuSched *gs = g->gs;
  const LStmt *loops[GPU_MAX_NEST];
  const LStmtList *body = NULL;
  int n;
  // elementwise
  if (old->len == 1 && old->data[0]->kind == LS_LOOP && gpu_map_nest(g, old->data[0], loops, &n, &body)) {
    int64_t total = 1;
    for (int i = 0; i < n; i++)
      total *= loops[i]->extent;
    int lanes = vector_lanes(g, body, loops[n - 1]->var, loops[n - 1]->extent, total);
    gs->block = 256;
    gs->grid = grid_for(g, total / lanes, gs->block);
    int64_t iters;
    lower_flat(g, loops, n, body, &g->out, &iters, &lanes);
    gs->name = lanes_name(g, "elementwise", lanes);
    return;
  }
  if (gpu_matmul(g) || gpu_attn(g))
    return;
  const LStmtList *row = old;
  int nrows = old->len == 1 ? row_nest(g, old->data[0], loops, &row) : 0;
  // several nests apart
  if (nrows == 0 && old->len > 1 && nests_apart(g)) {
    int64_t most = 0;
    gs->block = 256;
    int maxlanes = 1;
    for (int i = 0; i < old->len; i++) {  // the most iterations one nest has (of vectors)
      int live = live_nest(old->data[i], loops, GPU_MAX_NEST);
      if (live < 1)
        continue;
      int64_t iters = 1;
      for (int j = 0; j < live; j++)
        iters *= loops[j]->extent;
      if (gpu_map_nest(g, old->data[i], loops, &n, &body))
        iters /= vector_lanes(g, body, loops[n - 1]->var, loops[n - 1]->extent, iters);
      most = iters > most ? iters : most;
    }
    gs->grid = grid_for(g, most, gs->block);
    for (int i = 0; i < old->len; i++) {
      const LStmt *s = old->data[i];
      int64_t iters;
      int lanes;
      if (gpu_map_nest(g, s, loops, &n, &body)) {
        lower_flat(g, loops, n, body, &g->out, &iters, &lanes);
        maxlanes = lanes > maxlanes ? lanes : maxlanes;
      } else {
        int nr = row_nest(g, s, loops, &row);
        if (nr == 0) {  // one thread: a loop of one row
          LStmtList one = {0};
          gpu_push(g, &one, (LStmt *)s);
          lower_serial(g, NULL, 0, &one, &g->out);
        } else {
          lower_serial(g, loops, nr, row, &g->out);
        }
      }
    }
    gs->name = lanes_name(g, "several nests, elementwise", maxlanes);
    return;
  }
  // long scans, then rows
  if (gpu_scan(g, loops, nrows, row) || gpu_rows(g, loops, nrows, row))
    return;
  // a thread per row
  int64_t total = 1;
  for (int i = 0; i < nrows; i++)
    total *= loops[i]->extent;
  gs->block = total >= 128 ? 128 : total > 32 ? 64 : 32;
  gs->grid = grid_for(g, total, gs->block);
  lower_serial(g, loops, nrows, row, &g->out);
  gs->name = nrows ? "thread per row" : "one thread";
}

// ============================================================================
// Entry points
// ============================================================================
GpuTarget gpu_target(const char *arch) {
  GpuTarget t = {80, 8 * 132};
  if (arch && strncmp(arch, "sm_", 3) == 0 && arch[3] >= '0' && arch[3] <= '9')
    t.sm = atoi(arch + 3);
  const char *grid = getenv("TDSL_GPU_GRID");
  if (grid && atoll(grid) >= 1)
    t.max_grid = atoll(grid);
  return t;
}

void sched_gpu(Ctx *cx, LProgram *p, const GpuTarget *t) {
  for (int i = 0; i < p->kernels.len; i++) {
    LKernel *k = p->kernels.data[i];
    if (k->same) {  // it launches an earlier kernel's code, as that one is scheduled
      k->gpu = k->same->gpu;
      continue;
    }
    LGpuSched *gs = arena_alloc(&cx->arena, sizeof *gs);
    *gs = (LGpuSched){.tid = -1, .ctaid = -1, .lane = -1, .warp = -1};
    GpuBuild g = {cx, p, k, t, gs, NULL, {0}};
    int nv = k->nvars;
    g.extent = arena_alloc(&cx->arena, sizeof(int64_t) * (size_t)(nv + 1));
    loop_extents(g.extent, &k->body);
    schedule(&g);
    k->body = g.out;
    k->gpu = gs;
    if (gs->grid < 0)
      gs->grid = 0;
    k->sched = gs->name;
  }
}
