// tests/unit/test_kernel.c: the kernel builder (kernel_build: ir/kernel.c, ew.c, row.c,
// matmul.c, gemm.c, scalar.c). Each test compiles a small program (parse, sema, lower,
// fuse, kernel_build, loop_verify) and EXECUTES the loop IR with the reference
// interpreter below, which gives every expression the meaning ir/loop.h defines (floats
// in double, rounded to the dtype after each op, store and cast; ints in int64, wrapped
// to their width; the ops' values are ir/opmath.c's). Expected values are PyTorch
// 1.13's. Fused plans are tested by overriding the plan of fuse_graph node by node. The
// loop orders kernel_build schedules (column reductions, blocked matmuls accumulating
// rows in place, tiled transposed copies) are run against kernel_build_naive's row-major
// nests: same bits in every output. Vectors (ir/loop.h's Lanes) run lane by lane.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/frontend.h"
#include "ir/kernel.h"
#include "ir/opmath.h"
#include "runtime/sanitized.h"

// ============================================================================
// The reference interpreter
// ============================================================================
typedef OpValue Num;  // f for floats, i for ints and bool

typedef struct Run {
  Ctx cx;
  Program prog;
  Graph *g;
  LProgram *lp;
  Num **mem;     // per program buffer
  Num *locals;   // of the kernel being run
  Num **vlocals; // per local of the kernel being run: its lanes if it is a vector, else NULL
  Num **ap;      // per arg of the kernel (or function) being run: its element 0
  int64_t *an;   // per arg: the elements from there on
  const Num *sargs;  // a function's scalar arguments
  int64_t vars[64];
  const LKernel *k;
  int err;       // first raised error of the kernel: index, or -1
  int64_t errval;
  char errmsg[512];  // the formatted message of the first failing kernel
} Run;

static bool is_fl(DType t) { return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64; }

static double round_bf16(double v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f))
    return v;
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  memcpy(&f, &u, 4);
  return f;
}

static Num fit(DType t, Num x) {  // the value as dtype t holds it
  switch (t) {
  case DT_BOOL: x.i = x.i != 0; break;
  case DT_U8: x.i = (uint8_t)(uint64_t)x.i; break;
  case DT_I8: x.i = (int8_t)(uint8_t)(uint64_t)x.i; break;
  case DT_I16: x.i = (int16_t)(uint16_t)(uint64_t)x.i; break;
  case DT_I32: x.i = (int32_t)(uint32_t)(uint64_t)x.i; break;
  case DT_I64: break;
  case DT_F16: x.f = (double)(_Float16)(float)x.f; break;
  case DT_BF16: x.f = round_bf16(x.f); break;
  case DT_F32: x.f = (float)x.f; break;
  case DT_F64: break;
  default: fail();
  }
  return x;
}

static int64_t ftoi(DType t, double f) {
  if (t == DT_I32)
    return f >= -2147483648.0 && f < 2147483648.0 ? (int64_t)f : INT32_MIN;
  return f >= -9223372036854775808.0 && f < 9223372036854775808.0 ? (int64_t)f : INT64_MIN;
}

static Num cast(DType from, DType to, Num x) {
  Num r = {0, 0};
  if (is_fl(to))
    r.f = is_fl(from) ? x.f : (double)x.i;
  else if (to == DT_BOOL)
    r.i = is_fl(from) ? x.f != 0 : x.i != 0;
  else
    r.i = is_fl(from) ? ftoi(to, x.f) : x.i;
  return fit(to, r);
}

static void raise(Run *r, int err, int64_t v) {
  assert_true(err >= 0 && err < r->k->errors.len);
  if (r->err < 0) {
    r->err = err;
    r->errval = v;
  }
}

static Num eval(Run *r, const LExpr *e);

// a * b + c rounded once (fmaf / fma), as a backend with FMA computes it; a backend may
// round the product too (ir/loop.h), so tests comparing with one use small integers or
// a tolerance.
static Num fma_of(DType t, Num a, Num b, Num c) {
  Num x = {0, 0};
  x.f = t == DT_F32 ? fmaf((float)a.f, (float)b.f, (float)c.f) : fma(a.f, b.f, c.f);
  return x;
}

static int64_t index_of(Run *r, const LIndex *ix) {
  int64_t v = ix->base;
  for (int t = 0; t < ix->nterms; t++)
    v += ix->coef[t] * r->vars[ix->var[t]];
  if (ix->dyn)
    v += eval(r, ix->dyn).i;
  return v;
}

// Unary and binary ops: their meaning in ir/opmath.c (composite ops through their formula).
static Num unary(const LExpr *e, Num a) { return opmath_unary(e->op, e->dt, a); }

static Num binary(Run *r, const LExpr *e, Num a, Num b) {
  bool raised = false;
  Num x = opmath_binary(e->op, op_flags(e->op) & OF_COMPARE ? e->a->dt : e->dt, a, b, &raised);
  if (raised)  // floor_divide, remainder by 0 (value 0); a negative power (its exponent)
    raise(r, e->err, e->op == OP_POW ? b.i : 0);
  return x;
}

static Num eval(Run *r, const LExpr *e) {
  Num x = {0, 0};
  switch (e->kind) {
  case LX_CONST:
    if (is_fl(e->dt))
      x.f = e->f;
    else
      x.i = e->i;
    return x;
  case LX_VAR: x.i = r->vars[e->var]; return x;
  case LX_LOCAL: return r->locals[e->local];
  case LX_LOAD: {
    int64_t i = index_of(r, &e->idx);
    assert_true(i >= 0 && i < r->an[e->buf]);
    return r->ap[e->buf][i];
  }
  case LX_ARG: return r->sargs[e->i];
  case LX_UNARY: return unary(e, eval(r, e->a));
  case LX_BINARY: return binary(r, e, eval(r, e->a), eval(r, e->b));
  case LX_SELECT: {
    Num c = eval(r, e->a), a = eval(r, e->b), b = eval(r, e->c);
    return c.i ? a : b;
  }
  case LX_CAST: return cast(e->a->dt, e->dt, eval(r, e->a));
  case LX_BITCAST: {
    x = eval(r, e->a);
    Num y = {0, 0};
    if (e->dt == DT_F32) {
      int32_t i = (int32_t)x.i;
      float f;
      memcpy(&f, &i, sizeof f);
      y.f = f;
    } else if (e->dt == DT_I32) {
      float f = (float)x.f;
      int32_t i;
      memcpy(&i, &f, sizeof i);
      y.i = i;
    } else if (e->dt == DT_F64) {
      memcpy(&y.f, &x.i, sizeof y.f);
    } else {
      memcpy(&y.i, &x.f, sizeof y.i);
    }
    return y;
  }
  case LX_CHECKED_INDEX: {
    int64_t a = eval(r, e->a).i;
    if (a < (e->wrap ? -e->i : 0) || a >= e->i) {
      raise(r, e->err, a);
      return x;
    }
    x.i = a < 0 ? a + e->i : a;
    return x;
  }
  case LX_FMA: return fma_of(e->dt, eval(r, e->a), eval(r, e->b), eval(r, e->c));
  case LX_LANE:
    assert_non_null(r->vlocals[e->a->local]);
    return r->vlocals[e->a->local][e->i];
  default: fail();
  }
  return x;
}

// Lane l of e (a scalar e is the same in every lane).
static Num eval_lane(Run *r, const LExpr *e, int l) {
  if (e->lanes == 1)
    return eval(r, e);
  assert_true(l >= 0 && l < e->lanes);
  switch (e->kind) {
  case LX_LOAD: {
    int64_t i = index_of(r, &e->idx) + l;
    assert_true(i >= 0 && i < r->an[e->buf]);
    return r->ap[e->buf][i];
  }
  case LX_LOCAL:
    assert_non_null(r->vlocals[e->local]);
    return r->vlocals[e->local][l];
  case LX_SPLAT: return eval(r, e->a);
  case LX_BINARY: return binary(r, e, eval_lane(r, e->a, l), eval_lane(r, e->b, l));
  case LX_FMA: return fma_of(e->dt, eval_lane(r, e->a, l), eval_lane(r, e->b, l), eval_lane(r, e->c, l));
  case LX_SELECT: {  // (p > q) ? a : b, the condition a vector GT
    Num a = eval_lane(r, e->b, l), b = eval_lane(r, e->c, l);
    return eval_lane(r, e->a, l).i ? a : b;
  }
  case LX_SHUFFLE: {
    int s = e->sel[l], n = e->a->lanes;
    assert_true(s >= 0 && s < 2 * n);
    return s < n ? eval_lane(r, e->a, s) : eval_lane(r, e->b, s - n);
  }
  default: fail();
  }
  return (Num){0, 0};
}

// A store, let or set of a vector value: every lane is computed before any is written.
static void exec_lanes(Run *r, const LStmt *s) {
  int n = s->val->lanes;
  Num v[n];
  for (int l = 0; l < n; l++)
    v[l] = eval_lane(r, s->val, l);
  if (s->kind != LS_STORE) {
    assert_non_null(r->vlocals[s->local]);
    memcpy(r->vlocals[s->local], v, sizeof v);
    return;
  }
  int b = r->k->args.data[s->buf].buf;
  int64_t i = index_of(r, &s->idx);
  assert_true(i >= 0 && i + n <= r->an[s->buf]);
  DType bt = r->lp->bufs.data[b].dtype;
  assert_int_equal(s->val->dt, lx_bits_dtype(bt));
  for (int l = 0; l < n; l++)  // vectors of f16, bf16 and bool move their elements unchanged
    r->ap[s->buf][i + l] = s->val->dt == bt ? fit(bt, v[l]) : v[l];
}

static void exec_stmts(Run *r, const LStmtList *body);
static void exec_call(Run *r, const LCall *c);

static void exec_stmt(Run *r, const LStmt *s) {
  if (s->val && s->val->lanes > 1) {
    exec_lanes(r, s);
    return;
  }
  switch (s->kind) {
  case LS_LOOP: {
    int64_t n = s->n ? eval(r, s->n).i : s->extent;
    assert_true(n >= 0 && n <= s->extent);
    for (int64_t i = 0; i < n; i++) {
      r->vars[s->var] = i;
      exec_stmts(r, &s->body);
    }
    return;
  }
  case LS_STORE: {
    int b = r->k->args.data[s->buf].buf;
    int64_t i = index_of(r, &s->idx);
    assert_true(i >= 0 && i < r->an[s->buf]);
    assert_int_equal(s->val->dt, r->lp->bufs.data[b].dtype);
    r->ap[s->buf][i] = fit(r->lp->bufs.data[b].dtype, eval(r, s->val));
    return;
  }
  case LS_CALL: exec_call(r, s->call); return;
  case LS_PREFETCH: return;
  case LS_LET:
  case LS_SET: r->locals[s->local] = eval(r, s->val); return;
  case LS_IF:
    if (eval(r, s->cond).i)
      exec_stmts(r, &s->body);
    return;
  default: fail();
  }
}

static void exec_stmts(Run *r, const LStmtList *body) {
  for (int i = 0; i < body->len; i++)
    exec_stmt(r, body->data[i]);
}

// Runs r->k's body with fresh locals.
static void exec_body(Run *r) {
  assert_true(r->k->nvars <= 64);
  int nlocals = r->k->locals.len, lanes[nlocals + 1];
  r->locals = calloc((size_t)nlocals + 1, sizeof(Num));
  r->vlocals = calloc((size_t)nlocals + 1, sizeof(Num *));
  loop_local_lanes(r->k, lanes);
  for (int i = 0; i < nlocals; i++)
    r->vlocals[i] = lanes[i] > 1 ? calloc((size_t)lanes[i], sizeof(Num)) : NULL;
  exec_stmts(r, &r->k->body);
  for (int i = 0; i < nlocals; i++)
    free(r->vlocals[i]);
  free(r->vlocals);
  free(r->locals);
}

// A call of a function (ir/loop.h's Functions): its args are the caller's, advanced;
// it runs in a frame of its own (variables, locals), then the caller's comes back.
static void exec_call(Run *r, const LCall *c) {
  Run saved = *r;
  LProgram *fp = r->lp->funcs.data[c->fn];
  Num *ap[c->nptr + 1], sargs[c->nval + 1];
  int64_t an[c->nptr + 1];
  for (int i = 0; i < c->nptr; i++) {
    int64_t at = index_of(r, &c->at[i]);
    assert_true(at >= 0 && at + c->reach[i] <= r->an[c->ptr[i]]);
    ap[i] = r->ap[c->ptr[i]] + at;
    an[i] = c->reach[i];
  }
  for (int i = 0; i < c->nval; i++)
    sargs[i] = eval(r, c->val[i]);
  r->lp = fp;
  r->k = fp->kernels.data[0];
  r->ap = ap;
  r->an = an;
  r->sargs = sargs;
  exec_body(r);
  int err = r->err;
  *r = saved;
  r->err = err;
}

