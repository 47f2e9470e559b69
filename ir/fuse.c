// ir/fuse.c: the fusion plan. Fills Node.mode, Node.kernel and Graph.nkernels in three
// steps over the nodes in creation (topological) order:
//  1. inline: an elementwise-class node that no output returns and no store writes
//     into becomes NM_INLINE when every reader can recompute it at the index it reads:
//     the reader is not a matmul (but a CPU matmul's operand it packs: matmul_packs),
//     does not gather from it, is no attention reading it
//     as query, key or value (each element is read by many rows), its View decomposes onto
//     the node's contiguous result (view_decompose), recomputing is cheap when it
//     happens more than once (several reads or a broadcast read: at most INLINE_MAX_OPS
//     ops and one transcendental; any inline expression at most INLINE_MAX_TREE ops),
//     a node that can raise is read whole, no store between
//     the node and a reader writes a buffer its expression reads, and a store's value
//     reads the stored-into buffer only through the store's own View (an index_put's or
//     scatter's operands not at all).
//  2. kernels: every other node roots a kernel or joins one (ir.h's kernel kinds). A row
//     node joins an open ROW kernel of the same input shape and dims that it does not
//     read; an elementwise root joins the ROW or MATMUL kernel it reads, as an epilogue,
//     when its shape is the row input's, the reduced one or the matmul's, and every
//     read of that kernel's values (through inline nodes, views composed) stays on the
//     current row / is the same index. Scans (cumsum ...) keep ROW kernels of their
//     own: they join only scans, take no epilogue (their readers read them from
//     memory) and are always stored. Joining moves a kernel's execution to its last
//     node; that is allowed only when no node in between reads the kernel's values and
//     no store in between writes a buffer the kernel reads (PyTorch's order of stores).
//     A sort and an argsort of one input and order share a kernel where the first runs.
//     An attention (scaled_dot_product_attention) is a kernel alone. On a CPU, a store
//     into the whole last result of a MATMUL kernel (out += identity) joins it as an
//     epilogue (store_fits), and the result read after it may be written over the
//     stored-into buffer (store_results_over); so does a store into the whole result of
//     an EW kernel (y.clamp_(0, 6) after y = x * w + b), which then writes each element
//     once, the stored value (ir/ew.c); a convolution's zero padding read by its
//     contraction alone is inline (plan_pads: ir/gemm.c packs from the unpadded input).
//  3. modes: a row node or matmul read only by its own kernel (and not returned) is
//     NM_LOCAL, other roots NM_STORED; kernels are numbered by execution position; an
//     inline node's kernel is the first kernel that recomputes it.
// Each rule that stores a result or starts a kernel records why, where it decides
// (Node.stored, Node.split: ir/ir.h's FuseWhy), for --emit=ir and --emit=dot.
// Invariants kept: outputs and store targets are NM_STORED; an NM_LOCAL value is read
// only inside its kernel; every kernel runs after the kernels it reads and in the order
// of the stores around it; views never cost a kernel (they make no nodes).
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

// INLINE_MAX_TREE bounds every inline expression (ops counted as the tree its walks and
// the kernel builders' rebuilds visit): a longer chain is stored where it exceeds it, so
// fusion and kernel building stay linear in the program and their recursion shallow.
enum { INLINE_MAX_OPS = 8, INLINE_MAX_TRANSCENDENTAL = 1, INLINE_MAX_TREE = 64 };

// ---- views: how a reader's View walks a producer's contiguous result ----

// r decomposes and reads every element of the producer (each producer dim is walked
// whole by one reader dim): recomputing there computes everything.
bool fuse_view_covers(View r, int pndim, const int64_t *pshape) {
  ViewMap m;
  if (!view_decompose(r, pndim, pshape, &m) || view_numel(r) == 0)
    return false;
  for (int q = 0; q < pndim; q++) {
    if (pshape[q] <= 1)
      continue;
    bool whole = false;
    for (int d = 0; d < r.ndim; d++)
      whole |= m.pdim[d] == q && (m.mult[d] == 1 || m.mult[d] == -1) && r.shape[d] == pshape[q];
    if (!whole)
      return false;
  }
  return true;
}

// src broadcast to shape (right-aligned, stride 0 where it is broadcast).
static View expand_to(View v, int ndim, const int64_t *shape) {
  TD_ASSERT(v.ndim <= ndim);
  View r = {.ndim = ndim, .offset = v.offset};
  for (int i = 0; i < ndim; i++) {
    int j = i - (ndim - v.ndim);
    r.shape[i] = shape[i];
    if (j >= 0 && v.shape[j] == shape[i]) {
      r.strides[i] = v.strides[j];
    } else {
      TD_ASSERT(j < 0 || v.shape[j] == 1);
      r.strides[i] = 0;
    }
  }
  return r;
}

// at reads a producer of shape pshape; inner reads some buffer in the producer's index
// space. The composite reads that buffer in at's index space. false: at doesn't decompose.
static bool compose(View at, int pndim, const int64_t *pshape, View inner, View *out) {
  ViewMap m;
  if (!view_decompose(at, pndim, pshape, &m))
    return false;
  TD_ASSERT(inner.ndim == pndim);
  View r = {.ndim = at.ndim, .offset = inner.offset};
  for (int q = 0; q < pndim; q++)
    r.offset += inner.strides[q] * m.start[q];
  for (int d = 0; d < at.ndim; d++) {
    r.shape[d] = at.shape[d];
    r.strides[d] = m.pdim[d] >= 0 ? inner.strides[m.pdim[d]] * m.mult[d] : 0;
  }
  *out = r;
  return true;
}

static bool same_shape(int na, const int64_t *a, int nb, const int64_t *b) {
  if (na != nb)
    return false;
  for (int i = 0; i < na; i++)
    if (a[i] != b[i])
      return false;
  return true;
}

// v reads a buffer of the same shape at the same index (size-1 dims don't matter).
static bool is_identity(View v, int ndim, const int64_t *shape) {
  if (!same_shape(v.ndim, v.shape, ndim, shape))
    return false;
  if (view_numel(v) == 0)
    return true;
  View c = view_contiguous(ndim, shape);
  if (v.offset != 0)
    return false;
  for (int d = 0; d < ndim; d++)
    if (shape[d] > 1 && v.strides[d] != c.strides[d])
      return false;
  return true;
}

// ---- the planner's state ----

typedef VEC(int) IntList;

typedef struct Edge {
  int reader;  // node index
  int src;     // operand index
} Edge;

typedef struct Kern {
  int id;
  KernelKind kind;
  int pos;        // the node position it executes at: its last member
  IntList members;
  bool closed;    // ROW: an epilogue joined, no more row nodes
  bool scan;      // ROW: of scans only (no epilogue)
  int in_ndim;    // ROW: the row input's shape and reduced dims
  int64_t in_shape[TD_MAX_DIMS];
  uint32_t dims;
  const Node *mm; // MATMUL: the matmul
} Kern;

typedef struct Fuse {
  Graph *g;
  Ctx *cx;
  int n;
  VEC(Edge) *readers;  // per node: the (reader, operand) edges reading its buffer
  bool *output;        // per node: an output views its buffer
  bool *target;        // per node: a store writes into its buffer
  bool *inl;           // per node: NM_INLINE
  int *size, *trans;   // per node: ops and transcendental ops of its inline expression
  bool *raises;        // per node: its inline expression can raise
  int *rered;          // per node: an inline node of its expression (itself included) that a
                       // reduction and another reader both read, or -1 (see inline_why)
  IntList *deps;       // per non-inline node: the non-inline nodes its expression reads
  IntList *bufs;       // per node: the buffers its expression reads (ids)
  int *kern;           // per node: index into kerns (non-inline)
  int *padmm;          // per node: a cat of a convolution's zero padding, the contraction
                       // that reads it (plan_pads), else -1
  int *pieces;         // per node: an inline cat or stack its expression recomputes piece by
                       // piece (itself, when it is one), else -1
  uint32_t *pdims;     // per node: the dims of its result along which such a cat's pieces change
  int *veto;           // per join: recomputing it piece by piece would store this node, else -1
  VEC(Kern *) kerns;
  // row layout of kernel values: per node, for row dims k, the stride of row coordinate
  // k in its own buffer (ROWV), or full = it has the row input's shape
  bool *full;
  int64_t (*row_coef)[TD_MAX_DIMS];
} Fuse;

