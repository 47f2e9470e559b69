// tests/unit/test_c.c: codegen/c.c and runtime/entry.c. Each test prints programs as C
// (built by the whole pipeline from source, or by hand with the lx_*/ls_* constructors),
// compiles them with `cc -std=c11 -O2 -fopenmp -Wall -Werror -shared -fPIC`, loads the
// object with dlopen and calls the entry the way a C user would (vector programs with
// the driver's -march=native flags, for the host's vector units). The object resolves
// tdsl_* to this executable's runtime (the build exports it, as it does for tdslc).
// Expected values are computed here independently: by hand, by the runtime's own
// f16/bf16 conversions, or by plain C arithmetic on int64.
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
#include "frontend/frontend.h"
#include "tdsl.h"

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
  assert_int_equal(cc_build(l, progs, n, "-fopenmp", true), 0);
  assert_non_null(l->so);
}

// The whole pipeline on src: every function of the file, in order.
static int compile_src(Lib *l, const char *src, LProgram **out, int max) {
  SrcFile *f = srcfile_from_string(&l->cx, "t.tdsl", src, strlen(src));
  Program prog = {0};
  prog.ast = parse_program(&l->cx, f);
  assert_non_null(prog.ast);
  assert_true(sema_check(&l->cx, &prog));
  assert_int_equal(l->cx.nerrors, 0);
  assert_true(prog.fns.len <= max);
  CpuTarget host = cpu_target(NULL);
  for (int i = 0; i < prog.fns.len; i++) {
    Graph *g = lower_fn(&l->cx, &prog, prog.fns.data[i]);
    fuse_graph(g);
    out[i] = kernel_build(&l->cx, g, &host);
    loop_verify(out[i]);
  }
  assert_int_equal(l->cx.nerrors, 0);
  return prog.fns.len;
}

static Lib *load_src(const char *src) {
  Lib *l = calloc(1, sizeof *l);
  ctx_init(&l->cx);
  LProgram *progs[8];
  int n = compile_src(l, src, progs, 8);
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

typedef int (*Fn1)(const tdsl_tensor *, tdsl_tensor *);
typedef int (*Fn2)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *);
typedef int (*Fn1x2)(const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *);
typedef int (*Fn2x2)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *);

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

static void fused_elementwise_program_computes_its_values(void **state) {
  (void)state;
  Lib *l = load_src("fn f(x: f32[2, 3], y: f32[3]) -> f32[2, 3] {\n  return x * 2 + y\n}\n");
  Fn2 f = (Fn2)sym(l, "f");
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
  unload(l);
}

