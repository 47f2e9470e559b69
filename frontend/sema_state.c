// frontend/sema_state.c: nn.Module's parameters and buffers, as PyTorch 1.13 documents them,
//   n = sum(p.numel() for p in model.parameters())
//   for name, p in model.named_parameters(): ...
//   sd = teacher.state_dict(); student.load_state_dict(sd)
//   model.register_buffer("mask", torch.tril(torch.ones(T, T)))
//   model.apply(init_weights); model.half()
// over the objects sema_object.c holds: each attribute's role (a parameter, a buffer, a
// non-persistent buffer, or a plain attribute) says what these walk; a ParameterList's and a
// ParameterDict's elements are parameters named by position and key.
// Invariants: the walk is state_dict's (a module's parameters, then its buffers, then its
// modules' in the order named_children() gives them, keys dotted as PyTorch's); named_parameters(),
// parameters() and buffers() keep a module and a tensor once (PyTorch's memo). The values are
// the expressions reading them (`(state 3) self.fc.weight`, the receiver bound once to a hidden
// name first), so a list of them is a list of tensors like any other; what sets them (load_state_dict,
// to(dtype), register_buffer) binds each through obj_set where the call runs, the call's value then
// its result (the module, or load_state_dict's named tuple of key lists).
// A BatchNorm's num_batches_tracked, which tdsl does not keep, is the int64 0 PyTorch's eval-mode
// module holds; a state_dict without it loads, as PyTorch's fills it in.
#include "frontend/sema_internal.h"

#include <string.h>

#define BATCHES "num_batches_tracked"

// One parameter or buffer: its dotted key, where it lives, and its value's type.
typedef struct Entry {
  const char *key;   // "layers.0.weight"
  TType *owner;      // the module holding it: an object, or a ParameterList / ParameterDict
  int at;            // the owner's attribute (a container's element) index; -1: a BatchNorm's num_batches_tracked
  const char *leaf;  // its name in owner ("weight", "0")
  Ast *owner_path;   // an expression reading owner (unchecked; cloned for each use)
  const TType *ty;   // its value's type; NULL: not set yet
  char role;         // ObjAttrs' role: 'p' (or 'f') a parameter, 'b' a buffer, 'n' a non-persistent buffer
  const void *ident; // its identity (ObjAttrs' ident)
} Entry;

// The modules walked (each with its prefix: load_state_dict's unexpected keys by module) and the
// entries found, in state_dict's order.
typedef struct Walk {
  VEC(Entry) e;
  VEC(const TType *) mods;
  VEC(const char *) prefixes;
  bool memo;  // named_parameters()'s: a module and a tensor once
  bool deep;  // a walk without the memo went past 64 modules deep (a module holding itself): it stops there
} Walk;

static bool is_param_container(const TType *t) { return is_container(t) && !strncmp(t->container, "Parameter", 9); }

static bool is_batchnorm(const TType *t) {
  return t->kind == TY_MODULE && t->module && !strncmp(t->module, "torch.nn.BatchNorm", 18) && t->attrs;
}

static const char *joined(Sema *sema, const char *prefix, const char *name) {
  return *prefix ? arena_printf(&sema->cx->arena, "%s.%s", prefix, name) : name;
}

static void add_entry(Sema *sema, Walk *w, Entry en) { vec_push(&sema->cx->arena, &w->e, en); }

// Module t's own parameters, then its buffers (state_dict's order), read through path.
static void own_state(Sema *sema, Walk *w, TType *t, const char *prefix, Ast *path) {
  if (is_param_container(t)) {
    for (int i = 0; i < t->nelem; i++) {
      if (!is_tensor(t->elems[i])) continue;
      const char *leaf = t->kind == TY_DICT ? t->keys[i]->module : arena_printf(&sema->cx->arena, "%d", i);
      add_entry(sema, w, (Entry){joined(sema, prefix, leaf), t, i, leaf, path, t->elems[i], 'p', t->elems[i]});
    }
    return;
  }
  const ObjAttrs *a = t->kind == TY_MODULE ? t->attrs : NULL;
  for (int pass = 0; a && pass < 2; pass++) {
    for (int k = 0; k < a->n; k++) {
      TType *src = t;
      int at = k;
      obj_untie(&src, &at);  // a tied parameter: the one it is tied to's value, set through it
      const TType *v = src->attrs->ty[at];
      if (!a->role[k] || is_param_role(a->role[k]) != (pass == 0) || (v && !is_tensor(v))) continue;  // None: none
      const char *key = joined(sema, prefix, a->names[k]);
      const void *ident = src == t && at == k ? a->ident[k] : src->attrs->ident[at] ? src->attrs->ident[at]
                                                                                   : (const void *)&src->attrs->tie[at];
      add_entry(sema, w, (Entry){key, t, k, a->names[k], path, v, a->role[k], ident});
    }
    if (pass == 1 && is_batchnorm(t) && obj_find(a, BATCHES) < 0)
      add_entry(sema, w, (Entry){joined(sema, prefix, BATCHES), t, -1, BATCHES, path, NULL, 'b', NULL});
  }
}

