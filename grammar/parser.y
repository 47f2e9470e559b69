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
  int nest;           // open '(' and '[': newlines inside are not tokens
  int last;           // the last token returned (0 before the first)
  bool fatal;         // nesting limit hit: the scanner returns end of input, nothing more is reported
  bool done;          // end of input seen (after the final NEWLINE)
  uint32_t bad_end;   // end of the last bad byte or character reported (a run is one error)
  Ast *root;          // the AST_PROGRAM, kept even when the parse is abandoned
};
}

%code provides {
#define YYSTYPE TDSLC_YYSTYPE  // flex's bison-bridge expects these two names
#define YYLTYPE TDSLC_YYLTYPE
// grammar/lexer.l, the scanner: every word that is not a keyword is an IDENT
int tdslc_yyscan(YYSTYPE *yylval, YYLTYPE *yylloc, yyscan_t scanner);
// what the parser reads (frontend/parse.c): the scanner's tokens, a dtype name as DTYPE
int tdslc_yylex(YYSTYPE *yylval, YYLTYPE *yylloc, yyscan_t scanner);
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
%token <str> STRING "string"
%token <dtype> DTYPE "dtype"   /* f32, i64 ...: an IDENT of the scanner, resolved by tdslc_yylex */
%token FN "fn" CONST "const" MUT "mut" RETURN "return" TRUE "true" FALSE "false" NONE "None"
%token FOR "for" IN "in" IF "if" ELIF "elif" ELSE "else" WHILE "while" AND "and" OR "or" NOT "not" IS "is"
%token BREAK "break" CONTINUE "continue"
%token NEWLINE "newline"
%token ARROW "->" POW "**" FLOORDIV "//" EQ "==" NE "!=" LE "<=" GE ">=" ELLIPSIS "..." LSHIFT "<<" RSHIFT ">>"
%token <op> ADDEQ "+=" SUBEQ "-=" MULEQ "*=" DIVEQ "/=" FLOORDIVEQ "//=" MODEQ "%=" POWEQ "**="
%token <op> ANDEQ "&=" OREQ "|=" XOREQ "^=" LSHIFTEQ "<<=" RSHIFTEQ ">>=" MATMULEQ "@="

%type <ast> program const_decl fn_decl params param_list param tensor_type dims type_list
%type <ast> block body stmt compound if_stmt else_part targets target store_target exprs expr
%type <ast> for_targets for_target
%type <ast> or_test and_test not_test comparison bitor bitxor bitand shift additive multiplic
%type <ast> unary power postfix
%type <ast> primary args arg_list arg items item opt_expr star_expr
%type <op> augop
%type <flag> opt_mut

%initial-action {
  @$.file = p->file;
  @$.begin = @$.end = 0;
}

%start program

%%

program
  : %empty                      { $$ = p->root = ast_program(p->cx, @$); }
  | program NEWLINE
  | program const_decl NEWLINE  { $$ = ast_append(p->cx, $1, $2); }
  | program const_decl ';'      { $$ = ast_append(p->cx, $1, $2); }
  | program fn_decl             { $$ = ast_append(p->cx, $1, $2); }
  | program error const_decl NEWLINE { $$ = ast_append(p->cx, $1, $3); }
  | program error const_decl ';'     { $$ = ast_append(p->cx, $1, $3); }
  | program error fn_decl       { $$ = ast_append(p->cx, $1, $3); }
  ;

const_decl
  : CONST IDENT '=' expr        { $$ = ast_const(p->cx, $2, $4, @$); }
  ;

fn_decl
  : FN IDENT '(' params ')' ARROW tensor_type block
                                { $$ = ast_fn(p->cx, $2, $4, $7, false, $8, @$); }
  | FN IDENT '(' params ')' ARROW '(' type_list ')' block
                                { $$ = ast_fn(p->cx, $2, $4, $8, true, $10, @$); }
  ;

params
  : %empty                      { $$ = ast_list(p->cx, @$); }
  | param_list
  ;

param_list
  : param                       { $$ = ast_list_of(p->cx, $1, @$); }
  | param_list ',' param        { $$ = ast_append(p->cx, $1, $3); }
  ;

/* eps: float, n: int, flag: bool (a Python scalar); any other word is sema's to refuse */
param
  : opt_mut IDENT ':' tensor_type { $$ = ast_param(p->cx, $1, $2, $4, @$); }
  | opt_mut IDENT ':' IDENT     { $$ = ast_param(p->cx, $1, $2, ast_scalar_type(p->cx, $4, @4), @$); }
  | opt_mut IDENT ':' DTYPE     { $$ = ast_param(p->cx, $1, $2, ast_scalar_type(p->cx, dtype_name($4), @4), @$); }
  ;

opt_mut
  : %empty                      { $$ = false; }
  | MUT                         { $$ = true; }
  ;

/* a word that names no dtype is sema's to report (foo[3]) */
tensor_type
  : DTYPE '[' ']'               { $$ = ast_type(p->cx, $1, NULL, @$); }
  | DTYPE '[' dims ']'          { $$ = ast_type(p->cx, $1, $3, @$); }
  | IDENT '[' ']'               { $$ = ast_unknown_type(p->cx, $1, NULL, @1, @$); }
  | IDENT '[' dims ']'          { $$ = ast_unknown_type(p->cx, $1, $3, @1, @$); }
  ;

dims
  : expr                        { $$ = ast_list_of(p->cx, $1, @$); }
  | dims ',' expr               { $$ = ast_append(p->cx, $1, $3); }
  ;

type_list
  : tensor_type                 { $$ = ast_list_of(p->cx, $1, @$); }
  | type_list ',' tensor_type   { $$ = ast_append(p->cx, $1, $3); }
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

stmt
  : targets '=' exprs           { $$ = ast_assign(p->cx, $1, ast_exprs_value(p->cx, $3, @3), @2, @$); }
  | target augop expr           { $$ = ast_augassign(p->cx, $1, $2, $3, @2, @$); }
  | store_target '=' expr       { $$ = ast_store(p->cx, $1, -1, $3, @2, @$); }
  | store_target augop expr     { $$ = ast_store(p->cx, $1, $2, $3, @2, @$); }
  | RETURN exprs                { $$ = ast_return(p->cx, $2, @$); }
  | BREAK                       { $$ = ast_jump(p->cx, AST_BREAK, @$); }
  | CONTINUE                    { $$ = ast_jump(p->cx, AST_CONTINUE, @$); }
  | expr                        { $$ = ast_expr_stmt(p->cx, $1, @$); }
  ;

targets
  : target                      { $$ = ast_list_of(p->cx, $1, @$); }
  | targets ',' target          { $$ = ast_append(p->cx, $1, $3); }
  ;

target
  : IDENT                       { $$ = ast_name(p->cx, $1, @$); }
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

/* any postfix ending in an index: x[0, 1:], x.t()[0] */
store_target
  : postfix '[' items ']'       { $$ = ast_index(p->cx, $1, $3, @2, @$); }
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

/* Python's levels: or, and, not, then comparison: non-associative, so `a < b < c` is a
   syntax error; below it the bitwise levels: | then ^ then & then << >> */
expr
  : or_test
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
  | bitor EQ bitor              { $$ = ast_binary(p->cx, BIN_EQ, $1, $3, @2); }
  | bitor NE bitor              { $$ = ast_binary(p->cx, BIN_NE, $1, $3, @2); }
  | bitor '<' bitor             { $$ = ast_binary(p->cx, BIN_LT, $1, $3, @2); }
  | bitor LE bitor              { $$ = ast_binary(p->cx, BIN_LE, $1, $3, @2); }
  | bitor '>' bitor             { $$ = ast_binary(p->cx, BIN_GT, $1, $3, @2); }
  | bitor GE bitor              { $$ = ast_binary(p->cx, BIN_GE, $1, $3, @2); }
  | bitor IN bitor              { $$ = ast_logic(p->cx, LOGIC_IN, $1, $3, @2); }
  | bitor NOT IN bitor          { $$ = ast_logic(p->cx, LOGIC_NOT_IN, $1, $4, loc_join(@2, @3)); }
  | bitor IS bitor              { $$ = ast_logic(p->cx, LOGIC_IS, $1, $3, @2); }
  | bitor IS NOT bitor          { $$ = ast_logic(p->cx, LOGIC_IS_NOT, $1, $4, loc_join(@2, @3)); }
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

postfix
  : primary
  | IDENT '(' args ')'          { $$ = ast_call(p->cx, NULL, $1, $3, @1, @$); }
  | postfix '.' IDENT '(' args ')' { $$ = ast_call(p->cx, $1, $3, $5, @3, @$); }
  | postfix '.' IDENT           { $$ = ast_attr(p->cx, $1, $3, @3, @$); }
  | postfix '[' items ']'       { $$ = ast_index(p->cx, $1, $3, @2, @$); }
  ;

primary
  : IDENT                       { $$ = ast_name(p->cx, $1, @$); }
  | INT                         { $$ = ast_int(p->cx, $1, @$); }
  | FLOAT                       { $$ = ast_float(p->cx, $1, @$); }
  | STRING                      { $$ = ast_str(p->cx, $1, @$); }
  | TRUE                        { $$ = ast_bool(p->cx, true, @$); }
  | FALSE                       { $$ = ast_bool(p->cx, false, @$); }
  | NONE                        { $$ = ast_new(p->cx, AST_NONE, @$); }
  | DTYPE                       { $$ = ast_dtype(p->cx, $1, @$); }
  | '(' expr ')'                { $$ = ast_paren(p->cx, $2, @$); }
  | '(' ')'                     { $$ = ast_tuple_expr(p->cx, NULL, @$); }
  | '(' exprs ',' ')'           { $$ = ast_tuple_expr(p->cx, $2, @$); }
  | '(' exprs ',' star_expr ')' { $$ = ast_tuple_expr(p->cx, ast_append(p->cx, $2, $4), @$); }
  | '[' ']'                     { $$ = ast_list_expr(p->cx, NULL, @$); }
  | '[' exprs ']'               { $$ = ast_list_expr(p->cx, $2, @$); }
  ;

args
  : %empty                      { $$ = ast_list(p->cx, @$); }
  | arg_list
  ;

arg_list
  : arg                         { $$ = ast_list_of(p->cx, $1, @$); }
  | arg_list ',' arg            { $$ = ast_append(p->cx, $1, $3); }
  ;

arg
  : expr
  | '*' bitor                   { $$ = ast_starred(p->cx, $2, @1, @$); }
  | IDENT '=' expr              { $$ = ast_kwarg(p->cx, $1, $3, @1, @$); }
  ;

items
  : item                        { $$ = ast_list_of(p->cx, $1, @$); }
  | items ',' item              { $$ = ast_append(p->cx, $1, $3); }
  ;

/* expr | [expr] ":" [expr] [":" [expr]] | "..." ; None is an expr */
item
  : expr
  | ELLIPSIS                    { $$ = ast_new(p->cx, AST_ELLIPSIS, @$); }
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
  case YYSYMBOL_STRING: return "string";
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
    "identifier integer float string dtype 'true' 'false' 'None' '(' '[' '-' '~' 'not' '*'";
// what may follow a complete operand: not worth listing
static const char *const continue_expr =
  "'+' '-' '*' '/' '//' '%' '@' '**' '==' '!=' '<' '<=' '>' '>=' '&' '|' '^' '<<' '>>' '.' '[' '(' 'and' 'or' 'in' 'is' 'not'";
static const char *const compare = "'==' '!=' '<' '<=' '>' '>=' 'in' 'is' 'not'";

// "expected ')' or ',' before 'x'": the tokens that could have come, shown as
// written; "expression" stands for all the tokens that may start one; after a
// complete operand the operators that could continue it are left out; the end of
// input is named only when nothing else could come; at the end of input or at a
// new 'fn'/'const', only the brackets left open are. More than 6: "unexpected 'x'".
static int yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner, Parse *p) {
  (void)scanner;
  p->nest = 0;  // recovery looks for the end of the line, even inside an open '('
  yysymbol_kind_t got = yypcontext_token(ctx);
  if (p->fatal || got == YYSYMBOL_YYUNDEF) return 0;  // the scanner has said why
  const Loc *loc = yypcontext_location(ctx);

  yysymbol_kind_t exp[YYNTOKENS];
  int nexp = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
  bool expr_ctx = false, after_operand = false, closer = false;
  for (int i = 0; i < nexp; i++) {
    expr_ctx |= exp[i] == YYSYMBOL_INT;
    after_operand |= symbol_in(exp[i], "'//'");  // '*' may also start a starred item
    closer |= symbol_in(exp[i], "')' ']' '}'");
  }
  bool at_end = got == YYSYMBOL_YYEOF || loc->begin == loc->end;
  // at the end, or where a new declaration starts, only what is left open matters
  bool only_closers = closer && (at_end || got == YYSYMBOL_FN || got == YYSYMBOL_CONST);

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
    if (only_closers && !symbol_in(exp[i], "')' ']' '}'")) {
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
  if (n == 0 || n > 6) {
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
