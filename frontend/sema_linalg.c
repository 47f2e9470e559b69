// frontend/sema_linalg.c: products and statistics PyTorch defines in terms of other ops,
// built here from them as parts:
//   cross        the three components as products of narrows, one cat
//   kron         a [a0, 1, a1, 1 ...] times b [1, b0, 1, b1 ...], reshaped (a view)
//   diag_embed   where over the diagonal's mask, the input broadcast along rows or columns
//   bmm_sum      addbmm's product, sum_b b1[b] @ b2[b]: one GEMM whose k spans (b, m)
//   cov          (x - mean) @ (x - mean)^T / (N - correction), frequency and analytic
//                weights as torch.cov weighs them
//   corrcoef     cov divided by the outer product of its diagonal's square roots, clamped
// Each checker reports PyTorch 1.13's message for a misuse before it builds parts.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <string.h>

static Ast *call2(Sema *sema, const Ast *e, const char *op, Ast *a, Ast *b) {
  return part_call(sema, e, op, (Ast *[]){a, b}, 2);
}
static Ast *bin(Sema *sema, const Ast *e, Op op, Ast *a, Ast *b) { return part_binary(sema, e, op, op_name(op), a, b); }
static Ast *narrow1(Sema *sema, const Ast *e, Ast *x, int d, int64_t i) {
  return part_call(sema, e, "narrow", (Ast *[]){x, part_int(sema, e, d), part_int(sema, e, i), part_int(sema, e, 1)}, 4);
}
static TType *done(Sema *sema, Ast *e, Ast *y) { return is_poison(y->ty) ? poison(sema) : become(sema, e, y); }

// ============================================================================
// cross(input, other, dim=None): PyTorch 1.13's torch.cross; without dim, the first
// dim of size 3 of the broadcast shape
// ============================================================================
TType *ck_cross(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = e->bargs[0], *b = e->bargs[1], *da = barg(e, 2);
  TType *ta = get_tensor(sema, e, a, "input"), *tb = ta ? get_tensor(sema, e, b, "other") : NULL;
  if (!ta || !tb) return poison(sema);
  const View *va = &ta->view, *vb = &tb->view;
  if (va->ndim != vb->ndim) {
    diag_error(sema->cx, call_loc(e), "linalg.cross: inputs must have the same number of dimensions.");
    return poison(sema);
  }
  if (ta->dtype != tb->dtype) {
    diag_error(sema->cx, call_loc(e), "expected scalar type %s but found %s", torch_name(ta->dtype),
               torch_name(tb->dtype));
    return poison(sema);
  }
  if (ta->dtype == DT_BOOL) {
    diag_error(sema->cx, call_loc(e), "\"cross_cuda\" not implemented for 'Bool'");
    return poison(sema);
  }
  int n = va->ndim, dim = -1;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, va->shape, sizeof shape);
  if (!broadcast(sema, call_loc(e), &n, shape, vb->ndim, vb->shape)) return poison(sema);
  if (!da) {
    for (int i = 0; i < n && dim < 0; i++)
      if (shape[i] == 3) dim = i;
    if (dim < 0) {
      diag_error(sema->cx, call_loc(e), "no dimension of size 3 in input");
      return poison(sema);
    }
  } else {
    int64_t want;
    if (!get_int(sema, e, da, "dim", &want) || !wrap_dim(sema, da->loc, want, n, &dim)) return poison(sema);
    if (va->shape[dim] != 3 || vb->shape[dim] != 3) {
      diag_error(sema->cx, call_loc(e), "linalg.cross: inputs dimension %d must have length 3. Got %" PRId64 " and %"
                 PRId64, dim, va->shape[dim], vb->shape[dim]);
      return poison(sema);
    }
  }
  Ast *c[3];
  for (int i = 0; i < 3; i++) {
    int j = (i + 1) % 3, k = (i + 2) % 3;
    c[i] = bin(sema, e, OP_SUB, bin(sema, e, OP_MUL, narrow1(sema, e, a, dim, j), narrow1(sema, e, b, dim, k)),
               bin(sema, e, OP_MUL, narrow1(sema, e, a, dim, k), narrow1(sema, e, b, dim, j)));
  }
  return done(sema, e, call2(sema, e, "cat", part_seq(sema, e, TY_LIST, c, 3), part_int(sema, e, dim)));
}