static void walk_state(Sema *sema, Walk *w, TType *t, const char *prefix, Ast *path, bool recurse, int depth) {
  for (int i = 0; w->memo && i < w->mods.len; i++)
    if (w->mods.data[i] == t) return;
  // a module holding itself: its memo's one visit, or PyTorch's RecursionError (the caller's), the walk
  // stopped (m.a = m; m.b = m would take 2^64 steps)
  if (w->deep) return;
  if (depth > 64) {
    w->deep = !w->memo;
    return;
  }
  vec_push(&sema->cx->arena, &w->mods, t);
  vec_push(&sema->cx->arena, &w->prefixes, prefix);
  own_state(sema, w, t, prefix, path);
  if (!recurse) return;
  ModWalk kids = {.repeats = !w->memo};  // state_dict(): a module held twice under both names
  walk_children(sema, &kids, t, prefix, path, false);
  for (int i = 0; i < kids.n; i++)
    walk_state(sema, w, (TType *)kids.ty[i], kids.name[i], kids.path[i], true, depth + 1);
}

// The walk's entries with a tensor held twice kept once (named_parameters' memo).
static void drop_repeats(Walk *w) {
  int n = 0;
  for (int i = 0; i < w->e.len; i++) {
    bool seen = false;
    for (int j = 0; j < n && !seen; j++) seen = w->e.data[i].ident && w->e.data[j].ident == w->e.data[i].ident;
    if (!seen) w->e.data[n++] = w->e.data[i];
  }
  w->e.len = n;
}

// An expression reading entry en's value (checked); NULL after the located error of one not set.
static Ast *read_entry(Sema *sema, const Entry *en, const char *what, Loc at) {
  Ctx *cx = sema->cx;
  Ast *r;
  if (en->at < 0) {  // num_batches_tracked: torch.tensor(0) (int64)
    r = ast_call(cx, ast_name(cx, "torch", at), "tensor", ast_list_of(cx, ast_int(cx, 0, at), at), at, at);
  } else if (!en->ty) {
    diag_error(cx, at, "%s: %s '%s' is not set: tdsl has no initial values for parameters; set it first (m.%s = w, "
               "or load_state_dict)", what, is_param_role(en->role) ? "parameter" : "buffer", en->key, en->leaf);
    return NULL;
  } else if (is_param_container(en->owner)) {
    Ast *k = en->owner->kind == TY_DICT ? ast_str(cx, en->leaf, at) : ast_int(cx, en->at, at);
    r = ast_index(cx, ast_clone(cx, en->owner_path), ast_list_of(cx, k, at), at, at);
  } else {
    r = ast_attr(cx, ast_clone(cx, en->owner_path), en->leaf, at, at);
  }
  if (is_poison(check_expr(sema, r))) return NULL;
  if (en->role == 'p') as_parameter(sema, r);
  return r;
}

// The receiver of call e as an expression each entry's path starts from: e->lhs itself when reading it
// again changes nothing, else bound once to a hidden name where e runs (Net().half(): one instance).
static Ast *receiver(Sema *sema, Ast *e) {
  Ast *l = e->lhs;
  while (l->kind == AST_ATTR || (l->kind == AST_INDEX && l->list.len == 1 && l->list.data[0]->kind != AST_SLICE))
    l = l->lhs;
  if (l->kind == AST_NAME) return e->lhs;
  const char *h = arena_printf(&sema->cx->arena, "(state %d) self", ++sema->lambdas);
  bind_hidden(sema, e, h, e->lhs, e->lhs->loc);
  Ast *n = ast_name(sema->cx, h, e->lhs->loc);
  check_expr(sema, n);
  return n;
}

// The class name PyTorch's messages give module t (Net, Linear, Sequential).
static const char *module_class(const TType *t) {
  if (is_container(t)) return t->container;
  if (is_instance(t)) return t->ctor->name;
  return t->module && !strncmp(t->module, "torch.nn.", 9) ? t->module + 9 : py_type_name(t);
}

// ---- arguments ----
// The arguments of call e (checked) matched to the parameters names[0..n) (the first npos positional,
// the others keyword-only), as Python matches them (qual: the method); false after its message.
static bool take_args(Sema *sema, Ast *e, const char *qual, const char *const *names, int n, int npos, Ast **vals) {
  Ctx *cx = sema->cx;
  if (!check_args(sema, e)) return false;
  Ast sig = {.kind = AST_FN};  // def qual(self, names[0..npos), *args, names[npos..n))
  Ast **all = arena_alloc(&cx->arena, sizeof(Ast *) * (size_t)(n + 3));
  for (int j = 0; j <= n + 1; j++) {
    Ast *p = ast_name(cx, j == 0 ? "self" : j == npos + 1 ? "args" : names[j - 1 - (j > npos + 1)], e->loc);
    p->ival = j == npos + 1 ? PARAM_STAR : 0;
    vec_push(&cx->arena, &sig.list, p);
    all[j] = NULL;
  }
  int star, given = 0;
  if (!bind_params(sema, e, &sig, 1, &e->list, qual, false, all, &star)) return false;
  for (int i = 0; i < e->list.len; i++) given += e->list.data[i]->kind != AST_KWARG;
  if (given > npos) {
    diag_error(sema->cx, e->list.data[npos]->loc, "%s() takes %d positional argument%s but %d were given", qual,
               npos + 1, npos ? "s" : "", given + 1);
    return false;
  }
  for (int j = 0; j < n; j++) vals[j] = all[1 + j + (j >= npos)];
  return true;
}

