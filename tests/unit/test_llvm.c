// tests/unit/test_llvm.c: codegen/llvm.c. Each test builds programs through the whole
// pipeline (or by hand with the lx_*/ls_* constructors), compiles them in-process with
// llvm_jit_run — given this executable's runtime, as tdslc gives its own — and calls
// the entries the way a C user would, or emits .ll / assembly / objects and checks
// them. Expected values are computed here independently: by hand, by the runtime's
// own f16/bf16 conversions, or by plain C arithmetic.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#ifndef TDSLC_WITH_LLVM
int main(void) { return 0; }  // built without LLVM: nothing to test
#else

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/llvm.h"
#include "frontend/frontend.h"
#include "tdsl.h"

#define RT(f) {#f, (void (*)(void))f}
static const LlvmSymbol runtime[] = {
    RT(tdsl_entry_begin),  RT(tdsl_entry_end),          RT(tdsl_entry_kernel_error), RT(tdsl_tensor_data),
    RT(tdsl_parallel_for), RT(tdsl_kernel_error_raise), RT(tdsl_kernel_error_seal),
};
#undef RT
enum { NRT = sizeof runtime / sizeof *runtime };

// ---- building, compiling and calling ----
typedef int (*Use)(void *ctx, void *const *addrs);

// The whole pipeline on src: every function of the file, in order.
static int compile_src(Ctx *cx, const char *src, LProgram **out, int max) {
  SrcFile *f = srcfile_from_string(cx, "t.tdsl", src, strlen(src));
  Program prog = {0};
  prog.ast = parse_program(cx, f);
  assert_non_null(prog.ast);
  assert_true(sema_check(cx, &prog));
  assert_int_equal(cx->nerrors, 0);
  assert_true(prog.fns.len <= max);
  for (int i = 0; i < prog.fns.len; i++) {
    Graph *g = lower_fn(cx, &prog, prog.fns.data[i]);
    fuse_graph(g);
    CpuTarget host = cpu_target(NULL);
    out[i] = kernel_build(cx, g, &host);
    loop_verify(out[i]);
  }
  assert_int_equal(cx->nerrors, 0);
  return prog.fns.len;
}

// JIT-compiles progs and calls use with the addresses of names; returns use's result.
static int jit(Ctx *cx, LProgram **progs, int n, const char *const *names, int nnames, Use use, void *ctx) {
  LlvmOptions o = {.opt = 2};
  int rc = -1;
  const char *err = llvm_jit_run(cx, progs, n, &o, runtime, NRT, names, nnames, use, ctx, &rc);
  if (err)
    fprintf(stderr, "llvm_jit_run: %s\n", err);
  assert_null(err);
  return rc;
}

static int jit_src(const char *src, const char *const *names, int nnames, Use use, void *ctx) {
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[8];
  int n = compile_src(&cx, src, progs, 8);
  int rc = jit(&cx, progs, n, names, nnames, use, ctx);
  ctx_free(&cx);
  return rc;
}

// What llvm_emit writes for progs, NUL-terminated (malloc'd); *len gets its length.
static char *emit(Ctx *cx, LProgram **progs, int n, LlvmOut kind, const char *cpu, int opt, size_t *len) {
  char *text = NULL;
  size_t sz = 0;
  FILE *f = open_memstream(&text, &sz);
  assert_non_null(f);
  LlvmOptions o = {.opt = opt, .cpu = cpu};
  const char *err = llvm_emit(cx, progs, n, &o, kind, f);
  fclose(f);
  if (err)
    fprintf(stderr, "llvm_emit: %s\n", err);
  assert_null(err);
  if (len)
    *len = sz;
  return text;
}

typedef int (*Fn1)(const tdsl_tensor *, tdsl_tensor *);
typedef int (*Fn2)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *);

static tdsl_tensor make(tdsl_dtype dt, int ndim, const int64_t *shape) {
  tdsl_tensor t;
  assert_int_equal(tdsl_tensor_empty(&t, dt, ndim, shape), 0);
  return t;
}

static tdsl_tensor f32_vec(int64_t n, const float *v) {
  tdsl_tensor t = make(TDSL_F32, 1, (int64_t[]){n});
  memcpy(tdsl_tensor_data(&t), v, (size_t)n * sizeof(float));
  return t;
}

static tdsl_tensor i64_vec(int64_t n, const int64_t *v) {
  tdsl_tensor t = make(TDSL_I64, 1, (int64_t[]){n});
  memcpy(tdsl_tensor_data(&t), v, (size_t)n * sizeof(int64_t));
  return t;
}

static bool same_bits_f32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

// ---- tests ----
static int use_elementwise(void *ctx, void *const *addrs) {
  (void)ctx;
  Fn2 f = (Fn2)(uintptr_t)addrs[0];
  float xv[6] = {1, 2, 3, 4, 5, 6}, yv[3] = {0.5f, -1, 10};
  tdsl_tensor x = make(TDSL_F32, 2, (int64_t[]){2, 3}), y = f32_vec(3, yv), out = {0};
  memcpy(tdsl_tensor_data(&x), xv, sizeof xv);
  assert_int_equal(f(&x, &y, &out), TDSL_OK);
  assert_int_equal(out.ndim, 2);
  assert_int_equal(out.strides[0], 3);
  const float *o = tdsl_tensor_data(&out);
  for (int i = 0; i < 6; i++)
    assert_true(o[i] == xv[i] * 2 + yv[i % 3]);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&x);
  tdsl_tensor_release(&y);
  return 7;
}

static void fused_elementwise_program_computes_its_values(void **state) {
  (void)state;
  const char *names[] = {"f"};
  assert_int_equal(jit_src("fn f(x: f32[2, 3], y: f32[3]) -> f32[2, 3] {\n  return x * 2 + y\n}\n", names, 1,
                           use_elementwise, NULL),
                   7);
}

