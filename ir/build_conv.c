// ir/build_conv.c: padding, convolution, pooling, interpolation, fold and unfold of
// torch.nn.functional, for 1 to 3 spatial dims (ir/build.h):
//   pad          a cat of full nodes (constant), flipped narrows (reflect), expanded edge
//                narrows (replicate) or narrows of the other end (circular), one dim
//                after another from the last; negative pads are narrows
//   pools        the window view of the (padded) input, [..., O..., k...] with no copy
//                (view_windows), reduced over its window dims, or, for windows of at
//                most TAP_CHAIN_MAX taps, max or add over the taps (one elementwise
//                chain of strided views, in the taps' order); avg's divisors without
//                count_include_pad are the same window sums over a padded ones tensor;
//                adaptive: uniform windows when the output divides the input, else one
//                narrow and reduction per output index along each dim (separable)
//   conv         one GEMM (a contraction) of the weight [O, C, k...] by the window view
//                [N, (G,) C/G, k..., O...] of the (padded) input, summed over C/G and the
//                taps: k spans those dims, which the GEMM's packing reads in place (no
//                im2col copy); the output [N, O, O...] is the GEMM's own, so the bias and
//                what follows elementwise (batch_norm, relu) are its epilogue
//   conv_transpose  conv of the input spread by the stride and padded, by the kernel
//                flipped with its channels swapped
//   interpolate  nearest and the linear modes: per dim, a gather at source indices
//                computed in f32 from an arange (and the two neighbours' weights)
//   fold         conv_transpose2d of the blocks by one-hot kernels, C groups; unfold the
//                window view, permuted and reshaped (a copy by definition)
// Invariant: the spatial dims are the input's last nsp; halves are computed in f32 where
// PyTorch's kernels are (avg and adaptive avg pools, conv, the linear interpolations)
// and rounded once.
#include "ir/build.h"

#include <math.h>
#include <string.h>

// ============================================================================
// pad
// ============================================================================
static Value *fill_zero(Builder *b) { return b_i(b, 0); }

// One dim d of x padded by (l, r) (negative: cropped); fill is the constant's value.
static Value *pad_dim(Builder *b, Value *x, int d, int64_t l, int64_t r, PadMode mode, const Value *fill) {
  int64_t n = x->view.shape[d];
  Value *mid = x;
  if (l < 0) mid = build_narrow(b, mid, d, -l, n + l);
  if (r < 0) mid = build_narrow(b, mid, d, 0, mid->view.shape[d] + r);
  int64_t m = mid->view.shape[d];
  Value *items[3];
  int k = 0;
  for (int side = 0; side < 2; side++) {
    int64_t p = side == 0 ? l : r;
    if (side == 1) items[k++] = mid;
    if (p <= 0) continue;
    Value *s;
    int64_t shape[TD_MAX_DIMS];
    if (mode == PAD_CONSTANT) {
      memcpy(shape, mid->view.shape, sizeof shape);
      shape[d] = p;
      s = build_full(b, x->view.ndim, shape, fill, x->dtype);
    } else if (mode == PAD_REFLECT) {
      int dims[1] = {d};
      s = build_flip(b, build_narrow(b, x, d, side == 0 ? 1 : n - 1 - p, p), 1, dims);
    } else if (mode == PAD_REPLICATE) {
      Value *edge = build_narrow(b, x, d, side == 0 ? 0 : n - 1, 1);
      memcpy(shape, edge->view.shape, sizeof shape);
      shape[d] = p;
      s = build_expand(b, edge, x->view.ndim, shape);
    } else {
      s = build_narrow(b, mid, d, side == 0 ? m - p : 0, p);
    }
    items[k++] = s;
  }
  return build_cat(b, items, k, d);
}

Value *build_pad_value(Builder *b, Value *x, int npad, const int64_t *pads, PadMode mode, const Value *fill) {
  int nd = x->view.ndim;
  if (mode == PAD_CONSTANT && !fill) fill = fill_zero(b);
  Value *y = x;
  for (int i = 0; i < npad; i++) y = pad_dim(b, y, nd - 1 - i, pads[2 * i], pads[2 * i + 1], mode, fill);
  return y;
}

// A value the builder did not compute (x itself, or a view of a value): a result that
// must be a new tensor is its copy.
static bool not_new(const Value *y, const Value *x) { return y == x || y->buf->own != y; }

int build_pad(Builder *b, const void *args, Value **out) {
  const PadArgs *a = args;
  Value *x = b_in(b, 0), *fill = NULL;
  if (a->mode == PAD_CONSTANT && a->fill_dtype != DT_COUNT) fill = build_scalar(b, a->fill_dtype, a->fill, a->ifill);
  Value *y = build_pad_value(b, x, a->npad, a->pads, a->mode, fill);
  out[0] = not_new(y, x) ? build_clone(b, y) : y;  // no pad, or crops only: a new tensor
  return 1;
}

// ============================================================================
// Pooling: window views of the (padded) input, reduced over the window dims
// ============================================================================
// The pads of x's last nsp dims (F.pad's order, from the last dim): p on the left and
// what the last window needs on the right; whether any is not 0.
static bool pool_pads(const Value *x, int nsp, const int64_t *out, const int64_t *k, const int64_t *p,
                      const int64_t *s, const int64_t *dil, int64_t *pads) {
  bool any = false;
  int nd = x->view.ndim;
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->view.shape[nd - nsp + i], need = (out[i] - 1) * s[i] + dil[i] * (k[i] - 1) + 1;
    int64_t r = need - in - p[i];
    pads[2 * (nsp - 1 - i)] = p[i];
    pads[2 * (nsp - 1 - i) + 1] = r > 0 ? r : 0;
    any |= p[i] > 0 || r > 0;
  }
  return any;
}

// x padded on its last nsp dims by p on the left and what the last window needs on the right
static Value *pool_pad(Builder *b, Value *x, int nsp, const int64_t *out, const int64_t *k, const int64_t *p,
                       const int64_t *s, const int64_t *dil, const Value *fill) {
  int64_t pads[2 * TD_MAX_DIMS];
  return pool_pads(x, nsp, out, k, p, s, dil, pads) ? build_pad_value(b, x, nsp, pads, PAD_CONSTANT, fill) : x;
}

// The windows of x's last nsp dims as a view [..., O..., k...] of x.
static Value *windows(Builder *b, Value *x, int nsp, const int64_t *out, const int64_t *k, const int64_t *s,
                      const int64_t *dil) {
  if (!build_rank(b, x->view.ndim + nsp)) return b->dummy;
  return build_view(b, x, view_windows(x->view, x->view.ndim - nsp, nsp, out, k, s, dil));
}

