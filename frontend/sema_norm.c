// frontend/sema_norm.c: the normalizations of torch.nn.functional (layer_norm, rms_norm,
// group_norm, batch_norm, instance_norm, normalize, cosine_similarity,
// pairwise_distance): PyTorch 1.13's checks and messages, in its order, then the
// arguments parsed into NormArgs for the row's builder (ir/build_norm.c).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

// e becomes the normalization the row's builder makes of ops[0..n) (NULL: an optional
// operand not given, left out).
static TType *norm_built(Sema *sema, Ast *e, const BuiltinDef *d, NormArgs a, Ast **ops, int n) {
  Ast *given[8];
  int k = 0;
  for (int i = 0; i < n; i++)
    if (ops[i]) given[k++] = ops[i];
  return built(sema, e, d->b.build, KEEP(sema, a), given, k);
}

// weight or bias of layer_norm: normalized_shape's shape, the input's dtype.
static bool norm_param(Sema *sema, const Ast *e, Ast *a, const char *pname, const TType *x, int k,
                       const int64_t *ns) {
  const TType *t = get_tensor(sema, e, a, pname);
  if (!t) return false;
  bool same = t->view.ndim == k;
  for (int i = 0; same && i < k; i++) same = t->view.shape[i] == ns[i];
  if (!same) {
    diag_error(sema->cx, a->loc, "Expected %s to be of same shape as normalized_shape, but got %s of shape %s and "
               "normalized_shape = %s", pname, pname, shape_str(sema, t->view.ndim, t->view.shape),
               shape_str(sema, k, ns));
    return false;
  }
  if (t->dtype != x->dtype) {
    diag_error(sema->cx, a->loc, "expected scalar type %s but found %s", torch_name(x->dtype), torch_name(t->dtype));
    return false;
  }
  return true;
}

// normalized_shape of layer_norm and rms_norm (fname): the last dims of the input, in
// ns[0..k); false after PyTorch's message.
static bool norm_shape(Sema *sema, const Ast *e, const char *fname, Ast *nsa, const TType *xt, int64_t *ns, int *k) {
  if (is_scalar(nsa->ty)) {
    diag_error(sema->cx, nsa->loc, "%s(): argument %s must be tuple of ints, not %s", fname,
               arg_name(sema, e, "normalized_shape"), py_type_name(nsa->ty));
    return false;
  }
  if (!get_ints(sema, e, nsa, "normalized_shape", ns, k)) return false;
  if (*k == 0) {
    diag_error(sema->cx, nsa->loc, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
               "one element, but got normalized_shape = []");
    return false;
  }
  int nd = xt->view.ndim;
  bool fits = *k <= nd;
  for (int i = 0; fits && i < *k; i++) fits = xt->view.shape[nd - *k + i] == ns[i];
  if (!fits) {
    const char *want = shape_str(sema, *k, ns);
    diag_error(sema->cx, call_loc(e), "Given normalized_shape=%s, expected input with shape [*, %.*s], but got input "
               "of size%s", want, (int)strlen(want) - 2, want + 1, shape_str(sema, nd, xt->view.shape));
    return false;
  }
  return true;
}

// F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05) over the last
// dims: c = x - mean(x), y = c * rsqrt(mean(c * c) + eps) (* weight) (+ bias); halves are
// computed in f32 and rounded once, as PyTorch's CUDA kernel does.
TType *ck_layer_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *nsa = e->bargs[1], *w = barg(e, 2), *b = barg(e, 3), *epsa = barg(e, 4);
  TType *xt = get_tensor(sema, e, x, "input");
  if (!xt) return poison(sema);
  int64_t ns[MAX_LIST];
  int k;
  if (!norm_shape(sema, e, "layer_norm", nsa, xt, ns, &k)) return poison(sema);
  int nd = xt->view.ndim;
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"LayerNormKernelImpl\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  if ((w && !norm_param(sema, e, w, "weight", xt, k, ns)) || (b && !norm_param(sema, e, b, "bias", xt, k, ns)))
    return poison(sema);
  if (epsa && !is_scalar(epsa->ty)) {
    diag_error(sema->cx, epsa->loc, "layer_norm(): argument 'eps' must be float, not %s", py_type_name(epsa->ty));
    return poison(sema);
  }
  NormArgs a = {.mask = b_dims_from(nd - k, nd), .eps = epsa ? epsa->ty->fval : 1e-5, .has = {w, b}};
  return norm_built(sema, e, d, a, (Ast *[]){x, w, b}, 3);
}

