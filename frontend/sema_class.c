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
// Class attributes (name = value in the body) are compile-time values checked with the class,
// read after an instance's own. A class derived from one of the file (class B(A)) finds
// methods, __init__ and class attributes in B then A (method_in, attr_of); super() in a
// method is a TY_MODULE "builtins.super" value whose ctor is the defining class's base and
// whose elems[0] is self, so a method found through it runs with self the instance.
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

// The base of class cls that is a class of the file (class B(A)), or NULL.
static const Ast *base_of(Sema *sema, const Ast *cls);

bool class_is_module(Sema *sema, const Ast *cls) {
  if (nn_container_base(sema, cls)) return true;
  for (int depth = 0; cls && depth < 64; cls = base_of(sema, cls), depth++)
    for (int i = 0; cls->step && i < cls->step->list.len; i++) {  // nn.Module, torch.nn.Module, Module
      const Ast *b = cls->step->list.data[i];
      if ((b->kind == AST_ATTR || b->kind == AST_NAME) && b->name && !strcmp(b->name, "Module")) return true;
    }
  return false;
}

// The nn container class that class cls of the file derives from, directly or through a base of
// the file (class Stack(nn.Sequential)): "Sequential", "ModuleList" or "ModuleDict"; else NULL.
const char *nn_container_base(Sema *sema, const Ast *cls) {
  static const char *const names[] = {"Sequential", "ModuleList", "ModuleDict", NULL};
  for (int depth = 0; cls && depth < 64; cls = base_of(sema, cls), depth++)
    for (int i = 0; cls->step && i < cls->step->list.len; i++) {
      const Ast *b = cls->step->list.data[i];
      for (int k = 0; names[k] && (b->kind == AST_ATTR || b->kind == AST_NAME) && b->name; k++)
        if (!strcmp(b->name, names[k])) return names[k];
    }
  return NULL;
}

// Where an instance of a class derived from an nn container holds its modules: the container
// its nn base's __init__ made, an attribute of this hidden name.
#define MODULES_ATTR "(modules)"

const TType *derived_modules(Sema *sema, const TType *t) {
  int k = is_instance(t) ? obj_find(t->attrs, MODULES_ATTR) : -1;
  Sym *s = k >= 0 && t->attrs->hidden[k] ? find_local(sema, t->attrs->hidden[k]) : NULL;  // as changed since
  return s ? s->ty : k >= 0 ? t->attrs->ty[k] : NULL;
}

Ast *modules_node(Sema *sema, Ast *v) {
  Ast *a = ast_attr(sema->cx, v, MODULES_ATTR, v->loc, v->loc);
  check_expr(sema, a);
  return a;
}

// inst's modules: the container class cls made by its __init__ on the arguments of call c (their
// names the caller's), bound where e makes the instance; false after an error.
static bool init_modules(Sema *sema, Ast *e, TType *inst, const char *cls, const Ast *c) {
  Ast *call = ast_new(sema->cx, AST_CALL, c ? c->loc : e->loc);
  call->name = cls;
  call->oploc = c ? c->oploc : e->oploc;
  if (c) call->list = c->list;
  call->ty = container_construct(sema, call);
  return !is_poison(call->ty) && obj_set(sema, e, inst, MODULES_ATTR, call);
}

// The base of class cls that is a class of the file (class B(A)), or NULL.
static const Ast *base_of(Sema *sema, const Ast *cls) {
  for (int i = 0; cls->step && i < cls->step->list.len; i++) {
    const Ast *b = cls->step->list.data[i];
    const Const *c = b->kind == AST_NAME ? find_const(sema, b->name) : NULL;
    if (c && is_class(c->ty)) return c->ty->ctor;
  }
  return NULL;
}