// The reduction op over the window dims of w (the last nsp of nd + nsp), as the call
// op(w, dims) makes it.
static Value *reduce_windows(Builder *b, Op op, Value *w, int nd, int nsp) {
  return build_reduce_mask(b, op, w, b_dims_from(nd, nd + nsp), nsp == 1 ? nd : -1, false, DT_COUNT);
}

// A window of at most TAP_CHAIN_MAX taps is reduced as a chain of elementwise ops over
// its taps (each a strided view of the padded input, [..., O...]), in the taps'
// row-major order: one elementwise kernel reading each tap in vector lanes, where a
// reduction over the window dims would be a row kernel of rows of k elements.
enum { TAP_CHAIN_MAX = 27 };

static bool tap_chain(int nsp, const int64_t *k) {
  int64_t n = 1;
  for (int i = 0; i < nsp; i++) n *= k[i];
  return n <= TAP_CHAIN_MAX;
}

// The view of xp's last nsp dims that tap t of every window reads: [..., out...], each
// output's element at its window's tap t.
static View tap_view(const View *xv, int nsp, const int64_t *t, const int64_t *out, const int64_t *s,
                     const int64_t *dil) {
  View v = *xv;
  for (int i = 0; i < nsp; i++) {
    int d = xv->ndim - nsp + i;
    v.offset += t[i] * dil[i] * xv->strides[d];
    v.shape[d] = out[i], v.strides[d] = xv->strides[d] * s[i];
  }
  return v;
}

// t advanced to the next tap of windows of k (the last dim fastest); false after the last
// op (maximum, add) over the taps of xp's windows, each tap through up (halves to f32)
// when `up`
static Value *reduce_taps(Builder *b, Op op, Value *xp, int nsp, const int64_t *out, const int64_t *k,
                          const int64_t *s, const int64_t *dil, bool up) {
  Value *acc = NULL;
  int64_t t[BUILD_MAX_SPATIAL] = {0};
  do {
    Value *tap = build_view(b, xp, tap_view(&xp->view, nsp, t, out, s, dil));
    if (up) tap = build_up(b, tap);
    acc = acc ? b_bin(b, op, acc, tap) : tap;
  } while (view_next_index(nsp, t, k));
  return acc;
}

// The taps [t0, t1) of output o's window along one dim that lie inside the input (in):
// positions o s - p + t dil in [0, in).
static void taps_inside(int64_t o, int64_t in, int64_t k, int64_t p, int64_t s, int64_t dil, int64_t *t0,
                        int64_t *t1) {
  int64_t q = o * s - p;  // tap 0's position
  *t0 = q >= 0 ? 0 : (-q + dil - 1) / dil;
  *t1 = q >= in ? 0 : (in - 1 - q) / dil + 1;
  if (*t1 > k) *t1 = k;
  if (*t0 > *t1) *t0 = *t1;
}

// The max over the taps along dim d of x's windows (out outputs), reading x only where
// the windows lie inside it: the outputs fall into runs whose windows keep the same taps
// (the ones at each edge one by one, the interior one run), each run the maximum over
// its taps' strided views of x, the runs cat along d. The -inf padding is max's
// identity, so this is the max over the padded windows without the padded copy
// (a window of no tap inside is -inf).
static Value *max_taps_clipped(Builder *b, Value *x, int d, int64_t out, int64_t k, int64_t p, int64_t s,
                               int64_t dil) {
  const View *xv = &x->view;
  int64_t in = xv->shape[d], nrun = 0;
  Value **runs = arena_alloc(&b->g->cx->arena, sizeof(Value *) * (size_t)(out ? out : 1));
  for (int64_t o0 = 0, o1; o0 < out; o0 = o1) {
    int64_t t0, t1, u0, u1;
    taps_inside(o0, in, k, p, s, dil, &t0, &t1);
    for (o1 = o0 + 1; o1 < out; o1++) {
      taps_inside(o1, in, k, p, s, dil, &u0, &u1);
      if (u0 != t0 || u1 != t1) break;
    }
    Value *acc = NULL;
    for (int64_t t = t0; t < t1; t++) {
      View v = *xv;
      v.offset += (o0 * s - p + t * dil) * xv->strides[d];
      v.shape[d] = o1 - o0, v.strides[d] = xv->strides[d] * s;
      Value *tap = build_view(b, x, v);
      acc = acc ? b_bin(b, OP_MAXIMUM, acc, tap) : tap;
    }
    if (!acc) {
      int64_t shape[TD_MAX_DIMS];
      memcpy(shape, xv->shape, sizeof shape);
      shape[d] = o1 - o0;
      acc = build_full(b, xv->ndim, shape, b_f(b, -INFINITY), x->dtype);
    }
    runs[nrun++] = acc;
  }
  if (nrun == 0) return build_narrow(b, x, d, 0, 0);
  return nrun == 1 ? runs[0] : build_cat(b, runs, (int)nrun, d);
}

// amax over the windows of the input padded with -inf (maximum over the taps: NaN
// propagates as PyTorch's `val > max || isnan(val)` scan does). A padded pool of few
// taps is separable, one dim after another from the last, each clipped to the input
// (max_taps_clipped): no padded copy of the input is made.
static Value *max_pool(Builder *b, const PoolArgs *a, Value *x) {
  int nsp = a->nsp, nd = x->view.ndim;
  int64_t pads[2 * TD_MAX_DIMS];
  if (tap_chain(nsp, a->k) && pool_pads(x, nsp, a->out, a->k, a->p, a->s, a->dil, pads)) {
    Value *y = x;
    for (int i = nsp - 1; i >= 0; i--)
      y = max_taps_clipped(b, y, nd - nsp + i, a->out[i], a->k[i], a->p[i], a->s[i], a->dil[i]);
    return not_new(y, x) ? build_clone(b, y) : y;
  }
  Value *xp = pool_pad(b, x, nsp, a->out, a->k, a->p, a->s, a->dil, b_f(b, -INFINITY));
  if (tap_chain(nsp, a->k)) {
    Value *y = reduce_taps(b, OP_MAXIMUM, xp, a->nsp, a->out, a->k, a->s, a->dil, false);
    return not_new(y, x) ? build_clone(b, y) : y;
  }
  return reduce_windows(b, OP_AMAX, windows(b, xp, a->nsp, a->out, a->k, a->s, a->dil), x->view.ndim, a->nsp);
}

// The flat position of each element of x's last nsp dims in that plane (i64, row-major).
static Value *plane_positions(Builder *b, const Value *x, int nsp) {
  const View *v = &x->view;
  int64_t n = 1;
  for (int i = 0; i < nsp; i++) n *= v->shape[v->ndim - nsp + i];
  return build_reshape(b, build_arange(b, 0, n, 1, DT_I64), nsp, v->shape + v->ndim - nsp);
}

