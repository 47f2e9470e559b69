// frontend/sema.c: semantic analysis — the last stage allowed to report user errors.
// It evaluates `const` declarations, checks every function as an entry point (its
// parameters contiguous storages of their own), resolves names, inlines calls to user
// functions by checking a clone of the callee, binds builtin arguments by PyTorch 1.13's
// parameter names, promotes dtypes as torch.result_type does and infers every static
// shape and every view (shape, strides, offset over a storage) exactly as PyTorch.
// This file holds the entry points, declarations and declared types, and inlining;
// frontend/sema_internal.h lists the other pieces.
//
// Invariants kept for lower.c:
//   - every expression gets e->ty; a mistake gives TY_POISON, and poison operands
//     silently give poison, so one mistake is reported once;
//   - a builtin expression gets e->bi; BK_VIEW: e->operands[0] is the source tensor and
//     e->ty->view is over its storage (over a fresh copy when e->needs_copy); BK_NODE:
//     e->operands are the node inputs in op order and e->attr is normalised;
//   - fully constant expressions fold to TY_SCALAR and carry no bi.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

// ============================================================================
// Declared types, inlining of calls, entry points
// ============================================================================
// dtype[d0, d1, ...]: a contiguous tensor type. Dims see constants and the dims of the
// function being checked (sema->dims); cached on the node, which is the function's own
// (an entry point, once per check) or its inlined clone (once per call).
TType *param_type(Sema *sema, Ast *ty) {
  if (ty->ty) return ty->ty;
  if (ty->kind == AST_SCALAR_TYPE) return ty->ty = poison(sema);  // sema_declare reported it
  if (ty->dtype == DT_COUNT) {
    diag_error(sema->cx, ty->oploc, "unknown dtype '%s'", ty->name);
    return ty->ty = poison(sema);
  }
  Sym *saved = sema->scope;
  sema->scope = NULL;  // dims see constants and dim variables only
  int64_t shape[MAX_LIST] = {0};
  bool ok = true;
  int n = ty->list.len;
  for (int i = 0; i < n && i < MAX_LIST; i++) {
    Ast *d = ty->list.data[i];
    TType *t = check_expr(sema, d);
    if (is_poison(t)) {
      ok = false;
    } else if (is_tensor(t) && t->wrapped) {
      diag_error(sema->cx, d->loc, "a size must be a compile-time int, but this is a %s: a scalar parameter of the "
                 "entry point is known only when it runs (called from another function, it is a compile-time value)",
                 py_type_name(t));
      ok = false;
    } else if (!is_scalar(t) || t->dtype != DT_I64) {
      diag_error(sema->cx, d->loc, "dimension sizes must be integer constants, not %s", py_type_name(t));
      ok = false;
    } else if (t->ival < 0) {
      diag_error(sema->cx, d->loc, "Trying to create tensor with negative dimension %" PRId64 ": %s", t->ival,
                 shape_str(sema, 1, &t->ival));
      ok = false;
    } else {
      shape[i] = t->ival;
    }
  }
  sema->scope = saved;
  if (ok && !check_rank(sema, ty->loc, n)) ok = false;
  if (ok && !check_numel(sema, ty->loc, n, shape)) ok = false;
  TType *r;
  if (!ok) {
    r = poison(sema);
  } else {
    r = ty_new(sema, TY_TENSOR);
    r->dtype = ty->dtype;
    r->view = view_contiguous(n, shape);
    r->storage_numel = view_numel(r->view);
    r->storage = -1;
  }
  ty->ty = r;
  return r;
}

Sym *find_dim(Sema *sema, const char *name) {
  for (Sym *s = sema->dims; s; s = s->next)
    if (!strcmp(s->name, name)) return s;
  return NULL;
}

// A scalar parameter's kind: DT_F64 (float), DT_I64 (int) or DT_BOOL; DT_COUNT for a
// tensor parameter.
static bool str_param(const Ast *p);

// The Python object a parameter typed tuple, list, dict or Callable (typing's Tuple, List,
// Dict, Optional[...] written T | None) holds: TY_TUPLE, TY_LIST, TY_DICT, TY_MODULE (a
// function value: a lambda, F.relu, a user fn; or a module object, nn.GELU()); TY_POISON
// for any other. Like a str, a compile-time value only a helper takes (its elements, whatever they
// are, the caller's).
static TyKind object_kind(const Ast *p) {
  const char *n = p->type->kind == AST_SCALAR_TYPE ? p->type->name : NULL;
  if (!n) return TY_POISON;
  size_t len = strlen(n);
  if (len >= 6 && !strcmp(n + len - 6, "Tensor")) return TY_TENSOR;  // x: torch.Tensor, a helper's: any tensor
  return !strcmp(n, ANY_TYPE) ? TY_NONE  // an untyped parameter of a local def: any value
         : !strcmp(n, "tuple") || !strcmp(n, "Tuple") ? TY_TUPLE
         : !strcmp(n, "list") || !strcmp(n, "List") ? TY_LIST
         : !strcmp(n, "dict") || !strcmp(n, "Dict") ? TY_DICT
         : !strcmp(n, "Callable") || !strcmp(n, "callable") || !strcmp(n, "Module") ? TY_MODULE
                                                    : TY_POISON;
}

static DType scalar_kind(const Ast *p) {
  if (p->type->kind != AST_SCALAR_TYPE) return DT_COUNT;
  if (str_param(p) || object_kind(p) != TY_POISON) return DT_U8;
  const char *n = p->type->name;
  if (!n) {  // k=3: the default's kind (declare_sig refused the others)
    const TType *d = p->rhs->ty;
    return d && d->kind == TY_SCALAR ? d->dtype : DT_F64;
  }
  return !strcmp(n, "float") ? DT_F64 : !strcmp(n, "int") ? DT_I64 : DT_BOOL;
}

// A str parameter (data_format: str = "channels_last", or s = "a"): a compile-time string
// in a helper. scalar_kind says DT_U8 for it (no Python scalar has that kind).
static bool str_param(const Ast *p) {
  const Ast *t = p->type;
  return t->kind == AST_SCALAR_TYPE &&
         (t->name ? !strcmp(t->name, "str") : p->rhs && p->rhs->ty && p->rhs->ty->kind == TY_STR);
}

// Whether parameter p may be None: declared `T | None`, or given the default None.
static bool optional_param(const Ast *p) {
  return p->type->bval || object_kind(p) == TY_NONE || (p->rhs && p->rhs->ty && p->rhs->ty->kind == TY_NONE);
}

// A result written as Python annotates it (torch.Tensor, tuple, Tuple[torch.Tensor, ...],
// Optional[...], int, 'Block', (torch.Tensor, int) ...; every one a word, not a tdsl type
// f32[dims] or None): what the return gives, unchecked as Python leaves annotations, as a def
// without an arrow inside a function returns it. An entry point's is refused (sema.c).
bool any_result(const Ast *fn) {
  for (int i = 0; i < fn->rets.len; i++) {
    const Ast *r = fn->rets.data[i];
    if (r->kind != AST_SCALAR_TYPE && !(r->kind == AST_TYPE && r->dtype == DT_COUNT)) return false;
  }
  return fn->rets.len > 0;
}

static FnSig *sig_of(Sema *sema, const Ast *fn) {
  if (fn->op == DEF_LOCAL) {
    for (int k = 0; k < sema->local_sigs.len; k++)
      if (sema->local_sigs.data[k].fn == fn) return sema->local_sigs.data[k].sig;
    TD_ASSERT(!"a local def without its signature");
  }
  int i = sema_fn_index(sema->p, fn->name);
  TD_ASSERT(i >= 0);
  return &sema->p->sigs[i];
}