// A method of class cls by name, found as Python's lookup finds it (the class, then its
// bases in order), or NULL; *owner (may be NULL) the class defining it, whose base a
// super() in it names.
// (a property's setter, of the same name, is found by setter_in only)
static const Ast *method_of(Sema *sema, const Ast *cls, const char *name, const Ast **owner, bool setter) {
  for (int depth = 0; cls && depth < 64; cls = base_of(sema, cls), depth++)
    for (int i = 0; i < cls->body.len; i++) {
      const Ast *st = cls->body.data[i];
      if (st->kind == AST_FN && !strcmp(st->name, name) && (st->deco == 's') == setter) {
        if (owner) *owner = cls;
        return st;
      }
    }
  return NULL;
}

static const Ast *method_in(Sema *sema, const Ast *cls, const char *name, const Ast **owner) {
  return method_of(sema, cls, name, owner, false);
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

// The class attribute name of class cls or of its bases (its value's type, checked with
// the class), or NULL; the last one of that name, as Python's class body rebinds it.
static TType *attr_of(Sema *sema, const Ast *cls, const char *name) {
  for (int depth = 0; cls && depth < 64; cls = base_of(sema, cls), depth++) {
    TType *t = NULL;
    for (int i = 0; i < cls->body.len; i++) {
      const Ast *st = cls->body.data[i];
      if (class_attr_stmt(st) && !strcmp(st->list.data[0]->name, name)) t = st->rhs->ty;
    }
    if (t) return t;
  }
  return NULL;
}

TType *class_attr(Sema *sema, const TType *t, const char *name) { return attr_of(sema, t->ctor, name); }

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
      if (st->kind == AST_FN && !st->bval && (!st->list.len || st->list.data[0]->ival)) {  // bval: @staticmethod
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
  TType *t = ty_module(sema, "builtins.type");
  t->ctor = e;
  return t;
}

// A node standing for the value t (the instance as self).
Ast *value_node(Sema *sema, TType *t, Loc loc) {
  Ast *n = ast_new(sema->cx, AST_NONE, loc);
  n->ty = t;
  return n;
}

// The arguments args of call e matched to method m's parameters after self, as Python
// matches them (its messages, named qual): vals[j] for parameter j (j >= 1), its default's
// clone checked where none is given; a *args parameter the tuple of the positional
// arguments from its place on, a **kwargs one the dict of the keywords no parameter takes.
// False after an error.
static bool match_args(Sema *sema, Ast *e, const Ast *m, const char *qual, AstList *args, Ast **vals) {
  int np = m->list.len, star;
  Loc at = e->kind == AST_CALL ? call_loc(e) : e->loc;
  if (!bind_params(sema, e, m, 1, args, qual, true, vals, &star)) return false;
  for (int j = 1; j < np; j++) {
    if (vals[j]) continue;
    const Ast *p = m->list.data[j];
    if (!p->rhs) {
      diag_error(sema->cx, at, "%s() missing 1 required %s argument: '%s'", qual, j > star ? "keyword-only" :
                 "positional", p->name);
      return false;
    }
    vals[j] = ast_clone(sema->cx, p->rhs);
    if (is_poison(check_expr(sema, vals[j]))) return false;
  }
  return true;
}

// The class of the file whose __init__ statement st calls explicitly on self (self's
// hidden name), `Base.__init__(self, d)`, or NULL.
static const Ast *explicit_init(Sema *sema, const Ast *st, const char *self) {
  if (st->kind != AST_EXPR || st->lhs->kind != AST_CALL || strcmp(st->lhs->name, "__init__")) return NULL;
  const Ast *l = st->lhs->lhs, *a = st->lhs->list.len ? st->lhs->list.data[0] : NULL;
  if (!l || l->kind != AST_NAME || !a || a->kind != AST_NAME || strcmp(a->name, self)) return NULL;
  const Const *c = find_const(sema, l->name);
  return c && is_class(c->ty) ? c->ty->ctor : NULL;
}

// __init__ of class cls (or of the base defining it) run for inst at call e on args (checked):
// its statements appended to e->unrolled in order, a super().__init__(...) in it running its
// base's there when the base is a class of the file (nn.Module's does nothing). false after
// an error.
static bool run_init(Sema *sema, Ast *e, TType *inst, const Ast *cls, AstList *args, int depth) {
  Loc at = e->kind == AST_CALL ? call_loc(e) : e->loc;
  const Ast *owner = cls;
  const Ast *init = method_in(sema, cls, "__init__", &owner);
  if (depth > 64) {
    diag_error(sema->cx, at, "RecursionError: maximum recursion depth exceeded in %s.__init__", cls->name);
    return false;
  }
  if (!init && nn_container_base(sema, cls)) {  // class Stack(nn.Sequential) without its own: the container's
    Ast c = {.kind = AST_CALL, .loc = e->loc, .list = *args};
    c.oploc = e->kind == AST_CALL ? e->oploc : e->loc;
    return init_modules(sema, e, inst, nn_container_base(sema, cls), &c);
  }
  if (!init) {
    if (!args->len) return true;
    diag_error(sema->cx, at, "%s() takes no arguments", cls->name);
    return false;
  }
  int np = init->list.len;
  Ast **vals = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(np + 1));
  for (int j = 0; j < np; j++) vals[j] = NULL;
  if (!match_args(sema, e, init, "__init__", args, vals)) return false;
  int id = ++sema->lambdas;
  for (int j = 1; j < np; j++)  // hidden[] below holds each name once
    if (param_repeats(init, j)) {
      diag_error(sema->cx, init->list.data[j]->loc, "duplicate argument '%s' in function definition",
                 init->list.data[j]->name);
      return false;
    }
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
      diag_error(sema->cx, vals[j]->loc, "argument '%s' of '%s.__init__' must be %s, not %s", p->name, owner->name,
                 p->type->name, py_type_name(vals[j]->ty));
      return false;
    }
    bind_hidden(sema, e, hidden[j], vals[j], vals[j]->loc);
  }
  Ast *body = ast_clone(sema->cx, init);
  const Ast *base = base_of(sema, owner);
  AstList seg = {0};
  int before = sema->cx->nerrors;
  Body b = {body, NULL, false, 0, AST_COUNT};
  for (int i = 0; i <= body->body.len && sema->cx->nerrors == before; i++) {
    Ast *st = i < body->body.len ? body->body.data[i] : NULL;
    if (st) rename_names(st, own.data, hidden, own.len);
    const Ast *named = st ? explicit_init(sema, st, hidden[0]) : NULL;  // Base.__init__(self, ...)
    if (st && !named && !super_init(st)) {
      vec_push(&sema->cx->arena, &seg, st);
      continue;
    }
    check_block(sema, &b, &seg);  // the statements up to super().__init__(...) (or the end)
    for (int k = 0; k < seg.len; k++) vec_push(&sema->cx->arena, &e->unrolled, seg.data[k]);
    seg.len = 0;
    if (named) {
      AstList rest = {0};
      for (int k = 1; k < st->lhs->list.len; k++) vec_push(&sema->cx->arena, &rest, st->lhs->list.data[k]);
      st->lhs->list = rest;
    }
    const Ast *runs = named ? named : base;
    const char *nn_base = st && !named && !base ? nn_container_base(sema, owner) : NULL;
    if (nn_base && !init_modules(sema, e, inst, nn_base, st->lhs)) break;  // super().__init__(*layers)
    if (!st || !runs || (!named && st->lhs->lhs->kind != AST_CALL) || sema->cx->nerrors > before) continue;
    if (!check_args(sema, st->lhs) || !run_init(sema, e, inst, runs, &st->lhs->list, depth + 1)) break;
  }
  if (sema->cx->nerrors > before) {
    diag_note(sema->cx, at, "in this call of %s.__init__", owner->name);
    return false;
  }
  if (b.returned && b.ret && b.ret->kind != TY_NONE) {
    diag_error(sema->cx, at, "__init__() should return None, not '%s'", py_type_name(b.ret));
    return false;
  }
  return true;
}