// The max of x over the dims of mask (kept when keepdim) and where it is: the position p
// (broadcast with x) of its first occurrence, or of the last NaN when there is one —
// PyTorch's kernels' scan (`val > max || isnan(val)`) in positions' order.
static void max_at(Builder *b, Value *x, Value *p, uint32_t mask, bool keepdim, Value **v, Value **at) {
  Value *m = build_reduce_mask(b, OP_AMAX, x, mask, -1, true, DT_COUNT);
  Value *first = build_reduce_mask(b, OP_AMIN, b_where(b, b_bin(b, OP_EQ, x, m), p, b_i(b, INT64_MAX)), mask, -1,
                                   keepdim, DT_COUNT);
  Value *last = build_reduce_mask(b, OP_AMAX, b_where(b, b_bin(b, OP_NE, x, x), p, b_i(b, -1)), mask, -1, keepdim,
                                  DT_COUNT);
  if (!keepdim) {  // m without the reduced dims: a view
    int64_t shape[TD_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < m->view.ndim; i++)
      if (!(mask >> i & 1)) shape[n++] = m->view.shape[i];
    m = build_reshape(b, m, n, shape);
  }
  *v = m;
  *at = b_where(b, b_bin(b, OP_NE, m, m), last, first);
}

// max_pool(return_indices=True): the windows of the input padded with -inf and of its
// positions padded with a position no max takes
static void max_pool_indices(Builder *b, const PoolArgs *a, Value *x, Value **v, Value **at) {
  int nsp = a->nsp, nd = x->view.ndim;
  Value *xp = pool_pad(b, x, nsp, a->out, a->k, a->p, a->s, a->dil, b_f(b, -INFINITY));
  Value *pp = pool_pad(b, plane_positions(b, x, nsp), nsp, a->out, a->k, a->p, a->s, a->dil, b_i(b, INT64_MAX));
  Value *w = windows(b, xp, nsp, a->out, a->k, a->s, a->dil), *pw = windows(b, pp, nsp, a->out, a->k, a->s, a->dil);
  max_at(b, w, pw, b_dims_from(nd, nd + nsp), false, v, at);
}

// The counts of the windows along one dim (length in): positions inside [lo, hi) of the
// padded axis, as a 1-D f32 tensor [out] (a window sum over a padded ones tensor).
static Value *window_counts(Builder *b, int64_t in, int64_t k, int64_t p, int64_t s, int64_t out, bool include_pad) {
  int64_t n = include_pad ? in + 2 * p : in;
  Value *ones = build_full(b, 1, &n, b_i(b, 1), DT_F32);
  int64_t pp = include_pad ? 0 : p, dil = 1;
  Value *mp = pool_pad(b, ones, 1, &out, &k, &pp, &s, &dil, fill_zero(b));
  if (tap_chain(1, &k)) return reduce_taps(b, OP_ADD, mp, 1, &out, &k, &s, &dil, false);
  return reduce_windows(b, OP_SUM, windows(b, mp, 1, &out, &k, &s, &dil), 1, 1);
}

// the windows' sums of the zero-padded input over their divisors; halves summed in f32
// and rounded once
static Value *avg_pool(Builder *b, const PoolArgs *a, Value *x) {
  int nsp = a->nsp, nd = x->view.ndim;
  DType dt = x->dtype;
  Value *xp = pool_pad(b, x, nsp, a->out, a->k, a->p, a->s, a->dil, NULL);
  Value *sum = tap_chain(nsp, a->k)
                   ? reduce_taps(b, OP_ADD, xp, nsp, a->out, a->k, a->s, a->dil, true)
                   : reduce_windows(b, OP_SUM, build_up(b, windows(b, xp, nsp, a->out, a->k, a->s, a->dil)), nd, nsp);
  bool uniform = true;  // every window counts the product of k
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->view.shape[nd - nsp + i];
    uniform &= (a->count_include_pad || a->p[i] == 0) &&
               (a->out[i] - 1) * a->s[i] + a->k[i] <= in + (a->count_include_pad ? 2 * a->p[i] : 0);
  }
  Value *y;
  if (a->divisor || uniform) {
    int64_t n = a->divisor;
    if (!n) {
      n = 1;
      for (int i = 0; i < nsp; i++) n *= a->k[i];
    }
    y = b_div(b, sum, b_i(b, n));
  } else {
    Value *cnt = NULL;
    for (int i = 0; i < nsp; i++) {
      Value *c = window_counts(b, x->view.shape[nd - nsp + i], a->k[i], a->p[i], a->s[i], a->out[i],
                               a->count_include_pad);
      for (int j = i + 1; j < nsp; j++) c = build_unsqueeze(b, c, 1);  // [out_i, 1...]: along dim i
      cnt = cnt ? b_mul(b, cnt, c) : c;
    }
    if (dt == DT_F64) cnt = build_cast(b, cnt, DT_F64);
    y = b_div(b, sum, cnt);
  }
  return build_down(b, y, dt);
}

