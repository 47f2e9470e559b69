// frontend/sema_class.c: user classes as pasted model code defines them,
//   class LayerScale(nn.Module) {
//       fn __init__(self, dim: int, init_values: float = 1e-5) {
//           super().__init__()
//           self.gamma = nn.Parameter(init_values * torch.ones(dim))
//       }
//       fn forward(self, x) { return x * self.gamma }
//   }
// made where the model's __init__ makes it (`ls1 = LayerScale(dim, init_values=1e-5)`), its
// parameters set from the function's (`ls1.gamma = ls1_gamma`), called (`ls1(x)` is its
// forward), handed on, held in lists and dicts; `self.m(x)` calls another method.
// The class is a const (grammar/parser.y's parse_class) holding TY_MODULE "builtins.type"
// whose ctor is its AST_FN of op DEF_CLASS (body: its methods); an instance is TY_MODULE
// "__main__.Name" with the same ctor and its attributes (sema_object.c).
// Invariants: __init__ runs where the instance is made, in the caller's scope: a clone of its
// body whose parameters and locals are renamed to hidden names ("(init 3) dim"), checked
// there and kept as the construction call's bindings (lower.c's lower_object lowers them
// where the instance is made), so the attributes it sets are the caller's; forward and the
// other methods are called as a fn inside a function is (sema_lambda.c), self the instance,
// reading the attributes through the hidden names every inlined body sees.
#include "frontend/sema_internal.h"

#include <string.h>

bool is_class(const TType *t) {
  return t && t->kind == TY_MODULE && t->ctor && t->ctor->kind == AST_FN && t->ctor->op == DEF_CLASS &&
         !strcmp(t->module, "builtins.type");
}

bool is_instance(const TType *t) {
  return t && t->kind == TY_MODULE && t->ctor && t->ctor->kind == AST_FN && t->ctor->op == DEF_CLASS &&
         strcmp(t->module, "builtins.type");
}

// A method of class cls by name, or NULL.
static const Ast *method_of(const Ast *cls, const char *name) {
  for (int i = 0; i < cls->body.len; i++) {
    const Ast *st = cls->body.data[i];
    if (st->kind == AST_FN && !strcmp(st->name, name)) return st;
  }
  return NULL;
}

// Whether statement st is super().__init__(...) (or nn.Module.__init__(self)): nothing to do.
static bool super_init(const Ast *st) {
  if (st->kind != AST_EXPR || st->lhs->kind != AST_CALL || strcmp(st->lhs->name, "__init__")) return false;
  const Ast *l = st->lhs->lhs;
  return l && ((l->kind == AST_CALL && !l->lhs && !strcmp(l->name, "super")) || l->kind == AST_ATTR);
}

// Whether st is a class attribute's statement: name = value.
static bool class_attr_stmt(const Ast *st) {
  return st->kind == AST_ASSIGN && st->list.len == 1 && !st->body.len && st->list.data[0]->kind == AST_NAME;
}

// The class attribute name of class cls (its value's type, checked with the class), or NULL;
// the last one of that name, as Python's class body rebinds it.
static TType *attr_of(const Ast *cls, const char *name) {
  TType *t = NULL;
  for (int i = 0; i < cls->body.len; i++) {
    const Ast *st = cls->body.data[i];
    if (class_attr_stmt(st) && !strcmp(st->list.data[0]->name, name)) t = st->rhs->ty;
  }
  return t;
}

TType *class_attr(const TType *t, const char *name) { return attr_of(t->ctor, name); }

// class attribute st (name = value) checked where the class is defined, the class body's
// earlier attributes in scope as Python's class body has them; false after an error. Its
// value is a compile-time value (a number, a string, None): an instance reads it as its own.
static bool check_class_attr(Sema *sema, Ast *st) {
  TType *t = check_expr(sema, st->rhs);
  if (is_poison(t)) return false;
  if (t->kind != TY_SCALAR && t->kind != TY_STR && t->kind != TY_NONE) {
    diag_error(sema->cx, st->rhs->loc, "class attribute '%s' is a %s: a class attribute holds a number, a string or "
               "None (set others in __init__: self.%s = value)", st->list.data[0]->name, py_type_name(t),
               st->list.data[0]->name);
    return false;
  }
  Sym *d = arena_alloc(&sema->cx->arena, sizeof *d);
  *d = (Sym){st->list.data[0]->name, t, st->list.data[0]->loc, NULL, sema->scope};
  sema->scope = d;
  return true;
}

