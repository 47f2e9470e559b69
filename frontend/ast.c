// frontend/ast.c: AST nodes — the constructors the grammar calls, deep copy for
// inlining, and the --emit=ast dump. Invariants kept here:
// - every node lives in cx->arena and is zeroed except what its constructor sets;
// - `depth` is 1 + the largest depth of its children (1 for a leaf); AST_LIST
//   holders count like nodes; but the left operand of a binary operator or of and/or
//   (a chain: a + b + c ..., a and b and c ...) counts no level, as every pass walks
//   such a chain in a loop: a flat expression of any length is not deep. An expression
//   deeper than TD_MAX_NESTING is reported
//   once ("expression nested too deeply", at its operator/method/bracket) by the
//   constructor that first exceeds the limit, and every expression constructor that
//   would exceed it returns an AST_NONE leaf (depth TD_MAX_NESTING + 1) instead, so
//   no later pass ever recurses deeper than the limit and the error is not repeated;
// - statements and declarations are not depth-checked (a long body is not deep).
//
// --emit=ast format (ast_dump): one node per line, indented two spaces per level,
// Lisp-style, the closing parentheses at the end of a node's last line:
//   (KIND [ATTRS] @L:C-L:C
//     CHILD
//     CHILD)
// where @L:C-L:C is node->loc (1-based line and byte column of begin and of the
// exclusive end) and, by kind:
//   (int 42)  (float 1e-05)  (bool true)  (none)  (ellipsis)  (name x)  (dtype f32)
//   (unary neg X)  (unary bitwise_not X)        (binary OP A B) with OP a binop_name
//   (call NAME ARGS...)                          function form
//   (method NAME RECV ARGS...)                   x.f(...)
//   (attr NAME RECV)  (index BASE ITEMS...)  (list ELEMS...)  (kwarg NAME VALUE)
//   (slice LO HI STEP)                           a missing part is the line `_`
//   (assign TARGETS... RHS)  (augassign OP TARGET RHS)  (store INDEX RHS)
//   (store OP INDEX RHS)  (return VALUES...)
//   (const NAME VALUE)  (param NAME TYPE)  (param mut NAME TYPE)  (type DTYPE DIMS...)
//   (fn NAME (params PARAMS...) (returns TYPES...) (body STMTS...))
//     — `(returns tuple ...)` when written as a parenthesised tuple
//   (program DECLS...)
// Floats print as Python's repr does: 0.5, 2500.0, 1e-05, 1.5e+20.
#include "frontend/frontend.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
  [AST_INT] = "int", [AST_FLOAT] = "float", [AST_BOOL] = "bool", [AST_STR] = "str", [AST_NONE] = "none",
  [AST_NAME] = "name", [AST_DTYPE] = "dtype", [AST_UNARY] = "unary", [AST_LOGIC] = "logic",
  [AST_BINARY] = "binary",
  [AST_CALL] = "call", [AST_ATTR] = "attr", [AST_INDEX] = "index", [AST_LIST] = "list",
  [AST_TUPLE] = "tuple",  [AST_SLICE] = "slice", [AST_ELLIPSIS] = "ellipsis", [AST_STARRED] = "starred",
  [AST_COND] = "cond", [AST_COMP] = "comp", [AST_APPLY] = "apply", [AST_FSTRING] = "fstring",
  [AST_FIELD] = "field", [AST_KWARG] = "kwarg",
  [AST_ASSIGN] = "assign", [AST_AUGASSIGN] = "augassign", [AST_STORE] = "store",
  [AST_RETURN] = "return", [AST_EXPR] = "expr", [AST_FOR] = "for", [AST_BREAK] = "break", [AST_CONTINUE] = "continue", [AST_IF] = "if", [AST_WHILE] = "while",
  [AST_ASSERT] = "assert", [AST_PASS] = "pass",
  [AST_CONST] = "const", [AST_PARAM] = "param", [AST_TYPE] = "type", [AST_SCALAR_TYPE] = "scalar_type",
  [AST_FN] = "fn", [AST_IMPORT] = "import", [AST_ALIAS] = "alias", [AST_PROGRAM] = "program",
};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == AST_COUNT, "kind_names follows AstKind");

static const char *const binop_names[] = {
  "add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "matmul",
  "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
  "bitwise_right_shift",
};
_Static_assert(sizeof binop_names / sizeof binop_names[0] == BIN_COUNT, "binop_names follows BinOp");

static const char *const binop_texts[] = {
  "+", "-", "*", "/", "//", "%", "**", "@", "==", "!=", "<", "<=", ">", ">=", "&", "|", "^", "<<", ">>",
};
_Static_assert(sizeof binop_texts / sizeof binop_texts[0] == BIN_COUNT, "binop_texts follows BinOp");

static const char *const unop_names[] = {"neg", "bitwise_not"};
_Static_assert(sizeof unop_names / sizeof unop_names[0] == UN_COUNT, "unop_names follows UnOp");

static const char *const logic_names[] = {"and", "or", "not", "in", "not_in", "is", "is_not"};
_Static_assert(sizeof logic_names / sizeof logic_names[0] == LOGIC_COUNT, "logic_names follows LogicOp");

const char *ast_kind_name(AstKind k) {
  return (unsigned)k < AST_COUNT ? kind_names[k] : "?";
}

const char *binop_name(BinOp op) {
  return (unsigned)op < BIN_COUNT ? binop_names[op] : "?";
}