// adaptive pools: output i of a dim of length n reduces [floor(i n / o), ceil((i + 1) n / o));
// adaptive max with indices also the max's position (*at)
static Value *adaptive_pool(Builder *b, const PoolArgs *a, Value *x, Value **at) {
  bool is_max = a->kind == POOL_ADAPTIVE_MAX;
  int nsp = a->nsp, nd = x->view.ndim;
  DType dt = x->dtype;
  Op red = is_max ? OP_AMAX : OP_MEAN;
  Value *y = is_max ? x : build_up(b, x);
  bool uniform = true;
  int64_t k[BUILD_MAX_SPATIAL] = {0}, one[BUILD_MAX_SPATIAL] = {0};
  for (int i = 0; i < nsp; i++) {
    int64_t len = x->view.shape[nd - nsp + i];
    uniform &= a->out[i] > 0 && len % a->out[i] == 0;
    k[i] = a->out[i] > 0 ? len / a->out[i] : 0;
    one[i] = 1;
  }
  if (is_max && a->indices) {  // (values, positions) dim by dim: the first max's position is the least
    Value *p = build_expand(b, plane_positions(b, x, nsp), nd, x->view.shape);
    for (int i = 0; i < nsp; i++) {
      int dim = nd - nsp + i;
      int64_t len = x->view.shape[dim], o = a->out[i];
      if (o == 0) {
        y = build_narrow(b, y, dim, 0, 0), p = build_narrow(b, p, dim, 0, 0);
        continue;
      }
      Value **vs = arena_alloc(&b->g->cx->arena, sizeof(Value *) * (size_t)o);
      Value **ps = arena_alloc(&b->g->cx->arena, sizeof(Value *) * (size_t)o);
      for (int64_t j = 0; j < o; j++) {
        int64_t lo = j * len / o, hi = ((j + 1) * len + o - 1) / o;
        max_at(b, build_narrow(b, y, dim, lo, hi - lo), build_narrow(b, p, dim, lo, hi - lo), 1u << dim, true, &vs[j],
               &ps[j]);
      }
      y = build_cat(b, vs, (int)o, dim), p = build_cat(b, ps, (int)o, dim);
    }
    TD_ASSERT(at);
    *at = not_new(p, x) ? build_clone(b, p) : p;
    return not_new(y, x) ? build_clone(b, y) : y;
  }
  if (uniform) {
    y = reduce_windows(b, red, windows(b, y, nsp, a->out, k, k, one), nd, nsp);
  } else {
    for (int i = 0; i < nsp; i++) {
      int dim = nd - nsp + i;
      int64_t len = x->view.shape[dim], o = a->out[i];
      if (o == 0) {
        y = build_narrow(b, y, dim, 0, 0);
        continue;
      }
      if (o == len) continue;
      Value **items = arena_alloc(&b->g->cx->arena, sizeof(Value *) * (size_t)o);
      for (int64_t j = 0; j < o; j++) {
        int64_t lo = j * len / o, hi = ((j + 1) * len + o - 1) / o;
        items[j] = build_reduce_dim(b, red, build_narrow(b, y, dim, lo, hi - lo), dim, true);
      }
      y = build_cat(b, items, (int)o, dim);
    }
    if (not_new(y, x)) y = build_clone(b, y);
  }
  return is_max ? y : build_down(b, y, dt);
}

// max_unpool: zeros of the output's size, each input element scattered to its index in its
// (N, C) plane
static Value *max_unpool(Builder *b, const PoolArgs *a, Value *x, Value *ix) {
  int nsp = a->nsp, nd = x->view.ndim;
  int64_t lead = 1, plane = 1, L = 1, shape[TD_MAX_DIMS], flat[3];
  for (int i = 0; i < nd - nsp; i++) lead *= x->view.shape[i];
  for (int i = 0; i < nsp; i++) plane *= a->out[i], L *= x->view.shape[nd - nsp + i];
  flat[0] = lead, flat[1] = plane;
  Value *z = build_zeros(b, 2, flat, x->dtype);
  flat[1] = L;
  NodeAttr at = {0};
  at.dim = 1, at.dims = 1u << 1, at.aug = OP_COUNT;
  Value *srcs[3] = {z, build_reshape(b, x, 2, flat), build_reshape(b, ix, 2, flat)};
  Value *r = build_store(b, OP_SCATTER, srcs, 3, at);
  for (int i = 0; i < nd - nsp; i++) shape[i] = x->view.shape[i];
  for (int i = 0; i < nsp; i++) shape[nd - nsp + i] = a->out[i];
  return build_reshape(b, r, nd, shape);
}

// lp_pool: s = avg_pool(input ** norm_type, kernel, stride, 0, ceil_mode), then
// (sign(s) * relu(abs(s))) * (the kernel's area), to the power 1 / norm_type
static Value *lp_pool(Builder *b, const PoolArgs *a, Value *x) {
  PoolArgs avg = *a;
  avg.kind = POOL_AVG;
  Value *s = avg_pool(b, &avg, b_pow(b, x, b_in(b, 1)));
  int64_t area = 1;
  for (int i = 0; i < a->nsp; i++) area *= a->k[i];
  Value *r = b_mul(b, b_un(b, OP_SIGN, s), b_un(b, OP_RELU, b_abs(b, s)));
  r = b_mul(b, r, b_i(b, area));
  return b_pow(b, r, b_f(b, 1.0 / a->norm_type));
}

int build_pool(Builder *b, const void *args, Value **out) {
  const PoolArgs *a = args;
  Value *x = b_in(b, 0);
  switch (a->kind) {
  case POOL_MAX:
    if (a->indices) {
      max_pool_indices(b, a, x, &out[0], &out[1]);
      return 2;
    }
    out[0] = max_pool(b, a, x);
    break;
  case POOL_AVG: out[0] = avg_pool(b, a, x); break;
  case POOL_LP: out[0] = lp_pool(b, a, x); break;
  case POOL_MAX_UNPOOL: out[0] = max_unpool(b, a, x, b_in(b, 1)); break;
  default: out[0] = adaptive_pool(b, a, x, &out[1]); return a->indices ? 2 : 1;
  }
  return 1;
}

// ============================================================================
// conv, conv_transpose
// ============================================================================
// A contraction operand being laid out: its dims' sizes, strides and roles.
typedef struct Operand {
  int n;
  int64_t shape[TD_MAX_DIMS + 2], strides[TD_MAX_DIMS + 2];
  int8_t role[TD_MAX_DIMS + 2];
} Operand;

static void put(Operand *o, int64_t size, int64_t stride, int role) {
  o->shape[o->n] = size, o->strides[o->n] = stride, o->role[o->n++] = (int8_t)role;
}

// The contracted dims of size 1 (a tap or a channel that adds nothing) dropped from both
// operands and the others' roles renumbered: a grouped 3-D convolution's window view then
// fits TD_MAX_DIMS when its kernel or its group has a dim of 1 (depthwise).
static void drop_unit_k(Operand *a, Operand *b) {
  int8_t keep[2 * TD_MAX_DIMS] = {0}, to[2 * TD_MAX_DIMS];
  for (int i = 0; i < a->n; i++)
    if (a->role[i] < 0 && a->shape[i] != 1) keep[-1 - a->role[i]] = 1;
  int nk = 0;
  for (int q = 0; q < 2 * TD_MAX_DIMS; q++) to[q] = keep[q] ? (int8_t)(-1 - nk++) : 0;
  for (int w = 0; w < 2; w++) {
    Operand *o = w ? b : a;
    int m = 0;
    for (int i = 0; i < o->n; i++) {
      if (o->role[i] < 0 && !keep[-1 - o->role[i]]) continue;
      o->shape[m] = o->shape[i], o->strides[m] = o->strides[i];
      o->role[m++] = o->role[i] < 0 ? to[-1 - o->role[i]] : o->role[i];
    }
    o->n = m;
  }
}

static View operand_view(const Operand *o, int64_t offset, int8_t *roles) {
  View v = {0};
  TD_ASSERT(o->n <= TD_MAX_DIMS);
  v.ndim = o->n, v.offset = offset;
  for (int i = 0; i < o->n; i++) v.shape[i] = o->shape[i], v.strides[i] = o->strides[i], roles[i] = o->role[i];
  return v;
}