// Argument v (may be NULL: dflt) as a bool; false after the message.
static bool bool_arg(Sema *sema, const Ast *v, const char *name, bool dflt, bool *out) {
  *out = dflt;
  if (!v) return true;
  if (!is_scalar(v->ty) || v->ty->dtype != DT_BOOL) {
    diag_error(sema->cx, v->loc, "argument '%s' must be bool, not %s", name, py_type_name(v->ty));
    return false;
  }
  *out = v->ty->ival != 0;
  return true;
}

// Argument v (may be NULL) as a str; false after the message.
static bool str_arg(Sema *sema, const Ast *v, const char *name, const char **out) {
  if (!v) return true;
  if (v->ty->kind != TY_STR) {
    diag_error(sema->cx, v->loc, "argument '%s' must be str, not %s", name, py_type_name(v->ty));
    return false;
  }
  *out = v->ty->module;
  return true;
}

// The module read by recv (receiver's), read again: what to(), half() and apply() return.
static Ast *itself(Sema *sema, const Ast *recv) {
  Ast *r = ast_clone(sema->cx, recv);
  check_expr(sema, r);
  return r;
}

// e's value is a's (checked), once the bindings in e->unrolled have run.
static TType *result(Sema *sema, Ast *e, Ast *a) {
  set_operand1(sema, e, a);
  return a->ty;
}

// ---- parameters(), named_parameters(), buffers(), named_buffers(), state_dict() ----
static TType *state_list(Sema *sema, Ast *e, TType *t) {
  const char *n = e->name;
  bool named = !strncmp(n, "named_", 6), dict = !strcmp(n, "state_dict");
  bool params = strstr(n, "parameters") != NULL;
  if (!dict && strcmp(n + (named ? 6 : 0), "parameters") && strcmp(n + (named ? 6 : 0), "buffers")) return NULL;
  static const char *const names[] = {"prefix", "recurse", "destination", "keep_vars"};
  Ast *v[4];
  const char *prefix = "";
  bool recurse = true, keep;
  const char *qual = arena_printf(&sema->cx->arena, "Module.%s", n);
  if (dict) {  // state_dict(*, destination=None, prefix='', keep_vars=False)
    if (!take_args(sema, e, qual, names, 4, 0, v) || !str_arg(sema, v[0], "prefix", &prefix) ||
        !bool_arg(sema, v[3], "keep_vars", false, &keep))
      return poison(sema);
    if (v[1]) {
      diag_error(sema->cx, v[1]->loc, "%s() got an unexpected keyword argument 'recurse'", qual);
      return poison(sema);
    }
    if (v[2] && v[2]->ty->kind != TY_NONE) {
      diag_error(sema->cx, v[2]->loc, "state_dict(destination=...) is not supported: use the dict it returns");
      return poison(sema);
    }
  } else if (named) {  // named_parameters(prefix='', recurse=True)
    if (!take_args(sema, e, qual, names, 2, 2, v) || !str_arg(sema, v[0], "prefix", &prefix) ||
        !bool_arg(sema, v[1], "recurse", true, &recurse))
      return poison(sema);
  } else if (!take_args(sema, e, qual, names + 1, 1, 1, v) || !bool_arg(sema, v[0], "recurse", true, &recurse)) {
    return poison(sema);
  }
  Walk w = {.memo = !dict};
  walk_state(sema, &w, t, prefix, receiver(sema, e), recurse, 0);
  if (w.deep) {
    diag_error(sema->cx, e->oploc, "RecursionError: maximum recursion depth exceeded in %s() (a module holding "
               "itself)", n);
    return poison(sema);
  }
  if (w.memo) drop_repeats(&w);
  Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(w.e.len + 1));
  TType **keys = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(w.e.len + 1));
  int m = 0;
  const char *what = arena_printf(&sema->cx->arena, "%s()", n);
  for (int i = 0; i < w.e.len; i++) {
    const Entry *en = &w.e.data[i];
    if (dict ? en->role == 'n' : is_param_role(en->role) != params) continue;
    Ast *r = read_entry(sema, en, what, e->oploc);
    if (!r) return poison(sema);
    Ast *key = ast_str(sema->cx, en->key, e->loc);
    check_expr(sema, key);
    keys[m] = key->ty;
    if (named) {
      Ast *pair[2] = {key, r};
      r = part_seq(sema, e, TY_TUPLE, pair, 2);
    }
    items[m++] = r;
  }
  if (m > MAX_SEQ) {
    diag_error(sema->cx, e->oploc, "%s: more than %d tensors", what, MAX_SEQ);
    return poison(sema);
  }
  Ast *out = dict ? part_dict(sema, e, keys, items, m) : part_seq(sema, e, TY_LIST, items, m);
  if (dict) out->ty->module = "OrderedDict";
  return result(sema, e, out);
}

