// ir/row.c: the kernel builder's ROW kernels (ir/kernel.h): reductions, softmax,
// log_softmax and logsumexp over the same input shape and reduced dims, then
// elementwise epilogues over the reduced or the input shape. Two schedules: row by row
// (build_row: a pass over the row per accumulation, the results in locals, a last pass
// for what has the input's shape; a row of at most SHORT_ROW elements has its passes
// unrolled, so that the loop over rows vectorizes; with a result of the rows' shape, in
// blocks of a vector of rows transposed through scratch: BLOCK), and by columns when
// the reduction would stride through memory (build_col, below), which splits the rows
// into parts reduced by threads and then combined when the kept columns are too few to
// share (SPLIT), and in strips of rows in vector lanes when the reduced dims stride and
// a result has the input's shape (STRIP). Where a softmax's last pass multiplies its terms by the sum's
// reciprocal, the kernel's LSoftmax (ir/loop.h) says where its passes are (one softmax
// a kernel; the others of a kernel with several keep their terms in their results
// here: keep_out). On a CPU, a looped row's mean and variance take one pass shifted by
// its first element (moments), log_softmax's max skips NaN (select_max), and the last
// pass multiplies by 1 / sqrt(s) of a row's s where it divides by sqrt(s) (recip_sqrt);
// an inline input with a transcendental op that several passes read is computed once
// per row into per-thread scratch, which they load (row_cache).
// max(dim)'s values share the pass of its indices (argext_value). A CPU kernel whose rows
// read an inline cat (ir/fuse.c recomputes it piece by piece) is built row by row with
// its outer loops, and each pass, once per range between the pieces' bounds (row_cuts,
// build_row_cut), every load then reading one piece directly.
//
// Scans (cumsum, cumprod, cummax/cummin values and indices, logcumsumexp) are ROW
// kernels of their own (section SCAN, at the end): an accumulator per row, stored at
// every step of the scan dim, by rows or, in CPU programs, by columns (the column
// schedule's plan and passes).
//
// Invariants: every output combines the same terms in the same order in both
// schedules (bit-identical results), but SPLIT's float sums, regrouped into parts (its
// comment says how), and the CPU's one-pass moments (which the column and strip schedules and GPU
// programs do not take: their variance is the two passes'; the column schedule has no
// last pass over the input's shape, recip_sqrt's); a row node's result is
// valid only on its row (LocalVal.at), and readers are checked against it.
#include "ir/kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ============================================================================
// ROW: row by row (build_row, the reference)
// ============================================================================
typedef struct Row {
  const View *xv;  // the row nodes' input shape
  uint32_t mask;   // reduced dims of it
  LIndex xidx[TD_MAX_DIMS];  // outer dims: the outer loop vars
  LStmtList *body;           // inside the outer loops
  int64_t n;                 // elements per row
  const Node *done[64];      // row nodes already computed, for reuse
  int ndone;
  LStmt *pass;               // the last pass's loop when it made exactly one, else NULL
  LSoftmax sm;               // the last softmax's passes (its loops single), for LKernel.softmax
  const Node *tnode;         // a softmax of an unrolled row whose terms are kept in locals,
  int *terms;                // terms[e]: exp(x(e) - max) for each element e of the row
  int nsoftmax;              // softmax and log_softmax row nodes of the kernel
  const Node *kept[8];       // softmaxes whose sum pass stored their terms in their results
  int nkept;
  const NodeList *ns;        // the kernel's nodes
  const Node *mom;           // the var/std whose squared deviations moments() computed with a mean
  int mom_ss;                // (its local), -1 if none
  const Node *arg[8];        // argmax/argmin nodes computed on this row (row_argext), with
  int argpos[8], argbest[8]; // their index and best value locals, which max(dim)'s values share
  int narg;
  bool strip;                // built as STRIP's template (no one-pass moments)
  const Node *cached[4];     // inline nodes whose values on this row are in row buffers (row_cache)
  int ncached;
  const KbCuts *cuts;        // where an inline cat the rows read changes pieces (row_cuts), NULL: nowhere
} Row;

// Rows of at most this many elements (a short window: x.sum(-1) of a [N, 3] x) are not
// looped over: each pass is unrolled into one statement per element, so the loop over
// the rows is the innermost and vectorizes across rows like an elementwise kernel (a
// loop of three scalar additions per row ran ~30x slower per element). The terms are
// combined in the same order as the loop's.
enum { SHORT_ROW = 16 };

// How many times a pass's body is built: once (looped) or once per element (a short
// row of a CPU program; GPU programs keep the loops, ir/gpu_row.c maps them).
static int64_t row_steps(const KernelBuilder *kb, const Row *r) {
  return kb->cpu && r->n <= SHORT_ROW ? r->n : 1;
}

// Range c (0 .. n[d]) of dim d of x between cuts (all of the dim if none): its first
// index in *from, its end returned.
static int64_t cut_range(const KbCuts *cuts, const View *x, int d, int c, int64_t *from) {
  *from = c ? cuts->at[d][c - 1] : 0;
  return c < cuts->n[d] ? cuts->at[d][c] : x->shape[d];
}

// How many times a pass over the row is built: row_steps, or with a cat's pieces
// changing along reduced dims (Row.cuts), once per combination of their ranges.
static int64_t row_parts(const KernelBuilder *kb, const Row *r) {
  int64_t n = row_steps(kb, r);
  for (int d = 0; r->cuts && n == 1 && d < r->xv->ndim; d++)
    if (r->mask >> d & 1)
      n *= r->cuts->n[d] + 1;
  return n;
}

// A pass over the current row, step `step` of row_parts: loops over the reduced dims
// (those a cat's pieces change along: over range `step` of them, Row.cuts), or
// (unrolled) element `step` of them in row-major order; idx gets the input index.
static LStmtList *row_pass(KernelBuilder *kb, Row *r, LIndex *idx, int64_t step) {
  LStmtList *into = r->body;
  int nloops = 0;
  bool unrolled = row_steps(kb, r) > 1, parts = !unrolled && row_parts(kb, r) > 1;
  r->pass = NULL;
  for (int d = r->xv->ndim - 1; d >= 0; d--) {  // kept dims; reduced ones of size 1 or unrolled
    if (!(r->mask >> d & 1)) {
      idx[d] = r->xidx[d];
    } else if (r->xv->shape[d] == 1 || unrolled) {
      idx[d] = kb_ix_const(step % r->xv->shape[d]);
      step /= r->xv->shape[d];
    }
  }
  if (unrolled)
    return into;
  int64_t from[TD_MAX_DIMS] = {0}, to[TD_MAX_DIMS];
  for (int d = r->xv->ndim - 1; d >= 0; d--) {  // step: the range of each cut dim, the last fastest
    to[d] = r->xv->shape[d];
    if (parts && r->mask >> d & 1) {
      to[d] = cut_range(r->cuts, r->xv, d, (int)(step % (r->cuts->n[d] + 1)), &from[d]);
      step /= r->cuts->n[d] + 1;
    }
  }
  for (int d = 0; d < r->xv->ndim; d++) {
    if (!(r->mask >> d & 1) || r->xv->shape[d] == 1)
      continue;
    int v = kb_new_var(kb);
    LStmt *s = kb_loop(kb, v, to[d] - from[d]);
    kb_push(kb, into, s);
    into = &s->body;
    idx[d] = kb_ix_var(v);
    idx[d].base = from[d];
    r->pass = nloops++ || parts ? NULL : s;
  }
  return into;
}

// The row-major position of idx within the reduced dims `mask` of xv (argmax's answer).
static LIndex row_position(KernelBuilder *kb, const View *xv, uint32_t mask, const LIndex *idx) {
  LIndex pos = kb_ix_const(0);
  int64_t mul = 1;
  for (int d = xv->ndim - 1; d >= 0; d--)
    if (mask >> d & 1) {
      kb_ix_addmul(kb, &pos, &idx[d], mul);
      mul *= xv->shape[d];
    }
  return pos;
}

static LExpr *inf_of(KernelBuilder *kb, DType dt, bool neg, bool for_max) {
  // the identity of max (for_max) or min in dt
  if (dtype_is_float(dt))
    return kb_fconst(kb, dt, neg ? -INFINITY : INFINITY);
  if (dt == DT_BOOL)
    return kb_iconst(kb, dt, for_max ? 0 : 1);
  int64_t lo = dt == DT_I32 ? INT32_MIN : INT64_MIN, hi = dt == DT_I32 ? INT32_MAX : INT64_MAX;
  return kb_iconst(kb, dt, neg ? lo : hi);
}

// One accumulation pass: local acc (init) updated by acc = acc op f(x) over the row.
static int row_fold(KernelBuilder *kb, Row *r, const Node *n, Op op, DType cd, LExpr *init, int sub_local,
                    bool square) {
  int acc = kb_new_local(kb, cd);
  kb_push(kb, r->body, kb_let(kb, acc, init));
  Op fold = op == OP_EXP ? OP_ADD : op;  // sum of exp
  for (int64_t e = 0; e < row_parts(kb, r); e++) {
    LIndex idx[TD_MAX_DIMS];
    LStmtList *in = row_pass(kb, r, idx, e);
    LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd);
    if (sub_local >= 0)
      x = kb_binary(kb, OP_SUB, cd, x, kb_local_ref(kb, sub_local));
    if (square)
      x = kb_unary(kb, OP_SQUARE, cd, x);
    if (op == OP_EXP)
      x = kb_unary(kb, OP_EXP, cd, x);
    kb_push(kb, in, kb_set(kb, acc, kb_arith(kb, fold, cd, kb_local_ref(kb, acc), x)));
  }
  return acc;
}

// The sum of exp(x - max) over an unrolled row (row_fold's order), each term kept in a
// local for the softmax's last pass (Row.terms), which then only multiplies.
static int kept_terms(KernelBuilder *kb, Row *r, const Node *n, DType cd, int max) {
  int acc = kb_let_local(kb, r->body, kb_fconst(kb, cd, 0));
  r->tnode = n;
  r->terms = arena_alloc(&kb->cx->arena, sizeof(int) * (size_t)r->n);
  for (int64_t e = 0; e < r->n; e++) {
    LIndex idx[TD_MAX_DIMS];
    LStmtList *in = row_pass(kb, r, idx, e);
    LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd);
    r->terms[e] = kb_let_local(kb, in, kb_unary(kb, OP_EXP, cd, kb_binary(kb, OP_SUB, cd, x, kb_local_ref(kb, max))));
    kb_push(kb, in, kb_set(kb, acc, kb_binary(kb, OP_ADD, cd, kb_local_ref(kb, acc), kb_local_ref(kb, r->terms[e]))));
  }
  return acc;
}

// Whether x replaces the best so far of argmax (mx) or argmin, both of dtype cd.
static LExpr *argext_cond(KernelBuilder *kb, bool mx, DType cd, LExpr *xv, LExpr *bv) {
  LExpr *cond = kb_binary(kb, mx ? OP_GT : OP_LT, DT_BOOL, xv, bv);
  if (dtype_is_float(cd)) {  // nan is the extreme; the first nan wins
    LExpr *xnan = kb_binary(kb, OP_NE, DT_BOOL, xv, xv), *bnum = kb_binary(kb, OP_EQ, DT_BOOL, bv, bv);
    cond = kb_binary(kb, OP_LOGICAL_OR, DT_BOOL, cond, kb_binary(kb, OP_LOGICAL_AND, DT_BOOL, xnan, bnum));
  }
  return cond;
}

// argmax/argmin n over the row: the local of its index, *bestp that of the best value (the
// first extreme's), computed once per row (Row.arg).
static int row_argext(KernelBuilder *kb, Row *r, const Node *n, int *bestp) {
  for (int i = 0; i < r->narg; i++)
    if (r->arg[i] == n)
      return *bestp = r->argbest[i], r->argpos[i];
  DType cd = dtype_compute(n->srcs[0]->dtype);
  bool mx = n->op == OP_ARGMAX;
  int best = kb_let_local(kb, r->body, inf_of(kb, cd, mx, mx));
  int pos = kb_let_local(kb, r->body, kb_iconst(kb, DT_I64, 0));
  for (int64_t e = 0; e < row_parts(kb, r); e++) {
    LIndex idx[TD_MAX_DIMS];
    LStmtList *in = row_pass(kb, r, idx, e);
    int x = kb_let_local(kb, in, kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd));
    LExpr *cond = argext_cond(kb, mx, cd, kb_local_ref(kb, x), kb_local_ref(kb, best));
    LStmt *upd = kb_if(kb, cond);
    kb_push(kb, in, upd);
    kb_push(kb, &upd->body, kb_set(kb, best, kb_local_ref(kb, x)));
    LIndex p = row_position(kb, r->xv, r->mask, idx);
    kb_push(kb, &upd->body, kb_set(kb, pos, kb_ix_expr(kb, &p)));
  }
  if (r->narg < 8)
    r->arg[r->narg] = n, r->argpos[r->narg] = pos, r->argbest[r->narg++] = best;
  *bestp = best;
  return pos;
}

static bool same_input(const Value *x, const Value *y);

// max(dim)'s values (amax, max, amin, min n) on a looped CPU row of a kernel that also has
// its indices (argmax, argmin of the same input): the argext's best value, one pass where
// amax and argmax took two (the index's pass read the row again, ~2x the time of one on
// [4096, 8192] f32). It is PyTorch's max(dim) value: the first extreme element (the first
// NaN), as its kernel reduces values with their indices. -1 where there is none.
static int argext_value(KernelBuilder *kb, Row *r, const Node *n) {
  if (!kb->cpu || row_parts(kb, r) != 1)
    return -1;
  Op want = n->op == OP_AMAX || n->op == OP_MAX ? OP_ARGMAX : OP_ARGMIN;
  for (int j = 0; j < r->ns->len && op_is_row(r->ns->data[j]->op); j++) {
    const Node *a = r->ns->data[j];
    int best;
    if (a->op == want && same_input(a->srcs[0], n->srcs[0]) && dtype_compute(n->out->dtype) == dtype_compute(a->srcs[0]->dtype)) {
      row_argext(kb, r, a, &best);
      return best;
    }
  }
  return -1;
}

// Row node n's result is `local`, valid at the reduced index of input index xidx (the
// kept dims' indices; keepdim dims have size 1).
static void reduced_local(KernelBuilder *kb, const Node *n, const View *xv, uint32_t mask, const LIndex *xidx,
                          int local) {
  LocalVal *lv = &kb->lv[n->id];
  lv->kind = LV_LOCAL;
  lv->local = local;
  lv->nat = n->out->view.ndim;
  int o = 0;
  for (int d = 0; d < xv->ndim; d++) {
    if (!(mask >> d & 1)) {
      lv->at[o] = xidx[d];
      lv->fixed[o++] = true;
    } else if (n->attr.keepdim) {
      lv->at[o] = kb_ix_const(0);
      lv->fixed[o++] = false;
    }
  }
  TD_ASSERT(o == lv->nat);
}

// The local of a mean of the same input in dtype cd already computed on this row, or -1.
static int same_mean(KernelBuilder *kb, const Row *r, const Node *n, DType cd) {
  const Value *x = n->srcs[0];
  for (int i = 0; i < r->ndone; i++) {
    const Node *m = r->done[i];
    const Value *y = m->srcs[0];
    const LocalVal *lv = &kb->lv[m->id];
    if (m->op == OP_MEAN && lv->kind == LV_LOCAL && kb->k->locals.data[lv->local] == cd &&
        (x == y || (x->buf == y->buf && x->buf && view_same_elems(x->view, y->view))) && x->dtype == y->dtype)
      return lv->local;
  }
  return -1;
}

// Whether softmax n keeps its terms in its result (keep_out): a looped row of a kernel
// with more than one softmax or log_softmax, n stored in the computation dtype with the
// rows' shape. ir/sched.c's keep_terms does the same for a kernel's one softmax
// (LKernel.softmax), which records one only; without this, every other softmax of the
// kernel computed each exp twice, in its sum and in its last pass.
static bool keeps_out(const KernelBuilder *kb, const Row *r, const Node *n, DType cd) {
  if (!kb->cpu || n->op != OP_SOFTMAX || r->nsoftmax < 2 || r->nkept >= 8 || row_steps(kb, r) != 1 ||
      n->mode != NM_STORED || n->out->dtype != cd || !kb_same_shape(&n->out->view, r->xv) ||
      (cd != DT_F32 && cd != DT_F64))
    return false;
  int buf = kb->buf_of[n->out->buf->id];  // a parameter's storage (written in place) may be read
  return buf >= 0 && kb->p->bufs.data[buf].kind != LB_PARAM;
}

// The sum of exp(x - max) over the row, each term stored in n's result, which the last
// pass then multiplies by 1 / sum (Row.kept).
static int keep_out(KernelBuilder *kb, Row *r, const Node *n, DType cd, int max) {
  int acc = kb_let_local(kb, r->body, kb_fconst(kb, cd, 0));
  for (int64_t e = 0; e < row_parts(kb, r); e++) {
    LIndex idx[TD_MAX_DIMS];
    LStmtList *in = row_pass(kb, r, idx, e);
    LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd);
    int t = kb_let_local(kb, in, kb_unary(kb, OP_EXP, cd, kb_binary(kb, OP_SUB, cd, x, kb_local_ref(kb, max))));
    kb_store_node(kb, in, n, idx, kb_local_ref(kb, t));
    kb_push(kb, in, kb_set(kb, acc, kb_binary(kb, OP_ADD, cd, kb_local_ref(kb, acc), kb_local_ref(kb, t))));
  }
  r->kept[r->nkept++] = n;
  return acc;
}

