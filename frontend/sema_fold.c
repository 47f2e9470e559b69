// frontend/sema_fold.c: constant folding of Python scalars with Python's semantics (//
// and % floor, ints wrap at 64 bits, division by zero is Python's error), and the math
// functions of §6 applied to a scalar. A folded value is a TY_SCALAR with no builtin:
// lowering never sees it.
#include "frontend/sema_internal.h"

#include <math.h>

// ============================================================================
// Constant folding of Python scalars (Python's semantics: // and % floor)
// ============================================================================

static double py_fmod(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// Fold a binary operator on two scalars; NULL (after an error) on division by zero.
TType *fold_binary(Sema *sema, Loc loc, int op, const TType *a, const TType *b) {
  bool fl = a->dtype == DT_F64 || b->dtype == DT_F64;
  double x = a->fval, y = b->fval;
  int64_t i = a->ival, j = b->ival;
  switch (op) {
  case BIN_ADD: return fl ? ty_float(sema, x + y) : ty_int(sema, wrap_add(i, j));
  case BIN_SUB: return fl ? ty_float(sema, x - y) : ty_int(sema, wrap_sub(i, j));
  case BIN_MUL: return fl ? ty_float(sema, x * y) : ty_int(sema, wrap_mul(i, j));
  case BIN_DIV:
    if (y == 0) {
      diag_error(sema->cx, loc, fl ? "float division by zero" : "division by zero");
      return NULL;
    }
    return ty_float(sema, x / y);
  case BIN_FLOORDIV:
  case BIN_MOD:
    if (fl) {
      if (y == 0) {
        diag_error(sema->cx, loc, op == BIN_MOD ? "float modulo" : "float floor division by zero");
        return NULL;
      }
      double m = py_fmod(x, y);
      return op == BIN_MOD ? ty_float(sema, m) : ty_float(sema, floor((x - m) / y + 0.5));
    }
    if (j == 0) {
      diag_error(sema->cx, loc, "integer division or modulo by zero");
      return NULL;
    }
    if (j == -1) return op == BIN_MOD ? ty_int(sema, 0) : ty_int(sema, wrap_sub(0, i));
    {
      int64_t q = i / j, r = i % j;
      if (r != 0 && ((r < 0) != (j < 0))) q--, r += j;
      return op == BIN_MOD ? ty_int(sema, r) : ty_int(sema, q);
    }
  case BIN_POW:
    if (!fl && j >= 0) {
      int64_t r = 1, base = i;
      for (int64_t e = j; e > 0; e >>= 1) {
        if (e & 1) r = wrap_mul(r, base);
        base = wrap_mul(base, base);
      }
      return ty_int(sema, r);
    }
    if (x == 0 && y < 0) {
      diag_error(sema->cx, loc, "0.0 cannot be raised to a negative power");
      return NULL;
    }
    return ty_float(sema, pow(x, y));
  case BIN_EQ: return ty_bool(sema, fl ? x == y : i == j);
  case BIN_NE: return ty_bool(sema, fl ? x != y : i != j);
  case BIN_LT: return ty_bool(sema, fl ? x < y : i < j);
  case BIN_LE: return ty_bool(sema, fl ? x <= y : i <= j);
  case BIN_GT: return ty_bool(sema, fl ? x > y : i > j);
  case BIN_GE: return ty_bool(sema, fl ? x >= y : i >= j);
  default: break;
  }
  diag_error(sema->cx, loc, "unsupported operand types for %s: '%s' and '%s'", binop_text((BinOp)op),
             py_type_name(a), py_type_name(b));
  return NULL;
}

TType *fold_unary(Sema *sema, Loc loc, int op, const TType *a) {
  if (op == UN_NEG) return a->dtype == DT_F64 ? ty_float(sema, -a->fval) : ty_int(sema, wrap_sub(0, a->ival));
  if (a->dtype == DT_BOOL) return ty_bool(sema, !a->ival);  // '~' is logical not on bools
  if (a->dtype == DT_I64) return ty_int(sema, ~a->ival);
  diag_error(sema->cx, loc, "bad operand type for unary ~: 'float'");
  return NULL;
}

// A double as an int64 without undefined behaviour (saturating; NaN gives 0).
static int64_t d2i(double x) {
  if (!(x == x)) return 0;
  if (x >= 9.2233720368547758e18) return INT64_MAX;
  if (x <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)x;
}

// Math functions of §6 applied to a Python scalar (sqrt(D) of an int const is a float).
TType *fold_math(Sema *sema, Op op, const TType *a) {
  double x = a->fval;
  switch (op) {
  case OP_ABS:
    return a->dtype == DT_F64 ? ty_float(sema, fabs(x)) : ty_int(sema, a->ival < 0 ? wrap_sub(0, a->ival) : a->ival);
  case OP_NEG: return fold_unary(sema, (Loc){0}, UN_NEG, a);
  case OP_EXP: return ty_float(sema, exp(x));
  case OP_LOG: return ty_float(sema, log(x));
  case OP_LOG2: return ty_float(sema, log2(x));
  case OP_EXP2: return ty_float(sema, exp2(x));
  case OP_SQRT: return ty_float(sema, sqrt(x));
  case OP_RSQRT: return ty_float(sema, 1 / sqrt(x));
  case OP_SIN: return ty_float(sema, sin(x));
  case OP_COS: return ty_float(sema, cos(x));
  case OP_TAN: return ty_float(sema, tan(x));
  case OP_TANH: return ty_float(sema, tanh(x));
  case OP_SIGMOID: return ty_float(sema, 1 / (1 + exp(-x)));
  case OP_RELU: return a->dtype == DT_F64 ? ty_float(sema, x > 0 ? x : 0) : ty_int(sema, a->ival > 0 ? a->ival : 0);
  case OP_GELU: return ty_float(sema, 0.5 * x * (1 + erf(x / sqrt(2.0))));
  case OP_SILU: return ty_float(sema, x / (1 + exp(-x)));
  case OP_ERF: return ty_float(sema, erf(x));
  case OP_FLOOR: return a->dtype == DT_F64 ? ty_int(sema, d2i(floor(x))) : ty_int(sema, a->ival);
  case OP_CEIL: return a->dtype == DT_F64 ? ty_int(sema, d2i(ceil(x))) : ty_int(sema, a->ival);
  case OP_ROUND: return a->dtype == DT_F64 ? ty_int(sema, d2i(nearbyint(x))) : ty_int(sema, a->ival);
  case OP_SIGN:
    return a->dtype == DT_F64 ? ty_float(sema, (x > 0) - (x < 0)) : ty_int(sema, (a->ival > 0) - (a->ival < 0));
  case OP_RECIPROCAL: return ty_float(sema, 1 / x);
  case OP_SQUARE: return a->dtype == DT_F64 ? ty_float(sema, x * x) : ty_int(sema, wrap_mul(a->ival, a->ival));
  case OP_LOGICAL_NOT: return ty_bool(sema, x == 0);
  default: return NULL;
  }
}
