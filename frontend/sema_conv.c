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
//   conv         the sum over kernel taps of a matmul weight[:, :, i, j] @ a strided
//                view of the (padded) input: the view's columns walk the input rows
//                "wide" (q = oh * Wp + ow, read at q * stride), so each tap is one GEMM
//                over C with no im2col copy; the output is a view of the wide result
// Each checker reports every misuse (PyTorch's message) before it builds parts.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ============================================================================
// Parts
// ============================================================================
static Ast *ints(Sema *sema, const Ast *e, int n, const int64_t *v) {
  Ast *items[MAX_LIST];
  for (int i = 0; i < n; i++) items[i] = part_int(sema, e, v[i]);
  return part_seq(sema, e, TY_LIST, items, n);
}

static Ast *dtype_arg(Sema *sema, const Ast *e, DType dt) {
  Ast *a = ast_dtype(sema->cx, dt, e->loc);
  a->ty = ty_dtype(sema, dt);
  return a;
}

static Ast *call2(Sema *sema, const Ast *e, const char *op, Ast *a, Ast *b) {
  return part_call(sema, e, op, (Ast *[]){a, b}, 2);
}

static Ast *narrow(Sema *sema, const Ast *e, Ast *x, int d, int64_t start, int64_t len) {
  return part_call(sema, e, "narrow",
                   (Ast *[]){x, part_int(sema, e, d), part_int(sema, e, start), part_int(sema, e, len)}, 4);
}

// A view of x's storage: (shape, strides, offset) computed here, as x.unfold's.
__attribute__((unused)) static Ast *view_part(Sema *sema, const Ast *e, Ast *x, View v) {
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
  return part_call(sema, e, "full", (Ast *[]){ints(sema, e, nd, shape), value, dtype_arg(sema, e, dt)}, 3);
}

static Ast *flip_dim(Sema *sema, const Ast *e, Ast *x, int d) {
  int64_t dd = d;
  return call2(sema, e, "flip", x, ints(sema, e, 1, &dd));
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
      s = call2(sema, e, "expand", edge, ints(sema, e, v->ndim, shape));
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
