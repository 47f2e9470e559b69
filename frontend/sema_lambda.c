// frontend/sema_lambda.c: function values, as forward passes use them (`act = lambda t:
// F.gelu(t, approximate='tanh')`, `(lambda t: t * 2)(x)`, `act = F.relu`, a dict of them,
// a user fn passed to another): a function value is TY_MODULE "builtins.function", ctor an
// AST_FN: the lambda's own ("<lambda>"), or for a named function (torch.tanh, F.gelu, a
// user fn) one of no parameters whose rhs is the name as written (`F.gelu`: an AST_ATTR;
// `my_fn`: an AST_NAME), a call of which is that function's call on the same arguments,
// each bound to a hidden name of that call ("(call 3) 0") as a lambda's are. A lambda's call
// checks a clone of its body with the parameters bound to the arguments under names of
// that call's own (hidden: "(lambda 3) t"), so that the body reads the other names it uses
// where it is called, as Python's closures read them when they run. A lambda passed to a
// helper's Callable parameter becomes one whose body reads hidden names ("(closure 4) s")
// bound at that call to the caller's locals it uses; hidden names (they start with '(',
// which no source name can) are the only names a helper's body sees of its caller's scope.
// A `fn` written inside a function (Python's nested def: local_def) is a function value whose
// AST_FN has op DEF_LOCAL and a signature of its own (local_sig): its call is inlined as a
// helper's (inline_call), the locals of the caller it reads and does not bind bound first
// to hidden names that the clone reads instead ("(closure 4) s"); passed to a helper it is
// closed over them there (def_closure), as a functools.partial object is (partial_closure).
// Invariants: the call's value is its body's (its one operand, of the same type: lower.c
// binds the call's parameters, e->unrolled, and then reads the body), or for a local def's
// call the call itself, inlined; the defaults are checked where the lambda or the def is
// written, as Python evaluates them there (a def's bound to hidden names its calls read).
#include "frontend/sema_internal.h"

#include <string.h>

enum { LAMBDA_MAX_DEPTH = 64 };

static void def_captures(Sema *sema, const Ast *def, NameList *free);
static const char **bind_captures(Sema *sema, Ast *e, const NameList *free, const NameList *nonlocals, int id,
                                  Loc loc);

// The names statements declare `kind` ("nonlocal", "global") anywhere in them but inside a
// def: their AST_NAME nodes, into out.
static void scope_decls(Arena *arena, const AstList *stmts, const char *kind, AstList *out) {
  for (int i = 0; i < stmts->len; i++) {
    const Ast *st = stmts->data[i];
    if (st->kind == AST_PASS && st->name && !strcmp(st->name, kind))
      for (int j = 0; j < st->list.len; j++) vec_push(arena, out, st->list.data[j]);
    if (st->kind == AST_FOR || st->kind == AST_WHILE || st->kind == AST_IF) scope_decls(arena, &st->body, kind, out);
    if (st->kind == AST_IF) scope_decls(arena, &st->list, kind, out);
  }
}

// The names a def declares nonlocal.
static void nonlocal_names(Sema *sema, const Ast *def, NameList *out) {
  AstList decl = {0};
  scope_decls(&sema->cx->arena, &def->body, "nonlocal", &decl);
  for (int i = 0; i < decl.len; i++)
    if (!name_in(out, decl.data[i]->name)) vec_push(&sema->cx->arena, out, decl.data[i]->name);
}

static bool is_lambda_type(const TType *t) {
  return t && t->kind == TY_MODULE && t->ctor && t->ctor->kind == AST_FN;
}

bool is_lambda(const TType *t) { return is_lambda_type(t); }

// lambda params: body as a value: its defaults checked.
// The named function e (F.gelu, torch.tanh, a user fn) as a value.
TType *function_named(Sema *sema, Ast *e) {
  Ast *f = ast_new(sema->cx, AST_FN, e->loc);
  f->name = e->name;
  f->rhs = e;
  TType *t = ty_module(sema, "builtins.function");
  t->ctor = f;
  return t;
}

