// frontend/sema_sort.c: sort, argsort, msort, topk, kthvalue and median. Each is built
// from one sort node pair — OP_SORT (the values) and OP_ARGSORT (the indices) of one
// input along its last dim, which fusion computes in one kernel (ir/sort.c) and of which
// lowering drops the one nothing reads — and views of it: the sorted dim is first moved
// last (movedim) and back, topk narrows it to k, kthvalue and median select one
// element of it. topk and kthvalue ask for the first k only (NodeAttr.first). A result that is a moved view is copied contiguous, as PyTorch returns
// it. PyTorch 1.13's checks and messages; dtypes as its CUDA kernels take them (sort,
// argsort, msort and median() every dtype; topk, kthvalue and median(dim) no bool).
#include "frontend/sema_internal.h"

#include <math.h>
#include <string.h>

static const char *const fields[] = {"values", "indices"};

// The sort node `builtin` ("sort": values, "argsort": indices) of x along its last dim.
static Ast *sort_part(Sema *sema, const Ast *e, const char *builtin, Ast *x, bool descending) {
  Ast *n = part(sema, e, builtin);
  const View *v = &x->ty->view;
  n->attr.dim = v->ndim ? v->ndim - 1 : 0;
  n->attr.descending = descending;
  set_operand1(sema, n, x);
  n->ty = ty_fresh(sema, n->bi->op == OP_SORT ? x->ty->dtype : DT_I64, v->ndim, v->shape);
  return n;
}

static Ast *call_ints(Sema *sema, const Ast *e, const char *builtin, Ast *x, int n, const int64_t *v) {
  Ast *args[4] = {x};
  for (int i = 0; i < n; i++) args[i + 1] = part_int(sema, e, v[i]);
  return part_call(sema, e, builtin, args, n + 1);
}

// x with dim a moved to the end (to: true) or back from it: a permuted view, or a
// reshape when the dims it moves past are all of size 1 (the same order of elements,
// and a result whose strides are the contiguous ones PyTorch reports).
static Ast *move(Sema *sema, const Ast *e, Ast *x, int a, bool to) {
  const View *v = &x->ty->view;
  int last = v->ndim - 1;
  if (v->ndim == 0 || a == last) return x;
  bool ones = true;
  for (int d = to ? a + 1 : a; d < (to ? v->ndim : last); d++) ones &= v->shape[d] == 1;
  if (!ones) return call_ints(sema, e, "movedim", x, 2, (int64_t[]){to ? a : last, to ? last : a});
  int64_t shape[TD_MAX_DIMS];
  for (int d = 0; d < v->ndim; d++) {
    int from = to ? (d < a ? d : d == last ? a : d + 1) : (d < a ? d : d == a ? last : d - 1);
    shape[d] = v->shape[from];
  }
  Ast *args[2] = {x, part_ints(sema, e, v->ndim, shape)};
  return part_call(sema, e, "reshape", args, 2);
}

static Ast *contiguous(Sema *sema, const Ast *e, Ast *x) { return part_call(sema, e, "contiguous", &x, 1); }

// e as the tuple (values, indices)
static TType *pair(Sema *sema, Ast *e, Ast *v, Ast *i) {
  if (is_poison(v->ty) || is_poison(i->ty)) return poison(sema);
  Ast *items[2] = {v, i};
  TType *t = part_seq(sema, e, TY_TUPLE, items, 2)->ty;
  set_operands(sema, e, items, 2);
  t->fields = fields;
  return t;
}

// The optional int argument i (default def); None is refused as PyTorch's parser does.
static bool int_arg(Sema *sema, const Ast *e, int i, const char *pname, int64_t def, int64_t *out) {
  Ast *a = i < e->nbargs ? e->bargs[i] : NULL;
  if (!a) {
    *out = def;
    return true;
  }
  return get_int(sema, e, a, pname, out);
}
static bool bool_arg(Sema *sema, const Ast *e, int i, const char *pname, bool def, bool *out) {
  Ast *a = i < e->nbargs ? e->bargs[i] : NULL;
  if (!a) {
    *out = def;
    return true;
  }
  return get_bool(sema, e, a, pname, out);
}

// input, then the dim of argument i (default -1), wrapped.
static TType *input_dim(Sema *sema, const Ast *e, int i, int *a) {
  TType *x = get_tensor(sema, e, e->bargs[0], "input");
  int64_t d;
  if (!x || !int_arg(sema, e, i, "dim", -1, &d)) return NULL;
  Ast *da = i < e->nbargs && e->bargs[i] ? e->bargs[i] : e->bargs[0];
  if (!wrap_dim(sema, da->loc, d, x->view.ndim, a)) return NULL;
  return x;
}