// cls(args) at call e: the instance, __init__'s body run here (the file comment).
static TType *construct(Sema *sema, Ast *e, const TType *cls_t, AstList *args) {
  const Ast *cls = cls_t->ctor;
  TType *inst = ty_module(sema, arena_printf(&sema->cx->arena, "__main__.%s", cls->name));
  inst->ctor = cls;
  obj_init(sema, inst, NULL, 0);
  const char *nn_base = nn_container_base(sema, cls);
  if (nn_base && !init_modules(sema, e, inst, nn_base, NULL)) return poison(sema);  // empty until its __init__
  return run_init(sema, e, inst, cls, args, 0) ? inst : poison(sema);
}

// The instance a value of a method's super() stands for (its self), else t itself.
static TType *self_of(TType *t) { return !strcmp(t->module, "builtins.super") ? t->elems[0] : t; }

TType *super_value(Sema *sema, Ast *e) {
  Loc at = call_loc(e);
  if (e->list.len) {
    diag_error(sema->cx, at, "super() with arguments is not supported: write super() in a method");
    return poison(sema);
  }
  if (!sema->method_self) {
    diag_error(sema->cx, at, "RuntimeError: super(): no arguments");
    return poison(sema);
  }
  const Ast *base = base_of(sema, sema->method_cls);
  const TType *mods = base ? NULL : derived_modules(sema, sema->method_self);
  if (mods) return (TType *)mods;  // super().forward(x) of class Stack(nn.Sequential): its container's
  if (!base) {
    diag_error(sema->cx, at, "super() in '%s': its base has no method of its own (nn.Module's forward is not "
               "defined; super().__init__() alone does nothing)", sema->method_cls->name);
    return poison(sema);
  }
  TType *t = ty_module(sema, "builtins.super");
  t->ctor = base;
  t->attrs = sema->method_self->attrs;
  t->elems = arena_alloc(&sema->cx->arena, sizeof(TType *));
  t->elems[0] = sema->method_self;
  t->nelem = 1;
  return t;
}