// Runs every kernel; false (with r->errmsg) at the first kernel that raised.
static bool execute(Run *r) {
  for (int ki = 0; ki < r->lp->kernels.len; ki++) {
    r->k = r->lp->kernels.data[ki];
    int nargs = r->k->args.len;
    Num *ap[nargs + 1];
    int64_t an[nargs + 1];
    for (int a = 0; a < nargs; a++) {
      const LArg *arg = &r->k->args.data[a];
      ap[a] = r->mem[arg->buf] + arg->at;
      an[a] = r->lp->bufs.data[arg->buf].numel - arg->at;
    }
    r->ap = ap;
    r->an = an;
    r->err = -1;
    exec_body(r);
    r->ap = NULL;
    r->an = NULL;
    if (r->err >= 0) {
      snprintf(r->errmsg, sizeof r->errmsg, r->k->errors.data[r->err], (long long)r->errval);
      return false;
    }
  }
  return true;
}

// ============================================================================
// Building and running programs
// ============================================================================
// Run every program under the trivial plan (each node stored, its own kernel) too.
static bool trivial_plan;

typedef struct PlanStep {
  int node;
  NodeMode mode;
  int kernel;
} PlanStep;

// The CPU programs are built for (kernel_build): the host's unless a test says
// otherwise; NULL builds a GPU program, whose matmuls keep the row schedule.
static CpuTarget host_cpu;
static const CpuTarget *build_cpu = &host_cpu;

static Run *compile_plan(const char *src, const PlanStep *plan, int nplan, int nkernels) {
  Run *r = calloc(1, sizeof *r);
  ctx_init(&r->cx);
  SrcFile *f = srcfile_from_string(&r->cx, "t.tdsl", src, strlen(src));
  r->prog.ast = parse_program(&r->cx, f);
  assert_non_null(r->prog.ast);
  assert_true(sema_check(&r->cx, &r->prog));
  r->g = lower_fn(&r->cx, &r->prog, r->prog.fns.data[0], false);
  if (!graph_is_view_only(r->g))
    fuse_graph(r->g);
  if (trivial_plan && !nplan) {
    for (int i = 0; i < r->g->nodes.len; i++) {
      r->g->nodes.data[i]->mode = NM_STORED;
      r->g->nodes.data[i]->kernel = i;
    }
    r->g->nkernels = r->g->nodes.len;
  }
  for (int i = 0; i < nplan; i++) {
    assert_true(plan[i].node < r->g->nodes.len);
    r->g->nodes.data[plan[i].node]->mode = plan[i].mode;
    r->g->nodes.data[plan[i].node]->kernel = plan[i].kernel;
  }
  if (nplan)
    r->g->nkernels = nkernels;
  r->lp = kernel_build(&r->cx, r->g, build_cpu);
  loop_verify(r->lp);
  r->mem = calloc((size_t)r->lp->bufs.len, sizeof(Num *));
  for (int i = 0; i < r->lp->bufs.len; i++)
    r->mem[i] = calloc((size_t)r->lp->bufs.data[i].numel + 1, sizeof(Num));
  return r;
}

static Run *compile(const char *src) { return compile_plan(src, NULL, 0, 0); }

static void done(Run *r) {
  for (int i = 0; i < r->lp->bufs.len; i++)
    free(r->mem[i]);
  free(r->mem);
  ctx_free(&r->cx);
  free(r);
}

// Parameter p's elements in row-major order (ints and bools given as doubles).
static void input(Run *r, int p, const double *vals) {
  const LParam *prm = &r->lp->params.data[p];
  const LBuf *b = &r->lp->bufs.data[prm->buf];
  for (int64_t i = 0; i < b->numel; i++) {
    Num x = {vals[i], (int64_t)vals[i]};
    r->mem[prm->buf][i] = fit(b->dtype, x);
  }
}

// Output o's element at logical row-major position i, as a double.
static double out_at(Run *r, int o, int64_t i) {
  const LOutput *out = &r->lp->outputs.data[o];
  int64_t idx[TD_MAX_DIMS];
  for (int d = out->view.ndim - 1; d >= 0; d--) {
    idx[d] = i % out->view.shape[d];
    i /= out->view.shape[d];
  }
  Num x = r->mem[out->buf][view_index(out->view, idx)];
  return is_fl(out->dtype) ? x.f : (double)x.i;
}

static void expect_out(Run *r, int o, const double *want, int n, double tol) {
  const LOutput *out = &r->lp->outputs.data[o];
  assert_int_equal(view_numel(out->view), n);
  for (int i = 0; i < n; i++) {
    double got = out_at(r, o, i);
    if (isnan(want[i])) {
      if (!isnan(got))
        fail_msg("output %d element %d: got %g, want nan", o, i, got);
    } else if (got != want[i] && !(fabs(got - want[i]) <= tol * (1 + fabs(want[i])))) {
      fail_msg("output %d element %d: got %.9g, want %.9g", o, i, got, want[i]);
    }
  }
}

#define D(...) ((const double[]){__VA_ARGS__})
#define N(...) (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double))
#define EXPECT(r, o, tol, ...) expect_out((r), (o), D(__VA_ARGS__), N(__VA_ARGS__), (tol))

static Run *run1(const char *src, const double *in0, const double *in1) {
  Run *r = compile(src);
  if (in0)
    input(r, 0, in0);
  if (in1)
    input(r, 1, in1);
  assert_true(execute(r));
  return r;
}

// ============================================================================
// Elementwise ops
// ============================================================================
static void broadcast_add_aligns_dims_from_the_right(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[2, 3], y: f32[3]) -> f32[2, 3] {\n  return x + y\n}\n", D(0, 1, 2, 3, 4, 5),
                D(10, 20, 30));
  EXPECT(r, 0, 0, 10, 21, 32, 13, 24, 35);
  done(r);
}

static void size_one_dims_broadcast_against_each_other(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[2, 1], y: f32[1, 3]) -> f32[2, 3] {\n  return x * y + 1\n}\n", D(2, 3), D(1, 2, 3));
  EXPECT(r, 0, 0, 3, 5, 7, 4, 7, 10);
  done(r);
}

static void integer_floor_division_and_remainder_follow_python_signs(void **state) {
  (void)state;
  const char *src = "fn f(a: i64[4], b: i64[4]) -> (i64[4], i64[4]) {\n  return a // b, a % b\n}\n";
  Run *r = run1(src, D(-7, 7, -7, 7), D(2, -2, -2, 2));
  EXPECT(r, 0, 0, -4, -4, 3, 3);
  EXPECT(r, 1, 0, 1, -1, -1, 1);
  done(r);
}

static void integer_division_by_zero_raises_located_zero_division_error(void **state) {
  (void)state;
  Run *r = compile("fn f(a: i32[2], b: i32[2]) -> i32[2] {\n  return a // b\n}\n");
  input(r, 0, D(1, 2));
  input(r, 1, D(1, 0));
  assert_false(execute(r));
  assert_string_equal(r->errmsg, "t.tdsl:2:10: error: ZeroDivisionError");
  done(r);
}

static void float_floor_division_and_remainder_match_pytorch(void **state) {
  (void)state;
  Run *r = run1("fn f(a: f32[3]) -> (f32[3], f32[3]) {\n  return a // -2.0, a % -2.0\n}\n", D(7, -7, 0.5), NULL);
  EXPECT(r, 0, 0, -4, 3, -1);
  EXPECT(r, 1, 0, -1, -1, -1.5);
  done(r);
}

static void int_true_division_computes_in_f32(void **state) {
  (void)state;
  Run *r = run1("fn f(a: i32[2]) -> f32[2] {\n  return a / 2\n}\n", D(3, -5), NULL);
  EXPECT(r, 0, 0, 1.5, -2.5);
  done(r);
}

static void int_tensor_powers_follow_pytorch_for_negative_exponents(void **state) {
  (void)state;
  Run *r = run1("fn f(a: i64[5], b: i64[5]) -> i64[5] {\n  return a ** b\n}\n", D(2, 1, -1, 0, 3), D(-1, -1, -1, -1, 2));
  EXPECT(r, 0, 0, 0, 1, -1, 0, 9);
  done(r);
}

static void comparison_of_int_with_float_scalar_compares_in_float(void **state) {
  (void)state;
  Run *r = run1("fn f(a: i32[3]) -> bool[3] {\n  return a < 1.5\n}\n", D(1, 2, -3), NULL);
  EXPECT(r, 0, 0, 1, 0, 1);
  done(r);
}

static void bool_addition_is_logical_or(void **state) {
  (void)state;
  Run *r = run1("fn f(a: bool[4], b: bool[4]) -> (bool[4], bool[4]) {\n  return a + b, a * b\n}\n", D(1, 1, 0, 0),
                D(1, 0, 1, 0));
  EXPECT(r, 0, 0, 1, 1, 1, 0);
  EXPECT(r, 1, 0, 1, 0, 0, 0);
  done(r);
}

static void where_selects_per_element_with_broadcast(void **state) {
  (void)state;
  Run *r = run1("fn f(c: bool[2, 1], x: f32[2, 2]) -> f32[2, 2] {\n  return where(c, x, -1.0)\n}\n", D(1, 0),
                D(1, 2, 3, 4));
  EXPECT(r, 0, 0, 1, 2, -1, -1);
  done(r);
}

static void clamp_keeps_nan_and_max_wins_over_min(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[3]) -> (f32[3], f32[3]) {\n  return clamp(x, 2, 1), x.clamp(min=2)\n}\n",
                D(1, NAN, 3), NULL);
  EXPECT(r, 0, 0, 1, NAN, 1);
  EXPECT(r, 1, 0, 2, NAN, 3);
  done(r);
}

static void clamp_of_int_with_float_bound_promotes_to_float(void **state) {
  (void)state;
  Run *r = run1("fn f(x: i64[2]) -> f32[2] {\n  return x.clamp(min=0.5)\n}\n", D(5, -5), NULL);
  EXPECT(r, 0, 0, 5, 0.5);
  done(r);
}

static void unary_float_ops_of_ints_cast_their_input(void **state) {
  (void)state;
  Run *r = run1("fn f(x: i32[2]) -> (f32[2], i32[2], i32[2]) {\n  return exp(x), abs(x), -x\n}\n", D(0, -2), NULL);
  EXPECT(r, 0, 1e-6, 1, exp(-2));
  EXPECT(r, 1, 0, 0, 2);
  EXPECT(r, 2, 0, 0, 2);
  done(r);
}

static void casts_truncate_and_half_rounds(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[3]) -> (i32[3], f16[3], bool[3]) {\n  return x.int(), x.half(), x.bool()\n}\n",
                D(-2.7, 1.0001, 0), NULL);
  EXPECT(r, 0, 0, -2, 1, 0);
  EXPECT(r, 1, 0, -2.69921875, 1, 0);
  EXPECT(r, 2, 0, 1, 1, 0);
  done(r);
}

static void half_arithmetic_is_done_in_f32_and_rounded(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f16[1]) -> f16[1] {\n  return x + 0.1\n}\n", D(1.5), NULL);
  EXPECT(r, 0, 0, 1.599609375);
  done(r);
}

// ============================================================================
// Reductions and softmax
// ============================================================================
static void sum_over_two_dims_with_keepdim(void **state) {
  (void)state;
  double x[24];
  for (int i = 0; i < 24; i++)
    x[i] = i;
  Run *r = run1("fn f(x: f32[2, 3, 4]) -> f32[1, 3, 1] {\n  return x.sum([0, 2], keepdim=true)\n}\n", x, NULL);
  // sum over i, k of 12 i + 4 j + k = 4 * 12 + 8 * 4j + 2 * 6
  EXPECT(r, 0, 0, 60, 92, 124);
  done(r);
}

static void sum_of_bools_counts_in_i64_and_mean_of_empty_is_nan(void **state) {
  (void)state;
  Run *r = run1("fn f(x: bool[4], e: f32[0]) -> (i64[], f32[]) {\n  return x.sum(), e.mean()\n}\n", D(1, 0, 1, 1),
                D(0));
  EXPECT(r, 0, 0, 3);
  EXPECT(r, 1, 0, NAN);
  done(r);
}

static void var_is_unbiased_by_default_and_std_is_its_root(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[2, 3]) -> (f32[2], f32[2], f32[]) {\n"
                "  return x.var(1), x.std(1, unbiased=false), x[0, :1].var()\n}\n",
                D(1, 2, 3, 2, 4, 9), NULL);
  EXPECT(r, 0, 1e-6, 1, 13);
  EXPECT(r, 1, 1e-6, sqrt(2.0 / 3), sqrt(26.0 / 3));
  EXPECT(r, 2, 0, NAN);
  done(r);
}

static void argmax_takes_the_first_max_and_nan_wins(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[2, 4]) -> (i64[2], i64[2], i64[]) {\n"
                "  return x.argmax(1), x.argmin(1), x.argmax()\n}\n",
                D(3, 1, 3, 0, 1, NAN, 5, NAN), NULL);
  EXPECT(r, 0, 0, 0, 1);
  EXPECT(r, 1, 0, 3, 1);
  EXPECT(r, 2, 0, 5);
  done(r);
}

