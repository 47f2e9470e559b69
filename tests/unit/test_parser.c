// tests/unit/test_parser.c: grammar/parser.y and frontend/ast.c. Programs are parsed
// from strings and shown in a compact fully-parenthesised form (show() below) so each
// test states precedence and structure in one line; locations, syntax errors with
// their line:col, error recovery, the nesting limits and the --emit=ast format are
// checked on the real diagnostics text.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

typedef struct {
  Ctx cx;
  SrcFile *file;
  Ast *prog;
  char *diags;  // malloc'd
} Parsed;

static Parsed *parse_n(const char *src, size_t len) {
  Parsed *p = calloc(1, sizeof *p);
  ctx_init(&p->cx);
  size_t dlen = 0;
  FILE *diag = open_memstream(&p->diags, &dlen);
  p->cx.diag_out = diag;
  p->file = srcfile_from_string(&p->cx, "t.tdsl", src, len);
  p->prog = parse_program(&p->cx, p->file);
  fclose(diag);
  p->cx.diag_out = NULL;
  return p;
}

static Parsed *parse(const char *src) {
  return parse_n(src, strlen(src));
}

static void parsed_free(Parsed *p) {
  free(p->diags);
  ctx_free(&p->cx);
  free(p);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *q = strstr(hay, needle); q; q = strstr(q + 1, needle)) n++;
  return n;
}

// ---- show(): a compact, fully parenthesised rendering of an AST ----

typedef struct {
  char *s;
  size_t len, cap;
} Buf;

static void put(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (b->len + (size_t)n + 1 > b->cap) {
    b->cap = (b->len + (size_t)n + 1) * 2;
    b->s = realloc(b->s, b->cap);
  }
  memcpy(b->s + b->len, tmp, (size_t)n + 1);
  b->len += (size_t)n;
}

static void show_to(Buf *b, const Ast *a);

static void show_list(Buf *b, const AstList *l, const char *sep) {
  for (int i = 0; i < l->len; i++) {
    if (i) put(b, "%s", sep);
    show_to(b, l->data[i]);
  }
}

static void show_to(Buf *b, const Ast *a) {
  if (!a) return;
  switch (a->kind) {
  case AST_INT: put(b, "%" PRId64, a->ival); break;
  case AST_FLOAT: put(b, "%g", a->fval); break;
  case AST_BOOL: put(b, a->bval ? "true" : "false"); break;
  case AST_NONE: put(b, "None"); break;
  case AST_NAME: put(b, "%s", a->name); break;
  case AST_DTYPE: put(b, "%s", dtype_name(a->dtype)); break;
  case AST_ELLIPSIS: put(b, "..."); break;
  case AST_UNARY: put(b, "(%s ", a->op == UN_NEG ? "-" : "~"); show_to(b, a->lhs); put(b, ")"); break;
  case AST_BINARY:
    put(b, "(%s ", binop_text(a->op));
    show_to(b, a->lhs);
    put(b, " ");
    show_to(b, a->rhs);
    put(b, ")");
    break;
  case AST_CALL:
    if (a->lhs) {
      show_to(b, a->lhs);
      put(b, ".");
    }
    put(b, "%s(", a->name);
    show_list(b, &a->list, ", ");
    put(b, ")");
    break;
  case AST_ATTR: show_to(b, a->lhs); put(b, ".%s", a->name); break;
  case AST_INDEX: show_to(b, a->lhs); put(b, "["); show_list(b, &a->list, ", "); put(b, "]"); break;
  case AST_LIST: put(b, "["); show_list(b, &a->list, ", "); put(b, "]"); break;
  case AST_SLICE:
    show_to(b, a->lhs);
    put(b, ":");
    show_to(b, a->rhs);
    if (a->step) {
      put(b, ":");
      show_to(b, a->step);
    }
    break;
  case AST_KWARG: put(b, "%s=", a->name); show_to(b, a->rhs); break;
  case AST_ASSIGN:
    show_list(b, &a->list, ", ");
    for (int i = 0; i < a->body.len; i++) {  // a = b = v: each further group of targets
      put(b, " = ");
      show_list(b, &a->body.data[i]->list, ", ");
    }
    put(b, " = ");
    show_to(b, a->rhs);
    break;
  case AST_COND:
    put(b, "(");
    show_to(b, a->lhs);
    put(b, " if ");
    show_to(b, a->step);
    put(b, " else ");
    show_to(b, a->rhs);
    put(b, ")");
    break;
  case AST_COMP:
    put(b, a->op == TY_LIST ? "[" : "(");
    show_to(b, a->lhs);
    for (int i = 0; i < a->list.len; i++) {
      const Ast *c = a->list.data[i];
      if (c->kind == AST_FOR) {
        put(b, " for %s in ", c->name);
        show_to(b, c->rhs);
      } else {
        put(b, " if ");
        show_to(b, c->lhs);
      }
    }
    put(b, a->op == TY_LIST ? "]" : ")");
    break;
  case AST_APPLY: put(b, "("); show_to(b, a->lhs); put(b, ")("); show_list(b, &a->list, ", "); put(b, ")"); break;
  case AST_STR: put(b, "'%s'", a->name); break;
  case AST_FSTRING: put(b, "f["); show_list(b, &a->list, " "); put(b, "]"); break;
  case AST_FIELD:
    put(b, "{");
    if (a->rhs) put(b, "%s", a->rhs->name);
    show_to(b, a->lhs);
    if (a->op) put(b, "!%c", a->op);
    if (a->name) put(b, ":%s", a->name);
    put(b, "}");
    break;
  case AST_ASSERT:
    put(b, a->lhs ? "assert " : "raise ");
    show_to(b, a->lhs);
    if (a->lhs && a->rhs) put(b, ", ");
    show_to(b, a->rhs);
    break;
  case AST_PASS: put(b, "pass"); break;
  case AST_IMPORT:
    if (a->name) put(b, "from %s ", a->name);
    put(b, "import ");
    show_list(b, &a->list, ", ");
    break;
  case AST_ALIAS:
    put(b, "%s", a->name);
    if (a->lhs) put(b, " as %s", a->lhs->name);
    break;
  case AST_AUGASSIGN: show_to(b, a->lhs); put(b, " %s= ", binop_text(a->op)); show_to(b, a->rhs); break;
  case AST_STORE:
    show_to(b, a->lhs);
    put(b, a->op < 0 ? " = " : " %s= ", a->op < 0 ? "" : binop_text(a->op));
    show_to(b, a->rhs);
    break;
  case AST_RETURN: put(b, "return "); show_list(b, &a->list, ", "); break;
  case AST_CONST: put(b, "const %s = ", a->name); show_to(b, a->rhs); break;
  case AST_PARAM:
    put(b, "%s%s: ", a->mut ? "mut " : "", a->name);
    show_to(b, a->type);
    if (a->rhs) {
      put(b, " = ");
      show_to(b, a->rhs);
    }
    break;
  case AST_TYPE:
    put(b, "%s[", dtype_name(a->dtype));
    show_list(b, &a->list, ", ");
    put(b, a->bval ? "] | None" : "]");
    break;
  case AST_FN:
    put(b, "fn %s(", a->name);
    show_list(b, &a->list, ", ");
    put(b, ") -> %s", a->ret_tuple ? "(" : "");
    show_list(b, &a->rets, ", ");
    put(b, "%s { ", a->ret_tuple ? ")" : "");
    show_list(b, &a->body, "; ");
    put(b, " }");
    break;
  case AST_PROGRAM: show_list(b, &a->list, "\n"); break;
  case AST_EXPR: show_to(b, a->lhs); break;
  case AST_STARRED: put(b, "*"); show_to(b, a->lhs); break;
  case AST_TUPLE: put(b, "("); show_list(b, &a->list, ", "); put(b, a->list.len == 1 ? ",)" : ")"); break;
  case AST_SCALAR_TYPE: put(b, "%s%s", a->name ? a->name : "?", a->bval ? " | None" : ""); break;
  case AST_LOGIC:
    if (!a->rhs) {
      put(b, "(not ");
      show_to(b, a->lhs);
    } else {
      put(b, "(");
      show_to(b, a->lhs);
      static const char *const words[] = {" and ", " or ", "", " in ", " not_in ", " is ", " is_not "};
      put(b, "%s", words[a->op]);
      show_to(b, a->rhs);
    }
    put(b, ")");
    break;
  case AST_FOR:
    put(b, "for %s in ", a->name);
    show_to(b, a->rhs);
    put(b, " { ");
    show_list(b, &a->body, "; ");
    put(b, " }");
    break;
  case AST_IF: case AST_WHILE:
    put(b, a->kind == AST_IF ? "if " : "while ");
    show_to(b, a->lhs);
    put(b, " { ");
    show_list(b, &a->body, "; ");
    put(b, " }");
    if (a->list.len) {
      put(b, " else { ");
      show_list(b, &a->list, "; ");
      put(b, " }");
    }
    break;
  case AST_BREAK: case AST_CONTINUE: put(b, "%s", ast_kind_name(a->kind)); break;
  default: put(b, "?"); break;
  }
}

