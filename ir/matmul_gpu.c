// ir/matmul_gpu.c: matmuls on the GPU (gpu_matmul, ir/gpu.h), from the facts of the
// plain nest (LKernel.mm, LM_DOT: out[batch.., i, j] = sum_k a(batch.., i, k) *
// b(batch.., k, j), then the statements after the k loop, the epilogues, at (i, j)).
//
// Shared-memory tiles, register-blocked (every dtype; the tensor-core kernel of f16 and
// bf16 is the next section's): a block of 256 threads computes a BM x BN tile of one
// batch element, grid-stride over the tiles. For each slab of BK k terms the block
// stages a's BM x BK and b's BK x BN elements in shared memory (consecutive threads
// taking consecutive addresses of each operand: along k when it is the operand's unit
// stride, else along i or j; a staged row padded by a word where consecutive threads
// would otherwise write one bank), waits, and each thread adds the slab's products to its
// TM x TN sums: rows ty + (BM / TM) * m and columns tx + (BN / TN) * n, so a warp's
// reads of the staged b are consecutive words (no bank conflicts) and its stores of a
// row are consecutive. Past the edges the staged values are -0.0 (a) and +0.0 (b): a
// padded term adds -0.0, which leaves every sum (and its sign) as it is. The sums then
// run the epilogue statements element by element, with i and j bound.
// Sizes: 128 x 128 x 8, 8 x 8 a thread, when both output dims reach 128; 64 x 64 x 16, 4 x
// 4, from 64; else 32 x 32 x 16, 2 x 2 (f64: 64 x 64 x 8 at most).
//
// Invariants: every output adds its k terms in order from 0, as the plain nest does
// (each product fused into its sum: LX_FMA); a thread's staged loads lie inside the
// operands (their indices clamped to the last row and column).
#include "ir/gpu.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

enum { MM_THREADS = 256 };

typedef struct Tile {
  int bm, bn, bk, tm, tn;
} Tile;

// The matmul of g's kernel, its roles checked.
typedef struct Mm {
  GpuBuild *g;
  const LMatmul *mm;
  const LStmt *il, *jl, *kl;  // the i, j and k loops
  const LStmt *batch[TD_MAX_DIMS];
  int nbatch;
  int64_t M, N, K, nbt;  // nbt: the batch elements
  bool a_kfast, b_jfast;
  Tile t;
} Mm;

// ---- expressions of the i64 index arithmetic ----
static LExpr *v(GpuBuild *g, int var) { return lx_var(g->cx, var); }
static LExpr *lt(GpuBuild *g, LExpr *a, int64_t b) { return lx_binary(g->cx, OP_LT, DT_BOOL, a, gpu_i64(g, b)); }
static LExpr *and2(GpuBuild *g, LExpr *a, LExpr *b) { return lx_binary(g->cx, OP_LOGICAL_AND, DT_BOOL, a, b); }
static LExpr *min_i(GpuBuild *g, LExpr *a, int64_t b) {
  return lx_binary(g->cx, OP_MINIMUM, DT_I64, a, gpu_i64(g, b));
}

// The sum of |coef| of var over the loads of e: how far e moves in memory per step of var.
static int64_t stride_of(const LExpr *e, int var) {
  if (!e)
    return 0;
  int64_t s = 0;
  if (e->kind == LX_LOAD)
    for (int t = 0; t < e->idx.nterms; t++)
      if (e->idx.var[t] == var)
        s += e->idx.coef[t] < 0 ? -e->idx.coef[t] : e->idx.coef[t];
  return s + stride_of(e->a, var) + stride_of(e->b, var) + stride_of(e->c, var);
}

static bool reads_only(GpuBuild *g, const Mm *m, const LExpr *e, int var1, int var2) {
  int allowed[TD_MAX_DIMS + 2], n = 0;
  for (int i = 0; i < m->nbatch; i++)
    allowed[n++] = m->batch[i]->var;
  allowed[n++] = var1, allowed[n++] = var2;
  return gpu_reads_only_vars(e, allowed, n, g->k->nvars) && !gpu_expr_reads_any_local(e) && !gpu_expr_has_dyn(e) &&
         !lx_raises(e);
}