static void amax_propagates_nan_and_prod_of_ints_is_i64(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[3], y: i32[3]) -> (f32[], i64[], f32[]) {\n  return x.amax(), y.prod(), x.min()\n}\n",
                D(1, NAN, 3), D(2, -3, 4));
  EXPECT(r, 0, 0, NAN);
  EXPECT(r, 1, 0, -24);
  EXPECT(r, 2, 0, NAN);
  done(r);
}

static void all_and_any_reduce_to_bool(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[2, 2]) -> (bool[2], bool[2]) {\n  return x.all(1), x.any(1)\n}\n", D(1, 0, 0, 0),
                NULL);
  EXPECT(r, 0, 0, 0, 0);
  EXPECT(r, 1, 0, 1, 0);
  done(r);
}

static void logsumexp_is_stable_and_all_minus_inf_gives_minus_inf(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[2, 2]) -> f32[2] {\n  return x.logsumexp(1)\n}\n", D(1000, 1000, -INFINITY, -INFINITY),
                NULL);
  EXPECT(r, 0, 1e-6, 1000 + log(2.0), -INFINITY);
  done(r);
}

static void softmax_rows_sum_to_one(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[2, 3]) -> (f32[2, 3], f32[2, 3]) {\n"
                "  return softmax(x, dim=-1), log_softmax(x, dim=0)\n}\n",
                D(1, 2, 3, 1000, 1000, 1000), NULL);
  double e1 = exp(-2.0), e2 = exp(-1.0), s = e1 + e2 + 1;
  EXPECT(r, 0, 1e-6, e1 / s, e2 / s, 1 / s, 1.0 / 3, 1.0 / 3, 1.0 / 3);
  EXPECT(r, 1, 1e-5, -999, -998, -997, 0, 0, 0);
  done(r);
}

// ============================================================================
// matmul
// ============================================================================
static void matmul_of_vectors_and_matrices(void **state) {
  (void)state;
  Run *r = run1("fn f(a: f32[2, 3], v: f32[3]) -> (f32[], f32[2], f32[2], f32[2, 2]) {\n"
                "  return v @ v, a @ v, a[:, :2].t() @ v[:2], a @ a.t()\n}\n",
                D(1, 2, 3, 4, 5, 6), D(1, 0, -1));
  EXPECT(r, 0, 0, 2);
  EXPECT(r, 1, 0, -2, -2);
  EXPECT(r, 2, 0, 1, 2);
  EXPECT(r, 3, 0, 14, 32, 32, 77);
  done(r);
}

static void batched_matmul_broadcasts_batches_and_reads_transposed_operands(void **state) {
  (void)state;
  // a: [2, 1, 2, 2], b: [3, 2, 2] transposed in its last two dims
  double a[8] = {1, 2, 3, 4, 0, 1, 1, 0}, b[12];
  for (int i = 0; i < 12; i++)
    b[i] = i;
  Run *r = run1("fn f(a: f32[2, 1, 2, 2], b: f32[3, 2, 2]) -> f32[2, 3, 2, 2] {\n"
                "  return a @ b.transpose(-2, -1)\n}\n",
                a, b);
  double want[24];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int m = 0; m < 2; m++)
        for (int n = 0; n < 2; n++) {
          double s = 0;
          for (int k = 0; k < 2; k++)
            s += a[i * 4 + m * 2 + k] * b[j * 4 + n * 2 + k];  // bT[k][n] = b[n][k]
          want[((i * 3 + j) * 2 + m) * 2 + n] = s;
        }
  expect_out(r, 0, want, 24, 0);
  done(r);
}

static void matmul_of_matrix_and_batch_folds_the_batch(void **state) {
  (void)state;
  Run *r = run1("fn f(a: f32[1, 2], b: f32[2, 2, 1]) -> f32[2, 1, 1] {\n  return a @ b\n}\n", D(1, 2), D(1, 2, 3, 4));
  EXPECT(r, 0, 0, 5, 11);
  done(r);
}

// ============================================================================
// cat, stack, gathers, creation, stores
// ============================================================================
static void cat_and_stack_write_each_input_into_its_slice(void **state) {
  (void)state;
  Run *r = run1("fn f(a: f32[2, 1], b: f32[2, 2]) -> (f32[2, 3], f32[2, 2, 2]) {\n"
                "  return cat([a, b], dim=1), stack([b, b.t()], dim=1)\n}\n",
                D(1, 2), D(3, 4, 5, 6));
  EXPECT(r, 0, 0, 1, 3, 4, 2, 5, 6);
  EXPECT(r, 1, 0, 3, 4, 3, 5, 5, 6, 4, 6);
  done(r);
}

static void gather_picks_along_dim(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[2, 3], i: i64[2, 2]) -> f32[2, 2] {\n  return x.gather(1, i)\n}\n",
                D(1, 2, 3, 4, 5, 6), D(2, 0, 1, 1));
  EXPECT(r, 0, 0, 3, 1, 5, 5);
  done(r);
}

static void gather_out_of_range_names_the_value_and_dim(void **state) {
  (void)state;
  Run *r = compile("fn f(x: f32[2, 3], i: i64[2, 1]) -> f32[2, 1] {\n  return x.gather(1, i)\n}\n");
  input(r, 0, D(1, 2, 3, 4, 5, 6));
  input(r, 1, D(0, 4));
  assert_false(execute(r));
  assert_string_equal(r->errmsg, "t.tdsl:2:10: error: index 4 is out of bounds for dimension 1 with size 3");
  done(r);
}

static void index_with_negative_indices_wraps(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[3, 2], i: i64[2]) -> f32[2, 2] {\n  return x[i]\n}\n", D(1, 2, 3, 4, 5, 6), D(-1, 0));
  EXPECT(r, 0, 0, 5, 6, 1, 2);
  done(r);
}

static void index_of_second_dim_and_two_tensors(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[2, 3], i: i64[2]) -> (f32[2, 2], f32[2]) {\n  return x[:, i], x[i - 1, i]\n}\n",
                D(1, 2, 3, 4, 5, 6), D(2, 1));
  EXPECT(r, 0, 0, 3, 2, 6, 5);
  EXPECT(r, 1, 0, 6, 2);
  done(r);
}

static void index_with_separated_tensors_puts_their_dims_first(void **state) {
  (void)state;
  double x[24];
  for (int i = 0; i < 24; i++)
    x[i] = i;
  Run *r = run1("fn f(x: f32[2, 3, 4], i: i64[2]) -> (f32[2, 3], f32[3]) {\n"
                "  return x[i, :, i + 1], x[i[0], :, i[1]]\n}\n",
                x, D(1, 0));
  // x[[1, 0], :, [2, 1]] and x[1, :, 0] (0-d index tensors)
  EXPECT(r, 0, 0, 14, 18, 22, 1, 5, 9);
  EXPECT(r, 1, 0, 12, 16, 20);
  done(r);
}

static void cat_promotes_its_inputs_and_setitem_broadcasts_the_value(void **state) {
  (void)state;
  Run *r = run1("fn f(a: f16[1, 2], b: i32[1, 2]) -> (f32[2, 2], f32[2, 2]) {\n"
                "  c = cat([a.float(), b], dim=0)\n  d = zeros(2, 2)\n  d[:, :] = b[0]\n  return c, d\n}\n",
                D(0.5, 1.5), D(3, 4));
  EXPECT(r, 0, 0, 0.5, 1.5, 3, 4);
  EXPECT(r, 1, 0, 3, 4, 3, 4);
  done(r);
}

static void zero_size_matmul_and_reductions_give_identities(void **state) {
  (void)state;
  Run *r = run1("fn f(a: f32[2, 0], b: f32[0, 3]) -> (f32[2, 3], f32[2], f32[2]) {\n"
                "  return a @ b, a.sum(1), a.prod(1)\n}\n",
                D(0), D(0));
  EXPECT(r, 0, 0, 0, 0, 0, 0, 0, 0);
  EXPECT(r, 1, 0, 0, 0);
  EXPECT(r, 2, 0, 1, 1);
  done(r);
}

static void index_out_of_range_raises_with_its_value(void **state) {
  (void)state;
  Run *r = compile("fn f(x: f32[3, 2], i: i64[2]) -> f32[2, 2] {\n  return x[i]\n}\n");
  input(r, 0, D(1, 2, 3, 4, 5, 6));
  input(r, 1, D(0, -4));
  assert_false(execute(r));
  assert_string_equal(r->errmsg, "t.tdsl:2:10: error: index -4 is out of bounds for dimension 0 with size 3");
  done(r);
}

static void index_select_reads_rows(void **state) {
  (void)state;
  Run *r = run1("fn f(x: f32[3, 2], i: i32[2]) -> f32[2, 2] {\n  return x.index_select(0, i)\n}\n",
                D(1, 2, 3, 4, 5, 6), D(2, 2));
  EXPECT(r, 0, 0, 5, 6, 5, 6);
  done(r);
}

static void arange_and_eye_generate_from_the_index(void **state) {
  (void)state;
  Run *r = compile("fn f() -> (i64[4], f32[3], f32[2, 3], f32[2]) {\n"
                   "  return arange(1, 9, 2), arange(0.1, 0.35, 0.1), eye(2, 3), full([2], 2.5)\n}\n");
  assert_true(execute(r));
  EXPECT(r, 0, 0, 1, 3, 5, 7);
  EXPECT(r, 1, 0, (float)0.1, (float)0.2, (float)(0.1 + 2 * 0.1));
  EXPECT(r, 2, 0, 1, 0, 0, 0, 1, 0);
  EXPECT(r, 3, 0, 2.5, 2.5);
  done(r);
}

static void store_through_a_view_with_plus_equals_updates_the_parameter(void **state) {
  (void)state;
  Run *r = run1("fn f(mut x: f32[2, 3], v: f32[2]) -> f32[2, 3] {\n"
                "  y = x[:, 1]\n  y += v\n  x[0] = 9.0\n  return x\n}\n",
                D(0, 1, 2, 3, 4, 5), D(10, 20));
  EXPECT(r, 0, 0, 9, 9, 9, 3, 24, 5);
  assert_int_equal(r->lp->outputs.data[0].buf, r->lp->params.data[0].buf);
  done(r);
}

static void store_into_a_local_tensor_is_seen_by_later_reads(void **state) {
  (void)state;
  Run *r = run1("fn f(x: i32[3]) -> i32[3] {\n  z = zeros(3, dtype=i32)\n  z[1:] = x[:2]\n  z *= 2\n"
                "  return z + 1\n}\n",
                D(5, 6, 7), NULL);
  EXPECT(r, 0, 0, 1, 11, 13);
  done(r);
}

static void a_returned_view_of_a_parameter_points_at_its_buffer(void **state) {
  (void)state;
  Run *r = compile("fn f(x: f32[2, 3]) -> f32[3, 2] {\n  return x.t()\n}\n");
  assert_int_equal(r->lp->kernels.len, 0);
  assert_int_equal(r->lp->outputs.data[0].buf, r->lp->params.data[0].buf);
  assert_int_equal(r->lp->outputs.data[0].view.strides[0], 1);
  done(r);
}

static void large_kernels_mark_their_outer_loop_parallel(void **state) {
  (void)state;
  Run *r = compile("fn f(x: f32[256, 256]) -> (f32[256, 256], f32[256]) {\n  return x + 1, x.sum(1)\n}\n");
  for (int k = 0; k < 2; k++) {
    const LStmt *s = r->lp->kernels.data[k]->body.data[0];
    assert_int_equal(s->kind, LS_LOOP);
    assert_true(s->parallel);
  }
  done(r);
}

// ============================================================================
// Fused plans (set by hand over the trivial plan)
// ============================================================================
static void inline_producers_are_recomputed_through_their_views(void **state) {
  (void)state;
  // nodes: 0 exp, 1 add (reads exp transposed); exp inline in kernel 0
  PlanStep plan[] = {{0, NM_INLINE, 0}, {1, NM_STORED, 0}};
  Run *r = compile_plan("fn f(x: f32[2, 3]) -> f32[3, 2] {\n  e = x * 2.0\n  return e.t() + 1\n}\n", plan, 2, 1);
  assert_int_equal(r->lp->kernels.len, 1);
  assert_int_equal(r->lp->bufs.len, 2);  // x and the result: e has no buffer
  input(r, 0, D(0, 1, 2, 3, 4, 5));
  assert_true(execute(r));
  EXPECT(r, 0, 0, 1, 7, 3, 9, 5, 11);
  done(r);
}

static void inline_producer_read_through_a_slice_and_broadcast(void **state) {
  (void)state;
  PlanStep plan[] = {{0, NM_INLINE, 0}, {1, NM_STORED, 0}};
  Run *r = compile_plan("fn f(x: f32[4, 3]) -> f32[2, 3] {\n  e = -x\n  return e[1::2] * e[0]\n}\n", plan, 2, 1);
  double x[12];
  for (int i = 0; i < 12; i++)
    x[i] = i;
  input(r, 0, x);
  assert_true(execute(r));
  EXPECT(r, 0, 0, 0, 4, 10, 0, 10, 22);
  done(r);
}

