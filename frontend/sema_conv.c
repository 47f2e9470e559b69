// frontend/sema_conv.c: padding, pooling and convolution of torch.nn.functional, built
// from parts (frontend/sema_nn.c's builders) that fusion joins again:
//   pad          a cat of full parts (constant), flipped narrows (reflect), expanded
//                edge narrows (replicate) or narrows of the other end (circular), one
//                dim after another from the last; negative pads are narrows
//   max/avg pool a window view of the (padded) input, [N, C, OH, OW, kh, kw] with no
//                copy, reduced over its window dims; avg's divisors without
//                count_include_pad are the same window sums over a padded ones tensor
//   adaptive     uniform windows when the output divides the input, else one narrow
//                and reduction per output index along each dim (both are separable)
//   conv         one GEMM (a contraction) of the weight [O, C, kh, kw] by the window
//                view [N, C, kh, kw, OH, OW] of the (padded) input, summed over C and
//                the taps: k spans three dims, which the GEMM's packing reads in place
//                (no im2col copy); the output [N, O, OH, OW] is the GEMM's own, so the
//                bias and what follows elementwise (batch_norm, relu) are its epilogue
//   conv_transpose  conv of the input spread by the stride and padded, by the kernel
//                flipped with its channels swapped
//   interpolate  nearest, linear, bilinear: per dim, a gather at source indices computed
//                in f32 from an arange (and the two neighbours' weights)
//   fold         conv_transpose2d of the blocks by one-hot kernels, C groups
// Each checker reports every misuse (PyTorch's message) before it builds parts.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

// ============================================================================
// Parts
// ============================================================================
static Ast *call2(Sema *sema, const Ast *e, const char *op, Ast *a, Ast *b) {
  return part_call(sema, e, op, (Ast *[]){a, b}, 2);
}

static Ast *narrow(Sema *sema, const Ast *e, Ast *x, int d, int64_t start, int64_t len) {
  return part_call(sema, e, "narrow",
                   (Ast *[]){x, part_int(sema, e, d), part_int(sema, e, start), part_int(sema, e, len)}, 4);
}

// A view of x's storage: (shape, strides, offset) computed here, as x.unfold's.
static Ast *view_part(Sema *sema, const Ast *e, Ast *x, View v) {
  Ast *n = part(sema, e, "as_strided");
  set_operand1(sema, n, x);
  n->ty = ty_view_of(sema, x->ty, v);
  return n;
}

static Ast *cat_parts(Sema *sema, const Ast *e, Ast **items, int n, int d) {
  if (n == 1) return items[0];
  return call2(sema, e, "cat", part_seq(sema, e, TY_LIST, items, n), part_int(sema, e, d));
}

// full(shape, value, dtype=dt)
static Ast *full_part(Sema *sema, const Ast *e, int nd, const int64_t *shape, Ast *value, DType dt) {
  return part_call(sema, e, "full", (Ast *[]){part_ints(sema, e, nd, shape), value, part_dtype(sema, e, dt)}, 3);
}

static Ast *flip_dim(Sema *sema, const Ast *e, Ast *x, int d) {
  int64_t dd = d;
  return call2(sema, e, "flip", x, part_ints(sema, e, 1, &dd));
}

static const char *dtype_kind_name(DType dt) { return torch_name(dt); }

// ============================================================================
// pad(input, pad, mode='constant', value=None)
// ============================================================================
enum { PAD_CONSTANT, PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR };

// One dim d of x padded by (l, r) (negative: cropped); value is the constant's.
static Ast *pad_dim(Sema *sema, const Ast *e, Ast *x, int d, int64_t l, int64_t r, int mode, Ast *value) {
  const View *v = &x->ty->view;
  int64_t n = v->shape[d];
  Ast *mid = x;
  if (l < 0) mid = narrow(sema, e, mid, d, -l, n + l);
  if (!is_poison(mid->ty) && r < 0) mid = narrow(sema, e, mid, d, 0, mid->ty->view.shape[d] + r);
  if (is_poison(mid->ty)) return mid;
  int64_t m = mid->ty->view.shape[d];
  Ast *items[3];
  int k = 0;
  for (int side = 0; side < 2; side++) {
    int64_t p = side == 0 ? l : r;
    if (side == 1) items[k++] = mid;
    if (p <= 0) continue;
    Ast *s;
    if (mode == PAD_CONSTANT) {
      int64_t shape[TD_MAX_DIMS];
      memcpy(shape, mid->ty->view.shape, sizeof shape);
      shape[d] = p;
      s = full_part(sema, e, v->ndim, shape, value, x->ty->dtype);
    } else if (mode == PAD_REFLECT) {
      s = flip_dim(sema, e, narrow(sema, e, x, d, side == 0 ? 1 : n - 1 - p, p), d);
    } else if (mode == PAD_REPLICATE) {
      Ast *edge = narrow(sema, e, x, d, side == 0 ? 0 : n - 1, 1);
      int64_t shape[TD_MAX_DIMS];
      memcpy(shape, edge->ty->view.shape, sizeof shape);
      shape[d] = p;
      s = call2(sema, e, "expand", edge, part_ints(sema, e, v->ndim, shape));
    } else {
      s = narrow(sema, e, mid, d, side == 0 ? m - p : 0, p);
    }
    items[k++] = s;
  }
  return cat_parts(sema, e, items, k, d);
}

// x padded by pads[0..2*np) (last dim first, as PyTorch orders them); NULL after a
// message. value: NULL for zeros.
static Ast *pad_all(Sema *sema, const Ast *e, Ast *x, int np, const int64_t *pads, int mode, Ast *value) {
  int nd = x->ty->view.ndim;
  if (mode == PAD_CONSTANT && !value) value = part_int(sema, e, 0);
  Ast *y = x;
  for (int i = 0; i < np; i++) {
    y = pad_dim(sema, e, y, nd - 1 - i, pads[2 * i], pads[2 * i + 1], mode, value);
    if (is_poison(y->ty)) return NULL;
  }
  return y;
}

static const char *const MODE_NAMES[] = {"constant", "reflect", "replicate", "circular"};

