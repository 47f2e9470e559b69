// frontend/sema_builtin.c: the op table (LANGUAGE.md §5-6), one BuiltinDef per op with
// PyTorch 1.13's parameter list, and the binding of a call's arguments to it the way
// PyTorch's argument parser does (positional, keyword, *varargs, keyword-only), with its
// messages; the get_* readers of bound arguments; the suggestions for a misspelt name
// ("Did you mean: 'softmax'?") and the hints for PyTorch spellings tdsl lacks.
// Invariant: after bind_args, e->bargs has a slot per parameter, in the signature's order.
#include "frontend/sema_internal.h"

#include <stdio.h>
#include <string.h>

// ============================================================================
// Argument binding in PyTorch 1.13's style
// ============================================================================
enum { MAX_PARAMS = 12 };
typedef struct Param {
  char name[24];
  bool opt, vararg, kwonly;
} Param;

// "input, dim=None, keepdim=False, *, dtype=None" -> params
static int parse_sig(const char *sig, Param *ps) {
  int n = 0;
  bool kwonly = false;
  const char *s = sig;
  while (*s) {
    while (*s == ' ' || *s == ',') s++;
    if (!*s) break;
    const char *t = s;
    while (*t && *t != ',') t++;
    size_t len = (size_t)(t - s);
    if (len == 1 && *s == '*') {
      kwonly = true;
    } else {
      TD_ASSERT(n < MAX_PARAMS);
      Param *p = &ps[n++];
      memset(p, 0, sizeof *p);
      p->kwonly = kwonly;
      if (*s == '*') {
        p->vararg = p->opt = true;
        s++, len--;
        kwonly = true;
      }
      const char *eq = memchr(s, '=', len);
      size_t nl = eq ? (size_t)(eq - s) : len;
      if (eq) p->opt = true;
      TD_ASSERT(nl < sizeof p->name);
      memcpy(p->name, s, nl);
    }
    s = t;
  }
  return n;
}

static Ast *synth_list(Sema *sema, Ast **items, int n, Loc loc) {
  Ast *l = ast_new(sema->cx, AST_LIST, loc);
  for (int i = 0; i < n; i++) vec_push(&sema->cx->arena, &l->list, items[i]);
  if (n > 0) l->loc = loc_join(items[0]->loc, items[n - 1]->loc);
  TType *t = ty_new(sema, TY_LIST);
  t->nelem = n;
  t->elems = arena_alloc(&sema->cx->arena, sizeof(TType *) * (size_t)(n + 1));
  for (int i = 0; i < n; i++) t->elems[i] = items[i]->ty;
  l->ty = t;
  set_operands(sema, l, items, n);
  return l;
}

// Bind self (method form) and e->list to the parameters of d; fills e->bargs.
bool bind_args(Sema *sema, Ast *e, const BuiltinDef *d, Ast *self) {
  Param ps[MAX_PARAMS];
  int np = parse_sig(d->b.sig, ps);
  const char *fname = d->b.name;
  Ast **out = arena_alloc(&sema->cx->arena, sizeof(Ast *) * MAX_PARAMS);
  bool given[MAX_PARAMS] = {0};
  int self_at = -1;
  if (self) {
    for (int i = 0; i < np; i++)
      if (!strcmp(ps[i].name, "input")) self_at = i;
    if (self_at < 0) self_at = 0;
    out[self_at] = self;
    given[self_at] = true;
  }
  // positional arguments
  Ast *pos[MAX_LIST];
  int npos = 0, total_pos = self ? 1 : 0;
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind == AST_KWARG) continue;
    total_pos++;
    if (npos < MAX_LIST) pos[npos++] = a;
  }
  int k = 0, maxpos = 0;
  for (int i = 0; i < np; i++)
    if (!ps[i].kwonly || ps[i].vararg) maxpos++;
  for (int i = 0; i < np && k < npos; i++) {
    if (given[i] || (ps[i].kwonly && !ps[i].vararg)) continue;
    if (ps[i].vararg) {
      if (npos - k == 1 && pos[k]->ty && (pos[k]->ty->kind == TY_LIST || pos[k]->ty->kind == TY_TUPLE))
        out[i] = pos[k];  // x.view((2, 3)), x.view(y.shape): the sequence itself
      else out[i] = synth_list(sema, pos + k, npos - k, pos[k]->loc);
      k = npos;
    } else {
      out[i] = pos[k++];
    }
    given[i] = true;
  }
  if (k < npos) {
    diag_error(sema->cx, pos[k]->loc, "%s() takes %d positional argument%s but %d were given", fname, maxpos,
               maxpos == 1 ? "" : "s", total_pos);
    return false;
  }
  // keyword arguments
  for (int i = 0; i < e->list.len; i++) {
    Ast *a = e->list.data[i];
    if (a->kind != AST_KWARG) continue;
    int j = 0;
    while (j < np && strcmp(ps[j].name, a->name)) j++;
    if (j == np) {
      Suggest sg = suggest_start(a->name);
      for (int q = 0; q < np; q++) suggest(&sg, ps[q].name);
      diag_error(sema->cx, a->loc, "%s() got an unexpected keyword argument '%s'%s", fname, a->name,
                 suggestion(sema, &sg));
      return false;
    }
    if (given[j]) {
      diag_error(sema->cx, a->loc, "%s() got multiple values for argument '%s'", fname, a->name);
      return false;
    }
    out[j] = a->rhs;
    given[j] = true;
  }
  // tensor options (device=, requires_grad= ...): checked, then ignored
  for (int i = 0; i < np; i++)
    if (given[i] && out[i] && is_tensor_option(ps[i].name) && !tensor_option(sema, e, ps[i].name, out[i]))
      return false;
  // missing ones
  const char *miss[MAX_PARAMS];
  int nmiss = 0;
  for (int i = 0; i < np; i++)  // a size or dims list may not be left out: x.view() is an error
    if (!given[i] && (!ps[i].opt || ps[i].vararg)) miss[nmiss++] = ps[i].name;
  if (nmiss) {
    // PyTorch's argument parser, verbatim (its plural is "arguments" for exactly one)
    char buf[256];
    int len = 0;
    for (int i = 0; i < nmiss && len < (int)sizeof buf; i++)
      len += snprintf(buf + len, sizeof buf - (size_t)len, "%s\"%s\"", i == 0 ? "" : ", ", miss[i]);
    diag_error(sema->cx, call_loc(e), "%s() missing %d required positional argument%s: %s", fname, nmiss,
               nmiss == 1 ? "s" : "", buf);
    return false;
  }
  e->bargs = out;
  e->nbargs = np;
  return true;
}

// The bound argument i, or NULL when absent or None.
Ast *barg(const Ast *e, int i) {
  if (i >= e->nbargs) return NULL;
  Ast *a = e->bargs[i];
  if (!a || !a->ty || a->ty->kind == TY_NONE) return NULL;
  return a;
}

// PyTorch names an argument "'dim' (position 2)": 1-based, self not counted in the method form.
const char *arg_name(Sema *sema, const Ast *e, const char *pname) {
  if (!e->bi || !e->bi->sig) return arena_printf(&sema->cx->arena, "'%s'", pname);
  Param ps[MAX_PARAMS];
  int np = parse_sig(e->bi->sig, ps), self = e->kind == AST_CALL && e->lhs ? 1 : 0;
  for (int i = 0; i < np; i++)
    if (!strcmp(ps[i].name, pname) && !ps[i].kwonly && i + 1 - self > 0)
      return arena_printf(&sema->cx->arena, "'%s' (position %d)", pname, i + 1 - self);
  return arena_printf(&sema->cx->arena, "'%s'", pname);
}

