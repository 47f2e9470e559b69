// ir/scalar.c: the scalar half of the kernel builder (ir/kernel.c is the driver): typed
// expression and statement constructors, affine indices, the value of any graph Value
// at a logical index (a load through its View, a recomputed NM_INLINE producer, or a
// local of the kernel being built), and the expression of every elementwise op with
// PyTorch's dtype rules. It decomposes no op for every dtype alike (that is a builder,
// ir/build_*.c, or a formula node, ir/opmath.c: docs/internals.md's "One way to
// decompose"): only an op's form at a dtype the loop IR has no instruction for.
//
// Invariants: every expression is built with its final dtype and operands of the dtype
// ir/loop.h requires (the computation dtype: F16/BF16 work is done in F32 and each
// node's result is cast back to its dtype, which is the rounding PyTorch does when it
// materializes a half tensor); casts from/to F16/BF16 go through F32; raising ops get
// an explicit err (-1 when they cannot raise); bool arithmetic never reaches a backend
// (+ and * on bools become logical or/and, ordered comparisons of bools compare i32).
#include "ir/kernel.h"

#include <math.h>
#include <string.h>

// ============================================================================
// Constructors
// ============================================================================
LExpr *kb_expr(KernelBuilder *kb, LExprKind kind, DType dt) { return lx_new(kb->cx, kind, dt); }

LExpr *kb_fconst(KernelBuilder *kb, DType dt, double v) {
  TD_ASSERT(dtype_is_float(dt));
  if (dtype_is_half(dt))
    return kb_cast(kb, kb_fconst(kb, DT_F32, v), dt);
  LExpr *e = kb_expr(kb, LX_CONST, dt);
  e->f = dt == DT_F32 ? (double)(float)v : v;
  return e;
}

static int64_t wrap_int(DType dt, int64_t v) {
  if (dt == DT_BOOL)
    return v != 0;
  if (dt == DT_I32)
    return (int32_t)(uint32_t)(uint64_t)v;
  if (dt == DT_I16)
    return (int16_t)(uint16_t)(uint64_t)v;
  if (dt == DT_I8)
    return (int8_t)(uint8_t)(uint64_t)v;
  if (dt == DT_U8)
    return (uint8_t)(uint64_t)v;
  return v;
}

LExpr *kb_iconst(KernelBuilder *kb, DType dt, int64_t v) {
  TD_ASSERT(!dtype_is_float(dt));
  LExpr *e = kb_expr(kb, LX_CONST, dt);
  e->i = wrap_int(dt, v);
  e->f = (double)e->i;
  return e;
}

LExpr *kb_num(KernelBuilder *kb, DType dt, double f, int64_t i) {
  return dtype_is_float(dt) ? kb_fconst(kb, dt, f) : kb_iconst(kb, dt, i);
}

LExpr *kb_local_ref(KernelBuilder *kb, int local) {
  TD_ASSERT(local >= 0 && local < kb->k->locals.len);
  return lx_local(kb->cx, kb->k->locals.data[local], local);
}

LExpr *kb_unary(KernelBuilder *kb, Op op, DType dt, LExpr *a) { return lx_unary(kb->cx, op, dt, a); }

LExpr *kb_binary(KernelBuilder *kb, Op op, DType dt, LExpr *a, LExpr *b) { return lx_binary(kb->cx, op, dt, a, b); }

LExpr *kb_select(KernelBuilder *kb, LExpr *c, LExpr *a, LExpr *b) {
  TD_ASSERT(c->dt == DT_BOOL && a->dt == b->dt);
  return lx_select(kb->cx, c, a, b);
}

// A float of dtype `from` converted to an integer dtype: truncation; nan or out of range
// gives the minimum. A small int takes the i32 (f64 to u8: the i64) of it, wrapped.
static int64_t float_to_int(DType from, DType dt, double f) {
  if (dtype_is_small_int(dt))
    return wrap_int(dt, float_to_int(from, from == DT_F64 && dt == DT_U8 ? DT_I64 : DT_I32, f));
  if (dt == DT_I32)
    return f >= -2147483648.0 && f < 2147483648.0 ? (int64_t)f : INT32_MIN;
  return f >= -9223372036854775808.0 && f < 9223372036854775808.0 ? (int64_t)f : INT64_MIN;
}

LExpr *kb_cast(KernelBuilder *kb, LExpr *a, DType dt) {
  if (a->dt == dt)
    return a;
  if (a->kind == LX_CONST && !dtype_is_half(dt) && !dtype_is_half(a->dt)) {
    bool from_float = dtype_is_float(a->dt);
    if (dtype_is_float(dt))
      return kb_fconst(kb, dt, from_float ? a->f : (double)a->i);
    if (dt == DT_BOOL)
      return kb_iconst(kb, dt, from_float ? a->f != 0 : a->i != 0);
    return kb_iconst(kb, dt, from_float ? float_to_int(a->dt, dt, a->f) : a->i);
  }
  if (dtype_is_half(a->dt) && dt != DT_F32)
    return kb_cast(kb, kb_cast(kb, a, DT_F32), dt);
  if (dtype_is_half(dt) && a->dt != DT_F32)
    return kb_cast(kb, kb_cast(kb, a, DT_F32), dt);
  return lx_cast(kb->cx, dt, a);
}