// class Name(bases) { ... } as a value: its statements checked for what a class body may
// hold (methods, class attributes, a docstring, pass).
TType *class_value(Sema *sema, Ast *e) {
  Sym *scope = sema->scope;
  for (int i = 0; i < e->body.len; i++) {
    Ast *st = e->body.data[i];
    bool doc = st->kind == AST_EXPR && st->lhs->kind == AST_STR;
    if (class_attr_stmt(st)) {
      if (check_class_attr(sema, st)) continue;
      sema->scope = scope;
      return poison(sema);
    }
    if (st->kind == AST_FN || (st->kind == AST_PASS && !st->name) || doc) {
      if (st->kind == AST_FN && (!st->list.len || st->list.data[0]->ival)) {
        diag_error(sema->cx, name_loc(st), "a method of '%s' takes self first: write fn %s(self, ...)", e->name,
                   st->name);
        sema->scope = scope;
        return poison(sema);
      }
      continue;
    }
    diag_error(sema->cx, st->loc, "a class body holds its methods (fn), class attributes (name = value), a docstring "
               "and pass");
    sema->scope = scope;
    return poison(sema);
  }
  sema->scope = scope;
  for (int i = 0; e->step && i < e->step->list.len; i++) {
    const Ast *b = e->step->list.data[i];
    if (b->kind == AST_NAME && find_const(sema, b->name) && is_class(find_const(sema, b->name)->ty)) {
      diag_error(sema->cx, b->loc, "a class derived from a class of the file is not supported yet: write '%s' "
                 "with its base's methods in it", e->name);
      return poison(sema);
    }
  }
  TType *t = ty_module(sema, "builtins.type");
  t->ctor = e;
  return t;
}

// A node standing for the value t (the instance as self).
static Ast *value_node(Sema *sema, TType *t, Loc loc) {
  Ast *n = ast_new(sema->cx, AST_NONE, loc);
  n->ty = t;
  return n;
}

// The arguments args of call e matched to method m's parameters after self, as Python
// matches them (its messages, named qual): vals[j] for parameter j (j >= 1), its default's
// clone checked where none is given. False after an error.
static bool match_args(Sema *sema, Ast *e, const Ast *m, const char *qual, AstList *args, Ast **vals) {
  int np = m->list.len, given = 0;
  Loc at = e->kind == AST_CALL ? call_loc(e) : e->loc;
  for (int j = 1; j < np; j++)
    if (m->list.data[j]->ival) {  // *args, **kwargs
      diag_error(sema->cx, m->list.data[j]->loc, "*args and **kwargs of %s are not supported yet", qual);
      return false;
    }
  for (int i = 0; i < args->len; i++) {
    Ast *a = args->data[i];
    if (a->kind == AST_KWARG) continue;
    if (1 + given >= np) {
      int n = 0;
      for (int j = 0; j < args->len; j++) n += args->data[j]->kind != AST_KWARG;
      diag_error(sema->cx, a->loc, "%s() takes %d positional argument%s but %d were given", qual, np,
                 np == 1 ? "" : "s", n + 1);
      return false;
    }
    vals[1 + given++] = a;
  }
  for (int i = 0; i < args->len; i++) {
    Ast *a = args->data[i];
    if (a->kind != AST_KWARG) continue;
    int j = 1;
    while (j < np && strcmp(m->list.data[j]->name, a->name)) j++;
    if (j == np) {
      diag_error(sema->cx, a->loc, "%s() got an unexpected keyword argument '%s'", qual, a->name);
      return false;
    }
    if (vals[j]) {
      diag_error(sema->cx, a->loc, "%s() got multiple values for argument '%s'", qual, a->name);
      return false;
    }
    vals[j] = a->rhs;
  }
  for (int j = 1; j < np; j++) {
    if (vals[j]) continue;
    const Ast *p = m->list.data[j];
    if (!p->rhs) {
      diag_error(sema->cx, at, "%s() missing 1 required positional argument: '%s'", qual, p->name);
      return false;
    }
    vals[j] = ast_clone(sema->cx, p->rhs);
    if (is_poison(check_expr(sema, vals[j]))) return false;
  }
  return true;
}

