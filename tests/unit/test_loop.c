// tests/unit/test_loop.c: ir/loop.c, the loop IR's constructors, li_affine, the
// --emit=kernels text (pinned byte for byte) and loop_verify. A program the verifier
// must reject is verified in a child process, which must exit with status 4 (an
// internal error, never a signal).
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ir/loop.h"

#define I64(...) ((const int64_t[]){__VA_ARGS__})

#include "ctx_fixture.h"

static LIndex ix(int64_t base, int n, const int *vars, const int64_t *coefs) {
  LIndex r = {0};
  r.base = base;
  r.nterms = n;
  for (int i = 0; i < n; i++) {
    r.var[i] = vars[i];
    r.coef[i] = coefs[i];
  }
  return r;
}

static void push(LStmtList *l, LStmt *s) { vec_push(&cx.arena, l, s); }

// row sums of x: f32[4, 8] then exp, into a temp of 4 elements:
//   for i0 in 0..4 parallel { let l0 = 0; for i1 in 0..8 { l0 = l0 + x[8*i0 + i1] } t[i0] = exp(l0) }
static LProgram *row_sum_program(void) {
  LProgram *p = arena_alloc(&cx.arena, sizeof *p);
  p->name = "f";
  vec_push(&cx.arena, &p->bufs, ((LBuf){LB_PARAM, DT_F32, 32, "x", 0, false, false}));
  vec_push(&cx.arena, &p->bufs, ((LBuf){LB_RESULT, DT_F32, 4, "t", -1, false, false}));
  LParam prm = {"x", DT_F32, 2, {4, 8}, false, 0, false};
  vec_push(&cx.arena, &p->params, prm);
  LOutput out = {1, DT_F32, view_contiguous(1, I64(4))};
  vec_push(&cx.arena, &p->outputs, out);
  LKernel *k = arena_alloc(&cx.arena, sizeof *k);
  k->name = "k0";
  vec_push(&cx.arena, &k->args, ((LArg){.buf = 0, .read = true, .written = false}));
  vec_push(&cx.arena, &k->args, ((LArg){.buf = 1, .read = false, .written = true}));
  vec_push(&cx.arena, &k->locals, DT_F32);
  vec_push(&cx.arena, &k->ops, "sum");
  vec_push(&cx.arena, &k->ops, "exp");
  vec_push(&cx.arena, &k->lines, 2);
  vec_push(&cx.arena, &k->lines, 3);
  k->nvars = 2;
  LStmt *outer = ls_loop(&cx, 0, 4);
  outer->parallel = true;
  push(&outer->body, ls_let(&cx, 0, lx_const_f(&cx, DT_F32, 0)));
  LStmt *inner = ls_loop(&cx, 1, 8);
  inner->vector = 8;
  LExpr *ld = lx_load(&cx, DT_F32, 0, ix(0, 2, (const int[]){0, 1}, I64(8, 1)));
  push(&inner->body, ls_set(&cx, 0, lx_binary(&cx, OP_ADD, DT_F32, lx_local(&cx, DT_F32, 0), ld)));
  push(&outer->body, inner);
  push(&outer->body, ls_store(&cx, 1, ix(0, 1, (const int[]){0}, I64(1)),
                              lx_unary(&cx, OP_EXP, DT_F32, lx_local(&cx, DT_F32, 0))));
  push(&k->body, outer);
  vec_push(&cx.arena, &p->kernels, k);
  return p;
}

static LKernel *kernel0(LProgram *p) { return p->kernels.data[0]; }
static LStmt *outer_loop(LProgram *p) { return kernel0(p)->body.data[0]; }
static LStmt *inner_loop(LProgram *p) { return outer_loop(p)->body.data[1]; }

// The exit status of loop_verify(p) run in a child: 0 accepted, 4 rejected.
static int verify_status(const LProgram *p) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stderr))
      _exit(9);
    loop_verify(p);
    _exit(0);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

// ---- constructors ------------------------------------------------------------------