static Node *node_of(const Fuse *f, int i) { return f->g->nodes.data[i]; }

static bool is_join(Op op) { return op_class(op) == OC_JOIN; }

static int producer_of(const Value *v) {
  return v && v->buf && v->buf->kind == BUF_KERNEL && v->buf->producer ? v->buf->producer->id : -1;
}

static void push_unique(Ctx *cx, IntList *l, int x) {
  for (int i = 0; i < l->len; i++)
    if (l->data[i] == x)
      return;
  vec_push(&cx->arena, l, x);
}

static bool list_has(const IntList *l, int x) {
  for (int i = 0; i < l->len; i++)
    if (l->data[i] == x)
      return true;
  return false;
}

// ---- walking an expression through its inline nodes ----

// One read at the leaves of an expression: a buffer (of a non-inline node, a
// parameter, a constant), the View through which the expression's root index space
// reads it (known = false when an op in between reads at data-dependent or
// op-specific positions: gathers, cat, matmul).
typedef struct Leaf {
  const Value *src;
  View v;
  bool known;
} Leaf;

typedef void (*LeafFn)(Fuse *f, void *ctx, const Leaf *leaf);

typedef struct Walk {
  Fuse *f;
  LeafFn fn;
  void *ctx;
  int mark;  // >= 0: record this kernel in the inline nodes walked through
} Walk;

static void walk_src(Walk *w, const Value *src, View sv, bool known);

// The reads of node n's operands, each in n's iteration space (its result's shape, or
// a row node's input shape).
static void walk_operands(Walk *w, const Node *n, bool known) {
  for (int s = 0; s < n->nsrc; s++) {
    const Value *src = n->srcs[s];
    if (src->is_scalar)
      continue;
    if (op_is_pointwise(n->op))
      walk_src(w, src, expand_to(src->view, n->out->view.ndim, n->out->view.shape), known);
    else
      walk_src(w, src, src->view, known && op_is_row(n->op));
  }
}

static void walk_src(Walk *w, const Value *src, View sv, bool known) {
  int p = producer_of(src);
  if (p < 0 || !w->f->inl[p]) {
    Leaf leaf = {src, sv, known};
    w->fn(w->f, w->ctx, &leaf);
    return;
  }
  Node *pn = node_of(w->f, p);
  if (w->mark >= 0 && (pn->kernel < 0 || w->mark < pn->kernel))
    pn->kernel = w->mark;
  const View *pv = &pn->out->view;
  for (int s = 0; s < pn->nsrc; s++) {
    const Value *s2 = pn->srcs[s];
    if (s2->is_scalar)
      continue;
    bool k2 = known && op_is_pointwise(pn->op);
    View c = s2->view;
    if (k2) {
      View inner = expand_to(s2->view, pv->ndim, pv->shape);
      k2 = compose(sv, pv->ndim, pv->shape, inner, &c);
    }
    walk_src(w, s2, c, k2);
  }
}

// The iteration-space View of operand s of a root node (what walk_operands uses).
static void walk_node(Fuse *f, const Node *n, LeafFn fn, void *ctx, int mark) {
  Walk w = {f, fn, ctx, mark};
  walk_operands(&w, n, true);
}

static void collect_leaf(Fuse *f, void *ctx, const Leaf *leaf) {
  int i = *(int *)ctx;
  push_unique(f->cx, &f->bufs[i], leaf->src->buf->id);
  int p = producer_of(leaf->src);
  if (p >= 0 && f->deps)
    push_unique(f->cx, &f->deps[i], p);
}

// ---- a convolution's zero padding, packed by the convolution ----
// F.conv's zero padding (ir/build_conv.c: a cat of zero fulls around the input, one dim
// after another from the last) read only by a CPU contraction as its B is never stored:
// its cats become NM_INLINE and ir/gemm.c packs the windows from the unpadded input,
// writing zeros where a window leaves it (or copies the padded input into a temp of its
// own where its packing does not clip). The input itself is then stored (the packing
// reads it from memory).

static bool zero_full(const Value *v) {
  const Node *n = v->buf && v->buf->kind == BUF_KERNEL ? v->buf->producer : NULL;
  return n && (n->op == OP_ZEROS || (n->op == OP_FULL && n->attr.lo == 0 && n->attr.ilo == 0));
}

// One zero pad along a cat's dim: its one operand that is no zero full (*mid) and the
// zeros before it; false when the cat is no such pad.
static bool pad_cat(const Node *c, const Value **mid, int64_t *left) {
  if (c->op != OP_CAT || c->nsrc < 2 || c->nsrc > 3)
    return false;
  int m = -1;
  int64_t l = 0;
  for (int s = 0; s < c->nsrc; s++) {
    if (c->srcs[s]->is_scalar)
      return false;
    if (zero_full(c->srcs[s]))
      l += m < 0 ? c->srcs[s]->view.shape[c->attr.dim] : 0;
    else if (m >= 0)
      return false;
    else
      m = s;
  }
  if (m < 0)
    return false;
  *mid = c->srcs[m], *left = l;
  return true;
}

// The cat whose result is mid, itself (the whole of it), else NULL: the next pad inward.
static const Node *inner_cat(const Value *mid) {
  const Node *in = mid->buf && mid->buf->kind == BUF_KERNEL ? mid->buf->producer : NULL;
  return in && in->op == OP_CAT && in->out == mid ? in : NULL;
}

const Value *fuse_pad_chain(const Value *b, int64_t *pl) {
  const Node *c = b && b->buf && b->buf->kind == BUF_KERNEL ? b->buf->producer : NULL;
  if (!c || c->op != OP_CAT)
    return NULL;
  int nd = c->out->view.ndim;
  for (int d = 0; d < TD_MAX_DIMS; d++)
    pl[d] = 0;
  for (int depth = 0; depth < TD_MAX_DIMS; depth++) {
    const Value *mid;
    int64_t left;
    if (!pad_cat(c, &mid, &left) || mid->view.ndim != nd)
      return NULL;
    pl[c->attr.dim] += left;
    if (!inner_cat(mid))
      return mid;
    c = inner_cat(mid);
  }
  return NULL;
}

// Marks the cats of each padding a CPU contraction alone reads (padmm): each cat read
// once (by the next one outward, the last by the contraction), returned by none.
static void plan_pads(Fuse *f) {
  for (int i = 0; f->g->cpu && i < f->n; i++) {
    const Node *r = node_of(f, i);
    int64_t pl[TD_MAX_DIMS];
    DType cd = dtype_compute(r->out->dtype);
    if (r->op != OP_MATMUL || !r->attr.nk || view_numel(r->out->view) == 0 || matmul_k(r, NULL) == 0 ||
        (cd != DT_F32 && cd != DT_F64) || !fuse_pad_chain(r->srcs[1], pl))
      continue;
    const Node *last = r->srcs[1]->buf->producer;
    ViewMap m;
    if (!view_decompose(r->srcs[1]->view, last->out->view.ndim, last->out->view.shape, &m))
      continue;
    bool ok = true;
    const Value *mid;
    int64_t left;
    int ncat = 0;
    for (const Node *c = last; ok && c; ncat++) {
      ok = f->readers[c->id].len == 1 && !f->output[c->id] && !f->target[c->id] && pad_cat(c, &mid, &left);
      c = ok ? inner_cat(mid) : NULL;
    }
    // One padded dim outside a 2-D convolution (conv1d's): gemm.c would copy it into a
    // temp of the kernel, one copy as the stored cat is, but live beside the kernel's
    // input and output at once (Mamba's peak 1.12x -> 1.17x); the cat stays stored.
    if (ncat < 2 && last->out->view.ndim != 4)
      ok = false;
    for (const Node *c = last; ok && c; c = inner_cat(mid)) {
      f->padmm[c->id] = i;
      pad_cat(c, &mid, &left);
    }
  }
}

// ---- step 1: which nodes are recomputed by their readers ----