// torch.finfo(dt).eps
static double finfo_eps(DType dt) {
  switch (dt) {
  case DT_F16: return 0.0009765625;
  case DT_BF16: return 0.0078125;
  case DT_F64: return 2.220446049250313e-16;
  default: return 1.1920928955078125e-07;
  }
}

// F.rms_norm(input, normalized_shape, weight=None, eps=None) (PyTorch 2.4's, with
// layer_norm's checks and messages): y = x * rsqrt(mean(x * x) + eps) (* weight) over the
// last dims; eps None is torch.finfo(input.dtype).eps; halves computed in f32.
TType *ck_rms_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *w = barg(e, 2);
  TType *xt = get_tensor(sema, e, x, "input");
  int64_t ns[MAX_LIST];
  int k;
  double eps;
  if (!xt || !norm_shape(sema, e, "rms_norm", e->bargs[1], xt, ns, &k)) return poison(sema);
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"rms_norm\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  if ((w && !norm_param(sema, e, w, "weight", xt, k, ns)) ||
      !num_arg(sema, e, 3, "eps", "float", finfo_eps(xt->dtype), &eps))
    return poison(sema);
  int nd = xt->view.ndim;
  NormArgs a = {.mask = b_dims_from(nd - k, nd), .eps = eps, .has = {w}};
  return norm_built(sema, e, d, a, (Ast *[]){x, w}, 2);
}

// F.group_norm(input, num_groups, weight=None, bias=None, eps=1e-05): x [N, C, *] as
// [N, G, rest], normalized over rest (biased variance), then * weight[C] + bias[C].
TType *ck_group_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *w = barg(e, 2), *b = barg(e, 3);
  TType *xt = get_tensor(sema, e, x, "input");
  int64_t g;
  double eps;
  if (!xt || !get_int(sema, e, e->bargs[1], "num_groups", &g)) return poison(sema);
  if ((w && !get_tensor(sema, e, w, "weight")) || (b && !get_tensor(sema, e, b, "bias")) ||
      !num_arg(sema, e, 4, "eps", "float", 1e-5, &eps))
    return poison(sema);
  const View *v = &xt->view;
  int nd = v->ndim;
  if (nd == 0) {
    diag_error(sema->cx, call_loc(e), "Dimension specified as 0 but tensor has no dimensions");
    return poison(sema);
  }
  int a1;
  if (!wrap_dim(sema, call_loc(e), 1, nd, &a1)) return poison(sema);
  int64_t n = v->shape[0], c = v->shape[1], spatial = 1;
  for (int i = 2; i < nd; i++) spatial = wrap_mul(spatial, v->shape[i]);
  // F.group_norm's Python checks first: input.size(0) * input.size(1) // num_groups
  if (g == 0) {
    diag_error(sema->cx, e->bargs[1]->loc, "integer division or modulo by zero");
    return poison(sema);
  }
  int64_t nc = wrap_mul(n, c), per = nc / g - (nc % g != 0 && (nc < 0) != (g < 0));  // Python's //
  if (wrap_mul(per, spatial) == 1) {
    int64_t sz[TD_MAX_DIMS] = {per, g};
    for (int i = 2; i < nd; i++) sz[i] = v->shape[i];
    diag_error(sema->cx, call_loc(e), "Expected more than 1 value per channel when training, got input size %s",
               shape_str(sema, nd, sz));
    return poison(sema);
  }
  if (g < 0) {
    diag_error(sema->cx, e->bargs[1]->loc, "Expected num groups to be greater than 0, got %" PRId64, g);
    return poison(sema);
  }
  if (c % g) {
    diag_error(sema->cx, call_loc(e), "Expected number of channels in input to be divisible by num_groups, but got "
               "input of shape %s and num_groups=%" PRId64, shape_str(sema, nd, v->shape), g);
    return poison(sema);
  }
  Ast *ps[2] = {w, b};
  for (int i = 0; i < 2; i++) {
    if (!ps[i]) continue;
    const View *pv = &ps[i]->ty->view;
    if (pv->ndim != 1 || pv->shape[0] != c) {
      // PyTorch 1.13 prints the weight's shape in the bias's message too ([0] when there is none)
      const View *shown = w ? &w->ty->view : NULL;
      diag_error(sema->cx, ps[i]->loc, "Expected %s to be a vector of size equal to the number of channels in input, "
                 "but got %s of shape %s and input of shape %s", i ? "bias" : "weight", i ? "bias" : "weight",
                 shown ? shape_str(sema, shown->ndim, shown->shape) : "[0]", shape_str(sema, nd, v->shape));
      return poison(sema);
    }
  }
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"GroupNormKernelImpl\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  for (int i = 0; i < 2; i++)
    if (ps[i] && ps[i]->ty->dtype != xt->dtype) {
      diag_error(sema->cx, ps[i]->loc, "expected scalar type %s but found %s", torch_name(xt->dtype),
                 torch_name(ps[i]->ty->dtype));
      return poison(sema);
    }
  NormArgs a = {.eps = eps, .groups = g, .has = {w, b}};
  return norm_built(sema, e, d, a, (Ast *[]){x, w, b}, 3);
}

