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
  bool kwvar;  // **name: the keywords no other parameter takes, left in the call for the checker
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
      if (len > 2 && s[0] == '*' && s[1] == '*') {
        p->kwvar = p->opt = p->kwonly = true;
        s += 2, len -= 2;
      } else if (*s == '*') {
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
    while (j < np && (strcmp(ps[j].name, a->name) || ps[j].kwvar)) j++;
    if (j == np && (d->forms & (F_TORCH | F_METH))) {  // NumPy's names, as PyTorch's argument parser takes them
      static const char *const alias[][2] = {{"axis", "dim"}, {"keepdims", "keepdim"}, {"x", "input"},
                                             {"a", "input"}, {"x1", "input"}, {"x2", "other"}};
      for (size_t q = 0; q < sizeof alias / sizeof alias[0] && j == np; q++)
        if (!strcmp(a->name, alias[q][0]))
          for (j = 0; j < np && strcmp(ps[j].name, alias[q][1]); j++) {
          }
    }
    if (j == np && !strcmp(fname, "view") && !strcmp(a->name, "dtype")) {  // view's other overload: view(dtype)
      if (a->rhs->ty && a->rhs->ty->kind != TY_DTYPE && a->rhs->ty->kind != TY_POISON) {
        diag_error(sema->cx, a->rhs->loc, "view(): argument 'dtype' must be torch.dtype, not %s",
                   py_type_name(a->rhs->ty));
        return false;
      }
      for (j = 0; j < np && strcmp(ps[j].name, "size"); j++) {
      }
    }
    bool kwvar = false;
    for (int q = 0; q < np; q++) kwvar |= ps[q].kwvar;
    if (j == np && kwvar) continue;  // **axes_lengths: the checker reads it
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

bool num_arg(Sema *sema, const Ast *e, int i, const char *pname, const char *kind, double def, double *out) {
  Ast *a = barg(e, i);
  if (!a) {
    *out = def;
    return true;
  }
  if (is_scalar(a->ty) && (a->ty->dtype != DT_BOOL || !strcmp(kind, "Number"))) {
    *out = a->ty->fval;
    return true;
  }
  if (is_tensor(a->ty))
    diag_error(sema->cx, a->loc, "%s(): argument '%s' must be a number here: a tensor's value is not known when "
               "compiling", e->bi->name, pname);
  else
    diag_error(sema->cx, a->loc, "%s(): argument %s must be %s, not %s", e->bi->name, arg_name(sema, e, pname), kind,
               py_type_name(a->ty));
  return false;
}

// inplace=True writes the input: tdsl's ops return new values, so it is refused.
bool no_inplace(Sema *sema, const Ast *e, int i) {
  Ast *a = barg(e, i);
  bool v = false;
  if (!a) return true;
  if (!get_bool(sema, e, a, "inplace", &v)) return false;
  if (v) {
    diag_error(sema->cx, a->loc, "%s(): inplace=True is not supported: it overwrites the input; use inplace=False "
               "and bind the result", e->bi->name);
    return false;
  }
  return true;
}

// The row's dtype rule (sema_internal.h) for an input of dtype dt.
bool check_dtype_rule(Sema *sema, const Ast *e, const BuiltinDef *d, DType dt) {
  bool ok = d->dtr.kind == DTR_FLOAT ? dtype_is_float(dt) : d->dtr.kind == DTR_NOT_BOOL ? dt != DT_BOOL : true;
  if (!ok) diag_error(sema->cx, call_loc(e), "\"%s\" not implemented for '%s'", d->dtr.kernel, torch_name(dt));
  return ok;
}

void rebind(Sema *sema, Ast *e, Ast *const *args, int n) {
  e->bargs = arena_alloc(&sema->cx->arena, sizeof(Ast *) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) e->bargs[i] = args[i];
  e->nbargs = n;
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
#define VIEWOP(n, sig, ck, ns) {{n, BK_VIEW, OP_COPY, sig, NULL}, ck, F_BOTH | (ns), OP_COUNT, 0, {DTR_ANY, NULL}}
#define VIEWOP_V(n, sig, ck, ns, variant) {{n, BK_VIEW, OP_COPY, sig, NULL}, ck, F_BOTH | (ns), OP_COUNT, variant, {DTR_ANY, NULL}}
#define NODE(n, op, sig, ck, forms, ns) {{n, BK_NODE, OP_##op, sig, NULL}, ck, (forms) | (ns), OP_COUNT, 0, {DTR_ANY, NULL}}
#define NODE_V(n, op, sig, ck, forms, ns, variant) {{n, BK_NODE, OP_##op, sig, NULL}, ck, (forms) | (ns), OP_COUNT, variant, {DTR_ANY, NULL}}
#define UNARY(n, op, ns) NODE(n, op, "input", ck_unary, F_BOTH, ns)
#define BINARY(n, op, ns) NODE(n, op, "input, other", ck_binary, F_BOTH, ns)
#define REDUCE(n, op, sig, ns) NODE(n, op, sig, ck_reduce, F_BOTH, ns)
#define DROPOUT(n, training, variant) \
  {{n, BK_VIEW, OP_COPY, "input, p=0.5, training=" #training ", inplace=False", NULL}, ck_dropout, F_FN | F_NNF, OP_COUNT, variant, {DTR_ANY, NULL}}
#define INPLACE(n, op, sig, ck, aux) {{n, BK_NODE, OP_##op, sig, NULL}, ck, F_METH, aux, 0, {DTR_ANY, NULL}}
#define WRITE(n, op, sig, ck, aux) {{n, BK_NODE, OP_##op, sig, NULL}, ck, F_BOTH | F_TORCH, aux, 0, {DTR_ANY, NULL}}, INPLACE(n "_", op, sig, ck, aux)
#define ANY_DTYPE {DTR_ANY, NULL}
#define FLOAT_ONLY(kernel) {DTR_FLOAT, kernel}
#define NO_BOOL(kernel) {DTR_NOT_BOOL, kernel}
#define NORM(n, sig, ck, build, ns) {{n, BK_BUILD, OP_COUNT, sig, build}, ck, F_FN | F_NNF | (ns), OP_COUNT, 0, ANY_DTYPE}
#define LOSS(n, sig, ck, build) {{n, BK_BUILD, OP_COUNT, sig, build}, ck, F_FN | F_NNF, OP_COUNT, 0, ANY_DTYPE}
#define LOSS_V(n, sig, ck, build, variant) {{n, BK_BUILD, OP_COUNT, sig, build}, ck, F_FN | F_NNF, OP_COUNT, variant, ANY_DTYPE}
#define BUILT(n, sig, ck, build, variant, forms) {{n, BK_BUILD, OP_COUNT, sig, build}, ck, forms, OP_COUNT, variant, ANY_DTYPE}
#define REDUCING(n, sig, ck, build, red, variant, forms) {{n, BK_BUILD, OP_COUNT, sig, build}, ck, forms, red, variant, ANY_DTYPE}
#define ACT(n, sig, ck, build, variant, rule, ns) \
  {{n, BK_BUILD, OP_COUNT, sig, build}, ck, F_FN | F_NNF | (ns), OP_COUNT, variant, rule}
#define CAST(n, dt) {{n, BK_VIEW, OP_COPY, "input", NULL}, ck_cast, F_METH, (Op)dt, 0, {DTR_ANY, NULL}}
// the tensor options of PyTorch's creation ops: checked and ignored (sema_python.c)
#define OPTS ", device=None, requires_grad=False, pin_memory=False, layout=None"

static const BuiltinDef builtins[] = {
    // views
    VIEWOP("view", "input, *size", ck_view, 0),
    VIEWOP("reshape", "input, *shape", ck_reshape, F_TORCH),
    VIEWOP("flatten", "input, start_dim=0, end_dim=-1", ck_flatten, F_TORCH),
    VIEWOP("transpose", "input, dim0, dim1", ck_transpose, F_TORCH),
    VIEWOP("t", "input", ck_t, F_TORCH),
    VIEWOP("detach", "input", ck_detach, F_TORCH),  // no gradients: the tensor itself, a view
    // the *_copy ops: the view op's result copied (sema_view.c's ck_view_copy)
#define VIEW_COPY(n, sig, vc) {{n, BK_VIEW, OP_COPY, sig, NULL}, ck_view_copy, F_FN | F_TORCH, OP_COUNT, vc, ANY_DTYPE}
    VIEW_COPY("as_strided_copy", "input, size, stride, storage_offset=None", VC_AS_STRIDED),
    VIEW_COPY("alias_copy", "input", VC_DETACH), VIEW_COPY("detach_copy", "input", VC_DETACH),
    VIEW_COPY("diagonal_copy", "input, offset=0, dim1=0, dim2=1", VC_DIAGONAL),
    VIEW_COPY("expand_copy", "input, size, *, implicit=False", VC_EXPAND),
    VIEW_COPY("permute_copy", "input, dims", VC_PERMUTE), VIEW_COPY("select_copy", "input, dim, index", VC_SELECT),
    VIEW_COPY("slice_copy", "input, dim=0, start=None, end=None, step=1", VC_SLICE),
    VIEW_COPY("split_copy", "input, split_size, dim=0", VC_SPLIT),
    VIEW_COPY("split_with_sizes_copy", "input, split_sizes, dim=0", VC_SPLIT),
    VIEW_COPY("squeeze_copy", "input, dim=None", VC_SQUEEZE), VIEW_COPY("t_copy", "input", VC_T),
    VIEW_COPY("transpose_copy", "input, dim0, dim1", VC_TRANSPOSE), VIEW_COPY("unbind_copy", "input, dim=0", VC_UNBIND),
    VIEW_COPY("unfold_copy", "input, dimension, size, step", VC_UNFOLD),
    VIEW_COPY("unsqueeze_copy", "input, dim", VC_UNSQUEEZE), VIEW_COPY("view_copy", "input, size", VC_VIEW),
#undef VIEW_COPY
    {{"T", BK_VIEW, OP_COPY, "input", NULL}, ck_T, 0, OP_COUNT, 0, {DTR_ANY, NULL}},
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
    VIEWOP_V("split", "input, split_size, dim=0", ck_split, F_TORCH, SPLIT_SIZE),
    VIEWOP_V("chunk", "input, chunks, dim=0", ck_split, F_TORCH, SPLIT_CHUNK),
    VIEWOP_V("tensor_split", "input, indices_or_sections, dim=0", ck_split, F_TORCH, SPLIT_TENSOR),
    VIEWOP("unbind", "input, dim=0", ck_unbind, F_TORCH),
    {{"broadcast_tensors", BK_VIEW, OP_COPY, "*tensors", NULL}, ck_broadcast_tensors, F_FN | F_TORCH, OP_COUNT, 0, {DTR_ANY, NULL}},
    {{"broadcast_shapes", BK_VIEW, OP_COPY, "*shapes", NULL}, ck_broadcast_shapes, F_FN | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"meshgrid", BK_VIEW, OP_COPY, "*tensors, indexing=None", NULL}, ck_meshgrid, F_FN | F_TORCH, OP_COUNT, 0, {DTR_ANY, NULL}},
    // views and copies PyTorch defines by other ops (sema_shape.c)
    VIEWOP_V("view_as", "input, other", ck_view_alias, 0, ALIAS_VIEW_AS),
    VIEWOP_V("reshape_as", "input, other", ck_view_alias, 0, ALIAS_RESHAPE_AS),
    VIEWOP_V("type_as", "input, other", ck_view_alias, 0, ALIAS_TYPE_AS),
    VIEWOP_V("broadcast_to", "input, size", ck_view_alias, F_TORCH, ALIAS_BROADCAST_TO),
    VIEWOP_V("swapaxes", "input, axis0, axis1", ck_view_alias, F_TORCH, ALIAS_SWAP),
    VIEWOP_V("swapdims", "input, dim0, dim1", ck_view_alias, F_TORCH, ALIAS_SWAP),
    VIEWOP("movedim", "input, source, destination", ck_movedim, F_TORCH),
    VIEWOP("moveaxis", "input, source, destination", ck_movedim, F_TORCH),
    VIEWOP("unflatten", "input, dim, sizes", ck_unflatten, F_TORCH),
    {{"atleast_1d", BK_VIEW, OP_COPY, "*tensors", NULL}, ck_atleast, F_FN | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    {{"atleast_2d", BK_VIEW, OP_COPY, "*tensors", NULL}, ck_atleast, F_FN | F_TORCH, OP_COUNT, 2, ANY_DTYPE},
    {{"atleast_3d", BK_VIEW, OP_COPY, "*tensors", NULL}, ck_atleast, F_FN | F_TORCH, OP_COUNT, 3, ANY_DTYPE},
    {{"unfold", BK_VIEW, OP_COPY, "input, dimension, size, step", NULL}, ck_unfold, F_METH, OP_COUNT, 0, {DTR_ANY, NULL}},
    {{"fliplr", BK_VIEW, OP_COPY, "input", NULL}, ck_flip_lr, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    {{"flipud", BK_VIEW, OP_COPY, "input", NULL}, ck_flip_lr, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"repeat", BK_BUILD, OP_COPY, "input, *repeats", build_repeat_op}, ck_repeat, F_METH | 0, OP_COUNT, 0, ANY_DTYPE},
    {{"tile", BK_BUILD, OP_COPY, "input, dims", build_repeat_op}, ck_repeat, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    {{"pixel_shuffle", BK_BUILD, OP_COPY, "input, upscale_factor", build_pixel_shuffle}, ck_pixel_shuffle, F_FN | F_TORCH | F_NNF, OP_COUNT, 0, ANY_DTYPE},
    {{"pixel_unshuffle", BK_BUILD, OP_COPY, "input, downscale_factor", build_pixel_shuffle}, ck_pixel_shuffle, F_FN | F_TORCH | F_NNF, OP_COUNT, 1, ANY_DTYPE},
    {{"repeat_interleave", BK_BUILD, OP_COPY, "input, repeats, dim=None, *, output_size=None", build_repeat_interleave}, ck_repeat_interleave, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"roll", BK_BUILD, OP_CAT, "input, shifts, dims=None", build_roll}, ck_roll, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    // ops built from ops tdsl has (sema_elementwise.c, sema_reduce.c, sema_shape.c, sema_index.c ...)
    UNARY("absolute", ABS, F_TORCH), UNARY("negative", NEG, F_TORCH),  // sgn: with the complex rows
    BINARY("arctan2", ATAN2, F_TORCH), BINARY("greater", GT, F_TORCH), BINARY("greater_equal", GE, F_TORCH),
    BINARY("less", LT, F_TORCH), BINARY("less_equal", LE, F_TORCH), BINARY("not_equal", NE, F_TORCH),
    BINARY("multiply", MUL, F_TORCH), {{"subtract", BK_NODE, OP_SUB, "input, other, *, alpha=1", build_add}, ck_add, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    NODE("clip", CLAMP, "input, min=None, max=None", ck_clamp, F_BOTH, F_TORCH),
    {{"clamp_min", BK_NODE, OP_CLAMP, "input, min", NULL}, ck_clamp_one, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"clamp_max", BK_NODE, OP_CLAMP, "input, max", NULL}, ck_clamp_one, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    {{"logical_xor", BK_BUILD, OP_NE, "input, other", build_logical_xor}, ck_logical_xor, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"deg2rad", BK_BUILD, OP_MUL, "input", build_scale}, ck_deg2rad, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"rad2deg", BK_BUILD, OP_MUL, "input", build_scale}, ck_deg2rad, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    {{"xlogy", BK_BUILD, OP_MUL, "input, other", build_xlogy}, ck_xlogy, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"heaviside", BK_BUILD, OP_WHERE, "input, values", build_heaviside}, ck_heaviside, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"logit", BK_BUILD, OP_LOG, "input, eps=None", build_logit}, ck_logit, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"sinc", BK_BUILD, OP_SIN, "input", build_sinc}, ck_sinc, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"fmax", BK_BUILD, OP_MAXIMUM, "input, other", build_fmax}, ck_fmax, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"fmin", BK_BUILD, OP_MINIMUM, "input, other", build_fmax}, ck_fmax, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"float_power", BK_BUILD, OP_POW, "input, exponent", build_float_power}, ck_float_power, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"signbit", BK_BUILD, OP_LT, "input", build_signbit}, ck_signbit, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"hardshrink", BK_BUILD, OP_WHERE, "input, lambd=0.5", build_shrink}, ck_shrink, F_BOTH | F_TORCH | F_NNF, OP_COUNT, 0, ANY_DTYPE},
    {{"softshrink", BK_BUILD, OP_WHERE, "input, lambd=0.5", build_shrink}, ck_shrink, F_FN | F_NNF, OP_COUNT, 1, ANY_DTYPE},
    {{"prelu", BK_BUILD, OP_WHERE, "input, weight", build_prelu}, ck_prelu, F_BOTH | F_TORCH | F_NNF, OP_COUNT, 0, ANY_DTYPE},
    {{"addcmul", BK_BUILD, OP_ADD, "input, tensor1, tensor2, *, value=1", build_addcmul}, ck_addcmul, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"addcdiv", BK_BUILD, OP_ADD, "input, tensor1, tensor2, *, value=1", build_addcmul}, ck_addcmul, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    BUILT("addmv", "input, mat, vec, *, beta=1, alpha=1", ck_addmm, build_addmm, PROD_MV, F_BOTH | F_TORCH),
    BUILT("addr", "input, vec1, vec2, *, beta=1, alpha=1", ck_addmm, build_addmm, PROD_OUTER, F_BOTH | F_TORCH),
    NODE("mv", MATMUL, "input, vec", ck_mv, F_BOTH, F_TORCH),
    NODE("vdot", MATMUL, "input, other", ck_dot, F_BOTH, F_TORCH),
    BUILT("trace", "input", ck_trace, build_trace, 0, F_BOTH | F_TORCH),
    {{"count_nonzero", BK_BUILD, OP_SUM, "input, dim=None", build_count_nonzero}, ck_count_nonzero, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"nansum", BK_BUILD, OP_SUM, "input, dim=None, keepdim=False, *, dtype=None", build_nansum}, ck_nansum, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"nanmean", BK_BUILD, OP_SUM, "input, dim=None, keepdim=False, *, dtype=None", build_nansum}, ck_nansum, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    {{"aminmax", BK_BUILD, OP_AMIN, "input, *, dim=None, keepdim=False", build_aminmax}, ck_aminmax, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    VIEWOP("ravel", "input", ck_ravel, F_TORCH),
    BUILT("diag", "input, diagonal=0", ck_diag, build_diag, 0, F_BOTH | F_TORCH),
    VIEWOP("rot90", "input, k=1, dims=None", ck_rot90, F_TORCH),
    VIEWOP_V("hsplit", "input, indices_or_sections", ck_hsplit, F_TORCH, 1),
    VIEWOP_V("vsplit", "input, indices_or_sections", ck_hsplit, F_TORCH, 0),
    VIEWOP_V("dsplit", "input, indices_or_sections", ck_hsplit, F_TORCH, 2),
    VIEWOP_V("split_with_sizes", "input, split_sizes, dim=0", ck_split, F_TORCH, SPLIT_SIZE),
    VIEWOP_V("unsafe_split", "input, split_size, dim=0", ck_split, F_TORCH, SPLIT_SIZE),
    VIEWOP_V("unsafe_chunk", "input, chunks, dim=0", ck_split, F_TORCH, SPLIT_CHUNK),
    {{"take_along_dim", BK_BUILD, OP_GATHER, "input, indices, dim=None", build_take_along_dim}, ck_take_along_dim, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"real", BK_VIEW, OP_COPY, "input", NULL}, ck_real, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    // complex tensors (sema_complex.c, ir/build_complex.c); real and angle are the rows above and below
#define COMPLEX(n, sig, forms, op) {{n, BK_BUILD, OP_COPY, sig, build_complex}, ck_complex, forms, OP_COUNT, op, ANY_DTYPE}
    COMPLEX("view_as_real", "input", F_FN | F_TORCH, CX_AS_REAL), COMPLEX("view_as_complex", "input", F_FN | F_TORCH, CX_AS_COMPLEX),
    COMPLEX("imag", "input", F_FN | F_TORCH, CX_IMAG), COMPLEX("conj", "input", F_BOTH | F_TORCH, CX_CONJ),
    COMPLEX("conj_physical", "input", F_BOTH | F_TORCH, CX_CONJ), COMPLEX("resolve_conj", "input", F_BOTH | F_TORCH, CX_SAME),
    COMPLEX("resolve_neg", "input", F_BOTH | F_TORCH, CX_SAME), COMPLEX("sgn", "input", F_BOTH | F_TORCH, CX_SGN),
    COMPLEX("is_complex", "input", F_BOTH | F_TORCH, CX_IS_COMPLEX),
    COMPLEX("polar", "abs, angle", F_FN | F_TORCH, CX_POLAR), COMPLEX("complex", "real, imag", F_FN | F_TORCH, CX_MAKE),
#undef COMPLEX
    {{"isreal", BK_BUILD, OP_ONES, "input", build_isreal}, ck_real, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    {{"angle", BK_BUILD, OP_WHERE, "input", build_angle}, ck_real, F_BOTH | F_TORCH, OP_COUNT, 2, ANY_DTYPE},
    {{"ldexp", BK_BUILD, OP_MUL, "input, other", build_ldexp}, ck_ldexp, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"dist", BK_BUILD, OP_SUM, "input, other, p=2", build_dist}, ck_dist, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"diff", BK_BUILD, OP_SUB, "input, n=1, dim=-1, prepend=None, append=None", build_diff}, ck_diff, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    BUILT("inner", "input, other", ck_inner, build_inner, 0, F_BOTH | F_TORCH),
    {{"take", BK_BUILD, OP_INDEX_SELECT, "input, index", build_take}, ck_take, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"diagflat", BK_BUILD, OP_WHERE, "input, offset=0", build_diag}, ck_diagflat, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"narrow_copy", BK_BUILD, OP_COPY, "input, dim, start, length", build_narrow_copy}, ck_diagflat, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    VIEWOP_V("adjoint", "input", ck_view_alias, F_TORCH, ALIAS_ADJOINT),
    {{"slice_scatter", BK_BUILD, OP_INDEX_PUT, "input, src, dim=0, start=None, end=None, step=1", build_view_scatter}, ck_view_scatter, F_BOTH | F_TORCH, OP_COUNT, SCATTER_SLICE, ANY_DTYPE},
    {{"select_scatter", BK_BUILD, OP_INDEX_PUT, "input, src, dim, index", build_view_scatter}, ck_view_scatter, F_BOTH | F_TORCH, OP_COUNT, SCATTER_SELECT, ANY_DTYPE},
    {{"diagonal_scatter", BK_BUILD, OP_INDEX_PUT, "input, src, offset=0, dim1=0, dim2=1", build_view_scatter}, ck_view_scatter, F_BOTH | F_TORCH, OP_COUNT, SCATTER_DIAGONAL, ANY_DTYPE},
    {{"masked_scatter", BK_BUILD, OP_INDEX_PUT, "input, mask, source", build_masked_scatter}, ck_masked_scatter, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    NODE("nonzero", INDEX, "input, *, as_tuple=False", ck_data_dependent, F_BOTH, F_TORCH),
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
    {{"size", BK_VIEW, OP_COPY, "input, dim=None", NULL}, ck_size, F_METH, OP_COUNT, 0, {DTR_ANY, NULL}},
    {{"dim", BK_VIEW, OP_COPY, "input", NULL}, ck_size, F_METH, OP_COUNT, SIZE_NDIM, {DTR_ANY, NULL}},
    {{"ndimension", BK_VIEW, OP_COPY, "input", NULL}, ck_size, F_METH, OP_COUNT, SIZE_NDIM, {DTR_ANY, NULL}},
    {{"numel", BK_VIEW, OP_COPY, "input", NULL}, ck_size, F_METH | F_TORCH, OP_COUNT, SIZE_NUMEL, {DTR_ANY, NULL}},
    {{"nelement", BK_VIEW, OP_COPY, "input", NULL}, ck_size, F_METH, OP_COUNT, SIZE_NUMEL, {DTR_ANY, NULL}},
    {{"is_floating_point", BK_VIEW, OP_COPY, "input", NULL}, ck_size, F_BOTH | F_TORCH, OP_COUNT, SIZE_IS_FLOAT, {DTR_ANY, NULL}},
    VIEWOP("contiguous", "input", ck_contiguous, 0),
    DROPOUT("dropout", True, 1), DROPOUT("dropout1d", True, 1), DROPOUT("dropout2d", True, 1),
    DROPOUT("dropout3d", True, 1), DROPOUT("alpha_dropout", False, 0), DROPOUT("feature_alpha_dropout", False, 0),
    VIEWOP("to", "input, dtype=None, non_blocking=False, copy=False, *, device=None, memory_format=None", ck_to, 0),
    {{"cuda", BK_VIEW, OP_COPY, "input, device=None, non_blocking=False", NULL}, ck_on_device, F_METH, OP_COUNT, 0, {DTR_ANY, NULL}},
    {{"cpu", BK_VIEW, OP_COPY, "input", NULL}, ck_on_device, F_METH, OP_COUNT, 0, {DTR_ANY, NULL}},
    {{"type", BK_VIEW, OP_COPY, "input, dtype=None, non_blocking=False", NULL}, ck_type, F_METH, OP_COUNT, 0, {DTR_ANY, NULL}},
    // Python objects (sema_python.c): torch.device, torch.finfo, torch.iinfo, constant tensors
    {{"device", BK_VIEW, OP_COPY, "type, index=None", NULL}, ck_device, F_FN | F_TORCH, OP_COUNT, 0, {DTR_ANY, NULL}},
    {{"finfo", BK_VIEW, OP_COPY, "type=None", NULL}, ck_finfo, F_FN | F_TORCH, OP_COUNT, 1, {DTR_ANY, NULL}},
    {{"iinfo", BK_VIEW, OP_COPY, "type", NULL}, ck_finfo, F_FN | F_TORCH, OP_COUNT, 0, {DTR_ANY, NULL}},
    BUILT("tensor", "data, *, dtype=None" OPTS, ck_tensor, build_literal, LITERAL_TENSOR, F_FN | F_TORCH),
    BUILT("as_tensor", "data, dtype=None, device=None", ck_tensor, build_literal, LITERAL_AS_TENSOR, F_FN | F_TORCH),
    BUILT("scalar_tensor", "s, *, dtype=None" OPTS, ck_tensor, build_literal, LITERAL_SCALAR, F_FN | F_TORCH),
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
    {{"isnan", BK_BUILD, OP_NE, "input", build_float_test}, ck_float_test, F_BOTH | F_TORCH, OP_COUNT, TEST_NAN, ANY_DTYPE}, {{"isinf", BK_BUILD, OP_EQ, "input", build_float_test}, ck_float_test, F_BOTH | F_TORCH, OP_COUNT, TEST_INF, ANY_DTYPE},
    {{"isfinite", BK_BUILD, OP_LT, "input", build_float_test}, ck_float_test, F_BOTH | F_TORCH, OP_COUNT, TEST_FINITE, ANY_DTYPE},
    {{"isposinf", BK_BUILD, OP_EQ, "input", build_float_test}, ck_float_test, F_BOTH | F_TORCH, OP_COUNT, TEST_POSINF, ANY_DTYPE},
    {{"isneginf", BK_BUILD, OP_EQ, "input", build_float_test}, ck_float_test, F_BOTH | F_TORCH, OP_COUNT, TEST_NEGINF, ANY_DTYPE},
    {{"nan_to_num", BK_BUILD, OP_WHERE, "input, nan=0.0, posinf=None, neginf=None", build_nan_to_num}, ck_nan_to_num, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    // binary
    {{"add", BK_NODE, OP_ADD, "input, other, *, alpha=1", build_add}, ck_add, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"sub", BK_NODE, OP_SUB, "input, other, *, alpha=1", build_add}, ck_add, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"rsub", BK_NODE, OP_SUB, "input, other, *, alpha=1", build_add}, ck_add, F_FN | F_TORCH, OP_COUNT, 1, ANY_DTYPE}, BINARY("mul", MUL, F_TORCH),
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
    BINARY("nextafter", NEXTAFTER, F_TORCH),
    {{"logaddexp", BK_BUILD, OP_ADD, "input, other", build_logaddexp}, ck_logaddexp, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    {{"logaddexp2", BK_BUILD, OP_ADD, "input, other", build_logaddexp}, ck_logaddexp, F_BOTH | F_TORCH, OP_COUNT, 2, ANY_DTYPE},
    BINARY("bitwise_and", BITWISE_AND, F_TORCH), BINARY("bitwise_or", BITWISE_OR, F_TORCH),
    BINARY("bitwise_xor", BITWISE_XOR, F_TORCH), BINARY("bitwise_left_shift", LSHIFT, F_TORCH),
    BINARY("bitwise_right_shift", RSHIFT, F_TORCH),
    NODE("__lshift__", LSHIFT, "input, other", ck_binary, F_METH, 0),
    NODE("__rshift__", RSHIFT, "input, other", ck_binary, F_METH, 0),
    {{"isclose", BK_BUILD, OP_EQ, "input, other, rtol=1e-05, atol=1e-08, equal_nan=False", build_isclose}, ck_isclose, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"lerp", BK_BUILD, OP_SUB, "input, end, weight", build_lerp}, ck_lerp, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    NODE("where", WHERE, "condition, input, other", ck_where, F_BOTH, F_TORCH),
    NODE("clamp", CLAMP, "input, min=None, max=None", ck_clamp, F_BOTH, F_TORCH),
    {{"masked_fill", BK_BUILD, OP_WHERE, "input, mask, value", build_masked_fill}, ck_masked_fill, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"tril", BK_BUILD, OP_WHERE, "input, diagonal=0", build_tril}, ck_tril, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"triu", BK_BUILD, OP_WHERE, "input, diagonal=0", build_tril}, ck_tril, F_BOTH | F_TORCH, OP_COUNT, 1, ANY_DTYPE},
    // reductions
    REDUCE("sum", SUM, "input, dim=None, keepdim=False, *, dtype=None", F_TORCH),
    REDUCE("mean", MEAN, "input, dim=None, keepdim=False, *, dtype=None", F_TORCH),
    REDUCE("amax", AMAX, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("amin", AMIN, "input, dim=None, keepdim=False", F_TORCH),
    REDUCE("var", VAR, "input, dim=None, unbiased=True, keepdim=False, *, correction=None", F_TORCH),
    REDUCE("std", STD, "input, dim=None, unbiased=True, keepdim=False, *, correction=None", F_TORCH),
    {{"var_mean", BK_BUILD, OP_VAR, "input, dim=None, unbiased=True, keepdim=False, *, correction=None", build_var_mean}, ck_var_mean, F_FN | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    {{"std_mean", BK_BUILD, OP_STD, "input, dim=None, unbiased=True, keepdim=False, *, correction=None", build_var_mean}, ck_var_mean, F_FN | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
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
    BUILT("einsum", "*args", ck_einsum, build_einsum, 0, F_FN | F_TORCH),
    // matmul
    NODE("matmul", MATMUL, "input, other", ck_matmul, F_BOTH, F_TORCH),
    NODE("mm", MATMUL, "input, mat2", ck_matmul, F_BOTH, F_TORCH),
    NODE("bmm", MATMUL, "input, mat2", ck_matmul, F_BOTH, F_TORCH),
    BUILT("outer", "input, vec2", ck_outer, build_outer, 0, F_BOTH | F_TORCH),
    BUILT("tensordot", "a, b, dims=2, out=None", ck_tensordot, build_tensordot, 0, F_FN | F_TORCH),
    BUILT("cross", "input, other, dim=None", ck_cross, build_cross, 0, F_BOTH | F_TORCH),
    BUILT("kron", "input, other", ck_kron, build_kron, 0, F_BOTH | F_TORCH),
    BUILT("diag_embed", "input, offset=0, dim1=-2, dim2=-1", ck_diag_embed, build_diag_embed, 0, F_BOTH | F_TORCH),
    BUILT("cov", "input, *, correction=1, fweights=None, aweights=None", ck_cov, build_cov, 0, F_BOTH | F_TORCH),
    BUILT("corrcoef", "input", ck_corrcoef, build_corrcoef, 0, F_BOTH | F_TORCH),
    BUILT("ger", "input, vec2", ck_outer, build_outer, 0, F_BOTH | F_TORCH),
    NODE("dot", MATMUL, "input, tensor", ck_dot, F_BOTH, F_TORCH),
    BUILT("addmm", "input, mat1, mat2, *, beta=1, alpha=1", ck_addmm, build_addmm, PROD_MM, F_BOTH | F_TORCH),
    BUILT("baddbmm", "input, batch1, batch2, *, beta=1, alpha=1", ck_addmm, build_addmm, PROD_BMM, F_BOTH | F_TORCH),
    BUILT("addbmm", "input, batch1, batch2, *, beta=1, alpha=1", ck_addmm, build_addmm, PROD_BMM_SUM, F_BOTH | F_TORCH),
    {{"norm", BK_BUILD, OP_SUM, "input, p='fro', dim=None, keepdim=False, dtype=None", build_norm}, ck_norm, F_BOTH | F_TORCH, OP_COUNT, 0, ANY_DTYPE},
    NODE("scaled_dot_product_attention", SDPA,
         "query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None", ck_sdpa, F_FN, F_NNF),
    BUILT("linear", "input, weight, bias=None", ck_linear, build_linear, 0, F_FN | F_NNF),
    NORM("layer_norm", "input, normalized_shape, weight=None, bias=None, eps=1e-05", ck_layer_norm, build_layer_norm,
         F_TORCH),
    // padding, convolution, pooling (sema_conv.c): F.NAME and the bare name
    BUILT("pad", "input, pad, mode='constant', value=None", ck_pad, build_pad, 0, F_FN | F_NNF),
    BUILT("max_pool1d", "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, "
         "return_indices=False", ck_max_pool, build_pool, 1, F_FN | F_NNF | F_TORCH),
    BUILT("max_pool2d", "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, "
         "return_indices=False", ck_max_pool, build_pool, 2, F_FN | F_NNF | F_TORCH),
    BUILT("max_pool3d", "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, "
         "return_indices=False", ck_max_pool, build_pool, 3, F_FN | F_NNF | F_TORCH),
    BUILT("avg_pool1d", "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True", ck_avg_pool, build_pool, 1, F_FN | F_NNF | F_TORCH),
    BUILT("avg_pool2d", "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, "
         "divisor_override=None", ck_avg_pool, build_pool, 2, F_FN | F_NNF),
    BUILT("avg_pool3d", "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, "
         "divisor_override=None", ck_avg_pool, build_pool, 3, F_FN | F_NNF),
    REDUCING("adaptive_avg_pool1d", "input, output_size", ck_adaptive_pool, build_pool, OP_MEAN, 1, F_FN | F_NNF | F_TORCH),
    REDUCING("adaptive_avg_pool2d", "input, output_size", ck_adaptive_pool, build_pool, OP_MEAN, 2, F_FN | F_NNF),
    REDUCING("adaptive_max_pool1d", "input, output_size, return_indices=False", ck_adaptive_pool, build_pool, OP_AMAX, 1, F_FN | F_NNF),
    REDUCING("adaptive_max_pool2d", "input, output_size, return_indices=False", ck_adaptive_pool, build_pool, OP_AMAX, 2, F_FN | F_NNF),
    REDUCING("adaptive_avg_pool3d", "input, output_size", ck_adaptive_pool, build_pool, OP_MEAN, 3, F_FN | F_NNF),
    REDUCING("adaptive_max_pool3d", "input, output_size, return_indices=False", ck_adaptive_pool, build_pool, OP_AMAX, 3, F_FN | F_NNF),
    BUILT("max_unpool1d", "input, indices, kernel_size, stride=None, padding=0, output_size=None", ck_max_unpool, build_pool, 1, F_FN | F_NNF),
    BUILT("max_unpool2d", "input, indices, kernel_size, stride=None, padding=0, output_size=None", ck_max_unpool, build_pool, 2, F_FN | F_NNF),
    BUILT("max_unpool3d", "input, indices, kernel_size, stride=None, padding=0, output_size=None", ck_max_unpool, build_pool, 3, F_FN | F_NNF),
    BUILT("conv1d", "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", ck_conv, build_conv, 1, F_FN | F_NNF | F_TORCH),
    BUILT("conv2d", "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", ck_conv, build_conv, 2, F_FN | F_NNF | F_TORCH),
    BUILT("conv3d", "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", ck_conv, build_conv, 3, F_FN | F_NNF | F_TORCH),
    BUILT("conv_transpose1d", "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, "
         "dilation=1", ck_conv_transpose, build_conv, 1, F_FN | F_NNF | F_TORCH),
    BUILT("conv_transpose2d", "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, "
         "dilation=1", ck_conv_transpose, build_conv, 2, F_FN | F_NNF | F_TORCH),
    BUILT("conv_transpose3d", "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, "
         "dilation=1", ck_conv_transpose, build_conv, 3, F_FN | F_NNF | F_TORCH),
    BUILT("interpolate", "input, size=None, scale_factor=None, mode='nearest', align_corners=None, "
         "recompute_scale_factor=None, antialias=False", ck_interpolate, build_interpolate, 0, F_FN | F_NNF),
    // composed of avg_pool and interpolate (sema_conv_composed.c)
    BUILT("lp_pool1d", "input, norm_type, kernel_size, stride=None, ceil_mode=False", ck_lp_pool, build_pool, 1, F_FN | F_NNF),
    BUILT("lp_pool2d", "input, norm_type, kernel_size, stride=None, ceil_mode=False", ck_lp_pool, build_pool, 2, F_FN | F_NNF),
    BUILT("local_response_norm", "input, size, alpha=0.0001, beta=0.75, k=1.0", ck_local_response_norm, build_local_response_norm, 0, F_FN | F_NNF),
    BUILT("upsample", "input, size=None, scale_factor=None, mode='nearest', align_corners=None", ck_upsample, build_interpolate, 0, F_FN | F_NNF),
    BUILT("upsample_nearest", "input, size=None, scale_factor=None", ck_upsample, build_interpolate, 0, F_FN | F_NNF),
    BUILT("upsample_bilinear", "input, size=None, scale_factor=None", ck_upsample, build_interpolate, 1, F_FN | F_NNF),
    BUILT("unfold", "input, kernel_size, dilation=1, padding=0, stride=1", ck_im2col, build_unfold, 2, F_FN | F_NNF),
    BUILT("fold", "input, output_size, kernel_size, dilation=1, padding=0, stride=1", ck_fold, build_fold, 2, F_FN | F_NNF),
    // torch.nn.functional built from parts (sema_nn.c): a bare function and F.NAME, torch.NAME
    // where PyTorch 1.13 has it with the same parameters (torch.batch_norm, instance_norm and
    // embedding are ATen's, with other parameter lists: not these)
#define NNF(n, sig, ck, ns) {{n, BK_NODE, OP_COUNT, sig, NULL}, ck, F_FN | F_NNF | (ns), OP_COUNT, 0, {DTR_ANY, NULL}}
    ACT("softplus", "input, beta=1, threshold=20", ck_softplus, build_softplus, 0, FLOAT_ONLY("softplus_cuda"), 0),
    ACT("leaky_relu", "input, negative_slope=0.01, inplace=False", ck_leaky_relu, build_leaky_relu, 0, FLOAT_ONLY("leaky_relu_cuda"), 0),
    ACT("rrelu", "input, lower=0.125, upper=0.3333333333333333, training=False, inplace=False", ck_rrelu, build_leaky_relu, 0, FLOAT_ONLY("leaky_relu_cuda"), F_TORCH),
    ACT("elu", "input, alpha=1.0, inplace=False", ck_elu, build_elu, 0, FLOAT_ONLY("elu_cuda"), 0),
    ACT("selu", "input, inplace=False", ck_selu, build_elu, 0, FLOAT_ONLY("elu_cuda"), F_TORCH),
    ACT("celu", "input, alpha=1.0, inplace=False", ck_celu, build_elu, 0, FLOAT_ONLY("elu_cuda"), F_TORCH),
    ACT("relu6", "input, inplace=False", ck_relu6, build_hardtanh, 0, ANY_DTYPE, 0),
    ACT("hardtanh", "input, min_val=-1.0, max_val=1.0, inplace=False", ck_hardtanh, build_hardtanh, 0, ANY_DTYPE, 0),
    ACT("hardsigmoid", "input, inplace=False", ck_hardsigmoid, build_hardsigmoid, 0, FLOAT_ONLY("hardsigmoid_cuda"), 0),
    ACT("hardswish", "input, inplace=False", ck_hardsigmoid, build_hardsigmoid, 1, FLOAT_ONLY("hardswish_cuda"), 0),
    ACT("mish", "input, inplace=False", ck_mish, build_mish, 0, FLOAT_ONLY("mish_cuda"), 0),
    ACT("softsign", "input", ck_softsign, build_softsign, 0, ANY_DTYPE, 0),
    ACT("logsigmoid", "input", ck_logsigmoid, build_logsigmoid, 0, FLOAT_ONLY("log_sigmoid_forward_cuda"), 0),
    ACT("tanhshrink", "input", ck_tanhshrink, build_tanhshrink, 0, ANY_DTYPE, 0),
    ACT("threshold", "input, threshold, value, inplace=False", ck_threshold, build_threshold, 0, NO_BOOL("threshold_cuda"), F_TORCH),
    ACT("glu", "input, dim=-1", ck_glu, build_glu, 0, FLOAT_ONLY("glu_cuda"), 0),
    ACT("softmin", "input, dim=None, _stacklevel=3, dtype=None", ck_softmin, build_softmin, 0, ANY_DTYPE, 0),
    NORM("rms_norm", "input, normalized_shape, weight=None, eps=None", ck_rms_norm, build_rms_norm, F_TORCH),
    NORM("group_norm", "input, num_groups, weight=None, bias=None, eps=1e-05", ck_group_norm, build_group_norm, F_TORCH),
    NORM("batch_norm", "input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, "
        "eps=1e-05", ck_batch_norm, build_batch_norm, 0),
    NORM("instance_norm", "input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, "
        "momentum=0.1, eps=1e-05", ck_instance_norm, build_batch_norm, 0),
    NORM("normalize", "input, p=2.0, dim=1, eps=1e-12, out=None", ck_normalize, build_normalize, 0),
    NORM("cosine_similarity", "x1, x2, dim=1, eps=1e-08", ck_cosine_similarity, build_cosine_similarity, F_TORCH),
    NORM("pairwise_distance", "x1, x2, p=2.0, eps=1e-06, keepdim=False", ck_pairwise_distance, build_pairwise_distance, F_TORCH),
    BUILT("embedding", "input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, "
        "sparse=False", ck_embedding, build_embedding, 0, F_FN | F_NNF | 0),
    BUILT("one_hot", "tensor, num_classes=-1", ck_one_hot, build_one_hot, 0, F_FN | F_NNF | 0),
    BUILT("bilinear", "input1, input2, weight, bias=None", ck_bilinear, build_bilinear, 0, F_FN | F_NNF | F_TORCH),
    // scans
    NODE("cumsum", CUMSUM, "input, dim, *, dtype=None", ck_scan, F_BOTH, F_TORCH),
    NODE("cumprod", CUMPROD, "input, dim, *, dtype=None", ck_scan, F_BOTH, F_TORCH),
    NODE("logcumsumexp", LOGCUMSUMEXP, "input, dim", ck_scan, F_BOTH, F_TORCH),
    BUILT("cummax", "input, dim", ck_cummax, build_cummax, OP_CUMMAX, F_BOTH | F_TORCH),
    BUILT("cummin", "input, dim", ck_cummax, build_cummax, OP_CUMMIN, F_BOTH | F_TORCH),
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
    BUILT("sort", "input, dim=-1, descending=False, *, stable=False", ck_sort, build_sort_dim, SORT_SORT, F_BOTH | F_TORCH),
    BUILT("argsort", "input, dim=-1, descending=False, *, stable=False", ck_sort, build_sort_dim, SORT_ARGSORT, F_BOTH | F_TORCH),
    BUILT("msort", "input", ck_sort, build_sort_dim, SORT_MSORT, F_BOTH | F_TORCH),
    BUILT("topk", "input, k, dim=-1, largest=True, sorted=True", ck_topk, build_topk, SORT_TOPK, F_BOTH | F_TORCH),
    BUILT("kthvalue", "input, k, dim=-1, keepdim=False", ck_kthvalue, build_kth, SORT_KTHVALUE, F_BOTH | F_TORCH),
    BUILT("median", "input, dim=None, keepdim=False", ck_median, build_kth, SORT_MEDIAN, F_BOTH | F_TORCH),
    // creation
    NODE("zeros", ZEROS, "*size, dtype=None" OPTS, ck_zeros, F_FN, F_TORCH),
    NODE("zeros_like", ZEROS, "input, *, dtype=None" OPTS, ck_like, F_FN, F_TORCH),
    NODE("ones_like", ONES, "input, *, dtype=None" OPTS, ck_like, F_FN, F_TORCH),
    NODE("empty_like", ZEROS, "input, *, dtype=None" OPTS, ck_like, F_FN, F_TORCH),
    NODE("full_like", FULL, "input, fill_value, *, dtype=None" OPTS, ck_like, F_FN, F_TORCH),
    NODE_V("new_zeros", ZEROS, "input, *size, dtype=None" OPTS, ck_like, F_METH, 0, 1),
    NODE_V("new_ones", ONES, "input, *size, dtype=None" OPTS, ck_like, F_METH, 0, 1),
    NODE_V("new_empty", ZEROS, "input, *size, dtype=None" OPTS, ck_like, F_METH, 0, 1),
    NODE_V("new_full", FULL, "input, size, fill_value, *, dtype=None" OPTS, ck_like, F_METH, 0, 1),
    NODE("ones", ONES, "*size, dtype=None" OPTS, ck_zeros, F_FN, F_TORCH),
    NODE("empty", ZEROS, "*size, dtype=None" OPTS ", memory_format=None", ck_zeros, F_FN, F_TORCH),
    NODE("full", FULL, "size, fill_value, *, dtype=None" OPTS, ck_full, F_FN, F_TORCH),
    NODE("arange", ARANGE, "start, end=None, step=1, *, dtype=None" OPTS, ck_arange, F_FN, F_TORCH),
    BUILT("linspace", "start, end, steps, *, dtype=None" OPTS, ck_linspace, build_linspace, 0, F_FN | F_TORCH),
    BUILT("logspace", "start, end, steps, base=10.0, *, dtype=None" OPTS, ck_linspace, build_linspace, 1,
          F_FN | F_TORCH),
    NODE("eye", EYE, "n, m=None, *, dtype=None" OPTS, ck_eye, F_FN, F_TORCH),
    // losses: torch.nn.functional's Python signatures (the deprecated size_average and
    // reduce take only None). torch.kl_div and torch.binary_cross_entropy_with_logits
    // take another signature (an int reduction) and are not offered.
    LOSS("mse_loss", "input, target, size_average=None, reduce=None, reduction='mean'", ck_mse_loss, build_pointwise_loss),
    LOSS("l1_loss", "input, target, size_average=None, reduce=None, reduction='mean'", ck_l1_loss, build_l1_loss),
    LOSS("smooth_l1_loss", "input, target, size_average=None, reduce=None, reduction='mean', beta=1.0", ck_smooth_l1_loss, build_pointwise_loss),
    LOSS("huber_loss", "input, target, reduction='mean', delta=1.0", ck_huber_loss, build_pointwise_loss),
    LOSS("soft_margin_loss", "input, target, size_average=None, reduce=None, reduction='mean'", ck_soft_margin_loss, build_soft_margin_loss),
    LOSS("binary_cross_entropy", "input, target, weight=None, size_average=None, reduce=None, reduction='mean'", ck_binary_cross_entropy, build_binary_cross_entropy),
    LOSS("binary_cross_entropy_with_logits", "input, target, weight=None, size_average=None, reduce=None, reduction='mean', pos_weight=None", ck_binary_cross_entropy_with_logits, build_binary_cross_entropy_with_logits),
    LOSS("kl_div", "input, target, size_average=None, reduce=None, reduction='mean', log_target=False", ck_kl_div, build_kl_div),
    LOSS("nll_loss", "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean'", ck_nll_loss, build_nll_loss),
    LOSS("cross_entropy", "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', "
         "label_smoothing=0.0", ck_cross_entropy, build_cross_entropy),
    // sema_loss_margin.c
    LOSS("margin_ranking_loss", "input1, input2, target, margin=0, size_average=None, reduce=None, "
         "reduction='mean'", ck_margin_ranking_loss, build_margin_ranking_loss),
    LOSS("hinge_embedding_loss", "input, target, margin=1.0, size_average=None, reduce=None, reduction='mean'", ck_hinge_embedding_loss, build_hinge_embedding_loss),
    LOSS("cosine_embedding_loss", "input1, input2, target, margin=0, size_average=None, reduce=None, "
         "reduction='mean'", ck_cosine_embedding_loss, build_cosine_embedding_loss),
    LOSS("multilabel_soft_margin_loss", "input, target, weight=None, size_average=None, reduce=None, "
         "reduction='mean'", ck_multilabel_soft_margin_loss, build_multilabel_soft_margin_loss),
    LOSS("multi_margin_loss", "input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, "
         "reduction='mean'", ck_multi_margin_loss, build_multi_margin_loss),
    LOSS("multilabel_margin_loss", "input, target, size_average=None, reduce=None, reduction='mean'", ck_multilabel_margin_loss, build_multilabel_margin_loss),
    LOSS("triplet_margin_loss", "anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, "
         "size_average=None, reduce=None, reduction='mean'", ck_triplet_margin_loss, build_triplet_margin_loss),
    LOSS_V("triplet_margin_with_distance_loss", "anchor, positive, negative, *, distance_function=None, "
         "margin=1.0, swap=False, reduction='mean'", ck_triplet_margin_loss, build_triplet_margin_loss, 1),
    LOSS("poisson_nll_loss", "input, target, log_input=True, full=False, size_average=None, eps=1e-08, "
         "reduce=None, reduction='mean'", ck_poisson_nll_loss, build_poisson_nll_loss),
    LOSS("gaussian_nll_loss", "input, target, var, full=False, eps=1e-06, reduction='mean'", ck_gaussian_nll_loss, build_gaussian_nll_loss),
    // sema_einops.c: einops' functions (einops.NAME, or NAME imported from einops); after
    // torch's rows of the same names
    BUILT("rearrange", "tensor, pattern, **axes_lengths", ck_einops, build_einops, 0, F_EINOPS),
    BUILT("repeat", "tensor, pattern, **axes_lengths", ck_einops, build_einops, 1, F_EINOPS),
    BUILT("reduce", "tensor, pattern, reduction, **axes_lengths", ck_einops, build_einops, 2, F_EINOPS),
    BUILT("einsum", "*tensors_and_pattern", ck_einops_einsum, build_einsum, 0, F_EINOPS),
    BUILT("pack", "tensors, pattern", ck_einops_pack, build_einops_pack, 0, F_EINOPS),
    BUILT("unpack", "tensor, packed_shapes, pattern", ck_einops_unpack, build_einops_unpack, 0, F_EINOPS),
#undef NNF
#undef LOSS_V
#undef VIEWOP_V
#undef NODE_V
#undef ACT
#undef BUILT
#undef REDUCING
#undef NORM
};
enum { NBUILTINS = sizeof builtins / sizeof builtins[0] };

static const Builtin nodes[OP_COUNT] = {
#define X(id, name, ...) [OP_##id] = {name, BK_NODE, OP_##id, "", NULL},
#include "ir/ops.def"
#undef X
};

const Builtin *node_builtin(Op op) { return &nodes[op]; }

const BuiltinDef *builtin_find(const char *name) {
  for (int i = 0; i < NBUILTINS; i++)
    if (!strcmp(builtins[i].b.name, name)) return &builtins[i];
  return NULL;
}
// The row an operator spells: '+' is add, '//' floor_divide, '@' matmul (ast.c's
// binop_name is the spelling's row name).
const BuiltinDef *operator_row(int binop) {
  const BuiltinDef *d = builtin_find(binop_name((BinOp)binop));
  TD_ASSERT(d);
  return d;
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
