// ir/depthwise.c: the kernel builder's depthwise convolution (OP_DWCONV, a ONE kernel
// of its own; ir/kernel.h), built by ir/build_conv.c for a padded depthwise conv2d (the
// kernel takes one to three spatial dims): out[n, c, o...] = bias[c] + sum over the taps t of
// x[n, c, o s - p + t d] w[c, t], the taps outside the input reading the zero padding.
// No padded copy of the input is made in memory:
//   - on a CPU (build_plane), the image and channel loops (one parallel loop) each copy
//     their channel's plane into the thread's scratch, zero-padded (a few KB, in L1),
//     then compute every output row from it, all taps, lanes along the row: the old
//     path's padded copy (ir/build_conv.c's depthwise_pad) one plane at a time;
//   - on a GPU (no scratch), along each spatial dim the outputs fall into runs whose
//     windows keep the same taps inside the input (depthwise_runs: at each edge one output
//     a run while its window crosses the edge, the interior one run); each combination of
//     runs is a nest of its own over all its dims, as a cat's pieces are, adding exactly
//     those taps, each a plain load of x at an affine index (no bounds checks or selects).
// Invariants: every output element is written once; its terms are added in the taps'
// row-major order, after the bias (the skipped taps add zeros: the same sum).
#include "ir/kernel.h"

// The taps [t0, t1) of output o's window along one dim that lie inside the input (in
// elements): positions o s - p + t d in [0, in).
static void inside(int64_t o, int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, int64_t *t0, int64_t *t1) {
  int64_t q = o * s - p;  // tap 0's position
  *t0 = q >= 0 ? 0 : (-q + d - 1) / d;
  *t1 = q >= in ? 0 : (in - 1 - q) / d + 1;
  if (*t1 > k)
    *t1 = k;
  if (*t0 > *t1)
    *t0 = *t1;
}

int depthwise_runs(int64_t out, int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, int max, int64_t *o0,
                   int64_t *t0, int64_t *t1) {
  int n = 0;
  for (int64_t o = 0; o < out; o++) {
    int64_t a, b;
    inside(o, in, k, p, s, d, &a, &b);
    if (n && a == t0[n - 1] && b == t1[n - 1])
      continue;
    if (n == max)
      return -1;
    o0[n] = o, t0[n] = a, t1[n] = b;
    n++;
  }
  o0[n] = out;
  return n;
}

enum { DW_NSP = 3 };

// Whether the kernel's multiply-adds are enough work for threads.
static bool parallel(const Node *n) {
  const View *ov = &n->out->view, *wv = &n->srcs[1]->view;
  return wv->shape[0] > 0 && view_numel(*ov) * (view_numel(*wv) / wv->shape[0]) >= PARALLEL_WORK;
}

typedef struct Runs {
  int n;
  int64_t o0[DEPTHWISE_MAX_RUNS + 1], t0[DEPTHWISE_MAX_RUNS], t1[DEPTHWISE_MAX_RUNS];
} Runs;

// The nest of one combination of runs (r[i] along spatial dim i) inside `into`, whose
// loops gave idx[0..2) (the image and channel dims; the spatial ones are made here, the
// first parallel with par).
static void build_runs(KernelBuilder *kb, const Node *n, LStmtList *into, LIndex *idx, const Runs *runs,
                       const int *r, bool par) {
  const Value *x = n->srcs[0], *w = n->srcs[1], *bias = n->nsrc > 2 ? n->srcs[2] : NULL;
  int nsp = n->out->view.ndim - 2;
  DType cd = n->out->dtype;
  const NodeAttr *a = &n->attr;
  for (int i = 0; i < nsp; i++) {
    const Runs *u = &runs[i];
    into = kb_step_loop(kb, into, u->o0[r[i] + 1] - u->o0[r[i]], kb_ix_const(u->o0[r[i]]), 1, par, &idx[2 + i]);
    par = false;
  }
  LExpr *acc = bias ? kb_cast(kb, kb_value(kb, bias, &idx[1]), cd) : kb_fconst(kb, cd, 0);
  int64_t t[DW_NSP], t0[DW_NSP], t1[DW_NSP];
  bool any = true;
  for (int i = 0; i < nsp; i++) {
    t0[i] = t[i] = runs[i].t0[r[i]], t1[i] = runs[i].t1[r[i]];
    any &= t1[i] > t0[i];
  }
  while (any) {
    LIndex xi[TD_MAX_DIMS] = {idx[0], idx[1]}, wi[TD_MAX_DIMS] = {idx[1]};
    for (int i = 0; i < nsp; i++) {
      xi[2 + i] = kb_ix_sum(kb, kb_ix_const(t[i] * a->conv_d[i] - a->conv_p[i]), &idx[2 + i], a->conv_s[i]);
      wi[1 + i] = kb_ix_const(t[i]);
    }
    LExpr *term = kb_binary(kb, OP_MUL, cd, kb_cast(kb, kb_value(kb, x, xi), cd), kb_cast(kb, kb_value(kb, w, wi), cd));
    acc = kb_binary(kb, OP_ADD, cd, acc, term);
    int i = nsp - 1;  // the next tap, the last dim fastest
    while (i >= 0 && ++t[i] == t1[i])
      t[i] = t0[i], i--;
    any = i >= 0;
  }
  kb_store_node(kb, into, n, idx, acc);
}

