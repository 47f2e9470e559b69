// ir/matmul_gpu.c: matmuls on the GPU (gpu_matmul, ir/gpu.h), from the facts of the
// plain nest (LKernel.mm, LM_DOT: out[batch.., i, j] = sum_k a(batch.., i, k) *
// b(batch.., k, j), then the statements after the k loop, the epilogues, at (i, j)).
//
// Shared-memory tiles, register-blocked (f32, f64, and f16/bf16 where the tensor-core
// kernel below does not apply): a block of 256 threads computes a BM x BN tile of one
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

// ---- tensor cores: mma.sync m16n8k16 ----
// f16 and bf16 operands (plain loads of the inputs), f32 sums, sm_80 and newer: a block
// of 8 warps (2 x 4) over a 128 x 128 tile (4 warps, 2 x 2, over 64 x 64 when an output
// dim is below 128), slabs of 32 k terms. Each operand's slab is staged in shared
// memory as the operand lies in memory (its unit-stride dim contiguous, rows padded by
// 8 halves: 16-byte copies stay aligned and the fragments' reads miss each other's
// banks), 16 bytes a thread at a time where the operand's layout lines up and the slab
// lies inside it, else element by element (-0.0 and +0.0 past the edges, as the SIMT
// tiles). Each warp then runs its 64 x 32 (32 x 32) tile as 4 x 4 (2 x 4) mma tiles of
// 16 x 8 per 16 k terms, the fragments read straight from shared memory (LX_FRAG).
typedef struct MmaTile {
  int bm, bn, bk, wm, wn;  // block tile; warps along m and n
} MmaTile;

// The operand x as a plain load of a half buffer (its cast to the sums' f32 dropped).
static const LExpr *half_load(const LExpr *x) {
  if (x->kind == LX_CAST && x->dt == DT_F32)
    x = x->a;
  return x->kind == LX_LOAD && (x->dt == DT_F16 || x->dt == DT_BF16) && !x->idx.dyn ? x : NULL;
}

// Whether 8 consecutive elements of `inner` from any multiple of 8 of it lie on a
// 16-byte boundary of the load's buffer, wherever the other vars are.
static bool lines_up(GpuBuild *g, const LExpr *ld, int inner) {
  if (ld->idx.base % 8 || g->k->args.data[ld->buf].at % 8)
    return false;
  bool unit = false;
  for (int t = 0; t < ld->idx.nterms; t++) {
    if (ld->idx.var[t] == inner)
      unit = ld->idx.coef[t] == 1;
    else if (ld->idx.coef[t] % 8)
      return false;
  }
  return unit;
}

// Stages a slab of load (O rows of I elements in shared memory sh, row stride ld) from
// the operand: shared (o, i) is the operand at ovar = o0 + o, ivar = i0 + i.
static void stage_mma(Mm *m, LStmtList *out, int sh, const LExpr *load, int64_t O, int64_t I, int64_t ld,
                      LExpr *o0, int ovar, int64_t omax, LExpr *i0, int ivar, int64_t imax, double pad,
                      int64_t threads) {
  GpuBuild *g = m->g;
  Ctx *cx = g->cx;
  int64_t per = O * I / 8 / threads;
  TD_ASSERT(per * threads * 8 == O * I);
  bool vec = lines_up(g, load, ivar);
  int s = gpu_new_var(g), co = gpu_new_var(g), ci = gpu_new_var(g);
  LStmtList *l = gpu_loop(g, out, s, per, NULL, NULL);
  LExpr *e = gpu_add(g, gpu_tid(g), gpu_mul(g, v(g, s), threads));
  gpu_setvar(g, l, co, gpu_div(g, e, I / 8));
  gpu_setvar(g, l, ci, gpu_mod(g, e, I / 8));
  LExpr *oi = gpu_add(g, o0, v(g, co)), *ii = gpu_add(g, i0, gpu_mul(g, v(g, ci), 8));
  LIndex at = {.nterms = 2, .var = {co, ci}, .coef = {ld, 8}};
  LStmtList *each = l;
  if (vec) {  // the whole 8 inside: one 16-byte copy; else element by element
    LExpr *full = and2(g, lt(g, oi, omax), lt(g, gpu_add(g, ii, gpu_i64(g, 7)), imax));
    LStmt *in = ls_if(cx, full);
    gpu_setvar(g, &in->body, ovar, min_i(g, oi, omax - 1));
    gpu_setvar(g, &in->body, ivar, min_i(g, ii, imax - 1));
    gpu_push(g, &in->body, ls_store(cx, sh, at, lx_vload(cx, load->dt, 8, load->buf, load->idx)));
    gpu_push(g, l, in);
    LStmt *edge = ls_if(cx, lx_unary(cx, OP_LOGICAL_NOT, DT_BOOL, full));
    gpu_push(g, l, edge);
    each = &edge->body;
  }
  int ev = gpu_new_var(g);
  LStmtList *el = gpu_loop(g, each, ev, 8, NULL, NULL);
  LExpr *ie = gpu_add(g, ii, v(g, ev));
  gpu_setvar(g, el, ovar, min_i(g, oi, omax - 1));
  gpu_setvar(g, el, ivar, min_i(g, ie, imax - 1));
  LIndex ate = at;
  ate.var[ate.nterms] = ev, ate.coef[ate.nterms++] = 1;
  gpu_push(g, el, ls_store(cx, sh, ate, lx_const_f(cx, load->dt, pad)));
  LStmt *in = ls_if(cx, and2(g, lt(g, oi, omax), lt(g, ie, imax)));
  gpu_push(g, &in->body, ls_store(cx, sh, ate, (LExpr *)load));  // a copy: the bits
  gpu_push(g, el, in);
}