static void half_conversions_match_the_runtime_bit_for_bit(void **state) {
  (void)state;
  Lib *l = load_src("fn down(x: f32[64]) -> (f16[64], bf16[64]) {\n  return x.half(), x.bfloat16()\n}\n"
                    "fn up(h: f16[65536], b: bf16[65536]) -> (f32[65536], f32[65536]) {\n"
                    "  return h.float(), b.float()\n}\n");
  // every f16 and bf16 bit pattern widens as the runtime widens it
  int (*up)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *))sym(l, "up");
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
  // narrowing rounds to nearest even, subnormals and overflow included
  float xs[64] = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 1e10f, -1e10f, INFINITY, -INFINITY, NAN,
                  5.9604645e-08f /* 2^-24 */, 2.9802322e-08f /* 2^-25: tie to 0 */, 2.9802326e-08f,
                  8.940697e-08f /* 1.5 * 2^-24: tie to 2^-23 */, 6.1035156e-05f /* 2^-14 */, 6.1e-05f,
                  1.00048828125f /* tie */, 1.0014648f, 3.14159265f, -2.71828f, 1e-40f, 0.1f, 0.3333333f};
  for (int i = 24; i < 64; i++)
    xs[i] = (float)((i * 7919) % 1000 - 500) * powf(2.0f, (float)(i % 40 - 30)) / 3.0f;
  int (*down)(const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *))sym(l, "down");
  tdsl_tensor x = f32_vec(64, xs), d0 = {0}, d1 = {0};
  assert_int_equal(down(&x, &d0, &d1), TDSL_OK);
  const uint16_t *h16 = tdsl_tensor_data(&d0), *b16 = tdsl_tensor_data(&d1);
  for (int i = 0; i < 64; i++) {
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
  unload(l);
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

static void integer_ops_follow_python_and_wrap(void **state) {
  (void)state;
  Lib *l = load_src("fn f(a: i64[8], b: i64[8]) -> (i64[8], i64[8], i64[8], i64[8], i64[8]) {\n"
                    "  return a // b, a % b, a * b, -a, a ** 3\n}\n");
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
           tdsl_tensor *) = (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
                                     tdsl_tensor *, tdsl_tensor *, tdsl_tensor *))sym(l, "f");
  int64_t av[8] = {7, -7, 7, -7, INT64_MIN, INT64_MIN, INT64_MAX, 3037000500};
  int64_t bv[8] = {2, 2, -2, -2, -1, 3, 2, 3037000500};
  tdsl_tensor a = i64_vec(8, av), b = i64_vec(8, bv), o[5] = {{0}};
  assert_int_equal(f(&a, &b, &o[0], &o[1], &o[2], &o[3], &o[4]), TDSL_OK);
  const int64_t *q = tdsl_tensor_data(&o[0]), *r = tdsl_tensor_data(&o[1]), *m = tdsl_tensor_data(&o[2]),
                *n = tdsl_tensor_data(&o[3]), *p = tdsl_tensor_data(&o[4]);
  for (int i = 0; i < 8; i++) {
    uint64_t ua = (uint64_t)av[i], ub = (uint64_t)bv[i];
    assert_int_equal(q[i], py_floordiv(av[i], bv[i]));
    assert_int_equal(r[i], py_mod(av[i], bv[i]));
    assert_int_equal(m[i], (int64_t)(ua * ub));
    assert_int_equal(n[i], (int64_t)(0 - ua));
    assert_int_equal(p[i], (int64_t)(ua * ua * ua));
  }
  assert_int_equal(q[0], 3);
  assert_int_equal(q[1], -4);
  assert_int_equal(r[1], 1);
  assert_int_equal(r[2], -1);
  assert_int_equal(q[4], INT64_MIN);  // INT64_MIN // -1 wraps
  for (int i = 0; i < 5; i++)
    tdsl_tensor_release(&o[i]);
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  unload(l);
}

static void division_by_zero_is_a_located_data_error(void **state) {
  (void)state;
  Lib *l = load_src("fn f(a: i32[4], b: i32[4]) -> i32[4] {\n  return a // b\n}\n");
  Fn2 f = (Fn2)sym(l, "f");
  tdsl_tensor a = make(TDSL_I32, 1, (int64_t[]){4}), b = make(TDSL_I32, 1, (int64_t[]){4}), out = {0};
  int32_t *bp = tdsl_tensor_data(&b);
  bp[0] = bp[1] = bp[3] = 1;  // bp[2] stays 0
  assert_int_equal(f(&a, &b, &out), TDSL_ERR_DATA);
  assert_string_equal(tdsl_last_error(), "t.tdsl:2:10: error: ZeroDivisionError");
  assert_null(out.storage);  // no result on failure, nothing to release
  tdsl_tensor_release(&a);
  tdsl_tensor_release(&b);
  unload(l);
}

