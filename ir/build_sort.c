// ir/build_sort.c: sort, argsort, msort, topk, kthvalue and median (ir/build.h). Each is
// one sort node pair — OP_SORT (the values) and OP_ARGSORT (the indices) of one input
// along its last dim, which fusion computes in one kernel (ir/sort.c); a pair member no
// result reads is not made — and views of it: the sorted dim is first moved last
// (movedim) and back, topk narrows it to k, kthvalue and median select one element of
// it. topk and kthvalue ask for the first k only (NodeAttr.first). A result that is a
// moved view is copied contiguous, as PyTorch returns it.
// Invariant: operand 0 is the input; the front end has checked k and the dim.
#include "ir/build.h"

#include <math.h>

static const SortArgs *sa(const void *args) { return args; }

// x with dim a moved to the end (to: true) or back from it: a permuted view, or a
// reshape when the dims it moves past are all of size 1 (the same order of elements,
// and a result whose strides are the contiguous ones PyTorch reports).
static Value *move(Builder *b, Value *x, int a, bool to) {
  const View *v = &x->view;
  int last = v->ndim - 1;
  if (v->ndim == 0 || a == last) return x;
  bool ones = true;
  for (int d = to ? a + 1 : a; d < (to ? v->ndim : last); d++) ones &= v->shape[d] == 1;
  if (!ones) {
    int src = to ? a : last, dst = to ? last : a;
    return build_movedim(b, x, 1, &src, &dst);
  }
  int64_t shape[TD_MAX_DIMS];
  for (int d = 0; d < v->ndim; d++) {
    int from = to ? (d < a ? d : d == last ? a : d + 1) : (d < a ? d : d == a ? last : d - 1);
    shape[d] = v->shape[from];
  }
  return build_reshape(b, x, v->ndim, shape);
}

// the sorted values or indices (op) moved back to dim a, contiguous
static Value *back(Builder *b, Value *s, int a) { return build_contiguous(b, move(b, s, a, false)); }

int build_sort_dim(Builder *b, const void *args, Value **out) {
  const SortArgs *s = sa(args);
  int a = s->dim;
  Value *xm = move(b, b_in(b, 0), a, true);
  if (s->kind == SORT_ARGSORT) {
    out[0] = back(b, build_sort(b, OP_ARGSORT, xm, s->descending, 0), a);
    return 1;
  }
  out[0] = back(b, build_sort(b, OP_SORT, xm, s->descending, 0), a);
  if (s->kind == SORT_MSORT) return 1;
  out[1] = back(b, build_sort(b, OP_ARGSORT, xm, s->descending, 0), a);
  return 2;
}

// the first k of a sort (sorted or not, the k come in order)
int build_topk(Builder *b, const void *args, Value **out) {
  const SortArgs *s = sa(args);
  int a = s->dim;
  Value *x = b_in(b, 0), *xm = move(b, x, a, true);
  int64_t n = x->view.ndim ? x->view.shape[a] : 1, first = s->k < n ? s->k : 0;  // only the first k are sorted
  Value *v = build_sort(b, OP_SORT, xm, s->descending, first), *i = build_sort(b, OP_ARGSORT, xm, s->descending, first);
  if (x->view.ndim && s->k < n) {
    int last = x->view.ndim - 1;
    v = build_narrow(b, v, last, 0, s->k);
    i = build_narrow(b, i, last, 0, s->k);
  }
  out[0] = back(b, v, a);
  out[1] = back(b, i, a);
  return 2;
}

// Element k (0-based) of x's sort along dim a, values and indices, dim a kept as size 1
// with keepdim. median: a row holding NaN gives NaN, at its first NaN's index.
int build_kth(Builder *b, const void *args, Value **out) {
  const SortArgs *s = sa(args);
  int a = s->dim;
  bool median = s->kind == SORT_MEDIAN;
  Value *x = b_in(b, 0), *xm = move(b, x, a, true);
  int nd = x->view.ndim;
  int64_t first = median ? 0 : s->k + 1;  // kthvalue: the first k sorted (the median's NaN test reads the last)
  Value *v = build_sort(b, OP_SORT, xm, false, first), *i = build_sort(b, OP_ARGSORT, xm, false, first);
  if (nd == 0) {
    out[0] = v, out[1] = i;
    return 2;
  }
  int last = nd - 1;
  int64_t n = x->view.shape[a];
  Value *vk = build_select(b, v, last, s->k), *ik = build_select(b, i, last, s->k);
  if (median && dtype_is_float(x->dtype) && n > 1) {
    Value *vl = build_select(b, v, last, n - 1);
    Value *nan = b_bin(b, OP_NE, vl, vl);
    Value *first_nan = build_reduce_dim(b, OP_ARGMAX, build_cast(b, b_bin(b, OP_NE, x, x), DT_I32), a, false);
    vk = b_where(b, nan, vl, vk);
    ik = b_where(b, nan, first_nan, ik);
  }
  if (s->keepdim) {
    vk = build_unsqueeze(b, vk, a);
    ik = build_unsqueeze(b, ik, a);
  }
  out[0] = build_contiguous(b, vk);
  out[1] = build_contiguous(b, ik);
  return 2;
}

// median(input): the lower middle value of all elements (NaN if any is NaN; of none)
int build_median_all(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = b_in(b, 0);
  int64_t n = view_numel(x->view);
  if (n == 0) {
    out[0] = build_full(b, 0, NULL, b_f(b, NAN), x->dtype);
    return 1;
  }
  Value *v = build_sort(b, OP_SORT, build_reshape(b, x, 1, &n), false, 0);
  Value *mid = build_select(b, v, 0, (n - 1) / 2);
  if (dtype_is_float(x->dtype) && n > 1) {
    Value *last = build_select(b, v, 0, n - 1);
    mid = b_where(b, b_bin(b, OP_NE, last, last), last, mid);
  }
  out[0] = build_contiguous(b, mid);
  return 1;
}
