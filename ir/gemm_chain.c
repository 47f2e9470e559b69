// ir/gemm_chain.c: the CPU schedule of an MLP chain (ir/fuse.c's chain_of): one MATMUL
// kernel holding y = act(x @ w1.t() [+ b1]) @ w2.t() and y's epilogues, the hidden
// h = x @ w1.t() never whole. Rows (the outputs' leading dims, flattened; divided back
// into indices where more than one has rows) go by blocks of MB = 48, each thread its own
// blocks, through its scratch: XT (C x MB), a chunk of hT (HC = 256 hidden units x MB) and
// oT (O x MB), each MB columns as packed panels of the micro-kernel's B (NR columns a
// panel: 48 with AVX-512's 8 x 48 tile, 16 with Zen 3's 6 x 16):
//   for row blocks r0 [parallel], then the rows left (whole panels, then one panel of
//   whole vectors, zeros past the last row):
//     XT[k][r] = x[r0 + r, k] (an inline x computed here: a LayerNorm's)
//     for chunks h0 of HC hidden units (the last the H % HC left):
//       hT[j][..] = sum over k of w1[h0 + j, k] * XT[k][..]: ir/gemm.c's micro-kernel, w1's
//         rows read in place as its rows (MR a call, one call of H % MR rows)
//       hT[j][r] = act(h)[r0 + r, h0 + j] in place: h bound to the loaded sum (kb_local_at)
//       oT[c][..] (+)= sum over j of w2[c, h0 + j] * hT[j][..]: the micro-kernel, w2's rows
//         in place from column h0, the sums loaded past the first chunk
//     y[r0 + r, c] = oT[c][r], stored with the epilogues (kb_store_epilogues)
// A hidden element is a sum over k in the micro-kernel's order, as ir/gemm.c's tiles add
// it; an output's sum is split at the chunks (as ir/gemm.c's k blocks split it).
#include "ir/kernel.h"

#include <inttypes.h>

typedef struct Chain {
  KernelBuilder *kb;
  const Node *mm1, *mm2;
  NodeList epi;  // mm2, then its epilogues (kb_store_epilogues' list)
  DType cd;
  int nd;        // dims of the outputs; the first nd - 1 are the rows
  int64_t lead[TD_MAX_DIMS];
  int64_t R, C, H, O;  // rows, x's columns, the hidden's, y's
  int V, MR, NR, MB;
  int64_t HC;          // hidden units a chunk (the scratch holds one chunk's)
  int w1, w2;          // program buffers of the weights
  int64_t lda1, lda2;  // their rows (a hidden unit's, an output column's) apart
  int s;               // the scratch buffer
  int64_t xt, ht, ot;  // its parts
} Chain;

// The leading (row) indices of flat row q into o[0..nd - 1): q itself where one dim has
// more than one row, else by division (lets in `into`, a reader matching them by value).
static void row_index(Chain *X, LStmtList *into, LIndex q, LIndex *o) {
  KernelBuilder *kb = X->kb;
  int nl = X->nd - 1, big = 0;
  for (int d = 0; d < nl; d++)
    big += X->lead[d] > 1;
  if (big <= 1) {
    for (int d = 0; d < nl; d++)
      o[d] = X->lead[d] > 1 ? q : kb_ix_const(0);
    return;
  }
  LExpr *rest = kb_local_ref(kb, kb_let_local(kb, into, kb_ix_expr(kb, &q)));
  for (int d = nl - 1; d >= 0; d--) {
    if (X->lead[d] == 1) {
      o[d] = kb_ix_const(0);
      continue;
    }
    LExpr *c = kb_iconst(kb, DT_I64, X->lead[d]);
    LExpr *at = d ? kb_binary(kb, OP_REMAINDER, DT_I64, rest, c) : rest;
    o[d] = kb_dyn_index(kb_local_ref(kb, kb_let_local(kb, into, at)));
    if (d)
      rest = kb_local_ref(kb, kb_let_local(kb, into, kb_binary(kb, OP_FLOOR_DIVIDE, DT_I64, rest, c)));
  }
}

