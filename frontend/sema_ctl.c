// frontend/sema_ctl.c: static control flow. A program's control flow is known at compile
// time, as its shapes are: `for v in ITER { ... }` is unrolled, each iteration a clone of
// the body checked with v bound to that iteration's value (a compile-time int of a
// range, an element of a tuple or list, a view x[k] of a tensor's first dim), and
// `if C { ... } else { ... }` checks only the branch a compile-time C takes, as Python
// would run only it. `while C { ... }` is unrolled while its compile-time C holds.
// `break` and `continue` reached in an iteration end it (and, for break, the loop) there:
// a loop stops unrolling at the break its taken branches reach. A comprehension `[e for t
// in xs if c]` is unrolled the same way, its variables restored afterwards (Python's own
// scope). Conditions on tensor values are errors.
// Invariants kept for lower.c: AST_FOR.unrolled holds, in order, the binding of each
// hidden iterable, then per iteration the loop variable's AST_ASSIGN and the checked
// clone's statements; AST_IF.unrolled is the taken branch's statements; AST_COMP.unrolled
// holds the bindings and, after each iteration's, its element as an AST_EXPR (each
// element, an operand of the comprehension, has `comp` set to it). Lowering them
// in order is running the program. Every iteration's clone counts against
// TD_MAX_INLINE_OPS before it is made, so a loop too long to unroll is a located error.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

int64_t range_len(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 && stop > start) {
    uint64_t d = (uint64_t)stop - (uint64_t)start, s = (uint64_t)step;
    return (int64_t)(d / s + (d % s != 0));
  }
  if (step < 0 && stop < start) {
    uint64_t d = (uint64_t)start - (uint64_t)stop, s = (uint64_t)0 - (uint64_t)step;
    return (int64_t)(d / s + (d % s != 0));
  }
  return 0;
}

// The names of a target (a, (b, *c)), bound to poison.
static void poison_targets(Sema *sema, const Ast *t) {
  if (t->kind == AST_STARRED) t = t->lhs;
  if (t->kind == AST_NAME) bind_name(sema, t->name, poison(sema), t->loc);
  for (int i = 0; t->kind == AST_TUPLE && i < t->list.len; i++) poison_targets(sema, t->list.data[i]);
}

// A block that is not checked after an error (a bad condition, a loop refused): the names
// it assigns become poison and a return in it counts as reached, so nothing cascades.
static void skip_block(Sema *sema, Body *body, const AstList *stmts) {
  for (int i = 0; i < stmts->len; i++) {
    const Ast *st = stmts->data[i];
    switch (st->kind) {
    case AST_ASSIGN:
      for (int j = 0; j < st->list.len; j++) poison_targets(sema, st->list.data[j]);
      for (int g = 0; g < st->body.len; g++)
        for (int j = 0; j < st->body.data[g]->list.len; j++) poison_targets(sema, st->body.data[g]->list.data[j]);
      break;
    case AST_AUGASSIGN: bind_name(sema, st->lhs->name, poison(sema), st->lhs->loc); break;
    case AST_FOR:
      bind_name(sema, st->name, poison(sema), st->oploc);
      if (st->lhs) poison_targets(sema, st->lhs);
      skip_block(sema, body, &st->body);
      break;
    case AST_IF: skip_block(sema, body, &st->body); skip_block(sema, body, &st->list); break;
    case AST_WHILE: skip_block(sema, body, &st->body); break;
    case AST_RETURN:
      body->returned = true;
      body->ret = poison(sema);
      break;
    default: break;
    }
  }
}

// Whether call e is the Python builtin `name` (no local, constant or function hides it).
static bool python_call(Sema *sema, const Ast *e, const char *name) {
  return e->kind == AST_CALL && !e->lhs && !strcmp(e->name, name) && !find_local(sema, name) &&
         !find_const(sema, name) && !sema_find_fn(sema->p, name);
}

