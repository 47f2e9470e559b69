// ir/build_index.c: gathers and writes at positions PyTorch defines by index ops
// (ir/build.h): take, take_along_dim, slice/select/diagonal_scatter, masked_scatter,
// embedding, one_hot.
// Invariants: positions are read by index_select and gather, whose run-time checks report
// an index out of range; an out-of-place write writes a clone (build_store: a store never
// reads what it writes).
#include "ir/build.h"

static const IndexArgs *ia(const void *args) { return args; }

static Value *flat(Builder *b, Value *x) { return build_reshape(b, x, 1, (int64_t[]){view_numel(x->view)}); }

// the flattened input gathered at index, of index's shape
int build_take(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = b_in(b, 0), *ix = b_in(b, 1);
  Value *g = build_index_select(b, flat(b, x), 0, flat(b, ix));
  out[0] = build_reshape(b, g, ix->view.ndim, ix->view.shape);
  return 1;
}

// gather along dim after broadcasting the other dims; without dim, of the flattened input
int build_take_along_dim(Builder *b, const void *args, Value **out) {
  const IndexArgs *a = ia(args);
  Value *x = b_in(b, 0), *ix = b_in(b, 1);
  if (a->dim < 0) {
    out[0] = build_gather(b, flat(b, x), 0, flat(b, ix));
    return 1;
  }
  Value *bx = build_expand(b, x, a->ndim, a->shape), *bi = build_expand(b, ix, a->ndim, a->ishape);
  out[0] = build_gather(b, bx, a->dim, bi);
  return 1;
}

// input with src written where the view (slice, select, diagonal) of it is: the positions
// the view takes, of arange(numel) viewed as the input, then x.reshape(-1).index_copy(0,
// positions, src) reshaped back
int build_view_scatter(Builder *b, const void *args, Value **out) {
  const IndexArgs *a = ia(args);
  Value *x = b_in(b, 0), *src = b_in(b, 1);
  const View *xv = &x->view;
  Value *all = build_reshape(b, build_arange(b, 0, view_numel(*xv), 1, DT_I64), xv->ndim, xv->shape), *pos;
  if (a->view == SCATTER_SLICE) pos = build_index_select(b, all, a->dim, build_arange(b, a->start, a->end, a->step, DT_I64));
  else if (a->view == SCATTER_SELECT) pos = build_select(b, all, a->dim, a->start);
  else pos = build_diagonal(b, all, a->offset, a->dim1, a->dim2);
  Value *v = build_cast(b, src, x->dtype);
  Value *t = build_clone(b, flat(b, x));
  NodeAttr put = {.dims = 1, .aug = OP_COUNT, .form = IPF_INDEX_COPY};
  t = build_store(b, OP_INDEX_PUT, (Value *[]){t, flat(b, v), flat(b, pos)}, 3, put);
  out[0] = build_reshape(b, t, xv->ndim, xv->shape);
  return 1;
}

// input and mask broadcast together; the k-th true element of the mask (row-major) takes
// source's k-th element: k is the running count of trues before it (cumsum),
// source.reshape(-1)[k] where the mask is true, input elsewhere. Too few source elements:
// index_select's error, at run time.
int build_masked_scatter(Builder *b, const void *args, Value **out) {
  const IndexArgs *a = ia(args);
  Value *x = b_in(b, 0), *m = b_in(b, 1), *src = b_in(b, 2);
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
  if (m->dtype != DT_BOOL) m = b_bin(b, OP_NE, m, b_i(b, 0));
  Value *mf = build_reshape(b, build_expand(b, m, a->ndim, a->shape), 1, &n);
  Value *xf = build_reshape(b, build_expand(b, x, a->ndim, a->shape), 1, &n);
  Value *k = build_scan(b, OP_CUMSUM, mf, 0, DT_I64);  // i64 of a bool
  k = build_clamp(b, b_sub(b, k, b_i(b, 1)), b_i(b, 0), NULL);
  Value *v = build_index_select(b, flat(b, src), 0, k);
  out[0] = build_reshape(b, b_where(b, mf, v, xf), a->ndim, a->shape);
  return 1;
}

// weight's rows at input, an index tensor of any shape: index_select of its flattened
// values, viewed as index.shape + [row size]
int build_embedding(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *ix = b_in(b, 0), *w = b_in(b, 1);
  const View *iv = &ix->view;
  Value *sel = build_index_select(b, w, 0, flat(b, ix));
  int64_t shape[TD_MAX_DIMS];
  for (int i = 0; i < iv->ndim; i++) shape[i] = iv->shape[i];
  shape[iv->ndim] = w->view.shape[1];
  out[0] = build_reshape(b, sel, iv->ndim + 1, shape);
  return 1;
}

// (tensor.unsqueeze(-1) == arange(num_classes)).long(): one elementwise kernel the size of
// the result; a value outside [0, num_classes) gives a row of zeros
int build_one_hot(Builder *b, const void *args, Value **out) {
  Value *eq = b_bin(b, OP_EQ, build_unsqueeze(b, b_in(b, 0), -1), build_arange(b, 0, ia(args)->classes, 1, DT_I64));
  out[0] = build_cast(b, eq, DT_I64);
  return 1;
}
