// frontend/frontend.h: the AST that grammar/ builds, the types sema gives it, and the
// entry points of parse, sema and lower. One banner section per .c file.
#ifndef TDSLC_FRONTEND_FRONTEND_H
#define TDSLC_FRONTEND_FRONTEND_H

#include "base/base.h"
#include "ir/build.h"
#include "ir/ir.h"

typedef struct Ast Ast;
typedef struct TType TType;
typedef struct Parse Parse;
typedef struct Builtin Builtin;

typedef VEC(Ast *) AstList;

// ============================================================================
// ast.c — nodes, constructors, --emit=ast
// ============================================================================
typedef enum {
  // expressions
  AST_INT,       // ival
  AST_FLOAT,     // fval; op 'j': an imaginary literal (2.5j)
  AST_BOOL,      // bval
  AST_STR,       // name: the text of a string literal, quotes removed
  AST_NONE,
  AST_NAME,      // name
  AST_DTYPE,     // dtype (a dtype name used as a value: x.to(f64), dtype=i32)
  AST_UNARY,     // op (UN_*) lhs
  AST_LOGIC,     // lhs and rhs, lhs or rhs (op LOGIC_*), not lhs (rhs NULL), lhs in rhs, lhs is rhs, and
                 // their negations: Python's, on compile-time values
  AST_BINARY,    // lhs op (BIN_*) rhs
  AST_CALL,      // name(list) or lhs.name(list); lhs NULL for the function form
  AST_ATTR,      // lhs.name without parentheses (x.T)
  AST_INDEX,     // lhs[list]; items are exprs, AST_SLICE, AST_ELLIPSIS or AST_NONE
  AST_LIST,      // [list]
  AST_TUPLE,     // (list): (a, b), (a,), ()
  AST_SLICE,     // lhs:rhs:step, each may be NULL
  AST_ELLIPSIS,
  AST_STARRED,   // *lhs: unpacked into call arguments, tuple or list displays and assignment targets
  AST_COND,      // lhs if step else rhs: Python's conditional expression (sema: operands[0] the branch taken)
  AST_COMP,      // [lhs for ... if ...] (op TY_LIST) or (lhs for ...) (op TY_TUPLE): list holds the
                 // clauses in order, AST_FOR (its targets as a for loop's, rhs the iterable, no body)
                 // and AST_IF (lhs the condition); sema: unrolled binds the variables, operands are
                 // the elements
  AST_APPLY,     // lhs(list): a call of a value that is no name or method (nn.ReLU()(x))
  AST_FSTRING,   // f"...": list holds AST_STR pieces and AST_FIELD replacement fields in order
  AST_FIELD,     // {lhs!c:spec} of an f-string: op the conversion ('r', 's', 'a' or 0), name the
                 // format spec (NULL: none); {lhs=} has rhs, an AST_STR of the text "lhs=" it prints first
  AST_KWARG,     // name=rhs, only inside call arguments
  // statements
  AST_ASSIGN,    // list (targets: AST_NAME, AST_TUPLE of targets, one AST_STARRED per tuple) = rhs;
                 // body: the further groups of a chained assignment; sema: operands, the value
                 // expression of each name in order
  AST_AUGASSIGN, // lhs (AST_NAME) op= rhs, op a BinOp other than MATMUL and the comparisons
  AST_STORE,     // lhs (an AST_INDEX) = rhs (op < 0) or op= rhs
  AST_RETURN,    // list
  AST_EXPR,      // lhs on its own as a statement: x.clamp_(min=0), x.index_copy_(0, i, v)
  AST_FOR,       // for name in rhs { body }; oploc: the loop variable; lhs: a tuple target (ast_for)
  AST_BREAK,     // break (sema_ctl.c: ends the unrolled loop in the iteration it is reached)
  AST_CONTINUE,  // continue
  AST_IF,        // if lhs { body } else { list }; elif / else if: list holds one AST_IF
  AST_WHILE,     // while lhs { body }
  AST_ASSERT,    // assert lhs[, rhs] (sema: operands[0] the run-time check node, if any)
  AST_PASS,      // pass
  // declarations
  AST_CONST,     // const name = rhs
  AST_PARAM,     // [mut] name: type [= rhs]: rhs the default value; type->bval: `| None` (optional)
  AST_TYPE,      // dtype[list]; dtype DT_COUNT: name[list], a word that names no dtype (oploc)
  AST_SCALAR_TYPE, // a Python scalar parameter's type: name is the word written (int, float, bool);
                   // NULL: none written (eps=1e-6), the default's kind
  AST_FN,        // fn name(params) -> rets { body }: rets AST_TYPE (and AST_NONE in a tuple); none: None
  AST_IMPORT,    // import ALIASES (name NULL), from name import ALIASES: list holds AST_ALIAS
  AST_ALIAS,     // name [as lhs]: name a dotted module path or the name imported; lhs the AST_NAME bound
  AST_PROGRAM,   // list of AST_CONST / AST_IMPORT / AST_FN
  AST_COUNT
} AstKind;

