// ir/recur.c: a scan written step by step becomes one kernel (fuse_recur, run by
// fuse_graph on CPU programs after fuse_place). mamba-minimal's selective scan unrolls
// into T copies of a step,
//     S_t = F(S_(t-1), slices t of its inputs)      (elementwise, the state [.., N])
//     Y_t = S_t.view(M, N) @ c_t                    (c_t: [N, 1], one output per row)
// whose outputs a stack gathers; as kernels that is 2T launches, each reading and
// writing the whole state. Found here, the steps become one RECUR kernel
// (ir/recur_build.c): per row of the state, the T steps in a loop, the row kept in a
// temp, each Y_t stored straight into its slice of the stack.
//
// What is matched (any failure leaves the plan as it is):
//   - a stack of T >= 2 parts, part t the whole result of a plain matmul Y_t (in its
//     element order, in Y_t's buffer or placed in the stack's by fuse_place), Y_t
//     ([M, 1] or [M]) of srcs[0], a [M, N] view over all of S_t's contiguous result (N
//     its last dim), and srcs[1] ([N, 1] or [N]); the parts' dims are the state's
//     leading dims (size-1 dims aside);
//   - the template step t = 1 against every other: S_t and the nodes between it and
//     S_(t-1) are elementwise (no gather), node for node the template's (op, dtype,
//     shape, attributes, the views they read), reading S_(t-1) through the identity
//     view where the template reads S_0 (step 0 reads the initial state there, a value
//     of S's shape), and otherwise the same buffers as the template at offsets a
//     constant `coef` per step apart (RecurLeaf; over an inline result also a constant
//     step of its logical index, so the template's expression at step t is its
//     expression with those indices moved);
//   - nothing but the next step and Y_t reads S_t (S_(T-1): Y only), nothing but the
//     step reads its intermediates, and no kernel from the first step's to the stack's
//     computes anything else (so every input is ready when the steps start, and no
//     store lands between them);
//   - float (f32, f64) values of one dtype.
// The rewrite: the steps' nodes inline into one kernel (no S_t is stored any more),
// the Y_t and the stack stored there; later kernels renumbered.
#include <string.h>

#include "ir/ir.h"

typedef VEC(Node *) NodeVec;

typedef struct Match {
  Graph *g;
  Recur *r;
  const Node *s0;     // S_0, read by the template at its `prev`
  const Node *prevt;  // S_(t-1) for the step being matched (NULL at t = 0)
  int t;
  NodeVec *mine;      // the steps' nodes
  NodeVec *tmpl;      // the template's nodes
  bool *step;         // per node id: a step's node (any step)
} Match;

static bool same_view_shape(const View *a, const View *b) {
  if (a->ndim != b->ndim)
    return false;
  for (int k = 0; k < a->ndim; k++)
    if (a->shape[k] != b->shape[k] || (a->shape[k] > 1 && a->strides[k] != b->strides[k]))
      return false;
  return true;
}

static bool same_shape(const View *a, const View *b) {
  return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
}

static bool is_identity(const Value *v, const Node *n) {
  return v->buf == n->out->buf && same_view_shape(&v->view, &n->out->view) && v->view.offset == n->out->view.offset;
}

static void push_node(Match *m, NodeVec *v, Node *n) {
  for (int i = 0; i < v->len; i++)
    if (v->data[i] == n)
      return;
  vec_push(&m->g->cx->arena, v, n);
}