TType *ck_pad(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *pa = e->bargs[1], *ma = barg(e, 2), *va = barg(e, 3);
  const TType *xt = get_tensor(sema, e, x, "input");
  if (!xt) return poison(sema);
  if (is_scalar(pa->ty)) {
    diag_error(sema->cx, pa->loc, "pad(): argument %s must be tuple of ints, not %s", arg_name(sema, e, "pad"),
               py_type_name(pa->ty));
    return poison(sema);
  }
  int64_t pads[MAX_LIST];
  int n;
  if (!get_ints(sema, e, pa, "pad", pads, &n)) return poison(sema);
  int mode = PAD_CONSTANT;
  if (ma) {
    if (ma->ty->kind != TY_STR) {
      diag_error(sema->cx, ma->loc, "pad(): argument 'mode' must be str, not %s", py_type_name(ma->ty));
      return poison(sema);
    }
    mode = -1;
    for (int i = 0; i < 4; i++)
      if (!strcmp(ma->ty->module, MODE_NAMES[i])) mode = i;
    if (mode < 0) {
      diag_error(sema->cx, ma->loc, "Unrecognised padding mode %s", ma->ty->module);
      return poison(sema);
    }
  }
  if (va && !is_scalar(va->ty)) {
    diag_error(sema->cx, va->loc, "pad(): argument 'value' must be float, not %s", py_type_name(va->ty));
    return poison(sema);
  }
  int nd = xt->view.ndim;
  if (n % 2) {
    diag_error(sema->cx, pa->loc, "Padding length must be divisible by 2");
    return poison(sema);
  }
  if (n / 2 > nd) {
    diag_error(sema->cx, pa->loc, "Padding length too large");
    return poison(sema);
  }
  if (mode != PAD_CONSTANT) {
    if (va) {
      diag_error(sema->cx, va->loc, "Padding mode \"%s\" doesn't take in value argument", MODE_NAMES[mode]);
      return poison(sema);
    }
    int k = n / 2;
    if (!((k == 1 && (nd == 2 || nd == 3)) || (k == 2 && (nd == 3 || nd == 4)) || (k == 3 && (nd == 4 || nd == 5)))) {
      diag_error(sema->cx, call_loc(e), "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
      return poison(sema);
    }
    if (mode != PAD_CIRCULAR && !dtype_is_float(xt->dtype)) {
      diag_error(sema->cx, call_loc(e), "\"%s_pad%dd%s\" not implemented for '%s'",
                 mode == PAD_REFLECT ? "reflection" : "replication", k, mode == PAD_REFLECT ? "" : "_cpu",
                 dtype_kind_name(xt->dtype));
      return poison(sema);
    }
    for (int i = 0; i < k; i++) {
      int dim = nd - 1 - i;
      int64_t len = xt->view.shape[dim], l = pads[2 * i], r = pads[2 * i + 1];
      if (len == 0) {
        diag_error(sema->cx, x->loc, "%s padding of an empty dimension %d: its size is 0", MODE_NAMES[mode], dim);
        return poison(sema);
      }
      if (mode == PAD_REFLECT && (l >= len || r >= len)) {
        if (k == 1)
          diag_error(sema->cx, pa->loc, "Argument #4: Padding size should be less than the corresponding input "
                     "dimension, but got: padding (%" PRId64 ", %" PRId64 ") at dimension %d of input %s", l, r, dim,
                     shape_str(sema, nd, xt->view.shape));
        else
          diag_error(sema->cx, pa->loc, "Argument #%d: Padding size should be less than the corresponding input "
                     "dimension, but got: padding (%" PRId64 ", %" PRId64 ") at dimension %d of input %d",
                     i == 0 ? 4 : 6, l, r, dim, nd);
        return poison(sema);
      }
      if (len + l + r < (mode == PAD_CIRCULAR ? 1 : 0) || (mode == PAD_CIRCULAR && len + l + r == 0)) {
        if (mode == PAD_CIRCULAR)
          diag_error(sema->cx, pa->loc, "Negative padding value is resulting in an empty dimension");
        else
          diag_error(sema->cx, pa->loc, "input (W: %" PRId64 ") is too small. Calculated output W: %" PRId64, len,
                     len + l + r);
        return poison(sema);
      }
      int64_t m = len - (l < 0 ? -l : 0) - (r < 0 ? -r : 0);
      if (mode == PAD_CIRCULAR && (l > len || r > len || l > m || r > m)) {
        diag_error(sema->cx, pa->loc, "Padding value causes wrapping around more than once.");
        return poison(sema);
      }
    }
  }
  Ast *y = pad_all(sema, e, x, n / 2, pads, mode, va);
  if (!y) return poison(sema);
  if (y == x || y->ty->kind != TY_TENSOR || y->bi->kind == BK_VIEW)  // a view (no pad, or crops only): a new tensor
    y = part_call(sema, e, "clone", &y, 1);
  return become(sema, e, y);
}

// ============================================================================
// Pooling: window views of the (padded) input, reduced over the window dims
// ============================================================================
// An int or a tuple of 1 or nsp ints, as nsp values; false after the message.
static bool pool_ints(Sema *sema, const Ast *e, Ast *a, const char *pname, int nsp, int64_t *out) {
  int64_t v[MAX_LIST];
  int n;
  if (!get_ints(sema, e, a, pname, v, &n)) return false;
  if (n != 1 && n != nsp) {
    if (nsp == 1)
      diag_error(sema->cx, a->loc, "%s must be a single int, or a tuple of one int", pname);
    else
      diag_error(sema->cx, a->loc, "%s: %s must either be a single int, or a tuple of two ints", e->bi->name, pname);
    return false;
  }
  for (int i = 0; i < nsp; i++) out[i] = v[n == 1 ? 0 : i];
  return true;
}

// PyTorch's pooling_output_shape
static int64_t pool_out(int64_t in, int64_t k, int64_t p, int64_t s, int64_t dil, bool ceil_mode) {
  int64_t num = in + 2 * p - dil * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) o--;
  return o;
}

// The windows of x's last nsp dims as a view [..., O0, O1, k0, k1] of x: x is read at
// o * s + j * dil (its pads already made).
static Ast *windows(Sema *sema, const Ast *e, Ast *x, int nsp, const int64_t *out, const int64_t *k,
                    const int64_t *s, const int64_t *dil) {
  View v = x->ty->view;
  int nd = v.ndim;
  for (int i = 0; i < nsp; i++) {
    int sd = nd - nsp + i;
    int64_t st = v.strides[sd];
    v.shape[sd] = out[i];
    v.strides[sd] = st * s[i];
    v.shape[nd + i] = k[i];
    v.strides[nd + i] = st * dil[i];
  }
  v.ndim = nd + nsp;
  return view_part(sema, e, x, v);
}

// x padded on its last nsp dims by p on the left and what the last window needs on the right
static Ast *pool_pad(Sema *sema, const Ast *e, Ast *x, int nsp, const int64_t *out, const int64_t *k,
                     const int64_t *p, const int64_t *s, const int64_t *dil, Ast *value) {
  int64_t pads[2 * TD_MAX_DIMS];
  bool any = false;
  int nd = x->ty->view.ndim;
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->ty->view.shape[nd - nsp + i], need = (out[i] - 1) * s[i] + dil[i] * (k[i] - 1) + 1;
    int64_t r = need - in - p[i];
    pads[2 * (nsp - 1 - i)] = p[i];
    pads[2 * (nsp - 1 - i) + 1] = r > 0 ? r : 0;
    any |= p[i] > 0 || r > 0;
  }
  return any ? pad_all(sema, e, x, nsp, pads, PAD_CONSTANT, value) : x;
}

static Ast *window_dims(Sema *sema, const Ast *e, int nd, int nsp) {
  int64_t dims[TD_MAX_DIMS];
  for (int i = 0; i < nsp; i++) dims[i] = nd + i;
  return part_ints(sema, e, nsp, dims);
}

static Ast *to_half(Sema *sema, const Ast *e, Ast *y, DType dt) {
  return dt == DT_F16 ? part_cast(sema, e, y, "half") : dt == DT_BF16 ? part_cast(sema, e, y, "bfloat16") : y;
}

// The checks every pool makes of input, kernel_size, stride, padding (and dilation);
// fills nsp values of each. fname: PyTorch's name in its messages.
static bool pool_args(Sema *sema, const Ast *e, int nsp, bool dilated, int64_t *k, int64_t *s, int64_t *p,
                      int64_t *dil, bool *ceil_mode, int64_t *out) {
  Ast *x = e->bargs[0];
  const TType *xt = get_tensor(sema, e, x, "input");
  if (!xt) return false;
  Ast *sa = barg(e, 2), *pa = barg(e, 3), *da = dilated ? barg(e, 4) : NULL, *ca = barg(e, dilated ? 5 : 4);
  if (!pool_ints(sema, e, e->bargs[1], "kernel_size", nsp, k)) return false;
  if (sa && sa->ty->kind != TY_SCALAR && sa->ty->nelem == 0) sa = NULL;  // stride=[]: the kernel size
  if (sa ? !pool_ints(sema, e, sa, "stride", nsp, s) : (memcpy(s, k, sizeof(int64_t) * (size_t)nsp), false))
    return false;
  for (int i = 0; i < nsp; i++) p[i] = 0, dil[i] = 1;
  if ((pa && !pool_ints(sema, e, pa, "padding", nsp, p)) || (da && !pool_ints(sema, e, da, "dilation", nsp, dil)))
    return false;
  *ceil_mode = false;
  if (ca && !get_bool(sema, e, ca, "ceil_mode", ceil_mode)) return false;
  int nd = xt->view.ndim;
  if (nd != nsp + 1 && nd != nsp + 2) {
    diag_error(sema->cx, x->loc, "Expected %d to %d dimensions, but got %d-dimensional tensor for argument #1 'self' "
               "(while checking arguments for %s)", nsp + 1, nsp + 2, nd, e->bi->name);
    return false;
  }
  for (int i = 0; i < nsp; i++) {
    if (k[i] <= 0) {
      diag_error(sema->cx, e->bargs[1]->loc, "kernel size should be greater than zero, but got kernel_size: %" PRId64,
                 k[i]);
      return false;
    }
    if (s[i] <= 0) {
      diag_error(sema->cx, sa ? sa->loc : call_loc(e), "stride should be greater than zero, but got stride: %" PRId64,
                 s[i]);
      return false;
    }
    if (dil[i] <= 0) {
      diag_error(sema->cx, da->loc, "dilation should be greater than zero, but got dilation: %" PRId64, dil[i]);
      return false;
    }
    if (p[i] < 0) {
      diag_error(sema->cx, pa->loc, "pad must be non-negative, but got pad: %" PRId64, p[i]);
      return false;
    }
    if (p[i] > k[i] / 2) {
      diag_error(sema->cx, pa->loc, "pad should be at most half of kernel size, but got pad=%" PRId64
                 " and kernel_size=%" PRId64, p[i], k[i]);
      return false;
    }
    out[i] = pool_out(xt->view.shape[nd - nsp + i], k[i], p[i], s[i], dil[i], *ceil_mode);
  }
  for (int i = 0; i < nsp; i++)
    if (out[i] <= 0) {
      const int64_t *sh = xt->view.shape + nd - nsp - 1;
      if (nsp == 1)
        diag_error(sema->cx, call_loc(e), "Given input size: (%" PRId64 "x1x%" PRId64 "). Calculated output size: (%"
                   PRId64 "x1x%" PRId64 "). Output size is too small", sh[0], sh[1], sh[0], out[0]);
      else
        diag_error(sema->cx, call_loc(e), "Given input size: (%" PRId64 "x%" PRId64 "x%" PRId64 "). Calculated output "
                   "size: (%" PRId64 "x%" PRId64 "x%" PRId64 "). Output size is too small", sh[0], sh[1], sh[2], sh[0],
                   out[0], out[1]);
      return false;
    }
  if (!dtype_is_float(xt->dtype)) {  // PyTorch's CUDA kernels take floats
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'",
               dilated ? "max_pool2d_with_indices_out_cuda_frame" : "avg_pool2d_out_cuda_frame", torch_name(xt->dtype));
    return false;
  }
  return true;
}