// The first store strictly between positions a and b that writes one of the buffers in
// bufs, or -1.
static int store_between_writes(const Fuse *f, int a, int b, const IntList *bufs) {
  for (int x = a + 1; x < b; x++) {
    const Node *s = node_of(f, x);
    if (op_is_store(s->op) && list_has(bufs, s->srcs[0]->buf->id))
      return x;
  }
  return -1;
}

static FuseWhy why(FuseWhyCode code, int node, int other) {
  return (FuseWhy){.code = code, .node = node, .other = other};
}

typedef struct StoreCheck {
  int target;     // buffer id written
  View tv;        // the store's View of it
  bool ok;
} StoreCheck;

static void check_store_leaf(Fuse *f, void *ctx, const Leaf *leaf) {
  (void)f;
  StoreCheck *sc = ctx;
  if (leaf->src->buf->id != sc->target)
    return;
  View a = leaf->v, b = sc->tv;
  bool same = leaf->known && same_shape(a.ndim, a.shape, b.ndim, b.shape) && a.offset == b.offset;
  for (int d = 0; same && d < a.ndim; d++)
    same = a.shape[d] <= 1 || a.strides[d] == b.strides[d];
  sc->ok &= same;
}

// Inlining producer p into store st (as its value) is safe: the value reads the
// stored-into buffer, if at all, only at the element being written.
static bool store_value_inlinable(Fuse *f, const Node *st, const Node *p) {
  const View *tv = &st->srcs[0]->view, *vv = &st->srcs[1]->view;
  if (!same_shape(vv->ndim, vv->shape, tv->ndim, tv->shape))  // setitem broadcasts the value
    return !list_has(&f->bufs[p->id], st->srcs[0]->buf->id);
  StoreCheck sc = {st->srcs[0]->buf->id, *tv, true};
  Walk w = {f, check_store_leaf, &sc, -1};
  f->inl[p->id] = true;  // walk p's expression in the store's index space
  walk_src(&w, st->srcs[1], st->srcs[1]->view, true);
  f->inl[p->id] = false;
  return sc.ok;
}

// Whether a CPU matmul r packs its operand src into panels (ir/gemm.c), where an
// inline expression is then computed as it is packed: it reads the other operand in
// place when that one is unit-stride in k (x @ w.t(): w's rows), and packs this one.
// (A GPU matmul reads its operands once per product: they are stored.)
static bool matmul_packs(const Fuse *f, const Node *r, int src) {
  if (!f->g->cpu || r->attr.nk || r->srcs[src]->view.ndim < 2 || r->srcs[1 - src]->view.ndim < 2)
    return false;
  const View *o = &r->srcs[1 - src]->view;
  return o->strides[src == 0 ? o->ndim - 2 : o->ndim - 1] == 1;
}

// The matmul whose result pointwise n reads, directly or through at most depth - 1 inline
// pointwise nodes; lone: each read at its own index, of n's shape, read by nothing else
// and no output (the matmul can store n in place of its result); else only some read of
// one (at any index: a split's half). -1 when none.
static int reads_matmul(const Fuse *f, const Node *n, int depth, bool lone) {
  for (int s = 0; s < n->nsrc && op_is_pointwise(n->op); s++) {
    int p = producer_of(n->srcs[s]);
    if (p < 0)
      continue;
    const Node *pn = node_of(f, p);
    const View *pv = &pn->out->view, *nv = &n->out->view;
    if (lone && (f->readers[p].len != 1 || f->output[p] || f->target[p] ||
                 !is_identity(n->srcs[s]->view, pv->ndim, pv->shape) ||
                 !same_shape(pv->ndim, pv->shape, nv->ndim, nv->shape)))
      continue;
    if (pn->op == OP_MATMUL)
      return p;
    int q = depth > 1 && f->inl[p] ? reads_matmul(f, pn, depth - 1, lone) : -1;
    if (q >= 0)
      return q;
  }
  return -1;
}

// y * silu(x @ w.t()) read only by matmuls that pack it (Mamba's out_proj): recomputed as
// it is packed, it keeps y, the matmul's result and the pack buffer live together; stored,
// it is that matmul's epilogue written over y (ir/inplace.c) and the matmul's result is
// never stored. The node i reads at its own index, of i's size, reading no matmul's
// result, where i also reads a matmul's result; else -1. (gelu(x @ w.t() + b) reads no
// other tensor of its size: it stays inline, the pack computing it.)
static int packed_over(const Fuse *f, int i) {
  const Node *n = node_of(f, i);
  if (!f->g->cpu || f->readers[i].len == 0 || reads_matmul(f, n, 2, false) < 0)
    return -1;
  for (int e = 0; e < f->readers[i].len; e++)
    if (node_of(f, f->readers[i].data[e].reader)->op != OP_MATMUL)
      return -1;
  const View *nv = &n->out->view;
  for (int s = 0; s < n->nsrc; s++) {
    int p = producer_of(n->srcs[s]);
    if (p < 0 || node_of(f, p)->op == OP_MATMUL || reads_matmul(f, node_of(f, p), 1, false) >= 0)
      continue;
    const View *pv = &node_of(f, p)->out->view;
    if (is_identity(n->srcs[s]->view, pv->ndim, pv->shape) && same_shape(pv->ndim, pv->shape, nv->ndim, nv->shape))
      return p;
  }
  return -1;
}

// Why elementwise node i is not recomputed by its readers (FW_NONE: it is).
static FuseWhy inline_why(Fuse *f, int i, bool *reduced) {
  Node *n = node_of(f, i);
  TD_ASSERT(op_is_elementwise(n->op) || is_join(n->op));
  if (f->output[i])
    return why(FW_OUTPUT, -1, -1);
  if (f->target[i])
    return why(FW_STORE_TARGET, -1, -1);
  if (f->readers[i].len == 0)
    return why(FW_UNREAD, -1, -1);
  if (f->size[i] > INLINE_MAX_TREE)
    return (FuseWhy){.code = FW_TREE, .node = -1, .other = -1, .cost = f->size[i], .limit = INLINE_MAX_TREE};
  const View *pv = &n->out->view;
  int64_t pnumel = view_numel(*pv);
  // multi: its elements are computed more than once in all: the readers together read
  // more elements than it has (several readers of the whole, a broadcast). Readers of
  // disjoint slices (a scan's steps reading x[:, i]) recompute each element once.
  int64_t nread = 0;
  bool multi = false, bcast = false;
  *reduced = false;
  for (int e = 0; e < f->readers[i].len; e++) {
    Edge ed = f->readers[i].data[e];
    const Node *r = node_of(f, ed.reader);
    if (f->padmm[ed.reader] >= 0 && !zero_full(n->out))  // the padding's packing reads it from memory
      return why(FW_MATMUL_READ, f->padmm[ed.reader], -1);
    *reduced |= op_class(r->op) == OC_REDUCE || op_class(r->op) == OC_ROW;
    if (r->op == OP_MATMUL && !matmul_packs(f, r, ed.src))
      return why(FW_MATMUL_READ, ed.reader, -1);
    if (r->op == OP_MATMUL)
      multi = true;  // (computed as it is packed)
    if (op_is_gather(r->op))
      return why(FW_GATHER_READ, ed.reader, -1);
    if (op_class(r->op) == OC_ATTN && ed.src < 3)
      return why(FW_ATTN_READ, ed.reader, -1);
    View rv = r->srcs[ed.src]->view;
    if (op_is_pointwise(r->op))
      rv = expand_to(rv, r->out->view.ndim, r->out->view.shape);
    ViewMap m;
    if (!view_decompose(rv, pv->ndim, pv->shape, &m))
      return why(FW_VIEW_COPY, ed.reader, -1);
    if (view_numel(rv) > pnumel)
      multi = bcast = true;  // a broadcast read recomputes elements
    nread = td_sat_add(nread, view_numel(rv));
    if (f->raises[i] && !fuse_view_covers(rv, pv->ndim, pv->shape))
      return why(FW_RAISES_PART, ed.reader, -1);
    int st = store_between_writes(f, i, ed.reader, &f->bufs[i]);
    if (st >= 0)
      return why(FW_STORE_BETWEEN, ed.reader, st);
    if (r->op == OP_STORE && !store_value_inlinable(f, r, n))
      return why(FW_STORE_VALUE, ed.reader, -1);
    // index_put and scatter may write an element before reading another (repeated
    // indices): what they read is never the buffer they write
    if (op_is_store(r->op) && r->op != OP_STORE && list_has(&f->bufs[i], r->srcs[0]->buf->id))
      return why(FW_INDEX_WRITE, ed.reader, -1);
  }
  multi |= nread > pnumel;
  if (multi && (f->size[i] > INLINE_MAX_OPS || f->trans[i] > INLINE_MAX_TRANSCENDENTAL))
    return (FuseWhy){.code = FW_RECOMPUTE, .node = -1, .other = -1, .n = f->readers[i].len, .bcast = bcast,
                     .cost = f->size[i], .limit = INLINE_MAX_OPS, .trans = f->trans[i],
                     .tlimit = INLINE_MAX_TRANSCENDENTAL};
  // A residual stream (x = x + f(norm(x)), layer after layer): each x is reduced by the
  // next norm and read by the next sum, and recomputing it nests the one before, so the
  // chain grows until the op budget stores one, at a layer that depends on the ops each
  // layer has: the layers' kernels then differ and cannot share code. A value reduced
  // and read again whose expression recomputes another such value is stored.
  if (multi && *reduced)
    for (int s = 0; s < n->nsrc; s++) {
      int p = producer_of(n->srcs[s]);
      if (p >= 0 && f->inl[p] && f->rered[p] >= 0)
        return why(FW_NESTED_REDUCED, f->rered[p], -1);
    }
  // x + (h @ w.t() + b) of a CPU program, reduced and read again (the residual stream after
  // a block's last linear): stored, its matmul computes it as an epilogue and stores it in
  // place of its own result, which only this read; every reader then reads one tensor, not
  // the matmul's result and x (nanoGPT's block: 3 readers, 3 x 1.5 MB read less).
  int mm = multi && *reduced && f->g->cpu ? reads_matmul(f, n, 2, true) : -1;
  if (mm >= 0)
    return why(FW_MATMUL_EPILOGUE, mm, -1);
  int big = packed_over(f, i);
  if (big >= 0)
    return why(FW_PACK_EPILOGUE, reads_matmul(f, n, 2, false), big);
  return why(FW_NONE, -1, -1);
}

