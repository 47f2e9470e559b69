/* grammar/parser.y: the grammar of LANGUAGE.md §3 as a pure, reentrant bison parser.
   Every rule action is a single ast_* constructor call (frontend/ast.c); semantics
   live elsewhere. Invariants kept here:
   - each node's loc covers its whole construct (YYLLOC_DEFAULT skips empty parts),
     oploc the operator token or the method name;
   - syntax errors are reported once, at the offending token, in lowercase with
     readable token names (yyreport_syntax_error below); recovery is at statement
     level inside a block and at the next 'fn'/'const' at top level, and a token the
     lexer already reported (YYUNDEF) or an abandoned parse (nesting limit) prints
     nothing more;
   - the parse stack is bounded by YYMAXDEPTH: a program that needs more is nested
     too deeply, and bison's "memory exhausted" becomes that located error. */

%define api.pure full
%define api.prefix {tdslc_yy}
%define api.location.type {Loc}
%define parse.error custom
%define parse.lac full
%locations
%lex-param {yyscan_t scanner}
%parse-param {yyscan_t scanner} {Parse *p}

%code requires {
#include "frontend/frontend.h"

typedef void *yyscan_t;

// The state shared by the scanner (as yyextra) and the parser.
struct Parse {
  Ctx *cx;
  const SrcFile *file;
  uint32_t pos;       // byte offset of the next token
  int nest;           // open '(', '[' and dict displays' '{': newlines inside are not tokens
  uint64_t dicts;     // bit k: the bracket open at depth k + 1 is a dict display's '{' (k < 64)
  int last;           // the last token returned (0 before the first)
  bool fatal;         // nesting limit hit: the scanner returns end of input, nothing more is reported
  bool done;          // end of input seen (after the final NEWLINE)
  uint32_t bad_end;   // end of the last bad byte or character reported (a run is one error)
  Ast *root;          // the AST_PROGRAM, kept even when the parse is abandoned (an expression
                      // when `start` is START_EXPR: an f-string's replacement field)
  int start;          // the first token to return: START_EXPR to parse one expression, else 0
};
}

%code provides {
#define YYSTYPE TDSLC_YYSTYPE  // flex's bison-bridge expects these two names
#define YYLTYPE TDSLC_YYLTYPE
// grammar/lexer.l, the scanner: every word that is not a keyword is an IDENT
int tdslc_yyscan(YYSTYPE *yylval, YYLTYPE *yylloc, yyscan_t scanner);
// what the parser reads (frontend/parse.c): the scanner's tokens, a dtype name as DTYPE
int tdslc_yylex(YYSTYPE *yylval, YYLTYPE *yylloc, yyscan_t scanner);
// {a, b}: the call set([a, b]), Python's set whatever the name set is bound to (parse.c)
Ast *parse_set_display(Ctx *cx, Ast *items, Loc loc);
// targets = value (ast_assign); x.attr = v: a statement that is the error where it runs (parse.c)
Ast *parse_assign(Ctx *cx, Ast *first, Ast *tail, Loc oploc, Loc loc);
Ast *parse_with_as(Ctx *cx, Ast *manager, Ast *target, Loc asloc, Loc loc);
Ast *parse_with(Ctx *cx, Ast *items, Ast *block, Loc withloc, Loc itemsloc, Loc loc);
// target: annotation [= value] (value NULL: none), Python's annotated assignment; a tuple or
// list target is Python's SyntaxError (parse.c)
Ast *parse_annotated(Ctx *cx, Ast *target, Ast *annotation, Ast *value, Loc oploc, Loc loc);
// The same at module level, appended to program: a tuple or list target is the SyntaxError, a
// parenthesised name a constant (value NULL: nothing bound); program unchanged after an error.
Ast *parse_top_annotated(Ctx *cx, Ast *program, Ast *target, Ast *value, Loc tloc, Loc loc);
// *args: a parameter typed tuple (type NULL) holding the positional arguments from its place on (parse.c)
Ast *parse_star_param(Ctx *cx, const char *name, Ast *type, Loc loc);
// **kwargs: a parameter typed dict holding the keyword arguments no other parameter takes (parse.c)
Ast *parse_kwargs_param(Ctx *cx, const char *name, Loc loc);
// @decorators over a fn: @staticmethod marks it (bval), inert ones are dropped (below)
Ast *parse_decorated(Ctx *cx, Ast *decorators, Ast *fn);
// @dataclass over a class: its __init__ made from its annotated fields (below)
Ast *parse_dataclass(Ctx *cx, Ast *decorators, Ast *cls);
// class Name(bases) { body }: the const Name holding the class (below)
Ast *parse_class(Ctx *cx, const char *name, Ast *bases, Ast *body, Loc loc);
// x op= v; obj.attr op= v as Python runs it (below)
Ast *parse_aug(Ctx *cx, Ast *target, int op, Ast *rhs, Loc oploc, Loc loc);
// nonlocal a, b / global c: an AST_PASS named "nonlocal" or "global" listing the names (below)
Ast *parse_scope_decl(Ctx *cx, const char *kind, Ast *names, Loc loc);
}

%code {
#include <string.h>

// A parse never needs more stack than this for an expression within TD_MAX_NESTING
// (at most about 4 states per level of nesting); beyond it the program is too deep.
#define YYMAXDEPTH (10 * TD_MAX_NESTING + 200)

// The span of the non-empty right-hand-side symbols; an empty rule sits at the end
// of what precedes it.
static Loc rhs_span(const Loc *rhs, int n) {
  int first = 1, last = n;
  while (first < n && rhs[first].begin == rhs[first].end) first++;
  while (last > first && rhs[last].begin == rhs[last].end) last--;
  Loc l = {rhs[first].file, rhs[first].begin, rhs[last].end};
  return l;
}
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                  \
  do {                                                               \
    if (N) {                                                         \
      (Cur) = rhs_span((Rhs), (N));                                  \
    } else {                                                         \
      (Cur).file = (Rhs)[0].file;                                    \
      (Cur).begin = (Cur).end = (Rhs)[0].end;                        \
    }                                                                \
  } while (0)

static void tdslc_yyerror(const Loc *loc, yyscan_t scanner, Parse *p, const char *msg);
}

%union {
  int64_t ival;
  double fval;
  const char *str;
  DType dtype;
  int op;
  bool flag;
  Ast *ast;
}

