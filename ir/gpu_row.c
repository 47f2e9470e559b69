// ir/gpu_row.c: rows on the GPU (gpu_rows, ir/gpu.h). The kernel's outer independent
// loops are its rows; a row runs on a group of threads, a warp or a block:
//   a warp per row    when the row's largest split has at most WARP_ROW iterations and
//                     there are rows enough to fill warps: blocks of 8 warps, the rows
//                     grid-stride over every warp of the grid
//   a block per row   otherwise: the block's size the largest split / 4 (a power of two
//                     in [64, 512], each thread taking several), the rows grid-stride
//                     over the blocks
// In the row, each statement is run by the group as its role says:
//   every thread   a let, set, if or a loop whose iterations depend on each other: every
//                  thread of the group computes the same values; a store is done by the
//                  group's first thread alone
//   split          a perfect nest of independent iterations with no loop inside: the
//                  group's threads take its flat iterations in turn (thread t the
//                  iterations t, t + group, ...)
//   reduce         a perfect nest combining values into accumulators (LX below): split,
//                  each thread with partial accumulators (the first thread's start from
//                  the row's values, the others' from the op's identity), then combined:
//                  a butterfly of warp shuffles (every lane gets the result), and in a
//                  block the warps' results through shared memory, which every thread
//                  folds in warp order; so every thread holds the row's accumulators
//   a barrier (__syncthreads, or __syncwarp for a warp) comes before a statement that
//   touches a buffer written since the last one, or writes one read since; after a
//   loop whose next iteration touches what this one wrote, at the end of each iteration.
// An argmax-like reduction (a `if (better) { acc = x; ... }` whose condition reads only
// the accumulators and what they take) keeps with each thread's candidate its
// iteration; candidates combine by the condition, the earlier iteration winning ties,
// so the row's earliest best wins as on the CPU.
//
// Invariants: the association of a reduction is fixed by the group's size alone (the
// results are the same at every grid); a row's statements run in their order.
#include "ir/gpu.h"

#include <inttypes.h>
#include <string.h>

enum { WARP_ROW = 1024, ROW_WARPS = 8 };

// ============================================================================
// The roles of a row's statements
// ============================================================================

// A reduction nest's accumulators: plain (lets of private locals, then `acc = acc op
// e`, op add mul maximum minimum logical and/or, no half dtype) or the argform.
typedef struct Reduce {
  bool argform;
  int nacc;
  int acc[GPU_MAX_ACC];
  Op op[GPU_MAX_ACC];    // plain
  int src[GPU_MAX_ACC];  // argform: the private local each accumulator takes, or -1
  const LStmt *cond_if;  // argform
} Reduce;

static bool is_assoc(Op op) {
  return op == OP_ADD || op == OP_MUL || op == OP_MAXIMUM || op == OP_MINIMUM || op == OP_LOGICAL_AND ||
         op == OP_LOGICAL_OR;
}

static int acc_index(const Reduce *r, int local) {
  for (int i = 0; i < r->nacc; i++)
    if (r->acc[i] == local)
      return i;
  return -1;
}

// Reads only locals, constants and pure arithmetic: the argform's condition, evaluated
// again when candidates combine.
static bool pure_of_locals(const LExpr *e) {
  if (!e)
    return true;
  if (e->kind == LX_VAR || e->kind == LX_LOAD || e->kind == LX_CHECKED_INDEX || lx_raises_here(e))
    return false;
  return pure_of_locals(e->a) && pure_of_locals(e->b) && pure_of_locals(e->c);
}

// local is let in body and mentioned nowhere outside nest.
static bool is_private(GpuBuild *g, const LStmtList *body, int local, const LStmt *nest) {
  bool let_here = false;
  for (int i = 0; i < body->len; i++)
    if (body->data[i]->kind == LS_LET && body->data[i]->local == local)
      let_here = true;
  return let_here && !gpu_locals_outside(g, nest)[local];
}

