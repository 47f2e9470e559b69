// ir/recur_build.c: a RECUR kernel (a recurrence ir/recur.c found) as loop IR:
//
//   for each row m of the state (parallel when the work is worth it)   [S's leading dims]
//     for n < N: h[n] = init(m, n)
//     for t < T:
//       for n < N:
//         s = F_template(m, n) at step t   (its `prev` read is h[n]; the inputs it reads
//                                            move by their RecurLeaf per step)
//         h[n] = s
//         p[n] = s * c_t[n]
//       acc = 0; for n < N: acc = acc + p[n]
//       stack[.., t, ..] = acc      (t along the stack's dim; the row's indices elsewhere)
//         or, with a tail (elementwise nodes after the stack, ir/recur.c), the tail's
//         value there computed from acc: tail[.., t, ..] = acc + u[.., t, ..] * D[..]
//
// The parts of F that do not change from step to step and cost a transcendental op are
// computed once per row (in the initial loop) into the scratch after h and p. h and p
// are the thread's scratch (2N elements and those, ir/loop.h's Scratch: a row's state
// lives only through its iteration of the parallel loop), so the steps store no state
// in memory the program allocates, and the loop over n, holding no reduction, vectorizes. The template's
// expression is built once, by kb_value with KernelBuilder.recur set: a leaf of the
// template read at step var t is read at its step-1 index moved by (t - 1) steps.
// Results: each S_t element is computed by the same expression as the step kernels
// did; acc adds the N products in order (sched_cpu may split it into lanes, as every
// reduction), where the unrolled form's matmul summed them in its tile's order: the
// outputs agree to rounding, not bit for bit.
#include "ir/kernel.h"

enum { RECUR_MAX_LIFTED = 8 };  // step-invariant parts of a step kept per row, at most

// Lifting the template's step-invariant costly parts (mamba's -exp(A_log)[d, n]) out of
// the steps: each is computed once per row, in the initial loop, into the row's scratch
// after h and p, and the steps load it.
typedef struct Lift {
  KernelBuilder *kb;
  int tv, nv, nv0;  // the step var, the steps' n var, the initial loop's n var
  int harg;         // the scratch's arg
  int h;            // the scratch (program buffer)
  int64_t N;
  DType dt;
  LStmtList *init;  // the initial loop's body
  int n;            // parts lifted
} Lift;

static bool ix_reads(const LIndex *x, int var) {
  for (int t = 0; t < x->nterms; t++)
    if (x->var[t] == var && x->coef[t])
      return true;
  return false;
}

// Whether e's value may change from step to step (or cannot be moved at all).
static bool moves(const Lift *L, const LExpr *e) {
  if (!e)
    return false;
  switch (e->kind) {
  case LX_CONST: return false;
  case LX_VAR: return e->var == L->tv;
  case LX_LOAD: return e->buf == L->harg || ix_reads(&e->idx, L->tv) || (e->idx.dyn && moves(L, e->idx.dyn));
  case LX_UNARY: case LX_BINARY: case LX_SELECT: case LX_CAST: case LX_BITCAST: case LX_FMA:
    return e->lanes != 1 || moves(L, e->a) || moves(L, e->b) || moves(L, e->c);
  default: return true;  // locals, checked indices (they may raise), vector forms
  }
}

static bool costly(const LExpr *e) {
  if (!e)
    return false;
  if ((e->kind == LX_UNARY || e->kind == LX_BINARY) && (op_is_transcendental(e->op) || (op_flags(e->op) & OF_COMPOSITE)))
    return true;
  return costly(e->a) || costly(e->b) || costly(e->c);
}

// e with loop var `from` read as `to` (a copy).
static LExpr *subst(Ctx *cx, const LExpr *e, int from, int to) {
  if (!e)
    return NULL;
  LExpr *c = arena_alloc(&cx->arena, sizeof *c);
  *c = *e;
  if (c->kind == LX_VAR && c->var == from)
    c->var = to;
  for (int t = 0; t < c->idx.nterms; t++)
    if (c->idx.var[t] == from)
      c->idx.var[t] = to;
  c->idx.dyn = subst(cx, e->idx.dyn, from, to);
  c->a = subst(cx, e->a, from, to);
  c->b = subst(cx, e->b, from, to);
  c->c = subst(cx, e->c, from, to);
  return c;
}

static LExpr *lift(Lift *L, LExpr *e) {
  if (!e)
    return NULL;
  if (e->dt == L->dt && !moves(L, e) && costly(e) && L->n < RECUR_MAX_LIFTED) {
    int64_t at = (2 + L->n++) * L->N;
    LIndex i0 = kb_ix_var(L->nv0), i = kb_ix_var(L->nv);
    i0.base = i.base = at;
    kb_buf_store(L->kb, L->init, L->h, i0, subst(L->kb->cx, e, L->nv, L->nv0));
    return kb_buf_load(L->kb, L->h, i);
  }
  switch (e->kind) {
  case LX_UNARY: case LX_BINARY: case LX_SELECT: case LX_CAST: case LX_BITCAST: case LX_FMA:
    e->a = lift(L, e->a);
    e->b = lift(L, e->b);
    e->c = lift(L, e->c);
    return e;
  default: return e;
  }
}

