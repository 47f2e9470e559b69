// tests/unit/test_sched_gpu.c: ir/sched_gpu.c, the GPU schedule (LGpuSched). Programs
// are built for a GPU by the whole pipeline (parse, sema, lower, fuse, kernel_build
// without a CpuTarget, loop_verify, sched_gpu) or by hand over ir/loop.h's
// constructors, and each test checks the mapping one kernel gets: its CUDA shape and
// launch, the roles of a row's statements, the matmul tile, and the NVVM plan's spread
// loops. What the backends print from it is checked by the golden and snapshot tests.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "frontend/frontend.h"
#include "ir/loop.h"

// The first kernel of the only function of src, built for a GPU and scheduled.
static LKernel *gpu_kernel(Ctx *cx, const char *src) {
  ctx_init(cx);
  SrcFile *f = srcfile_from_string(cx, "t.tdsl", src, strlen(src));
  Program prog = {0};
  prog.ast = parse_program(cx, f);
  assert_non_null(prog.ast);
  assert_true(sema_check(cx, &prog));
  Graph *g = lower_fn(cx, &prog, prog.fns.data[0]);
  fuse_graph(g);
  LProgram *p = kernel_build(cx, g, NULL);
  loop_verify(p);
  sched_gpu(cx, p);
  assert_int_equal(cx->nerrors, 0);
  assert_true(p->kernels.len >= 1);
  return p->kernels.data[0];
}

// ---- kernels by hand ----
static LKernel *hand_kernel(Ctx *cx, int nargs, int nvars) {
  ctx_init(cx);
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = "k0";
  k->kind = KK_EW;
  k->nvars = nvars;
  for (int i = 0; i < nargs; i++)
    vec_push(&cx->arena, &k->args, ((LArg){.buf = i, .read = true, .written = true}));
  return k;
}

// base + c0 * var v0 + c1 * var v1
static LIndex at2(int64_t base, int v0, int64_t c0, int v1, int64_t c1) {
  LIndex ix = {.base = base, .nterms = 2, .var = {v0, v1}, .coef = {c0, c1}};
  return ix;
}

static LStmt *add(Ctx *cx, LStmtList *l, LStmt *s) {
  vec_push(&cx->arena, l, s);
  return s;
}

// ---- the tests ----
static void elementwise_kernel_is_one_grid_stride_loop_over_its_elements(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(x: f32[4, 8], b: f32[8]) -> f32[4, 8] {\n  return relu(x * 2 + b)\n}\n");
  const LGpuSched *gs = k->gpu;
  assert_int_equal(k->kind, KK_EW);
  assert_int_equal(gs->shape, GK_FLAT);
  assert_int_equal(gs->outer.n, 2);
  assert_int_equal(gs->outer.total, 32);
  assert_true(gs->outer.read[0] && gs->outer.read[1]);
  assert_int_equal(gs->block, 256);
  assert_int_equal(gs->grid, 1);
  // the NVVM plan spreads the same two loops
  assert_int_equal(gs->iters, 32);
  assert_int_equal(gs->spread[0].n, 2);
  assert_ptr_equal(gs->spread[0].loops[0], gs->outer.loops[0]);
  ctx_free(&cx);
}

static void softmax_row_gets_a_block_per_row_with_block_reductions(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(x: f32[6, 100]) -> f32[6, 100] {\n  return x.softmax(-1)\n}\n");
  const LGpuSched *gs = k->gpu;
  assert_int_equal(k->kind, KK_ROW);
  assert_non_null(k->softmax);
  assert_int_equal(gs->shape, GK_ROWS);
  assert_int_equal(gs->outer.n, 1);
  assert_int_equal(gs->grid, 6);
  assert_int_equal(gs->block, 128);  // the 100 iterations split, rounded up to a power of two
  assert_int_equal(gs->nshared, 1);
  // let m; max over the row; let s; sum over the row; let r; the normalised row
  const LGpuBlockList *row = &gs->row;
  assert_int_equal(row->len, 6);
  LGpuRole want[6] = {GB_EVERY, GB_REDUCE, GB_EVERY, GB_REDUCE, GB_EVERY, GB_SPLIT};
  for (int i = 0; i < 6; i++) {
    assert_int_equal(row->data[i]->role, want[i]);
    assert_false(row->data[i]->sync);  // every pass only reads x until the last writes
  }
  assert_ptr_equal(row->data[1]->s, k->softmax->max_loop);
  assert_false(row->data[1]->red.argform);
  assert_int_equal(row->data[1]->red.nacc, 1);
  assert_int_equal(row->data[1]->red.op[0], OP_MAXIMUM);
  assert_ptr_equal(row->data[3]->s, k->softmax->sum_loop);
  assert_int_equal(row->data[3]->red.op[0], OP_ADD);
  assert_ptr_equal(row->data[5]->s, k->softmax->final_loop);
  assert_int_equal(row->data[5]->nest.total, 100);
  // NVVM: a thread per row
  assert_int_equal(gs->iters, 6);
  assert_int_equal(gs->spread[0].n, 1);
  ctx_free(&cx);
}

