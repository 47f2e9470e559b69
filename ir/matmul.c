// ir/matmul.c: the kernel builder's MATMUL kernels (ir/kernel.h): out[o] = sum_k
// a[..] * b[..] with PyTorch's 1-D / 2-D / batched rules, then elementwise epilogues
// at the same index. A CPU program's matmuls go to ir/gemm.c (its FMA tiles); a GPU
// program's to the row schedule below when it makes the innermost loop walk memory
// with unit stride, else (and in kernel_build_naive) to the plain nest, one element
// at a time. Whichever builds it, the kernel's LMatmul (LKernel.mm, ir/loop.h) says
// how: the shape always, and for the plain nest every loop and expression by role.
//
// Invariants: every output adds its k terms one at a time in order from 0 in the
// plain nest and in the row schedule (bit-identical results); the operands' loads come
// first in the kernel's args; LKernel.mm describes the body exactly as built.
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
  for (int i = 1; i < ns->len; i++) {
    const Node *e = ns->data[i];
    TD_ASSERT(op_is_elementwise(e->op) && kb_same_shape(&e->out->view, ov));
    kb_store_node(kb, body, e, o, kb_node_expr(kb, e, o));
  }
}

// Row schedule, register and cache blocked. The innermost loop walks the output's
// last dim j (unit stride in the accumulator and, for a row-major b, in b) instead of
// k, and the output is accumulated in place in a buffer acc of the accumulation dtype:
//   for batch, i0 in 0..M step MC [parallel] {       // macro rows: their acc tile stays in L2
//     for j0 in 0..N step JT {                       // column tile: whole rows unless N is large
//       for i in i0..i0+MC step R, j: acc[i+r, j0+j] = 0              (every r < R)
//       for kc in 0..K step KC {                     // k block: its KC x JT block of b stays in L2
//         for i in i0..i0+MC step R {                // R rows: their R x JT block of acc stays in L1
//           for k0 in kc..kc+KC step U {
//             let h[r][u] = a[i+r, k0+u]                               (every r < R, u < U)
//             for j {
//               let w[u] = b[k0+u, j0+j]                               (every u < U)
//               acc[i+r, j0+j] = (..(acc[i+r, j0+j] + h[r][0] * w[0]) + ..) + h[r][U-1] * w[U-1]
//             }
//           }
//           (when U does not divide KC: one more step with the KC % U terms left)
//       } }
//       for i in i0..i0+MC step R, j: out[i+r, j0+j] = acc[i+r, j0+j]; epilogues there
//   } }
// Each remainder (M % MC rows, then M % R rows; N % JT columns; K % KC terms) gets a
// nest of its own. Each w loaded feeds R products, and acc is loaded and stored once
// per U of them. Every output still adds its k terms one at a time in order from 0,
// each sum rounded to the accumulation dtype: bit-identical to build_matmul.
// For a matrix @ vector the roles turn (a walks j, the vector's elements are hoisted);
// R rows are blocked only when the walking operand does not read the row dim.
// acc is the matmul's own buffer when it is stored in the accumulation dtype, else an
// epilogue's buffer of that dtype (updated in place by the last pass), else a temp of
// the whole output's size (blocks of a parallel loop never share it). With few row
// blocks the column tiles, made smaller, are the parallel loop instead (MC = M).
// The sizes were measured on 1024^2 and 256x2048x4096 f32 matmuls (48 KiB L1d, 2 MiB
// L2): JT tiles narrower than the row make b's rows start 4 KiB apart and fight over
// cache sets; k blocks of 128-256 rows keep b in L2; R x U from 4x4 up to 8x4 all
// keep the vector units busy, 4x4 keeps the least code.
enum {
  MM_R = 4,               // rows per block: each element of b loaded feeds R products
  MM_U = 4,               // k terms per pass over a block: acc moves once per U products
  MM_MC = 64,             // at most this many rows per macro block
  MM_JT = 1024,           // columns per tile when N >= 2 * MM_JT (else one tile)
  MM_PANEL = 512 * 1024,  // bytes of the KC x JT block of b a k block reads (kept in L2)
};

typedef struct MMRows {
  const NodeList *ns;
  DType cd;               // the accumulation dtype
  bool bwalks;            // b walks j (a's element is hoisted), else a walks j
  int acc;                // the accumulator buffer
  const Node *own;        // the node whose buffer acc is, or NULL (a temp)
  View cv;                // the output's contiguous View (acc's index)
  int rd;                 // the row dim blocked by MM_R (the walking operand does not read it), or -1
  int64_t K, N, jt, kc;   // the k extent, the j extent, the column tile, the k block
  LIndex o[TD_MAX_DIMS];  // the outer loops' indices (rd, j and size-1 dims: 0)
} MMRows;

