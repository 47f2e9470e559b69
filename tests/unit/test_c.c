// tests/unit/test_c.c: codegen/c.c and runtime/entry.c. Each test prints programs as C
// (built by the whole pipeline from source, or by hand with the lx_*/ls_* constructors),
// compiles them with `cc -std=c11 -O2 -Wall -Werror -shared -fPIC`, loads the
// object with dlopen and calls the entry the way a C user would (vector programs with
// the driver's -march=native flags, for the host's vector units). The object resolves
// tdsl_* to this executable's runtime (the build exports it, as it does for tdslc).
// Expected values are computed here independently: by hand, by the runtime's own
// f16/bf16 conversions, or by plain C arithmetic on int64. Building programs, tensors
// and the checks test_llvm.c runs on its own entries come from codegen_fixture.c.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen_fixture.h"

#ifndef TDSL_INCLUDE_DIR
#define TDSL_INCLUDE_DIR "../../runtime"
#endif

// ---- building and loading generated code ----
typedef struct Lib {
  Ctx cx;
  void *so;
  char dir[256];
} Lib;

// Compiles the C of progs with extra cc flags; returns cc's exit status. keep: the
// path of the source written (NULL: none kept).
static int cc_build(Lib *l, LProgram **progs, int n, const char *flags, bool shared) {
  snprintf(l->dir, sizeof l->dir, "/tmp/tdsl-test-c-XXXXXX");
  assert_non_null(mkdtemp(l->dir));
  char src[512], so[512], cmd[2048];
  snprintf(src, sizeof src, "%s/gen.c", l->dir);
  snprintf(so, sizeof so, "%s/gen.so", l->dir);
  FILE *f = fopen(src, "w");
  assert_non_null(f);
  target_c.emit(&l->cx, progs, n, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc -std=c11 -O2 -Wall -Werror %s %s -I%s -o %s %s -lm", flags,
           shared ? "-shared -fPIC -Wl,-Bsymbolic" : "-c", TDSL_INCLUDE_DIR, so, src);
  int rc = system(cmd);
  if (rc != 0)
    fprintf(stderr, "failed: %s\n", cmd);
  if (shared && rc == 0) {
    l->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!l->so)
      fprintf(stderr, "dlopen: %s\n", dlerror());
  }
  unlink(src);
  unlink(so);
  rmdir(l->dir);
  return rc;
}

static void load_progs(Lib *l, LProgram **progs, int n) {
  assert_int_equal(cc_build(l, progs, n, "", true), 0);
  assert_non_null(l->so);
}

static Lib *new_lib(void) {
  Lib *l = calloc(1, sizeof *l);
  assert_non_null(l);
  ctx_init(&l->cx);
  return l;
}

// Every function of src through the whole pipeline, compiled and loaded.
static Lib *load_src(const char *src) {
  Lib *l = new_lib();
  LProgram *progs[8];
  int n = fx_compile(&l->cx, src, progs, 8);
  load_progs(l, progs, n);
  return l;
}

static void unload(Lib *l) {
  // The object stays loaded: libgomp's worker threads may outlive a dlclose.
  ctx_free(&l->cx);
  free(l);
}

static void *sym(Lib *l, const char *name) {
  void *p = dlsym(l->so, name);
  assert_non_null(p);
  return p;
}

typedef int (*Fn1x2)(const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *);
typedef int (*Fn2x2)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *);

// ---- tests ----

static void fused_elementwise_program_computes_its_values(void **state) {
  (void)state;
  Lib *l = load_src(FX_ELEMENTWISE_SRC);
  fx_expect_elementwise((Fn2)sym(l, "f"));
  unload(l);
}

static void half_conversions_match_the_runtime_bit_for_bit(void **state) {
  (void)state;
  Lib *l = load_src("fn down(x: f32[64]) -> (f16[64], bf16[64]) {\n  return x.half(), x.bfloat16()\n}\n"
                    "fn up(h: f16[65536], b: bf16[65536]) -> (f32[65536], f32[65536]) {\n"
                    "  return h.float(), b.float()\n}\n");
  fx_expect_widening((FxHalfUp)sym(l, "up"));
  // narrowing rounds to nearest even: the edge cases, then values of every scale
  float xs[64];
  memcpy(xs, fx_half_edges, sizeof fx_half_edges);
  for (int i = FX_NHALF_EDGES; i < 64; i++)
    xs[i] = (float)((i * 7919) % 1000 - 500) * powf(2.0f, (float)(i % 40 - 30)) / 3.0f;
  fx_expect_narrowing((FxHalfDown)sym(l, "down"), xs, 64);
  unload(l);
}

static void integer_ops_follow_python_and_wrap(void **state) {
  (void)state;
  Lib *l = load_src("fn f(a: i64[8], b: i64[8]) -> (i64[8], i64[8], i64[8], i64[8], i64[8]) {\n"
                    "  return a // b, a % b, a * b, -a, a ** 3\n}\n");
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
           tdsl_tensor *) = (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
                                     tdsl_tensor *, tdsl_tensor *, tdsl_tensor *))sym(l, "f");
  tdsl_tensor a = fx_i64(FX_NINT, fx_int_a), b = fx_i64(FX_NINT, fx_int_b), o[5] = {{0}};
  assert_int_equal(f(&a, &b, &o[0], &o[1], &o[2], &o[3], &o[4]), TDSL_OK);
  fx_expect_int_ops(o);
  for (int i = 0; i < 5; i++)
    tdsl_tensor_release(&o[i]);
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  unload(l);
}

