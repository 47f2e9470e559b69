// ir/attn_gpu.c: scaled_dot_product_attention on the GPU. Two halves, at two times:
//   attn_gpu_facts  (kernel build, ir/kernel.h) records what the flash kernel needs of
//                   the node in LKernel.attn: q, k, v and the mask as expressions of
//                   vars of their own, the output's store (ir/attn.c builds the row form,
//                   the kernel's body, as ever);
//   gpu_attn        (GPU schedule, ir/gpu.h) builds the flash kernel from them.
// The flash kernel: a block of 8 warps holds 16 query rows of one batch element (2 a
// warp), their q staged in shared memory once; the keys stream through shared memory
// 32 at a time (k and v), and for each block of keys each warp, per row, has lane l
// score key l (a dot over the features, k's row padded by a word so the lanes' reads
// miss each other's banks), takes the block's max and sum of exp by butterflies of
// shuffles (ir/attn.c's online softmax: the running max m, the factor c = exp(m - m'),
// the running sum l), and adds the block's weighted values to its features lane,
// lane + 32, ..., each key's weight broadcast by a shuffle, in key order. A causal
// tile skips the key blocks past its last row. The result is the sums over l, stored
// as the row form stores it. Taken when S > 0 and the block's shared memory fits in 48
// KB (features up to 128 in f32); else the rows of ir/attn.c run as rows (ir/gpu_row.c).
//
// Invariants: every row's arithmetic is the row form's, key block by key block (the
// same blocks of 32), but the block's max and sum, whose order is the butterfly's.
#include "ir/gpu.h"
#include "ir/kernel.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

enum { KEYS = 32, WARPS = 8, ROWS = 2, QROWS = WARPS * ROWS, SHARED_MAX = 48 * 1024 };

// ============================================================================
// The facts (kernel build)
// ============================================================================
void attn_gpu_facts(KernelBuilder *kb, const Node *n) {
  LAttn *a = arena_alloc(&kb->cx->arena, sizeof *a);
  const Value *q = n->srcs[0], *k = n->srcs[1], *v = n->srcs[2], *mask = attn_mask(n);
  const View *ov = &n->out->view;
  int nd = ov->ndim, id = nd - 2, ed = nd - 1;
  a->nb = id;
  a->L = ov->shape[id], a->S = k->view.shape[id], a->E = q->view.shape[ed], a->Ev = ov->shape[ed];
  a->cd = dtype_compute(n->out->dtype);
  a->causal = n->attr.causal;
  a->scale = n->attr.scale;
  LIndex qi[TD_MAX_DIMS], ki[TD_MAX_DIMS], vi[TD_MAX_DIMS], mi[TD_MAX_DIMS], oi[TD_MAX_DIMS];
  for (int d = 0; d < id; d++) {
    a->bvar[d] = kb_new_var(kb);
    a->bext[d] = ov->shape[d];
    qi[d] = ki[d] = vi[d] = mi[d] = oi[d] = kb_ix_var(a->bvar[d]);
  }
  a->ivar = kb_new_var(kb), a->jvar = kb_new_var(kb), a->evar = kb_new_var(kb), a->wvar = kb_new_var(kb);
  qi[id] = mi[id] = oi[id] = kb_ix_var(a->ivar);
  ki[id] = vi[id] = mi[ed] = kb_ix_var(a->jvar);
  qi[ed] = ki[ed] = kb_ix_var(a->evar);
  vi[ed] = oi[ed] = kb_ix_var(a->wvar);
  a->q = attn_operand(kb, n, 0, qi, a->cd);
  a->k = attn_operand(kb, n, 1, ki, a->cd);
  a->v = kb_cast(kb, kb_value(kb, v, vi), a->cd);
  if (mask)
    a->mask = mask->dtype == DT_BOOL ? kb_value(kb, mask, mi) : kb_cast(kb, kb_value(kb, mask, mi), a->cd);
  a->out_local = kb_new_local(kb, a->cd);
  LStmtList one = {0};
  kb_store_node(kb, &one, n, oi, kb_local_ref(kb, a->out_local));
  TD_ASSERT(one.len == 1);
  a->store = one.data[0];
  kb->k->attn = a;
}

