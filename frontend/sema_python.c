// frontend/sema_python.c: the Python objects forward passes hand around tensors.
//   - Devices: x.device, torch.device('cuda'), device= of the creation ops, x.to(device),
//     x.cuda(), x.cpu(). A tdsl program runs wherever it is compiled for, so a device is
//     accepted, checked for its form and ignored; it is its name, a string ('cpu').
//   - The other tensor options of the creation ops: requires_grad (False only: tdsl
//     computes forward passes), pin_memory, layout.
//   - torch.finfo(dtype) and torch.iinfo(dtype): named tuples of compile-time numbers
//     (torch.finfo(x.dtype).min as an attention mask's fill value).
//   - torch.tensor(data) of numbers (nested lists or tuples), torch.as_tensor and
//     torch.scalar_tensor: a constant tensor, built from full() and stack().
//   - isinstance(x, cls) of the classes forward passes test (torch.Tensor, int, tuple ...).
#include "frontend/sema_internal.h"

#include <float.h>
#include <inttypes.h>
#include <string.h>

// ============================================================================
// Devices and tensor options
// ============================================================================
// "cpu", "cuda", "cuda:1": a device string as torch.device parses it.
static bool device_string(const char *s) {
  size_t n = strncmp(s, "cuda", 4) == 0 ? 4 : strncmp(s, "cpu", 3) == 0 ? 3 : strncmp(s, "meta", 4) == 0 ? 4 : 0;
  if (!n) return false;
  if (!s[n]) return true;
  if (s[n] != ':' || !s[n + 1]) return false;
  for (const char *p = s + n + 1; *p; p++)
    if (*p < '0' || *p > '9') return false;
  return true;
}

// A Python string (a device's name, a layout's, a tensor type's).
static TType *str_value(Sema *sema, const char *name) {
  TType *t = ty_new(sema, TY_STR);
  t->module = name;
  return t;
}

bool is_tensor_option(const char *p) {
  return !strcmp(p, "device") || !strcmp(p, "requires_grad") || !strcmp(p, "pin_memory") || !strcmp(p, "layout") ||
         !strcmp(p, "memory_format");
}

// device=, requires_grad=, pin_memory=, layout=, non_blocking=, memory_format= of an op
// that takes them: checked, then ignored. false after an error.
bool tensor_option(Sema *sema, const Ast *e, const char *pname, Ast *a) {
  const TType *t = a->ty;
  const char *fname = e->bi ? e->bi->name : e->name;
  if (is_poison(t) || t->kind == TY_NONE) return !is_poison(t);
  if (!strcmp(pname, "device")) {
    if (t->kind == TY_STR && device_string(t->module)) return true;
    if (is_scalar(t) && t->dtype == DT_I64 && t->ival >= 0) return true;  // a CUDA device index
    if (t->kind == TY_STR)
      diag_error(sema->cx, a->loc, "Expected one of cpu, cuda, meta device type at start of device string: %s",
                 t->module);
    else
      diag_error(sema->cx, a->loc, "%s(): argument 'device' must be torch.device, not %s", fname, py_type_name(t));
    return false;
  }
  if (!strcmp(pname, "requires_grad") || !strcmp(pname, "pin_memory") || !strcmp(pname, "non_blocking")) {
    if (!is_scalar(t) || t->dtype != DT_BOOL) {
      diag_error(sema->cx, a->loc, "%s(): argument '%s' must be bool, not %s", fname, pname, py_type_name(t));
      return false;
    }
    if (!strcmp(pname, "requires_grad") && t->ival) {
      diag_error(sema->cx, a->loc, "requires_grad=True is not supported: tdsl computes forward passes, without "
                 "autograd");
      return false;
    }
    return true;
  }
  // layout=torch.strided and memory_format=torch.contiguous_format are the only ones tdsl has
  if (t->kind == TY_STR && (!strcmp(t->module, "torch.strided") || !strcmp(t->module, "torch.contiguous_format") ||
                            !strcmp(t->module, "torch.preserve_format")))
    return true;
  diag_error(sema->cx, a->loc, "%s(): %s=%s is not supported: tdsl's tensors are strided, in PyTorch's default "
             "layout", fname, pname, t->kind == TY_STR ? t->module : py_type_name(t));
  return false;
}