typedef enum { UN_NEG, UN_NOT, UN_COUNT } UnOp;
typedef enum { LOGIC_AND, LOGIC_OR, LOGIC_NOT, LOGIC_IN, LOGIC_NOT_IN, LOGIC_IS, LOGIC_IS_NOT, LOGIC_COUNT } LogicOp;
typedef enum {
  BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_FLOORDIV, BIN_MOD, BIN_POW, BIN_MATMUL,
  BIN_EQ, BIN_NE, BIN_LT, BIN_LE, BIN_GT, BIN_GE, BIN_AND, BIN_OR, BIN_XOR, BIN_LSHIFT, BIN_RSHIFT, BIN_COUNT
} BinOp;

struct Ast {
  AstKind kind;
  Loc loc;           // the whole construct; for AST_BINARY/UNARY the operator token is oploc
  Loc oploc;         // operator token (binary, unary, aug-assign, store), method name of a call/attr
  int op;            // UnOp / BinOp; AST_STORE: -1 for plain '='
  int depth;         // nesting depth of the expression (1 for a leaf)
  int64_t ival;
  double fval;
  bool bval;         // AST_BOOL's value; AST_FN: a @staticmethod (grammar/parser.y parse_decorated)
  char deco;         // AST_FN: 'p' a @property, 's' its @x.setter, 'c' a @classmethod (parse_decorated;
                     // sema_class.c), else 0
  bool mut;          // AST_PARAM
  DType dtype;       // AST_DTYPE, AST_TYPE
  const char *name;  // NAME, CALL/ATTR method or function, KWARG, CONST, PARAM, FN
  Ast *lhs, *rhs, *step;
  Ast *type;         // AST_PARAM
  AstList list;      // CALL args, INDEX items, LIST elems, ASSIGN targets, RETURN values,
                     // TYPE dims, FN params, PROGRAM decls, IF's else statements
  AstList rets;      // FN return types (AST_TYPE)
  AstList body;      // FN, FOR, WHILE statements; IF's then statements; ASSIGN: the further target
                     // groups of a chained assignment (a = b = v: each an AST_TUPLE of targets)
  bool ret_tuple;    // FN: return type written as a parenthesised tuple

  // ---- filled by sema ----
  TType *ty;             // expression type
  const Builtin *bi;     // AST_CALL/AST_ATTR/operators: the builtin op it resolved to
  Ast **bargs;           // bound arguments in the builtin's parameter order (NULL = default)
  int nbargs;
  NodeAttr attr;         // normalised attributes for lowering (dims, keepdim, bounds ...)
  bool needs_copy;       // reshape/flatten/contiguous/to that must materialize
  Ast *inlined;          // AST_CALL of a user fn: the type-checked clone of the callee
  Ast **operands;        // BK_NODE: the expressions that become the node's inputs, in op order; BK_BUILD:
                         // the builder's operands
  const void *args;      // BK_BUILD: the builder's arguments, its family's struct (ir/build.h)
  const char *rebinds;   // an in-place view op of a variable (x.t_()): the variable, bound to its value
  int noperands;
  int inline_height;     // AST_FN and AST_CALL of one: nesting once calls are inlined (sema_budget.c)
  int64_t inline_size;   // AST_FN: AST nodes of its body once calls are inlined
  const Ast *comp;       // an element of a comprehension: the AST_COMP whose variables it reads
  AstList unrolled;      // AST_FOR: every iteration's statements in order (the loop variable's
                         // binding, then a checked clone of the body); AST_IF: the branch taken
};