// The per-channel tensors of batch_norm / instance_norm (running_mean, running_var,
// weight, bias: NULL when None): tensors of `want` elements (shown as `want`, `got`
// times `scale`). False after PyTorch's message.
static bool bn_params(Sema *sema, const Ast *e, Ast **ps, const char *const *names, int64_t want, int64_t scale) {
  for (int i = 0; i < 4; i++) {
    if (!ps[i]) continue;
    const TType *t = get_tensor(sema, e, ps[i], names[i]);
    if (!t) return false;
    int64_t got = view_numel(t->view);
    if (wrap_mul(got, scale) != wrap_mul(want, scale)) {
      diag_error(sema->cx, ps[i]->loc, "%s should contain %" PRId64 " elements not %" PRId64, names[i],
                 wrap_mul(want, scale), wrap_mul(got, scale));
      return false;
    }
  }
  return true;
}

// Their layout and dtype, which the kernel finds after its dispatch on the input's dtype:
// vectors of one dtype, the input's or f32 beside a half input (PyTorch's mixed precision).
static bool bn_dtypes(Sema *sema, const TType *xt, Ast **ps) {
  DType pt = DT_COUNT;
  for (int i = 0; i < 4; i++) {
    if (!ps[i]) continue;
    const TType *t = ps[i]->ty;
    if (t->view.ndim != 1) {
      diag_error(sema->cx, ps[i]->loc, "TensorAccessor expected 1 dims but tensor has %d", t->view.ndim);
      return false;
    }
    if (pt == DT_COUNT) pt = t->dtype;
    DType expect = pt == DT_F32 && dtype_is_half(xt->dtype) ? DT_F32 : xt->dtype;
    if (t->dtype != expect) {
      diag_error(sema->cx, ps[i]->loc, "expected scalar type %s but found %s", torch_name(expect),
                 torch_name(t->dtype));
      return false;
    }
  }
  return true;
}