// Whether parameter j of fn (a def, a lambda, a method) has the name of one before it:
// Python's "duplicate argument" error.
bool param_repeats(const Ast *fn, int j) {
  for (int q = 0; q < j; q++)
    if (!strcmp(fn->list.data[q]->name, fn->list.data[j]->name)) return true;
  return false;
}

TType *lambda_value(Sema *sema, Ast *e) {
  if (e->op == DEF_CLASS) return class_value(sema, e);  // class Name(...) { ... } (sema_class.c)
  for (int i = 0; i < e->list.len; i++) {
    Ast *p = e->list.data[i];
    if (p->rhs && is_poison(check_expr(sema, p->rhs))) return poison(sema);
    if (param_repeats(e, i)) {
      diag_error(sema->cx, p->loc, "duplicate argument '%s' in function definition", p->name);
      return poison(sema);
    }
    if (!p->rhs && i > 0 && e->list.data[i - 1]->rhs) {
      diag_error(sema->cx, p->loc, "non-default argument follows default argument");
      return poison(sema);
    }
  }
  TType *t = ty_module(sema, "builtins.function");
  t->ctor = e;
  return t;
}

// Every name from[j] in a (a clone of a lambda's body) becomes to[j]; a nested lambda's
// own parameters hide them in its body.
void rename_names(Ast *a, const char *const *from, const char *const *to, int n) {
  for (; a; a = a->lhs) {
    const char **name = a->kind == AST_NAME || (a->kind == AST_CALL && !a->lhs) || (a->kind == AST_FOR && a->name)
                            ? &a->name : NULL;  // a for loop's variable, as its body's uses of it
    for (int j = 0; name && j < n; j++)
      if (!strcmp(*name, from[j])) *name = to[j];
    if (a->kind == AST_FN) {  // a lambda inside: its defaults, and its body unless it rebinds the names
      for (int i = 0; i < a->list.len; i++) rename_names(a->list.data[i]->rhs, from, to, n);
      bool shadow = false;
      for (int i = 0; i < a->list.len && !shadow; i++)
        for (int j = 0; j < n && !shadow; j++) shadow = !strcmp(a->list.data[i]->name, from[j]);
      for (int i = 0; i < a->body.len && !shadow; i++) rename_names(a->body.data[i], from, to, n);
      return;
    }
    rename_names(a->rhs, from, to, n);
    rename_names(a->step, from, to, n);
    for (int i = 0; i < a->list.len; i++) rename_names(a->list.data[i], from, to, n);
    for (int i = 0; i < a->body.len; i++) rename_names(a->body.data[i], from, to, n);
  }
}

// The call e's argument v bound to the hidden name: lowering binds it where the call runs.
void bind_hidden(Sema *sema, Ast *e, const char *hidden, Ast *v, Loc loc) {
  bind_expr(sema, hidden, v, loc);
  Ast *a = ast_new(sema->cx, AST_ASSIGN, e->loc);
  vec_push(&sema->cx->arena, &a->list, ast_name(sema->cx, hidden, loc));
  a->rhs = v;
  set_operand1(sema, a, seq_now(sema, v));
  a->ty = v->ty;
  vec_push(&sema->cx->arena, &e->unrolled, a);
}