Ast *ast_new(Ctx *cx, AstKind kind, Loc loc);
Ast *ast_int(Ctx *cx, int64_t v, Loc loc);
Ast *ast_float(Ctx *cx, double v, Loc loc);
Ast *ast_imag(Ctx *cx, double v, Loc loc);  // Python's imaginary literal 2.5j
Ast *ast_bool(Ctx *cx, bool v, Loc loc);
Ast *ast_str(Ctx *cx, const char *text, Loc loc);
Ast *ast_name(Ctx *cx, const char *name, Loc loc);
Ast *ast_unary(Ctx *cx, UnOp op, Ast *x, Loc oploc);
Ast *ast_binary(Ctx *cx, BinOp op, Ast *a, Ast *b, Loc oploc);
// The grammar's other constructors. `items` arguments are AST_LIST holders made by
// ast_list/ast_list_of/ast_append; their elements move into the new node. An
// expression deeper than TD_MAX_NESTING is reported once and collapses to a leaf.
Ast *ast_dtype(Ctx *cx, DType t, Loc loc);
Ast *ast_paren(Ctx *cx, Ast *e, Loc loc);  // widens e->loc over the parentheses
Ast *ast_list(Ctx *cx, Loc loc);           // an empty AST_LIST
Ast *ast_list_of(Ctx *cx, Ast *first, Loc loc);
Ast *ast_append(Ctx *cx, Ast *list, Ast *item);  // any node with a `list`; returns it
Ast *ast_list_expr(Ctx *cx, Ast *items, Loc loc);  // [a, b] as a value
Ast *ast_tuple_expr(Ctx *cx, Ast *items, Loc loc);  // (a, b), (a,) and () as a value
Ast *ast_exprs_value(Ctx *cx, Ast *items, Loc loc);  // `a, b` after '=': the tuple, or a lone expression
Ast *ast_call(Ctx *cx, Ast *recv, const char *name, Ast *args, Loc nameloc, Loc loc);
Ast *ast_call_of(Ctx *cx, Ast *callee, Ast *args, Loc loc);  // f(x), x.f(y), or an AST_APPLY
Ast *ast_cond(Ctx *cx, Ast *body, Ast *test, Ast *orelse, Loc oploc);  // body if test else orelse
Ast *ast_comp(Ctx *cx, bool generator, Ast *elem, Ast *clauses, Loc loc);
Ast *ast_concat(Ctx *cx, Ast *a, Ast *b);  // adjacent string literals (AST_STR, AST_FSTRING)
// a OP b of a comparison op (a BinOp, or BIN_COUNT + LOGIC_IN ...): a < b < c is (a < b)
// and (b < c), as Python chains it
Ast *ast_compare(Ctx *cx, int op, Ast *a, Ast *b, Loc oploc);
Ast *ast_attr(Ctx *cx, Ast *recv, const char *name, Loc nameloc, Loc loc);
Ast *ast_index(Ctx *cx, Ast *base, Ast *items, Loc bracket, Loc loc);
Ast *ast_slice(Ctx *cx, Ast *lo, Ast *hi, Ast *step, Loc loc);
Ast *ast_kwarg(Ctx *cx, const char *name, Ast *value, Loc nameloc, Loc loc);
Ast *ast_starred(Ctx *cx, Ast *value, Loc star, Loc loc);
Ast *ast_double_starred(Ctx *cx, Ast *value, Loc star, Loc loc);  // **d in a call: an AST_STARRED of op 2
// {k: v, ...}: the call dict([(k, v), ...]) (items: AST_TUPLE pairs made by ast_pair), as
// Python builds the same dict
Ast *ast_dict(Ctx *cx, Ast *items, Loc loc);
Ast *ast_pair(Ctx *cx, Ast *k, Ast *v, Loc loc);
// first = tail[0] = ... = tail[n-1]: the groups before the last are targets (a name, a
// tuple or list display of targets, a starred name in one), the last the value; a lone
// index target is a store (x[i] = v). Python's message for anything else.
Ast *ast_assign(Ctx *cx, Ast *first, Ast *tail, Loc oploc, Loc loc);
Ast *ast_aug(Ctx *cx, Ast *target, BinOp op, Ast *rhs, Loc oploc, Loc loc);  // a name's or an index's op=
Ast *ast_augassign(Ctx *cx, Ast *target, BinOp op, Ast *rhs, Loc oploc, Loc loc);
Ast *ast_store(Ctx *cx, Ast *index, int op, Ast *rhs, Loc oploc, Loc loc);  // op -1: '='
Ast *ast_return(Ctx *cx, Ast *values, Loc loc);
Ast *ast_logic(Ctx *cx, LogicOp op, Ast *a, Ast *b, Loc oploc);  // b NULL for 'not'
Ast *ast_expr_stmt(Ctx *cx, Ast *e, Loc loc);
Ast *ast_del(Ctx *cx, Ast *targets, Loc kwloc, Loc loc);  // del a, b[i]: AST_EXPR of a call "del"
// for TARGETS in iter { body }: targets a list of names and parenthesised lists of them.
// One name is the loop variable; a tuple target `a, (b, c)` is lhs (an AST_TUPLE of
// AST_NAMEs and AST_TUPLEs), the variable then a hidden name "(a, (b, c))" that sema
// unpacks into the names at each iteration, as Python does.
Ast *ast_for(Ctx *cx, Ast *targets, Ast *iter, Ast *body, Loc loc);
Ast *ast_jump(Ctx *cx, AstKind kind, Loc loc);  // AST_BREAK, AST_CONTINUE, AST_PASS
Ast *ast_assert(Ctx *cx, Ast *cond, Ast *msg, Loc loc);  // assert cond[, msg]; cond NULL: raise msg
Ast *ast_if(Ctx *cx, Ast *cond, Ast *then, Ast *els, Loc loc);  // els: a block, an AST_IF or NULL
Ast *ast_while(Ctx *cx, Ast *cond, Ast *body, Loc loc);
Ast *ast_scalar_type(Ctx *cx, const char *name, Loc loc);
Ast *ast_unknown_type(Ctx *cx, const char *word, Ast *dims, Loc wordloc, Loc loc);  // an AST_TYPE of dtype DT_COUNT
Ast *ast_const(Ctx *cx, const char *name, Ast *value, Loc loc);
Ast *ast_param(Ctx *cx, bool mut, const char *name, Ast *type, Ast *dflt, Loc loc);
// lambda a, b=1: e as an expression: an AST_FN "<lambda>" of untyped params (type NULL)
// and the body `return e`
Ast *ast_lambda(Ctx *cx, Ast *params, Ast *body, Loc loc);
Ast *ast_lambda_param(Ctx *cx, const char *name, Ast *dflt, Loc loc);  // type NULL: k=3
Ast *ast_optional(Ctx *cx, Ast *type, Loc loc);  // T | None
Ast *ast_dotted(Ctx *cx, Ast *path, const char *name, Loc loc);  // a.b: an AST_NAME "a.b"
// The dotted name e spells into buf (torch.jit.script; a call's callee: torch.no_grad() is
// torch.no_grad), false for any other expression or where buf is too short.
bool ast_dotted_name(const Ast *e, char *buf, size_t n);
Ast *ast_alias(Ctx *cx, Ast *path, Ast *as, Loc loc);
Ast *ast_import(Ctx *cx, Ast *from, Ast *items, Loc loc);
Ast *ast_type(Ctx *cx, DType t, Ast *dims, Loc loc);
Ast *ast_fn(Ctx *cx, const char *name, Ast *params, Ast *rets, bool ret_tuple, Ast *body, Loc loc);
Ast *ast_program(Ctx *cx, Loc loc);
Ast *ast_clone(Ctx *cx, const Ast *a);  // deep copy (inlining), sema fields cleared
void ast_dump(const Ast *a, FILE *out);  // --emit=ast (golden format)
const char *ast_kind_name(AstKind k);
const char *binop_name(BinOp op);        // "add", "sub" ... as --emit=ir names them
const char *binop_text(BinOp op);        // "+", "-" ...
const char *float_repr(double v, char *out, size_t n);  // Python's repr of a float, into out