// Whether g's kernel is a matmul the tiles take, and its roles.
static bool matmul_of(GpuBuild *g, Mm *m) {
  const LKernel *k = g->k;
  const LMatmul *mm = k->mm;
  if (k->kind != KK_MATMUL || !mm || mm->form != LM_DOT || !mm->kloop || mm->iouter < 0 || mm->jouter < 0)
    return false;
  *m = (Mm){.g = g, .mm = mm};
  m->il = mm->outer[mm->iouter], m->jl = mm->outer[mm->jouter], m->kl = mm->kloop;
  m->M = m->il->extent, m->N = m->jl->extent, m->K = m->kl->extent, m->nbt = 1;
  for (int i = 0; i < mm->nouter; i++) {
    if (!gpu_independent(g, mm->outer[i]))
      return false;
    if (i != mm->iouter && i != mm->jouter) {
      m->batch[m->nbatch++] = mm->outer[i];
      m->nbt *= mm->outer[i]->extent;
    }
  }
  DType dt = mm->dt;
  if ((dt != DT_F32 && dt != DT_F64) || mm->a->dt != dt || mm->b->dt != dt || m->K < 1)
    return false;
  if (!reads_only(g, m, mm->a, m->il->var, m->kl->var) || !reads_only(g, m, mm->b, m->kl->var, m->jl->var))
    return false;
  for (int i = mm->epi; i < mm->body->len; i++)  // the epilogue: loop-free statements
    if (mm->body->data[i]->kind == LS_LOOP || gpu_stmts_have_loop(&mm->body->data[i]->body))
      return false;
  m->a_kfast = stride_of(mm->a, m->kl->var) <= stride_of(mm->a, m->il->var);
  m->b_jfast = stride_of(mm->b, m->jl->var) <= stride_of(mm->b, m->kl->var);
  bool dbl = dt == DT_F64;
  if (m->M >= 128 && m->N >= 128 && !dbl)
    m->t = (Tile){128, 128, 8, 8, 8};
  else if (m->M >= 64 && m->N >= 64)
    m->t = dbl ? (Tile){64, 64, 8, 4, 4} : (Tile){64, 64, 16, 4, 4};
  else
    m->t = (Tile){32, 32, dbl ? 8 : 16, 2, 2};
  return true;
}

// ---- the SIMT tiles ----
// The staging of one operand's slab: for s < per-thread elements, element
// e = tid + 256 s of the slab, at (r, c) within it (r < rows, c < cols; `fast` the one
// consecutive threads walk), into sh[r * rs + c * cs] = inside ? x : pad, with the vars
// x reads (rv, cv) bound to origin + r (c), clamped.
static void stage(Mm *m, LStmtList *out, int sh, const LExpr *x, int64_t rows, int64_t cols, bool cols_fast,
                  LExpr *r0, int rvar, int64_t rmax, LExpr *c0, int cvar, int64_t cmax, int64_t rs, int64_t cs,
                  double pad) {
  GpuBuild *g = m->g;
  Ctx *cx = g->cx;
  int64_t per = rows * cols / MM_THREADS;
  int s = gpu_new_var(g), rv = gpu_new_var(g), cv = gpu_new_var(g);
  LStmtList *l = gpu_loop(g, out, s, per, NULL, NULL);
  LExpr *e = gpu_add(g, gpu_tid(g), gpu_mul(g, v(g, s), MM_THREADS));
  gpu_setvar(g, l, cv, cols_fast ? gpu_mod(g, e, cols) : gpu_div(g, e, rows));
  gpu_setvar(g, l, rv, cols_fast ? gpu_div(g, e, cols) : gpu_mod(g, e, rows));
  LExpr *ri = gpu_add(g, r0, v(g, rv)), *ci = gpu_add(g, c0, v(g, cv));
  gpu_setvar(g, l, rvar, min_i(g, ri, rmax - 1));
  gpu_setvar(g, l, cvar, min_i(g, ci, cmax - 1));
  LExpr *inside = and2(g, lt(g, ri, rmax), lt(g, ci, cmax));
  DType dt = x->dt;
  LExpr *val = lx_select(cx, inside, (LExpr *)x, lx_const_f(cx, dt, pad));
  LIndex at = {.nterms = 2, .var = {rv, cv}, .coef = {rs, cs}};
  gpu_push(g, l, ls_store(cx, sh, at, val));
}

