// ir/sort.c: the kernel builder's SORT kernels (ir/kernel.h): a sort (values), an
// argsort (indices) or both of one input, along its last dim (the front end moves any
// other dim there). Each row is copied into the results — the values as the input's
// expression (elementwise producers computed in that read), the indices 0..n-1 — and
// sorted there in place by a bitonic sorting network: for each merge size 2h (h = 1, 2,
// 4, ... below n) one step comparing element b of each block of 2h with element
// 2h-1-b, then steps at distances h/2, ..., 1 within blocks. Every step is a loop nest
// of constant extents with affine indices, so the loop IR needs nothing new, the CPU
// schedule parallelizes the rows, and the GPU schedules prove the rows (and the blocks
// of a step) independent from the indices. A row whose length n is not a power of two
// is sorted as if padded with elements after every other: compare-exchanges reaching
// past n are left out.
//
// Order: keys (value, index) compared lexicographically, so equal values keep their
// input order (PyTorch's stable=True order; PyTorch promises nothing for
// stable=False) and the network's result is the stable sort. NaN is the largest value
// (first when descending, as in PyTorch), ±0 are equal.
#include "ir/kernel.h"

typedef struct Sort {
  int vbuf, ibuf;  // program buffers holding the row being sorted: values (of cdt or the
                   // input's dtype), indices (i64)
  DType cdt;       // the dtype values are compared in
  bool descending;
} Sort;

static LExpr *cmp(KernelBuilder *kb, Op op, LExpr *a, LExpr *b) { return kb_binary(kb, op, DT_BOOL, a, b); }
static LExpr *or_(KernelBuilder *kb, LExpr *a, LExpr *b) { return cmp(kb, OP_LOGICAL_OR, a, b); }
static LExpr *and_(KernelBuilder *kb, LExpr *a, LExpr *b) { return cmp(kb, OP_LOGICAL_AND, a, b); }

// Exchange elements lo and hi (lo < hi) of the row when their keys are out of order.
static void compare_exchange(KernelBuilder *kb, const Sort *s, LStmtList *into, LIndex lo, LIndex hi) {
  int va = kb_let_local(kb, into, kb_cast(kb, kb_buf_load(kb, s->vbuf, lo), s->cdt));
  int vb = kb_let_local(kb, into, kb_cast(kb, kb_buf_load(kb, s->vbuf, hi), s->cdt));
  int ia = kb_let_local(kb, into, kb_buf_load(kb, s->ibuf, lo));
  int ib = kb_let_local(kb, into, kb_buf_load(kb, s->ibuf, hi));
  LExpr *a = kb_local_ref(kb, va), *b = kb_local_ref(kb, vb);
  // after: a's value belongs after b's; same: neither goes first
  LExpr *after = cmp(kb, s->descending ? OP_LT : OP_GT, a, b);
  LExpr *same = cmp(kb, OP_EQ, a, b);
  if (dtype_is_float(s->cdt)) {
    LExpr *nan_a = cmp(kb, OP_NE, a, a), *nan_b = cmp(kb, OP_NE, b, b);
    LExpr *num_a = cmp(kb, OP_EQ, a, a), *num_b = cmp(kb, OP_EQ, b, b);
    after = or_(kb, after, s->descending ? and_(kb, num_a, nan_b) : and_(kb, nan_a, num_b));
    same = or_(kb, same, and_(kb, nan_a, nan_b));
  }
  LExpr *later = cmp(kb, OP_GT, kb_local_ref(kb, ia), kb_local_ref(kb, ib));
  int sw = kb_let_local(kb, into, or_(kb, after, and_(kb, same, later)));
  LExpr *swap = kb_local_ref(kb, sw);
  kb_buf_store(kb, into, s->vbuf, lo, kb_select(kb, swap, b, a));
  kb_buf_store(kb, into, s->vbuf, hi, kb_select(kb, swap, a, b));
  kb_buf_store(kb, into, s->ibuf, lo, kb_select(kb, swap, kb_local_ref(kb, ib), kb_local_ref(kb, ia)));
  kb_buf_store(kb, into, s->ibuf, hi, kb_select(kb, swap, kb_local_ref(kb, ia), kb_local_ref(kb, ib)));
}

// A loop of n iterations (none when n == 1) whose var is added to *at times m; its body.
static LStmtList *loop_into(KernelBuilder *kb, LStmtList *into, int64_t n, LIndex *at, int64_t m) {
  if (n == 1)
    return into;
  int v = kb_new_var(kb);
  LStmt *l = kb_loop(kb, v, n);
  kb_push(kb, into, l);
  LIndex iv = kb_ix_var(v);
  kb_ix_addmul(kb, at, &iv, m);
  return &l->body;
}

// One step of the network over the row at rb of n elements: blocks of 2h; mirrored,
// element b of a block against 2h-1-b, else against b+h (b < h in both).
static void step(KernelBuilder *kb, const Sort *s, LStmtList *into, LIndex rb, int64_t n, int64_t h, bool mirrored) {
  int64_t blk = 2 * h, full = n / blk, rem = n - full * blk;
  if (full > 0) {
    LIndex base = rb;
    LStmtList *body = loop_into(kb, into, full, &base, blk);
    LIndex lo = base, hi = base;
    LIndex bv = kb_ix_const(0);
    LStmtList *inner = loop_into(kb, body, h, &bv, 1);
    kb_ix_addmul(kb, &lo, &bv, 1);
    kb_ix_addmul(kb, &hi, &bv, mirrored ? -1 : 1);
    hi.base += mirrored ? blk - 1 : h;
    compare_exchange(kb, s, inner, lo, hi);
  }
  if (rem > h) {  // the last, partial block: the pairs whose upper element is in the row
    LIndex lo = rb, hi = rb, bv = kb_ix_const(0);
    LStmtList *inner = loop_into(kb, into, rem - h, &bv, 1);
    lo.base += full * blk + (mirrored ? blk - rem : 0);
    hi.base += full * blk + (mirrored ? rem - 1 : h);
    kb_ix_addmul(kb, &lo, &bv, 1);
    kb_ix_addmul(kb, &hi, &bv, mirrored ? -1 : 1);
    compare_exchange(kb, s, inner, lo, hi);
  }
}