// ============================================================================
// for: the sources of a loop's values
// ============================================================================
// One iterable: a range, or a value bound to a hidden name whose elements are its
// items (a tuple or list whose element expressions sema knows) or hidden[k] (a tensor, the
// tuple a user function returns).
typedef struct Source {
  Ast *at;             // the iterable as written
  int64_t len;
  bool range;
  int64_t start, step;
  const char *hidden;  // the name bound to the iterable's value
  Ast **items;         // its element expressions, or NULL: hidden[k]
} Source;

static bool no_kwargs(Sema *sema, const Ast *e) {
  for (int i = 0; i < e->list.len; i++)
    if (e->list.data[i]->kind == AST_KWARG) {
      diag_error(sema->cx, e->list.data[i]->loc, "%s() takes no keyword arguments", e->name);
      return false;
    }
  return true;
}

// range(stop), range(start, stop[, step]) of compile-time ints, Python's messages.
static bool range_source(Sema *sema, Ast *e, Source *src) {
  if (!check_args(sema, e) || !no_kwargs(sema, e)) return false;
  int n = e->list.len;
  if (n < 1 || n > 3) {
    if (n < 1) diag_error(sema->cx, call_loc(e), "range expected at least 1 argument, got 0");
    else diag_error(sema->cx, call_loc(e), "range expected at most 3 arguments, got %d", n);
    return false;
  }
  int64_t v[3];
  for (int i = 0; i < n; i++) {
    const Ast *a = e->list.data[i];
    const TType *t = a->ty;
    if (is_tensor(t)) {
      diag_error(sema->cx, a->loc, "a loop's range must be known at compile time, as loops are unrolled: a "
                 "tensor's value is known only at run time (use x.size(d), len(x) or a const)");
      return false;
    }
    if (!is_scalar(t) || t->dtype == DT_F64) {
      diag_error(sema->cx, a->loc, "'%s' object cannot be interpreted as an integer", py_type_name(t));
      return false;
    }
    v[i] = t->ival;
  }
  src->range = true;
  src->start = n == 1 ? 0 : v[0];
  src->step = n == 3 ? v[2] : 1;
  if (src->step == 0) {
    diag_error(sema->cx, e->list.data[2]->loc, "range() arg 3 must not be zero");
    return false;
  }
  src->len = range_len(src->start, n == 1 ? v[0] : v[1], src->step);
  return true;
}

// An AST_ASSIGN of the checked value v to the targets of a loop (a name, or the tuple
// target t), bound in sema's scope without checking v again; NULL after an error in the
// unpacking (reported at the target).
static Ast *bind_value(Sema *sema, const char *name, const Ast *t, Loc loc, Ast *v) {
  Ast *a = ast_new(sema->cx, AST_ASSIGN, loc);
  if (t) a->list = t->list;  // the targets are shared by the iterations: only their names are read
  else vec_push(&sema->cx->arena, &a->list, ast_name(sema->cx, name, loc));
  a->rhs = v;
  a->oploc = loc;
  int before = sema->cx->nerrors;
  assign_targets(sema, a, loc, true);
  return sema->cx->nerrors > before ? NULL : a;
}

// Any other iterable: checked once and bound to a hidden name (i: its place in a zip), as
// Python evaluates it once.
static bool value_source(Sema *sema, Ast *st, Ast *e, Source *src, int i) {
  TType *t = check_expr(sema, e);
  if (is_poison(t)) return false;
  if (derived_modules(sema, t)) t = (e = modules_node(sema, e))->ty;  // for m in self of class Stack(nn.Sequential)
  if (t->kind == TY_DICT) t = (e = dict_keys(sema, e, e))->ty;  // for k in d: its keys
  if (is_tensor(t) && t->view.ndim == 0) {
    diag_error(sema->cx, e->loc, "iteration over a 0-d tensor");
    return false;
  }
  if (!is_tensor(t) && t->kind != TY_TUPLE && t->kind != TY_LIST) {
    diag_error(sema->cx, e->loc, "'%s' object is not iterable", py_type_name(t));
    return false;
  }
  src->len = is_tensor(t) ? t->view.shape[0] : t->nelem;
  src->hidden = arena_printf(&sema->cx->arena, "(for %d.%d)", sema->loops, i);
  Ast **items;
  int n;
  if (!is_tensor(t) && seq_items(sema, e, &items, &n)) src->items = items;
  vec_push(&sema->cx->arena, &st->unrolled, bind_value(sema, src->hidden, NULL, e->loc, e));
  return true;
}

