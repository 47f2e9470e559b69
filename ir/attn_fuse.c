// ir/attn_fuse.c: attention written out as its parts becomes one
// scaled_dot_product_attention node (attn_fuse, run by fuse_graph before it plans), as
// a fusing compiler does: the scores and the probabilities of every query row are then
// never written to memory (ir/attn.c, ir/attn_tile.c). The chain, as nanoGPT, minGPT
// and LLaMA write it (PyTorch's math path of F.scaled_dot_product_attention):
//   s = q @ kT                                   kT: any view; k is its last two dims swapped
//   s = s * c | c * s | s / c                    (optional; c a Python scalar: scale c or 1/c)
//   s = where(m, -inf, s) | where(m, s, -inf)    (optional: masked_fill(m, -inf), or a
//     | s + b | b + s                             bool mask kept where m; or a float bias b)
//   p = softmax(s, dim=-1)
//   y = p @ v
// becomes y = scaled_dot_product_attention(q, k, v, mask, scale) on the same result
// (is_causal instead of a mask of constants that keeps exactly j <= i, see is_causal)
// buffer: the last matmul node turns into the attention node (its readers see the same
// value), a bool mask that hides where m is true gets a logical_not node just before
// it, and the parts, read by nothing else, are pruned. Each part must be read only by
// the next (not returned, not stored into), its result read whole as it is laid out,
// all of one dtype (f32, f64, bf16 or f16), q, kT and v of at least 2 dims; anything else
// is left as written. The arithmetic differs from the parts' in rounding only (online
// softmax, fused multiply-adds, q scaled before the product; in bf16 and f16 one rounding
// for the parts' four, and in f16 no scores overflowed to inf: see fuse_one), which the
// tests' tolerances hold.
#include "ir/ir.h"

#include <math.h>
#include <string.h>

// How many times node n's result is read (by nodes' operands), or a large number when
// an output returns it or a store writes it.
static int reads_of(const Graph *g, const Node *n) {
  int r = 0;
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *m = g->nodes.data[i];
    for (int s = 0; s < m->nsrc; s++)
      if (m->srcs[s]->buf == n->out->buf)
        r += op_is_store(m->op) && s == 0 ? 1000 : 1;
  }
  for (int i = 0; i < g->outputs.len; i++)
    if (g->outputs.data[i]->buf == n->out->buf)
      r += 1000;
  return r;
}

// The node whose whole result v is, read as it is laid out, and read only once; NULL
// if none.
static Node *sole_part(const Graph *g, const Value *v, Op op) {
  if (v->is_scalar || !v->buf || v->buf->kind != BUF_KERNEL)
    return NULL;
  Node *n = v->buf->producer;
  View nv = n->out->view;
  nv.offset = 0;
  return n->op == op && view_same_elems(v->view, nv) && reads_of(g, n) == 1 ? n : NULL;
}

static bool is_neg_inf(const Value *v) { return v->is_scalar && isinf(v->sval) && v->sval < 0; }

// ---- a mask made of constants: causal? ----
// A mask that reads no parameter (nanoGPT's tril(ones(T, T)) == 0, or a triangle of
// aranges) is evaluated here in doubles (exact: its values are small integers and
// bools); one that keeps exactly the keys j <= i of every query row i is the causal
// mask, and the attention skips the blocks past each tile's diagonal instead of reading
// it. Each node the mask reads is evaluated whole, once per attn_fuse (Evals), so an
// element costs a lookup in its sources rather than a walk down the whole expression
// (at GPT-2's T = 512 that walk was 98% of a compile), and a mask alike one asked about
// before (same_value: GPT-2 builds the same one in each of its 12 layers) takes that
// one's verdict unevaluated. Evaluation gives up (false) on any
// op it does not know, or on a node of more than NODE_MAX elements.
enum { EVAL_MAX = 1 << 20, NODE_MAX = 1 << 22 };  // elements of a mask, of a node it reads, evaluated at most

// The nodes evaluated so far: each one's elements (its output, laid out contiguously),
// or NULL where it cannot be evaluated. In a scratch arena of attn_fuse's.
typedef struct Evaluated {
  const Node *node;
  const double *vals;
} Evaluated;
// A mask's verdict (is_causal of m, keep, L, S), kept so that a mask built again as the
// same expression (GPT-2's tril(ones(T, T)) == 0 in each of its 12 layers) is not
// evaluated again: same_value.
typedef struct Verdict {
  const Value *m;
  bool keep, causal;
  int64_t L, S;
} Verdict;
typedef struct Evals {
  Arena arena;
  VEC(Evaluated) done;
  VEC(Verdict) verdicts;
} Evals;

// The element of v's producer's (contiguous) output that v reads at index idx of an
// ndim-dim space v broadcasts into (right-aligned).
static int64_t elem_of(const Value *v, int ndim, const int64_t *idx) {
  int64_t e = v->view.offset;
  for (int d = 0; d < v->view.ndim; d++)
    e += (v->view.shape[d] == 1 ? 0 : idx[ndim - v->view.ndim + d]) * v->view.strides[d];
  return e;
}