// max_pool1d/2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
// return_indices=False): amax over the windows of the input padded with -inf
TType *ck_max_pool(Sema *sema, Ast *e, const BuiltinDef *d) {
  int nsp = d->b.name[8] - '0';
  int64_t k[2], s[2], p[2], dil[2], out[2];
  bool ceil_mode, ri = false;
  if (!pool_args(sema, e, nsp, true, k, s, p, dil, &ceil_mode, out)) return poison(sema);
  Ast *ra = barg(e, 6);
  if (ra && !get_bool(sema, e, ra, "return_indices", &ri)) return poison(sema);
  if (ri) {
    diag_error(sema->cx, ra->loc, "%s: return_indices=True is not supported: use the windows' argmax", d->b.name);
    return poison(sema);
  }
  Ast *x = e->bargs[0];
  Ast *xp = pool_pad(sema, e, x, nsp, out, k, p, s, dil, part_float(sema, e, -INFINITY));
  if (!xp) return poison(sema);
  Ast *w = windows(sema, e, xp, nsp, out, k, s, dil);
  Ast *y = part_call(sema, e, "amax", (Ast *[]){w, window_dims(sema, e, x->ty->view.ndim, nsp)}, 2);
  return become(sema, e, y);
}

// The counts of the windows along one dim (length in): positions inside [lo, hi) of
// the padded axis, as a 1-D f32 tensor [out] (a window sum over a padded ones tensor).
static Ast *window_counts(Sema *sema, const Ast *e, int64_t in, int64_t k, int64_t p, int64_t s, int64_t out,
                          bool include_pad) {
  int64_t n = include_pad ? in + 2 * p : in;
  Ast *ones = full_part(sema, e, 1, &n, part_int(sema, e, 1), DT_F32);
  int64_t pp = include_pad ? 0 : p, dil = 1;
  Ast *mp = pool_pad(sema, e, ones, 1, &out, &k, &pp, &s, &dil, part_int(sema, e, 0));
  Ast *w = windows(sema, e, mp, 1, &out, &k, &s, &dil);
  return part_call(sema, e, "sum", (Ast *[]){w, window_dims(sema, e, 1, 1)}, 2);
}

// avg_pool1d/2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
// count_include_pad=True, divisor_override=None): the windows' sums of the zero-padded
// input over their divisors; halves summed in f32 and rounded once
TType *ck_avg_pool(Sema *sema, Ast *e, const BuiltinDef *d) {
  int nsp = d->b.name[8] - '0';
  int64_t k[2], s[2], p[2], dil[2], out[2];
  bool ceil_mode, cip = true;
  if (!pool_args(sema, e, nsp, false, k, s, p, dil, &ceil_mode, out)) return poison(sema);
  Ast *ca = barg(e, 5), *da = nsp == 2 ? barg(e, 6) : NULL;
  if (ca && !get_bool(sema, e, ca, "count_include_pad", &cip)) return poison(sema);
  int64_t div = 0;
  if (da && !get_int(sema, e, da, "divisor_override", &div)) return poison(sema);
  if (da && div == 0) {
    diag_error(sema->cx, da->loc, "divisor must be not zero");
    return poison(sema);
  }
  Ast *x = e->bargs[0];
  DType dt = x->ty->dtype;
  int nd = x->ty->view.ndim;
  Ast *xp = pool_pad(sema, e, x, nsp, out, k, p, s, dil, NULL);
  if (!xp) return poison(sema);
  Ast *w = windows(sema, e, xp, nsp, out, k, s, dil);
  if (dtype_is_half(dt)) w = part_cast(sema, e, w, "float");
  Ast *sum = part_call(sema, e, "sum", (Ast *[]){w, window_dims(sema, e, nd, nsp)}, 2);
  bool uniform = true;  // every window counts k0 * k1
  for (int i = 0; i < nsp; i++) {
    int64_t in = x->ty->view.shape[nd - nsp + i];
    uniform &= (cip || p[i] == 0) && (out[i] - 1) * s[i] + k[i] <= in + (cip ? 2 * p[i] : 0);
  }
  Ast *y;
  if (da || uniform) {
    int64_t n = da ? div : nsp == 2 ? k[0] * k[1] : k[0];
    y = part_binary(sema, e, OP_DIV, "div", sum, part_int(sema, e, n));
  } else {
    Ast *cnt = NULL;
    for (int i = 0; i < nsp; i++) {
      Ast *c = window_counts(sema, e, x->ty->view.shape[nd - nsp + i], k[i], p[i], s[i], out[i], cip);
      if (i == 0 && nsp == 2) c = call2(sema, e, "unsqueeze", c, part_int(sema, e, 1));
      cnt = cnt ? part_binary(sema, e, OP_MUL, "mul", cnt, c) : c;
    }
    if (dt == DT_F64) cnt = part_cast(sema, e, cnt, "double");
    y = part_binary(sema, e, OP_DIV, "div", sum, cnt);
  }
  return become(sema, e, to_half(sema, e, y, dt));
}

// ============================================================================
// conv1d / conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)
// ============================================================================
// An int or 1 or nsp ints of conv's argument a (def: its default), as nsp values.
static bool conv_ints(Sema *sema, const Ast *e, Ast *a, const char *pname, int nsp, int64_t def, int64_t *out) {
  if (!a) {
    for (int i = 0; i < nsp; i++) out[i] = def;
    return true;
  }
  int64_t v[MAX_LIST];
  int n;
  if (!get_ints(sema, e, a, pname, v, &n)) return false;
  if (n != 1 && n != nsp) {
    char buf[128];
    int len = 0;
    for (int i = 0; i < n && len < 100; i++) len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%" PRId64,
                                                               i ? ", " : "", v[i]);
    diag_error(sema->cx, a->loc, "expected %s to be a single integer value or a list of %d values to match the "
               "convolution dimensions, but got %s=[%s]", pname, nsp, pname, buf);
    return false;
  }
  for (int i = 0; i < nsp; i++) out[i] = v[n == 1 ? 0 : i];
  return true;
}

// PyTorch's checks of a convolution's numbers (output padding: the transposed ones).
static bool conv_params_ok(Sema *sema, const Ast *e, int nsp, const int64_t *p, const int64_t *op, const int64_t *s,
                           const int64_t *dil, int64_t groups, const Ast *ga) {
  for (int i = 0; i < nsp; i++) {
    const char *bad = p[i] < 0 ? "negative padding" : op && op[i] < 0 ? "negative output_padding"
                      : s[i] <= 0 ? "non-positive stride" : dil[i] <= 0 ? "non-positive dilation" : NULL;
    if (bad) {
      diag_error(sema->cx, call_loc(e), "%s is not supported", bad);
      return false;
    }
  }
  if (groups <= 0) {
    diag_error(sema->cx, ga->loc, "non-positive groups is not supported");
    return false;
  }
  return true;
}