static void layer_norm_row_kernel_with_local_mean_and_epilogue(void **state) {
  (void)state;
  // 0 mean, 1 sub, 2 pow, 3 mean, 4 add, 5 sqrt, 6 div
  const char *src = "fn f(x: f32[2, 4]) -> f32[2, 4] {\n  m = x.mean(-1, keepdim=true)\n"
                    "  v = ((x - m) ** 2).mean(-1, keepdim=true)\n  return (x - m) / sqrt(v + 1e-5)\n}\n";
  PlanStep plan[] = {{0, NM_LOCAL, 0}, {1, NM_INLINE, 0}, {2, NM_INLINE, 0}, {3, NM_LOCAL, 0},
                     {4, NM_INLINE, 0}, {5, NM_INLINE, 0}, {6, NM_INLINE, 0}, {7, NM_INLINE, 0},
                     {8, NM_STORED, 0}};
  Run *probe = compile(src);
  int nn = probe->g->nodes.len;
  done(probe);
  assert_true(nn <= 9);
  for (int i = 0; i < nn; i++)
    plan[i] = (PlanStep){i, i == nn - 1 ? NM_STORED : (i == 0 || i == 3) ? NM_LOCAL : NM_INLINE, 0};
  Run *r = compile_plan(src, plan, nn, 1);
  assert_int_equal(r->lp->kernels.len, 1);
  input(r, 0, D(1, 2, 3, 4, -1, -1, 1, 1));
  assert_true(execute(r));
  double s1 = sqrt(1.25 + 1e-5), s2 = sqrt(1 + 1e-5);
  EXPECT(r, 0, 1e-5, -1.5 / s1, -0.5 / s1, 0.5 / s1, 1.5 / s1, -1 / s2, -1 / s2, 1 / s2, 1 / s2);
  done(r);
}

static void softmax_kernel_fuses_its_producer_and_epilogue(void **state) {
  (void)state;
  // 0 mul, 1 softmax, 2 mul: scale inline, softmax local, epilogue stored
  PlanStep plan[] = {{0, NM_INLINE, 0}, {1, NM_LOCAL, 0}, {2, NM_STORED, 0}};
  Run *r = compile_plan("fn f(x: f32[2, 2]) -> f32[2, 2] {\n  return softmax(x * 0.5, dim=1) * 2.0\n}\n", plan, 3,
                        1);
  input(r, 0, D(0, 0, 2, 0));
  assert_true(execute(r));
  double a = 2 * exp(1.0) / (exp(1.0) + 1), b = 2 / (exp(1.0) + 1);
  EXPECT(r, 0, 1e-6, 1, 1, a, b);
  done(r);
}

static void matmul_kernel_keeps_its_result_local_for_the_epilogue(void **state) {
  (void)state;
  // 0 matmul, 1 add, 2 relu
  PlanStep plan[] = {{0, NM_LOCAL, 0}, {1, NM_INLINE, 0}, {2, NM_STORED, 0}};
  Run *r = compile_plan("fn f(a: f32[2, 2], b: f32[2, 2], c: f32[2]) -> f32[2, 2] {\n"
                        "  return relu(a @ b + c)\n}\n",
                        plan, 3, 1);
  int nbufs = 0;  // (a GEMM's per-thread scratch and packed operands aside)
  for (int b = 0; b < r->lp->bufs.len; b++)
    nbufs += !r->lp->bufs.data[b].scratch && !strstr(r->lp->bufs.data[b].name, "pack");
  assert_int_equal(nbufs, 4);
  input(r, 0, D(1, 2, 3, 4));
  input(r, 1, D(1, 0, 0, 1));
  input(r, 2, D(-2, -3));
  assert_true(execute(r));
  EXPECT(r, 0, 0, 0, 0, 1, 1);
  done(r);
}

static void reduction_with_stored_result_and_reduced_shape_epilogue(void **state) {
  (void)state;
  // 0 amax (stored, also returned), 1 sub on the reduced shape (stored)
  PlanStep plan[] = {{0, NM_STORED, 0}, {1, NM_STORED, 0}};
  Run *r = compile_plan("fn f(x: f32[2, 3]) -> (f32[2], f32[2]) {\n  m = x.amax(1)\n  return m, m - 1\n}\n",
                        plan, 2, 1);
  input(r, 0, D(1, 5, 2, -1, -2, -3));
  assert_true(execute(r));
  EXPECT(r, 0, 0, 5, -1);
  EXPECT(r, 1, 0, 4, -2);
  done(r);
}

// ============================================================================
// Schedules: column reductions, blocked matmuls and tiled transposes give the same
// bits as the row-major order of kernel_build_naive
// ============================================================================
// Values of many magnitudes and both signs (a few nan/inf where asked), so that any
// change in the order of a sum changes its bits.
static void fill_mixed(Run *r, int p, uint64_t *state, bool specials) {
  const LBuf *b = &r->lp->bufs.data[r->lp->params.data[p].buf];
  double *v = calloc((size_t)b->numel + 1, sizeof *v);
  for (int64_t i = 0; i < b->numel; i++) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t u = (uint32_t)(*state >> 33);
    double m = (double)(u % 1000) / 1000 - 0.5;
    v[i] = is_fl(b->dtype) ? m * pow(10, (int)(u / 1000 % 7) - 3) : (double)((int)(u % 7) - 3);
    if (b->dtype == DT_BOOL)
      v[i] = u % 5 != 0;
    if (specials && is_fl(b->dtype) && u % 97 == 0)
      v[i] = u % 3 == 0 ? NAN : u % 3 == 1 ? INFINITY : -INFINITY;
  }
  input(r, p, v);
  free(v);
}

static bool same_bits(double a, double b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

// Runs r (scheduled) and n (kernel_build_naive's program) on the same inputs and
// compares every output: bit for bit when tol is 0, else within tol of the output's
// largest finite value (sums cancel), with nan and inf where n has them.
static void compare_with_naive(Run *r, Run *n, bool specials, double tol) {
  uint64_t s1 = 7, s2 = 7;
  for (int p = 0; p < r->lp->params.len; p++) {
    fill_mixed(r, p, &s1, specials);
    fill_mixed(n, p, &s2, specials);
  }
  assert_true(execute(r));
  assert_true(execute(n));
  assert_int_equal(r->lp->outputs.len, n->lp->outputs.len);
  for (int o = 0; o < r->lp->outputs.len; o++) {
    int64_t numel = view_numel(r->lp->outputs.data[o].view);
    double scale = 1;
    for (int64_t i = 0; i < numel; i++)
      if (isfinite(out_at(n, o, i)))
        scale = fmax(scale, fabs(out_at(n, o, i)));
    for (int64_t i = 0; i < numel; i++) {
      double got = out_at(r, o, i), want = out_at(n, o, i);
      bool ok = tol == 0      ? same_bits(got, want)
                : isnan(want) ? isnan(got)
                : isinf(want) ? got == want
                              : fabs(got - want) <= tol * scale;
      if (!ok)
        fail_msg("output %d element %lld: scheduled %.17g, naive %.17g", o, (long long)i, got, want);
    }
  }
}

// Runs r and kernel_build_naive's program of the same graph on the same inputs and
// compares them (compare_with_naive).
static void check_against_naive(Run *r, bool specials, double tol) {
  Run *n = calloc(1, sizeof *n);
  *n = *r;
  n->lp = kernel_build_naive(&r->cx, r->g);
  loop_verify(n->lp);
  n->mem = calloc((size_t)n->lp->bufs.len, sizeof(Num *));
  for (int i = 0; i < n->lp->bufs.len; i++)
    n->mem[i] = calloc((size_t)n->lp->bufs.data[i].numel + 1, sizeof(Num));
  compare_with_naive(r, n, specials, tol);
  for (int i = 0; i < n->lp->bufs.len; i++)
    free(n->mem[i]);
  free(n->mem);
  free(n);
}

// Runs src under kernel_build (for build_cpu) and kernel_build_naive on the same
// inputs; every output must be equal bit for bit. Returns the scheduled run (executed)
// for more checks.
static Run *same_as_naive(const char *src, bool specials) {
  Run *r = compile(src);
  check_against_naive(r, specials, 0);
  return r;
}

// Whether every load inside an innermost loop moves by at most one element per
// iteration of that loop.
static bool unit_expr(const LExpr *e, int var) {
  if (!e)
    return true;
  if (e->kind == LX_LOAD)
    for (int t = 0; t < e->idx.nterms; t++)
      if (e->idx.var[t] == var && (e->idx.coef[t] > 1 || e->idx.coef[t] < -1))
        return false;
  return unit_expr(e->a, var) && unit_expr(e->b, var) && unit_expr(e->c, var) && unit_expr(e->idx.dyn, var);
}

static bool has_loop(const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    if (l->data[i]->kind == LS_LOOP || (l->data[i]->kind == LS_IF && has_loop(&l->data[i]->body)))
      return true;
  return false;
}

static bool unit_body(const LStmtList *l, int var) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (!unit_expr(s->val, var) || !unit_expr(s->cond, var) || !unit_expr(s->idx.dyn, var))
      return false;
    if (s->kind == LS_IF && !unit_body(&s->body, var))
      return false;
  }
  return true;
}

static bool inner_loads_unit(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (s->kind == LS_LOOP && !has_loop(&s->body) && !unit_body(&s->body, s->var))
      return false;
    if ((s->kind == LS_LOOP || s->kind == LS_IF) && has_loop(&s->body) && !inner_loads_unit(&s->body))
      return false;
  }
  return true;
}

static bool all_inner_loads_unit(const Run *r) {
  for (int k = 0; k < r->lp->kernels.len; k++)
    if (!inner_loads_unit(&r->lp->kernels.data[k]->body))
      return false;
  return true;
}

static int count_temps(const Run *r) {
  int n = 0;
  for (int i = 0; i < r->lp->bufs.len; i++)
    n += r->lp->bufs.data[i].kind == LB_TEMP;
  return n;
}

static bool any_parallel(const LStmtList *l) {
  for (int i = 0; i < l->len; i++)
    if ((l->data[i]->kind == LS_LOOP && l->data[i]->parallel) || any_parallel(&l->data[i]->body))
      return true;
  return false;
}

static void column_sum_reads_rows_with_unit_stride(void **state) {
  (void)state;
  Run *r = same_as_naive("fn f(x: f32[37, 130]) -> f32[130] {\n  return x.sum(0)\n}\n", false);
  assert_true(all_inner_loads_unit(r));
  assert_int_equal(count_temps(r), 0);  // accumulates into the result
  done(r);
}

static void every_column_reduction_matches_the_row_order(void **state) {
  (void)state;
  Run *r = same_as_naive("fn f(x: f32[5, 3, 70]) -> (f32[3, 70], f32[3, 70], f32[3, 70], f32[3, 70],\n"
                         "    f32[3, 70], f32[3, 70], f32[1, 3, 70], f32[3, 70], i64[3, 70], i64[3, 70],\n"
                         "    bool[3, 70], bool[3, 70]) {\n"
                         "  a = x.std(0, unbiased=false, keepdim=true)\n"
                         "  return x.sum(0), x.mean(0), x.amax(0), x.amin(0), x.prod(0), x.var(0), a, x.logsumexp(0), "
                         "x.argmax(0), x.argmin(0), x.all(0), x.any(0)\n}\n",
                         false);
  assert_true(all_inner_loads_unit(r));
  done(r);
  r = same_as_naive("fn f(x: f32[6, 65]) -> (f32[65], f32[65], i64[65], f32[65], f32[65]) {\n"
                    "  return x.amax(0), x.amin(0), x.argmax(0), x.logsumexp(0), x.sum(0)\n}\n",
                    true);
  assert_true(all_inner_loads_unit(r));
  done(r);
}

static void column_reductions_of_halves_and_ints_accumulate_in_temps(void **state) {
  (void)state;
  Run *r = same_as_naive("fn f(x: f16[9, 70], y: bf16[9, 70], i: i32[9, 70]) -> (f16[70], f16[70], bf16[70], i64[70],\n"
                         "    i64[70]) {\n  return x.sum(0), x.mean(0), y.var(0), i.sum(0), i.prod(0)\n}\n",
                         false);
  assert_true(all_inner_loads_unit(r));
  assert_true(count_temps(r) >= 3);  // f32 accumulators of the f16/bf16 results
  done(r);
}

static void column_reduction_over_interleaved_and_transposed_dims(void **state) {
  (void)state;
  Run *r = same_as_naive("fn f(x: f32[4, 5, 6, 7], y: f32[9, 11]) -> (f32[5, 7], f32[1, 5, 1, 7], f32[11], f32[11]) {\n"
                         "  return x.sum([0, 2]), x.mean([0, 2], keepdim=true), y.amax(0), y.t().sum(1)\n}\n",
                         false);
  assert_true(all_inner_loads_unit(r));
  done(r);
}

static void column_reduction_with_epilogue_and_local_results(void **state) {
  (void)state;
  Run *r = same_as_naive("fn f(x: f32[8, 33]) -> (f32[33], f32[33]) {\n"
                         "  s = x.sum(0)\n  return s * 2.0 + 1.0, x.mean(0) - x.amax(0)\n}\n",
                         false);
  assert_true(all_inner_loads_unit(r));
  done(r);
}

