// frontend/sema_internal.h: internal to semantic analysis, the files frontend/sema*.c.
// Nothing else includes it: the public entry points (sema_check, sema_find_fn) and the
// types sema gives the AST (TType, Builtin) are in frontend/frontend.h.
//
// The pieces, from the entry points down (the prototypes below follow the same order):
//   sema.c          declarations, declared types, every function checked as an entry
//                   point, inlining of calls to user functions
//   sema_budget.c   what inlining each function costs (nesting, ops), before any is
//                   inlined: inline_call's limits
//   sema_stmt.c     statements and function bodies; stores (x[...] = v, x op= v)
//   sema_ctl.c      static control flow: for and while loops unrolled, if on compile-time
//                   values, comprehensions
//   sema_expr.c     names and the expression checker: operators, calls, attributes
//   sema_index.c    x[...]: basic indices make one view, index tensors one node
//   sema_scatter.c  writes at run-time positions: x[idx] = v, x[mask] = v, index_put,
//                   index_copy/add/fill, scatter(_add, _reduce), in-place methods x.NAME_()
//   sema_builtin.c  the op table and the binding of its arguments, PyTorch 1.13's style
//   sema_view.c     the op table's checkers: view ops (§5), contiguous, to, casts, clone
//   sema_math.c     ... elementwise ops, where, clamp, reductions, softmax, matmul (§6)
//   sema_nn.c       ... torch.nn.functional ops built from parts: layer_norm, linear,
//                   activations, the other norms, embedding, one_hot, bilinear
//   sema_loss.c     ... the losses of torch.nn.functional
//   sema_loss_margin.c ... the margin and embedding losses
//   sema_conv.c     ... pad, pooling, convolution, interpolate of torch.nn.functional
//   sema_conv_composed.c ... lp_pool, local_response_norm, upsample: avg_pool and interpolate
//   sema_join.c     ... cat, stack, index_select, gather
//   sema_scan.c     ... cumsum, cumprod, cummax, cummin, logcumsumexp
//   sema_sort.c     ... sort, argsort, msort, topk, kthvalue, median
//   sema_einsum.c   ... einsum, from views, matmul, mul and sum
//   sema_tuple.c    ... split, chunk, unbind, max(dim): several tensors; sequences, x.shape
//   sema_mask.c     ... masked_fill, tril, triu; the value-dependent ops, refused
//   sema_shape.c    ... views by other names (view_as, movedim, atleast_Nd, unfold ...) and
//                   copies made of views (repeat, roll, pixel_shuffle, rot90, diag ...)
//   sema_elementwise.c ... elementwise ops built of others (clamp_min, xlogy, addcmul ...)
//   sema_reduce.c   ... reductions built of others (count_nonzero, nansum, aminmax)
//   sema_linalg.c   ... products and statistics: outer, addmm, tensordot, cross, kron, norm,
//                   dist, cov, corrcoef
//   sema_create.c   ... zeros, ones, full, arange, eye, *_like
//   sema_python.c   ... Python objects around tensors: devices and tensor options,
//                   torch.finfo/iinfo, torch.tensor of numbers
//   sema_module.c   import lines, nn modules constructed and called inline, inplace=,
//                   torch._assert
//   sema_container.c nn.Sequential, nn.ModuleList, nn.ModuleDict: marked lists and dicts of
//                   modules, where PyTorch's classes differ from Python's list and dict
//   sema_format.c   Python's str, repr and format of compile-time values (f-strings)
//   sema_fold.c     constant folding of Python scalars
//   sema_type.c     types, dtype promotion (through ir/dtype.c), dims and broadcasting
//
// Conventions every piece keeps: a check reports its error (PyTorch's words where
// PyTorch has them) and returns poison(sema), or false/NULL where it returns no type;
// an operand whose type is already poison is not reported again.
#ifndef TDSLC_FRONTEND_SEMA_INTERNAL_H
#define TDSLC_FRONTEND_SEMA_INTERNAL_H

#include "frontend/frontend.h"

typedef struct BuiltinDef BuiltinDef;

// ---- the state of one sema_check ----
typedef struct Sym Sym;
struct Sym {
  const char *name;
  TType *ty;
  Loc loc;
  Ast *src;   // a sequence's expression (the elements of `t` in t[0], cat(t))
  Sym *next;  // older bindings
};

typedef struct Const {
  const char *name;
  TType *ty;
  Loc loc;
  Ast *src;  // its checked expression (a tuple's, a dict's elements)
} Const;

// A name an import line binds: a module (attr NULL: `import torch.nn as nn`, `from torch
// import nn`) or one of its attributes (`from math import sqrt`).
typedef struct Import {
  const char *name;
  const char *module;
  const char *attr;
  Loc loc;
  bool inert;  // from a module tdsl does not compile (numpy, timm, os): a use of the name is the error
} Import;

typedef VEC(const char *) NameList;

// A fn written inside another (a local def, sema_lambda.c): its signature, by declaration.
typedef struct LocalSig {
  const Ast *fn;
  FnSig *sig;
} LocalSig;

// AST_FN.op of a fn written inside another: its parameters may be untyped (ANY_TYPE, any
// value), and without an arrow it returns what its return gives, as a Python def does.
enum { DEF_LOCAL = 1, DEF_CLASS = 2 };  // DEF_CLASS: a class (grammar/parser.y parse_class; sema_class.c)
enum { PARAM_STAR = 1, PARAM_KWARGS = 2 };  // AST_PARAM.ival of *args (a tuple of the positional arguments
                                            // from its place on) and **kwargs (a dict of the other keywords)
#define ANY_TYPE "(any)"

// A list or dict changed in place (seq_replace): the object it was, the value it is now.
typedef struct Changed {
  const TType *old;
  Ast *now;
} Changed;

typedef struct Sema {
  Ctx *cx;
  Program *p;
  VEC(Const) consts;
  Const *file_consts;        // the module-level names as the file defines them (reset_globals)
  int nfile_consts;          // -1 until the first entry point's check
  const Ast *method_cls;     // the class defining the method being called (super() names its base)
  TType *method_self;        // and its self; NULL outside a method
  VEC(Import) imports;       // the names the file's import lines bind, in order
  Sym *scope;                // locals of the body being checked, newest first
  int nstorage;              // next fresh storage id
  VEC(Ast *) stack;          // user functions being checked or inlined (recursion)
  VEC(int) written;          // the storages written so far (a literal's values are known until then)
  const Ast *entry;          // the function checked as an entry point
  int64_t inlined;           // AST nodes the program's calls inlined so far, all entry points
  bool over_budget;          // an inlining limit was reported: later calls over one are silent
  bool mask_target;          // checking a store's target: x[mask] is the mask's store (sema_scatter.c)
  Sym *dims;                 // the dims of the function being checked (N, D: Python ints)
  bool ok;                   // sema_declare reported nothing
  int loops;                 // for loops being unrolled, nested: names their hidden iterables
  Ast **param_src;           // set for check_body by a call: the arguments (a tuple parameter's elements)
  int lambdas;               // calls of lambdas so far: names each call's parameters (sema_lambda.c)
  int lambda_depth;          // lambda bodies being checked, nested
  int repr_depth;            // module reprs being written, nested (sema_format.c: a module holding itself)
  VEC(struct Ident { const char *hidden; const void *ident; }) idents;  // each attribute binding's tensor
                                                                          // identity (sema_object.c's value_ident)
  VEC(LocalSig) local_sigs;  // the local defs checked so far
  VEC(Changed) changed;      // every in-place change of a list or dict, in order: a call's are its caller's too
  struct {                   // set by a local def's call for inline_call: its captures, renamed in
    const char *const *from, *const *to;  // the clone it checks to the hidden names bound to them
    int n;
  } captures;
} Sema;

