// frontend/sema_dict.c: Python's dicts with compile-time keys, as forward passes use them
// (`d = {'q': q, 'k': k}`, `d['q']`, `for k, v in d.items()`, `f(**kwargs)`): the display
// and dict(...), indexing, `in`, len, iteration over the keys, keys()/values()/items(),
// get, pop, update, copy, setdefault, `d[k] = v` and `del d[k]`, each with Python's meaning
// and messages; sets ({a, b}, set(xs)) as dicts of None values marked "set".
// Invariants: a dict value (TY_DICT) is a sequence of its values in insertion order (its
// node's operands, as a list's: lower.c reads them) with a key per value in ty->keys, each
// a compile-time value (str, int, float, bool, None, dtype), no two equal as Python
// compares them (1 == 1.0 == True). A dict changed in place is one object for every name
// and sequence holding it (seq_replace, as for lists).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

// Python's == of two keys (1 == 1.0 == True; 'a' == 'a').
static bool same_key(const TType *a, const TType *b) {
  if (a->kind == TY_SCALAR && b->kind == TY_SCALAR)
    return a->dtype == DT_F64 || b->dtype == DT_F64 ? a->fval == b->fval : a->ival == b->ival;
  if (a->kind != b->kind) return false;
  if (a->kind == TY_STR) return !strcmp(a->module, b->module);
  if (a->kind == TY_DTYPE) return a->dtype == b->dtype;
  return a->kind == TY_NONE;
}

static TType *str_type(Sema *sema, const char *text) {
  TType *t = ty_new(sema, TY_STR);
  t->module = text;
  return t;
}

static bool key_ok(Sema *sema, const Ast *k) {
  const TType *t = k->ty;
  if (t->kind == TY_STR || t->kind == TY_NONE || t->kind == TY_DTYPE || (t->kind == TY_SCALAR)) return true;
  if (t->kind == TY_LIST || t->kind == TY_DICT)
    diag_error(sema->cx, k->loc, "unhashable type: '%s'", py_type_name(t));
  else
    diag_error(sema->cx, k->loc, "a dict's keys must be compile-time values (strings, numbers, None), not %s: "
               "index a list or keep the tensors under string keys", py_type_name(t));
  return false;
}

// A node standing for compile-time value t (a key) at a's location.
static Ast *key_node(Sema *sema, const Ast *a, TType *t) {
  Ast *n = ast_new(sema->cx, AST_NONE, a->loc);
  n->ty = t;
  return n;
}

static int find_key(const TType *d, const TType *k) {
  for (int i = 0; i < d->nelem; i++)
    if (same_key(d->keys[i], k)) return i;
  return -1;
}

// The dict of keys[i] -> values[i] (checked, keys distinct) as a node at e's location.
Ast *part_dict(Sema *sema, const Ast *e, TType **keys, Ast **values, int n) {
  Ast *d = ast_new(sema->cx, AST_LIST, e->loc);
  set_operands(sema, d, values, n);
  for (int i = 0; i < n; i++) d->operands[i] = seq_now(sema, d->operands[i]);
  TType *t = ty_new(sema, TY_DICT);
  t->nelem = n;
  t->elems = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(n + 1));
  t->keys = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) t->elems[i] = d->operands[i]->ty, t->keys[i] = keys[i];
  d->ty = t;
  return d;
}

// A dict being built: keys and values, a later key replacing an equal one's value in
// place, as Python's dict does.
typedef struct Build {
  TType **keys;
  Ast **vals;
  int n, cap;
} Build;

static void build_from(Sema *sema, Build *b, const Ast *d, int extra) {
  Ast **vals;
  int n = 0;
  if (d) seq_items(sema, d, &vals, &n);
  b->cap = n + extra + 1;
  b->keys = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)b->cap);
  b->vals = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)b->cap);
  for (int i = 0; i < n; i++) b->keys[i] = d->ty->keys[i], b->vals[i] = vals[i];
  b->n = n;
}

