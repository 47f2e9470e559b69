// frontend/sema_linalg.c: products and statistics: linear, bilinear, outer (ger), dot
// (vdot), mv, inner, tensordot, addmm and its kin (baddbmm, addmv, addr, addbmm), cross,
// kron, diag_embed, cov, corrcoef, trace, torch.norm's vector norms, dist. PyTorch 1.13's checks and messages, in its
// order, then the arguments parsed into LinalgArgs for the row's builder
// (ir/build_linalg.c); dot, vdot and mv are one matmul node.
// Each composed op is checked as PyTorch's code composes it: the product's own checks
// (mm's "self must be a matrix" ...) here, the checks of the ops it is made of
// (matmul's dtypes, broadcasting) by the builder's dry run (sema_build.c).
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// F.linear(input, weight, bias=None) is input @ weight.t() (+ bias)
TType *ck_linear(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *w = e->bargs[1], *bias = barg(e, 2);
  if (!get_tensor(sema, e, x, "input") || !get_tensor(sema, e, w, "weight") ||
      (bias && !get_tensor(sema, e, bias, "bias")))
    return poison(sema);
  if (w->ty->view.ndim > 2) {  // weight.t()'s check, where the weight is written
    diag_error(sema->cx, w->loc, "t() expects a tensor with <= 2 dimensions, but self is %dD", w->ty->view.ndim);
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, (LinalgArgs){.bias = bias}), (Ast *[]){x, w, bias}, bias ? 3 : 2);
}

// F.bilinear(input1, input2, weight, bias=None): y[..., o] = sum_ij x1[..., i] W[o, i, j]
// x2[..., j] (+ bias[o]), built as one GEMM x1 @ W.permute(1, 0, 2).reshape(I, O * J),
// then the product with x2 summed over j.
TType *ck_bilinear(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x1 = e->bargs[0], *x2 = e->bargs[1], *w = e->bargs[2], *b = barg(e, 3);
  TType *t1 = get_tensor(sema, e, x1, "input1"), *t2 = t1 ? get_tensor(sema, e, x2, "input2") : NULL;
  TType *wt = t2 ? get_tensor(sema, e, w, "weight") : NULL;
  if (!wt || (b && !get_tensor(sema, e, b, "bias"))) return poison(sema);
  Loc loc = call_loc(e);
  int nd = t1->view.ndim;
  if (nd != t2->view.ndim) {
    diag_error(sema->cx, loc, "bilinear(): input dimensions do not match: got %d and %d", nd, t2->view.ndim);
    return poison(sema);
  }
  for (int i = 0; i < nd - 1; i++)
    if (t1->view.shape[i] != t2->view.shape[i]) {
      diag_error(sema->cx, loc, "bilinear(): input batch dimensions do not match at dim %d: got %" PRId64 " and %"
                 PRId64, i, t1->view.shape[i], t2->view.shape[i]);
      return poison(sema);
    }
  if (nd == 0) {
    diag_error(sema->cx, x1->loc, "Dimension specified as 0 but tensor has no dimensions");
    return poison(sema);
  }
  int a;
  if (!wrap_dim(sema, w->loc, 2, wt->view.ndim, &a)) return poison(sema);
  if (wt->view.ndim != 3) {
    diag_error(sema->cx, w->loc, "bilinear(): weight must be 3-D [out, in1, in2], got %d dims", wt->view.ndim);
    return poison(sema);
  }
  int64_t o = wt->view.shape[0], in1 = wt->view.shape[1], in2 = wt->view.shape[2];
  int64_t i1 = t1->view.shape[nd - 1], i2 = t2->view.shape[nd - 1];
  if (i1 != in1 || i2 != in2) {
    diag_error(sema->cx, loc, "bilinear(): input%d size does not match weight size: got %" PRId64 " but expected %"
               PRId64, i1 != in1 ? 1 : 2, i1 != in1 ? i1 : i2, i1 != in1 ? in1 : in2);
    return poison(sema);
  }
  if (b && b->ty->view.ndim == 0) {
    diag_error(sema->cx, b->loc, "Dimension specified as 0 but tensor has no dimensions");
    return poison(sema);
  }
  if (b && b->ty->view.shape[0] != o) {
    diag_error(sema->cx, loc, "bilinear(): bias size does not match weight size: got %" PRId64 " but expected %"
               PRId64, b->ty->view.shape[0], o);
    return poison(sema);
  }
  Ast *others[2] = {x2, w};
  for (int i = 0; i < 2; i++)
    if (others[i]->ty->dtype != t1->dtype) {
      diag_error(sema->cx, loc, "expected scalar type %s but found %s", torch_name(t1->dtype),
                 torch_name(others[i]->ty->dtype));
      return poison(sema);
    }
  if (!dtype_is_float(t1->dtype)) {
    diag_error(sema->cx, loc, "\"bmm_cuda\" not implemented for '%s'", torch_name(t1->dtype));
    return poison(sema);
  }
  if (!check_rank(sema, loc, nd + 1)) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (LinalgArgs){.bias = b}), (Ast *[]){x1, x2, w, b}, b ? 4 : 3);
}