// A leaf the template reads at a, read at b by step t: its per-step move.
static bool match_leaf(Match *m, const Value *a, const Value *b) {
  int64_t d = b->view.offset - a->view.offset, dt = m->t - 1;
  if (d % dt)
    return false;
  RecurLeaf l = {.v = a, .coef = d / dt};
  const Buffer *buf = a->buf;
  if (buf && buf->kind == BUF_KERNEL && buf->producer->mode == NM_INLINE) {
    const View *pv = &buf->producer->out->view;
    ViewMap ma, mb;
    if (!view_decompose(a->view, pv->ndim, pv->shape, &ma) || !view_decompose(b->view, pv->ndim, pv->shape, &mb))
      return false;
    l.inl = true;
    for (int k = 0; k < a->view.ndim; k++)
      if (ma.pdim[k] != mb.pdim[k] || (ma.pdim[k] >= 0 && ma.mult[k] != mb.mult[k]))
        return false;
    for (int p = 0; p < pv->ndim; p++) {
      if ((mb.start[p] - ma.start[p]) % dt)
        return false;
      l.dstart[p] = (mb.start[p] - ma.start[p]) / dt;
    }
  }
  for (int i = 0; i < m->r->leaves.len; i++) {
    RecurLeaf *o = &m->r->leaves.data[i];
    if (o->v == a)
      return o->coef == l.coef && !memcmp(o->dstart, l.dstart, sizeof l.dstart);
  }
  vec_push(&m->g->cx->arena, &m->r->leaves, l);
  return true;
}

static bool same_attr(const NodeAttr *a, const NodeAttr *b) {
  return a->has_lo == b->has_lo && a->has_hi == b->has_hi && a->lo == b->lo && a->hi == b->hi && a->ilo == b->ilo &&
         a->ihi == b->ihi && a->dims == b->dims && a->dim == b->dim;
}

static bool step_op(Op op) {
  OpClass c = op_class(op);
  return c == OC_UNARY || c == OC_BINARY || c == OC_SELECT || c == OC_CREATE || op == OP_COPY || op == OP_TO ||
         op == OP_CLONE;
}

// The template's value a against step t's b.
static bool match_value(Match *m, const Value *a, const Value *b) {
  if (a->is_scalar || b->is_scalar)
    return a->is_scalar && b->is_scalar && a->dtype == b->dtype && a->sval == b->sval && a->ival == b->ival;
  if (a->dtype != b->dtype || a->cplx || b->cplx || !same_view_shape(&a->view, &b->view))
    return false;
  if (a->buf == m->s0->out->buf) {  // the template's read of the state before it
    if (!is_identity(a, m->s0))
      return false;
    if (m->t > 0)
      return is_identity(b, m->prevt);
    if (m->r->init && m->r->init != b)
      return false;
    m->r->init = b;
    return true;
  }
  if (a->buf == b->buf)
    return match_leaf(m, a, b);
  if (!a->buf || !b->buf || a->buf->kind != BUF_KERNEL || b->buf->kind != BUF_KERNEL || a->view.offset != b->view.offset)
    return false;
  Node *na = a->buf->producer, *nb = b->buf->producer;
  ViewMap vm;
  if (!view_decompose(a->view, na->out->view.ndim, na->out->view.shape, &vm))
    return false;
  if (na->op != nb->op || na->nsrc != nb->nsrc || !step_op(na->op) || !same_attr(&na->attr, &nb->attr) ||
      na->out->dtype != nb->out->dtype || !same_view_shape(&na->out->view, &nb->out->view) ||
      na->out->buf != a->buf || nb->out->buf != b->buf || m->step[nb->id])
    return false;
  push_node(m, m->mine, nb);
  push_node(m, m->tmpl, na);
  for (int i = 0; i < na->nsrc; i++)
    if (!match_value(m, na->srcs[i], nb->srcs[i]))
      return false;
  return true;
}

// Y_t, the matmul whose whole result (in its own buffer, or placed in j's by
// fuse_place) part t of stack j is, in the result's element order; or NULL.
static Node *part_node(const Graph *g, const Node *j, int t) {
  const Value *v = j->srcs[t];
  if (v->is_scalar || !v->buf || v->buf->kind != BUF_KERNEL || v->cplx)
    return NULL;
  Node *y = NULL;
  if (v->buf != j->out->buf) {
    y = v->buf->producer;
  } else {
    for (int i = 0; i < g->nodes.len && !y; i++) {
      Node *n = g->nodes.data[i];
      if (n != j && n->out->buf == j->out->buf && n->out->view.offset == v->view.offset)
        y = n;
    }
  }
  if (!y || y->op != OP_MATMUL || y->out->buf != v->buf || v->view.offset != y->out->view.offset ||
      view_numel(v->view) != view_numel(y->out->view))
    return NULL;
  View c = view_contiguous(v->view.ndim, v->view.shape);
  for (int k = 0; k < v->view.ndim; k++)
    if (v->view.shape[k] > 1 && v->view.strides[k] != c.strides[k])
      return NULL;
  return y;
}