// Node n's element at its output index idx from its operands' values a (a pointwise
// op), or of its own (a leaf); false for an op not known here.
static bool eval_node(const Node *n, const int64_t *idx, const double *a, double *out) {
  switch (n->op) {
  case OP_ZEROS: *out = 0; return true;
  case OP_ONES: *out = 1; return true;
  case OP_FULL: *out = dtype_is_float(n->out->dtype) ? n->attr.lo : (double)n->attr.ilo; return true;
  case OP_ARANGE:
    *out = dtype_is_float(n->out->dtype) ? n->attr.lo + (double)idx[0] * n->attr.hi
                                         : (double)(n->attr.ilo + idx[0] * n->attr.ihi);
    return true;
  case OP_EYE: *out = idx[0] == idx[1]; return true;
  case OP_COPY:
  case OP_CLONE: *out = a[0]; return true;
  case OP_TO: *out = n->out->dtype == DT_BOOL ? a[0] != 0 : dtype_is_float(n->out->dtype) ? a[0] : (double)(int64_t)a[0];
    return true;
  case OP_NEG: *out = -a[0]; return true;
  case OP_LOGICAL_NOT: *out = a[0] == 0; return true;
  case OP_ADD: *out = a[0] + a[1]; return true;
  case OP_SUB: *out = a[0] - a[1]; return true;
  case OP_MUL: *out = a[0] * a[1]; return true;
  case OP_EQ: *out = a[0] == a[1]; return true;
  case OP_NE: *out = a[0] != a[1]; return true;
  case OP_LT: *out = a[0] < a[1]; return true;
  case OP_LE: *out = a[0] <= a[1]; return true;
  case OP_GT: *out = a[0] > a[1]; return true;
  case OP_GE: *out = a[0] >= a[1]; return true;
  case OP_LOGICAL_AND: *out = a[0] != 0 && a[1] != 0; return true;
  case OP_LOGICAL_OR: *out = a[0] != 0 || a[1] != 0; return true;
  case OP_WHERE: *out = a[0] != 0 ? a[1] : a[2]; return true;
  default: return false;
  }
}

static const double *node_values(Evals *ev, const Node *n);

// The elements of v's producer (NULL: not evaluable), v read in an ndim-dim space.
static const double *value_values(Evals *ev, const Value *v, int ndim) {
  if (v->is_scalar || !v->buf || v->buf->kind != BUF_KERNEL || v->view.ndim > ndim)
    return NULL;
  return node_values(ev, v->buf->producer);
}

static bool is_leaf(Op op) { return op == OP_ZEROS || op == OP_ONES || op == OP_FULL || op == OP_ARANGE || op == OP_EYE; }

// n's elements, evaluated once, its sources' first; NULL if it cannot be evaluated.
static const double *node_values(Evals *ev, const Node *n) {
  for (int i = 0; i < ev->done.len; i++)
    if (ev->done.data[i].node == n)
      return ev->done.data[i].vals;
  const View *ov = &n->out->view;
  int64_t numel = view_numel(*ov), idx[TD_MAX_DIMS] = {0};
  const double *src[3] = {NULL, NULL, NULL};
  bool leaf = is_leaf(n->op), ok = numel <= NODE_MAX && (leaf || (op_is_pointwise(n->op) && n->nsrc <= 3));
  for (int s = 0; ok && !leaf && s < n->nsrc; s++)
    ok = n->srcs[s]->is_scalar || (src[s] = value_values(ev, n->srcs[s], ov->ndim)) != NULL;
  double *vals = ok ? arena_alloc(&ev->arena, sizeof(double) * (size_t)(numel + 1)) : NULL, a[3] = {0, 0, 0};
  int nsrc = leaf ? 0 : n->nsrc;
  for (int s = 0; s < nsrc; s++) {  // (a scalar's value once)
    const Value *v = n->srcs[s];
    a[s] = src[s] ? 0 : dtype_is_float(v->dtype) ? v->sval : (double)v->ival;
  }
  for (int64_t at = 0; vals && at < numel; at++) {
    for (int s = 0; s < nsrc; s++)
      if (src[s])
        a[s] = src[s][elem_of(n->srcs[s], ov->ndim, idx)];
    if (!eval_node(n, idx, a, &vals[at]))
      vals = NULL;
    view_next_index(ov->ndim, idx, ov->shape);
  }
  vec_push(&ev->arena, &ev->done, ((Evaluated){n, vals}));
  return vals;
}

// Whether a and b evaluate alike by node_values (element for element, in the same
// views): the same scalars, or views alike of nodes of the same op, output dtype and
// shape, leaf attributes and sources, down to the leaves. Only the ops eval_node knows
// compare; depth is bounded (a mask is a small expression).
static bool same_value(const Value *a, const Value *b, int depth) {
  if (a == b)
    return true;
  if (a->is_scalar || b->is_scalar)
    return a->is_scalar && b->is_scalar && a->dtype == b->dtype &&
           (dtype_is_float(a->dtype) ? a->sval == b->sval : a->ival == b->ival);
  if (depth > 32 || a->dtype != b->dtype || !a->buf || !b->buf || a->buf->kind != BUF_KERNEL ||
      b->buf->kind != BUF_KERNEL || !view_same_elems(a->view, b->view))
    return false;
  const Node *x = a->buf->producer, *y = b->buf->producer;
  if (x == y)
    return true;
  if (x->op != y->op || x->out->dtype != y->out->dtype || x->nsrc != y->nsrc ||
      !view_same_elems(x->out->view, y->out->view) || (!is_leaf(x->op) && !op_is_pointwise(x->op)))
    return false;
  if (is_leaf(x->op))
    return x->attr.lo == y->attr.lo && x->attr.hi == y->attr.hi && x->attr.ilo == y->attr.ilo &&
           x->attr.ihi == y->attr.ihi;
  for (int s = 0; s < x->nsrc; s++)
    if (!same_value(x->srcs[s], y->srcs[s], depth + 1))
      return false;
  return true;
}

static bool eval_causal(Evals *ev, const Value *m, bool keep, int64_t L, int64_t S);

