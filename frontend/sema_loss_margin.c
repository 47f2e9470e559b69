// frontend/sema_loss_margin.c: the margin and embedding losses of torch.nn.functional
// (margin_ranking_loss, hinge_embedding_loss, cosine_embedding_loss,
// multilabel_soft_margin_loss, multi_margin_loss, multilabel_margin_loss,
// triplet_margin_loss, triplet_margin_with_distance_loss): their checks; each is built by
// ir/build_loss.c from the ops PyTorch 1.13 composes it of. The other losses, and the
// pieces all share, are sema_loss.c's.
// Invariants: PyTorch's checks come first, with its messages at the argument; a loss
// PyTorch composes of ops (ATen's composite losses, the Python ones) is built of the
// same ops in the same dtypes, so halves round after each op as PyTorch's do; the two
// losses with CUDA kernels of their own (multi_margin_loss, multilabel_margin_loss)
// compute in f32 for f16 and round once per sample, and read their class indices with
// gather, whose run-time check reports an index out of range.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ============================================================================
// Shared pieces
// ============================================================================
// The deprecated size_average (i) and reduce (j), then reduction (r) as get_enum reads it.
static bool enum_reduction(Sema *sema, const Ast *e, int i, int j, int r, int *red) {
  return loss_no_legacy(sema, e, i) && loss_no_legacy(sema, e, j) && loss_reduction(sema, e, r, false, red);
}

static const char *size_str(Sema *sema, const TType *t) { return shape_str(sema, t->view.ndim, t->view.shape); }

// ============================================================================
// margin_ranking_loss, hinge_embedding_loss, cosine_embedding_loss
// ============================================================================
// margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
// reduction='mean'): clamp_min(-target * (input1 - input2) + margin, 0)
TType *ck_margin_ranking_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1], *t = e->bargs[2];
  TType *at, *bt, *tt;
  int red;
  double margin;
  if (!enum_reduction(sema, e, 4, 5, 6, &red) || !(at = loss_py_tensor(sema, a, "dim")) ||
      !(bt = loss_py_tensor(sema, b, "dim")) || !(tt = loss_py_tensor(sema, t, "dim")))
    return poison(sema);
  if (at->view.ndim != bt->view.ndim || at->view.ndim != tt->view.ndim) {  // PyTorch's text ends in a space
    diag_error(sema->cx, call_loc(e), "margin_ranking_loss : All input tensors should have same dimension but got "
               "sizes: input1: torch.Size(%s), input2: torch.Size(%s), target: torch.Size(%s)", size_str(sema, at),
               size_str(sema, bt), size_str(sema, tt));
    return poison(sema);
  }
  if (!loss_aten_float(sema, barg(e, 3), "margin_ranking_loss", "margin", 4, 0.0, &margin)) return poison(sema);
  return loss_built(sema, e, d, (LossArgs){.reduction = red, .margin = margin}, (Ast *[]){a, b, t}, 3);
}

// hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
// reduction='mean'): where(target != 1, clamp_min(margin - input, 0), 0)
//                  + where(target != -1, input, 0)
TType *ck_hinge_embedding_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *t = e->bargs[1];
  int red;
  double margin;
  if (!enum_reduction(sema, e, 3, 4, 5, &red) ||
      !loss_aten_tensor(sema, x, "hinge_embedding_loss", "input", 1) ||
      !loss_aten_tensor(sema, t, "hinge_embedding_loss", "target", 2) ||
      !loss_aten_float(sema, barg(e, 2), "hinge_embedding_loss", "margin", 3, 1.0, &margin))
    return poison(sema);
  return loss_built(sema, e, d, (LossArgs){.reduction = red, .margin = margin}, (Ast *[]){x, t}, 2);
}

// cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
// reduction='mean'): cos = sum(x1 * x2) / sqrt((sum(x1^2) + 1e-12) * (sum(x2^2) + 1e-12))
// over the last dim; where(target == 1, 1 - cos, 0) + where(target == -1, clamp_min(cos -
// margin, 0), 0).
TType *ck_cosine_embedding_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1], *t = e->bargs[2];
  TType *at, *bt, *tt;
  int red;
  double margin;
  const char *fn = "cosine_embedding_loss";
  if (!enum_reduction(sema, e, 4, 5, 6, &red) || !(at = loss_aten_tensor(sema, a, fn, "input1", 1)) ||
      !(bt = loss_aten_tensor(sema, b, fn, "input2", 2)) || !(tt = loss_aten_tensor(sema, t, fn, "target", 3)) ||
      !loss_aten_float(sema, barg(e, 3), fn, "margin", 4, 0.0, &margin))
    return poison(sema);
  int td = tt->view.ndim;
  if (td > 1) {
    diag_error(sema->cx, t->loc, "0D or 1D target tensor expected, multi-target not supported");
    return poison(sema);
  }
  if (at->view.ndim != td + 1 || bt->view.ndim != td + 1) {
    diag_error(sema->cx, call_loc(e), "%dD target tensor expects %dD input tensors, but found inputs with sizes %s "
               "and %s.", td, td + 1, size_str(sema, at), size_str(sema, bt));
    return poison(sema);
  }
  return loss_built(sema, e, d, (LossArgs){.reduction = red, .margin = margin}, (Ast *[]){a, b, t}, 3);
}

