// ir/hoist.c: loop-invariant lets move out of their loop (hoist_invariants in ir/loop.h),
// in the CPU form, after the schedule. A kernel fused across a broadcast computes, in its
// inner loop, values of the outer index only: Mamba's scan step over [d, n] recomputes
// silu(u[d]) (an exp) 16 times per d. gcc leaves such a loop scalar when a select of a
// clamp is invariant in it ("relevant stmt not supported": vecmath's exp clamps its
// argument), 4x slower than the same loop with those lets before it.
//
// A top-level LS_LET of a loop's body moves to just before the loop when its value
// reads neither the loop's var nor a local the body assigns (a let left in it, or any
// LS_SET in it), loads no buffer the body stores into, and nothing in it can raise (an
// error's order against the body's stores would change). Only out of a loop of constant
// extent > 0 (the let ran at least once before too: its loads were in bounds), with no
// call in its body (a function may write any buffer it is given), and not out of a
// parallel loop (its body is the threads' own; the lets would be shared). Inner loops
// first, so a value of the outermost index moves all the way out. The moved lets keep
// their order; what each computes is unchanged, so results are bit for bit the same.
#include "ir/loop.h"

#include <stdlib.h>
#include <string.h>

typedef struct Hoist {
  Ctx *cx;
  LKernel *k;
  bool *variant;  // per local: assigned in the body being looked at (not movable out)
  bool *set;      // per local: an LS_SET in that body assigns it (its let stays: an accumulator's start)
  bool *stored;   // per kernel argument: the body stores into it
} Hoist;

// Whether the body holds a call, and marks what it stores and the locals it assigns.
static bool scan_body(Hoist *h, const LStmtList *l) {
  bool call = false;
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    switch (s->kind) {
    case LS_STORE: h->stored[s->buf] = true; break;
    case LS_LET: h->variant[s->local] = true; break;
    case LS_SET: h->variant[s->local] = h->set[s->local] = true; break;
    case LS_LOOP:
    case LS_IF: call |= scan_body(h, &s->body); break;
    case LS_CALL: call = true; break;
    case LS_PREFETCH: break;  // (a hint: reads nothing the body computes, writes nothing)
    default: call = true; break;  // (GPU statements: never in the CPU form; keep all in place)
    }
  }
  return call;
}

static bool index_ok(const LIndex *ix, int var);

// e is the same in every iteration of the loop of var.
static bool invariant(const Hoist *h, const LExpr *e, int var) {
  if (!e)
    return true;
  if (e->err >= 0)
    return false;
  switch (e->kind) {
  case LX_VAR: return e->var != var;
  case LX_LOCAL: return !h->variant[e->local];
  case LX_LANE: break;  // a: the local
  case LX_LOAD: return !h->stored[e->buf] && index_ok(&e->idx, var) && invariant(h, e->idx.dyn, var);
  case LX_CONST:
  case LX_UNARY:
  case LX_BINARY:
  case LX_SELECT:
  case LX_CAST:
  case LX_BITCAST:
  case LX_FMA:
  case LX_SPLAT:
  case LX_INSERT:
  case LX_SHUFFLE: break;
  default: return false;  // GPU and function-argument forms: left alone
  }
  return invariant(h, e->a, var) && invariant(h, e->b, var) && invariant(h, e->c, var);
}

static bool index_ok(const LIndex *ix, int var) {
  for (int t = 0; t < ix->nterms; t++)
    if (ix->var[t] == var && ix->coef[t] != 0)
      return false;
  return true;
}

static void hoist_list(Hoist *h, LStmtList *l);

// The lets of loop s's body that move out, appended to out in their order (the body keeps the rest).
static void hoist_loop(Hoist *h, LStmt *s, LStmtList *out) {
  hoist_list(h, &s->body);
  if (s->parallel || s->extent <= 0 || s->n || s->start || s->step)
    return;
  int nl = h->k->locals.len, na = h->k->args.len;
  memset(h->variant, 0, sizeof *h->variant * (size_t)(nl + 1));
  memset(h->set, 0, sizeof *h->set * (size_t)(nl + 1));
  memset(h->stored, 0, sizeof *h->stored * (size_t)(na + 1));
  if (scan_body(h, &s->body))
    return;
  LStmtList keep = {0};
  for (int i = 0; i < s->body.len; i++) {
    LStmt *b = s->body.data[i];
    if (b->kind == LS_LET && !h->set[b->local] && invariant(h, b->val, s->var)) {
      h->variant[b->local] = false;  // defined before the loop from now on
      vec_push(&h->cx->arena, out, b);
      continue;
    }
    vec_push(&h->cx->arena, &keep, b);
  }
  s->body = keep;
}

static void hoist_list(Hoist *h, LStmtList *l) {
  LStmtList out = {0};
  bool moved = false;
  for (int i = 0; i < l->len; i++) {
    LStmt *s = l->data[i];
    if (s->kind == LS_LOOP) {
      int before = out.len;
      hoist_loop(h, s, &out);
      moved |= out.len > before;
    } else if (s->kind == LS_IF) {
      hoist_list(h, &s->body);
    }
    vec_push(&h->cx->arena, &out, s);
  }
  if (moved)
    *l = out;
}

typedef VEC(const LStmt *) LoopList;

// The loops of l, appended to v.
static void list_loops(Ctx *cx, const LStmtList *l, LoopList *v) {
  for (int i = 0; i < l->len; i++)
    if (l->data[i]->kind == LS_LOOP || l->data[i]->kind == LS_IF) {
      if (l->data[i]->kind == LS_LOOP)
        vec_push(&cx->arena, v, l->data[i]);
      list_loops(cx, &l->data[i]->body, v);
    }
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (const LStmt *const *)a, y = (uintptr_t) * (const LStmt *const *)b;
  return (x > y) - (x < y);
}

void hoist_invariants(Ctx *cx, LKernel *k) {
  LoopList loops = {0};  // a loop reached twice (one statement in two lists) stays as it is
  list_loops(cx, &k->body, &loops);
  if (loops.len > 1)  // (no loops: data is NULL, which qsort may not be given)
    qsort(loops.data, (size_t)loops.len, sizeof *loops.data, cmp_ptr);
  for (int i = 1; i < loops.len; i++)
    if (loops.data[i] == loops.data[i - 1])
      return;
  int nl = k->locals.len, na = k->args.len;
  Hoist h = {cx, k, arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nl + 1)),
             arena_alloc(&cx->arena, sizeof(bool) * (size_t)(nl + 1)),
             arena_alloc(&cx->arena, sizeof(bool) * (size_t)(na + 1))};
  hoist_list(&h, &k->body);
}