// The checked value of iteration k of src.
static Ast *source_value(Sema *sema, const Source *src, int64_t k) {
  if (src->range) return part_int(sema, src->at, src->start + k * src->step);
  if (src->items) return src->items[k];
  Loc l = src->at->loc;
  Ast *ix = ast_index(sema->cx, ast_name(sema->cx, src->hidden, l), ast_list_of(sema->cx, ast_int(sema->cx, k, l), l),
                      l, l);
  check_expr(sema, ix);
  return ix;
}

// ============================================================================
// for, if, while
// ============================================================================
// One iteration of loop st: a clone of its body checked and appended to st->unrolled, cut
// at a break or continue reached; returns that jump (AST_BREAK, AST_CONTINUE) or AST_COUNT.
static AstKind iteration(Sema *sema, Body *body, Ast *st) {
  AstList clone = {0};
  for (int i = 0; i < st->body.len; i++) vec_push(&sema->cx->arena, &clone, ast_clone(sema->cx, st->body.data[i]));
  check_block(sema, body, &clone);
  for (int i = 0; i < clone.len; i++) vec_push(&sema->cx->arena, &st->unrolled, clone.data[i]);
  AstKind jump = body->jump;
  body->jump = AST_COUNT;
  return jump;
}

enum { MAX_ZIP = 8 };

// One source of a loop's values: a range, or any other iterable (i: its place in a zip).
static bool one_source(Sema *sema, Ast *st, Ast *a, Source *src, int i) {
  *src = (Source){.at = a};
  return python_call(sema, a, "range") ? range_source(sema, a, src) : value_source(sema, st, a, src, i);
}

// enumerate(iterable, start=0): *inner the iterable (checked as a source), *start the
// first count.
static bool enumerate_args(Sema *sema, Ast *e, Ast **inner, int64_t *start) {
  Ast *from = NULL;
  int npos = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG && strcmp(a->name, "start")) {
      diag_error(sema->cx, a->loc, "'%s' is an invalid keyword argument for enumerate()", a->name);
      return false;
    }
    if (a->kind == AST_KWARG || npos == 1) {
      if (from) {
        diag_error(sema->cx, a->loc, "argument for enumerate() given by name ('start') and position (2)");
        return false;
      }
      from = a->kind == AST_KWARG ? a->rhs : a;
      npos += a->kind != AST_KWARG;
    } else if (npos++ == 0) {
      *inner = a;
    }
  }
  if (npos < 1 || npos > 2) {
    diag_error(sema->cx, call_loc(e), npos < 1 ? "enumerate() missing required argument 'iterable' (pos 1)"
                                              : "enumerate() takes at most 2 arguments (%d given)", npos);
    return false;
  }
  *start = 0;
  if (from) {
    if (is_poison(check_expr(sema, from))) return false;
    if (!is_scalar(from->ty) || from->ty->dtype == DT_F64) {
      diag_error(sema->cx, from->loc, "'%s' object cannot be interpreted as an integer", py_type_name(from->ty));
      return false;
    }
    *start = from->ty->ival;
  }
  return true;
}

// The iterable of a loop or a comprehension's for clause: its sources (one, or a zip's),
// enumerate's count, the number of iterations.
typedef struct Iter {
  Ast *it, *zip;  // the iterable as written; the zip(...) whose arguments are the sources
  Source srcs[MAX_ZIP];
  int nsrc;
  bool enumerate;
  int64_t start, trips;
} Iter;