static bool reduction_nest(GpuBuild *g, const LStmt *s, const LStmt **loops, int *n, const LStmtList **body,
                           Reduce *r) {
  *n = gpu_perfect_nest(s, loops, GPU_MAX_NEST, body);
  *r = (Reduce){0};
  if (*n == 0 || gpu_stmts_have_loop(*body))
    return false;
  const LStmtList *l = *body;
  GpuArgSet rd = {0}, wr = {0};
  gpu_stmts_access(l, &rd, &wr);
  if (!gpu_set_empty(&wr))
    return false;
  bool plain = true;
  for (int i = 0; i < l->len && plain; i++) {
    const LStmt *t = l->data[i];
    if (t->kind == LS_LET && is_private(g, l, t->local, s))
      continue;
    if (t->kind != LS_SET || r->nacc == GPU_MAX_ACC || acc_index(r, t->local) >= 0) {
      plain = false;
      break;
    }
    DType lt = g->k->locals.data[t->local];
    const LExpr *v = t->val;
    if (dtype_is_half(lt) || v->kind != LX_BINARY || !is_assoc(v->op) || v->dt != lt || v->lanes > 1) {
      plain = false;
      break;
    }
    const LExpr *other = NULL;
    if (v->a->kind == LX_LOCAL && v->a->local == t->local)
      other = v->b;
    else if (v->b->kind == LX_LOCAL && v->b->local == t->local)
      other = v->a;
    if (!other || gpu_expr_reads_local(other, t->local)) {
      plain = false;
      break;
    }
    r->acc[r->nacc] = t->local;
    r->op[r->nacc++] = v->op;
  }
  if (plain && r->nacc > 0) {
    for (int a = 0; a < r->nacc; a++)  // no accumulator read anywhere else in the body
      for (int i = 0; i < l->len; i++) {
        const LStmt *t = l->data[i];
        if (t->kind == LS_SET && t->local == r->acc[a])
          continue;
        if (gpu_expr_reads_local(t->val, r->acc[a]))
          return false;
      }
    for (int a = 0; a < r->nacc; a++)
      for (int b = 0; b < r->nacc; b++)
        for (int i = 0; a != b && i < l->len; i++)
          if (l->data[i]->kind == LS_SET && l->data[i]->local == r->acc[a] &&
              gpu_expr_reads_local(l->data[i]->val, r->acc[b]))
            return false;
    return true;
  }
  // argform: lets of private locals, then one `if (cond) { acc = x; ... }`
  *r = (Reduce){.argform = true};
  if (l->len < 1 || l->data[l->len - 1]->kind != LS_IF)
    return false;
  const LStmt *iff = l->data[l->len - 1];
  r->cond_if = iff;
  for (int i = 0; i + 1 < l->len; i++)
    if (l->data[i]->kind != LS_LET || !is_private(g, l, l->data[i]->local, s))
      return false;
  if (iff->body.len == 0 || iff->body.len > GPU_MAX_ACC)
    return false;
  for (int i = 0; i < iff->body.len; i++) {
    const LStmt *t = iff->body.data[i];
    if (t->kind != LS_SET || acc_index(r, t->local) >= 0 || is_private(g, l, t->local, s))
      return false;
    r->acc[r->nacc] = t->local;
    r->src[r->nacc++] = t->val->kind == LX_LOCAL && is_private(g, l, t->val->local, s) ? t->val->local : -1;
  }
  for (int i = 0; i < iff->body.len; i++) {
    const LStmt *t = iff->body.data[i];
    if (g->k->locals.data[t->local] != t->val->dt || dtype_is_half(t->val->dt) || t->val->lanes > 1)
      return false;
    for (int a = 0; a < r->nacc; a++)
      if (gpu_expr_reads_local(t->val, r->acc[a]))
        return false;
  }
  for (int i = 0; i + 1 < l->len; i++)
    for (int a = 0; a < r->nacc; a++)
      if (gpu_expr_reads_local(l->data[i]->val, r->acc[a]))
        return false;
  if (!pure_of_locals(iff->cond))  // the accumulators and private locals they take
    return false;
  for (int lo = 0; lo < g->k->locals.len; lo++) {
    if (!gpu_expr_reads_local(iff->cond, lo) || acc_index(r, lo) >= 0)
      continue;
    bool taken = false;
    for (int a = 0; a < r->nacc; a++)
      taken |= r->src[a] == lo;
    if (!taken)
      return false;
  }
  return true;
}

