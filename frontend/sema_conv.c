// frontend/sema_conv.c: padding, pooling, convolution, interpolation, fold and unfold of
// torch.nn.functional, for 1 to 3 spatial dims: PyTorch 1.13's checks and messages, in its
// order, then the arguments parsed into PadArgs, PoolArgs, ConvArgs, InterpArgs or
// UnfoldArgs for the row's builder (ir/build_conv.c, whose header says how each is
// built: window views, one GEMM per convolution, gathers). The spatial rank is the row's
// variant, never read from the op's name; a view the builder would make of more than 8
// dims is refused at the call by the dry run's rank check (sema_build.c).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *dtype_kind_name(DType dt) { return torch_name(dt); }

// ============================================================================
// pad(input, pad, mode='constant', value=None)
// ============================================================================
static const char *const MODE_NAMES[] = {"constant", "reflect", "replicate", "circular"};

TType *ck_pad(Sema *sema, Ast *e, const BuiltinDef *d) {
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
  PadArgs a = {.mode = (PadMode)mode, .npad = n / 2, .fill_dtype = va ? va->ty->dtype : DT_COUNT,
               .fill = va ? va->ty->fval : 0, .ifill = va ? va->ty->ival : 0};
  memcpy(a.pads, pads, sizeof(int64_t) * (size_t)n);
  return built(sema, e, d->b.build, KEEP(sema, a), &x, 1);
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

// "4x4x4" (sep "x") or "4 x 4 x 4" (sep " x "): n sizes joined
static const char *joined(Sema *sema, int n, const int64_t *v, const char *sep) {
  const char *r = "";
  for (int i = 0; i < n; i++) r = arena_printf(&sema->cx->arena, "%s%s%" PRId64, r, i ? sep : "", v[i]);
  return r;
}

// The 3-D pools' checks, in PyTorch 1.13's order (DilatedMaxPool3d.cpp, AveragePool3d.cpp
// and Pool.h's pool3d_shape_check): the tuples' lengths, the input's rank, each dim's
// output size (stride, padding), then the kernel, stride and dilation, the input's
// non-batch dims, the kernel against the input (avg), the output's size.
static bool pool3d_args(Sema *sema, const Ast *e, bool dilated, int64_t *k, int64_t *s, int64_t *p, int64_t *dil,
                        bool *ceil_mode, int64_t *out) {
  const char *fn = e->bi->name;
  Ast *x = e->bargs[0];
  const TType *xt = get_tensor(sema, e, x, "input");
  if (!xt) return false;
  Ast *sa = barg(e, 2), *pa = barg(e, 3), *da = dilated ? barg(e, 4) : NULL, *ca = barg(e, dilated ? 5 : 4);
  static const char *const what[2][4] = {
      {"kernel_size must be a single int", "stride must be omitted, a single int", "padding must be a single int", ""},
      {"kernel_size must either be a single int", "stride must either be omitted, a single int",
       "padding must be either be a single int", "dilation must be either a single int"}};
  Ast *as[4] = {e->bargs[1], sa, pa, da};
  int64_t *vs[4] = {k, s, p, dil}, defs[4] = {0, 0, 0, 1};
  for (int j = 0; j < 4; j++) {
    if (j == 1 && as[1] && as[1]->ty->kind != TY_SCALAR && as[1]->ty->nelem == 0) as[1] = NULL;  // stride=[]
    if (!as[j]) {
      for (int i = 0; i < 3; i++) vs[j][i] = j == 1 ? k[i] : defs[j];
      continue;
    }
    int64_t v[MAX_LIST];
    int n;
    if (!get_ints(sema, e, as[j], j == 0 ? "kernel_size" : j == 1 ? "stride" : j == 2 ? "padding" : "dilation", v, &n))
      return false;
    if (n != 1 && n != 3) {
      diag_error(sema->cx, as[j]->loc, "%s: %s, or a tuple of three ints", fn, what[dilated][j]);
      return false;
    }
    for (int i = 0; i < 3; i++) vs[j][i] = v[n == 1 ? 0 : i];
  }
  *ceil_mode = false;
  if (ca && !get_bool(sema, e, ca, "ceil_mode", ceil_mode)) return false;
  const View *xv = &xt->view;
  int nd = xv->ndim;
  if (nd != 4 && nd != 5) {
    diag_error(sema->cx, x->loc, "non-empty 4D or 5D (batch mode) tensor expected for input");
    return false;
  }
  for (int i = 0; i < 3; i++) {  // pooling_output_shape
    if (s[i] == 0) {
      diag_error(sema->cx, sa ? sa->loc : e->bargs[1]->loc, "stride should not be zero");
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
    out[i] = pool_out(xv->shape[nd - 3 + i], k[i], p[i], s[i], dil[i], *ceil_mode);
  }
  if (k[0] <= 0 || k[1] <= 0 || k[2] <= 0) {
    diag_error(sema->cx, e->bargs[1]->loc, "kernel size should be greater than zero, but got kT: %" PRId64 " kH: %"
               PRId64 " kW: %" PRId64, k[0], k[1], k[2]);
    return false;
  }
  if (s[0] <= 0 || s[1] <= 0 || s[2] <= 0) {
    diag_error(sema->cx, sa ? sa->loc : call_loc(e), "stride should be greater than zero, but got dT: %" PRId64
               " dH: %" PRId64 " dW: %" PRId64, s[0], s[1], s[2]);
    return false;
  }
  if (dil[0] <= 0 || dil[1] <= 0 || dil[2] <= 0) {
    diag_error(sema->cx, da->loc, "dilation should be greater than zero, but got dilationT: %" PRId64 " dilationH: %"
               PRId64 " dilationW: %" PRId64, dil[0], dil[1], dil[2]);
    return false;
  }
  for (int i = 1; i < nd; i++)
    if (xv->shape[i] == 0) {
      diag_error(sema->cx, x->loc, "%s(): Expected input's non-batch dimensions to have positive length, but input "
                 "has a shape of %s and non-batch dimension %d has length zero!",
                 dilated ? "max_pool3d_with_indices_out_cuda_template" : "avg_pool3d",
                 shape_str(sema, nd, xv->shape), i - 1);
      return false;
    }
  const int64_t *in = xv->shape + nd - 3;
  if (!dilated && (in[0] < k[0] || in[1] < k[1] || in[2] < k[2])) {
    diag_error(sema->cx, call_loc(e), "input image (T: %" PRId64 " H: %" PRId64 " W: %" PRId64 ") smaller than kernel "
               "size (kT: %" PRId64 " kH: %" PRId64 " kW: %" PRId64 ")", in[0], in[1], in[2], k[0], k[1], k[2]);
    return false;
  }
  if (out[0] < 1 || out[1] < 1 || out[2] < 1) {
    int64_t slices = xv->shape[nd - 4];
    diag_error(sema->cx, call_loc(e), "Given input size: (%" PRId64 "x%s). Calculated output size: (%" PRId64
               "x%s). Output size is too small", slices, joined(sema, 3, in, "x"), slices, joined(sema, 3, out, "x"));
    return false;
  }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'",
               dilated ? "max_pool3d_with_indices_out_frame" : "avg_pool3d_out_cuda", torch_name(xt->dtype));
    return false;
  }
  return true;
}

