// ir/build.c: the builders' primitives (ir/build.h): numbers, elementwise nodes, views,
// reductions, creation, joins, gathers and products as graph values, each node with the
// dtype and shape PyTorch gives the op; and build_call, which runs a builder and puts
// the nodes it made in the builder order.
// Invariants: a primitive never checks what the front end has checked (shapes broadcast,
// dims in range, dtypes the op takes); a node's attributes are those the front end gives
// the same op called by its PyTorch name; the nodes of one builder call end in the order
// of a depth-first walk from its results, operands left to right, and an operand's own
// nodes stay together, where that walk first reaches them.
#include "ir/build.h"

#include <math.h>
#include <string.h>

// ============================================================================
// Running a builder, and its order
// ============================================================================
Value *build_in(Builder *b, int i) {
  TD_ASSERT(i >= 0 && i < b->nin);
  if (!b->vals[i]) {
    int n0 = b->g->nodes.len;
    b->vals[i] = b->operand(b->ctx, i);
    if (b->g->nodes.len > n0) b->block[i] = n0, b->block_end[i] = b->g->nodes.len;
  }
  return b->vals[i];
}

typedef struct Order {
  Graph *g;
  int mark;            // the first node of the call
  Node **nodes;        // the call's nodes, as made
  int n;
  int *block;          // per node of the call: the operand block it is in (-1: the builder's)
  bool *placed;
  Node **out;          // the new order
  int nout;
  const Builder *b;
} Order;

static void place_node(Order *o, Node *nd);

// v's value: the node producing its buffer, then the stores into that buffer the call
// made before `before` (a store's result is its target: a reader of the target reads the
// write), in the order they were made.
static void place_value(Order *o, const Value *v, int before) {
  if (!v || !v->buf) return;
  if (v->buf->kind == BUF_KERNEL) {
    Node *p = v->buf->producer;
    if (p->id >= o->mark && !o->placed[p->id - o->mark]) place_node(o, p);
  }
  for (int k = 0; k < before && k < o->n; k++) {
    Node *st = o->nodes[k];
    if (!o->placed[k] && op_is_store(st->op) && st->srcs[0]->buf == v->buf) place_node(o, st);
  }
}

static void place_node(Order *o, Node *nd) {
  int k = nd->id - o->mark, blk = o->block[k];
  if (blk >= 0) {  // an operand's nodes: all of them, as its lowering ordered them
    for (int j = o->b->block[blk]; j < o->b->block_end[blk]; j++)
      if (!o->placed[j - o->mark]) {
        o->placed[j - o->mark] = true;
        o->out[o->nout++] = o->nodes[j - o->mark];
      }
    return;
  }
  o->placed[k] = true;  // (a node never reads itself: no cycle)
  for (int s = 0; s < nd->nsrc; s++) place_value(o, nd->srcs[s], k);
  o->out[o->nout++] = nd;
}

// The nodes from mark on in the builder order; the builder's nodes no result reaches are
// dropped (with their buffers and the values over them), an operand's never.
static void reorder(Graph *g, const Builder *b, int mark, int bmark, int vmark, Value **res, int nres) {
  Arena *A = &g->cx->arena;
  int n = g->nodes.len - mark;
  if (n <= 0) return;
  Order o = {.g = g, .mark = mark, .n = n, .b = b};
  o.nodes = arena_alloc(A, sizeof(Node *) * (size_t)n);
  o.block = arena_alloc(A, sizeof(int) * (size_t)n);
  o.placed = arena_alloc(A, (size_t)n);
  o.out = arena_alloc(A, sizeof(Node *) * (size_t)n);
  for (int i = 0; i < n; i++) {
    o.nodes[i] = g->nodes.data[mark + i];
    TD_ASSERT(o.nodes[i]->id == mark + i);
    o.block[i] = -1;
  }
  for (int k = 0; k < b->nin; k++)
    for (int j = b->block[k]; j >= 0 && j < b->block_end[k]; j++) o.block[j - mark] = k;
  for (int i = 0; i < nres; i++) place_value(&o, res[i], n);
  for (int k = 0; k < b->nin; k++)  // an operand computed and then not read: kept, in its place
    if (b->block[k] >= 0 && !o.placed[b->block[k] - mark]) place_node(&o, o.nodes[b->block[k] - mark]);
  bool *kept = arena_alloc(A, (size_t)n);  // by old position
  for (int i = 0; i < o.nout; i++) kept[o.out[i]->id - mark] = true;
  for (int i = 0; i < n; i++)  // a dropped node leaves the graph: its id says so
    if (!kept[i]) o.nodes[i]->id = -1;
  // nodes and their buffers in the new order (any other buffer made meanwhile, such as
  // a dry run's operand, first); ids are positions again
  int nb = bmark;
  for (int i = bmark; i < g->bufs.len; i++)
    if (g->bufs.data[i]->kind != BUF_KERNEL) g->bufs.data[nb++] = g->bufs.data[i];
  for (int i = 0; i < o.nout; i++) {
    Node *nd = o.out[i];
    g->nodes.data[mark + i] = nd;
    nd->id = mark + i;
    g->bufs.data[nb++] = nd->out->buf;
  }
  for (int i = bmark; i < nb; i++) g->bufs.data[i]->id = i;
  g->nodes.len = mark + o.nout;
  g->bufs.len = nb;
  // values: each node's sources before its result (graph_verify's order), then the rest
  // but those over a dropped node's buffer
  int nv = g->values.len - vmark, k = 0;
  Value **vals = arena_alloc(A, sizeof(Value *) * (size_t)(nv ? nv : 1));
  bool *vplaced = arena_alloc(A, (size_t)(nv ? nv : 1));
  for (int i = 0; i < o.nout; i++) {
    Node *nd = o.out[i];
    for (int s = 0; s < nd->nsrc; s++) {
      Value *v = nd->srcs[s];
      if (v->id >= vmark && !vplaced[v->id - vmark]) vplaced[v->id - vmark] = true, vals[k++] = v;
    }
    if (!vplaced[nd->out->id - vmark]) vplaced[nd->out->id - vmark] = true, vals[k++] = nd->out;
  }
  for (int i = 0; i < nv; i++) {
    Value *v = g->values.data[vmark + i];
    bool dead = v->buf && v->buf->kind == BUF_KERNEL && v->buf->producer->id < 0;
    if (!vplaced[i] && !dead) vals[k++] = v;
  }
  for (int i = 0; i < k; i++) {
    g->values.data[vmark + i] = vals[i];
    vals[i]->id = vmark + i;
  }
  g->values.len = vmark + k;
}