// ============================================================================
// kron(input, other): out[i * bs + j] = a[i] * b[j] per dim, the shorter padded with
// leading ones
// ============================================================================
TType *ck_kron(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = e->bargs[0], *b = e->bargs[1];
  TType *ta = get_tensor(sema, e, a, "input"), *tb = ta ? get_tensor(sema, e, b, "other") : NULL;
  if (!ta || !tb) return poison(sema);
  const View *va = &ta->view, *vb = &tb->view;
  int n = va->ndim > vb->ndim ? va->ndim : vb->ndim;
  if (2 * n > TD_MAX_DIMS) {
    diag_error(sema->cx, call_loc(e), "kron: inputs of %d dims would need %d dims on the way; tdsl allows at most %d",
               n, 2 * n, TD_MAX_DIMS);
    return poison(sema);
  }
  int64_t sa[2 * TD_MAX_DIMS], sb[2 * TD_MAX_DIMS], out[TD_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    int ia = i - (n - va->ndim), ib = i - (n - vb->ndim);
    int64_t x = ia >= 0 ? va->shape[ia] : 1, y = ib >= 0 ? vb->shape[ib] : 1;
    sa[2 * i] = x, sa[2 * i + 1] = 1;
    sb[2 * i] = 1, sb[2 * i + 1] = y;
    out[i] = x * y;
  }
  Ast *ra = call2(sema, e, "reshape", a, part_ints(sema, e, 2 * n, sa));
  Ast *rb = call2(sema, e, "reshape", b, part_ints(sema, e, 2 * n, sb));
  Ast *p = bin(sema, e, OP_MUL, ra, rb);
  if (is_poison(p->ty)) return poison(sema);
  return done(sema, e, call2(sema, e, "reshape", p, part_ints(sema, e, n, out)));
}

// ============================================================================
// diag_embed(input, offset=0, dim1=-2, dim2=-1): the last dim of input on the diagonal
// `offset` of the new dims (dim1, dim2), of size m + |offset|; zeros elsewhere
// ============================================================================
TType *ck_diag_embed(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *x = e->bargs[0], *oa = barg(e, 1), *d1a = barg(e, 2), *d2a = barg(e, 3);
  TType *tx = get_tensor(sema, e, x, "input");
  if (!tx) return poison(sema);
  int64_t off = 0, w1 = -2, w2 = -1;
  if ((oa && !get_int(sema, e, oa, "offset", &off)) || (d1a && !get_int(sema, e, d1a, "dim1", &w1)) ||
      (d2a && !get_int(sema, e, d2a, "dim2", &w2)))
    return poison(sema);
  int nd = tx->view.ndim, dim1, dim2;
  if (nd + 1 > TD_MAX_DIMS) {
    diag_error(sema->cx, call_loc(e), "diag_embed: the result would have %d dims; tdsl allows at most %d", nd + 1,
               TD_MAX_DIMS);
    return poison(sema);
  }
  if (!wrap_dim(sema, d1a ? d1a->loc : call_loc(e), w1, nd + 1, &dim1) ||
      !wrap_dim(sema, d2a ? d2a->loc : call_loc(e), w2, nd + 1, &dim2))
    return poison(sema);
  if (dim1 == dim2) {
    diag_error(sema->cx, call_loc(e), "diagonal dimensions cannot be identical %" PRId64 ", %" PRId64, w1, w2);
    return poison(sema);
  }
  if (nd == 0) {
    diag_error(sema->cx, x->loc, "diag_embed: expected an input of at least 1 dim, but got a 0-dim tensor");
    return poison(sema);
  }
  int64_t m = tx->view.shape[nd - 1], k = off < 0 ? -off : off, n = m + k;
  Ast *xp = x;
  if (k) {  // the input, then |offset| zeros
    int64_t zs[TD_MAX_DIMS];
    memcpy(zs, tx->view.shape, sizeof zs);
    zs[nd - 1] = k;
    Ast *z = part_call(sema, e, "zeros", (Ast *[]){part_ints(sema, e, nd, zs), part_dtype(sema, e, tx->dtype)}, 2);
    xp = call2(sema, e, "cat", part_seq(sema, e, TY_LIST, (Ast *[]){x, z}, 2), part_int(sema, e, -1));
  }
  // element (i, j) of the diagonal reads row i's value (offset >= 0) or column j's
  Ast *v = call2(sema, e, "unsqueeze", xp, part_int(sema, e, off >= 0 ? -1 : -2));
  Ast *mask = bin(sema, e, OP_LOGICAL_AND, part_triangle(sema, e, n, n, off, true),
                  part_triangle(sema, e, n, n, off, false));
  Ast *zero = part_int(sema, e, 0);  // False for a bool input: where keeps its dtype
  if (tx->dtype == DT_BOOL) zero->ty = ty_bool(sema, false);
  Ast *y = part_call(sema, e, "where", (Ast *[]){mask, v, zero}, 3);
  if (is_poison(y->ty)) return poison(sema);
  int64_t src[2] = {nd - 1, nd}, dst[2] = {dim1, dim2};
  y = part_call(sema, e, "movedim", (Ast *[]){y, part_ints(sema, e, 2, src), part_ints(sema, e, 2, dst)}, 3);
  return done(sema, e, y);
}