// torch.strided, torch.contiguous_format, torch.preserve_format: NULL for another name.
TType *torch_layout_attr(Sema *sema, const char *name) {
  static const char *const names[] = {"strided", "contiguous_format", "preserve_format"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(name, names[i])) return str_value(sema, arena_printf(&sema->cx->arena, "torch.%s", name));
  return NULL;
}

TType *tensor_device(Sema *sema) { return str_value(sema, "cpu"); }

// torch.device(type, index=None)
TType *ck_device(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *ta = e->bargs[0], *ia = barg(e, 1);
  e->bi = NULL;  // a Python value, no node
  if (ta->ty->kind != TY_STR || !device_string(ta->ty->module)) {
    if (ta->ty->kind == TY_STR)
      diag_error(sema->cx, ta->loc, "Expected one of cpu, cuda, meta device type at start of device string: %s",
                 ta->ty->module);
    else
      diag_error(sema->cx, ta->loc, "device(): argument 'type' must be str, not %s", py_type_name(ta->ty));
    return poison(sema);
  }
  int64_t index;
  if (!ia) return str_value(sema, ta->ty->module);
  if (!get_int(sema, e, ia, "index", &index)) return poison(sema);
  if (strchr(ta->ty->module, ':')) {
    diag_error(sema->cx, ia->loc, "type (string) must not include an index because index was passed explicitly: %s",
               ta->ty->module);
    return poison(sema);
  }
  return str_value(sema, arena_printf(&sema->cx->arena, "%s:%lld", ta->ty->module, (long long)index));
}

// x.cuda(device=None, non_blocking=False), x.cpu(): the tensor itself
TType *ck_on_device(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  set_operand1(sema, e, e->bargs[0]);
  return e->bargs[0]->ty;
}

// x.type(dtype=None, non_blocking=False): a cast to dtype; without one, the tensor type's
// name ('torch.FloatTensor'), a string.
TType *ck_type(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *dta = barg(e, 1);
  DType dt;
  if (!dta) {
    static const char *const names[DT_COUNT] = {
        [DT_BOOL] = "torch.BoolTensor", [DT_I32] = "torch.IntTensor",   [DT_I64] = "torch.LongTensor",
        [DT_F16] = "torch.HalfTensor",  [DT_BF16] = "torch.BFloat16Tensor", [DT_F32] = "torch.FloatTensor",
        [DT_F64] = "torch.DoubleTensor", [DT_U8] = "torch.ByteTensor", [DT_I8] = "torch.CharTensor",
        [DT_I16] = "torch.ShortTensor", [DT_C64] = "torch.ComplexFloatTensor",
        [DT_C128] = "torch.ComplexDoubleTensor"};
    e->bi = NULL;
    return str_value(sema, names[x->ty->dtype]);
  }
  if (!get_dtype(sema, e, dta, &dt)) return poison(sema);
  return cast_to(sema, e, dt);
}

// dtype.is_floating_point, dtype.is_signed, dtype.is_complex, dtype.itemsize: NULL for
// another name.
TType *dtype_attr(Sema *sema, DType dt, const char *name) {
  if (!strcmp(name, "is_floating_point")) return ty_bool(sema, dtype_is_float(dt));
  if (!strcmp(name, "is_signed")) return ty_bool(sema, dt != DT_BOOL && dt != DT_U8);
  if (!strcmp(name, "is_complex")) return ty_bool(sema, dtype_is_complex(dt));
  if (!strcmp(name, "itemsize")) return ty_int(sema, (int64_t)dtype_size(dt));
  return NULL;
}

// ============================================================================
// Star unpacking: f(*t), (*shape[:-1], H, D)
// ============================================================================
// A literal of compile-time value t (a number, a bool, a dtype, a string, None) at a's
// location: what an element of a tuple nothing else holds (an inlined call's) becomes.
static Ast *value_literal(Sema *sema, const Ast *a, TType *t) {
  Ast *n = ast_new(sema->cx, AST_NONE, a->loc);
  n->ty = t;
  return n;
}

