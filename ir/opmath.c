// ir/opmath.c: the formulas of the composite elementwise ops, and the scalar value of
// every unary and binary op of the loop IR (ir/opmath.h). The values follow ir/loop.h's
// table of meanings exactly: they are what constant folding computes and what the test
// interpreter checks the backends' loops against.
#include "ir/opmath.h"

#include <math.h>

// ---- formulas ----
static LExpr *fconst(Ctx *cx, DType dt, double v) { return lx_const_f(cx, dt, dt == DT_F32 ? (double)(float)v : v); }
static LExpr *un(Ctx *cx, Op op, LExpr *a) { return lx_unary(cx, op, a->dt, a); }
static LExpr *bin(Ctx *cx, Op op, LExpr *a, LExpr *b) { return lx_binary(cx, op, a->dt, a, b); }

bool op_is_composite(Op op, DType dt) { return (dt == DT_F32 || dt == DT_F64) && (op_flags(op) & OF_COMPOSITE); }

LExpr *op_formula(Ctx *cx, Op op, DType dt, const LExpr *operand) {
  if (!op_is_composite(op, dt))
    return NULL;
  LExpr *a = (LExpr *)operand;  // only read: the formula's nodes point at it
  TD_ASSERT(a->dt == dt && a->lanes == 1);
  LExpr *one = fconst(cx, dt, 1);
  switch (op) {
  case OP_SIGMOID: return bin(cx, OP_DIV, one, bin(cx, OP_ADD, one, un(cx, OP_EXP, un(cx, OP_NEG, a))));
  case OP_SILU: return bin(cx, OP_DIV, a, bin(cx, OP_ADD, one, un(cx, OP_EXP, un(cx, OP_NEG, a))));
  case OP_GELU: {  // a * 0.5 * (1 + erf(a * (1 / sqrt(2)))), PyTorch's exact GELU
    LExpr *half = bin(cx, OP_MUL, a, fconst(cx, dt, 0.5));
    LExpr *er = un(cx, OP_ERF, bin(cx, OP_MUL, a, fconst(cx, dt, 0.70710678118654752440)));
    return bin(cx, OP_MUL, half, bin(cx, OP_ADD, one, er));
  }
  case OP_GELU_TANH: {  // 0.5 * a * (1 + tanh(sqrt(2 / pi) * (a + 0.044715 * a^3))), PyTorch's order
    LExpr *cube = bin(cx, OP_MUL, bin(cx, OP_MUL, a, a), a);
    LExpr *inner = bin(cx, OP_ADD, a, bin(cx, OP_MUL, fconst(cx, dt, 0.044715), cube));
    LExpr *t = un(cx, OP_TANH, bin(cx, OP_MUL, fconst(cx, dt, 0.79788456080286535588), inner));
    return bin(cx, OP_MUL, bin(cx, OP_MUL, fconst(cx, dt, 0.5), a), bin(cx, OP_ADD, one, t));
  }
  case OP_RSQRT: return bin(cx, OP_DIV, one, un(cx, OP_SQRT, a));
  case OP_RECIPROCAL: return bin(cx, OP_DIV, one, a);
  case OP_SQUARE: return bin(cx, OP_MUL, a, a);
  case OP_FRAC: return bin(cx, OP_SUB, a, un(cx, OP_TRUNC, a));  // PyTorch's a - trunc(a)
  default: td_unreachable();
  }
}

static bool uses(const LExpr *e, Op prim) {
  return e && (((e->kind == LX_UNARY || e->kind == LX_BINARY) && e->op == prim) || uses(e->a, prim) ||
               uses(e->b, prim));
}

bool op_formula_uses(Op op, DType dt, Op prim) {
  if (!op_is_composite(op, dt))
    return false;
  Ctx cx;
  ctx_init(&cx);
  bool r = uses(op_formula(&cx, op, dt, lx_local(&cx, dt, 0)), prim);
  ctx_free(&cx);
  return r;
}

// ---- scalar values ----
OpValue opmath_fit(DType dt, OpValue v) {
  switch (dt) {
  case DT_BOOL: v.i = v.i != 0; break;
  case DT_I32: v.i = (int32_t)(uint32_t)(uint64_t)v.i; break;
  case DT_I64: break;
  case DT_F32: v.f = (float)v.f; break;
  case DT_F64: break;
  default: td_unreachable();  // the loop IR computes nothing in f16/bf16
  }
  return v;
}

OpValue op_identity(Op op, DType dt) {
  OpIdentity k = op_identity_kind(op);
  TD_ASSERT(k != ID_NONE);
  if (k == ID_ZERO || k == ID_ONE) return (OpValue){k == ID_ONE, k == ID_ONE};
  bool lo = k == ID_LOWEST;
  if (dtype_is_float(dt)) return (OpValue){lo ? -INFINITY : INFINITY, 0};
  int64_t mn, mx;
  switch (dt) {
  case DT_BOOL: mn = 0, mx = 1; break;
  case DT_U8: mn = 0, mx = 255; break;
  case DT_I8: mn = INT8_MIN, mx = INT8_MAX; break;
  case DT_I16: mn = INT16_MIN, mx = INT16_MAX; break;
  case DT_I32: mn = INT32_MIN, mx = INT32_MAX; break;
  default: mn = INT64_MIN, mx = INT64_MAX; break;
  }
  int64_t v = lo ? mn : mx;
  return (OpValue){(double)v, v};
}

