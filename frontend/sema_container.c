// frontend/sema_container.c: nn.Sequential, nn.ModuleList and nn.ModuleDict as PyTorch 1.13
// defines them, made where a model's __init__ makes them
//   self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
//   self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
// and used as its forward uses them: called (a Sequential runs its modules in order),
// indexed (negative indices, a slice the container of the same class), iterated, len(),
// appended to, extended, held, handed on.
// Invariants: a Sequential or a ModuleList is a list (TY_LIST) of its modules, a ModuleDict a
// dict (TY_DICT) of them by name, whose TType's `container` names the class; so every list or
// dict operation applies to it as it does to a list (one object for every holder, changed in
// place: sema_tuple.c's seq_replace keeps the mark on the new value), and this file holds only
// where PyTorch's class differs from Python's list and dict: its constructor (each element a
// Module, or None; a ModuleDict's keys strings naming a module), its call, its methods (append
// and extend return the container), its stores (c[i] = m, md[k] = m), a ModuleDict's module
// read as an attribute (md.wte), its operators (+, *), and its messages (its type's name,
// "index 3 is out of range"); its repr is sema_format.c's.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

bool is_container(const TType *t) { return t && (t->kind == TY_LIST || t->kind == TY_DICT) && t->container; }

static bool is_seq_container(const TType *t, const char *cls) {
  return is_container(t) && t->kind == TY_LIST && (!cls || !strcmp(t->container, cls));
}

bool is_nn_module(Sema *sema, const TType *t) {
  if (is_container(t)) return true;
  if (!t || t->kind != TY_MODULE || !t->ctor) return false;
  if (is_instance(t)) return class_is_module(sema, t->ctor);
  return !strncmp(t->module, "torch.nn.", 9) || !strncmp(t->module, "einops.", 7);
}

// torch.typename(v), as PyTorch's add_module names a value that is no Module.
static const char *torch_typename(Sema *sema, const TType *t) {
  if (is_tensor(t)) return arena_printf(&sema->cx->arena, "torch.%s", torch_tensor_name(t->dtype));
  if (is_instance(t)) return arena_printf(&sema->cx->arena, "__main__.%s", t->ctor->name);
  if (is_class(t)) return "type";
  if (t->kind == TY_MODULE && t->ctor && t->ctor->kind == AST_FN && t->ctor->name) {  // F.relu: its module's
    const Ast *named = t->ctor->rhs && t->ctor->rhs->kind == AST_ATTR ? t->ctor->rhs : NULL;
    const char *m = named && named->lhs->kind == AST_NAME ? module_named(sema, named->lhs->name) : NULL;
    return arena_printf(&sema->cx->arena, "%s.%s", m ? m : "__main__", t->ctor->name);
  }
  return py_type_name(t);
}

// "<class 'list'>", as str(type(v)) shows a value's class in PyTorch's messages.
static const char *class_repr(Sema *sema, const TType *t) {
  if (is_container(t))
    return arena_printf(&sema->cx->arena, "<class 'torch.nn.modules.container.%s'>", t->container);
  if (is_tensor(t)) return "<class 'torch.Tensor'>";
  return arena_printf(&sema->cx->arena, "<class '%s'>", torch_typename(sema, t));
}

// Each of items[0..n) a Module or None, as add_module checks it; false after its message.
static bool modules_ok(Sema *sema, Ast *const *items, int n) {
  for (int i = 0; i < n; i++) {
    const TType *t = items[i]->ty;
    if (t->kind == TY_NONE || is_nn_module(sema, t)) continue;
    diag_error(sema->cx, items[i]->loc, "%s is not a Module subclass", torch_typename(sema, t));
    return false;
  }
  return true;
}

// Whether container class cls holds parameters (ParameterList, ParameterDict): any value, where
// the module containers take Modules.
static bool holds_params(const char *cls) { return !strncmp(cls, "Parameter", 9); }

// Each of items[0..n) a value container cls holds; false after PyTorch's message.
static bool elems_ok(Sema *sema, const char *cls, Ast *const *items, int n) {
  return holds_params(cls) || modules_ok(sema, items, n);
}

