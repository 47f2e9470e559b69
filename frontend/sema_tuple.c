// frontend/sema_tuple.c: Python sequences and the Python values of a tensor. Tuple and
// list values, indexing, slicing and attributes of them (x.max(1).values); a tensor's
// shape, size(), ndim, dim(), numel() and dtype; Python's len, float, int, bool, min
// and max of numbers; and the ops that return several tensors (split, chunk, unbind,
// tensor_split, max/min with a dim, broadcast_tensors), each element a part of its own.
// Invariant: a sequence value (TY_TUPLE, TY_LIST) that is not a name or a call of a user
// function has one operand per element, the element's expression (lower.c reads them).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// (a dict is a sequence of its values here: seq_items, seq_now, seq_replace)
static bool is_seq(const TType *t) { return t && (t->kind == TY_TUPLE || t->kind == TY_LIST || t->kind == TY_DICT); }

static TType *seq_type(Sema *sema, TyKind k, Ast **items, int n) {
  TType *t = ty_new(sema, k);
  t->nelem = n;
  t->elems = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) t->elems[i] = items[i]->ty;
  return t;
}

// The sequence v is now: a name holding one is the expression its binding holds at this
// point, so that a list built of names keeps the values they have here (`c = [a]; a =
// [y]`: c[0] is still the old a), as Python's list holds objects, not names.
Ast *seq_now(Sema *sema, Ast *v) {
  for (int guard = 0; v && v->kind == AST_NAME && is_seq(v->ty) && guard < 64; guard++) {
    Sym *s = find_local(sema, v->name);
    Const *c = s || find_dim(sema, v->name) ? NULL : find_const(sema, v->name);  // a const table's expression
    if (c && c->src && c->ty == v->ty) {
      v = c->src;
      continue;
    }
    if (!s || !s->src || s->ty != v->ty) break;
    v = s->src;
  }
  return v;
}

// e becomes the sequence of kind k of items[0..n).
static TType *seq_of(Sema *sema, Ast *e, TyKind k, Ast **items, int n) {
  set_operands(sema, e, items, n);
  for (int i = 0; i < n; i++) e->operands[i] = seq_now(sema, e->operands[i]);
  return seq_type(sema, k, items, n);
}

// e becomes the tuple of items (checked parts), a call returning several tensors.
TType *tuple_result(Sema *sema, Ast *e, Ast *const *items, int n) {
  return seq_of(sema, e, TY_TUPLE, (Ast **)items, n);
}

// A list or tuple node of items already checked, at e's location.
Ast *part_seq(Sema *sema, const Ast *e, TyKind k, Ast **items, int n) {
  Ast *l = ast_new(sema->cx, k == TY_TUPLE ? AST_TUPLE : AST_LIST, e->loc);
  for (int i = 0; i < n; i++) vec_push(&sema->cx->arena, &l->list, items[i]);
  l->ty = seq_of(sema, l, k, items, n);
  return l;
}

// [v0, v1, ...]: a list of Python ints (a size or dims argument) at e's location.
Ast *part_ints(Sema *sema, const Ast *e, int n, const int64_t *v) {
  Ast *items[MAX_LIST];
  TD_ASSERT(n <= MAX_LIST);
  for (int i = 0; i < n; i++) items[i] = part_int(sema, e, v[i]);
  return part_seq(sema, e, TY_LIST, items, n);
}

// [a, b] and (a, b)
TType *check_seq(Sema *sema, Ast *e) {
  if (!check_items(sema, &e->list)) return poison(sema);
  return seq_of(sema, e, e->kind == AST_TUPLE ? TY_TUPLE : TY_LIST, e->list.data, e->list.len);
}

bool is_element(const Ast *e) {
  if ((e->kind != AST_INDEX && e->kind != AST_ATTR) || !e->lhs || !is_seq(e->lhs->ty)) return false;
  return e->kind == AST_ATTR || e->list.len != 1 || e->list.data[0]->kind != AST_SLICE;
}

// Element k of sequence a as an expression of its own, for a sequence whose element
// expressions sema does not hold (the tuple a user function returns): lowering reads
// it from a's value (lower.c), so no check is needed.
static Ast *element_of(Sema *sema, Ast *a, int k) {
  Ast *e = ast_new(sema->cx, AST_INDEX, a->loc);
  e->lhs = a;
  vec_push(&sema->cx->arena, &e->list, ast_int(sema->cx, k, a->loc));
  e->ival = k;
  e->ty = a->ty->elems[k];
  return e;
}

bool seq_items(Sema *sema, const Ast *a, Ast ***items, int *n) {
  if (!is_seq(a->ty)) return false;
  if (a->kind == AST_NAME && seq_now(sema, (Ast *)a) != a) return seq_items(sema, seq_now(sema, (Ast *)a), items, n);
  if (a->kind == AST_NAME) {
    Sym *s = find_local(sema, a->name);
    TD_ASSERT(s && s->src);  // bind_expr gives every sequence's name its expression
    return seq_items(sema, s->src, items, n);
  }
  if ((a->kind == AST_COND || is_element(a)) && a->noperands == 1) return seq_items(sema, a->operands[0], items, n);
  if ((a->kind == AST_CALL && a->inlined) || a->noperands != a->ty->nelem) {
    int m = a->ty->nelem;
    *items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(m + 1));
    for (int k = 0; k < m; k++) (*items)[k] = element_of(sema, (Ast *)a, k);
    *n = m;
    return true;
  }
  *items = a->operands;
  *n = a->noperands;
  return true;
}

// ============================================================================
// t[i], t[a:b:c], t.values
// ============================================================================
// e is element k of the sequence e->lhs.
static TType *seq_element(Sema *sema, Ast *e, int k) {
  Ast **items;
  int n;
  e->ival = k;
  if (seq_items(sema, e->lhs, &items, &n)) set_operand1(sema, e, items[k]);
  return e->lhs->ty->elems[k];
}

static int64_t slice_clamp(int64_t v, int64_t n, int64_t step) {
  if (v < 0) v += n;
  if (v < 0) return step < 0 ? -1 : 0;
  if (v >= n) return step < 0 ? n - 1 : n;
  return v;
}

static bool slice_part(Sema *sema, Ast *b, int64_t *out, bool *given) {
  *given = b && b->kind != AST_NONE && !(b->ty && b->ty->kind == TY_NONE);
  if (!*given) return true;
  if (is_scalar(b->ty) && b->ty->dtype != DT_F64) {
    *out = b->ty->ival;
    return true;
  }
  diag_error(sema->cx, b->loc, "slice indices must be integers or None or have an __index__ method");
  return false;
}