// What follows a type error on a tensor where a number is needed: a tensor's value is the
// data's, known only when the program runs.
static const char *data_note(const TType *t) {
  return is_tensor(t) && !t->wrapped ? ": a tensor's value is known only when the program runs (a size comes from "
                                       "x.shape, len(x), a const or a literal)" : "";
}

bool get_int(Sema *sema, const Ast *e, Ast *a, const char *pname, int64_t *out) {
  if (is_scalar(a->ty) && a->ty->dtype != DT_F64) {
    *out = a->ty->ival;
    return true;
  }
  diag_error(sema->cx, a->loc, "%s(): argument %s must be int, not %s%s", e->bi ? e->bi->name : e->name,
             arg_name(sema, e, pname), py_type_name(a->ty), data_note(a->ty));
  return false;
}
bool get_bool(Sema *sema, const Ast *e, Ast *a, const char *pname, bool *out) {
  if (is_scalar(a->ty) && a->ty->dtype == DT_BOOL) {
    *out = a->ty->ival != 0;
    return true;
  }
  diag_error(sema->cx, a->loc, "%s(): argument %s must be bool, not %s", e->bi ? e->bi->name : e->name,
             arg_name(sema, e, pname), py_type_name(a->ty));
  return false;
}
// An int, or a list of ints (sizes, dims); at most MAX_LIST entries.
bool get_ints(Sema *sema, const Ast *e, Ast *a, const char *pname, int64_t *out, int *n) {
  const TType *t = a->ty;
  if (is_scalar(t) && t->dtype != DT_F64) {
    out[0] = t->ival;
    *n = 1;
    return true;
  }
  bool seq = t->kind == TY_LIST || t->kind == TY_TUPLE;
  if (seq && t->nelem <= MAX_LIST) {
    for (int i = 0; i < t->nelem; i++) {
      const TType *el = t->elems[i];
      if (!is_scalar(el) || el->dtype == DT_F64) {
        const Ast *ea = (a->kind == AST_LIST || a->kind == AST_TUPLE) && i < a->list.len ? a->list.data[i] : a;
        if (is_poison(el)) return false;
        diag_error(sema->cx, ea->loc, "%s(): argument %s must be tuple of ints, but found element of type %s at pos "
                   "%d%s", e->bi ? e->bi->name : e->name, arg_name(sema, e, pname), py_type_name(el), i, data_note(el));
        return false;
      }
      out[i] = el->ival;
    }
    *n = t->nelem;
    return true;
  }
  if (seq) {
    diag_error(sema->cx, a->loc, "too many dimensions in '%s': at most %d", pname, MAX_LIST);
    return false;
  }
  diag_error(sema->cx, a->loc, "%s(): argument %s must be tuple of ints, not %s", e->bi ? e->bi->name : e->name,
             arg_name(sema, e, pname), py_type_name(t));
  return false;
}
TType *get_tensor(Sema *sema, const Ast *e, Ast *a, const char *pname) {
  if (is_tensor(a->ty)) return a->ty;
  diag_error(sema->cx, a->loc, "%s(): argument %s must be Tensor, not %s", e->bi ? e->bi->name : e->name,
             arg_name(sema, e, pname), py_type_name(a->ty));
  return NULL;
}
bool get_dtype(Sema *sema, const Ast *e, Ast *a, DType *out) {
  if (a->ty->kind == TY_DTYPE) {
    *out = a->ty->dtype;
    return true;
  }
  diag_error(sema->cx, a->loc, "%s(): argument 'dtype' must be torch.dtype, not %s", e->bi ? e->bi->name : e->name,
             py_type_name(a->ty));
  return false;
}

// Wrap a list of dims and reject repeats ("dim 0 appears multiple times ...").
bool get_dims(Sema *sema, const Ast *e, Ast *a, const char *pname, int ndim, int *dims, int *n) {
  int64_t req[MAX_LIST];
  if (!get_ints(sema, e, a, pname, req, n)) return false;
  uint32_t seen = 0;
  for (int i = 0; i < *n; i++) {
    if (!wrap_dim(sema, a->loc, req[i], ndim, &dims[i])) return false;
    if (seen & (1u << dims[i])) {
      diag_error(sema->cx, a->loc, "dim %d appears multiple times in the list of dims", dims[i]);
      return false;
    }
    seen |= 1u << dims[i];
  }
  return true;
}

void set_operands(Sema *sema, Ast *e, Ast **ops, int n) {
  e->operands = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) e->operands[i] = ops[i];
  e->noperands = n;
}
void set_operand1(Sema *sema, Ast *e, Ast *a) { set_operands(sema, e, &a, 1); }

// ============================================================================
// The op table (LANGUAGE.md §5-6) with PyTorch 1.13's parameter lists; the last column
// says where PyTorch 1.13 has the function besides the bare name and the method:
// torch.NAME (F_TORCH), torch.nn.functional.NAME (F_NNF)
// ============================================================================
#define VIEWOP(n, sig, ck, ns) {{n, BK_VIEW, OP_COPY, sig}, ck, F_BOTH | (ns), OP_COUNT}
#define NODE(n, op, sig, ck, forms, ns) {{n, BK_NODE, OP_##op, sig}, ck, (forms) | (ns), OP_COUNT}
#define UNARY(n, op, ns) NODE(n, op, "input", ck_unary, F_BOTH, ns)
#define BINARY(n, op, ns) NODE(n, op, "input, other", ck_binary, F_BOTH, ns)
#define REDUCE(n, op, sig, ns) NODE(n, op, sig, ck_reduce, F_BOTH, ns)
#define DROPOUT(n, training) \
  {{n, BK_VIEW, OP_COPY, "input, p=0.5, training=" training ", inplace=False"}, ck_dropout, F_FN | F_NNF, OP_COUNT}
#define INPLACE(n, op, sig, ck, aux) {{n, BK_NODE, OP_##op, sig}, ck, F_METH, aux}
#define WRITE(n, op, sig, ck, aux) {{n, BK_NODE, OP_##op, sig}, ck, F_BOTH | F_TORCH, aux}, INPLACE(n "_", op, sig, ck, aux)
#define CAST(n, dt) {{n, BK_VIEW, OP_COPY, "input"}, ck_cast, F_METH, (Op)dt}
// the tensor options of PyTorch's creation ops: checked and ignored (sema_python.c)
#define OPTS ", device=None, requires_grad=False, pin_memory=False, layout=None"