%token <str> IDENT "identifier"
%token <ival> INT "integer"
%token <fval> FLOAT "float"
%token <fval> IMAG "imaginary"
%token <str> STRING "string"
%token <dtype> DTYPE "dtype"   /* f32, i64 ...: an IDENT of the scanner, resolved by tdslc_yylex */
%token FN "fn" FN_TOP "fn " CONST "const" MUT "mut" RETURN "return" TRUE "true" FALSE "false" NONE "None"
%token FOR "for" IN "in" IF "if" ELIF "elif" ELSE "else" WHILE "while" AND "and" OR "or" NOT "not" IS "is"
%token BREAK "break" CONTINUE "continue" ASSERT "assert" PASS "pass" RAISE "raise" DEL "del" LAMBDA "lambda"
%token IMPORT "import" FROM "from" AS "as" CLASS "class" NONLOCAL "nonlocal" GLOBAL "global" WITH "with"
%token <ast> FSTRING "f-string"  /* f"...": its pieces, parsed by frontend/parse.c */
%token START_EXPR  /* first token of an expression parse (parse.c), never written */
%token NEWLINE "newline"
%token DICT_OPEN "{"  /* a '{' where an expression starts: a dict display (lexer.l) */
%token ARROW "->" POW "**" FLOORDIV "//" EQ "==" NE "!=" LE "<=" GE ">=" ELLIPSIS "..." LSHIFT "<<" RSHIFT ">>"
%token <op> ADDEQ "+=" SUBEQ "-=" MULEQ "*=" DIVEQ "/=" FLOORDIVEQ "//=" MODEQ "%=" POWEQ "**="
%token <op> ANDEQ "&=" OREQ "|=" XOREQ "^=" LSHIFTEQ "<<=" RSHIFTEQ ">>=" MATMULEQ "@="

%type <ast> program top_target const_decl fn_decl class_decl local_fn decorators params param_list param tensor_type
%type <ast> dims type_list
%type <ast> block body stmt compound if_stmt else_part exprs expr exprs_value assign_tail
%type <ast> for_targets for_target ret_types ret_type param_type one_type opt_default
%type <ast> import_decl dotted import_items import_item from_items from_item names
%type <ast> comp_clauses comp_for comp_if strings with_items with_item
%type <ast> or_test and_test not_test comparison bitor bitxor bitand shift additive multiplic
%type <ast> unary power postfix
%type <ast> primary args arg_list arg items item opt_expr star_expr dict_items dict_item lambda_params lambda_param
%type <op> augop
%type <flag> opt_mut

%initial-action {
  @$.file = p->file;
  @$.begin = @$.end = 0;
}

%start top

%%

/* a file, or one expression (an f-string's replacement field, parse.c). START_EXPR comes
   after the empty program is reduced, so that the first state has nothing to shift and
   a file whose first token is wrong still recovers at the next 'fn' (with parse.lac, a
   first state that could shift START_EXPR would report the error there and abort). */
top
  : program
  ;

program
  : %empty                      { $$ = p->root = ast_program(p->cx, @$); }
  | program START_EXPR exprs_value NEWLINE { $$ = $1; p->root = $3; }
  | program NEWLINE
  | program const_decl NEWLINE  { $$ = ast_append(p->cx, $1, $2); }
  | program const_decl ';'      { $$ = ast_append(p->cx, $1, $2); }
  | program import_decl NEWLINE { $$ = ast_append(p->cx, $1, $2); }
  | program import_decl ';'     { $$ = ast_append(p->cx, $1, $2); }
  | program IDENT '=' expr NEWLINE { $$ = ast_append(p->cx, $1, ast_const(p->cx, $2, $4, @$)); }
  | program IDENT ':' expr '=' expr NEWLINE { $$ = ast_append(p->cx, $1, ast_const(p->cx, $2, $6, @$)); }
  | program top_target ':' expr '=' exprs_value NEWLINE { $$ = parse_top_annotated(p->cx, $1, $2, $6, @2, @$); }
  | program top_target ':' expr NEWLINE { $$ = parse_top_annotated(p->cx, $1, $2, NULL, @2, @$); }
  | program fn_decl             { $$ = ast_append(p->cx, $1, $2); }
  | program decorators fn_decl  { $$ = ast_append(p->cx, $1, parse_decorated(p->cx, $2, $3)); }
  | program class_decl          { $$ = ast_append(p->cx, $1, $2); }
  | program decorators class_decl { $$ = ast_append(p->cx, $1, parse_dataclass(p->cx, $2, $3)); }
  | program error const_decl NEWLINE { $$ = ast_append(p->cx, $1, $3); }
  | program error const_decl ';'     { $$ = ast_append(p->cx, $1, $3); }
  | program error import_decl NEWLINE { $$ = ast_append(p->cx, $1, $3); }
  | program error fn_decl       { $$ = ast_append(p->cx, $1, $3); }
  | program error class_decl    { $$ = ast_append(p->cx, $1, $3); }
  ;

/* class Name(nn.Module) { fn __init__(self, ...) { ... } fn forward(self, x) { ... } }: a
   const Name whose value is the class, an AST_FN of op DEF_CLASS (sema_internal.h) whose
   list holds the bases and body the class's statements (its methods: sema_class.c) */
/* a module-level annotated assignment's parenthesised or bracketed target: (a, b): int = 1, 2 is
   Python's SyntaxError, (e): int = 3 binds e (parse_top_annotated) */
top_target
  : '(' exprs ')'               { $$ = $2->list.len == 1 ? ast_paren(p->cx, $2->list.data[0], @$)
                                                         : ast_tuple_expr(p->cx, $2, @$); }
  | '(' exprs ',' ')'           { $$ = ast_tuple_expr(p->cx, $2, @$); }
  | '[' exprs opt_comma ']'     { $$ = ast_list_expr(p->cx, $2, @$); }
  ;

class_decl
  : CLASS IDENT '(' args ')' block { $$ = parse_class(p->cx, $2, $4, $6, @$); }
  | CLASS IDENT block           { $$ = parse_class(p->cx, $2, NULL, $3, @$); }
  ;

const_decl
  : CONST IDENT '=' expr        { $$ = ast_const(p->cx, $2, $4, @$); }
  ;

/* import torch.nn.functional as F, math; from torch import nn; from x import (a, b as c) */
import_decl
  : IMPORT import_items         { $$ = ast_import(p->cx, NULL, $2, @$); }
  | FROM dotted IMPORT from_items { $$ = ast_import(p->cx, $2, $4, @$); }
  | FROM dotted IMPORT '(' from_items opt_comma ')' { $$ = ast_import(p->cx, $2, $5, @$); }
  | FROM dotted IMPORT '*'      { $$ = ast_import(p->cx, $2, NULL, @$); }
  ;