TType *seq_index(Sema *sema, Ast *e) {
  const TType *t = e->lhs->ty;
  const char *what = t->kind == TY_TUPLE ? "tuple" : "list";
  if (t->container && !container_index_ok(sema, e)) return poison(sema);  // PyTorch's messages
  if (e->list.len != 1) {
    diag_error(sema->cx, e->oploc, "%s indices must be integers or slices, not tuple", what);
    return poison(sema);
  }
  Ast *it = e->list.data[0];
  if (it->kind == AST_SLICE) {
    int64_t lo = 0, hi = 0, step = 1;
    bool glo, ghi, gst;
    if (!slice_part(sema, it->lhs, &lo, &glo) || !slice_part(sema, it->rhs, &hi, &ghi) ||
        !slice_part(sema, it->step, &step, &gst))
      return poison(sema);
    if (step == 0) {
      diag_error(sema->cx, it->step->loc, "slice step cannot be zero");
      return poison(sema);
    }
    int64_t n = t->nelem;
    lo = glo ? slice_clamp(lo, n, step) : step > 0 ? 0 : n - 1;
    hi = ghi ? slice_clamp(hi, n, step) : step > 0 ? n : -1;
    Ast **items;
    int ni, np = 0;
    seq_items(sema, e->lhs, &items, &ni);
    Ast **picked = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(ni + 1));
    for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) picked[np++] = items[i];
    TType *r = seq_of(sema, e, t->kind, picked, np);
    r->size = t->size;  // a slice of a torch.Size is one
    r->container = t->container;  // a slice of a Sequential is one, as a ModuleList's
    if (t->keys && t->kind == TY_LIST) {  // a named Sequential's slice keeps the names
      r->keys = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(np + 1));
      for (int64_t i = lo, j = 0; step > 0 ? i < hi : i > hi; i += step) r->keys[j++] = t->keys[i];
    }
    return r;
  }
  if (it->kind == AST_ELLIPSIS || it->kind == AST_NONE || !is_scalar(it->ty) || it->ty->dtype == DT_F64) {
    diag_error(sema->cx, it->loc, "%s indices must be integers or slices, not %s", what,
               it->kind == AST_ELLIPSIS ? "ellipsis" : it->kind == AST_NONE ? "NoneType" : py_type_name(it->ty));
    return poison(sema);
  }
  int64_t k = it->ty->ival;
  if (k < -t->nelem || k >= t->nelem) {
    diag_error(sema->cx, it->loc, "%s index out of range", what);
    return poison(sema);
  }
  return seq_element(sema, e, (int)(k < 0 ? k + t->nelem : k));
}

// t + u (both tuples or both lists), t * n
TType *seq_binary(Sema *sema, Ast *e) {
  const TType *a = e->lhs->ty, *b = e->rhs->ty;
  const char *an = py_type_name(a), *bn = py_type_name(b);
  Ast **ia, **ib = NULL;
  int na, nb = 0, n = 0;
  if (e->op == BIN_ADD && a->kind != b->kind) {
    diag_error(sema->cx, e->oploc, "can only concatenate %s (not \"%s\") to %s", an, bn, an);
    return poison(sema);
  }
  if (e->op == BIN_MUL && !(is_scalar(b) && b->dtype != DT_F64)) {
    diag_error(sema->cx, e->oploc, "can't multiply sequence by non-int of type '%s'", bn);
    return poison(sema);
  }
  seq_items(sema, e->lhs, &ia, &na);
  if (e->op == BIN_ADD) seq_items(sema, e->rhs, &ib, &nb);
  int64_t reps = e->op == BIN_MUL ? (b->ival < 0 ? 0 : b->ival) : 1;
  if ((int64_t)na * reps + nb > MAX_SEQ) {
    diag_error(sema->cx, e->oploc, "a sequence of more than %d elements is not supported", MAX_SEQ);
    return poison(sema);
  }
  Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(na * reps + nb + 1));
  for (int64_t r = 0; r < reps; r++)
    for (int i = 0; i < na; i++) items[n++] = ia[i];
  for (int i = 0; e->op == BIN_ADD && i < nb; i++) items[n++] = ib[i];
  TType *r = seq_of(sema, e, a->kind, items, n);
  r->size = a->size;  // torch.Size + tuple is a torch.Size
  return r;
}

// ============================================================================
// Lists changed in place: xs.append(v), xs.extend(ys), xs.insert(i, v), xs += ys
// ============================================================================
// A list changed in place is a new value of the same object (its TType identifies it):
// swaps holds each object changed so far (old type -> its new expression), so that a
// sequence holding one (b = [a, a]; a.append(y): b sees it) is rebuilt holding the new
// one, and so on outwards.
typedef struct Swaps {
  const TType *old[MAX_LIST];
  Ast *now[MAX_LIST];
  int n;
} Swaps;

// v with every changed object in it replaced, or NULL when v holds none.
static Ast *swapped(Sema *sema, Ast *at, Ast *v, Swaps *sw, int depth) {
  for (int i = 0; i < sw->n; i++)
    if (v->ty == sw->old[i]) return sw->now[i];
  Ast **items, **fresh = NULL;
  int n;
  if (depth > 32 || !seq_items(sema, seq_now(sema, v), &items, &n)) return NULL;
  for (int k = 0; k < n; k++) {
    Ast *r = is_seq(items[k]->ty) ? swapped(sema, at, items[k], sw, depth + 1) : NULL;
    if (!r) continue;
    if (!fresh) {
      fresh = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n + 1));
      for (int j = 0; j < n; j++) fresh[j] = items[j];
    }
    fresh[k] = r;
  }
  if (!fresh) return NULL;
  Ast *nv = v->ty->kind == TY_DICT ? part_dict(sema, at, v->ty->keys, fresh, n) : part_seq(sema, at, v->ty->kind, fresh, n);
  nv->ty->size = v->ty->size;
  nv->ty->container = v->ty->container;  // an nn container stays one (sema_container.c)
  if (v->ty->kind == TY_LIST) nv->ty->keys = v->ty->keys;  // a named Sequential keeps its names
  if (sw->n < MAX_LIST) sw->old[sw->n] = v->ty, sw->now[sw->n++] = nv;
  return nv;
}

// name bound to v at node at: the binding lowering runs there (at->unrolled).
static void rebind_at(Sema *sema, Ast *at, const char *name, Loc loc, Ast *v) {
  bind_expr(sema, name, v, loc);
  Ast *a = ast_new(sema->cx, AST_ASSIGN, at->loc);
  vec_push(&sema->cx->arena, &a->list, ast_name(sema->cx, name, loc));
  a->rhs = v;
  set_operand1(sema, a, v);
  a->ty = v->ty;
  vec_push(&sema->cx->arena, &at->unrolled, a);
}