const char *binop_text(BinOp op) {
  return (unsigned)op < BIN_COUNT ? binop_texts[op] : "?";
}

// ---- depth ----

static int max_depth(const Ast *a, int d) {
  return a && a->depth > d ? a->depth : d;
}

static int list_depth(const AstList *l, int d) {
  for (int i = 0; i < l->len; i++) d = max_depth(l->data[i], d);
  return d;
}

static bool is_expr(AstKind k) {
  return k <= AST_KWARG;
}

// Sets a->depth from its children; an expression over the limit is reported (only
// where it first goes over) and becomes a leaf.
static bool chain_link(const Ast *a) {
  return a->kind == AST_BINARY || (a->kind == AST_LOGIC && (a->op == LOGIC_AND || a->op == LOGIC_OR));
}

static Ast *finish(Ctx *cx, Ast *a) {
  int d = a->lhs && chain_link(a) ? a->lhs->depth - 1 : max_depth(a->lhs, 0);
  d = max_depth(a->rhs, d);
  d = max_depth(a->step, d);
  d = max_depth(a->type, d);
  d = list_depth(&a->list, d);
  d = list_depth(&a->rets, d);
  d = list_depth(&a->body, d);
  a->depth = d + 1;
  if (a->depth <= TD_MAX_NESTING || !is_expr(a->kind)) return a;
  if (d == TD_MAX_NESTING) diag_error(cx, a->oploc.file ? a->oploc : a->loc, "expression nested too deeply");
  Loc loc = a->loc;
  memset(a, 0, sizeof *a);
  a->kind = AST_NONE;
  a->loc = loc;
  a->depth = TD_MAX_NESTING + 1;
  return a;
}

// Moves the elements of an AST_LIST holder (which may be NULL) into dst.
static void take(AstList *dst, Ast *holder) {
  if (holder) *dst = holder->list;
}

// ---- constructors ----

Ast *ast_new(Ctx *cx, AstKind kind, Loc loc) {
  Ast *a = arena_alloc(&cx->arena, sizeof(Ast));
  a->kind = kind;
  a->loc = loc;
  a->depth = 1;
  return a;
}

Ast *ast_int(Ctx *cx, int64_t v, Loc loc) {
  Ast *a = ast_new(cx, AST_INT, loc);
  a->ival = v;
  return a;
}

Ast *ast_str(Ctx *cx, const char *text, Loc loc) {
  Ast *a = ast_new(cx, AST_STR, loc);
  a->name = text;
  return a;
}

Ast *ast_float(Ctx *cx, double v, Loc loc) {
  Ast *a = ast_new(cx, AST_FLOAT, loc);
  a->fval = v;
  return a;
}

Ast *ast_imag(Ctx *cx, double v, Loc loc) {  // 2.5j: an AST_FLOAT of op 'j'
  Ast *a = ast_float(cx, v, loc);
  a->op = 'j';
  return a;
}

Ast *ast_bool(Ctx *cx, bool v, Loc loc) {
  Ast *a = ast_new(cx, AST_BOOL, loc);
  a->bval = v;
  return a;
}

Ast *ast_name(Ctx *cx, const char *name, Loc loc) {
  Ast *a = ast_new(cx, AST_NAME, loc);
  a->name = name;
  return a;
}

Ast *ast_dtype(Ctx *cx, DType t, Loc loc) {
  Ast *a = ast_new(cx, AST_DTYPE, loc);
  a->dtype = t;
  return a;
}

Ast *ast_unary(Ctx *cx, UnOp op, Ast *x, Loc oploc) {
  Ast *a = ast_new(cx, AST_UNARY, loc_join(oploc, x->loc));
  a->op = op;
  a->oploc = oploc;
  a->lhs = x;
  return finish(cx, a);
}

Ast *ast_binary(Ctx *cx, BinOp op, Ast *l, Ast *r, Loc oploc) {
  Ast *a = ast_new(cx, AST_BINARY, loc_join(l->loc, r->loc));
  a->op = op;
  a->oploc = oploc;
  a->lhs = l;
  a->rhs = r;
  return finish(cx, a);
}

Ast *ast_paren(Ctx *cx, Ast *e, Loc loc) {
  (void)cx;
  e->loc = loc;
  if (e->kind == AST_BINARY || e->kind == AST_LOGIC) e->bval = true;  // (a < b) < c is no chain
  return e;
}

// Whether e is a comparison written without parentheses (one a chain may continue), and
// its right operand.
static const Ast *compared(const Ast *e) {
  if (e->bval) return NULL;
  if (e->kind == AST_BINARY && e->op >= BIN_EQ && e->op <= BIN_GE) return e->rhs;
  if (e->kind == AST_LOGIC && e->op >= LOGIC_IN) return e->rhs;
  if (e->kind == AST_LOGIC && e->op == LOGIC_AND && e->ival) return compared(e->rhs);  // a chain
  return NULL;
}