// outer(input, vec2) / ger: input[:, None] * vec2
static bool outer_ok(Sema *sema, const Ast *e, const char *name, const TType *a, const TType *b) {
  if (a->view.ndim == 1 && b->view.ndim == 1) return true;
  diag_error(sema->cx, call_loc(e), "%s: Expected 1-D argument %s, but got %d-D", name, a->view.ndim != 1 ? "self" : "vec2",
             a->view.ndim != 1 ? a->view.ndim : b->view.ndim);
  return false;
}

TType *ck_outer(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  if (!get_tensor(sema, e, b, "vec2") || !outer_ok(sema, e, d->b.name, a->ty, b->ty)) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (LinalgArgs){0}), e->bargs, 2);
}

// e becomes the matmul node of a and b (matmul's checks)
static TType *matmul_of(Sema *sema, Ast *e, Ast *a, Ast *b) {
  e->bi = node_builtin(OP_MATMUL);
  return matmul_node(sema, e, a, b, call_loc(e));
}

// dot(input, other) / vdot: 1-D only, then matmul's own checks
TType *ck_dot(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *a = e->bargs[0], *b = e->bargs[1];
  if (!get_tensor(sema, e, b, "tensor")) return poison(sema);
  if (a->ty->view.ndim != 1 || b->ty->view.ndim != 1) {
    diag_error(sema->cx, call_loc(e), "1D tensors expected, but got %dD and %dD tensors", a->ty->view.ndim,
               b->ty->view.ndim);
    return poison(sema);
  }
  return matmul_of(sema, e, a, b);
}

// mv(input, vec): a 2-D by 1-D matmul
static bool mv_ok(Sema *sema, const Ast *e, const TType *m, const TType *v) {
  if (m->view.ndim == 2 && v->view.ndim == 1) return true;
  diag_error(sema->cx, call_loc(e), "vector + matrix @ vector expected, got 1, %d, %d", m->view.ndim, v->view.ndim);
  return false;
}

TType *ck_mv(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *m = e->bargs[0], *v = e->bargs[1];
  if (!get_tensor(sema, e, v, "vec") || !mv_ok(sema, e, m->ty, v->ty)) return poison(sema);
  return matmul_of(sema, e, m, v);
}

// inner(input, other): the sum over the last dims of both
TType *ck_inner(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1];
  if (!get_tensor(sema, e, b, "other")) return poison(sema);
  int na = a->ty->view.ndim, nb = b->ty->view.ndim;
  if (na && nb && a->ty->view.shape[na - 1] != b->ty->view.shape[nb - 1]) {
    diag_error(sema->cx, call_loc(e), "inner() the last dimension must match on both input tensors but got shapes %s "
               "and %s", shape_str(sema, na, a->ty->view.shape), shape_str(sema, nb, b->ty->view.shape));
    return poison(sema);
  }
  if (na && nb && !check_rank(sema, call_loc(e), na + nb - 2)) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (LinalgArgs){0}), e->bargs, 2);
}