// The name `name` (a local sequence) becomes the sequence of kind k of items: at node at
// (a call or an augmented assignment), whose `unrolled` gets the bindings lowering runs
// there. A list is one object however many names and sequences hold it (b = a; c = [a];
// a.append(x) changes b and c): with aliases, every name holding it, or a sequence that
// holds it at any depth, is rebound to the changed value.
void seq_rebind(Sema *sema, Ast *at, const Ast *name, Ast **items, int n, TyKind k, bool aliases) {
  seq_replace(sema, at, name, part_seq(sema, at, k, items, n), aliases);
}

void seq_replace(Sema *sema, Ast *at, const Ast *name, Ast *nl, bool aliases) {
  if (!nl->ty->container) nl->ty->container = name->ty->container;  // an nn container stays one
  if (!aliases) {
    rebind_at(sema, at, name->name, name->loc, nl);
    return;
  }
  Changed c = {name->ty, nl};  // seen by the caller of the function being inlined too (inline_call)
  vec_push(&sema->cx->arena, &sema->changed, c);
  Swaps sw = {.old = {name->ty}, .now = {nl}, .n = 1};
  Sym *cur[MAX_SEQ / 256];
  Ast *to[MAX_SEQ / 256];
  int nc = 0;
  for (Sym *s = sema->scope; s && nc < MAX_SEQ / 256; s = s->next) {
    if (!is_seq(s->ty) || !s->src || find_local(sema, s->name) != s) continue;  // an older binding
    Ast *r = swapped(sema, at, s->src, &sw, 0);
    if (s->ty == name->ty) r = nl;
    if (r) cur[nc] = s, to[nc++] = r;
  }
  for (int i = 0; i < nc; i++) rebind_at(sema, at, cur[i]->name, cur[i]->loc, to[i]);
}

bool iterable_items(Sema *sema, Ast *v, Ast ***items, int *n, Loc loc) {
  if (derived_modules(sema, v->ty)) v = modules_node(sema, v);  // an instance of class Blocks(nn.ModuleList)
  if (is_tensor(v->ty) && v->ty->view.ndim > 0) v = unbind_ast(sema, v, v);
  if (v->ty->kind == TY_DICT) v = dict_keys(sema, v, v);  // iterating a dict: its keys
  if (is_poison(v->ty)) return false;
  if (!seq_items(sema, v, items, n)) {
    diag_error(sema->cx, loc, is_tensor(v->ty) ? "iteration over a 0-d tensor" : "'%s' object is not iterable",
               py_type_name(v->ty));
    return false;
  }
  return true;
}

// An index of a list of n elements (Python's negative ones counted from the end) into
// *k; false after Python's message (range: what an index out of range says).
static bool list_position(Sema *sema, const Ast *i, int64_t n, const char *range, int64_t *k) {
  const TType *it = i->ty;
  if (!is_scalar(it) || it->dtype == DT_F64) {
    diag_error(sema->cx, i->loc, "'%s' object cannot be interpreted as an integer", py_type_name(it));
    return false;
  }
  *k = it->ival < 0 ? it->ival + n : it->ival;
  if (*k < 0 || *k >= n) {
    diag_error(sema->cx, i->loc, "%s", range);
    return false;
  }
  return true;
}

// xs.pop() and xs.pop(i): the element, which the call's value is (its one operand), and the
// list without it (every name and sequence holding the list sees it).
static TType *list_pop(Sema *sema, Ast *e) {
  if (e->list.len > 1) {
    diag_error(sema->cx, call_loc(e), "pop expected at most 1 argument, got %d", e->list.len);
    return poison(sema);
  }
  Ast **old;
  int nold;
  seq_items(sema, e->lhs, &old, &nold);
  int64_t k = nold - 1;
  if (!nold && !e->list.len) {
    diag_error(sema->cx, call_loc(e), "pop from empty list");
    return poison(sema);
  }
  if (e->list.len && !list_position(sema, e->list.data[0], nold, nold ? "pop index out of range" : "pop from empty list",
                                    &k))
    return poison(sema);
  Ast *v = old[k];
  Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(nold + 1));
  int m = 0;
  for (int i = 0; i < nold; i++)
    if (i != k) items[m++] = old[i];
  seq_rebind(sema, e, e->lhs, items, m, TY_LIST, true);
  set_operand1(sema, e, v);
  return v->ty;
}

// del t of each target t of statement call `del` (del x, del xs[i], del xs[a:b]): a name
// is unbound, a list loses the elements (every name and sequence holding it sees it), as
// Python does; false after Python's message.
bool seq_del(Sema *sema, Ast *call) {
  for (int i = 0; i < call->list.len; i++) {
    Ast *t = call->list.data[i];
    if (t->kind == AST_NAME) {
      if (!find_local(sema, t->name)) {
        diag_error(sema->cx, t->loc, "name '%s' is not defined", t->name);
        return false;
      }
      unbind_name(sema, t->name);
      continue;
    }
    if (t->kind != AST_INDEX) {
      diag_error(sema->cx, t->loc, "cannot delete %s", t->kind == AST_CALL ? "function call" : "expression");
      return false;
    }
    if (is_poison(check_expr(sema, t->lhs))) return false;
    for (int j = 0; j < t->list.len; j++) {
      Ast *it = t->list.data[j], *parts[3] = {it->lhs, it->rhs, it->step};
      for (int q = 0; q < (it->kind == AST_SLICE ? 3 : 0); q++)
        if (parts[q] && is_poison(check_expr(sema, parts[q]))) return false;
      if (it->kind != AST_SLICE && is_poison(check_expr(sema, it))) return false;
    }
    const TType *l = t->lhs->ty;
    if (l->kind == TY_DICT) {
      if (!dict_del(sema, call, t)) return false;
      continue;
    }
    if (l->kind != TY_LIST) {
      diag_error(sema->cx, t->lhs->loc, "'%s' object doesn't support item deletion", py_type_name(l));
      return false;
    }
    Ast **old;
    int nold;
    seq_items(sema, t->lhs, &old, &nold);
    bool *gone = arena_alloc(&sema->cx->arena, sizeof(bool) * (size_t)(nold + 1));
    if (t->list.len != 1) {
      diag_error(sema->cx, t->oploc, "list indices must be integers or slices, not tuple");
      return false;
    }
    Ast *it = t->list.data[0];
    if (it->kind == AST_SLICE) {  // the elements the slice picks
      int64_t lo = 0, hi = 0, step = 1;
      bool glo, ghi, gst;
      if (!slice_part(sema, it->lhs, &lo, &glo) || !slice_part(sema, it->rhs, &hi, &ghi) ||
          !slice_part(sema, it->step, &step, &gst))
        return false;
      if (step == 0) {
        diag_error(sema->cx, it->step->loc, "slice step cannot be zero");
        return false;
      }
      lo = glo ? slice_clamp(lo, nold, step) : step > 0 ? 0 : nold - 1;
      hi = ghi ? slice_clamp(hi, nold, step) : step > 0 ? nold : -1;
      for (int64_t q = lo; step > 0 ? q < hi : q > hi; q += step) gone[q] = true;
    } else {
      int64_t k;
      if (!list_position(sema, it, nold, "list assignment index out of range", &k)) return false;
      gone[k] = true;
    }
    Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(nold + 1));
    int m = 0;
    for (int q = 0; q < nold; q++)
      if (!gone[q]) items[m++] = old[q];
    seq_rebind(sema, call, t->lhs, items, m, TY_LIST, true);
  }
  return true;
}

