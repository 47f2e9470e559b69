// ir/ew.c: the kernel builder's EW and ONE kernels (ir/kernel.h). EW: elementwise
// nodes over one shape, each stored at every index of it, in the output's row-major
// order or, when an operand is read transposed, in tiles (below); ONE: cat and stack
// (one nest per operand, writing its slice of the result) and stores into a view of a
// buffer (x[idx] = v, x[idx] op= v), each node alone in its kernel.
//
// Invariants: every element of a written view is stored exactly once, with the value
// the row-major nest gives it (a tiled order changes no result); probe expressions
// built to choose the order leave no argument or error behind.
#include "ir/kernel.h"

#include <string.h>

// ============================================================================
// EW: elementwise nodes over one shape
// ============================================================================
// Loops follow the output's row-major order, except when a load's unit-stride dim di
// is not the output's innermost dim dj (a transposed read: x.t().contiguous()). Then
// both are tiled:
//   for ..., i0 in 0..Si step Ti [parallel], ..., j0 in 0..Sj step Tj, ... {
//     for i in i0..i0+Ti, j in j0..j0+Tj: out[.., i, .., j] = f(..)
//   }
// (the tile loops in their dims' places, the intra-tile loops innermost; the last
// Si % Ti indices of a dim get a nest of their own, and a dim shorter than its tile no
// tile loop). A tile writes Tj elements = EW_ROW_BYTES of each of Ti output rows (whole
// lines, a 512-bit gather each for f32) and reads Ti = EW_RUN_BYTES along each of Tj
// source rows: long runs keep the hardware prefetchers streaming (4096² f32 with the
// LLVM backend: 32×32 tiles 6.4 ms, 512×32 5.0 ms; C 11.9 -> 8.5 ms). Ti shrinks, down
// to Tj, while it leaves fewer than EW_MIN_TILES tiles of Si to share among threads.
// Only the order changes: every element is computed as in the row-major nest.
enum { EW_ROW_BYTES = 128, EW_RUN_BYTES = 2048, EW_MIN_TILES = 8 };

typedef struct EwTile {
  const NodeList *ns;
  const View *ov;
  int di, dj;                 // the tiled dims (di < dj)
  int64_t tile[TD_MAX_DIMS];  // di and dj: Ti and Tj
  LIndex idx[TD_MAX_DIMS];    // the index of each dim; of di and dj: their tile's first
  int64_t ext[TD_MAX_DIMS];   // di and dj: their tile's extent
} EwTile;

// The dim by which a load of e moves with unit stride while it strides along probe
// dim dj, or -1.
static int transposed_dim(const LExpr *e, int nd, int dj) {
  if (!e)
    return -1;
  if (e->kind == LX_LOAD && kb_iabs(kb_ix_coef(&e->idx, PROBE_VAR + dj)) > 1)
    for (int d = 0; d < nd; d++)
      if (kb_iabs(kb_ix_coef(&e->idx, PROBE_VAR + d)) == 1)
        return d;
  int d = transposed_dim(e->a, nd, dj);
  if (d < 0)
    d = transposed_dim(e->b, nd, dj);
  if (d < 0)
    d = transposed_dim(e->c, nd, dj);
  return d < 0 && e->kind == LX_LOAD ? transposed_dim(e->idx.dyn, nd, dj) : d;
}

// The loops of dims d.. (the first loop made is parallel with par), then the stores.
static void ew_nest(KernelBuilder *kb, EwTile *t, LStmtList *into, int d, bool par) {
  const View *ov = t->ov;
  if (d == ov->ndim) {
    LIndex idx[TD_MAX_DIMS];
    memcpy(idx, t->idx, sizeof idx);
    if (t->di >= 0) {
      into = kb_step_loop(kb, into, t->ext[t->di], t->idx[t->di], 1, par, &idx[t->di]);
      into = kb_step_loop(kb, into, t->ext[t->dj], t->idx[t->dj], 1, par && t->ext[t->di] == 1, &idx[t->dj]);
    }
    for (int i = 0; i < t->ns->len; i++) {
      const Node *n = t->ns->data[i];
      TD_ASSERT(op_is_elementwise(n->op) && kb_same_shape(&n->out->view, ov));
      kb_store_node(kb, into, n, idx, kb_node_expr(kb, n, idx));
    }
    return;
  }
  if (d != t->di && d != t->dj) {
    int64_t S = ov->shape[d];
    ew_nest(kb, t, kb_step_loop(kb, into, S, kb_ix_const(0), 1, par, &t->idx[d]), d + 1, par && S == 1);
    return;
  }
  int64_t S = ov->shape[d], T = t->tile[d], nt = S / T;
  t->ext[d] = T;
  if (nt)
    ew_nest(kb, t, kb_step_loop(kb, into, nt, kb_ix_const(0), T, par, &t->idx[d]), d + 1, par && nt == 1);
  if (S % T) {  // the last tile, shorter
    t->idx[d] = kb_ix_const(nt * T);
    t->ext[d] = S % T;
    ew_nest(kb, t, into, d + 1, par && !nt);
  }
}

