// ir/build_loss.c: the losses of torch.nn.functional, built from the nodes PyTorch
// computes them with (ir/build.h): mse, l1, smooth_l1, huber, soft_margin, binary cross
// entropy (with logits), kl_div, nll_loss, cross_entropy, and the margin, embedding and
// likelihood losses.
// Invariants: a loss PyTorch computes in one CUDA kernel is computed in LossArgs.dtype (f32
// for halves) and rounded once, before its reduction, as the kernel's output is; a loss
// PyTorch composes of ops (ATen's composite losses, the Python ones) is built of the same
// ops in the same dtypes, so halves round after each op as PyTorch's do. Class indices are
// read by gather, whose run-time check reports an index out of range; a target equal to
// ignore_index reads class 0 and contributes 0.
#include "ir/build.h"

#include <math.h>

static const LossArgs *loss(const void *args) { return args; }

// loss reduced: its mean or sum over every element (0-d), or itself
// x gathered at class indices idx along dim: out of range is PyTorch's "Target 99 is out of
// bounds." (GATHER_TARGET)
static Value *gather_target(Builder *b, Value *x, int dim, Value *idx) {
  Value *g = build_gather(b, x, dim, idx);
  if (g->node) g->node->attr.form = GATHER_TARGET;
  return g;
}

static Value *reduced(Builder *b, Value *l, LossReduction red) {
  if (red == LOSS_NONE) return l;
  return build_reduce_all(b, red == LOSS_SUM ? OP_SUM : OP_MEAN, l);
}

// the weight operand after k given operands, or NULL
static Value *optional(Builder *b, bool given, int at) { return given ? b_in(b, at) : NULL; }

static Value *unsq(Builder *b, Value *x, int dim) { return build_unsqueeze(b, x, dim); }

// ============================================================================
// mse_loss, l1_loss, smooth_l1_loss, huber_loss, soft_margin_loss
// ============================================================================
// d = a - b; mse: d * d; z = |d|:
//   smooth_l1: z < beta ? 0.5 * z * z / beta : z - 0.5 * beta
//   huber:     z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta)
int build_pointwise_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  double p = a->p;
  Value *x = build_cast(b, b_in(b, 0), a->dtype), *t = build_cast(b, b_in(b, 1), a->dtype);
  Value *d = b_sub(b, x, t), *l;
  if (a->kind == LOSS_MSE) {
    l = b_mul(b, d, d);
  } else {
    Value *z = b_abs(b, d);
    Value *sq = b_mul(b, b_mul(b, b_f(b, 0.5), z), z);
    Value *lin = b_sub(b, z, b_f(b, 0.5 * p));
    if (a->kind == LOSS_SMOOTH_L1) sq = b_div(b, sq, b_f(b, p));
    else lin = b_mul(b, b_f(b, p), lin);
    l = b_where(b, b_bin(b, OP_LT, z, b_f(b, p)), sq, lin);
  }
  out[0] = reduced(b, build_cast(b, l, a->out), a->reduction);
  return 1;
}

// |input - target|, reduced (PyTorch's composition: ints work with 'none' and 'sum')
int build_l1_loss(Builder *b, const void *args, Value **out) {
  Value *d = b_sub(b, b_in(b, 0), b_in(b, 1));
  out[0] = reduced(b, b_abs(b, d), loss(args)->reduction);
  return 1;
}

// log1p(exp(-input * target)) in the input's dtype
int build_soft_margin_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *z = b_mul(b, b_neg(b, build_cast(b, b_in(b, 0), a->dtype)), build_cast(b, b_in(b, 1), a->dtype));
  Value *l = build_cast(b, b_un(b, OP_LOG1P, b_exp(b, z)), b->in[0].dtype);
  out[0] = reduced(b, l, a->reduction);
  return 1;
}

