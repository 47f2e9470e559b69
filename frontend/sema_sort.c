// frontend/sema_sort.c: sort, argsort, msort, topk, kthvalue and median: PyTorch 1.13's
// checks and messages; dtypes as its CUDA kernels take them (sort, argsort, msort and
// median() every dtype; topk, kthvalue and median(dim) no bool). ir/build_sort.c builds
// them of one sort node pair and its views (SortArgs).
#include "frontend/sema_internal.h"

#include <math.h>
#include <string.h>

static const char *const fields[] = {"values", "indices"};

// e's call of builder fn on its input with args: one result, or (values, indices)
static TType *sort_call(Sema *sema, Ast *e, BuildFn fn, SortArgs a) {
  TType *t = built(sema, e, fn, KEEP(sema, a), e->bargs, 1);
  if (t->kind == TY_TUPLE) t->fields = fields;
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
  bool msort = d->variant == SORT_MSORT;
  int a;
  bool desc, stable;
  TType *x = msort ? get_tensor(sema, e, e->bargs[0], "input") : input_dim(sema, e, 1, &a);
  if (!x || (!msort && (!bool_arg(sema, e, 2, "descending", false, &desc) ||
                        !bool_arg(sema, e, 3, "stable", false, &stable))))
    return poison(sema);
  if (msort) a = 0, desc = false;
  return sort_call(sema, e, d->b.build, (SortArgs){.kind = d->variant, .dim = a, .descending = desc});
}

// topk(input, k, dim=-1, largest=True, sorted=True): the first k of a sort (sorted or
// not, the k come in order)
TType *ck_topk(Sema *sema, Ast *e, const BuiltinDef *d) {
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
  return sort_call(sema, e, d->b.build, (SortArgs){.kind = SORT_TOPK, .dim = a, .descending = largest, .k = k});
}

// kthvalue(input, k, dim=-1, keepdim=False)
TType *ck_kthvalue(Sema *sema, Ast *e, const BuiltinDef *d) {
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
  return sort_call(sema, e, d->b.build, (SortArgs){.kind = SORT_KTHVALUE, .dim = a, .k = k - 1, .keepdim = keepdim});
}

// median(input) -> the lower middle value of all elements (NaN if any is NaN);
// median(input, dim, keepdim=False) -> (values, indices)
TType *ck_median(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *x = get_tensor(sema, e, e->bargs[0], "input");
  if (!x) return poison(sema);
  Ast *da = e->nbargs > 1 ? e->bargs[1] : NULL;
  if (!da) {
    if (barg(e, 2)) {
      diag_error(sema->cx, e->bargs[2]->loc, "median(): 'keepdim' is given without a 'dim'");
      return poison(sema);
    }
    if (view_numel(x->view) == 0 && !dtype_is_float(x->dtype)) {  // PyTorch: NaN
      diag_error(sema->cx, call_loc(e), "median() of an empty integer tensor has no value");
      return poison(sema);
    }
    return sort_call(sema, e, build_median_all, (SortArgs){.kind = SORT_MEDIAN});
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
  return sort_call(sema, e, d->b.build, (SortArgs){.kind = SORT_MEDIAN, .dim = a, .k = (n - 1) / 2, .keepdim = keepdim});
}
