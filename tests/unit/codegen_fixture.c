// tests/unit/codegen_fixture.c: the helpers and checks the backend tests share (see
// codegen_fixture.h). Expected values are computed here independently of the backends:
// by hand, by the runtime's own f16/bf16 conversions, or by plain C arithmetic on int64.
// Tensors a check makes are released by it; those it is given stay the caller's.
#include "codegen_fixture.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ---- programs from source ----
static int compile(Ctx *cx, const char *src, const CpuTarget *cpu, LProgram **out, int max) {
  SrcFile *f = srcfile_from_string(cx, "t.tdsl", src, strlen(src));
  Program prog = {0};
  prog.ast = parse_program(cx, f);
  assert_non_null(prog.ast);
  assert_true(sema_check(cx, &prog));
  assert_int_equal(cx->nerrors, 0);
  assert_true(prog.fns.len <= max);
  for (int i = 0; i < prog.fns.len; i++) {
    Graph *g = lower_fn(cx, &prog, prog.fns.data[i], false);  // (Graph.cpu false: fusion stores a matmul's operands)
    fuse_graph(g);
    out[i] = kernel_build(cx, g, cpu);
    loop_verify(out[i]);
    if (!cpu) {  // as the driver does for --target cuda
      share_kernels(cx, out[i]);
      GpuTarget gt = gpu_target(NULL);
      sched_gpu(cx, out[i], &gt);
      loop_verify(out[i]);
    }
  }
  assert_int_equal(cx->nerrors, 0);
  return prog.fns.len;
}

int fx_compile(Ctx *cx, const char *src, LProgram **out, int max) {
  CpuTarget host = cpu_target(NULL);
  return compile(cx, src, &host, out, max);
}

int fx_compile_gpu(Ctx *cx, const char *src, LProgram **out, int max) { return compile(cx, src, NULL, out, max); }

// ---- programs by hand ----
LProgram *fx_program(Ctx *cx, const char *name) {
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = name;
  p->file = "t.tdsl";
  return p;
}

static int64_t numel_of(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++)
    n *= shape[d];
  return n;
}

int fx_param(Ctx *cx, LProgram *p, const char *name, DType dt, int ndim, const int64_t *shape) {
  int b = p->bufs.len;
  LParam q = {.name = name, .dtype = dt, .ndim = ndim, .buf = b};
  memcpy(q.shape, shape, sizeof(int64_t) * (size_t)ndim);
  vec_push(&cx->arena, &p->params, q);
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_PARAM, dt, numel_of(ndim, shape), name, p->params.len - 1, false, false}));
  return b;
}

int fx_result(Ctx *cx, LProgram *p, const char *name, DType dt, int ndim, const int64_t *shape) {
  int b = p->bufs.len;
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_RESULT, dt, numel_of(ndim, shape), name, -1, false, false}));
  vec_push(&cx->arena, &p->outputs, ((LOutput){.buf = b, .dtype = dt, .view = view_contiguous(ndim, shape)}));
  return b;
}

LKernel *fx_kernel(Ctx *cx, LProgram *p, const bool *read, const bool *written, int nvars) {
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = "k0";
  k->nvars = nvars;
  for (int i = 0; i < p->bufs.len; i++)
    vec_push(&cx->arena, &k->args, ((LArg){.buf = i, .read = read[i], .written = written[i]}));
  vec_push(&cx->arena, &p->kernels, k);
  return k;
}

LIndex fx_at(int64_t base, int v0, int64_t c0, int v1, int64_t c1) {
  LIndex ix = {.base = base};
  if (c0)
    ix.var[ix.nterms] = v0, ix.coef[ix.nterms++] = c0;
  if (c1)
    ix.var[ix.nterms] = v1, ix.coef[ix.nterms++] = c1;
  return ix;
}

LExpr *fx_vbinary(Ctx *cx, Op op, LExpr *a, LExpr *b) {
  LExpr *e = lx_binary(cx, op, a->dt, a, b);
  e->lanes = a->lanes;
  return e;
}

LProgram *fx_gather_program(Ctx *cx, bool parallel, int64_t n) {
  LProgram *p = fx_program(cx, parallel ? "gpar" : "gseq");
  int idx = fx_param(cx, p, "idx", DT_I64, 1, (int64_t[]){n});
  int x = fx_param(cx, p, "x", DT_F32, 1, (int64_t[]){10});
  int out = fx_result(cx, p, "out", DT_F32, 1, (int64_t[]){n});
  LKernel *k = fx_kernel(cx, p, (bool[]){true, true, false}, (bool[]){false, false, true}, 1);
  vec_push(&cx->arena, &k->errors, "t.tdsl:1:5: error: index %lld is out of bounds for dimension 0 with size 10");
  LIndex at_i = fx_at(0, 0, 1, 0, 0);
  LExpr *ci = lx_new(cx, LX_CHECKED_INDEX, DT_I64);
  ci->a = lx_load(cx, DT_I64, idx, at_i);
  ci->i = 10;
  ci->err = 0;
  ci->wrap = true;
  LStmt *loop = ls_loop(cx, 0, n);
  loop->parallel = parallel;
  vec_push(&cx->arena, &loop->body, ls_store(cx, out, at_i, lx_load(cx, DT_F32, x, (LIndex){.dyn = ci})));
  vec_push(&cx->arena, &k->body, loop);
  loop_verify(p);
  return p;
}

