// ir/kernel.c: the fused graph -> loop IR (kernel_build), the driver half of the kernel
// builder; ir/scalar.c builds the scalar expressions. It obeys the fusion plan of
// ir/fuse.c: each kernel becomes one LKernel, in kernel order, whose loop nests compute
// its NM_STORED nodes into their buffers; NM_INLINE producers are recomputed inside
// their readers, NM_LOCAL matmul/reduction results live in locals of their kernel.
//
// Invariants kept:
//   - buffers: one LB_PARAM per parameter (in order), then one per NM_STORED node that
//     owns storage (not OP_STORE, which writes its target's buffer), LB_RESULT when an
//     output views it; outputs that view a parameter point at that parameter's buffer;
//   - every store writes a value of the buffer's own dtype (casts are explicit);
//   - loops iterate the written tensor's dims in row-major order (innermost unit stride
//     on the output); size-1 dims get no loop; the outermost loop is `parallel` when its
//     iterations are independent and the kernel's work is >= PARALLEL_WORK;
//   - locals of a reduction are declared (LS_LET) inside the loop over the rows, so
//     they are private to an iteration of a parallel loop.
#include "ir/kernel.h"

#include <math.h>
#include <string.h>

enum { PARALLEL_WORK = 32768 };

typedef VEC(const Node *) NodeList;

static void push(KB *kb, LStmtList *list, LStmt *s) { vec_push(&kb->cx->arena, list, s); }

// Loops over the dims of shape (size-1 dims get index 0 and no loop); idx[d] receives
// each dim's index. Returns the innermost body.
static LStmtList *nest(KB *kb, LStmtList *into, int nd, const int64_t *shape, LIndex *idx, bool parallel) {
  for (int d = 0; d < nd; d++) {
    if (shape[d] == 1) {
      idx[d] = kb_ix_const(0);
      continue;
    }
    int v = kb_new_var(kb);
    LStmt *s = kb_loop(kb, v, shape[d]);
    s->parallel = parallel;
    parallel = false;
    push(kb, into, s);
    into = &s->body;
    idx[d] = kb_ix_var(v);
  }
  return into;
}

// buf[contiguous index of idx] = val, for a stored node.
static void store_node(KB *kb, LStmtList *into, const Node *n, const LIndex *idx, LExpr *val) {
  int buf = kb->buf_of[n->out->buf->id];
  TD_ASSERT(buf >= 0);
  int arg = kb_arg(kb, buf, false, true);
  push(kb, into, kb_store_stmt(kb, arg, kb_view_index(kb, &n->out->view, idx), kb_cast(kb, val, n->out->dtype)));
}

static bool same_shape(const View *a, const View *b) {
  if (a->ndim != b->ndim)
    return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i])
      return false;
  return true;
}

// ============================================================================
// EW: elementwise nodes over one shape
// ============================================================================
static void build_ew(KB *kb, const NodeList *ns) {
  const View *ov = &ns->data[0]->out->view;
  LIndex idx[TD_MAX_DIMS];
  LStmtList *body = nest(kb, &kb->k->body, ov->ndim, ov->shape, idx, view_numel(*ov) >= PARALLEL_WORK);
  for (int i = 0; i < ns->len; i++) {
    const Node *n = ns->data[i];
    TD_ASSERT(op_is_elementwise(n->op) && same_shape(&n->out->view, ov));
    store_node(kb, body, n, idx, kb_node_expr(kb, n, idx));
  }
}