// Whether shapes a and b are the same once their size-1 dims are dropped.
static bool same_squeezed(int na, const int64_t *a, int nb, const int64_t *b) {
  int i = 0, k = 0;
  for (;;) {
    while (i < na && a[i] == 1)
      i++;
    while (k < nb && b[k] == 1)
      k++;
    if (i == na || k == nb)
      return i == na && k == nb;
    if (a[i++] != b[k++])
      return false;
  }
}

// The state S whose whole result matmul y reads as its [M, N] a operand, times c
// ([N, 1] or [N]: y is [M, 1] or [M]), or NULL.
static Node *state_of(const Node *y) {
  if (y->attr.nk || y->nsrc != 2)
    return NULL;
  const Value *a = y->srcs[0], *c = y->srcs[1];
  bool vec = c->view.ndim == 1;
  if (!a->buf || a->buf->kind != BUF_KERNEL || a->view.ndim != 2 || c->is_scalar || c->cplx || a->cplx ||
      y->out->view.ndim != (vec ? 1 : 2) || (!vec && (c->view.ndim != 2 || c->view.shape[1] != 1 || y->out->view.shape[1] != 1)))
    return NULL;
  Node *s = a->buf->producer;
  const View *sv = &s->out->view;
  int64_t N = sv->ndim ? sv->shape[sv->ndim - 1] : 0;
  if (s->out->buf != a->buf || !view_is_contiguous(*sv) || sv->offset || a->view.offset || a->view.shape[1] != N ||
      c->view.shape[0] != N || a->view.shape[0] * N != view_numel(*sv) || (a->view.shape[0] > 1 && a->view.strides[0] != N) ||
      (N > 1 && a->view.strides[1] != 1))
    return NULL;
  if (!step_op(s->op) || !dtype_is_float(s->out->dtype) || s->out->dtype != y->out->dtype ||
      c->dtype != y->out->dtype || a->dtype != y->out->dtype)
    return NULL;
  return s;
}

// ---- the elementwise tail: `torch.stack(ys) + u * D` stored by the recurrence ----
// Whether v's value is there before kernel k0 runs: a scalar, an input or constant, a
// result an earlier kernel stored, or an inline non-raising elementwise node of those;
// never a node of the recurrence (in).
static bool ready_before(const Value *v, int k0, const bool *in, int depth) {
  if (v->is_scalar || !v->buf || v->buf->kind != BUF_KERNEL)
    return true;
  const Node *p = v->buf->producer;
  if (in[p->id] || depth > 32)
    return false;
  if (p->mode != NM_INLINE)
    return p->mode == NM_STORED && p->kernel < k0;
  if (!step_op(p->op))
    return false;
  for (int i = 0; i < p->nsrc; i++)
    if (!ready_before(p->srcs[i], k0, in, depth + 1))
      return false;
  return true;
}

// The inline nodes v reads (through inline nodes) now first read in kernel k0.
static void first_read_at(const Value *v, int k0, int depth) {
  if (v->is_scalar || !v->buf || v->buf->kind != BUF_KERNEL || depth > 32)
    return;
  Node *p = v->buf->producer;
  if (p->mode != NM_INLINE)
    return;
  if (p->kernel > k0)
    p->kernel = k0;
  for (int i = 0; i < p->nsrc; i++)
    first_read_at(p->srcs[i], k0, depth + 1);
}

// The one node reading n's result (none if n is an output or read by several nodes,
// or by a node of `in`), or NULL.
static Node *sole_reader(const Graph *g, const Node *n, const bool *in) {
  Node *e = NULL;
  for (int i = 0; i < g->outputs.len; i++)
    if (g->outputs.data[i]->buf == n->out->buf)
      return NULL;
  for (int i = 0; i < g->nodes.len; i++) {
    Node *m = g->nodes.data[i];
    for (int s = 0; s < m->nsrc; s++) {
      if (m == n || m->srcs[s]->buf != n->out->buf)  // (the stack reads its placed parts)
        continue;
      if (in[m->id] || (e && e != m))
        return NULL;
      e = m;
    }
  }
  return e;
}