static void float_ops_propagate_nan_and_floor_like_pytorch(void **state) {
  (void)state;
  Lib *l = load_src("fn f(a: f32[6], b: f32[6]) -> (f32[6], f32[6], f32[6], i32[6]) {\n"
                    "  return maximum(a, b), a // b, a % b, a.int()\n}\n");
  int (*f)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *) =
      (int (*)(const tdsl_tensor *, const tdsl_tensor *, tdsl_tensor *, tdsl_tensor *, tdsl_tensor *,
               tdsl_tensor *))sym(l, "f");
  float av[6] = {NAN, 1, -7.5f, 7.5f, 1e10f, -0.5f}, bv[6] = {1, NAN, 2, -2, 0, INFINITY};
  tdsl_tensor a = f32_vec(6, av), b = f32_vec(6, bv), o[4] = {{0}};
  assert_int_equal(f(&a, &b, &o[0], &o[1], &o[2], &o[3]), TDSL_OK);
  const float *mx = tdsl_tensor_data(&o[0]), *fd = tdsl_tensor_data(&o[1]), *rm = tdsl_tensor_data(&o[2]);
  const int32_t *ci = tdsl_tensor_data(&o[3]);
  assert_true(isnan(mx[0]) && isnan(mx[1]));
  assert_true(mx[2] == 2 && mx[3] == 7.5f);
  assert_true(fd[2] == -4 && fd[3] == -4);       // floor(-3.75), floor(-3.75)
  assert_true(isinf(fd[4]) && fd[4] > 0);        // 1e10 // 0 = inf (IEEE a / b)
  assert_true(fd[5] == -1);                      // -0.5 // inf: mod = -0.5 of the other sign => -1
  assert_true(rm[2] == 0.5f && rm[3] == -0.5f);  // the sign of b
  assert_int_equal(ci[0], INT32_MIN);            // nan -> the minimum
  assert_int_equal(ci[2], -7);                   // truncation toward zero
  assert_int_equal(ci[4], INT32_MIN);            // out of range -> the minimum
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
  tdsl_tensor x = make(TDSL_F64, 2, (int64_t[]){2, 3}), out = {0};
  assert_int_equal(f(&x, &out), TDSL_ERR_ARG);
  assert_string_equal(tdsl_last_error(), "f: argument 'x' must be f32[2, 3] but is f64[2, 3]");
  tdsl_tensor_release(&x);
  x = make(TDSL_F32, 1, (int64_t[]){6});
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
  tdsl_tensor base = f32_vec(6, vals), x, out = {0};
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
  tdsl_tensor x = make(TDSL_I32, 2, (int64_t[]){4, 4}), out = {0};
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

// By hand: out[i] = x[checked(idx[i], 10)] over a parallel loop; several indices are
// bad, and the reported one is the first in iteration order, whatever the threads do.
static LProgram *gather_program(Ctx *cx, bool parallel) {
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = parallel ? "gpar" : "gseq";
  p->file = "t.tdsl";
  vec_push(&cx->arena, &p->params, ((LParam){.name = "idx", .dtype = DT_I64, .ndim = 1, .shape = {1000}, .buf = 0}));
  vec_push(&cx->arena, &p->params, ((LParam){.name = "x", .dtype = DT_F32, .ndim = 1, .shape = {10}, .buf = 1}));
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_PARAM, DT_I64, 1000, "idx", 0, false}));
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_PARAM, DT_F32, 10, "x", 1, false}));
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_RESULT, DT_F32, 1000, "out", -1, false}));
  LOutput o = {.buf = 2, .dtype = DT_F32, .view = view_contiguous(1, (int64_t[]){1000})};
  vec_push(&cx->arena, &p->outputs, o);
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = "k0";
  vec_push(&cx->arena, &k->args, ((LArg){.buf = 0, .read = true, .written = false}));
  vec_push(&cx->arena, &k->args, ((LArg){.buf = 1, .read = true, .written = false}));
  vec_push(&cx->arena, &k->args, ((LArg){.buf = 2, .read = false, .written = true}));
  vec_push(&cx->arena, &k->errors, "t.tdsl:1:5: error: index %lld is out of bounds for dimension 0 with size 10");
  k->nvars = 1;
  LIndex at_i = {.nterms = 1, .var = {0}, .coef = {1}};
  LExpr *ci = arena_alloc(&cx->arena, sizeof *ci);
  *ci = (LExpr){.kind = LX_CHECKED_INDEX, .dt = DT_I64, .a = lx_load(cx, DT_I64, 0, at_i), .i = 10, .err = 0, .wrap = true,
                .buf = -1, .local = -1, .var = -1, .lanes = 1};
  LIndex at_dyn = {.dyn = ci};
  LStmt *loop = ls_loop(cx, 0, 1000);
  loop->parallel = parallel;
  vec_push(&cx->arena, &loop->body, ls_store(cx, 2, at_i, lx_load(cx, DT_F32, 1, at_dyn)));
  vec_push(&cx->arena, &k->body, loop);
  vec_push(&cx->arena, &p->kernels, k);
  loop_verify(p);
  return p;
}