// On a CPU: each image's channel (the parallel loop's iteration) zero-padded into the
// thread's scratch plane (a few KB, in L1), then every output row from it, all taps, the
// lanes along the row: the padded copy of the old path (ir/build_conv.c's depthwise_pad,
// the whole input) one plane at a time, never in memory. The plane holds the computation
// dtype, so x and its inline producers are read and converted once per element.
static void build_plane(KernelBuilder *kb, const Node *n) {
  const View *ov = &n->out->view, *xv = &n->srcs[0]->view, *wv = &n->srcs[1]->view;
  const Value *bias = n->nsrc > 2 ? n->srcs[2] : NULL;
  const NodeAttr *a = &n->attr;
  int nsp = ov->ndim - 2;
  DType cd = n->out->dtype;
  int64_t pst[DW_NSP], plane = 1;  // the padded plane's strides and size
  for (int i = nsp - 1; i >= 0; i--) {
    int64_t need = (ov->shape[2 + i] - 1) * a->conv_s[i] + a->conv_d[i] * (wv->shape[1 + i] - 1) + 1;
    int64_t have = a->conv_p[i] + xv->shape[2 + i];
    pst[i] = plane;
    plane *= need > have ? need : have;
  }
  int sbuf = kb_new_temp(kb, cd, plane, "padded plane");
  kb->p->bufs.data[sbuf].scratch = true;
  LIndex idx[TD_MAX_DIMS], at;
  int dims[2], nl = 0;
  for (int d = 0; d < 2; d++) {
    idx[d] = kb_ix_const(0);
    if (ov->shape[d] > 1)
      dims[nl++] = d;
  }
  LStmtList *body = kb_outer_loops(kb, &kb->k->body, nl, dims, ov->shape, idx, parallel(n));
  // zeros, then x into the middle
  kb_buf_store(kb, kb_step_loop(kb, body, plane, kb_ix_const(0), 1, false, &at), sbuf, at, kb_fconst(kb, cd, 0));
  LIndex xi[TD_MAX_DIMS] = {idx[0], idx[1]}, si = kb_ix_const(0);
  LStmtList *into = body;
  for (int i = 0; i < nsp; i++) {
    into = kb_step_loop(kb, into, xv->shape[2 + i], kb_ix_const(0), 1, false, &xi[2 + i]);
    si = kb_ix_sum(kb, si, &xi[2 + i], pst[i]);
    si.base += a->conv_p[i] * pst[i];
  }
  kb_buf_store(kb, into, sbuf, si, kb_cast(kb, kb_value(kb, n->srcs[0], xi), cd));
  // the outputs: bias plus every tap, in the taps' order
  into = body;
  for (int i = 0; i < nsp; i++)
    into = kb_step_loop(kb, into, ov->shape[2 + i], kb_ix_const(0), 1, false, &idx[2 + i]);
  LExpr *acc = bias ? kb_cast(kb, kb_value(kb, bias, &idx[1]), cd) : kb_fconst(kb, cd, 0);
  int64_t t[DW_NSP] = {0};
  for (bool more = true; more;) {
    LIndex wi[TD_MAX_DIMS] = {idx[1]}, pi = kb_ix_const(0);
    for (int i = 0; i < nsp; i++) {
      wi[1 + i] = kb_ix_const(t[i]);
      pi = kb_ix_sum(kb, pi, &idx[2 + i], a->conv_s[i] * pst[i]);
      pi.base += t[i] * a->conv_d[i] * pst[i];
    }
    LExpr *term = kb_binary(kb, OP_MUL, cd, kb_buf_load(kb, sbuf, pi), kb_cast(kb, kb_value(kb, n->srcs[1], wi), cd));
    acc = kb_binary(kb, OP_ADD, cd, acc, term);
    int i = nsp - 1;  // the next tap, the last dim fastest
    while (i >= 0 && ++t[i] == wv->shape[1 + i])
      t[i--] = 0;
    more = i >= 0;
  }
  kb_store_node(kb, into, n, idx, acc);
}

void depthwise_build(KernelBuilder *kb, const Node *n) {
  const View *ov = &n->out->view, *xv = &n->srcs[0]->view, *wv = &n->srcs[1]->view;
  int nsp = ov->ndim - 2;
  TD_ASSERT(nsp >= 1 && nsp <= DW_NSP);
  if (view_numel(*ov) == 0)
    return;
  if (kb->cpu) {
    build_plane(kb, n);
    return;
  }
  Runs runs[DW_NSP];
  int64_t combos = 1;
  for (int i = 0; i < nsp; i++) {
    Runs *u = &runs[i];
    u->n = depthwise_runs(ov->shape[2 + i], xv->shape[2 + i], wv->shape[1 + i], n->attr.conv_p[i], n->attr.conv_s[i],
                          n->attr.conv_d[i], DEPTHWISE_MAX_RUNS, u->o0, u->t0, u->t1);
    TD_ASSERT(u->n >= 0);
    combos *= u->n;
  }
  bool par = parallel(n);
  LIndex idx[TD_MAX_DIMS];
  int r[DW_NSP] = {0};
  for (int64_t c = 0; c < combos; c++) {
    LStmtList *into = kb_nest(kb, &kb->k->body, 2, ov->shape, idx, par, NULL);
    build_runs(kb, n, into, idx, runs, r, par && ov->shape[0] * ov->shape[1] == 1);
    for (int i = nsp - 1; i >= 0 && ++r[i] == runs[i].n; i--)  // the next combination
      r[i] = 0;
  }
}