// ============================================================================
// binary_cross_entropy, binary_cross_entropy_with_logits, kl_div
// ============================================================================
// (t - 1) * max(log(1 - x), -100) - t * max(log(x), -100), times weight (PyTorch's kernel)
int build_binary_cross_entropy(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *x = build_cast(b, b_in(b, 0), a->dtype), *t = build_cast(b, b_in(b, 1), a->dtype);
  Value *log_x = b_clamp_min(b, b_log(b, x), -100);
  Value *log_1mx = b_clamp_min(b, b_log(b, b_sub(b, b_f(b, 1.0), x)), -100);
  Value *l = b_sub(b, b_mul(b, b_sub(b, t, b_f(b, 1.0)), log_1mx), b_mul(b, t, log_x));
  Value *w = optional(b, a->weight, 2);
  if (w) l = b_mul(b, l, w);  // the in-place mul_: promoted, then the input's dtype
  out[0] = reduced(b, build_cast(b, l, b->in[0].dtype), a->reduction);
  return 1;
}

// PyTorch's composite formula, stable for large |x|: m = max(-x, 0),
//   (1 - t) * x + m + log(exp(-m) + exp(-x - m)), with pos_weight
//   (1 - t) * x + (1 + (pos_weight - 1) * t) * (log(exp(-m) + exp(-x - m)) + m),
// times weight; the result has the target's dtype (PyTorch's in-place chain).
int build_binary_cross_entropy_with_logits(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *x = build_cast(b, b_in(b, 0), a->dtype), *t = build_cast(b, b_in(b, 1), a->dtype);
  Value *m = b_clamp_min(b, b_neg(b, x), 0);
  Value *lse = b_log(b, b_add(b, b_exp(b, b_neg(b, m)), b_exp(b, b_sub(b, b_neg(b, x), m))));
  Value *l = b_mul(b, b_sub(b, b_f(b, 1.0), t), x);
  Value *w = optional(b, a->weight, 2), *pw = optional(b, a->pos_weight, 2 + a->weight);
  if (pw) {
    Value *pwc = build_cast(b, pw, dtype_is_half(pw->dtype) ? DT_F32 : pw->dtype);
    Value *lw = b_add(b, b_mul(b, b_sub(b, pwc, b_f(b, 1.0)), t), b_f(b, 1.0));
    l = b_add(b, l, b_mul(b, lw, b_add(b, lse, m)));
  } else {
    l = b_add(b, b_add(b, l, m), lse);
  }
  if (w) l = b_mul(b, l, w);
  out[0] = reduced(b, build_cast(b, l, b->in[1].dtype), a->reduction);
  return 1;
}

// target * log(target) - target * input (0 where target is 0: xlogy), or with log_target
// exp(target) * (target - input); 'batchmean' is the sum over input.size(0)
int build_kl_div(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *x = b_in(b, 0), *t = b_in(b, 1), *l;
  if (a->log_target) {
    l = b_mul(b, b_exp(b, t), b_sub(b, t, x));
  } else {
    Value *zero = b_bin(b, OP_EQ, t, b_f(b, 0.0));
    Value *xlogy = b_where(b, zero, b_f(b, 0.0), b_mul(b, t, b_log(b, t)));
    l = b_sub(b, xlogy, b_mul(b, t, x));
  }
  l = reduced(b, l, a->reduction == LOSS_BATCHMEAN ? LOSS_SUM : a->reduction);
  if (a->reduction == LOSS_BATCHMEAN && b->in[0].view.ndim != 0) l = b_div(b, l, b_i(b, b->in[0].view.shape[0]));
  out[0] = l;
  return 1;
}

// ============================================================================
// nll_loss, cross_entropy
// ============================================================================
// The weight of the classes, shaped to broadcast along dim 1 of an nd-dim input.
static Value *class_weight(Builder *b, Value *w, int nd) {
  if (w->view.ndim != 1) w = build_flatten(b, w);
  if (nd == 1) return w;
  w = unsq(b, w, 0);
  for (int i = 2; i < nd; i++) w = unsq(b, w, -1);
  return w;
}