// The checks every pool makes of input, kernel_size, stride, padding (and dilation);
// fills nsp values of each. fname: PyTorch's name in its messages.
bool pool_args(Sema *sema, const Ast *e, int nsp, bool dilated, int64_t *k, int64_t *s, int64_t *p, int64_t *dil,
               bool *ceil_mode, int64_t *out) {
  if (nsp == 3) return pool3d_args(sema, e, dilated, k, s, p, dil, ceil_mode, out);
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
  int nsp = d->variant;
  int64_t k[BUILD_MAX_SPATIAL], s[BUILD_MAX_SPATIAL], p[BUILD_MAX_SPATIAL], dil[BUILD_MAX_SPATIAL],
      out[BUILD_MAX_SPATIAL];
  bool ceil_mode, ri = false;
  if (!pool_args(sema, e, nsp, true, k, s, p, dil, &ceil_mode, out)) return poison(sema);
  Ast *ra = barg(e, 6);
  if (ra && !get_bool(sema, e, ra, "return_indices", &ri)) return poison(sema);
  PoolArgs a = {.kind = POOL_MAX, .nsp = nsp, .indices = ri};  // indices: (values, positions)
  for (int i = 0; i < nsp; i++) a.k[i] = k[i], a.s[i] = s[i], a.p[i] = p[i], a.dil[i] = dil[i], a.out[i] = out[i];
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}

