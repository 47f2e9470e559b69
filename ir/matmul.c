// ir/matmul.c: the kernel builder's MATMUL kernels (ir/kernel.h): out[o] = sum_k
// a[..] * b[..] with PyTorch's 1-D / 2-D / batched rules, then elementwise epilogues
// at the same index. A CPU program's matmuls go to ir/gemm.c (its FMA tiles); a GPU
// program's (and kernel_build_naive's) to the plain nest, one element at a time, whose
// facts ir/matmul_gpu.c turns into GPU tiles. Whichever builds it, the kernel's LMatmul
// (LKernel.mm, ir/loop.h) says how: the shape always, and for the plain nest every loop
// and expression by role.
//
// Invariants: every output adds its k terms one at a time in order from 0 in the
// plain nest; the operands' loads come first in the kernel's args; LKernel.mm
// describes the body exactly as built.
#include "ir/kernel.h"

#include <string.h>

void kb_matmul_dims(const Node *n, int *rd, int *jd) {
  int on = n->out->view.ndim;
  if (n->attr.nk) {  // a contraction: the last output dim only a walks, the last only b walks
    bool walks[2][TD_MAX_DIMS] = {{false}};
    for (int w = 0; w < 2; w++) {
      const View *v = &n->srcs[w]->view;
      for (int d = 0; d < v->ndim; d++)
        if (n->attr.role[w][d] >= 0 && v->shape[d] == n->out->view.shape[n->attr.role[w][d]])
          walks[w][n->attr.role[w][d]] = true;
    }
    *rd = *jd = -1;
    for (int t = 0; t < on; t++) {
      if (walks[0][t] && !walks[1][t])
        *rd = t;
      if (walks[1][t] && !walks[0][t])
        *jd = t;
    }
    return;
  }
  *jd = n->srcs[1]->view.ndim >= 2 ? on - 1 : -1;
  *rd = n->srcs[0]->view.ndim >= 2 ? (*jd >= 0 ? on - 2 : on - 1) : -1;
}

void kb_matmul_indices(const Node *n, const LIndex *o, const LIndex *kv, LIndex *ai, LIndex *bi) {
  const View *a = &n->srcs[0]->view, *b = &n->srcs[1]->view;
  int da = a->ndim, db = b->ndim, on = n->out->view.ndim;
  if (n->attr.nk) {  // a contraction: each dim by its role
    for (int w = 0; w < 2; w++) {
      const View *v = w ? b : a;
      LIndex *x = w ? bi : ai;
      for (int d = 0; d < v->ndim; d++) {
        int r = n->attr.role[w][d];
        x[d] = r < 0 ? kv[-1 - r] : v->shape[d] == 1 ? kb_ix_const(0) : o[r];
      }
    }
    return;
  }
  if (da == 1)
    ai[0] = kv[0];
  if (db == 1)
    bi[0] = kv[0];
  if (da >= 3 && db <= 2) {  // a's leading dims are the output's
    for (int i = 0; i < da - 1; i++)
      ai[i] = o[i];
    ai[da - 1] = kv[0];
    if (db == 2)
      bi[0] = kv[0], bi[1] = o[on - 1];
    return;
  }
  if (db >= 3 && da <= 2) {
    for (int i = 0; i < db - 2; i++)
      bi[i] = o[i];
    bi[db - 2] = kv[0];
    bi[db - 1] = o[on - 1];
    if (da == 2)
      ai[0] = o[on - 2], ai[1] = kv[0];
    return;
  }
  if (da <= 2 && db <= 2) {
    if (da == 2)
      ai[0] = o[0], ai[1] = kv[0];
    if (db == 2)
      bi[0] = kv[0], bi[1] = o[on - 1];
    return;
  }
  // batched: batch dims broadcast from the right
  int nbt = on - 2;
  for (int i = 0; i < da - 2; i++)
    ai[i] = a->shape[i] == 1 ? kb_ix_const(0) : o[i + nbt - (da - 2)];
  for (int i = 0; i < db - 2; i++)
    bi[i] = b->shape[i] == 1 ? kb_ix_const(0) : o[i + nbt - (db - 2)];
  ai[da - 2] = o[nbt], ai[da - 1] = kv[0];
  bi[db - 2] = kv[0], bi[db - 1] = o[nbt + 1];
}

