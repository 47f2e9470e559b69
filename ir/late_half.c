// ir/late_half.c: a matmul whose output columns are read in two parts far apart is two
// matmuls, the later part computed just before its first reader (fuse_late_half, run by
// fuse_graph on CPU programs before planning). Mamba's in_proj computes x and res in one
// [L, 2 * d_inner] product, splits it, and reads res only at the very end: held across
// the whole scan, that half is the largest temporary of the call. Computed late, its
// storage is needed only from there on; the FLOPs are the same.
//
// What is matched (any failure leaves the graph as it is):
//   - a plain matmul (attr.nk 0) of a float dtype, not complex, its result contiguous,
//     its operand b at least 2-D (b's last dim is the output's last dim, N);
//   - its result value read by no node and no output: every read is through a view
//     over its buffer that stays inside one range of columns (a stride a multiple of N
//     walks rows, one below N walks columns; the columns it reaches lie in [c, c + span]);
//   - a column a (0 < a < N) that no view's range straddles, such that the first node
//     reading a view at or past a comes at least LATE_GAP nodes after the last node
//     reading one before it (a short gap saves nothing worth a second GEMM launch).
// The rewrite: the matmul keeps columns [0, a) (b's view narrowed, its buffer a columns
// wide); a new matmul of the same a-operand and b's columns [a, N) is inserted before
// the first reader of those; each view moves to the buffer of its part (its row strides
// rescaled to the part's width, its offset counted from the part's column 0). Node ids
// are renumbered. Values keep their element meaning, so nothing read changes.
#include "ir/ir.h"

enum { LATE_GAP = 32 };

typedef struct Range {
  Value *v;
  int64_t lo, hi;  // columns [lo, hi)
} Range;

// The columns view v of a contiguous [.., N] buffer reaches; false if it is not one range.
static bool column_range(const Value *v, int64_t N, int64_t *lo, int64_t *hi) {
  int64_t span = 0;
  for (int k = 0; k < v->view.ndim; k++) {
    int64_t s = v->view.strides[k], n = v->view.shape[k];
    if (n <= 1)
      continue;
    if (s < 0)
      return false;
    if (s % N == 0)
      continue;
    if (s >= N)
      return false;
    span += (n - 1) * s;
  }
  if (v->view.offset < 0)
    return false;
  *lo = v->view.offset % N;
  *hi = *lo + span + 1;
  return *hi <= N;
}

// The view v of the old [.., N] buffer as a view of its part [.., w] starting at column c0.
static View part_view(View v, int64_t N, int64_t w, int64_t c0) {
  for (int k = 0; k < v.ndim; k++)
    if (v.shape[k] > 1 && v.strides[k] % N == 0)
      v.strides[k] = v.strides[k] / N * w;
  int64_t row = v.offset / N, col = v.offset % N;
  v.offset = row * w + (col - c0);
  return v;
}

