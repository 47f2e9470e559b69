// ir/graph.c: the graph IR's values and nodes, and its printed forms (--emit=ir, text
// and JSON, and --emit=dot), each with the fusion plan's reasons (ir/why.c's words). Invariants: every Value that is not a scalar has a Buffer; a view
// op never creates a Node, it only makes a new Value with another View of the same
// Buffer; nodes are created in topological order; a node's result is a fresh Buffer
// read through its contiguous View.
#include "ir/ir.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

Graph *graph_new(Ctx *cx, const char *name, Loc loc) {
  Graph *g = arena_alloc(&cx->arena, sizeof *g);
  g->cx = cx;
  g->name = name;
  g->loc = loc;
  return g;
}

static Value *new_value(Graph *g, DType dt, View v, Buffer *buf, Loc loc) {
  Value *val = arena_alloc(&g->cx->arena, sizeof *val);
  val->id = g->values.len;
  val->dtype = dt;
  val->view = v;
  val->buf = buf;
  val->loc = loc;
  vec_push(&g->cx->arena, &g->values, val);
  return val;
}

static Buffer *new_buffer(Graph *g, BufKind kind, DType dt, int64_t numel) {
  Buffer *b = arena_alloc(&g->cx->arena, sizeof *b);
  b->id = g->bufs.len;
  b->kind = kind;
  b->dtype = dt;
  b->numel = numel;
  b->param = -1;
  vec_push(&g->cx->arena, &g->bufs, b);
  return b;
}

Value *graph_param(Graph *g, const char *name, DType dt, int ndim, const int64_t *shape, bool mut, Loc loc) {
  View v = view_contiguous(ndim, shape);
  Buffer *b = new_buffer(g, BUF_INPUT, dt, view_numel(v));
  b->name = name;
  b->param = g->params.len;
  b->mut = mut;
  Value *val = new_value(g, dt, v, b, loc);
  val->name = name;
  b->own = val;
  vec_push(&g->cx->arena, &g->params, val);
  return val;
}

Value *graph_scalar(Graph *g, DType dt, double v, int64_t iv, Loc loc) {
  Value *val = new_value(g, dt, view_scalar(), NULL, loc);
  val->is_scalar = true;
  val->sval = v;
  val->ival = iv;
  return val;
}

Value *graph_view(Graph *g, const Value *src, View v, Loc loc) {
  TD_ASSERT(src->buf);
  return new_value(g, src->dtype, v, src->buf, loc);
}

Node *graph_node(Graph *g, Op op, DType out_dt, int ndim, const int64_t *shape, Value **srcs, int nsrc,
                 NodeAttr attr, Loc loc) {
  Node *n = arena_alloc(&g->cx->arena, sizeof *n);
  n->id = g->nodes.len;
  n->op = op;
  n->loc = loc;
  n->attr = attr;
  n->kernel = -1;
  n->nsrc = nsrc;
  n->srcs = arena_alloc(&g->cx->arena, sizeof(Value *) * (size_t)(nsrc > 0 ? nsrc : 1));
  for (int i = 0; i < nsrc; i++)
    n->srcs[i] = srcs[i];
  View v = view_contiguous(ndim, shape);
  Buffer *b = new_buffer(g, BUF_KERNEL, out_dt, view_numel(v));
  b->producer = n;
  n->out = new_value(g, out_dt, v, b, loc);
  n->out->node = n;
  b->own = n->out;
  vec_push(&g->cx->arena, &g->nodes, n);
  return n;
}

void graph_name(Graph *g, Value *v, const char *name) {
  if (!v->name)
    v->name = name;
  if (v->buf && v->buf->kind == BUF_KERNEL && !v->buf->name)
    v->buf->name = name;
  vec_push(&g->cx->arena, &g->named, ((NamedValue){name, v}));
}

void graph_output(Graph *g, Value *v) { vec_push(&g->cx->arena, &g->outputs, v); }