// Shows a whole parsed program; fails the test if parsing reported anything.
static void assert_shows(const char *src, const char *expected) {
  Parsed *p = parse(src);
  assert_string_equal(p->diags, "");
  assert_non_null(p->prog);
  Buf b = {0};
  put(&b, "");
  show_to(&b, p->prog);
  assert_string_equal(b.s, expected);
  free(b.s);
  parsed_free(p);
}

// The body of `fn f() -> f32[] { STMT }`, shown.
static void assert_stmt(const char *stmt, const char *expected) {
  char src[1024], want[1024];
  snprintf(src, sizeof src, "fn f() -> f32[] {\n  %s\n}\n", stmt);
  snprintf(want, sizeof want, "fn f() -> f32[] { %s }", expected);
  assert_shows(src, want);
}

// The expression of `return EXPR`, shown.
static void assert_expr(const char *expr, const char *expected) {
  char stmt[512], want[512];
  snprintf(stmt, sizeof stmt, "return %s", expr);
  snprintf(want, sizeof want, "return %s", expected);
  assert_stmt(stmt, want);
}

// Parses src and checks that the diagnostics hold `diag` and exactly n errors.
static void assert_errors(const char *src, int n, const char *diag) {
  Parsed *p = parse(src);
  if (!strstr(p->diags, diag) || p->cx.nerrors != n)
    fail_msg("want %d error(s) with \"%s\", got %d:\n%s", n, diag, p->cx.nerrors, p->diags);
  assert_int_equal(count(p->diags, "error:"), n);
  assert_null(strstr(p->diags, "memory exhausted"));
  parsed_free(p);
}

static const Ast *first_stmt(const Parsed *p) {
  const Ast *fn = p->prog->list.data[0];
  return fn->body.data[0];
}

static void assert_loc(const Parsed *p, Loc loc, int line, int col, int endcol) {
  int l, c, l2, c2;
  assert_ptr_equal(loc.file, p->file);
  srcfile_linecol(p->file, loc.begin, &l, &c);
  srcfile_linecol(p->file, loc.end, &l2, &c2);
  assert_int_equal(l, line);
  assert_int_equal(c, col);
  assert_int_equal(c2, endcol);
}

// --- the examples of LANGUAGE.md -------------------------------------------------

static const char layer_norm[] =
  "# layer_norm.tdsl \xe2\x80\x94 seed example: normalise over the last dim\n"
  "fn layer_norm(x: f32[32, 10, 512]) -> f32[32, 10, 512] {\n"
  "    m = x.mean(-1, keepdim=true)\n"
  "    v = x.var(-1, keepdim=true, unbiased=false)\n"
  "    return (x - m) / sqrt(v + 1e-5)\n"
  "}\n";

static void the_layer_norm_example_parses(void **state) {
  (void)state;
  assert_shows(layer_norm,
               "fn layer_norm(x: f32[32, 10, 512]) -> f32[32, 10, 512] { "
               "m = x.mean((- 1), keepdim=true); "
               "v = x.var((- 1), keepdim=true, unbiased=false); "
               "return (/ (- x m) sqrt((+ v 1e-05))) }");
}

static void the_attention_example_parses(void **state) {
  (void)state;
  assert_shows("const E = 512\n"
               "const H = 8\n"
               "const D = E // H\n"
               "\n"
               "fn attention(x: f32[2, 10, E], wq: f32[E, E], wk: f32[E, E],\n"
               "             wv: f32[E, E], wo: f32[E, E]) -> f32[2, 10, E] {\n"
               "    q = (x @ wq).view(2, 10, H, D).transpose(1, 2)      # (B, H, L, D): views only\n"
               "    k = (x @ wk).view(2, 10, H, D).transpose(1, 2)\n"
               "    v = (x @ wv).view(2, 10, H, D).transpose(1, 2)\n"
               "    s = q @ k.transpose(-2, -1) / sqrt(D)\n"
               "    a = softmax(s, dim=-1)\n"
               "    o = (a @ v).transpose(1, 2).contiguous().view(2, 10, E)\n"
               "    return o @ wo\n"
               "}\n",
               "const E = 512\n"
               "const H = 8\n"
               "const D = (// E H)\n"
               "fn attention(x: f32[2, 10, E], wq: f32[E, E], wk: f32[E, E], wv: f32[E, E], wo: f32[E, E])"
               " -> f32[2, 10, E] { "
               "q = (@ x wq).view(2, 10, H, D).transpose(1, 2); "
               "k = (@ x wk).view(2, 10, H, D).transpose(1, 2); "
               "v = (@ x wv).view(2, 10, H, D).transpose(1, 2); "
               "s = (/ (@ q k.transpose((- 2), (- 1))) sqrt(D)); "
               "a = softmax(s, dim=(- 1)); "
               "o = (@ a v).transpose(1, 2).contiguous().view(2, 10, E); "
               "return (@ o wo) }");
}