// Moves the elementwise node after `last` (the stack, or a tail taken before) into the
// recurrence's kernel k0 when that is its only reader, it reads `last` at the element
// it writes (identity views, the same shape), everything else it reads is ready before
// k0 and nothing between writes what it reads. Its kernel, if it had one to itself,
// goes; `last` becomes inline. The step's per-row loop then stores the tail's value at
// each (row, t) right after the step computes the stack's element, so what the tail
// reads (mamba's u) dies in the recurrence's kernel.
static bool take_tail(Graph *g, Recur *r, const Node *last, bool *in) {
  int k0 = r->kernel;
  Node *e = sole_reader(g, last, in);
  if (!e || !step_op(e->op) || e->mode == NM_LOCAL || e->out->cplx || e->out->is_scalar || !e->out->buf ||
      e->out->buf->producer != e || !same_shape(&e->out->view, &last->out->view))
    return false;
  for (int i = 0; i < e->nsrc; i++) {
    const Value *v = e->srcs[i];
    if (!v->is_scalar && v->buf == last->out->buf ? !is_identity(v, last) : !ready_before(v, k0, in, 0))
      return false;
  }
  int ke = e->kernel;
  if (ke <= k0)
    return false;
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n != e && n->mode != NM_INLINE && n->kernel == ke && e->mode == NM_STORED)
      return false;  // its kernel computes more than it
    if (op_is_store(n->op) && n->kernel > k0 && n->kernel <= ke)
      return false;  // a store between may write what it reads
  }
  Node *l = (Node *)last;
  int reader = -1;
  for (int i = 0; i < g->nodes.len && reader < 0; i++)
    for (int s = 0; s < g->nodes.data[i]->nsrc; s++)
      if (g->nodes.data[i]->srcs[s]->buf == e->out->buf)
        reader = i;
  bool output = false;
  for (int i = 0; i < g->outputs.len; i++)
    output |= g->outputs.data[i]->buf == e->out->buf;
  if (e->mode == NM_STORED) {  // its kernel goes
    for (int i = 0; i < g->nodes.len; i++) {
      Node *n = g->nodes.data[i];
      if (n->kernel == ke)
        n->kernel = k0;
      else if (n->kernel > ke)
        n->kernel--;
    }
    for (int i = 0; i < g->recurs.len; i++)
      if (g->recurs.data[i]->kernel > ke)
        g->recurs.data[i]->kernel--;
    g->nkernels--;
  } else {
    e->stored = output ? (FuseWhy){.code = FW_OUTPUT, .node = -1, .other = -1}
                       : (FuseWhy){.code = FW_READ_OUTSIDE, .node = reader, .other = -1};
  }
  for (int i = 0; i < e->nsrc; i++)
    first_read_at(e->srcs[i], k0, 0);
  e->mode = NM_STORED;
  e->kernel = k0;
  e->split = l->split;
  l->split = l->stored = (FuseWhy){.code = FW_NONE, .node = -1, .other = -1};
  l->mode = NM_INLINE;
  in[e->id] = true;
  r->tail = e;
  return true;
}