// Whether a value is kept: a parameter, a scalar, or over a buffer still produced.
static bool value_kept(const Value *v, const bool *live) {
  return !v->buf || v->buf->kind != BUF_KERNEL || live[v->buf->producer->id];
}

void graph_prune(Graph *g) {
  int n = g->nodes.len;
  bool *live = arena_alloc(&g->cx->arena, (size_t)(n ? n : 1));
  for (int i = 0; i < g->outputs.len; i++) {
    const Value *v = g->outputs.data[i];
    if (v->buf && v->buf->kind == BUF_KERNEL) live[v->buf->producer->id] = true;
  }
  for (int i = n - 1; i >= 0; i--) {  // a reader comes after what it reads
    Node *nd = g->nodes.data[i];
    if (op_is_store(nd->op) || op_may_raise(nd->op, nd->out->dtype)) live[i] = true;
    if (!live[i]) continue;
    for (int j = 0; j < nd->nsrc; j++) {
      const Buffer *b = nd->srcs[j]->buf;
      if (b && b->kind == BUF_KERNEL) live[b->producer->id] = true;
    }
  }
  int k = 0;
  for (int i = 0; i < n; i++)
    if (live[i]) g->nodes.data[k++] = g->nodes.data[i];
  if (k == n) return;
  g->nodes.len = k;
  k = 0;
  for (int i = 0; i < g->values.len; i++)
    if (value_kept(g->values.data[i], live)) g->values.data[k++] = g->values.data[i];
  g->values.len = k;
  k = 0;
  for (int i = 0; i < g->named.len; i++)
    if (value_kept(g->named.data[i].value, live)) g->named.data[k++] = g->named.data[i];
  g->named.len = k;
  k = 0;
  for (int i = 0; i < g->bufs.len; i++) {
    Buffer *b = g->bufs.data[i];
    if (b->kind != BUF_KERNEL || live[b->producer->id]) g->bufs.data[k++] = b;
  }
  g->bufs.len = k;
  // ids are positions again (fusion and the kernel builder index arrays by them)
  for (int i = 0; i < g->nodes.len; i++) g->nodes.data[i]->id = i;
  for (int i = 0; i < g->values.len; i++) g->values.data[i]->id = i;
  for (int i = 0; i < g->bufs.len; i++) g->bufs.data[i]->id = i;
}

bool graph_is_view_only(const Graph *g) { return g->nodes.len == 0; }

int matmul_nk(const Node *mm) { return mm->attr.nk ? mm->attr.nk : 1; }

int64_t matmul_k(const Node *mm, int64_t *kn) {
  const View *a = &mm->srcs[0]->view;
  int64_t k = 1, one[TD_MAX_DIMS];
  kn = kn ? kn : one;
  if (!mm->attr.nk) {
    kn[0] = a->ndim ? a->shape[a->ndim - 1] : 1;
    return kn[0];
  }
  for (int d = 0; d < a->ndim; d++)
    if (mm->attr.role[0][d] < 0)
      kn[-1 - mm->attr.role[0][d]] = a->shape[d];
  for (int q = 0; q < mm->attr.nk; q++)
    k *= kn[q];
  return k;
}

// The arithmetic of one node (graph_flops' count).
static int64_t node_flops(const Node *n) {
  int64_t out = view_numel(n->out->view);
  switch (n->op) {
  case OP_MATMUL:
    return td_sat_mul(td_sat_mul(2, out), matmul_k(n, NULL));
  case OP_SDPA: {  // both products, and the softmax's element each score
    const View *q = &n->srcs[0]->view, *k = &n->srcs[1]->view, *o = &n->out->view;
    int64_t E = q->shape[q->ndim - 1], S = k->shape[k->ndim - 2], Ev = o->shape[o->ndim - 1];
    return td_sat_mul(td_sat_mul(Ev ? out / Ev : 0, S), 2 * E + 2 * Ev + 1);
  }
  case OP_COPY: case OP_CLONE: case OP_TO: case OP_CAT: case OP_STACK: case OP_INDEX: case OP_INDEX_SELECT:
  case OP_GATHER: case OP_ZEROS: case OP_ONES: case OP_FULL: case OP_ARANGE: case OP_EYE:
    return 0;
  default: {
    int64_t in = n->nsrc && !n->srcs[0]->is_scalar ? view_numel(n->srcs[0]->view) : 0;
    return op_is_row(n->op) && in > out ? in : out;
  }
  }
}

