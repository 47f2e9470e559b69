// ir/build_math.c: the elementwise ops PyTorch composes of others, built of those
// (ir/build.h): add and sub with alpha, isnan and kin, nan_to_num, isclose, lerp,
// logaddexp, logical_xor, deg2rad, xlogy, heaviside, logit, sinc, fmax, float_power,
// signbit, hardshrink, softshrink, prelu, addcmul, addcdiv, ldexp, isreal, angle, diff,
// masked_fill, tril, triu.
// Invariants: each op is the composition PyTorch's kernel or Python code computes, in its
// dtypes (the opmath dtype, f32 for halves, where its kernel computes so); a comparison's
// mask never is stored (fusion computes it inside the kernel that reads it).
#include "ir/build.h"

#include <math.h>

static const MathArgs *ma(const void *args) { return args; }
static const double PI = 3.14159265358979323846;

static Value *as_float(Builder *b, Value *x) { return dtype_is_float(x->dtype) ? x : build_cast(b, x, DT_F32); }

// input + alpha * other (input - alpha * other): both operands as the result dtype, then
// the opmath dtype, where alpha * other and the sum are computed, rounded once at the end;
// integer alpha in the result dtype, bool alpha a logical and
int build_add(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  Value *x = b_in(b, 0), *y = b_in(b, 1), *k;
  Value *xc = x->is_scalar ? x : build_cast(b, build_cast(b, x, a->dtype), a->compute);
  Value *yc = y->is_scalar ? y : build_cast(b, build_cast(b, y, a->dtype), a->compute);
  if (!a->known) k = build_cast(b, b_in(b, 2), a->compute);
  else if (a->dtype == DT_BOOL) k = build_bool(b, a->alpha != 0);
  else k = dtype_is_float(a->dtype) ? b_f(b, a->alpha) : b_i(b, a->ialpha);
  Value *s = b_bin(b, a->op, xc, b_mul(b, yc, k));
  out[0] = build_cast(b, s, a->dtype);
  return 1;
}

// isnan: x != x; isinf: |x| == inf; isfinite: |x| < inf; isposinf, isneginf: x == ±inf; of
// an int or bool tensor false (x != x) or, for isfinite, true (x == x)
int build_float_test(Builder *b, const void *args, Value **out) {
  FloatTest t = ma(args)->test;
  Value *x = b_in(b, 0);
  bool finite = t == TEST_FINITE;
  if (!dtype_is_float(x->dtype) || t == TEST_NAN) out[0] = b_bin(b, finite ? OP_EQ : OP_NE, x, x);
  else if (t == TEST_POSINF || t == TEST_NEGINF) out[0] = b_bin(b, OP_EQ, x, b_f(b, t == TEST_POSINF ? INFINITY : -INFINITY));
  else out[0] = b_bin(b, finite ? OP_LT : OP_EQ, b_abs(b, x), b_f(b, INFINITY));
  return 1;
}

// the dtype's largest (lowest) finite value for posinf (neginf) unless given; ints copied
int build_nan_to_num(Builder *b, const void *args, Value **out) {
  const double *v = ma(args)->v;
  Value *x = b_in(b, 0);
  if (!dtype_is_float(x->dtype)) {
    out[0] = build_clone(b, x);
    return 1;
  }
  Value *y = b_where(b, b_bin(b, OP_EQ, x, b_f(b, -INFINITY)), b_f(b, v[2]), x);
  y = b_where(b, b_bin(b, OP_EQ, x, b_f(b, INFINITY)), b_f(b, v[1]), y);
  out[0] = b_where(b, b_bin(b, OP_NE, x, x), b_f(b, v[0]), y);
  return 1;
}

// PyTorch's composition: a == b (or both nan), or |a - b| finite and <= atol + |rtol * b|,
// computed in a's dtype (ints and bool in f32)
int build_isclose(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  double rtol = a->v[0], atol = a->v[1];
  Value *x = b_in(b, 0), *y = b_in(b, 1);
  bool fl = dtype_is_float(x->dtype);
  Value *close = b_bin(b, OP_EQ, x, y);
  if (a->flag && fl) {
    Value *nans = b_bin(b, OP_LOGICAL_AND, b_bin(b, OP_NE, x, x), b_bin(b, OP_NE, y, y));
    close = b_bin(b, OP_LOGICAL_OR, close, nans);
  }
  if (rtol == 0 && atol == 0) {
    out[0] = close;
    return 1;
  }
  Value *cx = x->dtype == DT_BOOL ? build_cast(b, x, DT_F32) : x, *cy = fl ? y : build_cast(b, y, DT_F32);
  Value *allowed = b_add(b, b_f(b, atol), b_abs(b, b_mul(b, b_f(b, rtol), cy)));
  Value *actual = b_abs(b, b_sub(b, cx, cy));
  Value *within = b_bin(b, OP_LOGICAL_AND, b_bin(b, OP_LT, actual, b_f(b, INFINITY)), b_bin(b, OP_LE, actual, allowed));
  out[0] = b_bin(b, OP_LOGICAL_OR, close, within);
  return 1;
}