// log_softmax's row max on a CPU, over a looped row (and a softmax's that keep_out keeps): `let y = x; m = (y > m) ? y : m`,
// the max that skips NaN, as ir/sched.c's softmax_max makes softmax's (one max
// instruction where maximum() also tests for NaN and blends; on C, gcc vectorized
// neither, and the NaN tests made log_softmax [256, 4096] ~3x slower than softmax). A
// NaN in the row makes its sum, so log(sum) and every result, NaN whatever m is. -1
// where it does not apply (then row_fold's maximum).
static int select_max(KernelBuilder *kb, Row *r, const Node *n, DType cd, bool keep) {
  if (!kb->cpu || (n->op != OP_LOG_SOFTMAX && !keep) || row_steps(kb, r) != 1 || (cd != DT_F32 && cd != DT_F64))
    return -1;
  int m = kb_let_local(kb, r->body, kb_fconst(kb, cd, -INFINITY));
  for (int64_t e = 0; e < row_parts(kb, r); e++) {  // (a cat's pieces: a pass each, Row.cuts)
    LIndex idx[TD_MAX_DIMS];
    LStmtList *in = row_pass(kb, r, idx, e);
    int y = kb_let_local(kb, in, kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd));
    LExpr *c = kb_binary(kb, OP_GT, DT_BOOL, kb_local_ref(kb, y), kb_local_ref(kb, m));
    kb_push(kb, in, kb_set(kb, m, kb_select(kb, c, kb_local_ref(kb, y), kb_local_ref(kb, m))));
  }
  return m;
}

// Whether values x and y are the same input (a node, or equal views of one buffer).
static bool same_input(const Value *x, const Value *y) {
  return x->dtype == y->dtype && (x == y || (x->buf == y->buf && x->buf && view_same_elems(x->view, y->view)));
}

// The mean and the sum of squared deviations of n's input over a looped row of a CPU
// program in one pass over it, shifted by the row's first element K (locals *mean,
// *ss; false where it does not apply: then two passes), and where that pass is not
// good enough, the two passes' exact results, all from one loop body run at most three
// times (attempt a):
//   K = x(0); ok = false
//   for a < 3: if (a == 0 || !ok) {
//     for j: d = x(j) - K; s1 += d; s2 += d * d          (s1, s2 from 0)
//     q = s1 / n; mean = a == 2 ? mean : K + q; ss = a == 2 ? s2 : s2 - s1 * q
//     ok = a == 0 && ss >= s2 / 8; K = a == 0 ? 0 : mean }
// Attempt 0 is the one pass; 1 (K = 0: d is x exactly) the two passes' sum, so mean =
// sum / n (s1 is never -0, so 0 + q is q); 2 (K = mean) their squared deviations. The
// same terms in the same order as the two passes written out, in one body (GPT-2's C
// was ~1 KB a layer-norm kernel larger with them apart). The shift keeps s2 - s1^2 / n
// from cancelling as sum(x^2) - sum(x)^2 / n does where the mean is large against the
// spread (x = 1e4 + noise: the naive form's f32 variance is off by orders of
// magnitude). The cancellation left costs at most 3 bits where ss >= s2 / 8 (the first
// element within ~2.6 standard deviations of the mean); rows where it is not (an
// outlier first), whose moments overflow, or with a NaN take the two passes.
static bool moments(KernelBuilder *kb, Row *r, const Node *n, DType cd, int *mean, int *ss) {
  if (!kb->cpu || kb->naive || r->strip || row_parts(kb, r) != 1 || (cd != DT_F32 && cd != DT_F64) || r->n < 2)
    return false;
  LExpr *N = kb_fconst(kb, cd, (double)r->n);
  LIndex idx[TD_MAX_DIMS];
  for (int d = 0; d < r->xv->ndim; d++)
    idx[d] = r->mask >> d & 1 ? kb_ix_const(0) : r->xidx[d];
  int K = kb_let_local(kb, r->body, kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd));
  *mean = kb_let_local(kb, r->body, kb_num(kb, cd, 0, 0));
  *ss = kb_let_local(kb, r->body, kb_num(kb, cd, 0, 0));
  int ok = kb_let_local(kb, r->body, kb_iconst(kb, DT_BOOL, 0));
  int av = kb_new_var(kb);
  LStmt *att = kb_loop(kb, av, 3);
  kb_push(kb, r->body, att);
  LIndex ai = kb_ix_var(av);
  LExpr *a = kb_ix_expr(kb, &ai), *first = kb_binary(kb, OP_EQ, DT_BOOL, a, kb_iconst(kb, DT_I64, 0)),
        *last = kb_binary(kb, OP_EQ, DT_BOOL, a, kb_iconst(kb, DT_I64, 2));
  LStmt *run = kb_if(kb, kb_binary(kb, OP_LOGICAL_OR, DT_BOOL, first,
                                   kb_unary(kb, OP_LOGICAL_NOT, DT_BOOL, kb_local_ref(kb, ok))));
  kb_push(kb, &att->body, run);
  LStmtList *body = r->body;
  r->body = &run->body;
  int s1 = kb_let_local(kb, r->body, kb_num(kb, cd, 0, 0)), s2 = kb_let_local(kb, r->body, kb_num(kb, cd, 0, 0));
  LStmtList *in = row_pass(kb, r, idx, 0);
  LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd);
  int d = kb_let_local(kb, in, kb_binary(kb, OP_SUB, cd, x, kb_local_ref(kb, K)));
  kb_push(kb, in, kb_set(kb, s1, kb_binary(kb, OP_ADD, cd, kb_local_ref(kb, s1), kb_local_ref(kb, d))));
  kb_push(kb, in, kb_set(kb, s2, kb_binary(kb, OP_ADD, cd, kb_local_ref(kb, s2), kb_unary(kb, OP_SQUARE, cd, kb_local_ref(kb, d)))));
  int q = kb_let_local(kb, r->body, kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, s1), N));
  LExpr *m = kb_binary(kb, OP_ADD, cd, kb_local_ref(kb, K), kb_local_ref(kb, q));
  kb_push(kb, r->body, kb_set(kb, *mean, kb_select(kb, last, kb_local_ref(kb, *mean), m)));
  LExpr *v = kb_binary(kb, OP_SUB, cd, kb_local_ref(kb, s2), kb_binary(kb, OP_MUL, cd, kb_local_ref(kb, s1), kb_local_ref(kb, q)));
  kb_push(kb, r->body, kb_set(kb, *ss, kb_select(kb, last, kb_local_ref(kb, s2), v)));
  LExpr *good = kb_binary(kb, OP_GE, DT_BOOL, kb_local_ref(kb, *ss),
                          kb_binary(kb, OP_MUL, cd, kb_local_ref(kb, s2), kb_fconst(kb, cd, 0.125)));
  kb_push(kb, r->body, kb_set(kb, ok, kb_binary(kb, OP_LOGICAL_AND, DT_BOOL, first, good)));
  kb_push(kb, r->body, kb_set(kb, K, kb_select(kb, first, kb_num(kb, cd, 0, 0), kb_local_ref(kb, *mean))));
  r->body = body;
  r->pass = NULL;
  return true;
}

// A var/std node after n (a mean) in the kernel over the same input in dtype cd, or NULL.
static const Node *later_var(const Row *r, const Node *n, DType cd) {
  bool after = false;
  for (int j = 0; j < r->ns->len && op_is_row(r->ns->data[j]->op); j++) {
    const Node *v = r->ns->data[j];
    if ((v->op == OP_VAR || v->op == OP_STD) && after && dtype_compute(v->out->dtype) == cd &&
        same_input(v->srcs[0], n->srcs[0]))
      return v;
    after |= v == n;
  }
  return NULL;
}

// Computes row node n over the current row; sets its LocalVal.
static void row_node(KernelBuilder *kb, Row *r, const Node *n) {
  DType od = n->out->dtype, cd = dtype_compute(od);
  LocalVal *lv = &kb->lv[n->id];
  int res = -1;
  LExpr *N = kb_num(kb, dtype_is_float(cd) ? cd : DT_F64, (double)r->n, r->n);
  switch (n->op) {
  case OP_SUM: res = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), -1, false); break;
  case OP_PROD: res = row_fold(kb, r, n, OP_MUL, cd, kb_num(kb, cd, 1, 1), -1, false); break;
  case OP_MEAN: {  // with a later var/std of the same input: both in one pass (moments)
    const Node *v = later_var(r, n, cd);
    int ss;
    if (v && r->mom_ss < 0 && moments(kb, r, n, cd, &res, &ss)) {
      r->mom = v;
      r->mom_ss = ss;
      break;
    }
    int s = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), -1, false);
    res = kb_let_local(kb, r->body, kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, s), N));
    break;
  }
  case OP_AMAX: case OP_MAX:
    if ((res = argext_value(kb, r, n)) < 0)
      res = row_fold(kb, r, n, OP_MAXIMUM, cd, inf_of(kb, cd, true, true), -1, false);
    break;
  case OP_AMIN: case OP_MIN:
    if ((res = argext_value(kb, r, n)) < 0)
      res = row_fold(kb, r, n, OP_MINIMUM, cd, inf_of(kb, cd, false, false), -1, false);
    break;
  case OP_ALL: case OP_ANY: {  // folded in bool; a uint8 input's result is uint8 (PyTorch)
    bool all = n->op == OP_ALL;
    res = row_fold(kb, r, n, all ? OP_LOGICAL_AND : OP_LOGICAL_OR, DT_BOOL, kb_iconst(kb, DT_BOOL, all), -1, false);
    if (cd != DT_BOOL)
      res = kb_let_local(kb, r->body, kb_cast(kb, kb_local_ref(kb, res), cd));
    break;
  }
  case OP_VAR: case OP_STD: {  // one pass (moments), else two: the mean (reused if computed), then
                               // the squared deviations
    int m, ss;
    if (r->mom == n) {
      ss = r->mom_ss;
      r->mom = NULL;
      r->mom_ss = -1;
    } else if ((m = same_mean(kb, r, n, cd)) >= 0 || !moments(kb, r, n, cd, &m, &ss)) {
      if (m < 0) {
        int s = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), -1, false);
        m = kb_let_local(kb, r->body, kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, s), N));
      }
      ss = row_fold(kb, r, n, OP_ADD, cd, kb_num(kb, cd, 0, 0), m, true);
    }
    int64_t div = r->n - n->attr.correction;
    LExpr *v = kb_binary(kb, OP_DIV, cd, kb_local_ref(kb, ss), kb_fconst(kb, cd, (double)(div > 0 ? div : 0)));
    if (n->op == OP_STD)
      v = kb_unary(kb, OP_SQRT, cd, v);
    res = kb_let_local(kb, r->body, v);
    break;
  }
  case OP_LOGSUMEXP: {  // max-shifted; an infinite max shifts by 0 (all -inf gives -inf)
    int m = row_fold(kb, r, n, OP_MAXIMUM, cd, inf_of(kb, cd, true, true), -1, false);
    LExpr *mv = kb_local_ref(kb, m);
    LExpr *isinf = kb_binary(kb, OP_EQ, DT_BOOL, kb_unary(kb, OP_ABS, cd, mv), kb_fconst(kb, cd, INFINITY));
    int sh = kb_let_local(kb, r->body, kb_select(kb, isinf, kb_fconst(kb, cd, 0), mv));
    int s = row_fold(kb, r, n, OP_EXP, cd, kb_fconst(kb, cd, 0), sh, false);
    res = kb_let_local(kb, r->body,
                       kb_binary(kb, OP_ADD, cd, kb_unary(kb, OP_LOG, cd, kb_local_ref(kb, s)), kb_local_ref(kb, sh)));
    break;
  }
  case OP_ARGMAX: case OP_ARGMIN: {
    int best;
    res = row_argext(kb, r, n, &best);
    break;
  }
  case OP_SOFTMAX: case OP_LOG_SOFTMAX: {
    bool keep = keeps_out(kb, r, n, cd);
    int m = select_max(kb, r, n, cd, keep);
    if (m < 0)
      m = row_fold(kb, r, n, OP_MAXIMUM, cd, inf_of(kb, cd, true, true), -1, false);
    LStmt *max_loop = keep ? NULL : r->pass;  // (no LKernel.softmax for a kept one)
    int s = n->op == OP_SOFTMAX && row_steps(kb, r) > 1 ? kept_terms(kb, r, n, cd, m)
            : keep ? keep_out(kb, r, n, cd, m)
                   : row_fold(kb, r, n, OP_EXP, cd, kb_fconst(kb, cd, 0), m, false);
    LStmt *sum_loop = r->pass;
    // log_softmax subtracts log(sum); softmax multiplies by 1 / sum, as PyTorch's CPU
    // kernel does (a division per element would cost more and round differently)
    if (n->op == OP_LOG_SOFTMAX)
      s = kb_let_local(kb, r->body, kb_unary(kb, OP_LOG, cd, kb_local_ref(kb, s)));
    else
      s = kb_let_local(kb, r->body, kb_binary(kb, OP_DIV, cd, kb_fconst(kb, cd, 1), kb_local_ref(kb, s)));
    if (n->op == OP_SOFTMAX && max_loop && sum_loop)  // the let just made is the reciprocal
      r->sm = (LSoftmax){r->body, max_loop, sum_loop, r->body->data[r->body->len - 1], NULL};
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
  reduced_local(kb, n, r->xv, r->mask, r->xidx, res);
}

// The index of a node of the reduced shape (with or without keepdim) of input shape xv
// reduced over `mask`, at input index xidx (only its kept dims are read); false if
// its shape is neither.
static bool reduced_index(const View *xv, uint32_t mask, const LIndex *xidx, const View *v, LIndex *idx) {
  int nout = 0;
  for (int d = 0; d < xv->ndim; d++)
    nout += !(mask >> d & 1);
  if (v->ndim == nout) {
    int o = 0;
    for (int d = 0; d < xv->ndim; d++)
      if (!(mask >> d & 1)) {
        if (v->shape[o] != xv->shape[d])
          return false;
        idx[o++] = xidx[d];
      }
    return true;
  }
  if (v->ndim != xv->ndim)
    return false;
  for (int d = 0; d < v->ndim; d++) {
    bool red = mask >> d & 1;
    if (v->shape[d] != (red ? 1 : xv->shape[d]))
      return false;
    idx[d] = red ? kb_ix_const(0) : xidx[d];
  }
  return true;
}

// Softmax n's term that keep_out stored in its result, at input index idx.
static LExpr *kept_term(KernelBuilder *kb, const Node *n, const LIndex *idx) {
  return kb_buf_load(kb, kb->buf_of[n->out->buf->id], kb_view_index(kb, &n->out->view, idx));
}

// The reciprocals of a row's square roots that the last pass divides by (recip_sqrt).
typedef struct Recips {
  const LExpr *q[8];  // sqrt(s)
  int local[8];       // 1 / sqrt(s)
  int n;
  int nloc, nvar;     // the locals and loop vars made before the last pass
  LStmtList lets;
} Recips;

// Whether e is the same over the row: constants, scalar arguments, locals let before
// the last pass, loads the kernel does not write at indices of the loops around the
// row, through operators that cannot raise.
static bool row_uniform(const KernelBuilder *kb, const Recips *R, const LExpr *e) {
  if (!e)
    return true;
  if (e->kind == LX_LOCAL)
    return e->local < R->nloc;
  if (e->kind == LX_LOAD) {
    for (int t = 0; t < e->idx.nterms; t++)
      if (e->idx.var[t] >= R->nvar)
        return false;
    return !e->idx.dyn && !kb->k->args.data[e->buf].written;
  }
  if (e->kind != LX_CONST && e->kind != LX_ARG && e->kind != LX_UNARY && e->kind != LX_BINARY &&
      e->kind != LX_CAST && e->kind != LX_SELECT)
    return false;
  return !lx_raises_here(e) && row_uniform(kb, R, e->a) && row_uniform(kb, R, e->b) && row_uniform(kb, R, e->c);
}

// e with each float x / sqrt(s), s the same over the row, as x * (1 / sqrt(s)), the
// reciprocal a let of R->lets (one per distinct s); nodes copied where they change (a
// node may be shared with statements before the pass).
static LExpr *recip_expr(KernelBuilder *kb, Recips *R, LExpr *e) {
  if (!e || e->kind == LX_LOAD)
    return e;
  LExpr *a = recip_expr(kb, R, e->a), *b = recip_expr(kb, R, e->b), *c = recip_expr(kb, R, e->c);
  if (a != e->a || b != e->b || c != e->c) {
    LExpr *n = arena_alloc(&kb->cx->arena, sizeof *n);
    *n = *e;
    n->a = a, n->b = b, n->c = c;
    e = n;
  }
  const LExpr *q = e->b;
  if (e->kind != LX_BINARY || e->op != OP_DIV || (e->dt != DT_F32 && e->dt != DT_F64) || q->kind != LX_UNARY ||
      q->op != OP_SQRT || !row_uniform(kb, R, q))
    return e;
  int i = 0;
  while (i < R->n && !lx_same(R->q[i], q))
    i++;
  if (i == R->n) {
    if (R->n == 8)
      return e;
    R->q[R->n] = q;
    R->local[R->n++] = kb_let_local(kb, &R->lets, kb_binary(kb, OP_DIV, e->dt, kb_fconst(kb, e->dt, 1), e->b));
  }
  return kb_binary(kb, OP_MUL, e->dt, e->a, kb_local_ref(kb, R->local[i]));
}

