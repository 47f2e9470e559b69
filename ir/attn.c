// ir/attn.c: the kernel builder's ATTN kernels (ir/kernel.h): one
// scaled_dot_product_attention, out = softmax(q @ k^T * scale + bias) @ v, as one loop
// nest that never stores the [L, S] scores. Its sources (the front end expands them to
// the result's batch dims): query [..., L, E], key [..., S, E], value [..., S, Ev] and,
// optionally, attn_mask [..., L, S] (bool: false hides the key; any other dtype: added
// to the score). With attr.causal, query row i sees keys 0..i (PyTorch's
// tril(ones(L, S)), the top-left corner).
//
// For each query row (the loops over the batch dims and L, independent: the CPU runs
// them in parallel, a GPU a block per row), the keys are taken in blocks of KEY_BLOCK
// (the last one shorter) and the softmax is computed online (a flash-attention row):
// with the running max m, the running sum l of exp(score - m) and the running sums
// acc[e] of exp(score - m) * v[j, e], a block of keys j does
//   x[j] = dot(q[i, :], k[j, :]) * scale (+ mask[i, j]; -inf for a hidden key)
//   m' = maximum(m, max_j x[j]);  c = m == m' ? 1 : exp(m - m')  (0 below EXP_FLOOR)
//   p[j] = x[j] == -inf ? 0 : exp(x[j] - m') (0 below EXP_FLOOR);  l = l * c + sum_j p[j]
//   acc[e] = acc[e] * c + sum_j p[j] * v[j, e];  m = m'
// and at the end out[i, e] = acc[e] / l. x and then p live in a small buffer, sc, of
// KEY_BLOCK elements per row (the rows' scores are never all stored); a causal row
// skips the blocks that start past its diagonal. Everything is computed in the dtype
// arithmetic on the inputs is done in (f32 for f16/bf16: the result rounded once, when
// stored). acc is the result's own buffer when it has that dtype, else an LB_TEMP of
// the result's shape, so each row's sums are its own elements.
//
// With attr.rope, q and k (bit 0, bit 1) are rotated as they are read, from their cos and
// sin tables (sources after the mask), so that no rotated q or k is stored (ir/attn_fuse.c
// finds the rotation written out). Each pair (a, b) of elements becomes (a * cos - b *
// sin, b * cos' + a * sin'): in rotate_half's form the pairs are (e, e + E/2), the tables
// laid out as the operand (cos at e, cos' at e + E/2); in the complex form (bit 2 for q,
// bit 3 for k: view_as_complex(x) * freqs, view_as_real) they are (2c, 2c + 1), the
// tables [.., E/2] (cos = cos' = the real part at c, sin = sin' the imaginary one).
//
// exp(d) of an argument d below EXP_FLOOR (f32 -87, f64 -708: e^d under ~1.4x the dtype's
// smallest normal, 1.65e-38 and 3.3e-308) is taken as 0 (attn_weight), and exp's
// argument clamped there, so that no p, c or product with them is subnormal: with
// random inputs (bench's weights: scores hundreds apart) most p underflow, and this
// Intel host's arithmetic on subnormal results takes microcode assists (~10x the time
// of a multiply, a vector's worth each). The error: every dropped p is < e^EXP_FLOOR
// while the block's or row's max contributes 1 to l, so l moves by under S e^EXP_FLOOR
// relatively (below half an ulp while S < 2^100 for f32) and out by under
// S e^EXP_FLOOR max|v| absolutely; PyTorch's softmax rounds those p to subnormals
// whose products with v it then adds, no closer than that.
//
// What PyTorch's math gives at the edges, kept: a row whose keys are all hidden (or all
// -inf) has l = 0 and acc = 0, so 0 / 0 = NaN (softmax of a row of -inf); NaN or +inf
// scores make the row NaN (maximum propagates NaN, exp(inf - inf)); no keys at all
// (S == 0) give 0 (an empty softmax times an empty value matrix).
#include "ir/kernel.h"

#include <math.h>
#include <string.h>

// ---- the operands ----

// The sources' first rope table.
static int tables_at(const Node *n) { return n->nsrc - 2 * ((n->attr.rope & 1) + (n->attr.rope >> 1 & 1)); }

const Value *attn_mask(const Node *n) { return tables_at(n) == 4 ? n->srcs[3] : NULL; }

