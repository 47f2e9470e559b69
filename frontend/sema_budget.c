// frontend/sema_budget.c: what inlining costs, known before anything is inlined. Sema
// inlines a call by checking a clone of the callee, and checks every function as an
// entry point, so a chain of calls is cloned once per level and a function that calls
// the next twice doubles its body at each level. Before any function is checked, this
// pass gives every user function (Ast.inline_height, Ast.inline_size):
//   - inline_height: how deep its body nests once every call in it is inlined (a
//     statement is one level, an expression's depth adds to it, and a call adds
//     CALL_LEVELS and its callee's height at the depth where it is written);
//   - inline_size: the AST nodes of its body once every call is inlined (its own, plus
//     each call's callee once per call site), saturating at INT32_MAX; a for loop's
//     body counts once per iteration where its trip count is plain before checking
//     (range of literals and consts, a tuple literal), else once, and sema_ctl.c counts
//     every unrolled iteration against the same limit (unroll_size) before making it;
//   - an AST_CALL of a user function gets inline_height too: the depth its inlined
//     callee reaches in the caller's body.
// inline_call (sema.c) refuses a call of an entry point's body whose inlining nests past
// TD_MAX_NESTING ("program too deeply nested") or takes the ops the program's inlining
// clones past TD_MAX_INLINE_OPS,
// so sema, lowering and the kernel builders never recurse deeper than one expression
// may, and the program's inlined bodies together stay within the limit.
// Invariants kept: the call graph is walked with an explicit stack (a chain of any
// length costs no C stack); one function's body is walked recursively, its depth being
// bounded by the parser (TD_MAX_NESTING), a chain of left operands (a + b + c ...) in a
// loop; a call to a function already on the stack (a recursive call, which check_call
// reports) costs nothing here.
#include "frontend/sema_internal.h"

#include <string.h>

// SATURATE: sizes are exact up to here. CALL_LEVELS: the levels an inlined call adds
// to the nesting besides its callee's body, as an inlining costs sema and lowering
// several frames (the call, the body, the statement) where an operator costs one.
enum { SATURATE = INT32_MAX, CALL_LEVELS = 8 };

typedef struct Site {
  Ast *call;
  int callee;  // index in p->fns
  int depth;   // its nesting in the function (statement level 1)
  int64_t mult;  // the times it runs: the iterations of the loops around it
} Site;

typedef struct Cost {
  VEC(Site) sites;
  int own_depth;
  int64_t own_size;
  int state;  // 0 not seen, 1 on the stack, 2 done
} Cost;

typedef struct Budget {
  Sema *sema;
  Ctx *cx;
  const Program *p;
  Cost *cost;
} Budget;

static int64_t sat_add(int64_t a, int64_t b) { return a + b > SATURATE ? SATURATE : a + b; }
static int64_t sat_mul(int64_t a, int64_t b) { return b && a > SATURATE / b ? SATURATE : a * b; }

// A compile-time int of the budget's time (before any body is checked): a literal, a
// negated one, or a const's name; false for anything else.
static bool static_int(Sema *sema, const Ast *a, int64_t *out) {
  if (a->kind == AST_INT) return *out = a->ival, true;
  if (a->kind == AST_UNARY && a->op == UN_NEG && a->lhs->kind == AST_INT) return *out = -a->lhs->ival, true;
  const Const *c = a->kind == AST_NAME ? find_const(sema, a->name) : NULL;
  if (c && c->ty && c->ty->kind == TY_SCALAR && c->ty->dtype == DT_I64) return *out = c->ty->ival, true;
  return false;
}

// The iterations of a for loop when its iterable says so before checking (range of
// literals and consts, a tuple or list literal); 1 for any other, which sema_ctl.c
// counts when it unrolls.
static int64_t static_trips(Sema *sema, const Ast *it) {
  if (it->kind == AST_TUPLE || it->kind == AST_LIST) return it->list.len;
  if (it->kind != AST_CALL || it->lhs || strcmp(it->name, "range") || it->list.len < 1 || it->list.len > 3) return 1;
  int64_t v[3] = {0, 0, 1};
  for (int i = 0; i < it->list.len; i++)
    if (!static_int(sema, it->list.data[i], &v[it->list.len == 1 ? 1 : i])) return 1;
  return v[2] ? range_len(v[0], v[1], v[2]) : 1;
}

// a's nodes, each counted mult times (the iterations of the loops around it).
// The left operand of a binary operator or of and/or is walked in a loop at the same
// depth (a chain: a + b + c ...), as sema and lowering walk it.
static bool chain_link(const Ast *a) {
  return a->kind == AST_BINARY || (a->kind == AST_LOGIC && (a->op == LOGIC_AND || a->op == LOGIC_OR));
}

