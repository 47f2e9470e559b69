// ir/scatter.c: the kernel builder's ONE kernels that write at run-time positions:
// index_put (x[idx] = v, index_put_, index_copy_, index_add_, index_fill_) and scatter
// (scatter_, scatter_add_, scatter_reduce_). Each walks the positions it writes (the
// node's out shape: the indexed result's shape, the index tensor's shape) and stores
// into its target's buffer (srcs[0]), which it owns no copy of: an in-place form on a
// parameter writes only those elements.
//
// Invariants: the dims along which two iterations can meet the same element (the index
// tensors' dims of an index_put, the scattered dim of a scatter) are walked by serial
// loops inside the others, and only the outermost of the others may be parallel, so
// iterations that meet run in order in one thread: an accumulating form adds every
// term, a writing one leaves the last write (PyTorch leaves repeats undefined there).
// Every index is checked (LX_CHECKED_INDEX): out of range raises the node's error, at
// its location, and the run exits 3.
#include "ir/kernel.h"

#include <string.h>

// Loops over shape: the dims not in `serial` first, in order (the first that loops is
// parallel when par), then the serial ones; size-1 dims get no loop.
static LStmtList *scatter_nest(KernelBuilder *kb, LStmtList *into, int nd, const int64_t *shape, uint32_t serial,
                               bool par, LIndex *idx) {
  for (int pass = 0; pass < 2; pass++)
    for (int d = 0; d < nd; d++) {
      if ((int)(serial >> d & 1) != pass)
        continue;
      into = kb_step_loop(kb, into, shape[d], kb_ix_const(0), 1, par && pass == 0, &idx[d]);
      if (shape[d] > 1)
        par = false;
    }
  return into;
}

// The storage element of t at ti, where a dim of size 1 still evaluates its checked
// index (valid, it is 0, and adds nothing): its check must not vanish with the dim.
static LIndex target_index(KernelBuilder *kb, const View *t, const LIndex *ti, uint32_t checked) {
  LIndex r = kb_view_index(kb, t, ti);
  for (int d = 0; d < t->ndim; d++)
    if ((checked >> d & 1) && t->shape[d] == 1)
      kb_ix_addmul(kb, &r, &ti[d], 1);
  return r;
}

// target[at] = val, or target[at] = target[at] op val (op: attr.aug).
static void put(KernelBuilder *kb, LStmtList *body, const Node *n, LIndex at, LExpr *val) {
  const Value *t = n->srcs[0];
  int buf = kb->buf_of[t->buf->id];
  TD_ASSERT(buf >= 0);
  if (n->attr.aug != OP_COUNT) {
    DType cd = dtype_compute(t->dtype);
    LExpr *cur = kb_cast(kb, kb_buf_load(kb, buf, at), cd);
    val = kb_arith(kb, (Op)n->attr.aug, cd, cur, kb_cast(kb, val, cd));
  }
  kb_buf_store(kb, body, buf, at, val);
}

// The message of index i's (at dim d) out-of-range error, PyTorch's per form.
static const char *put_message(KernelBuilder *kb, const Node *n, int i, int d, int64_t size) {
  switch (n->attr.form) {
  case IPF_INDEX_ADD: return "index out of range in self";
  case IPF_INDEX_COPY:
    return arena_printf(&kb->cx->arena, "index_copy_(): index %%lld is out of bounds for dimension %d with size %lld",
                        d, (long long)size);
  case IPF_INDEX_FILL: i = d; break;
  default: break;
  }
  return arena_printf(&kb->cx->arena, "index %%lld is out of bounds for dimension %d with size %lld", i,
                      (long long)size);
}