// nll_loss of lp (the input, or log-probabilities): -weight[t] * lp[n, t, ...] for each
// target t but ignore_index (0 there), reduced; 'mean' divides by the sum of the weights
// of the targets not ignored, which *wsum is (in the compute dtype). Halves are computed
// in f32 and rounded once, as PyTorch's CUDA kernels do.
static Value *nll(Builder *b, Value *lp, Value *t, Value *wa, int64_t ignore, LossReduction red, Value **wsum) {
  int nd = lp->view.ndim, cd = nd == 1 ? 0 : 1;
  DType dt = lp->dtype, c = dtype_is_half(dt) ? DT_F32 : dt;
  Value *keep = b_bin(b, OP_NE, t, b_i(b, ignore));
  Value *safe = b_where(b, keep, t, b_i(b, 0));  // ignored targets read class 0
  Value *idx = unsq(b, safe, cd);
  Value *picked = build_cast(b, build_squeeze(b, gather_target(b, lp, cd, idx), cd), c);
  Value *wt;
  if (wa) {
    Value *w = class_weight(b, wa, nd);
    if (nd > 1) w = build_expand(b, w, lp->view.ndim, lp->view.shape);
    wt = build_cast(b, build_squeeze(b, gather_target(b, w, cd, idx), cd), c);
    picked = b_mul(b, b_neg(b, wt), picked);
    wt = b_where(b, keep, wt, b_f(b, 0.0));
  } else {
    picked = b_neg(b, picked);
    wt = build_cast(b, keep, c);
  }
  Value *l = b_where(b, keep, picked, b_f(b, 0.0));
  *wsum = build_reduce_all(b, OP_SUM, wt);
  if (red == LOSS_SUM) l = build_reduce_all(b, OP_SUM, l);
  else if (red == LOSS_MEAN) l = b_div(b, build_reduce_all(b, OP_SUM, l), *wsum);
  return build_cast(b, l, dt);
}

int build_nll_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *wsum;
  out[0] = nll(b, b_in(b, 0), b_in(b, 1), optional(b, a->weight, 2), a->ignore_index, a->reduction, &wsum);
  return 1;
}

// cross_entropy with class probabilities (a float target of the input's shape):
// -(log_softmax(x) * t' * weight) summed over the classes, t' = t * (1 - ls) + ls / C;
// 'mean' divides the sum by numel / C.
static Value *cross_entropy_probs(Builder *b, const LossArgs *a) {
  const View *xv = &b->in[0].view;
  int nd = xv->ndim, cd = nd == 1 ? 0 : 1;
  int64_t ncls = xv->shape[cd];
  Value *lp = build_softmax(b, OP_LOG_SOFTMAX, b_in(b, 0), cd, b->in[0].dtype), *t = b_in(b, 1);
  if (a->label_smoothing > 0)
    t = b_add(b, b_mul(b, t, b_f(b, 1 - a->label_smoothing)), b_f(b, a->label_smoothing / (double)ncls));
  Value *prod = b_mul(b, lp, t);
  Value *w = optional(b, a->weight, 2);
  if (w) prod = b_mul(b, prod, class_weight(b, w, nd));
  if (a->reduction == LOSS_NONE) return b_neg(b, build_reduce_dim(b, OP_SUM, prod, cd, false));
  Value *l = b_neg(b, build_reduce_all(b, OP_SUM, prod));
  if (a->reduction == LOSS_MEAN) l = b_div(b, l, b_i(b, ncls ? view_numel(*xv) / ncls : 0));
  return l;
}