static Value *convolve(Builder *b, const ConvArgs *a, Value *xp, Value *w, Value *bias);

// A grouped convolution whose window view would pass TD_MAX_DIMS: one convolution per
// group (narrows of the input's channels and of the weight), joined along the channels.
static Value *convolve_groups(Builder *b, const ConvArgs *a, Value *xp, Value *w, Value *bias) {
  int64_t G = a->groups, Og = w->view.shape[0] / G, Cg = w->view.shape[1];
  ConvArgs one = *a;
  one.groups = 1;
  Value **parts = arena_alloc(&b->g->cx->arena, sizeof(Value *) * (size_t)G);
  for (int64_t g = 0; g < G; g++)
    parts[g] = convolve(b, &one, build_narrow(b, xp, 1, g * Cg, Cg), build_narrow(b, w, 0, g * Og, Og),
                        bias ? build_narrow(b, bias, 0, g * Og, Og) : NULL);
  return build_cat(b, parts, (int)G, 1);
}

// One contraction over channels and taps: the weight A [(g,) O/g, C/g, k...] times the
// window view B [N, (g,) C/g, k..., out...] of the (padded) input, into [N, (g,) O/g,
// out...]; roles: output dims, or -1 - q for k's dim q (C/g, then the taps).
static Value *convolve(Builder *b, const ConvArgs *a, Value *xp, Value *w, Value *bias) {
  int nsp = a->nsp;
  const View *pv = &xp->view, *wv = &w->view;
  int64_t O = wv->shape[0], Cg = wv->shape[1], groups = a->groups, k[BUILD_MAX_SPATIAL], out[BUILD_MAX_SPATIAL];
  for (int i = 0; i < nsp; i++) {
    k[i] = wv->shape[2 + i];
    out[i] = (pv->shape[2 + i] - a->dil[i] * (k[i] - 1) - 1) / a->s[i] + 1;
  }
  int G = groups > 1, Og = (int)(O / groups);
  Operand oa = {0}, ob = {0};
  if (!build_rank(b, 2 + 2 * nsp)) return b->dummy;
  View win = view_windows(*pv, 2, nsp, out, k, a->s, a->dil);  // [N, C, out..., k...]
  int no = 0;
  put(&ob, win.shape[0], win.strides[0], no++);
  if (G) {
    put(&oa, groups, wv->strides[0] * Og, no);
    put(&ob, groups, win.strides[1] * Cg, no++);
  }
  put(&oa, Og, wv->strides[0], no++);
  put(&oa, Cg, wv->strides[1], -1);
  put(&ob, Cg, win.strides[1], -1);
  for (int i = 0; i < nsp; i++) {
    put(&oa, k[i], wv->strides[2 + i], -2 - i);
    put(&ob, k[i], win.strides[2 + nsp + i], -2 - i);
  }
  for (int i = 0; i < nsp; i++) put(&ob, out[i], win.strides[2 + i], no++);
  if (ob.n > TD_MAX_DIMS) drop_unit_k(&oa, &ob);
  if (ob.n > TD_MAX_DIMS) return convolve_groups(b, a, xp, w, bias);
  int8_t ra[TD_MAX_DIMS], rb[TD_MAX_DIMS];
  View av = operand_view(&oa, wv->offset, ra), bv = operand_view(&ob, win.offset, rb);
  Value *r = build_contract(b, build_view(b, w, av), build_view(b, xp, bv), ra, rb);
  if (bias) {  // [(g,) O/g, 1...]: the contraction's epilogue
    View bb = {0};
    const View *bvv = &bias->view;
    int nbb = 0;
    if (G) bb.shape[nbb] = groups, bb.strides[nbb++] = bvv->strides[0] * Og;
    bb.shape[nbb] = Og, bb.strides[nbb++] = bvv->strides[0];
    for (int i = 0; i < nsp; i++) bb.shape[nbb] = 1, bb.strides[nbb++] = 0;
    bb.ndim = nbb, bb.offset = bvv->offset;
    r = b_add(b, r, build_view(b, bias, bb));
  }
  if (G) {  // [N, O, out...]: a view of the contiguous result
    int64_t fs[TD_MAX_DIMS] = {pv->shape[0], O};
    for (int i = 0; i < nsp; i++) fs[2 + i] = out[i];
    r = build_reshape(b, r, nsp + 2, fs);
  }
  return r;
}

// A depthwise convolution (one input channel a group, one output channel a group) of
// one spatial dim, or of two and more than DW_TAPS_MIN taps, at most DW_TAPS_MAX: the
// bias plus each tap's strided view of the (padded) input [N, C, out...] times its weight
// [C, 1...], one elementwise chain in the taps' order. Its kernel keeps each output's sum
// in a register (lanes along the output row, every tap a shifted load) where the GEMM
// path's direct schedule ran at a fifth of the memory roof (ConvNeXt's 7x7: 2-2.5x
// faster; Mamba's causal conv1d, read transposed by its reader: 4.5x). A padded 2-D
// one is one depthwise_conv node instead (depthwise_node, ir/depthwise.c: on a CPU each
// channel padded in a per-thread scratch plane, no padded copy in memory, one kernel where
// the chain took two; [2, 384, 14, 14] 7x7: 1.13-1.68x faster) in a CPU program; a GPU
// program pads into a copy (depthwise_pad) and its taps read it; a 1-D one is padded by
// the pad's cat, inline, so that the chain stays inline in a transposed reader. A 3x3
// stays on the GEMM path, which reads the padding inline: the copy costs about what the
// chain saves (even on C and LLVM). 3-D too.
enum { DW_TAPS_MIN = 9, DW_TAPS_MAX = 49 };

static bool depthwise(const ConvArgs *a, const Value *w) {
  const View *wv = &w->view;
  int64_t taps = 1;
  for (int i = 0; i < a->nsp; i++) taps *= wv->shape[2 + i];
  bool fits = a->nsp == 1 ? taps > 0 : a->nsp == 2 && taps > DW_TAPS_MIN;
  return a->groups > 1 && wv->shape[0] == a->groups && wv->shape[1] == 1 && fits && taps <= DW_TAPS_MAX;
}

// x zero-padded into a buffer of its own (zeros, then x stored into the middle), which
// the taps read as plain loads: the pad's cats read inline cost a select per tap where
// their pieces cannot split the nest.
static Value *depthwise_pad(Builder *b, const ConvArgs *a, Value *x) {
  int nsp = a->nsp, nd = nsp + 2;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, x->view.shape, sizeof(int64_t) * (size_t)nd);
  for (int i = 0; i < nsp; i++) shape[2 + i] += a->pl[i] + a->pr[i];
  Value *z = build_full(b, nd, shape, b_i(b, 0), x->dtype), *mid = z;
  for (int i = 0; i < nsp; i++) mid = build_narrow(b, mid, 2 + i, a->pl[i], x->view.shape[2 + i]);
  build_store(b, OP_STORE, (Value *[]){mid, x}, 2, (NodeAttr){.aug = OP_COUNT});
  return z;
}