TType *list_method(Sema *sema, Ast *e) {
  const TType *l = e->lhs->ty;
  const char *n = e->name;
  bool known = !strcmp(n, "append") || !strcmp(n, "extend") || !strcmp(n, "insert") || !strcmp(n, "pop");
  if (l->kind != TY_LIST || !known) {
    diag_error(sema->cx, e->oploc, "'%s' object has no attribute '%s'", py_type_name(l), n);
    return poison(sema);
  }
  int want = n[0] == 'i' ? 2 : 1;
  for (int i = 0; i < e->list.len; i++)
    if (e->list.data[i]->kind == AST_KWARG) {
      diag_error(sema->cx, e->list.data[i]->loc, "list.%s() takes no keyword arguments", n);
      return poison(sema);
    }
  if (n[0] == 'p') return list_pop(sema, e);
  if (e->list.len != want) {
    if (want == 1) diag_error(sema->cx, call_loc(e), "list.%s() takes exactly one argument (%d given)", n, e->list.len);
    else diag_error(sema->cx, call_loc(e), "insert expected 2 arguments, got %d", e->list.len);
    return poison(sema);
  }
  Ast **old, **more = NULL;
  int nold, nmore = 0;
  seq_items(sema, e->lhs, &old, &nold);
  Ast *arg = e->list.data[want - 1];
  if (n[0] == 'e' && !iterable_items(sema, arg, &more, &nmore, arg->loc)) return poison(sema);
  if (n[0] != 'e') more = &arg, nmore = 1;
  if ((int64_t)nold + nmore > MAX_SEQ) {
    diag_error(sema->cx, call_loc(e), "a sequence of more than %d elements is not supported", MAX_SEQ);
    return poison(sema);
  }
  int64_t at = nold;
  if (n[0] == 'i') {  // insert(i, v): Python clamps i into [0, len]
    const TType *it = e->list.data[0]->ty;
    if (!is_scalar(it) || it->dtype == DT_F64) {
      diag_error(sema->cx, e->list.data[0]->loc, "'%s' object cannot be interpreted as an integer", py_type_name(it));
      return poison(sema);
    }
    at = it->ival < 0 ? it->ival + nold : it->ival;
    at = at < 0 ? 0 : at > nold ? nold : at;
  }
  Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(nold + nmore + 1));
  int k = 0;
  for (int i = 0; i < at; i++) items[k++] = old[i];
  for (int i = 0; i < nmore; i++) items[k++] = more[i];
  for (int i = (int)at; i < nold; i++) items[k++] = old[i];
  seq_rebind(sema, e, e->lhs, items, k, TY_LIST, true);
  return ty_new(sema, TY_NONE);
}

// t += u of sequences: a list is extended in place (every name holding it sees it), a tuple
// rebound to t + u, as Python does. At st (an augmented assignment); false after an error.
bool seq_augassign(Sema *sema, Ast *st) {
  const TType *t = st->lhs->ty;
  if (t->container) return container_augassign(sema, st);
  if (st->op == BIN_MUL) {  // t *= n
    Ast *prod = ast_binary(sema->cx, BIN_MUL, st->lhs, st->rhs, st->oploc);
    prod->ty = seq_binary(sema, prod);
    if (is_poison(prod->ty)) return false;
    seq_rebind(sema, st, st->lhs, prod->operands, prod->noperands, t->kind, t->kind == TY_LIST);
    return true;
  }
  if (st->op != BIN_ADD) {
    diag_error(sema->cx, st->oploc, "unsupported operand type(s) for %s=: '%s' and '%s'", binop_text((BinOp)st->op),
               py_type_name(t), py_type_name(st->rhs->ty));
    return false;
  }
  Ast **old, **more;
  int nold, nmore;
  seq_items(sema, st->lhs, &old, &nold);
  if (t->kind == TY_TUPLE && st->rhs->ty->kind != TY_TUPLE) {
    diag_error(sema->cx, st->oploc, "can only concatenate tuple (not \"%s\") to tuple", py_type_name(st->rhs->ty));
    return false;
  }
  if (!iterable_items(sema, st->rhs, &more, &nmore, st->rhs->loc)) return false;
  Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(nold + nmore + 1));
  for (int i = 0; i < nold; i++) items[i] = old[i];
  for (int i = 0; i < nmore; i++) items[nold + i] = more[i];
  seq_rebind(sema, st, st->lhs, items, nold + nmore, t->kind, t->kind == TY_LIST);
  return true;
}

// ============================================================================
// Attributes: x.shape, x.ndim, x.dtype, x.mT; t.values, t.indices
// ============================================================================
static Ast *shape_tuple(Sema *sema, Ast *e, const TType *x) {
  Ast *items[TD_MAX_DIMS];
  for (int i = 0; i < x->view.ndim; i++) items[i] = part_int(sema, e, x->view.shape[i]);
  e->ty = seq_of(sema, e, TY_TUPLE, items, x->view.ndim);
  e->ty->size = true;
  return e;
}

TType *seq_attr(Sema *sema, Ast *e) {
  const TType *t = e->lhs->ty;
  for (int i = 0; t->kind == TY_TUPLE && t->fields && i < t->nelem; i++)
    if (!strcmp(t->fields[i], e->name)) return seq_element(sema, e, i);
  if (t->fields && e->lhs->bi)
    diag_error(sema->cx, e->oploc, "'torch.return_types.%s' object has no attribute '%s'", e->lhs->bi->name, e->name);
  else
    diag_error(sema->cx, e->oploc, "'%s' object has no attribute '%s'", py_type_name(t), e->name);
  return poison(sema);
}

