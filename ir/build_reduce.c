// ir/build_reduce.c: the reductions PyTorch composes of others or that give several
// results, built of reduction nodes (ir/build.h): var_mean, std_mean, max and min with a
// dim (values, indices), aminmax, count_nonzero, nansum, nanmean, torch.norm, dist.
// Invariant: each reduction node has the attributes the same reduction called by its
// PyTorch name has (its dims, the one dim written, keepdim, correction, dtype), so a pair
// over the same rows joins one kernel (ir/fuse.c).
#include "ir/build.h"

#include <math.h>

static const ReduceArgs *ra(const void *args) { return args; }

static Value *reduce(Builder *b, Op op, Value *x, const ReduceArgs *a, DType dt) {
  return build_reduce_mask(b, op, x, a->mask, a->dim, a->keepdim, dt);
}

// (var or std, mean) over the same dims
int build_var_mean(Builder *b, const void *args, Value **out) {
  const ReduceArgs *a = ra(args);
  Value *x = b_in(b, 0);
  out[0] = reduce(b, a->op, x, a, x->dtype);
  if (out[0]->node) out[0]->node->attr.correction = a->correction;
  out[1] = reduce(b, OP_MEAN, x, a, x->dtype);
  return 2;
}

// max/min(x, dim, keepdim): (amax/amin, argmax/argmin); argmax refuses bool, whose
// index is that of its ints
int build_max_dim(Builder *b, const void *args, Value **out) {
  const ReduceArgs *a = ra(args);
  Value *x = b_in(b, 0);
  out[0] = reduce(b, a->op, x, a, DT_COUNT);
  Value *xi = x->dtype == DT_BOOL ? build_cast(b, x, DT_I32) : x;
  out[1] = reduce(b, a->op == OP_AMAX ? OP_ARGMAX : OP_ARGMIN, xi, a, DT_COUNT);
  return 2;
}

int build_aminmax(Builder *b, const void *args, Value **out) {
  const ReduceArgs *a = ra(args);
  Value *x = b_in(b, 0);
  out[0] = reduce(b, OP_AMIN, x, a, DT_COUNT);
  out[1] = reduce(b, OP_AMAX, x, a, DT_COUNT);
  return 2;
}

// sum(input != 0) in i64
int build_count_nonzero(Builder *b, const void *args, Value **out) {
  out[0] = reduce(b, OP_SUM, b_bin(b, OP_NE, b_in(b, 0), b_i(b, 0)), ra(args), DT_COUNT);
  return 1;
}

// the sum with NaN as 0; nanmean: that sum over the count of the others
int build_nansum(Builder *b, const void *args, Value **out) {
  const ReduceArgs *a = ra(args);
  Value *x = b_in(b, 0);
  Value *ok = dtype_is_float(x->dtype) ? b_bin(b, OP_EQ, x, x) : NULL;
  Value *v = ok ? b_where(b, ok, x, b_f(b, 0)) : x;
  Value *s = reduce(b, OP_SUM, v, a, a->dtype);
  out[0] = a->mean ? b_div(b, s, reduce(b, OP_SUM, ok, a, DT_COUNT)) : s;
  return 1;
}

// The vector p-norm of x over the dims of a (2: sqrt(sum(x * x)), 1: sum(abs(x)), inf /
// -inf: amax / amin(abs(x)), 0: the count of nonzeros, else sum(abs(x) ** p) ** (1 / p)),
// halves rounded back to their dtype
static Value *vector_norm(Builder *b, Value *x, const ReduceArgs *a) {
  double p = a->p;
  Value *r;
  if (isinf(p)) {
    r = reduce(b, p > 0 ? OP_AMAX : OP_AMIN, b_abs(b, x), a, DT_COUNT);
  } else if (p == 0) {
    Value *nz = b_bin(b, OP_NE, x, b_i(b, 0));
    r = reduce(b, OP_SUM, build_cast(b, nz, x->dtype == DT_F64 ? DT_F64 : DT_F32), a, DT_COUNT);
  } else if (p == 1) {
    r = reduce(b, OP_SUM, b_abs(b, x), a, DT_COUNT);
  } else if (p == 2) {
    r = b_un(b, OP_SQRT, reduce(b, OP_SUM, b_mul(b, x, x), a, DT_COUNT));
  } else {
    Value *s = reduce(b, OP_SUM, b_pow(b, b_abs(b, x), b_f(b, p)), a, DT_COUNT);
    r = b_pow(b, s, b_f(b, 1.0 / p));
  }
  if (dtype_is_half(x->dtype) && r->dtype != x->dtype) r = build_cast(b, r, x->dtype);
  return r;
}

// norm(input, p, dim, keepdim, dtype): the input cast to dtype first
int build_norm(Builder *b, const void *args, Value **out) {
  const ReduceArgs *a = ra(args);
  Value *x = b_in(b, 0);
  if (a->dtype != DT_COUNT) x = build_cast(b, x, a->dtype);
  out[0] = vector_norm(b, x, a);
  return 1;
}

// norm(input - other, p)
int build_dist(Builder *b, const void *args, Value **out) {
  out[0] = vector_norm(b, b_sub(b, b_in(b, 0), b_in(b, 1)), ra(args));
  return 1;
}