// The plain nest (LM_DOT): for each output element, acc = sum over k in order, then
// the stores. Fills the LM_DOT fields of kb->k->mm (ir/loop.h) as it builds them.
static void build_matmul(KernelBuilder *kb, const NodeList *ns) {
  const Node *mm = ns->data[0];
  LMatmul *m = kb->k->mm;
  const View *ov = &mm->out->view;
  int64_t kn[TD_MAX_DIMS], K = matmul_k(mm, kn);
  int nk = mm->attr.nk;
  DType od = mm->out->dtype, cd = dtype_compute(od);
  LIndex o[TD_MAX_DIMS];
  LStmtList *body = kb_nest(kb, &kb->k->body, ov->ndim, ov->shape, o, view_numel(*ov) * (K ? K : 1) >= PARALLEL_WORK,
                            m->outer);
  for (int d = 0; d < ov->ndim; d++)
    if (ov->shape[d] != 1) {
      if (d == m->rdim)
        m->iouter = m->nouter;
      if (d == m->jdim)
        m->jouter = m->nouter;
      m->odim[m->nouter++] = d;
    }
  int acc = kb_new_local(kb, cd);
  LExpr *init = kb_num(kb, cd, 0, 0);
  kb_push(kb, body, kb_let(kb, acc, init));
  LIndex kv[TD_MAX_DIMS] = {kb_ix_const(0)};
  LStmtList *kbody = body;
  LStmt *kl = NULL;
  if (nk) {  // a contraction: a loop per dim k spans, in order (no single k loop: kloop stays NULL)
    for (int q = 0; q < nk; q++)
      kbody = kb_step_loop(kb, kbody, kn[q], kb_ix_const(0), 1, false, &kv[q]);
  } else if (K != 1) {
    int v = kb_new_var(kb);
    kl = kb_loop(kb, v, K);
    kb_push(kb, body, kl);
    kbody = &kl->body;
    kv[0] = kb_ix_var(v);
  }
  LIndex ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  kb_matmul_indices(mm, o, kv, ai, bi);
  LExpr *x = kb_cast(kb, kb_value(kb, mm->srcs[0], ai), cd), *y = kb_cast(kb, kb_value(kb, mm->srcs[1], bi), cd);
  kb_push(kb, kbody, kb_set(kb, acc, kb_arith(kb, OP_ADD, cd, kb_local_ref(kb, acc), kb_arith(kb, OP_MUL, cd, x, y))));
  m->form = LM_DOT;
  m->body = body;
  m->acc = acc;
  m->init = init;
  m->kloop = kl;
  m->a = x;
  m->b = y;
  m->epi = body->len;
  kb_local_at(kb, mm, acc, o);
  if (mm->mode == NM_STORED)
    kb_store_node(kb, body, mm, o, kb_local_ref(kb, acc));
  for (int i = 1; i < ns->len; i++)
    TD_ASSERT(ns->data[i]->op == OP_STORE ||
              (op_is_elementwise(ns->data[i]->op) && kb_same_shape(&ns->data[i]->out->view, ov)));
  kb_store_epilogues(kb, body, ns, o);
}