// ---- register_buffer(name, tensor, persistent=True), register_parameter(name, param) ----
static TType *register_state(Sema *sema, Ast *e, TType *t) {
  bool buffer = !strcmp(e->name, "register_buffer");
  if (!buffer && strcmp(e->name, "register_parameter")) return NULL;
  static const char *const bnames[] = {"name", "tensor", "persistent"}, *const pnames[] = {"name", "param"};
  Ast *v[3];
  const char *qual = buffer ? "register_buffer" : "register_parameter";
  if (!take_args(sema, e, qual, buffer ? bnames : pnames, buffer ? 3 : 2, buffer ? 3 : 2, v)) return poison(sema);
  bool persistent = true;
  if (buffer && !bool_arg(sema, v[2], "persistent", true, &persistent)) return poison(sema);
  for (int j = 0; j < 2; j++)
    if (!v[j]) {
      diag_error(sema->cx, call_loc(e), "%s() missing 1 required positional argument: '%s'", qual,
                 buffer ? bnames[j] : pnames[j]);
      return poison(sema);
    }
  if (t->kind != TY_MODULE || !t->attrs) {
    diag_error(sema->cx, e->oploc, "%s() of a %s is not supported: register it on the module holding it", qual,
               module_class(t));
    return poison(sema);
  }
  const char *kind = buffer ? "buffer" : "parameter";
  if (v[0]->ty->kind != TY_STR) {
    diag_error(sema->cx, v[0]->loc, "TypeError: %s name should be a string. Got %s", kind, py_type_name(v[0]->ty));
    return poison(sema);
  }
  const char *name = v[0]->ty->module;
  int k = obj_find(t->attrs, name);
  char had = k >= 0 ? t->attrs->role[k] : 0;
  if (strchr(name, '.') || !*name) {
    diag_error(sema->cx, v[0]->loc, *name ? "KeyError: '%s name can\\'t contain \".\"'" :
               "KeyError: '%s name can\\'t be empty string \"\"'", kind);
    return poison(sema);
  }
  if (k >= 0 && (buffer ? had != 'b' && had != 'n' : !is_param_role(had))) {  // hasattr(self, name), not one of these
    diag_error(sema->cx, v[0]->loc, "KeyError: \"attribute '%s' already exists\"", name);
    return poison(sema);
  }
  if (!is_tensor(v[1]->ty) && v[1]->ty->kind != TY_NONE) {
    diag_error(sema->cx, v[1]->loc, buffer ? "TypeError: cannot assign '%s' object to buffer '%s' (torch Tensor or "
               "None required)" : "TypeError: cannot assign '%s' object to parameter '%s' (torch.nn.Parameter or "
               "None required)", py_type_name(v[1]->ty), name);
    return poison(sema);
  }
  int at = obj_add(sema, t, name);
  if (!buffer && !is_param_role(t->attrs->role[at])) t->attrs->role[at] = 'p';
  if (!obj_set(sema, e, t, name, v[1])) return poison(sema);
  if (buffer) t->attrs->role[at] = persistent ? 'b' : 'n';
  Ast *none = ast_new(sema->cx, AST_NONE, e->loc);
  none->ty = ty_new(sema, TY_NONE);
  return result(sema, e, none);
}

// Sets entry en to value v (checked) where e runs, converted to dtype dt unless DT_COUNT; false after an error.
// The attribute entry en (no container's element) is set through: its own, or the one it is tied to.
static ObjAttrs *source_of(const Entry *en, TType **m, int *at) {
  *m = en->owner, *at = en->at;
  obj_untie(m, at);
  return (*m)->attrs;
}

static bool set_entry(Sema *sema, Ast *e, const Entry *en, Ast *v, DType dt) {
  Ctx *cx = sema->cx;
  if (dt != DT_COUNT && is_tensor(v->ty) && v->ty->dtype != dt) {
    v = ast_call(cx, v, "to", ast_list_of(cx, ast_dtype(cx, dt, v->loc), v->loc), v->loc, v->loc);
    if (is_poison(check_expr(sema, v))) return false;
  }
  if (!is_param_container(en->owner)) {
    TType *m;
    int at;
    const char *leaf = source_of(en, &m, &at)->names[at];
    return composite_setattr_ok(sema, m, leaf, v) && obj_set(sema, e, m, leaf, v);
  }
  Ast *k = en->owner->kind == TY_DICT ? ast_str(cx, en->leaf, e->loc) : ast_int(cx, en->at, e->loc);
  Ast *st = ast_new(cx, AST_STORE, e->loc);  // plist[i] = v, seen by every holder
  st->op = -1;
  st->lhs = ast_index(cx, ast_clone(cx, en->owner_path), ast_list_of(cx, k, e->loc), e->loc, e->loc);
  st->rhs = v;
  if (is_poison(check_expr(sema, st->lhs->lhs))) return false;
  int before = cx->nerrors;
  container_store(sema, st);
  vec_push(&cx->arena, &e->unrolled, st);
  return cx->nerrors == before;
}