// Whether the mask m (a [.., L, S] view: keep where true, or hide where true when
// !keep) keeps exactly the keys j <= i of every row i; a mask alike one asked about
// before gets its verdict.
static bool is_causal(Evals *ev, const Value *m, bool keep, int64_t L, int64_t S) {
  for (int i = 0; i < ev->verdicts.len; i++) {
    const Verdict *v = &ev->verdicts.data[i];
    if (v->keep == keep && v->L == L && v->S == S && same_value(v->m, m, 0))
      return v->causal;
  }
  bool causal = eval_causal(ev, m, keep, L, S);
  vec_push(&ev->arena, &ev->verdicts, ((Verdict){m, keep, causal, L, S}));
  return causal;
}

static bool eval_causal(Evals *ev, const Value *m, bool keep, int64_t L, int64_t S) {
  const View *v = &m->view;
  int64_t n = view_numel(*v), idx[TD_MAX_DIMS] = {0};
  if (n == 0 || n > EVAL_MAX || v->ndim < 2 || v->shape[v->ndim - 2] != L || v->shape[v->ndim - 1] != S ||
      L == 1 || S == 1)
    return false;  // (of one row or one column: broadcast along it, not a triangle)
  const double *vals = value_values(ev, m, v->ndim);
  if (!vals)
    return false;
  for (int64_t at = 0; at < n; at++) {
    double x = vals[elem_of(m, v->ndim, idx)];
    if (((x != 0) == keep) != (idx[v->ndim - 1] <= idx[v->ndim - 2]))
      return false;
    view_next_index(v->ndim, idx, v->shape);
  }
  return true;
}

// src's view broadcast to the result's batch dims and its own last two (rows, cols).
static bool to_batch(Graph *g, const Value *src, View v, const View *out, int64_t rows, int64_t cols, Value **res) {
  int nd = out->ndim;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, out->shape, sizeof(int64_t) * (size_t)(nd - 2));
  shape[nd - 2] = rows, shape[nd - 1] = cols;
  View e;
  int bad;
  if (v.ndim > nd || !view_expand(v, nd, shape, &e, &bad))
    return false;
  *res = graph_view(g, src, e, src->loc);
  return true;
}

// The scores' matmul under s, past an optional scale by a Python scalar (*scale);
// NULL if s is not that.
static Node *scores(const Graph *g, const Value *s, double *scale) {
  Node *m;
  *scale = 1;
  if ((m = sole_part(g, s, OP_MUL)) || (m = sole_part(g, s, OP_DIV))) {
    int c = m->srcs[0]->is_scalar ? 0 : 1;
    if (!m->srcs[c]->is_scalar || (m->op == OP_DIV && c == 0))
      return NULL;
    *scale = m->op == OP_DIV ? 1 / m->srcs[c]->sval : m->srcs[c]->sval;
    s = m->srcs[1 - c];
  }
  Node *qk = sole_part(g, s, OP_MATMUL);
  return qk && !qk->attr.nk && qk->out->dtype == s->dtype ? qk : NULL;
}

// Node n, just made (graph_node put it last), moved to just before node `before`.
static void move_before(Graph *g, Node *n, const Node *before) {
  TD_ASSERT(g->nodes.data[g->nodes.len - 1] == n);
  int at = 0;
  while (g->nodes.data[at] != before)
    at++;
  memmove(&g->nodes.data[at + 1], &g->nodes.data[at], sizeof(Node *) * (size_t)(g->nodes.len - 1 - at));
  g->nodes.data[at] = n;
  for (int i = 0; i < g->nodes.len; i++)
    g->nodes.data[i]->id = i;
}

