// frontend/sema_nn.c: the helpers every checker of the op library shares — Python literals
// at a call's place (part_float, part_int, part_dtype: arguments, never ops), become() —
// and the torch.nn.functional ops that are checked here: embedding, one_hot,
// scaled_dot_product_attention. Each checker reports every misuse (PyTorch's message, in
// PyTorch's order), then hands the call to its builder (ir/build.h) or makes its node.
#include "frontend/sema_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

// ============================================================================
// Literals of Python values at a call's place
// ============================================================================
// A Python float (or int) literal at e's location.
Ast *part_float(Sema *sema, const Ast *e, double v) {
  Ast *n = ast_float(sema->cx, v, e->loc);
  n->ty = ty_float(sema, v);
  return n;
}
Ast *part_dtype(Sema *sema, const Ast *e, DType dt) {
  Ast *n = ast_dtype(sema->cx, dt, e->loc);
  n->ty = ty_dtype(sema, dt);
  return n;
}
Ast *part_int(Sema *sema, const Ast *e, int64_t v) {
  Ast *n = ast_int(sema->cx, v, e->loc);
  n->ty = ty_int(sema, v);
  return n;
}

// e becomes the node of its last part y; returns y's type.
TType *become(Sema *sema, Ast *e, const Ast *y) {
  if (is_poison(y->ty)) return poison(sema);
  e->bi = y->bi;
  e->args = y->args;
  e->attr = y->attr;
  e->needs_copy = y->needs_copy;
  set_operands(sema, e, y->operands, y->noperands);
  return y->ty;
}

// ============================================================================
// Helpers of the ops below: arithmetic parts, Python number arguments, dtypes
// ============================================================================



// ============================================================================
// embedding, one_hot, bilinear
// ============================================================================
// How PyTorch's CUDA build names an index tensor of the wrong dtype.
static const char *cuda_type_name(Sema *sema, DType dt) {
  if (dt == DT_BOOL) return "CUDABoolType";
  if (dt == DT_BF16) return "CUDABFloat16Type";
  return arena_printf(&sema->cx->arena, "torch.cuda.%s", torch_tensor_name(dt));
}

// F.embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
// scale_grad_by_freq=False, sparse=False): weight's rows at input (padding_idx,
// scale_grad_by_freq and sparse change only the gradient); max_norm renormalizes rows of
// weight in place, which tdsl does not do.
TType *ck_embedding(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *ia = e->bargs[0], *wa = e->bargs[1];
  TType *it = get_tensor(sema, e, ia, "input"), *wt = it ? get_tensor(sema, e, wa, "weight") : NULL;
  int64_t pad;
  double norm_type;
  bool flag;
  if (!wt) return poison(sema);
  if (barg(e, 2)) {
    if (!get_int(sema, e, e->bargs[2], "padding_idx", &pad)) return poison(sema);
    int64_t rows = wt->view.ndim ? wt->view.shape[0] : 1;
    if (pad >= rows || pad < -rows) {
      diag_error(sema->cx, e->bargs[2]->loc, "Padding_idx must be within num_embeddings");
      return poison(sema);
    }
  }
  if (barg(e, 3)) {
    diag_error(sema->cx, e->bargs[3]->loc, "embedding(): max_norm is not supported: it renormalizes rows of weight in "
               "place");
    return poison(sema);
  }
  if (!num_arg(sema, e, 4, "norm_type", "float", 2, &norm_type) ||
      (barg(e, 5) && !get_bool(sema, e, e->bargs[5], "scale_grad_by_freq", &flag)) ||
      (barg(e, 6) && !get_bool(sema, e, e->bargs[6], "sparse", &flag)))
    return poison(sema);
  if (wt->view.ndim != 2) {
    diag_error(sema->cx, wa->loc, "'weight' must be 2-D");
    return poison(sema);
  }
  if (it->dtype != DT_I32 && it->dtype != DT_I64) {
    diag_error(sema->cx, ia->loc, "Expected tensor for argument #1 'indices' to have one of the following scalar "
               "types: Long, Int; but got %s instead (while checking arguments for embedding)",
               cuda_type_name(sema, it->dtype));
    return poison(sema);
  }
  if (!check_rank(sema, call_loc(e), it->view.ndim + 1)) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (IndexArgs){0}), e->bargs, 2);
}