// cls(args) at call e: the instance, __init__'s body run here (the file comment).
static TType *construct(Sema *sema, Ast *e, const TType *cls_t, AstList *args) {
  const Ast *cls = cls_t->ctor;
  TType *inst = ty_module(sema, arena_printf(&sema->cx->arena, "__main__.%s", cls->name));
  inst->ctor = cls;
  obj_init(sema, inst, NULL, 0);
  const Ast *init = method_of(cls, "__init__");
  if (!init) {
    if (args->len) {
      diag_error(sema->cx, e->kind == AST_CALL ? call_loc(e) : e->loc, "%s() takes no arguments", cls->name);
      return poison(sema);
    }
    return inst;
  }
  int np = init->list.len;
  Ast **vals = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(np + 1));
  for (int j = 0; j < np; j++) vals[j] = NULL;
  if (!match_args(sema, e, init, "__init__", args, vals)) return poison(sema);
  int id = ++sema->lambdas;
  NameList own = {0};
  fn_locals(&sema->cx->arena, init, &own);
  const char **hidden = arena_alloc(&sema->cx->arena, sizeof(char *) * (size_t)(own.len + 1));
  for (int j = 0; j < own.len; j++) hidden[j] = arena_printf(&sema->cx->arena, "(init %d) %s", id, own.data[j]);
  vals[0] = value_node(sema, inst, e->loc);
  for (int j = 0; j < np; j++) {  // self and the parameters, as the body's first names (fn_locals' order)
    const Ast *p = init->list.data[j];
    if (j > 0 && p->type && p->type->kind == AST_SCALAR_TYPE && p->type->name &&
        (!strcmp(p->type->name, "int") || !strcmp(p->type->name, "float") || !strcmp(p->type->name, "bool")) &&
        vals[j]->ty->kind != TY_SCALAR && !(vals[j]->ty->kind == TY_NONE && p->type->bval)) {
      diag_error(sema->cx, vals[j]->loc, "argument '%s' of '%s.__init__' must be %s, not %s", p->name, cls->name,
                 p->type->name, py_type_name(vals[j]->ty));
      return poison(sema);
    }
    bind_hidden(sema, e, hidden[j], vals[j], vals[j]->loc);
  }
  Ast *body = ast_clone(sema->cx, init);
  AstList kept = {0};
  for (int i = 0; i < body->body.len; i++) {
    Ast *st = body->body.data[i];
    if (super_init(st)) continue;
    rename_names(st, own.data, hidden, own.len);
    vec_push(&sema->cx->arena, &kept, st);
  }
  int before = sema->cx->nerrors;
  Body b = {body, NULL, false, 0, AST_COUNT};
  check_block(sema, &b, &kept);
  if (sema->cx->nerrors > before) {
    diag_note(sema->cx, e->kind == AST_CALL ? call_loc(e) : e->loc, "in this call of %s.__init__", cls->name);
    return poison(sema);
  }
  if (b.returned && b.ret && b.ret->kind != TY_NONE) {
    diag_error(sema->cx, e->kind == AST_CALL ? call_loc(e) : e->loc, "__init__() should return None, not '%s'",
               py_type_name(b.ret));
    return poison(sema);
  }
  for (int i = 0; i < kept.len; i++) vec_push(&sema->cx->arena, &e->unrolled, kept.data[i]);
  return inst;
}