// ---- load_state_dict(state_dict, strict=True) ----
// The walk's module whose prefix is the longest one key starts with (whose load reports it unexpected).
static int owner_of_key(const Walk *w, const char *key) {
  int best = 0;
  size_t len = 0;
  for (int i = 0; i < w->mods.len; i++) {
    size_t n = strlen(w->prefixes.data[i]);
    if (n >= len && n && !strncmp(key, w->prefixes.data[i], n) && key[n] == '.') best = i, len = n;
  }
  return best;
}

static TType *load_state(Sema *sema, Ast *e, TType *t) {
  if (strcmp(e->name, "load_state_dict")) return NULL;
  static const char *const names[] = {"state_dict", "strict"};
  Ast *v[2];
  bool strict;
  if (!take_args(sema, e, "Module.load_state_dict", names, 2, 2, v) || !bool_arg(sema, v[1], "strict", true, &strict))
    return poison(sema);
  if (!v[0]) {
    diag_error(sema->cx, call_loc(e), "Module.load_state_dict() missing 1 required positional argument: "
               "'state_dict'");
    return poison(sema);
  }
  Ast *sd = v[0];
  if (sd->ty->kind != TY_DICT || (sd->ty->module && !strcmp(sd->ty->module, "set"))) {
    diag_error(sema->cx, sd->loc, "TypeError: Expected state_dict to be dict-like, got <class '%s'>.",
               py_type_name(sd->ty));
    return poison(sema);
  }
  if (sd->kind == AST_CALL && !sd->bi && sd->noperands == 1 && sd->operands[0]->ty == sd->ty) {
    Ast *st = ast_new(sema->cx, AST_EXPR, e->loc);  // b.load_state_dict(a.state_dict()): a's dict, once made
    st->lhs = sd;
    vec_push(&sema->cx->arena, &e->unrolled, st);
    sd = sd->operands[0];
  }
  Ast **vals;
  int n;
  seq_items(sema, sd, &vals, &n);
  Walk w = {0};
  walk_state(sema, &w, t, "", receiver(sema, e), true, 0);
  if (w.deep) {
    diag_error(sema->cx, e->oploc, "RecursionError: maximum recursion depth exceeded in load_state_dict() (a "
               "module holding itself)");
    return poison(sema);
  }
  bool *used = arena_alloc(&sema->cx->arena, (size_t)n + 1);
  for (int j = 0; j < n; j++) used[j] = false;
  VEC(const char *) missing = {0}, msgs = {0};
  int *match = arena_alloc(&sema->cx->arena, sizeof(int) * (size_t)(w.e.len + 1));
  for (int i = 0; i < w.e.len; i++) {
    const Entry *en = &w.e.data[i];
    match[i] = -1;
    if (en->role == 'n') continue;
    for (int j = 0; j < n && match[i] < 0; j++)
      if (sd->ty->keys[j]->kind == TY_STR && !strcmp(sd->ty->keys[j]->module, en->key)) match[i] = j;
    if (match[i] < 0) {
      if (en->at >= 0) vec_push(&sema->cx->arena, &missing, en->key);  // num_batches_tracked: filled in
      continue;
    }
    used[match[i]] = true;
    const TType *x = vals[match[i]]->ty;
    if (!is_tensor(x)) {
      vec_push(&sema->cx->arena, &msgs, arena_printf(&sema->cx->arena, "While copying the parameter named \"%s\", "
               "expected torch.Tensor or Tensor-like object from checkpoint but received <class '%s'>", en->key,
               py_type_name(x)));
      continue;
    }
    int nd = 0;
    int64_t shape[TD_MAX_DIMS];
    bool known = en->ty ? (nd = en->ty->view.ndim, memcpy(shape, en->ty->view.shape, sizeof shape), true)
                 : en->at < 0 || nn_state_shape(sema, en->owner, en->leaf, &nd, shape);
    if (known && !same_shape(nd, shape, x->view.ndim, x->view.shape))
      vec_push(&sema->cx->arena, &msgs, arena_printf(&sema->cx->arena, "size mismatch for %s: copying a param with "
               "shape torch.Size(%s) from checkpoint, the shape in current model is torch.Size(%s).", en->key,
               shape_str(sema, x->view.ndim, x->view.shape), shape_str(sema, nd, shape)));
  }
  VEC(const char *) unexpected = {0};
  for (int m = 0; m < w.mods.len; m++)  // by the module whose load finds it, as PyTorch reports them
    for (int j = 0; j < n; j++) {
      const TType *k = sd->ty->keys[j];
      const char *key = k->kind == TY_STR ? k->module : "";
      if (!used[j] && owner_of_key(&w, key) == m) vec_push(&sema->cx->arena, &unexpected, key);
    }
  const char *head = "";
  if (strict && unexpected.len) {
    const char *s = "Unexpected key(s) in state_dict: ";
    for (int i = 0; i < unexpected.len; i++)
      s = arena_printf(&sema->cx->arena, "%s%s\"%s\"", s, i ? ", " : "", unexpected.data[i]);
    head = arena_printf(&sema->cx->arena, "%s. ", s);
  }
  if (strict && missing.len) {
    const char *s = "Missing key(s) in state_dict: ";
    for (int i = 0; i < missing.len; i++)
      s = arena_printf(&sema->cx->arena, "%s%s\"%s\"", s, i ? ", " : "", missing.data[i]);
    head = arena_printf(&sema->cx->arena, "%s. %s%s", s, *head ? "\n\t" : "", head);
  }
  if (*head || msgs.len) {
    const char *all = head;
    for (int i = 0; i < msgs.len; i++)
      all = arena_printf(&sema->cx->arena, "%s%s%s", all, *all ? "\n\t" : "", msgs.data[i]);
    diag_error(sema->cx, call_loc(e), "RuntimeError: Error(s) in loading state_dict for %s:\n\t%s", module_class(t),
               all);
    return poison(sema);
  }
  for (int i = 0; i < w.e.len; i++) {  // each copied into the module, converted to its dtype as copy_ does
    Entry en = w.e.data[i];
    if (match[i] < 0) continue;
    if (en.at < 0) {  // num_batches_tracked: now an attribute of its own
      en.at = obj_add(sema, en.owner, BATCHES);
      en.owner->attrs->role[en.at] = 'b';
      if (!obj_set(sema, e, en.owner, BATCHES, vals[match[i]])) return poison(sema);
      continue;
    }
    TType *src = NULL;
    int at = 0;
    DType dt = en.ty ? en.ty->dtype : is_param_container(en.owner) ? DT_COUNT : source_of(&en, &src, &at)->want[at];
    if (!set_entry(sema, e, &en, vals[match[i]], dt)) return poison(sema);
    if (!is_param_container(en.owner) && source_of(&en, &src, &at))  // copied into it (a tied parameter stays
      obj_ident(sema, src, at, en.ty ? en.ident : vals[match[i]]);  // tied), or a tensor of its own
  }
  Ast *lists[2];
  for (int l = 0; l < 2; l++) {
    int cnt = l ? unexpected.len : missing.len;
    Ast **keys = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(cnt + 1));
    for (int i = 0; i < cnt; i++) {
      keys[i] = ast_str(sema->cx, l ? unexpected.data[i] : missing.data[i], e->loc);
      check_expr(sema, keys[i]);
    }
    lists[l] = part_seq(sema, e, TY_LIST, keys, cnt);
  }
  static const char *const fields[] = {"missing_keys", "unexpected_keys"};
  Ast *r = part_seq(sema, e, TY_TUPLE, lists, 2);  // _IncompatibleKeys(missing_keys, unexpected_keys)
  r->ty->fields = fields;
  return result(sema, e, r);
}