static void argmax_row_reduces_the_value_and_its_index_together(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(x: f32[6, 100]) -> i64[6] {\n  return x.argmax(-1)\n}\n");
  const LGpuSched *gs = k->gpu;
  assert_int_equal(gs->shape, GK_ROWS);
  const LGpuBlock *red = NULL;
  for (int i = 0; i < gs->row.len; i++)
    if (gs->row.data[i]->role == GB_REDUCE)
      red = gs->row.data[i];
  assert_non_null(red);
  assert_true(red->red.argform);
  assert_int_equal(red->red.nacc, 2);  // the best value and its index
  assert_non_null(red->red.cond_if);
  assert_int_equal(gs->nshared, 3);    // a slot group per accumulator and one for the key
  ctx_free(&cx);
}

static void sum_of_everything_is_one_block_on_cuda_and_serial_on_nvvm(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(x: f32[1000]) -> f32[] {\n  return x.sum()\n}\n");
  const LGpuSched *gs = k->gpu;
  assert_int_equal(gs->shape, GK_ROWS);
  assert_int_equal(gs->outer.n, 0);  // one row: the kernel's body
  assert_ptr_equal(gs->outer.body, &k->body);
  assert_int_equal(gs->grid, 1);
  assert_int_equal(gs->block, 256);
  // the NVVM builder spreads only top-level loops; the accumulator's let is not one
  assert_int_equal(gs->iters, 0);
  ctx_free(&cx);
}

static void matmul_of_the_plain_nest_gets_sixteen_by_sixteen_tiles(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(a: f32[40, 30], b: f32[50, 30]) -> f32[40, 50] {\n  return a @ b.t()\n}\n");
  const LGpuSched *gs = k->gpu;
  assert_int_equal(k->kind, KK_MATMUL);
  assert_int_equal(k->mm->form, LM_DOT);
  assert_int_equal(gs->shape, GK_MATMUL);
  const LGpuTile *t = &gs->tile;
  assert_int_equal(t->edge, 16);
  assert_int_equal(t->batch.n, 0);
  assert_ptr_equal(t->i, k->mm->outer[0]);
  assert_ptr_equal(t->j, k->mm->outer[1]);
  assert_int_equal(t->ni, 3);
  assert_int_equal(t->nj, 4);
  assert_int_equal(t->ntiles, 12);
  assert_int_equal(gs->grid, 12);
  assert_int_equal(gs->block, 256);
  assert_true(t->a_kfast);   // a's rows are contiguous along k
  assert_false(t->b_jfast);  // so are b.t()'s columns: threads walk k there too
  ctx_free(&cx);
}

static void matmul_in_the_gpu_row_form_runs_a_thread_per_row(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(a: f32[40, 30], b: f32[30, 50]) -> f32[40, 50] {\n  return a @ b\n}\n");
  assert_int_equal(k->kind, KK_MATMUL);
  assert_int_equal(k->mm->form, LM_ROWS);
  assert_int_equal(k->gpu->shape, GK_SERIAL);
  ctx_free(&cx);
}

