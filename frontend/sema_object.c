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
// Each attribute also has the role nn.Module gives it (a parameter, a buffer or a plain
// attribute: what parameters(), buffers() and state_dict() walk, sema_state.c): an nn module's
// state is a parameter (its running statistics buffers), `self.w = nn.Parameter(t)` makes one,
// and a later set keeps the role, as Module.__setattr__ keeps a registered name's.
#include "frontend/sema_internal.h"

#include <string.h>

static void obj_grow(Sema *sema, ObjAttrs *a) {
  if (a->n < a->cap) return;
  int cap = a->cap ? 2 * a->cap : 8;
  const char **names = arena_alloc(&sema->cx->arena, sizeof(char *) * (size_t)cap);
  const char **hidden = arena_alloc(&sema->cx->arena, sizeof(char *) * (size_t)cap);
  TType **ty = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)cap);
  char *role = arena_alloc(&sema->cx->arena, (size_t)cap);
  DType *want = arena_alloc(&sema->cx->arena, sizeof(DType) * (size_t)cap);
  const void **ident = arena_alloc(&sema->cx->arena, sizeof(void *) * (size_t)cap);
  struct ObjTie *tie = arena_alloc(&sema->cx->arena, sizeof *tie * (size_t)cap);
  for (int i = 0; i < a->n; i++) {
    names[i] = a->names[i], hidden[i] = a->hidden[i], ty[i] = a->ty[i], role[i] = a->role[i], want[i] = a->want[i];
    ident[i] = a->ident[i], tie[i] = a->tie[i];
  }
  a->names = names, a->hidden = hidden, a->ty = ty, a->role = role, a->want = want, a->ident = ident, a->tie = tie;
  a->cap = cap;
}

int obj_add(Sema *sema, TType *m, const char *name) {
  ObjAttrs *a = m->attrs;
  int i = obj_find(a, name);
  if (i >= 0) return i;
  obj_grow(sema, a);
  i = a->n++;
  a->names[i] = name, a->hidden[i] = NULL, a->ty[i] = NULL, a->role[i] = 0, a->want[i] = DT_COUNT;
  a->ident[i] = NULL, a->tie[i] = (struct ObjTie){NULL, 0};
  return i;
}

void obj_untie(TType **m, int *i) {
  for (int depth = 0; (*m)->attrs->tie[*i].m && depth < 64; depth++) {
    const struct ObjTie t = (*m)->attrs->tie[*i];
    *m = t.m, *i = t.i;
  }
}

bool obj_tie(Sema *sema, TType *m, const char *name, Ast *v) {
  const Ast *root = v;
  while (root->kind == AST_ATTR) root = root->lhs;
  if (v->kind != AST_ATTR || root->kind != AST_NAME || !find_local(sema, root->name)) return false;
  int before = sema->cx->nerrors;
  Ast *owner = ast_clone(sema->cx, v->lhs);  // a clone: v itself is checked by the caller when it is none
  TType *src = check_expr(sema, owner);
  if (sema->cx->nerrors > before || !src || src->kind != TY_MODULE || !src->attrs) return false;
  int j = obj_find(src->attrs, v->name), k = obj_find(m->attrs, name);
  if (j < 0 || !is_param_role(src->attrs->role[j])) return false;
  obj_untie(&src, &j);
  if (src->attrs->ty[j] || (k >= 0 && m->attrs->role[k] && !is_param_role(m->attrs->role[k]))) return false;
  k = obj_add(sema, m, name);
  if (m == src && k == j) return true;  // m.w = m.w
  m->attrs->tie[k] = (struct ObjTie){src, j};
  m->attrs->ty[k] = NULL, m->attrs->hidden[k] = NULL;
  if (!m->attrs->role[k]) m->attrs->role[k] = src->attrs->role[j];
  return true;
}

const void *value_ident(Sema *sema, const Ast *v) {
  for (int depth = 0; v->kind == AST_NAME && depth < 64; depth++) {  // p = q; m.w = p: what q was bound to
    for (int k = sema->idents.len - 1; k >= 0; k--)  // an attribute's binding: its tensor's
      if (!strcmp(sema->idents.data[k].hidden, v->name)) return sema->idents.data[k].ident;
    Sym *s = find_local(sema, v->name);
    if (!s) break;
    if (!s->src) return s;  // a parameter of the function
    v = s->src;
  }
  return v;
}

void obj_ident(Sema *sema, TType *m, int i, const void *ident) {
  ObjAttrs *a = m->attrs;
  a->ident[i] = ident;
  if (!a->hidden[i]) return;
  struct Ident id = {a->hidden[i], ident};
  vec_push(&sema->cx->arena, &sema->idents, id);
}

