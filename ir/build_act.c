// ir/build_act.c: the activations of torch.nn.functional that are no single node, built
// from the nodes PyTorch's CUDA kernels compute them with (ir/build.h): softplus,
// leaky_relu, elu (selu, celu), hardtanh (relu6), hardsigmoid, hardswish, mish, softsign,
// logsigmoid, tanhshrink, threshold, glu, softmin.
// Invariants: a half input is computed in f32 and rounded once at the end (build_up,
// build_down), as those kernels do, except hardtanh and threshold, which keep the input's
// dtype (their numbers converted to it); operand 0 is the input.
#include "ir/build.h"

static const ActArgs *act(const void *args) { return args; }

// x * beta > threshold ? x : log1p(exp(x * beta)) / beta
int build_softplus(Builder *b, const void *args, Value **out) {
  const ActArgs *a = act(args);
  Value *x = build_up(b, b_in(b, 0));
  Value *bx = a->beta == 1 ? x : b_mul(b, x, b_f(b, a->beta));
  Value *sp = b_un(b, OP_LOG1P, b_exp(b, bx));
  if (a->beta != 1) sp = b_div(b, sp, b_f(b, a->beta));
  Value *y = b_where(b, b_bin(b, OP_GT, bx, b_f(b, a->threshold)), x, sp);
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

// x > 0 ? x : x * negative_slope
int build_leaky_relu(Builder *b, const void *args, Value **out) {
  Value *x = build_up(b, b_in(b, 0));
  Value *y = b_where(b, b_bin(b, OP_GT, x, b_f(b, 0)), x, b_mul(b, x, b_f(b, act(args)->slope)));
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

// PyTorch's elu kernel, shared by elu, selu and celu:
//   x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale
int build_elu(Builder *b, const void *args, Value **out) {
  const ActArgs *a = act(args);
  Value *x = build_up(b, b_in(b, 0));
  Value *xi = a->input_scale == 1 ? x : b_mul(b, x, b_f(b, a->input_scale));
  Value *neg = b_mul(b, b_un(b, OP_EXPM1, xi), b_f(b, a->alpha * a->scale));
  Value *pos = a->scale == 1 ? x : b_mul(b, x, b_f(b, a->scale));
  Value *y = b_where(b, b_bin(b, OP_LE, x, b_f(b, 0)), neg, pos);
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

// clamp(x, lo, hi) in the input's dtype (an int input's bounds truncated)
int build_hardtanh(Builder *b, const void *args, Value **out) {
  const ActArgs *a = act(args);
  DType dt = b->in[0].dtype;
  out[0] = build_clamp(b, b_in(b, 0), build_number(b, a->lo, dt), build_number(b, a->hi, dt));
  return 1;
}

// hardsigmoid: min(max(x + 3, 0), 6) * (1 / 6); hardswish: x * min(max(x + 3, 0), 6) / 6
int build_hardsigmoid(Builder *b, const void *args, Value **out) {
  Value *x = build_up(b, b_in(b, 0));
  Value *h = build_clamp(b, b_add(b, x, b_f(b, 3)), b_f(b, 0), b_f(b, 6));
  Value *y = act(args)->swish ? b_div(b, b_mul(b, x, h), b_f(b, 6)) : b_mul(b, h, b_f(b, 1.0 / 6.0));
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

// x * tanh(log1p(exp(x)))
int build_mish(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = build_up(b, b_in(b, 0));
  Value *sp = b_un(b, OP_LOG1P, b_exp(b, x));
  out[0] = build_down(b, b_mul(b, x, b_un(b, OP_TANH, sp)), b->in[0].dtype);
  return 1;
}

// x / (abs(x) + 1), PyTorch's Python formula (ints give f32)
int build_softsign(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = build_up(b, b_in(b, 0));
  Value *y = b_div(b, x, b_add(b, b_abs(b, x), b_f(b, 1)));
  out[0] = build_down(b, y, b->in[0].dtype);
  return 1;
}

// min(x, 0) - log1p(exp(-abs(x))), PyTorch's CUDA kernel
Value *build_logsigmoid_of(Builder *b, Value *x) {
  Value *z = b_exp(b, b_neg(b, b_abs(b, x)));
  return b_sub(b, build_clamp(b, x, NULL, b_f(b, 0)), b_un(b, OP_LOG1P, z));
}

Value *build_logsigmoid_value(Builder *b, Value *x) {
  return build_down(b, build_logsigmoid_of(b, build_up(b, x)), x->dtype);
}

int build_logsigmoid(Builder *b, const void *args, Value **out) {
  (void)args;
  out[0] = build_logsigmoid_value(b, b_in(b, 0));
  return 1;
}

// x - tanh(x), PyTorch's Python formula (ints give f32)
int build_tanhshrink(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = build_up(b, b_in(b, 0));
  out[0] = build_down(b, b_sub(b, x, b_un(b, OP_TANH, x)), b->in[0].dtype);
  return 1;
}

// x <= threshold ? value : x, both numbers as the input's dtype takes them
int build_threshold(Builder *b, const void *args, Value **out) {
  const ActArgs *a = act(args);
  DType dt = b->in[0].dtype;
  Value *x = b_in(b, 0);
  Value *c = b_bin(b, OP_LE, x, build_number(b, a->threshold, dt));
  out[0] = b_where(b, c, build_number(b, a->value, dt), x);
  return 1;
}

// a * sigmoid(b), a and b the halves of dim
int build_glu(Builder *b, const void *args, Value **out) {
  const ActArgs *a = act(args);
  Value *x = b_in(b, 0);
  Value *lo = build_up(b, build_narrow(b, x, a->dim, 0, a->half));
  Value *hi = build_up(b, build_narrow(b, x, a->dim, a->half, a->half));
  out[0] = build_down(b, b_mul(b, lo, b_un(b, OP_SIGMOID, hi)), b->in[0].dtype);
  return 1;
}

// softmax(-x, dim) in dtype
int build_softmin(Builder *b, const void *args, Value **out) {
  const ActArgs *a = act(args);
  out[0] = build_softmax(b, OP_SOFTMAX, b_neg(b, b_in(b, 0)), a->dim, a->dtype);
  return 1;
}