// A list of items as the container cls, at e's location.
static Ast *container_list(Sema *sema, const Ast *e, const char *cls, Ast **items, int n) {
  Ast *l = part_seq(sema, e, TY_LIST, items, n);
  l->ty->container = cls;
  return l;
}

// The positional arguments of call e (checked) into *pos, a keyword named kw (NULL: none
// taken) into *kwv; false after Python's message for the others (qual: the function).
static bool split_args(Sema *sema, Ast *e, const char *qual, int maxpos, const char *kw, Ast **pos, int *npos,
                       Ast **kwv) {
  *npos = 0;
  if (kwv) *kwv = NULL;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG) {
      if (!kw || strcmp(a->name, kw) || *kwv) {
        diag_error(sema->cx, a->loc, "%s() got an unexpected keyword argument '%s'", qual, a->name);
        return false;
      }
      *kwv = a->rhs;
      continue;
    }
    if (*npos >= maxpos) {
      int n = 0;
      for (int j = 0; j < e->list.len; j++) n += e->list.data[j]->kind != AST_KWARG;
      diag_error(sema->cx, a->loc, "%s() takes from 1 to %d positional arguments but %d were given", qual, maxpos + 1,
                 n + 1);
      return false;
    }
    pos[(*npos)++] = a;
  }
  if (kwv && *kwv && *npos) {
    diag_error(sema->cx, call_loc(e), "%s() got multiple values for argument '%s'", qual, kw);
    return false;
  }
  return true;
}

// The attributes a ModuleDict has before any module is added (dir(nn.ModuleDict()) in PyTorch 1.13, sorted):
// add_module refuses a new key that names one ("attribute 'keys' already exists").
static const char *const module_dict_attrs[] = {
    "T_destination", "__annotations__", "__call__", "__class__", "__contains__", "__delattr__", "__delitem__",
    "__dict__", "__dir__", "__doc__", "__eq__", "__format__", "__ge__", "__getattr__", "__getattribute__",
    "__getitem__", "__getstate__", "__gt__", "__hash__", "__init__", "__init_subclass__", "__iter__", "__le__",
    "__len__", "__lt__", "__module__", "__ne__", "__new__", "__reduce__", "__reduce_ex__", "__repr__",
    "__setattr__", "__setitem__", "__setstate__", "__sizeof__", "__str__", "__subclasshook__", "__weakref__",
    "_apply", "_backward_hooks", "_buffers", "_call_impl", "_forward_hooks", "_forward_pre_hooks",
    "_get_backward_hooks", "_get_name", "_is_full_backward_hook", "_load_from_state_dict",
    "_load_state_dict_post_hooks", "_load_state_dict_pre_hooks", "_maybe_warn_non_full_backward_hook", "_modules",
    "_named_members", "_non_persistent_buffers_set", "_parameters", "_register_load_state_dict_pre_hook",
    "_register_state_dict_hook", "_replicate_for_data_parallel", "_save_to_state_dict", "_slow_forward",
    "_state_dict_hooks", "_version", "add_module", "apply", "bfloat16", "buffers", "children", "clear", "cpu",
    "cuda", "double", "dump_patches", "eval", "extra_repr", "float", "forward", "get_buffer", "get_extra_state",
    "get_parameter", "get_submodule", "half", "ipu", "items", "keys", "load_state_dict", "modules", "named_buffers",
    "named_children", "named_modules", "named_parameters", "parameters", "pop", "register_backward_hook",
    "register_buffer", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_load_state_dict_post_hook", "register_module", "register_parameter", "requires_grad_",
    "set_extra_state", "share_memory", "state_dict", "to", "to_empty", "train", "training", "type", "update",
    "values", "xpu", "zero_grad",
};

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