// A cat or stack is recomputed by its readers piece by piece (ir/ew.c splits an
// elementwise kernel's loops where the pieces change, ir/scalar.c's cat_expr reads each
// piece directly): when every node reading it, and every node reading an inline
// expression that recomputes it, is pointwise, and those expressions end in elementwise
// kernels of their own (epilogue_fits). Not a complex join, one of more than
// JOIN_MAX_PIECES parts, nor a stack of a CPU program's matmul results (a recurrence's
// outputs: ir/recur.c gathers them into it).
enum { JOIN_MAX_PIECES = 16 };

// Why join i is stored (FW_NONE: it is recomputed piece by piece), before inline_why.
static FuseWhy join_why(const Fuse *f, int i) {
  const Node *n = node_of(f, i);
  if (f->veto[i] >= 0)
    return why(FW_PIECE_STORES, f->veto[i], -1);
  if (n->out->cplx || n->nsrc > JOIN_MAX_PIECES)
    return why(FW_OWN, -1, -1);
  for (int s = 0; s < n->nsrc && f->g->cpu && n->op == OP_STACK; s++) {
    int p = producer_of(n->srcs[s]);
    if (p >= 0 && node_of(f, p)->op == OP_MATMUL)
      return why(FW_OWN, -1, -1);
  }
  return why(FW_NONE, -1, -1);
}

// The view through which pointwise node r reads operand s, in r's index space.
static View pointwise_read(const Node *r, int s) {
  return expand_to(r->srcs[s]->view, r->out->view.ndim, r->out->view.shape);
}

// The dims of rv (a read of a result of pndim dims, shape pshape) that walk the result's
// dims pd; false when a dim of pd is walked by two (a view splitting it: no one loop
// keeps its index in one piece).
static bool read_dims(View rv, int pndim, const int64_t *pshape, uint32_t pd, uint32_t *dims) {
  ViewMap m;
  if (!view_decompose(rv, pndim, pshape, &m))
    return false;
  uint32_t seen = 0;
  *dims = 0;
  for (int k = 0; k < rv.ndim; k++) {
    int q = m.pdim[k];
    if (q < 0 || rv.shape[k] <= 1 || !(pd >> q & 1))
      continue;
    if (seen >> q & 1)
      return false;
    seen |= 1u << q;
    *dims |= 1u << k;
  }
  return true;
}

// A node recomputing a join piece by piece is read by pointwise nodes only (on a CPU
// also by reductions, and by softmaxes along other dims: ir/row.c splits their rows and
// passes where the pieces change), each through a view that walks every dim its pieces
// change along with one dim (FW_NONE), else why not.
static FuseWhy pieces_read_why(const Fuse *f, int i) {
  const View *pv = &node_of(f, i)->out->view;
  for (int e = 0; e < f->readers[i].len; e++) {
    Edge ed = f->readers[i].data[e];
    const Node *r = node_of(f, ed.reader);
    uint32_t dims;
    bool row = f->g->cpu && op_is_row(r->op) && !op_is_scan(r->op);  // (ir/row.c's row_cuts)
    if (!op_is_pointwise(r->op) && !row)
      return why(FW_PIECE_READ, r->id, -1);
    if (!read_dims(row ? r->srcs[ed.src]->view : pointwise_read(r, ed.src), pv->ndim, pv->shape, f->pdims[i], &dims))
      return why(FW_PIECE_VIEW, r->id, -1);
    // a softmax over the pieces' dim stays reading a stored cat: its passes split, it loses
    // ir/sched.c's kept terms (LKernel.softmax), [2048, 300 + 500] ran 1.5x slower (LLVM)
    if (row && (r->op == OP_SOFTMAX || r->op == OP_LOG_SOFTMAX) && (dims & r->attr.dims))
      return why(FW_PIECE_READ, r->id, -1);
  }
  return why(FW_NONE, -1, -1);
}

// Recomputing a join piece by piece must save its stored result, not store another:
// an elementwise node stored only because it would recompute a join's pieces for a
// reader that cannot (pieces_read_why) vetoes that join (it is stored, as before), and
// the inline plan is made again. Whether a join was vetoed.
static bool veto_joins(Fuse *f) {
  bool any = false;
  for (int i = 0; i < f->n; i++) {
    const Node *n = node_of(f, i);
    FuseWhyCode c = n->stored.code;
    if (op_is_elementwise(n->op) && !f->inl[i] && f->pieces[i] >= 0 && (c == FW_PIECE_READ || c == FW_PIECE_VIEW) &&
        f->veto[f->pieces[i]] < 0) {
      f->veto[f->pieces[i]] = i;
      any = true;
    }
  }
  if (any)
    for (int i = 0; i < f->n; i++) {
      f->inl[i] = false;
      f->pieces[i] = -1;
      f->bufs[i] = f->deps[i] = (IntList){0};
    }
  return any;
}