// NULL when name is no Python attribute of a tensor.
TType *tensor_attr(Sema *sema, Ast *e) {
  const TType *x = e->lhs->ty;
  if (!strcmp(e->name, "shape")) return shape_tuple(sema, e, x)->ty;
  if (!strcmp(e->name, "ndim")) return ty_int(sema, x->view.ndim);
  if (!strcmp(e->name, "dtype")) return ty_dtype(sema, x->dtype);
  if (!strcmp(e->name, "device")) return tensor_device(sema);
  if (!strcmp(e->name, "requires_grad")) return ty_bool(sema, x->requires_grad);  // a module's parameter
  bool mT = !strcmp(e->name, "mT"), mH = !strcmp(e->name, "mH"), H = !strcmp(e->name, "H");
  if (mT || mH || H) {  // of a real tensor: the last two dims swapped, a view (a 0-d one itself)
    int nd = x->view.ndim;
    if (nd == 1 || (H && nd > 2)) {
      if (H)
        diag_error(sema->cx, e->oploc, "tensor.H is only supported on matrices (2-D tensors). Got %d-D tensor.%s", nd,
                   nd > 2 ? " For batches of matrices, consider using tensor.mH" : "");
      else
        diag_error(sema->cx, e->oploc, "tensor.%s is only supported on matrices or batches of matrices. Got %d-D "
                   "tensor.", e->name, nd);
      return poison(sema);
    }
    return become(sema, e, view_ast(sema, e, e->lhs, nd ? view_transpose(x->view, nd - 2, nd - 1) : x->view));
  }
  return NULL;
}

// x.size(dim=None), x.dim(), x.ndimension(), x.numel(), x.nelement(), x.is_floating_point()
TType *ck_size(Sema *sema, Ast *e, const BuiltinDef *d) {
  const TType *x = e->bargs[0]->ty;
  e->bi = NULL;  // a Python value, no node
  if (d->variant == SIZE_NDIM) return ty_int(sema, x->view.ndim);
  if (d->variant == SIZE_NUMEL) return ty_int(sema, view_numel(x->view));
  if (d->variant == SIZE_IS_FLOAT) return ty_bool(sema, dtype_is_float(x->dtype));
  Ast *da = barg(e, 1);
  if (!da) return shape_tuple(sema, e, x)->ty;
  int64_t dim;
  int a;
  if (!get_int(sema, e, da, "dim", &dim) || !wrap_dim(sema, da->loc, dim, x->view.ndim, &a)) return poison(sema);
  return ty_int(sema, x->view.shape[a]);
}

// ============================================================================
// Python's builtins of numbers: len, float, int, bool, min, max
// ============================================================================
static bool python_number(const char *text, double *out) {
  while (*text == ' ' || *text == '\t' || *text == '\n') text++;
  char *end;
  *out = strtod(text, &end);
  if (end == text) return false;
  while (*end == ' ' || *end == '\t' || *end == '\n') end++;
  return *end == 0;
}

// list(xs), tuple(xs), sum(xs, start=0), any(xs), all(xs) of an iterable: Python's; NULL
// for sum, any and all of a tensor, which are the torch ops.
static TType *iterable_builtin(Sema *sema, Ast *e) {
  const char *n = e->name;
  Ast *it = NULL, *start = NULL;
  int npos = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG && !strcmp(n, "sum") && !strcmp(a->name, "start")) start = a->rhs;
    else if (a->kind == AST_KWARG && strcmp(n, "list") && strcmp(n, "tuple")) return NULL;  // sum(x, dim=1): torch's
    else if (a->kind == AST_KWARG) {
      diag_error(sema->cx, a->loc, "%s() takes no keyword arguments", n);
      return poison(sema);
    }
    else if (npos++ == 0) it = a;
    else if (npos == 2 && !strcmp(n, "sum")) start = a;
  }
  bool conv = n[0] == 'l' || n[0] == 't';
  if (!conv && (!it || !is_seq(it->ty))) return NULL;  // sum(x), any(x) of a tensor: torch's
  if (npos > (n[0] == 's' ? 2 : 1)) {
    diag_error(sema->cx, call_loc(e), "%s expected at most %d argument%s, got %d", n, n[0] == 's' ? 2 : 1,
               n[0] == 's' ? "s" : "", npos);
    return poison(sema);
  }
  Ast **items = NULL;
  int ni = 0;
  if (it && !iterable_items(sema, it, &items, &ni, it->loc)) return poison(sema);
  if (conv) return seq_of(sema, e, n[0] == 'l' ? TY_LIST : TY_TUPLE, items, ni);
  if (n[0] == 'a') {  // any, all: Python's truth of each
    bool all = n[1] == 'l';
    for (int i = 0; i < ni; i++) {
      bool v;
      if (!truth_value(sema, items[i], &v)) return poison(sema);
      if (v != all) return ty_bool(sema, v);
    }
    return ty_bool(sema, all);
  }
  Ast *acc = start ? start : part_int(sema, e, 0);  // sum: ((start + x0) + x1) + ..., as Python adds
  for (int i = 0; i < ni; i++) {
    const TType *a = acc->ty, *b = items[i]->ty;
    if (is_scalar(a) && is_scalar(b)) {
      TType *r = fold_binary(sema, e->oploc, BIN_ADD, a, b);
      if (!r) return poison(sema);
      acc = ast_new(sema->cx, AST_INT, e->loc);
      acc->ty = r;
    } else if ((is_scalar(a) || is_tensor(a)) && (is_scalar(b) || is_tensor(b))) {
      acc = node_binary(sema, e, OP_ADD, acc, items[i]);
      if (is_poison(acc->ty)) return poison(sema);
    } else {
      diag_error(sema->cx, items[i]->loc, "unsupported operand type(s) for +: '%s' and '%s'", py_type_name(a),
                 py_type_name(b));
      return poison(sema);
    }
  }
  if (acc->bi) return become(sema, e, acc);
  if (is_tensor(acc->ty)) {  // sum([x]) is 0 + x: a new tensor all the same
    acc = node_binary(sema, e, OP_ADD, part_int(sema, e, 0), acc);
    return become(sema, e, acc);
  }
  return acc->ty;
}

