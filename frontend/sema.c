// frontend/sema.c: semantic analysis — the last stage allowed to report user errors.
// It evaluates `const` declarations, checks every function as an entry point (its
// parameters contiguous storages of their own), resolves names, inlines calls to user
// functions by checking a clone of the callee, binds builtin arguments by PyTorch 1.13's
// parameter names, promotes dtypes as torch.result_type does and infers every static
// shape and every view (shape, strides, offset over a storage) exactly as PyTorch.
//
// Invariants kept for lower.c:
//   - every expression gets e->ty; a mistake gives TY_POISON, and poison operands
//     silently give poison, so one mistake is reported once;
//   - a builtin expression gets e->bi; BK_VIEW: e->operands[0] is the source tensor and
//     e->ty->view is over its storage (over a fresh copy when e->needs_copy); BK_NODE:
//     e->operands are the node inputs in op order and e->attr is normalised;
//   - fully constant expressions fold to TY_SCALAR and carry no bi.
#include "frontend/frontend.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// ============================================================================
// State
// ============================================================================
typedef struct Sym Sym;
struct Sym {
  const char *name;
  TType *ty;
  Loc loc;
  Sym *next;  // older bindings
};

typedef struct Const {
  const char *name;
  TType *ty;
  Loc loc;
} Const;

typedef struct Sema {
  Ctx *cx;
  Program *p;
  VEC(Const) consts;
  Sym *scope;                // locals of the body being checked, newest first
  int nstorage;              // next fresh storage id
  VEC(Ast *) stack;          // user functions being checked or inlined (recursion)
  const Ast *entry;          // the function checked as an entry point
} Sema;

static TType *expr(Sema *S, Ast *e);

// ============================================================================
// Types
// ============================================================================
static TType *ty_new(Sema *S, TyKind k) {
  TType *t = arena_alloc(&S->cx->arena, sizeof *t);
  t->kind = k;
  return t;
}
static TType *poison(Sema *S) { return ty_new(S, TY_POISON); }
static TType *ty_int(Sema *S, int64_t v) {
  TType *t = ty_new(S, TY_SCALAR);
  t->dtype = DT_I64;
  t->ival = v;
  t->fval = (double)v;
  return t;
}
static TType *ty_float(Sema *S, double v) {
  TType *t = ty_new(S, TY_SCALAR);
  t->dtype = DT_F64;
  t->fval = v;
  t->ival = isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0;  // ints use ival, floats fval
  return t;
}
static TType *ty_bool(Sema *S, bool v) {
  TType *t = ty_int(S, v);
  t->dtype = DT_BOOL;
  return t;
}
static TType *ty_dtype(Sema *S, DType dt) {
  TType *t = ty_new(S, TY_DTYPE);
  t->dtype = dt;
  return t;
}
// A fresh, writable, contiguous storage (a materialized result).
static TType *ty_fresh(Sema *S, DType dt, int ndim, const int64_t *shape) {
  TType *t = ty_new(S, TY_TENSOR);
  t->dtype = dt;
  t->view = view_contiguous(ndim, shape);
  t->storage_numel = view_numel(t->view);
  t->storage = S->nstorage++;
  t->writable = true;
  return t;
}
// Another view over src's storage.
static TType *ty_view_of(Sema *S, const TType *src, View v) {
  TType *t = ty_new(S, TY_TENSOR);
  *t = *src;
  t->view = v;
  return t;
}

static bool is_tensor(const TType *t) { return t && t->kind == TY_TENSOR; }
static bool is_scalar(const TType *t) { return t && t->kind == TY_SCALAR; }
static bool is_poison(const TType *t) { return !t || t->kind == TY_POISON; }

// PyTorch's names of dtypes in its messages ("expected scalar type Float").
static const char *torch_name(DType dt) {
  static const char *n[DT_COUNT] = {"Bool", "Int", "Long", "Half", "BFloat16", "Float", "Double"};
  return n[dt];
}
static const char *torch_tensor_name(DType dt) {
  static const char *n[DT_COUNT] = {"BoolTensor", "IntTensor", "LongTensor", "HalfTensor",
                                    "BFloat16Tensor", "FloatTensor", "DoubleTensor"};
  return n[dt];
}
static const char *py_type_name(const TType *t) {
  switch (t->kind) {
  case TY_SCALAR: return t->dtype == DT_BOOL ? "bool" : t->dtype == DT_I64 ? "int" : "float";
  case TY_NONE: return "NoneType";
  case TY_DTYPE: return "torch.dtype";
  case TY_TENSOR: return "Tensor";
  case TY_LIST: return "list";
  case TY_TUPLE: return "tuple";
  default: return "?";
  }
}

// "[3, 4]" as PyTorch prints sizes.
static const char *shape_str(Sema *S, int n, const int64_t *shape) {
  char buf[TD_MAX_DIMS * 24 + 4];
  int k = 0;
  buf[k++] = '[';
  for (int i = 0; i < n && i < 64; i++)
    k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%" PRId64, i ? ", " : "", shape[i]);
  snprintf(buf + k, sizeof buf - (size_t)k, "]");
  return arena_strdup(&S->cx->arena, buf);
}
// "f32[3, 4]" as the language writes types.
static const char *type_str(Sema *S, const TType *t) {
  if (t->kind == TY_TENSOR)
    return arena_printf(&S->cx->arena, "%s%s", dtype_name(t->dtype), shape_str(S, t->view.ndim, t->view.shape));
  return py_type_name(t);
}

static bool same_shape(int na, const int64_t *a, int nb, const int64_t *b) {
  if (na != nb) return false;
  for (int i = 0; i < na; i++)
    if (a[i] != b[i]) return false;
  return true;
}

// At most TD_MAX_DIMS dims, and a numel that fits in int64.
static bool check_rank(Sema *S, Loc loc, int ndim) {
  if (ndim > TD_MAX_DIMS) {
    diag_error(S->cx, loc, "tensors have at most %d dimensions, but this one would have %d", TD_MAX_DIMS, ndim);
    return false;
  }
  return true;
}
// The runtime also needs the product of max(size, 1) (which bounds every contiguous
// stride) to fit, so a zero-size tensor with huge other dims is refused here too.
static bool check_numel(Sema *S, Loc loc, int ndim, const int64_t *shape) {
  int64_t n, span = 1;
  if (!view_numel_checked(ndim, shape, &n)) {
    diag_error(S->cx, loc, "tensor size %s is too large: its number of elements overflows int64",
               shape_str(S, ndim, shape));
    return false;
  }
  for (int i = 0; i < ndim; i++)
    if (shape[i] > 1 && __builtin_mul_overflow(span, shape[i], &span)) {
      diag_error(S->cx, loc, "tensor size %s is too large: its strides overflow int64", shape_str(S, ndim, shape));
      return false;
    }
  return true;
}

// ============================================================================
// Dtype promotion: torch.result_type
// ============================================================================
static int category(DType t) { return t == DT_BOOL ? 0 : dtype_is_float(t) ? 2 : 1; }

static DType promote2(DType a, DType b) {
  if (a == b) return a;
  if (a == DT_BOOL) return b;
  if (b == DT_BOOL) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) return DT_I64;  // i32 with i64
  // floats: f16 with bf16 gives f32; otherwise the wider one
  if ((a == DT_F16 && b == DT_BF16) || (a == DT_BF16 && b == DT_F16)) return DT_F32;
  if (a == DT_F64 || b == DT_F64) return DT_F64;
  return DT_F32;
}
static int promote_undef(int a, int b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return promote2((DType)a, (DType)b);
}
static int combine_categories(int higher, int lower) {
  if (higher >= 0 && dtype_is_float((DType)higher)) return higher;
  if (higher == DT_BOOL || (lower >= 0 && dtype_is_float((DType)lower))) return promote_undef(higher, lower);
  if (higher >= 0) return higher;
  return lower;
}
// Python scalars are "wrapped numbers": a float counts as the default dtype f32.
static DType scalar_dtype(const TType *t) { return t->dtype == DT_F64 ? DT_F32 : t->dtype; }

static DType result_type(TType **ts, int n) {
  int dimr = -1, zeror = -1, wrapr = -1;
  for (int i = 0; i < n; i++) {
    const TType *t = ts[i];
    if (!t) continue;
    if (t->kind == TY_SCALAR) wrapr = promote_undef(wrapr, scalar_dtype(t));
    else if (t->kind == TY_TENSOR && t->view.ndim > 0) dimr = promote_undef(dimr, t->dtype);
    else if (t->kind == TY_TENSOR) zeror = promote_undef(zeror, t->dtype);
  }
  int r = combine_categories(dimr, combine_categories(zeror, wrapr));
  return r < 0 ? DT_F32 : (DType)r;
}
// canCast(from, to): no float into an integer, nothing but bool into bool.
static bool can_cast(DType from, DType to) {
  if (dtype_is_float(from) && !dtype_is_float(to)) return false;
  if (from != DT_BOOL && to == DT_BOOL) return false;
  return true;
}

// ============================================================================
// Shapes: dims, broadcasting
// ============================================================================
// PyTorch's maybe_wrap_dim: a 0-d tensor accepts dims in [-1, 0].
static bool wrap_dim(Sema *S, Loc loc, int64_t d, int ndim, int *out) {
  int64_t n = ndim <= 0 ? 1 : ndim;
  if (d < -n || d > n - 1) {
    diag_error(S->cx, loc, "Dimension out of range (expected to be in range of [%" PRId64 ", %" PRId64
               "], but got %" PRId64 ")", -n, n - 1, d);
    return false;
  }
  *out = (int)(d < 0 ? d + n : d);
  return true;
}

// Broadcast b into the accumulated shape a (PyTorch's infer_size).
static bool broadcast(Sema *S, Loc loc, int *na, int64_t *a, int nb, const int64_t *b) {
  int n = *na > nb ? *na : nb;
  int64_t out[TD_MAX_DIMS];
  for (int i = n - 1; i >= 0; i--) {
    int ia = i - (n - *na), ib = i - (n - nb);
    int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      diag_error(S->cx, loc, "The size of tensor a (%" PRId64 ") must match the size of tensor b (%" PRId64
                 ") at non-singleton dimension %d", sa, sb, i);
      return false;
    }
    out[i] = sa == 1 ? sb : sa;
  }
  memcpy(a, out, sizeof(int64_t) * (size_t)n);
  *na = n;
  return true;
}