static int use_halves(void *ctx, void *const *addrs) {
  (void)ctx;
  int (*down)(const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *))(uintptr_t)addrs[0];
  int (*up)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *))(uintptr_t)addrs[1];
  // every f16 and bf16 bit pattern widens as the runtime widens it
  tdsl_tensor h = make(TDSL_F16, 1, (int64_t[]){65536}), b = make(TDSL_BF16, 1, (int64_t[]){65536});
  uint16_t *hp = tdsl_tensor_data(&h), *bp = tdsl_tensor_data(&b);
  for (int i = 0; i < 65536; i++)
    hp[i] = bp[i] = (uint16_t)i;
  tdsl_tensor o0 = {0}, o1 = {0};
  assert_int_equal(up(&h, &b, &o0, &o1), TDSL_OK);
  const float *f0 = tdsl_tensor_data(&o0), *f1 = tdsl_tensor_data(&o1);
  for (int i = 0; i < 65536; i++) {
    assert_true(same_bits_f32(f0[i], tdsl_f16_to_f32((uint16_t)i)));
    assert_true(same_bits_f32(f1[i], tdsl_bf16_to_f32((uint16_t)i)));
  }
  // narrowing rounds to nearest even: subnormals, ties, overflow, and a sweep of f32 bits
  enum { N = 4096 };
  static float xs[N];
  float fixed[] = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 1e10f, -1e10f, INFINITY, -INFINITY, NAN,
                   5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f, 8.940697e-08f, 6.1035156e-05f, 6.1e-05f,
                   1.00048828125f, 1.0014648f, 3.14159265f, -2.71828f, 1e-40f, 0.1f, 0.3333333f};
  int nf = (int)(sizeof fixed / sizeof *fixed);
  memcpy(xs, fixed, sizeof fixed);
  for (int i = nf; i < N; i++) {
    uint32_t u = (uint32_t)i * 2654435761u;  // spread over every exponent and sign
    memcpy(&xs[i], &u, sizeof u);
  }
  tdsl_tensor x = f32_vec(N, xs), d0 = {0}, d1 = {0};
  assert_int_equal(down(&x, &d0, &d1), TDSL_OK);
  const uint16_t *h16 = tdsl_tensor_data(&d0), *b16 = tdsl_tensor_data(&d1);
  for (int i = 0; i < N; i++) {
    if (isnan(xs[i])) {
      assert_true(isnan(tdsl_f16_to_f32(h16[i])) && isnan(tdsl_bf16_to_f32(b16[i])));
      continue;
    }
    assert_int_equal(h16[i], tdsl_f32_to_f16(xs[i]));
    assert_int_equal(b16[i], tdsl_f32_to_bf16(xs[i]));
  }
  tdsl_tensor *all[] = {&h, &b, &o0, &o1, &x, &d0, &d1};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    tdsl_tensor_release(all[i]);
  return 0;
}

static void half_conversions_match_the_runtime_bit_for_bit(void **state) {
  (void)state;
  const char *names[] = {"down", "up"};
  jit_src("fn down(x: f32[4096]) -> (f16[4096], bf16[4096]) {\n  return x.half(), x.bfloat16()\n}\n"
          "fn up(h: f16[65536], b: bf16[65536]) -> (f32[65536], f32[65536]) {\n  return h.float(), b.float()\n}\n",
          names, 2, use_halves, NULL);
}

// Python's floor division and modulo, on int64, written independently of the backend.
static int64_t py_floordiv(int64_t a, int64_t b) {
  if (b == -1)
    return (int64_t)(0 - (uint64_t)a);
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t py_mod(int64_t a, int64_t b) {
  if (b == -1)
    return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static int use_ints(void *ctx, void *const *addrs) {
  (void)ctx;
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
           tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
               tdsl_tensor *, tdsl_tensor *))(uintptr_t)addrs[0];
  int64_t av[8] = {7, -7, 7, -7, INT64_MIN, INT64_MIN, INT64_MAX, 3037000500};
  int64_t bv[8] = {2, 2, -2, -2, -1, 3, 2, 3037000500};
  tdsl_tensor a = i64_vec(8, av), b = i64_vec(8, bv), o[6] = {{0}};
  assert_int_equal(f(&a, &b, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]), TDSL_OK);
  const int64_t *q = tdsl_tensor_data(&o[0]), *r = tdsl_tensor_data(&o[1]), *m = tdsl_tensor_data(&o[2]),
                *n = tdsl_tensor_data(&o[3]), *p = tdsl_tensor_data(&o[4]);
  const int32_t *t = tdsl_tensor_data(&o[5]);
  for (int i = 0; i < 8; i++) {
    uint64_t ua = (uint64_t)av[i], ub = (uint64_t)bv[i];
    assert_int_equal(q[i], py_floordiv(av[i], bv[i]));
    assert_int_equal(r[i], py_mod(av[i], bv[i]));
    assert_int_equal(m[i], (int64_t)(ua * ub));
    assert_int_equal(n[i], (int64_t)(0 - ua));
    assert_int_equal(p[i], (int64_t)(ua * ua * ua));
    assert_int_equal(t[i], (int32_t)(uint32_t)ua);  // i64 -> i32 wraps
  }
  assert_int_equal(q[1], -4);
  assert_int_equal(r[2], -1);
  assert_int_equal(q[4], INT64_MIN);  // INT64_MIN // -1 wraps
  for (int i = 0; i < 6; i++)
    tdsl_tensor_release(&o[i]);
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  return 0;
}