// tensordot(a, b, dims=2): the sum over a's dims ca and b's cb (an int n: a's last n and
// b's first n; else two lists), a's free dims then b's
TType *ck_tensordot(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *a = e->bargs[0], *b = e->bargs[1], *da = barg(e, 2);
  TType *ta = get_tensor(sema, e, a, "a"), *tb = ta ? get_tensor(sema, e, b, "b") : NULL;
  if (!ta || !tb) return poison(sema);
  if (barg(e, 3)) {
    diag_error(sema->cx, e->bargs[3]->loc, "tensordot(): out= is not supported: the result is returned");
    return poison(sema);
  }
  const View *va = &ta->view, *vb = &tb->view;
  int ca[TD_MAX_DIMS], cb[TD_MAX_DIMS], n = 2;
  int64_t ra[TD_MAX_DIMS], rb[TD_MAX_DIMS];  // the dims as written, for the message
  if (!da || da->ty->kind == TY_SCALAR) {
    int64_t k = 2;
    if (da && !get_int(sema, e, da, "dims", &k)) return poison(sema);
    if (k < 0) {
      diag_error(sema->cx, da->loc, "tensordot expects dims >= 0, but got dims=%" PRId64, k);
      return poison(sema);
    }
    n = (int)(k < TD_MAX_DIMS ? k : TD_MAX_DIMS);
    for (int i = 0; i < n; i++) {
      ra[i] = i - k, rb[i] = i;
      if (!wrap_dim(sema, e->bargs[0]->loc, ra[i], va->ndim, &ca[i]) ||
          !wrap_dim(sema, e->bargs[1]->loc, rb[i], vb->ndim, &cb[i]))
        return poison(sema);
    }
  } else {
    Ast **items;
    int ni, n2;
    if (!seq_items(sema, da, &items, &ni) || ni != 2) {
      diag_error(sema->cx, da->loc, "tensordot expects dims to be int or Tuple[List[int], List[int]] or "
                 "List[List[int]] containing two lists, but got %s", py_type_name(da->ty));
      return poison(sema);
    }
    if (!get_dims(sema, e, items[0], "dims", va->ndim, ca, &n) || !get_dims(sema, e, items[1], "dims", vb->ndim, cb, &n2))
      return poison(sema);
    if (n != n2) {
      diag_error(sema->cx, da->loc, "both dimension lists should have same length");
      return poison(sema);
    }
    get_ints(sema, e, items[0], "dims", ra, &n);
    get_ints(sema, e, items[1], "dims", rb, &n2);
  }
  for (int i = 0; i < n; i++)
    if (va->shape[ca[i]] != vb->shape[cb[i]]) {
      diag_error(sema->cx, call_loc(e), "contracted dimensions need to match, but first has size %" PRId64 " in dim %"
                 PRId64 " and second has size %" PRId64 " in dim %" PRId64, va->shape[ca[i]], ra[i],
                 vb->shape[cb[i]], rb[i]);
      return poison(sema);
    }
  // the permutations and the free dims' sizes
  int64_t pa[TD_MAX_DIMS], pb[TD_MAX_DIMS], out[2 * TD_MAX_DIMS];
  int npa = 0, npb = 0, no = 0;
  uint32_t in_a = 0, in_b = 0;
  for (int i = 0; i < n; i++) in_a |= 1u << ca[i], in_b |= 1u << cb[i];
  for (int i = 0; i < va->ndim; i++)
    if (!(in_a & (1u << i))) pa[npa++] = i, out[no++] = va->shape[i];
  for (int i = 0; i < n; i++) pa[npa++] = ca[i], pb[npb++] = cb[i];
  for (int i = 0; i < vb->ndim; i++)
    if (!(in_b & (1u << i))) pb[npb++] = i, out[no++] = vb->shape[i];
  if (no > TD_MAX_DIMS) {
    diag_error(sema->cx, call_loc(e), "tensordot: the result would have %d dims; tdsl allows at most %d", no,
               TD_MAX_DIMS);
    return poison(sema);
  }
  int nk = n ? n : 1;  // a: [M, k...] (k: at least one dim, [M, 1] for an outer product); b: [k..., N]
  if (!check_rank(sema, call_loc(e), nk + 1)) return poison(sema);
  LinalgArgs la = {.n = n, .ndim = no};
  for (int i = 0; i < npa; i++) la.perm_a[i] = (int)pa[i];
  for (int i = 0; i < npb; i++) la.perm_b[i] = (int)pb[i];
  memcpy(la.shape, out, sizeof(int64_t) * (size_t)no);
  return built(sema, e, d->b.build, KEEP(sema, la), e->bargs, 2);
}