static void first_index_error_wins_even_in_a_parallel_loop(void **state) {
  (void)state;
  Lib *l = calloc(1, sizeof *l);
  ctx_init(&l->cx);
  LProgram *progs[2] = {gather_program(&l->cx, true), gather_program(&l->cx, false)};
  load_progs(l, progs, 2);
  int64_t iv[1000];
  for (int i = 0; i < 1000; i++)
    iv[i] = i % 20 - 10;  // -10 .. 9: all in range
  iv[300] = 57, iv[301] = 10, iv[700] = -99, iv[999] = 12;
  float xv[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  tdsl_tensor idx = i64_vec(1000, iv), x = f32_vec(10, xv), out = {0};
  for (int rep = 0; rep < 20; rep++) {
    Fn2 f = (Fn2)sym(l, rep % 2 ? "gseq" : "gpar");
    assert_int_equal(f(&idx, &x, &out), TDSL_ERR_DATA);
    assert_string_equal(tdsl_last_error(), "t.tdsl:1:5: error: index 57 is out of bounds for dimension 0 with size 10");
  }
  iv[300] = 0, iv[301] = 0, iv[700] = 0, iv[999] = -1;
  tdsl_tensor_release(&idx);
  idx = i64_vec(1000, iv);
  assert_int_equal(((Fn2)sym(l, "gpar"))(&idx, &x, &out), TDSL_OK);
  const float *o = tdsl_tensor_data(&out);
  assert_true(o[0] == 0 && o[999] == 9 && o[1] == 1);
  tdsl_tensor_release(&out);
  tdsl_tensor_release(&idx);
  tdsl_tensor_release(&x);
  unload(l);
}

// ---- vector programs, by hand ----
static LProgram *new_program(Ctx *cx, const char *name) {
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = name;
  p->file = "t.tdsl";
  return p;
}

// A parameter of n elements; its buffer.
static int vparam(Ctx *cx, LProgram *p, const char *name, DType dt, int64_t n) {
  int b = p->bufs.len;
  vec_push(&cx->arena, &p->params, ((LParam){.name = name, .dtype = dt, .ndim = 1, .shape = {n}, .buf = b}));
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_PARAM, dt, n, name, p->params.len - 1, false}));
  return b;
}

// A result of n elements; its buffer.
static int vresult(Ctx *cx, LProgram *p, const char *name, DType dt, int64_t n) {
  int b = p->bufs.len;
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_RESULT, dt, n, name, -1, false}));
  vec_push(&cx->arena, &p->outputs, ((LOutput){.buf = b, .dtype = dt, .view = view_contiguous(1, (int64_t[]){n})}));
  return b;
}

// a op b lane by lane (lx_binary makes scalars).
static LExpr *vbinary(Ctx *cx, Op op, LExpr *a, LExpr *b) {
  LExpr *e = lx_binary(cx, op, a->dt, a, b);
  e->lanes = a->lanes;
  return e;
}

// A kernel whose argument i is buffer i of p, read and written as said.
static LKernel *vkernel(Ctx *cx, LProgram *p, const bool *read, const bool *written, int nvars) {
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = "k0";
  k->nvars = nvars;
  for (int i = 0; i < p->bufs.len; i++)
    vec_push(&cx->arena, &k->args, ((LArg){.buf = i, .read = read[i], .written = written[i]}));
  vec_push(&cx->arena, &p->kernels, k);
  return k;
}

// base + sum of coef * var over the (var, coef) pairs given.
static LIndex at(int64_t base, int nterms, int v0, int64_t c0, int v1, int64_t c1) {
  return (LIndex){.base = base, .nterms = nterms, .var = {v0, v1}, .coef = {c0, c1}};
}