// One step of U = nu k terms, from k0, for the nr rows o[0..nr) of a block.
static void mm_kstep(KernelBuilder *kb, const MMRows *m, LStmtList *into, LIndex (*o)[TD_MAX_DIMS], int nr, LIndex k0,
                     int nu, LIndex jbase, int64_t jext) {
  const Node *mm = m->ns->data[0];
  const Value *hold = mm->srcs[m->bwalks ? 0 : 1], *walk = mm->srcs[m->bwalks ? 1 : 0];
  int on = mm->out->view.ndim;
  LIndex ai[TD_MAX_DIMS], bi[TD_MAX_DIMS], kv[MM_U], j;
  int h[MM_R][MM_U], w[MM_U];
  for (int u = 0; u < nu; u++)
    kv[u] = k0, kv[u].base += u;
  for (int r = 0; r < nr; r++)
    for (int u = 0; u < nu; u++) {
      o[r][on - 1] = kb_ix_const(0);  // the hoisted operand does not read it
      kb_matmul_indices(mm, o[r], &kv[u], ai, bi);
      h[r][u] = kb_let_local(kb, into, kb_cast(kb, kb_value(kb, hold, m->bwalks ? ai : bi), m->cd));
    }
  LStmtList *in = kb_step_loop(kb, into, jext, jbase, 1, false, &j);
  for (int r = 0; r < nr; r++)
    o[r][on - 1] = j;
  for (int u = 0; u < nu; u++) {
    kb_matmul_indices(mm, o[0], &kv[u], ai, bi);
    w[u] = kb_let_local(kb, in, kb_cast(kb, kb_value(kb, walk, m->bwalks ? bi : ai), m->cd));
  }
  for (int r = 0; r < nr; r++) {
    LIndex oi = kb_view_index(kb, &m->cv, o[r]);
    LExpr *s = kb_buf_load(kb, m->acc, oi);
    for (int u = 0; u < nu; u++) {
      LExpr *x = kb_local_ref(kb, m->bwalks ? h[r][u] : w[u]), *y = kb_local_ref(kb, m->bwalks ? w[u] : h[r][u]);
      s = kb_arith(kb, OP_ADD, m->cd, s, kb_arith(kb, OP_MUL, m->cd, x, y));
    }
    kb_buf_store(kb, in, m->acc, oi, s);
  }
}

// What a pass over a block does: zero acc, add k terms kbase .. kbase + kext, or
// store the results and epilogues.
typedef enum { MM_ZERO, MM_ADD, MM_FINAL } MMPass;

// One pass over the block of nr rows from row (dim rd) and columns jbase + 0..jext.
static void mm_block(KernelBuilder *kb, const MMRows *m, LStmtList *into, MMPass pass, LIndex row, int nr, LIndex jbase,
                     int64_t jext, LIndex kbase, int64_t kext) {
  const Node *mm = m->ns->data[0];
  const View *ov = &mm->out->view;
  int on = ov->ndim;
  LIndex o[MM_R][TD_MAX_DIMS], j, k0;
  for (int r = 0; r < nr; r++) {
    memcpy(o[r], m->o, sizeof o[r]);
    if (m->rd >= 0)
      o[r][m->rd] = row, o[r][m->rd].base += r;
  }
  if (pass == MM_ADD) {
    if (kext >= MM_U)
      mm_kstep(kb, m, kb_step_loop(kb, into, kext / MM_U, kbase, MM_U, false, &k0), o, nr, k0, MM_U, jbase, jext);
    k0 = kbase;
    k0.base += kext - kext % MM_U;
    if (kext % MM_U)
      mm_kstep(kb, m, into, o, nr, k0, (int)(kext % MM_U), jbase, jext);
    return;
  }
  LStmtList *in = kb_step_loop(kb, into, jext, jbase, 1, false, &j);
  for (int r = 0; r < nr; r++) {
    o[r][on - 1] = j;
    LIndex oi = kb_view_index(kb, &m->cv, o[r]);
    if (pass == MM_ZERO) {
      kb_buf_store(kb, in, m->acc, oi, kb_num(kb, m->cd, 0, 0));
      continue;
    }
    int l = kb_let_local(kb, in, kb_buf_load(kb, m->acc, oi));
    kb_local_at(kb, mm, l, o[r]);
    if (mm->mode == NM_STORED && m->own != mm)
      kb_store_node(kb, in, mm, o[r], kb_local_ref(kb, l));
    for (int i = 1; i < m->ns->len; i++) {
      const Node *e = m->ns->data[i];
      TD_ASSERT(op_is_elementwise(e->op) && kb_same_shape(&e->out->view, ov));
      kb_store_node(kb, in, e, o[r], kb_node_expr(kb, e, o[r]));
    }
  }
}

