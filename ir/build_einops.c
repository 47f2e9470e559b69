// ir/build_einops.c: einops' rearrange, repeat and reduce (ir/build.h's EinopsArgs), as
// einops' _apply_recipe applies its recipe with PyTorch's ops: torch.stack of a list,
// reshape, permute, the reduction (amax, amin, sum, mean over the dims at once; prod,
// any, all one dim at a time, as PyTorch's take one), unsqueeze and expand, reshape; and
// einops.pack (reshapes and torch.cat) and unpack (slices reshaped: views).
// Invariant: every step is the primitive PyTorch's op is, so the result is a view of the
// input exactly when PyTorch's would be (splits, merges a view allows, permutes and
// expands are views; a merge strides do not allow is a copy; a reduction is a node).
#include "ir/build.h"

int build_einops(Builder *b, const void *args, Value **out) {
  const EinopsArgs *a = args;
  Value *x;
  if (a->stack) {
    Value **xs = arena_alloc(&b->g->cx->arena, sizeof(Value *) * (size_t)b->nin);
    for (int i = 0; i < b->nin; i++) xs[i] = b_in(b, i);
    x = build_stack(b, xs, b->nin, 0);
  } else {
    x = b_in(b, 0);
  }
  if (a->ninit) x = build_reshape(b, x, a->ninit, a->init);
  if (a->nperm) x = build_permute(b, x, a->perm);
  if (a->nreduce) {
    int nd = x->view.ndim;
    if (a->each)
      for (int d = nd - 1; d >= nd - a->nreduce; d--) x = build_reduce_dim(b, a->op, x, d, false);
    else
      x = build_reduce_mask(b, a->op, x, b_dims_from(nd - a->nreduce, nd), -1, false, DT_COUNT);
  }
  if (a->nadd) {
    for (int i = 0; i < a->nadd; i++) x = build_unsqueeze(b, x, a->add_at[i]);
    int64_t shape[TD_MAX_DIMS];
    for (int i = 0; i < x->view.ndim; i++) shape[i] = x->view.shape[i];
    for (int i = 0; i < a->nadd; i++) shape[a->add_at[i]] = a->add_len[i];
    x = build_expand(b, x, x->view.ndim, shape);
  }
  if (a->nfinal) x = build_reshape(b, x, a->nfinal, a->final);
  out[0] = x;
  return 1;
}

int build_einops_pack(Builder *b, const void *args, Value **out) {
  const EinopsPackArgs *a = args;
  Value **xs = arena_alloc(&b->g->cx->arena, sizeof(Value *) * (size_t)b->nin);
  for (int i = 0; i < b->nin; i++) xs[i] = build_reshape(b, b_in(b, i), a->ndim[i], a->shape[i]);
  out[0] = build_cat(b, xs, b->nin, a->dim);
  return 1;
}

int build_einops_unpack(Builder *b, const void *args, Value **out) {
  const EinopsPackArgs *a = args;
  Value *x = b_in(b, 0);
  for (int i = 0; i < a->n; i++)
    out[i] = build_reshape(b, build_narrow(b, x, a->dim, a->start[i], a->len[i]), a->ndim[i], a->shape[i]);
  return a->n;
}