// F.batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
// momentum=0.1, eps=1e-05) in evaluation mode, with the running statistics; training=True
// updates running_mean and running_var in place, which tdsl does not do.
TType *ck_batch_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const char *const names[4] = {"running_mean", "running_var", "weight", "bias"};
  TType *xt = get_tensor(sema, e, e->bargs[0], "input");
  bool training = false;
  double momentum, eps;
  if (!xt || (barg(e, 5) && !get_bool(sema, e, e->bargs[5], "training", &training)) ||
      !num_arg(sema, e, 6, "momentum", "float", 0.1, &momentum) || !num_arg(sema, e, 7, "eps", "float", 1e-5, &eps))
    return poison(sema);
  if (training) {
    diag_error(sema->cx, e->bargs[5]->loc, "batch_norm(): training=True is not supported: it updates running_mean "
               "and running_var in place; use training=False (the running statistics)");
    return poison(sema);
  }
  Ast *ps[4] = {barg(e, 1), barg(e, 2), barg(e, 3), barg(e, 4)};
  int nd = xt->view.ndim;
  int64_t c = nd > 1 ? xt->view.shape[1] : 0;
  for (int i = 0; i < 2; i++)
    if (!ps[i]) {
      diag_error(sema->cx, e->bargs[1 + i]->loc, "%s must be defined in evaluation mode", names[i]);
      return poison(sema);
    }
  if (!bn_params(sema, e, ps, names, c, 1)) return poison(sema);
  int a1;
  if (!wrap_dim(sema, call_loc(e), 1, nd, &a1)) return poison(sema);
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"batch_norm_elementwise_cuda\" not implemented for '%s'",
               torch_name(xt->dtype));
    return poison(sema);
  }
  if (!bn_dtypes(sema, xt, ps)) return poison(sema);
  NormArgs a = {.eps = eps, .has = {ps[0], ps[1], ps[2], ps[3]}};
  return norm_built(sema, e, d, a, (Ast *[]){e->bargs[0], ps[0], ps[1], ps[2], ps[3]}, 5);
}

// F.instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
// use_input_stats=True, momentum=0.1, eps=1e-05): each sample's channels normalized by
// their own mean and (biased) variance over the spatial dims; use_input_stats=False uses
// the running statistics as batch_norm does. With use_input_stats=True PyTorch also
// updates given running statistics in place, which tdsl does not do: refused.
TType *ck_instance_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const char *const names[4] = {"running_mean", "running_var", "weight", "bias"};
  TType *xt = get_tensor(sema, e, e->bargs[0], "input");
  bool stats = true;
  double momentum, eps;
  if (!xt || (barg(e, 5) && !get_bool(sema, e, e->bargs[5], "use_input_stats", &stats)) ||
      !num_arg(sema, e, 6, "momentum", "float", 0.1, &momentum) || !num_arg(sema, e, 7, "eps", "float", 1e-5, &eps))
    return poison(sema);
  const View *v = &xt->view;
  int nd = v->ndim;
  Ast *ps[4] = {barg(e, 1), barg(e, 2), barg(e, 3), barg(e, 4)};
  if (stats) {
    int64_t spatial = 1;
    for (int i = 2; i < nd; i++) spatial = wrap_mul(spatial, v->shape[i]);
    if (spatial == 1) {
      diag_error(sema->cx, call_loc(e), "Expected more than 1 spatial element when training, got input size "
                 "torch.Size(%s)", shape_str(sema, nd, v->shape));
      return poison(sema);
    }
    for (int i = 0; i < 2; i++)
      if (ps[i]) {
        diag_error(sema->cx, ps[i]->loc, "instance_norm(): %s is updated in place when use_input_stats=True, which "
                   "tdsl does not do; pass the running statistics only with use_input_stats=False", names[i]);
        return poison(sema);
      }
  } else if (!ps[0] || !ps[1]) {
    diag_error(sema->cx, call_loc(e), "Expected running_mean and running_var to be defined when use_input_stats is "
               "false");
    return poison(sema);
  }
  int a1;
  if (!wrap_dim(sema, call_loc(e), 1, nd, &a1)) return poison(sema);
  if (!bn_params(sema, e, ps, names, v->shape[1], v->shape[0])) return poison(sema);
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'",
               stats ? "batch_norm_stats_cuda" : "batch_norm_elementwise_cuda", torch_name(xt->dtype));
    return poison(sema);
  }
  if (!bn_dtypes(sema, xt, ps)) return poison(sema);
  NormArgs a = {.eps = eps, .stats = stats, .mask = b_dims_from(2, nd), .has = {ps[0], ps[1], ps[2], ps[3]}};
  return norm_built(sema, e, d, a, (Ast *[]){e->bargs[0], ps[0], ps[1], ps[2], ps[3]}, 5);
}