static void integer_ops_follow_python_and_wrap(void **state) {
  (void)state;
  const char *names[] = {"f"};
  jit_src("fn f(a: i64[8], b: i64[8]) -> (i64[8], i64[8], i64[8], i64[8], i64[8], i32[8]) {\n"
          "  return a // b, a % b, a * b, -a, a ** 3, a.int()\n}\n",
          names, 1, use_ints, NULL);
}

static int use_divzero(void *ctx, void *const *addrs) {
  (void)ctx;
  Fn2 f = (Fn2)(uintptr_t)addrs[0];
  tdsl_tensor a = make(TDSL_I32, 1, (int64_t[]){4}), b = make(TDSL_I32, 1, (int64_t[]){4}), out = {0};
  int32_t *bp = tdsl_tensor_data(&b);
  bp[0] = bp[1] = bp[3] = 1;  // bp[2] stays 0
  assert_int_equal(f(&a, &b, &out), TDSL_ERR_DATA);
  assert_string_equal(tdsl_last_error(), "t.tdsl:2:10: error: ZeroDivisionError");
  assert_null(out.storage);  // no result on failure, nothing to release
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  return 0;
}

static void division_by_zero_is_a_located_data_error(void **state) {
  (void)state;
  const char *names[] = {"f"};
  jit_src("fn f(a: i32[4], b: i32[4]) -> i32[4] {\n  return a // b\n}\n", names, 1, use_divzero, NULL);
}

static int use_floats(void *ctx, void *const *addrs) {
  (void)ctx;
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
           tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
               tdsl_tensor *, tdsl_tensor *))(uintptr_t)addrs[0];
  float av[6] = {NAN, 1, -7.5f, 7.5f, 1e10f, -0.5f}, bv[6] = {1, NAN, 2, -2, 0, INFINITY};
  tdsl_tensor a = f32_vec(6, av), b = f32_vec(6, bv), o[6] = {{0}};
  assert_int_equal(f(&a, &b, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]), TDSL_OK);
  const float *mx = tdsl_tensor_data(&o[0]), *fd = tdsl_tensor_data(&o[1]), *rm = tdsl_tensor_data(&o[2]);
  const int32_t *ci = tdsl_tensor_data(&o[3]);
  const int64_t *cl = tdsl_tensor_data(&o[4]);
  const float *rd = tdsl_tensor_data(&o[5]);
  assert_true(isnan(mx[0]) && isnan(mx[1]));
  assert_true(mx[2] == 2 && mx[3] == 7.5f);
  assert_true(fd[2] == -4 && fd[3] == -4);       // floor(-3.75), floor(-3.75)
  assert_true(isinf(fd[4]) && fd[4] > 0);        // 1e10 // 0 = inf (IEEE a / b)
  assert_true(fd[5] == -1);                      // -0.5 // inf
  assert_true(rm[2] == 0.5f && rm[3] == -0.5f);  // the sign of b
  assert_int_equal(ci[0], INT32_MIN);            // nan -> the minimum
  assert_int_equal(ci[2], -7);                   // truncation toward zero
  assert_int_equal(ci[4], INT32_MIN);            // out of range -> the minimum
  assert_int_equal(cl[0], INT64_MIN);
  assert_int_equal(cl[4], 10000000000);
  assert_true(rd[2] == -8 && rd[3] == 8 && rd[5] == -0.0f && signbit(rd[5]));  // half to even
  for (int i = 0; i < 6; i++)
    tdsl_tensor_release(&o[i]);
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  return 0;
}

static void float_ops_propagate_nan_and_floor_like_pytorch(void **state) {
  (void)state;
  const char *names[] = {"f"};
  jit_src("fn f(a: f32[6], b: f32[6]) -> (f32[6], f32[6], f32[6], i32[6], i64[6], f32[6]) {\n"
          "  return maximum(a, b), a // b, a % b, a.int(), a.long(), a.round()\n}\n",
          names, 1, use_floats, NULL);
}

// By hand: out[i] = x[checked(idx[i], 10)] over a parallel loop of 100000 iterations;
// several indices are bad, and the reported one is the first in iteration order,
// whatever the threads do.
enum { GN = 100000 };
static LProgram *gather_program(Ctx *cx, bool parallel) {
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = parallel ? "gpar" : "gseq";
  p->file = "t.tdsl";
  vec_push(&cx->arena, &p->params, ((LParam){.name = "idx", .dtype = DT_I64, .ndim = 1, .shape = {GN}, .buf = 0}));
  vec_push(&cx->arena, &p->params, ((LParam){.name = "x", .dtype = DT_F32, .ndim = 1, .shape = {10}, .buf = 1}));
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_PARAM, DT_I64, GN, "idx", 0, false}));
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_PARAM, DT_F32, 10, "x", 1, false}));
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_RESULT, DT_F32, GN, "out", -1, false}));
  LOutput o = {.buf = 2, .dtype = DT_F32, .view = view_contiguous(1, (int64_t[]){GN})};
  vec_push(&cx->arena, &p->outputs, o);
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = "k0";
  vec_push(&cx->arena, &k->args, ((LArg){.buf = 0, .read = true, .written = false}));
  vec_push(&cx->arena, &k->args, ((LArg){.buf = 1, .read = true, .written = false}));
  vec_push(&cx->arena, &k->args, ((LArg){.buf = 2, .read = false, .written = true}));
  vec_push(&cx->arena, &k->errors, "t.tdsl:1:5: error: index %lld is out of bounds for dimension 0 with size 10");
  k->nvars = 1;
  LIndex at_i = {.nterms = 1, .var = {0}, .coef = {1}};
  LExpr *ci = lx_new(cx, LX_CHECKED_INDEX, DT_I64);
  ci->a = lx_load(cx, DT_I64, 0, at_i);
  ci->i = 10;
  ci->err = 0;
  ci->wrap = true;
  LIndex at_dyn = {.dyn = ci};
  LStmt *loop = ls_loop(cx, 0, GN);
  loop->parallel = parallel;
  vec_push(&cx->arena, &loop->body, ls_store(cx, 2, at_i, lx_load(cx, DT_F32, 1, at_dyn)));
  vec_push(&cx->arena, &k->body, loop);
  vec_push(&cx->arena, &p->kernels, k);
  loop_verify(p);
  return p;
}