// ============================================================================
// MATMUL: out[o] = sum_k a[..] * b[..] with PyTorch's 1-D / 2-D / batched rules,
// then elementwise epilogues at the same index
// ============================================================================
static void matmul_indices(const Node *n, const LIndex *o, LIndex kv, LIndex *ai, LIndex *bi) {
  const View *a = &n->srcs[0]->view, *b = &n->srcs[1]->view;
  int da = a->ndim, db = b->ndim, on = n->out->view.ndim;
  if (da == 1)
    ai[0] = kv;
  if (db == 1)
    bi[0] = kv;
  if (da >= 3 && db <= 2) {  // a's leading dims are the output's
    for (int i = 0; i < da - 1; i++)
      ai[i] = o[i];
    ai[da - 1] = kv;
    if (db == 2)
      bi[0] = kv, bi[1] = o[on - 1];
    return;
  }
  if (db >= 3 && da <= 2) {
    for (int i = 0; i < db - 2; i++)
      bi[i] = o[i];
    bi[db - 2] = kv;
    bi[db - 1] = o[on - 1];
    if (da == 2)
      ai[0] = o[on - 2], ai[1] = kv;
    return;
  }
  if (da <= 2 && db <= 2) {
    if (da == 2)
      ai[0] = o[0], ai[1] = kv;
    if (db == 2)
      bi[0] = kv, bi[1] = o[on - 1];
    return;
  }
  // batched: batch dims broadcast from the right
  int nbt = on - 2;
  for (int i = 0; i < da - 2; i++)
    ai[i] = a->shape[i] == 1 ? kb_ix_const(0) : o[i + nbt - (da - 2)];
  for (int i = 0; i < db - 2; i++)
    bi[i] = b->shape[i] == 1 ? kb_ix_const(0) : o[i + nbt - (db - 2)];
  ai[da - 2] = o[nbt], ai[da - 1] = kv;
  bi[db - 2] = kv, bi[db - 1] = o[nbt + 1];
}

static void build_matmul(KB *kb, const NodeList *ns) {
  const Node *mm = ns->data[0];
  TD_ASSERT(mm->op == OP_MATMUL);
  const View *ov = &mm->out->view, *av = &mm->srcs[0]->view;
  int64_t K = av->shape[av->ndim - 1];
  DType od = mm->out->dtype, cd = kb_compute_dtype(od);
  LIndex o[TD_MAX_DIMS];
  LStmtList *body = nest(kb, &kb->k->body, ov->ndim, ov->shape, o, view_numel(*ov) * (K ? K : 1) >= PARALLEL_WORK);
  int acc = kb_new_local(kb, cd);
  push(kb, body, kb_let(kb, acc, kb_num(kb, cd, 0, 0)));
  LIndex kv = kb_ix_const(0);
  LStmtList *kbody = body;
  if (K != 1) {
    int v = kb_new_var(kb);
    LStmt *kl = kb_loop(kb, v, K);
    push(kb, body, kl);
    kbody = &kl->body;
    kv = kb_ix_var(v);
  }
  LIndex ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  matmul_indices(mm, o, kv, ai, bi);
  LExpr *x = kb_cast(kb, kb_value(kb, mm->srcs[0], ai), cd), *y = kb_cast(kb, kb_value(kb, mm->srcs[1], bi), cd);
  push(kb, kbody, kb_set(kb, acc, kb_arith(kb, OP_ADD, cd, kb_local_ref(kb, acc), kb_arith(kb, OP_MUL, cd, x, y))));
  LocalVal *lv = &kb->lv[mm->id];
  lv->kind = LV_LOCAL;
  lv->local = acc;
  lv->nat = ov->ndim;
  for (int d = 0; d < ov->ndim; d++)
    lv->at[d] = o[d], lv->fixed[d] = true;
  if (mm->mode == NM_STORED)
    store_node(kb, body, mm, o, kb_local_ref(kb, acc));
  for (int i = 1; i < ns->len; i++) {
    const Node *e = ns->data[i];
    TD_ASSERT(op_is_elementwise(e->op) && same_shape(&e->out->view, ov));
    store_node(kb, body, e, o, kb_node_expr(kb, e, o));
  }
}

// ============================================================================
// ROW: reductions / softmax over the same input shape and reduced dims, then
// elementwise epilogues over the reduced or the input shape
// ============================================================================
typedef struct Row {
  const View *xv;  // the row nodes' input shape
  uint32_t mask;   // reduced dims of it
  LIndex xidx[TD_MAX_DIMS];  // outer dims: the outer loop vars
  LStmtList *body;           // inside the outer loops
  int64_t n;                 // elements per row
  const Node *done[64];      // row nodes already computed, for reuse
  int ndone;
} Row;