static int run(Graph *g, Loc loc, Loc name_loc, BuildFn fn, const void *args, int nin, const BuildIn *in,
               BuildOperand operand, void *ctx, const BuildCheck *check, void *check_ctx, Value **out) {
  Arena *A = &g->cx->arena;
  Builder b = {.g = g, .loc = loc, .name_loc = name_loc, .nin = nin, .in = in, .operand = operand, .ctx = ctx,
               .check = check, .check_ctx = check_ctx};
  if (check) {
    int64_t one = 1;
    b.dummy = graph_param(g, "(failed)", DT_F32, 1, &one, false, loc);
  }
  b.vals = arena_alloc(A, sizeof(Value *) * (size_t)(nin + 1));
  b.block = arena_alloc(A, sizeof(int) * (size_t)(nin + 1));
  b.block_end = arena_alloc(A, sizeof(int) * (size_t)(nin + 1));
  for (int i = 0; i < nin; i++) b.block[i] = b.block_end[i] = -1;
  int mark = g->nodes.len, bmark = g->bufs.len, vmark = g->values.len;
  int n = fn(&b, args, out);
  if (b.failed) return 0;
  TD_ASSERT(n >= 1);
  reorder(g, &b, mark, bmark, vmark, out, n);
  return n;
}

int build_call(Graph *g, Loc loc, Loc name_loc, BuildFn fn, const void *args, int nin, const BuildIn *in,
               BuildOperand operand, void *ctx, Value **out) {
  int n = run(g, loc, name_loc, fn, args, nin, in, operand, ctx, NULL, NULL, out);
  TD_ASSERT(n >= 1);
  return n;
}

int build_check(Graph *g, Loc loc, Loc name_loc, BuildFn fn, const void *args, int nin, const BuildIn *in,
                BuildOperand operand, void *ctx, const BuildCheck *check, void *check_ctx, Value **out) {
  return run(g, loc, name_loc, fn, args, nin, in, operand, ctx, check, check_ctx, out);
}

// A check failed: from now on every primitive gives the placeholder and makes nothing.
#define GUARD(b)                  \
  do {                            \
    if ((b)->failed)              \
      return (b)->dummy;          \
  } while (0)
#define CHECK(b, what, ...)                                                           \
  do {                                                                                \
    if ((b)->check && (b)->check->what && !(b)->check->what((b)->check_ctx, __VA_ARGS__)) { \
      (b)->failed = true;                                                             \
      return (b)->dummy;                                                              \
    }                                                                                 \
  } while (0)

// ============================================================================
// Numbers
// ============================================================================
Value *build_float(Builder *b, double v) {
  return graph_scalar(b->g, DT_F64, v, isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0, b->loc);
}
Value *build_int(Builder *b, int64_t v) { return graph_scalar(b->g, DT_I64, (double)v, v, b->loc); }
Value *build_bool(Builder *b, bool v) { return graph_scalar(b->g, DT_BOOL, v, v, b->loc); }

