// ir/build_conv.c: padding, convolution, pooling, interpolation, fold and unfold of
// torch.nn.functional, for 1 to 3 spatial dims (ir/build.h):
//   pad          a cat of full nodes (constant), flipped narrows (reflect), expanded edge
//                narrows (replicate) or narrows of the other end (circular), one dim
//                after another from the last; negative pads are narrows
//   pools        the window view of the (padded) input, [..., O..., k...] with no copy
//                (view_windows), reduced over its window dims; avg's divisors without
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
// x padded on its last nsp dims by p on the left and what the last window needs on the right
static Value *pool_pad(Builder *b, Value *x, int nsp, const int64_t *out, const int64_t *k, const int64_t *p,
                       const int64_t *s, const int64_t *dil, const Value *fill) {
  int64_t pads[2 * TD_MAX_DIMS];
  bool any = false;
  int nd = x->view.ndim;
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->view.shape[nd - nsp + i], need = (out[i] - 1) * s[i] + dil[i] * (k[i] - 1) + 1;
    int64_t r = need - in - p[i];
    pads[2 * (nsp - 1 - i)] = p[i];
    pads[2 * (nsp - 1 - i) + 1] = r > 0 ? r : 0;
    any |= p[i] > 0 || r > 0;
  }
  return any ? build_pad_value(b, x, nsp, pads, PAD_CONSTANT, fill) : x;
}

// The windows of x's last nsp dims as a view [..., O..., k...] of x.
static Value *windows(Builder *b, Value *x, int nsp, const int64_t *out, const int64_t *k, const int64_t *s,
                      const int64_t *dil) {
  return build_view(b, x, view_windows(x->view, x->view.ndim - nsp, nsp, out, k, s, dil));
}

// The reduction op over the window dims of w (the last nsp of nd + nsp), as the call
// op(w, dims) makes it.
static Value *reduce_windows(Builder *b, Op op, Value *w, int nd, int nsp) {
  return build_reduce_mask(b, op, w, b_dims_from(nd, nd + nsp), nsp == 1 ? nd : -1, false, DT_COUNT);
}

// amax over the windows of the input padded with -inf
static Value *max_pool(Builder *b, const PoolArgs *a, Value *x) {
  Value *xp = pool_pad(b, x, a->nsp, a->out, a->k, a->p, a->s, a->dil, b_f(b, -INFINITY));
  return reduce_windows(b, OP_AMAX, windows(b, xp, a->nsp, a->out, a->k, a->s, a->dil), x->view.ndim, a->nsp);
}

// The counts of the windows along one dim (length in): positions inside [lo, hi) of the
// padded axis, as a 1-D f32 tensor [out] (a window sum over a padded ones tensor).
static Value *window_counts(Builder *b, int64_t in, int64_t k, int64_t p, int64_t s, int64_t out, bool include_pad) {
  int64_t n = include_pad ? in + 2 * p : in;
  Value *ones = build_full(b, 1, &n, b_i(b, 1), DT_F32);
  int64_t pp = include_pad ? 0 : p, dil = 1;
  Value *mp = pool_pad(b, ones, 1, &out, &k, &pp, &s, &dil, fill_zero(b));
  return reduce_windows(b, OP_SUM, windows(b, mp, 1, &out, &k, &s, &dil), 1, 1);
}