static void a_one_line_function_needs_no_newline_before_its_brace(void **state) {
  (void)state;
  assert_shows("fn tr(x: f32[2, 3]) -> f32[3, 2] { return x.t() }",
               "fn tr(x: f32[2, 3]) -> f32[3, 2] { return x.t() }");
}

// --- precedence and associativity -------------------------------------------------

static void multiplication_binds_tighter_than_addition(void **state) {
  (void)state;
  assert_expr("a + b * c - d", "(- (+ a (* b c)) d)");
  assert_expr("a * b + c / d // e % f @ g", "(+ (* a b) (@ (% (// (/ c d) e) f) g))");
}

static void binary_operators_are_left_associative(void **state) {
  (void)state;
  assert_expr("a - b - c", "(- (- a b) c)");
  assert_expr("a / b / c", "(/ (/ a b) c)");
  assert_expr("a @ b @ c", "(@ (@ a b) c)");
}

static void comparison_binds_loosest(void **state) {
  (void)state;
  assert_expr("a + b == c * d", "(== (+ a b) (* c d))");
  assert_expr("a != b", "(!= a b)");
  assert_expr("a < b", "(< a b)");
  assert_expr("a <= b", "(<= a b)");
  assert_expr("a > b", "(> a b)");
  assert_expr("a >= -b", "(>= a (- b))");
}

static void comparisons_chain_as_in_python(void **state) {
  (void)state;
  assert_expr("a < b < c", "((< a b) and (< b c))");
  assert_expr("a == b != c in d", "(((== a b) and (!= b c)) and (c in d))");
  assert_expr("0 <= i + 1 < n", "((<= 0 (+ i 1)) and (< (+ i 1) n))");
  assert_expr("(a < b) < c", "(< (< a b) c)");
}

static void unary_minus_binds_looser_than_power(void **state) {
  (void)state;
  assert_expr("-x**2", "(- (** x 2))");
  assert_expr("-(x**2)", "(- (** x 2))");
  assert_expr("(-x)**2", "(** (- x) 2)");
  assert_expr("-x * y", "(* (- x) y)");
  assert_expr("~a == - - b", "(== (~ a) (- (- b)))");
}

static void power_is_right_associative_and_takes_a_unary_on_its_right(void **state) {
  (void)state;
  assert_expr("a ** b ** c", "(** a (** b c))");
  assert_expr("x ** -1", "(** x (- 1))");
  assert_expr("x ** -y ** 2", "(** x (- (** y 2)))");
  assert_expr("a ** b * c", "(* (** a b) c)");
  assert_expr("2 * x.exp() ** 2", "(* 2 (** x.exp() 2))");
}

static void postfix_binds_tightest(void **state) {
  (void)state;
  assert_expr("-x.t()[0].T", "(- x.t()[0].T)");
  assert_expr("x[0] ** 2", "(** x[0] 2)");
}

// --- expressions ------------------------------------------------------------------

static void literals_of_every_kind_parse(void **state) {
  (void)state;
  assert_expr("0, 42, 1.0, .5, 3., 1e-5, 2.5E+3, true, false, None",
              "0, 42, 1, 0.5, 3, 1e-05, 2500, true, false, None");
}

static void calls_take_positional_and_keyword_arguments(void **state) {
  (void)state;
  assert_expr("f()", "f()");
  assert_expr("f(a, dim=-1, keepdim=true)", "f(a, dim=(- 1), keepdim=true)");
  assert_expr("x.sum(dim=[0, 1])", "x.sum(dim=[0, 1])");
  assert_expr("cat([a, b], dim=0)", "cat([a, b], dim=0)");
  assert_expr("f(a == b)", "f((== a b))");
}

static void methods_accept_any_word_even_keywords(void **state) {
  (void)state;
  assert_expr("x.bool().int().float().half()", "x.bool().int().float().half()");
  assert_expr("x.to(f64).f32", "x.to(f64).f32");
  assert_expr("x.T", "x.T");
}

static void dtype_names_are_values(void **state) {
  (void)state;
  assert_expr("x.to(dtype=i32), zeros(2, dtype=bool), bf16", "x.to(dtype=i32), zeros(2, dtype=bool), bf16");
}

// The scanner returns dtype names as identifiers; the parser reads them as dtypes where
// a type or a value is written, and they stay keywords: never a declared name.
static void dtype_names_are_types_and_values_but_never_names(void **state) {
  (void)state;
  assert_shows("fn f(x: bf16[2]) -> (bool[2], f64[]) { return x.bool(), x.sum(dtype=f64) }",
               "fn f(x: bf16[2]) -> (bool[2], f64[]) { return x.bool(), x.sum(dtype=f64) }");
  assert_errors("fn f(x: f32[3]) -> f32[3] { return x[ }\n", 1, "t.tdsl:1:39: error: expected expression");
  assert_errors("fn f(x: f32[3]) -> 3 { return x }\n", 1, "t.tdsl:1:20: error: expected identifier, string, dtype, 'None' or '(' before '3'");
  assert_errors("fn f32() -> f32[] { return 1 }\n", 1, "t.tdsl:1:4: error: expected identifier before 'f32'");
  assert_errors("const i64 = 1\n", 1, "t.tdsl:1:7: error: expected identifier before 'i64'");
  assert_errors("fn f() -> f32[] {\n  a, f32 = 1, 2\n  return a\n}\n", 1,
                "t.tdsl:2:6: error: cannot assign to f32: dtype names are reserved words");
}

static void index_items_cover_slices_ellipsis_and_none(void **state) {
  (void)state;
  assert_expr("x[0, 1:, :3, 1:2:3, ::2, :, ::, a:b:]", "x[0, 1:, :3, 1:2:3, ::2, :, :, a:b]");  // show() omits an empty step
  assert_expr("x[..., None, -1]", "x[..., None, (- 1)]");
  assert_expr("x[i][j]", "x[i][j]");
  assert_expr("x[idx.long()]", "x[idx.long()]");
}

static void list_literals_nest(void **state) {
  (void)state;
  assert_expr("[], [a], [[a, b], [c]]", "[], [a], [[a, b], [c]]");
}

static void newlines_inside_brackets_continue_the_expression(void **state) {
  (void)state;
  assert_expr("f(a,\n      b) + [1,\n 2][0]", "(+ f(a, b) [1, 2][0])");
}

// --- statements and declarations ---------------------------------------------------

static void assignment_forms_parse(void **state) {
  (void)state;
  assert_stmt("y = x", "y = x");
  assert_stmt("a, b = f(x)", "a, b = f(x)");
  assert_stmt("x += y", "x += y");
  assert_stmt("x -= y", "x -= y");
  assert_stmt("x *= y", "x *= y");
  assert_stmt("x /= y", "x /= y");
}

static void stores_target_any_postfix_ending_in_an_index(void **state) {
  (void)state;
  assert_stmt("x[0, 1:] = v", "x[0, 1:] = v");
  assert_stmt("y[i] += v", "y[i] += v");
  assert_stmt("x.t()[0] = 1", "x.t()[0] = 1");
  assert_stmt("x[0][1] /= 2", "x[0][1] /= 2");
  assert_stmt("(x)[0] = 1", "x[0] = 1");
}