Value *build_scalar(Builder *b, DType dt, double f, int64_t i) { return graph_scalar(b->g, dt, f, i, b->loc); }

Value *build_number(Builder *b, double v, DType dt) {
  if (dtype_is_float(dt)) return build_float(b, v);
  if (dt == DT_BOOL) return build_bool(b, v != 0);
  double t = v != v ? 0 : v > 9.2e18 ? 9.2e18 : v < -9.2e18 ? -9.2e18 : v;
  return build_int(b, (int64_t)t);
}

// ============================================================================
// Dtypes and shapes of the elementwise primitives
// ============================================================================
DType build_unary_dtype(Op op, DType in) {
  if (op_flags(op) & OF_INT_TO_FLOAT) return dtype_is_float(in) ? in : DT_F32;  // ints and bool: the default float
  switch (op) {
  case OP_SQUARE: return in == DT_BOOL ? DT_I64 : in;
  case OP_LOGICAL_NOT: return DT_BOOL;
  default: return in;
  }
}

DType build_binary_dtype(Op op, DType common) {
  switch (op) {
  case OP_DIV: case OP_ATAN2: case OP_COPYSIGN: return dtype_is_float(common) ? common : DT_F32;
  case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_LOGICAL_AND: case OP_LOGICAL_OR:
    return DT_BOOL;
  default: return common;
  }
}

DType build_result_type(Value *const *vs, int n) {
  DTypeOperand ops[8];
  int k = 0;
  TD_ASSERT(n <= 8);
  for (int i = 0; i < n; i++) {
    const Value *v = vs[i];
    if (!v) continue;
    ops[k].dtype = v->dtype;
    ops[k++].kind = v->is_scalar || v->wrapped ? DTO_WRAPPED : v->view.ndim > 0 ? DTO_DIMMED : DTO_ZERO_DIM;
  }
  return dtype_result_type(ops, k);
}

// The broadcast shape of the tensors among vs (numbers take no part).
static void broadcast_shape(Value *const *vs, int n, int *nd, int64_t *shape) {
  *nd = 0;
  for (int i = 0; i < n; i++) {
    const View *v = &vs[i]->view;
    if (vs[i]->is_scalar) continue;
    int m = *nd > v->ndim ? *nd : v->ndim;
    int64_t out[TD_MAX_DIMS];
    for (int d = m - 1; d >= 0; d--) {
      int ia = d - (m - *nd), ib = d - (m - v->ndim);
      int64_t sa = ia >= 0 ? shape[ia] : 1, sb = ib >= 0 ? v->shape[ib] : 1;
      TD_ASSERT(sa == sb || sa == 1 || sb == 1);
      out[d] = sa == 1 ? sb : sa;
    }
    memcpy(shape, out, sizeof(int64_t) * (size_t)m);
    *nd = m;
  }
}

Value *build_node(Builder *b, Op op, DType dt, int n, const int64_t *shape, Value **srcs, int nsrc, NodeAttr attr) {
  GUARD(b);
  return graph_node(b->g, op, dt, n, shape, srcs, nsrc, attr, b->loc)->out;
}

static Value *node1(Builder *b, Op op, DType dt, Value *x, NodeAttr attr) {
  return build_node(b, op, dt, x->view.ndim, x->view.shape, &x, 1, attr);
}

// ============================================================================
// Elementwise nodes
// ============================================================================
Value *build_unary(Builder *b, Op op, Value *x) {
  GUARD(b);
  CHECK(b, unary, op, x);
  if (op == OP_BITWISE_NOT && x->dtype == DT_BOOL) op = OP_LOGICAL_NOT;
  NodeAttr none = {0};
  return node1(b, op, build_unary_dtype(op, x->dtype), x, none);
}

Value *build_binary(Builder *b, Op op, Value *x, Value *y) {
  GUARD(b);
  CHECK(b, binary, op, x, y);
  Value *xs[2] = {x, y};
  int nd;
  int64_t shape[TD_MAX_DIMS];
  broadcast_shape(xs, 2, &nd, shape);
  NodeAttr none = {0};
  return build_node(b, op, build_binary_dtype(op, build_result_type(xs, 2)), nd, shape, xs, 2, none);
}

Value *build_where(Builder *b, Value *c, Value *x, Value *y) {
  GUARD(b);
  CHECK(b, where, c, x, y);
  Value *xs[3] = {c, x, y};
  int nd;
  int64_t shape[TD_MAX_DIMS];
  broadcast_shape(xs, 3, &nd, shape);
  NodeAttr none = {0};
  return build_node(b, OP_WHERE, build_result_type(xs + 1, 2), nd, shape, xs, 3, none);
}