// nll_loss of log_softmax(input) for class indices; with label_smoothing ls > 0,
//   (1 - ls) * nll + ls / C * smooth, smooth = -sum_c(weight[c] * log_softmax(x)[c])
// (0 for ignored targets), reduced as nll is (its 'mean' divides by the same weights).
int build_cross_entropy(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  if (a->probs) {
    out[0] = cross_entropy_probs(b, a);
    return 1;
  }
  const View *xv = &b->in[0].view;
  int nd = xv->ndim, cd = nd == 1 ? 0 : 1;
  Value *lp = build_softmax(b, OP_LOG_SOFTMAX, b_in(b, 0), cd, b->in[0].dtype), *t = b_in(b, 1), *wsum;
  Value *w = optional(b, a->weight, 2);
  Value *l = nll(b, lp, t, w, a->ignore_index, a->reduction, &wsum);
  double ls = a->label_smoothing;
  if (ls > 0) {
    int64_t ncls = xv->shape[cd];
    Value *s = w ? b_mul(b, lp, class_weight(b, w, nd)) : lp;
    s = b_neg(b, build_reduce_dim(b, OP_SUM, s, cd, false));
    s = b_where(b, b_bin(b, OP_EQ, t, b_i(b, a->ignore_index)), b_f(b, 0.0), s);
    if (a->reduction != LOSS_NONE) s = build_reduce_all(b, OP_SUM, s);
    if (a->reduction == LOSS_MEAN) s = build_cast(b, b_div(b, s, wsum), lp->dtype);
    l = b_add(b, b_mul(b, b_f(b, 1 - ls), l), b_mul(b, s, b_f(b, ls / (double)ncls)));
  }
  out[0] = l;
  return 1;
}

// ============================================================================
// margin_ranking_loss, hinge_embedding_loss, cosine_embedding_loss
// ============================================================================
// clamp_min(-target * (input1 - input2) + margin, 0)
int build_margin_ranking_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *z = b_mul(b, b_neg(b, b_in(b, 2)), b_sub(b, b_in(b, 0), b_in(b, 1)));
  out[0] = reduced(b, b_clamp_min(b, b_add(b, z, b_f(b, a->margin)), 0), a->reduction);
  return 1;
}

// where(target != 1, clamp_min(margin - input, 0), 0) + where(target != -1, input, 0)
int build_hinge_embedding_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *x = b_in(b, 0), *t = b_in(b, 1);
  Value *zeros = build_zeros(b, x->view.ndim, x->view.shape, x->dtype);
  Value *mc = b_clamp_min(b, b_sub(b, b_f(b, a->margin), x), 0);
  Value *om = b_where(b, b_bin(b, OP_NE, t, b_i(b, 1)), mc, zeros);
  Value *os = b_where(b, b_bin(b, OP_NE, t, b_i(b, -1)), x, zeros);
  out[0] = reduced(b, b_add(b, om, os), a->reduction);
  return 1;
}

// cos = sum(x1 * x2) / sqrt((sum(x1^2) + 1e-12) * (sum(x2^2) + 1e-12)) over the last dim;
// where(target == 1, 1 - cos, 0) + where(target == -1, clamp_min(cos - margin, 0), 0)
int build_cosine_embedding_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *x = b_in(b, 0), *y = b_in(b, 1), *t = b_in(b, 2);
  int td = b->in[2].view.ndim;
  Value *prod = build_reduce_dim(b, OP_SUM, b_mul(b, x, y), td, false);
  Value *m1 = b_add(b, build_reduce_dim(b, OP_SUM, b_mul(b, x, x), td, false), b_f(b, 1e-12));
  Value *m2 = b_add(b, build_reduce_dim(b, OP_SUM, b_mul(b, y, y), td, false), b_f(b, 1e-12));
  Value *cos = b_div(b, prod, b_un(b, OP_SQRT, b_mul(b, m1, m2)));
  Value *zeros = build_zeros(b, cos->view.ndim, cos->view.shape, cos->dtype);
  Value *pos = b_sub(b, b_i(b, 1), cos);
  Value *neg = b_clamp_min(b, b_sub(b, cos, b_f(b, a->margin)), 0);
  Value *op = b_where(b, b_bin(b, OP_EQ, t, b_i(b, 1)), pos, zeros);
  Value *on = b_where(b, b_bin(b, OP_EQ, t, b_i(b, -1)), neg, zeros);
  out[0] = reduced(b, b_add(b, op, on), a->reduction);
  return 1;
}