// ---- an entry of the op table (sema_builtin.c) ----
// A checker sees e->bargs bound to the op's parameters (NULL: left out) and returns
// e's type; it sets e->operands (and e->attr, e->needs_copy) for lower.c.
typedef TType *(*CheckFn)(Sema *sema, Ast *e, const BuiltinDef *d);
// forms: f(x, ...) and x.f(...); where PyTorch has the function too: torch.f(x, ...),
// torch.nn.functional.f(x, ...) (F.f); einops' functions: einops.f(x, ...) (F_EINOPS)
enum { F_FN = 1, F_METH = 2, F_BOTH = 3, F_TORCH = 4, F_NNF = 8, F_EINOPS = 16 };
// The dtype rule of a row: which input dtypes PyTorch's kernel takes, and its name in the
// message for the others ("\"softplus_cuda\" not implemented for 'Long'").
typedef enum {
  DTR_ANY,       // every dtype (the checker says more where there is more to say)
  DTR_FLOAT,     // floats only
  DTR_NOT_BOOL,  // every dtype but bool
} DTypeRuleKind;
typedef struct DTypeRule {
  DTypeRuleKind kind;
  const char *kernel;
} DTypeRule;

struct BuiltinDef {
  Builtin b;       // first: e->bi points here
  CheckFn check;
  int forms;
  Op aux;          // the op a shared checker applies (unary/binary/reduction kind)
  int variant;     // the typed variant a shared checker reads: spatial rank, which of a family ...
  DTypeRule dtr;   // the dtype rule (check_dtype_rule)
};

enum { MAX_LIST = 64 };  // the most entries of a size or dims list
enum { MAX_SEQ = 1 << 16 };  // the most elements of a Python list or tuple value

// ---- small helpers ----
static inline bool is_tensor(const TType *t) { return t && t->kind == TY_TENSOR; }
static inline bool is_scalar(const TType *t) { return t && t->kind == TY_SCALAR; }
static inline bool is_poison(const TType *t) { return !t || t->kind == TY_POISON; }

static inline bool same_shape(int na, const int64_t *a, int nb, const int64_t *b) {
  if (na != nb) return false;
  for (int i = 0; i < na; i++)
    if (a[i] != b[i]) return false;
  return true;
}

// int64 arithmetic that wraps (Python ints folded, sizes multiplied as PyTorch does).
static inline int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

// Where a call's errors point: its method or function name when it has one.
static inline Loc call_loc(const Ast *e) { return e->oploc.end > e->oploc.begin ? e->oploc : e->loc; }

// ---- sema.c ----
TType *param_type(Sema *sema, Ast *ty);         // a declared dtype[dims]: a contiguous tensor type
Sym *find_dim(Sema *sema, const char *name);    // a dim of the function being checked
TType *inline_call(Sema *sema, Ast *e, Ast *fn);  // e calls the user function fn
bool bind_params(Sema *sema, const Ast *e, const Ast *fn, int first, const AstList *args, const char *qual, bool build,
               Ast **vals, int *star);  // a call's arguments to fn's parameters (sema.c)
void sema_budget(Sema *sema);  // sema_budget.c: inline_height and inline_size of every function
// sema_budget.c: the AST nodes one iteration of a loop body clones, the bodies of the user
// functions it calls included, and the loops within as often as their plain trip counts
// say; *own: the nodes the iteration itself clones (loops within count their own)
int64_t unroll_size(Sema *sema, const AstList *body, int64_t *own);

// ---- sema_stmt.c ----
// The function body being checked: the first return reached gives its result.
typedef struct Body {
  Ast *fn;          // the function (or its inlined clone)
  TType *ret;       // what the return statement gave
  bool returned;    // a return was reached: what follows is not
  int loops;        // the loops of this body being unrolled around the statement checked
  AstKind jump;     // AST_BREAK or AST_CONTINUE reached in the loop's current iteration
                    // (what follows in it is not reached), else AST_COUNT
} Body;
const char *target_name(const Ast *t);  // the variable a store target writes through
TType *check_body(Sema *sema, Ast *fn, TType **params);
// st, an AST_ASSIGN whose rhs is checked, binds its targets (st->list, then each group of
// st->body) as Python assigns: names, tuples of targets unpacking the value (a tensor over
// its first dim), a starred name a list of what its place covers. st->operands gets the
// value expression of each name in order (lower.c binds them); Python's messages for counts
// that differ at tloc (and for a 0-d tensor unpacked: there too when at_target, else at the
// value).
void assign_targets(Sema *sema, Ast *st, Loc tloc, bool at_target);
// st stores rhs into target (x[...] = v; binop >= 0: x[...] op= v): st becomes the store
// node, of target's type (st->ty stays NULL after an error).
void check_store_common(Sema *sema, Ast *st, Ast *target, Ast *rhs, int binop);
bool store_writable(Sema *sema, const Ast *st, const Ast *target, const TType *t);
void check_block(Sema *sema, Body *body, AstList *stmts);  // statements in order, up to a return reached
// assert cond, msg (and torch._assert): a compile-time cond that is false is the located
// AssertionError; a tensor cond (one element) a run-time check, *node its OP_ASSERT part
// (else NULL). msg (NULL: none) is checked only where it is needed, as Python evaluates
// it. false after an error.
bool check_assertion(Sema *sema, Ast *cond, Ast *msg, Ast **node);
// Before each entry point's check: the module-level names as the file defines them, a
// global statement's rebinding in one entry point unseen by the next (each call runs from
// the module's state). The first call (all declarations made) takes the file's values.
void reset_globals(Sema *sema);

// ---- sema_ctl.c ----
void check_for(Sema *sema, Body *body, Ast *st);
void check_if(Sema *sema, Body *body, Ast *st);
void check_while(Sema *sema, Body *body, Ast *st);
TType *check_comp(Sema *sema, Ast *e);  // [x for t in xs if c], (x for ...): unrolled, its scope restored
// Python's len(range(start, stop, step)), step nonzero.
int64_t range_len(int64_t start, int64_t stop, int64_t step);

// ---- sema_expr.c ----
TType *check_expr(Sema *sema, Ast *e);  // sets and returns e->ty
// A call e of builtin d, its arguments checked: bound to d's parameters, checked by d
// (inplace=True of an activation: its result written into the input).
TType *check_builtin(Sema *sema, Ast *e, const BuiltinDef *d);
bool check_items(Sema *sema, AstList *list);  // call arguments, display items: checked, *t unpacked
bool truth_value(Sema *sema, Ast *e, bool *out);  // bool(e) of a checked compile-time value; false after an error
bool check_args(Sema *sema, Ast *e);    // a call's arguments: false when one is poison
void bind_name(Sema *sema, const char *name, TType *t, Loc loc);
void bind_expr(Sema *sema, const char *name, Ast *v, Loc loc);
void unbind_name(Sema *sema, const char *name);  // name = the checked v (a sequence's items: v's)
Sym *find_local(Sema *sema, const char *name);
Const *find_const(Sema *sema, const char *name);
Loc name_loc(const Ast *d);