// NULL when e is no call of such a builtin (or a torch op of the same name applies).
TType *python_builtin(Sema *sema, Ast *e) {
  const char *n = e->name;
  if (!strcmp(n, "list") || !strcmp(n, "tuple") || !strcmp(n, "sum") || !strcmp(n, "any") || !strcmp(n, "all")) {
    TType *r = iterable_builtin(sema, e);
    if (r) return r;
  }
  bool conv = !strcmp(n, "float") || !strcmp(n, "int") || !strcmp(n, "bool");
  bool minmax = !strcmp(n, "min") || !strcmp(n, "max");
  if (!conv && !minmax && strcmp(n, "len")) return NULL;
  int np = 0;
  Ast *pos[MAX_LIST];
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG) {
      if (minmax) return NULL;  // max(x, dim=1): the torch op
      diag_error(sema->cx, a->loc, "%s() takes no keyword arguments", n);
      return poison(sema);
    }
    if (np < MAX_LIST) pos[np++] = a;
  }
  if (minmax) {  // min(a, b, ...) or min(seq) of Python numbers; anything else is torch's
    Ast **items = pos;
    int ni = np;
    if (np == 1 && is_seq(pos[0]->ty) && !seq_items(sema, pos[0], &items, &ni)) return NULL;
    if (np == 0 || (np == 1 && !is_seq(pos[0]->ty))) return NULL;
    for (int i = 0; i < ni; i++)
      if (!is_scalar(items[i]->ty)) return NULL;
    if (ni == 0) {
      diag_error(sema->cx, call_loc(e), "%s() arg is an empty sequence", n);
      return poison(sema);
    }
    const TType *best = items[0]->ty;
    for (int i = 1; i < ni; i++) {
      const TType *c = items[i]->ty;
      if (n[1] == 'a' ? c->fval > best->fval : c->fval < best->fval) best = c;
    }
    return (TType *)best;
  }
  if (np != 1) {
    diag_error(sema->cx, call_loc(e), "%s() takes exactly one argument (%d given)", n, np);
    return poison(sema);
  }
  const TType *a = pos[0]->ty;
  if (!strcmp(n, "len")) {
    if (derived_modules(sema, a)) a = derived_modules(sema, a);
    if (is_seq(a)) return ty_int(sema, a->nelem);
    if (a->kind == TY_STR) return ty_int(sema, (int64_t)strlen(a->module));
    if (is_tensor(a) && a->view.ndim > 0) return ty_int(sema, a->view.shape[0]);
    diag_error(sema->cx, pos[0]->loc, is_tensor(a) ? "len() of a 0-d tensor" : "object of type '%s' has no len()",
               py_type_name(a));
    return poison(sema);
  }
  double v;
  if (a->kind == TY_STR && n[0] != 'b') {
    if (!python_number(a->module, &v) || (n[0] == 'i' && (v != floor(v) || strpbrk(a->module, ".eEnN")))) {
      diag_error(sema->cx, pos[0]->loc, n[0] == 'f' ? "could not convert string to float: '%s'"
                                                    : "invalid literal for int() with base 10: '%s'", a->module);
      return poison(sema);
    }
  } else if (is_scalar(a) || a->kind == TY_STR) {
    v = a->kind == TY_STR ? (double)(a->module[0] != 0) : a->dtype == DT_F64 ? a->fval : (double)a->ival;
  } else if (is_tensor(a) && !a->wrapped) {
    diag_error(sema->cx, pos[0]->loc, "%s() of a tensor is its value, known only when the program runs: keep it a "
               "tensor (a 0-d tensor broadcasts as a number does; torch.where(c, a, b) chooses on one)", n);
    return poison(sema);
  } else {
    diag_error(sema->cx, pos[0]->loc, "%s() argument must be a string or a number, not '%s'", n, py_type_name(a));
    return poison(sema);
  }
  if (n[0] == 'f') return is_scalar(a) && a->dtype != DT_F64 ? ty_float(sema, (double)a->ival) : ty_float(sema, v);
  if (n[0] == 'b') return ty_bool(sema, v != 0);
  if (is_scalar(a) && a->dtype != DT_F64) return ty_int(sema, a->ival);
  if (!isfinite(v) || fabs(v) >= 9.2e18) {
    diag_error(sema->cx, pos[0]->loc, isnan(v) ? "cannot convert float NaN to integer"
                                               : "cannot convert float infinity to integer");
    return poison(sema);
  }
  return ty_int(sema, (int64_t)v);  // truncates toward zero, as Python's int()
}

// ============================================================================
// Ops that return several tensors
// ============================================================================
// A narrow of x (the call's input) along dim a: a view.
static Ast *narrow_part(Sema *sema, Ast *e, Ast *x, int a, int64_t start, int64_t len) {
  return view_ast(sema, e, x, view_slice(x->ty->view, a, start, start + len, 1));
}

static TType *tuple_of_narrows(Sema *sema, Ast *e, Ast *x, int a, const int64_t *sizes, int n) {
  Ast *items[MAX_LIST];
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    items[i] = narrow_part(sema, e, x, a, at, sizes[i]);
    at += sizes[i];
  }
  return seq_of(sema, e, TY_TUPLE, items, n);
}

static bool too_many(Sema *sema, const Ast *e, int64_t n) {
  if (n <= MAX_LIST) return false;
  diag_error(sema->cx, call_loc(e), "%s() would return %" PRId64 " tensors: tdsl returns at most %d",
             e->bi ? e->bi->name : e->name, n,
             MAX_LIST);
  return true;
}