// The cos (which 0) or sin (1) table of rotated operand s (0: q, 1: k).
static const Value *table(const Node *n, int s, int which) {
  return n->srcs[tables_at(n) + (s == 1 && (n->attr.rope & 1) ? 2 : 0) + which];
}

static LExpr *elem(KernelBuilder *kb, const Value *src, const LIndex *idx, DType cd) {
  return kb_cast(kb, kb_value(kb, src, idx), cd);
}

static bool pairs(const Node *n, int s) { return n->attr.rope >> (s + 2) & 1; }

static LExpr *ic(KernelBuilder *kb, int64_t v) { return kb_iconst(kb, DT_I64, v); }

// EXP_FLOOR of dtype cd (see the top)
static double exp_floor(DType cd) { return cd == DT_F64 ? -708.0 : -87.0; }

LExpr *attn_weight(KernelBuilder *kb, LStmtList *into, DType cd, LExpr *d, LExpr *zero) {
  LExpr *floor = kb_fconst(kb, cd, exp_floor(cd));
  int x = kb_let_local(kb, into, d);
  LExpr *low = kb_binary(kb, OP_LT, DT_BOOL, kb_local_ref(kb, x), floor);
  if (zero)
    low = kb_binary(kb, OP_LOGICAL_OR, DT_BOOL, zero, low);
  LExpr *e = kb_unary(kb, OP_EXP, cd, kb_binary(kb, OP_MAXIMUM, cd, kb_local_ref(kb, x), floor));
  return kb_select(kb, low, kb_fconst(kb, cd, 0), e);
}

LExpr *attn_operand(KernelBuilder *kb, const Node *n, int s, const LIndex *idx, DType cd) {
  const Value *x = n->srcs[s];
  LExpr *v = elem(kb, x, idx, cd);
  if (s > 1 || !(n->attr.rope >> s & 1))
    return v;
  int ed = x->view.ndim - 1;
  int64_t H = x->view.shape[ed] / 2;
  // the partner, e + H or e - H (e + 1 or e - 1): in the row, no branch; the tables' index
  LIndex pi[TD_MAX_DIMS], ti[TD_MAX_DIMS], d = kb_ix_const(0);
  memcpy(pi, idx, sizeof(LIndex) * (size_t)x->view.ndim);
  memcpy(ti, idx, sizeof(LIndex) * (size_t)x->view.ndim);
  LExpr *e = kb_ix_expr(kb, &idx[ed]), *low;  // low: e is a pair's first
  if (pairs(n, s)) {
    low = kb_binary(kb, OP_EQ, DT_BOOL, kb_binary(kb, OP_BITWISE_AND, DT_I64, e, ic(kb, 1)), ic(kb, 0));
    d.dyn = kb_select(kb, low, ic(kb, 1), ic(kb, -1));
    ti[ed] = kb_dyn_index(kb_binary(kb, OP_RSHIFT, DT_I64, e, ic(kb, 1)));
  } else {
    low = kb_binary(kb, OP_LT, DT_BOOL, e, ic(kb, H));
    d.dyn = kb_select(kb, low, ic(kb, H), ic(kb, -H));
  }
  kb_ix_addmul(kb, &pi[ed], &d, 1);
  LExpr *p = elem(kb, x, pi, cd);
  LExpr *rot = kb_select(kb, low, kb_unary(kb, OP_NEG, cd, p), p);
  return kb_binary(kb, OP_ADD, cd, kb_binary(kb, OP_MUL, cd, v, elem(kb, table(n, s, 0), ti, cd)),
                   kb_binary(kb, OP_MUL, cd, rot, elem(kb, table(n, s, 1), ti, cd)));
}

