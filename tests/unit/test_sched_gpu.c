// tests/unit/test_sched_gpu.c: ir/sched_gpu.c (and ir/gpu_row.c), the GPU schedule.
// Programs are built for a GPU by the whole pipeline (parse, sema, lower, fuse,
// kernel_build without a CpuTarget, share_kernels, sched_gpu, loop_verify) or by hand
// over ir/loop.h's constructors; each test checks the GPU form a kernel gets — its
// schedule, launch and the statements that make it (grid-stride loops, vector
// accesses, shuffles, barriers, shared memory) — and loop_verify accepts it. What the
// backends print from it is checked by the golden tests, test_ptx.c, and what it
// computes by tests/run/test_shim.py.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ir/loop.h"

// The kernels of the only function of src, built for a GPU (target sm) and scheduled.
static LProgram *gpu_program(Ctx *cx, const char *src, int sm) {
  ctx_init(cx);
  SrcFile *f = srcfile_from_string(cx, "t.tdsl", src, strlen(src));
  Program prog = {0};
  prog.ast = parse_program(cx, f);
  assert_non_null(prog.ast);
  assert_true(sema_check(cx, &prog));
  Graph *g = lower_fn(cx, &prog, prog.fns.data[0], false);
  fuse_graph(g);
  LProgram *p = kernel_build(cx, g, NULL);
  loop_verify(p);
  share_kernels(cx, p);
  GpuTarget t = gpu_target(NULL);
  t.sm = sm;
  sched_gpu(cx, p, &t);
  loop_verify(p);
  assert_int_equal(cx->nerrors, 0);
  assert_true(p->kernels.len >= 1);
  return p;
}

static LKernel *gpu_kernel(Ctx *cx, const char *src) { return gpu_program(cx, src, 80)->kernels.data[0]; }

// ---- counting what a GPU form holds ----
typedef struct Count {
  int block_syncs, warp_syncs, shuffles, bound_loops, vector_loads, vector_stores, vars;
} Count;

static void count_expr(const LExpr *e, Count *c) {
  if (!e)
    return;
  c->shuffles += e->kind == LX_SHFL;
  c->vector_loads += e->kind == LX_LOAD && e->lanes > 1;
  if (e->kind == LX_LOAD)
    count_expr(e->idx.dyn, c);
  count_expr(e->a, c);
  count_expr(e->b, c);
  count_expr(e->c, c);
}

static void count_list(const LStmtList *l, Count *c) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    c->block_syncs += s->kind == LS_SYNC && s->extent == 0;
    c->warp_syncs += s->kind == LS_SYNC && s->extent == 32;
    c->bound_loops += s->kind == LS_LOOP && (s->start || s->step);
    c->vector_stores += s->kind == LS_STORE && s->val->lanes > 1;
    c->vars += s->kind == LS_VAR;
    count_expr(s->val, c);
    count_expr(s->cond, c);
    count_expr(s->start, c);
    count_expr(s->step, c);
    count_list(&s->body, c);
  }
}

static Count count(const LKernel *k) {
  Count c = {0};
  count_list(&k->body, &c);
  return c;
}

static int shared_args(const LProgram *p, const LKernel *k) {
  int n = 0;
  for (int i = 0; i < k->args.len; i++)
    n += p->bufs.data[k->args.data[i].buf].kind == LB_SHARED;
  return n;
}

// ---- kernels by hand: a program of nbufs f32 parameters of numel elements ----
static LProgram *hand_program(Ctx *cx, int nbufs, int64_t numel, int nvars) {
  ctx_init(cx);
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = "h";
  for (int i = 0; i < nbufs; i++)
    vec_push(&cx->arena, &p->bufs, ((LBuf){LB_RESULT, DT_F32, numel, "b", -1, false, false}));
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = "k0";
  k->kind = KK_EW;
  k->nvars = nvars;
  for (int i = 0; i < nbufs; i++)
    vec_push(&cx->arena, &k->args, ((LArg){.buf = i, .read = true, .written = true}));
  vec_push(&cx->arena, &p->kernels, k);
  return p;
}

