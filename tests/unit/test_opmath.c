// tests/unit/test_opmath.c: the op table (ir/ops.def through ir/op.c), the dtype rules of
// ir/dtype.c, and ir/opmath.c: composite ops are formulas of primitives only, and the
// scalar values agree with closed forms and with Python's and PyTorch's integer rules.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "ir/opmath.h"

#include "ctx_fixture.h"

// ---- the table ----
static void every_op_has_a_consistent_row(void **state) {
  (void)state;
  for (int i = 0; i < OP_COUNT; i++) {
    Op op = (Op)i;
    assert_string_not_equal(op_name(op), "?");
    OpClass c = op_class(op);
    if (c == OC_UNARY)
      assert_int_equal(op_arity(op), 1);
    if (c == OC_BINARY)
      assert_int_equal(op_arity(op), 2);
    if (c == OC_CREATE)
      assert_int_equal(op_arity(op), 0);
    assert_true(op_is_pointwise(op) <= op_is_elementwise(op));
    assert_false(op_is_row(op) && op_is_elementwise(op));
    assert_true(!op_is_gather(op) || op_may_raise(op, DT_F32));
  }
  assert_true(op_is_row(OP_SOFTMAX) && op_is_row(OP_ARGMAX) && !op_is_row(OP_MATMUL));
  assert_true(op_is_elementwise(OP_INDEX) && !op_is_pointwise(OP_INDEX) && op_is_creation(OP_ARANGE));
  assert_true(op_is_transcendental(OP_GELU) && !op_is_transcendental(OP_ADD));
  assert_true(op_may_raise(OP_FLOOR_DIVIDE, DT_I32) && !op_may_raise(OP_FLOOR_DIVIDE, DT_F32));
  assert_true(op_computes_in(OP_ADD, DT_BOOL) && !op_computes_in(OP_DIV, DT_I64));
  assert_true(op_computes_in(OP_LT, DT_BOOL) && !op_computes_in(OP_LT, DT_F16));
  assert_true(op_computes_in(OP_BITWISE_NOT, DT_BOOL) && !op_computes_in(OP_BITWISE_NOT, DT_F32));
}

static void dtype_rules_are_pytorchs(void **state) {
  (void)state;
  assert_int_equal(dtype_promote(DT_I32, DT_I64), DT_I64);
  assert_int_equal(dtype_promote(DT_F16, DT_BF16), DT_F32);
  assert_int_equal(dtype_promote(DT_BOOL, DT_F16), DT_F16);
  assert_int_equal(dtype_promote(DT_I64, DT_F16), DT_F16);
  assert_int_equal(dtype_promote(DT_F32, DT_F64), DT_F64);
  // torch.result_type(i32 tensor, 2.5) is f32; (i64 tensor, f16 0-d tensor) is f16;
  // (f16 tensor, f64 0-d tensor) stays f16; (bool tensor, 3) is i64; no tensors: f32
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_I32, DTO_DIMMED}, {DT_F64, DTO_WRAPPED}}, 2), DT_F32);
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_I64, DTO_DIMMED}, {DT_F16, DTO_ZERO_DIM}}, 2), DT_F16);
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_F16, DTO_DIMMED}, {DT_F64, DTO_ZERO_DIM}}, 2), DT_F16);
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_BOOL, DTO_DIMMED}, {DT_I64, DTO_WRAPPED}}, 2), DT_I64);
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_I32, DTO_DIMMED}, {DT_I64, DTO_ZERO_DIM}}, 2), DT_I32);
  assert_int_equal(dtype_result_type(NULL, 0), DT_F32);
  assert_false(dtype_can_cast(DT_F32, DT_I64));
  assert_false(dtype_can_cast(DT_I32, DT_BOOL));
  assert_true(dtype_can_cast(DT_BOOL, DT_BOOL) && dtype_can_cast(DT_I64, DT_F16));
  assert_int_equal(dtype_compute(DT_BF16), DT_F32);
  assert_true(dtype_is_half(DT_F16) && !dtype_is_half(DT_F32));
}