dotted
  : IDENT                       { $$ = ast_name(p->cx, $1, @$); }
  | dotted '.' IDENT            { $$ = ast_dotted(p->cx, $1, $3, @$); }
  ;

import_items
  : import_item                 { $$ = ast_list_of(p->cx, $1, @$); }
  | import_items ',' import_item { $$ = ast_append(p->cx, $1, $3); }
  ;

import_item
  : dotted                      { $$ = ast_alias(p->cx, $1, NULL, @$); }
  | dotted AS IDENT             { $$ = ast_alias(p->cx, $1, ast_name(p->cx, $3, @3), @$); }
  ;

from_items
  : from_item                   { $$ = ast_list_of(p->cx, $1, @$); }
  | from_items ',' from_item    { $$ = ast_append(p->cx, $1, $3); }
  ;

from_item
  : IDENT                       { $$ = ast_alias(p->cx, ast_name(p->cx, $1, @1), NULL, @$); }
  | IDENT AS IDENT              { $$ = ast_alias(p->cx, ast_name(p->cx, $1, @1), ast_name(p->cx, $3, @3), @$); }
  ;

opt_comma
  : %empty
  | ','
  ;

/* -> T, -> (T, U), -> (T, None), -> None, -> (); no arrow: no result (None). A file's
   function is FN_TOP when its 'fn' starts the line (parse.c); a def inside a function
   (local_fn) is indented, so that a missing '}' is reported at the next function */
fn_decl
  : fn_word IDENT '(' params ')' ARROW ret_types block
                                { $$ = ast_fn(p->cx, $2, $4, $7, $7->kind == AST_LIST, $8, @$); }
  | fn_word IDENT '(' params ')' block
                                { $$ = ast_fn(p->cx, $2, $4, NULL, false, $6, @$); }
  ;

fn_word
  : FN
  | FN_TOP
  ;

local_fn
  : FN IDENT '(' params ')' ARROW ret_types block
                                { $$ = ast_fn(p->cx, $2, $4, $7, $7->kind == AST_LIST, $8, @$); }
  | FN IDENT '(' params ')' block
                                { $$ = ast_fn(p->cx, $2, $4, NULL, false, $6, @$); }
  ;

ret_types
  : ret_type
  | '(' ')'                     { $$ = ast_list(p->cx, @$); }
  | '(' type_list opt_comma ')' { $$ = $2; }
  ;

/* a helper's result may be written as Python annotates it, which tdsl does not check, as Python
   does not: torch.Tensor, Tuple[...], typing.Optional[torch.Tensor], torch.nn.Module, 'Block'
   (any_result, sema.c) */
ret_type
  : tensor_type
  | NONE                        { $$ = ast_new(p->cx, AST_NONE, @$); }
  | IDENT                       { $$ = ast_scalar_type(p->cx, $1, @$); }
  | IDENT '.' IDENT             { $$ = ast_scalar_type(p->cx, $3, @$); }
  | IDENT '.' IDENT '.' IDENT   { $$ = ast_scalar_type(p->cx, $5, @$); }
  | IDENT '.' IDENT '[' dims opt_comma ']' { $$ = ast_unknown_type(p->cx, $3, $5, @3, @$); }
  | STRING                      { $$ = ast_scalar_type(p->cx, $1, @$); }
  ;

params
  : %empty                      { $$ = ast_list(p->cx, @$); }
  | param_list
  | param_list ','
  ;

param_list
  : param                       { $$ = ast_list_of(p->cx, $1, @$); }
  | param_list ',' param        { $$ = ast_append(p->cx, $1, $3); }
  ;

/* x: f32[N], eps: float = 1e-6, mask: f32[T, T] | None = None, k=3 (a Python scalar of the
   default's kind); a scalar is int, float or bool, any other word is sema's to refuse */
param
  : opt_mut IDENT ':' param_type opt_default { $$ = ast_param(p->cx, $1, $2, $4, $5, @$); }
  | opt_mut IDENT '=' expr      { $$ = ast_param(p->cx, $1, $2, NULL, $4, @$); }
  | opt_mut IDENT               { $$ = ast_param(p->cx, $1, $2, ast_scalar_type(p->cx, "(any)", @2), NULL, @$); }
  | '*' IDENT                   { $$ = parse_star_param(p->cx, $2, NULL, @$); }
  | POW IDENT                   { $$ = parse_kwargs_param(p->cx, $2, @$); }
  | '*' IDENT ':' param_type    { $$ = parse_star_param(p->cx, $2, $4, @$); }
  ;

param_type
  : one_type
  | one_type '|' NONE           { $$ = ast_optional(p->cx, $1, @$); }
  | NONE '|' one_type           { $$ = ast_optional(p->cx, $3, @$); }
  ;

one_type
  : tensor_type
  | IDENT                       { $$ = ast_scalar_type(p->cx, $1, @1); }
  | IDENT '.' IDENT             { $$ = ast_scalar_type(p->cx, $3, @$); }  /* x: torch.Tensor */
  | IDENT '.' IDENT '[' dims opt_comma ']' { $$ = ast_unknown_type(p->cx, $3, $5, @3, @$); }  /* typing.Optional[...] */
  | IDENT '.' IDENT '.' IDENT   { $$ = ast_scalar_type(p->cx, $5, @$); }  /* m: torch.nn.Module */
  | STRING                      { $$ = ast_scalar_type(p->cx, $1, @$); }  /* block: "Block", as Python quotes it */
  | DTYPE                       { $$ = ast_scalar_type(p->cx, dtype_name($1), @1); }
  ;

opt_default
  : %empty                      { $$ = NULL; }
  | '=' expr                    { $$ = $2; }
  ;

opt_mut
  : %empty                      { $$ = false; }
  | MUT                         { $$ = true; }
  ;

/* a word that names no dtype is sema's to report (foo[3]) */
tensor_type
  : DTYPE '[' ']'               { $$ = ast_type(p->cx, $1, NULL, @$); }
  | DTYPE '[' dims opt_comma ']' { $$ = ast_type(p->cx, $1, $3, @$); }
  | IDENT '[' ']'               { $$ = ast_unknown_type(p->cx, $1, NULL, @1, @$); }
  | IDENT '[' dims opt_comma ']' { $$ = ast_unknown_type(p->cx, $1, $3, @1, @$); }
  ;