// add_module's checks of a ModuleDict's key name (a string; held: already a key of the dict)
static bool module_name_ok(Sema *sema, Loc at, const char *name, bool held) {
  if (!name[0]) diag_error(sema->cx, at, "KeyError: 'module name can\\'t be empty string \"\"'");
  else if (strchr(name, '.')) diag_error(sema->cx, at, "KeyError: 'module name can\\'t contain \".\", got: %s'", name);
  else if (!held && bsearch(&name, module_dict_attrs, sizeof module_dict_attrs / sizeof *module_dict_attrs,
                            sizeof *module_dict_attrs, str_cmp))
    diag_error(sema->cx, at, "KeyError: \"attribute '%s' already exists\"", name);
  else return true;
  return false;
}

// The (name, module) pairs of a ModuleDict's argument a (a dict, another ModuleDict, or an
// iterable of pairs), later names replacing earlier ones in place as update() does; false
// after PyTorch's message.
static bool module_pairs(Sema *sema, Ast *a, const char *cls, TType ***keys, Ast ***vals, int *n) {
  bool params = holds_params(cls);
  Ast **items;
  int m;
  bool dict = a->ty->kind == TY_DICT;
  if (!dict && !iterable_items(sema, a, &items, &m, a->loc)) return false;
  if (dict) seq_items(sema, a, &items, &m);
  *keys = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(m + 1));
  *vals = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(m + 1));
  *n = 0;
  for (int i = 0; i < m; i++) {
    Ast *v = items[i];
    TType *k = dict ? a->ty->keys[i] : NULL;
    if (!dict) {
      Ast **kv;
      int len;
      if (!seq_items(sema, items[i], &kv, &len)) {
        diag_error(sema->cx, items[i]->loc, "%s update sequence element #%d should be Iterable; is%s", cls, i,
                   py_type_name(items[i]->ty));
        return false;
      }
      if (len != 2) {
        diag_error(sema->cx, items[i]->loc, "%s update sequence element #%d has length %d; 2 is required", cls,
                   i, len);
        return false;
      }
      k = kv[0]->ty, v = kv[1];
    }
    Loc at = dict ? a->loc : items[i]->loc;
    if (k->kind != TY_STR && params) {
      diag_error(sema->cx, at, "Index given to ParameterDict cannot be used as a key as it is not a string "
                 "(type is '%s'). Open an issue on github if you need non-string keys.", py_type_name(k));
      return false;
    }
    if (k->kind != TY_STR) {
      diag_error(sema->cx, at, "module name should be a string. Got %s", torch_typename(sema, k));
      return false;
    }
    int j = 0;
    while (j < *n && strcmp((*keys)[j]->module, k->module)) j++;
    if (!params && (!modules_ok(sema, &v, 1) || !module_name_ok(sema, at, k->module, j < *n)))
      return false;  // (add_module's order)
    (*keys)[j] = k, (*vals)[j] = v;
    if (j == *n) (*n)++;
  }
  return true;
}