int graph_buffer_uses(const Graph *g, const Buffer *b, const bool *skip) {
  int uses = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (skip && skip[n->id])
      continue;
    for (int s = 0; s < n->nsrc; s++)
      uses += n->srcs[s]->buf == b;
  }
  for (int i = 0; i < g->outputs.len; i++)
    uses += g->outputs.data[i]->buf == b;
  return uses;
}

int64_t graph_flops(const Graph *g) {
  int64_t flops = 0;
  for (int i = 0; i < g->nodes.len; i++)
    flops = td_sat_add(flops, node_flops(g->nodes.data[i]));
  return flops;
}

void graph_kernel_flops(const Graph *g, int64_t *per_kernel) {
  for (int k = 0; k < g->nkernels; k++)
    per_kernel[k] = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->kernel >= 0 && n->kernel < g->nkernels)
      per_kernel[n->kernel] = td_sat_add(per_kernel[n->kernel], node_flops(n));
  }
}

// ---- printing: the rows every form shares ----

typedef struct Row {
  const char *name;
  const Value *v;
} Row;

// Parameters, each binding in source order, then each output: what --emit=ir lists.
static int collect_rows(const Graph *g, Row *rows, int cap) {
  int n = 0;
  for (int i = 0; i < g->params.len && n < cap; i++)
    rows[n++] = (Row){g->params.data[i]->name, g->params.data[i]};
  for (int i = 0; i < g->named.len && n < cap; i++)
    rows[n++] = (Row){g->named.data[i].name, g->named.data[i].value};
  for (int i = 0; i < g->outputs.len && n < cap; i++) {
    char *name = arena_printf(&g->cx->arena, "out%d", i);
    rows[n++] = (Row){name, g->outputs.data[i]};
  }
  return n;
}

// A value the fusion plan computes inside kernels without storing it.
static bool value_fused(const Value *v) {
  return v->buf && v->buf->kind == BUF_KERNEL && v->buf->producer->mode != NM_STORED;
}

// A compile-time scalar is a buffer whose storage is "const" (LANGUAGE.md §10).
static const char *value_kind(const Value *v) {
  if (v->is_scalar)
    return "buffer";
  if (!v->buf || value_fused(v))
    return "fused";
  return v->buf->own == v ? "buffer" : "view";
}

static void print_storage(const Value *v, FILE *out) {
  if (v->is_scalar)
    fputs("const", out);
  else if (v->buf->kind == BUF_INPUT)
    fprintf(out, "input:%s", v->buf->name);
  else if (v->buf->kind == BUF_CONST)
    fputs("const", out);
  else
    fprintf(out, "kernel:k%d", v->buf->producer->kernel);
}

static void print_ints(FILE *out, const int64_t *xs, int n, const char *open, const char *close) {
  fputs(open, out);
  for (int i = 0; i < n; i++)
    fprintf(out, "%s%" PRId64, i ? ", " : "", xs[i]);
  fputs(close, out);
}