// avg_pool1d/2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
// count_include_pad=True, divisor_override=None): the windows' sums of the zero-padded
// input over their divisors; halves summed in f32 and rounded once
TType *ck_avg_pool(Sema *sema, Ast *e, const BuiltinDef *d) {
  int nsp = d->variant;
  int64_t k[BUILD_MAX_SPATIAL], s[BUILD_MAX_SPATIAL], p[BUILD_MAX_SPATIAL], dil[BUILD_MAX_SPATIAL],
      out[BUILD_MAX_SPATIAL];
  bool ceil_mode, cip = true;
  if (!pool_args(sema, e, nsp, false, k, s, p, dil, &ceil_mode, out)) return poison(sema);
  Ast *ca = barg(e, 5), *da = nsp >= 2 ? barg(e, 6) : NULL;
  if (ca && !get_bool(sema, e, ca, "count_include_pad", &cip)) return poison(sema);
  int64_t div = 0;
  if (da && !get_int(sema, e, da, "divisor_override", &div)) return poison(sema);
  if (da && div == 0) {
    diag_error(sema->cx, da->loc, "divisor must be not zero");
    return poison(sema);
  }
  PoolArgs a = {.kind = POOL_AVG, .nsp = nsp, .count_include_pad = cip, .divisor = da ? div : 0};
  for (int i = 0; i < nsp; i++) a.k[i] = k[i], a.s[i] = s[i], a.p[i] = p[i], a.dil[i] = dil[i], a.out[i] = out[i];
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}

// ============================================================================
// max_unpool1d/2d/3d(input, indices, kernel_size, stride=None, padding=0,
// output_size=None): PyTorch's Python wrapper (its output size, checked), then ATen's
// max_unpooling2d (1-D: of the input with a trailing dim of 1) or max_unpooling3d:
// zeros of that size, each input element at its index in its plane
// ============================================================================
static bool conv_ints(Sema *sema, const Ast *e, Ast *a, const char *pname, int nsp, int64_t def, int64_t *out);

// v as a Python sequence prints ((9, 9), [9, 9])
static const char *py_seq_str(Sema *sema, const Ast *a, int n, const int64_t *v) {
  bool list = a->ty->kind == TY_LIST;
  const char *r = joined(sema, n, v, ", ");
  if (!list && n == 1) r = arena_printf(&sema->cx->arena, "%s,", r);
  return arena_printf(&sema->cx->arena, list ? "[%s]" : "(%s)", r);
}