// ============================================================================
// Constant folding of Python scalars (Python's semantics: // and % floor)
// ============================================================================
static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static double py_fmod(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// Fold a binary operator on two scalars; NULL (after an error) on division by zero.
static TType *fold_binary(Sema *S, Loc loc, int op, const TType *a, const TType *b) {
  bool fl = a->dtype == DT_F64 || b->dtype == DT_F64;
  double x = a->fval, y = b->fval;
  int64_t i = a->ival, j = b->ival;
  switch (op) {
  case BIN_ADD: return fl ? ty_float(S, x + y) : ty_int(S, wrap_add(i, j));
  case BIN_SUB: return fl ? ty_float(S, x - y) : ty_int(S, wrap_sub(i, j));
  case BIN_MUL: return fl ? ty_float(S, x * y) : ty_int(S, wrap_mul(i, j));
  case BIN_DIV:
    if (y == 0) {
      diag_error(S->cx, loc, fl ? "float division by zero" : "division by zero");
      return NULL;
    }
    return ty_float(S, x / y);
  case BIN_FLOORDIV:
  case BIN_MOD:
    if (fl) {
      if (y == 0) {
        diag_error(S->cx, loc, op == BIN_MOD ? "float modulo" : "float floor division by zero");
        return NULL;
      }
      double m = py_fmod(x, y);
      return op == BIN_MOD ? ty_float(S, m) : ty_float(S, floor((x - m) / y + 0.5));
    }
    if (j == 0) {
      diag_error(S->cx, loc, "integer division or modulo by zero");
      return NULL;
    }
    if (j == -1) return op == BIN_MOD ? ty_int(S, 0) : ty_int(S, wrap_sub(0, i));
    {
      int64_t q = i / j, r = i % j;
      if (r != 0 && ((r < 0) != (j < 0))) q--, r += j;
      return op == BIN_MOD ? ty_int(S, r) : ty_int(S, q);
    }
  case BIN_POW:
    if (!fl && j >= 0) {
      int64_t r = 1, base = i;
      for (int64_t e = j; e > 0; e >>= 1) {
        if (e & 1) r = wrap_mul(r, base);
        base = wrap_mul(base, base);
      }
      return ty_int(S, r);
    }
    if (x == 0 && y < 0) {
      diag_error(S->cx, loc, "0.0 cannot be raised to a negative power");
      return NULL;
    }
    return ty_float(S, pow(x, y));
  case BIN_EQ: return ty_bool(S, fl ? x == y : i == j);
  case BIN_NE: return ty_bool(S, fl ? x != y : i != j);
  case BIN_LT: return ty_bool(S, fl ? x < y : i < j);
  case BIN_LE: return ty_bool(S, fl ? x <= y : i <= j);
  case BIN_GT: return ty_bool(S, fl ? x > y : i > j);
  case BIN_GE: return ty_bool(S, fl ? x >= y : i >= j);
  default: break;
  }
  diag_error(S->cx, loc, "unsupported operand types for %s: '%s' and '%s'", binop_text((BinOp)op),
             py_type_name(a), py_type_name(b));
  return NULL;
}

static TType *fold_unary(Sema *S, Loc loc, int op, const TType *a) {
  if (op == UN_NEG) return a->dtype == DT_F64 ? ty_float(S, -a->fval) : ty_int(S, wrap_sub(0, a->ival));
  if (a->dtype == DT_BOOL) return ty_bool(S, !a->ival);  // '~' is logical not on bools
  if (a->dtype == DT_I64) return ty_int(S, ~a->ival);
  diag_error(S->cx, loc, "bad operand type for unary ~: 'float'");
  return NULL;
}

// A double as an int64 without undefined behaviour (saturating; NaN gives 0).
static int64_t d2i(double x) {
  if (!(x == x)) return 0;
  if (x >= 9.2233720368547758e18) return INT64_MAX;
  if (x <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)x;
}

// Math functions of §6 applied to a Python scalar (sqrt(D) of an int const is a float).
static TType *fold_math(Sema *S, Op op, const TType *a) {
  double x = a->fval;
  switch (op) {
  case OP_ABS: return a->dtype == DT_F64 ? ty_float(S, fabs(x)) : ty_int(S, a->ival < 0 ? wrap_sub(0, a->ival) : a->ival);
  case OP_NEG: return fold_unary(S, (Loc){0}, UN_NEG, a);
  case OP_EXP: return ty_float(S, exp(x));
  case OP_LOG: return ty_float(S, log(x));
  case OP_LOG2: return ty_float(S, log2(x));
  case OP_EXP2: return ty_float(S, exp2(x));
  case OP_SQRT: return ty_float(S, sqrt(x));
  case OP_RSQRT: return ty_float(S, 1 / sqrt(x));
  case OP_SIN: return ty_float(S, sin(x));
  case OP_COS: return ty_float(S, cos(x));
  case OP_TAN: return ty_float(S, tan(x));
  case OP_TANH: return ty_float(S, tanh(x));
  case OP_SIGMOID: return ty_float(S, 1 / (1 + exp(-x)));
  case OP_RELU: return a->dtype == DT_F64 ? ty_float(S, x > 0 ? x : 0) : ty_int(S, a->ival > 0 ? a->ival : 0);
  case OP_GELU: return ty_float(S, 0.5 * x * (1 + erf(x / sqrt(2.0))));
  case OP_SILU: return ty_float(S, x / (1 + exp(-x)));
  case OP_ERF: return ty_float(S, erf(x));
  case OP_FLOOR: return a->dtype == DT_F64 ? ty_int(S, d2i(floor(x))) : ty_int(S, a->ival);
  case OP_CEIL: return a->dtype == DT_F64 ? ty_int(S, d2i(ceil(x))) : ty_int(S, a->ival);
  case OP_ROUND: return a->dtype == DT_F64 ? ty_int(S, d2i(nearbyint(x))) : ty_int(S, a->ival);
  case OP_SIGN: return a->dtype == DT_F64 ? ty_float(S, (x > 0) - (x < 0)) : ty_int(S, (a->ival > 0) - (a->ival < 0));
  case OP_RECIPROCAL: return ty_float(S, 1 / x);
  case OP_SQUARE: return a->dtype == DT_F64 ? ty_float(S, x * x) : ty_int(S, wrap_mul(a->ival, a->ival));
  case OP_LOGICAL_NOT: return ty_bool(S, x == 0);
  default: return NULL;
  }
}

// ============================================================================
// Builtins: the op table entry and argument binding in PyTorch 1.13's style
// ============================================================================
typedef struct Def Def;
typedef TType *(*CheckFn)(Sema *S, Ast *e, const Def *d);
enum { F_FN = 1, F_METH = 2, F_BOTH = 3 };
struct Def {
  Builtin b;       // first: e->bi points here
  CheckFn check;
  int forms;
  Op aux;          // the op a shared checker applies (unary/binary/reduction kind)
};

enum { MAX_PARAMS = 8, MAX_LIST = 64 };
typedef struct Param {
  char name[24];
  bool opt, vararg, kwonly;
} Param;

// "input, dim=None, keepdim=False, *, dtype=None" -> params
static int parse_sig(const char *sig, Param *ps) {
  int n = 0;
  bool kwonly = false;
  const char *s = sig;
  while (*s) {
    while (*s == ' ' || *s == ',') s++;
    if (!*s) break;
    const char *t = s;
    while (*t && *t != ',') t++;
    size_t len = (size_t)(t - s);
    if (len == 1 && *s == '*') {
      kwonly = true;
    } else {
      TD_ASSERT(n < MAX_PARAMS);
      Param *p = &ps[n++];
      memset(p, 0, sizeof *p);
      p->kwonly = kwonly;
      if (*s == '*') {
        p->vararg = p->opt = true;
        s++, len--;
        kwonly = true;
      }
      const char *eq = memchr(s, '=', len);
      size_t nl = eq ? (size_t)(eq - s) : len;
      if (eq) p->opt = true;
      TD_ASSERT(nl < sizeof p->name);
      memcpy(p->name, s, nl);
    }
    s = t;
  }
  return n;
}

static Loc call_loc(const Ast *e) { return e->oploc.end > e->oploc.begin ? e->oploc : e->loc; }

static Ast *synth_list(Sema *S, Ast **items, int n, Loc loc) {
  Ast *l = ast_new(S->cx, AST_LIST, loc);
  for (int i = 0; i < n; i++) vec_push(&S->cx->arena, &l->list, items[i]);
  if (n > 0) l->loc = loc_join(items[0]->loc, items[n - 1]->loc);
  TType *t = ty_new(S, TY_LIST);
  t->nelem = n;
  t->elems = arena_alloc(&S->cx->arena, sizeof(TType *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) t->elems[i] = items[i]->ty;
  l->ty = t;
  return l;
}

// Bind self (method form) and e->list to the parameters of d; fills e->bargs.
static bool bind_args(Sema *S, Ast *e, const Def *d, Ast *self) {
  Param ps[MAX_PARAMS];
  int np = parse_sig(d->b.sig, ps);
  const char *fname = d->b.name;
  Ast **out = arena_alloc(&S->cx->arena, sizeof(Ast *) * MAX_PARAMS);
  bool given[MAX_PARAMS] = {0};
  int self_at = -1;
  if (self) {
    for (int i = 0; i < np; i++)
      if (!strcmp(ps[i].name, "input")) self_at = i;
    if (self_at < 0) self_at = 0;
    out[self_at] = self;
    given[self_at] = true;
  }
  // positional arguments
  Ast *pos[MAX_LIST];
  int npos = 0, total_pos = self ? 1 : 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG) continue;
    total_pos++;
    if (npos < MAX_LIST) pos[npos++] = a;
  }
  int k = 0, maxpos = 0;
  for (int i = 0; i < np; i++)
    if (!ps[i].kwonly || ps[i].vararg) maxpos++;
  for (int i = 0; i < np && k < npos; i++) {
    if (given[i] || (ps[i].kwonly && !ps[i].vararg)) continue;
    if (ps[i].vararg) {
      if (npos - k == 1 && pos[k]->ty && pos[k]->ty->kind == TY_LIST) out[i] = pos[k];
      else out[i] = synth_list(S, pos + k, npos - k, pos[k]->loc);
      k = npos;
    } else {
      out[i] = pos[k++];
    }
    given[i] = true;
  }
  if (k < npos) {
    diag_error(S->cx, pos[k]->loc, "%s() takes %d positional argument%s but %d were given", fname, maxpos,
               maxpos == 1 ? "" : "s", total_pos);
    return false;
  }
  // keyword arguments
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind != AST_KWARG) continue;
    int j = 0;
    while (j < np && strcmp(ps[j].name, a->name)) j++;
    if (j == np) {
      diag_error(S->cx, a->loc, "%s() got an unexpected keyword argument '%s'", fname, a->name);
      return false;
    }
    if (given[j]) {
      diag_error(S->cx, a->loc, "%s() got multiple values for argument '%s'", fname, a->name);
      return false;
    }
    out[j] = a->rhs;
    given[j] = true;
  }
  // missing ones
  const char *miss[MAX_PARAMS];
  int nmiss = 0;
  for (int i = 0; i < np; i++)  // a size or dims list may not be left out: x.view() is an error
    if (!given[i] && (!ps[i].opt || ps[i].vararg)) miss[nmiss++] = ps[i].name;
  if (nmiss) {
    // PyTorch's argument parser, verbatim (its plural is "arguments" for exactly one)
    char buf[256];
    int len = 0;
    for (int i = 0; i < nmiss && len < (int)sizeof buf; i++)
      len += snprintf(buf + len, sizeof buf - (size_t)len, "%s\"%s\"", i == 0 ? "" : ", ", miss[i]);
    diag_error(S->cx, call_loc(e), "%s() missing %d required positional argument%s: %s", fname, nmiss,
               nmiss == 1 ? "s" : "", buf);
    return false;
  }
  e->bargs = out;
  e->nbargs = np;
  return true;
}

// The bound argument i, or NULL when absent or None.
static Ast *barg(const Ast *e, int i) {
  if (i >= e->nbargs) return NULL;
  Ast *a = e->bargs[i];
  if (!a || !a->ty || a->ty->kind == TY_NONE) return NULL;
  return a;
}

// PyTorch names an argument "'dim' (position 2)": 1-based, self not counted in the method form.
static const char *arg_name(Sema *S, const Ast *e, const char *pname) {
  if (!e->bi || !e->bi->sig) return arena_printf(&S->cx->arena, "'%s'", pname);
  Param ps[MAX_PARAMS];
  int np = parse_sig(e->bi->sig, ps), self = e->kind == AST_CALL && e->lhs ? 1 : 0;
  for (int i = 0; i < np; i++)
    if (!strcmp(ps[i].name, pname) && !ps[i].kwonly && i + 1 - self > 0)
      return arena_printf(&S->cx->arena, "'%s' (position %d)", pname, i + 1 - self);
  return arena_printf(&S->cx->arena, "'%s'", pname);
}

static bool get_int(Sema *S, const Ast *e, Ast *a, const char *pname, int64_t *out) {
  if (is_scalar(a->ty) && a->ty->dtype != DT_F64) {
    *out = a->ty->ival;
    return true;
  }
  diag_error(S->cx, a->loc, "%s(): argument %s must be int, not %s", e->bi ? e->bi->name : e->name, arg_name(S, e, pname),
             py_type_name(a->ty));
  return false;
}
static bool get_bool(Sema *S, const Ast *e, Ast *a, const char *pname, bool *out) {
  if (is_scalar(a->ty) && a->ty->dtype == DT_BOOL) {
    *out = a->ty->ival != 0;
    return true;
  }
  diag_error(S->cx, a->loc, "%s(): argument %s must be bool, not %s", e->bi ? e->bi->name : e->name, arg_name(S, e, pname),
             py_type_name(a->ty));
  return false;
}
// An int, or a list of ints (sizes, dims); at most MAX_LIST entries.
static bool get_ints(Sema *S, const Ast *e, Ast *a, const char *pname, int64_t *out, int *n) {
  const TType *t = a->ty;
  if (is_scalar(t) && t->dtype != DT_F64) {
    out[0] = t->ival;
    *n = 1;
    return true;
  }
  if (t->kind == TY_LIST && t->nelem <= MAX_LIST) {
    for (int i = 0; i < t->nelem; i++) {
      const TType *el = t->elems[i];
      if (!is_scalar(el) || el->dtype == DT_F64) {
        const Ast *ea = a->kind == AST_LIST && i < a->list.len ? a->list.data[i] : a;
        if (is_poison(el)) return false;
        diag_error(S->cx, ea->loc, "%s(): argument %s must be tuple of ints, but found element of type %s at pos %d",
                   e->bi ? e->bi->name : e->name, arg_name(S, e, pname), py_type_name(el), i);
        return false;
      }
      out[i] = el->ival;
    }
    *n = t->nelem;
    return true;
  }
  if (t->kind == TY_LIST) {
    diag_error(S->cx, a->loc, "too many dimensions in '%s': at most %d", pname, MAX_LIST);
    return false;
  }
  diag_error(S->cx, a->loc, "%s(): argument %s must be tuple of ints, not %s", e->bi ? e->bi->name : e->name,
             arg_name(S, e, pname), py_type_name(t));
  return false;
}
static TType *get_tensor(Sema *S, const Ast *e, Ast *a, const char *pname) {
  if (is_tensor(a->ty)) return a->ty;
  diag_error(S->cx, a->loc, "%s(): argument %s must be Tensor, not %s", e->bi ? e->bi->name : e->name, arg_name(S, e, pname),
             py_type_name(a->ty));
  return NULL;
}
static bool get_dtype(Sema *S, const Ast *e, Ast *a, DType *out) {
  if (a->ty->kind == TY_DTYPE) {
    *out = a->ty->dtype;
    return true;
  }
  diag_error(S->cx, a->loc, "%s(): argument 'dtype' must be torch.dtype, not %s", e->bi ? e->bi->name : e->name,
             py_type_name(a->ty));
  return false;
}

static void set_operands(Sema *S, Ast *e, Ast **ops, int n) {
  e->operands = arena_alloc(&S->cx->arena, sizeof(Ast *) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) e->operands[i] = ops[i];
  e->noperands = n;
}
static void set_operand1(Sema *S, Ast *e, Ast *a) { set_operands(S, e, &a, 1); }

// ============================================================================
// View ops (§5): a new View over the same storage, computed by view/view.h
// ============================================================================
static TType *view_result(Sema *S, Ast *e, const TType *x, View v) {
  set_operand1(S, e, e->bargs[0]);
  return ty_view_of(S, x, v);
}

// Resolve a requested shape with one -1 against numel, with PyTorch's messages. As in
// PyTorch's infer_size, the product of the given sizes wraps (so [2^62, 4, 0] matches
// 0 elements); a shape that passes but whose numel overflows fails afterwards, as
// PyTorch's numel check does (uint64, in order, so a 0 after an overflow still fails).
static bool infer_shape(Sema *S, Loc loc, int64_t numel, int n, const int64_t *req, int64_t *shape) {
  if (!check_rank(S, loc, n)) return false;
  int infer = -1;
  uint64_t prod = 1;
  for (int i = 0; i < n; i++) {
    if (req[i] == -1) {
      if (infer >= 0) {
        diag_error(S->cx, loc, "only one dimension can be inferred");
        return false;
      }
      infer = i;
    } else if (req[i] < 0) {
      diag_error(S->cx, loc, "invalid shape dimension %" PRId64, req[i]);
      return false;
    } else {
      prod *= (uint64_t)req[i];
    }
    shape[i] = req[i];
  }
  int64_t newsize = (int64_t)prod;
  if (!(numel == newsize || (infer >= 0 && newsize > 0 && numel % newsize == 0))) {
    diag_error(S->cx, loc, "shape '%s' is invalid for input of size %" PRId64, shape_str(S, n, req), numel);
    return false;
  }
  if (infer >= 0) {
    if (newsize == 0) {
      diag_error(S->cx, loc, "cannot reshape tensor of 0 elements into shape %s because the unspecified dimension "
                 "size -1 can be any value and is ambiguous", shape_str(S, n, req));
      return false;
    }
    shape[infer] = numel / newsize;
  }
  uint64_t total = 1;
  bool overflow = false;
  for (int i = 0; i < n; i++) overflow |= __builtin_mul_overflow(total, (uint64_t)shape[i], &total);
  if (overflow || total > (uint64_t)INT64_MAX) {
    diag_error(S->cx, loc, "numel: integer multiplication overflow");
    return false;
  }
  return check_numel(S, loc, n, shape);
}