Value *build_clamp(Builder *b, Value *x, const Value *lo, const Value *hi) {
  GUARD(b);
  CHECK(b, clamp, x, lo, hi);
  Value *ts[3] = {x, (Value *)lo, (Value *)hi};
  NodeAttr a = {0};
  a.has_lo = lo != NULL;
  a.has_hi = hi != NULL;
  if (lo) a.lo = lo->sval, a.ilo = lo->ival;
  if (hi) a.hi = hi->sval, a.ihi = hi->ival;
  return node1(b, OP_CLAMP, build_result_type(ts, 3), x, a);
}

Value *build_cast(Builder *b, Value *x, DType dt) {
  GUARD(b);
  if (x->dtype == dt) return x;
  NodeAttr none = {0};
  return node1(b, OP_TO, dt, x, none);
}

Value *build_clone(Builder *b, Value *x) {
  GUARD(b);
  NodeAttr none = {0};
  return node1(b, OP_CLONE, x->dtype, x, none);
}

Value *build_up(Builder *b, Value *x) { return dtype_is_half(x->dtype) ? build_cast(b, x, DT_F32) : x; }
Value *build_down(Builder *b, Value *y, DType dt) { return dtype_is_half(dt) ? build_cast(b, y, dt) : y; }

// ============================================================================
// Views
// ============================================================================
static int wrap(int d, int n) { return d < 0 ? d + (n > 0 ? n : 1) : d; }

Value *build_view(Builder *b, Value *x, View v) {
  GUARD(b);
  if (view_equal(x->view, v)) return x;
  return graph_view(b->g, x, v, b->loc);
}

// A view or a node of n dims: refused by the dry run's rank check beyond TD_MAX_DIMS (a
// builder checked that way never makes one when lowering).
bool build_rank(Builder *b, int n) {
  if (b->failed) return false;
  if (b->check && b->check->rank && !b->check->rank(b->check_ctx, n)) {
    b->failed = true;
    return false;
  }
  TD_ASSERT(n <= TD_MAX_DIMS);
  return true;
}
#define RANK(b, n)                          \
  do {                                      \
    if (!build_rank(b, n)) return (b)->dummy; \
  } while (0)

Value *build_reshape(Builder *b, Value *x, int n, const int64_t *shape) {
  GUARD(b);
  RANK(b, n);
  View v;
  if (view_reshape(x->view, n, shape, &v)) return build_view(b, x, v);
  NodeAttr none = {0};
  Value *c = node1(b, OP_COPY, x->dtype, x, none);
  return build_view(b, c, view_contiguous(n, shape));
}

Value *build_contiguous(Builder *b, Value *x) {
  GUARD(b);
  if (view_is_contiguous(x->view)) return x;
  NodeAttr none = {0};
  return node1(b, OP_COPY, x->dtype, x, none);
}

Value *build_narrow(Builder *b, Value *x, int dim, int64_t start, int64_t len) {
  GUARD(b);
  CHECK(b, narrow, x, dim, start, len);
  return build_view(b, x, view_narrow(x->view, wrap(dim, x->view.ndim), start, len));
}
Value *build_select(Builder *b, Value *x, int dim, int64_t index) {
  GUARD(b);
  return build_view(b, x, view_select(x->view, wrap(dim, x->view.ndim), index));
}
Value *build_unsqueeze(Builder *b, Value *x, int dim) {
  GUARD(b);
  RANK(b, x->view.ndim + 1);
  return build_view(b, x, view_unsqueeze(x->view, wrap(dim, x->view.ndim + 1)));
}
Value *build_squeeze(Builder *b, Value *x, int dim) {
  GUARD(b);
  if (x->view.ndim == 0) return x;
  return build_view(b, x, view_squeeze(x->view, wrap(dim, x->view.ndim)));
}
Value *build_transpose(Builder *b, Value *x, int d0, int d1) {
  GUARD(b);
  if (x->view.ndim == 0) return x;
  return build_view(b, x, view_transpose(x->view, wrap(d0, x->view.ndim), wrap(d1, x->view.ndim)));
}
Value *build_permute(Builder *b, Value *x, const int *perm) {
  GUARD(b);
  return build_view(b, x, view_permute(x->view, perm));
}
Value *build_expand(Builder *b, Value *x, int n, const int64_t *shape) {
  GUARD(b);
  RANK(b, n);
  View v;
  int bad;
  TD_ASSERT(view_expand(x->view, n, shape, &v, &bad));
  return build_view(b, x, v);
}
Value *build_flip(Builder *b, Value *x, int n, const int *dims) {
  GUARD(b);
  if (x->view.ndim == 0) return x;
  return build_view(b, x, view_flip(x->view, n, dims));
}
Value *build_diagonal(Builder *b, Value *x, int64_t offset, int d1, int d2) {
  GUARD(b);
  return build_view(b, x, view_diagonal(x->view, offset, wrap(d1, x->view.ndim), wrap(d2, x->view.ndim)));
}