static void large_column_reduction_runs_blocks_in_parallel(void **state) {
  (void)state;
  // 8 x 4100 elements: one outer iteration, so the kept dim is split into blocks
  // (a multiple of 64 each) run in parallel, then a serial tail
  Run *r = same_as_naive("fn f(x: f32[8, 4100]) -> (f32[4100], f32[4100]) {\n  return x.sum(0), x.std(0)\n}\n",
                         false);
  assert_true(all_inner_loads_unit(r));
  for (int k = 0; k < r->lp->kernels.len; k++)
    assert_true(any_parallel(&r->lp->kernels.data[k]->body));
  done(r);
}

// The temps of ir/row.c's SPLIT partials ("k0.part").
static int count_part_temps(const Run *r) {
  int n = 0;
  for (int i = 0; i < r->lp->bufs.len; i++)
    n += r->lp->bufs.data[i].kind == LB_TEMP && strstr(r->lp->bufs.data[i].name, ".part") != NULL;
  return n;
}

// Tall column reductions (too few kept elements for blocks) split their rows into parts
// reduced in parallel, then combined in order: max, min, argmax, argmin, all, any and
// integer sums exactly as the naive nest; float sums, means, variances, products and
// logsumexp regrouped (the naive f32 sums of 20000 terms carry ~1e-5 of rounding).
static void tall_column_reductions_split_their_rows_across_threads(void **state) {
  (void)state;
  // the naive nest of 20000-row reductions under the sanitizers is most of this test's time
  // there: sanitized, the fusion plan's run alone (the plans split the rows alike)
  if (SANITIZED && trivial_plan) return;  // (not skip(): a skip would mark the whole test skipped)
  static const char *const exact[] = {
      "fn f(x: f32[20000, 7]) -> (f32[7], f32[7], i64[7], i64[7]) {\n"
      "  return x.amax(0), x.amin(0), x.argmax(0), x.argmin(0)\n}\n",
      "fn f(x: i32[3, 20000, 5], b: bool[70000, 2]) -> (i64[3, 5], i32[3, 5], bool[2], bool[2]) {\n"
      "  return x.sum(1), x.amax(1), b.all(0), b.any(0)\n}\n",
  };
  static const char *const regrouped[] = {
      "fn f(x: f32[20000, 7]) -> (f32[7], f32[7], f32[7], f32[7], f32[7], f32[1, 7]) {\n"
      "  return x.sum(0), x.mean(0), x.var(0), x.std(0, unbiased=false), x.logsumexp(0), x.sum(0, keepdim=true) * 2.0\n}\n",
      // batch statistics of channels-last data: reduce (0, 1, 2), the longest reduced dim
      // split (of NCHW, (0, 2, 3) keeps the row schedule, parallel over the channels)
      "fn f(x: f32[4, 130, 64, 6]) -> (f32[6], f32[6]) {\n  return x.mean((0, 1, 2)), x.var((0, 1, 2))\n}\n",
      "fn f(x: f16[40000, 3], y: f64[2, 40000, 3]) -> (f16[3], f64[2, 3], f64[2, 3]) {\n"
      "  return x.sum(0), y.prod(1), y.sum(1)\n}\n",
      // a strided view, rows per part not a multiple of the 8-row step (a tail in each)
      "fn f(x: f32[40011, 9]) -> (f32[9], f32[9]) {\n  return x[1::2].sum(0), x[1::2].var(0)\n}\n",
  };
  for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
    Run *r = compile(exact[i]);
    check_against_naive(r, true, 0);
    assert_true(count_part_temps(r) > 0);
    assert_true(any_parallel(&r->lp->kernels.data[0]->body));
    done(r);
  }
  for (size_t i = 0; i < sizeof regrouped / sizeof *regrouped; i++) {
    Run *r = compile(regrouped[i]);
    check_against_naive(r, false, 2e-4);  // f32 sums of 20000 terms: ~1e-5 apart, either way
    assert_true(count_part_temps(r) > 0);
    assert_true(any_parallel(&r->lp->kernels.data[0]->body));
    done(r);
  }
  // a small one stays serial, a wide one keeps the column blocks (no partials)
  Run *r = compile("fn f(x: f32[300, 7]) -> f32[7] {\n  return x.sum(0)\n}\n");
  assert_int_equal(count_part_temps(r), 0);
  done(r);
  r = compile("fn f(x: f32[64, 4096]) -> f32[4096] {\n  return x.sum(0)\n}\n");
  assert_int_equal(count_part_temps(r), 0);
  done(r);
  // a wide one over many rows splits its rows: a column block would read 1 KiB of each row
  r = compile("fn f(x: f32[2048, 4096]) -> f32[4096] {\n  return x.sum(0)\n}\n");
  assert_true(count_part_temps(r) > 0);
  assert_true(any_parallel(&r->lp->kernels.data[0]->body));
  done(r);
}

static void row_reductions_and_softmax_keep_the_row_order(void **state) {
  (void)state;
  Run *r = same_as_naive("fn f(x: f32[6, 40]) -> (f32[6], f32[6, 40], f32[6, 40]) {\n"
                         "  return x.sum(1), softmax(x, dim=1), softmax(x, dim=0)\n}\n",
                         false);
  assert_int_equal(count_temps(r), 0);
  done(r);
}

// A GPU program (no CPU target) built and run against the naive nest.
static Run *same_as_naive_gpu(const char *src, bool specials) {
  build_cpu = NULL;
  Run *r = same_as_naive(src, specials);
  build_cpu = &host_cpu;
  return r;
}

// A GPU program's matmuls are the plain nest until sched_gpu tiles them (ir/matmul_gpu.c,
// unit.sched_gpu), so they keep the naive nest's order of every sum, bit for bit: plain,
// transposed, batched and broadcast operands, vector products, epilogues in every dtype.
static void gpu_program_matmuls_are_the_plain_nest(void **state) {
  (void)state;
  static const struct {
    const char *src;
    bool specials;
  } cases[] = {
      {"fn f(a: f32[7, 13], b: f32[13, 9]) -> f32[7, 9] {\n  return a @ b\n}\n", false},
      {"fn f(a: f32[7, 13], b: f32[13, 9], c: f32[9], h: f16[5, 6], g: f16[6, 4],\n"
          "    x: f32[2, 3, 4, 5], w: f32[5, 6], i: f64[3, 4], j: f64[4, 5]) -> (f32[7, 9], f16[5, 4],\n"
          "    f32[2, 3, 4, 6], f64[3, 5]) {\n"
          "  return relu(a @ b + c), h @ g, x @ w, i @ j\n}\n", false},
      {"fn f(a: f32[9, 7], v: f32[9], b: f32[4, 5, 6], c: f32[6, 5]) -> (f32[7], f32[4, 5, 5]) {\n"
          "  return a.t() @ v, b @ c.t().t()\n}\n", false},
      {"fn f(v: f32[8], b: f32[8, 4100]) -> f32[4100] {\n  return v @ b\n}\n", false},
      {"fn f(a: f32[130, 30], b: f32[30, 9]) -> f32[130, 9] {\n  return a @ b\n}\n", true},
      {"fn f(a: f64[16, 2, 70], b: f64[70, 2040]) -> f64[16, 2, 2040] {\n  return a @ b\n}\n", false},
      {"fn f(a: f32[5, 3], b: f32[3, 2100]) -> f32[5, 2100] {\n  return a @ b\n}\n", false},
      {"fn f(a: f32[13, 10], b: f32[13, 6], x: f32[3, 9, 6], y: f32[1, 6, 11], z: f32[2, 10, 12],\n"
          "    w: f32[12, 7], t: f32[3, 6, 9], v: f32[6]) -> (f32[10, 6], f32[3, 9, 11],\n"
          "    f32[2, 10, 7], f32[3, 9, 11], f32[3, 9]) {\n"
          "  return a.t() @ b, x @ y, z @ w, t.transpose(1, 2) @ y, t.transpose(1, 2) @ v\n}\n", true},
      {"fn f(x: f32[11, 9], w: f32[9, 70], c: f32[70], p: f64[6, 7], q: f64[7, 5], h: f16[9, 10],\n"
          "    g: f16[10, 6], e: f16[6], u: bf16[5, 6], v: bf16[6, 7]) -> (f32[11, 70], f32[11, 70],\n"
          "    f64[6, 5], f16[9, 6], f32[9, 6], bf16[5, 7]) {\n"
          "  y = x @ w + c\n"
          "  hg = h @ g\n"
          "  return relu(y), y * 2.0, p @ q - 1.0, hg + e, hg.float(), u @ v\n}\n", false},
      {"fn f(a: f32[2, 3, 16], b: f32[16, 700]) -> f32[2, 3, 700] {\n  return relu(a @ b)\n}\n", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    Run *r = same_as_naive_gpu(cases[i].src, cases[i].specials);
    for (int k = 0; k < r->lp->kernels.len; k++) {
      const LKernel *kn = r->lp->kernels.data[k];
      assert_true(kn->kind != KK_MATMUL || kn->mm->form == LM_DOT);
    }
    done(r);
  }
}

static void matmul_with_transposed_rhs_keeps_the_k_loop_innermost(void **state) {
  (void)state;
  Run *r = same_as_naive_gpu("fn f(a: f32[7, 13], b: f32[9, 13]) -> f32[7, 9] {\n  return a @ b.t()\n}\n", false);
  assert_true(all_inner_loads_unit(r));  // a and b both walk k with unit stride
  assert_int_equal(count_temps(r), 0);
  const LStmt *s = r->lp->kernels.data[0]->body.data[0];
  assert_int_equal(s->kind, LS_LOOP);
  assert_int_equal(s->body.data[0]->kind, LS_LOOP);
  assert_int_equal(s->body.data[0]->body.data[0]->kind, LS_LET);  // acc = 0 per output
  done(r);
}

// ---- ir/gemm.c: the CPU matmul schedules ----
// They sum in another order than the naive nest (FMA micro-tiles, lanes along k), so
// they are compared within tol of the output's largest finite value; fill_mixed's
// magnitudes (1e-3 .. 1e3) make K * 2^-24 * K * 1e6 / 1e6 the scale of an f32 error.

// src built for the CPU named cpu ("haswell": 6x16 f32 tiles, "skylake-avx512": 14x32,
// "x86-64": SSE, 6x8), run against the naive nest within tol.
static Run *gemm_near_naive(const char *src, const char *cpu, double tol) {
  CpuTarget t = cpu_target(cpu);
  build_cpu = &t;
  Run *r = compile(src);
  build_cpu = &host_cpu;
  check_against_naive(r, false, tol);
  return r;
}

static const char *const GEMM_CPUS[] = {"haswell", "skylake-avx512", "x86-64"};

static void gemm_tiles_of_every_layout_stay_near_the_naive_sum(void **state) {
  (void)state;
  for (int c = 0; c < 3; c++) {
    // nn, nt, tn, tt with edges in every dim (M % MR, N % NR, odd K), and a sliced operand
    done(gemm_near_naive("fn f(a: f32[31, 37], b: f32[37, 41], c: f32[37, 31], d: f32[41, 37]) -> (f32[31, 41],\n"
                         "    f32[31, 41], f32[31, 41], f32[31, 41], f32[15, 21]) {\n"
                         "  return a @ b, a @ d.t(), c.t() @ b, c.t() @ d.t(), a[1::2, 2:35] @ b[3:36, ::2]\n}\n",
                         GEMM_CPUS[c], 2e-4));
    // batches (one expanded), 1-D operands, decoding rows (the dot schedule), epilogues
    done(gemm_near_naive("fn f(x: f32[3, 17, 20], w: f32[23, 20], v: f32[20], y: f32[3, 20, 9], e: f32[5, 20],\n"
                         "    c: f32[23]) -> (f32[3, 17, 23], f32[3, 17], f32[23], f32[3, 17, 9], f32[5, 23], f32[]) {\n"
                         "  return x @ w.t(), x @ v, v @ w.t(), x @ y, relu(e @ w.t() + c), v @ v\n}\n",
                         GEMM_CPUS[c], 2e-4));
    // k blocks (K 6100: 3 of 2040 for haswell's 512 KiB L2, 2 of 3056 for
    // skylake-avx512's 1 MiB), the sums in between waiting in the result or in the
    // epilogue's buffer
    done(gemm_near_naive("fn f(a: f32[7, 6100], b: f32[9, 6100], c: f32[9], d: f32[6100, 5]) -> (f32[7, 9],\n"
                         "    f32[7, 5]) {\n"
                         "  return relu(a @ b.t() + c), a @ d\n}\n",
                         GEMM_CPUS[c], 1e-2));
    // f16 operands (packed as f32) and f64
    done(gemm_near_naive("fn f(h: f16[9, 21], g: f16[21, 19], p: f64[13, 30], q: f64[19, 30]) -> (f16[9, 19],\n"
                         "    f64[13, 19]) {\n"
                         "  return h @ g, p @ q.t()\n}\n",
                         GEMM_CPUS[c], 2e-3));
  }
}

// The FMA of the first innermost loop that has one, or NULL.
static const LExpr *first_fma(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (s->kind == LS_SET && s->val->kind == LX_FMA)
      return s->val;
    const LExpr *e = first_fma(&s->body);
    if (e)
      return e;
  }
  return NULL;
}