TType *ck_conv(Sema *sema, Ast *e, const BuiltinDef *d) {
  int nsp = d->b.name[4] - '0';
  Ast *x = e->bargs[0], *w = e->bargs[1], *bias = barg(e, 2), *sa = barg(e, 3), *pa = barg(e, 4), *da = barg(e, 5),
      *ga = barg(e, 6);
  const TType *xt = get_tensor(sema, e, x, "input"), *wt = xt ? get_tensor(sema, e, w, "weight") : NULL;
  if (!xt || !wt || (bias && !get_tensor(sema, e, bias, "bias"))) return poison(sema);
  int64_t s[2], p[2] = {0, 0}, dil[2], groups = 1;
  bool same = false;
  if (!conv_ints(sema, e, sa, "stride", nsp, 1, s)) return poison(sema);
  if (pa && pa->ty->kind == TY_STR) {
    same = !strcmp(pa->ty->module, "same");
    if (!same && strcmp(pa->ty->module, "valid")) {
      diag_error(sema->cx, pa->loc, "Invalid padding string: '%s'", pa->ty->module);
      return poison(sema);
    }
  } else if (!conv_ints(sema, e, pa, "padding", nsp, 0, p)) {
    return poison(sema);
  }
  if (!conv_ints(sema, e, da, "dilation", nsp, 1, dil) || (ga && !get_int(sema, e, ga, "groups", &groups)))
    return poison(sema);
  const View *xv = &xt->view, *wv = &wt->view;
  if (xv->ndim != nsp + 1 && xv->ndim != nsp + 2) {
    diag_error(sema->cx, x->loc, "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s",
               nsp + 1, nsp + 2, d->b.name, shape_str(sema, xv->ndim, xv->shape));
    return poison(sema);
  }
  if (wv->ndim < 3) {
    diag_error(sema->cx, w->loc, "weight should have at least three dimensions");
    return poison(sema);
  }
  if (wv->ndim != nsp + 2) {
    diag_error(sema->cx, w->loc, "expected stride to be a single integer value or a list of %d values to match the "
               "convolution dimensions, but got stride=[%s]", wv->ndim - 2, nsp == 1 ? "1" : "1, 1");
    return poison(sema);
  }
  if (!conv_params_ok(sema, e, nsp, p, NULL, s, dil, groups, ga)) return poison(sema);
  if (same)
    for (int i = 0; i < nsp; i++)
      if (s[i] != 1) {
        diag_error(sema->cx, pa->loc, "padding='same' is not supported for strided convolutions");
        return poison(sema);
      }
  bool batched = xv->ndim == nsp + 2;
  int64_t xs[4];  // the input's shape as batched
  xs[0] = batched ? xv->shape[0] : 1;
  for (int i = 0; i < nsp + 1; i++) xs[i + 1] = xv->shape[xv->ndim - nsp - 1 + i];
  int64_t O = wv->shape[0], Cg = wv->shape[1], C = xs[1];
  if (O == 0) {
    diag_error(sema->cx, w->loc, "Given groups=%" PRId64 ", expected weight to be at least %" PRId64 " at dimension 0, "
               "but got weight of size %s instead", groups, groups, shape_str(sema, wv->ndim, wv->shape));
    return poison(sema);
  }
  for (int i = 0; i < nsp; i++)
    if (wv->shape[2 + i] == 0) {
      diag_error(sema->cx, w->loc, "%s of a kernel with a dimension of size 0 (weight of size %s)", d->b.name,
                 shape_str(sema, wv->ndim, wv->shape));
      return poison(sema);
    }
  if (O % groups) {
    diag_error(sema->cx, w->loc, "Given groups=%" PRId64 ", expected weight to be divisible by %" PRId64
               " at dimension 0, but got weight of size %s instead", groups, groups,
               shape_str(sema, wv->ndim, wv->shape));
    return poison(sema);
  }
  if (Cg * groups != C) {
    diag_error(sema->cx, call_loc(e), "Given groups=%" PRId64 ", weight of size %s, expected input%s to have %" PRId64
               " channels, but got %" PRId64 " channels instead", groups, shape_str(sema, wv->ndim, wv->shape),
               shape_str(sema, nsp + 2, xs), Cg * groups, C);
    return poison(sema);
  }
  int64_t pl[2], pr[2], k[2], in[2], out[2];
  for (int i = 0; i < nsp; i++) {
    k[i] = wv->shape[2 + i];
    in[i] = xs[2 + i];
    int64_t tot = same ? dil[i] * (k[i] - 1) : 2 * p[i];
    pl[i] = same ? tot / 2 : p[i];
    pr[i] = tot - pl[i];
  }
  bool too_big = false;
  for (int i = 0; i < nsp; i++) too_big |= dil[i] * (k[i] - 1) + 1 > in[i] + pl[i] + pr[i];
  if (too_big) {
    char a[64], b[64];
    if (nsp == 1) {
      snprintf(a, sizeof a, "%" PRId64, in[0] + pl[0] + pr[0]);
      snprintf(b, sizeof b, "%" PRId64, dil[0] * (k[0] - 1) + 1);
    } else {
      snprintf(a, sizeof a, "%" PRId64 " x %" PRId64, in[0] + pl[0] + pr[0], in[1] + pl[1] + pr[1]);
      snprintf(b, sizeof b, "%" PRId64 " x %" PRId64, dil[0] * (k[0] - 1) + 1, dil[1] * (k[1] - 1) + 1);
    }
    diag_error(sema->cx, call_loc(e), "Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel size "
               "can't be greater than actual input size", a, b);
    return poison(sema);
  }
  if (xt->dtype != wt->dtype) {
    diag_error(sema->cx, w->loc, "expected scalar type %s but found %s", torch_name(xt->dtype), torch_name(wt->dtype));
    return poison(sema);
  }
  if (bias) {
    const View *bv = &bias->ty->view;
    if (bv->ndim != 1 || bv->shape[0] != O) {
      diag_error(sema->cx, bias->loc, "Given weight of size %s, expected bias to be 1-dimensional with %" PRId64
                 " elements, but got bias of size %s instead", shape_str(sema, wv->ndim, wv->shape), O,
                 shape_str(sema, bv->ndim, bv->shape));
      return poison(sema);
    }
    if (bias->ty->dtype != xt->dtype) {
      diag_error(sema->cx, bias->loc, "Input type (%s) and bias type (%s) should be the same",
                 cpp_type_name(xt->dtype), cpp_type_name(bias->ty->dtype));
      return poison(sema);
    }
  }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"slow_conv2d_cuda\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  DType dt = xt->dtype;
  if (xs[0] == 0 || Cg == 0) {  // no batch, or nothing to sum: zeros (and the bias)
    int64_t os[4] = {xs[0], O};
    for (int i = 0; i < nsp; i++)
      os[2 + i] = (in[i] + pl[i] + pr[i] - dil[i] * (k[i] - 1) - 1) / s[i] + 1;
    Ast *z = full_part(sema, e, nsp + 2, os, part_int(sema, e, 0), dt);
    if (bias) {
      View bb = {nsp + 1, {O, 1, 1}, {bias->ty->view.strides[0], 0, 0}, bias->ty->view.offset};
      z = part_binary(sema, e, OP_ADD, "add", z, view_part(sema, e, bias, bb));
    }
    if (!batched) z = call2(sema, e, "squeeze", z, part_int(sema, e, 0));
    return become(sema, e, z);
  }
  // the parts: halves in f32, the input batched and padded
  bool half = dtype_is_half(dt);
  Ast *xb = batched ? x : call2(sema, e, "unsqueeze", x, part_int(sema, e, 0));
  if (half) xb = part_cast(sema, e, xb, "float"), w = part_cast(sema, e, w, "float");
  if (half && bias) bias = part_cast(sema, e, bias, "float");
  int64_t pads[4];
  bool padded = false;
  for (int i = 0; i < nsp; i++) {
    pads[2 * (nsp - 1 - i)] = pl[i], pads[2 * (nsp - 1 - i) + 1] = pr[i];
    padded |= pl[i] || pr[i];
  }
  Ast *xp = padded ? pad_all(sema, e, xb, nsp, pads, PAD_CONSTANT, NULL) : xb;
  if (!xp) return poison(sema);
  const View *pv = &xp->ty->view, *wv2 = &w->ty->view;
  for (int i = 0; i < nsp; i++) out[i] = (pv->shape[2 + i] - dil[i] * (k[i] - 1) - 1) / s[i] + 1;
  // one contraction over channels and taps: the weight A [(g,) O/g, C/g, k...] times the
  // window view B [N, (g,) C/g, k..., out...] of the input (a tap moves by the dilation,
  // an output by the stride), into [N, (g,) O/g, out...]; roles: output dims, or -1 - q
  // for k's dim q (C/g, then the taps)
  int G = groups > 1, Og = (int)(O / groups);
  View av = {0}, bv = {0};
  int64_t ra[TD_MAX_DIMS], rb[TD_MAX_DIMS];
  int na = 0, nb = 0, no = 0;
  bv.shape[nb] = pv->shape[0], bv.strides[nb] = pv->strides[0], rb[nb++] = no++;
  if (G) {
    av.shape[na] = groups, av.strides[na] = wv2->strides[0] * Og, ra[na++] = no;
    bv.shape[nb] = groups, bv.strides[nb] = pv->strides[1] * Cg, rb[nb++] = no++;
  }
  av.shape[na] = Og, av.strides[na] = wv2->strides[0], ra[na++] = no++;
  av.shape[na] = Cg, av.strides[na] = wv2->strides[1], ra[na++] = -1;
  bv.shape[nb] = Cg, bv.strides[nb] = pv->strides[1], rb[nb++] = -1;
  for (int i = 0; i < nsp; i++) {
    av.shape[na] = k[i], av.strides[na] = wv2->strides[2 + i], ra[na++] = -2 - i;
    bv.shape[nb] = k[i], bv.strides[nb] = dil[i] * pv->strides[2 + i], rb[nb++] = -2 - i;
  }
  for (int i = 0; i < nsp; i++) {
    bv.shape[nb] = out[i], bv.strides[nb] = s[i] * pv->strides[2 + i], rb[nb++] = no++;
  }
  av.ndim = na, av.offset = wv2->offset;
  bv.ndim = nb, bv.offset = pv->offset;
  Ast *r = part_call(sema, e, "contract",
                     (Ast *[]){view_part(sema, e, w, av), view_part(sema, e, xp, bv), part_ints(sema, e, na, ra),
                               part_ints(sema, e, nb, rb)}, 4);
  if (bias) {  // [(g,) O/g, 1...]: the contraction's epilogue
    View bb = {0};
    const View *bvv = &bias->ty->view;
    int nbb = 0;
    if (G) bb.shape[nbb] = groups, bb.strides[nbb++] = bvv->strides[0] * Og;
    bb.shape[nbb] = Og, bb.strides[nbb++] = bvv->strides[0];
    for (int i = 0; i < nsp; i++) bb.shape[nbb] = 1, bb.strides[nbb++] = 0;
    bb.ndim = nbb, bb.offset = bvv->offset;
    r = part_binary(sema, e, OP_ADD, "add", r, view_part(sema, e, bias, bb));
  }
  if (is_poison(r->ty)) return poison(sema);
  if (G) {  // [N, O, out...]: a view of the contiguous result
    int64_t fs[TD_MAX_DIMS] = {pv->shape[0], O};
    for (int i = 0; i < nsp; i++) fs[2 + i] = out[i];
    r = call2(sema, e, "reshape", r, part_ints(sema, e, nsp + 2, fs));
  }
  if (!batched) r = call2(sema, e, "squeeze", r, part_int(sema, e, 0));
  if (half) r = to_half(sema, e, r, dt);
  return become(sema, e, r);
}