// Whether parameter type t is one of typing's that Python does not check and tdsl does not take
// as a type (Optional[Tuple[torch.FloatTensor]] of transformers' GPT2MLP.forward): any value.
static bool typing_wrapper(const Ast *t) {
  static const char *const names[] = {"Optional", "Union", "Tuple", "List", "Dict", "Sequence", "Iterable", "Type",
                                      NULL};
  for (int i = 0; t->kind == AST_TYPE && t->dtype == DT_COUNT && t->name && names[i]; i++)
    if (!strcmp(t->name, names[i])) return true;
  return false;
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
    if ((p->type->kind == AST_SCALAR_TYPE && !p->type->name) || typing_wrapper(p->type))
      p->type = ast_scalar_type(sema->cx, ANY_TYPE, p->type->loc);
    if (!p->rhs) continue;
    if (is_poison(check_expr(sema, p->rhs))) return poison(sema);
    const char *h = arena_printf(&sema->cx->arena, "(def %d) =%s", id, p->name);
    bind_hidden(sema, e, h, p->rhs, p->rhs->loc);
    p->rhs = ast_name(sema->cx, h, p->rhs->loc);
    check_expr(sema, p->rhs);
  }
  return def_value(sema, def);
}

TType *def_value(Sema *sema, Ast *def) {
  int before = sema->cx->nerrors;
  local_sig(sema, def);
  if (sema->cx->nerrors > before) return poison(sema);
  TType *t = ty_module(sema, "builtins.function");
  t->ctor = def;
  return t;
}

// The class of the file defined by cls as a value (a @classmethod's cls).
static TType *class_of(Sema *sema, const Ast *cls) {
  TType *t = ty_module(sema, "builtins.type");
  t->ctor = cls;
  return t;
}

// Method m of instance inst called at e on args (self first; a @classmethod's class, none for
// a @staticmethod); owner the class defining it (a super() in it names owner's base).
static TType *call_method(Sema *sema, Ast *e, TType *inst, const Ast *m, const Ast *owner, AstList *args) {
  inst = self_of(inst);
  TType *f = method_value(sema, e, m);
  if (is_poison(f)) return f;
  AstList all = {0};
  if (m->deco == 'c') vec_push(&sema->cx->arena, &all, value_node(sema, class_of(sema, inst->ctor), e->loc));
  else if (!m->bval) vec_push(&sema->cx->arena, &all, value_node(sema, inst, e->loc));  // bval: @staticmethod
  for (int i = 0; i < args->len; i++) vec_push(&sema->cx->arena, &all, args->data[i]);
  const Ast *cls = sema->method_cls;
  TType *self = sema->method_self;
  sema->method_cls = owner, sema->method_self = inst;
  TType *r = lambda_call(sema, e, f, &all);
  sema->method_cls = cls, sema->method_self = self;
  return r;
}