// ---- sema_index.c ----
TType *check_index(Sema *sema, Ast *e);
// The shape of advanced indexing of a view v by index tensors idx at its dims pos
// (ascending); false after PyTorch's message when they do not broadcast together.
bool indexed_shape(Sema *sema, Loc loc, const View *v, Ast **idx, const int *pos, int n, int *on, int64_t *shape);

// ---- sema_scatter.c: writes at run-time positions, in-place methods ----
// A store through an advanced index or a mask (target a BK_NODE index): st becomes the
// index_put node, or the store of a where.
void index_store(Sema *sema, Ast *st, Ast *target, Ast *rhs, int binop);
TType *mask_index(Sema *sema, Ast *e, TType *base);  // x[mask] as a store's target
Ast *list_index(Sema *sema, Ast *e, Ast *it, int64_t size, int pos);  // x[[0, 2]]: an i64 index; NULL after an error
// x.NAME_(...) for an op NAME without an in-place row: NAME's result stored into x;
// NULL when NAME has no method form either.
TType *inplace_method(Sema *sema, Ast *e);
TType *ck_index_put(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_index_op(Sema *sema, Ast *e, const BuiltinDef *d);  // index_copy, index_add, index_fill
TType *ck_scatter(Sema *sema, Ast *e, const BuiltinDef *d);   // scatter, scatter_add, scatter_reduce
TType *ck_fill(Sema *sema, Ast *e, const BuiltinDef *d);      // fill_, zero_, copy_

// ---- sema_build.c: calls the op library builds (ir/build.h) ----
// e becomes a call of builder fn over ops[0..n) with its typed arguments args (kept: see
// KEEP); returns its type, or a tuple of its results' types.
TType *built(Sema *sema, Ast *e, BuildFn fn, const void *args, Ast **ops, int n);
void *keep_args(Sema *sema, const void *args, size_t size);
Ast *view_ast(Sema *sema, const Ast *e, Ast *x, View v);  // the view v of x's storage, an expression
// The values of tensor a when they are known at compile time: a torch.tensor of Python data
// (through the names bound to it) whose storage nothing has written; NULL otherwise.
const CreateArgs *literal_of(Sema *sema, const Ast *a);
// The value i of such a literal as an int (a float truncated).
int64_t literal_int(const CreateArgs *c, int64_t i);
#define KEEP(sema, ...) keep_args(sema, &(__VA_ARGS__), sizeof(__VA_ARGS__))
// A call of builder fn at at's place, as an expression of its own (its type set).
Ast *built_ast(Sema *sema, const Ast *at, BuildFn fn, const void *args, Ast **ops, int n);
// The op's own node (ir/ops.def) at at's place, checked (statement forms, stores):
Ast *node_binary(Sema *sema, const Ast *at, Op op, Ast *a, Ast *b);  // a op b
Ast *node_where(Sema *sema, const Ast *at, Ast *c, Ast *x, Ast *y);
Ast *node_clone(Sema *sema, const Ast *at, Ast *x);
Ast *node_clamp(Sema *sema, const Ast *at, Ast *x, Ast *lo, Ast *hi);
Ast *node_fill(Sema *sema, const Ast *at, Op op, const TType *like);  // ZEROS or ONES of like's dtype and shape
Ast *node_full(Sema *sema, const Ast *at, const TType *v, DType dt);  // the 0-d tensor of number v

// ---- sema_builtin.c ----
const BuiltinDef *builtin_find(const char *name);
const BuiltinDef *operator_row(int binop);  // the row a binary operator spells ('+': add)
const Builtin *node_builtin(Op op);  // the one node of op (no spelling): what a checker makes e
const BuiltinDef *builtin_find_form(const char *name, int form);  // the row of name with that form
bool bind_args(Sema *sema, Ast *e, const BuiltinDef *d, Ast *self);
Ast *barg(const Ast *e, int i);  // the bound argument i, or NULL when absent or None
const char *arg_name(Sema *sema, const Ast *e, const char *pname);
// The bound argument a of e as the type parameter pname needs: false (NULL) after
// PyTorch's message when it is not.
bool get_float(Sema *sema, const Ast *e, Ast *a, const char *pname, double *out);  // a number
bool get_int(Sema *sema, const Ast *e, Ast *a, const char *pname, int64_t *out);
bool get_bool(Sema *sema, const Ast *e, Ast *a, const char *pname, bool *out);
bool get_ints(Sema *sema, const Ast *e, Ast *a, const char *pname, int64_t *out, int *n);
TType *get_tensor(Sema *sema, const Ast *e, Ast *a, const char *pname);
bool get_dtype(Sema *sema, const Ast *e, Ast *a, DType *out);
bool get_dims(Sema *sema, const Ast *e, Ast *a, const char *pname, int ndim, int *dims, int *n);
// A Python number argument i (kind: "Number" for PyTorch's Scalar, "float"); def when left
// out. A tensor is refused: its value is not known when compiling.
bool num_arg(Sema *sema, const Ast *e, int i, const char *pname, const char *kind, double def, double *out);
bool no_inplace(Sema *sema, const Ast *e, int i);  // inplace=True (argument i) refused
// The row's dtype rule for an input of dtype dt: false after PyTorch's message at e.
bool check_dtype_rule(Sema *sema, const Ast *e, const BuiltinDef *d, DType dt);
// "Did you mean": the candidate nearest the word written, offered one by one.
typedef struct Suggest {
  const char *word;
  const char *best;  // NULL: none near enough yet
  int dist;
} Suggest;
Suggest suggest_start(const char *word);
void suggest(Suggest *s, const char *cand);
void suggest_builtins(Suggest *s, int forms);  // the op table's names callable in one of forms
const char *suggestion(Sema *sema, const Suggest *s);  // ". Did you mean: 'NAME'?", or ""
// What to write for a PyTorch spelling tdsl lacks (x.item(), torch.tensor); NULL: none known.
const char *pytorch_hint(const char *name, int form);
void set_operands(Sema *sema, Ast *e, Ast **ops, int n);
void set_operand1(Sema *sema, Ast *e, Ast *a);

// ---- the checkers of the op table ----
// sema_view.c
TType *ck_view(Sema *sema, Ast *e, const BuiltinDef *d);
TType *view_result(Sema *sema, Ast *e, const TType *x, View v);  // e becomes the view v of its input x
TType *cast_to(Sema *sema, Ast *e, DType dt);  // e becomes its input as dtype dt (itself, or a cast node)
// e's bound arguments replaced by args[0..n) (the arguments of the op e is checked as)
void rebind(Sema *sema, Ast *e, Ast *const *args, int n);
TType *ck_reshape(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_flatten(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_transpose(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_t(Sema *sema, Ast *e, const BuiltinDef *d);
// the *_copy ops (sema_view.c): the view op of the row's variant (VC_*), copied
enum { VC_AS_STRIDED, VC_DETACH, VC_DIAGONAL, VC_EXPAND, VC_PERMUTE, VC_SELECT, VC_SLICE, VC_SPLIT, VC_SQUEEZE, VC_T,
       VC_TRANSPOSE, VC_UNBIND, VC_UNFOLD, VC_UNSQUEEZE, VC_VIEW };
TType *ck_view_copy(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_detach(Sema *sema, Ast *e, const BuiltinDef *d);  // x.detach()
TType *ck_T(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_permute(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_unsqueeze(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_squeeze(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_expand(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_expand_as(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_select(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_narrow(Sema *sema, Ast *e, const BuiltinDef *d);
// narrow's checks: locs the call, dim, start and length; false after PyTorch's message
bool narrow_ok(Sema *sema, const Loc *locs, const TType *x, int64_t dim, int64_t start, int64_t len, int *a,
               int64_t *st);
TType *ck_diagonal(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_as_strided(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_flip(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_dropout(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_contiguous(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_to(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_cast(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_clone(Sema *sema, Ast *e, const BuiltinDef *d);
// PyTorch's expand of x to req (also the check of a stored value's shape).
bool expand_to(Sema *sema, Loc loc, const TType *x, int n, const int64_t *req, View *out);
// sema_math.c
TType *ck_gelu(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_unary(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_binary(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_where(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_clamp(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_reduce(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_softmax(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_var_mean(Sema *sema, Ast *e, const BuiltinDef *d);  // var_mean, std_mean
TType *ck_matmul(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_div(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_add(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_float_test(Sema *sema, Ast *e, const BuiltinDef *d);  // isnan, isinf, isfinite, isposinf, isneginf
TType *ck_nan_to_num(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_isclose(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_lerp(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_logaddexp(Sema *sema, Ast *e, const BuiltinDef *d);  // logaddexp, logaddexp2
// The node of an operator (-x, a + b, a @ b) or call once its operands are checked.
TType *unary_node(Sema *sema, Ast *e, Op op, Ast *x, Loc loc);
TType *binary_node(Sema *sema, Ast *e, Op op, Ast *a, Ast *b, Loc loc);
TType *where_node(Sema *sema, Ast *e, Ast *c, Ast *a, Ast *b);  // where(c, a, b), checked at the call
TType *clamp_node(Sema *sema, Ast *e, Ast *x, Ast *lo, Ast *hi);  // clamp of number bounds (NULL: none)
TType *matmul_node(Sema *sema, Ast *e, Ast *a, Ast *b, Loc loc);
bool matmul_kind_ok(Sema *sema, const Ast *e, const char *kind, const Ast *a, const Ast *b);  // mm's, bmm's checks
// a matmul's dtypes (kernel: PyTorch's name of the kernel refusing ints)
bool matmul_dtypes(Sema *sema, Loc loc, const TType *a, const TType *b, const char *kernel);
// matmul's checks (its messages at loc) and its result's shape
bool matmul_shape(Sema *sema, Loc loc, const TType *ta, const TType *tb, int *on, int64_t *out);
bool binary_dtype(Sema *sema, Loc loc, Op op, TType *a, TType *b, DType *out);
bool unary_dtype(Sema *sema, Loc loc, Op op, DType in, DType *out);  // false after PyTorch's message
// The dims (mask; dim: the one written, else -1), keepdim, correction and result dtype of a
// reduction call, parsed and checked by reduce_args.
typedef struct ReduceCall {
  uint32_t mask;
  int dim;
  bool keepdim;
  int64_t correction;
  DType dtype;
} ReduceCall;
bool reduce_args(Sema *sema, Ast *e, Op op, const char *name, ReduceCall *r);
// e as the reduction of x over the dims of mask (dim: the one dim written, else -1), of dtype dt.
TType *reduce_node(Sema *sema, Ast *e, Ast *x, uint32_t mask, bool keepdim, int dim, DType dt);
// sema_nn.c: torch.nn.functional ops built from parts, and the part builders
TType *ck_layer_norm(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_linear(Sema *sema, Ast *e, const BuiltinDef *d);
Ast *part_float(Sema *sema, const Ast *e, double v);  // a Python float at e's location
Ast *part_int(Sema *sema, const Ast *e, int64_t v);
Ast *part_dtype(Sema *sema, const Ast *e, DType dt);  // a dtype value (dtype=, x.to(dt))
TType *become(Sema *sema, Ast *e, const Ast *y);  // e becomes the node of its last part y
// activations, normalizations, embedding, one_hot, bilinear of torch.nn.functional
TType *ck_softplus(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_leaky_relu(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_rrelu(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_elu(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_selu(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_celu(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_hardtanh(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_relu6(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_hardsigmoid(Sema *sema, Ast *e, const BuiltinDef *d);  // and hardswish
TType *ck_mish(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_softsign(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_logsigmoid(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_tanhshrink(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_threshold(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_glu(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_softmin(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_rms_norm(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_group_norm(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_batch_norm(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_instance_norm(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_normalize(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_cosine_similarity(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_pairwise_distance(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_embedding(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_one_hot(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_bilinear(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_sdpa(Sema *sema, Ast *e, const BuiltinDef *d);  // scaled_dot_product_attention
// sema_loss.c: the losses of torch.nn.functional, built from parts
TType *ck_mse_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_l1_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_smooth_l1_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_huber_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_soft_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_binary_cross_entropy(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_binary_cross_entropy_with_logits(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_kl_div(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_nll_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_cross_entropy(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_poisson_nll_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_gaussian_nll_loss(Sema *sema, Ast *e, const BuiltinDef *d);
// ... their shared pieces: reduction (RED_*, the bound argument i; 'batchmean' where
// batchmean), the deprecated size_average/reduce (only None), the compute dtype of a
// one-kernel loss (f32 for halves), x as dtype dt, the reduction of a loss, ATen's
// argument parser's checks of a tensor or float argument of fname
enum { RED_NONE, RED_MEAN, RED_SUM, RED_BATCHMEAN };
bool loss_reduction(Sema *sema, const Ast *e, int i, bool batchmean, int *red);
bool loss_no_legacy(Sema *sema, const Ast *e, int i);
DType loss_compute_dtype(DType dt);
TType *loss_aten_tensor(Sema *sema, Ast *a, const char *fname, const char *pname, int pos);
bool loss_aten_float(Sema *sema, Ast *a, const char *fname, const char *pname, int pos, double dflt, double *out);
// ... and of the losses PyTorch writes in Python: the reduction string tested (its
// ValueError), a tensor whose attribute it reads; e built by the row's builder of
// ops[0..n) (NULL entries left out)
bool loss_python_reduction(Sema *sema, const Ast *e, int i, int *red);
TType *loss_py_tensor(Sema *sema, Ast *a, const char *attr);
TType *loss_built(Sema *sema, Ast *e, const BuiltinDef *d, LossArgs a, Ast **ops, int n);
// sema_loss_margin.c: the margin and embedding losses
TType *ck_margin_ranking_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_hinge_embedding_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_cosine_embedding_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_multilabel_soft_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_multi_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_multilabel_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_triplet_margin_loss(Sema *sema, Ast *e, const BuiltinDef *d);  // and triplet_margin_with_distance_loss
// sema_join.c
TType *ck_cat(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_index_select(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_gather(Sema *sema, Ast *e, const BuiltinDef *d);
// sema_create.c
TType *ck_zeros(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_full(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_arange(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_linspace(Sema *sema, Ast *e, const BuiltinDef *d);  // linspace, logspace
TType *ck_eye(Sema *sema, Ast *e, const BuiltinDef *d);

// ---- sema_tuple.c: sequences, a tensor's Python values, ops returning several tensors ----
TType *check_seq(Sema *sema, Ast *e);  // [a, b], (a, b)
Ast *part_seq(Sema *sema, const Ast *e, TyKind k, Ast **items, int n);  // of checked items
Ast *seq_now(Sema *sema, Ast *v);  // a name holding a sequence: the expression bound to it now
Ast *part_ints(Sema *sema, const Ast *e, int n, const int64_t *v);        // [v0, v1, ...]
TType *tuple_result(Sema *sema, Ast *e, Ast *const *items, int n);  // e returns the parts items
Ast *unbind_ast(Sema *sema, const Ast *at, Ast *x);  // `a, b = x`: x's rows, a tuple of views
// The element expressions of sequence a (for the tuple a user function returns, nodes that
// read its elements); false when a is no sequence.
bool seq_items(Sema *sema, const Ast *a, Ast ***items, int *n);
bool is_element(const Ast *e);  // t[0], t.values: one element of a sequence (not a slice)
TType *seq_index(Sema *sema, Ast *e);   // t[i], t[a:b]
TType *seq_attr(Sema *sema, Ast *e);    // t.values
TType *seq_binary(Sema *sema, Ast *e);  // t + u, t * 2
TType *list_method(Sema *sema, Ast *e);  // xs.append(v), xs.extend(ys), xs.insert(i, v): None
bool seq_augassign(Sema *sema, Ast *st);
bool seq_del(Sema *sema, Ast *call);
// name (a local list or dict) is now nl at node at (its unrolled gets the bindings lowering
// runs there); with aliases, every name and sequence holding the same object sees it.
void seq_replace(Sema *sema, Ast *at, const Ast *name, Ast *nl, bool aliases);

// The items of iterable v (a list, tuple or dict's keys, a tensor's rows); false after Python's
// message at loc (sema_tuple.c).
bool iterable_items(Sema *sema, Ast *v, Ast ***items, int *n, Loc loc);

// ---- sema_container.c: nn.Sequential, nn.ModuleList, nn.ModuleDict: marked lists and dicts of modules ----
bool is_container(const TType *t);                  // a Sequential, ModuleList or ModuleDict
bool is_nn_module(Sema *sema, const TType *t);      // isinstance(t, nn.Module)
TType *container_construct(Sema *sema, Ast *e);     // nn.Sequential(...), nn.ModuleList(...), nn.ModuleDict(...)
TType *container_call(Sema *sema, Ast *e, const TType *c, AstList *args);  // seq(x): its modules in order
TType *container_method(Sema *sema, Ast *e);        // ml.append(m), md.keys() ..., md.name(x)
TType *container_attr(Sema *sema, Ast *e);          // md.name of a ModuleDict: its module; NULL: no such name
TType *container_binary(Sema *sema, Ast *e);        // ml + ms, seq * 2
bool container_augassign(Sema *sema, Ast *st);      // ml += ms
bool container_index_ok(Sema *sema, Ast *e);        // c[i]: PyTorch's messages for the index; false after one
void container_store(Sema *sema, Ast *st);          // c[i] = m, md[k] = m (st->lhs->lhs the container, checked)

// ---- sema_dict.c: dicts with compile-time keys ----
Ast *part_dict(Sema *sema, const Ast *e, TType **keys, Ast **values, int n);
TType *dict_builtin(Sema *sema, Ast *e);   // dict(...), {k: v}; NULL for other calls
TType *dict_index(Sema *sema, Ast *e);     // d[k]
TType *dict_method(Sema *sema, Ast *e);    // d.keys(), d.get(k) ...
Ast *dict_keys(Sema *sema, const Ast *at, const Ast *d);  // the keys of dict d as a list
bool dict_store(Sema *sema, Ast *st, Ast *t, Ast *v);      // d[k] = v; false after an error
bool dict_del(Sema *sema, Ast *call, Ast *t);              // del d[k]
int dict_has(Sema *sema, const TType *d, const TType *k, Loc loc);  // k in d: 1, 0, -1 after an error
bool dict_unpack(Sema *sema, Ast *a, AstList *out);        // **d in a call: its kwargs onto out
TType *einops_parse_shape(Sema *sema, Ast *e);
bool inert_use(Sema *sema, Loc at, const char *name);  // a name of numpy's, timm's ...: the error (sema_module.c)

// ---- sema_lambda.c: lambdas as function values ----
bool is_lambda(const TType *t);
TType *lambda_value(Sema *sema, Ast *e);  // lambda a: e
bool param_repeats(const Ast *fn, int j);  // parameter j of fn (a def, lambda or method) named before it
TType *function_named(Sema *sema, Ast *e);  // F.gelu, torch.tanh, a user fn: as a value
TType *lambda_closure(Sema *sema, Ast *e, TType *f);  // f passed in helper call e: over the caller's locals
void bind_hidden(Sema *sema, Ast *e, const char *hidden, Ast *v, Loc loc);  // v bound to hidden where e runs
void partial_bind_now(Sema *sema, Ast *e);  // functools.partial(...) e: its bound values read now
Sym *hidden_syms(Sema *sema, const Sym *scope);  // the hidden names of scope, for a helper's body
void relocate(Ast *a, Loc loc);  // every node of a (a clone of built-in source) placed at loc
TType *lambda_call(Sema *sema, Ast *e, const TType *f, AstList *args);  // f(args) of a lambda value f  // einops.parse_shape(x, 'b c _ _'): a dict (sema_einops.c)  // del a, xs[i], xs[a:b] (the statement's call "del"); false after an error  // t += u, t *= n of a sequence t; false after an error
void local_def(Sema *sema, Ast *st);  // fn NAME(...) { ... } inside a body: binds NAME to the function value
void fn_locals(Arena *arena, const Ast *fn, NameList *out);  // the names fn binds: parameters, assigned
bool name_in(const NameList *names, const char *name);
void rename_names(Ast *a, const char *const *from, const char *const *to, int n);
FnSig *local_sig(Sema *sema, Ast *def);  // sema.c
// -> torch.Tensor, -> Tuple[...], any Python annotation: the result as returned (sema.c)
bool any_result(const Ast *fn);
bool python_helper(const Ast *fn);
void module_params(Sema *sema, Ast *fn);
bool py_map_form(Sema *sema, Ast *e);
TType *py_with(Sema *sema, Ast *e);
// name (a local sequence) rebound to the sequence of kind k of items, at node at (its
// `unrolled` holds the bindings lowering runs); aliases: every name holding the same list.
void seq_rebind(Sema *sema, Ast *at, const Ast *name, Ast **items, int n, TyKind k, bool aliases);
TType *tensor_attr(Sema *sema, Ast *e);  // x.shape, x.ndim, x.dtype, x.mT; NULL for another name
TType *py_isinstance(Sema *sema, Ast *e);  // isinstance(x, torch.Tensor) (sema_python.c)
TType *python_builtin(Sema *sema, Ast *e);  // len, float, int, bool, min, max of numbers; NULL: not one
TType *tuple_max(Sema *sema, Ast *e, bool is_max, Ast *x, Ast *dim, Ast *keepdim);
enum { SIZE_SHAPE, SIZE_NDIM, SIZE_NUMEL, SIZE_IS_FLOAT };  // ck_size's variants
TType *ck_size(Sema *sema, Ast *e, const BuiltinDef *d);
enum { SPLIT_SIZE, SPLIT_CHUNK, SPLIT_TENSOR };  // ck_split's variants: split, chunk, tensor_split
TType *ck_split(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_unbind(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_broadcast_shapes(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_broadcast_tensors(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_meshgrid(Sema *sema, Ast *e, const BuiltinDef *d);

// sema_create.c
TType *ck_like(Sema *sema, Ast *e, const BuiltinDef *d);  // zeros_like ..., new_zeros ...
// ---- sema_shape.c: views by other names, and copies made of views ----
enum { ALIAS_VIEW_AS, ALIAS_RESHAPE_AS, ALIAS_TYPE_AS, ALIAS_BROADCAST_TO, ALIAS_SWAP, ALIAS_ADJOINT };  // their variants
TType *ck_view_alias(Sema *sema, Ast *e, const BuiltinDef *d);  // view_as, reshape_as, type_as, broadcast_to, swapaxes
TType *ck_flip_lr(Sema *sema, Ast *e, const BuiltinDef *d);  // fliplr, flipud
TType *ck_movedim(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_unflatten(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_atleast(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_unfold(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_repeat(Sema *sema, Ast *e, const BuiltinDef *d);  // repeat, tile
TType *ck_repeat_interleave(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_pixel_shuffle(Sema *sema, Ast *e, const BuiltinDef *d);  // and pixel_unshuffle
TType *ck_roll(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_outer(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_tensordot(Sema *sema, Ast *e, const BuiltinDef *d);
// sema_linalg.c
TType *ck_cross(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_kron(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_diag_embed(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_cov(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_corrcoef(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_dot(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_addmm(Sema *sema, Ast *e, const BuiltinDef *d);  // addmm, baddbmm, addmv, addr

// ---- sema_einsum.c: torch.einsum, from views, matmul, mul and sum ----
TType *ck_einsum(Sema *sema, Ast *e, const BuiltinDef *d);
// e as torch.einsum(s, *ops) of the equation s (its messages at loc) built by build
TType *einsum_equation(Sema *sema, Ast *e, BuildFn build, const char *s, Loc loc, Ast **ops, int nops);

// ---- sema_einops.c: einops' rearrange, repeat, reduce (variants 0, 1, 2), einsum, pack, unpack ----
TType *ck_einops(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_einops_einsum(Sema *sema, Ast *e, const BuiltinDef *d);  // einops.einsum(*tensors, pattern)
TType *ck_einops_pack(Sema *sema, Ast *e, const BuiltinDef *d);    // (packed, packed_shapes)
TType *ck_einops_unpack(Sema *sema, Ast *e, const BuiltinDef *d);  // the parts, as a tuple

// ---- the checkers of ops composed of others, by family file ----
// sema_elementwise.c: elementwise ops built of others
TType *ck_clamp_one(Sema *sema, Ast *e, const BuiltinDef *d);  // clamp_min, clamp_max
TType *ck_logical_xor(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_deg2rad(Sema *sema, Ast *e, const BuiltinDef *d);  // deg2rad, rad2deg
TType *ck_xlogy(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_heaviside(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_logit(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_sinc(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_fmax(Sema *sema, Ast *e, const BuiltinDef *d);  // fmax, fmin
TType *ck_float_power(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_signbit(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_addcmul(Sema *sema, Ast *e, const BuiltinDef *d);  // addcmul, addcdiv
TType *ck_real(Sema *sema, Ast *e, const BuiltinDef *d);  // real, isreal, angle of real tensors
TType *ck_ldexp(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_diff(Sema *sema, Ast *e, const BuiltinDef *d);
// sema_act.c
TType *ck_shrink(Sema *sema, Ast *e, const BuiltinDef *d);  // hardshrink, softshrink
TType *ck_prelu(Sema *sema, Ast *e, const BuiltinDef *d);
// sema_reduce.c: reductions built of others
TType *ck_count_nonzero(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_nansum(Sema *sema, Ast *e, const BuiltinDef *d);  // nansum, nanmean
TType *ck_aminmax(Sema *sema, Ast *e, const BuiltinDef *d);
// sema_shape.c
TType *ck_ravel(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_diag(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_rot90(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_hsplit(Sema *sema, Ast *e, const BuiltinDef *d);  // hsplit, vsplit, dsplit
TType *ck_diagflat(Sema *sema, Ast *e, const BuiltinDef *d);  // diagflat, narrow_copy
// sema_index.c
TType *ck_take_along_dim(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_take(Sema *sema, Ast *e, const BuiltinDef *d);
// sema_mask.c
TType *ck_data_dependent(Sema *sema, Ast *e, const BuiltinDef *d);  // nonzero, unique ...: refused
// sema_scatter.c
TType *ck_view_scatter(Sema *sema, Ast *e, const BuiltinDef *d);    // slice/select/diagonal_scatter
TType *ck_masked_scatter(Sema *sema, Ast *e, const BuiltinDef *d);
// sema_linalg.c
TType *ck_norm(Sema *sema, Ast *e, const BuiltinDef *d);
bool norm_p(Sema *sema, Ast *pa, DType dt, double *p);  // norm's p (a number or 'fro') of a norm of dtype dt
TType *ck_mv(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_trace(Sema *sema, Ast *e, const BuiltinDef *d);
// sema_complex.c: complex tensors (c64, c128)
bool complex_operand(const Ast *e);  // a complex tensor (or dtype) among e's bound arguments
bool complex_const(const Ast *a, double *re, double *im);  // a Python number or complex number: its parts
// a tensor of complex dtype dt and shape (n, shape) filled with re + im j (e: the call)
TType *complex_full(Sema *sema, Ast *e, DType dt, int n, const int64_t *shape, double re, double im);
TType *complex_builtin(Sema *sema, Ast *e, const BuiltinDef *d);  // NULL: the row's checker takes it
TType *complex_binary(Sema *sema, Ast *e, Op op, Ast *a, Ast *b, Loc loc);
TType *complex_unary(Sema *sema, Ast *e, Op op, Ast *x, Loc loc);
TType *complex_matmul(Sema *sema, Ast *e, Ast *a, Ast *b, Loc loc);
TType *complex_attr(Sema *sema, Ast *e);  // z.real, z.imag
Ast *complex_cast(Sema *sema, Ast *x, DType dt);  // x converted to complex dtype dt (x itself when it is one)
bool complex_supported(Sema *sema, const Ast *e, const TType *t);  // false: refused (reported)
bool complex_store_ok(Sema *sema, const Ast *st, const Ast *target, Ast *rhs, int binop);  // may convert rhs
TType *ck_complex(Sema *sema, Ast *e, const BuiltinDef *d);  // variant: the ComplexOp
TType *complex_literal(Sema *sema, Ast *e, double re, double im);  // 2.5j, complex(1, 2)
bool complex_where_operand(const Ast *a, const Ast *b);  // a or b complex
TType *complex_where(Sema *sema, Ast *e, Ast *c, Ast *a, Ast *b);  // where(c, a, b) checked by where_node's caller
TType *ck_dist(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_inner(Sema *sema, Ast *e, const BuiltinDef *d);

// ---- sema_sort.c: sort, argsort, msort, topk, kthvalue, median: a sort node pair and views ----
TType *ck_sort(Sema *sema, Ast *e, const BuiltinDef *d);  // sort, argsort, msort
TType *ck_topk(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_kthvalue(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_median(Sema *sema, Ast *e, const BuiltinDef *d);

// ---- sema_conv.c: padding, pooling, convolution of torch.nn.functional, built from parts ----
TType *ck_pad(Sema *sema, Ast *e, const BuiltinDef *d);
// The checks every pool makes of e's bound (input, kernel_size, stride, padding (, dilation),
// ceil_mode), in nsp values each, and the output's spatial size; false after the message.
bool pool_args(Sema *sema, const Ast *e, int nsp, bool dilated, int64_t *k, int64_t *s, int64_t *p, int64_t *dil,
               bool *ceil_mode, int64_t *out);
TType *ck_max_pool(Sema *sema, Ast *e, const BuiltinDef *d);  // max_pool1d, 2d, 3d
TType *ck_avg_pool(Sema *sema, Ast *e, const BuiltinDef *d);  // avg_pool1d, 2d, 3d
TType *ck_adaptive_pool(Sema *sema, Ast *e, const BuiltinDef *d);  // adaptive_{avg,max}_pool{1,2,3}d
TType *ck_max_unpool(Sema *sema, Ast *e, const BuiltinDef *d);  // max_unpool1d, 2d, 3d
TType *ck_conv(Sema *sema, Ast *e, const BuiltinDef *d);  // conv1d, 2d, 3d
TType *ck_conv_transpose(Sema *sema, Ast *e, const BuiltinDef *d);  // conv_transpose1d, conv_transpose2d
TType *ck_interpolate(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_fold(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_im2col(Sema *sema, Ast *e, const BuiltinDef *d);  // F.unfold
// sema_conv_composed.c: pools and resizes torch.nn.functional composes of avg_pool and interpolate
TType *ck_lp_pool(Sema *sema, Ast *e, const BuiltinDef *d);  // lp_pool1d, lp_pool2d
TType *ck_local_response_norm(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_upsample(Sema *sema, Ast *e, const BuiltinDef *d);  // upsample, upsample_nearest, upsample_bilinear

// ---- sema_mask.c ----
TType *ck_masked_fill(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_tril(Sema *sema, Ast *e, const BuiltinDef *d);  // tril and triu
// bool[rows, cols]: column - row <= diagonal (lower) or >= diagonal (upper)
bool scalar_fits(Sema *sema, Loc loc, const TType *v, DType dt);  // PyTorch's checked_convert of a number

// ---- sema_scan.c: the cumulative ops ----
TType *ck_scan(Sema *sema, Ast *e, const BuiltinDef *d);    // cumsum, cumprod, logcumsumexp
TType *ck_cummax(Sema *sema, Ast *e, const BuiltinDef *d);  // cummax, cummin: (values, indices)

// ---- sema_module.c: imports, nn modules called inline, inplace=, torch._assert ----
void declare_import(Sema *sema, const Ast *d);  // an AST_IMPORT: its names in sema->imports
const Import *find_import(Sema *sema, const char *name);
// The module a free name (or a dotted path sema wrote) stands for: torch, nn, F and math,
// and the modules the imports bind; NULL otherwise.
const char *module_named(Sema *sema, const char *name);
Ast *imported_attr(Sema *sema, const Ast *e);  // from math import pi: the name as math.pi, or NULL
TType *module_call(Sema *sema, Ast *e);  // nn.ReLU(...), act(x) of a module object, torch._assert; NULL: not one
TType *check_apply(Sema *sema, Ast *e);  // AST_APPLY: nn.ReLU()(x)
// The constructor's argument `name` of nn module object m (given, else its default); NULL when its
// class has no such parameter or m is no nn module of sema_module.c's table.
const TType *nn_arg(Sema *sema, const TType *m, const char *name);
bool is_nn_class(const char *name);          // nn.NAME a class tdsl has (Linear, Sequential ...)
TType *nn_attr(Sema *sema, Ast *e, const TType *m);  // m.NAME of a module object: its constructor's argument
bool nn_names_class(const char *name);  // nn.NAME is a module class tdsl makes (nn.LayerNorm as a value)
// inplace= of e's call of d (an activation or dropout that has it): taken out of the
// arguments into *inplace; false after an error. inplace_result: e's result r written into
// its input (e becomes that store).
bool inplace_kwarg(Sema *sema, Ast *e, const BuiltinDef *d, bool *inplace);
TType *inplace_result(Sema *sema, Ast *e, TType *r);
TType *torch_assert(Sema *sema, Ast *e);

// ---- sema_format.c: Python's str, repr and format of compile-time values ----
TType *check_fstring(Sema *sema, Ast *e);  // f"...": a str
const char *py_str(Sema *sema, const TType *t, bool repr, Loc loc);  // str(t) or repr(t); NULL after an error at loc

// ---- sema_fold.c: NULL after an error (division by zero ...) ----
TType *fold_binary(Sema *sema, Loc loc, int op, const TType *a, const TType *b);
TType *fold_unary(Sema *sema, Loc loc, int op, const TType *a);
TType *fold_math(Sema *sema, Op op, const TType *a);  // NULL: op has no scalar form

// ---- sema_type.c ----
TType *ty_new(Sema *sema, TyKind k);
TType *poison(Sema *sema);
TType *ty_int(Sema *sema, int64_t v);
TType *ty_float(Sema *sema, double v);
TType *ty_bool(Sema *sema, bool v);
TType *ty_dtype(Sema *sema, DType dt);
TType *ty_module(Sema *sema, const char *name);  // "torch", "torch.nn", "torch.nn.functional"
TType *ty_fresh(Sema *sema, DType dt, int ndim, const int64_t *shape);  // a new contiguous storage
TType *ty_view_of(Sema *sema, const TType *src, View v);                // another view of src's storage
const char *torch_name(DType dt);         // "Float", as PyTorch's messages name dtypes
const char *torch_tensor_name(DType dt);  // "FloatTensor"
const char *cpp_type_name(DType dt);      // "float", "c10::Half", "long int"
const char *py_type_name(const TType *t);  // "int", "Tensor", "torch.dtype" ...

// ---- objects whose attributes a program sets (sema_object.c) ----
typedef struct ObjAttrs {
  int n, cap;
  const char **names;   // each attribute's name
  const char **hidden;  // the hidden name its value is bound to (a tensor, a sequence), or NULL
  TType **ty;           // its type (NULL: a parameter not set yet)
  char *role;           // what nn.Module registers it as: 'p' a parameter ('f' one whose requires_grad is
                        // False), 'b' a buffer, 'n' a buffer registered with persistent=False, 0 a plain
                        // attribute (sema_state.c)
  DType *want;          // a parameter not set yet: the dtype m.to(dtype) gave it (load_state_dict converts to
                        // it), else DT_COUNT
  const void **ident;   // a tensor's identity (Python's `is`: tied weights are one parameter): the binding its
                        // value was read from (m.b.weight = m.a.weight: a's), else the value's own node
  struct ObjTie {       // a parameter tied to another not set yet (self.wte.weight = self.lm_head.weight in
    struct TType *m;    // __init__): that one's module and index, read and set through it; m NULL for none
    int i;
  } *tie;
} ObjAttrs;
void obj_init(Sema *sema, TType *m, const char *const *params, int n);  // m: an object with params unset
int obj_find(const ObjAttrs *a, const char *name);                      // its index, or -1
TType *obj_read(Sema *sema, Ast *e, const TType *m, int i);             // e (m.name) becomes attribute i's value
bool obj_set(Sema *sema, Ast *at, TType *m, const char *name, Ast *v);   // binds m.name = v where at runs
int obj_add(Sema *sema, TType *m, const char *name);  // attribute name of m, added unset if m lacks it: its index
const void *value_ident(Sema *sema, const Ast *v);     // the identity of value v (ObjAttrs' ident)
void obj_ident(Sema *sema, TType *m, int i, const void *ident);  // attribute i of m is (now holds) that tensor
TType *as_parameter(Sema *sema, Ast *e);  // tensor e read as a module's parameter: its type, requires_grad set
bool unset_parameter(Sema *sema, Ast *e);  // e (m.bias, m a name) is a module's parameter not set yet: no None
bool obj_tie(Sema *sema, TType *m, const char *name, Ast *v);  // m.name = v (unchecked) of a parameter not set
                                                              // yet: tied to it; false: v is none
void obj_untie(TType **m, int *i);  // attribute *i of *m: the attribute it is tied to, if any
TType *module_setattr(Sema *sema, Ast *e);  // m.name = v of an object (sema_module.c); NULL: no object
// The shape PyTorch gives parameter name of nn module object m (from its constructor's arguments); false: unknown
bool nn_state_shape(Sema *sema, const TType *m, const char *name, int *nd, int64_t *shape);
TType *module_apply(Sema *sema, Ast *e, const TType *m, AstList *args);  // a callable object m called on args

// ---- sema_mha.c: nn.MultiheadAttention, nn.TransformerEncoderLayer/DecoderLayer: modules made of modules ----
bool is_composite(const TType *m);                  // an object of one of these classes
bool composite_names(const char *cls);              // MultiheadAttention ...: one of these classes
TType *composite_construct(Sema *sema, Ast *e);     // nn.NAME(args) of one; NULL: NAME is none of them
TType *composite_apply(Sema *sema, Ast *e, const TType *m, AstList *args);  // its forward on args
bool composite_setattr_ok(Sema *sema, const TType *m, const char *name, const Ast *v);  // a parameter's check
TType *mha_functional(Sema *sema, Ast *e);          // F.multi_head_attention_forward(...)
TType *channel_shuffle_functional(Sema *sema, Ast *e);  // F.channel_shuffle(input, groups)
TType *composite_static_call(Sema *sema, Ast *e, const char *cls);  // nn.Transformer.generate_square_subsequent_mask
TType *object_attr_call(Sema *sema, Ast *e, TType *m);  // m.name(args) of an attribute holding a module; NULL: none

// ---- user classes (sema_class.c) ----
bool is_class(const TType *t);     // a class of the file (a const's value)
const char *nn_container_base(Sema *sema, const Ast *cls);  // "Sequential" of class Stack(nn.Sequential), or NULL
const TType *derived_modules(Sema *sema, const TType *t);  // the modules of an instance of such a class, or NULL
TType *class_name_of(Sema *sema, Ast *e);  // type(v).__name__, v.__class__.__name__: the str; NULL: no such
TType *module_walk(Sema *sema, Ast *e, const TType *t);  // m.modules(), children() ...: the list; NULL: no such
// nn.Module's walk of its modules: those found so far, each with its dotted name and an expression reading it
// (unchecked: the receiver's followed by attributes and indices, as the program would write it).
typedef struct ModWalk {
  int n;
  bool repeats;  // a module held twice listed twice (state_dict()'s walk of _modules, which keeps no memo)
  const TType *ty[MAX_LIST];
  const char *name[MAX_LIST];
  Ast *path[MAX_LIST];
} ModWalk;
// The direct submodules of module t read by path, in PyTorch's order (its attributes in the order first set; a
// container's in its order), each added (deep: with its own); a module added once (unless w->repeats).
void walk_children(Sema *sema, ModWalk *w, const TType *t, const char *prefix, Ast *path, bool deep);
void walk_add(Sema *sema, ModWalk *w, const TType *t, const char *name, Ast *path, bool deep);  // t and (deep) its own

// ---- sema_state.c: nn.Module's parameters and buffers ----
// m.parameters(), named_parameters(), buffers(), named_buffers(), state_dict(), load_state_dict(sd),
// register_buffer(...), register_parameter(...), apply(fn), to(dtype), half(), float(), double(), bfloat16(),
// cpu(), cuda() at call e of module t (its arguments not yet checked); NULL for any other method.
TType *module_state(Sema *sema, Ast *e, TType *t);
void module_requires_grad(Sema *sema, TType *t, bool on);  // m.requires_grad_(on): each parameter's flag
static inline bool is_param_role(char r) { return r == 'p' || r == 'f'; }  // ObjAttrs' role of a parameter
Ast *modules_node(Sema *sema, Ast *v);         // v (such an instance) as its modules: the checked read
bool is_instance(const TType *t);  // an instance of one
bool class_is_module(Sema *sema, const Ast *cls);  // class cls derives from nn.Module
TType *class_value(Sema *sema, Ast *e);  // class Name(...) { ... } (an AST_FN of op DEF_CLASS) as a value
Ast *value_node(Sema *sema, TType *t, Loc loc);  // a node standing for the value t (an instance as self)
TType *def_value(Sema *sema, Ast *def);  // def checked as a fn inside a function: a function value (poison: error)
Ast *attr_of_call(Sema *sema, const Ast *e);  // the attribute read e->name of method-style call e
TType *call_attr_value(Sema *sema, Ast *e, TType *v);  // v, read for call e, called: a container's, a module's, else the error
TType *class_call(Sema *sema, Ast *e, const TType *f, AstList *args);  // Name(args): an instance; inst(x): forward
TType *instance_method_call(Sema *sema, Ast *e, TType *inst);  // inst.m(args); NULL: no such method or attribute
TType *bound_method(Sema *sema, Ast *e, TType *inst);          // inst.m as a value; NULL: no such method
// Cls.m(args), Cls.m of a @staticmethod or a @classmethod; NULL: none
TType *static_method(Sema *sema, Ast *e, TType *cls, bool call);
TType *property_value(Sema *sema, Ast *e, TType *inst);  // inst.p of a @property p: its getter's value; NULL: none
bool is_property(Sema *sema, const TType *inst, const char *name);  // inst.name a @property (a store: no setter)
TType *property_store(Sema *sema, Ast *e, TType *inst, const char *name, Ast *v);  // inst.x = v of an @x.setter
TType *class_attr(Sema *sema, const TType *t, const char *name);
TType *super_value(Sema *sema, Ast *e);  // super() in a method: the instance, its lookup from the base  // class attribute name of class or instance t, or NULL
const char *shape_str(Sema *sema, int n, const int64_t *shape);  // "[3, 4]"
const char *type_str(Sema *sema, const TType *t);                 // "f32[3, 4]"
bool check_rank(Sema *sema, Loc loc, int ndim);
bool check_numel(Sema *sema, Loc loc, int ndim, const int64_t *shape);
DType result_type(Sema *sema, TType **ts, int n);  // torch.result_type of tensors and scalars
bool wrap_dim(Sema *sema, Loc loc, int64_t d, int ndim, int *out);
bool broadcast(Sema *sema, Loc loc, int *na, int64_t *a, int nb, const int64_t *b);

// ---- sema_python.c: devices, tensor options, finfo/iinfo, torch.tensor ----
bool is_tensor_option(const char *pname);  // device, requires_grad, pin_memory, layout, memory_format
bool tensor_option(Sema *sema, const Ast *e, const char *pname, Ast *a);  // false after an error
TType *torch_layout_attr(Sema *sema, const char *name);  // torch.strided ...; NULL for another name
bool unpack_starred(Sema *sema, AstList *list);  // each checked *t in list replaced by its items
TType *tensor_device(Sema *sema);                         // x.device
TType *dtype_attr(Sema *sema, DType dt, const char *name);  // dtype.is_floating_point ...; NULL for another name
TType *ck_device(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_on_device(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_type(Sema *sema, Ast *e, const BuiltinDef *d);
TType *ck_finfo(Sema *sema, Ast *e, const BuiltinDef *d);
enum { LITERAL_TENSOR, LITERAL_AS_TENSOR, LITERAL_SCALAR };  // ck_tensor's rows' variants
TType *ck_tensor(Sema *sema, Ast *e, const BuiltinDef *d);

#endif