// ---- to(dtype), half(), float(), double(), bfloat16(); cpu(), cuda(), to(device) ----
static bool is_module_float_dtype(DType t) { return dtype_is_float(t) || dtype_is_complex(t); }

static TType *convert(Sema *sema, Ast *e, TType *t) {
  static const struct {
    const char *name;
    DType dt;
  } casts[] = {{"half", DT_F16}, {"float", DT_F32}, {"double", DT_F64}, {"bfloat16", DT_BF16}, {"to", DT_COUNT},
               {"cpu", DT_COUNT}, {"cuda", DT_COUNT}, {"type", DT_COUNT}};
  size_t c = 0;
  while (c < sizeof casts / sizeof casts[0] && strcmp(casts[c].name, e->name)) c++;
  if (c == sizeof casts / sizeof casts[0]) return NULL;
  const char *qual = arena_printf(&sema->cx->arena, "Module.%s", e->name);
  DType dt = casts[c].dt;
  if (!check_args(sema, e)) return poison(sema);
  if (!strcmp(e->name, "type")) {
    diag_error(sema->cx, e->oploc, "Module.type(dst_type) is not supported: write .to(dtype)");
    return poison(sema);
  }
  for (int i = 0; i < e->list.len; i++) {
    const Ast *a = e->list.data[i];
    const Ast *x = a->kind == AST_KWARG ? a->rhs : a;
    const char *kw = a->kind == AST_KWARG ? a->name : NULL;
    bool is_to = !strcmp(e->name, "to"), is_cuda = !strcmp(e->name, "cuda");
    if (is_to && x->ty->kind == TY_DTYPE && (!kw || !strcmp(kw, "dtype"))) {
      if (!is_module_float_dtype(x->ty->dtype)) {
        static const char *const ints[DT_COUNT] = {[DT_BOOL] = "bool", [DT_U8] = "uint8", [DT_I8] = "int8",
                                                   [DT_I16] = "int16", [DT_I32] = "int32", [DT_I64] = "int64"};
        diag_error(sema->cx, x->loc, "TypeError: nn.Module.to only accepts floating point or complex dtypes, but "
                   "got desired dtype=torch.%s", ints[x->ty->dtype] ? ints[x->ty->dtype] : dtype_name(x->ty->dtype));
        return poison(sema);
      }
      dt = x->ty->dtype;
      continue;
    }
    bool device = x->ty->kind == TY_STR || x->ty->kind == TY_NONE || (is_scalar(x->ty) && x->ty->dtype == DT_I64) ||
                  (x->ty->kind == TY_MODULE && x->ty->module && !strcmp(x->ty->module, "torch.device"));
    if ((is_to || is_cuda) && device && (!kw || !strcmp(kw, "device"))) continue;  // a device: ignored
    if ((is_to || is_cuda) && kw && !strcmp(kw, "non_blocking")) continue;
    if (is_to && is_tensor(x->ty) && !kw) {  // to(tensor): its dtype
      if (is_module_float_dtype(x->ty->dtype)) dt = x->ty->dtype;
      continue;
    }
    if (is_to && kw && !strcmp(kw, "memory_format")) continue;
    diag_error(sema->cx, a->loc, kw ? "%s() got an unexpected keyword argument '%s'" : "%s(): unexpected argument "
               "of type %s", qual, kw ? kw : py_type_name(x->ty));
    return poison(sema);
  }
  Walk w = {.memo = true};
  Ast *recv = receiver(sema, e);
  walk_state(sema, &w, t, "", recv, true, 0);
  for (int i = 0; dt != DT_COUNT && i < w.e.len; i++) {
    Entry *en = &w.e.data[i];
    if (en->at < 0) continue;  // num_batches_tracked: int64, unchanged
    bool to = !strcmp(e->name, "to");
    TType *src;
    int at;
    if (!en->ty) {  // not set yet: load_state_dict converts what it loads
      if (!is_param_container(en->owner)) source_of(en, &src, &at)->want[at] = dt;
      continue;
    }
    bool floating = to ? is_module_float_dtype(en->ty->dtype) : dtype_is_float(en->ty->dtype);
    if (!floating || en->ty->dtype == dt) continue;
    Ast *r = read_entry(sema, en, qual, e->oploc);
    if (!r || !set_entry(sema, e, en, r, dt)) return poison(sema);
    if (!is_param_container(en->owner) && source_of(en, &src, &at))  // param.data = ...: the same tensor
      obj_ident(sema, src, at, en->ident);
  }
  return result(sema, e, itself(sema, recv));
}