// The dims of fn with their values, as sema->dims sees them.
static Sym *dim_scope(Sema *sema, const FnSig *sig, const int64_t *values) {
  Sym *s = NULL;
  for (int k = 0; k < sig->ndims; k++) {
    Sym *d = arena_alloc(&sema->cx->arena, sizeof *d);
    *d = (Sym){sig->dims[k], ty_int(sema, values[k]), sig->dimloc[k], NULL, s};
    s = d;
  }
  return s;
}

static bool on_stack(Sema *sema, const Ast *fn) {
  for (int i = 0; i < sema->stack.len; i++)
    if (sema->stack.data[i] == fn) return true;
  return false;
}

// A call written in an entry point's own body (sema_budget.c's numbers cover the calls
// it inlines in turn): its inlined body nests within TD_MAX_NESTING, and the ops every
// inlining in the program clones stay within TD_MAX_INLINE_OPS (each entry point
// inlines its calls anew, so the limit bounds the whole program's sema and memory).
// A limit is reported once; a later call over one is refused silently.
// A call outside every body (a const, a dimension) nests as deep as its callee.
static bool inline_fits(Sema *sema, const Ast *e, const Ast *fn) {
  int64_t total = sema->inlined + fn->inline_size;
  if ((sema->stack.len ? e->inline_height : fn->inline_height) > TD_MAX_NESTING) {
    if (!sema->over_budget)
      diag_error(sema->cx, call_loc(e),
                 "program too deeply nested: inlining '%s' here nests the program more than %d levels deep", fn->name,
                 TD_MAX_NESTING);
    sema->over_budget = true;
    return false;
  }
  if (total > TD_MAX_INLINE_OPS) {
    if (!sema->over_budget)
      diag_error(sema->cx, call_loc(e), "inlining this call would create %" PRId64 " ops; the limit is %d", total,
                 TD_MAX_INLINE_OPS);
    sema->over_budget = true;
    return false;
  }
  sema->inlined = total;
  return true;
}

static const char *kind_name(DType k) { return k == DT_F64 ? "float" : k == DT_I64 ? "int" : "bool"; }

// "f32[N, D]" as the parameter's type is written.
static const char *written_type(Sema *sema, const Ast *p) {
  if (p->type->kind == AST_SCALAR_TYPE) return p->type->name;
  const Ast *t = p->type;
  const char *s = arena_printf(&sema->cx->arena, "%s[", t->dtype == DT_COUNT ? t->name : dtype_name(t->dtype));
  for (int i = 0; i < t->list.len; i++) {
    const Ast *d = t->list.data[i];
    const char *txt = d->kind == AST_NAME ? d->name
                      : d->kind == AST_INT || !d->loc.file ? arena_printf(&sema->cx->arena, "%" PRId64, d->ival)
                                                           : arena_strndup(&sema->cx->arena, d->loc.file->text + d->loc.begin,
                                                           (size_t)(d->loc.end - d->loc.begin));
    s = arena_printf(&sema->cx->arena, "%s%s%s", s, i ? ", " : "", txt);
  }
  return arena_printf(&sema->cx->arena, "%s]", s);
}

// Argument a of call e to the scalar parameter p of fn (kind k): a compile-time value
// converted as Python's int -> float, or a run-time scalar of the entry of that kind.
static TType *bind_scalar(Sema *sema, const Ast *fn, const Ast *p, Ast *a, DType k) {
  TType *got = a->ty;
  if (is_scalar(got)) {
    if (got->dtype == k) return got;
    if (k == DT_F64) return ty_float(sema, got->fval);
    if (k == DT_I64 && got->dtype == DT_BOOL) return ty_int(sema, got->ival);
  } else if (is_tensor(got) && got->wrapped && got->dtype == k) {
    return got;
  }
  diag_error(sema->cx, a->loc, "argument '%s' of '%s' must be %s, not %s", p->name, fn->name, kind_name(k),
             py_type_name(got));
  diag_note(sema->cx, name_loc(p), "'%s' declared here", p->name);
  return NULL;
}

// The dim variables of fn bound from the arguments' shapes: each by the first parameter
// that has it alone as a dim, every other such use checked against it. False after
// a message.
static bool bind_dims(Sema *sema, const Ast *e, const Ast *fn, const FnSig *sig, Ast **args, int64_t *values) {
  int from[TD_MAX_DIMVARS];
  for (int k = 0; k < sig->ndims; k++) from[k] = -1;
  for (int j = 0; j < fn->list.len; j++) {
    const Ast *p = fn->list.data[j];
    if (p->type->kind == AST_SCALAR_TYPE || args[j]->ty->kind == TY_NONE) continue;
    TType *got = args[j]->ty;
    int n = p->type->list.len;
    if (!is_tensor(got) || got->view.ndim != n) {
      diag_error(sema->cx, args[j]->loc, "argument '%s' of '%s' must be %s, not %s", p->name, fn->name,
                 written_type(sema, p), type_str(sema, got));
      diag_note(sema->cx, name_loc(p), "'%s' declared here", p->name);
      return false;
    }
    for (int a = 0; a < n && a < TD_MAX_DIMS; a++) {
      int k = sig->bare[j * TD_MAX_DIMS + a];
      if (k < 0) continue;
      int64_t size = got->view.shape[a];
      if (from[k] < 0) {
        from[k] = j;
        values[k] = size;
      } else if (values[k] != size) {
        diag_error(sema->cx, args[j]->loc,
                   "argument '%s' of '%s' has size %" PRId64 " at dim %d but %s is %" PRId64 " from '%s'", p->name,
                   fn->name, size, a, sig->dims[k], values[k], fn->list.data[from[k]]->name);
        diag_note(sema->cx, name_loc(p), "'%s' declared here", p->name);
        return false;
      }
    }
  }
  (void)e;
  return true;
}

// Binds call e's arguments args to fn's parameters from index first on (a method's after
// self), as Python binds them, positionally then by name, its messages naming qual: vals[j]
// the argument of parameter j, NULL where none is given (the caller's defaults). A *args
// parameter (its index in *star, else fn's parameter count) takes the positional arguments
// from its place on, as a tuple, and those after it come by name; a **kwargs one the dict
// of the keywords no parameter takes. Both are built only when build (the arguments
// checked). False after the first error, reported.
bool bind_params(Sema *sema, const Ast *e, const Ast *fn, int first, const AstList *args, const char *qual, bool build,
               Ast **vals, int *star) {
  int np = fn->list.len, kwstar = np;
  *star = np;
  for (int j = first; j < np; j++)
    if (fn->list.data[j]->ival == PARAM_STAR) *star = j;
    else if (fn->list.data[j]->ival == PARAM_KWARGS) kwstar = j;
  VEC(Ast *) extra = {0};  // keywords no parameter takes: **kwargs's
  VEC(Ast *) rest = {0};   // positional arguments from *args's place on
  int k = first;
  for (int i = 0; i < args->len; i++) {
    Ast *a = args->data[i];
    if (a->kind == AST_KWARG) continue;
    if (k >= *star && *star < np) {
      vec_push(&sema->cx->arena, &rest, a);
      continue;
    }
    if (k >= (kwstar < np ? kwstar : np)) {
      int given = first;
      for (int j = 0; j < args->len; j++) given += args->data[j]->kind != AST_KWARG;
      diag_error(sema->cx, a->loc, "%s() takes %d positional argument%s but %d were given", qual, np,
                 np == 1 ? "" : "s", given);
      return false;
    }
    vals[k++] = a;
  }
  for (int i = 0; i < args->len; i++) {
    Ast *a = args->data[i];
    if (a->kind != AST_KWARG) continue;
    int j = first;
    while (j < np && strcmp(fn->list.data[j]->name, a->name)) j++;
    if ((j == np || j == *star || j == kwstar) && kwstar < np) {
      vec_push(&sema->cx->arena, &extra, a);
      continue;
    }
    if (j == np || j == *star) {
      diag_error(sema->cx, a->loc, "%s() got an unexpected keyword argument '%s'", qual, a->name);
      return false;
    }
    if (vals[j]) {
      diag_error(sema->cx, a->loc, "%s() got multiple values for argument '%s'", qual, a->name);
      return false;
    }
    vals[j] = a->rhs;
  }
  if (kwstar < np && build) {
    TType **keys = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(extra.len + 1));
    Ast **kv = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(extra.len + 1));
    for (int i = 0; i < extra.len; i++) {
      keys[i] = ty_new(sema, TY_STR);
      keys[i]->module = extra.data[i]->name;
      kv[i] = extra.data[i]->rhs;
    }
    vals[kwstar] = part_dict(sema, e, keys, kv, extra.len);
  }
  if (*star < np && build) {
    Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(rest.len + 1));
    for (int i = 0; i < rest.len; i++) items[i] = seq_now(sema, rest.data[i]);
    vals[*star] = part_seq(sema, e, TY_TUPLE, items, rest.len);
  }
  return true;
}

