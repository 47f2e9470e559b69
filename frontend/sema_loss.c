// frontend/sema_loss.c: the loss functions of torch.nn.functional (mse_loss, l1_loss,
// smooth_l1_loss, huber_loss, soft_margin_loss, binary_cross_entropy(_with_logits),
// kl_div, nll_loss, cross_entropy, poisson_nll_loss, gaussian_nll_loss; the margin and
// embedding losses are sema_loss_margin.c's), each handed to its builder (ir/build_loss.c)
// with its arguments parsed into LossArgs.
// Invariants: every check PyTorch 1.13 makes before it computes is made here first, with
// its message at the argument; a loss PyTorch computes in one CUDA kernel is computed in
// f32 for f16/bf16 and rounded once, before its reduction, as the kernel's output is; a
// loss PyTorch composes of several ops is built of the same ops in the same dtypes. The
// class index of nll_loss is read by gather, whose run-time check reports an index out
// of range; a target equal to ignore_index is replaced by 0 before it is read. Not
// checked: gaussian_nll_loss's "var has negative entry/entries" (a test of the values;
// negative entries clamp to eps).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ============================================================================
// Shared pieces: reduction, the deprecated size_average/reduce, casts, shapes
// ============================================================================
// reduction='none' | 'mean' | 'sum' (| 'batchmean' for kl_div): the bound argument i.
bool loss_reduction(Sema *sema, const Ast *e, int i, bool batchmean, int *red) {
  *red = RED_MEAN;
  Ast *a = i < e->nbargs ? e->bargs[i] : NULL;
  if (!a) return true;
  const TType *t = a->ty;
  if (t->kind == TY_STR) {
    const char *s = t->module;
    if (!strcmp(s, "none")) *red = RED_NONE;
    else if (!strcmp(s, "mean")) *red = RED_MEAN;
    else if (!strcmp(s, "sum")) *red = RED_SUM;
    else if (batchmean && !strcmp(s, "batchmean")) *red = RED_BATCHMEAN;
    else return diag_error(sema->cx, a->loc, "%s is not a valid value for reduction", s), false;
    return true;
  }
  // Python's ValueError shows the value as Python prints it
  if (t->kind == TY_NONE) diag_error(sema->cx, a->loc, "None is not a valid value for reduction");
  else if (is_scalar(t) && t->dtype == DT_BOOL)
    diag_error(sema->cx, a->loc, "%s is not a valid value for reduction", t->ival ? "True" : "False");
  else if (is_scalar(t) && t->dtype == DT_F64) diag_error(sema->cx, a->loc, "%g is not a valid value for reduction",
                                                          t->fval);
  else if (is_scalar(t))
    diag_error(sema->cx, a->loc, "%" PRId64 " is not a valid value for reduction", t->ival);
  else
    diag_error(sema->cx, a->loc, "argument 'reduction' must be str, not %s", py_type_name(t));
  return false;
}

// size_average and reduce (deprecated in PyTorch): only None is taken.
bool loss_no_legacy(Sema *sema, const Ast *e, int i) {
  Ast *a = barg(e, i);
  if (!a) return true;
  diag_error(sema->cx, a->loc, "size_average and reduce are deprecated and not supported: use reduction='mean', "
             "'sum' or 'none' instead");
  return false;
}

// The dtype a one-kernel loss computes in: f32 for halves.
DType loss_compute_dtype(DType dt) { return dtype_is_half(dt) ? DT_F32 : dt; }

// e becomes the loss the row's builder makes of ops[0..n) (NULL: an optional operand not
// given, left out), with args a.
TType *loss_built(Sema *sema, Ast *e, const BuiltinDef *d, LossArgs a, Ast **ops, int n) {
  Ast *given[8];
  int k = 0;
  for (int i = 0; i < n; i++)
    if (ops[i]) given[k++] = ops[i];
  return built(sema, e, d->b.build, KEEP(sema, a), given, k);
}

// The reduction of a loss written in Python that tests the string itself:
// ValueError "<reduction> is not valid", or Python's TypeError for `reduction + str`.
bool loss_python_reduction(Sema *sema, const Ast *e, int i, int *red) {
  Ast *a = i < e->nbargs ? e->bargs[i] : NULL;
  if (a && a->ty->kind == TY_STR) {
    const char *s = a->ty->module;
    if (strcmp(s, "none") && strcmp(s, "mean") && strcmp(s, "sum")) {
      diag_error(sema->cx, a->loc, "%s is not valid", s);
      return false;
    }
  } else if (a) {
    diag_error(sema->cx, a->loc, "unsupported operand type(s) for +: '%s' and 'str'", py_type_name(a->ty));
    return false;
  }
  return loss_reduction(sema, e, i, false, red);
}