static void return_takes_one_or_more_values(void **state) {
  (void)state;
  assert_stmt("return a", "return a");
  assert_stmt("return a, b + 1", "return a, (+ b 1)");
}

static void statements_end_at_newlines_or_semicolons(void **state) {
  (void)state;
  assert_shows("fn f() -> f32[] {\n\n  a = 1; b = 2\n\n  c = 3;\n  return c }\n",
               "fn f() -> f32[] { a = 1; b = 2; c = 3; return c }");
}

static void loops_and_conditions_are_compound_statements(void **state) {
  (void)state;
  assert_shows("fn f(x: f32[2], n: int, eps: float, b: bool) -> f32[2] {\n"
               "  for i in range(n) { x = x + i\n  x = x * 2 }\n"
               "  if n > 1 and not b or eps { x = x } elif b { x = -x } else if n { y = x } else {\n  z = x }\n"
               "  while n { n -= 1 }\n"
               "  x.clamp_(min=0)\n"
               "  return x\n}\n",
               "fn f(x: f32[2], n: int, eps: float, b: bool) -> f32[2] { "
               "for i in range(n) { x = (+ x i); x = (* x 2) }; "
               "if (((> n 1) and (not b)) or eps) { x = x } else { if b { x = (- x) } else { "
               "if n { y = x } else { z = x } } }; "
               "while n { n -= 1 }; x.clamp_(min=0); return x }");
  // a compound statement ends at its '}'; 'else' must follow it on the same line
  assert_errors("fn f() -> f32[] {\n  if 1 { a = 1 }\n  else { a = 2 }\n  return a\n}\n", 1,
                "t.tdsl:3:3: error:");
  assert_errors("fn f() -> f32[] {\n  for in range(2) { a = 1 }\n  return a\n}\n", 1,
                "t.tdsl:2:7: error: expected identifier or '(' before 'in'");
  assert_errors("fn f(x: foo[3]) -> f32[3] { return x }\n", 0, "");
  // tuple targets, nested and parenthesised as Python's; break and continue are statements
  assert_shows("fn f() -> f32[] {\n for i, (w, (b)) in e { if i { continue }\n break }\n for (a) in t { break }\n"
               " return 0 }",
               "fn f() -> f32[] { for (i, (w, b)) in e { if i { continue }; break }; "
               "for a in t { break }; return 0 }");
  // starred items in calls and displays; membership and identity tests compare
  assert_shows("fn f() -> f32[] { s = (*a, 1); t = [*b]; u = g(*c, d=2); return *s, n not in t, n is not None }",
               "fn f() -> f32[] { s = (*a, 1); t = [*b]; u = g(*c, d=2); return *s, (n not_in t), (n is_not None) }");
}

static void two_statements_on_one_line_are_an_error(void **state) {
  (void)state;
  assert_errors("fn f() -> f32[] {\n  a = 1 b = 2\n  return a\n}\n", 1,
                "t.tdsl:2:9: error: expected newline, ';', ',' or '}' before 'b'");
}

static void a_bare_expression_is_a_statement(void **state) {
  (void)state;
  assert_shows("fn f() -> f32[] {\n  f(x)\n  return a\n}\n", "fn f() -> f32[] { f(x); return a }");
  assert_errors("fn f() -> f32[] {\n  f(x) g(x)\n  return a\n}\n", 1, "t.tdsl:2:8: error:");
}

static void parameters_may_be_mut_and_types_may_be_zero_dimensional(void **state) {
  (void)state;
  assert_shows("fn f(mut x: f32[3, 4], s: i64[], b: bool[2]) -> f32[] { return s }",
               "fn f(mut x: f32[3, 4], s: i64[], b: bool[2]) -> f32[] { return s }");
  assert_shows("fn f() -> f16[1] { return x }", "fn f() -> f16[1] { return x }");
}

static void dims_are_constant_expressions(void **state) {
  (void)state;
  assert_shows("fn f(x: f32[E // H, 2 * D]) -> f32[E] { return x }",
               "fn f(x: f32[(// E H), (* 2 D)]) -> f32[E] { return x }");
}

static void tuple_return_types_are_parenthesised(void **state) {
  (void)state;
  assert_shows("fn f(x: f32[2]) -> (f32[2], i64[]) { return x, y }",
               "fn f(x: f32[2]) -> (f32[2], i64[]) { return x, y }");
  assert_shows("fn f(x: f32[2]) -> (f32[2]) { return x }", "fn f(x: f32[2]) -> (f32[2]) { return x }");
}

static void constants_and_several_functions_make_a_program(void **state) {
  (void)state;
  assert_shows("const A = 2\nconst B = A * 1.5; const C = -1\n\nfn f() -> f32[] { return A }\n\n"
               "fn g() -> f32[] {\n  return f()\n}\n",
               "const A = 2\nconst B = (* A 1.5)\nconst C = (- 1)\n"
               "fn f() -> f32[] { return A }\nfn g() -> f32[] { return f() }");
}

static void two_constants_on_one_line_are_an_error(void **state) {
  (void)state;
  assert_errors("const A = 1 const B = 2\n", 1, "t.tdsl:1:13: error: expected newline or ';' before 'const'");
}

static void the_brace_must_be_on_the_line_of_the_arrow(void **state) {
  (void)state;
  assert_errors("fn f(x: f32[3]) -> f32[3]\n{\n  return x\n}\n", 1,
                "t.tdsl:1:26: error: expected '{' before newline");
}

static void an_empty_file_is_a_program_without_declarations(void **state) {
  (void)state;
  Parsed *p = parse("");
  assert_non_null(p->prog);
  assert_int_equal(p->prog->kind, AST_PROGRAM);
  assert_int_equal(p->prog->list.len, 0);
  assert_int_equal(p->cx.nerrors, 0);
  parsed_free(p);
  p = parse("\n# only a comment\n\n");
  assert_int_equal(p->prog->list.len, 0);
  assert_int_equal(p->cx.nerrors, 0);
  parsed_free(p);
}

// --- locations ----------------------------------------------------------------------

static void a_binary_node_spans_its_operands_and_points_at_its_operator(void **state) {
  (void)state;
  Parsed *p = parse("fn f() -> f32[] {\n  return (x - m) / sqrt(v)\n}\n");
  const Ast *div = first_stmt(p)->list.data[0];
  assert_int_equal(div->kind, AST_BINARY);
  assert_loc(p, div->loc, 2, 10, 27);
  assert_loc(p, div->oploc, 2, 18, 19);
  assert_loc(p, div->lhs->loc, 2, 10, 17);  // the parentheses belong to the operand
  assert_loc(p, div->lhs->lhs->loc, 2, 11, 12);
  assert_loc(p, div->rhs->loc, 2, 20, 27);
  assert_loc(p, div->rhs->oploc, 2, 20, 24);
  parsed_free(p);
}