TType *inline_call(Sema *sema, Ast *e, Ast *fn) {
  bool bad = !check_args(sema, e);
  if (on_stack(sema, fn)) {
    diag_error(sema->cx, call_loc(e), "recursive call to '%s'", fn->name);
    return poison(sema);
  }
  int np = fn->list.len, star = np;
  Ast **args = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(np + 1));
  if (!bind_params(sema, e, fn, 0, &e->list, fn->name, !bad, args, &star)) return poison(sema);
  for (int j = 0; j < np; j++)
    if (!args[j] && fn->list.data[j]->rhs) {
      args[j] = fn->list.data[j]->rhs;  // the default, a compile-time value checked when declared
    } else if (!args[j] && !bad) {
      diag_error(sema->cx, call_loc(e), "%s() missing 1 required %s argument: '%s'", fn->name,
                 j > star ? "keyword-only" : "positional", fn->list.data[j]->name);
      return poison(sema);
    }
  if (bad) return poison(sema);
  const FnSig *sig = sig_of(sema, fn);
  for (int j = 0; j < np; j++) {  // None: only where the parameter is optional
    const Ast *p = fn->list.data[j];
    if (args[j]->ty->kind != TY_NONE || optional_param(p)) continue;
    diag_error(sema->cx, args[j]->loc, "argument '%s' of '%s' must be %s, not None", p->name, fn->name,
               written_type(sema, p));
    diag_note(sema->cx, name_loc(p), "'%s' declared here (write %s | None to make it optional)", p->name,
              written_type(sema, p));
    return poison(sema);
  }
  // A Python scalar passed to a 0-d tensor parameter becomes one, as PyTorch wraps it.
  for (int j = 0; j < np; j++) {
    const Ast *p = fn->list.data[j];
    if (p->type->kind == AST_TYPE && p->type->list.len == 0 && is_scalar(args[j]->ty) &&
        p->type->dtype != DT_COUNT) {
      DType dt = p->type->dtype;
      DType cat = args[j]->ty->dtype == DT_F64 ? DT_F32 : args[j]->ty->dtype;
      if (dtype_promote(cat, dt) != dt && !(dtype_is_float(dt) && dtype_is_float(cat))) {
        diag_error(sema->cx, args[j]->loc, "argument '%s' of '%s' must be %s, not %s", p->name, fn->name,
                   written_type(sema, p), py_type_name(args[j]->ty));
        diag_note(sema->cx, name_loc(p), "'%s' declared here", p->name);
        return poison(sema);
      }
      args[j] = node_full(sema, args[j], args[j]->ty, dt);
    }
  }
  int64_t values[TD_MAX_DIMVARS];
  if (!bind_dims(sema, e, fn, sig, args, values)) return poison(sema);
  Ast *clone = ast_clone(sema->cx, sig->pristine);
  if (sema->captures.n) {  // a local def's captures, under the hidden names its call bound (sema_lambda.c)
    for (int i = 0; i < clone->body.len; i++)
      rename_names(clone->body.data[i], sema->captures.from, sema->captures.to, sema->captures.n);
    sema->captures.n = 0;
  }
  Sym *saved_dims = sema->dims;
  sema->dims = dim_scope(sema, sig, values);
  TType **pts = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(np + 1));
  // The scalars first: compile-time values the other parameters' types and the result's
  // may use (x: f32[C, L // stride], stride: int), as the body does.
  for (int j = 0; j < np && !bad; j++) {
    Ast *p = clone->list.data[j];
    DType sk = scalar_kind(fn->list.data[j]);
    if (sk == DT_COUNT) continue;
    if (args[j]->ty->kind == TY_NONE) {
      pts[j] = args[j]->ty;
      continue;
    }
    TyKind ok = object_kind(fn->list.data[j]);
    if (ok != TY_POISON) {  // a tuple, list or dict: the caller's object, its elements read where the body reads them
      bool callable = (args[j]->ty->kind == TY_MODULE && args[j]->ty->ctor) || is_container(args[j]->ty);  // nn.GELU()
      if (ok != TY_NONE && (ok == TY_MODULE ? !callable : args[j]->ty->kind != ok)) {
        diag_error(sema->cx, args[j]->loc, "argument '%s' of '%s' must be %s, not %s", p->name, fn->name,
                   ok == TY_TUPLE ? "tuple" : ok == TY_LIST ? "list" : ok == TY_DICT ? "dict"
                   : ok == TY_TENSOR ? "Tensor" : "callable",
                   py_type_name(args[j]->ty));
        diag_note(sema->cx, name_loc(fn->list.data[j]), "'%s' declared here", p->name);
        bad = true;
        continue;
      }
      args[j] = seq_now(sema, args[j]);
      pts[j] = callable ? lambda_closure(sema, e, args[j]->ty) : args[j]->ty;
      continue;
    }
    if (sk == DT_U8 && args[j]->ty->kind != TY_STR) {
      diag_error(sema->cx, args[j]->loc, "argument '%s' of '%s' must be str, not %s", p->name, fn->name,
                 py_type_name(args[j]->ty));
      diag_note(sema->cx, name_loc(fn->list.data[j]), "'%s' declared here", p->name);
    }
    pts[j] = sk == DT_U8 ? (args[j]->ty->kind == TY_STR ? args[j]->ty : NULL) : bind_scalar(sema, fn, fn->list.data[j], args[j], sk);
    bad = !pts[j];
    if (pts[j]) {
      Sym *d = arena_alloc(&sema->cx->arena, sizeof *d);
      *d = (Sym){p->name, pts[j], name_loc(p), NULL, sema->dims};
      sema->dims = d;
    }
  }
  for (int j = 0; j < np && !bad; j++) {
    Ast *p = clone->list.data[j];
    if (scalar_kind(fn->list.data[j]) != DT_COUNT) continue;
    if (args[j]->ty->kind == TY_NONE) {  // an optional tensor left out: None in the body
      pts[j] = args[j]->ty;
      continue;
    }
    TType *want = param_type(sema, p->type), *got = args[j]->ty;
    if (is_poison(want)) {
      bad = true;
      break;
    }
    if (!is_tensor(got) || got->dtype != want->dtype ||
        !same_shape(got->view.ndim, got->view.shape, want->view.ndim, want->view.shape)) {
      diag_error(sema->cx, args[j]->loc, "argument '%s' of '%s' must be %s, not %s", p->name, fn->name,
                 type_str(sema, want), type_str(sema, got));
      if (sig->ndims) diag_note(sema->cx, name_loc(fn->list.data[j]), "'%s' declared here as %s", p->name,
                                written_type(sema, fn->list.data[j]));
      else diag_note(sema->cx, name_loc(fn->list.data[j]), "'%s' declared here", p->name);
      bad = true;
      continue;
    }
    if (p->mut && !got->writable) {
      diag_error(sema->cx, args[j]->loc, "cannot write to '%s': parameters are read-only unless declared 'mut'",
                 target_name(args[j]));
      diag_note(sema->cx, name_loc(p), "'%s' of '%s' is declared 'mut'", p->name, fn->name);
      bad = true;
      continue;
    }
    pts[j] = ty_view_of(sema, got, got->view);
    pts[j]->writable = got->writable && p->mut;
  }
  for (int j = 0; j < np; j++) bad |= !pts[j];
  if (bad || (sema->stack.len <= 1 && !inline_fits(sema, e, fn))) {
    sema->dims = saved_dims;
    return poison(sema);
  }
  e->inlined = clone;
  set_operands(sema, e, args, np);
  vec_push(&sema->cx->arena, &sema->stack, fn);
  int before = sema->cx->nerrors;
  sema->param_src = args;  // a tuple, list or dict parameter's elements: the argument's
  int changed = sema->changed.len;
  TType *r = check_body(sema, clone, pts);
  sema->stack.len--;
  sema->dims = saved_dims;
  // A list or dict of the caller's the body changed in place (xs.append(v) of a list argument
  // or a local def's capture) is changed for every holder in the caller too, as Python's one
  // object is: rebound in e->body, which lowering runs after the call's body.
  Ast post = {.kind = AST_PASS, .loc = e->loc};
  for (int k = changed, n = sema->changed.len; k < n && !is_poison(r); k++) {
    Ast old = {.kind = AST_NAME, .name = "", .loc = e->loc, .ty = (TType *)sema->changed.data[k].old};
    seq_replace(sema, &post, &old, sema->changed.data[k].now, true);
  }
  for (int i = 0; i < post.unrolled.len; i++) vec_push(&sema->cx->arena, &e->body, post.unrolled.data[i]);
  if (sema->cx->nerrors > before) diag_note(sema->cx, call_loc(e), "in the call to '%s' inlined here", fn->name);
  return r;
}