// The checks of addbmm's product sum_b batch1[b] @ batch2[b] (its shape in out).
static bool bmm_sum_ok(Sema *sema, const Ast *e, Ast *a, Ast *b, int64_t *out) {
  const View *va = &a->ty->view, *vb = &b->ty->view;
  for (int i = 0; i < 2; i++)
    if ((i ? vb : va)->ndim != 3) {
      diag_error(sema->cx, (i ? b : a)->loc, "batch%d must be a 3D tensor", i + 1);
      return false;
    }
  if (va->shape[0] != vb->shape[0]) {
    diag_error(sema->cx, call_loc(e), "batch1 and batch2 must have same number of batches, got %" PRId64 " and %" PRId64,
               va->shape[0], vb->shape[0]);
    return false;
  }
  if (va->shape[2] != vb->shape[1]) {
    diag_error(sema->cx, call_loc(e), "Incompatible matrix sizes for bmm (%" PRId64 "x%" PRId64 " and %" PRId64 "x%"
               PRId64 ")", va->shape[1], va->shape[2], vb->shape[1], vb->shape[2]);
    return false;
  }
  out[0] = va->shape[1], out[1] = vb->shape[2];
  return true;
}

// addmm(input, mat1, mat2, *, beta=1, alpha=1), baddbmm (batch1, batch2), addmv (mat,
// vec), addr (vec1, vec2), addbmm (batch1, batch2, summed over the batch): beta * input
// + alpha * (the product), input broadcast to the product's shape
TType *ck_addmm(Sema *sema, Ast *e, const BuiltinDef *d) {
  static const char *const factors[][2] = {[PROD_MM] = {"mat1", "mat2"}, [PROD_BMM] = {"batch1", "batch2"},
                                           [PROD_MV] = {"mat", "vec"}, [PROD_OUTER] = {"vec1", "vec2"},
                                           [PROD_BMM_SUM] = {"batch1", "batch2"}};
  ProductKind pk = (ProductKind)d->variant;
  Ast *in = e->bargs[0], *x = e->bargs[1], *y = e->bargs[2], *ba = barg(e, 3), *aa = barg(e, 4);
  if (!get_tensor(sema, e, x, factors[pk][0]) || !get_tensor(sema, e, y, factors[pk][1])) return poison(sema);
  for (Ast *s = ba; s; s = s == ba ? aa : NULL)
    if (!is_scalar(s->ty)) {
      diag_error(sema->cx, s->loc, "%s(): argument '%s' must be Number, not %s", d->b.name, s == ba ? "beta" : "alpha",
                 py_type_name(s->ty));
      return poison(sema);
    }
  // the product's own checks, and its shape
  int n = 2;
  int64_t shape[TD_MAX_DIMS];
  const TType *tx = x->ty, *ty = y->ty;
  switch (pk) {
  case PROD_MM: case PROD_BMM:
    if (!matmul_kind_ok(sema, e, pk == PROD_MM ? "mm" : "bmm", x, y)) return poison(sema);
    if (!matmul_shape(sema, call_loc(e), tx, ty, &n, shape)) return poison(sema);
    break;
  case PROD_MV:
    if (!mv_ok(sema, e, tx, ty) || !matmul_shape(sema, call_loc(e), tx, ty, &n, shape)) return poison(sema);
    break;
  case PROD_OUTER:
    if (!outer_ok(sema, e, "outer", tx, ty)) return poison(sema);
    shape[0] = tx->view.shape[0], shape[1] = ty->view.shape[0];
    break;
  case PROD_BMM_SUM:
    if (!bmm_sum_ok(sema, e, x, y, shape)) return poison(sema);
    break;
  }
  View ev;
  if (!expand_to(sema, call_loc(e), in->ty, n, shape, &ev)) return poison(sema);
  LinalgArgs la = {.product = pk, .scale_alpha = aa && aa->ty->fval != 1, .scale_beta = ba && ba->ty->fval != 1,
                   .drop_input = ba && ba->ty->fval == 0};
  return built(sema, e, d->b.build, KEEP(sema, la), (Ast *[]){in, x, y, la.scale_alpha ? aa : ba, ba}, 3 + la.scale_alpha + la.scale_beta);
}

// cross(input, other, dim=None): PyTorch 1.13's torch.cross; without dim, the first
// dim of size 3 of the broadcast shape
TType *ck_cross(Sema *sema, Ast *e, const BuiltinDef *d) {
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
  return built(sema, e, d->b.build, KEEP(sema, (LinalgArgs){.dim = dim}), e->bargs, 2);
}

