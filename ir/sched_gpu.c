// ir/sched_gpu.c: the GPU schedule over built loop IR (sched_gpu, LGpuSched in
// ir/loop.h): for each kernel of a GPU program, how its iterations map to the threads
// of a 1-D grid. codegen/cuda.c prints the CUDA plan and codegen/llvm_gpu.c builds the
// NVVM plan; every analysis of the loops behind them is here, once.
//
// The CUDA plan gives a kernel one of four shapes (LGpuShape), from its loops:
//   FLAT    a perfect nest of independent loops whose innermost body has no loop: one
//           grid-stride loop over the flattened iteration space. Block 256.
//   MATMUL  LKernel.mm's LM_DOT nest (ir/matmul.c's plain nest, which a GPU program
//           gets where the row schedule does not apply) with i, j and k loops (sizes
//           > 1), all its outer loops independent, and f32/f64 factors that load
//           through affine indices of the batch vars with i and k (A) or k and j (B):
//           16x16 output tiles (LGpuTile). Block 256.
//   ROWS    an outer nest of independent loops (the rows; none: one row) whose body has
//           inner loops of which one at least splits: a block per row. In the row,
//           scalar statements run in every thread (uniform values; stores by thread 0);
//           an inner nest of independent iterations is split across the block's
//           threads; a reduction nest (LGpuReduce) is split and combined across the
//           block; any other loop runs in every thread, its body treated the same way.
//           A barrier separates statements whose accesses meet. Block: the largest
//           split, a power of two in [32, 256].
//   SERIAL  anything else: a thread per row (the outer independent nest, or a single
//           thread), its body run sequentially as the C backend does. Block: the rows,
//           a power of two in [32, 128].
// Grids stop at 65535 blocks (the loops are grid-stride); an empty nest launches none.
// Independence is proved from the affine indices (loop_independent: the test in
// LGpuSched's comment); no local may carry a value across iterations.
//
// The NVVM plan (LGpuSched.iters, .spread) spreads each top-level loop's perfect nest,
// flattened row-major, grid-stride from the global thread id: only its outermost m
// loops whose iterations provably touch disjoint elements (distributable); a nest with
// none spread runs on thread 0. The top-level statements run one after another in each
// thread, so they must not touch what another writes (independent), nor share locals;
// else the kernel is serial.
//
// Both plans keep the kernel's statements and their order; only which thread runs an
// iteration, and (CUDA) the association of a reduction across threads, are chosen.
#include "ir/loop.h"

enum { MAX_NEST = 32 };  // the deepest perfect nest the CUDA plan flattens

// The kernel being scheduled.
typedef struct SchedGpu {
  Ctx *cx;
  const LKernel *k;
  int64_t *extent;    // per loop var: its loop's extent
  int64_t max_split;  // the largest nest split across a block (GK_ROWS)
  int nshared;        // the 32-slot groups of shared scratch its reductions use
} SchedGpu;

// ============================================================================
// What statements read and write
// ============================================================================
// ---- sets of kernel args: the buffers a statement reads and writes ----
typedef struct ArgSet {
  uint64_t w[LG_MAX_ARGS / 64];
} ArgSet;

static void set_add(ArgSet *s, int i) {
  TD_ASSERT(i >= 0 && i < LG_MAX_ARGS);
  s->w[i / 64] |= (uint64_t)1 << (i % 64);
}
static bool set_has(const ArgSet *s, int i) { return (s->w[i / 64] >> (i % 64)) & 1; }
static bool set_meets(const ArgSet *a, const ArgSet *b) {
  for (int i = 0; i < LG_MAX_ARGS / 64; i++)
    if (a->w[i] & b->w[i])
      return true;
  return false;
}
static void set_union(ArgSet *a, const ArgSet *b) {
  for (int i = 0; i < LG_MAX_ARGS / 64; i++)
    a->w[i] |= b->w[i];
}
static bool set_empty(const ArgSet *a) {
  for (int i = 0; i < LG_MAX_ARGS / 64; i++)
    if (a->w[i])
      return false;
  return true;
}