static void recip_stmts(KernelBuilder *kb, Recips *R, LStmtList *l) {
  for (int i = 0; i < l->len; i++) {
    LStmt *st = l->data[i];
    st->val = recip_expr(kb, R, st->val);
    st->cond = recip_expr(kb, R, st->cond);
    recip_stmts(kb, R, &st->body);
  }
}

// The last pass (r->body's statements from `at` on, locals and vars from nloc and nvar
// on) on a CPU
// multiplies by the reciprocal of a square root the same over the row where it divides
// by that root: (x - mean) / sqrt(var + eps) as x * rstd with rstd = 1 / sqrt(var + eps)
// once a row, as PyTorch's layer_norm kernel (and F.layer_norm here: its rsqrt) does,
// so both give the same bits; the division per element made the hand-written layer norm
// [32, 128, 512] 1.07-1.13x slower on C, 1.07-1.18x on LLVM (interleave.py). The result
// moves by an ulp or so (x * RN(1 / q) against RN(x / q)); 1 / sqrt(s) is never
// subnormal, and where it is infinite or 0 (s = +-0 or inf) both forms give the same
// infinities, zeros and NaNs.
static void recip_sqrt(KernelBuilder *kb, Row *r, int at, int nloc, int nvar) {
  if (!kb->cpu || kb->naive)
    return;
  Recips R = {.nloc = nloc, .nvar = nvar};
  LStmtList pass = {r->body->data + at, r->body->len - at, r->body->len - at};
  recip_stmts(kb, &R, &pass);
  for (int i = 0; i < R.lets.len; i++) {  // the lets before the pass
    kb_push(kb, r->body, NULL);
    memmove(r->body->data + at + 1, r->body->data + at, sizeof *r->body->data * (size_t)(r->body->len - at - 1));
    r->body->data[at++] = R.lets.data[i];
  }
}

// ---- a costly input kept in a row buffer ----
// An inline producer with a transcendental op (gelu, silu, tanh, exp) that the row reads in
// more than one pass (layer_norm's moments and last pass, softmax's max and sum, rms_norm's
// sum of squares and its product) was computed once per pass, and its selects and bit
// casts kept the moments pass in scalar lanes (LayerNorm of GELU [1000, 384]: 0.71 ms,
// GELU alone and the LayerNorm of a ReLU 0.085 + 0.12). Instead one pass writes its
// values to a row of per-thread scratch (an elementwise loop, which vectorizes), and
// every reader on the row loads them (LV_ROWBUF): the passes then read plain loads, which
// ir/sched.c's vector lanes take (this Xeon, A/B: LayerNorm of GELU 5.8x faster on LLVM,
// 4.3x on C, ~0.13 ms, no slower than GELU and LayerNorm(ReLU) apart; of tanh-GELU 4.7x,
// 9.8x; softmax of GELU 1.8x, 3.6x). Rows of at most ROW_CACHE_BYTES (in L2 on every CPU
// target); the values are the producer's, bit for bit, and so the results.
enum { ROW_CACHE_BYTES = 64 * 1024, ROW_CACHE_DEPTH = 8, ROW_CACHE_MAX = 4 };

// Whether inline node n's expression (n and the inline nodes under it) has a transcendental op.
static bool costly(const Node *n, int depth) {
  if (op_is_transcendental(n->op))
    return true;
  for (int i = 0; i < n->nsrc && depth < ROW_CACHE_DEPTH; i++) {
    const Value *s = n->srcs[i];
    if (!s->is_scalar && s->buf && s->buf->kind == BUF_KERNEL && s->buf->producer->mode == NM_INLINE &&
        costly(s->buf->producer, depth + 1))
      return true;
  }
  return false;
}

// How many times the kernel's nodes read buffer b, directly or through the inline nodes
// they read (a softmax reads its input twice), counting up to 2; *budget bounds the walk.
static int reads_in(const Node *n, const Buffer *b, int depth, int *budget) {
  int k = 0;
  for (int i = 0; i < n->nsrc && k < 2 && --*budget > 0; i++) {
    const Value *s = n->srcs[i];
    if (s->is_scalar || !s->buf)
      continue;
    if (s->buf == b)
      k += n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX ? 2 : 1;
    else if (s->buf->kind == BUF_KERNEL && s->buf->producer->mode == NM_INLINE && depth < ROW_CACHE_DEPTH)
      k += reads_in(s->buf->producer, b, depth + 1, budget);
  }
  return k;
}

static int reads_of(const NodeList *ns, const Buffer *b) {
  int k = 0, budget = 4096;
  for (int j = 0; j < ns->len && k < 2; j++)
    k += reads_in(ns->data[j], b, 0, &budget);
  return k;
}

// The inline node whose values the row keeps: value x's, or one under it, the first read
// twice by the kernel; NULL if none.
static const Node *cache_pick(const KernelBuilder *kb, const Row *r, const Value *x, int depth) {
  if (x->is_scalar || !x->buf || x->buf->kind != BUF_KERNEL || depth > ROW_CACHE_DEPTH)
    return NULL;
  const Node *p = x->buf->producer;
  if (p->mode != NM_INLINE || !op_is_elementwise(p->op) || kb->lv[p->id].kind != LV_NONE ||
      (p->out->dtype != DT_F32 && p->out->dtype != DT_F64) || !kb_same_shape(&p->out->view, r->xv) ||
      !view_same_elems(x->view, p->out->view) || !costly(p, 0))
    return NULL;
  if (reads_of(r->ns, x->buf) >= 2)
    return p;
  for (int i = 0; i < p->nsrc; i++) {
    const Node *q = cache_pick(kb, r, p->srcs[i], depth + 1);
    if (q)
      return q;
  }
  return NULL;
}

// Keeps the costly inputs of the row nodes in row buffers (above): one pass fills them,
// all in one scratch buffer (a kernel has one of a dtype: ir/share.c), and their
// LocalVals (Row.cached) load them until row_body ends.
static void row_cache(KernelBuilder *kb, Row *r) {
  r->ncached = 0;
  if (!kb->cpu || kb->naive || r->strip || row_parts(kb, r) != 1 || row_steps(kb, r) != 1 || r->n < 2)
    return;
  for (int j = 0; j < r->ns->len && op_is_row(r->ns->data[j]->op) && r->ncached < ROW_CACHE_MAX; j++) {
    const Node *p = cache_pick(kb, r, r->ns->data[j]->srcs[0], 0);
    bool again = false;
    for (int i = 0; i < r->ncached; i++)
      again |= r->cached[i] == p;
    if (p && !again && p->out->dtype == (r->ncached ? r->cached[0]->out->dtype : p->out->dtype) &&
        (r->ncached + 1) * r->n * dtype_size(p->out->dtype) <= ROW_CACHE_BYTES)
      r->cached[r->ncached++] = p;
  }
  if (!r->ncached)
    return;
  // the kernel's row buffer: built once per piece of a cat (build_row_cut), its rows share one
  DType dt = r->cached[0]->out->dtype;
  const char *name = arena_printf(&kb->cx->arena, "%s.row", kb->k->name);
  int tbuf = -1;
  for (int b = 0; b < kb->p->bufs.len; b++) {
    LBuf *lb = &kb->p->bufs.data[b];
    if (lb->kind == LB_TEMP && lb->scratch && lb->dtype == dt && !strcmp(lb->name, name))
      tbuf = b;
  }
  if (tbuf < 0) {
    tbuf = kb_new_temp(kb, dt, r->ncached * r->n, "row");
    kb->p->bufs.data[tbuf].scratch = true;
  }
  LBuf *lb = &kb->p->bufs.data[tbuf];
  lb->numel = lb->numel < r->ncached * r->n ? r->ncached * r->n : lb->numel;
  int arg = kb_arg(kb, tbuf, true, true);
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = row_pass(kb, r, idx, 0);
  for (int i = 0; i < r->ncached; i++) {  // (each computed in full: one may read another at other indices)
    LIndex at = row_position(kb, r->xv, r->mask, idx);
    at.base += i * r->n;
    kb_push(kb, in, kb_store_stmt(kb, arg, at, kb_value(kb, r->cached[i]->out, idx)));
  }
  for (int i = 0; i < r->ncached; i++) {
    LocalVal *lv = &kb->lv[r->cached[i]->id];
    lv->kind = LV_ROWBUF;
    lv->local = arg;
    lv->base = i * r->n;
    lv->nat = r->xv->ndim;
    int64_t mul = 1;
    for (int d = r->xv->ndim - 1; d >= 0; d--) {
      bool red = r->mask >> d & 1;
      lv->at[d] = red ? kb_ix_const(0) : r->xidx[d];
      lv->fixed[d] = !red;
      lv->rstride[d] = red ? mul : 0;
      mul *= red ? r->xv->shape[d] : 1;
    }
  }
  r->pass = NULL;
}

// The row buffers' values recomputed again after the row (row_cache).
static void row_uncache(KernelBuilder *kb, Row *r) {
  for (int i = 0; i < r->ncached; i++)
    kb->lv[r->cached[i]->id].kind = LV_NONE;
  r->ncached = 0;
}

// The row nodes and the last pass of the rows at r->xidx, into r->body.
static void row_body(KernelBuilder *kb, const NodeList *ns, Row *r) {
  r->ns = ns;
  r->mom = NULL;
  r->mom_ss = -1;
  r->narg = 0;
  for (int j = 0; j < ns->len; j++)
    r->nsoftmax += ns->data[j]->op == OP_SOFTMAX || ns->data[j]->op == OP_LOG_SOFTMAX;
  row_cache(kb, r);
  int i = 0;
  for (; i < ns->len && op_is_row(ns->data[i]->op); i++) {
    const Node *n = ns->data[i];
    TD_ASSERT(kb_same_shape(&n->srcs[0]->view, r->xv) && n->attr.dims == r->mask);
    row_node(kb, r, n);
    if (r->ndone < 64)
      r->done[r->ndone++] = n;
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
    bool full_shape = j >= i && kb_same_shape(&n->out->view, r->xv);
    if (softmax || (full_shape && !reduced_index(r->xv, r->mask, r->xidx, &n->out->view, idx))) {
      vec_push(&kb->cx->arena, &full, n);
      continue;
    }
    TD_ASSERT(reduced_index(r->xv, r->mask, r->xidx, &n->out->view, idx));
    kb_store_node(kb, r->body, n, idx, j < i ? kb_cast(kb, kb_local_ref(kb, kb->lv[n->id].local), n->out->dtype)
                                             : kb_node_expr(kb, n, idx));
  }
  if (full.len == 0) {
    row_uncache(kb, r);
    return;
  }
  int at = r->body->len, nloc = kb->k->locals.len, nvar = kb->k->nvars;
  for (int64_t e = 0; e < row_parts(kb, r); e++) {
    LIndex idx[TD_MAX_DIMS];
    LStmtList *in = row_pass(kb, r, idx, e);
    for (int j = 0; j < full.len; j++) {
      const Node *n = full.data[j];
      TD_ASSERT(kb_same_shape(&n->out->view, r->xv));
      bool softmax = n->op == OP_SOFTMAX || n->op == OP_LOG_SOFTMAX;
      bool kept = false;
      for (int k = 0; k < r->nkept; k++)
        kept |= r->kept[k] == n;
      LExpr *v = n == r->tnode ? kb_binary(kb, OP_MUL, dtype_compute(n->out->dtype), kb_local_ref(kb, r->terms[e]),
                                           kb_local_ref(kb, kb->lv[n->id].sum))  // its term kept, times 1 / sum
                 : kept        ? kb_binary(kb, OP_MUL, n->out->dtype, kept_term(kb, n, idx),
                                           kb_local_ref(kb, kb->lv[n->id].sum))  // its term in its result
                 : softmax     ? kb_softmax_value(kb, n, idx)
                               : kb_node_expr(kb, n, idx);
      kb_store_node(kb, in, n, idx, v);
    }
  }
  recip_sqrt(kb, r, at, nloc, nvar);
  row_uncache(kb, r);
  // LKernel.softmax: the last row node was a softmax, and the last pass, one store,
  // follows its reciprocal directly
  const LStmtList *b = r->body;
  if (r->sm.sum_loop && r->pass && full.len == 1 && b->len >= 3 && b->data[b->len - 3] == r->sm.sum_loop &&
      b->data[b->len - 2] == r->sm.recip && b->data[b->len - 1] == r->pass) {
    r->sm.final_loop = r->pass;
    kb->k->softmax = arena_alloc(&kb->cx->arena, sizeof *kb->k->softmax);
    *kb->k->softmax = r->sm;
  }
}

// ---- BLOCK: short rows through a transposed block in scratch ----
// An unrolled row reads its elements n apart from the next row's: the loop over rows
// vectorizes only with strided loads, which LLVM turns into shuffles but gcc into
// scalar loads and inserts (or, for softmax, a 2-row SLP body: ~6x slower than rows in
// lanes). Short-row kernels of a CPU program therefore run the rows in blocks of W:
//   for each block of W rows [parallel]:
//     for p < W: for each strided load s: T[s W + p] = its buffer at row p     (transpose in)
//     for r < W: the rows' passes, as built, their strided loads and stores on T[s W + r]
//     for q < W: for each strided store s: its buffer at row q = T[s W + q]   (transpose out)
//   the last rows (fewer than W) as before
// so every loop over rows reads and writes W consecutive elements. Only kernels with a
// result of the rows' shape (softmax, log_softmax, epilogues) take it: kernels storing
// only reduced results ran 15-45% slower in blocks (sums, argmax over 8: their strided
// loads alone vectorize well enough), and so did a softmax whose row is one vector
// register (gcc and LLVM then keep the row in one vector: f32[N, 16] on AVX-512, 0.83x on
// C); where gcc builds vectors of 2 rows instead (rows of 8, 12 f32) blocks are 5-12x
// faster on C, and LLVM's time moves by 0.88-1.19x (chrt -f, against the rows in
// place). T is per-thread scratch of one dtype (the strided accesses' own, all the
// same: else no blocks); the passes compute the same terms in the same order
// (bit-identical results). Rows under a kept innermost dim shorter than 2 W (a layer
// norm over 8 of a [N, 3, 8]) keep the old form. A load or
// store is "strided" when its index moves by 2 or more elements a row (those moving by
// 0 or 1 vectorize as they are, dynamic indices stay where they are).
typedef struct BSlot {
  int arg;     // the kernel's arg
  LIndex key;  // its index but the row var's term
  int64_t coef;
  bool store;
} BSlot;

typedef struct Block {
  KernelBuilder *kb;
  int rv;     // the loop var of the rows in a block
  DType dt;   // T's dtype (DT_COUNT until the first strided access)
  bool ok;
  VEC(BSlot) slots;
  uint64_t loaded[4];  // args loaded anywhere (bits; arg < 256)
} Block;

static DType arg_dtype(const KernelBuilder *kb, int arg) { return kb->p->bufs.data[kb->k->args.data[arg].buf].dtype; }

// The slot of an access (arg at idx, moving coef a row), added if new; -1 if not strided.
static int block_slot(Block *B, int arg, const LIndex *idx, bool store) {
  int64_t coef = kb_ix_coef(idx, B->rv);
  if (idx->dyn || kb_iabs(coef) < 2)
    return -1;
  if (B->dt == DT_COUNT)
    B->dt = arg_dtype(B->kb, arg);
  if (arg_dtype(B->kb, arg) != B->dt) {
    B->ok = false;
    return -1;
  }
  LIndex key = kb_ix_const(idx->base);
  for (int t = 0; t < idx->nterms; t++)
    if (idx->var[t] != B->rv) {
      LIndex x = kb_ix_var(idx->var[t]);
      kb_ix_addmul(B->kb, &key, &x, idx->coef[t]);
    }
  for (int s = 0; s < B->slots.len; s++) {
    const BSlot *o = &B->slots.data[s];
    if (o->arg == arg && o->coef == coef && o->store == store && kb_ix_equal(&o->key, &key))
      return s;
  }
  vec_push(&B->kb->cx->arena, &B->slots, ((BSlot){arg, key, coef, store}));
  return B->slots.len - 1;
}

// T's element of slot s at row var v.
static LIndex block_at(int64_t W, int s, int v) {
  LIndex i = kb_ix_var(v);
  i.base = (int64_t)s * W;
  return i;
}

// Collects (sarg < 0) or rewrites onto arg sarg the strided loads of e.
static void block_expr(Block *B, LExpr *e, int sarg, int64_t W) {
  if (!e || !B->ok)
    return;
  if (e->kind == LX_LOAD) {
    if (e->buf < 256)
      B->loaded[e->buf / 64] |= 1ull << (e->buf % 64);
    else
      B->ok = false;
    int s = e->buf == sarg ? -1 : block_slot(B, e->buf, &e->idx, false);
    if (s >= 0 && sarg >= 0) {
      e->buf = sarg;
      e->idx = block_at(W, s, B->rv);
    }
    block_expr(B, e->idx.dyn, sarg, W);
  }
  block_expr(B, e->a, sarg, W);
  block_expr(B, e->b, sarg, W);
  block_expr(B, e->c, sarg, W);
}