static int64_t nest_total(const LStmt *const *loops, int n) {
  int64_t t = 1;
  for (int i = 0; i < n; i++)
    t *= loops[i]->extent;
  return t;
}

// The largest split or reduce nest of l, -1 when there is none.
static int64_t largest_split(GpuBuild *g, const LStmtList *l) {
  int64_t most = -1;
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    const LStmt *loops[GPU_MAX_NEST];
    const LStmtList *body;
    int n;
    Reduce red;
    int64_t m = -1;
    if (s->kind == LS_LOOP &&
        (gpu_map_nest(g, s, loops, &n, &body) || reduction_nest(g, s, loops, &n, &body, &red)))
      m = nest_total(loops, n);
    else if (s->kind == LS_LOOP || s->kind == LS_IF)
      m = largest_split(g, &s->body);
    most = m > most ? m : most;
  }
  return most;
}

// ============================================================================
// Building a row
// ============================================================================
typedef struct Row {
  GpuBuild *g;
  bool warp;      // a warp per row, else a block
  int64_t group;  // the threads of a row
  int nw;         // the warps of a block (a block per row)
} Row;

static LExpr *gid(Row *R) { return R->warp ? gpu_lane(R->g) : gpu_tid(R->g); }

static LExpr *cmp(Ctx *cx, Op op, LExpr *a, LExpr *b) { return lx_binary(cx, op, DT_BOOL, a, b); }

// The identity of op on dt.
static LExpr *identity(Ctx *cx, Op op, DType dt) {
  bool fl = dtype_is_float(dt);
  switch (op) {
  case OP_ADD: return fl ? lx_const_f(cx, dt, -0.0) : lx_const_i(cx, dt, 0);
  case OP_MUL: return fl ? lx_const_f(cx, dt, 1.0) : lx_const_i(cx, dt, 1);
  case OP_MAXIMUM:
    return fl ? lx_const_f(cx, dt, -__builtin_inf())
           : dt == DT_BOOL ? lx_const_i(cx, dt, 0)
           : lx_const_i(cx, dt, dt == DT_I64 ? INT64_MIN : INT32_MIN);
  case OP_MINIMUM:
    return fl ? lx_const_f(cx, dt, __builtin_inf())
           : dt == DT_BOOL ? lx_const_i(cx, dt, 1)
           : lx_const_i(cx, dt, dt == DT_I64 ? INT64_MAX : INT32_MAX);
  case OP_LOGICAL_AND: return lx_const_i(cx, dt, 1);
  case OP_LOGICAL_OR: return lx_const_i(cx, dt, 0);
  default: td_unreachable();
  }
}

// v as lane L of the warp holds it (mode, operand b): shuffles move 4 or 8 bytes, a
// bool as an i32.
static LExpr *shfl(GpuBuild *g, LExpr *v, int mode, LExpr *b) {
  DType dt = v->dt;
  TD_ASSERT(dt == DT_BOOL || dt == DT_I32 || dt == DT_I64 || dt == DT_F32 || dt == DT_F64);
  LExpr *e = lx_new(g->cx, LX_SHFL, dt == DT_BOOL ? DT_I32 : dt);
  e->a = dt == DT_BOOL ? lx_cast(g->cx, DT_I32, v) : v;
  e->b = b;
  e->i = mode;
  return dt == DT_BOOL ? lx_cast(g->cx, DT_BOOL, e) : e;
}

static LExpr *loc(GpuBuild *g, int l) { return lx_local(g->cx, g->k->locals.data[l], l); }

// The split loop over the flat iterations of loops[0..n): the group's thread t takes
// t, t + group, ...; returns its body, the nest's vars bound from the flat var *fv.
static LStmtList *split_loop(Row *R, LStmtList *out, const LStmt *const *loops, int n, const LStmtList *body,
                             int *fv) {
  GpuBuild *g = R->g;
  *fv = gpu_new_var(g);
  LStmtList *l = gpu_loop(g, out, *fv, nest_total(loops, n), gid(R), gpu_i64(g, R->group));
  gpu_decompose(g, l, loops, n, lx_var(g->cx, *fv), body);
  return l;
}