// ============================================================================
// adaptive_avg_pool1d/2d(input, output_size), adaptive_max_pool1d/2d(input,
// output_size, return_indices=False): output i of a dim of length n reduces
// [floor(i n / o), ceil((i + 1) n / o)). Windows are rectangles, so the pool is separable:
// uniform windows (o divides n) are one window view and one reduction; otherwise each
// dim in turn is a cat of one narrow and reduction per output index.
// ============================================================================
TType *ck_adaptive_pool(Sema *sema, Ast *e, const BuiltinDef *d) {
  bool is_max = strstr(d->b.name, "max") != NULL;
  int nsp = d->b.name[strlen(d->b.name) - 2] - '0';
  Ast *x = e->bargs[0], *oa = e->bargs[1], *ra = is_max ? barg(e, 2) : NULL;
  const TType *xt = get_tensor(sema, e, x, "input");
  if (!xt) return poison(sema);
  int64_t o[MAX_LIST];
  int n;
  if (!get_ints(sema, e, oa, "output_size", o, &n)) return poison(sema);
  if (n == 1 && is_scalar(oa->ty)) o[1] = o[0], n = nsp;
  if (n != nsp) {
    if (nsp == 1)
      diag_error(sema->cx, oa->loc, "%s() argument 'output_size' should contain one int (got %d)", d->b.name, n);
    else if (is_max)
      diag_error(sema->cx, oa->loc, "adaptive_max_pool2d(): internal error: output_size.size() must be 2");
    else
      diag_error(sema->cx, oa->loc, "adaptive_avg_pool2d: output_size must be 2");
    return poison(sema);
  }
  bool ri = false;
  if (ra && !get_bool(sema, e, ra, "return_indices", &ri)) return poison(sema);
  if (ri) {
    diag_error(sema->cx, ra->loc, "%s: return_indices=True is not supported", d->b.name);
    return poison(sema);
  }
  int nd = xt->view.ndim;
  if (nd != nsp + 1 && nd != nsp + 2) {
    if (nsp == 1)
      diag_error(sema->cx, x->loc, "Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' "
                 "(while checking arguments for %s)", nd, d->b.name);
    else
      diag_error(sema->cx, x->loc, "%s(): Expected 3D or 4D tensor, but got%s %s", d->b.name, is_max ? ":" : "",
                 shape_str(sema, nd, xt->view.shape));
    return poison(sema);
  }
  for (int i = 0; i < nsp; i++)
    if (o[i] < 0) {
      const char *got = nsp == 1 ? arena_printf(&sema->cx->arena, "%" PRId64, o[0])
                                 : arena_printf(&sema->cx->arena, "%" PRId64 ", %" PRId64, o[0], o[1]);
      diag_error(sema->cx, oa->loc, "adaptive_avg_pool%dd: elements of output_size must be greater than or equal to 0 "
                 "but received {%s}", nsp, got);
      return poison(sema);
    }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'",
               is_max ? "adaptive_max_pool2d" : "adaptive_avg_pool2d", torch_name(xt->dtype));
    return poison(sema);
  }
  DType dt = xt->dtype;
  Ast *y = !is_max && dtype_is_half(dt) ? part_cast(sema, e, x, "float") : x;
  const char *red = is_max ? "amax" : "mean";
  bool uniform = true;
  int64_t k[2] = {0, 0}, one[2] = {1, 1};
  for (int i = 0; i < nsp; i++) {
    int64_t len = xt->view.shape[nd - nsp + i];
    uniform &= o[i] > 0 && len % o[i] == 0;
    k[i] = o[i] > 0 ? len / o[i] : 0;
  }
  if (uniform) {
    Ast *w = windows(sema, e, y, nsp, o, k, k, one);
    y = part_call(sema, e, red, (Ast *[]){w, window_dims(sema, e, nd, nsp)}, 2);
  } else {
    Ast *keep = part_int(sema, e, 1);
    keep->ty = ty_bool(sema, true);
    for (int i = 0; i < nsp; i++) {
      int dim = nd - nsp + i;
      int64_t len = xt->view.shape[dim];
      if (o[i] == 0) {
        y = narrow(sema, e, y, dim, 0, 0);
        continue;
      }
      if (o[i] == len) continue;
      Ast **items = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)o[i]);
      for (int64_t j = 0; j < o[i]; j++) {
        int64_t lo = j * len / o[i], hi = ((j + 1) * len + o[i] - 1) / o[i];
        Ast *dd = part_int(sema, e, dim);
        items[j] = part_call(sema, e, red, (Ast *[]){narrow(sema, e, y, dim, lo, hi - lo), dd, keep}, 3);
      }
      y = call2(sema, e, "cat", part_seq(sema, e, TY_LIST, items, (int)o[i]), part_int(sema, e, dim));
    }
    if (y == x || y->bi->kind == BK_VIEW) y = part_call(sema, e, "clone", &y, 1);
  }
  if (!is_max) y = to_half(sema, e, y, dt);
  return become(sema, e, y);
}