static bool try_split(Graph *g, Node *m) {
  Ctx *cx = g->cx;
  Value *o = m->out;
  Buffer *buf = o->buf;
  if (m->op != OP_MATMUL || m->attr.nk != 0 || m->nsrc != 2 || !buf || buf->kind != BUF_KERNEL ||
      buf->producer != m || o->cplx || !dtype_is_float(o->dtype) || !view_is_contiguous(o->view) ||
      o->view.offset != 0 || o->view.ndim < 1)
    return false;
  Value *b = m->srcs[1];
  int64_t N = o->view.shape[o->view.ndim - 1];
  if (b->is_scalar || b->cplx || b->view.ndim < 2 || b->view.shape[b->view.ndim - 1] != N || N < 2)
    return false;
  for (int i = 0; i < g->outputs.len; i++)
    if (g->outputs.data[i]->buf == buf)
      return false;
  // the node index of each value's first and last read; the result itself is read by none
  int nv = g->values.len;
  int *first = arena_alloc(&cx->arena, sizeof(int) * (size_t)nv);
  int *last = arena_alloc(&cx->arena, sizeof(int) * (size_t)nv);
  for (int i = 0; i < nv; i++)
    first[i] = last[i] = -1;
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    for (int s = 0; s < n->nsrc; s++) {
      const Value *v = n->srcs[s];
      if (v->buf != buf)
        continue;
      if (v == o || op_is_store(n->op))
        return false;
      TD_ASSERT(v->id >= 0 && v->id < nv && g->values.data[v->id] == v);
      if (first[v->id] < 0)
        first[v->id] = i;
      last[v->id] = i;
    }
  }
  VEC(Range) rs = {0};
  for (int i = 0; i < nv; i++) {
    Value *v = g->values.data[i];
    if (v->buf != buf || v == o)
      continue;
    Range r = {v, 0, 0};
    if (!column_range(v, N, &r.lo, &r.hi))
      return false;
    vec_push(&cx->arena, &rs, r);
  }
  // the split column: the earliest range start that no range straddles, with a gap
  int64_t a = -1;
  int at = -1;
  for (int c = 0; c < rs.len && a < 0; c++) {
    int64_t cand = rs.data[c].lo;
    if (cand <= 0)
      continue;
    int last_lo = -1, first_hi = g->nodes.len;
    bool ok = true;
    for (int i = 0; i < rs.len && ok; i++) {
      const Range *r = &rs.data[i];
      int id = r->v->id;
      if (r->lo < cand && r->hi > cand)
        ok = false;
      else if (first[id] < 0)
        continue;
      else if (r->hi <= cand)
        last_lo = last[id] > last_lo ? last[id] : last_lo;
      else if (first[id] < first_hi)
        first_hi = first[id];
    }
    if (ok && last_lo >= 0 && first_hi < g->nodes.len && first_hi - last_lo >= LATE_GAP) {
      a = cand;
      at = first_hi;
    }
  }
  if (a < 0)
    return false;
  // the two b operands: columns [0, a) and [a, N)
  int bl = b->view.ndim - 1;
  View bv0 = b->view, bv1 = b->view;
  bv0.shape[bl] = a;
  bv1.shape[bl] = N - a;
  bv1.offset += a * b->view.strides[bl];
  int64_t shape[TD_MAX_DIMS];
  int ol = o->view.ndim - 1;
  for (int k = 0; k <= ol; k++)
    shape[k] = o->view.shape[k];
  shape[ol] = N - a;
  Value *srcs[2] = {m->srcs[0], graph_view(g, b, bv1, b->loc)};
  Node *m2 = graph_node(g, OP_MATMUL, o->dtype, o->view.ndim, shape, srcs, 2, m->attr, m->loc);
  // the late half's buffer says which part of the user's value it holds
  m2->out->buf->name = buf->name ? arena_printf(&cx->arena, "%s[..., %lld:]", buf->name, (long long)a) : NULL;
  m->srcs[1] = graph_view(g, b, bv0, b->loc);
  // the views move to their part
  for (int i = 0; i < rs.len; i++) {
    Value *v = rs.data[i].v;
    bool late = rs.data[i].lo >= a;
    v->view = part_view(v->view, N, late ? N - a : a, late ? a : 0);
    v->buf = late ? m2->out->buf : buf;
  }
  shape[ol] = a;
  o->view = view_contiguous(o->view.ndim, shape);
  buf->numel = view_numel(o->view);
  // m2 (last) moves before node `at`
  int n = g->nodes.len;
  for (int i = n - 1; i > at; i--)
    g->nodes.data[i] = g->nodes.data[i - 1];
  g->nodes.data[at] = m2;
  for (int i = at; i < n; i++)
    g->nodes.data[i]->id = i;
  return true;
}

void fuse_late_half(Graph *g) {
  for (int i = 0; i < g->nodes.len; i++)
    try_split(g, g->nodes.data[i]);
}