// Every function is checked as an entry point: contiguous parameters, storage = index;
// its dims (if any) bound to values. A scalar parameter is a run-time value: a 0-d
// tensor of f64/i64/bool marked wrapped, which promotes as a Python scalar does.
static void check_entry(Sema *sema, Ast *fn, const int64_t *values) {
  int np = fn->list.len;
  reset_globals(sema);
  sema->dims = dim_scope(sema, sig_of(sema, fn), values);
  TType **pts = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(np + 1));
  for (int i = 0; i < np; i++) {  // the scalars: run-time values (also in the types' scope, to say so)
    Ast *p = fn->list.data[i];
    DType sk = scalar_kind(p);
    if (sk == DT_COUNT) continue;
    if (sk == DT_U8 && object_kind(p) != TY_POISON && p->rhs && p->rhs->ty && p->rhs->ty->kind == TY_NONE) {
      pts[i] = ty_new(sema, TY_NONE);  // kv_cache: dict | None = None: None, in an entry point
      continue;
    }
    if (sk == DT_U8 && object_kind(p) == TY_POISON && p->rhs && p->rhs->ty && p->rhs->ty->kind == TY_STR) {
      pts[i] = p->rhs->ty;  // act: str = 'gelu': fixed to its default, in an entry point
      Sym *d = arena_alloc(&sema->cx->arena, sizeof *d);
      *d = (Sym){p->name, pts[i], name_loc(p), NULL, sema->dims};
      sema->dims = d;
      continue;
    }
    if (sk == DT_U8 && object_kind(p) == TY_TENSOR) {
      diag_error(sema->cx, name_loc(p), "an entry point's tensor parameter '%s' needs its dtype and shape: write %s: "
                 "f32[dims] in place of %s (called from another function, '%s' takes any tensor)", p->name, p->name,
                 p->type->name, fn->name);
      pts[i] = poison(sema);
      continue;
    }
    if (sk == DT_U8) {  // a string is a compile-time value only
      const char *what = object_kind(p) == TY_POISON ? "str" : p->type->name;
      diag_error(sema->cx, name_loc(p), "an entry point cannot take the %s '%s': a %s is a compile-time value "
                 "(called from another function, '%s' takes one)", what, p->name,
                 object_kind(p) == TY_POISON ? "string" : what, fn->name);
      pts[i] = poison(sema);
      continue;
    }
    TType *t = ty_new(sema, TY_TENSOR);
    t->dtype = sk;
    t->view = view_contiguous(0, NULL);
    t->storage_numel = 1;
    t->wrapped = true;
    pts[i] = t;
    Sym *d = arena_alloc(&sema->cx->arena, sizeof *d);
    *d = (Sym){p->name, t, name_loc(p), NULL, sema->dims};
    sema->dims = d;
  }
  for (int i = 0; i < np; i++) {
    Ast *p = fn->list.data[i];
    TType *t = pts[i] ? pts[i] : param_type(sema, p->type);  // an optional tensor: given, in an entry point
    if (!is_poison(t)) {
      t = ty_view_of(sema, t, t->view);
      t->storage = i;
      t->writable = p->mut;
    }
    pts[i] = t;
    p->ty = t;
  }
  for (int i = 0; i < fn->rets.len; i++)
    if (fn->rets.data[i]->kind == AST_SCALAR_TYPE || any_result(fn))
      diag_error(sema->cx, fn->rets.data[i]->loc, "the result of an entry point needs its dtype and shape: write "
                 "f32[dims] (or the result's dtype) in place of %s, as its C function returns one", fn->rets.data[i]->name);
    else if (fn->rets.data[i]->kind != AST_NONE)
      param_type(sema, fn->rets.data[i]);
  sema->nstorage = np;
  sema->entry = fn;
  vec_push(&sema->cx->arena, &sema->stack, fn);
  fn->ty = check_body(sema, fn, pts);
  sema->stack.len--;
  sema->dims = NULL;
}

// check_entry with every message held back (p->entry is another function, and this one is
// a helper: it may need the values its calls give); false if it had an error, all of
// whose traces are undone.
static bool check_entry_quietly(Sema *sema, Ast *fn, const int64_t *values) {
  Ctx *cx = sema->cx;
  FILE *sink = fopen("/dev/null", "w");
  if (!sink) {
    check_entry(sema, fn, values);
    return true;
  }
  FILE *out = cx->diag_out;
  int nerrors = cx->nerrors, nwarnings = cx->nwarnings, nreported = cx->nreported;
  int64_t inlined = sema->inlined;
  bool over = sema->over_budget;
  cx->diag_out = sink;
  check_entry(sema, fn, values);
  fclose(sink);
  bool ok = cx->nerrors == nerrors;
  cx->diag_out = out;
  cx->nerrors = nerrors;
  cx->nwarnings = nwarnings;
  cx->nreported = nreported;  // the messages held back may still be said at a call
  if (!ok) {
    sema->inlined = inlined;
    sema->over_budget = over;
  }
  return ok;
}