// split(split_size_or_sections, dim=0), chunk(chunks, dim=0), tensor_split(indices_or_sections, dim=0)
TType *ck_split(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *sa = e->bargs[1];
  const TType *xt = x->ty;
  const char *name = d->b.name;
  int64_t dim = 0;
  int a;
  if (barg(e, 2) && !get_int(sema, e, e->bargs[2], "dim", &dim)) return poison(sema);
  if (xt->view.ndim == 0) {
    diag_error(sema->cx, call_loc(e), "%s expects at least a 1-dimensional tensor", name);
    return poison(sema);
  }
  if (!wrap_dim(sema, barg(e, 2) ? e->bargs[2]->loc : call_loc(e), dim, xt->view.ndim, &a)) return poison(sema);
  int64_t size = xt->view.shape[a], sizes[MAX_LIST];
  int n = 0;
  int v = d->variant;
  if (v == SPLIT_TENSOR && is_tensor(sa->ty)) {  // a 0-d (sections) or 1-d (indices) long tensor
    if (sa->ty->dtype != DT_I64) {
      diag_error(sema->cx, sa->loc, "tensor_split expected tensor_indices_or_sections to have dtype of long, but got %s",
                 torch_name(sa->ty->dtype));
      return poison(sema);
    }
    if (sa->ty->view.ndim > 1) {
      diag_error(sema->cx, sa->loc, "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                 "one-dimensional tensor, but got a tensor with %d dims", sa->ty->view.ndim);
      return poison(sema);
    }
    const CreateArgs *c = literal_of(sema, sa);
    if (!c) {
      diag_error(sema->cx, sa->loc, "tensor_split at a tensor's values, known only at run time, is not supported: pass "
                 "them as a list of ints (or torch.tensor(...) of constants)");
      return poison(sema);
    }
    if (c->n > MAX_LIST) {
      diag_error(sema->cx, sa->loc, "tensor_split at more than %d indices is not supported", MAX_LIST);
      return poison(sema);
    }
    int64_t iv[MAX_LIST];
    for (int64_t i = 0; i < c->n; i++) iv[i] = literal_int(c, i);
    sa = sa->ty->view.ndim ? part_ints(sema, sa, (int)c->n, iv) : part_int(sema, sa, iv[0]);
  }
  if (is_seq(sa->ty) && v != SPLIT_CHUNK) {  // split_with_sizes, or tensor_split at indices
    int64_t req[MAX_LIST];
    int k;
    if (!get_ints(sema, e, sa, v == SPLIT_SIZE ? "split_size" : "indices", req, &k)) return poison(sema);
    if (v == SPLIT_SIZE) {
      int64_t sum = 0;
      for (int i = 0; i < k; i++) {
        if (req[i] < 0) {
          diag_error(sema->cx, sa->loc, "split_with_sizes expects split_sizes have only non-negative entries, but got "
                     "split_sizes=%s", shape_str(sema, k, req));
          return poison(sema);
        }
        sum = wrap_add(sum, req[i]);
      }
      if (sum != size) {
        diag_error(sema->cx, sa->loc, "split_with_sizes expects split_sizes to sum exactly to %" PRId64 " (input "
                   "tensor's size at dimension %d), but got split_sizes=%s", size, a, shape_str(sema, k, req));
        return poison(sema);
      }
      memcpy(sizes, req, sizeof(int64_t) * (size_t)k);
      n = k;
    } else {
      if (too_many(sema, e, (int64_t)k + 1)) return poison(sema);
      // the pieces [prev, end) between the indices, each clamped into [0, size]
      Ast *items[MAX_LIST];
      int64_t prev = 0;
      for (int i = 0; i <= k; i++) {
        int64_t end = i < k ? req[i] : size;
        if (end < 0) end += size;
        end = end < 0 ? 0 : end > size ? size : end;
        items[i] = narrow_part(sema, e, x, a, prev, end > prev ? end - prev : 0);
        prev = end;
      }
      return seq_of(sema, e, TY_TUPLE, items, k + 1);
    }
  } else {
    int64_t s;
    if (!get_int(sema, e, sa, v == SPLIT_SIZE ? "split_size" : v == SPLIT_CHUNK ? "chunks" : "sections", &s))
      return poison(sema);
    if (v == SPLIT_SIZE) {
      if (s < 0) {
        diag_error(sema->cx, sa->loc, "split expects split_size be non-negative, but got split_size=%" PRId64, s);
        return poison(sema);
      }
      if (s == 0 && size != 0) {
        diag_error(sema->cx, sa->loc, "split_size can only be 0 if dimension size is 0, but got dimension size of %"
                   PRId64, size);
        return poison(sema);
      }
      int64_t parts = s == 0 ? 1 : (size + s - 1) / s;
      if (parts < 1) parts = 1;
      if (too_many(sema, e, parts)) return poison(sema);
      for (int64_t i = 0; i < parts; i++) sizes[n++] = i + 1 < parts ? s : size - s * (parts - 1);
    } else if (v == SPLIT_CHUNK) {
      if (s <= 0) {
        diag_error(sema->cx, sa->loc, "chunk expects `chunks` to be greater than 0, got: %" PRId64, s);
        return poison(sema);
      }
      int64_t each = (size + s - 1) / s, parts = each == 0 ? s : (size + each - 1) / each;
      if (each == 0 && size != 0) parts = 1;
      if (too_many(sema, e, parts)) return poison(sema);
      for (int64_t i = 0; i < parts; i++) sizes[n++] = each == 0 ? 0 : i + 1 < parts ? each : size - each * (parts - 1);
    } else {
      if (s <= 0) {
        diag_error(sema->cx, sa->loc, "number of sections must be larger than 0, got %" PRId64, s);
        return poison(sema);
      }
      if (too_many(sema, e, s)) return poison(sema);
      for (int64_t i = 0; i < s; i++) sizes[n++] = size / s + (i < size % s ? 1 : 0);
    }
  }
  if (too_many(sema, e, n)) return poison(sema);
  return tuple_of_narrows(sema, e, x, a, sizes, n);
}

static bool unbind_into(Sema *sema, Ast *e, Ast *x, int a);

// unbind(dim=0): the selects along dim
TType *ck_unbind(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0];
  const TType *xt = x->ty;
  int64_t dim = 0;
  int a;
  if (barg(e, 1) && !get_int(sema, e, e->bargs[1], "dim", &dim)) return poison(sema);
  if (xt->view.ndim == 0) {
    diag_error(sema->cx, call_loc(e), "Dimension specified as 0 but tensor has no dimensions");
    return poison(sema);
  }
  if (!wrap_dim(sema, barg(e, 1) ? e->bargs[1]->loc : call_loc(e), dim, xt->view.ndim, &a)) return poison(sema);
  return unbind_into(sema, e, x, a) ? e->ty : poison(sema);
}

// The selects of x along dim a (a view each) as the sequence e: false after an error.
static bool unbind_into(Sema *sema, Ast *e, Ast *x, int a) {
  const TType *xt = x->ty;
  int64_t n = xt->view.shape[a];
  if (too_many(sema, e, n)) return false;
  Ast *items[MAX_LIST];
  for (int i = 0; i < n; i++) items[i] = view_ast(sema, e, x, view_select(xt->view, a, i));
  e->ty = seq_of(sema, e, TY_TUPLE, items, (int)n);
  return true;
}

// x.unbind() of a tensor of at least one dim, at at's place: the tuple of its rows
// (`a, b = x`); poison after an error.
Ast *unbind_ast(Sema *sema, const Ast *at, Ast *x) {
  Ast *t = ast_new(sema->cx, AST_TUPLE, at->loc);
  t->oploc = at->oploc;
  t->name = "unbind";
  if (!unbind_into(sema, t, x, 0)) t->ty = poison(sema);
  for (int i = 0; i < t->noperands; i++) vec_push(&sema->cx->arena, &t->list, t->operands[i]);
  return t;
}