static void division_by_zero_is_a_located_data_error(void **state) {
  (void)state;
  Lib *l = load_src(FX_ZERO_DIVISION_SRC);
  fx_expect_zero_division((Fn2)sym(l, "f"));
  unload(l);
}

static void float_ops_propagate_nan_and_floor_like_pytorch(void **state) {
  (void)state;
  Lib *l = load_src("fn f(a: f32[6], b: f32[6]) -> (f32[6], f32[6], f32[6], i32[6]) {\n"
                    "  return maximum(a, b), a // b, a % b, a.int()\n}\n");
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
               tdsl_tensor *))sym(l, "f");
  tdsl_tensor a = fx_f32(FX_NFLOAT, fx_float_a), b = fx_f32(FX_NFLOAT, fx_float_b), o[4] = {{0}};
  assert_int_equal(f(&a, &b, &o[0], &o[1], &o[2], &o[3]), TDSL_OK);
  fx_expect_float_ops(o);
  for (int i = 0; i < 4; i++)
    tdsl_tensor_release(&o[i]);
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  unload(l);
}

static void wrong_argument_is_refused_with_both_types(void **state) {
  (void)state;
  Lib *l = load_src("fn f(x: f32[2, 3]) -> f32[2, 3] {\n  return x + 1\n}\n");
  Fn1 f = (Fn1)sym(l, "f");
  tdsl_tensor x = fx_tensor(TDSL_F64, 2, (int64_t[]){2, 3}), out = {0};
  assert_int_equal(f(&x, &out), TDSL_ERR_ARG);
  assert_string_equal(tdsl_last_error(), "f: argument 'x' must be f32[2, 3] but is f64[2, 3]");
  tdsl_tensor_release(&x);
  x = fx_tensor(TDSL_F32, 1, (int64_t[]){6});
  assert_int_equal(f(&x, &out), TDSL_ERR_ARG);
  assert_string_equal(tdsl_last_error(), "f: argument 'x' must be f32[2, 3] but is f32[6]");
  assert_null(out.storage);
  assert_int_equal(f(NULL, &out), TDSL_ERR_ARG);
  tdsl_tensor_release(&x);
  unload(l);
}

// A view result shares the caller's storage, offset by the caller's own offset; a
// non-contiguous argument is copied first and the view is over the copy.
static void view_result_views_the_callers_storage(void **state) {
  (void)state;
  Lib *l = load_src("fn f(x: f32[2, 3]) -> (f32[3, 2], f32[2, 3]) {\n  return x.t(), x * 10\n}\n");
  Fn1x2 f = (Fn1x2)sym(l, "f");
  float vals[8] = {-1, 0, 1, 2, 3, 4, 5, 6};
  tdsl_tensor x;
  assert_int_equal(tdsl_tensor_from_data(&x, TDSL_F32, 2, (int64_t[]){2, 3}, NULL, 2, vals, sizeof vals), 0);
  tdsl_tensor t = {0}, m = {0};
  assert_int_equal(f(&x, &t, &m), TDSL_OK);
  assert_ptr_equal(t.storage, x.storage);
  assert_int_equal(t.offset, 2);
  assert_int_equal(t.strides[0], 1);
  assert_int_equal(t.strides[1], 3);
  assert_true(tdsl_tensor_get_f64(&t, (int64_t[]){2, 1}) == 6);
  assert_true(tdsl_tensor_get_f64(&m, (int64_t[]){1, 2}) == 60);
  tdsl_tensor_release(&t);
  tdsl_tensor_release(&m);
  // a transposed (non-contiguous) argument of shape [2, 3]
  tdsl_tensor xt;
  assert_int_equal(tdsl_tensor_view(&xt, &x, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 2), 0);
  assert_int_equal(f(&xt, &t, &m), TDSL_OK);
  assert_ptr_not_equal(t.storage, x.storage);
  assert_int_equal(t.offset, 0);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      double want = vals[2 + i + 2 * j];
      assert_true(tdsl_tensor_get_f64(&t, (int64_t[]){j, i}) == want);
      assert_true(tdsl_tensor_get_f64(&m, (int64_t[]){i, j}) == want * 10);
    }
  assert_int_equal(x.storage->refcount, 2);  // x and xt: the entry kept no reference
  tdsl_tensor_release(&t);
  tdsl_tensor_release(&m);
  tdsl_tensor_release(&xt);
  tdsl_tensor_release(&x);
  unload(l);
}

