// ir/fuse.c: groups materializing nodes into kernels (the fusion plan). For now each
// node is its own kernel, in node order; view values never reach here, so they can
// never cost a kernel. The fusing rules of DESIGN.md replace this one pass.
#include "ir/ir.h"

void fuse_graph(Graph *g) {
  for (int i = 0; i < g->nodes.len; i++) {
    g->nodes.data[i]->kernel = i;
    g->nodes.data[i]->mode = NM_STORED;
  }
  g->nkernels = g->nodes.len;
}

bool op_is_row(Op op) {
  switch (op) {
  case OP_SUM: case OP_MEAN: case OP_AMAX: case OP_AMIN: case OP_VAR: case OP_STD: case OP_LOGSUMEXP:
  case OP_PROD: case OP_ARGMAX: case OP_ARGMIN: case OP_ALL: case OP_ANY: case OP_MAX: case OP_MIN:
  case OP_SOFTMAX: case OP_LOG_SOFTMAX:
    return true;
  default:
    return false;
  }
}

bool op_is_elementwise(Op op) {
  return !op_is_row(op) && op != OP_MATMUL && op != OP_CAT && op != OP_STACK && op != OP_STORE;
}

KernelKind fuse_kernel_kind(const Graph *g, int kernel) {
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->kernel != kernel || n->mode == NM_INLINE)
      continue;
    if (n->op == OP_MATMUL)
      return KK_MATMUL;
    if (op_is_row(n->op))
      return KK_ROW;
    return op_is_elementwise(n->op) ? KK_EW : KK_ONE;
  }
  return KK_ONE;
}