// torch.promote_types and torch.result_type of u8, i8 and i16 (PyTorch 1.13's answers).
static void small_int_dtype_rules_are_pytorchs(void **state) {
  (void)state;
  static const DType ints[] = {DT_BOOL, DT_U8, DT_I8, DT_I16, DT_I32, DT_I64};
  // promote_types(ints[i], ints[j]), as torch.promote_types prints it
  static const DType want[6][6] = {
      {DT_BOOL, DT_U8, DT_I8, DT_I16, DT_I32, DT_I64},  {DT_U8, DT_U8, DT_I16, DT_I16, DT_I32, DT_I64},
      {DT_I8, DT_I16, DT_I8, DT_I16, DT_I32, DT_I64},   {DT_I16, DT_I16, DT_I16, DT_I16, DT_I32, DT_I64},
      {DT_I32, DT_I32, DT_I32, DT_I32, DT_I32, DT_I64}, {DT_I64, DT_I64, DT_I64, DT_I64, DT_I64, DT_I64},
  };
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++)
      assert_int_equal(dtype_promote(ints[i], ints[j]), want[i][j]);
  assert_int_equal(dtype_promote(DT_U8, DT_F16), DT_F16);
  assert_int_equal(dtype_promote(DT_BF16, DT_I16), DT_BF16);
  // (u8 tensor, -5) stays u8; (i8 tensor, i64 0-d) is i8; (u8 tensor, f64 0-d) is f64;
  // (u8 tensor, 1.5) is f32; (bool tensor, u8 0-d) is u8; (u8 0-d, i8 0-d) is i16
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_U8, DTO_DIMMED}, {DT_I64, DTO_WRAPPED}}, 2), DT_U8);
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_I8, DTO_DIMMED}, {DT_I64, DTO_ZERO_DIM}}, 2), DT_I8);
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_U8, DTO_DIMMED}, {DT_F64, DTO_ZERO_DIM}}, 2), DT_F64);
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_U8, DTO_DIMMED}, {DT_F64, DTO_WRAPPED}}, 2), DT_F32);
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_BOOL, DTO_DIMMED}, {DT_U8, DTO_ZERO_DIM}}, 2), DT_U8);
  assert_int_equal(dtype_result_type((DTypeOperand[]){{DT_U8, DTO_ZERO_DIM}, {DT_I8, DTO_ZERO_DIM}}, 2), DT_I16);
  assert_true(dtype_can_cast(DT_U8, DT_I8) && dtype_can_cast(DT_I8, DT_U8) && !dtype_can_cast(DT_I16, DT_BOOL));
  assert_false(dtype_can_cast(DT_F16, DT_U8));
  assert_int_equal(dtype_compute(DT_U8), DT_I32);
  assert_int_equal(dtype_compute(DT_I16), DT_I32);
  assert_true(dtype_is_int(DT_U8) && dtype_is_unsigned(DT_U8) && !dtype_is_unsigned(DT_I8));
  assert_true(dtype_is_small_int(DT_I16) && !dtype_is_small_int(DT_I32) && !dtype_is_small_int(DT_BOOL));
  assert_int_equal(dtype_size(DT_I16), 2);
  DType d;
  assert_true(dtype_from_name("u8", &d) && d == DT_U8);
  assert_true(dtype_from_name("i16", &d) && d == DT_I16);
}

// ---- formulas ----
static bool only_primitives(const LExpr *e) {
  if (!e)
    return true;
  if ((e->kind == LX_UNARY || e->kind == LX_BINARY) && op_is_composite(e->op, e->dt))
    return false;
  return only_primitives(e->a) && only_primitives(e->b) && only_primitives(e->c);
}

static double unary_f64(Op op, double x) { return opmath_unary(op, DT_F64, (OpValue){x, 0}).f; }

static void composite_ops_are_formulas_of_primitives(void **state) {
  (void)state;
  int n = 0;
  for (int i = 0; i < OP_COUNT; i++) {
    for (DType dt = DT_F32; dt <= DT_F64; dt++) {
      LExpr *a = lx_const_f(&cx, dt, 0.25);
      LExpr *f = op_formula(&cx, (Op)i, dt, a);
      assert_true((f != NULL) == op_is_composite((Op)i, dt));
      if (f) {
        assert_int_equal(f->dt, dt);
        assert_true(only_primitives(f));
        n++;
      }
    }
  }
  assert_int_equal(n, 16);  // eight composite ops, in f32 and f64
  assert_null(op_formula(&cx, OP_SQUARE, DT_I64, lx_const_i(&cx, DT_I64, 3)));
}