// Node n's value is local l at its row index o (leading dims matched by value: the chain
// reads it at its own index, ir/fuse.c's chain_of).
static void bind(Chain *X, const Node *n, int l, const LIndex *o) {
  kb_local_at(X->kb, n, l, o);
  for (int d = 0; d < X->nd - 1; d++)
    X->kb->lv[n->id].fixed[d] = false;
}

// The panels: element (k, column) of a part of K rows, W columns, at part + (column / nr) *
// K * nr + k * nr + column % nr (nr = min(W, NR), a divisor of W): each nr columns a packed
// panel of the micro-kernel's B. Column p * nr + rr.
static int panel_nr(const Chain *X, int W) { return W < X->NR ? W : X->NR; }

static LIndex at(const Chain *X, int W, int64_t part, int64_t K, LIndex k, LIndex p, LIndex rr) {
  int64_t nr = panel_nr(X, W);
  LIndex x = kb_ix_const(part);
  kb_ix_addmul(X->kb, &x, &p, K * nr);
  kb_ix_addmul(X->kb, &x, &k, nr);
  kb_ix_addmul(X->kb, &x, &rr, 1);
  return x;
}

// Loops over the block's rows: panels p, columns rr (mb == W, whole panels; or one panel
// of mb <= W columns); *r: the row in the block.
static LStmtList *row_loops(Chain *X, LStmtList *into, int64_t mb, int W, LIndex *p, LIndex *rr, LIndex *r) {
  KernelBuilder *kb = X->kb;
  int nr = panel_nr(X, W);
  into = kb_step_loop(kb, into, W / nr, kb_ix_const(0), 1, false, p);
  into = kb_step_loop(kb, into, mb == W ? nr : mb, kb_ix_const(0), 1, false, rr);
  *r = kb_ix_sum(kb, *rr, p, nr);
  return into;
}

// out[rows 0..n of A] (part `to`, n rows) (+)= A's rows (w's columns k0.. of its rows a0..,
// in place) x the panels at `from` (kc rows); load: non-zero adds to the tile.
static void product(Chain *X, LStmtList *into, const Value *w, int wbuf, int64_t lda, LIndex k0, LIndex a0, int64_t n,
                    int64_t kc, int64_t from, int64_t to, int W, LExpr *load) {
  KernelBuilder *kb = X->kb;
  int wa = kb_arg(kb, wbuf, true, false), sa = kb_arg(kb, X->s, true, true), nr = panel_nr(X, W);
  for (int pass = 0; pass < 2; pass++) {
    int64_t rows = pass ? n % X->MR : X->MR, cnt = pass ? (rows ? 1 : 0) : n / X->MR;
    if (!cnt)
      continue;
    int64_t first = pass ? n / X->MR * X->MR : 0;
    LIndex h0;
    LStmtList *in = kb_step_loop(kb, into, cnt, kb_ix_const(first), X->MR, false, &h0);
    GemmMicro m = {X->cd, (int)rows, nr, X->V, GA_ROWS, false, false, 0, nr >= X->V ? GEMM_MICRO_UNROLL : 0};
    LIndex wi[2] = {k0, kb_ix_sum(kb, a0, &h0, 1)};
    LIndex a = kb_view_index(kb, &w->view, wi);
    for (int q = 0; q < W / nr; q++)
      gemm_micro_call(kb, in, &m, wa, a, lda, sa, kb_ix_const(from + q * kc * nr), 0, sa,
                      kb_ix_sum(kb, kb_ix_const(to + q * n * nr), &h0, nr), kc, nr, load);
  }
}