static void block_stmts(Block *B, LStmtList *l, int sarg, int64_t W) {
  for (int i = 0; i < l->len && B->ok; i++) {
    LStmt *s = l->data[i];
    switch (s->kind) {
    case LS_STORE: {
      block_expr(B, s->val, sarg, W);
      int k = s->buf == sarg ? -1 : block_slot(B, s->buf, &s->idx, true);
      if (k >= 0 && sarg >= 0) {
        s->buf = sarg;
        s->idx = block_at(W, k, B->rv);
      }
      break;
    }
    case LS_LET: case LS_SET: block_expr(B, s->val, sarg, W); break;
    case LS_IF:
      block_expr(B, s->cond, sarg, W);
      block_stmts(B, &s->body, sarg, W);
      break;
    default: B->ok = false; break;  // loops, calls: not a short row's body
    }
  }
}

// Rewrites the block's rows (loop `rows`, of W iterations, in `into`) as the comment
// above says: the transposes pushed around it. False (nothing changed) when there is
// no strided access, or they are of several dtypes, or a stored buffer is also read.
static bool block_transpose(KernelBuilder *kb, LStmtList *into, LStmt *rows, int64_t W) {
  Block B = {.kb = kb, .rv = rows->var, .dt = DT_COUNT, .ok = true};
  block_stmts(&B, &rows->body, -1, W);
  bool stores = false;
  for (int s = 0; s < B.slots.len && B.ok; s++) {
    int a = B.slots.data[s].arg;
    stores |= B.slots.data[s].store;
    if (B.slots.data[s].store && (B.loaded[a / 64] >> (a % 64) & 1))
      return false;
  }
  if (!B.ok || !stores)
    return false;
  int tbuf = kb_new_temp(kb, B.dt, (int64_t)B.slots.len * W, "rows");
  kb->p->bufs.data[tbuf].scratch = true;
  int sarg = kb_arg(kb, tbuf, true, true);
  block_stmts(&B, &rows->body, sarg, W);
  TD_ASSERT(B.ok);
  int pv = kb_new_var(kb), qv = kb_new_var(kb);
  LStmt *in = kb_loop(kb, pv, W), *out = kb_loop(kb, qv, W);
  for (int s = 0; s < B.slots.len; s++) {
    const BSlot *o = &B.slots.data[s];
    LStmt *l = o->store ? out : in;
    int v = o->store ? qv : pv;
    LIndex at = o->key, r = kb_ix_var(v);
    kb_ix_addmul(kb, &at, &r, o->coef);
    LExpr *x = kb_expr(kb, LX_LOAD, B.dt);
    x->buf = o->store ? sarg : o->arg;
    x->idx = o->store ? block_at(W, s, v) : at;
    kb_push(kb, &l->body, kb_store_stmt(kb, o->store ? o->arg : sarg, o->store ? at : block_at(W, s, v), x));
  }
  TD_ASSERT(into->len > 0 && into->data[into->len - 1] == rows);
  into->len--;
  if (in->body.len)
    kb_push(kb, into, in);
  kb_push(kb, into, rows);
  if (out->body.len)
    kb_push(kb, into, out);
  return true;
}

// The block size of rows whose compute dtype is cd: a vector of them (at least 8).
static int64_t block_rows(const KernelBuilder *kb, DType cd) {
  int64_t w = kb->cpu->vec_bytes / dtype_size(cd);
  return w < 8 ? 8 : w;
}

// ---- STRIP: long rows whose elements stride, in strips of rows in vector lanes ----
// A row kernel reducing a dim that is not the input's innermost (x.mean(1) of an NCHW x,
// the channels-first layer norm's mean, variance and normalization, softmax(x, 1)),
// run row by row, reads one element per cache line in every pass: scalar code at a
// few percent of bandwidth. The kept dims after the last reduced one (H, W: contiguous
// in every access, checked) are merged into one index of P rows, cut into strips of S
// rows (four vectors) that are the innermost loop of every pass:
//   for the outer kept dims, for each strip [parallel]:
//     for r < S: T[k S + r] = a row-level let or set k, as built
//     for c in the reduced dims: for r < S: the pass's body at row r (its accumulators T[k S + r])
//     for r < S: stores of reduced results; the last pass's loops again with r innermost
//   the last P % S rows likewise, a strip of their own
// The row-level locals live in T, per-thread scratch of S elements each (L1); a strip's
// input (the reduced extent by S) stays in cache for the passes after the first, so
// the kernel reads it from memory once. The body is built once per row, as build_row
// builds it, and each pass keeps its terms in the same order (bit-identical results);
// a row's one-pass moments are not taken (two passes over the cached strip). A body
// with something else (an argmax's if, a short row's unrolled pass) keeps build_row.
static void probe_strides(const LExpr *e, int nd, int64_t *stride);
static bool reads_kernel_row(const KernelBuilder *kb, const Value *v);

enum { STRIP_MAX_IDS = 512 };  // the template locals and vars a strip maps (a kernel with more keeps build_row)

typedef struct Strip {
  KernelBuilder *kb;
  int ninner;                 // the merged kept dims
  int ivar[TD_MAX_DIMS];      // their template vars, outermost first
  int64_t istride[TD_MAX_DIMS];  // their strides in the merged index
  int rowlocal[STRIP_MAX_IDS];  // template local -> T's slot, -1: not a row-level local
  int nslots;
  DType dt;                   // T's dtype (DT_COUNT: none yet)
  bool ok;
  // emission
  int sarg;                   // T's arg
  int64_t S;                  // rows in this strip
  LIndex base;                // the strip's first merged index
  int rv;                     // the innermost loop's var (r)
  int vmap[STRIP_MAX_IDS], lmap[STRIP_MAX_IDS];  // template vars and inner locals -> this copy's (-1: same)
} Strip;

// Checks the template's statements; collects its row-level locals (top) and their dtype.
static void strip_check(Strip *st, const LStmtList *l, bool top) {
  for (int i = 0; i < l->len && st->ok; i++) {
    const LStmt *s = l->data[i];
    switch (s->kind) {
    case LS_LET: case LS_SET:
      if (s->local >= STRIP_MAX_IDS) {
        st->ok = false;
      } else if (top && s->kind == LS_LET) {
        DType dt = st->kb->k->locals.data[s->local];
        if (st->dt == DT_COUNT)
          st->dt = dt;
        st->ok &= dt == st->dt;
        st->rowlocal[s->local] = st->nslots++;
      }
      break;
    case LS_STORE: break;
    case LS_LOOP:
      st->ok &= !top || s->extent > 0;
      strip_check(st, &s->body, false);
      break;
    default: st->ok = false; break;
    }
  }
}

static LExpr *strip_expr(Strip *st, const LExpr *e);

// idx with the template's vars renamed and its merged dims' terms replaced by
// coef * (base + r); false when they do not walk the merged dims contiguously.
static bool strip_index(Strip *st, const LIndex *x, LIndex *out) {
  KernelBuilder *kb = st->kb;
  LIndex o = kb_ix_const(x->base);
  int64_t c[TD_MAX_DIMS] = {0};
  for (int t = 0; t < x->nterms; t++) {
    int d = 0;
    while (d < st->ninner && st->ivar[d] != x->var[t])
      d++;
    if (d < st->ninner) {
      c[d] += x->coef[t];
      continue;
    }
    int v = x->var[t] < STRIP_MAX_IDS && st->vmap[x->var[t]] >= 0 ? st->vmap[x->var[t]] : x->var[t];
    LIndex vi = kb_ix_var(v);
    kb_ix_addmul(kb, &o, &vi, x->coef[t]);
  }
  int64_t unit = c[st->ninner - 1];
  for (int d = 0; d < st->ninner; d++)
    if (c[d] != unit * st->istride[d])
      return false;
  if (unit) {
    LIndex r = kb_ix_var(st->rv);
    kb_ix_addmul(kb, &o, &st->base, unit);
    kb_ix_addmul(kb, &o, &r, unit);
  }
  o.dyn = x->dyn ? strip_expr(st, x->dyn) : NULL;
  *out = o;
  return true;
}

static LIndex slot_at(Strip *st, int slot) {
  LIndex i = kb_ix_var(st->rv);
  i.base = (int64_t)slot * st->S;
  return i;
}

static LExpr *strip_expr(Strip *st, const LExpr *e) {
  if (!e || !st->ok)
    return NULL;
  if (e->kind == LX_LOCAL && e->local < STRIP_MAX_IDS && st->rowlocal[e->local] >= 0) {
    LExpr *x = kb_expr(st->kb, LX_LOAD, st->dt);
    x->buf = st->sarg;
    x->idx = slot_at(st, st->rowlocal[e->local]);
    return x;
  }
  LExpr *c = kb_expr(st->kb, e->kind, e->dt);
  *c = *e;
  if (e->kind == LX_VAR) {
    for (int d = 0; d < st->ninner; d++)
      st->ok &= e->var != st->ivar[d];
    if (e->var < STRIP_MAX_IDS && st->vmap[e->var] >= 0)
      c->var = st->vmap[e->var];
  }
  if (e->kind == LX_LOCAL && e->local < STRIP_MAX_IDS && st->lmap[e->local] >= 0)
    c->local = st->lmap[e->local];
  if (e->kind == LX_LOAD && !strip_index(st, &e->idx, &c->idx))
    st->ok = false;
  c->a = strip_expr(st, e->a);
  c->b = strip_expr(st, e->b);
  c->c = strip_expr(st, e->c);
  return c;
}

// A copy of the statement at row r (inside the loop over r).
static LStmt *strip_stmt(Strip *st, const LStmt *s) {
  KernelBuilder *kb = st->kb;
  switch (s->kind) {
  case LS_LET: case LS_SET: {
    LExpr *v = strip_expr(st, s->val);
    if (s->local < STRIP_MAX_IDS && st->rowlocal[s->local] >= 0)
      return kb_store_stmt(kb, st->sarg, slot_at(st, st->rowlocal[s->local]), v);
    int l = s->local;
    if (s->kind == LS_LET) {
      l = st->lmap[s->local] = kb_new_local(kb, kb->k->locals.data[s->local]);
    } else if (st->lmap[s->local] >= 0) {
      l = st->lmap[s->local];
    }
    return s->kind == LS_LET ? kb_let(kb, l, v) : kb_set(kb, l, v);
  }
  case LS_STORE: {
    LIndex i;
    if (!strip_index(st, &s->idx, &i)) {
      st->ok = false;
      return kb_store_stmt(kb, s->buf, s->idx, s->val);
    }
    return kb_store_stmt(kb, s->buf, i, strip_expr(st, s->val));
  }
  case LS_LOOP: {
    LStmt *c = kb_loop(kb, kb_new_var(kb), s->extent);
    if (s->var < STRIP_MAX_IDS)
      st->vmap[s->var] = c->var;
    for (int i = 0; i < s->body.len; i++)
      kb_push(kb, &c->body, strip_stmt(st, s->body.data[i]));
    return c;
  }
  default: td_unreachable();
  }
}

// The loop over r < S around stmts, pushed into `into`.
static LStmtList *strip_rows(Strip *st, LStmtList *into) {
  LStmt *rows = kb_loop(st->kb, st->rv = kb_new_var(st->kb), st->S);
  kb_push(st->kb, into, rows);
  return &rows->body;
}

// The template's statements `l` for the strip: every pass's loops outside, rows inside.
static void strip_list(Strip *st, const LStmtList *l, LStmtList *into) {
  LStmtList *rows = NULL;
  for (int i = 0; i < l->len && st->ok; i++) {
    const LStmt *s = l->data[i];
    if (s->kind != LS_LOOP) {  // runs of row-level statements share one loop over rows
      if (!rows)
        rows = strip_rows(st, into);
      kb_push(st->kb, rows, strip_stmt(st, s));
      continue;
    }
    rows = NULL;
    LStmt *c = kb_loop(st->kb, kb_new_var(st->kb), s->extent);
    if (s->var < STRIP_MAX_IDS)
      st->vmap[s->var] = c->var;
    kb_push(st->kb, into, c);
    if (s->body.len == 1 && s->body.data[0]->kind == LS_LOOP) {
      strip_list(st, &s->body, &c->body);
      continue;
    }
    LStmtList *in = strip_rows(st, &c->body);
    for (int j = 0; j < s->body.len; j++)
      kb_push(st->kb, in, strip_stmt(st, s->body.data[j]));
  }
}

// The STRIP schedule of the kernel, or false (nothing pushed) where it does not apply.
static bool build_strip(KernelBuilder *kb, const NodeList *ns, Row *r) {
  const View *xv = r->xv;
  if (!kb->cpu || kb->naive || row_steps(kb, r) != 1 || kb->k->locals.len > 0)
    return false;
  int last_red = -1;
  for (int d = 0; d < xv->ndim; d++)
    if (r->mask >> d & 1 && xv->shape[d] > 1)
      last_red = d;
  Strip st = {.kb = kb, .dt = DT_COUNT, .ok = true};
  int64_t P = 1;
  for (int d = last_red + 1; d < xv->ndim; d++)
    if (xv->shape[d] > 1)
      P *= xv->shape[d];
  int64_t lanes = kb->cpu->vec_bytes / dtype_size(dtype_compute(ns->data[0]->out->dtype));
  if (last_red < 0 || P < (lanes < 8 ? 8 : lanes))
    return false;
  // the merged dims' strides, and the unit stride of the innermost in the inputs
  LIndex pidx[TD_MAX_DIMS];
  for (int d = 0; d < xv->ndim; d++)
    pidx[d] = xv->shape[d] == 1 ? kb_ix_const(0) : kb_ix_var(PROBE_VAR + d);
  int64_t stride[TD_MAX_DIMS] = {0};
  for (int i = 0; i < ns->len && op_is_row(ns->data[i]->op); i++)
    if (!reads_kernel_row(kb, ns->data[i]->srcs[0]))  // (a row node's local is not there yet)
      probe_strides(kb_value(kb, ns->data[i]->srcs[0], pidx), xv->ndim, stride);
  if (stride[xv->ndim - 1] != 1 && xv->shape[xv->ndim - 1] > 1)
    return false;
  // the template: outer kept dims looped, merged ones bare vars, reduced ones 0
  LStmtList tmpl = {0};
  Row rt = *r;
  rt.body = &tmpl;
  rt.strip = true;
  int odims[TD_MAX_DIMS], no = 0;
  int64_t s = 1;
  for (int d = xv->ndim - 1; d > last_red; d--) {
    if (xv->shape[d] == 1) {
      rt.xidx[d] = kb_ix_const(0);
      continue;
    }
    st.ninner++;
    rt.xidx[d] = kb_ix_var(kb_new_var(kb));
  }
  for (int d = last_red + 1, k = 0; d < xv->ndim; d++)
    if (xv->shape[d] > 1)
      st.ivar[k++] = rt.xidx[d].var[0];
  for (int d = xv->ndim - 1, k = st.ninner - 1; d > last_red; d--)
    if (xv->shape[d] > 1)
      st.istride[k--] = s, s *= xv->shape[d];
  for (int d = 0; d <= last_red; d++) {
    rt.xidx[d] = kb_ix_const(0);
    if (!(r->mask >> d & 1) && xv->shape[d] > 1)
      odims[no++] = d;
  }
  int64_t S = 4 * lanes, nstrip = P / S, oshape[TD_MAX_DIMS + 1];
  LIndex oidx[TD_MAX_DIMS + 1];
  for (int o = 0; o < no; o++)
    oshape[o] = xv->shape[odims[o]];
  // the template's outer vars: bare too, renamed to the loops' below
  int ovar[TD_MAX_DIMS];
  for (int o = 0; o < no; o++)
    rt.xidx[odims[o]] = kb_ix_var(ovar[o] = kb_new_var(kb));
  row_body(kb, ns, &rt);
  kb->k->softmax = NULL;  // (its loops are the template's; ir/sched.c's keep_terms is skipped)
  memset(st.rowlocal, -1, sizeof st.rowlocal);
  strip_check(&st, &tmpl, true);
  if (!st.ok || kb->k->nvars >= STRIP_MAX_IDS || st.nslots == 0) {
    kb->k->locals.len = 0;
    return false;
  }
  int tbuf = kb_new_temp(kb, st.dt, st.nslots * S, "strip");
  kb->p->bufs.data[tbuf].scratch = true;
  st.sarg = kb_arg(kb, tbuf, true, true);
  int dims[TD_MAX_DIMS + 1];
  for (int o = 0; o < no; o++)
    dims[o] = o;
  if (nstrip > 1)
    oshape[no] = nstrip, dims[no] = no;
  int nl = no + (nstrip > 1);
  LStmtList *outer = &kb->k->body;
  int keep = outer->len;
  // the outer kept dims, then the strips (parallel where their iterations reach enough)
  LStmtList *in = outer;
  if (nl > 0 && no > 0)
    in = kb_outer_loops(kb, outer, no, dims, oshape, oidx, view_numel(*xv) >= PARALLEL_WORK && nstrip <= 1);
  memset(st.vmap, -1, sizeof st.vmap);
  for (int o = 0; o < no; o++)
    st.vmap[ovar[o]] = oidx[o].var[0];
  for (int part = 0; part < 2 && st.ok; part++) {
    int64_t n = part == 0 ? nstrip : 1;
    st.S = part == 0 ? S : P % S;
    if (n == 0 || st.S == 0)
      continue;
    LIndex at;
    LStmtList *body = kb_step_loop(kb, in, n, kb_ix_const(part == 0 ? 0 : nstrip * S), S,
                                   part == 0 && view_numel(*xv) >= PARALLEL_WORK, &at);
    st.base = at;
    memset(st.lmap, -1, sizeof st.lmap);
    strip_list(&st, &tmpl, body);
  }
  if (!st.ok) {  // (the temp stays, unused)
    outer->len = keep;
    kb->k->locals.len = 0;
    return false;
  }
  return true;
}