TType *ck_max_unpool(Sema *sema, Ast *e, const BuiltinDef *d) {
  int nsp = d->variant;
  Ast *x = e->bargs[0], *ia = e->bargs[1], *ka = e->bargs[2], *sa = barg(e, 3), *pa = barg(e, 4), *oa = barg(e, 5);
  const TType *xt = get_tensor(sema, e, x, "input"), *it = xt ? get_tensor(sema, e, ia, "indices") : NULL;
  if (!it) return poison(sema);
  int64_t k[BUILD_MAX_SPATIAL], s[BUILD_MAX_SPATIAL], p[BUILD_MAX_SPATIAL] = {0}, out[BUILD_MAX_SPATIAL];
  if (!conv_ints(sema, e, ka, "kernel_size", nsp, 0, k) || !conv_ints(sema, e, sa, "stride", nsp, 0, s) ||
      !conv_ints(sema, e, pa, "padding", nsp, 0, p))
    return poison(sema);
  if (!sa) memcpy(s, k, sizeof s);
  const View *xv = &xt->view;
  if (xv->ndim < nsp) {
    diag_error(sema->cx, x->loc, "%s: input of %d dimensions has no %d spatial dims", d->b.name, xv->ndim, nsp);
    return poison(sema);
  }
  for (int i = 0; i < nsp; i++) out[i] = (xv->shape[xv->ndim - nsp + i] - 1) * s[i] + k[i] - 2 * p[i];
  if (oa && oa->ty->kind != TY_NONE) {  // _unpool_output_size
    int64_t v[MAX_LIST];
    int n;
    if (!get_ints(sema, e, oa, "output_size", v, &n)) return poison(sema);
    int64_t *os = v;
    if (n == nsp + 2) os += 2, n = nsp;
    if (n != nsp) {
      diag_error(sema->cx, oa->loc, "output_size should be a sequence containing %d or %d elements, but it has a "
                 "length of '%d'", nsp, nsp + 2, n);
      return poison(sema);
    }
    for (int i = 0; i < nsp; i++)
      if (!(out[i] - s[i] < os[i] && os[i] < out[i] + s[i])) {
        diag_error(sema->cx, oa->loc, "invalid output_size \"%s\" (dim %d must be between %" PRId64 " and %" PRId64
                   ")", py_seq_str(sema, oa, nsp, os), i, out[i] - s[i], out[i] + s[i]);
        return poison(sema);
      }
    memcpy(out, os, sizeof(int64_t) * (size_t)nsp);
  }
  // ATen's checks, of the input as max_unpooling2d (1-D) or 3d takes it
  int an = nsp == 1 ? 2 : nsp, nd = xv->ndim + (nsp == 1);
  int64_t xs[TD_MAX_DIMS + 1], is[TD_MAX_DIMS + 1];
  memcpy(xs, xv->shape, sizeof(int64_t) * (size_t)xv->ndim);
  memcpy(is, it->view.shape, sizeof(int64_t) * (size_t)it->view.ndim);
  if (nsp == 1) xs[xv->ndim] = 1, is[it->view.ndim] = 1;
  int ind = it->view.ndim + (nsp == 1);
  if (it->dtype != DT_I64) {
    diag_error(sema->cx, ia->loc, an == 2 ? "elements in indices should be type int64 but got: %s"
                                          : "elements in indices should be type int64", torch_name(it->dtype));
    return poison(sema);
  }
  if (nd != an + 1 && nd != an + 2) {
    diag_error(sema->cx, x->loc, "Input to max_unpooling%dd should be a %dd or %dd Tensor, but got a tensor with %d "
               "dimensions.", an, an + 1, an + 2, nd);
    return poison(sema);
  }
  if (!same_shape(nd, xs, ind, is)) {
    diag_error(sema->cx, ia->loc, "Expected shape of indices to be same as that of the input tensor (%s) but got "
               "indices tensor with shape: %s", shape_str(sema, nd, xs), shape_str(sema, ind, is));
    return poison(sema);
  }
  for (int i = 1; i < nd; i++)
    if (xs[i] == 0) {
      diag_error(sema->cx, x->loc, "max_unpooling%dd_forward_out_cuda(): Expected input to have non-zero size for "
                 "non-batch dimensions, but got %s with dimension %d being empty.", an, shape_str(sema, nd, xs), i);
      return poison(sema);
    }
  if (an == 3 && (s[0] <= 0 || s[1] <= 0 || s[2] <= 0)) {
    diag_error(sema->cx, sa ? sa->loc : ka->loc, "strides should be greater than zero, but got stride: %s",
               shape_str(sema, 3, s));
    return poison(sema);
  }
  if (xt->dtype == DT_BOOL) {  // CUDA's kernels take every other dtype
    diag_error(sema->cx, call_loc(e), "\"max_unpooling%dd_forward_kernel\" not implemented for 'Bool'", an);
    return poison(sema);
  }
  for (int i = 0; i < nsp; i++)
    if (out[i] < 0) {
      diag_error(sema->cx, call_loc(e), "Trying to create tensor with negative dimension %" PRId64, out[i]);
      return poison(sema);
    }
  PoolArgs a = {.kind = POOL_MAX_UNPOOL, .nsp = nsp};
  for (int i = 0; i < nsp; i++) a.k[i] = k[i], a.s[i] = s[i], a.p[i] = p[i], a.out[i] = out[i];
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 2);
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
  int nsp = d->variant;
  Ast *x = e->bargs[0], *w = e->bargs[1], *bias = barg(e, 2), *sa = barg(e, 3), *pa = barg(e, 4), *da = barg(e, 5),
      *ga = barg(e, 6);
  const TType *xt = get_tensor(sema, e, x, "input"), *wt = xt ? get_tensor(sema, e, w, "weight") : NULL;
  if (!xt || !wt || (bias && !get_tensor(sema, e, bias, "bias"))) return poison(sema);
  int64_t s[BUILD_MAX_SPATIAL], p[BUILD_MAX_SPATIAL] = {0}, dil[BUILD_MAX_SPATIAL], groups = 1;
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
               "convolution dimensions, but got stride=[%s]", wv->ndim - 2, joined(sema, nsp, s, ", "));
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
  int64_t xs[BUILD_MAX_SPATIAL + 2];  // the input's shape as batched
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
      if (nsp == 3)
        diag_error(sema->cx, w->loc, "kernel size should be greater than zero, but got: %s (TxHxW)",
                   joined(sema, 3, wv->shape + 2, " x "));
      else
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
  int64_t pl[BUILD_MAX_SPATIAL], pr[BUILD_MAX_SPATIAL], k[BUILD_MAX_SPATIAL], in[BUILD_MAX_SPATIAL];
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
    int64_t padded[BUILD_MAX_SPATIAL], span[BUILD_MAX_SPATIAL];
    for (int i = 0; i < nsp; i++) padded[i] = in[i] + pl[i] + pr[i], span[i] = dil[i] * (k[i] - 1) + 1;
    diag_error(sema->cx, call_loc(e), "Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel size "
               "can't be greater than actual input size", joined(sema, nsp, padded, " x "),
               joined(sema, nsp, span, " x "));
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
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'", nsp == 3 ? "slow_conv_dilated<>" : "slow_conv2d_cuda",
               torch_name(xt->dtype));
    return poison(sema);
  }
  ConvArgs a = {.nsp = nsp, .bias = bias, .batched = batched, .groups = groups};
  for (int i = 0; i < nsp; i++) a.s[i] = s[i], a.dil[i] = dil[i], a.pl[i] = pl[i], a.pr[i] = pr[i];
  return built(sema, e, d->b.build, KEEP(sema, a), (Ast *[]){x, w, bias}, bias ? 3 : 2);
}