void attn_rope_pair(KernelBuilder *kb, const Node *n, int s, const LIndex *idx, DType cd, LExpr **lo, LExpr **hi,
                    LIndex *at_lo, LIndex *at_hi) {
  const Value *x = n->srcs[s], *c = table(n, s, 0), *sn = table(n, s, 1);
  int ed = x->view.ndim - 1;
  LIndex xl[TD_MAX_DIMS], xh[TD_MAX_DIMS], th[TD_MAX_DIMS];  // the pair's elements; the tables' second index
  memcpy(xl, idx, sizeof(LIndex) * (size_t)x->view.ndim);
  memcpy(xh, idx, sizeof(LIndex) * (size_t)x->view.ndim);
  memcpy(th, idx, sizeof(LIndex) * (size_t)x->view.ndim);
  if (pairs(n, s)) {
    xl[ed] = kb_ix_const(0);
    kb_ix_addmul(kb, &xl[ed], &idx[ed], 2);
    xh[ed] = xl[ed];
    xh[ed].base++;
  } else {
    xh[ed].base += x->view.shape[ed] / 2;
    th[ed] = xh[ed];
  }
  LExpr *a = elem(kb, x, xl, cd), *b = elem(kb, x, xh, cd);
  *lo = kb_binary(kb, OP_SUB, cd, kb_binary(kb, OP_MUL, cd, a, elem(kb, c, idx, cd)),
                  kb_binary(kb, OP_MUL, cd, b, elem(kb, sn, idx, cd)));
  *hi = kb_binary(kb, OP_ADD, cd, kb_binary(kb, OP_MUL, cd, b, elem(kb, c, th, cd)),
                  kb_binary(kb, OP_MUL, cd, a, elem(kb, sn, th, cd)));
  *at_lo = xl[ed], *at_hi = xh[ed];
}

static LExpr *ref(KernelBuilder *kb, int local) { return kb_local_ref(kb, local); }

enum { KEY_BLOCK = 32 };  // keys whose scores are held at once

typedef struct Attn {
  const Node *n;
  const Value *q, *k, *v, *mask;
  int nd, id, ed;     // dims: count, query rows, Ev
  int64_t E, Ev;
  DType cd;
  int acc, sc;        // program buffers: the sums acc (the result's index), the block's scores sc
  int m, l;           // locals: the running max and sum
  LIndex idx[TD_MAX_DIMS];  // the row: batch dims and i
  LIndex rb;          // sc's row: its first element
} Attn;

static LExpr *bin(KernelBuilder *kb, Op op, const Attn *a, LExpr *x, LExpr *y) { return kb_binary(kb, op, a->cd, x, y); }
static LExpr *fc(KernelBuilder *kb, const Attn *a, double v) { return kb_fconst(kb, a->cd, v); }