// ---- apply(fn): fn called on every module, its modules first, as Module.apply runs it ----
static bool apply_to(Sema *sema, Ast *e, Ast *fn, const TType *t, const char *prefix, Ast *path, int depth) {
  if (depth > 64) {
    diag_error(sema->cx, e->oploc, "RecursionError: maximum recursion depth exceeded in apply()");
    return false;
  }
  ModWalk kids = {0};
  walk_children(sema, &kids, t, prefix, path, false);
  for (int i = 0; i < kids.n; i++)
    if (!apply_to(sema, e, fn, kids.ty[i], kids.name[i], kids.path[i], depth + 1)) return false;
  Ast *call = ast_new(sema->cx, AST_CALL, e->loc);  // (state 3) fn(m): the function value's call
  call->name = fn->name;
  call->oploc = e->oploc;
  vec_push(&sema->cx->arena, &call->list, ast_clone(sema->cx, path));
  int before = sema->cx->nerrors;
  if (is_poison(check_expr(sema, call))) {
    if (sema->cx->nerrors > before)
      diag_note(sema->cx, call_loc(e), "in apply(), called on %s%s%s", *prefix ? "'" : "the module itself", prefix,
                *prefix ? "'" : "");
    return false;
  }
  Ast *st = ast_new(sema->cx, AST_EXPR, e->loc);
  st->lhs = call;
  vec_push(&sema->cx->arena, &e->unrolled, st);
  return true;
}

static TType *apply_fn(Sema *sema, Ast *e, TType *t) {
  if (strcmp(e->name, "apply")) return NULL;
  static const char *const names[] = {"fn"};
  Ast *v[1];
  if (!take_args(sema, e, "Module.apply", names, 1, 1, v)) return poison(sema);
  if (!v[0]) {
    diag_error(sema->cx, call_loc(e), "Module.apply() missing 1 required positional argument: 'fn'");
    return poison(sema);
  }
  Ast *path = receiver(sema, e);
  const char *h = arena_printf(&sema->cx->arena, "(state %d) fn", ++sema->lambdas);
  bind_hidden(sema, e, h, v[0], v[0]->loc);
  const TType *ft = v[0]->ty;
  if (!ft || is_poison(ft)) return poison(sema);
  if (ft->kind != TY_MODULE && !is_container(ft)) {  // (function values, classes and modules are TY_MODULE)
    diag_error(sema->cx, v[0]->loc, "TypeError: '%s' object is not callable", py_type_name(ft));
    return poison(sema);
  }
  Ast *fn = ast_name(sema->cx, h, v[0]->loc);
  if (!apply_to(sema, e, fn, t, "", path, 0)) return poison(sema);
  return result(sema, e, itself(sema, path));
}

