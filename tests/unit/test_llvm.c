// tests/unit/test_llvm.c: the LLVM backend (codegen/llvm_*.c). Each test builds programs
// through the whole pipeline (or by hand with the lx_*/ls_* constructors), compiles them
// in-process with llvm_jit_run — given this executable's runtime, as tdslc gives its own
// — and calls the entries the way a C user would, or emits .ll / assembly / objects and
// checks them. Expected values are computed here independently: by hand, by the
// runtime's own f16/bf16 conversions, or by plain C arithmetic. Building programs,
// tensors and the checks test_c.c runs on its own entries come from codegen_fixture.c.
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
#include "codegen_fixture.h"

#define RT(f) {#f, (void (*)(void))f}
static const LlvmSymbol runtime[] = {
    RT(tdsl_entry_begin),  RT(tdsl_entry_end),          RT(tdsl_entry_kernel_error), RT(tdsl_tensor_data),
    RT(tdsl_parallel_for), RT(tdsl_kernel_error_raise), RT(tdsl_kernel_error_seal),   RT(tdsl_scratch),
    RT(tdsl_stream_begin), RT(tdsl_stream_end),
};
#undef RT
enum { NRT = sizeof runtime / sizeof *runtime };

// ---- building, compiling and calling ----
typedef int (*Use)(void *ctx, void *const *addrs);

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
  int n = fx_compile(&cx, src, progs, 8);
  int rc = jit(&cx, progs, n, names, nnames, use, ctx);
  ctx_free(&cx);
  return rc;
}

// What llvm_emit writes for progs, NUL-terminated (malloc'd); *len gets its length.
static char *emit(Ctx *cx, LProgram **progs, int n, LlvmOut kind, const char *cpu, int opt, size_t *len) {
  FxText t;
  LlvmOptions o = {.opt = opt, .cpu = cpu};
  const char *err = llvm_emit(cx, progs, n, &o, kind, fx_text_open(&t));
  char *text = fx_text_close(&t);
  if (err)
    fprintf(stderr, "llvm_emit: %s\n", err);
  assert_null(err);
  if (len)
    *len = t.len;
  return text;
}

// ---- tests ----
static int use_elementwise(void *ctx, void *const *addrs) {
  (void)ctx;
  fx_expect_elementwise((Fn2)(uintptr_t)addrs[0]);
  return 7;
}

static void fused_elementwise_program_computes_its_values(void **state) {
  (void)state;
  const char *names[] = {"f"};
  assert_int_equal(jit_src(FX_ELEMENTWISE_SRC, names, 1, use_elementwise, NULL), 7);
}

static int use_halves(void *ctx, void *const *addrs) {
  (void)ctx;
  fx_expect_widening((FxHalfUp)(uintptr_t)addrs[1]);
  // narrowing rounds to nearest even: the edge cases, then a sweep of f32 bits
  enum { N = 4096 };
  static float xs[N];
  memcpy(xs, fx_half_edges, sizeof fx_half_edges);
  for (int i = FX_NHALF_EDGES; i < N; i++) {
    uint32_t u = (uint32_t)i * 2654435761u;  // spread over every exponent and sign
    memcpy(&xs[i], &u, sizeof u);
  }
  fx_expect_narrowing((FxHalfDown)(uintptr_t)addrs[0], xs, N);
  return 0;
}

static void half_conversions_match_the_runtime_bit_for_bit(void **state) {
  (void)state;
  const char *names[] = {"down", "up"};
  jit_src("fn down(x: f32[4096]) -> (f16[4096], bf16[4096]) {\n  return x.half(), x.bfloat16()\n}\n"
          "fn up(h: f16[65536], b: bf16[65536]) -> (f32[65536], f32[65536]) {\n  return h.float(), b.float()\n}\n",
          names, 2, use_halves, NULL);
}

static int use_ints(void *ctx, void *const *addrs) {
  (void)ctx;
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
           tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
               tdsl_tensor *, tdsl_tensor *))(uintptr_t)addrs[0];
  tdsl_tensor a = fx_i64(FX_NINT, fx_int_a), b = fx_i64(FX_NINT, fx_int_b), o[6] = {{0}};
  assert_int_equal(f(&a, &b, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]), TDSL_OK);
  fx_expect_int_ops(o);
  const int32_t *t = tdsl_tensor_data(&o[5]);
  for (int i = 0; i < FX_NINT; i++)
    assert_int_equal(t[i], (int32_t)(uint32_t)fx_int_a[i]);  // i64 -> i32 wraps
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
  fx_expect_zero_division((Fn2)(uintptr_t)addrs[0]);
  return 0;
}

static void division_by_zero_is_a_located_data_error(void **state) {
  (void)state;
  const char *names[] = {"f"};
  jit_src(FX_ZERO_DIVISION_SRC, names, 1, use_divzero, NULL);
}