// ============================================================================
// parse.c — source text -> AST (flex + bison); errors through diag_error
// ============================================================================
enum { TD_MAX_NESTING = 1000 };
enum { TD_MAX_INLINE_OPS = 100000 };  // AST nodes all inlined calls of a program may clone, in all  // deeper expressions are a located error, never a stack overflow
Ast *parse_program(Ctx *cx, const SrcFile *f);   // NULL only when nothing could be built
void parse_dump_tokens(Ctx *cx, const SrcFile *f, FILE *out);  // --emit=tokens

// ============================================================================
// sema.c (and its pieces sema_*.c, see sema_internal.h) — names, constants, inlining,
// dtypes, shapes, views; the last stage that reports user errors
// ============================================================================
// A builtin op of LANGUAGE.md §5-6 (and the operators): how sema binds its arguments
// and how lower turns a checked call into graph edits.
typedef enum {
  BK_VIEW,     // a view op: lower makes graph_view(operand 0, e->ty->view), after a copy node if e->needs_copy
  BK_NODE,     // a materializing op: one graph node of `op` over e->operands with e->attr
  BK_BUILD,    // an op of the op library: `build` (ir/build.h) over e->operands with the typed e->args
  BK_ELEMENT,  // result e->ival of operands[0], a BK_BUILD call of several results (a tuple's element)
} BuiltinKind;
struct Builtin {
  const char *name;  // as written: "transpose", "softmax", "add" for '+'
  BuiltinKind kind;
  Op op;             // BK_NODE: the node's op (BK_VIEW with needs_copy: OP_COPY)
  const char *sig;   // PyTorch 1.13's parameters: "input, dim0, dim1"
  BuildFn build;     // BK_BUILD: the builder
};