Value *build_flatten(Builder *b, Value *x) {
  GUARD(b);
  if (x->view.ndim == 1) return x;
  int64_t n = view_numel(x->view);
  return build_reshape(b, x, 1, &n);
}

// x.repeat(r) of more counts than a [1, n] pair per dim fits TD_MAX_DIMS: x (as k dims,
// contiguous) tiled one dim at a time, each a [pre, 1, rest] view expanded to [pre, r, rest]
// and copied.
static Value *repeat_by_dims(Builder *b, Value *x, int k, const int64_t *r) {
  int64_t shape[TD_MAX_DIMS] = {0};  // (gcc -O1 of the sanitizer build cannot see k >= 1)
  int lead = k - x->view.ndim;
  for (int i = 0; i < k; i++) shape[i] = i < lead ? 1 : x->view.shape[i - lead];
  Value *y = build_reshape(b, x, k, shape);
  for (int d = 0; d < k; d++) {
    if (r[d] == 1) continue;
    int64_t pre = 1, rest = 1;
    for (int i = 0; i < d; i++) pre *= shape[i];
    for (int i = d; i < k; i++) rest *= shape[i];
    Value *v = build_reshape(b, y, 3, (int64_t[]){pre, 1, rest});
    v = build_expand(b, v, 3, (int64_t[]){pre, r[d], rest});
    shape[d] *= r[d];
    y = build_reshape(b, v, k, shape);
  }
  return y == x || y->buf->own != y ? build_clone(b, y) : y;
}

Value *build_repeat(Builder *b, Value *x, int k, const int64_t *r) {
  GUARD(b);
  if (2 * k > TD_MAX_DIMS) return repeat_by_dims(b, x, k, r);
  const View *v = &x->view;
  int64_t pairs[TD_MAX_DIMS], ones[TD_MAX_DIMS], out[TD_MAX_DIMS];
  for (int i = 0; i < k; i++) {
    int64_t src = i < k - v->ndim ? 1 : v->shape[i - (k - v->ndim)];
    ones[2 * i] = 1, ones[2 * i + 1] = src;
    pairs[2 * i] = r[i], pairs[2 * i + 1] = src;
    out[i] = r[i] * src;
  }
  View u;
  TD_ASSERT(view_reshape(*v, 2 * k, ones, &u));
  return build_reshape(b, build_expand(b, build_view(b, x, u), 2 * k, pairs), k, out);
}

Value *build_movedim(Builder *b, Value *x, int n, const int *src, const int *dst) {
  GUARD(b);
  int perm[TD_MAX_DIMS];
  view_movedim_perm(x->view.ndim, n, src, dst, perm);
  return build_permute(b, x, perm);
}

// ============================================================================
// Reductions, rows, scans, sorts
// ============================================================================
Value *build_reduce_to(Builder *b, Op op, Value *x, uint32_t mask, bool keepdim, int dim, DType dt) {
  GUARD(b);
  CHECK(b, reduce, op, x, dt);
  const View *v = &x->view;
  int64_t shape[TD_MAX_DIMS];
  int on = 0;
  for (int i = 0; i < v->ndim; i++) {
    if (!(mask >> i & 1)) shape[on++] = v->shape[i];
    else if (keepdim) shape[on++] = 1;
  }
  NodeAttr a = {0};
  a.dims = mask;
  a.keepdim = keepdim;
  a.dim = dim;
  return build_node(b, op, dt, on, shape, &x, 1, a);
}

DType build_reduce_dtype(Op op, DType in) {
  switch (op) {
  case OP_SUM: case OP_PROD: return dtype_is_float(in) || dtype_is_complex(in) ? in : DT_I64;
  case OP_LOGSUMEXP: return dtype_is_float(in) ? in : DT_F32;
  case OP_ARGMAX: case OP_ARGMIN: return DT_I64;
  case OP_ALL: case OP_ANY: return in == DT_U8 ? DT_U8 : DT_BOOL;  // PyTorch: uint8 stays uint8
  default: return in;
  }
}

Value *build_reduce_mask(Builder *b, Op op, Value *x, uint32_t mask, int dim, bool keepdim, DType dt) {
  GUARD(b);
  Value *r = build_reduce_to(b, op, x, x->view.ndim ? mask : 0, keepdim, dim,
                             dt == DT_COUNT ? build_reduce_dtype(op, x->dtype) : dt);
  if (r->node) r->node->attr.correction = 1;  // unbiased: the default of var and std
  return r;
}

Value *build_reduce_all(Builder *b, Op op, Value *x) {
  GUARD(b);
  uint32_t all = x->view.ndim ? (uint32_t)((1ull << x->view.ndim) - 1) : 0;
  return build_reduce_mask(b, op, x, all, -1, false, DT_COUNT);
}