static void mut_argument_is_updated_in_the_callers_storage(void **state) {
  (void)state;
  Lib *l = load_src("fn f(mut x: f32[2, 3]) -> f32[2, 3] {\n  x += 1\n  return x * 2\n}\n");
  int (*f)(tdsl_tensor *, tdsl_tensor *) = (int (*)(tdsl_tensor *, tdsl_tensor *))sym(l, "f");
  float vals[6] = {0, 1, 2, 3, 4, 5};
  tdsl_tensor base = fx_f32(6, vals), x, out = {0};
  // contiguous: written in place
  assert_int_equal(tdsl_tensor_view(&x, &base, 2, (int64_t[]){2, 3}, NULL, 0), 0);
  assert_int_equal(f(&x, &out), TDSL_OK);
  assert_true(((float *)tdsl_tensor_data(&base))[5] == 6);
  assert_true(tdsl_tensor_get_f64(&out, (int64_t[]){1, 2}) == 12);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&x);
  // transposed: copied in, run, written back through the caller's strides
  assert_int_equal(tdsl_tensor_view(&x, &base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0), 0);
  assert_int_equal(f(&x, &out), TDSL_OK);
  const float *bp = tdsl_tensor_data(&base);
  for (int i = 0; i < 6; i++)
    assert_true(bp[i] == vals[i] + 2);
  assert_true(tdsl_tensor_get_f64(&out, (int64_t[]){1, 0}) == 2 * (vals[1] + 2));
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&x);
  tdsl_tensor_release(&base);
  unload(l);
}

static void view_only_program_needs_no_kernel(void **state) {
  (void)state;
  Lib *l = load_src("fn f(x: i32[4, 4]) -> i32[2] {\n  return x.diagonal()[1:3]\n}\n");
  Fn1 f = (Fn1)sym(l, "f");
  tdsl_tensor x = fx_tensor(TDSL_I32, 2, (int64_t[]){4, 4}), out = {0};
  int32_t *xp = tdsl_tensor_data(&x);
  for (int i = 0; i < 16; i++)
    xp[i] = i;
  assert_int_equal(f(&x, &out), TDSL_OK);
  assert_ptr_equal(out.storage, x.storage);
  assert_int_equal(out.offset, 5);
  assert_int_equal(out.strides[0], 5);
  assert_int_equal(tdsl_tensor_get_i64(&out, (int64_t[]){1}), 10);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&x);
  unload(l);
}

// By hand (fx_gather_program): out[i] = x[checked(idx[i], 10)] over a parallel loop;
// several indices are bad, and the reported one is the first in iteration order,
// whatever the threads do.
static void first_index_error_wins_even_in_a_parallel_loop(void **state) {
  (void)state;
  Lib *l = new_lib();
  LProgram *progs[2] = {fx_gather_program(&l->cx, true, 1000), fx_gather_program(&l->cx, false, 1000)};
  load_progs(l, progs, 2);
  fx_expect_first_index_error((Fn2)sym(l, "gpar"), (Fn2)sym(l, "gseq"), 1000, (int64_t[]){300, 301, 700, 999});
  unload(l);
}

// ---- vector programs, by hand ----
// The 3x16 f32 micro-kernel over two column blocks (a parallel loop) of
// c[3, 32] = a[3, 7] @ b[7, 32]: three accumulators of 16 lanes, fma over k. Row 2
// starts from b's row 0 and then has its lane 0 subtracted from every lane (the whole
// vector is read before it is written); e gets single lanes: e[3 * blk + 0..3] =
// t0.5, t1.15 * 2, fma(t0.0, t1.1, 3).
static LProgram *micro_kernel_program(Ctx *cx) {
  LProgram *p = fx_program(cx, "mk");
  int a = fx_param(cx, p, "a", DT_F32, 1, (int64_t[]){21}), b = fx_param(cx, p, "b", DT_F32, 1, (int64_t[]){224});
  int c = fx_result(cx, p, "c", DT_F32, 1, (int64_t[]){96}), e = fx_result(cx, p, "e", DT_F32, 1, (int64_t[]){6});
  LKernel *k = fx_kernel(cx, p, (bool[]){true, true, false, false}, (bool[]){false, false, true, true}, 2);
  for (int i = 0; i < 3; i++)
    vec_push(&cx->arena, &k->locals, DT_F32);
  LStmt *blk = ls_loop(cx, 0, 2), *kl = ls_loop(cx, 1, 7);
  blk->parallel = true;
  LExpr *zero = lx_const_f(cx, DT_F32, 0);
  vec_push(&cx->arena, &blk->body, ls_let(cx, 0, lx_splat(cx, 16, zero)));
  vec_push(&cx->arena, &blk->body, ls_let(cx, 1, lx_splat(cx, 16, zero)));
  vec_push(&cx->arena, &blk->body, ls_let(cx, 2, lx_vload(cx, DT_F32, 16, b, fx_at(0, 0, 16, 0, 0))));
  for (int r = 0; r < 3; r++) {
    LExpr *ar = lx_splat(cx, 16, lx_load(cx, DT_F32, a, fx_at(7 * r, 1, 1, 0, 0)));
    LExpr *brow = lx_vload(cx, DT_F32, 16, b, fx_at(0, 1, 32, 0, 16));
    vec_push(&cx->arena, &kl->body, ls_set(cx, r, lx_fma(cx, ar, brow, lx_local_v(cx, DT_F32, 16, r))));
  }
  vec_push(&cx->arena, &blk->body, kl);
  LExpr *t0 = lx_local_v(cx, DT_F32, 16, 0), *t1 = lx_local_v(cx, DT_F32, 16, 1), *t2 = lx_local_v(cx, DT_F32, 16, 2);
  vec_push(&cx->arena, &blk->body, ls_store(cx, c, fx_at(0, 0, 16, 0, 0), t0));
  LExpr *one = lx_splat(cx, 16, lx_const_f(cx, DT_F32, 1));
  vec_push(&cx->arena, &blk->body, ls_store(cx, c, fx_at(32, 0, 16, 0, 0), fx_vbinary(cx, OP_ADD, t1, one)));
  LExpr *lane0 = lx_splat(cx, 16, lx_lane(cx, t2, 0));
  vec_push(&cx->arena, &blk->body, ls_set(cx, 2, fx_vbinary(cx, OP_SUB, t2, lane0)));
  vec_push(&cx->arena, &blk->body, ls_store(cx, c, fx_at(64, 0, 16, 0, 0), t2));
  vec_push(&cx->arena, &blk->body, ls_store(cx, e, fx_at(0, 0, 3, 0, 0), lx_lane(cx, t0, 5)));
  LExpr *twice = lx_binary(cx, OP_MUL, DT_F32, lx_lane(cx, t1, 15), lx_const_f(cx, DT_F32, 2));
  vec_push(&cx->arena, &blk->body, ls_store(cx, e, fx_at(1, 0, 3, 0, 0), twice));
  LExpr *sfma = lx_fma(cx, lx_lane(cx, t0, 0), lx_lane(cx, t1, 1), lx_const_f(cx, DT_F32, 3));
  vec_push(&cx->arena, &blk->body, ls_store(cx, e, fx_at(2, 0, 3, 0, 0), sfma));
  vec_push(&cx->arena, &k->body, blk);
  loop_verify(p);
  return p;
}

