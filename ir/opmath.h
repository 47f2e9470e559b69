// ir/opmath.h: what each elementwise op of the loop IR computes, defined once.
//
// A *composite* op (sigmoid, silu, gelu, frac, rsqrt, reciprocal, square of a float) is
// its formula over the loop IR's primitive ops (op_formula): backends build or print
// that formula instead of a meaning of their own, constant folding and the test
// interpreter evaluate it. A *primitive* op (exp, add, floor_divide, ...) is computed
// by each backend with its own instructions or libm; its meaning is ir/loop.h's table,
// and opmath_unary / opmath_binary compute it on scalars for constant folding and the
// test interpreter. Adding an elementwise op: its row in ir/ops.def, its formula here
// (or, for a primitive, a case in opmath.c and in each backend), and its dtype rule in
// the front end (docs/internals.md).
#ifndef TDSLC_IR_OPMATH_H
#define TDSLC_IR_OPMATH_H

#include "ir/loop.h"

// The formula of op over operand a (dtype dt, f32 or f64: the loop IR computes
// composite ops in floats only) as a new expression of primitive ops, which reads a
// where the formula uses the operand (a may be shared: it is not copied). NULL when
// op is not composite for dt.
LExpr *op_formula(Ctx *cx, Op op, DType dt, const LExpr *a);
bool op_is_composite(Op op, DType dt);  // OF_COMPOSITE in its ops.def row, and dt f32 or f64
bool op_formula_uses(Op op, DType dt, Op prim);  // op is composite for dt and its formula computes prim

// A scalar of the loop IR: f for float dtypes, i for ints and bool.
typedef struct OpValue {
  double f;
  int64_t i;
} OpValue;

// The value of a unary or binary op of the loop IR on scalars of dtype dt (for
// comparisons: the operands' dtype; the result is then a bool in .i), rounded to dt as
// a backend holds it (f32 rounds each result to float, i32 wraps). An integer op that
// raises (floor_divide or remainder by 0, a negative power) sets *raised and gives 0.
// A composite op is evaluated through its formula.
OpValue opmath_unary(Op op, DType dt, OpValue a);
OpValue opmath_binary(Op op, DType dt, OpValue a, OpValue b, bool *raised);
OpValue opmath_fit(DType dt, OpValue v);  // v as dtype dt holds it
// What reduction, scan or combining op op starts from in dtype dt (its ops.def identity:
// LOWEST is -inf, an int dtype's minimum, false; HIGHEST the other end).
OpValue op_identity(Op op, DType dt);

#endif