static void constructors_set_their_fields_and_no_error(void **state) {
  (void)state;
  LExpr *a = lx_const_f(&cx, DT_F64, 2.5), *b = lx_const_i(&cx, DT_I32, -3);
  assert_int_equal(a->kind, LX_CONST);
  assert_true(a->f == 2.5);
  assert_int_equal(b->i, -3);
  assert_int_equal(a->err, -1);
  LExpr *v = lx_var(&cx, 3);
  assert_int_equal(v->dt, DT_I64);
  assert_int_equal(v->var, 3);
  LExpr *s = lx_select(&cx, lx_const_i(&cx, DT_BOOL, 1), a, a);
  assert_int_equal(s->dt, DT_F64);
  assert_int_equal(s->err, -1);
  LExpr *c = lx_cast(&cx, DT_I64, a);
  assert_int_equal(c->kind, LX_CAST);
  assert_int_equal(c->dt, DT_I64);
  LExpr *u = lx_binary(&cx, OP_FLOOR_DIVIDE, DT_I32, b, b);
  assert_int_equal(u->op, OP_FLOOR_DIVIDE);
  assert_int_equal(u->err, -1);
  LStmt *l = ls_loop(&cx, 1, 7);
  assert_int_equal(l->kind, LS_LOOP);
  assert_int_equal(l->extent, 7);
  assert_false(l->parallel);
  assert_int_equal(l->body.len, 0);
  assert_int_equal(ls_if(&cx, s)->kind, LS_IF);
}

// ---- li_affine ---------------------------------------------------------------------

static void affine_index_of_a_transpose_uses_its_strides(void **state) {
  (void)state;
  View t = view_transpose(view_contiguous(2, I64(3, 4)), 0, 1);
  LIndex i = li_affine(&t, (const int[]){0, 1});
  assert_int_equal(i.base, 0);
  assert_int_equal(i.nterms, 2);
  assert_int_equal(i.var[0], 0);
  assert_int_equal(i.coef[0], 1);
  assert_int_equal(i.var[1], 1);
  assert_int_equal(i.coef[1], 4);
}

static void affine_index_skips_broadcast_and_pinned_dims(void **state) {
  (void)state;
  View e;
  int bad;
  assert_true(view_expand(view_slice(view_contiguous(2, I64(3, 1)), 0, 1, 3, 1), 3, I64(5, 2, 4), &e, &bad));
  LIndex i = li_affine(&e, (const int[]){0, -1, 2});
  assert_int_equal(i.base, 1);  // the slice's offset
  assert_int_equal(i.nterms, 0);  // dims 0, 2 broadcast; dim 1 pinned
  i = li_affine(&e, (const int[]){0, 1, 2});
  assert_int_equal(i.nterms, 1);
  assert_int_equal(i.var[0], 1);
}

// ---- printing ----------------------------------------------------------------------

static void kernels_print_as_indented_pseudo_c(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  loop_print(p, true, f);
  fclose(f);
  assert_string_equal(text, "program f\n"
                            "buffer b0 param f32[32] x\n"
                            "buffer b1 result f32[4] t\n"
                            "param x: f32[4, 8] -> b0\n"
                            "output 0: f32[4] strides [1] offset 0 of b1\n"
                            "kernel k0\n"
                            "  ops: sum exp  lines: 2, 3\n"
                            "  args: b0 (read), b1 (write)\n"
                            "  locals: l0 f32\n"
                            "  for i0 in 0..4 parallel {\n"
                            "    let l0: f32 = 0\n"
                            "    for i1 in 0..8 vector 8 {\n"
                            "      l0 = (l0 + b0[8*i0 + i1])\n"
                            "    }\n"
                            "    b1[i0] = exp(l0)\n"
                            "  }\n");
  free(text);
}

static void indices_print_negative_coefficients_and_offsets(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  LStmt *st = outer_loop(p)->body.data[2];
  st->idx = ix(3, 1, (const int[]){0}, I64(-1));
  st->val = lx_select(&cx, lx_binary(&cx, OP_LT, DT_BOOL, lx_local(&cx, DT_F32, 0), lx_const_f(&cx, DT_F32, 0.5)),
                      lx_unary(&cx, OP_NEG, DT_F32, lx_local(&cx, DT_F32, 0)), lx_const_f(&cx, DT_F32, 1e-5));
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  loop_print(p, true, f);
  fclose(f);
  assert_non_null(strstr(text, "    b1[-i0 + 3] = ((l0 < 0.5) ? (-l0) : 1e-05)\n"));
  free(text);
  assert_int_equal(verify_status(p), 0);
}

// ---- verification ------------------------------------------------------------------

static void a_well_formed_kernel_verifies(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  loop_verify(p);
  assert_int_equal(verify_status(p), 0);
}

static void a_load_past_its_buffer_is_rejected(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  LStmt *set = inner_loop(p)->body.data[0];
  set->val->b->idx.coef[0] = 9;  // 9*3 + 7 = 34 > 31
  assert_int_equal(verify_status(p), 4);
}

static void a_negative_index_is_rejected(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  LStmt *st = outer_loop(p)->body.data[2];
  st->idx.base = -1;
  assert_int_equal(verify_status(p), 4);
}