// ============================================================================
// bmm_sum(batch1, batch2), a part (no spelling reaches it): addbmm's product
// sum_b batch1[b] @ batch2[b], one GEMM of batch1 [n, B, m] (permuted) by batch2
// [B, m, p] with k over (B, m)
// ============================================================================
TType *ck_bmm_sum(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = e->bargs[0], *b = e->bargs[1];
  const View *va = &a->ty->view, *vb = &b->ty->view;
  for (int i = 0; i < 2; i++)
    if ((i ? vb : va)->ndim != 3) {
      diag_error(sema->cx, (i ? b : a)->loc, "batch%d must be a 3D tensor", i + 1);
      return poison(sema);
    }
  if (va->shape[0] != vb->shape[0]) {
    diag_error(sema->cx, call_loc(e), "batch1 and batch2 must have same number of batches, got %" PRId64 " and %" PRId64,
               va->shape[0], vb->shape[0]);
    return poison(sema);
  }
  if (va->shape[2] != vb->shape[1]) {
    diag_error(sema->cx, call_loc(e), "Incompatible matrix sizes for bmm (%" PRId64 "x%" PRId64 " and %" PRId64 "x%"
               PRId64 ")", va->shape[1], va->shape[2], vb->shape[1], vb->shape[2]);
    return poison(sema);
  }
  int64_t perm[3] = {1, 0, 2};
  Ast *ap = call2(sema, e, "permute", a, part_ints(sema, e, 3, perm));
  return done(sema, e, part_call(sema, e, "matmul_k", (Ast *[]){ap, b, part_int(sema, e, 2)}, 3));
}