// ============================================================================
// multilabel_soft_margin_loss, multi_margin_loss, multilabel_margin_loss
// ============================================================================
// multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
// reduction='mean'): -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input)),
// times weight, summed over the last dim and divided by its size.
TType *ck_multilabel_soft_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *t = e->bargs[1], *w = barg(e, 2);
  int red;
  TType *xt;
  if (!loss_no_legacy(sema, e, 3) || !loss_no_legacy(sema, e, 4) || !(xt = loss_py_tensor(sema, x, "dim")))
    return poison(sema);
  if (xt->view.ndim == 0) {
    diag_error(sema->cx, x->loc, "Dimension specified as -1 but tensor has no dimensions");
    return poison(sema);
  }
  if (!dtype_is_float(xt->dtype)) {  // F.logsigmoid's kernel
    diag_error(sema->cx, call_loc(e), "\"log_sigmoid_forward_cuda\" not implemented for '%s'", torch_name(xt->dtype));
    return poison(sema);
  }
  if (!loss_python_reduction(sema, e, 5, &red)) return poison(sema);
  return loss_built(sema, e, d, (LossArgs){.reduction = red, .weight = w}, (Ast *[]){x, t, w}, 3);
}

// The input of multi_margin_loss and multilabel_margin_loss (PyTorch's LossMulti.h): a
// non-empty vector or a matrix of nframe rows of dim classes (0-d: one of one), float.
static bool multi_input(Sema *sema, const Ast *x, const char *kernel, int64_t *nframe, int64_t *dim) {
  const TType *t = x->ty;
  int nd = t->view.ndim;
  const int64_t *s = t->view.shape;
  if (!((nd == 2 && s[1] != 0) || (nd == 1 && s[0] != 0) || nd == 0)) {
    diag_error(sema->cx, x->loc, "Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s",
               shape_str(sema, nd, s));
    return false;
  }
  *nframe = nd <= 1 ? 1 : s[0];
  *dim = nd == 0 ? 1 : s[nd - 1];
  if (t->dtype == DT_BF16 || !dtype_is_float(t->dtype)) {
    diag_error(sema->cx, x->loc, "\"%s\" not implemented for '%s'", kernel, torch_name(t->dtype));
    return false;
  }
  return true;
}

static bool long_target(Sema *sema, const Ast *t) {
  if (t->ty->dtype == DT_I64) return true;
  diag_error(sema->cx, t->loc, "expected scalar type Long but found %s", torch_name(t->ty->dtype));
  return false;
}

// multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
// reduce=None, reduction='mean'): for each sample of class y, the sum over the classes
// j != y of max(0, margin - x[y] + x[j])^p (times weight[y]), divided by the classes.
TType *ck_multi_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *t = e->bargs[1], *pa = barg(e, 2), *w = barg(e, 4);
  int red;
  double margin;
  int64_t nframe, dim;
  const char *fn = "multi_margin_loss";
  if (!loss_no_legacy(sema, e, 5) || !loss_no_legacy(sema, e, 6) || !loss_reduction(sema, e, 7, false, &red))
    return poison(sema);
  double pv = !pa ? 1 : !is_scalar(pa->ty) ? 0 : pa->ty->dtype == DT_BOOL ? (double)pa->ty->ival : pa->ty->fval;
  bool p2 = pv == 2;
  if (!p2 && pv != 1) {
    diag_error(sema->cx, pa->loc, "only p == 1 and p == 2 supported");
    return poison(sema);
  }
  if (w && !loss_py_tensor(sema, w, "dim")) return poison(sema);
  if (w && w->ty->view.ndim != 1) {
    diag_error(sema->cx, w->loc, "weight must be one-dimensional");
    return poison(sema);
  }
  if (!loss_aten_tensor(sema, x, fn, "input", 1) || !loss_aten_tensor(sema, t, fn, "target", 2) ||
      !loss_aten_float(sema, barg(e, 3), fn, "margin", 4, 1.0, &margin) ||
      !multi_input(sema, x, "multi_margin_loss_cuda", &nframe, &dim))
    return poison(sema);
  const TType *tt = t->ty;
  if (tt->view.ndim > 1 || view_numel(tt->view) != nframe) {
    diag_error(sema->cx, t->loc, "inconsistent target size, got: %s", size_str(sema, tt));
    return poison(sema);
  }
  if (w && view_numel(w->ty->view) != dim) {
    diag_error(sema->cx, w->loc, "inconsistent weight size, expected %" PRId64 " but got %s", dim,
               size_str(sema, w->ty));
    return poison(sema);
  }
  if (!long_target(sema, t)) return poison(sema);
  if (w && w->ty->dtype != x->ty->dtype) {
    diag_error(sema->cx, w->loc, "expected scalar type %s but found %s", torch_name(x->ty->dtype),
               torch_name(w->ty->dtype));
    return poison(sema);
  }
  LossArgs a = {.reduction = red, .dtype = loss_compute_dtype(x->ty->dtype), .margin = margin, .p = pv, .weight = w,
                .nframe = nframe, .classes = dim, .ndim = tt->view.ndim};
  memcpy(a.shape, tt->view.shape, sizeof(int64_t) * (size_t)tt->view.ndim);
  return loss_built(sema, e, d, a, (Ast *[]){x, t, w}, 3);
}

// multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction='mean'):
// the targets of a sample are its target row up to the first -1 (valid where the
// cumulative product of target != -1 is 1); the loss sums max(0, 1 - x[y] + x[i]) over
// those y and the classes i that are not among them, divided by the classes.
TType *ck_multilabel_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *t = e->bargs[1];
  int red;
  int64_t nframe, dim;
  const char *fn = "multilabel_margin_loss";
  if (!enum_reduction(sema, e, 2, 3, 4, &red) || !loss_aten_tensor(sema, x, fn, "input", 1) ||
      !loss_aten_tensor(sema, t, fn, "target", 2) ||
      !multi_input(sema, x, "multilabel_margin_loss_forward_kernel", &nframe, &dim))
    return poison(sema);
  const TType *xt = x->ty, *tt = t->ty;
  bool ok = xt->view.ndim <= 1 ? tt->view.ndim <= 1 && view_numel(tt->view) == dim
                               : tt->view.ndim == 2 && tt->view.shape[0] == nframe && tt->view.shape[1] == dim;
  if (!ok) {
    diag_error(sema->cx, t->loc, "inconsistent size %s for argument #2 'target'", size_str(sema, tt));
    return poison(sema);
  }
  if (!long_target(sema, t)) return poison(sema);
  LossArgs a = {.reduction = red, .dtype = loss_compute_dtype(xt->dtype), .nframe = nframe, .classes = dim,
                .ndim = xt->view.ndim <= 1 ? 0 : 1, .shape = {nframe}};
  return loss_built(sema, e, d, a, (Ast *[]){x, t}, 2);
}

// ============================================================================
// triplet_margin_loss, triplet_margin_with_distance_loss
// ============================================================================
// triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False,
// size_average=None, reduce=None, reduction='mean')
TType *ck_triplet_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const char *const names[] = {"anchor", "positive", "negative"};
  Ast **apn = e->bargs;
  int red, nd[3];
  double margin, norm, eps;
  bool swap = false;
  if (d->variant == 1) {  // triplet_margin_with_distance_loss
    Ast *fa = barg(e, 3), *ma = barg(e, 4), *sa = barg(e, 5);
    if (fa) {
      diag_error(sema->cx, fa->loc, "triplet_margin_with_distance_loss: tdsl takes no callable for "
                 "'distance_function': leave it None (pairwise_distance)");
      return poison(sema);
    }
    if (ma && !is_scalar(ma->ty)) {
      diag_error(sema->cx, ma->loc, "triplet_margin_with_distance_loss(): argument 'margin' must be float, not %s",
                 py_type_name(ma->ty));
      return poison(sema);
    }
    if ((sa && !get_bool(sema, e, sa, "swap", &swap)) || !loss_reduction(sema, e, 6, false, &red)) return poison(sema);
    LossArgs a = {.reduction = red, .margin = ma ? ma->ty->fval : 1.0, .p = 2.0, .eps = 1e-6, .swap = swap};
    return loss_built(sema, e, d, a, apn, 3);
  }
  const char *fn = "triplet_margin_loss";
  if (!enum_reduction(sema, e, 7, 8, 9, &red)) return poison(sema);
  for (int i = 0; i < 3; i++) {
    if (!loss_aten_tensor(sema, apn[i], fn, names[i], i + 1)) return poison(sema);
    nd[i] = apn[i]->ty->view.ndim;
  }
  if (!loss_aten_float(sema, barg(e, 3), fn, "margin", 4, 1.0, &margin) ||
      !loss_aten_float(sema, barg(e, 4), fn, "p", 5, 2.0, &norm) ||
      !loss_aten_float(sema, barg(e, 5), fn, "eps", 6, 1e-6, &eps) ||
      (barg(e, 6) && !get_bool(sema, e, barg(e, 6), "swap", &swap)))
    return poison(sema);
  if (nd[0] != nd[1] || nd[1] != nd[2]) {
    diag_error(sema->cx, call_loc(e), "All inputs should have same dimension but got %dD, %dD and %dD inputs.", nd[0],
               nd[1], nd[2]);
    return poison(sema);
  }
  LossArgs a = {.reduction = red, .margin = margin, .p = norm, .eps = eps, .swap = swap, .margin_first = true};
  return loss_built(sema, e, d, a, apn, 3);
}