static const BuiltinDef builtins[] = {
    // views
    VIEWOP("view", "input, *size", ck_view, 0),
    VIEWOP("reshape", "input, *shape", ck_reshape, F_TORCH),
    VIEWOP("flatten", "input, start_dim=0, end_dim=-1", ck_flatten, F_TORCH),
    VIEWOP("transpose", "input, dim0, dim1", ck_transpose, F_TORCH),
    VIEWOP("t", "input", ck_t, F_TORCH),
    {{"T", BK_VIEW, OP_COPY, "input"}, ck_T, 0, OP_COUNT},
    VIEWOP("permute", "input, *dims", ck_permute, F_TORCH),
    VIEWOP("unsqueeze", "input, dim", ck_unsqueeze, F_TORCH),
    VIEWOP("squeeze", "input, dim=None", ck_squeeze, F_TORCH),
    VIEWOP("expand", "input, *size", ck_expand, 0),
    VIEWOP("expand_as", "input, other", ck_expand_as, 0),
    VIEWOP("select", "input, dim, index", ck_select, F_TORCH),
    VIEWOP("narrow", "input, dim, start, length", ck_narrow, F_TORCH),
    VIEWOP("diagonal", "input, offset=0, dim1=0, dim2=1", ck_diagonal, F_TORCH),
    VIEWOP("as_strided", "input, size, stride, storage_offset=None", ck_as_strided, F_TORCH),
    VIEWOP("flip", "input, *dims", ck_flip, F_TORCH),
    // several tensors: tuples of views (and max/min with a dim, among the reductions)
    VIEWOP("split", "input, split_size, dim=0", ck_split, F_TORCH),
    VIEWOP("chunk", "input, chunks, dim=0", ck_split, F_TORCH),
    VIEWOP("tensor_split", "input, indices_or_sections, dim=0", ck_split, F_TORCH),
    VIEWOP("unbind", "input, dim=0", ck_unbind, F_TORCH),
    {{"broadcast_tensors", BK_VIEW, OP_COPY, "*tensors"}, ck_broadcast_tensors, F_FN | F_TORCH, OP_COUNT},
    {{"meshgrid", BK_VIEW, OP_COPY, "*tensors, indexing=None"}, ck_meshgrid, F_FN | F_TORCH, OP_COUNT},
    // views and copies PyTorch defines by other ops (sema_alias.c)
    VIEWOP("view_as", "input, other", ck_view_alias, 0),
    VIEWOP("reshape_as", "input, other", ck_view_alias, 0),
    VIEWOP("type_as", "input, other", ck_view_alias, 0),
    VIEWOP("broadcast_to", "input, size", ck_view_alias, F_TORCH),
    VIEWOP("swapaxes", "input, axis0, axis1", ck_view_alias, F_TORCH),
    VIEWOP("swapdims", "input, dim0, dim1", ck_view_alias, F_TORCH),
    VIEWOP("movedim", "input, source, destination", ck_movedim, F_TORCH),
    VIEWOP("moveaxis", "input, source, destination", ck_movedim, F_TORCH),
    VIEWOP("unflatten", "input, dim, sizes", ck_unflatten, F_TORCH),
    {{"atleast_1d", BK_VIEW, OP_COPY, "input"}, ck_atleast, F_FN | F_TORCH, OP_COUNT},
    {{"atleast_2d", BK_VIEW, OP_COPY, "input"}, ck_atleast, F_FN | F_TORCH, OP_COUNT},
    {{"atleast_3d", BK_VIEW, OP_COPY, "input"}, ck_atleast, F_FN | F_TORCH, OP_COUNT},
    {{"unfold", BK_VIEW, OP_COPY, "input, dimension, size, step"}, ck_unfold, F_METH, OP_COUNT},
    VIEWOP("fliplr", "input", ck_flip_lr, F_TORCH),
    VIEWOP("flipud", "input", ck_flip_lr, F_TORCH),
    NODE("repeat", COPY, "input, *repeats", ck_repeat, F_METH, 0),
    NODE("tile", COPY, "input, dims", ck_repeat, F_BOTH, F_TORCH),
    NODE("repeat_interleave", COPY, "input, repeats, dim=None, *, output_size=None", ck_repeat_interleave, F_BOTH,
         F_TORCH),
    NODE("roll", CAT, "input, shifts, dims=None", ck_roll, F_BOTH, F_TORCH),
    // more spellings built from ops tdsl has (sema_more.c)
    UNARY("absolute", ABS, F_TORCH), UNARY("negative", NEG, F_TORCH), UNARY("sgn", SIGN, F_TORCH),
    BINARY("arctan2", ATAN2, F_TORCH), BINARY("greater", GT, F_TORCH), BINARY("greater_equal", GE, F_TORCH),
    BINARY("less", LT, F_TORCH), BINARY("less_equal", LE, F_TORCH), BINARY("not_equal", NE, F_TORCH),
    BINARY("multiply", MUL, F_TORCH), NODE("subtract", SUB, "input, other, *, alpha=1", ck_add, F_BOTH, F_TORCH),
    NODE("clip", CLAMP, "input, min=None, max=None", ck_clamp, F_BOTH, F_TORCH),
    NODE("clamp_min", CLAMP, "input, min", ck_clamp_one, F_BOTH, F_TORCH),
    NODE("clamp_max", CLAMP, "input, max", ck_clamp_one, F_BOTH, F_TORCH),
    NODE("logical_xor", NE, "input, other", ck_logical_xor, F_BOTH, F_TORCH),
    NODE("deg2rad", MUL, "input", ck_deg2rad, F_BOTH, F_TORCH),
    NODE("rad2deg", MUL, "input", ck_deg2rad, F_BOTH, F_TORCH),
    NODE("xlogy", MUL, "input, other", ck_xlogy, F_BOTH, F_TORCH),
    NODE("heaviside", WHERE, "input, values", ck_heaviside, F_BOTH, F_TORCH),
    NODE("logit", LOG, "input, eps=None", ck_logit, F_BOTH, F_TORCH),
    NODE("sinc", SIN, "input", ck_sinc, F_BOTH, F_TORCH),
    NODE("fmax", MAXIMUM, "input, other", ck_fmax, F_BOTH, F_TORCH),
    NODE("fmin", MINIMUM, "input, other", ck_fmax, F_BOTH, F_TORCH),
    NODE("float_power", POW, "input, exponent", ck_float_power, F_BOTH, F_TORCH),
    NODE("signbit", LT, "input", ck_signbit, F_BOTH, F_TORCH),
    NODE("hardshrink", WHERE, "input, lambd=0.5", ck_shrink, F_BOTH, F_TORCH | F_NNF),
    NODE("softshrink", WHERE, "input, lambd=0.5", ck_shrink, F_FN, F_NNF),
    NODE("prelu", WHERE, "input, weight", ck_prelu, F_BOTH, F_TORCH | F_NNF),
    NODE("addcmul", ADD, "input, tensor1, tensor2, *, value=1", ck_addcmul, F_BOTH, F_TORCH),
    NODE("addcdiv", ADD, "input, tensor1, tensor2, *, value=1", ck_addcmul, F_BOTH, F_TORCH),
    NODE("addmv", ADD, "input, mat, vec, *, beta=1, alpha=1", ck_addmm, F_BOTH, F_TORCH),
    NODE("addr", ADD, "input, vec1, vec2, *, beta=1, alpha=1", ck_addmm, F_BOTH, F_TORCH),
    NODE("mv", MATMUL, "input, vec", ck_mv, F_BOTH, F_TORCH),
    NODE("vdot", MATMUL, "input, other", ck_dot, F_BOTH, F_TORCH),
    NODE("trace", SUM, "input", ck_trace, F_BOTH, F_TORCH),
    NODE("count_nonzero", SUM, "input, dim=None", ck_count_nonzero, F_BOTH, F_TORCH),
    NODE("nansum", SUM, "input, dim=None, keepdim=False, *, dtype=None", ck_nansum, F_BOTH, F_TORCH),
    NODE("nanmean", SUM, "input, dim=None, keepdim=False, *, dtype=None", ck_nansum, F_BOTH, F_TORCH),
    NODE("aminmax", AMIN, "input, *, dim=None, keepdim=False", ck_aminmax, F_BOTH, F_TORCH),
    VIEWOP("ravel", "input", ck_ravel, F_TORCH),
    NODE("diag", WHERE, "input, diagonal=0", ck_diag, F_BOTH, F_TORCH),
    VIEWOP("rot90", "input, k=1, dims=None", ck_rot90, F_TORCH),
    VIEWOP("hsplit", "input, indices_or_sections", ck_hsplit, F_TORCH),
    VIEWOP("vsplit", "input, indices_or_sections", ck_hsplit, F_TORCH),
    VIEWOP("dsplit", "input, indices_or_sections", ck_hsplit, F_TORCH),
    VIEWOP("split_with_sizes", "input, split_sizes, dim=0", ck_split, F_TORCH),
    VIEWOP("unsafe_split", "input, split_size, dim=0", ck_split, F_TORCH),
    VIEWOP("unsafe_chunk", "input, chunks, dim=0", ck_split, F_TORCH),
    NODE("take_along_dim", GATHER, "input, indices, dim=None", ck_take_along_dim, F_BOTH, F_TORCH),
    VIEWOP("real", "input", ck_real, F_TORCH),
    NODE("isreal", ONES, "input", ck_real, F_BOTH, F_TORCH),
    NODE("angle", WHERE, "input", ck_real, F_BOTH, F_TORCH),
    NODE("ldexp", MUL, "input, other", ck_ldexp, F_BOTH, F_TORCH),
    NODE("dist", SUM, "input, other, p=2", ck_dist, F_BOTH, F_TORCH),
    NODE("diff", SUB, "input, n=1, dim=-1, prepend=None, append=None", ck_diff, F_BOTH, F_TORCH),
    NODE("inner", MATMUL, "input, other", ck_inner, F_BOTH, F_TORCH),
    NODE("take", INDEX_SELECT, "input, index", ck_take, F_BOTH, F_TORCH),
    NODE("diagflat", WHERE, "input, offset=0", ck_diagflat, F_BOTH, F_TORCH),
    NODE("narrow_copy", COPY, "input, dim, start, length", ck_diagflat, F_BOTH, F_TORCH),
    VIEWOP("adjoint", "input", ck_view_alias, F_TORCH),
    NODE("slice_scatter", INDEX_PUT, "input, src, dim=0, start=None, end=None, step=1", ck_view_scatter, F_BOTH, F_TORCH),
    NODE("select_scatter", INDEX_PUT, "input, src, dim, index", ck_view_scatter, F_BOTH, F_TORCH),
    NODE("diagonal_scatter", INDEX_PUT, "input, src, offset=0, dim1=0, dim2=1", ck_view_scatter, F_BOTH, F_TORCH),
    NODE("masked_scatter", INDEX_PUT, "input, mask, source", ck_masked_scatter, F_BOTH, F_TORCH),
    NODE("nonzero", INDEX, "input", ck_data_dependent, F_BOTH, F_TORCH),
    NODE("argwhere", INDEX, "input", ck_data_dependent, F_BOTH, F_TORCH),
    NODE("masked_select", INDEX, "input, mask", ck_data_dependent, F_BOTH, F_TORCH),
    NODE("unique", INDEX, "input, sorted=True, return_inverse=False, return_counts=False, dim=None",
         ck_data_dependent, F_BOTH, F_TORCH),
    NODE("unique_consecutive", INDEX, "input, return_inverse=False, return_counts=False, dim=None",
         ck_data_dependent, F_BOTH, F_TORCH),
    NODE("bincount", INDEX, "input, weights=None, minlength=0", ck_data_dependent, F_BOTH, F_TORCH),
    NODE("equal", EQ, "input, other", ck_data_dependent, F_BOTH, F_TORCH),
    NODE("allclose", EQ, "input, other, rtol=1e-05, atol=1e-08, equal_nan=False", ck_data_dependent, F_BOTH,
         F_TORCH),
    // a tensor's Python values: compile-time numbers, no node
    {{"size", BK_VIEW, OP_COPY, "input, dim=None"}, ck_size, F_METH, OP_COUNT},
    {{"dim", BK_VIEW, OP_COPY, "input"}, ck_size, F_METH, OP_COUNT},
    {{"ndimension", BK_VIEW, OP_COPY, "input"}, ck_size, F_METH, OP_COUNT},
    {{"numel", BK_VIEW, OP_COPY, "input"}, ck_size, F_METH | F_TORCH, OP_COUNT},
    {{"nelement", BK_VIEW, OP_COPY, "input"}, ck_size, F_METH, OP_COUNT},
    {{"is_floating_point", BK_VIEW, OP_COPY, "input"}, ck_size, F_BOTH | F_TORCH, OP_COUNT},
    VIEWOP("contiguous", "input", ck_contiguous, 0),
    DROPOUT("dropout", "True"), DROPOUT("dropout1d", "True"), DROPOUT("dropout2d", "True"),
    DROPOUT("dropout3d", "True"), DROPOUT("alpha_dropout", "False"), DROPOUT("feature_alpha_dropout", "False"),
    VIEWOP("to", "input, dtype=None, non_blocking=False, copy=False, *, device=None, memory_format=None", ck_to, 0),
    {{"cuda", BK_VIEW, OP_COPY, "input, device=None, non_blocking=False"}, ck_on_device, F_METH, OP_COUNT},
    {{"cpu", BK_VIEW, OP_COPY, "input"}, ck_on_device, F_METH, OP_COUNT},
    {{"type", BK_VIEW, OP_COPY, "input, dtype=None, non_blocking=False"}, ck_type, F_METH, OP_COUNT},
    // Python objects (sema_python.c): torch.device, torch.finfo, torch.iinfo, constant tensors
    {{"device", BK_VIEW, OP_COPY, "type, index=None"}, ck_device, F_FN | F_TORCH, OP_COUNT},
    {{"finfo", BK_VIEW, OP_COPY, "type=None"}, ck_finfo, F_FN | F_TORCH, OP_COUNT},
    {{"iinfo", BK_VIEW, OP_COPY, "type"}, ck_finfo, F_FN | F_TORCH, OP_COUNT},
    NODE("tensor", COPY, "data, *, dtype=None" OPTS, ck_tensor, F_FN, F_TORCH),
    NODE("as_tensor", COPY, "data, dtype=None, device=None", ck_tensor, F_FN, F_TORCH),
    NODE("scalar_tensor", COPY, "s, *, dtype=None" OPTS, ck_tensor, F_FN, F_TORCH),
    CAST("float", DT_F32), CAST("double", DT_F64), CAST("int", DT_I32), CAST("long", DT_I64),
    CAST("half", DT_F16), CAST("bfloat16", DT_BF16), CAST("bool", DT_BOOL), CAST("byte", DT_U8),
    CAST("char", DT_I8), CAST("short", DT_I16),
    NODE("clone", CLONE, "input", ck_clone, F_BOTH, F_TORCH),
    // unary
    UNARY("neg", NEG, F_TORCH), UNARY("abs", ABS, F_TORCH), UNARY("exp", EXP, F_TORCH), UNARY("log", LOG, F_TORCH),
    UNARY("log2", LOG2, F_TORCH),
    UNARY("exp2", EXP2, F_TORCH), UNARY("sqrt", SQRT, F_TORCH), UNARY("rsqrt", RSQRT, F_TORCH),
    UNARY("sin", SIN, F_TORCH), UNARY("cos", COS, F_TORCH),
    UNARY("tan", TAN, F_TORCH), UNARY("tanh", TANH, F_TORCH | F_NNF), UNARY("sigmoid", SIGMOID, F_TORCH | F_NNF),
    UNARY("relu", RELU, F_TORCH | F_NNF), NODE("gelu", GELU, "input, approximate='none'", ck_gelu, F_BOTH, F_NNF),
    UNARY("erf", ERF, F_TORCH), UNARY("floor", FLOOR, F_TORCH), UNARY("ceil", CEIL, F_TORCH),
    UNARY("round", ROUND, F_TORCH), UNARY("sign", SIGN, F_TORCH),
    UNARY("reciprocal", RECIPROCAL, F_TORCH), UNARY("square", SQUARE, F_TORCH), UNARY("silu", SILU, F_NNF),
    UNARY("bitwise_not", BITWISE_NOT, F_TORCH), UNARY("logical_not", LOGICAL_NOT, F_TORCH),
    UNARY("erfc", ERFC, F_TORCH), UNARY("lgamma", LGAMMA, F_TORCH),
    UNARY("expm1", EXPM1, F_TORCH), UNARY("log1p", LOG1P, F_TORCH), UNARY("log10", LOG10, F_TORCH),
    UNARY("trunc", TRUNC, F_TORCH), UNARY("fix", TRUNC, F_TORCH), UNARY("frac", FRAC, F_TORCH),
    UNARY("sinh", SINH, F_TORCH), UNARY("cosh", COSH, F_TORCH),
    UNARY("asin", ASIN, F_TORCH), UNARY("acos", ACOS, F_TORCH), UNARY("atan", ATAN, F_TORCH),
    UNARY("asinh", ASINH, F_TORCH), UNARY("acosh", ACOSH, F_TORCH), UNARY("atanh", ATANH, F_TORCH),
    UNARY("arcsin", ASIN, F_TORCH), UNARY("arccos", ACOS, F_TORCH), UNARY("arctan", ATAN, F_TORCH),
    UNARY("arcsinh", ASINH, F_TORCH), UNARY("arccosh", ACOSH, F_TORCH), UNARY("arctanh", ATANH, F_TORCH),
    NODE("isnan", NE, "input", ck_float_test, F_BOTH, F_TORCH), NODE("isinf", EQ, "input", ck_float_test, F_BOTH, F_TORCH),
    NODE("isfinite", LT, "input", ck_float_test, F_BOTH, F_TORCH),
    NODE("isposinf", EQ, "input", ck_float_test, F_BOTH, F_TORCH),
    NODE("isneginf", EQ, "input", ck_float_test, F_BOTH, F_TORCH),
    NODE("nan_to_num", WHERE, "input, nan=0.0, posinf=None, neginf=None", ck_nan_to_num, F_BOTH, F_TORCH),
    // binary
    NODE("add", ADD, "input, other, *, alpha=1", ck_add, F_BOTH, F_TORCH),
    NODE("sub", SUB, "input, other, *, alpha=1", ck_add, F_BOTH, F_TORCH),
    NODE("rsub", SUB, "input, other, *, alpha=1", ck_add, F_FN, F_TORCH), BINARY("mul", MUL, F_TORCH),
    NODE("div", DIV, "input, other, *, rounding_mode=None", ck_div, F_BOTH, F_TORCH),
    BINARY("floor_divide", FLOOR_DIVIDE, F_TORCH), BINARY("remainder", REMAINDER, F_TORCH),
    NODE("pow", POW, "input, exponent", ck_binary, F_BOTH, F_TORCH),
    BINARY("maximum", MAXIMUM, F_TORCH), BINARY("minimum", MINIMUM, F_TORCH), BINARY("atan2", ATAN2, F_TORCH),
    BINARY("eq", EQ, F_TORCH), BINARY("ne", NE, F_TORCH), BINARY("lt", LT, F_TORCH), BINARY("le", LE, F_TORCH),
    BINARY("gt", GT, F_TORCH), BINARY("ge", GE, F_TORCH),
    BINARY("logical_and", LOGICAL_AND, F_TORCH), BINARY("logical_or", LOGICAL_OR, F_TORCH),
    NODE("divide", DIV, "input, other, *, rounding_mode=None", ck_div, F_BOTH, F_TORCH),
    BINARY("true_divide", DIV, F_TORCH),
    BINARY("fmod", FMOD, F_TORCH), BINARY("hypot", HYPOT, F_TORCH), BINARY("copysign", COPYSIGN, F_TORCH),
    NODE("logaddexp", ADD, "input, other", ck_logaddexp, F_BOTH, F_TORCH),
    NODE("logaddexp2", ADD, "input, other", ck_logaddexp, F_BOTH, F_TORCH),
    BINARY("bitwise_and", BITWISE_AND, F_TORCH), BINARY("bitwise_or", BITWISE_OR, F_TORCH),
    BINARY("bitwise_xor", BITWISE_XOR, F_TORCH), BINARY("bitwise_left_shift", LSHIFT, F_TORCH),
    BINARY("bitwise_right_shift", RSHIFT, F_TORCH),
    NODE("isclose", EQ, "input, other, rtol=1e-05, atol=1e-08, equal_nan=False", ck_isclose, F_BOTH, F_TORCH),
    NODE("lerp", SUB, "input, end, weight", ck_lerp, F_BOTH, F_TORCH),
    NODE("where", WHERE, "condition, input, other", ck_where, F_BOTH, F_TORCH),
    NODE("clamp", CLAMP, "input, min=None, max=None", ck_clamp, F_BOTH, F_TORCH),
    NODE("masked_fill", WHERE, "input, mask, value", ck_masked_fill, F_BOTH, F_TORCH),
    NODE("tril", WHERE, "input, diagonal=0", ck_tril, F_BOTH, F_TORCH),
    NODE("triu", WHERE, "input, diagonal=0", ck_tril, F_BOTH, F_TORCH),
    // reductions
    REDUCE("sum", SUM, "input, dim=None, keepdim=False, *, dtype=None", F_TORCH),
    REDUCE("mean", MEAN, "input, dim=None, keepdim=False, *, dtype=None", F_TORCH),
    REDUCE("amax", AMAX, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("amin", AMIN, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("var", VAR, "input, dim=None, unbiased=True, keepdim=False, *, correction=None", F_TORCH),
    REDUCE("std", STD, "input, dim=None, unbiased=True, keepdim=False, *, correction=None", F_TORCH),
    NODE("var_mean", VAR, "input, dim=None, unbiased=True, keepdim=False, *, correction=None", ck_var_mean, F_FN,
         F_TORCH),
    NODE("std_mean", STD, "input, dim=None, unbiased=True, keepdim=False, *, correction=None", ck_var_mean, F_FN,
         F_TORCH),
    REDUCE("logsumexp", LOGSUMEXP, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("prod", PROD, "input, dim=None, keepdim=False, *, dtype=None", F_TORCH),
    REDUCE("argmax", ARGMAX, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("argmin", ARGMIN, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("all", ALL, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("any", ANY, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("max", MAX, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("min", MIN, "input, dim=None, keepdim=False", F_TORCH),
    NODE("softmax", SOFTMAX, "input, dim, dtype=None", ck_softmax, F_BOTH, F_TORCH | F_NNF),
    NODE("log_softmax", LOG_SOFTMAX, "input, dim, dtype=None", ck_softmax, F_BOTH, F_TORCH | F_NNF),
    // einsum (sema_einsum.c): torch.einsum's Python signature, (equation, *operands) or (equation, [operands])
    NODE("einsum", MATMUL, "*args", ck_einsum, F_FN, F_TORCH),
    // matmul
    NODE("matmul", MATMUL, "input, other", ck_matmul, F_BOTH, F_TORCH),
    NODE("mm", MATMUL, "input, mat2", ck_matmul, F_BOTH, F_TORCH),
    NODE("bmm", MATMUL, "input, mat2", ck_matmul, F_BOTH, F_TORCH),
    NODE("matmul_k", MATMUL, "input, other, nk", ck_matmul_k, 0, 0),  // a part only (no form)
    NODE("contract", MATMUL, "input, other, roles_a, roles_b", ck_contract, 0, 0),  // a part only
    NODE("outer", MUL, "input, vec2", ck_outer, F_BOTH, F_TORCH),
    NODE("tensordot", MATMUL, "a, b, dims=2, out=None", ck_tensordot, F_FN, F_TORCH),
    NODE("cross", MUL, "input, other, dim=None", ck_cross, F_BOTH, F_TORCH),
    NODE("kron", MUL, "input, other", ck_kron, F_BOTH, F_TORCH),
    NODE("diag_embed", WHERE, "input, offset=0, dim1=-2, dim2=-1", ck_diag_embed, F_BOTH, F_TORCH),
    NODE("bmm_sum", MATMUL, "batch1, batch2", ck_bmm_sum, 0, 0),  // a part only (addbmm's product)
    NODE("cov", MATMUL, "input, *, correction=1, fweights=None, aweights=None", ck_cov, F_BOTH, F_TORCH),
    NODE("corrcoef", MATMUL, "input", ck_corrcoef, F_BOTH, F_TORCH),
    NODE("ger", MUL, "input, vec2", ck_outer, F_BOTH, F_TORCH),
    NODE("dot", MATMUL, "input, tensor", ck_dot, F_BOTH, F_TORCH),
    NODE("addmm", ADD, "input, mat1, mat2, *, beta=1, alpha=1", ck_addmm, F_BOTH, F_TORCH),
    NODE("baddbmm", ADD, "input, batch1, batch2, *, beta=1, alpha=1", ck_addmm, F_BOTH, F_TORCH),
    NODE("addbmm", ADD, "input, batch1, batch2, *, beta=1, alpha=1", ck_addmm, F_BOTH, F_TORCH),
    NODE("norm", SUM, "input, p='fro', dim=None, keepdim=False, dtype=None", ck_norm, F_BOTH, F_TORCH),
    NODE("scaled_dot_product_attention", SDPA,
         "query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None", ck_sdpa, F_FN, F_NNF),
    NODE("linear", MATMUL, "input, weight, bias=None", ck_linear, F_FN, F_NNF),
    NODE("layer_norm", MEAN, "input, normalized_shape, weight=None, bias=None, eps=1e-05", ck_layer_norm, F_FN,
         F_TORCH | F_NNF),
    // padding, convolution, pooling (sema_conv.c): F.NAME and the bare name
    NODE("pad", CAT, "input, pad, mode='constant', value=None", ck_pad, F_FN, F_NNF),
    NODE("max_pool1d", AMAX, "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, "
         "return_indices=False", ck_max_pool, F_FN, F_NNF | F_TORCH),
    NODE("max_pool2d", AMAX, "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, "
         "return_indices=False", ck_max_pool, F_FN, F_NNF | F_TORCH),
    NODE("avg_pool1d", SUM, "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True",
         ck_avg_pool, F_FN, F_NNF | F_TORCH),
    NODE("avg_pool2d", SUM, "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, "
         "divisor_override=None", ck_avg_pool, F_FN, F_NNF),
    NODE("adaptive_avg_pool1d", MEAN, "input, output_size", ck_adaptive_pool, F_FN, F_NNF | F_TORCH),
    NODE("adaptive_avg_pool2d", MEAN, "input, output_size", ck_adaptive_pool, F_FN, F_NNF),
    NODE("adaptive_max_pool1d", AMAX, "input, output_size, return_indices=False", ck_adaptive_pool, F_FN, F_NNF),
    NODE("adaptive_max_pool2d", AMAX, "input, output_size, return_indices=False", ck_adaptive_pool, F_FN, F_NNF),
    NODE("conv1d", MATMUL, "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", ck_conv, F_FN,
         F_NNF | F_TORCH),
    NODE("conv2d", MATMUL, "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", ck_conv, F_FN,
         F_NNF | F_TORCH),
    NODE("conv_transpose1d", MATMUL, "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, "
         "dilation=1", ck_conv_transpose, F_FN, F_NNF | F_TORCH),
    NODE("conv_transpose2d", MATMUL, "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, "
         "dilation=1", ck_conv_transpose, F_FN, F_NNF | F_TORCH),
    NODE("interpolate", INDEX_SELECT, "input, size=None, scale_factor=None, mode='nearest', align_corners=None, "
         "recompute_scale_factor=None, antialias=False", ck_interpolate, F_FN, F_NNF),
    // composed of avg_pool and interpolate (sema_pool_alias.c)
    NODE("lp_pool1d", SUM, "input, norm_type, kernel_size, stride=None, ceil_mode=False", ck_lp_pool, F_FN, F_NNF),
    NODE("lp_pool2d", SUM, "input, norm_type, kernel_size, stride=None, ceil_mode=False", ck_lp_pool, F_FN, F_NNF),
    NODE("local_response_norm", SUM, "input, size, alpha=0.0001, beta=0.75, k=1.0", ck_local_response_norm, F_FN,
         F_NNF),
    NODE("upsample", INDEX_SELECT, "input, size=None, scale_factor=None, mode='nearest', align_corners=None",
         ck_upsample, F_FN, F_NNF),
    NODE("upsample_nearest", INDEX_SELECT, "input, size=None, scale_factor=None", ck_upsample, F_FN, F_NNF),
    NODE("upsample_bilinear", INDEX_SELECT, "input, size=None, scale_factor=None", ck_upsample, F_FN, F_NNF),
    NODE("unfold", COPY, "input, kernel_size, dilation=1, padding=0, stride=1", ck_im2col, F_FN, F_NNF),
    NODE("fold", MATMUL, "input, output_size, kernel_size, dilation=1, padding=0, stride=1", ck_fold, F_FN, F_NNF),
    // torch.nn.functional built from parts (sema_nn.c): a bare function and F.NAME, torch.NAME
    // where PyTorch 1.13 has it with the same parameters (torch.batch_norm, instance_norm and
    // embedding are ATen's, with other parameter lists: not these)
#define NNF(n, sig, ck, ns) {{n, BK_NODE, OP_COUNT, sig}, ck, F_FN | F_NNF | (ns), OP_COUNT}
    NNF("softplus", "input, beta=1, threshold=20", ck_softplus, 0),
    NNF("leaky_relu", "input, negative_slope=0.01, inplace=False", ck_leaky_relu, 0),
    NNF("elu", "input, alpha=1.0, inplace=False", ck_elu, 0),
    NNF("selu", "input, inplace=False", ck_selu, F_TORCH),
    NNF("celu", "input, alpha=1.0, inplace=False", ck_celu, F_TORCH),
    NNF("relu6", "input, inplace=False", ck_relu6, 0),
    NNF("hardtanh", "input, min_val=-1.0, max_val=1.0, inplace=False", ck_hardtanh, 0),
    NNF("hardsigmoid", "input, inplace=False", ck_hardsigmoid, 0),
    NNF("hardswish", "input, inplace=False", ck_hardsigmoid, 0),
    NNF("mish", "input, inplace=False", ck_mish, 0),
    NNF("softsign", "input", ck_softsign, 0),
    NNF("logsigmoid", "input", ck_logsigmoid, 0),
    NNF("tanhshrink", "input", ck_tanhshrink, 0),
    NNF("threshold", "input, threshold, value, inplace=False", ck_threshold, F_TORCH),
    NNF("glu", "input, dim=-1", ck_glu, 0),
    NNF("softmin", "input, dim=None, _stacklevel=3, dtype=None", ck_softmin, 0),
    NNF("rms_norm", "input, normalized_shape, weight=None, eps=None", ck_rms_norm, F_TORCH),
    NNF("group_norm", "input, num_groups, weight=None, bias=None, eps=1e-05", ck_group_norm, F_TORCH),
    NNF("batch_norm", "input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, "
        "eps=1e-05", ck_batch_norm, 0),
    NNF("instance_norm", "input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, "
        "momentum=0.1, eps=1e-05", ck_instance_norm, 0),
    NNF("normalize", "input, p=2.0, dim=1, eps=1e-12, out=None", ck_normalize, 0),
    NNF("cosine_similarity", "x1, x2, dim=1, eps=1e-08", ck_cosine_similarity, F_TORCH),
    NNF("pairwise_distance", "x1, x2, p=2.0, eps=1e-06, keepdim=False", ck_pairwise_distance, F_TORCH),
    NNF("embedding", "input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, "
        "sparse=False", ck_embedding, 0),
    NNF("one_hot", "tensor, num_classes=-1", ck_one_hot, 0),
    NNF("bilinear", "input1, input2, weight, bias=None", ck_bilinear, F_TORCH),
#undef NNF
    // scans
    NODE("cumsum", CUMSUM, "input, dim, *, dtype=None", ck_scan, F_BOTH, F_TORCH),
    NODE("cumprod", CUMPROD, "input, dim, *, dtype=None", ck_scan, F_BOTH, F_TORCH),
    NODE("logcumsumexp", LOGCUMSUMEXP, "input, dim", ck_scan, F_BOTH, F_TORCH),
    NODE("cummax", CUMMAX, "input, dim", ck_cummax, F_BOTH, F_TORCH),
    NODE("cummin", CUMMIN, "input, dim", ck_cummax, F_BOTH, F_TORCH),
    // joins and gathers
    NODE("cat", CAT, "tensors, dim=0", ck_cat, F_FN, F_TORCH),
    NODE("stack", STACK, "tensors, dim=0", ck_cat, F_FN, F_TORCH),
    NODE("index_select", INDEX_SELECT, "input, dim, index", ck_index_select, F_BOTH, F_TORCH),
    NODE("gather", GATHER, "input, dim, index", ck_gather, F_BOTH, F_TORCH),
    // writes at run-time positions (sema_scatter.c): out of place (a clone written) and
    // in place (x.NAME_: x written); aux tells the checker which op it is
    WRITE("index_put", INDEX_PUT, "input, indices, values, accumulate=False", ck_index_put, OP_COUNT),
    WRITE("index_copy", INDEX_PUT, "input, dim, index, source", ck_index_op, OP_COPY),
    WRITE("index_add", INDEX_PUT, "input, dim, index, source, *, alpha=1", ck_index_op, OP_ADD),
    WRITE("index_fill", INDEX_PUT, "input, dim, index, value", ck_index_op, OP_WHERE),
    WRITE("scatter", SCATTER, "input, dim, index, src=None, value=None, reduce=None", ck_scatter, OP_WHERE),
    WRITE("scatter_add", SCATTER, "input, dim, index, src", ck_scatter, OP_ADD),
    WRITE("scatter_reduce", SCATTER, "input, dim, index, src, reduce, *, include_self=True", ck_scatter, OP_SUM),
    INPLACE("fill_", STORE, "input, value", ck_fill, OP_FULL),
    INPLACE("zero_", STORE, "input", ck_fill, OP_ZEROS),
    INPLACE("copy_", STORE, "input, src, non_blocking=False", ck_fill, OP_COPY),
    // sorting (sema_sort.c): a sort node pair and views of it
    NODE("sort", SORT, "input, dim=-1, descending=False, *, stable=False", ck_sort, F_BOTH, F_TORCH),
    NODE("argsort", ARGSORT, "input, dim=-1, descending=False, *, stable=False", ck_sort, F_BOTH, F_TORCH),
    NODE("msort", SORT, "input", ck_sort, F_BOTH, F_TORCH),
    NODE("topk", SORT, "input, k, dim=-1, largest=True, sorted=True", ck_topk, F_BOTH, F_TORCH),
    NODE("kthvalue", SORT, "input, k, dim=-1, keepdim=False", ck_kthvalue, F_BOTH, F_TORCH),
    NODE("median", SORT, "input, dim=None, keepdim=False", ck_median, F_BOTH, F_TORCH),
    // creation
    NODE("zeros", ZEROS, "*size, dtype=None" OPTS, ck_zeros, F_FN, F_TORCH),
    NODE("zeros_like", ZEROS, "input, *, dtype=None" OPTS, ck_like, F_FN, F_TORCH),
    NODE("ones_like", ONES, "input, *, dtype=None" OPTS, ck_like, F_FN, F_TORCH),
    NODE("empty_like", ZEROS, "input, *, dtype=None" OPTS, ck_like, F_FN, F_TORCH),
    NODE("full_like", FULL, "input, fill_value, *, dtype=None" OPTS, ck_like, F_FN, F_TORCH),
    NODE("new_zeros", ZEROS, "input, *size, dtype=None" OPTS, ck_like, F_METH, 0),
    NODE("new_ones", ONES, "input, *size, dtype=None" OPTS, ck_like, F_METH, 0),
    NODE("new_empty", ZEROS, "input, *size, dtype=None" OPTS, ck_like, F_METH, 0),
    NODE("new_full", FULL, "input, size, fill_value, *, dtype=None" OPTS, ck_like, F_METH, 0),
    NODE("ones", ONES, "*size, dtype=None" OPTS, ck_zeros, F_FN, F_TORCH),
    NODE("empty", ZEROS, "*size, dtype=None" OPTS ", memory_format=None", ck_zeros, F_FN, F_TORCH),
    NODE("full", FULL, "size, fill_value, *, dtype=None" OPTS, ck_full, F_FN, F_TORCH),
    NODE("arange", ARANGE, "start, end=None, step=1, *, dtype=None" OPTS, ck_arange, F_FN, F_TORCH),
    NODE("eye", EYE, "n, m=None, *, dtype=None" OPTS, ck_eye, F_FN, F_TORCH),
    // losses: torch.nn.functional's Python signatures (the deprecated size_average and
    // reduce take only None). torch.kl_div and torch.binary_cross_entropy_with_logits
    // take another signature (an int reduction) and are not offered.
    NODE("mse_loss", MEAN, "input, target, size_average=None, reduce=None, reduction='mean'", ck_mse_loss, F_FN,
         F_NNF),
    NODE("l1_loss", MEAN, "input, target, size_average=None, reduce=None, reduction='mean'", ck_l1_loss, F_FN, F_NNF),
    NODE("smooth_l1_loss", MEAN, "input, target, size_average=None, reduce=None, reduction='mean', beta=1.0",
         ck_smooth_l1_loss, F_FN, F_NNF),
    NODE("huber_loss", MEAN, "input, target, reduction='mean', delta=1.0", ck_huber_loss, F_FN, F_NNF),
    NODE("soft_margin_loss", MEAN, "input, target, size_average=None, reduce=None, reduction='mean'",
         ck_soft_margin_loss, F_FN, F_NNF),
    NODE("binary_cross_entropy", MEAN,
         "input, target, weight=None, size_average=None, reduce=None, reduction='mean'", ck_binary_cross_entropy,
         F_FN, F_NNF),
    NODE("binary_cross_entropy_with_logits", MEAN,
         "input, target, weight=None, size_average=None, reduce=None, reduction='mean', pos_weight=None",
         ck_binary_cross_entropy_with_logits, F_FN, F_NNF),
    NODE("kl_div", MEAN, "input, target, size_average=None, reduce=None, reduction='mean', log_target=False",
         ck_kl_div, F_FN, F_NNF),
    NODE("nll_loss", MEAN,
         "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean'",
         ck_nll_loss, F_FN, F_NNF),
    NODE("cross_entropy", MEAN,
         "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', "
         "label_smoothing=0.0", ck_cross_entropy, F_FN, F_NNF),
    // sema_loss_margin.c
    NODE("margin_ranking_loss", MEAN, "input1, input2, target, margin=0, size_average=None, reduce=None, "
         "reduction='mean'", ck_margin_ranking_loss, F_FN, F_NNF),
    NODE("hinge_embedding_loss", MEAN, "input, target, margin=1.0, size_average=None, reduce=None, reduction='mean'",
         ck_hinge_embedding_loss, F_FN, F_NNF),
    NODE("cosine_embedding_loss", MEAN, "input1, input2, target, margin=0, size_average=None, reduce=None, "
         "reduction='mean'", ck_cosine_embedding_loss, F_FN, F_NNF),
    NODE("multilabel_soft_margin_loss", MEAN, "input, target, weight=None, size_average=None, reduce=None, "
         "reduction='mean'", ck_multilabel_soft_margin_loss, F_FN, F_NNF),
    NODE("multi_margin_loss", MEAN, "input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, "
         "reduction='mean'", ck_multi_margin_loss, F_FN, F_NNF),
    NODE("multilabel_margin_loss", MEAN, "input, target, size_average=None, reduce=None, reduction='mean'",
         ck_multilabel_margin_loss, F_FN, F_NNF),
    NODE("triplet_margin_loss", MEAN, "anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, "
         "size_average=None, reduce=None, reduction='mean'", ck_triplet_margin_loss, F_FN, F_NNF),
    NODE("triplet_margin_with_distance_loss", MEAN, "anchor, positive, negative, *, distance_function=None, "
         "margin=1.0, swap=False, reduction='mean'", ck_triplet_margin_loss, F_FN, F_NNF),
    NODE("poisson_nll_loss", MEAN, "input, target, log_input=True, full=False, size_average=None, eps=1e-08, "
         "reduce=None, reduction='mean'", ck_poisson_nll_loss, F_FN, F_NNF),
    NODE("gaussian_nll_loss", MEAN, "input, target, var, full=False, eps=1e-06, reduction='mean'",
         ck_gaussian_nll_loss, F_FN, F_NNF),
};
enum { NBUILTINS = sizeof builtins / sizeof builtins[0] };

const BuiltinDef *builtin_find(const char *name) {
  for (int i = 0; i < NBUILTINS; i++)
    if (!strcmp(builtins[i].b.name, name)) return &builtins[i];
  return NULL;
}
// The row of name callable in form (F_FN, F_METH, F_TORCH, F_NNF): PyTorch's x.unfold
// (a view) and F.unfold (im2col) are two rows of one name.
const BuiltinDef *builtin_find_form(const char *name, int form) {
  for (int i = 0; i < NBUILTINS; i++)
    if (!strcmp(builtins[i].b.name, name) && (builtins[i].forms & form)) return &builtins[i];
  return NULL;
}

// ============================================================================
// Suggestions for a name that names nothing: "Did you mean: 'softmax'?"
// ============================================================================
enum { MAX_WORD = 64 };

// The Damerau-Levenshtein distance of a and b (optimal string alignment: insertions,
// deletions, substitutions and swaps of neighbours cost one each).
static int edit_distance(const char *a, size_t la, const char *b, size_t lb) {
  int d[MAX_WORD + 1][MAX_WORD + 1];
  for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[la][lb];
}

Suggest suggest_start(const char *word) { return (Suggest){word, NULL, 0}; }

// As Python 3.10's suggestions: within about a third of the two lengths, the nearest
// first offered; a candidate spelt as the word itself is no suggestion.
void suggest(Suggest *s, const char *cand) {
  size_t la = strlen(s->word), lb = strlen(cand);
  if (la > MAX_WORD || lb > MAX_WORD || !strcmp(s->word, cand) || cand[0] == '(') return;
  int limit = (int)(la + lb + 3) / 6, dist = edit_distance(s->word, la, cand, lb);
  if (dist <= limit && (!s->best || dist < s->dist)) s->best = cand, s->dist = dist;
}

void suggest_builtins(Suggest *s, int forms) {
  for (int i = 0; i < NBUILTINS; i++)
    if (builtins[i].forms & forms) suggest(s, builtins[i].b.name);
}

const char *suggestion(Sema *sema, const Suggest *s) {
  return s->best ? arena_printf(&sema->cx->arena, ". Did you mean: '%s'?", s->best) : "";
}

// PyTorch spellings tdsl lacks though it has what they are for, and what to write instead.
#define NO_VALUES "a tensor's values are known only at run time: keep it a tensor (a 0-d tensor broadcasts as a number " \
                  "does; torch.where(c, a, b) chooses on one)"
#define NO_RANDOM "tdsl has no random numbers: pass them in as a parameter"
static const struct {
  const char *name;
  int forms;
  const char *hint;
} pytorch_hints[] = {
    {"item", F_METH, NO_VALUES},
    {"tolist", F_METH, NO_VALUES},
    {"numpy", F_METH, "the function's results are its tensors: return it"},
    {"detach", F_METH, "tdsl computes no gradients: drop the call"},
    {"concat", F_FN | F_TORCH, "write torch.cat(tensors, dim)"},
    {"concatenate", F_FN | F_TORCH, "write torch.cat(tensors, dim)"},
    {"range", F_TORCH, "write torch.arange(start, end, step), whose end is excluded (torch.range, deprecated, "
                       "includes it)"},
    {"from_numpy", F_FN | F_TORCH, "pass the array as a parameter (tdslc run --in NAME=FILE.npy)"},
    {"new_tensor", F_METH, "write torch.tensor(data, dtype=x.dtype)"},
    {"rand", F_FN | F_TORCH, NO_RANDOM},
    {"randn", F_FN | F_TORCH, NO_RANDOM},
    {"randint", F_FN | F_TORCH, NO_RANDOM},
    {"rand_like", F_FN | F_TORCH, NO_RANDOM},
    {"randn_like", F_FN | F_TORCH, NO_RANDOM},
    {"bernoulli", F_BOTH | F_TORCH, NO_RANDOM},
    {"multinomial", F_BOTH | F_TORCH, NO_RANDOM},
    {"normal", F_FN | F_TORCH, NO_RANDOM},
};

const char *pytorch_hint(const char *name, int form) {
  for (size_t i = 0; i < sizeof pytorch_hints / sizeof pytorch_hints[0]; i++)
    if (!strcmp(pytorch_hints[i].name, name) && (pytorch_hints[i].forms & form)) return pytorch_hints[i].hint;
  return NULL;
}