// ============================================================================
// The flash kernel (GPU schedule)
// ============================================================================
typedef struct Flash {
  GpuBuild *g;
  const LAttn *a;
  int qs, ks, vs;   // shared: q of the tile's rows, a block's k (rows padded a word) and v
  int64_t ldk;      // E + 1
  int nt;           // the features a lane sums: lane, lane + 32, ... below Ev
} Flash;

static LExpr *var(GpuBuild *g, int v) { return lx_var(g->cx, v); }
static LExpr *clamp(GpuBuild *g, LExpr *x, int64_t n) { return lx_binary(g->cx, OP_MINIMUM, DT_I64, x, gpu_i64(g, n - 1)); }
static LExpr *below(GpuBuild *g, LExpr *x, int64_t n) { return lx_binary(g->cx, OP_LT, DT_BOOL, x, gpu_i64(g, n)); }
static LExpr *fc(GpuBuild *g, DType dt, double v) { return lx_const_f(g->cx, dt, v); }
static LExpr *loc(GpuBuild *g, int l) { return lx_local(g->cx, g->k->locals.data[l], l); }

// sh[r * ld + c] = x for the rows x c elements of a slab, 256 threads at a time: element
// e = tid + 256 s (inside the slab) at r = e / cols, c = e % cols, with rvar bound to
// r0 + r and cvar to c, clamped (and x replaced by zero where r0 + r >= rmax when zero).
static void stage(Flash *F, LStmtList *out, int sh, int64_t ld, const LExpr *x, int64_t rows, int64_t cols,
                  LExpr *r0, int rvar, int64_t rmax, int cvar, bool zero) {
  GpuBuild *g = F->g;
  Ctx *cx = g->cx;
  int64_t n = rows * cols, per = (n + 255) / 256;
  int s = gpu_new_var(g), rv = gpu_new_var(g), cv = gpu_new_var(g);
  LStmtList *l = gpu_loop(g, out, s, per, NULL, NULL);
  LExpr *e = gpu_add(g, gpu_tid(g), gpu_mul(g, var(g, s), 256));
  LStmt *in = ls_if(cx, below(g, e, n));
  gpu_push(g, l, in);
  l = &in->body;
  gpu_setvar(g, l, rv, gpu_div(g, clamp(g, e, n), cols));
  gpu_setvar(g, l, cv, gpu_mod(g, clamp(g, e, n), cols));
  LExpr *r = gpu_add(g, r0, var(g, rv));
  gpu_setvar(g, l, rvar, clamp(g, r, rmax));
  gpu_setvar(g, l, cvar, var(g, cv));
  LExpr *val = (LExpr *)x;
  if (zero)
    val = lx_select(cx, below(g, r, rmax), val, fc(g, x->dt, 0));
  gpu_push(g, l, ls_store(cx, sh, (LIndex){.nterms = 2, .var = {rv, cv}, .coef = {ld, 1}}, val));
}

// The warp's max (op maximum) or sum (op add) of x over its lanes, in every lane: x set.
static void butterfly(GpuBuild *g, LStmtList *out, int x, Op op) {
  Ctx *cx = g->cx;
  DType dt = g->k->locals.data[x];
  int t = gpu_new_local(g, dt);
  for (int o = GPU_WARP / 2; o > 0; o /= 2) {
    LExpr *sh = lx_new(cx, LX_SHFL, dt);
    sh->a = loc(g, x), sh->b = gpu_i64(g, o), sh->i = LG_SHFL_XOR;
    gpu_push(g, out, o == GPU_WARP / 2 ? ls_let(cx, t, sh) : ls_set(cx, t, sh));
    gpu_push(g, out, ls_set(cx, x, lx_binary(cx, op, dt, loc(g, x), loc(g, t))));
  }
}