TType *container_construct(Sema *sema, Ast *e) {
  const char *cls = e->name;
  const char *qual = arena_printf(&sema->cx->arena, "%s.__init__", cls);
  if (!check_args(sema, e)) return poison(sema);
  Ast **pos = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(e->list.len + 1));
  int npos;
  Ast *kwv;
  if (!strcmp(cls, "Sequential")) {  // Sequential(*modules), Sequential(OrderedDict): its modules by name
    if (!split_args(sema, e, qual, e->list.len, NULL, pos, &npos, NULL)) return poison(sema);
    const TType *od = npos == 1 ? pos[0]->ty : NULL;
    if (od && od->kind == TY_DICT && od->module && !strcmp(od->module, "OrderedDict")) {
      Ast **vals;
      int n;
      seq_items(sema, pos[0], &vals, &n);
      for (int i = 0; i < n; i++)
        if (od->keys[i]->kind != TY_STR) {
          diag_error(sema->cx, pos[0]->loc, "module name should be a string. Got %s",
                     torch_typename(sema, od->keys[i]));
          return poison(sema);
        }
      for (int i = 0; i < n; i++)  // add_module's checks, in order
        if (!modules_ok(sema, &vals[i], 1) || !module_name_ok(sema, pos[0]->loc, od->keys[i]->module, true))
          return poison(sema);
      Ast *l = container_list(sema, e, cls, vals, n);
      l->ty->keys = od->keys;
      return become(sema, e, l);
    }
    if (!modules_ok(sema, pos, npos)) return poison(sema);
    return become(sema, e, container_list(sema, e, cls, pos, npos));
  }
  bool plist = !strcmp(cls, "ParameterList");
  if (!split_args(sema, e, qual, 1, plist ? "values" : holds_params(cls) ? "parameters" : "modules", pos, &npos, &kwv))
    return poison(sema);
  Ast *arg = npos ? pos[0] : kwv;
  if (arg && arg->ty->kind == TY_NONE) arg = NULL;
  if (!strcmp(cls, "ModuleList") || plist) {  // ModuleList(modules=None): self += modules; ParameterList(values)
    Ast **items = NULL;
    int n = 0;
    TyKind k = arg ? arg->ty->kind : TY_LIST;
    if (k != TY_LIST && k != TY_TUPLE && k != TY_DICT && k != TY_TENSOR && !plist) {
      diag_error(sema->cx, arg->loc, "ModuleList.extend should be called with an iterable, but got %s",
                 py_type_name(arg->ty));
      return poison(sema);
    }
    if ((arg && !iterable_items(sema, arg, &items, &n, arg->loc)) || !elems_ok(sema, cls, items, n))
      return poison(sema);
    return become(sema, e, container_list(sema, e, cls, items, n));
  }
  TType **keys = NULL;  // ModuleDict(modules=None): self.update(modules)
  Ast **vals = NULL;
  int n = 0;
  if (arg && !module_pairs(sema, arg, cls, &keys, &vals, &n)) return poison(sema);
  Ast *d = part_dict(sema, e, keys, vals, n);
  d->ty->container = cls;
  return become(sema, e, d);
}

// ============================================================================
// Calls: Sequential.forward(input) runs the modules in order
// ============================================================================
TType *container_call(Sema *sema, Ast *e, const TType *c, AstList *args) {
  Loc at = e->kind == AST_CALL ? call_loc(e) : e->loc;
  if (holds_params(c->container)) {
    diag_error(sema->cx, at, "RuntimeError: %s should not be called.", c->container);
    return poison(sema);
  }
  if (!is_seq_container(c, "Sequential")) {
    diag_error(sema->cx, at, "NotImplementedError: Module [%s] is missing the required \"forward\" function",
               c->container);
    return poison(sema);
  }
  int npos = 0;
  for (int i = 0; i < args->len; i++) {
    if (args->data[i]->kind == AST_KWARG) {
      diag_error(sema->cx, args->data[i]->loc, "Sequential.forward() got an unexpected keyword argument '%s'",
                 args->data[i]->name);
      return poison(sema);
    }
    npos++;
  }
  if (npos != 1) {
    if (npos) diag_error(sema->cx, at, "Sequential.forward() takes 2 positional arguments but %d were given", npos + 1);
    else diag_error(sema->cx, at, "Sequential.forward() missing 1 required positional argument: 'input'");
    return poison(sema);
  }
  Ast *x = args->data[0];
  for (int k = 0; k < c->nelem; k++) {  // input = module(input), each a call of its own
    const TType *m = c->elems[k];
    Ast *step = ast_new(sema->cx, AST_APPLY, e->loc);
    step->lhs = ast_new(sema->cx, AST_NONE, e->loc);
    step->lhs->ty = (TType *)m;
    vec_push(&sema->cx->arena, &step->list, x);
    if (m->kind == TY_NONE) {
      diag_error(sema->cx, at, "'NoneType' object is not callable");
      return poison(sema);
    }
    int before = sema->cx->nerrors;
    step->ty = module_apply(sema, step, m, &step->list);
    if (is_poison(step->ty)) {
      if (sema->cx->nerrors > before) diag_note(sema->cx, at, "in module %d of this Sequential", k);
      return poison(sema);
    }
    x = step;
  }
  set_operand1(sema, e, x);  // the last module's result (the input itself for an empty Sequential)
  return x->ty;
}