// ============================================================================
// conv_transpose1d/2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
// groups=1, dilation=1): the convolution (stride 1, the same dilation) of the input
// with s - 1 zeros put between its elements and d (k - 1) - p zeros around it
// (output_padding more on the right), by the kernel flipped, in and out channels swapped
// within each group. The spread input is a copy (one cat a dim, then the pad's).
// ============================================================================
TType *ck_conv_transpose(Sema *sema, Ast *e, const BuiltinDef *d) {
  int nsp = d->b.name[14] - '0';
  Ast *x = e->bargs[0], *w = e->bargs[1], *bias = barg(e, 2), *sa = barg(e, 3), *pa = barg(e, 4), *oa = barg(e, 5),
      *ga = barg(e, 6), *da = barg(e, 7);
  const TType *xt = get_tensor(sema, e, x, "input"), *wt = xt ? get_tensor(sema, e, w, "weight") : NULL;
  if (!xt || !wt || (bias && !get_tensor(sema, e, bias, "bias"))) return poison(sema);
  if (pa && pa->ty->kind == TY_STR) {
    diag_error(sema->cx, pa->loc, "%s(): argument 'padding' must be tuple of ints, not str", d->b.name);
    return poison(sema);
  }
  int64_t s[2], p[2], op[2], dil[2], groups = 1;
  if (!conv_ints(sema, e, sa, "stride", nsp, 1, s) || !conv_ints(sema, e, pa, "padding", nsp, 0, p) ||
      !conv_ints(sema, e, oa, "output_padding", nsp, 0, op) || !conv_ints(sema, e, da, "dilation", nsp, 1, dil) ||
      (ga && !get_int(sema, e, ga, "groups", &groups)))
    return poison(sema);
  const View *xv = &xt->view, *wv = &wt->view;
  if (wv->ndim != nsp + 2 || (xv->ndim != nsp + 1 && xv->ndim != nsp + 2)) {
    diag_error(sema->cx, call_loc(e), "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s"
               " and weight of size: %s", nsp + 1, nsp + 2, d->b.name, shape_str(sema, xv->ndim, xv->shape),
               shape_str(sema, wv->ndim, wv->shape));
    return poison(sema);
  }
  if (!conv_params_ok(sema, e, nsp, p, op, s, dil, groups, ga)) return poison(sema);
  bool batched = xv->ndim == nsp + 2;
  int64_t xs[4];
  xs[0] = batched ? xv->shape[0] : 1;
  for (int i = 0; i < nsp + 1; i++) xs[i + 1] = xv->shape[xv->ndim - nsp - 1 + i];
  int64_t Cin = wv->shape[0], Og = wv->shape[1], O = Og * groups;
  if (Cin % groups) {
    diag_error(sema->cx, w->loc, "Given groups=%" PRId64 ", expected weight to be divisible by %" PRId64
               " at dimension 0, but got weight of size [%s] instead", groups, groups,
               shape_str(sema, wv->ndim, wv->shape));
    return poison(sema);
  }
  if (xs[1] != Cin) {
    diag_error(sema->cx, call_loc(e), "Given transposed=1, weight of size %s, expected input%s to have %" PRId64
               " channels, but got %" PRId64 " channels instead", shape_str(sema, wv->ndim, wv->shape),
               shape_str(sema, nsp + 2, xs), Cin, xs[1]);
    return poison(sema);
  }
  for (int i = 0; i < nsp; i++)
    if (wv->shape[2 + i] == 0) {
      if (nsp == 1)
        diag_error(sema->cx, w->loc, "kernel size should be greater than zero, but got kernel_width: 0");
      else
        diag_error(sema->cx, w->loc, "kernel size should be greater than zero, but got kernel_height: %" PRId64
                   " kernel_width: %" PRId64, wv->shape[2], wv->shape[3]);
      return poison(sema);
    }
  bool op_bad = false;
  for (int i = 0; i < nsp; i++) op_bad |= op[i] >= s[i] && op[i] >= dil[i];
  if (op_bad) {
    if (nsp == 1)
      diag_error(sema->cx, oa->loc, "output padding must be smaller than either stride or dilation, but got "
                 "output_padding: %" PRId64 " stride: %" PRId64 " dilation: %" PRId64, op[0], s[0], dil[0]);
    else
      diag_error(sema->cx, oa->loc, "output padding must be smaller than either stride or dilation, but got "
                 "output_padding_height: %" PRId64 " output_padding_width: %" PRId64 " stride_height: %" PRId64
                 " stride_width: %" PRId64 " dilation_height: %" PRId64 " dilation_width: %" PRId64, op[0], op[1],
                 s[0], s[1], dil[0], dil[1]);
    return poison(sema);
  }
  int64_t out[2];
  bool small = false;
  for (int i = 0; i < nsp; i++) {
    out[i] = (xs[2 + i] - 1) * s[i] - 2 * p[i] + dil[i] * (wv->shape[2 + i] - 1) + op[i] + 1;
    small |= out[i] <= 0;
  }
  if (small) {
    if (nsp == 1)
      diag_error(sema->cx, call_loc(e), "Given input size per channel: (%" PRId64 "). Calculated output size per "
                 "channel: (%" PRId64 "). Output size is too small", xs[2], out[0]);
    else
      diag_error(sema->cx, call_loc(e), "Given input size per channel: (%" PRId64 " x %" PRId64 "). Calculated output "
                 "size per channel: (%" PRId64 " x %" PRId64 "). Output size is too small", xs[2], xs[3], out[0],
                 out[1]);
    return poison(sema);
  }
  if (bias && (bias->ty->view.ndim != 1 || bias->ty->view.shape[0] != O)) {
    diag_error(sema->cx, bias->loc, "Given transposed=1, weight of size %s, expected bias to be 1-dimensional with %"
               PRId64 " elements, but got bias of size %s instead", shape_str(sema, wv->ndim, wv->shape), O,
               shape_str(sema, bias->ty->view.ndim, bias->ty->view.shape));
    return poison(sema);
  }
  if (xt->dtype != wt->dtype) {
    diag_error(sema->cx, w->loc, "expected scalar type %s but found %s", torch_name(xt->dtype), torch_name(wt->dtype));
    return poison(sema);
  }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"slow_conv_transpose2d_out_cuda\" not implemented for '%s'",
               torch_name(xt->dtype));
    return poison(sema);
  }
  // the input spread by the stride, then padded
  Ast *y = batched ? x : call2(sema, e, "unsqueeze", x, part_int(sema, e, 0));
  for (int i = 0; i < nsp; i++) {
    int dim = 2 + i;
    if (s[i] == 1) continue;
    const View *v = &y->ty->view;
    int64_t shape[TD_MAX_DIMS + 1];
    for (int j = 0; j <= dim; j++) shape[j] = v->shape[j];
    shape[dim + 1] = s[i] - 1;
    for (int j = dim + 1; j < v->ndim; j++) shape[j + 1] = v->shape[j];
    Ast *col = call2(sema, e, "unsqueeze", y, part_int(sema, e, dim + 1));
    Ast *z = full_part(sema, e, v->ndim + 1, shape, part_int(sema, e, 0), y->ty->dtype);
    Ast *c = call2(sema, e, "cat", part_seq(sema, e, TY_LIST, (Ast *[]){col, z}, 2), part_int(sema, e, dim + 1));
    int64_t merged[TD_MAX_DIMS];
    memcpy(merged, v->shape, sizeof merged);
    merged[dim] = v->shape[dim] * s[i];
    y = narrow(sema, e, call2(sema, e, "view", c, part_ints(sema, e, v->ndim, merged)), dim, 0,
               (v->shape[dim] - 1) * s[i] + 1);
  }
  int64_t pads[4];
  for (int i = 0; i < nsp; i++) {
    int64_t k = wv->shape[2 + i], q = dil[i] * (k - 1) - p[i];
    pads[2 * (nsp - 1 - i)] = q, pads[2 * (nsp - 1 - i) + 1] = q + op[i];
  }
  y = pad_all(sema, e, y, nsp, pads, PAD_CONSTANT, NULL);
  if (!y) return poison(sema);
  // the weight [Cin, O/g, k...] as a convolution's [O, Cin/g, k...], flipped
  int64_t fd[2] = {2, 3};
  Ast *wf = call2(sema, e, "flip", w, part_ints(sema, e, nsp, fd));
  int64_t gshape[TD_MAX_DIMS] = {groups, Cin / groups, Og}, cshape[TD_MAX_DIMS] = {O, Cin / groups};
  for (int i = 0; i < nsp; i++) gshape[3 + i] = cshape[2 + i] = wv->shape[2 + i];
  Ast *wg = call2(sema, e, "reshape", wf, part_ints(sema, e, nsp + 3, gshape));
  wg = part_call(sema, e, "transpose", (Ast *[]){wg, part_int(sema, e, 1), part_int(sema, e, 2)}, 3);
  wg = call2(sema, e, "reshape", wg, part_ints(sema, e, nsp + 2, cshape));
  Ast *r = part_call(sema, e, nsp == 1 ? "conv1d" : "conv2d",
                     (Ast *[]){y, wg, bias, NULL, NULL, part_ints(sema, e, nsp, dil), part_int(sema, e, groups)}, 7);
  if (!batched) r = call2(sema, e, "squeeze", r, part_int(sema, e, 0));
  return become(sema, e, r);
}

// ============================================================================
// interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None,
// recompute_scale_factor=None, antialias=False): modes nearest, linear, bilinear. Each
// spatial dim in turn gathers (index_select) the input at source indices computed in
// f32 from an arange, as PyTorch's kernels compute them; linear modes add the two
// neighbours by their weights. Halves are interpolated in f32 and rounded once.
// ============================================================================
static Ast *arange_f32(Sema *sema, const Ast *e, int64_t n) {
  Ast *a = part_call(sema, e, "arange", (Ast *[]){part_int(sema, e, n), NULL, NULL, part_dtype(sema, e, DT_F32)}, 4);
  return a;
}

static Ast *clamp_part(Sema *sema, const Ast *e, Ast *x, Ast *lo, Ast *hi) {
  return part_call(sema, e, "clamp", (Ast *[]){x, lo, hi}, 3);
}