// ============================================================================
// Signatures: scalar parameter types and dim variables (FnSig)
// ============================================================================
// The scalar parameter of fn named name, or NULL.
static const Ast *scalar_param(const Ast *fn, const char *name) {
  for (int j = 0; j < fn->list.len; j++)
    if (fn->list.data[j]->type->kind == AST_SCALAR_TYPE && !strcmp(fn->list.data[j]->name, name))
      return fn->list.data[j];
  return NULL;
}

// A bare name in fn's types that is a dim variable: no const, function, module, name an import
// binds (Tuple of `from typing import Tuple`, inside Optional[Tuple[torch.FloatTensor]]) or scalar
// parameter of fn (x: f32[C, L // stride], stride: int).
static bool is_dim_word(Sema *sema, const Ast *fn, const char *name) {
  return !find_const(sema, name) && !sema_find_fn(sema->p, name) && !module_named(sema, name) &&
         !find_import(sema, name) && !scalar_param(fn, name);
}

// The names in dim expression d that are neither consts nor dims of sig: reported.
static void check_dim_names(Sema *sema, const Ast *fn, const FnSig *sig, const Ast *d) {
  if (!d) return;
  if (d->kind == AST_NAME) {
    if (!is_dim_word(sema, fn, d->name)) return;
    for (int k = 0; k < sig->ndims; k++)
      if (!strcmp(sig->dims[k], d->name)) return;
    diag_error(sema->cx, d->loc, "dim '%s' of '%s' is never bound: a dim name must be written alone as a dim of "
               "some parameter (as in f32[%s])", d->name, fn->name, d->name);
    return;
  }
  if (d->kind == AST_ATTR) return;  // math.pi
  if (d->kind == AST_BINARY) {  // a + b + c ...: the chain of left operands in a loop
    for (; d->kind == AST_BINARY; d = d->lhs) check_dim_names(sema, fn, sig, d->rhs);
    check_dim_names(sema, fn, sig, d);
    return;
  }
  check_dim_names(sema, fn, sig, d->lhs);
  check_dim_names(sema, fn, sig, d->rhs);
  for (int i = 0; i < d->list.len; i++) check_dim_names(sema, fn, sig, d->list.data[i]);
}

// A parameter's default (a compile-time value, checked now as Python evaluates it when the
// def runs) against its type: a number of the scalar's kind, None. false after an error.
static bool check_default(Sema *sema, Ast *p) {
  Sym *saved = sema->scope;
  sema->scope = NULL;
  TType *d = p->rhs->ty ? p->rhs->ty : check_expr(sema, p->rhs);  // a local def's: checked where it stands
  sema->scope = saved;
  if (is_poison(d)) return false;
  Ast *t = p->type;
  if (object_kind(p) == TY_NONE) return true;  // untyped, of a local def: any value
  if (d->kind == TY_NONE) return true;  // x: f32[N] = None is optional, as Python runs it
  // a function or a class as a Callable's default (norm_layer=nn.LayerNorm, act=F.gelu, partial(...)): one
  // object for every call, as Python's, and none with state of its own (an nn module object is refused)
  bool fn_value = (is_lambda(d) && !is_instance(d)) ||
                  (d->kind == TY_MODULE && !strcmp(d->module, "functools.partial"));
  if (fn_value && (object_kind(p) == TY_MODULE || (t->kind == AST_SCALAR_TYPE && !t->name))) {
    if (!t->name) t->name = "Callable";  // act=nn.GELU: a Callable
    return true;
  }
  if (t->kind == AST_SCALAR_TYPE && !t->name) {  // k=3: the default's kind
    if (is_scalar(d) || d->kind == TY_STR) return true;
    diag_error(sema->cx, p->rhs->loc, "parameter '%s' has no type: write %s: TYPE = ..., a tensor's TYPE as "
               "f32[dims] (its default can only be None)", p->name, p->name);
    return false;
  }
  DType k = scalar_kind(p);
  if (k == DT_COUNT) {
    diag_error(sema->cx, p->rhs->loc, "the default of tensor parameter '%s' can only be None, not %s", p->name,
               py_type_name(d));
    return false;
  }
  if (k == DT_U8 && object_kind(p) != TY_POISON) {
    diag_error(sema->cx, p->rhs->loc, "the default of '%s' can only be None, not %s (a default is one object for every "
               "call in Python)", p->name, py_type_name(d));
    return false;
  }
  if (k == DT_U8 ? d->kind == TY_STR
                 : is_scalar(d) && (d->dtype == k || (k == DT_F64) || (k == DT_I64 && d->dtype == DT_BOOL)))
    return true;
  diag_error(sema->cx, p->rhs->loc, "the default of '%s' must be %s, not %s", p->name,
             k == DT_U8 ? "str" : k == DT_F64 ? "float" : k == DT_I64 ? "int" : "bool", py_type_name(d));
  return false;
}

// A parameter annotated with typing's generics as pasted code writes them (parsed as a tensor type
// of an unknown word): Callable[..., nn.Module] is a Callable, Optional[T] and Union[T, None] (either
// order) are T | None, T any word of a parameter's type (torch.Tensor, int, Tuple, nn.Module,
// "Block"); p's type rewritten so.
static void typing_param(Sema *sema, Ast *p) {
  Ast *t = p->type;
  if (t->kind != AST_TYPE || t->dtype != DT_COUNT || !t->name) return;
  int n = t->list.len;
  bool none0 = n == 2 && t->list.data[0]->kind == AST_NONE, none1 = n == 2 && t->list.data[1]->kind == AST_NONE;
  bool un = !strcmp(t->name, "Union") && none0 != none1;
  bool opt = (!strcmp(t->name, "Optional") && n == 1) || un;
  const Ast *in = opt ? t->list.data[un && none0] : NULL;
  while (in && in->kind == AST_INDEX) in = in->lhs;  // Optional[Callable[..., nn.Module]]: Callable
  bool word = in && (in->kind == AST_NAME || in->kind == AST_ATTR || in->kind == AST_STR);
  const char *w = !opt ? t->name : word ? in->name : NULL;  // Optional[nn.Module], Optional["Block"]: module_params'
  static const char *const words[] = {"Callable", "Tuple", "List", "Dict", NULL};
  bool known = w && opt;
  for (int i = 0; w && words[i] && !known; i++) known = !strcmp(w, words[i]);
  if (!known) return;
  Ast *s = ast_scalar_type(sema->cx, w, t->loc);
  p->type = opt || t->bval ? ast_optional(sema->cx, s, t->loc) : s;
}