static int use_gather(void *ctx, void *const *addrs) {
  (void)ctx;
  static int64_t iv[GN];
  for (int i = 0; i < GN; i++)
    iv[i] = i % 20 - 10;  // -10 .. 9: all in range
  iv[70001] = 57, iv[70002] = 10, iv[90000] = -99, iv[GN - 1] = 12;
  float xv[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  tdsl_tensor idx = i64_vec(GN, iv), x = f32_vec(10, xv), out = {0};
  for (int rep = 0; rep < 20; rep++) {
    Fn2 f = (Fn2)(uintptr_t)addrs[rep % 2];
    assert_int_equal(f(&idx, &x, &out), TDSL_ERR_DATA);
    assert_string_equal(tdsl_last_error(), "t.tdsl:1:5: error: index 57 is out of bounds for dimension 0 with size 10");
  }
  iv[70001] = 0, iv[70002] = 0, iv[90000] = 0, iv[GN - 1] = -1;
  tdsl_tensor_release(&idx);
  idx = i64_vec(GN, iv);
  assert_int_equal(((Fn2)(uintptr_t)addrs[0])(&idx, &x, &out), TDSL_OK);
  const float *o = tdsl_tensor_data(&out);
  for (int i = 0; i < GN - 1; i++)
    assert_true(o[i] == (float)((iv[i] + 10) % 10));
  assert_true(o[GN - 1] == 9);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&idx);
  tdsl_tensor_release(&x);
  return 0;
}

static void first_index_error_wins_even_in_a_parallel_loop(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[2] = {gather_program(&cx, true), gather_program(&cx, false)};
  const char *names[] = {"gpar", "gseq"};
  jit(&cx, progs, 2, names, 2, use_gather, NULL);
  // the parallel loop is outlined and run by the runtime's pool
  char *ir = emit(&cx, progs, 1, LLVM_OUT_IR, "x86-64", 0, NULL);
  assert_non_null(strstr(ir, "@tdsl_g_gpar_k0_p0("));
  assert_non_null(strstr(ir, "call void @tdsl_parallel_for(i64 100000"));
  assert_non_null(strstr(ir, "call void @tdsl_kernel_error_seal("));
  free(ir);
  ctx_free(&cx);
}

// A matmul with two rows is split into parallel blocks of its columns, inside the
// serial loop over rows: the outlined body reads the row variable from its ctx.
static int use_matmul(void *ctx, void *const *addrs) {
  (void)ctx;
  Fn2 f = (Fn2)(uintptr_t)addrs[0];
  enum { M = 2, K = 64, N = 2048 };
  tdsl_tensor a = make(TDSL_F32, 2, (int64_t[]){M, K}), b = make(TDSL_F32, 2, (int64_t[]){K, N}), out = {0};
  float *ap = tdsl_tensor_data(&a), *bp = tdsl_tensor_data(&b);
  for (int i = 0; i < M * K; i++)
    ap[i] = (float)((i * 37) % 101 - 50) / 16.0f;
  for (int i = 0; i < K * N; i++)
    bp[i] = (float)((i * 53) % 97 - 48) / 8.0f;
  assert_int_equal(f(&a, &b, &out), TDSL_OK);
  const float *o = tdsl_tensor_data(&out);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0;
      for (int k = 0; k < K; k++)
        acc = acc + ap[i * K + k] * bp[k * N + j];  // the IR's order: k from 0
      assert_true(o[i * N + j] == acc);
    }
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  return 0;
}

static void parallel_blocks_inside_a_serial_loop_compute_the_matmul(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[1];
  compile_src(&cx, "fn proj(a: f32[2, 64], b: f32[64, 2048]) -> f32[2, 2048] {\n  return a @ b\n}\n", progs, 1);
  const char *names[] = {"proj"};
  jit(&cx, progs, 1, names, 1, use_matmul, NULL);
  char *ir = emit(&cx, progs, 1, LLVM_OUT_IR, "x86-64", 0, NULL);
  assert_non_null(strstr(ir, "@tdsl_g_proj_k0_p0("));
  free(ir);
  ctx_free(&cx);
}

typedef int (*Fn3to2)(const tdsl_tensor *, const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *);

// x @ a and x @ b for x = i + j, a = i - j, b = 2i + j (4x8 @ 8x8): small integers,
// so every sum is exact.
static int use_two_matmuls(void *ctx, void *const *addrs) {
  (void)ctx;
  Fn3to2 f = (Fn3to2)(uintptr_t)addrs[0];
  tdsl_tensor x = make(TDSL_F32, 2, (int64_t[]){4, 8}), a = make(TDSL_F32, 2, (int64_t[]){8, 8});
  tdsl_tensor b = make(TDSL_F32, 2, (int64_t[]){8, 8}), out[2] = {0};
  float *xv = tdsl_tensor_data(&x), *av = tdsl_tensor_data(&a), *bv = tdsl_tensor_data(&b);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) {
      if (i < 4)
        xv[i * 8 + j] = (float)(i + j);
      av[i * 8 + j] = (float)(i - j);
      bv[i * 8 + j] = (float)(2 * i + j);
    }
  assert_int_equal(f(&x, &a, &b, &out[0], &out[1]), TDSL_OK);
  for (int k = 0; k < 2; k++) {
    const float *o = tdsl_tensor_data(&out[k]), *w = k ? bv : av;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 8; j++) {
        float want = 0;
        for (int l = 0; l < 8; l++)
          want += xv[i * 8 + l] * w[l * 8 + j];
        assert_true(o[i * 8 + j] == want);
      }
    tdsl_tensor_release(&out[k]);
  }
  tdsl_tensor_release(&x);
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  return 0;
}