// A pass over the current row: loops over the reduced dims; idx gets the input index.
static LStmtList *row_pass(KB *kb, Row *r, LIndex *idx) {
  LStmtList *into = r->body;
  for (int d = 0; d < r->xv->ndim; d++) {
    if (!(r->mask >> d & 1)) {
      idx[d] = r->xidx[d];
      continue;
    }
    if (r->xv->shape[d] == 1) {
      idx[d] = kb_ix_const(0);
      continue;
    }
    int v = kb_new_var(kb);
    LStmt *s = kb_loop(kb, v, r->xv->shape[d]);
    push(kb, into, s);
    into = &s->body;
    idx[d] = kb_ix_var(v);
  }
  return into;
}

// The row-major position of idx within the reduced dims (argmax's answer).
static LIndex row_position(const Row *r, const LIndex *idx, KB *kb) {
  LIndex pos = kb_ix_const(0);
  int64_t mul = 1;
  for (int d = r->xv->ndim - 1; d >= 0; d--)
    if (r->mask >> d & 1) {
      kb_ix_addmul(kb, &pos, &idx[d], mul);
      mul *= r->xv->shape[d];
    }
  return pos;
}

static LExpr *inf_of(KB *kb, DType dt, bool neg, bool for_max) {
  // the identity of max (for_max) or min in dt
  if (dtype_is_float(dt))
    return kb_fconst(kb, dt, neg ? -INFINITY : INFINITY);
  if (dt == DT_BOOL)
    return kb_iconst(kb, dt, for_max ? 0 : 1);
  int64_t lo = dt == DT_I32 ? INT32_MIN : INT64_MIN, hi = dt == DT_I32 ? INT32_MAX : INT64_MAX;
  return kb_iconst(kb, dt, neg ? lo : hi);
}

// One accumulation pass: local acc (init) updated by acc = acc op f(x) over the row.
static int row_fold(KB *kb, Row *r, const Node *n, Op op, DType cd, LExpr *init, int sub_local, bool square) {
  int acc = kb_new_local(kb, cd);
  push(kb, r->body, kb_let(kb, acc, init));
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = row_pass(kb, r, idx);
  LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd);
  if (sub_local >= 0)
    x = kb_binary(kb, OP_SUB, cd, x, kb_local_ref(kb, sub_local));
  if (square)
    x = kb_unary(kb, OP_SQUARE, cd, x);
  if (op == OP_EXP) {  // sum of exp
    x = kb_unary(kb, OP_EXP, cd, x);
    op = OP_ADD;
  }
  push(kb, in, kb_set(kb, acc, kb_arith(kb, op, cd, kb_local_ref(kb, acc), x)));
  return acc;
}

static int let_local(KB *kb, LStmtList *into, LExpr *val) {
  int l = kb_new_local(kb, val->dt);
  push(kb, into, kb_let(kb, l, val));
  return l;
}

static int row_argext(KB *kb, Row *r, const Node *n) {
  DType cd = kb_compute_dtype(n->srcs[0]->dtype);
  bool mx = n->op == OP_ARGMAX;
  int best = let_local(kb, r->body, inf_of(kb, cd, mx, mx));
  int pos = let_local(kb, r->body, kb_iconst(kb, DT_I64, 0));
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = row_pass(kb, r, idx);
  int x = let_local(kb, in, kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd));
  LExpr *xv = kb_local_ref(kb, x), *bv = kb_local_ref(kb, best);
  LExpr *cond = kb_binary(kb, mx ? OP_GT : OP_LT, DT_BOOL, xv, bv);
  if (dtype_is_float(cd)) {  // nan is the extreme; the first nan wins
    LExpr *xnan = kb_binary(kb, OP_NE, DT_BOOL, xv, xv), *bnum = kb_binary(kb, OP_EQ, DT_BOOL, bv, bv);
    cond = kb_binary(kb, OP_LOGICAL_OR, DT_BOOL, cond, kb_binary(kb, OP_LOGICAL_AND, DT_BOOL, xnan, bnum));
  }
  LStmt *upd = kb_if(kb, cond);
  push(kb, in, upd);
  push(kb, &upd->body, kb_set(kb, best, kb_local_ref(kb, x)));
  LIndex p = row_position(r, idx, kb);
  push(kb, &upd->body, kb_set(kb, pos, kb_ix_expr(kb, &p)));
  return pos;
}