dims
  : expr                        { $$ = ast_list_of(p->cx, $1, @$); }
  | dims ',' expr               { $$ = ast_append(p->cx, $1, $3); }
  ;

type_list
  : ret_type                    { $$ = ast_list_of(p->cx, $1, @$); }
  | type_list ',' ret_type      { $$ = ast_append(p->cx, $1, $3); }
  ;

/* "{" { NEWLINE | stmt ( NEWLINE | ";" ) | compound } "}"; the last statement may end
   at "}"; a compound statement (for, if, while) ends at its own "}" */
block
  : '{' body '}'                { $$ = $2; }
  | '{' body stmt '}'           { $$ = ast_append(p->cx, $2, $3); }
  | '{' body error '}'          { $$ = $2; }
  ;

body
  : %empty                      { $$ = ast_list(p->cx, @$); }
  | body NEWLINE
  | body stmt NEWLINE           { $$ = ast_append(p->cx, $1, $2); }
  | body stmt ';'               { $$ = ast_append(p->cx, $1, $2); }
  | body compound               { $$ = ast_append(p->cx, $1, $2); }
  | body error NEWLINE
  ;

compound
  : FOR for_targets IN expr block { $$ = ast_for(p->cx, $2, $4, $5, @$); }
  | if_stmt
  | WHILE expr block            { $$ = ast_while(p->cx, $2, $3, @$); }
  | WITH with_items block       { $$ = parse_with(p->cx, $2, $3, @1, @2, @$); }
  | local_fn                    /* a def inside a function: a local function value (sema_lambda.c) */
  | decorators local_fn         { $$ = parse_decorated(p->cx, $1, $2); }
  ;

/* with torch.no_grad(), nullcontext() { ... }: the body runs as written where sema takes the
   context managers (an `if` of the hidden call "(with)" of them, sema_python.c's py_with) */
with_items
  : with_item                   { $$ = ast_list_of(p->cx, $1, @$); }
  | with_items ',' with_item    { $$ = ast_append(p->cx, $1, $3); }
  ;

/* a context manager, or one whose __enter__'s value `as` binds to a target (parse_with_as) */
with_item
  : expr
  | expr AS postfix             { $$ = parse_with_as(p->cx, $1, $3, @2, @$); }
  ;

/* @staticmethod, @torch.no_grad(), ... one a line, over a fn */
decorators
  : '@' postfix NEWLINE         { $$ = ast_list_of(p->cx, $2, @$); }
  | decorators '@' postfix NEWLINE { $$ = ast_append(p->cx, $1, $3); }
  ;

if_stmt
  : IF expr block else_part     { $$ = ast_if(p->cx, $2, $3, $4, @$); }
  ;

/* else { ... }, else if ... and elif ... (an AST_IF), or nothing */
else_part
  : %empty                      { $$ = NULL; }
  | ELSE block                  { $$ = $2; }
  | ELSE if_stmt                { $$ = $2; }
  | ELIF expr block else_part   { $$ = ast_if(p->cx, $2, $3, $4, @$); }
  ;

/* a = v; a, (b, *c) = v; (b, l, d) = x.shape; h = w = v; x[i] = v (each target group is
   parsed as an expression, then made a target by ast_assign, as Python's grammar does) */
stmt
  : exprs_value '=' assign_tail { $$ = parse_assign(p->cx, $1, $3, @2, @$); }
  | postfix augop expr          { $$ = parse_aug(p->cx, $1, $2, $3, @2, @$); }
  /* Python's annotated assignment, x: int = 5 (the annotation is not evaluated, as in a
     function body); x: int alone declares and runs nothing */
  | postfix ':' expr '=' exprs_value { $$ = parse_annotated(p->cx, $1, $3, $5, @4, @$); }
  | postfix ':' expr            { $$ = parse_annotated(p->cx, $1, $3, NULL, @2, @$); }
  | RETURN                      { $$ = ast_return(p->cx, NULL, @$); }
  | RETURN exprs opt_comma      { $$ = ast_return(p->cx, $2, @$); }
  | BREAK                       { $$ = ast_jump(p->cx, AST_BREAK, @$); }
  | CONTINUE                    { $$ = ast_jump(p->cx, AST_CONTINUE, @$); }
  | PASS                        { $$ = ast_jump(p->cx, AST_PASS, @$); }
  | ASSERT expr                 { $$ = ast_assert(p->cx, $2, NULL, @$); }
  | ASSERT expr ',' expr        { $$ = ast_assert(p->cx, $2, $4, @$); }
  | RAISE expr                  { $$ = ast_assert(p->cx, NULL, $2, @$); }
  | DEL exprs opt_comma         { $$ = ast_del(p->cx, $2, @1, @$); }
  | NONLOCAL names              { $$ = parse_scope_decl(p->cx, "nonlocal", $2, @$); }
  | GLOBAL names                { $$ = parse_scope_decl(p->cx, "global", $2, @$); }
  | exprs_value                 { $$ = ast_expr_stmt(p->cx, $1, @$); }
  ;

/* nonlocal a, b; global c */
names
  : IDENT                       { $$ = ast_list_of(p->cx, ast_name(p->cx, $1, @1), @$); }
  | names ',' IDENT             { $$ = ast_append(p->cx, $1, ast_name(p->cx, $3, @3)); }
  ;

/* the value groups after the first '=': the last is the value, the others more targets */
assign_tail
  : exprs_value                 { $$ = ast_list_of(p->cx, $1, @$); }
  | assign_tail '=' exprs_value { $$ = ast_append(p->cx, $1, $3); }
  ;

/* a, b (a tuple), a, (a tuple of one) or a lone expression */
exprs_value
  : exprs                       { $$ = ast_exprs_value(p->cx, $1, @$); }
  | exprs ','                   { $$ = ast_tuple_expr(p->cx, $1, @$); }
  ;

/* a loop's targets: i, (w, b) in enumerate(zip(ws, bs)) */
for_targets
  : for_target                  { $$ = ast_list_of(p->cx, $1, @$); }
  | for_targets ',' for_target  { $$ = ast_append(p->cx, $1, $3); }
  ;

for_target
  : IDENT                       { $$ = ast_name(p->cx, $1, @$); }
  | '(' for_targets ')'         { $$ = ast_tuple_expr(p->cx, $2, @$); }
  ;

augop: ADDEQ | SUBEQ | MULEQ | DIVEQ | FLOORDIVEQ | MODEQ | POWEQ | ANDEQ | OREQ | XOREQ | LSHIFTEQ | RSHIFTEQ | MATMULEQ ;

