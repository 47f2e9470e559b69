// frontend/sema_expr.c: expressions: literals, names (locals, then constants), operators,
// calls of builtins and of user functions, attributes and list values. An operator on
// two Python scalars folds; any other resolves to its builtin (a + b is add).
#include "frontend/sema_internal.h"

#include <math.h>
#include <string.h>

// ============================================================================
// Names
// ============================================================================
// A name's older binding leaves the scope as the new one enters it: the scope holds each
// name once, so a body that rebinds one name N times costs N lookups of that list.
void bind_name(Sema *sema, const char *name, TType *t, Loc loc) {
  for (Sym **p = &sema->scope; *p; p = &(*p)->next)
    if (!strcmp((*p)->name, name)) {
      *p = (*p)->next;
      break;
    }
  Sym *s = arena_alloc(&sema->cx->arena, sizeof *s);
  s->name = name;
  s->ty = t;
  s->loc = loc;
  s->next = sema->scope;
  sema->scope = s;
}
void unbind_name(Sema *sema, const char *name) {
  for (Sym **p = &sema->scope; *p; p = &(*p)->next)
    if (!strcmp((*p)->name, name)) {
      *p = (*p)->next;
      return;
    }
}

void bind_expr(Sema *sema, const char *name, Ast *v, Loc loc) {
  v = seq_now(sema, v);  // b = a of a list: a's list as it is now, not whatever a is later
  bind_name(sema, name, v->ty, loc);
  // a sequence's elements; a tensor's expression (literal_of: the values of a torch.tensor)
  if (v->ty->kind == TY_TUPLE || v->ty->kind == TY_LIST || v->ty->kind == TY_DICT || v->ty->kind == TY_TENSOR)
    sema->scope->src = v;
}

Sym *find_local(Sema *sema, const char *name) {
  for (Sym *s = sema->scope; s; s = s->next)
    if (!strcmp(s->name, name)) return s;
  return NULL;
}
Const *find_const(Sema *sema, const char *name) {
  for (int i = 0; i < sema->consts.len; i++)
    if (!strcmp(sema->consts.data[i].name, name)) return &sema->consts.data[i];
  return NULL;
}

static const char *const module_names[] = {"torch", "nn", "F", "math", "einops"};

// The names a body sees: its locals, the constants, the functions and the modules.
static void suggest_names(Sema *sema, Suggest *sg) {
  for (Sym *l = sema->scope; l; l = l->next) suggest(sg, l->name);
  for (int i = 0; i < sema->consts.len; i++) suggest(sg, sema->consts.data[i].name);
  for (int i = 0; i < sema->p->fns.len; i++) suggest(sg, sema->p->fns.data[i]->name);
  for (size_t i = 0; i < sizeof module_names / sizeof module_names[0]; i++) suggest(sg, module_names[i]);
}

static TType *check_name(Sema *sema, Ast *e) {
  Sym *s = find_local(sema, e->name);
  if (!s) s = find_dim(sema, e->name);
  if (s) return s->ty;
  Const *c = find_const(sema, e->name);
  if (c) return c->ty;
  if (sema_find_fn(sema->p, e->name)) return function_named(sema, e);  // a user fn as a value
  const char *module = module_named(sema, e->name);  // torch, nn, F, math, and the imports' names
  if (module) return ty_module(sema, module);
  Ast *attr = imported_attr(sema, e);  // from math import pi
  if (attr) {
    TType *t = check_expr(sema, attr);
    if (!is_poison(t) && t->kind != TY_SCALAR && t->kind != TY_MODULE && t->kind != TY_DTYPE && t->kind != TY_STR) {
      diag_error(sema->cx, e->loc, "'%s' is a function: call it as %s(...)", e->name, e->name);
      return poison(sema);
    }
    return t;
  }
  if (inert_use(sema, e->loc, e->name)) return poison(sema);  // np, DropPath: imported from numpy, timm
  Suggest sg = suggest_start(e->name);
  suggest_names(sema, &sg);
  diag_error(sema->cx, e->loc, "use of undeclared name '%s'%s", e->name, suggestion(sema, &sg));
  return poison(sema);
}

// torch's dtype attributes (torch.float32, torch.long, ...) that tdsl has.
static const struct {
  const char *name;
  DType dt;
} torch_dtypes[] = {
    {"float32", DT_F32}, {"float", DT_F32},   {"float64", DT_F64}, {"double", DT_F64}, {"float16", DT_F16},
    {"half", DT_F16},    {"bfloat16", DT_BF16}, {"int32", DT_I32}, {"int", DT_I32},    {"int64", DT_I64},
    {"long", DT_I64},    {"bool", DT_BOOL},     {"uint8", DT_U8},  {"int8", DT_I8},    {"int16", DT_I16},
    {"short", DT_I16},   {"complex64", DT_C64}, {"cfloat", DT_C64}, {"complex128", DT_C128},
    {"cdouble", DT_C128},
};