// A call e of the named function value f (its AST_FN's rhs the name) on args: that
// function's call, each argument bound to a hidden name first. A local def's (no rhs): its
// body inlined as a helper's, the locals of the caller it reads (but does not bind) first
// bound to hidden names that its clone reads (unless it was closed over them already).
static TType *named_call(Sema *sema, Ast *e, const Ast *named, AstList *args) {
  const Ast *name = named->op == DEF_LOCAL ? named : named->rhs;
  Loc at = e->kind == AST_CALL ? call_loc(e) : e->loc;
  if (sema->lambda_depth >= LAMBDA_MAX_DEPTH) {
    diag_error(sema->cx, at, "RecursionError: maximum recursion depth exceeded (function values calling each "
               "other %d deep)", LAMBDA_MAX_DEPTH);
    return poison(sema);
  }
  int id = ++sema->lambdas;
  Ast *call = ast_new(sema->cx, AST_CALL, e->loc);
  call->name = name->name;
  call->lhs = name->kind == AST_ATTR ? ast_clone(sema->cx, name->lhs) : NULL;
  NameList free = {0}, nonlocals = {0};
  const char **captured = NULL;
  if (named->op == DEF_LOCAL && !named->ival) {
    AstList decl = {0};
    scope_decls(&sema->cx->arena, &named->body, "nonlocal", &decl);
    for (int i = 0; i < decl.len; i++) {  // Python's SyntaxError, where the def is called
      if (!find_local(sema, decl.data[i]->name) || find_local(sema, decl.data[i]->name)->name[0] == '(') {
        diag_error(sema->cx, decl.data[i]->loc, "no binding for nonlocal '%s' found", decl.data[i]->name);
        return poison(sema);
      }
      if (!name_in(&nonlocals, decl.data[i]->name)) vec_push(&sema->cx->arena, &nonlocals, decl.data[i]->name);
    }
    def_captures(sema, named, &free);
    captured = bind_captures(sema, e, &free, &nonlocals, id, named->loc);
  }
  call->oploc = at;
  for (int i = 0; i < args->len; i++) {
    Ast *a = args->data[i];
    Ast *v = a->kind == AST_KWARG ? a->rhs : a;
    const char *hidden = arena_printf(&sema->cx->arena, "(call %d) %d", id, i);
    bind_hidden(sema, e, hidden, v, v->loc);
    Ast *n = ast_name(sema->cx, hidden, v->loc);
    vec_push(&sema->cx->arena, &call->list, a->kind == AST_KWARG ? ast_kwarg(sema->cx, a->name, n, a->oploc, a->loc) : n);
  }
  sema->lambda_depth++;
  TType *t;
  if (named->op == DEF_LOCAL) {
    sema->captures.from = free.data;
    sema->captures.to = captured;
    sema->captures.n = free.len;
    t = call->ty = inline_call(sema, call, (Ast *)named);
    sema->captures.n = 0;
    for (int j = 0; j < free.len && !is_poison(t); j++) {  // nonlocal x: the caller's x is the def's last x
      if (!name_in(&nonlocals, free.data[j])) continue;
      Ast *last = ast_name(sema->cx, captured[j], named->loc);
      if (is_poison(check_expr(sema, last))) continue;
      Ast tmp = {.kind = AST_PASS, .loc = e->loc};
      bind_hidden(sema, &tmp, free.data[j], last, named->loc);
      for (int i = 0; i < tmp.unrolled.len; i++) vec_push(&sema->cx->arena, &call->body, tmp.unrolled.data[i]);
    }
  } else {
    t = check_expr(sema, call);
  }
  sema->lambda_depth--;
  if (is_poison(t)) return t;
  if ((named->op == DEF_LOCAL || call->inlined) && e->kind == AST_CALL) {  // e is the inlined call: lowered even
                                                                           // as a statement (g = init; g(m))
    e->inlined = call->inlined;
    e->operands = call->operands;
    e->noperands = call->noperands;
    for (int i = 0; i < call->unrolled.len; i++)  // its arguments' closures (lambda_closure), after e's own
      vec_push(&sema->cx->arena, &e->unrolled, call->unrolled.data[i]);
    e->body = call->body;  // the caller's lists it changed, rebound after it (inline_call)
    return t;
  }
  set_operand1(sema, e, call);
  return t;
}