enum { COL_JOIN_NODES = 32 };  // a kernel of more nodes is not probed (no cuts, no dims joined)

// Where the inline cats the kernel's nodes read change pieces along the dims of its
// input xv (ir/scalar.c's cat_expr records them while kb->cuts is set; ir/ew.c probes
// its kernels so): sorted, distinct, inside each dim. False where there are none, or a
// cat's index is no single dim's (it reads through selects). The row nodes' inputs and
// the epilogues are probed at probe variables, the row results locals there.
static bool row_cuts(KernelBuilder *kb, const NodeList *ns, const View *xv, uint32_t mask, KbCuts *c) {
  memset(c, 0, sizeof *c);
  if (!kb->cpu || kb->naive || ns->len > COL_JOIN_NODES)
    return false;
  LIndex pidx[TD_MAX_DIMS], oi[TD_MAX_DIMS];
  for (int d = 0; d < xv->ndim; d++)
    pidx[d] = xv->shape[d] == 1 ? kb_ix_const(0) : kb_ix_var(PROBE_VAR + d);
  int nargs = kb->k->args.len, nerr = kb->k->errors.len, nrow = 0;
  LocalVal saved[COL_JOIN_NODES];
  kb->cuts = c;
  for (; nrow < ns->len && op_is_row(ns->data[nrow]->op); nrow++) {
    const Node *n = ns->data[nrow];
    saved[nrow] = kb->lv[n->id];
    if (!reads_kernel_row(kb, n->srcs[0]))
      kb_value(kb, n->srcs[0], pidx);
  }
  int nloc = kb->k->locals.len;  // (the probe's locals, dropped after it)
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    int l = kb_new_local(kb, dtype_compute(n->out->dtype));
    if (!kb_same_shape(&n->out->view, xv)) {
      reduced_local(kb, n, xv, mask, pidx, l);
      continue;
    }
    LocalVal *lv = &kb->lv[n->id];  // a softmax: its max and sum, as row_node leaves them
    lv->kind = LV_SOFTMAX;
    lv->max = lv->sum = l;
    lv->nat = xv->ndim;
    for (int d = 0; d < xv->ndim; d++)
      lv->at[d] = pidx[d], lv->fixed[d] = !(mask >> d & 1);
  }
  for (int i = nrow; i < ns->len; i++) {
    const Node *n = ns->data[i];
    if (kb_same_shape(&n->out->view, xv))
      kb_node_expr(kb, n, pidx);
    else if (reduced_index(xv, mask, pidx, &n->out->view, oi))
      kb_node_expr(kb, n, oi);
  }
  kb->cuts = NULL;
  kb->k->locals.len = nloc;
  for (int i = 0; i < nrow; i++)
    kb->lv[ns->data[i]->id] = saved[i];
  kb->k->args.len = nargs;
  kb->k->errors.len = nerr;
  return kb_cuts_sorted(c, xv);
}

// The rows of a kernel reading an inline cat (cuts): the outer loops once per range of
// the kept dims between its cuts, each pass once per range of the reduced ones (row_pass),
// so that every load reads one piece directly.
static void build_row_cut(KernelBuilder *kb, const NodeList *ns, Row *r, const KbCuts *cuts) {
  int kept[TD_MAX_DIMS], nk = 0, at[TD_MAX_DIMS] = {0};
  int64_t combos = 1;
  for (int d = 0; d < r->xv->ndim; d++)
    if (!(r->mask >> d & 1))
      kept[nk++] = d, combos *= cuts->n[d] + 1;
  r->cuts = cuts;
  for (int64_t k = 0; k < combos; k++) {
    int64_t oshape[TD_MAX_DIMS], from[TD_MAX_DIMS], total = r->n;
    LIndex oidx[TD_MAX_DIMS];
    for (int o = 0; o < nk; o++) {
      oshape[o] = cut_range(cuts, r->xv, kept[o], at[o], &from[o]) - from[o];
      total *= oshape[o];
    }
    r->body = kb_nest(kb, &kb->k->body, nk, oshape, oidx, total >= PARALLEL_WORK, NULL);
    for (int d = 0; d < r->xv->ndim; d++)
      r->xidx[d] = kb_ix_const(0);
    for (int o = 0; o < nk; o++) {
      r->xidx[kept[o]] = oidx[o];
      r->xidx[kept[o]].base += from[o];
    }
    r->ndone = r->nkept = r->nsoftmax = 0;
    r->tnode = NULL;
    memset(&r->sm, 0, sizeof r->sm);
    row_body(kb, ns, r);
    for (int o = nk - 1; o >= 0 && ++at[o] > cuts->n[kept[o]]; o--)  // the next combination
      at[o] = 0;
  }
  kb->k->softmax = NULL;  // (its loops are one nest's of several; ir/sched.c's keep_terms is skipped)
}

// Row by row; cuts: where an inline cat the rows read changes pieces (row_cuts), or NULL.
static void build_row(KernelBuilder *kb, const NodeList *ns, const KbCuts *cuts) {
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
  if (cuts) {
    build_row_cut(kb, ns, &r, cuts);
    return;
  }
  if (build_strip(kb, ns, &r))
    return;
  LIndex oidx[TD_MAX_DIMS];
  int64_t W = row_steps(kb, &r) > 1 ? block_rows(kb, dtype_compute(first->out->dtype)) : 0;
  bool one_vector = first->op == OP_SOFTMAX && W && r.n * dtype_size(dtype_compute(first->out->dtype)) == kb->cpu->vec_bytes;
  if (W && !kb->naive && !one_vector && no > 0 && oshape[no - 1] >= 2 * W) {  // BLOCK, above
    LStmtList *body = &kb->k->body;
    int keep = body->len;
    int64_t R = oshape[no - 1];
    oshape[no - 1] = R / W;
    LStmt *loops[TD_MAX_DIMS];
    int nloops = 0;
    for (int o = 0; o < no; o++)
      nloops += oshape[o] > 1;
    LStmtList *bb = kb_nest(kb, body, no, oshape, oidx, total >= PARALLEL_WORK, loops);
    LStmtList *outer = nloops > 1 ? &loops[nloops - 2]->body : body;
    LStmt *rows = kb_loop(kb, kb_new_var(kb), W);
    kb_push(kb, bb, rows);
    LIndex vb = oidx[no - 1], rv = kb_ix_var(rows->var);
    oidx[no - 1] = kb_ix_const(0);
    kb_ix_addmul(kb, &oidx[no - 1], &vb, W);
    kb_ix_addmul(kb, &oidx[no - 1], &rv, 1);
    Row rb = r;
    rb.body = &rows->body;
    for (int d = 0, o = 0; d < r.xv->ndim; d++)
      rb.xidx[d] = (r.mask >> d & 1) ? kb_ix_const(0) : oidx[o++];
    row_body(kb, ns, &rb);
    if (block_transpose(kb, bb, rows, W)) {
      if (R % W == 0)
        return;
      LIndex tail;
      r.body = kb_step_loop(kb, outer, R % W, kb_ix_const(R / W * W), 1, false, &tail);
      oidx[no - 1] = tail;
      for (int d = 0, o = 0; d < r.xv->ndim; d++)
        r.xidx[d] = (r.mask >> d & 1) ? kb_ix_const(0) : oidx[o++];
      row_body(kb, ns, &r);
      return;
    }
    body->len = keep;  // nothing strided: the rows as they are
    oshape[no - 1] = R;
  }
  r.body = kb_nest(kb, &kb->k->body, no, oshape, oidx, total >= PARALLEL_WORK, NULL);
  for (int d = 0, o = 0; d < r.xv->ndim; d++)
    r.xidx[d] = (r.mask >> d & 1) ? kb_ix_const(0) : oidx[o++];
  row_body(kb, ns, &r);
}

// ============================================================================
// COL: a ROW kernel whose input's unit-stride dim is kept (x.sum(0) of a row-major
// x). Run row by row, its reduction loop would stride through memory; the column
// schedule runs the input's dims in memory order instead, every pass sweeping whole
// rows of partial results held in buffers (a result's own buffer when it is stored in
// the accumulator's dtype, else a temp of the reduced shape):
//   for o in outer kept dims [parallel] {
//     for j in inner kept dims: acc[o, j] = identity
//     for the reduced and inner kept dims, in memory order: acc[o, j] = acc[o, j] op x[..]
//     for j in inner kept dims: out[o, j] = finish(acc[o, j]); epilogues
//   }
// (var/std: a mean pass, a pass dividing it, a pass of squared deviations; argmax:
// the best value in a temp, the position in the result; logsumexp: the max pass, its
// shift, the pass of exp). The reduced dims keep their row-major order among
// themselves, so every output combines the same terms in the same order as build_row:
// bit-identical. With fewer than PARALLEL_MIN_ITERS outer iterations the outermost
// inner kept dim is split into blocks run in parallel (plus a serial tail). Kernels
// whose epilogues need the input's shape (softmax, a row epilogue) or whose row nodes
// read each other keep build_row.
// ============================================================================
typedef struct Col {
  const View *xv;
  uint32_t mask;                 // reduced dims of xv
  int64_t n;                     // elements reduced into each output
  int order[TD_MAX_DIMS], nord;  // xv's dims of size > 1, in loop order
  int nouter;                    // order[0..nouter): kept dims looped outside every pass
  bool join[TD_MAX_DIMS];        // order[p] (kept, inner) is one loop with order[p + 1] (col_join)
  int64_t ostride[TD_MAX_DIMS];  // kept dims: their stride in the contiguous reduced shape
  int bdim;                      // the kept dim split into blocks, -1 if none
  LIndex bbase;                  // this instance's first index of bdim
  int64_t bext;                  // and its extent
  int rdim;                      // SPLIT: the reduced dim split into parts, -1 if none
  LIndex rbase;                  // this part's first index of rdim
  int64_t rext;                  // and its extent
  int64_t rstep;                 // SPLIT: the rows of rdim folded per step (0, 1: one)
  LIndex xidx[TD_MAX_DIMS];      // outer kept dims: their loop vars; other dims 0
  LStmtList *body;               // where this instance's passes go
  int *acc, *aux;                // per row node: its accumulator buffer and a second one (-1: none)
} Col;

static bool reduced(const Col *c, int d) { return c->mask >> d & 1; }

// The extent of the loop at order[p]: its dim's, times those of the dims joined to it.
static int64_t col_extent(const Col *c, int p) {
  int64_t n = c->xv->shape[c->order[p]];
  while (c->join[p])
    n *= c->xv->shape[c->order[++p]];
  return n;
}

// The loops of a pass over order[nouter..]: every dim (all) or the kept ones only; idx
// gets the input index (the reduced dims 0 when not looped).
static LStmtList *col_pass(KernelBuilder *kb, const Col *c, bool all, LIndex *idx) {
  LStmtList *into = c->body;
  memcpy(idx, c->xidx, sizeof(LIndex) * (size_t)c->xv->ndim);
  for (int p = c->nouter; p < c->nord; p++) {
    int d = c->order[p], p0 = p;
    if (reduced(c, d) && !all)
      continue;
    int v = kb_new_var(kb);
    int64_t step = d == c->rdim && c->rstep > 1 ? c->rstep : 1;
    int64_t ext = d == c->bdim ? c->bext : d == c->rdim ? c->rext / step : col_extent(c, p);
    while (c->join[p]) {  // one loop over the joined dims: the last one's index walks them all
      idx[d] = kb_ix_const(0);
      d = c->order[++p];
    }
    LStmt *s = kb_loop(kb, v, ext);
    kb_push(kb, into, s);
    into = &s->body;
    idx[d] = kb_ix_var(v);
    if (step > 1) {  // SPLIT's steps of rstep rows
      LIndex iv = idx[d];
      idx[d] = kb_ix_const(0);
      kb_ix_addmul(kb, &idx[d], &iv, step);
    }
    if (c->order[p0] == c->bdim)
      kb_ix_addmul(kb, &idx[d], &c->bbase, 1);
    if (d == c->rdim)
      kb_ix_addmul(kb, &idx[d], &c->rbase, 1);
  }
  return into;
}

// The accumulators' element for input index idx (the contiguous reduced index).
static LIndex col_slot(KernelBuilder *kb, const Col *c, const LIndex *idx) {
  LIndex o = kb_ix_const(0);
  for (int d = 0; d < c->xv->ndim; d++)
    if (!reduced(c, d) && c->xv->shape[d] > 1)
      kb_ix_addmul(kb, &o, &idx[d], c->ostride[d]);
  return o;
}

// A pass acc = acc op f(x) over every dim, f as in row_fold (sub: a buffer to subtract).
static void col_fold(KernelBuilder *kb, const Col *c, const Node *n, int acc, Op op, DType cd, int sub, bool square) {
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, c, true, idx);
  LIndex o = col_slot(kb, c, idx);
  LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd);
  if (sub >= 0)
    x = kb_binary(kb, OP_SUB, cd, x, kb_buf_load(kb, sub, o));
  if (square)
    x = kb_unary(kb, OP_SQUARE, cd, x);
  if (op == OP_EXP) {  // sum of exp
    x = kb_unary(kb, OP_EXP, cd, x);
    op = OP_ADD;
  }
  kb_buf_store(kb, in, acc, o, kb_arith(kb, op, cd, kb_buf_load(kb, acc, o), x));
}

// The argmax/argmin pass: best value in `best`, its row-major position in `pos`.
static void col_argext(KernelBuilder *kb, const Col *c, const Node *n, int best, int pos) {
  DType cd = dtype_compute(n->srcs[0]->dtype);
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, c, true, idx);
  LIndex o = col_slot(kb, c, idx);
  int x = kb_let_local(kb, in, kb_cast(kb, kb_value(kb, n->srcs[0], idx), cd));
  int b = kb_let_local(kb, in, kb_buf_load(kb, best, o));
  LStmt *upd = kb_if(kb, argext_cond(kb, n->op == OP_ARGMAX, cd, kb_local_ref(kb, x), kb_local_ref(kb, b)));
  kb_push(kb, in, upd);
  kb_buf_store(kb, &upd->body, best, o, kb_local_ref(kb, x));
  LIndex p = row_position(kb, c->xv, c->mask, idx);
  kb_buf_store(kb, &upd->body, pos, o, kb_ix_expr(kb, &p));
}

// Whether row node i's result is its accumulator and that is its own buffer.
static bool col_in_place(const KernelBuilder *kb, const Col *c, const Node *n, int i) {
  bool bare = n->op != OP_MEAN && n->op != OP_VAR && n->op != OP_STD && n->op != OP_LOGSUMEXP;
  return bare && n->mode == NM_STORED && c->acc[i] == kb->buf_of[n->out->buf->id];
}

// The accumulator holding the sum of row node i's input when an earlier mean node of the
// same input, in the same dtype, has one (its terms in the same order: the same sum), or -1.
static int col_sum_of(const Col *c, const NodeList *ns, int i) {
  const Value *x = ns->data[i]->srcs[0];
  DType cd = dtype_compute(ns->data[i]->out->dtype);
  for (int j = 0; j < i; j++) {
    const Node *m = ns->data[j];
    const Value *y = m->srcs[0];
    if (m->op == OP_MEAN && dtype_compute(m->out->dtype) == cd && x->dtype == y->dtype &&
        (x == y || (x->buf && x->buf == y->buf && view_equal(x->view, y->view))))
      return c->acc[j];
  }
  return -1;
}