// The distinct source lines of kernel k's nodes (and of the ops they absorbed),
// ascending, comma-separated.
static void print_kernel_lines(const Graph *g, int k, FILE *out, const char *sep) {
  int lines[256], n = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *nd = g->nodes.data[i];
    if (nd->kernel != k)
      continue;
    for (int e = -1; e < nd->nlines; e++) {  // its own line, then those of the ops it absorbed
      int l = e < 0 ? loc_line(nd->loc) : nd->lines[e];
      bool dup = false;
      for (int j = 0; j < n; j++)
        dup |= lines[j] == l;
      if (!dup && n < 256)
        lines[n++] = l;
    }
  }
  for (int i = 1; i < n; i++)  // insertion sort: a handful of lines
    for (int j = i; j > 0 && lines[j - 1] > lines[j]; j--) {
      int t = lines[j];
      lines[j] = lines[j - 1];
      lines[j - 1] = t;
    }
  for (int i = 0; i < n; i++)
    fprintf(out, "%s%d", i ? sep : "", lines[i]);
}

const char *graph_buffer_name(const Graph *g, const Buffer *b) {
  if (b->name)
    return b->name;
  TD_ASSERT(b->kind == BUF_KERNEL && b->producer);
  return arena_printf(&g->cx->arena, "t%d", b->producer->id);
}

// A buffer a kernel writes and the function does not return (no output views it).
static bool buffer_intermediate(const Graph *g, const Buffer *b) {
  if (b->kind != BUF_KERNEL || b->producer->mode != NM_STORED || b->producer->op == OP_STORE ||
      b->producer->out->buf != b)  // placed in a stack's buffer (ir/place.c): unused
    return false;
  for (int i = 0; i < g->outputs.len; i++)
    if (g->outputs.data[i]->buf == b)
      return false;
  return true;
}

static int64_t buffer_bytes(const Buffer *b) { return td_sat_mul(b->numel, dtype_size(b->dtype)); }

typedef VEC(int) IntList;

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

// Per buffer (by id), the kernels reading it (an inline reader: the first kernel
// recomputing it), ascending and distinct: one pass over the nodes, then a sort per
// buffer, so printing every buffer's readers costs the graph's size, not its cube.
static IntList *buffer_readers(const Graph *g) {
  IntList *r = arena_alloc(&g->cx->arena, sizeof *r * (size_t)(g->bufs.len + 1));
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *nd = g->nodes.data[i];
    for (int s = 0; s < nd->nsrc; s++) {
      const Buffer *b = nd->srcs[s]->buf;
      IntList *l = b ? &r[b->id] : NULL;
      if (l && nd != b->producer && nd->kernel >= 0 && nd->kernel < g->nkernels &&
          (!l->len || l->data[l->len - 1] != nd->kernel))
        vec_push(&g->cx->arena, l, nd->kernel);
    }
  }
  for (int i = 0; i < g->bufs.len; i++) {
    IntList *l = &r[i];
    if (l->len < 2)  // (qsort of no list: NULL data, which qsort must not get)
      continue;
    qsort(l->data, (size_t)l->len, sizeof *l->data, cmp_int);
    int n = 0;
    for (int j = 0; j < l->len; j++)
      if (!n || l->data[n - 1] != l->data[j])
        l->data[n++] = l->data[j];
    l->len = n;
  }
  return r;
}

// Why a node's result is kept inside kernels (a fused value, or a view of one), or why
// it is stored (the result itself, not its views); NULL for any other value.
static const char *value_why(const Graph *g, const Value *v) {
  if (v->is_scalar || !v->buf || v->buf->kind != BUF_KERNEL)
    return NULL;
  const Node *n = v->buf->producer;
  if (n->mode == NM_STORED && v->buf->own != v)
    return NULL;
  if (n->mode == NM_INLINE)
    return "not stored: recomputed where it is read";
  if (n->mode == NM_LOCAL)
    return arena_printf(&g->cx->arena, "not stored: read only inside k%d", n->kernel);
  return arena_printf(&g->cx->arena, "stored: %s", why_text(g, n, n->stored));
}

static void print_value_why(const Graph *g, const Value *v, FILE *out) {
  const char *w = value_why(g, v);
  if (w)
    fprintf(out, "  # %s", w);
}