static bool no_bool(Sema *sema, const Ast *e, const TType *x, const char *kernel) {
  if (x->dtype != DT_BOOL) return true;
  diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for 'Bool'", kernel);
  return false;
}

static bool nonempty_dim(Sema *sema, const Ast *e, const TType *x, int a, const char *fname) {
  if (x->view.ndim == 0 || x->view.shape[a] != 0) return true;
  diag_error(sema->cx, call_loc(e), "%s(): Expected reduction dim %d to have non-zero size.", fname, a);
  return false;
}

// sort(input, dim=-1, descending=False, *, stable=False), argsort (the same parameters),
// msort(input): a sort along dim 0, its values.
TType *ck_sort(Sema *sema, Ast *e, const BuiltinDef *d) {
  bool msort = !strcmp(d->b.name, "msort");
  int a;
  bool desc, stable;
  TType *x = msort ? get_tensor(sema, e, e->bargs[0], "input") : input_dim(sema, e, 1, &a);
  if (!x || (!msort && (!bool_arg(sema, e, 2, "descending", false, &desc) ||
                        !bool_arg(sema, e, 3, "stable", false, &stable))))
    return poison(sema);
  if (msort) a = 0, desc = false;
  Ast *xm = move(sema, e, e->bargs[0], a, true);
  Ast *v = sort_part(sema, e, "sort", xm, desc), *i = sort_part(sema, e, "argsort", xm, desc);
  if (d->b.op == OP_ARGSORT) return become(sema, e, contiguous(sema, e, move(sema, e, i, a, false)));
  v = contiguous(sema, e, move(sema, e, v, a, false));
  if (msort) return become(sema, e, v);
  return pair(sema, e, v, contiguous(sema, e, move(sema, e, i, a, false)));
}

// topk(input, k, dim=-1, largest=True, sorted=True): the first k of a sort (sorted or
// not, the k come in order)
TType *ck_topk(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  int a;
  int64_t k;
  bool largest, sorted;
  TType *x = input_dim(sema, e, 2, &a);
  if (!x || !get_int(sema, e, e->bargs[1], "k", &k) || !bool_arg(sema, e, 3, "largest", true, &largest) ||
      !bool_arg(sema, e, 4, "sorted", true, &sorted))
    return poison(sema);
  int64_t n = x->view.ndim ? x->view.shape[a] : 1;
  if (k < 0 || k > n) {
    diag_error(sema->cx, e->bargs[1]->loc, "selected index k out of range");
    return poison(sema);
  }
  if (!no_bool(sema, e, x, "topk_out_cuda")) return poison(sema);
  Ast *xm = move(sema, e, e->bargs[0], a, true);
  Ast *v = sort_part(sema, e, "sort", xm, largest), *i = sort_part(sema, e, "argsort", xm, largest);
  v->attr.first = i->attr.first = k < n ? k : 0;  // only the first k are sorted
  if (x->view.ndim && k < n) {
    int64_t last = x->view.ndim - 1;
    v = call_ints(sema, e, "narrow", v, 3, (int64_t[]){last, 0, k});
    i = call_ints(sema, e, "narrow", i, 3, (int64_t[]){last, 0, k});
  }
  v = contiguous(sema, e, move(sema, e, v, a, false));
  i = contiguous(sema, e, move(sema, e, i, a, false));
  return pair(sema, e, v, i);
}