TType *class_call(Sema *sema, Ast *e, const TType *f, AstList *args) {
  if (is_class(f)) return construct(sema, e, f, args);
  const Ast *owner = NULL;
  const Ast *fwd = method_in(sema, f->ctor, "forward", &owner);
  const TType *mods = derived_modules(sema, f);
  if (!fwd && mods) return container_call(sema, e, mods, args);  // a Sequential's forward
  if (!fwd) {
    diag_error(sema->cx, e->kind == AST_CALL ? call_loc(e) : e->loc, "NotImplementedError: Module [%s] is missing "
               "the required \"forward\" function", f->ctor->name);
    return poison(sema);
  }
  return call_method(sema, e, (TType *)f, fwd, owner, args);
}

// type(v).__name__ and v.__class__.__name__ (e the __name__ attribute): the name of v's class as a
// str, which e becomes (Net, Linear, Sequential, Tensor, int ...); NULL when e is neither form.
TType *class_name_of(Sema *sema, Ast *e) {
  const Ast *l = e->lhs;
  Ast *v = !strcmp(e->name, "__name__") && l->kind == AST_CALL && !l->lhs && !strcmp(l->name, "type") &&
                   l->list.len == 1 && l->list.data[0]->kind != AST_KWARG
               ? l->list.data[0]
           : !strcmp(e->name, "__name__") && l->kind == AST_ATTR && !strcmp(l->name, "__class__") ? l->lhs : NULL;
  if (!v || (l->kind == AST_CALL && (find_local(sema, "type") || find_const(sema, "type")))) return NULL;
  TType *t = check_expr(sema, v);
  if (is_poison(t)) return t;
  const char *n = py_type_name(t);  // str, list, tuple, dict ...
  if (is_container(t)) n = t->container;
  else if (is_instance(t)) n = t->ctor->name;
  else if (t->kind == TY_MODULE && t->ctor && !strncmp(t->module, "torch.nn.", 9)) n = t->module + 9;
  else if (is_tensor(t) && !t->wrapped) n = "Tensor";
  else if (t->kind == TY_SCALAR || is_tensor(t)) n = t->dtype == DT_BOOL ? "bool" : dtype_is_float(t->dtype) ? "float"
                                                                                                            : "int";
  Ast *s = ast_str(sema->cx, n, e->loc);
  *e = *s;
  return check_expr(sema, e);
}

// ---- nn.Module's walk of its modules: modules(), children(), named_modules(), named_children() ----
void walk_children(Sema *sema, ModWalk *w, const TType *t, const char *prefix, Ast *path, bool deep) {
  Ctx *cx = sema->cx;
  const char *dot = *prefix ? "." : "";
  if (is_container(t)) {
    for (int i = 0; i < t->nelem; i++) {
      const TType *c = t->elems[i];
      if (!is_nn_module(sema, c)) continue;  // None
      bool dict = t->kind == TY_DICT;
      const char *key = dict ? t->keys[i]->module : arena_printf(&cx->arena, "%d", i);
      Ast *k = dict ? ast_str(cx, key, path->loc) : ast_int(cx, i, path->loc);
      Ast *at = ast_index(cx, ast_clone(cx, path), ast_list_of(cx, k, path->loc), path->loc, path->loc);
      walk_add(sema, w, c, arena_printf(&cx->arena, "%s%s%s", prefix, dot, key), at, deep);
    }
    return;
  }
  for (int k = 0; t->attrs && k < t->attrs->n; k++) {
    const TType *c = t->attrs->ty[k];
    const char *name = t->attrs->names[k];
    if (!c) continue;
    if (!strcmp(name, MODULES_ATTR)) {  // class Stack(nn.Sequential): its modules, as its own
      walk_children(sema, w, c, prefix, ast_attr(cx, ast_clone(cx, path), name, path->loc, path->loc), deep);
      continue;
    }
    if (!is_nn_module(sema, c)) continue;
    Ast *at = ast_attr(cx, ast_clone(cx, path), name, path->loc, path->loc);
    walk_add(sema, w, c, arena_printf(&cx->arena, "%s%s%s", prefix, dot, name), at, deep);
  }
}

