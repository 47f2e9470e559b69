// frontend/sema_ctl.c: static control flow. A program's control flow is known at compile
// time, as its shapes are: `for v in ITER { ... }` is unrolled, each iteration a clone of
// the body checked with v bound to that iteration's value (a compile-time int of a
// range, an element of a tuple or list, a view x[k] of a tensor's first dim), and
// `if C { ... } else { ... }` checks only the branch a compile-time C takes, as Python
// would run only it. `while` and conditions on tensor values are errors.
// Invariants kept for lower.c: AST_FOR.unrolled holds, in order, the binding of each
// hidden iterable, then per iteration the loop variable's AST_ASSIGN and the checked
// clone's statements; AST_IF.unrolled is the taken branch's statements. Lowering them
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

// A block that is not checked after an error (a bad condition, a loop refused): the names
// it assigns become poison and a return in it counts as reached, so nothing cascades.
static void skip_block(Sema *sema, Body *body, const AstList *stmts) {
  for (int i = 0; i < stmts->len; i++) {
    const Ast *st = stmts->data[i];
    switch (st->kind) {
    case AST_ASSIGN:
      for (int j = 0; j < st->list.len; j++) bind_name(sema, st->list.data[j]->name, poison(sema), st->list.data[j]->loc);
      break;
    case AST_AUGASSIGN: bind_name(sema, st->lhs->name, poison(sema), st->lhs->loc); break;
    case AST_FOR:
      bind_name(sema, st->name, poison(sema), st->oploc);
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

// An AST_ASSIGN of the checked value v to name (loc: the name's), bound in sema's scope
// without checking v again.
static Ast *bind_value(Sema *sema, const char *name, Loc loc, Ast *v, Loc stloc) {
  Ast *a = ast_new(sema->cx, AST_ASSIGN, stloc);
  Ast *t = ast_name(sema->cx, name, loc);
  t->ty = v->ty;
  vec_push(&sema->cx->arena, &a->list, t);
  a->rhs = v;
  a->oploc = loc;
  a->ty = v->ty;
  bind_name(sema, name, v->ty, loc);
  if (v->ty->kind == TY_TUPLE || v->ty->kind == TY_LIST) sema->scope->src = v;
  return a;
}

// Any other iterable: checked once and bound to a hidden name (i: its place in a zip), as
// Python evaluates it once.
static bool value_source(Sema *sema, Ast *st, Ast *e, Source *src, int i) {
  TType *t = check_expr(sema, e);
  if (is_poison(t)) return false;
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
  vec_push(&sema->cx->arena, &st->unrolled, bind_value(sema, src->hidden, e->loc, e, e->loc));
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
enum { MAX_ZIP = 8 };

void check_for(Sema *sema, Body *body, Ast *st) {
  Ast *it = st->rhs;
  Source srcs[MAX_ZIP];
  int nsrc = 0;
  bool ok = true, enumerate = false;
  st->unrolled = (AstList){0};
  sema->loops++;
  if (python_call(sema, it, "range")) {
    srcs[nsrc++] = (Source){.at = it};
    ok = range_source(sema, it, &srcs[0]);
  } else if (python_call(sema, it, "enumerate") || python_call(sema, it, "zip")) {
    enumerate = it->name[0] == 'e';
    int n = it->list.len;
    ok = no_kwargs(sema, it);
    if (ok && (enumerate ? n != 1 : n < 1 || n > MAX_ZIP)) {
      if (enumerate)
        diag_error(sema->cx, call_loc(it), "enumerate() takes exactly one argument here (%d given)", n);
      else
        diag_error(sema->cx, call_loc(it), "zip() takes 1 to %d arguments here (%d given)", MAX_ZIP, n);
      ok = false;
    }
    for (int i = 0; ok && i < n; i++) {
      Ast *a = it->list.data[i];
      srcs[nsrc] = (Source){.at = a};
      ok = python_call(sema, a, "range") ? range_source(sema, a, &srcs[nsrc]) : value_source(sema, st, a, &srcs[nsrc], nsrc);
      nsrc++;
    }
  } else {
    srcs[nsrc++] = (Source){.at = it};
    ok = value_source(sema, st, it, &srcs[0], 0);
  }
  int64_t trips = INT64_MAX;
  for (int i = 0; ok && i < nsrc; i++)
    if (srcs[i].len < trips) trips = srcs[i].len;
  if (ok) {  // every iteration's clone counts, before any is made
    int64_t own, per = unroll_size(sema, &st->body, &own) + 1 + nsrc, room = TD_MAX_INLINE_OPS - sema->inlined;
    if (trips > room / per) {
      if (!sema->over_budget)
        diag_error(sema->cx, it->loc, "unrolling this loop would create %" PRId64 " iterations of %" PRId64
                   " ops; the limit is %d ops in all", trips, per, TD_MAX_INLINE_OPS);
      sema->over_budget = true;
      ok = false;
    } else {
      sema->inlined += trips * (own + 1 + nsrc);
    }
  }
  if (!ok) {
    skip_block(sema, body, &st->body);
    bind_name(sema, st->name, poison(sema), st->oploc);
    sema->loops--;
    return;
  }
  for (int64_t k = 0; k < trips && !body->returned; k++) {
    Ast *v;
    if (enumerate || nsrc > 1) {
      Ast *parts[MAX_ZIP + 1];
      int np = 0;
      if (enumerate) parts[np++] = part_int(sema, it, k);
      for (int i = 0; i < nsrc; i++) parts[np++] = source_value(sema, &srcs[i], k);
      for (int i = 0; i < np; i++)
        if (is_poison(parts[i]->ty)) return (void)sema->loops--;
      v = part_seq(sema, it, TY_TUPLE, parts, np);
    } else {
      v = source_value(sema, &srcs[0], k);
      if (is_poison(v->ty)) break;
    }
    Ast *bind = bind_value(sema, st->name, st->oploc, v, st->oploc);
    if (srcs[0].items && nsrc == 1 && !enumerate) {  // lower.c reads the element of the value bound once
      bind->name = srcs[0].hidden;
      bind->ival = k;
    }
    vec_push(&sema->cx->arena, &st->unrolled, bind);
    AstList clone = {0};
    for (int i = 0; i < st->body.len; i++) vec_push(&sema->cx->arena, &clone, ast_clone(sema->cx, st->body.data[i]));
    int before = sema->cx->nerrors;
    check_block(sema, body, &clone);
    for (int i = 0; i < clone.len; i++) vec_push(&sema->cx->arena, &st->unrolled, clone.data[i]);
    if (sema->cx->nerrors > before) {  // said once: the later iterations would mostly repeat it
      if (is_scalar(v->ty) && v->ty->dtype == DT_I64)
        diag_note(sema->cx, st->oploc, "in the iteration where '%s' is %" PRId64, st->name, v->ty->ival);
      else
        diag_note(sema->cx, st->oploc, "in iteration %" PRId64 " of this loop", k);
      break;
    }
  }
  sema->loops--;
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

void check_while(Sema *sema, Body *body, Ast *st) {
  Loc kw = st->loc;
  kw.end = kw.begin + 5;
  diag_error(sema->cx, kw, "'while' loops are not supported: loops are unrolled at compile time and need a trip "
             "count known then; write 'for i in range(n) { ... }' with a compile-time n");
  skip_block(sema, body, &st->body);
}