// A tensor argument the Python code reads an attribute of (x.dim(), x.size()).
TType *loss_py_tensor(Sema *sema, Ast *a, const char *attr) {
  if (is_tensor(a->ty)) return a->ty;
  diag_error(sema->cx, a->loc, "'%s' object has no attribute '%s'", py_type_name(a->ty), attr);
  return NULL;
}

static const char *torch_size(Sema *sema, const TType *t) {
  return arena_printf(&sema->cx->arena, "torch.Size(%s)", shape_str(sema, t->view.ndim, t->view.shape));
}

// The target of a loss whose Python code reads target.size(): a tensor.
static TType *target_with_size(Sema *sema, Ast *a) {
  if (is_tensor(a->ty)) return a->ty;
  diag_error(sema->cx, a->loc, "'%s' object has no attribute 'size'", py_type_name(a->ty));
  return NULL;
}

// A tensor argument of the ATen function fname (PyTorch's argument parser's words).
TType *loss_aten_tensor(Sema *sema, Ast *a, const char *fname, const char *pname, int pos) {
  if (is_tensor(a->ty)) return a->ty;
  diag_error(sema->cx, a->loc, "%s(): argument '%s' (position %d) must be Tensor, not %s", fname, pname, pos,
             py_type_name(a->ty));
  return NULL;
}

// A float argument of the ATen function fname (a Python int or float), or its default.
bool loss_aten_float(Sema *sema, Ast *a, const char *fname, const char *pname, int pos, double dflt, double *out) {
  *out = dflt;
  if (!a) return true;
  if (is_scalar(a->ty)) {
    *out = a->ty->fval;
    return true;
  }
  diag_error(sema->cx, a->loc, "%s(): argument '%s' (position %d) must be float, not %s", fname, pname, pos,
             py_type_name(a->ty));
  return false;
}

// An int argument of fname (a Python int, not a bool), or its default.
static bool aten_int(Sema *sema, Ast *a, const char *fname, const char *pname, int pos, int64_t dflt, int64_t *out) {
  *out = dflt;
  if (!a) return true;
  if (is_scalar(a->ty) && a->ty->dtype == DT_I64) {
    *out = a->ty->ival;
    return true;
  }
  diag_error(sema->cx, a->loc, "%s(): argument '%s' (position %d) must be int, not %s", fname, pname, pos,
             py_type_name(a->ty));
  return false;
}

// PyTorch's Python warning for a target of another size than the input (it broadcasts).
static void warn_size(Sema *sema, const Ast *e, const TType *x, const TType *t) {
  if (same_shape(x->view.ndim, x->view.shape, t->view.ndim, t->view.shape)) return;
  diag_warning(sema->cx, call_loc(e), "Using a target size (%s) that is different to the input size (%s). This will "
               "likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
               torch_size(sema, t), torch_size(sema, x));
}

// An operand an in-place op writes into `into`: it must broadcast to into's shape
// exactly (PyTorch's messages for the two ways it can fail).
static bool broadcasts_into(Sema *sema, Loc loc, const TType *into, const TType *b) {
  int nd = into->view.ndim;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, into->view.shape, sizeof(int64_t) * (size_t)nd);
  if (!broadcast(sema, loc, &nd, shape, b->view.ndim, b->view.shape)) return false;
  if (!same_shape(nd, shape, into->view.ndim, into->view.shape)) {
    diag_error(sema->cx, loc, "output with shape %s doesn't match the broadcast shape %s",
               shape_str(sema, into->view.ndim, into->view.shape), shape_str(sema, nd, shape));
    return false;
  }
  return true;
}

// ============================================================================
// mse_loss, l1_loss, smooth_l1_loss, huber_loss, soft_margin_loss
// ============================================================================
// The (input, target) of the losses whose Python code warns about another size and
// broadcasts; false after an error.
static bool pointwise_operands(Sema *sema, Ast *e, TType **x, TType **t) {
  *x = e->bargs[0]->ty;
  if (!(*t = target_with_size(sema, e->bargs[1]))) return false;
  warn_size(sema, e, *x, *t);
  return true;
}