// F.one_hot(tensor, num_classes=-1): (tensor.unsqueeze(-1) == arange(num_classes)).long(),
// one elementwise kernel the size of the result. PyTorch's CPU build checks the values
// (its CUDA build leaves it to a device assert); here a value outside [0, num_classes)
// gives a row of zeros. num_classes=-1 takes the count from the values, which are not
// known when compiling: refused.
TType *ck_one_hot(Sema *sema, Ast *e, const BuiltinDef *d) {
  Ast *ta = e->bargs[0];
  TType *t = get_tensor(sema, e, ta, "tensor");
  int64_t n = -1;
  if (!t || (barg(e, 1) && !get_int(sema, e, e->bargs[1], "num_classes", &n))) return poison(sema);
  if (t->dtype != DT_I64) {
    diag_error(sema->cx, call_loc(e), "one_hot is only applicable to index tensor.");
    return poison(sema);
  }
  Loc nloc = barg(e, 1) ? e->bargs[1]->loc : call_loc(e);
  if (view_numel(t->view) == 0 && n <= 0) {
    diag_error(sema->cx, nloc, "Can not infer total number of classes from empty tensor.");
    return poison(sema);
  }
  if (n == -1) {  // the number of classes: the largest value + 1, of a tensor of constants
    const CreateArgs *c = literal_of(sema, ta);
    if (!c) {
      diag_error(sema->cx, nloc, "one_hot(): num_classes=-1 takes the number of classes from the values, which are "
                 "known only at run time: pass num_classes");
      return poison(sema);
    }
    for (int64_t i = 0; i < c->n; i++) {
      int64_t v = literal_int(c, i);
      if (v < 0) {
        diag_error(sema->cx, ta->loc, "Class values must be non-negative.");
        return poison(sema);
      }
      if (v + 1 > n) n = v + 1;
    }
  }
  if (n <= 0 && view_numel(t->view) != 0) {
    diag_error(sema->cx, nloc, "Class values must be smaller than num_classes.");
    return poison(sema);
  }
  if (!check_rank(sema, call_loc(e), t->view.ndim + 1)) return poison(sema);
  return built(sema, e, d->b.build, KEEP(sema, (IndexArgs){.classes = n}), e->bargs, 1);
}