static void a_method_call_points_at_its_name(void **state) {
  (void)state;
  Parsed *p = parse("fn f() -> f32[] {\n  y = x.mean(-1, keepdim=true)\n}\n");
  const Ast *st = first_stmt(p);
  assert_loc(p, st->loc, 2, 3, 31);
  assert_loc(p, st->oploc, 2, 5, 6);
  const Ast *call = st->rhs;
  assert_loc(p, call->loc, 2, 7, 31);
  assert_loc(p, call->oploc, 2, 9, 13);
  assert_loc(p, call->list.data[0]->loc, 2, 14, 16);
  assert_loc(p, call->list.data[0]->oploc, 2, 14, 15);
  assert_loc(p, call->list.data[1]->loc, 2, 18, 30);
  assert_loc(p, call->list.data[1]->oploc, 2, 18, 25);
  parsed_free(p);
}

static void slices_and_stores_have_precise_locations(void **state) {
  (void)state;
  Parsed *p = parse("fn f() -> f32[] {\n  x[ :2, 1:] += v\n}\n");
  const Ast *st = first_stmt(p);
  assert_int_equal(st->kind, AST_STORE);
  assert_int_equal(st->op, BIN_ADD);
  assert_loc(p, st->loc, 2, 3, 18);
  assert_loc(p, st->oploc, 2, 14, 16);
  assert_loc(p, st->lhs->loc, 2, 3, 13);
  assert_loc(p, st->lhs->list.data[0]->loc, 2, 6, 8);
  assert_loc(p, st->lhs->list.data[1]->loc, 2, 10, 12);
  parsed_free(p);
}

static void declarations_span_their_whole_text(void **state) {
  (void)state;
  Parsed *p = parse("const N = 4\nfn f(mut x: f32[N]) -> f32[] {\n  return x\n}\n");
  const Ast *c = p->prog->list.data[0], *fn = p->prog->list.data[1];
  assert_loc(p, c->loc, 1, 1, 12);
  assert_loc(p, fn->loc, 2, 1, 2);
  assert_loc(p, fn->list.data[0]->loc, 2, 6, 19);
  assert_loc(p, fn->list.data[0]->type->loc, 2, 13, 19);
  assert_true(fn->list.data[0]->mut);
  parsed_free(p);
}

static void depth_counts_the_longest_path_to_a_leaf(void **state) {
  (void)state;
  Parsed *p = parse("fn f() -> f32[] {\n  return a + f(b * -c)\n}\n");
  const Ast *e = first_stmt(p)->list.data[0];
  assert_int_equal(e->depth, 5);           // + f * - c
  assert_int_equal(e->lhs->depth, 1);
  assert_int_equal(e->rhs->depth, 4);
  parsed_free(p);
}

// --- syntax errors and recovery -----------------------------------------------------

static void a_syntax_error_names_what_was_expected_at_the_token(void **state) {
  (void)state;
  Parsed *p = parse("fn f(x: f32[3]) -> f32[3] {\n  y = (x + 1\n  return y\n}\n");
  assert_string_equal(p->diags, "t.tdsl:3:3: error: expected ')' or ',' before 'return'\n"
                                "      return y\n"
                                "      ^~~~~~\n");
  parsed_free(p);
  assert_errors("fn f() -> f32[] {\n  y = x +\n}\n", 1, "t.tdsl:2:10: error: expected expression before newline");
  assert_errors("fn f(x: f32[3) -> f32[3] { return x }\n", 1, "t.tdsl:1:14: error: expected ',' or ']' before ')'");
  assert_errors("fn (x: f32[3]) -> f32[3] { return x }\n", 1, "t.tdsl:1:4: error: expected identifier before '('");
  assert_errors("1 + x\n", 1, "t.tdsl:1:1: error: expected identifier, 'fn', 'const', 'import', 'from', 'class' or newline "
                "before '1'");  // x = 1 is a module-level constant
  assert_errors("fn f() -> f32[] {\n  return x[1:2:3:4]\n}\n", 1, "t.tdsl:2:17: error: expected ',' or ']' before ':'");
}

static void unterminated_constructs_are_reported_at_the_end(void **state) {
  (void)state;
  assert_errors("fn f() -> f32[] {\n  return (x\n", 1, "t.tdsl:3:1: error: expected ')' at end of input");
  assert_errors("fn f() -> f32[] {\n  return [x\n", 1, "t.tdsl:3:1: error: expected ']' at end of input");
  assert_errors("fn f() -> f32[] {\n  return [x,\n", 1, "t.tdsl:3:1: error: expected ']' at end of input");
  assert_errors("fn f() -> f32[] {\n  return x\n", 1, "t.tdsl:3:1: error: expected '}' at end of input");
  assert_errors("fn", 1, "t.tdsl:1:3: error: expected identifier at end of input");
  assert_errors("const A =", 1, "t.tdsl:1:10: error: expected expression at end of input");
}

static void a_second_bad_statement_is_also_reported(void **state) {
  (void)state;
  assert_errors("fn f() -> f32[] {\n  y = x +\n  z = 1 2\n  w = ok\n  v = )\n  return y\n}\n", 3,
                "t.tdsl:3:9: error: expected newline, ';', ',' or '}' before '2'");
  assert_errors("fn f() -> f32[] {\n  y = x +\n  z = 1 2\n  w = ok\n  v = )\n  return y\n}\n", 3,
                "t.tdsl:5:7: error: expected expression before ')'");
}

static void an_error_inside_parentheses_recovers_at_the_end_of_the_line(void **state) {
  (void)state;
  assert_errors("fn f() -> f32[] {\n  y = g(1 2,\n        3)\n  z = 1 +\n  return y\n}\n", 2,
                "t.tdsl:4:10: error: expected expression before newline");
}

static void a_missing_brace_is_named_at_the_next_declaration(void **state) {
  (void)state;
  assert_errors("fn f() -> f32[] {\n  return x\nfn g() -> f32[] {\n  return y\n}\n", 1,
                "t.tdsl:3:1: error: expected '}' before 'fn'");
  assert_errors("const A = (1 +\nconst B = 2\n", 1, "t.tdsl:2:1: error: expected expression before 'const'");
  assert_errors("const A = (1\nconst B = 2\n", 1, "t.tdsl:2:1: error: expected ')' before 'const'");
}

static void an_error_in_a_signature_skips_to_the_next_declaration(void **state) {
  (void)state;
  Parsed *p = parse("fn f(x: f32[3) -> f32[3] {\n  return x\n}\nfn g() -> f32[] {\n  return x +\n}\n"
                    "const K = 1\n");
  assert_int_equal(p->cx.nerrors, 2);
  assert_non_null(strstr(p->diags, "t.tdsl:1:14: error:"));
  assert_non_null(strstr(p->diags, "t.tdsl:5:13: error: expected expression before newline"));
  assert_int_equal(p->prog->list.len, 2);  // g and K were kept
  assert_string_equal(p->prog->list.data[0]->name, "g");
  parsed_free(p);
}

static void a_bad_character_is_reported_once_without_a_syntax_error(void **state) {
  (void)state;
  assert_errors("fn f() -> f32[] {\n  y = x $ 1\n  return y\n}\n", 1, "t.tdsl:2:9: error: invalid character '$'");
  assert_errors("const A = 1 \xc3\xa9\nconst B = 2\n", 1, "t.tdsl:1:13: error: invalid character U+00E9");
}