bool unpack_starred(Sema *sema, AstList *list) {
  AstList out = {0};
  for (int i = 0; i < list->len; i++) {
    Ast *a = list->data[i];
    if (a->kind != AST_STARRED) {
      vec_push(&sema->cx->arena, &out, a);
      continue;
    }
    Ast *v = a->lhs, **items;
    int n;
    if (a->op == 2) {  // **d: its items as keyword arguments
      if (!dict_unpack(sema, a, &out)) return false;
      continue;
    }
    if (v->ty->kind == TY_DICT) v = dict_keys(sema, v, v);  // *d: its keys
    if (is_tensor(v->ty)) {  // *x iterates over x's first dim
      if (v->ty->view.ndim == 0) {
        diag_error(sema->cx, v->loc, "iteration over a 0-d tensor");
        return false;
      }
      v = unbind_ast(sema, v, v);
      if (is_poison(v->ty)) return false;
    } else if (v->ty->kind != TY_TUPLE && v->ty->kind != TY_LIST) {
      diag_error(sema->cx, v->loc, "argument after * must be an iterable, not %s", py_type_name(v->ty));
      return false;
    }
    if (seq_items(sema, v, &items, &n)) {
      for (int k = 0; k < n; k++) vec_push(&sema->cx->arena, &out, items[k]);
      continue;
    }
    for (int k = 0; k < v->ty->nelem; k++) {  // no expressions behind it: only compile-time values
      TType *t = v->ty->elems[k];
      if (t->kind == TY_TENSOR || t->kind == TY_TUPLE || t->kind == TY_LIST) {
        diag_error(sema->cx, v->loc, "unpacking a function's result with * is supported for numbers only: bind "
                   "its tensors to names first");
        return false;
      }
      vec_push(&sema->cx->arena, &out, value_literal(sema, a, t));
    }
  }
  *list = out;
  return true;
}

// ============================================================================
// torch.finfo, torch.iinfo
// ============================================================================
// torch.finfo(type=None) of a floating dtype (the default dtype, f32, without one);
// torch.iinfo(type) of an integer dtype: torch's named fields, as compile-time numbers.
TType *ck_finfo(Sema *sema, Ast *e, const BuiltinDef *d) {
  bool fl = d->variant == 1;  // finfo (else iinfo)
  Ast *ta = barg(e, 0);
  DType dt = DT_F32;
  e->bi = NULL;
  if (ta && !get_dtype(sema, e, ta, &dt)) return poison(sema);
  if (fl != dtype_is_float(dt) || dt == DT_BOOL) {
    diag_error(sema->cx, ta ? ta->loc : call_loc(e), fl ? "torch.finfo() requires a floating point input type. Use "
               "torch.iinfo to handle 'torch.finfo'" : "torch.iinfo() requires an integer input type. Use torch.finfo "
               "to handle 'torch.iinfo'");
    return poison(sema);
  }
  static const char *const ffields[] = {"bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"};
  static const char *const ifields[] = {"bits", "max", "min"};
  Ast *items[7];
  int bits = (int)dtype_size(dt) * 8;
  if (fl) {
    double eps, max, tiny, res;
    switch (dt) {
    case DT_F16: eps = 0x1p-10, max = 65504.0, tiny = 0x1p-14, res = 1e-3; break;
    case DT_BF16: eps = 0x1p-7, max = 0x1.fep127, tiny = FLT_MIN, res = 1e-2; break;
    case DT_F64: eps = DBL_EPSILON, max = DBL_MAX, tiny = DBL_MIN, res = 1e-15; break;
    default: eps = FLT_EPSILON, max = FLT_MAX, tiny = FLT_MIN, res = 1e-6; break;
    }
    double v[7] = {bits, eps, max, -max, tiny, tiny, res};
    for (int i = 0; i < 7; i++) items[i] = i == 0 ? part_int(sema, e, bits) : part_float(sema, e, v[i]);
  } else {
    bool u = dt == DT_U8;
    int64_t max = u ? 255 : bits == 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
    int64_t min = u ? 0 : -max - 1;
    items[0] = part_int(sema, e, bits);
    items[1] = part_int(sema, e, max);
    items[2] = part_int(sema, e, min);
  }
  TType *t = tuple_result(sema, e, items, fl ? 7 : 3);
  t->fields = fl ? ffields : ifields;
  return t;
}

