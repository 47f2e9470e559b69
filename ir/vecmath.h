// ir/vecmath.h: the CPU backends' math library, written as loop IR (ir/vecmath.c).
// The transcendental functions of f32 and f64 (exp, exp2, expm1, log, log2, log10,
// log1p, tanh, erf, erfc, sin, cos, pow, hypot) and the composite ops whose formulas use them
// (sigmoid, silu, gelu, gelu_tanh) become plain arithmetic — polynomials, compares,
// selects, integer ops on the bits — that the C and LLVM backends print and their
// compilers vectorize like any other loop, instead of a libm call per element. The
// accuracy of each (ULPs over the whole range, special values) is docs/vecmath.md's
// table, checked by tests/run/test_vecmath.py and bench/vecmath/sweep.c.
#ifndef TDSLC_IR_VECMATH_H
#define TDSLC_IR_VECMATH_H

#include "ir/loop.h"

// Whether op of dtype dt (an elementwise op of the loop IR) is computed here on a CPU:
// a primitive this file implements, or a composite whose formula uses one.
bool vecmath_has(Op op, DType dt);

// Every such op in kernel k rewritten into arithmetic, the intermediate values as lets
// before the statement that uses them; for sin and cos, loops whose arguments may be
// huge get a cold path (vecmath.c says which). cpu: whether LX_FMA is fused there.
void vecmath_kernel(Ctx *cx, LKernel *k, const CpuTarget *cpu);

// exp(x) of an f32 or f64 local x known to be <= 0 or NaN (or whose result is unused),
// its lets appended to pre: softmax's terms after the row max (ir/sched.c).
LExpr *vecmath_exp_nonpos(Ctx *cx, LKernel *k, const CpuTarget *cpu, LStmtList *pre, LExpr *x);

#endif