// The shape input and target broadcast to (PyTorch's torch.broadcast_tensors).
static bool broadcast_pair(Sema *sema, const Ast *e, const TType *x, const TType *t) {
  int nd = x->view.ndim;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, x->view.shape, sizeof(int64_t) * (size_t)nd);
  return broadcast(sema, call_loc(e), &nd, shape, t->view.ndim, t->view.shape);
}

// mse_loss, smooth_l1_loss and huber_loss: one CUDA kernel each (mse_cuda, smooth_l1_cuda,
// huber_cuda) over the broadcast operands, then the reduction.
static TType *pointwise_loss(Sema *sema, Ast *e, const BuiltinDef *d, int kind) {
  static const char *const kernels[] = {"mse_cuda", "smooth_l1_cuda", "huber_cuda"};
  TType *x, *t;
  int red;
  double p = 1.0;
  int ri = kind == LOSS_HUBER ? 2 : 4;
  if (!pointwise_operands(sema, e, &x, &t)) return poison(sema);
  if (kind != LOSS_HUBER && (!loss_no_legacy(sema, e, 2) || !loss_no_legacy(sema, e, 3))) return poison(sema);
  if (!broadcast_pair(sema, e, x, t) || !loss_reduction(sema, e, ri, false, &red)) return poison(sema);
  if (kind == LOSS_SMOOTH_L1) {
    if (!loss_aten_float(sema, barg(e, 5), "smooth_l1_loss", "beta", 4, 1.0, &p)) return poison(sema);
    if (p < 0) {
      diag_error(sema->cx, e->bargs[5]->loc, "smooth_l1_loss does not support negative values for beta.");
      return poison(sema);
    }
  } else if (kind == LOSS_HUBER) {
    if (!loss_aten_float(sema, barg(e, 3), "huber_loss", "delta", 4, 1.0, &p)) return poison(sema);
    if (p <= 0) {
      diag_error(sema->cx, e->bargs[3] ? e->bargs[3]->loc : call_loc(e),
                 "huber_loss does not support non-positive values for delta.");
      return poison(sema);
    }
  }
  TType *ts[2] = {x, t};
  DType common = result_type(sema, ts, 2), out = common;
  if (kind == LOSS_HUBER) {  // the output is the input's dtype: the common one is cast into it
    out = x->dtype;
    if (dtype_is_float(common) && !dtype_is_float(out)) {
      diag_error(sema->cx, call_loc(e), "result type %s can't be cast to the desired output type %s",
                 torch_name(common), torch_name(out));
      return poison(sema);
    }
  }
  if (!dtype_is_float(common)) {
    diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'", kernels[kind], torch_name(common));
    return poison(sema);
  }
  LossArgs a = {.reduction = red, .kind = kind, .dtype = loss_compute_dtype(common), .out = out, .p = p};
  return loss_built(sema, e, d, a, e->bargs, 2);
}

TType *ck_mse_loss(Sema *sema, Ast *e, const BuiltinDef *d) { return pointwise_loss(sema, e, d, LOSS_MSE); }
TType *ck_smooth_l1_loss(Sema *sema, Ast *e, const BuiltinDef *d) { return pointwise_loss(sema, e, d, LOSS_SMOOTH_L1); }
TType *ck_huber_loss(Sema *sema, Ast *e, const BuiltinDef *d) { return pointwise_loss(sema, e, d, LOSS_HUBER); }

// l1_loss is (input - target).abs() and its reduction in PyTorch: those ops, with their
// dtypes and messages (ints work with 'none' and 'sum').
TType *ck_l1_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  TType *x, *t;
  int red;
  if (!pointwise_operands(sema, e, &x, &t) || !loss_no_legacy(sema, e, 2) || !loss_no_legacy(sema, e, 3) ||
      !broadcast_pair(sema, e, x, t) || !loss_reduction(sema, e, 4, false, &red))
    return poison(sema);
  return loss_built(sema, e, d, (LossArgs){.reduction = red}, e->bargs, 2);
}

