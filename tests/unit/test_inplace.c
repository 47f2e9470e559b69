// tests/unit/test_inplace.c: ir/inplace.c's inplace_ok on hand-built CPU kernels, one
// kernel reading temp y (buffer 1, its last use) and writing temp x (buffer 2):
//   for i0 in 0..R { [for i1 in 0..C] { ... x[...] = f(y[...]) } }
// x may take y's storage only when every element of y is read before, in the same
// iteration, the one store writing x's element there. Each refusal below is a program
// that in place would read an element after it was overwritten (or write one twice).
// Ifs of the form `i0 < c` and `!(i0 < c)` bound the iterations a store runs in.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ir/loop.h"

enum { R = 4, C = 8 };

#include "ctx_fixture.h"

static LIndex ix2(int64_t base, int64_t c0, int64_t c1) {  // base + c0*i0 + c1*i1
  LIndex r = {0};
  r.base = base;
  if (c0)
    r.var[r.nterms] = 0, r.coef[r.nterms++] = c0;
  if (c1)
    r.var[r.nterms] = 1, r.coef[r.nterms++] = c1;
  return r;
}

static bool ok(LProgram *p, int kernel, int x, int y) {
  InplaceMarks m = {0};
  return inplace_ok(&cx, p, kernel, x, y, &m);
}

static void push(LStmtList *l, LStmt *s) { vec_push(&cx.arena, l, s); }

// A CPU program: buffer 0 a parameter (R*C), 1 the temp y read, 2 the temp x written
// (args 0, 1, 2 in that order), kernel 0 with an outer loop i0 (R) holding `body` built
// by the caller, which gets the outer loop.
static LProgram *program(LStmt **outer) {
  LProgram *p = arena_alloc(&cx.arena, sizeof *p);
  p->name = "f";
  p->cpu = true;
  vec_push(&cx.arena, &p->bufs, ((LBuf){LB_PARAM, DT_F32, R * C, "a", 0, false, false}));
  vec_push(&cx.arena, &p->bufs, ((LBuf){LB_TEMP, DT_F32, R * C, "y", -1, false, false}));
  vec_push(&cx.arena, &p->bufs, ((LBuf){LB_TEMP, DT_F32, R * C, "x", -1, false, false}));
  LKernel *k = arena_alloc(&cx.arena, sizeof *k);
  k->name = "k0";
  vec_push(&cx.arena, &k->args, ((LArg){.buf = 0, .read = true}));
  vec_push(&cx.arena, &k->args, ((LArg){.buf = 1, .read = true}));
  vec_push(&cx.arena, &k->args, ((LArg){.buf = 2, .written = true}));
  vec_push(&cx.arena, &k->locals, DT_F32);
  k->nvars = 3;
  *outer = ls_loop(&cx, 0, R);
  (*outer)->parallel = true;
  push(&k->body, *outer);
  vec_push(&cx.arena, &p->kernels, k);
  return p;
}

static LExpr *load(int arg, LIndex i) { return lx_load(&cx, DT_F32, arg, i); }

static LExpr *twice(LExpr *e) { return lx_binary(&cx, OP_MUL, DT_F32, e, lx_const_f(&cx, DT_F32, 2)); }

// for i0 { for i1 { x[C*i0 + i1] = y[C*i0 + i1 + yshift] * 2 } } (the y read in the
// store's value)
static LProgram *elementwise(int64_t yshift) {
  LStmt *o;
  LProgram *p = program(&o);
  LStmt *in = ls_loop(&cx, 1, C);
  push(&in->body, ls_store(&cx, 2, ix2(0, C, 1), twice(load(1, ix2(yshift, C, 1)))));
  push(&o->body, in);
  return p;
}

static void an_elementwise_read_of_the_element_written_is_in_place(void **state) {
  (void)state;
  assert_true(ok(elementwise(0), 0, 2, 1));
}

static void a_read_of_the_next_element_is_not(void **state) {
  (void)state;  // x[e] = y[e + 1] * 2: in order it would hold, but the outer loop is parallel (a thread may
                // write x[e + 1] before another reads y[e + 1]): only reads of the element written are taken
  assert_false(ok(elementwise(1), 0, 2, 1));
}

static void a_read_of_the_element_before_is_not(void **state) {
  (void)state;  // x[e] = y[e - 1]: in place, y[e - 1] was overwritten by the iteration before
  LStmt *o;
  LProgram *p = program(&o);
  LStmt *in = ls_loop(&cx, 1, C - 1);
  push(&in->body, ls_store(&cx, 2, ix2(1, C, 1), twice(load(1, ix2(0, C, 1)))));
  push(&o->body, in);
  assert_false(ok(p, 0, 2, 1));
}