// The 3x16 f32 micro-kernel over two column blocks (a parallel loop) of
// c[3, 32] = a[3, 7] @ b[7, 32]: three accumulators of 16 lanes, fma over k. Row 2
// starts from b's row 0 and then has its lane 0 subtracted from every lane (the whole
// vector is read before it is written); e gets single lanes: e[3 * blk + 0..3] =
// t0.5, t1.15 * 2, fma(t0.0, t1.1, 3).
static LProgram *micro_kernel_program(Ctx *cx) {
  LProgram *p = new_program(cx, "mk");
  int a = vparam(cx, p, "a", DT_F32, 21), b = vparam(cx, p, "b", DT_F32, 224);
  int c = vresult(cx, p, "c", DT_F32, 96), e = vresult(cx, p, "e", DT_F32, 6);
  LKernel *k = vkernel(cx, p, (bool[]){true, true, false, false}, (bool[]){false, false, true, true}, 2);
  for (int i = 0; i < 3; i++)
    vec_push(&cx->arena, &k->locals, DT_F32);
  LStmt *blk = ls_loop(cx, 0, 2), *kl = ls_loop(cx, 1, 7);
  blk->parallel = true;
  LExpr *zero = lx_const_f(cx, DT_F32, 0);
  vec_push(&cx->arena, &blk->body, ls_let(cx, 0, lx_splat(cx, 16, zero)));
  vec_push(&cx->arena, &blk->body, ls_let(cx, 1, lx_splat(cx, 16, zero)));
  vec_push(&cx->arena, &blk->body, ls_let(cx, 2, lx_vload(cx, DT_F32, 16, b, at(0, 1, 0, 16, -1, 0))));
  for (int r = 0; r < 3; r++) {
    LExpr *ar = lx_splat(cx, 16, lx_load(cx, DT_F32, a, at(7 * r, 1, 1, 1, -1, 0)));
    LExpr *brow = lx_vload(cx, DT_F32, 16, b, at(0, 2, 1, 32, 0, 16));
    vec_push(&cx->arena, &kl->body, ls_set(cx, r, lx_fma(cx, ar, brow, lx_local_v(cx, DT_F32, 16, r))));
  }
  vec_push(&cx->arena, &blk->body, kl);
  LExpr *t0 = lx_local_v(cx, DT_F32, 16, 0), *t1 = lx_local_v(cx, DT_F32, 16, 1), *t2 = lx_local_v(cx, DT_F32, 16, 2);
  vec_push(&cx->arena, &blk->body, ls_store(cx, c, at(0, 1, 0, 16, -1, 0), t0));
  LExpr *one = lx_splat(cx, 16, lx_const_f(cx, DT_F32, 1));
  vec_push(&cx->arena, &blk->body, ls_store(cx, c, at(32, 1, 0, 16, -1, 0), vbinary(cx, OP_ADD, t1, one)));
  LExpr *lane0 = lx_splat(cx, 16, lx_lane(cx, t2, 0));
  vec_push(&cx->arena, &blk->body, ls_set(cx, 2, vbinary(cx, OP_SUB, t2, lane0)));
  vec_push(&cx->arena, &blk->body, ls_store(cx, c, at(64, 1, 0, 16, -1, 0), t2));
  vec_push(&cx->arena, &blk->body, ls_store(cx, e, at(0, 1, 0, 3, -1, 0), lx_lane(cx, t0, 5)));
  LExpr *twice = lx_binary(cx, OP_MUL, DT_F32, lx_lane(cx, t1, 15), lx_const_f(cx, DT_F32, 2));
  vec_push(&cx->arena, &blk->body, ls_store(cx, e, at(1, 1, 0, 3, -1, 0), twice));
  LExpr *sfma = lx_fma(cx, lx_lane(cx, t0, 0), lx_lane(cx, t1, 1), lx_const_f(cx, DT_F32, 3));
  vec_push(&cx->arena, &blk->body, ls_store(cx, e, at(2, 1, 0, 3, -1, 0), sfma));
  vec_push(&cx->arena, &k->body, blk);
  loop_verify(p);
  return p;
}