// ============================================================================
// Methods, indexing, operators
// ============================================================================
// The container the list or dict name holds is now nl (marked cls), seen by every holder;
// the call e's value is the container (append, extend and insert return self).
static TType *replaced(Sema *sema, Ast *e, Ast *nl, const char *cls, bool returns_self) {
  nl->ty->container = cls;
  seq_replace(sema, e, e->lhs, nl, true);
  if (!returns_self) return ty_new(sema, TY_NONE);
  set_operand1(sema, e, nl);
  return nl->ty;
}

// A position of a container of n modules (negative counted from the end) into *k; false after
// PyTorch's message.
static bool module_index(Sema *sema, const Ast *i, int64_t n, int64_t *k) {
  const TType *it = i->ty;
  if (!is_scalar(it) || it->dtype == DT_F64) {
    diag_error(sema->cx, i->loc, "'%s' object cannot be interpreted as an integer", py_type_name(it));
    return false;
  }
  if (it->ival < -n || it->ival >= n) {
    diag_error(sema->cx, i->loc, "index %" PRId64 " is out of range", it->ival);
    return false;
  }
  *k = it->ival < 0 ? it->ival + n : it->ival;
  return true;
}

void container_store(Sema *sema, Ast *st) {
  Ast *t = st->lhs, *c = t->lhs;
  if (is_poison(check_expr(sema, st->rhs))) return;
  if (st->op >= 0) {
    diag_error(sema->cx, st->oploc, "unsupported operand type(s) for %s=: a module of a %s", binop_text((BinOp)st->op),
               c->ty->container);
    return;
  }
  if (!elems_ok(sema, c->ty->container, &st->rhs, 1)) return;
  if (c->ty->kind == TY_DICT) {  // md[k] = m: add_module's checks of the name, then the dict's store
    const TType *k = t->list.len == 1 && t->list.data[0]->kind != AST_SLICE ? check_expr(sema, t->list.data[0]) : NULL;
    if (k && !is_poison(k) && k->kind != TY_STR && holds_params(c->ty->container)) {
      diag_error(sema->cx, t->list.data[0]->loc, "Index given to ParameterDict cannot be used as a key as "
                 "it is not a string (type is '%s'). Open an issue on github if you need non-string keys.",
                 py_type_name(k));
      return;
    }
    if (k && !is_poison(k) && k->kind != TY_STR) {
      diag_error(sema->cx, t->list.data[0]->loc, "module name should be a string. Got %s", torch_typename(sema, k));
      return;
    }
    if (!k || is_poison(k)) return;
    bool held = false;
    for (int j = 0; j < c->ty->nelem && !held; j++) held = !strcmp(c->ty->keys[j]->module, k->module);
    if (holds_params(c->ty->container) || module_name_ok(sema, t->list.data[0]->loc, k->module, held))
      dict_store(sema, st, t, st->rhs);
    return;
  }
  Ast *it = t->list.len == 1 ? t->list.data[0] : NULL;
  int64_t k;
  if (!it || it->kind == AST_SLICE) {
    diag_error(sema->cx, t->oploc, "'slice' object cannot be interpreted as an integer");
    return;
  }
  if (is_poison(check_expr(sema, it)) || !module_index(sema, it, c->ty->nelem, &k)) return;
  Ast **old;
  int n;
  seq_items(sema, c, &old, &n);
  Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) items[i] = i == k ? st->rhs : old[i];
  Ast *nl = container_list(sema, st, c->ty->container, items, n);
  nl->ty->keys = c->ty->keys;  // seq[i] = m keeps the i-th module's name
  seq_replace(sema, st, c, nl, true);
}

bool container_index_ok(Sema *sema, Ast *e) {
  Ast *it = e->list.len == 1 ? e->list.data[0] : NULL;
  if (!it || it->kind == AST_SLICE) return true;
  int64_t k;
  return module_index(sema, it, e->lhs->ty->nelem, &k);
}