// The block of nb keys from j0 (a multiple of KEY_BLOCK): their scores into sc, then
// the running max, sum and sums updated once for the block.
static void key_block(KernelBuilder *kb, const Attn *a, LStmtList *into, LIndex j0, int64_t nb) {
  LIndex qi[TD_MAX_DIMS], ki[TD_MAX_DIMS], vi[TD_MAX_DIMS], mi[TD_MAX_DIMS], oi[TD_MAX_DIMS], jj, at;
  for (int d = 0; d < a->ed; d++)
    qi[d] = ki[d] = vi[d] = mi[d] = oi[d] = a->idx[d];
  // scores: sc[jj] = dot(q[i], k[j]) * scale (+ mask), -inf where the key is hidden
  LStmtList *sl = kb_step_loop(kb, into, nb, kb_ix_const(0), 1, false, &jj);
  ki[a->id] = j0;
  kb_ix_addmul(kb, &ki[a->id], &jj, 1);
  mi[a->ed] = ki[a->id];
  int dot = kb_let_local(kb, sl, fc(kb, a, 0));
  LStmtList *terms = kb_step_loop(kb, sl, a->E, kb_ix_const(0), 1, false, &qi[a->ed]);
  ki[a->ed] = qi[a->ed];
  LExpr *qk = bin(kb, OP_MUL, a, attn_operand(kb, a->n, 0, qi, a->cd), attn_operand(kb, a->n, 1, ki, a->cd));
  kb_push(kb, terms, kb_set(kb, dot, bin(kb, OP_ADD, a, ref(kb, dot), qk)));
  LExpr *x = bin(kb, OP_MUL, a, ref(kb, dot), fc(kb, a, a->n->attr.scale));
  if (a->mask && a->mask->dtype != DT_BOOL)
    x = bin(kb, OP_ADD, a, x, elem(kb, a->mask, mi, a->cd));
  if (a->n->attr.causal || (a->mask && a->mask->dtype == DT_BOOL)) {
    LExpr *seen = a->mask ? kb_value(kb, a->mask, mi)
                          : kb_binary(kb, OP_LE, DT_BOOL, kb_ix_expr(kb, &ki[a->id]), kb_ix_expr(kb, &qi[a->id]));
    x = kb_select(kb, seen, x, fc(kb, a, -INFINITY));
  }
  at = a->rb;
  kb_ix_addmul(kb, &at, &jj, 1);
  kb_buf_store(kb, sl, a->sc, at, x);
  // the block's max, the new running max mn, the factor c of the old terms
  int bm = kb_let_local(kb, into, fc(kb, a, -INFINITY));
  LStmtList *ml = kb_step_loop(kb, into, nb, kb_ix_const(0), 1, false, &jj);
  at = a->rb;
  kb_ix_addmul(kb, &at, &jj, 1);
  kb_push(kb, ml, kb_set(kb, bm, bin(kb, OP_MAXIMUM, a, ref(kb, bm), kb_buf_load(kb, a->sc, at))));
  int mn = kb_let_local(kb, into, bin(kb, OP_MAXIMUM, a, ref(kb, a->m), ref(kb, bm)));
  LExpr *shift = attn_weight(kb, into, a->cd, bin(kb, OP_SUB, a, ref(kb, a->m), ref(kb, mn)), NULL);
  LExpr *same = kb_binary(kb, OP_EQ, DT_BOOL, ref(kb, a->m), ref(kb, mn));
  int c = kb_let_local(kb, into, kb_select(kb, same, fc(kb, a, 1), shift));
  // p = exp(x - mn) (0 for a hidden key) in place of each score, summed
  int bs = kb_let_local(kb, into, fc(kb, a, 0));
  LStmtList *pl = kb_step_loop(kb, into, nb, kb_ix_const(0), 1, false, &jj);
  at = a->rb;
  kb_ix_addmul(kb, &at, &jj, 1);
  int xs = kb_let_local(kb, pl, kb_buf_load(kb, a->sc, at));
  LExpr *hidden = kb_binary(kb, OP_EQ, DT_BOOL, ref(kb, xs), fc(kb, a, -INFINITY));
  int p = kb_let_local(kb, pl, attn_weight(kb, pl, a->cd, bin(kb, OP_SUB, a, ref(kb, xs), ref(kb, mn)), hidden));
  kb_buf_store(kb, pl, a->sc, at, ref(kb, p));
  kb_push(kb, pl, kb_set(kb, bs, bin(kb, OP_ADD, a, ref(kb, bs), ref(kb, p))));
  kb_push(kb, into, kb_set(kb, a->l, bin(kb, OP_ADD, a, bin(kb, OP_MUL, a, ref(kb, a->l), ref(kb, c)), ref(kb, bs))));
  // acc = acc * c + sum over the block of p * v[j]
  LStmtList *rl = kb_step_loop(kb, into, a->Ev, kb_ix_const(0), 1, false, &oi[a->ed]);
  LIndex ai = kb_view_index(kb, &a->n->out->view, oi);
  kb_buf_store(kb, rl, a->acc, ai, bin(kb, OP_MUL, a, kb_buf_load(kb, a->acc, ai), ref(kb, c)));
  LStmtList *vl = kb_step_loop(kb, into, nb, kb_ix_const(0), 1, false, &jj);
  vi[a->id] = j0;
  kb_ix_addmul(kb, &vi[a->id], &jj, 1);
  at = a->rb;
  kb_ix_addmul(kb, &at, &jj, 1);
  int pj = kb_let_local(kb, vl, kb_buf_load(kb, a->sc, at));
  LStmtList *el = kb_step_loop(kb, vl, a->Ev, kb_ix_const(0), 1, false, &oi[a->ed]);
  vi[a->ed] = oi[a->ed];
  ai = kb_view_index(kb, &a->n->out->view, oi);
  LExpr *term = bin(kb, OP_MUL, a, ref(kb, pj), elem(kb, a->v, vi, a->cd));
  kb_buf_store(kb, el, a->acc, ai, bin(kb, OP_ADD, a, kb_buf_load(kb, a->acc, ai), term));
  kb_push(kb, into, kb_set(kb, a->m, ref(kb, mn)));
}