// The two kernels are one loop nest on other pointers: at -O2 the module keeps one
// function for both (mergefunc), and each result is still its own.
static void identical_kernels_are_compiled_once_at_O2(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[1];
  compile_src(&cx,
              "fn f(x: f32[4, 8], a: f32[8, 8], b: f32[8, 8]) -> (f32[4, 8], f32[4, 8]) {\n"
              "  return x @ a, x @ b\n}\n",
              progs, 1);
  assert_int_equal(progs[0]->kernels.len, 2);
  const char *names[] = {"f"};
  jit(&cx, progs, 1, names, 1, use_two_matmuls, NULL);
  char *ir = emit(&cx, progs, 1, LLVM_OUT_IR, "x86-64", 2, NULL);
  assert_non_null(strstr(ir, "define internal i32 @tdsl_g_f_k0("));
  assert_null(strstr(ir, "@tdsl_g_f_k1("));
  free(ir);
  ctx_free(&cx);
}

static void emitted_ir_is_accepted_by_llvm_as(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[4];
  int n = compile_src(&cx,
                      "fn a(x: f16[4, 8], i: i64[3]) -> (f16[4], f32[3, 8], bf16[4, 8]) {\n"
                      "  return x.sum(1), x.float()[i], softmax(x.bfloat16(), -1)\n}\n"
                      "fn b(mut y: i32[5], z: bool[5]) -> (i32[5], bool[5]) {\n"
                      "  y += 3\n  return where(z, y // 2, y % 3) ** 2, ~z\n}\n",
                      progs, 4);
  progs[n] = gather_program(&cx, true);
  for (int opt = 0; opt <= 3; opt += 3) {
    size_t len;
    char *ir = emit(&cx, progs, n + 1, LLVM_OUT_IR, "x86-64", opt, &len);
    char path[] = "/tmp/tdsl-test-llvm-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, ir, len), (ssize_t)len);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "llvm-as-14 -o /dev/null %s", path);
    assert_int_equal(system(cmd), 0);
    unlink(path);
    // module-level names: the entries, and tdsl_g_ for everything else
    assert_non_null(strstr(ir, "define i32 @a("));
    assert_non_null(strstr(ir, "define i32 @b("));
    free(ir);
  }
  ctx_free(&cx);
}

static void elementwise_loops_are_vectorized_at_O2(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[1];
  compile_src(&cx, "fn f(x: f32[4096], y: f32[4096]) -> f32[4096] {\n  return x * y + 1.5\n}\n", progs, 1);
  char *s = emit(&cx, progs, 1, LLVM_OUT_ASM, "haswell", 2, NULL);
  assert_non_null(strstr(s, "vmulps"));
  assert_non_null(strstr(s, "vaddps"));
  assert_non_null(strstr(s, "%ymm"));
  free(s);
  s = emit(&cx, progs, 1, LLVM_OUT_ASM, "x86-64", 2, NULL);  // SSE2 only
  assert_non_null(strstr(s, "mulps"));
  free(s);
  ctx_free(&cx);
}

static void object_output_is_a_relocatable_elf(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[1];
  compile_src(&cx, "fn f(x: f32[8]) -> f32[8] {\n  return exp(x)\n}\n", progs, 1);
  size_t len;
  char *o = emit(&cx, progs, 1, LLVM_OUT_OBJ, NULL, 2, &len);
  assert_true(len > 64);
  assert_memory_equal(o, "\177ELF", 4);
  uint16_t type;
  memcpy(&type, o + 16, 2);
  assert_int_equal(type, 1);  // ET_REL
  free(o);
  ctx_free(&cx);
}

// ---- vector lanes, by hand ----
// A program's parameter (buffer i = parameter i) or result (an output of its own buffer).
static void add_param(Ctx *cx, LProgram *p, const char *name, DType dt, int ndim, const int64_t *shape) {
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++)
    numel *= shape[d];
  LParam q = {.name = name, .dtype = dt, .ndim = ndim, .buf = p->bufs.len};
  memcpy(q.shape, shape, sizeof(int64_t) * (size_t)ndim);
  vec_push(&cx->arena, &p->params, q);
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_PARAM, dt, numel, name, p->params.len - 1, false}));
}

static void add_result(Ctx *cx, LProgram *p, const char *name, DType dt, int ndim, const int64_t *shape) {
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++)
    numel *= shape[d];
  LOutput o = {.buf = p->bufs.len, .dtype = dt, .view = view_contiguous(ndim, shape)};
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_RESULT, dt, numel, name, -1, false}));
  vec_push(&cx->arena, &p->outputs, o);
}

// a op b lane by lane (lx_binary makes scalars).
static LExpr *vbinary(Ctx *cx, Op op, LExpr *a, LExpr *b) {
  LExpr *e = lx_binary(cx, op, a->dt, a, b);
  e->lanes = a->lanes;
  return e;
}

// An affine index base + sum coef_i * var_i over up to two variables (coef 0: unused).
static LIndex at2(int64_t base, int v0, int64_t c0, int v1, int64_t c1) {
  LIndex ix = {.base = base};
  if (c0)
    ix.var[ix.nterms] = v0, ix.coef[ix.nterms++] = c0;
  if (c1)
    ix.var[ix.nterms] = v1, ix.coef[ix.nterms++] = c1;
  return ix;
}