// f64 vectors of 4 lanes: for each of two blocks, t0 = fma(x, y, splat(2)),
// o[4 * blk + 0..4] = t0 - y, s[blk] = t0.3; then o[1 + 0..4] = o[0 + 0..4] + splat(10)
// (a store over its own source: the whole vector is read first) and
// o[8] = fma(x[0], y[0], o[0]) in scalars.
static LProgram *f64_lanes_program(Ctx *cx) {
  LProgram *p = fx_program(cx, "v4");
  int x = fx_param(cx, p, "x", DT_F64, 1, (int64_t[]){8}), y = fx_param(cx, p, "y", DT_F64, 1, (int64_t[]){8});
  int o = fx_result(cx, p, "o", DT_F64, 1, (int64_t[]){9}), s = fx_result(cx, p, "s", DT_F64, 1, (int64_t[]){2});
  LKernel *k = fx_kernel(cx, p, (bool[]){true, true, true, false}, (bool[]){false, false, true, true}, 1);
  vec_push(&cx->arena, &k->locals, DT_F64);
  LStmt *blk = ls_loop(cx, 0, 2);
  LIndex i4 = fx_at(0, 0, 4, 0, 0);
  LExpr *yv = lx_vload(cx, DT_F64, 4, y, i4);
  LExpr *f = lx_fma(cx, lx_vload(cx, DT_F64, 4, x, i4), yv, lx_splat(cx, 4, lx_const_f(cx, DT_F64, 2)));
  vec_push(&cx->arena, &blk->body, ls_let(cx, 0, f));
  LExpr *t0 = lx_local_v(cx, DT_F64, 4, 0);
  vec_push(&cx->arena, &blk->body, ls_store(cx, o, i4, fx_vbinary(cx, OP_SUB, t0, yv)));
  vec_push(&cx->arena, &blk->body, ls_store(cx, s, fx_at(0, 0, 1, 0, 0), lx_lane(cx, t0, 3)));
  vec_push(&cx->arena, &k->body, blk);
  LExpr *ten = lx_splat(cx, 4, lx_const_f(cx, DT_F64, 10));
  LExpr *shifted = fx_vbinary(cx, OP_ADD, lx_vload(cx, DT_F64, 4, o, fx_at(0, 0, 0, 0, 0)), ten);
  vec_push(&cx->arena, &k->body, ls_store(cx, o, fx_at(1, 0, 0, 0, 0), shifted));
  LExpr *sf = lx_fma(cx, lx_load(cx, DT_F64, x, fx_at(0, 0, 0, 0, 0)), lx_load(cx, DT_F64, y, fx_at(0, 0, 0, 0, 0)),
                     lx_load(cx, DT_F64, o, fx_at(0, 0, 0, 0, 0)));
  vec_push(&cx->arena, &k->body, ls_store(cx, o, fx_at(8, 0, 0, 0, 0), sf));
  loop_verify(p);
  return p;
}

// The C text of progs.
static char *c_text(Ctx *cx, LProgram **progs, int n) {
  FxText t;
  target_c.emit(cx, progs, n, fx_text_open(&t));
  return fx_text_close(&t);
}

// The driver's flags: the host's vector units, which the lane loops are written for.
static const char *const native_flags = "-march=native -fvect-cost-model=dynamic -fno-math-errno";