// PyTorch's formula in the opmath dtype (halves in f32, rounded once):
// weight < 0.5 ? input + weight * (end - input) : end - (end - input) * (1 - weight)
int build_lerp(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  DType cd = a->compute;
  Value *x = build_cast(b, b_in(b, 0), cd), *y = build_cast(b, b_in(b, 1), cd);
  Value *diff = b_sub(b, y, x), *r;
  if (a->flag) {  // a number: the branch known now
    double wv = a->v[0], rest = a->v[1];
    r = wv < 0.5 ? b_add(b, x, b_mul(b, b_f(b, wv), diff)) : b_sub(b, y, b_mul(b, diff, b_f(b, rest)));
  } else {
    Value *w = build_cast(b, b_in(b, 2), cd);
    Value *small = b_add(b, x, b_mul(b, w, diff));
    Value *rest = b_sub(b, b_i(b, 1), w);
    Value *large = b_sub(b, y, b_mul(b, diff, rest));
    r = b_where(b, b_bin(b, OP_LT, w, b_f(b, 0.5)), small, large);
  }
  out[0] = build_cast(b, r, a->dtype);
  return 1;
}

// in the opmath dtype: a where a and b are the same infinity, else max(a, b) +
// log1p(exp(-|a - b|)) (exp2, and times 1 / ln 2, for logaddexp2)
int build_logaddexp(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  bool two = a->flag;
  Value *x = build_cast(b, b_in(b, 0), a->compute), *y = build_cast(b, b_in(b, 1), a->compute);
  Value *m = b_bin(b, OP_MAXIMUM, x, y);
  Value *nd = b_neg(b, b_abs(b, b_sub(b, x, y)));
  Value *l = b_un(b, OP_LOG1P, b_un(b, two ? OP_EXP2 : OP_EXP, nd));
  if (two) l = b_mul(b, l, b_f(b, 1.0 / 0.69314718055994530942));
  Value *same_inf = b_bin(b, OP_LOGICAL_AND, b_bin(b, OP_EQ, b_abs(b, x), b_f(b, INFINITY)), b_bin(b, OP_EQ, x, y));
  out[0] = build_cast(b, b_where(b, same_inf, x, b_add(b, m, l)), a->dtype);
  return 1;
}

// (input != 0) != (other != 0)
int build_logical_xor(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = build_cast(b, b_in(b, 0), DT_BOOL), *y = b_in(b, 1);
  y = y->is_scalar ? build_bool(b, y->sval != 0) : build_cast(b, y, DT_BOOL);
  out[0] = b_bin(b, OP_NE, x, y);
  return 1;
}

// deg2rad, rad2deg: a product with pi / 180 or its inverse (ints give f32)
int build_scale(Builder *b, const void *args, Value **out) {
  out[0] = b_mul(b, as_float(b, b_in(b, 0)), b_f(b, ma(args)->k));
  return 1;
}

// nan where other is nan, 0 where self is 0, else self * log(other)
int build_xlogy(Builder *b, const void *args, Value **out) {
  Value *x = b_in(b, 0), *y = b_in(b, 1);
  Value *lg = b_log(b, y->is_scalar ? y : as_float(b, y));
  Value *r = b_where(b, b_bin(b, OP_EQ, x, b_i(b, 0)), b_f(b, 0), b_mul(b, x, lg));
  if (!y->is_scalar && dtype_is_float(y->dtype)) r = b_where(b, b_bin(b, OP_NE, y, y), b_f(b, NAN), r);
  (void)args;
  out[0] = r;
  return 1;
}

// values where input == 0, else input > 0
int build_heaviside(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = b_in(b, 0);
  Value *step = build_cast(b, b_bin(b, OP_GT, x, b_i(b, 0)), x->dtype);
  out[0] = b_where(b, b_bin(b, OP_EQ, x, b_i(b, 0)), b_in(b, 1), step);
  return 1;
}

// log(z / (1 - z)), z clamped to [eps, 1 - eps] when eps is given
int build_logit(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  Value *z = as_float(b, b_in(b, 0));
  if (a->flag) z = build_clamp(b, z, b_f(b, a->k), b_f(b, 1 - a->k));
  out[0] = b_log(b, b_div(b, z, b_sub(b, b_f(b, 1), z)));
  return 1;
}

// sin(pi x) / (pi x), 1 at 0
int build_sinc(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = as_float(b, b_in(b, 0));
  Value *px = b_mul(b, x, b_f(b, PI));
  Value *s = b_div(b, b_un(b, OP_SIN, px), px);
  out[0] = b_where(b, b_bin(b, OP_EQ, x, b_i(b, 0)), b_f(b, 1), s);
  return 1;
}

// maximum / minimum where a NaN loses to a number
int build_fmax(Builder *b, const void *args, Value **out) {
  Value *x = b_in(b, 0), *y = b_in(b, 1);
  Value *m = b_bin(b, ma(args)->op, x, y);
  if (dtype_is_float(m->dtype)) m = b_where(b, b_bin(b, OP_NE, x, x), y, b_where(b, b_bin(b, OP_NE, y, y), x, m));
  out[0] = m;
  return 1;
}