LExpr *kb_arith(KernelBuilder *kb, Op op, DType dt, LExpr *a, LExpr *b) {
  TD_ASSERT(a->dt == dt && b->dt == dt && dtype_compute(dt) == dt);
  if (dt == DT_BOOL) {
    if (op == OP_ADD || op == OP_MAXIMUM)
      op = OP_LOGICAL_OR;
    else if (op == OP_MUL || op == OP_MINIMUM)
      op = OP_LOGICAL_AND;
  }
  return kb_binary(kb, op, dt, a, b);
}

LStmt *kb_loop(KernelBuilder *kb, int var, int64_t extent) {
  while (kb->var_ext.len <= var)
    vec_push(&kb->cx->arena, &kb->var_ext, 0);
  kb->var_ext.data[var] = extent;
  return ls_loop(kb->cx, var, extent);
}

LStmt *kb_store_stmt(KernelBuilder *kb, int buf, LIndex idx, LExpr *val) { return ls_store(kb->cx, buf, idx, val); }

LStmt *kb_let(KernelBuilder *kb, int local, LExpr *val) {
  TD_ASSERT(val->dt == kb->k->locals.data[local]);
  return ls_let(kb->cx, local, val);
}

LStmt *kb_set(KernelBuilder *kb, int local, LExpr *val) {
  TD_ASSERT(val->dt == kb->k->locals.data[local]);
  return ls_set(kb->cx, local, val);
}

LStmt *kb_if(KernelBuilder *kb, LExpr *cond) {
  TD_ASSERT(cond->dt == DT_BOOL);
  return ls_if(kb->cx, cond);
}

int kb_new_local(KernelBuilder *kb, DType dt) {
  vec_push(&kb->cx->arena, &kb->k->locals, dt);
  return kb->k->locals.len - 1;
}

int kb_new_var(KernelBuilder *kb) { return kb->k->nvars++; }

int kb_arg(KernelBuilder *kb, int buf, bool read, bool written) {
  TD_ASSERT(buf >= 0 && buf < kb->p->bufs.len);
  LKernel *k = kb->k;
  for (int i = 0; i < k->args.len; i++)
    if (k->args.data[i].buf == buf) {
      k->args.data[i].read |= read;
      k->args.data[i].written |= written;
      return i;
    }
  vec_push(&kb->cx->arena, &k->args, ((LArg){.buf = buf, .read = read, .written = written}));
  return k->args.len - 1;
}

// "PATH:LINE:COL: error: MSG"; a '%' of the path is doubled (messages are printf formats).
int kb_error(KernelBuilder *kb, Loc loc, const char *msg) {
  char path[1024];
  size_t n = 0;
  const char *src = loc.file ? loc.file->path : "<input>";
  for (; *src && n + 2 < sizeof path; src++) {
    if (*src == '%')
      path[n++] = '%';
    path[n++] = *src;
  }
  path[n] = 0;
  int line = 0, col = 0;
  if (loc.file)
    srcfile_linecol(loc.file, loc.begin, &line, &col);
  const char *full = arena_printf(&kb->cx->arena, "%s:%d:%d: error: %s", path, line, col, msg);
  for (int i = 0; i < kb->k->errors.len; i++)
    if (strcmp(kb->k->errors.data[i], full) == 0)
      return i;
  vec_push(&kb->cx->arena, &kb->k->errors, full);
  return kb->k->errors.len - 1;
}

// ============================================================================
// Indices
// ============================================================================
LIndex kb_ix_const(int64_t c) {
  LIndex r;
  memset(&r, 0, sizeof r);
  r.base = c;
  return r;
}

LIndex kb_ix_var(int var) {
  LIndex r = kb_ix_const(0);
  r.nterms = 1;
  r.var[0] = var;
  r.coef[0] = 1;
  return r;
}

void kb_ix_addmul(KernelBuilder *kb, LIndex *acc, const LIndex *x, int64_t m) {
  if (m == 0)
    return;
  acc->base += m * x->base;
  for (int t = 0; t < x->nterms; t++) {
    int j = 0;
    while (j < acc->nterms && acc->var[j] != x->var[t])
      j++;
    if (j == acc->nterms) {
      TD_ASSERT(acc->nterms < LI_MAX_TERMS);
      acc->var[j] = x->var[t];
      acc->coef[j] = 0;
      acc->nterms++;
    }
    acc->coef[j] += m * x->coef[t];
  }
  // drop terms that cancelled
  int w = 0;
  for (int j = 0; j < acc->nterms; j++)
    if (acc->coef[j] != 0) {
      acc->var[w] = acc->var[j];
      acc->coef[w++] = acc->coef[j];
    }
  acc->nterms = w;
  if (x->dyn) {
    LExpr *d = m == 1 ? x->dyn : kb_binary(kb, OP_MUL, DT_I64, x->dyn, kb_iconst(kb, DT_I64, m));
    acc->dyn = acc->dyn ? kb_binary(kb, OP_ADD, DT_I64, acc->dyn, d) : d;
  }
}

