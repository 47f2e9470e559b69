// ir/place.c: results computed in place inside a stack or cat (fuse_place, run by
// fuse_graph once the plan is made). A part of `torch.stack(ys)` or `torch.cat(ys)`
// that is the whole stored result of a node read by nothing but the join is written by
// that node's kernel straight into its slice of the join's buffer, so the parts never
// exist apart (a scan written step by step keeps T step outputs alive until the stack
// at the end: now they are the stack) and the join copies nothing for them.
//
// The rewrite: the node's result (and the join's operand, the only other value over
// the node's buffer) become views of the join's buffer at the slice's offset; the
// node's own buffer is left unused (its producer's result no longer names it). The
// join's kernel (ir/ew.c's build_cat) skips the parts already in place; when every part
// is, it is an empty kernel.
//
// Invariants kept: a part is placed only when
//   - its node is NM_STORED in a kernel before the join's, owns its buffer, and is an
//     elementwise kernel's node (ir/ew.c stores through the result's view), of the
//     join's dtype, not complex. Not a matmul's: the CPU GEMM's vector stores may run
//     past a result that ends its buffer, which a slice need not. (A recurrence's
//     outputs, ir/recur.c, go into the stack without this.);
//   - the join's operand covers the node's whole buffer and walks it with the slice's
//     strides (dims of size 1 aside), so buffer element e is slice element e;
//   - nothing else reads or writes the node's buffer (no other operand, store target or
//     output over it), and no other part of the join is the same node;
//   - the join's buffer is its own (not an output view of a parameter) and contiguous.
// The join's result is written before its own kernel runs; nothing reads it before,
// and the program's buffer lifetimes (ir/share.c) follow the loop IR, which sees it.
#include "ir/ir.h"

// Whether part p of join j (its operand v) lies in j's buffer as one piece, and where:
// *base gets the join-buffer offset of the part's buffer element 0.
static bool part_slice(const Node *j, const Value *v, int64_t off_a, int64_t *base) {
  const View *ov = &j->out->view;
  int a = j->attr.dim;
  bool stack = j->op == OP_STACK;
  if (v->view.ndim != ov->ndim - (stack ? 1 : 0))
    return false;
  int64_t at = off_a * ov->strides[a];
  for (int k = 0; k < v->view.ndim; k++) {
    int ko = stack && k >= a ? k + 1 : k;
    if (v->view.shape[k] > 1 && v->view.strides[k] != ov->strides[ko])
      return false;
  }
  *base = at - v->view.offset;
  return *base >= 0;
}

static bool placeable_node(const Graph *g, const Node *j, const Value *v) {
  if (!v->buf || v->buf->kind != BUF_KERNEL || v->cplx || v->dtype != j->out->dtype)
    return false;
  const Node *n = v->buf->producer;
  if (!n || n == j || n->mode != NM_STORED || op_is_store(n->op) || n->out->buf != v->buf || n->out->cplx)
    return false;
  if (n->kernel < 0 || n->kernel >= j->kernel || n->out->view.offset != 0)
    return false;
  KernelKind kk = fuse_kernel_kind(g, n->kernel);
  if (!op_is_elementwise(n->op) || kk != KK_EW)
    return false;
  return view_numel(v->view) == v->buf->numel;
}

static void place_join(Graph *g, Node *j) {
  const View *ov = &j->out->view;
  if (j->out->cplx || ov->offset != 0 || !view_is_contiguous(*ov) || j->out->buf->producer != j)
    return;
  int a = j->attr.dim;
  int64_t off_a = 0;
  for (int p = 0; p < j->nsrc; p++) {
    Value *v = j->srcs[p];
    int64_t step = j->op == OP_STACK ? 1 : (v->view.ndim > a ? v->view.shape[a] : 0), base;
    bool ok = !v->is_scalar && placeable_node(g, j, v) && part_slice(j, v, off_a, &base) &&
              graph_buffer_uses(g, v->buf, NULL) == 1;
    off_a += step;
    if (!ok)
      continue;
    Node *n = v->buf->producer;  // (its result at offset 0: placeable_node; v may be it)
    v->buf = j->out->buf;
    v->view.offset += base;
    n->out->buf = j->out->buf;
    n->out->view.offset = base;
  }
}

void fuse_place(Graph *g) {
  for (int i = 0; i < g->nodes.len; i++) {
    Node *j = g->nodes.data[i];
    if (op_class(j->op) == OC_JOIN && j->mode == NM_STORED && j->nsrc > 0)
      place_join(g, j);
  }
}