// By hand: a parallel loop inside a serial one, reading the outer loop's variable, a
// scalar local and a vector local declared outside it (what the outlined body gets
// through its context): for v0 in 0..3 { let t0 = v0 * 10; let t1 = splat16(v0);
// for v1 in 0..64 parallel { o[64 * v0 + v1] = x[64 * v0 + v1] + t0 + t1.3 } }.
static void a_parallel_loop_reads_the_variables_and_locals_around_it(void **state) {
  (void)state;
  Lib *l = new_lib();
  Ctx *cx = &l->cx;
  LProgram *p = fx_program(cx, "cap");
  int x = fx_param(cx, p, "x", DT_F32, 1, (int64_t[]){192}), o = fx_result(cx, p, "o", DT_F32, 1, (int64_t[]){192});
  LKernel *k = fx_kernel(cx, p, (bool[]){true, false}, (bool[]){false, true}, 2);
  vec_push(&cx->arena, &k->locals, DT_F32);
  vec_push(&cx->arena, &k->locals, DT_F32);
  LStmt *outer = ls_loop(cx, 0, 3), *inner = ls_loop(cx, 1, 64);
  inner->parallel = true;
  LExpr *v0 = lx_cast(cx, DT_F32, lx_var(cx, 0));
  vec_push(&cx->arena, &outer->body, ls_let(cx, 0, lx_binary(cx, OP_MUL, DT_F32, v0, lx_const_f(cx, DT_F32, 10))));
  vec_push(&cx->arena, &outer->body, ls_let(cx, 1, lx_splat(cx, 16, v0)));
  LIndex at = fx_at(0, 0, 64, 1, 1);
  LExpr *sum = lx_binary(cx, OP_ADD, DT_F32, lx_load(cx, DT_F32, x, at), lx_local(cx, DT_F32, 0));
  sum = lx_binary(cx, OP_ADD, DT_F32, sum, lx_lane(cx, lx_local_v(cx, DT_F32, 16, 1), 3));
  vec_push(&cx->arena, &inner->body, ls_store(cx, o, at, sum));
  vec_push(&cx->arena, &outer->body, inner);
  vec_push(&cx->arena, &k->body, outer);
  loop_verify(p);
  char *text = c_text(cx, &p, 1);
  // a vector local is passed by its address (a vector parameter's ABI depends on the
  // instructions the file is compiled for), and the body copies it
  assert_non_null(strstr(text, "static void tdsl_g_cap_k0_p0_body(const float *restrict b0, float *restrict b1, "
                               "int64_t v0, float t0, const tdsl_g_f32x16 *tdsl_g_t1, int64_t tdsl_g_begin, "
                               "int64_t tdsl_g_end) {\n  const tdsl_g_f32x16 t1 = *tdsl_g_t1;\n"));
  free(text);
  assert_int_equal(cc_build(l, &p, 1, "-Wextra", true), 0);
  float xv[192];
  for (int i = 0; i < 192; i++)
    xv[i] = (float)i * 0.5f;
  tdsl_tensor xt = fx_f32(192, xv), out = {0};
  assert_int_equal(((Fn1)sym(l, "cap"))(&xt, &out), TDSL_OK);
  const float *ov = tdsl_tensor_data(&out);
  for (int i = 0; i < 192; i++)
    assert_true(ov[i] == xv[i] + 11.0f * (float)(i / 64));
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&xt);
  unload(l);
}

static void mk_check(Lib *l);

static void f32_micro_kernel_of_fma_lanes_computes_exact_sums(void **state) {
  (void)state;
  Lib *l = new_lib();
  LProgram *prog = micro_kernel_program(&l->cx);
  char *text = c_text(&l->cx, &prog, 1);
  // accumulators are vectors, each statement of a vector value one assignment of its
  // helpers: no lane loops, so gcc's memcpy/memset patterns stay on (c.c says why they
  // go off for lane loops)
  assert_null(strstr(text, "no-tree-loop-distribute-patterns"));
  assert_non_null(strstr(text, "typedef float tdsl_g_f32x16 __attribute__((vector_size(64)));\n"));
  assert_non_null(strstr(text, "typedef struct { float v[16]; } tdsl_g_f32x16;\n"));
  assert_non_null(strstr(text, "    tdsl_g_f32x16 t0 = tdsl_g_splat_f32x16(0.0f), t1 = t0;\n"));  // one declaration
  assert_non_null(strstr(text, "    tdsl_g_st_f32x16(&b2[16 * v0], t0);\n"));
  assert_non_null(strstr(text, "\n      t1 = tdsl_g_fmas_f32x16(b0[7 + v1], tdsl_g_ld_f32x16(&b1[32 * v1 + 16 * v0]), t1);\n"));
  assert_non_null(strstr(text, "b3[2 + 3 * v0] = fmaf(tdsl_g_lane(t0, 0), tdsl_g_lane(t1, 1), 3.0f);\n"));
  // t2 - t2.0: the vector value is computed whole before it is assigned
  assert_non_null(strstr(text, "    t2 = tdsl_g_sub_f32x16(t2, tdsl_g_splat_f32x16(tdsl_g_lane(t2, 0)));\n"));
  free(text);
  // GNU C vectors, then the portable structs
  for (int portable = 0; portable < 2; portable++) {
    if (portable)
      unload(l), l = new_lib(), prog = micro_kernel_program(&l->cx);
    const char *flags = portable ? "-march=native -fvect-cost-model=dynamic -fno-math-errno -pedantic "
                                   "-DTDSL_NO_VECTOR_EXTENSIONS"
                                 : native_flags;
    assert_int_equal(cc_build(l, &prog, 1, flags, true), 0);
    assert_non_null(l->so);
    mk_check(l);
  }
  unload(l);
}