// ============================================================================
// scaled_dot_product_attention
// ============================================================================
// F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
// is_causal=False, scale=None) as PyTorch 2 defines it: softmax(q @ k^T * scale + bias) @ v,
// the bias -inf where a bool mask is false or above the diagonal when causal, or a float
// mask added. That composition (PyTorch's math path) is built first, to check: its
// diagnostics and its result's type are PyTorch's. The call then becomes one node,
// OP_SDPA, of query, key, value and the mask, each expanded to the result's batch dims
// (views), which ir/attn.c computes as one kernel; the parts are left unused.
TType *ck_sdpa(Sema *sema, Ast *e, const BuiltinDef *d) {
  (void)d;
  Ast *q = e->bargs[0], *k = e->bargs[1], *v = e->bargs[2], *mask = barg(e, 3), *pa = barg(e, 4), *ca = barg(e, 5),
      *sa = barg(e, 6);
  const TType *qt = q->ty, *kt = get_tensor(sema, e, k, "key"), *vt = kt ? get_tensor(sema, e, v, "value") : NULL;
  if (!vt || (mask && !get_tensor(sema, e, mask, "attn_mask"))) return poison(sema);
  if (qt->dtype != kt->dtype || qt->dtype != vt->dtype) {
    diag_error(sema->cx, call_loc(e), "Expected query, key, and value to have the same dtype, but got query.dtype: %s "
               "key.dtype: %s and value.dtype: %s instead.", torch_name(qt->dtype), torch_name(kt->dtype),
               torch_name(vt->dtype));
    return poison(sema);
  }
  if (qt->view.ndim < 2 || kt->view.ndim < 2 || vt->view.ndim < 2) {
    diag_error(sema->cx, call_loc(e), "scaled_dot_product_attention: query, key and value must have at least 2 "
               "dimensions");
    return poison(sema);
  }
  bool causal = false;
  if (ca && !get_bool(sema, e, ca, "is_causal", &causal)) return poison(sema);
  if (causal && mask) {
    diag_error(sema->cx, mask->loc, "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
               "is_causal=True");
    return poison(sema);
  }
  if (pa && (!is_scalar(pa->ty) || pa->ty->fval != 0)) {
    diag_error(sema->cx, pa->loc, "dropout_p must be 0: tdsl computes inference, where PyTorch's callers pass 0.0");
    return poison(sema);
  }
  if (sa && !is_scalar(sa->ty)) {
    diag_error(sema->cx, sa->loc, "scaled_dot_product_attention(): argument 'scale' must be float, not %s",
               py_type_name(sa->ty));
    return poison(sema);
  }
  int64_t E = qt->view.shape[qt->view.ndim - 1], L = qt->view.shape[qt->view.ndim - 2],
          S = kt->view.shape[kt->view.ndim - 2];
  double scale = sa ? sa->ty->fval : 1.0 / sqrt((double)E);
  // the types of PyTorch's math path: s = q @ k^T * scale (+ the mask), softmax(s) @ v
  Loc loc = call_loc(e);
  TType *kT = ty_view_of(sema, kt, view_transpose(kt->view, kt->view.ndim - 2, kt->view.ndim - 1));
  int ns, nr;
  int64_t ss[TD_MAX_DIMS], rs[TD_MAX_DIMS];
  if (!matmul_shape(sema, loc, qt, kT, &ns, ss) || !check_numel(sema, loc, ns, ss)) return poison(sema);
  TType *st = ty_fresh(sema, qt->dtype, ns, ss);
  if (causal || mask) {  // where(mask, s, -inf) (the mask's shape first) or s + mask
    const TType *mt = causal ? ty_fresh(sema, DT_BOOL, 2, (int64_t[]){L, S}) : mask->ty;
    bool added = mask && mask->ty->dtype != DT_BOOL;
    int nb = added ? ns : mt->view.ndim;
    int64_t bs[TD_MAX_DIMS];
    memcpy(bs, added ? ss : mt->view.shape, sizeof(int64_t) * (size_t)nb);
    if (!broadcast(sema, loc, &nb, bs, added ? mt->view.ndim : ns, added ? mt->view.shape : ss) ||
        !check_numel(sema, loc, nb, bs))
      return poison(sema);
    memcpy(ss, bs, sizeof(int64_t) * (size_t)nb);
    TType *ts[2] = {st, (TType *)mt};
    st = ty_fresh(sema, mask && mask->ty->dtype != DT_BOOL ? result_type(sema, ts, 2) : qt->dtype, nb, ss);
  }
  if (!matmul_shape(sema, loc, st, vt, &nr, rs) || !check_numel(sema, loc, nr, rs)) return poison(sema);
  int nd = nr;
  TD_ASSERT(nd >= 2);
  Ast *ops[4] = {q, k, v, mask};
  int nops = mask ? 4 : 3;
  for (int i = 0; i < nops; i++) {  // each to the result's batch dims, its own last two
    const View *ov = &ops[i]->ty->view;
    int64_t shape[TD_MAX_DIMS];
    memcpy(shape, rs, sizeof(int64_t) * (size_t)(nd - 2));
    bool m = i == 3;  // a mask broadcasts in its last dims too
    shape[nd - 2] = m ? L : ov->shape[ov->ndim - 2];
    shape[nd - 1] = m ? S : ov->shape[ov->ndim - 1];
    View xv;
    if (!expand_to(sema, loc, ops[i]->ty, nd, shape, &xv)) return poison(sema);
    ops[i] = view_ast(sema, e, ops[i], xv);
  }
  e->attr.scale = scale;
  e->attr.causal = causal;
  set_operands(sema, e, ops, nops);
  return ty_fresh(sema, st->dtype, nd, rs);
}