// One copy of the passes over the current block (or everything): init, the row
// nodes' passes, and the final pass that stores results and epilogues.
static void col_instance(KernelBuilder *kb, const Col *c, const NodeList *ns, int nrow) {
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, c, false, idx);
  LIndex o = col_slot(kb, c, idx);
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    DType cd = dtype_compute(n->out->dtype), xd = dtype_compute(n->srcs[0]->dtype);
    LExpr *init;
    switch (n->op) {
    case OP_PROD: init = kb_num(kb, cd, 1, 1); break;
    case OP_AMAX: case OP_MAX: init = inf_of(kb, cd, true, true); break;
    case OP_AMIN: case OP_MIN: init = inf_of(kb, cd, false, false); break;
    case OP_ALL: init = kb_iconst(kb, DT_BOOL, 1); break;
    case OP_ANY: init = kb_iconst(kb, DT_BOOL, 0); break;
    case OP_ARGMAX: case OP_ARGMIN: {
      bool mx = n->op == OP_ARGMAX;
      kb_buf_store(kb, in, c->aux[i], o, inf_of(kb, xd, mx, mx));
      init = kb_iconst(kb, DT_I64, 0);
      break;
    }
    case OP_LOGSUMEXP:
      kb_buf_store(kb, in, c->aux[i], o, inf_of(kb, cd, true, true));
      init = kb_fconst(kb, cd, 0);
      break;
    case OP_VAR: case OP_STD:
      kb_buf_store(kb, in, c->aux[i], o, kb_num(kb, cd, 0, 0));
      init = kb_num(kb, cd, 0, 0);
      break;
    default: init = kb_num(kb, cd, 0, 0); break;  // sum, mean
    }
    kb_buf_store(kb, in, c->acc[i], o, init);
  }
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    DType cd = dtype_compute(n->out->dtype);
    LExpr *N = kb_num(kb, dtype_is_float(cd) ? cd : DT_F64, (double)c->n, c->n);
    int acc = c->acc[i], aux = c->aux[i];
    switch (n->op) {
    case OP_SUM: case OP_MEAN: col_fold(kb, c, n, acc, OP_ADD, cd, -1, false); break;
    case OP_PROD: col_fold(kb, c, n, acc, OP_MUL, cd, -1, false); break;
    case OP_AMAX: case OP_MAX: col_fold(kb, c, n, acc, OP_MAXIMUM, cd, -1, false); break;
    case OP_AMIN: case OP_MIN: col_fold(kb, c, n, acc, OP_MINIMUM, cd, -1, false); break;
    case OP_ALL: col_fold(kb, c, n, acc, OP_LOGICAL_AND, DT_BOOL, -1, false); break;
    case OP_ANY: col_fold(kb, c, n, acc, OP_LOGICAL_OR, DT_BOOL, -1, false); break;
    case OP_ARGMAX: case OP_ARGMIN: col_argext(kb, c, n, aux, acc); break;
    case OP_VAR: case OP_STD: {  // the mean (a mean node's sum where one of its input came first), the squared
      int sum = col_sum_of(c, ns, i);  // deviations from it
      if (sum < 0)
        col_fold(kb, c, n, aux, OP_ADD, cd, -1, false);
      in = col_pass(kb, c, false, idx);
      o = col_slot(kb, c, idx);
      kb_buf_store(kb, in, aux, o, kb_binary(kb, OP_DIV, cd, kb_buf_load(kb, sum < 0 ? aux : sum, o), N));
      col_fold(kb, c, n, acc, OP_ADD, cd, aux, true);
      break;
    }
    case OP_LOGSUMEXP: {  // the max, the shift (0 for an infinite max), the sum of exp
      col_fold(kb, c, n, aux, OP_MAXIMUM, cd, -1, false);
      in = col_pass(kb, c, false, idx);
      o = col_slot(kb, c, idx);
      LExpr *mv = kb_buf_load(kb, aux, o);
      LExpr *isinf = kb_binary(kb, OP_EQ, DT_BOOL, kb_unary(kb, OP_ABS, cd, mv), kb_fconst(kb, cd, INFINITY));
      kb_buf_store(kb, in, aux, o, kb_select(kb, isinf, kb_fconst(kb, cd, 0), mv));
      col_fold(kb, c, n, acc, OP_EXP, cd, aux, false);
      break;
    }
    default: td_unreachable();
    }
  }
  bool final = ns->len > nrow;
  for (int i = 0; i < nrow; i++)
    final |= !col_in_place(kb, c, ns->data[i], i);
  if (!final)
    return;
  in = col_pass(kb, c, false, idx);
  o = col_slot(kb, c, idx);
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    if (col_in_place(kb, c, n, i) && ns->len == nrow)
      continue;  // done, and no epilogue reads it
    DType cd = dtype_compute(n->out->dtype);
    LExpr *N = kb_num(kb, dtype_is_float(cd) ? cd : DT_F64, (double)c->n, c->n);
    LExpr *v = kb_cast(kb, kb_buf_load(kb, c->acc[i], o), cd);  // any, all: bool to the result's
    switch (n->op) {
    case OP_MEAN: v = kb_binary(kb, OP_DIV, cd, v, N); break;
    case OP_VAR: case OP_STD: {
      int64_t div = c->n - n->attr.correction;
      v = kb_binary(kb, OP_DIV, cd, v, kb_fconst(kb, cd, (double)(div > 0 ? div : 0)));
      if (n->op == OP_STD)
        v = kb_unary(kb, OP_SQRT, cd, v);
      break;
    }
    case OP_LOGSUMEXP: v = kb_binary(kb, OP_ADD, cd, kb_unary(kb, OP_LOG, cd, v), kb_buf_load(kb, c->aux[i], o)); break;
    default: break;
    }
    int l = kb_let_local(kb, in, v);
    reduced_local(kb, n, c->xv, c->mask, idx, l);
    if (n->mode != NM_STORED || col_in_place(kb, c, n, i))
      continue;
    LIndex oi[TD_MAX_DIMS];
    TD_ASSERT(reduced_index(c->xv, c->mask, idx, &n->out->view, oi));
    kb_store_node(kb, in, n, oi, kb_local_ref(kb, l));
  }
  for (int j = nrow; j < ns->len; j++) {
    const Node *n = ns->data[j];
    LIndex oi[TD_MAX_DIMS];
    TD_ASSERT(op_is_elementwise(n->op) && reduced_index(c->xv, c->mask, idx, &n->out->view, oi));
    kb_store_node(kb, in, n, oi, kb_node_expr(kb, n, oi));
  }
}

// Whether v, through the producers it recomputes, reads a row node of this kernel.
static bool reads_kernel_row(const KernelBuilder *kb, const Value *v) {
  if (v->is_scalar || !v->buf || v->buf->kind != BUF_KERNEL)
    return false;
  const Node *n = v->buf->producer;
  if (n->kernel == kb->kid && op_is_row(n->op))
    return true;
  if (n->mode != NM_INLINE && !(n->kernel == kb->kid && op_is_elementwise(n->op)))
    return false;
  for (int i = 0; i < n->nsrc; i++)
    if (reads_kernel_row(kb, n->srcs[i]))
      return true;
  return false;
}

// stride[d]: the smallest nonzero |coefficient| of probe variable PROBE_VAR + d over
// the loads of e (dim d's memory stride; untouched where no load moves with d).
static void probe_strides(const LExpr *e, int nd, int64_t *stride) {
  if (!e)
    return;
  if (e->kind == LX_LOAD) {
    for (int t = 0; t < e->idx.nterms; t++) {
      int d = e->idx.var[t] - PROBE_VAR;
      int64_t s = kb_iabs(e->idx.coef[t]);
      if (d >= 0 && d < nd && s && (!stride[d] || s < stride[d]))
        stride[d] = s;
    }
    probe_strides(e->idx.dyn, nd, stride);
  }
  probe_strides(e->a, nd, stride);
  probe_strides(e->b, nd, stride);
  probe_strides(e->c, nd, stride);
}

// Whether e walks probe dims a (outer) and b (inner, of extent nb) as one: every load's
// coefficient of a is nb times its coefficient of b, and neither index is read otherwise
// (a padding's compare, a clamped gather).
static bool joins_in(const LExpr *e, int a, int b, int64_t nb);

static bool joins_at(const LIndex *x, int a, int b, int64_t nb) {
  int64_t ca = 0, cb = 0;
  for (int t = 0; t < x->nterms; t++) {
    ca += x->var[t] == PROBE_VAR + a ? x->coef[t] : 0;
    cb += x->var[t] == PROBE_VAR + b ? x->coef[t] : 0;
  }
  return ca == nb * cb && joins_in(x->dyn, a, b, nb);
}

static bool joins_in(const LExpr *e, int a, int b, int64_t nb) {
  if (!e)
    return true;
  if (e->kind == LX_VAR && (e->var == PROBE_VAR + a || e->var == PROBE_VAR + b))
    return false;
  if (e->kind == LX_LOAD && !joins_at(&e->idx, a, b, nb))
    return false;
  return joins_in(e->a, a, b, nb) && joins_in(e->b, a, b, nb) && joins_in(e->c, a, b, nb);
}

// Joins each inner kept dim to the next in the loop order where every access walks the
// two as one dim (H and W of an NCHW x reduced over C: one loop of H W columns, which
// the blocks and the vector loop see whole, not H loops of W): the row nodes' inputs,
// their stored results and the epilogues, probed at pidx.
static void col_join(KernelBuilder *kb, const NodeList *ns, int nrow, Col *c, const LIndex *pidx) {
  memset(c->join, 0, sizeof c->join);
  const View *xv = c->xv;
  int np = 0;
  LExpr *probe[3 * COL_JOIN_NODES];
  LIndex at[2 * COL_JOIN_NODES];
  int nat = 0;
  LocalVal saved[COL_JOIN_NODES];
  if (ns->len > COL_JOIN_NODES)
    return;
  for (int i = 0; i < nrow; i++)  // a scan's result has the input's dims, no reduced local: not probed
    if (op_is_scan(ns->data[i]->op))
      return;
  for (int i = 0; i < nrow; i++) {  // the results as locals of the probe index, as col_instance leaves them
    const Node *n = ns->data[i];
    saved[i] = kb->lv[n->id];
    probe[np++] = kb_value(kb, n->srcs[0], pidx);
  }
  int nloc = kb->k->locals.len;  // (the probe's locals, dropped after it)
  for (int i = 0; i < nrow; i++)
    reduced_local(kb, ns->data[i], xv, c->mask, pidx, kb_new_local(kb, dtype_compute(ns->data[i]->out->dtype)));
  LIndex oi[TD_MAX_DIMS];
  for (int i = 0; i < ns->len; i++) {
    const Node *n = ns->data[i];
    if (!reduced_index(xv, c->mask, pidx, &n->out->view, oi))
      continue;
    if (i >= nrow)
      probe[np++] = kb_node_expr(kb, n, oi);
    if (n->mode == NM_STORED)
      at[nat++] = kb_view_index(kb, &n->out->view, oi);
  }
  kb->k->locals.len = nloc;
  for (int i = 0; i < nrow; i++)
    kb->lv[ns->data[i]->id] = saved[i];
  for (int p = c->nouter; p + 1 < c->nord; p++) {
    int a = c->order[p], b = c->order[p + 1];
    if (reduced(c, a) || reduced(c, b) || c->ostride[a] != c->ostride[b] * xv->shape[b])
      continue;
    bool ok = true;
    for (int k = 0; k < np && ok; k++)
      ok = joins_in(probe[k], a, b, xv->shape[b]);
    for (int k = 0; k < nat && ok; k++)
      ok = joins_at(&at[k], a, b, xv->shape[b]);
    c->join[p] = ok;
  }
}

// The loop order of the column schedule, or false when the row schedule is kept: dims
// by decreasing memory stride of the inputs' loads, the reduced ones then put back in
// their row-major order in the places they got; the column schedule applies when the
// innermost dim is kept.
static bool col_plan(KernelBuilder *kb, const NodeList *ns, int nrow, Col *c) {
  const Node *first = ns->data[0];
  c->xv = &first->srcs[0]->view;
  c->mask = first->attr.dims;
  const View *xv = c->xv;
  if (view_numel(*xv) == 0)
    return false;
  LIndex zero[TD_MAX_DIMS], oi[TD_MAX_DIMS], pidx[TD_MAX_DIMS];
  for (int d = 0; d < xv->ndim; d++) {
    zero[d] = kb_ix_const(0);
    pidx[d] = xv->shape[d] == 1 ? kb_ix_const(0) : kb_ix_var(PROBE_VAR + d);
  }
  for (int i = 0; i < ns->len; i++) {
    const Node *n = ns->data[i];
    if (i >= nrow) {  // epilogues: of the reduced shape only
      if (!reduced_index(xv, c->mask, zero, &n->out->view, oi))
        return false;
      continue;
    }
    switch (n->op) {
    case OP_SUM: case OP_PROD: case OP_MEAN: case OP_AMAX: case OP_MAX: case OP_AMIN: case OP_MIN: case OP_ALL:
    case OP_ANY: case OP_VAR: case OP_STD: case OP_LOGSUMEXP: case OP_ARGMAX: case OP_ARGMIN: break;
    default:
      if (op_is_scan(n->op))
        break;
      return false;  // softmax, log_softmax
    }
    if (reads_kernel_row(kb, n->srcs[0]))
      return false;
  }
  int64_t stride[TD_MAX_DIMS] = {0};
  for (int i = 0; i < nrow; i++)
    probe_strides(kb_value(kb, ns->data[i]->srcs[0], pidx), xv->ndim, stride);
  c->nord = 0;
  for (int d = 0; d < xv->ndim; d++)
    if (xv->shape[d] > 1)
      c->order[c->nord++] = d;
  for (int p = 1; p < c->nord; p++)  // stable; a dim no load moves with goes outermost
    for (int q = p; q > 0; q--) {
      int64_t s0 = stride[c->order[q - 1]], s1 = stride[c->order[q]];
      if ((s0 ? s0 : INT64_MAX) >= (s1 ? s1 : INT64_MAX))
        break;
      int t = c->order[q];
      c->order[q] = c->order[q - 1];
      c->order[q - 1] = t;
    }
  int red[TD_MAX_DIMS], nred = 0;
  for (int d = 0; d < xv->ndim; d++)
    if (xv->shape[d] > 1 && reduced(c, d))
      red[nred++] = d;
  for (int p = 0, r = 0; p < c->nord; p++)
    if (reduced(c, c->order[p]))
      c->order[p] = red[r++];
  if (nred == 0 || reduced(c, c->order[c->nord - 1]))
    return false;
  c->nouter = 0;
  while (!reduced(c, c->order[c->nouter]))
    c->nouter++;
  c->n = 1;
  int64_t s = 1;
  for (int d = xv->ndim - 1; d >= 0; d--) {
    if (reduced(c, d))
      c->n *= xv->shape[d];
    else
      c->ostride[d] = s, s *= xv->shape[d];
  }
  col_join(kb, ns, nrow, c, pidx);
  return true;
}

// An accumulator buffer of dtype dt for row node n: its own when stored in dt.
// The dtype row node n accumulates in (any and all: bool, whatever their result's).
static DType acc_dtype(const Node *n) {
  return n->op == OP_ANY || n->op == OP_ALL ? DT_BOOL : dtype_compute(n->out->dtype);
}

// The dtype of a CPU column argmax's positions (n an argmax or argmin, onumel its
// outputs): its values' where every position (< the elements reduced) is exact in it, so
// that ir/sched.c's split_colargext keeps values and positions in vectors of one type
// (the final pass converts them to i64 exactly); else i64.
static DType pos_dtype(const KernelBuilder *kb, const Node *n, int64_t onumel) {
  DType cd = dtype_compute(n->srcs[0]->dtype);
  int64_t reduced = view_numel(n->srcs[0]->view) / (onumel > 0 ? onumel : 1);
  bool exact = (cd == DT_F32 && reduced <= ((int64_t)1 << 24)) || cd == DT_F64 || (cd == DT_I32 && reduced <= INT32_MAX) ||
               cd == DT_I64;
  return kb->cpu && exact ? cd : DT_I64;
}

static int col_buffer(KernelBuilder *kb, const Node *n, DType dt, int64_t numel, const char *what) {
  if (n->mode == NM_STORED && n->out->dtype == dt)
    return kb->buf_of[n->out->buf->id];
  return kb_new_temp(kb, dt, numel, what);
}

static void scan_instance(KernelBuilder *kb, const Col *c, const NodeList *ns, int nrow);
static void scan_buffers(KernelBuilder *kb, Col *c, const NodeList *ns, int64_t onumel);

// ============================================================================
// SPLIT: a column reduction with too few kept elements for threads (x.sum(0) of a
// [65536, 64] x, the statistics of a [N, C, H, W] batch over (0, 2, 3)): the rows are
// split into parts that threads reduce to partial results, then combined in order.
//   for o in outer kept dims {                       (fewer than PARALLEL_MIN_ITERS)
//     for each phase (one; two for var/std and logsumexp, the second reading the first's
//                     mean or shift):
//       for p in 0..P parallel {                    each part: a range of the longest
//         part[p, j] = identity                     reduced dim (the split dim)
//         for the part's elements, memory order: part[p, j] = part[p, j] op f(x)
//       }
//       (the split dim's last indices, fewer than a part, in one more part after it)
//       for j: stat[j] = part[0, j] op part[1, j] op ... (left to right)
//     for j: results and epilogues, as the column schedule's final pass
//   }
// P aims at SPLIT_PARTS parts (fewer where each would have less than PARALLEL_WORK
// elements). Association: each part folds its rows in steps of SPLIT_STEP (the step's
// terms summed pairwise, then added to the partials; argmax/argmin row by row), and the
// parts' results are then combined from the first to the last, so a float sum is the
// naive sum regrouped into P + 1 runs of such steps (its rounding error is bounded by
// the longest run's plus P terms: no worse than the naive nest's); max, min, all, any,
// argmax and argmin (the first extreme wins: parts combine in order with the same
// test) and integer arithmetic (wrapping) give exactly the naive results.
// ============================================================================
enum { SPLIT_PARTS = 16, SPLIT_STEP = 8 };