static TType *ck_view(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t req[MAX_LIST], shape[MAX_LIST];
  int n;
  if (!get_ints(S, e, e->bargs[1], "size", req, &n)) return poison(S);
  if (!infer_shape(S, call_loc(e), view_numel(x->view), n, req, shape)) return poison(S);
  View v;
  if (!view_reshape(x->view, n, shape, &v)) {
    diag_error(S->cx, call_loc(e), "view size is not compatible with input tensor's size and stride (at least one "
               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
    return poison(S);
  }
  return view_result(S, e, x, v);
}

// reshape/flatten: a view when possible, else a copy then a contiguous view of it.
static TType *reshape_to(Sema *S, Ast *e, const TType *x, int n, const int64_t *shape) {
  View v;
  if (view_reshape(x->view, n, shape, &v)) return view_result(S, e, x, v);
  e->needs_copy = true;
  set_operand1(S, e, e->bargs[0]);
  return ty_fresh(S, x->dtype, n, shape);
}

static TType *ck_reshape(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t req[MAX_LIST], shape[MAX_LIST];
  int n;
  if (!get_ints(S, e, e->bargs[1], "shape", req, &n)) return poison(S);
  if (!infer_shape(S, call_loc(e), view_numel(x->view), n, req, shape)) return poison(S);
  return reshape_to(S, e, x, n, shape);
}

static TType *ck_flatten(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t s0 = 0, s1 = -1;
  int a, b;
  if (barg(e, 1) && !get_int(S, e, e->bargs[1], "start_dim", &s0)) return poison(S);
  if (barg(e, 2) && !get_int(S, e, e->bargs[2], "end_dim", &s1)) return poison(S);
  Loc l1 = barg(e, 1) ? e->bargs[1]->loc : call_loc(e), l2 = barg(e, 2) ? e->bargs[2]->loc : call_loc(e);
  if (!wrap_dim(S, l1, s0, x->view.ndim, &a) || !wrap_dim(S, l2, s1, x->view.ndim, &b)) return poison(S);
  if (a > b) {
    diag_error(S->cx, call_loc(e), "flatten() has invalid args: start_dim cannot come after end_dim");
    return poison(S);
  }
  if (x->view.ndim == 0) {
    int64_t one = 1;
    return reshape_to(S, e, x, 1, &one);
  }
  if (a == b) return view_result(S, e, x, x->view);
  int64_t shape[TD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < a; i++) shape[n++] = x->view.shape[i];
  int64_t p = 1;
  for (int i = a; i <= b; i++) p *= x->view.shape[i];  // bounded by numel
  shape[n++] = p;
  for (int i = b + 1; i < x->view.ndim; i++) shape[n++] = x->view.shape[i];
  return reshape_to(S, e, x, n, shape);
}

static TType *ck_transpose(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t d0, d1;
  int a, b;
  if (!get_int(S, e, e->bargs[1], "dim0", &d0) || !get_int(S, e, e->bargs[2], "dim1", &d1)) return poison(S);
  if (!wrap_dim(S, e->bargs[1]->loc, d0, x->view.ndim, &a) || !wrap_dim(S, e->bargs[2]->loc, d1, x->view.ndim, &b))
    return poison(S);
  if (x->view.ndim == 0) return view_result(S, e, x, x->view);
  return view_result(S, e, x, view_transpose(x->view, a, b));
}

static TType *ck_t(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  if (x->view.ndim > 2) {
    diag_error(S->cx, call_loc(e), "t() expects a tensor with <= 2 dimensions, but self is %dD", x->view.ndim);
    return poison(S);
  }
  if (x->view.ndim < 2) return view_result(S, e, x, x->view);
  return view_result(S, e, x, view_transpose(x->view, 0, 1));
}

// x.T: all dims reversed (PyTorch 1.13 only warns when ndim != 2).
static TType *ck_T(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int perm[TD_MAX_DIMS];
  for (int i = 0; i < x->view.ndim; i++) perm[i] = x->view.ndim - 1 - i;
  return view_result(S, e, x, view_permute(x->view, perm));
}

static TType *ck_permute(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t req[MAX_LIST];
  int n, perm[TD_MAX_DIMS];
  if (!get_ints(S, e, e->bargs[1], "dims", req, &n)) return poison(S);
  if (n != x->view.ndim) {
    diag_error(S->cx, e->bargs[1]->loc, "permute(sparse_coo): number of dimensions in the tensor input does not match "
               "the length of the desired ordering of dimensions i.e. input.dim() = %d is not equal to len(dims) = %d",
               x->view.ndim, n);
    return poison(S);
  }
  bool seen[TD_MAX_DIMS] = {0};
  for (int i = 0; i < n; i++) {
    if (!wrap_dim(S, e->bargs[1]->loc, req[i], n, &perm[i])) return poison(S);
    if (seen[perm[i]]) {
      diag_error(S->cx, e->bargs[1]->loc, "permute(): duplicate dims are not allowed.");
      return poison(S);
    }
    seen[perm[i]] = true;
  }
  return view_result(S, e, x, view_permute(x->view, perm));
}

static TType *ck_unsqueeze(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t dim;
  int a;
  if (!get_int(S, e, e->bargs[1], "dim", &dim)) return poison(S);
  if (!wrap_dim(S, e->bargs[1]->loc, dim, x->view.ndim + 1, &a)) return poison(S);
  if (!check_rank(S, call_loc(e), x->view.ndim + 1)) return poison(S);
  return view_result(S, e, x, view_unsqueeze(x->view, a));
}

static TType *ck_squeeze(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  if (!barg(e, 1)) return view_result(S, e, x, view_squeeze_all(x->view));
  int64_t dim;
  int a;
  if (!get_int(S, e, e->bargs[1], "dim", &dim)) return poison(S);
  if (!wrap_dim(S, e->bargs[1]->loc, dim, x->view.ndim, &a)) return poison(S);
  if (x->view.ndim == 0) return view_result(S, e, x, x->view);
  return view_result(S, e, x, view_squeeze(x->view, a));
}

// PyTorch's expand, with its messages; shared by expand, expand_as and stores.
static bool expand_to(Sema *S, Loc loc, const TType *x, int n, const int64_t *req, View *out) {
  int nd = x->view.ndim;
  if (n < nd) {
    diag_error(S->cx, loc, "expand(torch.%s{%s}, size=%s): the number of sizes provided (%d) must be greater or "
               "equal to the number of dimensions in the tensor (%d)", torch_tensor_name(x->dtype),
               shape_str(S, nd, x->view.shape), shape_str(S, n, req), n, nd);
    return false;
  }
  if (!check_rank(S, loc, n)) return false;
  // PyTorch's inferExpandGeometry walks the dims from the right and stops at the first
  // leading -1 or mismatch; a negative size that survives the walk only fails its numel
  // check afterwards.
  bool negative = false;
  for (int i = n - 1; i >= 0; i--) {
    int xd = i - (n - nd);
    int64_t have = xd >= 0 ? x->view.shape[xd] : 1, want = req[i];
    if (want == -1) {
      if (xd < 0) {
        diag_error(S->cx, loc, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                   "dimension %d", i);
        return false;
      }
      want = have;
    }
    if (want != have && have != 1) {
      diag_error(S->cx, loc, "The expanded size of the tensor (%" PRId64 ") must match the existing size (%" PRId64
                 ") at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s", want, have, i,
                 shape_str(S, n, req), shape_str(S, nd, x->view.shape));
      return false;
    }
    negative |= want < 0;
  }
  int bad = 0;
  int64_t numel;
  if (negative || !view_expand(x->view, n, req, out, &bad) || !view_numel_checked(out->ndim, out->shape, &numel)) {
    diag_error(S->cx, loc, "numel: integer multiplication overflow");
    return false;
  }
  return check_numel(S, loc, out->ndim, out->shape);
}

static TType *ck_expand(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t req[MAX_LIST];
  int n;
  View v;
  if (!get_ints(S, e, e->bargs[1], "size", req, &n)) return poison(S);
  if (!expand_to(S, call_loc(e), x, n, req, &v)) return poison(S);
  return view_result(S, e, x, v);
}

static TType *ck_expand_as(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty, *o = get_tensor(S, e, e->bargs[1], "other");
  View v;
  if (!o) return poison(S);
  if (!expand_to(S, call_loc(e), x, o->view.ndim, o->view.shape, &v)) return poison(S);
  return view_result(S, e, x, v);
}

static TType *ck_select(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t dim, idx;
  int a;
  if (!get_int(S, e, e->bargs[1], "dim", &dim) || !get_int(S, e, e->bargs[2], "index", &idx)) return poison(S);
  if (x->view.ndim == 0) {
    diag_error(S->cx, call_loc(e), "select() cannot be applied to a 0-dim tensor.");
    return poison(S);
  }
  if (!wrap_dim(S, e->bargs[1]->loc, dim, x->view.ndim, &a)) return poison(S);
  int64_t size = x->view.shape[a];
  if (idx < -size || idx >= size) {
    diag_error(S->cx, e->bargs[2]->loc, "select(): index %" PRId64 " out of range for tensor of size %s at dimension %d",
               idx, shape_str(S, x->view.ndim, x->view.shape), a);
    return poison(S);
  }
  return view_result(S, e, x, view_select(x->view, a, idx < 0 ? idx + size : idx));
}

static TType *ck_narrow(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t dim, start, len;
  int a;
  if (!get_int(S, e, e->bargs[1], "dim", &dim) || !get_int(S, e, e->bargs[2], "start", &start) ||
      !get_int(S, e, e->bargs[3], "length", &len))
    return poison(S);
  if (x->view.ndim == 0) {
    diag_error(S->cx, call_loc(e), "narrow() cannot be applied to a 0-dim tensor.");
    return poison(S);
  }
  if (!wrap_dim(S, e->bargs[1]->loc, dim, x->view.ndim, &a)) return poison(S);
  int64_t size = x->view.shape[a];
  // PyTorch 1.13 wraps start like a dim index over `size` dims, except that start ==
  // size (an empty narrow at the end) is allowed
  int64_t st = start;
  if (start != size) {
    int64_t m = size <= 0 ? 1 : size;
    if (start < -m || start > m - 1) {
      diag_error(S->cx, e->bargs[2]->loc, "Dimension out of range (expected to be in range of [%" PRId64 ", %" PRId64
                 "], but got %" PRId64 ")", -m, m - 1, start);
      return poison(S);
    }
    if (st < 0) st += m;
  }
  if (len < 0 || st > size - len) {
    diag_error(S->cx, e->bargs[3]->loc, "start (%" PRId64 ") + length (%" PRId64 ") exceeds dimension size (%" PRId64
               ").", st, len, size);
    return poison(S);
  }
  return view_result(S, e, x, view_narrow(x->view, a, st, len));
}

static TType *ck_diagonal(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t off = 0, d1 = 0, d2 = 1;
  int a, b;
  if ((barg(e, 1) && !get_int(S, e, e->bargs[1], "offset", &off)) ||
      (barg(e, 2) && !get_int(S, e, e->bargs[2], "dim1", &d1)) ||
      (barg(e, 3) && !get_int(S, e, e->bargs[3], "dim2", &d2)))
    return poison(S);
  Loc l1 = barg(e, 2) ? e->bargs[2]->loc : call_loc(e), l2 = barg(e, 3) ? e->bargs[3]->loc : call_loc(e);
  if (!wrap_dim(S, l1, d1, x->view.ndim, &a) || !wrap_dim(S, l2, d2, x->view.ndim, &b)) return poison(S);
  if (a == b) {
    diag_error(S->cx, call_loc(e), "diagonal dimensions cannot be identical %" PRId64 ", %" PRId64, d1, d2);
    return poison(S);
  }
  return view_result(S, e, x, view_diagonal(x->view, off, a, b));
}

static TType *ck_as_strided(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int64_t size[MAX_LIST], stride[MAX_LIST], off = x->view.offset;
  int n, ns;
  if (!get_ints(S, e, e->bargs[1], "size", size, &n) || !get_ints(S, e, e->bargs[2], "stride", stride, &ns))
    return poison(S);
  if (barg(e, 3) && !get_int(S, e, e->bargs[3], "storage_offset", &off)) return poison(S);
  if (n != ns) {
    diag_error(S->cx, e->bargs[2]->loc, "mismatch in length of strides and shape");
    return poison(S);
  }
  if (!check_rank(S, e->bargs[1]->loc, n)) return poison(S);
  // PyTorch's setStrided, in its order: negative strides, then the storage bounds
  // (computeStorageNbytes in uint64 with its overflow checks; nothing to check when a
  // size is 0), then the storage offset.
  for (int i = 0; i < n; i++)
    if (stride[i] < 0) {
      diag_error(S->cx, e->bargs[2]->loc, "as_strided: Negative strides are not supported at the moment, got strides: %s",
                 shape_str(S, n, stride));
      return poison(S);
    }
  bool empty = false, overflow = false;
  uint64_t bytes = 1;
  for (int i = 0; i < n; i++) empty |= size[i] == 0;
  int isz = dtype_size(x->dtype);
  if (!empty) {
    for (int i = 0; i < n; i++) {
      uint64_t span;
      overflow |= __builtin_mul_overflow((uint64_t)stride[i], (uint64_t)size[i] - 1, &span);
      overflow |= __builtin_add_overflow(bytes, span, &bytes);
    }
    overflow |= __builtin_mul_overflow(bytes, (uint64_t)isz, &bytes);
    if (overflow) {
      diag_error(S->cx, call_loc(e), "Storage size calculation overflowed with sizes=%s and strides=%s",
                 shape_str(S, n, size), shape_str(S, n, stride));
      return poison(S);
    }
    int64_t need = wrap_add((int64_t)bytes, wrap_mul(off, isz));
    if (need > wrap_mul(x->storage_numel, isz)) {
      diag_error(S->cx, call_loc(e), "setStorage: sizes %s, strides %s, storage offset %" PRId64 ", and itemsize %d "
                 "requiring a storage size of %" PRId64 " are out of bounds for storage of size %" PRId64,
                 shape_str(S, n, size), shape_str(S, n, stride), off, isz, need, x->storage_numel * isz);
      return poison(S);
    }
  }
  if (off < 0) {
    diag_error(S->cx, e->bargs[3]->loc, "Tensor: invalid storage offset %" PRId64, off);
    return poison(S);
  }
  for (int i = 0; i < n; i++)  // PyTorch lets some of these through, as tensors of negative size
    if (size[i] < 0) {
      diag_error(S->cx, e->bargs[1]->loc, "Trying to create tensor with negative dimension %" PRId64 ": %s", size[i],
                 shape_str(S, n, size));
      return poison(S);
    }
  if (!check_numel(S, e->bargs[1]->loc, n, size)) return poison(S);
  View v;
  if (!view_as_strided(n, size, stride, off, x->storage_numel, &v)) {
    diag_error(S->cx, call_loc(e), "setStorage: sizes %s, strides %s, storage offset %" PRId64 ", and itemsize %d "
               "are out of bounds for storage of size %" PRId64, shape_str(S, n, size), shape_str(S, n, stride), off,
               isz, x->storage_numel * isz);
    return poison(S);
  }
  return view_result(S, e, x, v);
}

// Wrap a list of dims and reject repeats ("dim 0 appears multiple times ...").
static bool get_dims(Sema *S, const Ast *e, Ast *a, const char *pname, int ndim, int *dims, int *n) {
  int64_t req[MAX_LIST];
  if (!get_ints(S, e, a, pname, req, n)) return false;
  uint32_t seen = 0;
  for (int i = 0; i < *n; i++) {
    if (!wrap_dim(S, a->loc, req[i], ndim, &dims[i])) return false;
    if (seen & (1u << dims[i])) {
      diag_error(S->cx, a->loc, "dim %d appears multiple times in the list of dims", dims[i]);
      return false;
    }
    seen |= 1u << dims[i];
  }
  return true;
}

static TType *ck_flip(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  int dims[MAX_LIST], n;
  if (!get_dims(S, e, e->bargs[1], "dims", x->view.ndim, dims, &n)) return poison(S);
  if (x->view.ndim == 0) return view_result(S, e, x, x->view);
  return view_result(S, e, x, view_flip(x->view, n, dims));
}

static TType *ck_contiguous(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  set_operand1(S, e, e->bargs[0]);
  if (view_is_contiguous(x->view)) return x;
  e->needs_copy = true;
  return ty_fresh(S, x->dtype, x->view.ndim, x->view.shape);
}

static const Def def_to_view = {{"to", BK_VIEW, OP_COPY, "input, dtype"}, NULL, 0, OP_COUNT};
static const Def def_to_node = {{"to", BK_NODE, OP_TO, "input, dtype"}, NULL, 0, OP_COUNT};

static TType *cast_to(Sema *S, Ast *e, DType dt) {
  TType *x = e->bargs[0]->ty;
  set_operand1(S, e, e->bargs[0]);
  if (x->dtype == dt) {
    e->bi = &def_to_view.b;
    return x;
  }
  e->bi = &def_to_node.b;
  return ty_fresh(S, dt, x->view.ndim, x->view.shape);
}
static TType *ck_to(Sema *S, Ast *e, const Def *d) {
  (void)d;
  DType dt;
  if (!get_dtype(S, e, e->bargs[1], &dt)) return poison(S);
  return cast_to(S, e, dt);
}
// float() double() ... : the dtype is in d->aux as a DType
static TType *ck_cast(Sema *S, Ast *e, const Def *d) { return cast_to(S, e, (DType)d->aux); }

static TType *ck_clone(Sema *S, Ast *e, const Def *d) {
  (void)d;
  TType *x = e->bargs[0]->ty;
  set_operand1(S, e, e->bargs[0]);
  return ty_fresh(S, x->dtype, x->view.ndim, x->view.shape);
}

// ============================================================================
// Elementwise ops (§6): dtype rules of PyTorch's CUDA kernels, broadcasting
// ============================================================================
// Dtype of a unary op's result; false (after PyTorch's message) when not implemented.
static bool unary_dtype(Sema *S, Loc loc, Op op, DType in, DType *out) {
  bool fl = dtype_is_float(in);
  const char *kname = NULL;
  switch (op) {
  case OP_EXP: case OP_LOG: case OP_LOG2: case OP_EXP2: case OP_SQRT: case OP_RSQRT: case OP_SIN: case OP_COS:
  case OP_TAN: case OP_TANH: case OP_SIGMOID: case OP_ERF: case OP_RECIPROCAL:
    *out = fl ? in : DT_F32;
    return true;
  case OP_GELU: kname = "GeluCUDAKernelImpl"; break;
  case OP_SILU: kname = "silu_cuda"; break;
  case OP_ABS: kname = "abs_cuda"; break;
  case OP_FLOOR: kname = "floor_cuda"; break;
  case OP_CEIL: kname = "ceil_cuda"; break;
  case OP_ROUND: kname = "round_cuda"; break;
  case OP_NEG:
    if (in == DT_BOOL) {
      diag_error(S->cx, loc, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                 "invert a mask, use the `~` or `logical_not()` operator instead.");
      return false;
    }
    *out = in;
    return true;
  case OP_RELU:
    if (in == DT_BOOL) {
      diag_error(S->cx, loc, "Boolean inputs not supported for relu");
      return false;
    }
    *out = in;
    return true;
  case OP_SIGN: *out = in; return true;
  case OP_SQUARE: *out = in == DT_BOOL ? DT_I64 : in; return true;
  case OP_BITWISE_NOT:
    if (fl) {
      diag_error(S->cx, loc, "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
      return false;
    }
    *out = in;
    return true;
  case OP_LOGICAL_NOT: *out = DT_BOOL; return true;
  default: td_unreachable();
  }
  // gelu/silu take floats only; abs/floor/ceil/round anything but bool
  bool ok = (op == OP_GELU || op == OP_SILU) ? fl : in != DT_BOOL;
  if (!ok) {
    diag_error(S->cx, loc, "\"%s\" not implemented for '%s'", kname, torch_name(in));
    return false;
  }
  *out = in;
  return true;
}

static TType *unary_node(Sema *S, Ast *e, Op op, Ast *x, Loc loc) {
  TType *t = x->ty;
  DType dt;
  if (op == OP_BITWISE_NOT && t->dtype == DT_BOOL) op = OP_LOGICAL_NOT;
  if (op == OP_BITWISE_NOT && e->kind == AST_CALL && dtype_is_float(t->dtype)) {
    // bitwise_not(x) reaches the kernel's dtype dispatch; only `~x` has the Python message
    diag_error(S->cx, loc, "\"bitwise_not_cuda\" not implemented for '%s'", torch_name(t->dtype));
    return poison(S);
  }
  if (!unary_dtype(S, loc, op, t->dtype, &dt)) return poison(S);
  set_operand1(S, e, x);
  return ty_fresh(S, dt, t->view.ndim, t->view.shape);
}

static TType *ck_unary(Sema *S, Ast *e, const Def *d) {
  Ast *x = e->bargs[0];
  if (is_scalar(x->ty)) {  // sqrt(D): a compile-time scalar
    e->bi = NULL;
    TType *r = fold_math(S, d->b.op, x->ty);
    return r ? r : poison(S);
  }
  if (!get_tensor(S, e, x, "input")) return poison(S);
  return unary_node(S, e, d->b.op, x, call_loc(e));
}

// Broadcast the shapes of the tensor operands; scalars take no part.
static bool broadcast_all(Sema *S, Loc loc, Ast **xs, int n, int *nd, int64_t *shape) {
  *nd = 0;
  for (int i = 0; i < n; i++)
    if (is_tensor(xs[i]->ty) && !broadcast(S, loc, nd, shape, xs[i]->ty->view.ndim, xs[i]->ty->view.shape))
      return false;
  return true;
}

static bool is_bool_operand(const TType *t) { return t->dtype == DT_BOOL; }

// The dtype of a binary op's result (PyTorch's rules and messages).
static bool binary_dtype(Sema *S, Loc loc, Op op, TType *a, TType *b, DType *out) {
  TType *ts[2] = {a, b};
  DType r = result_type(ts, 2);
  switch (op) {
  case OP_SUB:
    if (is_bool_operand(a) && is_bool_operand(b)) {
      diag_error(S->cx, loc, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                 "`logical_xor()` operator instead.");
      return false;
    }
    if ((is_tensor(a) && a->dtype == DT_BOOL) || (is_tensor(b) && b->dtype == DT_BOOL)) {
      diag_error(S->cx, loc, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                 "invert a mask, use the `~` or `logical_not()` operator instead.");
      return false;
    }
    break;
  case OP_DIV:
  case OP_ATAN2:
    if (!dtype_is_float(r)) r = DT_F32;
    break;
  case OP_FLOOR_DIVIDE:
  case OP_REMAINDER:
  case OP_POW:
    if (r == DT_BOOL) {
      diag_error(S->cx, loc, "\"%s\" not implemented for 'Bool'",
                 op == OP_POW ? "pow_cuda" : op == OP_REMAINDER ? "remainder_cuda" : "div_floor_cuda");
      return false;
    }
    if (op == OP_POW && !dtype_is_float(r) && is_scalar(b) && b->dtype == DT_I64 && b->ival < 0) {
      diag_error(S->cx, loc, "Integers to negative integer powers are not allowed.");
      return false;
    }
    break;
  case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_LOGICAL_AND:
  case OP_LOGICAL_OR:
    r = DT_BOOL;
    break;
  default: break;
  }
  *out = r;
  return true;
}

static TType *binary_node(Sema *S, Ast *e, Op op, Ast *a, Ast *b, Loc loc) {
  Ast *xs[2] = {a, b};
  int nd;
  int64_t shape[TD_MAX_DIMS];
  DType dt;
  if (!binary_dtype(S, loc, op, a->ty, b->ty, &dt)) return poison(S);
  if (!broadcast_all(S, loc, xs, 2, &nd, shape) || !check_numel(S, loc, nd, shape)) return poison(S);
  set_operands(S, e, xs, 2);
  return ty_fresh(S, dt, nd, shape);
}

static TType *ck_binary(Sema *S, Ast *e, const Def *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  static const int binop_of[OP_COUNT] = {
      [OP_ADD] = BIN_ADD + 1, [OP_SUB] = BIN_SUB + 1, [OP_MUL] = BIN_MUL + 1, [OP_DIV] = BIN_DIV + 1,
      [OP_FLOOR_DIVIDE] = BIN_FLOORDIV + 1, [OP_REMAINDER] = BIN_MOD + 1, [OP_POW] = BIN_POW + 1,
      [OP_EQ] = BIN_EQ + 1, [OP_NE] = BIN_NE + 1, [OP_LT] = BIN_LT + 1, [OP_LE] = BIN_LE + 1,
      [OP_GT] = BIN_GT + 1, [OP_GE] = BIN_GE + 1};
  Op op = d->b.op;
  if (op == OP_MAXIMUM || op == OP_MINIMUM) {  // tensors only, as in PyTorch
    if (!get_tensor(S, e, a, "input") || !get_tensor(S, e, b, "other")) return poison(S);
  }
  if (is_scalar(a->ty) && is_scalar(b->ty)) {
    e->bi = NULL;
    TType *r = NULL;
    if (binop_of[op]) r = fold_binary(S, call_loc(e), binop_of[op] - 1, a->ty, b->ty);
    else if (op == OP_ATAN2) r = ty_float(S, atan2(a->ty->fval, b->ty->fval));
    else if (op == OP_LOGICAL_AND) r = ty_bool(S, a->ty->fval != 0 && b->ty->fval != 0);
    else if (op == OP_LOGICAL_OR) r = ty_bool(S, a->ty->fval != 0 || b->ty->fval != 0);
    if (!r) {
      if (!binop_of[op] && op != OP_ATAN2)
        diag_error(S->cx, a->loc, "%s(): argument 'input' must be Tensor, not %s", d->b.name, py_type_name(a->ty));
      return poison(S);
    }
    return r;
  }
  if (!is_tensor(a->ty) && !is_scalar(a->ty)) return get_tensor(S, e, a, "input"), poison(S);
  if (!is_tensor(b->ty) && !is_scalar(b->ty)) return get_tensor(S, e, b, "other"), poison(S);
  return binary_node(S, e, op, a, b, call_loc(e));
}

static TType *ck_where(Sema *S, Ast *e, const Def *d) {
  (void)d;
  Ast *c = e->bargs[0], *a = e->bargs[1], *b = e->bargs[2];
  TType *ct = get_tensor(S, e, c, "condition");
  if (!ct) return poison(S);
  for (int i = 1; i < 3; i++)
    if (!is_tensor(e->bargs[i]->ty) && !is_scalar(e->bargs[i]->ty))
      return get_tensor(S, e, e->bargs[i], i == 1 ? "input" : "other"), poison(S);
  if (ct->dtype != DT_BOOL) {
    diag_error(S->cx, c->loc, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
               torch_name(ct->dtype));
    return poison(S);
  }
  Ast *xs[3] = {c, a, b};
  TType *ts[2] = {a->ty, b->ty};
  int nd;
  int64_t shape[TD_MAX_DIMS];
  if (!broadcast_all(S, call_loc(e), xs, 3, &nd, shape) || !check_numel(S, call_loc(e), nd, shape)) return poison(S);
  set_operands(S, e, xs, 3);
  return ty_fresh(S, result_type(ts, 2), nd, shape);
}

static TType *ck_clamp(Sema *S, Ast *e, const Def *d) {
  (void)d;
  Ast *x = e->bargs[0], *lo = barg(e, 1), *hi = barg(e, 2);
  TType *t = get_tensor(S, e, x, "input");
  if (!t) return poison(S);
  if (!lo && !hi) {
    diag_error(S->cx, call_loc(e), "torch.clamp: At least one of 'min' or 'max' must not be None");
    return poison(S);
  }
  TType *ts[3] = {t, lo ? lo->ty : NULL, hi ? hi->ty : NULL};
  for (int i = 1; i < 3; i++)
    if (ts[i] && !is_scalar(ts[i])) {
      diag_error(S->cx, e->bargs[i]->loc, "clamp(): '%s' must be a number: tensor bounds are not supported (use "
                 "maximum/minimum)", i == 1 ? "min" : "max");
      return poison(S);
    }
  DType dt = result_type(ts, 3);
  e->attr.has_lo = lo != NULL;
  e->attr.has_hi = hi != NULL;
  if (lo) e->attr.lo = lo->ty->fval, e->attr.ilo = lo->ty->ival;
  if (hi) e->attr.hi = hi->ty->fval, e->attr.ihi = hi->ty->ival;
  set_operand1(S, e, x);
  return ty_fresh(S, dt, t->view.ndim, t->view.shape);
}

// ============================================================================
// Reductions and softmax
// ============================================================================
// Which reductions take only one int dim (PyTorch's signatures).
static bool single_dim_reduction(Op op) {
  return op == OP_PROD || op == OP_ARGMAX || op == OP_ARGMIN || op == OP_ALL || op == OP_ANY || op == OP_MAX ||
         op == OP_MIN;
}

static TType *ck_reduce(Sema *S, Ast *e, const Def *d) {
  Op op = d->b.op;
  Ast *xa = e->bargs[0], *da = barg(e, 1);
  int ki = (op == OP_VAR || op == OP_STD) ? 3 : 2;
  Ast *ka = barg(e, ki), *dta = (op == OP_SUM || op == OP_MEAN || op == OP_PROD) ? barg(e, 3) : NULL;
  if ((op == OP_MAX || op == OP_MIN) && da && is_tensor(da->ty)) {  // max(a, b) is maximum(a, b)
    static const Def dmax = {{"maximum", BK_NODE, OP_MAXIMUM, "input, other"}, ck_binary, F_BOTH, OP_COUNT};
    static const Def dmin = {{"minimum", BK_NODE, OP_MINIMUM, "input, other"}, ck_binary, F_BOTH, OP_COUNT};
    const Def *m = op == OP_MAX ? &dmax : &dmin;
    e->bi = &m->b;
    return ck_binary(S, e, m);
  }
  TType *x = get_tensor(S, e, xa, "input");
  if (!x) return poison(S);
  int nd = x->view.ndim;
  bool keepdim = false, unbiased = true;
  // var(x, True) means unbiased=True in PyTorch's var(input, unbiased) overload
  if ((op == OP_VAR || op == OP_STD) && da && is_scalar(da->ty) && da->ty->dtype == DT_BOOL) {
    unbiased = da->ty->ival != 0;
    da = NULL;
  } else if ((op == OP_VAR || op == OP_STD) && barg(e, 2) && !get_bool(S, e, e->bargs[2], "unbiased", &unbiased)) {
    return poison(S);
  }
  if (ka && !get_bool(S, e, ka, "keepdim", &keepdim)) return poison(S);
  if ((op == OP_MAX || op == OP_MIN) && da) {
    diag_error(S->cx, da->loc, "%s(dim) is not supported: use %s or arg%s", d->b.name,
               op == OP_MAX ? "amax" : "amin", d->b.name);
    return poison(S);
  }
  uint32_t mask = 0;
  int dims[MAX_LIST], n = 0;
  if (da) {
    if (single_dim_reduction(op) && da->ty->kind == TY_LIST) {
      diag_error(S->cx, da->loc, "%s(): argument %s must be int, not list", d->b.name, arg_name(S, e, "dim"));
      return poison(S);
    }
    if (!get_dims(S, e, da, "dim", nd, dims, &n)) return poison(S);
    for (int i = 0; i < n; i++) mask |= 1u << dims[i];
    if (n == 0) da = NULL;  // sum(x, []) reduces everything
  }
  if (!da) mask = nd ? (uint32_t)((1ull << nd) - 1) : 0;
  if (nd == 0) mask = 0;
  // dtypes
  DType in = x->dtype, dt = in;
  if (dta && !get_dtype(S, e, dta, &dt)) return poison(S);
  switch (op) {
  case OP_SUM:
  case OP_PROD:
    if (!dta && !dtype_is_float(in)) dt = DT_I64;
    break;
  case OP_MEAN:
    if (!dtype_is_float(dta ? dt : in)) {
      diag_error(S->cx, call_loc(e), "mean(): could not infer output dtype. Input dtype must be either a floating "
                 "point or complex dtype. Got: %s", torch_name(dta ? dt : in));
      return poison(S);
    }
    break;
  case OP_VAR:
  case OP_STD:
    if (!dtype_is_float(in)) {
      diag_error(S->cx, call_loc(e), "std and var only support floating point and complex dtypes");
      return poison(S);
    }
    break;
  case OP_LOGSUMEXP:
    if (!dtype_is_float(in)) dt = DT_F32;
    break;
  case OP_ARGMAX:
  case OP_ARGMIN:
    if (in == DT_BOOL) {
      diag_error(S->cx, call_loc(e), "\"%s_cuda\" not implemented for 'Bool'", d->b.name);
      return poison(S);
    }
    dt = DT_I64;
    break;
  case OP_ALL:
  case OP_ANY: dt = DT_BOOL; break;
  default: break;
  }
  // reductions without an identity need elements
  if (op == OP_AMAX || op == OP_AMIN || op == OP_ARGMAX || op == OP_ARGMIN || op == OP_MAX || op == OP_MIN) {
    if (!da && view_numel(x->view) == 0) {
      if (op == OP_ARGMAX || op == OP_ARGMIN)
        diag_error(S->cx, call_loc(e), "%s(): Expected reduction dim to be specified for input.numel() == 0.",
                   d->b.name);
      else
        diag_error(S->cx, call_loc(e), "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                   "the reduction dim with the 'dim' argument.", d->b.name);
      return poison(S);
    }
    // the first empty dim in the order given; amax/amin name it as written, argmax/argmin wrapped
    for (int k = 0; da && k < n; k++)
      if (x->view.shape[dims[k]] == 0) {
        int64_t raw[MAX_LIST], shown = dims[k];
        int nr;
        if ((op == OP_AMAX || op == OP_AMIN) && get_ints(S, e, da, "dim", raw, &nr) && k < nr) shown = raw[k];
        diag_error(S->cx, da->loc, "%s(): Expected reduction dim %" PRId64 " to have non-zero size.", d->b.name,
                   shown);
        return poison(S);
      }
  }
  int64_t shape[TD_MAX_DIMS];
  int on = 0;
  for (int i = 0; i < nd; i++) {
    if (!(mask >> i & 1)) shape[on++] = x->view.shape[i];
    else if (keepdim) shape[on++] = 1;
  }
  e->attr.dims = mask;
  e->attr.keepdim = keepdim;
  e->attr.unbiased = unbiased;
  e->attr.dim = (da && n == 1) ? dims[0] : -1;
  set_operand1(S, e, xa);
  return ty_fresh(S, dt, on, shape);
}

static TType *ck_softmax(Sema *S, Ast *e, const Def *d) {
  Ast *xa = e->bargs[0];
  TType *x = get_tensor(S, e, xa, "input");
  int64_t dim;
  int a;
  if (!x || !get_int(S, e, e->bargs[1], "dim", &dim)) return poison(S);
  if (!wrap_dim(S, e->bargs[1]->loc, dim, x->view.ndim, &a)) return poison(S);
  DType dt = x->dtype;
  if (barg(e, 2) && !get_dtype(S, e, e->bargs[2], &dt)) return poison(S);
  if (!dtype_is_float(dt)) {
    diag_error(S->cx, call_loc(e), "\"host_softmax\" not implemented for '%s'", torch_name(dt));
    return poison(S);
  }
  (void)d;
  e->attr.dim = a;
  e->attr.dims = x->view.ndim ? 1u << a : 0;
  set_operand1(S, e, xa);
  return ty_fresh(S, dt, x->view.ndim, x->view.shape);
}

// ============================================================================
// matmul, mm, bmm: PyTorch's 1-D / 2-D / folded / batched rules and messages
// ============================================================================
static bool matmul_dtypes(Sema *S, Loc loc, const TType *a, const TType *b, const char *kernel) {
  if (a->dtype != b->dtype) {
    if (a->view.ndim == 1 && b->view.ndim == 1)
      diag_error(S->cx, loc, "dot : expected both vectors to have same dtype, but found %s and %s", torch_name(a->dtype),
                 torch_name(b->dtype));
    else
      diag_error(S->cx, loc, "expected scalar type %s but found %s", torch_name(a->dtype), torch_name(b->dtype));
    return false;
  }
  if (!dtype_is_float(a->dtype)) {
    diag_error(S->cx, loc, "\"%s\" not implemented for '%s'", a->view.ndim == 1 && b->view.ndim == 1 ? "dot" : kernel,
               torch_name(a->dtype));
    return false;
  }
  return true;
}

static void mm_error(Sema *S, Loc loc, int64_t r1, int64_t c1, int64_t r2, int64_t c2) {
  diag_error(S->cx, loc, "mat1 and mat2 shapes cannot be multiplied (%" PRId64 "x%" PRId64 " and %" PRId64 "x%" PRId64 ")",
             r1, c1, r2, c2);
}
static void mv_error(Sema *S, Loc loc, int64_t r, int64_t c, int64_t k) {
  diag_error(S->cx, loc, "size mismatch, got %" PRId64 ", %" PRId64 "x%" PRId64 ",%" PRId64, r, r, c, k);
}

static bool matmul_shape(Sema *S, Loc loc, const TType *ta, const TType *tb, int *on, int64_t *out) {
  const View *a = &ta->view, *b = &tb->view;
  int d1 = a->ndim, d2 = b->ndim;
  if (d1 == 0 || d2 == 0) {
    diag_error(S->cx, loc, "both arguments to matmul need to be at least 1D, but they are %dD and %dD", d1, d2);
    return false;
  }
  if (!matmul_dtypes(S, loc, ta, tb, d1 >= 3 && d2 >= 3 ? "bmm_cuda" : "addmm_cuda")) return false;
  const int64_t *sa = a->shape, *sb = b->shape;
  *on = 0;
  if (d1 == 1 && d2 == 1) {
    if (sa[0] != sb[0]) {
      diag_error(S->cx, loc, "inconsistent tensor size, expected tensor [%" PRId64 "] and src [%" PRId64 "] to have the "
                 "same number of elements, but got %" PRId64 " and %" PRId64 " elements respectively",
                 sa[0], sb[0], sa[0], sb[0]);
      return false;
    }
    return true;
  }
  if (d1 == 2 && d2 == 1) {
    if (sa[1] != sb[0]) return mv_error(S, loc, sa[0], sa[1], sb[0]), false;
    out[(*on)++] = sa[0];
    return true;
  }
  if (d1 == 1 && d2 == 2) {
    if (sa[0] != sb[0]) return mm_error(S, loc, 1, sa[0], sb[0], sb[1]), false;
    out[(*on)++] = sb[1];
    return true;
  }
  if (d1 == 2 && d2 == 2) {
    if (sa[1] != sb[0]) return mm_error(S, loc, sa[0], sa[1], sb[0], sb[1]), false;
    out[(*on)++] = sa[0];
    out[(*on)++] = sb[1];
    return true;
  }
  if (d1 >= 3 && d2 <= 2) {  // fold a's batch into its rows
    int64_t rows = 1;
    for (int i = 0; i < d1 - 1; i++) rows = wrap_mul(rows, sa[i]);
    int64_t m = sa[d1 - 1];
    if (m != sb[0]) {
      if (d2 == 1) mv_error(S, loc, rows, m, sb[0]);
      else mm_error(S, loc, rows, m, sb[0], sb[1]);
      return false;
    }
    for (int i = 0; i < d1 - 1; i++) out[(*on)++] = sa[i];
    if (d2 == 2) out[(*on)++] = sb[1];
    return true;
  }
  if (d2 >= 3 && d1 <= 2) {  // fold b's batch: computed as (b^T @ a^T)^T
    int64_t rows = 1;
    for (int i = 0; i < d2 - 2; i++) rows = wrap_mul(rows, sb[i]);
    rows = wrap_mul(rows, sb[d2 - 1]);
    int64_t k = sb[d2 - 2], m = sa[d1 - 1];
    if (k != m) {
      if (d1 == 1) mv_error(S, loc, rows, k, m);
      else mm_error(S, loc, rows, k, m, sa[0]);
      return false;
    }
    for (int i = 0; i < d2 - 2; i++) out[(*on)++] = sb[i];
    if (d1 == 2) out[(*on)++] = sa[0];
    out[(*on)++] = sb[d2 - 1];
    return true;
  }
  // batched: broadcast the batch dims, then bmm's check
  int nb = d1 - 2;
  int64_t batch[TD_MAX_DIMS];
  memcpy(batch, sa, sizeof(int64_t) * (size_t)nb);
  if (!broadcast(S, loc, &nb, batch, d2 - 2, sb)) return false;
  int64_t B = 1;
  for (int i = 0; i < nb; i++) B = wrap_mul(B, batch[i]);
  if (sa[d1 - 1] != sb[d2 - 2]) {
    diag_error(S->cx, loc, "Expected size for first two dimensions of batch2 tensor to be: [%" PRId64 ", %" PRId64
               "] but got: [%" PRId64 ", %" PRId64 "].", B, sa[d1 - 1], B, sb[d2 - 2]);
    return false;
  }
  for (int i = 0; i < nb; i++) out[(*on)++] = batch[i];
  out[(*on)++] = sa[d1 - 2];
  out[(*on)++] = sb[d2 - 1];
  return true;
}

static TType *matmul_node(Sema *S, Ast *e, Ast *a, Ast *b, Loc loc) {
  int n;
  int64_t shape[TD_MAX_DIMS];
  if (!matmul_shape(S, loc, a->ty, b->ty, &n, shape) || !check_numel(S, loc, n, shape)) return poison(S);
  Ast *xs[2] = {a, b};
  set_operands(S, e, xs, 2);
  return ty_fresh(S, a->ty->dtype, n, shape);
}

static TType *ck_matmul(Sema *S, Ast *e, const Def *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  TType *ta = get_tensor(S, e, a, "input"), *tb = ta ? get_tensor(S, e, b, d->aux == OP_COUNT ? "other" : "mat2") : NULL;
  if (!ta || !tb) return poison(S);
  Loc loc = call_loc(e);
  if (!strcmp(d->b.name, "mm")) {
    if (ta->view.ndim != 2) return diag_error(S->cx, a->loc, "self must be a matrix"), poison(S);
    if (tb->view.ndim != 2) return diag_error(S->cx, b->loc, "mat2 must be a matrix"), poison(S);
  } else if (!strcmp(d->b.name, "bmm")) {
    if (ta->view.ndim != 3) return diag_error(S->cx, a->loc, "batch1 must be a 3D tensor"), poison(S);
    if (tb->view.ndim != 3) return diag_error(S->cx, b->loc, "batch2 must be a 3D tensor"), poison(S);
    if (ta->view.shape[0] != tb->view.shape[0] || ta->view.shape[2] != tb->view.shape[1]) {
      diag_error(S->cx, loc, "Expected size for first two dimensions of batch2 tensor to be: [%" PRId64 ", %" PRId64
                 "] but got: [%" PRId64 ", %" PRId64 "].", ta->view.shape[0], ta->view.shape[2], tb->view.shape[0],
                 tb->view.shape[1]);
      return poison(S);
    }
  }
  return matmul_node(S, e, a, b, loc);
}

// ============================================================================
// cat, stack, index_select, gather
// ============================================================================
static bool tensor_list(Sema *S, const Ast *e, Ast *l, const char *pname) {
  if (l->kind != AST_LIST) {
    diag_error(S->cx, l->loc, "%s(): argument '%s' must be a list of tensors written [a, b, ...]", e->bi->name, pname);
    return false;
  }
  for (int i = 0; i < l->list.len; i++)
    if (!get_tensor(S, e, l->list.data[i], pname)) return false;
  return true;
}

static TType *ck_cat(Sema *S, Ast *e, const Def *d) {
  bool stack = d->b.op == OP_STACK;
  Ast *l = e->bargs[0];
  int64_t dim = 0;
  if (!tensor_list(S, e, l, "tensors")) return poison(S);
  if (barg(e, 1) && !get_int(S, e, e->bargs[1], "dim", &dim)) return poison(S);
  Loc dloc = barg(e, 1) ? e->bargs[1]->loc : call_loc(e);
  int n = l->list.len;
  if (n == 0) {
    diag_error(S->cx, l->loc, stack ? "stack expects a non-empty TensorList"
                                    : "torch.cat(): expected a non-empty list of Tensors");
    return poison(S);
  }
  TType **ts = arena_alloc(&S->cx->arena, sizeof(TType *) * (size_t)n);
  for (int i = 0; i < n; i++) ts[i] = l->list.data[i]->ty;
  const View *v0 = &ts[0]->view;
  int a;
  int64_t shape[TD_MAX_DIMS + 1];
  int on;
  if (stack) {
    for (int i = 1; i < n; i++)
      if (!same_shape(v0->ndim, v0->shape, ts[i]->view.ndim, ts[i]->view.shape)) {
        diag_error(S->cx, l->list.data[i]->loc, "stack expects each tensor to be equal size, but got %s at entry 0 "
                   "and %s at entry %d", shape_str(S, v0->ndim, v0->shape),
                   shape_str(S, ts[i]->view.ndim, ts[i]->view.shape), i);
        return poison(S);
      }
    if (!wrap_dim(S, dloc, dim, v0->ndim + 1, &a) || !check_rank(S, call_loc(e), v0->ndim + 1)) return poison(S);
    on = 0;
    for (int i = 0; i <= v0->ndim; i++) shape[on++] = i == a ? n : (i < a ? v0->shape[i] : v0->shape[i - 1]);
  } else {
    for (int i = 0; i < n; i++)
      if (ts[i]->view.ndim == 0) {
        diag_error(S->cx, l->list.data[i]->loc, "zero-dimensional tensor (at position %d) cannot be concatenated", i);
        return poison(S);
      }
    if (!wrap_dim(S, dloc, dim, v0->ndim, &a)) return poison(S);
    on = v0->ndim;
    memcpy(shape, v0->shape, sizeof(int64_t) * (size_t)on);
    for (int i = 1; i < n; i++) {
      const View *vi = &ts[i]->view;
      if (vi->ndim != v0->ndim) {
        diag_error(S->cx, l->list.data[i]->loc, "Tensors must have same number of dimensions: got %d and %d", v0->ndim,
                   vi->ndim);
        return poison(S);
      }
      for (int k = 0; k < on; k++)
        if (k != a && vi->shape[k] != v0->shape[k]) {
          diag_error(S->cx, l->list.data[i]->loc, "Sizes of tensors must match except in dimension %d. Expected size %"
                     PRId64 " but got size %" PRId64 " for tensor number %d in the list.", a, v0->shape[k],
                     vi->shape[k], i);
          return poison(S);
        }
      shape[a] += vi->shape[a];
    }
    if (!check_numel(S, call_loc(e), on, shape)) return poison(S);
  }
  e->attr.dim = a;
  e->attr.dims = 1u << a;
  set_operands(S, e, l->list.data, n);
  return ty_fresh(S, result_type(ts, n), on, shape);
}

// The (input, dim, index) arguments shared by index_select and gather: false after
// reporting a bad one.
static bool input_dim_index(Sema *S, Ast *e, TType **x, TType **ix, int *a) {
  int64_t dim;
  *x = get_tensor(S, e, e->bargs[0], "input");
  *ix = *x ? get_tensor(S, e, e->bargs[2], "index") : NULL;
  return *ix && get_int(S, e, e->bargs[1], "dim", &dim) && wrap_dim(S, e->bargs[1]->loc, dim, (*x)->view.ndim, a);
}

static TType *ck_index_select(Sema *S, Ast *e, const Def *d) {
  (void)d;
  Ast *xa = e->bargs[0], *ia = e->bargs[2];
  TType *x, *ix;
  int a;
  if (!input_dim_index(S, e, &x, &ix, &a)) return poison(S);
  if (ix->dtype != DT_I32 && ix->dtype != DT_I64) {
    diag_error(S->cx, ia->loc, "index_select(): Expected dtype int32 or int64 for index");
    return poison(S);
  }
  if (ix->view.ndim > 1) {
    diag_error(S->cx, ia->loc, "index_select(): Index is supposed to be a vector");
    return poison(S);
  }
  int64_t shape[TD_MAX_DIMS];
  int on = x->view.ndim;
  memcpy(shape, x->view.shape, sizeof(int64_t) * (size_t)on);
  if (on) shape[a] = view_numel(ix->view);
  e->attr.dim = a;
  e->attr.dims = on ? 1u << a : 0;
  Ast *xs[2] = {xa, ia};
  set_operands(S, e, xs, 2);
  return ty_fresh(S, x->dtype, on, shape);
}

static TType *ck_gather(Sema *S, Ast *e, const Def *d) {
  (void)d;
  Ast *xa = e->bargs[0], *ia = e->bargs[2];
  TType *x, *ix;
  int a;
  if (!input_dim_index(S, e, &x, &ix, &a)) return poison(S);
  if (ix->dtype != DT_I64) {
    diag_error(S->cx, ia->loc, "gather(): Expected dtype int64 for index");
    return poison(S);
  }
  int nx = x->view.ndim ? x->view.ndim : 1, ni = ix->view.ndim ? ix->view.ndim : 1;
  if (nx != ni) {
    diag_error(S->cx, ia->loc, "Index tensor must have the same number of dimensions as input tensor");
    return poison(S);
  }
  for (int k = 0; k < x->view.ndim && k < ix->view.ndim; k++)
    if (k != a && ix->view.shape[k] > x->view.shape[k]) {
      diag_error(S->cx, ia->loc, "Size does not match at dimension %d expected index %s to be smaller than self %s "
                 "apart from dimension %d", k, shape_str(S, ix->view.ndim, ix->view.shape),
                 shape_str(S, x->view.ndim, x->view.shape), a);
      return poison(S);
    }
  e->attr.dim = a;
  e->attr.dims = x->view.ndim ? 1u << a : 0;
  Ast *xs[2] = {xa, ia};
  set_operands(S, e, xs, 2);
  return ty_fresh(S, x->dtype, ix->view.ndim, ix->view.shape);
}

// ============================================================================
// Creation ops: zeros ones full arange eye (PyTorch's default dtypes)
// ============================================================================
static bool creation_shape(Sema *S, const Ast *e, Ast *a, int64_t *shape, int *n) {
  if (!get_ints(S, e, a, "size", shape, n)) return false;
  if (!check_rank(S, a->loc, *n)) return false;
  for (int i = 0; i < *n; i++)
    if (shape[i] < 0) {
      diag_error(S->cx, a->loc, "Trying to create tensor with negative dimension %" PRId64 ": %s", shape[i],
                 shape_str(S, *n, shape));
      return false;
    }
  return check_numel(S, a->loc, *n, shape);
}

static TType *ck_zeros(Sema *S, Ast *e, const Def *d) {
  (void)d;
  int64_t shape[MAX_LIST];
  int n;
  DType dt = DT_F32;
  if (!creation_shape(S, e, e->bargs[0], shape, &n)) return poison(S);
  if (barg(e, 1) && !get_dtype(S, e, e->bargs[1], &dt)) return poison(S);
  set_operands(S, e, NULL, 0);
  return ty_fresh(S, dt, n, shape);
}

static TType *ck_full(Sema *S, Ast *e, const Def *d) {
  (void)d;
  int64_t shape[MAX_LIST];
  int n;
  Ast *va = e->bargs[1];
  if (!creation_shape(S, e, e->bargs[0], shape, &n)) return poison(S);
  if (!is_scalar(va->ty)) {
    diag_error(S->cx, va->loc, "full(): argument 'fill_value' must be Number, not %s", py_type_name(va->ty));
    return poison(S);
  }
  DType dt = va->ty->dtype == DT_F64 ? DT_F32 : va->ty->dtype;
  if (barg(e, 2) && !get_dtype(S, e, e->bargs[2], &dt)) return poison(S);
  e->attr.lo = va->ty->fval;
  e->attr.ilo = va->ty->ival;
  if (!dtype_is_float(dt) && va->ty->dtype == DT_F64) e->attr.ilo = (int64_t)va->ty->ival;
  set_operands(S, e, NULL, 0);
  return ty_fresh(S, dt, n, shape);
}

static TType *ck_arange(Sema *S, Ast *e, const Def *d) {
  (void)d;
  Ast *as[3] = {e->bargs[0], barg(e, 1), barg(e, 2)};
  if (!as[1]) as[1] = as[0], as[0] = NULL;  // arange(end)
  double v[3] = {0, 0, 1};
  int64_t iv[3] = {0, 0, 1};
  bool all_int = true;
  static const char *names[3] = {"start", "end", "step"};
  for (int i = 0; i < 3; i++) {
    if (!as[i]) continue;
    if (!is_scalar(as[i]->ty)) {
      diag_error(S->cx, as[i]->loc, "arange(): argument '%s' must be Number, not %s", names[i], py_type_name(as[i]->ty));
      return poison(S);
    }
    v[i] = as[i]->ty->fval;
    iv[i] = as[i]->ty->ival;
    if (as[i]->ty->dtype == DT_F64) all_int = false;
  }
  DType dt = all_int ? DT_I64 : DT_F32;
  if (barg(e, 3) && !get_dtype(S, e, e->bargs[3], &dt)) return poison(S);
  if (v[2] == 0) {
    diag_error(S->cx, as[2] ? as[2]->loc : call_loc(e), "step must be nonzero");
    return poison(S);
  }
  if ((v[2] > 0 && v[1] < v[0]) || (v[2] < 0 && v[1] > v[0])) {
    diag_error(S->cx, call_loc(e), "upper bound and larger bound inconsistent with step sign");
    return poison(S);
  }
  int64_t count;
  if (all_int) {
    if (fabs((double)iv[1] - (double)iv[0]) > 4e18 || iv[2] == INT64_MIN) {
      diag_error(S->cx, call_loc(e), "invalid size, possible overflow?");
      return poison(S);
    }
    int64_t span = iv[1] - iv[0], st = iv[2];
    count = st > 0 ? (span + st - 1) / st : (span + st + 1) / st;
  } else {
    double c = ceil((v[1] - v[0]) / v[2]);
    if (!(c < 9.2e18)) {
      diag_error(S->cx, call_loc(e), "invalid size, possible overflow?");
      return poison(S);
    }
    count = (int64_t)c;
  }
  e->attr.lo = v[0];
  e->attr.hi = v[2];
  e->attr.ilo = iv[0];
  e->attr.ihi = iv[2];
  set_operands(S, e, NULL, 0);
  return ty_fresh(S, dt, 1, &count);
}

static TType *ck_eye(Sema *S, Ast *e, const Def *d) {
  (void)d;
  int64_t shape[2];
  DType dt = DT_F32;
  if (!get_int(S, e, e->bargs[0], "n", &shape[0])) return poison(S);
  shape[1] = shape[0];
  if (barg(e, 1) && !get_int(S, e, e->bargs[1], "m", &shape[1])) return poison(S);
  if (shape[0] < 0) return diag_error(S->cx, e->bargs[0]->loc, "n must be greater or equal to 0, got %" PRId64, shape[0]), poison(S);
  if (shape[1] < 0) return diag_error(S->cx, e->bargs[1]->loc, "m must be greater or equal to 0, got %" PRId64, shape[1]), poison(S);
  if (!check_numel(S, call_loc(e), 2, shape)) return poison(S);
  if (barg(e, 2) && !get_dtype(S, e, e->bargs[2], &dt)) return poison(S);
  set_operands(S, e, NULL, 0);
  return ty_fresh(S, dt, 2, shape);
}

// ============================================================================
// The op table (LANGUAGE.md §5-6) with PyTorch 1.13's parameter lists
// ============================================================================
#define VIEWOP(n, sig, ck) {{n, BK_VIEW, OP_COPY, sig}, ck, F_BOTH, OP_COUNT}
#define NODE(n, op, sig, ck, forms) {{n, BK_NODE, OP_##op, sig}, ck, forms, OP_COUNT}
#define UNARY(n, op) NODE(n, op, "input", ck_unary, F_BOTH)
#define BINARY(n, op) NODE(n, op, "input, other", ck_binary, F_BOTH)
#define REDUCE(n, op, sig) NODE(n, op, sig, ck_reduce, F_BOTH)
#define CAST(n, dt) {{n, BK_VIEW, OP_COPY, "input"}, ck_cast, F_METH, (Op)dt}

static const Def builtins[] = {
    // views
    VIEWOP("view", "input, *size", ck_view),
    VIEWOP("reshape", "input, *shape", ck_reshape),
    VIEWOP("flatten", "input, start_dim=0, end_dim=-1", ck_flatten),
    VIEWOP("transpose", "input, dim0, dim1", ck_transpose),
    VIEWOP("t", "input", ck_t),
    {{"T", BK_VIEW, OP_COPY, "input"}, ck_T, 0, OP_COUNT},
    VIEWOP("permute", "input, *dims", ck_permute),
    VIEWOP("unsqueeze", "input, dim", ck_unsqueeze),
    VIEWOP("squeeze", "input, dim=None", ck_squeeze),
    VIEWOP("expand", "input, *size", ck_expand),
    VIEWOP("expand_as", "input, other", ck_expand_as),
    VIEWOP("select", "input, dim, index", ck_select),
    VIEWOP("narrow", "input, dim, start, length", ck_narrow),
    VIEWOP("diagonal", "input, offset=0, dim1=0, dim2=1", ck_diagonal),
    VIEWOP("as_strided", "input, size, stride, storage_offset=None", ck_as_strided),
    VIEWOP("flip", "input, *dims", ck_flip),
    VIEWOP("contiguous", "input", ck_contiguous),
    VIEWOP("to", "input, dtype", ck_to),
    CAST("float", DT_F32), CAST("double", DT_F64), CAST("int", DT_I32), CAST("long", DT_I64),
    CAST("half", DT_F16), CAST("bfloat16", DT_BF16), CAST("bool", DT_BOOL),
    NODE("clone", CLONE, "input", ck_clone, F_BOTH),
    // unary
    UNARY("neg", NEG), UNARY("abs", ABS), UNARY("exp", EXP), UNARY("log", LOG), UNARY("log2", LOG2),
    UNARY("exp2", EXP2), UNARY("sqrt", SQRT), UNARY("rsqrt", RSQRT), UNARY("sin", SIN), UNARY("cos", COS),
    UNARY("tan", TAN), UNARY("tanh", TANH), UNARY("sigmoid", SIGMOID), UNARY("relu", RELU), UNARY("gelu", GELU),
    UNARY("erf", ERF), UNARY("floor", FLOOR), UNARY("ceil", CEIL), UNARY("round", ROUND), UNARY("sign", SIGN),
    UNARY("reciprocal", RECIPROCAL), UNARY("square", SQUARE), UNARY("silu", SILU),
    UNARY("bitwise_not", BITWISE_NOT), UNARY("logical_not", LOGICAL_NOT),
    // binary
    BINARY("add", ADD), BINARY("sub", SUB), BINARY("mul", MUL), BINARY("div", DIV),
    BINARY("floor_divide", FLOOR_DIVIDE), BINARY("remainder", REMAINDER),
    NODE("pow", POW, "input, exponent", ck_binary, F_BOTH),
    BINARY("maximum", MAXIMUM), BINARY("minimum", MINIMUM), BINARY("atan2", ATAN2),
    BINARY("eq", EQ), BINARY("ne", NE), BINARY("lt", LT), BINARY("le", LE), BINARY("gt", GT), BINARY("ge", GE),
    BINARY("logical_and", LOGICAL_AND), BINARY("logical_or", LOGICAL_OR),
    NODE("where", WHERE, "condition, input, other", ck_where, F_BOTH),
    NODE("clamp", CLAMP, "input, min=None, max=None", ck_clamp, F_BOTH),
    // reductions
    REDUCE("sum", SUM, "input, dim=None, keepdim=False, *, dtype=None"),
    REDUCE("mean", MEAN, "input, dim=None, keepdim=False, *, dtype=None"),
    REDUCE("amax", AMAX, "input, dim=None, keepdim=False"),
    REDUCE("amin", AMIN, "input, dim=None, keepdim=False"),
    REDUCE("var", VAR, "input, dim=None, unbiased=True, keepdim=False"),
    REDUCE("std", STD, "input, dim=None, unbiased=True, keepdim=False"),
    REDUCE("logsumexp", LOGSUMEXP, "input, dim=None, keepdim=False"),
    REDUCE("prod", PROD, "input, dim=None, keepdim=False, *, dtype=None"),
    REDUCE("argmax", ARGMAX, "input, dim=None, keepdim=False"),
    REDUCE("argmin", ARGMIN, "input, dim=None, keepdim=False"),
    REDUCE("all", ALL, "input, dim=None, keepdim=False"),
    REDUCE("any", ANY, "input, dim=None, keepdim=False"),
    REDUCE("max", MAX, "input, dim=None, keepdim=False"),
    REDUCE("min", MIN, "input, dim=None, keepdim=False"),
    NODE("softmax", SOFTMAX, "input, dim, dtype=None", ck_softmax, F_BOTH),
    NODE("log_softmax", LOG_SOFTMAX, "input, dim, dtype=None", ck_softmax, F_BOTH),
    // matmul
    NODE("matmul", MATMUL, "input, other", ck_matmul, F_BOTH),
    NODE("mm", MATMUL, "input, mat2", ck_matmul, F_BOTH),
    NODE("bmm", MATMUL, "input, mat2", ck_matmul, F_BOTH),
    // joins and gathers
    NODE("cat", CAT, "tensors, dim=0", ck_cat, F_FN),
    NODE("stack", STACK, "tensors, dim=0", ck_cat, F_FN),
    NODE("index_select", INDEX_SELECT, "input, dim, index", ck_index_select, F_BOTH),
    NODE("gather", GATHER, "input, dim, index", ck_gather, F_BOTH),
    // creation
    NODE("zeros", ZEROS, "*size, dtype=None", ck_zeros, F_FN),
    NODE("ones", ONES, "*size, dtype=None", ck_zeros, F_FN),
    NODE("full", FULL, "size, fill_value, *, dtype=None", ck_full, F_FN),
    NODE("arange", ARANGE, "start, end=None, step=1, *, dtype=None", ck_arange, F_FN),
    NODE("eye", EYE, "n, m=None, *, dtype=None", ck_eye, F_FN),
};
enum { NBUILTINS = sizeof builtins / sizeof builtins[0] };

static const Def def_index_view = {{"index", BK_VIEW, OP_COPY, ""}, NULL, 0, OP_COUNT};
static const Def def_index_node = {{"index", BK_NODE, OP_INDEX, ""}, NULL, 0, OP_COUNT};
static const Def def_store = {{"store", BK_NODE, OP_STORE, ""}, NULL, 0, OP_COUNT};

static const Def *builtin_find(const char *name) {
  for (int i = 0; i < NBUILTINS; i++)
    if (!strcmp(builtins[i].b.name, name)) return &builtins[i];
  return NULL;
}
static bool is_op_name(const char *name) { return builtin_find(name) != NULL; }

// ============================================================================
// Indexing: basic indices are one view; i64 tensors make an advanced-index node
// ============================================================================
// x[...] with index tensors: operands[0] is the base after the basic indices (a
// synthetic BK_VIEW AST_INDEX when they change it), then each index tensor;
// attr.dims has the bits of the dims of operands[0] that the tensors index.
static TType *advanced_index(Sema *S, Ast *e, const TType *base, View v, Ast **idx, int *pos, int n) {
  for (int i = 0; i < n; i++) {
    DType dt = idx[i]->ty->dtype;
    if (dt == DT_BOOL) {
      diag_error(S->cx, idx[i]->loc, "boolean-mask indexing is not supported: use where");
      return poison(S);
    }
    if (dt != DT_I64) {
      diag_error(S->cx, idx[i]->loc, "tensors used as indices must be long, byte or bool tensors");
      return poison(S);
    }
  }
  int nb = 0;
  int64_t bshape[TD_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    const View *iv = &idx[i]->ty->view;
    int nn = nb > iv->ndim ? nb : iv->ndim;
    bool ok = true;
    for (int k = 0; k < nn && ok; k++) {
      int ia = k - (nn - nb), ib = k - (nn - iv->ndim);
      int64_t sa = ia >= 0 ? bshape[ia] : 1, sb = ib >= 0 ? iv->shape[ib] : 1;
      ok = sa == sb || sa == 1 || sb == 1;
    }
    if (!ok) {
      char buf[512];
      int len = 0;
      for (int j = 0; j < n; j++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%s", j ? ", " : "",
                        shape_str(S, idx[j]->ty->view.ndim, idx[j]->ty->view.shape));
      diag_error(S->cx, e->oploc, "shape mismatch: indexing tensors could not be broadcast together with shapes %s", buf);
      return poison(S);
    }
    broadcast(S, e->oploc, &nb, bshape, iv->ndim, iv->shape);
  }
  bool adjacent = pos[n - 1] - pos[0] == n - 1;
  int64_t shape[2 * TD_MAX_DIMS];
  int on = 0;
  uint32_t mask = 0;
  for (int i = 0; i < n; i++) mask |= 1u << pos[i];
  if (!adjacent)
    for (int k = 0; k < nb; k++) shape[on++] = bshape[k];
  for (int d = 0; d < v.ndim; d++) {
    if (adjacent && d == pos[0])
      for (int k = 0; k < nb; k++) shape[on++] = bshape[k];
    if (!(mask >> d & 1)) shape[on++] = v.shape[d];
  }
  if (!check_rank(S, e->oploc, on) || !check_numel(S, e->oploc, on, shape)) return poison(S);
  Ast *src = e->lhs;
  if (!view_equal(v, base->view)) {  // the basic part as its own view expression
    src = ast_new(S->cx, AST_INDEX, e->loc);
    src->lhs = e->lhs;
    src->oploc = e->oploc;
    for (int i = 0; i < e->list.len; i++) {
      Ast *it = e->list.data[i];
      if (it->ty && is_tensor(it->ty)) it = ast_new(S->cx, AST_SLICE, it->loc);
      vec_push(&S->cx->arena, &src->list, it);
    }
    src->ty = ty_view_of(S, base, v);
    src->bi = &def_index_view.b;
    set_operand1(S, src, e->lhs);
  }
  Ast **ops = arena_alloc(&S->cx->arena, sizeof(Ast *) * (size_t)(n + 1));
  ops[0] = src;
  for (int i = 0; i < n; i++) ops[i + 1] = idx[i];
  set_operands(S, e, ops, n + 1);
  e->bi = &def_index_node.b;
  e->attr.dims = mask;
  e->attr.dim = pos[0];
  return ty_fresh(S, base->dtype, on, shape);
}

static bool slice_bound(Sema *S, Ast *b, int64_t *out, int64_t none) {
  if (!b || b->kind == AST_NONE || (b->ty && b->ty->kind == TY_NONE)) {
    *out = none;
    return true;
  }
  if (is_scalar(b->ty) && b->ty->dtype != DT_F64) {
    *out = b->ty->ival;
    return true;
  }
  if (!is_poison(b->ty))
    diag_error(S->cx, b->loc, "slice indices must be integers or None or have an __index__ method");
  return false;
}

static TType *check_index(Sema *S, Ast *e) {
  TType *base = expr(S, e->lhs);
  bool bad = is_poison(base);
  for (int i = 0; i < e->list.len; i++) {
    Ast *it = e->list.data[i];
    if (it->kind == AST_SLICE) {
      Ast *bs[3] = {it->lhs, it->rhs, it->step};
      for (int k = 0; k < 3; k++)
        if (bs[k] && is_poison(expr(S, bs[k]))) bad = true;
    } else if (it->kind != AST_ELLIPSIS && it->kind != AST_NONE) {
      if (is_poison(expr(S, it))) bad = true;
    }
  }
  if (bad) return poison(S);
  if (!is_tensor(base)) {
    diag_error(S->cx, e->lhs->loc, "'%s' object is not subscriptable", py_type_name(base));
    return poison(S);
  }
  int consumed = 0, nell = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *it = e->list.data[i];
    if (it->kind == AST_ELLIPSIS) {
      if (++nell > 1) {
        diag_error(S->cx, it->loc, "an index can only have a single ellipsis ('...')");
        return poison(S);
      }
    } else if (it->kind != AST_NONE) {
      consumed++;
    }
  }
  View v = base->view;
  if (consumed > v.ndim) {
    Ast *first = e->list.data[0];
    // PyTorch's fast paths for a lone int or slice index have their own messages
    if (v.ndim == 0 && e->list.len == 1 && is_scalar(first->ty))
      diag_error(S->cx, first->loc, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    else if (v.ndim == 0 && e->list.len == 1 && first->kind == AST_SLICE)
      diag_error(S->cx, first->loc, "slice() cannot be applied to a 0-dim tensor.");
    else
      diag_error(S->cx, e->oploc, "too many indices for tensor of dimension %d", v.ndim);
    return poison(S);
  }
  Ast *idx[TD_MAX_DIMS];
  int pos[TD_MAX_DIMS], nidx = 0;
  int d = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *it = e->list.data[i];
    if (it->kind == AST_NONE) {
      if (!check_rank(S, it->loc, v.ndim + 1)) return poison(S);
      v = view_unsqueeze(v, d++);
    } else if (it->kind == AST_ELLIPSIS) {
      d += base->view.ndim - consumed;
    } else if (it->kind == AST_SLICE) {
      int64_t lo, hi, step;
      if (!slice_bound(S, it->lhs, &lo, VIEW_SLICE_NONE) || !slice_bound(S, it->rhs, &hi, VIEW_SLICE_NONE) ||
          !slice_bound(S, it->step, &step, 1))
        return poison(S);
      if (step == 0) {
        diag_error(S->cx, it->step->loc, "slice step cannot be zero");
        return poison(S);
      }
      if (step < 0) {
        diag_error(S->cx, it->step->loc, "step must be greater than zero");
        return poison(S);
      }
      v = view_slice(v, d++, lo, hi, step);
    } else if (is_tensor(it->ty)) {
      idx[nidx] = it;
      pos[nidx++] = d++;
    } else if (is_scalar(it->ty) && it->ty->dtype == DT_I64) {
      int64_t size = v.shape[d], k = it->ty->ival;
      if (k < -size || k >= size) {  // PyTorch names the position in the index, not a dim
        diag_error(S->cx, it->loc, "index %" PRId64 " is out of bounds for dimension %d with size %" PRId64, k, i,
                   size);
        return poison(S);
      }
      v = view_select(v, d, k < 0 ? k + size : k);
    } else if (it->ty->kind == TY_LIST) {
      diag_error(S->cx, it->loc, "indexing with a list is not supported: use an i64 tensor");
      return poison(S);
    } else {
      diag_error(S->cx, it->loc, "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                 "valid indices (got %s)", py_type_name(it->ty));
      return poison(S);
    }
  }
  if (nidx) return advanced_index(S, e, base, v, idx, pos, nidx);
  e->bi = &def_index_view.b;
  set_operand1(S, e, e->lhs);
  return ty_view_of(S, base, v);
}

// ============================================================================
// Names
// ============================================================================
static void bind_name(Sema *S, const char *name, TType *t, Loc loc) {
  Sym *s = arena_alloc(&S->cx->arena, sizeof *s);
  s->name = name;
  s->ty = t;
  s->loc = loc;
  s->next = S->scope;
  S->scope = s;
}
static Sym *find_local(Sema *S, const char *name) {
  for (Sym *s = S->scope; s; s = s->next)
    if (!strcmp(s->name, name)) return s;
  return NULL;
}
static Const *find_const(Sema *S, const char *name) {
  for (int i = 0; i < S->consts.len; i++)
    if (!strcmp(S->consts.data[i].name, name)) return &S->consts.data[i];
  return NULL;
}

static TType *check_name(Sema *S, Ast *e) {
  Sym *s = find_local(S, e->name);
  if (s) return s->ty;
  Const *c = find_const(S, e->name);
  if (c) return c->ty;
  if (sema_find_fn(S->p, e->name)) {
    diag_error(S->cx, e->loc, "'%s' is a function: call it as %s(...)", e->name, e->name);
    return poison(S);
  }
  diag_error(S->cx, e->loc, "use of undeclared name '%s'", e->name);
  return poison(S);
}

static bool ident_char(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// The location of a declaration's name inside its whole-construct loc.
static Loc name_loc(const Ast *d) {
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
static const char *const binop_def[BIN_COUNT] = {
    [BIN_ADD] = "add", [BIN_SUB] = "sub", [BIN_MUL] = "mul", [BIN_DIV] = "div", [BIN_FLOORDIV] = "floor_divide",
    [BIN_MOD] = "remainder", [BIN_POW] = "pow", [BIN_MATMUL] = "matmul", [BIN_EQ] = "eq", [BIN_NE] = "ne",
    [BIN_LT] = "lt", [BIN_LE] = "le", [BIN_GT] = "gt", [BIN_GE] = "ge"};
static const char *const binop_sym[BIN_COUNT] = {
    [BIN_ADD] = "+", [BIN_SUB] = "-", [BIN_MUL] = "*", [BIN_DIV] = "/", [BIN_FLOORDIV] = "//", [BIN_MOD] = "%",
    [BIN_POW] = "**", [BIN_MATMUL] = "@", [BIN_EQ] = "==", [BIN_NE] = "!=", [BIN_LT] = "<", [BIN_LE] = "<=",
    [BIN_GT] = ">", [BIN_GE] = ">="};

static TType *check_binary(Sema *S, Ast *e) {
  TType *a = expr(S, e->lhs), *b = expr(S, e->rhs);
  if (is_poison(a) || is_poison(b)) return poison(S);
  int op = e->op;
  TD_ASSERT(op >= 0 && op < BIN_COUNT);
  bool oka = is_tensor(a) || is_scalar(a), okb = is_tensor(b) || is_scalar(b);
  if (!oka || !okb || (op == BIN_MATMUL && (!is_tensor(a) || !is_tensor(b)))) {
    diag_error(S->cx, e->oploc, "unsupported operand type(s) for %s: '%s' and '%s'", binop_sym[op], py_type_name(a),
               py_type_name(b));
    return poison(S);
  }
  if (is_scalar(a) && is_scalar(b)) {
    TType *r = fold_binary(S, e->oploc, op, a, b);
    return r ? r : poison(S);
  }
  const Def *d = builtin_find(binop_def[op]);
  e->bi = &d->b;
  if (op == BIN_MATMUL) return matmul_node(S, e, e->lhs, e->rhs, e->oploc);
  return binary_node(S, e, d->b.op, e->lhs, e->rhs, e->oploc);
}

static TType *check_unary(Sema *S, Ast *e) {
  TType *a = expr(S, e->lhs);
  if (is_poison(a)) return poison(S);
  if (is_scalar(a)) {
    TType *r = fold_unary(S, e->oploc, e->op, a);
    return r ? r : poison(S);
  }
  if (!is_tensor(a)) {
    diag_error(S->cx, e->oploc, "bad operand type for unary %s: '%s'", e->op == UN_NEG ? "-" : "~", py_type_name(a));
    return poison(S);
  }
  const char *name = e->op == UN_NEG ? "neg" : a->dtype == DT_BOOL ? "logical_not" : "bitwise_not";
  const Def *d = builtin_find(name);
  e->bi = &d->b;
  return unary_node(S, e, d->b.op, e->lhs, e->oploc);
}

static TType *inline_call(Sema *S, Ast *e, Ast *fn);

static TType *check_call(Sema *S, Ast *e) {
  if (!e->lhs && !find_local(S, e->name) && !find_const(S, e->name)) {
    Ast *fn = sema_find_fn(S->p, e->name);
    if (fn) return inline_call(S, e, fn);
  }
  bool bad = false;
  TType *self = e->lhs ? expr(S, e->lhs) : NULL;
  if (self && is_poison(self)) bad = true;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    TType *t = expr(S, a->kind == AST_KWARG ? a->rhs : a);
    if (a->kind == AST_KWARG) a->ty = t;
    if (is_poison(t)) bad = true;
  }
  const Def *d = builtin_find(e->name);
  if (d && !(d->forms & (e->lhs ? F_METH : F_FN))) d = NULL;
  if (!d) {
    if (bad) return poison(S);
    if (e->lhs && is_tensor(self) && !strcmp(e->name, "T"))  // x.T() calls the tensor x.T
      diag_error(S->cx, e->oploc, "'Tensor' object is not callable");
    else if (e->lhs)
      diag_error(S->cx, e->oploc, "'%s' object has no attribute '%s'", py_type_name(self), e->name);
    else
      diag_error(S->cx, call_loc(e), "use of undeclared name '%s'", e->name);
    return poison(S);
  }
  if (bad) return poison(S);
  if (self && !is_tensor(self)) {
    diag_error(S->cx, e->oploc, "'%s' object has no attribute '%s'", py_type_name(self), e->name);
    return poison(S);
  }
  e->bi = &d->b;
  if (!bind_args(S, e, d, e->lhs)) return poison(S);
  if (!strncmp(d->b.sig, "input", 5) && d->check != ck_unary && d->check != ck_binary &&
      !get_tensor(S, e, e->bargs[0], "input"))
    return poison(S);
  return d->check(S, e, d);
}

static TType *check_attr(Sema *S, Ast *e) {
  TType *self = expr(S, e->lhs);
  if (is_poison(self)) return poison(S);
  if (!strcmp(e->name, "T") && is_tensor(self)) {
    const Def *d = builtin_find("T");
    e->bi = &d->b;
    e->bargs = arena_alloc(&S->cx->arena, sizeof(Ast *));
    e->bargs[0] = e->lhs;
    e->nbargs = 1;
    return ck_T(S, e, d);
  }
  if (is_tensor(self) && builtin_find(e->name))
    diag_error(S->cx, e->oploc, "'%s' is a method: call it as .%s(...)", e->name, e->name);
  else
    diag_error(S->cx, e->oploc, "'%s' object has no attribute '%s'", py_type_name(self), e->name);
  return poison(S);
}

static TType *check_list(Sema *S, Ast *e) {
  TType *t = ty_new(S, TY_LIST);
  t->nelem = e->list.len;
  t->elems = arena_alloc(&S->cx->arena, sizeof(TType *) * (size_t)(t->nelem + 1));
  for (int i = 0; i < e->list.len; i++) {
    t->elems[i] = expr(S, e->list.data[i]);
    if (is_poison(t->elems[i])) return poison(S);
  }
  return t;
}

static TType *expr(Sema *S, Ast *e) {
  TType *t;
  switch (e->kind) {
  case AST_INT: t = ty_int(S, e->ival); break;
  case AST_FLOAT: t = ty_float(S, e->fval); break;
  case AST_BOOL: t = ty_bool(S, e->bval); break;
  case AST_NONE: t = ty_new(S, TY_NONE); break;
  case AST_DTYPE: t = ty_dtype(S, e->dtype); break;
  case AST_NAME: t = check_name(S, e); break;
  case AST_UNARY: t = check_unary(S, e); break;
  case AST_BINARY: t = check_binary(S, e); break;
  case AST_CALL: t = check_call(S, e); break;
  case AST_ATTR: t = check_attr(S, e); break;
  case AST_INDEX: t = check_index(S, e); break;
  case AST_LIST: t = check_list(S, e); break;
  case AST_SLICE:
  case AST_ELLIPSIS:
    diag_error(S->cx, e->loc, "'%s' is only allowed inside an index [...]", e->kind == AST_SLICE ? ":" : "...");
    t = poison(S);
    break;
  default:
    diag_error(S->cx, e->loc, "expected an expression");
    t = poison(S);
    break;
  }
  e->ty = t;
  return t;
}

// ============================================================================
// Stores (§7): x[...] = v, x[...] op= v, x op= v
// ============================================================================
// The variable a store target is written through (x in x.t()[0]).
static const Ast *root_name(const Ast *t) {
  while (t && t->kind != AST_NAME) t = t->lhs;
  return t;
}

static const char *target_name(const Ast *t) {
  const Ast *r = root_name(t);
  return r ? r->name : "tensor";
}

// PyTorch's partial-overlap check of an in-place write: both tensors non-overlapping
// and dense over one storage, their element ranges intersecting without being the
// same tensor (same range and strides). Other overlaps (a flip, strided views) are
// not errors; lowering reads such a value from a copy made before the write.
static bool partial_overlap(const TType *w, const TType *r) {
  if (w->storage != r->storage || view_numel(w->view) == 0 || view_numel(r->view) == 0)
    return false;
  if (!view_is_dense(w->view) || !view_is_dense(r->view))
    return false;
  int64_t wb = w->view.offset, we = wb + view_numel(w->view), rb = r->view.offset, re = rb + view_numel(r->view);
  if (wb == rb && we == re) {
    for (int i = 0; i < w->view.ndim && i < r->view.ndim; i++)
      if (w->view.strides[i] != r->view.strides[i])
        return true;
    return w->view.ndim != r->view.ndim;
  }
  return wb < re && rb < we;
}

static void check_store_common(Sema *S, Ast *st, Ast *target, Ast *rhs, int binop) {
  TType *t = target->ty, *v = rhs->ty;
  if (is_poison(t) || is_poison(v)) return;
  if (!is_tensor(t)) {
    diag_error(S->cx, target->loc, "cannot assign to an element of a %s", py_type_name(t));
    return;
  }
  if (target->bi && target->bi->kind == BK_NODE) {
    diag_error(S->cx, target->loc, "assignment through an index tensor is not supported");
    return;
  }
  if (!is_tensor(v) && !is_scalar(v)) {
    diag_error(S->cx, rhs->loc, "cannot assign a %s to a tensor", py_type_name(v));
    return;
  }
  const char *name = target_name(target);
  if (!t->writable) {
    diag_error(S->cx, target->loc, "cannot write to '%s': parameters are read-only unless declared 'mut'", name);
    const Ast *r = root_name(target);
    Sym *s = r ? find_local(S, r->name) : NULL;
    if (s) diag_note(S->cx, s->loc, "'%s' declared here", name);
    return;
  }
  for (int i = 0; i < t->view.ndim; i++)
    if (t->view.strides[i] == 0 && t->view.shape[i] > 1) {
      diag_error(S->cx, st->oploc, "unsupported operation: more than one element of the written-to tensor refers to a "
                 "single memory location. Please clone() the tensor before performing the operation.");
      return;
    }
  if (is_tensor(v) && partial_overlap(t, v)) {
    diag_error(S->cx, st->oploc, "unsupported operation: some elements of the input tensor and the written-to tensor "
               "refer to a single memory location. Please clone() the tensor before performing the operation.");
    return;
  }
  static const Op aug_op[BIN_COUNT] = {[BIN_ADD] = OP_ADD, [BIN_SUB] = OP_SUB, [BIN_MUL] = OP_MUL, [BIN_DIV] = OP_DIV};
  if (binop >= 0) {
    TD_ASSERT(binop <= BIN_DIV);
    Op op = aug_op[binop];
    DType dt;
    if (!binary_dtype(S, st->oploc, op, t, v, &dt)) return;
    if (!can_cast(dt, t->dtype)) {
      diag_error(S->cx, st->oploc, "result type %s can't be cast to the desired output type %s", torch_name(dt),
                 torch_name(t->dtype));
      return;
    }
    if (is_tensor(v)) {
      int nd = t->view.ndim;
      int64_t shape[TD_MAX_DIMS];
      memcpy(shape, t->view.shape, sizeof(int64_t) * (size_t)nd);
      if (!broadcast(S, st->oploc, &nd, shape, v->view.ndim, v->view.shape)) return;
      if (!same_shape(nd, shape, t->view.ndim, t->view.shape)) {
        diag_error(S->cx, st->oploc, "output with shape %s doesn't match the broadcast shape %s",
                   shape_str(S, t->view.ndim, t->view.shape), shape_str(S, nd, shape));
        return;
      }
    }
    st->attr.aug = op;
  } else {
    if (is_tensor(v)) {  // PyTorch's setitem drops leading size-1 dims of the value, then expands
      TType tmp = *v;
      while (tmp.view.ndim > t->view.ndim && tmp.view.shape[0] == 1) tmp.view = view_select(tmp.view, 0, 0);
      View out;
      if (!expand_to(S, rhs->loc, &tmp, t->view.ndim, t->view.shape, &out)) return;
    }
    st->attr.aug = OP_COUNT;
  }
  st->bi = &def_store.b;
  Ast *ops[2] = {target, rhs};
  set_operands(S, st, ops, 2);
  st->ty = t;
}

// ============================================================================
// Statements and function bodies
// ============================================================================
static TType *param_type(Sema *S, Ast *ty);

typedef struct Body {
  Ast *fn;          // the function (or its inlined clone)
  TType *ret;       // what the return statement gave
  bool returned;
} Body;

static void check_return(Sema *S, Body *B, Ast *st) {
  Ast *fn = B->fn;
  int n = st->list.len;
  TType **ts = arena_alloc(&S->cx->arena, sizeof(TType *) * (size_t)(n + 1));
  bool bad = false;
  for (int i = 0; i < n; i++) {
    ts[i] = expr(S, st->list.data[i]);
    if (is_poison(ts[i])) bad = true;
  }
  bool spread = n == 1 && ts[0]->kind == TY_TUPLE;  // return g(x), where g returns a tuple
  if (spread) {
    n = ts[0]->nelem;
    ts = ts[0]->elems;
  }
  if (n != fn->rets.len) {
    diag_error(S->cx, st->loc, "'%s' returns %d value%s but its type declares %d", fn->name, n, n == 1 ? "" : "s",
               fn->rets.len);
    bad = true;
  }
  for (int i = 0; i < n && i < fn->rets.len && !bad; i++) {
    Ast *v = st->list.data[spread ? 0 : i];
    TType *want = param_type(S, fn->rets.data[i]);
    if (is_poison(want)) {
      bad = true;
    } else if (!is_tensor(ts[i])) {
      diag_error(S->cx, v->loc, "'%s' must return a tensor %s, not a %s", fn->name, type_str(S, want),
                 py_type_name(ts[i]));
      bad = true;
    } else if (ts[i]->dtype != want->dtype ||
               !same_shape(ts[i]->view.ndim, ts[i]->view.shape, want->view.ndim, want->view.shape)) {
      diag_error(S->cx, v->loc, "return type mismatch: '%s' is declared to return %s but this is %s", fn->name,
                 type_str(S, want), type_str(S, ts[i]));
      diag_note(S->cx, fn->rets.data[i]->loc, "declared here");
      bad = true;
    }
  }
  if (bad) {
    B->ret = poison(S);
  } else if (n == 1 && !fn->ret_tuple) {
    B->ret = ts[0];
  } else {
    TType *t = ty_new(S, TY_TUPLE);
    t->nelem = n;
    t->elems = ts;
    B->ret = t;
  }
  st->ty = B->ret;
}

static void check_assign(Sema *S, Ast *st) {
  TType *v = expr(S, st->rhs);
  int n = st->list.len;
  if (v->kind == TY_LIST || v->kind == TY_NONE || v->kind == TY_DTYPE) {  // names hold tensors and numbers
    diag_error(S->cx, st->rhs->loc, "cannot assign a %s to a name: write it where it is used", py_type_name(v));
    v = poison(S);
  } else if (v->kind == TY_TUPLE && n == 1) {  // names hold one tensor: a tuple result is unpacked
    diag_error(S->cx, st->rhs->loc, "cannot assign a tuple of %d values to one name '%s': unpack it (a, b = ...)",
               v->nelem, st->list.data[0]->name);
    v = poison(S);
  }
  if (n == 1) {
    Ast *t = st->list.data[0];
    t->ty = v;
    bind_name(S, t->name, v, t->loc);
    return;
  }
  bool ok = is_poison(v);
  if (!ok && (v->kind == TY_TUPLE || v->kind == TY_LIST)) {
    if (v->nelem > n) diag_error(S->cx, st->oploc, "too many values to unpack (expected %d)", n);
    else if (v->nelem < n) diag_error(S->cx, st->oploc, "not enough values to unpack (expected %d, got %d)", n, v->nelem);
    else ok = true;
  } else if (!ok) {
    diag_error(S->cx, st->oploc, "cannot unpack non-iterable %s object", py_type_name(v));
  }
  for (int i = 0; i < n; i++) {
    Ast *t = st->list.data[i];
    t->ty = ok && !is_poison(v) ? v->elems[i] : poison(S);
    bind_name(S, t->name, t->ty, t->loc);
  }
}

static void check_augassign(Sema *S, Ast *st) {
  TType *t = expr(S, st->lhs), *v = expr(S, st->rhs);
  if (is_poison(t) || is_poison(v)) return;
  if (is_scalar(t) && is_scalar(v)) {  // n += 1 rebinds a Python scalar
    TType *r = fold_binary(S, st->oploc, st->op, t, v);
    if (r) bind_name(S, st->lhs->name, r, st->lhs->loc);
    else bind_name(S, st->lhs->name, poison(S), st->lhs->loc);
    st->ty = r;
    return;
  }
  if (is_scalar(t) && is_tensor(v)) {
    diag_error(S->cx, st->oploc, "'%s' is a Python scalar and cannot be updated in place by a tensor: write %s = %s %s ...",
               st->lhs->name, st->lhs->name, st->lhs->name, binop_sym[st->op]);
    bind_name(S, st->lhs->name, poison(S), st->lhs->loc);
    return;
  }
  check_store_common(S, st, st->lhs, st->rhs, st->op);
}

static void check_store(Sema *S, Ast *st) {
  expr(S, st->lhs);
  expr(S, st->rhs);
  check_store_common(S, st, st->lhs, st->rhs, st->op);
}

static void check_stmt(Sema *S, Body *B, Ast *st) {
  switch (st->kind) {
  case AST_ASSIGN: check_assign(S, st); break;
  case AST_AUGASSIGN: check_augassign(S, st); break;
  case AST_STORE: check_store(S, st); break;
  case AST_RETURN:
    check_return(S, B, st);
    B->returned = true;
    break;
  default: diag_error(S->cx, st->loc, "expected a statement"); break;
  }
}

// Check fn's body with its parameters bound to params; returns what it returns.
static TType *check_body(Sema *S, Ast *fn, TType **params) {
  Sym *saved = S->scope;
  S->scope = NULL;
  for (int i = 0; i < fn->list.len; i++) bind_name(S, fn->list.data[i]->name, params[i], name_loc(fn->list.data[i]));
  Body B = {fn, NULL, false};
  bool warned = false;
  for (int i = 0; i < fn->body.len; i++) {
    Ast *st = fn->body.data[i];
    if (B.returned && !warned) {
      diag_error(S->cx, st->loc, "unreachable statement after 'return'");
      warned = true;
    }
    check_stmt(S, &B, st);
  }
  if (!B.returned) diag_error(S->cx, name_loc(fn), "function '%s' must end with a 'return'", fn->name);
  S->scope = saved;
  return B.ret ? B.ret : poison(S);
}

// ============================================================================
// Declared types, inlining of calls, entry points
// ============================================================================
// dtype[d0, d1, ...] with constant dims: a contiguous tensor type (cached on the node).
static TType *param_type(Sema *S, Ast *ty) {
  if (ty->ty) return ty->ty;
  Sym *saved = S->scope;
  S->scope = NULL;  // dims see constants only
  int64_t shape[MAX_LIST] = {0};
  bool ok = true;
  int n = ty->list.len;
  for (int i = 0; i < n && i < MAX_LIST; i++) {
    Ast *d = ty->list.data[i];
    TType *t = expr(S, d);
    if (is_poison(t)) {
      ok = false;
    } else if (!is_scalar(t) || t->dtype != DT_I64) {
      diag_error(S->cx, d->loc, "dimension sizes must be integer constants, not %s", py_type_name(t));
      ok = false;
    } else if (t->ival < 0) {
      diag_error(S->cx, d->loc, "Trying to create tensor with negative dimension %" PRId64 ": %s", t->ival,
                 shape_str(S, 1, &t->ival));
      ok = false;
    } else {
      shape[i] = t->ival;
    }
  }
  S->scope = saved;
  if (ok && !check_rank(S, ty->loc, n)) ok = false;
  if (ok && !check_numel(S, ty->loc, n, shape)) ok = false;
  TType *r;
  if (!ok) {
    r = poison(S);
  } else {
    r = ty_new(S, TY_TENSOR);
    r->dtype = ty->dtype;
    r->view = view_contiguous(n, shape);
    r->storage_numel = view_numel(r->view);
    r->storage = -1;
  }
  ty->ty = r;
  return r;
}

static bool on_stack(Sema *S, const Ast *fn) {
  for (int i = 0; i < S->stack.len; i++)
    if (S->stack.data[i] == fn) return true;
  return false;
}

static TType *inline_call(Sema *S, Ast *e, Ast *fn) {
  bool bad = false;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    TType *t = expr(S, a->kind == AST_KWARG ? a->rhs : a);
    if (a->kind == AST_KWARG) a->ty = t;
    if (is_poison(t)) bad = true;
  }
  if (on_stack(S, fn)) {
    diag_error(S->cx, e->oploc.end > e->oploc.begin ? e->oploc : e->loc, "recursive call to '%s'", fn->name);
    return poison(S);
  }
  // bind arguments to parameters, positionally then by name
  int np = fn->list.len;
  Ast **args = arena_alloc(&S->cx->arena, sizeof(Ast *) * (size_t)(np + 1));
  int k = 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG) continue;
    if (k >= np) {
      int given = 0;
      for (int j = 0; j < e->list.len; j++) given += e->list.data[j]->kind != AST_KWARG;
      diag_error(S->cx, a->loc, "%s() takes %d positional argument%s but %d were given", fn->name, np,
                 np == 1 ? "" : "s", given);
      return poison(S);
    }
    args[k++] = a;
  }
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind != AST_KWARG) continue;
    int j = 0;
    while (j < np && strcmp(fn->list.data[j]->name, a->name)) j++;
    if (j == np) {
      diag_error(S->cx, a->loc, "%s() got an unexpected keyword argument '%s'", fn->name, a->name);
      return poison(S);
    }
    if (args[j]) {
      diag_error(S->cx, a->loc, "%s() got multiple values for argument '%s'", fn->name, a->name);
      return poison(S);
    }
    args[j] = a->rhs;
  }
  for (int j = 0; j < np; j++)
    if (!args[j]) {
      diag_error(S->cx, call_loc(e), "%s() missing 1 required positional argument: '%s'", fn->name,
                 fn->list.data[j]->name);
      return poison(S);
    }
  if (bad) return poison(S);
  TType **pts = arena_alloc(&S->cx->arena, sizeof(TType *) * (size_t)(np + 1));
  for (int j = 0; j < np; j++) {
    Ast *p = fn->list.data[j];
    TType *want = param_type(S, p->type), *got = args[j]->ty;
    if (is_poison(want)) return poison(S);
    if (!is_tensor(got) || got->dtype != want->dtype ||
        !same_shape(got->view.ndim, got->view.shape, want->view.ndim, want->view.shape)) {
      diag_error(S->cx, args[j]->loc, "argument '%s' of '%s' must be %s, not %s", p->name, fn->name,
                 type_str(S, want), type_str(S, got));
      diag_note(S->cx, name_loc(p), "'%s' declared here", p->name);
      bad = true;
      continue;
    }
    if (p->mut && !got->writable) {
      diag_error(S->cx, args[j]->loc, "cannot write to '%s': parameters are read-only unless declared 'mut'",
                 target_name(args[j]));
      diag_note(S->cx, name_loc(p), "'%s' of '%s' is declared 'mut'", p->name, fn->name);
      bad = true;
      continue;
    }
    pts[j] = ty_view_of(S, got, got->view);
    pts[j]->writable = got->writable && p->mut;
  }
  if (bad) return poison(S);
  Ast *clone = ast_clone(S->cx, fn);
  e->inlined = clone;
  set_operands(S, e, args, np);
  vec_push(&S->cx->arena, &S->stack, fn);
  int before = S->cx->nerrors;
  TType *r = check_body(S, clone, pts);
  S->stack.len--;
  if (S->cx->nerrors > before) diag_note(S->cx, call_loc(e), "in the call to '%s' inlined here", fn->name);
  return r;
}