Value *build_reduce_dim(Builder *b, Op op, Value *x, int dim, bool keepdim) {
  GUARD(b);
  int a = wrap(dim, x->view.ndim);
  return build_reduce_mask(b, op, x, 1u << a, a, keepdim, DT_COUNT);
}

Value *build_reduce(Builder *b, Op op, Value *x, uint32_t mask, bool keepdim) {
  return build_reduce_to(b, op, x, mask, keepdim, -1, x->dtype);
}

Value *build_softmax(Builder *b, Op op, Value *x, int dim, DType dt) {
  GUARD(b);
  CHECK(b, softmax, x, dt);
  NodeAttr a = {0};
  a.dim = wrap(dim, x->view.ndim);
  a.dims = x->view.ndim ? 1u << a.dim : 0;
  return node1(b, op, dt, x, a);
}

Value *build_scan(Builder *b, Op op, Value *x, int dim, DType dt) {
  GUARD(b);
  NodeAttr a = {0};
  a.dim = wrap(dim, x->view.ndim);
  a.dims = x->view.ndim ? 1u << a.dim : 0;
  return node1(b, op, dt, x, a);
}

Value *build_sort(Builder *b, Op op, Value *x, bool descending, int64_t first) {
  GUARD(b);
  NodeAttr a = {0};
  a.dim = x->view.ndim ? x->view.ndim - 1 : 0;
  a.descending = descending;
  a.first = first;
  return node1(b, op, op == OP_SORT ? x->dtype : DT_I64, x, a);
}

// ============================================================================
// Creation, joins, gathers, products
// ============================================================================
Value *build_full(Builder *b, int n, const int64_t *shape, const Value *fill, DType dt) {
  GUARD(b);
  NodeAttr a = {0};
  a.lo = fill->sval;
  a.ilo = fill->ival;
  return build_node(b, OP_FULL, dt, n, shape, NULL, 0, a);
}

Value *build_zeros(Builder *b, int n, const int64_t *shape, DType dt) {
  GUARD(b);
  NodeAttr none = {0};
  return build_node(b, OP_ZEROS, dt, n, shape, NULL, 0, none);
}

Value *build_arange(Builder *b, int64_t start, int64_t end, int64_t step, DType dt) {
  GUARD(b);
  int64_t span = end - start, count = span / step + (span % step != 0);
  NodeAttr a = {0};
  a.lo = (double)start, a.hi = (double)step, a.ilo = start, a.ihi = step;
  return build_node(b, OP_ARANGE, dt, 1, &count, NULL, 0, a);
}

Value *build_eye(Builder *b, int64_t n, int64_t m, DType dt) {
  GUARD(b);
  int64_t shape[2] = {n, m};
  NodeAttr none = {0};
  return build_node(b, OP_EYE, dt, 2, shape, NULL, 0, none);
}

static Value *join(Builder *b, Op op, Value *const *xs, int n, int dim) {
  const View *v0 = &xs[0]->view;
  int64_t shape[TD_MAX_DIMS];
  int on, a;
  if (op == OP_STACK) {
    a = wrap(dim, v0->ndim + 1);
    on = 0;
    for (int i = 0; i <= v0->ndim; i++) shape[on++] = i == a ? n : (i < a ? v0->shape[i] : v0->shape[i - 1]);
  } else {
    a = wrap(dim, v0->ndim);
    on = v0->ndim;
    memcpy(shape, v0->shape, sizeof(int64_t) * (size_t)on);
    for (int i = 1; i < n; i++) shape[a] += xs[i]->view.shape[a];
  }
  DTypeOperand ops[64];
  DType dt = DT_COUNT;
  for (int i = 0; i < n; i += 64) {  // torch.result_type of the tensors, 64 at a time
    int k = 0;
    for (int j = i; j < n && k < 64; j++, k++)
      ops[k] = (DTypeOperand){xs[j]->dtype, xs[j]->view.ndim > 0 ? DTO_DIMMED : DTO_ZERO_DIM};
    DType r = dtype_result_type(ops, k);
    dt = dt == DT_COUNT ? r : dtype_promote(dt, r);
  }
  NodeAttr at = {0};
  at.dim = a;
  at.dims = 1u << a;
  return build_node(b, op, dt, on, shape, (Value **)xs, n, at);
}

Value *build_cat(Builder *b, Value *const *xs, int n, int dim) {
  GUARD(b);
  return n == 1 ? xs[0] : join(b, OP_CAT, xs, n, dim);
}
Value *build_stack(Builder *b, Value *const *xs, int n, int dim) {
  GUARD(b);
  return join(b, OP_STACK, xs, n, dim);
}