/* a starred item unpacks a sequence: (*shape[:-1], H, D), return *a, b */
exprs
  : star_expr                   { $$ = ast_list_of(p->cx, $1, @$); }
  | exprs ',' star_expr         { $$ = ast_append(p->cx, $1, $3); }
  ;

star_expr
  : expr
  | '*' bitor                   { $$ = ast_starred(p->cx, $2, @1, @$); }
  ;

/* Python's levels: or, and, not, then comparison (a < b < c is a < b and b < c, as in
   Python: ast_compare); below it the bitwise levels: | then ^ then & then << >> */
expr
  : or_test
  | or_test IF or_test ELSE expr { $$ = ast_cond(p->cx, $1, $3, $5, @2); }
  | LAMBDA ':' expr             { $$ = ast_lambda(p->cx, NULL, $3, @$); }
  | LAMBDA lambda_params ':' expr { $$ = ast_lambda(p->cx, $2, $4, @$); }
  ;

/* a lambda's parameters: names, each with an optional default */
lambda_params
  : lambda_param                { $$ = ast_list_of(p->cx, $1, @$); }
  | lambda_params ',' lambda_param { $$ = ast_append(p->cx, $1, $3); }
  ;

lambda_param
  : IDENT                       { $$ = ast_lambda_param(p->cx, $1, NULL, @$); }
  | IDENT '=' expr              { $$ = ast_lambda_param(p->cx, $1, $3, @$); }
  ;

or_test
  : and_test
  | or_test OR and_test         { $$ = ast_logic(p->cx, LOGIC_OR, $1, $3, @2); }
  ;

and_test
  : not_test
  | and_test AND not_test       { $$ = ast_logic(p->cx, LOGIC_AND, $1, $3, @2); }
  ;

not_test
  : comparison
  | NOT not_test                { $$ = ast_logic(p->cx, LOGIC_NOT, $2, NULL, @1); }
  ;

comparison
  : bitor
  | comparison EQ bitor         { $$ = ast_compare(p->cx, BIN_EQ, $1, $3, @2); }
  | comparison NE bitor         { $$ = ast_compare(p->cx, BIN_NE, $1, $3, @2); }
  | comparison '<' bitor        { $$ = ast_compare(p->cx, BIN_LT, $1, $3, @2); }
  | comparison LE bitor         { $$ = ast_compare(p->cx, BIN_LE, $1, $3, @2); }
  | comparison '>' bitor        { $$ = ast_compare(p->cx, BIN_GT, $1, $3, @2); }
  | comparison GE bitor         { $$ = ast_compare(p->cx, BIN_GE, $1, $3, @2); }
  | comparison IN bitor         { $$ = ast_compare(p->cx, BIN_COUNT + LOGIC_IN, $1, $3, @2); }
  | comparison NOT IN bitor     { $$ = ast_compare(p->cx, BIN_COUNT + LOGIC_NOT_IN, $1, $4, loc_join(@2, @3)); }
  | comparison IS bitor         { $$ = ast_compare(p->cx, BIN_COUNT + LOGIC_IS, $1, $3, @2); }
  | comparison IS NOT bitor     { $$ = ast_compare(p->cx, BIN_COUNT + LOGIC_IS_NOT, $1, $4, loc_join(@2, @3)); }
  ;

bitor
  : bitxor
  | bitor '|' bitxor            { $$ = ast_binary(p->cx, BIN_OR, $1, $3, @2); }
  ;

bitxor
  : bitand
  | bitxor '^' bitand           { $$ = ast_binary(p->cx, BIN_XOR, $1, $3, @2); }
  ;

bitand
  : shift
  | bitand '&' shift            { $$ = ast_binary(p->cx, BIN_AND, $1, $3, @2); }
  ;

shift
  : additive
  | shift LSHIFT additive       { $$ = ast_binary(p->cx, BIN_LSHIFT, $1, $3, @2); }
  | shift RSHIFT additive       { $$ = ast_binary(p->cx, BIN_RSHIFT, $1, $3, @2); }
  ;

additive
  : multiplic
  | additive '+' multiplic      { $$ = ast_binary(p->cx, BIN_ADD, $1, $3, @2); }
  | additive '-' multiplic      { $$ = ast_binary(p->cx, BIN_SUB, $1, $3, @2); }
  ;

multiplic
  : unary
  | multiplic '*' unary         { $$ = ast_binary(p->cx, BIN_MUL, $1, $3, @2); }
  | multiplic '/' unary         { $$ = ast_binary(p->cx, BIN_DIV, $1, $3, @2); }
  | multiplic FLOORDIV unary    { $$ = ast_binary(p->cx, BIN_FLOORDIV, $1, $3, @2); }
  | multiplic '%' unary         { $$ = ast_binary(p->cx, BIN_MOD, $1, $3, @2); }
  | multiplic '@' unary         { $$ = ast_binary(p->cx, BIN_MATMUL, $1, $3, @2); }
  ;

/* -x**2 is -(x**2); x ** -1 works; ** is right-associative */
unary
  : '-' unary                   { $$ = ast_unary(p->cx, UN_NEG, $2, @1); }
  | '~' unary                   { $$ = ast_unary(p->cx, UN_NOT, $2, @1); }
  | power
  ;

power
  : postfix
  | postfix POW unary           { $$ = ast_binary(p->cx, BIN_POW, $1, $3, @2); }
  ;

/* f(x), x.f(x) and any other callee (nn.ReLU()(x)): ast_call_of tells them apart */
postfix
  : primary
  | postfix '(' args ')'        { $$ = ast_call_of(p->cx, $1, $3, @$); }
  | postfix '.' IDENT           { $$ = ast_attr(p->cx, $1, $3, @3, @$); }
  | postfix '[' items opt_comma ']' { $$ = ast_index(p->cx, $1, $3, @2, @$); }
  ;

