// ir/build_linalg.c: products and statistics PyTorch defines in terms of other ops
// (ir/build.h):
//   linear       input @ weight.t() (+ bias): a view of the weight, one matmul with the
//                add as its epilogue
//   bilinear     one GEMM x1 @ W.permute(1, 0, 2).reshape(I, O * J), then the product
//                with x2 summed over j
//   outer, inner, tensordot  views, a matmul (or a contraction whose k spans several
//                dims, read where they are) and a reshape
//   addmm and kin  beta * input + alpha * (the product)
//   cross        the three components as products of narrows, one cat
//   kron         a [a0, 1, a1, 1 ...] times b [1, b0, 1, b1 ...], reshaped (a view)
//   diag_embed   where over the diagonal's mask, the input broadcast along rows or columns
//   cov          (x - mean) @ (x - mean)^T / (N - correction), frequency and analytic
//                weights as torch.cov weighs them; corrcoef divides it by the outer
//                product of its diagonal's square roots, clamped
// Invariant: operand 0 is the input (or the first factor); a product's operands keep the
// dtype PyTorch's kernels take (one float dtype, checked by the front end).
#include "ir/build.h"

#include <string.h>

static const LinalgArgs *la(const void *args) { return args; }

// x.t(): a 2-D x transposed, anything else itself
static Value *t(Builder *b, Value *x) { return x->view.ndim == 2 ? build_transpose(b, x, 0, 1) : x; }

int build_linear(Builder *b, const void *args, Value **out) {
  Value *x = b_in(b, 0), *wt = t(b, b_in(b, 1));
  if (!la(args)->bias) {
    out[0] = build_matmul(b, x, wt);
    return 1;
  }
  Loc at = b->loc;
  b->loc = b->name_loc;  // the product (F.linear's matmul) is where the call's name is
  Value *mm = build_matmul(b, x, wt);
  b->loc = at;
  out[0] = b_add(b, mm, b_in(b, 2));
  return 1;
}

// y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] (+ bias[o])
int build_bilinear(Builder *b, const void *args, Value **out) {
  Value *x1 = b_in(b, 0), *x2 = b_in(b, 1), *w = b_in(b, 2);
  const View *wv = &w->view;
  int nd = x1->view.ndim;
  int64_t o = wv->shape[0], in1 = wv->shape[1], in2 = wv->shape[2], tshape[TD_MAX_DIMS];
  int64_t wshape[2] = {in1, o * in2};
  Value *wr = build_reshape(b, build_permute(b, w, (int[]){1, 0, 2}), 2, wshape);
  Value *p = build_matmul(b, x1, wr);
  for (int i = 0; i < nd - 1; i++) tshape[i] = x1->view.shape[i];
  tshape[nd - 1] = o;
  tshape[nd] = in2;
  p = build_up(b, build_reshape(b, p, nd + 1, tshape));
  Value *y = b_mul(b, p, build_unsqueeze(b, build_up(b, x2), -2));
  y = build_down(b, build_reduce(b, OP_SUM, y, 1u << nd, false), x1->dtype);
  if (la(args)->bias) y = b_add(b, y, b_in(b, 3));
  out[0] = y;
  return 1;
}

// input[:, None] * vec2
int build_outer(Builder *b, const void *args, Value **out) {
  (void)args;
  out[0] = b_mul(b, build_unsqueeze(b, b_in(b, 0), 1), b_in(b, 1));
  return 1;
}

// the sum over the last dims of both: a matmul with other's last dims moved first (a
// 0-d one: a product)
int build_inner(Builder *b, const void *args, Value **out) {
  (void)args;
  Value *x = b_in(b, 0), *y = b_in(b, 1);
  int na = x->view.ndim, nb = y->view.ndim;
  if (na == 0 || nb == 0) {
    out[0] = b_mul(b, x, y);
    return 1;
  }
  // y [*, K] -> [K, prod(*)]; x @ that -> [*x, prod(*y)] -> [*x, *y]
  int64_t K = y->view.shape[nb - 1], rest = view_numel(y->view) / (K ? K : 1);
  Value *ym = build_reshape(b, y, 2, (int64_t[]){K ? rest : 0, K});
  Value *p = build_matmul(b, x, t(b, ym));
  int64_t shape[2 * TD_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < na - 1; i++) shape[n++] = x->view.shape[i];
  for (int i = 0; i < nb - 1; i++) shape[n++] = y->view.shape[i];
  out[0] = build_reshape(b, p, n, shape);
  return 1;
}