// A store epilogue (ir/fuse.c's store_fits: target[o] = value[o], or target[o] op=
// value[o], the target the kernel's last result): stores it at o, and the target's node
// then reads as the stored value there (until kb_store_epilogues drops the binding).
static void store_epilogue(KernelBuilder *kb, LStmtList *into, const Node *st, const LIndex *o) {
  const Value *t = st->srcs[0], *v = st->srcs[1];
  const Node *e = t->buf->producer;
  LExpr *val = kb_value(kb, v, o);
  if (st->attr.aug != OP_COUNT) {
    Value *both[2] = {(Value *)t, (Value *)v};
    DType cd = dtype_compute(kb_result_type(both, 2));
    val = kb_arith(kb, (Op)st->attr.aug, cd, kb_cast(kb, kb_value(kb, t, o), cd), kb_cast(kb, val, cd));
  }
  int l = kb_let_local(kb, into, kb_cast(kb, val, t->dtype));
  int buf = kb->buf_of[t->buf->id];
  TD_ASSERT(buf >= 0);
  kb_push(kb, into, kb_store_stmt(kb, kb_arg(kb, buf, false, true), kb_view_index(kb, &t->view, o), kb_local_ref(kb, l)));
  kb_local_at(kb, e, l, o);
}

void kb_store_epilogues(KernelBuilder *kb, LStmtList *into, const NodeList *ns, const LIndex *o) {
  for (int i = 1; i < ns->len; i++)
    if (ns->data[i]->op == OP_STORE)
      store_epilogue(kb, into, ns->data[i], o);
    else
      kb_store_node(kb, into, ns->data[i], o, kb_node_expr(kb, ns->data[i], o));
  for (int i = 1; i < ns->len; i++)  // (the bindings the store epilogues made)
    if (ns->data[i]->op == OP_STORE)
      kb->lv[ns->data[i]->srcs[0]->buf->producer->id].kind = LV_NONE;
}

// An MLP chain not built by ir/gemm_chain.c (kernel_build_naive's): the hidden into a temp
// of its own by the plain nest, then the second matmul's (its LMatmul the second's).
static void chain_unfused(KernelBuilder *kb, const NodeList *ns) {
  Node *h = (Node *)ns->data[0];
  NodeMode mode = h->mode;
  kb->buf_of[h->out->buf->id] = kb_new_temp(kb, h->out->dtype, view_numel(h->out->view), "hidden");
  h->mode = NM_STORED;
  build_matmul(kb, &(NodeList){.data = (const Node **)&ns->data[0], .len = 1});
  kb->lv[h->id].kind = LV_NONE;
  build_matmul(kb, &(NodeList){.data = (const Node **)&ns->data[1], .len = ns->len - 1});
  h->mode = mode;
}

void matmul_build(KernelBuilder *kb, const NodeList *ns) {
  bool chain = ns->len > 1 && ns->data[1]->op == OP_MATMUL;  // (ir/fuse.c's chain_of)
  const Node *mm = ns->data[chain ? 1 : 0];
  TD_ASSERT(mm->op == OP_MATMUL && ns->data[0]->op == OP_MATMUL);
  const View *ov = &mm->out->view;
  LMatmul *m = arena_alloc(&kb->cx->arena, sizeof *m);
  m->dt = dtype_compute(mm->out->dtype);
  kb_matmul_dims(mm, &m->rdim, &m->jdim);
  m->M = m->rdim >= 0 ? ov->shape[m->rdim] : 1;
  m->N = m->jdim >= 0 ? ov->shape[m->jdim] : 1;
  m->K = matmul_k(mm, NULL);
  m->batch = 1;
  for (int d = 0; d < ov->ndim; d++)
    if (d != m->rdim && d != m->jdim)
      m->batch *= ov->shape[d];
  m->iouter = m->jouter = m->acc = m->acc_buf = -1;
  kb->k->mm = m;
  // on a CPU every matmul with arithmetic to do goes through ir/gemm.c; a GPU program
  // gets the plain nest, whose facts ir/matmul_gpu.c tiles
  if (chain) {
    if (gemm_chain_build(kb, ns))
      m->form = LM_GEMM;
    else
      chain_unfused(kb, ns);
  } else if (!kb->naive && kb->cpu && gemm_build(kb, ns))
    m->form = LM_GEMM;
  else
    build_matmul(kb, ns);
}