void ew_build(KernelBuilder *kb, const NodeList *ns) {
  const View *ov = &ns->data[0]->out->view;
  EwTile t = {.ns = ns, .ov = ov, .di = -1, .dj = -1};
  LIndex pidx[TD_MAX_DIMS];
  for (int d = 0; d < ov->ndim; d++) {
    pidx[d] = ov->shape[d] == 1 ? kb_ix_const(0) : kb_ix_var(PROBE_VAR + d);
    if (ov->shape[d] > 1)
      t.dj = d;
  }
  // probe the loads; the args and errors that registers are dropped again (they come
  // back in store order when the nest is built)
  int nargs = kb->k->args.len, nerr = kb->k->errors.len;
  for (int i = 0; i < ns->len && t.dj >= 0 && t.di < 0 && !kb->naive; i++)
    t.di = transposed_dim(kb_node_expr(kb, ns->data[i], pidx), ov->ndim, t.dj);
  kb->k->args.len = nargs;
  kb->k->errors.len = nerr;
  if (t.di < 0) {
    t.dj = -1;
  } else {  // the tile shape of the comment above, in elements of the (first) output
    int64_t es = dtype_size(ns->data[0]->out->dtype), tj = EW_ROW_BYTES / es, ti = EW_RUN_BYTES / es;
    while (ti > tj && ov->shape[t.di] / ti < EW_MIN_TILES)
      ti /= 2;
    t.tile[t.di] = ti;
    t.tile[t.dj] = tj;
  }
  ew_nest(kb, &t, &kb->k->body, 0, view_numel(*ov) >= PARALLEL_WORK);
}

// ============================================================================
// ONE: cat, stack, store (each alone in its kernel)
// ============================================================================
static void build_cat(KernelBuilder *kb, const Node *n) {
  bool stack = n->op == OP_STACK;
  int a = n->attr.dim;
  int64_t off = 0;
  for (int i = 0; i < n->nsrc; i++) {
    const Value *s = n->srcs[i];
    LIndex idx[TD_MAX_DIMS], oidx[TD_MAX_DIMS];
    int64_t work = view_numel(s->view);
    LStmtList *body = kb_nest(kb, &kb->k->body, s->view.ndim, s->view.shape, idx, work >= PARALLEL_WORK, NULL);
    for (int d = 0, k = 0; d < n->out->view.ndim; d++) {
      if (stack && d == a) {
        oidx[d] = kb_ix_const(i);
        continue;
      }
      oidx[d] = idx[k++];
      if (!stack && d == a)
        oidx[d].base += off;
    }
    if (!stack)
      off += s->view.shape[a];
    kb_store_node(kb, body, n, oidx, kb_value(kb, s, idx));
  }
}

// x[idx] = v or x[idx] op= v: srcs[0] the target view, srcs[1] the value.
static void build_store(KernelBuilder *kb, const Node *n) {
  const Value *t = n->srcs[0], *v = n->srcs[1];
  int buf = kb->buf_of[t->buf->id];
  TD_ASSERT(buf >= 0);
  LIndex idx[TD_MAX_DIMS], vidx[TD_MAX_DIMS];
  LStmtList *body =
      kb_nest(kb, &kb->k->body, t->view.ndim, t->view.shape, idx, view_numel(t->view) >= PARALLEL_WORK, NULL);
  // PyTorch's setitem drops the value's leading size-1 dims: align from the right
  if (!v->is_scalar) {
    int lead = t->view.ndim - v->view.ndim;
    for (int j = 0; j < v->view.ndim; j++)
      vidx[j] = (j + lead < 0 || v->view.shape[j] == 1) ? kb_ix_const(0) : idx[j + lead];
  }
  LExpr *val = kb_value(kb, v, vidx);
  if (n->attr.aug != OP_COUNT) {
    Value *both[2] = {(Value *)t, (Value *)v};
    DType cd = dtype_compute(kb_result_type(both, 2));
    if (n->attr.aug == OP_DIV && !dtype_is_float(cd))
      cd = DT_F32;
    LExpr *cur = kb_cast(kb, kb_value(kb, t, idx), cd);
    val = kb_arith(kb, (Op)n->attr.aug, cd, cur, kb_cast(kb, val, cd));
  }
  int arg = kb_arg(kb, buf, false, true);
  kb_push(kb, body, kb_store_stmt(kb, arg, kb_view_index(kb, &t->view, idx), kb_cast(kb, val, t->dtype)));
}

void ew_build_one(KernelBuilder *kb, const Node *n) {
  switch (n->op) {
  case OP_CAT: case OP_STACK: build_cat(kb, n); break;
  case OP_STORE: build_store(kb, n); break;
  case OP_INDEX_PUT: case OP_SCATTER: scatter_build(kb, n); break;
  default: td_unreachable();
  }
}