// a OP b, where op is a BinOp comparison or BIN_COUNT + a LogicOp (in, is ...); a < b < c
// is (a < b) and (b < c), as Python chains it (b is written twice: it is evaluated twice,
// which for the compile-time values a chain takes is the same).
Ast *ast_compare(Ctx *cx, int op, Ast *a, Ast *b, Loc oploc) {
  const Ast *mid = compared(a);
  Ast *lhs = mid ? ast_clone(cx, mid) : a;
  Ast *c = op < BIN_COUNT ? ast_binary(cx, (BinOp)op, lhs, b, oploc) : ast_logic(cx, (LogicOp)(op - BIN_COUNT), lhs, b, oploc);
  if (!mid) return c;
  Ast *chain = ast_logic(cx, LOGIC_AND, a, c, oploc);
  chain->ival = 1;  // a chain of comparisons, which a further comparison continues
  return chain;
}

Ast *ast_list(Ctx *cx, Loc loc) {
  return ast_new(cx, AST_LIST, loc);
}

Ast *ast_list_of(Ctx *cx, Ast *first, Loc loc) {
  return ast_append(cx, ast_list(cx, loc), first);
}

Ast *ast_append(Ctx *cx, Ast *list, Ast *item) {
  vec_push(&cx->arena, &list->list, item);
  if (item->depth + 1 > list->depth) list->depth = item->depth + 1;
  if (item->loc.end > list->loc.end) list->loc.end = item->loc.end;
  return list;
}

Ast *ast_list_expr(Ctx *cx, Ast *items, Loc loc) {
  Ast *a = ast_new(cx, AST_LIST, loc);
  take(&a->list, items);
  return finish(cx, a);
}

Ast *ast_tuple_expr(Ctx *cx, Ast *items, Loc loc) {
  Ast *a = ast_new(cx, AST_TUPLE, loc);
  take(&a->list, items);
  return finish(cx, a);
}

Ast *ast_exprs_value(Ctx *cx, Ast *items, Loc loc) {
  if (items->list.len == 1) return items->list.data[0];
  return ast_tuple_expr(cx, items, loc);
}

// callee(args): a name's call f(x), a method call x.f(y), or a call of any other value.
Ast *ast_call_of(Ctx *cx, Ast *callee, Ast *args, Loc loc) {
  if (callee->kind == AST_NAME) return ast_call(cx, NULL, callee->name, args, callee->loc, loc);
  if (callee->kind == AST_ATTR) return ast_call(cx, callee->lhs, callee->name, args, callee->oploc, loc);
  Ast *a = ast_new(cx, AST_APPLY, loc);
  a->lhs = callee;
  take(&a->list, args);
  return finish(cx, a);
}

Ast *ast_cond(Ctx *cx, Ast *body, Ast *test, Ast *orelse, Loc oploc) {
  Ast *a = ast_new(cx, AST_COND, loc_join(body->loc, orelse->loc));
  a->lhs = body;
  a->step = test;
  a->rhs = orelse;
  a->oploc = oploc;
  return finish(cx, a);
}

Ast *ast_comp(Ctx *cx, bool generator, Ast *elem, Ast *clauses, Loc loc) {
  Ast *a = ast_new(cx, AST_COMP, loc);
  a->op = generator ? TY_TUPLE : TY_LIST;
  a->lhs = elem;
  take(&a->list, clauses);
  a->oploc = a->list.len ? a->list.data[0]->loc : loc;
  return finish(cx, a);
}

// "a" "b" is "ab"; with an f-string, one f-string of both's pieces.
Ast *ast_concat(Ctx *cx, Ast *a, Ast *b) {
  Loc loc = loc_join(a->loc, b->loc);
  if (a->kind == AST_STR && b->kind == AST_STR) return ast_str(cx, arena_printf(&cx->arena, "%s%s", a->name, b->name), loc);
  Ast *f = ast_new(cx, AST_FSTRING, loc);
  const Ast *parts[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    if (parts[k]->kind == AST_FSTRING)
      for (int i = 0; i < parts[k]->list.len; i++) vec_push(&cx->arena, &f->list, parts[k]->list.data[i]);
    else
      vec_push(&cx->arena, &f->list, (Ast *)parts[k]);
  }
  return finish(cx, f);
}

Ast *ast_call(Ctx *cx, Ast *recv, const char *name, Ast *args, Loc nameloc, Loc loc) {
  Ast *a = ast_new(cx, AST_CALL, loc);
  a->lhs = recv;
  a->name = name;
  a->oploc = nameloc;
  take(&a->list, args);
  return finish(cx, a);
}

Ast *ast_attr(Ctx *cx, Ast *recv, const char *name, Loc nameloc, Loc loc) {
  Ast *a = ast_new(cx, AST_ATTR, loc);
  a->lhs = recv;
  a->name = name;
  a->oploc = nameloc;
  return finish(cx, a);
}

Ast *ast_index(Ctx *cx, Ast *base, Ast *items, Loc bracket, Loc loc) {
  Ast *a = ast_new(cx, AST_INDEX, loc);
  a->lhs = base;
  a->oploc = bracket;
  take(&a->list, items);
  return finish(cx, a);
}

Ast *ast_slice(Ctx *cx, Ast *lo, Ast *hi, Ast *step, Loc loc) {
  Ast *a = ast_new(cx, AST_SLICE, loc);
  a->lhs = lo;
  a->rhs = hi;
  a->step = step;
  return finish(cx, a);
}

Ast *ast_starred(Ctx *cx, Ast *value, Loc star, Loc loc) {
  Ast *a = ast_new(cx, AST_STARRED, loc);
  a->oploc = star;
  a->lhs = value;
  return finish(cx, a);
}