// ---- tensors and text ----
tdsl_tensor fx_tensor(tdsl_dtype dt, int ndim, const int64_t *shape) {
  tdsl_tensor t;
  assert_int_equal(tdsl_tensor_empty(&t, dt, ndim, shape), 0);
  return t;
}

tdsl_tensor fx_f32(int64_t n, const float *v) {
  tdsl_tensor t = fx_tensor(TDSL_F32, 1, (int64_t[]){n});
  memcpy(tdsl_tensor_data(&t), v, (size_t)n * sizeof(float));
  return t;
}

tdsl_tensor fx_i64(int64_t n, const int64_t *v) {
  tdsl_tensor t = fx_tensor(TDSL_I64, 1, (int64_t[]){n});
  memcpy(tdsl_tensor_data(&t), v, (size_t)n * sizeof(int64_t));
  return t;
}

bool fx_same_bits_f32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

FILE *fx_text_open(FxText *t) {
  t->text = NULL;
  t->len = 0;
  t->f = open_memstream(&t->text, &t->len);
  assert_non_null(t->f);
  return t->f;
}

char *fx_text_close(FxText *t) {
  fclose(t->f);
  t->f = NULL;
  return t->text;
}

// ---- expectations ----
int64_t fx_floordiv(int64_t a, int64_t b) {
  if (b == -1)
    return (int64_t)(0 - (uint64_t)a);
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t fx_mod(int64_t a, int64_t b) {
  if (b == -1)
    return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

static void release_all(tdsl_tensor *const *ts, size_t n) {
  for (size_t i = 0; i < n; i++)
    tdsl_tensor_release(ts[i]);
}

void fx_expect_elementwise(Fn2 f) {
  float xv[6] = {1, 2, 3, 4, 5, 6}, yv[3] = {0.5f, -1, 10};
  tdsl_tensor x = fx_tensor(TDSL_F32, 2, (int64_t[]){2, 3}), y = fx_f32(3, yv), out = {0};
  memcpy(tdsl_tensor_data(&x), xv, sizeof xv);
  assert_int_equal(f(&x, &y, &out), TDSL_OK);
  assert_int_equal(out.ndim, 2);
  assert_int_equal(out.strides[0], 3);
  const float *o = tdsl_tensor_data(&out);
  for (int i = 0; i < 6; i++)
    assert_true(o[i] == xv[i] * 2 + yv[i % 3]);
  release_all((tdsl_tensor *[]){&out, &x, &y}, 3);
}

const float fx_half_edges[FX_NHALF_EDGES] = {
    0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 1e10f, -1e10f, INFINITY, -INFINITY, NAN,
    5.9604645e-08f /* 2^-24 */, 2.9802322e-08f /* 2^-25: tie to 0 */, 2.9802326e-08f,
    8.940697e-08f /* 1.5 * 2^-24: tie to 2^-23 */, 6.1035156e-05f /* 2^-14 */, 6.1e-05f, 1.00048828125f /* tie */,
    1.0014648f, 3.14159265f, -2.71828f, 1e-40f, 0.1f, 0.3333333f};

void fx_expect_widening(FxHalfUp up) {
  tdsl_tensor h = fx_tensor(TDSL_F16, 1, (int64_t[]){65536}), b = fx_tensor(TDSL_BF16, 1, (int64_t[]){65536});
  uint16_t *hp = tdsl_tensor_data(&h), *bp = tdsl_tensor_data(&b);
  for (int i = 0; i < 65536; i++)
    hp[i] = bp[i] = (uint16_t)i;
  tdsl_tensor o0 = {0}, o1 = {0};
  assert_int_equal(up(&h, &b, &o0, &o1), TDSL_OK);
  const float *f0 = tdsl_tensor_data(&o0), *f1 = tdsl_tensor_data(&o1);
  for (int i = 0; i < 65536; i++) {
    assert_true(fx_same_bits_f32(f0[i], tdsl_f16_to_f32((uint16_t)i)));
    assert_true(fx_same_bits_f32(f1[i], tdsl_bf16_to_f32((uint16_t)i)));
  }
  release_all((tdsl_tensor *[]){&h, &b, &o0, &o1}, 4);
}

void fx_expect_narrowing(FxHalfDown down, const float *xs, int64_t n) {
  tdsl_tensor x = fx_f32(n, xs), d0 = {0}, d1 = {0};
  assert_int_equal(down(&x, &d0, &d1), TDSL_OK);
  const uint16_t *h16 = tdsl_tensor_data(&d0), *b16 = tdsl_tensor_data(&d1);
  for (int64_t i = 0; i < n; i++) {
    if (isnan(xs[i])) {
      assert_true(isnan(tdsl_f16_to_f32(h16[i])) && isnan(tdsl_bf16_to_f32(b16[i])));
      continue;
    }
    assert_int_equal(h16[i], tdsl_f32_to_f16(xs[i]));
    assert_int_equal(b16[i], tdsl_f32_to_bf16(xs[i]));
  }
  release_all((tdsl_tensor *[]){&x, &d0, &d1}, 3);
}

const int64_t fx_int_a[FX_NINT] = {7, -7, 7, -7, INT64_MIN, INT64_MIN, INT64_MAX, 3037000500};
const int64_t fx_int_b[FX_NINT] = {2, 2, -2, -2, -1, 3, 2, 3037000500};

void fx_expect_int_ops(const tdsl_tensor *o) {
  const int64_t *q = tdsl_tensor_data(&o[0]), *r = tdsl_tensor_data(&o[1]), *m = tdsl_tensor_data(&o[2]),
                *n = tdsl_tensor_data(&o[3]), *p = tdsl_tensor_data(&o[4]);
  for (int i = 0; i < FX_NINT; i++) {
    uint64_t ua = (uint64_t)fx_int_a[i], ub = (uint64_t)fx_int_b[i];
    assert_int_equal(q[i], fx_floordiv(fx_int_a[i], fx_int_b[i]));
    assert_int_equal(r[i], fx_mod(fx_int_a[i], fx_int_b[i]));
    assert_int_equal(m[i], (int64_t)(ua * ub));
    assert_int_equal(n[i], (int64_t)(0 - ua));
    assert_int_equal(p[i], (int64_t)(ua * ua * ua));
  }
  assert_int_equal(q[0], 3);
  assert_int_equal(q[1], -4);
  assert_int_equal(r[1], 1);
  assert_int_equal(r[2], -1);
  assert_int_equal(q[4], INT64_MIN);  // INT64_MIN // -1 wraps
}

const float fx_float_a[FX_NFLOAT] = {NAN, 1, -7.5f, 7.5f, 1e10f, -0.5f};
const float fx_float_b[FX_NFLOAT] = {1, NAN, 2, -2, 0, INFINITY};

void fx_expect_float_ops(const tdsl_tensor *o) {
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
}

void fx_expect_zero_division(Fn2 f) {
  tdsl_tensor a = fx_tensor(TDSL_I32, 1, (int64_t[]){4}), b = fx_tensor(TDSL_I32, 1, (int64_t[]){4}), out = {0};
  int32_t *bp = tdsl_tensor_data(&b);
  bp[0] = bp[1] = bp[3] = 1;  // bp[2] stays 0
  assert_int_equal(f(&a, &b, &out), TDSL_ERR_DATA);
  assert_string_equal(tdsl_last_error(), "t.tdsl:2:10: error: ZeroDivisionError");
  assert_null(out.storage);  // no result on failure, nothing to release
  release_all((tdsl_tensor *[]){&a, &b}, 2);
}

void fx_expect_first_index_error(Fn2 par, Fn2 seq, int64_t n, const int64_t bad[4]) {
  int64_t *iv = malloc((size_t)n * sizeof *iv);
  assert_non_null(iv);
  for (int64_t i = 0; i < n; i++)
    iv[i] = i % 20 - 10;  // -10 .. 9: all in range
  iv[bad[0]] = 57, iv[bad[1]] = 10, iv[bad[2]] = -99, iv[bad[3]] = 12;
  float xv[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  tdsl_tensor idx = fx_i64(n, iv), x = fx_f32(10, xv), out = {0};
  for (int rep = 0; rep < 20; rep++) {
    assert_int_equal((rep % 2 ? seq : par)(&idx, &x, &out), TDSL_ERR_DATA);
    assert_string_equal(tdsl_last_error(), "t.tdsl:1:5: error: index 57 is out of bounds for dimension 0 with size 10");
  }
  iv[bad[0]] = 0, iv[bad[1]] = 0, iv[bad[2]] = 0, iv[bad[3]] = -1;
  tdsl_tensor_release(&idx);
  idx = fx_i64(n, iv);
  assert_int_equal(par(&idx, &x, &out), TDSL_OK);
  const float *o = tdsl_tensor_data(&out);
  for (int64_t i = 0; i < n; i++)
    assert_true(o[i] == (float)((iv[i] + 10) % 10));
  assert_true(o[bad[3]] == 9);
  free(iv);
  release_all((tdsl_tensor *[]){&out, &idx, &x}, 3);
}