static Value *depthwise_taps(Builder *b, const ConvArgs *a, Value *xp, Value *w, Value *bias) {
  int nsp = a->nsp;
  const View *xv = &xp->view, *wv = &w->view;
  int64_t k[BUILD_MAX_SPATIAL], out[BUILD_MAX_SPATIAL], t[BUILD_MAX_SPATIAL] = {0};
  for (int i = 0; i < nsp; i++) {
    k[i] = wv->shape[2 + i];
    out[i] = (xv->shape[2 + i] - a->dil[i] * (k[i] - 1) - 1) / a->s[i] + 1;
  }
  View cw = {nsp + 1, {wv->shape[0]}, {wv->strides[0]}, wv->offset};  // [C, 1...]: one tap's weights
  for (int i = 0; i < nsp; i++) cw.shape[1 + i] = 1, cw.strides[1 + i] = 0;
  Value *acc = NULL;
  if (bias) {
    View bv = cw;
    bv.strides[0] = bias->view.strides[0], bv.offset = bias->view.offset;
    acc = build_view(b, bias, bv);
  }
  do {
    View wt = cw;
    for (int i = 0; i < nsp; i++) wt.offset += t[i] * wv->strides[2 + i];
    Value *p = b_mul(b, build_view(b, xp, tap_view(xv, nsp, t, out, a->s, a->dil)), build_view(b, w, wt));
    acc = acc ? b_add(b, acc, p) : p;
  } while (view_next_index(nsp, t, k));
  return acc;
}

// A padded depthwise convolution of two spatial dims as one node reading x in place
// (ir/depthwise.c: each channel's plane padded in the thread's scratch).
static Value *depthwise_node(Builder *b, const ConvArgs *a, Value *x, Value *w, Value *bias) {
  int nsp = a->nsp, nd = nsp + 2;
  const View *xv = &x->view, *wv = &w->view;
  int64_t shape[TD_MAX_DIMS] = {xv->shape[0], wv->shape[0]};
  View wk = {nsp + 1, {wv->shape[0]}, {wv->strides[0]}, wv->offset};  // [C, k...]
  NodeAttr at = {0};
  for (int i = 0; i < nsp; i++) {
    int64_t k = wv->shape[2 + i];
    shape[2 + i] = (xv->shape[2 + i] + a->pl[i] + a->pr[i] - a->dil[i] * (k - 1) - 1) / a->s[i] + 1;
    wk.shape[1 + i] = k, wk.strides[1 + i] = wv->strides[2 + i];
    at.conv_p[i] = a->pl[i], at.conv_s[i] = a->s[i], at.conv_d[i] = a->dil[i];
  }
  Value *srcs[3] = {x, build_view(b, w, wk), bias};
  return build_node(b, OP_DWCONV, x->dtype, nd, shape, srcs, bias ? 3 : 2, at);
}

// conv: zeros (and the bias) when there is no batch or nothing to sum; else the input
// batched, halves in f32, padded, convolved
static Value *conv(Builder *b, const ConvArgs *a, Value *x, Value *w, Value *bias) {
  int nsp = a->nsp;
  DType dt = x->dtype;
  const View *xv = &x->view, *wv = &w->view;
  int64_t N = a->batched ? xv->shape[0] : 1, O = wv->shape[0], Cg = wv->shape[1];
  if (N == 0 || Cg == 0) {
    int64_t os[TD_MAX_DIMS] = {N, O};
    for (int i = 0; i < nsp; i++) {
      int64_t in = xv->shape[xv->ndim - nsp + i], k = wv->shape[2 + i];
      os[2 + i] = (in + a->pl[i] + a->pr[i] - a->dil[i] * (k - 1) - 1) / a->s[i] + 1;
    }
    Value *z = build_full(b, nsp + 2, os, b_i(b, 0), dt);
    if (bias) {
      View bb = {nsp + 1, {O}, {bias->view.strides[0]}, bias->view.offset};
      for (int i = 0; i < nsp; i++) bb.shape[1 + i] = 1, bb.strides[1 + i] = 0;
      z = b_add(b, z, build_view(b, bias, bb));
    }
    return a->batched ? z : build_squeeze(b, z, 0);
  }
  Value *xb = a->batched ? x : build_unsqueeze(b, x, 0);
  if (dtype_is_half(dt)) {
    xb = build_cast(b, xb, DT_F32), w = build_cast(b, w, DT_F32);
    if (bias) bias = build_cast(b, bias, DT_F32);
  }
  int64_t pads[2 * BUILD_MAX_SPATIAL];
  bool padded = false;
  for (int i = 0; i < nsp; i++) {
    pads[2 * (nsp - 1 - i)] = a->pl[i], pads[2 * (nsp - 1 - i) + 1] = a->pr[i];
    padded |= a->pl[i] || a->pr[i];
  }
  bool dw = depthwise(a, w);
  if (dw && nsp > 1 && padded && b->g && b->g->cpu) {  // (a GPU program: the padded copy)
    Value *r = depthwise_node(b, a, xb, w, bias);
    if (!a->batched) r = build_squeeze(b, r, 0);
    return build_down(b, r, dt);
  }
  Value *xp = !padded            ? xb
              : dw && nsp > 1      ? depthwise_pad(b, a, xb)
                                   : build_pad_value(b, xb, nsp, pads, PAD_CONSTANT, NULL);
  Value *r = dw ? depthwise_taps(b, a, xp, w, bias) : convolve(b, a, xp, w, bias);
  if (!a->batched) r = build_squeeze(b, r, 0);
  return build_down(b, r, dt);
}