// pow computed in f64
int build_float_power(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *y = b_in(b, 1);
  if (!y->is_scalar) y = build_cast(b, y, DT_F64);
  out[0] = b_pow(b, build_cast(b, b_in(b, 0), DT_F64), y);
  return 1;
}

// copysign(1, x) < 0 (so -0.0 and -nan count); ints x < 0; bool false
int build_signbit(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = b_in(b, 0);
  if (dtype_is_float(x->dtype)) {
    NodeAttr none = {0};
    Value *ones = build_node(b, OP_ONES, x->dtype, x->view.ndim, x->view.shape, NULL, 0, none);
    x = b_bin(b, OP_COPYSIGN, ones, x);
  }
  out[0] = b_bin(b, OP_LT, x, b_i(b, 0));
  return 1;
}

// hardshrink: x where |x| > lambd, else 0; softshrink moves x toward 0 by lambd
int build_shrink(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  double l = a->k;
  Value *x = b_in(b, 0), *zero = b_f(b, 0);
  if (a->flag) {
    out[0] = b_where(b, b_bin(b, OP_GT, b_abs(b, x), b_f(b, l)), x, zero);
    return 1;
  }
  Value *lo = b_where(b, b_bin(b, OP_LT, x, b_f(b, -l)), b_add(b, x, b_f(b, l)), zero);
  out[0] = b_where(b, b_bin(b, OP_GT, x, b_f(b, l)), b_sub(b, x, b_f(b, l)), lo);
  return 1;
}

// x where x >= 0, else weight * x, weight per channel (dim 1)
int build_prelu(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  Value *x = b_in(b, 0), *w = b_in(b, 1);
  if (a->ndim) w = build_reshape(b, w, a->ndim, a->shape);
  out[0] = b_where(b, b_bin(b, OP_GE, x, b_i(b, 0)), x, b_mul(b, w, x));
  return 1;
}

// input + value * tensor1 (* or /) tensor2; operands input, tensor1, tensor2 (, value)
int build_addcmul(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  Value *p = b_bin(b, a->op, b_in(b, 1), b_in(b, 2));
  if (a->flag) p = b_mul(b, b_in(b, 3), p);
  out[0] = b_add(b, b_in(b, 0), p);
  return 1;
}

// input * 2 ** other, in floats
int build_ldexp(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *p = b_pow(b, b_f(b, 2), as_float(b, b_in(b, 1)));
  out[0] = b_mul(b, as_float(b, b_in(b, 0)), p);
  return 1;
}

// every element of a real tensor, NaN included
int build_isreal(Builder *b, const void *args, Value **out) {
  (void)args;
  NodeAttr none = {0};
  out[0] = build_node(b, OP_ONES, DT_BOOL, b->in[0].view.ndim, b->in[0].view.shape, NULL, 0, none);
  return 1;
}

// pi where x < 0, else 0 (nan kept)
int build_angle(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = as_float(b, b_in(b, 0));
  Value *a = b_where(b, b_bin(b, OP_LT, x, b_i(b, 0)), b_f(b, PI), b_f(b, 0));
  out[0] = b_where(b, b_bin(b, OP_NE, x, x), x, a);
  return 1;
}

// x[1:] - x[:-1] along dim, n times (bool: !=)
int build_diff(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  Value *x = b_in(b, 0), *y = x;
  for (int64_t i = 0; i < a->n && y->view.shape[a->dim] > 0; i++) {
    int64_t len = y->view.shape[a->dim] - 1;
    Value *hi = build_narrow(b, y, a->dim, 1, len), *lo = build_narrow(b, y, a->dim, 0, len);
    y = b_bin(b, y->dtype == DT_BOOL ? OP_NE : OP_SUB, hi, lo);
  }
  out[0] = y == x ? build_clone(b, x) : y;
  return 1;
}

// where(mask, value, input) in input's dtype; operands input, mask, value (a number, as
// the input's dtype takes it, or a 0-d tensor)
int build_masked_fill(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = b_in(b, 0), *v = b_in(b, 2);
  Value *fill;
  if (!v->is_scalar) fill = build_cast(b, v, x->dtype);
  else if (v->dtype == DT_F64 || dtype_is_float(x->dtype) || x->dtype == DT_BOOL)
    fill = build_number(b, v->dtype == DT_F64 ? v->sval : (double)v->ival, x->dtype);
  else fill = b_i(b, v->ival);  // an int into an int dtype: exactly
  out[0] = b_where(b, b_in(b, 1), fill, x);
  return 1;
}

// input where column - row <= diagonal (>= for triu) in the last two dims, else zero
int build_tril(Builder *b, const void *args, Value **out) {
  const MathArgs *a = ma(args);
  Value *x = b_in(b, 0);
  Value *keep = build_triangle(b, x->view.shape[a->dim], x->view.shape[a->dim + 1], a->n, a->lower);
  out[0] = b_where(b, keep, x, build_number(b, 0, x->dtype));
  return 1;
}