Value *build_index_select(Builder *b, Value *x, int dim, Value *index) {
  GUARD(b);
  int on = x->view.ndim;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, x->view.shape, sizeof(int64_t) * (size_t)on);
  NodeAttr a = {0};
  a.dim = wrap(dim, on);
  a.dims = on ? 1u << a.dim : 0;
  if (on) shape[a.dim] = view_numel(index->view);
  Value *xs[2] = {x, index};
  return build_node(b, OP_INDEX_SELECT, x->dtype, on, shape, xs, 2, a);
}

Value *build_gather(Builder *b, Value *x, int dim, Value *index) {
  GUARD(b);
  NodeAttr a = {0};
  a.dim = wrap(dim, x->view.ndim);
  a.dims = x->view.ndim ? 1u << a.dim : 0;
  Value *xs[2] = {x, index};
  return build_node(b, OP_GATHER, x->dtype, index->view.ndim, index->view.shape, xs, 2, a);
}

Value *build_matmul(Builder *b, Value *x, Value *y) {
  GUARD(b);
  CHECK(b, matmul, x, y);
  int n;
  int64_t shape[TD_MAX_DIMS];
  TD_ASSERT(build_matmul_shape(&x->view, &y->view, &n, shape));
  Value *xs[2] = {x, y};
  NodeAttr none = {0};
  return build_node(b, OP_MATMUL, x->dtype, n, shape, xs, 2, none);
}

// The output of a contraction with the roles of attr: the largest role + 1 dims, each the
// size of the operand dims that walk it (1s broadcast).
static Value *contraction(Builder *b, Value *x, Value *y, NodeAttr attr) {
  int64_t shape[TD_MAX_DIMS];
  int on = 0;
  for (int t = 0; t < TD_MAX_DIMS; t++) shape[t] = 1;
  for (int w = 0; w < 2; w++) {
    const View *v = &(w ? y : x)->view;
    for (int d = 0; d < v->ndim; d++) {
      int r = attr.role[w][d];
      if (r < 0) continue;
      if (v->shape[d] != 1) shape[r] = v->shape[d];
      on = r + 1 > on ? r + 1 : on;
    }
  }
  Value *xs[2] = {x, y};
  return build_node(b, OP_MATMUL, x->dtype, on, shape, xs, 2, attr);
}

Value *build_matmul_k(Builder *b, Value *a, Value *c, int nk) {
  GUARD(b);
  CHECK(b, contract, a, c);
  const View *va = &a->view, *vb = &c->view;
  int ba = va->ndim - 1 - nk, bb = vb->ndim - 1 - nk, nbt = ba > bb ? ba : bb;
  NodeAttr at = {0};
  at.nk = nk;
  for (int i = 0; i < ba; i++) at.role[0][i] = (int8_t)(i + nbt - ba);
  for (int i = 0; i < bb; i++) at.role[1][i] = (int8_t)(i + nbt - bb);
  at.role[0][ba] = (int8_t)nbt, at.role[1][vb->ndim - 1] = (int8_t)(nbt + 1);
  for (int q = 0; q < nk; q++) at.role[0][ba + 1 + q] = at.role[1][bb + q] = (int8_t)(-1 - q);
  return contraction(b, a, c, at);
}

Value *build_contract(Builder *b, Value *a, Value *c, const int8_t *role_a, const int8_t *role_b) {
  GUARD(b);
  CHECK(b, contract, a, c);
  NodeAttr at = {0};
  for (int w = 0; w < 2; w++) {
    const int8_t *r = w ? role_b : role_a;
    int n = (w ? c : a)->view.ndim;
    for (int i = 0; i < n; i++) {
      at.role[w][i] = r[i];
      if (r[i] < 0 && -r[i] > at.nk) at.nk = -r[i];
    }
  }
  return contraction(b, a, c, at);
}

// Whether a and b, views of one buffer, share a storage element range.
static bool ranges_meet(const Value *a, const Value *b) {
  int64_t alo, ahi, blo, bhi;
  return a->buf == b->buf && view_extent(a->view, &alo, &ahi) && view_extent(b->view, &blo, &bhi) && alo <= bhi &&
         blo <= ahi;
}