// The local of a mean of the same input in dtype cd already computed on this row, or -1.
static int same_mean(KB *kb, const Row *r, const Node *n, DType cd) {
  const Value *x = n->srcs[0];
  for (int i = 0; i < r->ndone; i++) {
    const Node *m = r->done[i];
    const Value *y = m->srcs[0];
    const LocalVal *lv = &kb->lv[m->id];
    if (m->op == OP_MEAN && lv->kind == LV_LOCAL && kb->k->locals.data[lv->local] == cd &&
        (x == y || (x->buf == y->buf && x->buf && view_equal(x->view, y->view))) && x->dtype == y->dtype)
      return lv->local;
  }
  return -1;
}

// Computes row node n over the current row; sets its LocalVal.
static void row_node(KB *kb, Row *r, const Node *n) {
  DType od = n->out->dtype, cd = kb_compute_dtype(od);
  LocalVal *lv = &kb->lv[n->id];
  int res = -1;
  LExpr *N = kb_num(kb, dtype_is_float(cd) ? cd : DT_F64, (double)r->n, r->n);
  switch (n->op) {
  case OP_SUM: res = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), -1, false); break;
  case OP_PROD: res = row_fold(kb, r, n, OP_MUL, cd, kb_num(kb, cd, 1, 1), -1, false); break;
  case OP_MEAN: {
    int s = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), -1, false);
    res = let_local(kb, r->body, kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, s), N));
    break;
  }
  case OP_AMAX: case OP_MAX:
    res = row_fold(kb, r, n, OP_MAXIMUM, cd, inf_of(kb, cd, true, true), -1, false);
    break;
  case OP_AMIN: case OP_MIN:
    res = row_fold(kb, r, n, OP_MINIMUM, cd, inf_of(kb, cd, false, false), -1, false);
    break;
  case OP_ALL: res = row_fold(kb, r, n, OP_LOGICAL_AND, DT_BOOL, kb_iconst(kb, DT_BOOL, 1), -1, false); break;
  case OP_ANY: res = row_fold(kb, r, n, OP_LOGICAL_OR, DT_BOOL, kb_iconst(kb, DT_BOOL, 0), -1, false); break;
  case OP_VAR: case OP_STD: {  // two passes: the mean (reused if computed), then the squared deviations
    int m = same_mean(kb, r, n, cd);
    if (m < 0) {
      int s = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), -1, false);
      m = let_local(kb, r->body, kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, s), N));
    }
    int ss = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), m, true);
    int64_t div = r->n - (n->attr.unbiased ? 1 : 0);
    LExpr *v = kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, ss), kb_fconst(kb, cd, (double)(div > 0 ? div : 0)));
    if (n->op == OP_STD)
      v = kb_unary(kb, OP_SQRT, cd, v);
    res = let_local(kb, r->body, v);
    break;
  }
  case OP_LOGSUMEXP: {  // max-shifted; an infinite max shifts by 0 (all -inf gives -inf)
    int m = row_fold(kb, r, n, OP_MAXIMUM, cd, inf_of(kb, cd, true, true), -1, false);
    LExpr *mv = kb_local_ref(kb, m);
    LExpr *isinf = kb_binary(kb, OP_EQ, DT_BOOL, kb_unary(kb, OP_ABS, cd, mv), kb_fconst(kb, cd, INFINITY));
    int sh = let_local(kb, r->body, kb_select(kb, isinf, kb_fconst(kb, cd, 0), mv));
    int s = row_fold(kb, r, n, OP_EXP, cd, kb_fconst(kb, cd, 0), sh, false);
    res = let_local(kb, r->body,
                    kb_binary(kb, OP_ADD, cd, kb_unary(kb, OP_LOG, cd, kb_local_ref(kb, s)), kb_local_ref(kb, sh)));
    break;
  }
  case OP_ARGMAX: case OP_ARGMIN: res = row_argext(kb, r, n); break;
  case OP_SOFTMAX: case OP_LOG_SOFTMAX: {
    int m = row_fold(kb, r, n, OP_MAXIMUM, cd, inf_of(kb, cd, true, true), -1, false);
    int s = row_fold(kb, r, n, OP_EXP, cd, kb_fconst(kb, cd, 0), m, false);
    if (n->op == OP_LOG_SOFTMAX)
      s = let_local(kb, r->body, kb_unary(kb, OP_LOG, cd, kb_local_ref(kb, s)));
    lv->kind = LV_SOFTMAX;
    lv->max = m;
    lv->sum = s;
    lv->nat = r->xv->ndim;
    for (int d = 0; d < r->xv->ndim; d++)
      lv->at[d] = r->xidx[d], lv->fixed[d] = !(r->mask >> d & 1);
    return;
  }
  default: td_unreachable();
  }
  lv->kind = LV_LOCAL;
  lv->local = res;
  // the reduced output's index: the outer dims' vars (keepdim dims have size 1)
  lv->nat = n->out->view.ndim;
  int o = 0;
  for (int d = 0; d < r->xv->ndim; d++) {
    if (!(r->mask >> d & 1)) {
      lv->at[o] = r->xidx[d];
      lv->fixed[o++] = true;
    } else if (n->attr.keepdim) {
      lv->at[o] = kb_ix_const(0);
      lv->fixed[o++] = false;
    }
  }
  TD_ASSERT(o == lv->nat);
}