// A GEMM micro-kernel of R rows by 16 f32 lanes, the shape ir/gemm.c schedules, over
// T tiles of R rows (a parallel loop, t) and K steps (k):
//   let bias x16 = c[0..16)                       (read inside the parallel loop: ctx)
//   parallel for t < T:
//     let acc0 = bias; let acc1..acc(R-1) = splat(r)
//     for k < K: let bv x16 = b[k, 0..16); acc_r = fma(splat(a[R t + r, k]), bv, acc_r)
//     out[R t + r, 0..16) = acc_r                 (vector stores; out may stream)
//     lanes[R t + r] = lane (7 r) % 16 of acc_r   (scalar stores)
//     mix[t, 0..16) = (acc0 + acc1) * acc(R-1) - bias
enum { VK = 8, VL = 16 };
static LProgram *vgemm_program(Ctx *cx, const char *name, int R, int T, bool stream) {
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = name;
  p->file = "t.tdsl";
  add_param(cx, p, "a", DT_F32, 2, (int64_t[]){R * T, VK});
  add_param(cx, p, "b", DT_F32, 2, (int64_t[]){VK, VL});
  add_param(cx, p, "c", DT_F32, 1, (int64_t[]){VL});
  add_result(cx, p, "out", DT_F32, 2, (int64_t[]){R * T, VL});
  add_result(cx, p, "lanes", DT_F32, 1, (int64_t[]){R * T});
  add_result(cx, p, "mix", DT_F32, 2, (int64_t[]){T, VL});
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = "k0";
  for (int i = 0; i < 6; i++)
    vec_push(&cx->arena, &k->args, ((LArg){.buf = i, .read = i < 3, .written = i >= 3, .stream = i == 3 && stream}));
  for (int l = 0; l < R + 2; l++)  // bias, acc0..acc(R-1), bv
    vec_push(&cx->arena, &k->locals, DT_F32);
  k->nvars = 2;
  enum { T_ = 0, K_ = 1 };
  int bias = 0, bv = R + 1;
  vec_push(&cx->arena, &k->body, ls_let(cx, bias, lx_vload(cx, DT_F32, VL, 2, at2(0, 0, 0, 0, 0))));
  LStmt *tl = ls_loop(cx, T_, T);
  tl->parallel = true;
  vec_push(&cx->arena, &k->body, tl);
  for (int r = 0; r < R; r++) {
    LExpr *init = r == 0 ? lx_local_v(cx, DT_F32, VL, bias) : lx_splat(cx, VL, lx_const_f(cx, DT_F32, r));
    vec_push(&cx->arena, &tl->body, ls_let(cx, 1 + r, init));
  }
  LStmt *kl = ls_loop(cx, K_, VK);
  vec_push(&cx->arena, &tl->body, kl);
  vec_push(&cx->arena, &kl->body, ls_let(cx, bv, lx_vload(cx, DT_F32, VL, 1, at2(0, K_, VL, 0, 0))));
  for (int r = 0; r < R; r++) {
    LExpr *ar = lx_load(cx, DT_F32, 0, at2(r * VK, T_, R * VK, K_, 1));
    LExpr *f = lx_fma(cx, lx_splat(cx, VL, ar), lx_local_v(cx, DT_F32, VL, bv), lx_local_v(cx, DT_F32, VL, 1 + r));
    vec_push(&cx->arena, &kl->body, ls_set(cx, 1 + r, f));
  }
  for (int r = 0; r < R; r++) {
    LExpr *acc = lx_local_v(cx, DT_F32, VL, 1 + r);
    vec_push(&cx->arena, &tl->body, ls_store(cx, 3, at2(r * VL, T_, R * VL, 0, 0), acc));
    vec_push(&cx->arena, &tl->body, ls_store(cx, 4, at2(r, T_, R, 0, 0), lx_lane(cx, acc, (7 * r) % VL)));
  }
  LExpr *sum = vbinary(cx, OP_ADD, lx_local_v(cx, DT_F32, VL, 1), lx_local_v(cx, DT_F32, VL, 2));
  LExpr *prod = vbinary(cx, OP_MUL, sum, lx_local_v(cx, DT_F32, VL, R));
  LExpr *mix = vbinary(cx, OP_SUB, prod, lx_local_v(cx, DT_F32, VL, bias));
  vec_push(&cx->arena, &tl->body, ls_store(cx, 5, at2(0, T_, VL, 0, 0), mix));
  vec_push(&cx->arena, &p->kernels, k);
  loop_verify(p);
  return p;
}

typedef int (*Fn3to3)(const tdsl_tensor *, const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
                      tdsl_tensor *);

// Small integers everywhere: every product and sum is exact, fused or not.
static int use_vgemm(void *ctx, void *const *addrs) {
  const int *rt = ctx, R = rt[0], T = rt[1];
  tdsl_tensor a = make(TDSL_F32, 2, (int64_t[]){R * T, VK}), b = make(TDSL_F32, 2, (int64_t[]){VK, VL});
  tdsl_tensor c = make(TDSL_F32, 1, (int64_t[]){VL}), out[3] = {0};
  float *av = tdsl_tensor_data(&a), *bv = tdsl_tensor_data(&b), *cv = tdsl_tensor_data(&c);
  for (int i = 0; i < R * T * VK; i++)
    av[i] = (float)((i * 5) % 7 - 3);
  for (int i = 0; i < VK * VL; i++)
    bv[i] = (float)((i * 11) % 9 - 4);
  for (int j = 0; j < VL; j++)
    cv[j] = (float)(j % 5 - 2);
  for (int rep = 0; rep < 2; rep++) {  // the second call reuses nothing of the first
    assert_int_equal(((Fn3to3)(uintptr_t)addrs[0])(&a, &b, &c, &out[0], &out[1], &out[2]), TDSL_OK);
    const float *o = tdsl_tensor_data(&out[0]), *lanes = tdsl_tensor_data(&out[1]), *mix = tdsl_tensor_data(&out[2]);
    for (int t = 0; t < T; t++) {
      float acc[8][VL];
      for (int r = 0; r < R; r++)
        for (int j = 0; j < VL; j++) {
          acc[r][j] = r == 0 ? cv[j] : (float)r;
          for (int k = 0; k < VK; k++)
            acc[r][j] += av[(R * t + r) * VK + k] * bv[k * VL + j];
          assert_true(o[(R * t + r) * VL + j] == acc[r][j]);
        }
      for (int r = 0; r < R; r++)
        assert_true(lanes[R * t + r] == acc[r][(7 * r) % VL]);
      for (int j = 0; j < VL; j++)
        assert_true(mix[t * VL + j] == (acc[0][j] + acc[1][j]) * acc[R - 1][j] - cv[j]);
    }
    for (int i = 0; i < 3; i++)
      tdsl_tensor_release(&out[i]);
  }
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  tdsl_tensor_release(&c);
  return 0;
}