// soft_margin_loss: log1p(exp(-input * target)), written into a tensor of the input's
// shape and dtype (PyTorch's in-place chain), then reduced.
TType *ck_soft_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *xa = e->bargs[0], *ta = e->bargs[1];
  TType *x = xa->ty, *t = get_tensor(sema, e, ta, "target");
  int red;
  if (!t || !loss_no_legacy(sema, e, 2) || !loss_no_legacy(sema, e, 3) || !loss_reduction(sema, e, 4, false, &red))
    return poison(sema);
  if (x->dtype == DT_BOOL) {
    diag_error(sema->cx, call_loc(e), "Negation, the `-` operator, on a bool tensor is not supported. If you are "
               "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    return poison(sema);
  }
  if (!broadcasts_into(sema, call_loc(e), x, t)) return poison(sema);
  if (!dtype_is_float(x->dtype)) {
    TType *ts[2] = {x, t};
    DType r = result_type(sema, ts, 2);
    diag_error(sema->cx, call_loc(e), "result type %s can't be cast to the desired output type %s",
               torch_name(dtype_is_float(r) ? r : DT_F32), torch_name(x->dtype));
    return poison(sema);
  }
  TType *ts[2] = {x, t};
  DType cd = loss_compute_dtype(result_type(sema, ts, 2));
  return loss_built(sema, e, d, (LossArgs){.reduction = red, .dtype = cd}, (Ast *[]){xa, ta}, 2);
}

// ============================================================================
// binary_cross_entropy, binary_cross_entropy_with_logits, kl_div
// ============================================================================
// binary_cross_entropy: PyTorch's kernel (binary_cross_entropy_out_cuda) computes
// (t - 1) * max(log(1 - x), -100) - t * max(log(x), -100), then times weight.
TType *ck_binary_cross_entropy(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *xa = e->bargs[0], *ta = e->bargs[1], *wa = barg(e, 2);
  TType *x = xa->ty, *t, *w = NULL;
  int red;
  if (!loss_no_legacy(sema, e, 3) || !loss_no_legacy(sema, e, 4) || !loss_reduction(sema, e, 5, false, &red))
    return poison(sema);
  if (!(t = target_with_size(sema, ta)) || (wa && !(w = target_with_size(sema, wa)))) return poison(sema);
  if (!same_shape(x->view.ndim, x->view.shape, t->view.ndim, t->view.shape)) {
    diag_error(sema->cx, ta->loc, "Using a target size (%s) that is different to the input size (%s) is deprecated. "
               "Please ensure they have the same size.", torch_size(sema, t), torch_size(sema, x));
    return poison(sema);
  }
  if (w && !broadcasts_into(sema, wa->loc, t, w)) return poison(sema);
  if (t->dtype != x->dtype) {
    diag_error(sema->cx, ta->loc, "Found dtype %s but expected %s", torch_name(t->dtype), torch_name(x->dtype));
    return poison(sema);
  }
  if (!dtype_is_float(x->dtype)) {
    diag_error(sema->cx, call_loc(e), "\"binary_cross_entropy_out_cuda\" not implemented for '%s'",
               torch_name(x->dtype));
    return poison(sema);
  }
  LossArgs a = {.reduction = red, .dtype = loss_compute_dtype(x->dtype), .weight = wa};
  return loss_built(sema, e, d, a, (Ast *[]){xa, ta, wa}, 3);
}