// ============================================================================
// multilabel_soft_margin_loss, multi_margin_loss, multilabel_margin_loss
// ============================================================================
// -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input)), times weight,
// summed over the last dim and divided by its size
int build_multilabel_soft_margin_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *x = b_in(b, 0), *t = b_in(b, 1);
  Value *ls = build_logsigmoid_value(b, x), *lsn = build_logsigmoid_value(b, b_neg(b, x));
  Value *l = b_neg(b, b_add(b, b_mul(b, t, ls), b_mul(b, b_sub(b, b_i(b, 1), t), lsn)));
  Value *w = optional(b, a->weight, 2);
  if (w) l = b_mul(b, l, w);
  int cd = b->in[0].view.ndim - 1;
  l = b_div(b, build_reduce_dim(b, OP_SUM, l, cd, false), b_i(b, b->in[0].view.shape[cd]));
  out[0] = reduced(b, l, a->reduction);
  return 1;
}

// x read as [nframe, classes] in the compute dtype
static Value *frames(Builder *b, const LossArgs *a, Value *x) {
  int64_t shape[2] = {a->nframe, a->classes};
  return build_cast(b, build_reshape(b, x, 2, shape), a->dtype);
}

// the per-sample losses [nframe], rounded to the input's dtype, shaped as the unreduced
// result, or reduced
static Value *per_sample(Builder *b, const LossArgs *a, Value *per) {
  per = build_cast(b, per, b->in[0].dtype);
  if (a->reduction == LOSS_NONE) return build_reshape(b, per, a->ndim, a->shape);
  return reduced(b, per, a->reduction);
}

// for each sample of class y, the sum over the classes j != y of max(0, margin - x[y] +
// x[j])^p (times weight[y]), divided by the classes
int build_multi_margin_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *xf = frames(b, a, b_in(b, 0)), *t = b_in(b, 1);
  int64_t col[2] = {a->nframe, 1};
  Value *ty = build_reshape(b, t, 2, col);
  Value *xy = build_gather(b, xf, 1, ty);
  Value *z = b_clamp_min(b, b_add(b, b_sub(b, b_f(b, a->margin), xy), xf), 0);
  if (a->p == 2) z = b_mul(b, z, z);
  Value *w = optional(b, a->weight, 2);
  if (w) {
    Value *wy = build_gather(b, build_cast(b, w, a->dtype), 0, build_reshape(b, t, 1, &a->nframe));
    z = b_mul(b, z, unsq(b, wy, 1));
  }
  Value *cls = build_arange(b, 0, a->classes, 1, DT_I64);
  z = b_where(b, b_bin(b, OP_EQ, cls, ty), b_f(b, 0.0), z);
  Value *per = b_div(b, build_reduce_dim(b, OP_SUM, z, 1, false), b_i(b, a->classes));
  out[0] = per_sample(b, a, per);
  return 1;
}

// the targets of a sample are its target row up to the first -1 (valid where the cumulative
// product of target != -1 is 1); the loss sums max(0, 1 - x[y] + x[i]) over those y and the
// classes i not among them, divided by the classes
int build_multilabel_margin_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *xf = frames(b, a, b_in(b, 0));
  int64_t shape[2] = {a->nframe, a->classes};
  Value *tf = build_reshape(b, b_in(b, 1), 2, shape);
  Value *ne = build_cast(b, b_bin(b, OP_NE, tf, b_i(b, -1)), DT_I64);
  Value *valid = b_bin(b, OP_NE, build_scan(b, OP_CUMPROD, ne, 1, DT_I64), b_i(b, 0));
  Value *ys = b_where(b, valid, tf, b_i(b, 0));  // invalid targets read class 0
  Value *xy = build_gather(b, xf, 1, ys);
  // is_target[n, i]: some valid target of sample n is class i
  Value *cls = build_arange(b, 0, a->classes, 1, DT_I64);
  Value *yv = b_where(b, valid, tf, b_i(b, -1));
  Value *hit = b_bin(b, OP_EQ, unsq(b, yv, 2), cls);  // [n, j, i]
  Value *is_target = build_reduce_dim(b, OP_ANY, hit, 1, false);
  Value *z = b_add(b, b_sub(b, b_i(b, 1), unsq(b, xy, 2)), unsq(b, xf, 1));  // [n, j, i]
  z = b_clamp_min(b, z, 0);
  Value *keep = b_bin(b, OP_LOGICAL_AND, unsq(b, valid, 2), unsq(b, b_un(b, OP_LOGICAL_NOT, is_target), 1));
  z = b_where(b, keep, z, b_f(b, 0.0));
  Value *per = build_reduce_dim(b, OP_SUM, build_reduce_dim(b, OP_SUM, z, 2, false), 1, false);
  per = b_div(b, per, b_i(b, a->classes));
  out[0] = per_sample(b, a, per);
  return 1;
}