// One pass over rows row .. row + nrows (of dim rd; one row without it) of the column
// tile jbase + 0..jext: blocks of MM_R rows, then the rest.
static void mm_rows(KernelBuilder *kb, const MMRows *m, LStmtList *into, MMPass pass, LIndex row, int64_t nrows,
                    LIndex jbase, int64_t jext, LIndex kbase, int64_t kext) {
  int64_t R = m->rd >= 0 ? MM_R : 1, nb = nrows / R;
  LIndex at;
  if (nb)
    mm_block(kb, m, kb_step_loop(kb, into, nb, row, R, false, &at), pass, at, (int)R, jbase, jext, kbase, kext);
  at = row;
  at.base += nb * R;
  if (nrows % R)
    mm_block(kb, m, into, pass, at, (int)(nrows % R), jbase, jext, kbase, kext);
}

// Rows row .. row + nrows of the column tile jbase + 0..jext, whole: zero, k blocks of
// m->kc terms (then the rest), results.
static void mm_tile(KernelBuilder *kb, const MMRows *m, LStmtList *into, LIndex row, int64_t nrows, LIndex jbase,
                    int64_t jext) {
  LIndex none = kb_ix_const(0), k0;
  int64_t nk = m->K / m->kc;
  mm_rows(kb, m, into, MM_ZERO, row, nrows, jbase, jext, none, 0);
  if (nk)
    mm_rows(kb, m, kb_step_loop(kb, into, nk, none, m->kc, false, &k0), MM_ADD, row, nrows, jbase, jext, k0, m->kc);
  if (m->K % m->kc)
    mm_rows(kb, m, into, MM_ADD, row, nrows, jbase, jext, kb_ix_const(nk * m->kc), m->K % m->kc);
  if (!(m->own == m->ns->data[0] && m->ns->len == 1))  // else the result is in place
    mm_rows(kb, m, into, MM_FINAL, row, nrows, jbase, jext, none, 0);
}

// Rows row .. row + nrows, every column: tiles of m->jt columns, then the rest.
static void mm_macro(KernelBuilder *kb, const MMRows *m, LStmtList *into, LIndex row, int64_t nrows, bool par) {
  int64_t nt = m->N / m->jt;
  LIndex j0;
  if (nt)
    mm_tile(kb, m, kb_step_loop(kb, into, nt, kb_ix_const(0), m->jt, par && nt > 1, &j0), row, nrows, j0, m->jt);
  if (m->N % m->jt)
    mm_tile(kb, m, into, row, nrows, kb_ix_const(nt * m->jt), m->N % m->jt);
}