// The forms bit a call through module m takes (F_TORCH, F_NNF); 0 for a module with no
// functions of ours.
static int module_form(const TType *m) {
  return !strcmp(m->module, "torch")                 ? F_TORCH
         : !strcmp(m->module, "torch.nn.functional") ? F_NNF
         : !strcmp(m->module, "einops")              ? F_EINOPS
                                                     : 0;
}

// Python's math module: its constants, and the functions of it that tdsl folds on a
// Python number (fold_math).
static const struct {
  const char *name;
  double v;
} math_constants[] = {{"pi", 3.14159265358979323846}, {"e", 2.71828182845904523536},
                      {"tau", 6.28318530717958647692}, {"inf", INFINITY}, {"nan", NAN}};
static const char *const math_functions[] = {"sqrt", "exp", "log", "log2", "sin", "cos",
                                             "tan", "tanh", "erf", "floor", "ceil"};

static bool is_math_function(const char *name) {
  for (size_t i = 0; i < sizeof math_functions / sizeof math_functions[0]; i++)
    if (!strcmp(name, math_functions[i])) return true;
  return false;
}

// The spelling of an op in the form of forms it has, or NULL: 'torch.cat', 'F.gelu', 'x.view(...)'.
static const char *spelling(Sema *sema, const char *name, int forms) {
  const BuiltinDef *d = builtin_find(name);
  for (int i = 0; i < 4 && !d; i++) d = builtin_find_form(name, 1 << i);
  if (!d) return NULL;
  if ((forms & F_TORCH) && builtin_find_form(name, F_TORCH)) return arena_printf(&sema->cx->arena, "torch.%s", name);
  if ((forms & F_NNF) && builtin_find_form(name, F_NNF)) return arena_printf(&sema->cx->arena, "F.%s", name);
  if ((forms & F_FN) && builtin_find_form(name, F_FN)) return name;
  if ((forms & F_METH) && builtin_find_form(name, F_METH)) return arena_printf(&sema->cx->arena, "x.%s(...)", name);
  return NULL;
}

// e, m.NAME or m.NAME(...), names nothing of module m: what PyTorch spells otherwise, a
// near name of m, or the op where another module (or a tensor) has it.
static void module_miss(Sema *sema, const Ast *e, const TType *m) {
  int form = module_form(m);
  const char *hint = form ? pytorch_hint(e->name, form) : NULL;
  if (hint) {
    diag_error(sema->cx, e->oploc, "%s.%s() is not supported: %s", form == F_NNF ? "F" : m->module, e->name, hint);
    return;
  }
  Suggest sg = suggest_start(e->name);
  bool math = !strcmp(m->module, "math"), torch = !strcmp(m->module, "torch");
  for (size_t i = 0; math && i < sizeof math_constants / sizeof math_constants[0]; i++) suggest(&sg, math_constants[i].name);
  for (size_t i = 0; math && i < sizeof math_functions / sizeof math_functions[0]; i++) suggest(&sg, math_functions[i]);
  for (size_t i = 0; torch && i < sizeof torch_dtypes / sizeof torch_dtypes[0]; i++) suggest(&sg, torch_dtypes[i].name);
  if (torch) suggest(&sg, "nn");
  if (!strcmp(m->module, "torch.nn")) suggest(&sg, "functional");
  if (form) suggest_builtins(&sg, form);
  const char *more = suggestion(sema, &sg);  // the op where another module or a tensor has it, first
  const char *other = form ? spelling(sema, e->name, (F_TORCH | F_NNF | F_METH) & ~form) : NULL;
  if (other) more = arena_printf(&sema->cx->arena, ". Did you mean: '%s'?", other);
  diag_error(sema->cx, e->oploc, "module '%s' has no attribute '%s'%s", m->module, e->name, more);
}

// m.NAME without a call: a submodule, a dtype or a constant.
static TType *module_attr(Sema *sema, Ast *e, const TType *m) {
  for (size_t i = 0; !strcmp(m->module, "math") && i < sizeof math_constants / sizeof math_constants[0]; i++)
    if (!strcmp(e->name, math_constants[i].name)) return ty_float(sema, math_constants[i].v);
  if (!strcmp(m->module, "torch")) {
    for (size_t i = 0; i < sizeof torch_dtypes / sizeof torch_dtypes[0]; i++)
      if (!strcmp(e->name, torch_dtypes[i].name)) return ty_dtype(sema, torch_dtypes[i].dt);
    if (!strcmp(e->name, "nn")) return ty_module(sema, "torch.nn");
    TType *layout = torch_layout_attr(sema, e->name);
    if (layout) return layout;
  }
  if (!strcmp(m->module, "torch.nn") && !strcmp(e->name, "functional")) return ty_module(sema, "torch.nn.functional");
  if (!strcmp(m->module, "torch.nn") && nn_names_class(e->name)) return function_named(sema, e);  // nn.LayerNorm
  static const char *const other_dtypes[] = {"complex32", "chalf", "qint8", "qint32", "quint8", "quint4x2", "quint2x4"};
  for (size_t i = 0; !strcmp(m->module, "torch") && i < sizeof other_dtypes / sizeof other_dtypes[0]; i++) {
    if (!strcmp(e->name, other_dtypes[i])) {
      diag_error(sema->cx, e->oploc, "dtype torch.%s is not supported by tdsl", e->name);
      return poison(sema);
    }
  }
  const BuiltinDef *d = module_form(m) ? builtin_find_form(e->name, module_form(m)) : NULL;
  if (d) return function_named(sema, e);  // act = F.relu: a function value (sema_lambda.c)
  module_miss(sema, e, m);
  return poison(sema);
}

