// ir/build_shape.c: the copies PyTorch defines by views of the input (ir/build.h):
// repeat (tile), repeat_interleave, roll, narrow_copy, pixel_shuffle and pixel_unshuffle;
// x.view(dtype) of a dtype of another width (its bytes regrouped through integers).
// Invariant: the result is a new tensor (a node's own, or a view of one), never a view
// of the input, except roll of the flattened input by whole turns, viewed back (as the
// front end's view of it has always been).
#include "ir/build.h"

#include <string.h>

static const ShapeArgs *sa(const void *args) { return args; }

// each dim viewed as [1, n], expanded to [r, n], the whole reshaped
int build_repeat_op(Builder *b, const void *args, Value **out) {
  const ShapeArgs *a = sa(args);
  out[0] = build_repeat(b, b_in(b, 0), a->n, a->r);
  return 1;
}

// dim's elements each repeated count times: unsqueezed after dim, expanded, merged
int build_repeat_interleave(Builder *b, const void *args, Value **out) {
  const ShapeArgs *a = sa(args);
  Value *x = b_in(b, 0);
  if (a->flat) x = build_flatten(b, x);
  const View *v = &x->view;
  int64_t big[TD_MAX_DIMS], shape[TD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < v->ndim; i++) {
    big[n++] = v->shape[i];
    if (i == a->dim) big[n++] = a->count;
    shape[i] = i == a->dim ? v->shape[i] * a->count : v->shape[i];
  }
  Value *y = build_expand(b, build_unsqueeze(b, x, a->dim + 1), n, big);
  out[0] = build_reshape(b, y, v->ndim, shape);
  return 1;
}

// per dim, the last `shift` elements first: a cat of two narrows; without dims, of the
// flattened input, viewed back
int build_roll(Builder *b, const void *args, Value **out) {
  const ShapeArgs *a = sa(args);
  Value *x = b_in(b, 0), *y = a->flat ? build_flatten(b, x) : x;
  for (int i = 0; i < a->n; i++) {
    int d = a->dims[i];
    int64_t n = y->view.shape[d], s = a->r[i];
    if (n == 0 || s == 0) continue;
    Value *tail = build_narrow(b, y, d, n - s, s), *head = build_narrow(b, y, d, 0, n - s);
    y = build_cat(b, (Value *[]){tail, head}, 2, d);
  }
  if (a->flat) y = build_reshape(b, y, x->view.ndim, x->view.shape);
  out[0] = y == x ? build_clone(b, x) : y;  // a roll by whole turns is still a new tensor
  return 1;
}

// narrow(input, dim, start, length), copied
int build_narrow_copy(Builder *b, const void *args, Value **out) {
  const ShapeArgs *a = sa(args);
  out[0] = build_clone(b, build_narrow(b, b_in(b, 0), a->dim, a->start, a->length));
  return 1;
}

int build_narrow_at(Builder *b, const void *args, Value **out) {
  const ShapeArgs *a = sa(args);
  Value *x = b_in(b, 0), *st = build_cast(b, b_in(b, 1), DT_I64);
  int64_t n = x->view.shape[a->dim];
  st = b_where(b, b_bin(b, OP_LT, st, b_i(b, 0)), b_add(b, st, b_i(b, n)), st);
  Value *ix = b_add(b, build_arange(b, 0, a->length, 1, DT_I64), st);
  out[0] = build_index_select(b, x, a->dim, ix);
  return 1;
}