// The intermediate buffers: name, dtype, shape, bytes, the kernels writing and reading
// it, and why it is stored; then their total.
static void print_buffers(const Graph *g, FILE *out) {
  int count = 0, width = 4;
  int64_t total = 0;
  for (int i = 0; i < g->bufs.len; i++) {
    const Buffer *b = g->bufs.data[i];
    if (!buffer_intermediate(g, b))
      continue;
    count++;
    total = td_sat_add(total, buffer_bytes(b));
    int w = (int)strlen(graph_buffer_name(g, b));
    width = w > width ? w : width;
  }
  fprintf(out, "buffers: %d intermediate, %" PRId64 " bytes\n", count, total);
  const IntList *readers = count ? buffer_readers(g) : NULL;
  for (int i = 0; i < g->bufs.len; i++) {
    const Buffer *b = g->bufs.data[i];
    if (!buffer_intermediate(g, b))
      continue;
    const View *v = &b->own->view;
    fprintf(out, "  %-*s  %s", width, graph_buffer_name(g, b), dtype_name(b->dtype));
    print_ints(out, v->shape, v->ndim, "[", "]");
    fprintf(out, "  %" PRId64 " bytes  k%d ->", buffer_bytes(b), b->producer->kernel);
    const IntList *rs = &readers[b->id];
    for (int k = 0; k < rs->len; k++)
      fprintf(out, "%s k%d", k ? "," : "", rs->data[k]);
    if (!rs->len)
      fputs(" -", out);
    fputs("  # ", out);
    why_print(g, b->producer, b->producer->stored, out);
    fputc('\n', out);
  }
}

// prefix, then why kernel k starts; false (nothing printed) if it has no reason.
static bool print_kernel_why(const Graph *g, int k, const char *prefix, FILE *out) {
  const Node *root = fuse_kernel_root(g, k);
  if (!root)
    return false;
  fputs(prefix, out);
  why_print(g, root, root->split, out);
  return true;
}

void graph_print(const Graph *g, FILE *out) {
  fprintf(out, "fn %s\n", g->name);
  Row rows[512];
  int n = collect_rows(g, rows, 512), width = 4;
  for (int i = 0; i < n; i++)
    width = (int)strlen(rows[i].name) > width ? (int)strlen(rows[i].name) : width;
  for (int i = 0; i < n; i++) {
    const Value *v = rows[i].v;
    fprintf(out, "  %-*s  %-6s %s", width, rows[i].name, value_kind(v), dtype_name(v->dtype));
    print_ints(out, v->view.shape, v->view.ndim, "[", "]");
    if (v->is_scalar) {
      fprintf(out, " = %g\n", v->sval);
      continue;
    }
    if (value_fused(v)) {
      fprintf(out, "  (computed inside k%d)  line %d", v->buf->producer->kernel, loc_line(v->loc));
      print_value_why(g, v, out);
      fputc('\n', out);
      continue;
    }
    print_ints(out, v->view.strides, v->view.ndim, "  strides (", ")");
    fprintf(out, "  offset %" PRId64 "  storage ", v->view.offset);
    print_storage(v, out);
    fprintf(out, "  line %d", loc_line(v->loc));
    print_value_why(g, v, out);
    fputc('\n', out);
  }
  fprintf(out, "kernels: %d\n", g->nkernels);
  for (int k = 0; k < g->nkernels; k++) {
    fprintf(out, "  k%d:", k);
    for (int i = 0; i < g->nodes.len; i++)
      if (g->nodes.data[i]->kernel == k)
        fprintf(out, " %s", op_name(g->nodes.data[i]->op));
    fputs("  lines ", out);
    print_kernel_lines(g, k, out, ",");
    if (g->sched && g->sched[k])
      fprintf(out, "  schedule: %s", g->sched[k]);
    fputc('\n', out);
    if (print_kernel_why(g, k, "    # new kernel: ", out))
      fputc('\n', out);
  }
  print_buffers(g, out);
}