static void gemm_schedule_and_tile_follow_the_shape_and_the_cpu(void **state) {
  (void)state;
  // temps: the packed operands other than the per-thread scratch (a's block for the
  // column tasks, b's block for the row tasks); funcs: the micro-kernels (none: dot)
  static const struct {
    const char *cpu, *src, *sched;
    int lanes, temps, funcs;
  } cases[] = {
      // few columns: the rows are the tasks; a's rows are read in place (unit-stride in k)
      {"haswell", "fn f(a: f32[64, 100], b: f32[48, 100]) -> f32[64, 48] {\n  return a @ b.t()\n}\n",
       "gemm packed 4x24 rows in place rows nc 48 mc 4", 8, 1, 1},
      {"skylake-avx512", "fn f(a: f32[64, 100], b: f32[48, 100]) -> f32[64, 48] {\n  return a @ b.t()\n}\n",
       "gemm packed 8x48 rows in place rows nc 48 mc 8", 16, 1, 1},
      // more columns than rows in x @ w.t(): transposed, w's rows read in place, x^T packed
      {"haswell", "fn f(a: f32[64, 40], b: f32[300, 40]) -> f32[64, 300] {\n  return a @ b.t()\n}\n",
       "gemm packed 6x16 transposed rows in place rows nc 64 mc 24", 8, 1, 1},
      // 64 rows of a: b's rows are read in place too (packing it would cost more than it saves)
      {"haswell", "fn f(a: f64[64, 40], b: f64[40, 200]) -> f64[64, 200] {\n  return a @ b\n}\n",
       "gemm packed 4x12 rows in place b in place cols nc 24", 4, 0, 1},
      {"haswell", "fn f(a: f32[12, 64, 40], b: f32[12, 40, 48]) -> f32[12, 64, 48] {\n  return a @ b\n}\n",
       "gemm packed 4x24 rows in place b in place batch nc 48", 8, 0, 1},  // each batch a task
      {"haswell", "fn f(a: f32[1024, 40], b: f32[1024, 1024]) -> f32[40, 1024] {\n  return a.t() @ b\n}\n",
       "gemm packed 4x24 b in place cols nc 72 kc 512", 8, 1, 1},  // a packed (unit-stride in i), 2 k blocks
      {"skylake-avx512",
       "fn f(a: f32[1024, 1024], b: f32[1024, 1024]) -> f32[1024, 1024] {\n  return a @ b\n}\n",
       "gemm packed 6x64 rows in place cols nc 64", 16, 0, 1},
      {"haswell", "fn f(a: f32[2, 40], b: f32[48, 40]) -> f32[2, 48] {\n  return a @ b.t()\n}\n",
       "gemm dot 4x4 lanes 8", 8, 0, 0},
      {"x86-64", "fn f(a: f32[40], b: f32[48, 40]) -> f32[48] {\n  return a @ b.t()\n}\n", "gemm dot 1x8 lanes 4", 4,
       0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    CpuTarget t = cpu_target(cases[i].cpu);
    build_cpu = &t;
    Run *r = compile(cases[i].src);
    build_cpu = &host_cpu;
    const LKernel *k = r->lp->kernels.data[0];
    assert_non_null(k->sched);
    assert_string_equal(k->sched, cases[i].sched);
    assert_int_equal(r->lp->funcs.len, cases[i].funcs);
    const LExpr *fma = first_fma(cases[i].funcs ? &r->lp->funcs.data[0]->kernels.data[0]->body : &k->body);
    assert_non_null(fma);
    assert_int_equal(fma->lanes, cases[i].lanes);
    int temps = 0;
    for (int b = 0; b < r->lp->bufs.len; b++)
      temps += r->lp->bufs.data[b].kind == LB_TEMP && !r->lp->bufs.data[b].scratch;
    assert_int_equal(temps, cases[i].temps);
    done(r);
  }
}

// The last-level cache every reader of CpuTarget.llc sees (ir/cpu.c): the reported size,
// at most 32 MiB per online CPU, at least 32 MiB; a named CPU keeps its 32 MiB.
static void the_llc_is_bounded_by_32_mib_a_cpu(void **state) {
  (void)state;
  const int64_t MiB = (int64_t)1 << 20;
  assert_int_equal(cpu_usable_llc(480 * MiB, 2), 64 * MiB);  // this VM's sysfs figure
  assert_int_equal(cpu_usable_llc(480 * MiB, 1), 32 * MiB);
  assert_int_equal(cpu_usable_llc(480 * MiB, 0), 32 * MiB);  // sysconf's -1 or 0: one CPU
  assert_int_equal(cpu_usable_llc(16 * MiB, 1), 16 * MiB);   // a small cache as it is
  assert_int_equal(cpu_usable_llc(64 * MiB, 16), 64 * MiB);  // a 16-core Zen 3
  assert_int_equal(cpu_usable_llc(INT64_MAX, INT64_MAX), INT64_MAX);  // saturates
  assert_int_equal(cpu_target("znver3").llc, 32 * MiB);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t bound = (cpus > 1 ? cpus : 1) * 32 * MiB;
  assert_true(host_cpu.llc <= bound || host_cpu.llc <= 32 * MiB);
}

// Every matmul of a program calls the same micro-kernel (one function per tile shape
// and dtype), whatever its shape: a second matmul adds no function.
static void gemm_micro_kernel_is_one_function_for_the_program(void **state) {
  (void)state;
  CpuTarget t = cpu_target("skylake-avx512");
  build_cpu = &t;
  Run *r = compile("fn f(x: f32[64, 768], w: f32[2304, 768], v: f32[768, 3072], u: f32[3, 64, 50]) -> (f32[64, 2304],\n"
                   "    f32[64, 3072], f32[3, 64, 64]) {\n"
                   "  return x @ w.t(), relu(x @ v), u @ u.transpose(-2, -1)\n}\n");
  build_cpu = &host_cpu;
  assert_true(r->lp->kernels.len >= 3);   // (the trivial plan stores relu apart)
  // 6x64 with w's or x's rows in place (8x48 would fit x @ v 3% better), and the same
  // reading v's rows in place too (x has few rows); x @ w.t()'s prefetches w's next rows
  // (one column panel: its weights stream, gemm_build's pf), a function of its own
  assert_int_equal(r->lp->funcs.len, 3);
  done(r);
}

// A GEMM big enough for threads (MATMUL_PARALLEL_WORK multiply-adds) has a parallel
// loop whatever its shape: batches, row panels or column blocks; a smaller one has none.
static void gemm_is_parallel_over_batches_rows_or_columns(void **state) {
  (void)state;
  static const char *const srcs[] = {
      "fn f(a: f32[64, 12, 32], b: f32[64, 32, 12]) -> f32[64, 12, 12] {\n  return a @ b\n}\n",
      "fn f(a: f32[200, 64], b: f32[64, 40]) -> f32[200, 40] {\n  return a @ b\n}\n",
      "fn f(a: f32[12, 64], b: f32[64, 900]) -> f32[12, 900] {\n  return a @ b\n}\n",
      "fn f(a: f32[3, 256], b: f32[700, 256]) -> f32[3, 700] {\n  return a @ b.t()\n}\n",
  };
  for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
    CpuTarget t = cpu_target("haswell");
    build_cpu = &t;
    Run *r = compile(srcs[i]);
    build_cpu = &host_cpu;
    assert_true(any_parallel(&r->lp->kernels.data[0]->body));
    done(r);
  }
  static const char *const small[] = {
      "fn f(a: f32[32, 128], b: f32[128, 10]) -> f32[32, 10] {\n  return a @ b\n}\n",  // the seed MLP's second layer
      "fn f(a: f32[48, 12, 32], b: f32[48, 32, 12]) -> f32[48, 12, 12] {\n  return a @ b\n}\n",
  };
  for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
    CpuTarget t = cpu_target("haswell");
    build_cpu = &t;
    Run *r = compile(small[i]);
    build_cpu = &host_cpu;
    assert_false(any_parallel(&r->lp->kernels.data[0]->body));
    done(r);
  }
}

// The extents of the first innermost loop and of the loop around it (0: none).
static void first_inner_pair(const LStmtList *l, int64_t outer, int64_t *o, int64_t *i) {
  for (int k = 0; k < l->len; k++) {
    const LStmt *s = l->data[k];
    if (s->kind != LS_LOOP)
      continue;
    if (!has_loop(&s->body)) {
      *o = outer, *i = s->extent;
      return;
    }
    first_inner_pair(&s->body, s->extent, o, i);
    return;
  }
}

static void transposed_copies_run_in_tiles_of_both_dims(void **state) {
  (void)state;
  // 170 x 200: tiles of 32 x 32 (170 rows leave too few taller tiles for the threads),
  // then the last 10 rows and 8 columns in nests of their own (not a copy: no register
  // blocks, transposed_copies_move_register_blocks_in_every_dtype)
  Run *r = same_as_naive("fn f(x: f32[200, 170]) -> f32[170, 200] {\n  return x.t() * 2.0\n}\n", true);
  int64_t o = 0, i = 0;
  first_inner_pair(&r->lp->kernels.data[0]->body, 0, &o, &i);
  assert_int_equal(o, 32);
  assert_int_equal(i, 32);
  assert_true(any_parallel(&r->lp->kernels.data[0]->body));
  done(r);
  // 2048 rows: 8 tiles of 256 rows (2 KiB runs would leave only 4) x 128 B of each row;
  // f64: 16 per row
  r = same_as_naive("fn f(x: f32[40, 2048]) -> f32[2048, 40] {\n  return x.t() + 1.0\n}\n", false);
  first_inner_pair(&r->lp->kernels.data[0]->body, 0, &o, &i);
  assert_int_equal(o, 256);
  assert_int_equal(i, 32);
  done(r);
  r = same_as_naive("fn f(x: f64[40, 8192]) -> f64[8192, 40] {\n  return x.t() * 2.0\n}\n", false);
  first_inner_pair(&r->lp->kernels.data[0]->body, 0, &o, &i);
  assert_int_equal(o, 256);
  assert_int_equal(i, 16);
  done(r);
  // contiguous reads keep the row-major nest
  r = same_as_naive("fn f(x: f32[100, 70]) -> f32[100, 70] {\n  return x * 2.0\n}\n", false);
  first_inner_pair(&r->lp->kernels.data[0]->body, 0, &o, &i);
  assert_int_equal(o, 100);
  assert_int_equal(i, 70);
  done(r);
}

static void permutes_and_mixed_operands_are_tiled_with_the_same_results(void **state) {
  (void)state;
  Run *r = same_as_naive("fn f(x: f32[40, 3, 70], y: f32[70, 3, 40], z: f64[33, 65], w: i32[65, 33]) -> (\n"
                         "    f32[70, 3, 40], f32[3, 70, 40], f64[65, 33], f64[65, 33], i32[33, 65]) {\n"
                         "  p = x.permute(2, 1, 0)\n"
                         "  return p + y, x.permute(1, 2, 0).contiguous(), z.t() * 2.0 + w, exp(z.t()), w.t() + 1\n}\n",
                         true);
  done(r);
  r = same_as_naive("fn f(x: f16[50, 64], b: bf16[64, 50], i: f32[31, 5, 32]) -> (f16[64, 50], f32[64, 50],\n"
                    "    f32[32, 5, 31]) {\n  return x.t() + 1.0, b + x.t(), i.transpose(0, 2).contiguous()\n}\n",
                    false);
  done(r);
}

// The transposing shuffles (operands of the result's lanes, *lanes) and the widest
// vector store in bytes (ir/ew.c's register blocks, their rows joined into lines).
static void count_vector_moves(const LStmtList *l, int *shuffles, int *store_bytes, int *lanes) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (s->kind == LS_LET && s->val->kind == LX_SHUFFLE && s->val->a->lanes == s->val->lanes)
      (*shuffles)++, *lanes = s->val->lanes;
    int bytes = s->val ? s->val->lanes * (int)dtype_size(s->val->dt) : 0;
    if (s->kind == LS_STORE && s->val->lanes > 1 && bytes > *store_bytes)
      *store_bytes = bytes;
    count_vector_moves(&s->body, shuffles, store_bytes, lanes);
  }
}

// W for elements of `size` bytes on cpu t, both dims at least 32 (ir/ew.c): the widest
// vector's elements, at most all the registers with AVX-512's 32, half of them with 16.
static int block_w(const CpuTarget *t, int size) {
  int w = t->vec_bytes / size, half = t->nregs / 2, cap = half >= 16 ? 2 * half : half;
  return w > cap ? cap : w;
}