static void build_put(Build *b, TType *k, Ast *v) {
  for (int i = 0; i < b->n; i++)
    if (same_key(b->keys[i], k)) {
      b->vals[i] = v;
      return;
    }
  TD_ASSERT(b->n < b->cap);
  b->keys[b->n] = k, b->vals[b->n++] = v;
}

// The pairs of one positional argument of dict() or update(): a dict, or an iterable of
// pairs; false after Python's message.
static bool put_pairs(Sema *sema, Build *b, Ast *a) {
  if (a->ty->kind == TY_DICT) {
    Ast **vals;
    int n;
    seq_items(sema, a, &vals, &n);
    for (int i = 0; i < n; i++) build_put(b, a->ty->keys[i], vals[i]);
    return true;
  }
  Ast **items;
  int n;
  if (!seq_items(sema, a, &items, &n)) {
    diag_error(sema->cx, a->loc, "'%s' object is not iterable", py_type_name(a->ty));
    return false;
  }
  for (int i = 0; i < n; i++) {
    Ast **kv;
    int m;
    if (!seq_items(sema, items[i], &kv, &m) || m != 2) {
      diag_error(sema->cx, items[i]->loc, "dictionary update sequence element #%d has length %d; 2 is required", i,
                 seq_items(sema, items[i], &kv, &m) ? m : 1);
      return false;
    }
    if (!key_ok(sema, kv[0])) return false;
    build_put(b, kv[0]->ty, kv[1]);
  }
  return true;
}

static int count_pairs(Sema *sema, Ast *a) {
  Ast **items;
  int n;
  return seq_items(sema, a, &items, &n) ? n : 0;
}

// set(), set(iterable) and the display {a, b} (the parser's set([a, b])): a dict of the
// elements as keys, each of value None, marked a set (its module "set"), so that `in`,
// len and iteration (in the order written) are a dict's.
static TType *set_builtin(Sema *sema, Ast *e) {
  Ast *pos = NULL;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG) {
      diag_error(sema->cx, a->loc, "set() takes no keyword arguments");
      return poison(sema);
    }
    if (pos) {
      diag_error(sema->cx, call_loc(e), "set expected at most 1 argument, got %d", e->list.len);
      return poison(sema);
    }
    pos = a;
  }
  Ast **items = NULL;
  int n = 0;
  if (pos && pos->ty->kind == TY_DICT) pos = dict_keys(sema, pos, pos);
  if (pos && (is_tensor(pos->ty) || !seq_items(sema, pos, &items, &n))) {
    diag_error(sema->cx, pos->loc, is_tensor(pos->ty) ? "a set's elements must be compile-time values, and a "
               "tensor's are known only when the program runs: use torch.unique(x) for its distinct values"
                                                      : "'%s' object is not iterable", py_type_name(pos->ty));
    return poison(sema);
  }
  Build b;
  build_from(sema, &b, NULL, n);
  for (int i = 0; i < n; i++) {
    const TType *t = items[i]->ty;
    if (t->kind != TY_STR && t->kind != TY_NONE && t->kind != TY_DTYPE && t->kind != TY_SCALAR) {
      diag_error(sema->cx, items[i]->loc, t->kind == TY_LIST || t->kind == TY_DICT ? "unhashable type: '%s'"
                 : "a set's elements must be compile-time values (strings, numbers, None), not %s: keep "
                   "tensors in a list or a tuple",
                 py_type_name(t));
      return poison(sema);
    }
    Ast *none = key_node(sema, items[i], ty_new(sema, TY_NONE));
    build_put(&b, items[i]->ty, none);
  }
  Ast *d = part_dict(sema, e, b.keys, b.vals, b.n);
  d->ty->module = "set";
  set_operands(sema, e, d->operands, d->noperands);
  return d->ty;
}