// A method of Sequential or ModuleList at call e (its receiver and arguments checked).
static TType *list_container_method(Sema *sema, Ast *e, const TType *c) {
  const char *n = e->name, *cls = c->container;
  bool seq = !strcmp(cls, "Sequential");
  const char *qual = arena_printf(&sema->cx->arena, "%s.%s", cls, n);
  if (!strcmp(n, "forward")) return container_call(sema, e, c, &e->list);  // super().forward(x) of a subclass
  int want = !strcmp(n, "insert") ? 2 : 1;
  bool known = !strcmp(n, "append") || !strcmp(n, "extend") ||
               (!holds_params(cls) && (!strcmp(n, "insert") || !strcmp(n, "pop")));
  if (!known) {
    diag_error(sema->cx, e->oploc, "'%s' object has no attribute '%s'", cls, n);
    return poison(sema);
  }
  for (int i = 0; i < e->list.len; i++)
    if (e->list.data[i]->kind == AST_KWARG) {
      diag_error(sema->cx, e->list.data[i]->loc, "%s() got an unexpected keyword argument '%s'", qual,
                 e->list.data[i]->name);
      return poison(sema);
    }
  if (e->list.len != want) {
    if (e->list.len > want)
      diag_error(sema->cx, call_loc(e), "%s() takes %d positional arguments but %d were given", qual, want + 1,
                 e->list.len + 1);
    else
      diag_error(sema->cx, call_loc(e), "%s() missing %d required positional argument%s: %s", qual,
                 want - e->list.len, want - e->list.len > 1 ? "s" : "",
                 n[0] == 'i' ? (e->list.len ? "'module'" : "'index' and 'module'")
                 : n[0] == 'p' ? "'key'" : n[0] == 'a' ? "'module'" : seq ? "'sequential'" : "'modules'");
    return poison(sema);
  }
  Ast **old, **more = NULL;
  int nold, nmore = 0;
  seq_items(sema, e->lhs, &old, &nold);
  Ast *arg = e->list.data[want - 1];
  if (n[0] == 'p') {  // pop(key): the module, and the container without it
    int64_t k;
    if (arg->kind == AST_SLICE || !module_index(sema, arg, nold, &k)) return poison(sema);
    Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(nold + 1));
    int m = 0;
    for (int i = 0; i < nold; i++)
      if (i != k) items[m++] = old[i];
    replaced(sema, e, container_list(sema, e, cls, items, m), cls, false);
    set_operand1(sema, e, old[k]);
    return old[k]->ty;
  }
  if (n[0] == 'e') {
    if (!iterable_items(sema, arg, &more, &nmore, arg->loc)) return poison(sema);
  } else {
    more = &arg, nmore = 1;
  }
  if (n[0] == 'i' && seq && !is_nn_module(sema, arg->ty)) {
    diag_error(sema->cx, arg->loc, "AssertionError: module should be of type: <class "
               "'torch.nn.modules.module.Module'>");
    return poison(sema);
  }
  if (!elems_ok(sema, cls, more, nmore)) return poison(sema);
  int64_t at = nold;
  if (n[0] == 'i') {
    const Ast *ia = e->list.data[0];
    if (!is_scalar(ia->ty) || ia->ty->dtype == DT_F64) {
      diag_error(sema->cx, ia->loc, "'%s' object cannot be interpreted as an integer", py_type_name(ia->ty));
      return poison(sema);
    }
    at = ia->ty->ival;
    if (seq && (at < -nold || at > nold)) {
      diag_error(sema->cx, ia->loc, "IndexError: Index out of range: %" PRId64, at);
      return poison(sema);
    }
    if (!seq && (at < 0 || at > nold)) {  // PyTorch 1.13 moves the modules to string keys out of order there
      diag_error(sema->cx, ia->loc, "ModuleList.insert at index %" PRId64 " of a ModuleList of %d modules is not "
                 "supported: give an index from 0 to %d", at, nold, nold);
      return poison(sema);
    }
    if (at < 0) at += nold;
  }
  if ((int64_t)nold + nmore > MAX_SEQ) {
    diag_error(sema->cx, call_loc(e), "a sequence of more than %d elements is not supported", MAX_SEQ);
    return poison(sema);
  }
  Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(nold + nmore + 1));
  int k = 0;
  for (int i = 0; i < at; i++) items[k++] = old[i];
  for (int i = 0; i < nmore; i++) items[k++] = more[i];
  for (int i = (int)at; i < nold; i++) items[k++] = old[i];
  Ast *nl = container_list(sema, e, cls, items, k);
  if (c->keys && n[0] != 'i') {  // a named Sequential's append(m) adds m as str(len(self))
    nl->ty->keys = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(k + 1));
    for (int i = 0; i < k; i++)
      nl->ty->keys[i] = i < nold ? c->keys[i] : ty_new(sema, TY_STR);
    for (int i = nold; i < k; i++) nl->ty->keys[i]->module = arena_printf(&sema->cx->arena, "%d", i);
  }
  return replaced(sema, e, nl, cls, n[0] != 'i' || seq);
}