// The first k (a power of two) of each pair of sorted blocks of k at distance w (a
// power of two, k <= w; a block's elements from its start, blocks 2w apart), kept in
// the first block sorted: element i of the first against element k-1-i of the second,
// the earlier of the two kept (a bitonic sequence holding the first k of both), then
// steps at distances k/2, ..., 1 within it. A second block past n has nothing to give.
static void keep_first(KernelBuilder *kb, const Sort *s, LStmtList *into, LIndex rb, int64_t n, int64_t k, int64_t w) {
  int64_t pairs = n / (2 * w), rem = n - pairs * 2 * w;  // full pairs; a last one whose second block
  int64_t part = rem > w ? rem - w : 0;                    // holds part elements (< k ones: a short block)
  for (int last = 0; last < 2; last++) {
    int64_t np = last ? (part > 0) : pairs;
    if (np == 0)
      continue;
    LIndex base = rb;
    if (last)
      base.base += pairs * 2 * w;
    LStmtList *body = loop_into(kb, into, np, &base, 2 * w);
    int64_t cnt = last && part < k ? part : k;  // elements of the second block
    LIndex lo = base, hi = base, iv = kb_ix_const(0);
    LStmtList *inner = loop_into(kb, body, cnt, &iv, 1);
    lo.base += k - cnt;  // against the second block's element cnt-1-i'
    kb_ix_addmul(kb, &lo, &iv, 1);
    hi.base += w + cnt - 1;
    kb_ix_addmul(kb, &hi, &iv, -1);
    compare_exchange(kb, s, inner, lo, hi);
    for (int64_t d = k / 2; d >= 1; d /= 2) {  // the first block, whole: a sort of its k
      LIndex b0 = base;
      LStmtList *blk = loop_into(kb, body, k / (2 * d), &b0, 2 * d);
      LIndex l2 = b0, h2 = b0, bv = kb_ix_const(0);
      LStmtList *in2 = loop_into(kb, blk, d, &bv, 1);
      kb_ix_addmul(kb, &l2, &bv, 1);
      kb_ix_addmul(kb, &h2, &bv, 1);
      h2.base += d;
      compare_exchange(kb, s, in2, l2, h2);
    }
  }
}

void sort_build(KernelBuilder *kb, const NodeList *ns) {
  const Node *vn = NULL, *in = NULL;
  for (int i = 0; i < ns->len; i++) {
    const Node *n = ns->data[i];
    TD_ASSERT(op_class(n->op) == OC_SORT);
    if (n->op == OP_SORT)
      vn = n;
    else
      in = n;
  }
  const Node *n0 = ns->data[0];
  const Value *x = n0->srcs[0];
  const View *ov = &n0->out->view;
  int nd = ov->ndim;
  TD_ASSERT(x->view.ndim == nd);
  int64_t n = nd ? ov->shape[nd - 1] : 1, numel = view_numel(*ov), rows = n ? numel / n : 0;
  Sort s = {.cdt = dtype_compute(x->dtype), .descending = n0->attr.descending};
  s.vbuf = vn ? kb->buf_of[vn->out->buf->id] : kb_new_temp(kb, s.cdt, numel, "sorted values");
  s.ibuf = in ? kb->buf_of[in->out->buf->id] : kb_new_temp(kb, DT_I64, numel, "sorted indices");
  TD_ASSERT(s.vbuf >= 0 && s.ibuf >= 0);
  // the rows: loops over the leading dims, the row's first element at rb (contiguous)
  int64_t steps = 0;
  for (int64_t h = 1; h < n; h *= 2)
    for (int64_t j = h; j >= 1; j /= 2)
      steps++;
  LIndex idx[TD_MAX_DIMS];
  bool par = rows >= PARALLEL_MIN_ITERS && numel * (steps + 1) >= PARALLEL_WORK;
  LStmtList *row = kb_nest(kb, &kb->k->body, nd > 0 ? nd - 1 : 0, ov->shape, idx, par, NULL);
  LIndex rb = kb_ix_const(0);
  int64_t stride = n;
  for (int d = nd - 2; d >= 0; d--) {
    kb_ix_addmul(kb, &rb, &idx[d], stride);
    stride *= ov->shape[d];
  }
  // copy the row in: values and their indices
  LIndex j = kb_ix_const(0);
  LStmtList *copy = loop_into(kb, row, n, &j, 1);
  if (nd > 0)
    idx[nd - 1] = j;
  LIndex at = rb;
  kb_ix_addmul(kb, &at, &j, 1);
  kb_buf_store(kb, copy, s.vbuf, at, kb_value(kb, x, idx));
  kb_buf_store(kb, copy, s.ibuf, at, kb_ix_expr(kb, &j));
  // the network
  int64_t kk = 1;  // a power of two: with `first` read, the rows' blocks of kk are sorted
  while (kk < n0->attr.first)
    kk *= 2;
  if (n0->attr.first <= 0 || 2 * kk > n)
    kk = n;
  for (int64_t h = 1; h < kk; h *= 2) {
    step(kb, &s, row, rb, n, h, true);
    for (int64_t d = h / 2; d >= 1; d /= 2)
      step(kb, &s, row, rb, n, d, false);
  }
  for (int64_t w = kk; w < n; w *= 2)
    keep_first(kb, &s, row, rb, n, kk, w);
}