static int use_floats(void *ctx, void *const *addrs) {
  (void)ctx;
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
           tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
               tdsl_tensor *, tdsl_tensor *))(uintptr_t)addrs[0];
  tdsl_tensor a = fx_f32(FX_NFLOAT, fx_float_a), b = fx_f32(FX_NFLOAT, fx_float_b), o[6] = {{0}};
  assert_int_equal(f(&a, &b, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]), TDSL_OK);
  fx_expect_float_ops(o);
  const int64_t *cl = tdsl_tensor_data(&o[4]);
  const float *rd = tdsl_tensor_data(&o[5]);
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

// By hand (fx_gather_program): out[i] = x[checked(idx[i], 10)] over a parallel loop of
// 100000 iterations; several indices are bad, and the reported one is the first in
// iteration order, whatever the threads do.
enum { GN = 100000 };
static int use_gather(void *ctx, void *const *addrs) {
  (void)ctx;
  fx_expect_first_index_error((Fn2)(uintptr_t)addrs[0], (Fn2)(uintptr_t)addrs[1], GN,
                              (int64_t[]){70001, 70002, 90000, GN - 1});
  return 0;
}

static void first_index_error_wins_even_in_a_parallel_loop(void **state) {
  (void)state;
  Ctx cx;
  ctx_init(&cx);
  LProgram *progs[2] = {fx_gather_program(&cx, true, GN), fx_gather_program(&cx, false, GN)};
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
  tdsl_tensor a = fx_tensor(TDSL_F32, 2, (int64_t[]){M, K}), b = fx_tensor(TDSL_F32, 2, (int64_t[]){K, N}), out = {0};
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
  fx_compile(&cx, "fn proj(a: f32[2, 64], b: f32[64, 2048]) -> f32[2, 2048] {\n  return a @ b\n}\n", progs, 1);
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
  tdsl_tensor x = fx_tensor(TDSL_F32, 2, (int64_t[]){4, 8}), a = fx_tensor(TDSL_F32, 2, (int64_t[]){8, 8});
  tdsl_tensor b = fx_tensor(TDSL_F32, 2, (int64_t[]){8, 8}), out[2] = {0};
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
  fx_compile(&cx,
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
  int n = fx_compile(&cx,
                      "fn a(x: f16[4, 8], i: i64[3]) -> (f16[4], f32[3, 8], bf16[4, 8]) {\n"
                      "  return x.sum(1), x.float()[i], softmax(x.bfloat16(), -1)\n}\n"
                      "fn b(mut y: i32[5], z: bool[5]) -> (i32[5], bool[5]) {\n"
                      "  y += 3\n  return where(z, y // 2, y % 3) ** 2, ~z\n}\n",
                      progs, 4);
  progs[n] = fx_gather_program(&cx, true, GN);
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
  fx_compile(&cx, "fn f(x: f32[4096], y: f32[4096]) -> f32[4096] {\n  return x * y + 1.5\n}\n", progs, 1);
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
  fx_compile(&cx, "fn f(x: f32[8]) -> f32[8] {\n  return exp(x)\n}\n", progs, 1);
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
  LProgram *p = fx_program(cx, name);
  fx_param(cx, p, "a", DT_F32, 2, (int64_t[]){R * T, VK});
  fx_param(cx, p, "b", DT_F32, 2, (int64_t[]){VK, VL});
  fx_param(cx, p, "c", DT_F32, 1, (int64_t[]){VL});
  fx_result(cx, p, "out", DT_F32, 2, (int64_t[]){R * T, VL});
  fx_result(cx, p, "lanes", DT_F32, 1, (int64_t[]){R * T});
  fx_result(cx, p, "mix", DT_F32, 2, (int64_t[]){T, VL});
  LKernel *k = fx_kernel(cx, p, (bool[]){true, true, true, false, false, false},
                         (bool[]){false, false, false, true, true, true}, 2);
  k->args.data[3].stream = stream;
  for (int l = 0; l < R + 2; l++)  // bias, acc0..acc(R-1), bv
    vec_push(&cx->arena, &k->locals, DT_F32);
  enum { T_ = 0, K_ = 1 };
  int bias = 0, bv = R + 1;
  vec_push(&cx->arena, &k->body, ls_let(cx, bias, lx_vload(cx, DT_F32, VL, 2, fx_at(0, 0, 0, 0, 0))));
  LStmt *tl = ls_loop(cx, T_, T);
  tl->parallel = true;
  vec_push(&cx->arena, &k->body, tl);
  for (int r = 0; r < R; r++) {
    LExpr *init = r == 0 ? lx_local_v(cx, DT_F32, VL, bias) : lx_splat(cx, VL, lx_const_f(cx, DT_F32, r));
    vec_push(&cx->arena, &tl->body, ls_let(cx, 1 + r, init));
  }
  LStmt *kl = ls_loop(cx, K_, VK);
  vec_push(&cx->arena, &tl->body, kl);
  vec_push(&cx->arena, &kl->body, ls_let(cx, bv, lx_vload(cx, DT_F32, VL, 1, fx_at(0, K_, VL, 0, 0))));
  for (int r = 0; r < R; r++) {
    LExpr *ar = lx_load(cx, DT_F32, 0, fx_at(r * VK, T_, R * VK, K_, 1));
    LExpr *f = lx_fma(cx, lx_splat(cx, VL, ar), lx_local_v(cx, DT_F32, VL, bv), lx_local_v(cx, DT_F32, VL, 1 + r));
    vec_push(&cx->arena, &kl->body, ls_set(cx, 1 + r, f));
  }
  for (int r = 0; r < R; r++) {
    LExpr *acc = lx_local_v(cx, DT_F32, VL, 1 + r);
    vec_push(&cx->arena, &tl->body, ls_store(cx, 3, fx_at(r * VL, T_, R * VL, 0, 0), acc));
    vec_push(&cx->arena, &tl->body, ls_store(cx, 4, fx_at(r, T_, R, 0, 0), lx_lane(cx, acc, (7 * r) % VL)));
  }
  LExpr *sum = fx_vbinary(cx, OP_ADD, lx_local_v(cx, DT_F32, VL, 1), lx_local_v(cx, DT_F32, VL, 2));
  LExpr *prod = fx_vbinary(cx, OP_MUL, sum, lx_local_v(cx, DT_F32, VL, R));
  LExpr *mix = fx_vbinary(cx, OP_SUB, prod, lx_local_v(cx, DT_F32, VL, bias));
  vec_push(&cx->arena, &tl->body, ls_store(cx, 5, fx_at(0, T_, VL, 0, 0), mix));
  loop_verify(p);
  return p;
}

typedef int (*Fn3to3)(const tdsl_tensor *, const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
                      tdsl_tensor *);

// Small integers everywhere: every product and sum is exact, fused or not.
static int use_vgemm(void *ctx, void *const *addrs) {
  const int *rt = ctx, R = rt[0], T = rt[1];
  tdsl_tensor a = fx_tensor(TDSL_F32, 2, (int64_t[]){R * T, VK}), b = fx_tensor(TDSL_F32, 2, (int64_t[]){VK, VL});
  tdsl_tensor c = fx_tensor(TDSL_F32, 1, (int64_t[]){VL}), out[3] = {0};
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
  LProgram *p = fx_program(cx, "v64");
  fx_param(cx, p, "s", DT_F64, 1, (int64_t[]){8});
  fx_param(cx, p, "x", DT_F64, 2, (int64_t[]){8, 4});
  fx_result(cx, p, "out", DT_F64, 1, (int64_t[]){8});
  fx_result(cx, p, "sc", DT_F64, 1, (int64_t[]){2});
  LKernel *k = fx_kernel(cx, p, (bool[]){true, true, false, false}, (bool[]){false, false, true, true}, 1);
  vec_push(&cx->arena, &k->locals, DT_F64);  // acc x4
  vec_push(&cx->arena, &k->locals, DT_F64);  // t
  vec_push(&cx->arena, &k->body, ls_let(cx, 0, lx_splat(cx, 4, lx_const_f(cx, DT_F64, 0.5))));
  vec_push(&cx->arena, &k->body, ls_let(cx, 1, lx_const_f(cx, DT_F64, 0)));
  LStmt *kl = ls_loop(cx, 0, 8);
  vec_push(&cx->arena, &k->body, kl);
  LExpr *sk = lx_load(cx, DT_F64, 0, fx_at(0, 0, 1, 0, 0));
  LExpr *f = lx_fma(cx, lx_splat(cx, 4, sk), lx_vload(cx, DT_F64, 4, 1, fx_at(0, 0, 4, 0, 0)),
                    lx_local_v(cx, DT_F64, 4, 0));
  vec_push(&cx->arena, &kl->body, ls_set(cx, 0, f));
  vec_push(&cx->arena, &kl->body, ls_set(cx, 1, lx_fma(cx, sk, sk, lx_local(cx, DT_F64, 1))));
  LExpr *acc = lx_local_v(cx, DT_F64, 4, 0);
  vec_push(&cx->arena, &k->body, ls_store(cx, 2, fx_at(0, 0, 0, 0, 0), acc));
  LExpr *d = fx_vbinary(cx, OP_SUB, acc, lx_splat(cx, 4, lx_local(cx, DT_F64, 1)));
  vec_push(&cx->arena, &k->body, ls_store(cx, 2, fx_at(4, 0, 0, 0, 0), d));
  vec_push(&cx->arena, &k->body, ls_store(cx, 3, fx_at(0, 0, 0, 0, 0), lx_local(cx, DT_F64, 1)));
  vec_push(&cx->arena, &k->body, ls_store(cx, 3, fx_at(1, 0, 0, 0, 0), lx_lane(cx, acc, 3)));
  loop_verify(p);
  return p;
}

static int use_vf64(void *ctx, void *const *addrs) {
  (void)ctx;
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *))(uintptr_t)addrs[0];
  tdsl_tensor s = fx_tensor(TDSL_F64, 1, (int64_t[]){8}), x = fx_tensor(TDSL_F64, 2, (int64_t[]){8, 4}), out[2] = {0};
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
  fx_compile(&cx, "fn f(x: f32[8]) -> f32[8] {\n  return x + 1\n}\n", progs, 1);
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