static void an_int_literal_beyond_int64_is_one_located_error(void **state) {
  (void)state;
  assert_errors("const A = 99999999999999999999 + 1\n", 1, "t.tdsl:1:11: error: integer literal is too large");
  assert_shows("const A = 9223372036854775807", "const A = 9223372036854775807");
}

static void nul_bytes_in_the_source_are_located_errors(void **state) {
  (void)state;
  static const char src[] = "const A = 1\0\nconst B = 2\n";
  Parsed *p = parse_n(src, sizeof src - 1);
  assert_int_equal(p->cx.nerrors, 1);
  assert_non_null(strstr(p->diags, "t.tdsl:1:12: error: unexpected NUL byte"));
  parsed_free(p);
  static const char src2[] = "# \0\nconst B = 2\n";
  p = parse_n(src2, sizeof src2 - 1);
  assert_int_equal(p->cx.nerrors, 1);
  assert_int_equal(p->prog->list.len, 1);
  parsed_free(p);
}

// --- nesting limits -----------------------------------------------------------------

// "fn f() -> f32[] {\n  return " PREFIX*n MIDDLE SUFFIX*n "\n}\n"
static char *nested(const char *prefix, const char *middle, const char *suffix, int n) {
  size_t lp = strlen(prefix), lm = strlen(middle), ls = strlen(suffix);
  const char *head = "fn f() -> f32[] {\n  return ", *tail = "\n}\n";
  char *s = malloc(strlen(head) + (lp + ls) * (size_t)n + lm + strlen(tail) + 1), *q = s;
  q = stpcpy(q, head);
  for (int i = 0; i < n; i++) q = stpcpy(q, prefix);
  q = stpcpy(q, middle);
  for (int i = 0; i < n; i++) q = stpcpy(q, suffix);
  stpcpy(q, tail);
  return s;
}

static void assert_too_deep(const char *prefix, const char *middle, const char *suffix, int n) {
  char *src = nested(prefix, middle, suffix, n);
  assert_errors(src, 1, "error: expression nested too deeply");
  free(src);
}

static void assert_not_too_deep(const char *prefix, const char *middle, const char *suffix, int n) {
  char *src = nested(prefix, middle, suffix, n);
  Parsed *p = parse(src);
  if (p->cx.nerrors) fail_msg("%s", p->diags);
  free(src);
  parsed_free(p);
}

static void fifty_thousand_nested_parentheses_are_one_error(void **state) {
  (void)state;
  assert_too_deep("(", "x", ")", 50000);
  assert_too_deep("[", "x", "]", 50000);
  assert_too_deep("f(", "x", ")", 50000);
  assert_too_deep("x[", "0", "]", 50000);
}

static void long_left_recursive_chains_are_one_error(void **state) {
  (void)state;
  assert_not_too_deep("", "1", "+1", 50000);  // a flat chain of operators is not deep (issue 31.3)
  assert_not_too_deep("", "a", " and a", 50000);
  assert_too_deep("", "x", ".a()", 50000);
  assert_too_deep("", "x", ".T", 50000);
  assert_too_deep("", "x", "[0]", 50000);
}

static void long_right_recursive_chains_are_one_error(void **state) {
  (void)state;
  assert_too_deep("- ", "x", "", 50000);
  assert_too_deep("~", "x", "", 50000);
  assert_too_deep("x ** ", "x", "", 50000);
  assert_too_deep("x ** -", "x", "", 50000);
  assert_too_deep("-(", "x", ")", 50000);
  assert_too_deep("- ", "x", "", 2000);  // shallow enough for the stack: refused by depth
}

static void expressions_at_the_nesting_limit_parse(void **state) {
  (void)state;
  assert_not_too_deep("(", "x", ")", TD_MAX_NESTING);
  assert_not_too_deep("- ", "x", "", TD_MAX_NESTING - 1);
  assert_not_too_deep("f(a, ", "x", ")", TD_MAX_NESTING - 1);
  assert_not_too_deep("f(a, d=", "x", ")", TD_MAX_NESTING / 2 - 1);
  assert_not_too_deep("x[1:", "x", "]", TD_MAX_NESTING / 2 - 1);
  assert_not_too_deep("", "1", "+1", TD_MAX_NESTING - 1);
  assert_too_deep("- ", "x", "", TD_MAX_NESTING);
  assert_too_deep("(", "x", ")", TD_MAX_NESTING + 1);
}

static void a_too_deep_expression_becomes_a_leaf(void **state) {
  (void)state;
  char *src = nested("", "x", ".a()", 5000);
  Parsed *p = parse(src);
  const Ast *e = first_stmt(p)->list.data[0];
  assert_int_equal(e->kind, AST_NONE);
  assert_true(e->depth <= TD_MAX_NESTING + 1);
  free(src);
  parsed_free(p);
}

// --- ast.c helpers ------------------------------------------------------------------

static void operator_names_follow_the_ir(void **state) {
  (void)state;
  static const char *names[] = {"add", "sub", "mul", "div", "floor_divide", "remainder", "pow",
                                "matmul", "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or",
                                "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"};
  static const char *texts[] = {"+", "-", "*", "/", "//", "%", "**", "@", "==", "!=", "<", "<=", ">", ">=",
                                "&", "|", "^", "<<", ">>"};
  _Static_assert(sizeof names / sizeof names[0] == BIN_COUNT, "a name per operator");
  for (int i = 0; i < BIN_COUNT; i++) {
    assert_string_equal(binop_name((BinOp)i), names[i]);
    assert_string_equal(binop_text((BinOp)i), texts[i]);
  }
  assert_string_equal(ast_kind_name(AST_FN), "fn");
  assert_string_equal(ast_kind_name(AST_AUGASSIGN), "augassign");
}

// Python's levels: comparison < | < ^ < & < shifts < + -
static void bitwise_operators_bind_as_in_python(void **state) {
  (void)state;
  Parsed *p = parse("fn f() -> f32[] {\n  return a < b | c ^ d & e << 1 + 2\n}\n");
  const Ast *e = first_stmt(p)->list.data[0];
  assert_int_equal(e->op, BIN_LT);
  const Ast *o = e->rhs, *x = o->rhs, *n = x->rhs, *sh = n->rhs;
  assert_int_equal(o->op, BIN_OR);
  assert_int_equal(x->op, BIN_XOR);
  assert_int_equal(n->op, BIN_AND);
  assert_int_equal(sh->op, BIN_LSHIFT);
  assert_int_equal(sh->rhs->op, BIN_ADD);
  parsed_free(p);
}