static void composite_values_match_closed_forms(void **state) {
  (void)state;
  assert_true(unary_f64(OP_SIGMOID, 0) == 0.5);
  assert_true(fabs(unary_f64(OP_SIGMOID, 2) - 0.8807970779778823) < 1e-15);
  assert_true(fabs(unary_f64(OP_SILU, 2) - 1.7615941559557646) < 1e-15);
  assert_true(fabs(unary_f64(OP_GELU, 1) - 0.8413447460685429) < 1e-15);  // PyTorch's gelu(1.0)
  assert_true(fabs(unary_f64(OP_GELU, -3) - -0.00404969409489031) < 1e-15);
  // PyTorch's gelu(approximate='tanh') of -3, -1, 0.5, 2 in f64
  assert_true(fabs(unary_f64(OP_GELU_TANH, -3) - -0.0036373920817729943) < 1e-15);
  assert_true(fabs(unary_f64(OP_GELU_TANH, -1) - -0.15880800939172324) < 1e-15);
  assert_true(fabs(unary_f64(OP_GELU_TANH, 0.5) - 0.34571400982514394) < 1e-15);
  assert_true(fabs(unary_f64(OP_GELU_TANH, 2) - 1.954597694087775) < 1e-15);
  assert_true(unary_f64(OP_RSQRT, 4) == 0.5);
  assert_true(unary_f64(OP_RECIPROCAL, 8) == 0.125);
  assert_true(unary_f64(OP_SQUARE, -3) == 9);
  // frac is PyTorch's a - trunc(a): the sign of a; nan at infinities
  assert_true(unary_f64(OP_FRAC, -2.75) == -0.75 && unary_f64(OP_FRAC, 3.5) == 0.5);
  assert_true(isnan(unary_f64(OP_FRAC, INFINITY)) && unary_f64(OP_FRAC, -0.0) == 0);
  // f32: the formula's steps are rounded to float
  OpValue s = opmath_unary(OP_SIGMOID, DT_F32, (OpValue){1, 0});
  assert_true(s.f == (double)(1.0f / (1.0f + (float)exp(-1.0))));
  assert_true(isnan(unary_f64(OP_SIGMOID, NAN)));
  assert_true(unary_f64(OP_SIGN, NAN) == 0 && unary_f64(OP_SIGN, -2) == -1);
  assert_true(unary_f64(OP_RELU, -0.5) == 0 && isnan(unary_f64(OP_RELU, NAN)));
}

// ---- primitive values ----
static int64_t ibin(Op op, DType dt, int64_t a, int64_t b, bool *raised) {
  return opmath_binary(op, dt, (OpValue){0, a}, (OpValue){0, b}, raised).i;
}

static void integer_ops_follow_python(void **state) {
  (void)state;
  bool raised = false;
  assert_int_equal(ibin(OP_FLOOR_DIVIDE, DT_I64, -7, 2, &raised), -4);
  assert_int_equal(ibin(OP_REMAINDER, DT_I64, -7, 2, &raised), 1);
  assert_int_equal(ibin(OP_REMAINDER, DT_I64, 7, -2, &raised), -1);
  assert_int_equal(ibin(OP_FLOOR_DIVIDE, DT_I64, INT64_MIN, -1, &raised), INT64_MIN);
  assert_int_equal(ibin(OP_REMAINDER, DT_I32, INT32_MIN, -1, &raised), 0);
  assert_int_equal(ibin(OP_ADD, DT_I32, INT32_MAX, 1, &raised), INT32_MIN);
  assert_int_equal(ibin(OP_POW, DT_I64, 3, 4, &raised), 81);
  assert_int_equal(ibin(OP_POW, DT_I32, 2, 31, &raised), INT32_MIN);
  assert_false(raised);
  assert_int_equal(ibin(OP_FLOOR_DIVIDE, DT_I64, 5, 0, &raised), 0);
  assert_true(raised);
  raised = false;
  ibin(OP_POW, DT_I64, 2, -1, &raised);
  assert_true(raised);
  assert_int_equal(ibin(OP_ADD, DT_BOOL, 1, 1, &raised), 1);
  assert_int_equal(ibin(OP_LT, DT_I64, -1, 0, &raised), 1);
}