static void declare_sig(Sema *sema, const Ast *fn, FnSig *sig) {
  int np = fn->list.len;
  for (int i = 0; i < fn->rets.len; i++) {
    const Ast *r = fn->rets.data[i];
    if (any_result(fn)) break;
    size_t n = r->kind == AST_SCALAR_TYPE ? strlen(r->name) : 0;
    if ((r->kind == AST_SCALAR_TYPE && (n < 6 || strcmp(r->name + n - 6, "Tensor"))) ||
        (r->kind == AST_TYPE && r->dtype == DT_COUNT))
      diag_error(sema->cx, r->loc, "a result written beside a tdsl type is a tensor, written f32[dims], a "
                 "torch.Tensor or None, not '%s' (a result annotated as Python does, without f32[dims], is not "
                 "checked)", r->name);
  }
  bool dflt = false;
  int stars = 0;
  for (int j = 0; j < np; j++) {  // Python's rules of a parameter list
    Ast *p = fn->list.data[j];
    typing_param(sema, p);
    if (p->ival == PARAM_STAR && stars++)
      diag_error(sema->cx, name_loc(p), "* argument may appear only once");
    if (j + 1 < np && p->ival == PARAM_KWARGS)
      diag_error(sema->cx, name_loc(fn->list.data[j + 1]), "arguments cannot follow var-keyword argument");
    if (p->ival == PARAM_STAR && p->type->kind != AST_SCALAR_TYPE)
      diag_error(sema->cx, p->type->loc, "the elements of *%s are not typed: write *%s (a tuple of what the call "
                 "passes there)", p->name, p->name);
    if (param_repeats(fn, j))
      diag_error(sema->cx, name_loc(p), "duplicate argument '%s' in function definition", p->name);
    if (p->rhs) {
      if (check_default(sema, p) && p->type->kind == AST_SCALAR_TYPE && !p->type->name && p->rhs->ty->kind == TY_NONE)
        p->type->name = ANY_TYPE;  // device=None: any value, or None
    } else if (dflt && !stars && p->ival != PARAM_KWARGS) {
      diag_error(sema->cx, name_loc(p), "non-default argument follows default argument");
    }
    dflt |= p->rhs != NULL;
  }
  sig->bare = arena_alloc(&sema->cx->arena, sizeof(int) * (size_t)(np * TD_MAX_DIMS + 1));
  for (int i = 0; i < np * TD_MAX_DIMS; i++) sig->bare[i] = -1;
  for (int j = 0; j < np; j++) {
    const Ast *p = fn->list.data[j], *t = p->type;
    if (t->kind == AST_SCALAR_TYPE && !t->name) continue;  // k=3: check_default said it
    if (t->kind == AST_SCALAR_TYPE) {
      const char *n = t->name;
      DType dt;
      if (!strcmp(n, ANY_TYPE))  // a helper's, as Python's: any value (an entry point's: sema_check_fns)
        ;
      else if (strcmp(n, "bool") && dtype_from_name(n, &dt))  // bool alone is Python's bool
        diag_error(sema->cx, t->loc, "parameter '%s' has no dims: a 0-d tensor is written %s[], a Python scalar "
                   "int, float or bool", p->name, n);
      else if (strcmp(n, "int") && strcmp(n, "float") && strcmp(n, "bool") && strcmp(n, "str") &&
               object_kind(p) == TY_POISON)
        diag_error(sema->cx, t->loc, "unknown type '%s' of parameter '%s': a scalar parameter is int, float, bool or "
                   "str (a helper's may also be tuple, list, dict or Callable)", n, p->name);
      else if (p->mut)
        diag_error(sema->cx, name_loc(p), "'mut' applies to tensor parameters, not to the scalar '%s'", p->name);
      continue;
    }
    for (int a = 0; a < t->list.len && a < TD_MAX_DIMS; a++) {
      const Ast *d = t->list.data[a];
      if (d->kind != AST_NAME || !is_dim_word(sema, fn, d->name)) continue;
      int k = 0;
      while (k < sig->ndims && strcmp(sig->dims[k], d->name)) k++;
      if (k == sig->ndims) {
        if (k == TD_MAX_DIMVARS) {
          diag_error(sema->cx, d->loc, "function '%s' has more than %d dim names", fn->name, TD_MAX_DIMVARS);
          return;
        }
        for (int q = 0; q < np; q++)
          if (!strcmp(fn->list.data[q]->name, d->name))
            diag_error(sema->cx, d->loc, "'%s' is both a parameter and a dim of '%s'", d->name, fn->name);
        sig->dims[k] = d->name;
        sig->dimloc[k] = d->loc;
        sig->ndims++;
      }
      sig->bare[j * TD_MAX_DIMS + a] = k;
    }
  }
  for (int j = 0; j < np; j++) {
    const Ast *t = fn->list.data[j]->type;
    if (t->kind != AST_TYPE) continue;
    for (int a = 0; a < t->list.len; a++)
      if (t->list.data[a]->kind != AST_NAME) check_dim_names(sema, fn, sig, t->list.data[a]);
  }
}

// ============================================================================
// Declarations: constants and function names
// ============================================================================
static const char *const c_keywords[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
    "true", "false", "alignas", "alignof", "nullptr", "static_assert", "thread_local", "typeof", "_Alignas",
    "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert",
    "_Thread_local", "asm", "NULL", NULL};
static const char *const libc_names[] = {
    // stdlib, string, stdio, misc
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "abort", "exit", "_Exit", "atexit", "quick_exit",
    "getenv", "system", "atoi", "atol", "atoll", "atof", "strtol", "strtoll", "strtoul", "strtoull", "strtod",
    "strtof", "strtold", "qsort", "bsearch", "rand", "srand", "abs", "labs", "llabs", "div", "ldiv", "memcpy",
    "memmove", "memset", "memcmp", "memchr", "strlen", "strcpy", "strncpy", "strcat", "strncat", "strcmp",
    "strncmp", "strchr", "strrchr", "strstr", "strdup", "strndup", "strtok", "strerror", "strspn", "strcspn",
    "printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf", "vsprintf", "vsnprintf", "scanf", "fscanf",
    "sscanf", "puts", "fputs", "putchar", "fputc", "putc", "getchar", "fgetc", "getc", "fgets", "fopen", "fclose",
    "fread", "fwrite", "fseek", "ftell", "rewind", "fflush", "feof", "ferror", "perror", "remove", "rename",
    "tmpfile", "time", "clock", "difftime", "mktime", "signal", "raise", "setjmp", "longjmp", "assert", "errno",
    "stdin", "stdout", "stderr", "open", "close", "read", "write", "fork", "dlopen", "dlsym", "mmap", "munmap",
    "pthread_create", "pthread_join", "omp_get_num_threads", "omp_get_thread_num",
    // math (also with f/l suffixes, checked below)
    "acos", "asin", "atan", "atan2", "cos", "sin", "tan", "acosh", "asinh", "atanh", "cosh", "sinh", "tanh",
    "exp", "exp2", "expm1", "frexp", "ldexp", "log", "log10", "log1p", "log2", "logb", "ilogb", "modf", "scalbn",
    "scalbln", "cbrt", "fabs", "hypot", "pow", "sqrt", "erf", "erfc", "lgamma", "tgamma", "ceil", "floor",
    "nearbyint", "rint", "lrint", "llrint", "round", "lround", "llround", "trunc", "fmod", "remainder", "remquo",
    "copysign", "nan", "nextafter", "nexttoward", "fdim", "fmax", "fmin", "fma", "isnan", "isinf", "isfinite",
    "signbit", "fpclassify", "isnormal", "sincos", "exp10", "pow10", NULL};

static bool in_list(const char *const *list, const char *name) {
  for (int i = 0; list[i]; i++)
    if (!strcmp(list[i], name)) return true;
  return false;
}
static bool is_libc_name(const char *name) {
  if (in_list(libc_names, name)) return true;
  for (int op = 0; op < OP_COUNT; op++) {  // ir/ops.def's libm column (NAME, NAMEf)
    const char *m = op_libm((Op)op);
    size_t n = m ? strlen(m) : 0;
    if (m && !strncmp(name, m, n) && (!name[n] || !strcmp(name + n, "f"))) return true;
  }
  size_t n = strlen(name);
  if (n > 1 && (name[n - 1] == 'f' || name[n - 1] == 'l')) {  // sinf, expl ...
    char buf[64];
    if (n >= sizeof buf) return false;
    memcpy(buf, name, n - 1);
    buf[n - 1] = 0;
    return in_list(libc_names, buf);
  }
  return false;
}

