// frontend/sema_lambda.c: lambdas, as forward passes use them (`act = lambda t:
// F.gelu(t, approximate='tanh')`, `(lambda t: t * 2)(x)`, a dict of them): a lambda is a
// function value (TY_MODULE "builtins.function", ctor its AST_FN "<lambda>"); each call
// checks a clone of its body with the parameters bound to the arguments under names of
// that call's own (hidden: "(lambda 3) t"), so that the body reads the other names it uses
// where it is called, as Python's closures read them when they run.
// Invariants: the call's value is its body's (its one operand, of the same type: lower.c
// binds the call's parameters, e->unrolled, and then reads the body); the defaults are
// checked where the lambda is written, as Python evaluates them there.
#include "frontend/sema_internal.h"

#include <string.h>

enum { LAMBDA_MAX_DEPTH = 64 };

static bool is_lambda_type(const TType *t) {
  return t && t->kind == TY_MODULE && t->ctor && t->ctor->kind == AST_FN;
}

bool is_lambda(const TType *t) { return is_lambda_type(t); }

// lambda params: body as a value: its defaults checked.
TType *lambda_value(Sema *sema, Ast *e) {
  for (int i = 0; i < e->list.len; i++) {
    Ast *p = e->list.data[i];
    if (p->rhs && is_poison(check_expr(sema, p->rhs))) return poison(sema);
    for (int j = 0; j < i; j++)
      if (!strcmp(e->list.data[j]->name, p->name)) {
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

// Every name of a parameter of lam in a (a clone of its body) becomes that parameter's
// hidden name; a nested lambda's own parameters hide them in its body.
static void rename_params(Ast *a, const Ast *lam, const char *const *hidden) {
  for (; a; a = a->lhs) {
    const char **name = a->kind == AST_NAME || (a->kind == AST_CALL && !a->lhs) ? &a->name : NULL;
    for (int j = 0; name && j < lam->list.len; j++)
      if (!strcmp(*name, lam->list.data[j]->name)) *name = hidden[j];
    if (a->kind == AST_FN) {  // a lambda inside: its defaults, and its body unless it rebinds the names
      for (int i = 0; i < a->list.len; i++) rename_params(a->list.data[i]->rhs, lam, hidden);
      bool shadow = false;
      for (int i = 0; i < a->list.len && !shadow; i++)
        for (int j = 0; j < lam->list.len && !shadow; j++) shadow = !strcmp(a->list.data[i]->name, lam->list.data[j]->name);
      for (int i = 0; i < a->body.len && !shadow; i++) rename_params(a->body.data[i], lam, hidden);
      return;
    }
    rename_params(a->rhs, lam, hidden);
    rename_params(a->step, lam, hidden);
    for (int i = 0; i < a->list.len; i++) rename_params(a->list.data[i], lam, hidden);
    for (int i = 0; i < a->body.len; i++) rename_params(a->body.data[i], lam, hidden);
  }
}

// A call e of lambda value f on the checked arguments args: e's value is the lambda's body
// checked with its parameters bound to the arguments (Python's messages for the wrong
// arguments).
TType *lambda_call(Sema *sema, Ast *e, const TType *f, AstList *args) {
  const Ast *lam = f->ctor;
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
    bind_expr(sema, hidden[j], vals[j], lam->list.data[j]->loc);
    Ast *a = ast_new(sema->cx, AST_ASSIGN, e->loc);  // lowering binds it where the call runs
    vec_push(&sema->cx->arena, &a->list, ast_name(sema->cx, hidden[j], lam->list.data[j]->loc));
    a->rhs = vals[j];
    set_operand1(sema, a, seq_now(sema, vals[j]));
    a->ty = vals[j]->ty;
    vec_push(&sema->cx->arena, &e->unrolled, a);
  }
  Ast *body = ast_clone(sema->cx, lam->body.data[0]->list.data[0]);
  rename_params(body, lam, hidden);
  sema->lambda_depth++;
  TType *t = check_expr(sema, body);
  sema->lambda_depth--;
  if (is_poison(t)) {
    diag_note(sema->cx, at, "in this call of the lambda");
    return t;
  }
  set_operand1(sema, e, body);
  return t;
}