// Node y (a matmul) as the end of an attention chain: rewritten, or false.
static bool fuse_one(Graph *g, Evals *ev, Node *y) {
  Node *sm = sole_part(g, y->srcs[0], OP_SOFTMAX);
  const View *ov = &y->out->view;
  int nd = ov->ndim;
  if (!sm || nd < 2 || sm->attr.dims != 1u << (sm->out->view.ndim - 1) || sm->out->view.ndim != nd)
    return false;
  // In bf16 and f16 the parts round each result to the dtype (PyTorch's matmul sums in
  // f32, then rounds; softmax computes in f32): the attention computes in f32 and rounds
  // once, within a rounding or two of the parts' (and nearer the exact value). In f16 the
  // parts' raw scores overflow to inf past 65504 (a row holding +inf is then NaN: inf -
  // inf in the softmax), the attention's do not: its scores are f32 and its result is the
  // attention's exact value rounded, as PyTorch's own fusions give on a GPU (its flash and
  // memory-efficient kernels, and torch.compile's replacement of this chain by them).
  // PyTorch 1.13's CPU has no f16 bmm: there the chain has no meaning to keep.
  DType dt = y->out->dtype;
  if ((dt != DT_F32 && dt != DT_F64 && dt != DT_BF16 && dt != DT_F16) || sm->out->dtype != dt ||
      sm->srcs[0]->dtype != dt)
    return false;
  // the mask or bias (optional), the scale (optional), the scores' matmul
  const Value *s = sm->srcs[0], *cond = NULL, *bias = NULL;
  bool keep = true;
  double scale = 1;
  Node *m, *qk = NULL;
  if ((m = sole_part(g, s, OP_WHERE))) {
    bool a_inf = is_neg_inf(m->srcs[1]), b_inf = is_neg_inf(m->srcs[2]);
    if (a_inf == b_inf)
      return false;
    cond = m->srcs[0], keep = b_inf;
    qk = scores(g, m->srcs[a_inf ? 2 : 1], &scale);
  } else if ((m = sole_part(g, s, OP_ADD))) {
    int side = scores(g, m->srcs[0], &scale) ? 0 : 1;
    qk = scores(g, m->srcs[side], &scale);
    bias = m->srcs[1 - side];
    if (bias->is_scalar || bias->dtype != dt)
      return false;
  } else {
    qk = scores(g, s, &scale);
  }
  if (!qk)
    return false;
  const Value *q = qk->srcs[0], *kt = qk->srcs[1], *v = y->srcs[1];
  if (q->view.ndim < 2 || kt->view.ndim < 2 || v->view.ndim < 2 || q->dtype != dt || kt->dtype != dt ||
      v->dtype != dt || (cond && cond->dtype != DT_BOOL))
    return false;
  int64_t L = ov->shape[nd - 2], S = kt->view.shape[kt->view.ndim - 1], E = q->view.shape[q->view.ndim - 1],
          Ev = ov->shape[nd - 1];
  // the operands in the attention's form: q [.., L, E], k [.., S, E], v [.., S, Ev], mask [.., L, S]
  Value *ops[4];
  bool causal = cond && is_causal(ev, cond, keep, L, S);
  if (causal)
    cond = NULL;
  int nops = cond || bias ? 4 : 3;
  View kv = view_transpose(kt->view, kt->view.ndim - 2, kt->view.ndim - 1);
  if (!to_batch(g, q, q->view, ov, L, E, &ops[0]) || !to_batch(g, kt, kv, ov, S, E, &ops[1]) ||
      !to_batch(g, v, v->view, ov, S, Ev, &ops[2]))
    return false;
  const Value *mk = cond ? cond : bias;
  if (mk && !to_batch(g, mk, mk->view, ov, L, S, &ops[3]))
    return false;
  if (cond && !keep) {  // a logical_not of the mask, placed just before the attention
    Value *c = ops[3];
    Node *no = graph_node(g, OP_LOGICAL_NOT, DT_BOOL, c->view.ndim, c->view.shape, &c, 1, (NodeAttr){0}, cond->loc);
    move_before(g, no, y);
    ops[3] = no->out;
  }
  // the lines of the ops it absorbs (the scale's node is the producer of what qk feeds)
  const Node *parts[] = {qk, NULL, m, sm};
  for (int i = 0; i < g->nodes.len && !parts[1]; i++)
    for (int j = 0; j < g->nodes.data[i]->nsrc; j++)
      if (g->nodes.data[i] != m && g->nodes.data[i] != sm && g->nodes.data[i]->srcs[j]->buf == qk->out->buf)
        parts[1] = g->nodes.data[i];
  int *lines = arena_alloc(&g->cx->arena, sizeof(int) * 4), nl = 0;
  for (int i = 0; i < 4; i++)
    if (parts[i])
      lines[nl++] = loc_line(parts[i]->loc);
  y->lines = lines, y->nlines = nl;
  y->op = OP_SDPA;
  y->attr = (NodeAttr){.scale = scale, .causal = causal};
  y->nsrc = nops;
  y->srcs = arena_alloc(&g->cx->arena, sizeof(Value *) * (size_t)nops);
  memcpy(y->srcs, ops, sizeof(Value *) * (size_t)nops);
  return true;
}

// ---- the result written in its reader's layout ----
// An attention's result read only by a copy through a permutation of its dims
// (`y.transpose(1, 2).contiguous()`, `y.permute(0, 2, 1, 3).reshape(B, T, C)`: the
// heads merged back) is written by the attention straight into the copy's buffer: its
// result becomes the permuted view of that buffer (each output row's Ev elements stay
// unit-stride), the copy is pruned, and its readers read the buffer as before. Kept:
// the attention's own buffer is read by nothing else (no output, no store), the copy
// is of the same dtype into a contiguous buffer of its own, and its source walks the
// attention's whole buffer, each dim of more than one element one of the result's dims.

// The copy c as the attention a's result's reader: a's result as a view of c's buffer
// into *out, or false.
static bool permuted_into(const Node *a, const Node *c, View *out) {
  const Value *src = c->srcs[0], *r = a->out;
  const View *sv = &src->view, *av = &r->view;
  if (c->out->dtype != r->dtype || c->out->cplx || r->cplx || c->out->buf->producer != c ||
      c->out->view.offset != 0 || !view_is_contiguous(c->out->view) || sv->offset != 0 ||
      view_numel(*sv) != view_numel(*av) || view_numel(c->out->view) != c->out->buf->numel ||
      sv->ndim != av->ndim || av->offset != 0 || !view_is_contiguous(*av))
    return false;
  View cs = view_contiguous(sv->ndim, sv->shape);  // where src's index k lies in c's buffer
  *out = *av;
  bool used[TD_MAX_DIMS] = {false};
  for (int d = 0; d < av->ndim; d++) {
    out->strides[d] = 0;
    if (av->shape[d] == 1)
      continue;
    int k = 0;
    while (k < sv->ndim && (used[k] || sv->shape[k] != av->shape[d] || sv->strides[k] != av->strides[d]))
      k++;
    if (k == sv->ndim)
      return false;
    used[k] = true;
    out->strides[d] = cs.strides[k];
  }
  for (int k = 0; k < sv->ndim; k++)
    if (sv->shape[k] != 1 && !used[k])
      return false;
  return true;
}

