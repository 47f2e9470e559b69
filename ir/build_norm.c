// ir/build_norm.c: the normalizations of torch.nn.functional, built from reductions and
// elementwise nodes that fusion joins again (ir/build.h): layer_norm, rms_norm,
// group_norm, batch_norm and instance_norm, normalize, cosine_similarity,
// pairwise_distance, and the vector p-norms they share with torch.norm.
// Invariants: statistics are biased (divided by the count), computed as
// c = x - mean(x), c * rsqrt(var(x) + eps), var(x) = mean((x - mean(x))^2) (two passes
// over the row; both statistics read x, so fusion makes them one row kernel: x is read
// from memory once); halves in f32, rounded once at the end
// (build_up, build_down); per-channel parameters ([C]) broadcast over [N, C, *] as
// [C, 1, ...].
#include "ir/build.h"

#include <math.h>

static const NormArgs *norm(const void *args) { return args; }

// The optional operand k (NormArgs.has[k]), or NULL when not given.
static Value *opt(Builder *b, const NormArgs *a, int k) {
  if (!a->has[k]) return NULL;
  int i = 1;
  for (int j = 0; j < k; j++) i += a->has[j];
  return b_in(b, i);
}

static Value *mean_kept(Builder *b, Value *x, uint32_t mask) { return build_reduce(b, OP_MEAN, x, mask, true); }

// (x - mean) * rsqrt(var + eps) over the dims of mask, the statistics of x itself. The
// variance is a var node of x (correction 0: biased), not mean(c * c): a reduction of c
// would read the mean, a row node, and so take a second kernel reading x again.
static Value *standardize(Builder *b, Value *x, uint32_t mask, double eps) {
  Value *m = mean_kept(b, x, mask);
  Value *var = build_reduce(b, OP_VAR, x, mask, true);  // correction 0
  Value *c = b_sub(b, x, m);
  return b_mul(b, c, b_un(b, OP_RSQRT, b_add(b, var, b_f(b, eps))));
}