LExpr *kb_ix_expr(KernelBuilder *kb, const LIndex *x) {
  LExpr *e = NULL;
  for (int t = 0; t < x->nterms; t++) {
    LExpr *v = kb_expr(kb, LX_VAR, DT_I64);
    v->var = x->var[t];
    if (x->coef[t] != 1)
      v = kb_binary(kb, OP_MUL, DT_I64, v, kb_iconst(kb, DT_I64, x->coef[t]));
    e = e ? kb_binary(kb, OP_ADD, DT_I64, e, v) : v;
  }
  if (x->dyn)
    e = e ? kb_binary(kb, OP_ADD, DT_I64, e, x->dyn) : x->dyn;
  if (!e)
    return kb_iconst(kb, DT_I64, x->base);
  if (x->base != 0)
    e = kb_binary(kb, OP_ADD, DT_I64, e, kb_iconst(kb, DT_I64, x->base));
  return e;
}

LIndex kb_view_index(KernelBuilder *kb, const View *v, const LIndex *idx) {
  LIndex r = kb_ix_const(v->offset);
  for (int k = 0; k < v->ndim; k++)
    if (v->shape[k] != 1)  // a size-1 dim's index is 0
      kb_ix_addmul(kb, &r, &idx[k], v->strides[k]);
  return r;
}

bool kb_ix_equal(const LIndex *a, const LIndex *b) {
  if (a->base != b->base || a->nterms != b->nterms || a->dyn || b->dyn)
    return false;
  for (int i = 0; i < a->nterms; i++) {
    int j = 0;
    while (j < b->nterms && b->var[j] != a->var[i])
      j++;
    if (j == b->nterms || b->coef[j] != a->coef[i])
      return false;
  }
  return true;
}

void kb_broadcast_index(const View *src, int out_ndim, const LIndex *idx, LIndex *sidx) {
  int lead = out_ndim - src->ndim;
  TD_ASSERT(lead >= 0);
  for (int j = 0; j < src->ndim; j++)
    sidx[j] = src->shape[j] == 1 ? kb_ix_const(0) : idx[j + lead];
}

// ============================================================================
// Dtypes: torch.result_type of graph values
// ============================================================================
DType kb_result_type(Value *const *vs, int n) {
  DTypeOperand ops[n > 0 ? n : 1];
  for (int i = 0; i < n; i++) {
    const Value *v = vs[i];
    ops[i].dtype = v->dtype;
    ops[i].kind = v->is_scalar || v->wrapped ? DTO_WRAPPED : v->view.ndim > 0 ? DTO_DIMMED : DTO_ZERO_DIM;
  }
  return dtype_result_type(ops, n);
}

// ============================================================================
// Values at an index
// ============================================================================
static LExpr *scalar_value(KernelBuilder *kb, const Value *v) {
  if (v->dtype == DT_F64)
    return kb_fconst(kb, DT_F64, v->sval);
  return kb_iconst(kb, v->dtype, v->ival);
}

// The producer's logical index for a reader of value v at idx.
static void producer_index(KernelBuilder *kb, const Value *v, const LIndex *idx, LIndex *pidx) {
  const View *pv = &v->buf->producer->out->view;
  ViewMap m;
  TD_ASSERT(view_decompose(v->view, pv->ndim, pv->shape, &m));
  for (int p = 0; p < pv->ndim; p++)
    pidx[p] = kb_ix_const(m.start[p]);
  for (int k = 0; k < v->view.ndim; k++)
    if (m.pdim[k] >= 0)
      kb_ix_addmul(kb, &pidx[m.pdim[k]], &idx[k], m.mult[k]);
}

// A local holds its node's value at one index: a reader must be reading that one. A read of
// no element (v empty: view_decompose maps it to no index) is in loops that never run.
static void check_at(const LocalVal *lv, const Value *v, const int64_t *shape, const LIndex *pidx) {
  if (view_numel(v->view) == 0)
    return;
  for (int p = 0; p < lv->nat; p++)
    if (lv->fixed[p] && shape[p] > 1)
      TD_ASSERT(kb_ix_equal(&lv->at[p], &pidx[p]));
}

// Whether pidx is on the row an LV_ROWBUF holds (else its reader recomputes the value).
static bool on_row(const LocalVal *lv, const int64_t *shape, const LIndex *pidx) {
  for (int p = 0; p < lv->nat; p++)
    if (lv->fixed[p] && shape[p] > 1 && !kb_ix_equal(&lv->at[p], &pidx[p]))
      return false;
  return true;
}

// The move of v per step when v is a leaf of the recurrence step being built, or NULL.
static const RecurLeaf *recur_leaf(const KernelBuilder *kb, const Value *v) {
  if (!kb->recur)
    return NULL;
  for (int i = 0; i < kb->recur->leaves.len; i++)
    if (kb->recur->leaves.data[i].v == v)
      return &kb->recur->leaves.data[i];
  return NULL;
}

// x += (step var - 1) * c: the template is step 1.
static void recur_move(KernelBuilder *kb, LIndex *x, int64_t c) {
  LIndex t = kb_ix_var(kb->recur_var);
  kb_ix_addmul(kb, x, &t, c);
  x->base -= c;
}