static void a_read_after_the_store_in_the_iteration_is_not(void **state) {
  (void)state;  // x[e] = 2, then l0 = y[e]: in place the read sees the 2
  LStmt *o;
  LProgram *p = program(&o);
  LStmt *in = ls_loop(&cx, 1, C);
  push(&in->body, ls_store(&cx, 2, ix2(0, C, 1), lx_const_f(&cx, DT_F32, 2)));
  push(&in->body, ls_let(&cx, 0, load(1, ix2(0, C, 1))));
  push(&o->body, in);
  assert_false(ok(p, 0, 2, 1));
}

static void a_read_in_an_earlier_statement_of_the_iteration_is_in_place(void **state) {
  (void)state;  // l0 = y[e] in a statement before the store x[e] = l0 * 2 of the same iteration
  LStmt *o;
  LProgram *p = program(&o);
  LStmt *in = ls_loop(&cx, 1, C);
  push(&in->body, ls_let(&cx, 0, load(1, ix2(0, C, 1))));
  push(&in->body, ls_store(&cx, 2, ix2(0, C, 1), twice(lx_local(&cx, DT_F32, 0))));
  push(&o->body, in);
  assert_true(ok(p, 0, 2, 1));
}

static void a_read_of_the_whole_row_before_its_writes_is_not(void **state) {
  (void)state;  // for i0 { for i1 { l0 = y[C*i0 + C - 1 - i1] } ; for i1 { x[C*i0 + i1] = l0 } }: the
                // reads are before the writes, but not of the element each iteration writes
  LStmt *o;
  LProgram *p = program(&o);
  LStmt *r = ls_loop(&cx, 1, C), *w = ls_loop(&cx, 2, C);
  push(&o->body, ls_let(&cx, 0, lx_const_f(&cx, DT_F32, 0)));
  push(&r->body, ls_set(&cx, 0, load(1, ix2(C - 1, C, -1))));
  push(&o->body, r);
  LIndex wi = ix2(0, C, 0);
  wi.var[wi.nterms] = 2, wi.coef[wi.nterms++] = 1;
  push(&w->body, ls_store(&cx, 2, wi, lx_local(&cx, DT_F32, 0)));
  push(&o->body, w);
  assert_false(ok(p, 0, 2, 1));
}

static void a_read_in_a_loop_redefining_the_stores_var_is_not(void **state) {
  (void)state;  // for i0 { for i1 { for i0 { l0 = y[C*i0 + i1] } x[C*i0 + i1] = l0 } }: the inner i0 reads
                // every row's element, written over by the rows before
  LStmt *o;
  LProgram *p = program(&o);
  LStmt *in = ls_loop(&cx, 1, C), *again = ls_loop(&cx, 0, R);
  push(&again->body, ls_set(&cx, 0, load(1, ix2(0, C, 1))));
  push(&in->body, ls_let(&cx, 0, lx_const_f(&cx, DT_F32, 0)));
  push(&in->body, again);
  push(&in->body, ls_store(&cx, 2, ix2(0, C, 1), lx_local(&cx, DT_F32, 0)));
  push(&o->body, in);
  assert_false(ok(p, 0, 2, 1));
}

static void a_read_inside_another_loads_index_is_not(void **state) {
  (void)state;  // x[C*i0 + i1] = a[checked(y[i1], C)]: the gather's index reads row 0 of y, which the
                // first row's iteration writes over (index_select of an arange, run.scatter's case)
  LStmt *o;
  LProgram *p = program(&o);
  LStmt *in = ls_loop(&cx, 1, C);
  LExpr *at = lx_new(&cx, LX_CHECKED_INDEX, DT_I64);
  at->a = lx_cast(&cx, DT_I64, load(1, ix2(0, 0, 1)));
  at->i = C;
  LIndex gi = ix2(0, C, 0);
  gi.dyn = at;
  push(&in->body, ls_store(&cx, 2, ix2(0, C, 1), lx_load(&cx, DT_F32, 0, gi)));
  push(&o->body, in);
  assert_false(ok(p, 0, 2, 1));
}

static void an_element_written_twice_is_not(void **state) {
  (void)state;  // for i0 { for i1 { x[C*i0] = y[C*i0] * 2 } }: the second write follows the first's read
  LStmt *o;
  LProgram *p = program(&o);
  LStmt *in = ls_loop(&cx, 1, C);
  push(&in->body, ls_store(&cx, 2, ix2(0, C, 0), twice(load(1, ix2(0, C, 0)))));
  push(&o->body, in);
  assert_false(ok(p, 0, 2, 1));
}

static void an_index_folding_two_loops_together_is_not(void **state) {
  (void)state;  // for i0 { for i1 { x[i0 + i1] = y[i0 + i1] * 2 } }: x[1] is written at (0, 1) and (1, 0)
  LStmt *o;
  LProgram *p = program(&o);
  LStmt *in = ls_loop(&cx, 1, C);
  push(&in->body, ls_store(&cx, 2, ix2(0, 1, 1), twice(load(1, ix2(0, 1, 1)))));
  push(&o->body, in);
  assert_false(ok(p, 0, 2, 1));
}