// ============================================================================
// cov(input, *, correction=1, fweights=None, aweights=None): rows are variables, columns
// observations. With weights w = fweights * aweights: the mean is sum(w x) / sum(w) and
// the divisor sum(w) - correction (times sum(w aweights) / sum(w) with aweights), as
// torch.cov; a divisor <= 0 becomes 0 (inf and nan follow). Weights' values (negative
// ones) are not checked: they are known only when the program runs.
// ============================================================================
static Ast *cov_of(Sema *sema, Ast *e, Ast *x, Ast *ca, Ast *fw, Ast *aw) {
  const TType *tx = get_tensor(sema, e, x, "input");
  if (!tx) return NULL;
  int nd = tx->view.ndim;
  if (nd > 2) {
    diag_error(sema->cx, x->loc, "cov(): expected input to have two or fewer dimensions but got an input with %d "
               "dimensions", nd);
    return NULL;
  }
  int64_t corr = 1;
  if (ca && !get_int(sema, e, ca, "correction", &corr)) return NULL;
  Ast *xf = dtype_is_float(tx->dtype) ? x : part_cast(sema, e, x, "float");
  if (nd < 2) {
    int64_t row[2] = {1, nd ? tx->view.shape[0] : 1};
    xf = call2(sema, e, "reshape", xf, part_ints(sema, e, 2, row));
  }
  int64_t nobs = xf->ty->view.shape[1];
  Ast *w = NULL;
  for (int i = 0; i < 2; i++) {
    Ast *wa = i ? aw : fw;
    const char *pname = i ? "aweights" : "fweights";
    if (!wa) continue;
    const TType *tw = get_tensor(sema, e, wa, pname);
    if (!tw) return NULL;
    if (tw->view.ndim > 1) {
      diag_error(sema->cx, wa->loc, "cov(): expected %s to have one or fewer dimensions but got %s with %d dimensions",
                 pname, pname, tw->view.ndim);
      return NULL;
    }
    if ((tw->view.ndim ? tw->view.shape[0] : 1) != nobs) {
      diag_error(sema->cx, wa->loc, "cov(): expected %s to have the same numel as there are observations in the input "
                 "but got %" PRId64 " != %" PRId64, pname, tw->view.ndim ? tw->view.shape[0] : 1, nobs);
      return NULL;
    }
    if (i == 0 && (dtype_is_float(tw->dtype) || tw->dtype == DT_BOOL)) {
      diag_error(sema->cx, wa->loc, "cov(): expected fweights to have integral dtype but got fweights with %s dtype",
                 torch_name(tw->dtype));
      return NULL;
    }
    if (i == 1 && !dtype_is_float(tw->dtype)) {
      diag_error(sema->cx, wa->loc, "cov(): expected aweights to have floating point dtype but got aweights with %s "
                 "dtype", torch_name(tw->dtype));
      return NULL;
    }
    w = w ? bin(sema, e, OP_MUL, w, wa) : wa;
  }
  Ast *one = part_int(sema, e, 1), *keep = part_int(sema, e, 1);
  keep->ty = ty_bool(sema, true);
  // the centred x, the left factor (the centred x, weighted) and the divisor
  Ast *xm, *left, *norm;
  if (!w) {
    xm = left = bin(sema, e, OP_SUB, xf, part_call(sema, e, "mean", (Ast *[]){xf, one, keep}, 3));
    norm = part_float(sema, e, (double)(nobs - corr > 0 ? nobs - corr : 0));
  } else {
    Ast *wf = call2(sema, e, "to", w, part_dtype(sema, e, xf->ty->dtype));
    Ast *wsum = part_call(sema, e, "sum", &wf, 1);
    Ast *avg = bin(sema, e, OP_DIV, part_call(sema, e, "sum", (Ast *[]){bin(sema, e, OP_MUL, xf, wf), one, keep}, 3),
                   wsum);
    xm = bin(sema, e, OP_SUB, xf, avg);
    left = bin(sema, e, OP_MUL, xm, wf);
    norm = wsum;
    if (corr && aw) {
      Ast *waw = part_call(sema, e, "sum", (Ast *[]){bin(sema, e, OP_MUL, wf, aw)}, 1);
      norm = bin(sema, e, OP_SUB, wsum, bin(sema, e, OP_DIV, bin(sema, e, OP_MUL, waw, part_int(sema, e, corr)), wsum));
    } else if (corr) {
      norm = bin(sema, e, OP_SUB, wsum, part_int(sema, e, corr));
    }
    norm = part_call(sema, e, "clamp_min", (Ast *[]){norm, part_int(sema, e, 0)}, 2);
  }
  Ast *c = bin(sema, e, OP_DIV, call2(sema, e, "matmul", left, part_call(sema, e, "t", &xm, 1)), norm);
  return nd < 2 ? part_call(sema, e, "squeeze", &c, 1) : c;
}

TType *ck_cov(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *c = cov_of(sema, e, e->bargs[0], barg(e, 1), barg(e, 2), barg(e, 3));
  return c ? done(sema, e, c) : poison(sema);
}

// corrcoef(input): cov(input) / sqrt(diag ⊗ diag), clamped to [-1, 1]; a 0-d cov is c / c
TType *ck_corrcoef(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *c = cov_of(sema, e, e->bargs[0], NULL, NULL, NULL);
  if (!c) return poison(sema);
  if (c->ty->view.ndim == 0) return done(sema, e, bin(sema, e, OP_DIV, c, c));
  Ast *s = part_call(sema, e, "sqrt", (Ast *[]){part_call(sema, e, "diagonal", &c, 1)}, 1);
  Ast *col = call2(sema, e, "unsqueeze", s, part_int(sema, e, 1));
  Ast *r = bin(sema, e, OP_DIV, bin(sema, e, OP_DIV, c, col), s);
  return done(sema, e, part_call(sema, e, "clamp", (Ast *[]){r, part_int(sema, e, -1), part_int(sema, e, 1)}, 3));
}