TType *ck_interpolate(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *sza = barg(e, 1), *sfa = barg(e, 2), *ma = barg(e, 3), *aca = barg(e, 4),
      *rsa = barg(e, 5), *aa = barg(e, 6);
  const TType *xt = get_tensor(sema, e, x, "input");
  if (!xt) return poison(sema);
  const char *mode = "nearest";
  if (ma) {
    if (ma->ty->kind != TY_STR) {
      diag_error(sema->cx, ma->loc, "interpolate(): argument 'mode' must be str, not %s", py_type_name(ma->ty));
      return poison(sema);
    }
    mode = ma->ty->module;
  }
  int nd = xt->view.ndim, nsp = nd - 2;
  bool nearest = !strcmp(mode, "nearest"), linear = !strcmp(mode, "linear"), bilinear = !strcmp(mode, "bilinear");
  bool ac = false, rs = false, anti = false;
  if ((aca && !get_bool(sema, e, aca, "align_corners", &ac)) ||
      (rsa && !get_bool(sema, e, rsa, "recompute_scale_factor", &rs)) ||
      (aa && !get_bool(sema, e, aa, "antialias", &anti)))
    return poison(sema);
  if (nearest && aca) {
    diag_error(sema->cx, aca->loc, "align_corners option can only be set with the interpolating modes: linear | "
               "bilinear | bicubic | trilinear");
    return poison(sema);
  }
  if (!sza && !sfa) {
    diag_error(sema->cx, call_loc(e), "either size or scale_factor should be defined");
    return poison(sema);
  }
  if (sza && sfa) {
    diag_error(sema->cx, sfa->loc, "only one of size or scale_factor should be defined");
    return poison(sema);
  }
  if (nsp < 1 || nsp > 3) {
    diag_error(sema->cx, x->loc, "interpolate: input of %d dimensions: PyTorch takes 3D, 4D and 5D input", nd);
    return poison(sema);
  }
  int64_t out[3];
  double sf[3] = {0, 0, 0};
  if (sza) {
    int64_t v[MAX_LIST];
    int n;
    if (!get_ints(sema, e, sza, "size", v, &n)) return poison(sema);
    if (n != 1 || !is_scalar(sza->ty)) {
      if (n != nsp) {
        diag_error(sema->cx, sza->loc, "Input and output must have the same number of spatial dimensions, but got "
                   "input with spatial dimensions of %s and output size of %s. Please provide input tensor in (N, C, "
                   "d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.",
                   shape_str(sema, nsp, xt->view.shape + 2), shape_str(sema, n, v));
        return poison(sema);
      }
    }
    for (int i = 0; i < nsp; i++) out[i] = v[n == 1 ? 0 : i];
  } else {
    const TType *t = sfa->ty;
    int n = is_scalar(t) ? 1 : (t->kind == TY_LIST || t->kind == TY_TUPLE) ? t->nelem : -1;
    if (n < 0) {
      diag_error(sema->cx, sfa->loc, "interpolate(): argument 'scale_factor' must be float or a tuple of floats, "
                 "not %s", py_type_name(t));
      return poison(sema);
    }
    if (n != 1 && n != nsp) {
      diag_error(sema->cx, sfa->loc, "Input and scale_factor must have the same number of spatial dimensions, but "
                 "got input with spatial dimensions of %s and scale_factor of %d values. Please provide input tensor "
                 "in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.",
                 shape_str(sema, nsp, xt->view.shape + 2), n);
      return poison(sema);
    }
    for (int i = 0; i < nsp; i++) {
      const TType *el = n == 1 && is_scalar(t) ? t : t->elems[n == 1 ? 0 : i];
      if (!is_scalar(el)) {
        diag_error(sema->cx, sfa->loc, "interpolate(): scale_factor must hold numbers, not %s", py_type_name(el));
        return poison(sema);
      }
      sf[i] = el->dtype == DT_F64 ? el->fval : (double)el->ival;
      out[i] = (int64_t)floor((double)xt->view.shape[2 + i] * sf[i]);
    }
  }
  if (!nearest && !linear && !bilinear) {
    static const char *const known[] = {"bicubic", "trilinear", "area", "nearest-exact"};
    bool k = false;
    for (int i = 0; i < 4; i++) k |= !strcmp(mode, known[i]);
    if (k)
      diag_error(sema->cx, ma->loc, "interpolate: mode '%s' is not supported: tdsl has nearest, linear and bilinear",
                 mode);
    else
      diag_error(sema->cx, ma->loc, "Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: "
                 "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got %s)", nd, mode);
    return poison(sema);
  }
  if ((linear && nd != 3) || (bilinear && nd != 4)) {
    diag_error(sema->cx, x->loc, "Got %dD input, but %s mode needs %dD input", nd, mode, linear ? 3 : 4);
    return poison(sema);
  }
  if (anti) {
    diag_error(sema->cx, aa->loc, "interpolate: antialias=True is not supported");
    return poison(sema);
  }
  for (int i = 0; i < nsp; i++)
    if (out[i] <= 0 || xt->view.shape[2 + i] <= 0) {
      diag_error(sema->cx, call_loc(e), "Input and output sizes should be greater than 0, but got input %s output %s",
                 shape_str(sema, nsp, xt->view.shape + 2), shape_str(sema, nsp, out));
      return poison(sema);
    }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"compute_indices_weights_%s\" not implemented for '%s'",
               nearest ? "nearest" : "linear", torch_name(xt->dtype));
    return poison(sema);
  }
  DType dt = xt->dtype;
  bool half = dtype_is_half(dt) && !nearest;
  Ast *y = half ? part_cast(sema, e, x, "float") : x;
  for (int i = 0; i < nsp; i++) {
    int dim = 2 + i;
    int64_t in = xt->view.shape[dim], o = out[i];
    if (o == in && nearest) continue;
    bool use_sf = sfa && !rs;
    float sc = use_sf ? (float)(1.0 / sf[i]) : (float)in / (float)o;
    Ast *dd = part_int(sema, e, dim);
    if (nearest) {
      Ast *src = part_binary(sema, e, OP_MUL, "mul", arange_f32(sema, e, o), part_float(sema, e, sc));
      src = part_unary(sema, e, OP_FLOOR, "floor", src);
      src = part_cast(sema, e, clamp_part(sema, e, src, NULL, part_int(sema, e, in - 1)), "long");
      y = part_call(sema, e, "index_select", (Ast *[]){y, dd, src}, 3);
      continue;
    }
    Ast *src;
    if (ac) {
      float s2 = o > 1 ? (float)(in - 1) / (float)(o - 1) : 0.0f;
      src = part_binary(sema, e, OP_MUL, "mul", arange_f32(sema, e, o), part_float(sema, e, s2));
    } else {
      src = part_binary(sema, e, OP_ADD, "add", arange_f32(sema, e, o), part_float(sema, e, 0.5));
      src = part_binary(sema, e, OP_SUB, "sub", part_binary(sema, e, OP_MUL, "mul", src, part_float(sema, e, sc)),
                        part_float(sema, e, 0.5));
      src = clamp_part(sema, e, src, part_int(sema, e, 0), NULL);
    }
    Ast *i0 = part_cast(sema, e, src, "long");
    Ast *i1 = part_call(sema, e, "clamp", (Ast *[]){part_binary(sema, e, OP_ADD, "add", i0, part_int(sema, e, 1)), NULL,
                                                    part_int(sema, e, in - 1)}, 3);
    Ast *l1 = part_binary(sema, e, OP_SUB, "sub", src, i0);
    Ast *l0 = part_binary(sema, e, OP_SUB, "sub", part_float(sema, e, 1.0), l1);
    if (dim != nd - 1) {  // the weights along dim: [o, 1]
      l0 = call2(sema, e, "unsqueeze", l0, part_int(sema, e, 1));
      l1 = call2(sema, e, "unsqueeze", l1, part_int(sema, e, 1));
    }
    if (dt == DT_F64) l0 = part_cast(sema, e, l0, "double"), l1 = part_cast(sema, e, l1, "double");
    Ast *a = part_binary(sema, e, OP_MUL, "mul", part_call(sema, e, "index_select", (Ast *[]){y, dd, i0}, 3), l0);
    Ast *b = part_binary(sema, e, OP_MUL, "mul", part_call(sema, e, "index_select", (Ast *[]){y, dd, i1}, 3), l1);
    y = part_binary(sema, e, OP_ADD, "add", a, b);
  }
  if (y == x) y = part_call(sema, e, "clone", &y, 1);
  if (half) y = to_half(sema, e, y, dt);
  return become(sema, e, y);
}

// ============================================================================
// fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1): the sum of the
// blocks [N, C * kh * kw, L] at their places, i.e. conv_transpose2d of the blocks
// [N, C * kh * kw, OH, OW] by the one-hot kernel of each tap, C groups
// ============================================================================
static bool pair_arg(Sema *sema, const Ast *e, Ast *a, const char *pname, int64_t def, int64_t *out) {
  if (!a) {
    out[0] = out[1] = def;
    return true;
  }
  int64_t v[MAX_LIST];
  int n;
  if (!get_ints(sema, e, a, pname, v, &n)) return false;
  if (n != 1 && n != 2) {
    diag_error(sema->cx, a->loc, "It is expected %s equals to 2, but got size %d", pname, n);
    return false;
  }
  out[0] = v[0], out[1] = v[n - 1];
  return true;
}