static void two_stores_of_one_element_are_not(void **state) {
  (void)state;  // x[e] = y[e] * 2 in one nest, x[e] = y[e] in a second nest over the same elements
  LProgram *p = elementwise(0);
  LStmt *o2 = ls_loop(&cx, 0, R), *in = ls_loop(&cx, 1, C);
  push(&in->body, ls_store(&cx, 2, ix2(0, C, 1), load(1, ix2(0, C, 1))));
  push(&o2->body, in);
  push(&p->kernels.data[0]->body, o2);
  assert_false(ok(p, 0, 2, 1));
}

static void a_read_outside_the_loops_of_its_store_is_not(void **state) {
  (void)state;  // l0 = y[0] before the nest: it runs before x[0] is written, but outside the store's
                // loops (a read hoisted out of them), which is not proven: refused
  LProgram *p = elementwise(0);
  LKernel *k = p->kernels.data[0];
  LStmt *first = ls_let(&cx, 0, load(1, ix2(0, 0, 0)));
  push(&k->body, first);
  k->body.data[1] = k->body.data[0];
  k->body.data[0] = first;
  assert_false(ok(p, 0, 2, 1));
}

// for i0 { if (i0 < split) { for i1 { x[C*i0 + i1] = y[C*i0 + i1] * 2 } }
//          if (!(i0 < R - 1)) { for i1 { x[C*(R-1) + i1] = y[C*(R-1) + i1] * 2 } } }:
// the last row in a branch of its own (ir/gemm.c's last column block), its index
// without i0
static LProgram *last_row_apart(int64_t split) {
  LStmt *o;
  LProgram *p = program(&o);
  LExpr *lt = lx_binary(&cx, OP_LT, DT_BOOL, lx_var(&cx, 0), lx_const_i(&cx, DT_I64, split));
  LExpr *ge = lx_unary(&cx, OP_LOGICAL_NOT, DT_BOOL,
                       lx_binary(&cx, OP_LT, DT_BOOL, lx_var(&cx, 0), lx_const_i(&cx, DT_I64, R - 1)));
  LStmt *body = ls_if(&cx, lt), *last = ls_if(&cx, ge), *in = ls_loop(&cx, 1, C), *in2 = ls_loop(&cx, 1, C);
  push(&in->body, ls_store(&cx, 2, ix2(0, C, 1), twice(load(1, ix2(0, C, 1)))));
  push(&in2->body, ls_store(&cx, 2, ix2(C * (R - 1), 0, 1), twice(load(1, ix2(C * (R - 1), 0, 1)))));
  push(&body->body, in);
  push(&last->body, in2);
  push(&o->body, body);
  push(&o->body, last);
  return p;
}

static void a_last_row_in_a_branch_of_its_own_is_in_place(void **state) {
  (void)state;  // the ifs bound i0: rows 0..R-2 in the first, R-1 in the second, each once
  assert_true(ok(last_row_apart(R - 1), 0, 2, 1));
}

static void branches_that_both_write_the_last_row_are_not(void **state) {
  (void)state;  // if (i0 < R) leaves the last row to the first branch too: written twice
  assert_false(ok(last_row_apart(R), 0, 2, 1));
}

static void a_gpu_program_or_a_written_y_is_not(void **state) {
  (void)state;
  LProgram *p = elementwise(0);
  p->cpu = false;
  assert_false(ok(p, 0, 2, 1));
  p = elementwise(0);
  p->kernels.data[0]->args.data[1].written = true;
  assert_false(ok(p, 0, 2, 1));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
int main(void) {
  const struct CMUnitTest tests[] = {
      T(an_elementwise_read_of_the_element_written_is_in_place),
      T(a_read_of_the_next_element_is_not),
      T(a_read_of_the_element_before_is_not),
      T(a_read_after_the_store_in_the_iteration_is_not),
      T(a_read_in_an_earlier_statement_of_the_iteration_is_in_place),
      T(a_read_of_the_whole_row_before_its_writes_is_not),
      T(a_read_in_a_loop_redefining_the_stores_var_is_not),
      T(a_read_inside_another_loads_index_is_not),
      T(an_element_written_twice_is_not),
      T(an_index_folding_two_loops_together_is_not),
      T(two_stores_of_one_element_are_not),
      T(a_read_outside_the_loops_of_its_store_is_not),
      T(a_gpu_program_or_a_written_y_is_not),
      T(a_last_row_in_a_branch_of_its_own_is_in_place),
      T(branches_that_both_write_the_last_row_are_not),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