// Each attention whose result a permuting copy alone reads writes the copy's buffer;
// whether any did (the copies are then unread: graph_prune drops them).
static bool place_outputs(Graph *g) {
  bool any = false;
  for (int i = 0; i < g->nodes.len; i++) {
    Node *a = g->nodes.data[i];
    Buffer *ab = a->out->buf;
    if (a->op != OP_SDPA || ab->producer != a || graph_buffer_uses(g, ab, NULL) != 1)
      continue;
    Node *c = NULL;
    for (int j = i + 1; j < g->nodes.len && !c; j++)
      if (g->nodes.data[j]->nsrc == 1 && g->nodes.data[j]->srcs[0]->buf == ab)
        c = g->nodes.data[j];
    View v;
    if (!c || c->op != OP_COPY || !permuted_into(a, c, &v))
      continue;
    a->out->buf = c->out->buf;
    a->out->view = v;
    c->out->buf->producer = a;
    c->out->node = NULL;  // now a view of the attention's result
    any = true;
  }
  return any;
}

// ---- grouped-query attention: k and v read at their own heads ----
// LLaMA's repeat_kv (`k[:, :, None].expand(B, KV, R, S, E).reshape(B, KV * R, S, E)`),
// repeat_interleave(k, R, dim=1) and k.repeat(1, R, 1, 1) copy each key/value head R
// times (the reshape of an expanded view is a copy): query head h then reads head
// h / R (h % KV for repeat) of a buffer R times k's size. An attention whose k or v is
// such a copy gets its batch dim d split in two, (H / R, R) (or (R, H / R)), in every
// operand and its result: views of the same elements, no index divided. The repeated
// source is then read through the copy's own source, the R-part of the split a stride
// 0, and the copy, read by nothing else, is pruned: K and V stay at KV heads (RoPE'd k
// is stored at its own size; a source whose rows are not dense is copied at KV heads,
// see unrepeat), the R query heads of a group read the same rows. The attention's
// loops are the result's dims (ir/attn.c, ir/attn_tile.c, ir/attn_gpu.c take any
// number of batch dims: the R heads' loop, inner, is the parallel one at LLaMA's
// sizes), so nothing else changes.

// v with dim d split into np parts of sizes n[0..np-1], outermost first: the same elements (their product
// v.shape[d]).
static View split_dims(View v, int d, int np, const int64_t *n) {
  View r = v;
  r.ndim = v.ndim + np - 1;
  for (int i = v.ndim - 1; i > d; i--)
    r.shape[i + np - 1] = v.shape[i], r.strides[i + np - 1] = v.strides[i];
  int64_t st = v.strides[d];
  for (int j = np - 1; j >= 0; j--)
    r.shape[d + j] = n[j], r.strides[d + j] = st, st *= n[j];
  return r;
}

static View split_dim(View v, int d, int64_t n0, int64_t n1) { return split_dims(v, d, 2, (int64_t[]){n0, n1}); }

// The copy (a contiguous() or reshape of a view that is not one) whose result v reads,
// of the same dtype into a contiguous buffer of its own; NULL if v is not one.
static const Node *copy_under(const Value *v) {
  if (v->is_scalar || !v->buf || v->buf->kind != BUF_KERNEL)
    return NULL;
  const Node *c = v->buf->producer;
  if (c->op != OP_COPY || c->nsrc != 1 || c->srcs[0]->is_scalar || c->out->buf != v->buf || c->out->cplx ||
      c->srcs[0]->cplx || c->out->dtype != c->srcs[0]->dtype)
    return NULL;
  const View *x = &c->srcs[0]->view, *o = &c->out->view;
  if (o->offset != 0 || !view_is_contiguous(*o) || o->ndim != x->ndim || view_numel(*o) != v->buf->numel)
    return NULL;
  for (int d = 0; d < o->ndim; d++)
    if (o->shape[d] != x->shape[d])
      return NULL;
  return c;
}

// r, a view of a contiguous result of shape pshape, as a view of the same elements laid
// out as x (a view of that shape: the source a copy copied, a smaller copy of it, an
// operand of a pointwise op); false where r mixes its dims (view_decompose).
static bool recompose(int pndim, const int64_t *pshape, const View *x, View r, View *out) {
  ViewMap m;
  if (!view_decompose(r, pndim, pshape, &m))
    return false;
  *out = r;
  out->offset = x->offset;
  for (int q = 0; q < x->ndim; q++)
    out->offset += m.start[q] * x->strides[q];
  for (int d = 0; d < r.ndim; d++)
    out->strides[d] = m.pdim[d] < 0 ? 0 : m.mult[d] * x->strides[m.pdim[d]];
  return true;
}

// src (k or v) split at dim d into the np parts n, read through the copy of a repeat when one is under it
// and one of the parts then moves through no element: into *out; whether it is.
static bool repeat_read(const Value *src, int d, int np, const int64_t *n, View *out) {
  const Node *c = copy_under(src);
  View r;
  if (!c || !recompose(c->out->view.ndim, c->out->view.shape, &c->srcs[0]->view, split_dims(src->view, d, np, n), &r))
    return false;
  for (int j = d; j < d + np; j++)
    if (r.shape[j] > 1 && r.strides[j] == 0) {
      *out = r;
      return true;
    }
  return false;
}