// ============================================================================
// torch.tensor, torch.as_tensor, torch.scalar_tensor
// ============================================================================
// A literal being read: its values so far (a->n), row-major.
typedef struct Literal {
  CreateArgs *a;
  DType *dtype;
  double *f;
  int64_t *i;
  int64_t cap;
} Literal;

// Data's shape as PyTorch reads it: the lengths along its first elements.
static void literal_shape(const TType *t, CreateArgs *a) {
  a->ndim = 0;
  while ((t->kind == TY_LIST || t->kind == TY_TUPLE) && a->ndim < TD_MAX_DIMS) {
    a->shape[a->ndim++] = t->nelem;
    if (t->nelem == 0) break;
    t = t->elems[0];
  }
}

// The numbers of data t (a number, or nested sequences of numbers of the literal's shape)
// at depth appended to l; false after an error.
static bool literal_values(Sema *sema, const TType *t, Loc loc, int depth, Literal *l) {
  if (is_scalar(t)) {
    if (l->a->n == l->cap) {
      l->cap = l->cap ? 2 * l->cap : 16;
      DType *dt = arena_alloc(&sema->cx->arena, sizeof(DType) * (size_t)l->cap);
      double *f = arena_alloc(&sema->cx->arena, sizeof(double) * (size_t)l->cap);
      int64_t *i = arena_alloc(&sema->cx->arena, sizeof(int64_t) * (size_t)l->cap);
      for (int64_t k = 0; k < l->a->n; k++) dt[k] = l->dtype[k], f[k] = l->f[k], i[k] = l->i[k];
      l->dtype = dt, l->f = f, l->i = i;
    }
    l->dtype[l->a->n] = t->dtype;  // bool, i64 or f64
    l->f[l->a->n] = t->fval;
    l->i[l->a->n++] = t->ival;
    return true;
  }
  if (t->kind != TY_LIST && t->kind != TY_TUPLE) {
    diag_error(sema->cx, loc, "Could not infer dtype of %s", py_type_name(t));
    return false;
  }
  if (depth >= TD_MAX_DIMS) {
    diag_error(sema->cx, loc, "too many dimensions: tdsl's tensors have at most %d", TD_MAX_DIMS);
    return false;
  }
  if (t->nelem > BUILD_MAX_LIST) {
    diag_error(sema->cx, loc, "a tensor literal of more than %d values per dim is not supported", BUILD_MAX_LIST);
    return false;
  }
  for (int i = 0; i < t->nelem; i++) {
    const TType *c = t->elems[i];
    bool seq = c->kind == TY_LIST || c->kind == TY_TUPLE, seq0 = t->elems[0]->kind == TY_LIST ||
                                                                 t->elems[0]->kind == TY_TUPLE;
    if (seq != seq0 || (seq && c->nelem != t->elems[0]->nelem)) {
      diag_error(sema->cx, loc, "expected sequence of length %d at dim %d (got %d)", seq0 ? t->elems[0]->nelem : 0,
                 depth + 1, seq ? c->nelem : 0);
      return false;
    }
    if (seq && depth + 1 < l->a->ndim && c->nelem != l->a->shape[depth + 1]) {  // a cousin of another length
      diag_error(sema->cx, loc, "expected sequence of length %" PRId64 " at dim %d (got %d)", l->a->shape[depth + 1],
                 depth + 1, c->nelem);
      return false;
    }
    if (!literal_values(sema, c, loc, depth + 1, l)) return false;
  }
  return true;
}

// The constant tensor of data (a number, or nested sequences of numbers of one shape) at
// e's place, of dtype dt (DT_COUNT: its own); NULL after an error.
static Ast *tensor_of(Sema *sema, Ast *e, const TType *t, Loc loc, DType dt) {
  CreateArgs a = {.cast = dt};
  literal_shape(t, &a);
  Literal l = {&a, NULL, NULL, NULL, 0};
  if (!literal_values(sema, t, loc, 0, &l)) return NULL;
  a.dtype = l.dtype, a.f = l.f, a.i = l.i;
  return built_ast(sema, e, build_literal, KEEP(sema, a), NULL, 0);
}

static const BuiltinDef def_same = {{"as_tensor", BK_VIEW, OP_COPY, "", NULL}, NULL, 0, OP_COUNT, 0, {DTR_ANY, NULL}};