// Copies of permuted views move W x W blocks through vector registers, W from the
// element size and the CPU; every dtype's bits move unchanged (bool, f16 and bf16 as
// ints), sizes that are not multiples of W finish in scalar nests, and every output is
// the naive nest's, bit for bit: odd sizes, rank 3 to 6 permutations, slices with steps
// and offsets, the attention head split and merge.
static void transposed_copies_move_register_blocks_in_every_dtype(void **state) {
  (void)state;
  static const char *const dts[] = {"f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "bool"};
  static const int sizes[] = {4, 8, 2, 2, 8, 4, 2, 1, 1, 1};
  CpuTarget avx2 = cpu_target("haswell"), sse = cpu_target("x86-64");
  const CpuTarget *cpus[] = {&host_cpu, &avx2, &sse};
  for (int c = 0; c < 3; c++) {
    build_cpu = cpus[c];
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
      char src[512];
      snprintf(src, sizeof src, "fn f(x: %s[130, 37]) -> %s[37, 130] {\n  return x.t().contiguous()\n}\n", dts[d], dts[d]);
      Run *r = same_as_naive(src, true);
      int shuffles = 0, store_bytes = 0, lanes = 0, w = block_w(cpus[c], sizes[d]), rounds = 0;
      for (int u = 1; u < w; u *= 2)
        rounds++;
      count_vector_moves(&r->lp->kernels.data[0]->body, &shuffles, &store_bytes, &lanes);
      assert_int_equal(lanes, w);
      // each copy of a block's code: W rows, each shuffled once per round; the rows of
      // blocks side by side joined into whole 64-byte lines
      assert_true(shuffles > 0 && shuffles % (w * rounds) == 0);
      assert_int_equal(store_bytes, 64);
      done(r);
    }
  }
  build_cpu = &host_cpu;
  static const char *const srcs[] = {
      // sizes below, at and above W, tails on both sides; a slice with a step and an offset
      "fn f(x: f32[16, 16], y: f32[17, 33], z: f64[9, 130]) -> (f32[16, 16], f32[33, 17], f64[130, 9]) {\n"
      "  return x.t().contiguous(), y.t().contiguous(), z.t().contiguous()\n}\n",
      "fn f(x: f32[70, 90]) -> (f32[30, 33], i64[40, 41]) {\n"
      "  return x[3:69:2, 5:65:2].t().contiguous(), x.long()[1:42, 2:42].t().contiguous()\n}\n",
      // rank 3 to 6 permutations that move the innermost dim
      "fn f(x: f32[5, 33, 18]) -> (f32[18, 33, 5], f32[5, 18, 33], f32[33, 18, 5]) {\n"
      "  return x.permute(2, 1, 0).contiguous(), x.transpose(1, 2).contiguous(), x.permute(1, 2, 0).contiguous()\n}\n",
      "fn f(x: f16[2, 3, 20, 17]) -> (f16[2, 17, 20, 3], f16[2, 3, 17, 20]) {\n"
      "  return x.permute(0, 3, 2, 1).contiguous(), x.transpose(2, 3).contiguous()\n}\n",
      "fn f(x: i16[2, 3, 2, 18, 17]) -> i16[2, 3, 17, 2, 18] {\n  return x.permute(0, 1, 4, 2, 3).contiguous()\n}\n",
      "fn f(x: bool[2, 1, 3, 2, 33, 20]) -> bool[2, 20, 3, 1, 2, 33] {\n"
      "  return x.permute(0, 5, 2, 1, 3, 4).contiguous()\n}\n",
      // NCHW -> NHWC, and attention's head split and merge (the inner dim stays: no blocks)
      "fn f(x: f32[2, 24, 7, 9]) -> f32[2, 7, 9, 24] {\n  return x.permute(0, 2, 3, 1).contiguous()\n}\n",
      "fn f(x: f32[2, 20, 48]) -> (f32[2, 3, 20, 16], f32[2, 20, 48]) {\n"
      "  h = x.view(2, 20, 3, 16).transpose(1, 2).contiguous()\n"
      "  return h, h.transpose(1, 2).contiguous().view(2, 20, 48)\n}\n",
  };
  for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++)
    done(same_as_naive(srcs[i], true));
}

// ============================================================================
// The CPU schedule (ir/sched.c): polynomial exp and reductions in lanes change the
// rounding, not the meaning: scheduled outputs stay within a few ulps of the naive
// order's (nan, inf and -0.0 where the naive run has them), and no f32 exp is left.
// ============================================================================
static bool has_f32_exp(const LExpr *e) {
  if (!e)
    return false;
  if (e->kind == LX_UNARY && e->dt == DT_F32 && (e->op == OP_EXP || e->op == OP_SIGMOID || e->op == OP_SILU))
    return true;
  return has_f32_exp(e->a) || has_f32_exp(e->b) || has_f32_exp(e->c) || has_f32_exp(e->idx.dyn);
}

static bool body_has_f32_exp(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (has_f32_exp(s->val) || has_f32_exp(s->cond) || body_has_f32_exp(&s->body))
      return true;
  }
  return false;
}

// The extent of the first innermost loop (in program order) whose body holds a SET
// (a reduction), or -1.
static int64_t reduction_extent(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    if (s->kind != LS_LOOP)
      continue;
    int64_t inner = reduction_extent(&s->body);
    if (inner >= 0)
      return inner;
    for (int j = 0; j < s->body.len && !has_loop(&s->body); j++)
      if (s->body.data[j]->kind == LS_SET)
        return s->extent;
  }
  return -1;
}

static void near_naive_after_sched(const char *src, int64_t want_extent, double tol) {
  Run *r = compile(src);
  sched_cpu(&r->cx, r->lp, build_cpu);
  int64_t extent = -1;  // of the first reduction loop of any kernel
  for (int k = 0; k < r->lp->kernels.len; k++) {
    assert_false(body_has_f32_exp(&r->lp->kernels.data[k]->body));
    if (extent < 0)
      extent = reduction_extent(&r->lp->kernels.data[k]->body);
  }
  assert_int_equal(extent, want_extent);
  Run *n = compile(src);
  for (int i = 0; i < n->lp->bufs.len; i++)  // memory for the naive program's buffers instead
    free(n->mem[i]);
  free(n->mem);
  n->lp = kernel_build_naive(&n->cx, n->g);
  loop_verify(n->lp);
  n->mem = calloc((size_t)n->lp->bufs.len, sizeof(Num *));
  for (int i = 0; i < n->lp->bufs.len; i++)
    n->mem[i] = calloc((size_t)n->lp->bufs.data[i].numel + 1, sizeof(Num));
  compare_with_naive(r, n, true, tol);
  done(n);
  done(r);
}

static void cpu_schedule_exp_and_reductions_stay_near_the_naive_order(void **state) {
  (void)state;
  // softmax: max and sum in 16 lanes over 100 = 6 * 16 + 4 columns; exp kept for the last pass
  near_naive_after_sched("fn f(x: f32[3, 100]) -> f32[3, 100] {\n    return softmax(x, -1)\n}\n", 6, 1e-6);
  near_naive_after_sched("fn f(x: f32[5, 40]) -> (f32[5], f32[5], f32[5]) {\n"
                         "    return x.sum(-1), x.amax(-1), exp(x).mean(-1)\n}\n", 2, 1e-6);
  near_naive_after_sched("fn f(x: f64[4, 33]) -> f64[4] {\n    return x.prod(-1)\n}\n", 4, 1e-12);
  near_naive_after_sched("fn f(x: f32[64]) -> (f32[64], f32[64]) {\n    return sigmoid(x), silu(x)\n}\n", -1, 1e-6);
  // too short for lanes: left alone
  near_naive_after_sched("fn f(x: f32[4, 20]) -> f32[4] {\n    return x.sum(-1)\n}\n", 20, 1e-6);
}

// The most lanes of any local of src's kernels after the CPU schedule.
static int most_lanes_after_sched(const char *src) {
  Run *r = compile(src);
  sched_cpu(&r->cx, r->lp, build_cpu);
  int most = 1;
  for (int k = 0; k < r->lp->kernels.len; k++) {
    const LKernel *kk = r->lp->kernels.data[k];
    int lanes[kk->locals.len + 1];
    loop_local_lanes(kk, lanes);
    for (int i = 0; i < kk->locals.len; i++)
      most = lanes[i] > most ? lanes[i] : most;
  }
  done(r);
  return most;
}

// A sum or product of plain arithmetic over consecutive elements, or a softmax's or
// log_softmax's row max (a select max, which skips NaN), or amax/amin, max()/min() and
// max(dim)'s values (maximum/minimum, which propagate NaN), accumulates in one vector of
// 16 f32 (8 f64) lanes, with the remainder in lane 0; a term the vectors cannot compute
// (exp's bit casts) keeps the unrolled lanes. The values: as near the naive order as the
// unrolled form (the test above, which runs these forms).
static void cpu_schedule_sums_of_plain_arithmetic_accumulate_in_one_vector(void **state) {
  (void)state;
  assert_int_equal(most_lanes_after_sched("fn f(x: f32[5, 40]) -> f32[5] {\n    return x.sum(-1)\n}\n"), 16);
  assert_int_equal(most_lanes_after_sched("fn f(x: f64[4, 33]) -> f64[4] {\n    return x.prod(-1)\n}\n"), 8);
  assert_int_equal(most_lanes_after_sched("fn f(x: f32[6, 64], w: f32[64]) -> f32[6] {\n"
                                          "    return ((x - 0.5).square() * w - x).sum(-1)\n}\n"),
                   16);
  assert_int_equal(most_lanes_after_sched("fn f(x: f32[5, 40]) -> f32[5] {\n    return x.amax(-1)\n}\n"), 16);
  assert_int_equal(most_lanes_after_sched("fn f(x: f64[5, 40]) -> f64[5] {\n    return x.amin(1)\n}\n"), 8);
  assert_int_equal(most_lanes_after_sched("fn f(x: f32[5, 40]) -> f32[] {\n    return x.max()\n}\n"), 16);
  near_naive_after_sched("fn f(x: f64[3, 37]) -> (f64[3], f64[]) {\n    return x.amax(-1), x.min()\n}\n", 4, 0);
  // argmax/argmin and max(dim)'s indices: the best value and its block per lane (ir/sched.c's split_argext)
  assert_int_equal(most_lanes_after_sched("fn f(x: f32[5, 40]) -> i64[5] {\n    return x.argmax(-1)\n}\n"), 16);
  assert_int_equal(most_lanes_after_sched("fn f(x: f64[4, 33]) -> i64[4] {\n    return x.argmin(1)\n}\n"), 8);
  assert_int_equal(most_lanes_after_sched("fn f(x: i32[3, 50]) -> i64[3] {\n    return x.max(1).indices\n}\n"), 16);
  assert_int_equal(most_lanes_after_sched("fn f(x: i64[3, 50]) -> i64[3] {\n    return x.argmin(-1)\n}\n"), 8);
  assert_int_equal(most_lanes_after_sched("fn f(x: f32[3, 20]) -> i64[3] {\n    return x.argmax(-1)\n}\n"), 1);
  // ... and over a dim not the last: consecutive columns in lanes (split_colargext)
  assert_int_equal(most_lanes_after_sched("fn f(x: f32[9, 40]) -> i64[40] {\n    return x.argmax(0)\n}\n"), 16);
  near_naive_after_sched("fn f(x: f64[5, 37], y: f32[3, 20, 40]) -> (i64[37], i64[3, 40]) {\n"
                         "    return x.argmin(0), y.argmax(1)\n}\n", -1, 0);
  near_naive_after_sched("fn f(x: f64[3, 37], y: f32[2, 50]) -> (i64[3], i64[2], i64[]) {\n"
                         "    return x.argmax(-1), y.argmin(1), y.argmax()\n}\n", 4, 0);
  assert_int_equal(most_lanes_after_sched("fn f(x: f32[3, 100]) -> f32[3, 100] {\n    return softmax(x, -1)\n}\n"), 16);
  assert_int_equal(most_lanes_after_sched("fn f(x: f64[3, 37]) -> f64[3, 37] {\n    return log_softmax(x, -1)\n}\n"), 8);
  near_naive_after_sched("fn f(x: f64[3, 37]) -> f64[3, 37] {\n    return log_softmax(x, -1)\n}\n", 4, 1e-12);
  if (!trivial_plan)  // (a kernel each: the sum of exp's result is a plain sum)
    assert_int_equal(most_lanes_after_sched("fn f(x: f32[5, 40]) -> f32[5] {\n    return exp(x).sum(-1)\n}\n"), 1);
  near_naive_after_sched("fn f(x: f32[6, 64], w: f32[64]) -> f32[6] {\n"
                         "    return ((x - 0.5).square() * w - x).sum(-1)\n}\n", 4, 1e-6);
}