// dict(), dict(pairs), dict(d), dict(k=v, ...) and the display {k: v, ...} (the parser's
// dict([(k, v), ...])); set(...) and {a, b}; NULL when e is no call of either.
TType *dict_builtin(Sema *sema, Ast *e) {
  if (!e->lhs && !strcmp(e->name, "set") && (e->op == 1 || !find_local(sema, "set"))) return set_builtin(sema, e);
  if (e->lhs || strcmp(e->name, "dict") || (e->op != 1 && find_local(sema, "dict"))) return NULL;
  int npos = 0, extra = 0;
  Ast *pos = NULL;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG) {
      extra++;
      continue;
    }
    pos = a;
    npos++;
  }
  if (npos > 1) {
    diag_error(sema->cx, call_loc(e), "dict expected at most 1 argument, got %d", npos);
    return poison(sema);
  }
  Build b;
  build_from(sema, &b, NULL, extra + (pos ? count_pairs(sema, pos) : 0));
  if (pos && !put_pairs(sema, &b, pos)) return poison(sema);
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG) build_put(&b, str_type(sema, a->name), a->rhs);
  }
  Ast *d = part_dict(sema, e, b.keys, b.vals, b.n);
  set_operands(sema, e, d->operands, d->noperands);
  return d->ty;
}

static const char *key_repr(Sema *sema, const TType *k, Loc loc) {
  const char *r = py_str(sema, k, true, loc);
  return r ? r : "?";
}

// d[k]: the value (e's one operand), or Python's KeyError.
TType *dict_index(Sema *sema, Ast *e) {
  const TType *d = e->lhs->ty;
  if (e->list.len != 1 || e->list.data[0]->kind == AST_SLICE) {
    diag_error(sema->cx, e->oploc, e->list.len != 1 ? "a dict's key is one value: index it with d[key]"
                                                    : "unhashable type: 'slice'");
    return poison(sema);
  }
  Ast *k = e->list.data[0];
  if (!key_ok(sema, k)) return poison(sema);
  int i = find_key(d, k->ty);
  if (i < 0) {
    diag_error(sema->cx, k->loc, "KeyError: %s", key_repr(sema, k->ty, k->loc));
    return poison(sema);
  }
  Ast **vals;
  int n;
  seq_items(sema, e->lhs, &vals, &n);
  e->ival = i;
  set_operand1(sema, e, vals[i]);
  return d->elems[i];
}

// The keys of dict d as a list (iterating a dict, list(d), keys()).
Ast *dict_keys(Sema *sema, const Ast *at, const Ast *d) {
  int n = d->ty->nelem;
  Ast **ks = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) ks[i] = key_node(sema, at, d->ty->keys[i]);
  return part_seq(sema, at, TY_LIST, ks, n);
}

static bool want_args(Sema *sema, Ast *e, int lo, int hi) {
  for (int i = 0; i < e->list.len; i++)
    if (e->list.data[i]->kind == AST_KWARG && strcmp(e->name, "update")) {
      diag_error(sema->cx, e->list.data[i]->loc, "dict.%s() takes no keyword arguments", e->name);
      return false;
    }
  int n = 0;
  for (int i = 0; i < e->list.len; i++) n += e->list.data[i]->kind != AST_KWARG;
  if (n < lo || n > hi) {
    if (lo == hi && lo == 0)
      diag_error(sema->cx, call_loc(e), "dict.%s() takes no arguments (%d given)", e->name, n);
    else if (lo == hi)
      diag_error(sema->cx, call_loc(e), "%s expected %d argument%s, got %d", e->name, lo, lo == 1 ? "" : "s", n);
    else if (n < lo)
      diag_error(sema->cx, call_loc(e), "%s expected at least %d argument%s, got %d", e->name, lo, lo == 1 ? "" : "s", n);
    else
      diag_error(sema->cx, call_loc(e), "%s expected at most %d argument%s, got %d", e->name, hi, hi == 1 ? "" : "s", n);
    return false;
  }
  return true;
}

// e becomes the value v: the call's one operand (lower.c reads it once the rebinding it
// carries in e->unrolled is bound).
static TType *value_is(Sema *sema, Ast *e, Ast *v) {
  set_operand1(sema, e, v);
  return v->ty;
}