Value *build_store_node(Graph *g, Op op, Value **srcs, int n, NodeAttr attr, Loc loc, const Loc *src_locs) {
  NodeAttr none = {0};
  Value *t = srcs[0];
  // x += x.flip(0): PyTorch's flip is a copy, so the value is read as it was before the
  // write. Any overlapping view of the target (sema let only these through) is first
  // copied, so the store never reads what it has already written.
  if (op == OP_STORE && n == 2 && !srcs[1]->is_scalar && !view_equal(t->view, srcs[1]->view) && ranges_meet(t, srcs[1]))
    srcs[1] = graph_node(g, OP_COPY, srcs[1]->dtype, srcs[1]->view.ndim, srcs[1]->view.shape, &srcs[1], 1, none,
                         src_locs[1])->out;
  // index_put and scatter (ir/scatter.c) read their operands while they write: one that
  // views the target's buffer is read from a copy made before
  for (int i = 1; op != OP_STORE && i < n; i++)
    if (!srcs[i]->is_scalar && srcs[i]->buf == t->buf)
      srcs[i] = graph_node(g, OP_COPY, srcs[i]->dtype, srcs[i]->view.ndim, srcs[i]->view.shape, &srcs[i], 1, none,
                           src_locs[i])->out;
  // a scatter into complex pairs (t->cplx): the index read for both parts of a pair
  if (op == OP_SCATTER && t->cplx && n == 3 && srcs[2]->view.ndim + 1 == t->view.ndim) {
    View iv = view_unsqueeze(srcs[2]->view, srcs[2]->view.ndim), ev;
    int64_t shape[TD_MAX_DIMS];
    memcpy(shape, srcs[2]->view.shape, sizeof(int64_t) * (size_t)srcs[2]->view.ndim);
    shape[iv.ndim - 1] = 2;
    int bad;
    bool ok = view_expand(iv, iv.ndim, shape, &ev, &bad);
    TD_ASSERT(ok);
    srcs[2] = graph_view(g, graph_view(g, srcs[2], iv, loc), ev, loc);
  }
  graph_node(g, op, t->dtype, t->view.ndim, t->view.shape, srcs, n, attr, loc);
  return t;
}

Value *build_store(Builder *b, Op op, Value **srcs, int n, NodeAttr attr) {
  GUARD(b);
  Loc *locs = arena_alloc(&b->g->cx->arena, sizeof(Loc) * (size_t)n);
  for (int i = 0; i < n; i++) locs[i] = b->loc;
  return build_store_node(b->g, op, srcs, n, attr, b->loc, locs);
}

Value *build_triangle(Builder *b, int64_t rows, int64_t cols, int64_t diagonal, bool lower) {
  GUARD(b);
  Value *r = build_arange(b, 0, rows, 1, DT_I64);
  Value *c = build_arange(b, 0, cols, 1, DT_I64);
  r = build_unsqueeze(b, r, 1);
  Value *diff = b_sub(b, c, r);
  return build_binary(b, lower ? OP_LE : OP_GE, diff, build_int(b, diagonal));
}

// ============================================================================
// matmul's output shape (PyTorch's 1-D / 2-D / folded / batched rules)
// ============================================================================
bool build_matmul_shape(const View *a, const View *b, int *on, int64_t *out) {
  int d1 = a->ndim, d2 = b->ndim;
  const int64_t *sa = a->shape, *sb = b->shape;
  *on = 0;
  if (d1 == 0 || d2 == 0) return false;
  if (d1 == 1 && d2 == 1) return sa[0] == sb[0];
  if (d1 == 2 && d2 == 1) {
    out[(*on)++] = sa[0];
    return sa[1] == sb[0];
  }
  if (d1 == 1 && d2 == 2) {
    out[(*on)++] = sb[1];
    return sa[0] == sb[0];
  }
  if (d1 == 2 && d2 == 2) {
    out[(*on)++] = sa[0];
    out[(*on)++] = sb[1];
    return sa[1] == sb[0];
  }
  if (d1 >= 3 && d2 <= 2) {  // a's batch folded into its rows
    for (int i = 0; i < d1 - 1; i++) out[(*on)++] = sa[i];
    if (d2 == 2) out[(*on)++] = sb[1];
    return sa[d1 - 1] == sb[0];
  }
  if (d2 >= 3 && d1 <= 2) {  // b's batch folded: (b^T @ a^T)^T
    for (int i = 0; i < d2 - 2; i++) out[(*on)++] = sb[i];
    if (d1 == 2) out[(*on)++] = sa[0];
    out[(*on)++] = sb[d2 - 1];
    return sb[d2 - 2] == sa[d1 - 1];
  }
  int nb = d1 - 2 > d2 - 2 ? d1 - 2 : d2 - 2;  // batched: the batch dims broadcast
  for (int i = 0; i < nb; i++) {
    int ia = i - (nb - (d1 - 2)), ib = i - (nb - (d2 - 2));
    int64_t x = ia >= 0 ? sa[ia] : 1, y = ib >= 0 ? sb[ib] : 1;
    if (x != y && x != 1 && y != 1) return false;
    out[(*on)++] = x == 1 ? y : x;
  }
  out[(*on)++] = sa[d1 - 2];
  out[(*on)++] = sb[d2 - 1];
  return sa[d1 - 1] == sb[d2 - 2];
}