// ---- combining a plain reduction's partial results ----
static void combine_plain(Row *R, LStmtList *out, const Reduce *r, const int *part) {
  GpuBuild *g = R->g;
  Ctx *cx = g->cx;
  for (int a = 0; a < r->nacc; a++) {
    // the butterfly: every lane gets the warp's result. The shuffle is a statement of its
    // own: every lane runs it (in C, `p || shfl(...)` would skip it in some lanes)
    DType dt = g->k->locals.data[part[a]];
    int other = gpu_new_local(g, dt);
    for (int o = GPU_WARP / 2; o > 0; o /= 2) {
      LExpr *x = shfl(g, loc(g, part[a]), LG_SHFL_XOR, gpu_i64(g, o));
      gpu_push(g, out, o == GPU_WARP / 2 ? ls_let(cx, other, x) : ls_set(cx, other, x));
      gpu_push(g, out, ls_set(cx, part[a], lx_binary(cx, r->op[a], dt, loc(g, part[a]), loc(g, other))));
    }
  }
  if (R->warp) {
    gpu_sync(g, out, true);
  } else {  // the warps' results through shared memory, folded in warp order by every thread
    int sh[GPU_MAX_ACC];
    LStmt *first = ls_if(cx, cmp(cx, OP_EQ, gpu_lane(g), gpu_i64(g, 0)));
    for (int a = 0; a < r->nacc; a++) {
      DType dt = g->k->locals.data[part[a]];
      sh[a] = gpu_shared(g, dt, R->nw, "block reduction");
      gpu_push(g, &first->body, ls_store(cx, sh[a], (LIndex){.nterms = 1, .var = {g->gs->warp}, .coef = {1}},
                                            loc(g, part[a])));
    }
    gpu_push(g, out, first);
    gpu_sync(g, out, false);
    for (int a = 0; a < r->nacc; a++) {
      DType dt = g->k->locals.data[part[a]];
      gpu_push(g, out, ls_set(cx, part[a], lx_load(cx, dt, sh[a], (LIndex){.base = 0})));
      for (int w = 1; w < R->nw; w++)
        gpu_push(g, out, ls_set(cx, part[a], lx_binary(cx, r->op[a], dt, loc(g, part[a]),
                                                         lx_load(cx, dt, sh[a], (LIndex){.base = w}))));
    }
    gpu_sync(g, out, false);  // the shared memory may be reused
  }
  for (int a = 0; a < r->nacc; a++)
    gpu_push(g, out, ls_set(cx, r->acc[a], loc(g, part[a])));
}

static void lower_plain(Row *R, LStmtList *out, const LStmt *const *loops, int n, const LStmtList *body,
                        const Reduce *r) {
  GpuBuild *g = R->g;
  Ctx *cx = g->cx;
  int nl = g->k->locals.len;
  int *map = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nl + 1));
  for (int i = 0; i < nl; i++)
    map[i] = -1;
  int part[GPU_MAX_ACC];
  for (int a = 0; a < r->nacc; a++) {
    DType dt = g->k->locals.data[r->acc[a]];
    part[a] = map[r->acc[a]] = gpu_new_local(g, dt);
    LExpr *first = cmp(cx, OP_EQ, gid(R), gpu_i64(g, 0));
    gpu_push(g, out, ls_let(cx, part[a], lx_select(cx, first, loc(g, r->acc[a]), identity(cx, r->op[a], dt))));
  }
  int fv;
  LStmtList *l = split_loop(R, out, loops, n, body, &fv);
  GpuSubst s = {.local = map};
  for (int i = 0; i < body->len; i++)
    gpu_push(g, l, gpu_subst_stmt(g, body->data[i], &s));
  combine_plain(R, out, r, part);
}