// conv_transpose: the convolution (stride 1, the same dilation) of the input with s - 1
// zeros put between its elements and d (k - 1) - p zeros around it (output_padding more
// on the right), by the kernel flipped, in and out channels swapped within each group.
// The spread input is a copy (one cat a dim, then the pad's).
static Value *conv_transpose(Builder *b, const ConvArgs *a, Value *x, Value *w, Value *bias) {
  int nsp = a->nsp;
  const View *wv = &w->view;
  Value *y = a->batched ? x : build_unsqueeze(b, x, 0);
  for (int i = 0; i < nsp; i++) {
    int dim = 2 + i;
    if (a->s[i] == 1) continue;
    const View *v = &y->view;
    int64_t shape[TD_MAX_DIMS + 1], merged[TD_MAX_DIMS];
    for (int j = 0; j <= dim; j++) shape[j] = v->shape[j];
    shape[dim + 1] = a->s[i] - 1;
    for (int j = dim + 1; j < v->ndim; j++) shape[j + 1] = v->shape[j];
    Value *col = build_unsqueeze(b, y, dim + 1);
    Value *z = build_full(b, v->ndim + 1, shape, b_i(b, 0), y->dtype);
    Value *c = build_cat(b, (Value *[]){col, z}, 2, dim + 1);
    memcpy(merged, v->shape, sizeof merged);
    merged[dim] = v->shape[dim] * a->s[i];
    y = build_narrow(b, build_reshape(b, c, v->ndim, merged), dim, 0, (v->shape[dim] - 1) * a->s[i] + 1);
  }
  int64_t pads[2 * BUILD_MAX_SPATIAL];
  for (int i = 0; i < nsp; i++) {
    int64_t q = a->dil[i] * (wv->shape[2 + i] - 1) - a->pl[i];
    pads[2 * (nsp - 1 - i)] = q, pads[2 * (nsp - 1 - i) + 1] = q + a->op[i];
  }
  y = build_pad_value(b, y, nsp, pads, PAD_CONSTANT, NULL);
  // the weight [Cin, O/g, k...] as a convolution's [O, Cin/g, k...], flipped
  int64_t G = a->groups, Cin = wv->shape[0], Og = wv->shape[1], O = Og * G;
  int fd[BUILD_MAX_SPATIAL];
  for (int i = 0; i < nsp; i++) fd[i] = 2 + i;
  Value *wf = build_flip(b, w, nsp, fd);
  int64_t gshape[TD_MAX_DIMS] = {G, Cin / G, Og}, cshape[TD_MAX_DIMS] = {O, Cin / G};
  for (int i = 0; i < nsp; i++) gshape[3 + i] = cshape[2 + i] = wv->shape[2 + i];
  Value *wg = build_reshape(b, build_transpose(b, build_reshape(b, wf, nsp + 3, gshape), 1, 2), nsp + 2, cshape);
  ConvArgs c = {.nsp = nsp, .batched = true, .groups = G};
  for (int i = 0; i < nsp; i++) c.s[i] = 1, c.dil[i] = a->dil[i];
  Value *r = conv(b, &c, y, wg, bias);
  return a->batched ? r : build_squeeze(b, r, 0);
}

int build_conv(Builder *b, const void *args, Value **out) {
  const ConvArgs *a = args;
  Value *x = b_in(b, 0), *w = b_in(b, 1), *bias = a->bias ? b_in(b, 2) : NULL;
  out[0] = a->transposed ? conv_transpose(b, a, x, w, bias) : conv(b, a, x, w, bias);
  return 1;
}

// ============================================================================
// F.unfold (im2col), F.fold (col2im)
// ============================================================================
// the sliding blocks of a 4-D input as columns [N, C * kh * kw, L]: the window view of
// the padded input, permuted and reshaped
int build_unfold(Builder *b, const void *args, Value **out) {
  const UnfoldArgs *a = args;
  Value *x = b_in(b, 0);
  Value *xp = pool_pad(b, x, 2, a->out, a->k, a->p, a->s, a->dil, b_f(b, 0));
  Value *w = windows(b, xp, 2, a->out, a->k, a->s, a->dil);  // [N, C, OH, OW, kh, kw]
  w = build_permute(b, w, (int[]){0, 1, 4, 5, 2, 3});
  int64_t N = x->view.shape[0], C = x->view.shape[1];
  out[0] = build_reshape(b, w, 3, (int64_t[]){N, C * a->k[0] * a->k[1], a->out[0] * a->out[1]});
  return 1;
}

// the sum of the blocks [N, C * kh * kw, L] at their places: conv_transpose2d of the
// blocks [N, C * kh * kw, OH, OW] by the one-hot kernel of each tap, C groups
int build_fold(Builder *b, const void *args, Value **out) {
  const UnfoldArgs *a = args;
  Value *x = b_in(b, 0);
  const View *xv = &x->view;
  bool batched = xv->ndim == 3;
  int64_t K = a->k[0] * a->k[1], CK = xv->shape[batched ? 1 : 0], N = batched ? xv->shape[0] : 1, C = CK / K;
  Value *xb = batched ? x : build_unsqueeze(b, x, 0);
  Value *x4 = build_reshape(b, xb, 4, (int64_t[]){N, CK, a->blocks[0], a->blocks[1]});
  Value *w = build_reshape(b, build_eye(b, K, K, x->dtype), 4, (int64_t[]){K, 1, a->k[0], a->k[1]});
  if (C > 1) w = build_repeat(b, w, 4, (int64_t[]){C, 1, 1, 1});
  ConvArgs c = {.nsp = 2, .transposed = true, .batched = true, .groups = C};
  for (int i = 0; i < 2; i++) {
    c.s[i] = a->s[i], c.pl[i] = a->p[i], c.dil[i] = a->dil[i];
    c.op[i] = a->out[i] + 2 * a->p[i] - a->dil[i] * (a->k[i] - 1) - 1 - (a->blocks[i] - 1) * a->s[i];
  }
  Value *y = conv_transpose(b, &c, x4, w, NULL);
  out[0] = batched ? y : build_squeeze(b, y, 0);
  return 1;
}

// ============================================================================
// interpolate: nearest, linear, bilinear, trilinear
// ============================================================================
static Value *arange_f32(Builder *b, int64_t n) { return build_arange(b, 0, n, 1, DT_F32); }

// PyTorch's cubic convolution weights (A = -0.75) of the 4 taps around a source whose
// fraction is t, in f32
static void cubic_weights(Builder *b, Value *t, Value **w) {
  Value *A = b_f(b, -0.75), *one = b_f(b, 1.0);
  Value *x[4] = {b_add(b, t, one), t, b_sub(b, one, t), b_sub(b, b_f(b, 2.0), t)};
  for (int j = 0; j < 4; j++) {
    Value *v = x[j];
    if (j == 1 || j == 2)  // ((A + 2) x - (A + 3)) x x + 1
      w[j] = b_add(b, b_mul(b, b_mul(b, b_sub(b, b_mul(b, b_f(b, -0.75 + 2), v), b_f(b, -0.75 + 3)), v), v), one);
    else  // ((A x - 5 A) x + 8 A) x - 4 A
      w[j] = b_sub(b, b_mul(b, b_add(b, b_mul(b, b_sub(b, b_mul(b, A, v), b_f(b, 5 * -0.75)), v), b_f(b, 8 * -0.75)), v),
                   b_f(b, 4 * -0.75));
  }
}