static void schedule_hand(Ctx *cx, LProgram *p) {
  loop_verify(p);
  GpuTarget t = gpu_target(NULL);
  sched_gpu(cx, p, &t);
  loop_verify(p);
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

// ---- elementwise ----
static void elementwise_kernel_is_one_grid_stride_loop_of_128_bit_accesses(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(x: f32[64, 128], b: f32[128]) -> f32[64, 128] {\n  return relu(x * 2 + b)\n}\n");
  const LGpuSched *gs = k->gpu;
  assert_int_equal(k->kind, KK_EW);
  assert_string_equal(gs->name, "elementwise, 4-lane vectors");
  assert_string_equal(k->sched, gs->name);
  assert_int_equal(gs->block, 256);
  assert_int_equal(gs->grid, 8);  // 8192 elements, 4 a thread, 256 threads a block
  assert_true(gs->tid >= 0 && gs->ctaid >= 0);
  Count c = count(k);
  assert_int_equal(c.bound_loops, 1);   // for f in ctaid * 256 + tid .. 2048 step 2048
  assert_int_equal(c.vector_loads, 2);  // x's four lanes, b's four
  assert_int_equal(c.vector_stores, 1);
  assert_int_equal(c.block_syncs + c.warp_syncs + c.shuffles, 0);
  const LStmt *loop = k->body.data[0];
  assert_int_equal(loop->extent, 2048);
  assert_non_null(loop->start);
  assert_non_null(loop->step);
  ctx_free(&cx);
}

static void elementwise_accesses_that_do_not_line_up_stay_scalar(void **state) {
  (void)state;
  Ctx cx;
  // an odd innermost extent: no lanes divide it
  LKernel *k = gpu_kernel(&cx, "fn f(x: f32[64, 129]) -> f32[64, 129] {\n  return x * 2\n}\n");
  assert_string_equal(k->gpu->name, "elementwise");
  assert_int_equal(count(k).vector_loads, 0);
  ctx_free(&cx);
  // a small tensor is not worth it
  k = gpu_kernel(&cx, "fn f(x: f32[4, 8]) -> f32[4, 8] {\n  return x * 2\n}\n");
  assert_string_equal(k->gpu->name, "elementwise");
  assert_int_equal(k->gpu->grid, 1);
  ctx_free(&cx);
}

static void elementwise_grid_stops_at_the_target_cap(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(x: f32[4096, 4096]) -> f32[4096, 4096] {\n  return x + 1\n}\n");
  assert_int_equal(k->gpu->grid, 8 * 132);
  ctx_free(&cx);
  setenv("TDSL_GPU_GRID", "1", 1);  // the tests' one-block grid
  GpuTarget t = gpu_target("sm_90");
  unsetenv("TDSL_GPU_GRID");
  assert_int_equal(t.max_grid, 1);
  assert_int_equal(t.sm, 90);
}

// ---- rows ----
static void short_softmax_rows_get_a_warp_each(void **state) {
  (void)state;
  Ctx cx;
  LProgram *p = gpu_program(&cx, "fn f(x: f32[64, 100]) -> f32[64, 100] {\n  return x.softmax(-1)\n}\n", 80);
  const LKernel *k = p->kernels.data[0];
  const LGpuSched *gs = k->gpu;
  assert_int_equal(k->kind, KK_ROW);
  assert_string_equal(gs->name, "warp per row");
  assert_int_equal(gs->block, 256);
  assert_int_equal(gs->grid, 8);  // 64 rows, 8 warps a block
  assert_true(gs->lane >= 0 && gs->warp >= 0 && gs->ctaid >= 0);
  Count c = count(k);
  assert_int_equal(c.shuffles, 10);  // two butterflies of five
  assert_int_equal(c.warp_syncs, 2);
  assert_int_equal(c.block_syncs, 0);
  assert_int_equal(shared_args(p, k), 0);
  ctx_free(&cx);
}

static void long_rows_get_a_block_whose_warps_meet_in_shared_memory(void **state) {
  (void)state;
  Ctx cx;
  LProgram *p = gpu_program(&cx, "fn f(x: f32[6, 4000]) -> f32[6, 4000] {\n  return x.softmax(-1)\n}\n", 80);
  const LKernel *k = p->kernels.data[0];
  const LGpuSched *gs = k->gpu;
  assert_string_equal(gs->name, "block of 512 per row");
  assert_int_equal(gs->block, 512);
  assert_int_equal(gs->grid, 6);
  Count c = count(k);
  assert_int_equal(c.shuffles, 10);
  assert_int_equal(c.block_syncs, 4);  // after each partial result is written, after it is read
  assert_int_equal(shared_args(p, k), 2);
  ctx_free(&cx);
}

static void argmax_rows_carry_the_iteration_with_the_candidate(void **state) {
  (void)state;
  Ctx cx;
  LProgram *p = gpu_program(&cx, "fn f(x: f32[3, 5000]) -> i64[3] {\n  return x.argmax(-1)\n}\n", 80);
  const LKernel *k = p->kernels.data[0];
  Count c = count(k);
  assert_int_equal(c.shuffles, 15);    // the value, its index and the key, five steps down
  assert_int_equal(shared_args(p, k), 3);  // the warps' value, index and key
  ctx_free(&cx);
}

static void sum_of_everything_is_one_block(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn f(x: f32[1000]) -> f32[] {\n  return x.sum()\n}\n");
  assert_int_equal(k->gpu->grid, 1);
  assert_int_equal(k->gpu->block, 256);
  assert_string_equal(k->gpu->name, "block of 256 per row");
  ctx_free(&cx);
}

// for i0 in 0..4 { for i1 in 0..64 { b1[64*i0 + i1] = b0[64*i0 + i1] }
//                  for i2 in 0..64 { b2[64*i0 + i2] = b1[64*i0 + 63 - i2] } }
static void row_statement_reading_what_another_thread_wrote_waits_at_a_barrier(void **state) {
  (void)state;
  Ctx cx;
  LProgram *p = hand_program(&cx, 3, 256, 3);
  LKernel *k = p->kernels.data[0];
  LStmt *rows = add(&cx, &k->body, ls_loop(&cx, 0, 4));
  LStmt *first = add(&cx, &rows->body, ls_loop(&cx, 1, 64));
  add(&cx, &first->body, ls_store(&cx, 1, at2(0, 0, 64, 1, 1), lx_load(&cx, DT_F32, 0, at2(0, 0, 64, 1, 1))));
  LStmt *second = add(&cx, &rows->body, ls_loop(&cx, 2, 64));
  add(&cx, &second->body, ls_store(&cx, 2, at2(0, 0, 64, 2, 1), lx_load(&cx, DT_F32, 1, at2(63, 0, 64, 2, -1))));
  schedule_hand(&cx, p);
  assert_string_equal(k->gpu->name, "block of 64 per row");
  Count c = count(k);
  assert_int_equal(c.block_syncs, 1);  // between the two split loops
  assert_int_equal(c.bound_loops, 3);  // the rows over the blocks, each loop over the threads
  ctx_free(&cx);
}

// for i0 in 0..4 { for i1 in 0..8 { b0[i1] = b0[i1] + 1 } }: every row writes the same
// elements, so the rows run one after another; the inner loop alone is split.
static void rows_writing_the_same_elements_are_not_spread(void **state) {
  (void)state;
  Ctx cx;
  LProgram *p = hand_program(&cx, 1, 8, 2);
  LKernel *k = p->kernels.data[0];
  LStmt *rows = add(&cx, &k->body, ls_loop(&cx, 0, 4));
  LStmt *inner = add(&cx, &rows->body, ls_loop(&cx, 1, 8));
  LIndex ix = {.base = 0, .nterms = 1, .var = {1}, .coef = {1}};
  LExpr *v = lx_binary(&cx, OP_ADD, DT_F32, lx_load(&cx, DT_F32, 0, ix), lx_const_f(&cx, DT_F32, 1));
  add(&cx, &inner->body, ls_store(&cx, 0, ix, v));
  schedule_hand(&cx, p);
  assert_int_equal(k->gpu->grid, 1);  // one row: the kernel's body, in one block
  const LStmt *row = k->body.data[0];
  assert_int_equal(row->extent, 1);
  const LStmt *outer = row->body.data[0];  // every thread runs the loop over rows...
  assert_int_equal(outer->kind, LS_LOOP);
  assert_null(outer->start);
  assert_int_equal(outer->extent, 4);
  Count c = count(k);
  assert_int_equal(c.block_syncs, 1);  // ...each row's split ending at a barrier
  ctx_free(&cx);
}

static void nests_writing_apart_run_over_the_whole_grid(void **state) {
  (void)state;
  Ctx cx;
  LKernel *k = gpu_kernel(&cx, "fn c(a: f32[64, 300], b: f32[64, 500]) -> f32[64, 800] {\n  return cat([a, b], 1)\n}\n");
  assert_string_equal(k->gpu->name, "several nests, elementwise, 4-lane vectors");
  Count c = count(k);
  assert_int_equal(c.bound_loops, 2);
  assert_int_equal(c.block_syncs, 0);
  ctx_free(&cx);
}

static void layers_with_the_same_code_share_one_schedule(void **state) {
  (void)state;
  Ctx cx;
  LProgram *p = gpu_program(&cx,
                            "fn f(x: f32[3, 64], w: f32[4, 64, 64]) -> f32[3, 64] {\n    h = x\n"
                            "    for i in range(4) {\n        h = (h @ w[i]).tanh()\n    }\n    return h\n}\n",
                            80);
  int shared = 0;
  for (int i = 0; i < p->kernels.len; i++) {
    const LKernel *k = p->kernels.data[i];
    assert_non_null(k->gpu);
    if (k->same) {
      shared++;
      assert_ptr_equal(k->gpu, k->same->gpu);
    }
  }
  assert_true(shared >= 3);
  ctx_free(&cx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(elementwise_kernel_is_one_grid_stride_loop_of_128_bit_accesses),
      cmocka_unit_test(elementwise_accesses_that_do_not_line_up_stay_scalar),
      cmocka_unit_test(elementwise_grid_stops_at_the_target_cap),
      cmocka_unit_test(short_softmax_rows_get_a_warp_each),
      cmocka_unit_test(long_rows_get_a_block_whose_warps_meet_in_shared_memory),
      cmocka_unit_test(argmax_rows_carry_the_iteration_with_the_candidate),
      cmocka_unit_test(sum_of_everything_is_one_block),
      cmocka_unit_test(row_statement_reading_what_another_thread_wrote_waits_at_a_barrier),
      cmocka_unit_test(rows_writing_the_same_elements_are_not_spread),
      cmocka_unit_test(nests_writing_apart_run_over_the_whole_grid),
      cmocka_unit_test(layers_with_the_same_code_share_one_schedule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