Ast *ast_double_starred(Ctx *cx, Ast *value, Loc star, Loc loc) {
  Ast *a = ast_starred(cx, value, star, loc);
  a->op = 2;
  return a;
}

Ast *ast_pair(Ctx *cx, Ast *k, Ast *v, Loc loc) {
  return ast_tuple_expr(cx, ast_append(cx, ast_list_of(cx, k, loc), v), loc);
}

Ast *ast_dict(Ctx *cx, Ast *items, Loc loc) {
  Ast *args = ast_list_of(cx, ast_list_expr(cx, items, loc), loc);
  Ast *call = ast_call(cx, NULL, "dict", args, loc, loc);
  call->op = 1;  // a display: Python's dict whatever the name dict is bound to
  return call;
}

Ast *ast_kwarg(Ctx *cx, const char *name, Ast *value, Loc nameloc, Loc loc) {
  Ast *a = ast_new(cx, AST_KWARG, loc);
  a->name = name;
  a->oploc = nameloc;
  a->rhs = value;
  return finish(cx, a);
}

// What an expression that cannot be assigned to is called in Python's messages.
static const char *not_target(const Ast *t) {
  switch (t->kind) {
  case AST_CALL: case AST_APPLY: return "function call";
  case AST_INT: case AST_FLOAT: case AST_STR: case AST_FSTRING: return "literal";
  case AST_BOOL: return t->bval ? "True" : "False";
  case AST_NONE: return "None";
  case AST_BINARY: return t->op >= BIN_EQ && t->op <= BIN_GE ? "comparison" : "expression";
  case AST_COND: return "conditional expression";
  case AST_COMP: return t->op == TY_LIST ? "list comprehension" : "generator expression";
  case AST_ATTR: return "attribute";
  default: return "expression";
  }
}

// t as an assignment target (a name, a tuple or list of targets with at most one starred);
// false after Python's message. Nested displays become AST_TUPLE.
static bool to_target(Ctx *cx, Ast *t) {
  if (t->kind == AST_NAME) return true;
  if (t->kind == AST_STARRED) {
    if (t->lhs->kind == AST_NAME) return true;
    diag_error(cx, t->lhs->loc, "cannot assign to %s", not_target(t->lhs));
    return false;
  }
  if (t->kind == AST_TUPLE || t->kind == AST_LIST) {
    t->kind = AST_TUPLE;
    int stars = 0;
    for (int i = 0; i < t->list.len; i++) {
      Ast *c = t->list.data[i];
      if (!to_target(cx, c)) return false;
      if (c->kind == AST_STARRED && ++stars == 2) {
        diag_error(cx, c->loc, "multiple starred expressions in assignment");
        return false;
      }
    }
    return true;
  }
  if (t->kind == AST_ATTR)
    diag_error(cx, t->oploc, "an attribute as a nested or chained assignment's target is not supported yet: write "
               "its own assignment (x.%s = v) or one tuple of targets (x.a, x.b = u, v)", t->name);
  else if (t->kind == AST_INDEX)
    diag_error(cx, t->loc, "an index store must be an assignment of its own: x[...] = v");
  else if (t->kind == AST_DTYPE)
    diag_error(cx, t->loc, "cannot assign to %s: dtype names are reserved words", dtype_name(t->dtype));
  else
    diag_error(cx, t->loc, "cannot assign to %s", not_target(t));
  return false;
}

// The targets of one group into dst: the elements of a tuple or list display of several
// (a, b = v; (a, b) = v), else the group itself (`a, = v` is a tuple target of one).
static bool add_targets(Ctx *cx, AstList *dst, Ast *g) {
  if ((g->kind == AST_TUPLE || g->kind == AST_LIST) && g->list.len != 1) {
    for (int i = 0; i < g->list.len; i++) {
      Ast *t = g->list.data[i];
      if (!to_target(cx, t)) return false;
      vec_push(&cx->arena, dst, t);
    }
    int stars = 0;
    for (int i = 0; i < dst->len; i++) stars += dst->data[i]->kind == AST_STARRED;
    if (stars > 1) {
      diag_error(cx, g->loc, "multiple starred expressions in assignment");
      return false;
    }
    return true;
  }
  if (g->kind == AST_STARRED) {
    diag_error(cx, g->loc, "starred assignment target must be in a list or tuple");
    return false;
  }
  if (!to_target(cx, g)) return false;
  vec_push(&cx->arena, dst, g);
  return true;
}

// a, self.b = v (attributes among a tuple's targets, as __init__ writes `self.h, self.w =
// size`): the attributes' places bound to hidden names ("(target 812) b", no user name has
// parentheses), then each attribute set from its own, left to right as Python assigns:
// `if True { (a, (target 812) b) = v; setattr(self, 'b', (target 812) b) }`. NULL: first
// is no tuple of one group holding an attribute.
static Ast *attr_targets(Ctx *cx, Ast *first, Ast *tail, Loc oploc, Loc loc) {
  if (tail->list.len != 1 || (first->kind != AST_TUPLE && first->kind != AST_LIST)) return NULL;
  Ast *sets = ast_list(cx, loc);
  for (int i = 0; i < first->list.len; i++) {
    Ast *t = first->list.data[i];
    if (t->kind != AST_ATTR) continue;
    Ast *tmp = ast_name(cx, arena_printf(&cx->arena, "(target %d) %s", t->oploc.begin, t->name), t->loc);
    Ast *args = ast_list_of(cx, t->lhs, t->lhs->loc);
    ast_append(cx, args, ast_str(cx, t->name, t->oploc));
    ast_append(cx, args, ast_name(cx, tmp->name, t->loc));
    Ast *call = ast_call(cx, NULL, "setattr", args, t->oploc, loc);
    call->op = 1;
    call->oploc = t->oploc;
    ast_append(cx, sets, ast_expr_stmt(cx, call, loc));
    first->list.data[i] = tmp;
  }
  if (!sets->list.len) return NULL;
  Ast *a = ast_assign(cx, first, tail, oploc, loc);
  Ast *block = ast_list_of(cx, a, loc);
  for (int i = 0; i < sets->list.len; i++) ast_append(cx, block, sets->list.data[i]);
  return ast_if(cx, ast_bool(cx, true, loc), block, NULL, loc);
}

