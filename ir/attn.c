// ir/attn.c: the kernel builder's ATTN kernels (ir/kernel.h): one
// scaled_dot_product_attention, out = softmax(q @ k^T * scale + bias) @ v, as one loop
// nest that never stores the [L, S] scores. Its sources (the front end expands them to
// the result's batch dims): query [..., L, E], key [..., S, E], value [..., S, Ev] and,
// optionally, attn_mask [..., L, S] (bool: false hides the key; any other dtype: added
// to the score). With attr.causal, query row i sees keys 0..i (PyTorch's
// tril(ones(L, S)), the top-left corner).
//
// For each query row (the loops over the batch dims and L, independent: the CPU runs
// them in parallel, a GPU a block per row), the keys are taken one by one and the
// softmax is computed online (a flash-attention row): with the running max m, the
// running sum l of exp(score - m) and the running sums acc[e] of exp(score - m) * v[j, e],
//   x  = dot(q[i, :], k[j, :]) * scale (+ mask[i, j])
//   m' = maximum(m, x);  c = m == m' ? 1 : exp(m - m');  p = x == -inf ? 0 : exp(x - m')
//   l  = l * c + p;  acc[e] = acc[e] * c + p * v[j, e];  m = m'
// and at the end out[i, e] = acc[e] / l. A hidden key (a false bool mask, a key past the
// diagonal) is skipped by an if. Everything is computed in the dtype arithmetic on the
// inputs is done in (f32 for f16/bf16: the result rounded once, when stored). acc is
// the result's own buffer when it has that dtype, else an LB_TEMP of the result's
// shape, so each row's sums are its own elements.
//
// What PyTorch's math gives at the edges, kept: a row whose keys are all hidden (or all
// -inf) has l = 0 and acc = 0, so 0 / 0 = NaN (softmax of a row of -inf); NaN or +inf
// scores make the row NaN (maximum propagates NaN, exp(inf - inf)); no keys at all
// (S == 0) give 0 (an empty softmax times an empty value matrix).
#include "ir/kernel.h"

#include <math.h>

static LExpr *ref(KernelBuilder *kb, int local) { return kb_local_ref(kb, local); }

// The value of src at idx, in dtype cd.
static LExpr *at(KernelBuilder *kb, const Value *src, const LIndex *idx, DType cd) {
  return kb_cast(kb, kb_value(kb, src, idx), cd);
}