// fn NAME(params) { body } as a statement (a def inside a function): NAME bound to a
// function value whose calls inline the body as a helper's, reading the locals it does not
// bind where it is called (Python's closure); untyped parameters take any value; the
// defaults are evaluated here, as Python evaluates them when the def runs, each bound to a
// hidden name that its calls read (the statement becomes those bindings for lowering).
void local_def(Sema *sema, Ast *st) {
  if (st->deco) {  // @property, @classmethod: a class's (sema_class.c)
    diag_error(sema->cx, name_loc(st), "@%s on a fn inside a function: tdsl takes it on a method of a class",
               st->deco == 'c' ? "classmethod" : "property");
    bind_name(sema, st->name, poison(sema), st->loc);
    return;
  }
  Ast *def = ast_clone(sema->cx, st);
  def->op = DEF_LOCAL;
  int id = ++sema->lambdas;
  bool bad = false;
  for (int j = 0; j < def->list.len; j++) {
    Ast *p = def->list.data[j];
    if (p->type->kind == AST_SCALAR_TYPE && !p->type->name) p->type = ast_scalar_type(sema->cx, ANY_TYPE, p->type->loc);
    if (!p->rhs) continue;
    Ast *v = st->list.data[j]->rhs;
    if (is_poison(check_expr(sema, v))) {
      bad = true;
      continue;
    }
    const char *h = arena_printf(&sema->cx->arena, "(def %d) =%s", id, p->name);
    bind_hidden(sema, st, h, v, v->loc);
    p->rhs = ast_name(sema->cx, h, v->loc);
    check_expr(sema, p->rhs);
  }
  TType *t = ty_module(sema, "builtins.function");
  t->ctor = def;
  int before = sema->cx->nerrors;
  if (!bad) local_sig(sema, def);
  if (bad || sema->cx->nerrors > before) t = poison(sema);
  bind_name(sema, st->name, t, name_loc(st));
  Ast *none = ast_new(sema->cx, AST_NONE, st->loc);
  none->ty = ty_new(sema, TY_NONE);
  st->kind = AST_EXPR;
  st->lhs = none;
}

// Every node of a (a clone) placed at loc: a built-in lambda's body (transformers' ACT2FN,
// parsed from a source of tdslc's own) stands where it is called, so that the IR, the
// profile and the messages quote the user's line rather than a line of that source.
void relocate(Ast *a, Loc loc) {
  for (; a; a = a->lhs) {
    a->loc = a->oploc = loc;
    relocate(a->rhs, loc);
    relocate(a->step, loc);
    relocate(a->type, loc);
    for (int i = 0; i < a->list.len; i++) relocate(a->list.data[i], loc);
    for (int i = 0; i < a->rets.len; i++) relocate(a->rets.data[i], loc);
    for (int i = 0; i < a->body.len; i++) relocate(a->body.data[i], loc);
  }
}