// A copy of the repeating copy c's source without the repeats (its broadcast dims of
// size 1), placed just before attention a, and split view r of c's result as a view of
// it; c, read only by a, is then pruned. For a repeated source whose rows are not dense
// (a key's E elements apart, unit-stride): v straight from a projection's [B, S, KV * E]
// is 1 KB a key at LLaMA's size, which the tiles read slower than a copy at KV heads
// costs.
static Value *unrepeat(Graph *g, Node *a, const Node *c, View r) {
  Value *x = c->srcs[0];
  View xs = x->view, lay;
  for (int q = 0; q < xs.ndim; q++)
    if (xs.strides[q] == 0)
      xs.shape[q] = 1;
  Value *src = graph_view(g, x, xs, x->loc);
  Node *u = graph_node(g, OP_COPY, c->out->dtype, xs.ndim, xs.shape, &src, 1, c->attr, c->loc);
  u->out->buf->name = c->out->buf->name;
  move_before(g, u, a);
  lay = u->out->view;  // u's buffer, read at c's (repeated) index
  for (int q = 0; q < xs.ndim; q++)
    lay.shape[q] = x->view.shape[q], lay.strides[q] = xs.shape[q] == 1 ? 0 : lay.strides[q];
  View at;
  bool ok = recompose(c->out->view.ndim, c->out->view.shape, &lay, r, &at);  // (r decomposed before: repeat_read)
  TD_ASSERT(ok);
  return graph_view(g, u->out, at, c->loc);
}

// Attention a's batch dim d split into the np parts n in every operand and its result, the repeated k and v
// read at their own heads (split_dims, repeat_read).
static void split_heads(Graph *g, Node *a, int d, int np, const int64_t *n) {
  int id = a->out->view.ndim + np - 3, ed = id + 1;  // the split views' key (row) and feature dims
  for (int s = 0; s < a->nsrc; s++) {
    Value *src = a->srcs[s];
    View r;
    if ((s == 1 || s == 2) && repeat_read(src, d, np, n, &r)) {
      const Node *c = src->buf->producer;
      bool dense = r.strides[ed] == 1 && (r.shape[id] == 1 || r.strides[id] == r.shape[ed]);
      if (!dense && graph_buffer_uses(g, c->out->buf, NULL) == 1)
        a->srcs[s] = unrepeat(g, a, c, split_dims(src->view, d, np, n));
      else
        a->srcs[s] = graph_view(g, c->srcs[0], r, src->loc);
    } else {
      a->srcs[s] = graph_view(g, src, split_dims(src->view, d, np, n), src->loc);
    }
  }
  Value *y = graph_view(g, a->out, split_dims(a->out->view, d, np, n), a->out->loc);
  y->node = a;
  a->out->node = NULL;  // now a view of the attention's result, as its readers see it
  a->out = y;
}

// Attention a whose k or v repeats heads: its heads split (split_heads), or false. Each of k and v that
// is a repeat's copy has its cut: the inner part c of a split of the head dim into (H / c, c) that reads
// it through the copy's source (c = R for repeat_kv and repeat_interleave, KV for repeat). Where both are
// and their cuts differ (k repeat_interleave'd, v repeat'ed: h / R and h % KV), the head dim is split at
// both, (H / c2, c2 / c1, c1) where c1 divides c2, and each reads its source through its own parts
// (cuts that do not nest: the larger one's operand alone; the other keeps its copy).
static bool share_heads(Graph *g, Node *a) {
  int nd = a->out->view.ndim;
  for (int d = 0; d < nd - 2 && nd < TD_MAX_DIMS; d++) {
    int64_t H = a->out->view.shape[d], cut[2] = {0, 0};
    View r;
    for (int s = 1; s <= 2; s++)
      for (int64_t c = H; c >= 1 && !cut[s - 1] && copy_under(a->srcs[s]); c--)  // (MQA: (1, H), not (H, 1))
        if (H % c == 0 && repeat_read(a->srcs[s], d, 2, (int64_t[]){H / c, c}, &r))
          cut[s - 1] = c;
    if (!cut[0] && !cut[1])
      continue;
    int64_t c2 = cut[0] > cut[1] ? cut[0] : cut[1], c1 = !cut[0] || !cut[1] ? c2 : cut[0] + cut[1] - c2;
    int64_t n2[2] = {H / c2, c2}, n3[3] = {H / c2, c2 / c1, c1};
    bool both = c1 != c2 && c2 % c1 == 0 && nd + 1 < TD_MAX_DIMS && repeat_read(a->srcs[1], d, 3, n3, &r) &&
                repeat_read(a->srcs[2], d, 3, n3, &r);
    split_heads(g, a, d, both ? 3 : 2, both ? n3 : n2);
    return true;
  }
  return false;
}

// ---- RoPE applied as the attention reads q and k ----
// LLaMA (Hugging Face's apply_rotary_pos_emb) rotates q and k before the attention,
//   x * cos + cat([-x[..., E/2:], x[..., :E/2]], dim=-1) * sin      (rotate_half; each
//                                            product's operands and the sum's either way)
// (Meta's: view_as_real(view_as_complex(x.reshape(.., E/2, 2)) * freqs).flatten(-2), see
// complex_rotation) stored by a kernel of its own (the cat or the stack splits its
// loops) and read back by the attention. An attention whose q or k is that sum, each
// part read only by the next and all of the attention's dtype (f32, f64), reads x
// instead, the rotation its attr.rope and cos and sin its sources (ir/attn.c rotates as
// it loads: ir/attn_tile.c's query rows and a batch's keys into scratch first), so the
// rotated q and k are never stored. Kept: x's halves
// are slices of x's own view, and the attention reads the sum through a view that
// decomposes onto its elements (view_decompose: its heads split) whose last dim walks
// the sum's last dim whole, and that no batch dim broadcasts: GQA's k, read at its KV
// heads by R query heads each (share_heads), would be rotated R times (each batch's k
// once, ir/attn_tile.c), which cost more than its kernel at TinyLlama's size (32 heads,
// R 8, T 256: the attention 1.05x the time of both kernels with LLVM), so it stays stored
// (a KV head's size, R times smaller than q's).