void walk_add(Sema *sema, ModWalk *w, const TType *t, const char *name, Ast *path, bool deep) {
  for (int i = 0; i < w->n && !w->repeats; i++)
    if (w->ty[i] == t) return;  // a module held twice: once, as PyTorch's memo keeps it
  if (w->n == MAX_LIST) return;
  w->ty[w->n] = t, w->name[w->n] = name, w->path[w->n] = path;
  w->n++;
  if (deep) walk_children(sema, w, t, name, path, deep);
}

// The first module of walk w whose training mode changes what it computes (a dropout with p > 0, a
// BatchNorm's batch statistics, a layer made of modules with a dropout), or -1.
static int trains_differently(Sema *sema, const ModWalk *w) {
  for (int i = 0; i < w->n; i++) {
    const TType *t = w->ty[i];
    if (t->kind != TY_MODULE || is_instance(t) || strncmp(t->module, "torch.nn.", 9)) continue;
    const char *cls = t->module + 9;
    if (!strncmp(cls, "BatchNorm", 9) || is_composite(t)) return i;
    const TType *p = strstr(cls, "Dropout") ? nn_arg(sema, t, "p") : NULL;
    if (p && !(is_scalar(p) && p->fval == 0 && p->ival == 0)) return i;
  }
  return -1;
}

// m.eval(), m.train(False), m.requires_grad_(...), m.zero_grad(): m itself, which e becomes (tdsl's
// modules are in eval mode and have no gradients); m.train() of a model whose training mode computes
// otherwise, the located error. NULL for any other method.
static TType *module_mode(Sema *sema, Ast *e, const TType *t) {
  bool train = !strcmp(e->name, "train"), zero = !strcmp(e->name, "zero_grad");
  if (!train && !zero && strcmp(e->name, "eval") && strcmp(e->name, "requires_grad_")) return NULL;
  if (!check_args(sema, e)) return poison(sema);
  int max = train || zero || !strcmp(e->name, "requires_grad_") ? 1 : 0;
  if (e->list.len > max) {
    diag_error(sema->cx, e->list.data[max]->loc, "%s() takes %d positional argument%s but %d were given", e->name,
               max + 1, max ? "s" : "", e->list.len + 1);
    return poison(sema);
  }
  const Ast *mode = e->list.len ? e->list.data[0] : NULL;
  if (mode && mode->kind == AST_KWARG) mode = mode->rhs;
  if (train && (!mode || !is_scalar(mode->ty) || mode->ty->ival)) {
    ModWalk w = {0};
    walk_add(sema, &w, t, "", ast_clone(sema->cx, e->lhs), true);
    int i = trains_differently(sema, &w);
    if (i >= 0) {
      diag_error(sema->cx, e->oploc, "train(): tdsl compiles modules in eval mode, and %s%s%s (%s) computes "
                 "otherwise in training mode: call eval() or train(False)", *w.name[i] ? "'" : "the module itself",
                 w.name[i], *w.name[i] ? "'" : "", py_type_name(w.ty[i]));
      return poison(sema);
    }
  }
  if (!strcmp(e->name, "requires_grad_")) {  // each parameter's p.requires_grad (sema_state.c)
    if (mode && (!is_scalar(mode->ty) || mode->ty->dtype != DT_BOOL)) {
      diag_error(sema->cx, mode->loc, "requires_grad_(): argument 'requires_grad' must be bool, not %s",
                 py_type_name(mode->ty));
      return poison(sema);
    }
    module_requires_grad(sema, (TType *)t, !mode || mode->ty->ival);
  }
  if (zero) {  // None, once the receiver is made
    Ast *st = ast_new(sema->cx, AST_EXPR, e->loc);
    st->lhs = e->lhs;
    vec_push(&sema->cx->arena, &e->unrolled, st);
    return ty_new(sema, TY_NONE);
  }
  Ast *recv = e->lhs;
  *e = *recv;
  return e->ty;
}