void attn_build(KernelBuilder *kb, const NodeList *ns) {
  TD_ASSERT(ns->len == 1);
  const Node *n = ns->data[0];
  TD_ASSERT(op_class(n->op) == OC_ATTN && (n->nsrc == 3 || n->nsrc == 4));
  const Value *q = n->srcs[0], *k = n->srcs[1], *v = n->srcs[2], *mask = n->nsrc == 4 ? n->srcs[3] : NULL;
  const View *ov = &n->out->view;
  int nd = ov->ndim, id = nd - 2, ed = nd - 1;  // the dims of the query rows and of Ev
  TD_ASSERT(nd >= 2 && q->view.ndim == nd && k->view.ndim == nd && v->view.ndim == nd &&
            (!mask || mask->view.ndim == nd));
  int64_t E = q->view.shape[ed], S = k->view.shape[id], Ev = ov->shape[ed], rows = 1;
  for (int d = 0; d < ed; d++)
    rows *= ov->shape[d];
  DType cd = dtype_compute(n->out->dtype);
  int acc = n->out->dtype == cd ? kb->buf_of[n->out->buf->id]
                                : kb_new_temp(kb, cd, view_numel(*ov), "attention sums");
  TD_ASSERT(acc >= 0);

  // the rows: loops over the batch dims and L (size 1: index 0, no loop)
  LIndex idx[TD_MAX_DIMS];
  int dims[TD_MAX_DIMS], nl = 0;
  for (int d = 0; d < ed; d++) {
    idx[d] = kb_ix_const(0);
    if (ov->shape[d] != 1)
      dims[nl++] = d;
  }
  bool par = rows >= 2 && rows * (S > 0 ? S : 1) * (E + Ev + 4) >= PARALLEL_WORK;
  LStmtList *row = kb_outer_loops(kb, &kb->k->body, nl, dims, ov->shape, idx, par);
  LIndex qi[TD_MAX_DIMS], ki[TD_MAX_DIMS], vi[TD_MAX_DIMS], mi[TD_MAX_DIMS], oi[TD_MAX_DIMS];
  for (int d = 0; d < id; d++)
    qi[d] = ki[d] = vi[d] = mi[d] = oi[d] = idx[d];
  qi[id] = mi[id] = oi[id] = idx[id];

  if (S == 0) {  // no keys: zeros
    LStmtList *e = kb_step_loop(kb, row, Ev, kb_ix_const(0), 1, false, &oi[ed]);
    kb_store_node(kb, e, n, oi, kb_fconst(kb, cd, 0));
    return;
  }
  int m = kb_let_local(kb, row, kb_fconst(kb, cd, -INFINITY));
  int l = kb_let_local(kb, row, kb_fconst(kb, cd, 0));
  LStmtList *zero = kb_step_loop(kb, row, Ev, kb_ix_const(0), 1, false, &oi[ed]);
  kb_buf_store(kb, zero, acc, kb_view_index(kb, ov, oi), kb_fconst(kb, cd, 0));

  // the keys, each one seen adding its term
  LStmtList *key = kb_step_loop(kb, row, S, kb_ix_const(0), 1, false, &ki[id]);
  vi[id] = mi[ed] = ki[id];
  if (n->attr.causal || (mask && mask->dtype == DT_BOOL)) {
    LExpr *seen = mask ? kb_value(kb, mask, mi)
                       : kb_binary(kb, OP_LE, DT_BOOL, kb_ix_expr(kb, &ki[id]), kb_ix_expr(kb, &qi[id]));
    LStmt *s = kb_if(kb, seen);
    kb_push(kb, key, s);
    key = &s->body;
  }
  int dot = kb_let_local(kb, key, kb_fconst(kb, cd, 0));
  LStmtList *terms = kb_step_loop(kb, key, E, kb_ix_const(0), 1, false, &qi[ed]);
  ki[ed] = qi[ed];
  LExpr *qk = kb_binary(kb, OP_MUL, cd, at(kb, q, qi, cd), at(kb, k, ki, cd));
  kb_push(kb, terms, kb_set(kb, dot, kb_binary(kb, OP_ADD, cd, ref(kb, dot), qk)));
  LExpr *x = kb_binary(kb, OP_MUL, cd, ref(kb, dot), kb_fconst(kb, cd, n->attr.scale));
  if (mask && mask->dtype != DT_BOOL)
    x = kb_binary(kb, OP_ADD, cd, x, at(kb, mask, mi, cd));
  int xl = kb_let_local(kb, key, x);
  int mn = kb_let_local(kb, key, kb_binary(kb, OP_MAXIMUM, cd, ref(kb, m), ref(kb, xl)));
  LExpr *one = kb_fconst(kb, cd, 1), *zero_ = kb_fconst(kb, cd, 0);
  LExpr *shift = kb_unary(kb, OP_EXP, cd, kb_binary(kb, OP_SUB, cd, ref(kb, m), ref(kb, mn)));
  int c = kb_let_local(kb, key, kb_select(kb, kb_binary(kb, OP_EQ, DT_BOOL, ref(kb, m), ref(kb, mn)), one, shift));
  LExpr *e = kb_unary(kb, OP_EXP, cd, kb_binary(kb, OP_SUB, cd, ref(kb, xl), ref(kb, mn)));
  LExpr *hidden = kb_binary(kb, OP_EQ, DT_BOOL, ref(kb, xl), kb_fconst(kb, cd, -INFINITY));
  int p = kb_let_local(kb, key, kb_select(kb, hidden, zero_, e));
  kb_push(kb, key, kb_set(kb, l, kb_binary(kb, OP_ADD, cd, kb_binary(kb, OP_MUL, cd, ref(kb, l), ref(kb, c)),
                                           ref(kb, p))));
  LStmtList *upd = kb_step_loop(kb, key, Ev, kb_ix_const(0), 1, false, &oi[ed]);
  vi[ed] = oi[ed];
  LIndex ai = kb_view_index(kb, ov, oi);
  LExpr *old = kb_binary(kb, OP_MUL, cd, kb_buf_load(kb, acc, ai), ref(kb, c));
  kb_buf_store(kb, upd, acc, ai, kb_binary(kb, OP_ADD, cd, old, kb_binary(kb, OP_MUL, cd, ref(kb, p), at(kb, v, vi, cd))));
  kb_push(kb, key, kb_set(kb, m, ref(kb, mn)));

  // the row's result
  LStmtList *fin = kb_step_loop(kb, row, Ev, kb_ix_const(0), 1, false, &oi[ed]);
  LExpr *sum = kb_buf_load(kb, acc, kb_view_index(kb, ov, oi));
  kb_store_node(kb, fin, n, oi, kb_binary(kb, OP_DIV, cd, sum, ref(kb, l)));
}
