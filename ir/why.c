// ir/why.c: the words of the fusion plan's reasons (ir/ir.h's FuseWhy), one line each,
// for --emit=ir and --emit=dot. Only words: every decision and every number comes from
// ir/fuse.c, which records them where it decides. The text never holds a double quote
// (Graphviz labels carry it as is).
#include "ir/ir.h"

#include <inttypes.h>
#include <stdlib.h>

// A node the reason is about: "mean at line 2 (k0)".
static void ref(const Graph *g, int id, FILE *out) {
  if (id < 0 || id >= g->nodes.len) {
    fputs("?", out);
    return;
  }
  const Node *n = g->nodes.data[id];
  fprintf(out, "%s at line %d", n->op == OP_STORE ? "the store" : op_name(n->op), loc_line(n->loc));
  if (n->kernel >= 0)
    fprintf(out, " (k%d)", n->kernel);
}

static int kernel_of(const Graph *g, int id) {
  return id >= 0 && id < g->nodes.len ? g->nodes.data[id]->kernel : -1;
}

static void shape(const Node *n, FILE *out) {
  fputc('[', out);
  for (int d = 0; d < n->out->view.ndim; d++)
    fprintf(out, "%s%" PRId64, d ? ", " : "", n->out->view.shape[d]);
  fputc(']', out);
}