// zip(*xs) of a name xs holding a sequence: its arguments xs[0], xs[1], ... (the name read
// once per element, each checked as a source); false after an error.
static bool zip_starred(Sema *sema, Ast *zip) {
  AstList out = {0};
  for (int i = 0; i < zip->list.len; i++) {
    Ast *a = zip->list.data[i];
    if (a->kind != AST_STARRED || a->op == 2) {
      vec_push(&sema->cx->arena, &out, a);
      continue;
    }
    if (a->lhs->kind != AST_NAME) {
      diag_error(sema->cx, a->loc, "zip(*...) unpacks a name here: bind the sequence to a name first "
                 "(xs = ...; zip(*xs))");
      return false;
    }
    Ast *probe = ast_clone(sema->cx, a->lhs);
    TType *t = check_expr(sema, probe);
    if (is_poison(t)) return false;
    if (t->kind != TY_TUPLE && t->kind != TY_LIST) {
      diag_error(sema->cx, a->loc, "zip() argument after * must be an iterable of sequences here, not %s",
                 py_type_name(t));
      return false;
    }
    for (int k = 0; k < t->nelem; k++)
      vec_push(&sema->cx->arena, &out,
               ast_index(sema->cx, ast_clone(sema->cx, a->lhs), ast_list_of(sema->cx, ast_int(sema->cx, k, a->loc),
                         a->loc), a->loc, a->loc));
  }
  zip->list = out;
  return true;
}

// Checks the iterable `it` of st (a for statement or a comprehension: the hidden bindings of
// its values go on st->unrolled). false after an error.
static bool iter_open(Sema *sema, Ast *st, Ast *it, Iter *I) {
  *I = (Iter){.it = it};
  bool ok = true;
  Ast *inner = it;
  if (python_call(sema, it, "enumerate")) {
    I->enumerate = true;
    ok = enumerate_args(sema, it, &inner, &I->start);
  }
  if (ok && python_call(sema, inner, "zip")) {
    I->zip = inner;
    ok = zip_starred(sema, inner);
    int n = inner->list.len;
    ok = no_kwargs(sema, inner);
    if (ok && (n < 1 || n > MAX_ZIP)) {
      diag_error(sema->cx, call_loc(inner), "zip() takes 1 to %d arguments here (%d given)", MAX_ZIP, n);
      ok = false;
    }
    for (int i = 0; ok && i < n; i++, I->nsrc++) ok = one_source(sema, st, inner->list.data[i], &I->srcs[I->nsrc], I->nsrc);
  } else if (ok) {
    ok = one_source(sema, st, inner, &I->srcs[I->nsrc++], 0);
  }
  I->trips = INT64_MAX;
  for (int i = 0; ok && i < I->nsrc; i++)
    if (I->srcs[i].len < I->trips) I->trips = I->srcs[i].len;
  return ok;
}

// The value of iteration k: the source's element, zip's tuple of them, enumerate's
// (count, that); NULL after an error.
static Ast *iter_value(Sema *sema, const Iter *I, int64_t k) {
  Ast *parts[MAX_ZIP];
  for (int i = 0; i < I->nsrc; i++)
    if (is_poison((parts[i] = source_value(sema, &I->srcs[i], k))->ty)) return NULL;
  Ast *v = I->zip ? part_seq(sema, I->zip, TY_TUPLE, parts, I->nsrc) : parts[0];
  if (I->enumerate) {
    Ast *pair[2] = {part_int(sema, I->it, I->start + k), v};
    v = part_seq(sema, I->it, TY_TUPLE, pair, 2);
  }
  return v;
}