// Why fn's name cannot be a C symbol (an entry point's), or NULL.
static const char *bad_c_name(const Ast *fn) {
  const char *n = fn->name;
  if (!strcmp(n, "main")) return "it is the C program's entry point";
  if (!strncmp(n, "tdsl_", 5)) return "names beginning with 'tdsl_' belong to the runtime";
  if (in_list(c_keywords, n)) return "it is a C keyword";
  if (is_libc_name(n)) return "it is a C library function";
  return NULL;
}

// Whether statements stmts return a value (not into a def or lambda inside).
static bool returns_value(const AstList *stmts) {
  for (int i = 0; i < stmts->len; i++) {
    const Ast *st = stmts->data[i];
    if (st->kind == AST_RETURN && st->list.len && !(st->list.len == 1 && st->list.data[0]->kind == AST_NONE))
      return true;
    if ((st->kind == AST_IF || st->kind == AST_FOR || st->kind == AST_WHILE) && returns_value(&st->body)) return true;
    if (st->kind == AST_IF && returns_value(&st->list)) return true;
  }
  return false;
}

// The parameter of fn that has no type and no default, or NULL.
static const Ast *untyped_param(const Ast *fn) {
  for (int j = 0; j < fn->list.len; j++) {
    const Ast *p = fn->list.data[j];
    if (p->type->kind == AST_SCALAR_TYPE && p->type->name && !strcmp(p->type->name, ANY_TYPE) && !p->rhs &&
        p->ival != PARAM_STAR && p->ival != PARAM_KWARGS)
      return p;
  }
  return NULL;
}

// A function of the file written as Python writes a helper (`fn exists(val) { return val is
// not None }`): a parameter without a type, or a value returned without an arrow. Its
// annotations are unchecked and each call types it by its arguments, as a fn inside another;
// it is no entry point (its name need not be a C symbol's).
bool python_helper(const Ast *fn) {
  return fn->op != DEF_LOCAL && (untyped_param(fn) || (!fn->rets.len && returns_value(&fn->body)));
}

// Whether fn is the file's function chosen as the entry point (--fn).
static bool chosen_entry(const Program *p, const Ast *fn) { return p->entry && !strcmp(p->entry, fn->name); }

// What a const may hold: Python values known when compiling, no tensor among them (a
// module-level table: ACT2FN = {"gelu": lambda t: F.gelu(t), ...}).
static bool const_value(const TType *t) {
  if (t->kind == TY_TENSOR || t->kind == TY_POISON) return false;
  for (int i = 0; (t->kind == TY_TUPLE || t->kind == TY_LIST || t->kind == TY_DICT) && i < t->nelem; i++)
    if (!const_value(t->elems[i])) return false;
  return true;
}

static void check_const(Sema *sema, Ast *c) {
  Loc nl = name_loc(c);
  if (find_const(sema, c->name) || sema_find_fn(sema->p, c->name)) {
    diag_error(sema->cx, nl, "redefinition of '%s'", c->name);
    return;
  }
  Sym *saved = sema->scope;
  sema->scope = NULL;
  TType *t = check_expr(sema, c->rhs);
  sema->scope = saved;
  if (!is_poison(t) && !const_value(t)) {
    diag_error(sema->cx, c->rhs->loc, "const '%s' must be a compile-time value (a number, a string, a tuple, list or "
               "dict of them, a lambda), not %s", c->name, t->kind == TY_TENSOR ? "a tensor" : py_type_name(t));
    t = poison(sema);
  }
  c->ty = t;
  Const k = {c->name, t, nl, c->rhs};
  vec_push(&sema->cx->arena, &sema->consts, k);
}

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

int sema_fn_index(const Program *p, const char *name) {
  if (!p->cap) return -1;
  for (size_t i = name_hash(name) & (size_t)(p->cap - 1);; i = (i + 1) & (size_t)(p->cap - 1)) {
    int k = p->slots[i];
    if (!k) return -1;
    if (!strcmp(p->fns.data[k - 1]->name, name)) return k - 1;
  }
}

Ast *sema_find_fn(const Program *p, const char *name) {
  int i = sema_fn_index(p, name);
  return i < 0 ? NULL : p->fns.data[i];
}

// Appends fn (its name not yet taken) to p->fns and its name index.
static void add_fn(Ctx *cx, Program *p, Ast *fn) {
  vec_push(&cx->arena, &p->fns, fn);
  if (2 * p->fns.len > p->cap) {  // grow and reinsert
    p->cap = p->cap ? 2 * p->cap : 16;
    p->slots = arena_alloc(&cx->arena, sizeof(int) * (size_t)p->cap);
    for (int k = 0; k < p->fns.len; k++) {
      size_t i = name_hash(p->fns.data[k]->name) & (size_t)(p->cap - 1);
      while (p->slots[i]) i = (i + 1) & (size_t)(p->cap - 1);
      p->slots[i] = k + 1;
    }
    return;
  }
  size_t i = name_hash(fn->name) & (size_t)(p->cap - 1);
  while (p->slots[i]) i = (i + 1) & (size_t)(p->cap - 1);
  p->slots[i] = p->fns.len;
}

// The user functions fn's statement or expression a calls, pushed on out (indices into
// p->fns). The chains an expression grows along (a + b + c ..., x.f().g() ...) are walked,
// not recursed into, so a flat expression of any length costs no depth.
// A name the function binds (a parameter, a local: locals) is no call of the file's
// function of that name, as Python's scoping has it (`fn apply(x, f: Callable) { f(x) }`).
typedef VEC(int) IntList;
static void find_calls(Ctx *cx, const Program *p, const Ast *a, const NameList *locals, IntList *out) {
  for (; a; a = a->lhs) {
    if (a->kind == AST_CALL && !a->lhs && !name_in(locals, a->name)) {
      int i = sema_fn_index(p, a->name);
      if (i >= 0) vec_push(&cx->arena, out, i);
    }
    find_calls(cx, p, a->rhs, locals, out);
    find_calls(cx, p, a->step, locals, out);
    for (int i = 0; i < a->list.len; i++) find_calls(cx, p, a->list.data[i], locals, out);
    for (int i = 0; i < a->body.len; i++) find_calls(cx, p, a->body.data[i], locals, out);
  }
}