static void expr_access(const LExpr *e, ArgSet *r) {
  if (!e)
    return;
  if (e->kind == LX_LOAD) {
    set_add(r, e->buf);
    expr_access(e->idx.dyn, r);
  }
  expr_access(e->a, r);
  expr_access(e->b, r);
  expr_access(e->c, r);
}

static void stmts_access(const LStmtList *l, ArgSet *r, ArgSet *w);
static void stmt_access(const LStmt *s, ArgSet *r, ArgSet *w) {
  expr_access(s->val, r);
  expr_access(s->cond, r);
  if (s->kind == LS_STORE) {
    set_add(w, s->buf);
    expr_access(s->idx.dyn, r);
  }
  stmts_access(&s->body, r, w);
}
static void stmts_access(const LStmtList *l, ArgSet *r, ArgSet *w) {
  for (int i = 0; i < l->len; i++)
    stmt_access(l->data[i], r, w);
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
  if (e->kind == LX_LOAD && index_reads_var(&e->idx, var))
    return true;
  return expr_reads_var(e->a, var) || expr_reads_var(e->b, var) || expr_reads_var(e->c, var);
}

static bool index_reads_var(const LIndex *ix, int var) {
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] == var && ix->coef[t] != 0)
      return true;
  return expr_reads_var(ix->dyn, var);
}

static bool stmts_read_var(const LStmtList *l, int var) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (expr_reads_var(s->val, var) || expr_reads_var(s->cond, var) ||
        (s->kind == LS_STORE && index_reads_var(&s->idx, var)) || stmts_read_var(&s->body, var))
      return true;
  }
  return false;
}