// binary_cross_entropy_with_logits: PyTorch's composite formula, stable for large |x|:
//   m = max(-x, 0)
//   loss = (1 - t) * x + m + log(exp(-m) + exp(-x - m))
//   with pos_weight: (1 - t) * x + (1 + (pos_weight - 1) * t) * (log(exp(-m) + exp(-x - m)) + m)
// then times weight; the result has the target's dtype (PyTorch's in-place chain).
TType *ck_binary_cross_entropy_with_logits(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *xa = e->bargs[0], *ta = e->bargs[1], *wa = barg(e, 2), *pa = barg(e, 6);
  TType *x = xa->ty, *t, *w = NULL, *pw = NULL;
  int red;
  if (!loss_no_legacy(sema, e, 3) || !loss_no_legacy(sema, e, 4) || !loss_reduction(sema, e, 5, false, &red))
    return poison(sema);
  if (!(t = target_with_size(sema, ta))) return poison(sema);
  if (!same_shape(x->view.ndim, x->view.shape, t->view.ndim, t->view.shape)) {
    diag_error(sema->cx, ta->loc, "Target size (%s) must be the same as input size (%s)", torch_size(sema, t),
               torch_size(sema, x));
    return poison(sema);
  }
  if ((wa && !(w = loss_aten_tensor(sema, wa, "binary_cross_entropy_with_logits", "weight", 3))) ||
      (pa && !(pw = loss_aten_tensor(sema, pa, "binary_cross_entropy_with_logits", "pos_weight", 4))))
    return poison(sema);
  if (t->dtype == DT_BOOL) {
    diag_error(sema->cx, ta->loc, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
               "or `logical_xor()` operator instead.");
    return poison(sema);
  }
  if (x->dtype == DT_BOOL) {
    diag_error(sema->cx, xa->loc, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
               "to invert a mask, use the `~` or `logical_not()` operator instead.");
    return poison(sema);
  }
  if (!dtype_is_float(x->dtype)) {  // exp_ of the int max(-x, 0) in place
    diag_error(sema->cx, xa->loc, "result type Float can't be cast to the desired output type %s",
               torch_name(x->dtype));
    return poison(sema);
  }
  if (!dtype_is_float(t->dtype)) {  // (1 - t).mul_(x) in place
    diag_error(sema->cx, ta->loc, "result type %s can't be cast to the desired output type %s", torch_name(x->dtype),
               torch_name(t->dtype));
    return poison(sema);
  }
  if (pw && pw->dtype == DT_BOOL) {
    diag_error(sema->cx, pa->loc, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
               "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
    return poison(sema);
  }
  if (pw) {  // (pos_weight - 1) * t is a new tensor; it is added into the loss in place
    int nd = pw->view.ndim;
    int64_t shape[TD_MAX_DIMS];
    memcpy(shape, pw->view.shape, sizeof(int64_t) * (size_t)nd);
    if (!broadcast(sema, pa->loc, &nd, shape, t->view.ndim, t->view.shape)) return poison(sema);
    TType *lw = ty_fresh(sema, pw->dtype, nd, shape);
    if (!broadcasts_into(sema, pa->loc, t, lw)) return poison(sema);
  }
  if (w && !broadcasts_into(sema, wa->loc, t, w)) return poison(sema);
  LossArgs a = {.reduction = red, .dtype = loss_compute_dtype(t->dtype), .weight = wa, .pos_weight = pa};
  return loss_built(sema, e, d, a, (Ast *[]){xa, ta, wa, pa}, 4);
}

// kl_div: target * log(target) - target * input (0 where target is 0: xlogy), or with
// log_target exp(target) * (target - input); 'batchmean' is the sum over input.size(0).
TType *ck_kl_div(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *xa = e->bargs[0], *ta = e->bargs[1], *la = barg(e, 5);
  TType *x = xa->ty, *t = get_tensor(sema, e, ta, "target");
  int red;
  bool log_target = false;
  if (!t || !loss_no_legacy(sema, e, 2) || !loss_no_legacy(sema, e, 3) || !loss_reduction(sema, e, 4, true, &red))
    return poison(sema);
  if (la && !(is_scalar(la->ty) && la->ty->dtype == DT_BOOL)) {
    diag_error(sema->cx, la->loc, "kl_div(): argument 'log_target' must be bool, not %s", py_type_name(la->ty));
    return poison(sema);
  }
  if (la) log_target = la->ty->ival != 0;
  if (!dtype_is_float(x->dtype) || !dtype_is_float(t->dtype)) {
    diag_error(sema->cx, dtype_is_float(x->dtype) ? ta->loc : xa->loc, "kl_div: Integral inputs not supported.");
    return poison(sema);
  }
  if (!broadcast_pair(sema, e, x, t)) return poison(sema);
  if (red == RED_MEAN)  // PyTorch's UserWarning
    diag_warning(sema->cx, call_loc(e), "reduction: 'mean' divides the total loss by both the batch size and the "
                 "support size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                 "definition.'mean' will be changed to behave the same as 'batchmean' in the next major release.");
  LossArgs a = {.reduction = red, .log_target = log_target};
  return loss_built(sema, e, d, a, (Ast *[]){xa, ta}, 2);
}

// ============================================================================
// nll_loss, cross_entropy
// ============================================================================
// PyTorch's checks of nll_loss's input (N, C, d1, ...), (N, C) or (C), target and weight;
// fname names the ATen function in the messages of its argument parser.
static bool nll_check(Sema *sema, Ast *e, const char *fname, const TType *x, Ast *ta, Ast *wa, int red) {
  int nd = x->view.ndim;
  const int64_t *xs = x->view.shape;
  if (nd < 1) {
    diag_error(sema->cx, e->bargs[0]->loc, "Expected 1 or more dimensions (got 0)");
    return false;
  }
  TType *t = loss_aten_tensor(sema, ta, fname, "target", 2), *w = NULL;
  if (!t || (wa && !(w = loss_aten_tensor(sema, wa, fname, "weight", 3)))) return false;
  int tn = t->view.ndim;
  const int64_t *tsz = t->view.shape;
  if (nd != 1 && xs[0] != (tn ? tsz[0] : 0)) {
    diag_error(sema->cx, ta->loc, "Expected input batch_size (%" PRId64 ") to match target batch_size (%" PRId64 ").",
               xs[0], tn ? tsz[0] : 0);
    return false;
  }
  int64_t ncls = xs[nd == 1 ? 0 : 1];
  const char *kernel;
  if (nd <= 2) {
    if (tn > 1) {
      diag_error(sema->cx, ta->loc, "0D or 1D target tensor expected, multi-target not supported");
      return false;
    }
    if (nd == 1 && tn == 1) {  // PyTorch reads target[0] when the sizes happen to agree
      if (xs[0] != tsz[0])
        diag_error(sema->cx, ta->loc, "size mismatch (got input: %s, target: %s)", shape_str(sema, 1, xs),
                   shape_str(sema, 1, tsz));
      else
        diag_error(sema->cx, ta->loc, "the target of a 1-D input (one sample) must be 0-d");
      return false;
    }
    if (w && (w->view.ndim != 1 || view_numel(w->view) != ncls)) {
      diag_error(sema->cx, wa->loc, "weight tensor should be defined either for all %" PRId64 " classes or no classes "
                 "but got weight tensor of shape: %s", ncls, shape_str(sema, w->view.ndim, w->view.shape));
      return false;
    }
    kernel = nd == 1 ? "nll_loss_forward_reduce_cuda_kernel_1d"
             : red == RED_NONE ? "nll_loss_forward_no_reduce_cuda_kernel" : "nll_loss_forward_reduce_cuda_kernel_2d";
  } else {
    if (nd == 4) {
      if (tn != 3) {
        diag_error(sema->cx, ta->loc, "only batches of spatial targets supported (3D tensors) but got targets of "
                   "dimension: %d", tn);
        return false;
      }
    } else {
      int64_t want[TD_MAX_DIMS];
      want[0] = xs[0];
      for (int i = 2; i < nd; i++) want[i - 1] = xs[i];
      if (!same_shape(nd - 1, want, tn, tsz)) {
        diag_error(sema->cx, ta->loc, "Expected target size %s, got %s", shape_str(sema, nd - 1, want),
                   shape_str(sema, tn, tsz));
        return false;
      }
    }
    if (w && view_numel(w->view) != ncls) {
      diag_error(sema->cx, wa->loc, "weight tensor should be defined either for all or no classes");
      return false;
    }
    if (nd == 4 && (tsz[0] != xs[0] || tsz[1] != xs[2] || tsz[2] != xs[3])) {
      diag_error(sema->cx, ta->loc, "size mismatch (got input: %s , target: %s", shape_str(sema, nd, xs),
                 shape_str(sema, tn, tsz));
      return false;
    }
    kernel = red == RED_NONE ? "nll_loss2d_forward_no_reduce_kernel" : "nll_loss2d_forward_kernel";
  }
  if (!dtype_is_float(x->dtype)) {
    diag_error(sema->cx, e->bargs[0]->loc, "\"%s\" not implemented for '%s'", kernel, torch_name(x->dtype));
    return false;
  }
  if (t->dtype != DT_I64) {
    if (nd <= 2)
      diag_error(sema->cx, ta->loc, "\"%s_index\" not implemented for '%s'", kernel, torch_name(t->dtype));
    else
      diag_error(sema->cx, ta->loc, "expected scalar type Long but found %s", torch_name(t->dtype));
    return false;
  }
  if (w && w->dtype != x->dtype) {
    diag_error(sema->cx, wa->loc, "expected scalar type %s but found %s", torch_name(x->dtype), torch_name(w->dtype));
    return false;
  }
  return true;
}

// nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
// reduction='mean')
TType *ck_nll_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *xa = e->bargs[0], *ta = e->bargs[1], *wa = barg(e, 2);
  int red;
  int64_t ignore;
  if (!loss_no_legacy(sema, e, 3) || !loss_no_legacy(sema, e, 5) || !loss_reduction(sema, e, 6, false, &red) ||
      !aten_int(sema, barg(e, 4), "nll_loss_nd", "ignore_index", 5, -100, &ignore) ||
      !nll_check(sema, e, "nll_loss_nd", xa->ty, ta, wa, red))
    return poison(sema);
  return loss_built(sema, e, d, (LossArgs){.reduction = red, .ignore_index = ignore, .weight = wa},
                    (Ast *[]){xa, ta, wa}, 3);
}

// The checks of log_softmax(x, dim) (its dim written as a number: the call's place).
static bool log_softmax_ok(Sema *sema, const Ast *e, const TType *x, int dim) {
  int a;
  if (!wrap_dim(sema, e->loc, dim, x->view.ndim, &a)) return false;
  if (dtype_is_float(x->dtype)) return true;
  diag_error(sema->cx, call_loc(e), "\"host_softmax\" not implemented for '%s'", torch_name(x->dtype));
  return false;
}

// cross_entropy with class probabilities (a float target of the input's shape):
// -(log_softmax(x) * t' * weight) summed over the classes, t' = t * (1 - ls) + ls / C;
// 'mean' divides the sum by numel / C.
static TType *cross_entropy_probs(Sema *sema, Ast *e, const BuiltinDef *d, Ast *xa, Ast *ta, Ast *wa, int64_t ignore,
                                  int red, double ls) {
  TType *x = xa->ty, *t = ta->ty;
  int nd = x->view.ndim, cd = nd == 1 ? 0 : 1;
  if (!dtype_is_float(t->dtype)) {
    diag_error(sema->cx, ta->loc, "Expected floating point type for target with class probabilities, got %s",
               torch_name(t->dtype));
    return poison(sema);
  }
  if (ignore >= 0) {
    diag_error(sema->cx, e->bargs[4]->loc, "ignore_index is not supported for floating point target");
    return poison(sema);
  }
  if (nd == 0) {
    diag_error(sema->cx, xa->loc, "Dimension specified as 1 but tensor has no dimensions");
    return poison(sema);
  }
  int64_t ncls = x->view.shape[cd];
  if (wa && (wa->ty->view.ndim != 1 || view_numel(wa->ty->view) != ncls)) {
    diag_error(sema->cx, wa->loc, "cross_entropy: weight tensor should be defined either for all %" PRId64 " classes "
               "or no classes but got weight tensor of shape: %s", ncls,
               shape_str(sema, wa->ty->view.ndim, wa->ty->view.shape));
    return poison(sema);
  }
  if (!log_softmax_ok(sema, e, x, cd)) return poison(sema);
  if (ls > 1) {
    diag_error(sema->cx, e->bargs[7]->loc, "label_smoothing must be between 0.0 and 1.0. Got: %g", ls);
    return poison(sema);
  }
  LossArgs a = {.reduction = red, .ignore_index = ignore, .weight = wa, .label_smoothing = ls, .probs = true};
  return loss_built(sema, e, d, a, (Ast *[]){xa, ta, wa}, 3);
}

// cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
// reduce=None, reduction='mean', label_smoothing=0.0): nll_loss of log_softmax(input)
// for class indices; with label_smoothing ls > 0,
//   (1 - ls) * nll + ls / C * smooth, smooth = -sum_c(weight[c] * log_softmax(x)[c])
// (0 for ignored targets), reduced as nll is (its 'mean' divides by the same weights).
TType *ck_cross_entropy(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *xa = e->bargs[0], *ta = e->bargs[1], *wa = barg(e, 2);
  TType *x = xa->ty, *t;
  int red;
  int64_t ignore;
  double ls;
  if (!loss_no_legacy(sema, e, 3) || !loss_no_legacy(sema, e, 5) || !loss_reduction(sema, e, 6, false, &red) ||
      !aten_int(sema, barg(e, 4), "cross_entropy_loss", "ignore_index", 5, -100, &ignore) ||
      !loss_aten_float(sema, barg(e, 7), "cross_entropy_loss", "label_smoothing", 6, 0.0, &ls) ||
      !(t = loss_aten_tensor(sema, ta, "cross_entropy_loss", "target", 2)) ||
      (wa && !loss_aten_tensor(sema, wa, "cross_entropy_loss", "weight", 3)))
    return poison(sema);
  if (same_shape(x->view.ndim, x->view.shape, t->view.ndim, t->view.shape))
    return cross_entropy_probs(sema, e, d, xa, ta, wa, ignore, red, ls);
  int nd = x->view.ndim, cd = nd == 1 ? 0 : 1;
  if (ls > 1) {
    diag_error(sema->cx, e->bargs[7]->loc, "label_smoothing must be between 0.0 and 1.0. Got: %g", ls);
    return poison(sema);
  }
  if (!log_softmax_ok(sema, e, x, cd)) return poison(sema);
  TType *lp = ty_fresh(sema, x->dtype, x->view.ndim, x->view.shape);  // log_softmax(input)
  if (!nll_check(sema, e, "cross_entropy_loss", lp, ta, wa, red)) return poison(sema);
  LossArgs a = {.reduction = red, .ignore_index = ignore, .weight = wa, .label_smoothing = ls};
  return loss_built(sema, e, d, a, (Ast *[]){xa, ta, wa}, 3);
}

// ============================================================================
// poisson_nll_loss, gaussian_nll_loss
// ============================================================================
// poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-08,
// reduce=None, reduction='mean'): exp(input) - target * input, or input - target *
// log(input + eps); full adds target * log(target) - target + 0.5 * log(2 pi target)
// where target > 1 (in place: the loss keeps its dtype).
TType *ck_poisson_nll_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *t = e->bargs[1];
  int red;
  bool log_input = true, full = false;
  double eps;
  const char *fn = "poisson_nll_loss";
  if (!loss_no_legacy(sema, e, 4) || !loss_no_legacy(sema, e, 6) || !loss_python_reduction(sema, e, 7, &red) ||
      !loss_aten_tensor(sema, x, fn, "input", 1) || !loss_aten_tensor(sema, t, fn, "target", 2) ||
      (barg(e, 2) && !get_bool(sema, e, barg(e, 2), "log_input", &log_input)) ||
      (barg(e, 3) && !get_bool(sema, e, barg(e, 3), "full", &full)) ||
      !loss_aten_float(sema, barg(e, 5), fn, "eps", 5, 1e-8, &eps))
    return poison(sema);
  LossArgs a = {.reduction = red, .log_input = log_input, .full = full, .eps = eps};
  return loss_built(sema, e, d, a, (Ast *[]){x, t}, 2);
}