typedef struct SplitPass {
  Op op;       // the fold: ADD MUL MAXIMUM MINIMUM LOGICAL_AND LOGICAL_OR, or ARGMAX/ARGMIN
  DType cd;    // the partials' dtype
  int sub;     // a buffer of the reduced shape subtracted from x first (var's mean), -1
  bool square, exp;
  int part, ppos;  // the partials [P + 1, onumel] (argext: best values; ppos its positions)
} SplitPass;

// The fold's identity (argext: the best value's).
static LExpr *split_identity(KernelBuilder *kb, const SplitPass *s, const Node *n) {
  switch (s->op) {
  case OP_ADD: return kb_num(kb, s->cd, 0, 0);
  case OP_MUL: return kb_num(kb, s->cd, 1, 1);
  case OP_MAXIMUM: return inf_of(kb, s->cd, true, true);
  case OP_MINIMUM: return inf_of(kb, s->cd, false, false);
  case OP_LOGICAL_AND: return kb_iconst(kb, DT_BOOL, 1);
  case OP_LOGICAL_OR: return kb_iconst(kb, DT_BOOL, 0);
  case OP_ARGMAX: case OP_ARGMIN: {
    bool mx = n->op == OP_ARGMAX;
    return inf_of(kb, s->cd, mx, mx);
  }
  default: td_unreachable();
  }
}

// The pass of row node n in phase ph (false: n has none).
static bool split_pass(KernelBuilder *kb, const Node *n, int ph, int stat, int64_t onumel, int nparts, SplitPass *s) {
  DType cd = dtype_compute(n->out->dtype);
  *s = (SplitPass){OP_ADD, cd, -1, false, false, -1, -1};
  switch (n->op) {
  case OP_SUM: case OP_MEAN: break;
  case OP_PROD: s->op = OP_MUL; break;
  case OP_AMAX: case OP_MAX: s->op = OP_MAXIMUM; break;
  case OP_AMIN: case OP_MIN: s->op = OP_MINIMUM; break;
  case OP_ALL: s->op = OP_LOGICAL_AND, s->cd = DT_BOOL; break;
  case OP_ANY: s->op = OP_LOGICAL_OR, s->cd = DT_BOOL; break;
  case OP_ARGMAX: case OP_ARGMIN: s->op = n->op, s->cd = dtype_compute(n->srcs[0]->dtype); break;
  case OP_VAR: case OP_STD:
    if (ph == 1)
      s->sub = stat, s->square = true;
    break;
  case OP_LOGSUMEXP:
    if (ph == 0)
      s->op = OP_MAXIMUM;
    else
      s->sub = stat, s->exp = true;
    break;
  default: td_unreachable();
  }
  bool two = n->op == OP_VAR || n->op == OP_STD || n->op == OP_LOGSUMEXP;
  if (ph > 0 && !two)
    return false;
  s->part = kb_new_temp(kb, s->cd, nparts * onumel, "part");
  if (s->op == OP_ARGMAX || s->op == OP_ARGMIN)
    s->ppos = kb_new_temp(kb, pos_dtype(kb, n, onumel), nparts * onumel, "partpos");
  return true;
}

// part[p, j] = part[p, j] op (f(x) of c->rstep consecutive rows of the split dim, folded
// pairwise) over c's rows, c->rext a multiple of c->rstep: a step's rows reach the
// partials once, so a step costs one load and one store of them and rstep streams of x
// are in flight (a column sum of a [4096, 4096] f32 ran 1.4-1.7x faster with 8 rows a step).
static void split_fold(KernelBuilder *kb, const Col *c, const Node *n, const SplitPass *s, const LIndex *p,
                       int64_t onumel) {
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, c, true, idx);
  LIndex j = col_slot(kb, c, idx), o = j;
  kb_ix_addmul(kb, &o, p, onumel);
  LExpr *t[SPLIT_STEP];
  int m = c->rstep > 1 ? (int)c->rstep : 1;
  for (int k = 0; k < m; k++) {
    LIndex ik[TD_MAX_DIMS];
    memcpy(ik, idx, sizeof ik);
    ik[c->rdim].base += k;
    LExpr *x = kb_cast(kb, kb_value(kb, n->srcs[0], ik), s->cd);
    if (s->sub >= 0)
      x = kb_binary(kb, OP_SUB, s->cd, x, kb_buf_load(kb, s->sub, j));
    if (s->square)
      x = kb_unary(kb, OP_SQUARE, s->cd, x);
    if (s->exp)
      x = kb_unary(kb, OP_EXP, s->cd, x);
    t[k] = x;
  }
  for (int w = 1; w < m; w *= 2)
    for (int k = 0; k + w < m; k += 2 * w)
      t[k] = kb_arith(kb, s->op, s->cd, t[k], t[k + w]);
  kb_buf_store(kb, in, s->part, o, kb_arith(kb, s->op, s->cd, kb_buf_load(kb, s->part, o), t[0]));
}

// The part at index p (an LIndex over the parts) of the current rows: its partials
// from the identity, then folded over every row of c's current range.
static void split_part(KernelBuilder *kb, const Col *c, const Node *n, const SplitPass *s, LStmtList *into,
                       const LIndex *p, int64_t onumel) {
  Col cc = *c;
  cc.body = into;
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, &cc, false, idx);
  LIndex o = col_slot(kb, &cc, idx);
  kb_ix_addmul(kb, &o, p, onumel);
  kb_buf_store(kb, in, s->part, o, split_identity(kb, s, n));
  if (s->ppos < 0) {  // the rows in steps of SPLIT_STEP, then the last ones one by one
    int64_t tail = c->rext % SPLIT_STEP;
    cc.rstep = SPLIT_STEP;
    cc.rext = c->rext - tail;
    if (cc.rext)
      split_fold(kb, &cc, n, s, p, onumel);
    cc.rstep = 1;
    cc.rext = tail;
    cc.rbase.base += c->rext - tail;
    if (tail)
      split_fold(kb, &cc, n, s, p, onumel);
    return;
  }
  // argmax/argmin: the first best of the part, row by row
  kb_buf_store(kb, in, s->ppos, o, kb_iconst(kb, DT_I64, 0));
  in = col_pass(kb, &cc, true, idx);
  o = col_slot(kb, &cc, idx);
  kb_ix_addmul(kb, &o, p, onumel);
  int xl = kb_let_local(kb, in, kb_cast(kb, kb_value(kb, n->srcs[0], idx), s->cd));
  int bl = kb_let_local(kb, in, kb_buf_load(kb, s->part, o));
  LStmt *upd = kb_if(kb, argext_cond(kb, s->op == OP_ARGMAX, s->cd, kb_local_ref(kb, xl), kb_local_ref(kb, bl)));
  kb_push(kb, in, upd);
  kb_buf_store(kb, &upd->body, s->part, o, kb_local_ref(kb, xl));
  LIndex pos = row_position(kb, c->xv, c->mask, idx);
  kb_buf_store(kb, &upd->body, s->ppos, o, kb_ix_expr(kb, &pos));
}

// The parts of one phase combined in order into locals, in the loop over the kept
// slots whose body is `in` at slot j; *pos gets argext's position local (else -1).
static int split_combine(KernelBuilder *kb, const SplitPass *s, LStmtList *in, const LIndex *j, int64_t onumel,
                         int nparts, int *pos) {
  LIndex o0 = *j;
  int v = kb_let_local(kb, in, kb_buf_load(kb, s->part, o0));
  *pos = s->ppos >= 0 ? kb_let_local(kb, in, kb_buf_load(kb, s->ppos, o0)) : -1;
  int pv = kb_new_var(kb);
  LStmt *l = kb_loop(kb, pv, nparts - 1);
  kb_push(kb, in, l);
  LIndex o = *j, pi = kb_ix_var(pv);
  o.base += onumel;
  kb_ix_addmul(kb, &o, &pi, onumel);
  LExpr *x = kb_buf_load(kb, s->part, o);
  if (*pos < 0) {
    kb_push(kb, &l->body, kb_set(kb, v, kb_arith(kb, s->op, s->cd, kb_local_ref(kb, v), x)));
    return v;
  }
  int xl = kb_let_local(kb, &l->body, x);
  LStmt *upd = kb_if(kb, argext_cond(kb, s->op == OP_ARGMAX, s->cd, kb_local_ref(kb, xl), kb_local_ref(kb, v)));
  kb_push(kb, &l->body, upd);
  kb_push(kb, &upd->body, kb_set(kb, v, kb_local_ref(kb, xl)));
  kb_push(kb, &upd->body, kb_set(kb, *pos, kb_buf_load(kb, s->ppos, o)));
  return v;
}

// Builds the split schedule (for a kernel worth threads that neither its outer kept
// dims nor blocks of its inner ones give, build_col says) when it has PARALLEL_WORK
// elements for each of two parts or more; false: not built.
static bool build_split(KernelBuilder *kb, Col *c, const NodeList *ns, int nrow) {
  const View *xv = c->xv;
  int sd = -1;  // the longest reduced dim (the outermost of equals)
  for (int p = c->nouter; p < c->nord; p++)
    if (reduced(c, c->order[p]) && (sd < 0 || xv->shape[c->order[p]] > xv->shape[sd]))
      sd = c->order[p];
  int64_t R = xv->shape[sd], want = view_numel(*xv) / PARALLEL_WORK;
  if (want > SPLIT_PARTS)
    want = SPLIT_PARTS;
  if (want > R)
    want = R;
  if (nrow == 0 || want < 2)
    return false;
  int64_t rows = (R + want - 1) / want, P = R / rows;  // rows per part, full parts
  if (P < 2)
    return false;
  int64_t onumel = view_numel(*xv) / c->n, rem = R - P * rows, nparts = P + (rem > 0);
  for (int d = 0; d < xv->ndim; d++)
    c->xidx[d] = kb_ix_const(0);
  LStmtList *body = kb_outer_loops(kb, &kb->k->body, c->nouter, c->order, xv->shape, c->xidx, false);
  // per row node: its phases' partials, and the first phase's statistic (var: the
  // mean; logsumexp: the shift) in a buffer of the reduced shape
  SplitPass (*sp)[2] = arena_alloc(&kb->cx->arena, sizeof *sp * (size_t)nrow);
  int *stat = arena_alloc(&kb->cx->arena, sizeof(int) * (size_t)nrow);
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    bool two = n->op == OP_VAR || n->op == OP_STD || n->op == OP_LOGSUMEXP;
    stat[i] = two ? kb_new_temp(kb, dtype_compute(n->out->dtype), onumel, "stat") : -1;
    split_pass(kb, n, 0, -1, onumel, nparts, &sp[i][0]);
    if (!two || !split_pass(kb, n, 1, stat[i], onumel, nparts, &sp[i][1]))
      sp[i][1].part = -1;
  }
  c->rdim = sd;
  for (int ph = 0; ph < 2; ph++) {
    bool any = false;
    for (int i = 0; i < nrow; i++)
      any |= ph == 0 || sp[i][1].part >= 0;
    if (!any)
      break;
    int pv = kb_new_var(kb);
    LStmt *pl = kb_loop(kb, pv, P);
    pl->parallel = true;
    kb_push(kb, body, pl);
    LIndex pi = kb_ix_var(pv), plast = kb_ix_const(P);
    for (int i = 0; i < nrow; i++) {
      const SplitPass *s = &sp[i][ph];
      if (ph == 1 && s->part < 0)
        continue;
      c->rbase = kb_ix_const(0);
      kb_ix_addmul(kb, &c->rbase, &pi, rows);
      c->rext = rows;
      split_part(kb, c, ns->data[i], s, &pl->body, &pi, onumel);
      if (rem) {
        c->rbase = kb_ix_const(P * rows);
        c->rext = rem;
        split_part(kb, c, ns->data[i], s, body, &plast, onumel);
      }
    }
    if (ph == 1)
      break;
    // the first phase's statistics, where a second phase reads them
    Col cc = *c;
    cc.body = body;
    LIndex idx[TD_MAX_DIMS];
    LStmtList *in = NULL;
    LIndex j;
    for (int i = 0; i < nrow; i++) {
      const Node *n = ns->data[i];
      if (stat[i] < 0)
        continue;
      if (!in) {
        in = col_pass(kb, &cc, false, idx);
        j = col_slot(kb, &cc, idx);
      }
      int pos, v = split_combine(kb, &sp[i][0], in, &j, onumel, (int)nparts, &pos);
      DType cd = sp[i][0].cd;
      LExpr *sv = kb_local_ref(kb, v);
      if (n->op == OP_LOGSUMEXP) {
        LExpr *isinf = kb_binary(kb, OP_EQ, DT_BOOL, kb_unary(kb, OP_ABS, cd, sv), kb_fconst(kb, cd, INFINITY));
        sv = kb_select(kb, isinf, kb_fconst(kb, cd, 0), sv);
      } else {  // var, std: the mean
        sv = kb_binary(kb, OP_DIV, cd, sv, kb_num(kb, cd, (double)c->n, c->n));
      }
      kb_buf_store(kb, in, stat[i], j, sv);
    }
  }
  c->rdim = -1;
  // the results and epilogues, as col_instance's final pass
  Col cc = *c;
  cc.body = body;
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, &cc, false, idx);
  LIndex j = col_slot(kb, &cc, idx);
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    DType cd = dtype_compute(n->out->dtype);
    LExpr *N = kb_num(kb, dtype_is_float(cd) ? cd : DT_F64, (double)c->n, c->n);
    const SplitPass *s = &sp[i][sp[i][1].part >= 0 ? 1 : 0];
    int pos, v = split_combine(kb, s, in, &j, onumel, (int)nparts, &pos);
    LExpr *r = kb_local_ref(kb, pos >= 0 ? pos : v);
    switch (n->op) {
    case OP_MEAN: r = kb_binary(kb, OP_DIV, cd, r, N); break;
    case OP_VAR: case OP_STD: {
      int64_t div = c->n - n->attr.correction;
      r = kb_binary(kb, OP_DIV, cd, r, kb_fconst(kb, cd, (double)(div > 0 ? div : 0)));
      if (n->op == OP_STD)
        r = kb_unary(kb, OP_SQRT, cd, r);
      break;
    }
    case OP_LOGSUMEXP:
      r = kb_binary(kb, OP_ADD, cd, kb_unary(kb, OP_LOG, cd, r), kb_buf_load(kb, stat[i], j));
      break;
    default: break;
    }
    int l = kb_let_local(kb, in, kb_cast(kb, r, cd));  // any, all: bool to the result's
    reduced_local(kb, n, xv, c->mask, idx, l);
    if (n->mode != NM_STORED)
      continue;
    LIndex oi[TD_MAX_DIMS];
    TD_ASSERT(reduced_index(xv, c->mask, idx, &n->out->view, oi));
    kb_store_node(kb, in, n, oi, kb_local_ref(kb, l));
  }
  for (int k = nrow; k < ns->len; k++) {
    const Node *n = ns->data[k];
    LIndex oi[TD_MAX_DIMS];
    TD_ASSERT(op_is_elementwise(n->op) && reduced_index(xv, c->mask, idx, &n->out->view, oi));
    kb_store_node(kb, in, n, oi, kb_node_expr(kb, n, oi));
  }
  return true;
}