// Every function is checked as an entry point: contiguous parameters, storage = index.
static void check_entry(Sema *S, Ast *fn) {
  int np = fn->list.len;
  TType **pts = arena_alloc(&S->cx->arena, sizeof(TType *) * (size_t)(np + 1));
  for (int i = 0; i < np; i++) {
    Ast *p = fn->list.data[i];
    for (int j = 0; j < i; j++)
      if (!strcmp(fn->list.data[j]->name, p->name))
        diag_error(S->cx, name_loc(p), "duplicate parameter '%s' in function '%s'", p->name, fn->name);
    TType *t = param_type(S, p->type);
    if (!is_poison(t)) {
      t = ty_view_of(S, t, t->view);
      t->storage = i;
      t->writable = p->mut;
    }
    pts[i] = t;
    p->ty = t;
  }
  for (int i = 0; i < fn->rets.len; i++) param_type(S, fn->rets.data[i]);
  S->nstorage = np;
  S->entry = fn;
  vec_push(&S->cx->arena, &S->stack, fn);
  fn->ty = check_body(S, fn, pts);
  S->stack.len--;
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

static void check_fn_name(Sema *S, Ast *fn) {
  const char *n = fn->name, *why = NULL;
  if (!strcmp(n, "main")) why = "it is the C program's entry point";
  else if (!strncmp(n, "tdsl_", 5)) why = "names beginning with 'tdsl_' belong to the runtime";
  else if (in_list(c_keywords, n)) why = "it is a C keyword";
  else if (is_op_name(n)) why = "it is the name of a tensor op";
  else if (is_libc_name(n)) why = "it is a C library function";
  if (why) diag_error(S->cx, name_loc(fn), "invalid function name '%s': %s", n, why);
}

static void check_const(Sema *S, Ast *c) {
  Loc nl = name_loc(c);
  if (find_const(S, c->name) || sema_find_fn(S->p, c->name)) {
    diag_error(S->cx, nl, "redefinition of '%s'", c->name);
    return;
  }
  Sym *saved = S->scope;
  S->scope = NULL;
  TType *t = expr(S, c->rhs);
  S->scope = saved;
  if (!is_poison(t) && (!is_scalar(t) || t->dtype == DT_BOOL)) {
    diag_error(S->cx, c->rhs->loc, "const '%s' must be a compile-time int or float, not %s", c->name,
               t->kind == TY_TENSOR ? "a tensor" : py_type_name(t));
    t = poison(S);
  }
  c->ty = t;
  Const k = {c->name, t, nl};
  vec_push(&S->cx->arena, &S->consts, k);
}

Ast *sema_find_fn(const Program *p, const char *name) {
  for (int i = 0; i < p->fns.len; i++)
    if (!strcmp(p->fns.data[i]->name, name)) return p->fns.data[i];
  return NULL;
}

bool sema_check(Ctx *cx, Program *p) {
  Sema S = {0};
  S.cx = cx;
  S.p = p;
  int before = cx->nerrors;
  p->fns = (AstList){0};
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
    check_fn_name(&S, d);
    vec_push(&cx->arena, &p->fns, d);
  }
  for (int i = 0; i < p->ast->list.len; i++) {
    Ast *d = p->ast->list.data[i];
    if (d->kind == AST_CONST) check_const(&S, d);
  }
  for (int i = 0; i < p->fns.len; i++) check_entry(&S, p->fns.data[i]);
  return cx->nerrors == before;
}