// ============================================================================
// triplet_margin_loss, triplet_margin_with_distance_loss
// ============================================================================
static Value *distance(Builder *b, Value *x, Value *y, double norm, double eps) {
  Value *xy[2] = {x, y};
  return build_pairwise(b, x, y, norm, eps, false, build_result_type(xy, 2));
}

// clamp_min(d(a, p) - d(a, n) + margin, 0), d = pairwise_distance(., ., p, eps); with swap
// d(a, n) is min(d(a, n), d(p, n)); margin_first: margin + d(a, p) - d(a, n), the order of
// ATen's triplet_margin_loss
int build_triplet_margin_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *an = b_in(b, 0), *po = b_in(b, 1), *ne = b_in(b, 2);
  Value *dp = distance(b, an, po, a->p, a->eps), *dn = distance(b, an, ne, a->p, a->eps);
  if (a->swap) dn = b_bin(b, OP_MINIMUM, dn, distance(b, po, ne, a->p, a->eps));
  Value *z = a->margin_first ? b_sub(b, b_add(b, b_f(b, a->margin), dp), dn)
                             : b_add(b, b_sub(b, dp, dn), b_f(b, a->margin));
  out[0] = reduced(b, b_clamp_min(b, z, 0), a->reduction);
  return 1;
}

// ============================================================================
// poisson_nll_loss, gaussian_nll_loss
// ============================================================================
static const double TWO_PI = 6.283185307179586;  // 2 * pi, as c10::pi<double> * 2

// exp(input) - target * input, or input - target * log(input + eps); full adds
// target * log(target) - target + 0.5 * log(2 pi target) where target > 1 (in place: the
// loss keeps its dtype)
int build_poisson_nll_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *x = b_in(b, 0), *t = b_in(b, 1), *l;
  if (a->log_input) l = b_sub(b, b_exp(b, x), b_mul(b, t, x));
  else l = b_sub(b, x, b_mul(b, t, b_log(b, b_add(b, x, b_f(b, a->eps)))));
  if (a->full) {
    Value *st = b_sub(b, b_mul(b, t, b_log(b, t)), t);
    Value *lg = b_log(b, b_mul(b, b_f(b, TWO_PI), t));
    st = b_add(b, st, b_mul(b, b_f(b, 0.5), lg));
    Value *mf = b_where(b, b_bin(b, OP_LE, t, b_i(b, 1)), build_number(b, 0, st->dtype), st);  // masked_fill
    l = build_cast(b, b_add(b, l, mf), l->dtype);
  }
  out[0] = reduced(b, l, a->reduction);
  return 1;
}

// 0.5 * (log(v) + (input - target)^2 / v), v = var clamped to eps, plus 0.5 * log(2 pi)
// when full
int build_gaussian_nll_loss(Builder *b, const void *args, Value **out) {
  const LossArgs *a = loss(args);
  Value *x = b_in(b, 0), *t = b_in(b, 1), *v = b_in(b, 2);
  if (a->var_unsqueeze) v = unsq(b, v, -1);
  Value *vc = build_clamp(b, v, b_f(b, a->eps), NULL);
  Value *diff = b_sub(b, x, t);
  Value *l = b_add(b, b_log(b, vc), b_div(b, b_mul(b, diff, diff), vc));
  l = b_mul(b, b_f(b, 0.5), l);
  if (a->full) l = b_add(b, l, b_f(b, 0.5 * log(TWO_PI)));
  out[0] = reduced(b, l, a->reduction);
  return 1;
}