typedef enum { TY_POISON, TY_NONE, TY_SCALAR, TY_DTYPE, TY_TENSOR, TY_LIST, TY_TUPLE, TY_MODULE, TY_STR, TY_DICT } TyKind;

struct TType {
  TyKind kind;
  DType dtype;           // TENSOR; SCALAR: DT_BOOL, DT_I64 or DT_F64 (Python bool/int/float); DTYPE: the one named
  View view;             // TENSOR: shape, and PyTorch's strides/offset over its storage
  int64_t storage_numel; // TENSOR: elements of the storage it views
  int storage;           // TENSOR: storage identity (0..nparams-1: that parameter; else a fresh one)
  bool writable;         // TENSOR: a local or a 'mut' parameter's storage
  const Ast *bits_of;    // TENSOR: views the result of this x.view(dtype) call, a copy of x's
                         // bits where PyTorch's is a view of x: writes to it are refused
  bool requires_grad;    // TENSOR: read as an nn.Module's parameter (p.requires_grad; sema_object.c)
  bool wrapped;          // TENSOR: a run-time Python scalar (an entry's `eps: float`): a 0-d
                         // tensor of f64/i64/bool that promotes as a wrapped number does;
                         // also arithmetic of them (k * 2; floats computed in f32)
  double fval;           // SCALAR value (also for ints and bools)
  int64_t ival;          // SCALAR value as an integer (ints and bools)
  int nelem;             // LIST / TUPLE / DICT
  TType **elems;         // DICT: the values, in insertion order
  TType **keys;          // DICT: the keys (compile-time values: str, int, bool, float, None), distinct;
                         // LIST of an nn.Sequential made from an OrderedDict: its modules' names, or NULL
  const char *const *fields;  // TUPLE: the field names of a named tuple (values, indices), or NULL
  const char *module;    // MODULE: "torch", "torch.nn" or "torch.nn.functional"; STR: the text; DICT: "set"
                         // for a set, "OrderedDict" for collections.OrderedDict(...), NULL for a dict
  bool size;             // TUPLE: a torch.Size (x.shape, x.size()), as str() shows it
  const Ast *ctor;       // MODULE "torch.nn.ReLU" ...: an nn module object, the call that made it
  struct ObjAttrs *attrs; // MODULE: an object's attributes the program sets (nn.Linear's weight ...;
                          // sema_object.c), shared by every holder; NULL for none
  const char *container;  // LIST: "Sequential" or "ModuleList", DICT: "ModuleDict": the nn container of
                          // these modules (sema_container.c); NULL for a plain list or dict
};