// The helpers: functions called, directly or not, from a function nothing calls (an entry
// point as Python would run it); each gets the first caller found (FnSig.caller). Functions
// that only call each other (recursion) are no helpers: each is checked as an entry point.
static void find_helpers(Ctx *cx, Program *p) {
  int n = p->fns.len;
  IntList *calls = arena_alloc(&cx->arena, sizeof(IntList) * (size_t)(n + 1));
  bool *called = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) {
    const Ast *f = p->fns.data[i];
    NameList locals = {0};
    fn_locals(&cx->arena, f, &locals);
    for (int j = 0; j < f->body.len; j++) find_calls(cx, p, f->body.data[j], &locals, &calls[i]);
    for (int k = 0; k < calls[i].len; k++) called[calls[i].data[k]] |= calls[i].data[k] != i;
  }
  IntList queue = {0};
  bool *seen = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(n + 1));
  for (int i = 0; i < p->ast->list.len; i++) {  // a class's methods call a function: it is a helper (conv3x3)
    const Ast *d = p->ast->list.data[i], *cls = d->kind == AST_CONST ? d->rhs : NULL;
    if (!cls || cls->kind != AST_FN || cls->op != DEF_CLASS) continue;
    IntList from = {0};
    for (int m = 0; m < cls->body.len; m++) {
      const Ast *f = cls->body.data[m];
      if (f->kind != AST_FN) continue;
      NameList locals = {0};
      fn_locals(&cx->arena, f, &locals);
      for (int j = 0; j < f->body.len; j++) find_calls(cx, p, f->body.data[j], &locals, &from);
    }
    for (int k = 0; k < from.len; k++) {
      int j = from.data[k];
      if (seen[j]) continue;
      seen[j] = called[j] = true;
      p->sigs[j].caller = cls->name;
      vec_push(&cx->arena, &queue, j);
    }
  }
  for (int i = 0; i < n; i++)
    if (!called[i] && !seen[i]) {
      vec_push(&cx->arena, &queue, i);
      seen[i] = true;
    }
  for (int q = 0; q < queue.len; q++) {
    int i = queue.data[q];
    for (int k = 0; k < calls[i].len; k++) {
      int j = calls[i].data[k];
      if (seen[j]) continue;
      seen[j] = true;
      p->sigs[j].caller = p->fns.data[i]->name;
      vec_push(&cx->arena, &queue, j);
    }
  }
}

// A local def's signature (a fn inside another, sema_lambda.c): Python's rules of its
// parameter list checked and its dims found now, where the def stands; each call inlines
// a clone of def as it is now.
FnSig *local_sig(Sema *sema, Ast *def) {
  FnSig *sig = arena_alloc(&sema->cx->arena, sizeof *sig);
  sig->pristine = ast_clone(sema->cx, def);
  declare_sig(sema, def, sig);
  LocalSig l = {def, sig};
  vec_push(&sema->cx->arena, &sema->local_sigs, l);
  return sig;
}

// fn's parameters annotated with a module type (m: nn.Module, block: "Block", a class of the
// file; `| None`): typed "Module", a module object (or None), as Callable's are.
void module_params(Sema *sema, Ast *fn) {
  for (int j = 0; j < fn->list.len; j++) {
    typing_param(sema, fn->list.data[j]);  // Optional[nn.Module]: Module | None
    Ast *t = fn->list.data[j]->type;
    const char *n = t->kind == AST_SCALAR_TYPE ? t->name : NULL;
    if (!n) continue;
    const char *dot = strrchr(n, '.');
    const Const *c = find_const(sema, dot ? dot + 1 : n);
    bool cls = c && c->src && c->src->kind == AST_FN && c->src->op == DEF_CLASS;
    if (cls || !strcmp(dot ? dot + 1 : n, "Module")) t->name = "Module";
  }
}

bool sema_declare(Ctx *cx, Program *p) {
  Sema *sema = arena_alloc(&cx->arena, sizeof *sema);
  sema->cx = cx;
  sema->p = p;
  p->sema = sema;
  sema->nfile_consts = -1;
  int before = cx->nerrors;
  p->fns = (AstList){0};
  p->slots = NULL;
  p->cap = 0;
  p->sigs = NULL;
  if (!p->ast) return false;
  // functions first (a const may not share a function's name), then constants in order
  for (int i = 0; i < p->ast->list.len; i++) {
    Ast *d = p->ast->list.data[i];
    if (d->kind != AST_FN) continue;
    Ast *prev = sema_find_fn(p, d->name);
    if (prev) {
      diag_error(cx, name_loc(d), "redefinition of '%s'", d->name);
      diag_note(cx, name_loc(prev), "previous definition of '%s' is here", d->name);
      continue;
    }
    add_fn(cx, p, d);
  }
  for (int i = 0; i < p->ast->list.len; i++) {  // imports, then constants, in order
    Ast *d = p->ast->list.data[i];
    if (d->kind == AST_IMPORT) declare_import(sema, d);
  }
  for (int i = 0; i < p->ast->list.len; i++) {
    Ast *d = p->ast->list.data[i];
    if (d->kind == AST_CONST) check_const(sema, d);
  }
  p->sigs = arena_alloc(&cx->arena, sizeof(FnSig) * (size_t)(p->fns.len + 1));
  for (int i = 0; i < p->fns.len; i++) module_params(sema, p->fns.data[i]);
  for (int i = 0; i < p->fns.len; i++) {
    p->sigs[i].pristine = ast_clone(cx, p->fns.data[i]);  // before any check annotates the declaration
    declare_sig(sema, p->fns.data[i], &p->sigs[i]);
    if (p->fns.data[i]->deco)  // @property, @classmethod: a class's (sema_class.c)
      diag_error(sema->cx, name_loc(p->fns.data[i]), "@%s on a function of the file: tdsl takes it on a method of a "
                 "class", p->fns.data[i]->deco == 'c' ? "classmethod" : "property");
  }
  find_helpers(cx, p);
  for (int i = 0; i < p->fns.len; i++) {  // an entry point's name becomes a C symbol; a helper's is inlined
    Ast *fn = p->fns.data[i];
    const char *why = bad_c_name(fn);
    if (why && (chosen_entry(p, fn) || !(python_helper(fn) || p->sigs[i].caller)))
      diag_error(cx, name_loc(fn), "invalid function name '%s': %s", fn->name, why);
  }
  sema_budget(sema);
  sema->ok = cx->nerrors == before;
  return sema->ok;
}

int sema_dims_find(const SemaDims *dims, const char *name) {
  for (int j = 0; dims && j < dims->n; j++)
    if (!strcmp(dims->names[j], name)) return j;
  return -1;
}

bool sema_check_fns(Ctx *cx, Program *p, const SemaDims *dims) {
  Sema *sema = p->sema;
  if (!sema) return false;
  int before = cx->nerrors;
  for (int i = 0; i < p->fns.len; i++) {
    FnSig *sig = &p->sigs[i];
    int bound = 0;
    for (int k = 0; k < sig->ndims; k++) {
      int j = sema_dims_find(dims, sig->dims[k]);
      if (j >= 0) sig->values[k] = dims->values[j], bound++;
    }
    Ast *fn = p->fns.data[i];
    const Ast *u = untyped_param(fn);
    // A helper compiles only where it is called (compile.c's note). One chosen as the entry with
    // typed parameters, which returns a value without an arrow, is checked as an entry: its
    // body's errors first, then the result it lacks (sema_stmt.c).
    bool entry = chosen_entry(p, fn);
    if ((python_helper(fn) && !(entry && !u)) || (sig->caller && bad_c_name(fn) && !entry)) {
      sig->helper_only = true;
      if (chosen_entry(p, fn) && u)
        diag_error(cx, name_loc(u), "'%s' is a helper, not an entry point: its parameter '%s' has no type (an entry "
                   "point's are typed: %s: f32[dims], int, float or bool); it compiles where another function calls "
                   "it", fn->name, u->name, u->name);
      continue;
    }
    if (bound < sig->ndims) continue;  // a generic function nothing binds: unchecked
    if (sig->caller && !(p->entry && !strcmp(p->entry, fn->name))) {  // a helper: it may need its calls' values
      sig->checked = check_entry_quietly(sema, fn, sig->values);
      sig->helper_only = !sig->checked;
      continue;
    }
    sig->checked = true;
    check_entry(sema, fn, sig->values);
  }
  return sema->ok && cx->nerrors == before;
}

bool sema_check(Ctx *cx, Program *p) {
  bool ok = sema_declare(cx, p);
  return sema_check_fns(cx, p, NULL) && ok;
}