LExpr *kb_value(KernelBuilder *kb, const Value *v, const LIndex *idx) {
  if (v->is_scalar)
    return scalar_value(kb, v);
  const RecurLeaf *rl = recur_leaf(kb, v);
  const Buffer *b = v->buf;
  TD_ASSERT(b && b->kind != BUF_CONST);
  if (b->kind == BUF_KERNEL) {
    const Node *n = b->producer;
    const LocalVal *lv = &kb->lv[n->id];
    bool here = n->kernel == kb->kid && op_is_elementwise(n->op);
    if (lv->kind != LV_NONE || n->mode == NM_INLINE || here) {
      LIndex pidx[TD_MAX_DIMS];
      producer_index(kb, v, idx, pidx);
      if (rl) {
        TD_ASSERT(rl->inl && lv->kind == LV_NONE);
        for (int p = 0; p < n->out->view.ndim; p++)
          recur_move(kb, &pidx[p], rl->dstart[p]);
      }
      if (lv->kind == LV_LOCAL) {
        check_at(lv, v, n->out->view.shape, pidx);
        return kb_cast(kb, kb_local_ref(kb, lv->local), n->out->dtype);
      }
      if (lv->kind == LV_ROWBUF && on_row(lv, n->out->view.shape, pidx)) {
        LExpr *e = kb_expr(kb, LX_LOAD, n->out->dtype);
        e->buf = lv->local;
        e->idx = kb_ix_const(lv->base);
        for (int p = 0; p < lv->nat; p++)
          if (lv->rstride[p])
            kb_ix_addmul(kb, &e->idx, &pidx[p], lv->rstride[p]);
        return e;
      }
      if (lv->kind == LV_SOFTMAX) {
        check_at(lv, v, n->out->view.shape, pidx);
        return kb_softmax_value(kb, n, pidx);
      }
      return kb_node_expr(kb, n, pidx);
    }
    TD_ASSERT(n->mode == NM_STORED && !op_is_store(n->op));
  }
  int buf = kb->buf_of[b->id];
  TD_ASSERT(buf >= 0);
  LExpr *e = kb_expr(kb, LX_LOAD, b->dtype);
  e->buf = kb_arg(kb, buf, true, false);
  e->idx = kb_view_index(kb, &v->view, idx);
  if (rl)
    recur_move(kb, &e->idx, rl->coef);
  return e;
}

LExpr *kb_src(KernelBuilder *kb, const Node *n, int i, const LIndex *idx) {
  const Value *s = n->srcs[i];
  if (s->is_scalar)
    return scalar_value(kb, s);
  LIndex sidx[TD_MAX_DIMS];
  kb_broadcast_index(&s->view, n->out->view.ndim, idx, sidx);
  return kb_value(kb, s, sidx);
}

LExpr *kb_softmax_value(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  const LocalVal *lv = &kb->lv[n->id];
  TD_ASSERT(lv->kind == LV_SOFTMAX);
  DType cd = kb->k->locals.data[lv->max];
  LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd);
  LExpr *d = kb_binary(kb, OP_SUB, cd, x, kb_local_ref(kb, lv->max));
  LExpr *r = n->op == OP_SOFTMAX
                 ? kb_binary(kb, OP_MUL, cd, kb_unary(kb, OP_EXP, cd, d), kb_local_ref(kb, lv->sum))
                 : kb_binary(kb, OP_SUB, cd, d, kb_local_ref(kb, lv->sum));
  return kb_cast(kb, r, n->out->dtype);
}

// ============================================================================
// Elementwise ops
// ============================================================================
static bool ordered_cmp(Op op) { return op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE; }

// PyTorch's integer power: b < 0 gives 1 for a == 1, +-1 for a == -1, else 0.
static LExpr *int_pow(KernelBuilder *kb, DType dt, LExpr *a, LExpr *b) {
  if (b->kind == LX_CONST && b->i >= 0)
    return kb_binary(kb, OP_POW, dt, a, b);
  LExpr *zero = kb_iconst(kb, dt, 0), *one = kb_iconst(kb, dt, 1), *mone = kb_iconst(kb, dt, -1);
  LExpr *neg = kb_binary(kb, OP_LT, DT_BOOL, b, zero);
  LExpr *p = kb_binary(kb, OP_POW, dt, a, kb_select(kb, neg, zero, b));  // never raises: b >= 0
  LExpr *odd = kb_binary(kb, OP_NE, DT_BOOL, kb_binary(kb, OP_REMAINDER, dt, b, kb_iconst(kb, dt, 2)), zero);
  LExpr *small = kb_select(kb, kb_binary(kb, OP_EQ, DT_BOOL, a, one), one,
                           kb_select(kb, kb_binary(kb, OP_EQ, DT_BOOL, a, mone), kb_select(kb, odd, mone, one), zero));
  return kb_select(kb, neg, small, p);
}