Ast *ast_assign(Ctx *cx, Ast *first, Ast *tail, Loc oploc, Loc loc) {
  int n = tail->list.len;
  Ast *value = tail->list.data[n - 1];
  Ast *attrs = attr_targets(cx, first, tail, oploc, loc);
  if (attrs) return attrs;
  if (first->kind == AST_INDEX && n == 1) return ast_store(cx, first, -1, value, oploc, loc);
  Ast *a = ast_new(cx, AST_ASSIGN, loc);
  a->rhs = value;
  a->oploc = oploc;
  bool ok = add_targets(cx, &a->list, first);
  for (int i = 0; ok && i + 1 < n; i++) {
    Ast *g = ast_new(cx, AST_TUPLE, tail->list.data[i]->loc);
    ok = add_targets(cx, &g->list, tail->list.data[i]);
    vec_push(&cx->arena, &a->body, g);
  }
  if (!ok) return ast_new(cx, AST_PASS, loc);
  return finish(cx, a);
}

// x op= v of a name or an index (a store); anything else is Python's error.
Ast *ast_aug(Ctx *cx, Ast *target, BinOp op, Ast *rhs, Loc oploc, Loc loc) {
  if (target->kind == AST_NAME) return ast_augassign(cx, target, op, rhs, oploc, loc);
  if (target->kind == AST_INDEX) return ast_store(cx, target, (int)op, rhs, oploc, loc);
  if (target->kind == AST_ATTR)
    diag_error(cx, target->oploc, "cannot assign to an attribute: tdsl has no objects (bind a name, or write x[...] = v)");
  else
    diag_error(cx, target->loc, "'%s' is an illegal expression for augmented assignment", not_target(target));
  return ast_new(cx, AST_PASS, loc);
}

Ast *ast_augassign(Ctx *cx, Ast *target, BinOp op, Ast *rhs, Loc oploc, Loc loc) {
  Ast *a = ast_new(cx, AST_AUGASSIGN, loc);
  a->lhs = target;
  a->op = op;
  a->rhs = rhs;
  a->oploc = oploc;
  return finish(cx, a);
}

Ast *ast_store(Ctx *cx, Ast *index, int op, Ast *rhs, Loc oploc, Loc loc) {
  Ast *a = ast_new(cx, AST_STORE, loc);
  a->lhs = index;
  a->op = op;
  a->rhs = rhs;
  a->oploc = oploc;
  return finish(cx, a);
}

Ast *ast_return(Ctx *cx, Ast *values, Loc loc) {
  Ast *a = ast_new(cx, AST_RETURN, loc);
  take(&a->list, values);
  return finish(cx, a);
}

Ast *ast_logic(Ctx *cx, LogicOp op, Ast *l, Ast *r, Loc oploc) {
  Ast *a = ast_new(cx, AST_LOGIC, r ? loc_join(l->loc, r->loc) : loc_join(oploc, l->loc));
  a->op = op;
  a->oploc = oploc;
  a->lhs = l;
  a->rhs = r;
  return finish(cx, a);
}

Ast *ast_expr_stmt(Ctx *cx, Ast *e, Loc loc) {
  Ast *a = ast_new(cx, AST_EXPR, loc);
  a->lhs = e;
  return finish(cx, a);
}

// del a, b[i]: the statement of a call of "del" (a keyword: no user function has the
// name) with the targets as its arguments; sema_stmt.c gives it Python's meaning.
Ast *ast_del(Ctx *cx, Ast *targets, Loc kwloc, Loc loc) {
  return ast_expr_stmt(cx, ast_call(cx, NULL, "del", targets, kwloc, loc), loc);
}

// "(a, (b, c))": the name a tuple target's value is bound to (no user name has
// parentheses).
static const char *target_text(Ctx *cx, const Ast *t) {
  if (t->kind == AST_NAME) return t->name;
  const char *s = "(";
  for (int i = 0; i < t->list.len; i++)
    s = arena_printf(&cx->arena, "%s%s%s", s, i ? ", " : "", target_text(cx, t->list.data[i]));
  return arena_printf(&cx->arena, "%s)", s);
}

// (x) is x; (x, y) stays a tuple.
static Ast *target_of(Ast *t) {
  while (t->kind == AST_TUPLE && t->list.len == 1) t = t->list.data[0];
  for (int i = 0; t->kind == AST_TUPLE && i < t->list.len; i++) t->list.data[i] = target_of(t->list.data[i]);
  return t;
}