TType *ck_fold(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0];
  const TType *xt = get_tensor(sema, e, x, "input");
  if (!xt) return poison(sema);
  int64_t os[2], k[2], dil[2], p[2], s[2];
  if (!pair_arg(sema, e, e->bargs[1], "output_size", 0, os) || !pair_arg(sema, e, e->bargs[2], "kernel_size", 0, k) ||
      !pair_arg(sema, e, barg(e, 3), "dilation", 1, dil) || !pair_arg(sema, e, barg(e, 4), "padding", 0, p) ||
      !pair_arg(sema, e, barg(e, 5), "stride", 1, s))
    return poison(sema);
  const View *xv = &xt->view;
  bool zero = false;
  for (int i = 0; i < xv->ndim; i++) zero |= xv->shape[i] == 0 && (i > 0 || xv->ndim == 2);
  if ((xv->ndim != 2 && xv->ndim != 3) || zero) {
    diag_error(sema->cx, x->loc, "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
               "non-zero dimensions for input, but got: %s", shape_str(sema, xv->ndim, xv->shape));
    return poison(sema);
  }
  const char *bad = NULL;
  for (int i = 0; i < 2 && !bad; i++) bad = k[i] <= 0 ? "kernel size" : s[i] <= 0 ? "stride" : dil[i] <= 0 ? "dilation"
                                                                                                      : NULL;
  if (!bad)
    for (int i = 0; i < 2; i++)
      if (p[i] < 0) bad = "padding";
  if (bad) {
    const char *nm = !strcmp(bad, "kernel size") ? "kernel" : bad;
    int64_t *v = !strcmp(bad, "kernel size") ? k : !strcmp(bad, "stride") ? s : !strcmp(bad, "dilation") ? dil : p;
    diag_error(sema->cx, call_loc(e), "%s should be greater than %s, but got %s_height: %" PRId64 " %s_width: %"
               PRId64, bad, strcmp(bad, "padding") ? "zero" : "or equal to zero", nm, v[0], nm, v[1]);
    return poison(sema);
  }
  bool batched = xv->ndim == 3;
  int64_t CK = xv->shape[batched ? 1 : 0], L = xv->shape[batched ? 2 : 1], K = k[0] * k[1];
  if (CK % K) {
    diag_error(sema->cx, x->loc, "Expected size of input's dimension %d to be divisible by the product of kernel_size, "
               "but got input.size(%d)=%" PRId64 " and kernel_size=(%" PRId64 ", %" PRId64 ").", batched ? 1 : 0,
               batched ? 1 : 0, CK, k[0], k[1]);
    return poison(sema);
  }
  int64_t b0 = (os[0] + 2 * p[0] - (dil[0] * (k[0] - 1) + 1)) / s[0] + 1;
  int64_t b1 = (os[1] + 2 * p[1] - (dil[1] * (k[1] - 1) + 1)) / s[1] + 1;
  if (b0 < 1 || b1 < 1 || os[0] + 2 * p[0] < dil[0] * (k[0] - 1) + 1 || os[1] + 2 * p[1] < dil[1] * (k[1] - 1) + 1) {
    diag_error(sema->cx, call_loc(e), "Given output_size=(%" PRId64 ", %" PRId64 "), kernel_size=(%" PRId64 ", %" PRId64
               "), dilation=(%" PRId64 ", %" PRId64 "), padding=(%" PRId64 ", %" PRId64 "), calculated shape of the "
               "array of sliding blocks as (%" PRId64 ", %" PRId64 "), but its components must be at least one.",
               os[0], os[1], k[0], k[1], dil[0], dil[1], p[0], p[1], b0, b1);
    return poison(sema);
  }
  if (b0 * b1 != L) {
    diag_error(sema->cx, x->loc, "Given output_size=(%" PRId64 ", %" PRId64 "), kernel_size=(%" PRId64 ", %" PRId64
               "), dilation=(%" PRId64 ", %" PRId64 "), padding=(%" PRId64 ", %" PRId64 "), stride=(%" PRId64 ", %"
               PRId64 "), expected size of input's dimension %d to match the calculated number of sliding blocks %"
               PRId64 " * %" PRId64 " = %" PRId64 ", but got input.size(%d)=%" PRId64 ".", os[0], os[1], k[0], k[1],
               dil[0], dil[1], p[0], p[1], s[0], s[1], batched ? 2 : 1, b0, b1, b0 * b1, batched ? 2 : 1, L);
    return poison(sema);
  }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"col2im_out_cuda\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  int64_t N = batched ? xv->shape[0] : 1, C = CK / K;
  Ast *xb = batched ? x : call2(sema, e, "unsqueeze", x, part_int(sema, e, 0));
  Ast *x4 = call2(sema, e, "reshape", xb, part_ints(sema, e, 4, (int64_t[]){N, CK, b0, b1}));
  Ast *eye = part_call(sema, e, "eye", (Ast *[]){part_int(sema, e, K), NULL, part_dtype(sema, e, xt->dtype)}, 3);
  Ast *w = call2(sema, e, "reshape", eye, part_ints(sema, e, 4, (int64_t[]){K, 1, k[0], k[1]}));
  if (C > 1) w = call2(sema, e, "repeat", w, part_ints(sema, e, 4, (int64_t[]){C, 1, 1, 1}));
  int64_t op[2];
  for (int i = 0; i < 2; i++) op[i] = os[i] + 2 * p[i] - dil[i] * (k[i] - 1) - 1 - ((i ? b1 : b0) - 1) * s[i];
  Ast *y = part_call(sema, e, "conv_transpose2d",
                     (Ast *[]){x4, w, NULL, part_ints(sema, e, 2, s), part_ints(sema, e, 2, p), part_ints(sema, e, 2, op),
                               part_int(sema, e, C), part_ints(sema, e, 2, dil)}, 8);
  if (!batched) y = call2(sema, e, "squeeze", y, part_int(sema, e, 0));
  return become(sema, e, y);
}

// ============================================================================
// F.unfold(input, kernel_size, dilation=1, padding=0, stride=1): the sliding blocks of a
// 4-D input as columns [N, C * kh * kw, L] — PyTorch's im2col, a copy by definition: the
// windows are a view of the padded input, permuted and reshaped
// ============================================================================
TType *ck_im2col(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0];
  const TType *xt = x->ty;
  int64_t k[2], dil[2], p[2], s[2];
  if (!pair_arg(sema, e, e->bargs[1], "kernel_size", 0, k) || !pair_arg(sema, e, barg(e, 2), "dilation", 1, dil) ||
      !pair_arg(sema, e, barg(e, 3), "padding", 0, p) || !pair_arg(sema, e, barg(e, 4), "stride", 1, s))
    return poison(sema);
  const View *xv = &xt->view;
  if (xv->ndim != 4) {
    diag_error(sema->cx, x->loc, "Input Error: Only 4D input Tensors are supported (got %dD)", xv->ndim);
    return poison(sema);
  }
  const char *bad = NULL;
  for (int i = 0; i < 2 && !bad; i++)
    bad = k[i] <= 0 ? "kernel size" : s[i] <= 0 ? "stride" : dil[i] <= 0 ? "dilation" : p[i] < 0 ? "padding" : NULL;
  if (bad) {
    diag_error(sema->cx, call_loc(e), "%s should be greater than %s", bad,
               strcmp(bad, "padding") ? "zero" : "or equal to zero");
    return poison(sema);
  }
  int64_t out[2];
  for (int i = 0; i < 2; i++) {
    int64_t span = dil[i] * (k[i] - 1) + 1, in = xv->shape[2 + i] + 2 * p[i];
    out[i] = in >= span ? (in - span) / s[i] + 1 : 0;
    if (out[i] < 1) {
      diag_error(sema->cx, call_loc(e), "Given input with spatial size (%" PRId64 ", %" PRId64 "), kernel_size=(%"
                 PRId64 ", %" PRId64 "), dilation=(%" PRId64 ", %" PRId64 "), padding=(%" PRId64 ", %" PRId64
                 "), calculated shape of the array of sliding blocks as (%" PRId64 ", %" PRId64 "), but its "
                 "components must be at least one.", xv->shape[2], xv->shape[3], k[0], k[1], dil[0], dil[1], p[0],
                 p[1], (xv->shape[2] + 2 * p[0] - (dil[0] * (k[0] - 1) + 1)) / s[0] + 1,
                 (xv->shape[3] + 2 * p[1] - (dil[1] * (k[1] - 1) + 1)) / s[1] + 1);
      return poison(sema);
    }
  }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"im2col_out_cuda\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  Ast *xp = pool_pad(sema, e, x, 2, out, k, p, s, dil, part_float(sema, e, 0));
  if (is_poison(xp->ty)) return poison(sema);
  Ast *w = windows(sema, e, xp, 2, out, k, s, dil);  // [N, C, OH, OW, kh, kw]
  w = call2(sema, e, "permute", w, part_ints(sema, e, 6, (int64_t[]){0, 1, 4, 5, 2, 3}));
  int64_t N = xv->shape[0], C = xv->shape[1];
  return become(sema, e, call2(sema, e, "reshape", w, part_ints(sema, e, 3, (int64_t[]){N, C * k[0] * k[1],
                                                                                     out[0] * out[1]})));
}