// ============================================================================
// adaptive_avg_pool1d/2d(input, output_size), adaptive_max_pool1d/2d(input,
// output_size, return_indices=False): output i of a dim of length n reduces
// [floor(i n / o), ceil((i + 1) n / o)). Windows are rectangles, so the pool is separable:
// uniform windows (o divides n) are one window view and one reduction; otherwise each
// dim in turn is a cat of one narrow and reduction per output index.
// ============================================================================
TType *ck_adaptive_pool(Sema *sema, Ast *e, const BuiltinDef *d) {
  bool is_max = d->aux == OP_AMAX;  // adaptive_max_pool (the row's reduction), else adaptive_avg_pool
  int nsp = d->variant;
  Ast *x = e->bargs[0], *oa = e->bargs[1], *ra = is_max ? barg(e, 2) : NULL;
  const TType *xt = get_tensor(sema, e, x, "input");
  if (!xt) return poison(sema);
  int64_t o[MAX_LIST];
  int n;
  if (!get_ints(sema, e, oa, "output_size", o, &n)) return poison(sema);
  if (n == 1 && is_scalar(oa->ty)) {
    for (int i = 1; i < nsp; i++) o[i] = o[0];
    n = nsp;
  }
  if (n != nsp) {
    if (nsp == 1)
      diag_error(sema->cx, oa->loc, "%s() argument 'output_size' should contain one int (got %d)", d->b.name, n);
    else if (is_max)
      diag_error(sema->cx, oa->loc, "%s(): internal error: output_size.size() must be %d", d->b.name, nsp);
    else
      diag_error(sema->cx, oa->loc, "%s: output_size must be %d", d->b.name, nsp);
    return poison(sema);
  }
  bool ri = false;
  if (ra && !get_bool(sema, e, ra, "return_indices", &ri)) return poison(sema);
  int nd = xt->view.ndim;
  if (nd != nsp + 1 && nd != nsp + 2) {
    if (nsp == 1)
      diag_error(sema->cx, x->loc, "Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' "
                 "(while checking arguments for %s)", nd, d->b.name);
    else
      diag_error(sema->cx, x->loc, "%s(): Expected %dD or %dD tensor, but got%s %s", d->b.name, nsp + 1, nsp + 2,
                 is_max ? ":" : "", shape_str(sema, nd, xt->view.shape));
    return poison(sema);
  }
  for (int i = 0; i < nsp; i++)
    if (o[i] < 0) {
      if (is_max) {  // the output's shape as PyTorch allocates it (the 1-D pool is a 2-D one of height 1)
        int64_t shape[TD_MAX_DIMS];
        int k = 0;
        for (int j = 0; j < nd - nsp; j++) shape[k++] = xt->view.shape[j];
        if (nsp == 1) shape[k++] = 1;
        for (int j = 0; j < nsp; j++) shape[k++] = o[j];
        diag_error(sema->cx, oa->loc, "Trying to create tensor with negative dimension %" PRId64 ": %s", o[i],
                   shape_str(sema, k, shape));
      } else {  // ATen's 2-D check words them, for 1-D (of height 1) and 3-D too
        const char *got = nsp == 1   ? arena_printf(&sema->cx->arena, "1, %" PRId64, o[0])
                          : nsp == 2 ? arena_printf(&sema->cx->arena, "%" PRId64 ", %" PRId64, o[0], o[1])
                                     : arena_printf(&sema->cx->arena, "%" PRId64 ", %" PRId64 ",%" PRId64, o[0], o[1],
                                                    o[2]);
        diag_error(sema->cx, oa->loc, "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 "
                   "but received {%s}", got);
      }
      return poison(sema);
    }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'",
               nsp == 3 ? (is_max ? "adaptive_max_pool3d_cuda" : "adaptive_avg_pool3d_cuda")
                        : (is_max ? "adaptive_max_pool2d" : "adaptive_avg_pool2d"), torch_name(xt->dtype));
    return poison(sema);
  }
  PoolArgs a = {.kind = is_max ? POOL_ADAPTIVE_MAX : POOL_ADAPTIVE_AVG, .nsp = nsp, .indices = ri};
  memcpy(a.out, o, sizeof(int64_t) * (size_t)nsp);
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}