Ast *ast_for(Ctx *cx, Ast *targets, Ast *iter, Ast *body, Loc loc) {
  Ast *a = ast_new(cx, AST_FOR, loc);
  Ast *t = target_of(targets->list.len == 1 ? targets->list.data[0] : ast_tuple_expr(cx, targets, targets->loc));
  a->name = target_text(cx, t);
  a->oploc = t->loc;
  if (t->kind != AST_NAME) a->lhs = t;
  a->rhs = iter;
  take(&a->body, body);
  return finish(cx, a);
}

Ast *ast_jump(Ctx *cx, AstKind kind, Loc loc) { return ast_new(cx, kind, loc); }

Ast *ast_assert(Ctx *cx, Ast *cond, Ast *msg, Loc loc) {
  Ast *a = ast_new(cx, AST_ASSERT, loc);
  a->lhs = cond;
  a->rhs = msg;
  return finish(cx, a);
}

Ast *ast_if(Ctx *cx, Ast *cond, Ast *then, Ast *els, Loc loc) {
  Ast *a = ast_new(cx, AST_IF, loc);
  a->lhs = cond;
  take(&a->body, then);
  if (els && els->kind == AST_IF)
    vec_push(&cx->arena, &a->list, els);
  else
    take(&a->list, els);
  return finish(cx, a);
}

Ast *ast_while(Ctx *cx, Ast *cond, Ast *body, Loc loc) {
  Ast *a = ast_new(cx, AST_WHILE, loc);
  a->lhs = cond;
  take(&a->body, body);
  return finish(cx, a);
}

Ast *ast_unknown_type(Ctx *cx, const char *word, Ast *dims, Loc wordloc, Loc loc) {
  Ast *a = ast_type(cx, DT_COUNT, dims, loc);
  a->name = word;
  a->oploc = wordloc;
  return a;
}

Ast *ast_scalar_type(Ctx *cx, const char *name, Loc loc) {
  Ast *a = ast_new(cx, AST_SCALAR_TYPE, loc);
  a->name = name;
  return a;
}

Ast *ast_const(Ctx *cx, const char *name, Ast *value, Loc loc) {
  Ast *a = ast_new(cx, AST_CONST, loc);
  a->name = name;
  a->rhs = value;
  return finish(cx, a);
}

Ast *ast_param(Ctx *cx, bool mut, const char *name, Ast *type, Ast *dflt, Loc loc) {
  Ast *a = ast_new(cx, AST_PARAM, loc);
  a->mut = mut;
  a->name = name;
  a->type = type ? type : ast_scalar_type(cx, NULL, dflt->loc);  // k=3: the default's kind
  a->rhs = dflt;
  return finish(cx, a);
}

Ast *ast_optional(Ctx *cx, Ast *type, Loc loc) {
  (void)cx;
  type->bval = true;
  type->oploc = type->kind == AST_TYPE && type->dtype == DT_COUNT ? type->oploc : loc;
  return type;
}

bool ast_dotted_name(const Ast *e, char *buf, size_t n) {
  if (e->kind == AST_NAME || (e->kind == AST_CALL && !e->lhs))
    return (size_t)snprintf(buf, n, "%s", e->name) < n;
  if ((e->kind != AST_ATTR && e->kind != AST_CALL) || !e->lhs || !ast_dotted_name(e->lhs, buf, n))
    return false;
  size_t len = strlen(buf);
  return (size_t)snprintf(buf + len, n - len, ".%s", e->name) < n - len;
}

Ast *ast_dotted(Ctx *cx, Ast *path, const char *name, Loc loc) {
  return ast_name(cx, arena_printf(&cx->arena, "%s.%s", path->name, name), loc);
}

Ast *ast_alias(Ctx *cx, Ast *path, Ast *as, Loc loc) {
  Ast *a = ast_new(cx, AST_ALIAS, loc);
  a->name = path->name;
  a->oploc = path->loc;
  a->lhs = as;
  return a;
}

// from: the module of `from M import ...` (NULL: `import ...`); items NULL: `import *`.
Ast *ast_import(Ctx *cx, Ast *from, Ast *items, Loc loc) {
  Ast *a = ast_new(cx, AST_IMPORT, loc);
  a->name = from ? from->name : NULL;
  a->oploc = from ? from->loc : loc;
  take(&a->list, items);
  return a;
}

Ast *ast_type(Ctx *cx, DType t, Ast *dims, Loc loc) {
  Ast *a = ast_new(cx, AST_TYPE, loc);
  a->dtype = t;
  take(&a->list, dims);
  return finish(cx, a);
}

// rets: one AST_TYPE, an AST_LIST holder of AST_TYPE and AST_NONE (the tuple form), or
// NULL or one AST_NONE (no result: the function returns None).
// lambda params: body, an AST_FN named "<lambda>" whose body is `return body`.
Ast *ast_lambda(Ctx *cx, Ast *params, Ast *body, Loc loc) {
  Ast *ret = ast_return(cx, ast_list_of(cx, body, body->loc), body->loc);
  return ast_fn(cx, "<lambda>", params, NULL, false, ast_list_of(cx, ret, loc), loc);
}

Ast *ast_lambda_param(Ctx *cx, const char *name, Ast *dflt, Loc loc) {
  Ast *a = ast_new(cx, AST_PARAM, loc);
  a->name = name;
  a->rhs = dflt;
  return finish(cx, a);
}