// torch.broadcast_shapes(*shapes): the shape they broadcast to, a torch.Size (a tuple of
// ints), as PyTorch 1.13's Python code computes it (its messages)
TType *ck_broadcast_shapes(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast **xs;
  int n, npos = 0;
  for (int i = 0; i < e->list.len; i++) npos += e->list.data[i]->kind != AST_KWARG;
  if (npos == 1 && is_seq(e->list.data[0]->ty)) {  // broadcast_shapes((3, 1)): one shape
    xs = &e->list.data[0], n = 1;
  } else if (!seq_items(sema, e->bargs[0], &xs, &n)) {
    return poison(sema);
  }
  int64_t result[MAX_LIST];
  int len = 0;
  for (int i = 0; i < n; i++) {
    const TType *t = xs[i]->ty;
    int k = is_scalar(t) && t->dtype != DT_F64 ? 1 : (t->kind == TY_LIST || t->kind == TY_TUPLE) ? t->nelem : 0;
    if (k > len) len = k;
  }
  if (len > MAX_LIST) len = MAX_LIST;
  for (int i = 0; i < len; i++) result[i] = 1;
  for (int i = 0; i < n; i++) {
    const TType *t = xs[i]->ty;
    int64_t v[MAX_LIST];
    int k;
    if (is_scalar(t) && t->dtype != DT_F64) {
      v[0] = t->ival, k = 1;
    } else if ((t->kind == TY_LIST || t->kind == TY_TUPLE) && get_ints(sema, e, xs[i], "shapes", v, &k)) {
    } else {
      if (t->kind != TY_LIST && t->kind != TY_TUPLE)
        diag_error(sema->cx, xs[i]->loc, "Input shapes should be of type ints, a tuple of ints, or a list of ints, got "
                   "%s", py_type_name(t));
      return poison(sema);
    }
    for (int j = 1; j <= k; j++) {
      int64_t s = v[k - j], *r = &result[len - j];
      if (s < 0) {
        diag_error(sema->cx, xs[i]->loc, "Trying to create tensor with negative dimension (%" PRId64 "): (%" PRId64 ")",
                   s, s);
        return poison(sema);
      }
      if (s == 1 || s == *r) continue;
      if (*r != 1) {
        diag_error(sema->cx, call_loc(e), "Shape mismatch: objects cannot be broadcast to a single shape");
        return poison(sema);
      }
      *r = s;
    }
  }
  e->bi = NULL;  // a Python value, no node
  Ast *items[MAX_LIST];
  for (int i = 0; i < len; i++) items[i] = part_int(sema, e, result[i]);
  return seq_of(sema, e, TY_TUPLE, items, len);
}

// torch.broadcast_tensors(*tensors): each expanded to the common shape, a view
TType *ck_broadcast_tensors(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast **xs;
  int n;
  if (!seq_items(sema, e->bargs[0], &xs, &n)) return poison(sema);
  int nd = 0;
  int64_t shape[TD_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    const TType *t = get_tensor(sema, e, xs[i], "tensors");
    if (!t || !broadcast(sema, call_loc(e), &nd, shape, t->view.ndim, t->view.shape)) return poison(sema);
  }
  Ast *items[MAX_LIST];
  for (int i = 0; i < n; i++) {
    View v;
    int bad;
    TD_ASSERT(view_expand(xs[i]->ty->view, nd, shape, &v, &bad));
    items[i] = view_ast(sema, e, xs[i], v);
  }
  return seq_of(sema, e, TY_TUPLE, items, n);
}

// meshgrid(*tensors, indexing=None): views, tensor i along dim i (indexing='xy': the first
// two swapped) expanded to the grid of all their lengths
TType *ck_meshgrid(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast **xs, *ia = barg(e, 1);
  int n;
  bool xy = false;
  if (!seq_items(sema, e->bargs[0], &xs, &n)) return poison(sema);
  if (ia && (ia->ty->kind != TY_STR || (strcmp(ia->ty->module, "ij") && strcmp(ia->ty->module, "xy")))) {
    diag_error(sema->cx, ia->loc, "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: %s",
               ia->ty->kind == TY_STR ? ia->ty->module : py_type_name(ia->ty));
    return poison(sema);
  }
  xy = ia && !strcmp(ia->ty->module, "xy");
  if (n == 0 || !check_rank(sema, call_loc(e), n)) {
    if (n == 0) diag_error(sema->cx, call_loc(e), "torch.meshgrid expects a non-empty TensorList");
    return poison(sema);
  }
  int64_t grid[TD_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    const TType *t = get_tensor(sema, e, xs[i], "tensors");
    if (!t) return poison(sema);
    if (t->view.ndim > 1) {
      diag_error(sema->cx, xs[i]->loc, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: %s",
                 type_str(sema, t));
      return poison(sema);
    }
    if (t->dtype != xs[0]->ty->dtype) {
      diag_error(sema->cx, xs[i]->loc, "torch.meshgrid: Expected all tensors in the tensor list to have the same dtype");
      return poison(sema);
    }
    grid[i] = view_numel(t->view);
  }
  if (xy && n >= 2) {
    int64_t g = grid[0];
    grid[0] = grid[1], grid[1] = g;
  }
  Ast *items[MAX_LIST];
  for (int i = 0; i < n; i++) {
    int at = xy && i < 2 && n >= 2 ? 1 - i : i;
    int64_t shape[TD_MAX_DIMS];
    for (int k = 0; k < n; k++) shape[k] = k == at ? grid[k] : 1;
    View line, v;
    int bad;
    TD_ASSERT(view_reshape(xs[i]->ty->view, n, shape, &line) && view_expand(line, n, grid, &v, &bad));
    items[i] = view_ast(sema, e, xs[i], v);
  }
  return seq_of(sema, e, TY_TUPLE, items, n);
}

// max(dim, keepdim=False) / min(...): (values, indices), torch.return_types.max
TType *tuple_max(Sema *sema, Ast *e, bool is_max, Ast *x, Ast *dim, Ast *keepdim) {
  static const char *const fields[] = {"values", "indices"};
  int64_t d;
  int a;
  bool keep = keepdim && keepdim->ty->ival;
  const TType *xt = x->ty;
  if (!get_int(sema, e, dim, "dim", &d) || !wrap_dim(sema, dim->loc, d, xt->view.ndim, &a)) return poison(sema);
  if (xt->view.ndim && xt->view.shape[a] == 0) {
    diag_error(sema->cx, call_loc(e), "%s(): Expected reduction dim %d to have non-zero size.", is_max ? "max" : "min",
               a);
    return poison(sema);
  }
  ReduceArgs ra = {.op = is_max ? OP_AMAX : OP_AMIN, .mask = xt->view.ndim ? 1u << a : 0, .dim = a, .keepdim = keep};
  TType *t = built(sema, e, build_max_dim, KEEP(sema, ra), &x, 1);
  if (!is_poison(t)) t->fields = fields;
  return t;
}