// tensor(data, *, dtype=None, ...), as_tensor(data, dtype=None, ...), scalar_tensor(s, *, dtype=None, ...)
TType *ck_tensor(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *da = e->bargs[0], *dta = barg(e, 1);
  DType dt;
  if (dta && !get_dtype(sema, e, dta, &dt)) return poison(sema);
  Ast *t;
  DType cast = dta ? dt : DT_COUNT;
  if (is_tensor(da->ty)) {  // a copy (PyTorch warns); as_tensor: the tensor itself
    if (d->variant == LITERAL_AS_TENSOR && (!dta || dt == da->ty->dtype)) {
      e->bi = &def_same.b;
      set_operand1(sema, e, da);
      return da->ty;
    }
    CreateArgs a = {.copy = true, .cast = cast};
    t = built_ast(sema, e, build_literal, KEEP(sema, a), &da, 1);
  } else if (d->variant == LITERAL_SCALAR) {
    if (!is_scalar(da->ty)) {
      diag_error(sema->cx, da->loc, "scalar_tensor(): argument 's' must be Number, not %s", py_type_name(da->ty));
      return poison(sema);
    }
    t = tensor_of(sema, e, ty_float(sema, da->ty->dtype == DT_F64 ? da->ty->fval : (double)da->ty->ival), da->loc,
                  cast);  // always f32
  } else {
    t = tensor_of(sema, e, da->ty, da->loc, cast);
  }
  if (!t || is_poison(t->ty)) return poison(sema);
  return become(sema, e, t);
}

// ============================================================================
// isinstance
// ============================================================================
// Whether a value of type t is an instance of the class written c (torch.Tensor,
// nn.Module, int, float, bool, str, tuple, list, dict, set, type(None), or a tuple of
// them, as Python's isinstance takes them): 1, 0, or -1 after an error at c.
static int instance_of(Sema *sema, const TType *t, const Ast *c) {
  if (c->kind == AST_TUPLE) {
    for (int i = 0; i < c->list.len; i++) {
      int r = instance_of(sema, t, c->list.data[i]);
      if (r) return r;
    }
    return 0;
  }
  const char *n = c->kind == AST_NAME ? c->name : c->kind == AST_ATTR && c->lhs->kind == AST_NAME ? c->name : NULL;
  const char *m = c->kind == AST_ATTR ? c->lhs->name : NULL;
  if (n && m && (!strcmp(m, "torch") || !strcmp(m, "nn"))) {
    if (!strcmp(n, "Tensor")) return t->kind == TY_TENSOR && !t->wrapped;
    if (!strcmp(n, "Module")) return is_nn_module(sema, t);
    const char *base = is_instance(t) ? nn_container_base(sema, t->ctor) : NULL;  // class Stack(nn.Sequential)
    if (base && !strcmp(base, n)) return 1;
    if (is_container(t)) return !strcmp(t->container, n);
    if (strcmp(m, "torch") && is_nn_class(n))  // nn.Linear: a module object of that class
      return t->kind == TY_MODULE && t->ctor && !strncmp(t->module, "torch.nn.", 9) && !strcmp(t->module + 9, n);
    if (!strcmp(n, "dtype")) return t->kind == TY_DTYPE;
    if (!strcmp(n, "Size")) return t->kind == TY_TUPLE;  // x.shape
  } else if (n && !m && !find_local(sema, n) && !find_const(sema, n)) {
    bool num = t->kind == TY_SCALAR || (t->kind == TY_TENSOR && t->wrapped);  // a run-time scalar parameter too
    if (!strcmp(n, "int")) return num && t->dtype != DT_F64;  // bool is an int, as in Python
    if (!strcmp(n, "float")) return num && t->dtype == DT_F64;
    if (!strcmp(n, "bool")) return num && t->dtype == DT_BOOL;
    if (!strcmp(n, "str")) return t->kind == TY_STR;
    if (!strcmp(n, "tuple")) return t->kind == TY_TUPLE;
    if (!strcmp(n, "list")) return t->kind == TY_LIST && !t->container;
    bool set = t->kind == TY_DICT && t->module && !strcmp(t->module, "set");
    if (!strcmp(n, "dict")) return t->kind == TY_DICT && !set && !t->container;
    if (!strcmp(n, "set")) return set;
  } else if (c->kind == AST_CALL && !c->lhs && !strcmp(c->name, "type") && c->list.len == 1 &&
             c->list.data[0]->kind == AST_NONE) {
    return t->kind == TY_NONE;
  }
  diag_error(sema->cx, c->loc, "isinstance() here takes torch.Tensor, nn.Module, int, float, bool, str, tuple, list, "
             "dict, set, type(None) or a tuple of them");
  return -1;
}