// y = (x - mean) / sqrt(var + eps) over the last dims (* weight) (+ bias)
int build_layer_norm(Builder *b, const void *args, Value **out) {
  const NormArgs *a = norm(args);
  Value *x = build_up(b, b_in(b, 0));
  Value *y = standardize(b, x, a->mask, a->eps);
  Value *w = opt(b, a, 0), *bias = opt(b, a, 1);
  if (w) y = b_mul(b, y, build_up(b, w));
  if (bias) y = b_add(b, y, build_up(b, bias));
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

// y = x * rsqrt(mean(x * x) + eps) over the last dims (* weight)
int build_rms_norm(Builder *b, const void *args, Value **out) {
  const NormArgs *a = norm(args);
  Value *x = build_up(b, b_in(b, 0));
  Value *ms = mean_kept(b, b_mul(b, x, x), a->mask);
  Value *y = b_mul(b, x, b_un(b, OP_RSQRT, b_add(b, ms, b_f(b, a->eps))));
  Value *w = opt(b, a, 0);
  if (w) y = b_mul(b, y, build_up(b, w));
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

// A per-channel parameter p of an nd-dim [N, C, *] input, as [C, 1, ...].
static Value *per_channel(Builder *b, Value *p, int nd, int64_t c) {
  int64_t shape[TD_MAX_DIMS] = {c};
  for (int i = 1; i < nd - 1; i++) shape[i] = 1;
  return build_reshape(b, p, nd > 1 ? nd - 1 : 1, shape);
}

// x [N, C, *] as [N, G, rest], standardized over rest, then * weight[C] + bias[C]
int build_group_norm(Builder *b, const void *args, Value **out) {
  const NormArgs *a = norm(args);
  const View *v = &b->in[0].view;
  int nd = v->ndim;
  int64_t n = v->shape[0], c = v->shape[1], spatial = 1;
  for (int i = 2; i < nd; i++) spatial *= v->shape[i];
  int64_t grouped[3] = {n, a->groups, c / a->groups * spatial};
  Value *xg = build_reshape(b, build_up(b, b_in(b, 0)), 3, grouped);
  Value *y = build_reshape(b, standardize(b, xg, 1u << 2, a->eps), nd, v->shape);
  Value *w = opt(b, a, 0), *bias = opt(b, a, 1);
  if (w) y = b_mul(b, y, per_channel(b, build_up(b, w), nd, c));
  if (bias) y = b_add(b, y, per_channel(b, build_up(b, bias), nd, c));
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

// batch_norm (evaluation: the running statistics) and instance_norm: with the running
// statistics, PyTorch's CPU kernel (batch_norm_cpu_collect_linear_and_constant_terms):
// per channel alpha = rsqrt(var + eps) * weight and beta = bias - mean * alpha, then
// y = x * alpha + beta. alpha and beta are [C, 1, ...] nodes: read by broadcast, their
// loads and rsqrt are invariant in the loop over a channel's elements (the compilers
// hoist them), so an element costs a multiply and an add, where (x - mean) * rsqrt(var +
// eps) * weight + bias took four and the rsqrt. instance_norm's own statistics are each
// sample's channels' over the spatial dims.
int build_batch_norm(Builder *b, const void *args, Value **out) {
  const NormArgs *a = norm(args);
  const View *v = &b->in[0].view;
  int nd = v->ndim;
  Value *y;
  if (a->stats) {
    y = standardize(b, build_up(b, b_in(b, 0)), a->mask, a->eps);
    Value *w = opt(b, a, 2), *bias = opt(b, a, 3);
    if (w) y = b_mul(b, y, per_channel(b, build_up(b, w), nd, v->shape[1]));
    if (bias) y = b_add(b, y, per_channel(b, build_up(b, bias), nd, v->shape[1]));
  } else {
    Value *q[4];
    for (int i = 0; i < 4; i++) {
      Value *p = opt(b, a, i);
      q[i] = p ? per_channel(b, build_up(b, p), nd, v->shape[1]) : NULL;
    }
    Value *x = build_up(b, b_in(b, 0));
    Value *alpha = b_un(b, OP_RSQRT, b_add(b, q[1], b_f(b, a->eps)));
    if (q[2]) alpha = b_mul(b, alpha, q[2]);
    Value *beta = b_sub(b, q[3] ? q[3] : b_f(b, 0), b_mul(b, q[0], alpha));
    y = b_add(b, b_mul(b, x, alpha), beta);
  }
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

Value *build_vector_norm(Builder *b, Value *x, double p, uint32_t mask, bool keepdim) {
  if (p == 2) return b_un(b, OP_SQRT, build_reduce(b, OP_SUM, b_mul(b, x, x), mask, keepdim));
  if (p == INFINITY || p == -INFINITY) return build_reduce(b, p > 0 ? OP_AMAX : OP_AMIN, b_abs(b, x), mask, keepdim);
  if (p == 0) {
    Value *nz = build_cast(b, b_bin(b, OP_NE, x, b_f(b, 0)), x->dtype);
    return build_reduce(b, OP_SUM, nz, mask, keepdim);
  }
  Value *ax = b_abs(b, x);
  if (p == 1) return build_reduce(b, OP_SUM, ax, mask, keepdim);
  Value *s = build_reduce(b, OP_SUM, b_pow(b, ax, b_f(b, p)), mask, keepdim);
  return b_pow(b, s, b_f(b, 1 / p));
}

// x / max(norm_p(x, dim), eps)
int build_normalize(Builder *b, const void *args, Value **out) {
  const NormArgs *a = norm(args);
  Value *x = build_up(b, b_in(b, 0));
  Value *n = build_vector_norm(b, x, a->p, x->view.ndim ? 1u << a->dim : 0, true);
  Value *y = b_div(b, x, build_clamp(b, n, b_f(b, a->eps), NULL));
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

// PyTorch 1.13's formula: both expanded to the broadcast shape in their common (float)
// dtype, then sum(x1 / max(norm(x1), eps) * (x2 / max(norm(x2), eps)), dim)
int build_cosine_similarity(Builder *b, const void *args, Value **out) {
  const NormArgs *a = norm(args);
  uint32_t mask = a->ndim ? 1u << a->dim : 0;
  Value *q[2];
  for (int i = 0; i < 2; i++) {
    Value *xe = build_expand(b, build_cast(b, b_in(b, i), dtype_is_half(a->dtype) ? DT_F32 : a->dtype), a->ndim,
                             a->shape);
    Value *n = build_clamp(b, build_vector_norm(b, xe, 2, mask, true), b_f(b, a->eps), NULL);
    q[i] = b_div(b, xe, n);
  }
  Value *y = build_reduce(b, OP_SUM, b_mul(b, q[0], q[1]), mask, false);
  out[0] = build_down(b, y, a->dtype);
  return 1;
}

// norm_p(x1 - x2 + eps) over the last dim of the broadcast shape
Value *build_pairwise(Builder *b, Value *x, Value *y, double p, double eps, bool keepdim, DType dt) {
  if (dtype_is_half(dt)) x = build_cast(b, x, DT_F32), y = build_cast(b, y, DT_F32);
  Value *diff = b_add(b, b_sub(b, x, y), b_f(b, eps));
  int nd = diff->view.ndim;
  return build_down(b, build_vector_norm(b, diff, p, nd ? 1u << (nd - 1) : 0, keepdim), dt);
}

int build_pairwise_distance(Builder *b, const void *args, Value **out) {
  const NormArgs *a = norm(args);
  out[0] = build_pairwise(b, b_in(b, 0), b_in(b, 1), a->p, a->eps, a->keepdim, a->dtype);
  return 1;
}