// Method m of instance inst as a function value whose call takes self first: a clone of the
// def, checked as a fn inside a function is, its defaults evaluated at e.
static TType *method_value(Sema *sema, Ast *e, const Ast *m) {
  Ast *def = ast_clone(sema->cx, m);
  def->op = DEF_LOCAL;
  def->ival = 1;  // no captures: a method reads its own parameters, self's attributes and the file's names
  int id = ++sema->lambdas;
  for (int j = 0; j < def->list.len; j++) {
    Ast *p = def->list.data[j];
    if (p->type->kind == AST_SCALAR_TYPE && !p->type->name) p->type = ast_scalar_type(sema->cx, ANY_TYPE, p->type->loc);
    if (!p->rhs) continue;
    if (is_poison(check_expr(sema, p->rhs))) return poison(sema);
    const char *h = arena_printf(&sema->cx->arena, "(def %d) =%s", id, p->name);
    bind_hidden(sema, e, h, p->rhs, p->rhs->loc);
    p->rhs = ast_name(sema->cx, h, p->rhs->loc);
    check_expr(sema, p->rhs);
  }
  int before = sema->cx->nerrors;
  local_sig(sema, def);
  if (sema->cx->nerrors > before) return poison(sema);
  TType *t = ty_module(sema, "builtins.function");
  t->ctor = def;
  return t;
}

// Method m of instance inst called at e on args (self first).
static TType *call_method(Sema *sema, Ast *e, TType *inst, const Ast *m, AstList *args) {
  TType *f = method_value(sema, e, m);
  if (is_poison(f)) return f;
  AstList all = {0};
  vec_push(&sema->cx->arena, &all, value_node(sema, inst, e->loc));
  for (int i = 0; i < args->len; i++) vec_push(&sema->cx->arena, &all, args->data[i]);
  return lambda_call(sema, e, f, &all);
}

TType *class_call(Sema *sema, Ast *e, const TType *f, AstList *args) {
  if (is_class(f)) return construct(sema, e, f, args);
  const Ast *fwd = method_of(f->ctor, "forward");
  if (!fwd) {
    diag_error(sema->cx, e->kind == AST_CALL ? call_loc(e) : e->loc, "NotImplementedError: Module [%s] is missing "
               "the required \"forward\" function", f->ctor->name);
    return poison(sema);
  }
  return call_method(sema, e, (TType *)f, fwd, args);
}

// inst.name(args) at call e (its arguments not yet checked): a method's call, or the call of
// an attribute holding a callable (self.act(x)); NULL when inst has neither (the caller's error).
TType *instance_method_call(Sema *sema, Ast *e, TType *inst) {
  const Ast *m = method_of(inst->ctor, e->name);
  int k = obj_find(inst->attrs, e->name);
  if (!m && k < 0) return NULL;
  if (!check_args(sema, e)) return poison(sema);
  if (m && k < 0) return call_method(sema, e, inst, m, &e->list);
  Ast *at = ast_new(sema->cx, AST_ATTR, e->loc);
  at->name = e->name;
  at->oploc = e->oploc;
  TType *v = obj_read(sema, at, inst, k);
  if (is_poison(v)) return v;
  if (v->kind != TY_MODULE || !v->ctor) {
    diag_error(sema->cx, e->oploc, "'%s' object is not callable", py_type_name(v));
    return poison(sema);
  }
  return module_apply(sema, e, v, &e->list);
}

// inst.name of a method not set as an attribute: the bound method (functools.partial of the
// method on self), as `self.feed_forward_chunk` is handed on; NULL when there is none.
TType *bound_method(Sema *sema, Ast *e, TType *inst) {
  const Ast *m = method_of(inst->ctor, e->name);
  if (!m) return NULL;
  TType *f = method_value(sema, e, m);
  if (is_poison(f)) return f;
  Ast *call = ast_new(sema->cx, AST_CALL, e->loc);
  call->name = "partial";
  Ast *fn = ast_new(sema->cx, AST_NONE, e->loc);
  fn->ty = f;
  vec_push(&sema->cx->arena, &call->list, fn);
  vec_push(&sema->cx->arena, &call->list, value_node(sema, inst, e->loc));
  TType *t = ty_module(sema, "functools.partial");
  t->ctor = call;
  call->ty = t;
  return t;
}