// d.keys(), d.values(), d.items(), d.get(k[, default]), d.pop(k[, default]),
// d.update(other, **kw), d.copy(), d.setdefault(k[, default]).
TType *dict_method(Sema *sema, Ast *e) {
  const char *n = e->name;
  Ast *d = e->lhs, **vals;
  int nv;
  seq_items(sema, d, &vals, &nv);
  if (!strcmp(n, "keys") || !strcmp(n, "values") || !strcmp(n, "items") || !strcmp(n, "copy")) {
    if (!want_args(sema, e, 0, 0)) return poison(sema);
    Ast *r;
    if (n[0] == 'k') {
      r = dict_keys(sema, e, d);
    } else if (n[0] == 'v') {
      r = part_seq(sema, e, TY_LIST, vals, nv);
    } else if (n[0] == 'c') {
      r = part_dict(sema, e, d->ty->keys, vals, nv);
    } else {
      Ast **pairs = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(nv + 1));
      for (int i = 0; i < nv; i++) {
        Ast *kv[2] = {key_node(sema, e, d->ty->keys[i]), vals[i]};
        pairs[i] = part_seq(sema, e, TY_TUPLE, kv, 2);
      }
      r = part_seq(sema, e, TY_LIST, pairs, nv);
    }
    set_operands(sema, e, r->operands, r->noperands);
    return r->ty;
  }
  bool get = !strcmp(n, "get"), pop = !strcmp(n, "pop"), setdefault = !strcmp(n, "setdefault");
  if (get || pop || setdefault) {
    if (!want_args(sema, e, 1, 2)) return poison(sema);
    Ast *k = e->list.data[0];
    if (!key_ok(sema, k)) return poison(sema);
    int i = find_key(d->ty, k->ty);
    Ast *dflt = e->list.len > 1 ? e->list.data[1] : NULL;
    if (!dflt) {
      dflt = ast_new(sema->cx, AST_NONE, e->loc);
      dflt->ty = ty_new(sema, TY_NONE);
    }
    if (get) return value_is(sema, e, i >= 0 ? vals[i] : dflt);
    if (setdefault) {
      if (i >= 0) return value_is(sema, e, vals[i]);
      Build b;
      build_from(sema, &b, d, 1);
      build_put(&b, k->ty, dflt);
      seq_replace(sema, e, d, part_dict(sema, e, b.keys, b.vals, b.n), true);
      return value_is(sema, e, dflt);
    }
    if (i < 0) {
      if (e->list.len > 1) return value_is(sema, e, dflt);
      diag_error(sema->cx, k->loc, "KeyError: %s", key_repr(sema, k->ty, k->loc));
      return poison(sema);
    }
    Build b;
    build_from(sema, &b, NULL, nv);
    for (int j = 0; j < nv; j++)
      if (j != i) build_put(&b, d->ty->keys[j], vals[j]);
    seq_replace(sema, e, d, part_dict(sema, e, b.keys, b.vals, b.n), true);
    return value_is(sema, e, vals[i]);
  }
  if (!strcmp(n, "update")) {
    if (!want_args(sema, e, 0, 1)) return poison(sema);
    int extra = 0;
    for (int i = 0; i < e->list.len; i++)
      extra += e->list.data[i]->kind == AST_KWARG ? 1 : count_pairs(sema, e->list.data[i]);
    Build b;
    build_from(sema, &b, d, extra);
    for (int i = 0; i < e->list.len; i++) {
      Ast *a = e->list.data[i];
      if (a->kind == AST_KWARG) build_put(&b, str_type(sema, a->name), a->rhs);
      else if (!put_pairs(sema, &b, a)) return poison(sema);
    }
    seq_replace(sema, e, d, part_dict(sema, e, b.keys, b.vals, b.n), true);
    return ty_new(sema, TY_NONE);
  }
  diag_error(sema->cx, e->oploc, "'dict' object has no attribute '%s'", n);
  return poison(sema);
}