// Node m (x * cos, either way) as the plain product of the rotation whose halves lo and
// hi (cat's sources: x's low half, the negated high half's source) are: x and cos into
// *x and *cs, or false.
static bool plain_product(const Node *m, const Value *lo, const Value *hi, const Value **x, const Value **cs) {
  for (int j = 0; j < 2; j++) {
    const Value *a = m->srcs[j];
    const View *ov = &m->out->view;
    if (a->is_scalar || m->srcs[1 - j]->is_scalar || a->buf != lo->buf || a->buf != hi->buf || a->view.ndim != ov->ndim)
      continue;
    int ed = ov->ndim - 1;
    bool whole = ov->shape[ed] % 2 == 0;
    for (int d = 0; d < ov->ndim; d++)
      whole &= a->view.shape[d] == ov->shape[d];
    View half = a->view;
    half.shape[ed] /= 2;
    if (!whole || !view_same_elems(lo->view, half))
      continue;
    half.offset += half.shape[ed] * half.strides[ed];
    if (!view_same_elems(hi->view, half))
      continue;
    *x = a, *cs = m->srcs[1 - j];
    return true;
  }
  return false;
}

// The rotation whose sum is node p: x, the cos and sin tables (tab) and their views
// expanded to p's shape (tv), or false.
static bool rotation(const Graph *g, const Node *p, const Value **x, View *tv, const Value **tab) {
  const View *pv = &p->out->view;
  int nd = pv->ndim, bad;
  DType dt = p->out->dtype;
  for (int i = 0; i < 2; i++) {
    Node *rm = sole_part(g, p->srcs[i], OP_MUL), *pm = sole_part(g, p->srcs[1 - i], OP_MUL);
    if (!rm || !pm || rm->out->dtype != dt || pm->out->dtype != dt)
      continue;
    for (int j = 0; j < 2; j++) {
      Node *c = sole_part(g, rm->srcs[j], OP_CAT), *ng;
      const Value *sn = rm->srcs[1 - j], *cs;
      if (!c || c->nsrc != 2 || c->attr.dim != nd - 1 || c->out->dtype != dt || sn->is_scalar || sn->dtype != dt ||
          !(ng = sole_part(g, c->srcs[0], OP_NEG)) || ng->out->dtype != dt ||
          !plain_product(pm, c->srcs[1], ng->srcs[0], x, &cs) || cs->dtype != dt || (*x)->dtype != dt ||
          !view_expand(cs->view, nd, pv->shape, &tv[0], &bad) || !view_expand(sn->view, nd, pv->shape, &tv[1], &bad))
        continue;
      tab[0] = cs, tab[1] = sn;
      return true;
    }
  }
  return false;
}

// The operand of m that is not v (the same elements of the same buffer), or NULL.
static const Value *other(const Node *m, const Value *v) {
  for (int j = 0; j < 2; j++) {
    const Value *a = m->srcs[j];
    if (!a->is_scalar && !v->is_scalar && a->buf == v->buf && view_same_elems(a->view, v->view))
      return m->srcs[1 - j];
  }
  return NULL;
}

// Node p as the complex form's product (Meta's LLaMA: view_as_real(view_as_complex(x) *
// freqs)), ir/build_complex.c's complex multiply, each product's operands either way:
//   stack([xr * fr - xi * fi, xr * fi + xi * fr], dim=-1)
// of x's pairs (xr, xi: the parts' views of one buffer, a pair's elements next to each
// other in x's last dim): x's view, the tables (fr, fi) and theirs, as p's shape (the
// tables' pair dim broadcast), or false.
static bool complex_rotation(const Graph *g, const Node *p, const Value **x, View *xv, View *tv, const Value **tab) {
  const View *pv = &p->out->view;
  int nd = pv->ndim, bad;
  DType dt = p->out->dtype;
  if (p->op != OP_STACK || p->nsrc != 2 || nd < 2 || p->attr.dim != nd - 1 || pv->shape[nd - 1] != 2)
    return false;
  Node *re = sole_part(g, p->srcs[0], OP_SUB), *im = sole_part(g, p->srcs[1], OP_ADD), *m[4];
  if (!re || !im || re->out->dtype != dt || im->out->dtype != dt)
    return false;
  for (int i = 0; i < 4; i++)  // xr * fr, xi * fi, xr * fi, xi * fr
    if (!(m[i] = sole_part(g, (i < 2 ? re : im)->srcs[i % 2], OP_MUL)) || m[i]->out->dtype != dt)
      return false;
  for (int j = 0; j < 2; j++) {
    const Value *xr = m[0]->srcs[j], *fr = m[0]->srcs[1 - j], *fi = other(m[2], xr), *xi = fi ? other(m[1], fi) : NULL;
    const Value *fr2 = xi ? other(m[3], xi) : NULL;
    if (!fr2 || fr->is_scalar || fr2->buf != fr->buf || !view_same_elems(fr2->view, fr->view) || xr->buf != xi->buf ||
        xr->dtype != dt || fr->dtype != dt || fi->dtype != dt || xr->view.ndim != nd - 1 || xi->view.ndim != nd - 1)
      continue;
    View hi = xr->view;
    int64_t ps = xi->view.offset - xr->view.offset;
    hi.offset += ps;
    bool whole = ps != 0 && view_same_elems(xi->view, hi) && (hi.shape[nd - 2] == 1 || hi.strides[nd - 2] == 2 * ps);
    for (int d = 0; d < nd - 1; d++)
      whole &= xr->view.shape[d] == pv->shape[d];
    if (!whole || !view_expand(fr->view, nd - 1, pv->shape, &tv[0], &bad) ||
        !view_expand(fi->view, nd - 1, pv->shape, &tv[1], &bad))
      continue;
    *xv = xr->view;
    xv->ndim = nd, xv->shape[nd - 1] = 2, xv->strides[nd - 1] = ps;
    for (int t = 0; t < 2; t++)
      tv[t].ndim = nd, tv[t].shape[nd - 1] = 2, tv[t].strides[nd - 1] = 0;
    *x = xr, tab[0] = fr, tab[1] = fi;
    return true;
  }
  return false;
}