static void json_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(out, "\\%c", c);
    else if (c < 0x20)
      fprintf(out, "\\u%04x", c);
    else
      fputc(c, out);
  }
  fputc('"', out);
}

void graph_print_json(const Graph *g, FILE *out) {
  fputs("{\"function\": ", out);
  json_string(out, g->name);
  fputs(",\n \"values\": [", out);
  Row rows[512];
  int n = collect_rows(g, rows, 512);
  for (int i = 0; i < n; i++) {
    const Value *v = rows[i].v;
    fputs(i ? ",\n   {\"name\": " : "{\"name\": ", out);
    json_string(out, rows[i].name);
    fprintf(out, ", \"line\": %d, \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": ", loc_line(v->loc),
            value_kind(v), dtype_name(v->dtype));
    print_ints(out, v->view.shape, v->view.ndim, "[", "]");
    if (v->is_scalar) {
      fputs(", \"strides\": [], \"offset\": 0, \"storage\": \"const\"", out);
    } else if (!v->buf || value_fused(v)) {
      fputs(", \"strides\": null, \"offset\": null, \"storage\": null", out);
    } else {
      fputs(", \"strides\": ", out);
      print_ints(out, v->view.strides, v->view.ndim, "[", "]");
      fprintf(out, ", \"offset\": %" PRId64 ", \"storage\": \"", v->view.offset);
      print_storage(v, out);
      fputc('"', out);
    }
    fputs(", \"reason\": ", out);
    const char *w = value_why(g, v);
    if (w)
      json_string(out, w);
    else
      fputs("null", out);
    fputc('}', out);
  }
  fputs("],\n \"kernels\": [", out);
  for (int k = 0; k < g->nkernels; k++) {
    fprintf(out, "%s{\"name\": \"k%d\", \"ops\": [", k ? ",\n   " : "", k);
    bool first = true;
    for (int i = 0; i < g->nodes.len; i++)
      if (g->nodes.data[i]->kernel == k) {
        fprintf(out, "%s\"%s\"", first ? "" : ", ", op_name(g->nodes.data[i]->op));
        first = false;
      }
    fputs("], \"lines\": [", out);
    print_kernel_lines(g, k, out, ", ");
    fputc(']', out);
    if (g->sched && g->sched[k]) {
      fputs(", \"schedule\": ", out);
      json_string(out, g->sched[k]);
    }
    const Node *root = fuse_kernel_root(g, k);
    if (root) {
      fputs(", \"reason\": ", out);
      json_string(out, why_text(g, root, root->split));
    }
    fputc('}', out);
  }
  fputs("],\n \"buffers\": [", out);
  bool first = true;
  const IntList *readers = buffer_readers(g);
  for (int i = 0; i < g->bufs.len; i++) {
    const Buffer *b = g->bufs.data[i];
    if (!buffer_intermediate(g, b))
      continue;
    fputs(first ? "{\"name\": " : ",\n   {\"name\": ", out);
    first = false;
    json_string(out, graph_buffer_name(g, b));
    fprintf(out, ", \"dtype\": \"%s\", \"shape\": ", dtype_name(b->dtype));
    print_ints(out, b->own->view.shape, b->own->view.ndim, "[", "]");
    fprintf(out, ", \"bytes\": %" PRId64 ", \"kernel\": \"k%d\", \"readers\": [", buffer_bytes(b), b->producer->kernel);
    const IntList *rs = &readers[b->id];
    for (int k = 0; k < rs->len; k++)
      fprintf(out, "%s\"k%d\"", k ? ", " : "", rs->data[k]);
    fputs("], \"reason\": ", out);
    json_string(out, why_text(g, b->producer, b->producer->stored));
    fputc('}', out);
  }
  fputs("]}\n", out);
}