TType *py_isinstance(Sema *sema, Ast *e) {
  if (e->list.len != 2 || e->list.data[0]->kind == AST_KWARG || e->list.data[1]->kind == AST_KWARG) {
    diag_error(sema->cx, call_loc(e), "isinstance expected 2 arguments, got %d", e->list.len);
    return poison(sema);
  }
  TType *t = check_expr(sema, e->list.data[0]);
  if (is_poison(t)) return t;
  int r = instance_of(sema, t, e->list.data[1]);
  return r < 0 ? poison(sema) : ty_bool(sema, r);
}

// ============================================================================
// map and filter
// ============================================================================
// map(f, xs, ...) as the generator (f(v0, v1, ...) for v0, v1, ... in zip(xs, ...)), filter(f, xs)
// as (v for v in xs if f(v)) (filter(None, xs): if v), which tdsl unrolls: Python's lazy
// iterator read as its uses read it (q, k, v = map(lambda t: rearrange(t, ...), qkv); list(),
// tuple(), a for loop). e becomes that AST_COMP, its variables hidden names ("(map 3) 0");
// false after Python's message for the wrong arguments.
bool py_map_form(Sema *sema, Ast *e) {
  Ctx *cx = sema->cx;
  bool map = !strcmp(e->name, "map");
  Loc at = call_loc(e);
  for (int i = 0; i < e->list.len; i++)
    if (e->list.data[i]->kind == AST_KWARG) {
      diag_error(cx, e->list.data[i]->loc, "TypeError: %s() takes no keyword arguments", e->name);
      return false;
    }
  int n = e->list.len;
  if (map ? n < 2 : n != 2) {
    if (map) diag_error(cx, at, "TypeError: map() must have at least two arguments.");
    else diag_error(cx, at, "TypeError: filter expected 2 arguments, got %d", n);
    return false;
  }
  int id = ++sema->lambdas;
  Ast *f = e->list.data[0], *targets = ast_list(cx, e->loc), *vals = ast_list(cx, e->loc);
  for (int i = 1; i < n; i++) {
    const char *v = arena_printf(&cx->arena, "(%s %d) %d", e->name, id, i - 1);
    ast_append(cx, targets, ast_name(cx, v, e->list.data[i]->loc));
    ast_append(cx, vals, ast_name(cx, v, e->list.data[i]->loc));
  }
  Ast *iter = e->list.data[1];
  if (n > 2) {
    Ast *rest = ast_list(cx, e->loc);
    for (int i = 1; i < n; i++) ast_append(cx, rest, e->list.data[i]);
    iter = ast_call(cx, NULL, "zip", rest, e->oploc, e->loc);
  }
  Ast *clauses = ast_list_of(cx, ast_for(cx, targets, iter, NULL, e->loc), e->loc), *elem;
  if (map) {
    elem = ast_call_of(cx, ast_clone(cx, f), vals, f->loc);
  } else {
    elem = vals->list.data[0];
    Ast *test = f->kind == AST_NONE ? ast_clone(cx, elem)
                                    : ast_call_of(cx, ast_clone(cx, f), ast_list_of(cx, ast_clone(cx, elem), f->loc), f->loc);
    ast_append(cx, clauses, ast_if(cx, test, NULL, NULL, f->loc));
  }
  Ast *comp = ast_comp(cx, true, elem, clauses, e->loc);
  *e = *comp;
  return true;
}