// ============================================================================
// conv_transpose1d/2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
// groups=1, dilation=1): the convolution (stride 1, the same dilation) of the input
// with s - 1 zeros put between its elements and d (k - 1) - p zeros around it
// (output_padding more on the right), by the kernel flipped, in and out channels swapped
// within each group. The spread input is a copy (one cat a dim, then the pad's).
// ============================================================================
TType *ck_conv_transpose(Sema *sema, Ast *e, const BuiltinDef *d) {
  int nsp = d->variant;
  Ast *x = e->bargs[0], *w = e->bargs[1], *bias = barg(e, 2), *sa = barg(e, 3), *pa = barg(e, 4), *oa = barg(e, 5),
      *ga = barg(e, 6), *da = barg(e, 7);
  const TType *xt = get_tensor(sema, e, x, "input"), *wt = xt ? get_tensor(sema, e, w, "weight") : NULL;
  if (!xt || !wt || (bias && !get_tensor(sema, e, bias, "bias"))) return poison(sema);
  if (pa && pa->ty->kind == TY_STR) {
    diag_error(sema->cx, pa->loc, "%s(): argument 'padding' must be tuple of ints, not str", d->b.name);
    return poison(sema);
  }
  int64_t s[BUILD_MAX_SPATIAL], p[BUILD_MAX_SPATIAL], op[BUILD_MAX_SPATIAL], dil[BUILD_MAX_SPATIAL], groups = 1;
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
  int64_t xs[BUILD_MAX_SPATIAL + 2];
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
      else if (nsp == 3)
        diag_error(sema->cx, w->loc, "non-empty 5D (n_output_plane x n_input_plane x kernel_depth x kernel_height x "
                   "kernel_width) tensor expected for weight, but got: %s", shape_str(sema, wv->ndim, wv->shape));
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
    else if (nsp == 2)
      diag_error(sema->cx, oa->loc, "output padding must be smaller than either stride or dilation, but got "
                 "output_padding_height: %" PRId64 " output_padding_width: %" PRId64 " stride_height: %" PRId64
                 " stride_width: %" PRId64 " dilation_height: %" PRId64 " dilation_width: %" PRId64, op[0], op[1],
                 s[0], s[1], dil[0], dil[1]);
    else
      diag_error(sema->cx, oa->loc, "output padding must be smaller than either stride or dilation, but got "
                 "output_padding_depth: %" PRId64 " output_padding_height: %" PRId64 " output_padding_width: %" PRId64
                 " stride_depth: %" PRId64 " stride_height: %" PRId64 " stride_width: %" PRId64 " dilation_depth: %"
                 PRId64 " dilation_height: %" PRId64 " dilation_width: %" PRId64, op[0], op[1], op[2], s[0], s[1], s[2],
                 dil[0], dil[1], dil[2]);
    return poison(sema);
  }
  int64_t out[BUILD_MAX_SPATIAL];
  bool small = false;
  for (int i = 0; i < nsp; i++) {
    out[i] = (xs[2 + i] - 1) * s[i] - 2 * p[i] + dil[i] * (wv->shape[2 + i] - 1) + op[i] + 1;
    small |= out[i] <= 0;
  }
  if (small) {
    diag_error(sema->cx, call_loc(e), "Given input size per channel: (%s). Calculated output size per channel: (%s). "
               "Output size is too small", joined(sema, nsp, xs + 2, " x "), joined(sema, nsp, out, " x "));
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
    diag_error(sema->cx, call_loc(e), "\"slow_conv_transpose%dd_out_cuda\" not implemented for '%s'", nsp == 3 ? 3 : 2,
               torch_name(xt->dtype));
    return poison(sema);
  }
  ConvArgs a = {.nsp = nsp, .transposed = true, .bias = bias, .batched = batched, .groups = groups};
  for (int i = 0; i < nsp; i++) a.s[i] = s[i], a.dil[i] = dil[i], a.pl[i] = p[i], a.op[i] = op[i];
  return built(sema, e, d->b.build, KEEP(sema, a), (Ast *[]){x, w, bias}, bias ? 3 : 2);
}