TType *container_attr(Sema *sema, Ast *e) {
  const TType *d = e->lhs->ty;
  int i = 0;
  if (d->kind == TY_LIST && d->keys) {  // seq.fc of a Sequential made from an OrderedDict: seq[k]
    while (i < d->nelem && strcmp(d->keys[i]->module, e->name)) i++;
    if (i == d->nelem) return NULL;
    Ast *k = ast_int(sema->cx, i, e->oploc);
    check_expr(sema, k);
    e->kind = AST_INDEX;
    e->list = (AstList){0};
    vec_push(&sema->cx->arena, &e->list, k);
    return seq_index(sema, e);
  }
  while (d->kind == TY_DICT && i < d->nelem && strcmp(d->keys[i]->module, e->name)) i++;
  if (d->kind != TY_DICT || i == d->nelem) return NULL;
  Ast *k = ast_str(sema->cx, e->name, e->oploc);
  check_expr(sema, k);
  e->kind = AST_INDEX;  // md[name], as Module.__getattr__ finds it in _modules
  e->list = (AstList){0};
  vec_push(&sema->cx->arena, &e->list, k);
  return dict_index(sema, e);
}

TType *container_method(Sema *sema, Ast *e) {
  const TType *c = e->lhs->ty;
  const char *n = e->name;
  Ast *at = ast_attr(sema->cx, e->lhs, n, e->oploc, e->loc);
  at->ty = container_attr(sema, at);  // md.wte(idx), seq.fc(x): the module of that name called
  if (at->ty) return is_poison(at->ty) ? at->ty : module_apply(sema, e, at->ty, &e->list);
  if (c->kind == TY_LIST) return list_container_method(sema, e, c);
  if (!strcmp(n, "keys") || !strcmp(n, "values") || !strcmp(n, "items")) return dict_method(sema, e);
  if (!strcmp(n, "pop")) {
    if (e->list.len != 1 || e->list.data[0]->kind == AST_KWARG) {
      diag_error(sema->cx, call_loc(e), e->list.len ? "%s.pop() takes 2 positional arguments but %d were given"
                 : "%s.pop() missing 1 required positional argument: 'key'", c->container, e->list.len + 1);
      return poison(sema);
    }
    return dict_method(sema, e);
  }
  if (!strcmp(n, "clear") || !strcmp(n, "update")) {
    TType **keys = NULL;
    Ast **vals = NULL;
    int m = 0;
    if (n[0] == 'c' ? e->list.len != 0 : e->list.len != 1 || e->list.data[0]->kind == AST_KWARG) {
      diag_error(sema->cx, call_loc(e), "%s.%s() takes %d positional argument%s but %d were given", c->container, n,
                 n[0] == 'c' ? 1 : 2, n[0] == 'c' ? "" : "s", e->list.len + 1);
      return poison(sema);
    }
    if (n[0] == 'u') {
      TType **nk;
      Ast **nv;
      int nn;
      if (!module_pairs(sema, e->list.data[0], c->container, &nk, &nv, &nn)) return poison(sema);
      Ast **old;
      seq_items(sema, e->lhs, &old, &m);
      keys = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(m + nn + 1));
      vals = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(m + nn + 1));
      for (int i = 0; i < m; i++) keys[i] = c->keys[i], vals[i] = old[i];
      for (int i = 0; i < nn; i++) {
        int j = 0;
        while (j < m && strcmp(keys[j]->module, nk[i]->module)) j++;
        keys[j] = nk[i], vals[j] = nv[i];
        if (j == m) m++;
      }
    }
    return replaced(sema, e, part_dict(sema, e, keys, vals, m), c->container, false);
  }
  diag_error(sema->cx, e->oploc, "'%s' object has no attribute '%s'", c->container, n);
  return poison(sema);
}