// Builds the column schedule when it applies; false: not built.
static bool build_col(KernelBuilder *kb, const NodeList *ns) {
  int nrow = 0;
  while (nrow < ns->len && op_is_row(ns->data[nrow]->op))
    nrow++;
  Col c;
  memset(&c, 0, sizeof c);
  c.bdim = c.rdim = -1;
  if (!col_plan(kb, ns, nrow, &c))
    return false;
  const View *xv = c.xv;
  int64_t onumel = view_numel(*xv) / c.n;
  bool scan = op_is_scan(ns->data[0]->op);
  // the outer loops, parallel; or, with too few of them, blocks of an inner kept dim
  for (int d = 0; d < xv->ndim; d++)
    c.xidx[d] = kb_ix_const(0);
  int64_t outer = 1;
  for (int p = 0; p < c.nouter; p++)
    outer *= xv->shape[c.order[p]];
  bool par = view_numel(*xv) >= PARALLEL_WORK;
  int64_t B = 0;
  c.bdim = -1;
  if (par && outer < PARALLEL_MIN_ITERS) {
    int bp = c.nouter;
    while (reduced(&c, c.order[bp]))
      bp++;
    int64_t w = 1, S = col_extent(&c, bp);
    for (int p = bp + 1; p < c.nord; p++)
      if (!reduced(&c, c.order[p]))
        w *= xv->shape[c.order[p]];
    w /= S / xv->shape[c.order[bp]];  // (the dims joined to bp are in S)
    // A block narrower than a page, over many rows, reads a few hundred bytes of every
    // row, rows far apart (x.sum(0) of a [4096, 4096] f32: 1 KiB of each 16 KiB row,
    // 0.36x the split's speed): the split schedule's parts read whole rows instead, as
    // Halide's rfactor schedules do. Few rows (a [64, 4096] x) keep the blocks.
    B = kb_block_size(S, w);
    bool narrow = B * w * dtype_size(ns->data[0]->srcs[0]->dtype) < 4096 && c.n >= 1024;
    if (B && !(narrow && !scan && kb->cpu && build_split(kb, &c, ns, nrow)))
      c.bdim = c.order[bp];
    else if (B)
      return true;
    else if (!scan && kb->cpu && build_split(kb, &c, ns, nrow))
      return true;
  }
  void (*instance)(KernelBuilder *, const Col *, const NodeList *, int) = scan ? scan_instance : col_instance;
  c.acc = arena_alloc(&kb->cx->arena, sizeof(int) * (size_t)nrow);
  c.aux = arena_alloc(&kb->cx->arena, sizeof(int) * (size_t)nrow);
  if (scan)
    scan_buffers(kb, &c, ns, onumel);
  for (int i = 0; i < nrow && !scan; i++) {
    const Node *n = ns->data[i];
    DType cd = dtype_compute(n->out->dtype);
    c.aux[i] = -1;
    switch (n->op) {
    case OP_ARGMAX: case OP_ARGMIN:
      c.aux[i] = kb_new_temp(kb, dtype_compute(n->srcs[0]->dtype), onumel, "best");
      break;
    case OP_VAR: case OP_STD: c.aux[i] = kb_new_temp(kb, cd, onumel, "mean"); break;
    case OP_LOGSUMEXP: c.aux[i] = kb_new_temp(kb, cd, onumel, "shift"); break;
    default: break;
    }
    bool arg = n->op == OP_ARGMAX || n->op == OP_ARGMIN;
    c.acc[i] = col_buffer(kb, n, arg ? pos_dtype(kb, n, onumel) : acc_dtype(n), onumel, "acc");
  }
  LStmtList *body = kb_outer_loops(kb, &kb->k->body, c.nouter, c.order, xv->shape, c.xidx, par && !B);
  c.body = body;
  if (!B) {
    instance(kb, &c, ns, nrow);
    return true;
  }
  int bp = 0;
  while (c.order[bp] != c.bdim)
    bp++;
  int64_t S = col_extent(&c, bp), nb = S / B;
  int jb = kb_new_var(kb);
  LStmt *bl = kb_loop(kb, jb, nb);
  bl->parallel = true;
  kb_push(kb, body, bl);
  LIndex jbi = kb_ix_var(jb);
  c.bbase = kb_ix_const(0);
  kb_ix_addmul(kb, &c.bbase, &jbi, B);
  c.bext = B;
  c.body = &bl->body;
  instance(kb, &c, ns, nrow);
  if (S > nb * B) {
    c.bbase = kb_ix_const(nb * B);
    c.bext = S - nb * B;
    c.body = body;
    instance(kb, &c, ns, nrow);
  }
  return true;
}

// ============================================================================
// SCAN: cumsum, cumprod, cummax/cummin (values, indices), logcumsumexp
// ============================================================================
// A ROW kernel of scan nodes over one input shape and dim (fusion gives them no
// epilogue, and stores each). Each row (an index of the other dims) runs its scan dim
// in order, every node's accumulator updated and stored at every step:
//   for o in the other dims [parallel] {            (build_scan, the reference)
//     let acc = identity; (cummax/cummin: let pos = 0)
//     for j in the scan dim { let t = acc op x[o, j]; acc = t; out[o, j] = t }
//   }
// A GPU program runs it as it is (sched_gpu: a thread per row; rows of 1024 steps or
// more on a block each, ir/scan_gpu.c, from the facts LKernel.scan). Where the scan dim is
// not the input's innermost in memory, the CPU runs the column schedule above
// (col_plan: the other dims in memory order, the scan dim after the outer ones): the
// accumulators of the rows in temps of the non-scan shape, swept whole at every j:
//   for o in outer dims [parallel] {
//     for i in inner dims: acc[o, i] = identity
//     for j in the scan dim { for i in inner dims { t = acc[o, i] op x[o, j, i];
//                                                   acc[o, i] = t; out[o, j, i] = t } }
//   }
// (blocks of the first inner dim in parallel when the outer dims are too few). Both
// combine the same terms in the same order: bit-identical.
//
// The steps, in the accumulation dtype (the result's compute dtype; for cummax and
// cummin the input's): cumsum acc + x, cumprod acc * x; logcumsumexp PyTorch's
// _log_add_exp_helper: mn, mx = the smaller and larger of acc and x (x when x is nan),
// then log1p(exp(mn - mx)) + mx, or acc when mn == mx is infinite; cummax (cummin)
// takes x when x >= acc (x <= acc) or x is nan, as PyTorch's cummax_cummin_helper: a
// tie or a later nan moves the index. A values node whose indices node (same op and
// input) is in the kernel is stored by that node's step.

// The indices node of the same op and input as values node n in ns, or NULL.
static const Node *scan_partner(const NodeList *ns, const Node *n) {
  Op want = n->op == OP_CUMMAX ? OP_CUMMAX_INDICES : n->op == OP_CUMMIN ? OP_CUMMIN_INDICES : OP_COUNT;
  const Value *x = n->srcs[0];
  for (int i = 0; i < ns->len && want != OP_COUNT; i++) {
    const Node *m = ns->data[i];
    const Value *y = m->srcs[0];
    if (m->op == want && x->dtype == y->dtype &&
        (x == y || (x->buf && x->buf == y->buf && view_same_elems(x->view, y->view))))
      return m;
  }
  return NULL;
}

static bool scan_has_pos(Op op) { return op == OP_CUMMAX_INDICES || op == OP_CUMMIN_INDICES; }

static bool scan_is_max(Op op) { return op == OP_CUMMAX || op == OP_CUMMAX_INDICES; }

// The dtype node n accumulates in.
static DType scan_dtype(const Node *n) {
  bool ext = n->op == OP_CUMMAX || n->op == OP_CUMMIN || scan_has_pos(n->op);
  return dtype_compute(ext ? n->srcs[0]->dtype : n->out->dtype);
}

static LExpr *scan_identity(KernelBuilder *kb, const Node *n, DType cd) {
  switch (n->op) {
  case OP_CUMSUM: return kb_num(kb, cd, 0, 0);
  case OP_CUMPROD: return kb_num(kb, cd, 1, 1);
  case OP_LOGCUMSUMEXP: return kb_fconst(kb, cd, -INFINITY);
  default: {
    bool mx = scan_is_max(n->op);
    return inf_of(kb, cd, mx, mx);
  }
  }
}

// Where a node's accumulators live: locals (build_scan) or buffers at slot o (the
// column schedule). acc: the accumulator, pos: cummax/cummin's index (-1: none).
typedef struct ScanAcc {
  bool in_buf;
  int acc, pos;
  LIndex o;
} ScanAcc;

static LExpr *acc_get(KernelBuilder *kb, const ScanAcc *a, int which) {
  return a->in_buf ? kb_buf_load(kb, which, a->o) : kb_local_ref(kb, which);
}

static void acc_put(KernelBuilder *kb, LStmtList *into, const ScanAcc *a, int which, LExpr *v) {
  if (a->in_buf)
    kb_buf_store(kb, into, which, a->o, v);
  else
    kb_push(kb, into, kb_set(kb, which, v));
}

// One step of node n with x (in its accumulation dtype) at position j (an i64) into
// `into`; stored at input index idx unless idx is NULL (a GPU scan's combine).
static void scan_update(KernelBuilder *kb, const NodeList *ns, LStmtList *into, const Node *n, const ScanAcc *a,
                        LExpr *x, LExpr *j, const LIndex *idx) {
  DType cd = scan_dtype(n);
  int t;
  switch (n->op) {
  case OP_CUMSUM: case OP_CUMPROD:
    t = kb_let_local(kb, into, kb_arith(kb, n->op == OP_CUMSUM ? OP_ADD : OP_MUL, cd, acc_get(kb, a, a->acc), x));
    break;
  case OP_LOGCUMSUMEXP: {
    int xl = kb_let_local(kb, into, x), al = kb_let_local(kb, into, acc_get(kb, a, a->acc));
    LExpr *xv = kb_local_ref(kb, xl), *av = kb_local_ref(kb, al);
    LExpr *xnan = kb_binary(kb, OP_NE, DT_BOOL, xv, xv);
    int mn = kb_let_local(kb, into, kb_select(kb, xnan, xv, kb_select(kb, kb_binary(kb, OP_LT, DT_BOOL, xv, av), xv, av)));
    int mx = kb_let_local(kb, into, kb_select(kb, xnan, xv, kb_select(kb, kb_binary(kb, OP_LT, DT_BOOL, av, xv), xv, av)));
    LExpr *mnv = kb_local_ref(kb, mn), *mxv = kb_local_ref(kb, mx);
    LExpr *finite = kb_binary(kb, OP_LT, DT_BOOL, kb_unary(kb, OP_ABS, cd, mnv), kb_fconst(kb, cd, INFINITY));
    LExpr *use = kb_binary(kb, OP_LOGICAL_OR, DT_BOOL, kb_binary(kb, OP_NE, DT_BOOL, mnv, mxv), finite);
    LExpr *sum = kb_binary(kb, OP_ADD, cd,
                           kb_unary(kb, OP_LOG1P, cd, kb_unary(kb, OP_EXP, cd, kb_binary(kb, OP_SUB, cd, mnv, mxv))),
                           kb_local_ref(kb, mx));
    t = kb_let_local(kb, into, kb_select(kb, use, sum, kb_local_ref(kb, al)));
    break;
  }
  default: {  // cummax, cummin: values and indices
    bool mx = scan_is_max(n->op);
    int xl = kb_let_local(kb, into, x), al = kb_let_local(kb, into, acc_get(kb, a, a->acc));
    LExpr *xv = kb_local_ref(kb, xl), *av = kb_local_ref(kb, al);
    LExpr *cond = kb_binary(kb, mx ? OP_GE : OP_LE, DT_BOOL, xv, av);
    if (dtype_is_float(cd))
      cond = kb_binary(kb, OP_LOGICAL_OR, DT_BOOL, cond, kb_binary(kb, OP_NE, DT_BOOL, xv, xv));
    int c = kb_let_local(kb, into, cond);
    t = kb_let_local(kb, into, kb_select(kb, kb_local_ref(kb, c), kb_local_ref(kb, xl), kb_local_ref(kb, al)));
    if (scan_has_pos(n->op)) {
      int p = kb_let_local(kb, into, kb_select(kb, kb_local_ref(kb, c), j, acc_get(kb, a, a->pos)));
      acc_put(kb, into, a, a->pos, kb_local_ref(kb, p));
      acc_put(kb, into, a, a->acc, kb_local_ref(kb, t));
      if (!idx)
        return;
      kb_store_node(kb, into, n, idx, kb_local_ref(kb, p));
      for (int i = 0; i < ns->len; i++) {  // the values this step computed
        const Node *v = ns->data[i];
        if (scan_partner(ns, v) == n)
          kb_store_node(kb, into, v, idx, kb_cast(kb, kb_local_ref(kb, t), v->out->dtype));
      }
      return;
    }
    break;
  }
  }
  acc_put(kb, into, a, a->acc, kb_local_ref(kb, t));
  if (idx)
    kb_store_node(kb, into, n, idx, kb_cast(kb, kb_local_ref(kb, t), n->out->dtype));
}

// One step of node n at input index idx (its scan dim's index idx[dim]) into `into`.
static void scan_step(KernelBuilder *kb, const NodeList *ns, LStmtList *into, const Node *n, const ScanAcc *a,
                      const LIndex *idx) {
  LExpr *x = kb_value(kb, n->srcs[0], idx);
  if (n->op == OP_CUMSUM || n->op == OP_CUMPROD)  // dtype=: the input converted to it first
    x = kb_cast(kb, x, n->out->dtype);
  LExpr *j = scan_has_pos(n->op) ? kb_ix_expr(kb, &idx[n->attr.dim]) : NULL;
  scan_update(kb, ns, into, n, a, kb_cast(kb, x, scan_dtype(n)), j, idx);
}

// Each scan node's accumulator buffers in the column schedule: temps of the non-scan
// shape (a values node stored by its partner has none).
static void scan_buffers(KernelBuilder *kb, Col *c, const NodeList *ns, int64_t onumel) {
  for (int i = 0; i < ns->len; i++) {
    const Node *n = ns->data[i];
    c->acc[i] = c->aux[i] = -1;
    if (scan_partner(ns, n))
      continue;
    c->acc[i] = kb_new_temp(kb, scan_dtype(n), onumel, "acc");
    if (scan_has_pos(n->op))
      c->aux[i] = kb_new_temp(kb, DT_I64, onumel, "pos");
  }
}

// The column schedule's passes over the current block: init, then the scan.
static void scan_instance(KernelBuilder *kb, const Col *c, const NodeList *ns, int nrow) {
  LIndex idx[TD_MAX_DIMS];
  LStmtList *in = col_pass(kb, c, false, idx);
  LIndex o = col_slot(kb, c, idx);
  for (int i = 0; i < nrow; i++) {
    const Node *n = ns->data[i];
    if (c->acc[i] < 0)
      continue;
    kb_buf_store(kb, in, c->acc[i], o, scan_identity(kb, n, scan_dtype(n)));
    if (c->aux[i] >= 0)
      kb_buf_store(kb, in, c->aux[i], o, kb_iconst(kb, DT_I64, 0));
  }
  in = col_pass(kb, c, true, idx);
  o = col_slot(kb, c, idx);
  for (int i = 0; i < nrow; i++) {
    if (c->acc[i] < 0)
      continue;
    ScanAcc a = {true, c->acc[i], c->aux[i], o};
    scan_step(kb, ns, in, ns->data[i], &a, idx);
  }
}

// Row by row: the other dims outside (the outermost parallel), the scan dim inside.
static void build_scan(KernelBuilder *kb, const NodeList *ns) {
  const Node *first = ns->data[0];
  const View *xv = &first->srcs[0]->view;
  int dim = first->attr.dim;
  int64_t oshape[TD_MAX_DIMS];
  int no = 0;
  for (int d = 0; d < xv->ndim; d++)
    if (d != dim)
      oshape[no++] = xv->shape[d];
  LIndex oidx[TD_MAX_DIMS], idx[TD_MAX_DIMS];
  LStmtList *body = kb_nest(kb, &kb->k->body, no, oshape, oidx, view_numel(*xv) >= PARALLEL_WORK, NULL);
  idx[0] = kb_ix_const(0);  // a 0-d input's index along its one "dim"
  for (int d = 0, o = 0; d < xv->ndim; d++)
    idx[d] = d == dim ? kb_ix_const(0) : oidx[o++];
  ScanAcc *acc = arena_alloc(&kb->cx->arena, sizeof(ScanAcc) * (size_t)ns->len);
  for (int i = 0; i < ns->len; i++) {
    const Node *n = ns->data[i];
    TD_ASSERT(op_is_scan(n->op) && kb_same_shape(&n->srcs[0]->view, xv) && n->attr.dim == dim);
    acc[i].acc = acc[i].pos = -1;
    if (scan_partner(ns, n))
      continue;
    acc[i].acc = kb_let_local(kb, body, scan_identity(kb, n, scan_dtype(n)));
    if (scan_has_pos(n->op))
      acc[i].pos = kb_let_local(kb, body, kb_iconst(kb, DT_I64, 0));
  }
  LStmtList *in = body;
  if (xv->ndim > 0)
    in = kb_step_loop(kb, body, xv->shape[dim], kb_ix_const(0), 1, false, &idx[dim]);
  for (int i = 0; i < ns->len; i++)
    if (acc[i].acc >= 0)
      scan_step(kb, ns, in, ns->data[i], &acc[i], idx);
  if (kb->cpu || xv->ndim == 0)
    return;
  // the GPU's facts (LScan): the accumulators and how two runs' states combine
  LScan *sc = arena_alloc(&kb->cx->arena, sizeof *sc);
  *sc = (LScan){.jloop = body->data[body->len - 1]};
  for (int i = 0; i < ns->len; i++) {
    if (acc[i].acc < 0)
      continue;
    int w[2] = {acc[i].acc, acc[i].pos};
    ScanAcc other = {false, -1, -1, {0}};
    for (int h = 0; h < 2 && w[h] >= 0; h++) {
      if (sc->nacc == LSCAN_MAX_ACC)
        return;  // (no facts: a thread per row)
      int o = kb_new_local(kb, kb->k->locals.data[w[h]]);
      sc->acc[sc->nacc] = w[h], sc->other[sc->nacc++] = o;
      *(h ? &other.pos : &other.acc) = o;
    }
    LExpr *j = other.pos >= 0 ? kb_local_ref(kb, other.pos) : NULL;
    scan_update(kb, ns, &sc->combine, ns->data[i], &acc[i], kb_local_ref(kb, other.acc), j, NULL);
  }
  kb->k->scan = sc;
}

void row_build(KernelBuilder *kb, const NodeList *ns) {
  if (op_is_scan(ns->data[0]->op)) {  // a GPU program runs a scan row by row
    if (kb->naive || !kb->cpu || !build_col(kb, ns))
      build_scan(kb, ns);
    return;
  }
  KbCuts cuts;
  const Node *first = ns->data[0];
  bool cut = row_cuts(kb, ns, &first->srcs[0]->view, first->attr.dims, &cuts);
  if (kb->naive || cut || !build_col(kb, ns))
    build_row(kb, ns, cut ? &cuts : NULL);
}