static void mk_check(Lib *l) {
  float av[21], bv[224];
  for (int i = 0; i < 21; i++)
    av[i] = (float)(i % 5 - 2);
  for (int i = 0; i < 224; i++)
    bv[i] = (float)(i % 7 - 3);
  tdsl_tensor a = fx_f32(21, av), b = fx_f32(224, bv), c = {0}, e = {0};
  assert_int_equal(((Fn2x2)sym(l, "mk"))(&a, &b, &c, &e), TDSL_OK);
  const float *cp = tdsl_tensor_data(&c), *ep = tdsl_tensor_data(&e);
  double t[3][32];
  for (int r = 0; r < 3; r++)
    for (int j = 0; j < 32; j++) {
      t[r][j] = r == 2 ? bv[j] : 0;
      for (int kk = 0; kk < 7; kk++)
        t[r][j] += (double)av[7 * r + kk] * bv[32 * kk + j];
    }
  for (int j = 0; j < 32; j++) {
    assert_true(cp[j] == t[0][j]);
    assert_true(cp[32 + j] == t[1][j] + 1);
    assert_true(cp[64 + j] == t[2][j] - t[2][j / 16 * 16]);
  }
  for (int blk = 0; blk < 2; blk++) {
    assert_true(ep[3 * blk] == t[0][16 * blk + 5]);
    assert_true(ep[3 * blk + 1] == t[1][16 * blk + 15] * 2);
    assert_true(ep[3 * blk + 2] == t[0][16 * blk] * t[1][16 * blk + 1] + 3);
  }
  assert_true(cp[5] != 0 && cp[64 + 17] != 0);  // the inputs make a non-trivial test
  tdsl_tensor *all[] = {&a, &b, &c, &e};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    tdsl_tensor_release(all[i]);
}

static void v4_check(Lib *l);

static void f64_lanes_of_four_store_whole_vectors_even_over_their_source(void **state) {
  (void)state;
  Lib *l = new_lib();
  LProgram *prog = f64_lanes_program(&l->cx);
  char *text = c_text(&l->cx, &prog, 1);
  assert_non_null(strstr(text, "    tdsl_g_f64x4 t0 = tdsl_g_fma_f64x4(tdsl_g_ld_f64x4(&b0[4 * v0]), "
                               "tdsl_g_ld_f64x4(&b1[4 * v0]), tdsl_g_splat_f64x4(2.0));\n"));
  free(text);
  for (int portable = 0; portable < 2; portable++) {
    if (portable)
      unload(l), l = new_lib(), prog = f64_lanes_program(&l->cx);
    assert_int_equal(cc_build(l, &prog, 1, portable ? "-DTDSL_NO_VECTOR_EXTENSIONS -pedantic" : native_flags, true), 0);
    assert_non_null(l->so);
    v4_check(l);
  }
  unload(l);
}

static void v4_check(Lib *l) {
  double xv[8], yv[8];
  for (int i = 0; i < 8; i++)
    xv[i] = i - 3, yv[i] = 2 * i + 1;
  tdsl_tensor x = fx_tensor(TDSL_F64, 1, (int64_t[]){8}), y = fx_tensor(TDSL_F64, 1, (int64_t[]){8}), o = {0}, s = {0};
  memcpy(tdsl_tensor_data(&x), xv, sizeof xv);
  memcpy(tdsl_tensor_data(&y), yv, sizeof yv);
  assert_int_equal(((Fn2x2)sym(l, "v4"))(&x, &y, &o, &s), TDSL_OK);
  const double *op = tdsl_tensor_data(&o), *sp = tdsl_tensor_data(&s);
  double want[9];
  for (int i = 0; i < 8; i++)
    want[i] = xv[i] * yv[i] + 2 - yv[i];
  for (int i = 4; i >= 1; i--)
    want[i] = want[i - 1] + 10;
  want[8] = xv[0] * yv[0] + want[0];
  for (int i = 0; i < 9; i++)
    assert_true(op[i] == want[i]);
  assert_true(sp[0] == xv[3] * yv[3] + 2 && sp[1] == xv[7] * yv[7] + 2);
  tdsl_tensor *all[] = {&x, &y, &o, &s};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    tdsl_tensor_release(all[i]);
}

