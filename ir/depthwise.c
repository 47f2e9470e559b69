// ir/depthwise.c: the kernel builder's depthwise convolution (OP_DWCONV, a ONE kernel
// of its own; ir/kernel.h), built by ir/build_conv.c for a padded depthwise conv2d of a
// CPU program (the kernel takes one to three spatial dims): out[n, c, o...] = bias[c] + sum
// over the taps t of x[n, c, o s - p + t d] w[c, t], the taps outside the input reading
// the zero padding. No padded copy of the input is made in memory: the image and channel
// loops (one parallel loop) each copy their channel's plane into the thread's scratch,
// zero-padded (1.6 KB at ConvNeXt's 14 x 14 with its 7 x 7 taps in f32, 55 KB at
// 112 x 112), then compute every output row from it, all taps, lanes along the row: the
// old path's padded copy (ir/build_conv.c's depthwise_pad, which GPU programs keep) one
// plane at a time.
// Invariants: every output element is written once; its terms are added in the taps'
// row-major order, after the bias (the skipped taps add zeros: the same sum).
#include "ir/kernel.h"

enum { DW_NSP = 3 };

// Whether the kernel's multiply-adds are enough work for threads.
static bool parallel(const Node *n) {
  const View *ov = &n->out->view, *wv = &n->srcs[1]->view;
  return wv->shape[0] > 0 && view_numel(*ov) * (view_numel(*wv) / wv->shape[0]) >= PARALLEL_WORK;
}

// On a CPU: each image's channel (the parallel loop's iteration) zero-padded into the
// thread's scratch plane, then every output row from it, all taps, the
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
  do {
    LIndex wi[TD_MAX_DIMS] = {idx[1]}, pi = kb_ix_const(0);
    for (int i = 0; i < nsp; i++) {
      wi[1 + i] = kb_ix_const(t[i]);
      pi = kb_ix_sum(kb, pi, &idx[2 + i], a->conv_s[i] * pst[i]);
      pi.base += t[i] * a->conv_d[i] * pst[i];
    }
    LExpr *term = kb_binary(kb, OP_MUL, cd, kb_buf_load(kb, sbuf, pi), kb_cast(kb, kb_value(kb, n->srcs[1], wi), cd));
    acc = kb_binary(kb, OP_ADD, cd, acc, term);
  } while (view_next_index(nsp, t, &wv->shape[1]));
  kb_store_node(kb, into, n, idx, acc);
}

void depthwise_build(KernelBuilder *kb, const Node *n) {
  const View *ov = &n->out->view;
  int nsp = ov->ndim - 2;
  TD_ASSERT(nsp >= 1 && nsp <= DW_NSP);
  if (view_numel(*ov) == 0)
    return;
  TD_ASSERT(kb->cpu);  // (ir/build_conv.c makes the node for CPU programs alone)
  build_plane(kb, n);
}