static bool ident_char(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// The location of a declaration's name inside its whole-construct loc.
Loc name_loc(const Ast *d) {
  Loc l = d->loc;
  if (!l.file || !d->name) return l;
  size_t n = strlen(d->name);
  const char *t = l.file->text;
  for (uint32_t i = l.begin; i + n <= l.end && i + n <= l.file->len; i++) {
    bool start = i == l.begin || !ident_char(t[i - 1]);
    bool end = i + n >= l.file->len || !ident_char(t[i + n]);
    if (start && end && !memcmp(t + i, d->name, n)) {
      l.begin = i;
      l.end = i + (uint32_t)n;
      return l;
    }
  }
  return d->loc;
}

// ============================================================================
// Operators and calls
// ============================================================================
static int same_value(Sema *sema, const TType *a, const TType *b, Loc loc);

// e = lhs op rhs with lhs already checked (its type a).
static TType *check_binary_one(Sema *sema, Ast *e, TType *a) {
  TType *b = check_expr(sema, e->rhs);
  if (is_poison(a) || is_poison(b)) return poison(sema);
  int op = e->op;
  TD_ASSERT(op >= 0 && op < BIN_COUNT);
  if ((op == BIN_ADD || op == BIN_MUL) && (is_container(a) || is_container(b))) return container_binary(sema, e);
  if ((op == BIN_ADD || op == BIN_MUL) && (a->kind == TY_TUPLE || a->kind == TY_LIST)) return seq_binary(sema, e);
  bool oka = is_tensor(a) || is_scalar(a), okb = is_tensor(b) || is_scalar(b);
  if ((op == BIN_EQ || op == BIN_NE) && !is_tensor(a) && !is_tensor(b) && (!oka || !okb)) {
    int r = same_value(sema, a, b, e->oploc);  // x.shape == (3, 4), x.dtype == torch.half, s == 'mean'
    return r < 0 ? poison(sema) : ty_bool(sema, (op == BIN_EQ) == (r == 1));
  }
  if (!oka || !okb || (op == BIN_MATMUL && (!is_tensor(a) || !is_tensor(b)))) {
    diag_error(sema->cx, e->oploc, "unsupported operand type(s) for %s: '%s' and '%s'", binop_text((BinOp)op),
               py_type_name(a), py_type_name(b));
    return poison(sema);
  }
  if (is_scalar(a) && is_scalar(b)) {
    TType *r = fold_binary(sema, e->oploc, op, a, b);
    return r ? r : poison(sema);
  }
  const BuiltinDef *d = operator_row(op);
  e->bi = &d->b;
  if (op == BIN_MATMUL) return matmul_node(sema, e, e->lhs, e->rhs, e->oploc);
  return binary_node(sema, e, d->b.op, e->lhs, e->rhs, e->oploc);
}

// a + b + c + ... is ((a + b) + c) + ...: the chain of left operands is checked from the
// innermost out in a loop, so a flat expression of any length costs no depth of C stack.
static TType *check_binary(Sema *sema, Ast *e) {
  VEC(Ast *) chain = {0};
  Ast *a = e;
  for (; a->kind == AST_BINARY; a = a->lhs) vec_push(&sema->cx->arena, &chain, a);
  TType *t = check_expr(sema, a);
  for (int i = chain.len - 1; i >= 0; i--) {
    t = check_binary_one(sema, chain.data[i], t);
    chain.data[i]->ty = t;
  }
  return t;
}

static TType *check_unary(Sema *sema, Ast *e) {
  TType *a = check_expr(sema, e->lhs);
  if (is_poison(a)) return poison(sema);
  if (is_scalar(a)) {
    TType *r = fold_unary(sema, e->oploc, e->op, a);
    return r ? r : poison(sema);
  }
  if (!is_tensor(a)) {
    diag_error(sema->cx, e->oploc, "bad operand type for unary %s: '%s'", e->op == UN_NEG ? "-" : "~", py_type_name(a));
    return poison(sema);
  }
  const char *name = e->op == UN_NEG ? "neg" : a->dtype == DT_BOOL ? "logical_not" : "bitwise_not";
  const BuiltinDef *d = builtin_find(name);
  e->bi = &d->b;
  return unary_node(sema, e, d->b.op, e->lhs, e->oploc);
}

// The arguments of call e, in order (a keyword argument's node gets its value's type);
// false when one of them is poison.
bool check_args(Sema *sema, Ast *e) {
  return check_items(sema, &e->list);
}

// The items of a call's arguments or of a tuple or list display, checked; a starred item
// (*t) is replaced by the items it unpacks (sema_python.c). false after an error.
bool check_items(Sema *sema, AstList *list) {
  bool ok = true, starred = false;
  for (int i = 0; i < list->len; i++) {
    Ast *a = list->data[i];
    TType *t = check_expr(sema, a->kind == AST_KWARG || a->kind == AST_STARRED ? a->rhs ? a->rhs : a->lhs : a);
    if (a->kind == AST_KWARG || a->kind == AST_STARRED) a->ty = t;
    if (is_poison(t)) ok = false;
    starred |= a->kind == AST_STARRED;
  }
  return ok && (!starred || unpack_starred(sema, list));
}

// Python's builtins tdsl has, for suggestions: those of numbers, and range, enumerate
// and zip of a for loop.
static const char *const python_builtins[] = {"len", "float", "int", "bool", "min", "max", "range", "enumerate", "zip"};

// A call NAME(...) of no function: a for loop's iterable written elsewhere, PyTorch's
// spelling of something tdsl spells otherwise, a method, or a near name.
static void no_function(Sema *sema, const Ast *e) {
  Loc at = call_loc(e);
  const Sym *local = find_local(sema, e->name);
  if (local && is_poison(local->ty)) return;  // y = <an error>; y(x): the error is said once
  if (inert_use(sema, at, e->name)) return;
  const char *hint = pytorch_hint(e->name, F_FN), *other = spelling(sema, e->name, F_TORCH | F_NNF | F_METH);
  if (!strcmp(e->name, "range") || !strcmp(e->name, "enumerate") || !strcmp(e->name, "zip")) {
    diag_error(sema->cx, at, "%s() is supported only as the iterable of a for loop: for v in %s(...) { ... }", e->name,
               e->name);
  } else if (hint) {
    diag_error(sema->cx, at, "%s() is not supported: %s", e->name, hint);
  } else if (other && builtin_find_form(e->name, F_METH) && !builtin_find_form(e->name, F_TORCH | F_NNF)) {
    diag_error(sema->cx, at, "'%s' is a method: call it as x.%s(...)", e->name, e->name);
  } else {
    Suggest sg = suggest_start(e->name);
    suggest_builtins(&sg, F_FN);
    for (size_t i = 0; i < sizeof python_builtins / sizeof python_builtins[0]; i++) suggest(&sg, python_builtins[i]);
    suggest_names(sema, &sg);
    const char *more = suggestion(sema, &sg);
    if (other) more = arena_printf(&sema->cx->arena, ". Did you mean: '%s'?", other);
    diag_error(sema->cx, at, "use of undeclared name '%s'%s", e->name, more);
  }
}

// The Python attributes of a tensor that are no op of the table (sema_tuple.c's tensor_attr, and x.T).
static const char *const tensor_attrs[] = {"shape", "ndim", "dtype", "mT", "T"};

// x.NAME or x.NAME(...) of a value x that has no such attribute: PyTorch's message, then
// what to write instead (a method PyTorch has and tdsl spells otherwise, the op where it
// is a function, or a near name).
static void no_attribute(Sema *sema, const Ast *e, const TType *self) {
  const char *hint = is_tensor(self) ? pytorch_hint(e->name, F_METH) : NULL;
  if (hint) {
    diag_error(sema->cx, e->oploc, "Tensor.%s() is not supported: %s", e->name, hint);
    return;
  }
  const char *more = "";
  if (is_tensor(self)) {
    Suggest sg = suggest_start(e->name);
    suggest_builtins(&sg, F_METH);
    for (size_t i = 0; i < sizeof tensor_attrs / sizeof tensor_attrs[0]; i++) suggest(&sg, tensor_attrs[i]);
    more = suggestion(sema, &sg);
    const char *other = spelling(sema, e->name, F_TORCH | F_NNF | F_FN);
    if (other) more = arena_printf(&sema->cx->arena, ". Did you mean: '%s'?", other);
  }
  diag_error(sema->cx, e->oploc, "'%s' object has no attribute '%s'%s", py_type_name(self), e->name, more);
}

static TType *check_call(Sema *sema, Ast *e) {
  TType *mt = module_call(sema, e);  // nn modules, imported names, torch._assert (sema_module.c)
  if (mt) return mt;
  if (!e->lhs && !find_local(sema, e->name) && !find_const(sema, e->name)) {
    Ast *fn = sema_find_fn(sema->p, e->name);
    if (fn) return inline_call(sema, e, fn);
    if (!strcmp(e->name, "map") || !strcmp(e->name, "filter"))  // Python's, as a generator (sema_python.c)
      return py_map_form(sema, e) ? check_expr(sema, e) : poison(sema);
    if (!strcmp(e->name, "(with)")) return py_with(sema, e);  // a with statement's managers (sema_python.c)
  }
  if (!e->lhs && !strcmp(e->name, "isinstance") && !find_local(sema, e->name)) return py_isinstance(sema, e);
  if (!e->lhs && !strcmp(e->name, "setattr") && e->op == 1) {  // x.attr = v reached (parse.c)
    TType *set = module_setattr(sema, e);  // of an object: nn.Linear's weight ...
    if (set) return set;
    const TType *obj = e->list.data[0]->ty;
    if (!is_poison(obj))
      diag_error(sema->cx, e->oploc, "cannot assign to an attribute of a %s: tdsl sets the attributes of nn module "
                 "objects and of the file's classes' instances (bind a name, or write x[...] = v)", py_type_name(obj));
    return poison(sema);
  }
  bool args_done = !e->lhs;
  if (!e->lhs) {  // Python's len, float, int, bool; min and max of numbers
    if (!check_args(sema, e)) return poison(sema);
    TType *pv = python_builtin(sema, e);
    if (!pv) pv = dict_builtin(sema, e);  // dict(...) and the display {k: v} (sema_dict.c)
    if (pv) return pv;
  }
  bool bad = false;
  TType *self = e->lhs ? check_expr(sema, e->lhs) : NULL;
  if (self && is_poison(self)) bad = true;
  if (is_instance(self)) {  // self.m(x), self.act(x) of an instance of a class of the file (sema_class.c)
    TType *r = instance_method_call(sema, e, self);
    if (r) return r;
    diag_error(sema->cx, e->oploc, "'%s' object has no attribute '%s'", py_type_name(self), e->name);
    return poison(sema);
  }
  if (self && !bad && !is_instance(self) && is_nn_module(sema, self)) {  // bn.modules(), seq.children() ...
    TType *r = module_walk(sema, e, self);
    if (r) return r;
  }
  if (self && self->kind == TY_MODULE && self->ctor && !is_class(self)) {  // layer.norm1(x) (sema_mha.c)
    TType *r = object_attr_call(sema, e, self);
    if (r) return r;
  }
  if (is_class(self)) {  // Cls.m(x) of a @staticmethod m (sema_class.c)
    TType *r = static_method(sema, e, self, true);
    if (r) return r;
  }
  bool math = self && self->kind == TY_MODULE && !strcmp(self->module, "math");
  const BuiltinDef *only = NULL;  // einops.f: the row only the module has
  if (self && self->kind == TY_MODULE) {  // torch.f(x), F.f(x): the function form, if the module has f
    const BuiltinDef *d = math ? builtin_find(e->name) : builtin_find_form(e->name, module_form(self));
    if (!d || !(math ? is_math_function(e->name) : (d->forms & module_form(self)))) {
      module_miss(sema, e, self);
      return poison(sema);
    }
    if (module_form(self) == F_EINOPS) only = d;
    e->lhs = NULL;
    self = NULL;
  }
  if (!args_done && !check_args(sema, e)) bad = true;
  if (!bad && is_container(self)) return container_method(sema, e);  // ml.append(m) (sema_container.c)
  if (!bad && self && (self->kind == TY_LIST || self->kind == TY_TUPLE)) return list_method(sema, e);
  if (!bad && self && self->kind == TY_DICT) return dict_method(sema, e);
  if (math && !bad && e->list.len != 1) {  // math.sqrt(D): one number
    diag_error(sema->cx, call_loc(e), "math.%s() takes exactly one argument (%d given)", e->name, e->list.len);
    return poison(sema);
  }
  if (math && !bad && !is_scalar(e->list.data[0]->ty)) {
    diag_error(sema->cx, e->list.data[0]->loc, "must be real number, not %s", py_type_name(e->list.data[0]->ty));
    return poison(sema);
  }
  const BuiltinDef *d = only ? only : builtin_find_form(e->name, e->lhs ? F_METH : F_FN);
  if (!d && !bad && e->lhs && is_tensor(self)) {  // x.clamp_(min=0): clamp's result stored into x
    TType *r = inplace_method(sema, e);
    if (r) return r;
  }
  if (!d) {
    if (bad) return poison(sema);
    if (e->lhs && is_tensor(self) && !strcmp(e->name, "T"))  // x.T() calls the tensor x.T
      diag_error(sema->cx, e->oploc, "'Tensor' object is not callable");
    else if (e->lhs)
      no_attribute(sema, e, self);
    else if (module_named(sema, e->name))
      diag_error(sema->cx, call_loc(e), "'module' object is not callable");
    else
      no_function(sema, e);
    return poison(sema);
  }
  if (bad) return poison(sema);
  if (self && !is_tensor(self)) {
    no_attribute(sema, e, self);
    return poison(sema);
  }
  return check_builtin(sema, e, d);
}

TType *check_builtin(Sema *sema, Ast *e, const BuiltinDef *d) {
  if (!strcmp(d->b.name, "where") && !e->lhs && e->list.len == 1 && e->list.data[0]->kind != AST_KWARG) {
    diag_error(sema->cx, call_loc(e), "torch.where(condition) is not supported: it is nonzero(as_tuple=True), whose "
               "shape is the number of true elements, known only when the program runs: choose elementwise with "
               "torch.where(condition, x, y)");
    return poison(sema);
  }
  bool inplace;
  if (!inplace_kwarg(sema, e, d, &inplace)) return poison(sema);  // F.relu(x, inplace=True) (sema_module.c)
  e->bi = &d->b;
  if (!bind_args(sema, e, d, e->lhs)) return poison(sema);
  if (!strncmp(d->b.sig, "input", 5) && d->check != ck_unary && d->check != ck_binary && d->check != ck_add &&
      !get_tensor(sema, e, e->bargs[0], "input"))
    return poison(sema);
  TType *r = complex_operand(e) ? complex_builtin(sema, e, d) : NULL;  // sema_complex.c
  if (!r) r = d->check(sema, e, d);
  return inplace ? inplace_result(sema, e, r) : r;
}

static TType *check_attr(Sema *sema, Ast *e) {
  TType *cn = class_name_of(sema, e);  // type(m).__name__ (sema_class.c)
  if (cn) return cn;
  TType *self = check_expr(sema, e->lhs);
  if (is_poison(self)) return poison(sema);
  if (self->kind == TY_MODULE && self->ctor) return nn_attr(sema, e, self);  // nn.Dropout(0.1).p
  if (self->kind == TY_MODULE) return module_attr(sema, e, self);
  TType *ca = is_container(self) ? container_attr(sema, e) : NULL;  // md.wte of a ModuleDict
  if (ca) return ca;
  if (self->kind == TY_TUPLE || self->kind == TY_LIST) return seq_attr(sema, e);
  if (is_tensor(self) && (!strcmp(e->name, "real") || !strcmp(e->name, "imag"))) return complex_attr(sema, e);
  TType *pv = is_tensor(self) ? tensor_attr(sema, e) : self->kind == TY_DTYPE ? dtype_attr(sema, self->dtype, e->name)
                                                                              : NULL;
  if (pv) return pv;
  if (!strcmp(e->name, "T") && is_tensor(self)) {
    const BuiltinDef *d = builtin_find("T");
    e->bi = &d->b;
    e->bargs = arena_alloc(&sema->cx->arena, sizeof(Ast *));
    e->bargs[0] = e->lhs;
    e->nbargs = 1;
    return ck_T(sema, e, d);
  }
  if (is_tensor(self) && builtin_find_form(e->name, F_METH))
    diag_error(sema->cx, e->oploc, "'%s' is a method: call it as .%s(...)", e->name, e->name);
  else
    no_attribute(sema, e, self);
  return poison(sema);
}

// Python's truth value of a compile-time value (a number, None, a string, a dtype, a
// sequence); false after an error for a tensor, whose value is known only at run time.
bool truth_value(Sema *sema, Ast *e, bool *out) {
  const TType *t = e->ty;
  switch (t->kind) {
  case TY_SCALAR: *out = t->dtype == DT_F64 ? t->fval != 0 : t->ival != 0; return true;
  case TY_NONE: *out = false; return true;
  case TY_STR: *out = t->module[0] != 0; return true;
  case TY_LIST: case TY_TUPLE: case TY_DICT: *out = t->nelem != 0; return true;  // a dict or set: its length
  case TY_DTYPE: case TY_MODULE: *out = true; return true;
  case TY_TENSOR:
    if (view_numel(t->view) != 1)
      diag_error(sema->cx, e->loc, "Boolean value of Tensor with more than one value is ambiguous");
    else if (t->wrapped)
      diag_error(sema->cx, e->loc, "a condition needs a compile-time value, but this is a %s: a scalar parameter of "
                 "the entry point is known only when it runs (called from another function, it is a compile-time "
                 "value)", py_type_name(t));
    else
      diag_error(sema->cx, e->loc, "a tensor's value is known only at run time: a condition needs a "
                 "compile-time value (use & | ~ or torch.where for elementwise logic)");
    return false;
  default:  // no value a condition takes: said here, as its branches are skipped
    diag_error(sema->cx, e->loc, "a condition needs a compile-time value, not %s", py_type_name(t));
    return false;
  }
}

// a == b for two compile-time values, as Python compares them (1 == 1.0 == True, a tuple
// never equals a list); -1 after an error for a tensor, whose value only the run knows.
static int same_value(Sema *sema, const TType *a, const TType *b, Loc loc) {
  if (a->kind == TY_TENSOR || b->kind == TY_TENSOR) {
    diag_error(sema->cx, loc, "a tensor's value is known only at run time: 'in' and 'is' need compile-time values");
    return -1;
  }
  if (a->kind != b->kind) return 0;
  switch (a->kind) {
  case TY_SCALAR:
    return a->dtype == DT_F64 || b->dtype == DT_F64 ? a->fval == b->fval : a->ival == b->ival;
  case TY_NONE: return 1;
  case TY_DTYPE: return a->dtype == b->dtype;
  case TY_STR: case TY_MODULE: return strcmp(a->module, b->module) == 0;
  case TY_LIST: case TY_TUPLE:
    if (a->nelem != b->nelem) return 0;
    for (int i = 0; i < a->nelem; i++) {
      int r = same_value(sema, a->elems[i], b->elems[i], loc);
      if (r != 1) return r;
    }
    return 1;
  case TY_DICT:  // the same keys, each with an equal value, in any order (a set: the same elements)
    if (a->nelem != b->nelem || (a->module != NULL) != (b->module != NULL)) return 0;
    for (int i = 0; i < a->nelem; i++) {
      int j = 0;
      while (j < b->nelem && same_value(sema, a->keys[i], b->keys[j], loc) != 1) j++;
      if (j == b->nelem) return 0;
      int r = same_value(sema, a->elems[i], b->elems[j], loc);
      if (r != 1) return r;
    }
    return 1;
  default: return 0;
  }
}

// x in seq, x not in seq (a tuple, a list or a string), x is y, x is not y: Python's on
// compile-time values ('is' as '==' that also wants the same kind of number: True is 1 is
// False); 1, 0, or -1 after an error.
static int membership(Sema *sema, Ast *e, const TType *a, const TType *b) {
  if (e->op == LOGIC_IS || e->op == LOGIC_IS_NOT) {
    if (a->kind == TY_NONE || b->kind == TY_NONE) return a->kind == b->kind;  // x is None, of anything
    if (a->kind == TY_TENSOR && b->kind == TY_TENSOR) return a == b;  // the same tensor (a name's two reads)
    bool same_kind = a->kind != TY_SCALAR || b->kind != TY_SCALAR ||
                     ((a->dtype == DT_F64) == (b->dtype == DT_F64) && (a->dtype == DT_BOOL) == (b->dtype == DT_BOOL));
    int r = same_value(sema, a, b, e->oploc);
    return r < 0 ? r : r && same_kind;
  }
  if (b->kind == TY_STR && a->kind == TY_STR) return strstr(b->module, a->module) != NULL;
  if (b->kind == TY_DICT) return dict_has(sema, b, a, e->oploc);
  if (b->kind != TY_LIST && b->kind != TY_TUPLE) {
    if (b->kind == TY_TENSOR)
      diag_error(sema->cx, e->oploc, "a tensor's value is known only at run time: 'in' needs a compile-time "
                 "sequence");
    else
      diag_error(sema->cx, e->rhs->loc, "argument of type '%s' is not iterable", py_type_name(b));
    return -1;
  }
  for (int i = 0; i < b->nelem; i++) {
    int r = same_value(sema, a, b->elems[i], e->oploc);
    if (r != 0) return r;
  }
  return 0;
}

// a and b, a or b, not a: Python's, on compile-time values ('and' gives a when a is false,
// else b; 'or' the reverse), short-circuit: b is not checked (its names not resolved)
// when a decides; in and is: membership.
static TType *check_logic_one(Sema *sema, Ast *e, TType *a) {
  static const char *const words[] = {"and", "or", "not"};
  if (is_poison(a)) return poison(sema);
  if (e->op >= LOGIC_IN) {
    TType *b = check_expr(sema, e->rhs);
    if (is_poison(b)) return poison(sema);
    int r = membership(sema, e, a, b);
    if (r < 0) return poison(sema);
    return ty_bool(sema, (e->op == LOGIC_IN || e->op == LOGIC_IS) == (r == 1));
  }
  for (int i = 0; i < 2; i++) {  // a sequence, a dtype or a string as a result is more than tdsl needs
    const Ast *o = i ? e->rhs : e->lhs;
    if (i && o && !o->ty) break;  // b: checked below, if at all
    if (o && o->ty->kind != TY_SCALAR && o->ty->kind != TY_NONE && o->ty->kind != TY_TENSOR) {
      diag_error(sema->cx, o->loc, "'%s' takes Python numbers, bools or None here, not %s", words[e->op],
                 py_type_name(o->ty));
      return poison(sema);
    }
  }
  bool ta;
  if (!truth_value(sema, e->lhs, &ta)) return poison(sema);
  if (e->op == LOGIC_NOT) return ty_bool(sema, !ta);
  if ((e->op == LOGIC_AND) != ta) return a;  // decided by a: b is never evaluated
  TType *b = check_expr(sema, e->rhs);
  if (is_poison(b)) return poison(sema);
  if (b->kind != TY_SCALAR && b->kind != TY_NONE && b->kind != TY_TENSOR) {
    diag_error(sema->cx, e->rhs->loc, "'%s' takes Python numbers, bools or None here, not %s", words[e->op],
               py_type_name(b));
    return poison(sema);
  }
  bool tb;
  if (!truth_value(sema, e->rhs, &tb)) return poison(sema);
  return b;
}

// a and b and c ...: the chain of left operands in a loop, as check_binary does.
static TType *check_logic(Sema *sema, Ast *e) {
  VEC(Ast *) chain = {0};
  Ast *a = e;
  for (; a->kind == AST_LOGIC && (a->op == LOGIC_AND || a->op == LOGIC_OR || a == e); a = a->lhs)
    vec_push(&sema->cx->arena, &chain, a);
  bool is = e->op == LOGIC_IS || e->op == LOGIC_IS_NOT;
  if (is && e->rhs->kind == AST_NONE && !e->rhs->ty && unset_parameter(sema, a))  // m.bias is not None of a
    return ty_bool(sema, e->op == LOGIC_IS_NOT);                                   // parameter not set yet
  TType *t = check_expr(sema, a);
  for (int i = chain.len - 1; i >= 0; i--) {
    t = check_logic_one(sema, chain.data[i], t);
    chain.data[i]->ty = t;
  }
  return t;
}

// a if c else b: a compile-time c picks the branch, and only that one is checked, as
// Python evaluates only it; a tensor c is known only at run time (torch.where chooses
// elementwise).
static TType *check_cond(Sema *sema, Ast *e) {
  TType *c = check_expr(sema, e->step);
  if (is_poison(c)) return poison(sema);
  if (is_tensor(c) && c->wrapped) {
    diag_error(sema->cx, e->step->loc, "the condition of 'a if c else b' must be a compile-time value, but this is a "
               "%s: a scalar parameter of the entry point is known only when it runs (called from another function, "
               "it is a compile-time value)", py_type_name(c));
    return poison(sema);
  }
  if (is_tensor(c)) {
    diag_error(sema->cx, e->step->loc, "a tensor's value is known only at run time: the condition of 'a if c else "
               "b' must be a compile-time value (use torch.where(c, a, b) to choose elementwise)");
    return poison(sema);
  }
  bool taken;
  if (!truth_value(sema, e->step, &taken)) return poison(sema);
  Ast *x = taken ? e->lhs : e->rhs;
  TType *t = check_expr(sema, x);
  set_operand1(sema, e, x);
  return t;
}

TType *check_expr(Sema *sema, Ast *e) {
  TType *t;
  switch (e->kind) {
  case AST_INT: t = ty_int(sema, e->ival); break;
  case AST_FLOAT: t = e->op == 'j' ? complex_literal(sema, e, 0, e->fval) : ty_float(sema, e->fval); break;
  case AST_BOOL: t = ty_bool(sema, e->bval); break;
  case AST_STR:
    t = ty_new(sema, TY_STR);
    t->module = e->name;
    break;
  case AST_NONE: t = ty_new(sema, TY_NONE); break;
  case AST_DTYPE: t = ty_dtype(sema, e->dtype); break;
  case AST_NAME: t = check_name(sema, e); break;
  case AST_UNARY: t = check_unary(sema, e); break;
  case AST_LOGIC: t = check_logic(sema, e); break;
  case AST_COND: t = check_cond(sema, e); break;
  case AST_COMP: t = check_comp(sema, e); break;
  case AST_APPLY: t = check_apply(sema, e); break;
  case AST_FSTRING: t = check_fstring(sema, e); break;
  case AST_BINARY: t = check_binary(sema, e); break;
  case AST_CALL: t = check_call(sema, e); break;
  case AST_ATTR: t = check_attr(sema, e); break;
  case AST_INDEX: t = check_index(sema, e); break;
  case AST_LIST:
  case AST_TUPLE: t = check_seq(sema, e); break;
  case AST_FN: t = lambda_value(sema, e); break;  // lambda a: e (sema_lambda.c)
  case AST_STARRED:
    diag_error(sema->cx, e->oploc, "can't use starred expression here");
    t = poison(sema);
    break;
  case AST_SLICE:
  case AST_ELLIPSIS:
    diag_error(sema->cx, e->loc, "'%s' is only allowed inside an index [...]", e->kind == AST_SLICE ? ":" : "...");
    t = poison(sema);
    break;
  default:
    diag_error(sema->cx, e->loc, "expected an expression");
    t = poison(sema);
    break;
  }
  if (e->bi && !is_poison(t) && !complex_supported(sema, e, t)) t = poison(sema);  // sema_complex.c
  e->ty = t;
  return t;
}