// Whether a store of l (or under it) divides by a square root.
static bool divides_by_sqrt(const LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    const LStmt *s = l->data[i];
    const LExpr *todo[64];
    int n = 0;
    if (s->kind == LS_STORE)
      todo[n++] = s->val;
    while (n > 0) {
      const LExpr *e = todo[--n];
      if (e->kind == LX_BINARY && e->op == OP_DIV && e->b->kind == LX_UNARY && e->b->op == OP_SQRT)
        return true;
      for (const LExpr *const *c = (const LExpr *const[]){e->a, e->b, e->c}, *const *end = c + 3; c < end; c++)
        if (*c && n < 64)
          todo[n++] = *c;
    }
    if (divides_by_sqrt(&s->body))
      return true;
  }
  return false;
}

// A row kernel's last pass on a CPU multiplies by 1 / sqrt(s) of a row's s, computed
// once a row, where the source divides by sqrt(s) (layer norm's (x - m) / sqrt(v + eps),
// looped rows and unrolled short ones); the naive build divides. The values stay
// within an ulp or two of the naive order's.
static void rows_multiply_by_the_reciprocal_of_their_square_root(void **state) {
  (void)state;
  if (trivial_plan)
    return;  // (no epilogue in a row kernel)
  const char *srcs[] = {
      "fn f(x: f32[6, 40]) -> f32[6, 40] {\n"
      "    return (x - x.mean(-1, keepdim=true)) / sqrt(x.var(-1, keepdim=true, unbiased=false) + 1e-5)\n}\n",
      "fn f(x: f64[5, 8], e: float) -> f64[5, 8] {\n"
      "    return (x - x.mean(-1, keepdim=true)) / sqrt(x.var(-1, keepdim=true) + e)\n}\n",
  };
  for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) {
    Run *r = compile(srcs[i]);
    for (int k = 0; k < r->lp->kernels.len; k++)
      assert_false(divides_by_sqrt(&r->lp->kernels.data[k]->body));
    Run *n = compile(srcs[i]);
    n->lp = kernel_build_naive(&n->cx, n->g);
    loop_verify(n->lp);
    assert_true(divides_by_sqrt(&n->lp->kernels.data[0]->body));
    compare_with_naive(r, n, true, 1e-6);
    done(n);
    done(r);
  }
}

// a op b lane by lane (lx_binary makes scalars).
static LExpr *vbinary(Ctx *cx, Op op, LExpr *a, LExpr *b) {
  LExpr *e = lx_binary(cx, op, a->dt, a, b);
  e->lanes = a->lanes;
  return e;
}

// By hand (no source makes vectors but ir/gemm.c): c[2, 8] = a[2, 5] @ b[5, 8] with
// two accumulators of 8 f32 lanes, t0 from splat(0.5), t1 from b's row 0; then
// t1 = t1 - splat(t1.7), which reads lane 7 before any lane is written, and
// c[16..18] = t0.3, fma(t0.0, t0.1, 2) in scalars.
static void vector_lanes_run_lane_by_lane_and_assign_whole_vectors(void **state) {
  (void)state;
  Run *r = calloc(1, sizeof *r);
  ctx_init(&r->cx);
  Ctx *cx = &r->cx;
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = "f";
  p->file = "t.tdsl";
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_PARAM, DT_F32, 10, "a", 0, false, false}));
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_PARAM, DT_F32, 40, "b", 1, false, false}));
  vec_push(&cx->arena, &p->bufs, ((LBuf){LB_RESULT, DT_F32, 18, "c", -1, false, false}));
  LKernel *k = arena_alloc(&cx->arena, sizeof *k);
  k->name = "k0";
  k->nvars = 1;
  vec_push(&cx->arena, &k->args, ((LArg){.buf = 0, .read = true}));
  vec_push(&cx->arena, &k->args, ((LArg){.buf = 1, .read = true}));
  vec_push(&cx->arena, &k->args, ((LArg){.buf = 2, .written = true}));
  vec_push(&cx->arena, &k->locals, DT_F32);
  vec_push(&cx->arena, &k->locals, DT_F32);
  LIndex zero = {0}, brow = {.nterms = 1, .var = {0}, .coef = {8}};
  vec_push(&cx->arena, &k->body, ls_let(cx, 0, lx_splat(cx, 8, lx_const_f(cx, DT_F32, 0.5))));
  vec_push(&cx->arena, &k->body, ls_let(cx, 1, lx_vload(cx, DT_F32, 8, 1, zero)));
  LStmt *kl = ls_loop(cx, 0, 5);
  for (int row = 0; row < 2; row++) {
    LIndex ai = {.base = 5 * row, .nterms = 1, .var = {0}, .coef = {1}};
    LExpr *f = lx_fma(cx, lx_splat(cx, 8, lx_load(cx, DT_F32, 0, ai)), lx_vload(cx, DT_F32, 8, 1, brow),
                      lx_local_v(cx, DT_F32, 8, row));
    vec_push(&cx->arena, &kl->body, ls_set(cx, row, f));
  }
  vec_push(&cx->arena, &k->body, kl);
  LExpr *t0 = lx_local_v(cx, DT_F32, 8, 0), *t1 = lx_local_v(cx, DT_F32, 8, 1);
  vec_push(&cx->arena, &k->body, ls_set(cx, 1, vbinary(cx, OP_SUB, t1, lx_splat(cx, 8, lx_lane(cx, t1, 7)))));
  vec_push(&cx->arena, &k->body, ls_store(cx, 2, zero, t0));
  vec_push(&cx->arena, &k->body, ls_store(cx, 2, (LIndex){.base = 8}, t1));
  vec_push(&cx->arena, &k->body, ls_store(cx, 2, (LIndex){.base = 16}, lx_lane(cx, t0, 3)));
  LExpr *f = lx_fma(cx, lx_lane(cx, t0, 0), lx_lane(cx, t0, 1), lx_const_f(cx, DT_F32, 2));
  vec_push(&cx->arena, &k->body, ls_store(cx, 2, (LIndex){.base = 17}, f));
  vec_push(&cx->arena, &p->kernels, k);
  loop_verify(p);
  r->lp = p;
  r->mem = calloc((size_t)p->bufs.len, sizeof(Num *));
  for (int i = 0; i < p->bufs.len; i++)
    r->mem[i] = calloc((size_t)p->bufs.data[i].numel + 1, sizeof(Num));
  double a[10], b[40], t[2][8];
  for (int i = 0; i < 10; i++)
    r->mem[0][i].f = a[i] = i % 4 - 1.5;
  for (int i = 0; i < 40; i++)
    r->mem[1][i].f = b[i] = i % 6 - 2;
  for (int j = 0; j < 8; j++) {
    t[0][j] = 0.5, t[1][j] = b[j];
    for (int kk = 0; kk < 5; kk++)
      for (int row = 0; row < 2; row++)
        t[row][j] += a[5 * row + kk] * b[8 * kk + j];
  }
  assert_true(execute(r));
  for (int j = 0; j < 8; j++) {
    assert_true(r->mem[2][j].f == t[0][j]);
    assert_true(r->mem[2][8 + j].f == t[1][j] - t[1][7]);
  }
  assert_true(r->mem[2][16].f == t[0][3]);
  assert_true(r->mem[2][17].f == t[0][0] * t[0][1] + 2);
  assert_true(r->mem[2][8].f != 0 && r->mem[2][5].f != 0.5);  // the inputs make a non-trivial test
  done(r);
}

int main(void) {
  host_cpu = cpu_target(NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(broadcast_add_aligns_dims_from_the_right),
      cmocka_unit_test(size_one_dims_broadcast_against_each_other),
      cmocka_unit_test(integer_floor_division_and_remainder_follow_python_signs),
      cmocka_unit_test(integer_division_by_zero_raises_located_zero_division_error),
      cmocka_unit_test(float_floor_division_and_remainder_match_pytorch),
      cmocka_unit_test(int_true_division_computes_in_f32),
      cmocka_unit_test(int_tensor_powers_follow_pytorch_for_negative_exponents),
      cmocka_unit_test(comparison_of_int_with_float_scalar_compares_in_float),
      cmocka_unit_test(bool_addition_is_logical_or),
      cmocka_unit_test(where_selects_per_element_with_broadcast),
      cmocka_unit_test(clamp_keeps_nan_and_max_wins_over_min),
      cmocka_unit_test(clamp_of_int_with_float_bound_promotes_to_float),
      cmocka_unit_test(unary_float_ops_of_ints_cast_their_input),
      cmocka_unit_test(casts_truncate_and_half_rounds),
      cmocka_unit_test(half_arithmetic_is_done_in_f32_and_rounded),
      cmocka_unit_test(sum_over_two_dims_with_keepdim),
      cmocka_unit_test(sum_of_bools_counts_in_i64_and_mean_of_empty_is_nan),
      cmocka_unit_test(var_is_unbiased_by_default_and_std_is_its_root),
      cmocka_unit_test(argmax_takes_the_first_max_and_nan_wins),
      cmocka_unit_test(amax_propagates_nan_and_prod_of_ints_is_i64),
      cmocka_unit_test(all_and_any_reduce_to_bool),
      cmocka_unit_test(logsumexp_is_stable_and_all_minus_inf_gives_minus_inf),
      cmocka_unit_test(softmax_rows_sum_to_one),
      cmocka_unit_test(matmul_of_vectors_and_matrices),
      cmocka_unit_test(batched_matmul_broadcasts_batches_and_reads_transposed_operands),
      cmocka_unit_test(matmul_of_matrix_and_batch_folds_the_batch),
      cmocka_unit_test(cat_and_stack_write_each_input_into_its_slice),
      cmocka_unit_test(gather_picks_along_dim),
      cmocka_unit_test(gather_out_of_range_names_the_value_and_dim),
      cmocka_unit_test(index_with_negative_indices_wraps),
      cmocka_unit_test(index_of_second_dim_and_two_tensors),
      cmocka_unit_test(index_with_separated_tensors_puts_their_dims_first),
      cmocka_unit_test(cat_promotes_its_inputs_and_setitem_broadcasts_the_value),
      cmocka_unit_test(zero_size_matmul_and_reductions_give_identities),
      cmocka_unit_test(index_out_of_range_raises_with_its_value),
      cmocka_unit_test(index_select_reads_rows),
      cmocka_unit_test(arange_and_eye_generate_from_the_index),
      cmocka_unit_test(store_through_a_view_with_plus_equals_updates_the_parameter),
      cmocka_unit_test(store_into_a_local_tensor_is_seen_by_later_reads),
      cmocka_unit_test(a_returned_view_of_a_parameter_points_at_its_buffer),
      cmocka_unit_test(large_kernels_mark_their_outer_loop_parallel),
      cmocka_unit_test(inline_producers_are_recomputed_through_their_views),
      cmocka_unit_test(inline_producer_read_through_a_slice_and_broadcast),
      cmocka_unit_test(layer_norm_row_kernel_with_local_mean_and_epilogue),
      cmocka_unit_test(softmax_kernel_fuses_its_producer_and_epilogue),
      cmocka_unit_test(matmul_kernel_keeps_its_result_local_for_the_epilogue),
      cmocka_unit_test(reduction_with_stored_result_and_reduced_shape_epilogue),
      cmocka_unit_test(column_sum_reads_rows_with_unit_stride),
      cmocka_unit_test(every_column_reduction_matches_the_row_order),
      cmocka_unit_test(column_reductions_of_halves_and_ints_accumulate_in_temps),
      cmocka_unit_test(column_reduction_over_interleaved_and_transposed_dims),
      cmocka_unit_test(column_reduction_with_epilogue_and_local_results),
      cmocka_unit_test(large_column_reduction_runs_blocks_in_parallel),
      cmocka_unit_test(row_reductions_and_softmax_keep_the_row_order),
      cmocka_unit_test(cpu_schedule_exp_and_reductions_stay_near_the_naive_order),
    cmocka_unit_test(cpu_schedule_sums_of_plain_arithmetic_accumulate_in_one_vector),
      cmocka_unit_test(rows_multiply_by_the_reciprocal_of_their_square_root),
      cmocka_unit_test(gpu_program_matmuls_are_the_plain_nest),
      cmocka_unit_test(matmul_with_transposed_rhs_keeps_the_k_loop_innermost),
      cmocka_unit_test(gemm_tiles_of_every_layout_stay_near_the_naive_sum),
      cmocka_unit_test(gemm_schedule_and_tile_follow_the_shape_and_the_cpu),
      cmocka_unit_test(the_llc_is_bounded_by_32_mib_a_cpu),
      cmocka_unit_test(gemm_micro_kernel_is_one_function_for_the_program),
      cmocka_unit_test(gemm_is_parallel_over_batches_rows_or_columns),
      cmocka_unit_test(transposed_copies_run_in_tiles_of_both_dims),
      cmocka_unit_test(permutes_and_mixed_operands_are_tiled_with_the_same_results),
      cmocka_unit_test(transposed_copies_move_register_blocks_in_every_dtype),
      cmocka_unit_test(tall_column_reductions_split_their_rows_across_threads),
      cmocka_unit_test(vector_lanes_run_lane_by_lane_and_assign_whole_vectors),
  };
  int failed = cmocka_run_group_tests_name("fusion plan of fuse_graph", tests, NULL, NULL);
  trivial_plan = true;
  failed += cmocka_run_group_tests_name("trivial plan", tests, NULL, NULL);
  return failed;
}