static void walk(Budget *b, Cost *c, Ast *a, int depth, int64_t mult) {
  for (; a && chain_link(a); a = a->lhs) {
    c->own_size = sat_add(c->own_size, mult);
    if (depth > c->own_depth) c->own_depth = depth;
    walk(b, c, a->rhs, depth + 1, mult);
  }
  if (!a) return;
  c->own_size = sat_add(c->own_size, mult);
  if (depth > c->own_depth) c->own_depth = depth;
  if (a->kind == AST_CALL && !a->lhs) {
    int k = sema_fn_index(b->p, a->name);
    if (k >= 0) vec_push(&b->cx->arena, &c->sites, ((Site){a, k, depth, mult}));
  }
  walk(b, c, a->lhs, depth + 1, mult);
  walk(b, c, a->rhs, depth + 1, mult);
  walk(b, c, a->step, depth + 1, mult);
  for (int i = 0; i < a->list.len; i++) walk(b, c, a->list.data[i], depth + 1, mult);
  int64_t body_mult = a->kind == AST_FOR ? sat_mul(mult, static_trips(b->sema, a->rhs)) : mult;
  for (int i = 0; i < a->body.len; i++) walk(b, c, a->body.data[i], depth + 1, body_mult);  // for, if, while
}

// The nodes of a and the inlined sizes of the user functions it calls, each counted mult
// times, into *full; into *own those outside the loops within (their unrolling counts them).
static void tree_size(Sema *sema, const Ast *a, int64_t mult, bool nested, int64_t *full, int64_t *own) {
  for (; a && chain_link(a); a = a->lhs) {  // a chain of left operands, in a loop
    *full = sat_add(*full, mult);
    if (!nested) *own = sat_add(*own, 1);
    tree_size(sema, a->rhs, mult, nested, full, own);
  }
  if (!a) return;
  int64_t n = 1;
  if (a->kind == AST_CALL && !a->lhs) {
    const Ast *fn = sema_find_fn(sema->p, a->name);
    if (fn) n = sat_add(n, fn->inline_size);
  }
  *full = sat_add(*full, sat_mul(n, mult));
  if (!nested) *own = sat_add(*own, n);
  tree_size(sema, a->lhs, mult, nested, full, own);
  tree_size(sema, a->rhs, mult, nested, full, own);
  tree_size(sema, a->step, mult, nested, full, own);
  for (int i = 0; i < a->list.len; i++) tree_size(sema, a->list.data[i], mult, nested, full, own);
  bool loop = a->kind == AST_FOR || a->kind == AST_WHILE;  // (a while counts each iteration as it unrolls)
  int64_t m = a->kind == AST_FOR ? sat_mul(mult, static_trips(sema, a->rhs)) : mult;
  for (int i = 0; i < a->body.len; i++) tree_size(sema, a->body.data[i], m, nested || loop, full, own);
}

int64_t unroll_size(Sema *sema, const AstList *body, int64_t *own) {
  int64_t full = 0;
  *own = 0;
  for (int i = 0; i < body->len; i++) tree_size(sema, body->data[i], 1, false, &full, own);
  return full;
}

// f's height and size from its callees' (those done; one on the stack is recursion).
static void finish(Budget *b, int f) {
  Ast *fn = b->p->fns.data[f];
  Cost *c = &b->cost[f];
  int height = c->own_depth;
  int64_t size = c->own_size;
  for (int i = 0; i < c->sites.len; i++) {
    Site s = c->sites.data[i];
    const Ast *callee = b->p->fns.data[s.callee];
    if (b->cost[s.callee].state != 2) continue;
    int h = s.depth + CALL_LEVELS + callee->inline_height;
    if (h > TD_MAX_NESTING + 1) h = TD_MAX_NESTING + 1;
    s.call->inline_height = h;
    if (h > height) height = h;
    size = sat_add(size, sat_mul(callee->inline_size, s.mult));
  }
  fn->inline_height = height;
  fn->inline_size = size;
  c->state = 2;
}

void sema_budget(Sema *sema) {
  const Program *p = sema->p;
  int n = p->fns.len;
  Budget b = {sema, sema->cx, p, arena_alloc(&sema->cx->arena, sizeof(Cost) * (size_t)(n + 1))};
  for (int f = 0; f < n; f++) {
    Ast *fn = p->fns.data[f];
    for (int i = 0; i < fn->body.len; i++) walk(&b, &b.cost[f], fn->body.data[i], 1, 1);
  }
  // depth-first over the call graph, callees before callers: (function, next site)
  int *stack = arena_alloc(&sema->cx->arena, sizeof(int) * 2 * (size_t)(n + 1));
  for (int root = 0; root < n; root++) {
    if (b.cost[root].state) continue;
    int top = 0;
    stack[0] = root, stack[1] = 0;
    b.cost[root].state = 1;
    while (top >= 0) {
      int f = stack[2 * top], *next = &stack[2 * top + 1];
      Cost *c = &b.cost[f];
      if (*next == c->sites.len) {
        finish(&b, f);
        top--;
        continue;
      }
      int callee = c->sites.data[(*next)++].callee;
      if (b.cost[callee].state) continue;
      b.cost[callee].state = 1;
      top++;
      stack[2 * top] = callee, stack[2 * top + 1] = 0;
    }
  }
}