// Hidden units h0 + 0..hc of the block: their sums, their activation in place, their terms
// of the output added (load: non-zero past the first chunk).
static void chunk(Chain *X, LStmtList *into, LIndex r0, int64_t mb, int W, LIndex h0, int64_t hc, LExpr *load) {
  KernelBuilder *kb = X->kb;
  int nd = X->nd, sa = kb_arg(kb, X->s, true, true), nr = panel_nr(X, W);
  LIndex p, r, rr, jj, o[TD_MAX_DIMS], kv[TD_MAX_DIMS], ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  product(X, into, X->mm1->srcs[1], X->w1, X->lda1, kb_ix_const(0), h0, hc, X->C, X->xt, X->ht, W,
          kb_iconst(kb, DT_I64, 0));
  if (X->mm2->srcs[0]->buf->producer != X->mm1) {  // the activation, in place
    LStmtList *in = kb_step_loop(kb, into, W / nr, kb_ix_const(0), 1, false, &p);
    in = kb_step_loop(kb, in, hc, kb_ix_const(0), 1, false, &jj);
    in = kb_step_loop(kb, in, mb == W ? nr : mb, kb_ix_const(0), 1, false, &rr);
    r = kb_ix_sum(kb, rr, &p, nr);
    row_index(X, in, kb_ix_sum(kb, r0, &r, 1), o);
    LIndex x = at(X, W, X->ht, hc, jj, p, rr), j = kb_ix_sum(kb, h0, &jj, 1);
    int l = kb_let_local(kb, in, lx_load(kb->cx, X->cd, sa, x));
    o[nd - 1] = j;
    bind(X, X->mm1, l, o);
    o[nd - 1] = kb_ix_const(0);
    kv[0] = j;
    kb_matmul_indices(X->mm2, o, kv, ai, bi);
    LExpr *hv = kb_cast(kb, kb_value(kb, X->mm2->srcs[0], ai), X->cd);
    kb_push(kb, in, kb_store_stmt(kb, sa, x, hv));
    kb->lv[X->mm1->id].kind = LV_NONE;
  }
  product(X, into, X->mm2->srcs[1], X->w2, X->lda2, h0, kb_ix_const(0), X->O, hc, X->ht, X->ot, W, load);
}

// One block of mb rows from r0, W columns wide: whole panels (mb == W), or one panel of mb
// rows in whole vectors (W <= NR), zeros past mb.
static void block(Chain *X, LStmtList *into, LIndex r0, int64_t mb, int W) {
  KernelBuilder *kb = X->kb;
  int nd = X->nd, sa = kb_arg(kb, X->s, true, true);
  LIndex p, rr, r, k, c, o[TD_MAX_DIMS], kv[TD_MAX_DIMS], ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  // XT: x's rows, transposed (and computed, an inline x)
  LStmtList *in = row_loops(X, into, mb, W, &p, &rr, &r);
  row_index(X, in, kb_ix_sum(kb, r0, &r, 1), o);
  in = kb_step_loop(kb, in, X->C, kb_ix_const(0), 1, false, &k);
  o[nd - 1] = kb_ix_const(0);
  kv[0] = k;
  kb_matmul_indices(X->mm1, o, kv, ai, bi);
  LExpr *xv = kb_cast(kb, kb_value(kb, X->mm1->srcs[0], ai), X->cd);
  kb_push(kb, in, kb_store_stmt(kb, sa, at(X, W, X->xt, X->C, k, p, rr), xv));
  if (mb < W) {  // the columns past the last row: zeros (their sums are never stored)
    in = kb_step_loop(kb, into, X->C, kb_ix_const(0), 1, false, &k);
    in = kb_step_loop(kb, in, W - mb, kb_ix_const(mb), 1, false, &rr);
    kb_push(kb, in, kb_store_stmt(kb, sa, at(X, W, X->xt, X->C, k, kb_ix_const(0), rr), kb_fconst(kb, X->cd, 0)));
  }
  // the hidden by chunks of HC units, each added to the output's sums
  int64_t nch = X->H / X->HC, rest = X->H % X->HC;
  if (nch) {
    LIndex h0;
    LStmtList *cl = kb_step_loop(kb, into, nch, kb_ix_const(0), X->HC, false, &h0);
    chunk(X, cl, r0, mb, W, h0, X->HC, kb_ix_expr(kb, &h0));
  }
  if (rest)
    chunk(X, into, r0, mb, W, kb_ix_const(nch * X->HC), rest, kb_iconst(kb, DT_I64, nch));
  // the output
  in = row_loops(X, into, mb, W, &p, &rr, &r);
  row_index(X, in, kb_ix_sum(kb, r0, &r, 1), o);
  in = kb_step_loop(kb, in, X->O, kb_ix_const(0), 1, false, &c);
  int l = kb_let_local(kb, in, lx_load(kb->cx, X->cd, sa, at(X, W, X->ot, X->O, c, p, rr)));
  o[nd - 1] = c;
  bind(X, X->mm2, l, o);
  if (X->mm2->mode == NM_STORED)
    kb_store_node(kb, in, X->mm2, o, kb_local_ref(kb, l));
  kb_store_epilogues(kb, in, &X->epi, o);
  kb->lv[X->mm2->id].kind = LV_NONE;
}