static void clone_is_deep_and_clears_sema_fields(void **state) {
  (void)state;
  Parsed *p = parse(layer_norm);
  Ast *fn = p->prog->list.data[0];
  Ast *ret = fn->body.data[2];
  ret->list.data[0]->ty = (TType *)fn;  // pretend sema ran
  ret->list.data[0]->inlined = fn;
  Ast *c = ast_clone(&p->cx, fn);
  assert_ptr_not_equal(c, fn);
  assert_ptr_not_equal(c->body.data[2], ret);
  assert_null(c->body.data[2]->list.data[0]->ty);
  assert_null(c->body.data[2]->list.data[0]->inlined);
  Buf a = {0}, b = {0};
  put(&a, "");
  put(&b, "");
  show_to(&a, fn);
  show_to(&b, c);
  assert_string_equal(a.s, b.s);
  c->body.data[0]->list.data[0]->name = "changed";
  assert_string_equal(fn->body.data[0]->list.data[0]->name, "m");
  free(a.s);
  free(b.s);
  parsed_free(p);
}

static void the_ast_dump_has_one_node_per_line(void **state) {
  (void)state;
  Parsed *p = parse("const K = 2.5e3\nfn f(mut x: f32[K], s: i64[]) -> (f32[2], i64[]) {\n"
                    "  x[::2] += -s.T\n  return x.sum(dim=0), f(x)\n}\n");
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  ast_dump(p->prog, f);
  fclose(f);
  assert_string_equal(out,
                      "(program @1:1-6:1\n"
                      "  (const K @1:1-1:16\n"
                      "    (float 2500.0 @1:11-1:16))\n"
                      "  (fn f @2:1-5:2\n"
                      "    (params\n"
                      "      (param mut x @2:6-2:19\n"
                      "        (type f32 @2:13-2:19\n"
                      "          (name K @2:17-2:18)))\n"
                      "      (param s @2:21-2:29\n"
                      "        (type i64 @2:24-2:29)))\n"
                      "    (returns tuple\n"
                      "      (type f32 @2:35-2:41\n"
                      "        (int 2 @2:39-2:40))\n"
                      "      (type i64 @2:43-2:48))\n"
                      "    (body\n"
                      "      (store add @3:3-3:17\n"
                      "        (index @3:3-3:9\n"
                      "          (name x @3:3-3:4)\n"
                      "          (slice @3:5-3:8\n"
                      "            _\n"
                      "            _\n"
                      "            (int 2 @3:7-3:8)))\n"
                      "        (unary neg @3:13-3:17\n"
                      "          (attr T @3:14-3:17\n"
                      "            (name s @3:14-3:15))))\n"
                      "      (return @4:3-4:28\n"
                      "        (method sum @4:10-4:22\n"
                      "          (name x @4:10-4:11)\n"
                      "          (kwarg dim @4:16-4:21\n"
                      "            (int 0 @4:20-4:21)))\n"
                      "        (call f @4:24-4:28\n"
                      "          (name x @4:26-4:27))))))\n");
  free(out);
  parsed_free(p);
}


// ---- Python's forms (issue 30) ----
static void a_conditional_expression_binds_loosest(void **state) {
  (void)state;
  assert_expr("a + 1 if c or d else b * 2", "((+ a 1) if (c or d) else (* b 2))");
  assert_expr("a if b else c if d else e", "(a if b else (c if d else e))");
  assert_stmt("x = y if c else z", "x = (y if c else z)");
  assert_expr("[a if c else b for a in xs]", "[(a if c else b) for a in xs]");
}

static void comprehensions_take_for_and_if_clauses(void **state) {
  (void)state;
  assert_expr("[x * 2 for x in xs]", "[(* x 2) for x in xs]");
  assert_expr("[a + b for a, b in zip(p, q) if a > 0 if b]", "[(+ a b) for (a, b) in zip(p, q) if (> a 0) if b]");
  assert_expr("[x for r in rows for x in r]", "[x for r in rows for x in r]");
  assert_expr("torch.cat(tuple(f(x) for x in xs))", "torch.cat(tuple((f(x) for x in xs)))");
  assert_expr("(y for y in range(3))", "(y for y in range(3))");
}

static void trailing_commas_are_accepted(void **state) {
  (void)state;
  assert_shows("fn f(a: f32[3], b: f32[3],) -> (f32[3], f32[3],) {\n  return a, b,\n}\n",
               "fn f(a: f32[3], b: f32[3]) -> (f32[3], f32[3]) { return a, b }");
  assert_expr("g(a, b=1,)", "g(a, b=1)");
  assert_expr("[a, b,]", "[a, b]");
  assert_expr("x[0, 1:,]", "x[0, 1:]");
  assert_stmt("t = a,", "t = (a,)");
}

static void assignment_targets_are_python_s(void **state) {
  (void)state;
  assert_stmt("h = w = x", "h = w = x");
  assert_stmt("(b, l, d) = x.shape", "b, l, d = x.shape");
  assert_stmt("[p, q] = t", "p, q = t");
  assert_stmt("a, (b, c) = t", "a, (b, c) = t");
  assert_stmt("first, *rest = t", "first, *rest = t");
  assert_stmt("k, = t", "(k,) = t");
  assert_stmt("a = b, c = t", "a = b, c = t");
  assert_errors("fn f() -> f32[] {\n  f(x) = 1\n}\n", 1, "t.tdsl:2:3: error: cannot assign to function call");
  assert_errors("fn f() -> f32[] {\n  a, *b, *c = t\n}\n", 1, "multiple starred expressions in assignment");
  assert_errors("fn f() -> f32[] {\n  *a = t\n}\n", 1, "starred assignment target must be in a list or tuple");
  assert_errors("fn f() -> f32[] {\n  f(x) += 1\n}\n", 1,
                "t.tdsl:2:3: error: 'function call' is an illegal expression for augmented assignment");
}

static void statements_assert_raise_and_pass(void **state) {
  (void)state;
  assert_stmt("assert x > 0", "assert (> x 0)");
  assert_stmt("assert x > 0, 'msg'", "assert (> x 0), 'msg'");
  assert_stmt("raise ValueError('bad')", "raise ValueError('bad')");
  assert_stmt("pass", "pass");
  assert_stmt("return", "return ");
  assert_shows("fn f() -> f32[] {\n  \"\"\"A docstring\n  over lines, with \u2206 and \\.\"\"\"\n  return x\n}\n",
               "fn f() -> f32[] { 'A docstring\n  over lines, with \u2206 and \\.'; return x }");
}

static void literals_in_every_base_and_with_underscores(void **state) {
  (void)state;
  assert_expr("0x1F + 0o17 + 0b101 + 1_000", "(+ (+ (+ 31 15) 5) 1000)");
  assert_expr("0xff_ff", "65535");
  assert_expr("1_0.5e1_0", "1.05e+11");
  assert_errors("fn f() -> f32[] {\n  return 0x8000000000000000\n}\n", 1, "integer literal is too large");
}

static void f_strings_hold_text_and_fields(void **state) {
  (void)state;
  assert_expr("f'a {x} b {y!r:>4} {{}}'", "f['a ' {x} ' b ' {y!r:>4} ' {}']");
  assert_expr("f\"{x.shape=}\" 'tail'", "f[{x.shape=x.shape!r} 'tail']");
  assert_expr("'a' 'b'", "'ab'");
  assert_errors("fn f() -> f32[] {\n  return f'a } b'\n}\n", 1, "t.tdsl:2:14: error: f-string: single '}' is not allowed");
  assert_errors("fn f() -> f32[] {\n  return f'{x +}'\n}\n", 1, "t.tdsl:2:16: error: expected expression at end of input");
}