// The index of a node of the reduced shape (with or without keepdim) in the row
// kernel's outer loops; false if its shape is neither.
static bool reduced_index(const Row *r, const View *v, LIndex *idx) {
  int nout = 0;
  for (int d = 0; d < r->xv->ndim; d++)
    nout += !(r->mask >> d & 1);
  if (v->ndim == nout) {
    int o = 0;
    for (int d = 0; d < r->xv->ndim; d++)
      if (!(r->mask >> d & 1)) {
        if (v->shape[o] != r->xv->shape[d])
          return false;
        idx[o++] = r->xidx[d];
      }
    return true;
  }
  if (v->ndim != r->xv->ndim)
    return false;
  for (int d = 0; d < v->ndim; d++) {
    bool red = r->mask >> d & 1;
    if (v->shape[d] != (red ? 1 : r->xv->shape[d]))
      return false;
    idx[d] = red ? kb_ix_const(0) : r->xidx[d];
  }
  return true;
}

static void build_row(KB *kb, const NodeList *ns) {
  const Node *first = ns->data[0];
  Row r = {.xv = &first->srcs[0]->view, .mask = first->attr.dims};
  int64_t total = view_numel(*r.xv);
  r.n = 1;
  for (int d = 0; d < r.xv->ndim; d++)
    if (r.mask >> d & 1)
      r.n *= r.xv->shape[d];
  // outer loops: the dims that are not reduced
  int64_t oshape[TD_MAX_DIMS];
  int no = 0;
  for (int d = 0; d < r.xv->ndim; d++)
    if (!(r.mask >> d & 1))
      oshape[no++] = r.xv->shape[d];
  LIndex oidx[TD_MAX_DIMS];
  r.body = nest(kb, &kb->k->body, no, oshape, oidx, total >= PARALLEL_WORK);
  for (int d = 0, o = 0; d < r.xv->ndim; d++)
    r.xidx[d] = (r.mask >> d & 1) ? kb_ix_const(0) : oidx[o++];
  int i = 0;
  for (; i < ns->len && op_is_row(ns->data[i]->op); i++) {
    const Node *n = ns->data[i];
    TD_ASSERT(same_shape(&n->srcs[0]->view, r.xv) && n->attr.dims == r.mask);
    row_node(kb, &r, n);
    if (r.ndone < 64)
      r.done[r.ndone++] = n;
  }
  // results of the reduced shape, then a last pass over the row for the rest
  NodeList full = {0};
  for (int j = 0; j < ns->len; j++) {
    const Node *n = ns->data[j];
    LIndex idx[TD_MAX_DIMS];
    bool softmax = n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX;
    if (j >= i)
      TD_ASSERT(op_is_elementwise(n->op));
    if (n->mode != NM_STORED && j < i)
      continue;
    if (softmax || (j >= i && same_shape(&n->out->view, r.xv) && !reduced_index(&r, &n->out->view, idx))) {
      vec_push(&kb->cx->arena, &full, n);
      continue;
    }
    TD_ASSERT(reduced_index(&r, &n->out->view, idx));
    store_node(kb, r.body, n, idx, j < i ? kb_cast(kb, kb_local_ref(kb, kb->lv[n->id].local), n->out->dtype)
                                         : kb_node_expr(kb, n, idx));
  }
  if (full.len == 0)
    return;
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = row_pass(kb, &r, idx);
  for (int j = 0; j < full.len; j++) {
    const Node *n = full.data[j];
    TD_ASSERT(same_shape(&n->out->view, r.xv));
    bool softmax = n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX;
    store_node(kb, in, n, idx, softmax ? kb_softmax_value(kb, n, idx) : kb_node_expr(kb, n, idx));
  }
}