// Transposing copies (ir/ew.c's tiles: vector loads, shuffles, stores) of u8 and f32,
// built with GNU C vectors and with the portable structs: every element where it goes.
static void transposing_shuffles_agree_in_both_vector_forms(void **state) {
  (void)state;
  for (int portable = 0; portable < 2; portable++) {
    Lib *l = new_lib();
    LProgram *progs[2];
    int n = fx_compile(&l->cx,
                       "fn tb(x: u8[32, 48]) -> u8[48, 32] {\n  return x.t().contiguous()\n}\n"
                       "fn tf(x: f32[32, 48]) -> f32[48, 32] {\n  return x.t().contiguous()\n}\n",
                       progs, 2);
    const char *flags = portable ? "-march=native -pedantic -DTDSL_NO_VECTOR_EXTENSIONS" : "-march=native";
    assert_int_equal(cc_build(l, progs, n, flags, true), 0);
    assert_non_null(l->so);
    tdsl_tensor xb = fx_tensor(TDSL_U8, 2, (int64_t[]){32, 48}), xf = fx_tensor(TDSL_F32, 2, (int64_t[]){32, 48});
    uint8_t *pb = tdsl_tensor_data(&xb);
    float *pf = tdsl_tensor_data(&xf);
    for (int i = 0; i < 32 * 48; i++)
      pb[i] = (uint8_t)(i * 7 + 3), pf[i] = (float)i * 0.25f - 100.0f;
    tdsl_tensor ob = {0}, of = {0};
    assert_int_equal(((Fn1)sym(l, "tb"))(&xb, &ob), TDSL_OK);
    assert_int_equal(((Fn1)sym(l, "tf"))(&xf, &of), TDSL_OK);
    const uint8_t *rb = tdsl_tensor_data(&ob);
    const float *rf = tdsl_tensor_data(&of);
    for (int i = 0; i < 48; i++)
      for (int j = 0; j < 32; j++)
        assert_true(rb[32 * i + j] == pb[48 * j + i] && rf[32 * i + j] == pf[48 * j + i]);
    tdsl_tensor *all[] = {&xb, &xf, &ob, &of};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
      tdsl_tensor_release(all[i]);
    unload(l);
  }
}

// The first index of the row's greatest (mx) or least element, NaN the extreme (its first
// wins), -0.0 equal to 0.0: NumPy's argmax/argmin, written out.
static int64_t first_extreme(const double *row, int n, bool mx) {
  int64_t best = 0;
  for (int j = 1; j < n; j++) {
    double x = row[j], b = row[best];
    if (b != b)
      break;
    if (x != x || (mx ? x > b : x < b))
      best = j;
  }
  return best;
}

// argmax/argmin in vector lanes (ir/sched.c's split_argext: compare and blend, the lanes
// merged by value then index) give the first extreme in both vector forms, GNU C's and
// the structs' (TDSL_NO_VECTOR_EXTENSIONS), over rows with ties, NaN, +-inf and +-0.
static void argmax_lanes_agree_in_both_vector_forms(void **state) {
  (void)state;
  enum { R = 6, N = 77 };
  for (int portable = 0; portable < 2; portable++) {
    Lib *l = new_lib();
    LProgram *progs[3];
    int n = fx_compile(&l->cx,
                       "fn am(x: f32[6, 77]) -> i64[6] {\n  return x.argmax(-1)\n}\n"
                       "fn an(x: f64[6, 77]) -> i64[6] {\n  return x.argmin(1)\n}\n"
                       "fn ai(x: i32[6, 77]) -> i64[6] {\n  return x.max(1).indices\n}\n",
                       progs, 3);
    CpuTarget host = cpu_target(NULL);
    for (int i = 0; i < n; i++)  // (fx_compile builds; the lanes are sched_cpu's)
      sched_cpu(&l->cx, progs[i], &host);
    const char *flags = portable ? "-march=native -pedantic -DTDSL_NO_VECTOR_EXTENSIONS" : "-march=native";
    assert_int_equal(cc_build(l, progs, n, flags, true), 0);
    assert_non_null(l->so);
    tdsl_tensor xf = fx_tensor(TDSL_F32, 2, (int64_t[]){R, N}), xd = fx_tensor(TDSL_F64, 2, (int64_t[]){R, N}),
                xi = fx_tensor(TDSL_I32, 2, (int64_t[]){R, N});
    float *pf = tdsl_tensor_data(&xf);
    double *pd = tdsl_tensor_data(&xd), ref[R * N];
    int32_t *pi = tdsl_tensor_data(&xi);
    uint32_t seed = 27;
    for (int i = 0; i < R * N; i++) {
      seed = seed * 1664525u + 1013904223u;
      int v = (int)(seed >> 28) % 5 - 2;  // few levels: ties in every row
      ref[i] = v == 2 && (seed & 64) ? INFINITY : v == -2 && (seed & 64) ? -INFINITY : v == 0 && (seed & 32) ? -0.0 : v;
    }
    ref[1 * N + 40] = ref[1 * N + 70] = NAN;  // NaN in the lanes, then in the remainder
    ref[2 * N + 76] = NAN;
    for (int j = 0; j < N; j++)
      ref[3 * N + j] = j % 2 ? 0.0 : -0.0, ref[4 * N + j] = -INFINITY;
    for (int i = 0; i < R * N; i++)
      pf[i] = (float)ref[i], pd[i] = ref[i], pi[i] = isfinite(ref[i]) ? (int32_t)ref[i] : ref[i] > 0 ? INT32_MAX : INT32_MIN;
    tdsl_tensor of = {0}, od = {0}, oi = {0};
    assert_int_equal(((Fn1)sym(l, "am"))(&xf, &of), TDSL_OK);
    assert_int_equal(((Fn1)sym(l, "an"))(&xd, &od), TDSL_OK);
    assert_int_equal(((Fn1)sym(l, "ai"))(&xi, &oi), TDSL_OK);
    const int64_t *rf = tdsl_tensor_data(&of), *rd = tdsl_tensor_data(&od), *ri = tdsl_tensor_data(&oi);
    for (int r = 0; r < R; r++) {
      double row[N];
      for (int j = 0; j < N; j++)
        row[j] = pi[r * N + j];
      assert_int_equal(rf[r], first_extreme(ref + r * N, N, true));
      assert_int_equal(rd[r], first_extreme(ref + r * N, N, false));
      assert_int_equal(ri[r], first_extreme(row, N, true));
    }
    tdsl_tensor *all[] = {&xf, &xd, &xi, &of, &od, &oi};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
      tdsl_tensor_release(all[i]);
    unload(l);
  }
}