void check_for(Sema *sema, Body *body, Ast *st) {
  Iter I;
  st->unrolled = (AstList){0};
  sema->loops++;
  bool ok = iter_open(sema, st, st->rhs, &I);
  int nsrc = I.nsrc;
  if (ok) {  // every iteration's clone counts, before any is made
    int64_t own, per = unroll_size(sema, &st->body, &own) + 1 + nsrc, room = TD_MAX_INLINE_OPS - sema->inlined;
    if (I.trips > room / per) {
      if (!sema->over_budget)
        diag_error(sema->cx, st->rhs->loc, "unrolling this loop would create %" PRId64 " iterations of %" PRId64
                   " ops; the limit is %d ops in all", I.trips, per, TD_MAX_INLINE_OPS);
      sema->over_budget = true;
      ok = false;
    } else {
      sema->inlined += I.trips * (own + 1 + nsrc);
    }
  }
  if (!ok) {
    skip_block(sema, body, &st->body);
    bind_name(sema, st->name, poison(sema), st->oploc);
    if (st->lhs) poison_targets(sema, st->lhs);
    sema->loops--;
    return;
  }
  body->loops++;
  for (int64_t k = 0; k < I.trips && !body->returned; k++) {
    Ast *v = iter_value(sema, &I, k);
    if (!v) break;
    Ast *bind = bind_value(sema, st->name, st->lhs, st->lhs ? st->lhs->loc : st->oploc, v);
    if (!bind) break;
    vec_push(&sema->cx->arena, &st->unrolled, bind);
    int before = sema->cx->nerrors;
    AstKind jump = iteration(sema, body, st);
    if (sema->cx->nerrors > before) {  // said once: the later iterations would mostly repeat it
      if (is_scalar(v->ty) && v->ty->dtype == DT_I64)
        diag_note(sema->cx, st->oploc, "in the iteration where '%s' is %" PRId64, st->name, v->ty->ival);
      else
        diag_note(sema->cx, st->oploc, "in iteration %" PRId64 " of this loop", k);
      break;
    }
    if (jump == AST_BREAK) break;
  }
  body->loops--;
  sema->loops--;
}

// ============================================================================
// Comprehensions: [e for t in xs if c], (e for ...), unrolled at compile time
// ============================================================================
// AST nodes of e (the clone one element costs).
static int64_t node_count(const Ast *e) {
  int64_t n = 0;
  for (; e; e = e->lhs) {  // the chain of left operands in a loop
    n += 1 + node_count(e->rhs) + node_count(e->step);
    for (int i = 0; i < e->list.len; i++) n += node_count(e->list.data[i]);
  }
  return n;
}

// Clause ci of comprehension e onwards, for the bindings made so far: an element (a checked
// clone of e->lhs) pushed on elems for each iteration its clauses let through. false after
// an error.
static bool comp_clause(Sema *sema, Ast *e, int ci, AstList *elems) {
  if (ci == e->list.len) {
    int64_t size = node_count(e->lhs);
    if (size > TD_MAX_INLINE_OPS - sema->inlined || elems->len >= MAX_SEQ) {
      if (!sema->over_budget)
        diag_error(sema->cx, e->oploc, "unrolling this comprehension would create more than %d ops", TD_MAX_INLINE_OPS);
      sema->over_budget = true;
      return false;
    }
    sema->inlined += size;
    Ast *x = ast_clone(sema->cx, e->lhs);
    if (is_poison(check_expr(sema, x))) return false;
    vec_push(&sema->cx->arena, elems, x);
    Ast *at = ast_new(sema->cx, AST_EXPR, x->loc);  // lowering computes it here, its iteration's variables bound
    at->lhs = x;
    at->ty = x->ty;
    vec_push(&sema->cx->arena, &e->unrolled, at);
    return true;
  }
  Ast *c = e->list.data[ci];
  if (c->kind == AST_IF) {  // a filter: the rest of the clauses only where it holds
    Ast *cond = ast_clone(sema->cx, c->lhs);
    bool go;
    if (is_poison(check_expr(sema, cond)) || !truth_value(sema, cond, &go)) return false;
    return !go || comp_clause(sema, e, ci + 1, elems);
  }
  Iter I;  // the iterable, evaluated anew for each iteration of the clauses before it, as in Python
  bool ok = true;
  sema->loops++;  // a hidden name of its own for each clause's iterable
  if (!iter_open(sema, e, ci == 0 ? c->rhs : ast_clone(sema->cx, c->rhs), &I)) ok = false;
  for (int64_t k = 0; ok && k < I.trips; k++) {
    Ast *v = iter_value(sema, &I, k);
    Ast *bind = v ? bind_value(sema, c->name, c->lhs, c->lhs ? c->lhs->loc : c->oploc, v) : NULL;
    ok = bind != NULL;
    if (ok) vec_push(&sema->cx->arena, &e->unrolled, bind);
    if (ok) ok = comp_clause(sema, e, ci + 1, elems);
  }
  sema->loops--;
  return ok;
}