static void plan_inline(Fuse *f) {
  for (int i = 0; i < f->n; i++) {
    Node *n = node_of(f, i);
    walk_node(f, n, collect_leaf, &i, -1);
    f->size[i] = 1;
    f->trans[i] = op_is_transcendental(n->op);
    f->raises[i] = op_may_raise(n->op, n->out->dtype);
    for (int s = 0; s < n->nsrc; s++) {
      int p = producer_of(n->srcs[s]);
      if (p >= 0 && f->inl[p]) {
        f->size[i] += f->size[p];
        f->trans[i] += f->trans[p];
        f->raises[i] |= f->raises[p];
      }
    }
    f->rered[i] = -1;
    if (f->padmm[i] >= 0) {
      f->inl[i] = true;
      continue;
    }
    bool join = is_join(n->op);
    f->pdims[i] = join ? 1u << n->attr.dim : 0;
    for (int s = 0; s < n->nsrc && !join && op_is_pointwise(n->op); s++) {
      int p = producer_of(n->srcs[s]);
      uint32_t dims;
      if (p < 0 || !f->inl[p] || f->pieces[p] < 0)
        continue;
      const View *pv = &node_of(f, p)->out->view;
      f->pieces[i] = f->pieces[p];
      TD_ASSERT(read_dims(pointwise_read(n, s), pv->ndim, pv->shape, f->pdims[p], &dims));  // (pieces_read_why)
      f->pdims[i] |= dims;
    }
    if (op_is_elementwise(n->op) || join) {
      bool reduced = false;
      n->stored = join ? join_why(f, i) : why(FW_NONE, -1, -1);
      if (n->stored.code == FW_NONE)
        n->stored = inline_why(f, i, &reduced);
      if (n->stored.code == FW_NONE && (join || f->pieces[i] >= 0))
        n->stored = pieces_read_why(f, i);
      f->inl[i] = n->stored.code == FW_NONE;
      if (join && f->inl[i])
        f->pieces[i] = i;
      if (f->inl[i] && reduced && f->readers[i].len > 1)
        f->rered[i] = i;
      for (int s = 0; f->inl[i] && f->rered[i] < 0 && s < n->nsrc; s++) {
        int p = producer_of(n->srcs[s]);
        if (p >= 0 && f->inl[p])
          f->rered[i] = f->rered[p];
      }
    }
  }
}

// ---- step 2: kernels ----

static Kern *new_kern(Fuse *f, KernelKind kind, int i) {
  Kern *k = arena_alloc(&f->cx->arena, sizeof *k);
  k->id = f->kerns.len;
  k->kind = kind;
  k->pos = i;
  vec_push(&f->cx->arena, &k->members, i);
  vec_push(&f->cx->arena, &f->kerns, k);
  f->kern[i] = k->id;
  return k;
}

static void join(Fuse *f, Kern *k, int i) {
  vec_push(&f->cx->arena, &k->members, i);
  k->pos = i;
  f->kern[i] = k->id;
}

// Kernel k may execute at position `to` instead of k->pos (FW_NONE) unless a non-inline
// node in between reads one of its values (FW_K_READ_BETWEEN) or a store in between
// writes a buffer it reads (FW_K_STORE_BETWEEN); `other` is that node.
static FuseWhy can_move(const Fuse *f, const Kern *k, int to) {
  for (int x = k->pos + 1; x < to; x++) {
    if (f->inl[x] || f->kern[x] == k->id)
      continue;
    for (int m = 0; m < k->members.len; m++) {
      int mi = k->members.data[m];
      if (list_has(&f->deps[x], mi))
        return why(FW_K_READ_BETWEEN, mi, x);
      const Node *s = node_of(f, x);
      if (op_is_store(s->op) && list_has(&f->bufs[mi], s->srcs[0]->buf->id))
        return why(FW_K_STORE_BETWEEN, mi, x);
    }
  }
  return why(FW_NONE, -1, -1);
}

static bool kern_has(const Kern *k, int i) { return list_has(&k->members, i); }

// The row layout of a value of shape (ndim, shape) in row kernel k: full (the row
// input's shape) or one element per row, with row_coef[k] the stride of row
// coordinate k. false: neither.
static bool row_layout(const Kern *k, int ndim, const int64_t *shape, bool *full, int64_t *row_coef) {
  if (same_shape(ndim, shape, k->in_ndim, k->in_shape)) {
    *full = true;
    return true;
  }
  *full = false;
  int64_t keep[TD_MAX_DIMS], drop[TD_MAX_DIMS];
  int nk = k->in_ndim, nd = 0;
  for (int d = 0; d < k->in_ndim; d++) {
    bool red = k->dims >> d & 1;
    keep[d] = red ? 1 : k->in_shape[d];
    if (!red)
      drop[nd++] = k->in_shape[d];
  }
  bool kept = same_shape(ndim, shape, nk, keep);
  if (!kept && !same_shape(ndim, shape, nd, drop))
    return false;
  View c = view_contiguous(ndim, shape);
  for (int d = 0, j = 0; d < k->in_ndim; d++) {
    bool red = k->dims >> d & 1;
    row_coef[d] = red ? 0 : c.strides[kept ? d : j];
    if (!red)
      j++;
  }
  return true;
}

// The row coordinate (input dim) of each dim of a value with this layout, -1 for dims
// that move within the row (or are reduced away to size 1).
static void row_dims(const Kern *k, bool full, int ndim, const int64_t *shape, int *rd) {
  if (full) {
    for (int d = 0; d < ndim; d++)
      rd[d] = (k->dims >> d & 1) ? -1 : d;
    return;
  }
  int64_t keep[TD_MAX_DIMS];
  for (int d = 0; d < k->in_ndim; d++)
    keep[d] = (k->dims >> d & 1) ? 1 : k->in_shape[d];
  bool kept = same_shape(ndim, shape, k->in_ndim, keep);
  for (int d = 0, j = 0; d < k->in_ndim; d++) {
    bool red = k->dims >> d & 1;
    if (kept)
      rd[d] = red ? -1 : d;
    else if (!red)
      rd[j++] = d;
  }
}

typedef struct EpiCheck {
  const Kern *k;
  const Node *root;
  bool full;            // ROW: the root's layout
  int rd[TD_MAX_DIMS];  // ROW: row coordinate of each root dim
  bool reads, ok;
  int bad;              // the first node of k read off the current row / index, or -1
} EpiCheck;

// A value with one element per row (of node p) read through v at the root's row.
static bool row_read_ok(const Fuse *f, const EpiCheck *ec, int p, const View *v) {
  bool ok = v->offset == 0 || view_numel(*v) == 0;
  for (int d = 0; ok && d < v->ndim; d++) {
    if (v->shape[d] <= 1)
      continue;
    int64_t want = ec->rd[d] >= 0 ? f->row_coef[p][ec->rd[d]] : 0;
    ok = v->strides[d] == want;
  }
  return ok;
}

static void check_epi_leaf(Fuse *f, void *ctx, const Leaf *leaf) {
  EpiCheck *ec = ctx;
  int p = producer_of(leaf->src);
  if (p < 0 || !kern_has(ec->k, p))
    return;
  ec->reads = true;
  bool was = ec->ok;
  const View *rs = &ec->root->out->view;
  if (!leaf->known) {
    ec->ok = false;
  } else if (ec->k->kind == KK_MATMUL || f->full[p]) {  // the same element
    const View *pv = &node_of(f, p)->out->view;
    ec->ok &= (ec->k->kind == KK_MATMUL || ec->full) && is_identity(leaf->v, pv->ndim, pv->shape) &&
              same_shape(rs->ndim, rs->shape, pv->ndim, pv->shape);
  } else {
    ec->ok &= row_read_ok(f, ec, p, &leaf->v);
  }
  if (was && !ec->ok)
    ec->bad = p;
}

// Root i joins kernel k as an epilogue node (FW_NONE), else why not; FW_K_EW: k is no
// kernel an elementwise node follows.
static FuseWhy epilogue_fits(Fuse *f, Kern *k, int i) {
  const Node *n = node_of(f, i);
  int first = k->members.data[0];
  if (k->kind != KK_ROW && k->kind != KK_MATMUL)
    return why(FW_K_EW, -1, -1);
  if (!op_is_pointwise(n->op))
    return why(FW_K_GATHER, first, -1);
  if (f->pieces[i] >= 0 && !(k->kind == KK_ROW && f->g->cpu))  // (ir/row.c splits a row kernel's loops)
    return why(FW_K_PIECES, f->pieces[i], -1);
  if (k->scan)
    return why(FW_K_AFTER_SCAN, first, -1);
  const View *ov = &n->out->view;
  EpiCheck ec = {.k = k, .root = n, .ok = true, .bad = -1};
  int64_t coef[TD_MAX_DIMS] = {0};
  if (k->kind == KK_ROW) {
    if (!row_layout(k, ov->ndim, ov->shape, &ec.full, coef))
      return why(FW_K_SHAPE, first, -1);
    row_dims(k, ec.full, ov->ndim, ov->shape, ec.rd);
  } else if (!same_shape(ov->ndim, ov->shape, k->mm->out->view.ndim, k->mm->out->view.shape)) {
    return why(FW_K_SHAPE, first, -1);
  }
  walk_node(f, n, check_epi_leaf, &ec, -1);
  if (!ec.reads)
    return why(FW_K_EW, -1, -1);
  if (!ec.ok)
    return why(FW_K_OFF_ROW, ec.bad, -1);
  FuseWhy w = can_move(f, k, i);
  if (w.code != FW_NONE)
    return w;
  f->full[i] = ec.full;
  memcpy(f->row_coef[i], coef, sizeof coef);
  return w;
}