static bool try_stack(Graph *g, Node *j) {
  Ctx *cx = g->cx;
  int T = j->nsrc;
  if (T < 2 || j->op != OP_STACK || j->mode != NM_STORED)
    return false;
  Node **Y = arena_alloc(&cx->arena, sizeof *Y * (size_t)T), **S = arena_alloc(&cx->arena, sizeof *S * (size_t)T);
  for (int t = 0; t < T; t++)
    if (!(Y[t] = part_node(g, j, t)) || !(S[t] = state_of(Y[t])))
      return false;
  const View *sv = &S[0]->out->view, *pv = &j->srcs[0]->view;
  if (!same_squeezed(sv->ndim - 1, sv->shape, pv->ndim, pv->shape))  // part t's rows are the state's
    return false;
  for (int t = 1; t < T; t++)
    if (S[t] == S[t - 1])
      return false;
  Recur *r = arena_alloc(&cx->arena, sizeof *r);
  r->T = T;
  r->state = S[1];
  r->out = Y[1];
  r->first = S[0];
  r->stack = j;
  bool *step = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(g->nodes.len + 1));
  NodeVec mine = {0}, tmpl = {0};
  Match m = {.g = g, .r = r, .s0 = S[0], .step = step, .mine = &mine, .tmpl = &tmpl};
  for (int t = 0; t < T; t++) {
    if (t == 1)
      continue;
    m.t = t;
    m.prevt = t ? S[t - 1] : NULL;
    int from = mine.len;
    if (!match_value(&m, S[1]->out, S[t]->out) || !match_value(&m, Y[1]->srcs[1], Y[t]->srcs[1]))
      return false;
    for (int i = from; i < mine.len; i++)
      step[mine.data[i]->id] = true;
  }
  for (int i = 0; i < tmpl.len; i++)
    if (step[tmpl.data[i]->id])  // a template node is some other step's too
      return false;
  if (!r->init || !same_view_shape(&r->init->view, &S[0]->out->view))
    return false;
  for (int i = 0; i < tmpl.len; i++)
    vec_push(&cx->arena, &mine, tmpl.data[i]);
  // every step node is read by its own step, Y_t or the next step only
  bool *in = arena_alloc(&cx->arena, sizeof(bool) * (size_t)(g->nodes.len + 1));
  for (int i = 0; i < mine.len; i++)
    in[mine.data[i]->id] = true;
  for (int t = 0; t < T; t++)
    in[Y[t]->id] = true;
  in[j->id] = true;
  for (int i = 0; i < mine.len; i++)
    if (graph_buffer_uses(g, mine.data[i]->out->buf, in) || mine.data[i]->mode == NM_LOCAL)
      return false;
  for (int t = 0; t < T; t++)
    if (Y[t]->mode != NM_STORED ||
        (Y[t]->out->buf != j->out->buf && (graph_buffer_uses(g, Y[t]->out->buf, in) || Y[t]->out->buf->producer != Y[t])))
      return false;
  // the kernels from the first step's to the stack's compute nothing else
  int k0 = j->kernel;
  for (int i = 0; i < g->nodes.len; i++)
    if (in[i] && g->nodes.data[i]->mode != NM_INLINE && g->nodes.data[i]->kernel < k0)
      k0 = g->nodes.data[i]->kernel;
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (!in[i] && n->mode != NM_INLINE && n->kernel >= k0 && n->kernel <= j->kernel)
      return false;
  }
  // the rewrite
  int gone = j->kernel - k0;
  for (int i = 0; i < g->nodes.len; i++) {
    Node *n = g->nodes.data[i];
    if (in[i]) {
      n->kernel = k0;
      if (n != j) {  // computed in the kernel's loops, never stored (the Y_t into the stack)
        n->mode = NM_INLINE;
        n->stored = (FuseWhy){.code = FW_NONE, .node = -1, .other = -1};
      }
      n->split = (FuseWhy){.code = FW_NONE, .node = -1, .other = -1};
    } else if (n->kernel > j->kernel) {
      n->kernel -= gone;
    } else if (n->kernel > k0 && n->kernel <= j->kernel) {  // an inline node first read by a step
      n->kernel = k0;
    }
  }
  Node *root = j;  // the kernel's one stored node
  root->split = (FuseWhy){.code = FW_K_RECUR, .node = j->id, .other = -1, .n = T};
  for (int i = 0; i < g->recurs.len; i++)
    if (g->recurs.data[i]->kernel > j->kernel)
      g->recurs.data[i]->kernel -= gone;
  g->nkernels -= gone;
  r->kernel = k0;
  vec_push(&cx->arena, &g->recurs, r);
  for (const Node *last = j; take_tail(g, r, last, in);)
    last = r->tail;
  return true;
}

void fuse_recur(Graph *g) {
  for (int i = 0; i < g->nodes.len; i++)
    if (g->nodes.data[i]->op == OP_STACK)
      try_stack(g, g->nodes.data[i]);
}

const Recur *fuse_recur_of(const Graph *g, int kernel) {
  for (int i = 0; i < g->recurs.len; i++)
    if (g->recurs.data[i]->kernel == kernel)
      return g->recurs.data[i];
  return NULL;
}