void graph_verify(const Graph *g) {
  for (int i = 0; i < g->values.len; i++) {
    const Value *v = g->values.data[i];
    TD_ASSERT(v->is_scalar || v->buf);
    TD_ASSERT(v->view.ndim >= 0 && v->view.ndim <= TD_MAX_DIMS);
    if (v->buf && view_numel(v->view) > 0) {
      int64_t lo, hi;
      TD_ASSERT(view_extent(v->view, &lo, &hi));
      TD_ASSERT(lo >= 0 && hi < v->buf->numel);
    }
  }
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    TD_ASSERT(n->out && n->out->node == n);
    for (int j = 0; j < n->nsrc; j++)
      TD_ASSERT(n->srcs[j] && n->srcs[j]->id < n->out->id);
  }
}

// ---- --emit=dot: the same graph for Graphviz, each kernel a cluster ----

// The dot node a value comes from: its parameter, its producing node, or a constant.
static void dot_source(const Value *v, FILE *out) {
  if (v->is_scalar)
    fprintf(out, "c%d", v->id);
  else if (v->buf->kind == BUF_INPUT)
    fprintf(out, "p%d", v->buf->param);
  else
    fprintf(out, "n%d", v->buf->producer->id);
}

// An edge that reads through a view is labelled with the view's projection.
static void dot_edge_label(const Value *v, FILE *out) {
  if (v->is_scalar || v->buf->own == v)
    return;
  fputs(" [label=\"", out);
  print_ints(out, v->view.shape, v->view.ndim, "[", "]");
  print_ints(out, v->view.strides, v->view.ndim, " (", ")");
  fprintf(out, "+%" PRId64 "\", style=dashed]", v->view.offset);
}

void graph_print_dot(const Graph *g, FILE *out) {
  fprintf(out, "digraph \"%s\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n", g->name);
  for (int i = 0; i < g->params.len; i++) {
    const Value *p = g->params.data[i];
    fprintf(out, "  p%d [shape=ellipse, label=\"%s: %s", i, p->name, dtype_name(p->dtype));
    print_ints(out, p->view.shape, p->view.ndim, "[", "]\"];\n");
  }
  for (int k = 0; k < g->nkernels; k++) {
    fprintf(out, "  subgraph cluster_k%d {\n    label=\"k%d (lines ", k, k);
    print_kernel_lines(g, k, out, ",");
    fputc(')', out);
    print_kernel_why(g, k, "\\nnew kernel: ", out);
    fputs("\";\n", out);
    for (int i = 0; i < g->nodes.len; i++) {
      const Node *n = g->nodes.data[i];
      if (n->kernel != k)
        continue;
      fprintf(out, "    n%d [label=\"%s\\n%s", n->id, op_name(n->op), dtype_name(n->out->dtype));
      print_ints(out, n->out->view.shape, n->out->view.ndim, "[", "]");
      if (n->mode == NM_STORED && n->op != OP_STORE) {
        fputs("\\nstored: ", out);
        why_print(g, n, n->stored, out);
      }
      fputc('"', out);
      fputs(n->mode == NM_STORED ? "];\n" : ", style=dashed];\n", out);
    }
    fputs("  }\n", out);
  }
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    for (int j = 0; j < n->nsrc; j++) {
      const Value *s = n->srcs[j];
      if (s->is_scalar)
        fprintf(out, "  c%d [shape=plaintext, label=\"%g\"];\n", s->id, s->sval);
      fputs("  ", out);
      dot_source(s, out);
      fprintf(out, " -> n%d", n->id);
      dot_edge_label(s, out);
      fputs(";\n", out);
    }
  }
  for (int i = 0; i < g->outputs.len; i++) {
    const Value *v = g->outputs.data[i];
    fprintf(out, "  out%d [shape=ellipse];\n  ", i);
    dot_source(v, out);
    fprintf(out, " -> out%d", i);
    dot_edge_label(v, out);
    fputs(";\n", out);
  }
  fputs("}\n", out);
}