Ast *ast_fn(Ctx *cx, const char *name, Ast *params, Ast *rets, bool ret_tuple, Ast *body, Loc loc) {
  Ast *a = ast_new(cx, AST_FN, loc);
  a->name = name;
  take(&a->list, params);
  if (rets && rets->kind == AST_LIST)
    take(&a->rets, rets);
  else if (rets && rets->kind != AST_NONE)
    vec_push(&cx->arena, &a->rets, rets);
  a->ret_tuple = ret_tuple;
  if (body) a->body = body->list;
  return finish(cx, a);
}

Ast *ast_program(Ctx *cx, Loc loc) {
  return ast_new(cx, AST_PROGRAM, loc);
}

// ---- deep copy ----

static void clone_list(Ctx *cx, AstList *dst, const AstList *src) {
  *dst = (AstList){0};
  for (int i = 0; i < src->len; i++) vec_push(&cx->arena, dst, ast_clone(cx, src->data[i]));
}

static Ast *clone_one(Ctx *cx, const Ast *a) {
  Ast *c = arena_alloc(&cx->arena, sizeof(Ast));
  c->kind = a->kind;
  c->loc = a->loc;
  c->oploc = a->oploc;
  c->op = a->op;
  c->depth = a->depth;
  c->ival = a->ival;
  c->fval = a->fval;
  c->bval = a->bval;
  c->deco = a->deco;
  c->mut = a->mut;
  c->dtype = a->dtype;
  c->name = a->name;
  c->ret_tuple = a->ret_tuple;
  c->rhs = ast_clone(cx, a->rhs);
  c->step = ast_clone(cx, a->step);
  c->type = ast_clone(cx, a->type);
  clone_list(cx, &c->list, &a->list);
  clone_list(cx, &c->rets, &a->rets);
  clone_list(cx, &c->body, &a->body);
  return c;  // sema fields stay zero (the arena zeroes)
}

// The chain of left operands (a + b + c ...) is copied in a loop, so its length costs no
// depth of C stack.
Ast *ast_clone(Ctx *cx, const Ast *a) {
  if (!a) return NULL;
  Ast *top = clone_one(cx, a), *c = top;
  for (; chain_link(a) && a->lhs; a = a->lhs, c = c->lhs) c->lhs = a->lhs ? clone_one(cx, a->lhs) : NULL;
  c->lhs = ast_clone(cx, a->lhs);
  return top;
}

// ---- --emit=ast ----

// Python's repr: the fewest digits that read back exactly, positional notation for
// exponents -4..15 (always with a '.'), else d.ddde±XX.
const char *float_repr(double v, char *out, size_t n) {
  if (v != v || v - v != 0) {  // nan, inf
    snprintf(out, n, "%s", v != v ? "nan" : v < 0 ? "-inf" : "inf");
    return out;
  }
  char buf[64];
  int prec = 1;
  for (; prec < 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (strtod(buf, NULL) == v) break;
  }
  snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
  int exp = atoi(strchr(buf, 'e') + 1);
  if (exp < -4 || exp >= 16) {
    snprintf(out, n, "%s", buf);
    return out;
  }
  int decimals = prec - 1 - exp;
  snprintf(out, n, decimals > 0 ? "%.*f" : "%.*f.0", decimals > 0 ? decimals : 0, v);
  return out;
}

static void print_float(FILE *out, double v) {
  char buf[64];
  fputs(float_repr(v, buf, sizeof buf), out);
}

static void print_loc(FILE *out, Loc loc) {
  if (!loc.file) return;
  int l1, c1, l2, c2;
  srcfile_linecol(loc.file, loc.begin, &l1, &c1);
  srcfile_linecol(loc.file, loc.end, &l2, &c2);
  fprintf(out, " @%d:%d-%d:%d", l1, c1, l2, c2);
}

static void dump(const Ast *a, FILE *out, int indent);

static void child(const Ast *a, FILE *out, int indent) {
  fprintf(out, "\n%*s", indent, "");
  if (a)
    dump(a, out, indent);
  else
    fputc('_', out);
}

static void children(const AstList *l, FILE *out, int indent) {
  for (int i = 0; i < l->len; i++) child(l->data[i], out, indent);
}

// A header-only pseudo node such as (params ...), holding a list.
static void group(const char *head, const AstList *l, FILE *out, int indent) {
  fprintf(out, "\n%*s(%s", indent, "", head);
  children(l, out, indent + 2);
  fputc(')', out);
}