// The names a comprehension's targets bind, so they can be put back: Python's
// comprehension has a scope of its own.
static void target_names(const Ast *t, const char **names, int *n, int max) {
  if (t->kind == AST_NAME) {
    for (int i = 0; i < *n; i++)
      if (!strcmp(names[i], t->name)) return;
    if (*n < max) names[(*n)++] = t->name;
  }
  for (int i = 0; t->kind == AST_TUPLE && i < t->list.len; i++) target_names(t->list.data[i], names, n, max);
}

TType *check_comp(Sema *sema, Ast *e) {
  enum { MAX_NAMES = 64 };
  const char *names[MAX_NAMES];
  Sym saved[MAX_NAMES];
  bool had[MAX_NAMES];
  int nn = 0;
  for (int i = 0; i < e->list.len; i++) {
    const Ast *c = e->list.data[i];
    if (c->kind != AST_FOR) continue;
    if (c->lhs) target_names(c->lhs, names, &nn, MAX_NAMES);
    else target_names(&(Ast){.kind = AST_NAME, .name = c->name}, names, &nn, MAX_NAMES);
  }
  for (int i = 0; i < nn; i++) {
    Sym *s = find_local(sema, names[i]);
    had[i] = s != NULL;
    if (s) saved[i] = *s;
  }
  e->unrolled = (AstList){0};
  AstList elems = {0};
  bool ok = comp_clause(sema, e, 0, &elems);
  for (int i = 0; i < nn; i++) {  // the names as they were
    if (had[i]) {
      bind_name(sema, names[i], saved[i].ty, saved[i].loc);
      sema->scope->src = saved[i].src;
    } else {
      unbind_name(sema, names[i]);
    }
  }
  if (!ok) return poison(sema);
  for (int i = 0; i < elems.len; i++) elems.data[i]->comp = e;  // lowered after the bindings they read
  Ast *l = part_seq(sema, e, e->op == TY_LIST ? TY_LIST : TY_TUPLE, elems.data, elems.len);
  set_operands(sema, e, l->operands, l->noperands);
  return l->ty;
}

void check_if(Sema *sema, Body *body, Ast *st) {
  TType *c = check_expr(sema, st->lhs);
  bool taken;
  if (is_poison(c) || !truth_value(sema, st->lhs, &taken)) {
    skip_block(sema, body, &st->body);
    skip_block(sema, body, &st->list);
    return;
  }
  st->unrolled = taken ? st->body : st->list;
  check_block(sema, body, &st->unrolled);
}

// while C { ... }: unrolled while the compile-time C holds (checked anew before each
// iteration, as Python evaluates it), or until a break. Each iteration counts against
// the inlining limit before it is made, so a loop that never ends is a located error.
void check_while(Sema *sema, Body *body, Ast *st) {
  Loc kw = st->loc;
  kw.end = kw.begin + 5;
  st->unrolled = (AstList){0};
  int64_t own, per = unroll_size(sema, &st->body, &own) + 1;
  body->loops++;
  sema->loops++;
  for (int64_t k = 0; !body->returned; k++) {
    Ast *cond = ast_clone(sema->cx, st->lhs);
    bool go;
    if (is_poison(check_expr(sema, cond)) || !truth_value(sema, cond, &go)) {
      skip_block(sema, body, &st->body);
      break;
    }
    if (!go) break;
    if (per > TD_MAX_INLINE_OPS - sema->inlined) {
      if (!sema->over_budget)
        diag_error(sema->cx, kw, "this 'while' loop has run %" PRId64 " iterations when unrolled and has not ended; "
                   "the limit is %d ops in all", k, TD_MAX_INLINE_OPS);
      sema->over_budget = true;
      skip_block(sema, body, &st->body);
      break;
    }
    sema->inlined += own + 1;
    int before = sema->cx->nerrors;
    AstKind jump = iteration(sema, body, st);
    if (sema->cx->nerrors > before) {
      diag_note(sema->cx, kw, "in iteration %" PRId64 " of this loop", k);
      break;
    }
    if (jump == AST_BREAK) break;
  }
  body->loops--;
  sema->loops--;
}