static bool weights(Chain *X, const Value *w, int *buf, int64_t *lda) {
  if (w->is_scalar || !w->buf || w->buf->kind == BUF_CONST || w->view.ndim != 2 || w->view.strides[0] != 1)
    return false;
  if (w->buf->kind == BUF_KERNEL && w->buf->producer->mode != NM_STORED)
    return false;
  *buf = X->kb->buf_of[w->buf->id];
  *lda = w->view.strides[1];
  return *buf >= 0;
}

bool gemm_chain_build(KernelBuilder *kb, const NodeList *ns) {
  Chain X = {.kb = kb, .mm1 = ns->data[0], .mm2 = ns->data[1], .cd = DT_F32};
  const View *o1 = &X.mm1->out->view, *o2 = &X.mm2->out->view;
  X.nd = o2->ndim;
  X.R = 1;
  for (int d = 0; d + 1 < X.nd; d++)
    X.R *= X.lead[d] = o2->shape[d];
  X.H = o1->shape[X.nd - 1];
  X.O = o2->shape[X.nd - 1];
  X.C = X.mm1->srcs[1]->view.shape[0];
  if (!kb->cpu || kb->naive || X.R == 0 || X.C == 0 || X.H == 0 || X.O == 0 ||
      !weights(&X, X.mm1->srcs[1], &X.w1, &X.lda1) || !weights(&X, X.mm2->srcs[1], &X.w2, &X.lda2))
    return false;
  X.V = kb->cpu->vec_bytes / 4;
  X.V = X.V < 4 ? 4 : X.V;
  bool wide = kb->cpu->nregs >= 32;  // (ir/gemm.c's tiles: 8 x 3 vectors with 32 registers, else 6 x 2)
  X.MR = wide ? 8 : 6;
  X.NR = (wide ? 3 : 2) * X.V;
  X.MB = (GEMM_CHAIN_ROWS + X.NR - 1) / X.NR * X.NR;
  vec_push(&kb->cx->arena, &X.epi, X.mm2);
  for (int i = 2; i < ns->len; i++)
    vec_push(&kb->cx->arena, &X.epi, ns->data[i]);
  X.xt = 0;
  X.HC = X.H < GEMM_CHAIN_HIDDEN ? X.H : GEMM_CHAIN_HIDDEN / X.MR * X.MR;
  X.ht = X.C * X.MB;
  X.ot = X.ht + X.HC * X.MB;
  X.s = kb_new_temp(kb, X.cd, X.ot + X.O * X.MB, "chain");
  kb->p->bufs.data[X.s].scratch = true;
  int64_t nb = X.R / X.MB, tail = X.R % X.MB;
  if (nb) {
    LIndex r0;
    block(&X, kb_step_loop(kb, &kb->k->body, nb, kb_ix_const(0), X.MB, nb >= 2, &r0), r0, X.MB, X.MB);
  }
  int64_t whole = tail / X.NR * X.NR, last = tail - whole;  // the rest: whole panels, then one in vectors
  if (whole)
    block(&X, &kb->k->body, kb_ix_const(nb * X.MB), whole, (int)whole);
  if (last)
    block(&X, &kb->k->body, kb_ix_const(nb * X.MB + whole), last, (int)((last + X.V - 1) / X.V * X.V));
  kb->k->sched = arena_printf(&kb->cx->arena,
                              "gemm chain: blocks of %d rows, hidden by %" PRId64 " x %d in scratch, %dx%d tiles",
                              X.MB, X.HC, X.MB, X.MR, X.NR);
  return true;
}