// One warp row's step over the staged block of keys from j0 (ir/attn.c's key_block):
// the row is query i, staged in qs at row qr (a var).
static void row_step(Flash *F, LStmtList *out, int qr, LExpr *i, LExpr *j0, int m, int l, const int *acc) {
  GpuBuild *g = F->g;
  Ctx *cx = g->cx;
  const LAttn *a = F->a;
  DType cd = a->cd;
  LExpr *j = gpu_add(g, j0, gpu_lane(g));
  gpu_setvar(g, out, a->ivar, clamp(g, i, a->L));
  gpu_setvar(g, out, a->jvar, clamp(g, j, a->S));
  // lane l's score: dot(q[i], k[j0 + l]) * scale (+ mask), -inf where hidden or past S
  int dot = gpu_new_local(g, cd), f = gpu_new_var(g);
  gpu_push(g, out, ls_let(cx, dot, fc(g, cd, 0)));
  LStmtList *dl = gpu_loop(g, out, f, a->E, NULL, NULL);
  LExpr *qv = lx_load(cx, cd, F->qs, (LIndex){.nterms = 2, .var = {qr, f}, .coef = {a->E, 1}});
  LExpr *kv = lx_load(cx, cd, F->ks, (LIndex){.nterms = 2, .var = {g->gs->lane, f}, .coef = {F->ldk, 1}});
  gpu_push(g, dl, ls_set(cx, dot, lx_binary(cx, OP_ADD, cd, loc(g, dot), lx_binary(cx, OP_MUL, cd, qv, kv))));
  LExpr *x = lx_binary(cx, OP_MUL, cd, loc(g, dot), fc(g, cd, a->scale));
  if (a->mask && a->mask->dt != DT_BOOL)
    x = lx_binary(cx, OP_ADD, cd, x, a->mask);
  LExpr *seen = below(g, j, a->S);
  if (a->mask && a->mask->dt == DT_BOOL)
    seen = lx_binary(cx, OP_LOGICAL_AND, DT_BOOL, seen, a->mask);
  else if (a->causal)
    seen = lx_binary(cx, OP_LOGICAL_AND, DT_BOOL, seen, lx_binary(cx, OP_LE, DT_BOOL, j, i));
  int xs = gpu_new_local(g, cd);
  gpu_push(g, out, ls_let(cx, xs, lx_select(cx, seen, x, fc(g, cd, -INFINITY))));
  // the block's max, the new running max mn, the factor c of the old terms
  int bm = gpu_new_local(g, cd);
  gpu_push(g, out, ls_let(cx, bm, loc(g, xs)));
  butterfly(g, out, bm, OP_MAXIMUM);
  int mn = gpu_new_local(g, cd), c = gpu_new_local(g, cd);
  gpu_push(g, out, ls_let(cx, mn, lx_binary(cx, OP_MAXIMUM, cd, loc(g, m), loc(g, bm))));
  LExpr *same = lx_binary(cx, OP_EQ, DT_BOOL, loc(g, m), loc(g, mn));
  gpu_push(g, out, ls_let(cx, c, lx_select(cx, same, fc(g, cd, 1),
                                           lx_unary(cx, OP_EXP, cd, lx_binary(cx, OP_SUB, cd, loc(g, m), loc(g, mn))))));
  // p = exp(x - mn) (0 for a hidden key), summed
  int p = gpu_new_local(g, cd), bs = gpu_new_local(g, cd);
  LExpr *hidden = lx_binary(cx, OP_EQ, DT_BOOL, loc(g, xs), fc(g, cd, -INFINITY));
  gpu_push(g, out, ls_let(cx, p, lx_select(cx, hidden, fc(g, cd, 0),
                                           lx_unary(cx, OP_EXP, cd, lx_binary(cx, OP_SUB, cd, loc(g, xs), loc(g, mn))))));
  gpu_push(g, out, ls_let(cx, bs, loc(g, p)));
  butterfly(g, out, bs, OP_ADD);
  gpu_push(g, out, ls_set(cx, l, lx_binary(cx, OP_ADD, cd, lx_binary(cx, OP_MUL, cd, loc(g, l), loc(g, c)), loc(g, bs))));
  // acc = acc * c + sum over the block's keys, in order, of p * v
  for (int t = 0; t < F->nt; t++)
    gpu_push(g, out, ls_set(cx, acc[t], lx_binary(cx, OP_MUL, cd, loc(g, acc[t]), loc(g, c))));
  int jj = gpu_new_var(g), pj = gpu_new_local(g, cd);
  LStmtList *kl = gpu_loop(g, out, jj, KEYS, NULL, NULL);
  LExpr *sh = lx_new(cx, LX_SHFL, cd);
  sh->a = loc(g, p), sh->b = var(g, jj), sh->i = LG_SHFL_IDX;
  gpu_push(g, kl, ls_let(cx, pj, sh));
  for (int t = 0; t < F->nt; t++) {
    int w = gpu_new_var(g);
    gpu_setvar(g, kl, w, clamp(g, gpu_add(g, gpu_lane(g), gpu_i64(g, 32 * t)), a->Ev));
    LExpr *vv = lx_load(cx, cd, F->vs, (LIndex){.nterms = 2, .var = {jj, w}, .coef = {a->Ev, 1}});
    gpu_push(g, kl, ls_set(cx, acc[t], lx_binary(cx, OP_ADD, cd, loc(g, acc[t]), lx_binary(cx, OP_MUL, cd, loc(g, pj), vv))));
  }
  gpu_push(g, out, ls_set(cx, m, loc(g, mn)));
}