// A store into a CPU matmul kernel's last result, all of it, of a value (or an
// augmented one: out += identity) read at the same index from outside the kernel, joins
// it as an epilogue (ir/matmul.c's kb_store_epilogues): the residual add of a
// convolution, and what reads the stored result after it, are its GEMM's epilogue.
typedef struct OutsideCheck {
  const Kern *k;
  int e;  // the stored-into result: read at the same index only
  bool ok;
} OutsideCheck;

static void check_outside_leaf(Fuse *f, void *ctx, const Leaf *leaf) {
  OutsideCheck *oc = ctx;
  int p = producer_of(leaf->src);
  const View *pv = p >= 0 ? &node_of(f, p)->out->view : NULL;
  oc->ok &= p < 0 || !kern_has(oc->k, p) || (p == oc->e && leaf->known && is_identity(leaf->v, pv->ndim, pv->shape));
}

// The same for a CPU elementwise kernel (an in-place op after a pointwise producer: y =
// x * w + b; F.relu6(y, inplace=True)), of any dtype and augmented op: ir/ew.c computes
// the result, then the stored value from it, and writes the buffer once.
static bool store_fits(Fuse *f, Kern *k, int i) {
  const Node *n = node_of(f, i);
  bool ew = k->kind == KK_EW;
  if (!f->g->cpu || n->op != OP_STORE || (k->kind != KK_MATMUL && !ew))
    return false;
  const Value *t = n->srcs[0], *v = n->srcs[1];
  if (ew && (t->cplx || (!v->is_scalar && v->cplx)))
    return false;
  int m = k->members.len - 1;  // (past the stores into the same result: x.mul_(s).add_(r))
  while (m > 0 && node_of(f, k->members.data[m])->op == OP_STORE &&
         node_of(f, k->members.data[m])->srcs[0]->buf == t->buf)
    m--;
  int e = k->members.data[m];
  const View *ev = &node_of(f, e)->out->view, *ov = ew ? ev : &k->mm->out->view;
  if (producer_of(t) != e || !is_identity(t->view, ev->ndim, ev->shape) ||
      !same_shape(ev->ndim, ev->shape, ov->ndim, ov->shape) ||
      (!v->is_scalar && !same_shape(v->view.ndim, v->view.shape, ov->ndim, ov->shape)) ||
      (!ew && (!dtype_is_float(t->dtype) || (n->attr.aug != OP_COUNT && n->attr.aug != OP_ADD && n->attr.aug != OP_MUL))))
    return false;
  if (ew && n->attr.aug == OP_COUNT && f->raises[e])  // (a result no store reads would not raise)
    return false;
  const Node *en = node_of(f, e);  // (ir/ew.c moves a permuted copy of memory in register blocks)
  bool copy = ew && (en->op == OP_COPY || en->op == OP_CLONE);
  int src = copy ? producer_of(en->srcs[0]) : -1;
  if (copy && (src < 0 || !f->inl[src]) && !view_is_contiguous(en->srcs[0]->view))
    return false;
  OutsideCheck oc = {k, e, true};
  Walk w = {f, check_outside_leaf, &oc, -1};
  if (!v->is_scalar)
    walk_src(&w, v, v->view, true);
  return oc.ok && can_move(f, k, i).code == FW_NONE;
}

// Whether row node i of a CPU program reads kernel k's members only as results of one
// element per row (no softmax, no epilogue of the input's shape) at its own row (the
// channels-first layer norm's (x - u).pow(2).mean(1) of u = x.mean(1)): ir/row.c's row
// schedules compute the member's local on the row first (the column schedule declines
// such kernels), so the mean's row needs no store and the input one read less.
static void check_row_leaf(Fuse *f, void *ctx, const Leaf *leaf) {
  EpiCheck *ec = ctx;
  int p = producer_of(leaf->src);
  if (p < 0 || !kern_has(ec->k, p))
    return;
  bool ok = leaf->known && !f->full[p] && op_is_row(node_of(f, p)->op) && row_read_ok(f, ec, p, &leaf->v);
  if (ec->ok && !ok)
    ec->bad = p;
  ec->ok &= ok;
}

static bool row_reads_row(Fuse *f, const Kern *k, int i) {
  const Node *n = node_of(f, i);
  if (!f->g->cpu || k->scan || op_is_scan(n->op) || n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX)
    return false;
  for (int m = 0; m < k->members.len; m++)
    if (!op_is_row(node_of(f, k->members.data[m])->op))
      return false;  // an epilogue joined: the kernel is closed anyway
  EpiCheck ec = {.k = k, .root = n, .full = true, .ok = true, .bad = -1};
  row_dims(k, true, k->in_ndim, k->in_shape, ec.rd);
  walk_node(f, n, check_row_leaf, &ec, -1);
  return ec.ok;
}

// Row node i joins kernel k (FW_NONE), else why not; FW_K_ROW_NEW: k reduces other rows.
static FuseWhy row_fits(Fuse *f, Kern *k, int i) {
  const Node *n = node_of(f, i);
  const View *in = &n->srcs[0]->view;
  if (k->kind != KK_ROW || k->dims != n->attr.dims || !same_shape(in->ndim, in->shape, k->in_ndim, k->in_shape))
    return why(FW_K_ROW_NEW, -1, -1);
  int first = k->members.data[0];
  if (k->scan != op_is_scan(n->op))
    return why(FW_K_SCAN_MIX, first, -1);
  if (k->closed)
    return why(FW_K_ROW_CLOSED, first, -1);
  for (int m = 0; m < k->members.len; m++)
    if (list_has(&f->deps[i], k->members.data[m]) && !row_reads_row(f, k, i))
      return why(FW_K_ROW_FEEDS, k->members.data[m], -1);
  return can_move(f, k, i);
}

// ---- the MLP chain: act(x @ w1.t() [+ b1]) @ w2.t(), one kernel (ir/gemm_chain.c) ----
// On a CPU, matmul i whose A operand is matmul m's result, directly or through inline
// pointwise nodes (bias, activation) each read once at its own index, joins m's kernel
// when m is alone in it, read by nothing else, and both are f32 products by weights
// whose rows are read in place (w.t(): unit-stride in k), with the same leading dims and
// at least CHAIN_MIN_ROWS rows and at most CHAIN_MAX_WEIGHTS bytes of weights: the kernel
// computes the hidden by blocks of rows, so that neither it nor the second product's pack
// is ever whole. Fewer rows stay two GEMMs (GPT-2 at 64 tokens: a 48-row block per thread
// leaves one thread idle). Each block reads both weights again, where the two GEMMs read
// them once: at 384 -> 1536 -> 384 (4.7 MB) the chain was 1.03-1.13x faster (ConvNeXt's
// and ViT-S's blocks, AVX-512 and Zen 3's tiles), at GPT-2's 768 -> 3072 -> 768 (18.9 MB,
// 1024 rows) 1.04-1.1x slower on AVX-512.
// A thread's scratch, (C + min(H, 256) + O) x 48 floats (ir/gemm_chain.c), is at most
// CHAIN_MAX_SCRATCH: wide inputs or outputs (x [96, 60000] through 8 hidden units: 11.5 MB
// a thread for a 3 KB hidden) keep the two GEMMs.
enum { CHAIN_MIN_ROWS = 96, CHAIN_DEPTH = 4 };
static const int64_t CHAIN_MAX_WEIGHTS = 8 << 20, CHAIN_MAX_SCRATCH = 1 << 20;

// Weights read as x @ w.t(): a 2-D f32 operand, unit-stride in k, from memory.
static bool chain_weights(const Fuse *f, const Value *w) {
  int p = producer_of(w);
  return !w->is_scalar && w->dtype == DT_F32 && w->view.ndim == 2 && w->view.strides[0] == 1 &&
         w->view.shape[0] > 0 && w->view.shape[1] > 0 && (p < 0 || !f->inl[p]);
}