TType *container_binary(Sema *sema, Ast *e) {
  const TType *a = e->lhs->ty, *b = e->rhs->ty;
  const char *an = py_type_name(a), *bn = py_type_name(b);
  if (e->op == BIN_MUL) {
    const TType *s = is_seq_container(a, "Sequential") ? a : is_seq_container(b, "Sequential") ? b : NULL;
    const TType *k = s == a ? b : a;
    Ast *sa = s == a ? e->lhs : e->rhs;
    if (!s) {
      diag_error(sema->cx, e->oploc, "unsupported operand type(s) for *: '%s' and '%s'", an, bn);
      return poison(sema);
    }
    if (!is_scalar(k) || k->dtype == DT_F64) {
      diag_error(sema->cx, e->oploc, "unsupported operand type(s) for *: %s and %s", class_repr(sema, s),
                 class_repr(sema, k));
      return poison(sema);
    }
    if (k->ival <= 0) {
      diag_error(sema->cx, e->oploc, "ValueError: Non-positive multiplication factor %" PRId64 " for %s", k->ival,
                 class_repr(sema, s));
      return poison(sema);
    }
    Ast **old;
    int n;
    seq_items(sema, sa, &old, &n);
    if ((int64_t)n * k->ival > MAX_SEQ) {
      diag_error(sema->cx, e->oploc, "a sequence of more than %d elements is not supported", MAX_SEQ);
      return poison(sema);
    }
    Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n * k->ival + 1));
    for (int64_t r = 0; r < k->ival; r++)
      for (int i = 0; i < n; i++) items[r * n + i] = old[i];
    return become(sema, e, container_list(sema, e, "Sequential", items, (int)(n * k->ival)));
  }
  if (!is_container(a)) {  // [m] + ModuleList: list's own refusal
    diag_error(sema->cx, e->oploc, "can only concatenate %s (not \"%s\") to %s", an, bn, an);
    return poison(sema);
  }
  if (a->kind == TY_DICT || holds_params(a->container)) {
    diag_error(sema->cx, e->oploc, "unsupported operand type(s) for +: '%s' and '%s'", an, bn);
    return poison(sema);
  }
  bool seq = !strcmp(a->container, "Sequential");
  if (seq && !is_seq_container(b, "Sequential")) {
    diag_error(sema->cx, e->oploc, "ValueError: add operator supports only objects of Sequential class, but %s is "
               "given.", class_repr(sema, b));
    return poison(sema);
  }
  Ast **ia, **ib;
  int na, nb;
  seq_items(sema, e->lhs, &ia, &na);
  if (!iterable_items(sema, e->rhs, &ib, &nb, e->rhs->loc) || !modules_ok(sema, ib, nb)) return poison(sema);
  Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(na + nb + 1));
  for (int i = 0; i < na; i++) items[i] = ia[i];
  for (int i = 0; i < nb; i++) items[na + i] = ib[i];
  return become(sema, e, container_list(sema, e, a->container, items, na + nb));
}

bool container_augassign(Sema *sema, Ast *st) {
  const TType *t = st->lhs->ty;
  if (st->op != BIN_ADD || t->kind != TY_LIST) {
    diag_error(sema->cx, st->oploc, "%s %s= is not supported: write %s = %s %s ...", t->container,
               binop_text((BinOp)st->op), target_name(st->lhs), target_name(st->lhs), binop_text((BinOp)st->op));
    return false;
  }
  Ast *sum = ast_binary(sema->cx, BIN_ADD, st->lhs, st->rhs, st->oploc);
  sum->ty = container_binary(sema, sum);
  if (is_poison(sum->ty)) return false;
  Ast *nl = container_list(sema, st, t->container, sum->operands, sum->noperands);
  nl->ty->container = t->container;
  seq_replace(sema, st, st->lhs, nl, true);
  return true;
}