primary
  : IDENT                       { $$ = ast_name(p->cx, $1, @$); }
  | INT                         { $$ = ast_int(p->cx, $1, @$); }
  | FLOAT                       { $$ = ast_float(p->cx, $1, @$); }
  | IMAG                        { $$ = ast_imag(p->cx, $1, @$); }
  | strings
  | TRUE                        { $$ = ast_bool(p->cx, true, @$); }
  | FALSE                       { $$ = ast_bool(p->cx, false, @$); }
  | NONE                        { $$ = ast_new(p->cx, AST_NONE, @$); }
  | DTYPE                       { $$ = ast_dtype(p->cx, $1, @$); }
  | ELLIPSIS                    { $$ = ast_new(p->cx, AST_ELLIPSIS, @$); }  /* x[..., 0], Tuple[T, ...] */
  | '(' expr ')'                { $$ = ast_paren(p->cx, $2, @$); }
  | '(' ')'                     { $$ = ast_tuple_expr(p->cx, NULL, @$); }
  | '(' exprs ',' ')'           { $$ = ast_tuple_expr(p->cx, $2, @$); }
  | '(' exprs ',' star_expr ')' { $$ = ast_tuple_expr(p->cx, ast_append(p->cx, $2, $4), @$); }
  | DICT_OPEN '}'               { $$ = ast_dict(p->cx, NULL, @$); }
  | DICT_OPEN dict_items opt_comma '}' { $$ = ast_dict(p->cx, $2, @$); }
  | DICT_OPEN exprs opt_comma '}' { $$ = parse_set_display(p->cx, $2, @$); }
  | '[' ']'                     { $$ = ast_list_expr(p->cx, NULL, @$); }
  | '[' exprs opt_comma ']'     { $$ = ast_list_expr(p->cx, $2, @$); }
  | '[' expr comp_clauses ']'   { $$ = ast_comp(p->cx, false, $2, $3, @$); }
  | '(' expr comp_clauses ')'   { $$ = ast_comp(p->cx, true, $2, $3, @$); }
  ;

/* adjacent string literals are one string, as in Python: "a" f"{b}" */
strings
  : STRING                      { $$ = ast_str(p->cx, $1, @$); }
  | FSTRING
  | strings STRING              { $$ = ast_concat(p->cx, $1, ast_str(p->cx, $2, @2)); }
  | strings FSTRING             { $$ = ast_concat(p->cx, $1, $2); }
  ;

/* for t in xs (or_test: an 'if' after it filters), if cond; as many as written */
comp_clauses
  : comp_for                    { $$ = ast_list_of(p->cx, $1, @$); }
  | comp_clauses comp_for       { $$ = ast_append(p->cx, $1, $2); }
  | comp_clauses comp_if        { $$ = ast_append(p->cx, $1, $2); }
  ;

comp_for
  : FOR for_targets IN or_test  { $$ = ast_for(p->cx, $2, $4, NULL, @$); }
  ;

comp_if
  : IF or_test                  { $$ = ast_if(p->cx, $2, NULL, NULL, @$); }
  ;

args
  : %empty                      { $$ = ast_list(p->cx, @$); }
  | arg_list
  | arg_list ','
  | expr comp_clauses           { $$ = ast_list_of(p->cx, ast_comp(p->cx, true, $1, $2, @$), @$); }
  ;

arg_list
  : arg                         { $$ = ast_list_of(p->cx, $1, @$); }
  | arg_list ',' arg            { $$ = ast_append(p->cx, $1, $3); }
  ;

/* {k: v, ...}: each pair a tuple, the display the call dict([...]) (ast_dict) */
dict_items
  : dict_item                   { $$ = ast_list_of(p->cx, $1, @$); }
  | dict_items ',' dict_item    { $$ = ast_append(p->cx, $1, $3); }
  ;

dict_item
  : expr ':' expr               { $$ = ast_pair(p->cx, $1, $3, @$); }
  ;

arg
  : expr
  | '*' bitor                   { $$ = ast_starred(p->cx, $2, @1, @$); }
  | POW bitor                   { $$ = ast_double_starred(p->cx, $2, @1, @$); }
  | IDENT '=' expr              { $$ = ast_kwarg(p->cx, $1, $3, @1, @$); }
  ;

items
  : item                        { $$ = ast_list_of(p->cx, $1, @$); }
  | items ',' item              { $$ = ast_append(p->cx, $1, $3); }
  ;

/* expr | [expr] ":" [expr] [":" [expr]]; None and "..." are exprs */
item
  : expr
  | opt_expr ':' opt_expr       { $$ = ast_slice(p->cx, $1, $3, NULL, @$); }
  | opt_expr ':' opt_expr ':' opt_expr { $$ = ast_slice(p->cx, $1, $3, $5, @$); }
  ;

opt_expr
  : %empty                      { $$ = NULL; }
  | expr
  ;

%%

// The spelling a message shows for a token: 'x' for fixed spellings (bison names
// them x or 'x'), words for the others.
static const char *symbol_text(yysymbol_kind_t s, char *buf, size_t n) {
  switch (s) {
  case YYSYMBOL_YYEOF: return "end of input";
  case YYSYMBOL_IDENT: return "identifier";
  case YYSYMBOL_INT: return "integer";
  case YYSYMBOL_FLOAT: return "float";
  case YYSYMBOL_IMAG: return "imaginary";
  case YYSYMBOL_STRING: return "string";
  case YYSYMBOL_FSTRING: return "f-string";
  case YYSYMBOL_DTYPE: return "dtype";
  case YYSYMBOL_NEWLINE: return "newline";
  default: break;
  }
  const char *name = yysymbol_name(s);
  if (name[0] == '\'') return name;
  snprintf(buf, n, "'%s'", name);
  return buf;
}

// Is s one of the tokens in set, written as they are shown ("'+' '**' ...")?
static bool symbol_in(yysymbol_kind_t s, const char *set) {
  char buf[24];
  const char *t = symbol_text(s, buf, sizeof buf);
  size_t n = strlen(t);
  for (const char *q = strstr(set, t); q; q = strstr(q + 1, t))
    if ((q == set || q[-1] == ' ') && (q[n] == ' ' || q[n] == 0)) return true;
  return false;
}

static const char *const start_expr =
    "identifier integer float imaginary string f-string dtype 'true' 'false' 'None' '(' '[' '-' '~' 'not' '*' '{' 'lambda' '...'";
// what may follow a complete operand: not worth listing
static const char *const continue_expr =
  "'+' '-' '*' '/' '//' '%' '@' '**' '==' '!=' '<' '<=' '>' '>=' '&' '|' '^' '<<' '>>' '.' '[' '(' 'and' 'or' 'in' 'is' 'not' "
  "'if' 'for' '='";
static const char *const compare = "'==' '!=' '<' '<=' '>' '>=' 'in' 'is' 'not'";