// Attention a's source s (q or k) as the rotation's x, the rotation its attr.rope and
// its tables sources; whether it is. The complex form's p is [.., E/2, 2]: the
// attention's last dim split in two walks its last two.
static bool rotate_read(Graph *g, Node *a, int s) {
  const Value *r = a->srcs[s], *x, *tab[2];
  DType dt = a->out->dtype;
  if (r->is_scalar || !r->buf || r->buf->kind != BUF_KERNEL || (dt != DT_F32 && dt != DT_F64) || r->dtype != dt)
    return false;
  for (int d = 0; d < r->view.ndim - 2; d++)  // (read by several heads: see the comment above)
    if (r->view.shape[d] > 1 && r->view.strides[d] == 0)
      return false;
  const Node *p = r->buf->producer;
  const View *pv = &p->out->view;
  int ed = r->view.ndim - 1, nd = pv->ndim;
  int64_t E = r->view.shape[ed];
  bool pr = p->op == OP_STACK;  // the complex form
  View tv[2], xv, at[3], rr = pr && E % 2 == 0 ? split_dim(r->view, ed, E / 2, 2) : r->view;
  ViewMap m;
  if (p->out->buf != r->buf || pv->offset != 0 || !view_is_contiguous(*pv) || reads_of(g, p) != 1 ||
      !(pr ? complex_rotation(g, p, &x, &xv, tv, tab) : p->op == OP_ADD && rotation(g, p, &x, tv, tab)) ||
      !view_decompose(rr, nd, pv->shape, &m))
    return false;
  if (pr ? m.pdim[ed] != nd - 2 || m.mult[ed] != 1 || m.pdim[ed + 1] != nd - 1 || m.mult[ed + 1] != 1 ||
               E != 2 * pv->shape[nd - 2]
         : m.pdim[ed] != nd - 1 || m.mult[ed] != 1 || E != pv->shape[nd - 1])
    return false;
  for (int d = 0; d < ed; d++)
    if (m.pdim[d] == nd - 1 || (pr && m.pdim[d] == nd - 2))
      return false;
  if (!pr)
    xv = x->view;
  if (!recompose(nd, pv->shape, &xv, rr, &at[0]) || !recompose(nd, pv->shape, &tv[0], rr, &at[1]) ||
      !recompose(nd, pv->shape, &tv[1], rr, &at[2]))
    return false;
  if (pr) {  // x's pairs merged back into the last dim; the tables at a pair's index
    TD_ASSERT(at[0].strides[ed] == 2 * at[0].strides[ed + 1] || at[0].shape[ed] == 1);
    at[0].ndim--, at[0].shape[ed] = E, at[0].strides[ed] = at[0].strides[ed + 1];
    at[1].ndim--, at[2].ndim--;
  }
  Value **srcs = arena_alloc(&g->cx->arena, sizeof(Value *) * (size_t)(a->nsrc + 2));
  memcpy(srcs, a->srcs, sizeof(Value *) * (size_t)a->nsrc);
  srcs[s] = graph_view(g, x, at[0], r->loc);
  srcs[a->nsrc] = graph_view(g, tab[0], at[1], tab[0]->loc);
  srcs[a->nsrc + 1] = graph_view(g, tab[1], at[2], tab[1]->loc);
  a->srcs = srcs, a->nsrc += 2;
  a->attr.rope |= (uint8_t)((1u << s) | (pr ? 4u << s : 0));
  int *lines = arena_alloc(&g->cx->arena, sizeof(int) * (size_t)(a->nlines + 1));
  if (a->nlines)  // (an F.scaled_dot_product_attention has none: memcpy of NULL is undefined)
    memcpy(lines, a->lines, sizeof(int) * (size_t)a->nlines);
  lines[a->nlines] = loc_line(p->loc);
  a->lines = lines, a->nlines++;
  return true;
}

bool attn_fuse(Graph *g) {
  bool any = false;
  Evals ev = {0};
  for (int i = 0; i < g->nodes.len; i++)
    if (g->nodes.data[i]->op == OP_MATMUL && !g->nodes.data[i]->attr.nk)
      any |= fuse_one(g, &ev, g->nodes.data[i]);
  arena_reset(&ev.arena);
  bool placed = place_outputs(g), shared = false;
  for (int i = 0; i < g->nodes.len; i++)  // (after an unrepeat, i + 1 is the same attention: nothing to share)
    if (g->nodes.data[i]->op == OP_SDPA)
      shared |= share_heads(g, g->nodes.data[i]);
  if (any || placed || shared)
    graph_prune(g);
  bool rotated = false;  // (after the prune: a repeat's copy no longer reads the rotated k)
  for (int i = 0; i < g->nodes.len; i++)
    if (g->nodes.data[i]->op == OP_SDPA)
      for (int s = 0; s < 2; s++)
        rotated |= rotate_read(g, g->nodes.data[i], s);
  if (rotated)
    graph_prune(g);
  return any;
}