// kron(input, other): out[i * bs + j] = a[i] * b[j] per dim, the shorter padded with
// leading ones
TType *ck_kron(Sema *sema, Ast *e, const BuiltinDef *d) {
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
  return built(sema, e, d->b.build, KEEP(sema, (LinalgArgs){.n = n}), e->bargs, 2);
}

// diag_embed(input, offset=0, dim1=-2, dim2=-1): the last dim of input on the diagonal
// `offset` of the new dims (dim1, dim2), of size m + |offset|; zeros elsewhere
TType *ck_diag_embed(Sema *sema, Ast *e, const BuiltinDef *d) {
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
  LinalgArgs la = {.offset = off, .dim1 = dim1, .dim2 = dim2};
  return built(sema, e, d->b.build, KEEP(sema, la), e->bargs, 1);
}

// cov(input, *, correction=1, fweights=None, aweights=None): rows are variables, columns
// observations. With weights w = fweights * aweights: the mean is sum(w x) / sum(w) and
// the divisor sum(w) - correction (times sum(w aweights) / sum(w) with aweights), as
// torch.cov; a divisor <= 0 becomes 0 (inf and nan follow). Weights' values (negative
// ones) are not checked: they are known only when the program runs.
// cov's checks of input, correction, fweights and aweights; false after PyTorch's message.
static bool cov_ok(Sema *sema, Ast *e, Ast *x, Ast *ca, Ast *fw, Ast *aw, LinalgArgs *la) {
  const TType *tx = get_tensor(sema, e, x, "input");
  if (!tx) return false;
  int nd = tx->view.ndim;
  if (nd > 2) {
    diag_error(sema->cx, x->loc, "cov(): expected input to have two or fewer dimensions but got an input with %d "
               "dimensions", nd);
    return false;
  }
  int64_t corr = 1;
  if (ca && !get_int(sema, e, ca, "correction", &corr)) return false;
  la->correction = corr;
  int64_t nobs = nd == 2 ? tx->view.shape[1] : nd ? tx->view.shape[0] : 1;
  for (int i = 0; i < 2; i++) {
    Ast *wa = i ? aw : fw;
    const char *pname = i ? "aweights" : "fweights";
    if (!wa) continue;
    const TType *tw = get_tensor(sema, e, wa, pname);
    if (!tw) return false;
    if (tw->view.ndim > 1) {
      diag_error(sema->cx, wa->loc, "cov(): expected %s to have one or fewer dimensions but got %s with %d dimensions",
                 pname, pname, tw->view.ndim);
      return false;
    }
    if ((tw->view.ndim ? tw->view.shape[0] : 1) != nobs) {
      diag_error(sema->cx, wa->loc, "cov(): expected %s to have the same numel as there are observations in the input "
                 "but got %" PRId64 " != %" PRId64, pname, tw->view.ndim ? tw->view.shape[0] : 1, nobs);
      return false;
    }
    if (i == 0 && (dtype_is_float(tw->dtype) || tw->dtype == DT_BOOL)) {
      diag_error(sema->cx, wa->loc, "cov(): expected fweights to have integral dtype but got fweights with %s dtype",
                 torch_name(tw->dtype));
      return false;
    }
    if (i == 1 && !dtype_is_float(tw->dtype)) {
      diag_error(sema->cx, wa->loc, "cov(): expected aweights to have floating point dtype but got aweights with %s "
                 "dtype", torch_name(tw->dtype));
      return false;
    }
  }
  la->fweights = fw, la->aweights = aw;
  return true;
}

TType *ck_cov(Sema *sema, Ast *e, const BuiltinDef *d) {
  LinalgArgs la = {0};
  Ast *x = e->bargs[0], *fw = barg(e, 2), *aw = barg(e, 3);
  if (!cov_ok(sema, e, x, barg(e, 1), fw, aw, &la)) return poison(sema);
  Ast *ops[3] = {x, fw ? fw : aw, aw};
  return built(sema, e, d->b.build, KEEP(sema, la), ops, 1 + (fw != NULL) + (aw != NULL));
}

// corrcoef(input): cov(input) / sqrt(diag ⊗ diag), clamped to [-1, 1]
TType *ck_corrcoef(Sema *sema, Ast *e, const BuiltinDef *d) {
  LinalgArgs la = {0};
  if (!cov_ok(sema, e, e->bargs[0], NULL, NULL, NULL, &la)) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, la), e->bargs, 1);
}