// gaussian_nll_loss(input, target, var, full=False, eps=1e-06, reduction='mean'):
// 0.5 * (log(v) + (input - target)^2 / v), v = var clamped to eps (var of input's size,
// or one dim short, or its last dim 1), plus 0.5 * log(2 pi) when full.
TType *ck_gaussian_nll_loss(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *t = e->bargs[1], *v = e->bargs[2], *fa = barg(e, 3), *ea = barg(e, 4);
  TType *vt, *xt;
  int red;
  bool full = false, unsq = false;
  if (!(vt = loss_py_tensor(sema, v, "size")) || !(xt = loss_py_tensor(sema, x, "size"))) return poison(sema);
  int xn = xt->view.ndim, vn = vt->view.ndim;
  const int64_t *xs = xt->view.shape, *vs = vt->view.shape;
  if (!same_shape(xn, xs, vn, vs)) {
    int xk = xn ? xn - 1 : 0;
    if (same_shape(xk, xs, vn, vs)) {
      unsq = true;
    } else if (vn == 0) {
      diag_error(sema->cx, v->loc, "Dimension specified as -1 but tensor has no dimensions");
      return poison(sema);
    } else if (!same_shape(xk, xs, vn - 1, vs) || vs[vn - 1] != 1) {
      diag_error(sema->cx, v->loc, "var is of incorrect size");
      return poison(sema);
    }
  }
  if (!loss_python_reduction(sema, e, 5, &red) || (fa && !get_bool(sema, e, fa, "full", &full))) return poison(sema);
  if (ea && !is_scalar(ea->ty)) {
    diag_error(sema->cx, ea->loc, "clamp_(): argument 'min' must be Number, not %s", py_type_name(ea->ty));
    return poison(sema);
  }
  LossArgs a = {.reduction = red, .full = full, .eps = ea ? ea->ty->fval : 1e-6, .var_unsqueeze = unsq};
  return loss_built(sema, e, d, a, (Ast *[]){x, t, v}, 3);
}