// a permuted to [free..., contracted...] and b to [contracted..., free...], each side's
// free dims reshaped into one (a view where they merge), and one GEMM whose k spans every
// contracted dim (at least one: [M, 1] by [1, N] for an outer product)
int build_tensordot(Builder *b, const void *args, Value **out) {
  const LinalgArgs *a = la(args);
  Value *x = b_in(b, 0), *y = b_in(b, 1);
  const View *va = &x->view, *vb = &y->view;
  int n = a->n, nk = n ? n : 1;
  int64_t M = 1, N = 1, ks[TD_MAX_DIMS + 2];
  for (int i = 0; i < va->ndim - n; i++) M *= va->shape[a->perm_a[i]];
  for (int i = n; i < vb->ndim; i++) N *= vb->shape[a->perm_b[i]];
  Value *xp = build_permute(b, x, a->perm_a), *yp = build_permute(b, y, a->perm_b);
  ks[0] = M;
  for (int i = 0; i < nk; i++) ks[1 + i] = n ? va->shape[a->perm_a[va->ndim - n + i]] : 1;
  xp = build_reshape(b, xp, nk + 1, ks);
  ks[nk] = N;
  for (int i = 0; i < nk; i++) ks[i] = n ? vb->shape[a->perm_b[i]] : 1;
  yp = build_reshape(b, yp, nk + 1, ks);
  Value *r = nk == 1 ? build_matmul(b, xp, yp) : build_matmul_k(b, xp, yp, nk);
  out[0] = build_reshape(b, r, a->ndim, a->shape);
  return 1;
}

// addbmm's product sum_b batch1[b] @ batch2[b]: one GEMM of batch1 [n, B, m] (permuted) by
// batch2 [B, m, p] with k over (B, m)
static Value *bmm_sum(Builder *b, Value *x, Value *y) {
  return build_matmul_k(b, build_permute(b, x, (int[]){1, 0, 2}), y, 2);
}

// beta * input + alpha * (the product), input broadcast to the product's shape; operands
// input, the two factors, then alpha and beta (the numbers) when they scale
int build_addmm(Builder *b, const void *args, Value **out) {
  const LinalgArgs *a = la(args);
  Value *x = b_in(b, 1), *y = b_in(b, 2), *p;
  switch (a->product) {
  case PROD_OUTER: p = b_mul(b, build_unsqueeze(b, x, 1), y); break;
  case PROD_BMM_SUM: p = bmm_sum(b, x, y); break;
  default: p = build_matmul(b, x, y); break;
  }
  int at = 3;
  if (a->scale_alpha) p = b_mul(b, p, b_in(b, at++));
  if (a->drop_input) {
    out[0] = build_clone(b, p);
    return 1;
  }
  Value *s = a->scale_beta ? b_mul(b, b_in(b, 0), b_in(b, at)) : b_in(b, 0);
  out[0] = b_add(b, s, p);
  return 1;
}

// c_i = a_j * b_k - a_k * b_j along dim (j, k the next two), one cat
int build_cross(Builder *b, const void *args, Value **out) {
  int dim = la(args)->dim;
  Value *x = b_in(b, 0), *y = b_in(b, 1), *c[3];
  for (int i = 0; i < 3; i++) {
    int j = (i + 1) % 3, k = (i + 2) % 3;
    Value *p = b_mul(b, build_narrow(b, x, dim, j, 1), build_narrow(b, y, dim, k, 1));
    Value *q = b_mul(b, build_narrow(b, x, dim, k, 1), build_narrow(b, y, dim, j, 1));
    c[i] = b_sub(b, p, q);
  }
  out[0] = build_cat(b, c, 3, dim);
  return 1;
}

// out[i * bs + j] = a[i] * b[j] per dim, the shorter padded with leading ones
int build_kron(Builder *b, const void *args, Value **out) {
  int n = la(args)->n;
  Value *x = b_in(b, 0), *y = b_in(b, 1);
  const View *va = &x->view, *vb = &y->view;
  int64_t sa[TD_MAX_DIMS], sb[TD_MAX_DIMS], o[TD_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    int ia = i - (n - va->ndim), ib = i - (n - vb->ndim);
    int64_t p = ia >= 0 ? va->shape[ia] : 1, q = ib >= 0 ? vb->shape[ib] : 1;
    sa[2 * i] = p, sa[2 * i + 1] = 1;
    sb[2 * i] = 1, sb[2 * i + 1] = q;
    o[i] = p * q;
  }
  Value *prod = b_mul(b, build_reshape(b, x, 2 * n, sa), build_reshape(b, y, 2 * n, sb));
  out[0] = build_reshape(b, prod, n, o);
  return 1;
}

// the last dim of input on the diagonal `offset` of the new dims (dim1, dim2), of size
// m + |offset|; zeros elsewhere
int build_diag_embed(Builder *b, const void *args, Value **out) {
  const LinalgArgs *a = la(args);
  Value *x = b_in(b, 0);
  int nd = x->view.ndim;
  int64_t off = a->offset, m = x->view.shape[nd - 1], k = off < 0 ? -off : off, n = m + k;
  Value *xp = x;
  if (k) {  // the input, then |offset| zeros
    int64_t zs[TD_MAX_DIMS];
    memcpy(zs, x->view.shape, sizeof zs);
    zs[nd - 1] = k;
    xp = build_cat(b, (Value *[]){x, build_zeros(b, nd, zs, x->dtype)}, 2, -1);
  }
  // element (i, j) of the diagonal reads row i's value (offset >= 0) or column j's
  Value *v = build_unsqueeze(b, xp, off >= 0 ? -1 : -2);
  Value *mask = b_bin(b, OP_LOGICAL_AND, build_triangle(b, n, n, off, true), build_triangle(b, n, n, off, false));
  Value *zero = x->dtype == DT_BOOL ? build_bool(b, false) : b_i(b, 0);  // where keeps bool
  Value *y = b_where(b, mask, v, zero);
  out[0] = build_movedim(b, y, 2, (int[]){nd - 1, nd}, (int[]){a->dim1, a->dim2});
  return 1;
}