// A call e of lambda value f on the checked arguments args: e's value is the lambda's body
// checked with its parameters bound to the arguments (Python's messages for the wrong
// arguments).
TType *lambda_call(Sema *sema, Ast *e, const TType *f, AstList *args) {
  const Ast *lam = f->ctor;
  if (lam->op == DEF_CLASS) return class_call(sema, e, f, args);  // Name(args), inst(x) (sema_class.c)
  if (lam->op == DEF_LOCAL) return named_call(sema, e, lam, args);
  if (strcmp(lam->name, "<lambda>")) return named_call(sema, e, lam, args);
  int np = lam->list.len, given = 0;
  Ast **vals = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(np + 1));
  Loc at = e->kind == AST_CALL ? call_loc(e) : e->loc;
  for (int i = 0; i < args->len; i++) {
    Ast *a = args->data[i];
    if (a->kind == AST_KWARG) continue;
    if (given >= np) {
      int n = 0;
      for (int j = 0; j < args->len; j++) n += args->data[j]->kind != AST_KWARG;
      diag_error(sema->cx, a->loc, "<lambda>() takes %d positional argument%s but %d were given", np, np == 1 ? "" : "s", n);
      return poison(sema);
    }
    vals[given++] = a;
  }
  for (int i = 0; i < args->len; i++) {
    Ast *a = args->data[i];
    if (a->kind != AST_KWARG) continue;
    int j = 0;
    while (j < np && strcmp(lam->list.data[j]->name, a->name)) j++;
    if (j == np) {
      diag_error(sema->cx, a->loc, "<lambda>() got an unexpected keyword argument '%s'", a->name);
      return poison(sema);
    }
    if (vals[j]) {
      diag_error(sema->cx, a->loc, "<lambda>() got multiple values for argument '%s'", a->name);
      return poison(sema);
    }
    vals[j] = a->rhs;
  }
  for (int j = 0; j < np; j++) {
    if (!vals[j]) vals[j] = lam->list.data[j]->rhs;
    if (!vals[j]) {
      diag_error(sema->cx, at, "<lambda>() missing 1 required positional argument: '%s'", lam->list.data[j]->name);
      return poison(sema);
    }
  }
  if (sema->lambda_depth >= LAMBDA_MAX_DEPTH) {
    diag_error(sema->cx, at, "RecursionError: maximum recursion depth exceeded (lambdas calling lambdas %d deep)",
               LAMBDA_MAX_DEPTH);
    return poison(sema);
  }
  int id = ++sema->lambdas;
  const char **hidden = arena_alloc(&sema->cx->arena, sizeof(char *) * (size_t)(np + 1));
  for (int j = 0; j < np; j++) {
    hidden[j] = arena_printf(&sema->cx->arena, "(lambda %d) %s", id, lam->list.data[j]->name);
    bind_hidden(sema, e, hidden[j], vals[j], lam->list.data[j]->loc);
  }
  const char **names = arena_alloc(&sema->cx->arena, sizeof(char *) * (size_t)(np + 1));
  for (int j = 0; j < np; j++) names[j] = lam->list.data[j]->name;
  Ast *body = ast_clone(sema->cx, lam->body.data[0]->list.data[0]);
  rename_names(body, names, hidden, np);
  bool builtin = lam->loc.file != at.file;  // a built-in lambda (ACT2FN's): its errors are at the call
  if (builtin) relocate(body, at);
  sema->lambda_depth++;
  TType *t = check_expr(sema, body);
  sema->lambda_depth--;
  if (is_poison(t)) {
    if (!builtin) diag_note(sema->cx, at, "in this call of the lambda");
    return t;
  }
  set_operand1(sema, e, body);
  return t;
}

// The names a's nodes read (names and callees of plain calls) that are locals of the scope
// now, none of own (the function's parameters and locals) and no hidden name: added to
// free (at most once each).
static void free_locals(Sema *sema, const Ast *a, const NameList *own, NameList *free) {
  for (; a; a = a->lhs) {
    const char *n = a->kind == AST_NAME || (a->kind == AST_CALL && !a->lhs) ? a->name : NULL;
    if (n && n[0] != '(' && find_local(sema, n) && !name_in(own, n) && !name_in(free, n))
      vec_push(&sema->cx->arena, free, n);
    for (int i = 0; a->kind == AST_FN && i < a->list.len; i++) free_locals(sema, a->list.data[i]->rhs, own, free);
    free_locals(sema, a->rhs, own, free);
    free_locals(sema, a->step, own, free);
    for (int i = 0; i < a->list.len; i++) free_locals(sema, a->list.data[i], own, free);
    for (int i = 0; i < a->body.len; i++) free_locals(sema, a->body.data[i], own, free);
  }
}

bool name_in(const NameList *names, const char *name) {
  for (int j = 0; names && j < names->len; j++)
    if (!strcmp(names->data[j], name)) return true;
  return false;
}