// f64 vectors of 4 lanes: for each of two blocks, t0 = fma(x, y, splat(2)),
// o[4 * blk + 0..4] = t0 - y, s[blk] = t0.3; then o[1 + 0..4] = o[0 + 0..4] + splat(10)
// (a store over its own source: the whole vector is read first) and
// o[8] = fma(x[0], y[0], o[0]) in scalars.
static LProgram *f64_lanes_program(Ctx *cx) {
  LProgram *p = new_program(cx, "v4");
  int x = vparam(cx, p, "x", DT_F64, 8), y = vparam(cx, p, "y", DT_F64, 8);
  int o = vresult(cx, p, "o", DT_F64, 9), s = vresult(cx, p, "s", DT_F64, 2);
  LKernel *k = vkernel(cx, p, (bool[]){true, true, true, false}, (bool[]){false, false, true, true}, 1);
  vec_push(&cx->arena, &k->locals, DT_F64);
  LStmt *blk = ls_loop(cx, 0, 2);
  LIndex i4 = at(0, 1, 0, 4, -1, 0);
  LExpr *yv = lx_vload(cx, DT_F64, 4, y, i4);
  LExpr *f = lx_fma(cx, lx_vload(cx, DT_F64, 4, x, i4), yv, lx_splat(cx, 4, lx_const_f(cx, DT_F64, 2)));
  vec_push(&cx->arena, &blk->body, ls_let(cx, 0, f));
  LExpr *t0 = lx_local_v(cx, DT_F64, 4, 0);
  vec_push(&cx->arena, &blk->body, ls_store(cx, o, i4, vbinary(cx, OP_SUB, t0, yv)));
  vec_push(&cx->arena, &blk->body, ls_store(cx, s, at(0, 1, 0, 1, -1, 0), lx_lane(cx, t0, 3)));
  vec_push(&cx->arena, &k->body, blk);
  LExpr *ten = lx_splat(cx, 4, lx_const_f(cx, DT_F64, 10));
  LExpr *shifted = vbinary(cx, OP_ADD, lx_vload(cx, DT_F64, 4, o, at(0, 0, 0, 0, 0, 0)), ten);
  vec_push(&cx->arena, &k->body, ls_store(cx, o, at(1, 0, 0, 0, 0, 0), shifted));
  LExpr *sf = lx_fma(cx, lx_load(cx, DT_F64, x, at(0, 0, 0, 0, 0, 0)), lx_load(cx, DT_F64, y, at(0, 0, 0, 0, 0, 0)),
                     lx_load(cx, DT_F64, o, at(0, 0, 0, 0, 0, 0)));
  vec_push(&cx->arena, &k->body, ls_store(cx, o, at(8, 0, 0, 0, 0, 0), sf));
  loop_verify(p);
  return p;
}

// The C text of progs.
static char *c_text(Ctx *cx, LProgram **progs, int n) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  target_c.emit(cx, progs, n, f);
  fclose(f);
  return text;
}

// The driver's flags: the host's vector units, which the lane loops are written for.
static const char *const native_flags = "-fopenmp -march=native -fvect-cost-model=dynamic -fno-math-errno";

static void f32_micro_kernel_of_fma_lanes_computes_exact_sums(void **state) {
  (void)state;
  Lib *l = calloc(1, sizeof *l);
  ctx_init(&l->cx);
  LProgram *prog = micro_kernel_program(&l->cx);
  char *text = c_text(&l->cx, &prog, 1);
  // accumulators are lane arrays; each statement of a vector value is one lane loop;
  // the kernel goes without gcc's memcpy/memset patterns (c.c says why)
  assert_non_null(strstr(text, "#pragma GCC push_options\n#pragma GCC optimize(\"no-tree-loop-distribute-patterns\")\n"
                               "#endif\nstatic int tdsl_g_mk_k0("));
  assert_non_null(strstr(text, "    float t0[16];\n"
                               "    for (int tdsl_g_l = 0; tdsl_g_l < 16; tdsl_g_l++) t0[tdsl_g_l] = 0.0f;\n"));
  assert_non_null(strstr(text, "    for (int tdsl_g_l = 0; tdsl_g_l < 16; tdsl_g_l++) "
                               "b2[16 * v0 + tdsl_g_l] = t0[tdsl_g_l];\n"));
  assert_non_null(strstr(text, "\n      for (int tdsl_g_l = 0; tdsl_g_l < 16; tdsl_g_l++) "
                               "t1[tdsl_g_l] = fmaf(b0[7 + v1], b1[32 * v1 + 16 * v0 + tdsl_g_l], t1[tdsl_g_l]);\n"));
  assert_non_null(strstr(text, "b3[2 + 3 * v0] = fmaf(t0[0], t1[1], 3.0f);\n"));
  assert_non_null(strstr(text, "float tdsl_g_v[16];\n"));  // t2 - t2.0 goes through a temporary
  free(text);
  assert_int_equal(cc_build(l, &prog, 1, native_flags, true), 0);
  assert_non_null(l->so);
  float av[21], bv[224];
  for (int i = 0; i < 21; i++)
    av[i] = (float)(i % 5 - 2);
  for (int i = 0; i < 224; i++)
    bv[i] = (float)(i % 7 - 3);
  tdsl_tensor a = f32_vec(21, av), b = f32_vec(224, bv), c = {0}, e = {0};
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
  unload(l);
}