static void vector_fma_micro_kernel_computes_a_gemm_tile(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[2] = {vgemm_program(&cx, "v3", 3, 4, false), vgemm_program(&cx, "v3s", 3, 4, true)};
  const char *names[] = {"v3", "v3s"};
  for (int i = 0; i < 2; i++) {
    int rt[2] = {3, 4};
    jit(&cx, progs + i, 1, names + i, 1, use_vgemm, rt);
  }
  // vector types, the fmuladd overload, splats and lane extracts, before optimisation
  char *ir = emit(&cx, progs, 1, LLVM_OUT_IR, "x86-64", 0, NULL);
  assert_non_null(strstr(ir, "@llvm.fmuladd.v16f32(<16 x float>"));
  assert_non_null(strstr(ir, "shufflevector <16 x float>"));
  assert_non_null(strstr(ir, "extractelement <16 x float>"));
  assert_non_null(strstr(ir, "alloca <16 x float>"));
  assert_non_null(strstr(ir, "load <16 x float>, <16 x float>* "));
  free(ir);
  // at -O2 sroa keeps the accumulators in registers: no vector alloca is left
  ir = emit(&cx, progs, 1, LLVM_OUT_IR, "haswell", 2, NULL);
  assert_null(strstr(ir, "alloca <16 x float>"));
  assert_non_null(strstr(ir, "@llvm.fmuladd.v16f32("));
  free(ir);
  ctx_free(&cx);
}

// A streamed result written by 64-byte vector stores from 64-byte aligned rows: the
// stores become non-temporal, and the FMA loop runs on ymm registers on an AVX2 CPU.
static void streamed_vector_stores_are_nontemporal(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[1] = {vgemm_program(&cx, "v3s", 3, 4, true)};
  char *ir = emit(&cx, progs, 1, LLVM_OUT_IR, "haswell", 2, NULL);
  const char *st = strstr(ir, "store <16 x float>");
  bool nt = false;
  for (; st && !nt; st = strstr(st + 1, "store <16 x float>")) {
    const char *eol = strchr(st, '\n');
    const char *mark = strstr(st, "!nontemporal");
    nt = mark && (!eol || mark < eol);
  }
  assert_true(nt);
  free(ir);
  char *s = emit(&cx, progs, 1, LLVM_OUT_ASM, "haswell", 2, NULL);
  assert_non_null(strstr(s, "vfmadd"));
  assert_non_null(strstr(s, "vmovntps"));
  free(s);
  ctx_free(&cx);
}

// f64 in 4 lanes, and the scalar fmuladd:
//   let acc x4 = splat(0.5); let t = 0
//   for k < 8: acc = fma(splat(s[k]), x[k, 0..4), acc); t = fma(s[k], s[k], t)
//   out[0..4) = acc; out[4..8) = acc - splat(t); sc[0] = t; sc[1] = lane 3 of acc
static LProgram *vf64_program(Ctx *cx) {
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = "v64";
  p->file = "t.tdsl";
  add_param(cx, p, "s", DT_F64, 1, (int64_t[]){8});
  add_param(cx, p, "x", DT_F64, 2, (int64_t[]){8, 4});
  add_result(cx, p, "out", DT_F64, 1, (int64_t[]){8});
  add_result(cx, p, "sc", DT_F64, 1, (int64_t[]){2});
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = "k0";
  for (int i = 0; i < 4; i++)
    vec_push(&cx->arena, &k->args, ((LArg){.buf = i, .read = i < 2, .written = i >= 2}));
  vec_push(&cx->arena, &k->locals, DT_F64);  // acc x4
  vec_push(&cx->arena, &k->locals, DT_F64);  // t
  k->nvars = 1;
  vec_push(&cx->arena, &k->body, ls_let(cx, 0, lx_splat(cx, 4, lx_const_f(cx, DT_F64, 0.5))));
  vec_push(&cx->arena, &k->body, ls_let(cx, 1, lx_const_f(cx, DT_F64, 0)));
  LStmt *kl = ls_loop(cx, 0, 8);
  vec_push(&cx->arena, &k->body, kl);
  LExpr *sk = lx_load(cx, DT_F64, 0, at2(0, 0, 1, 0, 0));
  LExpr *f = lx_fma(cx, lx_splat(cx, 4, sk), lx_vload(cx, DT_F64, 4, 1, at2(0, 0, 4, 0, 0)),
                    lx_local_v(cx, DT_F64, 4, 0));
  vec_push(&cx->arena, &kl->body, ls_set(cx, 0, f));
  vec_push(&cx->arena, &kl->body, ls_set(cx, 1, lx_fma(cx, sk, sk, lx_local(cx, DT_F64, 1))));
  LExpr *acc = lx_local_v(cx, DT_F64, 4, 0);
  vec_push(&cx->arena, &k->body, ls_store(cx, 2, at2(0, 0, 0, 0, 0), acc));
  LExpr *d = vbinary(cx, OP_SUB, acc, lx_splat(cx, 4, lx_local(cx, DT_F64, 1)));
  vec_push(&cx->arena, &k->body, ls_store(cx, 2, at2(4, 0, 0, 0, 0), d));
  vec_push(&cx->arena, &k->body, ls_store(cx, 3, at2(0, 0, 0, 0, 0), lx_local(cx, DT_F64, 1)));
  vec_push(&cx->arena, &k->body, ls_store(cx, 3, at2(1, 0, 0, 0, 0), lx_lane(cx, acc, 3)));
  vec_push(&cx->arena, &p->kernels, k);
  loop_verify(p);
  return p;
}