// srcs: the target view, the value (broadcast to the indexed shape, leading dims
// dropped as setitem does), the index tensors at the set bits of attr.dims. The out
// shape is the indexed result's: the broadcast index dims at the first indexed dim
// when the indexed dims are adjacent, else first (as advanced indexing reads).
static void build_index_put(KernelBuilder *kb, const Node *n) {
  const Value *t = n->srcs[0], *v = n->srcs[1];
  int nidx = n->nsrc - 2, pos[TD_MAX_DIMS], np = 0;
  for (int d = 0; d < t->view.ndim; d++)
    if (n->attr.dims >> d & 1)
      pos[np++] = d;
  TD_ASSERT(np == nidx && nidx >= 1);
  int nb = 0;
  int64_t bshape[TD_MAX_DIMS];
  for (int i = 0; i < nidx; i++)
    nb = n->srcs[i + 2]->view.ndim > nb ? n->srcs[i + 2]->view.ndim : nb;
  for (int k = 0; k < nb; k++)
    bshape[k] = 1;
  for (int i = 0; i < nidx; i++) {  // the index tensors' broadcast shape (sema checked it)
    const View *iv = &n->srcs[i + 2]->view;
    for (int k = 0; k < iv->ndim; k++)
      if (iv->shape[k] != 1)
        bshape[nb - iv->ndim + k] = iv->shape[k];
  }
  bool adjacent = pos[nidx - 1] - pos[0] == nidx - 1;
  int bstart = adjacent ? pos[0] : 0;
  View ovv = {.ndim = 0};  // the indexed shape (advanced indexing's): the iteration space
  if (!adjacent)
    for (int k = 0; k < nb; k++)
      ovv.shape[ovv.ndim++] = bshape[k];
  for (int d = 0; d < t->view.ndim; d++) {
    if (adjacent && d == pos[0])
      for (int k = 0; k < nb; k++)
        ovv.shape[ovv.ndim++] = bshape[k];
    if (!(n->attr.dims >> d & 1))
      ovv.shape[ovv.ndim++] = t->view.shape[d];
  }
  TD_ASSERT(ovv.ndim <= TD_MAX_DIMS);
  const View *ov = &ovv;
  uint32_t serial = 0;
  for (int k = 0; k < nb; k++)
    serial |= 1u << (bstart + k);
  LIndex idx[TD_MAX_DIMS], ti[TD_MAX_DIMS], vidx[TD_MAX_DIMS];
  LStmtList *body = scatter_nest(kb, &kb->k->body, ov->ndim, ov->shape, serial, view_numel(*ov) >= PARALLEL_WORK, idx);
  int o = 0;
  for (int d = 0; d < t->view.ndim; d++) {
    if (o == bstart)
      o += nb;
    if (!(n->attr.dims >> d & 1))
      ti[d] = idx[o++];
  }
  bool wrap = n->attr.form == IPF_SETITEM || n->attr.form == IPF_INDEX_FILL;
  for (int i = 0; i < nidx; i++) {
    const Value *ix = n->srcs[i + 2];
    LIndex ii[TD_MAX_DIMS];
    kb_broadcast_index(&ix->view, nb, idx + bstart, ii);
    int64_t size = t->view.shape[pos[i]];
    int err = kb_error(kb, n->loc, put_message(kb, n, i, pos[i], size));
    ti[pos[i]] = kb_dyn_index(kb_checked_index(kb, kb_value(kb, ix, ii), size, err, wrap));
  }
  if (!v->is_scalar) {
    int lead = ov->ndim - v->view.ndim;
    for (int j = 0; j < v->view.ndim; j++)
      vidx[j] = (j + lead < 0 || v->view.shape[j] == 1) ? kb_ix_const(0) : idx[j + lead];
  }
  put(kb, body, n, target_index(kb, &t->view, ti, n->attr.dims), kb_value(kb, v, vidx));
}

// srcs: the target, src (a tensor read at the index's position, or a number), the
// index; the target's attr.dim coordinate comes from the index, the others are the
// position's own. The out shape is the index's.
static void build_scatter(KernelBuilder *kb, const Node *n) {
  const Value *t = n->srcs[0], *s = n->srcs[1], *ix = n->srcs[2];
  const View *ov = &ix->view;
  int a = n->attr.dim;
  LIndex idx[TD_MAX_DIMS], ti[TD_MAX_DIMS];
  uint32_t serial = ov->ndim ? 1u << a : 0;
  LStmtList *body = scatter_nest(kb, &kb->k->body, ov->ndim, ov->shape, serial, view_numel(*ov) >= PARALLEL_WORK, idx);
  int64_t size = t->view.ndim ? t->view.shape[a] : 1;
  char *msg = arena_printf(&kb->cx->arena, "index %%lld is out of bounds for dimension %d with size %lld", a,
                           (long long)size);
  LExpr *chk = kb_checked_index(kb, kb_value(kb, ix, idx), size, kb_error(kb, n->loc, msg), false);
  for (int k = 0; k < t->view.ndim; k++)
    ti[k] = k == a ? kb_dyn_index(chk) : idx[k];
  LIndex at = target_index(kb, &t->view, ti, t->view.ndim ? 1u << a : 0);
  if (!t->view.ndim)  // a 0-d target: the index is still checked
    kb_ix_addmul(kb, &at, &(LIndex){.dyn = chk}, 1);
  put(kb, body, n, at, kb_value(kb, s, idx));
}

void scatter_build(KernelBuilder *kb, const Node *n) {
  switch (n->op) {
  case OP_INDEX_PUT: build_index_put(kb, n); break;
  case OP_SCATTER: build_scatter(kb, n); break;
  default: td_unreachable();
  }
}