static bool chain_product(const Fuse *f, const Node *m) {
  const View *a = &m->srcs[0]->view, *o = &m->out->view;
  return m->op == OP_MATMUL && !m->attr.nk && m->out->dtype == DT_F32 && !m->srcs[0]->is_scalar &&
         a->ndim == o->ndim && o->ndim >= 2 && chain_weights(f, m->srcs[1]) && m->srcs[0]->dtype == DT_F32;
}

static Kern *chain_of(Fuse *f, int i) {
  const Node *n = node_of(f, i);
  if (!f->g->cpu || !chain_product(f, n))
    return NULL;
  int p = producer_of(n->srcs[0]);
  if (p < 0)
    return NULL;
  const Node *pn = node_of(f, p);
  int m = pn->op == OP_MATMUL ? p : f->inl[p] ? reads_matmul(f, pn, CHAIN_DEPTH, true) : -1;
  if (m < 0 || !is_identity(n->srcs[0]->view, pn->out->view.ndim, pn->out->view.shape))
    return NULL;
  if (f->readers[p].len != 1)
    return NULL;
  const Node *mn = node_of(f, m);
  Kern *k = f->kerns.data[f->kern[m]];
  if (!chain_product(f, mn) || k->kind != KK_MATMUL || k->members.len != 1 || f->output[m] || f->target[m])
    return NULL;
  const View *o1 = &mn->out->view, *o2 = &n->out->view;
  if (o1->ndim != o2->ndim)
    return NULL;
  int64_t rows = 1;
  for (int d = 0; d + 1 < o2->ndim; d++) {
    if (o1->shape[d] != o2->shape[d] || mn->srcs[0]->view.shape[d] != o1->shape[d])
      return NULL;
    rows *= o2->shape[d];
  }
  int64_t wbytes = 4 * (view_numel(mn->srcs[1]->view) + view_numel(n->srcs[1]->view));
  int64_t C = mn->srcs[0]->view.shape[o1->ndim - 1], H = o1->shape[o1->ndim - 1], O = o2->shape[o2->ndim - 1];
  int64_t scratch = 4 * GEMM_CHAIN_ROWS * (C + (H < GEMM_CHAIN_HIDDEN ? H : GEMM_CHAIN_HIDDEN) + O);
  if (rows < CHAIN_MIN_ROWS || O == 0 || wbytes > CHAIN_MAX_WEIGHTS || scratch > CHAIN_MAX_SCRATCH)
    return NULL;
  return can_move(f, k, i).code == FW_NONE ? k : NULL;
}

static void plan_kernels(Fuse *f) {
  for (int i = 0; i < f->n; i++) {
    if (f->inl[i])
      continue;
    Node *n = node_of(f, i);
    if (op_is_row(n->op)) {
      Kern *k = NULL;
      FuseWhy miss = why(FW_K_ROW_NEW, -1, -1);  // the latest kernel over the same rows says why not
      for (int j = f->kerns.len - 1; j >= 0 && !k; j--) {
        FuseWhy w = row_fits(f, f->kerns.data[j], i);
        if (w.code == FW_NONE)
          k = f->kerns.data[j];
        else if (miss.code == FW_K_ROW_NEW)
          miss = w;
      }
      if (k) {
        join(f, k, i);
      } else {
        n->split = miss;
        k = new_kern(f, KK_ROW, i);
        const View *in = &n->srcs[0]->view;
        k->in_ndim = in->ndim;
        memcpy(k->in_shape, in->shape, sizeof(int64_t) * (size_t)in->ndim);
        k->dims = n->attr.dims;
        k->scan = op_is_scan(n->op);
      }
      const View *ov = &n->out->view;
      if (n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX || op_is_scan(n->op))
        f->full[i] = true;
      else
        TD_ASSERT(row_layout(k, ov->ndim, ov->shape, &f->full[i], f->row_coef[i]));
      continue;
    }
    if (n->op == OP_MATMUL) {
      Kern *ck = chain_of(f, i);
      if (ck) {  // the second linear of an MLP: ir/gemm_chain.c computes both by row blocks
        join(f, ck, i);
        ck->mm = n;
        continue;
      }
      n->split = why(FW_K_MATMUL, -1, -1);
      new_kern(f, KK_MATMUL, i)->mm = n;
      continue;
    }
    if (op_is_elementwise(n->op)) {
      // the kernels it reads, latest first; the latest it could follow says why not
      Kern *k = NULL;
      FuseWhy miss = why(FW_K_EW, -1, -1);
      for (int j = f->kerns.len - 1; j >= 0 && !k; j--) {
        Kern *c = f->kerns.data[j];
        bool reads = false;
        for (int m = 0; m < c->members.len && !reads; m++)
          reads = list_has(&f->deps[i], c->members.data[m]);
        FuseWhy w = reads ? epilogue_fits(f, c, i) : why(FW_K_EW, -1, -1);
        if (reads && w.code == FW_NONE)
          k = c;
        else if (miss.code == FW_K_EW)
          miss = w;
      }
      if (k) {
        join(f, k, i);
        k->closed = true;
      } else {
        n->split = miss;
        new_kern(f, KK_EW, i);
      }
      continue;
    }
    if (op_class(n->op) == OC_SORT) {
      // a sort and an argsort of one input and order: one kernel, at the first one's
      // position (the second reads only what the first does: it may run that early
      // unless a store in between writes what it reads)
      Kern *k = NULL;
      for (int j = f->kerns.len - 1; j >= 0 && !k; j--) {
        Kern *c = f->kerns.data[j];
        const Node *m = c->kind == KK_SORT && c->members.len == 1 ? node_of(f, c->members.data[0]) : NULL;
        if (m && m->op != n->op && m->srcs[0] == n->srcs[0] && m->attr.descending == n->attr.descending && m->attr.first == n->attr.first &&
            store_between_writes(f, c->pos, i, &f->bufs[i]) < 0)
          k = c;
      }
      if (k) {
        vec_push(&f->cx->arena, &k->members, i);
        f->kern[i] = k->id;
      } else {
        n->split = why(FW_K_ALONE, -1, -1);
        new_kern(f, KK_SORT, i);
      }
      continue;
    }
    Kern *sk = NULL;
    for (int j = f->kerns.len - 1; j >= 0 && !sk && n->op == OP_STORE; j--)
      if (store_fits(f, f->kerns.data[j], i))
        sk = f->kerns.data[j];
    if (sk) {
      join(f, sk, i);
      continue;
    }
    n->split = why(FW_K_ALONE, -1, -1);
    new_kern(f, op_class(n->op) == OC_ATTN ? KK_ATTN : KK_ONE, i);
  }
}

// ---- step 3: modes and numbering ----

typedef struct ReadMark {
  int kern;
  int reader;   // the node reading
  int *other;   // per node: the first node of a kernel other than its own reading it, or -1
} ReadMark;

static void mark_leaf(Fuse *f, void *ctx, const Leaf *leaf) {
  ReadMark *rm = ctx;
  int p = producer_of(leaf->src);
  if (p >= 0 && !f->inl[p] && f->kern[p] != rm->kern && rm->other[p] < 0)
    rm->other[p] = rm->reader;
}

// Why non-inline node i, of kernel k, is stored (an elementwise node: inline_why's).
static FuseWhy stored_why(const Fuse *f, int i, const Kern *k, int other) {
  const Node *n = node_of(f, i);
  if (op_is_elementwise(n->op) || (is_join(n->op) && n->stored.code != FW_NONE))
    return n->stored;
  if (f->output[i])
    return why(FW_OUTPUT, -1, -1);
  if (f->target[i])
    return why(FW_STORE_TARGET, -1, -1);
  if (op_is_scan(n->op) && k->kind == KK_ROW)
    return why(FW_SCAN, -1, -1);
  if ((!op_is_row(n->op) || k->kind != KK_ROW) && (n->op != OP_MATMUL || k->kind != KK_MATMUL))
    return why(FW_OWN, -1, -1);
  if (other >= 0)
    return why(FW_READ_OUTSIDE, other, -1);
  return why(FW_UNREAD, -1, -1);
}