static void build_simt(Mm *m) {
  GpuBuild *g = m->g;
  Ctx *cx = g->cx;
  const LMatmul *mm = m->mm;
  const Tile *t = &m->t;
  DType dt = mm->dt;
  LGpuSched *gs = g->gs;
  int64_t ti = (m->M + t->bm - 1) / t->bm, tj = (m->N + t->bn - 1) / t->bn, ntiles = m->nbt * ti * tj;
  int cb = t->bn / t->tn, rb = t->bm / t->tm;  // threads along j, along i
  TD_ASSERT(cb * rb == MM_THREADS);
  gs->block = MM_THREADS;
  gs->grid = ntiles < g->t->max_grid ? ntiles : g->t->max_grid;
  gs->name = arena_printf(&cx->arena, "tiled matmul %dx%dx%d, %dx%d a thread", t->bm, t->bn, t->bk, t->tm, t->tn);
  // a staged k-major, b j-major: the compute reads consecutive words; a row of one padded
  // by a word when its staging walks k (else consecutive threads would write one bank)
  int64_t ap = t->bm + (m->a_kfast ? 1 : 0), bp = t->bn + (m->b_jfast ? 0 : 1);
  int as = gpu_shared(g, dt, (int64_t)t->bk * ap, "matmul a tile");
  int bs = gpu_shared(g, dt, (int64_t)t->bk * bp, "matmul b tile");
  // the tiles, over the blocks
  int tv = gpu_new_var(g), tiv = gpu_new_var(g), tjv = gpu_new_var(g), tx = gpu_new_var(g), ty = gpu_new_var(g);
  LStmtList *tl = gpu_loop(g, &g->out, tv, ntiles, gpu_ctaid(g), gpu_i64(g, gs->grid));
  gpu_setvar(g, tl, tjv, gpu_mod(g, v(g, tv), tj));
  gpu_setvar(g, tl, tiv, gpu_mod(g, gpu_div(g, v(g, tv), tj), ti));
  gpu_decompose(g, tl, m->batch, m->nbatch, gpu_div(g, v(g, tv), ti * tj), NULL);
  gpu_setvar(g, tl, tx, gpu_mod(g, gpu_tid(g), cb));
  gpu_setvar(g, tl, ty, gpu_div(g, gpu_tid(g), cb));
  LExpr *i0 = gpu_mul(g, v(g, tiv), t->bm), *j0 = gpu_mul(g, v(g, tjv), t->bn);
  // the thread's sums
  int nacc = t->tm * t->tn;
  int acc[64];
  TD_ASSERT(nacc <= 64);
  for (int q = 0; q < nacc; q++) {
    acc[q] = gpu_new_local(g, dt);
    gpu_push(g, tl, ls_let(cx, acc[q], mm->init));
  }
  // the k slabs: stage, wait, add the products, wait
  int kv = gpu_new_var(g), kk = gpu_new_var(g);
  LStmtList *kl = gpu_loop(g, tl, kv, (m->K + t->bk - 1) / t->bk, NULL, NULL);
  LExpr *k0 = gpu_mul(g, v(g, kv), t->bk);
  // a: rows i (bm), cols k (bk), stored k-major: as[k * bm + i]
  stage(m, kl, as, mm->a, t->bm, t->bk, m->a_kfast, i0, m->il->var, m->M, k0, m->kl->var, m->K, 1, ap, -0.0);
  // b: rows k (bk), cols j (bn): bs[k * bn + j]
  stage(m, kl, bs, mm->b, t->bk, t->bn, m->b_jfast, k0, m->kl->var, m->K, j0, m->jl->var, m->N, bp, 1, 0.0);
  gpu_sync(g, kl, false);
  LStmtList *cl = gpu_loop(g, kl, kk, t->bk, NULL, NULL);
  int av[8], bv[8];
  for (int r = 0; r < t->tm; r++) {
    av[r] = gpu_new_local(g, dt);
    LIndex at = {.base = (int64_t)r * rb, .nterms = 2, .var = {kk, ty}, .coef = {ap, 1}};
    gpu_push(g, cl, ls_let(cx, av[r], lx_load(cx, dt, as, at)));
  }
  for (int c = 0; c < t->tn; c++) {
    bv[c] = gpu_new_local(g, dt);
    LIndex at = {.base = (int64_t)c * cb, .nterms = 2, .var = {kk, tx}, .coef = {bp, 1}};
    gpu_push(g, cl, ls_let(cx, bv[c], lx_load(cx, dt, bs, at)));
  }
  for (int r = 0; r < t->tm; r++)
    for (int c = 0; c < t->tn; c++) {
      int q = r * t->tn + c;
      gpu_push(g, cl, ls_set(cx, acc[q], lx_fma(cx, lx_local(cx, dt, av[r]), lx_local(cx, dt, bv[c]),
                                                 lx_local(cx, dt, acc[q]))));
    }
  gpu_sync(g, kl, false);
  // the epilogue of each sum inside the output
  int nl = g->k->locals.len;
  int *map = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nl + 1));
  for (int i = 0; i < nl; i++)
    map[i] = -1;
  GpuSubst s = {.local = map};
  for (int r = 0; r < t->tm; r++)
    for (int c = 0; c < t->tn; c++) {
      LExpr *i = gpu_add(g, i0, gpu_add(g, v(g, ty), gpu_i64(g, (int64_t)r * rb)));
      LExpr *j = gpu_add(g, j0, gpu_add(g, v(g, tx), gpu_i64(g, (int64_t)c * cb)));
      LStmt *in = ls_if(cx, and2(g, lt(g, i, m->M), lt(g, j, m->N)));
      // (clamped, as they are inside: so the bound of every index is plain to loop_verify)
      gpu_setvar(g, &in->body, m->il->var, min_i(g, i, m->M - 1));
      gpu_setvar(g, &in->body, m->jl->var, min_i(g, j, m->N - 1));
      map[mm->acc] = acc[r * t->tn + c];
      for (int q = mm->epi; q < mm->body->len; q++)
        gpu_push(g, &in->body, gpu_subst_stmt(g, mm->body->data[q], &s));
      gpu_push(g, tl, in);
    }
}

bool gpu_matmul(GpuBuild *g) {
  Mm m;
  if (!matmul_of(g, &m))
    return false;
  build_simt(&m);
  return true;
}