// C's truncating a / b (DIV_TRUNC) or a % b (FMOD, the sign of a) of ints, from
// Python's floor ones: b == 0 raises ZeroDivisionError (the remainder's error), INT_MIN
// / -1 wraps, INT_MIN % -1 is 0. q = a // b' (b' = b, or 1 where b == 0: it never
// raises), r = a % b; where r != 0 and the signs of r and a differ, C's answers are q + 1
// and r - b.
static LExpr *int_trunc_div(KernelBuilder *kb, const Node *n, Op op, DType dt, LExpr *a, LExpr *b) {
  LExpr *zero = kb_iconst(kb, dt, 0);
  LExpr *r = kb_binary(kb, OP_REMAINDER, dt, a, b);
  r->err = kb_error(kb, n->loc, "ZeroDivisionError");
  LExpr *fix = kb_binary(kb, OP_LOGICAL_AND, DT_BOOL, kb_binary(kb, OP_NE, DT_BOOL, r, zero),
                         kb_binary(kb, OP_NE, DT_BOOL, kb_binary(kb, OP_LT, DT_BOOL, r, zero),
                                   kb_binary(kb, OP_LT, DT_BOOL, a, zero)));
  if (op == OP_FMOD)
    return kb_select(kb, fix, kb_binary(kb, OP_SUB, dt, r, b), r);
  LExpr *safe = kb_select(kb, kb_binary(kb, OP_EQ, DT_BOOL, b, zero), kb_iconst(kb, dt, 1), b);
  LExpr *q = kb_binary(kb, OP_FLOOR_DIVIDE, dt, a, safe);  // err -1: safe is never 0
  return kb_select(kb, fix, kb_binary(kb, OP_ADD, dt, q, kb_iconst(kb, dt, 1)), q);
}

// wrap: negative indices count from the end (advanced indexing); else they are
// out of range (gather, index_select), as in PyTorch.
LExpr *kb_checked_index(KernelBuilder *kb, LExpr *a, int64_t size, int err, bool wrap) {
  LExpr *e = kb_expr(kb, LX_CHECKED_INDEX, DT_I64);
  e->a = kb_cast(kb, a, DT_I64);
  e->i = size;
  e->err = err;
  e->wrap = wrap;
  return e;
}

// An index tensor's element used as an index into a dim: its LIndex (dyn only).
LIndex kb_dyn_index(LExpr *e) {
  LIndex r = kb_ix_const(0);
  r.dyn = e;
  return r;
}

// x at xi, where a 0-d x still evaluates the check `chk` (it has nowhere to go).
static LExpr *gathered(KernelBuilder *kb, const Node *n, const Value *x, const LIndex *xi, LExpr *chk) {
  LExpr *v = kb_cast(kb, kb_value(kb, x, xi), n->out->dtype);
  if (x->view.ndim == 0 && chk)
    v = kb_select(kb, kb_binary(kb, OP_EQ, DT_BOOL, chk, chk), v, v);
  return v;
}

static LExpr *index_select_expr(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  const Value *x = n->srcs[0], *ix = n->srcs[1];
  int a = n->attr.dim, ond = n->out->view.ndim;
  LIndex ii[1] = {ond ? idx[a] : kb_ix_const(0)};
  if (ix->view.ndim == 1 && ix->view.shape[0] == 1)
    ii[0] = kb_ix_const(0);
  LExpr *iv = kb_value(kb, ix, ii);
  int64_t size = x->view.ndim ? x->view.shape[a] : 1;
  int err = kb_error(kb, n->loc, "index out of range in self");
  LExpr *chk = kb_checked_index(kb, iv, size, err, false);
  LIndex xi[TD_MAX_DIMS];
  for (int k = 0; k < x->view.ndim; k++)
    xi[k] = k == a ? kb_dyn_index(chk) : idx[k];
  return gathered(kb, n, x, xi, chk);
}

static LExpr *gather_expr(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  const Value *x = n->srcs[0], *ix = n->srcs[1];
  int a = n->attr.dim;
  LExpr *iv = kb_value(kb, ix, idx);
  int64_t size = x->view.ndim ? x->view.shape[a] : 1;
  char *msg = n->attr.form == GATHER_TARGET ? "Target %lld is out of bounds."
              : arena_printf(&kb->cx->arena, "index %%lld is out of bounds for dimension %d with size %lld", a,
                             (long long)size);
  LExpr *chk = kb_checked_index(kb, iv, size, kb_error(kb, n->loc, msg), false);
  LIndex xi[TD_MAX_DIMS];
  for (int k = 0; k < x->view.ndim; k++)
    xi[k] = k == a ? kb_dyn_index(chk) : (ix->view.ndim > k ? idx[k] : kb_ix_const(0));
  return gathered(kb, n, x, xi, chk);
}

// Advanced indexing: srcs[0] the base, srcs[1..] the index tensors at the set bits of
// attr.dims; PyTorch puts the broadcast index dims at the first indexed dim when the
// indexed dims are adjacent, else first.
static LExpr *index_expr(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  const Value *x = n->srcs[0];
  int nidx = n->nsrc - 1, pos[TD_MAX_DIMS], np = 0;
  for (int d = 0; d < x->view.ndim; d++)
    if (n->attr.dims >> d & 1)
      pos[np++] = d;
  TD_ASSERT(np == nidx && nidx >= 1);
  int nb = 0;
  for (int i = 0; i < nidx; i++)
    nb = n->srcs[i + 1]->view.ndim > nb ? n->srcs[i + 1]->view.ndim : nb;
  bool adjacent = pos[nidx - 1] - pos[0] == nidx - 1;
  int bstart = adjacent ? pos[0] : 0;  // where the broadcast dims sit in the output
  LIndex xi[TD_MAX_DIMS];
  int o = 0;
  for (int d = 0; d < x->view.ndim; d++) {
    if (o == bstart)
      o += nb;
    if (!(n->attr.dims >> d & 1))
      xi[d] = idx[o++];
  }
  for (int i = 0; i < nidx; i++) {
    const Value *t = n->srcs[i + 1];
    LIndex ti[TD_MAX_DIMS];
    kb_broadcast_index(&t->view, nb, idx + bstart, ti);
    int64_t size = x->view.shape[pos[i]];
    char *msg = arena_printf(&kb->cx->arena, "index %%lld is out of bounds for dimension %d with size %lld", i,
                             (long long)size);
    xi[pos[i]] = kb_dyn_index(kb_checked_index(kb, kb_value(kb, t, ti), size, kb_error(kb, n->loc, msg), true));
  }
  return kb_cast(kb, kb_value(kb, x, xi), n->out->dtype);
}