// Whether e reads no loop var outside allowed[0..nallowed).
static bool reads_only_vars(const LExpr *e, const int *allowed, int nallowed, int nvars) {
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

static bool expr_reads_local(const LExpr *e, int local) {
  if (!e)
    return false;
  if (e->kind == LX_LOCAL && e->local == local)
    return true;
  if (e->kind == LX_LOAD && expr_reads_local(e->idx.dyn, local))
    return true;
  return expr_reads_local(e->a, local) || expr_reads_local(e->b, local) || expr_reads_local(e->c, local);
}

static bool expr_reads_any_local(const LExpr *e) {
  if (!e)
    return false;
  if (e->kind == LX_LOCAL)
    return true;
  if (e->kind == LX_LOAD && expr_reads_any_local(e->idx.dyn))
    return true;
  return expr_reads_any_local(e->a) || expr_reads_any_local(e->b) || expr_reads_any_local(e->c);
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
static bool *locals_outside(SchedGpu *c, const LStmt *skip) {
  bool *used = arena_alloc(&c->cx->arena, (size_t)c->k->locals.len + 1);
  for (int i = 0; i < c->k->body.len; i++)
    mark_locals(c->k->body.data[i], skip, used);
  return used;
}

static bool expr_has_dyn(const LExpr *e) {
  if (!e)
    return false;
  if (e->kind == LX_LOAD && e->idx.dyn)
    return true;
  return expr_has_dyn(e->a) || expr_has_dyn(e->b) || expr_has_dyn(e->c);
}

static bool stmts_has_loop(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    if (l->data[i]->kind == LS_LOOP || stmts_has_loop(&l->data[i]->body))
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

// The extent of every loop var of l.
static void loop_extents(SchedGpu *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    if (l->data[i]->kind == LS_LOOP)
      c->extent[l->data[i]->var] = l->data[i]->extent;
    loop_extents(c, &l->data[i]->body);
  }
}

// ---- nests ----
// The loops of the perfect nest starting at s (each body exactly one loop, down to the
// first body that is not), at most max; returns how many, with the innermost body.
static int perfect_nest(const LStmt *s, const LStmt **loops, int max, const LStmtList **body) {
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

// loops[0..n) as an LGpuNest running body (NULL: every var needed).
static LGpuNest make_nest(SchedGpu *c, const LStmt *const *loops, int n, const LStmtList *body) {
  LGpuNest x = {n, arena_alloc(&c->cx->arena, sizeof *x.loops * (size_t)(n + 1)), body, 1, NULL};
  if (body)
    x.read = arena_alloc(&c->cx->arena, sizeof *x.read * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    x.loops[i] = loops[i];
    x.total *= loops[i]->extent;
    if (body)
      x.read[i] = stmts_read_var(body, loops[i]->var);
  }
  return x;
}

// ============================================================================
// The CUDA plan: independent loops
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
static bool radix_disjoint(SchedGpu *c, const AccessList *acc, int arg, const LIndex *first, const bool *inner,
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
static bool offsets_disjoint(SchedGpu *c, const AccessList *acc, int arg, const bool *inner, const LStmt *loop) {
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
static bool loop_independent(SchedGpu *c, const LStmt *loop) {
  Ctx *cx = c->cx;
  if (carries_local(&loop->body, locals_outside(c, loop)))
    return false;
  ArgSet r = {0}, w = {0};
  stmts_access(&loop->body, &r, &w);
  if (set_empty(&w))
    return true;
  int nv = c->k->nvars;
  bool *inner = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nv + 1));
  inner_vars(&loop->body, inner);
  Scan sc = {&cx->arena, {0}, NULL, false};
  for (int i = 0; i < loop->body.len; i++)
    scan_stmt(&sc, loop->body.data[i]);
  const AccessList *acc = &sc.acc;
  for (int a = 0; a < c->k->args.len; a++) {
    if (!set_has(&w, a))
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
// The CUDA plan: the statements of a row, as a block runs them
// ============================================================================
// A perfect nest whose iterations are independent and whose innermost body has no
// loop: split across the block's threads.
static bool is_map_nest(SchedGpu *c, const LStmt *s, const LStmt **loops, int *n, const LStmtList **body) {
  *n = perfect_nest(s, loops, MAX_NEST, body);
  if (*n == 0 || stmts_has_loop(*body))
    return false;
  for (int i = 0; i < *n; i++)
    if (!loop_independent(c, loops[i]))
      return false;
  return true;
}

static bool is_assoc(Op op) {
  return op == OP_ADD || op == OP_MUL || op == OP_MAXIMUM || op == OP_MINIMUM || op == OP_LOGICAL_AND ||
         op == OP_LOGICAL_OR;
}

static int acc_index(const LGpuReduce *r, int local) {
  for (int i = 0; i < r->nacc; i++)
    if (r->acc[i] == local)
      return i;
  return -1;
}

// Whether the expression reads only locals, constants and pure arithmetic (no var, no
// load): the argform's condition, evaluated again when partial results are combined.
static bool pure_of_locals(const LExpr *e) {
  if (!e)
    return true;
  if (e->kind == LX_VAR || e->kind == LX_LOAD || e->kind == LX_CHECKED_INDEX || lx_raises_here(e))
    return false;
  return pure_of_locals(e->a) && pure_of_locals(e->b) && pure_of_locals(e->c);
}

// Whether local is let in body and mentioned nowhere outside nest.
static bool is_private(SchedGpu *c, const LStmtList *body, int local, const LStmt *nest) {
  bool let_here = false;
  for (int i = 0; i < body->len; i++)
    if (body->data[i]->kind == LS_LET && body->data[i]->local == local)
      let_here = true;
  return let_here && !locals_outside(c, nest)[local];
}

// A perfect nest whose innermost body combines values into accumulator locals (see
// LGpuReduce).
static bool is_reduction_nest(SchedGpu *c, const LStmt *s, const LStmt **loops, int *n, const LStmtList **body,
                              LGpuReduce *r) {
  *n = perfect_nest(s, loops, MAX_NEST, body);
  *r = (LGpuReduce){0};
  if (*n == 0 || stmts_has_loop(*body))
    return false;
  const LStmtList *l = *body;
  ArgSet rd = {0}, wr = {0};
  stmts_access(l, &rd, &wr);
  if (!set_empty(&wr))
    return false;
  // plain form: lets of private locals, then `acc = acc OP e`
  bool plain = true;
  for (int i = 0; i < l->len && plain; i++) {
    const LStmt *t = l->data[i];
    if (t->kind == LS_LET && is_private(c, l, t->local, s))
      continue;
    if (t->kind != LS_SET || r->nacc == LG_MAX_ACC || acc_index(r, t->local) >= 0) {
      plain = false;
      break;
    }
    DType lt = c->k->locals.data[t->local];
    const LExpr *v = t->val;
    if (dtype_is_half(lt) || v->kind != LX_BINARY || !is_assoc(v->op) || v->dt != lt) {
      plain = false;
      break;
    }
    const LExpr *other = NULL;
    if (v->a->kind == LX_LOCAL && v->a->local == t->local)
      other = v->b;
    else if (v->b->kind == LX_LOCAL && v->b->local == t->local)
      other = v->a;
    if (!other || expr_reads_local(other, t->local)) {
      plain = false;
      break;
    }
    r->acc[r->nacc] = t->local;
    r->op[r->nacc++] = v->op;
  }
  if (plain && r->nacc > 0) {
    // no accumulator read anywhere else in the body
    for (int a = 0; a < r->nacc; a++)
      for (int i = 0; i < l->len; i++) {
        const LStmt *t = l->data[i];
        if (t->kind == LS_SET && t->local == r->acc[a])
          continue;
        if (expr_reads_local(t->val, r->acc[a]))
          return false;
      }
    for (int a = 0; a < r->nacc; a++)
      for (int b2 = 0; b2 < r->nacc; b2++)
        if (a != b2) {
          for (int i = 0; i < l->len; i++)
            if (l->data[i]->kind == LS_SET && l->data[i]->local == r->acc[a] &&
                expr_reads_local(l->data[i]->val, r->acc[b2]))
              return false;
        }
    return true;
  }
  // argform: lets of private locals, then one `if (cond) { acc = x; ... }`
  *r = (LGpuReduce){.argform = true};
  if (l->len < 1 || l->data[l->len - 1]->kind != LS_IF)
    return false;
  const LStmt *iff = l->data[l->len - 1];
  r->cond_if = iff;
  for (int i = 0; i + 1 < l->len; i++)
    if (l->data[i]->kind != LS_LET || !is_private(c, l, l->data[i]->local, s))
      return false;
  if (iff->body.len == 0 || iff->body.len > LG_MAX_ACC)
    return false;
  for (int i = 0; i < iff->body.len; i++) {
    const LStmt *t = iff->body.data[i];
    if (t->kind != LS_SET || acc_index(r, t->local) >= 0 || is_private(c, l, t->local, s))
      return false;
    r->acc[r->nacc] = t->local;
    r->src[r->nacc++] = t->val->kind == LX_LOCAL && is_private(c, l, t->val->local, s) ? t->val->local : -1;
  }
  for (int i = 0; i < iff->body.len; i++) {
    const LStmt *t = iff->body.data[i];
    if (c->k->locals.data[t->local] != t->val->dt || dtype_is_half(t->val->dt))
      return false;
    for (int a = 0; a < r->nacc; a++)
      if (expr_reads_local(t->val, r->acc[a]))
        return false;
  }
  for (int i = 0; i + 1 < l->len; i++)
    for (int a = 0; a < r->nacc; a++)
      if (expr_reads_local(l->data[i]->val, r->acc[a]))
        return false;
  // the condition: accumulators and private locals that some accumulator takes
  if (!pure_of_locals(iff->cond))
    return false;
  for (int lo = 0; lo < c->k->locals.len; lo++) {
    if (!expr_reads_local(iff->cond, lo) || acc_index(r, lo) >= 0)
      continue;
    bool taken = false;
    for (int a = 0; a < r->nacc; a++)
      taken |= r->src[a] == lo;
    if (!taken)
      return false;
  }
  return true;
}

// A nest split over the block's threads.
static LGpuNest split_nest(SchedGpu *c, const LStmt *const *loops, int n, const LStmtList *body) {
  LGpuNest x = make_nest(c, loops, n, body);
  if (x.total > c->max_split)
    c->max_split = x.total;
  return x;
}

// The block statements of l, appended to out. pr/pw: the buffers read and written
// since the last barrier.
static void block_stmts(SchedGpu *c, const LStmtList *l, ArgSet *pr, ArgSet *pw, LGpuBlockList *out);

static void block_stmt(SchedGpu *c, const LStmt *s, ArgSet *pr, ArgSet *pw, LGpuBlockList *out) {
  LGpuBlock *b = arena_alloc(&c->cx->arena, sizeof *b);
  b->s = s;
  b->role = GB_EVERY;
  vec_push(&c->cx->arena, out, b);
  ArgSet r = {0}, w = {0};
  stmt_access(s, &r, &w);
  if (set_meets(&w, pr) || set_meets(&w, pw) || set_meets(&r, pw)) {
    b->sync = true;
    *pr = *pw = (ArgSet){0};
  }
  switch (s->kind) {
  case LS_LET:
  case LS_SET:
  case LS_STORE: break;
  case LS_IF: block_stmts(c, &s->body, pr, pw, &b->body); break;
  case LS_LOOP: {
    const LStmt *loops[MAX_NEST];
    const LStmtList *body;
    int n;
    LGpuReduce red;
    if (is_map_nest(c, s, loops, &n, &body)) {
      b->role = GB_SPLIT;
      b->nest = split_nest(c, loops, n, body);
      break;
    }
    if (is_reduction_nest(c, s, loops, &n, &body, &red)) {
      b->role = GB_REDUCE;
      b->nest = split_nest(c, loops, n, body);
      b->red = red;
      int slots = red.argform ? red.nacc + 1 : 1;  // argform: each accumulator and the key
      if (c->nshared < slots)
        c->nshared = slots;
      *pr = *pw = (ArgSet){0};  // the combine synchronises the block after every read
      return;
    }
    // every thread runs the loop; its body is block statements again
    ArgSet br = {0}, bw = {0};
    stmts_access(&s->body, &br, &bw);
    ArgSet er = *pr, ew = *pw;  // pending before the loop, if it runs no iteration
    block_stmts(c, &s->body, pr, pw, &b->body);
    if (set_meets(&bw, pr) || set_meets(&bw, pw) || set_meets(&br, pw)) {  // the next iteration
      b->sync_each = true;
      *pr = s->extent > 0 ? (ArgSet){0} : er;  // the last iteration ended synchronised
      *pw = s->extent > 0 ? (ArgSet){0} : ew;
      return;
    }
    break;
  }
  case LS_CALL:  // (GPU programs call no functions: ir/loop.h)
  case LS_COUNT: td_unreachable();
  }
  set_union(pr, &r);
  set_union(pw, &w);
}

static void block_stmts(SchedGpu *c, const LStmtList *l, ArgSet *pr, ArgSet *pw, LGpuBlockList *out) {
  for (int i = 0; i < l->len; i++)
    block_stmt(c, l->data[i], pr, pw, out);
}

// Whether a block-level list has a loop worth splitting across threads.
static bool has_split(SchedGpu *c, const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    const LStmt *loops[MAX_NEST];
    const LStmtList *body;
    int n;
    LGpuReduce red;
    if (s->kind == LS_LOOP &&
        (is_map_nest(c, s, loops, &n, &body) || is_reduction_nest(c, s, loops, &n, &body, &red)))
      return true;
    if ((s->kind == LS_LOOP || s->kind == LS_IF) && has_split(c, &s->body))
      return true;
  }
  return false;
}

// ============================================================================
// The CUDA plan: the matmul tile
// ============================================================================
// The sum of |coef| of var over the loads of e: how far e moves in memory per step of var.
static int64_t stride_of(const LExpr *e, int var) {
  if (!e)
    return 0;
  int64_t s = 0;
  if (e->kind == LX_LOAD) {
    int64_t k = coef_of(&e->idx, var);
    s += k < 0 ? -k : k;
  }
  return s + stride_of(e->a, var) + stride_of(e->b, var) + stride_of(e->c, var);
}

// The tiles of k's matmul when its nest takes them: an LM_DOT nest with a k loop, at
// least i and j outside it, every outer loop independent (outer, the kernel's outer
// nest, is exactly mm's), f32/f64 factors that load only through affine indices of
// their own vars and raise nothing.
static bool matmul_tile(SchedGpu *c, const LGpuNest *outer, LGpuTile *t) {
  const LMatmul *mm = c->k->mm;
  if (c->k->kind != KK_MATMUL || !mm || mm->form != LM_DOT || !mm->kloop || mm->nouter < 2 ||
      outer->n != mm->nouter)
    return false;
  for (int i = 0; i < outer->n; i++)
    TD_ASSERT(outer->loops[i] == mm->outer[i]);
  DType dt = mm->dt;
  if (dt != DT_F32 && dt != DT_F64)
    return false;
  int nbatch = mm->nouter - 2, ivar = mm->outer[nbatch]->var, jvar = mm->outer[nbatch + 1]->var;
  int kvar = mm->kloop->var, nv = c->k->nvars;
  // A reads only batch vars, i and k; B only batch vars, k and j; no dynamic indices
  int allowed[TD_MAX_DIMS + 2], na = 0;
  for (int i = 0; i < nbatch; i++)
    allowed[na++] = mm->outer[i]->var;
  allowed[na] = ivar, allowed[na + 1] = kvar;
  if (!reads_only_vars(mm->a, allowed, na + 2, nv) || expr_reads_any_local(mm->a) || expr_has_dyn(mm->a))
    return false;
  allowed[na] = jvar;
  if (!reads_only_vars(mm->b, allowed, na + 2, nv) || expr_reads_any_local(mm->b) || expr_has_dyn(mm->b))
    return false;
  if (lx_raises(mm->a) || lx_raises(mm->b) || mm->a->dt != dt || mm->b->dt != dt)
    return false;
  t->edge = 16;
  t->batch = make_nest(c, outer->loops, nbatch, NULL);
  t->i = mm->outer[nbatch];
  t->j = mm->outer[nbatch + 1];
  t->ni = (t->i->extent + t->edge - 1) / t->edge;
  t->nj = (t->j->extent + t->edge - 1) / t->edge;
  t->ntiles = t->batch.total * t->ni * t->nj;
  // consecutive threads take consecutive addresses where the operand has unit stride
  // along k (As[i][k] natural) or along i/j (transposed thread roles)
  t->a_kfast = stride_of(mm->a, kvar) <= stride_of(mm->a, ivar);
  t->b_jfast = stride_of(mm->b, jvar) <= stride_of(mm->b, kvar);
  return true;
}

// ============================================================================
// The CUDA plan: the kernel's shape and launch
// ============================================================================
static int64_t pow2_at_least(int64_t n, int64_t lo, int64_t hi) {
  int64_t b = lo;
  while (b < n && b < hi)
    b *= 2;
  return b;
}

static int64_t grid_cap(int64_t blocks) { return blocks < 65535 ? blocks : 65535; }

static void cuda_plan(SchedGpu *c, LGpuSched *gs) {
  const LKernel *k = c->k;
  c->extent = arena_alloc(&c->cx->arena, sizeof(int64_t) * (size_t)(k->nvars + 1));
  loop_extents(c, &k->body);
  // the outer nest of independent loops: the rows (or the elements)
  const LStmt *outer[MAX_NEST];
  int nouter = 0;
  const LStmtList *row = &k->body;
  while (nouter < MAX_NEST && row->len == 1 && row->data[0]->kind == LS_LOOP && loop_independent(c, row->data[0])) {
    outer[nouter++] = row->data[0];
    row = &row->data[0]->body;
  }
  gs->outer = make_nest(c, outer, nouter, row);
  int64_t nrows = gs->outer.total;
  if (nouter > 0 && !stmts_has_loop(row))
    gs->shape = GK_FLAT;
  else if (matmul_tile(c, &gs->outer, &gs->tile))
    gs->shape = GK_MATMUL;
  else if (has_split(c, row))
    gs->shape = GK_ROWS;
  else
    gs->shape = GK_SERIAL;
  switch (gs->shape) {
  case GK_FLAT:
    gs->block = 256;
    gs->grid = grid_cap((nrows + gs->block - 1) / gs->block);
    break;
  case GK_ROWS: {
    gs->grid = grid_cap(nrows);
    ArgSet r = {0}, w = {0};
    block_stmts(c, row, &r, &w, &gs->row);
    gs->block = pow2_at_least(c->max_split, 32, 256);
    gs->nshared = c->nshared;
    break;
  }
  case GK_MATMUL:
    gs->block = gs->tile.edge * gs->tile.edge;
    gs->grid = grid_cap(gs->tile.ntiles);
    break;
  case GK_SERIAL:
    gs->block = pow2_at_least(nrows, 32, 128);
    gs->grid = grid_cap((nrows + gs->block - 1) / gs->block);
    break;
  case GK_COUNT: td_unreachable();
  }
  if (nrows == 0)
    gs->grid = 0;
}

// ============================================================================
// The NVVM plan: grid-stride loops over top-level statements
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

// The loops chain[0..m), the first m of a perfect nest, may run their iterations in
// any order on any threads when, for every buffer written in their body, all
// accesses to it share the coefficients of the chain's variables (and, but in a SORT
// kernel, the base), and these
// coefficients, by magnitude, each exceed what the smaller ones and the rest of the
// indices (their bases included) can reach: then the element determines the iteration, and no iteration
// touches an element another one writes.
static bool distributable(Arena *ar, const LKernel *k, const LStmt *const *chain, int m) {
  int nv = k->nvars;
  bool *isd = arena_alloc(ar, (size_t)nv + 1);
  int64_t *ext = arena_alloc(ar, sizeof *ext * (size_t)(nv + 1));
  Scan s = {ar, {0}, ext, true};
  for (int i = 0; i < m; i++)
    isd[chain[i]->var] = true, ext[chain[i]->var] = chain[i]->extent;
  for (int i = 0; i < chain[m - 1]->body.len; i++)
    scan_stmt(&s, chain[m - 1]->body.data[i]);
  int64_t *c = arena_alloc(ar, sizeof *c * (size_t)(m + 1)), *e = arena_alloc(ar, sizeof *e * (size_t)(m + 1));
  for (int w = 0; w < k->args.len; w++) {
    bool written = false;
    for (int i = 0; i < s.acc.len; i++)
      written |= s.acc.data[i].arg == w && s.acc.data[i].store;
    if (!written)
      continue;
    const LIndex *first = NULL;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int i = 0; i < s.acc.len; i++) {
      const Access *a = &s.acc.data[i];
      if (a->arg != w)
        continue;
      if (a->idx->dyn)
        return false;
      if (!first)
        first = a->idx;
      if (a->idx->base != first->base && k->kind != KK_SORT)  // (as offsets_disjoint: SORT only)
        return false;
      for (int j = 0; j < m; j++)
        if (coef_of(a->idx, chain[j]->var) != coef_of(first, chain[j]->var))
          return false;
      int64_t l, h, b = a->idx->base;
      if (!term_range(a->idx, isd, ext, nv, &l, &h) || b > GLIMIT || b < -GLIMIT)
        return false;
      l += b, h += b;  // the bases count in the reach: accesses at several offsets
      lo = l < lo ? l : lo;
      hi = h > hi ? h : hi;
    }
    for (int j = 0; j < m; j++) {  // |coefficients|, sorted ascending with their extents
      int64_t cj = coef_of(first, chain[j]->var), ej = chain[j]->extent;
      if (cj == 0 || cj > GLIMIT || cj < -GLIMIT)
        return false;
      cj = cj < 0 ? -cj : cj;
      int p = j;
      for (; p > 0 && c[p - 1] > cj; p--)
        c[p] = c[p - 1], e[p] = e[p - 1];
      c[p] = cj, e[p] = ej;
    }
    int64_t reach = hi - lo;
    for (int j = 0; j < m; j++) {
      if (c[j] <= reach || e[j] - 1 > GLIMIT / c[j])
        return false;
      if ((reach += c[j] * (e[j] - 1)) > GLIMIT)
        return false;
    }
  }
  return true;
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
      if (x->idx->base + xl <= y->idx->base + yh && y->idx->base + yl <= x->idx->base + xh)
        return false;
    }
  return true;
}

// The perfect nest of s up to its first loop of no iterations: its length.
static int live_nest(const LStmt *s, const LStmt **chain, int max) {
  const LStmtList *body;
  int n = perfect_nest(s, chain, max, &body);
  for (int j = 0; j < n; j++)
    if (chain[j]->extent <= 0)
      return j;
  return n;
}

// gs->iters and gs->spread (LGpuSched).
static void nvvm_plan(SchedGpu *c, LGpuSched *gs) {
  const LKernel *k = c->k;
  Arena *ar = &c->cx->arena;
  const LStmtList *body = &k->body;
  gs->spread = arena_alloc(ar, sizeof *gs->spread * (size_t)(body->len + 1));
  int nl = k->locals.len;
  int *owner = arena_alloc(ar, sizeof *owner * (size_t)(nl + 1));
  for (int l = 0; l < nl; l++)
    owner[l] = -1;
  for (int i = 0; i < body->len; i++) {
    if (body->data[i]->kind != LS_LOOP)
      return;  // a top-level statement every thread would run
    bool *used = arena_alloc(ar, (size_t)nl + 1);
    mark_locals(body->data[i], NULL, used);
    for (int l = 0; l < nl; l++) {  // a local lives in one top-level statement
      if (used[l] && owner[l] >= 0)
        return;
      if (used[l])
        owner[l] = i;
    }
  }
  for (int i = 0; i < body->len; i++)
    for (int j = i + 1; j < body->len; j++)
      if (!independent(ar, k, body->data[i], body->data[j]))
        return;
  const LStmt **chain = arena_alloc(ar, sizeof *chain * (size_t)(k->nvars + 1));
  int64_t most = 0;
  for (int i = 0; i < body->len; i++) {
    int m = live_nest(body->data[i], chain, k->nvars);
    while (m > 0 && !distributable(ar, k, chain, m))
      m--;
    int64_t iters = 1;
    for (int j = 0; j < m; j++)
      iters = iters > INT64_MAX / chain[j]->extent ? INT64_MAX : iters * chain[j]->extent;
    if (m > 0 && iters > most)
      most = iters;
    if (m > 0)
      gs->spread[i] = make_nest(c, chain, m, &chain[m - 1]->body);
  }
  gs->iters = most;
}

// ============================================================================
// Entry points
// ============================================================================
static LGpuSched *schedule(Ctx *cx, const LKernel *k) {
  LGpuSched *gs = arena_alloc(&cx->arena, sizeof *gs);
  SchedGpu c = {cx, k, NULL, 0, 0};
  gs->shape = GK_COUNT;
  if (k->args.len <= LG_MAX_ARGS)
    cuda_plan(&c, gs);
  nvvm_plan(&c, gs);
  return gs;
}

void sched_gpu(Ctx *cx, LProgram *p) {
  for (int i = 0; i < p->kernels.len; i++) {
    LKernel *k = p->kernels.data[i];
    // a kernel with an earlier one's code (share_kernels) runs that one's, as it is scheduled
    k->gpu = k->same ? k->same->gpu : schedule(cx, k);
    TD_ASSERT(k->gpu);
  }
}

const LGpuSched *sched_gpu_kernel(Ctx *cx, const LKernel *k) { return k->gpu ? k->gpu : schedule(cx, k); }