static void f64_lanes_of_four_store_whole_vectors_even_over_their_source(void **state) {
  (void)state;
  Lib *l = calloc(1, sizeof *l);
  ctx_init(&l->cx);
  LProgram *prog = f64_lanes_program(&l->cx);
  char *text = c_text(&l->cx, &prog, 1);
  assert_non_null(strstr(text, "for (int tdsl_g_l = 0; tdsl_g_l < 4; tdsl_g_l++) "
                               "t0[tdsl_g_l] = fma(b0[4 * v0 + tdsl_g_l], b1[4 * v0 + tdsl_g_l], 2.0);\n"));
  assert_non_null(strstr(text, "double tdsl_g_v[4];\n"));
  free(text);
  assert_int_equal(cc_build(l, &prog, 1, native_flags, true), 0);
  assert_non_null(l->so);
  double xv[8], yv[8];
  for (int i = 0; i < 8; i++)
    xv[i] = i - 3, yv[i] = 2 * i + 1;
  tdsl_tensor x = make(TDSL_F64, 1, (int64_t[]){8}), y = make(TDSL_F64, 1, (int64_t[]){8}), o = {0}, s = {0};
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
  unload(l);
}

static void generated_code_compiles_without_openmp_and_with_wextra(void **state) {
  (void)state;
  Lib *l = calloc(1, sizeof *l);
  ctx_init(&l->cx);
  LProgram *progs[6];
  int n = compile_src(l,
                      "fn a(x: f16[4, 8], i: i64[3]) -> (f16[4], f32[3, 8], bf16[4, 8]) {\n"
                      "  return x.sum(1), x.float()[i], softmax(x.bfloat16(), -1)\n}\n"
                      "fn b(mut y: i32[5], z: bool[5]) -> (i32[5], bool[5]) {\n"
                      "  y += 3\n  return where(z, y // 2, y % 3) ** 2, ~z\n}\n",
                      progs, 4);
  progs[n] = gather_program(&l->cx, true);
  progs[n + 1] = micro_kernel_program(&l->cx);
  progs[n + 2] = f64_lanes_program(&l->cx);
  assert_int_equal(cc_build(l, progs, n + 3, "-Wextra -pedantic", false), 0);
  assert_int_equal(cc_build(l, progs, n + 3, "-Wextra -fopenmp", false), 0);
  unload(l);
}

static void header_declares_every_entry(void **state) {
  (void)state;
  Lib *l = calloc(1, sizeof *l);
  ctx_init(&l->cx);
  LProgram *progs[2];
  int n = compile_src(l,
                      "fn a(x: f32[2], mut int: f32[2]) -> f32[2] {\n  return x + int\n}\n"
                      "fn b(out0: f32[3]) -> (f32[3], f32[1]) {\n  return out0, out0[1:2]\n}\n",
                      progs, 2);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  emit_header(&l->cx, progs, n, f);
  fclose(f);
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
      cmocka_unit_test(f32_micro_kernel_of_fma_lanes_computes_exact_sums),
      cmocka_unit_test(f64_lanes_of_four_store_whole_vectors_even_over_their_source),
      cmocka_unit_test(generated_code_compiles_without_openmp_and_with_wextra),
      cmocka_unit_test(header_declares_every_entry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