static void add_name(Arena *arena, NameList *out, const char *name) {
  if (!name_in(out, name)) vec_push(arena, out, name);
}

// The names target t binds: a name, or those of a tuple or list of targets.
static void target_names(Arena *arena, const Ast *t, NameList *out) {
  if (t && t->kind == AST_STARRED) t = t->lhs;
  if (!t) return;
  if (t->kind == AST_NAME) add_name(arena, out, t->name);
  for (int i = 0; (t->kind == AST_TUPLE || t->kind == AST_LIST) && i < t->list.len; i++)
    target_names(arena, t->list.data[i], out);
}

// The names statements bind anywhere in them, branches and loops included (Python makes each
// a local of the whole function): assignments' targets, loop variables, local defs.
static void stmt_locals(Arena *arena, const AstList *stmts, NameList *out) {
  for (int i = 0; i < stmts->len; i++) {
    const Ast *st = stmts->data[i];
    switch (st->kind) {
    case AST_ASSIGN:
      for (int k = 0; k < st->list.len; k++) target_names(arena, st->list.data[k], out);
      for (int g = 0; g < st->body.len; g++)
        for (int k = 0; k < st->body.data[g]->list.len; k++) target_names(arena, st->body.data[g]->list.data[k], out);
      break;
    case AST_AUGASSIGN: target_names(arena, st->lhs, out); break;
    case AST_FOR:
      add_name(arena, out, st->name);
      target_names(arena, st->lhs, out);
      stmt_locals(arena, &st->body, out);
      break;
    case AST_WHILE: stmt_locals(arena, &st->body, out); break;
    case AST_IF:
      stmt_locals(arena, &st->body, out);
      stmt_locals(arena, &st->list, out);
      break;
    case AST_FN: add_name(arena, out, st->name); break;
    default: break;
    }
  }
}

void fn_locals(Arena *arena, const Ast *fn, NameList *out) {
  for (int j = 0; j < fn->list.len; j++) add_name(arena, out, fn->list.data[j]->name);
  stmt_locals(arena, &fn->body, out);
}

// The locals of the scope now that local def's body reads and does not bind itself: what
// its call captures (Python's closure reads them when the call runs).
static void def_captures(Sema *sema, const Ast *def, NameList *free) {
  NameList own = {0}, nonlocals = {0}, all = {0};
  fn_locals(&sema->cx->arena, def, &all);
  nonlocal_names(sema, def, &nonlocals);
  for (int i = 0; i < all.len; i++)  // a nonlocal name is the caller's, captured
    if (!name_in(&nonlocals, all.data[i])) vec_push(&sema->cx->arena, &own, all.data[i]);
  for (int i = 0; i < def->body.len; i++) free_locals(sema, def->body.data[i], &own, free);
}

// Captures: each name of free bound to a hidden name at call e ("(closure 4) s"), a lambda
// or local def among them closed over the caller's locals in turn; returns the hidden names.
static const char **bind_captures(Sema *sema, Ast *e, const NameList *free, const NameList *nonlocals, int id,
                                  Loc loc) {
  const char **hidden = arena_alloc(&sema->cx->arena, sizeof(char *) * (size_t)(free->len + 1));
  for (int j = 0; j < free->len; j++) {  // a nonlocal one outlives the call (check_body, lower_call)
    const char *form = name_in(nonlocals, free->data[j]) ? "(nonlocal %d) %s" : "(closure %d) %s";
    hidden[j] = arena_printf(&sema->cx->arena, form, id, free->data[j]);
    Ast *v = ast_name(sema->cx, free->data[j], loc);
    check_expr(sema, v);
    if (is_lambda_type(v->ty) && sema->lambda_depth < LAMBDA_MAX_DEPTH) {
      sema->lambda_depth++;
      v->ty = lambda_closure(sema, e, v->ty);
      sema->lambda_depth--;
    }
    bind_hidden(sema, e, hidden[j], v, loc);
  }
  return hidden;
}