static void bitwise_ops_and_shifts_follow_pytorchs_cpu(void **state) {
  (void)state;
  bool raised = false;
  assert_int_equal(ibin(OP_BITWISE_AND, DT_I32, -8, 13, &raised), 8);
  assert_int_equal(ibin(OP_BITWISE_OR, DT_I64, -8, 3, &raised), -5);
  assert_int_equal(ibin(OP_BITWISE_XOR, DT_BOOL, 1, 1, &raised), 0);
  // torch.bitwise_left_shift / right_shift of int32 [-8, 5, 1, -1, 7] by [1, 31, 32, 33, -1]
  // on PyTorch 1.13's CPU: the count masked to 5 bits, >> arithmetic
  assert_int_equal(ibin(OP_LSHIFT, DT_I32, -8, 1, &raised), -16);
  assert_int_equal(ibin(OP_LSHIFT, DT_I32, 5, 31, &raised), INT32_MIN);
  assert_int_equal(ibin(OP_LSHIFT, DT_I32, 1, 32, &raised), 1);
  assert_int_equal(ibin(OP_LSHIFT, DT_I32, -1, 33, &raised), -2);
  assert_int_equal(ibin(OP_LSHIFT, DT_I32, 7, -1, &raised), INT32_MIN);
  assert_int_equal(ibin(OP_RSHIFT, DT_I32, -8, 1, &raised), -4);
  assert_int_equal(ibin(OP_RSHIFT, DT_I32, 1, 32, &raised), 1);
  assert_int_equal(ibin(OP_RSHIFT, DT_I32, -1, 33, &raised), -1);
  assert_int_equal(ibin(OP_RSHIFT, DT_I64, 5, 63, &raised), 0);
  assert_int_equal(ibin(OP_LSHIFT, DT_I64, 1, 64, &raised), 1);
  assert_false(raised);
}

static double fbin(Op op, double a, double b) {
  bool raised = false;
  double r = opmath_binary(op, DT_F64, (OpValue){a, 0}, (OpValue){b, 0}, &raised).f;
  assert_false(raised);
  return r;
}

static void float_ops_follow_pytorch(void **state) {
  (void)state;
  assert_true(fbin(OP_FLOOR_DIVIDE, -7, 2) == -4);
  assert_true(fbin(OP_FLOOR_DIVIDE, 7.5, 0) == INFINITY);
  assert_true(signbit(fbin(OP_FLOOR_DIVIDE, -0.5, 4)));  // -0.0, as PyTorch
  assert_true(fbin(OP_REMAINDER, -7.5, 2) == 0.5);
  assert_true(isnan(fbin(OP_MAXIMUM, 1, NAN)) && isnan(fbin(OP_MINIMUM, NAN, 1)));
  assert_true(fbin(OP_POW, 2, 0.5) == sqrt(2));
  assert_true(fbin(OP_FMOD, -7.5, 2) == -1.5 && fbin(OP_FMOD, 7.5, -2) == 1.5);  // C's fmod: the sign of a
  assert_true(isnan(fbin(OP_FMOD, 1, 0)) && fbin(OP_HYPOT, 3, 4) == 5 && fbin(OP_HYPOT, INFINITY, NAN) == INFINITY);
  assert_true(fbin(OP_COPYSIGN, 2, -0.0) == -2 && fbin(OP_COPYSIGN, -3, 1) == 3);
  assert_true(unary_f64(OP_TRUNC, -2.5) == -2 && unary_f64(OP_EXPM1, 1e-10) == expm1(1e-10));
  assert_true(unary_f64(OP_LOG1P, -1) == -INFINITY && unary_f64(OP_LOG10, 1000) == 3);
  assert_true(isnan(unary_f64(OP_ASIN, 2)) && isnan(unary_f64(OP_ACOSH, 0.5)) && unary_f64(OP_ATANH, 1) == INFINITY);
  OpValue ne = opmath_binary(OP_NE, DT_F64, (OpValue){NAN, 0}, (OpValue){NAN, 0}, NULL);
  assert_int_equal(ne.i, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_op_has_a_consistent_row),
      cmocka_unit_test(dtype_rules_are_pytorchs),
      cmocka_unit_test(small_int_dtype_rules_are_pytorchs),
      cmocka_unit_test(composite_ops_are_formulas_of_primitives),
      cmocka_unit_test(composite_values_match_closed_forms),
      cmocka_unit_test(integer_ops_follow_python),
      cmocka_unit_test(bitwise_ops_and_shifts_follow_pytorchs_cpu),
      cmocka_unit_test(float_ops_follow_pytorch),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