// ============================================================================
// ONE: cat, stack, store
// ============================================================================
static void build_cat(KB *kb, const Node *n) {
  bool stack = n->op == OP_STACK;
  int a = n->attr.dim;
  int64_t off = 0;
  for (int i = 0; i < n->nsrc; i++) {
    const Value *s = n->srcs[i];
    LIndex idx[TD_MAX_DIMS], oidx[TD_MAX_DIMS];
    int64_t work = view_numel(s->view);
    LStmtList *body = nest(kb, &kb->k->body, s->view.ndim, s->view.shape, idx, work >= PARALLEL_WORK);
    for (int d = 0, k = 0; d < n->out->view.ndim; d++) {
      if (stack && d == a) {
        oidx[d] = kb_ix_const(i);
        continue;
      }
      oidx[d] = idx[k++];
      if (!stack && d == a)
        oidx[d].base += off;
    }
    if (!stack)
      off += s->view.shape[a];
    store_node(kb, body, n, oidx, kb_value(kb, s, idx));
  }
}

// x[idx] = v or x[idx] op= v: srcs[0] the target view, srcs[1] the value.
static void build_store(KB *kb, const Node *n) {
  const Value *t = n->srcs[0], *v = n->srcs[1];
  int buf = kb->buf_of[t->buf->id];
  TD_ASSERT(buf >= 0);
  LIndex idx[TD_MAX_DIMS], vidx[TD_MAX_DIMS];
  LStmtList *body = nest(kb, &kb->k->body, t->view.ndim, t->view.shape, idx, view_numel(t->view) >= PARALLEL_WORK);
  // PyTorch's setitem drops the value's leading size-1 dims: align from the right
  if (!v->is_scalar) {
    int lead = t->view.ndim - v->view.ndim;
    for (int j = 0; j < v->view.ndim; j++)
      vidx[j] = (j + lead < 0 || v->view.shape[j] == 1) ? kb_ix_const(0) : idx[j + lead];
  }
  LExpr *val = kb_value(kb, v, vidx);
  if (n->attr.aug != OP_COUNT) {
    Value *both[2] = {(Value *)t, (Value *)v};
    DType cd = kb_compute_dtype(kb_result_type(both, 2));
    if (n->attr.aug == OP_DIV && !dtype_is_float(cd))
      cd = DT_F32;
    LExpr *cur = kb_cast(kb, kb_value(kb, t, idx), cd);
    val = kb_arith(kb, (Op)n->attr.aug, cd, cur, kb_cast(kb, val, cd));
  }
  int arg = kb_arg(kb, buf, false, true);
  push(kb, body, kb_store_stmt(kb, arg, kb_view_index(kb, &t->view, idx), kb_cast(kb, val, t->dtype)));
}

// ============================================================================
// The pass
// ============================================================================
static int loc_line(Loc loc) {
  if (!loc.file)
    return 0;
  int line, col;
  srcfile_linecol(loc.file, loc.begin, &line, &col);
  return line;
}

