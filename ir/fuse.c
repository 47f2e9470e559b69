// ir/fuse.c: groups materializing nodes into kernels (the fusion plan). For now each
// node is its own kernel, in node order; view values never reach here, so they can
// never cost a kernel. The fusing rules of DESIGN.md replace this one pass.
#include "ir/ir.h"

void fuse_graph(Graph *g) {
  for (int i = 0; i < g->nodes.len; i++)
    g->nodes.data[i]->kernel = i;
  g->nkernels = g->nodes.len;
}