void attn_build(KernelBuilder *kb, const NodeList *ns) {
  TD_ASSERT(ns->len == 1);
  const Node *n = ns->data[0];
  TD_ASSERT(op_class(n->op) == OC_ATTN && n->nsrc >= 3);
  if (!kb->naive && kb->cpu && attn_tile_build(kb, ns))
    return;
  if (!kb->naive && !kb->cpu)  // a GPU program: the flash kernel's facts too (ir/attn_gpu.c)
    attn_gpu_facts(kb, n);
  Attn a = {.n = n, .q = n->srcs[0], .k = n->srcs[1], .v = n->srcs[2], .mask = attn_mask(n)};
  const View *ov = &n->out->view;
  a.nd = ov->ndim, a.id = a.nd - 2, a.ed = a.nd - 1;
  TD_ASSERT(a.nd >= 2 && a.q->view.ndim == a.nd && a.k->view.ndim == a.nd && a.v->view.ndim == a.nd &&
            (!a.mask || a.mask->view.ndim == a.nd));
  int64_t S = a.k->view.shape[a.id], rows = 1;
  a.E = a.q->view.shape[a.ed], a.Ev = ov->shape[a.ed];
  for (int d = 0; d < a.ed; d++)
    rows *= ov->shape[d];
  a.cd = dtype_compute(n->out->dtype);
  int64_t blk = S < KEY_BLOCK ? S : KEY_BLOCK;

  // the rows: loops over the batch dims and L (size 1: index 0, no loop)
  int dims[TD_MAX_DIMS], nl = 0;
  for (int d = 0; d < a.ed; d++) {
    a.idx[d] = kb_ix_const(0);
    if (ov->shape[d] != 1)
      dims[nl++] = d;
  }
  bool par = rows >= 2 && rows * (S > 0 ? S : 1) * (a.E + a.Ev + 4) >= PARALLEL_WORK;
  LStmtList *row = kb_outer_loops(kb, &kb->k->body, nl, dims, ov->shape, a.idx, par);
  LIndex oi[TD_MAX_DIMS];
  for (int d = 0; d < a.ed; d++)
    oi[d] = a.idx[d];
  if (S == 0) {  // no keys: zeros
    LStmtList *e = kb_step_loop(kb, row, a.Ev, kb_ix_const(0), 1, false, &oi[a.ed]);
    kb_store_node(kb, e, n, oi, kb_fconst(kb, a.cd, 0));
    return;
  }
  a.acc = n->out->dtype == a.cd ? kb->buf_of[n->out->buf->id] : kb_new_temp(kb, a.cd, view_numel(*ov), "attention sums");
  a.sc = kb_new_temp(kb, a.cd, rows * blk, "attention scores");
  TD_ASSERT(a.acc >= 0);
  a.rb = kb_ix_const(0);
  int64_t st = blk;
  for (int d = a.ed - 1; d >= 0; st *= ov->shape[d--])  // the rows row-major, blk each
    kb_ix_addmul(kb, &a.rb, &a.idx[d], st);
  a.m = kb_let_local(kb, row, kb_fconst(kb, a.cd, -INFINITY));
  a.l = kb_let_local(kb, row, kb_fconst(kb, a.cd, 0));
  LStmtList *zero = kb_step_loop(kb, row, a.Ev, kb_ix_const(0), 1, false, &oi[a.ed]);
  kb_buf_store(kb, zero, a.acc, kb_view_index(kb, ov, oi), kb_fconst(kb, a.cd, 0));

  // the keys, block by block (a causal row skips the blocks past its diagonal)
  int64_t full = S / blk, rest = S - full * blk;
  LIndex j0;
  LStmtList *bl = kb_step_loop(kb, row, full, kb_ix_const(0), blk, false, &j0);
  if (n->attr.causal) {
    LStmt *s = kb_if(kb, kb_binary(kb, OP_LE, DT_BOOL, kb_ix_expr(kb, &j0), kb_ix_expr(kb, &a.idx[a.id])));
    kb_push(kb, bl, s);
    bl = &s->body;
  }
  key_block(kb, &a, bl, j0, blk);
  if (rest > 0)
    key_block(kb, &a, row, kb_ix_const(full * blk), rest);

  // the row's result
  LStmtList *fin = kb_step_loop(kb, row, a.Ev, kb_ix_const(0), 1, false, &oi[a.ed]);
  LExpr *sum = kb_buf_load(kb, a.acc, kb_view_index(kb, ov, oi));
  kb_store_node(kb, fin, n, oi, kb_binary(kb, OP_DIV, a.cd, sum, kb_local_ref(kb, a.l)));
}