// Element k (0-based) of x's sort along dim a, values and indices, dim a kept as size 1
// with keepdim. median: a row holding NaN gives NaN, at its first NaN's index.
static TType *select_kth(Sema *sema, Ast *e, int a, int64_t k, bool keepdim, bool median) {
  Ast *x = e->bargs[0];
  int nd = x->ty->view.ndim;
  Ast *xm = move(sema, e, x, a, true);
  Ast *v = sort_part(sema, e, "sort", xm, false), *i = sort_part(sema, e, "argsort", xm, false);
  if (!median)  // kthvalue: the first k sorted (the median's NaN test reads the last)
    v->attr.first = i->attr.first = k + 1;
  if (nd == 0) return pair(sema, e, v, i);
  int64_t last = nd - 1, n = x->ty->view.shape[a];
  Ast *vk = call_ints(sema, e, "select", v, 2, (int64_t[]){last, k});
  Ast *ik = call_ints(sema, e, "select", i, 2, (int64_t[]){last, k});
  if (median && dtype_is_float(x->ty->dtype) && n > 1) {
    Ast *vl = call_ints(sema, e, "select", v, 2, (int64_t[]){last, n - 1});
    Ast *nan = part_call(sema, e, "isnan", &vl, 1);
    Ast *xn = part_cast(sema, e, part_call(sema, e, "isnan", &x, 1), "int");
    Ast *first = call_ints(sema, e, "argmax", xn, 1, (int64_t[]){a});
    vk = part_call(sema, e, "where", (Ast *[]){nan, vl, vk}, 3);
    ik = part_call(sema, e, "where", (Ast *[]){nan, first, ik}, 3);
  }
  if (keepdim) {
    vk = call_ints(sema, e, "unsqueeze", vk, 1, (int64_t[]){a});
    ik = call_ints(sema, e, "unsqueeze", ik, 1, (int64_t[]){a});
  }
  return pair(sema, e, contiguous(sema, e, vk), contiguous(sema, e, ik));
}

// kthvalue(input, k, dim=-1, keepdim=False)
TType *ck_kthvalue(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  int a;
  int64_t k;
  bool keepdim;
  TType *x = input_dim(sema, e, 2, &a);
  if (!x || !get_int(sema, e, e->bargs[1], "k", &k) || !bool_arg(sema, e, 3, "keepdim", false, &keepdim) ||
      !nonempty_dim(sema, e, x, a, "kthvalue"))
    return poison(sema);
  int64_t n = x->view.ndim ? x->view.shape[a] : 1;
  if (k < 1 || k > n) {
    diag_error(sema->cx, e->bargs[1]->loc, "kthvalue(): selected number k out of range for dimension %d", a);
    return poison(sema);
  }
  if (!no_bool(sema, e, x, "kthvalue_cuda")) return poison(sema);
  return select_kth(sema, e, a, k - 1, keepdim, false);
}

// median(input) -> the lower middle value of all elements (NaN if any is NaN);
// median(input, dim, keepdim=False) -> (values, indices)
TType *ck_median(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  TType *x = get_tensor(sema, e, e->bargs[0], "input");
  if (!x) return poison(sema);
  Ast *da = e->nbargs > 1 ? e->bargs[1] : NULL;
  if (!da) {
    if (barg(e, 2)) {
      diag_error(sema->cx, e->bargs[2]->loc, "median(): 'keepdim' is given without a 'dim'");
      return poison(sema);
    }
    int64_t n = view_numel(x->view);
    Ast *xa = e->bargs[0];
    if (n == 0) {  // PyTorch: NaN
      if (!dtype_is_float(x->dtype)) {
        diag_error(sema->cx, call_loc(e), "median() of an empty integer tensor has no value");
        return poison(sema);
      }
      Ast *size = part_seq(sema, e, TY_LIST, NULL, 0);
      return become(sema, e, part_call(sema, e, "new_full", (Ast *[]){xa, size, part_float(sema, e, NAN)}, 3));
    }
    Ast *flat = call_ints(sema, e, "reshape", xa, 1, (int64_t[]){-1});
    Ast *v = sort_part(sema, e, "sort", flat, false);
    Ast *mid = call_ints(sema, e, "select", v, 2, (int64_t[]){0, (n - 1) / 2});
    if (dtype_is_float(x->dtype) && n > 1) {
      Ast *last = call_ints(sema, e, "select", v, 2, (int64_t[]){0, n - 1});
      Ast *nan = part_call(sema, e, "isnan", &last, 1);
      mid = part_call(sema, e, "where", (Ast *[]){nan, last, mid}, 3);
    }
    return become(sema, e, contiguous(sema, e, mid));
  }
  if (da->ty->kind == TY_NONE) {
    diag_error(sema->cx, da->loc, "Please look up dimensions by name, got: name = None.");
    return poison(sema);
  }
  int a;
  bool keepdim;
  if (!input_dim(sema, e, 1, &a) || !bool_arg(sema, e, 2, "keepdim", false, &keepdim) ||
      !nonempty_dim(sema, e, x, a, "median") || !no_bool(sema, e, x, "median_out_impl"))
    return poison(sema);
  int64_t n = x->view.ndim ? x->view.shape[a] : 1;
  return select_kth(sema, e, a, (n - 1) / 2, keepdim, true);
}