// Builds the row schedule when it makes the innermost loop walk memory with unit
// stride in more operands than build_matmul's k loop does (and sets LMatmul.acc_buf);
// false: not built.
static bool build_matmul_rows(KernelBuilder *kb, const NodeList *ns) {
  const Node *mm = ns->data[0];
  const View *ov = &mm->out->view, *av = &mm->srcs[0]->view, *bv = &mm->srcs[1]->view;
  int on = ov->ndim;
  int64_t K = av->shape[av->ndim - 1];
  if (mm->attr.nk || on == 0 || K <= 1 || ov->shape[on - 1] <= 1 || view_numel(*ov) == 0)
    return false;
  int64_t N = ov->shape[on - 1];
  // which operand walks j, and each operand's strides along j, k and the row dim
  LIndex o[TD_MAX_DIMS], ai[TD_MAX_DIMS], bi[TD_MAX_DIMS];
  for (int d = 0; d < on; d++)
    o[d] = ov->shape[d] == 1 ? kb_ix_const(0) : kb_ix_var(PROBE_VAR + d);
  LIndex kp = kb_ix_var(PROBE_VAR + on);
  kb_matmul_indices(mm, o, &kp, ai, bi);
  LIndex ia = kb_view_index(kb, av, ai), ib = kb_view_index(kb, bv, bi);
  int64_t aj = kb_ix_coef(&ia, PROBE_VAR + on - 1), bj = kb_ix_coef(&ib, PROBE_VAR + on - 1);
  int64_t ak = kb_ix_coef(&ia, PROBE_VAR + on), bk = kb_ix_coef(&ib, PROBE_VAR + on);
  if ((aj != 0) == (bj != 0))
    return false;
  int strided_k = (kb_iabs(ak) > 1) + (kb_iabs(bk) > 1), strided_j = kb_iabs(aj ? aj : bj) > 1;
  if (strided_j >= strided_k)
    return false;
  kb_value(kb, mm->srcs[0], ai);  // the operands come first in the kernel's args
  kb_value(kb, mm->srcs[1], bi);
  MMRows m = {.ns = ns, .cd = dtype_compute(mm->out->dtype), .bwalks = bj != 0, .rd = -1, .K = K, .N = N};
  if (mm->mode == NM_STORED && mm->out->dtype == m.cd)
    m.own = mm;
  for (int i = 1; i < ns->len && !m.own; i++)
    if (ns->data[i]->out->dtype == m.cd)
      m.own = ns->data[i];
  m.acc = m.own ? kb->buf_of[m.own->out->buf->id] : kb_new_temp(kb, m.cd, view_numel(*ov), "acc");
  TD_ASSERT(m.acc >= 0);
  kb->k->mm->acc_buf = m.acc;
  m.cv = view_contiguous(on, ov->shape);
  if (on >= 2 && ov->shape[on - 2] > 1 && !kb_ix_coef(m.bwalks ? &ib : &ia, PROBE_VAR + on - 2))
    m.rd = on - 2;
  m.jt = N < 2 * MM_JT ? N : MM_JT;  // a whole row of acc when it is not too long
  // the outer loops: every output dim but rd and j
  int dims[TD_MAX_DIMS], nd = 0;
  int64_t bat = 1, M = m.rd >= 0 ? ov->shape[m.rd] : 1;
  for (int d = 0; d < on; d++) {
    m.o[d] = kb_ix_const(0);
    if (d < on - 1 && d != m.rd && ov->shape[d] > 1)
      dims[nd++] = d, bat *= ov->shape[d];
  }
  // macro blocks of MC rows, about PARALLEL_MIN_ITERS of them. The parallel loop is
  // the first of batch and macro rows to reach PARALLEL_MIN_ITERS iterations, or the
  // column tiles, made smaller, when they give more iterations than rows do
  int64_t mc = M / (MM_R * PARALLEL_MIN_ITERS), cb = kb_block_size(N, 1);
  mc = MM_R * (mc < 1 ? 1 : mc > MM_MC / MM_R ? MM_MC / MM_R : mc);
  if (mc > M)
    mc = M;
  bool par = view_numel(*ov) * K >= PARALLEL_WORK;
  bool pcol = par && bat * (M / mc) < PARALLEL_MIN_ITERS && cb && N / cb > bat * (M / mc);
  if (pcol)
    mc = M, m.jt = cb < m.jt ? cb : m.jt;
  bool pmac = par && !pcol && bat < PARALLEL_MIN_ITERS && M / mc > 1;
  m.kc = MM_PANEL / (m.jt * dtype_size(mm->srcs[m.bwalks ? 1 : 0]->dtype)) / MM_U * MM_U;
  if (m.kc < MM_U)
    m.kc = MM_U;
  LStmtList *body = kb_outer_loops(kb, &kb->k->body, nd, dims, ov->shape, m.o, par && !pcol && !pmac);
  LIndex i0;
  if (M / mc)
    mm_macro(kb, &m, kb_step_loop(kb, body, M / mc, kb_ix_const(0), mc, pmac, &i0), i0, mc, pcol);
  if (M % mc)
    mm_macro(kb, &m, body, kb_ix_const(M - M % mc), M % mc, false);
  return true;
}

void matmul_build(KernelBuilder *kb, const NodeList *ns) {
  const Node *mm = ns->data[0];
  TD_ASSERT(mm->op == OP_MATMUL);
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
  // on a CPU every matmul with arithmetic to do goes through ir/gemm.c
  if (!kb->naive && kb->cpu && gemm_build(kb, ns))
    m->form = LM_GEMM;
  else if (!kb->naive && !kb->cpu && build_matmul_rows(kb, ns))
    m->form = LM_ROWS;
  else
    build_matmul(kb, ns);
}