// ============================================================================
// with statements
// ============================================================================
// Whether autocast call c (torch.autocast(device_type, dtype, enabled), torch.cuda.amp.autocast(enabled,
// dtype)) is given enabled=False, a compile-time value; its position: enabled_at.
static bool autocast_off(Sema *sema, Ast *c, int enabled_at) {
  const Ast *v = NULL;
  for (int i = 0, k = 0; i < c->list.len; i++) {
    const Ast *a = c->list.data[i];
    if (a->kind == AST_KWARG ? !strcmp(a->name, "enabled") : k++ == enabled_at) v = a->kind == AST_KWARG ? a->rhs : a;
  }
  if (!v) return false;
  TType *t = check_expr(sema, (Ast *)v);
  return is_scalar(t) && t->dtype == DT_BOOL && !t->ival;
}

// What `with c as t` binds t to (e: the hidden call "(with)" of op 2 holding the manager c, named
// name): its __enter__'s value, nullcontext(enter_result)'s enter_result, None for the others
// (torch.no_grad(), autocast ...); sdp_kernel's is refused.
static TType *enter_value(Sema *sema, Ast *e, Ast *c, const char *name) {
  if (strstr(name, "sdp")) {
    diag_error(sema->cx, c->loc, "'with %s() as NAME' is not supported: bind nothing (with %s() { ... })", name, name);
    return poison(sema);
  }
  Ast *v = NULL;
  for (int i = 0; strstr(name, "nullcontext") && i < c->list.len; i++) {
    Ast *a = c->list.data[i];
    if (a->kind == AST_KWARG && strcmp(a->name, "enter_result")) {
      diag_error(sema->cx, a->oploc, "nullcontext.__init__() got an unexpected keyword argument '%s'", a->name);
      return poison(sema);
    }
    if (i > 0) {
      diag_error(sema->cx, a->loc, "nullcontext.__init__() takes from 1 to 2 positional arguments but %d were given",
                 c->list.len + 1);
      return poison(sema);
    }
    v = a->kind == AST_KWARG ? a->rhs : a;
  }
  if (!v) return ty_new(sema, TY_NONE);
  TType *t = check_expr(sema, v);
  if (is_poison(t)) return t;
  set_operand1(sema, e, v);
  return t;
}

// The hidden call "(with)" of a with statement's context managers (grammar/parser.y): those
// that change nothing a forward pass computes (torch.no_grad(), torch.inference_mode(),
// torch.enable_grad(), torch.set_grad_enabled(b), torch.backends.cuda.sdp_kernel(...), an
// autocast given enabled=False, contextlib.nullcontext()), the body run as written: a
// compile-time True. An autocast that runs changes the ops' dtypes: refused, located. Op 2 (one
// manager, `with m as t`): the value t is bound to (enter_value).
TType *py_with(Sema *sema, Ast *e) {
  static const char *const inert[] = {"torch.no_grad", "torch.inference_mode", "torch.enable_grad",
                                      "torch.set_grad_enabled", "torch.backends.cuda.sdp_kernel",
                                      "torch.nn.attention.sdpa_kernel", "sdpa_kernel", "contextlib.nullcontext",
                                      "nullcontext", "torch.autograd.no_grad", NULL};
  static const char *const autocast[] = {"torch.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
                                         "torch.amp.autocast", "autocast", NULL};
  for (int i = 0; i < e->list.len; i++) {
    Ast *c = e->list.data[i];
    char name[128];
    bool known = c->kind == AST_CALL && ast_dotted_name(c, name, sizeof name), ok = false;
    for (int k = 0; known && inert[k]; k++) ok |= !strcmp(name, inert[k]);
    for (int k = 0; known && !ok && autocast[k]; k++) {
      if (strcmp(name, autocast[k])) continue;
      if (!autocast_off(sema, c, strstr(name, "amp.") ? 0 : 2)) {
        diag_error(sema->cx, c->loc, "%s() changes the dtypes of the ops inside it, which tdsl computes as written: "
                   "cast them yourself (x.half(), x.to(torch.bfloat16)), or give enabled=False", name);
        return poison(sema);
      }
      ok = true;
    }
    if (!ok) {
      diag_error(sema->cx, c->loc, "this context manager is not supported: tdsl runs a with statement's body as "
                 "written under torch.no_grad(), torch.inference_mode(), torch.set_grad_enabled(), "
                 "torch.backends.cuda.sdp_kernel(), contextlib.nullcontext() and an autocast given enabled=False");
      return poison(sema);
    }
    if (e->op == 2) return enter_value(sema, e, c, name);
  }
  return ty_bool(sema, true);
}