// recv.modules() (children(), named_modules(), named_children()) at call e of module t: the list
// of those modules (of ("name", module) tuples), which e becomes; NULL for any other method.
TType *module_walk(Sema *sema, Ast *e, const TType *t) {
  TType *mode = module_mode(sema, e, t);
  if (!mode) mode = module_state(sema, e, (TType *)t);  // parameters(), state_dict() ... (sema_state.c)
  if (mode) return mode;
  bool named = !strncmp(e->name, "named_", 6);
  const char *what = e->name + (named ? 6 : 0);
  bool all = !strcmp(what, "modules");
  if (!all && strcmp(what, "children")) return NULL;
  if (e->list.len) {
    diag_error(sema->cx, e->list.data[0]->loc, "%s() of tdsl takes no arguments (PyTorch's memo, prefix and "
               "remove_duplicate keep their defaults)", e->name);
    return poison(sema);
  }
  ModWalk w = {0};
  Ast *recv = ast_clone(sema->cx, e->lhs);
  if (all) walk_add(sema, &w, t, "", recv, true);
  else walk_children(sema, &w, t, "", recv, false);
  if (w.n == MAX_LIST) {
    diag_error(sema->cx, e->oploc, "%s(): more than %d modules: tdsl walks at most that many", e->name, MAX_LIST - 1);
    return poison(sema);
  }
  Ast *list = ast_new(sema->cx, AST_LIST, e->loc);
  for (int i = 0; i < w.n; i++) {
    Ast *item = w.path[i];
    if (named) {
      item = ast_new(sema->cx, AST_TUPLE, e->loc);
      vec_push(&sema->cx->arena, &item->list, ast_str(sema->cx, w.name[i], e->loc));
      vec_push(&sema->cx->arena, &item->list, w.path[i]);
    }
    vec_push(&sema->cx->arena, &list->list, item);
  }
  *e = *list;
  return check_expr(sema, e);
}

// inst.name(args) at call e (its arguments not yet checked): a method's call, or the call of
// an attribute holding a callable (self.act(x)); NULL when inst has neither (the caller's error).
TType *instance_method_call(Sema *sema, Ast *e, TType *inst) {
  const Ast *owner = NULL;
  const Ast *m = method_in(sema, inst->ctor, e->name, &owner);
  int k = obj_find(inst->attrs, e->name);
  if (!m && k < 0 && !strcmp(e->name, "eval") && !e->list.len) {  // Block(config).eval(): the instance, in eval
    Ast *st = ast_new(sema->cx, AST_EXPR, e->loc);                  // mode already (its making lowered here)
    st->lhs = e->lhs;
    vec_push(&sema->cx->arena, &e->unrolled, st);
    return inst;
  }
  if (!m && k < 0 && class_is_module(sema, inst->ctor)) {  // self.modules() ...: nn.Module's walk
    TType *r = module_walk(sema, e, inst);
    if (r) return r;
  }
  if (!m && k < 0 && derived_modules(sema, inst)) {  // self.append(m): its container's method
    e->lhs = modules_node(sema, e->lhs);
    return check_args(sema, e) ? container_method(sema, e) : poison(sema);
  }
  if (!m && k < 0) return NULL;
  if (!check_args(sema, e)) return poison(sema);
  if (m && k < 0 && m->deco != 'p') return call_method(sema, e, inst, m, owner, &e->list);
  Ast *at = attr_of_call(sema, e);
  return call_attr_value(sema, e, m && m->deco == 'p' ? property_value(sema, at, inst) : obj_read(sema, at, inst, k));
}

Ast *attr_of_call(Sema *sema, const Ast *e) {
  Ast *at = ast_new(sema->cx, AST_ATTR, e->loc);
  at->name = e->name;
  at->oploc = e->oploc;
  return at;
}