void recur_build(KernelBuilder *kb, const Recur *r) {
  const Node *S = r->state, *Y = r->out;
  const View *sv = &S->out->view;
  int sd = sv->ndim;
  int64_t N = sv->shape[sd - 1], M = view_numel(*sv) / (N ? N : 1);
  DType dt = S->out->dtype, cd = dtype_compute(dt);
  if (!M || !N)
    return;
  // per thread: the row's state h[0..N) and its products with c_t, p[N..2N)
  int h = kb_new_temp(kb, dt, 2 * N, "state");
  kb->p->bufs.data[h].scratch = true;
  LIndex idx[TD_MAX_DIMS];
  bool par = M >= 2 && M * N * r->T >= PARALLEL_WORK;
  LStmtList *row = kb_nest(kb, &kb->k->body, sd - 1, sv->shape, idx, par, NULL);
  // the initial state
  int nv0 = kb_new_var(kb);
  LStmt *l0 = kb_loop(kb, nv0, N);
  kb_push(kb, row, l0);
  idx[sd - 1] = kb_ix_var(nv0);
  kb_buf_store(kb, &l0->body, h, idx[sd - 1], kb_value(kb, r->init, idx));
  // the steps
  int tv = kb_new_var(kb);
  LStmt *tl = kb_loop(kb, tv, r->T);
  kb_push(kb, row, tl);
  int nv = kb_new_var(kb);
  LStmt *nl = kb_loop(kb, nv, N);
  kb_push(kb, &tl->body, nl);
  idx[sd - 1] = kb_ix_var(nv);
  LIndex pat = idx[sd - 1];
  pat.base += N;
  int prev = kb_let_local(kb, &nl->body, kb_cast(kb, kb_buf_load(kb, h, idx[sd - 1]), cd));
  kb_local_at(kb, r->first, prev, idx);
  kb->recur = r;
  kb->recur_var = tv;
  LExpr *sx = kb_cast(kb, kb_node_expr(kb, S, idx), cd);
  Lift L = {.kb = kb, .tv = tv, .nv = nv, .nv0 = nv0, .harg = kb_arg(kb, h, true, true), .h = h, .N = N, .dt = dt,
            .init = &l0->body};
  sx = lift(&L, sx);
  kb->p->bufs.data[h].numel = (2 + L.n) * N;
  int s = kb_let_local(kb, &nl->body, sx);
  kb_buf_store(kb, &nl->body, h, idx[sd - 1], kb_local_ref(kb, s));
  LIndex cidx[2] = {idx[sd - 1], kb_ix_const(0)};  // c_t: [N, 1] or [N]
  LExpr *c = kb_cast(kb, kb_value(kb, Y->srcs[1], cidx), cd);
  kb->recur = NULL;
  kb_buf_store(kb, &nl->body, h, pat, kb_binary(kb, OP_MUL, cd, kb_local_ref(kb, s), c));
  // Y_t's element m (the products summed in order, after the loop that computes them,
  // so that loop has no reduction in it and vectorizes), in the stack
  int acc = kb_new_local(kb, cd);
  kb_push(kb, &tl->body, kb_let(kb, acc, kb_fconst(kb, cd, 0)));
  int kv = kb_new_var(kb);
  LStmt *kl = kb_loop(kb, kv, N);
  kb_push(kb, &tl->body, kl);
  LIndex kat = kb_ix_var(kv);
  kat.base += N;
  LExpr *term = kb_cast(kb, kb_buf_load(kb, h, kat), cd);
  kb_push(kb, &kl->body, kb_set(kb, acc, kb_binary(kb, OP_ADD, cd, kb_local_ref(kb, acc), term)));
  // the stack's index: t along its dim, the state's row dims (size-1 dims aside) in order
  const Node *j = r->stack;
  const View *ov = &j->out->view;
  LIndex oidx[TD_MAX_DIMS];
  for (int d = 0, e = 0; d < ov->ndim; d++) {
    if (d == j->attr.dim) {
      oidx[d] = kb_ix_var(tv);
      continue;
    }
    oidx[d] = kb_ix_const(0);
    if (ov->shape[d] == 1)
      continue;
    while (sv->shape[e] == 1)
      e++;
    oidx[d] = idx[e++];
  }
  if (!r->tail) {
    kb_store_node(kb, &tl->body, j, oidx, kb_local_ref(kb, acc));
    return;
  }
  // the elementwise tail after the stack (ir/recur.c's take_tail), at the same element
  kb_local_at(kb, j, acc, oidx);
  kb_store_node(kb, &tl->body, r->tail, oidx, kb_node_expr(kb, r->tail, oidx));
}