// ---- the argform ----
// Whether candidate (c, ckey) replaces the current (a, key) (both sets of locals):
// ckey names an iteration and it is better, or as good and earlier.
static LExpr *take(GpuBuild *g, const Reduce *r, const int *a, const int *c, int key, int ckey) {
  Ctx *cx = g->cx;
  int nl = g->k->locals.len;
  int *m1 = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nl + 1)), *m2 = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nl + 1));
  for (int i = 0; i < nl; i++)
    m1[i] = m2[i] = -1;
  for (int j = 0; j < r->nacc; j++) {  // better(c over a) reads a as the accumulators, c as what they take
    m1[r->acc[j]] = a[j], m2[r->acc[j]] = c[j];
    if (r->src[j] >= 0)
      m1[r->src[j]] = c[j], m2[r->src[j]] = a[j];
  }
  GpuSubst s1 = {.local = m1}, s2 = {.local = m2};
  LExpr *better = gpu_subst_expr(g, r->cond_if->cond, &s1), *worse = gpu_subst_expr(g, r->cond_if->cond, &s2);
  LExpr *none = lx_const_i(cx, DT_I64, INT64_MAX);
  LExpr *kc = loc(g, ckey), *k = loc(g, key);
  LExpr *tie = lx_binary(cx, OP_LOGICAL_AND, DT_BOOL, lx_unary(cx, OP_LOGICAL_NOT, DT_BOOL, worse),
                         cmp(cx, OP_LT, kc, k));
  LExpr *wins = lx_binary(cx, OP_LOGICAL_OR, DT_BOOL, cmp(cx, OP_EQ, k, none),
                          lx_binary(cx, OP_LOGICAL_OR, DT_BOOL, better, tie));
  return lx_binary(cx, OP_LOGICAL_AND, DT_BOOL, cmp(cx, OP_NE, kc, none), wins);
}

static void take_into(GpuBuild *g, LStmtList *out, const Reduce *r, const int *a, const int *c, int key, int ckey) {
  LStmt *s = ls_if(g->cx, take(g, r, a, c, key, ckey));
  for (int j = 0; j < r->nacc; j++)
    gpu_push(g, &s->body, ls_set(g->cx, a[j], loc(g, c[j])));
  gpu_push(g, &s->body, ls_set(g->cx, key, loc(g, ckey)));
  gpu_push(g, out, s);
}