// the windows' sums of the zero-padded input over their divisors; halves summed in f32
// and rounded once
static Value *avg_pool(Builder *b, const PoolArgs *a, Value *x) {
  int nsp = a->nsp, nd = x->view.ndim;
  DType dt = x->dtype;
  Value *xp = pool_pad(b, x, nsp, a->out, a->k, a->p, a->s, a->dil, NULL);
  Value *w = build_up(b, windows(b, xp, nsp, a->out, a->k, a->s, a->dil));
  Value *sum = reduce_windows(b, OP_SUM, w, nd, nsp);
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

// adaptive pools: output i of a dim of length n reduces [floor(i n / o), ceil((i + 1) n / o))
static Value *adaptive_pool(Builder *b, const PoolArgs *a, Value *x) {
  bool is_max = a->kind == POOL_ADAPTIVE_MAX;
  int nsp = a->nsp, nd = x->view.ndim;
  DType dt = x->dtype;
  Op red = is_max ? OP_AMAX : OP_MEAN;
  Value *y = is_max ? x : build_up(b, x);
  bool uniform = true;
  int64_t k[BUILD_MAX_SPATIAL], one[BUILD_MAX_SPATIAL];
  for (int i = 0; i < nsp; i++) {
    int64_t len = x->view.shape[nd - nsp + i];
    uniform &= a->out[i] > 0 && len % a->out[i] == 0;
    k[i] = a->out[i] > 0 ? len / a->out[i] : 0;
    one[i] = 1;
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
  case POOL_MAX: out[0] = max_pool(b, a, x); break;
  case POOL_AVG: out[0] = avg_pool(b, a, x); break;
  case POOL_LP: out[0] = lp_pool(b, a, x); break;
  default: out[0] = adaptive_pool(b, a, x); break;
  }
  return 1;
}

// ============================================================================
// conv, conv_transpose
// ============================================================================
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
  View win = view_windows(*pv, 2, nsp, out, k, a->s, a->dil);  // [N, C, out..., k...]
  int G = groups > 1, Og = (int)(O / groups);
  View av = {0}, bv = {0};
  int8_t ra[TD_MAX_DIMS], rb[TD_MAX_DIMS];
  int na = 0, nb = 0, no = 0;
  bv.shape[nb] = win.shape[0], bv.strides[nb] = win.strides[0], rb[nb++] = (int8_t)no++;
  if (G) {
    av.shape[na] = groups, av.strides[na] = wv->strides[0] * Og, ra[na++] = (int8_t)no;
    bv.shape[nb] = groups, bv.strides[nb] = win.strides[1] * Cg, rb[nb++] = (int8_t)no++;
  }
  av.shape[na] = Og, av.strides[na] = wv->strides[0], ra[na++] = (int8_t)no++;
  av.shape[na] = Cg, av.strides[na] = wv->strides[1], ra[na++] = -1;
  bv.shape[nb] = Cg, bv.strides[nb] = win.strides[1], rb[nb++] = -1;
  for (int i = 0; i < nsp; i++) {
    av.shape[na] = k[i], av.strides[na] = wv->strides[2 + i], ra[na++] = (int8_t)(-2 - i);
    bv.shape[nb] = k[i], bv.strides[nb] = win.strides[2 + nsp + i], rb[nb++] = (int8_t)(-2 - i);
  }
  for (int i = 0; i < nsp; i++) bv.shape[nb] = out[i], bv.strides[nb] = win.strides[2 + i], rb[nb++] = (int8_t)no++;
  av.ndim = na, av.offset = wv->offset;
  bv.ndim = nb, bv.offset = win.offset;
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
  Value *xp = padded ? build_pad_value(b, xb, nsp, pads, PAD_CONSTANT, NULL) : xb;
  Value *r = convolve(b, a, xp, w, bias);
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

// Each spatial dim in turn gathers (index_select) the input at source indices computed in
// f32 from an arange, as PyTorch's kernels compute them; the linear modes add the two
// neighbours by their weights. Halves are interpolated in f32 and rounded once.
int build_interpolate(Builder *b, const void *args, Value **out) {
  const InterpArgs *a = args;
  Value *x = b_in(b, 0);
  int nd = x->view.ndim;
  DType dt = x->dtype;
  bool nearest = a->mode == INTERP_NEAREST, half = dtype_is_half(dt) && !nearest;
  Value *y = half ? build_cast(b, x, DT_F32) : x;
  for (int i = 0; i < a->nsp; i++) {
    int dim = 2 + i;
    int64_t in = x->view.shape[dim], o = a->out[i];
    if (o == in && nearest) continue;
    float sc = a->scale[i] ? (float)(1.0 / a->scale[i]) : (float)in / (float)o;
    if (nearest) {
      Value *src = b_un(b, OP_FLOOR, b_mul(b, arange_f32(b, o), b_f(b, sc)));
      src = build_cast(b, build_clamp(b, src, NULL, b_i(b, in - 1)), DT_I64);
      y = build_index_select(b, y, dim, src);
      continue;
    }
    Value *src;
    if (a->align_corners) {
      float s2 = o > 1 ? (float)(in - 1) / (float)(o - 1) : 0.0f;
      src = b_mul(b, arange_f32(b, o), b_f(b, s2));
    } else {
      src = b_add(b, arange_f32(b, o), b_f(b, 0.5));
      src = b_sub(b, b_mul(b, src, b_f(b, sc)), b_f(b, 0.5));
      src = build_clamp(b, src, b_i(b, 0), NULL);
    }
    Value *i0 = build_cast(b, src, DT_I64);
    Value *i1 = build_clamp(b, b_add(b, i0, b_i(b, 1)), NULL, b_i(b, in - 1));
    Value *l1 = b_sub(b, src, i0);
    Value *l0 = b_sub(b, b_f(b, 1.0), l1);
    for (int j = dim; j < nd - 1; j++) {  // the weights along dim: [o, 1...]
      l0 = build_unsqueeze(b, l0, 1);
      l1 = build_unsqueeze(b, l1, 1);
    }
    if (dt == DT_F64) l0 = build_cast(b, l0, DT_F64), l1 = build_cast(b, l1, DT_F64);
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