// Operand a of an op PyTorch computes in dtype rt, in the compute dtype cd: PyTorch
// casts every operand to rt, so a literal or 0-d operand of a small int op wraps to it
// first (u8 < -1 compares with 255). (Halves keep theirs: CUDA passes a scalar in f32.)
static LExpr *operand(KernelBuilder *kb, LExpr *a, DType rt, DType cd) {
  return kb_cast(kb, dtype_is_small_int(rt) ? kb_cast(kb, a, rt) : a, cd);
}

static LExpr *clamp_expr(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  DType od = n->out->dtype, cd = dtype_compute(od);
  LExpr *r = kb_cast(kb, kb_src(kb, n, 0, idx), cd);
  if (n->attr.has_lo)
    r = kb_arith(kb, OP_MAXIMUM, cd, r, operand(kb, kb_num(kb, cd, n->attr.lo, n->attr.ilo), od, cd));
  if (n->attr.has_hi)
    r = kb_arith(kb, OP_MINIMUM, cd, r, operand(kb, kb_num(kb, cd, n->attr.hi, n->attr.ihi), od, cd));
  return kb_cast(kb, r, od);
}

static LExpr *creation_expr(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  DType od = n->out->dtype;
  switch (n->op) {
  case OP_ZEROS: return kb_cast(kb, kb_iconst(kb, DT_I64, 0), od);
  case OP_ONES: return kb_cast(kb, kb_iconst(kb, DT_I64, 1), od);
  case OP_FULL:
    if (dtype_is_float(od))
      return kb_fconst(kb, od, n->attr.lo);
    return kb_iconst(kb, od, od == DT_BOOL ? n->attr.ilo != 0 || n->attr.lo != 0 : n->attr.ilo);
  case OP_ARANGE: {
    LExpr *i = kb_ix_expr(kb, &idx[0]);
    if (dtype_is_float(od)) {  // start + i * step in double, then rounded (PyTorch's CPU arange)
      LExpr *v = kb_binary(kb, OP_ADD, DT_F64, kb_fconst(kb, DT_F64, n->attr.lo),
                           kb_binary(kb, OP_MUL, DT_F64, kb_cast(kb, i, DT_F64), kb_fconst(kb, DT_F64, n->attr.hi)));
      return kb_cast(kb, v, od);
    }
    LExpr *v = kb_binary(kb, OP_ADD, DT_I64, kb_iconst(kb, DT_I64, n->attr.ilo),
                         kb_binary(kb, OP_MUL, DT_I64, i, kb_iconst(kb, DT_I64, n->attr.ihi)));
    return kb_cast(kb, v, od);
  }
  case OP_EYE: {
    LExpr *c = kb_binary(kb, OP_EQ, DT_BOOL, kb_ix_expr(kb, &idx[0]), kb_ix_expr(kb, &idx[1]));
    return kb_cast(kb, c, od);
  }
  default: td_unreachable();
  }
}

static LExpr *unary_expr(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  DType od = n->out->dtype, cd = dtype_compute(od);
  LExpr *x = kb_src(kb, n, 0, idx);
  Op op = n->op;
  switch (op) {
  case OP_LOGICAL_NOT:
    return kb_cast(kb, kb_unary(kb, OP_LOGICAL_NOT, DT_BOOL, kb_cast(kb, x, DT_BOOL)), od);
  case OP_ASSERT: {  // an index (0 where the condition holds, else 1) into a dim of size 1: 1 raises
    LExpr *bad = kb_cast(kb, kb_unary(kb, OP_LOGICAL_NOT, DT_BOOL, kb_cast(kb, x, DT_BOOL)), DT_I64);
    LExpr *ok = kb_checked_index(kb, bad, 1, kb_error(kb, n->loc, n->attr.msg), false);
    return kb_cast(kb, kb_binary(kb, OP_EQ, DT_BOOL, ok, kb_iconst(kb, DT_I64, 0)), od);
  }
  case OP_BITWISE_NOT:
    if (x->dt == DT_BOOL)
      return kb_cast(kb, kb_unary(kb, OP_LOGICAL_NOT, DT_BOOL, x), od);
    break;
  case OP_SIGN:
    if (cd == DT_BOOL)
      return kb_cast(kb, x, od);
    if (dtype_is_float(cd)) {  // PyTorch: sign(nan) = 0, whatever the backend's sign does with nan
      x = kb_cast(kb, x, cd);
      LExpr *isnan = kb_binary(kb, OP_NE, DT_BOOL, x, x);
      return kb_cast(kb, kb_select(kb, isnan, kb_fconst(kb, cd, 0), kb_unary(kb, OP_SIGN, cd, x)), od);
    }
    break;
  case OP_FLOOR: case OP_CEIL: case OP_ROUND: case OP_TRUNC:
    if (!dtype_is_float(cd))
      return kb_cast(kb, x, od);
    break;
  case OP_ABS:
    if (cd == DT_BOOL)
      return kb_cast(kb, x, od);
    break;
  default: break;
  }
  return kb_cast(kb, kb_unary(kb, op, cd, kb_cast(kb, x, cd)), od);
}