// ============================================================================
// interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None,
// recompute_scale_factor=None, antialias=False): modes nearest, linear, bilinear. Each
// spatial dim in turn gathers (index_select) the input at source indices computed in
// f32 from an arange, as PyTorch's kernels compute them; linear modes add the two
// neighbours by their weights. Halves are interpolated in f32 and rounded once.
// ============================================================================
TType *ck_interpolate(Sema *sema, Ast *e, const BuiltinDef *d) {
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
  static const char *const modes[] = {"nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact"};
  int m = -1;
  for (int i = 0; i < 7; i++)
    if (!strcmp(mode, modes[i])) m = i;
  bool nearest = m == 0 || m == 6 || m == 5;  // the modes without align_corners
  bool ac = false, rs = false, anti = false;
  if ((aca && !get_bool(sema, e, aca, "align_corners", &ac)) ||
      (rsa && !get_bool(sema, e, rsa, "recompute_scale_factor", &rs)) ||
      (aa && !get_bool(sema, e, aa, "antialias", &anti)))
    return poison(sema);
  if (nearest && aca && aca->ty->kind != TY_NONE) {
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
  if (anti && m != 2 && m != 3) {
    diag_error(sema->cx, aa->loc, "Anti-alias option is only supported for bilinear and bicubic modes");
    return poison(sema);
  }
  int need = m == 1 ? 3 : m == 2 ? 4 : m == 4 ? 5 : 0;  // the linear modes' input rank
  if (m < 0 || (m == 3 && nd != 4)) {
    diag_error(sema->cx, ma->loc, "Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: "
               "nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got %s)", nd, mode);
    return poison(sema);
  }
  if (need && nd != need) {
    diag_error(sema->cx, x->loc, "Got %dD input, but %s mode needs %dD input", nd, mode, need);
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
    const char *k = m == 5 ? (nsp == 3 ? "adaptive_avg_pool3d_cuda" : "adaptive_avg_pool2d")
                    : m == 4 ? "upsample_trilinear3d_channels_last"
                    : m == 3 ? "compute_indices_weights_cubic"
                    : nearest ? "compute_indices_weights_nearest" : "compute_indices_weights_linear";
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'", k, torch_name(xt->dtype));
    return poison(sema);
  }
  static const InterpMode kind[] = {INTERP_NEAREST, INTERP_LINEAR, INTERP_LINEAR, INTERP_CUBIC, INTERP_LINEAR,
                                    INTERP_AREA, INTERP_NEAREST_EXACT};
  InterpArgs a = {.mode = kind[m], .nsp = nsp, .align_corners = ac};
  for (int i = 0; i < nsp; i++) a.out[i] = out[i], a.scale[i] = sfa && !rs ? sf[i] : 0;
  return built(sema, e, d->b.build, KEEP(sema, a), &x, 1);
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
  UnfoldArgs a = {.blocks = {b0, b1}};
  for (int i = 0; i < 2; i++) a.k[i] = k[i], a.dil[i] = dil[i], a.p[i] = p[i], a.s[i] = s[i], a.out[i] = os[i];
  return built(sema, e, d->b.build, KEEP(sema, a), &x, 1);
}

// ============================================================================
// F.unfold(input, kernel_size, dilation=1, padding=0, stride=1): the sliding blocks of a
// 4-D input as columns [N, C * kh * kw, L] — PyTorch's im2col, a copy by definition: the
// windows are a view of the padded input, permuted and reshaped
// ============================================================================
TType *ck_im2col(Sema *sema, Ast *e, const BuiltinDef *d) {
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
  UnfoldArgs a = {0};
  for (int i = 0; i < 2; i++) a.k[i] = k[i], a.dil[i] = dil[i], a.p[i] = p[i], a.s[i] = s[i], a.out[i] = out[i];
  return built(sema, e, d->b.build, KEEP(sema, a), &x, 1);
}