static void lower_argform(Row *R, LStmtList *out, const LStmt *const *loops, int n, const LStmtList *body,
                          const Reduce *r) {
  GpuBuild *g = R->g;
  Ctx *cx = g->cx;
  int nl = g->k->locals.len;
  int *map = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nl + 1));
  for (int i = 0; i < nl; i++)
    map[i] = -1;
  // each thread's candidate: the row's values and key -1 (before every iteration) in the
  // group's first thread, no candidate (key INT64_MAX) in the others
  int a[GPU_MAX_ACC], c[GPU_MAX_ACC];
  for (int j = 0; j < r->nacc; j++) {
    a[j] = map[r->acc[j]] = gpu_new_local(g, g->k->locals.data[r->acc[j]]);
    gpu_push(g, out, ls_let(cx, a[j], loc(g, r->acc[j])));
  }
  int key = gpu_new_local(g, DT_I64);
  gpu_push(g, out, ls_let(cx, key, lx_select(cx, cmp(cx, OP_EQ, gid(R), gpu_i64(g, 0)), gpu_i64(g, -1),
                                            gpu_i64(g, INT64_MAX))));
  int fv;
  LStmtList *l = split_loop(R, out, loops, n, body, &fv);
  GpuSubst s = {.local = map};
  for (int i = 0; i + 1 < body->len; i++)
    gpu_push(g, l, gpu_subst_stmt(g, body->data[i], &s));
  LStmt *iff = gpu_subst_stmt(g, r->cond_if, &s);
  gpu_push(g, &iff->body, ls_set(cx, key, lx_var(cx, fv)));
  gpu_push(g, l, iff);
  // the warp: a tree of shuffles down, lane 0 ends with the warp's best
  for (int j = 0; j < r->nacc; j++)
    c[j] = gpu_new_local(g, g->k->locals.data[r->acc[j]]);
  int ckey = gpu_new_local(g, DT_I64);
  for (int o = GPU_WARP / 2; o > 0; o /= 2) {
    LStmt *(*mk)(Ctx *, int, LExpr *) = o == GPU_WARP / 2 ? ls_let : ls_set;
    for (int j = 0; j < r->nacc; j++)
      gpu_push(g, out, mk(cx, c[j], shfl(g, loc(g, a[j]), LG_SHFL_DOWN, gpu_i64(g, o))));
    gpu_push(g, out, mk(cx, ckey, shfl(g, loc(g, key), LG_SHFL_DOWN, gpu_i64(g, o))));
    take_into(g, out, r, a, c, key, ckey);
  }
  if (R->warp) {  // lane 0's to every lane
    for (int j = 0; j < r->nacc; j++)
      gpu_push(g, out, ls_set(cx, a[j], shfl(g, loc(g, a[j]), LG_SHFL_IDX, gpu_i64(g, 0))));
    gpu_sync(g, out, true);
  } else {  // the warps' best through shared memory, folded in warp order by every thread
    int sh[GPU_MAX_ACC], shk;
    LStmt *first = ls_if(cx, cmp(cx, OP_EQ, gpu_lane(g), gpu_i64(g, 0)));
    LIndex at = {.nterms = 1, .var = {g->gs->warp}, .coef = {1}};
    for (int j = 0; j < r->nacc; j++) {
      sh[j] = gpu_shared(g, g->k->locals.data[a[j]], R->nw, "block argument reduction");
      gpu_push(g, &first->body, ls_store(cx, sh[j], at, loc(g, a[j])));
    }
    shk = gpu_shared(g, DT_I64, R->nw, "block argument reduction keys");
    gpu_push(g, &first->body, ls_store(cx, shk, at, loc(g, key)));
    gpu_push(g, out, first);
    gpu_sync(g, out, false);
    for (int j = 0; j < r->nacc; j++)
      gpu_push(g, out, ls_set(cx, a[j], lx_load(cx, g->k->locals.data[a[j]], sh[j], (LIndex){.base = 0})));
    gpu_push(g, out, ls_set(cx, key, lx_load(cx, DT_I64, shk, (LIndex){.base = 0})));
    for (int w = 1; w < R->nw; w++) {
      for (int j = 0; j < r->nacc; j++)
        gpu_push(g, out, ls_set(cx, c[j], lx_load(cx, g->k->locals.data[a[j]], sh[j], (LIndex){.base = w})));
      gpu_push(g, out, ls_set(cx, ckey, lx_load(cx, DT_I64, shk, (LIndex){.base = w})));
      take_into(g, out, r, a, c, key, ckey);
    }
    gpu_sync(g, out, false);
  }
  for (int j = 0; j < r->nacc; j++)
    gpu_push(g, out, ls_set(cx, r->acc[j], loc(g, a[j])));
}

// ---- the statements of a row ----
static void lower_list(Row *R, const LStmtList *l, GpuArgSet *pr, GpuArgSet *pw, LStmtList *out);