void why_print(const Graph *g, const Node *n, FuseWhy w, FILE *out) {
  switch (w.code) {
  case FW_NONE: fputs("-", out); return;
  case FW_OUTPUT: fputs("the function returns it", out); return;
  case FW_STORE_TARGET: fputs("a store writes into it", out); return;
  case FW_UNREAD: fputs("nothing reads it; kept because computing it may raise", out); return;
  case FW_TREE: fprintf(out, "its inline expression has %d ops, more than %d", w.cost, w.limit); return;
  case FW_MATMUL_READ:
    fputs("read by ", out);
    ref(g, w.node, out);
    fputs(", which reads its operands from memory", out);
    return;
  case FW_GATHER_READ:
    fputs("read at data-dependent positions by ", out);
    ref(g, w.node, out);
    return;
  case FW_ATTN_READ:
    fputs("read as query, key or value by ", out);
    ref(g, w.node, out);
    fputs(" (each element by many rows)", out);
    return;
  case FW_VIEW_COPY:
    fputs("read by ", out);
    ref(g, w.node, out);
    fputs(" through a view that does not map onto its elements", out);
    return;
  case FW_RAISES_PART:
    fputs("it may raise, and ", out);
    ref(g, w.node, out);
    fputs(" reads only part of it", out);
    return;
  case FW_STORE_BETWEEN:
    fputs("store in between: ", out);
    ref(g, w.other, out);
    fputs(" writes what it reads before ", out);
    ref(g, w.node, out);
    fputs(" reads it", out);
    return;
  case FW_STORE_VALUE:
    fputs("the value of ", out);
    ref(g, w.node, out);
    fputs(", reading the stored-into tensor at other elements", out);
    return;
  case FW_INDEX_WRITE:
    fputs("read by ", out);
    ref(g, w.node, out);
    fputs(", which writes the tensor it reads at run-time positions", out);
    return;
  case FW_RECOMPUTE:
    if (w.bcast)
      fputs("read through a broadcast", out);
    else
      fprintf(out, "read %d times", w.n);
    if (w.cost > w.limit)
      fprintf(out, " and costs %d ops to recompute (more than %d)", w.cost, w.limit);
    else
      fprintf(out, " and recomputing costs %d transcendental ops (more than %d)", w.trans, w.tlimit);
    return;
  case FW_NESTED_REDUCED:
    fputs("reduced and read again, it would recompute ", out);
    ref(g, w.node, out);
    fputs(", reduced and read again too (a residual stream)", out);
    return;
  case FW_MATMUL_EPILOGUE:
    fputs("reduced and read again, it reads ", out);
    ref(g, w.node, out);
    fputs(", read by nothing else: stored as that matmul's epilogue instead", out);
    return;
  case FW_PACK_EPILOGUE:
    fputs("packed by a matmul, it reads ", out);
    ref(g, w.node, out);
    fputs(", read by nothing else, and ", out);
    ref(g, w.other, out);
    fputs(" of its size: stored as that matmul's epilogue over it (one of the two live, not both and the pack)", out);
    return;
  case FW_READ_OUTSIDE:
    fprintf(out, "read by another kernel: ");
    ref(g, w.node, out);
    return;
  case FW_SCAN: fputs("a scan's result is always stored (its readers read it from memory)", out); return;
  case FW_OWN: fprintf(out, "%s writes its result itself", op_name(n->op)); return;
  case FW_PIECE_READ:
  case FW_PIECE_VIEW:
    fputs(op_class(n->op) == OC_JOIN ? "read by " : "it reads a cat or stack piece by piece, and is read by ", out);
    ref(g, w.node, out);
    fputs(w.code == FW_PIECE_READ ? ", which is no elementwise op to split where the pieces change"
                                  : " through a view that splits the dim its pieces change along",
          out);
    return;
  case FW_PIECE_STORES:
    fputs("recomputed piece by piece, it would store ", out);
    ref(g, w.node, out);
    fputs(", else computed inline", out);
    return;
  case FW_K_MATMUL: fputs("a matmul starts a kernel", out); return;
  case FW_K_ROW_NEW:
    fputs(op_is_scan(n->op) ? "no earlier scan runs over the same rows" : "no earlier kernel reduces the same rows", out);
    return;
  case FW_K_ROW_FEEDS:
    fputs("reduction feeds a reduction over the same rows: it reads ", out);
    ref(g, w.node, out);
    return;
  case FW_K_ROW_CLOSED:
    fprintf(out, "k%d, over the same rows, already ends in an elementwise epilogue", kernel_of(g, w.node));
    return;
  case FW_K_SCAN_MIX:
    fprintf(out, "scans and other row ops keep apart (k%d is over the same rows)", kernel_of(g, w.node));
    return;
  case FW_K_READ_BETWEEN:
    fprintf(out, "joining k%d would move it past ", kernel_of(g, w.node));
    ref(g, w.other, out);
    fputs(", which reads it", out);
    return;
  case FW_K_STORE_BETWEEN:
    fprintf(out, "store in between: joining k%d would move it past ", kernel_of(g, w.node));
    ref(g, w.other, out);
    fprintf(out, ", which writes a tensor k%d reads", kernel_of(g, w.node));
    return;
  case FW_K_EW: fputs("elementwise: it reads no reduction or matmul it could follow", out); return;
  case FW_K_AFTER_SCAN:
    fputs("it reads the scan ", out);
    ref(g, w.node, out);
    fputs(", whose kernel takes no epilogue", out);
    return;
  case FW_K_GATHER:
    fprintf(out, "%s reads k%d at data-dependent positions: no epilogue", op_name(n->op), kernel_of(g, w.node));
    return;
  case FW_K_SHAPE: {
    const Node *k = w.node >= 0 && w.node < g->nodes.len ? g->nodes.data[w.node] : NULL;
    fputs("its shape ", out);
    shape(n, out);
    if (k && k->op == OP_MATMUL)
      fprintf(out, " is not the matmul's of k%d", k->kernel);
    else
      fprintf(out, " is neither the row input's nor the reduced one of k%d", k ? k->kernel : -1);
    return;
  }
  case FW_K_OFF_ROW:
    fputs("it reads ", out);
    ref(g, w.node, out);
    fputs(w.node >= 0 && g->nodes.data[w.node]->op == OP_MATMUL ? " at another element than the matmul's"
                                                                  : " off the current row",
          out);
    return;
  case FW_K_PIECES:
    fputs("it reads ", out);
    ref(g, w.node, out);
    fputs(" piece by piece: its loops split where the pieces change, in a kernel of its own", out);
    return;
  case FW_K_RECUR:
    fprintf(out, "a recurrence: %d steps, each row of the state stepped in a loop, into the stack n%d", w.n, w.node);
    return;
  case FW_K_ALONE:
    fprintf(out, "%s is a kernel of its own", n->op == OP_STORE ? "a store" : op_name(n->op));
    return;
  case FW_COUNT: break;
  }
  td_unreachable();
}

const char *why_text(const Graph *g, const Node *n, FuseWhy w) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  TD_ASSERT(f);
  why_print(g, n, w, f);
  fclose(f);
  const char *s = arena_strndup(&g->cx->arena, buf, len);
  free(buf);
  return s;
}