static void build_kernel(KB *kb, int kid) {
  const Graph *g = kb->g;
  LKernel *k = arena_alloc(&kb->cx->arena, sizeof *k);
  k->name = arena_printf(&kb->cx->arena, "k%d", kid);
  kb->k = k;
  kb->kid = kid;
  memset(kb->lv, 0, sizeof(LocalVal) * (size_t)(g->nodes.len ? g->nodes.len : 1));
  NodeList ns = {0};
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->kernel != kid)
      continue;
    vec_push(&kb->cx->arena, &k->ops, op_name(n->op));
    int line = loc_line(n->loc), j = 0;
    while (j < k->lines.len && k->lines.data[j] < line)
      j++;
    if (j == k->lines.len || k->lines.data[j] != line) {  // sorted, distinct
      vec_push(&kb->cx->arena, &k->lines, 0);
      memmove(&k->lines.data[j + 1], &k->lines.data[j], sizeof(int) * (size_t)(k->lines.len - 1 - j));
      k->lines.data[j] = line;
    }
    if (n->mode != NM_INLINE)
      vec_push(&kb->cx->arena, &ns, n);
  }
  TD_ASSERT(ns.len > 0);
  const Node *first = ns.data[0];
  if (first->op == OP_MATMUL)
    build_matmul(kb, &ns);
  else if (op_is_row(first->op))
    build_row(kb, &ns);
  else if (first->op == OP_CAT || first->op == OP_STACK || first->op == OP_STORE) {
    TD_ASSERT(ns.len == 1);
    if (first->op == OP_STORE)
      build_store(kb, first);
    else
      build_cat(kb, first);
  } else
    build_ew(kb, &ns);
  vec_push(&kb->cx->arena, &kb->p->kernels, k);
}

static int add_buf(KB *kb, LBuf b) {
  vec_push(&kb->cx->arena, &kb->p->bufs, b);
  return kb->p->bufs.len - 1;
}

LProgram *kernel_build(Ctx *cx, const Graph *g) {
  LProgram *p = arena_alloc(&cx->arena, sizeof *p);
  p->name = g->name;
  p->file = g->loc.file ? g->loc.file->path : NULL;
  KB kb = {.cx = cx, .g = g, .p = p};
  kb.buf_of = arena_alloc(&cx->arena, sizeof(int) * (size_t)(g->bufs.len + 1));
  for (int i = 0; i < g->bufs.len; i++)
    kb.buf_of[i] = -1;
  kb.lv = arena_alloc(&cx->arena, sizeof(LocalVal) * (size_t)(g->nodes.len + 1));
  for (int i = 0; i < g->params.len; i++) {
    const Value *v = g->params.data[i];
    const Buffer *b = v->buf;
    int bi = add_buf(&kb, (LBuf){LB_PARAM, b->dtype, b->numel, b->name, i, b->mut});
    kb.buf_of[b->id] = bi;
    LParam prm = {.name = v->name, .dtype = v->dtype, .ndim = v->view.ndim, .mut = b->mut, .buf = bi};
    memcpy(prm.shape, v->view.shape, sizeof(int64_t) * (size_t)v->view.ndim);
    vec_push(&cx->arena, &p->params, prm);
  }
  for (int i = 0; i < g->nodes.len; i++) {
    const Node *n = g->nodes.data[i];
    if (n->mode != NM_STORED || n->op == OP_STORE)
      continue;
    const Buffer *b = n->out->buf;
    const char *name = b->name ? b->name : arena_printf(&cx->arena, "t%d", n->id);
    kb.buf_of[b->id] = add_buf(&kb, (LBuf){LB_TEMP, b->dtype, b->numel, name, -1, false});
  }
  for (int i = 0; i < g->outputs.len; i++) {
    const Value *v = g->outputs.data[i];
    TD_ASSERT(!v->is_scalar && v->buf);
    int bi = kb.buf_of[v->buf->id];
    TD_ASSERT(bi >= 0);
    if (p->bufs.data[bi].kind == LB_TEMP)
      p->bufs.data[bi].kind = LB_RESULT;
    vec_push(&cx->arena, &p->outputs, ((LOutput){bi, v->dtype, v->view}));
  }
  for (int k = 0; k < g->nkernels; k++)
    build_kernel(&kb, k);
  return p;
}