static void header(const Ast *a, FILE *out) {
  fprintf(out, "(%s", a->kind == AST_CALL && a->lhs ? "method" : ast_kind_name(a->kind));
  switch (a->kind) {
  case AST_INT: fprintf(out, " %" PRId64, a->ival); break;
  case AST_FLOAT: fputc(' ', out); print_float(out, a->fval); if (a->op == 'j') fputc('j', out); break;
  case AST_BOOL: fputs(a->bval ? " true" : " false", out); break;
  case AST_STR: fprintf(out, " '%s'", a->name); break;
  case AST_DTYPE: case AST_TYPE: fprintf(out, " %s", a->dtype == DT_COUNT ? a->name : dtype_name(a->dtype)); break;
  case AST_UNARY: fprintf(out, " %s", (unsigned)a->op < UN_COUNT ? unop_names[a->op] : "?"); break;
  case AST_LOGIC: fprintf(out, " %s", (unsigned)a->op < LOGIC_COUNT ? logic_names[a->op] : "?"); break;
  case AST_BINARY: case AST_AUGASSIGN: fprintf(out, " %s", binop_name(a->op)); break;
  case AST_STORE: if (a->op >= 0) fprintf(out, " %s", binop_name(a->op)); break;
  case AST_PARAM: if (a->mut) fputs(" mut", out); fprintf(out, " %s", a->name); break;
  case AST_NAME: case AST_CALL: case AST_ATTR: case AST_KWARG: case AST_CONST: case AST_FN: case AST_FOR:
  case AST_SCALAR_TYPE: case AST_ALIAS:
    fprintf(out, " %s", a->name ? a->name : "?");
    break;
  case AST_IMPORT: if (a->name) fprintf(out, " from %s", a->name); break;
  case AST_COMP: fputs(a->op == TY_LIST ? " list" : " generator", out); break;
  case AST_FIELD:
    if (a->op) fprintf(out, " !%c", a->op);
    if (a->name) fprintf(out, " :'%s'", a->name);
    break;
  default: break;
  }
  if ((a->kind == AST_TYPE || a->kind == AST_SCALAR_TYPE) && a->bval) fputs(" optional", out);
  print_loc(out, a->loc);
}

// A chain of left operands (a + b + c ...) in a loop: the headers down the chain, its
// innermost operand, then each right operand and closing parenthesis back up.
static void dump_chain(const Ast *a, FILE *out, int indent) {
  int n = 0;
  for (const Ast *c = a; chain_link(c) && c->lhs; c = c->lhs) n++;
  const Ast **cs = malloc(sizeof *cs * (size_t)n);
  if (!cs) td_internal_error(__FILE__, __LINE__, "out of memory");
  n = 0;
  for (const Ast *c = a; chain_link(c) && c->lhs; c = c->lhs) cs[n++] = c;
  for (int i = 0; i < n; i++) {
    if (i) fprintf(out, "\n%*s", indent + 2 * i, "");
    header(cs[i], out);
  }
  child(cs[n - 1]->lhs, out, indent + 2 * n);
  for (int i = n - 1; i >= 0; i--) {
    if (cs[i]->rhs) child(cs[i]->rhs, out, indent + 2 * i + 2);
    fputc(')', out);
  }
  free(cs);
}

static void dump(const Ast *a, FILE *out, int indent) {
  if (chain_link(a) && a->lhs && chain_link(a->lhs)) {
    dump_chain(a, out, indent);
    return;
  }
  int in = indent + 2;
  header(a, out);
  switch (a->kind) {
  case AST_UNARY: case AST_ATTR: case AST_AUGASSIGN: case AST_STORE:
    child(a->lhs, out, in);
    if (a->kind != AST_UNARY && a->kind != AST_ATTR) child(a->rhs, out, in);
    break;
  case AST_BINARY:
    child(a->lhs, out, in);
    child(a->rhs, out, in);
    break;
  case AST_LOGIC: case AST_EXPR: case AST_STARRED: case AST_ASSERT:
    child(a->lhs, out, in);
    if (a->rhs) child(a->rhs, out, in);
    break;
  case AST_COND:
    child(a->step, out, in);
    child(a->lhs, out, in);
    child(a->rhs, out, in);
    break;
  case AST_COMP: case AST_APPLY:
    child(a->lhs, out, in);
    children(&a->list, out, in);
    break;
  case AST_FIELD:
    if (a->rhs) child(a->rhs, out, in);
    child(a->lhs, out, in);
    break;
  case AST_ALIAS:
    if (a->lhs) child(a->lhs, out, in);
    break;
  case AST_FOR:
    if (a->lhs) child(a->lhs, out, in);
    child(a->rhs, out, in);
    if (a->body.len) group("body", &a->body, out, in);
    break;
  case AST_IF: case AST_WHILE:
    child(a->lhs, out, in);
    if (a->body.len || a->kind == AST_WHILE || a->list.len) group(a->kind == AST_IF ? "then" : "body", &a->body, out, in);
    if (a->kind == AST_IF && a->list.len) group("else", &a->list, out, in);
    break;
  case AST_CALL: case AST_INDEX:
    if (a->lhs) child(a->lhs, out, in);
    children(&a->list, out, in);
    break;
  case AST_SLICE:
    child(a->lhs, out, in);
    child(a->rhs, out, in);
    child(a->step, out, in);
    break;
  case AST_KWARG: case AST_CONST:
    child(a->rhs, out, in);
    break;
  case AST_ASSIGN:
    children(&a->list, out, in);
    for (int i = 0; i < a->body.len; i++) group("targets", &a->body.data[i]->list, out, in);
    child(a->rhs, out, in);
    break;
  case AST_PARAM:
    child(a->type, out, in);
    if (a->rhs) child(a->rhs, out, in);
    break;
  case AST_FN:
    group("params", &a->list, out, in);
    group(a->ret_tuple ? "returns tuple" : "returns", &a->rets, out, in);
    group("body", &a->body, out, in);
    break;
  case AST_LIST: case AST_TUPLE: case AST_RETURN: case AST_TYPE: case AST_PROGRAM: case AST_FSTRING: case AST_IMPORT:
    children(&a->list, out, in);
    break;
  default: break;
  }
  fputc(')', out);
}

void ast_dump(const Ast *a, FILE *out) {
  if (!a) return;
  dump(a, out, 0);
  fputc('\n', out);
}