// for i0 in 0..4 { for i1 in 0..8 { b1[8*i0 + i1] = b0[8*i0 + i1] }
//                  for i2 in 0..8 { b2[8*i0 + i2] = b1[8*i0 + i2] } }
static void row_statement_reading_what_an_earlier_one_wrote_waits_at_a_barrier(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = hand_kernel(&cx, 3, 3);
  LStmt *rows = add(&cx, &k->body, ls_loop(&cx, 0, 4));
  LStmt *first = add(&cx, &rows->body, ls_loop(&cx, 1, 8));
  add(&cx, &first->body, ls_store(&cx, 1, at2(0, 0, 8, 1, 1), lx_load(&cx, DT_F32, 0, at2(0, 0, 8, 1, 1))));
  LStmt *second = add(&cx, &rows->body, ls_loop(&cx, 2, 8));
  add(&cx, &second->body, ls_store(&cx, 2, at2(0, 0, 8, 2, 1), lx_load(&cx, DT_F32, 1, at2(0, 0, 8, 2, 1))));
  const LGpuSched *gs = sched_gpu_kernel(&cx, k);
  assert_null(k->gpu);  // decided, not recorded
  assert_int_equal(gs->shape, GK_ROWS);
  assert_int_equal(gs->outer.n, 1);
  assert_int_equal(gs->row.len, 2);
  assert_int_equal(gs->row.data[0]->role, GB_SPLIT);
  assert_false(gs->row.data[0]->sync);
  assert_int_equal(gs->row.data[1]->role, GB_SPLIT);
  assert_true(gs->row.data[1]->sync);  // the threads that wrote b1's row are others
  assert_int_equal(gs->block, 32);
  // NVVM: the rows spread; within a row each thread runs both loops in order
  assert_int_equal(gs->iters, 4);
  assert_int_equal(gs->spread[0].n, 1);
  ctx_free(&cx);
}

// for i0 in 0..4 { for i1 in 0..8 { b0[i1] = b0[i1] + 1 } }: every row writes the same
// elements, so the rows share one thread and the block splits nothing.
static void rows_writing_the_same_elements_stay_on_one_thread(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = hand_kernel(&cx, 1, 2);
  LStmt *rows = add(&cx, &k->body, ls_loop(&cx, 0, 4));
  LStmt *inner = add(&cx, &rows->body, ls_loop(&cx, 1, 8));
  LIndex ix = {.base = 0, .nterms = 1, .var = {1}, .coef = {1}};
  LExpr *v = lx_binary(&cx, OP_ADD, DT_F32, lx_load(&cx, DT_F32, 0, ix), lx_const_f(&cx, DT_F32, 1));
  add(&cx, &inner->body, ls_store(&cx, 0, ix, v));
  const LGpuSched *gs = sched_gpu_kernel(&cx, k);
  assert_int_equal(gs->outer.n, 0);
  assert_int_equal(gs->shape, GK_ROWS);  // the inner loop alone splits, in one block
  assert_int_equal(gs->grid, 1);
  assert_int_equal(gs->row.data[0]->role, GB_EVERY);
  assert_int_equal(gs->row.data[0]->body.data[0]->role, GB_SPLIT);
  // NVVM: the outer loop is not distributable, the inner one is not outermost
  assert_int_equal(gs->iters, 0);
  assert_int_equal(gs->spread[0].n, 0);
  ctx_free(&cx);
}

static void sched_gpu_records_each_kernels_schedule(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(x: f32[4, 8]) -> f32[4, 8] {\n  return x * 2\n}\n");
  assert_non_null(k->gpu);
  assert_ptr_equal(sched_gpu_kernel(&cx, k), k->gpu);
  ctx_free(&cx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(elementwise_kernel_is_one_grid_stride_loop_over_its_elements),
      cmocka_unit_test(softmax_row_gets_a_block_per_row_with_block_reductions),
      cmocka_unit_test(argmax_row_reduces_the_value_and_its_index_together),
      cmocka_unit_test(sum_of_everything_is_one_block_on_cuda_and_serial_on_nvvm),
      cmocka_unit_test(matmul_of_the_plain_nest_gets_sixteen_by_sixteen_tiles),
      cmocka_unit_test(matmul_in_the_gpu_row_form_runs_a_thread_per_row),
      cmocka_unit_test(row_statement_reading_what_an_earlier_one_wrote_waits_at_a_barrier),
      cmocka_unit_test(rows_writing_the_same_elements_stay_on_one_thread),
      cmocka_unit_test(sched_gpu_records_each_kernels_schedule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