static int use_vf64(void *ctx, void *const *addrs) {
  (void)ctx;
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *))(uintptr_t)addrs[0];
  tdsl_tensor s = make(TDSL_F64, 1, (int64_t[]){8}), x = make(TDSL_F64, 2, (int64_t[]){8, 4}), out[2] = {0};
  double *sv = tdsl_tensor_data(&s), *xv = tdsl_tensor_data(&x);
  for (int i = 0; i < 8; i++)
    sv[i] = i - 3;
  for (int i = 0; i < 32; i++)
    xv[i] = (i * 7) % 11 - 5;
  assert_int_equal(f(&s, &x, &out[0], &out[1]), TDSL_OK);
  const double *o = tdsl_tensor_data(&out[0]), *sc = tdsl_tensor_data(&out[1]);
  double acc[4], t = 0;
  for (int j = 0; j < 4; j++) {
    acc[j] = 0.5;
    for (int k = 0; k < 8; k++)
      acc[j] += sv[k] * xv[k * 4 + j];
  }
  for (int k = 0; k < 8; k++)
    t += sv[k] * sv[k];
  for (int j = 0; j < 4; j++) {
    assert_true(o[j] == acc[j]);
    assert_true(o[4 + j] == acc[j] - t);
  }
  assert_true(sc[0] == t);
  assert_true(sc[1] == acc[3]);
  tdsl_tensor_release(&out[0]);
  tdsl_tensor_release(&out[1]);
  tdsl_tensor_release(&s);
  tdsl_tensor_release(&x);
  return 0;
}

static void f64_vectors_and_scalar_fma_compute_exact_values(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[1] = {vf64_program(&cx)};
  const char *names[] = {"v64"};
  jit(&cx, progs, 1, names, 1, use_vf64, NULL);
  char *ir = emit(&cx, progs, 1, LLVM_OUT_IR, "x86-64", 0, NULL);
  assert_non_null(strstr(ir, "@llvm.fmuladd.v4f64(<4 x double>"));
  assert_non_null(strstr(ir, "@llvm.fmuladd.f64(double"));
  assert_non_null(strstr(ir, "store <4 x double>"));
  free(ir);
  ctx_free(&cx);
}

static int use_never(void *ctx, void *const *addrs) {
  (void)ctx, (void)addrs;
  fail_msg("use must not be called when the JIT fails");
  return 0;
}

static void jit_failure_is_an_error_message_not_a_crash(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[1];
  compile_src(&cx, "fn f(x: f32[8]) -> f32[8] {\n  return x + 1\n}\n", progs, 1);
  LlvmOptions o = {.opt = 1};
  int rc = -1;
  // the runtime without tdsl_entry_begin: the symbol cannot be resolved
  const char *names[] = {"f"};
  const char *err = llvm_jit_run(&cx, progs, 1, &o, runtime + 1, NRT - 1, names, 1, use_never, NULL, &rc);
  assert_non_null(err);
  assert_non_null(strstr(err, "llvm jit: looking up 'f'"));
  assert_non_null(strstr(err, "tdsl_entry_begin"));
  // a name the module does not define
  const char *missing[] = {"nothing_here"};
  err = llvm_jit_run(&cx, progs, 1, &o, runtime, NRT, missing, 1, use_never, NULL, &rc);
  assert_non_null(err);
  assert_non_null(strstr(err, "nothing_here"));
  assert_int_equal(rc, -1);
  ctx_free(&cx);
}

int main(void) {
  setenv("TDSL_NUM_THREADS", "4", 0);  // parallel loops run on several threads even on a small machine
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fused_elementwise_program_computes_its_values),
      cmocka_unit_test(half_conversions_match_the_runtime_bit_for_bit),
      cmocka_unit_test(integer_ops_follow_python_and_wrap),
      cmocka_unit_test(division_by_zero_is_a_located_data_error),
      cmocka_unit_test(float_ops_propagate_nan_and_floor_like_pytorch),
      cmocka_unit_test(first_index_error_wins_even_in_a_parallel_loop),
      cmocka_unit_test(parallel_blocks_inside_a_serial_loop_compute_the_matmul),
      cmocka_unit_test(identical_kernels_are_compiled_once_at_O2),
      cmocka_unit_test(emitted_ir_is_accepted_by_llvm_as),
      cmocka_unit_test(elementwise_loops_are_vectorized_at_O2),
      cmocka_unit_test(object_output_is_a_relocatable_elf),
      cmocka_unit_test(vector_fma_micro_kernel_computes_a_gemm_tile),
      cmocka_unit_test(streamed_vector_stores_are_nontemporal),
      cmocka_unit_test(f64_vectors_and_scalar_fma_compute_exact_values),
      cmocka_unit_test(jit_failure_is_an_error_message_not_a_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