// diag: of a matrix its diagonal (a copy, as PyTorch's); of a vector the square matrix
// with it on the diagonal `offset` (where over compared aranges); diagflat: diag of the
// input flattened
int build_diag(Builder *b, const void *args, Value **out) {
  const LinalgArgs *a = la(args);
  int64_t k = a->offset;
  Value *x = b_in(b, 0);
  if (a->flat) x = build_reshape(b, x, 1, (int64_t[]){view_numel(x->view)});
  if (x->view.ndim == 2) {
    out[0] = build_clone(b, build_diagonal(b, x, k, 0, 1));
    return 1;
  }
  int64_t n = x->view.shape[0], ak = k < 0 ? -k : k, m = n + ak;
  Value *v = x;
  if (ak) {  // x padded with |k| zeros, read along rows (k >= 0) or columns (k < 0)
    Value *z = build_cast(b, build_zeros(b, 1, &ak, DT_F32), x->dtype);
    v = build_cat(b, (Value *[]){x, z}, 2, 0);
  }
  if (k >= 0) v = build_unsqueeze(b, v, 1);
  Value *on = build_triangle(b, m, m, k, true), *below = build_triangle(b, m, m, k, false);
  Value *zero = x->dtype == DT_BOOL ? build_bool(b, false) : dtype_is_float(x->dtype) ? b_f(b, 0) : b_i(b, 0);
  out[0] = b_where(b, b_bin(b, OP_LOGICAL_AND, on, below), v, zero);
  return 1;
}

// torch.cov of x (operand 0), the weights fweights, aweights after it when given
static Value *cov(Builder *b, const LinalgArgs *a) {
  Value *x = b_in(b, 0);
  int nd = x->view.ndim;
  Value *xf = dtype_is_float(x->dtype) ? x : build_cast(b, x, DT_F32);
  if (nd < 2) xf = build_reshape(b, xf, 2, (int64_t[]){1, nd ? x->view.shape[0] : 1});
  int64_t nobs = xf->view.shape[1], corr = a->correction;
  Value *w = NULL, *aw = NULL;
  int at = 1;
  if (a->fweights) w = b_in(b, at++);
  if (a->aweights) aw = b_in(b, at++), w = w ? b_mul(b, w, aw) : aw;
  // the centred x, the left factor (the centred x, weighted) and the divisor
  Value *xm, *left, *norm;
  if (!w) {
    xm = left = b_sub(b, xf, build_reduce_dim(b, OP_MEAN, xf, 1, true));
    norm = b_f(b, (double)(nobs - corr > 0 ? nobs - corr : 0));
  } else {
    Value *wf = build_cast(b, w, xf->dtype);
    Value *wsum = build_reduce_all(b, OP_SUM, wf);
    Value *avg = b_div(b, build_reduce_dim(b, OP_SUM, b_mul(b, xf, wf), 1, true), wsum);
    xm = b_sub(b, xf, avg);
    left = b_mul(b, xm, wf);
    norm = wsum;
    if (corr && aw) {
      Value *waw = build_reduce_all(b, OP_SUM, b_mul(b, wf, aw));
      norm = b_sub(b, wsum, b_div(b, b_mul(b, waw, b_i(b, corr)), wsum));
    } else if (corr) {
      norm = b_sub(b, wsum, b_i(b, corr));
    }
    norm = build_clamp(b, norm, b_i(b, 0), NULL);
  }
  Value *c = b_div(b, build_matmul(b, left, t(b, xm)), norm);
  return nd < 2 ? build_view(b, c, view_squeeze_all(c->view)) : c;
}

int build_cov(Builder *b, const void *args, Value **out) {
  out[0] = cov(b, la(args));
  return 1;
}

// cov(input) / sqrt(diag ⊗ diag), clamped to [-1, 1]; a 0-d cov is c / c
int build_corrcoef(Builder *b, const void *args, Value **out) {
  Value *c = cov(b, la(args));
  if (c->view.ndim == 0) {
    out[0] = b_div(b, c, c);
    return 1;
  }
  Value *s = b_un(b, OP_SQRT, build_diagonal(b, c, 0, 0, 1));
  Value *r = b_div(b, b_div(b, c, build_unsqueeze(b, s, 1)), s);
  out[0] = build_clamp(b, r, b_i(b, -1), b_i(b, 1));
  return 1;
}

// the sum of the main diagonal of a matrix
int build_trace(Builder *b, const void *args, Value **out) {
  (void)args;
  out[0] = build_reduce_all(b, OP_SUM, build_diagonal(b, b_in(b, 0), 0, 0, 1));
  return 1;
}