TType *call_attr_value(Sema *sema, Ast *e, TType *v) {
  if (is_poison(v)) return v;
  if (is_container(v)) return container_call(sema, e, v, &e->list);  // self.net(x) of a Sequential
  if (v->kind != TY_MODULE || !v->ctor) {
    diag_error(sema->cx, e->oploc, "'%s' object is not callable", py_type_name(v));
    return poison(sema);
  }
  return module_apply(sema, e, v, &e->list);
}

// Cls.name(args) at call e of a @staticmethod name of class cls (or a base): its call on
// the arguments as given (call false: Cls.name, the function itself); NULL when cls has no
// such static method (the caller's error).
TType *static_method(Sema *sema, Ast *e, TType *cls, bool call) {
  const Ast *owner = NULL;
  const Ast *m = method_in(sema, cls->ctor, e->name, &owner);
  if (!m || (!m->bval && m->deco != 'c')) return NULL;
  if (call && !check_args(sema, e)) return poison(sema);
  if (m->deco == 'c' && call) return call_method(sema, e, cls, m, owner, &e->list);  // Cls.make(x): cls is Cls
  if (m->deco == 'c') return bound_method(sema, e, cls);
  TType *f = method_value(sema, e, m);
  return is_poison(f) || !call ? f : lambda_call(sema, e, f, &e->list);
}

// inst.name of a @property name of inst's class (or a base): its getter's value, e becoming
// the getter's call, as Python's attribute lookup runs it; NULL when name is no property.
TType *property_value(Sema *sema, Ast *e, TType *inst) {
  const Ast *owner = NULL;
  const Ast *m = method_in(sema, inst->ctor, e->name, &owner);
  if (!m || m->deco != 'p') return NULL;
  e->kind = AST_CALL;  // lowered as the call it is
  e->list = (AstList){0};
  return call_method(sema, e, inst, m, owner, &e->list);
}

// Whether name is a @property of instance inst's class (or a base): a store to it runs the
// property's setter in Python, which a getter alone lacks (AttributeError).
bool is_property(Sema *sema, const TType *inst, const char *name) {
  const Ast *m = is_instance(inst) ? method_in(sema, inst->ctor, name, NULL) : NULL;
  return m && m->deco == 'p';
}

// inst.name = v at e (parse.c's setattr(inst, 'name', v)) of a property with a @name.setter: the
// setter's call on v; NULL when the property has none (the caller's AttributeError).
TType *property_store(Sema *sema, Ast *e, TType *inst, const char *name, Ast *v) {
  const Ast *owner = NULL;
  const Ast *m = method_of(sema, inst->ctor, name, &owner, true);
  if (!m) return NULL;
  AstList args = {0};
  vec_push(&sema->cx->arena, &args, v);
  Ast *call = ast_new(sema->cx, AST_CALL, e->loc);
  call->name = m->name;
  call->oploc = e->list.data[1]->loc;
  TType *r = call->ty = call_method(sema, call, inst, m, owner, &args);
  if (is_poison(r)) return r;
  Ast *st = ast_new(sema->cx, AST_EXPR, e->loc);  // lowered where the store runs: the setter's call
  st->lhs = call;
  vec_push(&sema->cx->arena, &e->unrolled, st);
  return ty_new(sema, TY_NONE);
}

// inst.name of a method not set as an attribute: the bound method (functools.partial of the
// method on self; of a @classmethod, on the class, also as Cls.name), as
// `self.feed_forward_chunk` is handed on; NULL when there is none.
TType *bound_method(Sema *sema, Ast *e, TType *inst) {
  const Ast *m = method_in(sema, inst->ctor, e->name, NULL);
  if (!m) return NULL;
  if (is_class(inst) && m->deco != 'c') return NULL;
  inst = self_of(inst);
  TType *f = method_value(sema, e, m);
  if (is_poison(f) || m->bval) return f;  // a @staticmethod is the function itself
  if (m->deco == 'c' && !is_class(inst)) inst = class_of(sema, inst->ctor);  // self.make: bound to the class
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