// F.normalize(input, p=2.0, dim=1, eps=1e-12, out=None): x / max(norm_p(x, dim), eps)
TType *ck_normalize(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *xt = get_tensor(sema, e, e->bargs[0], "input");
  double p, eps;
  int64_t dim = 1;
  int a;
  if (!xt || !num_arg(sema, e, 1, "p", "float", 2, &p) ||
      (barg(e, 2) && !get_int(sema, e, e->bargs[2], "dim", &dim)) || !num_arg(sema, e, 3, "eps", "float", 1e-12, &eps))
    return poison(sema);
  if (barg(e, 4)) {
    diag_error(sema->cx, e->bargs[4]->loc, "normalize(): out= is not supported: the result is returned");
    return poison(sema);
  }
  if (!wrap_dim(sema, barg(e, 2) ? e->bargs[2]->loc : call_loc(e), dim, xt->view.ndim, &a)) return poison(sema);
  if (!dtype_is_float(xt->dtype)) {
    diag_error(sema->cx, call_loc(e), "norm(): input dtype should be either floating point or complex. Got %s "
               "instead.", torch_name(xt->dtype));
    return poison(sema);
  }
  return norm_built(sema, e, d, (NormArgs){.p = p, .dim = a, .eps = eps}, e->bargs, 1);
}

// F.cosine_similarity(x1, x2, dim=1, eps=1e-8), PyTorch 1.13's formula: both expanded to
// the broadcast shape in their common (float) dtype, then
// sum(x1 / max(norm(x1), eps) * (x2 / max(norm(x2), eps)), dim)
TType *ck_cosine_similarity(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x1 = e->bargs[0], *x2 = e->bargs[1];
  TType *t1 = get_tensor(sema, e, x1, "x1"), *t2 = t1 ? get_tensor(sema, e, x2, "x2") : NULL;
  int64_t dim = 1;
  double eps;
  int a;
  if (!t2 || (barg(e, 2) && !get_int(sema, e, e->bargs[2], "dim", &dim)) ||
      !num_arg(sema, e, 3, "eps", "float", 1e-8, &eps))
    return poison(sema);
  TType *ts[2] = {t1, t2};
  DType ct = result_type(sema, ts, 2);
  if (!dtype_is_float(ct)) {
    diag_error(sema->cx, call_loc(e), "expected common dtype to be floating point, yet common dtype is %s",
               torch_name(ct));
    return poison(sema);
  }
  int nd = t1->view.ndim;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, t1->view.shape, sizeof(int64_t) * (size_t)nd);
  if (!broadcast(sema, call_loc(e), &nd, shape, t2->view.ndim, t2->view.shape)) return poison(sema);
  if (!wrap_dim(sema, barg(e, 2) ? e->bargs[2]->loc : call_loc(e), dim, nd, &a)) return poison(sema);
  NormArgs na = {.dim = a, .eps = eps, .ndim = nd, .dtype = ct};
  memcpy(na.shape, shape, sizeof(int64_t) * (size_t)nd);
  return norm_built(sema, e, d, na, e->bargs, 2);
}

// F.pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False): norm_p(x1 - x2 + eps)
// over the last dim of the broadcast shape
TType *ck_pairwise_distance(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *t1 = get_tensor(sema, e, e->bargs[0], "x1"), *t2 = t1 ? get_tensor(sema, e, e->bargs[1], "x2") : NULL;
  double p, eps;
  bool keepdim = false;
  if (!t2 || !num_arg(sema, e, 2, "p", "float", 2, &p) || !num_arg(sema, e, 3, "eps", "float", 1e-6, &eps) ||
      (barg(e, 4) && !get_bool(sema, e, e->bargs[4], "keepdim", &keepdim)))
    return poison(sema);
  TType *ts[2] = {t1, t2};
  DType ct = result_type(sema, ts, 2);
  return norm_built(sema, e, d, (NormArgs){.p = p, .eps = eps, .keepdim = keepdim, .dtype = ct}, e->bargs, 2);
}
