// frontend/sema_fold.c: constant folding of Python scalars with Python's semantics (//
// and % floor, ints wrap at 64 bits, division by zero is Python's error), and the math
// functions of §6 applied to a scalar. A folded value is a TY_SCALAR with no builtin:
// lowering never sees it.
#include "frontend/sema_internal.h"
#include "ir/opmath.h"

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
  case BIN_AND: case BIN_OR: case BIN_XOR: {  // ints and bools; bool op bool is a bool
    if (fl) break;
    int64_t r = op == BIN_AND ? i & j : op == BIN_OR ? i | j : i ^ j;
    return a->dtype == DT_BOOL && b->dtype == DT_BOOL ? ty_bool(sema, r != 0) : ty_int(sema, r);
  }
  case BIN_LSHIFT: case BIN_RSHIFT:
    if (fl) break;
    if (j < 0) {
      diag_error(sema->cx, loc, "negative shift count");
      return NULL;
    }
    if (op == BIN_RSHIFT) return ty_int(sema, j >= 64 ? (i < 0 ? -1 : 0) : i >> j);
    return ty_int(sema, j >= 64 ? 0 : (int64_t)((uint64_t)i << j));  // wraps at 64 bits, as ints here do
  default: break;
  }
  diag_error(sema->cx, loc, "unsupported operand type(s) for %s: '%s' and '%s'", binop_text((BinOp)op),
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

// Math functions of §6 applied to a Python scalar, computed as the loop IR computes the
// op in f64 (ir/opmath.c: the formula every backend uses); sqrt(D) of an int const is a
// float. NULL: not foldable.
TType *fold_math(Sema *sema, Op op, const TType *a) {
  bool fl = a->dtype == DT_F64;
  switch (op) {
  case OP_NEG: return fold_unary(sema, (Loc){0}, UN_NEG, a);
  case OP_LOGICAL_NOT: return ty_bool(sema, a->fval == 0);
  case OP_FLOOR: case OP_CEIL: case OP_ROUND:  // Python's math.floor, ceil, round give an int
    return ty_int(sema, fl ? d2i(opmath_unary(op, DT_F64, (OpValue){a->fval, 0}).f) : a->ival);
  case OP_ABS: case OP_RELU: case OP_SIGN: case OP_SQUARE:  // of an int: an int (wrapping at 64 bits)
    if (!fl)
      return ty_int(sema, opmath_unary(op, DT_I64, (OpValue){0, a->ival}).i);
    break;
  default: break;
  }
  if (op_class(op) != OC_UNARY || !op_computes_in(op, DT_F64))
    return NULL;
  return ty_float(sema, opmath_unary(op, DT_F64, (OpValue){a->fval, 0}).f);
}
