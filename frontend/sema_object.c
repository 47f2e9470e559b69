// frontend/sema_object.c: Python objects whose attributes a program sets, as model code
// binds a module's parameters: `k = nn.Linear(d, inner, bias=False)` then `k.weight =
// k_weight` (or `nn.Parameter(k_weight)`), read as `k.weight` and used by the module's call.
// An object is a TY_MODULE value with attrs (ObjAttrs): each attribute's name, its type, and
// for a value the program computes (a tensor, a tuple, list or dict) the hidden name ("(attr
// 4) weight") bound to it where it was set, which a read of the attribute becomes; a
// compile-time value (a number, a string, None, a module object) is its type alone.
// Invariants: every holder (names, sequences, a helper's parameter) shares the object's
// TType, so a set is seen through all of them (Python's identity); the hidden names outlive
// the call that binds them (check_body and lower.c's lower_call hand them to the caller), so
// an attribute set in a helper or a method is the caller's too, as it is in Python.
#include "frontend/sema_internal.h"

#include <string.h>

static void obj_grow(Sema *sema, ObjAttrs *a) {
  if (a->n < a->cap) return;
  int cap = a->cap ? 2 * a->cap : 8;
  const char **names = arena_alloc(&sema->cx->arena, sizeof(char *) * (size_t)cap);
  const char **hidden = arena_alloc(&sema->cx->arena, sizeof(char *) * (size_t)cap);
  TType **ty = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)cap);
  for (int i = 0; i < a->n; i++) names[i] = a->names[i], hidden[i] = a->hidden[i], ty[i] = a->ty[i];
  a->names = names, a->hidden = hidden, a->ty = ty, a->cap = cap;
}

void obj_init(Sema *sema, TType *m, const char *const *params, int n) {
  ObjAttrs *a = arena_alloc(&sema->cx->arena, sizeof *a);
  *a = (ObjAttrs){0};
  for (int i = 0; i < n; i++) {
    obj_grow(sema, a);
    a->names[a->n] = params[i], a->hidden[a->n] = NULL, a->ty[a->n] = NULL;
    a->n++;
  }
  m->attrs = a;
}

int obj_find(const ObjAttrs *a, const char *name) {
  for (int i = 0; a && i < a->n; i++)
    if (!strcmp(a->names[i], name)) return i;
  return -1;
}

TType *obj_read(Sema *sema, Ast *e, const TType *m, int i) {
  const ObjAttrs *a = m->attrs;
  if (!a->ty[i]) {
    diag_error(sema->cx, e->oploc.end > e->oploc.begin ? e->oploc : e->loc, "%s's %s is not set: tdsl has no "
               "initial values for parameters; set it from a parameter of the function first (m.%s = w)",
               py_type_name(m), a->names[i], a->names[i]);
    return poison(sema);
  }
  if (!a->hidden[i]) return a->ty[i];
  e->kind = AST_NAME;  // the value bound where it was set
  e->name = a->hidden[i];
  e->lhs = NULL;
  return check_expr(sema, e);
}

bool obj_set(Sema *sema, Ast *at, TType *m, const char *name, Ast *v) {
  ObjAttrs *a = m->attrs;
  int i = obj_find(a, name);
  if (i < 0) {
    obj_grow(sema, a);
    i = a->n++;
    a->names[i] = name;
  }
  a->hidden[i] = NULL;
  a->ty[i] = v->ty;
  TyKind k = v->ty->kind;
  if (k == TY_TENSOR || k == TY_TUPLE || k == TY_LIST || k == TY_DICT || k == TY_MODULE) {  // a module: its making
    a->hidden[i] = arena_printf(&sema->cx->arena, "(attr %d) %s", ++sema->lambdas, name);
    bind_hidden(sema, at, a->hidden[i], v, v->loc);
    a->ty[i] = find_local(sema, a->hidden[i])->ty;
  }
  return true;
}