static bool is_fl(DType dt) { return dt == DT_F32 || dt == DT_F64; }
static int64_t wrap_neg(int64_t v) { return (int64_t)(0 - (uint64_t)v); }

// The constant value of a tree of constants, unary and binary ops (a formula over a
// constant operand).
static OpValue eval_const(const LExpr *e) {
  switch (e->kind) {
  case LX_CONST: return (OpValue){e->f, e->i};
  case LX_UNARY: return opmath_unary(e->op, e->dt, eval_const(e->a));
  case LX_BINARY: {
    bool raised = false;
    return opmath_binary(e->op, e->a->dt, eval_const(e->a), eval_const(e->b), &raised);
  }
  default: td_unreachable();  // formulas hold nothing else
  }
}

static double sign_of(double a) { return isnan(a) ? 0 : (a > 0) - (a < 0); }

OpValue opmath_unary(Op op, DType dt, OpValue a) {
  OpValue x = {0, 0};
  if (op_is_composite(op, dt)) {  // the formula over a constant, in a context of its own
    Ctx cx;
    ctx_init(&cx);
    x = eval_const(op_formula(&cx, op, dt, lx_const_f(&cx, dt, a.f)));
    ctx_free(&cx);
    return x;
  }
  if (!is_fl(dt)) {
    int64_t v = a.i;
    switch (op) {
    case OP_NEG: x.i = wrap_neg(v); break;
    case OP_ABS: x.i = v < 0 ? wrap_neg(v) : v; break;
    case OP_SIGN: x.i = (v > 0) - (v < 0); break;
    case OP_SQUARE: x.i = (int64_t)((uint64_t)v * (uint64_t)v); break;
    case OP_RELU: x.i = v > 0 ? v : 0; break;
    case OP_BITWISE_NOT: x.i = dt == DT_BOOL ? !v : ~v; break;
    case OP_LOGICAL_NOT: x.i = !v; break;
    default: td_internal_error(__FILE__, __LINE__, "'%s' on %s", op_name(op), dtype_name(dt));
    }
    return opmath_fit(dt, x);
  }
  double f = a.f;
  switch (op) {
  case OP_NEG: x.f = -f; break;
  case OP_ABS: x.f = fabs(f); break;
  case OP_SIGN: x.f = sign_of(f); break;
  case OP_RELU: x.f = f < 0 ? 0 : f; break;  // nan and -0 stay (PyTorch)
  case OP_EXP: x.f = exp(f); break;
  case OP_LOG: x.f = log(f); break;
  case OP_LOG2: x.f = log2(f); break;
  case OP_EXP2: x.f = exp2(f); break;
  case OP_SQRT: x.f = sqrt(f); break;
  case OP_SIN: x.f = sin(f); break;
  case OP_COS: x.f = cos(f); break;
  case OP_TAN: x.f = tan(f); break;
  case OP_TANH: x.f = tanh(f); break;
  case OP_ERF: x.f = erf(f); break;
  case OP_FLOOR: x.f = floor(f); break;
  case OP_CEIL: x.f = ceil(f); break;
  case OP_ROUND: x.f = nearbyint(f); break;
  case OP_EXPM1: x.f = expm1(f); break;
  case OP_ERFC: x.f = erfc(f); break;
  case OP_LGAMMA: x.f = lgamma(f); break;
  case OP_LOG1P: x.f = log1p(f); break;
  case OP_LOG10: x.f = log10(f); break;
  case OP_SINH: x.f = sinh(f); break;
  case OP_COSH: x.f = cosh(f); break;
  case OP_ASIN: x.f = asin(f); break;
  case OP_ACOS: x.f = acos(f); break;
  case OP_ATAN: x.f = atan(f); break;
  case OP_ASINH: x.f = asinh(f); break;
  case OP_ACOSH: x.f = acosh(f); break;
  case OP_ATANH: x.f = atanh(f); break;
  case OP_TRUNC: x.f = trunc(f); break;
  default: td_internal_error(__FILE__, __LINE__, "'%s' on %s", op_name(op), dtype_name(dt));
  }
  return opmath_fit(dt, x);
}

// PyTorch's div_floor.
static double div_floor(double a, double b) {
  if (b == 0)
    return a / b;
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0))
    div -= 1;
  if (div == 0)
    return copysign(0, a / b);
  double fl = floor(div);
  return div - fl > 0.5 ? fl + 1 : fl;
}