// d[k] = v (statement st, its target t = d[k] unchecked, v checked): the dict with k's
// value replaced or k added last; false after an error.
bool dict_store(Sema *sema, Ast *st, Ast *t, Ast *v) {
  if (t->list.len != 1 || t->list.data[0]->kind == AST_SLICE) {
    diag_error(sema->cx, t->oploc, "a dict's key is one value: store with d[key] = v");
    return false;
  }
  Ast *k = t->list.data[0];
  if (is_poison(check_expr(sema, k)) || !key_ok(sema, k)) return false;
  if (st->op >= 0) {  // d[k] += v: d[k] = d[k] + v
    Ast *cur = ast_index(sema->cx, t->lhs, ast_list_of(sema->cx, k, k->loc), t->oploc, t->loc);
    Ast *sum = ast_binary(sema->cx, (BinOp)st->op, cur, st->rhs, st->oploc);
    sum->loc = st->loc;
    if (is_poison(check_expr(sema, sum))) return false;
    v = sum;
  }
  Build b;
  build_from(sema, &b, t->lhs, 1);
  build_put(&b, k->ty, v);
  seq_replace(sema, st, t->lhs, part_dict(sema, st, b.keys, b.vals, b.n), true);
  return true;
}

// del d[k] (t, its lhs checked) at the statement's call `del`.
bool dict_del(Sema *sema, Ast *call, Ast *t) {
  if (t->list.len != 1 || t->list.data[0]->kind == AST_SLICE) {
    diag_error(sema->cx, t->oploc, "a dict's key is one value: del d[key]");
    return false;
  }
  Ast *k = t->list.data[0];
  if (!key_ok(sema, k)) return false;
  int i = find_key(t->lhs->ty, k->ty);
  if (i < 0) {
    diag_error(sema->cx, k->loc, "KeyError: %s", key_repr(sema, k->ty, k->loc));
    return false;
  }
  Ast **vals;
  int nv;
  seq_items(sema, t->lhs, &vals, &nv);
  Build b;
  build_from(sema, &b, NULL, nv);
  for (int j = 0; j < nv; j++)
    if (j != i) build_put(&b, t->lhs->ty->keys[j], vals[j]);
  seq_replace(sema, call, t->lhs, part_dict(sema, call, b.keys, b.vals, b.n), true);
  return true;
}

// k in d: whether d has the key (1, 0; -1 after an error at loc).
int dict_has(Sema *sema, const TType *d, const TType *k, Loc loc) {
  if (k->kind == TY_TENSOR) {
    diag_error(sema->cx, loc, "a tensor's value is known only at run time: 'in' and 'is' need compile-time values");
    return -1;
  }
  return find_key(d, k) >= 0;
}

// **d in a call's arguments: name=value for each of d's keys, all strings (Python's
// messages otherwise); false after an error.
bool dict_unpack(Sema *sema, Ast *a, AstList *out) {
  Ast *d = a->lhs;
  if (d->ty->kind != TY_DICT) {
    diag_error(sema->cx, d->loc, "argument after ** must be a mapping, not %s", py_type_name(d->ty));
    return false;
  }
  Ast **vals;
  int n;
  seq_items(sema, d, &vals, &n);
  for (int i = 0; i < n; i++) {
    const TType *k = d->ty->keys[i];
    if (k->kind != TY_STR) {
      diag_error(sema->cx, d->loc, "keywords must be strings");
      return false;
    }
    for (int j = 0; j < out->len; j++)
      if (out->data[j]->kind == AST_KWARG && !strcmp(out->data[j]->name, k->module)) {
        diag_error(sema->cx, d->loc, "got multiple values for keyword argument '%s'", k->module);
        return false;
      }
    Ast *kw = ast_kwarg(sema->cx, k->module, vals[i], a->loc, a->loc);
    kw->ty = vals[i]->ty;
    vec_push(&sema->cx->arena, out, kw);
  }
  return true;
}