static void calls_of_any_value(void **state) {
  (void)state;
  assert_expr("nn.ReLU(inplace=True)(x)", "(nn.ReLU(inplace=true))(x)");
  assert_expr("f(a)(b)(c)", "((f(a))(b))(c)");
  assert_expr("(f)(x)", "f(x)");
}

static void parameters_take_defaults_and_none(void **state) {
  (void)state;
  assert_shows("fn f(x: f32[3], m: f32[3] | None = None, eps: float = 1e-6, k=3, q: None | int) -> None {\n}\n",
               "fn f(x: f32[3], m: f32[3] | None = None, eps: float = 1e-06, k: ? = 3, q: int | None) -> "
               " {  }");
  assert_shows("fn f(mut o: f32[3]) {\n  o[0] = 1\n}\n", "fn f(mut o: f32[3]) ->  { o[0] = 1 }");
  assert_shows("fn f(x: f32[3]) -> (f32[3], None) {\n  return x, None\n}\n",
               "fn f(x: f32[3]) -> (f32[3], None) { return x, None }");
}

static void imports_at_the_top(void **state) {
  (void)state;
  assert_shows("import torch\nimport torch.nn.functional as F, math\nfrom torch import nn as tnn, cat\n"
               "from x.y import (a, b as c,)\n",
               "import torch\nimport torch.nn.functional as F, math\nfrom torch import nn as tnn, cat\n"
               "from x.y import a, b as c");
}

static void a_flat_expression_of_any_length_is_not_deep(void **state) {
  (void)state;
  enum { N = 20000 };
  char *src = malloc(N * 4 + 64);
  size_t n = (size_t)sprintf(src, "fn f() -> f32[] {\n  return x");
  for (int i = 1; i < N; i++) n += (size_t)sprintf(src + n, " + x");
  sprintf(src + n, " and y and z\n}\n");
  Parsed *p = parse(src);
  assert_string_equal(p->diags, "");
  const Ast *r = first_stmt(p)->list.data[0];
  assert_true(r->depth < 10);
  Ast *c = ast_clone(&p->cx, r);
  assert_int_equal(c->depth, r->depth);
  parsed_free(p);
  free(src);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(the_layer_norm_example_parses),
    cmocka_unit_test(the_attention_example_parses),
    cmocka_unit_test(a_one_line_function_needs_no_newline_before_its_brace),
    cmocka_unit_test(multiplication_binds_tighter_than_addition),
    cmocka_unit_test(binary_operators_are_left_associative),
    cmocka_unit_test(comparison_binds_loosest),
    cmocka_unit_test(comparisons_chain_as_in_python),
    cmocka_unit_test(unary_minus_binds_looser_than_power),
    cmocka_unit_test(power_is_right_associative_and_takes_a_unary_on_its_right),
    cmocka_unit_test(postfix_binds_tightest),
    cmocka_unit_test(literals_of_every_kind_parse),
    cmocka_unit_test(calls_take_positional_and_keyword_arguments),
    cmocka_unit_test(methods_accept_any_word_even_keywords),
    cmocka_unit_test(dtype_names_are_values),
    cmocka_unit_test(dtype_names_are_types_and_values_but_never_names),
    cmocka_unit_test(index_items_cover_slices_ellipsis_and_none),
    cmocka_unit_test(list_literals_nest),
    cmocka_unit_test(newlines_inside_brackets_continue_the_expression),
    cmocka_unit_test(assignment_forms_parse),
    cmocka_unit_test(a_conditional_expression_binds_loosest),
    cmocka_unit_test(comprehensions_take_for_and_if_clauses),
    cmocka_unit_test(trailing_commas_are_accepted),
    cmocka_unit_test(assignment_targets_are_python_s),
    cmocka_unit_test(statements_assert_raise_and_pass),
    cmocka_unit_test(literals_in_every_base_and_with_underscores),
    cmocka_unit_test(f_strings_hold_text_and_fields),
    cmocka_unit_test(calls_of_any_value),
    cmocka_unit_test(parameters_take_defaults_and_none),
    cmocka_unit_test(imports_at_the_top),
    cmocka_unit_test(a_flat_expression_of_any_length_is_not_deep),
    cmocka_unit_test(stores_target_any_postfix_ending_in_an_index),
    cmocka_unit_test(return_takes_one_or_more_values),
    cmocka_unit_test(statements_end_at_newlines_or_semicolons),
    cmocka_unit_test(loops_and_conditions_are_compound_statements),
    cmocka_unit_test(two_statements_on_one_line_are_an_error),
    cmocka_unit_test(a_bare_expression_is_a_statement),
    cmocka_unit_test(parameters_may_be_mut_and_types_may_be_zero_dimensional),
    cmocka_unit_test(dims_are_constant_expressions),
    cmocka_unit_test(tuple_return_types_are_parenthesised),
    cmocka_unit_test(constants_and_several_functions_make_a_program),
    cmocka_unit_test(two_constants_on_one_line_are_an_error),
    cmocka_unit_test(the_brace_must_be_on_the_line_of_the_arrow),
    cmocka_unit_test(an_empty_file_is_a_program_without_declarations),
    cmocka_unit_test(a_binary_node_spans_its_operands_and_points_at_its_operator),
    cmocka_unit_test(a_method_call_points_at_its_name),
    cmocka_unit_test(slices_and_stores_have_precise_locations),
    cmocka_unit_test(declarations_span_their_whole_text),
    cmocka_unit_test(depth_counts_the_longest_path_to_a_leaf),
    cmocka_unit_test(a_syntax_error_names_what_was_expected_at_the_token),
    cmocka_unit_test(unterminated_constructs_are_reported_at_the_end),
    cmocka_unit_test(a_second_bad_statement_is_also_reported),
    cmocka_unit_test(an_error_inside_parentheses_recovers_at_the_end_of_the_line),
    cmocka_unit_test(a_missing_brace_is_named_at_the_next_declaration),
    cmocka_unit_test(an_error_in_a_signature_skips_to_the_next_declaration),
    cmocka_unit_test(a_bad_character_is_reported_once_without_a_syntax_error),
    cmocka_unit_test(an_int_literal_beyond_int64_is_one_located_error),
    cmocka_unit_test(nul_bytes_in_the_source_are_located_errors),
    cmocka_unit_test(fifty_thousand_nested_parentheses_are_one_error),
    cmocka_unit_test(long_left_recursive_chains_are_one_error),
    cmocka_unit_test(long_right_recursive_chains_are_one_error),
    cmocka_unit_test(expressions_at_the_nesting_limit_parse),
    cmocka_unit_test(a_too_deep_expression_becomes_a_leaf),
    cmocka_unit_test(operator_names_follow_the_ir),
    cmocka_unit_test(bitwise_operators_bind_as_in_python),
    cmocka_unit_test(clone_is_deep_and_clears_sema_fields),
    cmocka_unit_test(the_ast_dump_has_one_node_per_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