// Each spatial dim in turn gathers (index_select) the input at source indices computed in
// f32 from an arange, as PyTorch's kernels compute them; the linear modes add the two
// neighbours by their weights, bicubic the four (indices clamped into the input), area is
// the adaptive average pool. Halves are interpolated in f32 and rounded once.
int build_interpolate(Builder *b, const void *args, Value **out) {
  const InterpArgs *a = args;
  Value *x = b_in(b, 0);
  int nd = x->view.ndim;
  DType dt = x->dtype;
  if (a->mode == INTERP_AREA) {
    PoolArgs area = {.kind = POOL_ADAPTIVE_AVG, .nsp = a->nsp};
    for (int i = 0; i < a->nsp; i++) area.out[i] = a->out[i];
    out[0] = adaptive_pool(b, &area, x, NULL);
    return 1;
  }
  bool nearest = a->mode == INTERP_NEAREST || a->mode == INTERP_NEAREST_EXACT, half = dtype_is_half(dt) && !nearest;
  Value *y = half ? build_cast(b, x, DT_F32) : x;
  for (int k = 0; k < a->nsp; k++) {
    int i = a->mode == INTERP_CUBIC ? a->nsp - 1 - k : k;  // bicubic: the last dim first, as PyTorch's kernel
    int dim = 2 + i;
    int64_t in = x->view.shape[dim], o = a->out[i];
    if (o == in && nearest && (!a->scale[i] || a->scale[i] == 1)) continue;  // the identity
    float sc = a->scale[i] ? (float)(1.0 / a->scale[i]) : (float)in / (float)o;
    if (nearest) {
      Value *d = arange_f32(b, o);
      if (a->mode == INTERP_NEAREST_EXACT) d = b_add(b, d, b_f(b, 0.5));
      Value *src = b_un(b, OP_FLOOR, b_mul(b, d, b_f(b, sc)));
      src = build_cast(b, build_clamp(b, src, NULL, b_i(b, in - 1)), DT_I64);
      y = build_index_select(b, y, dim, src);
      continue;
    }
    // the source index, in f32 (f64 for f64 input: PyTorch's opmath type)
    bool wide = dt == DT_F64;
    Value *src, *d = wide ? build_arange(b, 0, o, 1, DT_F64) : arange_f32(b, o);
    if (a->align_corners) {
      double s2 = o > 1 ? (wide ? (double)(in - 1) / (double)(o - 1) : (float)(in - 1) / (float)(o - 1)) : 0.0;
      src = b_mul(b, d, b_f(b, s2));
    } else {
      double s1 = wide ? (a->scale[i] ? 1.0 / a->scale[i] : (double)in / (double)o) : sc;
      src = b_add(b, d, b_f(b, 0.5));
      src = b_sub(b, b_mul(b, src, b_f(b, s1)), b_f(b, 0.5));
      if (a->mode != INTERP_CUBIC) src = build_clamp(b, src, b_i(b, 0), NULL);
    }
    if (a->mode == INTERP_CUBIC) {  // taps floor(src) - 1 .. + 2, clamped into the input
      Value *f = b_un(b, OP_FLOOR, src), *i0 = build_cast(b, f, DT_I64), *w[4];
      cubic_weights(b, b_sub(b, src, f), w);
      Value *acc = NULL;
      for (int j = 0; j < 4; j++) {
        Value *ix = build_clamp(b, b_add(b, i0, b_i(b, j - 1)), b_i(b, 0), b_i(b, in - 1));
        for (int q = dim; q < nd - 1; q++) w[j] = build_unsqueeze(b, w[j], 1);
        Value *t = b_mul(b, build_index_select(b, y, dim, ix), w[j]);
        acc = acc ? b_add(b, acc, t) : t;
      }
      y = acc;
      continue;
    }
    Value *i0 = build_cast(b, src, DT_I64);
    Value *i1 = build_clamp(b, b_add(b, i0, b_i(b, 1)), NULL, b_i(b, in - 1));
    Value *l1 = b_sub(b, src, i0);
    Value *l0 = b_sub(b, b_f(b, 1.0), l1);
    for (int j = dim; j < nd - 1; j++) {  // the weights along dim: [o, 1...]
      l0 = build_unsqueeze(b, l0, 1);
      l1 = build_unsqueeze(b, l1, 1);
    }
    Value *p = b_mul(b, build_index_select(b, y, dim, i0), l0);
    Value *q = b_mul(b, build_index_select(b, y, dim, i1), l1);
    y = b_add(b, p, q);
  }
  if (y == x) y = build_clone(b, y);
  out[0] = half ? build_down(b, y, dt) : y;
  return 1;
}

// ============================================================================
// local_response_norm: input / (k + alpha * avg over `size` channels around each of
// input^2, zero padded)^beta; avg_pool3d with a (size, 1, 1) window is avg_pool2d with a
// (size, 1) window over the input's trailing dims flattened (the same sums, divided by
// size). Operands: the input, alpha, beta, k.
// ============================================================================
int build_local_response_norm(Builder *b, const void *args, Value **out) {
  const LrnArgs *a = args;
  Value *x = b_in(b, 0);
  const View *xv = &x->view;
  int nd = xv->ndim;
  if (view_numel(*xv) == 0) {
    out[0] = build_clone(b, x);
    return 1;
  }
  int64_t rest = 1, size = a->size;
  for (int i = 2; i < nd; i++) rest *= xv->shape[i];
  int64_t shape[4] = {xv->shape[0], 1, xv->shape[1], rest};
  int64_t lo = size >= 0 ? size / 2 : -((-size + 1) / 2), hi = size - 1 >= 0 ? (size - 1) / 2 : -((-size + 2) / 2);
  int64_t pads[4] = {0, 0, lo, hi};
  Value *d = build_reshape(b, b_mul(b, x, x), 4, shape);
  Value *dp = build_pad_value(b, d, 2, pads, PAD_CONSTANT, NULL);
  if (not_new(dp, d)) dp = build_clone(b, dp);  // F.pad's copy
  PoolArgs avg = {.kind = POOL_AVG, .nsp = 2, .k = {size, 1}, .s = {1, 1}, .dil = {1, 1}, .count_include_pad = true};
  avg.out[0] = dp->view.shape[2] - size + 1, avg.out[1] = dp->view.shape[3];
  Value *div = build_reshape(b, avg_pool(b, &avg, dp), nd, xv->shape);
  div = b_add(b, b_mul(b, div, b_in(b, 1)), b_in(b, 3));
  div = b_pow(b, div, b_in(b, 2));
  out[0] = b_div(b, x, div);
  return 1;
}