static LExpr *frag_of(GpuBuild *g, int role, int sh, DType dt, LIndex at, int64_t ld) {
  LExpr *f = lx_new(g->cx, LX_FRAG, dt);
  f->i = role;
  f->buf = sh;
  f->idx = at;
  f->b = gpu_i64(g, ld);
  f->lanes = role == LG_FRAG_A_MK || role == LG_FRAG_A_KM ? 8 : 4;
  return f;
}

static void build_mma(Mm *m, const LExpr *al, const LExpr *bl) {
  GpuBuild *g = m->g;
  Ctx *cx = g->cx;
  const LMatmul *mm = m->mm;
  LGpuSched *gs = g->gs;
  MmaTile t = m->M >= 128 && m->N >= 128 ? (MmaTile){128, 128, 32, 2, 4} : (MmaTile){64, 64, 32, 2, 2};
  int64_t threads = (int64_t)t.wm * t.wn * GPU_WARP, wtm = t.bm / t.wm, wtn = t.bn / t.wn;
  int mt = (int)(wtm / 16), nt = (int)(wtn / 8);
  int64_t ti = (m->M + t.bm - 1) / t.bm, tj = (m->N + t.bn - 1) / t.bn, ntiles = m->nbt * ti * tj;
  gs->block = threads;
  gs->grid = ntiles < g->t->max_grid ? ntiles : g->t->max_grid;
  gs->name = arena_printf(&cx->arena, "tensor-core matmul %dx%dx%d, mma.m16n8k16 %s, warps %dx%d", t.bm, t.bn, t.bk,
                          al->dt == DT_BF16 ? "bf16" : "f16", t.wm, t.wn);
  DType ht = al->dt;
  // the slabs in shared memory, as the operands lie
  int64_t lda = m->a_kfast ? t.bk + 8 : t.bm + 8, ldb = m->b_jfast ? t.bn + 8 : t.bk + 8;
  int as = gpu_shared(g, ht, (m->a_kfast ? t.bm : t.bk) * lda, "mma a slab");
  int bs = gpu_shared(g, ht, (m->b_jfast ? t.bk : t.bn) * ldb, "mma b slab");
  int tv = gpu_new_var(g), tiv = gpu_new_var(g), tjv = gpu_new_var(g), wmv = gpu_new_var(g), wnv = gpu_new_var(g);
  LStmtList *tl = gpu_loop(g, &g->out, tv, ntiles, gpu_ctaid(g), gpu_i64(g, gs->grid));
  gpu_setvar(g, tl, tjv, gpu_mod(g, v(g, tv), tj));
  gpu_setvar(g, tl, tiv, gpu_mod(g, gpu_div(g, v(g, tv), tj), ti));
  gpu_decompose(g, tl, m->batch, m->nbatch, gpu_div(g, v(g, tv), ti * tj), NULL);
  gpu_setvar(g, tl, wmv, gpu_div(g, gpu_warp(g), t.wn));
  gpu_setvar(g, tl, wnv, gpu_mod(g, gpu_warp(g), t.wn));
  LExpr *i0 = gpu_mul(g, v(g, tiv), t.bm), *j0 = gpu_mul(g, v(g, tjv), t.bn);
  int acc[32];
  TD_ASSERT(mt * nt <= 32);
  for (int q = 0; q < mt * nt; q++) {
    acc[q] = gpu_new_local(g, DT_F32);
    gpu_push(g, tl, ls_let(cx, acc[q], lx_splat(cx, 4, mm->init)));
  }
  int kv = gpu_new_var(g), kk = gpu_new_var(g);
  LStmtList *kl = gpu_loop(g, tl, kv, (m->K + t.bk - 1) / t.bk, NULL, NULL);
  LExpr *k0 = gpu_mul(g, v(g, kv), t.bk);
  int iv = m->il->var, jv = m->jl->var, kvr = m->kl->var;
  if (m->a_kfast)  // [m][k]
    stage_mma(m, kl, as, al, t.bm, t.bk, lda, i0, iv, m->M, k0, kvr, m->K, -0.0, threads);
  else  // [k][m]
    stage_mma(m, kl, as, al, t.bk, t.bm, lda, k0, kvr, m->K, i0, iv, m->M, -0.0, threads);
  if (m->b_jfast)  // [k][n]
    stage_mma(m, kl, bs, bl, t.bk, t.bn, ldb, k0, kvr, m->K, j0, jv, m->N, 0.0, threads);
  else  // [n][k]
    stage_mma(m, kl, bs, bl, t.bn, t.bk, ldb, j0, jv, m->N, k0, kvr, m->K, 0.0, threads);
  gpu_sync(g, kl, false);
  LStmtList *cl = gpu_loop(g, kl, kk, t.bk / 16, NULL, NULL);
  for (int a = 0; a < mt; a++)
    for (int b = 0; b < nt; b++) {
      LIndex ai = m->a_kfast ? (LIndex){.base = a * 16 * lda, .nterms = 2, .var = {wmv, kk}, .coef = {wtm * lda, 16}}
                             : (LIndex){.base = a * 16, .nterms = 2, .var = {kk, wmv}, .coef = {16 * lda, wtm}};
      LIndex bi = m->b_jfast ? (LIndex){.base = b * 8, .nterms = 2, .var = {kk, wnv}, .coef = {16 * ldb, wtn}}
                             : (LIndex){.base = b * 8 * ldb, .nterms = 2, .var = {wnv, kk}, .coef = {wtn * ldb, 16}};
      LExpr *fa = frag_of(g, m->a_kfast ? LG_FRAG_A_MK : LG_FRAG_A_KM, as, ht, ai, lda);
      LExpr *fb = frag_of(g, m->b_jfast ? LG_FRAG_B_KN : LG_FRAG_B_NK, bs, ht, bi, ldb);
      LExpr *e = lx_new(cx, LX_MMA, DT_F32);
      e->lanes = 4;
      e->a = fa, e->b = fb, e->c = lx_local_v(cx, DT_F32, 4, acc[a * nt + b]);
      gpu_push(g, cl, ls_set(cx, acc[a * nt + b], e));
    }
  gpu_sync(g, kl, false);
  // the sums: lane l holds rows l / 4 (+ 8), columns 2 (l % 4) (+ 1) of each mma tile
  int gq = gpu_new_var(g), qq = gpu_new_var(g);
  gpu_setvar(g, tl, gq, gpu_div(g, gpu_lane(g), 4));
  gpu_setvar(g, tl, qq, gpu_mod(g, gpu_lane(g), 4));
  int nl = g->k->locals.len;
  int *map = arena_alloc(&cx->arena, sizeof(int) * (size_t)(nl + 1));
  for (int i = 0; i < nl; i++)
    map[i] = -1;
  GpuSubst s = {.local = map};
  for (int a = 0; a < mt; a++)
    for (int b = 0; b < nt; b++)
      for (int e = 0; e < 4; e++) {
        LExpr *row = gpu_add(g, gpu_mul(g, v(g, wmv), wtm), gpu_add(g, v(g, gq), gpu_i64(g, a * 16 + (e >= 2 ? 8 : 0))));
        LExpr *col = gpu_add(g, gpu_mul(g, v(g, wnv), wtn), gpu_add(g, gpu_mul(g, v(g, qq), 2), gpu_i64(g, b * 8 + (e & 1))));
        LExpr *i = gpu_add(g, i0, row), *j = gpu_add(g, j0, col);
        LStmt *in = ls_if(cx, and2(g, lt(g, i, m->M), lt(g, j, m->N)));
        gpu_setvar(g, &in->body, iv, min_i(g, i, m->M - 1));
        gpu_setvar(g, &in->body, jv, min_i(g, j, m->N - 1));
        int sv = gpu_new_local(g, DT_F32);
        gpu_push(g, &in->body, ls_let(cx, sv, lx_lane(cx, lx_local_v(cx, DT_F32, 4, acc[a * nt + b]), e)));
        map[mm->acc] = sv;
        for (int q = mm->epi; q < mm->body->len; q++)
          gpu_push(g, &in->body, gpu_subst_stmt(g, mm->body->data[q], &s));
        gpu_push(g, tl, in);
      }
}

bool gpu_matmul(GpuBuild *g) {
  Mm m;
  if (!matmul_of(g, &m))
    return false;
  const LExpr *al = half_load(m.mm->a), *bl = half_load(m.mm->b);
  if (g->t->sm >= 80 && m.mm->dt == DT_F32 && al && bl && al->dt == bl->dt && m.M >= 16 && m.N >= 16 && m.K >= 16)
    build_mma(&m, al, bl);
  else
    build_simt(&m);
  return true;
}