static void lower_stmt(Row *R, const LStmt *s, GpuArgSet *pr, GpuArgSet *pw, LStmtList *out) {
  GpuBuild *g = R->g;
  Ctx *cx = g->cx;
  GpuArgSet r = {0}, w = {0};
  gpu_stmt_access(s, &r, &w);
  if (gpu_set_meets(&w, pr) || gpu_set_meets(&w, pw) || gpu_set_meets(&r, pw)) {
    gpu_sync(g, out, R->warp);
    *pr = *pw = (GpuArgSet){0};
  }
  switch (s->kind) {
  case LS_LET:
  case LS_SET: gpu_push(g, out, (LStmt *)s); break;
  case LS_STORE: {  // the group's first thread
    LStmt *one = ls_if(cx, cmp(cx, OP_EQ, gid(R), gpu_i64(g, 0)));
    gpu_push(g, &one->body, (LStmt *)s);
    gpu_push(g, out, one);
    break;
  }
  case LS_IF: {
    LStmt *iff = ls_if(cx, s->cond);
    gpu_push(g, out, iff);
    lower_list(R, &s->body, pr, pw, &iff->body);
    break;
  }
  case LS_LOOP: {
    const LStmt *loops[GPU_MAX_NEST];
    const LStmtList *body;
    int n, fv;
    Reduce red;
    if (gpu_map_nest(g, s, loops, &n, &body)) {
      LStmtList *l = split_loop(R, out, loops, n, body, &fv);
      for (int i = 0; i < body->len; i++)
        gpu_push(g, l, body->data[i]);
      break;
    }
    if (reduction_nest(g, s, loops, &n, &body, &red)) {
      if (red.argform)
        lower_argform(R, out, loops, n, body, &red);
      else
        lower_plain(R, out, loops, n, body, &red);
      *pr = *pw = (GpuArgSet){0};  // the combine ends with a barrier
      return;
    }
    // every thread runs the loop; its body is the row's statements again
    GpuArgSet br = {0}, bw = {0};
    gpu_stmts_access(&s->body, &br, &bw);
    GpuArgSet er = *pr, ew = *pw;  // pending before the loop, if it runs no iteration
    LStmt *loop = ls_loop(cx, s->var, s->extent);
    gpu_push(g, out, loop);
    lower_list(R, &s->body, pr, pw, &loop->body);
    if (gpu_set_meets(&bw, pr) || gpu_set_meets(&bw, pw) || gpu_set_meets(&br, pw)) {  // the next iteration
      gpu_sync(g, &loop->body, R->warp);
      *pr = s->extent > 0 ? (GpuArgSet){0} : er;  // the last iteration ended synchronised
      *pw = s->extent > 0 ? (GpuArgSet){0} : ew;
      return;
    }
    break;
  }
  default: td_unreachable();
  }
  gpu_set_union(pr, &r);
  gpu_set_union(pw, &w);
}

static void lower_list(Row *R, const LStmtList *l, GpuArgSet *pr, GpuArgSet *pw, LStmtList *out) {
  for (int i = 0; i < l->len; i++)
    lower_stmt(R, l->data[i], pr, pw, out);
}

static int64_t pow2_in(int64_t n, int64_t lo, int64_t hi) {
  int64_t b = lo;
  while (b < n && b < hi)
    b *= 2;
  return b;
}

bool gpu_rows(GpuBuild *g, const LStmt *const *rows, int nrows, const LStmtList *row) {
  int64_t split = largest_split(g, row);
  if (split < 0)
    return false;
  int64_t total = nest_total(rows, nrows);
  LGpuSched *gs = g->gs;
  Row R = {.g = g};
  R.warp = split <= WARP_ROW && total >= ROW_WARPS;
  LExpr *first, *step;
  if (R.warp) {
    R.group = GPU_WARP;
    gs->block = GPU_WARP * ROW_WARPS;
    int64_t grid = (total + ROW_WARPS - 1) / ROW_WARPS;
    gs->grid = grid < g->t->max_grid ? grid : g->t->max_grid;
    first = gpu_add(g, gpu_mul(g, gpu_ctaid(g), ROW_WARPS), gpu_warp(g));
    step = gpu_i64(g, gs->grid * ROW_WARPS);
    gs->name = "warp per row";
  } else {
    gs->block = R.group = pow2_in(split / 4, 64, 512);
    R.nw = (int)(gs->block / GPU_WARP);
    gs->grid = total < g->t->max_grid ? total : g->t->max_grid;
    first = gpu_ctaid(g);
    step = gpu_i64(g, gs->grid);
    gs->name = arena_printf(&g->cx->arena, "block of %" PRId64 " per row", gs->block);
    gpu_lane(g), gpu_warp(g);  // the block reductions' (bound before any use)
  }
  if (total == 0) {
    gs->grid = 0;
    return true;
  }
  int r = gpu_new_var(g);
  LStmtList *l = gpu_loop(g, &g->out, r, total, first, step);
  gpu_decompose(g, l, rows, nrows, lx_var(g->cx, r), row);
  GpuArgSet pr = {0}, pw = {0};
  lower_list(&R, row, &pr, &pw, l);
  return true;
}