static void generated_code_compiles_without_openmp_and_with_wextra(void **state) {
  (void)state;
  Lib *l = new_lib();
  LProgram *progs[6];  // (with the GEMM's functions, some of whose scalars go unread)
  int n = fx_compile(&l->cx,
                     "fn a(x: f16[4, 8], i: i64[3]) -> (f16[4], f32[3, 8], bf16[4, 8]) {\n"
                     "  return x.sum(1), x.float()[i], softmax(x.bfloat16(), -1)\n}\n"
                     "fn b(mut y: i32[5], z: bool[5]) -> (i32[5], bool[5]) {\n"
                     "  y += 3\n  return where(z, y // 2, y % 3) ** 2, ~z\n}\n"
                     "fn m(p: f32[12, 96], w: f32[80, 96]) -> f32[12, 80] {\n  return p @ w.t()\n}\n",
                     progs, 3);
  progs[n] = fx_gather_program(&l->cx, true, 1000);
  progs[n + 1] = micro_kernel_program(&l->cx);
  progs[n + 2] = f64_lanes_program(&l->cx);
  assert_int_equal(cc_build(l, progs, n + 3, "-Wextra -pedantic", false), 0);
  assert_int_equal(cc_build(l, progs, n + 3, "-Wextra -pedantic -DTDSL_NO_VECTOR_EXTENSIONS", false), 0);
  assert_int_equal(cc_build(l, progs, n + 3, "-Wextra -fopenmp", false), 0);
  unload(l);
}

static void header_declares_every_entry(void **state) {
  (void)state;
  Lib *l = new_lib();
  LProgram *progs[2];
  int n = fx_compile(&l->cx,
                     "fn a(x: f32[2], mut int: f32[2]) -> f32[2] {\n  return x + int\n}\n"
                     "fn b(out0: f32[3]) -> (f32[3], f32[1]) {\n  return out0, out0[1:2]\n}\n",
                     progs, 2);
  FxText t;
  emit_header(&l->cx, progs, n, fx_text_open(&t));
  char *text = fx_text_close(&t);
  assert_non_null(strstr(text, "#ifndef TDSL_GEN_T_H\n#define TDSL_GEN_T_H\n"));
  assert_non_null(strstr(text, "#include \"tdsl.h\""));
  // a parameter named like a C keyword or like a result gets a generated name
  assert_non_null(strstr(text, "int a(const tdsl_tensor *x, tdsl_tensor *tdsl_g_p1, tdsl_tensor *out0);"));
  assert_non_null(strstr(text, "int b(const tdsl_tensor *tdsl_g_p0, tdsl_tensor *out0, tdsl_tensor *out1);"));
  free(text);
  unload(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fused_elementwise_program_computes_its_values),
      cmocka_unit_test(half_conversions_match_the_runtime_bit_for_bit),
      cmocka_unit_test(integer_ops_follow_python_and_wrap),
      cmocka_unit_test(division_by_zero_is_a_located_data_error),
      cmocka_unit_test(float_ops_propagate_nan_and_floor_like_pytorch),
      cmocka_unit_test(wrong_argument_is_refused_with_both_types),
      cmocka_unit_test(view_result_views_the_callers_storage),
      cmocka_unit_test(mut_argument_is_updated_in_the_callers_storage),
      cmocka_unit_test(view_only_program_needs_no_kernel),
      cmocka_unit_test(first_index_error_wins_even_in_a_parallel_loop),
      cmocka_unit_test(a_parallel_loop_reads_the_variables_and_locals_around_it),
      cmocka_unit_test(f32_micro_kernel_of_fma_lanes_computes_exact_sums),
      cmocka_unit_test(f64_lanes_of_four_store_whole_vectors_even_over_their_source),
      cmocka_unit_test(transposing_shuffles_agree_in_both_vector_forms),
      cmocka_unit_test(argmax_lanes_agree_in_both_vector_forms),
      cmocka_unit_test(generated_code_compiles_without_openmp_and_with_wextra),
      cmocka_unit_test(header_declares_every_entry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