static LExpr *binary_expr(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  DType od = n->out->dtype, cd = dtype_compute(od);
  Op op = n->op;
  LExpr *a = kb_src(kb, n, 0, idx), *b = kb_src(kb, n, 1, idx);
  switch (op) {
  case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: {
    DType rt = kb_result_type(n->srcs, 2), c = dtype_compute(rt);
    if (c == DT_BOOL && ordered_cmp(op))
      c = DT_I32;
    return kb_cast(kb, kb_binary(kb, op, DT_BOOL, operand(kb, a, rt, c), operand(kb, b, rt, c)), od);
  }
  case OP_LOGICAL_AND: case OP_LOGICAL_OR:
    return kb_cast(kb, kb_binary(kb, op, DT_BOOL, kb_cast(kb, a, DT_BOOL), kb_cast(kb, b, DT_BOOL)), od);
  default: break;
  }
  a = operand(kb, a, od, cd);
  b = operand(kb, b, od, cd);
  LExpr *r;
  if (dtype_is_float(cd) && op == OP_DIV_TRUNC) {  // PyTorch's trunc(a / b)
    r = kb_unary(kb, OP_TRUNC, cd, kb_binary(kb, OP_DIV, cd, a, b));
  } else if (!dtype_is_float(cd) && (op == OP_FMOD || op == OP_DIV_TRUNC)) {
    r = int_trunc_div(kb, n, op, cd, a, b);
  } else if (!dtype_is_float(cd) && (op == OP_LSHIFT || op == OP_RSHIFT)) {
    int bits = cd == DT_I32 ? 32 : 64;  // the count masked as x86 does (ir/loop.h)
    r = kb_binary(kb, op, cd, a, kb_binary(kb, OP_BITWISE_AND, cd, b, kb_iconst(kb, cd, bits - 1)));
  } else if (!dtype_is_float(cd) && (op == OP_FLOOR_DIVIDE || op == OP_REMAINDER)) {
    r = kb_binary(kb, op, cd, a, b);
    r->err = kb_error(kb, n->loc, "ZeroDivisionError");
  } else if (!dtype_is_float(cd) && op == OP_POW) {
    r = int_pow(kb, cd, a, b);
  } else {
    TD_ASSERT(op != OP_DIV || dtype_is_float(cd));
    r = kb_arith(kb, op, cd, a, b);
  }
  return kb_cast(kb, r, od);
}

// ---- an inline cat or stack, piece by piece ----
// Where a reader's loops keep the cat dim's index inside one piece (ir/ew.c splits its
// loops at the pieces' bounds), the value there is that piece's, read directly; else a
// select over the pieces, each read at its index clamped into the piece: every load
// stays in bounds, and a piece is computed only at elements PyTorch computes too. While
// ir/ew.c probes, the cuts are recorded and the pieces' indices left unclamped (the
// probe's expressions are never run).

// The least and greatest value of x over its loops (false: unknown, a dyn part or a
// variable of no known loop).
static bool ix_range(const KernelBuilder *kb, const LIndex *x, int64_t *lo, int64_t *hi) {
  if (x->dyn)
    return false;
  *lo = *hi = x->base;
  for (int t = 0; t < x->nterms; t++) {
    int v = x->var[t];
    int64_t ext = v >= PROBE_VAR && v < PROBE_VAR + TD_MAX_DIMS ? kb->probe_ext[v - PROBE_VAR]
                  : v >= 0 && v < kb->var_ext.len         ? kb->var_ext.data[v]
                                                          : 0;
    if (ext <= 0)
      return false;
    int64_t m = x->coef[t] * (ext - 1);
    *(m > 0 ? hi : lo) += m;
  }
  return true;
}

static int64_t ceil_div(int64_t a, int64_t b) {  // b > 0
  return a / b + (a % b != 0 && a > 0);
}

// Records where index x (one probe variable's multiple) enters each piece after the
// first: bounds[1..np) the pieces' first cat indices.
static void record_cuts(KernelBuilder *kb, const LIndex *x, const int64_t *bounds, int np) {
  KbCuts *c = kb->cuts;
  if (x->dyn || x->nterms != 1 || x->var[0] < PROBE_VAR || x->var[0] >= PROBE_VAR + TD_MAX_DIMS) {
    c->bad = true;
    return;
  }
  int d = x->var[0] - PROBE_VAR;
  int64_t m = x->coef[0], b0 = x->base;
  for (int k = 1; k < np; k++) {
    if (c->n[d] == KB_MAX_CUTS) {
      c->bad = true;
      return;
    }
    // the first output index at which b0 + m * i moves across bound k
    c->at[d][c->n[d]++] = m > 0 ? ceil_div(bounds[k] - b0, m) : ceil_div(b0 - bounds[k] + 1, -m);
  }
}