static void a_loop_of_extent_zero_reads_nothing(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  inner_loop(p)->extent = 0;
  LStmt *set = inner_loop(p)->body.data[0];
  set->val->b->idx.base = 1000;  // never executed
  assert_int_equal(verify_status(p), 0);
}

static void a_variable_used_outside_its_loop_is_rejected(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  LStmt *st = outer_loop(p)->body.data[2];
  st->idx = ix(0, 1, (const int[]){1}, I64(0));  // i1 after its loop ended
  assert_int_equal(verify_status(p), 4);
}

static void a_local_read_before_its_let_is_rejected(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  LStmt *outer = outer_loop(p);
  outer->body.data[0] = ls_set(&cx, 0, lx_const_f(&cx, DT_F32, 0));  // no let
  assert_int_equal(verify_status(p), 4);
}

static void a_local_is_out_of_scope_after_its_block(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  push(&kernel0(p)->body, ls_store(&cx, 1, ix(0, 0, NULL, NULL), lx_local(&cx, DT_F32, 0)));
  assert_int_equal(verify_status(p), 4);
}

static void mixed_operand_types_are_rejected(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  LStmt *set = inner_loop(p)->body.data[0];
  set->val->b = lx_cast(&cx, DT_F64, set->val->b);  // f32 + f64
  assert_int_equal(verify_status(p), 4);
}

static void a_transcendental_on_ints_is_rejected(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  LStmt *st = outer_loop(p)->body.data[2];
  st->val = lx_unary(&cx, OP_EXP, DT_I64, lx_const_i(&cx, DT_I64, 1));
  assert_int_equal(verify_status(p), 4);
}

static void arithmetic_on_half_floats_is_rejected(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  LStmt *st = outer_loop(p)->body.data[2];
  LExpr *h = lx_cast(&cx, DT_F16, lx_local(&cx, DT_F32, 0));
  st->val = lx_binary(&cx, OP_MUL, DT_F16, h, h);
  assert_int_equal(verify_status(p), 4);
  st->val = lx_cast(&cx, DT_F32, h);  // casting is how halves compute
  assert_int_equal(verify_status(p), 0);
}

static void a_comparison_gives_bool(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  LStmt *st = outer_loop(p)->body.data[2];
  LExpr *l = lx_local(&cx, DT_F32, 0);
  st->val = lx_binary(&cx, OP_LT, DT_F32, l, l);
  assert_int_equal(verify_status(p), 4);
  st->val = lx_binary(&cx, OP_LT, DT_BOOL, l, l);
  assert_int_equal(verify_status(p), 0);
}

static void a_store_to_an_argument_not_written_is_rejected(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  kernel0(p)->args.data[1].written = false;
  assert_int_equal(verify_status(p), 4);
}

static void a_checked_index_bounds_a_dynamic_index(void **state) {
  (void)state;
  LProgram *p = row_sum_program();
  vec_push(&cx.arena, &kernel0(p)->errors, "t.tdsl:1:1: error: index %lld is out of bounds");
  LStmt *st = outer_loop(p)->body.data[2];
  LExpr *ci = lx_cast(&cx, DT_I64, lx_const_i(&cx, DT_I32, 7));
  LExpr *chk = lx_unary(&cx, OP_ABS, DT_I64, ci);  // stand-in, replaced below
  chk->kind = LX_CHECKED_INDEX;
  chk->i = 4;
  chk->err = 0;
  st->idx = ix(0, 0, NULL, NULL);
  st->idx.dyn = chk;  // in [0, 4): inside b1
  assert_int_equal(verify_status(p), 0);
  chk->i = 5;  // could reach element 4 of a 4-element buffer
  assert_int_equal(verify_status(p), 4);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(constructors_set_their_fields_and_no_error),
      T(affine_index_of_a_transpose_uses_its_strides),
      T(affine_index_skips_broadcast_and_pinned_dims),
      T(kernels_print_as_indented_pseudo_c),
      T(indices_print_negative_coefficients_and_offsets),
      T(a_well_formed_kernel_verifies),
      T(a_load_past_its_buffer_is_rejected),
      T(a_negative_index_is_rejected),
      T(a_loop_of_extent_zero_reads_nothing),
      T(a_variable_used_outside_its_loop_is_rejected),
      T(a_local_read_before_its_let_is_rejected),
      T(a_local_is_out_of_scope_after_its_block),
      T(mixed_operand_types_are_rejected),
      T(a_transcendental_on_ints_is_rejected),
      T(arithmetic_on_half_floats_is_rejected),
      T(a_comparison_gives_bool),
      T(a_store_to_an_argument_not_written_is_rejected),
      T(a_checked_index_bounds_a_dynamic_index),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