// What a function's declaration says before any call: its dim variables (a bare name
// in a parameter's type that is no const: `x: f32[N, D]`), in order of first use, and
// where each is written alone; whether sema_check_fns checked it as an entry point.
enum { TD_MAX_DIMVARS = 64 };
typedef struct FnSig {
  int ndims;
  const char *dims[TD_MAX_DIMVARS];
  Loc dimloc[TD_MAX_DIMVARS];
  int *bare;          // [param * TD_MAX_DIMS + axis]: the dim variable written alone there, or -1
  bool checked;       // checked as an entry point: no dims, or every one bound (SemaDims)
  int64_t values[TD_MAX_DIMVARS];  // checked: the value each dim was bound to
  const char *caller; // a function of the file that calls this one (it is a helper), or NULL
  bool helper_only;   // a helper that does not compile as an entry point (its parameters need
                      // the compile-time values its calls give): left unchecked, as Python
                      // runs a def only when called
  Ast *pristine;      // the declaration as parsed: what each call inlines (checking an entry
                      // point annotates the declaration itself)
} FnSig;

// Values for the dims of entry points (tdslc's --dim N=128, or the shapes of --in files).
typedef struct SemaDims {
  int n;
  const char *names[TD_MAX_DIMVARS];
  int64_t values[TD_MAX_DIMVARS];
} SemaDims;

typedef struct Program {
  Ast *ast;
  AstList fns;  // the AST_FN declarations, in source order
  int *slots;   // fns by name: open addressing, index + 1 (0: empty); cap a power of two
  int cap;
  FnSig *sigs;  // one per fns entry (sema_declare)
  struct Sema *sema;  // the state sema_declare leaves for sema_check_fns
  const char *entry;  // the function chosen as the entry point (--fn), if any: checked as one
                      // even when it is a helper, its errors reported
} Program;

// Check every function as an entry point (parameters contiguous): sema_declare, then
// sema_check_fns with no dims bound. A helper (a function another one calls) that does
// not compile as an entry point is left unchecked (FnSig.helper_only) unless it is
// p->entry. Returns false if any error was reported.
bool sema_check(Ctx *cx, Program *p);
// The two halves: the declarations (function names, constants, each function's
// FnSig); then every function as an entry point, a generic one (with dims) only when
// dims binds all of its dims (FnSig.checked), the others left unchecked.
bool sema_declare(Ctx *cx, Program *p);
bool sema_check_fns(Ctx *cx, Program *p, const SemaDims *dims);
int sema_dims_find(const SemaDims *dims, const char *name);  // the index of dim `name` in dims (NULL: none), or -1
Ast *sema_find_fn(const Program *p, const char *name);
int sema_fn_index(const Program *p, const char *name);  // its index in p->fns, or -1

// ============================================================================
// lower.c — a checked function -> Graph (view ops become View edits, no nodes)
// ============================================================================
// cpu: the graph is for a CPU (Graph.cpu), which builders may read (ir/build_conv.c)
Graph *lower_fn(Ctx *cx, const Program *p, const Ast *fn, bool cpu);

#endif