// Piece k of cat/stack n (its dim a: [from, from + size) of the result) at the result's
// index idx, its dim a's index x.
static LExpr *piece_value(KernelBuilder *kb, const Node *n, int k, const LIndex *idx, LExpr *x, int64_t from,
                          int64_t size, DType dt) {
  int a = n->attr.dim;
  LIndex pidx[TD_MAX_DIMS];
  for (int d = 0, j = 0; d < n->out->view.ndim; d++) {
    if (d != a) {
      pidx[j++] = idx[d];
    } else if (n->op == OP_CAT) {
      if (x) {  // clamped into the piece
        LExpr *i = kb_binary(kb, OP_SUB, DT_I64, x, kb_iconst(kb, DT_I64, from));
        i = kb_binary(kb, OP_MAXIMUM, DT_I64, i, kb_iconst(kb, DT_I64, 0));
        i = kb_binary(kb, OP_MINIMUM, DT_I64, i, kb_iconst(kb, DT_I64, size - 1));
        pidx[j++] = kb_dyn_index(i);
      } else {
        pidx[j] = idx[d];
        pidx[j++].base -= from;
      }
    }
  }
  return kb_cast(kb, kb_value(kb, n->srcs[k], pidx), dt);
}

static LExpr *cat_expr(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  int a = n->attr.dim, np = 0;
  int64_t bounds[n->nsrc + 1];  // the first cat index of each non-empty piece
  int part[n->nsrc + 1];
  int64_t at = 0;
  for (int k = 0; k < n->nsrc; k++) {
    int64_t size = n->op == OP_STACK ? 1 : n->srcs[k]->view.shape[a];
    if (size > 0) {
      bounds[np] = at;
      part[np++] = k;
    }
    at += size;
  }
  bounds[np] = at;
  TD_ASSERT(np > 0);
  int64_t lo, hi;
  if (ix_range(kb, &idx[a], &lo, &hi))
    for (int p = 0; p < np; p++)
      if (lo >= bounds[p] && hi < bounds[p + 1])
        return piece_value(kb, n, part[p], idx, NULL, bounds[p], bounds[p + 1] - bounds[p], n->out->dtype);
  if (kb->cuts)
    record_cuts(kb, &idx[a], bounds, np);
  DType cd = dtype_compute(n->out->dtype);  // (selects of halves are of their f32)
  LExpr *x = kb_ix_expr(kb, &idx[a]);
  LExpr *clamp = kb->cuts ? NULL : x;  // (a probe keeps the pieces' loads affine: ir/ew.c reads their strides)
  LExpr *r = piece_value(kb, n, part[np - 1], idx, clamp, bounds[np - 1], bounds[np] - bounds[np - 1], cd);
  for (int p = np - 2; p >= 0; p--) {
    LExpr *in = kb_binary(kb, OP_LT, DT_BOOL, x, kb_iconst(kb, DT_I64, bounds[p + 1]));
    r = kb_select(kb, in, piece_value(kb, n, part[p], idx, clamp, bounds[p], bounds[p + 1] - bounds[p], cd), r);
  }
  return kb_cast(kb, r, n->out->dtype);
}

LExpr *kb_node_expr(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  DType od = n->out->dtype, cd = dtype_compute(od);
  if (op_class(n->op) == OC_UNARY && n->op != OP_CLAMP)
    return unary_expr(kb, n, idx);
  if (op_class(n->op) == OC_BINARY)
    return binary_expr(kb, n, idx);
  switch (n->op) {
  case OP_COPY: case OP_CLONE: case OP_TO:
    return kb_cast(kb, kb_src(kb, n, 0, idx), od);
  case OP_BITCAST:  // same width, one a float (loop.h's LX_BITCAST)
    return lx_bitcast(kb->cx, od, kb_src(kb, n, 0, idx));
  case OP_WHERE: {
    LExpr *c = kb_cast(kb, kb_src(kb, n, 0, idx), DT_BOOL);
    LExpr *a = kb_cast(kb, kb_src(kb, n, 1, idx), cd), *b = kb_cast(kb, kb_src(kb, n, 2, idx), cd);
    return kb_cast(kb, kb_select(kb, c, a, b), od);
  }
  case OP_CLAMP: return clamp_expr(kb, n, idx);
  case OP_INDEX: return index_expr(kb, n, idx);
  case OP_INDEX_SELECT: return index_select_expr(kb, n, idx);
  case OP_GATHER: return gather_expr(kb, n, idx);
  case OP_CAT: case OP_STACK: return cat_expr(kb, n, idx);
  case OP_ZEROS: case OP_ONES: case OP_FULL: case OP_ARANGE: case OP_EYE:
    return creation_expr(kb, n, idx);
  default:
    td_internal_error(__FILE__, __LINE__, "%s is not an elementwise op", op_name(n->op));
  }
}