void obj_init(Sema *sema, TType *m, const char *const *params, int n) {
  ObjAttrs *a = arena_alloc(&sema->cx->arena, sizeof *a);
  *a = (ObjAttrs){0};
  m->attrs = a;
  for (int i = 0; i < n; i++) {  // an nn module's state: parameters, its running statistics buffers
    int k = obj_add(sema, m, params[i]);
    a->role[k] = strncmp(params[i], "running_", 8) ? 'p' : 'b';
  }
}

int obj_find(const ObjAttrs *a, const char *name) {
  for (int i = 0; a && i < a->n; i++)
    if (!strcmp(a->names[i], name)) return i;
  return -1;
}

TType *obj_read(Sema *sema, Ast *e, const TType *m, int i) {
  TType *src = (TType *)m;
  obj_untie(&src, &i);  // a tied parameter: the one it is tied to
  const ObjAttrs *a = (m = src)->attrs;
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

bool unset_parameter(Sema *sema, Ast *e) {
  const Sym *s = e->kind == AST_ATTR && e->lhs->kind == AST_NAME ? find_local(sema, e->lhs->name) : NULL;
  TType *m = s ? s->ty : NULL;
  int i = m && m->kind == TY_MODULE && m->attrs ? obj_find(m->attrs, e->name) : -1;
  if (i >= 0) obj_untie(&m, &i);
  return i >= 0 && !m->attrs->ty[i] && m->attrs->role[i];
}

TType *as_parameter(Sema *sema, Ast *e) {
  if (!is_tensor(e->ty) || e->ty->requires_grad) return e->ty;
  TType *t = ty_new(sema, TY_TENSOR);
  *t = *e->ty;
  t->requires_grad = true;
  return e->ty = t;
}

// The role nn.Parameter(t, requires_grad=True) as v (sema_module.c's nn_parameter: the tensor itself, checked)
// gives an attribute ('p', 'f' with requires_grad=False), else 0.
static char parameter_call(const Ast *v) {
  if (v->kind != AST_CALL || !v->name || strcmp(v->name, "Parameter") || !v->bi || strcmp(v->bi->name, "identity"))
    return 0;
  for (int i = 0; i < v->list.len; i++) {
    const Ast *a = v->list.data[i];
    const Ast *x = a->kind == AST_KWARG ? a->rhs : i == 1 ? a : NULL;
    if (x && (a->kind != AST_KWARG || !strcmp(a->name, "requires_grad")) && is_scalar(x->ty) && !x->ty->ival)
      return 'f';
  }
  return 'p';
}

bool obj_set(Sema *sema, Ast *at, TType *m, const char *name, Ast *v) {
  ObjAttrs *a = m->attrs;
  int i = obj_add(sema, m, name);
  TyKind vk = v->ty->kind;
  char r = a->role[i];
  if (r && vk != TY_TENSOR && vk != TY_NONE) {  // Module.__setattr__'s checks of a registered name
    diag_error(sema->cx, v->loc, is_param_role(r) ? "cannot assign '%s' as parameter '%s' (torch.nn.Parameter or None "
               "expected)" : "cannot assign '%s' as buffer '%s' (torch.Tensor or None expected)", py_type_name(v->ty),
               name);
    return false;
  }
  if (parameter_call(v)) a->role[i] = parameter_call(v);
  a->tie[i] = (struct ObjTie){NULL, 0};  // a value of its own: untied
  a->want[i] = DT_COUNT;
  a->hidden[i] = NULL;
  a->ty[i] = v->ty;
  TyKind k = v->ty->kind;
  if (k == TY_TENSOR || k == TY_TUPLE || k == TY_LIST || k == TY_DICT || k == TY_MODULE) {  // a module: its making
    a->hidden[i] = arena_printf(&sema->cx->arena, "(attr %d) %s", ++sema->lambdas, name);
    bind_hidden(sema, at, a->hidden[i], v, v->loc);
    Sym *sym = find_local(sema, a->hidden[i]);
    if (is_param_role(a->role[i]) && k == TY_TENSOR && !sym->ty->requires_grad) {  // a Parameter: its own
      TType *t = ty_new(sema, TY_TENSOR);  // type, read alike by every read (`is`), p.requires_grad True
      *t = *sym->ty;
      t->requires_grad = a->role[i] == 'p';
      sym->ty = t;
    }
    a->ty[i] = sym->ty;
  }
  obj_ident(sema, m, i, value_ident(sema, v));
  return true;
}