// trace(input): the sum of the main diagonal of a matrix
TType *ck_trace(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0];
  if (x->ty->view.ndim != 2) {
    diag_error(sema->cx, call_loc(e), "trace: expected a matrix, but got tensor with dim %d", x->ty->view.ndim);
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, (LinalgArgs){0}), e->bargs, 1);
}

// ============================================================================
// dist
// ============================================================================
// dist(input, other, p=2): norm(input - other, p)
TType *ck_dist(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *o = e->bargs[1], *pa = barg(e, 2);
  if (!get_tensor(sema, e, o, "other")) return poison(sema);
  DType r;
  int nd = x->ty->view.ndim;
  int64_t shape[TD_MAX_DIMS];
  memcpy(shape, x->ty->view.shape, sizeof(int64_t) * (size_t)nd);
  if (!binary_dtype(sema, call_loc(e), OP_SUB, x->ty, o->ty, &r) ||
      !broadcast(sema, call_loc(e), &nd, shape, o->ty->view.ndim, o->ty->view.shape))
    return poison(sema);
  ReduceArgs a = {.mask = nd ? (uint32_t)((1ull << nd) - 1) : 0, .dim = -1, .dtype = DT_COUNT};
  if (!norm_p(sema, pa, DT_COUNT, &a.p)) return poison(sema);
  if (!dtype_is_float(r)) {
    diag_error(sema->cx, call_loc(e), "norm(): input dtype should be either floating point or complex. Got %s instead.",
               torch_name(r));
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 2);
}

// ============================================================================
// norm
// ============================================================================
// norm's p: a number, or 'fro' (2), of a norm over dtype dt (which must be a float);
// false after the message
bool norm_p(Sema *sema, Ast *pa, DType dt, double *p) {
  *p = 2;
  if (pa && pa->ty->kind == TY_STR) {
    if (strcmp(pa->ty->module, "fro")) {
      diag_error(sema->cx, pa->loc, "norm: p='%s' is not supported: tdsl has the vector p-norms and 'fro'",
                 pa->ty->module);
      return false;
    }
  } else if (pa && is_scalar(pa->ty)) {
    *p = pa->ty->fval;
  } else if (pa) {
    diag_error(sema->cx, pa->loc, "norm(): argument 'p' must be Number, not %s", py_type_name(pa->ty));
    return false;
  }
  if (dt != DT_COUNT && !dtype_is_float(dt)) {
    diag_error(sema->cx, pa ? pa->loc : (Loc){0}, "norm(): input dtype should be either floating point or complex. "
               "Got %s instead.", torch_name(dt));
    return false;
  }
  return true;
}

// norm(input, p='fro', dim=None, keepdim=False, dtype=None): vector p-norms over dim (all
// dims by default); 'fro' is the 2-norm
TType *ck_norm(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *x = e->bargs[0], *pa = barg(e, 1), *da = barg(e, 2), *ka = barg(e, 3), *dta = barg(e, 4);
  ReduceArgs a = {.dtype = DT_COUNT};
  if (!norm_p(sema, pa, DT_COUNT, &a.p)) return poison(sema);
  DType dt = x->ty->dtype;
  if (dta && !get_dtype(sema, e, dta, &dt)) return poison(sema);
  if (dta) a.dtype = dt;
  if (!dtype_is_float(dt)) {
    diag_error(sema->cx, call_loc(e), "norm(): input dtype should be either floating point or complex. Got %s instead.",
               torch_name(dt));
    return poison(sema);
  }
  int nd = x->ty->view.ndim, dims[MAX_LIST], n = 0;
  if (da && !get_dims(sema, e, da, "dim", nd, dims, &n)) return poison(sema);
  if (ka && !get_bool(sema, e, ka, "keepdim", &a.keepdim)) return poison(sema);
  for (int i = 0; i < n; i++) a.mask |= 1u << dims[i];
  if (!n) a.mask = nd ? (uint32_t)((1ull << nd) - 1) : 0;
  a.dim = n == 1 ? dims[0] : -1;
  if (isinf(a.p) && !n && view_numel(x->ty->view) == 0) {  // amax, amin need elements
    diag_error(sema->cx, call_loc(e), "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify "
               "the reduction dim with the 'dim' argument.", a.p > 0 ? "amax" : "amin");
    return poison(sema);
  }
  return built(sema, e, d->b.build, KEEP(sema, a), e->bargs, 1);
}