static OpValue float_binary(Op op, DType dt, double p, double q) {
  OpValue x = {0, 0};
  switch (op) {
  case OP_ADD: x.f = p + q; break;
  case OP_SUB: x.f = p - q; break;
  case OP_MUL: x.f = p * q; break;
  case OP_DIV: x.f = p / q; break;
  case OP_FLOOR_DIVIDE: x.f = div_floor(p, q); break;
  case OP_REMAINDER: {
    double m = fmod(p, q);
    x.f = m != 0 && (m < 0) != (q < 0) ? m + q : m;
    break;
  }
  case OP_POW: x.f = pow(p, q); break;
  case OP_MAXIMUM: x.f = isnan(p) || isnan(q) ? NAN : p > q ? p : q; break;
  case OP_MINIMUM: x.f = isnan(p) || isnan(q) ? NAN : p < q ? p : q; break;
  case OP_ATAN2: x.f = atan2(p, q); break;
  case OP_HYPOT: x.f = hypot(p, q); break;
  case OP_COPYSIGN: x.f = copysign(p, q); break;
  case OP_FMOD: x.f = fmod(p, q); break;
  case OP_NEXTAFTER: x.f = dt == DT_F32 ? nextafterf((float)p, (float)q) : nextafter(p, q); break;
  default: td_internal_error(__FILE__, __LINE__, "'%s' on %s", op_name(op), dtype_name(dt));
  }
  return opmath_fit(dt, x);
}

static OpValue int_binary(Op op, DType dt, int64_t p, int64_t q, bool *raised) {
  OpValue x = {0, 0};
  switch (op) {
  case OP_ADD: x.i = dt == DT_BOOL ? p || q : (int64_t)((uint64_t)p + (uint64_t)q); break;
  case OP_SUB: x.i = (int64_t)((uint64_t)p - (uint64_t)q); break;
  case OP_MUL: x.i = dt == DT_BOOL ? p && q : (int64_t)((uint64_t)p * (uint64_t)q); break;
  case OP_MAXIMUM: x.i = p > q ? p : q; break;
  case OP_MINIMUM: x.i = p < q ? p : q; break;
  case OP_LOGICAL_AND: x.i = p && q; break;
  case OP_LOGICAL_OR: x.i = p || q; break;
  case OP_BITWISE_AND: x.i = p & q; break;
  case OP_BITWISE_OR: x.i = p | q; break;
  case OP_BITWISE_XOR: x.i = p ^ q; break;
  case OP_LSHIFT:
  case OP_RSHIFT: {
    int bits = dt == DT_I32 ? 32 : 64, n = (int)(q & (bits - 1));
    if (op == OP_LSHIFT)
      x.i = (int64_t)((uint64_t)p << n);  // fits dt once wrapped: p holds a value of dt
    else
      x.i = p < 0 ? ~(~p >> n) : p >> n;  // arithmetic, without relying on C's >> of a negative
    break;
  }
  case OP_FLOOR_DIVIDE:
  case OP_REMAINDER:
    if (q == 0) {
      *raised = true;
      break;
    }
    if (q == -1) {  // INT_MIN // -1 wraps; INT_MIN % -1 is 0
      x.i = op == OP_FLOOR_DIVIDE ? wrap_neg(p) : 0;
      break;
    }
    if (op == OP_FLOOR_DIVIDE) {
      x.i = p / q - (p % q != 0 && (p < 0) != (q < 0));
    } else {
      x.i = p % q;
      if (x.i != 0 && (x.i < 0) != (q < 0))
        x.i += q;
    }
    break;
  case OP_POW: {
    if (q < 0) {
      *raised = true;
      break;
    }
    uint64_t acc = 1, base = (uint64_t)p;
    for (uint64_t n = (uint64_t)q; n; n >>= 1) {
      if (n & 1)
        acc *= base;
      base *= base;
    }
    x.i = (int64_t)acc;
    break;
  }
  default: td_internal_error(__FILE__, __LINE__, "'%s' on %s", op_name(op), dtype_name(dt));
  }
  return opmath_fit(dt, x);
}

OpValue opmath_binary(Op op, DType dt, OpValue a, OpValue b, bool *raised) {
  if (op_flags(op) & OF_COMPARE) {
    bool fl = is_fl(dt);
    double p = a.f, q = b.f;
    int64_t m = a.i, n = b.i;
    bool r;
    switch (op) {
    case OP_EQ: r = fl ? p == q : m == n; break;
    case OP_NE: r = fl ? p != q : m != n; break;
    case OP_LT: r = fl ? p < q : m < n; break;
    case OP_LE: r = fl ? p <= q : m <= n; break;
    case OP_GT: r = fl ? p > q : m > n; break;
    default: r = fl ? p >= q : m >= n; break;
    }
    return (OpValue){0, r};
  }
  return is_fl(dt) ? float_binary(op, dt, a.f, b.f) : int_binary(op, dt, a.i, b.i, raised);
}