// "expected ')' or ',' before 'x'": the tokens that could have come, shown as
// written; "expression" stands for all the tokens that may start one; after a
// complete operand the operators that could continue it are left out; the end of
// input is named only when nothing else could come; at the end of input or at a
// new 'fn'/'const', only the brackets left open are. More than 7: "unexpected 'x'".
static int yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner, Parse *p) {
  (void)scanner;
  p->nest = 0;  // recovery looks for the end of the line, even inside an open '('
  yysymbol_kind_t got = yypcontext_token(ctx);
  if (p->fatal || got == YYSYMBOL_YYUNDEF) return 0;  // the scanner has said why
  const Loc *loc = yypcontext_location(ctx);

  yysymbol_kind_t exp[YYNTOKENS];
  int nexp = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
  bool expr_ctx = false, after_operand = false, closer = false, top = false;
  for (int i = 0; i < nexp; i++) {
    expr_ctx |= exp[i] == YYSYMBOL_INT;
    top |= exp[i] == YYSYMBOL_CLASS;  // where a module-level item may start
    after_operand |= symbol_in(exp[i], "'//'");  // '*' may also start a starred item
    closer |= symbol_in(exp[i], "')' ']' '}'");
  }
  bool at_end = got == YYSYMBOL_YYEOF || loc->begin == loc->end;
  // at the end, or where a new declaration starts, only what is left open matters
  bool only_closers = closer && (at_end || got == YYSYMBOL_FN || got == YYSYMBOL_FN_TOP || got == YYSYMBOL_CONST);

  char what[64];
  if (at_end) {
    snprintf(what, sizeof what, "at end of input");
  } else if (got == YYSYMBOL_NEWLINE) {
    snprintf(what, sizeof what, "before newline");
  } else {
    uint32_t len = loc->end - loc->begin;
    snprintf(what, sizeof what, "before '%.*s%s'", (int)(len > 32 ? 32 : len), p->file->text + loc->begin,
             len > 32 ? "..." : "");
  }
  if (after_operand && symbol_in(got, compare)) {
    diag_error(p->cx, *loc, "comparison operators cannot be chained");
    return 0;
  }

  const char *names[YYNTOKENS];
  char bufs[YYNTOKENS][24];
  int n = 0;
  bool expr_named = false;
  for (int i = 0; i < nexp; i++) {
    if (exp[i] == YYSYMBOL_START_EXPR || exp[i] == YYSYMBOL_FN_TOP) {  // 'fn' is named once
      continue;
    } else if (!after_operand && symbol_in(exp[i], "'@'")) {  // a decorator, not worth naming
      continue;
    } else if (top && !expr_ctx && symbol_in(exp[i], "'(' '['")) {  // (a, b): int = ..., not worth naming
      continue;
    } else if (only_closers && !symbol_in(exp[i], "')' ']' '}'")) {
      continue;
    } else if (expr_ctx && symbol_in(exp[i], start_expr)) {
      if (!expr_named) names[n++] = "expression";
      expr_named = true;
    } else if (after_operand && symbol_in(exp[i], continue_expr)) {
      continue;
    } else if (exp[i] != YYSYMBOL_YYEOF || nexp == 1) {
      names[n] = symbol_text(exp[i], bufs[n], sizeof bufs[n]);
      n++;
    }
  }
  if (n == 0 || n > 7) {
    diag_error(p->cx, *loc, "unexpected %s", at_end ? "end of input" : strchr(what, ' ') + 1);
    return 0;
  }
  char list[256];
  size_t len = 0;
  for (int i = 0; i < n && len < sizeof list; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                            names[i]);
  diag_error(p->cx, *loc, "expected %s %s", list, what);
  return 0;
}

// Only bison's own failures arrive here: a stack that outgrew YYMAXDEPTH.
static void tdslc_yyerror(const Loc *loc, yyscan_t scanner, Parse *p, const char *msg) {
  (void)scanner;
  if (p->fatal) return;
  p->fatal = true;
  if (strcmp(msg, "memory exhausted") == 0)
    diag_error(p->cx, *loc, "expression nested too deeply");
  else
    diag_error(p->cx, *loc, "%s", msg);
}

// @decorators over fn, as Python applies them: @staticmethod marks a method that takes no
// self (fn->bval, read by sema_class.c), @property and @classmethod one read as an attribute
// or given its class, @x.setter one run by a store to the attribute (fn->deco); those
// that change nothing a compiled forward pass computes (autograd off, TorchScript) are
// dropped; any other is a located error.
Ast *parse_decorated(Ctx *cx, Ast *decorators, Ast *fn) {
  static const char *const inert[] = {"torch.no_grad", "torch.inference_mode", "torch.jit.script",
                                      "torch.jit.script_method", "torch.jit.ignore", "torch.jit.unused",
                                      "torch.jit.export", "torch.compile", NULL};
  for (int i = 0; i < decorators->list.len; i++) {
    const Ast *d = decorators->list.data[i];
    char name[128];
    bool known = ast_dotted_name(d, name, sizeof name), ok = false;
    if (known && !strcmp(name, "staticmethod") && d->kind == AST_NAME) {
      fn->bval = true;
      continue;
    }
    if (known && (!strcmp(name, "property") || !strcmp(name, "classmethod")) && d->kind == AST_NAME) {
      fn->deco = name[0];  // read where the class is checked (sema_class.c)
      continue;
    }
    if (d->kind == AST_ATTR && !strcmp(d->name, "setter") && d->lhs->kind == AST_NAME) {  // @x.setter
      if (strcmp(d->lhs->name, fn->name))
        diag_error(cx, d->loc, "a setter named other than its property ('%s', not '%s') is not supported: name the "
                   "setter's def as the property", d->lhs->name, fn->name);
      fn->deco = 's';
      continue;
    }
    for (int k = 0; known && inert[k]; k++) ok |= !strcmp(name, inert[k]);
    if (!ok)
      diag_error(cx, d->loc, "this decorator is not supported: tdsl takes @staticmethod, @classmethod, @property "
                 "and @x.setter on a method, and drops @torch.no_grad(), "
                 "@torch.inference_mode(), @torch.jit.script and torch.jit's others (a compiled forward pass has no "
                 "autograd)");
  }
  return fn;
}

// Whether annotation t is typing's ClassVar[...] (not a field of a @dataclass).
static bool is_classvar(const Ast *t) {
  char name[128];
  return t && t->kind == AST_INDEX && t->lhs && ast_dotted_name(t->lhs, name, sizeof name) &&
         (!strcmp(name, "ClassVar") || !strcmp(name, "typing.ClassVar"));
}