// The local def f passed in call e to a helper: a def of its own whose body reads, in place
// of each local of the caller it uses, a hidden name bound to it now (as a lambda's closure).
static TType *def_closure(Sema *sema, Ast *e, TType *f) {
  const Ast *def = f->ctor;
  if (def->ival) return f;  // closed already
  NameList free = {0}, nonlocals = {0};
  nonlocal_names(sema, def, &nonlocals);
  if (nonlocals.len) {
    diag_error(sema->cx, def->loc, "a fn that rebinds a nonlocal name ('%s') handed to another function is not "
               "supported yet: call it where it is defined", nonlocals.data[0]);
    return poison(sema);
  }
  def_captures(sema, def, &free);
  int id = ++sema->lambdas;
  const char **hidden = bind_captures(sema, e, &free, NULL, id, def->loc);
  Ast *c = ast_new(sema->cx, AST_FN, def->loc);
  *c = *def;  // its parameters, their defaults checked where it stands
  c->ival = 1;
  c->body = (AstList){0};
  for (int i = 0; i < def->body.len; i++) {
    Ast *st = ast_clone(sema->cx, def->body.data[i]);
    rename_names(st, free.data, hidden, free.len);
    vec_push(&sema->cx->arena, &c->body, st);
  }
  local_sig(sema, c);
  TType *t = ty_module(sema, "builtins.function");
  t->ctor = c;
  return t;
}

// The lambda f passed in call e to a helper's Callable parameter: a lambda whose body reads,
// in place of each local of the caller it uses, a hidden name bound to it now (in e's
// bindings, which the helper's body sees: Python's closure over the caller's locals, which
// the caller cannot rebind while the helper runs). Any other callable is f itself.
// The partial object f (functools.partial) passed in call e to a helper: a partial whose
// function is closed over the caller's locals and whose bound arguments are hidden names
// bound to them now, as the helper's body sees only those of its caller's scope.
static TType *partial_closure(Sema *sema, Ast *e, TType *f) {
  const Ast *call = f->ctor;
  if (call->ty) {  // its own bindings first, if it is made here (lower_object)
    Ast *made = ast_new(sema->cx, AST_EXPR, call->loc);
    made->lhs = (Ast *)call;
    vec_push(&sema->cx->arena, &e->unrolled, made);
  }
  Ast *c = ast_new(sema->cx, AST_CALL, call->loc);
  *c = *call;
  c->list = (AstList){0};
  int id = ++sema->lambdas;
  for (int i = 0; i < call->list.len; i++) {
    Ast *a = call->list.data[i], *v = a->kind == AST_KWARG ? a->rhs : a, *n;
    if (i == 0) {
      n = ast_new(sema->cx, v->kind, v->loc);
      *n = *v;
      n->ty = lambda_closure(sema, e, v->ty);
    } else {
      const char *h = arena_printf(&sema->cx->arena, "(closure %d) %d", id, i);
      bind_hidden(sema, e, h, v, v->loc);
      n = ast_name(sema->cx, h, v->loc);
      check_expr(sema, n);
    }
    vec_push(&sema->cx->arena, &c->list, a->kind == AST_KWARG ? ast_kwarg(sema->cx, a->name, n, a->oploc, a->loc) : n);
  }
  TType *t = ty_module(sema, "functools.partial");
  t->ctor = c;
  return t;
}