// ---- get_submodule(target), get_parameter(target), get_buffer(target) ----
static TType *get_member(Sema *sema, Ast *e, TType *t) {
  const char *n = e->name;
  char want = !strcmp(n, "get_submodule") ? 'm' : !strcmp(n, "get_parameter") ? 'p' : !strcmp(n, "get_buffer") ? 'b'
                                                                                                             : 0;
  if (!want) return NULL;
  static const char *const names[] = {"target"};
  Ast *v[1];
  const char *target = NULL;
  const char *qual = arena_printf(&sema->cx->arena, "Module.%s", n);
  if (!take_args(sema, e, qual, names, 1, 1, v) || !str_arg(sema, v[0], "target", &target)) return poison(sema);
  if (!target) {
    diag_error(sema->cx, call_loc(e), "%s() missing 1 required positional argument: 'target'", qual);
    return poison(sema);
  }
  const char *leaf = want == 'm' ? "" : strrchr(target, '.') ? strrchr(target, '.') + 1 : target;
  size_t mlen = want == 'm' ? strlen(target) : (size_t)(leaf - target) - (leaf > target);
  TType *m = t;
  Ast *path = receiver(sema, e);
  Loc at = v[0]->loc;
  for (size_t i = 0; i < mlen;) {  // the modules named by target's atoms, in turn
    size_t j = i;
    while (j < mlen && target[j] != '.') j++;
    const char *atom = arena_strndup(&sema->cx->arena, target + i, j - i);
    ModWalk kids = {0};
    walk_children(sema, &kids, m, "", path, false);
    int k = 0;
    while (k < kids.n && strcmp(kids.name[k], atom)) k++;
    if (k == kids.n) {
      bool attr = m->kind == TY_MODULE && obj_find(m->attrs, atom) >= 0;
      diag_error(sema->cx, at, attr ? "AttributeError: `%s` is not an nn.Module" : "AttributeError: %s has no "
                 "attribute `%s`", attr ? atom : module_class(m), atom);
      return poison(sema);
    }
    m = (TType *)kids.ty[k], path = kids.path[k];
    i = j + 1;
  }
  if (want == 'm') return result(sema, e, itself(sema, path));
  Walk w = {0};
  own_state(sema, &w, m, "", path);
  int k = 0;
  while (k < w.e.len && strcmp(w.e.data[k].leaf, leaf)) k++;
  bool kind_ok = k < w.e.len && (want == 'p') == is_param_role(w.e.data[k].role);
  if (!kind_ok) {
    bool attr = k < w.e.len || (m->kind == TY_MODULE && obj_find(m->attrs, leaf) >= 0);
    if (attr)
      diag_error(sema->cx, at, want == 'p' ? "AttributeError: `%s` is not an nn.Parameter" : "AttributeError: `%s` "
                 "is not a buffer", leaf);
    else
      diag_error(sema->cx, at, "AttributeError: %s has no attribute `%s`", module_class(m), leaf);
    return poison(sema);
  }
  Ast *r = read_entry(sema, &w.e.data[k], qual, e->oploc);
  return r ? result(sema, e, r) : poison(sema);
}

void module_requires_grad(Sema *sema, TType *t, bool on) {
  Walk w = {.memo = true};
  walk_state(sema, &w, t, "", value_node(sema, t, t->ctor ? t->ctor->loc : (Loc){0}), true, 0);
  for (int i = 0; i < w.e.len; i++)
    if (is_param_role(w.e.data[i].role) && !is_param_container(w.e.data[i].owner)) {
      TType *src;
      int at;
      ObjAttrs *a = source_of(&w.e.data[i], &src, &at);
      w.e.data[i].owner->attrs->role[w.e.data[i].at] = a->role[at] = on ? 'p' : 'f';
      Sym *s = a->hidden[at] ? find_local(sema, a->hidden[at]) : NULL;
      if (s && is_tensor(s->ty)) s->ty->requires_grad = on;  // the parameter's own type (obj_set)
    }
}

TType *module_state(Sema *sema, Ast *e, TType *t) {
  TType *r = state_list(sema, e, t);
  if (!r) r = load_state(sema, e, t);
  if (!r) r = register_state(sema, e, t);
  if (!r) r = convert(sema, e, t);
  if (!r) r = apply_fn(sema, e, t);
  if (!r) r = get_member(sema, e, t);
  return r;
}