// The index of the parameter of params named name, or -1.
static int param_index(const Ast *params, const char *name) {
  for (int i = 0; i < params->list.len; i++)
    if (!strcmp(params->list.data[i]->name, name)) return i;
  return -1;
}

// @dataclass (dataclasses.dataclass, with or without arguments) over the class const cls, as
// Python's makes it: an __init__(self, f1=d1, ...) setting self.f of each field, the class
// body's annotated names in order (`n_embd: int = 768`, `bias: bool`; a name annotated
// again keeps its first place and takes the last default), unless the class writes its
// own; any other decorator of a class is a located error, and so are what this does not
// build yet: a base class (whose fields would come first), a ClassVar, a field named self.
Ast *parse_dataclass(Ctx *cx, Ast *decorators, Ast *cls) {
  Ast *c = cls->rhs;
  for (int i = 0; i < decorators->list.len; i++) {
    const Ast *d = decorators->list.data[i];
    char name[128];
    if (!ast_dotted_name(d, name, sizeof name) || (strcmp(name, "dataclass") && strcmp(name, "dataclasses.dataclass"))) {
      diag_error(cx, d->loc, "this decorator of a class is not supported: tdsl takes @dataclass");
      continue;
    }
    bool own = false;
    for (int j = 0; j < c->body.len; j++)
      own |= c->body.data[j]->kind == AST_FN && !strcmp(c->body.data[j]->name, "__init__");
    if (own) continue;
    Loc at = d->loc;
    const Ast *base = c->step && c->step->list.len ? c->step->list.data[0] : NULL;
    if (base && !(c->step->list.len == 1 && base->kind == AST_NAME && !strcmp(base->name, "object"))) {
      diag_error(cx, base->loc, "a @dataclass with a base class is not supported yet (the base's fields would "
                 "come first in its __init__): write the class's __init__");
      continue;
    }
    Ast *params = ast_list_of(cx, ast_param(cx, false, "self", ast_scalar_type(cx, "(any)", at), NULL, at), at);
    Ast *body = ast_list(cx, at);
    for (int j = 0; j < c->body.len; j++) {
      const Ast *st = c->body.data[j];
      const Ast *target = st->kind == AST_ASSIGN && st->type && st->list.len == 1 ? st->list.data[0]
                          : st->kind == AST_PASS && st->type ? st->step : NULL;
      if (!target || target->kind != AST_NAME) continue;
      if (is_classvar(st->type)) {
        diag_error(cx, st->type->loc, "a ClassVar in a @dataclass is not supported yet: write the class's __init__");
        continue;
      }
      if (!strcmp(target->name, "self")) {
        diag_error(cx, target->loc, "a @dataclass field named 'self' is not supported: its __init__ takes self");
        continue;
      }
      Ast *dflt = st->kind == AST_ASSIGN ? ast_clone(cx, st->rhs) : NULL;
      int again = param_index(params, target->name);
      if (again >= 0) {  // annotated again: its first place, the last default
        if (dflt) params->list.data[again]->rhs = dflt;
        continue;
      }
      if (st->kind == AST_PASS && params->list.data[params->list.len - 1]->rhs)
        diag_error(cx, target->loc, "TypeError: non-default argument '%s' follows default argument", target->name);
      ast_append(cx, params, ast_param(cx, false, target->name, ast_scalar_type(cx, "(any)", target->loc), dflt,
                                       target->loc));
      Ast *self_f = ast_attr(cx, ast_name(cx, "self", target->loc), target->name, target->loc, target->loc);
      ast_append(cx, body, parse_assign(cx, self_f, ast_list_of(cx, ast_name(cx, target->name, target->loc),
                                                                target->loc), target->loc, target->loc));
    }
    vec_push(&cx->arena, &c->body, ast_fn(cx, "__init__", params, NULL, false, body, at));
  }
  return cls;
}

// class Name(bases) { body }: the const Name whose value is the class, an AST_FN named Name
// of op 2 (DEF_CLASS, sema_internal.h), its list the bases (checked by sema_class.c) and its
// body the class's statements.
Ast *parse_class(Ctx *cx, const char *name, Ast *bases, Ast *body, Loc loc) {
  Ast *c = ast_fn(cx, name, NULL, NULL, false, body, loc);
  c->op = 2;
  if (bases) c->step = bases;  // the bases, as written
  return ast_const(cx, name, c, loc);
}

// nonlocal a, b / global c: a statement that does nothing where it runs (AST_PASS), named for
// its kind, its list the names; sema_lambda.c (nonlocal) and sema_stmt.c (global) read it.
Ast *parse_scope_decl(Ctx *cx, const char *kind, Ast *names, Loc loc) {
  Ast *a = ast_jump(cx, AST_PASS, loc);
  a->name = kind;
  a->list = names->list;
  return a;
}

// x op= v (ast_aug); obj.attr op= v as Python runs it, obj evaluated once: `if True {
// (aug) o = obj; obj.attr = (aug) o.attr; obj.attr op= v; (aug) o.attr = obj.attr }` (a
// tensor updated in place, a number rebound), the temporaries names no source can spell
// (obj.attr, a name with a dot, as messages show it).
Ast *parse_aug(Ctx *cx, Ast *target, int op, Ast *rhs, Loc oploc, Loc loc) {
  if (target->kind != AST_ATTR) return ast_aug(cx, target, op, rhs, oploc, loc);
  Loc at = target->loc;
  const char *v = target->lhs->kind == AST_NAME ? arena_printf(&cx->arena, "%s.%s", target->lhs->name, target->name)
                                                : "(aug) v";  // m.bias: as a message names it
  Ast *blk = ast_list(cx, loc);
  ast_append(cx, blk, parse_assign(cx, ast_name(cx, "(aug) o", at), ast_list_of(cx, target->lhs, at), oploc, at));
  Ast *read = ast_attr(cx, ast_name(cx, "(aug) o", at), target->name, target->oploc, at);
  ast_append(cx, blk, parse_assign(cx, ast_name(cx, v, at), ast_list_of(cx, read, at), oploc, at));
  ast_append(cx, blk, ast_aug(cx, ast_name(cx, v, at), op, rhs, oploc, loc));
  Ast *write = ast_attr(cx, ast_name(cx, "(aug) o", at), target->name, target->oploc, at);
  ast_append(cx, blk, parse_assign(cx, write, ast_list_of(cx, ast_name(cx, v, at), at), oploc, loc));
  return ast_if(cx, ast_bool(cx, true, loc), blk, NULL, loc);
}