// functools.partial's checked call e: each bound argument the program computes (a tensor,
// a tuple, list or dict) bound now to a hidden name ("(partial 5) 1") that its calls read,
// as Python's partial holds the values it was given, not the names (lowering binds them where
// e is evaluated: lower.c's lower_object).
void partial_bind_now(Sema *sema, Ast *e) {
  int id = ++sema->lambdas;
  for (int i = 1; i < e->list.len; i++) {
    Ast *a = e->list.data[i], *v = a->kind == AST_KWARG ? a->rhs : a;
    if (a->kind == AST_STARRED || !v->ty ||
        (v->ty->kind != TY_TENSOR && v->ty->kind != TY_TUPLE && v->ty->kind != TY_LIST && v->ty->kind != TY_DICT))
      continue;
    const char *h = arena_printf(&sema->cx->arena, "(partial %d) %d", id, i);
    bind_hidden(sema, e, h, v, v->loc);
    Ast *n = ast_name(sema->cx, h, v->loc);
    check_expr(sema, n);
    if (a->kind == AST_KWARG) a->rhs = n;
    else e->list.data[i] = n;
  }
}

TType *lambda_closure(Sema *sema, Ast *e, TType *f) {
  const Ast *lam = f->ctor;
  if (f->kind == TY_MODULE && f->module && !strcmp(f->module, "functools.partial") && sema->lambda_depth < LAMBDA_MAX_DEPTH) {
    sema->lambda_depth++;
    TType *t = partial_closure(sema, e, f);
    sema->lambda_depth--;
    return t;
  }
  if (is_lambda_type(f) && lam->op == DEF_LOCAL) return def_closure(sema, e, f);
  if (!is_lambda_type(f) || strcmp(lam->name, "<lambda>")) return f;  // a named function, a module object
  NameList free = {0}, own = {0};
  for (int j = 0; j < lam->list.len; j++) vec_push(&sema->cx->arena, &own, lam->list.data[j]->name);
  free_locals(sema, lam->body.data[0], &own, &free);
  bool lambda_default = false;
  for (int j = 0; j < lam->list.len; j++) lambda_default |= lam->list.data[j]->rhs && is_lambda_type(lam->list.data[j]->rhs->ty);
  if (!free.len && !lambda_default) return f;
  int id = ++sema->lambdas;
  const char **hidden = bind_captures(sema, e, &free, NULL, id, lam->loc);
  Ast *body = ast_clone(sema->cx, lam->body.data[0]);
  rename_names(body, free.data, hidden, free.len);
  Ast *c = ast_new(sema->cx, AST_FN, lam->loc);
  *c = *lam;  // its parameters and their checked defaults
  c->body = (AstList){0};
  vec_push(&sema->cx->arena, &c->body, body);
  c->list = (AstList){0};
  for (int j = 0; j < lam->list.len; j++) {  // a lambda default (g=act): a closure too, under a hidden name
    Ast *p = lam->list.data[j];
    if (p->rhs && is_lambda_type(p->rhs->ty) && sema->lambda_depth < LAMBDA_MAX_DEPTH) {
      Ast *d = ast_new(sema->cx, p->rhs->kind, p->rhs->loc);
      *d = *p->rhs;
      sema->lambda_depth++;
      d->ty = lambda_closure(sema, e, p->rhs->ty);
      sema->lambda_depth--;
      const char *h = arena_printf(&sema->cx->arena, "(closure %d) =%s", id, p->name);
      bind_hidden(sema, e, h, d, p->loc);
      p = ast_lambda_param(sema->cx, p->name, ast_name(sema->cx, h, p->rhs->loc), p->loc);
      check_expr(sema, p->rhs);
    }
    vec_push(&sema->cx->arena, &c->list, p);
  }
  TType *t = ty_module(sema, "builtins.function");
  t->ctor = c;
  return t;
}

// The hidden names bound in scope (a lambda's parameters, a closure's captures), for the
// body of a helper called there: names no source can spell, so none of its own.
Sym *hidden_syms(Sema *sema, const Sym *scope) {
  Sym *r = NULL, **tail = &r;
  for (; scope; scope = scope->next) {
    if (scope->name[0] != '(') continue;
    *tail = arena_alloc(&sema->cx->arena, sizeof **tail);
    **tail = *scope;
    (*tail)->next = NULL;
    tail = &(*tail)->next;
  }
  return r;
}