// A load (or store) of the facts as share_kernels moved the body's: each index counting
// from its argument's start (LArg.at).
static LExpr *moved_load(GpuSubst *s, const LExpr *e) {
  GpuBuild *g = s->ctx;
  LExpr *r = lx_new(g->cx, LX_LOAD, e->dt);
  *r = *e;
  r->idx.base -= g->k->args.data[e->buf].at;
  r->idx.dyn = gpu_subst_expr(g, e->idx.dyn, s);
  return r;
}

// The facts, their indices moved as the body's were (ir/share.c).
static LAttn *moved(GpuBuild *g, const LAttn *a) {
  LAttn *m = arena_alloc(&g->cx->arena, sizeof *m);
  *m = *a;
  GpuSubst s = {.load = moved_load, .ctx = g};
  m->q = gpu_subst_expr(g, a->q, &s);
  m->k = gpu_subst_expr(g, a->k, &s);
  m->v = gpu_subst_expr(g, a->v, &s);
  m->mask = gpu_subst_expr(g, a->mask, &s);
  m->store = gpu_subst_stmt(g, a->store, &s);
  m->store->idx.base -= g->k->args.data[a->store->buf].at;
  return m;
}

bool gpu_attn(GpuBuild *g) {
  if (g->k->kind != KK_ATTN || !g->k->attn)
    return false;
  const LAttn *a = moved(g, g->k->attn);
  if (a->S <= 0 || a->L <= 0 || a->E <= 0 || a->Ev <= 0)
    return false;
  Ctx *cx = g->cx;
  DType cd = a->cd;
  Flash F = {.g = g, .a = a, .ldk = a->E + 1, .nt = (int)((a->Ev + 31) / 32)};
  int64_t bytes = (int64_t)dtype_size(cd) * (QROWS * a->E + KEYS * F.ldk + KEYS * a->Ev);
  if (bytes > SHARED_MAX || F.nt > 8)
    return false;
  LGpuSched *gs = g->gs;
  int64_t nbt = 1;
  for (int d = 0; d < a->nb; d++)
    nbt *= a->bext[d];
  int64_t nqt = (a->L + QROWS - 1) / QROWS, ntiles = nbt * nqt, nkb = (a->S + KEYS - 1) / KEYS;
  gs->block = WARPS * GPU_WARP;
  gs->grid = ntiles < g->t->max_grid ? ntiles : g->t->max_grid;
  gs->name = arena_printf(&cx->arena, "flash attention, %d query rows a block, keys %d at a time", QROWS, KEYS);
  F.qs = gpu_shared(g, cd, QROWS * a->E, "attention queries");
  F.ks = gpu_shared(g, cd, KEYS * F.ldk, "attention keys");
  F.vs = gpu_shared(g, cd, KEYS * a->Ev, "attention values");
  // the tiles over the blocks: the batch element and the first query row
  int tv = gpu_new_var(g), tq = gpu_new_var(g);
  LStmtList *tl = gpu_loop(g, &g->out, tv, ntiles, gpu_ctaid(g), gpu_i64(g, gs->grid));
  gpu_setvar(g, tl, tq, gpu_mod(g, var(g, tv), nqt));
  LStmt *bl[TD_MAX_DIMS];
  for (int d = 0; d < a->nb; d++)  // gpu_decompose takes loops: these say the dims' extents
    bl[d] = ls_loop(cx, a->bvar[d], a->bext[d]);
  gpu_decompose(g, tl, (const LStmt *const *)bl, a->nb, gpu_div(g, var(g, tv), nqt), NULL);
  LExpr *i0 = gpu_mul(g, var(g, tq), QROWS);
  stage(&F, tl, F.qs, a->E, a->q, QROWS, a->E, i0, a->ivar, a->L, a->evar, false);
  // each warp's rows: their running max, sum and sums
  int m[ROWS], l[ROWS], acc[ROWS][8];
  for (int r = 0; r < ROWS; r++) {
    m[r] = gpu_new_local(g, cd), l[r] = gpu_new_local(g, cd);
    gpu_push(g, tl, ls_let(cx, m[r], fc(g, cd, -INFINITY)));
    gpu_push(g, tl, ls_let(cx, l[r], fc(g, cd, 0)));
    for (int t = 0; t < F.nt; t++) {
      acc[r][t] = gpu_new_local(g, cd);
      gpu_push(g, tl, ls_let(cx, acc[r][t], fc(g, cd, 0)));
    }
  }
  // the keys, a block at a time (a causal tile stops at its last row)
  int kv = gpu_new_var(g);
  LStmtList *kl = gpu_loop(g, tl, kv, nkb, NULL, NULL);
  LExpr *j0 = gpu_mul(g, var(g, kv), KEYS);
  if (a->causal && !a->mask) {
    LStmt *live = ls_if(cx, lx_binary(cx, OP_LE, DT_BOOL, j0, gpu_add(g, i0, gpu_i64(g, QROWS - 1))));
    gpu_push(g, kl, live);
    kl = &live->body;
  }
  stage(&F, kl, F.ks, F.ldk, a->k, KEYS, a->E, j0, a->jvar, a->S, a->evar, true);
  stage(&F, kl, F.vs, a->Ev, a->v, KEYS, a->Ev, j0, a->jvar, a->S, a->wvar, true);
  gpu_sync(g, kl, false);
  for (int r = 0; r < ROWS; r++) {
    LExpr *qrow = gpu_add(g, gpu_mul(g, gpu_warp(g), ROWS), gpu_i64(g, r));
    LExpr *i = gpu_add(g, i0, qrow);
    LStmt *in = ls_if(cx, below(g, i, a->L));  // the same in every lane of the warp
    gpu_push(g, kl, in);
    int qr = gpu_new_var(g);
    gpu_setvar(g, &in->body, qr, qrow);
    row_step(&F, &in->body, qr, i, j0, m[r], l[r], acc[r]);
  }
  gpu_sync(g, kl, false);
  // the rows' results: the sums over the sum of weights
  for (int r = 0; r < ROWS; r++) {
    LExpr *i = gpu_add(g, i0, gpu_add(g, gpu_mul(g, gpu_warp(g), ROWS), gpu_i64(g, r)));
    LStmt *in = ls_if(cx, below(g, i, a->L));
    gpu_push(g, tl, in);
    gpu_setvar(g, &in->body, a->ivar, clamp(g, i, a->L));
    for (int t = 0; t < F.nt; t++) {
      LExpr *w = gpu_add(g, gpu_lane(g), gpu_i64(g, 32 * t));
      LStmt *fe = ls_if(cx, below(g, w, a->Ev));
      gpu_push(g, &in->body, fe);
      gpu_setvar(g, &fe->body, a->wvar, clamp(g, w, a->Ev));
      gpu_push(g, &fe->body, ls_let(cx, a->out_local, lx_binary(cx, OP_DIV, cd, loc(g, acc[r][t]), loc(g, l[r]))));
      gpu_push(g, &fe->body, a->store);
    }
  }
  // a batch dim the operands do not move along (of size 1, or broadcast) binds a var
  // nothing reads: dropped (nvcc rejects an unused variable)
  for (int i = 0; i < tl->len; i++) {
    LStmtList rest = {tl->data + i + 1, tl->len - i - 1, tl->len - i - 1};
    bool batch = false;
    for (int d = 0; d < a->nb; d++)
      batch |= tl->data[i]->kind == LS_VAR && tl->data[i]->var == a->bvar[d];
    if (batch && !gpu_reads_var(&rest, tl->data[i]->var)) {
      memmove(tl->data + i, tl->data + i + 1, sizeof *tl->data * (size_t)(tl->len - i - 1));
      tl->len--, i--;
    }
  }
  return true;
}