static int cmp_pos(const void *a, const void *b) {
  const Kern *x = *(Kern *const *)a, *y = *(Kern *const *)b;
  return (x->pos > y->pos) - (x->pos < y->pos);
}

static void plan_modes(Fuse *f) {
  // kernels run in the order of their positions
  Kern **order = arena_alloc(&f->cx->arena, sizeof(Kern *) * (size_t)(f->kerns.len + 1));
  for (int j = 0; j < f->kerns.len; j++)
    order[j] = f->kerns.data[j];
  if (f->kerns.len > 1)
    qsort(order, (size_t)f->kerns.len, sizeof *order, cmp_pos);
  int *number = arena_alloc(&f->cx->arena, sizeof(int) * (size_t)(f->kerns.len + 1));
  for (int j = 0; j < f->kerns.len; j++)
    number[order[j]->id] = j;
  int *other = arena_alloc(&f->cx->arena, sizeof(int) * (size_t)(f->n + 1));
  for (int i = 0; i < f->n; i++)
    other[i] = -1;
  for (int i = 0; i < f->n; i++) {
    Node *n = node_of(f, i);
    n->kernel = -1;
    if (f->inl[i])
      continue;
    ReadMark rm = {f->kern[i], i, other};
    walk_node(f, n, mark_leaf, &rm, -1);
  }
  for (int i = 0; i < f->n; i++) {
    Node *n = node_of(f, i);
    if (f->inl[i]) {
      n->mode = NM_INLINE;
      continue;
    }
    n->kernel = number[f->kern[i]];
    const Kern *k = f->kerns.data[f->kern[i]];
    bool local_kind = (op_is_row(n->op) && !op_is_scan(n->op) && k->kind == KK_ROW) || (n->op == OP_MATMUL && k->kind == KK_MATMUL);
    bool local = local_kind && !f->output[i] && !f->target[i] && other[i] < 0 && f->readers[i].len > 0;
    n->mode = local ? NM_LOCAL : NM_STORED;
    n->stored = local ? why(FW_NONE, -1, -1) : stored_why(f, i, k, other[i]);
  }
  // an inline node belongs (for --emit=ir) to the first kernel recomputing it
  for (int i = 0; i < f->n; i++)
    if (!f->inl[i])
      walk_node(f, node_of(f, i), mark_leaf, &(ReadMark){f->kern[i], i, other}, node_of(f, i)->kernel);
  f->g->nkernels = f->kerns.len;
}

// After a store epilogue (store_fits) the kernel's last result r, elementwise over the
// stored-into buffer B (relu(out) after out += identity), is written over B: B is read
// by nothing else, so r's values become values of B (as ir/place.c places a join's
// parts) and the two never live apart (B holds the GEMM's sums, then r).
static void store_results_over(Fuse *f) {
  for (int j = 0; j < f->kerns.len; j++) {
    Kern *k = f->kerns.data[j];
    if (k->kind != KK_MATMUL)
      continue;
    const Node *st = NULL;
    for (int m = 0; m < k->members.len; m++)
      if (node_of(f, k->members.data[m])->op == OP_STORE)
        st = node_of(f, k->members.data[m]);
    Node *r = node_of(f, k->members.data[k->members.len - 1]);
    if (!st || r == st || r->mode != NM_STORED || !op_is_elementwise(r->op) || f->output[r->id] || f->target[r->id])
      continue;
    Buffer *B = st->srcs[0]->buf, *rb = r->out->buf;
    const Node *e = B->producer;
    bool ok = rb->own == r->out && rb->kind == BUF_KERNEL && rb->dtype == B->dtype && rb->numel == B->numel &&
              !f->output[e->id] && is_identity(r->out->view, B->own->view.ndim, B->own->view.shape) &&
              is_identity(B->own->view, B->own->view.ndim, B->own->view.shape) && !r->out->cplx;
    for (int q = 0; ok && q < f->readers[e->id].len; q++) {
      int x = f->readers[e->id].data[q].reader;
      ok = !f->inl[x] && f->kern[x] == k->id;
    }
    if (!ok)
      continue;
    for (int v = 0; v < f->g->values.len; v++)
      if (f->g->values.data[v]->buf == rb)
        f->g->values.data[v]->buf = B;
  }
}

void fuse_graph(Graph *g) {
  attn_fuse(g);
  if (g->cpu)
    fuse_late_half(g);
  Ctx *cx = g->cx;
  Fuse F = {.g = g, .cx = cx, .n = g->nodes.len};
  Fuse *f = &F;
  size_t n = (size_t)(f->n > 0 ? f->n : 1);
  f->readers = arena_alloc(&cx->arena, sizeof *f->readers * n);
  f->output = arena_alloc(&cx->arena, sizeof(bool) * n);
  f->target = arena_alloc(&cx->arena, sizeof(bool) * n);
  f->inl = arena_alloc(&cx->arena, sizeof(bool) * n);
  f->raises = arena_alloc(&cx->arena, sizeof(bool) * n);
  f->full = arena_alloc(&cx->arena, sizeof(bool) * n);
  f->size = arena_alloc(&cx->arena, sizeof(int) * n);
  f->rered = arena_alloc(&cx->arena, sizeof(int) * n);
  f->trans = arena_alloc(&cx->arena, sizeof(int) * n);
  f->kern = arena_alloc(&cx->arena, sizeof(int) * n);
  f->padmm = arena_alloc(&cx->arena, sizeof(int) * n);
  f->pieces = arena_alloc(&cx->arena, sizeof(int) * n);
  f->pdims = arena_alloc(&cx->arena, sizeof(uint32_t) * n);
  f->veto = arena_alloc(&cx->arena, sizeof(int) * n);
  f->deps = arena_alloc(&cx->arena, sizeof(IntList) * n);
  f->bufs = arena_alloc(&cx->arena, sizeof(IntList) * n);
  f->row_coef = arena_alloc(&cx->arena, sizeof *f->row_coef * n);
  for (int i = 0; i < f->n; i++) {
    const Node *nd = g->nodes.data[i];
    TD_ASSERT(nd->id == i);
    g->nodes.data[i]->stored = g->nodes.data[i]->split = (FuseWhy){.code = FW_NONE, .node = -1, .other = -1};
    for (int s = 0; s < nd->nsrc; s++) {
      int p = producer_of(nd->srcs[s]);
      if (p >= 0)
        vec_push(&cx->arena, &f->readers[p], ((Edge){i, s}));
    }
    if (op_is_store(nd->op) && nd->srcs[0]->buf->kind == BUF_KERNEL)
      f->target[producer_of(nd->srcs[0])] = true;
  }
  for (int i = 0; i < g->outputs.len; i++) {
    int p = producer_of(g->outputs.data[i]);
    if (p >= 0)
      f->output[p] = true;
  }
  for (int i = 0; i < f->n; i++)
    f->padmm[i] = f->pieces[i] = f->veto[i] = -1;
  plan_pads(f);
  do
    plan_inline(f);
  while (veto_joins(f));
  // what each kernel root reads, now that the inline nodes are known
  for (int i = 0; i < f->n; i++) {
    f->deps[i] = (IntList){0};
    f->bufs[i] = (IntList){0};
    walk_node(f, node_of(f, i), collect_leaf, &i, -1);
  }
  plan_kernels(f);
  plan_modes(f);
  store_results_over(f);
  fuse_place(g);
  if (g->cpu)
    fuse_recur(g);
}

const Node *fuse_kernel_root(const Graph *g, int kernel) {
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->kernel == kernel && n->mode != NM_INLINE && n->split.code != FW_NONE)
      return n;
  }
  return NULL;
}

KernelKind fuse_kernel_kind(const Graph *g, int kernel) {
  if (fuse_recur_of(g, kernel))
    return KK_RECUR;
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->kernel != kernel || n->mode == NM_INLINE)
      continue;
    if (n->op == OP_MATMUL)
      return KK_MATMUL;
    if (op_is_row(n->op))
      return KK_ROW;
    if (op_class(n->op) == OC_SORT)
      return KK_SORT;
    if (op_class(n->op) == OC_ATTN)
      return KK_ATTN;
    return op_is_elementwise(n->op) ? KK_EW : KK_ONE;
  }
  return KK_ONE;
}