// pixel_shuffle: [*, C r r, H, W] viewed [*, C, r, r, H, W], permuted to [*, C, H, r, W, r],
// reshaped [*, C, H r, W r]; pixel_unshuffle the inverse: [*, C, H/r, r, W/r, r] permuted
// to [*, C, r, r, H/r, W/r], reshaped [*, C r r, H/r, W/r]. A copy, but of r 1 (a view,
// as PyTorch's composite is); the 5 dims in place of 3 are the rank check's (build_reshape).
int build_pixel_shuffle(Builder *b, const void *args, Value **out) {
  const ShapeArgs *a = sa(args);
  Value *x = b_in(b, 0);
  const View *v = &x->view;
  int k = v->ndim - 3;
  int64_t r = a->count, c = v->shape[k], h = v->shape[k + 1], w = v->shape[k + 2];
  int64_t split[TD_MAX_DIMS + 2], shape[TD_MAX_DIMS];
  int perm[TD_MAX_DIMS + 2];
  for (int i = 0; i < k; i++) split[i] = shape[i] = v->shape[i], perm[i] = i;
  if (!a->flat) {
    int64_t s[5] = {c / (r * r), r, r, h, w}, o[3] = {c / (r * r), h * r, w * r};
    int p[5] = {0, 3, 1, 4, 2};
    for (int i = 0; i < 5; i++) split[k + i] = s[i], perm[k + i] = k + p[i];
    for (int i = 0; i < 3; i++) shape[k + i] = o[i];
  } else {
    int64_t s[5] = {c, h / r, r, w / r, r}, o[3] = {c * r * r, h / r, w / r};
    int p[5] = {0, 2, 4, 1, 3};
    for (int i = 0; i < 5; i++) split[k + i] = s[i], perm[k + i] = k + p[i];
    for (int i = 0; i < 3; i++) shape[k + i] = o[i];
  }
  Value *y = build_reshape(b, x, k + 5, split);
  out[0] = build_reshape(b, build_permute(b, y, perm), k + 3, shape);
  return 1;
}

// ---- x.view(dtype) of another width: bytes regrouped (little-endian, as PyTorch's CPU
// storage) through the integers of each width; a float's bits by OP_BITCAST ----
static DType int_of(int bytes) { return bytes == 1 ? DT_I8 : bytes == 2 ? DT_I16 : bytes == 4 ? DT_I32 : DT_I64; }

static Value *bits_of(Builder *b, Value *x) {  // x's bits as the int of its width
  DType it = int_of(dtype_size(x->dtype));
  if (!dtype_is_float(x->dtype)) return build_cast(b, x, it);  // bool: 0, 1; u8: wrapped
  NodeAttr none = {0};
  return build_node(b, OP_BITCAST, it, x->view.ndim, x->view.shape, &x, 1, none);
}

static Value *from_bits(Builder *b, Value *y, DType dt) {  // y's bits as dt (bool: != 0)
  if (!dtype_is_float(dt)) return build_cast(b, y, dt);
  NodeAttr none = {0};
  return build_node(b, OP_BITCAST, dt, y->view.ndim, y->view.shape, &y, 1, none);
}

// To a wider dtype (k narrow elements a wide one): element j of the last dim is the sum
// of element k j + c shifted by c widths (c < k; each zero-extended but the top one). To
// a narrower: element k j + c is wide element j shifted down c widths, truncated: the k
// parts stacked on a new last dim, merged with it (an 8-dim x flattened first).
int build_view_dtype(Builder *b, const void *args, Value **out) {
  const ShapeArgs *a = sa(args);
  Value *x = bits_of(b, b_in(b, 0));
  int from = dtype_size(b->in[0].dtype), to = dtype_size(a->dtype), last = x->view.ndim - 1;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, x->view.shape, sizeof shape);
  Value *y;
  if (to > from) {
    int k = to / from;
    DType wide = int_of(to);
    y = NULL;
    for (int c = 0; c < k; c++) {
      View v = x->view;
      v.shape[last] /= k;
      v.offset += c * v.strides[last];
      v.strides[last] *= k;
      Value *p = build_cast(b, build_view(b, x, v), wide);
      if (c < k - 1) p = b_bin(b, OP_BITWISE_AND, p, b_i(b, (int64_t)((UINT64_C(1) << (8 * from)) - 1)));
      if (c > 0) p = b_bin(b, OP_LSHIFT, p, b_i(b, 8 * from * c));
      y = y ? b_bin(b, OP_BITWISE_OR, y, p) : p;
    }
    shape[last] /= k;
  } else {
    int k = from / to;
    if (x->view.ndim == TD_MAX_DIMS) {
      int64_t flat[2] = {1, x->view.shape[last]};
      for (int i = 0; i < last; i++) flat[0] *= x->view.shape[i];
      x = build_reshape(b, x, 2, flat);
    }
    Value *parts[8];
    for (int c = 0; c < k; c++)
      parts[c] = build_cast(b, c ? b_bin(b, OP_RSHIFT, x, b_i(b, 8 * to * c)) : x, int_of(to));
    y = build_stack(b, parts, k, x->view.ndim);
    shape[last] *= k;
  }
  out[0] = from_bits(b, build_reshape(b, y, last + 1, shape), a->dtype);
  return 1;
}
